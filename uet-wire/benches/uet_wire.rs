//! UET header parse and emit, beside etherparse parsing Ethernet + IPv4 + UDP in the same run.
//!
//! * `reference/etherparse_eth_ipv4_udp`: `Ethernet2HeaderSlice` → `Ipv4HeaderSlice` →
//!   `UdpHeaderSlice` over a 42-byte header stack, reading the fields a receiver needs.
//! * `parse/request_std`: `PdsHeader::parse` + `SesHeader::parse` of a RUD request with a standard
//!   SES request (12 + 44 bytes), into owned Reprs.
//! * `parse/request_std_view`: the same two headers through the validated borrowed views
//!   (`RequestView`, `StandardView`: the same checks) by the fused fast path `parse_request_std`,
//!   then reading the fields a receiver needs (`_7_fields`: the seven the etherparse reference
//!   reads as many of). `parse/request_std_view_each_7_fields` parses the two views one at a time.
//! * `parse/walk_request_std`: the whole `UetPacket::parse` walk of the same packet with a payload.
//! * `emit/request_std`: emitting both headers.
//! * `parse/ack_cc` and `emit/ack_cc`: a 32-byte ACK_CC with NSCC state.
//! * `pdc/ack_full_sack`: the initiator applying an ACK whose CACK releases 32 PSNs and whose full
//!   64-bit SACK bitmap acknowledges the next 64, beside `pdc/reference/bitmap_or_count` (the bare
//!   bitmap OR and count such an ACK needs at least); `pdc/rx_receive_and_sack`: the target
//!   recording one arrival and building the SACK it would send.
//! * `pdc/loopback_send_ack`: one packet through an initiator and a target PDC joined back to
//!   back: `Initiator::send` stamps it, its PDS header is emitted and parsed (`RequestView`), the
//!   target's `handle_request` accepts it, and every ACK the target sends (coalesced: one per
//!   16 KiB of 4 KiB packets) is emitted, parsed and applied by `Initiator::handle_ack`. Beside it,
//!   `pdc/reference/codec_only` does the same emits and parses with no PDC, and
//!   `pdc/loopback_state_machines_only` runs the loop with the headers handed over as values.
//!   Each of the three calls one out-of-line function per packet (see `loopback`).
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use uet_wire::pds::{
    Ack, AckCc, AckExtension, AckFlags, AckRequest, CcState, DeliveryMode, NextHeader, PdcDest, PdsHeader, Request,
    RequestFlags, RequestView,
};
use uet_wire::ses::{Opcode, RequestCommon, SesFlags, SesHeader, StandardRequest, StandardTail, StandardView};
use uet_wire::{PacketRepr, UetPacket, WalkConfig};

fn request() -> PacketRepr {
    PacketRepr {
        entropy: None,
        pds: PdsHeader::Request(Request {
            mode: DeliveryMode::Rud,
            next_header: NextHeader::ReqStd,
            flags: RequestFlags::AR,
            clear_psn_offset: -3,
            psn: 0x1000_0004,
            spdcid: 7,
            dest: PdcDest::Established { dpdcid: 19 },
            cc: None,
        }),
        ses: Some(SesHeader::Standard(StandardRequest {
            common: RequestCommon {
                opcode: Opcode::Write,
                flags: SesFlags::SOM | SesFlags::REL,
                ri_generation: 1,
                job_id: 0xABCDE,
                pid_on_fep: 0x123,
                resource_index: 0x456,
            },
            message_id: 0x42,
            buffer_offset: 0x1000,
            initiator: 9,
            match_bits: 0xFEED_0000_0000_0001,
            tail: StandardTail::Som { header_data: 0xDD },
            request_length: 1 << 20,
            ext: None,
        })),
    }
}

fn ack_cc() -> Ack {
    Ack {
        next_header: NextHeader::None,
        flags: AckFlags::M,
        request: AckRequest::None,
        ack_psn_offset: 2,
        cack_psn: 0x1000_0000,
        spdcid: 19,
        dpdcid: 7,
        ext: AckExtension::Cc(AckCc {
            mpr: 8,
            sack_psn_offset: 1,
            sack_bitmap: 0xFFFF_0000_FFFF_0001,
            state: CcState::Nscc {
                service_time: 100,
                restore_cwnd: false,
                rcv_cwnd_pend: 3,
                rcvd_bytes: 4096,
                ooo_count: 2,
            },
        }),
    }
}

