use super::*;
use proptest::prelude::*;

const MTU: u32 = 4096;

/// 100 Gb/s, 12 µs: the reference network itself, so `a = 1`, `fi = 5 × 4 096`,
/// `η = ⌊0.15 × 4 096⌋ = 614`, `fi_scale = ¼`, `maxwnd = 225 000`, target 12 µs.
fn reference() -> NsccConfig {
    NsccConfig { initial_cwnd: Some(100_000), ..NsccConfig::new(LinkRate::GBPS_100, Duration::from_micros(12), MTU) }
}

fn at(us: u64) -> Instant {
    Instant::from_nanos(us * 1000)
}

fn ack(acked: u32, rtt_ns: u64, ecn: bool) -> AckSignal {
    AckSignal { acked, rtt: Some(Duration::from_nanos(rtt_ns)), ecn, penalty: 0 }
}

#[test]
fn constants_scale_from_the_reference_network() {
    let n = Nscc::new(reference(), at(0));
    assert_eq!((n.fi, n.eta, n.fast_q16), (20_480, 614, 1 << 14));
    // 4 × 4 096 × 2³² / 12 000.
    assert_eq!(n.alpha_q32, 5_864_062_014);
    assert_eq!((n.max_cwnd(), n.min_cwnd(), n.cwnd()), (225_000, 4096, 100_000));
    assert_eq!(n.target_qdelay(), Duration::from_micros(12));
    // With trimming the target is ¾ of the network RTT; at 400 Gb/s `a = 4`.
    let t = NsccConfig { trimming: true, link: LinkRate::GBPS_400, ..reference() };
    let n = Nscc::new(t, at(0));
    assert_eq!(n.target_qdelay(), Duration::from_micros(9));
    assert_eq!((n.fi, n.max_cwnd()), (4 * 20_480, 900_000));
    // Without an initial window the window starts at `maxwnd`.
    let n = Nscc::new(NsccConfig { initial_cwnd: None, ..reference() }, at(0));
    assert_eq!(n.cwnd(), 225_000);
}

#[test]
fn no_ecn_high_delay_is_a_fair_increase_applied_once_per_rtt() {
    let mut n = Nscc::new(reference(), at(0));
    // Delay = 24 − 12 µs = the target: fair increase, inc = 20 480 × 4 096 = 83 886 080.
    n.on_ack(at(1), ack(4096, 24_000, false)).unwrap();
    assert_eq!((n.inc, n.cwnd()), (83_886_080, 100_000));
    assert_eq!(n.stats().fair_increases, 1);
    // 13 µs after the start the period is over: cwnd += inc / cwnd (838) and η (614).
    n.on_ack(at(13), ack(4096, 24_000, false)).unwrap();
    assert_eq!(n.cwnd(), 100_000 + 2 * 83_886_080 / 100_000 + 614);
    assert_eq!((n.inc, n.stats().adjustments), (0, 1));
}

#[test]
fn no_ecn_low_delay_is_a_proportional_increase() {
    let mut n = Nscc::new(reference(), at(0));
    // Delay 2 µs: inc = α × 4 096 × (12 000 − 2 000) = 55 924 053 (exactly 55 924 053.3).
    n.on_ack(at(13), ack(4096, 14_000, false)).unwrap();
    assert_eq!(n.stats().proportional_increases, 1);
    assert_eq!(n.cwnd(), 100_000 + 55_924_053 / 100_000 + 614);
}

#[test]
fn a_window_of_bytes_under_one_microsecond_grows_fast() {
    let mut n = Nscc::new(reference(), at(0));
    // 100 001 bytes at 0.5 µs of delay: more than a window, so cwnd += 100 001 / 4.
    n.on_ack(at(1), ack(100_001, 12_500, false)).unwrap();
    assert_eq!(n.stats().fast_increases, 1);
    assert_eq!(n.cwnd(), 125_000);
    // Once fast, every low-delay ACK grows fast; a delay of 1 µs or more stops it.
    n.on_ack(at(2), ack(4000, 12_500, false)).unwrap();
    assert_eq!(n.cwnd(), 126_000);
    n.on_ack(at(3), ack(4000, 13_000, false)).unwrap();
    assert_eq!((n.stats().fast_increases, n.fast), (2, false));
}

