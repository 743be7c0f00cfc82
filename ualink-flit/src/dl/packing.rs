//! TL flits and DL message sectors into the payload of DL flits, and back (UALink 1.0 §6.3.1,
//! §6.3.3–6.3.5, Table 6-1, Figures 6-5 … 6-8).
//!
//! The payload of a DL flit is 157 four-byte sectors in five segments (Table 6-1). Each segment
//! is filled in this order, which [`plan`] computes for both directions, so the transmitter and
//! the receiver cannot disagree:
//!
//! 1. the DL alternative sector, if the segment header says so, in the segment's first sector;
//! 2. the rest of the TL flit carried over from the previous segment (or the previous DL flit:
//!    packing is continuous, §6.3.5 Figure 6-8);
//! 3. TL Flit\[0\], if one is ready and a sector is free; if none is ready, the rest of the
//!    current half-segment is zero-filled;
//! 4. TL Flit\[1\], if one is ready and a sector is free; otherwise the rest of the segment is
//!    zero-filled.
//!
//! A TL flit is 16 sectors; what does not fit is carried over. TL flit sector *k* goes to the next
//! free payload sector in order, bytes unchanged (Figure 6-6).
//!
//! *Project-defined* where the text leaves a choice:
//!
//! * When no TL flit is ready at step 3 and the carry-over has already reached the second half of
//!   the segment (or ends exactly on its boundary), "the end of the half segment" is the end of
//!   the segment, so no TL Flit\[1\] starts there. This is what makes the special case of §6.3.4
//!   ("carry over and an alternative sector fill the first half … it is designated TL Flit\[0\]")
//!   the only way a flit starts in a second half after a carry-over.
//! * The receiver does not check that zero-filled sectors are zero; it refuses a segment header
//!   that names a TL flit where no sector is free, or TL Flit\[1\] where the rules leave no room
//!   for it.

use super::header::{MBits, SegmentHeader};
use super::layout::PAYLOAD_LEN;
use crate::Error;
use crate::tl::TlFlit;
use crate::tl::half::HALF_FLIT_LEN;
use linklayer::bytes::{copy_array, copy_prefix};

/// Sectors in a TL flit.
pub const TL_SECTORS: u8 = 16;
/// Bytes in a sector.
const SECTOR: usize = 4;
/// Sectors in a TL half-flit.
const HALF_SECTORS: u8 = (HALF_FLIT_LEN / SECTOR) as u8;

/// One segment's payload sectors: `start..end`, the second half starting at `half` (Table 6-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First payload sector.
    pub start: u8,
    /// First sector of the second half-segment.
    pub half: u8,
    /// One past the last payload sector.
    pub end: u8,
}

/// Table 6-1.
pub const SEGMENTS: [Segment; 5] = [
    Segment { start: 0, half: 16, end: 32 },
    Segment { start: 32, half: 48, end: 64 },
    Segment { start: 64, half: 80, end: 96 },
    Segment { start: 96, half: 112, end: 127 },
    Segment { start: 127, half: 143, end: 157 },
];

/// Where everything in one segment goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The sector of the DL alternative sector.
    pub alt: Option<u8>,
    /// The first sector of the carried-over TL flit's rest, and how many of its sectors fit.
    pub carried: (u8, u8),
    /// The first sector of TL Flit\[0\] and TL Flit\[1\], for those that start here.
    pub starts: [Option<u8>; 2],
    /// Sectors of the last TL flit that did not fit and carry over to the next segment.
    pub carry_out: u8,
}

/// Plans one segment: `alt` says whether it carries an alternative sector, `carry_in` how many
/// sectors of a TL flit are still to be placed, and `start(i)` whether TL Flit\[i\] starts now
/// (asked only when a sector is free for it, in order 0 then 1).
pub fn plan(seg: Segment, alt: bool, carry_in: u8, mut start: impl FnMut(usize) -> bool) -> Plan {
    plan_at(seg, alt, carry_in, |slot, _| start(slot))
}

