//! Whole RC Link TYPE1 frames in the three forms ETH-X can use, parsed as zero-copy views and
//! emitted into caller buffers:
//!
//! | form | in front of the RH | source |
//! |---|---|---|
//! | [`Outer::Standard`] | Ethernet II, an optional 802.1Q tag, IPv4, UDP to port 4791 | RC Link "Standard" format |
//! | [`Outer::Afh`] | the 12-byte AFH_GEN2_16b MAC header ([`AfhGen2`]), an EtherType | RC Link AFH_GEN2_16b |
//! | [`Outer::Pri`] | the 12-byte ETH-X PRI header ([`Pri`]), an EtherType | ETH-X PRI (ZTE Technologies 2026/3) |
//!
//! then the 64-bit RH ([`RoutingHeader`]), the payload, the pad to 4 bytes the RH's Pad field
//! counts, and an ICRC when configured (UniVista RCLINK_AFH_SPEC v2.4 as
//! `xiangli-sophgo/Tier6-Model` `docs/design/PAXI/12_rclink` quotes it: Standard = MAC +
//! \[VLAN\] + IPv4 + UDP + RH + payload \[+ICRC\], TYPE1 UDP destination port 4791). The outer
//! headers of the Standard form are `etherparse`'s. Frames here exclude the Ethernet FCS (the
//! MAC adds it); [`emit`] pads a frame to the 60-byte Ethernet minimum.
//!
//! *Project-defined* (no source says):
//!
//! * the UDP checksum is sent as 0 ("no checksum" in IPv4) and not checked on receive (secondary
//!   sources quote both 0x0 and 0xFFFF for RC Link); the UDP source port is the caller's;
//! * the EtherType after an AFH or PRI header is [`FrameConfig::ethertype`], by default
//!   [`LOCAL_EXPERIMENTAL_ETHERTYPE`] (IEEE 802's 0x88B5) — RC Link's own MAC_TYPE values are
//!   not public;
//! * Pkt_len counts the RH, the payload and its pad; a receiver uses it (when not 0) to drop the
//!   Ethernet padding of a short AFH or PRI frame, which has no other length field;
//! * the ICRC is CRC-32 (IEEE 802.3, `crc`'s `CRC_32_ISO_HDLC`) over the RH, the payload and the
//!   pad, sent most significant byte first — RoCE's masked-header ICRC does not carry over to
//!   the AFH and PRI forms;
//! * ACK, NAK and CNP packets carry no payload: what follows their RH (and ICRC) is padding.
//!
//! Left to the caller (RC Link's receiver does these; this module parses what it is given): the
//! check that a frame's destination (MAC DA, AFH destination, PRI address) is this port, the
//! AFH Key_words M bit (TYPE2 multicast) and the IPv4 destination. A VLAN tag is read and written
//! with TPID 0x8100 in the Standard form only; RC Link's configurable TPID and its VLAN tag in
//! the AFH forms are not implemented.

use crate::framing::{AFH_GEN2_16B_LEN, AfhGen2, FrameError, PRI_LEN, Pri};
use crate::rclink::{RH_LEN, RhError, RhKind, RoutingHeader};
use etherparse::{EtherType, Ethernet2Header, IpNumber, Ipv4Header, SingleVlanHeader, UdpHeader, VlanId, VlanPcp};

/// RC Link TYPE1's UDP destination port (RoCEv2's).
pub const RC_LINK_UDP_PORT: u16 = 4791;
/// IEEE 802's Local Experimental EtherType 1, this crate's default after AFH and PRI headers.
pub const LOCAL_EXPERIMENTAL_ETHERTYPE: u16 = 0x88B5;
/// Bytes of the ICRC.
pub const ICRC_LEN: usize = 4;
/// The smallest Ethernet frame without its FCS.
pub const MIN_FRAME: usize = 60;

/// The ICRC's tables: sixteen (16 KiB) by default, one (1 KiB) with `small-crc`.
#[cfg(all(not(feature = "simd-crc"), not(feature = "small-crc")))]
const ICRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);
#[cfg(all(not(feature = "simd-crc"), feature = "small-crc"))]
const ICRC: crc::Crc<u32, crc::Table<1>> = crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);