#[test]
fn ecn_high_delay_decreases_at_most_once_per_base_rtt() {
    let mut n = Nscc::new(reference(), at(0));
    // A marked sample of 1.2 ms: the average moves to 1 200 000 / 80 = 15 000 ns > target, so
    // cwnd × (15 000 + 4 × 12 000) / (5 × 15 000) = 100 000 × 0.84.
    n.on_ack(at(1), ack(4096, 1_212_000, true)).unwrap();
    assert_eq!(n.avg_delay(), Duration::from_nanos(15_000));
    assert_eq!((n.cwnd(), n.stats().decreases), (84_000, 1));
    // Within the base RTT (12 µs) no second decrease.
    n.on_ack(at(5), ack(4096, 1_212_000, true)).unwrap();
    assert_eq!((n.cwnd(), n.stats().decreases), (84_000, 1));
    // After it, the factor is floored at ½ for a far larger average.
    let mut n = Nscc::new(reference(), at(0));
    n.on_ack(at(1), ack(4096, 80_000_000, true)).unwrap();
    assert_eq!(n.cwnd(), 50_000);
}

#[test]
fn ecn_low_delay_changes_nothing() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_ack(at(1), ack(4096, 13_000, true)).unwrap();
    assert_eq!((n.cwnd(), n.inc, n.stats().ecn_low_delay), (100_000, 0, 1));
}

#[test]
fn an_unmarked_sample_above_target_feeds_a_quarter_base_rtt_to_the_average() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_ack(at(1), ack(4096, 100_000, false)).unwrap();
    // 12 000 / 4 = 3 000 ns, weight 1/80.
    assert_eq!(n.avg_delay_q8, 3000 * 256 / 80);
}

#[test]
fn a_nack_subtracts_its_bytes_unless_credits_cover_a_last_hop_trim() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_send(8192);
    n.on_nack(at(1), NackSignal { bytes: 4096, rtt: None, last_hop: false });
    assert_eq!((n.cwnd(), n.in_flight()), (100_000 - 4096, 4096));
    // The NACK fed one network RTT of delay to the average.
    assert_eq!(n.avg_delay_q8, 12_000 * 256 / 80);
    let mut n = Nscc::new(NsccConfig { with_credit: true, ..reference() }, at(0));
    n.on_nack(at(1), NackSignal { bytes: 4096, rtt: None, last_hop: true });
    assert_eq!(n.cwnd(), 100_000);
    n.on_nack(at(2), NackSignal { bytes: 4096, rtt: None, last_hop: false });
    assert_eq!(n.cwnd(), 100_000 - 4096);
}

#[test]
fn quick_adapt_drops_the_window_to_what_was_achieved_then_ignores_marks() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_send(40_000);
    // The first ACK opens the epoch (until 1 + 12 + 12 µs); the second counts 4 096 achieved.
    n.on_ack(at(1), ack(4096, 24_000, false)).unwrap();
    n.on_ack(at(2), ack(4096, 24_000, false)).unwrap();
    let before = n.cwnd();
    // A NACK after the epoch: 4 096 achieved < maxwnd >> 3 = 28 125, so cwnd = 4 096.
    n.on_nack(at(30), NackSignal { bytes: 4096, rtt: None, last_hop: false });
    assert_eq!((n.cwnd(), n.stats().quick_adapts), (4096, 1));
    assert!(before > 4096);
    // What was in flight when it fired (40 000 sent − 8 192 acknowledged; the NACKed packet
    // leaves the flight after) must be acknowledged before a marked ACK counts again.
    assert_eq!(n.bytes_to_ignore, 40_000 - 8192);
    n.on_ack(at(31), ack(4096, 1_212_000, true)).unwrap();
    assert_eq!((n.cwnd(), n.stats().decreases), (4096, 0));
}

