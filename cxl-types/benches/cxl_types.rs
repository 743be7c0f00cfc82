//! The 68B flit hot paths beside their floors, in the same run.
//!
//! * `flit68/crc`: the CRC of a 64-byte flit body (`flit68::crc::crc`: the bytes reversed,
//!   then the `crc` crate's `Table<16>`).
//! * `flit68/pack_seal/*`: pack one flit from per-kind queues and seal it with the CRC —
//!   `rwd_64B`: a stream of M2S RwD writes with 64 bytes of data each (header flits and rolled
//!   over data); `cache_rsp`: H2D Req and Rsp only, refilled so every slot is full.
//! * `flit68/unpack_check/*`: check the CRC of each flit of those streams and unpack it (one
//!   iteration = the whole stream; the throughput line gives flits per second).
//! * `flit68/reference/bare_crc_64B`: the floor: `Table<16>` over 64 bytes already in order.
//! * `flit68/reference/copy_66B`: a plain copy of a sealed flit.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use cxl_types::flit68::crc::{ALGORITHM, check, crc, seal};
use cxl_types::flit68::header::Credit;
use cxl_types::flit68::pack::{Packer, Payload, Queues, Unpacker};
use cxl_types::flit68::slot::Direction;
use cxl_types::msg::cache::{H2dReqOpcode, H2dRspOpcode};
use cxl_types::msg::mem::M2sRwdOpcode;
use cxl_types::msg::{H2dReq, H2dRsp, M2sRwd, Msg};
use std::hint::black_box;

type Q = Queues<8>;

fn rwd(i: u16) -> (Msg, Option<Payload>) {
    let m = M2sRwd { opcode: M2sRwdOpcode::MemWr, tag: i, addr: u64::from(i) << 6, ..M2sRwd::default() };
    (Msg::M2sRwd(m), Some(Payload { bytes: [i as u8; 64], ..Payload::default() }))
}

fn refill(q: &mut Q, stream: &str, i: &mut u16) {
    match stream {
        "rwd_64B" => {
            if q.is_empty() {
                let (m, d) = rwd(*i);
                q.push(m, d).unwrap();
            }
        }
        _ => {
            while q.len() < 6 {
                *i = i.wrapping_add(1);
                let m = if *i % 3 == 0 {
                    Msg::H2dReq(H2dReq {
                        opcode: H2dReqOpcode::SnpInv,
                        addr: u64::from(*i) << 6,
                        uqid: *i & 0xFFF,
                        ..H2dReq::default()
                    })
                } else {
                    Msg::H2dRsp(H2dRsp { opcode: H2dRspOpcode::Go, rsp_data: 2, cqid: *i & 0xFFF, ..H2dRsp::default() })
                };
                if q.push(m, None).is_err() {
                    break;
                }
            }
        }
    }
    *i = i.wrapping_add(1);
}

/// A stream's flits, sealed, from a clean start back to no pending data.
fn flits(stream: &str, n: usize) -> Vec<[u8; 66]> {
    let mut q = Q::default();
    let mut p = Packer::new(Direction::Downstream);
    let mut i = 0;
    let mut out = Vec::new();
    while out.len() < n || p.pending_chunks() > 0 {
        refill(&mut q, stream, &mut i);
        let mut f = [0u8; 66];
        p.pack(&mut q, [Credit::NONE; 3], f.first_chunk_mut().unwrap()).unwrap().unwrap();
        seal(&mut f);
        out.push(f);
    }
    out
}

fn flit68(c: &mut Criterion) {
    let flit: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(37));
    let table = crc::Crc::<u16, crc::Table<16>>::new(&ALGORITHM);
    let mut g = c.benchmark_group("flit68");
    g.throughput(Throughput::Bytes(64));
    g.bench_function("crc", |b| b.iter(|| crc(black_box(&flit))));
    g.bench_function("reference/bare_crc_64B", |b| b.iter(|| table.checksum(black_box(&flit))));
    let sealed = flits("rwd_64B", 1)[0];
    g.bench_function("reference/copy_66B", |b| {
        let mut out = [0u8; 66];
        b.iter(|| {
            out.copy_from_slice(black_box(&sealed));
            black_box(&out);
        })
    });
    for stream in ["rwd_64B", "cache_rsp"] {
        // Per flit: one flit per iteration here, `all.len()` flits per iteration below.
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("pack_seal/{stream}"), |b| {
            let mut q = Q::default();
            let mut p = Packer::new(Direction::Downstream);
            let mut i = 0;
            let mut f = [0u8; 66];
            b.iter(|| {
                refill(&mut q, stream, &mut i);
                p.pack(&mut q, [Credit::NONE; 3], f.first_chunk_mut().unwrap()).unwrap();
                seal(&mut f);
                black_box(&f);
            })
        });
        let all = flits(stream, 64);
        g.throughput(Throughput::Elements(all.len() as u64));
        g.bench_function(format!("unpack_check/{stream}"), |b| {
            b.iter_batched_ref(
                || Unpacker::new(Direction::Downstream),
                |u| {
                    let mut n = 0usize;
                    for f in &all {
                        check(f).unwrap();
                        u.unpack(f.first_chunk().unwrap(), |_| n += 1).unwrap();
                    }
                    black_box(n)
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, flit68);
criterion_main!(benches);
