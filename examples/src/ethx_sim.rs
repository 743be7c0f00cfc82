//! Two GPUs over one lossy Ethernet link running the whole `ethx-paxi` stack: AXI loads and
//! stores → header compression and aggregation → RC Link TYPE1 go-back-N → PRI frames with an
//! ICRC → a wire that loses, duplicates, delays (reorders) and corrupts frames → and back up.
//!
//! GPU A issues loads and stores of 64, 128 and 256 bytes to random addresses in GPU B's memory
//! (16 AXI IDs, at most [`EthxSimConfig::outstanding`] in flight); GPU B answers each in the
//! order it arrives, with read data made from the address. The simulation checks, as it runs,
//! that B receives every request exactly once and in the order A issued it, with the data A
//! wrote, and that A receives every response exactly once, in order, with the data B made.
//! Time advances in steps of [`STEP_NS`]; each direction of the link carries
//! [`EthxSimConfig::gbps`].
//!
//! With [`EthxSimConfig::link_layer`] the frames travel over a `linklayer::link::Link` at each
//! end (UE LLR and CBFC, VC 0 lossless): the link's replay recovers a corrupted or lost frame
//! before RC Link's end-to-end retry sees it, and CBFC holds frames while the peer's buffer is
//! full. A point-to-point link neither reorders nor duplicates, so those knobs are then unused;
//! the link-layer control ordered sets are lost at the same rate as frames.

use crate::link_sim::Rng;
use ethx_paxi::aggregate::{Aggregator, AggregatorConfig, Deaggregator, stream_of};
use ethx_paxi::axi::{AddrReq, Channel, Resp, Size, WriteResp};
use ethx_paxi::compress::{StreamKey, Txn};
use ethx_paxi::frame::{self, FrameConfig, Outer, PacketError};
use ethx_paxi::framing::Pri;
use ethx_paxi::paxi::ChannelWidths;
use ethx_paxi::qp::{QpEvent, Requester, RequesterConfig, Responder, ResponderConfig, Verdict};
use ethx_paxi::rclink::RhKind;
use linklayer::cbfc::{Vc, VcMode};
use linklayer::link::{Link, LinkConfig, Received};
use linklayer::llr::{FrameCheck, LlrSizing};
use linklayer::wire::{CTLOS_LEN, CtlOs};
use linklayer::{Duration, Instant, LinkRate};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Simulated time per step.
pub const STEP_NS: u64 = 50;
const W: ChannelWidths = ChannelWidths::EXAMPLE;
const MAX_FRAME: usize = 4096;
/// Compressed frames fill an RC Link TYPE1 payload (at most 1344 bytes).
const MAX_PAYLOAD: usize = 1344;

/// The knobs of one run.
#[derive(Clone, Debug)]
pub struct EthxSimConfig {
    /// Seed of the workload and the wire.
    pub seed: u64,
    /// Transactions GPU A issues.
    pub transactions: u64,
    /// Transactions in flight at most (AXI outstanding).
    pub outstanding: usize,
    /// Probability a frame is lost, each direction.
    pub loss: f64,
    /// Probability a frame arrives with a bit flipped (the ICRC drops it).
    pub corrupt: f64,
    /// Probability a frame arrives twice.
    pub duplicate: f64,
    /// Probability a frame is held back by `reorder_ns` (so later frames overtake it).
    pub reorder: f64,
    /// How long a held-back frame waits.
    pub reorder_ns: u64,
    /// One-way latency.
    pub latency_ns: u64,
    /// Link rate each way, Gb/s.
    pub gbps: u64,
    /// Aggregation: transactions per frame at most.
    pub per_frame: u16,
    /// Aggregation: the time budget.
    pub budget_ns: u64,
    /// Carry the frames over UE LLR + CBFC (`linklayer::link::Link`) at each end.
    pub link_layer: bool,
}

