//! Whole UET packets: the walker ([`UetPacket::parse`]) and the builder ([`PacketRepr::emit`]).
//!
//! Layout after the outer headers (which are the embedder's):
//!
//! ```text
//! [entropy header, native-IP mode only]
//! TSS header → ciphertext (PDS ‖ SES ‖ payload, encrypted) → 16-byte ICV      (secured)
//! PDS header → SES header → payload → [CRC32C trailer, if configured]          (clear)
//! ```
//!
//! TSS is self-describing (its 5-bit type is 1). The entropy header and the CRC32C trailer are not:
//! [`WalkConfig`] says whether they are present (UE's `UET_DATA_PROTECT` parameter: none, CRC, or
//! TSS; CRC and TSS are mutually exclusive, per XDP2's spec-parameter table
//! `src/include/uet/config.h`). The walker never decrypts: a secured packet is returned as its TSS
//! header, ciphertext and ICV.
//!
//! **CRC32C trailer**: CRC-32C (Castagnoli: reflected, initial value and final XOR 0xFFFFFFFF)
//! over the IP source and destination addresses, then everything from the entropy or UDP header to
//! the end of the payload, appended as 4 bytes **most significant byte first**, like every other
//! UET field. Both the coverage and the byte order are the reference provider's
//! (`ultraethernet/uet-ref-prov`: `uet_pds.c`, "calculate the CRC (include src/dst IP and UDP)",
//! covers IPv4 header + 12 or IPv6 header + 8 through the end of the packet; `crc32c.c`'s
//! `crc32c_finish` returns `htonl(~crc)`, which `uet_pds.c` appends with `memcpy`). Which value
//! the UDP checksum field holds when the CRC is computed is not public (the checksum covers the
//! trailer, so it is filled after); this crate's examples put zero there (*project-defined*).
//! The bytes before the ones a call is given (the addresses, the UDP header, and for
//! [`Endpoint`](crate::msg::Endpoint) calls in native-IP mode the entropy header) are outside
//! them, so the caller passes them as the `prefix` of [`crc32c`]: [`CrcPrefix`] builds it. The
//! trailer is found from the end of the UET bytes: take them from the IP length, not from the end
//! of an Ethernet frame, which may be padded.
//!
//! **Length checks**: where the SES header announces this packet's payload length (responses with
//! data, standard-request continuation packets) it must equal the payload's length.

use crate::entropy::{Encapsulation, EntropyHeader};
use crate::error::{Error, take};
use crate::pds::{NextHeader, PdsHeader, RequestRaw, RequestView};
use crate::ses::{CommonRaw, SesHeader, StandardRaw, StandardView};
use crate::tss::{ICV_LEN, TssHeader};

/// Length of the CRC32C trailer.
pub const CRC_LEN: usize = 4;

/// CRC-32C over `prefix` (built by [`CrcPrefix`]: the IP addresses, then the UDP header in UDP
/// mode, or the entropy header when `covered` starts after it) followed by `covered`: the
/// hardware or table backend of [`crate::crc32c`].
pub use crate::crc32c::crc32c;

/// The bytes a CRC32C trailer covers before the bytes a call is given: the IP source and
/// destination addresses as the IP header carries them, then the UDP header (UDP framing) or,
/// for [`Endpoint`](crate::msg::Endpoint) calls, which take the bytes after it, the entropy
/// header (native-IP framing). See the module doc.
///
/// ```
/// use uet_wire::packet::CrcPrefix;
/// use uet_wire::pdc::ipv4;
/// let p = CrcPrefix::ip(&ipv4([10, 0, 0, 1]), &ipv4([10, 0, 0, 2]));
/// assert_eq!(p.as_bytes(), [10, 0, 0, 1, 10, 0, 0, 2]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CrcPrefix {
    bytes: [u8; 40],
    len: usize,
}

