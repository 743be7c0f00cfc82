//! The CBFC receiver: buffer accounting, CF_Update scheduling, CC_Update reconciliation.

use super::{CreditCounter, CreditRule, MAX_VCS, Vc, VcMode, check_limit};
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
    /// CC_Updates applied.
    pub cc_updates_rx: u64,
    /// CC_Updates rejected as stale or impossible.
    pub cc_updates_rejected: u64,
    /// Credits recovered by CC_Updates (credits of frames lost on the link).
    pub credits_recovered: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ReceiverVc {
    mode: VcMode,
    /// `R_CC`: credits consumed.
    consumed: CreditCounter,
    /// `R_CF`: credits freed.
    freed: CreditCounter,
    /// `R_CF` as last reported.
    reported: CreditCounter,
    /// When `R_CF` was last reported.
    reported_at: Instant,
}

impl ReceiverVc {
    fn occupancy(&self) -> u32 {
        self.freed.distance_to(self.consumed) as u32
    }

    fn lossless(&self) -> bool {
        matches!(self.mode, VcMode::Lossless { .. })
    }
}

/// The receiving end of one port's CBFC.
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
    /// A receiver with every VC best-effort.
    pub fn new(config: CbfcReceiverConfig) -> Result<Self, Error> {
        if config.cf_min_spacing < 800 {
            return Err(Error::BadConfig { field: "cf_min_spacing" });
        }
        let max = config.cf_max_spacing;
        if !(16 * 1024..=1024 * 1024).contains(&max) || max % (16 * 1024) != 0 {
            return Err(Error::BadConfig { field: "cf_max_spacing" });
        }
        Ok(CbfcReceiver {
            config,
            min_spacing: config.link_rate.time_for_bytes(u64::from(config.cf_min_spacing)),
            max_spacing: config.link_rate.time_for_bytes(u64::from(max)),
            vcs: [ReceiverVc::default(); MAX_VCS],
            last_cf_at: None,
            cursor: 0,
            stats: ReceiverStats::default(),
        })
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

    /// Sets how `vc` is treated. A lossless VC's `credit_limit` here is the buffer the receiver
    /// dedicates to it (frames beyond it are refused as overruns); `None` disables that check.
    /// Making a VC lossless clears its counters; a VC holding frames cannot be reconfigured.
    pub fn set_vc_mode(&mut self, now: Instant, vc: Vc, mode: VcMode) -> Result<(), Error> {
        if let VcMode::Lossless { credit_limit: Some(limit) } = mode {
            check_limit(limit, "vc credit_limit")?;
        }
        if self.vc(vc).occupancy() != 0 {
            return Err(Error::InvalidState { state: "frames buffered", input: "set_vc_mode" });
        }
        if let Some(v) = self.vc_mut(vc) {
            *v = ReceiverVc { mode, reported_at: now, ..ReceiverVc::default() };
        }
        Ok(())
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

    /// Accounts a frame of `len` bytes stored in `vc`'s buffer (`R_CC += pkt_credits`) and returns
    /// its credits (0 on a best-effort VC). If the frame would exceed the VC's buffer the sender
    /// has overrun its credit: the frame is refused ([`Error::CreditOverrun`], nothing counted) and
    /// must be dropped; the sender's next CC_Update recovers its credits.
    pub fn on_received(&mut self, vc: Vc, len: usize) -> Result<u32, Error> {
        let credits = self.config.rule.credits_for(len)?;
        let v = *self.vc(vc);
        let VcMode::Lossless { credit_limit } = v.mode else { return Ok(0) };
        if let Some(limit) = credit_limit {
            if u64::from(v.occupancy()) + u64::from(credits) > u64::from(limit) {
                self.stats.overruns += 1;
                return Err(Error::CreditOverrun { vc: vc.index() });
            }
        }
        if let Some(v) = self.vc_mut(vc) {
            v.consumed = v.consumed.wrapping_add(u64::from(credits));
        }
        self.stats.frames_received += 1;
        Ok(credits)
    }

    /// Records that `credits` of `vc`'s buffer were drained (`R_CF += credits`). Freeing more than
    /// the buffer holds is [`Error::CounterMismatch`] and changes nothing.
    pub fn on_freed(&mut self, vc: Vc, credits: u32) -> Result<(), Error> {
        let v = *self.vc(vc);
        if !v.lossless() {
            return if credits == 0 {
                Ok(())
            } else {
                Err(Error::InvalidState { state: "best-effort VC", input: "on_freed" })
            };
        }
        let held = v.occupancy();
        if credits > held {
            return Err(Error::CounterMismatch { field: "R_CF", distance: credits, limit: held });
        }
        if let Some(v) = self.vc_mut(vc) {
            v.freed = v.freed.wrapping_add(u64::from(credits));
        }
        Ok(())
    }

    /// [`CbfcReceiver::on_freed`] for a drained frame of `len` bytes.
    pub fn on_frame_freed(&mut self, vc: Vc, len: usize) -> Result<(), Error> {
        let credits = if self.vc(vc).lossless() { self.config.rule.credits_for(len)? } else { 0 };
        self.on_freed(vc, credits)
    }

    /// Applies a CC_Update: for each VC it names, `R_CF += S_CC - R_CC; R_CC = S_CC`. The message
    /// is checked whole before anything changes: a counter behind `R_CC` (stale), an entry for a
    /// VC that is not lossless, or a jump larger than half the counter space is rejected.
    pub fn handle_cc_update(&mut self, msg: &CcUpdate) -> Result<(), Error> {
        for (vc, consumed) in msg.entries() {
            let v = self.vc(vc);
            if !v.lossless() {
                self.stats.cc_updates_rejected += 1;
                return Err(Error::InvalidState { state: "best-effort VC", input: "CC_Update" });
            }
            let lost = v.consumed.distance_to(consumed);
            let limit = match v.mode {
                VcMode::Lossless { credit_limit: Some(l) } => u64::from(l),
                _ => CreditCounter::MODULUS / 2 - 1,
            };
            if lost > limit {
                self.stats.cc_updates_rejected += 1;
                return Err(Error::CounterMismatch { field: "S_CC", distance: lost as u32, limit: limit as u32 });
            }
        }
        for (vc, consumed) in msg.entries() {
            if let Some(v) = self.vc_mut(vc) {
                let lost = v.consumed.distance_to(consumed);
                v.freed = v.freed.wrapping_add(lost);
                v.consumed = consumed;
                self.stats.credits_recovered += lost;
            }
        }
        self.stats.cc_updates_rx += 1;
        Ok(())
    }

    /// The next CF_Update to send at `now`, if any: a VC whose `R_CF` changed since its last report
    /// (round robin), once `cf_min_spacing` has passed since the port's last CF_Update; otherwise a
    /// lossless VC not reported for `cf_max_spacing` (repairs a lost update).
    pub fn poll_cf_update(&mut self, now: Instant) -> Option<CfUpdate> {
        if let Some(last) = self.last_cf_at {
            if now < last.saturating_add(self.min_spacing) {
                return None;
            }
        }
        let start = usize::from(self.cursor);
        let changed = (0..MAX_VCS)
            .map(|k| (start + k) % MAX_VCS)
            .find(|&i| self.vcs.get(i).is_some_and(|v| v.lossless() && v.freed != v.reported));
        let pick = changed.or_else(|| {
            (0..MAX_VCS).map(|k| (start + k) % MAX_VCS).find(|&i| {
                self.vcs.get(i).is_some_and(|v| v.lossless() && now >= v.reported_at.saturating_add(self.max_spacing))
            })
        })?;
        let v = self.vcs.get_mut(pick)?;
        v.reported = v.freed;
        v.reported_at = now;
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
        for v in self.vcs.iter().filter(|v| v.lossless()) {
            let due =
                if v.freed != v.reported { gate } else { v.reported_at.saturating_add(self.max_spacing).max(gate) };
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
        assert_eq!(r.stats().cf_updates_tx, 2);
    }

    #[test]
    fn cc_update_recovers_lost_frames() {
        let (mut r, vc) = rx();
        r.on_received(vc, 128).unwrap();
        // The sender consumed 5 credits: 4 were lost on the link.
        let mut msg = CcUpdate::new(0).unwrap();
        msg.set(vc, Some(CreditCounter::new(5).unwrap())).unwrap();
        r.handle_cc_update(&msg).unwrap();
        assert_eq!(r.consumed(vc).value(), 5);
        assert_eq!(r.freed(vc).value(), 4);
        assert_eq!(r.occupancy(vc), 1);
        assert_eq!(r.stats().credits_recovered, 4);
        // A stale update (behind R_CC) is refused and changes nothing.
        msg.set(vc, Some(CreditCounter::new(2).unwrap())).unwrap();
        assert!(r.handle_cc_update(&msg).is_err());
        assert_eq!(r.consumed(vc).value(), 5);
    }

    #[test]
    fn cc_update_is_checked_whole() {
        let (mut r, vc) = rx();
        let mut msg = CcUpdate::new(0).unwrap();
        msg.set(vc, Some(CreditCounter::new(3).unwrap())).unwrap();
        msg.set(Vc::new(6).unwrap(), Some(CreditCounter::new(3).unwrap())).unwrap();
        assert!(r.handle_cc_update(&msg).is_err());
        assert_eq!(r.consumed(vc).value(), 0);
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
