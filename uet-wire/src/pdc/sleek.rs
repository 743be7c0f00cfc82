//! SLEEK: loss recovery for packets sprayed over many paths, as the UEC simulator's sender runs
//! it (`ultraethernet/uet-htsim` `40ccb05`, `htsim/sim/uec.cpp`: `runSleek` 1433–1515, the
//! probe timer and probe ACK 1065–1093, `sendProbe` 2154–2170). Spraying reorders packets by the spread
//! of the path delays, so a missing PSN is taken for lost only once the out-of-order count says a
//! window's worth overtook it, or once a probe finds the network empty:
//!
//! * **Out-of-order count.** After an ACK, when the receiver's out-of-order count (the ACK_CC's
//!   `ooo_count`; without an ACK_CC, the PSNs this window knows arrived past the cumulative ACK)
//!   reaches [`SleekLimits::threshold`], `max(min(1.5·cwnd, maxwnd), 5 packets)`
//!   (`loss_retx_factor` 1.5, `min_retx_config` 5), loss recovery starts: it lasts until the
//!   cumulative ACK passes the newest PSN sent when it began, and after each ACK every PSN from
//!   the cumulative ACK on, at most a window's worth ([`SleekLimits::window`]) and not beyond that
//!   newest PSN, that is neither acknowledged nor resent yet is marked lost. Recovery starts only
//!   while nothing waits to be resent (the simulator's empty retransmit queue).
//! * **Probes.** The PDC's tail-loss timer sends a PROBE control packet (control type 6, its
//!   payload the SACK base it asks for: the oldest unacknowledged PSN; Wireshark, uet-ref-prov and
//!   XDP2 lay it out alike) whose opaque value counts the probes; the target answers with an ACK
//!   with P set that echoes it where ACK_PSN's offset would be, and
//!   [`AckOutcome::probe_rtt`](super::AckOutcome) reports the round trip of the latest probe,
//!   once. A probe answered with a queueing delay below the congestion controller's target says
//!   the network is empty: what is still missing was lost, and recovery starts again from the
//!   cumulative ACK, resends included ([`Initiator::recover`](super::Initiator::recover)). The
//!   caller judges the delay: the target delay and base round trip belong to its congestion
//!   controller.
//!
//! *Project-defined*, here only:
//!
//! * SLEEK runs beside the PDC's own detection ([`PdcConfig::reorder_window`]) and RTO, not
//!   instead of them. The simulator's RTO in recovery leaves a packet not yet resent to SLEEK and
//!   lets SLEEK resend one already resent; here the RTO resends every unacknowledged packet, as
//!   without SLEEK.
//! * A PSN resent for any reason (NACK, reorder window, RTO, SLEEK) is not marked again until a
//!   probe starts recovery anew; the simulator skips only those below its highest SLEEK resend.
//!   Starting anew also lets the reorder window mark a PSN whose resend is still on its way.
//! * The threshold is at most three quarters of the PDC's window ([`Initiator::MP_RANGE`]): the
//!   receiver's count cannot pass the PSNs a PDC has out, and the simulator's window is
//!   unbounded.
//! * The probe timer: after every ACK it restarts at [`SleekLimits::probe_after`], which the
//!   congestion controller gives (the endpoint gives the simulator's 3 base round trips, or the
//!   base round trip plus the target delay once the PDC has nothing new to send); after a new
//!   packet and after a probe it restarts at the PDC's [`PdcConfig::tail_loss_time`] (the
//!   simulator arms none at a send and retries a probe after 5 base round trips,
//!   `probe_retry_time`). At most [`PdcConfig::max_tail_loss_retx`] probes go without progress,
//!   and none while resends wait to go.
//! * Only the answer to the latest probe is timed, once; the simulator takes its average delay for
//!   any other probe answer.
//! * The answer to a probe echoes no ECN mark (the PDC's control handler is not told of one; the
//!   simulator echoes it), and so feeds no path or window: it only decides recovery.
//! * A NACK UNEXP_EVENT while a PROBE waits for its answer is the answer of a target that does not
//!   take PROBE (the reference provider NACKs control types it does not handle so): the PDC goes
//!   on, and probes with ACK_REQ for the newest PSN from then on.
//! * The out-of-order count is RUD's: a ROD target delivers in order and reports none, so on a ROD
//!   PDC only probes start recovery. SLEEK never runs while the CLOSE is outstanding.
//!
//! [`PdcConfig::reorder_window`]: super::PdcConfig::reorder_window
//! [`PdcConfig::tail_loss_time`]: super::PdcConfig::tail_loss_time
//! [`PdcConfig::max_tail_loss_retx`]: super::PdcConfig::max_tail_loss_retx
//! [`Initiator::MP_RANGE`]: super::Initiator::MP_RANGE

