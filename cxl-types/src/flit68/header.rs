//! The 68B flit's 32-bit flit header and its credit-return fields (CXL 3.x §4.2.3, Table 4-1,
//! Figures 4-9 and 4-25), in flit bytes 0–3.
//!
//! | bits | field |
//! |---|---|
//! | 0 | Type: 0 protocol flit, 1 control flit ([`super::control`]) |
//! | 1 | reserved |
//! | 2 | Ak: acknowledges eight flits (link-layer retry) |
//! | 3 | BE: an extra data slot with byte enables follows the data |
//! | 4 | Sz: 1 = 64-byte transfer (four chunks), 0 = 32 bytes |
//! | 7:5, 10:8, 13:11, 16:14 | slot 0–3 formats (H0–H6 for slot 0, G0–G6 for slots 1–3) |
//! | 19:17 | reserved |
//! | 23:20 | RspCrd |
//! | 27:24 | ReqCrd |
//! | 31:28 | DataCrd |
//!
//! Each credit field: bit 3 picks CXL.cache (0) or CXL.mem (1); bits 2:0 return 0, 1, 2, 4,
//! 8, 16, 32 or 64 credits ([`Credit`]). Reserved bits are sent as zero and ignored on
//! receive. *Project-defined:* the bit positions are read from the slot figures (no table
//! gives them), as two public implementations do.

use linklayer::bits::WordField as F;

/// The header's fields as `[hi:lo]` of the 32-bit little-endian word in bytes 0–3.
pub mod field {
    use super::F;
    /// Type (1 = control flit).
    pub const TYPE: F = F::bit(0);
    /// Ak.
    pub const AK: F = F::bit(2);
    /// BE.
    pub const BE: F = F::bit(3);
    /// Sz.
    pub const SZ: F = F::bit(4);
    /// Slot 0 format.
    pub const SLOT0: F = F::bits(7, 5);
    /// Slot 1 format.
    pub const SLOT1: F = F::bits(10, 8);
    /// Slot 2 format.
    pub const SLOT2: F = F::bits(13, 11);
    /// Slot 3 format.
    pub const SLOT3: F = F::bits(16, 14);
    /// Response credits.
    pub const RSP_CRD: F = F::bits(23, 20);
    /// Request credits.
    pub const REQ_CRD: F = F::bits(27, 24);
    /// Data credits.
    pub const DATA_CRD: F = F::bits(31, 28);
}

/// A credit-return field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Credit {
    /// CXL.mem (else CXL.cache).
    pub mem: bool,
    /// The count code, 0–7: 0, 1, 2, 4, 8, 16, 32, 64 credits.
    pub code: u8,
}

impl Credit {
    /// No credits returned.
    pub const NONE: Credit = Credit { mem: false, code: 0 };

    /// The credits returned.
    pub const fn count(self) -> u8 {
        match self.code & 7 {
            0 => 0,
            c => 1 << (c - 1),
        }
    }

    /// The field for `count` credits of CXL.mem or CXL.cache, if `count` is one of the
    /// encodable values.
    pub const fn new(mem: bool, count: u8) -> Option<Credit> {
        let code = match count {
            0 => 0,
            1 => 1,
            2 => 2,
            4 => 3,
            8 => 4,
            16 => 5,
            32 => 6,
            64 => 7,
            _ => return None,
        };
        Some(Credit { mem, code })
    }

    const fn bits(self) -> u64 {
        ((self.mem as u64) << 3) | (self.code & 7) as u64
    }

    const fn from_bits(v: u64) -> Credit {
        Credit { mem: v & 8 != 0, code: (v & 7) as u8 }
    }
}

/// A protocol flit's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FlitHeader {
    /// Ak.
    pub ak: bool,
    /// BE.
    pub be: bool,
    /// Sz (64-byte transfer).
    pub sz: bool,
    /// Slot formats 0–3 (3 bits each; 111b is reserved).
    pub slots: [u8; 4],
    /// RspCrd.
    pub rsp_crd: Credit,
    /// ReqCrd.
    pub req_crd: Credit,
    /// DataCrd.
    pub data_crd: Credit,
}

/// Why a flit header does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderError {
    /// Type = 1: a control flit, read with [`super::control::ControlFlit::parse`].
    Control,
    /// A slot format of 111b (reserved in every direction).
    ReservedSlotFormat {
        /// Which slot.
        slot: u8,
    },
}

