//! RCCC, receiver credit congestion control: the sender spends credit, the receiver's pull pacer
//! grants it.
//!
//! Follows the UEC simulator (`ultraethernet/uet-htsim` `40ccb05`, `htsim/sim/uec.cpp`:
//! `computePullTarget`, `handlePull`, `stopSpeculating`, `UecSink::pull`, `UecPullPacer`):
//!
//! * **Quanta.** Requests and grants are **cumulative counts of 256-byte quanta**
//!   ([`QUANTUM`]), so a lost, repeated or reordered control packet can neither create nor
//!   destroy credit: a sender adds only the step from the largest grant it has seen.
//! * **Sender** ([`CreditSender`]). A new flow starts *speculating* with `maxwnd` of credit and
//!   may send while its credit is positive (one packet may overdraw). Every data packet carries
//!   its pull target: the grants so far plus, rounded up to quanta,
//!   `(min(backlog, cwnd + MTU when NSCC runs too, maxwnd) − credit) / active senders`; while
//!   speculating it asks for at least one MTU. The first feedback of any kind (ACK, NACK,
//!   grant) ends speculation and forfeits what is left of the speculative credit. Credit never
//!   exceeds `maxwnd`.
//! * **Receiver** ([`PullPacer`], one per receiving port or NIC). Flows whose target is above
//!   their grants are served round robin; each pull grants `min(64 quanta, target − granted)`
//!   and the next pull waits for the time those quanta take at 99 % of the link rate (four
//!   quanta's time when nothing was granted). A flow whose target is met becomes idle; while no
//!   flow is active, idle flows get unsolicited pulls of 64 quanta until their unrequested credit
//!   reaches `maxwnd / 256` quanta. A trimmed packet queues its flow for a pull even when its
//!   target did not rise ([`PullPacer::on_trimmed`]).
//!
//! *Project-defined* (the simulator carries credit in its own packets; the public layouts have
//! these fields): the pull target travels as the RUD_CC / ROD_CC `credit_target` (24 bits), the
//! grant as the ACK_CC credit state's `credit` (24 bits) or the CREDIT control packet's payload,
//! both cumulative quanta modulo 2²⁴ (4 GiB: a step of half that is taken as stale). A sender
//! asks for at most `maxwnd` beyond its grants (credit overdrawn by resends would ask for more).
//! A grant beyond the sender's largest target plus the unsolicited allowance (`maxwnd / 256 +
//! 64` quanta) adds credit only up to that bound, and a target beyond the grants plus the flow's
//! `maxwnd` and one pull is taken as that bound, both counted as `clamped` (the simulator has no
//! bound: a sender and a receiver configured with different windows both stay in step); a
//! sender whose credit covers its backlog repeats its last target (the simulator's falls below
//! the grants, which the receiver ignores alike). [`PullPacer::set_rate`]
//! slows the pacer (the simulator's oversubscription and PCIe rate hooks; destination flow
//! control slows credit this way).

use super::Ignored;
use linklayer::{Duration, Instant, LinkRate};

/// Bytes per credit quantum (htsim `UEC_PULL_QUANTUM`).
pub const QUANTUM: u32 = 256;

/// Quanta granted per pull: 4 × 4 096 B (htsim `_credit_per_pull`, fixed at start-up).
pub const CREDIT_PER_PULL: u32 = 64;

/// Quanta of pacing time after a pull that granted nothing (htsim `1024 >> UEC_PULL_SHIFT`).
const EMPTY_PULL_QUANTA: u32 = 4;

/// Cumulative quanta on the wire are 24 bits.
const FIELD_MASK: u32 = 0x00FF_FFFF;

/// The 64-bit count nearest `current` whose low 24 bits are `field`.
fn extend(current: u64, field: u32) -> u64 {
    let low = (current & u64::from(FIELD_MASK)) as u32;
    let step = field.wrapping_sub(low) & FIELD_MASK;
    if step < 1 << 23 {
        current.saturating_add(u64::from(step))
    } else {
        current.saturating_sub(u64::from((1 << 24) - step))
    }
}

/// Bytes rounded up to whole quanta.
fn quanta_ceil(bytes: u64) -> u64 {
    bytes.div_ceil(u64::from(QUANTUM))
}

