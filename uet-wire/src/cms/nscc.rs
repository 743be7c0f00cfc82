//! NSCC, network-signal congestion control: the congestion window of one CCC at its sender.
//!
//! Follows the UEC simulator (`ultraethernet/uet-htsim` `40ccb05`, `htsim/sim/uec.cpp`:
//! `initNsccParams`, `processAck`, `updateCwndOnAck_NSCC`, `updateCwndOnNack_NSCC`,
//! `quick_adapt`, `update_delay`, `update_base_rtt`, `fulfill_adjustment`,
//! `mark_packet_for_retransmission`), in integer arithmetic.
//!
//! Every ACK brings the bytes the receiver took since the last one (ACK_CC `rcvd_bytes`, see
//! [`ReceivedBytes`]), the ECN echo, and a round-trip sample when the acknowledged packet was
//! sent once. Its queueing delay is the sample minus the base RTT (the smallest sample seen),
//! and the ACK falls into one of four cases against the target queueing delay:
//!
//! | ECN | delay | reaction |
//! |---|---|---|
//! | no | ≥ target | fair increase: `inc += fi × acked` |
//! | no | < target | proportional increase: `inc += α × acked × (target − delay)`, or, below 1 µs of delay for more than a window of bytes, fast increase `cwnd += acked × fi_scale` |
//! | yes | ≥ target | multiplicative decrease, at most once per base RTT: `cwnd × max(1 − γ (avg − target)/avg, ½)` |
//! | yes | < target | none (the path, not the window, is at fault) |
//!
//! The increase collects in `inc` (bytes²) and is applied as `cwnd += inc / cwnd` after eight
//! MTUs received or one network RTT, plus `η` once per network RTT. Quick adapt: at the first
//! feedback after each epoch (base RTT + target delay), if a NACK came since the last quick adapt,
//! or this feedback is a loss or has a delay above four targets, and the bytes acknowledged
//! during the epoch are under `maxwnd >> qa_gate`, the window drops to those bytes; ECN-marked
//! ACKs and NACKs are then ignored until what was in flight has been acknowledged.
//! A NACK (a trimmed packet) subtracts its bytes and arms quick adapt; a retransmission timeout
//! subtracts the packet's bytes only.
//!
//! Constants scale from the reference network ([`REFERENCE_BDP`]): with
//! `a = BDP / 150 000 B`, `fi = 5·MSS·a`, `η = 0.15·MSS·a`, `fi_scale = a/4`,
//! `α = 4·MSS·a·(target/12 µs)/target` (so `α × (target − delay) = 4·MSS·a·(target − delay)/12 µs`),
//! `γ = 0.8`, delay average weight `1/80` (0.0125), `min_cwnd = MTU`, `maxwnd = 1.5 × BDP` of
//! the peer's round trip (recomputed when the base RTT drops), initial window `maxwnd`. These
//! constants are fixed; the network they scale from is configuration ([`NsccConfig`]).
//!
//! Checked against the simulator itself: its NSCC functions, transcribed into a standalone
//! program with its types and truncations, and this module, fed the same 5 000 scripted feedback
//! steps (fair, proportional and fast increases, 159 decreases, 72 quick adapts, NACKs, timeouts,
//! a falling base RTT), end every step with windows within 0.02 % of each other (the unit tests
//! replay both traces).
//!
//! *Project-defined* (the simulator's behaviour kept, its representation changed):
//!
//! * Fixed point: the average delay is kept in 1/256 ns, `α` in 2⁻³² bytes per ns of delay,
//!   `fi_scale` in 2⁻¹⁶; the pending increase in 64 bits, saturating (the simulator's 32-bit one
//!   overflows at 800 Gb/s). The decrease factor `(avg + 4·target)/(5·avg)` is γ = 0.8 exactly.
//! * The receiver's window penalty (ACK_CC `rcv_cwnd_pend`, 7 bits) is honoured only when
//!   [`NsccConfig::honor_penalty`] says so: no public source gives its meaning, and the
//!   simulator's 8-bit form counts down from 255 = none, so a peer that carries that form over
//!   would send 127 for none. Honoured, `p` takes `acked × p / 127` off the window (at least one
//!   MTU stays), so 0 is no penalty and a receiver that sends zeros changes nothing.
//! * When the base RTT drops, the window is clamped to the new `maxwnd` at once (the simulator
//!   clamps at its next bounds check), so it never exceeds `maxwnd` between feedback.
//! * A configured initial window is kept within `[MTU, maxwnd]`.
//! * [`ReceivedBytes`] resynchronises after three steps in a row it refused, so one genuine jump
//!   of half the 24-bit range does not stall the count.
//! * The simulator's two average-delay weights for large samples are both 0.0125, so one rule
//!   is kept.

