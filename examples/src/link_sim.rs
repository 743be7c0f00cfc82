//! A seeded, event-driven simulation of one full-duplex link whose two ends each run the UE link
//! layer from `linklayer`: LLR (transmitter and receiver) and CBFC (sender and receiver).
//!
//! What the wire does to traffic, per direction:
//!
//! * serialisation at the link rate plus 20 bytes of preamble and inter-frame gap per frame, and a
//!   fixed propagation delay; the link is FIFO;
//! * frames carry a real Ethernet FCS (CRC-32); with probability `frame_error_rate` one bit of the
//!   frame is flipped, so the receiver's FCS check fails (and the preamble's LLR sequence number
//!   is not trusted);
//! * control ordered sets are lost with probability `ctl_loss_rate` and have one bit flipped with
//!   probability `ctl_corrupt_rate` (the CtlOS check byte rejects them).
//!
//! Each end offers a stream of data frames, numbered by a per-direction message id, on a set of
//! lossless virtual channels; a consumer drains the receive buffers at a configurable rate, so
//! credits run out and CBFC must throttle. CC_Updates travel as LLR frames, in order with the data.
//! The receiving application checks every frame arrives exactly once and in order.
//!
//! Frame layout of this simulation (not a protocol format): byte 0 kind (0 data, 1 CC_Update),
//! byte 1 VC, bytes 2..10 message id, then padding; the FCS follows on the wire.

use linklayer::cbfc::{CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, CreditRule, Vc, VcMode};
use linklayer::llr::{
    Admit, FrameAction, FrameCheck, LlrRx, LlrRxConfig, LlrSizing, LlrTx, LlrTxConfig, RxVerdict, UeLlrSpace,
};
use linklayer::wire::{CC_UPDATE_LEN, CTLOS_LEN, CcUpdate, CtlOs};
use linklayer::{Duration, Instant, LinkRate, Seq};
use std::collections::VecDeque;

/// Ethernet FCS.
const FCS: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);

/// Replay storage per link end.
pub const REPLAY_BYTES: usize = 256 * 1024;
/// Replay slots per link end.
pub const REPLAY_SLOTS: usize = 512;

/// A small, fast, seeded generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

/// Parameters of one simulation run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Data frames each end sends.
    pub frames_per_end: u64,
    /// Smallest and largest data frame length (bytes, FCS excluded).
    pub frame_len: (usize, usize),
    /// Link rate.
    pub rate: LinkRate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Probability that a frame is corrupted.
    pub frame_error_rate: f64,
    /// Probability that a CtlOS (ACK, NACK, INIT, CF_Update) is lost.
    pub ctl_loss_rate: f64,
    /// Probability that a CtlOS has a bit flipped.
    pub ctl_corrupt_rate: f64,
    /// Lossless VCs used, and each one's credit limit.
    pub vcs: Vec<(u8, u32)>,
    /// Time the consumer takes to drain one frame from a receive buffer.
    pub drain_time: Duration,
    /// LLR transmitter configuration.
    pub llr: LlrTxConfig,
    /// Credit size and overhead.
    pub credit_rule: CreditRule,
    /// Whether every frame must arrive exactly once and in order (`false` lets frames dropped by an
    /// LLR FLUSH go missing, counted in [`SimReport::lost`]).
    pub exactly_once: bool,
}

impl SimConfig {
    /// A 100 Gb/s link of 100 m (500 ns) with the given seed, frame count and frame error rate.
    pub fn new(seed: u64, frames_per_end: u64, frame_error_rate: f64) -> SimConfig {
        SimConfig {
            seed,
            frames_per_end,
            frame_len: (64, 512),
            rate: LinkRate::GBPS_100,
            delay: Duration::from_nanos(500),
            frame_error_rate,
            ctl_loss_rate: 0.0,
            ctl_corrupt_rate: 0.0,
            vcs: vec![(0, 96), (5, 64), (17, 200)],
            drain_time: Duration::from_nanos(25),
            llr: LlrTxConfig {
                outstanding_frames_max: 256,
                outstanding_bytes_max: 128 * 1024,
                replay_timeout: Duration::from_micros(4),
                replay_count_max: 16,
                init_action: FrameAction::Block,
                flush_action: FrameAction::Block,
                init_interval: Duration::from_micros(2),
                ..LlrTxConfig::hardware(&LlrSizing::hardware(Duration::ZERO, LinkRate::GBPS_100))
            },
            credit_rule: CreditRule::new(64, 0).expect("valid rule"),
            exactly_once: true,
        }
    }
}

