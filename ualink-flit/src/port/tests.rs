//! Two ports over a simulated wire: every request kind both ways, exactly once with its data,
//! under loss, corruption, duplication and reordering of flits, link downs, and timeouts.

use super::*;
use crate::tl::credit::Ledger;
use crate::upli::ReadResponse;
use crate::upli::{AtomicOp, OpSize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::vec;
use std::vec::Vec;

/// Eight slots each way, so tags run out under load.
type Port = UpliPort<Vec<u8>, 64, 8>;
const SLOTS: usize = 8;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `true` with probability `ppm` per million.
    fn chance(&mut self, ppm: u64) -> bool {
        self.below(1_000_000) < ppm
    }
}

/// What the wire does to each flit, in parts per million.
#[derive(Clone, Copy, Default)]
struct Faults {
    lost: u64,
    flipped: u64,
    duplicated: u64,
    swapped: u64,
}

/// The bytes accelerator `acc` writes at `addr`.
fn written(acc: u16, addr: u64, len: u64) -> Vec<u8> {
    (0..len).map(|i| (u64::from(acc) * 131 + addr * 7 + i * 13) as u8).collect()
}

/// The bytes accelerator `acc` holds at `addr` (what reads return).
fn memory(acc: u16, addr: u64, len: u64) -> Vec<u8> {
    (0..len).map(|i| ((addr + i) * 29 + u64::from(acc) * 3 + 1) as u8).collect()
}

/// How a request ended at its originator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Answered,
    Failed(Failure),
}

struct Side {
    acc: u16,
    issued: u64,
    /// Outstanding requests by tag: their issue number.
    outstanding: HashMap<u16, u64>,
    ends: HashMap<u64, Vec<End>>,
    /// Requests this side's completer holds, oldest first.
    held: VecDeque<(Handle, Request)>,
    /// Issue numbers of requests that arrived here (each once).
    arrived: HashSet<u64>,
    dropped: u64,
    /// The issue number of the last request reported here.
    last_seq: Option<u64>,
    up_events: Vec<bool>,
    service: Vec<crate::dl::service::ServiceEvent>,
}

struct Pair {
    ports: [Port; 2],
    sides: [Side; 2],
    wire: [VecDeque<Option<[u8; FLIT_LEN]>>; 2],
    now: u64,
    rng: Rng,
    faults: Faults,
    /// Requests each side issues in all, and answers per flit time.
    budget: u64,
    serve_per_flit: usize,
    /// Start a port again once [`Waiting::Start`] (after the first start, done at once).
    auto_start: bool,
    /// Whether each side takes its events every flit time.
    take_events: [bool; 2],
    /// Flit times each side's management takes to start a port that may start, and since when
    /// it may.
    start_delay: [u64; 2],
    may_start: [Option<u64>; 2],
}

fn port(acc: u16) -> Port {
    Port::new(PortConfig::new(acc), vec![0; REPLAY_ENTRY_LEN * 64]).unwrap()
}

impl Pair {
    fn new(seed: u64, budget: u64, faults: Faults) -> Pair {
        let mut p = Pair {
            ports: [port(1), port(2)],
            sides: [1, 2].map(|acc| Side {
                acc,
                issued: 0,
                outstanding: HashMap::new(),
                ends: HashMap::new(),
                held: VecDeque::new(),
                arrived: HashSet::new(),
                dropped: 0,
                last_seq: None,
                up_events: Vec::new(),
                service: Vec::new(),
            }),
            wire: [(0..8).map(|_| None).collect(), (0..8).map(|_| None).collect()],
            now: 0,
            rng: Rng(seed),
            faults,
            budget,
            serve_per_flit: 2,
            auto_start: true,
            take_events: [true; 2],
            start_delay: [0; 2],
            may_start: [None; 2],
        };
        for port in &mut p.ports {
            port.start().unwrap();
        }
        p
    }

    /// A random request from side `d`, numbered `seq` (its address carries the number).
    fn make(&mut self, seq: u64, d: usize) -> (Request, Vec<u8>) {
        let base = (seq << 8) | (d as u64) << 50;
        let r = &mut self.rng;
        let req = match r.below(4) {
            0 => {
                let bytes = 4 * (1 + r.below(64));
                Request::read(base + 4 * r.below((256 - bytes) / 4 + 1), bytes as u16)
            }
            1 => {
                let bytes = 4 * (1 + r.below(64));
                Request::write(base + 4 * r.below((256 - bytes) / 4 + 1), bytes as u16)
            }
            2 => {
                let beats = 1 + r.below(4);
                Request::write_full(base + 64 * r.below(5 - beats), (64 * beats) as u16)
            }
            _ => match r.below(3) {
                0 => Request::atomic(AtomicOp::Add, OpSize::Bits64, base + 8 * r.below(32), r.below(2) == 0),
                // A byte at the start of its DWord (the element's byte enables only).
                1 => Request::atomic(AtomicOp::Set, OpSize::Bits8, base + 4 * r.below(64), r.below(2) == 0),
                // Double operand: 64 bytes of operands at a 32-byte boundary.
                _ => Request::atomic(AtomicOp::Compare, OpSize::Bits32, base + 32 * r.below(8), r.below(2) == 0),
            },
        };
        let req = req.unwrap().to_acc(self.sides[1 - d].acc);
        let data =
            if req.cmd.has_data() { written(self.sides[d].acc, req.addr, window(&req).1 as u64) } else { vec![] };
        (req, data)
    }

