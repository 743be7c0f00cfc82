//! The guaranteed-delivery responses of an endpoint's target PDCs (UE 1.0 §3.4.3.3), pooled:
//! a target PDC holds a response only after its caller answered a request with one
//! ([`Endpoint::respond`](super::Endpoint::respond)), so each PDC keeps 2 bytes ([`HeldAt`]) and
//! takes a block of `R` slots from the endpoint's `D` for as long as it holds any. While every
//! block is in use, a PDC without one refuses new requests with NACK NO_GTD_DEL_AVAIL ("no SES
//! guaranteed-delivery response resource", retransmit class, UE 1.0 §3.5.12.7): any request may
//! need a response, and one that was delivered must be able to hold it. *Project-defined* (the
//! sources keep the slots in every PDC, or in a pool shared by the domain).

use crate::pdc::held::HeldResponses;
use crate::pdc::table::FreeSlots;

/// Which block a target PDC's held responses are in: none (it holds none) or one of the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct HeldAt(u16);

impl HeldAt {
    /// None held (every byte zero).
    pub(super) const NONE: HeldAt = HeldAt(0);

    /// The pool's entry, if any (stored plus one, so that none is zero).
    fn entry(self) -> Option<u16> {
        self.0.checked_sub(1)
    }

    /// Whether it has a block.
    pub(super) const fn is_pooled(self) -> bool {
        self.0 != 0
    }
}

/// `D` blocks of `R` held responses for the target PDCs that hold any.
pub(super) struct HeldPool<const R: usize, const D: usize> {
    blocks: [HeldResponses<R>; D],
    free: FreeSlots<D>,
    /// Always empty: what [`HeldPool::get`] reads for a PDC without a block.
    none: HeldResponses<R>,
}

impl<const R: usize, const D: usize> HeldPool<R, D> {
    /// Every block free.
    pub(super) const EMPTY: Self =
        HeldPool { blocks: [HeldResponses::EMPTY; D], free: FreeSlots::EMPTY, none: HeldResponses::EMPTY };

    /// The responses held at `at` (none when it has no block).
    pub(super) fn get(&self, at: HeldAt) -> &HeldResponses<R> {
        at.entry().and_then(|i| self.blocks.get(usize::from(i))).unwrap_or(&self.none)
    }

    /// Whether a block is free.
    pub(super) fn has_free(&self) -> bool {
        self.free.next().is_some()
    }

    /// Runs `f` on the responses held at `at`, an empty set when it has no block, and gives the
    /// block back once `f` leaves it empty. `f` must not hold a response in an empty set: that
    /// takes [`HeldPool::take_with`].
    #[inline]
    pub(super) fn with<T>(&mut self, at: &mut HeldAt, f: impl FnOnce(&mut HeldResponses<R>) -> T) -> T {
        match at.entry().and_then(|i| self.blocks.get_mut(usize::from(i))) {
            Some(held) => {
                let out = f(held);
                self.settle(at);
                out
            }
            None => f(&mut HeldResponses::default()),
        }
    }

    /// [`HeldPool::with`], a block taken first if `at` has none (`None` while every block is in
    /// use).
    pub(super) fn take_with<T>(&mut self, at: &mut HeldAt, f: impl FnOnce(&mut HeldResponses<R>) -> T) -> Option<T> {
        if !at.is_pooled() {
            let i = self.free.take()?;
            let block = self.blocks.get_mut(usize::from(i))?;
            *block = HeldResponses::EMPTY;
            *at = HeldAt(i.saturating_add(1));
        }
        Some(self.with(at, f))
    }

    /// Gives the block at `at` back if it holds nothing.
    fn settle(&mut self, at: &mut HeldAt) {
        if let Some(i) = at.entry() {
            if self.blocks.get(usize::from(i)).is_none_or(HeldResponses::is_empty) {
                self.free.give(i);
                *at = HeldAt::NONE;
            }
        }
    }

    /// Gives the block at `at` back (its PDC is gone).
    pub(super) fn release(&mut self, at: HeldAt) {
        if let Some(i) = at.entry() {
            self.free.give(i);
        }
    }

    /// Every block free.
    pub(super) fn clear(&mut self) {
        self.free.clear();
    }

    /// The pool's entry at `at`, if it has one (for the invariant checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn index(&self, at: HeldAt) -> Option<usize> {
        at.entry().map(usize::from).filter(|&i| i < D)
    }

    /// Blocks in use (for the invariant checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn used(&self) -> usize {
        self.free.used()
    }

    /// The free blocks (for the invariant checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn free_entries(&self) -> impl Iterator<Item = u16> + '_ {
        self.free.iter()
    }
}
