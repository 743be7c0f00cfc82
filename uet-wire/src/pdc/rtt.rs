//! The round-trip time estimate of one PDC direction, and the retransmission timeout it gives.
//!
//! UE 1.0 names only `RTO_Init_Timer`, the first retransmission timeout (§3.5.12, Table 3-28 as
//! XDP2 `config.h` transcribes it: 1 ms, 0 to 8 s). How the timeout adapts after that is
//! *project-defined*, and follows TCP's (RFC 6298 §2, the estimator smoltcp and quinn-proto
//! users know):
//!
//! * One packet per round trip is timed: the first new packet sent while none is timed. When an
//!   ACK (cumulative or selective) covers it, `now − sent` is a sample. A timed packet that is
//!   resent is no longer timed (Karn's rule: an ACK of a resent packet cannot tell which copy it
//!   answers). The sample includes the target's ACK coalescing delay, as the timeout must.
//! * The first sample sets `SRTT = R`, `RTTVAR = R/2`; each later one
//!   `RTTVAR = ¾·RTTVAR + ¼·|SRTT − R|`, `SRTT = ⅞·SRTT + ⅛·R`.
//! * `RTO = SRTT + 4·RTTVAR`, at least [`PdcConfig::rto_min`] and at most
//!   [`PdcConfig::rto_max`]; before the first sample it is `RTO_Init_Timer`
//!   ([`PdcConfig::rto`]). Each timeout of the same packet doubles it (the backoff, capped by
//!   `rto_max`).
//!
//! Times are kept in nanoseconds as `u32` (up to 4.29 s; a longer round trip saturates), so the
//! estimate costs a PDC 24 bytes.

use super::config::PdcConfig;
use linklayer::{Duration, Instant};

/// The round-trip time estimate of one send direction of a PDC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RttEstimator {
    /// When the timed packet went out; [`Instant::MAX`] when no packet is timed.
    timed_at: Instant,
    /// The timed packet's PSN.
    timed_psn: u32,
    /// Smoothed RTT in nanoseconds; 0 before the first sample.
    srtt: u32,
    /// RTT variation in nanoseconds.
    rttvar: u32,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator::new()
    }
}

impl RttEstimator {
    /// No sample yet, no packet timed.
    pub const fn new() -> Self {
        RttEstimator { timed_at: Instant::MAX, timed_psn: 0, srtt: 0, rttvar: 0 }
    }

    /// Every byte zero (timing a packet sent at time 0): a placeholder for storage built in
    /// `const`, not an estimator in use.
    pub(crate) const ZERO: Self = RttEstimator { timed_at: Instant::ZERO, timed_psn: 0, srtt: 0, rttvar: 0 };

    /// No packet timed, with the estimate [`RttEstimator::learned`] gave.
    pub(crate) const fn resume(srtt: u32, rttvar: u32) -> Self {
        RttEstimator { srtt, rttvar, ..RttEstimator::new() }
    }

    /// The estimate in nanoseconds: smoothed RTT (0 before the first sample) and variation.
    pub(crate) const fn learned(&self) -> (u32, u32) {
        (self.srtt, self.rttvar)
    }

    /// Whether a packet is timed.
    pub(crate) fn is_timing(&self) -> bool {
        self.timed_at != Instant::MAX
    }

    /// The smoothed round-trip time, once a sample was taken.
    pub const fn smoothed(&self) -> Option<Duration> {
        if self.srtt == 0 { None } else { Some(Duration::from_nanos(self.srtt as u64)) }
    }

    /// The round-trip time variation (zero before the first sample).
    pub const fn variation(&self) -> Duration {
        Duration::from_nanos(self.rttvar as u64)
    }

    /// A new packet `psn` went out at `now`: it is timed unless another one is.
    #[inline(always)]
    pub fn on_send(&mut self, psn: u32, now: Instant) {
        if self.timed_at == Instant::MAX {
            self.timed_at = now;
            self.timed_psn = psn;
        }
    }

    /// Packet `psn` is resent: if it was the timed one, it no longer is (Karn's rule).
    #[inline]
    pub fn on_resend(&mut self, psn: u32) {
        if psn == self.timed_psn {
            self.timed_at = Instant::MAX;
        }
    }

    /// Every timed packet is forgotten (a retransmission timeout resends them all, or the
    /// window moved).
    pub fn forget_timed(&mut self) {
        self.timed_at = Instant::MAX;
    }

    /// An ACK arrived at `now`; `acked(psn)` says whether it (or an earlier one) acknowledged
    /// `psn`. Takes a sample when the timed packet is acknowledged. Returns the sample.
    #[inline]
    pub fn on_ack(&mut self, now: Instant, acked: impl FnOnce(u32) -> bool) -> Option<Duration> {
        if self.timed_at == Instant::MAX || !acked(self.timed_psn) {
            return None;
        }
        let sample = now.saturating_duration_since(self.timed_at);
        self.timed_at = Instant::MAX;
        self.sample(sample);
        Some(sample)
    }

