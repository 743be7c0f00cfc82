//! The CBFC receiver: buffer accounting, CF_Update scheduling, CC_Update reconciliation.

use super::{CreditCounter, CreditRule, MAX_VCS, Mode, Vc, VcMode, check_limit};
use crate::Error;
use crate::time::{Duration, Instant, LinkRate};
use crate::wire::CcUpdate;

/// Receiver configuration (UE 1.0 §5.2; SAI port attributes `CBFC_RECEIVER_*`,
/// `CBFC_CF_MIN_SPACING`, `CBFC_CF_MAX_SPACING`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CbfcReceiverConfig {
    /// Credit size and per-packet overhead; must match the sender's.
    pub rule: CreditRule,
    /// Minimum bytes between two CF_Updates on the port (at least 800, default 6400).
    pub cf_min_spacing: u32,
    /// Maximum bytes between two CF_Updates of one VC (16 KiB to 1 MiB in 16 KiB steps, default
    /// 262 144).
    pub cf_max_spacing: u32,
    /// Rate of the link that carries the CF_Updates, to turn the spacings into time.
    pub link_rate: LinkRate,
}

impl CbfcReceiverConfig {
    /// Every field zero: the configuration of a [`CbfcReceiver::EMPTY`], which
    /// [`CbfcReceiver::new`] refuses.
    pub(crate) const ZERO: Self =
        CbfcReceiverConfig { rule: CreditRule::ZERO, cf_min_spacing: 0, cf_max_spacing: 0, link_rate: LinkRate::ZERO };
}

impl Default for CbfcReceiverConfig {
    fn default() -> Self {
        CbfcReceiverConfig {
            rule: CreditRule::default(),
            cf_min_spacing: 6400,
            cf_max_spacing: 262_144,
            link_rate: LinkRate::GBPS_800,
        }
    }
}

/// A CF_Update the receiver wants sent: `R_CF` of one VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CfUpdate {
    /// The virtual channel.
    pub vc: Vc,
    /// `R_CF`, the receiver's credits-freed counter.
    pub freed: CreditCounter,
}

/// Counters a receiver keeps for management.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReceiverStats {
    /// Frames accounted on lossless VCs.
    pub frames_received: u64,
    /// Frames refused because they would overrun the VC's buffer.
    pub overruns: u64,
    /// CF_Updates produced.
    pub cf_updates_tx: u64,
    /// CC_Updates handled.
    pub cc_updates_rx: u64,
    /// CC_Update entries refused as stale or impossible (the other entries of the message still
    /// apply).
    pub cc_entries_rejected: u64,
    /// CC_Update entries ignored: the VC is being re-initialised, or not lossless here and
    /// reported as zero.
    pub cc_entries_ignored: u64,
    /// Credits recovered by CC_Updates (credits of frames lost on the link).
    pub credits_recovered: u64,
    /// Per-VC re-initialisations ([`CbfcReceiver::set_vc_mode`], [`CbfcReceiver::resync_vc`]).
    pub vc_reinits: u64,
}

impl ReceiverStats {
    /// Every counter zero.
    pub const ZERO: Self = ReceiverStats {
        frames_received: 0,
        overruns: 0,
        cf_updates_tx: 0,
        cc_updates_rx: 0,
        cc_entries_rejected: 0,
        cc_entries_ignored: 0,
        credits_recovered: 0,
        vc_reinits: 0,
    };
}

/// What a CC_Update did, entry by entry (bit *i* of each mask is VC *i*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CcUpdateOutcome {
    /// VCs whose entry was applied.
    pub applied: u32,
    /// VCs whose entry was ignored: being re-initialised, or not lossless here and reported as
    /// zero.
    pub ignored: u32,
    /// VCs whose entry was refused; each left its VC unchanged.
    pub rejected: u32,
    /// The first refused entry's VC and reason.
    pub first_error: Option<(Vc, Error)>,
    /// Credits of frames lost on the link, recovered by the applied entries.
    pub credits_recovered: u32,
}

