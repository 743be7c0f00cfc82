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
#![allow(missing_docs)]
// Harness code, not library code: a failed setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use heapless::Deque;
use linklayer::cbfc::{CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, Vc, VcMode};
use linklayer::llr::{FrameCheck, LlrRx, LlrRxConfig, LlrTx, LlrTxConfig, ReplayBuffer, UeLlrSpace};
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
    let cfg = LlrTxConfig { replay_timeout: Duration::from_millis(1), ..LlrTxConfig::default() };
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

fn cbfc(c: &mut Criterion) {
    let mut g = c.benchmark_group("cbfc");
    g.throughput(Throughput::Elements(1));
    g.bench_function("check_send_free_update", |b| {
        let mut s = CbfcSender::new(CbfcSenderConfig::default()).unwrap();
        let mut r = CbfcReceiver::new(CbfcReceiverConfig::default()).unwrap();
        let vc = Vc::new(3).unwrap();
        let mode = VcMode::Lossless { credit_limit: Some(1000) };
        s.set_vc_mode(Instant::ZERO, vc, mode).unwrap();
        r.set_vc_mode(Instant::ZERO, vc, mode).unwrap();
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

criterion_group!(benches, reference, llr, cbfc);
criterion_main!(benches);
