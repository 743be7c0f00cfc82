//! Where every byte of a 640-byte DL flit sits (UALink 1.0 §6.3, Figure 6-4; digest
//! `shared/spec/ualink-ethx.md` §1.4, open question 5).
//!
//! The flit is 40 rows of 16 bytes, sent row by row, byte 0 first. Most rows hold four whole
//! payload sectors (4 bytes each, in order). Nine rows start with a special 4-byte word that holds
//! the bytes of a sector split across rows, a segment header, the flit header or the CRC; the rest
//! of such a row holds the next three sectors. The resulting places are:
//!
//! * segment headers SH0..SH4 at bytes 67, 195, 323, 451, 579;
//! * flit header FH0..FH2 at 624..626;
//! * CRC0..CRC3 at 636..639;
//! * the 628 payload bytes (157 sectors) everywhere else, in the order [`PAYLOAD_AT`] gives.
//!
//! The table is built at compile time from the row list transcribed from Figure 6-4, and the
//! tests check it against that list. [`RUNS`] is the same mapping as runs of consecutive bytes, so
//! framing copies about 50 slices instead of 628 single bytes.

/// Bytes in a DL flit.
pub const FLIT_LEN: usize = 640;
/// Payload bytes in a DL flit (157 sectors of 4 bytes).
pub const PAYLOAD_LEN: usize = 628;
/// Payload sectors in a DL flit.
pub const SECTORS: usize = 157;
/// Byte offset of segment header SHk.
pub const SEGMENT_HEADER_AT: [usize; 5] = [67, 195, 323, 451, 579];
/// Byte offset of FH0 (FH1 and FH2 follow).
pub const FLIT_HEADER_AT: usize = 624;
/// Byte offset of CRC0 (CRC1..CRC3 follow).
pub const CRC_AT: usize = 636;

/// What one byte of a special word holds.
#[derive(Clone, Copy)]
enum Slot {
    /// Byte `b` of payload sector `s`.
    Sector(u8, u8),
    /// A segment or flit header, or CRC byte: not payload.
    Other,
}

/// The special first words of rows 4, 8, …, 36 and 39 (Figure 6-4).
const SPECIAL: [(usize, [Slot; 4]); 9] = {
    use Slot::{Other as O, Sector as S};
    [
        (4, [S(31, 0), S(31, 1), S(31, 2), O]),
        (8, [S(47, 0), S(47, 1), S(47, 2), S(31, 3)]),
        (12, [S(63, 0), S(63, 1), S(47, 3), O]),
        (16, [S(79, 0), S(79, 1), S(63, 2), S(63, 3)]),
        (20, [S(95, 0), S(79, 2), S(79, 3), O]),
        (24, [S(111, 0), S(95, 1), S(95, 2), S(95, 3)]),
        (28, [S(111, 1), S(111, 2), S(111, 3), O]),
        (36, [S(156, 0), S(156, 1), S(156, 2), O]),
        (39, [O, O, O, S(156, 3)]),
    ]
};

/// Sectors split across special words (placed by [`SPECIAL`], skipped by the row filler).
const fn is_split(s: usize) -> bool {
    matches!(s, 31 | 47 | 63 | 79 | 95 | 111 | 156)
}

// The builders below run only at compile time: an index out of range fails the build.
#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn build_payload_at() -> [u16; PAYLOAD_LEN] {
    let mut at = [0u16; PAYLOAD_LEN];
    let mut next = 0usize;
    let mut row = 0;
    while row < FLIT_LEN / 16 {
        let base = row * 16;
        let mut col = 0;
        let mut k = 0;
        while k < SPECIAL.len() {
            if SPECIAL[k].0 == row {
                let mut b = 0;
                while b < 4 {
                    if let Slot::Sector(s, i) = SPECIAL[k].1[b] {
                        at[s as usize * 4 + i as usize] = (base + b) as u16;
                    }
                    b += 1;
                }
                col = 4;
            }
            k += 1;
        }
        // Row 39 ends with two sectors and the CRC.
        let end = if row == FLIT_LEN / 16 - 1 { 12 } else { 16 };
        while col < end {
            while is_split(next) {
                next += 1;
            }
            let mut b = 0;
            while b < 4 {
                at[next * 4 + b] = (base + col + b) as u16;
                b += 1;
            }
            next += 1;
            col += 4;
        }
        row += 1;
    }
    at
}

