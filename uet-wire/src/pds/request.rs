//! RUD/ROD requests (types 2, 3; 12 bytes) and RUD_CC/ROD_CC requests (types 13, 14; 16 bytes),
//! UE 1.0 §3.5.11; Wireshark, uet-ref-prov and XDP2 agree.
//!
//! | bytes | field |
//! |---|---|
//! | 0–1 | prologue: flags RETX 0x10, AR 0x08, SYN 0x04; 0x63 reserved |
//! | 2–3 | `clear_psn_offset` (signed): `CLEAR_PSN = PSN + offset` |
//! | 4–7 | PSN |
//! | 8–9 | SPDCID |
//! | 10–11 | DPDCID (SYN = 0) or `use_rsv_pdc` ‖ 3 reserved ‖ 12-bit `psn_offset` (SYN = 1) |
//! | 12 | CC forms: CCC id |
//! | 13–15 | CC forms: credit target (24 bits) |
//!
//! Receive policy: reserved bits (flags 0x63, the SYN form's 3 bits) are ignored and sent as
//! zero; [`Request::check_reserved`] reports them.

use super::{
    DeliveryMode, NextHeader, PacketType, PdcDest, Prologue, check_flags, defmt_bits, u24_from, u24_to, view, write,
};
use crate::error::Error;
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{I16, U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

bitflags! {
    /// Request flags other than SYN (which [`PdcDest`] carries).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct RequestFlags: u8 {
        /// The packet is a retransmission.
        const RETX = 0x10;
        /// The sender asks for an immediate ACK.
        const AR = 0x08;
    }
}
defmt_bits!(RequestFlags);

const SYN: u8 = 0x04;
const RESERVED: u8 = 0x63;
/// RUD_REQ, ROD_REQ, RUD_CC_REQ, ROD_CC_REQ as a set of type bits.
const REQUEST_TYPES: u32 = 1 << PacketType::RudReq as u8
    | 1 << PacketType::RodReq as u8
    | 1 << PacketType::RudCcReq as u8
    | 1 << PacketType::RodCcReq as u8;
/// The ROD request types.
const ROD_TYPES: u32 = 1 << PacketType::RodReq as u8 | 1 << PacketType::RodCcReq as u8;

/// The raw 12-byte request layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RequestRaw {
    /// Prologue.
    pub prologue: U16,
    /// Signed clear-PSN offset.
    pub clear_psn_offset: I16,
    /// PSN.
    pub psn: U32,
    /// Source PDC id.
    pub spdcid: U16,
    /// DPDCID or SYN info.
    pub dest: U16,
}

/// The raw 4-byte CC extension.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RequestCcRaw {
    /// Congestion-control context id.
    pub ccc_id: u8,
    /// Credit target, 24 bits.
    pub credit_target: [u8; 3],
}

/// Congestion-control fields of RUD_CC/ROD_CC requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RequestCc {
    /// Congestion-control context id.
    pub ccc_id: u8,
    /// Credit target (24 bits).
    pub credit_target: u32,
}

/// A RUD or ROD request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Request {
    /// RUD or ROD.
    pub mode: DeliveryMode,
    /// The SES request that follows.
    pub next_header: NextHeader,
    /// RETX and AR.
    pub flags: RequestFlags,
    /// `CLEAR_PSN - PSN`: the initiator may forget guaranteed-delivery state up to `CLEAR_PSN`.
    pub clear_psn_offset: i16,
    /// Packet sequence number.
    pub psn: u32,
    /// Source (initiator) PDC id.
    pub spdcid: u16,
    /// Destination PDC id, or the SYN form while the PDC is being set up.
    pub dest: PdcDest,
    /// CC fields: `Some` makes this a RUD_CC/ROD_CC request.
    pub cc: Option<RequestCc>,
}

impl Request {
    /// Length without CC fields.
    pub const LEN: usize = 12;
    /// Length with CC fields.
    pub const LEN_CC: usize = 16;

    /// The packet type this header is sent as.
    pub const fn packet_type(&self) -> PacketType {
        match (self.mode, self.cc.is_some()) {
            (DeliveryMode::Rud, false) => PacketType::RudReq,
            (DeliveryMode::Rod, false) => PacketType::RodReq,
            (DeliveryMode::Rud, true) => PacketType::RudCcReq,
            (DeliveryMode::Rod, true) => PacketType::RodCcReq,
        }
    }