/// [`plan`], telling `start` the sector where TL Flit\[i\] would start (so the packer can put it
/// there at once).
pub fn plan_at(seg: Segment, alt: bool, carry_in: u8, mut start: impl FnMut(usize, u8) -> bool) -> Plan {
    let mut p = Plan { alt: alt.then_some(seg.start), carried: carried_at(seg, alt, carry_in), ..Plan::default() };
    let (mut pos, fit) = p.carried;
    pos += fit;
    p.carry_out = carry_in - fit;
    for slot in 0..2 {
        if pos >= seg.end {
            break;
        }
        if start(slot, pos) {
            if let Some(s) = p.starts.get_mut(slot) {
                *s = Some(pos);
            }
            let fit = TL_SECTORS.min(seg.end - pos);
            pos += fit;
            p.carry_out = TL_SECTORS - fit;
        } else {
            // Zero-fill to the end of the current half-segment (step 4), or of the segment.
            pos = if slot == 0 && pos < seg.half { seg.half } else { seg.end };
        }
    }
    p
}

/// Where the rest of a TL flit carried into segment `seg` goes ([`Plan::carried`]): right after
/// the alternative sector, if any, as much of its `carry_in` sectors as fit.
fn carried_at(seg: Segment, alt: bool, carry_in: u8) -> (u8, u8) {
    let at = seg.start + u8::from(alt);
    (at, carry_in.min(seg.end.saturating_sub(at)))
}

/// A source of TL flits for the packer: [`TlSource::next_flit`] is asked each time a TL flit may
/// start (a packer "tick"); `false` means none is ready now.
///
/// A TL [`Packer`](crate::tl::Packer) becomes one with the [`BeatSource`](crate::tl::BeatSource)
/// its data beats come from (what `UpliPort` does inside):
///
/// ```
/// use ualink_flit::dl::TlSource;
/// use ualink_flit::tl::{BeatSource, Packer, TlFlit};
///
/// struct Feed<'a, B: BeatSource> {
///     packer: &'a mut Packer,
///     beats: &'a B,
/// }
///
/// impl<B: BeatSource> TlSource for Feed<'_, B> {
///     fn has_flit(&self) -> bool {
///         self.packer.has_work()
///     }
///     fn next_flit(&mut self, out: &mut TlFlit) -> bool {
///         // `pack` writes every byte of `out` and both message bits.
///         self.packer.has_work() && self.packer.pack(self.beats, out).is_ok()
///     }
/// }
/// ```
pub trait TlSource {
    /// Whether a TL flit is ready (decides between a payload and a NOP DL flit).
    fn has_flit(&self) -> bool;
    /// Writes the next TL flit, if one is ready, into `out` (every byte and both message bits)
    /// and returns `true`; returns `false` when none is ready (what `out` holds then does not
    /// matter). The packer hands over the place the flit goes, so a flit is written once rather
    /// than returned and moved.
    fn next_flit(&mut self, out: &mut TlFlit) -> bool;
}

impl<const N: usize> TlSource for heapless::Deque<TlFlit, N> {
    fn has_flit(&self) -> bool {
        !self.is_empty()
    }
    fn next_flit(&mut self, out: &mut TlFlit) -> bool {
        self.pop_front().map(|f| *out = f).is_some()
    }
}

/// A source of DL alternative-sector words (DL messages and UART payload).
pub trait AltSource {
    /// Whether a word is waiting.
    fn has_alt(&self) -> bool;
    /// The next word.
    fn next_alt(&mut self) -> Option<u32>;
}

impl<const N: usize> AltSource for heapless::Deque<u32, N> {
    fn has_alt(&self) -> bool {
        !self.is_empty()
    }
    fn next_alt(&mut self) -> Option<u32> {
        self.pop_front()
    }
}

/// The TL flit carried over from one DL flit to the next, or none, in either half: the flit
/// (sent whole from the packer, its first sectors so far in the unpacker) and how many of its
/// sectors are still to be placed (0: none, and the flit's bytes mean nothing; they are not
/// cleared when a carry ends, since the next split flit is written over them). [`Carry::NONE`]
/// is all zero bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Carry {
    flit: TlFlit,
    left: u8,
}

