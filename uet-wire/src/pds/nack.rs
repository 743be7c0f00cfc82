//! NACK (type 10, 16 bytes) and NACK_CCX (type 12, 32 bytes), UE 1.0 §3.5.12.7 and Table 3-58 (NACK
//! codes).
//!
//! | bytes | field |
//! |---|---|
//! | 0–1 | prologue: NH (none, or the SES response behind it); flags M 0x20, RETX 0x10, NT 0x08 (0 = RUD/ROD, 1 = RUDI); 0x47 reserved |
//! | 2 | NACK code ([`NackCode`]) |
//! | 3 | vendor code |
//! | 4–7 | NACK PSN (NT = 0) or RUDI packet id (NT = 1) |
//! | 8–9 | SPDCID (zero when NT = 1) |
//! | 10–11 | DPDCID (zero when NT = 1) |
//! | 12–15 | payload, meaning per code (Wireshark: max received PSN + 1; NEW_START_PSN: the start PSN; CLOSING_IN_ERR: outstanding count, uet-ref-prov) |
//! | 16–31 | NACK_CCX: `nccx_type` (high nibble of byte 16) ‖ state (opaque, no source defines it; 32 bytes per Wireshark and uet-ref-prov, XDP2 has 24) |
//!
//! Receive policy: reserved flag bits are ignored ([`Nack::check_reserved`] reports them). A NACK
//! may name a next header: the Wireshark dissector (`epan/dissectors/packet-uet.c`) decodes the
//! SES response behind a NACK by its NH field like any other PDS header's, so a NACK whose NH
//! names an SES response carries one; a request NH is refused. A RUDI NACK's PDC-id bytes are
//! zero as the reference provider (`ultraethernet/uet-ref-prov`) sends them; other values are
//! accepted and kept.

use super::{NextHeader, PacketType, Prologue, check_flags, defmt_bits, read, view, write};
use crate::error::Error;
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

bitflags! {
    /// NACK flags other than NT (which [`NackTarget`] carries).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct NackFlags: u8 {
        /// The NACKed packet arrived ECN-marked.
        const M = 0x20;
        /// The NACKed packet was a retransmission.
        const RETX = 0x10;
    }
}
defmt_bits!(NackFlags);

const NT: u8 = 0x08;
const RESERVED: u8 = 0x47;

/// What the initiator does on a NACK code: the uet-ref-prov initiator-action column (UE 1.0 Table
/// 3-58: its per-code NORMAL / PDC_ERR / PDC_FATAL classes are not public, so this
/// *project-defined* table follows the official reference implementation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NackClass {
    /// Retransmit the packet.
    Retransmit,
    /// Close the PDC (in error).
    Close,
    /// Re-establish with the new start PSN in the payload.
    NewStartPsn,
    /// Ignore the NACK (recovery proceeds by timeout).
    Drop,
}

