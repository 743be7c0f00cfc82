//! The DL flit header (24 bits, UALink 1.0 §6.6.2, Tables 6-14 and 6-15) and the segment header
//! (8 bits, §6.3, Table 6-2).
//!
//! *Project-defined*, where the text does not say:
//!
//! * the 24 header bits go to the flit bytes least significant first: FH0 = bits 7..0,
//!   FH1 = bits 15..8, FH2 = bits 23..16;
//! * in a segment header, of each 2-bit Message field the lower bit (2, 5) is M0, the message
//!   flag of the TL flit's lower half, and the upper bit (3, 6) is M1.
//!
//! **Reserved bits are sent as zero and ignored on receive** (*project-defined*: §6.4 states this
//! rule for the fields of DL messages; the header tables do not say, and this crate applies the
//! same rule to them): flit-header bits 7..0, bits 19..17 of an explicit sequence number header,
//! segment-header bit 1, and the Message bits of a TL flit that is not present. A flit carrying them is taken as if they were zero, so a partner (or a later
//! revision) that uses them does not stop the link. [`FlitHeader::check_reserved`] and
//! [`SegmentHeader::check_reserved`] name the first one set, for conformance tests and
//! warnings. A reserved `op` cannot be read at all and is refused.

use crate::Error;
use linklayer::WordField;

/// The bit positions of the two headers, one table each as the specification gives them (bit 0
/// the least significant bit of the header word).
pub mod layout {
    use linklayer::WordField;

    /// Tables 6-14 and 6-15: the 24-bit flit header. `op` and `payload` are common; the rest
    /// depends on `op`.
    pub mod flit_header {
        use super::WordField;
        /// `op`: 000 explicit sequence number, 001 replay, 010 Ack, 011 Replay Request.
        pub const OP: WordField = WordField::bits(23, 21);
        /// `payload`: the flit carries payload.
        pub const PAYLOAD: WordField = WordField::bit(20);
        /// Explicit sequence number header (op 000/001): reserved.
        pub const EXPLICIT_RESERVED: WordField = WordField::bits(19, 17);
        /// Explicit sequence number header: `flitSeqNo`.
        pub const FLIT_SEQ_NO: WordField = WordField::bits(16, 8);
        /// Command header (op 010/011): `ackReqSeq`.
        pub const ACK_REQ_SEQ: WordField = WordField::bits(19, 11);
        /// Command header: `flitSeqLo`, the low 3 bits of this flit's sequence number.
        pub const FLIT_SEQ_LO: WordField = WordField::bits(10, 8);
        /// Reserved in every header.
        pub const RESERVED: WordField = WordField::bits(7, 0);
    }

    /// Table 6-2: the 8-bit segment header. Each TL flit's 2-bit Message field holds M0 (its
    /// lower half-flit, the lower bit) and M1 (its upper half-flit): *project-defined* order.
    pub mod segment_header {
        use super::WordField;
        /// `DLAltSector`: the segment starts with a DL message sector.
        pub const ALT_SECTOR: WordField = WordField::bit(0);
        /// Reserved.
        pub const RESERVED: WordField = WordField::bit(1);
        /// `TL Flit[0]` Message bits (M0 at bit 2, M1 at bit 3).
        pub const TL0_MESSAGE: WordField = WordField::bits(3, 2);
        /// `TL Flit[0]` present.
        pub const TL0_PRESENT: WordField = WordField::bit(4);
        /// `TL Flit[1]` Message bits (M0 at bit 5, M1 at bit 6).
        pub const TL1_MESSAGE: WordField = WordField::bits(6, 5);
        /// `TL Flit[1]` present.
        pub const TL1_PRESENT: WordField = WordField::bit(7);
    }
}

use layout::flit_header as fh;
use layout::segment_header as sh;

/// Mask of a 9-bit flit sequence number.
const SEQ_MASK: u32 = 0x1FF;

