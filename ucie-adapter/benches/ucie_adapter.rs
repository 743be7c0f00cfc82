//! The adapter's hot paths beside their floors, in the same run.
//!
//! * `crc/seal_format4_256B`: both CRCs of a Format 4 flit computed and placed (`crc::seal`:
//!   128 + 114 covered bytes, zero-extended to 2 × 128).
//! * `crc/reference/bare_crc_2x128B`: the floor: the `crc` crate's `Table<16>` over the same two
//!   128-byte messages, nothing else.
//! * `crc/reference/copy_256B`: copying the flit.
//! * `flit/emit_format6_256B`: a Format 6 CXL.cachemem flit completed by `FlitRepr::emit`
//!   (header, reserved bytes, both CRCs over 126 bytes each), beside the same floor.
//! * `retry/flit_through_retry_256B`: one Format 6 flit through the whole retry path: queued at
//!   A (`send_with`, a 256-byte copy into the replay buffer), transmitted (`poll_transmit`: copy
//!   out, sequence field, both CRCs), received and checked at B (`handle_flit`: both CRCs,
//!   sequence rules), and its share of the Ack NOP B returns every 8 flits (built, sealed and
//!   checked at A, which releases 8 flits).
//! * `retry/reference/copy2_crc4_256B`: the floor of that path: two 256-byte copies and the
//!   bare CRC of two 128-byte messages twice (sender and receiver), plus an eighth of the
//!   Ack's four CRCs.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use linklayer::Instant;
use std::hint::black_box;
use ucie_adapter::crc::{ALGORITHM, Format, seal};
use ucie_adapter::flit::{FlitRepr, Layout, Map, Protocol};
use ucie_adapter::header::FlitHeader;
use ucie_adapter::retry::{Received, Retry, RetryConfig};

fn pattern() -> [u8; 256] {
    let mut flit = [0u8; 256];
    for (i, b) in flit.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31);
    }
    flit
}

fn crc(c: &mut Criterion) {
    let mut flit = pattern();
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

    let mut g = c.benchmark_group("flit");
    g.throughput(Throughput::Bytes(256));
    let map = Map::new(Format::LatencyOptimized256Optional, Layout::CacheMem).unwrap();
    let repr = FlitRepr::new(FlitHeader { protocol_id: 0b10, ..FlitHeader::NOP });
    let mut flit = pattern();
    g.bench_function("emit_format6_256B", |b| {
        b.iter(|| {
            repr.emit(&map, true, black_box(&mut flit)).unwrap();
            black_box(flit[254])
        })
    });
    let m0: [u8; 128] = {
        let mut m = [0u8; 128];
        m[..126].copy_from_slice(&flit[..126]);
        m
    };
    g.bench_function("reference/bare_crc_2x128B", |b| {
        b.iter(|| black_box(table.checksum(black_box(&m0)) ^ table.checksum(black_box(&m0))))
    });
    g.finish();
}

fn retry(c: &mut Criterion) {
    type R = Retry<Box<[u8]>, 64>;
    let config = RetryConfig::new(Format::LatencyOptimized256Optional, Protocol::Cxl);
    let mut a = R::new(config, vec![0u8; 64 * 256].into_boxed_slice());
    let mut b = R::new(config, vec![0u8; 64 * 256].into_boxed_slice());
    let now = Instant::ZERO;
    let mut wire = [0u8; 256];
    // Finish the Sequence Number Handshake.
    for _ in 0..64 {
        if a.poll_transmit(now, &mut wire).is_some() {
            b.handle_flit(now, &wire);
        }
        if b.poll_transmit(now, &mut wire).is_some() {
            a.handle_flit(now, &wire);
        }
    }
    assert!(!a.in_handshake() && !b.in_handshake());
    let payload = pattern();
    let mut n = 0u64;
    let mut g = c.benchmark_group("retry");
    g.throughput(Throughput::Bytes(256));
    g.bench_function("flit_through_retry_256B", |bench| {
        bench.iter(|| {
            a.send_with(now, |f| {
                f[2..].copy_from_slice(&payload[2..]);
                f[0] = 0b10 << 6;
            })
            .unwrap();
            a.poll_transmit(now, &mut wire).unwrap();
            let delivered = matches!(b.handle_flit(now, black_box(&wire)), Received::Deliver { .. });
            n += 1;
            if n % 8 == 0 {
                let mut ack = [0u8; 256];
                b.poll_transmit(now, &mut ack).unwrap();
                a.handle_flit(now, &ack);
            }
            black_box(delivered)
        })
    });
    assert_eq!(a.stats().replays, 0);
    let m = [0x5Au8; 128];
    let (mut buf, mut out) = ([0u8; 256], [0u8; 256]);
    let mut k = 0u64;
    g.bench_function("reference/copy2_crc4_256B", |bench| {
        bench.iter(|| {
            buf.copy_from_slice(black_box(&payload));
            out.copy_from_slice(black_box(&buf));
            let mut x = table_crc(&out[..128]) ^ table_crc(&out[128..]);
            x ^= table_crc(black_box(&out[..128])) ^ table_crc(black_box(&out[128..]));
            k += 1;
            if k % 8 == 0 {
                x ^= table_crc(&m) ^ table_crc(&m) ^ table_crc(black_box(&m)) ^ table_crc(black_box(&m));
            }
            black_box(x)
        })
    });
    g.finish();
}

fn table_crc(m: &[u8]) -> u16 {
    const T: crc::Crc<u16, crc::Table<16>> = crc::Crc::<u16, crc::Table<16>>::new(&ALGORITHM);
    T.checksum(m)
}

criterion_group!(benches, crc, retry);
criterion_main!(benches);