macro_rules! nack_codes {
    ($( $(#[$doc:meta])* $name:ident = $value:literal => $class:ident, )*) => {
        /// NACK codes (UE 1.0 Table 3-58; Wireshark, uet-ref-prov, XDP2 and the Linux ultraeth
        /// driver RFC agree).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[repr(u8)]
        pub enum NackCode {
            $( $(#[$doc])* $name = $value, )*
        }

        impl NackCode {
            /// What the initiator does on this code.
            pub const fn class(self) -> NackClass {
                match self { $( NackCode::$name => NackClass::$class, )* }
            }
        }

        impl TryFrom<u8> for NackCode {
            type Error = Error;

            fn try_from(v: u8) -> Result<Self, Error> {
                match v {
                    $( $value => Ok(NackCode::$name), )*
                    _ => Err(Error::BadValue { field: "NACK code", value: u64::from(v) }),
                }
            }
        }
    };
}

nack_codes! {
    /// The packet was trimmed in the network.
    Trimmed = 0x01 => Retransmit,
    /// The packet was trimmed at the last-hop switch.
    TrimmedLastHop = 0x02 => Retransmit,
    /// An ACK carrying read-response data was trimmed (UE 1.0–1.0.2). UE 1.0.3 withdrew the code:
    /// a trimmed ACK draws no NACK, and 0x03 is reserved (the 1.0.3 change list as quoted by
    /// `BulkyCI/astra-sim` `docs/agents/uec-1.0.3-reconciliation.md`; the reference provider,
    /// Wireshark and XDP2 still define it). This crate never sends it and still accepts it from
    /// older peers (retransmit).
    TrimmedAck = 0x03 => Retransmit,
    /// No PDC resource at the target.
    NoPdcAvail = 0x04 => Retransmit,
    /// No congestion-control context resource.
    NoCccAvail = 0x05 => Retransmit,
    /// No PSN-tracking (bitmap) resource.
    NoBitmap = 0x06 => Retransmit,
    /// No packet buffer.
    NoPktBuffer = 0x07 => Retransmit,
    /// No guaranteed-delivery response resource.
    NoGtdDelAvail = 0x08 => Retransmit,
    /// No SES message-tracking state.
    NoSesMsgAvail = 0x09 => Retransmit,
    /// A general resource is unavailable.
    NoResource = 0x0A => Retransmit,
    /// The PSN is outside the tracking window.
    PsnOorWindow = 0x0B => Retransmit,
    /// A PSN arrived out of order on a ROD PDC.
    RodOoo = 0x0D => Retransmit,
    /// The DPDCID is unknown and SYN is not set.
    InvDpdcid = 0x0E => Close,
    /// A non-SYN packet does not match the PDC's state.
    PdcHdrMismatch = 0x0F => Close,
    /// The target PDC is closed or closing.
    Closing = 0x10 => Close,
    /// The target timed out while closing.
    ClosingInErr = 0x11 => Close,
    /// An ACK request named a PSN not received.
    PktNotRcvd = 0x12 => Retransmit,
    /// A guaranteed-delivery response was lost and not cleared.
    GtdDelRespUnavail = 0x13 => Close,
    /// An ACK request named a PSN whose ACK carries read-response data.
    AckWithData = 0x14 => Retransmit,
    /// A SYN with a PSN outside the expected SYN range.
    InvalidSyn = 0x15 => Close,
    /// Delivery mode (RUD/ROD) mismatch.
    PdcModeMismatch = 0x16 => Close,
    /// Resend everything with the start PSN in the payload.
    NewStartPsn = 0x17 => NewStartPsn,
    /// Received; the SES response is not ready yet.
    RcvdSesProcg = 0x18 => Drop,
    /// Unexpected or unsupported event.
    UnexpEvent = 0x19 => Close,
    /// The destination infers loss and asks for retransmission.
    RcvrInferLoss = 0x1A => Retransmit,
    /// Experimental, normal.
    ExpNackNormal = 0xFD => Retransmit,
    /// Experimental, error.
    ExpNackErr = 0xFE => Retransmit,
    /// Experimental, fatal.
    ExpNackFatal = 0xFF => Close,
}

impl From<NackCode> for u8 {
    fn from(c: NackCode) -> u8 {
        c as u8
    }
}

/// What the NACK refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum NackTarget {
    /// NT = 0: a packet of a RUD/ROD PDC.
    Pdc {
        /// The NACKed PSN.
        psn: u32,
        /// Source (target) PDC id.
        spdcid: u16,
        /// Destination (initiator) PDC id.
        dpdcid: u16,
    },
    /// NT = 1: a RUDI packet (no PDC).
    Rudi {
        /// The NACKed packet id.
        pkt_id: u32,
        /// Bytes 8–11, where a PDC NACK has its PDC ids: zero as sent, kept as received.
        pdc_ids: u32,
    },
}

/// The extension of a NACK_CCX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct NackCcx {
    /// NCCX type (4 bits).
    pub nccx_type: u8,
    /// The 124 state bits after the type nibble, as 16 bytes whose first high nibble is zero.
    pub state: [u8; 16],
}

/// The raw 16-byte NACK layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct NackRaw {
    /// Prologue.
    pub prologue: U16,
    /// NACK code.
    pub code: u8,
    /// Vendor code.
    pub vendor_code: u8,
    /// PSN or packet id.
    pub psn: U32,
    /// Source PDC id.
    pub spdcid: U16,
    /// Destination PDC id.
    pub dpdcid: U16,
    /// Code-specific payload.
    pub payload: U32,
}

/// A NACK or NACK_CCX header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Nack {
    /// The SES header behind the NACK: [`NextHeader::None`], or a response.
    pub next_header: NextHeader,
    /// M and RETX.
    pub flags: NackFlags,
    /// Why.
    pub code: NackCode,
    /// Vendor-specific code.
    pub vendor_code: u8,
    /// The packet refused.
    pub target: NackTarget,
    /// Code-specific payload: the new start PSN for [`NackCode::NewStartPsn`], the number of
    /// outstanding packets for [`NackCode::ClosingInErr`] (uet-ref-prov), otherwise "max received
    /// PSN + 1" (Wireshark).
    pub payload: u32,
    /// `Some` makes this a NACK_CCX.
    pub ccx: Option<NackCcx>,
}

