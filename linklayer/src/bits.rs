//! The one bit-field helper for bit-packed formats.
//!
//! Formats whose fields do not sit on byte boundaries (flits, CtlOS payloads, packed counters)
//! describe each field once as a [`BitField`] constant in a per-format `field` table, and read and
//! write it through [`BitField::get`] and [`BitField::set`], never through shifts scattered over the
//! code.
//!
//! Two numberings, one per way specifications draw their formats:
//!
//! * [`BitField`]: network order over bytes. Bit 0 is the most significant bit of byte 0, and a
//!   field's bits are read from its first (most significant) bit to its last.
//! * [`WordField`]: positions `[hi:lo]` within an integer value, bit 0 least significant, as
//!   UALink's control fields (UALink 1.0 Tables 5-29 … 5-38) and PCIe-style flit headers give
//!   them. The format says once how its bytes make the value (little-endian for UALink TL
//!   fields); every field is then a constant written as the specification's table writes it.

use crate::Error;

/// A field of `width` bits that starts `bit` bits from the most significant bit of byte 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BitField {
    /// Offset of the field's most significant bit from the start of the buffer.
    pub bit: usize,
    /// Width in bits, 1..=64.
    pub width: u32,
}

impl BitField {
    /// A field of `width` bits at `bit`.
    pub const fn new(bit: usize, width: u32) -> Self {
        BitField { bit, width }
    }

    /// The bit just past the field.
    pub const fn end(self) -> usize {
        self.bit.saturating_add(self.width as usize)
    }

    /// Bytes a buffer needs to hold the field.
    pub const fn bytes_needed(self) -> usize {
        self.end().div_ceil(8)
    }

    /// The largest value the field holds.
    pub const fn max_value(self) -> u64 {
        if self.width >= 64 { u64::MAX } else { (1u64 << self.width) - 1 }
    }

    fn span(self, len: usize) -> Result<(usize, usize, u32), Error> {
        if self.width == 0 || self.width > 64 {
            return Err(Error::BadValue { field: "bit-field width", value: self.width });
        }
        let end = self
            .bit
            .checked_add(self.width as usize)
            .ok_or(Error::BadValue { field: "bit-field position", value: u32::MAX })?;
        let needed = end.div_ceil(8);
        if len < needed {
            return Err(Error::Truncated { needed, got: len });
        }
        let first = self.bit / 8;
        // Bits between the field's end and the end of its last byte.
        let shift = ((8 - end % 8) % 8) as u32;
        Ok((first, needed, shift))
    }

    /// Reads the field from `bytes`.
    pub fn get(self, bytes: &[u8]) -> Result<u64, Error> {
        let (first, end, shift) = self.span(bytes.len())?;
        let span = bytes.get(first..end).ok_or(Error::Truncated { needed: end, got: bytes.len() })?;
        let acc = span.iter().fold(0u128, |acc, &b| (acc << 8) | u128::from(b));
        Ok(((acc >> shift) as u64) & self.max_value())
    }

    /// Writes `value` into the field, leaving every other bit of `bytes` unchanged.
    pub fn set(self, bytes: &mut [u8], value: u64) -> Result<(), Error> {
        if value > self.max_value() {
            return Err(Error::BadValue { field: "bit-field value", value: value as u32 });
        }
        let len = bytes.len();
        let (first, end, shift) = self.span(len)?;
        let span = bytes.get_mut(first..end).ok_or(Error::Truncated { needed: end, got: len })?;
        let acc = span.iter().fold(0u128, |acc, &b| (acc << 8) | u128::from(b));
        let mask = u128::from(self.max_value()) << shift;
        let acc = (acc & !mask) | (u128::from(value) << shift);
        let n = span.len();
        for (i, b) in span.iter_mut().enumerate() {
            *b = (acc >> (8 * (n - 1 - i))) as u8;
        }
        Ok(())
    }
}

/// A field of an integer value (up to 128 bits): `width` bits from bit `lo`, bit 0 least
/// significant. Written as the specification writes it: [`WordField::bits`]`(hi, lo)` for
/// `[hi:lo]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WordField {
    /// The least significant bit.
    pub lo: u32,
    /// Width in bits, 1..=64.
    pub width: u32,
}

impl WordField {
    /// The field `[hi:lo]` (`hi >= lo`, at most 64 bits wide, within 128 bits).
    ///
    /// # Panics
    ///
    /// On bounds outside these: the fields of a format are constants, where that is a compile
    /// error, never a run-time one.
    pub const fn bits(hi: u32, lo: u32) -> Self {
        assert!(hi >= lo && hi - lo < 64 && hi < 128, "a field [hi:lo] of 1..=64 bits within 128");
        WordField { lo, width: hi - lo + 1 }
    }

    /// The one-bit field `[bit]`.
    pub const fn bit(bit: u32) -> Self {
        Self::bits(bit, bit)
    }

    /// The largest value the field holds.
    pub const fn max_value(self) -> u64 {
        if self.width >= 64 { u64::MAX } else { (1u64 << self.width) - 1 }
    }

