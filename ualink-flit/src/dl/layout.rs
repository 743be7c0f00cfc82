//! Where every byte of a 640-byte DL flit sits (UALink 1.0 §6.3, Figure 6-4).
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
//! Figure 6-4 lives in one table, [`SPECIAL`]: the nine special words, byte by byte. Everything
//! else is derived from it at compile time, each form with a test against the figure:
//! [`PAYLOAD_AT`] (where each payload byte goes), [`FLIT_BYTES`] (what each flit byte holds) and
//! [`ROW_PAYLOAD`] (the row form the copies use). Framing writes each row with one 16-byte copy
//! and then the special words over it; deframing copies the rows back and then takes the bytes
//! of the split sectors out of the special words.

/// Bytes in a DL flit.
pub const FLIT_LEN: usize = 640;
/// Payload bytes in a DL flit (157 sectors of 4 bytes).
pub const PAYLOAD_LEN: usize = 628;
/// Payload sectors in a DL flit.
pub const SECTORS: usize = 157;
/// Byte offset of segment header SHk (from [`SPECIAL`]: 67, 195, 323, 451, 579).
pub const SEGMENT_HEADER_AT: [usize; 5] = {
    let [sh0, sh1, sh2, sh3, sh4, ..] = HEADER_BYTES_AT;
    [sh0, sh1, sh2, sh3, sh4]
};
/// Byte offset of FH0 (from [`SPECIAL`]: 624; FH1 and FH2 follow).
pub const FLIT_HEADER_AT: usize = HEADER_BYTES_AT[5];
/// Byte offset of CRC0 (CRC1..CRC3 follow).
pub const CRC_AT: usize = 636;

/// What one byte of a special word holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Byte `b` of payload sector `s`: `Sector(s, b)`.
    Sector(u8, u8),
    /// Segment header SHk.
    SegmentHeader(u8),
    /// Flit header byte FHk.
    FlitHeader(u8),
}

/// Figure 6-4, the one table of the flit layout: the rows that start with a special word, and
/// that word's four bytes. Every other byte of the flit is the next payload sector in order
/// (four to a row, three after a special word), but the CRC in the last four bytes.
pub const SPECIAL: [(usize, [Slot; 4]); 9] = {
    use Slot::{FlitHeader as Fh, Sector as S, SegmentHeader as Sh};
    [
        (4, [S(31, 0), S(31, 1), S(31, 2), Sh(0)]),
        (8, [S(47, 0), S(47, 1), S(47, 2), S(31, 3)]),
        (12, [S(63, 0), S(63, 1), S(47, 3), Sh(1)]),
        (16, [S(79, 0), S(79, 1), S(63, 2), S(63, 3)]),
        (20, [S(95, 0), S(79, 2), S(79, 3), Sh(2)]),
        (24, [S(111, 0), S(95, 1), S(95, 2), S(95, 3)]),
        (28, [S(111, 1), S(111, 2), S(111, 3), Sh(3)]),
        (36, [S(156, 0), S(156, 1), S(156, 2), Sh(4)]),
        (39, [Fh(0), Fh(1), Fh(2), S(156, 3)]),
    ]
};

/// The flit byte of each header byte, SH0 to SH4 then FH0 to FH2, read from [`SPECIAL`] when
/// the crate is built ([`FLIT_LEN`] for one the table lacks, which the check below refuses).
#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const HEADER_BYTES_AT: [usize; 8] = {
    let mut at = [FLIT_LEN; 8];
    let mut k = 0;
    while k < SPECIAL.len() {
        let mut b = 0;
        while b < 4 {
            match SPECIAL[k].1[b] {
                Slot::SegmentHeader(x) => at[x as usize] = 16 * SPECIAL[k].0 + b,
                Slot::FlitHeader(x) => at[5 + x as usize] = 16 * SPECIAL[k].0 + b,
                Slot::Sector(..) => {}
            }
            b += 1;
        }
        k += 1;
    }
    at
};