impl CrcPrefix {
    /// The addresses of a packet from `src` to `dst` (in the 16-byte form the endpoint uses):
    /// 4 bytes each when both are IPv4-mapped (the reference provider's CRC starts at byte 12 of
    /// the IPv4 header), else 16 bytes each (byte 8 of the IPv6 header). A receiver passes the
    /// sender first: `CrcPrefix::ip(&peer, &own)`.
    pub fn ip(src: &crate::pdc::IpAddr, dst: &crate::pdc::IpAddr) -> Self {
        let mut bytes = [0; 40];
        let v4 = |a| crate::pdc::table::mapped_ipv4(a).is_some();
        let width = if v4(src) && v4(dst) { 4 } else { 16 };
        let (s, d) = (src.get(16 - width..).unwrap_or_default(), dst.get(16 - width..).unwrap_or_default());
        bytes.get_mut(..width).unwrap_or_default().copy_from_slice(s);
        bytes.get_mut(width..2 * width).unwrap_or_default().copy_from_slice(d);
        CrcPrefix { bytes, len: 2 * width }
    }

    /// With UDP framing: the 8-byte UDP header after the addresses (the checksum field as it
    /// stands when the CRC is computed, zero in this crate's examples).
    pub fn with_udp(self, udp_header: [u8; 8]) -> Self {
        self.then(&udp_header)
    }

    /// With native-IP framing, for the [`Endpoint`](crate::msg::Endpoint) calls, which take the
    /// bytes after it: the 4-byte entropy header after the addresses.
    pub fn with_entropy(self, entropy_header: [u8; 4]) -> Self {
        self.then(&entropy_header)
    }

    /// `bytes` appended, if they fit (one UDP or entropy header after the addresses always does).
    fn then(mut self, bytes: &[u8]) -> Self {
        if let Some(b) = self.bytes.get_mut(self.len..self.len + bytes.len()) {
            b.copy_from_slice(bytes);
            self.len += bytes.len();
        }
        self
    }

    /// The prefix's bytes, for [`crc32c`], [`check_crc`], [`append_crc`] and
    /// [`Endpoint::handle_crc_packet`](crate::msg::Endpoint::handle_crc_packet).
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }
}

/// Checks the CRC32C trailer at the end of `packet` over `prefix ‖` the bytes before it, and
/// returns those bytes (the packet without its trailer). The receive side of [`append_crc`].
pub fn check_crc<'a>(prefix: &[u8], packet: &'a [u8]) -> Result<&'a [u8], Error> {
    let (covered, trailer) = split_trailer(packet)?;
    let expected = crc32c(prefix, covered);
    if expected == trailer { Ok(covered) } else { Err(Error::Crc { expected, got: trailer }) }
}

/// Writes the CRC32C trailer of `prefix ‖ out[..len]` at `out[len..len + 4]` and returns the
/// packet's length with it: the last step of building a packet whose headers and payload are in
/// `out` (after [`Endpoint::poll_transmit`](crate::msg::Endpoint::poll_transmit) and the payload
/// it names).
pub fn append_crc(prefix: &[u8], out: &mut [u8], len: usize) -> Result<usize, Error> {
    let end = len.saturating_add(CRC_LEN);
    if out.len() < end {
        return Err(Error::BufferTooShort { needed: end, got: out.len() });
    }
    let (packet, trailer) = out.split_at_mut(len);
    let crc = crc32c(prefix, packet);
    trailer.get_mut(..CRC_LEN).unwrap_or_default().copy_from_slice(&crc.to_be_bytes());
    Ok(end)
}

/// `packet` split before its CRC32C trailer, and the trailer's value.
fn split_trailer(packet: &[u8]) -> Result<(&[u8], u32), Error> {
    let split = packet.len().checked_sub(CRC_LEN).ok_or(Error::Truncated {
        field: "CRC32C trailer",
        needed: CRC_LEN,
        got: packet.len(),
    })?;
    let (covered, trailer) = packet.split_at(split);
    let t = <[u8; CRC_LEN]>::try_from(trailer).map_err(|_| Error::Mismatch { field: "CRC32C trailer" })?;
    Ok((covered, u32::from_be_bytes(t)))
}

