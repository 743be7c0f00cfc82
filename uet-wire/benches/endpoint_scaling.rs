//! How an `Endpoint`'s cost per message grows with its capacity and its work: ns per delivered
//! 64-byte RUD message between two endpoints on a perfect in-memory wire (CRC off), for PDC
//! capacity `P`, message capacity `M`, and the number of PDCs in use (messages go round robin to
//! that many jobs, and each job has its own PDC at both ends, kept open). Up to `min(M, max(16,
//! active))` messages are in flight. Each packet is handled by the other endpoint as soon as it
//! is sent, and each endpoint's events are taken after every packet it handles.
//!
//! `endpoint_scaling/P{p}_M{m}/active_{k}`; the sizes of the endpoints are printed first. Two more
//! cases: `.../queued_{n}`, `n` messages queued at once to one PDC (the PDC takes 16 at a time,
//! the rest wait), and `.../loss_1pct`, 1 024 PDCs in use with 1 % of the packets lost each way
//! (seeded; the clock moves 1 µs a turn, so resends wait for their timers); and
//! `.../active_1024_x16`, 16 messages in flight on each of 1 024 PDCs. With one message in
//! flight per PDC every message draws its own ACK (2 packets a message); with 16 on a PDC, as
//! in `active_1`, ACKs cover several (1.06 packets a message): each case prints its packets per
//! message first. The endpoints have the default 16 request directions (`S`), so beyond 16 PDCs
//! in use the PDCs take turns for them, a message per turn; the cases ending in `_s1024` have
//! 1 024, one for each PDC in use.
//! The endpoints are built on a thread with a stack large enough for the largest of them.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use std::time::Duration as StdDuration;
use uet_wire::linklayer::{Duration, Instant};
use uet_wire::msg::{
    CONTROL_QUEUE, EXTENSIONS, Endpoint, EndpointConfig, Event, MAX_HEADER_LEN, MessageDesc, ORDER_POOL, ORDER_WINDOW,
    REQUEST_DIRECTIONS, RETURN_DIRECTIONS, Service,
};
use uet_wire::pdc::held::HELD_RESPONSES;
use uet_wire::pdc::{IpAddr, ipv4};
use uet_wire::ses::Opcode;

const LEN: u32 = 64;

/// An endpoint with room for `P` PDCs each way, `M` messages and `S` request directions.
type Ep<const P: usize, const M: usize, const S: usize> =
    Endpoint<P, M, 64, HELD_RESPONSES, 0, ORDER_WINDOW, CONTROL_QUEUE, ORDER_POOL, EXTENSIONS, RETURN_DIRECTIONS, S>;

struct Pair<const P: usize, const M: usize, const S: usize> {
    eps: [Box<Ep<P, M, S>>; 2],
    addrs: [IpAddr; 2],
    active: usize,
    next_job: usize,
    in_flight: usize,
    window: usize,
    /// Packets lost per mille, and the generator choosing them.
    loss: u32,
    rng: u64,
    /// Packets put on the wire, lost ones included.
    packets: u64,
    now: Instant,
    frame: Vec<u8>,
}

impl<const P: usize, const M: usize, const S: usize> Pair<P, M, S> {
    fn new(active: usize, window: usize, loss: u32) -> Self {
        let cfg = |addr| EndpointConfig { close_when_idle: false, ..EndpointConfig::new(addr, 1024) };
        let addrs = [ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2])];
        Pair {
            eps: [Box::new(Endpoint::new(cfg(addrs[0]), 1)), Box::new(Endpoint::new(cfg(addrs[1]), 2))],
            addrs,
            active,
            next_job: 0,
            in_flight: 0,
            window,
            loss,
            rng: 0x9E37_79B9_7F4A_7C15,
            packets: 0,
            now: Instant::ZERO,
            frame: vec![0; MAX_HEADER_LEN + LEN as usize],
        }
    }

    /// Sends and completes `count` messages.
    fn run(&mut self, count: u64) {
        let (mut started, mut done) = (0u64, 0u64);
        while done < count {
            while started < count && self.in_flight < self.window {
                let job = self.next_job as u32;
                self.next_job = (self.next_job + 1) % self.active;
                self.eps[0].send(MessageDesc::new(self.addrs[1], Service::Rud, Opcode::Write, job, LEN)).unwrap();
                self.in_flight += 1;
                started += 1;
            }
            done += self.turn(0);
            done += self.turn(1);
            self.now = self.now.saturating_add(Duration::from_micros(1));
            for ep in &mut self.eps {
                if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                    ep.handle_timeout(self.now);
                }
            }
        }
    }

    /// Every packet endpoint `from` has to send, handled by the other at once; returns the
    /// messages that completed at the sender.
    fn turn(&mut self, from: usize) -> u64 {
        let mut done = 0;
        let (a, b) = self.eps.split_at_mut(1);
        let (tx, rx) = if from == 0 { (&mut a[0], &mut b[0]) } else { (&mut b[0], &mut a[0]) };
        let src = self.addrs[from];
        while let Some(t) = tx.poll_transmit(self.now, &mut self.frame).unwrap() {
            let len = t.header_len + t.payload.map_or(0, |p| usize::from(p.len));
            self.packets += 1;
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if (self.rng >> 32) % 1000 < u64::from(self.loss) {
                continue;
            }
            let _ = rx.handle_packet(self.now, src, &self.frame[..len]);
            while let Some(ev) = rx.poll_event() {
                if let Event::Sent(_) = ev {
                    done += 1;
                }
            }
        }
        self.in_flight -= done as usize;
        done
    }
}