/// Every header byte is in [`SPECIAL`]: a missing one fails the build, never a run.
#[allow(clippy::indexing_slicing, reason = "compile-time check")]
const _: () = {
    let mut i = 0;
    while i < HEADER_BYTES_AT.len() {
        assert!(HEADER_BYTES_AT[i] < FLIT_LEN, "a header byte missing from SPECIAL");
        i += 1;
    }
};

/// Whether sector `s` has bytes in a special word (it is split; the row filler skips it).
#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn is_split(s: usize) -> bool {
    let mut k = 0;
    while k < SPECIAL.len() {
        let mut b = 0;
        while b < 4 {
            if let Slot::Sector(x, _) = SPECIAL[k].1[b] {
                if x as usize == s {
                    return true;
                }
            }
            b += 1;
        }
        k += 1;
    }
    false
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
        // The last row ends with the CRC.
        let end = if base + 16 > CRC_AT { CRC_AT - base } else { 16 };
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

/// Rows of 16 bytes in a flit.
pub const ROWS: usize = FLIT_LEN / 16;

/// What one flit byte holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlitByte {
    /// Payload byte `i` (sector `i / 4`).
    Payload(u16),
    /// Segment header SHk.
    SegmentHeader(u8),
    /// Flit header byte FHk.
    FlitHeader(u8),
    /// CRC byte CRCk.
    Crc(u8),
}

#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn build_flit_bytes() -> [FlitByte; FLIT_LEN] {
    let mut t = [FlitByte::Crc(0); FLIT_LEN];
    let mut i = 0;
    while i < PAYLOAD_LEN {
        t[PAYLOAD_AT[i] as usize] = FlitByte::Payload(i as u16);
        i += 1;
    }
    let mut k = 0;
    while k < SPECIAL.len() {
        let mut b = 0;
        while b < 4 {
            let at = 16 * SPECIAL[k].0 + b;
            match SPECIAL[k].1[b] {
                Slot::SegmentHeader(h) => t[at] = FlitByte::SegmentHeader(h),
                Slot::FlitHeader(h) => t[at] = FlitByte::FlitHeader(h),
                Slot::Sector(..) => {}
            }
            b += 1;
        }
        k += 1;
    }
    let mut k = 0;
    while k < 4 {
        t[CRC_AT + k] = FlitByte::Crc(k as u8);
        k += 1;
    }
    t
}

/// `FLIT_BYTES[j]`: what flit byte `j` holds (the inverse of [`PAYLOAD_AT`], with the headers
/// and the CRC).
pub const FLIT_BYTES: [FlitByte; FLIT_LEN] = build_flit_bytes();

#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn build_row_payload() -> [u16; ROWS] {
    let mut t = [0u16; ROWS];
    let mut r = 0;
    while r < ROWS {
        // Byte 4 of every row is payload; the row's bytes 4..12 follow it in the payload.
        if let FlitByte::Payload(i) = FLIT_BYTES[16 * r + 4] {
            t[r] = i - 4;
        }
        r += 1;
    }
    t
}

/// `ROW_PAYLOAD[r]`: the payload byte `p` such that bytes 4..12 of row `r` hold payload bytes
/// `p + 4 .. p + 12`, and so do the rest of its bytes except a special word (bytes 0..4 of the
/// rows that start with one) and the CRC (bytes 12..16 of the last row). The tests check it.
///
/// So a flit is 40 copies of 16 bytes, one per row, with the nine special words written over
/// them: wide, aligned copies instead of many short ones.
pub const ROW_PAYLOAD: [u16; ROWS] = build_row_payload();

/// Whether each row starts with a special word.
#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const SPECIAL_ROW: [bool; ROWS] = {
    let mut t = [false; ROWS];
    let mut k = 0;
    while k < SPECIAL.len() {
        t[SPECIAL[k].0] = true;
        k += 1;
    }
    t
};

/// `t[i..i + 4]`, at compile time.
#[allow(clippy::indexing_slicing, reason = "compile-time table construction")]
const fn four<T: Copy, const N: usize>(t: &[T; N], i: usize) -> [T; 4] {
    [t[i], t[i + 1], t[i + 2], t[i + 3]]
}

