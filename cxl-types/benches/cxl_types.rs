//! The 68B flit CRC beside its floor, in the same run.
//!
//! * `flit68/crc`: the CRC of a 64-byte flit body (`flit68::crc::crc`: the bytes reversed,
//!   then the `crc` crate's `Table<16>`).
//! * `flit68/reference/bare_crc_64B`: the floor: `Table<16>` over 64 bytes already in order.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use cxl_types::flit68::crc::{ALGORITHM, crc};
use std::hint::black_box;

fn flit68(c: &mut Criterion) {
    let flit: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(37));
    let table = crc::Crc::<u16, crc::Table<16>>::new(&ALGORITHM);
    let mut g = c.benchmark_group("flit68");
    g.throughput(Throughput::Bytes(64));
    g.bench_function("crc", |b| b.iter(|| crc(black_box(&flit))));
    g.bench_function("reference/bare_crc_64B", |b| b.iter(|| table.checksum(black_box(&flit))));
    g.finish();
}

criterion_group!(benches, flit68);
criterion_main!(benches);