use super::window::{TxWindow, psn_after};
use crate::pds::{Ack, AckCc, AckExtension, CcState};
use linklayer::Instant;

/// `loss_retx_factor`: the out-of-order count that starts recovery, in windows (1.5).
const LOSS_RETX_FACTOR_HALVES: u64 = 3;
/// `min_retx_config`: the smallest out-of-order count that starts recovery, in packets.
const MIN_RETX_PACKETS: u32 = 5;

/// SLEEK is on.
const ON: u8 = 1;
/// Loss recovery runs.
const RECOVERING: u8 = 2;
/// The latest probe is not answered yet.
const PROBING: u8 = 4;
/// The target refused a PROBE: probes go as ACK_REQ.
const NO_PROBE: u8 = 8;

/// What SLEEK takes from the congestion controller after each ACK, in packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SleekLimits {
    /// The out-of-order count that starts loss recovery.
    pub threshold: u32,
    /// The most PSNs past the cumulative ACK that recovery marks lost.
    pub window: u32,
    /// How long after this ACK a PDC with packets outstanding sends a probe (the simulator: 3
    /// base round trips, `probe_first_trial_time`, or the base round trip plus the target delay
    /// once nothing waits to be sent).
    pub probe_after: linklayer::Duration,
}

impl SleekLimits {
    /// The simulator's limits for a congestion window of `cwnd` bytes, at most `max_cwnd`, of
    /// packets of `mtu` bytes: a threshold of `max(min(1.5·cwnd, max_cwnd), 5 packets)` and a
    /// window of `cwnd` (at least one packet); probes after `probe_after`.
    pub fn from_window(cwnd: u64, max_cwnd: u64, mtu: u32, probe_after: linklayer::Duration) -> Self {
        let mtu = u64::from(mtu.max(1));
        let scaled = cwnd.saturating_mul(LOSS_RETX_FACTOR_HALVES) / 2;
        let packets = |bytes: u64| u32::try_from(bytes / mtu).unwrap_or(u32::MAX);
        SleekLimits {
            threshold: packets(scaled.min(max_cwnd)).max(MIN_RETX_PACKETS),
            window: packets(cwnd).max(1),
            probe_after,
        }
    }
}

/// The out-of-order count an ACK carries: the ACK_CC's `ooo_count` (NSCC or credit state).
pub(crate) fn ooo_count(ack: &Ack) -> Option<u32> {
    match ack.ext {
        AckExtension::Cc(AckCc {
            state: CcState::Nscc { ooo_count, .. } | CcState::Credit { ooo_count, .. }, ..
        }) => Some(u32::from(ooo_count)),
        _ => None,
    }
}

/// One initiator's SLEEK state (off until [`Initiator::use_sleek`](super::Initiator::use_sleek)),
/// 12 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Sleek {
    /// `ON`, `RECOVERING`, `PROBING`, `NO_PROBE`.
    flags: u8,
    /// The latest probe's opaque value.
    probe_seq: u16,
    /// While recovering: the newest PSN sent when recovery began, plus one.
    recovery_end: u32,
    /// When the latest probe went, in nanoseconds modulo 2^32: a probe's round trip is the
    /// wrapping difference, exact for any round trip under 4.2 s.
    probe_sent: u32,
}

impl Sleek {
    /// Off (every byte zero).
    pub(crate) const ZERO: Self = Sleek { flags: 0, probe_seq: 0, recovery_end: 0, probe_sent: 0 };

    /// Turns SLEEK on.
    pub(crate) fn enable(&mut self) {
        self.flags |= ON;
    }

    /// Whether SLEEK is on.
    pub(crate) const fn on(&self) -> bool {
        self.flags & ON != 0
    }

