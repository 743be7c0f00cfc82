//! Congestion management over a fabric with queues ([`xlink_examples::cms_sim`]): incast
//! fairness under NSCC and RCCC, NSCC's queue against its target, REPS against oblivious
//! spraying around a degraded path. Every run also checks, after every event, that NSCC's flight
//! is exactly the packets awaiting feedback, and at the end that nothing was delivered twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::Duration;
use xlink_examples::cms_sim::{Cc, CmsSim, CmsSimConfig, CmsSimReport, Degrade, Lb};

fn incast(seed: u64, cc: Cc) -> CmsSimReport {
    let cfg = CmsSimConfig::incast(seed, 16, cc);
    let r = CmsSim::new(cfg).run();
    println!(
        "seed {seed} {cc:?}: Jain {:.3}, {:.1} Gb/s, queue max {} B, mean delay {:?} (target {:?}), trims {} ({} last hop)",
        r.jain,
        r.goodput_gbps,
        r.max_queue,
        r.mean_queue_delay,
        cfg.target_qdelay(),
        r.trims,
        r.last_hop_trims
    );
    assert!(r.delivered_once);
    assert!(r.max_queue <= cfg.queue_capacity, "queue bounded by its capacity");
    assert!(r.goodput_gbps > 95.0, "the downlink stays busy: {:.1} Gb/s", r.goodput_gbps);
    r
}

/// Incast 16 → 1: the flows converge to fair shares of the downlink (Jain's index over the
/// second half of the run at least 0.95) under NSCC alone, RCCC alone, and both.
#[test]
fn incast_converges_to_fair_shares() {
    for seed in 1..=3 {
        for cc in [Cc::Nscc, Cc::Rccc, Cc::Both] {
            let r = incast(seed, cc);
            assert!(r.jain >= 0.95, "seed {seed} {cc:?}: Jain {:.3}", r.jain);
        }
    }
}

/// NSCC holds the downlink's mean queueing delay near its target: between ½ and 1.5 times it
/// (the link stays busy, the queue does not grow to its capacity).
#[test]
fn nscc_holds_the_queue_near_its_target() {
    for seed in 1..=3 {
        let target = CmsSimConfig::incast(seed, 16, Cc::Nscc).target_qdelay().as_nanos();
        let delay = incast(seed, Cc::Nscc).mean_queue_delay.as_nanos();
        assert!(
            delay * 2 >= target && delay * 2 <= target * 3,
            "seed {seed}: mean delay {delay} ns, target {target} ns"
        );
    }
}

/// One 16 MiB flow over 8 paths of 25 Gb/s; 200 µs in, path 0 becomes 10× slower or fails.
/// REPS recycles only EVs that came back unmarked, so it leaves the path; oblivious spraying
/// keeps sending it an eighth of the packets. Completion times of the same workload, printed.
#[test]
fn reps_routes_around_a_degraded_path() {
    for seed in 1..=3 {
        for degrade in [Degrade::Slower(10), Degrade::Failed] {
            let run = |lb| {
                let cfg = CmsSimConfig {
                    bytes_per_sender: Some(16 << 20),
                    duration: Duration::from_millis(50),
                    lb,
                    degrade: Some((degrade, Duration::from_micros(200))),
                    ..CmsSimConfig::incast(seed, 1, Cc::Nscc)
                };
                let r = CmsSim::new(cfg).run();
                assert!(r.delivered_once);
                r.completion.expect("the flow completes").as_nanos()
            };
            let healthy = {
                let cfg = CmsSimConfig {
                    bytes_per_sender: Some(16 << 20),
                    duration: Duration::from_millis(50),
                    ..CmsSimConfig::incast(seed, 1, Cc::Nscc)
                };
                CmsSim::new(cfg).run().completion.unwrap().as_nanos()
            };
            let (reps, oblivious, bitmap) = (run(Lb::Reps), run(Lb::Oblivious), run(Lb::Bitmap));
            println!(
                "seed {seed} {degrade:?}: completion healthy {healthy} ns; REPS {reps} ns, bitmap {bitmap} ns, oblivious {oblivious} ns"
            );
            assert!(reps * 10 <= healthy * 11, "REPS within 10 % of the healthy fabric");
            assert!(reps * 3 <= oblivious * 2, "REPS at least 1.5× faster than oblivious spraying");
        }
    }
}

