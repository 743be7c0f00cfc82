//! Seeded CXL.cachemem links over 68B flits with link-layer retry: every message arrives
//! exactly once, in order per kind, with its data (checked inside [`CxlSim::run`]); 10^6 flits
//! each way in the bit-error run.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use xlink_examples::cxl_sim::{CxlSim, CxlSimConfig};

#[test]
fn a_clean_link_needs_no_retry() {
    let r = CxlSim::new(CxlSimConfig { seed: 1, messages: 20_000, ber: 0.0, mdh: true }).run(1_000_000);
    println!("{r:?}");
    assert_eq!(r.delivered, [20_000, 20_000]);
    assert_eq!((r.corrupted, r.retry_reqs, r.replayed), (0, 0, 0));
}

#[test]
fn a_million_flits_each_way_over_bit_errors() {
    let r = CxlSim::new(CxlSimConfig { seed: 2, messages: 1_400_000, ber: 1e-6, mdh: true }).run(3_000_000);
    println!("{r:?}");
    assert!(r.flits[0] >= 1_000_000 && r.flits[1] >= 1_000_000, "{r:?}");
    assert_eq!(r.delivered, [1_400_000, 1_400_000]);
    assert!(r.corrupted > 500 && r.retry_reqs > 500 && r.replayed > 1000, "{r:?}");
}

#[test]
fn heavy_errors_without_mdh() {
    let r = CxlSim::new(CxlSimConfig { seed: 3, messages: 100_000, ber: 2e-5, mdh: false }).run(2_000_000);
    println!("{r:?}");
    assert_eq!(r.delivered, [100_000, 100_000]);
    assert!(r.retry_reqs > 500, "{r:?}");
}
