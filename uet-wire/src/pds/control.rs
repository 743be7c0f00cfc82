//! Control packets (type 11, 16 bytes), UE 1.0 §3.5.16; Wireshark, uet-ref-prov and XDP2 agree.
//!
//! | bytes | field |
//! |---|---|
//! | 0–1 | prologue: control type in the next-header slot; flags ISROD 0x20 (uet-ref-prov, XDP2; Wireshark: reserved), RETX 0x10, AR 0x08, SYN 0x04; 0x43 reserved |
//! | 2–3 | probe opaque (echoed by the probe's ACK) |
//! | 4–7 | PSN |
//! | 8–9 | SPDCID |
//! | 10–11 | DPDCID, or the SYN form ([`PdcDest`]) |
//! | 12–15 | payload, per control type |
//!
//! Receive policy: reserved bits (flags 0x43, the SYN form's 3 bits) are ignored and sent as
//! zero; [`Control::check_reserved`] reports them.

use super::{PacketType, PdcDest, Prologue, check_flags, defmt_bits, view, write};
use crate::error::Error;
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

bitflags! {
    /// Control-packet flags other than SYN (which [`PdcDest`] carries).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct ControlFlags: u8 {
        /// The PDC is ROD (0: RUD). uet-ref-prov and XDP2; Wireshark calls it reserved.
        const ISROD = 0x20;
        /// Retransmission.
        const RETX = 0x10;
        /// ACK requested.
        const AR = 0x08;
    }
}
defmt_bits!(ControlFlags);

const SYN: u8 = 0x04;
const RESERVED: u8 = 0x43;

/// Control types (4 bits in the next-header slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[repr(u8)]
pub enum ControlType {
    /// No operation.
    Noop = 0,
    /// Ask the target to (re)send the ACK for the PSN in the PSN field; payload: 0 or message id.
    AckReq = 1,
    /// Clear guaranteed-delivery state up to the payload's PSN.
    Clear = 2,
    /// Ask the initiator to clear up to the payload's PSN.
    ClearReq = 3,
    /// Close the PDC (initiator); consumes a PSN and is acknowledged.
    Close = 4,
    /// Ask the initiator to close (target).
    CloseReq = 5,
    /// Probe; payload: SACK bitmap base PSN; answered by an ACK with P set.
    Probe = 6,
    /// Credit grant.
    Credit = 7,
    /// Credit request.
    CreditReq = 8,
    /// Negotiation (uet-ref-prov and XDP2 only, neither defines the payload: kept opaque).
    Negotiation = 9,
}

impl TryFrom<u8> for ControlType {
    type Error = Error;

    fn try_from(v: u8) -> Result<Self, Error> {
        use ControlType as C;
        Ok(match v {
            0 => C::Noop,
            1 => C::AckReq,
            2 => C::Clear,
            3 => C::ClearReq,
            4 => C::Close,
            5 => C::CloseReq,
            6 => C::Probe,
            7 => C::Credit,
            8 => C::CreditReq,
            9 => C::Negotiation,
            _ => return Err(Error::BadValue { field: "control type", value: u64::from(v) }),
        })
    }
}

/// The raw 16-byte control-packet layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ControlRaw {
    /// Prologue.
    pub prologue: U16,
    /// Probe opaque.
    pub probe_opaque: U16,
    /// PSN.
    pub psn: U32,
    /// Source PDC id.
    pub spdcid: U16,
    /// DPDCID or SYN info.
    pub dest: U16,
    /// Payload.
    pub payload: U32,
}

/// A control packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Control {
    /// What the packet asks.
    pub ctl_type: ControlType,
    /// ISROD, RETX, AR.
    pub flags: ControlFlags,
    /// Echoed by the ACK answering a probe.
    pub probe_opaque: u16,
    /// PSN (the queried PSN for ACK_REQ; a new PSN for CLOSE and CLOSE_REQ).
    pub psn: u32,
    /// Source PDC id.
    pub spdcid: u16,
    /// Destination PDC id or SYN form.
    pub dest: PdcDest,
    /// Payload, per control type.
    pub payload: u32,
}

impl Control {
    /// Header length.
    pub const LEN: usize = 16;