use super::{Ignored, REFERENCE_BDP, REFERENCE_RTT, mul_div};
use linklayer::{Duration, Instant, LinkRate};

/// Delay below which the proportional case may grow the window fast (htsim `fast_increase`).
pub const FAST_INCREASE_DELAY: Duration = Duration::from_micros(1);

/// The largest receiver window penalty (`rcv_cwnd_pend` is 7 bits).
pub const MAX_PENALTY: u8 = 0x7F;

/// How one CCC's NSCC is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NsccConfig {
    /// The sender's link rate (the BDP and `maxwnd` are computed from it).
    pub link: LinkRate,
    /// The network's unloaded round-trip time: it scales the constants and sets the target delay
    /// and the adjustment period.
    pub network_rtt: Duration,
    /// The unloaded round trip to this CCC's peer, the first base RTT (`maxwnd` is 1.5 times
    /// its BDP); `None` for `network_rtt`.
    pub peer_rtt: Option<Duration>,
    /// Apply the receiver's window penalty (ACK_CC `rcv_cwnd_pend`; off by default, see the
    /// module doc).
    pub honor_penalty: bool,
    /// Payload bytes of a full packet (the constants scale with it; htsim `_mss`, 4 096).
    pub mss: u32,
    /// Bytes a full packet counts in the window (the minimum window; htsim `_mtu`).
    pub mtu: u32,
    /// Target queueing delay; `None` for the default: ¾ of `network_rtt` with trimming, else
    /// `network_rtt`.
    pub target_qdelay: Option<Duration>,
    /// The fabric trims packets instead of dropping them (NACKs come back for losses).
    pub trimming: bool,
    /// Quick adapt fires only when the bytes acknowledged in an epoch are below
    /// `maxwnd >> qa_gate` (default 3).
    pub qa_gate: u8,
    /// Quick adapt on (the default).
    pub quick_adapt: bool,
    /// RCCC runs beside NSCC on this CCC: a NACK of a packet trimmed at the last hop (congestion
    /// the receiver's credits govern) then leaves the window as it is.
    pub with_credit: bool,
    /// The window to start with, kept within `[MTU, maxwnd]`; `None` for `maxwnd`.
    pub initial_cwnd: Option<u32>,
}

impl NsccConfig {
    /// The simulator's defaults for a sender on `link` in a network of round trip `network_rtt`
    /// and full packets of `mtu` bytes (payload and window size both `mtu`).
    pub const fn new(link: LinkRate, network_rtt: Duration, mtu: u32) -> Self {
        NsccConfig {
            link,
            network_rtt,
            peer_rtt: None,
            honor_penalty: false,
            mss: mtu,
            mtu,
            target_qdelay: None,
            trimming: false,
            qa_gate: 3,
            quick_adapt: true,
            with_credit: false,
            initial_cwnd: None,
        }
    }

    /// The target queueing delay in nanoseconds (at least 1).
    pub fn target_qdelay(&self) -> Duration {
        let rtt = self.network_rtt.as_nanos();
        let ns = match self.target_qdelay {
            Some(t) => t.as_nanos(),
            None if self.trimming => rtt / 4 * 3 + rtt % 4 * 3 / 4,
            None => rtt,
        };
        Duration::from_nanos(ns.max(1))
    }
}

/// The feedback of one ACK (or ACK_CC) for this CCC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AckSignal {
    /// Bytes the receiver took since the previous ACK ([`ReceivedBytes::advance`]).
    pub acked: u32,
    /// The round trip of the packet the ACK answers, when it was sent once (Karn's rule); `None`
    /// otherwise, and for the answer to a probe or a credit request (the simulator takes no
    /// base RTT from those).
    pub rtt: Option<Duration>,
    /// The ACK echoes an ECN mark.
    pub ecn: bool,
    /// The receiver's window penalty (`rcv_cwnd_pend`, 0 for none, at most [`MAX_PENALTY`]);
    /// used only with [`NsccConfig::honor_penalty`].
    pub penalty: u8,
}

