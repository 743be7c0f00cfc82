//! CRC-32C of one UET packet's covered bytes: this build's backend (`uet_wire::crc32c`, the
//! SSE4.2 instruction in three streams when the build enables it, see `BACKEND`), beside the
//! portable slice-by-16 table (`crc` crate, the `no_std` default elsewhere) and the `crc32c`
//! crate (the same instruction, runtime-detected, `std`) in the same run, at 64 B, 4 KiB, 4 152 B
//! (the bytes a request with a 4 KiB payload covers) and 9 000 B (a jumbo frame).
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const TABLE: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

fn crc_benches(c: &mut Criterion) {
    println!("uet-wire CRC-32C backend in this build: {:?}", uet_wire::crc32c::BACKEND);
    let bytes: Vec<u8> = (0..9000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let prefix = [10, 0, 0, 1, 10, 0, 0, 2];
    let mut g = c.benchmark_group("crc32c");
    for len in [64, 4096, 4152, 9000] {
        let b = &bytes[..len];
        let want = TABLE.checksum(&[&prefix[..], b].concat());
        assert_eq!(uet_wire::crc32c::crc32c(&prefix, b), want);
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("backend/{len}"), |t| {
            t.iter(|| uet_wire::crc32c::crc32c(black_box(&prefix), black_box(b)))
        });
        g.bench_function(format!("reference/table/{len}"), |t| {
            t.iter(|| {
                let mut d = TABLE.digest();
                d.update(black_box(&prefix));
                d.update(black_box(b));
                d.finalize()
            })
        });
        g.bench_function(format!("reference/crc32c_crate/{len}"), |t| {
            t.iter(|| crc32c::crc32c_append(crc32c::crc32c(black_box(&prefix)), black_box(b)))
        });
    }
    g.finish();
}

criterion_group!(crc, crc_benches);
criterion_main!(crc);
