//! Hot paths of `linklayer`, each beside a reference measured in the same run.
//!
//! * `reference/ring_push_pop_64B`: a plain `heapless::Deque` of 64-byte frames, push one and pop
//!   one: the least any replay buffer can cost.
//! * `llr/send_ack_64B`: one 64-byte frame through the whole LLR loop: `LlrTx::send`,
//!   `poll_transmit`, `LlrRx::handle_frame`, an LLR_ACK every frame, `LlrTx::handle_ack`.
//! * `llr/send_ack_64B_ack16`: the same with one ACK per 16 frames (ACK spacing as on a real link).
//! * `replay/push_poll_ack_64B`: the generic replay buffer alone.
//! * `reference/counter_check_add`: a plain `if used + n <= limit { used += n }`.
//! * `cbfc/check_send_free_update`: `may_send` + `on_sent` at the sender, `on_received` +
//!   `on_freed` at the receiver, and the sender applying the CF_Update.
//! * `wire/ctlos_emit_parse`: encode and decode one 8-byte CtlOS (CRC-8 included).
//! * `reference/crc8_7B_twice`: the CtlOS's floor: its CRC-8 computed over 7 bytes twice (once
//!   to send, once to check) and the 8 bytes copied.
//! * `link/send_deliver_drain_64B`: one 64-byte frame on a lossless VC between two `Link` ends:
//!   `send`, `poll_transmit`, `handle_frame`, `on_drained`, and every 16 frames the CtlOS both
//!   ways (LLR_ACK, CF_Update) through `poll_control` / `handle_control`.
//! * `link/engines_by_hand_64B`: the same work calling the four engines directly, as an embedder
//!   without `Link` would (the reference for the link object's own cost).
#![allow(missing_docs)]
// Harness code, not library code: a failed setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapless::Deque;
use linklayer::cbfc::{CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, Vc, VcMode};
use linklayer::link::{Link, LinkConfig, Received};
use linklayer::llr::{FrameCheck, LlrRx, LlrRxConfig, LlrSizing, LlrTx, LlrTxConfig, ReplayBuffer, UeLlrSpace};
use linklayer::wire::CtlOs;
use linklayer::{Duration, Instant, LinkRate, Seq};
use std::hint::black_box;

const FRAME: [u8; 64] = [0xA5; 64];

fn reference(c: &mut Criterion) {
    let mut g = c.benchmark_group("reference");
    g.throughput(Throughput::Elements(1));
    g.bench_function("ring_push_pop_64B", |b| {
        let mut q: Deque<[u8; 64], 64> = Deque::new();
        b.iter(|| {
            let _ = q.push_back(black_box(FRAME));
            black_box(q.pop_front())
        })
    });
    g.bench_function("crc8_7B_twice", |b| {
        const CHECK: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_8_AUTOSAR);
        let mut buf = [0u8; 8];
        b.iter(|| {
            buf[..4].copy_from_slice(&black_box(0x4b31_2345u32).to_be_bytes());
            buf[7] = CHECK.checksum(&buf[..7]);
            let copy = black_box(buf);
            black_box(CHECK.checksum(&copy[..7]) == copy[7])
        })
    });
    g.bench_function("counter_check_add", |b| {
        let (mut used, limit) = (0u32, 1000u32);
        b.iter(|| {
            let n = black_box(1u32);
            if used + n <= limit {
                used += n;
            }
            used -= black_box(1);
            black_box(used)
        })
    });
    g.finish();
}

type Tx = LlrTx<UeLlrSpace, [u8; 16384], 128>;

