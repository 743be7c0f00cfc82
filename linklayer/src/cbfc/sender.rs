//! The CBFC sender: credit checks before transmission, CF_Update processing, CC_Update timer.

use super::{CreditCounter, CreditRule, MAX_VCS, Mode, Vc, VcMode, check_limit};
use crate::Error;
use crate::time::{Duration, Instant};
use crate::wire::{CcUpdate, VC_GROUP_SIZE};

/// Sender configuration (UE 1.0 §5.2; SAI port attributes `CBFC_SENDER_*`, `CBFC_CC_MESSAGE_TIMER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CbfcSenderConfig {
    /// Credit size and per-packet overhead; must match the receiver's.
    pub rule: CreditRule,
    /// Port credit limit `S_CL_p` shared by all lossless VCs, or `None` for per-VC limits only.
    pub port_credit_limit: Option<u32>,
    /// Period of CC_Update messages, 1 µs to 250 ms (default 256 µs).
    pub cc_update_interval: Duration,
}

impl CbfcSenderConfig {
    /// Every field zero: the configuration of a [`CbfcSender::EMPTY`], which
    /// [`CbfcSender::new`] refuses.
    pub(crate) const ZERO: Self =
        CbfcSenderConfig { rule: CreditRule::ZERO, port_credit_limit: None, cc_update_interval: Duration::ZERO };
}

impl Default for CbfcSenderConfig {
    fn default() -> Self {
        CbfcSenderConfig {
            rule: CreditRule::default(),
            port_credit_limit: None,
            cc_update_interval: super::DEFAULT_CC_UPDATE_INTERVAL,
        }
    }
}

/// Counters a sender keeps for management (SAI `CBFC_*` statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SenderStats {
    /// Frames admitted on lossless VCs.
    pub frames_sent: u64,
    /// Credits consumed on lossless VCs.
    pub credits_consumed: u64,
    /// Credits returned by CF_Updates.
    pub credits_freed: u64,
    /// Times [`CbfcSender::on_sent`] was refused for lack of credit.
    pub no_credit: u64,
    /// CF_Updates accepted.
    pub cf_updates_rx: u64,
    /// CF_Updates rejected as impossible.
    pub cf_updates_rejected: u64,
    /// CC_Update messages produced.
    pub cc_updates_tx: u64,
    /// CC_Update messages handed back unsent ([`CbfcSender::unsent_cc_update`]).
    pub cc_updates_unsent: u64,
    /// Per-VC re-initialisations ([`CbfcSender::set_vc_mode`], [`CbfcSender::reinit_vc`],
    /// [`CbfcSender::resync_vc`]).
    pub vc_reinits: u64,
    /// The largest number of port credits ever in use.
    pub port_in_use_watermark: u32,
}