    fn issue(&mut self, d: usize) {
        while self.sides[d].issued < self.budget && self.ports[d].is_up() {
            let seq = self.sides[d].issued;
            let (req, data) = self.make(seq, d);
            match self.ports[d].request(req, &data) {
                Ok(tag) => {
                    assert!(self.sides[d].outstanding.insert(tag, seq).is_none(), "a tag in use was given again");
                    self.sides[d].issued += 1;
                }
                Err(Error::Full { .. }) => {
                    assert_eq!(self.sides[d].outstanding.len(), SLOTS, "tags run out only with all in use");
                    return;
                }
                // Isolation Mode, until the link is reset.
                Err(Error::State { .. }) if self.ports[d].is_isolated() => return,
                Err(e) => panic!("request refused: {e}"),
            }
        }
    }

    fn events(&mut self, d: usize) {
        let peer = self.sides[1 - d].acc;
        let side = &mut self.sides[d];
        while let Some(ev) = self.ports[d].poll_event() {
            match ev {
                Event::Link { up } => side.up_events.push(up),
                Event::Service(ev) => side.service.push(ev),
                Event::Request { handle, req, data } => {
                    assert_eq!(req.src, peer);
                    assert_eq!(req.dst, side.acc);
                    let seq = (req.addr & ((1 << 50) - 1)) >> 8;
                    assert!(side.arrived.insert(seq), "request {seq} arrived twice");
                    // Requests are reported in the order they were sent (§2.7.9).
                    assert!(side.last_seq.is_none_or(|l| seq > l), "request {seq} after {:?}", side.last_seq);
                    side.last_seq = Some(seq);
                    if req.cmd.has_data() {
                        let (first, len) = window(&req);
                        assert_eq!(data.bytes(), written(peer, req.addr, len as u64), "request data intact");
                        let en = data.byte_enables();
                        for lane in 0..64 * usize::from(req.data_beats()) {
                            let on = en[lane / 64] >> (lane % 64) & 1 == 1;
                            assert_eq!(on, (first..first + len).contains(&lane), "lane {lane}");
                        }
                    } else {
                        assert!(data.bytes().is_empty());
                    }
                    side.held.push_back((handle, req));
                }
                Event::Response { tag, req, status, data } => {
                    let seq = side.outstanding.remove(&tag).expect("a response to an outstanding request");
                    assert_eq!(status, Status::Okay);
                    assert_eq!(req.tag, tag);
                    if req.response_beats() > 0 {
                        let (first, len) = response_window(&req, req.response_beats());
                        assert_eq!(data.bytes(), memory(peer, req.addr, len as u64), "read data intact");
                        assert!(!data.any_poisoned());
                        // The responder sends zeros in the lanes outside the data, whatever its
                        // slot held before.
                        let outside =
                            data.beats().iter().enumerate().filter(|(l, _)| !(first..first + len).contains(l));
                        assert!(outside.clone().all(|(_, &b)| b == 0), "{:?}", outside.collect::<Vec<_>>());
                    }
                    side.ends.entry(seq).or_default().push(End::Answered);
                }
                Event::Failed { tag, why, .. } => {
                    let seq = side.outstanding.remove(&tag).expect("a failure of an outstanding request");
                    side.ends.entry(seq).or_default().push(End::Failed(why));
                }
                Event::Dropped { handle, .. } => {
                    let before = side.held.len();
                    side.held.retain(|(h, _)| *h != handle);
                    assert_eq!(side.held.len() + 1, before, "a dropped request was held");
                    side.dropped += 1;
                }
            }
        }
    }

    fn serve(&mut self, d: usize) {
        for _ in 0..self.serve_per_flit {
            let Some((h, req)) = self.sides[d].held.pop_front() else { return };
            let len = response_window(&req, req.response_beats()).1 as u64;
            let data = memory(self.sides[d].acc, req.addr, len);
            if let Err(e) = self.ports[d].respond(h, Status::Okay, &data) {
                // A link down dropped it: the Dropped event follows.
                assert_eq!(e, Error::State { needs: "a request this port holds" });
                self.sides[d].held.push_front((h, req));
                return;
            }
            assert!(self.ports[d].respond(h, Status::Okay, &data).is_err(), "a handle answers once");
        }
    }

