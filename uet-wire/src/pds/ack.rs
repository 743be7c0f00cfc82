//! ACK (type 7, 12 bytes), ACK_CC (type 8, 32 bytes) and ACK_CCX (type 9, 40 bytes), UE 1.0
//! §3.5.12; Wireshark, uet-ref-prov and XDP2 agree except on ACK_CCX.
//!
//! | bytes | field |
//! |---|---|
//! | 0–1 | prologue: NH = SES response carried; flags M 0x20, RETX 0x10, P 0x08, REQ 0x06; 0x41 reserved |
//! | 2–3 | `ack_psn_offset` (signed; `ACK_PSN = CACK_PSN + offset`), or `probe_opaque` when P = 1 |
//! | 4–7 | CACK_PSN: every PSN up to it was delivered |
//! | 8–9 | SPDCID |
//! | 10–11 | DPDCID |
//! | 12 | ACK_CC: `cc_type` (high nibble: 0 NSCC, 1 credit) ‖ `cc_flags` (reserved); ACK_CCX: `ccx_type` ‖ reserved |
//! | 13 | MPR: maximum PSN range, in units of 128 PSNs |
//! | 14–15 | `sack_psn_offset` (signed; `SACK_BASE = CACK_PSN + offset`) |
//! | 16–23 | SACK bitmap: bit *i* (LSB first of the big-endian u64) = PSN `SACK_BASE + i` received |
//! | 24–31 | ACK_CC: CC state (NSCC or credit) |
//! | 24–39 | ACK_CCX: CCX state, opaque (40 bytes per Wireshark and uet-ref-prov, XDP2 has 32; no source defines the contents) |
//!
//! Receive policy: reserved bits (flags 0x41, which the reference provider `uet-ref-prov` uses
//! as an own flag at 0x40; `cc_flags`; the ACK_CCX flags nibble; the 24 bits after a credit) are
//! ignored and sent as zero; [`Ack::check_reserved`] reports them. The request value 3 (both
//! request bits) is read as a close, as the reference provider reads the two bits one by one, and
//! reported by the strict check.

use super::{NextHeader, PacketType, Prologue, check_flags, defmt_bits, u24_from, u24_to, view, write};
use crate::error::{Error, reserved_zero};
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{I16, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

bitflags! {
    /// ACK flags other than the 2-bit request field.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct AckFlags: u8 {
        /// The acknowledged packet arrived ECN-marked (CE).
        const M = 0x20;
        /// The acknowledged packet was a retransmission.
        const RETX = 0x10;
        /// This ACK answers a probe: bytes 2–3 are the probe's opaque value.
        const P = 0x08;
    }
}
defmt_bits!(AckFlags);

const REQ_MASK: u8 = 0x06;
const RESERVED: u8 = 0x41;

/// What the target asks of the initiator in an ACK (flags 0x06).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AckRequest {
    /// Nothing.
    #[default]
    None,
    /// Please send a CLEAR (guaranteed-delivery state may be released).
    Clear,
    /// Please close the PDC.
    Close,
}

/// The raw 12-byte ACK layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct AckRaw {
    /// Prologue.
    pub prologue: U16,
    /// Signed ACK PSN offset, or probe opaque.
    pub ack_psn_offset: I16,
    /// Cumulative ACK PSN.
    pub cack_psn: U32,
    /// Source PDC id.
    pub spdcid: U16,
    /// Destination PDC id.
    pub dpdcid: U16,
}

/// The raw 12 bytes common to the ACK_CC and ACK_CCX extensions (bytes 12–23).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct AckExtRaw {
    /// CC/CCX type (high nibble) ‖ flags (low nibble, reserved).
    pub kind: u8,
    /// Maximum PSN range.
    pub mpr: u8,
    /// Signed SACK base offset.
    pub sack_psn_offset: I16,
    /// SACK bitmap.
    pub sack_bitmap: U64,
}

/// Congestion-control state of an ACK_CC (bytes 24–31).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CcState {
    /// `cc_type` 0: network-signal congestion control.
    Nscc {
        /// Receiver service time (raw 16 bits; no public source states the units).
        service_time: u16,
        /// RC: restore the congestion window.
        restore_cwnd: bool,
        /// Receiver congestion-window penalty (7 bits).
        rcv_cwnd_pend: u8,
        /// Bytes received (24 bits).
        rcvd_bytes: u32,
        /// Out-of-order count.
        ooo_count: u16,
    },
    /// `cc_type` 1: receiver credit congestion control.
    Credit {
        /// Credit granted (24 bits).
        credit: u32,
        /// Out-of-order count.
        ooo_count: u16,
    },
}