/// Counters of RCCC, at the sender or the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RcccStats {
    /// Grants applied (sender) or pulls sent (receiver).
    pub grants: u64,
    /// Quanta granted (receiver) or received (sender).
    pub quanta: u64,
    /// Pull targets sent (sender) or raised (receiver).
    pub targets: u64,
    /// Pulls sent to idle flows, unasked (receiver).
    pub unsolicited: u64,
    /// Grants repeated or older than one already applied (sender), targets repeated (receiver).
    pub stale: u64,
    /// Inputs refused, one per [`Ignored`] reason returned.
    pub ignored: u64,
    /// Grants beyond the request and the unsolicited allowance (sender), or targets beyond the
    /// grants and the flow's window (receiver), taken only up to that bound.
    pub clamped: u64,
}

/// The credit side of one CCC at its sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CreditSender {
    maxwnd: u64,
    mtu: u32,
    /// Bytes the sender may still send; may go below zero by one packet.
    credit: i64,
    /// Largest cumulative grant seen, in quanta.
    granted: u64,
    /// Largest cumulative target sent, in quanta.
    requested: u64,
    speculating: bool,
    stats: RcccStats,
}

impl CreditSender {
    /// A new flow that may send `maxwnd` bytes before hearing from the receiver (the simulator
    /// uses the NSCC `maxwnd`, 1.5 × BDP), in packets of at most `mtu` bytes.
    pub fn new(maxwnd: u32, mtu: u32) -> Self {
        let maxwnd = u64::from(maxwnd.max(1));
        CreditSender {
            maxwnd,
            mtu: mtu.max(1),
            credit: maxwnd as i64,
            granted: 0,
            requested: 0,
            speculating: true,
            stats: RcccStats::default(),
        }
    }

    /// The most credit it holds, bytes (its `maxwnd`).
    pub const fn maxwnd(&self) -> u32 {
        self.maxwnd as u32
    }

    /// Bytes the sender may still send (negative after a packet overdrew it).
    pub const fn credit(&self) -> i64 {
        self.credit
    }

    /// Still sending on the credit it started with.
    pub const fn speculating(&self) -> bool {
        self.speculating
    }

    /// The largest cumulative grant applied, in quanta.
    pub const fn granted(&self) -> u64 {
        self.granted
    }

    /// The counters.
    pub const fn stats(&self) -> &RcccStats {
        &self.stats
    }

    /// There is credit for one more packet.
    pub const fn can_send(&self) -> bool {
        self.credit > 0
    }

    /// A packet of `bytes` went out on credit.
    pub fn on_send(&mut self, bytes: u32) {
        self.credit = self.credit.saturating_sub(i64::from(bytes));
    }

    /// Feedback of any kind arrived (ACK, NACK or grant): speculation ends and its unspent
    /// credit is forfeit.
    pub fn on_feedback(&mut self) {
        if self.speculating {
            self.speculating = false;
            self.credit = self.credit.min(0);
        }
    }

    /// The pull target to carry in the next data packet (`credit_target`, 24 bits): enough
    /// credit for `backlog` bytes (new and to resend), within `cwnd + MTU` when NSCC runs too
    /// and within `maxwnd`, shared among the `active` senders of this NIC.
    pub fn pull_target(&mut self, backlog: u64, cwnd: Option<u64>, active: u32) -> u32 {
        let mut want = backlog;
        if let Some(cwnd) = cwnd {
            want = want.min(cwnd.saturating_add(u64::from(self.mtu)));
        }
        let want = want.min(self.maxwnd) as i64;
        // At most `maxwnd` beyond the grants, which the receiver takes (resends a caller lets
        // overdraw the credit could ask for more).
        let mut need = want.saturating_sub(self.credit).min(self.maxwnd as i64);
        if self.speculating && backlog > 0 {
            need = need.max(i64::from(self.mtu));
        }
        self.stats.targets += 1;
        // Credit in hand covers what is wanted: the simulator's target then falls below the
        // grants and the receiver ignores it; repeating the last target does the same.
        let Ok(need @ 1..) = u64::try_from(need) else { return (self.requested as u32) & FIELD_MASK };
        let target = self.granted.saturating_add(quanta_ceil(need / u64::from(active.max(1))));
        self.requested = self.requested.max(target);
        (target as u32) & FIELD_MASK
    }

