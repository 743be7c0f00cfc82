//! CRC-32C (Castagnoli) for the UET packet trailer, with the CPU's CRC instruction where the
//! build allows it.
//!
//! The trailer's CRC is reflected, with initial value and final XOR `0xFFFF_FFFF` (RFC 3720
//! §12.1, B.4; the UE reference provider's `crc32c.c`). [`crc32c`] computes it over a prefix (the
//! IP addresses and, with UDP framing, the UDP header) followed by the packet's covered bytes.
//!
//! # Backends
//!
//! Chosen at compile time; [`BACKEND`] says which one a build has.
//!
//! - [`Backend::Sse42`] on x86-64 when the build enables SSE4.2 (`-C target-cpu=x86-64-v2` or
//!   higher, or `-C target-feature=+sse4.2`): the `crc32` instruction, 8 bytes at a time in three
//!   independent streams so that its 3-cycle latency is hidden, the streams joined with
//!   precomputed shift tables: about 26 GiB/s on 4 KiB, against 3.6 GiB/s for the table and
//!   19.6 GiB/s for the `crc32c` crate's runtime-detected use of the same instruction, in one
//!   run (`cargo bench -p uet-wire --bench crc32c`).
//! - [`Backend::Table`] everywhere else (the `no_std` default, e.g. `thumbv7em-none-eabihf`): the
//!   `crc` crate's 16-table slice-by-16: 16 KiB of tables.
//! - [`Backend::SmallTable`] with the feature `small-crc` (where SSE4.2 is not enabled): the same
//!   crate a byte at a time, one 1 KiB table, for firmware that counts flash. On a Cortex-M4
//!   (QEMU, opt-level z; the repository's `firmware/` and FIRMWARE.md) the CRC of a 1 KiB packet
//!   takes 5 576 instructions with the sixteen tables and 9 272 with one.
//!
//! A build for `x86-64-v2` runs only on CPUs that have it (every x86-64 CPU since 2009); a
//! `RUSTFLAGS` environment variable replaces the `rustflags` of `.cargo/config.toml`, so set the
//! CPU level there too when both are used.
//!
//! Why compile-time selection: the library forbids `unsafe`, and a `#[target_feature]` function
//! or a `core::arch` intrinsic still needs `unsafe` at any call site that lacks the feature, even
//! when the whole build enables it (rustc 1.95). The `safe_arch` crate wraps the intrinsics as
//! safe functions that exist only when the build enables the feature, so the choice is made by
//! `cfg(target_feature)`. Runtime detection (`is_x86_feature_detected!`) would need both `std`
//! and `unsafe`. Joining the streams with carry-less multiplication (PCLMULQDQ) would be faster
//! still, but needs a feature that no `x86-64-vN` level includes; the shift tables need only
//! SSE4.2. AArch64's CRC instructions have no safe wrapper yet and use the table.
//!
//! # Joining the streams
//!
//! The CRC register is linear: running it over `A ‖ B` from register `r` gives
//! `shift(run(r, A), |B|) ^ run(0, B)`, where `shift(v, n)` multiplies `v` by `x^(8n)` modulo the
//! polynomial. `shift` by a fixed `n` is itself linear in `v`, so it is four lookups in 256-entry
//! tables (one per byte of `v`) built at compile time.

/// Which CRC-32C implementation this build uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// The x86-64 SSE4.2 `crc32` instruction in three streams.
    Sse42,
    /// The portable slice-by-16 table (`crc` crate).
    Table,
    /// The portable one-table CRC, a byte at a time (`crc` crate; feature `small-crc`).
    SmallTable,
}

/// The backend of this build.
pub const BACKEND: Backend = if cfg!(all(target_arch = "x86_64", target_feature = "sse4.2")) {
    Backend::Sse42
} else if cfg!(feature = "small-crc") {
    Backend::SmallTable
} else {
    Backend::Table
};

/// CRC-32C of `prefix ‖ covered`: initial value and final XOR `0xFFFF_FFFF`, reflected.
#[inline]
pub fn crc32c(prefix: &[u8], covered: &[u8]) -> u32 {
    !update(update(!0, prefix), covered)
}

/// Runs the CRC register `crc` (no initial or final XOR) over `bytes`.
#[inline]
fn update(crc: u32, bytes: &[u8]) -> u32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
    {
        sse42::update(crc, bytes)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.2")))]
    {
        table::update(crc, bytes)
    }
}

