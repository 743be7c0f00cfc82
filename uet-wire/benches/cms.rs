//! Congestion management and load balancing per packet: NSCC's reaction to one ACK (a mix of its
//! four cases, with the adjustments they trigger) and to a NACK, the RCCC pull pacer's pull among
//! 64 flows, and one EV choice plus its feedback for each selector. Beside them, in the same run,
//! two floors: parsing the 32-byte ACK_CC that carries NSCC's feedback (work every ACK costs
//! anyway) and a one-division AIMD update of the same inputs (the simplest window a sender could
//! keep).
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use uet_wire::cms::{AckSignal, NackSignal, Nscc, NsccConfig, PullPacer, PullPacerConfig};
use uet_wire::lb::{Bitmap, EntropySource, Oblivious, PathFeedback, Reps};
use uet_wire::pds::{Ack, AckCc, AckExtension, AckFlags, AckRequest, CcState, NextHeader, PdsHeader};
use uet_wire::{Duration, Instant, linklayer::LinkRate};

/// 256 ACKs: round trips of 12 to 30 µs, every seventh ECN-marked, 4 KiB each.
fn signals() -> Vec<AckSignal> {
    (0..256u64)
        .map(|i| AckSignal {
            acked: 4096,
            rtt: Some(Duration::from_nanos(12_000 + (i * 7919) % 18_000)),
            ecn: i % 7 == 0,
            penalty: 0,
        })
        .collect()
}

fn ack_cc_bytes() -> Vec<u8> {
    let ack = Ack {
        next_header: NextHeader::None,
        flags: AckFlags::empty(),
        request: AckRequest::None,
        ack_psn_offset: 0,
        cack_psn: 1000,
        spdcid: 1,
        dpdcid: 2,
        ext: AckExtension::Cc(AckCc {
            mpr: 8,
            sack_psn_offset: 0,
            sack_bitmap: 0,
            state: CcState::Nscc {
                service_time: 3,
                restore_cwnd: false,
                rcv_cwnd_pend: 0,
                rcvd_bytes: 4096,
                ooo_count: 0,
            },
        }),
    };
    let mut out = vec![0u8; 64];
    let n = PdsHeader::Ack(ack).emit(&mut out).unwrap();
    out.truncate(n);
    out
}

fn cms_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("cms");
    let acks = signals();
    let cfg = NsccConfig::new(LinkRate::GBPS_800, Duration::from_micros(12), 4096);
    let mut now = Instant::ZERO;
    let mut nscc = Nscc::new(cfg, now);
    let mut i = 0usize;
    g.bench_function("nscc/on_ack", |t| {
        t.iter(|| {
            i = (i + 1) % acks.len();
            now = now.saturating_add(Duration::from_nanos(40));
            nscc.on_send(4096);
            nscc.on_ack(now, black_box(acks[i])).unwrap();
            black_box(nscc.cwnd())
        })
    });
    g.bench_function("nscc/on_nack", |t| {
        t.iter(|| {
            now = now.saturating_add(Duration::from_nanos(40));
            nscc.on_send(4096);
            nscc.on_nack(now, black_box(NackSignal { bytes: 4096, rtt: None, last_hop: false }));
            black_box(nscc.cwnd())
        })
    });
    let bytes = ack_cc_bytes();
    g.bench_function("reference/ack_cc_parse", |t| {
        t.iter(|| {
            let h = PdsHeader::parse(black_box(&bytes)).unwrap();
            black_box(h.1.len())
        })
    });
    let mut cwnd = 150_000u64;
    g.bench_function("reference/aimd_on_ack", |t| {
        t.iter(|| {
            i = (i + 1) % acks.len();
            let a = black_box(acks[i]);
            if a.ecn {
                cwnd = (cwnd / 2).max(4096);
            } else {
                cwnd = (cwnd + 4096 * u64::from(a.acked) / cwnd).min(1 << 24);
            }
            black_box(cwnd)
        })
    });
    let mut pacer: PullPacer<64> = PullPacer::new(PullPacerConfig::new(LinkRate::GBPS_800, 1 << 20));
    let flows: Vec<_> = (0..64).map(|_| pacer.add_flow().unwrap()).collect();
    let mut target = 0u32;
    g.bench_function("rccc/pull_of_64_flows", |t| {
        t.iter(|| {
            now = now.saturating_add(Duration::from_micros(1));
            if pacer.poll_timeout().is_none() {
                target = (target + 64 * 16) & 0xFF_FFFF;
                for f in &flows {
                    pacer.on_target(*f, target).unwrap();
                }
            }
            black_box(pacer.poll_pull(now))
        })
    });
    g.finish();

    let mut g = c.benchmark_group("lb");
    let mut oblivious = Oblivious::new(256, 1);
    let mut reps = Reps::new(256, 1);
    let mut bitmap: Bitmap<256> = Bitmap::new(1);
    let mut k = 0u32;
    fn feedback(k: u32) -> PathFeedback {
        if k % 16 == 0 { PathFeedback::Ecn } else { PathFeedback::Good }
    }
    for (name, src) in [
        ("oblivious", &mut oblivious as &mut dyn EntropySource),
        ("reps", &mut reps as &mut dyn EntropySource),
        ("bitmap", &mut bitmap as &mut dyn EntropySource),
    ] {
        g.bench_function(format!("{name}/next_and_feedback"), |t| {
            t.iter(|| {
                k = k.wrapping_add(1);
                let ev = src.next_entropy(Instant::ZERO);
                src.on_feedback(Instant::ZERO, Some(black_box(ev)), feedback(k));
                black_box(ev)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, cms_benches);
criterion_main!(benches);