    /// A grant arrived carrying the receiver's cumulative quanta (24 bits); returns the bytes of
    /// credit it added.
    ///
    /// A repeated grant adds nothing; an older one is ignored ([`Ignored::StaleGrant`]). One
    /// beyond what was asked plus the unsolicited allowance (`maxwnd / 256 + 64` quanta) adds
    /// credit only up to that bound (counted as `clamped`), and the count still moves to it: a
    /// receiver with a larger window than this sender's gives more unasked credit, and the
    /// grants it sends later count from there. The grant ends speculation.
    pub fn on_grant(&mut self, field: u32) -> Result<u64, Ignored> {
        let grant = extend(self.granted, field);
        if grant <= self.granted {
            self.stats.stale += 1;
            // An old grant is still feedback: speculation ends (the simulator's `processPull`).
            self.on_feedback();
            if grant < self.granted {
                self.stats.ignored += 1;
                return Err(Ignored::StaleGrant);
            }
            return Ok(0);
        }
        let allowance = self.maxwnd / u64::from(QUANTUM) + u64::from(CREDIT_PER_PULL);
        let bound = self.requested.saturating_add(allowance).max(self.granted);
        if grant > bound {
            self.stats.clamped += 1;
        }
        self.on_feedback();
        // The quanta this grant adds as credit (the count moves to `grant` all the same).
        let step = grant.min(bound) - self.granted;
        self.granted = grant;
        self.stats.grants += 1;
        self.stats.quanta += step;
        let before = self.credit;
        let add = i64::try_from(step.saturating_mul(u64::from(QUANTUM))).unwrap_or(i64::MAX);
        self.credit = self.credit.saturating_add(add).min(self.maxwnd as i64);
        Ok(self.credit.saturating_sub(before).max(0) as u64)
    }
}

/// A flow at the receiver's pull pacer. A removed flow's id stays unknown until its slot has
/// been reused 65 536 times (the generation is 16 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FlowId {
    index: u16,
    generation: u16,
}

/// How a receiver's pull pacer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PullPacerConfig {
    /// The receiving link's rate.
    pub link: LinkRate,
    /// Links the pacer grants for (htsim `no_of_ports`).
    pub ports: u32,
    /// The share of the link rate credit is granted at, in per mille (htsim's 0.99: 990).
    pub rate_permille: u32,
    /// The senders' `maxwnd` in bytes for flows added by [`PullPacer::add_flow`]: bounds a target
    /// and the unsolicited credit of an idle flow.
    pub maxwnd: u32,
}

impl PullPacerConfig {
    /// The simulator's defaults: one port, 99 % of `link`, senders' `maxwnd` as given.
    pub const fn new(link: LinkRate, maxwnd: u32) -> Self {
        PullPacerConfig { link, ports: 1, rate_permille: 990, maxwnd }
    }
}

/// Quanta of `maxwnd` bytes, rounded down (the unsolicited credit an idle flow may hold).
fn window_quanta(maxwnd: u32) -> u64 {
    u64::from(maxwnd) / u64::from(QUANTUM)
}

/// One pull: send the flow's sender its cumulative grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pull {
    /// The flow.
    pub flow: FlowId,
    /// Its cumulative grant in quanta, as the 24-bit field carries it.
    pub granted: u32,
    /// Quanta this pull added.
    pub quanta: u32,
    /// Unasked credit to an idle flow.
    pub unsolicited: bool,
}

const NIL: u16 = u16::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum Queue {
    Free,
    None,
    Active,
    Idle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct Slot {
    generation: u16,
    queue: Queue,
    /// The sender's `maxwnd` in bytes.
    maxwnd: u32,
    prev: u16,
    next: u16,
    target: u64,
    granted: u64,
}

const FREE: Slot = Slot { generation: 0, queue: Queue::Free, maxwnd: 0, prev: NIL, next: NIL, target: 0, granted: 0 };

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct List {
    head: u16,
    tail: u16,
}

/// The receiver's credit scheduler for up to `N` flows (`N` < 65 535): round robin over the
/// flows that asked for credit, paced at the link rate.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PullPacer<const N: usize> {
    cfg: PullPacerConfig,
    /// The slowdown of [`PullPacer::set_rate`], per mille.
    slowdown: u32,
    slots: [Slot; N],
    active: List,
    idle: List,
    next_at: Instant,
    stats: RcccStats,
}