/// A PDS request and a standard SES request back to back, as the commonest data packet carries
/// them when it has neither CC fields nor an SES extension: 56 bytes.
#[derive(zerocopy::FromBytes, zerocopy::KnownLayout, zerocopy::Immutable, zerocopy::Unaligned)]
#[repr(C)]
struct RequestStdRaw {
    pds: RequestRaw,
    common: CommonRaw,
    body: StandardRaw,
}

/// Validates a RUD/ROD request whose next header is a standard SES request at the front of
/// `bytes`, and returns both views and the bytes after them (the payload): the receive fast path.
///
/// The commonest shape (no CC fields, no SES extension) is read with one length check and its
/// checks made as bit operations on whole words. Every other input, malformed or
/// not, goes through [`RequestView::parse`] and [`StandardView::parse`]: the result is always
/// theirs, and an error names the first field that fails. A valid request announcing another SES
/// header is refused with [`Error::Mismatch`].
#[inline(always)]
pub fn parse_request_std(bytes: &[u8]) -> Result<(RequestView<'_>, StandardView<'_>, &[u8]), Error> {
    use zerocopy::FromBytes;
    if let Ok((raw, rest)) = RequestStdRaw::ref_from_prefix(bytes)
        && let Some(pds) = RequestView::std_without_cc(&raw.pds)
        && let Some(ses) = StandardView::without_ext(&raw.common, &raw.body)
    {
        return Ok((pds, ses, rest));
    }
    parse_request_std_each(bytes)
}

/// [`parse_request_std`] one header at a time.
fn parse_request_std_each(bytes: &[u8]) -> Result<(RequestView<'_>, StandardView<'_>, &[u8]), Error> {
    let (pds, rest) = RequestView::parse(bytes)?;
    if pds.next_header() != NextHeader::ReqStd {
        return Err(Error::Mismatch { field: "PDS next header (not a standard SES request)" });
    }
    let (ses, rest) = StandardView::parse(rest)?;
    Ok((pds, ses, rest))
}

/// What the walker expects around the PDS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct WalkConfig {
    /// UDP or native IP (entropy header).
    pub encapsulation: Encapsulation,
    /// Whether clear packets end with a CRC32C trailer.
    pub crc: bool,
}

impl Default for WalkConfig {
    fn default() -> Self {
        WalkConfig { encapsulation: Encapsulation::Udp, crc: false }
    }
}

/// The part after the entropy header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// A TSS-protected packet, not decrypted.
    Secured {
        /// The TSS header.
        tss: TssHeader,
        /// The encrypted PDS, SES and payload.
        ciphertext: &'a [u8],
        /// The GCM tag.
        icv: &'a [u8; ICV_LEN],
    },
    /// A packet in the clear.
    Clear {
        /// The PDS header.
        pds: PdsHeader,
        /// The SES header, if the PDS header announces one.
        ses: Option<SesHeader>,
        /// The payload.
        payload: &'a [u8],
        /// The CRC32C trailer, if configured (not yet verified: see [`UetPacket::verify_crc`]).
        crc: Option<u32>,
    },
}

/// A parsed UET packet: borrowed views of each part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UetPacket<'a> {
    /// The entropy header (native-IP mode).
    pub entropy: Option<EntropyHeader>,
    /// TSS-protected or clear contents.
    pub body: Body<'a>,
    /// The bytes the CRC32C trailer covers (after the prefix), when there is a trailer.
    crc_covered: &'a [u8],
}