/// The ICRC of `covered` (the RH, the payload and the pad; see the [module](self) doc), which a
/// frame carries most significant byte first. The backend is chosen by feature: the `crc`
/// crate's slice-by-16 tables (16 KiB of flash; the default), one table (1 KiB; `small-crc`,
/// for firmware that counts flash), or libdeflate's carry-less multiply (`simd-crc`, hosts with
/// `std`; it wins when both are on). Instructions on a Cortex-M4: FIRMWARE.md in the
/// repository.
pub fn icrc_of(covered: &[u8]) -> u32 {
    #[cfg(feature = "simd-crc")]
    let icrc = libdeflater::crc32(covered);
    #[cfg(not(feature = "simd-crc"))]
    let icrc = ICRC.checksum(covered);
    icrc
}

const ETHERNET_LEN: usize = 14;
const VLAN_LEN: usize = 4;
const IPV4_LEN: usize = 20;
const UDP_LEN: usize = 8;
const ETHERTYPE_LEN: usize = 2;

/// Why a frame does not parse or emit. Nothing was delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PacketError {
    /// An AFH or PRI header does not parse or emit.
    Header(FrameError),
    /// The RH does not parse or emit.
    Rh(RhError),
    /// The frame is not an RC Link TYPE1 frame of the expected form: another EtherType, IP
    /// protocol or UDP port.
    NotRcLink,
    /// An Ethernet, VLAN, IPv4 or UDP header is malformed, or its length field points beyond
    /// the frame.
    BadOuter {
        /// Which header.
        header: &'static str,
    },
    /// Pkt_len or Pad points beyond the frame.
    BadLength,
    /// The ICRC does not match.
    BadIcrc,
    /// The output buffer is too small.
    BufferTooSmall,
    /// A field of the outer headers is out of range (VLAN ID, PCP, DSCP, or a packet too long
    /// for IPv4).
    FieldRange {
        /// The field.
        field: &'static str,
    },
}

impl From<FrameError> for PacketError {
    fn from(e: FrameError) -> Self {
        PacketError::Header(e)
    }
}

impl From<RhError> for PacketError {
    fn from(e: RhError) -> Self {
        PacketError::Rh(e)
    }
}

impl core::fmt::Display for PacketError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PacketError::Header(e) => write!(f, "{e}"),
            PacketError::Rh(e) => write!(f, "{e}"),
            PacketError::NotRcLink => f.write_str("not an RC Link TYPE1 frame of this form"),
            PacketError::BadOuter { header } => write!(f, "malformed {header} header"),
            PacketError::BadLength => f.write_str("Pkt_len or Pad beyond the frame"),
            PacketError::BadIcrc => f.write_str("ICRC mismatch"),
            PacketError::BufferTooSmall => f.write_str("output buffer too small"),
            PacketError::FieldRange { field } => write!(f, "{field} out of range"),
        }
    }
}

impl core::error::Error for PacketError {}

/// An 802.1Q tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Vlan {
    /// Priority code point, 0 to 7.
    pub pcp: u8,
    /// Drop eligible.
    pub dei: bool,
    /// VLAN ID, 0 to 4095.
    pub vid: u16,
}

/// The Standard form's outer headers, as far as RC Link uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Standard {
    /// Destination MAC address.
    pub dest_mac: [u8; 6],
    /// Source MAC address.
    pub source_mac: [u8; 6],
    /// The 802.1Q tag, if any.
    pub vlan: Option<Vlan>,
    /// Source IPv4 address.
    pub source_ip: [u8; 4],
    /// Destination IPv4 address.
    pub dest_ip: [u8; 4],
    /// DSCP, 0 to 63.
    pub dscp: u8,
    /// ECN, 0 to 3 (0b11: congestion experienced, what a receiver answers with a CNP).
    pub ecn: u8,
    /// Time to live.
    pub ttl: u8,
    /// UDP source port (the destination port is [`RC_LINK_UDP_PORT`]).
    pub source_port: u16,
}

/// What precedes the RH: one of the three forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outer {
    /// Ethernet, an optional VLAN tag, IPv4, UDP.
    Standard(Standard),
    /// AFH_GEN2_16b + EtherType.
    Afh(AfhGen2),
    /// PRI + EtherType.
    Pri(Pri),
}

/// Which form a receiver expects (AFH and PRI headers cannot be told apart by their bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Form {
    /// [`Outer::Standard`].
    Standard,
    /// [`Outer::Afh`].
    Afh,
    /// [`Outer::Pri`].
    Pri,
}