/// The feedback of one NACK of a trimmed packet for this CCC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NackSignal {
    /// The NACKed packet's size (it leaves the flight).
    pub bytes: u32,
    /// Its round trip from its latest send (the simulator takes it even for a resent packet:
    /// it only lowers the base RTT).
    pub rtt: Option<Duration>,
    /// It was trimmed at the last hop (the receiver's port), not inside the network.
    pub last_hop: bool,
}

/// Counters of one NSCC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NsccStats {
    /// ACKs taken.
    pub acks: u64,
    /// NACKs taken.
    pub nacks: u64,
    /// Retransmission timeouts taken.
    pub timeouts: u64,
    /// ACKs in the fair-increase case.
    pub fair_increases: u64,
    /// ACKs in the proportional-increase case (fast increases included).
    pub proportional_increases: u64,
    /// Fast increases applied.
    pub fast_increases: u64,
    /// Multiplicative decreases applied.
    pub decreases: u64,
    /// ECN-marked ACKs below the target delay (no window change).
    pub ecn_low_delay: u64,
    /// Quick adapts applied.
    pub quick_adapts: u64,
    /// Pending increases applied (`cwnd += inc / cwnd`).
    pub adjustments: u64,
    /// ACKs acknowledging more bytes than were in flight (the flight stops at zero).
    pub excess_acked: u64,
    /// Inputs ignored, one per [`Ignored`] reason returned.
    pub ignored: u64,
}

/// The NSCC state of one congestion-control context.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Nscc {
    cfg: NsccConfig,
    /// Target queueing delay, ns.
    target: u64,
    /// `fi` in bytes (the pending increase grows by `fi × acked`).
    fi: u64,
    /// `η` in bytes.
    eta: u64,
    /// `fi_scale` in 2⁻¹⁶.
    fast_q16: u64,
    /// `4·MSS·a / 12 µs` in 2⁻³² bytes per ns.
    alpha_q32: u64,
    cwnd: u64,
    maxwnd: u64,
    in_flight: u64,
    /// Smallest round trip seen, ns.
    base_rtt: u64,
    /// Average queueing delay in 1/256 ns.
    avg_delay_q8: u64,
    /// Pending increase, bytes².
    inc: u64,
    /// Bytes received since the last adjustment.
    received: u64,
    /// Bytes received in the current quick-adapt epoch.
    achieved: u64,
    /// End of the quick-adapt epoch; `None` before the first.
    qa_end: Option<Instant>,
    /// A NACK asked for quick adapt.
    trigger_qa: bool,
    /// After quick adapt: marked feedback is ignored until this many bytes are acknowledged.
    bytes_to_ignore: u64,
    bytes_ignored: u64,
    last_decrease: Option<Instant>,
    last_adjust: Instant,
    /// Bytes acknowledged under 1 µs of delay in a row.
    fast_count: u64,
    fast: bool,
    stats: NsccStats,
}

impl Nscc {
    /// A new CCC at `now`, its window at `maxwnd` (or the configured initial window).
    ///
    /// Zero fields are taken as their smallest meaningful value (an MTU or MSS of 1 byte, a round
    /// trip of 1 ns), so no configuration can make the arithmetic fail.
    pub fn new(cfg: NsccConfig, now: Instant) -> Self {
        let mtu = u64::from(cfg.mtu.max(1));
        let mss = u64::from(cfg.mss.max(1));
        let rtt = cfg.network_rtt.as_nanos().max(1);
        let bdp = cfg.link.bytes_in(Duration::from_nanos(rtt));
        let peer_rtt = cfg.peer_rtt.map_or(rtt, |r| r.as_nanos().max(1));
        let maxwnd = Self::max_window(cfg.link.bytes_in(Duration::from_nanos(peer_rtt)), mtu);
        let cwnd = cfg.initial_cwnd.map_or(maxwnd, |c| u64::from(c).clamp(mtu, maxwnd));
        Nscc {
            cfg,
            target: cfg.target_qdelay().as_nanos(),
            fi: mul_div(5 * mss, bdp, REFERENCE_BDP),
            eta: mul_div(3 * mss, bdp, 20 * REFERENCE_BDP),
            fast_q16: mul_div(bdp, 1 << 16, 4 * REFERENCE_BDP),
            alpha_q32: mul_div((4 * mss).saturating_mul(bdp), 1 << 32, REFERENCE_BDP * REFERENCE_RTT.as_nanos()),
            cwnd,
            maxwnd,
            in_flight: 0,
            base_rtt: peer_rtt,
            avg_delay_q8: 0,
            inc: 0,
            received: 0,
            achieved: 0,
            qa_end: None,
            trigger_qa: false,
            bytes_to_ignore: 0,
            bytes_ignored: 0,
            last_decrease: None,
            last_adjust: now,
            fast_count: 0,
            fast: false,
            stats: NsccStats::default(),
        }
    }