/// Real endpoints in the same kind of incast: with their congestion management on, the
/// downlink's queue stays far below what the senders' PDC windows alone build, nothing is
/// dropped, the senders share fairly, and every message arrives exactly once (off or on).
#[test]
fn endpoints_with_congestion_management_keep_the_incast_queue_short() {
    use uet_wire::msg::LoadBalancing;
    use xlink_examples::cms_endpoint_sim::{CmsEndpointSimConfig, run};
    let off = run(&CmsEndpointSimConfig::incast(3, None));
    println!("endpoints, CMS off: {off:?}");
    assert!(off.exactly_once);
    for lb in [LoadBalancing::Reps { paths: 64 }, LoadBalancing::Oblivious { paths: 64 }, LoadBalancing::Bitmap] {
        let on = run(&CmsEndpointSimConfig::incast(3, Some(lb)));
        println!("endpoints, CMS on ({lb:?}): {on:?}");
        assert!(on.exactly_once, "{lb:?}");
        let (q_on, q_off) = (on.mean_late_queue, off.mean_late_queue);
        assert!(q_on * 4 < q_off.max(1), "{lb:?}: queue {q_on} vs {q_off}");
        assert!(on.drops <= off.drops, "{lb:?}");
        assert!(on.jain >= 0.9 && on.jain > off.jain, "{lb:?}: Jain {} vs {}", on.jain, off.jain);
    }
}

/// SLEEK on the endpoints under random loss on the paths: at 5 % it keeps the incast's goodput
/// within 2 % of the loss-free run (without it, the losses cost about 6 %), most resends are
/// SLEEK's, and every message still arrives exactly once.
#[test]
fn sleek_keeps_the_incast_goodput_under_random_loss() {
    use uet_wire::msg::LoadBalancing;
    use xlink_examples::cms_endpoint_sim::{CmsEndpointSimConfig, run};
    let cfg = |loss_ppm, sleek| CmsEndpointSimConfig {
        loss_ppm,
        sleek,
        ..CmsEndpointSimConfig::incast(1, Some(LoadBalancing::Reps { paths: 64 }))
    };
    let clean = run(&cfg(0, true));
    let (off, on) = (run(&cfg(50_000, false)), run(&cfg(50_000, true)));
    println!("5 % loss: SLEEK off {off:?}\nSLEEK on {on:?}\nno loss {clean:?}");
    assert!(clean.exactly_once && off.exactly_once && on.exactly_once);
    assert!(on.lost > 0 && on.sleek_resends * 2 > on.resends, "{on:?}");
    assert_eq!(off.sleek_resends, 0);
    assert!(on.goodput_gbps > 0.98 * clean.goodput_gbps, "{} vs {}", on.goodput_gbps, clean.goodput_gbps);
    assert!(on.goodput_gbps > off.goodput_gbps + 2.0, "{} vs {}", on.goodput_gbps, off.goodput_gbps);
}

/// RCCC through real endpoints, alone and beside NSCC: the receiver's pull pacer divides its
/// downlink among the 16 senders (Jain ≥ 0.99), the queue stays a small part of NSCC's own, and
/// every message arrives exactly once, with random loss on the paths too.
#[test]
fn endpoints_with_rccc_share_the_downlink_with_short_queues() {
    use uet_wire::msg::{Controllers, LoadBalancing};
    use xlink_examples::cms_endpoint_sim::{CmsEndpointSimConfig, run};
    let incast = |controllers, loss_ppm| CmsEndpointSimConfig {
        controllers,
        loss_ppm,
        ..CmsEndpointSimConfig::incast(3, Some(LoadBalancing::Reps { paths: 64 }))
    };
    let nscc = run(&incast(Controllers::Nscc, 0));
    for controllers in [Controllers::Rccc, Controllers::Both] {
        let r = run(&incast(controllers, 0));
        println!("endpoints, {controllers:?}: {r:?}");
        assert!(r.exactly_once, "{controllers:?}");
        assert!(r.jain >= 0.99, "{controllers:?}: Jain {}", r.jain);
        assert!(
            r.mean_late_queue * 4 < nscc.mean_late_queue,
            "{controllers:?}: {} vs {}",
            r.mean_late_queue,
            nscc.mean_late_queue
        );
        assert!(r.goodput_gbps > 95.0, "{controllers:?}: {} Gb/s", r.goodput_gbps);
        let lossy = run(&incast(controllers, 10_000));
        println!("endpoints, {controllers:?}, 1 % loss: {lossy:?}");
        assert!(lossy.exactly_once && lossy.lost > 0, "{controllers:?}");
        assert!(lossy.goodput_gbps > 93.0, "{controllers:?}: {} Gb/s", lossy.goodput_gbps);
    }
}
