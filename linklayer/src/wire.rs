//! Wire encodings of the UE link-layer control messages: the control ordered set (CtlOS) that
//! carries LLR_INIT, LLR_INIT_ECHO, LLR_ACK, LLR_NACK and CBFC CF_Update, and the CC_Update frame.
//!
//! What the public record fixes, and this module follows (UE 1.0 §5.1 and §5.2 as the OCP SAI
//! LLR/CBFC proposals cite them; the Open Traffic Generator model
//! `ultra_ethernet/ultraethernet.yaml`, which follows UE 1.0.3):
//!
//! * a CtlOS is 8 bytes, a 64B/66B *ordered set* block (IEEE 802.3 Clause 49/82: block type
//!   0x4B, three data octets, a 4-bit O code) inserted by the PCS, with **O code 0x6** (OTG:
//!   "The UE specification uses the value 0x6");
//! * an LLR frame's sequence number travels in its Ethernet preamble, not in a CtlOS (the
//!   preamble is the MAC's: [`crate::llr::Outgoing::seq`] is the number to put there);
//! * sequence numbers and credit counters are 20 bits (UE 1.0 §5.2; SONiC LLR test plan);
//! * a CC_Update is a 64-byte Ethernet packet (UE 1.0 §5.2) sent to **01-80-C2-00-00-01** (or the
//!   peer's own address) carrying the **UEC Company ID FA-7A-CB**, one message (OTG "type1") for
//!   VCs 0–15 and another ("type2") for VCs 16–31, each with every VC's 20-bit `S_CC`.
//!
//! Everything else is **project-defined** (no public source gives the bit layouts; marked \[I\],
//! inferred, in the tables):
//!
//! ## CtlOS: 8 bytes
//!
//! | byte | bits | field |
//! |---|---|---|
//! | 0 | | block type 0x4B (802.3: ordered set, data in lanes 1–3) |
//! | 1–3 | 23..20 | \[I\] message type: 0x1 LLR_INIT, 0x2 LLR_INIT_ECHO, 0x3 LLR_ACK, 0x4 LLR_NACK, 0x5 CF_UPDATE |
//! | 1–3 | 19..0 | \[I\] value, big-endian: the LLR sequence number, or CF_UPDATE's `R_CF` |
//! | 4 | 3..0 | O code 0x6 (the place 802.3 gives O0) |
//! | 4 | 7..4 | reserved |
//! | 5 | 4..0 | \[I\] CF_UPDATE: the VC; LLR messages: reserved |
//! | 5 | 7..5 | reserved |
//! | 6 | | reserved |
//! | 7 | | \[I\] CRC-8/AUTOSAR over bytes 0..7 |
//!
//! **Bytes 5–7 are a project extension.** In an IEEE 802.3 0x4B block they are the control
//! characters C4–C7 (idles), which a standard PCS would not pass; a CtlOS of a real PCS has 24
//! data bits (D1–D3). The LLR messages fit them (type and a 20-bit number); a CF_Update would
//! fit them exactly with a 5-bit VC and a **15-bit** `R_CF`, which is what the OTG model's
//! results give for CF (`result/ultraethernet.yaml`: "15-bit cyclic"). This crate keeps the
//! 20-bit CF of the SAI text, the VC in byte 5 and a check byte in byte 7, for simulated and
//! software-carried links; a hardware encoding replaces this module (the engines never see
//! these bytes).
//!
//! The check byte is ours: a PCS protects ordered sets with FEC, but a simulator or a UDP carrier
//! that corrupts control messages must see them rejected, never misread. Reserved bits are sent
//! as zero and ignored on receive; [`CtlOs::check_reserved`] reports the first one set.
//!
//! ## CC_Update: a 60-byte frame plus FCS
//!
//! An IEEE 802.3 MAC Control frame, the form the reserved address 01-80-C2-00-00-01 takes (PAUSE
//! and PFC use it too):
//!
//! | bytes | field |
//! |---|---|
//! | 0..6 | destination: [`CC_UPDATE_DESTINATION`] (or the peer's individual address) |
//! | 6..12 | source: the sender's port address |
//! | 12..14 | \[I\] EtherType 0x8808 (MAC Control) |
//! | 14..16 | \[I\] opcode 0xFFFE (802.3 Annex 31A: organization-specific extension) |
//! | 16..19 | Company ID FA-7A-CB |
//! | 19 | \[I\] message type: 1 = VCs 0–15 (OTG "type1"), 2 = VCs 16–31 ("type2") |
//! | 20..60 | \[I\] 16 × 20-bit `S_CC`, packed most significant bit first, lowest VC first |
//!
//! With the 4-byte FCS that is exactly the 64 bytes UE 1.0 §5.2 gives: the 46-byte MAC Control
//! payload holds opcode, Company ID, type and sixteen counters with nothing left over.
//! [`CcUpdate`] is that payload; [`CcUpdateFrame`] adds the addresses and EtherType.
//!
//! The engines in [`crate::cbfc`] and [`crate::llr`] never see these bytes, so a vendor encoding
//! can replace this module without touching them.

