//! Seeded UCIe die-to-die simulations: two adapters bring the link up over a simulated
//! sideband, negotiate, and carry flits both ways over a mainband with bit errors. Every flit
//! arrives exactly once and in order (checked inside [`UcieSim::run`]); 10^6 flits each way in
//! the bit-error run.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use ucie_adapter::crc::Format;
use ucie_adapter::param::{AdapterCaps, CxlCaps, ExchangeError, ExchangeState, LinkProtocol};
use xlink_examples::ucie_sim::{UcieSim, UcieSimConfig};

#[test]
fn a_clean_link_negotiates_format_6_and_needs_no_replay() {
    let r = UcieSim::new(UcieSimConfig::new(1, 20_000, 0.0)).run(1_000_000);
    let n = r.negotiated.unwrap();
    assert_eq!((n.protocol, n.format, n.retry), (LinkProtocol::Cxl256, Format::LatencyOptimized256Optional, true));
    assert_eq!(r.delivered, [20_000, 20_000]);
    assert_eq!((r.replays, r.naks, r.retrains, r.uncorrectable), (0, 0, 0, 0), "{r:?}");
}

#[test]
fn a_million_flits_each_way_over_bit_errors() {
    let r = UcieSim::new(UcieSimConfig::new(2, 1_000_000, 1e-6)).run(20_000_000);
    println!("{r:?}");
    assert_eq!(r.delivered, [1_000_000, 1_000_000]);
    assert!(r.corrupted > 1000 && r.replays > 100 && r.naks > 100, "{r:?}");
    assert_eq!(r.uncorrectable, 0);
}

#[test]
fn an_error_burst_beyond_retry_retrains_the_link() {
    let cfg = UcieSimConfig {
        burst_at: Some(5_000),
        burst_len: 50_000,
        burst_ber: 2e-3,
        ..UcieSimConfig::new(3, 50_000, 1e-7)
    };
    let r = UcieSim::new(cfg).run(10_000_000);
    println!("{r:?}");
    assert!(r.retrains >= 1, "{r:?}");
    assert_eq!(r.delivered, [50_000, 50_000]);
    assert_eq!(r.uncorrectable, 0);
}

#[test]
fn other_protocols_pick_their_formats() {
    use AdapterCaps as A;
    // PCIe flit mode: Format 3 (flit header at the end).
    let pcie = A::FLIT_68B | A::PCIE_FLIT | A::RETRY | A::STACK0;
    let cfg = UcieSimConfig { dp: pcie, up: pcie, cxl: CxlCaps::PCIE, ..UcieSimConfig::new(4, 20_000, 1e-6) };
    let r = UcieSim::new(cfg).run(5_000_000);
    assert_eq!(
        r.negotiated.map(|n| (n.protocol, n.format)),
        Some((LinkProtocol::PcieFlit, Format::Standard256EndHeader))
    );
    assert_eq!(r.delivered, [20_000, 20_000]);
    // CXL without 256B flits: 68B flits (Format 2).
    let cxl68 = A::FLIT_68B | A::RETRY | A::STACK0;
    let cfg = UcieSimConfig { dp: cxl68, up: cxl68, ..UcieSimConfig::new(5, 20_000, 1e-6) };
    let r = UcieSim::new(cfg).run(5_000_000);
    assert_eq!(r.negotiated.map(|n| (n.protocol, n.format)), Some((LinkProtocol::Cxl68, Format::Flit68)));
    assert_eq!(r.delivered, [20_000, 20_000]);
    // Standard 256B start header when one side lacks the latency-optimized formats.
    let cfg = UcieSimConfig {
        up: A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT | A::RETRY | A::STACK0,
        ..UcieSimConfig::new(6, 5_000, 0.0)
    };
    let r = UcieSim::new(cfg).run(5_000_000);
    assert_eq!(r.negotiated.map(|n| n.format), Some(Format::Standard256StartHeader));
    assert_eq!(r.delivered, [5_000, 5_000]);
}

#[test]
fn a_silent_peer_times_parameter_exchange_out() {
    let cfg = UcieSimConfig { silent_peer: true, ..UcieSimConfig::new(7, 10, 0.0) };
    let r = UcieSim::new(cfg).run_idle(8_000_000);
    assert_eq!(r.exchange, Some(ExchangeState::Failed(ExchangeError::Timeout)));
    assert!(r.uncorrectable >= 1, "{r:?}");
}

#[test]
fn two_stacks_share_the_link_and_never_send_back_to_back() {
    let r = UcieSim::new(UcieSimConfig::new(8, 50_000, 1e-6).two_stacks()).run(5_000_000);
    println!("{r:?}");
    assert_eq!(r.negotiated.map(|n| n.stacks), Some([true, true]));
    assert_eq!(r.delivered, [100_000, 100_000]);
    assert!(r.replays > 0);
    assert_eq!(r.same_stack_back_to_back, 0);
}

#[test]
fn two_protocols_share_the_link_with_enhanced_multi_protocol() {
    let r = UcieSim::new(UcieSimConfig::new(9, 30_000, 1e-6).two_protocols()).run(5_000_000);
    println!("{r:?}");
    let n = r.negotiated.unwrap();
    assert_eq!(
        (n.protocol, n.protocol_of(1), n.format),
        (LinkProtocol::Cxl256, LinkProtocol::PcieFlit, Format::Standard256StartHeader)
    );
    assert_eq!(r.delivered, [60_000, 60_000]);
    assert_eq!(r.same_stack_back_to_back, 0);
}