/// Two carries are equal when they carry the same: no flit, or the same flit as far placed.
impl PartialEq for Carry {
    fn eq(&self, other: &Self) -> bool {
        self.left == other.left && (self.left == 0 || self.flit == other.flit)
    }
}

impl Eq for Carry {}

impl Carry {
    /// No flit carried over.
    const NONE: Self =
        Carry { flit: TlFlit { lower: [0; HALF_FLIT_LEN], upper: [0; HALF_FLIT_LEN], m0: false, m1: false }, left: 0 };

    /// Sectors of the flit already placed.
    const fn done(&self) -> u8 {
        TL_SECTORS.saturating_sub(self.left)
    }

    /// The flit's message bits.
    const fn m(&self) -> MBits {
        MBits { m0: self.flit.m0, m1: self.flit.m1 }
    }
}

/// What one DL flit's payload carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    /// TL flits that started.
    pub started: u8,
    /// TL flits that finished (including one carried in).
    pub finished: u8,
    /// Alternative sectors.
    pub alt: u8,
}

/// The transmit half: packs TL flits and alternative sectors into DL flit payloads, carrying a TL
/// flit over from one DL flit to the next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlitPacker {
    carry: Carry,
}

impl FlitPacker {
    /// A packer with nothing carried over.
    pub const fn new() -> Self {
        FlitPacker { carry: Carry::NONE }
    }

    /// Whether part of a TL flit waits for the next DL flit.
    pub fn has_carry(&self) -> bool {
        self.carry.left > 0
    }

    /// Whether the next DL flit would carry anything (else a NOP flit is due).
    pub fn has_payload(&self, tl: &impl TlSource, alt: &impl AltSource) -> bool {
        self.has_carry() || tl.has_flit() || alt.has_alt()
    }

    /// Fills one DL flit payload (`payload` is overwritten, zero-filled where empty) and its
    /// segment headers.
    ///
    /// Only the sectors no TL flit or alternative sector takes are zeroed: a segment is
    /// zero-filled from where a TL flit could have started and none was ready, and any flit
    /// placed later in the segment goes over those zeros. A saturated link writes each byte once.
    pub fn pack(
        &mut self,
        tl: &mut impl TlSource,
        alt: &mut impl AltSource,
        segments: &mut [SegmentHeader; 5],
        payload: &mut [u8; PAYLOAD_LEN],
    ) -> Packed {
        let mut out = Packed::default();
        // The place a TL flit that fits whole is written before it is copied into the payload.
        let mut whole = TlFlit::default();
        for (seg, sh) in SEGMENTS.iter().zip(segments.iter_mut()) {
            let word = alt.next_alt();
            // The flit carried in ends here (`REST_FITS`), right after the alternative sector: it
            // is placed first, so that a flit split at this segment's end can be written
            // straight into the carry.
            let carry_in = self.carry.left;
            if carry_in > 0 {
                let (at, n) = carried_at(*seg, word.is_some(), carry_in);
                put_flit(payload, at, &self.carry.flit, self.carry.done(), n);
                self.carry.left -= n;
                out.finished += u8::from(self.carry.left == 0);
            }
            let mut fresh: [Option<MBits>; 2] = [None, None];
            let mut split = false;
            let carry = &mut self.carry;
            // Each TL flit goes straight to the sector the plan gives it, as it is taken.
            let p = plan_at(*seg, word.is_some(), carry_in, |slot, at| {
                let n = TL_SECTORS.min(seg.end - at);
                // One split here is written straight into the carry (the one carried in is placed).
                let f = if n == TL_SECTORS { &mut whole } else { &mut carry.flit };
                if !tl.next_flit(f) {
                    // The plan zero-fills from here (to the half-segment or the segment's end).
                    zero(payload, at, seg.end);
                    return false;
                }
                let m = MBits { m0: f.m0, m1: f.m1 };
                if let Some(x) = fresh.get_mut(slot) {
                    *x = Some(m);
                }
                put_flit(payload, at, f, 0, n);
                if n < TL_SECTORS {
                    // The rest goes into the next segment.
                    carry.left = TL_SECTORS - n;
                    split = true;
                }
                true
            });
            *sh = SegmentHeader { alt_sector: false, tl_flits: fresh };
            if let (Some(at), Some(w)) = (p.alt, word) {
                put(payload, at, &w.to_le_bytes());
                sh.alt_sector = true;
                out.alt += 1;
            }
            let started = fresh.iter().filter(|m| m.is_some()).count() as u8;
            out.started += started;
            // Every flit that started here also ended here, but the one split at the segment's end.
            out.finished += started - u8::from(split);
        }
        out
    }
}