use crate::Error;
use crate::cbfc::{CfUpdate, CreditCounter, MAX_VCS, Vc};
use zerocopy::byteorder::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Length of a control ordered set.
pub const CTLOS_LEN: usize = 8;

/// The 64B/66B block type of an ordered set (IEEE 802.3 Clause 49).
pub const ORDERED_SET_BLOCK_TYPE: u8 = 0x4B;

/// The O code of a UE CtlOS (UE 1.0 §5.1 via the OTG model).
pub const UE_CTLOS_O_CODE: u8 = 0x6;

/// Length of a CC_Update payload (the MAC Control payload after the EtherType).
pub const CC_UPDATE_LEN: usize = 46;

/// Length of a CC_Update frame as [`CcUpdateFrame::emit`] writes it: addresses, EtherType and
/// payload, without the FCS the MAC appends.
pub const CC_UPDATE_FRAME_LEN: usize = 14 + CC_UPDATE_LEN;

/// Length of a CC_Update on the wire with its FCS: the 64 bytes of UE 1.0 §5.2.
pub const CC_UPDATE_WIRE_LEN: usize = CC_UPDATE_FRAME_LEN + 4;

/// The destination of a CC_Update: the IEEE 802.3 MAC Control reserved address (OTG model).
pub const CC_UPDATE_DESTINATION: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x01];

/// The UEC Company ID a CC_Update carries (OTG model: "The UEC CID is FA7ACB").
pub const UEC_COMPANY_ID: [u8; 3] = [0xFA, 0x7A, 0xCB];

/// The MAC Control EtherType (IEEE 802.3 Clause 31); project-defined for CC_Update.
pub const MAC_CONTROL_ETHERTYPE: u16 = 0x8808;

/// The MAC Control opcode of an organization-specific extension (IEEE 802.3 Annex 31A);
/// project-defined for CC_Update.
pub const ORGANIZATION_SPECIFIC_OPCODE: u16 = 0xFFFE;

/// VCs reported by one CC_Update.
pub const VC_GROUP_SIZE: usize = 16;

const CTLOS_CHECK: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_8_AUTOSAR);

/// The CtlOS fields as `[hi:lo]` of the 8 bytes read as one big-endian 64-bit word (byte 0 is
/// bits 63..56, byte 7 bits 7..0), the table in the module docs written once.
mod ctl_field {
    use crate::bits::WordField;

    pub const BLOCK_TYPE: WordField = WordField::bits(63, 56);
    pub const KIND: WordField = WordField::bits(55, 52);
    pub const VALUE: WordField = WordField::bits(51, 32);
    pub const O_CODE: WordField = WordField::bits(27, 24);
    pub const VC: WordField = WordField::bits(20, 16);
    pub const CHECK: WordField = WordField::bits(7, 0);
    /// Reserved bits, by name.
    pub const RESERVED: [(&str, WordField); 3] = [
        ("CtlOS byte 4 bits 7..4", WordField::bits(31, 28)),
        ("CtlOS byte 5 bits 7..5", WordField::bits(23, 21)),
        ("CtlOS byte 6", WordField::bits(15, 8)),
    ];
}

/// The first 8 bytes of `bytes` as the CtlOS word, or [`Error::Truncated`].
fn ctlos_word(bytes: &[u8]) -> Result<u128, Error> {
    let block: [u8; CTLOS_LEN] = bytes
        .get(..CTLOS_LEN)
        .and_then(|b| b.try_into().ok())
        .ok_or(Error::Truncated { needed: CTLOS_LEN, got: bytes.len() })?;
    Ok(u128::from(u64::from_be_bytes(block)))
}