impl Outer {
    /// The form.
    pub const fn form(&self) -> Form {
        match self {
            Outer::Standard(_) => Form::Standard,
            Outer::Afh(_) => Form::Afh,
            Outer::Pri(_) => Form::Pri,
        }
    }

    /// Bytes in front of the RH.
    pub const fn len(&self) -> usize {
        match self {
            Outer::Standard(s) => ETHERNET_LEN + if s.vlan.is_some() { VLAN_LEN } else { 0 } + IPV4_LEN + UDP_LEN,
            Outer::Afh(_) => AFH_GEN2_16B_LEN + ETHERTYPE_LEN,
            Outer::Pri(_) => PRI_LEN + ETHERTYPE_LEN,
        }
    }

    /// Whether the outer headers take no bytes (never).
    pub const fn is_empty(&self) -> bool {
        false
    }
}

/// The framing choices both ends share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameConfig {
    /// The EtherType after an AFH or PRI header.
    pub ethertype: u16,
    /// Whether packets end in an ICRC.
    pub icrc: bool,
}

impl Default for FrameConfig {
    fn default() -> Self {
        FrameConfig { ethertype: LOCAL_EXPERIMENTAL_ETHERTYPE, icrc: false }
    }
}

/// A parsed frame: views into the received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Packet<'a> {
    /// The outer headers.
    pub outer: Outer,
    /// The RH.
    pub rh: RoutingHeader,
    /// The payload, without its pad.
    pub payload: &'a [u8],
}

/// The bytes a packet of `payload` bytes takes on the wire with `outer` in front (without the
/// FCS, before padding to [`MIN_FRAME`]).
pub const fn packet_len(config: &FrameConfig, outer: &Outer, payload: usize) -> usize {
    outer.len() + RH_LEN + payload.next_multiple_of(4) + if config.icrc { ICRC_LEN } else { 0 }
}

/// Writes a frame: `outer`, `rh` (its Pad and, in a SEND, its Pkt_len set here), `payload`, the
/// pad, the ICRC when configured, and zeros up to [`MIN_FRAME`]. Returns the frame's length.
pub fn emit(
    config: &FrameConfig,
    outer: &Outer,
    rh: &RoutingHeader,
    payload: &[u8],
    out: &mut [u8],
) -> Result<usize, PacketError> {
    if !payload.is_empty() && !matches!(rh.kind, RhKind::Send { .. }) {
        return Err(PacketError::FieldRange { field: "payload of an ACK, NAK or CNP" });
    }
    let pad = payload.len().next_multiple_of(4) - payload.len();
    let body = RH_LEN + payload.len() + pad;
    let icrc = if config.icrc { ICRC_LEN } else { 0 };
    let total = outer.len() + body + icrc;
    let frame = out.get_mut(..total.max(MIN_FRAME)).ok_or(PacketError::BufferTooSmall)?;
    let (head, rest) = frame.split_at_mut(outer.len());
    emit_outer(config, outer, body + icrc, head)?;
    let mut rh = *rh;
    rh.pad = pad as u8;
    if let RhKind::Send { pkt_len } = &mut rh.kind {
        *pkt_len = if body <= 127 { body as u8 } else { 0 };
    }
    let (packet, tail) = rest.split_at_mut(body);
    let (rh_bytes, data) = packet.split_at_mut(RH_LEN);
    rh.emit(rh_bytes)?;
    let (data, pad_bytes) = data.split_at_mut(payload.len());
    data.copy_from_slice(payload);
    pad_bytes.fill(0);
    let (icrc_bytes, fill) = tail.split_at_mut(icrc);
    if config.icrc {
        icrc_bytes.copy_from_slice(&icrc_of(packet).to_be_bytes());
    }
    fill.fill(0);
    Ok(frame.len())
}