impl<'a> UetPacket<'a> {
    /// Walks `bytes` (the UDP payload, or the IP payload in native-IP mode): entropy → TSS or PDS →
    /// SES → payload → ICV or CRC.
    #[inline]
    pub fn parse(bytes: &'a [u8], config: WalkConfig) -> Result<Self, Error> {
        let (entropy, after_entropy) = match config.encapsulation {
            Encapsulation::NativeIp => {
                let (e, rest) = EntropyHeader::parse(bytes)?;
                (Some(e), rest)
            }
            Encapsulation::Udp => (None, bytes),
        };
        if TssHeader::starts(after_entropy) {
            let (tss, rest) = TssHeader::parse(after_entropy)?;
            let split = rest.len().checked_sub(ICV_LEN).ok_or(Error::Truncated {
                field: "TSS ICV",
                needed: ICV_LEN,
                got: rest.len(),
            })?;
            let (ciphertext, icv) = rest.split_at(split);
            let icv = <&[u8; ICV_LEN]>::try_from(icv).map_err(|_| Error::Mismatch { field: "TSS ICV" })?;
            return Ok(UetPacket { entropy, body: Body::Secured { tss, ciphertext, icv }, crc_covered: &[] });
        }
        let (covered, crc) = if config.crc {
            let (covered, crc) = split_trailer(bytes)?;
            (covered, Some(crc))
        } else {
            (bytes, None)
        };
        // The PDS starts where the entropy header ended, inside the CRC-covered bytes.
        let pds_start = bytes.len() - after_entropy.len();
        let (_, inner) = take(covered, pds_start, "entropy header")?;
        let (pds, rest) = PdsHeader::parse(inner)?;
        let (ses, payload) = SesHeader::parse(pds.next_header(), rest)?;
        if let Some(expected) = ses.as_ref().and_then(SesHeader::payload_length) {
            if usize::from(expected) != payload.len() {
                return Err(Error::Mismatch { field: "SES payload length and payload bytes" });
            }
        }
        let crc_covered = if config.crc { covered } else { &[] };
        Ok(UetPacket { entropy, body: Body::Clear { pds, ses, payload, crc }, crc_covered })
    }

    /// The strict check of a clear packet's headers: the first reserved bit set in its PDS or
    /// SES header, by field name ([`UetPacket::parse`] ignores reserved bits, as a receiver must;
    /// decoders and conformance tests use this to warn). A TSS-protected packet's own header is
    /// checked, and the encrypted headers after it are not; bytes that do not parse are left to
    /// the parse to report.
    pub fn check_reserved(bytes: &[u8], config: WalkConfig) -> Result<(), Error> {
        let after_entropy = match config.encapsulation {
            Encapsulation::NativeIp => {
                EntropyHeader::check_reserved(bytes)?;
                EntropyHeader::parse(bytes)?.1
            }
            Encapsulation::Udp => bytes,
        };
        if TssHeader::starts(after_entropy) {
            return TssHeader::check_reserved(after_entropy);
        }
        PdsHeader::check_reserved(after_entropy)?;
        let (pds, rest) = PdsHeader::parse(after_entropy)?;
        SesHeader::check_reserved(pds.next_header(), rest)
    }

    /// Checks the CRC32C trailer against `prefix` (IP source and destination addresses, plus the
    /// UDP header in UDP mode). Packets without a trailer pass.
    pub fn verify_crc(&self, prefix: &[u8]) -> Result<(), Error> {
        let Body::Clear { crc: Some(got), .. } = self.body else { return Ok(()) };
        let expected = crc32c(prefix, self.crc_covered);
        if expected == got { Ok(()) } else { Err(Error::Crc { expected, got }) }
    }
}

/// The headers of a clear UET packet, for building one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PacketRepr {
    /// The entropy header: `Some` for native-IP mode.
    pub entropy: Option<EntropyHeader>,
    /// The PDS header.
    pub pds: PdsHeader,
    /// The SES header; must be the one `pds` announces.
    pub ses: Option<SesHeader>,
}

impl PacketRepr {
    /// Bytes of headers [`PacketRepr::emit`] writes before the payload.
    pub fn header_len(&self) -> usize {
        self.entropy.map_or(0, |e| e.buffer_len()) + self.pds.buffer_len() + self.ses.map_or(0, |s| s.buffer_len())
    }