/// The portable backend (also the tests' reference on hosts with SSE4.2).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse4.2"))))]
mod table {
    /// The `crc` crate's CRC-32/ISCSI with the slice-by-16 table, or one table (`small-crc`).
    #[cfg(not(feature = "small-crc"))]
    const CRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);
    #[cfg(feature = "small-crc")]
    const CRC: crc::Crc<u32, crc::Table<1>> = crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISCSI);

    /// The register after `bytes`. The `crc` crate takes a reflected algorithm's initial value
    /// bit-reversed and applies the final XOR, so the register goes in reversed and comes out
    /// through the XOR.
    pub(super) fn update(crc: u32, bytes: &[u8]) -> u32 {
        let mut d = CRC.digest_with_initial(crc.reverse_bits());
        d.update(bytes);
        !d.finalize()
    }
}

/// The SSE4.2 backend: three streams of the `crc32` instruction, joined with shift tables.
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
mod sse42 {
    use safe_arch::{crc32_u8, crc32_u64};

    /// The reflected CRC-32C polynomial.
    const POLY: u32 = 0x82F6_3B78;

    /// `a · b` modulo the polynomial, both in the reflected form (`1 << 31` is `x^0`).
    pub(super) const fn mul_mod(a: u32, mut b: u32) -> u32 {
        let mut product = 0;
        let mut bit = 1u32 << 31;
        while bit != 0 {
            if a & bit != 0 {
                product ^= b;
            }
            b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
            bit >>= 1;
        }
        product
    }

    /// `x^(8n)` modulo the polynomial: the register `x^0` run over `n` zero bytes.
    pub(super) const fn x_pow_8n(n: usize) -> u32 {
        let mut r = 1u32 << 31;
        let mut i = 0;
        while i < 8 * n {
            r = if r & 1 != 0 { (r >> 1) ^ POLY } else { r >> 1 };
            i += 1;
        }
        r
    }

    /// The four byte tables of `shift(v, n)`: entry `[k][b]` is `(b << 8k) · x^(8n)`.
    #[allow(clippy::indexing_slicing, reason = "compile-time table construction, indices below 4 and 256")]
    pub(super) const fn shift_table(n: usize) -> [[u32; 256]; 4] {
        let x = x_pow_8n(n);
        let mut t = [[0; 256]; 4];
        let mut k = 0;
        while k < 4 {
            let mut b = 0;
            while b < 256 {
                t[k][b] = mul_mod((b as u32) << (8 * k), x);
                b += 1;
            }
            k += 1;
        }
        t
    }

    /// `v · x^(8n)` through the tables of `n`.
    #[inline(always)]
    #[allow(clippy::indexing_slicing, reason = "a byte indexes a 256-entry table")]
    pub(super) fn shift(t: &[[u32; 256]; 4], v: u32) -> u32 {
        let [b0, b1, b2, b3] = v.to_le_bytes();
        let [t0, t1, t2, t3] = t;
        t0[usize::from(b0)] ^ t1[usize::from(b1)] ^ t2[usize::from(b2)] ^ t3[usize::from(b3)]
    }

    /// Bytes per stream in a long round (three streams: 4 080 bytes; a packet with a 4 KiB
    /// payload takes one round and a short tail).
    const LONG: usize = 1360;
    /// Bytes per stream in a middle round (1 032 bytes in all).
    const MID: usize = 344;
    /// Bytes per stream in a short round (192 bytes in all): at most 191 bytes are left to one
    /// stream, which runs at a third of the speed.
    const SHORT: usize = 64;
    static SHIFT_LONG: [[u32; 256]; 4] = shift_table(LONG);
    static SHIFT_MID: [[u32; 256]; 4] = shift_table(MID);
    static SHIFT_SHORT: [[u32; 256]; 4] = shift_table(SHORT);

    pub(super) fn update(crc: u32, bytes: &[u8]) -> u32 {
        let (r, bytes) = rounds::<LONG>(crc, bytes, &SHIFT_LONG);
        let (r, bytes) = rounds::<MID>(r, bytes, &SHIFT_MID);
        let (r, bytes) = rounds::<SHORT>(r, bytes, &SHIFT_SHORT);
        one_stream(r, bytes)
    }