fn linked() -> (Tx, LlrRx<UeLlrSpace>) {
    let cfg = LlrTxConfig {
        replay_timeout: Duration::from_millis(1),
        outstanding_bytes_max: 16384,
        outstanding_frames_max: 128,
        ..LlrTxConfig::hardware(&LlrSizing::hardware(Duration::ZERO, LinkRate::GBPS_800))
    };
    let mut tx = Tx::new(cfg, [0; 16384], Seq::FIRST).unwrap();
    let mut rx = LlrRx::new(LlrRxConfig { ack_spacing: 2048, link_rate: LinkRate::GBPS_800, enabled: true });
    let t = Instant::ZERO;
    tx.enable(t).unwrap();
    let Some(CtlOs::LlrInit { seq }) = tx.poll_control(t) else { panic!("no INIT") };
    rx.handle_init(t, seq).unwrap();
    let Some(CtlOs::LlrInitEcho { seq }) = rx.poll_control(t) else { panic!("no echo") };
    tx.handle_init_echo(t, seq).unwrap();
    (tx, rx)
}

fn llr(c: &mut Criterion) {
    let mut g = c.benchmark_group("llr");
    g.throughput(Throughput::Elements(1));
    for (name, every) in [("send_ack_64B", 1u64), ("send_ack_64B_ack16", 16)] {
        g.bench_function(name, |b| {
            let (mut tx, mut rx) = linked();
            let mut now = 0u64;
            b.iter(|| {
                now += 1;
                let t = Instant::from_nanos(now);
                tx.send(t, black_box(&FRAME)).unwrap();
                let out = tx.poll_transmit(t).unwrap();
                let seq = out.seq;
                black_box(out.frame);
                black_box(rx.handle_frame(t, seq.value(), FrameCheck::Good));
                if now % every == 0 {
                    // Force the ACK out regardless of spacing: the cost measured is the ACK path.
                    let t_ack = Instant::from_nanos(now * 1_000_000);
                    if let Some(CtlOs::LlrAck { seq }) = rx.poll_control(t_ack) {
                        tx.handle_ack(t, seq).unwrap();
                    }
                }
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("replay");
    g.throughput(Throughput::Elements(1));
    g.bench_function("push_poll_ack_64B", |b| {
        let mut buf: ReplayBuffer<UeLlrSpace, [u8; 16384], 128> = ReplayBuffer::new([0; 16384], Seq::FIRST);
        b.iter(|| {
            let seq = buf.push(Instant::ZERO, black_box(&FRAME)).unwrap();
            black_box(buf.poll_next().unwrap().frame);
            buf.ack(seq).unwrap()
        })
    });
    g.finish();
}

/// A CBFC sender and receiver with VC 3 lossless, 1000 credits.
fn cbfc_pair() -> (CbfcSender, CbfcReceiver, Vc) {
    let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
    let mut r = CbfcReceiver::new(CbfcReceiverConfig::default()).unwrap();
    let vc = Vc::new(3).unwrap();
    let mode = VcMode::Lossless { credit_limit: Some(1000) };
    s.set_vc_mode(Instant::ZERO, vc, mode).unwrap();
    r.set_vc_mode(Instant::ZERO, vc, mode).unwrap();
    (s, r, vc)
}

fn cbfc(c: &mut Criterion) {
    let mut g = c.benchmark_group("cbfc");
    g.throughput(Throughput::Elements(1));
    g.bench_function("check_send_free_update", |b| {
        let (mut s, mut r, vc) = cbfc_pair();
        b.iter(|| {
            let len = black_box(1500usize);
            if s.may_send(vc, len).unwrap() {
                s.on_sent(vc, len).unwrap();
                let credits = r.on_received(vc, len).unwrap();
                r.on_freed(vc, credits).unwrap();
                s.handle_cf_update(vc, r.freed(vc)).unwrap();
            }
            black_box(s.in_use(vc))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("wire");
    g.throughput(Throughput::Elements(1));
    g.bench_function("ctlos_emit_parse", |b| {
        let mut buf = [0u8; 8];
        b.iter(|| {
            CtlOs::LlrAck { seq: black_box(0x1234) }.emit(&mut buf).unwrap();
            black_box(CtlOs::parse(black_box(&buf)).unwrap().0)
        })
    });
    g.finish();
}

type End = Link<Vec<u8>, 128>;

/// Two link ends, handshakes done, VC 3 lossless with room for the 16 frames between updates.
fn link_pair() -> (End, End, Vc) {
    let rate = LinkRate::GBPS_800;
    let sizing = LlrSizing::hardware(Duration::from_micros(1), rate).with_frame_slots(128);
    let config =
        LinkConfig { restart_holdoff: Duration::ZERO, ..LinkConfig::hardware(&sizing, rate, [2, 0, 0, 0, 0, 1]) };
    let config = LinkConfig {
        llr_tx: LlrTxConfig { replay_timeout: Duration::from_millis(1000), ..config.llr_tx },
        cbfc_sender: CbfcSenderConfig { cc_update_interval: Duration::from_millis(250), ..config.cbfc_sender },
        ..config
    };
    let vc = Vc::new(3).unwrap();
    let mut ends = [0, 1].map(|i| End::new(config, vec![0; sizing.replay_bytes as usize], 100 + i).unwrap());
    for e in &mut ends {
        e.set_vc_mode(Instant::ZERO, vc, VcMode::Lossless { credit_limit: Some(1000) }).unwrap();
        e.enable(Instant::ZERO).unwrap();
    }
    let [mut a, mut b] = ends;
    exchange(&mut a, &mut b, Instant::ZERO);
    (a, b, vc)
}

fn exchange(a: &mut End, b: &mut End, t: Instant) {
    for _ in 0..2 {
        while let Some(c) = a.poll_control(t) {
            let _ = b.handle_control(t, c);
        }
        while let Some(c) = b.poll_control(t) {
            let _ = a.handle_control(t, c);
        }
    }
}

fn link(c: &mut Criterion) {
    let mut g = c.benchmark_group("link");
    g.throughput(Throughput::Elements(1));
    g.bench_function("send_deliver_drain_64B", |bench| {
        let (mut a, mut b, vc) = link_pair();
        let mut n = 0u64;
        bench.iter(|| {
            n += 1;
            let t = Instant::from_nanos(n * 1000);
            a.send(t, vc, black_box(&FRAME)).unwrap();
            // The frame, and now and then a CC_Update queued before it.
            while let Some(out) = a.poll_transmit(t) {
                if b.handle_frame(t, Some(out.seq.value()), FrameCheck::Good, vc, out.frame) == Received::Deliver {
                    b.on_drained(vc, FRAME.len()).unwrap();
                }
            }
            if n % 16 == 0 {
                exchange(&mut a, &mut b, t);
            }
        })
    });
    g.bench_function("engines_by_hand_64B", |bench| {
        let (mut tx, mut rx) = linked();
        let (mut s, mut r, vc) = cbfc_pair();
        let mut n = 0u64;
        bench.iter(|| {
            n += 1;
            let t = Instant::from_nanos(n * 1000);
            assert!(s.may_send(vc, FRAME.len()).unwrap());
            tx.send(t, black_box(&FRAME)).unwrap();
            s.on_sent(vc, FRAME.len()).unwrap();
            let out = tx.poll_transmit(t).unwrap();
            let (seq, frame) = (out.seq.value(), out.frame);
            assert_eq!(rx.handle_frame(t, seq, FrameCheck::Good), linklayer::llr::RxVerdict::Deliver);
            r.on_received(vc, black_box(frame).len()).unwrap();
            r.on_frame_freed(vc, FRAME.len()).unwrap();
            if n % 16 == 0 {
                while let Some(c) = rx.poll_control(t) {
                    if let CtlOs::LlrAck { seq } = c {
                        tx.handle_ack(t, seq).unwrap();
                    }
                }
                while let Some(u) = r.poll_cf_update(t) {
                    s.handle_cf_update(u.vc, u.freed).unwrap();
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, reference, llr, cbfc, link);
criterion_main!(benches);