    /// Writes the headers, `payload` and, if `crc_prefix` is given, the CRC32C trailer computed
    /// with that prefix, to the front of `out`. Returns the packet length.
    #[inline]
    pub fn emit(&self, payload: &[u8], crc_prefix: Option<&[u8]>, out: &mut [u8]) -> Result<usize, Error> {
        let announced = self.pds.next_header();
        let carried = self.ses.map_or(NextHeader::None, |s| s.next_header());
        if announced != carried {
            return Err(Error::Mismatch { field: "PDS next header and SES header" });
        }
        if let Some(expected) = self.ses.as_ref().and_then(SesHeader::payload_length) {
            if usize::from(expected) != payload.len() {
                return Err(Error::Mismatch { field: "SES payload length and payload bytes" });
            }
        }
        let total = self.header_len() + payload.len() + if crc_prefix.is_some() { CRC_LEN } else { 0 };
        if out.len() < total {
            return Err(Error::BufferTooShort { needed: total, got: out.len() });
        }
        let mut n = 0;
        if let Some(e) = self.entropy {
            n += e.emit(out)?;
        }
        n += self.pds.emit(out.get_mut(n..).unwrap_or_default())?;
        if let Some(s) = self.ses {
            n += s.emit(out.get_mut(n..).unwrap_or_default())?;
        }
        let end = n + payload.len();
        out.get_mut(n..end).ok_or(Error::BufferTooShort { needed: end, got: n })?.copy_from_slice(payload);
        match crc_prefix {
            Some(prefix) => append_crc(prefix, out, end),
            None => Ok(end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pds::{Ack, AckExtension, AckFlags, AckRequest, DeliveryMode, PdcDest, Request, RequestFlags};
    use crate::ses::{Opcode, RequestCommon, SesFlags, StandardRequest, StandardTail};

    fn write_request(psn: u32) -> PacketRepr {
        PacketRepr {
            entropy: Some(EntropyHeader { entropy: 0x1234 }),
            pds: PdsHeader::Request(Request {
                mode: DeliveryMode::Rud,
                next_header: NextHeader::ReqStd,
                flags: RequestFlags::AR,
                clear_psn_offset: 0,
                psn,
                spdcid: 7,
                dest: PdcDest::Syn { use_rsv_pdc: false, psn_offset: (psn - 4) as u16 },
                cc: None,
            }),
            ses: Some(SesHeader::Standard(StandardRequest {
                common: RequestCommon {
                    opcode: Opcode::Write,
                    flags: SesFlags::SOM | SesFlags::EOM,
                    ri_generation: 1,
                    job_id: 42,
                    pid_on_fep: 5,
                    resource_index: 6,
                },
                message_id: 1,
                buffer_offset: 0,
                initiator: 9,
                match_bits: 0xAB,
                tail: StandardTail::Som { header_data: 0 },
                request_length: 8,
                ext: None,
            })),
        }
    }

    #[test]
    fn crc_prefixes() {
        use crate::pdc::ipv4;
        let (a, b) = (ipv4([10, 0, 0, 1]), ipv4([192, 168, 1, 2]));
        assert_eq!(CrcPrefix::ip(&a, &b).as_bytes(), [10, 0, 0, 1, 192, 168, 1, 2]);
        let v6: crate::pdc::IpAddr = core::array::from_fn(|i| 0x20 + i as u8);
        let p = CrcPrefix::ip(&v6, &a);
        assert_eq!(p.as_bytes().len(), 32);
        assert_eq!((&p.as_bytes()[..16], &p.as_bytes()[16..]), (&v6[..], &a[..]));
        let udp = [0x12, 0x34, 0x12, 0xB9, 0, 40, 0, 0];
        assert_eq!(CrcPrefix::ip(&a, &b).with_udp(udp).as_bytes()[8..], udp);
        assert_eq!(p.with_udp(udp).as_bytes().len(), 40);
        // A second UDP header does not fit and is not added.
        assert_eq!(p.with_udp(udp).with_udp(udp).as_bytes().len(), 40);
        assert_eq!(
            CrcPrefix::ip(&a, &b).with_entropy([1, 2, 3, 4]).as_bytes(),
            [10, 0, 0, 1, 192, 168, 1, 2, 1, 2, 3, 4]
        );
    }

    #[test]
    fn append_and_check_crc() {
        let prefix = [10, 0, 0, 1, 10, 0, 0, 2];
        let mut out = [0u8; 40];
        out[..32].fill(0x5A);
        assert_eq!(append_crc(&prefix, &mut out, 32), Ok(36));
        assert_eq!(out[32..36], crc32c(&prefix, &[0x5A; 32]).to_be_bytes());
        assert_eq!(check_crc(&prefix, &out[..36]), Ok(&[0x5A; 32][..]));
        let mut bad = out;
        bad[0] ^= 1;
        assert!(matches!(check_crc(&prefix, &bad[..36]), Err(Error::Crc { .. })));
        assert!(matches!(check_crc(&prefix, &out[..3]), Err(Error::Truncated { needed: 4, got: 3, .. })));
        assert_eq!(append_crc(&prefix, &mut out, 37), Err(Error::BufferTooShort { needed: 41, got: 40 }));
        assert_eq!(
            append_crc(&prefix, &mut out, usize::MAX),
            Err(Error::BufferTooShort { needed: usize::MAX, got: 40 })
        );
    }

    /// A READ request carries no payload; in a continuation packet its `payload_length` is the
    /// data it asks for (the reference provider's `uet_tx_msg`), so no bytes must follow. A WRITE
    /// continuation must carry what it announces.
    #[test]
    fn a_read_continuation_asks_for_data_and_carries_none() {
        let mut repr = write_request(5);
        let Some(SesHeader::Standard(mut ses)) = repr.ses else { panic!("a standard request") };
        ses.common.flags = SesFlags::empty();
        ses.tail = StandardTail::Continuation { payload_length: 1024, message_offset: 1024 };
        ses.common.opcode = Opcode::Read;
        repr.ses = Some(SesHeader::Standard(ses));
        let mut out = [0u8; 128];
        let n = repr.emit(&[], None, &mut out).unwrap();
        let cfg = WalkConfig { encapsulation: Encapsulation::NativeIp, crc: false };
        let Body::Clear { ses: got, payload, .. } = UetPacket::parse(&out[..n], cfg).unwrap().body else { panic!() };
        assert_eq!((got, payload), (repr.ses, &[][..]));
        ses.common.opcode = Opcode::Write;
        repr.ses = Some(SesHeader::Standard(ses));
        assert!(matches!(repr.emit(&[], None, &mut out), Err(Error::Mismatch { .. })));
    }

    /// CRC-32C bit by bit, as RFC 3720 §B.4 defines it: an implementation independent of the
    /// `crc` crate.
    fn crc32c_bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
            }
        }
        !crc
    }