    /// Whether probes go as PROBE (SLEEK on, and the target did not refuse one).
    pub(crate) const fn probes(&self) -> bool {
        self.flags & (ON | NO_PROBE) == ON
    }

    /// Whether a PROBE waits for its answer (a NACK UNEXP_EVENT now is its refusal).
    pub(crate) const fn awaits_probe_answer(&self) -> bool {
        self.probes() && self.flags & PROBING != 0
    }

    /// The target refused a PROBE: later probes go as ACK_REQ.
    pub(crate) fn refuse_probes(&mut self) {
        self.flags = (self.flags | NO_PROBE) & !PROBING;
    }

    /// Whether loss recovery runs.
    pub(crate) const fn recovering(&self) -> bool {
        self.flags & RECOVERING != 0
    }

    /// A probe goes now: its opaque value.
    pub(crate) fn probe_sent(&mut self, now: Instant) -> u16 {
        self.probe_seq = self.probe_seq.wrapping_add(1);
        // Modulo 2^32 on purpose (see the field).
        self.probe_sent = now.as_nanos() as u32;
        self.flags |= PROBING;
        self.probe_seq
    }

    /// The round trip of the probe an ACK with P set and `opaque` answers, if it answers the
    /// latest probe and is the first to.
    pub(crate) fn probe_answered(&mut self, now: Instant, opaque: u16) -> Option<linklayer::Duration> {
        if self.flags & (ON | PROBING) != ON | PROBING || opaque != self.probe_seq {
            return None;
        }
        self.flags &= !PROBING;
        let rtt = (now.as_nanos() as u32).wrapping_sub(self.probe_sent);
        Some(linklayer::Duration::from_nanos(rtt.into()))
    }

    /// A probe found the network empty: recovery starts again from the cumulative ACK, packets
    /// resent before included.
    pub(crate) fn recover<const W: usize>(&mut self, tx: &mut TxWindow<W>) {
        if self.on() && tx.has_outstanding() {
            self.flags |= RECOVERING;
            self.recovery_end = tx.next_psn();
            tx.forget_resends();
        }
    }

    /// After an ACK: `ooo` PSNs arrived out of order. Starts, continues or ends loss recovery (see
    /// the module doc); returns how many PSNs it newly marked lost.
    pub(crate) fn on_ack<const W: usize>(&mut self, tx: &mut TxWindow<W>, ooo: u32, limits: SleekLimits) -> u32 {
        if !self.on() {
            return 0;
        }
        if self.recovering() && !psn_after(self.recovery_end, tx.base()) {
            self.flags &= !RECOVERING;
        }
        if !self.recovering() {
            if ooo < limits.threshold.max(1) || tx.has_lost() || !tx.has_outstanding() {
                return 0;
            }
            self.flags |= RECOVERING;
            self.recovery_end = tx.next_psn();
        }
        let n = self.recovery_end.wrapping_sub(tx.base()).min(limits.window.max(1));
        if n == 0 {
            return 0;
        }
        tx.mark_lost_through(tx.base().wrapping_add(n - 1))
    }

