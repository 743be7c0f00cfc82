use super::*;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

const T0: Instant = Instant::ZERO;

fn at_ms(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

#[test]
fn oblivious_visits_every_path_once_per_round() {
    let mut o = Oblivious::new(64, 7);
    assert_eq!(o.paths(), 64);
    let first = o.next_entropy(T0);
    let upper = first & !63;
    let mut seen = HashSet::from([first & 63]);
    for _ in 1..64 {
        let ev = o.next_entropy(T0);
        assert_eq!(ev & !63, upper, "upper bits fixed per selector");
        seen.insert(ev & 63);
    }
    assert_eq!(seen.len(), 64);
    // Exactly once per aligned round.
    let mut o = Oblivious::new(64, 7);
    for _ in 0..10 {
        let round: HashSet<u16> = (0..64).map(|_| o.next_entropy(T0) & 63).collect();
        assert_eq!(round.len(), 64);
    }
    // Feedback changes nothing; path counts round down to a power of two.
    let mut o2 = Oblivious::new(64, 7);
    let mut o3 = Oblivious::new(64, 7);
    o3.on_feedback(T0, Some(3), PathFeedback::Timeout);
    assert!((0..200).all(|_| o2.next_entropy(T0) == o3.next_entropy(T0)));
    assert_eq!((Oblivious::new(100, 1).paths(), Oblivious::new(0, 1).paths()), (64, 1));
}

#[test]
fn bitmap_skips_penalised_paths_and_forgives_them_slowly() {
    let mut b: Bitmap<8> = Bitmap::new(3);
    b.on_feedback(T0, Some(5), PathFeedback::Nack);
    b.on_feedback(T0, Some(5 | 0x100), PathFeedback::Ecn);
    assert_eq!((b.penalty(5), b.penalised()), (5, 1));
    b.on_feedback(T0, Some(2), PathFeedback::Timeout);
    b.on_feedback(T0, Some(2), PathFeedback::Timeout);
    assert_eq!(b.penalty(2), MAX_PATH_PENALTY);
    b.on_feedback(T0, Some(2), PathFeedback::Good);
    assert_eq!(b.penalty(2), MAX_PATH_PENALTY);
    // Path 5 comes back after it was met five times (each meeting forgives one point); path 2
    // after fifteen. Until then neither is used.
    let mut used = Vec::new();
    for _ in 0..8 * 20 {
        used.push(b.next_entropy(T0) & 7);
    }
    let first = |p: u16| used.iter().position(|&u| u == p).unwrap();
    // Each is met at most once per round of 8 indexes, and a round gives at least 6 draws.
    assert!(first(5) >= 4 * 6, "path 5 used at draw {}", first(5));
    assert!(first(2) >= 14 * 6, "path 2 used at draw {}", first(2));
    assert_eq!(b.penalised(), 0);
}

#[test]
fn bitmap_with_every_path_penalised_still_sends() {
    let mut b: Bitmap<4> = Bitmap::new(9);
    for p in 0..4 {
        b.on_feedback(T0, Some(p), PathFeedback::Timeout);
    }
    let total = |b: &Bitmap<4>| (0..4).map(|p| u32::from(b.penalty(p))).sum::<u32>();
    assert_eq!(total(&b), 60);
    // Each draw gives up after P + 1 steps, uses the path reached, and forgives one point.
    for _ in 0..8 {
        b.next_entropy(T0);
    }
    assert_eq!(total(&b), 52);
    // A timeout without an EV names no path: nothing is penalised.
    let mut b: Bitmap<4> = Bitmap::new(9);
    b.on_feedback(T0, None, PathFeedback::Timeout);
    assert_eq!(b.penalised(), 0);
}

#[test]
fn bitmap_gives_up_after_p_steps_as_the_simulator_does() {
    // Every path penalised: the walk forgives the first path met and advances P times, so the
    // EV used is the one P places after the start of the walk.
    let mut reference: Bitmap<4> = Bitmap::new(11);
    let mut b = reference;
    for p in 0..4 {
        b.on_feedback(T0, Some(p), PathFeedback::Timeout);
    }
    let order: Vec<u16> = (0..5).map(|_| reference.next_entropy(T0)).collect();
    assert_eq!(b.next_entropy(T0), order[4]);
}

#[test]
fn selectors_draw_their_upper_bits_per_seed() {
    let uppers: HashSet<u16> = (0..64u64).map(|seed| Bitmap::<64>::new(seed).next_entropy(T0) & !63).collect();
    assert!(uppers.len() > 50, "{} distinct upper bits over 64 seeds", uppers.len());
    let uppers: HashSet<u16> = (0..64u64).map(|seed| Oblivious::new(64, seed).next_entropy(T0) & !63).collect();
    assert!(uppers.len() > 50, "{} distinct upper bits over 64 seeds", uppers.len());
}

#[test]
fn reps_recycles_good_evs_in_order_once() {
    let mut r = Reps::new(64, 1);
    for ev in [10, 11, 12] {
        r.on_feedback(T0, Some(ev), PathFeedback::Good);
    }
    // Marked ACKs and NACKs do not recycle their EV.
    r.on_feedback(T0, Some(13), PathFeedback::Ecn);
    r.on_feedback(T0, Some(14), PathFeedback::Nack);
    assert_eq!(r.fresh(), 3);
    assert_eq!([r.next_entropy(T0), r.next_entropy(T0), r.next_entropy(T0)], [10, 11, 12]);
    // With none fresh, random EVs below the path count.
    assert!((0..100).all(|_| r.next_entropy(T0) < 64));
    // The ring keeps the latest eight.
    for ev in 100..110 {
        r.on_feedback(T0, Some(ev), PathFeedback::Good);
    }
    let reused: Vec<u16> = (0..8).map(|_| r.next_entropy(T0)).collect();
    assert_eq!(reused, (102..110).collect::<Vec<_>>());
}

#[test]
fn reps_freezes_on_a_timeout_and_explores_after() {
    let mut r = Reps::new(64, 1);
    for ev in [20, 21, 22] {
        r.on_feedback(T0, Some(ev), PathFeedback::Good);
    }
    r.on_feedback(at_ms(1), None, PathFeedback::Timeout);
    assert!(r.frozen());
    // Frozen: the remembered EVs round robin, used or not.
    let evs: Vec<u16> = (0..7).map(|_| r.next_entropy(at_ms(2))).collect();
    assert_eq!(evs, [20, 21, 22, 20, 21, 22, 20]);
    // Sending alone never ends the freeze, nor does feedback within 10 ms.
    r.on_feedback(at_ms(11), Some(23), PathFeedback::Good);
    assert!(r.frozen());
    // The first feedback after 10 ms ends it: the ring is cleared, then 16 random EVs.
    r.on_feedback(at_ms(12), Some(30), PathFeedback::Ecn);
    assert!(!r.frozen());
    assert_eq!(r.fresh(), 0);
    r.on_feedback(at_ms(12), Some(31), PathFeedback::Good);
    let explore: Vec<u16> = (0..16).map(|_| r.next_entropy(at_ms(12))).collect();
    assert!(explore.iter().all(|&ev| ev < 64));
    assert_eq!(r.next_entropy(at_ms(12)), 31, "after exploring, the recycled EV");
    // A timeout while exploring does not freeze.
    let mut r = Reps::new(64, 1);
    r.on_feedback(T0, None, PathFeedback::Timeout);
    r.on_feedback(at_ms(20), None, PathFeedback::Timeout);
    assert!(!r.frozen());
    r.next_entropy(T0);
    r.on_feedback(at_ms(20), None, PathFeedback::Timeout);
    assert!(!r.frozen(), "still exploring (15 left)");
}

/// A fabric of 16 paths where path 3 drops everything: REPS, learning only from good ACKs,
/// stops using it; oblivious spraying keeps sending 1/16 of the packets into it.
#[test]
fn reps_routes_around_a_failed_path_where_oblivious_cannot() {
    fn run(src: &mut dyn EntropySource) -> usize {
        let mut lost = 0;
        let mut in_flight: Vec<u16> = Vec::new();
        for step in 0..4000u64 {
            let now = Instant::from_nanos(step * 1000);
            let ev = src.next_entropy(now);
            if ev & 15 == 3 {
                lost += usize::from(step >= 2000);
            } else {
                in_flight.push(ev);
            }
            // ACKs come back two packets later.
            if in_flight.len() > 2 {
                let ev = in_flight.remove(0);
                src.on_feedback(now, Some(ev), PathFeedback::Good);
            }
        }
        lost
    }
    let lost_oblivious = run(&mut Oblivious::new(16, 5));
    let lost_reps = run(&mut Reps::new(16, 5));
    assert_eq!(lost_oblivious, 2000 / 16);
    assert_eq!(lost_reps, 0, "REPS keeps recycling the good EVs");
}

proptest! {
    /// Any feedback sequence: EVs stay in range and nothing panics.
    #[test]
    fn selectors_stay_in_range(
        paths in 0u16..300,
        seed in any::<u64>(),
        ops in proptest::collection::vec((any::<u8>(), any::<u16>(), 0u64..20_000_000), 0..300),
    ) {
        let mut o = Oblivious::new(paths, seed);
        let mut r = Reps::new(paths, seed);
        let mut b: Bitmap<16> = Bitmap::new(seed);
        let mut now = Instant::ZERO;
        let mut counts: HashMap<u16, u32> = HashMap::new();
        for (kind, ev, wait) in ops {
            now = now.saturating_add(Duration::from_nanos(wait));
            let feedback = match kind % 5 {
                0 => None,
                1 => Some(PathFeedback::Good),
                2 => Some(PathFeedback::Ecn),
                3 => Some(PathFeedback::Nack),
                _ => Some(PathFeedback::Timeout),
            };
            let ev = (kind & 0x80 != 0).then_some(ev);
            match feedback {
                None => {
                    o.next_entropy(now);
                    let e = r.next_entropy(now);
                    // REPS hands out what it learnt, or random EVs below the path count.
                    *counts.entry(e).or_default() += 1;
                    b.next_entropy(now);
                }
                Some(f) => {
                    o.on_feedback(now, ev, f);
                    r.on_feedback(now, ev.map(|e| e % paths.max(1)), f);
                    b.on_feedback(now, ev, f);
                }
            }
            prop_assert!(b.penalised() <= 16);
            prop_assert!((0..16).all(|p| b.penalty(p) <= MAX_PATH_PENALTY));
            prop_assert!(r.fresh() <= REPS_BUFFER);
        }
        prop_assert!(counts.keys().all(|&e| e < paths.max(1)));
    }
}