fn emit_outer(config: &FrameConfig, outer: &Outer, after: usize, out: &mut [u8]) -> Result<(), PacketError> {
    match outer {
        Outer::Standard(s) => {
            let udp_len = u16::try_from(UDP_LEN + after).map_err(range("packet length"))?;
            let mut ip = Ipv4Header::new(udp_len, s.ttl, IpNumber::UDP, s.source_ip, s.dest_ip)
                .map_err(range("packet length"))?;
            ip.dscp = etherparse::IpDscp::try_new(s.dscp).map_err(range("DSCP"))?;
            ip.ecn = etherparse::IpEcn::try_new(s.ecn).map_err(range("ECN"))?;
            ip.header_checksum = ip.calc_header_checksum();
            let udp = UdpHeader {
                source_port: s.source_port,
                destination_port: RC_LINK_UDP_PORT,
                length: udp_len,
                checksum: 0,
            };
            let (eth_type, vlan) = match s.vlan {
                None => (EtherType::IPV4, None),
                Some(v) => {
                    let tag = SingleVlanHeader {
                        pcp: VlanPcp::try_new(v.pcp).map_err(range("PCP"))?,
                        drop_eligible_indicator: v.dei,
                        vlan_id: VlanId::try_new(v.vid).map_err(range("VLAN ID"))?,
                        ether_type: EtherType::IPV4,
                    };
                    (EtherType::VLAN_TAGGED_FRAME, Some(tag))
                }
            };
            let eth = Ethernet2Header { destination: s.dest_mac, source: s.source_mac, ether_type: eth_type };
            let mut at = put(out, 0, &eth.to_bytes())?;
            if let Some(tag) = vlan {
                at = put(out, at, &tag.to_bytes())?;
            }
            at = put(out, at, &ip.to_bytes())?;
            put(out, at, &udp.to_bytes())?;
        }
        Outer::Afh(h) => {
            let at = h.emit(out)?;
            put(out, at, &config.ethertype.to_be_bytes())?;
        }
        Outer::Pri(h) => {
            let at = h.emit(out)?;
            put(out, at, &config.ethertype.to_be_bytes())?;
        }
    }
    Ok(())
}

fn range<E>(field: &'static str) -> impl FnOnce(E) -> PacketError {
    move |_| PacketError::FieldRange { field }
}

fn bad<E>(header: &'static str) -> impl FnOnce(E) -> PacketError {
    move |_| PacketError::BadOuter { header }
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> Result<usize, PacketError> {
    let end = at + bytes.len();
    out.get_mut(at..end).ok_or(PacketError::BufferTooSmall)?.copy_from_slice(bytes);
    Ok(end)
}

/// Parses a frame of `form` (without its FCS): the outer headers, the RH and the payload; checks
/// the ICRC when configured. Bytes after the packet (Ethernet padding) are ignored.
pub fn parse<'a>(config: &FrameConfig, form: Form, frame: &'a [u8]) -> Result<Packet<'a>, PacketError> {
    let (outer, body, exact) = match form {
        Form::Standard => {
            let (s, body) = parse_standard(frame)?;
            (Outer::Standard(s), body, true)
        }
        Form::Afh => {
            let (h, rest) = AfhGen2::parse(frame)?;
            (Outer::Afh(h), ethertype(config, rest)?, false)
        }
        Form::Pri => {
            let (h, rest) = Pri::parse(frame)?;
            (Outer::Pri(h), ethertype(config, rest)?, false)
        }
    };
    let (rh, after) = RoutingHeader::parse(body)?;
    let icrc = if config.icrc { ICRC_LEN } else { 0 };
    // The packet's length: the IP length (Standard), Pkt_len, or the whole rest.
    let data_len = match rh.kind {
        RhKind::Send { pkt_len } if !exact && pkt_len != 0 => {
            (pkt_len as usize).checked_sub(RH_LEN).ok_or(PacketError::BadLength)?
        }
        RhKind::Send { .. } => after.len().checked_sub(icrc).ok_or(PacketError::BadLength)?,
        RhKind::AckNak(_) | RhKind::Cnp { .. } => 0,
    };
    let packet = body.get(..RH_LEN + data_len).ok_or(PacketError::BadLength)?;
    if config.icrc {
        let sent = body.get(packet.len()..packet.len() + ICRC_LEN).ok_or(PacketError::BadLength)?;
        if sent != icrc_of(packet).to_be_bytes() {
            return Err(PacketError::BadIcrc);
        }
    }
    let data = packet.get(RH_LEN..).unwrap_or_default();
    // (An ACK, NAK or CNP parses with Pad 0: it has no payload to pad.)
    let payload =
        data.get(..data.len().checked_sub(rh.pad as usize).ok_or(PacketError::BadLength)?).unwrap_or_default();
    Ok(Packet { outer, rh, payload })
}

fn ethertype<'a>(config: &FrameConfig, rest: &'a [u8]) -> Result<&'a [u8], PacketError> {
    let (t, body) = rest.split_first_chunk::<ETHERTYPE_LEN>().ok_or(FrameError::Truncated)?;
    if u16::from_be_bytes(*t) != config.ethertype {
        return Err(PacketError::NotRcLink);
    }
    Ok(body)
}