impl core::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HeaderError::Control => f.write_str("a control flit, not a protocol flit"),
            HeaderError::ReservedSlotFormat { slot } => write!(f, "slot {slot} uses the reserved format 111b"),
        }
    }
}

impl core::error::Error for HeaderError {}

const SLOTS: [F; 4] = [field::SLOT0, field::SLOT1, field::SLOT2, field::SLOT3];

impl FlitHeader {
    /// The header's four bytes (flit bytes 0–3); slot formats are masked to 3 bits.
    pub fn emit(&self) -> [u8; 4] {
        let mut w: u128 = 0;
        w |= field::AK.place(self.ak.into());
        w |= field::BE.place(self.be.into());
        w |= field::SZ.place(self.sz.into());
        for (f, s) in SLOTS.iter().zip(self.slots) {
            w |= f.place(s.into());
        }
        w |= field::RSP_CRD.place(self.rsp_crd.bits());
        w |= field::REQ_CRD.place(self.req_crd.bits());
        w |= field::DATA_CRD.place(self.data_crd.bits());
        (w as u32).to_le_bytes()
    }

    /// Reads a protocol flit's header from flit bytes 0–3.
    pub fn parse(bytes: [u8; 4]) -> Result<FlitHeader, HeaderError> {
        let w = u128::from(u32::from_le_bytes(bytes));
        if field::TYPE.is_set(w) {
            return Err(HeaderError::Control);
        }
        let mut slots = [0u8; 4];
        for (i, (f, s)) in SLOTS.iter().zip(slots.iter_mut()).enumerate() {
            *s = f.get(w) as u8;
            if *s == 0b111 {
                return Err(HeaderError::ReservedSlotFormat { slot: i as u8 });
            }
        }
        Ok(FlitHeader {
            ak: field::AK.is_set(w),
            be: field::BE.is_set(w),
            sz: field::SZ.is_set(w),
            slots,
            rsp_crd: Credit::from_bits(field::RSP_CRD.get(w)),
            req_crd: Credit::from_bits(field::REQ_CRD.get(w)),
            data_crd: Credit::from_bits(field::DATA_CRD.get(w)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bits_by_hand() {
        let h = FlitHeader {
            ak: true,
            be: false,
            sz: true,
            slots: [0b101, 0b001, 0b000, 0b011],
            rsp_crd: Credit::new(true, 4).unwrap(),
            req_crd: Credit::new(false, 64).unwrap(),
            data_crd: Credit::new(true, 1).unwrap(),
        };
        // bit 2 Ak, bit 4 Sz, [7:5] 101, [10:8] 001, [16:14] 011, [23:20] 1011, [27:24] 0111,
        // [31:28] 1001.
        let w: u32 =
            1 << 2 | 1 << 4 | 0b101 << 5 | 0b001 << 8 | 0b011 << 14 | 0b1011 << 20 | 0b0111 << 24 | 0b1001 << 28;
        assert_eq!(h.emit(), w.to_le_bytes());
        assert_eq!(FlitHeader::parse(w.to_le_bytes()), Ok(h));
        assert_eq!((h.rsp_crd.count(), h.req_crd.count(), h.data_crd.count()), (4, 64, 1));
        assert_eq!(Credit::new(false, 3), None);
        assert_eq!(FlitHeader::parse([1, 0, 0, 0]), Err(HeaderError::Control));
        assert_eq!(FlitHeader::parse([0, 0b111 << 3, 0, 0]), Err(HeaderError::ReservedSlotFormat { slot: 2 }));
        // Reserved bits 1 and 19:17 are ignored.
        assert_eq!(FlitHeader::parse([0b10, 0, 0b1110, 0]), Ok(FlitHeader::default()));
    }

    proptest! {
        #[test]
        fn round_trip(ak in any::<bool>(), be in any::<bool>(), sz in any::<bool>(), slots in proptest::array::uniform4(0..7u8),
                      c in proptest::array::uniform3((any::<bool>(), 0..8u8))) {
            let crd = c.map(|(mem, code)| Credit { mem, code });
            let h = FlitHeader { ak, be, sz, slots, rsp_crd: crd[0], req_crd: crd[1], data_crd: crd[2] };
            prop_assert_eq!(FlitHeader::parse(h.emit()), Ok(h));
        }
    }
}