/// Copies `N` bytes from `src[s..]` to `dst[d..]`; with constant offsets the bounds checks fold
/// away and the copy becomes one or two moves.
#[inline(always)]
fn copy<const N: usize>(dst: &mut [u8], d: usize, src: &[u8], s: usize) {
    let to = dst.get_mut(d..).and_then(|t| t.first_chunk_mut::<N>());
    if let (Some(to), Some(from)) = (to, src.get(s..).and_then(|f| f.first_chunk::<N>())) {
        linklayer::bytes::copy_array(to, from);
    }
}

/// The byte `b` stands for, from the flit's parts (the CRC reads as zero).
#[inline(always)]
fn part(b: FlitByte, payload: &[u8; PAYLOAD_LEN], segments: &[u8; 5], header: &[u8; 3]) -> u8 {
    let byte = |bytes: &[u8], i: usize| bytes.get(i).copied().unwrap_or(0);
    match b {
        FlitByte::Payload(i) => byte(payload, usize::from(i)),
        FlitByte::SegmentHeader(k) => byte(segments, usize::from(k)),
        FlitByte::FlitHeader(k) => byte(header, usize::from(k)),
        FlitByte::Crc(_) => 0,
    }
}

/// Runs `f::<R>(args)` for each of the 40 rows, so that every offset in it is a constant, every
/// copy a fixed-size move and every bounds check folded away (against a loop over the rows:
/// `BENCHMARKS.md`, "DL flit layout").
macro_rules! each_row {
    ($f:ident $args:tt) => {
        each_row!(@ $f $args 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39)
    };
    (@ $f:ident $args:tt $($r:literal)*) => { $( $f::<$r> $args; )* };
}
const _: () = assert!(ROWS == 40, "each_row! lists 40 rows");

/// Writes a whole flit but its CRC, which is left zero: the 628 payload bytes (sector order),
/// segment headers SH0..SH4 and flit header FH0..FH2, where Figure 6-4 puts them. Each row is
/// one 16-byte copy ([`ROW_PAYLOAD`]); a special word, built from [`FLIT_BYTES`], then goes over
/// the start of its row.
#[inline]
pub fn place_flit(payload: &[u8; PAYLOAD_LEN], segments: &[u8; 5], header: &[u8; 3], flit: &mut [u8; FLIT_LEN]) {
    #[inline(always)]
    #[allow(clippy::indexing_slicing, reason = "in const blocks: an index out of range fails the build")]
    fn row<const R: usize>(
        payload: &[u8; PAYLOAD_LEN],
        segments: &[u8; 5],
        header: &[u8; 3],
        flit: &mut [u8; FLIT_LEN],
    ) {
        copy::<16>(flit, 16 * R, payload, usize::from(const { ROW_PAYLOAD[R] }));
        if const { SPECIAL_ROW[R] } {
            let [b0, b1, b2, b3] = const { four(&FLIT_BYTES, 16 * R) };
            // One `u32`, written right after its row: byte by byte it was four stores.
            let at = |b| u32::from(part(b, payload, segments, header));
            let word = at(b0) | at(b1) << 8 | at(b2) << 16 | at(b3) << 24;
            copy::<4>(flit, 16 * R, &word.to_le_bytes(), 0);
        }
    }
    each_row!(row(payload, segments, header, flit));
    if let Some(crc) = flit.get_mut(CRC_AT..) {
        crc.fill(0);
    }
}