/// SACK information and CC state of an ACK_CC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct AckCc {
    /// Maximum PSN range the receiver tracks, in units of 128 PSNs (as in uet-ref-prov; a pre-1.0
    /// draft used 2^MPR).
    pub mpr: u8,
    /// `SACK_BASE - CACK_PSN`.
    pub sack_psn_offset: i16,
    /// Bit *i* set: PSN `SACK_BASE + i` was received.
    pub sack_bitmap: u64,
    /// NSCC or credit state.
    pub state: CcState,
}

/// SACK information and opaque extended CC state of an ACK_CCX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct AckCcx {
    /// CCX type (4 bits).
    pub ccx_type: u8,
    /// Maximum PSN range, units of 128 PSNs.
    pub mpr: u8,
    /// `SACK_BASE - CACK_PSN`.
    pub sack_psn_offset: i16,
    /// SACK bitmap.
    pub sack_bitmap: u64,
    /// CCX state (contents not public).
    pub state: [u8; 16],
}

/// Which ACK form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AckExtension {
    /// Plain ACK (type 7).
    None,
    /// ACK_CC (type 8).
    Cc(AckCc),
    /// ACK_CCX (type 9).
    Ccx(AckCcx),
}

/// An ACK, ACK_CC or ACK_CCX header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Ack {
    /// The SES response carried, or none.
    pub next_header: NextHeader,
    /// M, RETX, P.
    pub flags: AckFlags,
    /// Request to the initiator.
    pub request: AckRequest,
    /// `ACK_PSN - CACK_PSN`, or the probe's opaque value when [`AckFlags::P`] is set.
    pub ack_psn_offset: i16,
    /// Cumulative ACK PSN.
    pub cack_psn: u32,
    /// Source (target) PDC id.
    pub spdcid: u16,
    /// Destination (initiator) PDC id.
    pub dpdcid: u16,
    /// CC / CCX extension.
    pub ext: AckExtension,
}

impl Ack {
    /// Length of a plain ACK.
    pub const LEN: usize = 12;
    /// Length of an ACK_CC.
    pub const LEN_CC: usize = 32;
    /// Length of an ACK_CCX.
    pub const LEN_CCX: usize = 40;

    /// The packet type this header is sent as.
    pub const fn packet_type(&self) -> PacketType {
        match self.ext {
            AckExtension::None => PacketType::Ack,
            AckExtension::Cc(_) => PacketType::AckCc,
            AckExtension::Ccx(_) => PacketType::AckCcx,
        }
    }

    /// The PSN this ACK was triggered by: `CACK_PSN + ack_psn_offset` (meaningless for probes).
    pub const fn ack_psn(&self) -> u32 {
        self.cack_psn.wrapping_add(self.ack_psn_offset as i32 as u32)
    }

    /// `SACK_BASE = CACK_PSN + sack_psn_offset` and the bitmap, for the CC forms.
    pub const fn sack(&self) -> Option<(u32, u64)> {
        let (off, map) = match &self.ext {
            AckExtension::None => return None,
            AckExtension::Cc(c) => (c.sack_psn_offset, c.sack_bitmap),
            AckExtension::Ccx(c) => (c.sack_psn_offset, c.sack_bitmap),
        };
        Some((self.cack_psn.wrapping_add(off as i32 as u32), map))
    }

