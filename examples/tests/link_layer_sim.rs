//! Seeded link simulations of UE LLR + CBFC (issue: at least 10^6 frames with frame corruption at
//! 1e-3 and 1e-5, loss and corruption of ACKs/NACKs and every other CtlOS, and delay): every
//! frame delivered exactly once and in order, no stall, no credit leak.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::Duration;
use linklayer::cbfc::Vc;
use linklayer::llr::FrameAction;
use xlink_examples::link_sim::{REPLAY_SLOTS, Sim, SimConfig, SimReport};

fn run(cfg: SimConfig) -> (Sim, SimReport) {
    let frames = cfg.frames_per_end;
    let mut sim = Sim::new(cfg);
    let r = sim.run(Duration::from_millis(60_000));
    assert!(r.completed, "stalled: {r:?}");
    if sim.cfg.exactly_once {
        assert_eq!(r.delivered, 2 * frames, "{r:?}");
        assert_eq!(r.flushes, 0, "{r:?}");
        // Every frame arrived, so every corrupted transmission was followed by another
        // transmission of the same frame: a replay. This holds whatever the seed did.
        assert!(r.frames_replayed >= r.corrupted, "{r:?}");
    }
    (sim, r)
}

/// What a pinned seed exercises. Unlike the checks in [`run`], which hold for every seed, these
/// are facts of one seed's run (deterministic, so never flaky): they keep a test from passing
/// vacuously, and a change that re-rolls the random stream fails them loudly until the seed or
/// the bound is chosen again.
fn covers(what: &str, holds: bool, r: &SimReport) {
    assert!(holds, "this seed no longer exercises {what}: {r:?}");
}

/// After the traffic, every credit must come back: the receivers have drained, so once a
/// CC_Update round and the CF_Updates have crossed, nothing is in use. Checked every 100 µs of
/// simulated time for at most `max_wait` (CC_Updates are 256 µs apart, and on a link that flushes
/// a round can be lost).
fn assert_no_credit_leak(sim: &mut Sim, max_wait: Duration) {
    let vcs: Vec<Vc> = sim.cfg.vcs.iter().map(|&(vc, _)| Vc::new(vc).unwrap()).collect();
    let settled = |sim: &Sim| {
        (0..2).all(|end| {
            vcs.iter().all(|&vc| sim.ends[1 - end].cbfc_rx.occupancy(vc) == 0 && sim.ends[end].cbfc_tx.in_use(vc) == 0)
        })
    };
    let mut waited = Duration::ZERO;
    while !settled(sim) {
        assert!(waited < max_wait, "credits leaked: still in use after {waited}");
        sim.run_for(Duration::from_micros(100));
        waited = waited.saturating_add(Duration::from_micros(100));
    }
}

const ONE_ROUND: Duration = Duration::from_micros(600);

#[test]
fn million_frames_at_fer_1e3_with_control_loss() {
    let mut cfg = SimConfig::new(0x5EED_0001, 500_000, 1e-3);
    cfg.ctl_loss_rate = 1e-3;
    cfg.ctl_corrupt_rate = 1e-3;
    let (mut sim, r) = run(cfg);
    covers("frame and CtlOS damage", r.corrupted > 500 && r.nacks > 500 && r.ctl_damaged > 50, &r);
    assert_no_credit_leak(&mut sim, ONE_ROUND);
}

#[test]
fn million_frames_at_fer_1e5_with_control_loss() {
    let mut cfg = SimConfig::new(0x5EED_0002, 500_000, 1e-5);
    cfg.ctl_loss_rate = 1e-4;
    let (mut sim, r) = run(cfg);
    covers("a corrupted frame", r.corrupted > 0, &r);
    assert_no_credit_leak(&mut sim, ONE_ROUND);
}

#[test]
fn hostile_link_many_seeds() {
    // 5 % of frames corrupted, 5 % of control ordered sets lost and 5 % corrupted.
    for seed in 0..8 {
        let mut cfg = SimConfig::new(seed, 10_000, 5e-2);
        cfg.ctl_loss_rate = 5e-2;
        cfg.ctl_corrupt_rate = 5e-2;
        cfg.llr.replay_count_max = 64;
        let (mut sim, r) = run(cfg);
        covers("many replays", r.replays > 100, &r);
        assert_no_credit_leak(&mut sim, ONE_ROUND);
    }
}

#[test]
fn long_link_delay() {
    // 2 km of fibre: 10 µs each way; the replay timer and window grow with the round trip.
    let mut cfg = SimConfig::new(7, 50_000, 1e-3);
    cfg.delay = Duration::from_micros(10);
    cfg.llr.replay_timeout = Duration::from_micros(25);
    cfg.llr.outstanding_frames_max = REPLAY_SLOTS as u32;
    cfg.llr.outstanding_bytes_max = 256 * 1024;
    cfg.vcs = vec![(3, 4000)];
    cfg.ctl_loss_rate = 1e-3;
    let (mut sim, _) = run(cfg);
    assert_no_credit_leak(&mut sim, ONE_ROUND);
}

#[test]
fn credit_starvation_throttles_without_loss() {
    // The consumers drain 10x slower than the link delivers: CBFC must hold the senders back.
    let mut cfg = SimConfig::new(11, 20_000, 1e-3);
    cfg.drain_time = Duration::from_nanos(250);
    cfg.vcs = vec![(0, 16), (31, 10)];
    let (mut sim, r) = run(cfg);
    covers("credit starvation", r.credit_stalls > 10_000, &r);
    assert_no_credit_leak(&mut sim, ONE_ROUND);
}

#[test]
fn flush_loses_frames_and_cc_update_recovers_their_credits() {
    // One replay is allowed and a tenth of frames are corrupted: LLR gives up (FLUSH),
    // re-initialises, and the frames it dropped are gone. CBFC's CC_Update must recover their
    // credits, or the link would run out of credit and stall.
    let mut cfg = SimConfig::new(3, 20_000, 0.1);
    cfg.exactly_once = false;
    cfg.llr.replay_count_max = 1;
    cfg.llr.reinit_on_flush = true;
    cfg.llr.flush_action = FrameAction::Block;
    let (mut sim, r) = run(cfg);
    covers("a FLUSH that loses frames", r.flushes > 0 && r.lost > 0, &r);
    // Frames lost in FLUSH held credits that only a CC_Update gives back.
    assert!(r.lost == 0 || r.credits_recovered > 0, "{r:?}");
    assert_eq!(r.delivered + r.lost, 40_000);
    assert_no_credit_leak(&mut sim, Duration::from_millis(20));
}
