//! The parts of an endpoint's PDCs that only a busy PDC needs, pooled: the return directions
//! (read data, UE 1.0 §3.5.20.1) and the initiator PDCs' state machines. Only a target PDC with
//! read data outstanding needs its send window, timers and round-trip estimate; only an
//! initiator PDC receiving read data (or a CLOSE_REQ) its receive window and the ACK or NACK
//! waiting to go; and only an initiator PDC with requests outstanding its send window, timers,
//! loss recovery and timed packet. So each PDC keeps what an idle part needs ([`At::Idle`]: 20
//! bytes of a target's return direction, 8 of an initiator's, 52 of an initiator's state
//! machine) and takes a whole one from one of the endpoint's pools (`D` return directions each,
//! `S` state machines) while it is in use. *Project-defined* (the sources keep every part in
//! every PDC).

use crate::pdc::initiator::{IdleInitiator, IdleReceiver, InitiatorCore, ReturnReceiver};
use crate::pdc::table::FreeSlots;
use crate::pdc::target::{IdleReturn, ReturnDirection};
use crate::pdc::{Failure, InitiatorState, PdcConfig, RttEstimator};
use linklayer::Instant;

/// A pooled part that can rest: what it keeps while idle, and how it resumes from that.
pub(super) trait Rests {
    /// What an idle one keeps.
    type Idle: Copy;
    /// Every byte zero: a placeholder for storage built in `const`.
    const ZERO: Self;
    /// The part `idle` stands for.
    fn resume(idle: Self::Idle) -> Self;
    /// What it keeps while idle, if it is.
    fn idle(&self) -> Option<Self::Idle>;
}

impl Rests for ReturnDirection<2> {
    type Idle = IdleReturn;
    const ZERO: Self = ReturnDirection::ZERO;
    fn resume(idle: IdleReturn) -> Self {
        ReturnDirection::resume(idle)
    }
    fn idle(&self) -> Option<IdleReturn> {
        ReturnDirection::idle(self)
    }
}

impl Rests for ReturnReceiver<2> {
    type Idle = IdleReceiver;
    const ZERO: Self = ReturnReceiver::ZERO;
    fn resume(idle: IdleReceiver) -> Self {
        ReturnReceiver::resume(idle)
    }
    fn idle(&self) -> Option<IdleReceiver> {
        ReturnReceiver::idle(self)
    }
}

impl Rests for InitiatorCore {
    type Idle = IdleInitiator;
    const ZERO: Self = InitiatorCore::ZERO;
    #[inline(always)]
    fn resume(idle: IdleInitiator) -> Self {
        InitiatorCore::resume(idle)
    }
    fn idle(&self) -> Option<IdleInitiator> {
        InitiatorCore::idle(self)
    }
}

/// Where a PDC's pooled part is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum At<I> {
    /// Idle: all it needs kept.
    Idle(I),
    /// In use: this entry of the pool.
    Pooled(u16),
}

/// Where a target PDC's return direction (read data it sends) is.
pub(super) type ReturnAt = At<IdleReturn>;
/// Where an initiator PDC's return direction (read data it receives) is.
pub(super) type ReceiverAt = At<IdleReceiver>;
/// Where an initiator PDC's state machine (its request direction, with the PDC's state) is.
pub(super) type SenderAt = At<IdleInitiator>;

/// `D` parts (or `S`) for the PDCs that use theirs.
pub(super) struct Pool<T, const D: usize> {
    entries: [T; D],
    free: FreeSlots<D>,
}

/// The target PDCs' return directions.
pub(super) type ReturnPool<const D: usize> = Pool<ReturnDirection<2>, D>;
/// The initiator PDCs' return directions.
pub(super) type ReceiverPool<const D: usize> = Pool<ReturnReceiver<2>, D>;
/// The initiator PDCs' state machines, while their requests are outstanding.
pub(super) type SenderPool<const D: usize> = Pool<InitiatorCore, D>;