    /// Parses an ACK header from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<AckRaw>(bytes, "PDS ACK")?;
        let p = Prologue::from_word(raw.prologue.get());
        let kind = PacketType::try_from(p.packet_type)?;
        let next_header = NextHeader::try_from(p.next)?;
        if !next_header.is_response_or_none() {
            return Err(Error::Mismatch { field: "ACK next header (an SES request)" });
        }
        // Value 3 sets both request bits; the reference provider reads them one by one
        // (clear 0x02, close 0x04), so it is a close (which the CLEAR precedes anyway).
        let request = match (p.flags & REQ_MASK) >> 1 {
            0 => AckRequest::None,
            1 => AckRequest::Clear,
            _ => AckRequest::Close,
        };
        let (ext, rest) = match kind {
            PacketType::Ack => (AckExtension::None, rest),
            PacketType::AckCc => {
                let (e, rest) = view::<AckExtRaw>(rest, "PDS ACK_CC")?;
                let (state, rest) = view::<[u8; 8]>(rest, "PDS ACK_CC state")?;
                let [s0, s1, s2, s3, s4, s5, s6, s7] = *state;
                let ooo_count = u16::from_be_bytes([s6, s7]);
                let state = match e.kind >> 4 {
                    0 => CcState::Nscc {
                        service_time: u16::from_be_bytes([s0, s1]),
                        restore_cwnd: s2 & 0x80 != 0,
                        rcv_cwnd_pend: s2 & 0x7F,
                        rcvd_bytes: u24_from([s3, s4, s5]),
                        ooo_count,
                    },
                    1 => CcState::Credit { credit: u24_from([s0, s1, s2]), ooo_count },
                    t => return Err(Error::BadValue { field: "ACK_CC cc_type", value: u64::from(t) }),
                };
                let cc = AckCc {
                    mpr: e.mpr,
                    sack_psn_offset: e.sack_psn_offset.get(),
                    sack_bitmap: e.sack_bitmap.get(),
                    state,
                };
                (AckExtension::Cc(cc), rest)
            }
            PacketType::AckCcx => {
                let (e, rest) = view::<AckExtRaw>(rest, "PDS ACK_CCX")?;
                let (state, rest) = view::<[u8; 16]>(rest, "PDS ACK_CCX state")?;
                let ccx = AckCcx {
                    ccx_type: e.kind >> 4,
                    mpr: e.mpr,
                    sack_psn_offset: e.sack_psn_offset.get(),
                    sack_bitmap: e.sack_bitmap.get(),
                    state: *state,
                };
                (AckExtension::Ccx(ccx), rest)
            }
            _ => return Err(Error::Mismatch { field: "PDS type (not an ACK)" }),
        };
        let h = Ack {
            next_header,
            flags: AckFlags::from_bits_truncate(p.flags),
            request,
            ack_psn_offset: raw.ack_psn_offset.get(),
            cack_psn: raw.cack_psn.get(),
            spdcid: raw.spdcid.get(),
            dpdcid: raw.dpdcid.get(),
            ext,
        };
        Ok((h, rest))
    }

    /// The strict check: the first reserved bit set in the ACK at the front of `bytes`, by field
    /// name ([`Ack::parse`] ignores them).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, rest) = view::<AckRaw>(bytes, "PDS ACK")?;
        let p = Prologue::from_word(raw.prologue.get());
        check_flags(p.flags, RESERVED, "ACK flags reserved bits")?;
        if p.flags & REQ_MASK == REQ_MASK {
            return Err(Error::Reserved { field: "ACK request value 3" });
        }
        match PacketType::try_from(p.packet_type)? {
            PacketType::AckCc => {
                let (e, rest) = view::<AckExtRaw>(rest, "PDS ACK_CC")?;
                let (state, _) = view::<[u8; 8]>(rest, "PDS ACK_CC state")?;
                reserved_zero(u64::from(e.kind & 0x0F), "ACK_CC cc_flags")?;
                let [_, _, _, s3, s4, s5, _, _] = *state;
                if e.kind >> 4 == 1 {
                    reserved_zero(u64::from(u24_from([s3, s4, s5])), "ACK_CC credit state reserved")?;
                }
                Ok(())
            }
            PacketType::AckCcx => {
                let (e, _) = view::<AckExtRaw>(rest, "PDS ACK_CCX")?;
                reserved_zero(u64::from(e.kind & 0x0F), "ACK_CCX flags")
            }
            _ => Ok(()),
        }
    }

    /// Bytes [`Ack::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        match self.ext {
            AckExtension::None => Self::LEN,
            AckExtension::Cc(_) => Self::LEN_CC,
            AckExtension::Ccx(_) => Self::LEN_CCX,
        }
    }

    /// Writes the header to the front of `out`.
    #[inline(always)]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        if !self.next_header.is_response_or_none() {
            return Err(Error::Mismatch { field: "ACK next header (an SES request)" });
        }
        let len = self.buffer_len();
        if out.len() < len {
            return Err(Error::BufferTooShort { needed: len, got: out.len() });
        }
        let req = match self.request {
            AckRequest::None => 0,
            AckRequest::Clear => 1,
            AckRequest::Close => 2,
        };
        let flags = self.flags.intersection(AckFlags::all()).bits() | (req << 1);
        let prologue =
            Prologue { packet_type: self.packet_type().into(), next: self.next_header.into(), flags }.to_word();
        let raw = AckRaw {
            prologue: U16::new(prologue),
            ack_psn_offset: I16::new(self.ack_psn_offset),
            cack_psn: U32::new(self.cack_psn),
            spdcid: U16::new(self.spdcid),
            dpdcid: U16::new(self.dpdcid),
        };
        let mut n = write(&raw, out)?;
        let ext = |kind: u8, mpr, off, map| AckExtRaw {
            kind,
            mpr,
            sack_psn_offset: I16::new(off),
            sack_bitmap: U64::new(map),
        };
        match &self.ext {
            AckExtension::None => {}
            AckExtension::Cc(c) => {
                let (kind, state) = match c.state {
                    CcState::Nscc { service_time, restore_cwnd, rcv_cwnd_pend, rcvd_bytes, ooo_count } => {
                        if rcv_cwnd_pend > 0x7F {
                            return Err(Error::BadValue { field: "rcv_cwnd_pend", value: u64::from(rcv_cwnd_pend) });
                        }
                        let [a, b] = service_time.to_be_bytes();
                        let [c3, c4, c5] = u24_to(rcvd_bytes, "rcvd_bytes")?;
                        let [o0, o1] = ooo_count.to_be_bytes();
                        (0u8, [a, b, u8::from(restore_cwnd) << 7 | rcv_cwnd_pend, c3, c4, c5, o0, o1])
                    }
                    CcState::Credit { credit, ooo_count } => {
                        let [c0, c1, c2] = u24_to(credit, "credit")?;
                        let [o0, o1] = ooo_count.to_be_bytes();
                        (1u8, [c0, c1, c2, 0, 0, 0, o0, o1])
                    }
                };
                n += write(
                    &ext(kind << 4, c.mpr, c.sack_psn_offset, c.sack_bitmap),
                    out.get_mut(n..).unwrap_or_default(),
                )?;
                n += write(&state, out.get_mut(n..).unwrap_or_default())?;
            }
            AckExtension::Ccx(c) => {
                if c.ccx_type > 0xF {
                    return Err(Error::BadValue { field: "ccx_type", value: u64::from(c.ccx_type) });
                }
                n += write(
                    &ext(c.ccx_type << 4, c.mpr, c.sack_psn_offset, c.sack_bitmap),
                    out.get_mut(n..).unwrap_or_default(),
                )?;
                n += write(&c.state, out.get_mut(n..).unwrap_or_default())?;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The worked example: the target (PDC 19) acknowledges PSNs 4–8 of initiator PDC 7 with one
    /// cumulative ACK for PSN 8, and on the way out asks the initiator to close.
    #[test]
    fn worked_example_ack() {
        let b = [0x38, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x13, 0x00, 0x07];
        let (a, _) = Ack::parse(&b).unwrap();
        assert_eq!(a.cack_psn, 8);
        assert_eq!((a.spdcid, a.dpdcid), (19, 7));
        assert_eq!(a.request, AckRequest::Close);
        assert_eq!(a.ack_psn(), 8);
        assert_eq!(a.next_header, NextHeader::None);
        let mut out = [0u8; 12];
        a.emit(&mut out).unwrap();
        assert_eq!(out, b);
        // Undefined flag bits are not sent: the REQ field says only `request`.
        Ack { flags: AckFlags::from_bits_retain(0xFF), ..a }.emit(&mut out).unwrap();
        assert_eq!(Ack::parse(&out).unwrap().0.request, AckRequest::Close);
        assert_eq!(Ack::check_reserved(&out), Ok(()));
    }

    #[test]
    fn ack_cc_nscc_and_credit_golden() {
        // ACK_CC (8), NH RSP (4), flags M|RETX; offsets; SACK base = 100 + 2, bitmap bit 0 and 63.
        let mut b = [0u8; 32];
        b[..12].copy_from_slice(&[0x42, 0x30, 0xFF, 0xFF, 0, 0, 0, 100, 0, 19, 0, 7]);
        b[12..16].copy_from_slice(&[0x00, 0x08, 0x00, 0x02]);
        b[16..24].copy_from_slice(&0x8000_0000_0000_0001u64.to_be_bytes());
        b[24..32].copy_from_slice(&[0x12, 0x34, 0x85, 0x00, 0x10, 0x00, 0x00, 0x03]);
        let (a, _) = Ack::parse(&b).unwrap();
        assert_eq!(a.flags, AckFlags::M | AckFlags::RETX);
        assert_eq!(a.ack_psn(), 99);
        assert_eq!(a.sack(), Some((102, 0x8000_0000_0000_0001)));
        let AckExtension::Cc(cc) = a.ext else { panic!() };
        assert_eq!(cc.mpr, 8);
        assert_eq!(
            cc.state,
            CcState::Nscc {
                service_time: 0x1234,
                restore_cwnd: true,
                rcv_cwnd_pend: 5,
                rcvd_bytes: 0x1000,
                ooo_count: 3
            }
        );
        let mut out = [0u8; 32];
        a.emit(&mut out).unwrap();
        assert_eq!(out, b);
        // Credit state: cc_type 1; the 24 bits after the credit are reserved.
        b[12] = 0x10;
        b[27..30].copy_from_slice(&[0, 0, 0]);
        let (a, _) = Ack::parse(&b).unwrap();
        assert!(matches!(
            a.ext,
            AckExtension::Cc(AckCc { state: CcState::Credit { credit: 0x123485, ooo_count: 3 }, .. })
        ));
        // Its reserved bits, and cc_flags, are ignored and reported by the strict check.
        let mut x = b;
        x[12] = 0x1F;
        x[27] = 0;
        x[28] = 1;
        assert_eq!(Ack::parse(&x).unwrap().0, a);
        assert_eq!(Ack::check_reserved(&b), Ok(()));
        assert_eq!(Ack::check_reserved(&x), Err(Error::Reserved { field: "ACK_CC cc_flags" }));
        x[12] = 0x10;
        assert_eq!(Ack::check_reserved(&x), Err(Error::Reserved { field: "ACK_CC credit state reserved" }));
        let mut out = [0u8; 32];
        a.emit(&mut out).unwrap();
        assert_eq!(out, b);
        b[12] = 0x20;
        assert!(matches!(Ack::parse(&b), Err(Error::BadValue { field: "ACK_CC cc_type", .. })));
    }

    #[test]
    fn rejections() {
        let b = [0x38, 0x06, 0, 0, 0, 0, 0, 8, 0, 19, 0, 7];
        assert_eq!(Ack::parse(&b).unwrap().0.request, AckRequest::Close);
        assert_eq!(Ack::check_reserved(&b), Err(Error::Reserved { field: "ACK request value 3" }));
        // The reference provider's flag 0x40 is reserved here: ignored, reported strictly.
        let b = [0x38, 0x40, 0, 0, 0, 0, 0, 8, 0, 19, 0, 7];
        assert_eq!(Ack::parse(&b).unwrap().0.flags, AckFlags::empty());
        assert_eq!(Ack::check_reserved(&b), Err(Error::Reserved { field: "ACK flags reserved bits" }));
        let b = [0x39, 0x80, 0, 0, 0, 0, 0, 8, 0, 19, 0, 7];
        assert!(matches!(Ack::parse(&b), Err(Error::Mismatch { .. })));
        let b = [0x48, 0x00, 0, 0, 0, 0, 0, 8, 0, 19, 0, 7];
        assert!(matches!(Ack::parse(&b), Err(Error::Truncated { field: "PDS ACK_CCX", .. })));
    }

    pub(crate) fn arb_ack() -> impl Strategy<Value = Ack> {
        let state = prop_oneof![
            (any::<u16>(), any::<bool>(), 0u8..128, 0u32..(1 << 24), any::<u16>()).prop_map(|(s, r, p, b, o)| {
                CcState::Nscc { service_time: s, restore_cwnd: r, rcv_cwnd_pend: p, rcvd_bytes: b, ooo_count: o }
            }),
            (0u32..(1 << 24), any::<u16>()).prop_map(|(credit, ooo_count)| CcState::Credit { credit, ooo_count }),
        ];
        let ext = prop_oneof![
            Just(AckExtension::None),
            (any::<u8>(), any::<i16>(), any::<u64>(), state).prop_map(|(mpr, sack_psn_offset, sack_bitmap, state)| {
                AckExtension::Cc(AckCc { mpr, sack_psn_offset, sack_bitmap, state })
            }),
            (0u8..16, any::<u8>(), any::<i16>(), any::<u64>(), any::<[u8; 16]>()).prop_map(|(t, mpr, o, m, state)| {
                AckExtension::Ccx(AckCcx { ccx_type: t, mpr, sack_psn_offset: o, sack_bitmap: m, state })
            }),
        ];
        (
            prop_oneof![
                Just(NextHeader::None),
                Just(NextHeader::Rsp),
                Just(NextHeader::RspData),
                Just(NextHeader::RspDataSmall)
            ],
            0u8..8,
            prop_oneof![Just(AckRequest::None), Just(AckRequest::Clear), Just(AckRequest::Close)],
            any::<i16>(),
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            ext,
        )
            .prop_map(|(next_header, f, request, ack_psn_offset, cack_psn, spdcid, dpdcid, ext)| Ack {
                next_header,
                flags: AckFlags::from_bits_truncate(f << 3),
                request,
                ack_psn_offset,
                cack_psn,
                spdcid,
                dpdcid,
                ext,
            })
    }

    proptest! {
        #[test]
        fn round_trips(a in arb_ack()) {
            let mut out = [0u8; 40];
            let n = a.emit(&mut out).unwrap();
            prop_assert_eq!(n, a.buffer_len());
            prop_assert_eq!(Ack::parse(&out[..n]).unwrap(), (a, &[][..]));
        }
    }
}