    /// One flit time.
    fn step(&mut self) {
        for d in 0..2 {
            // Management: a port that may start starts, `start_delay` flit times after it may.
            if self.ports[d].waiting_on() == Some(Waiting::Start) {
                let since = *self.may_start[d].get_or_insert(self.now);
                if self.auto_start && self.now >= since + self.start_delay[d] {
                    self.ports[d].start().unwrap();
                    self.may_start[d] = None;
                }
            } else {
                self.may_start[d] = None;
            }
            self.issue(d);
            self.serve(d);
            let mut out = [0u8; FLIT_LEN];
            let sent = match self.ports[d].poll_transmit(self.now, &mut out) {
                Transmitted::Flit { .. } => Some(out),
                Transmitted::Idle => None,
            };
            self.wire[d].push_back(sent);
        }
        for d in 0..2 {
            let f = self.wire[1 - d].pop_front().flatten();
            let Some(mut f) = f else {
                self.ports[d].handle_idle();
                continue;
            };
            let fl = self.faults;
            if self.rng.chance(fl.duplicated) {
                if let Some(next) = self.wire[1 - d].front_mut() {
                    *next = Some(f);
                }
            } else if self.rng.chance(fl.swapped) {
                if let Some(Some(next)) = self.wire[1 - d].front_mut() {
                    core::mem::swap(next, &mut f);
                }
            }
            if self.rng.chance(fl.lost) {
                self.ports[d].handle_lost();
                continue;
            }
            if self.rng.chance(fl.flipped) {
                let bit = self.rng.below(FLIT_LEN as u64 * 8) as usize;
                f[bit / 8] ^= 1 << (bit % 8);
            }
            self.ports[d].handle_flit(&f);
        }
        for d in 0..2 {
            if self.take_events[d] {
                self.events(d);
            }
        }
        self.now += 1;
    }

    /// Port 1 reads 64 bytes at each `seq << 8`, then `flit_times` pass.
    fn reads(&mut self, seqs: core::ops::Range<u64>, flit_times: u32) {
        for seq in seqs {
            let t = self.ports[0].request(Request::read(seq << 8, 64).unwrap().to_acc(2), &[]).unwrap();
            self.sides[0].outstanding.insert(t, seq);
        }
        for _ in 0..flit_times {
            self.step();
        }
    }

    fn done(&self) -> bool {
        self.sides.iter().all(|s| s.issued == self.budget && s.outstanding.is_empty())
    }

    fn run(&mut self, max: u64) {
        while !self.done() && self.now < max {
            self.step();
        }
        assert!(self.done(), "stalled at flit time {}: {:?}", self.now, self.ports.each_ref().map(|p| p.waiting_on()));
        // Let the last credits return.
        for _ in 0..200 {
            self.step();
        }
    }

    /// Checks that every request ended exactly once, answered, and every credit came back.
    fn check_clean(&self) {
        for (d, s) in self.sides.iter().enumerate() {
            assert_eq!(s.ends.len() as u64, self.budget, "side {d}: every request ended");
            assert!(s.ends.values().all(|e| e == &[End::Answered]), "side {d}: each answered exactly once");
            assert_eq!(self.sides[1 - d].arrived.len() as u64, self.budget, "every request arrived once");
            assert_eq!(self.ports[d].packer().credits.held, advertised(), "side {d}: every credit came back");
            assert!(self.ports[d].is_quiet(), "side {d} is quiet");
            let st = self.ports[d].stats();
            assert_eq!((st.stray_responses, st.tl_errors, st.misrouted), (0, 0, 0));
        }
    }
}

/// The lanes of a request's data.
fn window(req: &Request) -> (usize, usize) {
    request_window(req)
}

/// What a port of `SLOTS` slots advertises.
fn advertised() -> Ledger {
    let mut l = Ledger::EMPTY;
    for (class, n) in
        [(Class::ReqCmd, SLOTS), (Class::ReqData, 4 * SLOTS), (Class::RspCmd, SLOTS), (Class::RspData, 4 * SLOTS)]
    {
        l.add(class, Target::Pool, n as u16).unwrap();
    }
    l
}

#[test]
fn two_ports_exchange_every_kind_exactly_once_with_their_data() {
    let mut p = Pair::new(1, 600, Faults::default());
    p.run(40_000);
    p.check_clean();
    for s in &p.sides {
        assert_eq!(s.up_events, [true], "the link came up once and stayed");
        // Both asked for Channel 0 at once (Figure 6-16, identical requests): it came online.
        let online = crate::dl::service::ServiceEvent::Channel { channel: 0, online: true };
        assert!(s.service.contains(&online), "{:?}", s.service);
    }
    assert_eq!(p.ports[0].stats().requests, 600);
    assert_eq!(p.ports[1].stats().served, 600);
}

#[test]
fn lossy_corrupting_duplicating_reordering_link_keeps_exactly_once() {
    let faults = Faults { lost: 10_000, flipped: 10_000, duplicated: 5_000, swapped: 5_000 };
    for seed in 1..=4 {
        let mut p = Pair::new(seed, 400, faults);
        p.run(200_000);
        p.check_clean();
        assert!(p.ports[0].link().stats().replays > 0, "seed {seed}: the DL replayed");
        assert_eq!(p.ports[0].stats().link_downs, 0, "seed {seed}");
    }
}