    fn max_window(bdp: u64, mtu: u64) -> u64 {
        (bdp.saturating_add(bdp / 2)).max(mtu)
    }

    /// The configuration.
    pub const fn config(&self) -> &NsccConfig {
        &self.cfg
    }

    /// The congestion window in bytes.
    pub const fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// The largest window: 1.5 × the BDP of the base RTT.
    pub const fn max_cwnd(&self) -> u64 {
        self.maxwnd
    }

    /// The smallest window: one MTU.
    pub fn min_cwnd(&self) -> u64 {
        u64::from(self.cfg.mtu.max(1))
    }

    /// Bytes sent and not yet acknowledged, NACKed or timed out.
    pub const fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// The smallest round trip seen (the configured peer RTT, or network RTT, until a smaller
    /// one).
    pub const fn base_rtt(&self) -> Duration {
        Duration::from_nanos(self.base_rtt)
    }

    /// The average queueing delay.
    pub const fn avg_delay(&self) -> Duration {
        Duration::from_nanos(self.avg_delay_q8 >> 8)
    }

    /// The target queueing delay.
    pub const fn target_qdelay(&self) -> Duration {
        Duration::from_nanos(self.target)
    }

    /// The counters.
    pub const fn stats(&self) -> &NsccStats {
        &self.stats
    }

    /// The window has room for a packet of `bytes`.
    pub fn can_send(&self, bytes: u32) -> bool {
        self.in_flight.saturating_add(u64::from(bytes)) <= self.cwnd
    }

    /// A packet of `bytes` went out (new or resent).
    pub fn on_send(&mut self, bytes: u32) {
        self.in_flight = self.in_flight.saturating_add(u64::from(bytes));
    }

    /// A packet of `bytes` timed out: it leaves the flight and the window shrinks by its size
    /// (htsim `mark_packet_for_retransmission`).
    ///
    /// Should the packet be acknowledged after all before it is resent (it was late, not lost),
    /// call [`Nscc::on_send`] for it again before the ACK's [`Nscc::on_ack`], whose byte count
    /// includes it (the simulator adds it back to the flight so).
    pub fn on_timeout(&mut self, bytes: u32) {
        self.stats.timeouts += 1;
        self.in_flight = self.in_flight.saturating_sub(u64::from(bytes));
        self.cwnd = self.cwnd.saturating_sub(u64::from(bytes)).max(self.min_cwnd());
    }

    /// A packet of `bytes` left the flight with no congestion signal (refused for want of a
    /// buffer, or given up when its PDC closed): the window stays as it is.
    pub fn on_leave(&mut self, bytes: u32) {
        self.in_flight = self.in_flight.saturating_sub(u64::from(bytes));
    }

    /// An ACK for this CCC arrived at `now`.
    ///
    /// A penalty beyond 7 bits is ignored ([`Ignored::PenaltyOutOfRange`]; checked even when
    /// penalties are not honoured); the rest of the ACK still counts.
    pub fn on_ack(&mut self, now: Instant, ack: AckSignal) -> Result<(), Ignored> {
        self.stats.acks += 1;
        let acked = u64::from(ack.acked);
        self.achieved = self.achieved.saturating_add(acked);
        self.received = self.received.saturating_add(acked);
        self.bytes_ignored = self.bytes_ignored.saturating_add(acked);
        if acked > self.in_flight {
            self.stats.excess_acked += 1;
        }
        self.in_flight = self.in_flight.saturating_sub(acked);

        let penalty = if ack.penalty > MAX_PENALTY {
            self.stats.ignored += 1;
            Err(Ignored::PenaltyOutOfRange)
        } else {
            if ack.penalty > 0 && self.cfg.honor_penalty {
                let cut = acked * u64::from(ack.penalty) / u64::from(MAX_PENALTY);
                self.cwnd = self.cwnd.saturating_sub(cut).max(self.min_cwnd());
            }
            Ok(())
        };

        let delay = match ack.rtt {
            Some(rtt) => {
                let raw = rtt.as_nanos();
                self.update_base_rtt(raw);
                if raw >= self.base_rtt {
                    self.update_delay(raw, ack.ecn);
                    raw - self.base_rtt
                } else {
                    self.avg_delay_q8 >> 8
                }
            }
            None => self.avg_delay_q8 >> 8,
        };
        self.update_window(now, ack.ecn, delay, acked);
        penalty
    }

