//! The adapter CRC beside its floor, in the same run.
//!
//! * `crc/seal_format4_256B`: both CRCs of a Format 4 flit computed and placed (`crc::seal`:
//!   128 + 114 covered bytes, zero-extended to 2 × 128).
//! * `crc/reference/bare_crc_2x128B`: the floor: the `crc` crate's `Table<16>` over the same two
//!   128-byte messages, nothing else.
//! * `crc/reference/copy_256B`: copying the flit.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use ucie_adapter::crc::{ALGORITHM, Format, seal};

fn crc(c: &mut Criterion) {
    let mut flit = [0u8; 256];
    for (i, b) in flit.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31);
    }
    let table = crc::Crc::<u16, crc::Table<16>>::new(&ALGORITHM);
    let mut g = c.benchmark_group("crc");
    g.throughput(Throughput::Bytes(256));
    g.bench_function("seal_format4_256B", |b| {
        b.iter(|| {
            seal(Format::Standard256StartHeader, black_box(&mut flit)).unwrap();
            black_box(flit[252])
        })
    });
    let mut msg1 = [0u8; 128];
    msg1[..114].copy_from_slice(&flit[128..242]);
    g.bench_function("reference/bare_crc_2x128B", |b| {
        b.iter(|| black_box(table.checksum(black_box(&flit[..128])) ^ table.checksum(black_box(&msg1))))
    });
    let mut dest = [0u8; 256];
    g.bench_function("reference/copy_256B", |b| {
        b.iter(|| {
            dest.copy_from_slice(black_box(&flit));
            black_box(dest[0])
        })
    });
    g.finish();
}

criterion_group!(benches, crc);
criterion_main!(benches);