/// An [`UpliPort::EMPTY`] is a port with a configuration of zeros in DL Fault: it runs, refuses
/// to start until `init`, and then works like one from `new`.
#[test]
fn an_empty_port_starts_only_after_init() {
    let mut ports = [UpliPort::<[u8; REPLAY_ENTRY_LEN * 8], 8, 4>::EMPTY, UpliPort::EMPTY];
    for port in &mut ports {
        assert!(matches!(port.start(), Err(Error::State { .. })));
    }
    let mut flit = [0u8; FLIT_LEN];
    for now in 0..64 {
        if let Transmitted::Flit { .. } = ports[0].poll_transmit(now, &mut flit) {
            ports[1].handle_flit(&flit);
        }
        let _ = ports[1].poll_transmit(now, &mut flit);
        assert!(ports[0].poll_event().is_none() && ports[1].poll_event().is_none());
    }
    let refused = ports[0].init(PortConfig::new(1 << 10));
    assert!(matches!(refused, Err(Error::BadValue { field: "PhysAccID", .. })));
    assert!(matches!(ports[0].start(), Err(Error::State { .. })), "a refused init changed nothing");
    for (port, acc) in ports.iter_mut().zip([1, 2]) {
        port.init(PortConfig::new(acc)).unwrap();
        assert_eq!(port.config().acc, acc);
    }
    for port in &mut ports {
        port.start().unwrap();
    }
    let [a, b] = &mut ports;
    let tag = a.request(Request::write(0x40, 64).unwrap().to_acc(2), &[7; 64]).unwrap();
    let mut done = false;
    for now in 64..4000 {
        for d in 0..2 {
            let [from, to] = if d == 0 { [&mut *a, &mut *b] } else { [&mut *b, &mut *a] };
            match from.poll_transmit(now, &mut flit) {
                Transmitted::Flit { .. } => {
                    to.handle_flit(&flit);
                }
                Transmitted::Idle => to.handle_idle(),
            }
        }
        while let Some(ev) = b.poll_event() {
            if let Event::Request { handle, .. } = ev {
                b.respond(handle, Status::Okay, &[]).unwrap();
            }
        }
        while let Some(ev) = a.poll_event() {
            done |= matches!(ev, Event::Response { tag: t, status: Status::Okay, .. } if t == tag);
        }
    }
    assert!(done, "the write completed");
}

/// `init` on ports in the middle of their work makes them what `new` makes: the same run
/// afterwards, event for event.
#[test]
fn init_in_place_restarts_as_new() {
    let faults = Faults { lost: 5_000, ..Faults::default() };
    let mut used = Pair::new(3, 200, faults);
    used.run(3_000);
    assert!(used.ports[0].stats().requests > 0, "work in progress");
    let mut fresh = Pair::new(4, 300, faults);
    let mut again = Pair::new(4, 300, faults);
    for (port, acc) in used.ports.iter_mut().zip([1, 2]) {
        port.init(PortConfig::new(acc)).unwrap();
        port.start().unwrap();
    }
    again.ports = used.ports;
    fresh.run(100_000);
    again.run(100_000);
    fresh.check_clean();
    again.check_clean();
    for i in 0..2 {
        assert_eq!(fresh.ports[i].stats(), again.ports[i].stats());
        assert_eq!(fresh.ports[i].link().stats(), again.ports[i].link().stats());
        assert_eq!(fresh.sides[i].ends, again.sides[i].ends);
    }
}

#[test]
fn bring_up_mistakes_are_reported_not_silent() {
    assert!(matches!(
        Port::new(PortConfig::new(1), vec![0; 100]),
        Err(Error::TooSmall { what: "TxReplay storage", need, got: 100 }) if need == 64 * REPLAY_ENTRY_LEN
    ));
    assert!(matches!(Port::new(PortConfig::new(1024), vec![0; 64 * REPLAY_ENTRY_LEN]), Err(Error::BadValue { .. })));
    let mut a = port(1);
    let read = Request::read(0x100, 64).unwrap().to_acc(2);
    assert_eq!(a.waiting_on(), Some(Waiting::Start));
    assert_eq!(a.request(read, &[]), Err(Error::State { needs: "the link enabled (start)" }));
    a.start().unwrap();
    // Data of the wrong length is refused, and takes no tag.
    let short = a.request(Request::write(0x100, 8).unwrap().to_acc(2), &[1, 2, 3]);
    assert!(matches!(short, Err(Error::BadValue { field: "request data length", .. })), "{short:?}");
    assert_eq!(a.outstanding(), 0);
    assert_eq!(a.start(), Err(Error::State { needs: "DL Idle" }));
    assert_eq!(a.waiting_on(), Some(Waiting::Link(Stall::Training)));
    // The partner never starts: the port keeps training and says so.
    let mut b = port(2);
    let mut out = [0u8; FLIT_LEN];
    for now in 0..50 {
        let _ = a.poll_transmit(now, &mut out);
        let _ = b.poll_transmit(now, &mut out);
        b.handle_idle();
        a.handle_idle();
    }
    assert_eq!(a.waiting_on(), Some(Waiting::Link(Stall::Training)));
    assert_eq!(b.waiting_on(), Some(Waiting::Start));
    // Both started: up, then Channel 0 negotiated; a request issued early waits and then goes.
    let mut p = Pair::new(9, 0, Faults::default());
    let tag = p.ports[0].request(read.to_acc(2), &[]).unwrap();
    p.sides[0].outstanding.insert(tag, 0);
    let mut seen = Vec::new();
    for _ in 0..100 {
        p.step();
        seen.push(p.ports[0].waiting_on());
    }
    assert!(seen.contains(&Some(Waiting::Link(Stall::TlChannelClosed))), "{seen:?}");
    assert_eq!(p.sides[0].up_events, [true]);
    assert_eq!(p.sides[1].arrived.len(), 1, "the early request went once the channel was online");
    assert_eq!(p.sides[0].ends[&0], [End::Answered], "tag {tag} was answered");
}