impl<const N: usize> PullPacer<N> {
    /// An empty pacer; pulls may start at once.
    pub const fn new(cfg: PullPacerConfig) -> Self {
        const { assert!(N < NIL as usize, "a PullPacer holds fewer than 65 535 flows") };
        PullPacer {
            cfg,
            slowdown: 1000,
            slots: [FREE; N],
            active: List { head: NIL, tail: NIL },
            idle: List { head: NIL, tail: NIL },
            next_at: Instant::ZERO,
            stats: RcccStats { grants: 0, quanta: 0, targets: 0, unsolicited: 0, stale: 0, ignored: 0, clamped: 0 },
        }
    }

    /// The counters.
    pub const fn stats(&self) -> &RcccStats {
        &self.stats
    }

    /// Slows (or restores) the pacer: credit is granted at `permille` of the configured share
    /// of the link ([`PullPacerConfig::rate_permille`]), 1 to 1 000 (0 is taken as 1; 1 000
    /// restores it). The simulator's rate hooks (oversubscription, PCIe) and destination flow
    /// control slow credit so.
    pub fn set_rate(&mut self, permille: u32) {
        self.slowdown = permille.clamp(1, 1000);
    }

    /// Takes a new flow whose sender's `maxwnd` is the configured one; [`Ignored::NoRoom`] when
    /// all `N` are in use.
    pub fn add_flow(&mut self) -> Result<FlowId, Ignored> {
        self.add_flow_with(self.cfg.maxwnd)
    }

    /// Takes a new flow whose sender's `maxwnd` is `maxwnd` bytes; [`Ignored::NoRoom`] when all
    /// `N` are in use.
    pub fn add_flow_with(&mut self, maxwnd: u32) -> Result<FlowId, Ignored> {
        let Some((index, slot)) = self.slots.iter_mut().enumerate().find(|(_, s)| s.queue == Queue::Free) else {
            self.stats.ignored += 1;
            return Err(Ignored::NoRoom);
        };
        let generation = slot.generation.wrapping_add(1);
        *slot = Slot { generation, queue: Queue::None, maxwnd, ..FREE };
        Ok(FlowId { index: index as u16, generation })
    }

    /// Drops a flow (its PDC closed); [`Ignored::UnknownFlow`] when it is not held.
    pub fn remove_flow(&mut self, flow: FlowId) -> Result<(), Ignored> {
        self.slot(flow)?;
        self.unlink(flow.index);
        if let Some(s) = self.slots.get_mut(usize::from(flow.index)) {
            s.queue = Queue::Free;
        }
        Ok(())
    }

    /// The flow's cumulative grant and target, in quanta.
    pub fn flow(&self, flow: FlowId) -> Option<(u64, u64)> {
        self.slots
            .get(usize::from(flow.index))
            .filter(|s| s.generation == flow.generation && s.queue != Queue::Free)
            .map(|s| (s.granted, s.target))
    }

    /// A packet of `flow` carried its pull target (24-bit cumulative quanta); returns whether it
    /// raised the target.
    ///
    /// A target at or below the last one changes nothing; one beyond the grants plus the flow's
    /// `maxwnd` and one pull (64 quanta) is taken as that bound (counted as `clamped`: a sender
    /// whose window is larger than the receiver's asks for more).
    pub fn on_target(&mut self, flow: FlowId, field: u32) -> Result<bool, Ignored> {
        let s = self.slot(flow)?;
        let target = extend(s.target.max(s.granted), field);
        if target <= s.target {
            self.stats.stale += 1;
            return Ok(false);
        }
        let room = quanta_ceil(u64::from(s.maxwnd)).saturating_add(u64::from(CREDIT_PER_PULL));
        let bound = s.granted.saturating_add(room);
        if target > bound {
            self.stats.clamped += 1;
        }
        let target = target.min(bound);
        if target <= s.target {
            return Ok(false);
        }
        let queue = s.queue;
        if let Some(s) = self.slots.get_mut(usize::from(flow.index)) {
            s.target = target;
        }
        self.stats.targets += 1;
        if target > self.slot(flow)?.granted && queue != Queue::Active {
            self.unlink(flow.index);
            self.push(Queue::Active, flow.index);
        }
        Ok(true)
    }

    /// A trimmed packet of `flow` arrived (its header, a NACK goes back): the flow is queued for
    /// a pull even if its target did not rise, as the simulator's sink does, so a sender left
    /// without credit gets some to resend. An idle flow whose unasked credit is used up gets one
    /// more pull of 64 quanta.
    pub fn on_trimmed(&mut self, flow: FlowId) -> Result<(), Ignored> {
        if self.slot(flow)?.queue == Queue::None {
            self.push(Queue::Idle, flow.index);
        }
        Ok(())
    }