/// What crosses the wire.
#[derive(Clone, Debug)]
enum WireItem {
    /// A CtlOS, as its 8 bytes.
    Ctl([u8; CTLOS_LEN]),
    /// A frame: its LLR sequence number (preamble) and its bytes with FCS.
    Frame { seq: u32, bytes: Vec<u8> },
}

impl WireItem {
    fn wire_len(&self) -> usize {
        match self {
            WireItem::Ctl(_) => CTLOS_LEN,
            WireItem::Frame { bytes, .. } => bytes.len() + 20,
        }
    }
}

/// Counters of one end, both directions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndStats {
    /// Data frames handed to LLR.
    pub offered: u64,
    /// Data frames delivered to the application, in order.
    pub delivered: u64,
    /// Frames this end's transmitter corrupted on the wire (injected errors).
    pub corrupted: u64,
    /// CtlOS lost on the wire from this end.
    pub ctl_lost: u64,
    /// CtlOS corrupted on the wire from this end.
    pub ctl_corrupted: u64,
    /// CtlOS rejected by this end's parser.
    pub ctl_rejected: u64,
    /// Times this end had a frame ready but no credit.
    pub credit_stalls: u64,
    /// Times this end had a frame ready but a full LLR window.
    pub window_stalls: u64,
}

/// One end of the link.
pub struct LinkEnd {
    /// LLR transmitter.
    pub llr_tx: LlrTx<UeLlrSpace, Box<[u8]>, REPLAY_SLOTS>,
    /// LLR receiver.
    pub llr_rx: LlrRx<UeLlrSpace>,
    /// CBFC sender.
    pub cbfc_tx: CbfcSender,
    /// CBFC receiver.
    pub cbfc_rx: CbfcReceiver,
    /// Counters.
    pub stats: EndStats,
    vcs: Vec<Vc>,
    next_id: u64,
    expected_id: u64,
    /// Frames waiting in the receive buffer: (vc, len, time it may be drained).
    rx_buffer: VecDeque<(Vc, usize)>,
    next_drain_at: Instant,
    wire_free_at: Instant,
    /// A data frame drawn but not yet admitted (credit or window): (vc, len).
    held: Option<(Vc, usize)>,
}

impl LinkEnd {
    fn new(cfg: &SimConfig, first_seq: u32) -> LinkEnd {
        let storage = vec![0u8; REPLAY_BYTES].into_boxed_slice();
        let seq = Seq::new(first_seq).expect("a 20-bit sequence number");
        let llr_tx = LlrTx::new(cfg.llr, storage, seq).expect("valid LLR configuration");
        let llr_rx = LlrRx::new(LlrRxConfig { enabled: true, ack_spacing: 2048, link_rate: cfg.rate });
        let mut cbfc_tx =
            CbfcSender::new(CbfcSenderConfig { rule: cfg.credit_rule, port_credit_limit: None, ..Default::default() })
                .expect("valid CBFC sender");
        let mut cbfc_rx =
            CbfcReceiver::new(CbfcReceiverConfig { rule: cfg.credit_rule, link_rate: cfg.rate, ..Default::default() })
                .expect("valid CBFC receiver");
        let mut vcs = Vec::new();
        for &(vc, limit) in &cfg.vcs {
            let vc = Vc::new(vc).expect("VC below 32");
            let mode = VcMode::Lossless { credit_limit: Some(limit) };
            cbfc_tx.set_vc_mode(Instant::ZERO, vc, mode).expect("valid VC");
            cbfc_rx.set_vc_mode(Instant::ZERO, vc, mode).expect("valid VC");
            vcs.push(vc);
        }
        LinkEnd {
            llr_tx,
            llr_rx,
            cbfc_tx,
            cbfc_rx,
            stats: EndStats::default(),
            vcs,
            next_id: 0,
            expected_id: 0,
            rx_buffer: VecDeque::new(),
            next_drain_at: Instant::ZERO,
            wire_free_at: Instant::ZERO,
            held: None,
        }
    }

