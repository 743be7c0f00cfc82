//! DL flit framing and deframing, CRC included, beside a plain 640-byte copy in the same run.
//!
//! * `dl/reference/copy_640`: copying 640 bytes (what framing costs at the very least).
//! * `dl/crc_640`: the flit CRC alone (portable `crc` backend, `Table<16>`).
//! * `dl/frame`: placing 628 payload bytes, five segment headers and the flit header per
//!   Figure 6-4, and the CRC.
//! * `dl/deframe`: checking the CRC and reading everything back.
//!
//! TL packing and unpacking per request, credits returned on receipt, beside a plain 64-byte copy:
//!
//! * `tl/reference/copy_64`: copying one TL flit.
//! * `tl/read_compressed`: one compressed 256-byte read request packed into a TL flit and
//!   unpacked (decompressed through the Rx cache) again.
//! * `tl/read_response_256`: one compressed read response with its four data beats: five flits
//!   packed and unpacked, 256 data bytes copied in and out.
//! * `tl/writefull_256`: one compressed 256-byte WriteFull with its data, the same way.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use ualink_flit::dl::crc::flit_crc;
use ualink_flit::dl::{FLIT_LEN, FlitHeader, MBits, PAYLOAD_LEN, SegmentHeader, deframe, frame};
use ualink_flit::tl::compress::{Indexing, RxDecompressor, TxCompressor};
use ualink_flit::tl::credit::{Class, Target};
use ualink_flit::tl::{Beat, BeatSource, Packer, PackerConfig, Response, RxHalf, RxItem, TlFlit, Unpacked, Unpacker};
use ualink_flit::upli::{Command, ReadResponse, Request, Status};

/// Four beats of data, lent for every item.
struct Beats([[u8; 64]; 4]);

impl BeatSource for Beats {
    fn beat(&self, _id: u32, beat: u8) -> Option<Beat<'_>> {
        Some(Beat { data: self.0.get(usize::from(beat))?, byte_en: u64::MAX, error: false })
    }
}

type P = Packer<64, 4, 16>;
type U = Unpacker<64, 4>;

/// A packer/unpacker pair with warm caches for region 0 of destination 2.
fn tl_pair() -> (P, U) {
    let mut tx = TxCompressor::new(Indexing::ByDst, true);
    let mut rx = RxDecompressor::new(Indexing::ByDst);
    let warm = Request::new(Command::Read, 0, 63, 0, 1, 2);
    rx.decode(&tx.encode(&warm).unwrap()).unwrap();
    let mut p = P::new(PackerConfig { auth: false, compress_responses: true }, tx);
    for class in Class::ALL {
        p.credits.held.add(class, Target::Pool, 1000).unwrap();
    }
    (p, U::new(false, rx))
}

/// Packs and unpacks until both sides are idle; returns each item's credits and sums the data
/// bytes seen (so the copies are not optimised away).
fn drain(p: &mut P, u: &mut U, src: &Beats) -> u32 {
    let mut sum = 0u32;
    while !(p.is_idle() && u.owed_halves() == 0) {
        let mut f = TlFlit::default();
        p.pack(src, &mut f).unwrap();
        let mut out = Unpacked::default();
        u.unpack(&f, &mut out).unwrap();
        for it in &out.items {
            let (cmd, data, t, n) = match it {
                RxItem::Request { req, .. } => {
                    (Class::ReqCmd, Class::ReqData, Target::of(req.pool, req.vc), req.data_beats())
                }
                RxItem::Response { rsp, .. } => {
                    (Class::RspCmd, Class::RspData, Target::of(rsp.pool(), rsp.vc()), rsp.data_beats())
                }
            };
            p.credits.held.add(cmd, t, 1).unwrap();
            p.credits.held.add(data, t, u16::from(n)).unwrap();
        }
        for h in [out.lower, out.upper] {
            if let RxHalf::Data { bytes, .. } = h {
                sum = sum.wrapping_add(u32::from(bytes[0]) + u32::from(bytes[31]));
            }
        }
    }
    sum
}

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

fn tl_benches(c: &mut Criterion) {
    let mut data = [[0u8; 64]; 4];
    for (i, b) in data.iter_mut().flatten().enumerate() {
        *b = (i * 13 + 1) as u8;
    }
    let src = Beats(data);
    let mut g = c.benchmark_group("tl");
    g.throughput(Throughput::Elements(1));
    g.bench_function("reference/copy_64", |b| {
        let from = TlFlit { lower: [0x5A; 32], upper: [0xA5; 32], m0: false, m1: false };
        let mut to = TlFlit::default();
        b.iter(|| {
            to = *black_box(&from);
            black_box(&to);
        })
    });
    let read = Request::new(Command::Read, 0x400, 63, 5, 1, 2);
    g.bench_function("read_compressed", |b| {
        let (mut p, mut u) = tl_pair();
        b.iter(|| {
            p.push_request(0, black_box(read)).unwrap();
            black_box(drain(&mut p, &mut u, &src))
        })
    });
    let rsp = Response::Read(ReadResponse {
        tag: 5,
        src: 0,
        dst: 1,
        status: Status::Okay,
        num_beats: 3,
        offset: 0,
        last: true,
        vc: 0,
        pool: false,
        auth_tag: 0,
    });
    g.bench_function("read_response_256", |b| {
        let (mut p, mut u) = tl_pair();
        b.iter(|| {
            p.push_response(0, black_box(rsp)).unwrap();
            black_box(drain(&mut p, &mut u, &src))
        })
    });
    let wf = Request::new(Command::WriteFull, 0x400, 63, 5, 1, 2);
    g.bench_function("writefull_256", |b| {
        let (mut p, mut u) = tl_pair();
        b.iter(|| {
            p.push_request(0, black_box(wf)).unwrap();
            black_box(drain(&mut p, &mut u, &src))
        })
    });
    g.finish();
}

criterion_group!(dl, benches, tl_benches);
criterion_main!(dl);
