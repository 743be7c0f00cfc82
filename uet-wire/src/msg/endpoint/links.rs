//! A list threaded through the endpoint's message slots by index: append, insert in order,
//! unlink and step in O(1) (ordered insertion walks back from the tail), no allocation. A slot
//! is on the list at most once.
//!
//! Links and ends are `u16`s with two reserved values (4 bytes a link instead of 10, thousands
//! of slots over): [`NIL`] for no slot, [`OFF`] in `prev` for a slot on no list. Slot indices stay
//! below both (the endpoint holds at most 32 768 slots of a kind).

/// No slot.
const NIL: u16 = u16::MAX;
/// In a link's `prev`: the slot is on no list.
const OFF: u16 = u16::MAX - 1;

/// `raw` as an optional slot.
const fn slot(raw: u16) -> Option<u16> {
    if raw == NIL { None } else { Some(raw) }
}

/// An optional slot as stored.
const fn raw(slot: Option<u16>) -> u16 {
    match slot {
        Some(s) => s,
        None => NIL,
    }
}

/// A slot's place on the list.
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    prev: u16,
    next: u16,
}

impl Link {
    /// On no list.
    const UNLINKED: Link = Link { prev: OFF, next: NIL };

    const fn linked(self) -> bool {
        self.prev != OFF
    }
}

impl Default for Link {
    fn default() -> Self {
        Link::UNLINKED
    }
}

/// The list's ends; the links live in an array beside the slots.
#[derive(Clone, Copy, Debug)]
pub(super) struct SlotList {
    head: u16,
    tail: u16,
}

impl Default for SlotList {
    fn default() -> Self {
        SlotList { head: NIL, tail: NIL }
    }
}

impl SlotList {
    /// The first slot.
    pub(super) const fn first(&self) -> Option<u16> {
        slot(self.head)
    }

    /// The slots on the list, first to last.
    pub(super) fn iter(self, links: &[Link]) -> impl Iterator<Item = u16> + '_ {
        core::iter::successors(self.first(), |&s| Self::next(links, s))
    }

    /// The slot after `slot`.
    pub(super) fn next(links: &[Link], slot: u16) -> Option<u16> {
        links.get(usize::from(slot)).and_then(|l| self::slot(l.next))
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
        let mut prev = self::slot(self.tail);
        while let Some(p) = prev.filter(|&p| !before(p)) {
            prev = links.get(usize::from(p)).and_then(|l| self::slot(l.prev));
        }
        let next = match prev {
            Some(p) => Self::next(links, p),
            None => self.first(),
        };
        if let Some(l) = links.get_mut(usize::from(slot)) {
            *l = Link { prev: raw(prev), next: raw(next) };
        }
        match prev.and_then(|p| links.get_mut(usize::from(p))) {
            Some(l) => l.next = slot,
            None => self.head = slot,
        }
        match next.and_then(|n| links.get_mut(usize::from(n))) {
            Some(l) => l.prev = slot,
            None => self.tail = slot,
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
        let (mut len, mut prev, mut at) = (0, NIL, self.head);
        while let Some(slot) = self::slot(at) {
            let l = links.get(usize::from(slot)).filter(|l| l.linked() && l.prev == prev)?;
            len += 1;
            if len > links.len() {
                return None;
            }
            (prev, at) = (slot, l.next);
        }
        (self.tail == prev).then_some(len)
    }

    /// Takes `slot` off the list, if it is on it.
    pub(super) fn unlink(&mut self, links: &mut [Link], slot: u16) {
        let Some(&Link { prev, next }) = links.get(usize::from(slot)).filter(|l| l.linked()) else { return };
        match self::slot(prev).and_then(|p| links.get_mut(usize::from(p))) {
            Some(l) => l.next = next,
            None => self.head = next,
        }
        match self::slot(next).and_then(|n| links.get_mut(usize::from(n))) {
            Some(l) => l.prev = prev,
            None => self.tail = prev,
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