    fn seal(frame: &[u8]) -> Vec<u8> {
        let mut bytes = frame.to_vec();
        bytes.extend_from_slice(&FCS.checksum(frame).to_le_bytes());
        bytes
    }

    /// The next thing to put on the wire at `now`: control first, then LLR (replays first, CC_Update
    /// rounds, then new data frames admitted by CBFC and LLR).
    fn next_item(&mut self, now: Instant, cfg: &SimConfig, rng: &mut Rng) -> Option<WireItem> {
        let ctl = self
            .llr_rx
            .poll_control(now)
            .or_else(|| self.llr_tx.poll_control(now))
            .or_else(|| self.cbfc_rx.poll_cf_update(now).map(CtlOs::CfUpdate));
        if let Some(ctl) = ctl {
            let mut b = [0u8; CTLOS_LEN];
            ctl.emit(&mut b).expect("8-byte buffer");
            return Some(WireItem::Ctl(b));
        }
        if let Some(out) = self.llr_tx.poll_transmit(now) {
            return Some(WireItem::Frame { seq: out.seq.value(), bytes: Self::seal(out.frame) });
        }
        // CC_Updates are LLR frames, in order with the data of their VCs.
        if let Some(msg) = self.cbfc_tx.poll_cc_update(now) {
            let mut frame = [0u8; 1 + CC_UPDATE_LEN];
            frame[0] = 1;
            msg.emit(&mut frame[1..]).expect("46-byte buffer");
            // Not admitted (INIT or a full window): it stays pending and is offered again.
            if let Ok(Admit::Queued(_)) = self.llr_tx.send(now, &frame) {
                return self.next_item(now, cfg, rng);
            }
            self.cbfc_tx.unsent_cc_update(&msg);
        }
        if self.next_id >= cfg.frames_per_end {
            return None;
        }
        let (vc, len) = *self.held.get_or_insert_with(|| {
            let vc = self.vcs[rng.below(self.vcs.len() as u64) as usize];
            let (lo, hi) = cfg.frame_len;
            (vc, lo + rng.below((hi - lo + 1) as u64) as usize)
        });
        if !self.cbfc_tx.may_send(vc, len).expect("valid length") {
            self.stats.credit_stalls += 1;
            return None;
        }
        let id = self.next_id;
        let admitted = self.llr_tx.send_with(now, len, |_, buf| {
            buf.fill(0);
            buf[0] = 0;
            buf[1] = vc.index();
            buf[2..10].copy_from_slice(&id.to_be_bytes());
        });
        match admitted {
            Ok(Admit::Queued(_)) => {
                self.cbfc_tx.on_sent(vc, len).expect("credit checked");
                self.held = None;
                self.next_id += 1;
                self.stats.offered += 1;
                self.llr_tx
                    .poll_transmit(now)
                    .map(|out| WireItem::Frame { seq: out.seq.value(), bytes: Self::seal(out.frame) })
            }
            Ok(other) => panic!("unexpected admission {other:?}"),
            Err(linklayer::Error::WindowFull) | Err(linklayer::Error::InvalidState { .. }) => {
                self.stats.window_stalls += 1;
                None
            }
            Err(e) => panic!("send failed: {e}"),
        }
    }