    /// The trailer in the reference provider's form: CRC-32C over the IPv4 addresses and the IP
    /// payload, most significant byte first. The little-endian form is refused.
    #[test]
    fn crc_trailer_is_the_reference_providers() {
        // Known answer (RFC 3720 §B.4): 32 zero bytes.
        assert_eq!(crc32c(&[], &[0; 32]), 0x8A91_36AA);
        assert_eq!(crc32c_bitwise(&[0; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0; 8], &[0; 24]).to_be_bytes(), [0x8A, 0x91, 0x36, 0xAA]);
        // A native-IP packet built the reference provider's way.
        let addresses = [10, 0, 0, 1, 10, 0, 0, 2];
        let repr = write_request(4);
        let mut out = [0u8; 128];
        let n = repr.emit(b"payload!", Some(&addresses), &mut out).unwrap();
        let covered = [&addresses[..], &out[..n - CRC_LEN]].concat();
        assert_eq!(out[n - CRC_LEN..n], crc32c_bitwise(&covered).to_be_bytes());
        let cfg = WalkConfig { encapsulation: Encapsulation::NativeIp, crc: true };
        UetPacket::parse(&out[..n], cfg).unwrap().verify_crc(&addresses).unwrap();
        out[n - CRC_LEN..n].reverse();
        assert!(matches!(UetPacket::parse(&out[..n], cfg).unwrap().verify_crc(&addresses), Err(Error::Crc { .. })));
    }