/// A DL flit header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FlitHeader {
    /// Explicit sequence number, no payload: a NOP flit (op 000, payload 0).
    Nop {
        /// `flitSeqNo` (9 bits).
        seq: u16,
    },
    /// Explicit sequence number, payload sent for the first time (op 000, payload 1).
    Original {
        /// `flitSeqNo` (9 bits).
        seq: u16,
    },
    /// Explicit sequence number, payload replayed (op 001, payload 1).
    Replay {
        /// `flitSeqNo` (9 bits).
        seq: u16,
    },
    /// Command flit: acknowledgement (op 010).
    Ack {
        /// Whether the flit carries payload.
        payload: bool,
        /// `ackReqSeq`: the sequence number acknowledged (9 bits).
        ack_seq: u16,
        /// `flitSeqLo`: the low 3 bits of this flit's sequence number.
        seq_lo: u8,
    },
    /// Command flit: standard replay request (op 011).
    ReplayRequest {
        /// Whether the flit carries payload.
        payload: bool,
        /// `ackReqSeq`: replay from this sequence number (9 bits).
        from_seq: u16,
        /// `flitSeqLo`: the low 3 bits of this flit's sequence number.
        seq_lo: u8,
    },
}

impl FlitHeader {
    /// Whether the flit carries payload.
    pub const fn has_payload(&self) -> bool {
        match *self {
            FlitHeader::Nop { .. } => false,
            FlitHeader::Original { .. } | FlitHeader::Replay { .. } => true,
            FlitHeader::Ack { payload, .. } | FlitHeader::ReplayRequest { payload, .. } => payload,
        }
    }

    /// The 24-bit header word.
    pub fn to_bits(&self) -> Result<u32, Error> {
        let seq9 = |v: u16, field| {
            if u32::from(v) > SEQ_MASK { Err(Error::BadValue { field, value: u32::from(v) }) } else { Ok(u32::from(v)) }
        };
        let lo3 = |v: u8| {
            if v > 7 { Err(Error::BadValue { field: "flitSeqLo", value: u32::from(v) }) } else { Ok(u32::from(v)) }
        };
        let put = |f: WordField, v: u32| f.place(u64::from(v)) as u32;
        let explicit = |op: u32, payload: bool, seq| -> Result<u32, Error> {
            Ok(put(fh::OP, op) | put(fh::PAYLOAD, u32::from(payload)) | put(fh::FLIT_SEQ_NO, seq9(seq, "flitSeqNo")?))
        };
        let command = |op: u32, payload: bool, seq, lo| -> Result<u32, Error> {
            Ok(put(fh::OP, op)
                | put(fh::PAYLOAD, u32::from(payload))
                | put(fh::ACK_REQ_SEQ, seq9(seq, "ackReqSeq")?)
                | put(fh::FLIT_SEQ_LO, lo3(lo)?))
        };
        match *self {
            FlitHeader::Nop { seq } => explicit(OP_EXPLICIT, false, seq),
            FlitHeader::Original { seq } => explicit(OP_EXPLICIT, true, seq),
            FlitHeader::Replay { seq } => explicit(OP_REPLAY, true, seq),
            FlitHeader::Ack { payload, ack_seq, seq_lo } => command(OP_ACK, payload, ack_seq, seq_lo),
            FlitHeader::ReplayRequest { payload, from_seq, seq_lo } => {
                command(OP_REPLAY_REQUEST, payload, from_seq, seq_lo)
            }
        }
    }