/// CtlOS message types (project-defined codepoints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum CtlOsType {
    /// LLR_INIT: the LLR transmitter announces the first sequence number it will use.
    LlrInit = 0x1,
    /// LLR_INIT_ECHO: the LLR receiver confirms it.
    LlrInitEcho = 0x2,
    /// LLR_ACK: cumulative acknowledgement of the newest good frame.
    LlrAck = 0x3,
    /// LLR_NACK: go back to the frame after the newest good one.
    LlrNack = 0x4,
    /// CF_UPDATE: the CBFC receiver's credits-freed counter of one VC.
    CfUpdate = 0x5,
}

impl TryFrom<u8> for CtlOsType {
    type Error = Error;

    fn try_from(v: u8) -> Result<Self, Error> {
        Ok(match v {
            0x1 => CtlOsType::LlrInit,
            0x2 => CtlOsType::LlrInitEcho,
            0x3 => CtlOsType::LlrAck,
            0x4 => CtlOsType::LlrNack,
            0x5 => CtlOsType::CfUpdate,
            _ => return Err(Error::BadValue { field: "CtlOS type", value: u32::from(v) }),
        })
    }
}

impl From<CtlOsType> for u8 {
    fn from(t: CtlOsType) -> u8 {
        t as u8
    }
}

/// A control ordered set.
///
/// LLR sequence numbers are `u32` here, as every number read from the wire is: the engine that
/// receives one checks it against its own sequence space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CtlOs {
    /// LLR_INIT carrying the transmitter's next sequence number.
    LlrInit {
        /// Sequence number (20 bits on this wire).
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

    /// Parses a CtlOS from the front of `bytes`, returning it and the rest. Reserved bits are
    /// ignored; a wrong check byte is [`Error::Crc`]; another block type or O code (an ordered
    /// set that is not a UE CtlOS, such as a link-fault sequence) is [`Error::BadValue`].
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let w = ctlos_word(bytes)?;
        let rest = bytes.get(CTLOS_LEN..).unwrap_or(&[]);
        let check = CTLOS_CHECK.checksum(bytes.get(..CTLOS_LEN - 1).unwrap_or(&[]));
        let carried = ctl_field::CHECK.get(w) as u8;
        if check != carried {
            return Err(Error::Crc { expected: u32::from(check), got: u32::from(carried) });
        }
        let block_type = ctl_field::BLOCK_TYPE.get(w) as u8;
        if block_type != ORDERED_SET_BLOCK_TYPE {
            return Err(Error::BadValue { field: "CtlOS block type", value: u32::from(block_type) });
        }
        let o_code = ctl_field::O_CODE.get(w) as u8;
        if o_code != UE_CTLOS_O_CODE {
            return Err(Error::BadValue { field: "CtlOS O code", value: u32::from(o_code) });
        }
        let value = ctl_field::VALUE.get(w) as u32;
        let msg = match CtlOsType::try_from(ctl_field::KIND.get(w) as u8)? {
            CtlOsType::CfUpdate => {
                let vc = Vc::new(ctl_field::VC.get(w) as u8)?;
                let freed = CreditCounter::new(value).ok_or(Error::BadValue { field: "R_CF", value })?;
                CtlOs::CfUpdate(CfUpdate { vc, freed })
            }
            CtlOsType::LlrInit => CtlOs::LlrInit { seq: value },
            CtlOsType::LlrInitEcho => CtlOs::LlrInitEcho { seq: value },
            CtlOsType::LlrAck => CtlOs::LlrAck { seq: value },
            CtlOsType::LlrNack => CtlOs::LlrNack { seq: value },
        };
        Ok((msg, rest))
    }

    /// The strict check beside [`CtlOs::parse`]: the first reserved field of a CtlOS that is set
    /// ([`Error::Reserved`] naming it), for conformance tests and decoders that warn.
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let w = ctlos_word(bytes)?;
        for (field, bits) in ctl_field::RESERVED {
            if bits.get(w) != 0 {
                return Err(Error::Reserved { field });
            }
        }
        let kind = ctl_field::KIND.get(w) as u8;
        if kind != u8::from(CtlOsType::CfUpdate) && ctl_field::VC.get(w) != 0 {
            return Err(Error::Reserved { field: "CtlOS byte 5 bits 4..0 (LLR message)" });
        }
        Ok(())
    }

    /// Bytes [`CtlOs::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        CTLOS_LEN
    }

    /// Writes the CtlOS to the front of `out`, returning the bytes written. A sequence number
    /// wider than the 20-bit field is [`Error::BadValue`].
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let got = out.len();
        let block = out.get_mut(..CTLOS_LEN).ok_or(Error::Truncated { needed: CTLOS_LEN, got })?;
        let (vc, value) = match *self {
            CtlOs::LlrInit { seq } | CtlOs::LlrInitEcho { seq } | CtlOs::LlrAck { seq } | CtlOs::LlrNack { seq } => {
                (0, seq)
            }
            CtlOs::CfUpdate(u) => (u.vc.index(), u.freed.value()),
        };
        if !ctl_field::VALUE.fits(u64::from(value)) {
            return Err(Error::BadValue { field: "LLR sequence number (20 bits)", value });
        }
        let w = ctl_field::BLOCK_TYPE.place(u64::from(ORDERED_SET_BLOCK_TYPE))
            | ctl_field::KIND.place(u64::from(u8::from(self.kind())))
            | ctl_field::VALUE.place(u64::from(value))
            | ctl_field::O_CODE.place(u64::from(UE_CTLOS_O_CODE))
            | ctl_field::VC.place(u64::from(vc));
        crate::bytes::copy_prefix(block, &(w as u64).to_be_bytes());
        let check = CTLOS_CHECK.checksum(block.get(..CTLOS_LEN - 1).unwrap_or(&[]));
        if let Some(last) = block.last_mut() {
            *last = check;
        }
        Ok(CTLOS_LEN)
    }
}