    /// As many rounds of `3 * N` bytes as `bytes` holds: the register after them, and the rest.
    #[inline(always)]
    fn rounds<'a, const N: usize>(mut r: u32, mut bytes: &'a [u8], shift_n: &[[u32; 256]; 4]) -> (u32, &'a [u8]) {
        while let Some((round, rest)) = bytes.split_at_checked(3 * N) {
            r = three_streams::<N>(r, round, shift_n);
            bytes = rest;
        }
        (r, bytes)
    }

    /// The register after `round` (`3 * N` bytes): three streams of `N` bytes, joined.
    #[inline(always)]
    fn three_streams<const N: usize>(r: u32, round: &[u8], shift_n: &[[u32; 256]; 4]) -> u32 {
        let (a, bc) = round.split_at(N.min(round.len()));
        let (b, c) = bc.split_at(N.min(bc.len()));
        let (mut ra, mut rb, mut rc) = (u64::from(r), 0u64, 0u64);
        for ((wa, wb), wc) in a.chunks_exact(8).zip(b.chunks_exact(8)).zip(c.chunks_exact(8)) {
            ra = crc32_u64(ra, word(wa));
            rb = crc32_u64(rb, word(wb));
            rc = crc32_u64(rc, word(wc));
        }
        // The instruction leaves the upper half of each register zero.
        shift(shift_n, shift(shift_n, ra as u32) ^ rb as u32) ^ rc as u32
    }

    /// The register after `bytes`, 8 bytes per instruction, then byte by byte.
    #[inline(always)]
    fn one_stream(r: u32, bytes: &[u8]) -> u32 {
        let mut r = u64::from(r);
        let words = bytes.chunks_exact(8);
        let tail = words.remainder();
        for w in words {
            r = crc32_u64(r, word(w));
        }
        let mut r = r as u32;
        for &b in tail {
            r = crc32_u8(r, b);
        }
        r
    }

    /// An 8-byte chunk as the little-endian word the instruction takes.
    #[inline(always)]
    fn word(chunk: &[u8]) -> u64 {
        let mut w = [0; 8];
        w.copy_from_slice(chunk);
        u64::from_le_bytes(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bit by bit, straight from the definition (reflected polynomial 0x82F63B78).
    fn bitwise(bytes: &[u8]) -> u32 {
        const POLY: u32 = 0x82F6_3B78;
        let mut r = !0u32;
        for &b in bytes {
            r ^= u32::from(b);
            for _ in 0..8 {
                r = if r & 1 != 0 { (r >> 1) ^ POLY } else { r >> 1 };
            }
        }
        !r
    }

    #[test]
    fn rfc3720_vectors() {
        // RFC 3720 §B.4: 32 bytes of zeros, of ones, ascending, descending.
        let ascending: [u8; 32] = core::array::from_fn(|i| i as u8);
        let descending: [u8; 32] = core::array::from_fn(|i| 31 - i as u8);
        let cases =
            [([0u8; 32], 0x8A91_36AA), ([0xFF; 32], 0x62A8_AB43), (ascending, 0x46DD_794E), (descending, 0x113F_DB5C)];
        for (bytes, want) in cases {
            assert_eq!(crc32c(&[], &bytes), want);
            assert_eq!(!table::update(!0, &bytes), want);
            assert_eq!(bitwise(&bytes), want);
            // The one-table form `small-crc` selects.
            assert_eq!(crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISCSI).checksum(&bytes), want);
        }
        assert_eq!(crc32c(b"1234", b"56789"), 0xE306_9283, "the catalogue's check value");
    }

    #[cfg(all(target_arch = "x86_64", target_feature = "sse4.2"))]
    #[test]
    fn shift_tables_multiply_by_x_pow_8n() {
        use sse42::{shift, shift_table};
        // Running over n zero bytes is the shift by n.
        for n in [1, 8, 64, 344, 1360] {
            let t = shift_table(n);
            for v in [1u32, 0x8000_0000, 0xDEAD_BEEF, 0xFFFF_FFFF] {
                assert_eq!(shift(&t, v), table::update(v, &std::vec![0; n]), "n = {n}");
            }
        }
    }

    #[test]
    fn every_length_to_9_kib_matches_the_table() {
        // Lengths across every round boundary of the three-stream backend, from odd offsets.
        let bytes: std::vec::Vec<u8> =
            (0..9 * 1024 + 16).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let edges = [3 * 1360, 3 * 1360 + 1032 + 192, 1032, 1031, 1033, 192, 191, 193, 4096, 4152, 9000];
        for len in (0..=9 * 1024).step_by(7).chain(edges) {
            for start in [0, 1, 5] {
                let b = &bytes[start..start + len];
                assert_eq!(crc32c(&[], b), !table::update(!0, b), "length {len} from {start}");
            }
        }
    }

    proptest! {
        #[test]
        fn backend_matches_table(bytes in proptest::collection::vec(any::<u8>(), 0..9 * 1024), cut in any::<prop::sample::Index>()) {
            let at = cut.index(bytes.len() + 1);
            let (prefix, covered) = bytes.split_at(at);
            prop_assert_eq!(crc32c(prefix, covered), !table::update(!0, &bytes));
            prop_assert_eq!(crc32c(prefix, covered), bitwise(&bytes));
        }
    }
}
