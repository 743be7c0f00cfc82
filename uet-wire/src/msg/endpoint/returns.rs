//! The return directions of an endpoint's target PDCs (read data, UE 1.0 §3.5.20.1), pooled:
//! only a target PDC with read data outstanding needs its send window, timers and round-trip
//! estimate, so each target PDC keeps 20 bytes of an idle one ([`ReturnAt`]) and takes a whole
//! one from the endpoint's `D` while it sends. *Project-defined* (the sources keep the return
//! direction in every PDC).

use crate::pdc::table::FreeSlots;
use crate::pdc::target::{IdleReturn, ReturnDirection};

/// Where a target PDC's return direction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReturnAt {
    /// Idle: all it needs kept.
    Idle(IdleReturn),
    /// In use: this entry of the pool.
    Pooled(u16),
}

/// `D` return directions for the target PDCs that send read data.
pub(super) struct ReturnPool<const D: usize> {
    entries: [ReturnDirection<2>; D],
    free: FreeSlots<D>,
}

impl<const D: usize> ReturnPool<D> {
    /// Every entry free (every byte zero).
    pub(super) const EMPTY: Self = ReturnPool { entries: [ReturnDirection::ZERO; D], free: FreeSlots::EMPTY };

    /// The return direction at `at`, unless it is idle.
    pub(super) fn get(&self, at: ReturnAt) -> Option<&ReturnDirection<2>> {
        match at {
            ReturnAt::Idle(_) => None,
            ReturnAt::Pooled(i) => self.entries.get(usize::from(i)),
        }
    }

    /// The return direction at `at`, unless it is idle.
    pub(super) fn get_mut(&mut self, at: ReturnAt) -> Option<&mut ReturnDirection<2>> {
        match at {
            ReturnAt::Idle(_) => None,
            ReturnAt::Pooled(i) => self.entries.get_mut(usize::from(i)),
        }
    }

    /// The return direction at `at`, an entry of the pool taken for it if it was idle (`None`
    /// while every entry is in use).
    pub(super) fn take(&mut self, at: &mut ReturnAt) -> Option<&mut ReturnDirection<2>> {
        if let ReturnAt::Idle(idle) = *at {
            let i = self.free.next()?;
            *self.entries.get_mut(usize::from(i))? = ReturnDirection::resume(idle);
            self.free.take();
            *at = ReturnAt::Pooled(i);
        }
        self.get_mut(*at)
    }

    /// Runs `f` on the return direction at `at`. An idle one is resumed for the call in place and
    /// stays idle: what may change it there (an ACK or NACK of the return direction) cannot give
    /// it a packet or a timer, so only its newest CACK and the initiator's range move.
    pub(super) fn with<T>(&mut self, at: &mut ReturnAt, f: impl FnOnce(&mut ReturnDirection<2>) -> T) -> Option<T> {
        match *at {
            ReturnAt::Pooled(i) => self.entries.get_mut(usize::from(i)).map(f),
            ReturnAt::Idle(idle) => {
                let mut ret = ReturnDirection::resume(idle);
                let out = f(&mut ret);
                // Were it not idle after all, the change is dropped (as if the packet were lost).
                if let Some(now_idle) = ret.idle() {
                    *at = ReturnAt::Idle(now_idle);
                }
                Some(out)
            }
        }
    }

    /// The oldest PSN not yet acknowledged and the next PSN of the return direction at `at`.
    pub(super) fn base_and_next(&self, at: ReturnAt) -> (u32, u32) {
        match (at, self.get(at)) {
            (_, Some(ret)) => (ret.window().base(), ret.window().next_psn()),
            (ReturnAt::Idle(idle), None) => (idle.next_psn(), idle.next_psn()),
            (ReturnAt::Pooled(_), None) => (0, 0),
        }
    }

    /// Gives the entry at `at` back once it is idle.
    pub(super) fn settle(&mut self, at: &mut ReturnAt) {
        if let ReturnAt::Pooled(i) = *at {
            if let Some(idle) = self.entries.get(usize::from(i)).and_then(ReturnDirection::idle) {
                self.free.give(i);
                *at = ReturnAt::Idle(idle);
            }
        }
    }

    /// Gives the entry at `at` back (its PDC is gone).
    pub(super) fn release(&mut self, at: ReturnAt) {
        if let ReturnAt::Pooled(i) = at {
            self.free.give(i);
        }
    }

    /// Entries in use (for the invariant checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn used(&self) -> usize {
        self.free.used()
    }

    /// Every entry free.
    pub(super) fn clear(&mut self) {
        self.free.clear();
    }

    /// The free entries (for the invariant checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn free_entries(&self) -> impl Iterator<Item = u16> + '_ {
        self.free.iter()
    }
}
