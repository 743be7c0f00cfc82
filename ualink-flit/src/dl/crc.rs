//! The DL flit CRC (UALink 1.0 §6.3.7).
//!
//! The specification fixes: the IEEE 802.3 clause 3.2.9 FCS (CRC-32, G(x) = 0x04C11DB7, register
//! preset to ones, result complemented), over the whole 640-byte flit with the CRC field taken as
//! zero; sent x0 first, the reverse of the 802.3 FCS order, with `CRC[0]` holding x0..x7.
//!
//! *Project-defined*, here only: the input is the flit in physical byte order 0..639, each byte
//! least significant bit first as in 802.3; and bit `i` of `CRC[k]` is the coefficient of
//! x^(8k + i), so x0 goes out first on the LSB-first lanes. In terms of the usual reflected
//! CRC-32/ISO-HDLC value `v` (whose bit `j` is the coefficient of x^(31 − j)), the four bytes are
//! `v.reverse_bits().to_le_bytes()`.
//!
//! **Backends**, chosen by feature (time per 640-byte flit in `BENCHMARKS.md`, `crc/`):
//!
//! | feature | backend | tables in flash |
//! |---|---|---|
//! | (none) | `crc` crate, slice-by-16 | 16 KiB + 1 KiB |
//! | `small-crc` | `crc` crate, a byte at a time | 1 KiB |
//! | `simd-crc` (hosts with `std`; wins over `small-crc`) | libdeflate, carry-less multiply | 1 KiB |

use super::layout::{CRC_AT, FLIT_LEN};

/// The one-table CRC: the whole CRC with `small-crc`, and in every build the correction term.
const SMALL: crc::Crc<u32, crc::Table<1>> = crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);

/// The default portable backend (with `simd-crc` or `small-crc`, the tests' reference).
#[cfg(any(all(not(feature = "simd-crc"), not(feature = "small-crc")), test))]
const ISO_HDLC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);

/// The same polynomial and bit order with no preset and no final complement (`flit_crc`'s
/// correction term): [`SMALL`] started from a zero register, its final complement undone.
fn raw(bytes: &[u8]) -> u32 {
    let mut d = SMALL.digest_with_initial(0);
    d.update(bytes);
    d.finalize() ^ 0xFFFF_FFFF
}

/// The CRC bytes CRC0..CRC3 of a flit (§6.3.7: over the whole flit with the CRC field taken as
/// zero), in one pass over the flit as it stands.
///
/// Why one pass is enough: the CRC register is affine in the message bits. For messages of one
/// length, `crc(M) = L(M) ^ K`, with `L` linear and `K` fixed by the preset and the final
/// complement. The flit as received, `M_F`, and the flit with a zero CRC field, `M_0`, differ
/// only in those last four bytes, so `crc(M_0) = crc(M_F) ^ L(0…0 ‖ F)`; and `L(0…0 ‖ F)` is
/// the CRC of `F` alone with no preset and no complement (`RAW` here), since leading zeros leave a
/// zero register at zero. A framed flit's field is still zero, and the term drops out. (Streaming
/// the 636 bytes and then four zeros through the CRC is measurably slower: `BENCHMARKS.md`.)
pub fn flit_crc(flit: &[u8; FLIT_LEN]) -> [u8; 4] {
    let field = flit.get(CRC_AT..).and_then(|b| b.first_chunk::<4>()).copied().unwrap_or([0; 4]);
    let mut v = iso_hdlc(flit);
    if field != [0; 4] {
        v ^= raw(&field);
    }
    v.reverse_bits().to_le_bytes()
}

/// CRC-32/ISO-HDLC of `bytes`: the portable slice-by-16 backend.
#[cfg(all(not(feature = "simd-crc"), not(feature = "small-crc")))]
fn iso_hdlc(bytes: &[u8]) -> u32 {
    ISO_HDLC.checksum(bytes)
}

/// CRC-32/ISO-HDLC of `bytes`: the one-table backend (`small-crc` feature).
#[cfg(all(not(feature = "simd-crc"), feature = "small-crc"))]
fn iso_hdlc(bytes: &[u8]) -> u32 {
    SMALL.checksum(bytes)
}

/// CRC-32/ISO-HDLC of `bytes`: the SIMD backend (`simd-crc` feature).
#[cfg(feature = "simd-crc")]
fn iso_hdlc(bytes: &[u8]) -> u32 {
    libdeflater::crc32(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backend is the 802.3 CRC: the standard check value of CRC-32/ISO-HDLC, from either
    /// backend, equal to the table's on a whole flit.
    #[test]
    fn backend_is_the_802_3_crc() {
        assert_eq!(ISO_HDLC.checksum(b"123456789"), 0xCBF4_3926);
        assert_eq!(iso_hdlc(b"123456789"), 0xCBF4_3926);
        let flit: [u8; FLIT_LEN] = core::array::from_fn(|i| (i * 13) as u8);
        assert_eq!(iso_hdlc(&flit), ISO_HDLC.checksum(&flit));
    }

    /// The correction term is the no-preset CRC (its standard check value).
    #[test]
    fn the_correction_term_is_the_no_preset_crc() {
        assert_eq!(raw(b"123456789"), 0x2DFD_2D88);
    }

    /// The one-pass form equals the definition: the CRC of the 636 covered bytes followed by
    /// four zeros, whatever the field holds.
    #[test]
    fn one_pass_equals_a_zeroed_field() {
        let mut flit: [u8; FLIT_LEN] = core::array::from_fn(|i| (i * 29 + 5) as u8);
        let mut zeroed = flit;
        zeroed[CRC_AT..].fill(0);
        let want = ISO_HDLC.checksum(&zeroed).reverse_bits().to_le_bytes();
        for field in [[0u8; 4], [1, 0, 0, 0], [0, 0, 0, 0x80], [0xFF; 4], [0x12, 0x34, 0x56, 0x78]] {
            flit[CRC_AT..].copy_from_slice(&field);
            assert_eq!(flit_crc(&flit), want, "field {field:02x?}");
        }
    }

    /// Placement: a flit of zeros, and a change in any byte changes the CRC.
    #[test]
    fn crc_bytes_follow_the_documented_order() {
        let zero = [0u8; FLIT_LEN];
        let v = ISO_HDLC.checksum(&zero);
        assert_eq!(flit_crc(&zero), v.reverse_bits().to_le_bytes());
        let mut f = zero;
        f[CRC_AT] = 0xFF; // the CRC field itself does not count
        assert_eq!(flit_crc(&f), flit_crc(&zero));
        f[0] = 1;
        assert_ne!(flit_crc(&f), flit_crc(&zero));
    }
}