/// The first six bytes of a CC_Update payload.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct CcHeader {
    opcode: U16,
    company_id: [u8; 3],
    kind: u8,
}

/// `S_CC` of entry `i` (0..16), in network bit order over the 46-byte payload.
const fn cc_counter(i: usize) -> crate::bits::BitField {
    crate::bits::BitField::new(8 * core::mem::size_of::<CcHeader>() + 20 * i, 20)
}

/// The Ethernet header of a CC_Update frame.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct EthernetHeader {
    destination: [u8; 6],
    source: [u8; 6],
    ethertype: U16,
}

/// A CBFC CC_Update payload: the sender's credits-consumed counters of one group of 16 VCs.
///
/// Every VC of the group is carried; the receiver applies the entries of its lossless VCs and
/// ignores the others (a sender reports zero for a VC that is not lossless).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CcUpdate {
    group: u8,
    counters: [CreditCounter; VC_GROUP_SIZE],
}

impl CcUpdate {
    /// An update for VC group `group` (0: VCs 0–15, 1: VCs 16–31) with every counter zero.
    pub const fn new(group: u8) -> Result<Self, Error> {
        if group as usize >= MAX_VCS / VC_GROUP_SIZE {
            return Err(Error::BadValue { field: "CC_Update VC group", value: group as u32 });
        }
        Ok(CcUpdate { group, counters: [CreditCounter::FIRST; VC_GROUP_SIZE] })
    }

    /// The VC group: VCs `16*group .. 16*group + 16`.
    pub const fn group(&self) -> u8 {
        self.group
    }

    /// The VC group `vc` belongs to.
    pub const fn group_of(vc: Vc) -> u8 {
        vc.index() / VC_GROUP_SIZE as u8
    }

    fn slot(&self, vc: Vc) -> Option<usize> {
        let i = usize::from(vc.index());
        let base = usize::from(self.group) * VC_GROUP_SIZE;
        (base..base + VC_GROUP_SIZE).contains(&i).then(|| i - base)
    }

    /// Sets `vc`'s `S_CC`; `vc` must be in the message's group ([`Error::BadValue`] otherwise).
    pub fn set(&mut self, vc: Vc, consumed: CreditCounter) -> Result<(), Error> {
        let outside = Error::BadValue { field: "CC_Update VC outside group", value: u32::from(vc.index()) };
        let slot = self.slot(vc).and_then(|i| self.counters.get_mut(i)).ok_or(outside)?;
        *slot = consumed;
        Ok(())
    }

