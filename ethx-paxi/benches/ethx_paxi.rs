//! AXI request validation beside the least work such a check needs, in the same run.
//!
//! * `axi/validate_incr_64B`: `AddrReq::validate` of a 64-byte INCR write (one 64-byte beat on a
//!   64-byte bus), every rule checked: burst length, size against the bus, the 4 KiB boundary,
//!   exclusive and atomic rules (neither applies).
//! * `axi/validate_incr_4KiB`: the same for a 4 KiB INCR read (64 beats of 64 bytes).
//! * `axi/reference/4k_check_only`: the floor: the beat-count range and the 4 KiB boundary
//!   computed inline for the same 64-byte write.
//! * `axi/lanes_16_beats`: the byte lanes of each beat of a 16-beat WRAP burst of 8-byte beats on
//!   a 64-byte bus.
//! * `pipeline/loads_16`: 16 AR requests of 128-byte loads (random addresses, IDs cycling through
//!   16 values) through the whole send and receive path: compressed and aggregated into one
//!   frame (`Aggregator::push`, `poll_transmit`), framed in the PRI form (`frame::emit`), parsed
//!   (`frame::parse`), checked and decoded (`Deaggregator::open`, iteration). Throughput is in
//!   transactions.
//! * `pipeline/reads_16`: the same for their 16 R responses with 128 bytes of data each.
//! * `pipeline/reference/copy_*`: the floor: copying the same frame bytes twice (into the frame
//!   buffer and out of it), what any path must at least do.
//! * `icrc/1KiB`: the ICRC of 1 KiB (`frame::icrc_of`, the build's backend: run with
//!   `--features small-crc` or `--features simd-crc` for the others).
//! * `icrc/reference/libdeflate_1KiB`: the same CRC-32 by libdeflate's SIMD code, the fastest
//!   measured here.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ethx_paxi::aggregate::{Aggregator, AggregatorConfig, Deaggregator};
use ethx_paxi::axi::{AddrReq, Burst, Channel, Resp, Size};
use ethx_paxi::compress::{StreamKey, Txn};
use ethx_paxi::frame::{self, Form, FrameConfig, Outer};
use ethx_paxi::framing::Pri;
use ethx_paxi::paxi::ChannelWidths;
use ethx_paxi::rclink::RoutingHeader;
use linklayer::{Duration, Instant};
use std::hint::black_box;

fn axi(c: &mut Criterion) {
    let write = AddrReq::incr(Channel::Write, 0x1_0000_0040, 1, Size::from_bytes(64).unwrap());
    let read = AddrReq::incr(Channel::Read, 0x2_0000_0000, 64, Size::from_bytes(64).unwrap());
    c.bench_function("axi/validate_incr_64B", |b| b.iter(|| black_box(black_box(&write).validate(64))));
    c.bench_function("axi/validate_incr_4KiB", |b| b.iter(|| black_box(black_box(&read).validate(64))));
    c.bench_function("axi/reference/4k_check_only", |b| {
        b.iter(|| {
            let r = black_box(&write);
            let size = u64::from(r.size.bytes());
            let last = (r.addr & !(size - 1)).wrapping_add(u64::from(r.beats - 1) * size) | (size - 1);
            black_box((1..=256).contains(&r.beats) && last >> 12 == r.addr >> 12)
        })
    });
    let wrap = AddrReq { burst: Burst::Wrap, ..AddrReq::incr(Channel::Read, 0x1038, 16, Size::from_bytes(8).unwrap()) };
    c.bench_function("axi/lanes_16_beats", |b| {
        b.iter(|| {
            let r = black_box(&wrap);
            (0..16).fold(0u128, |acc, k| acc ^ r.lanes(k, 64))
        })
    });
}

const PER_FRAME: usize = 16;

/// One frame's worth of transactions through aggregation, framing, parsing and decoding.
fn through(agg: &mut Aggregator<2, 2, 4096>, deagg: &mut Deaggregator<2>, txns: &[Txn<'_>], wire: &mut [u8]) -> usize {
    let config = FrameConfig::default();
    let outer = Outer::Pri(Pri { network_device_id: 1, device_address: [2; 10] });
    let rh = RoutingHeader::send(1, 0);
    let now = Instant::from_nanos(0);
    let key = StreamKey { peer: 1, vc: 0 };
    for t in txns {
        agg.push(now, key, t).unwrap();
    }
    let out = agg.poll_transmit(now).unwrap();
    let n = frame::emit(&config, &outer, &rh, out.bytes, wire).unwrap();
    let packet = frame::parse(&config, Form::Pri, &wire[..n]).unwrap();
    deagg.open(1, packet.payload).unwrap().fold(0, |acc, t| acc + matches!(t, Txn::Read(_)) as usize)
}

fn pipeline(c: &mut Criterion) {
    let widths = ChannelWidths::EXAMPLE;
    let config = AggregatorConfig { mtu: 4096 - 24, max_per_frame: PER_FRAME as u16, budget: Duration::ZERO };
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let loads: Vec<AddrReq> = (0..PER_FRAME as u32)
        .map(|id| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let addr = (state % (1 << 30)) & !127;
            AddrReq { id, ..AddrReq::incr(Channel::Read, addr, 2, Size::from_bytes(64).unwrap()) }
        })
        .collect();
    let data = [0x5Au8; 128];
    let reads: Vec<Txn<'_>> = loads.iter().map(|r| Txn::Read(*r)).collect();
    let responses: Vec<Txn<'_>> =
        loads.iter().map(|r| Txn::ReadData { id: r.id, resp: Resp::Okay, last: true, user: 0, data: &data }).collect();
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(PER_FRAME as u64));
    for (name, txns) in [("loads_16", &reads), ("reads_16", &responses)] {
        let mut agg = Aggregator::<2, 2, 4096>::new(widths, config).unwrap();
        let mut deagg = Deaggregator::<2>::new(widths).unwrap();
        let mut wire = vec![0u8; 4096];
        // The frame's size, for the floor.
        through(&mut agg, &mut deagg, txns, &mut wire);
        let frame_len = {
            for t in txns.iter() {
                agg.push(Instant::from_nanos(0), StreamKey { peer: 1, vc: 0 }, t).unwrap();
            }
            let len = agg.poll_transmit(Instant::from_nanos(0)).unwrap().bytes.len();
            deagg = Deaggregator::<2>::new(widths).unwrap();
            agg = Aggregator::<2, 2, 4096>::new(widths, config).unwrap();
            len
        };
        group.bench_function(name, |b| b.iter(|| black_box(through(&mut agg, &mut deagg, black_box(txns), &mut wire))));
        let source = vec![0xA5u8; frame_len];
        let (mut mid, mut dest) = (vec![0u8; frame_len], vec![0u8; frame_len]);
        group.bench_function(format!("reference/copy_{name}_{frame_len}B"), |b| {
            b.iter(|| {
                mid.copy_from_slice(black_box(&source));
                dest.copy_from_slice(black_box(&mid));
                black_box(dest[0])
            })
        });
    }
    group.finish();
}

fn icrc(c: &mut Criterion) {
    let bytes: Vec<u8> = (0..1024u32).map(|i| (i * 7 + (i >> 8)) as u8).collect();
    let mut g = c.benchmark_group("icrc");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("1KiB", |b| b.iter(|| frame::icrc_of(black_box(&bytes))));
    g.bench_function("reference/libdeflate_1KiB", |b| b.iter(|| libdeflater::crc32(black_box(&bytes))));
    g.finish();
}

criterion_group!(benches, axi, pipeline, icrc);
criterion_main!(benches);