/// A pooled part read in place, or an idle one resumed for the reading (tests and invariant
/// checks; the endpoint reads an idle initiator's form as it is, through [`Sender`]).
#[cfg(any(test, feature = "fuzzing"))]
pub(super) enum View<'a, T> {
    /// In the pool.
    Pooled(&'a T),
    /// Resumed from what an idle one keeps.
    Resumed(T),
}

#[cfg(any(test, feature = "fuzzing"))]
impl<T> core::ops::Deref for View<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            View::Pooled(t) => t,
            View::Resumed(t) => t,
        }
    }
}

impl<T: Rests, const D: usize> Pool<T, D> {
    /// Every entry free (every byte zero).
    pub(super) const EMPTY: Self = Pool { entries: [const { T::ZERO }; D], free: FreeSlots::EMPTY };

    /// The part at `at`, unless it is idle.
    pub(super) fn get(&self, at: At<T::Idle>) -> Option<&T> {
        match at {
            At::Idle(_) => None,
            At::Pooled(i) => self.entries.get(usize::from(i)),
        }
    }

    /// The part at `at`, unless it is idle.
    pub(super) fn get_mut(&mut self, at: At<T::Idle>) -> Option<&mut T> {
        match at {
            At::Idle(_) => None,
            At::Pooled(i) => self.entries.get_mut(usize::from(i)),
        }
    }

    /// The part at `at`, in the pool or resumed from its idle form (an entry out of range, which
    /// the pool never hands out, reads as [`Rests::ZERO`]).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn view(&self, at: At<T::Idle>) -> View<'_, T> {
        match at {
            At::Idle(idle) => View::Resumed(T::resume(idle)),
            At::Pooled(i) => self.entries.get(usize::from(i)).map_or(View::Resumed(T::ZERO), View::Pooled),
        }
    }

    /// Runs `f` on the part at `at`. An idle one is resumed for the call and stays idle if the
    /// call leaves it so; else it takes an entry, and with none free the change is dropped and
    /// the answer is `None` (for a packet: as if it were lost).
    pub(super) fn with_kept<O>(&mut self, at: &mut At<T::Idle>, f: impl FnOnce(&mut T) -> O) -> Option<O> {
        self.run(at, f, true)
    }

    /// Whether an entry is free.
    pub(super) fn has_free(&self) -> bool {
        self.free.next().is_some()
    }

    /// The part at `at`, an entry of the pool taken for it if it was idle (`None`
    /// while every entry is in use).
    pub(super) fn take(&mut self, at: &mut At<T::Idle>) -> Option<&mut T> {
        if let At::Idle(idle) = *at {
            let i = self.free.next()?;
            *self.entries.get_mut(usize::from(i))? = T::resume(idle);
            self.free.take();
            *at = At::Pooled(i);
        }
        self.get_mut(*at)
    }

    /// Runs `f` on the part at `at`. An idle one is resumed for the call in place and
    /// stays idle: were it not idle after the call, the change is dropped (as if the packet were
    /// lost), so `f` must be a change that leaves an idle one idle (at a target, an ACK or NACK
    /// of its return direction, which cannot give it a packet or a timer).
    pub(super) fn with<O>(&mut self, at: &mut At<T::Idle>, f: impl FnOnce(&mut T) -> O) -> Option<O> {
        self.run(at, f, false)
    }

    /// [`Pool::with_kept`] (`keep`), or [`Pool::with`]: what becomes of a change that leaves an
    /// idle part busy is all they differ in.
    fn run<O>(&mut self, at: &mut At<T::Idle>, f: impl FnOnce(&mut T) -> O, keep: bool) -> Option<O> {
        let idle = match *at {
            At::Pooled(i) => return self.entries.get_mut(usize::from(i)).map(f),
            At::Idle(idle) => idle,
        };
        let mut part = T::resume(idle);
        let out = f(&mut part);
        if let Some(now_idle) = part.idle() {
            *at = At::Idle(now_idle);
        } else if keep {
            let i = self.free.next()?;
            *self.entries.get_mut(usize::from(i))? = part;
            self.free.take();
            *at = At::Pooled(i);
        }
        Some(out)
    }

    /// Gives the entry at `at` back once it is idle.
    pub(super) fn settle(&mut self, at: &mut At<T::Idle>) {
        if let At::Pooled(i) = *at {
            if let Some(idle) = self.entries.get(usize::from(i)).and_then(T::idle) {
                self.free.give(i);
                *at = At::Idle(idle);
            }
        }
    }

    /// Gives the entry at `at` back (its PDC is gone).
    pub(super) fn release(&mut self, at: At<T::Idle>) {
        if let At::Pooled(i) = at {
            self.free.give(i);
        }
    }

    /// Entries in use.
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

