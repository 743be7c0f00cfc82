//! DL flit framing and deframing, CRC included, beside a plain 640-byte copy in the same run.
//!
//! * `dl/reference/copy_640`: copying 640 bytes (what framing costs at the very least).
//! * `dl/crc_640`: the flit CRC alone (the portable `crc` `Table<16>`, its one-table form with
//!   `small-crc`, or libdeflate with `simd-crc`).
//! * `dl/reference/libdeflate_640` and `dl/reference/libdeflate_64k`: the SIMD crate itself on
//!   one flit and on 64 KiB: the CRC's ceiling on the machine, whatever backend the crate uses.
//! * `dl/reference/crc32fast_640`: the other SIMD CRC-32 crate on one flit, for the choice.
//! * `dl/frame`: placing 628 payload bytes, five segment headers and the flit header per
//!   Figure 6-4, and the CRC.
//! * `dl/deframe`: checking the CRC and reading everything back.
//! * `dl/link_flit_time`: one flit time of a link carrying TL flits one way: port A packs 9.8
//!   TL flits into a payload DL flit (stored in TxReplay, framed, CRC), port B checks and
//!   unpacks it, and B's flit back (a NOP flit carrying the Ack) is framed and taken by A,
//!   which releases TxReplay. Throughput counts the 640 bytes one way.
//!
//! TL packing and unpacking per request, credits returned on receipt, beside a plain 64-byte copy:
//!
//! * `tl/reference/copy_64`: copying one TL flit.
//! * `tl/read_compressed`: one compressed 256-byte read request packed into a TL flit and
//!   unpacked (decompressed through the Rx cache) again.
//! * `tl/read_compressed/pack_only` and `tl/read_compressed/unpack_only`: the two sides of
//!   the above apart: pushing and packing the request (its command credit handed back after each
//!   flit), and unpacking that same flit again and again.
//! * `tl/read_compressed/stream_16` and `.../stream_16/pack_only`: sixteen compressed reads
//!   queued at once and drained: the rate rule (§5.7) keeps a request to a flit on average.
//! * `tl/read_response_256`: one compressed read response with its four data beats: five flits
//!   packed and unpacked, 256 data bytes copied in and out.
//! * `tl/writefull_256`: one compressed 256-byte WriteFull with its data, the same way.
//!
//! A whole port, per flit time, beside the bytes a flit time moves:
//!
//! * `port/reference/copy_crc_4x640`: four 640-byte copies and four flit CRCs, what framing and
//!   checking one flit each way costs at the very least (the floor of a flit time).
//! * `port/flit_time`: one flit time of two `UpliPort`s on a perfect wire, both loaded: each keeps
//!   32 reads of 64 bytes outstanding and answers every read it gets at once (both ports transmit
//!   and receive a flit, take their events, answer, and issue). The requests each flit time
//!   completes are counted in a warm-up and printed, for the cost per request.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use ualink_flit::dl::Transmitted;
use ualink_flit::dl::crc::flit_crc;
use ualink_flit::dl::link::REPLAY_ENTRY_LEN;
use ualink_flit::dl::{
    DataLink, Delivered, DlConfig, FLIT_LEN, FlitHeader, LinkState, MBits, PAYLOAD_LEN, SegmentHeader, TlSource,
    deframe, frame,
};
use ualink_flit::port::{Event, PortConfig, UpliPort};
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
    // The CRC's ceiling on this machine: the SIMD crate on one flit, and on 64 KiB, where its
    // per-call set-up no longer counts; and the other SIMD crate on one flit.
    g.bench_function("reference/libdeflate_640", |b| b.iter(|| black_box(libdeflater::crc32(black_box(&flit)))));
    g.bench_function("reference/crc32fast_640", |b| b.iter(|| black_box(crc32fast::hash(black_box(&flit)))));
    let big: Vec<u8> = (0..65536u32).map(|i| (i * 7) as u8).collect();
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function("reference/libdeflate_64k", |b| b.iter(|| black_box(libdeflater::crc32(black_box(&big)))));
    g.throughput(Throughput::Bytes(FLIT_LEN as u64));
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
    g.bench_function("link_flit_time", |b| {
        let (mut a, mut z) = (link(), link());
        let mut wire = [[0u8; FLIT_LEN]; 2];
        let mut got = Delivered::default();
        let mut tl = Endless(TlFlit::default());
        // Bring both up: ten NOP flits each way.
        for _ in 0..12 {
            a.transmit(&mut Nothing, &mut wire[0]);
            z.transmit(&mut Nothing, &mut wire[1]);
            a.receive(&wire[1], &mut got);
            z.receive(&wire[0], &mut got);
        }
        assert_eq!((a.state(), z.state()), (LinkState::Up, LinkState::Up));
        b.iter(|| {
            a.transmit(&mut tl, &mut wire[0]);
            z.receive(black_box(&wire[0]), &mut got);
            z.transmit(&mut Nothing, &mut wire[1]);
            a.receive(black_box(&wire[1]), &mut got);
            black_box(&got);
        });
        assert!(a.unacknowledged() <= 2, "Acks keep TxReplay empty");
    });
    g.finish();
}

type Link = DataLink<Vec<u8>, 64, 4>;

fn link() -> Link {
    let mut l = Link::new(DlConfig::default(), vec![0; REPLAY_ENTRY_LEN * 64]);
    l.rs_fault(false);
    l.enable().unwrap();
    // Channel 0 online, as a negotiation would leave it.
    l.set_tl_channel(true, true);
    l
}

/// A TL source that always has the same TL flit ready.
struct Endless(TlFlit);