    /// Decodes a 24-bit header word (bits above 23 must be zero), ignoring its reserved bits. A
    /// reserved `op` (or op 001 on a NOP flit) is refused.
    pub fn from_bits(w: u32) -> Result<Self, Error> {
        if w >> 24 != 0 {
            return Err(Error::BadValue { field: "flit header", value: w });
        }
        let get = |f: WordField| f.get(u128::from(w)) as u32;
        let op = get(fh::OP);
        let payload = fh::PAYLOAD.is_set(u128::from(w));
        match op {
            OP_EXPLICIT | OP_REPLAY => {
                let seq = get(fh::FLIT_SEQ_NO) as u16;
                match (op, payload) {
                    (OP_EXPLICIT, false) => Ok(FlitHeader::Nop { seq }),
                    (OP_EXPLICIT, true) => Ok(FlitHeader::Original { seq }),
                    (_, true) => Ok(FlitHeader::Replay { seq }),
                    (_, false) => Err(Error::BadValue { field: "flit header op (replay without payload)", value: op }),
                }
            }
            OP_ACK | OP_REPLAY_REQUEST => {
                let seq = get(fh::ACK_REQ_SEQ) as u16;
                let seq_lo = get(fh::FLIT_SEQ_LO) as u8;
                Ok(if op == OP_ACK {
                    FlitHeader::Ack { payload, ack_seq: seq, seq_lo }
                } else {
                    FlitHeader::ReplayRequest { payload, from_seq: seq, seq_lo }
                })
            }
            _ => Err(Error::BadValue { field: "flit header op", value: op }),
        }
    }

    /// The first reserved bit set in a 24-bit header word, by name: bits 7..0 in every header,
    /// bits 19..17 in an explicit sequence number header. For conformance checks and warnings;
    /// [`Self::from_bits`] ignores them.
    pub fn check_reserved(w: u32) -> Result<(), Error> {
        let w = u128::from(w);
        if fh::RESERVED.get(w) != 0 {
            return Err(Error::Reserved { field: "flit header bits 7..0" });
        }
        let explicit = matches!(fh::OP.get(w) as u32, OP_EXPLICIT | OP_REPLAY);
        if explicit && fh::EXPLICIT_RESERVED.get(w) != 0 {
            return Err(Error::Reserved { field: "flit header bits 19..17" });
        }
        Ok(())
    }

    /// FH0, FH1, FH2 (project-defined order: least significant byte first).
    pub fn to_bytes(&self) -> Result<[u8; 3], Error> {
        let [b0, b1, b2, _] = self.to_bits()?.to_le_bytes();
        Ok([b0, b1, b2])
    }

    /// Decodes FH0, FH1, FH2, ignoring reserved bits.
    pub fn from_bytes(b: [u8; 3]) -> Result<Self, Error> {
        Self::from_bits(Self::word(b))
    }

    /// The 24-bit header word of FH0, FH1, FH2.
    pub fn word(b: [u8; 3]) -> u32 {
        u32::from_le_bytes([b[0], b[1], b[2], 0])
    }
}

/// `op` values (Tables 6-14, 6-15).
const OP_EXPLICIT: u32 = 0b000;
const OP_REPLAY: u32 = 0b001;
const OP_ACK: u32 = 0b010;
const OP_REPLAY_REQUEST: u32 = 0b011;

/// The message flags of a TL flit: M0 for its lower half-flit, M1 for its upper.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct MBits {
    /// The lower half-flit is a message half-flit.
    pub m0: bool,
    /// The upper half-flit is a message half-flit.
    pub m1: bool,
}

/// A segment header: whether the segment starts with a DL message sector, and the TL flits that
/// start in it (at most two) with their message flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SegmentHeader {
    /// `DLAltSector`: the segment starts with one 4-byte DL message sector.
    pub alt_sector: bool,
    /// `TL Flit[0]` and `TL Flit[1]` that start in this segment, with their M bits.
    pub tl_flits: [Option<MBits>; 2],
}

impl SegmentHeader {
    /// The header byte.
    pub const fn to_byte(&self) -> u8 {
        let [f0, f1] = self.tl_flits;
        let w = sh::ALT_SECTOR.place(self.alt_sector as u64)
            | tl_place(f0, sh::TL0_MESSAGE, sh::TL0_PRESENT)
            | tl_place(f1, sh::TL1_MESSAGE, sh::TL1_PRESENT);
        w as u8
    }

