//! Project-defined encodings of the UE link-layer control messages.
//!
//! **Everything in this module is project-defined.** UE 1.0 §5.1/§5.2 carry LLR_INIT,
//! LLR_INIT_ECHO, LLR_ACK, LLR_NACK and CBFC CF_Update in 8-byte *control ordered sets* (CtlOS)
//! inserted by the PCS, and CBFC CC_Update in a 64-byte Ethernet packet, but no public source
//! gives their bit layouts (digest `shared/spec/uet.md` §6, open questions 45 and 46: "project-
//! defined layouts in `linklayer`"). The layouts below keep the sizes the specification states.
//! The engines in [`crate::cbfc`] and [`crate::llr`] never see these bytes, so a vendor encoding
//! can replace this module without touching them.
//!
//! ## CtlOS: 8 bytes
//!
//! | byte | field |
//! |---|---|
//! | 0 | message type: 0x01 LLR_INIT, 0x02 LLR_INIT_ECHO, 0x03 LLR_ACK, 0x04 LLR_NACK, 0x10 CF_UPDATE |
//! | 1 | CF_UPDATE: VC in bits 4..0, bits 7..5 reserved; LLR messages: reserved |
//! | 2..6 | value, big-endian: the LLR sequence number, or CF_UPDATE's 20-bit `R_CF` (upper 12 bits reserved) |
//! | 6 | reserved |
//! | 7 | CRC-8/AUTOSAR over bytes 0..7 |
//!
//! Reserved bits are emitted as zero and rejected on parse, so every accepted CtlOS re-emits
//! byte for byte. The check byte is ours too: a PCS protects ordered sets with FEC, but a
//! simulator that corrupts control messages must see them rejected, never misread.
//!
//! ## CC_Update: a 46-byte body, 64 bytes on the wire
//!
//! The body fills the payload of a minimum-size Ethernet frame: 14 bytes of Ethernet II header
//! (addresses and EtherType are the embedder's) + 46 + 4 bytes of FCS = 64 bytes. One message
//! carries `S_CC` of the 16 VCs of one *group* (group 0: VCs 0..16, group 1: VCs 16..32), so a port
//! with lossless VCs in both groups sends two per period.
//!
//! | bytes | field |
//! |---|---|
//! | 0 | message type 0x20 |
//! | 1 | VC group, 0 or 1 |
//! | 2..4 | present mask, big-endian: bit *i* (LSB = 0) set when VC `16*group + i` is reported |
//! | 4..44 | 16 × 20-bit `S_CC`, packed MSB first; entry *i* at bit `32 + 20 i`; zero when absent |
//! | 44..46 | reserved |

use crate::Error;
use crate::cbfc::{CfUpdate, CreditCounter, MAX_VCS, Vc};
use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Length of a control ordered set.
pub const CTLOS_LEN: usize = 8;

/// Length of a CC_Update body.
pub const CC_UPDATE_LEN: usize = 46;

/// Length of a CC_Update on the wire: Ethernet II header + body + FCS.
pub const CC_UPDATE_FRAME_LEN: usize = 14 + CC_UPDATE_LEN + 4;

/// VCs reported by one CC_Update.
pub const VC_GROUP_SIZE: usize = 16;

const CTLOS_CHECK: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_8_AUTOSAR);

/// CtlOS message types (project-defined codepoints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum CtlOsType {
    /// LLR_INIT: the LLR transmitter announces the first sequence number it will use.
    LlrInit = 0x01,
    /// LLR_INIT_ECHO: the LLR receiver confirms it.
    LlrInitEcho = 0x02,
    /// LLR_ACK: cumulative acknowledgement of the newest good frame.
    LlrAck = 0x03,
    /// LLR_NACK: go back to the frame after the newest good one.
    LlrNack = 0x04,
    /// CF_UPDATE: the CBFC receiver's credits-freed counter of one VC.
    CfUpdate = 0x10,
}

impl TryFrom<u8> for CtlOsType {
    type Error = Error;

    fn try_from(v: u8) -> Result<Self, Error> {
        Ok(match v {
            0x01 => CtlOsType::LlrInit,
            0x02 => CtlOsType::LlrInitEcho,
            0x03 => CtlOsType::LlrAck,
            0x04 => CtlOsType::LlrNack,
            0x10 => CtlOsType::CfUpdate,
            _ => return Err(Error::BadValue { field: "CtlOS type", value: u32::from(v) }),
        })
    }
}