/// Writes sectors `from..from + n` of TL flit `f` into the payload from sector `at` (a run in
/// one half is one copy, a run across the halves two).
fn put_flit(payload: &mut [u8; PAYLOAD_LEN], at: u8, f: &TlFlit, from: u8, n: u8) {
    let (from, end) = (usize::from(from), usize::from(from + n));
    let half = usize::from(HALF_SECTORS);
    if let Some(lo) = f.lower.get(from * SECTOR..end.min(half) * SECTOR) {
        put(payload, at, lo);
    }
    let up = from.max(half);
    if let Some(hi) = f.upper.get((up - half) * SECTOR..end.saturating_sub(half) * SECTOR) {
        put(payload, at + (up - from) as u8, hi);
    }
}

/// Zeroes payload sectors `from..to`.
fn zero(payload: &mut [u8; PAYLOAD_LEN], from: u8, to: u8) {
    if let Some(dst) = payload.get_mut(usize::from(from) * SECTOR..usize::from(to) * SECTOR) {
        dst.fill(0);
    }
}

/// Writes `src` into the payload from sector `at`.
#[inline]
fn put(payload: &mut [u8; PAYLOAD_LEN], at: u8, src: &[u8]) {
    let a = usize::from(at) * SECTOR;
    if let Some(dst) = payload.get_mut(a..a + src.len()) {
        copy_prefix(dst, src);
    }
}

/// What the receive half found in one DL flit: the TL flits it completed and the alternative
/// sectors, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// TL flits completed in this DL flit (at most 10: a carried-in rest and 9 whole flits).
    pub flits: heapless::Vec<TlFlit, 10>,
    /// Alternative-sector words (one per segment at most).
    pub alt: heapless::Vec<u32, 5>,
}

/// The receive half: takes TL flits and alternative sectors out of DL flit payloads, joining a TL
/// flit carried over between DL flits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlitUnpacker {
    carry: Carry,
}

impl FlitUnpacker {
    /// An unpacker expecting no carry-over.
    pub const fn new() -> Self {
        FlitUnpacker { carry: Carry::NONE }
    }

    /// Whether part of a TL flit is waiting for the next DL flit.
    pub fn has_carry(&self) -> bool {
        self.carry.left > 0
    }

    /// Unpacks one payload DL flit into `out` (cleared first). A segment header that breaks the
    /// packing rules is refused; then `out` is empty and the carry-over is as before.
    pub fn unpack(
        &mut self,
        segments: &[SegmentHeader; 5],
        payload: &[u8; PAYLOAD_LEN],
        out: &mut Delivered,
    ) -> Result<(), Error> {
        let r = self.unpack_inner(segments, payload, out);
        if r.is_err() {
            out.flits.clear();
            out.alt.clear();
        }
        r
    }