impl TlSource for Endless {
    fn has_flit(&self) -> bool {
        true
    }
    fn next_flit(&mut self, out: &mut TlFlit) -> bool {
        *out = self.0;
        true
    }
}

/// A TL source with nothing.
struct Nothing;

impl TlSource for Nothing {
    fn has_flit(&self) -> bool {
        false
    }
    fn next_flit(&mut self, _: &mut TlFlit) -> bool {
        false
    }
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
    // The two sides apart: the sender's packing (a credit handed back after each flit, as the
    // receiver's flow-control field would) and the receiver's unpacking of that same flit.
    g.bench_function("read_compressed/pack_only", |b| {
        let (mut p, _) = tl_pair();
        let mut f = TlFlit::default();
        b.iter(|| {
            p.push_request(0, black_box(read)).unwrap();
            p.pack(&src, &mut f).unwrap();
            p.credits.held.add(Class::ReqCmd, Target::Pool, 1).unwrap();
            black_box(&f);
        })
    });
    g.bench_function("read_compressed/unpack_only", |b| {
        let (mut p, mut u) = tl_pair();
        let mut f = TlFlit::default();
        p.push_request(0, read).unwrap();
        p.pack(&src, &mut f).unwrap();
        b.iter(|| {
            let mut out = Unpacked::default();
            u.unpack(black_box(&f), &mut out).unwrap();
            black_box(out.items.len())
        })
    });
    // Saturated: a full queue of compressed reads (different tags, the same cached region) packed
    // as densely as the sequencing and rate rules allow, then unpacked; per request.
    let reads: [Request; 16] =
        core::array::from_fn(|i| Request::new(Command::Read, 0x400 + 256 * (i as u64 % 4), 63, i as u16, 1, 2));
    g.throughput(Throughput::Elements(reads.len() as u64));
    g.bench_function("read_compressed/stream_16", |b| {
        let (mut p, mut u) = tl_pair();
        b.iter(|| {
            for r in black_box(&reads) {
                p.push_request(0, *r).unwrap();
            }
            black_box(drain(&mut p, &mut u, &src))
        })
    });
    g.bench_function("read_compressed/stream_16/pack_only", |b| {
        let (mut p, _) = tl_pair();
        let mut f = TlFlit::default();
        b.iter(|| {
            for r in black_box(&reads) {
                p.push_request(0, *r).unwrap();
            }
            while !p.is_idle() {
                p.pack(&src, &mut f).unwrap();
                black_box(&f);
            }
            p.credits.held.add(Class::ReqCmd, Target::Pool, 16).unwrap();
        })
    });
    g.throughput(Throughput::Elements(1));
    let rsp = Response::Read(ReadResponse::new(5, 0, 1, 4));
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

/// Two default ports on a perfect wire, up, with Channel 0 negotiated.
fn port_pair() -> [UpliPort; 2] {
    let new = |acc| UpliPort::new(PortConfig::new(acc), [0u8; REPLAY_ENTRY_LEN * 64]).unwrap();
    let mut ports: [UpliPort; 2] = [new(1), new(2)];
    for p in &mut ports {
        p.start().unwrap();
    }
    ports
}

/// One flit time of `ports` under load; returns the requests it completed.
fn port_flit_time(ports: &mut [UpliPort; 2], wire: &mut [[u8; FLIT_LEN]; 2], now: u64, memory: &[u8; 64]) -> u32 {
    let mut done = 0;
    #[allow(clippy::needless_range_loop)] // both ports by index: one sends, the other takes
    for d in 0..2 {
        let sent = ports[d].poll_transmit(now, &mut wire[d]);
        let peer = &mut ports[1 - d];
        match sent {
            Transmitted::Flit { .. } => _ = peer.handle_flit(&wire[d]),
            Transmitted::Idle => peer.handle_idle(),
        }
    }
    for (d, p) in ports.iter_mut().enumerate() {
        while let Some(ev) = p.poll_event() {
            match ev {
                Event::Request { handle, .. } => p.respond(handle, Status::Okay, memory).unwrap(),
                Event::Response { data, .. } => done += u32::from(data.bytes()[63] == memory[63]),
                _ => {}
            }
        }
        let peer = 2 - d as u16;
        while p.is_up() && p.request(Request::read(0x1000, 64).unwrap().to_acc(peer), &[]).is_ok() {}
    }
    done
}

fn port_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("port");
    let flit = [0x5Au8; FLIT_LEN];
    g.bench_function("reference/copy_crc_4x640", |b| {
        let mut dst = [[0u8; FLIT_LEN]; 4];
        b.iter(|| {
            let mut x = 0;
            for d in &mut dst {
                d.copy_from_slice(black_box(&flit));
                x ^= u32::from_le_bytes(flit_crc(d));
            }
            black_box(x)
        })
    });
    let memory: [u8; 64] = core::array::from_fn(|i| i as u8);
    let mut ports = port_pair();
    let mut wire = [[0u8; FLIT_LEN]; 2];
    let mut now = 0;
    while now < 2_000 {
        port_flit_time(&mut ports, &mut wire, now, &memory);
        now += 1;
    }
    let mut done = 0;
    for _ in 0..20_000 {
        done += port_flit_time(&mut ports, &mut wire, now, &memory);
        now += 1;
    }
    assert!(done > 0, "the loaded ports complete requests");
    println!("port/flit_time: {:.3} requests completed per flit time (both ports)", f64::from(done) / 20_000.0);
    g.bench_function("flit_time", |b| {
        b.iter(|| {
            now += 1;
            black_box(port_flit_time(&mut ports, &mut wire, now, &memory))
        })
    });
    g.finish();
}

criterion_group!(dl, benches, tl_benches, port_benches);
criterion_main!(dl);