    /// A NACK of a trimmed packet for this CCC arrived at `now` (htsim `processNack` with
    /// `updateCwndOnNack_NSCC`).
    pub fn on_nack(&mut self, now: Instant, nack: NackSignal) {
        self.stats.nacks += 1;
        let bytes = u64::from(nack.bytes);
        if let Some(rtt) = nack.rtt {
            self.update_base_rtt(rtt.as_nanos());
        }
        self.bytes_ignored = self.bytes_ignored.saturating_add(bytes);
        // The trimming threshold is estimated as one network RTT of queueing.
        let estimate = self.base_rtt.saturating_add(self.cfg.network_rtt.as_nanos());
        self.update_delay(estimate, true);
        self.trigger_qa = true;
        let adapted = self.quick_adapt(now, true, true, 0);
        // With credits on, a last-hop trim is the receiver's to pace, not the window's.
        if !(adapted || self.cfg.with_credit && nack.last_hop) {
            self.cwnd = self.cwnd.saturating_sub(bytes);
            self.bound();
        }
        self.in_flight = self.in_flight.saturating_sub(bytes);
    }

    fn update_window(&mut self, now: Instant, ecn: bool, delay: u64, acked: u64) {
        if self.quick_adapt(now, false, ecn, delay) {
            return;
        }
        match (ecn, delay >= self.target) {
            (false, true) => {
                self.stats.fair_increases += 1;
                self.inc = self.inc.saturating_add(self.fi.saturating_mul(acked));
            }
            (false, false) => {
                self.stats.proportional_increases += 1;
                if !self.fast_increase(acked, delay) {
                    let gap = self.target - delay;
                    let add = u128::from(self.alpha_q32).saturating_mul(u128::from(acked) * u128::from(gap)) >> 32;
                    self.inc = self.inc.saturating_add(u64::try_from(add).unwrap_or(u64::MAX));
                }
            }
            (true, true) => self.multiplicative_decrease(now),
            (true, false) => self.stats.ecn_low_delay += 1,
        }
        self.bound();
        let period = self.cfg.network_rtt.as_nanos();
        let since = now.saturating_duration_since(self.last_adjust).as_nanos();
        if self.received > 8 * self.min_cwnd() || since > period {
            self.stats.adjustments += 1;
            self.cwnd = self.cwnd.saturating_add(self.inc / self.cwnd.max(1));
            if since >= period {
                self.cwnd = self.cwnd.saturating_add(self.eta);
                self.last_adjust = now;
            }
            self.inc = 0;
            self.received = 0;
        }
        self.bound();
    }

    /// htsim `fast_increase`: true when it grew the window (the proportional increase is then
    /// skipped).
    fn fast_increase(&mut self, acked: u64, delay: u64) -> bool {
        if delay < FAST_INCREASE_DELAY.as_nanos() {
            self.fast_count = self.fast_count.saturating_add(acked);
            if self.fast_count > self.cwnd || self.fast {
                self.stats.fast_increases += 1;
                self.cwnd = self.cwnd.saturating_add(mul_div(acked, self.fast_q16, 1 << 16));
                self.fast = true;
                return true;
            }
        } else {
            self.fast_count = 0;
        }
        self.fast = false;
        false
    }

    fn multiplicative_decrease(&mut self, now: Instant) {
        self.fast = false;
        self.fast_count = 0;
        let avg = self.avg_delay_q8 >> 8;
        if avg <= self.target {
            return;
        }
        let due = self.last_decrease.is_none_or(|at| now.saturating_duration_since(at).as_nanos() > self.base_rtt);
        if due {
            self.stats.decreases += 1;
            // × (1 − 0.8 (avg − target) / avg) = × (avg + 4 target) / (5 avg), at least × ½.
            let cut = mul_div(self.cwnd, avg.saturating_add(self.target.saturating_mul(4)), avg.saturating_mul(5));
            self.cwnd = cut.max(self.cwnd / 2).max(self.min_cwnd());
            self.last_decrease = Some(now);
        }
    }