    /// When the next pull is due: `None` while no flow waits for one.
    pub fn poll_timeout(&self) -> Option<Instant> {
        (self.active.head != NIL || self.idle.head != NIL).then_some(self.next_at)
    }

    /// The next pull, if one is due at `now`.
    pub fn poll_pull(&mut self, now: Instant) -> Option<Pull> {
        if now < self.next_at {
            return None;
        }
        let (index, unsolicited) = if self.active.head != NIL {
            (self.active.head, false)
        } else if self.idle.head != NIL {
            (self.idle.head, true)
        } else {
            return None;
        };
        self.unlink(index);
        let s = self.slots.get_mut(usize::from(index))?;
        let before = s.granted;
        let grant_to = before.saturating_add(u64::from(CREDIT_PER_PULL));
        s.granted = if unsolicited { grant_to } else { grant_to.min(s.target).max(before) };
        let quanta = (s.granted - before) as u32;
        let (granted, target, generation) = (s.granted, s.target, s.generation);
        let unasked_room = window_quanta(s.maxwnd);
        if target > granted {
            self.push(Queue::Active, index);
        } else if granted - target < unasked_room {
            self.push(Queue::Idle, index);
        } else if let Some(s) = self.slots.get_mut(usize::from(index)) {
            s.queue = Queue::None;
        }
        self.stats.grants += 1;
        self.stats.quanta += u64::from(quanta);
        self.stats.unsolicited += u64::from(unsolicited);
        // A pull that granted nothing still takes some time (the simulator's four quanta).
        let paced = if quanta == 0 { EMPTY_PULL_QUANTA } else { quanta };
        self.next_at = now.saturating_add(self.pull_time(paced));
        Some(Pull { flow: FlowId { index, generation }, granted: (granted as u32) & FIELD_MASK, quanta, unsolicited })
    }

    /// The time `quanta` take at the paced rate: `quanta × 256 × 8 / (rate × ports × share)`.
    fn pull_time(&self, quanta: u32) -> Duration {
        let bits = u128::from(quanta) * u128::from(QUANTUM) * 8 * 1_000_000_000 * 1000;
        let rate = u128::from(self.cfg.link.bits_per_second())
            * u128::from(self.cfg.ports.max(1))
            * u128::from(self.cfg.rate_permille.clamp(1, 1000))
            * u128::from(self.slowdown)
            / 1000;
        Duration::from_nanos(u64::try_from(bits.div_ceil(rate.max(1))).unwrap_or(u64::MAX))
    }

    fn slot(&self, flow: FlowId) -> Result<Slot, Ignored> {
        match self.slots.get(usize::from(flow.index)) {
            Some(s) if s.generation == flow.generation && s.queue != Queue::Free => Ok(*s),
            _ => Err(Ignored::UnknownFlow),
        }
    }

    fn list(&mut self, queue: Queue) -> Option<&mut List> {
        match queue {
            Queue::Active => Some(&mut self.active),
            Queue::Idle => Some(&mut self.idle),
            Queue::Free | Queue::None => None,
        }
    }

    fn push(&mut self, queue: Queue, index: u16) {
        let Some(list) = self.list(queue) else { return };
        let tail = list.tail;
        if tail == NIL {
            list.head = index;
        }
        list.tail = index;
        if let Some(t) = self.slots.get_mut(usize::from(tail)) {
            t.next = index;
        }
        if let Some(s) = self.slots.get_mut(usize::from(index)) {
            s.queue = queue;
            s.prev = tail;
            s.next = NIL;
        }
    }

    fn unlink(&mut self, index: u16) {
        let Some(&Slot { queue, prev, next, .. }) = self.slots.get(usize::from(index)) else { return };
        let Some(list) = self.list(queue) else { return };
        if list.head == index {
            list.head = next;
        }
        if list.tail == index {
            list.tail = prev;
        }
        if let Some(p) = self.slots.get_mut(usize::from(prev)) {
            p.next = next;
        }
        if let Some(n) = self.slots.get_mut(usize::from(next)) {
            n.prev = prev;
        }
        if let Some(s) = self.slots.get_mut(usize::from(index)) {
            s.queue = Queue::None;
            s.prev = NIL;
            s.next = NIL;
        }
    }
}

#[cfg(test)]
mod tests;
