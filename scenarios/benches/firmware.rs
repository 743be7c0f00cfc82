//! The firmware programs' workloads (FIRMWARE.md) on the host, each beside its floor in the same
//! run. Times are per message (UET) or per write (UALink), as the programs count instructions:
//!
//! * `firmware/uet/{closed,open}_{64,1024}`: a phase of 200 messages of 64 B or 1 KiB between two
//!   `Endpoint<8, 8, 32>` over a wire that loses 1 % of packets, PDCs closed when idle (the
//!   default) or kept open; one bench iteration is one message (phases run whole, as many as the
//!   iterations need, and the time is divided by the messages they sent).
//! * `firmware/uet/floor_{64,1024}`: the same messages' bytes copied once and CRC-32C'd.
//! * `firmware/ualink/writes`: 400 writes of 64 B between two `UpliPort`s over a wire that loses
//!   1 % of flits each way, per write.
//! * `firmware/ualink/floor`: per write, the flit times the run takes of two 640-byte flit copies
//!   and two DL CRCs each.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant as StdInstant};
use ualink_flit::port::UpliPort;
use uet_wire::linklayer::Instant;
use uet_wire::msg::MAX_HEADER_LEN;
use xlink_scenarios::{Rng, ualink, uet};

/// Runs whole phases of `len`-byte messages until `iters` messages went, and returns the time
/// per message times `iters`.
fn uet_messages(eps: &mut [uet::Ep; 2], state: &mut (Instant, Rng), len: u32, iters: u64) -> StdDuration {
    let mut buf = [0u8; MAX_HEADER_LEN + uet::MTU as usize];
    let phases = iters.div_ceil(u64::from(uet::MESSAGES)).max(1);
    let start = StdInstant::now();
    for _ in 0..phases {
        let o = uet::phase(eps, &mut buf, &mut state.0, &mut state.1, len);
        assert!(o.ok(), "{o:?}");
    }
    start.elapsed().mul_f64(iters as f64 / (phases * u64::from(uet::MESSAGES)) as f64)
}

fn firmware(c: &mut Criterion) {
    let mut g = c.benchmark_group("firmware");
    g.measurement_time(StdDuration::from_secs(3));
    for (name, close_when_idle) in [("closed", true), ("open", false)] {
        let mut eps = Box::new([uet::Ep::EMPTY, uet::Ep::EMPTY]);
        for (i, ep) in eps.iter_mut().enumerate() {
            ep.init(uet::config(i, close_when_idle), i as u64 + 1);
        }
        let mut state = (Instant::ZERO, Rng::new(1));
        for len in [64, 1024] {
            g.bench_function(format!("uet/{name}_{len}"), |b| {
                b.iter_custom(|iters| uet_messages(&mut eps, &mut state, len, iters))
            });
        }
    }
    for len in [64, 1024] {
        g.bench_function(format!("uet/floor_{len}"), |b| {
            b.iter_custom(|iters| {
                let phases = iters.div_ceil(u64::from(uet::MESSAGES)).max(1);
                let start = StdInstant::now();
                for _ in 0..phases {
                    black_box(uet::floor(black_box(len)));
                }
                start.elapsed().mul_f64(iters as f64 / (phases * u64::from(uet::MESSAGES)) as f64)
            })
        });
    }
    // One run to learn its flit times, for the floor.
    let mut ports = Box::new([UpliPort::EMPTY, UpliPort::EMPTY]);
    assert!(ualink::start(&mut ports));
    let flit_times = ualink::run(&mut ports, &mut Rng::new(1)).flit_times;
    g.bench_function("ualink/writes", |b| {
        b.iter_custom(|iters| {
            let runs = iters.div_ceil(u64::from(ualink::WRITES)).max(1);
            let mut elapsed = StdDuration::ZERO;
            for run in 0..runs {
                let mut ports = Box::new([UpliPort::EMPTY, UpliPort::EMPTY]);
                assert!(ualink::start(&mut ports));
                let start = StdInstant::now();
                let o = ualink::run(&mut ports, &mut Rng::new(run + 1));
                elapsed += start.elapsed();
                assert!(o.ok(), "{o:?}");
            }
            elapsed.mul_f64(iters as f64 / (runs * u64::from(ualink::WRITES)) as f64)
        })
    });
    g.bench_function("ualink/floor", |b| {
        b.iter_custom(|iters| {
            let runs = iters.div_ceil(u64::from(ualink::WRITES)).max(1);
            let start = StdInstant::now();
            for _ in 0..runs {
                black_box(ualink::floor(black_box(flit_times as u32)));
            }
            start.elapsed().mul_f64(iters as f64 / (runs * u64::from(ualink::WRITES)) as f64)
        })
    });
    g.finish();
}

criterion_group!(benches, firmware);
criterion_main!(benches);