/// Reads the 628 payload bytes out of `flit` into sector order: each row's payload bytes with
/// one copy ([`ROW_PAYLOAD`]: 16 bytes, 12 after a special word, 8 in the last row before the
/// CRC), and the split sectors' bytes out of the special words ([`FLIT_BYTES`]).
#[inline]
pub fn gather_payload(flit: &[u8; FLIT_LEN], payload: &mut [u8; PAYLOAD_LEN]) {
    #[inline(always)]
    #[allow(clippy::indexing_slicing, reason = "in const blocks: an index out of range fails the build")]
    fn row<const R: usize>(flit: &[u8; FLIT_LEN], payload: &mut [u8; PAYLOAD_LEN]) {
        let (p, j) = (usize::from(const { ROW_PAYLOAD[R] }), 16 * R);
        if const { 16 * R + 16 > CRC_AT } {
            copy::<{ CRC_AT % 16 - 4 }>(payload, p + 4, flit, j + 4);
        } else if const { SPECIAL_ROW[R] } {
            copy::<12>(payload, p + 4, flit, j + 4);
        } else {
            copy::<16>(payload, p, flit, j);
        }
        if const { SPECIAL_ROW[R] } {
            let [b0, b1, b2, b3] = const { four(&FLIT_BYTES, 16 * R) };
            take(b0, flit, j, payload);
            take(b1, flit, j + 1, payload);
            take(b2, flit, j + 2, payload);
            take(b3, flit, j + 3, payload);
        }
    }
    /// Flit byte `j` into the payload, if `b` (what it holds) is payload.
    #[inline(always)]
    fn take(b: FlitByte, flit: &[u8; FLIT_LEN], j: usize, payload: &mut [u8; PAYLOAD_LEN]) {
        if let (FlitByte::Payload(i), Some(&x)) = (b, flit.get(j)) {
            if let Some(dst) = payload.get_mut(usize::from(i)) {
                *dst = x;
            }
        }
    }
    each_row!(row(flit, payload));
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

    /// Spot checks against the rows of Figure 6-4.
    #[test]
    fn matches_the_figure_rows() {
        assert_eq!(SEGMENT_HEADER_AT, [67, 195, 323, 451, 579]);
        assert_eq!(FLIT_HEADER_AT, 624);
        assert_eq!(CRC_AT, 636);
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

    /// The row copies put every byte where the table says, and read it back.
    #[test]
    fn row_copies_match_the_table() {
        let payload: [u8; PAYLOAD_LEN] = core::array::from_fn(|i| (i * 5 + 1) as u8);
        let segments = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4];
        let header = [0xF0, 0xF1, 0xF2];
        let mut flit = [0x55u8; FLIT_LEN];
        place_flit(&payload, &segments, &header, &mut flit);
        for (i, &at) in PAYLOAD_AT.iter().enumerate() {
            assert_eq!(flit[usize::from(at)], payload[i]);
        }
        for (k, at) in SEGMENT_HEADER_AT.into_iter().enumerate() {
            assert_eq!(flit[at], segments[k]);
        }
        assert_eq!(flit[FLIT_HEADER_AT..FLIT_HEADER_AT + 3], header);
        assert_eq!(flit[CRC_AT..], [0; 4]);
        let mut back = [0x55u8; PAYLOAD_LEN];
        gather_payload(&flit, &mut back);
        assert_eq!(back, payload);
    }

    /// The rule the row copies rely on: past a special word and short of the CRC, row `r`
    /// holds payload bytes `ROW_PAYLOAD[r] + k` at its byte `k`; the special words sit at the
    /// rows the figure lists, and every split sector has a byte in one.
    #[test]
    fn rows_follow_the_payload() {
        for (r, &p) in ROW_PAYLOAD.iter().enumerate() {
            for k in 0..16 {
                let j = 16 * r + k;
                let special = SPECIAL_ROW[r] && k < 4;
                match FLIT_BYTES[j] {
                    FlitByte::Payload(i) if !special => assert_eq!(i, p + k as u16, "row {r} byte {k}"),
                    FlitByte::Crc(_) => assert!(r == ROWS - 1 && k >= 12),
                    _ => assert!(special, "row {r} byte {k}"),
                }
            }
            assert!(usize::from(p) + 16 <= PAYLOAD_LEN);
        }
        // Exactly the sectors not laid out whole in one row are split, and each has a byte in
        // a special word.
        for s in 0..SECTORS {
            let split = (1..4).any(|b| PAYLOAD_AT[4 * s + b] != PAYLOAD_AT[4 * s] + b as u16);
            assert_eq!(split, is_split(s), "sector {s}");
            if split {
                assert!((0..4).any(|b| usize::from(PAYLOAD_AT[4 * s + b]) % 16 < 4));
            }
        }
    }
}
