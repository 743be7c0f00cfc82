//! Two accelerators joined by one UALink 200 link, each port one `ualink_flit::port::UpliPort`:
//! what an embedder writes when it uses the port object instead of wiring the TL and DL itself
//! (compare [`crate::ualink_sim`], which drives the lower objects by hand).
//!
//! Each accelerator issues loads (reads of 4 to 256 bytes), stores (partial writes and
//! WriteFulls) and atomics to the other, as many at once as its tags allow; its completer answers
//! each request a few flit times after it arrived, from a memory model (reads return bytes derived
//! from the address). The wire delays each flit, loses some (reported to the receiver as lost) and
//! flips a bit in others; at chosen flit times an RS fault takes the link down, and the management
//! layer starts each port again when it says so (`Waiting::Start`: both ends quiet).
//!
//! Checked as it runs (a broken invariant panics): every request ends exactly once, answered or
//! failed; it arrives at most once, with its data intact; read data matches the memory model.
//! Without link downs, every request is answered.

use crate::link_sim::Rng;
use std::collections::{HashMap, HashSet, VecDeque};
use ualink_flit::dl::link::REPLAY_ENTRY_LEN;
use ualink_flit::dl::{FLIT_LEN, Transmitted};
use ualink_flit::port::{Event, Handle, PortConfig, UpliPort, Waiting, request_lanes, response_lanes};
use ualink_flit::upli::{AtomicOp, OpSize, Request, Status};

/// The simulation's knobs.
#[derive(Clone, Debug)]
pub struct PortSimConfig {
    /// Seed of everything random.
    pub seed: u64,
    /// Requests each accelerator issues.
    pub requests: u64,
    /// Probability that a flit is lost in the PCS.
    pub loss: f64,
    /// Probability that a flit gets one bit flipped (the CRC catches it).
    pub bit_errors: f64,
    /// One-way delay in flit times.
    pub delay: usize,
    /// Flit times a completer holds a request before answering it.
    pub service_delay: u64,
    /// Flit times at which accelerator 1's RS reports a fault (for five flit times).
    pub link_downs: Vec<u64>,
}