    /// Ends loss recovery (the PDC closed or failed).
    pub(crate) fn stop(&mut self) {
        self.flags &= !RECOVERING;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: linklayer::Duration = linklayer::Duration::from_micros(10);

    fn window(sent: u32) -> TxWindow<2> {
        let mut tx = TxWindow::new(100);
        for _ in 0..sent {
            tx.send(1024).unwrap();
        }
        tx
    }

    #[test]
    fn limits_follow_the_simulator() {
        // cwnd 40 packets of 4 KiB, maxwnd 50: threshold min(60, 50) = 50, window 40.
        let l = SleekLimits::from_window(40 * 4096, 50 * 4096, 4096, D);
        assert_eq!(l, SleekLimits { threshold: 50, window: 40, probe_after: D });
        // A small window: the threshold is at least 5 packets, the window at least one.
        assert_eq!(
            SleekLimits::from_window(100, 50 * 4096, 4096, D),
            SleekLimits { threshold: 5, window: 1, probe_after: D }
        );
        // cwnd 10: 1.5 × 10 = 15.
        assert_eq!(SleekLimits::from_window(10 * 4096, 50 * 4096, 4096, D).threshold, 15);
        assert_eq!(SleekLimits::from_window(u64::MAX, u64::MAX, 0, D).window, u32::MAX);
    }

    #[test]
    fn off_does_nothing() {
        let mut tx = window(20);
        let mut s = Sleek::default();
        assert_eq!(s.on_ack(&mut tx, 100, SleekLimits { threshold: 5, window: 10, probe_after: D }), 0);
        s.recover(&mut tx);
        assert!(!s.recovering());
        assert_eq!(s.probe_answered(Instant::from_nanos(5), 0), None);
    }

    #[test]
    fn recovery_starts_at_the_threshold_marks_a_window_and_ends_past_its_start() {
        let mut tx = window(20); // PSNs 100..=119
        let mut s = Sleek::default();
        s.enable();
        let limits = SleekLimits { threshold: 6, window: 4, probe_after: D };
        // PSNs 105..=109 arrived (5 out of order): below the threshold.
        tx.on_ack(99, Some(crate::pdc::window::Sack { base: 105, bitmap: 0b11111 })).unwrap();
        assert_eq!(s.on_ack(&mut tx, 5, limits), 0);
        assert!(!s.recovering());
        // One more: recovery starts and marks 100..=103 (a window from the cumulative ACK).
        tx.on_ack(99, Some(crate::pdc::window::Sack { base: 105, bitmap: 0b111111 })).unwrap();
        assert_eq!(s.on_ack(&mut tx, 6, limits), 4);
        assert!(s.recovering());
        assert_eq!((0..4).map(|_| tx.take_lost()).collect::<Vec<_>>(), [Some(100), Some(101), Some(102), Some(103)]);
        // 100..=103 acknowledged: the window of 4 from the cumulative ACK is 104..=107, and of
        // those only 104 is missing.
        tx.on_ack(103, None).unwrap();
        assert_eq!(s.on_ack(&mut tx, 6, limits), 1);
        assert_eq!(tx.take_lost(), Some(104));
        // A resent PSN is not marked again.
        assert_eq!(s.on_ack(&mut tx, 6, limits), 0);
        // Everything sent before recovery began acknowledged: recovery ends.
        tx.on_ack(119, None).unwrap();
        assert_eq!(s.on_ack(&mut tx, 0, limits), 0);
        assert!(!s.recovering());
    }

    #[test]
    fn recovery_waits_for_pending_resends_and_stops_at_its_start() {
        let mut tx = window(10); // 100..=109
        let mut s = Sleek::default();
        s.enable();
        let limits = SleekLimits { threshold: 1, window: 100, probe_after: D };
        tx.mark_lost_through(100);
        assert_eq!(s.on_ack(&mut tx, 3, limits), 0, "a resend is pending");
        assert_eq!(tx.take_lost(), Some(100));
        assert_eq!(s.on_ack(&mut tx, 3, limits), 9, "101..=109, not beyond the newest sent");
        for _ in 0..5 {
            tx.send(1024).unwrap();
        }
        while tx.take_lost().is_some() {}
        assert_eq!(s.on_ack(&mut tx, 3, limits), 0, "110..=114 went after recovery began");
    }

    #[test]
    fn a_probe_restarts_recovery_with_resends_included() {
        let mut tx = window(4); // 100..=103
        let mut s = Sleek::default();
        s.enable();
        let t0 = Instant::from_nanos(1_000);
        let opaque = s.probe_sent(t0);
        assert_eq!(
            s.probe_answered(t0.saturating_add(linklayer::Duration::from_nanos(700)), opaque.wrapping_add(1)),
            None
        );
        assert_eq!(
            s.probe_answered(t0.saturating_add(linklayer::Duration::from_nanos(700)), opaque),
            Some(linklayer::Duration::from_nanos(700))
        );
        tx.mark_lost_through(103);
        while tx.take_lost().is_some() {}
        s.recover(&mut tx);
        assert!(s.recovering());
        assert_eq!(s.on_ack(&mut tx, 0, SleekLimits { threshold: 50, window: 2, probe_after: D }), 2);
        assert_eq!((tx.take_lost(), tx.take_lost(), tx.take_lost()), (Some(100), Some(101), None));
        s.stop();
        assert!(!s.recovering());
    }
}