    #[test]
    fn walk_native_ip_with_crc() {
        let prefix = [10, 0, 0, 1, 10, 0, 0, 2];
        let repr = write_request(4);
        let mut out = [0u8; 128];
        let n = repr.emit(b"payload!", Some(&prefix), &mut out).unwrap();
        assert_eq!(n, 4 + 12 + 44 + 8 + 4);
        let cfg = WalkConfig { encapsulation: Encapsulation::NativeIp, crc: true };
        let p = UetPacket::parse(&out[..n], cfg).unwrap();
        assert_eq!(p.entropy, Some(EntropyHeader { entropy: 0x1234 }));
        let Body::Clear { pds, ses, payload, crc } = p.body else { panic!("clear packet") };
        assert_eq!(pds, repr.pds);
        assert_eq!(ses, repr.ses);
        assert_eq!(payload, b"payload!");
        assert!(crc.is_some());
        p.verify_crc(&prefix).unwrap();
        assert!(matches!(p.verify_crc(&[10, 0, 0, 1, 10, 0, 0, 3]), Err(Error::Crc { .. })));
        // A flipped payload bit is caught.
        out[70] ^= 1;
        assert!(UetPacket::parse(&out[..n], cfg).unwrap().verify_crc(&prefix).is_err());
    }

    #[test]
    fn walk_udp_ack_and_secured() {
        let ack = PacketRepr {
            entropy: None,
            pds: PdsHeader::Ack(Ack {
                next_header: NextHeader::None,
                flags: AckFlags::empty(),
                request: AckRequest::None,
                ack_psn_offset: 0,
                cack_psn: 8,
                spdcid: 19,
                dpdcid: 7,
                ext: AckExtension::None,
            }),
            ses: None,
        };
        let mut out = [0u8; 64];
        let n = ack.emit(&[], None, &mut out).unwrap();
        let p = UetPacket::parse(&out[..n], WalkConfig::default()).unwrap();
        assert!(matches!(p.body, Body::Clear { ses: None, payload: [], crc: None, .. }));

        // TSS: header, 10 bytes of ciphertext, 16-byte ICV.
        let mut s = [0u8; 12 + 10 + 16];
        s[0] = 0x08;
        s[22] = 0xCC;
        s[37] = 0x77;
        let p = UetPacket::parse(&s, WalkConfig::default()).unwrap();
        let Body::Secured { ciphertext, icv, .. } = p.body else { panic!("secured") };
        assert_eq!(ciphertext.len(), 10);
        assert_eq!(icv[0], 0xCC);
        assert!(matches!(
            UetPacket::parse(&s[..20], WalkConfig::default()),
            Err(Error::Truncated { field: "TSS ICV", .. })
        ));
        // The strict check reads the TSS header's reserved bit (the parse ignores it).
        assert_eq!(UetPacket::check_reserved(&s, WalkConfig::default()), Ok(()));
        s[0] |= 0x02;
        assert!(UetPacket::parse(&s, WalkConfig::default()).is_ok());
        assert!(matches!(UetPacket::check_reserved(&s, WalkConfig::default()), Err(Error::Reserved { .. })));
    }

    /// The fast path reads the commonest request as both views; the same bytes one header at a
    /// time give the same views.
    #[test]
    fn request_std_fast_path() {
        let mut repr = write_request(4);
        repr.entropy = None;
        let mut out = [0u8; 128];
        let n = repr.emit(b"payload!", None, &mut out).unwrap();
        let bytes = &out[..n];
        let (pds, ses, rest) = parse_request_std(bytes).unwrap();
        assert_eq!((pds.psn(), pds.spdcid(), pds.syn()), (4, 7, true));
        assert_eq!((ses.opcode(), ses.job_id(), ses.ri_generation(), ses.resource_index()), (Opcode::Write, 42, 1, 6));
        assert_eq!(rest, b"payload!");
        let (raw, _) = <RequestStdRaw as zerocopy::FromBytes>::ref_from_prefix(bytes).unwrap();
        assert!(RequestView::std_without_cc(&raw.pds).is_some());
        assert!(StandardView::without_ext(&raw.common, &raw.body).is_some());
        assert_eq!(format!("{:?}", parse_request_std(bytes)), format!("{:?}", parse_request_std_each(bytes)));
        // Another SES header, a short buffer.
        let mut other = out;
        other[1] &= 0x7F; // next header 3 → 2 (medium request)
        assert_eq!(
            parse_request_std(&other[..n]).map(drop),
            Err(Error::Mismatch { field: "PDS next header (not a standard SES request)" })
        );
        assert!(matches!(parse_request_std(&bytes[..55]), Err(Error::Truncated { .. })));
    }