    /// Decodes a header byte, ignoring its reserved bits (bit 1, and the Message bits of a TL
    /// flit that is not present).
    #[inline]
    pub const fn from_byte(b: u8) -> Self {
        // One load from the table [`Self::decode`] built at compile time (256 entries: any byte).
        #[allow(clippy::indexing_slicing, reason = "a u8 indexes a 256-entry table")]
        DECODED[b as usize]
    }

    /// [`Self::from_byte`] by the rule.
    const fn decode(b: u8) -> Self {
        let w = b as u128;
        SegmentHeader {
            alt_sector: sh::ALT_SECTOR.is_set(w),
            tl_flits: [tl_get(w, sh::TL0_MESSAGE, sh::TL0_PRESENT), tl_get(w, sh::TL1_MESSAGE, sh::TL1_PRESENT)],
        }
    }

    /// The first reserved bit set in a header byte, by name. For conformance checks and
    /// warnings; [`Self::from_byte`] ignores them.
    pub const fn check_reserved(b: u8) -> Result<(), Error> {
        let w = b as u128;
        if sh::RESERVED.is_set(w) {
            return Err(Error::Reserved { field: "segment header bit 1" });
        }
        if absent_with_message(w, sh::TL0_MESSAGE, sh::TL0_PRESENT)
            || absent_with_message(w, sh::TL1_MESSAGE, sh::TL1_PRESENT)
        {
            return Err(Error::Reserved { field: "segment header Message bits of an absent TL flit" });
        }
        Ok(())
    }
}

/// Every segment-header byte decoded at compile time by [`SegmentHeader::decode`].
#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const DECODED: [SegmentHeader; 256] = {
    let mut t = [SegmentHeader { alt_sector: false, tl_flits: [None, None] }; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = SegmentHeader::decode(b as u8);
        b += 1;
    }
    t
};

/// A TL flit's fields of a segment header: its Message bits (M0 low, M1 high) and present bit.
const fn tl_place(f: Option<MBits>, message: WordField, present: WordField) -> u128 {
    match f {
        Some(m) => message.place(m.m0 as u64 | (m.m1 as u64) << 1) | present.place(1),
        None => 0,
    }
}

/// Whether a TL flit that is absent has Message bits set (reserved).
const fn absent_with_message(w: u128, message: WordField, present: WordField) -> bool {
    !present.is_set(w) && message.get(w) != 0
}

