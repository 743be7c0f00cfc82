//! Congestion management over a fabric with queues: senders whose windows and credits come from
//! `uet_wire::cms` (NSCC, RCCC, or both) and whose entropy values come from `uet_wire::lb`,
//! sending to one receiver through `paths` parallel switch paths and the receiver's downlink.
//!
//! * **Queues.** Every path and the receiver's downlink is a FIFO served at its link rate, with a
//!   byte capacity: a packet arriving above the ECN threshold is marked; one that does not fit is
//!   trimmed to its 64-byte header, which goes on at once (as a switch's priority queue would
//!   carry it) and draws a NACK — `last_hop` when the downlink trimmed it. A path can be made
//!   slower, or failed (it drops everything) at a chosen time.
//! * **Senders.** Each sends full packets as fast as its own link, its NSCC window and its RCCC
//!   credit allow; each packet carries an EV from its selector and its pull target. ACKs (one per
//!   packet), NACKs and credit grants return on a control class with no queueing, after the
//!   one-way delay. A packet unacknowledged for the retransmission timeout is resent
//!   (`Nscc::on_timeout`, `PathFeedback::Timeout`).
//! * **Receiver.** Keeps each flow's received PSNs (a resent packet that arrived before is
//!   acknowledged, not delivered again), feeds pull targets to its `PullPacer` and sends its pulls.
//!
//! Reported: bytes each flow delivered in the second half of the run and their Jain fairness
//! index, the downlink's queue (largest, and mean queueing delay of the packets that crossed it
//! in the second half), trims, marks, timeouts, completion time when the flows are finite, and
//! whether every packet was delivered exactly once.

use crate::link_sim::Rng;
use linklayer::{Duration, Instant, LinkRate};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet, VecDeque};
use uet_wire::cms::{AckSignal, CreditSender, FlowId, NackSignal, Nscc, NsccConfig, PullPacer, PullPacerConfig};
use uet_wire::lb::{Bitmap, EntropySource, Oblivious, PathFeedback, Reps};

/// Which congestion control the senders run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cc {
    /// NSCC alone.
    Nscc,
    /// RCCC alone.
    Rccc,
    /// Both on every flow.
    Both,
}

/// Which EV selector the senders use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lb {
    /// `lb::Oblivious`.
    Oblivious,
    /// `lb::Reps`.
    Reps,
    /// `lb::Bitmap`.
    Bitmap,
}

/// What happens to one path during the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Degrade {
    /// Its rate is divided by this.
    Slower(u32),
    /// It drops every packet.
    Failed,
}

/// One run.
#[derive(Clone, Copy, Debug)]
pub struct CmsSimConfig {
    /// Seed of every random choice (the selectors' seeds come from it).
    pub seed: u64,
    /// Senders, all to the one receiver.
    pub senders: usize,
    /// Bytes each sender sends; `None` to send for the whole run.
    pub bytes_per_sender: Option<u64>,
    /// How long the run lasts at most.
    pub duration: Duration,
    /// Every host link and the receiver's downlink.
    pub link: LinkRate,
    /// Parallel switch paths; a packet's EV picks one (`ev % paths`).
    pub paths: u16,
    /// Each path's rate.
    pub path_rate: LinkRate,
    /// One-way propagation delay, data and control alike.
    pub one_way: Duration,
    /// Packet size on the wire.
    pub mtu: u32,
    /// Bytes a queue holds; a packet that does not fit is trimmed.
    pub queue_capacity: u64,
    /// Queue bytes above which an arriving packet is ECN-marked.
    pub ecn_threshold: u64,
    /// Congestion control.
    pub cc: Cc,
    /// EV selector.
    pub lb: Lb,
    /// Path 0 changes at this time.
    pub degrade: Option<(Degrade, Duration)>,
}