    fn unpack_inner(
        &mut self,
        segments: &[SegmentHeader; 5],
        payload: &[u8; PAYLOAD_LEN],
        out: &mut Delivered,
    ) -> Result<(), Error> {
        out.flits.clear();
        out.alt.clear();
        // `self.carry` changes only at the end, so a refused flit leaves it as it was.
        let mut open = (self.carry.left > 0).then_some(Open::Saved(&self.carry));
        for (seg, sh) in SEGMENTS.iter().zip(segments) {
            let carry_in = open.map_or(0, |o| TL_SECTORS - o.done());
            let p = plan(*seg, sh.alt_sector, carry_in, |slot| sh.tl_flits.get(slot).is_some_and(Option::is_some));
            if let Some(at) = p.alt {
                let mut w = [0u8; SECTOR];
                copy_prefix(&mut w, get(payload, at, 1));
                out.alt.push(u32::from_le_bytes(w)).map_err(|_| Error::Full { queue: "alt sectors" })?;
            }
            if let Some(o) = open.take() {
                // The rest always fits in the segment after (`REST_FITS`): the flit ends here.
                let (at, n) = p.carried;
                let f = push_flit(out, o.m())?;
                match o {
                    Open::Here { first, done, .. } if first + done == at => {
                        // No alternative sector between the parts: one run of the payload.
                        half_into(&mut f.lower, payload, first);
                        half_into(&mut f.upper, payload, first + HALF_SECTORS);
                    }
                    Open::Here { first, done, .. } => {
                        put_sectors(f, 0, get(payload, first, done));
                        put_sectors(f, done, get(payload, at, n));
                    }
                    Open::Saved(c) => {
                        copy_array(&mut f.lower, &c.flit.lower);
                        copy_array(&mut f.upper, &c.flit.upper);
                        put_sectors(f, c.done(), get(payload, at, n));
                    }
                }
            }
            // By slot rather than by zipped iterators, which copied the plan through the stack.
            for slot in 0..2 {
                let Some(m) = sh.tl_flits.get(slot).copied().flatten() else { continue };
                let Some(at) = p.starts.get(slot).copied().flatten() else {
                    return Err(Error::BadValue {
                        field: "segment header TL Flit present (no sector free for it)",
                        value: u32::from(sh.to_byte()),
                    });
                };
                let n = TL_SECTORS.min(seg.end - at);
                if n == TL_SECTORS {
                    // A whole TL flit: read straight out of the payload.
                    let f = push_flit(out, m)?;
                    half_into(&mut f.lower, payload, at);
                    half_into(&mut f.upper, payload, at + HALF_SECTORS);
                } else {
                    open = Some(Open::Here { first: at, done: n, m });
                }
            }
        }
        // Only a flit begun in the last segment is still open; its first part is saved for the
        // next DL flit.
        match open {
            None => self.carry.left = 0,
            // Never (a carried flit ends in segment 0); nothing was added to it either way.
            Some(Open::Saved(_)) => {}
            Some(Open::Here { first, done, m }) => {
                // Its first sectors; the rest of the saved flit is written over when it ends.
                (self.carry.flit.m0, self.carry.flit.m1, self.carry.left) = (m.m0, m.m1, TL_SECTORS - done);
                put_sectors(&mut self.carry.flit, 0, get(payload, first, done));
            }
        }
        Ok(())
    }
}

/// The TL flit left open while a DL flit is unpacked: begun in an earlier DL flit, its part
/// saved, or in this one, its part still in the payload (read from there when the flit ends, so
/// it is not copied twice).
#[derive(Clone, Copy)]
enum Open<'a> {
    /// Carried in from the previous DL flit.
    Saved(&'a Carry),
    /// Begun at payload sector `first`, `done` sectors so far.
    Here { first: u8, done: u8, m: MBits },
}

impl Open<'_> {
    fn done(&self) -> u8 {
        match self {
            Open::Saved(c) => c.done(),
            Open::Here { done, .. } => *done,
        }
    }

    fn m(&self) -> MBits {
        match self {
            Open::Saved(c) => c.m(),
            Open::Here { m, .. } => *m,
        }
    }
}

/// A segment holds an alternative sector and the rest of any TL flit (at most
/// `TL_SECTORS - 1` sectors), so a flit carried into a segment ends there. The unpacker relies on
/// it: an open flit is finished in the next segment.
#[allow(clippy::indexing_slicing, reason = "compile-time check: an index out of range fails the build")]
const REST_FITS: () = {
    let mut k = 0;
    while k < SEGMENTS.len() {
        assert!(SEGMENTS[k].end - SEGMENTS[k].start >= TL_SECTORS);
        k += 1;
    }
};
const _: () = REST_FITS;