impl From<CtlOsType> for u8 {
    fn from(t: CtlOsType) -> u8 {
        t as u8
    }
}

/// The raw 8-byte CtlOS layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CtlOsHeader {
    /// Message type (see [`CtlOsType`]).
    pub kind: u8,
    /// VC of a CF_UPDATE (bits 4..0); reserved otherwise.
    pub vc: u8,
    /// Sequence number or `R_CF`.
    pub value: U32,
    /// Reserved.
    pub reserved: u8,
    /// CRC-8/AUTOSAR over the first seven bytes.
    pub check: u8,
}

/// A control ordered set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CtlOs {
    /// LLR_INIT carrying the transmitter's next sequence number.
    LlrInit {
        /// Sequence number (in the link's LLR sequence space).
        seq: u32,
    },
    /// LLR_INIT_ECHO carrying the sequence number of the LLR_INIT it answers.
    LlrInitEcho {
        /// Sequence number.
        seq: u32,
    },
    /// LLR_ACK carrying the newest frame received in sequence with a good FCS.
    LlrAck {
        /// Sequence number.
        seq: u32,
    },
    /// LLR_NACK carrying the newest frame received in sequence with a good FCS.
    LlrNack {
        /// Sequence number.
        seq: u32,
    },
    /// CBFC CF_Update.
    CfUpdate(CfUpdate),
}

impl CtlOs {
    /// The message type.
    pub const fn kind(&self) -> CtlOsType {
        match self {
            CtlOs::LlrInit { .. } => CtlOsType::LlrInit,
            CtlOs::LlrInitEcho { .. } => CtlOsType::LlrInitEcho,
            CtlOs::LlrAck { .. } => CtlOsType::LlrAck,
            CtlOs::LlrNack { .. } => CtlOsType::LlrNack,
            CtlOs::CfUpdate(_) => CtlOsType::CfUpdate,
        }
    }

    /// Parses a CtlOS from the front of `bytes`, returning it and the rest.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = CtlOsHeader::ref_from_prefix(bytes)
            .map_err(|_| Error::Truncated { needed: CTLOS_LEN, got: bytes.len() })?;
        let covered = raw.as_bytes().get(..CTLOS_LEN - 1).unwrap_or(&[]);
        let check = CTLOS_CHECK.checksum(covered);
        if check != raw.check {
            return Err(Error::Crc { expected: u32::from(check), got: u32::from(raw.check) });
        }
        if raw.reserved != 0 {
            return Err(Error::Reserved { field: "CtlOS byte 6" });
        }
        let kind = CtlOsType::try_from(raw.kind)?;
        let value = raw.value.get();
        let msg = match kind {
            CtlOsType::CfUpdate => {
                if raw.vc & 0xE0 != 0 {
                    return Err(Error::Reserved { field: "CF_UPDATE VC bits 7..5" });
                }
                let freed = CreditCounter::new(value).ok_or(Error::Reserved { field: "CF_UPDATE R_CF bits 31..20" })?;
                CtlOs::CfUpdate(CfUpdate { vc: Vc::new(raw.vc)?, freed })
            }
            _ if raw.vc != 0 => return Err(Error::Reserved { field: "CtlOS byte 1" }),
            CtlOsType::LlrInit => CtlOs::LlrInit { seq: value },
            CtlOsType::LlrInitEcho => CtlOs::LlrInitEcho { seq: value },
            CtlOsType::LlrAck => CtlOs::LlrAck { seq: value },
            CtlOsType::LlrNack => CtlOs::LlrNack { seq: value },
        };
        Ok((msg, rest))
    }

    /// Bytes [`CtlOs::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        CTLOS_LEN
    }

    /// Writes the CtlOS to the front of `out`, returning the bytes written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let got = out.len();
        let (raw, _) = CtlOsHeader::mut_from_prefix(out).map_err(|_| Error::Truncated { needed: CTLOS_LEN, got })?;
        let (vc, value) = match *self {
            CtlOs::LlrInit { seq } | CtlOs::LlrInitEcho { seq } | CtlOs::LlrAck { seq } | CtlOs::LlrNack { seq } => {
                (0, seq)
            }
            CtlOs::CfUpdate(u) => (u.vc.index(), u.freed.value()),
        };
        raw.kind = self.kind().into();
        raw.vc = vc;
        raw.value.set(value);
        raw.reserved = 0;
        raw.check = CTLOS_CHECK.checksum(raw.as_bytes().get(..CTLOS_LEN - 1).unwrap_or(&[]));
        Ok(CTLOS_LEN)
    }
}