/// `PAYLOAD_AT[i]`: the flit byte that holds payload byte `i` (sector `i / 4`, byte `i % 4`).
pub const PAYLOAD_AT: [u16; PAYLOAD_LEN] = build_payload_at();

/// A run of payload bytes that are consecutive in the flit too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// First payload byte.
    pub payload: u16,
    /// Its flit byte.
    pub flit: u16,
    /// Bytes.
    pub len: u16,
}

#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn count_runs() -> usize {
    let mut n = 1;
    let mut i = 1;
    while i < PAYLOAD_LEN {
        if PAYLOAD_AT[i] != PAYLOAD_AT[i - 1] + 1 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// How many runs [`RUNS`] has.
pub const RUN_COUNT: usize = count_runs();

#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn build_runs() -> [Run; RUN_COUNT] {
    let mut runs = [Run { payload: 0, flit: 0, len: 0 }; RUN_COUNT];
    let mut r = 0;
    runs[0] = Run { payload: 0, flit: PAYLOAD_AT[0], len: 1 };
    let mut i = 1;
    while i < PAYLOAD_LEN {
        if PAYLOAD_AT[i] == PAYLOAD_AT[i - 1] + 1 {
            runs[r].len += 1;
        } else {
            r += 1;
            runs[r] = Run { payload: i as u16, flit: PAYLOAD_AT[i], len: 1 };
        }
        i += 1;
    }
    runs
}

/// [`PAYLOAD_AT`] as runs of consecutive bytes, in payload order.
pub const RUNS: [Run; RUN_COUNT] = build_runs();

// Figure 6-4 gives 21 runs; the copies below are unrolled for exactly those.
const _: () = assert!(RUN_COUNT == 21, "the unrolled copies below expect 21 runs");

/// Copies `N` bytes from `src[s..]` to `dst[d..]`; with constant offsets the bounds checks fold
/// away and the copy becomes a few vector moves.
#[inline(always)]
fn copy_run<const N: usize>(dst: &mut [u8], d: usize, src: &[u8], s: usize) {
    if let (Some(to), Some(from)) = (dst.get_mut(d..d + N), src.get(s..s + N)) {
        to.copy_from_slice(from);
    }
}

/// Puts the 628 payload bytes (sector order) where Figure 6-4 places them in `flit`.
#[inline]
pub fn place_payload(payload: &[u8; PAYLOAD_LEN], flit: &mut [u8; FLIT_LEN]) {
    #[inline(always)]
    fn run<const N: usize>(payload: &[u8; PAYLOAD_LEN], flit: &mut [u8; FLIT_LEN], k: usize) {
        if let Some(r) = RUNS.get(k) {
            copy_run::<N>(flit, usize::from(r.flit), payload, usize::from(r.payload));
        }
    }
    macro_rules! go {
        ($($k:literal)*) => { $( run::<{ RUNS[$k].len as usize }>(payload, flit, $k); )* };
    }
    go!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20);
}