impl<const D: usize> ReturnPool<D> {
    /// The oldest PSN not yet acknowledged and the next PSN of the return direction at `at`.
    pub(super) fn base_and_next(&self, at: ReturnAt) -> (u32, u32) {
        match (at, self.get(at)) {
            (_, Some(ret)) => (ret.window().base(), ret.window().next_psn()),
            (At::Idle(idle), None) => (idle.next_psn(), idle.next_psn()),
            (At::Pooled(_), None) => (0, 0),
        }
    }
}

impl<const D: usize> SenderPool<D> {
    /// The initiator PDC at `at`, to read: its entry, or its idle form (read without resuming
    /// it; an entry out of range, which the pool never hands out, reads as a placeholder).
    #[inline(always)]
    pub(super) fn sender<'a>(&'a self, at: &'a SenderAt) -> Sender<'a> {
        match at {
            At::Idle(idle) => Sender::Idle(idle),
            At::Pooled(i) => {
                self.entries.get(usize::from(*i)).map_or(Sender::Idle(&IdleInitiator::ZERO), Sender::Pooled)
            }
        }
    }

    /// The state of the initiator PDC at `at`.
    pub(super) fn state(&self, at: &SenderAt) -> InitiatorState {
        self.sender(at).state()
    }

    /// The target's PDC id of the initiator PDC at `at`, once known.
    pub(super) fn remote_id(&self, at: &SenderAt) -> Option<u16> {
        match self.sender(at) {
            Sender::Pooled(pdc) => pdc.remote_id(),
            Sender::Idle(idle) => idle.remote_id(),
        }
    }
}