#[test]
fn waiting_for_credits_the_partner_never_advertised() {
    let cfg = PortConfig { negotiate: false, ..PortConfig::new(1) };
    let mut a = Port::new(cfg, vec![0; 64 * REPLAY_ENTRY_LEN]).unwrap();
    let mut b = Port::new(PortConfig { acc: 2, ..cfg }, vec![0; 64 * REPLAY_ENTRY_LEN]).unwrap();
    a.start().unwrap();
    // `b` is enabled by hand, without the port's bring-up: no credits advertised.
    b.dl.rs_fault(false);
    b.dl.enable().unwrap();
    b.dl.set_tl_channel(true, true);
    let mut out = [0u8; FLIT_LEN];
    a.request(Request::read(0x40, 4).unwrap().to_acc(2), &[]).unwrap();
    let mut ports = [a, b];
    for now in 0..40 {
        for d in 0..2 {
            let sent = ports[d].poll_transmit(now, &mut out);
            let y = &mut ports[1 - d];
            match sent {
                Transmitted::Flit { .. } => {
                    y.handle_flit(&out);
                }
                Transmitted::Idle => y.handle_idle(),
            }
        }
    }
    let [a, _] = ports;
    assert!(a.is_up());
    assert_eq!(a.waiting_on(), Some(Waiting::PartnerCredits));
}

#[test]
fn a_link_down_ends_every_request_once_and_the_port_comes_back() {
    for seed in 1..=3 {
        let mut p = Pair::new(seed, 300, Faults::default());
        p.serve_per_flit = 1;
        // Run until requests are outstanding and held on both sides.
        while p.now < 400 || p.sides.iter().any(|s| s.held.is_empty() || s.outstanding.is_empty()) {
            assert!(p.now < 5_000);
            p.step();
        }
        let outstanding: Vec<usize> = p.sides.iter().map(|s| s.outstanding.len()).collect();
        let held_handle = p.sides[0].held[0].0;
        // Port 1's RS reports a fault for a few flit times: both links go down.
        p.ports[0].rs_fault(true);
        for _ in 0..5 {
            p.step();
        }
        // Both links are down, and nothing was started again yet.
        p.auto_start = false;
        p.ports[0].rs_fault(false);
        while p.ports.iter().any(|x| x.waiting_on() != Some(Waiting::Start)) {
            assert!(p.now < 20_000);
            p.step();
        }
        assert!(p.sides.iter().all(|s| s.outstanding.is_empty() && s.held.is_empty()), "seed {seed}");
        assert_eq!(
            p.ports[0].respond(held_handle, Status::Okay, &[]),
            Err(Error::State { needs: "a request this port holds" })
        );
        let failed: Vec<usize> = p
            .sides
            .iter()
            .map(|s| s.ends.values().filter(|e| e.contains(&End::Failed(Failure::LinkDown))).count())
            .collect();
        assert!(failed.iter().zip(&outstanding).all(|(f, o)| f <= o && *f > 0), "{failed:?} {outstanding:?}");
        // Port 1 went down at once, with requests held; its partner went down some flit times
        // later and may have answered all of its own by then.
        assert!(p.sides[0].dropped > 0);
        let read = Request::read(0x40, 4).unwrap().to_acc(2);
        assert!(matches!(p.ports[0].request(read, &[]), Err(Error::State { .. })), "Drop Mode refuses requests");
        // Management recovers the link: each port starts again once its partner is down too.
        p.auto_start = true;
        p.run(100_000);
        for (d, s) in p.sides.iter().enumerate() {
            assert_eq!(s.ends.len() as u64, p.budget, "side {d}: every request ended");
            assert!(s.ends.values().all(|e| e.len() == 1), "side {d}: exactly once");
            assert_eq!(s.up_events, [true, false, true]);
            assert_eq!(p.ports[d].packer().credits.held, advertised(), "side {d}: credits advertised afresh");
            assert_eq!(p.ports[d].stats().link_downs, 1);
        }
    }
}

#[test]
fn a_timed_out_request_keeps_its_tag_until_its_late_response() {
    let mut p = Pair::new(3, 0, Faults::default());
    p.ports[0].cfg.completion_timeout = Some(100);
    p.ports[0].cfg.isolate_on_timeout = false;
    p.serve_per_flit = 0;
    for _ in 0..60 {
        p.step();
    }
    let tag = p.ports[0].request(Request::read(0x80, 8).unwrap().to_acc(2), &[]).unwrap();
    p.sides[0].outstanding.insert(tag, 0);
    // The port's time is the last flit time it was given.
    assert_eq!(p.ports[0].poll_timeout(), Some(p.now - 1 + 100));
    for _ in 0..100 {
        p.step();
    }
    p.ports[0].handle_timeout(p.now);
    p.events(0);
    assert_eq!(p.sides[0].ends[&0], [End::Failed(Failure::Timeout)]);
    assert_eq!(p.ports[0].outstanding(), 1, "the tag waits for the late response");
    assert_eq!(p.ports[0].poll_timeout(), None);
    // The late answer frees the tag and is not reported.
    p.serve_per_flit = 1;
    for _ in 0..60 {
        p.step();
    }
    assert_eq!(p.ports[0].outstanding(), 0);
    assert_eq!(p.ports[0].stats().stray_responses, 0);
    assert_eq!(p.sides[0].ends.len(), 1);
    assert!(!p.ports[0].is_isolated());
}

