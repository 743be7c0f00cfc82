//! DL flit framing and deframing, CRC included, beside a plain 640-byte copy in the same run.
//!
//! * `dl/reference/copy_640`: copying 640 bytes (what framing costs at the very least).
//! * `dl/crc_640`: the flit CRC alone (portable `crc` backend, `Table<16>`).
//! * `dl/frame`: placing 628 payload bytes, five segment headers and the flit header per
//!   Figure 6-4, and the CRC.
//! * `dl/deframe`: checking the CRC and reading everything back.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use ualink_flit::dl::crc::flit_crc;
use ualink_flit::dl::{FLIT_LEN, FlitHeader, MBits, PAYLOAD_LEN, SegmentHeader, deframe, frame};

fn benches(c: &mut Criterion) {
    let mut payload = [0u8; PAYLOAD_LEN];
    for (i, b) in payload.iter_mut().enumerate() {
        *b = (i * 31 + 7) as u8;
    }
    let header = FlitHeader::Original { seq: 300 };
    let tl = Some(MBits::default());
    let segments = [SegmentHeader { alt_sector: false, tl_flits: [tl, tl] }; 5];
    let mut flit = [0u8; FLIT_LEN];
    frame(&header, &segments, &payload, &mut flit).unwrap();

    let mut g = c.benchmark_group("dl");
    g.throughput(Throughput::Bytes(FLIT_LEN as u64));
    let src = [0x5Au8; FLIT_LEN];
    g.bench_function("reference/copy_640", |b| {
        let mut dst = [0u8; FLIT_LEN];
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    g.bench_function("crc_640", |b| b.iter(|| black_box(flit_crc(black_box(&flit)))));
    g.bench_function("frame", |b| {
        let mut out = [0u8; FLIT_LEN];
        b.iter(|| {
            frame(black_box(&header), black_box(&segments), black_box(&payload), &mut out).unwrap();
            black_box(&out);
        })
    });
    g.bench_function("deframe", |b| {
        let mut p = [0u8; PAYLOAD_LEN];
        b.iter(|| black_box(deframe(black_box(&flit), &mut p).unwrap()))
    });
    g.finish();
}

criterion_group!(dl, benches);
criterion_main!(dl);