/// An initiator PDC's state machine as an endpoint reads it, in place: in the pool, or idle (each
/// answer of the idle form is what the state machine it stands for would give).
#[derive(Clone, Copy)]
pub(super) enum Sender<'a> {
    /// In the pool.
    Pooled(&'a InitiatorCore),
    /// Idle: its idle form where its PDC keeps it.
    Idle(&'a IdleInitiator),
}

impl Sender<'_> {
    /// [`InitiatorCore::state`].
    pub(super) fn state(&self) -> InitiatorState {
        match self {
            Sender::Pooled(pdc) => pdc.state(),
            Sender::Idle(idle) => idle.state(),
        }
    }

    /// [`InitiatorCore::timeouts`].
    pub(super) fn timeouts(&self) -> u8 {
        match self {
            Sender::Pooled(pdc) => pdc.timeouts(),
            Sender::Idle(idle) => idle.timeouts(),
        }
    }

    /// [`InitiatorCore::can_send`].
    pub(super) fn can_send(&self, cfg: &PdcConfig) -> bool {
        match self {
            Sender::Pooled(pdc) => pdc.can_send(cfg),
            Sender::Idle(idle) => idle.can_send(cfg),
        }
    }

    /// [`InitiatorCore::has_pending`].
    pub(super) fn has_pending(&self, ret: Option<&ReturnReceiver<2>>) -> bool {
        match self {
            Sender::Pooled(pdc) => pdc.has_pending(ret),
            Sender::Idle(idle) => idle.has_pending(ret),
        }
    }

    /// [`InitiatorCore::poll_timeout`]: an idle PDC has no timer running.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Sender::Pooled(pdc) => pdc.poll_timeout(),
            Sender::Idle(_) => None,
        }
    }

    /// [`InitiatorCore::is_acked`].
    pub(super) fn is_acked(&self, psn: u32) -> bool {
        match self {
            Sender::Pooled(pdc) => pdc.is_acked(psn),
            Sender::Idle(idle) => idle.is_acked(psn),
        }
    }

    /// [`InitiatorCore::start_psn`].
    pub(super) fn start_psn(&self) -> u32 {
        match self {
            Sender::Pooled(pdc) => pdc.start_psn(),
            Sender::Idle(idle) => idle.start_psn(),
        }
    }

    /// The send window's oldest PSN not yet acknowledged, and its next PSN.
    pub(super) fn base_and_next(&self) -> (u32, u32) {
        match self {
            Sender::Pooled(pdc) => (pdc.window().base(), pdc.window().next_psn()),
            Sender::Idle(idle) => (idle.next_psn(), idle.next_psn()),
        }
    }

    /// [`InitiatorCore::failure`].
    pub(super) fn failure(&self) -> Option<Failure> {
        match self {
            Sender::Pooled(pdc) => pdc.failure(),
            Sender::Idle(idle) => idle.failure(),
        }
    }

    /// [`InitiatorCore::requests_in_flight`]: none while idle.
    pub(super) fn requests_in_flight(&self) -> u32 {
        match self {
            Sender::Pooled(pdc) => pdc.requests_in_flight(),
            Sender::Idle(_) => 0,
        }
    }

    /// The send window's PSNs marked lost: none while idle.
    pub(super) fn lost_count(&self) -> u32 {
        match self {
            Sender::Pooled(pdc) => pdc.window().lost_count(),
            Sender::Idle(_) => 0,
        }
    }

    /// [`InitiatorCore::rtt`], by value.
    pub(super) fn rtt(&self) -> RttEstimator {
        match self {
            Sender::Pooled(pdc) => *pdc.rtt(),
            Sender::Idle(idle) => idle.rtt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdc::PdcConfig;
    use crate::pds::DeliveryMode;

    /// A change that leaves an idle state machine busy takes a free entry; with none free it is
    /// dropped whole (`with_kept` answers `None`, the PDC stays as it was), and `with` drops it
    /// but answers.
    #[test]
    fn a_busy_change_takes_an_entry_or_is_dropped() {
        let cfg = PdcConfig::default();
        let idle = |local| <InitiatorCore>::new(&cfg, DeliveryMode::Rud, local, 100).idle().unwrap();
        let mut pool: SenderPool<1> = Pool::EMPTY;
        let (mut a, mut b) = (At::Idle(idle(1)), At::Idle(idle(2)));
        // A read-only call keeps it idle, and takes nothing.
        assert_eq!(pool.with_kept(&mut a, |p| p.state()), Some(InitiatorState::Creating));
        assert_eq!((a, pool.has_free()), (At::Idle(idle(1)), true));
        // A send makes it busy: it takes the one entry.
        let stamp = pool.with_kept(&mut a, |p| p.send(Instant::ZERO, &cfg, true)).unwrap().unwrap();
        assert_eq!((stamp.psn, a, pool.has_free()), (100, At::Pooled(0), false));
        assert_eq!(pool.get(a).map(InitiatorCore::outstanding), Some(1));
        // None left: the other PDC's send is dropped, and it stays as it was.
        assert_eq!(pool.with_kept(&mut b, |p| p.send(Instant::ZERO, &cfg, true).is_ok()), None);
        assert_eq!(b, At::Idle(idle(2)));
        assert_eq!(pool.with(&mut b, |p| p.send(Instant::ZERO, &cfg, true).is_ok()), Some(true));
        assert_eq!(b, At::Idle(idle(2)));
        // Released, the entry serves the other.
        pool.release(a);
        assert!(pool.with_kept(&mut b, |p| p.send(Instant::ZERO, &cfg, true).is_ok()).unwrap());
        assert_eq!(b, At::Pooled(0));
    }
}