#[test]
fn respond_checks_its_handle_and_data() {
    let mut p = Pair::new(5, 0, Faults::default());
    p.serve_per_flit = 0;
    for _ in 0..60 {
        p.step();
    }
    let req = Request::read(0x1000 + 60, 8).unwrap().to_acc(2);
    p.ports[0].request(req, &[]).unwrap();
    for _ in 0..40 {
        p.step();
    }
    let (h, _) = p.sides[1].held[0];
    assert_eq!(p.ports[1].request_data(h).map(|d| d.bytes().len()), Some(0));
    // A read of 8 bytes at lane 60 spans two beats; its data is those 8 bytes.
    assert!(matches!(p.ports[1].respond(h, Status::Okay, &[0; 9]), Err(Error::BadValue { .. })));
    // ISOLATE is the TL's own word to its Originator, never sent over a link.
    assert!(matches!(p.ports[1].respond(h, Status::Isolate, &[]), Err(Error::BadValue { .. })));
    // A code reserved for predefined commands is refused, and the request's data is untouched.
    let before = p.ports[1].request_data(h).map(|d| d.bytes().to_vec());
    assert!(matches!(p.ports[1].respond(h, Status::Vendor(0x1), &[1; 8]), Err(Error::BadValue { .. })));
    assert_eq!(p.ports[1].request_data(h).map(|d| d.bytes().to_vec()), before);
    p.ports[1].respond(h, Status::Okay, &[0; 8]).unwrap();
    assert!(p.ports[1].request_data(h).is_none());
}

/// A port started (DL NOP) with a request sent by hand: its packer given credits and run, as if
/// the link had carried it. Returns the port and the request's tag.
fn port_with_sent(req: Request, data: &[u8]) -> (Port, u16) {
    let mut p = port(1);
    p.start().unwrap();
    let tag = p.request(req, data).unwrap();
    for class in Class::ALL {
        p.packer.credits.held.add(class, Target::Pool, 64).unwrap();
    }
    while p.packer.holds_data(u32::from(tag)) {
        let mut f = TlFlit::default();
        p.packer.pack(&Beats { orig: &p.orig, compl: &p.compl }, &mut f).unwrap();
    }
    (p, tag)
}

/// TL flits carrying `responses` from a partner's packer, each read response's beats `k` filled
/// with `k + 1` and the part's offset.
fn response_flits(responses: &[Response]) -> Vec<TlFlit> {
    struct Parts;
    impl BeatSource for Parts {
        fn beat(&self, id: u32, beat: u8) -> Option<Beat<'_>> {
            static BEATS: [[u8; 64]; 8] = {
                let mut b = [[0u8; 64]; 8];
                let mut i = 0;
                while i < 8 {
                    b[i] = [i as u8 + 1; 64];
                    i += 1;
                }
                b
            };
            Some(Beat { data: &BEATS[(id as usize + usize::from(beat)) % 8], byte_en: u64::MAX, error: false })
        }
    }
    let mut tx = Packer::<16, 4, 8>::new(
        PackerConfig { auth: false, compress_responses: true },
        TxCompressor::new(Indexing::ByDst, true),
    );
    for class in Class::ALL {
        tx.credits.held.add(class, Target::Pool, 64).unwrap();
    }
    for r in responses {
        // The beat source keys each part's data on its offset.
        let id = match r {
            Response::Read(rr) => u32::from(rr.offset),
            Response::Write(_) => 0,
        };
        tx.push_response(id, *r).unwrap();
    }
    let mut flits = Vec::new();
    while !tx.is_idle() {
        let mut f = TlFlit::default();
        tx.pack(&Parts, &mut f).unwrap();
        flits.push(f);
    }
    flits
}