    proptest::proptest! {
        // Cheap cases, and a mutation in one reserved field is hit by few of them: run many.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// On any bytes near a valid request (RUD/ROD, SYN or not, with CC fields or not, SOM or
        /// not, any 6-bit opcode, a few bytes changed, any length), the fast path gives exactly
        /// what the header-at-a-time path gives: the same views or the same error.
        #[test]
        fn request_std_fast_path_agrees_with_each_header(
            rod in proptest::prelude::any::<bool>(),
            syn in proptest::prelude::any::<bool>(),
            cc in proptest::prelude::any::<bool>(),
            som in proptest::prelude::any::<bool>(),
            opcode in 0u8..64,
            changes in proptest::collection::vec((0usize..80, proptest::prelude::any::<u8>()), 0..4),
            len in 0usize..=80,
        ) {
            let mut repr = write_request(4);
            repr.entropy = None;
            if let PdsHeader::Request(r) = &mut repr.pds {
                r.mode = if rod { DeliveryMode::Rod } else { DeliveryMode::Rud };
                if !syn {
                    r.dest = PdcDest::Established { dpdcid: 19 };
                }
                r.cc = cc.then_some(crate::pds::RequestCc { ccc_id: 3, credit_target: 0x10203 });
            }
            if let Some(SesHeader::Standard(s)) = repr.ses.as_mut() && !som {
                s.common.flags = SesFlags::EOM;
                s.tail = StandardTail::Continuation { payload_length: 16, message_offset: 4096 };
            }
            let mut out = [0u8; 80];
            let n = repr.emit(&[0xA5; 16], None, &mut out).unwrap();
            let ses_at = if cc { 16 } else { 12 };
            out[ses_at] = opcode;
            for (at, x) in changes {
                out[at] ^= x;
            }
            let bytes = &out[..len.min(n)];
            proptest::prop_assert_eq!(
                format!("{:?}", parse_request_std(bytes)),
                format!("{:?}", parse_request_std_each(bytes))
            );
        }
    }

    #[test]
    fn inconsistencies_are_refused() {
        let mut repr = write_request(5);
        repr.ses = None;
        assert!(matches!(repr.emit(&[], None, &mut [0u8; 128]), Err(Error::Mismatch { .. })));
        let repr = write_request(5);
        assert!(matches!(repr.emit(&[0; 8], None, &mut [0u8; 40]), Err(Error::BufferTooShort { .. })));
        // A continuation packet whose payload length disagrees with its bytes.
        let mut repr = write_request(5);
        if let Some(SesHeader::Standard(s)) = repr.ses.as_mut() {
            s.common.flags = SesFlags::EOM;
            s.tail = StandardTail::Continuation { payload_length: 3, message_offset: 0 };
        }
        assert!(repr.emit(&[1, 2], None, &mut [0u8; 128]).is_err());
        let mut out = [0u8; 128];
        let n = repr.emit(&[1, 2, 3], None, &mut out).unwrap();
        out[n] = 9; // one byte too many on the wire
        let cfg = WalkConfig { encapsulation: Encapsulation::NativeIp, crc: false };
        assert!(matches!(UetPacket::parse(&out[..n + 1], cfg), Err(Error::Mismatch { .. })));
        assert!(UetPacket::parse(&out[..n], cfg).is_ok());
    }
}