    /// `vc`'s `S_CC`, or `None` if `vc` is not in the message's group.
    pub fn get(&self, vc: Vc) -> Option<CreditCounter> {
        self.slot(vc).and_then(|i| self.counters.get(i).copied())
    }

    /// Every VC of the group with its `S_CC`, in VC order.
    pub fn entries(&self) -> impl Iterator<Item = (Vc, CreditCounter)> + '_ {
        let base = usize::from(self.group) * VC_GROUP_SIZE;
        self.counters.iter().enumerate().filter_map(move |(i, c)| Some((Vc::new((base + i) as u8).ok()?, *c)))
    }

    /// Parses a CC_Update payload (the 46 bytes after the EtherType) from the front of `bytes`,
    /// returning it and the rest. Another opcode, Company ID or message type is
    /// [`Error::BadValue`]: the frame is some other MAC Control message.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let body = bytes.get(..CC_UPDATE_LEN).ok_or(Error::Truncated { needed: CC_UPDATE_LEN, got: bytes.len() })?;
        let rest = bytes.get(CC_UPDATE_LEN..).unwrap_or(&[]);
        let (head, _) =
            CcHeader::ref_from_prefix(body).map_err(|_| Error::Truncated { needed: CC_UPDATE_LEN, got: 0 })?;
        let opcode = head.opcode.get();
        if opcode != ORGANIZATION_SPECIFIC_OPCODE {
            return Err(Error::BadValue { field: "MAC Control opcode", value: u32::from(opcode) });
        }
        if head.company_id != UEC_COMPANY_ID {
            let value = head.company_id.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
            return Err(Error::BadValue { field: "Company ID", value });
        }
        let mut msg = CcUpdate::new(head.kind.wrapping_sub(1))
            .map_err(|_| Error::BadValue { field: "CC_Update type", value: u32::from(head.kind) })?;
        for (i, slot) in msg.counters.iter_mut().enumerate() {
            let raw = cc_counter(i).get(body)? as u32;
            *slot = CreditCounter::new(raw).unwrap_or(CreditCounter::FIRST);
        }
        Ok((msg, rest))
    }

    /// Bytes [`CcUpdate::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        CC_UPDATE_LEN
    }

    /// Writes the payload to the front of `out`, returning the bytes written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let got = out.len();
        let body = out.get_mut(..CC_UPDATE_LEN).ok_or(Error::Truncated { needed: CC_UPDATE_LEN, got })?;
        body.fill(0);
        let (head, _) = CcHeader::mut_from_prefix(body).map_err(|_| Error::Truncated { needed: CC_UPDATE_LEN, got })?;
        head.opcode.set(ORGANIZATION_SPECIFIC_OPCODE);
        head.company_id = UEC_COMPANY_ID;
        head.kind = self.group + 1;
        for (i, c) in self.counters.iter().enumerate() {
            cc_counter(i).set(body, u64::from(c.value()))?;
        }
        Ok(CC_UPDATE_LEN)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for CcUpdate {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut m = CcUpdate::new(u.int_in_range(0..=1)?).map_err(|_| arbitrary::Error::IncorrectFormat)?;
        for c in m.counters.iter_mut() {
            *c = CreditCounter::arbitrary(u)?;
        }
        Ok(m)
    }
}

/// A CC_Update frame: Ethernet addresses, the MAC Control EtherType and the [`CcUpdate`] payload
/// (60 bytes; the MAC appends the FCS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CcUpdateFrame {
    /// Destination address: [`CC_UPDATE_DESTINATION`], or the peer's individual address.
    pub destination: [u8; 6],
    /// Source address: the sending port's.
    pub source: [u8; 6],
    /// The payload.
    pub update: CcUpdate,
}

impl CcUpdateFrame {
    /// A frame from `source` to [`CC_UPDATE_DESTINATION`].
    pub const fn new(source: [u8; 6], update: CcUpdate) -> Self {
        CcUpdateFrame { destination: CC_UPDATE_DESTINATION, source, update }
    }