#[test]
fn quick_adapt_needs_a_trigger_and_a_small_achievement() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_ack(at(1), ack(4096, 24_000, false)).unwrap();
    // Many bytes achieved in the epoch: no quick adapt even on a NACK.
    n.on_ack(at(2), ack(60_000, 24_000, false)).unwrap();
    n.on_nack(at(30), NackSignal { bytes: 4096, rtt: None, last_hop: false });
    assert_eq!(n.stats().quick_adapts, 0);
    // Disabled: never.
    let mut n = Nscc::new(NsccConfig { quick_adapt: false, ..reference() }, at(0));
    n.on_ack(at(1), ack(4096, 24_000, false)).unwrap();
    n.on_nack(at(30), NackSignal { bytes: 4096, rtt: None, last_hop: false });
    assert_eq!(n.stats().quick_adapts, 0);
}

#[test]
fn a_timeout_takes_the_packet_off_the_window() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_send(4096);
    n.on_timeout(4096);
    assert_eq!((n.cwnd(), n.in_flight()), (100_000 - 4096, 0));
    let mut n = Nscc::new(NsccConfig { initial_cwnd: Some(5000), ..reference() }, at(0));
    n.on_timeout(4096);
    assert_eq!(n.cwnd(), 4096);
}

#[test]
fn a_smaller_rtt_lowers_the_base_and_maxwnd() {
    let mut n = Nscc::new(reference(), at(0));
    n.on_ack(at(1), ack(4096, 6000, false)).unwrap();
    assert_eq!((n.base_rtt(), n.max_cwnd()), (Duration::from_micros(6), 112_500));
}

#[test]
fn the_receivers_penalty_takes_its_share_of_the_acked_bytes() {
    // Not honoured by default.
    let mut n = Nscc::new(reference(), at(0));
    n.on_ack(at(1), AckSignal { acked: 12_700, rtt: None, ecn: true, penalty: 10 }).unwrap();
    assert_eq!(n.cwnd(), 100_000);
    let mut n = Nscc::new(NsccConfig { honor_penalty: true, ..reference() }, at(0));
    n.on_ack(at(1), AckSignal { acked: 12_700, rtt: None, ecn: true, penalty: 10 }).unwrap();
    assert_eq!(n.cwnd(), 100_000 - 1000);
    // Out of range: ignored and counted; the rest of the ACK counts.
    let r = n.on_ack(at(2), AckSignal { acked: 4096, rtt: None, ecn: true, penalty: 200 });
    assert_eq!(r, Err(Ignored::PenaltyOutOfRange));
    assert_eq!((n.cwnd(), n.stats().ignored, n.stats().acks), (99_000, 1, 2));
}

#[test]
fn can_send_follows_the_flight() {
    let mut n = Nscc::new(NsccConfig { initial_cwnd: Some(8192), ..reference() }, at(0));
    assert!(n.can_send(4096));
    n.on_send(4096);
    assert!(n.can_send(4096));
    n.on_send(4096);
    assert!(!n.can_send(1));
    n.on_ack(at(1), AckSignal { acked: 4096, ..AckSignal::default() }).unwrap();
    assert!(n.can_send(4096));
    // More acknowledged than in flight: the flight stops at zero, counted.
    n.on_ack(at(2), AckSignal { acked: 40_000, ..AckSignal::default() }).unwrap();
    assert_eq!((n.in_flight(), n.stats().excess_acked), (0, 1));
}