    /// htsim `quick_adapt`; true when the ACK's reaction is done (quick adapt fired, or the
    /// feedback is ignored after one).
    fn quick_adapt(&mut self, now: Instant, loss: bool, marked: bool, delay: u64) -> bool {
        if !self.cfg.quick_adapt {
            return false;
        }
        let mut done = false;
        if self.bytes_ignored < self.bytes_to_ignore && marked {
            done = true;
        } else if self.qa_end.is_none_or(|end| now > end) {
            let threshold = self.target.saturating_mul(4);
            if self.qa_end.is_some()
                && (self.trigger_qa || loss || delay > threshold)
                && self.achieved < self.maxwnd >> self.cfg.qa_gate.min(63)
            {
                self.stats.quick_adapts += 1;
                self.cwnd = self.achieved.max(self.min_cwnd());
                self.bytes_to_ignore = self.in_flight;
                self.bytes_ignored = 0;
                self.trigger_qa = false;
                done = true;
            }
            self.achieved = 0;
            let epoch = Duration::from_nanos(self.base_rtt.saturating_add(self.target));
            self.qa_end = Some(now.saturating_add(epoch));
        }
        if done {
            self.inc = 0;
            self.received = 0;
        }
        done
    }

    fn update_base_rtt(&mut self, raw: u64) {
        if raw < self.base_rtt {
            self.base_rtt = raw.max(1);
            let bdp = self.cfg.link.bytes_in(Duration::from_nanos(self.base_rtt));
            self.maxwnd = Self::max_window(bdp, self.min_cwnd());
            // The simulator clamps at its next bounds check; here the window never exceeds
            // `maxwnd`, even between feedback.
            self.bound();
        }
    }

    /// htsim `update_delay`: the average moves 1/80 of the way to the sample; an unmarked sample
    /// above the target counts as a quarter of the base RTT.
    fn update_delay(&mut self, raw: u64, marked: bool) {
        let delay = raw.saturating_sub(self.base_rtt);
        let sample = if !marked && delay > self.target { self.base_rtt / 4 } else { delay };
        let sample_q8 = sample.min(1 << 48) << 8;
        self.avg_delay_q8 = (self.avg_delay_q8 * 79 + sample_q8) / 80;
    }

    fn bound(&mut self) {
        self.cwnd = self.cwnd.clamp(self.min_cwnd(), self.maxwnd.max(self.min_cwnd()));
    }
}

/// The ACK_CC NSCC `rcvd_bytes` field (24 bits, the receiver's count of bytes taken, modulo
/// 2²⁴) turned into bytes per ACK.
///
/// *Project-defined*: the field counts bytes modulo 2²⁴; a step of half the range or more is
/// taken for a reordered older ACK and ignored (a real step is at most the window), until three
/// such steps in a row resynchronise the count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReceivedBytes {
    last: u32,
    /// Steps refused in a row.
    refused: u8,
}

impl ReceivedBytes {
    /// The count a new PDC's receiver starts from: 0.
    pub const fn new() -> Self {
        ReceivedBytes { last: 0, refused: 0 }
    }

    /// The last count applied.
    pub const fn last(&self) -> u32 {
        self.last
    }

    /// The bytes an ACK carrying `field` adds; 0 for a repeat of the last count. The third
    /// refused step in a row is taken as the new count instead (adding nothing), so a genuine
    /// jump cannot stall the count for good.
    pub fn advance(&mut self, field: u32) -> Result<u32, Ignored> {
        let field = field & 0x00FF_FFFF;
        let step = field.wrapping_sub(self.last) & 0x00FF_FFFF;
        if step >= 1 << 23 {
            self.refused += 1;
            if self.refused < 3 {
                return Err(Ignored::StaleReceivedBytes);
            }
            self.refused = 0;
            self.last = field;
            return Ok(0);
        }
        self.refused = 0;
        self.last = field;
        Ok(step)
    }
}

#[cfg(test)]
mod tests;