impl Nack {
    /// Length of a NACK.
    pub const LEN: usize = 16;
    /// Length of a NACK_CCX.
    pub const LEN_CCX: usize = 32;

    /// The packet type this header is sent as.
    pub const fn packet_type(&self) -> PacketType {
        if self.ccx.is_some() { PacketType::NackCcx } else { PacketType::Nack }
    }

    /// A plain NACK of request `psn` on a PDC: no flags, no vendor code, payload 0. `spdcid` is
    /// the NACKing side's PDC id (0 when it has none), `dpdcid` the requester's.
    pub const fn for_pdc(code: NackCode, psn: u32, spdcid: u16, dpdcid: u16) -> Self {
        Nack {
            next_header: NextHeader::None,
            flags: NackFlags::empty(),
            code,
            vendor_code: 0,
            target: NackTarget::Pdc { psn, spdcid, dpdcid },
            payload: 0,
            ccx: None,
        }
    }

    /// Parses a NACK header from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<NackRaw>(bytes, "PDS NACK")?;
        let p = Prologue::from_word(raw.prologue.get());
        let is_ccx = match PacketType::try_from(p.packet_type)? {
            PacketType::Nack => false,
            PacketType::NackCcx => true,
            _ => return Err(Error::Mismatch { field: "PDS type (not a NACK)" }),
        };
        let next_header = NextHeader::try_from(p.next)?;
        if !next_header.is_response_or_none() {
            return Err(Error::Mismatch { field: "NACK next header (an SES request)" });
        }
        let target = if p.flags & NT != 0 {
            let pdc_ids = u32::from(raw.spdcid.get()) << 16 | u32::from(raw.dpdcid.get());
            NackTarget::Rudi { pkt_id: raw.psn.get(), pdc_ids }
        } else {
            NackTarget::Pdc { psn: raw.psn.get(), spdcid: raw.spdcid.get(), dpdcid: raw.dpdcid.get() }
        };
        let (ccx, rest) = if is_ccx {
            let (mut state, rest) = read::<[u8; 16]>(rest, "PDS NACK_CCX state")?;
            let nccx_type = state.first().map_or(0, |b| b >> 4);
            if let Some(b) = state.first_mut() {
                *b &= 0x0F;
            }
            (Some(NackCcx { nccx_type, state }), rest)
        } else {
            (None, rest)
        };
        let h = Nack {
            next_header,
            flags: NackFlags::from_bits_truncate(p.flags),
            code: NackCode::try_from(raw.code)?,
            vendor_code: raw.vendor_code,
            target,
            payload: raw.payload.get(),
            ccx,
        };
        Ok((h, rest))
    }

    /// The strict check: the first reserved bit set in the NACK at the front of `bytes`, by
    /// field name ([`Nack::parse`] ignores them).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<NackRaw>(bytes, "PDS NACK")?;
        check_flags(Prologue::from_word(raw.prologue.get()).flags, RESERVED, "NACK flags reserved bits")
    }

    /// Bytes [`Nack::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        if self.ccx.is_some() { Self::LEN_CCX } else { Self::LEN }
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let len = self.buffer_len();
        if !self.next_header.is_response_or_none() {
            return Err(Error::Mismatch { field: "NACK next header (an SES request)" });
        }
        if out.len() < len {
            return Err(Error::BufferTooShort { needed: len, got: out.len() });
        }
        let (nt, psn, spdcid, dpdcid) = match self.target {
            NackTarget::Pdc { psn, spdcid, dpdcid } => (0, psn, spdcid, dpdcid),
            NackTarget::Rudi { pkt_id, pdc_ids } => (NT, pkt_id, (pdc_ids >> 16) as u16, pdc_ids as u16),
        };
        let flags = self.flags.intersection(NackFlags::all()).bits() | nt;
        let prologue =
            Prologue { packet_type: self.packet_type().into(), next: self.next_header.into(), flags }.to_word();
        let raw = NackRaw {
            prologue: U16::new(prologue),
            code: self.code.into(),
            vendor_code: self.vendor_code,
            psn: U32::new(psn),
            spdcid: U16::new(spdcid),
            dpdcid: U16::new(dpdcid),
            payload: U32::new(self.payload),
        };
        let state = match self.ccx {
            Some(c) => {
                if c.nccx_type > 0xF || c.state.first().is_some_and(|b| b & 0xF0 != 0) {
                    return Err(Error::BadValue { field: "NACK_CCX type/state", value: u64::from(c.nccx_type) });
                }
                let mut s = c.state;
                if let Some(b) = s.first_mut() {
                    *b |= c.nccx_type << 4;
                }
                Some(s)
            }
            None => None,
        };
        let n = write(&raw, out)?;
        match state {
            Some(s) => Ok(n + write(&s, out.get_mut(n..).unwrap_or_default())?),
            None => Ok(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_new_start_psn() {
        // NACK NEW_START_PSN (0x17) for PSN 4 of PDC 7 from target 19; payload = start PSN 70000.
        let b = [0x50, 0x00, 0x17, 0x00, 0, 0, 0, 4, 0, 19, 0, 7, 0x00, 0x01, 0x11, 0x70];
        let (n, _) = Nack::parse(&b).unwrap();
        assert_eq!(n.code, NackCode::NewStartPsn);
        assert_eq!(n.code.class(), NackClass::NewStartPsn);
        assert_eq!(n.target, NackTarget::Pdc { psn: 4, spdcid: 19, dpdcid: 7 });
        assert_eq!(n.payload, 70000);
        let mut out = [0u8; 16];
        n.emit(&mut out).unwrap();
        assert_eq!(out, b);
        // Undefined flag bits are not sent: NT (a RUDI NACK) comes only from the target.
        Nack { flags: NackFlags::from_bits_retain(0xFF), ..n }.emit(&mut out).unwrap();
        assert_eq!(Nack::parse(&out).unwrap().0.target, n.target);
        assert_eq!(Nack::check_reserved(&out), Ok(()));
    }

    #[test]
    fn every_code_has_a_class_and_unknown_codes_fail() {
        let mut known = 0;
        for v in 0..=255u8 {
            if let Ok(c) = NackCode::try_from(v) {
                known += 1;
                assert_eq!(u8::from(c), v);
                let _ = c.class();
            }
        }
        assert_eq!(known, 28, "25 codes and 3 experimental");
        assert_eq!(NackCode::Trimmed.class(), NackClass::Retransmit);
        assert_eq!(NackCode::InvDpdcid.class(), NackClass::Close);
        assert_eq!(NackCode::RcvdSesProcg.class(), NackClass::Drop);
        assert!(NackCode::try_from(0x0C).is_err());
        assert!(NackCode::try_from(0x00).is_err());
    }

    #[test]
    fn rudi_form_and_ccx() {
        // RUDI NACK: NT set, PDC ids zero.
        let b = [0x50, 0x08, 0x01, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(Nack::parse(&b).unwrap().0.target, NackTarget::Rudi { pkt_id: 0xDEADBEEF, pdc_ids: 0 });
        // Non-zero PDC-id bytes are accepted and kept.
        let mut x = b;
        x[9] = 1;
        x[11] = 2;
        let (n, _) = Nack::parse(&x).unwrap();
        assert_eq!(n.target, NackTarget::Rudi { pkt_id: 0xDEADBEEF, pdc_ids: 0x0001_0002 });
        let mut out = [0u8; 16];
        n.emit(&mut out).unwrap();
        assert_eq!(out, x);
        // NACK_CCX: type 12, nccx_type 0xA.
        let mut c = [0u8; 32];
        c[..16].copy_from_slice(&b);
        c[0] = 0x60;
        c[16] = 0xA5;
        c[31] = 9;
        let (n, _) = Nack::parse(&c).unwrap();
        let ccx = n.ccx.unwrap();
        assert_eq!((ccx.nccx_type, ccx.state[0], ccx.state[15]), (0xA, 0x05, 9));
        let mut out = [0u8; 32];
        n.emit(&mut out).unwrap();
        assert_eq!(out, c);
        // A NACK may carry an SES response (NH 4, RSP), not a request (NH 3, standard request).
        let mut x = b;
        x[0] = 0x52;
        let (n, _) = Nack::parse(&x).unwrap();
        assert_eq!(n.next_header, NextHeader::Rsp);
        let mut out = [0u8; 16];
        n.emit(&mut out).unwrap();
        assert_eq!(out, x);
        x[0] = 0x51;
        x[1] |= 0x80;
        assert!(matches!(Nack::parse(&x), Err(Error::Mismatch { .. })));
    }

    /// Reserved flag bits: ignored by the parse, cleared by the emit, reported by the strict
    /// check.
    #[test]
    fn reserved_bits_are_ignored_and_reported() {
        let b = [0x50, 0x00, 0x17, 0x00, 0, 0, 0, 4, 0, 19, 0, 7, 0x00, 0x01, 0x11, 0x70];
        let mut x = b;
        x[1] |= 0x47;
        let (n, _) = Nack::parse(&x).unwrap();
        assert_eq!(n, Nack::parse(&b).unwrap().0);
        let mut out = [0u8; 16];
        n.emit(&mut out).unwrap();
        assert_eq!(out, b);
        assert_eq!(Nack::check_reserved(&b), Ok(()));
        assert_eq!(Nack::check_reserved(&x), Err(Error::Reserved { field: "NACK flags reserved bits" }));
    }

    proptest! {
        #[test]
        fn round_trips(
            f in 0u8..4, code_i in 0usize..28, vendor_code: u8, rudi: bool, rsp: bool, psn: u32, s: u16, d: u16, payload: u32,
            ccx in proptest::option::of((0u8..16, any::<[u8; 16]>())),
        ) {
            let codes: std::vec::Vec<NackCode> = (0..=255u8).filter_map(|v| NackCode::try_from(v).ok()).collect();
            let target = if rudi { NackTarget::Rudi { pkt_id: psn, pdc_ids: u32::from(s) << 16 | u32::from(d) } } else { NackTarget::Pdc { psn, spdcid: s, dpdcid: d } };
            let ccx = ccx.map(|(t, mut st)| { st[0] &= 0x0F; NackCcx { nccx_type: t, state: st } });
            let next_header = if rsp { NextHeader::Rsp } else { NextHeader::None };
            let n = Nack { next_header, flags: NackFlags::from_bits_truncate(f << 4), code: codes[code_i], vendor_code, target, payload, ccx };
            let mut out = [0u8; 32];
            let len = n.emit(&mut out).unwrap();
            prop_assert_eq!(len, n.buffer_len());
            prop_assert_eq!(Nack::parse(&out[..len]).unwrap(), (n, &[][..]));
        }
    }
}