impl SenderStats {
    /// Every counter zero.
    pub const ZERO: Self = SenderStats {
        frames_sent: 0,
        credits_consumed: 0,
        credits_freed: 0,
        no_credit: 0,
        cf_updates_rx: 0,
        cf_updates_rejected: 0,
        cc_updates_tx: 0,
        cc_updates_unsent: 0,
        vc_reinits: 0,
        port_in_use_watermark: 0,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SenderVc {
    mode: Mode,
    /// `S_CC`: credits consumed.
    consumed: CreditCounter,
    /// `S_CF`: credits freed as last reported by the receiver.
    freed: CreditCounter,
    /// Held by [`CbfcSender::resync_vc`]: no credit until the receiver confirms its reset.
    held: bool,
    /// The largest `S_CU` since the watermark was last cleared.
    watermark: u32,
}

impl SenderVc {
    /// Best-effort, every counter zero.
    const ZERO: SenderVc = SenderVc {
        mode: Mode::BEST_EFFORT,
        consumed: CreditCounter::FIRST,
        freed: CreditCounter::FIRST,
        held: false,
        watermark: 0,
    };

    /// `S_CU = S_CC - S_CF`.
    fn in_use(&self) -> u32 {
        self.freed.distance_to(self.consumed) as u32
    }
}

/// The sending end of one port's CBFC.
///
/// Size: 896 bytes on a 64-bit target (32 VCs of per-VC state; printed by the `state_sizes` test).
/// Built in place: [`CbfcSender::EMPTY`] and [`CbfcSender::init`].
#[derive(Clone, Debug)]
pub struct CbfcSender {
    config: CbfcSenderConfig,
    vcs: [SenderVc; MAX_VCS],
    /// Cache of the sum of `in_use` over lossless VCs (`S_CU_p`).
    port_in_use: u32,
    /// When the next CC_Update round is due, if any VC is lossless.
    next_cc_at: Option<Instant>,
    /// VC groups (bit per [`VC_GROUP_SIZE`] VCs) still to report in the current round.
    cc_pending: u8,
    stats: SenderStats,
}

impl CbfcSender {
    /// A sender with every VC best-effort and every byte zero (a credit size of zero, read as
    /// one byte), so a `static` holding it lands in `.bss`: it refuses
    /// [`CbfcSender::set_vc_mode`] until [`CbfcSender::init`] configures it in place.
    pub const EMPTY: Self = CbfcSender {
        config: CbfcSenderConfig::ZERO,
        vcs: [SenderVc::ZERO; MAX_VCS],
        port_in_use: 0,
        next_cc_at: None,
        cc_pending: 0,
        stats: SenderStats::ZERO,
    };

    /// A sender with every VC best-effort. (Built on the stack; see [`CbfcSender::init`] for
    /// building one in place.)
    pub fn new(config: CbfcSenderConfig) -> Result<Self, Error> {
        let mut sender = Self::EMPTY;
        sender.init(config)?;
        Ok(sender)
    }

    /// Makes this sender what [`CbfcSender::new`]`(config)` returns, in place: every VC
    /// best-effort, counters at zero. Refused as `new` refuses, and then nothing changed.
    pub fn init(&mut self, config: CbfcSenderConfig) -> Result<(), Error> {
        Self::check(&config)?;
        self.config = config;
        self.vcs.fill(SenderVc::ZERO);
        self.port_in_use = 0;
        self.next_cc_at = None;
        self.cc_pending = 0;
        self.stats = SenderStats::ZERO;
        Ok(())
    }

    /// Why `config` cannot drive a sender.
    pub(crate) fn check(config: &CbfcSenderConfig) -> Result<(), Error> {
        if let Some(limit) = config.port_credit_limit {
            check_limit(limit, "port_credit_limit")?;
        }
        let iv = config.cc_update_interval;
        if iv < Duration::from_micros(1) || iv > Duration::from_micros(250_000) {
            return Err(Error::BadConfig { field: "cc_update_interval" });
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &CbfcSenderConfig {
        &self.config
    }

    /// Management counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    fn vc(&self, vc: Vc) -> &SenderVc {
        // `Vc` is always below MAX_VCS; the fallback is never taken.
        self.vcs.get(usize::from(vc.index())).unwrap_or(&self.vcs[0])
    }

    fn vc_mut(&mut self, vc: Vc) -> Option<&mut SenderVc> {
        self.vcs.get_mut(usize::from(vc.index()))
    }

    /// Sets how `vc` is treated and re-initialises it: `S_CC`, `S_CF` and `S_CU` start at zero, as
    /// the SAI "lossless VC initialization" workflow clears `CREDITS_USED`, `CONSUMED` and `FREED`
    /// for that one VC. The other VCs are untouched and may carry traffic meanwhile. Credits the
    /// VC had in use are forgotten: the receiver must re-initialise the same VC at a point where
    /// none of its frames is in flight (or use [`CbfcSender::resync_vc`], which waits for it).
    /// An [`CbfcSender::EMPTY`] not yet [`CbfcSender::init`]ed is refused ([`Error::BadConfig`]).
    pub fn set_vc_mode(&mut self, now: Instant, vc: Vc, mode: VcMode) -> Result<(), Error> {
        if self.config.cc_update_interval == Duration::ZERO {
            // Unconfigured: a lossless VC would send CC_Updates with no interval between them.
            return Err(Error::BadConfig { field: "not configured (init)" });
        }
        if let VcMode::Lossless { credit_limit: Some(limit) } = mode {
            check_limit(limit, "vc credit_limit")?;
        }
        if let VcMode::Lossless { credit_limit: None } = mode {
            if self.config.port_credit_limit.is_none() {
                return Err(Error::BadConfig { field: "vc credit_limit (no port limit to share)" });
            }
        }
        self.clear_vc(vc, mode, false);
        if self.next_cc_at.is_none() && self.any_lossless() {
            self.next_cc_at = Some(now.saturating_add(self.config.cc_update_interval));
        } else if !self.any_lossless() {
            self.next_cc_at = None;
            self.cc_pending = 0;
        }
        Ok(())
    }

    /// Re-initialises `vc` in its current mode (SAI "lossless VC initialization"): its counters
    /// start at zero and it may send at once. See [`CbfcSender::set_vc_mode`] for what the
    /// receiver must do.
    pub fn reinit_vc(&mut self, vc: Vc) {
        let mode = self.vc(vc).mode.get();
        self.clear_vc(vc, mode, false);
    }

    /// Re-initialises `vc` and holds it until the receiver has re-initialised too: the VC takes
    /// no credit until a CF_Update reports `R_CF = 0`, the value a receiver reports once its
    /// buffer of the VC has drained and its counters restarted ([`CbfcReceiver::resync_vc`]).
    /// A best-effort VC is not held.
    ///
    /// This is the sender's half of recovering from a peer restart or an LLR re-initialisation
    /// (see the crate's recovery sequence): call it when this end's LLR transmitter starts a new
    /// handshake, and pass CF_Updates to [`CbfcSender::handle_cf_update`] only once that
    /// handshake has completed, so that a CF_Update from before the peer's reset cannot release
    /// the VC.
    ///
    /// [`CbfcReceiver::resync_vc`]: super::CbfcReceiver::resync_vc
    pub fn resync_vc(&mut self, vc: Vc) {
        let mode = self.vc(vc).mode.get();
        let lossless = matches!(mode, VcMode::Lossless { .. });
        self.clear_vc(vc, mode, lossless);
    }

    /// [`CbfcSender::resync_vc`] for every lossless VC.
    pub fn resync_all(&mut self) {
        for vc in Vc::all() {
            if self.vc(vc).mode.lossless {
                self.resync_vc(vc);
            }
        }
    }

    /// Whether `vc` is held waiting for the receiver's re-initialisation.
    pub fn is_held(&self, vc: Vc) -> bool {
        self.vc(vc).held
    }

    fn clear_vc(&mut self, vc: Vc, mode: VcMode, held: bool) {
        let in_use = self.vc(vc).in_use();
        self.port_in_use = self.port_in_use.saturating_sub(in_use);
        if let Some(v) = self.vc_mut(vc) {
            // The watermark is a management statistic, not state: it outlives the counters.
            *v = SenderVc { mode: Mode::of(mode), held, watermark: v.watermark, ..SenderVc::ZERO };
        }
        self.stats.vc_reinits += 1;
    }

    /// The mode of `vc`.
    pub fn vc_mode(&self, vc: Vc) -> VcMode {
        self.vc(vc).mode.get()
    }

    fn any_lossless(&self) -> bool {
        self.vcs.iter().any(|v| v.mode.lossless)
    }

    /// `S_CU` of `vc`: credits consumed and not yet freed.
    pub fn in_use(&self, vc: Vc) -> u32 {
        self.vc(vc).in_use()
    }

    /// `S_CU_p`: credits in use over all lossless VCs.
    pub fn port_in_use(&self) -> u32 {
        self.port_in_use
    }

    /// `S_CC` of `vc`.
    pub fn consumed(&self, vc: Vc) -> CreditCounter {
        self.vc(vc).consumed
    }

    /// `S_CF` of `vc`: the receiver's credits-freed counter as last reported.
    pub fn freed(&self, vc: Vc) -> CreditCounter {
        self.vc(vc).freed
    }

    /// The largest `S_CU` of `vc` since its watermark was last cleared (SAI per-VC
    /// `CREDITS_USED` watermark).
    pub fn in_use_watermark(&self, vc: Vc) -> u32 {
        self.vc(vc).watermark
    }

    /// Restarts `vc`'s watermark from its current `S_CU`.
    pub fn clear_in_use_watermark(&mut self, vc: Vc) {
        if let Some(v) = self.vc_mut(vc) {
            v.watermark = v.in_use();
        }
    }

    /// Credits a frame of `len` bytes costs.
    pub fn credits_for(&self, len: usize) -> Result<u32, Error> {
        self.config.rule.credits_for(len)
    }

    /// Credits `vc` may still consume (the tighter of its own and the port's headroom), or
    /// `None` for a best-effort VC.
    pub fn available(&self, vc: Vc) -> Option<u32> {
        let v = self.vc(vc);
        let VcMode::Lossless { credit_limit } = v.mode.get() else { return None };
        if v.held {
            return Some(0);
        }
        let own = credit_limit.map(|l| l.saturating_sub(v.in_use()));
        let port = self.config.port_credit_limit.map(|l| l.saturating_sub(self.port_in_use));
        Some(match (own, port) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => 0,
        })
    }

    /// Whether a frame of `len` bytes may be sent on `vc` now: always on a best-effort VC; on a
    /// lossless VC iff `S_CU + pkt_credits <= S_CL` for the VC and the port.
    pub fn may_send(&self, vc: Vc, len: usize) -> Result<bool, Error> {
        let needed = self.credits_for(len)?;
        Ok(self.available(vc).is_none_or(|avail| needed <= avail))
    }

    /// Records that a frame of `len` bytes is being sent on `vc` and returns the credits it
    /// consumed (0 on a best-effort VC). Refuses with [`Error::NoCredit`], changing nothing, if
    /// the credit check fails: the sender can never exceed the receiver's credit.
    pub fn on_sent(&mut self, vc: Vc, len: usize) -> Result<u32, Error> {
        let needed = self.credits_for(len)?;
        let Some(available) = self.available(vc) else { return Ok(0) };
        if needed > available {
            self.stats.no_credit += 1;
            return Err(Error::NoCredit { vc: vc.index(), needed, available });
        }
        if let Some(v) = self.vc_mut(vc) {
            v.consumed = v.consumed.wrapping_add(u64::from(needed));
            v.watermark = v.watermark.max(v.in_use());
        }
        self.port_in_use = self.port_in_use.saturating_add(needed);
        self.stats.frames_sent += 1;
        self.stats.credits_consumed += u64::from(needed);
        self.stats.port_in_use_watermark = self.stats.port_in_use_watermark.max(self.port_in_use);
        Ok(needed)
    }

    /// Applies a CF_Update carrying the receiver's `R_CF` for `vc`: `S_CU -= R_CF - S_CF;
    /// S_CF = R_CF`. Returns the credits returned. An update that would free more than is in use
    /// (stale, reordered or corrupt) is rejected with [`Error::CounterMismatch`] and changes
    /// nothing; an update on a best-effort VC is [`Error::InvalidState`]. On a held VC
    /// ([`CbfcSender::resync_vc`]) only `R_CF = 0` is accepted, and it releases the VC.
    pub fn handle_cf_update(&mut self, vc: Vc, freed: CreditCounter) -> Result<u32, Error> {
        let v = *self.vc(vc);
        if !v.mode.lossless {
            self.stats.cf_updates_rejected += 1;
            return Err(Error::InvalidState { state: "best-effort VC", input: "CF_Update" });
        }
        if v.held {
            if freed != CreditCounter::FIRST {
                self.stats.cf_updates_rejected += 1;
                let distance = freed.value();
                return Err(Error::CounterMismatch {
                    field: "R_CF (VC held for re-initialisation)",
                    distance,
                    limit: 0,
                });
            }
            if let Some(v) = self.vc_mut(vc) {
                v.held = false;
            }
            self.stats.cf_updates_rx += 1;
            return Ok(0);
        }
        let returned = v.freed.distance_to(freed) as u32;
        let in_use = v.in_use();
        if returned > in_use {
            self.stats.cf_updates_rejected += 1;
            return Err(Error::CounterMismatch { field: "R_CF", distance: returned, limit: in_use });
        }
        if let Some(v) = self.vc_mut(vc) {
            v.freed = freed;
        }
        self.port_in_use = self.port_in_use.saturating_sub(returned);
        self.stats.cf_updates_rx += 1;
        self.stats.credits_freed += u64::from(returned);
        Ok(returned)
    }

    /// The next CC_Update message to send, if one is due at `now`. A round covers every lossless
    /// VC; with lossless VCs in both halves of the VC space a round is two messages, returned by
    /// consecutive calls. Each carries `S_CC` of every VC of its group (zero for a VC that is not
    /// lossless). A message that cannot be sent now goes back with
    /// [`CbfcSender::unsent_cc_update`] and comes out again, with fresh counters, from the next
    /// call.
    pub fn poll_cc_update(&mut self, now: Instant) -> Option<CcUpdate> {
        if self.cc_pending == 0 {
            let due = self.next_cc_at?;
            if now < due {
                return None;
            }
            self.next_cc_at = Some(now.saturating_add(self.config.cc_update_interval));
            for (group, chunk) in self.vcs.chunks(VC_GROUP_SIZE).enumerate() {
                if chunk.iter().any(|v| v.mode.lossless) {
                    self.cc_pending |= 1 << group;
                }
            }
        }
        let group = self.cc_pending.trailing_zeros() as usize;
        self.cc_pending &= !(1u8 << group);
        let mut msg = CcUpdate::new(group as u8).ok()?;
        let start = group * VC_GROUP_SIZE;
        for (i, v) in self.vcs.iter().enumerate().skip(start).take(VC_GROUP_SIZE) {
            if v.mode.lossless {
                msg.set(Vc::new(i as u8).ok()?, v.consumed).ok()?;
            }
        }
        self.stats.cc_updates_tx += 1;
        Some(msg)
    }

    /// Hands back a CC_Update from [`CbfcSender::poll_cc_update`] that could not be sent (the
    /// LLR transmitter refused it, the link is down): its group is due again at once.
    pub fn unsent_cc_update(&mut self, msg: &CcUpdate) {
        self.cc_pending |= 1 << (msg.group() & 1);
        self.stats.cc_updates_unsent += 1;
    }

    /// When [`CbfcSender::poll_cc_update`] next has something to send.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.cc_pending != 0 { Some(Instant::ZERO) } else { self.next_cc_at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lossless(limit: u32) -> VcMode {
        VcMode::Lossless { credit_limit: Some(limit) }
    }

    #[test]
    fn sends_only_within_credit() {
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let vc = Vc::new(3).unwrap();
        s.set_vc_mode(Instant::ZERO, vc, lossless(10)).unwrap();
        assert!(s.may_send(vc, 1280).unwrap());
        assert_eq!(s.on_sent(vc, 1280).unwrap(), 10);
        assert!(!s.may_send(vc, 1).unwrap());
        assert_eq!(s.on_sent(vc, 1), Err(Error::NoCredit { vc: 3, needed: 1, available: 0 }));
        assert_eq!(s.in_use(vc), 10);
        // The receiver frees 4 credits: R_CF = 4.
        assert_eq!(s.handle_cf_update(vc, CreditCounter::new(4).unwrap()).unwrap(), 4);
        assert_eq!(s.available(vc), Some(4));
        // A repeated update returns nothing; an impossible one is refused.
        assert_eq!(s.handle_cf_update(vc, CreditCounter::new(4).unwrap()).unwrap(), 0);
        assert!(matches!(s.handle_cf_update(vc, CreditCounter::new(11).unwrap()), Err(Error::CounterMismatch { .. })));
        assert_eq!(s.in_use(vc), 6);
    }

    #[test]
    fn best_effort_vcs_are_not_counted() {
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let vc = Vc::new(0).unwrap();
        assert_eq!(s.available(vc), None);
        assert_eq!(s.on_sent(vc, 9000).unwrap(), 0);
        assert!(s.handle_cf_update(vc, CreditCounter::new(1).unwrap()).is_err());
        assert_eq!(s.poll_timeout(), None);
    }

    #[test]
    fn port_limit_is_shared() {
        let cfg = CbfcSenderConfig { port_credit_limit: Some(5), ..Default::default() };
        let mut s = CbfcSender::new(cfg).unwrap();
        let (a, b) = (Vc::new(1).unwrap(), Vc::new(2).unwrap());
        s.set_vc_mode(Instant::ZERO, a, VcMode::Lossless { credit_limit: None }).unwrap();
        s.set_vc_mode(Instant::ZERO, b, lossless(100)).unwrap();
        assert_eq!(s.on_sent(a, 3 * 128).unwrap(), 3);
        assert_eq!(s.available(b), Some(2));
        assert!(s.on_sent(b, 3 * 128).is_err());
        assert_eq!(s.on_sent(b, 2 * 128).unwrap(), 2);
        assert_eq!(s.port_in_use(), 5);
        s.handle_cf_update(a, CreditCounter::new(3).unwrap()).unwrap();
        assert_eq!(s.port_in_use(), 2);
        assert_eq!(s.available(a), Some(3));
    }

    #[test]
    fn configuration_is_validated() {
        assert!(
            CbfcSender::new(CbfcSenderConfig { cc_update_interval: Duration::ZERO, ..Default::default() }).is_err()
        );
        assert!(
            CbfcSender::new(CbfcSenderConfig {
                cc_update_interval: Duration::from_micros(250_001),
                ..Default::default()
            })
            .is_err()
        );
        assert!(CbfcSender::new(CbfcSenderConfig { port_credit_limit: Some(1 << 20), ..Default::default() }).is_err());
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let vc = Vc::new(0).unwrap();
        assert!(s.set_vc_mode(Instant::ZERO, vc, VcMode::Lossless { credit_limit: None }).is_err());
        assert!(s.set_vc_mode(Instant::ZERO, vc, lossless(1 << 20)).is_err());
    }

    #[test]
    fn one_vc_re_initialises_while_the_others_carry_traffic() {
        let cfg = CbfcSenderConfig { port_credit_limit: Some(20), ..Default::default() };
        let mut s = CbfcSender::new(cfg).unwrap();
        let (a, b) = (Vc::new(1).unwrap(), Vc::new(2).unwrap());
        s.set_vc_mode(Instant::ZERO, a, lossless(10)).unwrap();
        s.set_vc_mode(Instant::ZERO, b, lossless(10)).unwrap();
        s.on_sent(a, 10 * 128).unwrap();
        s.on_sent(b, 4 * 128).unwrap();
        assert_eq!(s.in_use_watermark(a), 10);
        // SAI "lossless VC initialization" of VC 1 alone: its counters clear, VC 2 keeps its own.
        s.reinit_vc(a);
        assert_eq!((s.in_use(a), s.consumed(a).value(), s.freed(a).value()), (0, 0, 0));
        assert_eq!((s.in_use(b), s.port_in_use()), (4, 4));
        assert_eq!(s.available(a), Some(10));
        // A mode change re-initialises too, credits in use or not.
        s.on_sent(a, 128).unwrap();
        s.set_vc_mode(Instant::ZERO, a, VcMode::BestEffort).unwrap();
        assert_eq!(s.port_in_use(), 4);
        assert_eq!(s.stats().vc_reinits, 4);
    }

    #[test]
    fn a_resynchronising_vc_waits_for_the_receivers_reset() {
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let (a, b) = (Vc::new(1).unwrap(), Vc::new(2).unwrap());
        s.set_vc_mode(Instant::ZERO, a, lossless(10)).unwrap();
        s.set_vc_mode(Instant::ZERO, b, lossless(10)).unwrap();
        s.on_sent(a, 5 * 128).unwrap();
        s.resync_vc(a);
        assert!(s.is_held(a));
        assert_eq!(s.available(a), Some(0));
        assert!(matches!(s.on_sent(a, 1), Err(Error::NoCredit { .. })));
        assert_eq!(s.on_sent(b, 128), Ok(1));
        // A CF_Update from the receiver's previous life is refused; its reset releases the VC.
        assert!(matches!(s.handle_cf_update(a, CreditCounter::new(3).unwrap()), Err(Error::CounterMismatch { .. })));
        assert!(s.is_held(a));
        assert_eq!(s.handle_cf_update(a, CreditCounter::FIRST), Ok(0));
        assert!(!s.is_held(a));
        assert_eq!(s.available(a), Some(10));
        assert_eq!(s.in_use_watermark(a), 5);
        s.clear_in_use_watermark(a);
        assert_eq!(s.in_use_watermark(a), 0);
        // Best-effort VCs are never held.
        let be = Vc::new(9).unwrap();
        s.resync_vc(be);
        assert!(!s.is_held(be));
    }

    #[test]
    fn an_unsent_cc_update_comes_out_again() {
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let vc = Vc::new(20).unwrap();
        s.set_vc_mode(Instant::ZERO, vc, lossless(100)).unwrap();
        let due = s.poll_timeout().unwrap();
        let first = s.poll_cc_update(due).unwrap();
        assert_eq!(s.poll_cc_update(due), None);
        s.unsent_cc_update(&first);
        assert_eq!(s.poll_timeout(), Some(Instant::ZERO));
        s.on_sent(vc, 128).unwrap();
        // Fresh counters in the retried message.
        let again = s.poll_cc_update(due).unwrap();
        assert_eq!(again.get(vc), Some(CreditCounter::new(1).unwrap()));
        assert_eq!(again.get(Vc::new(21).unwrap()), Some(CreditCounter::FIRST));
        assert_eq!((s.stats().cc_updates_tx, s.stats().cc_updates_unsent), (2, 1));
    }

    #[test]
    fn cc_updates_cover_every_lossless_vc_each_period() {
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let t0 = Instant::ZERO;
        for i in [1u8, 17, 30] {
            s.set_vc_mode(t0, Vc::new(i).unwrap(), lossless(1000)).unwrap();
        }
        s.on_sent(Vc::new(17).unwrap(), 300).unwrap();
        assert_eq!(s.poll_cc_update(t0), None);
        let due = s.poll_timeout().unwrap();
        assert_eq!(due, t0.saturating_add(Duration::from_micros(256)));
        let first = s.poll_cc_update(due).unwrap();
        let second = s.poll_cc_update(due).unwrap();
        assert_eq!(s.poll_cc_update(due), None);
        assert_eq!(first.group(), 0);
        assert_eq!(second.group(), 1);
        let entries: heapless::Vec<_, 32> = first.entries().chain(second.entries()).collect();
        assert_eq!(entries.len(), 32);
        assert!(entries.contains(&(Vc::new(17).unwrap(), CreditCounter::new(3).unwrap())));
        assert_eq!(s.stats().cc_updates_tx, 2);
    }

    #[test]
    fn counters_wrap_at_20_bits() {
        let mut s =
            CbfcSender::new(CbfcSenderConfig { rule: CreditRule::new(1, 0).unwrap(), ..Default::default() }).unwrap();
        let vc = Vc::new(0).unwrap();
        s.set_vc_mode(Instant::ZERO, vc, lossless(super::super::CREDIT_LIMIT_MAX)).unwrap();
        let mut freed = CreditCounter::FIRST;
        for _ in 0..5 {
            let n = s.on_sent(vc, 700_000).unwrap();
            freed = freed.wrapping_add(u64::from(n));
            assert_eq!(s.handle_cf_update(vc, freed).unwrap(), 700_000);
        }
        // 3.5 M credits went through a 20-bit counter.
        assert_eq!(u64::from(s.consumed(vc).value()), (5 * 700_000) % (1 << 20));
        assert_eq!(s.in_use(vc), 0);
    }
}