mod cc_field {
    use crate::bits::BitField;
    use core::ops::Range;

    pub const KIND: usize = 0;
    pub const GROUP: usize = 1;
    pub const PRESENT: Range<usize> = 2..4;
    pub const RESERVED: Range<usize> = 44..46;
    pub const COUNTERS_BIT: usize = 32;

    /// `S_CC` of entry `i` (0..16).
    pub const fn counter(i: usize) -> BitField {
        BitField::new(COUNTERS_BIT + 20 * i, 20)
    }
}

/// The CC_Update message type byte.
pub const CC_UPDATE_TYPE: u8 = 0x20;

/// A CBFC CC_Update: the sender's credits-consumed counters of one group of 16 VCs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CcUpdate {
    group: u8,
    counters: [Option<CreditCounter>; VC_GROUP_SIZE],
}

impl CcUpdate {
    /// An update for VC group `group` (0 or 1) with no VC reported yet.
    pub const fn new(group: u8) -> Result<Self, Error> {
        if group as usize >= MAX_VCS / VC_GROUP_SIZE {
            return Err(Error::BadValue { field: "CC_Update VC group", value: group as u32 });
        }
        Ok(CcUpdate { group, counters: [None; VC_GROUP_SIZE] })
    }

    /// The VC group: VCs `16*group .. 16*group + 16`.
    pub const fn group(&self) -> u8 {
        self.group
    }

    fn slot(&self, vc: Vc) -> Result<usize, Error> {
        let i = usize::from(vc.index());
        let base = usize::from(self.group) * VC_GROUP_SIZE;
        if i < base || i >= base + VC_GROUP_SIZE {
            return Err(Error::BadValue { field: "CC_Update VC outside group", value: u32::from(vc.index()) });
        }
        Ok(i - base)
    }

    /// Sets (or with `None` removes) `vc`'s `S_CC`; `vc` must be in the message's group.
    pub fn set(&mut self, vc: Vc, consumed: Option<CreditCounter>) -> Result<(), Error> {
        let i = self.slot(vc)?;
        if let Some(c) = self.counters.get_mut(i) {
            *c = consumed;
        }
        Ok(())
    }

    /// `vc`'s `S_CC`, if reported.
    pub fn get(&self, vc: Vc) -> Option<CreditCounter> {
        self.slot(vc).ok().and_then(|i| self.counters.get(i).copied().flatten())
    }