#[test]
fn received_bytes_follow_the_24_bit_count() {
    let mut r = ReceivedBytes::new();
    assert_eq!(r.advance(4096), Ok(4096));
    assert_eq!(r.advance(4096), Ok(0));
    assert_eq!(r.advance(100), Err(Ignored::StaleReceivedBytes));
    r.advance(0xFF_FF00).unwrap_err();
    let mut r = ReceivedBytes { last: 0xFF_FF00, refused: 0 };
    assert_eq!(r.advance(0x100), Ok(0x200));
    assert_eq!(r.advance(0x7F00_0100), Ok(0), "bits above 24 are not the count's");
    // A genuine jump of half the range is refused twice, then taken as the new count.
    assert_eq!(r.advance(0x80_0100), Err(Ignored::StaleReceivedBytes));
    assert_eq!(r.advance(0x80_1100), Err(Ignored::StaleReceivedBytes));
    assert_eq!(r.advance(0x80_2100), Ok(0));
    assert_eq!(r.advance(0x80_3100), Ok(0x1000));
}

#[test]
fn the_peers_round_trip_sets_the_base_and_maxwnd() {
    // A peer 24 µs away in a 12 µs network: the constants stay the reference's, the window's
    // room is the peer's BDP.
    let n = Nscc::new(NsccConfig { peer_rtt: Some(Duration::from_micros(24)), ..reference() }, at(0));
    assert_eq!((n.base_rtt(), n.max_cwnd(), n.fi), (Duration::from_micros(24), 450_000, 20_480));
    assert_eq!(n.target_qdelay(), Duration::from_micros(12));
}

#[derive(Clone, Debug)]
enum Op {
    Send(u32),
    Ack { acked: u32, rtt: Option<u32>, ecn: bool, penalty: u8 },
    Nack { bytes: u32, rtt: Option<u32>, last_hop: bool },
    Timeout(u32),
    Wait(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..70_000).prop_map(Op::Send),
        (0u32..300_000, proptest::option::of(0u32..5_000_000), any::<bool>(), any::<u8>())
            .prop_map(|(acked, rtt, ecn, penalty)| Op::Ack { acked, rtt, ecn, penalty }),
        (0u32..10_000, proptest::option::of(0u32..5_000_000), any::<bool>())
            .prop_map(|(bytes, rtt, last_hop)| Op::Nack { bytes, rtt, last_hop }),
        (0u32..10_000).prop_map(Op::Timeout),
        (0u32..200_000).prop_map(Op::Wait),
    ]
}

fn config() -> impl Strategy<Value = NsccConfig> {
    (
        prop_oneof![Just(25_000_000_000u64), Just(100_000_000_000), Just(800_000_000_000), 1u64..u64::MAX],
        prop_oneof![Just(12_000u64), 1u64..100_000, Just(u64::MAX)],
        prop_oneof![Just(4096u32), 0u32..10_000, Just(u32::MAX)],
        (any::<bool>(), any::<bool>(), any::<bool>(), 0u8..=255, proptest::option::of(any::<u32>())),
    )
        .prop_map(|(bps, rtt, mtu, (trimming, quick_adapt, with_credit, qa_gate, initial_cwnd))| {
            let link = LinkRate::new(bps).unwrap_or(LinkRate::GBPS_100);
            NsccConfig {
                honor_penalty: true,
                trimming,
                quick_adapt,
                with_credit,
                qa_gate,
                initial_cwnd,
                ..NsccConfig::new(link, Duration::from_nanos(rtt), mtu)
            }
        })
}

proptest! {
    /// Under any feedback the window stays within [MTU, maxwnd] and nothing panics.
    #[test]
    fn the_window_stays_in_bounds(cfg in config(), ops in proptest::collection::vec(op(), 0..200)) {
        let mut now = Instant::from_nanos(1_000_000);
        let mut n = Nscc::new(cfg, now);
        for op in ops {
            match op {
                Op::Send(b) => n.on_send(b),
                Op::Ack { acked, rtt, ecn, penalty } => {
                    let rtt = rtt.map(|r| Duration::from_nanos(u64::from(r)));
                    let r = n.on_ack(now, AckSignal { acked, rtt, ecn, penalty });
                    prop_assert_eq!(r.is_err(), penalty > MAX_PENALTY);
                }
                Op::Nack { bytes, rtt, last_hop } => {
                    let rtt = rtt.map(|r| Duration::from_nanos(u64::from(r)));
                    n.on_nack(now, NackSignal { bytes, rtt, last_hop });
                }
                Op::Timeout(b) => n.on_timeout(b),
                Op::Wait(ns) => now = now.saturating_add(Duration::from_nanos(u64::from(ns))),
            }
            prop_assert!(n.cwnd() >= n.min_cwnd(), "cwnd {} below {}", n.cwnd(), n.min_cwnd());
            prop_assert!(n.cwnd() <= n.max_cwnd().max(n.min_cwnd()), "cwnd {} above {}", n.cwnd(), n.max_cwnd());
        }
    }
}