    /// `CLEAR_PSN = PSN + clear_psn_offset` (wrapping).
    pub const fn clear_psn(&self) -> u32 {
        self.psn.wrapping_add(self.clear_psn_offset as i32 as u32)
    }

    /// For a SYN packet, the start PSN it implies: `PSN - psn_offset`.
    pub const fn start_psn(&self) -> Option<u32> {
        self.dest.start_psn(self.psn)
    }

    /// The strict check: the first reserved bit set in the request at the front of `bytes`, by
    /// field name ([`Request::parse`] ignores them).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<RequestRaw>(bytes, "PDS request")?;
        let p = Prologue::from_word(raw.prologue.get());
        check_flags(p.flags, RESERVED, "request flags reserved bits")?;
        PdcDest::check(p.flags & SYN != 0, raw.dest.get())
    }

    /// Parses a request header from the front of `bytes` (through [`RequestView::parse`], which
    /// holds every check).
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        RequestView::parse(bytes).map(|(v, rest)| (v.to_repr(), rest))
    }

    /// Bytes [`Request::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        if self.cc.is_some() { Self::LEN_CC } else { Self::LEN }
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        if !self.next_header.is_request_or_data() {
            return Err(Error::Mismatch { field: "request next header (neither an SES request nor read data)" });
        }
        let flags = self.flags.intersection(RequestFlags::all()).bits() | if self.dest.syn() { SYN } else { 0 };
        let prologue =
            Prologue { packet_type: self.packet_type().into(), next: self.next_header.into(), flags }.to_word();
        let raw = RequestRaw {
            prologue: U16::new(prologue),
            clear_psn_offset: I16::new(self.clear_psn_offset),
            psn: U32::new(self.psn),
            spdcid: U16::new(self.spdcid),
            dest: U16::new(self.dest.to_wire()?),
        };
        let cc = match self.cc {
            Some(cc) => {
                Some(RequestCcRaw { ccc_id: cc.ccc_id, credit_target: u24_to(cc.credit_target, "credit_target")? })
            }
            None => None,
        };
        if out.len() < self.buffer_len() {
            return Err(Error::BufferTooShort { needed: self.buffer_len(), got: out.len() });
        }
        let n = write(&raw, out)?;
        match cc {
            Some(cc) => Ok(n + write(&cc, out.get_mut(n..).unwrap_or_default())?),
            None => Ok(n),
        }
    }
}

/// A validated RUD/ROD request header borrowed from the packet: the receive fast path.
///
/// [`RequestView::parse`] makes every check [`Request::parse`] makes (that parse is built on this
/// one), so the accessors read the borrowed bytes without failing. Use the view where a packet is
/// handled once and dropped; use [`RequestView::to_repr`] to keep an owned copy.
#[derive(Clone, Copy, Debug)]
pub struct RequestView<'a> {
    raw: &'a RequestRaw,
    cc: Option<&'a RequestCcRaw>,
    mode: DeliveryMode,
    next_header: NextHeader,
}

impl<'a> RequestView<'a> {
    /// Validates the request header at the front of `bytes`; returns it and the bytes after it.
    #[inline(always)]
    pub fn parse(bytes: &'a [u8]) -> Result<(Self, &'a [u8]), Error> {
        let (raw, rest) = view::<RequestRaw>(bytes, "PDS request")?;
        let p = Prologue::from_word(raw.prologue.get());
        if !Self::is_valid(raw) {
            Self::check_each(raw)?;
        }
        let mode = if ROD_TYPES >> p.packet_type & 1 != 0 { DeliveryMode::Rod } else { DeliveryMode::Rud };
        let has_cc = p.packet_type >= PacketType::RudCcReq as u8;
        let next_header = match p.next {
            1 => NextHeader::ReqSmall,
            2 => NextHeader::ReqMedium,
            5 => NextHeader::RspData,
            6 => NextHeader::RspDataSmall,
            _ => NextHeader::ReqStd,
        };
        let (cc, rest) = if has_cc {
            let (c, rest) = view::<RequestCcRaw>(rest, "PDS request CC fields")?;
            (Some(c), rest)
        } else {
            (None, rest)
        };
        Ok((RequestView { raw, cc, mode, next_header }, rest))
    }