#[test]
fn a_read_answered_in_single_beat_parts_in_any_order_completes_once_whole() {
    let (mut p, tag) = port_with_sent(Request::read(0x4000, 256).unwrap().to_acc(2), &[]);
    let part = |offset, last| {
        let mut r = ReadResponse::new(tag, 2, 1, 1);
        (r.offset, r.last) = (offset, last);
        Response::Read(r)
    };
    // Four parts, out of order, several in one control half-flit; then a repeat (stray).
    let flits = response_flits(&[part(2, false), part(0, false), part(3, true), part(1, false), part(1, false)]);
    for f in &flits {
        assert!(p.take_tl(f));
    }
    match p.poll_event() {
        Some(Event::Response { tag: t, status, data, .. }) => {
            assert_eq!((t, status), (tag, Status::Okay));
            for k in 0..4u8 {
                // Part k's beat carries k + 1 (the beat source keys on the offset).
                assert!(data.beats()[usize::from(k) * 64..][..64].iter().all(|&b| b == k + 1), "beat {k}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.stats().stray_responses, 1, "the repeated beat is stray");
    assert_eq!(p.outstanding(), 0);
}

#[test]
fn a_part_with_an_error_status_marks_the_whole_response() {
    let (mut p, tag) = port_with_sent(Request::read(0x4000, 128).unwrap().to_acc(2), &[]);
    let mut first = ReadResponse::new(tag, 2, 1, 1);
    first.status = Status::TargetAbort;
    let mut second = ReadResponse::new(tag, 2, 1, 1);
    (second.offset, second.last) = (1, true);
    first.last = false;
    for f in &response_flits(&[Response::Read(first), Response::Read(second)]) {
        assert!(p.take_tl(f));
    }
    assert!(matches!(p.poll_event(), Some(Event::Response { status: Status::TargetAbort, .. })));
}

#[test]
fn a_read_that_arrives_with_a_writes_last_data_waits_for_the_write() {
    // Writes of 256 bytes, each followed by a read of the same address: the read's request field
    // comes before the write's data has all arrived, yet the write is reported first.
    let mut p = Pair::new(11, 0, Faults::default());
    for _ in 0..60 {
        p.step();
    }
    // (The harness numbers requests by address, so each read goes to the next block; the
    // harness checks that requests are reported in issue order.)
    for seq in 0..SLOTS as u64 / 2 {
        let addr = (2 * seq) << 8;
        let w = Request::write_full(addr, 256).unwrap().to_acc(2);
        let t = p.ports[0].request(w, &written(1, addr, 256)).unwrap();
        p.sides[0].outstanding.insert(t, 2 * seq);
        let r = Request::read(addr + 256, 256).unwrap().to_acc(2);
        let t = p.ports[0].request(r, &[]).unwrap();
        p.sides[0].outstanding.insert(t, 2 * seq + 1);
    }
    let mut order = Vec::new();
    for _ in 0..200 {
        p.step();
        order.extend(p.sides[1].held.iter().map(|(_, r)| (r.addr >> 8, r.cmd)));
        p.serve(1);
    }
    order.dedup();
    let want: Vec<_> = (0..SLOTS as u64 / 2)
        .flat_map(|a| [(2 * a, crate::upli::Command::WriteFull), (2 * a + 1, crate::upli::Command::Read)])
        .collect();
    assert_eq!(order, want);
}

/// Atomic data (§2.8): a single-operand atomic over two elements (ReqLen a multiple of the
/// element) carries both operands and gets both old values back, each in its lanes; a
/// double-operand atomic (Compare) carries Op1 in lanes 0..32 and Op2 in 32..64 and gets back
/// the 32 bytes it updates in lanes 0..32 (Figure 2-24).
#[test]
fn atomics_carry_and_return_all_their_elements() {
    let two = Request { len: 3, ..Request::atomic(AtomicOp::Add, OpSize::Bits64, 101 << 8 | 0x10, true).unwrap() };
    let compare = Request::atomic(AtomicOp::Compare, OpSize::Bits32, 102 << 8 | 0x20, true).unwrap();
    for (seq, req, lanes) in [(101, two, (0x10..0x20, 0x10..0x20)), (102, compare, (0..64, 0..32))] {
        let mut p = Pair::new(seq, 0, Faults::default());
        for _ in 0..60 {
            p.step();
        }
        let req = req.to_acc(2);
        assert_eq!(req.check(), Ok(()));
        assert_eq!((request_lanes(&req), response_lanes(&req)), lanes);
        let tag = p.ports[0].request(req, &written(1, req.addr, lanes.0.len() as u64)).unwrap();
        p.sides[0].outstanding.insert(tag, seq);
        for _ in 0..200 {
            p.step();
        }
        assert_eq!(p.sides[0].ends[&seq], [End::Answered]);
    }
}

/// Isolation Mode blocks what the Originator has not issued yet (§3.1.3): a write still queued
/// when the watchdog fires never reaches the partner, though the link comes up after.
#[test]
fn isolation_keeps_requests_not_yet_sent_from_going_out() {
    let mut p = Pair::new(17, 0, Faults::default());
    p.ports[0].cfg.completion_timeout = Some(5);
    p.serve_per_flit = 0;
    // The link is not up yet: the write waits in the TL.
    let req = Request::write(100 << 8, 64).unwrap().to_acc(2);
    let tag = p.ports[0].request(req, &written(1, 100 << 8, 64)).unwrap();
    p.sides[0].outstanding.insert(tag, 100);
    p.ports[0].handle_timeout(10);
    p.events(0);
    assert!(p.ports[0].is_isolated());
    assert_eq!(p.sides[0].ends[&100], [End::Failed(Failure::Timeout)]);
    for _ in 0..200 {
        p.step();
    }
    assert!(p.ports[0].is_up() && p.ports[1].is_up());
    assert!(p.sides[1].arrived.is_empty(), "a failed request was still performed");
}

#[test]
fn the_watchdog_isolates_the_originator_until_the_link_is_reset() {
    let mut p = Pair::new(13, 0, Faults::default());
    p.ports[0].cfg.completion_timeout = Some(100);
    p.serve_per_flit = 0;
    for _ in 0..60 {
        p.step();
    }
    // Numbered from 100, clear of the harness's own requests after the reset.
    p.reads(100..103, 50);
    // A later request, not yet overdue, fails with the others: Isolation Mode ends them all.
    p.reads(103..104, 0);
    for _ in 0..60 {
        p.step();
    }
    p.ports[0].handle_timeout(p.now);
    p.events(0);
    assert!(p.ports[0].is_isolated());
    assert_eq!(p.sides[0].ends.len(), 4);
    assert!(p.sides[0].ends.values().all(|e| e == &[End::Failed(Failure::Timeout)]));
    assert_eq!(p.ports[0].waiting_on(), Some(Waiting::Isolated));
    let read = Request::read(0x40, 4).unwrap().to_acc(2);
    assert!(matches!(p.ports[0].request(read, &[]), Err(Error::State { .. })));
    // The late answers are discarded, their credits returned.
    p.serve_per_flit = 4;
    for _ in 0..100 {
        p.step();
    }
    assert_eq!(p.ports[0].stats().stray_responses, 4);
    assert_eq!(p.ports[0].outstanding(), 0);
    // Management resets the link; then the Originator works again.
    p.ports[0].take_link_down();
    p.budget = 20;
    p.sides[1].last_seq = None;
    p.run(20_000);
    assert!(!p.ports[0].is_isolated());
    assert_eq!(p.ports[0].stats().isolations, 1);
}

#[test]
fn an_rs_fault_the_embedder_reported_keeps_the_link_down_until_cleared() {
    let mut a = port(1);
    a.rs_fault(true);
    assert_eq!(a.start(), Err(Error::State { needs: "no RS fault (rs_fault(false))" }));
    a.rs_fault(false);
    a.start().unwrap();
    // A request queued while training fails when the link is lost before it came up.
    let tag = a.request(Request::read(0x40, 4).unwrap().to_acc(2), &[]).unwrap();
    a.rs_fault(true);
    assert!(matches!(a.poll_event(), Some(Event::Failed { tag: t, why: Failure::LinkDown, .. }) if t == tag));
    assert_eq!(a.outstanding(), 0);
}

#[test]
fn a_start_before_drops_are_reported_advertises_only_free_slots() {
    let mut p = Pair::new(17, 0, Faults::default());
    p.serve_per_flit = 0;
    for _ in 0..60 {
        p.step();
    }
    p.reads(0..3, 60);
    assert_eq!(p.sides[1].held.len(), 3);
    // Port 2's link goes down; it starts again before taking its events, once port 1 is down.
    p.ports[1].rs_fault(true);
    p.ports[1].rs_fault(false);
    (p.auto_start, p.take_events[1]) = (false, false);
    assert_eq!(p.ports[1].waiting_on(), Some(Waiting::Quiescing));
    assert!(p.ports[1].start().is_err(), "not while the partner is up");
    while p.ports[1].waiting_on() != Some(Waiting::Start) {
        assert!(p.now < 1_000);
        p.step();
    }
    p.ports[1].start().unwrap();
    assert_eq!(p.ports[1].withheld, 3);
    assert_eq!(p.ports[1].packer.owed.owed.get(Class::ReqCmd, Target::Pool), SLOTS as u16 - 3);
    p.events(1);
    assert_eq!(p.sides[1].dropped, 3);
    assert_eq!(p.ports[1].packer.owed.owed.get(Class::ReqCmd, Target::Pool), SLOTS as u16);
    assert_eq!(p.ports[1].packer.owed.owed.get(Class::ReqData, Target::Pool), 4 * SLOTS as u16);
}

#[test]
fn the_two_ends_management_need_not_act_together() {
    // At power-on port 2 starts 200 flit times after port 1; after a link down, one side's
    // management answers `Waiting::Start` 200 flit times late. Every request still ends once.
    for late in [0, 1] {
        let mut p = Pair::new(19 + late as u64, 200, Faults::default());
        let cfg = *p.ports[late].config();
        p.ports[late] = Port::new(cfg, vec![0; REPLAY_ENTRY_LEN * 64]).unwrap();
        p.start_delay[late] = 200;
        while p.now < 500 {
            p.step();
        }
        p.ports[0].rs_fault(true);
        for _ in 0..3 {
            p.step();
        }
        p.ports[0].rs_fault(false);
        p.run(100_000);
        for (d, s) in p.sides.iter().enumerate() {
            assert!(s.ends.values().all(|e| e.len() == 1), "side {d}: each request ended once");
            assert_eq!(s.up_events, [true, false, true], "side {d}");
        }
    }
}

#[test]
fn a_poisoned_half_reads_as_zeros_not_the_slots_earlier_bytes() {
    // A slot that held an earlier transfer's bytes takes a request whose beat 1 arrives poisoned.
    let mut s = Slot::new(Compl::Free);
    s.fill(0, &[0xAA; SLOT_BYTES], SLOT_BYTES);
    assert_eq!(s.put(Half::Data { beat: 0, second: false, bytes: &[1; 32] }, 0), None);
    assert_eq!(s.put(Half::Poisoned { beat: 1, second: false }, 0), None);
    assert_eq!(s.put(Half::Poisoned { beat: 1, second: true }, 0), Some(1));
    let d = s.lend(2, (0, 128));
    assert!(d.poisoned(1) && !d.poisoned(0) && d.any_poisoned());
    assert_eq!(&d.beats()[..32], &[1; 32]);
    assert!(d.beats()[64..128].iter().all(|&b| b == 0), "{:?}", &d.beats()[64..128]);
}