impl CmsSimConfig {
    /// `senders` flows for 10 ms into one 100 Gb/s receiver over 8 paths of 25 Gb/s each, 4 µs one way,
    /// 4 KiB packets, queues of 1 MB marked above 100 KB.
    pub fn incast(seed: u64, senders: usize, cc: Cc) -> Self {
        CmsSimConfig {
            seed,
            senders,
            bytes_per_sender: None,
            duration: Duration::from_millis(10),
            link: LinkRate::GBPS_100,
            paths: 8,
            path_rate: LinkRate::new(25_000_000_000).unwrap(),
            one_way: Duration::from_micros(4),
            mtu: 4096,
            queue_capacity: 1_000_000,
            ecn_threshold: 100_000,
            cc,
            lb: Lb::Reps,
            degrade: None,
        }
    }

    /// The unloaded round trip: both one-way delays, the packet's time on the sender's link,
    /// a path and the downlink.
    pub fn network_rtt(&self) -> Duration {
        let mtu = u64::from(self.mtu);
        let ns = 2 * self.one_way.as_nanos()
            + 2 * self.link.time_for_bytes(mtu).as_nanos()
            + self.path_rate.time_for_bytes(mtu).as_nanos();
        Duration::from_nanos(ns)
    }
}

impl CmsSimConfig {
    /// NSCC's target queueing delay in this fabric: ¾ of the unloaded round trip (the fabric
    /// trims).
    pub fn target_qdelay(&self) -> Duration {
        self.nscc().target_qdelay()
    }