/// Reads the 628 payload bytes out of `flit` into sector order.
#[inline]
pub fn gather_payload(flit: &[u8; FLIT_LEN], payload: &mut [u8; PAYLOAD_LEN]) {
    #[inline(always)]
    fn run<const N: usize>(flit: &[u8; FLIT_LEN], payload: &mut [u8; PAYLOAD_LEN], k: usize) {
        if let Some(r) = RUNS.get(k) {
            copy_run::<N>(payload, usize::from(r.payload), flit, usize::from(r.flit));
        }
    }
    macro_rules! go {
        ($($k:literal)*) => { $( run::<{ RUNS[$k].len as usize }>(flit, payload, $k); )* };
    }
    go!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flit byte is used once: payload, five segment headers, three flit-header bytes,
    /// four CRC bytes.
    #[test]
    fn every_byte_has_one_use() {
        let mut used = [0u8; FLIT_LEN];
        for &p in &PAYLOAD_AT {
            used[usize::from(p)] += 1;
        }
        for sh in SEGMENT_HEADER_AT {
            used[sh] += 1;
        }
        for u in &mut used[FLIT_HEADER_AT..FLIT_HEADER_AT + 3] {
            *u += 1;
        }
        for u in &mut used[CRC_AT..CRC_AT + 4] {
            *u += 1;
        }
        assert!(used.iter().all(|&u| u == 1), "{used:?}");
    }

    /// Spot checks against the rows of Figure 6-4, as transcribed in the digest.
    #[test]
    fn matches_the_figure_rows() {
        let at = |s: usize, b: usize| usize::from(PAYLOAD_AT[s * 4 + b]);
        // Rows 0–3: S0..S15 in order.
        for s in 0..16 {
            assert_eq!(at(s, 0), 4 * s);
        }
        // Row 4: S31.B0 S31.B1 S31.B2 SH0 | S16 S17 S18.
        assert_eq!((at(31, 0), at(31, 1), at(31, 2)), (64, 65, 66));
        assert_eq!((at(16, 0), at(18, 3)), (68, 79));
        // Rows 5–7: S19..S30.
        assert_eq!((at(19, 0), at(30, 3)), (80, 127));
        // Row 8: S47.B0 S47.B1 S47.B2 S31.B3 | S32 S33 S34.
        assert_eq!((at(47, 0), at(47, 2), at(31, 3), at(32, 0)), (128, 130, 131, 132));
        // Row 12: S63.B0 S63.B1 S47.B3 SH1.
        assert_eq!((at(63, 0), at(63, 1), at(47, 3)), (192, 193, 194));
        // Row 16: S79.B0 S79.B1 S63.B2 S63.B3.
        assert_eq!((at(79, 0), at(79, 1), at(63, 2), at(63, 3)), (256, 257, 258, 259));
        // Row 20: S95.B0 S79.B2 S79.B3 SH2.
        assert_eq!((at(95, 0), at(79, 2), at(79, 3)), (320, 321, 322));
        // Row 24: S111.B0 S95.B1..B3.
        assert_eq!((at(111, 0), at(95, 1), at(95, 3)), (384, 385, 387));
        // Row 28: S111.B1..B3 SH3 | S112 S113 S114; row 32 holds S127..S130 whole.
        assert_eq!((at(111, 1), at(111, 3), at(112, 0)), (448, 450, 452));
        assert_eq!((at(127, 0), at(130, 3)), (512, 527));
        // Rows 29–35 end with S142; row 36: S156.B0..B2 SH4 | S143 S144 S145.
        assert_eq!((at(142, 3), at(156, 0), at(156, 2), at(143, 0)), (575, 576, 578, 580));
        // Rows 37–38: S146..S153; row 39: FH0 FH1 FH2 S156.B3 | S154 S155 CRC.
        assert_eq!((at(146, 0), at(153, 3)), (592, 623));
        assert_eq!((at(156, 3), at(154, 0), at(155, 3)), (627, 628, 635));
    }

    #[test]
    fn unrolled_copies_match_the_table() {
        let payload: [u8; PAYLOAD_LEN] = core::array::from_fn(|i| (i * 5 + 1) as u8);
        let mut flit = [0u8; FLIT_LEN];
        place_payload(&payload, &mut flit);
        for (i, &at) in PAYLOAD_AT.iter().enumerate() {
            assert_eq!(flit[usize::from(at)], payload[i]);
        }
        let mut back = [0u8; PAYLOAD_LEN];
        gather_payload(&flit, &mut back);
        assert_eq!(back, payload);
    }

    #[test]
    fn runs_cover_the_payload_in_order() {
        let mut i = 0;
        for r in RUNS {
            assert_eq!(usize::from(r.payload), i);
            for k in 0..r.len {
                assert_eq!(PAYLOAD_AT[i + usize::from(k)], r.flit + k);
            }
            i += usize::from(r.len);
        }
        assert_eq!(i, PAYLOAD_LEN);
        const { assert!(RUN_COUNT < 50) };
    }
}
