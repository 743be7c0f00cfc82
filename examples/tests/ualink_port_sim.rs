//! Seeded runs of two `UpliPort`s (UALink 200): every request ends exactly once with its data
//! intact, on a clean link, a lossy one, and through link downs (checked inside
//! [`PortSim::run`]).

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use xlink_examples::ualink_port_sim::{PortSim, PortSimConfig};

#[test]
fn a_clean_link_answers_every_request() {
    let r = PortSim::new(PortSimConfig::new(1, 20_000)).run(2_000_000);
    assert_eq!((r.answered, r.failed, r.replays, r.link_downs), (40_000, 0, 0, 0));
}

#[test]
fn lost_and_corrupted_flits_are_replayed_and_every_request_answered() {
    for (seed, rate) in [(2, 1e-3), (3, 1e-2)] {
        let cfg = PortSimConfig { loss: rate, bit_errors: rate, ..PortSimConfig::new(seed, 10_000) };
        let r = PortSim::new(cfg).run(5_000_000);
        assert_eq!((r.answered, r.failed), (20_000, 0), "seed {seed}");
        assert!(r.replays > 0, "seed {seed}: the damage was replayed");
    }
}

#[test]
fn link_downs_end_every_request_once_and_the_link_comes_back() {
    let cfg = PortSimConfig { link_downs: vec![3_000, 9_000], loss: 1e-3, ..PortSimConfig::new(4, 10_000) };
    let r = PortSim::new(cfg).run(5_000_000);
    assert_eq!(r.answered + r.failed, 20_000);
    assert!(r.failed > 0 && r.dropped > 0, "{r:?}");
    assert!(r.link_downs >= 4, "both ports went down twice: {r:?}");
}