/// A TL flit's fields read back (the Message bits of an absent flit ignored).
const fn tl_get(w: u128, message: WordField, present: WordField) -> Option<MBits> {
    if present.is_set(w) {
        let m = message.get(w);
        Some(MBits { m0: m & 1 != 0, m1: m & 2 != 0 })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn flit_header_examples() {
        // Original payload flit, sequence 5: op 000, payload 1, seq << 8.
        let h = FlitHeader::Original { seq: 5 };
        assert_eq!(h.to_bits(), Ok(0x10_0500));
        assert_eq!(h.to_bytes(), Ok([0x00, 0x05, 0x10]));
        // Ack of 511 on a NOP-less command flit with seq low bits 3.
        let a = FlitHeader::Ack { payload: false, ack_seq: 511, seq_lo: 3 };
        assert_eq!(a.to_bits(), Ok(0b010 << 21 | 511 << 11 | 3 << 8));
        assert_eq!(FlitHeader::from_bits(0b100 << 21), Err(Error::BadValue { field: "flit header op", value: 0b100 }));
        assert!(FlitHeader::from_bits(0b001 << 21).is_err(), "a replayed NOP flit");
        assert!(FlitHeader::Nop { seq: 512 }.to_bits().is_err());
        assert!(FlitHeader::Ack { payload: true, ack_seq: 1, seq_lo: 8 }.to_bits().is_err());
    }

    /// §6.4: reserved bits are ignored on receive, and the strict check names them.
    #[test]
    fn reserved_flit_header_bits_are_ignored_and_named() {
        let h = FlitHeader::Original { seq: 5 };
        for (w, field) in [(0x10_0501, "flit header bits 7..0"), (0x12_0500, "flit header bits 19..17")] {
            assert_eq!(FlitHeader::from_bits(w), Ok(h));
            assert_eq!(FlitHeader::check_reserved(w), Err(Error::Reserved { field }));
        }
        assert_eq!(FlitHeader::check_reserved(0x10_0500), Ok(()));
        // In a command flit bits 19..17 are ackReqSeq, not reserved.
        let a = FlitHeader::Ack { payload: true, ack_seq: 0x1FF, seq_lo: 1 };
        let w = a.to_bits().unwrap();
        assert_eq!(FlitHeader::check_reserved(w), Ok(()));
        assert_eq!(FlitHeader::from_bits(w | 0x80), Ok(a));
    }

    #[test]
    fn segment_header_bytes_all_decode_and_the_strict_check_names_reserved_bits() {
        let mut clean = 0;
        for b in 0..=255u8 {
            let h = SegmentHeader::from_byte(b);
            assert_eq!(h, SegmentHeader::decode(b), "the table follows the rule");
            // Re-encoding gives the byte with its reserved bits cleared.
            let mut cleared = b & !0b10;
            if b & 0b1_0000 == 0 {
                cleared &= !0b1100;
            }
            if b & 0b1000_0000 == 0 {
                cleared &= !0b110_0000;
            }
            assert_eq!(h.to_byte(), cleared, "byte {b:#04x}");
            assert_eq!(SegmentHeader::check_reserved(b).is_ok(), cleared == b, "byte {b:#04x}");
            clean += u32::from(cleared == b);
        }
        // Bit 0 free, bit 1 clear, and per TL flit absent (1 way) or present with any M bits (4).
        assert_eq!(clean, 2 * 5 * 5);
    }

    #[test]
    fn segment_header_examples() {
        assert_eq!(SegmentHeader::default().to_byte(), 0);
        let h = SegmentHeader {
            alt_sector: true,
            tl_flits: [Some(MBits { m0: true, m1: false }), Some(MBits { m0: false, m1: true })],
        };
        assert_eq!(h.to_byte(), 0b1101_0101);
        assert_eq!(SegmentHeader::from_byte(0b1101_0111), h);
        assert_eq!(SegmentHeader::check_reserved(0b10), Err(Error::Reserved { field: "segment header bit 1" }));
        assert_eq!(SegmentHeader::from_byte(0b0000_1100), SegmentHeader::default());
        assert!(SegmentHeader::check_reserved(0b0000_1100).is_err());
    }

    fn arb_header() -> impl Strategy<Value = FlitHeader> {
        prop_oneof![
            (0u16..512).prop_map(|seq| FlitHeader::Nop { seq }),
            (0u16..512).prop_map(|seq| FlitHeader::Original { seq }),
            (0u16..512).prop_map(|seq| FlitHeader::Replay { seq }),
            (any::<bool>(), 0u16..512, 0u8..8).prop_map(|(payload, ack_seq, seq_lo)| FlitHeader::Ack {
                payload,
                ack_seq,
                seq_lo
            }),
            (any::<bool>(), 0u16..512, 0u8..8).prop_map(|(payload, from_seq, seq_lo)| FlitHeader::ReplayRequest {
                payload,
                from_seq,
                seq_lo
            }),
        ]
    }

    proptest! {
        #[test]
        fn flit_header_round_trips(h in arb_header()) {
            let b = h.to_bytes().unwrap();
            prop_assert_eq!(FlitHeader::from_bytes(b), Ok(h));
        }

        /// Every header word that decodes re-encodes to itself with its reserved bits cleared,
        /// and exactly when none is set, to itself.
        #[test]
        fn every_accepted_header_word_re_encodes(w in 0u32..1 << 24) {
            if let Ok(h) = FlitHeader::from_bits(w) {
                let again = h.to_bits().unwrap();
                prop_assert_eq!(FlitHeader::from_bits(again), Ok(h));
                prop_assert_eq!(FlitHeader::check_reserved(again), Ok(()));
                prop_assert_eq!(again == w, FlitHeader::check_reserved(w).is_ok());
            }
        }
    }
}