fn case<const P: usize, const M: usize>(g: &mut BenchmarkGroup<'_, WallTime>, active: usize) {
    case_with::<P, M, REQUEST_DIRECTIONS>(g, &format!("active_{active}"), active, M.min(active.max(16)), 0);
}

fn case_with<const P: usize, const M: usize, const S: usize>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    active: usize,
    window: usize,
    loss: u32,
) {
    let mut pair = Pair::<P, M, S>::new(active, window, loss);
    let warm_up = active.max(window) as u64 * 4;
    pair.run(warm_up);
    println!("P{P}_M{M}/{name}: {:.2} packets per message", pair.packets as f64 / warm_up as f64);
    g.bench_function(format!("P{P}_M{M}/{name}"), |b| {
        b.iter_custom(|iters| {
            let start = std::time::Instant::now();
            pair.run(iters);
            start.elapsed()
        })
    });
}

fn scaling(c: &mut Criterion) {
    println!(
        "size_of Endpoint<P, M, 64>: P16 M16 {} B, P1024 M16 {} B, P16 M4096 {} B",
        std::mem::size_of::<Endpoint<16, 16, 64>>(),
        std::mem::size_of::<Endpoint<1024, 16, 64>>(),
        std::mem::size_of::<Endpoint<16, 4096, 64>>()
    );
    let mut g = c.benchmark_group("endpoint_scaling");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10).warm_up_time(StdDuration::from_millis(500)).measurement_time(StdDuration::from_secs(2));
    case::<16, 16>(&mut g, 1);
    case::<16, 4096>(&mut g, 1);
    case_with::<16, 4096, REQUEST_DIRECTIONS>(&mut g, "queued_4096", 1, 4096, 0);
    for active in [1, 64, 1024] {
        case::<1024, 16>(&mut g, active);
        case::<1024, 4096>(&mut g, active);
    }
    case_with::<1024, 4096, REQUEST_DIRECTIONS>(&mut g, "loss_1pct", 1024, 1024, 10);
    // 16 messages in flight on each of 1 024 PDCs, as on the one PDC of `active_1`: the target
    // acknowledges several with one ACK in both (with a request direction for each PDC; with 16,
    // the PDCs take turns, one message each).
    case_with::<1024, 16384, REQUEST_DIRECTIONS>(&mut g, "active_1024_x16", 1024, 16384, 0);
    case_with::<1024, 4096, 1024>(&mut g, "active_1024_s1024", 1024, 1024, 0);
    case_with::<1024, 16384, 1024>(&mut g, "active_1024_x16_s1024", 1024, 16384, 0);
    for active in [1, 64, 1024, 16384] {
        case::<16384, 16>(&mut g, active);
        case::<16384, 4096>(&mut g, active);
    }
    // The largest capacity: 32 767 PDCs each way.
    case::<32767, 4096>(&mut g, 1);
    g.finish();
}

fn main() {
    // The largest endpoints are tens of megabytes; build and run them on a thread with room.
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(|| {
            let mut c = Criterion::default().configure_from_args();
            scaling(&mut c);
            c.final_summary();
        })
        .unwrap()
        .join()
        .unwrap();
}
