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
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, criterion_group, criterion_main};
use ethx_paxi::axi::{AddrReq, Burst, Channel, Size};
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

criterion_group!(benches, axi);
criterion_main!(benches);