fn eth_ipv4_udp() -> Vec<u8> {
    let builder = etherparse::PacketBuilder::ethernet2([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(50000, 4793);
    let payload = [0u8; 18];
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    builder.write(&mut out, &payload).unwrap();
    out
}

/// XORs the fields a receiver reads into one value for `black_box`: every field must be computed,
/// and the harness adds neither a long dependency chain nor a copy of a wide tuple. The reference
/// and the UET benchmarks consume their fields the same way.
#[inline(always)]
fn fold(fields: &[u64]) -> u64 {
    black_box(fields.iter().fold(0, |acc, &v| acc ^ v))
}

/// The 7 fields the etherparse reference's counterpart reads, folded.
#[inline(always)]
fn fold_7_fields(pds: &RequestView<'_>, ses: &StandardView<'_>) -> u64 {
    fold(&[
        u64::from(pds.psn()),
        u64::from(pds.spdcid()),
        u64::from(matches!(ses.opcode(), Opcode::Write)),
        u64::from(ses.job_id()),
        u64::from(ses.resource_index()),
        ses.buffer_offset(),
        u64::from(ses.request_length()),
    ])
}

/// The receive fast path: the PDS request view and the standard SES request view it announces.
#[inline(always)]
fn parse_views(pkt: &[u8]) -> (RequestView<'_>, StandardView<'_>, &[u8]) {
    uet_wire::parse_request_std(pkt).unwrap()
}

/// The same two views parsed one header at a time.
#[inline(always)]
fn parse_views_each(pkt: &[u8]) -> (RequestView<'_>, StandardView<'_>, &[u8]) {
    let (pds, rest) = RequestView::parse(pkt).unwrap();
    let (ses, rest) = match pds.next_header() {
        NextHeader::ReqStd => StandardView::parse(rest).unwrap(),
        _ => panic!("not a standard request"),
    };
    (pds, ses, rest)
}

fn benches(c: &mut Criterion) {
    let frame = eth_ipv4_udp();
    let repr = request();
    let mut pkt = [0u8; 128];
    let n = repr.emit(&[0x5A; 8], None, &mut pkt).unwrap();
    let pkt = &pkt[..n];
    let ack = ack_cc();
    let mut ack_bytes = [0u8; 32];
    ack.emit(&mut ack_bytes).unwrap();

    let mut g = c.benchmark_group("reference");
    g.throughput(Throughput::Elements(1));
    g.bench_function("etherparse_eth_ipv4_udp", |b| {
        b.iter(|| {
            let f = black_box(&frame[..]);
            let eth = etherparse::Ethernet2HeaderSlice::from_slice(f).unwrap();
            let ip = etherparse::Ipv4HeaderSlice::from_slice(&f[eth.slice().len()..]).unwrap();
            let udp = etherparse::UdpHeaderSlice::from_slice(&f[eth.slice().len() + ip.slice().len()..]).unwrap();
            fold(&[
                u64::from(eth.ether_type().0),
                u64::from(ip.protocol().0),
                u64::from(u32::from_be_bytes(ip.source())),
                u64::from(u32::from_be_bytes(ip.destination())),
                u64::from(udp.source_port()),
                u64::from(udp.destination_port()),
                u64::from(udp.length()),
            ])
        })
    });
    g.finish();

    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Elements(1));
    g.bench_function("request_std", |b| {
        b.iter(|| {
            let (pds, rest) = PdsHeader::parse(black_box(pkt)).unwrap();
            let (ses, rest) = SesHeader::parse(pds.next_header(), rest).unwrap();
            black_box((pds, ses, rest.len()))
        })
    });
    g.bench_function("request_std_view", |b| {
        b.iter(|| {
            let (pds, ses, rest) = parse_views(black_box(pkt));
            let dpdcid = match pds.dest() {
                PdcDest::Established { dpdcid } => dpdcid,
                PdcDest::Syn { psn_offset, .. } => psn_offset,
            };
            fold(&[
                u64::from(pds.psn()),
                u64::from(pds.spdcid()),
                u64::from(dpdcid),
                u64::from(pds.flags().bits()),
                u64::from(matches!(ses.opcode(), Opcode::Write)),
                u64::from(ses.flags().bits()),
                u64::from(ses.message_id()),
                u64::from(ses.job_id()),
                u64::from(ses.pid_on_fep()),
                u64::from(ses.resource_index()),
                ses.buffer_offset(),
                ses.match_bits(),
                u64::from(ses.request_length()),
                rest.len() as u64,
            ])
        })
    });
    g.bench_function("request_std_view_7_fields", |b| {
        b.iter(|| {
            let (pds, ses, _) = parse_views(black_box(pkt));
            fold_7_fields(&pds, &ses)
        })
    });
    g.bench_function("request_std_view_each_7_fields", |b| {
        b.iter(|| {
            let (pds, ses, _) = parse_views_each(black_box(pkt));
            fold_7_fields(&pds, &ses)
        })
    });
    g.bench_function("walk_request_std", |b| {
        b.iter(|| black_box(UetPacket::parse(black_box(pkt), WalkConfig::default()).unwrap()))
    });
    g.bench_function("ack_cc", |b| b.iter(|| black_box(PdsHeader::parse(black_box(&ack_bytes)).unwrap().0)));
    g.finish();

    let mut g = c.benchmark_group("emit");
    g.throughput(Throughput::Elements(1));
    let mut out = [0u8; 128];
    g.bench_function("request_std", |b| {
        b.iter(|| {
            let r = black_box(&repr);
            let n = r.pds.emit(&mut out).unwrap();
            black_box(r.ses.unwrap().emit(&mut out[n..]).unwrap())
        })
    });
    g.bench_function("ack_cc", |b| b.iter(|| black_box(black_box(&ack).emit(&mut out).unwrap())));
    g.finish();
}

/// The PDC fast path: ACK processing with a full SACK bitmap, and the target's per-packet receive.
fn pdc_benches(c: &mut Criterion) {
    use uet_wire::pdc::{RxWindow, Sack, TxWindow};
    let mut g = c.benchmark_group("pdc");
    g.throughput(Throughput::Elements(1));
    // 128 packets in flight; the ACK's CACK covers the first 32 and its SACK the next 64.
    let mut tx = TxWindow::<2>::new(1000);
    while tx.send(128).is_some() {}
    g.bench_function("reference/bitmap_or_count", |b| {
        b.iter(|| {
            let mut w = black_box([0u64; 2]);
            w[0] |= black_box(u64::MAX) << 32;
            w[1] |= black_box(u64::MAX) >> 32;
            black_box(w[0].trailing_ones() + w[1].count_ones())
        })
    });
    g.bench_function("ack_full_sack", |b| {
        b.iter(|| {
            let mut t = black_box(tx);
            black_box(t.on_ack(1031, Some(Sack { base: 1032, bitmap: u64::MAX })).unwrap())
        })
    });
    let mut psn = 0u32;
    let mut rx = RxWindow::<2>::new(0);
    g.bench_function("rx_receive_and_sack", |b| {
        b.iter(|| {
            // In-order arrivals with every 8th packet arriving one late.
            let p = if psn % 8 == 0 {
                psn + 1
            } else if psn % 8 == 1 {
                psn - 1
            } else {
                psn
            };
            psn = psn.wrapping_add(1);
            black_box(rx.receive(black_box(p)));
            black_box(rx.sack())
        })
    });
    loopback(&mut g);
    g.finish();
}

/// The PDC fast path end to end, and the codec work it contains as the reference.
///
/// Each loop body is one out-of-line function per packet, as an embedder's receive handler
/// would be: inlined into criterion's timing loop, the same code measured 2–3 ns slower from
/// register spills around the loop, which is the harness, not the PDC.
fn loopback(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    use linklayer::Instant;
    use uet_wire::pdc::{Initiator, PdcConfig, StartPolicy, Target, TargetTx};
    let cfg = PdcConfig::default();
    let now = Instant::ZERO;
    // An initiator and a target with the first packet's round trip done.
    let pair = || {
        let mut ini = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 4);
        let first = ini.send(now, &cfg, false).unwrap().request(NextHeader::ReqStd, None);
        let mut tgt = Target::<2>::new(now, &cfg, 19, &first, StartPolicy::Open).unwrap();
        tgt.handle_request(now, &cfg, &first, 4096, false).unwrap();
        let Some(TargetTx::Ack(a)) = tgt.poll_transmit(now) else { panic!("no first ACK") };
        ini.handle_ack(now, &cfg, &a).unwrap();
        (ini, tgt)
    };

    #[inline(never)]
    fn send_ack(ini: &mut Initiator<2>, tgt: &mut Target<2>, cfg: &PdcConfig, now: Instant, buf: &mut [u8; 64]) {
        let stamp = ini.send(now, cfg, false).unwrap();
        let n = stamp.request(NextHeader::ReqStd, None).emit(buf).unwrap();
        let (view, _) = RequestView::parse(black_box(&buf[..n])).unwrap();
        let v = tgt.handle_request(now, cfg, &view.to_repr(), 4096, false).unwrap();
        if let Some(TargetTx::Ack(a)) = tgt.poll_transmit(now) {
            let n = a.emit(buf).unwrap();
            let Ok((PdsHeader::Ack(a), _)) = PdsHeader::parse(black_box(&buf[..n])) else { panic!() };
            ini.handle_ack(now, cfg, &a).unwrap();
        }
        black_box(v);
    }
    let (mut ini, mut tgt) = pair();
    let mut buf = [0u8; 64];
    g.bench_function("loopback_send_ack", |b| b.iter(|| send_ack(&mut ini, &mut tgt, &cfg, now, &mut buf)));

    // The return direction: read data from the target, the initiator's ACKs back.
    #[inline(never)]
    fn return_send_ack(ini: &mut Initiator<2>, tgt: &mut Target<2>, cfg: &PdcConfig, now: Instant, buf: &mut [u8; 64]) {
        let stamp = tgt.send(now, cfg, false).unwrap();
        let n = stamp.request(NextHeader::RspData, None).emit(buf).unwrap();
        let (view, _) = RequestView::parse(black_box(&buf[..n])).unwrap();
        let d = ini.handle_data(now, cfg, &view.to_repr(), 4096, false).unwrap();
        if let Some(uet_wire::pdc::InitiatorTx::Ack(a)) = ini.poll_transmit(now) {
            let n = a.emit(buf).unwrap();
            let Ok((PdsHeader::Ack(a), _)) = PdsHeader::parse(black_box(&buf[..n])) else { panic!() };
            tgt.handle_ack(now, cfg, &a).unwrap();
        }
        black_box(d);
    }
    let (mut ini3, mut tgt3) = pair();
    g.bench_function("return_send_ack", |b| b.iter(|| return_send_ack(&mut ini3, &mut tgt3, &cfg, now, &mut buf)));

    // The same loop with the headers handed over as Reprs: the state machines alone.
    #[inline(never)]
    fn state_machines(ini: &mut Initiator<2>, tgt: &mut Target<2>, cfg: &PdcConfig, now: Instant) {
        let stamp = ini.send(now, cfg, false).unwrap();
        let r = black_box(stamp.request(NextHeader::ReqStd, None));
        let v = tgt.handle_request(now, cfg, &r, 4096, false).unwrap();
        if let Some(TargetTx::Ack(a)) = tgt.poll_transmit(now) {
            ini.handle_ack(now, cfg, &black_box(a)).unwrap();
        }
        black_box(v);
    }
    let (mut ini2, mut tgt2) = pair();
    g.bench_function("loopback_state_machines_only", |b| b.iter(|| state_machines(&mut ini2, &mut tgt2, &cfg, now)));

    // The emits and parses of the loopback with no PDC: one ACK per four packets.
    #[inline(never)]
    fn codec(stamp: &Request, ack: &Ack, k: u32, buf: &mut [u8; 64]) {
        let n = black_box(stamp).emit(buf).unwrap();
        let (view, _) = RequestView::parse(black_box(&buf[..n])).unwrap();
        black_box(view.psn());
        if k % 4 == 0 {
            let n = black_box(ack).emit(buf).unwrap();
            black_box(PdsHeader::parse(black_box(&buf[..n])).unwrap());
        }
    }
    let stamp = ini.send(now, &cfg, false).unwrap().request(NextHeader::ReqStd, None);
    let ack = tgt.ack();
    let mut k = 0u32;
    g.bench_function("reference/codec_only", |b| {
        b.iter(|| {
            k = k.wrapping_add(1);
            codec(&stamp, &ack, k, &mut buf)
        })
    });
}

criterion_group!(uet, benches, pdc_benches);
criterion_main!(uet);