    fn nscc(&self) -> NsccConfig {
        NsccConfig {
            trimming: true,
            with_credit: self.cc == Cc::Both,
            ..NsccConfig::new(self.link, self.network_rtt(), self.mtu)
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct CmsSimReport {
    /// Bytes each flow delivered in the second half of the run (or of its own life, when
    /// finite).
    pub second_half_bytes: Vec<u64>,
    /// Jain's fairness index of those bytes.
    pub jain: f64,
    /// Aggregate goodput in the second half, Gb/s.
    pub goodput_gbps: f64,
    /// Largest downlink queue, bytes.
    pub max_queue: u64,
    /// Mean queueing delay at the downlink, second half.
    pub mean_queue_delay: Duration,
    /// Packets trimmed, anywhere.
    pub trims: u64,
    /// Of them, at the downlink.
    pub last_hop_trims: u64,
    /// Packets ECN-marked.
    pub marks: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Packets dropped by a failed path.
    pub dropped: u64,
    /// Packets that reached the receiver more than once (acknowledged, not delivered again).
    pub duplicates: u64,
    /// When the last finite flow completed.
    pub completion: Option<Duration>,
    /// No packet was delivered twice or before it was sent, and every finite flow that completed
    /// delivered each of its packets.
    pub delivered_once: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A sender's link is free.
    Wake(usize),
    /// A data packet reaches path `path`'s queue.
    AtPath { flow: usize, psn: u64, path: u16, mark: bool, target: Option<u32> },
    /// A data packet reaches the downlink queue.
    AtDownlink { flow: usize, psn: u64, mark: bool, target: Option<u32> },
    /// The packet reaches the receiver.
    AtReceiver { flow: usize, psn: u64, mark: bool, trimmed: bool, last_hop: bool, target: Option<u32> },
    /// An ACK or NACK reaches its sender.
    Feedback { flow: usize, psn: u64, mark: bool, nack: bool, last_hop: bool },
    /// A credit grant reaches its sender.
    Grant { flow: usize, granted: u32 },
    /// The receiver's pacer may pull.
    Pacer,
    /// A packet's retransmission timer.
    Timeout { flow: usize, psn: u64, sent: u64 },
}

struct Sent {
    at: u64,
    ev: u16,
    /// A resend (an ACK of it may answer an earlier copy, so it gives no round-trip sample).
    resent: bool,
}

struct Sender {
    nscc: Option<Nscc>,
    credit: Option<CreditSender>,
    lb: Box<dyn EntropySource>,
    flow: FlowId,
    next_psn: u64,
    total: Option<u64>,
    unacked: BTreeMap<u64, Sent>,
    resend: VecDeque<u64>,
    link_free: u64,
    wake_pending: bool,
    done_at: Option<u64>,
}

/// Jain's fairness index of `xs`: 1 when all are equal, `1/n` when one has everything (0 when
/// all are zero).
pub fn jain(xs: &[u64]) -> f64 {
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let squares: f64 = xs.iter().map(|&x| (x as f64).powi(2)).sum();
    if squares > 0.0 { sum * sum / (xs.len() as f64 * squares) } else { 0.0 }
}

/// A FIFO served at a rate: its backlog follows from when it is next free.
#[derive(Clone, Copy)]
struct Queue {
    rate: LinkRate,
    free_at: u64,
    failed: bool,
}

impl Queue {
    fn backlog(&self, now: u64) -> u64 {
        self.rate.bytes_in(Duration::from_nanos(self.free_at.saturating_sub(now)))
    }
}

/// The simulation.
pub struct CmsSim {
    cfg: CmsSimConfig,
    rto: u64,
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    senders: Vec<Sender>,
    paths: Vec<Queue>,
    downlink: Queue,
    pacer: PullPacer<256>,
    received: Vec<HashSet<u64>>,
    /// When the pacer's next wake is queued, if one is.
    pacer_at: Option<u64>,
    report: CmsSimReport,
    delay_sum: u128,
    delay_count: u64,
}

impl CmsSim {
    /// A run of `cfg` (at most 256 senders).
    pub fn new(cfg: CmsSimConfig) -> Self {
        let rtt = cfg.network_rtt();
        let nscc_cfg = cfg.nscc();
        let probe = Nscc::new(nscc_cfg, Instant::ZERO);
        let maxwnd = u32::try_from(probe.max_cwnd()).unwrap();
        let mut pacer = PullPacer::new(PullPacerConfig::new(cfg.link, maxwnd));
        let mut rng = Rng::new(cfg.seed);
        let senders = (0..cfg.senders)
            .map(|_| {
                let seed = rng.next_u64();
                let lb: Box<dyn EntropySource> = match cfg.lb {
                    Lb::Oblivious => Box::new(Oblivious::new(cfg.paths, seed)),
                    Lb::Reps => Box::new(Reps::new(cfg.paths, seed)),
                    // The bitmap's EV space is the path count, so a penalty names one path.
                    Lb::Bitmap if cfg.paths == 8 => Box::new(Bitmap::<8>::new(seed)),
                    Lb::Bitmap if cfg.paths == 16 => Box::new(Bitmap::<16>::new(seed)),
                    Lb::Bitmap => Box::new(Bitmap::<256>::new(seed)),
                };
                Sender {
                    nscc: (cfg.cc != Cc::Rccc).then(|| Nscc::new(nscc_cfg, Instant::ZERO)),
                    credit: (cfg.cc != Cc::Nscc).then(|| CreditSender::new(maxwnd, cfg.mtu)),
                    lb,
                    flow: pacer.add_flow().unwrap(),
                    next_psn: 0,
                    total: cfg.bytes_per_sender.map(|b| b.div_ceil(u64::from(cfg.mtu))),
                    unacked: BTreeMap::new(),
                    resend: VecDeque::new(),
                    link_free: 0,
                    wake_pending: false,
                    done_at: None,
                }
            })
            .collect();
        let queue = |rate| Queue { rate, free_at: 0, failed: false };
        let mut sim = CmsSim {
            cfg,
            // A round trip plus three full queues' time: no packet that is only queued times out.
            rto: rtt.as_nanos() + 3 * cfg.link.time_for_bytes(cfg.queue_capacity).as_nanos(),
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            senders,
            paths: vec![queue(cfg.path_rate); usize::from(cfg.paths.max(1))],
            downlink: queue(cfg.link),
            pacer,
            received: vec![HashSet::new(); cfg.senders],
            pacer_at: None,
            report: CmsSimReport { second_half_bytes: vec![0; cfg.senders], ..CmsSimReport::default() },
            delay_sum: 0,
            delay_count: 0,
        };
        for i in 0..cfg.senders {
            sim.at(0, Ev::Wake(i));
            sim.senders[i].wake_pending = true;
        }
        sim
    }

    fn at(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    fn instant(&self) -> Instant {
        Instant::from_nanos(self.now)
    }

    fn half(&self) -> u64 {
        self.cfg.duration.as_nanos() / 2
    }

    /// Runs to the end of the configured duration, or until every finite flow completed.
    pub fn run(mut self) -> CmsSimReport {
        let end = self.cfg.duration.as_nanos();
        let degrade_at = self.cfg.degrade.map(|(_, at)| at.as_nanos());
        let mut degraded = false;
        while let Some(Reverse((at, _, ev))) = self.events.pop() {
            if at > end {
                break;
            }
            self.now = at;
            if let (Some(t), false) = (degrade_at, degraded) {
                if at >= t {
                    degraded = true;
                    match self.cfg.degrade.unwrap().0 {
                        Degrade::Slower(k) => {
                            let bps = self.cfg.path_rate.bits_per_second() / u64::from(k.max(1));
                            self.paths[0].rate = LinkRate::new(bps.max(1)).unwrap();
                        }
                        Degrade::Failed => self.paths[0].failed = true,
                    }
                }
            }
            self.handle(ev);
            // NSCC's flight is exactly the packets awaiting feedback.
            for (i, s) in self.senders.iter().enumerate() {
                if let Some(n) = &s.nscc {
                    let flight = s.unacked.len() as u64 * u64::from(self.cfg.mtu);
                    assert_eq!(n.in_flight(), flight, "flow {i} after {ev:?} at {at} ns");
                }
            }
            if self.senders.iter().all(|s| s.done_at.is_some()) {
                break;
            }
        }
        self.finish()
    }

    fn handle(&mut self, ev: Ev) {
        let one_way = self.cfg.one_way.as_nanos();
        match ev {
            Ev::Wake(i) => {
                self.senders[i].wake_pending = false;
                self.try_send(i);
            }
            Ev::AtPath { flow, psn, path, mark, target } => {
                let q = &mut self.paths[usize::from(path)];
                if q.failed {
                    self.report.dropped += 1;
                    return;
                }
                let mtu = u64::from(self.cfg.mtu);
                let backlog = q.backlog(self.now);
                // Every queue holds the same time: its capacity scales with its rate.
                let capacity = self.cfg.queue_capacity * q.rate.bits_per_second() / self.cfg.link.bits_per_second();
                if backlog + mtu > capacity {
                    self.report.trims += 1;
                    let ev = Ev::AtReceiver { flow, psn, mark, trimmed: true, last_hop: false, target };
                    self.at(self.now + one_way / 2, ev);
                    return;
                }
                let threshold = self.cfg.ecn_threshold * q.rate.bits_per_second() / self.cfg.link.bits_per_second();
                let mark = mark || backlog > threshold;
                q.free_at = q.free_at.max(self.now) + q.rate.time_for_bytes(mtu).as_nanos();
                let out = q.free_at + one_way / 2;
                self.at(out, Ev::AtDownlink { flow, psn, mark, target });
            }
            Ev::AtDownlink { flow, psn, mark, target } => {
                let mtu = u64::from(self.cfg.mtu);
                let backlog = self.downlink.backlog(self.now);
                self.report.max_queue = self.report.max_queue.max(backlog);
                if backlog + mtu > self.cfg.queue_capacity {
                    self.report.trims += 1;
                    self.report.last_hop_trims += 1;
                    self.at(self.now, Ev::AtReceiver { flow, psn, mark, trimmed: true, last_hop: true, target });
                    return;
                }
                let mark = mark || backlog > self.cfg.ecn_threshold;
                let start = self.downlink.free_at.max(self.now);
                if self.now >= self.half() {
                    self.delay_sum += u128::from(start - self.now);
                    self.delay_count += 1;
                }
                self.downlink.free_at = start + self.downlink.rate.time_for_bytes(mtu).as_nanos();
                let done = self.downlink.free_at;
                self.at(done, Ev::AtReceiver { flow, psn, mark, trimmed: false, last_hop: false, target });
            }
            Ev::AtReceiver { flow, psn, mark, trimmed, last_hop, target } => {
                self.report.marks += u64::from(mark && !trimmed);
                // The pull target rides the PDS header, which a trimmed packet keeps; a trimmed
                // packet also gets its flow a pull (credit to resend it).
                let id = self.senders[flow].flow;
                let raised = target.is_some_and(|t| self.pacer.on_target(id, t) == Ok(true));
                if (raised || trimmed && self.pacer.on_trimmed(id).is_ok()) && self.cfg.cc != Cc::Nscc {
                    self.wake_pacer(self.now);
                }
                if !trimmed {
                    if self.received[flow].insert(psn) {
                        if self.now >= self.half() {
                            self.report.second_half_bytes[flow] += u64::from(self.cfg.mtu);
                        }
                    } else {
                        self.report.duplicates += 1;
                    }
                }
                let nack = trimmed;
                self.at(self.now + one_way, Ev::Feedback { flow, psn, mark, nack, last_hop });
            }
            Ev::Feedback { flow, psn, mark, nack, last_hop } => self.feedback(flow, psn, mark, nack, last_hop),
            Ev::Grant { flow, granted } => {
                if let Some(c) = self.senders[flow].credit.as_mut() {
                    let _ = c.on_grant(granted);
                }
                self.try_send(flow);
            }
            Ev::Pacer => {
                if self.pacer_at == Some(self.now) {
                    self.pacer_at = None;
                    self.pace();
                }
            }
            Ev::Timeout { flow, psn, sent } => {
                let s = &mut self.senders[flow];
                // Only the transmission this timer was set for: a later one has its own timer.
                if s.unacked.get(&psn).is_some_and(|p| p.at == sent) {
                    let p = s.unacked.remove(&psn).unwrap();
                    self.report.timeouts += 1;
                    if let Some(n) = s.nscc.as_mut() {
                        n.on_timeout(self.cfg.mtu);
                    }
                    let now = Instant::from_nanos(self.now);
                    s.lb.on_feedback(now, Some(p.ev), PathFeedback::Timeout);
                    s.resend.push_back(psn);
                    self.try_send(flow);
                }
            }
        }
    }

    fn feedback(&mut self, flow: usize, psn: u64, mark: bool, nack: bool, last_hop: bool) {
        let now = self.instant();
        let mtu = self.cfg.mtu;
        let s = &mut self.senders[flow];
        if let Some(c) = s.credit.as_mut() {
            c.on_feedback();
        }
        let Some(sent) = s.unacked.remove(&psn) else { return };
        let rtt = Duration::from_nanos(self.now - sent.at);
        if nack {
            if let Some(n) = s.nscc.as_mut() {
                n.on_nack(now, NackSignal { bytes: mtu, rtt: Some(rtt), last_hop });
            }
            let fb = if last_hop { PathFeedback::Good } else { PathFeedback::Nack };
            s.lb.on_feedback(now, Some(sent.ev), if last_hop && mark { PathFeedback::Ecn } else { fb });
            s.resend.push_back(psn);
        } else {
            if let Some(n) = s.nscc.as_mut() {
                let rtt = (!sent.resent).then_some(rtt);
                n.on_ack(now, AckSignal { acked: mtu, rtt, ecn: mark, penalty: 0 }).unwrap();
            }
            s.lb.on_feedback(now, Some(sent.ev), if mark { PathFeedback::Ecn } else { PathFeedback::Good });
            if s.total.is_some_and(|t| s.next_psn == t) && s.unacked.is_empty() && s.resend.is_empty() {
                s.done_at = Some(self.now);
            }
        }
        self.try_send(flow);
    }

    fn try_send(&mut self, i: usize) {
        let mtu = self.cfg.mtu;
        let active = self.senders.iter().filter(|s| s.done_at.is_none()).count() as u32;
        let s = &mut self.senders[i];
        if s.link_free > self.now {
            if !s.wake_pending {
                s.wake_pending = true;
                let at = s.link_free;
                self.at(at, Ev::Wake(i));
            }
            return;
        }
        let has_new = s.total.is_none_or(|t| s.next_psn < t);
        if s.resend.is_empty() && !has_new {
            return;
        }
        if s.nscc.as_ref().is_some_and(|n| !n.can_send(mtu)) || s.credit.as_ref().is_some_and(|c| !c.can_send()) {
            return;
        }
        let (psn, resent) = match s.resend.pop_front() {
            Some(psn) => (psn, true),
            None => {
                s.next_psn += 1;
                (s.next_psn - 1, false)
            }
        };
        let now = Instant::from_nanos(self.now);
        let ev = s.lb.next_entropy(now);
        s.unacked.insert(psn, Sent { at: self.now, ev, resent });
        if let Some(n) = s.nscc.as_mut() {
            n.on_send(mtu);
        }
        let mut target = None;
        if let Some(c) = s.credit.as_mut() {
            c.on_send(mtu);
            let backlog = match s.total {
                Some(t) => (t - s.next_psn + s.resend.len() as u64) * u64::from(mtu),
                None => 1 << 30,
            };
            target = Some(c.pull_target(backlog, s.nscc.as_ref().map(Nscc::cwnd), active));
        }
        s.link_free = self.now + self.cfg.link.time_for_bytes(u64::from(mtu)).as_nanos();
        let path = ev % self.cfg.paths.max(1);
        let arrive = s.link_free + self.cfg.one_way.as_nanos() / 2;
        let sent = self.now;
        self.at(arrive, Ev::AtPath { flow: i, psn, path, mark: false, target });
        self.at(sent + self.rto, Ev::Timeout { flow: i, psn, sent });
        self.try_send_later(i);
    }

    fn try_send_later(&mut self, i: usize) {
        let s = &mut self.senders[i];
        if !s.wake_pending {
            s.wake_pending = true;
            let at = s.link_free;
            self.at(at, Ev::Wake(i));
        }
    }

    fn pace(&mut self) {
        let now = self.instant();
        if let Some(pull) = self.pacer.poll_pull(now) {
            let flow = self.senders.iter().position(|s| s.flow == pull.flow).unwrap();
            self.at(self.now + self.cfg.one_way.as_nanos(), Ev::Grant { flow, granted: pull.granted });
        }
        if let Some(t) = self.pacer.poll_timeout() {
            self.wake_pacer(t.as_nanos().max(self.now + 1));
        }
    }

    /// Queues one wake of the pacer at `at`, unless one is queued no later.
    fn wake_pacer(&mut self, at: u64) {
        if self.pacer_at.is_none_or(|p| p > at) {
            self.pacer_at = Some(at);
            self.at(at, Ev::Pacer);
        }
    }

    fn finish(mut self) -> CmsSimReport {
        let r = &mut self.report;
        let finite = self.cfg.bytes_per_sender.is_some();
        if finite {
            r.completion = self
                .senders
                .iter()
                .map(|s| s.done_at)
                .collect::<Option<Vec<_>>>()
                .map(|d| Duration::from_nanos(d.into_iter().max().unwrap_or(0)));
        }
        // The receiver keeps a set per flow, so nothing is delivered twice (a second arrival
        // counts in `duplicates`); every PSN delivered was sent, and a finite flow that completed
        // delivered each of its packets.
        r.delivered_once = self.senders.iter().zip(&self.received).all(|(s, got)| {
            got.iter().all(|&p| p < s.next_psn)
                && (s.done_at.is_none() || s.total.is_some_and(|t| got.len() as u64 == t))
        });
        let sum: f64 = r.second_half_bytes.iter().map(|&b| b as f64).sum();
        r.jain = jain(&r.second_half_bytes);
        let half_ns = (self.cfg.duration.as_nanos() / 2).max(1) as f64;
        r.goodput_gbps = sum * 8.0 / half_ns;
        r.mean_queue_delay = Duration::from_nanos((self.delay_sum / u128::from(self.delay_count.max(1))) as u64);
        self.report
    }
}
