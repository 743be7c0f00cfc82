//! RC Link, PAXI's reliable transport (UniVista's RCLINK_AFH_SPEC v2.4 as secondary sources
//! quote it): the 64-bit routing header (RH) of TYPE1 requests and ACKs.
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 12:0 | Dest_QP | destination queue pair |
//! | 24:13 | PSN | 12-bit packet sequence number |
//! | 31:25 | Pkt_len (request) / syndrome (ACK) | RH + payload length when at most 127, else 0 / ACK-NAK type and RNR time |
//! | 39:32 | P_key | partition key |
//! | 55:40 | Timestamp | for RTT measurement |
//! | 56 | Timestamp_en | |
//! | 58:57 | reserved | |
//! | 60:59 | Pad | payload padding to 4 bytes |
//! | 61 | Fack | force an ACK (0 in ACKs) |
//! | 63:62 | Opcode | 00 SEND request, 01 ACK/NAK, 10 CNP, 11 reserved |
//!
//! *Project-defined* (no source says):
//!
//! * **Byte order:** the 64-bit RH goes most significant byte first, network order like the
//!   Ethernet, IPv4 and UDP headers before it.
//! * **The ACK/NAK syndrome** ([`Syndrome`]) follows InfiniBand's AETH, whose name RC Link
//!   borrows with RoCE's UDP port: bits 6:5 are 00 ACK, 01 RNR NAK, 11 NAK (10 reserved), bits
//!   4:0 the credit count, the RNR timer or the NAK code (0: PSN sequence error; others kept as
//!   numbers).
//! * The reserved bits are sent as zero and ignored on receive ([`RoutingHeader::check_reserved`]
//!   reports them); opcode 11 is refused.

/// Why an RH does not parse or emit. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RhError {
    /// Fewer than 8 bytes.
    Truncated,
    /// Opcode 11 is reserved.
    ReservedOpcode,
    /// A field does not fit its bits.
    FieldRange {
        /// The field.
        field: &'static str,
    },
    /// Reserved bits set (strict check only).
    ReservedBits,
}

impl core::fmt::Display for RhError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RhError::Truncated => write!(f, "an RC Link RH needs 8 bytes"),
            RhError::ReservedOpcode => write!(f, "RC Link RH opcode 0b11 is reserved"),
            RhError::FieldRange { field } => write!(f, "RC Link RH field {field} out of range"),
            RhError::ReservedBits => write!(f, "RC Link RH reserved bits set"),
        }
    }
}

impl core::error::Error for RhError {}

/// Bytes of an RH.
pub const RH_LEN: usize = 8;
/// The largest Dest_QP.
pub const MAX_QP: u16 = (1 << 13) - 1;
/// PSNs count modulo 2^12.
pub const PSN_MODULUS: u16 = 1 << 12;

/// An ACK's syndrome (bits 31:25 of its RH), *project-defined* as InfiniBand's AETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Syndrome {
    /// Acknowledged, with a credit count (5 bits).
    Ack {
        /// Credits.
        credits: u8,
    },
    /// Receiver not ready: retry after the timer (5-bit code).
    RnrNak {
        /// RNR timer code.
        timer: u8,
    },
    /// Negative acknowledgement (5-bit code; 0 is a PSN sequence error: go back to the PSN).
    Nak {
        /// NAK code.
        code: u8,
    },
    /// Bits 6:5 = 10, reserved: kept as the 7 bits (receive liberally).
    Reserved {
        /// The syndrome bits.
        bits: u8,
    },
}

impl Syndrome {
    /// The NAK code of a PSN sequence error.
    pub const PSN_SEQUENCE_ERROR: u8 = 0;

    /// The 7 bits (a field wider than its bits is cut to them: credits, timer and code to 5,
    /// a reserved syndrome to 7).
    pub const fn bits(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1F,
            Syndrome::RnrNak { timer } => 0b01 << 5 | (timer & 0x1F),
            Syndrome::Nak { code } => 0b11 << 5 | (code & 0x1F),
            Syndrome::Reserved { bits } => bits & 0x7F,
        }
    }

    /// From the 7 bits (the high bit ignored).
    pub const fn from_bits(bits: u8) -> Self {
        let low = bits & 0x1F;
        match (bits >> 5) & 0b11 {
            0b00 => Syndrome::Ack { credits: low },
            0b01 => Syndrome::RnrNak { timer: low },
            0b11 => Syndrome::Nak { code: low },
            _ => Syndrome::Reserved { bits: bits & 0x7F },
        }
    }
}

/// The RH's opcode and what bits 31:25 mean for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RhKind {
    /// A SEND request: the RH + payload length when at most 127 bytes, else 0.
    Send {
        /// Pkt_len.
        pkt_len: u8,
    },
    /// An ACK or NAK.
    AckNak(Syndrome),
    /// A congestion notification packet (bits 31:25 carried as they are).
    Cnp {
        /// Bits 31:25.
        bits: u8,
    },
}