impl PortSimConfig {
    /// A 20-flit-time link each way (a 1 µs round trip), no damage, no link down.
    pub fn new(seed: u64, requests: u64) -> Self {
        PortSimConfig {
            seed,
            requests,
            loss: 0.0,
            bit_errors: 0.0,
            delay: 20,
            service_delay: 4,
            link_downs: Vec::new(),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct PortSimReport {
    /// Flit times simulated.
    pub flit_times: u64,
    /// Requests answered, both accelerators.
    pub answered: u64,
    /// Requests failed by a link down.
    pub failed: u64,
    /// Requests a completer held when the link went down.
    pub dropped: u64,
    /// Times a port's link left DL Up.
    pub link_downs: u64,
    /// DL replays started, both ports.
    pub replays: u64,
    /// Data bytes delivered (request and read data).
    pub data_bytes: u64,
}

/// The bytes accelerator `acc` writes at `addr`.
fn written(acc: u16, addr: u64, len: u64) -> Vec<u8> {
    (0..len).map(|i| (u64::from(acc) * 97 + addr * 3 + i * 11) as u8).collect()
}

/// The bytes accelerator `acc` holds at `addr`.
fn memory(acc: u16, addr: u64, len: u64) -> Vec<u8> {
    (0..len).map(|i| ((addr + i) * 41 + u64::from(acc)) as u8).collect()
}

/// One accelerator: its port and what it has to check.
struct Accelerator {
    acc: u16,
    port: UpliPort,
    issued: u64,
    /// Outstanding requests by tag: their issue number.
    outstanding: HashMap<u16, u64>,
    ended: Vec<u8>,
    /// Requests held by the completer, with the flit time they may be answered.
    held: VecDeque<(u64, Handle, Request)>,
    arrived: HashSet<u64>,
}

/// Two accelerators and the wire between them.
pub struct PortSim {
    cfg: PortSimConfig,
    accs: [Accelerator; 2],
    wire: [VecDeque<Option<[u8; FLIT_LEN]>>; 2],
    rng: Rng,
    now: u64,
    report: PortSimReport,
}

impl PortSim {
    /// Both ports built and started.
    pub fn new(cfg: PortSimConfig) -> Self {
        let accs = [1u16, 2].map(|acc| {
            let mut port = UpliPort::new(PortConfig::new(acc), [0u8; REPLAY_ENTRY_LEN * 64]).expect("valid settings");
            port.start().expect("a new port starts");
            Accelerator {
                acc,
                port,
                issued: 0,
                outstanding: HashMap::new(),
                ended: vec![0; cfg.requests as usize],
                held: VecDeque::new(),
                arrived: HashSet::new(),
            }
        });
        let idle = |n| (0..n).map(|_| None).collect();
        PortSim {
            wire: [idle(cfg.delay), idle(cfg.delay)],
            rng: Rng::new(cfg.seed),
            accs,
            cfg,
            now: 0,
            report: Default::default(),
        }
    }

    /// Request `seq` of accelerator `d`: its kind drawn, its address carrying its number.
    fn make(rng: &mut Rng, d: usize, seq: u64) -> Request {
        let base = seq << 8 | (d as u64) << 48;
        let bytes = 4 * (1 + rng.below(64));
        let off = 4 * rng.below((256 - bytes) / 4 + 1);
        let req = match rng.below(8) {
            0..=2 => Request::read(base + off, bytes as u16),
            3 | 4 => Request::write(base + off, bytes as u16),
            5 | 6 => {
                let beats = 1 + rng.below(4);
                Request::write_full(base + 64 * rng.below(5 - beats), 64 * beats as u16)
            }
            _ => Request::atomic(AtomicOp::Add, OpSize::Bits64, base + 8 * rng.below(32), true),
        };
        req.expect("sizes within the rules").to_acc(2 - d as u16)
    }

    /// One flit time.
    fn step(&mut self) {
        let now = self.now;
        let faulted = self.cfg.link_downs.iter().any(|&t| (t..t + 5).contains(&now));
        self.accs[0].port.rs_fault(faulted);
        for a in &mut self.accs {
            // Management: a port whose link is down starts again once both ends are quiet.
            if a.port.waiting_on() == Some(Waiting::Start) {
                a.port.start().expect("a port waiting to start starts");
            }
        }
        for d in 0..2 {
            let a = &mut self.accs[d];
            while a.issued < self.cfg.requests && a.port.is_up() {
                let req = Self::make(&mut self.rng, d, a.issued);
                let data = written(a.acc, req.addr, request_lanes(&req).len() as u64);
                let Ok(tag) = a.port.request(req, &data) else { break };
                a.outstanding.insert(tag, a.issued);
                a.issued += 1;
            }
            while a.held.front().is_some_and(|&(at, _, _)| at <= now) {
                let Some((_, h, req)) = a.held.pop_front() else { break };
                let data = memory(a.acc, req.addr, response_lanes(&req).len() as u64);
                // Refused only for a request a link down dropped; its Dropped event follows.
                let _ = a.port.respond(h, Status::Okay, &data);
            }
            let mut flit = [0u8; FLIT_LEN];
            let sent = matches!(a.port.poll_transmit(now, &mut flit), Transmitted::Flit { .. });
            self.wire[d].push_back(sent.then_some(flit));
        }
        for d in 0..2 {
            let port = &mut self.accs[d].port;
            match self.wire[1 - d].pop_front().flatten() {
                None => port.handle_idle(),
                Some(_) if self.rng.chance(self.cfg.loss) => _ = port.handle_lost(),
                Some(mut f) => {
                    if self.rng.chance(self.cfg.bit_errors) {
                        let bit = self.rng.below(FLIT_LEN as u64 * 8) as usize;
                        f[bit / 8] ^= 1 << (bit % 8);
                    }
                    port.handle_flit(&f);
                }
            }
        }
        for d in 0..2 {
            self.events(d);
        }
        self.now += 1;
    }

    /// Takes accelerator `d`'s events and checks them.
    fn events(&mut self, d: usize) {
        let peer = 2 - d as u16;
        let (delay, report) = (self.cfg.service_delay, &mut self.report);
        let a = &mut self.accs[d];
        while let Some(ev) = a.port.poll_event() {
            match ev {
                Event::Request { handle, req, data } => {
                    let seq = (req.addr & ((1 << 48) - 1)) >> 8;
                    assert!(a.arrived.insert(seq), "request {seq} of accelerator {peer} arrived twice");
                    let len = request_lanes(&req).len() as u64;
                    assert_eq!(data.bytes(), written(peer, req.addr, len), "request data intact");
                    report.data_bytes += len;
                    a.held.push_back((self.now + delay, handle, req));
                }
                Event::Response { tag, req, status, data } => {
                    let seq = a.outstanding.remove(&tag).expect("a response to an outstanding request");
                    assert_eq!(status, Status::Okay);
                    let len = response_lanes(&req).len() as u64;
                    assert_eq!(data.bytes(), memory(peer, req.addr, len), "read data intact");
                    report.data_bytes += len;
                    a.ended[seq as usize] += 1;
                    report.answered += 1;
                }
                Event::Failed { tag, .. } => {
                    let seq = a.outstanding.remove(&tag).expect("a failure of an outstanding request");
                    a.ended[seq as usize] += 1;
                    report.failed += 1;
                }
                Event::Dropped { handle, .. } => {
                    a.held.retain(|&(_, h, _)| h != handle);
                    report.dropped += 1;
                }
                Event::Link { .. } | Event::Service(_) => {}
            }
        }
    }

    /// Runs until every request has ended (or `max` flit times), then checks and reports.
    pub fn run(&mut self, max: u64) -> PortSimReport {
        let done = |s: &Self| s.accs.iter().all(|a| a.issued == s.cfg.requests && a.outstanding.is_empty());
        while !done(self) && self.now < max {
            self.step();
        }
        let waiting: Vec<_> = self.accs.iter().map(|a| a.port.waiting_on()).collect();
        assert!(done(self), "stalled at flit time {}: {waiting:?}", self.now);
        for a in &self.accs {
            assert!(a.ended.iter().all(|&e| e == 1), "accelerator {}: every request ended exactly once", a.acc);
        }
        if self.cfg.link_downs.is_empty() {
            assert_eq!(self.report.failed, 0, "without a link down every request is answered");
        }
        let mut r = self.report.clone();
        r.flit_times = self.now;
        for a in &self.accs {
            r.link_downs += a.port.stats().link_downs;
            r.replays += a.port.link().stats().replays;
        }
        r
    }
}