    /// For a SYN packet, the start PSN it implies: `PSN - psn_offset`.
    pub const fn start_psn(&self) -> Option<u32> {
        self.dest.start_psn(self.psn)
    }

    /// Parses a control packet from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<ControlRaw>(bytes, "PDS control packet")?;
        let p = Prologue::from_word(raw.prologue.get());
        if PacketType::try_from(p.packet_type)? != PacketType::Control {
            return Err(Error::Mismatch { field: "PDS type (not a control packet)" });
        }
        let h = Control {
            ctl_type: ControlType::try_from(p.next)?,
            flags: ControlFlags::from_bits_truncate(p.flags),
            probe_opaque: raw.probe_opaque.get(),
            psn: raw.psn.get(),
            spdcid: raw.spdcid.get(),
            dest: PdcDest::decode(p.flags & SYN != 0, raw.dest.get()),
            payload: raw.payload.get(),
        };
        Ok((h, rest))
    }

    /// The strict check: the first reserved bit set in the control packet at the front of
    /// `bytes`, by field name ([`Control::parse`] ignores them).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<ControlRaw>(bytes, "PDS control packet")?;
        let p = Prologue::from_word(raw.prologue.get());
        check_flags(p.flags, RESERVED, "control flags reserved bits")?;
        PdcDest::check(p.flags & SYN != 0, raw.dest.get())
    }

    /// Bytes [`Control::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the packet to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let flags = self.flags.intersection(ControlFlags::all()).bits() | if self.dest.syn() { SYN } else { 0 };
        let prologue = Prologue { packet_type: PacketType::Control.into(), next: self.ctl_type as u8, flags }.to_word();
        let raw = ControlRaw {
            prologue: U16::new(prologue),
            probe_opaque: U16::new(self.probe_opaque),
            psn: U32::new(self.psn),
            spdcid: U16::new(self.spdcid),
            dest: U16::new(self.dest.to_wire()?),
            payload: U32::new(self.payload),
        };
        write(&raw, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The worked example's close: the initiator (PDC 7) sends CLOSE on a new PSN (12, after the
    /// read's 9–11) with AR set.
    #[test]
    fn worked_example_close() {
        let b = [0x5A, 0x08, 0, 0, 0, 0, 0, 12, 0, 7, 0, 19, 0, 0, 0, 0];
        let (c, _) = Control::parse(&b).unwrap();
        assert_eq!(c.ctl_type, ControlType::Close);
        assert_eq!(c.flags, ControlFlags::AR);
        assert_eq!((c.psn, c.spdcid, c.dest), (12, 7, PdcDest::Established { dpdcid: 19 }));
        let mut out = [0u8; 16];
        c.emit(&mut out).unwrap();
        assert_eq!(out, b);
        // Type 10 in the control-type slot is reserved.
        let mut x = b;
        x[0] = 0x5D;
        assert!(matches!(Control::parse(&x), Err(Error::BadValue { field: "control type", .. })));
        // Reserved flag bits: ignored, cleared on emit, reported by the strict check.
        let mut x = b;
        x[1] |= 0x43;
        assert_eq!(Control::parse(&x).unwrap().0, c);
        assert_eq!(Control::check_reserved(&x), Err(Error::Reserved { field: "control flags reserved bits" }));
        assert_eq!(Control::check_reserved(&b), Ok(()));
    }

    proptest! {
        #[test]
        fn round_trips(t in 0u8..10, f in 0u8..8, probe_opaque: u16, psn: u32, spdcid: u16, syn: bool, d in 0u16..4096, rsv: bool, payload: u32) {
            let dest = if syn { PdcDest::Syn { use_rsv_pdc: rsv, psn_offset: d } } else { PdcDest::Established { dpdcid: d } };
            let c = Control {
                ctl_type: ControlType::try_from(t).unwrap(),
                flags: ControlFlags::from_bits_truncate(f << 3),
                probe_opaque, psn, spdcid, dest, payload,
            };
            let mut out = [0u8; 16];
            prop_assert_eq!(c.emit(&mut out).unwrap(), 16);
            prop_assert_eq!(Control::parse(&out).unwrap(), (c, &[][..]));
        }
    }
}
