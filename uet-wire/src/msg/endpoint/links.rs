//! A list threaded through the endpoint's message slots by index: append, insert in order,
//! unlink and step in O(1) (ordered insertion walks back from the tail), no allocation. A slot
//! is on the list at most once.
//!
//! Links and ends are `u16`s (4 bytes a link instead of 10, thousands of slots over), each slot
//! index stored inverted: 0 is no slot, and an all-zero link is a slot on no list, so an empty
//! endpoint is all-zero bytes (it can be a `static` in `.bss`). A link's `prev` tells "first on
//! the list" from "on no list" by its lowest bit flipped besides. Slot indices stay below 32 768,
//! so an inverted index is never 0 or 1.

/// A slot, or none, as stored: the index inverted, 0 for none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Raw(u16);

impl Raw {
    /// No slot.
    const NIL: Raw = Raw(0);

    const fn of(slot: Option<u16>) -> Raw {
        match slot {
            Some(s) => Raw(!s),
            None => Raw::NIL,
        }
    }

    const fn slot(self) -> Option<u16> {
        if self.0 == 0 { None } else { Some(!self.0) }
    }
}

/// A slot's place on the list: the slots before and after it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Link {
    /// The slot before as a [`Raw`] with its lowest bit flipped: 0 on no list, 1 first on one.
    prev: u16,
    next: Raw,
}

impl Link {
    /// On no list (all-zero bytes).
    pub(super) const UNLINKED: Link = Link { prev: 0, next: Raw::NIL };

    /// On a list, between `prev` and `next`.
    const fn between(prev: Option<u16>, next: Option<u16>) -> Link {
        Link { prev: Raw::of(prev).0 ^ 1, next: Raw::of(next) }
    }

    const fn linked(self) -> bool {
        self.prev != 0
    }

    /// The slot before, on a list.
    const fn prev(self) -> Option<u16> {
        Raw(self.prev ^ 1).slot()
    }

    const fn set_prev(&mut self, prev: Option<u16>) {
        self.prev = Raw::of(prev).0 ^ 1;
    }
}

/// The list's ends; the links live in an array beside the slots.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SlotList {
    head: Raw,
    tail: Raw,
}

impl SlotList {
    /// No slot (all-zero bytes).
    pub(super) const EMPTY: SlotList = SlotList { head: Raw::NIL, tail: Raw::NIL };

    /// The first slot.
    pub(super) const fn first(&self) -> Option<u16> {
        self.head.slot()
    }

    /// The slots on the list, first to last.
    pub(super) fn iter(self, links: &[Link]) -> impl Iterator<Item = u16> + '_ {
        core::iter::successors(self.first(), |&s| Self::next(links, s))
    }

    /// The slot after `slot`.
    pub(super) fn next(links: &[Link], slot: u16) -> Option<u16> {
        links.get(usize::from(slot)).and_then(|l| l.next.slot())
    }

    /// Whether `slot` is on the list.
    pub(super) fn contains(links: &[Link], slot: u16) -> bool {
        links.get(usize::from(slot)).is_some_and(|l| l.linked())
    }

    /// Puts `slot` after the last slot `before` says precedes it (walking back from the tail), or
    /// first; a slot already on the list stays where it is. `before(s)` must hold for a prefix
    /// of the list, as it does for "was queued earlier" on a list kept in queueing order.
    pub(super) fn insert(&mut self, links: &mut [Link], slot: u16, before: impl Fn(u16) -> bool) {
        if Self::contains(links, slot) || links.get(usize::from(slot)).is_none() {
            return;
        }
        let mut prev = self.tail.slot();
        while let Some(p) = prev.filter(|&p| !before(p)) {
            prev = links.get(usize::from(p)).and_then(|l| l.prev());
        }
        let next = match prev {
            Some(p) => Self::next(links, p),
            None => self.first(),
        };
        if let Some(l) = links.get_mut(usize::from(slot)) {
            *l = Link::between(prev, next);
        }
        match prev.and_then(|p| links.get_mut(usize::from(p))) {
            Some(l) => l.next = Raw::of(Some(slot)),
            None => self.head = Raw::of(Some(slot)),
        }
        match next.and_then(|n| links.get_mut(usize::from(n))) {
            Some(l) => l.set_prev(Some(slot)),
            None => self.tail = Raw::of(Some(slot)),
        }
    }

    /// Puts `slot` at the back of `list` if `on` (where it is, if it is on it already), else
    /// takes it off.
    pub(super) fn place(slot: u16, on: bool, list: &mut SlotList, links: &mut [Link]) {
        if on {
            list.insert(links, slot, |_| true);
        } else {
            list.unlink(links, slot);
        }
    }

    /// The list's length if its links agree (each slot on it is linked, points back at the one
    /// before, and the last is the tail), else `None`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn well_formed(&self, links: &[Link]) -> Option<usize> {
        let (mut len, mut prev, mut at) = (0, None, self.first());
        while let Some(slot) = at {
            let l = links.get(usize::from(slot)).filter(|l| l.linked() && l.prev() == prev)?;
            len += 1;
            if len > links.len() {
                return None;
            }
            (prev, at) = (Some(slot), l.next.slot());
        }
        (self.tail.slot() == prev).then_some(len)
    }

    /// Takes `slot` off the list, if it is on it.
    pub(super) fn unlink(&mut self, links: &mut [Link], slot: u16) {
        let Some(&l) = links.get(usize::from(slot)).filter(|l| l.linked()) else { return };
        let (prev, next) = (l.prev(), l.next.slot());
        match prev.and_then(|p| links.get_mut(usize::from(p))) {
            Some(l) => l.next = Raw::of(next),
            None => self.head = Raw::of(next),
        }
        match next.and_then(|n| links.get_mut(usize::from(n))) {
            Some(l) => l.set_prev(prev),
            None => self.tail = Raw::of(prev),
        }
        if let Some(l) = links.get_mut(usize::from(slot)) {
            *l = Link::UNLINKED;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn collect(list: &SlotList, links: &[Link]) -> Vec<u16> {
        let mut out = Vec::new();
        let mut cur = list.first();
        while let Some(s) = cur {
            out.push(s);
            cur = SlotList::next(links, s);
        }
        assert_eq!(list.iter(links).collect::<Vec<_>>(), out);
        out
    }

    proptest! {
        /// Against a vector kept sorted by each slot's rank: inserts by rank, unlinks anywhere.
        #[test]
        fn matches_a_sorted_vector(ops in prop::collection::vec((any::<bool>(), 0u16..12, 0u8..50), 0..200)) {
            let mut links = [Link::default(); 12];
            let mut list = SlotList::default();
            let mut rank = [0u8; 12];
            let mut model: Vec<u16> = Vec::new();
            for (add, slot, r) in ops {
                if add {
                    if !model.contains(&slot) {
                        rank[usize::from(slot)] = r;
                        let at = model.iter().position(|&s| rank[usize::from(s)] > r).unwrap_or(model.len());
                        model.insert(at, slot);
                    }
                    let ranks = rank;
                    list.insert(&mut links, slot, |s| ranks[usize::from(s)] <= ranks[usize::from(slot)]);
                } else {
                    model.retain(|&s| s != slot);
                    list.unlink(&mut links, slot);
                }
                prop_assert_eq!(collect(&list, &links), model.clone());
                for s in 0..12 {
                    prop_assert_eq!(SlotList::contains(&links, s), model.contains(&s));
                }
            }
            // Out of range: nothing happens.
            list.insert(&mut links, 99, |_| true);
            list.unlink(&mut links, 99);
            prop_assert_eq!(collect(&list, &links), model);
        }
    }
}