    /// The field's value in `w`.
    #[inline(always)]
    pub const fn get(self, w: u128) -> u64 {
        // A field beyond bit 127 (possible only through the public fields) reads as zero.
        match w.checked_shr(self.lo) {
            Some(v) => v as u64 & self.max_value(),
            None => 0,
        }
    }

    /// Whether the field's bits of `w` are set (for one-bit fields: the flag).
    #[inline(always)]
    pub const fn is_set(self, w: u128) -> bool {
        self.get(w) != 0
    }

    /// Whether `v` fits the field.
    pub const fn fits(self, v: u64) -> bool {
        v <= self.max_value()
    }

    /// `v` at the field's place; bits of `v` beyond the width are dropped, never spilled into a
    /// neighbour (check with [`Self::fits`] first where `v` comes from outside).
    #[inline(always)]
    pub const fn place(self, v: u64) -> u128 {
        match ((v & self.max_value()) as u128).checked_shl(self.lo) {
            Some(w) => w,
            None => 0,
        }
    }

    /// The mask of the field's bits.
    pub const fn mask(self) -> u128 {
        self.place(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_msb_first() {
        let b = [0b1010_1100, 0b0101_0011, 0xFF];
        assert_eq!(BitField::new(0, 1).get(&b).unwrap(), 1);
        assert_eq!(BitField::new(1, 3).get(&b).unwrap(), 0b010);
        assert_eq!(BitField::new(4, 8).get(&b).unwrap(), 0b1100_0101);
        assert_eq!(BitField::new(0, 24).get(&b).unwrap(), 0xAC53FF);
        assert_eq!(BitField::new(20, 4).get(&b).unwrap(), 0xF);
    }

    #[test]
    fn rejects_short_buffers_and_bad_widths() {
        let b = [0u8; 2];
        assert_eq!(BitField::new(9, 8).get(&b), Err(Error::Truncated { needed: 3, got: 2 }));
        assert!(BitField::new(0, 0).get(&b).is_err());
        assert!(BitField::new(0, 65).get(&[0; 16]).is_err());
        let mut b = [0u8; 4];
        assert!(BitField::new(0, 4).set(&mut b, 16).is_err());
        assert_eq!(b, [0; 4]);
    }

    #[test]
    fn full_width_fields() {
        let mut b = [0u8; 9];
        let f = BitField::new(3, 64);
        f.set(&mut b, u64::MAX).unwrap();
        assert_eq!(f.get(&b).unwrap(), u64::MAX);
        assert_eq!(b[0], 0b0001_1111);
        assert_eq!(b[8], 0b1110_0000);
    }

    #[test]
    fn word_fields_are_numbered_as_the_tables_write_them() {
        // UALink Table 5-29: FTYPE [127:124], TAG [113:103], NUMBEATS [1:0].
        let ftype = WordField::bits(127, 124);
        let tag = WordField::bits(113, 103);
        assert_eq!((ftype.lo, ftype.width, tag.width), (124, 4, 11));
        let w = ftype.place(0x1) | tag.place(0x7FF) | WordField::bits(1, 0).place(3);
        assert_eq!(w, 1 << 124 | 0x7FF << 103 | 3);
        assert_eq!((ftype.get(w), tag.get(w)), (1, 0x7FF));
        assert_eq!(tag.mask(), 0x7FF << 103);
        assert!(WordField::bit(4).fits(1) && !WordField::bit(4).fits(2));
        // A value too wide is cut to the field, never spilled.
        assert_eq!(WordField::bits(5, 4).place(0xFF), 0b11 << 4);
        assert_eq!(WordField::bits(63, 0).get(u128::MAX), u64::MAX);
    }

    proptest! {
        #[test]
        fn word_field_place_then_get(lo in 0u32..64, width in 1u32..=64, v in any::<u64>(), w in any::<u128>()) {
            let f = WordField::bits(lo + width - 1, lo);
            let v = v & f.max_value();
            let w2 = (w & !f.mask()) | f.place(v);
            prop_assert_eq!(f.get(w2), v);
            prop_assert_eq!(w2 & !f.mask(), w & !f.mask());
        }

        #[test]
        fn set_then_get_round_trips(bit in 0usize..64, width in 1u32..=64, value in any::<u64>(), fill in any::<u8>()) {
            let f = BitField::new(bit, width);
            let value = value & f.max_value();
            let mut bytes = [fill; 17];
            let before = bytes;
            f.set(&mut bytes, value).unwrap();
            prop_assert_eq!(f.get(&bytes).unwrap(), value);
            // No bit outside the field changed.
            for i in 0..bytes.len() * 8 {
                if i < f.bit || i >= f.end() {
                    let bit_of = |b: &[u8; 17]| (b[i / 8] >> (7 - i % 8)) & 1;
                    prop_assert_eq!(bit_of(&bytes), bit_of(&before));
                }
            }
        }
    }
}