/// Appends a TL flit with message bits `m` (its bytes to be written) and returns it, so the flit
/// is written in place rather than built and then moved.
fn push_flit(out: &mut Delivered, m: MBits) -> Result<&mut TlFlit, Error> {
    let full = Error::Full { queue: "TL flits" };
    out.flits.push(TlFlit { m0: m.m0, m1: m.m1, ..TlFlit::default() }).map_err(|_| full)?;
    out.flits.last_mut().ok_or(full)
}

/// Writes `src` (whole sectors) into a TL flit from its sector `from`.
fn put_sectors(f: &mut TlFlit, from: u8, src: &[u8]) {
    let at = usize::from(from) * SECTOR;
    let (lo, hi) = src.split_at(HALF_FLIT_LEN.saturating_sub(at).min(src.len()));
    if let Some(dst) = f.lower.get_mut(at..at + lo.len()) {
        copy_prefix(dst, lo);
    }
    let at = (at + lo.len()).saturating_sub(HALF_FLIT_LEN);
    if let Some(dst) = f.upper.get_mut(at..at + hi.len()) {
        copy_prefix(dst, hi);
    }
}

/// Copies the half-flit at payload sector `at` into `dst` (a plan never gives one out of
/// range), straight across rather than returned by value.
fn half_into(dst: &mut [u8; HALF_FLIT_LEN], payload: &[u8; PAYLOAD_LEN], at: u8) {
    let a = usize::from(at) * SECTOR;
    if let Some(src) = payload.get(a..).and_then(|s| s.first_chunk::<HALF_FLIT_LEN>()) {
        copy_array(dst, src);
    }
}