impl EthxSimConfig {
    /// A 400 Gb/s link with 1 µs latency, 256 outstanding transactions, 16 per frame within
    /// 200 ns, losing `loss` of the frames each way and corrupting, duplicating and reordering a
    /// fifth of that each.
    pub fn new(seed: u64, transactions: u64, loss: f64) -> Self {
        EthxSimConfig {
            seed,
            transactions,
            outstanding: 256,
            loss,
            corrupt: loss / 5.0,
            duplicate: loss / 5.0,
            reorder: loss / 5.0,
            reorder_ns: 500,
            latency_ns: 1000,
            gbps: 400,
            per_frame: 16,
            budget_ns: 200,
            link_layer: false,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EthxSimReport {
    /// Transactions completed (response received and checked).
    pub completed: u64,
    /// Simulated time, ns.
    pub elapsed_ns: u64,
    /// RC Link packets sent the first time, both directions.
    pub packets: u64,
    /// Packets retransmitted (go-back-N), both directions.
    pub retransmitted: u64,
    /// NAKs received, both directions.
    pub naks: u64,
    /// Retry timeouts, both directions.
    pub timeouts: u64,
    /// Frames the wire lost, corrupted, duplicated, reordered.
    pub lost: u64,
    /// See `lost`.
    pub corrupted: u64,
    /// See `lost`.
    pub duplicated: u64,
    /// See `lost`.
    pub reordered: u64,
    /// Frames the ICRC (or the framing) refused.
    pub refused: u64,
    /// Frames the link layer replayed (with [`EthxSimConfig::link_layer`]).
    pub link_replayed: u64,
    /// Data bytes the transactions moved (useful bytes).
    pub useful_bytes: u64,
    /// Bytes on the wire both ways, with preamble, IFG, FCS and the 64-byte minimum.
    pub wire_bytes: u64,
}

impl EthxSimReport {
    /// Useful bytes over wire bytes.
    pub fn efficiency(&self) -> f64 {
        self.useful_bytes as f64 / self.wire_bytes.max(1) as f64
    }
}

/// The data of `len` bytes at `addr` (what B's memory holds, and what A writes).
fn pattern(addr: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| ((addr + i) >> 3) as u8 ^ (addr >> 12) as u8).collect()
}

/// What travels on the wire: the first byte says which.
const RAW: u8 = 0;
/// An LLR frame: tag, 4-byte sequence number, a byte 1 when the FCS would fail, the frame.
const LLR_FRAME: u8 = 1;
/// A link-layer control ordered set: tag, its bytes.
const CTL: u8 = 2;

/// One direction of the wire: frames in flight by arrival time.
#[derive(Default)]
struct Wire {
    queue: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
    order: u64,
    busy_until: u64,
}

/// One GPU's stack.
struct Gpu {
    peer: u32,
    agg: Aggregator<4, 4, MAX_FRAME>,
    deagg: Deaggregator<4>,
    requester: Requester<Vec<u8>, 512>,
    responder: Responder,
    /// The link layer, if on, and a frame it had no room for yet.
    link: Option<Link<Vec<u8>, 1024>>,
    link_staged: Option<Vec<u8>>,
}

impl Gpu {
    fn new(peer: u32, qp: u16, peer_qp: u16, cfg: &EthxSimConfig) -> Self {
        let agg_cfg = AggregatorConfig {
            mtu: MAX_PAYLOAD,
            max_per_frame: cfg.per_frame,
            budget: Duration::from_nanos(cfg.budget_ns),
        };
        // End to end, time out well after the link layer's own replay would have recovered.
        let retry_timeout = Duration::from_micros(if cfg.link_layer { 200 } else { 10 });
        let rq = RequesterConfig { max_retries: 15, retry_timeout, ..RequesterConfig::new(peer_qp) };
        let rs = ResponderConfig { ack_every: 16, ..ResponderConfig::new(qp, peer_qp) };
        Gpu {
            peer,
            agg: Aggregator::new(W, agg_cfg).unwrap(),
            deagg: Deaggregator::new(W).unwrap(),
            requester: Requester::new(rq, vec![0u8; 512 * MAX_PAYLOAD]).unwrap(),
            responder: Responder::new(rs).unwrap(),
            link: cfg.link_layer.then(|| new_link(cfg, [2, 0, 0, 0, 0, peer as u8])),
            link_staged: None,
        }
    }

    /// Moves aggregated frames into the requester as its window allows.
    fn stage(&mut self, now: Instant) {
        while self.requester.can_send(MAX_PAYLOAD) {
            let Some(out) = self.agg.poll_transmit(now) else { return };
            self.requester.send(now, out.bytes).expect("can_send said there is room");
        }
    }

    /// Emits ACKs, then packets, onto `wire` while the link is free this step.
    fn transmit(&mut self, now: u64, cfg: &EthxSimConfig, wire: &mut Wire, rng: &mut Rng, report: &mut EthxSimReport) {
        let config = FrameConfig { icrc: true, ..FrameConfig::default() };
        let outer = Outer::Pri(Pri { network_device_id: 0, device_address: [self.peer as u8; 10] });
        let t = Instant::from_nanos(now);
        let mut buf = [0u8; MAX_FRAME];
        if let Some(link) = &mut self.link {
            // RC Link packets into the link while it has credits and room, then its frames and
            // control ordered sets onto the wire.
            loop {
                if self.link_staged.is_none() {
                    let n = if let Some(ack) = self.responder.poll_ack(t) {
                        frame::emit(&config, &outer, &ack, &[], &mut buf).unwrap()
                    } else if let Some(out) = self.requester.poll_transmit(t) {
                        frame::emit(&config, &outer, &out.rh, out.payload, &mut buf).unwrap()
                    } else {
                        break;
                    };
                    self.link_staged = Some(buf[..n].to_vec());
                }
                let Some(frame) = &self.link_staged else { break };
                match link.send(t, Vc::new(0).unwrap(), frame) {
                    Ok(_) => self.link_staged = None,
                    Err(_) => break,
                }
            }
            while wire.busy_until <= now + STEP_NS {
                let Some(out) = link.poll_transmit(t) else { break };
                let n = out.frame.len();
                let mut item = vec![LLR_FRAME];
                item.extend_from_slice(&out.seq.value().to_be_bytes());
                item.push(0);
                item.extend_from_slice(out.frame);
                put(wire, now, n, &item, cfg, rng, report);
            }
            while let Some(ctl) = link.poll_control(t) {
                let mut item = vec![CTL; 1 + CTLOS_LEN];
                ctl.emit(&mut item[1..]).unwrap();
                // An ordered set, not a frame: its own bytes, no preamble, gap or minimum.
                report.wire_bytes += CTLOS_LEN as u64;
                send(wire, wire.busy_until.max(now) + cfg.latency_ns, &item, cfg, rng, report);
            }
            return;
        }
        loop {
            if wire.busy_until > now + STEP_NS {
                return;
            }
            let n = if let Some(ack) = self.responder.poll_ack(t) {
                frame::emit(&config, &outer, &ack, &[], &mut buf).unwrap()
            } else if let Some(out) = self.requester.poll_transmit(t) {
                frame::emit(&config, &outer, &out.rh, out.payload, &mut buf).unwrap()
            } else {
                return;
            };
            let mut item = vec![RAW];
            item.extend_from_slice(&buf[..n]);
            put(wire, now, n, &item, cfg, rng, report);
        }
    }
}

/// Serialises a wire item of `n` frame bytes at the link rate and sends it.
fn put(
    wire: &mut Wire,
    now: u64,
    n: usize,
    item: &[u8],
    cfg: &EthxSimConfig,
    rng: &mut Rng,
    report: &mut EthxSimReport,
) {
    let on_wire = crate::ethx_efficiency::wire_bytes(n) as u64;
    report.wire_bytes += on_wire;
    let start = wire.busy_until.max(now);
    wire.busy_until = start + on_wire * 8 / cfg.gbps;
    send(wire, wire.busy_until + cfg.latency_ns, item, cfg, rng, report);
}

/// One end of the UE link layer: VC 0 lossless, the software profile sized for this link.
fn new_link(cfg: &EthxSimConfig, mac: [u8; 6]) -> Link<Vec<u8>, 1024> {
    let rate = LinkRate::new(cfg.gbps * 1_000_000_000).unwrap();
    let sizing = LlrSizing::software(Duration::from_nanos(4 * cfg.latency_ns + 2000), rate).with_frame_slots(1024);
    let config = LinkConfig::software(&sizing, rate, mac);
    let mut link = Link::new(config, vec![0u8; sizing.replay_bytes as usize], 0).unwrap();
    link.set_vc_mode(Instant::ZERO, Vc::new(0).unwrap(), VcMode::Lossless { credit_limit: Some(1024) }).unwrap();
    link.enable(Instant::ZERO).unwrap();
    link
}

/// Puts a frame on the wire, with the configured damage.
fn send(wire: &mut Wire, at: u64, frame: &[u8], cfg: &EthxSimConfig, rng: &mut Rng, report: &mut EthxSimReport) {
    if rng.chance(cfg.loss) {
        report.lost += 1;
        return;
    }
    let mut bytes = frame.to_vec();
    if rng.chance(cfg.corrupt) {
        let bit = 8 + rng.next_u64() as usize % ((bytes.len() - 1) * 8);
        bytes[bit / 8] ^= 1 << (bit % 8);
        if bytes[0] == LLR_FRAME {
            bytes[5] = 1; // the receiver's FCS check fails
        }
        report.corrupted += 1;
    }
    let mut arrive = at;
    if cfg.link_layer {
        wire.order += 1;
        wire.queue.push(Reverse((arrive, wire.order, bytes)));
        return;
    }
    if rng.chance(cfg.reorder) {
        arrive += cfg.reorder_ns;
        report.reordered += 1;
    }
    if rng.chance(cfg.duplicate) {
        report.duplicated += 1;
        wire.order += 1;
        wire.queue.push(Reverse((arrive + 10, wire.order, bytes.clone())));
    }
    wire.order += 1;
    wire.queue.push(Reverse((arrive, wire.order, bytes)));
}

/// The whole simulation.
pub struct EthxSim {
    /// The knobs.
    pub cfg: EthxSimConfig,
}

impl EthxSim {
    /// A simulation of `cfg`.
    pub fn new(cfg: EthxSimConfig) -> Self {
        EthxSim { cfg }
    }

    /// Runs until every transaction completed; panics when an invariant breaks or after
    /// `max_steps`.
    pub fn run(&mut self, max_steps: u64) -> EthxSimReport {
        let cfg = self.cfg.clone();
        let mut rng = Rng::new(cfg.seed);
        let mut wire_rng = Rng::new(cfg.seed ^ 0xDEAD_BEEF);
        let mut report = EthxSimReport::default();
        let mut a = Gpu::new(2, 1, 2, &cfg);
        let mut b = Gpu::new(1, 2, 1, &cfg);
        let (mut ab, mut ba) = (Wire::default(), Wire::default());
        let to_b = StreamKey { peer: 2, vc: 0 };
        let to_a = StreamKey { peer: 1, vc: 1 };
        let config = FrameConfig { icrc: true, ..FrameConfig::default() };
        // A's requests not yet seen by B, and not yet answered, in issue order.
        let mut unseen: VecDeque<AddrReq> = VecDeque::new();
        let mut unanswered: VecDeque<AddrReq> = VecDeque::new();
        // B's responses waiting for room in its aggregator.
        let mut replies: VecDeque<(AddrReq, Vec<u8>)> = VecDeque::new();
        let mut next_request: Option<(AddrReq, Vec<u8>)> = None;
        let mut issued = 0u64;
        let sizes = [64u16, 128, 256];
        for step in 0..max_steps {
            let now_ns = step * STEP_NS;
            let now = Instant::from_nanos(now_ns);
            // GPU A issues.
            while issued < cfg.transactions && unanswered.len() < cfg.outstanding {
                let req = next_request.take().unwrap_or_else(|| {
                    let r = rng.next_u64();
                    let size = sizes[(r % 3) as usize] as usize;
                    let addr = (rng.next_u64() % (1 << 34)) & !255;
                    let channel = if r >> 8 & 3 == 0 { Channel::Write } else { Channel::Read };
                    let beats = (size / 64) as u16;
                    let axi = AddrReq {
                        id: (r >> 16) as u32 & 15,
                        ..AddrReq::incr(channel, addr, beats, Size::from_bytes(64).unwrap())
                    };
                    let data = if channel == Channel::Write { pattern(addr, size) } else { Vec::new() };
                    (axi, data)
                });
                let txn = match req.0.channel {
                    Channel::Read => Txn::Read(req.0),
                    Channel::Write => Txn::Write { req: req.0, data: &req.1, strobes: None },
                };
                if a.agg.push(now, to_b, &txn).is_err() {
                    next_request = Some(req);
                    break;
                }
                unseen.push_back(req.0);
                unanswered.push_back(req.0);
                issued += 1;
            }
            // GPU B answers.
            while let Some((axi, data)) = replies.front() {
                let txn = match axi.channel {
                    Channel::Read => Txn::ReadData { id: axi.id, resp: Resp::Okay, last: true, user: 0, data },
                    Channel::Write => Txn::WriteResp(WriteResp { id: axi.id, resp: Resp::Okay, user: 0 }),
                };
                if b.agg.push(now, to_a, &txn).is_err() {
                    break;
                }
                replies.pop_front();
            }
            for (gpu, wire) in [(&mut a, &mut ab), (&mut b, &mut ba)] {
                if let Some(link) = &mut gpu.link {
                    link.handle_timeout(now);
                    while link.poll_event().is_some() {}
                }
                gpu.stage(now);
                gpu.transmit(now_ns, &cfg, wire, &mut wire_rng, &mut report);
                gpu.requester.handle_timeout(now);
                assert_eq!(gpu.requester.poll_event(), None::<QpEvent>, "a QP failed");
            }
            // Arrivals.
            for (gpu, wire, from_a) in [(&mut b, &mut ab, true), (&mut a, &mut ba, false)] {
                while wire.queue.peek().is_some_and(|Reverse((t, ..))| *t <= now_ns) {
                    let Reverse((_, _, item)) = wire.queue.pop().unwrap();
                    let bytes: &[u8] = match (item[0], &mut gpu.link) {
                        (RAW, _) => &item[1..],
                        (CTL, Some(link)) => {
                            if let Ok((ctl, _)) = CtlOs::parse(&item[1..]) {
                                let _ = link.handle_control(now, ctl);
                            }
                            continue;
                        }
                        (LLR_FRAME, Some(link)) => {
                            let seq = u32::from_be_bytes(item[1..5].try_into().unwrap());
                            let check = if item[5] == 0 { FrameCheck::Good } else { FrameCheck::Bad };
                            let vc = Vc::new(0).unwrap();
                            if link.handle_frame(now, Some(seq), check, vc, &item[6..]) != Received::Deliver {
                                continue;
                            }
                            // The application drains the frame at once.
                            link.on_drained(vc, item.len() - 6).unwrap();
                            &item[6..]
                        }
                        _ => panic!("a link-layer item without a link"),
                    };
                    let packet = match frame::parse(&config, frame::Form::Pri, bytes) {
                        Ok(p) => p,
                        Err(
                            PacketError::BadIcrc | PacketError::NotRcLink | PacketError::BadLength | PacketError::Rh(_),
                        ) => {
                            report.refused += 1;
                            continue;
                        }
                        Err(e) => panic!("unexpected frame error {e:?}"),
                    };
                    if !matches!(packet.rh.kind, RhKind::Send { .. }) {
                        gpu.requester.handle_ack(now, &packet.rh);
                        continue;
                    }
                    if gpu.responder.handle_send(now, &packet.rh) != Verdict::Deliver {
                        continue;
                    }
                    let peer = if from_a { 1 } else { 2 };
                    assert!(stream_of(peer, packet.payload).is_some());
                    let records = gpu.deagg.open(peer, packet.payload).expect("an in-order frame decodes");
                    for txn in records {
                        if from_a {
                            let expect = unseen.pop_front().expect("a request B was not owed");
                            let (axi, data) = match txn {
                                Txn::Read(r) => (r, None),
                                Txn::Write { req, data, strobes: None } => (req, Some(data)),
                                other => panic!("B received {other:?}"),
                            };
                            assert_eq!(axi, expect, "requests arrive once, in order");
                            let bytes = axi.total_bytes() as usize;
                            if let Some(d) = data {
                                assert_eq!(d, pattern(axi.addr, bytes), "store data intact");
                                replies.push_back((axi, Vec::new()));
                            } else {
                                replies.push_back((axi, pattern(axi.addr, bytes)));
                            }
                        } else {
                            let expect = unanswered.pop_front().expect("a response A was not owed");
                            match txn {
                                Txn::ReadData { id, resp: Resp::Okay, last: true, data, .. } => {
                                    assert_eq!((expect.channel, id), (Channel::Read, expect.id));
                                    assert_eq!(
                                        data,
                                        pattern(expect.addr, expect.total_bytes() as usize),
                                        "load data intact"
                                    );
                                }
                                Txn::WriteResp(b) => assert_eq!((expect.channel, b.id), (Channel::Write, expect.id)),
                                other => panic!("A received {other:?}"),
                            }
                            report.completed += 1;
                            report.useful_bytes += expect.total_bytes() as u64;
                        }
                    }
                }
            }
            if report.completed == cfg.transactions {
                report.elapsed_ns = now_ns;
                for gpu in [&a, &b] {
                    if let Some(link) = &gpu.link {
                        report.link_replayed += link.llr_tx().stats().frames_replayed;
                    }
                    let s = gpu.requester.stats();
                    report.packets += s.sent;
                    report.retransmitted += s.retransmitted;
                    report.naks += s.naks;
                    report.timeouts += s.timeouts;
                }
                return report;
            }
        }
        panic!("not done after {max_steps} steps: {report:?}, {} unanswered", unanswered.len());
    }
}