/// Feeds a trace's feedback to an NSCC set up as the trace's simulator run was, checking the window
/// after every row against the simulator's within 0.1 % (the simulator computes in doubles and
/// truncates; this crate in fixed point). Returns the worst relative difference.
fn follow(trace: &str) -> (Nscc, f64) {
    let cfg = NsccConfig { trimming: true, ..NsccConfig::new(LinkRate::GBPS_100, Duration::from_micros(12), MTU) };
    // The simulator's clocks start at zero.
    let mut n = Nscc::new(cfg, Instant::ZERO);
    let mut worst = 0.0f64;
    for (row, line) in trace.lines().filter(|l| !l.starts_with('#')).skip(1).enumerate() {
        let f: std::vec::Vec<&str> = line.split(',').collect();
        let now = Instant::from_nanos(f[0].parse().unwrap());
        let rtt = f[2].parse::<i64>().unwrap();
        let rtt = (rtt >= 0).then(|| Duration::from_nanos(rtt as u64));
        let ecn = f[3] == "1";
        let expected: u64 = f[4].parse().unwrap();
        n.on_send(MTU);
        match f[1] {
            "ack" => n.on_ack(now, AckSignal { acked: MTU, rtt, ecn, penalty: 0 }).unwrap(),
            "nack" => n.on_nack(now, NackSignal { bytes: MTU, rtt, last_hop: false }),
            "timeout" => n.on_timeout(MTU),
            other => panic!("unknown row kind {other}"),
        }
        let off = (n.cwnd() as f64 - expected as f64).abs() / expected as f64;
        worst = worst.max(off);
        assert!(off <= 0.001, "row {row} ({line}): cwnd {} against the simulator's {expected}", n.cwnd());
    }
    (n, worst)
}

/// The UEC simulator's NSCC (a standalone transcription of its `uec.cpp` functions, run on a
/// scripted feedback sequence: `htsim_trace.csv`) and this one agree after every step: fair,
/// proportional and fast increases, 27 multiplicative decreases, NACKs, timeouts and ACKs
/// without a round-trip sample.
#[test]
fn the_window_follows_the_simulators() {
    let (n, worst) = follow(include_str!("htsim_trace.csv"));
    assert_eq!((n.stats().acks + n.stats().nacks + n.stats().timeouts, n.stats().decreases), (3000, 27));
    assert_eq!((n.stats().fast_increases, n.stats().quick_adapts), (512, 0));
    std::println!("worst relative difference {worst:.5}");
}

/// The same with sparse ACKs, so that quick adapt fires (72 times in the simulator), delays up
/// to 60 µs, and a base RTT that drops from 12 to 10 µs half way (`htsim_trace_qa.csv`).
#[test]
fn quick_adapt_and_a_lower_base_rtt_follow_the_simulator() {
    let trace = include_str!("htsim_trace_qa.csv");
    let (n, worst) = follow(trace);
    assert_eq!((n.stats().quick_adapts, n.stats().decreases), (72, 132));
    let smallest = trace.lines().filter_map(|l| l.split(',').nth(2)?.parse::<u64>().ok()).min().unwrap();
    assert_eq!((n.base_rtt(), smallest / 1000), (Duration::from_nanos(smallest), 10));
    std::println!("worst relative difference {worst:.5}");
}
