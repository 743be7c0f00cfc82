//! The 68B flit's CRC-16 (CXL 3.x §4.2.8.7).
//!
//! The specification defines `CRC[i] = XOR(DM[i][511:0] & Flit[511:0])` with sixteen 512-bit
//! data masks for the polynomial 1F053h (x^16 + x^15 + x^14 + x^13 + x^12 + x^6 + x^4 + x + 1).
//! Every mask column j equals x^(j+16) mod G, so the CRC is a most-significant-bit-first LFSR:
//! polynomial 0x1F053, initial value 0, no final XOR, fed flit bit 511 first down to bit 0 —
//! byte 63 first, each byte bit 7 first. That is the `crc` crate's algorithm ([`ALGORITHM`])
//! over the flit's bytes in reverse order. The CRC sits in flit bits 527:512.
//!
//! *Project-defined:* byte 64 carries CRC\[7:0\] and byte 65 CRC\[15:8\], following the
//! bit-numbering convention above; no source states the byte placement.

/// The 68B flit CRC for the `crc` crate, fed the flit's bytes from byte 63 down to byte 0:
/// polynomial 0x1F053 (the x^16 term implied), initial value 0, most significant bit first, no
/// final XOR. `check` is the CRC of the nine bytes `"123456789"`.
pub const ALGORITHM: crc::Algorithm<u16> = crc::Algorithm {
    width: 16,
    poly: 0xF053,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x3B99,
    residue: 0,
};

/// Bytes the CRC covers (flit bits 511:0).
pub const COVERED: usize = 64;
/// Bytes of a flit with its CRC.
pub const FLIT_LEN: usize = 66;

/// The slice-by-16 tables (8 KiB), or one table (512 B) with the feature `small-crc`, for
/// firmware that counts flash (instructions per flit on a Cortex-M4: FIRMWARE.md).
#[cfg(not(feature = "small-crc"))]
const CRC: crc::Crc<u16, crc::Table<16>> = crc::Crc::<u16, crc::Table<16>>::new(&ALGORITHM);
#[cfg(feature = "small-crc")]
const CRC: crc::Crc<u16, crc::Table<1>> = crc::Crc::<u16, crc::Table<1>>::new(&ALGORITHM);

/// The CRC of flit bits 511:0.
pub fn crc(flit: &[u8; COVERED]) -> u16 {
    let mut reversed = *flit;
    reversed.reverse();
    CRC.checksum(&reversed)
}

/// Bytes 0–63 of a flit: what the packer fills and the unpacker reads.
pub fn body(flit: &[u8; FLIT_LEN]) -> &[u8; COVERED] {
    let (body, _) = flit.split_first_chunk::<COVERED>().unwrap_or((&[0; COVERED], &[]));
    body
}

/// Computes the CRC of `flit`'s first 64 bytes and writes it into bytes 64–65.
pub fn seal(flit: &mut [u8; FLIT_LEN]) {
    let (covered, tail) = flit.split_at_mut(COVERED);
    let mut body = [0u8; COVERED];
    body.copy_from_slice(covered);
    tail.copy_from_slice(&crc(&body).to_le_bytes());
}

/// A flit whose CRC does not match its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CrcError {
    /// The CRC of bytes 0–63.
    pub computed: u16,
    /// The CRC in bytes 64–65.
    pub received: u16,
}

impl core::fmt::Display for CrcError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "68B flit CRC {:#06x} received, {:#06x} computed", self.received, self.computed)
    }
}

impl core::error::Error for CrcError {}

/// Whether `flit`'s CRC (bytes 64–65) matches its first 64 bytes.
pub fn check(flit: &[u8; FLIT_LEN]) -> Result<(), CrcError> {
    let (covered, tail) = flit.split_at(COVERED);
    let mut body = [0u8; COVERED];
    body.copy_from_slice(covered);
    let computed = crc(&body);
    let received = u16::from_le_bytes([tail.first().copied().unwrap_or(0), tail.get(1).copied().unwrap_or(0)]);
    if computed == received { Ok(()) } else { Err(CrcError { computed, received }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The specification's definition: CRC bit i is the parity of the flit ANDed with data
    /// mask i, whose column j is x^(j+16) mod G (computed here by long division, bit by bit).
    fn by_masks(flit: &[u8; 64]) -> u16 {
        let column = |j: usize| -> u16 {
            // x^(j+16) mod G, G = 0x1F053.
            let mut r: u32 = 1;
            for _ in 0..j + 16 {
                r <<= 1;
                if r & 0x1_0000 != 0 {
                    r ^= 0x1_F053;
                }
            }
            r as u16
        };
        let mut crc = 0u16;
        for j in 0..512 {
            if flit[j / 8] >> (j % 8) & 1 == 1 {
                crc ^= column(j);
            }
        }
        crc
    }

    /// The one-table form the feature `small-crc` selects.
    fn one_table(flit: &[u8; 64]) -> u16 {
        let mut reversed = *flit;
        reversed.reverse();
        crc::Crc::<u16, crc::Table<1>>::new(&ALGORITHM).checksum(&reversed)
    }

    #[test]
    fn the_five_vectors() {
        let ramp: [u8; 64] = core::array::from_fn(|i| i as u8);
        let mut first = [0u8; 64];
        first[0] = 0x01;
        let mut last = [0u8; 64];
        last[63] = 0x80;
        let vectors = [([0u8; 64], 0x0000), (first, 0xF053), (last, 0xC47D), ([0xFF; 64], 0x7856), (ramp, 0xABF7)];
        for (flit, want) in vectors {
            assert_eq!(crc(&flit), want);
            assert_eq!(one_table(&flit), want);
        }
        assert_eq!(crc::Crc::<u16>::new(&ALGORITHM).checksum(b"123456789"), ALGORITHM.check);
    }

    #[test]
    fn seal_and_check() {
        let mut flit = [0u8; 66];
        flit[..64].copy_from_slice(&core::array::from_fn::<u8, 64, _>(|i| i as u8));
        seal(&mut flit);
        assert_eq!(flit[64..], 0xABF7u16.to_le_bytes());
        assert_eq!(check(&flit), Ok(()));
        flit[10] ^= 4;
        assert!(check(&flit).is_err());
    }

    proptest! {
        /// The table implementation is the specification's data-mask definition.
        #[test]
        fn table_is_the_data_masks(bytes in proptest::collection::vec(any::<u8>(), 64)) {
            let flit: [u8; 64] = bytes.try_into().unwrap();
            prop_assert_eq!(crc(&flit), by_masks(&flit));
            prop_assert_eq!(one_table(&flit), by_masks(&flit));
        }
    }
}