    fn receive(&mut self, now: Instant, item: WireItem, exactly_once: bool) {
        match item {
            WireItem::Ctl(b) => {
                let Ok((ctl, _)) = CtlOs::parse(&b) else {
                    self.stats.ctl_rejected += 1;
                    return;
                };
                // Errors here are counted by the engines (stale ACKs after a replay, ...).
                let _ = match ctl {
                    CtlOs::LlrInit { seq } => self.llr_rx.handle_init(now, seq).map(|_| ()),
                    CtlOs::LlrInitEcho { seq } => self.llr_tx.handle_init_echo(now, seq),
                    CtlOs::LlrAck { seq } => self.llr_tx.handle_ack(now, seq).map(|_| ()),
                    CtlOs::LlrNack { seq } => self.llr_tx.handle_nack(now, seq),
                    CtlOs::CfUpdate(u) => self.cbfc_tx.handle_cf_update(u.vc, u.freed).map(|_| ()),
                };
            }
            WireItem::Frame { seq, bytes } => {
                let (frame, fcs) = bytes.split_at(bytes.len() - 4);
                let check = if FCS.checksum(frame).to_le_bytes() == fcs { FrameCheck::Good } else { FrameCheck::Bad };
                if self.llr_rx.handle_frame(now, seq, check) != RxVerdict::Deliver {
                    return;
                }
                match frame[0] {
                    1 => {
                        let (msg, _) = CcUpdate::parse(&frame[1..]).expect("CC_Update from our own sender");
                        let out = self.cbfc_rx.handle_cc_update(&msg);
                        assert!(out.is_ok(), "an in-order CC_Update is consistent: {out:?}");
                    }
                    _ => {
                        let vc = Vc::new(frame[1]).expect("VC below 32");
                        let id = u64::from_be_bytes(frame[2..10].try_into().expect("8 bytes"));
                        if exactly_once {
                            assert_eq!(id, self.expected_id, "frame delivered out of order, twice, or lost");
                        } else {
                            assert!(id >= self.expected_id, "frame delivered out of order or twice");
                        }
                        self.expected_id = id + 1;
                        self.cbfc_rx.on_received(vc, frame.len()).expect("sender stayed within credit");
                        self.rx_buffer.push_back((vc, frame.len()));
                        self.stats.delivered += 1;
                    }
                }
            }
        }
    }

    fn drain(&mut self, now: Instant, cfg: &SimConfig) {
        while now >= self.next_drain_at {
            let Some((vc, len)) = self.rx_buffer.pop_front() else { break };
            self.cbfc_rx.on_frame_freed(vc, len).expect("frame was accounted");
            self.next_drain_at = self.next_drain_at.max(now).saturating_add(cfg.drain_time);
        }
    }

    fn wake(&self, now: Instant) -> Option<Instant> {
        let timers = [
            self.llr_tx.poll_timeout(),
            self.llr_rx.poll_timeout(),
            self.cbfc_tx.poll_timeout(),
            self.cbfc_rx.poll_timeout(),
            (!self.rx_buffer.is_empty()).then_some(self.next_drain_at),
        ];
        let t = timers.into_iter().flatten().min();
        match t {
            // Work that needs the wire waits for the wire.
            Some(t) if t <= now => Some(self.wire_free_at.max(now.saturating_add(Duration::from_nanos(1)))),
            other => other,
        }
    }

    /// Whether everything this end sent was delivered and acknowledged.
    pub fn idle(&self, cfg: &SimConfig) -> bool {
        self.next_id == cfg.frames_per_end && self.llr_tx.buffer().is_empty() && self.held.is_none()
    }
}

/// Totals of a run.
#[derive(Clone, Debug, Default)]
pub struct SimReport {
    /// Simulated time at the end.
    pub elapsed: Duration,
    /// Frames delivered in both directions.
    pub delivered: u64,
    /// LLR replays started (both ends).
    pub replays: u64,
    /// Frames retransmitted (both ends).
    pub frames_replayed: u64,
    /// LLR_NACKs sent (both ends).
    pub nacks: u64,
    /// Frames corrupted on the wire (both directions).
    pub corrupted: u64,
    /// CtlOS lost or corrupted on the wire.
    pub ctl_damaged: u64,
    /// Times a ready frame waited for credit.
    pub credit_stalls: u64,
    /// Credits recovered by CC_Updates.
    pub credits_recovered: u64,
    /// Times LLR entered FLUSH.
    pub flushes: u64,
    /// Frames that never arrived (FLUSH, when allowed).
    pub lost: u64,
    /// Whether both directions completed.
    pub completed: bool,
}

/// A full-duplex link between two ends.
pub struct Sim {
    /// The configuration.
    pub cfg: SimConfig,
    /// End A and end B.
    pub ends: [LinkEnd; 2],
    /// Items in flight towards end 0 and end 1: (arrival time, item).
    in_flight: [VecDeque<(Instant, WireItem)>; 2],
    rng: Rng,
    /// Simulated time.
    pub now: Instant,
}