/// The 64-bit RH of a TYPE1 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RoutingHeader {
    /// Dest_QP (13 bits).
    pub dest_qp: u16,
    /// PSN (12 bits).
    pub psn: u16,
    /// Opcode and bits 31:25.
    pub kind: RhKind,
    /// P_key.
    pub p_key: u8,
    /// Timestamp, when `timestamp_en`.
    pub timestamp: u16,
    /// Timestamp_en.
    pub timestamp_en: bool,
    /// Pad: payload bytes added to reach a multiple of 4 (0 to 3).
    pub pad: u8,
    /// Fack: the receiver ACKs at once (0 in ACKs).
    pub fack: bool,
}

impl RoutingHeader {
    /// A SEND to `dest_qp` with `psn`: P_key 0, no timestamp, no Fack; Pkt_len and Pad 0 (what
    /// [`crate::frame::emit`] sets from the payload).
    pub const fn send(dest_qp: u16, psn: u16) -> Self {
        RoutingHeader {
            dest_qp,
            psn,
            kind: RhKind::Send { pkt_len: 0 },
            p_key: 0,
            timestamp: 0,
            timestamp_en: false,
            pad: 0,
            fack: false,
        }
    }

    /// The 64-bit word.
    pub const fn to_word(&self) -> Result<u64, RhError> {
        if self.dest_qp > MAX_QP {
            return Err(RhError::FieldRange { field: "Dest_QP" });
        }
        if self.psn >= PSN_MODULUS {
            return Err(RhError::FieldRange { field: "PSN" });
        }
        if self.pad > 3 {
            return Err(RhError::FieldRange { field: "Pad" });
        }
        let (opcode, b31_25) = match self.kind {
            RhKind::Send { pkt_len } if pkt_len > 127 => return Err(RhError::FieldRange { field: "Pkt_len" }),
            RhKind::Send { pkt_len } => (0b00u64, pkt_len),
            RhKind::AckNak(s) => (0b01, s.bits()),
            RhKind::Cnp { bits } if bits > 127 => return Err(RhError::FieldRange { field: "CNP bits" }),
            RhKind::Cnp { bits } => (0b10, bits),
        };
        if self.fack && matches!(self.kind, RhKind::AckNak(_)) {
            return Err(RhError::FieldRange { field: "Fack in an ACK" });
        }
        Ok(self.dest_qp as u64
            | (self.psn as u64) << 13
            | (b31_25 as u64) << 25
            | (self.p_key as u64) << 32
            | (self.timestamp as u64) << 40
            | (self.timestamp_en as u64) << 56
            | (self.pad as u64) << 59
            | (self.fack as u64) << 61
            | opcode << 62)
    }

    /// From the 64-bit word; the reserved bits 58:57 are ignored, and so are Fack in an ACK or
    /// NAK (sent as 0) and Pad in an ACK, NAK or CNP (no payload to pad)
    /// ([`RoutingHeader::check_reserved`] reports each).
    pub const fn from_word(w: u64) -> Result<Self, RhError> {
        let b31_25 = ((w >> 25) & 0x7F) as u8;
        let kind = match w >> 62 {
            0b00 => RhKind::Send { pkt_len: b31_25 },
            0b01 => RhKind::AckNak(Syndrome::from_bits(b31_25)),
            0b10 => RhKind::Cnp { bits: b31_25 },
            _ => return Err(RhError::ReservedOpcode),
        };
        Ok(RoutingHeader {
            dest_qp: (w & 0x1FFF) as u16,
            psn: ((w >> 13) & 0xFFF) as u16,
            kind,
            p_key: (w >> 32) as u8,
            timestamp: (w >> 40) as u16,
            timestamp_en: (w >> 56) & 1 == 1,
            pad: if w >> 62 == 0b00 { ((w >> 59) & 0b11) as u8 } else { 0 },
            fack: (w >> 61) & 1 == 1 && w >> 62 != 0b01,
        })
    }

