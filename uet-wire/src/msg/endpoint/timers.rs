//! Deadlines by slot in a binary min-heap: the earliest in O(1), set, move or clear one in
//! O(log n), no allocation. The endpoint keeps one for its initiator PDCs, one for its target
//! PDCs (by table slot) and one for its READs waiting for data (by message slot), so
//! `poll_timeout` reads three heads and `handle_timeout` visits only what is due.

use linklayer::Instant;

/// A slot not in the heap (its place as stored: places are stored inverted, so an empty heap is
/// all-zero bytes and can be a `static` in `.bss`).
const ABSENT: u16 = 0;

/// The deadlines of up to `N` slots (`N` < 65 535).
#[derive(Clone, Debug)]
pub(super) struct TimerHeap<const N: usize> {
    /// Each slot's deadline, while it is in the heap.
    at: [Instant; N],
    /// Each slot's place in `heap`, inverted, or [`ABSENT`].
    place: [u16; N],
    /// The slots with a deadline, earliest first at 0; each entry's deadline is no earlier than
    /// its parent's (entry `(i - 1) / 2`).
    heap: [u16; N],
    len: usize,
}

impl<const N: usize> TimerHeap<N> {
    const FITS: () = assert!(N < u16::MAX as usize, "slots and inverted places must fit 16 bits above ABSENT");

    /// No deadlines (all-zero bytes).
    pub(super) const EMPTY: Self = {
        let () = Self::FITS;
        TimerHeap { at: [Instant::ZERO; N], place: [ABSENT; N], heap: [0; N], len: 0 }
    };

    /// Clears every deadline, in place.
    pub(super) fn clear(&mut self) {
        self.place.fill(ABSENT);
        self.len = 0;
    }

    /// Slots with a deadline.
    pub(super) const fn len(&self) -> usize {
        self.len
    }

    /// The earliest deadline and its slot.
    pub(super) fn first(&self) -> Option<(Instant, u16)> {
        let slot = *self.heap.get(..self.len)?.first()?;
        Some((self.deadline(slot)?, slot))
    }

    /// The deadline of `slot`, if it has one.
    pub(super) fn deadline(&self, slot: u16) -> Option<Instant> {
        let i = usize::from(slot);
        self.place.get(i).filter(|&&p| p != ABSENT)?;
        self.at.get(i).copied()
    }

    /// Gives `slot` the deadline `at`, or none; out-of-range slots are ignored.
    pub(super) fn set(&mut self, slot: u16, at: Option<Instant>) {
        let i = usize::from(slot);
        let (Some(&place), Some(old)) = (self.place.get(i), self.at.get_mut(i)) else { return };
        match ((place != ABSENT).then_some(usize::from(!place)), at) {
            (None, None) => {}
            (None, Some(t)) => {
                *old = t;
                let end = self.len;
                let Some(e) = self.heap.get_mut(end) else { return };
                *e = slot;
                self.len += 1;
                self.set_place(slot, end);
                self.sift_up(end);
            }
            // Unchanged: most calls, from the refresh after every packet.
            (Some(_), Some(t)) if t == *old => {}
            (Some(p), Some(t)) => {
                let earlier = t < *old;
                *old = t;
                if earlier {
                    self.sift_up(p);
                } else {
                    self.sift_down(p);
                }
            }
            (Some(p), None) => self.remove_at(p),
        }
    }

    /// Takes the earliest slot off the heap if its deadline is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<u16> {
        let (at, slot) = self.first()?;
        if at > now {
            return None;
        }
        self.remove_at(0);
        Some(slot)
    }

    /// Takes the entry at heap place `p` out.
    fn remove_at(&mut self, p: usize) {
        let Some(&slot) = self.heap.get(p) else { return };
        if let Some(pl) = self.place.get_mut(usize::from(slot)) {
            *pl = ABSENT;
        }
        self.len -= 1;
        let Some(&last) = self.heap.get(self.len) else { return };
        if p == self.len {
            return;
        }
        // The last entry fills the hole, then moves whichever way its deadline says.
        if let Some(e) = self.heap.get_mut(p) {
            *e = last;
        }
        self.set_place(last, p);
        self.sift_up(p);
        self.sift_down(p);
    }

    /// The deadline of the entry at heap place `p`.
    fn key(&self, p: usize) -> Option<Instant> {
        self.heap.get(..self.len)?.get(p).and_then(|&s| self.at.get(usize::from(s)).copied())
    }

    fn set_place(&mut self, slot: u16, p: usize) {
        if let Some(pl) = self.place.get_mut(usize::from(slot)) {
            *pl = !(p as u16);
        }
    }

    /// Swaps the entries at heap places `a` and `b`.
    fn swap(&mut self, a: usize, b: usize) {
        let (Some(&sa), Some(&sb)) = (self.heap.get(a), self.heap.get(b)) else { return };
        self.heap.swap(a, b);
        self.set_place(sa, b);
        self.set_place(sb, a);
    }

    fn sift_up(&mut self, mut p: usize) {
        while p > 0 {
            let parent = (p - 1) / 2;
            if self.key(p) >= self.key(parent) {
                return;
            }
            self.swap(p, parent);
            p = parent;
        }
    }

    fn sift_down(&mut self, mut p: usize) {
        loop {
            let (l, r) = (2 * p + 1, 2 * p + 2);
            let mut least = p;
            for c in [l, r] {
                if c < self.len && self.key(c) < self.key(least) {
                    least = c;
                }
            }
            if least == p {
                return;
            }
            self.swap(p, least);
            p = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    proptest! {
        /// Against a plain table of deadlines: sets, moves, clears and pops in any order.
        #[test]
        fn matches_a_table(ops in prop::collection::vec((0u8..4, 0u16..10, 0u64..40), 0..300)) {
            let mut heap = TimerHeap::<10>::EMPTY;
            let mut model: [Option<u64>; 10] = [None; 10];
            for (op, slot, t) in ops {
                match op {
                    0 | 1 => {
                        heap.set(slot, Some(Instant::from_nanos(t)));
                        model[usize::from(slot)] = Some(t);
                    }
                    2 => {
                        heap.set(slot, None);
                        model[usize::from(slot)] = None;
                    }
                    _ => {
                        let earliest = model.iter().flatten().min().copied();
                        let popped = heap.pop_due(Instant::from_nanos(t));
                        match earliest.filter(|&e| e <= t) {
                            Some(e) => {
                                let s = popped.expect("a due deadline");
                                prop_assert_eq!(model[usize::from(s)], Some(e));
                                model[usize::from(s)] = None;
                            }
                            None => prop_assert_eq!(popped, None),
                        }
                    }
                }
                let earliest = model.iter().flatten().min().copied();
                prop_assert_eq!(heap.first().map(|(at, _)| at.as_nanos()), earliest);
                for s in 0..10u16 {
                    prop_assert_eq!(heap.deadline(s).map(Instant::as_nanos), model[usize::from(s)]);
                }
                let listed: Vec<u16> = heap.heap[..heap.len].to_vec();
                prop_assert_eq!(listed.len(), model.iter().flatten().count());
            }
            // Out of range: nothing happens.
            heap.set(99, Some(Instant::ZERO));
            prop_assert_eq!(heap.deadline(99), None);
        }
    }
}