impl Sim {
    /// A link in its initial state; both ends enable LLR at time zero.
    pub fn new(cfg: SimConfig) -> Sim {
        let mut rng = Rng::new(cfg.seed);
        let a = LinkEnd::new(&cfg, rng.below(1 << 20) as u32);
        let b = LinkEnd::new(&cfg, rng.below(1 << 20) as u32);
        let mut sim = Sim { cfg, ends: [a, b], in_flight: [VecDeque::new(), VecDeque::new()], rng, now: Instant::ZERO };
        for end in &mut sim.ends {
            end.llr_tx.enable(Instant::ZERO).expect("OFF -> INIT");
        }
        sim
    }

    fn transmit(&mut self, from: usize) {
        let now = self.now;
        while self.ends[from].wire_free_at <= now {
            let Some(mut item) = self.ends[from].next_item(now, &self.cfg, &mut self.rng) else { break };
            let ser = self.cfg.rate.time_for_bytes(item.wire_len() as u64);
            self.ends[from].wire_free_at = now.max(self.ends[from].wire_free_at).saturating_add(ser);
            let arrive = self.ends[from].wire_free_at.saturating_add(self.cfg.delay);
            match &mut item {
                WireItem::Ctl(b) => {
                    if self.rng.chance(self.cfg.ctl_loss_rate) {
                        self.ends[from].stats.ctl_lost += 1;
                        continue;
                    }
                    if self.rng.chance(self.cfg.ctl_corrupt_rate) {
                        self.ends[from].stats.ctl_corrupted += 1;
                        let bit = self.rng.below(64) as usize;
                        b[bit / 8] ^= 1 << (bit % 8);
                    }
                }
                WireItem::Frame { bytes, .. } => {
                    if self.rng.chance(self.cfg.frame_error_rate) {
                        self.ends[from].stats.corrupted += 1;
                        let bit = self.rng.below(bytes.len() as u64 * 8) as usize;
                        bytes[bit / 8] ^= 1 << (bit % 8);
                    }
                }
            }
            self.in_flight[1 - from].push_back((arrive, item));
        }
    }

    /// Advances the simulation by one event. Returns `false` once both directions are done (it
    /// still advances time, so periodic control traffic goes on).
    pub fn step(&mut self) -> bool {
        let now = self.now;
        for to in 0..2 {
            while self.in_flight[to].front().is_some_and(|(t, _)| *t <= now) {
                let (_, item) = self.in_flight[to].pop_front().expect("checked");
                self.ends[to].receive(now, item, self.cfg.exactly_once);
            }
        }
        for i in 0..2 {
            self.ends[i].llr_tx.handle_timeout(now);
            self.ends[i].drain(now, &self.cfg);
            self.transmit(i);
        }
        let done = self.ends.iter().all(|e| e.idle(&self.cfg)) && self.in_flight.iter().all(|q| q.is_empty());
        let next = [
            self.in_flight[0].front().map(|(t, _)| *t),
            self.in_flight[1].front().map(|(t, _)| *t),
            self.ends[0].wake(now),
            self.ends[1].wake(now),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now.saturating_add(Duration::from_micros(1)));
        self.now = next.max(now.saturating_add(Duration::from_nanos(1)));
        !done
    }

    /// Runs to completion (or `limit` of simulated time) and reports.
    pub fn run(&mut self, limit: Duration) -> SimReport {
        let end = Instant::ZERO.saturating_add(limit);
        let mut running = true;
        while self.now < end && running {
            running = self.step();
        }
        let mut r = self.report();
        r.completed = !running;
        r
    }

    /// Keeps the link running for `d` more simulated time, done or not.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now.saturating_add(d);
        while self.now < end {
            self.step();
        }
    }

    /// Totals so far.
    pub fn report(&self) -> SimReport {
        let mut r = SimReport { elapsed: self.now.saturating_duration_since(Instant::ZERO), ..Default::default() };
        for e in &self.ends {
            r.delivered += e.stats.delivered;
            r.replays += e.llr_tx.stats().replays_started;
            r.frames_replayed += e.llr_tx.stats().frames_replayed;
            r.nacks += e.llr_rx.stats().nack_tx;
            r.corrupted += e.stats.corrupted;
            r.ctl_damaged += e.stats.ctl_lost + e.stats.ctl_corrupted;
            r.credit_stalls += e.stats.credit_stalls;
            r.credits_recovered += e.cbfc_rx.stats().credits_recovered;
            r.flushes += e.llr_tx.stats().flushes;
            r.lost += e.stats.offered;
        }
        r.lost -= r.delivered;
        r
    }
}