    /// Parses a frame (from the destination address on; a trailing FCS is left in the rest).
    /// Any destination is accepted (UE allows the peer's individual address); another EtherType
    /// is [`Error::BadValue`].
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let truncated = Error::Truncated { needed: CC_UPDATE_FRAME_LEN, got: bytes.len() };
        let (header, payload) = EthernetHeader::ref_from_prefix(bytes).map_err(|_| truncated)?;
        let ethertype = header.ethertype.get();
        if ethertype != MAC_CONTROL_ETHERTYPE {
            return Err(Error::BadValue { field: "EtherType", value: u32::from(ethertype) });
        }
        let (update, rest) =
            CcUpdate::parse(payload).map_err(|e| if let Error::Truncated { .. } = e { truncated } else { e })?;
        Ok((CcUpdateFrame { destination: header.destination, source: header.source, update }, rest))
    }

    /// Bytes [`CcUpdateFrame::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        CC_UPDATE_FRAME_LEN
    }

    /// Writes the frame (without FCS) to the front of `out`, returning the bytes written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let got = out.len();
        let truncated = Error::Truncated { needed: CC_UPDATE_FRAME_LEN, got };
        let frame = out.get_mut(..CC_UPDATE_FRAME_LEN).ok_or(truncated)?;
        let (header, payload) = EthernetHeader::mut_from_prefix(frame).map_err(|_| truncated)?;
        header.destination = self.destination;
        header.source = self.source;
        header.ethertype.set(MAC_CONTROL_ETHERTYPE);
        self.update.emit(payload)?;
        Ok(CC_UPDATE_FRAME_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn resealed(mut b: [u8; 8]) -> [u8; 8] {
        b[7] = CTLOS_CHECK.checksum(&b[..7]);
        b
    }

    #[test]
    fn ctlos_golden_vectors() {
        let mut b = [0u8; 8];
        CtlOs::LlrAck { seq: 0xF1234 }.emit(&mut b).unwrap();
        assert_eq!(&b[..7], &[0x4B, 0x3F, 0x12, 0x34, 0x06, 0x00, 0x00]);
        assert_eq!(b[7], CTLOS_CHECK.checksum(&b[..7]));
        let cf = CtlOs::CfUpdate(CfUpdate { vc: Vc::new(31).unwrap(), freed: CreditCounter::new(0xABCDE).unwrap() });
        cf.emit(&mut b).unwrap();
        assert_eq!(&b[..7], &[0x4B, 0x5A, 0xBC, 0xDE, 0x06, 0x1F, 0x00]);
        assert_eq!(CtlOs::parse(&b).unwrap().0, cf);
        // The O code sits where IEEE 802.3 puts O0, the low nibble of byte 4.
        assert_eq!(b[4] & 0x0F, UE_CTLOS_O_CODE);
    }

    #[test]
    fn ctlos_reserved_bits_are_ignored_and_reported_by_the_strict_check() {
        let mut b = [0u8; 8];
        let ack = CtlOs::LlrAck { seq: 7 };
        ack.emit(&mut b).unwrap();
        assert_eq!(CtlOs::check_reserved(&b), Ok(()));
        for (byte, mask, field) in [
            (4, 0xF0, "CtlOS byte 4 bits 7..4"),
            (5, 0xE0, "CtlOS byte 5 bits 7..5"),
            (6, 0xFF, "CtlOS byte 6"),
            (5, 0x01, "CtlOS byte 5 bits 4..0 (LLR message)"),
        ] {
            let mut r = b;
            r[byte] |= mask;
            let r = resealed(r);
            assert_eq!(CtlOs::parse(&r).unwrap().0, ack, "{field}");
            assert_eq!(CtlOs::check_reserved(&r), Err(Error::Reserved { field }));
        }
        // A CF_UPDATE's VC field is not reserved.
        let mut c = [0u8; 8];
        CtlOs::CfUpdate(CfUpdate { vc: Vc::new(3).unwrap(), freed: CreditCounter::FIRST }).emit(&mut c).unwrap();
        assert_eq!(CtlOs::check_reserved(&c), Ok(()));
    }

    #[test]
    fn ctlos_rejects_what_is_not_a_ue_ctlos() {
        let mut b = [0u8; 8];
        CtlOs::LlrNack { seq: 7 }.emit(&mut b).unwrap();
        assert_eq!(CtlOs::parse(&b[..7]).unwrap_err(), Error::Truncated { needed: 8, got: 7 });
        let mut flipped = b;
        flipped[3] ^= 0x10;
        assert!(matches!(CtlOs::parse(&flipped), Err(Error::Crc { .. })));
        let mut r = b;
        r[0] = 0x2D; // another 64B/66B block type
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::BadValue { field: "CtlOS block type", .. })));
        let mut r = b;
        r[4] = 0x00; // O code 0x0: a link-fault sequence ordered set
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::BadValue { field: "CtlOS O code", .. })));
        let mut r = b;
        r[1] = 0x60 | (r[1] & 0x0F);
        assert!(matches!(CtlOs::parse(&resealed(r)), Err(Error::BadValue { field: "CtlOS type", .. })));
        assert!(CtlOs::LlrAck { seq: 1 }.emit(&mut [0u8; 7]).is_err());
        assert!(matches!(CtlOs::LlrInit { seq: 1 << 20 }.emit(&mut b), Err(Error::BadValue { .. })));
    }

    fn sample_update() -> CcUpdate {
        let mut m = CcUpdate::new(1).unwrap();
        m.set(Vc::new(16).unwrap(), CreditCounter::new(0xABCDE).unwrap()).unwrap();
        m.set(Vc::new(17).unwrap(), CreditCounter::new(0x12345).unwrap()).unwrap();
        m.set(Vc::new(31).unwrap(), CreditCounter::new(1).unwrap()).unwrap();
        m
    }

    #[test]
    fn cc_update_golden_vector() {
        let mut m = sample_update();
        assert!(m.set(Vc::new(3).unwrap(), CreditCounter::FIRST).is_err());
        assert_eq!(m.get(Vc::new(3).unwrap()), None);
        let frame = CcUpdateFrame::new([2, 0, 0, 0, 0, 9], m);
        let mut b = [0xEEu8; 64];
        assert_eq!(frame.emit(&mut b).unwrap(), 60);
        assert_eq!(&b[..14], &[0x01, 0x80, 0xC2, 0, 0, 0x01, 2, 0, 0, 0, 0, 9, 0x88, 0x08]);
        assert_eq!(&b[14..20], &[0xFF, 0xFE, 0xFA, 0x7A, 0xCB, 0x02]);
        assert_eq!(&b[20..25], &[0xAB, 0xCD, 0xE1, 0x23, 0x45]);
        // Entry 15 fills the payload's last 20 bits.
        assert_eq!(&b[57..60], &[0x00, 0x00, 0x01]);
        assert_eq!(b[60], 0xEE);
        let (p, rest) = CcUpdateFrame::parse(&b).unwrap();
        assert_eq!(p, frame);
        assert_eq!(rest.len(), 4);
        assert_eq!(CC_UPDATE_WIRE_LEN, 64);
        assert_eq!(cc_counter(15).end(), 8 * CC_UPDATE_LEN);
        assert_eq!(p.update.entries().count(), 16);
        m.set(Vc::new(31).unwrap(), CreditCounter::FIRST).unwrap();
        assert_eq!(m.get(Vc::new(31).unwrap()), Some(CreditCounter::FIRST));
    }

    #[test]
    fn cc_update_rejects_other_mac_control_frames() {
        let mut b = [0u8; 60];
        CcUpdateFrame::new([0; 6], CcUpdate::new(0).unwrap()).emit(&mut b).unwrap();
        assert!(CcUpdateFrame::parse(&b).is_ok());
        assert_eq!(CcUpdateFrame::parse(&b[..59]).unwrap_err(), Error::Truncated { needed: 60, got: 59 });
        assert_eq!(CcUpdateFrame::parse(&b[..10]).unwrap_err(), Error::Truncated { needed: 60, got: 10 });
        for (at, value, field) in [
            (13, 0x00, "EtherType"),
            (15, 0x01, "MAC Control opcode"), // PAUSE
            (16, 0xFB, "Company ID"),
            (19, 0x03, "CC_Update type"),
            (19, 0x00, "CC_Update type"),
        ] {
            let mut r = b;
            r[at] = value;
            assert!(matches!(CcUpdateFrame::parse(&r), Err(Error::BadValue { field: f, .. }) if f == field), "{field}");
        }
        // The peer's individual address is as good as the reserved one.
        let mut r = b;
        r[..6].copy_from_slice(&[2, 1, 2, 3, 4, 5]);
        assert_eq!(CcUpdateFrame::parse(&r).unwrap().0.destination, [2, 1, 2, 3, 4, 5]);
        assert!(CcUpdate::new(2).is_err());
        assert_eq!(CcUpdate::group_of(Vc::new(15).unwrap()), 0);
        assert_eq!(CcUpdate::group_of(Vc::new(16).unwrap()), 1);
    }

    fn arb_ctlos() -> impl Strategy<Value = CtlOs> {
        let seq = 0u32..(1 << 20);
        prop_oneof![
            seq.clone().prop_map(|seq| CtlOs::LlrInit { seq }),
            seq.clone().prop_map(|seq| CtlOs::LlrInitEcho { seq }),
            seq.clone().prop_map(|seq| CtlOs::LlrAck { seq }),
            seq.clone().prop_map(|seq| CtlOs::LlrNack { seq }),
            (0u8..32, seq).prop_map(|(vc, f)| CtlOs::CfUpdate(CfUpdate {
                vc: Vc::new(vc).unwrap(),
                freed: CreditCounter::new(f).unwrap()
            })),
        ]
    }

    fn arb_cc_update() -> impl Strategy<Value = CcUpdate> {
        (0u8..2, proptest::collection::vec(0u32..(1 << 20), 16)).prop_map(|(g, cs)| {
            let mut m = CcUpdate::new(g).unwrap();
            for (i, c) in cs.into_iter().enumerate() {
                m.set(Vc::new(g * 16 + i as u8).unwrap(), CreditCounter::new(c).unwrap()).unwrap();
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
            prop_assert_eq!(CtlOs::check_reserved(&b), Ok(()));
        }

        #[test]
        fn cc_update_round_trips(m in arb_cc_update(), source in any::<[u8; 6]>()) {
            let f = CcUpdateFrame::new(source, m);
            let mut b = [0u8; CC_UPDATE_FRAME_LEN];
            prop_assert_eq!(f.emit(&mut b).unwrap(), f.buffer_len());
            prop_assert_eq!(CcUpdateFrame::parse(&b).unwrap(), (f, &[][..]));
            prop_assert_eq!(CcUpdate::parse(&b[14..]).unwrap().0, m);
        }

        /// Valid messages with a few bits changed: whatever still parses re-emits the same bytes
        /// with its reserved bits cleared. (Random bytes almost never parse, so the inputs start
        /// from valid messages; the CtlOS is resealed so the edits reach the field checks.)
        #[test]
        fn parsed_bytes_re_emit_with_reserved_bits_cleared(
            c in arb_ctlos(),
            u in arb_cc_update(),
            edits in proptest::collection::vec((0usize..CC_UPDATE_FRAME_LEN, any::<u8>()), 1..3),
            reseal in any::<bool>(),
        ) {
            let mut b = [0u8; CC_UPDATE_FRAME_LEN];
            CcUpdateFrame::new([0; 6], u).emit(&mut b).unwrap();
            let mut b8 = [0u8; 8];
            c.emit(&mut b8).unwrap();
            for (at, x) in &edits {
                b[*at] ^= x;
                b8[at % 7] ^= x;
            }
            if reseal {
                b8 = resealed(b8);
            }
            if let Ok((m, _)) = CtlOs::parse(&b8) {
                let mut out = [0u8; 8];
                m.emit(&mut out).unwrap();
                let mut cleared = b8;
                cleared[4] &= 0x0F;
                cleared[5] &= if m.kind() == CtlOsType::CfUpdate { 0x1F } else { 0 };
                cleared[6] = 0;
                prop_assert_eq!(&out[..7], &cleared[..7]);
                prop_assert_eq!(CtlOs::check_reserved(&b8).is_ok(), cleared == b8);
            }
            if let Ok((m, _)) = CcUpdateFrame::parse(&b) {
                let mut out = [0u8; CC_UPDATE_FRAME_LEN];
                m.emit(&mut out).unwrap();
                prop_assert_eq!(&out[..], &b[..]);
            }
        }
    }
}