/// The Standard form's headers; returns them and the UDP payload, cut to the UDP length.
fn parse_standard(frame: &[u8]) -> Result<(Standard, &[u8]), PacketError> {
    let (eth, mut rest) = Ethernet2Header::from_slice(frame).map_err(bad("Ethernet"))?;
    let mut ether_type = eth.ether_type;
    let mut vlan = None;
    if ether_type == EtherType::VLAN_TAGGED_FRAME {
        let (tag, after) = SingleVlanHeader::from_slice(rest).map_err(bad("VLAN"))?;
        vlan = Some(Vlan { pcp: tag.pcp.value(), dei: tag.drop_eligible_indicator, vid: tag.vlan_id.value() });
        (ether_type, rest) = (tag.ether_type, after);
    }
    if ether_type != EtherType::IPV4 {
        return Err(PacketError::NotRcLink);
    }
    let (ip, _) = Ipv4Header::from_slice(rest).map_err(bad("IPv4"))?;
    if ip.calc_header_checksum() != ip.header_checksum {
        return Err(PacketError::BadOuter { header: "IPv4 checksum" });
    }
    if ip.protocol != IpNumber::UDP || ip.more_fragments || ip.fragment_offset.value() != 0 {
        return Err(PacketError::NotRcLink);
    }
    let ip_packet = rest.get(..ip.total_len as usize).ok_or(PacketError::BadOuter { header: "IPv4" })?;
    let udp_packet = ip_packet.get(ip.header_len()..).ok_or(PacketError::BadOuter { header: "IPv4" })?;
    let (udp, _) = UdpHeader::from_slice(udp_packet).map_err(bad("UDP"))?;
    if udp.destination_port != RC_LINK_UDP_PORT {
        return Err(PacketError::NotRcLink);
    }
    let body = udp_packet.get(UDP_LEN..udp.length as usize).ok_or(PacketError::BadOuter { header: "UDP" })?;
    let standard = Standard {
        dest_mac: eth.destination,
        source_mac: eth.source,
        vlan,
        source_ip: ip.source,
        dest_ip: ip.destination,
        dscp: ip.dscp.value(),
        ecn: ip.ecn.value(),
        ttl: ip.time_to_live,
        source_port: udp.source_port,
    };
    Ok((standard, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::KeyWords;
    use crate::rclink::Syndrome;
    use proptest::prelude::*;

    /// Whatever the backend, the ICRC is CRC-32/ISO-HDLC: its check value, and the one-table,
    /// slice-by-16 and libdeflate forms agree on any bytes.
    #[test]
    fn every_icrc_backend_is_crc32_iso_hdlc() {
        assert_eq!(icrc_of(b"123456789"), 0xCBF4_3926);
        let one = crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);
        let sixteen = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);
        let mut x = 0x9E37_79B9u32;
        for len in [0usize, 1, 3, 15, 16, 17, 64, 255, 1500, 4096] {
            let bytes: std::vec::Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (x >> 24) as u8
                })
                .collect();
            let want = sixteen.checksum(&bytes);
            assert_eq!(
                (icrc_of(&bytes), one.checksum(&bytes), libdeflater::crc32(&bytes)),
                (want, want, want),
                "{len} bytes"
            );
        }
    }

    fn standard(vlan: Option<Vlan>) -> Outer {
        Outer::Standard(Standard {
            dest_mac: [2, 0, 0, 0, 0, 1],
            source_mac: [2, 0, 0, 0, 0, 2],
            vlan,
            source_ip: [10, 0, 0, 2],
            dest_ip: [10, 0, 0, 1],
            dscp: 26,
            ecn: 0b10,
            ttl: 64,
            source_port: 0xC000,
        })
    }

    fn afh() -> Outer {
        let key = KeyWords { version: false, slap_quadrant: 0, local: true, multicast: false };
        Outer::Afh(AfhGen2 { traffic: 2, da_payload: 0, dest: 7, key, sa_payload: 0, source: 9 })
    }

    fn pri() -> Outer {
        Outer::Pri(Pri { network_device_id: 0x0102, device_address: [3; 10] })
    }

    fn send(psn: u16) -> RoutingHeader {
        RoutingHeader::send(5, psn)
    }

    #[test]
    fn standard_by_hand() {
        let config = FrameConfig::default();
        let mut buf = [0u8; 128];
        let n = emit(&config, &standard(None), &send(1), &[0xAA; 5], &mut buf).unwrap();
        // 14 + 20 + 8 + RH 8 + 5 payload + 3 pad = 58, padded to 60.
        assert_eq!(n, MIN_FRAME);
        assert_eq!(buf[12..14], [0x08, 0x00]);
        assert_eq!(buf[14], 0x45);
        assert_eq!(buf[16..18], (20u16 + 8 + 16).to_be_bytes()); // IPv4 total length
        assert_eq!(buf[23], 17); // UDP
        assert_eq!(buf[36..38], 4791u16.to_be_bytes());
        assert_eq!(buf[38..40], 24u16.to_be_bytes()); // UDP length
        assert_eq!(buf[40..42], [0, 0]); // UDP checksum: none
        // RH: Pad 3 (bits 60:59), Pkt_len 16 (bits 31:25), PSN 1 (bit 13), Dest_QP 5.
        let rh = u64::from_be_bytes(buf[42..50].try_into().unwrap());
        assert_eq!(rh, 3 << 59 | 16 << 25 | 1 << 13 | 5);
        assert_eq!(buf[50..58], [0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0, 0, 0]);
        // The IPv4 checksum verifies.
        let sum = buf[14..34].chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum::<u32>();
        assert_eq!((sum & 0xFFFF) + (sum >> 16), 0xFFFF);
        let p = parse(&config, Form::Standard, &buf[..n]).unwrap();
        assert_eq!((p.outer, p.payload), (standard(None), &[0xAA; 5][..]));
    }

    #[test]
    fn short_afh_and_pri_frames_shed_their_ethernet_padding() {
        for config in [FrameConfig::default(), FrameConfig { icrc: true, ..FrameConfig::default() }] {
            for outer in [afh(), pri()] {
                let mut buf = [0u8; 128];
                let n = emit(&config, &outer, &send(2), &[1, 2, 3], &mut buf).unwrap();
                assert_eq!(n, MIN_FRAME);
                assert_eq!(buf[12..14], [0x88, 0xB5]);
                let p = parse(&config, outer.form(), &buf[..n]).unwrap();
                assert_eq!((p.outer, p.payload, p.rh.pad), (outer, &[1, 2, 3][..], 1));
            }
        }
    }

    /// An ACK whose Pad is not zero (it has no payload to pad) is taken, Pad ignored.
    #[test]
    fn an_ack_with_pad_set_is_taken() {
        let config = FrameConfig { icrc: false, ..FrameConfig::default() };
        let ack = RoutingHeader { kind: RhKind::AckNak(crate::rclink::Syndrome::Ack { credits: 3 }), ..send(4) };
        let mut buf = [0u8; 128];
        let n = emit(&config, &afh(), &ack, &[], &mut buf).unwrap();
        // The RH follows the EtherType; Pad is bits 60:59 of its first (big-endian) byte.
        let rh_at = buf[..n].windows(2).position(|w| w == [0x88, 0xB5]).unwrap() + 2;
        buf[rh_at] |= 0b10 << 3;
        let p = parse(&config, Form::Afh, &buf[..n]).unwrap();
        assert_eq!((p.rh.kind, p.rh.pad, p.payload), (ack.kind, 0, &[][..]));
    }

    #[test]
    fn bad_frames_are_typed_errors() {
        let config = FrameConfig { icrc: true, ..FrameConfig::default() };
        let mut buf = [0u8; 256];
        let n = emit(&config, &standard(Some(Vlan { pcp: 3, dei: false, vid: 100 })), &send(3), &[9; 150], &mut buf)
            .unwrap();
        assert_eq!(n, 18 + 20 + 8 + 8 + 152 + 4);
        assert!(parse(&config, Form::Standard, &buf[..n]).is_ok());
        let mut corrupt = buf;
        corrupt[60] ^= 1;
        assert_eq!(parse(&config, Form::Standard, &corrupt[..n]), Err(PacketError::BadIcrc));
        // The IPv4 header's own checksum (the ICRC does not cover it), and a fragment.
        let mut ttl = buf;
        ttl[18 + 8] ^= 1;
        assert_eq!(parse(&config, Form::Standard, &ttl[..n]), Err(PacketError::BadOuter { header: "IPv4 checksum" }));
        // Truncated: the IPv4 length points beyond the frame.
        assert_eq!(parse(&config, Form::Standard, &buf[..n - 1]), Err(PacketError::BadOuter { header: "IPv4" }));
        // Another UDP port.
        let mut other = buf;
        other[18 + 20 + 2..18 + 20 + 4].copy_from_slice(&53u16.to_be_bytes());
        assert_eq!(parse(&config, Form::Standard, &other[..n]), Err(PacketError::NotRcLink));
        // An AFH frame with another EtherType, and one whose Pkt_len exceeds the frame.
        let n = emit(&FrameConfig::default(), &afh(), &send(0), &[5; 8], &mut buf).unwrap();
        let mut other = buf;
        other[13] = 0;
        assert_eq!(parse(&FrameConfig::default(), Form::Afh, &other[..n]), Err(PacketError::NotRcLink));
        assert_eq!(parse(&FrameConfig::default(), Form::Afh, &buf[..29]), Err(PacketError::BadLength));
        assert_eq!(
            parse(&FrameConfig::default(), Form::Pri, &buf[..5]),
            Err(PacketError::Header(FrameError::Truncated))
        );
        assert_eq!(emit(&config, &afh(), &send(0), &[0; 100], &mut [0; 100]), Err(PacketError::BufferTooSmall));
        // An ACK carries no payload: none is emitted, and what follows one is padding.
        let ack_rh = RoutingHeader { kind: RhKind::AckNak(Syndrome::Ack { credits: 0 }), ..send(7) };
        assert!(matches!(emit(&config, &pri(), &ack_rh, &[1], &mut buf), Err(PacketError::FieldRange { .. })));
        let ack = RoutingHeader { kind: RhKind::AckNak(Syndrome::Ack { credits: 0 }), ..send(7) };
        let n = emit(&config, &pri(), &ack, &[], &mut buf).unwrap();
        let p = parse(&config, Form::Pri, &buf[..n]).unwrap();
        assert_eq!((p.rh, p.payload.len()), (ack, 0));
    }

    fn arb_outer() -> impl Strategy<Value = Outer> {
        let vlan = proptest::option::of((0..8u8, any::<bool>(), 0..4096u16).prop_map(|(pcp, dei, vid)| Vlan {
            pcp,
            dei,
            vid,
        }));
        prop_oneof![
            (
                any::<[u8; 6]>(),
                any::<[u8; 6]>(),
                vlan,
                any::<[u8; 4]>(),
                any::<[u8; 4]>(),
                0..64u8,
                any::<u8>(),
                any::<u16>(),
                0..4u8
            )
                .prop_map(|(d, s, vlan, si, di, dscp, ttl, port, ecn)| Outer::Standard(Standard {
                    dest_mac: d,
                    source_mac: s,
                    vlan,
                    source_ip: si,
                    dest_ip: di,
                    dscp,
                    ecn,
                    ttl,
                    source_port: port
                })),
            (0..64u8, 0..1u32 << 24, any::<u16>(), any::<u16>()).prop_map(|(t, p, d, s)| {
                let key = KeyWords { version: false, slap_quadrant: 0, local: true, multicast: false };
                Outer::Afh(AfhGen2 { traffic: t, da_payload: p, dest: d, key, sa_payload: 0, source: s })
            }),
            (any::<u16>(), any::<[u8; 10]>())
                .prop_map(|(id, a)| Outer::Pri(Pri { network_device_id: id, device_address: a })),
        ]
    }

    proptest! {
        /// Every form, with and without ICRC, round-trips any payload.
        #[test]
        fn frames_round_trip(outer in arb_outer(), icrc in any::<bool>(), psn in 0..4096u16, fack in any::<bool>(),
                             payload in proptest::collection::vec(any::<u8>(), 0..600)) {
            let config = FrameConfig { icrc, ..FrameConfig::default() };
            let rh = RoutingHeader { fack, ..send(psn) };
            let mut buf = [0u8; 1024];
            let n = emit(&config, &outer, &rh, &payload, &mut buf).unwrap();
            prop_assert_eq!(n, packet_len(&config, &outer, payload.len()).max(MIN_FRAME));
            let p = parse(&config, outer.form(), &buf[..n]).unwrap();
            prop_assert_eq!(p.outer, outer);
            prop_assert_eq!(p.payload, &payload[..]);
            prop_assert_eq!((p.rh.psn, p.rh.fack, p.rh.dest_qp), (psn, fack, 5));
        }
    }
}
