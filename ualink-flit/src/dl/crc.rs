//! The DL flit CRC (UALink 1.0 §6.3.7; digest `shared/spec/ualink-ethx.md` §1.4, open question 4).
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

use super::layout::{CRC_AT, FLIT_LEN};

/// The portable table backend (with `simd-crc`, the tests' reference).
#[cfg(any(not(feature = "simd-crc"), test))]
const ISO_HDLC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);

/// The CRC bytes CRC0..CRC3 of a flit (its own CRC field is read as zero). When the field is
/// zero already (as when framing), the flit is read in one pass.
pub fn flit_crc(flit: &[u8; FLIT_LEN]) -> [u8; 4] {
    let (covered, field) = flit.split_at(CRC_AT);
    let v = if field == [0; 4] { iso_hdlc(flit, &[]) } else { iso_hdlc(covered, &[0; 4]) };
    v.reverse_bits().to_le_bytes()
}

/// CRC-32/ISO-HDLC of `a` followed by `b`: the portable table backend.
#[cfg(not(feature = "simd-crc"))]
fn iso_hdlc(a: &[u8], b: &[u8]) -> u32 {
    let mut d = ISO_HDLC.digest();
    d.update(a);
    d.update(b);
    d.finalize()
}

/// CRC-32/ISO-HDLC of `a` followed by `b`: the SIMD backend (`simd-crc` feature).
#[cfg(feature = "simd-crc")]
fn iso_hdlc(a: &[u8], b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(a);
    h.update(b);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backend is the 802.3 CRC: the standard check value of CRC-32/ISO-HDLC, from either
    /// backend, equal to the table's on a whole flit.
    #[test]
    fn backend_is_the_802_3_crc() {
        assert_eq!(ISO_HDLC.checksum(b"123456789"), 0xCBF4_3926);
        assert_eq!(iso_hdlc(b"12345", b"6789"), 0xCBF4_3926);
        let flit: [u8; FLIT_LEN] = core::array::from_fn(|i| (i * 13) as u8);
        assert_eq!(iso_hdlc(&flit, &[]), ISO_HDLC.checksum(&flit));
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