impl CcUpdateOutcome {
    /// Whether every entry was applied or ignored.
    pub const fn is_ok(&self) -> bool {
        self.rejected == 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ReceiverVc {
    mode: Mode,
    /// `R_CC`: credits consumed.
    consumed: CreditCounter,
    /// `R_CF`: credits freed.
    freed: CreditCounter,
    /// `R_CF` as last reported.
    reported: CreditCounter,
    /// When `R_CF` was last reported.
    reported_at: Instant,
    /// `R_CF` must be reported even if unchanged (after a re-initialisation).
    report_due: bool,
    /// Credits of frames buffered before the last re-initialisation, still to drain. While
    /// nonzero the VC sends no CF_Update and ignores CC_Update entries.
    draining: u32,
    /// The largest buffer occupancy since the watermark was last cleared.
    watermark: u32,
}

impl ReceiverVc {
    /// Best-effort, every counter zero.
    const ZERO: ReceiverVc = ReceiverVc {
        mode: Mode::BEST_EFFORT,
        consumed: CreditCounter::FIRST,
        freed: CreditCounter::FIRST,
        reported: CreditCounter::FIRST,
        reported_at: Instant::ZERO,
        report_due: false,
        draining: 0,
        watermark: 0,
    };

    /// Credits of frames in the buffer, counted since the last re-initialisation.
    fn counted(&self) -> u32 {
        self.freed.distance_to(self.consumed) as u32
    }

    fn occupancy(&self) -> u32 {
        self.counted().saturating_add(self.draining)
    }

    fn needs_report(&self) -> bool {
        self.lossless() && self.draining == 0 && (self.freed != self.reported || self.report_due)
    }

    fn lossless(&self) -> bool {
        self.mode.lossless
    }
}

/// The receiving end of one port's CBFC.
///
/// Size: 1 408 bytes on a 64-bit target (32 VCs of per-VC state; printed by the `state_sizes`
/// test). Built in place: [`CbfcReceiver::EMPTY`] and [`CbfcReceiver::init`].
#[derive(Clone, Debug)]
pub struct CbfcReceiver {
    config: CbfcReceiverConfig,
    min_spacing: Duration,
    max_spacing: Duration,
    vcs: [ReceiverVc; MAX_VCS],
    /// When the last CF_Update of any VC was produced.
    last_cf_at: Option<Instant>,
    /// Round-robin start for the next CF_Update.
    cursor: u8,
    stats: ReceiverStats,
}

impl CbfcReceiver {
    /// A receiver with every VC best-effort and every byte zero (a credit size of zero, read as
    /// one byte), so a `static` holding it lands in `.bss`: it refuses
    /// [`CbfcReceiver::set_vc_mode`] until [`CbfcReceiver::init`] configures it in place.
    pub const EMPTY: Self = CbfcReceiver {
        config: CbfcReceiverConfig::ZERO,
        min_spacing: Duration::ZERO,
        max_spacing: Duration::ZERO,
        vcs: [ReceiverVc::ZERO; MAX_VCS],
        last_cf_at: None,
        cursor: 0,
        stats: ReceiverStats::ZERO,
    };

    /// A receiver with every VC best-effort. (Built on the stack; see [`CbfcReceiver::init`]
    /// for building one in place.)
    pub fn new(config: CbfcReceiverConfig) -> Result<Self, Error> {
        let mut receiver = Self::EMPTY;
        receiver.init(config)?;
        Ok(receiver)
    }

    /// Makes this receiver what [`CbfcReceiver::new`]`(config)` returns, in place: every VC
    /// best-effort, counters at zero. Refused as `new` refuses, and then nothing changed.
    pub fn init(&mut self, config: CbfcReceiverConfig) -> Result<(), Error> {
        Self::check(&config)?;
        self.config = config;
        self.min_spacing = config.link_rate.time_for_bytes(u64::from(config.cf_min_spacing));
        self.max_spacing = config.link_rate.time_for_bytes(u64::from(config.cf_max_spacing));
        self.vcs.fill(ReceiverVc::ZERO);
        self.last_cf_at = None;
        self.cursor = 0;
        self.stats = ReceiverStats::ZERO;
        Ok(())
    }

    /// Why `config` cannot drive a receiver.
    pub(crate) fn check(config: &CbfcReceiverConfig) -> Result<(), Error> {
        if config.cf_min_spacing < 800 {
            return Err(Error::BadConfig { field: "cf_min_spacing" });
        }
        let max = config.cf_max_spacing;
        if !(16 * 1024..=1024 * 1024).contains(&max) || max % (16 * 1024) != 0 {
            return Err(Error::BadConfig { field: "cf_max_spacing" });
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &CbfcReceiverConfig {
        &self.config
    }

    /// Management counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    fn vc(&self, vc: Vc) -> &ReceiverVc {
        self.vcs.get(usize::from(vc.index())).unwrap_or(&self.vcs[0])
    }

    fn vc_mut(&mut self, vc: Vc) -> Option<&mut ReceiverVc> {
        self.vcs.get_mut(usize::from(vc.index()))
    }

    /// Sets how `vc` is treated and re-initialises it: `R_CC` and `R_CF` start at zero (the SAI
    /// "lossless VC initialization" workflow clears `CONSUMED` and `FREED` for that one VC); the
    /// other VCs are untouched. A lossless VC's `credit_limit` is the buffer, in credits, the
    /// receiver dedicates to it: the same number the sender uses as its limit. Frames already in
    /// the buffer stay accounted until drained, and the VC reports nothing until they are
    /// ([`CbfcReceiver::resync_vc`]). An [`CbfcReceiver::EMPTY`] not yet [`CbfcReceiver::init`]ed
    /// is refused ([`Error::BadConfig`]).
    pub fn set_vc_mode(&mut self, now: Instant, vc: Vc, mode: VcMode) -> Result<(), Error> {
        if self.config.cf_max_spacing == 0 {
            return Err(Error::BadConfig { field: "not configured (init)" });
        }
        if let VcMode::Lossless { credit_limit: Some(limit) } = mode {
            check_limit(limit, "vc credit_limit")?;
        }
        self.clear_vc(now, vc, mode);
        Ok(())
    }

    /// Re-initialises `vc` in its current mode, the receiver's half of recovering from a peer
    /// restart: the frames in the buffer are drained as usual, then `R_CC` and `R_CF` restart
    /// from zero and a CF_Update reporting `R_CF = 0` is sent, which releases the sender held by
    /// [`CbfcSender::resync_vc`]. Until then the VC sends no CF_Update and ignores CC_Update
    /// entries, whose counters belong to the sender's previous life.
    ///
    /// [`CbfcSender::resync_vc`]: super::CbfcSender::resync_vc
    pub fn resync_vc(&mut self, now: Instant, vc: Vc) {
        let mode = self.vc(vc).mode.get();
        self.clear_vc(now, vc, mode);
    }

    /// [`CbfcReceiver::resync_vc`] for every lossless VC.
    pub fn resync_all(&mut self, now: Instant) {
        for vc in Vc::all() {
            if self.vc(vc).lossless() {
                self.resync_vc(now, vc);
            }
        }
    }

    /// Reports every lossless VC's `R_CF` again at the next opportunities, changed or not (for
    /// example when CF_Updates may have been ignored by a sender still completing its LLR
    /// handshake).
    pub fn report_all(&mut self) {
        for v in self.vcs.iter_mut().filter(|v| v.lossless()) {
            v.report_due = true;
        }
    }

    /// Whether `vc` is still draining frames from before its last re-initialisation.
    pub fn is_draining(&self, vc: Vc) -> bool {
        self.vc(vc).draining != 0
    }

    fn clear_vc(&mut self, now: Instant, vc: Vc, mode: VcMode) {
        let held = self.vc(vc).occupancy();
        if let Some(v) = self.vc_mut(vc) {
            let watermark = v.watermark;
            *v = ReceiverVc {
                mode: Mode::of(mode),
                reported_at: now,
                report_due: true,
                draining: held,
                watermark,
                ..ReceiverVc::ZERO
            };
        }
        self.stats.vc_reinits += 1;
    }

    /// `R_CC - R_CF` of `vc`: credits of frames in the buffer.
    pub fn occupancy(&self, vc: Vc) -> u32 {
        self.vc(vc).occupancy()
    }

    /// `R_CF` of `vc`.
    pub fn freed(&self, vc: Vc) -> CreditCounter {
        self.vc(vc).freed
    }

    /// `R_CC` of `vc`.
    pub fn consumed(&self, vc: Vc) -> CreditCounter {
        self.vc(vc).consumed
    }

    /// The largest occupancy of `vc`'s buffer since its watermark was last cleared.
    pub fn occupancy_watermark(&self, vc: Vc) -> u32 {
        self.vc(vc).watermark
    }

    /// Restarts `vc`'s watermark from its current occupancy.
    pub fn clear_occupancy_watermark(&mut self, vc: Vc) {
        if let Some(v) = self.vc_mut(vc) {
            v.watermark = v.occupancy();
        }
    }

    /// Accounts a frame of `len` bytes stored in `vc`'s buffer (`R_CC += pkt_credits`) and returns
    /// its credits (0 on a best-effort VC). If the frame would exceed the VC's buffer the sender
    /// has overrun its credit: the frame is refused ([`Error::CreditOverrun`], nothing counted) and
    /// must be dropped; the sender's next CC_Update recovers its credits.
    pub fn on_received(&mut self, vc: Vc, len: usize) -> Result<u32, Error> {
        let credits = self.config.rule.credits_for(len)?;
        let v = *self.vc(vc);
        let VcMode::Lossless { credit_limit } = v.mode.get() else { return Ok(0) };
        if let Some(limit) = credit_limit {
            if u64::from(v.occupancy()) + u64::from(credits) > u64::from(limit) {
                self.stats.overruns += 1;
                return Err(Error::CreditOverrun { vc: vc.index() });
            }
        }
        if let Some(v) = self.vc_mut(vc) {
            v.consumed = v.consumed.wrapping_add(u64::from(credits));
            v.watermark = v.watermark.max(v.occupancy());
        }
        self.stats.frames_received += 1;
        Ok(credits)
    }

    /// Records that `credits` of `vc`'s buffer were drained (`R_CF += credits`; credits of frames
    /// from before a re-initialisation drain first and do not count). Freeing more than the
    /// buffer holds is [`Error::CounterMismatch`] and changes nothing.
    pub fn on_freed(&mut self, vc: Vc, credits: u32) -> Result<(), Error> {
        let v = *self.vc(vc);
        let held = v.occupancy();
        if credits > held {
            return Err(if v.lossless() || held != 0 {
                Error::CounterMismatch { field: "R_CF", distance: credits, limit: held }
            } else {
                Error::InvalidState { state: "best-effort VC", input: "on_freed" }
            });
        }
        if let Some(v) = self.vc_mut(vc) {
            let old = credits.min(v.draining);
            v.draining -= old;
            v.freed = v.freed.wrapping_add(u64::from(credits - old));
        }
        Ok(())
    }

    /// [`CbfcReceiver::on_freed`] for a drained frame of `len` bytes.
    pub fn on_frame_freed(&mut self, vc: Vc, len: usize) -> Result<(), Error> {
        let credits = if self.vc(vc).occupancy() != 0 { self.config.rule.credits_for(len)? } else { 0 };
        self.on_freed(vc, credits)
    }

    /// Applies a CC_Update: for each lossless VC, `R_CF += S_CC - R_CC; R_CC = S_CC`, recovering
    /// the credits of frames lost on the link. Each entry stands alone: one refused (a counter
    /// behind `R_CC`, a jump larger than the VC's buffer, a nonzero counter for a VC that is not
    /// lossless here) leaves its VC unchanged and the others still apply. Entries of VCs being
    /// re-initialised are ignored.
    pub fn handle_cc_update(&mut self, msg: &CcUpdate) -> CcUpdateOutcome {
        let mut out = CcUpdateOutcome::default();
        for (vc, consumed) in msg.entries() {
            let bit = 1u32 << vc.index();
            match self.check_cc_entry(vc, consumed) {
                Ok(None) => {
                    out.ignored |= bit;
                    self.stats.cc_entries_ignored += 1;
                }
                Ok(Some(lost)) => {
                    if let Some(v) = self.vc_mut(vc) {
                        v.freed = v.freed.wrapping_add(u64::from(lost));
                        v.consumed = consumed;
                    }
                    out.applied |= bit;
                    out.credits_recovered = out.credits_recovered.saturating_add(lost);
                    self.stats.credits_recovered += u64::from(lost);
                }
                Err(e) => {
                    out.rejected |= bit;
                    out.first_error = out.first_error.or(Some((vc, e)));
                    self.stats.cc_entries_rejected += 1;
                }
            }
        }
        self.stats.cc_updates_rx += 1;
        out
    }

    /// The credits one CC_Update entry recovers, `None` if the entry is to be ignored.
    fn check_cc_entry(&self, vc: Vc, consumed: CreditCounter) -> Result<Option<u32>, Error> {
        let v = self.vc(vc);
        if !v.lossless() {
            return if consumed == CreditCounter::FIRST {
                Ok(None)
            } else {
                Err(Error::InvalidState { state: "best-effort VC", input: "CC_Update" })
            };
        }
        if v.draining != 0 {
            return Ok(None);
        }
        let lost = v.consumed.distance_to(consumed);
        // The sender never has more than its limit in use (`S_CC - S_CF`), and its `S_CF` is at
        // most our `R_CF`: so no more than the limit less what the buffer holds can be lost. A
        // counter behind `R_CC` reads as a jump of nearly the whole counter, and is refused.
        let limit = match v.mode.get() {
            VcMode::Lossless { credit_limit: Some(l) } => u64::from(l),
            _ => CreditCounter::MODULUS / 2 - 1,
        }
        .saturating_sub(u64::from(v.counted()));
        if lost > limit {
            return Err(Error::CounterMismatch { field: "S_CC", distance: lost as u32, limit: limit as u32 });
        }
        Ok(Some(lost as u32))
    }

    /// The next CF_Update to send at `now`, if any, once `cf_min_spacing` has passed since the
    /// port's last CF_Update: a lossless VC not reported for `cf_max_spacing` (which repairs a lost
    /// update: the VC's own traffic, stopped by the loss, cannot), else a VC whose `R_CF` changed
    /// since its last report; each round robin.
    pub fn poll_cf_update(&mut self, now: Instant) -> Option<CfUpdate> {
        if let Some(last) = self.last_cf_at {
            if now < last.saturating_add(self.min_spacing) {
                return None;
            }
        }
        let start = usize::from(self.cursor);
        // One pass from the cursor: the first overdue VC, else the first with a change.
        let (mut overdue, mut changed) = (None, None);
        for i in (0..MAX_VCS).map(|k| (start + k) % MAX_VCS) {
            let Some(v) = self.vcs.get(i) else { continue };
            if v.lossless() && v.draining == 0 && now >= v.reported_at.saturating_add(self.max_spacing) {
                overdue = Some(i);
                break;
            }
            if changed.is_none() && v.needs_report() {
                changed = Some(i);
            }
        }
        let pick = overdue.or(changed)?;
        let v = self.vcs.get_mut(pick)?;
        v.reported = v.freed;
        v.reported_at = now;
        v.report_due = false;
        let update = CfUpdate { vc: Vc::new(pick as u8).ok()?, freed: v.freed };
        self.last_cf_at = Some(now);
        self.cursor = ((pick + 1) % MAX_VCS) as u8;
        self.stats.cf_updates_tx += 1;
        Some(update)
    }

    /// When [`CbfcReceiver::poll_cf_update`] next has something to send.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let gate = self.last_cf_at.map_or(Instant::ZERO, |t| t.saturating_add(self.min_spacing));
        let mut earliest: Option<Instant> = None;
        for v in self.vcs.iter().filter(|v| v.lossless() && v.draining == 0) {
            let due = if v.needs_report() { gate } else { v.reported_at.saturating_add(self.max_spacing).max(gate) };
            earliest = Some(earliest.map_or(due, |e| e.min(due)));
        }
        earliest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> (CbfcReceiver, Vc) {
        let mut r = CbfcReceiver::new(CbfcReceiverConfig::default()).unwrap();
        let vc = Vc::new(5).unwrap();
        r.set_vc_mode(Instant::ZERO, vc, VcMode::Lossless { credit_limit: Some(8) }).unwrap();
        (r, vc)
    }

    #[test]
    fn accounts_frames_and_refuses_overrun() {
        let (mut r, vc) = rx();
        assert_eq!(r.on_received(vc, 512).unwrap(), 4);
        assert_eq!(r.on_received(vc, 512).unwrap(), 4);
        assert_eq!(r.on_received(vc, 1), Err(Error::CreditOverrun { vc: 5 }));
        assert_eq!(r.occupancy(vc), 8);
        r.on_frame_freed(vc, 512).unwrap();
        assert_eq!(r.occupancy(vc), 4);
        assert!(matches!(r.on_freed(vc, 5), Err(Error::CounterMismatch { .. })));
        assert_eq!(r.freed(vc).value(), 4);
    }

    #[test]
    fn cf_updates_respect_min_and_max_spacing() {
        let (mut r, vc) = rx();
        let t = |ns| Instant::from_nanos(ns);
        // A VC just made lossless reports its R_CF = 0 at once: the sender may start.
        assert_eq!(r.poll_cf_update(t(0)), Some(CfUpdate { vc, freed: CreditCounter::FIRST }));
        // Nothing freed, nothing to report until the max spacing (262144 B at 800G = 2622 ns).
        assert_eq!(r.poll_cf_update(t(10)), None);
        assert_eq!(r.poll_timeout(), Some(t(2622)));
        let refresh = r.poll_cf_update(t(2622)).unwrap();
        assert_eq!(refresh, CfUpdate { vc, freed: CreditCounter::FIRST });
        // A change is reported once min spacing (6400 B = 64 ns) has passed.
        r.on_received(vc, 100).unwrap();
        r.on_freed(vc, 1).unwrap();
        assert_eq!(r.poll_timeout(), Some(t(2686)));
        assert_eq!(r.poll_cf_update(t(2650)), None);
        let u = r.poll_cf_update(t(2686)).unwrap();
        assert_eq!(u.freed.value(), 1);
        assert_eq!(r.poll_cf_update(t(2686)), None);
        assert_eq!(r.stats().cf_updates_tx, 3);
    }

    fn update(entries: &[(u8, u32)]) -> CcUpdate {
        let mut msg = CcUpdate::new(0).unwrap();
        for &(vc, c) in entries {
            msg.set(Vc::new(vc).unwrap(), CreditCounter::new(c).unwrap()).unwrap();
        }
        msg
    }

    /// VC 5's CF_Update is lost while VC 6 frees a frame every `cf_min_spacing`: VC 5 is still
    /// refreshed within `cf_max_spacing` (before, a VC with a change always went first, and VC
    /// 5's sender waited for good).
    #[test]
    fn a_lost_update_is_repaired_while_another_vc_is_busy() {
        let (mut r, five) = rx();
        let six = Vc::new(6).unwrap();
        r.set_vc_mode(Instant::ZERO, six, VcMode::Lossless { credit_limit: Some(8) }).unwrap();
        // Both VCs' first reports (R_CF = 0), a min spacing apart.
        let mut now = Instant::ZERO;
        for vc in [five, six] {
            assert_eq!(r.poll_cf_update(now).map(|u| u.vc), Some(vc));
            now = now.saturating_add(Duration::from_nanos(64));
        }
        r.on_received(five, 100).unwrap();
        r.on_freed(five, 1).unwrap();
        assert_eq!(r.poll_cf_update(now).map(|u| u.vc), Some(five), "sent, and lost");
        let lost_at = now;
        let mut refreshed = None;
        for _ in 0..1000 {
            r.on_received(six, 100).unwrap();
            r.on_freed(six, 1).unwrap();
            now = r.poll_timeout().unwrap().max(now);
            if let Some(u) = r.poll_cf_update(now).filter(|u| u.vc == five) {
                refreshed = Some((now, u.freed.value()));
                break;
            }
        }
        let (at, freed) = refreshed.expect("VC 5 refreshed");
        assert_eq!(freed, 1);
        // 262144 B at 800G, 2622 ns, and one 64 ns spacing.
        assert!(at.saturating_duration_since(lost_at).as_nanos() <= 2622 + 64, "{at:?}");
    }

    #[test]
    fn cc_update_recovers_lost_frames() {
        let (mut r, vc) = rx();
        r.on_received(vc, 128).unwrap();
        // The sender consumed 5 credits: 4 were lost on the link.
        let out = r.handle_cc_update(&update(&[(5, 5)]));
        assert_eq!(out.applied, 1 << 5);
        assert_eq!(out.credits_recovered, 4);
        assert_eq!(out.ignored, 0xFFFF & !(1 << 5));
        assert!(out.is_ok());
        assert_eq!(r.consumed(vc).value(), 5);
        assert_eq!(r.freed(vc).value(), 4);
        assert_eq!(r.occupancy(vc), 1);
        assert_eq!(r.stats().credits_recovered, 4);
        // A stale update (behind R_CC) is refused and changes nothing.
        let out = r.handle_cc_update(&update(&[(5, 2)]));
        assert_eq!(out.rejected, 1 << 5);
        assert!(matches!(out.first_error, Some((v, Error::CounterMismatch { .. })) if v == vc));
        assert_eq!(r.consumed(vc).value(), 5);
        // So with the largest VC limit, where the counter behind reads as a jump within it.
        let big = Vc::new(7).unwrap();
        r.set_vc_mode(Instant::ZERO, big, VcMode::Lossless { credit_limit: Some(super::super::CREDIT_LIMIT_MAX) })
            .unwrap();
        r.on_received(big, 128 * 3).unwrap();
        let out = r.handle_cc_update(&update(&[(7, 1)]));
        assert_eq!((out.rejected & 1 << 7, out.credits_recovered), (1 << 7, 0));
        assert_eq!(r.consumed(big).value(), 3);
    }

    /// A VC limit of 0 would admit no frame: refused, as is one beyond the counter.
    #[test]
    fn a_zero_credit_limit_is_refused() {
        let (mut r, vc) = rx();
        for limit in [0, super::super::CREDIT_LIMIT_MAX + 1] {
            let mode = VcMode::Lossless { credit_limit: Some(limit) };
            assert_eq!(r.set_vc_mode(Instant::ZERO, vc, mode), Err(Error::BadConfig { field: "vc credit_limit" }));
        }
    }

    #[test]
    fn one_bad_cc_update_entry_spares_the_others() {
        let (mut r, vc) = rx();
        let other = Vc::new(7).unwrap();
        r.set_vc_mode(Instant::ZERO, other, VcMode::Lossless { credit_limit: Some(8) }).unwrap();
        // VC 5 jumps past its 8-credit buffer (impossible); VC 7 lost 3 credits; VC 6 is
        // best-effort here but the sender counts it: a configuration mismatch, reported too.
        let out = r.handle_cc_update(&update(&[(5, 9), (6, 1), (7, 3)]));
        assert_eq!(out.applied, 1 << 7);
        assert_eq!(out.rejected, (1 << 5) | (1 << 6));
        assert!(matches!(out.first_error, Some((v, Error::CounterMismatch { distance: 9, limit: 8, .. })) if v == vc));
        assert_eq!(r.consumed(vc).value(), 0);
        assert_eq!(r.consumed(other).value(), 3);
        assert_eq!(r.stats().cc_entries_rejected, 2);
    }

    #[test]
    fn resync_drains_the_old_frames_then_restarts_the_counters() {
        let (mut r, vc) = rx();
        let t = Instant::ZERO;
        r.poll_cf_update(t).unwrap();
        r.on_received(vc, 512).unwrap();
        r.on_received(vc, 256).unwrap();
        r.on_frame_freed(vc, 512).unwrap();
        // The peer restarted with 2 credits still buffered.
        r.resync_vc(t, vc);
        assert!(r.is_draining(vc));
        assert_eq!((r.consumed(vc).value(), r.freed(vc).value(), r.occupancy(vc)), (0, 0, 2));
        // The buffer still counts against the VC's 8 credits.
        assert_eq!(r.on_received(vc, 7 * 128), Err(Error::CreditOverrun { vc: 5 }));
        // The old sender's counters are ignored; nothing is reported while draining.
        let out = r.handle_cc_update(&update(&[(5, 700)]));
        assert_eq!(out.ignored & (1 << 5), 1 << 5);
        assert_eq!(r.poll_cf_update(Instant::from_nanos(1_000_000)), None);
        assert_eq!(r.poll_timeout(), None);
        // Drained: R_CF = 0 is reported, and the VC counts afresh.
        r.on_frame_freed(vc, 256).unwrap();
        assert!(!r.is_draining(vc));
        let later = Instant::from_nanos(1_000_000);
        assert_eq!(r.poll_cf_update(later), Some(CfUpdate { vc, freed: CreditCounter::FIRST }));
        assert_eq!(r.on_received(vc, 8 * 128), Ok(8));
        assert_eq!(r.occupancy_watermark(vc), 8);
        assert_eq!(r.stats().vc_reinits, 2);
    }

    #[test]
    fn a_mode_change_keeps_old_frames_accounted_until_drained() {
        let (mut r, vc) = rx();
        r.on_received(vc, 128).unwrap();
        r.set_vc_mode(Instant::ZERO, vc, VcMode::BestEffort).unwrap();
        assert_eq!(r.occupancy(vc), 1);
        assert_eq!(r.on_frame_freed(vc, 128), Ok(()));
        assert_eq!(r.occupancy(vc), 0);
        assert_eq!(r.on_freed(vc, 1), Err(Error::InvalidState { state: "best-effort VC", input: "on_freed" }));
        assert_eq!(r.on_received(vc, 9000), Ok(0));
    }

    #[test]
    fn spacing_configuration_is_validated() {
        let bad_min = CbfcReceiverConfig { cf_min_spacing: 799, ..Default::default() };
        assert!(CbfcReceiver::new(bad_min).is_err());
        let bad_step = CbfcReceiverConfig { cf_max_spacing: 20_000, ..Default::default() };
        assert!(CbfcReceiver::new(bad_step).is_err());
        let too_big = CbfcReceiverConfig { cf_max_spacing: 2 * 1024 * 1024, ..Default::default() };
        assert!(CbfcReceiver::new(too_big).is_err());
    }
}
