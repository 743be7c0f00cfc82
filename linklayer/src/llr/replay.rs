//! The reusable go-back-N replay buffer.
//!
//! [`ReplayBuffer`] is the part every link-level retry scheme in the workspace shares: it numbers
//! frames in a wrapping sequence space, keeps their bytes until a cumulative acknowledgement
//! releases them, and replays from any unacknowledged frame. It holds no timers and no
//! protocol rules, so each link puts its own on top:
//!
//! | link | sequence space | acknowledgement rule | replay trigger | on top of this buffer |
//! |---|---|---|---|---|
//! | UE LLR (UE 1.0 §5.1) | [`super::UeLlrSpace`] | cumulative LLR_ACK; LLR_NACK acks then replays | NACK, replay timer | [`super::LlrTx`] |
//! | UALink DL (UALink 1.0 §6.6) | `NonZeroBits<9>` (1..=511) | ack if within 256 of `Rx_last_ack`; a replay request is *not* an ack | replay request, ack time-out | `ualink-flit` DL replay |
//! | UCIe retry (UCIe 2.0 §3.8) | `NonZeroBits<8>` (1..=255) | PCIe 6.0 flit-mode Ack/Nak | Nak, `REPLAY_TIMEOUT_FLIT_COUNT` | `ucie-adapter` retry |
//!
//! The split that makes this possible: [`ReplayBuffer::ack`] releases frames and
//! [`ReplayBuffer::rewind`] moves the send cursor back, independently, so "a NACK acknowledges
//! what precedes it" (UE) and "a replay request is not an acknowledgement" (UALink) are each one
//! line in the link's own machine. Acceptance windows narrower than the buffer's (UALink's 256)
//! are checked by the caller with [`crate::seq::Seq::distance_to`] before calling `ack`.
//!
//! Frames may be built in place: [`ReplayBuffer::push_with`] hands the caller the sequence number
//! and the frame's storage, so a DL flit can carry its own sequence number under its CRC without
//! an extra copy. Transmission borrows from the buffer ([`ReplayBuffer::poll_next`]), so the only
//! copy is the one onto the wire.
//!
//! Storage is caller-provided (`B: AsRef<[u8]> + AsMut<[u8]>`: a `[u8; N]` inside the struct or a
//! `&mut [u8]` in DMA memory) and frame descriptors live in a const-generic ring of `N` entries.
//! Frames are stored contiguously in a circular byte arena; a frame that does not fit before the
//! end of the arena starts again at offset 0 (the tail is left unused until the head passes it).
//!
//! The number of frames in the buffer is capped at half the sequence space (for go-back-N with
//! serial comparison; 255 for UALink, 127 for UCIe) and at `N`.

use crate::Error;
use crate::seq::{Seq, SeqSpace};
use crate::time::Instant;
use heapless::Deque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    offset: usize,
    len: usize,
    stored_at: Instant,
    mark: bool,
}

/// A frame handed out for transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing<'a, S: SeqSpace> {
    /// The frame's sequence number.
    pub seq: Seq<S>,
    /// The frame's bytes, borrowed from the buffer.
    pub frame: &'a [u8],
    /// Whether the frame was transmitted before (this is a replay).
    pub replay: bool,
    /// The owner's flag stored with the frame ([`ReplayBuffer::push_marked_with`]; UE LLR: a
    /// poisoned frame, sent with its FCS stomped every time).
    pub mark: bool,
}

/// Go-back-N replay buffer over sequence space `S`, byte storage `B` and `N` frame slots.
///
/// Invariants: `cursor <= sent <= slots.len()`; slot *i* holds sequence number `base + i`; frames
/// `[0, sent)` have been transmitted at least once; `[cursor, ...)` are due for (re)transmission.
#[derive(Clone, Debug)]
pub struct ReplayBuffer<S: SeqSpace, B, const N: usize> {
    slots: Deque<Slot, N>,
    storage: B,
    /// The oldest frame's sequence number, as its index from `Seq::FIRST` (so a buffer at
    /// `Seq::FIRST` with nothing stored is all-zero bytes but its storage).
    base: u32,
    space: core::marker::PhantomData<S>,
    sent: usize,
    cursor: usize,
    bytes: usize,
}

impl<S: SeqSpace, B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> ReplayBuffer<S, B, N> {
    /// The largest number of frames the buffer holds: `min(N, (MODULUS - 1) / 2)`.
    pub const MAX_FRAMES: usize = {
        let half = ((S::MODULUS - 1) / 2) as usize;
        if N < half { N } else { half }
    };