    /// Parses the RH at the front of `bytes`; returns it and the bytes after it.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), RhError> {
        let (head, rest) = bytes.split_first_chunk::<RH_LEN>().ok_or(RhError::Truncated)?;
        Ok((Self::from_word(u64::from_be_bytes(*head))?, rest))
    }

    /// Writes the RH at the front of `out`; returns its length, 8.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, RhError> {
        let word = self.to_word()?;
        let head = out.first_chunk_mut::<RH_LEN>().ok_or(RhError::Truncated)?;
        *head = word.to_be_bytes();
        Ok(RH_LEN)
    }

    /// Strict check for conformance tests: reserved bits 58:57 are zero, and an ACK carries no
    /// Fack.
    pub fn check_reserved(bytes: &[u8]) -> Result<(), RhError> {
        let head = bytes.first_chunk::<RH_LEN>().ok_or(RhError::Truncated)?;
        let w = u64::from_be_bytes(*head);
        let ack_with_fack = w >> 62 == 0b01 && (w >> 61) & 1 == 1;
        let padded_without_payload = w >> 62 != 0b00 && (w >> 59) & 0b11 != 0;
        if (w >> 57) & 0b11 != 0 || ack_with_fack || padded_without_payload {
            Err(RhError::ReservedBits)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_send_by_hand() {
        let rh = RoutingHeader {
            dest_qp: 0x1234,
            psn: 0xABC,
            kind: RhKind::Send { pkt_len: 100 },
            p_key: 0x5A,
            timestamp: 0xBEEF,
            timestamp_en: true,
            pad: 2,
            fack: true,
        };
        // 0x1234 | 0xABC << 13 | 100 << 25 | 0x5A << 32 | 0xBEEF << 40 | 1 << 56 | 2 << 59 | 1 << 61.
        let word: u64 = 0x1234 | 0xABC << 13 | 100 << 25 | 0x5A << 32 | 0xBEEF << 40 | 1 << 56 | 2 << 59 | 1 << 61;
        assert_eq!(rh.to_word(), Ok(word));
        let mut out = [0u8; 9];
        assert_eq!(rh.emit(&mut out), Ok(8));
        assert_eq!(out[..8], word.to_be_bytes());
        assert_eq!(RoutingHeader::parse(&out), Ok((rh, &out[8..])));
        assert_eq!(RoutingHeader::check_reserved(&out), Ok(()));
    }

    #[test]
    fn acks_and_refusals() {
        let nak = Syndrome::Nak { code: Syndrome::PSN_SEQUENCE_ERROR };
        assert_eq!(nak.bits(), 0b110_0000);
        assert_eq!(Syndrome::from_bits(0b010_0111), Syndrome::RnrNak { timer: 7 });
        assert_eq!(Syndrome::from_bits(0b100_0011), Syndrome::Reserved { bits: 0b100_0011 });
        let ack = RoutingHeader {
            dest_qp: 1,
            psn: 7,
            kind: RhKind::AckNak(Syndrome::Ack { credits: 31 }),
            p_key: 0,
            timestamp: 0,
            timestamp_en: false,
            pad: 0,
            fack: false,
        };
        assert_eq!(RoutingHeader::from_word(ack.to_word().unwrap()), Ok(ack));
        assert_eq!(RoutingHeader { fack: true, ..ack }.to_word(), Err(RhError::FieldRange { field: "Fack in an ACK" }));
        assert_eq!(RoutingHeader { psn: 4096, ..ack }.to_word(), Err(RhError::FieldRange { field: "PSN" }));
        assert_eq!(RoutingHeader { dest_qp: 8192, ..ack }.to_word(), Err(RhError::FieldRange { field: "Dest_QP" }));
        assert_eq!(RoutingHeader::from_word(0b11 << 62), Err(RhError::ReservedOpcode));
        assert_eq!(RoutingHeader::parse(&[0; 7]), Err(RhError::Truncated));
        // Receive liberally: reserved bits 58:57 are ignored, and the strict check reports them.
        let odd = (ack.to_word().unwrap() | 0b11 << 57).to_be_bytes();
        assert_eq!(RoutingHeader::parse(&odd).map(|(h, _)| h), Ok(ack));
        assert_eq!(RoutingHeader::check_reserved(&odd), Err(RhError::ReservedBits));
        // Fack, sent as 0 in an ACK, likewise.
        let fack = (ack.to_word().unwrap() | 1 << 61).to_be_bytes();
        assert_eq!(RoutingHeader::parse(&fack).map(|(h, _)| h), Ok(ack));
        assert_eq!(RoutingHeader::check_reserved(&fack), Err(RhError::ReservedBits));
    }

    proptest! {
        /// Every word parses (opcode 11 aside) and re-emits with its reserved bits cleared, and
        /// every header that emits parses back to itself.
        #[test]
        fn words_round_trip(w: u64) {
            match RoutingHeader::from_word(w) {
                Ok(h) => {
                    // Reserved bits cleared: 58:57, Fack in an ACK, Pad without a payload.
                    let fack = if matches!(h.kind, RhKind::AckNak(_)) { 1 << 61 } else { 0 };
                    let pad = if matches!(h.kind, RhKind::Send { .. }) { 0 } else { 0b11 << 59 };
                    prop_assert_eq!(h.to_word(), Ok(w & !(0b11 << 57) & !fack & !pad));
                    prop_assert_eq!(RoutingHeader::from_word(h.to_word().unwrap()), Ok(h));
                }
                Err(e) => prop_assert_eq!((e, w >> 62), (RhError::ReservedOpcode, 0b11)),
            }
        }
    }
}
