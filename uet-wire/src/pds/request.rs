//! RUD/ROD requests (types 2, 3; 12 bytes) and RUD_CC/ROD_CC requests (types 13, 14; 16 bytes),
//! UE 1.0 §3.5.11, digest §3.4 \[A\].
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

use super::{
    DeliveryMode, NextHeader, PacketType, PdcDest, Prologue, check_flags, defmt_bits, read, u24_from, u24_to, write,
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
        match self.dest {
            PdcDest::Syn { psn_offset, .. } => Some(self.psn.wrapping_sub(psn_offset as u32)),
            PdcDest::Established { .. } => None,
        }
    }

    /// Parses a request header from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = read::<RequestRaw>(bytes, "PDS request")?;
        let p = Prologue::from_word(raw.prologue.get());
        let (mode, has_cc) = match PacketType::try_from(p.packet_type)? {
            PacketType::RudReq => (DeliveryMode::Rud, false),
            PacketType::RodReq => (DeliveryMode::Rod, false),
            PacketType::RudCcReq => (DeliveryMode::Rud, true),
            PacketType::RodCcReq => (DeliveryMode::Rod, true),
            _ => return Err(Error::Mismatch { field: "PDS type is not a RUD/ROD request" }),
        };
        let next_header = NextHeader::try_from(p.next)?;
        if !next_header.is_request() {
            return Err(Error::Mismatch { field: "request next header is not an SES request" });
        }
        check_flags(p.flags, RESERVED, "request flags reserved bits")?;
        let dest = PdcDest::from_wire(p.flags & SYN != 0, raw.dest.get())?;
        let (cc, rest) = if has_cc {
            let (c, rest) = read::<RequestCcRaw>(rest, "PDS request CC fields")?;
            (Some(RequestCc { ccc_id: c.ccc_id, credit_target: u24_from(c.credit_target) }), rest)
        } else {
            (None, rest)
        };
        let h = Request {
            mode,
            next_header,
            flags: RequestFlags::from_bits_truncate(p.flags),
            clear_psn_offset: raw.clear_psn_offset.get(),
            psn: raw.psn.get(),
            spdcid: raw.spdcid.get(),
            dest,
            cc,
        };
        Ok((h, rest))
    }

    /// Bytes [`Request::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        if self.cc.is_some() { Self::LEN_CC } else { Self::LEN }
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        if !self.next_header.is_request() {
            return Err(Error::Mismatch { field: "request next header is not an SES request" });
        }
        let flags = self.flags.bits() | if self.dest.syn() { SYN } else { 0 };
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The worked example of the design paper (digest overview): initiator PDC 7 opens with a SYN
    /// from start PSN 4; the first write packet (PSN 4) carries psn_offset 0, the fifth (PSN 8)
    /// psn_offset 4; once established the target's PDC id 19 replaces the SYN field.
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

    #[test]
    fn cc_form_and_rejections() {
        // ROD_CC (14), NH medium (2), RETX; CCC 0x42, credit target 0x010203.
        let b = [0x71, 0x10, 0, 0, 0, 0, 0, 1, 0, 2, 0, 3, 0x42, 0x01, 0x02, 0x03];
        let (r, _) = Request::parse(&b).unwrap();
        assert_eq!(r.packet_type(), PacketType::RodCcReq);
        assert_eq!(r.cc, Some(RequestCc { ccc_id: 0x42, credit_target: 0x010203 }));
        assert_eq!(r.flags, RequestFlags::RETX);
        assert!(matches!(Request::parse(&b[..15]), Err(Error::Truncated { .. })));
        // Reserved flag 0x40.
        let mut x = b;
        x[1] |= 0x40;
        assert!(matches!(Request::parse(&x), Err(Error::Reserved { .. })));
        // NH = response: not a request.
        let mut x = b;
        x[0] = 0x72;
        assert!(matches!(Request::parse(&x), Err(Error::Mismatch { .. })));
        // SYN with reserved pdc_info bits.
        let syn = [0x11, 0x84, 0, 0, 0, 0, 0, 8, 0, 7, 0x10, 4];
        assert!(matches!(Request::parse(&syn), Err(Error::Reserved { .. })));
        // use_rsv_pdc is bit 15.
        let syn = [0x11, 0x84, 0, 0, 0, 0, 0, 8, 0, 7, 0x80, 4];
        assert_eq!(Request::parse(&syn).unwrap().0.dest, PdcDest::Syn { use_rsv_pdc: true, psn_offset: 4 });
    }

    pub(crate) fn arb_request() -> impl Strategy<Value = Request> {
        (
            prop_oneof![Just(DeliveryMode::Rud), Just(DeliveryMode::Rod)],
            prop_oneof![Just(NextHeader::ReqSmall), Just(NextHeader::ReqMedium), Just(NextHeader::ReqStd)],
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
    }
}
