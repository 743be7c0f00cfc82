//! Seeded ETH-X simulations: two GPUs over an Ethernet link that loses, duplicates, reorders and
//! corrupts frames, running compression, aggregation and RC Link go-back-N. Every transaction
//! arrives exactly once and in order, with its data (checked inside [`EthxSim::run`]); 10^6
//! transactions in the 5 % run alone.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use xlink_examples::ethx_sim::{EthxSim, EthxSimConfig};

#[test]
fn a_clean_link_needs_no_retransmission() {
    let r = EthxSim::new(EthxSimConfig::new(1, 100_000, 0.0)).run(10_000_000);
    assert_eq!((r.retransmitted, r.naks, r.timeouts, r.refused), (0, 0, 0, 0));
    assert!(r.efficiency() > 0.8, "{r:?}");
    println!("clean: {r:?}, efficiency {:.3}", r.efficiency());
}

#[test]
fn lossy_links_deliver_every_transaction_once_in_order() {
    let mut total = 0;
    for (seed, transactions, loss) in [(2, 300_000, 0.001), (3, 300_000, 0.01), (4, 1_000_000, 0.05)] {
        let r = EthxSim::new(EthxSimConfig::new(seed, transactions, loss)).run(100_000_000);
        // What each pinned seed exercises (facts of its run, not promises of the protocol).
        assert!(r.lost > 0 && r.corrupted > 0 && r.duplicated > 0 && r.reordered > 0, "{r:?}");
        assert!(r.retransmitted > 0 && r.naks > 0 && r.refused > 0, "{r:?}");
        total += r.completed;
        println!("seed {seed} loss {loss}: {r:?}, efficiency {:.3}", r.efficiency());
    }
    assert!(total >= 1_600_000);
}

/// Over UE LLR + CBFC (`linklayer::link::Link`) the link layer replays what the wire loses or
/// corrupts, so RC Link's end-to-end retry has (almost) nothing left to do.
#[test]
fn over_llr_and_cbfc_the_link_layer_recovers_first() {
    for (seed, loss) in [(5, 0.0), (6, 0.01), (7, 0.05)] {
        let cfg = EthxSimConfig { link_layer: true, ..EthxSimConfig::new(seed, 100_000, loss) };
        let r = EthxSim::new(cfg).run(100_000_000);
        println!("seed {seed} loss {loss} over LLR: {r:?}, efficiency {:.3}", r.efficiency());
        if loss > 0.0 {
            assert!(r.link_replayed > 0 && r.lost > 0 && r.corrupted > 0, "{r:?}");
        }
        // The link layer recovered every frame before the end-to-end timer (200 µs) fired: a
        // fact of these seeds, as the end-to-end retry is still there for what LLR gives up on.
        assert_eq!((r.retransmitted, r.timeouts, r.refused), (0, 0, 0), "{r:?}");
    }
}