    /// Folds a round-trip sample into the estimate (RFC 6298 §2.2–2.3).
    pub fn sample(&mut self, rtt: Duration) {
        // A sample of 0 ns (a clock that did not move) counts as 1 ns, so the estimate is taken.
        let r = u32::try_from(rtt.as_nanos()).unwrap_or(u32::MAX).max(1);
        if self.srtt == 0 {
            self.srtt = r;
            self.rttvar = r / 2;
            return;
        }
        let diff = self.srtt.abs_diff(r);
        self.rttvar = ((u64::from(self.rttvar) * 3 + u64::from(diff)) / 4) as u32;
        self.srtt = ((u64::from(self.srtt) * 7 + u64::from(r)) / 8).max(1) as u32;
    }

    /// The retransmission timeout before any backoff: `RTO_Init_Timer` until the first sample,
    /// then `SRTT + 4·RTTVAR` within `[rto_min, rto_max]`.
    pub const fn rto(&self, cfg: &PdcConfig) -> Duration {
        if self.srtt == 0 {
            return cfg.rto;
        }
        let est = Duration::from_nanos(self.srtt as u64 + 4 * self.rttvar as u64);
        let lo = cfg.rto_min.as_nanos();
        let hi = cfg.rto_max.as_nanos();
        let n = est.as_nanos();
        let n = if n < lo { lo } else { n };
        Duration::from_nanos(if n > hi && hi >= lo { hi } else { n })
    }

    /// The timeout after `retries` timeouts of the same packet: [`RttEstimator::rto`] doubled
    /// `retries` times, at most `rto_max` (and never below the undoubled timeout).
    pub const fn backed_off(&self, cfg: &PdcConfig, retries: u8) -> Duration {
        cfg.backoff(self.rto(cfg), retries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PdcConfig {
        PdcConfig {
            rto: Duration::from_millis(5),
            rto_min: Duration::from_micros(200),
            rto_max: Duration::from_millis(100),
            ..PdcConfig::default()
        }
    }

    #[test]
    fn first_sample_then_smoothing() {
        let cfg = cfg();
        let mut e = RttEstimator::new();
        assert_eq!(e.rto(&cfg), Duration::from_millis(5));
        assert_eq!(e.smoothed(), None);
        e.on_send(10, Instant::from_nanos(1_000));
        // A later packet is not timed while 10 is.
        e.on_send(11, Instant::from_nanos(2_000));
        assert_eq!(e.on_ack(Instant::from_nanos(50_000), |p| p == 11), None);
        assert_eq!(e.on_ack(Instant::from_nanos(101_000), |p| p <= 11), Some(Duration::from_micros(100)));
        assert_eq!(e.smoothed(), Some(Duration::from_micros(100)));
        assert_eq!(e.variation(), Duration::from_micros(50));
        // 100 + 4·50 = 300 µs.
        assert_eq!(e.rto(&cfg), Duration::from_micros(300));
        // RFC 6298: RTTVAR = ¾·50 + ¼·|100 − 200| = 62.5; SRTT = ⅞·100 + ⅛·200 = 112.5.
        e.sample(Duration::from_micros(200));
        assert_eq!(e.smoothed(), Some(Duration::from_nanos(112_500)));
        assert_eq!(e.variation(), Duration::from_nanos(62_500));
        assert_eq!(e.rto(&cfg), Duration::from_nanos(112_500 + 250_000));
    }

    #[test]
    fn karn_rule_and_bounds() {
        let cfg = cfg();
        let mut e = RttEstimator::new();
        e.on_send(1, Instant::from_nanos(0));
        e.on_resend(1);
        assert_eq!(e.on_ack(Instant::from_nanos(10_000), |_| true), None);
        assert_eq!(e.smoothed(), None);
        // Tiny RTTs: the timeout stays at rto_min; huge ones at rto_max; both doubled by backoff
        // up to rto_max.
        e.sample(Duration::from_nanos(0));
        assert_eq!(e.smoothed(), Some(Duration::from_nanos(1)));
        assert_eq!(e.rto(&cfg), Duration::from_micros(200));
        assert_eq!(e.backed_off(&cfg, 3), Duration::from_micros(1600));
        assert_eq!(e.backed_off(&cfg, 200), Duration::from_millis(100));
        e.sample(Duration::from_millis(60_000));
        assert_eq!(e.rto(&cfg), Duration::from_millis(100));
        // The timer restarts timing with the next packet sent.
        e.on_send(7, Instant::from_nanos(5));
        e.forget_timed();
        assert_eq!(e.on_ack(Instant::from_nanos(9), |_| true), None);
    }
}