    /// The view of `raw` if it is a valid RUD or ROD request without CC fields whose next header is
    /// a standard SES request; `None` for anything else, valid or not, which [`RequestView::parse`]
    /// then handles.
    ///
    /// The checks are made on the bytes read as little-endian words (one load each on a
    /// little-endian core), so each big-endian field's mask is byte-swapped into place and no
    /// field is extracted: byte 0 is `type 5 | next 3 high bits`, byte 1 `next low bit | flags 7`,
    /// Reserved bits are not looked at (the accessors mask them).
    #[inline(always)]
    pub(crate) fn std_without_cc(raw: &'a RequestRaw) -> Option<Self> {
        const STD: u16 = (NextHeader::ReqStd as u16) << 7;
        const RUD: u16 = ((PacketType::RudReq as u16) << 11 | STD).swap_bytes();
        const ROD: u16 = ((PacketType::RodReq as u16) << 11 | STD).swap_bytes();
        const TYPE_NEXT: u16 = 0xFF80u16.swap_bytes();
        let bytes = raw.as_bytes();
        let head = u16::from_le_bytes(*bytes.first_chunk::<2>()?);
        let type_next = head & TYPE_NEXT;
        if (type_next == RUD) | (type_next == ROD) {
            let mode = if type_next == ROD { DeliveryMode::Rod } else { DeliveryMode::Rud };
            Some(RequestView { raw, cc: None, mode, next_header: NextHeader::ReqStd })
        } else {
            None
        }
    }

    /// Every check at once, with bit masks rather than jump tables: the hot path of `parse`.
    #[inline(always)]
    fn is_valid(raw: &RequestRaw) -> bool {
        let p = Prologue::from_word(raw.prologue.get());
        REQUEST_TYPES >> p.packet_type & 1 != 0 && matches!(p.next, 1..=3 | 5 | 6)
    }

    /// The same checks one field at a time in wire order, naming the first that fails (the cold
    /// path of `parse`).
    #[cold]
    fn check_each(raw: &RequestRaw) -> Result<(), Error> {
        let p = Prologue::from_word(raw.prologue.get());
        match PacketType::try_from(p.packet_type)? {
            PacketType::RudReq | PacketType::RodReq | PacketType::RudCcReq | PacketType::RodCcReq => {}
            _ => return Err(Error::Mismatch { field: "PDS type (not a RUD/ROD request)" }),
        }
        if !NextHeader::try_from(p.next)?.is_request_or_data() {
            return Err(Error::Mismatch { field: "request next header (neither an SES request nor read data)" });
        }
        Ok(())
    }

    /// RUD or ROD.
    #[inline]
    pub const fn mode(&self) -> DeliveryMode {
        self.mode
    }

    /// The SES request that follows.
    #[inline]
    pub const fn next_header(&self) -> NextHeader {
        self.next_header
    }

    /// RETX and AR.
    #[inline]
    pub fn flags(&self) -> RequestFlags {
        RequestFlags::from_bits_truncate(self.prologue_flags())
    }

    /// Whether SYN is set (the PDC is being set up).
    #[inline]
    pub fn syn(&self) -> bool {
        self.prologue_flags() & SYN != 0
    }

    /// `CLEAR_PSN - PSN`.
    #[inline]
    pub fn clear_psn_offset(&self) -> i16 {
        self.raw.clear_psn_offset.get()
    }

    /// Packet sequence number.
    #[inline]
    pub fn psn(&self) -> u32 {
        self.raw.psn.get()
    }

    /// Source (initiator) PDC id.
    #[inline]
    pub fn spdcid(&self) -> u16 {
        self.raw.spdcid.get()
    }

    /// Destination PDC id or the SYN form.
    #[inline]
    pub fn dest(&self) -> PdcDest {
        PdcDest::decode(self.syn(), self.raw.dest.get())
    }

    /// CC fields of a RUD_CC/ROD_CC request.
    #[inline]
    pub fn cc(&self) -> Option<RequestCc> {
        self.cc.map(|c| RequestCc { ccc_id: c.ccc_id, credit_target: u24_from(c.credit_target) })
    }