/// `n` sectors of the payload from sector `at`.
fn get(payload: &[u8; PAYLOAD_LEN], at: u8, n: u8) -> &[u8] {
    let a = usize::from(at) * SECTOR;
    payload.get(a..a + usize::from(n) * SECTOR).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tl::flit::TL_FLIT_LEN;

    /// A packer whose carry has ended equals a new one, whatever bytes the ended carry left.
    #[test]
    fn an_ended_carry_compares_as_none() {
        let mut ended = FlitPacker::new();
        ended.carry.flit.lower = [7; HALF_FLIT_LEN];
        assert_eq!(ended, FlitPacker::new());
        ended.carry.left = 3;
        assert_ne!(ended, FlitPacker::new());
    }
    use heapless::Deque;
    use proptest::prelude::*;

    fn deque<T, const N: usize>(it: impl IntoIterator<Item = T>) -> Deque<T, N> {
        let mut q = Deque::new();
        for x in it {
            assert!(q.push_back(x).is_ok());
        }
        q
    }

    fn flit(n: u8) -> TlFlit {
        let mut b = [0u8; TL_FLIT_LEN];
        for (i, x) in b.iter_mut().enumerate() {
            *x = n.wrapping_mul(31).wrapping_add(i as u8);
        }
        TlFlit::from_bytes(&b, n & 1 != 0, n & 2 != 0)
    }

    #[test]
    fn segments_match_table_6_1() {
        let sizes: [u8; 5] = SEGMENTS.map(|s| s.end - s.start);
        assert_eq!(sizes, [32, 32, 32, 31, 30]);
        assert_eq!(SEGMENTS.map(|s| s.end - s.half), [16, 16, 16, 15, 14]);
        assert_eq!(SEGMENTS[4].end as usize * SECTOR, PAYLOAD_LEN);
        for w in SEGMENTS.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
    }

    #[test]
    fn figure_6_6_and_6_7_first_segment() {
        // Figure 6-6: TL Flit[0] at sector 0, no carry-over.
        let p = plan(SEGMENTS[0], false, 0, |_| true);
        assert_eq!(p.starts, [Some(0), Some(16)]);
        assert_eq!(p.carry_out, 0);
        // Figure 6-7: nothing ready on the first tick, so the first half is zero-filled and TL
        // Flit[1] starts at sector 16.
        let p = plan(SEGMENTS[0], false, 0, |slot| slot == 1);
        assert_eq!(p.starts, [None, Some(16)]);
    }

    #[test]
    fn figure_6_8_last_segment_carries_into_the_next_dl_flit() {
        // An alternative sector at 127 and a carry-over up to 142: TL Flit[0] starts at 143, 14
        // sectors fit, 2 carry into the next DL flit, and there is no room for TL Flit[1].
        let p = plan(SEGMENTS[4], true, 15, |_| true);
        assert_eq!(p.alt, Some(127));
        assert_eq!(p.carried, (128, 15));
        assert_eq!(p.starts, [Some(143), None]);
        assert_eq!(p.carry_out, 2);
    }

    #[test]
    fn special_case_carry_and_alt_fill_the_first_half() {
        // Alt + 15 carried sectors fill sectors 0..16: the flit starting at 16 is TL Flit[0].
        let p = plan(SEGMENTS[0], true, 15, |_| true);
        assert_eq!(p.starts, [Some(16), None]);
        // Not ready then: the rest of the segment is zero-filled; no TL Flit[1].
        let mut asked = 0;
        let p = plan(SEGMENTS[0], true, 15, |_| {
            asked += 1;
            false
        });
        assert_eq!((p.starts, asked), ([None, None], 1));
    }

    #[test]
    fn nothing_ready_after_a_carry_into_the_second_half_fills_the_segment() {
        // Alt at 127 and 16 carried sectors reach 144, past the half at 143: with no TL flit
        // ready, the rest of the segment is zero-filled and TL Flit[1] is never asked for.
        let p = plan(SEGMENTS[4], true, 16, |slot| {
            assert_eq!(slot, 0);
            false
        });
        assert_eq!(p.carried, (128, 16));
        assert_eq!((p.starts, p.carry_out), ([None, None], 0));
    }

    /// A steady stream: 628 bytes per DL flit and no sector left empty, so after `k` DL flits
    /// exactly ⌊157·k / 16⌋ TL flits are complete (9.8125 per DL flit; DL efficiency 628/640 =
    /// 98.125 %).
    #[test]
    fn continuous_stream_fills_every_sector() {
        let mut tl: Deque<TlFlit, 256> = deque((0..160).map(flit));
        let mut alt: Deque<u32, 4> = Deque::new();
        let mut tx = FlitPacker::new();
        let mut rx = FlitUnpacker::new();
        let mut got = Vec::new();
        let mut dl_flits = 0;
        let mut out = Delivered::default();
        while tx.has_payload(&tl, &alt) {
            let mut sh = [SegmentHeader::default(); 5];
            let mut payload = [0u8; PAYLOAD_LEN];
            let packed = tx.pack(&mut tl, &mut alt, &mut sh, &mut payload);
            dl_flits += 1;
            rx.unpack(&sh, &payload, &mut out).unwrap();
            assert_eq!(usize::from(packed.finished), out.flits.len());
            got.extend(out.flits.iter().copied());
            if dl_flits < 17 {
                assert_eq!(got.len(), 157 * dl_flits / 16, "after {dl_flits} DL flits");
            }
        }
        // 160 TL flits = 2560 sectors = 16.3 DL flits of 157 sectors: 17 DL flits.
        assert_eq!(dl_flits, 17);
        assert_eq!(got, (0..160).map(flit).collect::<Vec<_>>());
        assert!(!rx.has_carry());
    }

    #[test]
    fn segment_headers_naming_a_flit_without_room_are_refused() {
        let payload = [0u8; PAYLOAD_LEN];
        let mut out = Delivered::default();
        let m = Some(MBits::default());
        let carrying = |done| FlitUnpacker { carry: Carry { left: TL_SECTORS - done, ..Carry::NONE } };
        let field = "segment header TL Flit present (no sector free for it)";

        // Alt at 0 and 16 carried sectors (1..17) pass the half: TL Flit[1] alone has no room.
        let mut sh = [SegmentHeader::default(); 5];
        sh[0] = SegmentHeader { alt_sector: true, tl_flits: [None, m] };
        let mut rx = carrying(0);
        let before = rx.clone();
        assert_eq!(rx.unpack(&sh, &payload, &mut out), Err(Error::BadValue { field, value: 0b1000_0001 }));
        assert_eq!(rx, before, "a refused DL flit changes nothing");

        // Alt + 15 carried fill the first half; TL Flit[0] fills the second; no room for [1].
        sh[0] = SegmentHeader { alt_sector: true, tl_flits: [m, m] };
        assert_eq!(carrying(1).unpack(&sh, &payload, &mut out), Err(Error::BadValue { field, value: 0b1001_0001 }));
        // Without TL Flit[1] it is the §6.3.4 special case and legal.
        sh[0] = SegmentHeader { alt_sector: true, tl_flits: [m, None] };
        assert_eq!(carrying(1).unpack(&sh, &payload, &mut out), Ok(()));
        assert_eq!(out.flits.len(), 2, "the carried flit and TL Flit[0]");
        assert_eq!(out.alt.len(), 1);
    }

    proptest! {
        /// Any stream of TL flits and alternative words, with TL flits ready or not at each tick,
        /// unpacks to itself, in order, across DL flits.
        #[test]
        fn any_stream_round_trips(
            n in 0u8..60,
            words in prop::collection::vec(any::<u32>(), 0..12),
            ready in prop::collection::vec(any::<bool>(), 64),
        ) {
            /// TL flits, some ticks not ready.
            #[derive(Clone)]
            struct Gappy { q: Deque<TlFlit, 64>, ready: Vec<bool>, tick: usize }
            impl TlSource for Gappy {
                fn has_flit(&self) -> bool { !self.q.is_empty() }
                fn next_flit(&mut self, out: &mut TlFlit) -> bool {
                    self.tick += 1;
                    self.ready[self.tick % self.ready.len()] && self.q.next_flit(out)
                }
            }
            // At least one tick in the cycle is ready, so every flit is taken in the end: the
            // guard below bounds a run that cannot stall, not one that might by chance.
            let mut ready = ready;
            ready[0] = true;
            let mut tl = Gappy { q: deque((0..n).map(flit)), ready, tick: 0 };
            let mut alt: Deque<u32, 16> = deque(words.iter().copied());
            let mut tx = FlitPacker::new();
            let mut rx = FlitUnpacker::new();
            let (mut flits, mut alts) = (Vec::new(), Vec::new());
            let mut out = Delivered::default();
            let mut guard = 0;
            while tx.has_payload(&tl, &alt) {
                guard += 1;
                prop_assert!(guard < 1000);
                let mut sh = [SegmentHeader::default(); 5];
                // Packed over stale bytes: every byte is written, the same as over zeros.
                let mut clean = [0u8; PAYLOAD_LEN];
                tx.clone().pack(&mut tl.clone(), &mut alt.clone(), &mut sh, &mut clean);
                let mut payload = [0xA5u8; PAYLOAD_LEN];
                tx.pack(&mut tl, &mut alt, &mut sh, &mut payload);
                prop_assert_eq!(payload, clean);
                // Through the segment-header bytes, as on the wire.
                let sh = sh.map(|h| SegmentHeader::from_byte(h.to_byte()));
                rx.unpack(&sh, &payload, &mut out).unwrap();
                flits.extend(out.flits.iter().copied());
                alts.extend(out.alt.iter().copied());
            }
            prop_assert_eq!(flits, (0..n).map(flit).collect::<Vec<_>>());
            prop_assert_eq!(alts, words);
            prop_assert!(!rx.has_carry());
        }

        /// Any segment headers: refused, or unpacked without panicking.
        #[test]
        fn any_headers_are_safe(sh in prop::array::uniform5(any::<u8>()), carry in 0u8..16) {
            let sh = sh.map(SegmentHeader::from_byte);
            let mut rx = FlitUnpacker::new();
            if carry > 0 {
                rx.carry = Carry { left: TL_SECTORS - carry, ..Carry::NONE };
            }
            let mut out = Delivered::default();
            let _ = rx.unpack(&sh, &[0u8; PAYLOAD_LEN], &mut out);
        }
    }
}
