//! The guaranteed-delivery responses of an endpoint's target PDCs (UE 1.0 §3.4.3.3), mostly
//! pooled: a target PDC holds a response only after its caller answered a request with one
//! ([`Endpoint::respond`](super::Endpoint::respond)), so each PDC keeps two slots of its own
//! ([`OWN_HELD`]) and takes a block of `R` more from the endpoint's `D` while it needs them
//! ([`Tiered`]; where the block is: [`HeldAt`]).
//!
//! Any request may need a response, and one that was delivered must be able to hold it, so a
//! request is let in only while there is a slot for its response: in a block (the PDC's, or a
//! free one of the pool that it takes when it responds), or in its own slots, the last of which
//! is kept for a request received in order (every PSN before it received). Else it is refused
//! with NACK NO_GTD_DEL_AVAIL ("no SES guaranteed-delivery response resource", retransmit class,
//! UE 1.0 §3.5.12.7). So a PDC that holds nothing lets any request in whatever the pool holds,
//! and one that holds responses cannot starve while other PDCs hold every block (see
//! [`Tiered`]). *Project-defined* (the sources keep the slots in every PDC, or in a pool shared
//! by the domain).

use crate::pdc::held::{HeldResponses, OWN_HELD, Tiered, WITH_DATA};
use crate::pdc::table::FreeSlots;
use crate::ses::Response;

/// Which block of the pool a target PDC holds responses in, if any.
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

/// `D` blocks of `R` held responses for the target PDCs that hold more than their own slots take.
pub(super) struct HeldPool<const R: usize, const D: usize> {
    blocks: [HeldResponses<R, WITH_DATA>; D],
    free: FreeSlots<D>,
    /// Blocks taken for the response to a request just let in ([`HeldPool::claim`]): kept
    /// while empty until their PDC's next poll.
    claimed: [bool; D],
}

impl<const R: usize, const D: usize> HeldPool<R, D> {
    /// Every block free.
    pub(super) const EMPTY: Self =
        HeldPool { blocks: [HeldResponses::EMPTY; D], free: FreeSlots::EMPTY, claimed: [false; D] };

    /// The block at `at`, if it has one.
    pub(super) fn block(&self, at: HeldAt) -> Option<&HeldResponses<R, WITH_DATA>> {
        self.blocks.get(usize::from(at.entry()?))
    }

    /// The data of the response held for `psn` by a PDC whose block is at `at`, if it carries
    /// any (only a block's slots take data).
    pub(super) fn data(&self, at: HeldAt, psn: u32) -> Option<&[u8]> {
        self.block(at)?.data(psn)
    }

    /// The response held for `psn` by a PDC whose own slots are `own` and whose block is at `at`.
    pub(super) fn response(&self, at: HeldAt, own: &HeldResponses<OWN_HELD>, psn: u32) -> Option<Response> {
        own.get(psn).or_else(|| self.block(at)?.get(psn))
    }

    /// Runs `f` on the responses held by a PDC whose own slots are `own` and whose block is at
    /// `at`, and gives the block back once `f` leaves it empty.
    #[inline]
    pub(super) fn with<T>(
        &mut self,
        at: &mut HeldAt,
        own: &mut HeldResponses<OWN_HELD>,
        f: impl FnOnce(&mut Tiered<'_, R>) -> T,
    ) -> T {
        self.run(at, own, false, f)
    }

    /// [`HeldPool::with`] for a request to be let in: a free block of the pool counts as the
    /// PDC's spare when it has none.
    #[inline]
    pub(super) fn admitting<T>(
        &mut self,
        at: &mut HeldAt,
        own: &mut HeldResponses<OWN_HELD>,
        f: impl FnOnce(&mut Tiered<'_, R>) -> T,
    ) -> T {
        let spare = !at.is_pooled() && self.free.next().is_some();
        self.run(at, own, spare, f)
    }

    #[inline(always)]
    fn run<T>(
        &mut self,
        at: &mut HeldAt,
        own: &mut HeldResponses<OWN_HELD>,
        spare: bool,
        f: impl FnOnce(&mut Tiered<'_, R>) -> T,
    ) -> T {
        let block = at.entry().and_then(|i| self.blocks.get_mut(usize::from(i)));
        let out = f(&mut Tiered { own, block, spare });
        self.settle(at);
        out
    }

    /// Takes a block for `at` if it has none; false while every block is in use.
    pub(super) fn take(&mut self, at: &mut HeldAt) -> bool {
        if at.is_pooled() {
            return true;
        }
        let Some(i) = self.free.take() else { return false };
        if let Some(block) = self.blocks.get_mut(usize::from(i)) {
            *block = HeldResponses::EMPTY;
        }
        self.set_claimed(HeldAt(i.saturating_add(1)), false);
        *at = HeldAt(i.saturating_add(1));
        true
    }

    /// [`HeldPool::take`] for the response to a request just let in that only a block would
    /// hold (a fetching atomic's, or one its PDC's own slots would not take): the block stays
    /// with its PDC while empty, so no other PDC's request let in on the same free block takes
    /// it first, until [`HeldPool::unclaim`] at the PDC's next poll.
    pub(super) fn claim(&mut self, at: &mut HeldAt) {
        if self.take(at) {
            self.set_claimed(*at, true);
        }
    }

    /// The PDC whose block is at `at` polls: its claim ends (the request was answered or not),
    /// and the block goes back at the next [`HeldPool::with`] if it holds nothing.
    pub(super) fn unclaim(&mut self, at: HeldAt) {
        self.set_claimed(at, false);
    }

    fn set_claimed(&mut self, at: HeldAt, claimed: bool) {
        if let Some(c) = at.entry().and_then(|i| self.claimed.get_mut(usize::from(i))) {
            *c = claimed;
        }
    }

    /// Whether the block at `at` is claimed (see [`HeldPool::claim`]).
    pub(super) fn is_claimed(&self, at: HeldAt) -> bool {
        at.entry().and_then(|i| self.claimed.get(usize::from(i))).is_some_and(|&c| c)
    }

    /// Gives the block at `at` back if it holds nothing and is not claimed.
    fn settle(&mut self, at: &mut HeldAt) {
        if let Some(i) = at.entry() {
            if self.blocks.get(usize::from(i)).is_none_or(HeldResponses::is_empty) && !self.is_claimed(*at) {
                self.free.give(i);
                *at = HeldAt::NONE;
            }
        }
    }

    /// Gives the block at `at` back (its PDC is gone).
    pub(super) fn release(&mut self, at: HeldAt) {
        self.set_claimed(at, false);
        if let Some(i) = at.entry() {
            self.free.give(i);
        }
    }

    /// Every block free.
    pub(super) fn clear(&mut self) {
        self.free.clear();
        self.claimed = [false; D];
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