    /// Header length: 12, or 16 with CC fields.
    #[inline]
    pub const fn len(&self) -> usize {
        if self.cc.is_some() { Request::LEN_CC } else { Request::LEN }
    }

    /// Always false: a header is never empty (present for the `len` convention).
    #[inline]
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// The owned header.
    #[inline]
    pub fn to_repr(&self) -> Request {
        Request {
            mode: self.mode,
            next_header: self.next_header,
            flags: self.flags(),
            clear_psn_offset: self.clear_psn_offset(),
            psn: self.psn(),
            spdcid: self.spdcid(),
            dest: self.dest(),
            cc: self.cc(),
        }
    }

    #[inline]
    fn prologue_flags(&self) -> u8 {
        (self.raw.prologue.get() & 0x7F) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The worked example of the design paper (Hoefler et al., arXiv 2508.08906, figure 6):
    /// initiator PDC 7 opens with a SYN from start PSN 4; the first write packet (PSN 4) carries
    /// psn_offset 0, the fifth (PSN 8) psn_offset 4; once established the target's PDC id 19
    /// replaces the SYN field.
    #[test]
    fn pdc_setup_example() {
        let syn4 = [0x11, 0x8C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x07, 0x00, 0x00];
        let (r, rest) = Request::parse(&syn4).unwrap();
        assert!(rest.is_empty());
        assert_eq!(r.mode, DeliveryMode::Rud);
        assert_eq!(r.next_header, NextHeader::ReqStd);
        assert_eq!(r.flags, RequestFlags::AR);
        assert_eq!(r.psn, 4);
        assert_eq!(r.spdcid, 7);
        assert_eq!(r.dest, PdcDest::Syn { use_rsv_pdc: false, psn_offset: 0 });
        assert_eq!(r.start_psn(), Some(4));

        let syn8 = [0x11, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x07, 0x00, 0x04];
        let (r, _) = Request::parse(&syn8).unwrap();
        assert_eq!((r.psn, r.start_psn()), (8, Some(4)));

        let est = [0x11, 0x80, 0xFF, 0xFE, 0x00, 0x00, 0x00, 0x09, 0x00, 0x07, 0x00, 0x13];
        let (r, _) = Request::parse(&est).unwrap();
        assert_eq!(r.dest, PdcDest::Established { dpdcid: 19 });
        assert_eq!(r.clear_psn_offset, -2);
        assert_eq!(r.clear_psn(), 7);
        let mut out = [0u8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, est);
    }

    /// Flags built with undefined bits (`from_bits_retain`) go out as the defined ones alone:
    /// SYN and the reserved bits come only from what they mean.
    #[test]
    fn undefined_flag_bits_are_not_sent() {
        let est = [0x11, 0x80, 0xFF, 0xFE, 0x00, 0x00, 0x00, 0x09, 0x00, 0x07, 0x00, 0x13];
        let (r, _) = Request::parse(&est).unwrap();
        let odd = Request { flags: RequestFlags::from_bits_retain(0xFF), ..r };
        let mut out = [0u8; 12];
        odd.emit(&mut out).unwrap();
        let (back, _) = Request::parse(&out).unwrap();
        assert_eq!((back.flags, back.dest), (RequestFlags::all(), r.dest));
        assert_eq!(Request::check_reserved(&out), Ok(()));
    }

    #[test]
    fn cc_form_and_rejections() {
        // ROD_CC (14), NH medium (2), RETX; CCC 0x42, credit target 0x010203.
        let b = [0x71, 0x10, 0, 0, 0, 0, 0, 1, 0, 2, 0, 3, 0x42, 0x01, 0x02, 0x03];
        let (r, _) = Request::parse(&b).unwrap();
        assert_eq!(r.packet_type(), PacketType::RodCcReq);
        assert_eq!(r.cc, Some(RequestCc { ccc_id: 0x42, credit_target: 0x010203 }));
        assert_eq!(r.flags, RequestFlags::RETX);
        assert!(matches!(Request::parse(&b[..15]), Err(Error::Truncated { .. })));
        // Reserved flag bits: ignored, cleared on emit, reported by the strict check.
        let mut x = b;
        x[1] |= 0x63;
        assert_eq!(Request::parse(&x).unwrap().0, r);
        assert_eq!(Request::check_reserved(&x), Err(Error::Reserved { field: "request flags reserved bits" }));
        assert_eq!(Request::check_reserved(&b), Ok(()));
        let mut out = [0u8; 16];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);
        // NH = response without data (4): not a request.
        let mut x = b;
        x[0] = 0x72;
        x[1] = 0x10;
        assert!(matches!(Request::parse(&x), Err(Error::Mismatch { .. })));
        // NH = RSP_DATA (5): read data going back in the target's PSN space.
        x[1] = 0x90;
        assert_eq!(Request::parse(&x).unwrap().0.next_header, NextHeader::RspData);
        // SYN with reserved pdc_info bits: ignored, reported strictly.
        let syn = [0x11, 0x84, 0, 0, 0, 0, 0, 8, 0, 7, 0x70, 4];
        assert_eq!(Request::parse(&syn).unwrap().0.dest, PdcDest::Syn { use_rsv_pdc: false, psn_offset: 4 });
        assert_eq!(Request::check_reserved(&syn), Err(Error::Reserved { field: "pdc_info reserved bits" }));
        // use_rsv_pdc is bit 15.
        let syn = [0x11, 0x84, 0, 0, 0, 0, 0, 8, 0, 7, 0x80, 4];
        assert_eq!(Request::parse(&syn).unwrap().0.dest, PdcDest::Syn { use_rsv_pdc: true, psn_offset: 4 });
    }

