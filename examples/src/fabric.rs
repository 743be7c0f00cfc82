//! The simulated scale-out fabric both UET simulations use ([`pdc_sim`](crate::pdc_sim) and
//! [`endpoint_sim`](crate::endpoint_sim)): two hosts joined by `paths` FIFO paths, each with its
//! own delay plus jitter; a packet's entropy value picks its path. The fabric loses, duplicates,
//! trims (cuts a request to its headers and marks it, as a switch's DSCP mark would) and corrupts
//! (flips one bit; the receiver's CRC check drops it) packets at configured rates.

use crate::link_sim::Rng;
use linklayer::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use uet_wire::pdc::PdcConfig;

/// The fabric between the two hosts.
#[derive(Clone, Copy, Debug)]
pub struct FabricConfig {
    /// Paths; a packet's entropy picks one.
    pub paths: u32,
    /// One-way delay of path 0.
    pub base_delay: Duration,
    /// Extra delay of each further path.
    pub path_step: Duration,
    /// Random extra delay, uniform up to this.
    pub jitter: Duration,
    /// Probability that a packet is lost.
    pub loss: f64,
    /// Probability that a packet arrives twice.
    pub duplicate: f64,
    /// Probability that a request is trimmed to its headers.
    pub trim: f64,
    /// Probability that a packet has a bit flipped (dropped by the CRC check).
    pub corrupt: f64,
}

impl FabricConfig {
    /// The longest unloaded round trip: twice the longest path with all its jitter.
    pub fn max_rtt(&self) -> Duration {
        let longest = self.base_delay.as_nanos()
            + u64::from(self.paths.saturating_sub(1)) * self.path_step.as_nanos()
            + self.jitter.as_nanos();
        Duration::from_nanos(2 * longest)
    }

    /// `limits` with the timers of [`PdcConfig::sprayed`] for this fabric's longest round trip
    /// (resend after a gap, tail-loss probe, retransmission timeout); its retry limits are kept.
    pub fn sprayed_timers(&self, limits: PdcConfig) -> PdcConfig {
        let t = PdcConfig::sprayed(self.max_rtt());
        PdcConfig {
            rto: t.rto,
            rto_min: t.rto_min,
            tail_loss_time: t.tail_loss_time,
            reorder_window: t.reorder_window,
            ..limits
        }
    }

    /// Eight paths 2 µs to 6.9 µs long with 1.5 µs of jitter; `loss` on every packet and the
    /// other faults at a quarter of it each.
    pub fn sprayed(loss: f64) -> Self {
        FabricConfig {
            paths: 8,
            base_delay: Duration::from_micros(2),
            path_step: Duration::from_nanos(700),
            jitter: Duration::from_nanos(1500),
            loss,
            duplicate: loss / 4.0,
            trim: loss / 4.0,
            corrupt: loss / 4.0,
        }
    }
}

/// What the fabric did to packets.
#[derive(Clone, Copy, Debug, Default)]
pub struct FaultCounts {
    /// Lost.
    pub lost: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Trimmed.
    pub trimmed: u64,
    /// Corrupted.
    pub corrupted: u64,
}

/// A packet on its way.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InFlight {
    /// Arrival time, ns.
    pub at: u64,
    seq: u64,
    /// The receiving host, 0 or 1.
    pub to: usize,
    /// Cut to its headers.
    pub trimmed: bool,
    /// A bit of it was flipped.
    pub corrupted: bool,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The fabric and the packets on it.
pub struct Fabric {
    cfg: FabricConfig,
    seq: u64,
    wire: BinaryHeap<Reverse<InFlight>>,
    /// Per receiving host and path, the last arrival time (paths are FIFOs).
    path_free: [Vec<u64>; 2],
    /// What the fabric did.
    pub faults: FaultCounts,
}

impl Fabric {
    /// An empty fabric.
    pub fn new(cfg: FabricConfig) -> Self {
        let paths = cfg.paths as usize;
        Fabric {
            cfg,
            seq: 0,
            wire: BinaryHeap::new(),
            path_free: [vec![0; paths], vec![0; paths]],
            faults: FaultCounts::default(),
        }
    }

    /// Puts `bytes` on the fabric at `now` towards host `to`. `trim_to` is the header length of a
    /// request (only requests are trimmed); `entropy` pins the path (`None` sprays: a random
    /// value per packet).
    pub fn send(
        &mut self,
        rng: &mut Rng,
        now: Instant,
        to: usize,
        bytes: &[u8],
        trim_to: Option<usize>,
        entropy: Option<u32>,
    ) {
        let f = self.cfg;
        let copies = if rng.chance(f.duplicate) {
            self.faults.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            if rng.chance(f.loss) {
                self.faults.lost += 1;
                continue;
            }
            let mut bytes = bytes.to_vec();
            let (mut trimmed, mut corrupted) = (false, false);
            if let Some(n) = trim_to.filter(|_| rng.chance(f.trim)) {
                bytes.truncate(n);
                trimmed = true;
                self.faults.trimmed += 1;
            } else if rng.chance(f.corrupt) {
                let bit = rng.below(bytes.len() as u64 * 8);
                bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
                self.faults.corrupted += 1;
                corrupted = true;
            }
            let entropy = entropy.unwrap_or_else(|| rng.below(1 << 16) as u32);
            let path = (entropy % f.paths) as usize;
            let delay =
                f.base_delay.as_nanos() + path as u64 * f.path_step.as_nanos() + rng.below(f.jitter.as_nanos() + 1);
            let last = &mut self.path_free[to][path];
            let at = (now.as_nanos() + delay).max(*last);
            *last = at;
            self.seq += 1;
            self.wire.push(Reverse(InFlight { at, seq: self.seq, to, trimmed, corrupted, bytes }));
        }
    }

    /// The next packet due at or before `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<InFlight> {
        if self.wire.peek().is_some_and(|Reverse(p)| p.at <= now.as_nanos()) {
            self.wire.pop().map(|Reverse(p)| p)
        } else {
            None
        }
    }

    /// When the next packet arrives.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.wire.peek().map(|Reverse(p)| Instant::from_nanos(p.at))
    }
}

/// The `p`-th percentile (0..=100) of sorted nanosecond samples.
pub fn percentile(sorted_ns: &[u64], p: f64) -> Duration {
    match sorted_ns.len() {
        0 => Duration::ZERO,
        n => Duration::from_nanos(sorted_ns[((n - 1) as f64 * p / 100.0).round() as usize]),
    }
}