    /// An empty buffer whose first frame will be numbered `first`.
    pub const fn new(storage: B, first: Seq<S>) -> Self {
        ReplayBuffer {
            slots: Deque::new(),
            storage,
            base: first.index() as u32,
            space: core::marker::PhantomData,
            sent: 0,
            cursor: 0,
            bytes: 0,
        }
    }

    /// Frames stored (sent or not).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no frame is stored.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Frames transmitted at least once and not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.sent
    }

    /// Frames stored but never transmitted.
    pub fn unsent(&self) -> usize {
        self.slots.len() - self.sent
    }

    /// Frames due for (re)transmission.
    pub fn pending(&self) -> usize {
        self.slots.len() - self.cursor
    }

    /// Whether the cursor is behind frames already sent (a replay is in progress).
    pub fn is_replaying(&self) -> bool {
        self.cursor < self.sent
    }

    /// Frames already sent that the cursor will send again before any new frame.
    pub fn replays_pending(&self) -> usize {
        self.sent - self.cursor
    }

    /// Bytes of stored frames.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Capacity of the byte storage.
    pub fn capacity_bytes(&self) -> usize {
        self.storage.as_ref().len()
    }

    /// Sequence number of the oldest stored frame, or of the next frame if empty.
    pub const fn base(&self) -> Seq<S> {
        Seq::from_index(self.base as u64)
    }

    /// Sequence number the next pushed frame gets.
    pub fn next_seq(&self) -> Seq<S> {
        self.base().wrapping_add(self.slots.len() as u64)
    }

    /// Sequence number of the newest frame transmitted at least once, or `base - 1` if none.
    pub fn last_sent(&self) -> Seq<S> {
        self.base().wrapping_add(self.sent as u64).prev()
    }

    /// When the oldest stored frame entered the buffer.
    pub fn oldest_stored_at(&self) -> Option<Instant> {
        self.slots.front().map(|s| s.stored_at)
    }

    /// The descriptor of the `i`-th stored frame, in O(1).
    fn slot(&self, i: usize) -> Option<Slot> {
        let (a, b) = self.slots.as_slices();
        match i.checked_sub(a.len()) {
            None => a.get(i).copied(),
            Some(j) => b.get(j).copied(),
        }
    }

    fn bytes_of(&self, slot: Slot) -> Option<&[u8]> {
        self.storage.as_ref().get(slot.offset..slot.offset + slot.len)
    }

    /// The bytes of the stored frame `seq`.
    pub fn get(&self, seq: Seq<S>) -> Option<&[u8]> {
        let i = usize::try_from(self.base().distance_to(seq)).ok()?;
        self.bytes_of(self.slot(i)?)
    }

    /// Where a frame of `len` bytes would go, if it fits.
    fn place(&self, len: usize) -> Option<usize> {
        let cap = self.capacity_bytes();
        let (Some(front), Some(back)) = (self.slots.front(), self.slots.back()) else {
            return (len <= cap).then_some(0);
        };
        let head = front.offset;
        let tail = back.offset + back.len;
        if back.offset >= front.offset {
            // Not wrapped: free space is [tail, cap) and [0, head).
            if cap - tail >= len {
                Some(tail)
            } else if head >= len {
                Some(0)
            } else {
                None
            }
        } else if head - tail >= len {
            // Wrapped: free space is [tail, head).
            Some(tail)
        } else {
            None
        }
    }

    /// Whether a frame of `len` bytes (1 or more) would be stored now: a slot, room in the
    /// sequence window and contiguous bytes are free.
    pub fn can_push(&self, len: usize) -> bool {
        len > 0 && self.slots.len() < Self::MAX_FRAMES && self.place(len).is_some()
    }

    /// Stores a `len`-byte frame built in place by `fill`, which receives the frame's sequence
    /// number and its storage. Returns the sequence number, or [`Error::WindowFull`] (nothing
    /// changed, `fill` not called) when frame slots, bytes or the sequence window are exhausted.
    /// Empty frames are refused.
    pub fn push_with(
        &mut self,
        now: Instant,
        len: usize,
        fill: impl FnOnce(Seq<S>, &mut [u8]),
    ) -> Result<Seq<S>, Error> {
        self.push_marked_with(now, len, false, fill)
    }

    /// [`ReplayBuffer::push_with`] with the owner's flag `mark` stored beside the frame and handed
    /// back with every transmission of it ([`Outgoing::mark`]).
    pub fn push_marked_with(
        &mut self,
        now: Instant,
        len: usize,
        mark: bool,
        fill: impl FnOnce(Seq<S>, &mut [u8]),
    ) -> Result<Seq<S>, Error> {
        if len == 0 {
            return Err(Error::BadValue { field: "frame length", value: 0 });
        }
        if self.slots.len() >= Self::MAX_FRAMES {
            return Err(Error::WindowFull);
        }
        let offset = self.place(len).ok_or(Error::WindowFull)?;
        let seq = self.next_seq();
        let buf = self.storage.as_mut().get_mut(offset..offset + len).ok_or(Error::WindowFull)?;
        self.slots.push_back(Slot { offset, len, stored_at: now, mark }).map_err(|_| Error::WindowFull)?;
        fill(seq, buf);
        self.bytes += len;
        Ok(seq)
    }

    /// Stores a copy of `frame`; see [`ReplayBuffer::push_with`].
    pub fn push(&mut self, now: Instant, frame: &[u8]) -> Result<Seq<S>, Error> {
        self.push_with(now, frame.len(), |_, buf| _ = crate::bytes::copy_prefix(buf, frame))
    }

    /// The next frame to (re)transmit, advancing the cursor.
    pub fn poll_next(&mut self) -> Option<Outgoing<'_, S>> {
        let slot = self.slot(self.cursor)?;
        let seq = self.base().wrapping_add(self.cursor as u64);
        let replay = self.cursor < self.sent;
        self.cursor += 1;
        self.sent = self.sent.max(self.cursor);
        let frame = self.bytes_of(slot)?;
        Some(Outgoing { seq, frame, replay, mark: slot.mark })
    }

    /// Index of `seq` among the frames sent, if `base - 1 <= seq <= last_sent`, as the number of
    /// frames up to and including it.
    fn acked_count(&self, seq: Seq<S>, field: &'static str) -> Result<usize, Error> {
        let d = self.base().prev().distance_to(seq);
        if d > self.sent as u64 {
            return Err(Error::OutOfWindow { field, seq: seq.value() });
        }
        Ok(d as usize)
    }

    /// Cumulative acknowledgement: releases every frame up to and including `upto` and returns
    /// how many. `upto` must lie between the last acknowledged frame and the newest frame sent;
    /// anything else (stale, corrupt, or acknowledging a frame never sent) is
    /// [`Error::OutOfWindow`] and changes nothing. A repeated acknowledgement releases 0.
    pub fn ack(&mut self, upto: Seq<S>) -> Result<usize, Error> {
        let n = self.acked_count(upto, "ack")?;
        for _ in 0..n {
            if let Some(slot) = self.slots.pop_front() {
                self.bytes -= slot.len;
            }
        }
        self.base = self.base().wrapping_add(n as u64).index() as u32;
        self.sent -= n;
        self.cursor = self.cursor.saturating_sub(n);
        Ok(n)
    }

    /// Go-back-N: the next frame transmitted will be `from`, which must be a stored frame already
    /// sent, or the frame after the newest sent (which ends a replay in progress). Anything else
    /// is [`Error::OutOfWindow`] and changes nothing. Frames before `from` stay stored until
    /// acknowledged.
    ///
    /// A rewind during a replay moves the cursor to `from` either way, back or forward: the
    /// newer request says what the receiver has now (UALink 1.0 §6.6.6.3 schedules the replay
    /// "with the ackReqSeq from the received Flit"), and frames it already holds need not go
    /// again.
    pub fn rewind(&mut self, from: Seq<S>) -> Result<(), Error> {
        let i = self.base().distance_to(from);
        if i > self.sent as u64 {
            return Err(Error::OutOfWindow { field: "replay", seq: from.value() });
        }
        self.cursor = i as usize;
        Ok(())
    }

    /// Go-back-N from the oldest stored frame.
    pub fn rewind_all(&mut self) {
        self.cursor = 0;
    }

    /// Drops every stored frame and returns how many; numbering continues after the last frame
    /// stored (the next frame gets [`ReplayBuffer::next_seq`] as it was).
    pub fn clear(&mut self) -> usize {
        let n = self.slots.len();
        let next = self.next_seq();
        self.reset_to(next);
        n
    }

    /// The owner's flag of the frame [`ReplayBuffer::poll_next`] would hand out next, `None`
    /// when no frame is due (CXL LLR: whether the next flit is an all-data flit, before which
    /// no control flit may go).
    pub fn peek_next_mark(&self) -> Option<bool> {
        self.slot(self.cursor).map(|s| s.mark)
    }

    /// The owner's flag of the newest stored frame (`false` when empty).
    pub fn peek_newest_mark(&self) -> bool {
        self.slots.back().is_some_and(|s| s.mark)
    }

    /// Takes back the newest frame after its first transmission, when nothing was stored
    /// after it and no replay is in progress: its sequence number goes to the next frame
    /// pushed (UCIe `lp_corrupt_crc`: a flit sent with a corrupted CRC is overwritten in the
    /// retry buffer by the next flit). Returns whether it was taken back.
    pub fn retract_newest(&mut self) -> bool {
        if self.sent == 0 || self.sent != self.slots.len() || self.cursor != self.sent {
            return false;
        }
        let Some(slot) = self.slots.pop_back() else { return false };
        self.bytes -= slot.len;
        self.sent -= 1;
        self.cursor -= 1;
        true
    }

    /// Drops every stored frame and restarts numbering at `first`.
    pub fn reset_to(&mut self, first: Seq<S>) {
        self.slots.clear();
        self.base = first.index() as u32;
        self.sent = 0;
        self.cursor = 0;
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seq::{Bits, NonZeroBits};
    use proptest::prelude::*;

    type Buf = ReplayBuffer<Bits<16>, [u8; 64], 8>;
    const T: Instant = Instant::ZERO;

    fn s(v: u32) -> Seq<Bits<16>> {
        Seq::new(v).unwrap()
    }

    #[test]
    fn send_ack_replay() {
        let mut b = Buf::new([0; 64], s(100));
        for i in 0..4u8 {
            assert_eq!(b.push(T, &[i; 10]).unwrap(), s(100 + u32::from(i)));
        }
        let o = b.poll_next().unwrap();
        assert_eq!((o.seq, o.frame, o.replay), (s(100), &[0u8; 10][..], false));
        b.poll_next().unwrap();
        b.poll_next().unwrap();
        assert_eq!(b.in_flight(), 3);
        assert_eq!(b.unsent(), 1);
        // Acknowledging a frame never sent is refused.
        assert_eq!(b.ack(s(103)), Err(Error::OutOfWindow { field: "ack", seq: 103 }));
        assert_eq!(b.ack(s(100)).unwrap(), 1);
        assert_eq!(b.ack(s(100)).unwrap(), 0);
        // Go back to 101: 101, 102 are replays, 103 is new.
        b.rewind(s(101)).unwrap();
        assert!(b.is_replaying());
        let seqs: heapless::Vec<_, 8> =
            core::iter::from_fn(|| b.poll_next().map(|o| (o.seq.value(), o.replay))).collect();
        assert_eq!(&seqs[..], &[(101, true), (102, true), (103, false)]);
        assert_eq!(b.ack(s(103)).unwrap(), 3);
        assert!(b.is_empty());
        assert_eq!(b.bytes(), 0);
        assert_eq!(b.next_seq(), s(104));
    }

    /// A second rewind during a replay moves the cursor to its frame, forward as well as back.
    #[test]
    fn a_later_rewind_moves_the_cursor_to_its_frame() {
        let mut b = Buf::new([0; 64], s(10));
        for i in 0..5u8 {
            b.push(T, &[i; 4]).unwrap();
            b.poll_next().unwrap();
        }
        b.rewind(s(10)).unwrap();
        assert_eq!(b.poll_next().unwrap().seq, s(10));
        // The receiver now has up to 12: the replay goes on from 13, not from 11.
        b.rewind(s(13)).unwrap();
        assert_eq!(b.replays_pending(), 2);
        assert_eq!(b.poll_next().map(|o| (o.seq, o.replay)), Some((s(13), true)));
        // And back again.
        b.rewind(s(11)).unwrap();
        assert_eq!(b.poll_next().unwrap().seq, s(11));
        // The frame after the newest sent ends the replay.
        b.rewind(s(15)).unwrap();
        assert!(!b.is_replaying());
        assert_eq!(b.rewind(s(16)), Err(Error::OutOfWindow { field: "replay", seq: 16 }));
    }

    #[test]
    fn ack_during_replay_skips_acknowledged_frames() {
        let mut b = Buf::new([0; 64], s(0));
        for _ in 0..3 {
            b.push(T, &[1; 4]).unwrap();
            b.poll_next().unwrap();
        }
        b.rewind_all();
        assert_eq!(b.poll_next().unwrap().seq, s(0));
        assert_eq!(b.ack(s(1)).unwrap(), 2);
        assert_eq!(b.poll_next().unwrap().seq, s(2));
        assert!(b.poll_next().is_none());
    }

    #[test]
    fn byte_arena_wraps() {
        let mut b = Buf::new([0; 64], s(0));
        b.push(T, &[1; 30]).unwrap();
        b.push(T, &[2; 30]).unwrap();
        assert_eq!(b.push(T, &[3; 10]), Err(Error::WindowFull));
        b.poll_next().unwrap();
        b.ack(s(0)).unwrap();
        // 30 bytes free at the front, 4 at the back: the frame wraps to offset 0.
        b.push(T, &[3; 20]).unwrap();
        assert_eq!(b.get(s(2)).unwrap(), &[3; 20]);
        assert_eq!(b.get(s(1)).unwrap(), &[2; 30]);
        // Wrapped: only [20, 30) is free.
        assert_eq!(b.push(T, &[4; 11]), Err(Error::WindowFull));
        b.push(T, &[4; 10]).unwrap();
        assert_eq!(b.bytes(), 60);
        assert_eq!(b.push(T, &[]), Err(Error::BadValue { field: "frame length", value: 0 }));
        assert_eq!(b.push(T, &[0; 65]), Err(Error::WindowFull));
    }

    #[test]
    fn window_is_half_the_sequence_space() {
        // UCIe-like: 1..=255, at most 127 frames outstanding.
        assert_eq!(ReplayBuffer::<NonZeroBits<8>, [u8; 1024], 200>::MAX_FRAMES, 127);
        assert_eq!(ReplayBuffer::<NonZeroBits<9>, [u8; 1024], 300>::MAX_FRAMES, 255);
        let mut b = ReplayBuffer::<Bits<3>, [u8; 64], 16>::new([0; 64], Seq::FIRST);
        for _ in 0..3 {
            b.push(T, &[0]).unwrap();
        }
        assert_eq!(b.push(T, &[0]), Err(Error::WindowFull));
    }

    #[test]
    fn in_place_build_sees_its_sequence_number() {
        let mut b = ReplayBuffer::<NonZeroBits<9>, [u8; 1280], 4>::new([0; 1280], Seq::LAST);
        let seq =
            b.push_with(T, 640, |seq, buf| buf[..2].copy_from_slice(&(seq.value() as u16).to_be_bytes())).unwrap();
        assert_eq!(seq.value(), 511);
        let seq2 =
            b.push_with(T, 640, |seq, buf| buf[..2].copy_from_slice(&(seq.value() as u16).to_be_bytes())).unwrap();
        assert_eq!(seq2.value(), 1, "511 wraps to 1");
        assert_eq!(&b.get(seq2).unwrap()[..2], &[0, 1]);
    }

    #[test]
    fn clear_keeps_numbering() {
        let mut b = Buf::new([0; 64], s(65535));
        b.push(T, &[1]).unwrap();
        b.push(T, &[1]).unwrap();
        b.poll_next().unwrap();
        assert_eq!(b.clear(), 2);
        assert_eq!(b.next_seq(), s(1));
        assert_eq!(b.push(T, &[1]).unwrap(), s(1));
    }

    #[test]
    fn ualink_style_rules_fit_on_top() {
        // UALink 1.0 §6.6: sequence numbers 1..=511; an ack is accepted only if it is within 256 of
        // Rx_last_ack and of Tx_last_seq; a replay request is not an implicit ack.
        type Ual = Seq<NonZeroBits<9>>;
        let mut b = ReplayBuffer::<NonZeroBits<9>, [u8; 4096], 300>::new([0; 4096], Ual::new(500).unwrap());
        for _ in 0..20 {
            b.push(T, &[0; 8]).unwrap();
            b.poll_next().unwrap();
        }
        let last_ack = b.base().prev();
        let accept = |ack: Ual, b: &ReplayBuffer<NonZeroBits<9>, [u8; 4096], 300>| {
            last_ack.distance_to(ack) <= 256 && ack.distance_to(b.last_sent()) <= 256
        };
        // Frames 500..=511 then 1..=8 are out; Tx_last_seq is 8.
        assert_eq!(b.last_sent().value(), 8);
        let ack = Ual::new(3).unwrap();
        assert!(accept(ack, &b));
        assert_eq!(b.ack(ack).unwrap(), 15);
        // A replay request from 5 rewinds without releasing anything.
        b.rewind(Ual::new(5).unwrap()).unwrap();
        assert_eq!(b.len(), 5);
        assert_eq!(b.poll_next().unwrap().seq.value(), 5);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(u8),
        Send,
        Ack(u16),
        Rewind(u16),
        RewindAll,
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u8..40).prop_map(Op::Push),
            4 => Just(Op::Send),
            2 => (0u16..12).prop_map(Op::Ack),
            1 => (0u16..12).prop_map(Op::Rewind),
            1 => Just(Op::RewindAll),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        /// Against a plain model: every frame comes back with the bytes it was pushed with, the
        /// sequence numbers are consecutive, and no call panics.
        #[test]
        fn matches_a_simple_model(ops in proptest::collection::vec(op(), 0..200)) {
            let mut b = ReplayBuffer::<Bits<4>, [u8; 100], 6>::new([0; 100], Seq::new(13).unwrap());
            let mut model: std::collections::VecDeque<(u32, std::vec::Vec<u8>)> = Default::default();
            let mut counter = 0u8;
            for op in ops {
                match op {
                    Op::Push(len) => {
                        counter = counter.wrapping_add(1);
                        let frame = std::vec![counter; usize::from(len)];
                        let room = b.can_push(frame.len());
                        let pushed = b.push(T, &frame);
                        prop_assert_eq!(room, pushed.is_ok(), "can_push says what push does");
                        if let Ok(seq) = pushed {
                            model.push_back((seq.value(), frame));
                        }
                    }
                    Op::Send => {
                        if let Some(o) = b.poll_next() {
                            let (seq, frame) = model.iter().find(|(s, _)| *s == o.seq.value()).unwrap();
                            prop_assert_eq!(*seq, o.seq.value());
                            prop_assert_eq!(&frame[..], o.frame);
                        }
                    }
                    Op::Ack(k) => {
                        let target = b.base().wrapping_add(u64::from(k)).prev();
                        if let Ok(n) = b.ack(target) {
                            for _ in 0..n { model.pop_front(); }
                        }
                    }
                    Op::Rewind(k) => { let _ = b.rewind(b.base().wrapping_add(u64::from(k))); }
                    Op::RewindAll => b.rewind_all(),
                    Op::Clear => { b.clear(); model.clear(); }
                }
                prop_assert_eq!(b.len(), model.len());
                prop_assert!(b.in_flight() <= b.len());
                prop_assert_eq!(b.bytes(), model.iter().map(|(_, f)| f.len()).sum::<usize>());
                for (i, (seq, frame)) in model.iter().enumerate() {
                    prop_assert_eq!(*seq, b.base().wrapping_add(i as u64).value());
                    prop_assert_eq!(b.get(Seq::new(*seq).unwrap()).unwrap(), &frame[..]);
                }
            }
        }
    }

    #[test]
    fn retract_newest_gives_its_number_to_the_next_frame() {
        let mut b = Buf::new([0; 64], Seq::new(1).unwrap());
        b.push(T, &[1; 4]).unwrap();
        let bad = b.push(T, &[2; 4]).unwrap();
        // Not yet sent: nothing to take back.
        assert!(!b.retract_newest());
        assert_eq!(b.poll_next().map(|o| o.seq.value()), Some(1));
        assert_eq!(b.poll_next().map(|o| o.seq), Some(bad));
        assert!(b.retract_newest());
        assert_eq!((b.len(), b.in_flight(), b.bytes()), (1, 1, 4));
        assert_eq!(b.push(T, &[3; 4]).unwrap(), bad);
        assert_eq!(b.poll_next().map(|o| o.frame[0]), Some(3));
        // During a replay nothing is taken back.
        b.rewind_all();
        assert!(!b.retract_newest());
    }

    #[test]
    fn peek_next_mark_follows_the_cursor() {
        let mut b = Buf::new([0; 64], Seq::new(1).unwrap());
        assert_eq!(b.peek_next_mark(), None);
        b.push_marked_with(T, 4, false, |_, f| f.fill(1)).unwrap();
        b.push_marked_with(T, 4, true, |_, f| f.fill(2)).unwrap();
        assert_eq!(b.peek_next_mark(), Some(false));
        assert!(!b.poll_next().unwrap().mark);
        assert_eq!(b.peek_next_mark(), Some(true));
        assert!(b.poll_next().unwrap().mark);
        assert_eq!(b.peek_next_mark(), None);
        b.rewind_all();
        assert_eq!(b.peek_next_mark(), Some(false));
    }
}