    pub(crate) fn arb_request() -> impl Strategy<Value = Request> {
        (
            prop_oneof![Just(DeliveryMode::Rud), Just(DeliveryMode::Rod)],
            prop_oneof![
                Just(NextHeader::ReqSmall),
                Just(NextHeader::ReqMedium),
                Just(NextHeader::ReqStd),
                Just(NextHeader::RspData),
                Just(NextHeader::RspDataSmall)
            ],
            0u8..4,
            any::<i16>(),
            any::<u32>(),
            any::<u16>(),
            prop_oneof![
                any::<u16>().prop_map(|dpdcid| PdcDest::Established { dpdcid }),
                (any::<bool>(), 0u16..4096)
                    .prop_map(|(use_rsv_pdc, psn_offset)| PdcDest::Syn { use_rsv_pdc, psn_offset }),
            ],
            proptest::option::of(
                (any::<u8>(), 0u32..(1 << 24)).prop_map(|(ccc_id, credit_target)| RequestCc { ccc_id, credit_target }),
            ),
        )
            .prop_map(|(mode, next_header, f, clear_psn_offset, psn, spdcid, dest, cc)| Request {
                mode,
                next_header,
                flags: RequestFlags::from_bits_truncate(f << 3),
                clear_psn_offset,
                psn,
                spdcid,
                dest,
                cc,
            })
    }

    proptest! {
        #[test]
        fn round_trips(r in arb_request()) {
            let mut out = [0u8; 16];
            let n = r.emit(&mut out).unwrap();
            prop_assert_eq!(n, r.buffer_len());
            prop_assert_eq!(Request::parse(&out[..n]).unwrap(), (r, &[][..]));
            prop_assert!(r.emit(&mut out[..n - 1]).is_err());
        }

        /// The all-at-once check accepts exactly what the field-by-field check accepts, and the
        /// view reads back what the Repr holds.
        #[test]
        fn fast_check_is_exact(t in prop_oneof![Just(2u8), Just(3), Just(13), Just(14), 0u8..32], mut b in any::<[u8; 16]>()) {
            b[0] = (t << 3) | (b[0] & 0x07);
            let raw = RequestRaw::ref_from_prefix(&b[..]).unwrap().0;
            prop_assert_eq!(RequestView::is_valid(raw), RequestView::check_each(raw).is_ok());
            if let Ok((v, rest)) = RequestView::parse(&b) {
                prop_assert_eq!(v.len(), b.len() - rest.len());
                let r = v.to_repr();
                prop_assert_eq!((v.psn(), v.spdcid(), v.dest(), v.cc()), (r.psn, r.spdcid, r.dest, r.cc));
            }
        }
    }
}