    /// The reported VCs and their `S_CC`, in VC order.
    pub fn entries(&self) -> impl Iterator<Item = (Vc, CreditCounter)> + '_ {
        let base = usize::from(self.group) * VC_GROUP_SIZE;
        self.counters.iter().enumerate().filter_map(move |(i, c)| Some((Vc::new((base + i) as u8).ok()?, (*c)?)))
    }

    /// Parses a CC_Update body from the front of `bytes`, returning it and the rest.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let body = bytes.get(..CC_UPDATE_LEN).ok_or(Error::Truncated { needed: CC_UPDATE_LEN, got: bytes.len() })?;
        let rest = bytes.get(CC_UPDATE_LEN..).unwrap_or(&[]);
        let kind = body.get(cc_field::KIND).copied().unwrap_or(0);
        if kind != CC_UPDATE_TYPE {
            return Err(Error::BadValue { field: "CC_Update type", value: u32::from(kind) });
        }
        let mut msg = CcUpdate::new(body.get(cc_field::GROUP).copied().unwrap_or(u8::MAX))?;
        let present = body.get(cc_field::PRESENT).and_then(|b| U16::ref_from_bytes(b).ok()).map_or(0, |v| v.get());
        if body.get(cc_field::RESERVED).is_none_or(|r| r.iter().any(|&b| b != 0)) {
            return Err(Error::Reserved { field: "CC_Update bytes 44..46" });
        }
        for (i, slot) in msg.counters.iter_mut().enumerate() {
            let raw = cc_field::counter(i).get(body)? as u32;
            if present & (1 << i) != 0 {
                *slot = CreditCounter::new(raw);
            } else if raw != 0 {
                return Err(Error::Reserved { field: "CC_Update absent counter" });
            }
        }
        Ok((msg, rest))
    }

    /// Bytes [`CcUpdate::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        CC_UPDATE_LEN
    }

    /// Writes the body to the front of `out`, returning the bytes written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let got = out.len();
        let body = out.get_mut(..CC_UPDATE_LEN).ok_or(Error::Truncated { needed: CC_UPDATE_LEN, got })?;
        body.fill(0);
        let mut present = 0u16;
        for (i, c) in self.counters.iter().enumerate() {
            if let Some(c) = c {
                present |= 1 << i;
                cc_field::counter(i).set(body, u64::from(c.value()))?;
            }
        }
        if let Some(b) = body.get_mut(cc_field::KIND) {
            *b = CC_UPDATE_TYPE;
        }
        if let Some(b) = body.get_mut(cc_field::GROUP) {
            *b = self.group;
        }
        if let Some(p) = body.get_mut(cc_field::PRESENT) {
            p.copy_from_slice(U16::new(present).as_bytes());
        }
        Ok(CC_UPDATE_LEN)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for CcUpdate {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut m = CcUpdate::new(u.int_in_range(0..=1)?).map_err(|_| arbitrary::Error::IncorrectFormat)?;
        for c in m.counters.iter_mut() {
            *c = Option::<CreditCounter>::arbitrary(u)?;
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ctlos_golden_vectors() {
        let mut b = [0u8; 8];
        CtlOs::LlrAck { seq: 0x1234 }.emit(&mut b).unwrap();
        assert_eq!(&b[..7], &[0x03, 0x00, 0x00, 0x00, 0x12, 0x34, 0x00]);
        assert_eq!(b[7], CTLOS_CHECK.checksum(&b[..7]));
        let cf = CtlOs::CfUpdate(CfUpdate { vc: Vc::new(31).unwrap(), freed: CreditCounter::new(0xFFFFF).unwrap() });
        cf.emit(&mut b).unwrap();
        assert_eq!(&b[..7], &[0x10, 0x1F, 0x00, 0x0F, 0xFF, 0xFF, 0x00]);
        assert_eq!(CtlOs::parse(&b).unwrap().0, cf);
    }

    fn resealed(mut b: [u8; 8]) -> [u8; 8] {
        b[7] = CTLOS_CHECK.checksum(&b[..7]);
        b
    }

    #[test]
    fn ctlos_rejects_bad_input() {
        let mut b = [0u8; 8];
        CtlOs::LlrNack { seq: 7 }.emit(&mut b).unwrap();
        assert_eq!(CtlOs::parse(&b[..7]).unwrap_err(), Error::Truncated { needed: 8, got: 7 });
        let mut flipped = b;
        flipped[5] ^= 0x10;
        assert!(matches!(CtlOs::parse(&flipped), Err(Error::Crc { .. })));
        let mut r = b;
        r[6] = 1;
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::Reserved { .. })));
        let mut r = b;
        r[1] = 1;
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::Reserved { .. })));
        let mut r = b;
        r[0] = 0x05;
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::BadValue { .. })));
        let mut r = [0x10, 0x20, 0, 0, 0, 1, 0, 0];
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::Reserved { .. })));
        r = [0x10, 0x01, 0, 0x10, 0, 0, 0, 0];
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::Reserved { .. })));
        assert!(CtlOs::LlrAck { seq: 1 }.emit(&mut [0u8; 7]).is_err());
    }

    #[test]
    fn cc_update_golden_vector() {
        let mut m = CcUpdate::new(1).unwrap();
        m.set(Vc::new(16).unwrap(), Some(CreditCounter::new(0xABCDE).unwrap())).unwrap();
        m.set(Vc::new(17).unwrap(), Some(CreditCounter::new(0x12345).unwrap())).unwrap();
        m.set(Vc::new(31).unwrap(), Some(CreditCounter::new(1).unwrap())).unwrap();
        assert!(m.set(Vc::new(3).unwrap(), None).is_err());
        let mut b = [0xEEu8; 50];
        assert_eq!(m.emit(&mut b).unwrap(), 46);
        assert_eq!(&b[..9], &[0x20, 0x01, 0x80, 0x03, 0xAB, 0xCD, 0xE1, 0x23, 0x45]);
        // Entry 15 sits in the last 20 bits before the reserved bytes: bits 332..352.
        assert_eq!(&b[41..46], &[0x00, 0x00, 0x01, 0x00, 0x00]);
        assert_eq!(b[46], 0xEE);
        let (p, rest) = CcUpdate::parse(&b).unwrap();
        assert_eq!(p, m);
        assert_eq!(rest.len(), 4);
        assert_eq!(CC_UPDATE_FRAME_LEN, 64);
        assert_eq!(cc_field::counter(15).end(), 352);
    }

    #[test]
    fn cc_update_rejects_bad_input() {
        let m = CcUpdate::new(0).unwrap();
        let mut b = [0u8; 46];
        m.emit(&mut b).unwrap();
        assert!(CcUpdate::parse(&b[..45]).is_err());
        let mut r = b;
        r[0] = 0x21;
        assert!(CcUpdate::parse(&r).is_err());
        let mut r = b;
        r[1] = 2;
        assert!(CcUpdate::parse(&r).is_err());
        let mut r = b;
        r[45] = 1;
        assert!(CcUpdate::parse(&r).is_err());
        let mut r = b;
        r[10] = 1; // a counter without its present bit
        assert!(CcUpdate::parse(&r).is_err());
        assert!(CcUpdate::new(2).is_err());
    }

    fn arb_ctlos() -> impl Strategy<Value = CtlOs> {
        prop_oneof![
            any::<u32>().prop_map(|seq| CtlOs::LlrInit { seq }),
            any::<u32>().prop_map(|seq| CtlOs::LlrInitEcho { seq }),
            any::<u32>().prop_map(|seq| CtlOs::LlrAck { seq }),
            any::<u32>().prop_map(|seq| CtlOs::LlrNack { seq }),
            (0u8..32, 0u32..(1 << 20)).prop_map(|(vc, f)| CtlOs::CfUpdate(CfUpdate {
                vc: Vc::new(vc).unwrap(),
                freed: CreditCounter::new(f).unwrap()
            })),
        ]
    }

    fn arb_cc_update() -> impl Strategy<Value = CcUpdate> {
        (0u8..2, proptest::collection::vec(proptest::option::of(0u32..(1 << 20)), 16)).prop_map(|(g, cs)| {
            let mut m = CcUpdate::new(g).unwrap();
            for (i, c) in cs.into_iter().enumerate() {
                let vc = Vc::new(g * 16 + i as u8).unwrap();
                m.set(vc, c.map(|c| CreditCounter::new(c).unwrap())).unwrap();
            }
            m
        })
    }

    proptest! {
        #[test]
        fn ctlos_round_trips(m in arb_ctlos()) {
            let mut b = [0u8; 8];
            prop_assert_eq!(m.emit(&mut b).unwrap(), m.buffer_len());
            prop_assert_eq!(CtlOs::parse(&b).unwrap(), (m, &[][..]));
        }

        #[test]
        fn cc_update_round_trips(m in arb_cc_update()) {
            let mut b = [0u8; CC_UPDATE_LEN];
            prop_assert_eq!(m.emit(&mut b).unwrap(), m.buffer_len());
            prop_assert_eq!(CcUpdate::parse(&b).unwrap().0, m);
        }

        /// Valid messages with a few bytes changed: whatever still parses re-emits byte for byte.
        /// (Random bytes almost never parse, so the inputs start from valid messages.)
        #[test]
        fn parsed_bytes_re_emit_identically(
            c in arb_ctlos(),
            u in arb_cc_update(),
            edits in proptest::collection::vec((0usize..CC_UPDATE_LEN, any::<u8>()), 0..3),
        ) {
            let mut b = [0u8; CC_UPDATE_LEN];
            u.emit(&mut b).unwrap();
            let mut b8 = [0u8; 8];
            c.emit(&mut b8).unwrap();
            for (at, x) in &edits {
                b[*at] ^= x;
                b8[at % 8] ^= x;
            }
            if let Ok((m, _)) = CtlOs::parse(&b8) {
                let mut out = [0u8; 8];
                m.emit(&mut out).unwrap();
                prop_assert_eq!(out, b8);
            }
            let b = &b[..];
            if let Ok((m, _)) = CtlOs::parse(b) {
                let mut out = [0u8; 8];
                m.emit(&mut out).unwrap();
                prop_assert_eq!(&out[..], &b[..8]);
            }
            if let Ok((m, _)) = CcUpdate::parse(b) {
                let mut out = [0u8; CC_UPDATE_LEN];
                m.emit(&mut out).unwrap();
                prop_assert_eq!(&out[..], &b[..CC_UPDATE_LEN]);
            }
        }
    }
}
