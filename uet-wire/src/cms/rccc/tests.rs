use super::*;
use proptest::prelude::*;

const MAXWND: u32 = 225_000;
const MTU: u32 = 4096;

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

#[test]
fn a_new_flow_speculates_then_forfeits_its_credit_on_feedback() {
    let mut s = CreditSender::new(MAXWND, MTU);
    assert!(s.speculating() && s.can_send());
    for _ in 0..55 {
        s.on_send(MTU);
    }
    // 55 × 4 096 = 225 280: the last packet overdrew by 280 bytes, and no more may go.
    assert_eq!(s.credit(), -280);
    assert!(!s.can_send());
    // Feedback ends speculation; a debt stays a debt.
    s.on_feedback();
    assert_eq!((s.speculating(), s.credit()), (false, -280));
    let mut s = CreditSender::new(MAXWND, MTU);
    s.on_send(MTU);
    s.on_feedback();
    assert_eq!(s.credit(), 0);
}

#[test]
fn the_pull_target_asks_for_the_backlog_shared_among_active_senders() {
    let mut s = CreditSender::new(MAXWND, MTU);
    s.on_feedback();
    // 100 000 bytes, two senders: 50 000 each, 196 quanta rounded up (195.3).
    assert_eq!(s.pull_target(100_000, None, 2), 196);
    // NSCC's window bounds it: cwnd 8 192 + MTU = 12 288 bytes = 48 quanta.
    assert_eq!(s.pull_target(100_000, Some(8192), 1), 48);
    // maxwnd bounds it: 225 000 / 256 = 878.9 → 879.
    assert_eq!(s.pull_target(10_000_000, None, 1), 879);
    // Credit in hand is subtracted; while speculating at least one MTU is asked for.
    let mut s = CreditSender::new(MAXWND, MTU);
    assert_eq!(s.pull_target(1000, None, 1), 16);
    // Nothing wanted beyond the credit in hand: the last target again, which the receiver ignores.
    assert_eq!(s.pull_target(0, None, 1), 16);
}

#[test]
fn grants_add_their_step_once() {
    let mut s = CreditSender::new(MAXWND, MTU);
    s.on_send(MAXWND);
    s.on_feedback();
    s.pull_target(100_000, None, 1);
    assert_eq!(s.on_grant(64), Ok(16_384));
    assert_eq!(s.credit(), 16_384);
    // The same grant again adds nothing; an older one is refused.
    assert_eq!(s.on_grant(64), Ok(0));
    assert_eq!(s.on_grant(10), Err(Ignored::StaleGrant));
    assert_eq!(s.on_grant(128), Ok(16_384));
    // The step from the last grant seen counts, whatever was lost between.
    assert_eq!(s.on_grant(391), Ok(263 * 256));
    assert_eq!(s.granted(), 391);
    assert_eq!((s.stats().grants, s.stats().quanta, s.stats().stale, s.stats().ignored), (3, 391, 2, 1));
}

#[test]
fn credit_stops_at_maxwnd_and_a_grant_beyond_the_request_adds_only_up_to_it() {
    let mut s = CreditSender::new(MAXWND, MTU);
    s.on_feedback();
    assert_eq!(s.pull_target(100_000, None, 1), 391);
    // Asked 391; allowed 391 + 878 + 64 = 1 333. A grant of 1 334 adds 1 333 quanta's worth at
    // most (credit stops at maxwnd anyway), is counted, and moves the count to 1 334.
    assert_eq!(s.on_grant(1334), Ok(u64::from(MAXWND)));
    assert_eq!((s.granted(), s.stats().clamped, s.stats().quanta), (1334, 1, 1333));
    assert_eq!(s.credit(), i64::from(MAXWND));
    // The receiver's later grants count from there, within the next request.
    s.on_send(MAXWND);
    assert_eq!(s.pull_target(100_000, None, 1), 1334 + 391);
    assert_eq!(s.on_grant(1334 + 4), Ok(4 * 256));
}

#[test]
fn a_grant_far_beyond_the_request_adds_no_more_than_the_allowance() {
    let mut s = CreditSender::new(MAXWND, MTU);
    s.on_feedback();
    s.on_send(2 * MAXWND);
    assert_eq!(s.pull_target(100_000, None, 1), 879, "need is capped at maxwnd");
    // Allowed 879 + 878 + 64 = 1 821 quanta; a grant of 10 000 adds 1 821 × 256 bytes.
    let before = s.credit();
    assert_eq!(s.on_grant(10_000), Ok(1821 * 256));
    assert_eq!(s.credit(), before + 1821 * 256);
    assert_eq!((s.granted(), s.stats().clamped), (10_000, 1));
}

#[test]
fn grants_wrap_at_24_bits() {
    let mut s = CreditSender::new(u32::MAX, MTU);
    s.on_feedback();
    s.granted = (1 << 24) - 10;
    s.requested = 1 << 25;
    assert_eq!(s.on_grant(5), Ok(15 * 256));
    assert_eq!(s.granted(), (1 << 24) + 5);
    assert_eq!(s.on_grant(0xFF_FFFF), Err(Ignored::StaleGrant));
}

fn pacer() -> PullPacer<4> {
    PullPacer::new(PullPacerConfig::new(LinkRate::GBPS_100, MAXWND))
}

#[test]
fn the_pacer_serves_active_flows_round_robin_at_the_link_rate() {
    let mut p = pacer();
    let (a, b) = (p.add_flow().unwrap(), p.add_flow().unwrap());
    assert_eq!(p.poll_timeout(), None);
    assert_eq!(p.on_target(a, 100), Ok(true));
    assert_eq!(p.on_target(b, 100), Ok(true));
    assert_eq!(p.on_target(b, 100), Ok(false));
    let mut now = at(0);
    let mut order = Vec::new();
    while let Some(t) = p.poll_timeout() {
        now = now.max(t);
        let pull = p.poll_pull(now).unwrap();
        assert!(p.poll_pull(now).is_none(), "one pull per pacing interval");
        if pull.unsolicited {
            break;
        }
        order.push((pull.flow == a, pull.granted, pull.quanta, now.as_nanos()));
    }
    // 64 quanta take 64 × 256 × 8 bits / 99 Gb/s = 1 323.96 → 1 324 ns; 36 take 744.73 → 745.
    assert_eq!(order, [(true, 64, 64, 0), (false, 64, 64, 1324), (true, 100, 36, 2648), (false, 100, 36, 3393)]);
    // The loop stopped at the first unasked pull: `a`, idle, got 64 quanta more.
    assert_eq!(p.flow(a), Some((164, 100)));
}

/// Every pull the pacer makes from `now` on until none is due, and the time of the last.
fn drain<const N: usize>(p: &mut PullPacer<N>, mut now: Instant) -> (Vec<Pull>, Instant) {
    let mut pulls = Vec::new();
    while let Some(t) = p.poll_timeout() {
        now = now.max(t);
        pulls.push(p.poll_pull(now).unwrap());
    }
    (pulls, now)
}

#[test]
fn idle_flows_get_unasked_credit_up_to_maxwnd() {
    let mut p = pacer();
    let a = p.add_flow().unwrap();
    p.on_target(a, 10).unwrap();
    let (pulls, now) = drain(&mut p, at(0));
    // 10 asked, then unasked pulls of 64 while the unasked credit is below 878 quanta.
    assert_eq!(pulls.first().map(|p| (p.quanta, p.unsolicited)), Some((10, false)));
    assert!(pulls.iter().skip(1).all(|p| p.quanta == 64 && p.unsolicited));
    let (granted, target) = p.flow(a).unwrap();
    assert_eq!((granted - target) / 64, 14);
    assert_eq!(p.stats().unsolicited, 14);
    // A new request above the grants makes it active again.
    assert_eq!(p.on_target(a, 10 + 14 * 64 + 1), Ok(true));
    assert_eq!(p.poll_pull(now.saturating_add(Duration::from_micros(10))).map(|p| p.quanta), Some(1));
}

#[test]
fn the_pacer_refuses_what_it_does_not_hold() {
    let mut p = pacer();
    let ids: Vec<_> = (0..4).map(|_| p.add_flow().unwrap()).collect();
    assert_eq!(p.add_flow(), Err(Ignored::NoRoom));
    let first = ids[0];
    p.on_target(first, 100).unwrap();
    p.remove_flow(first).unwrap();
    assert_eq!(p.remove_flow(first), Err(Ignored::UnknownFlow));
    assert_eq!(p.on_target(first, 200), Err(Ignored::UnknownFlow));
    assert_eq!(p.poll_timeout(), None, "a removed flow leaves its queue");
    // The slot is reused under a new generation; the old id stays unknown.
    let again = p.add_flow().unwrap();
    assert_ne!(again, first);
    assert_eq!(p.flow(first), None);
    // A target beyond maxwnd past the grants is taken as that bound, and counted.
    assert_eq!(p.on_target(again, 879 + 64 + 1), Ok(true));
    assert_eq!((p.flow(again), p.stats().clamped), (Some((0, 879 + 64)), 1));
    assert_eq!(p.on_target(again, 879 + 64), Ok(false));
}

#[test]
fn a_slower_rate_spaces_the_pulls() {
    let mut p = pacer();
    let a = p.add_flow().unwrap();
    p.on_target(a, 900).unwrap();
    p.set_rate(500);
    p.poll_pull(at(0)).unwrap();
    // Half of 99 %: 64 quanta take 2 × 1 323.96 = 2 647.92 → 2 648 ns.
    assert_eq!(p.poll_timeout(), Some(at(2648)));
    p.set_rate(1000);
    p.poll_pull(at(2648)).unwrap();
    assert_eq!(p.poll_timeout(), Some(at(2648 + 1324)));
}

#[test]
fn a_small_grant_paces_for_its_own_size() {
    let mut p = pacer();
    let a = p.add_flow().unwrap();
    p.on_target(a, 1).unwrap();
    assert_eq!(p.poll_pull(at(0)).map(|p| p.quanta), Some(1));
    // One quantum: 2 048 bits at 99 Gb/s = 20.7 → 21 ns (four quanta only for an empty pull).
    assert_eq!(p.poll_timeout(), Some(at(21)));
}

#[test]
fn a_trimmed_packet_gets_its_flow_a_pull() {
    let mut p = pacer();
    let a = p.add_flow().unwrap();
    p.on_target(a, 10).unwrap();
    let (_, mut now) = drain(&mut p, at(0));
    // Idle and out of unasked credit: a trim still queues it, for one pull of 64.
    p.on_trimmed(a).unwrap();
    now = now.max(p.poll_timeout().unwrap());
    assert_eq!(p.poll_pull(now).map(|p| (p.quanta, p.unsolicited)), Some((64, true)));
    assert_eq!(p.poll_timeout(), None);
    let gone = p.add_flow().unwrap();
    p.remove_flow(gone).unwrap();
    assert_eq!(p.on_trimmed(gone), Err(Ignored::UnknownFlow));
}

#[test]
fn each_flow_has_its_senders_window() {
    let mut p = pacer();
    let wide = p.add_flow_with(4 * MAXWND).unwrap();
    // 4 × 225 000 / 256 = 3 515.6 → 3 516 quanta, plus one pull.
    assert_eq!(p.on_target(wide, 3516 + 64), Ok(true));
    assert_eq!(p.stats().clamped, 0);
    assert_eq!(p.on_target(wide, 3516 + 64 + 65), Ok(false));
    assert_eq!((p.flow(wide), p.stats().clamped), (Some((0, 3516 + 64)), 1));
}

proptest! {
    /// Senders and a pacer exchanging targets and grants over a channel that loses, repeats
    /// and reorders: no credit is created or destroyed. Every sender's credit comes from grants
    /// the pacer made (never more than it granted), and once the last grant arrives the sender
    /// holds exactly the pacer's count.
    #[test]
    fn credit_is_conserved(
        flows in 1usize..4,
        steps in proptest::collection::vec((any::<u8>(), 0u32..300_000, 0u16..1000), 1..300),
    ) {
        let mut p: PullPacer<4> = pacer();
        let mut senders: Vec<_> = (0..flows).map(|_| (p.add_flow().unwrap(), CreditSender::new(u32::MAX / 2, MTU))).collect();
        let mut wire: Vec<(usize, u32)> = Vec::new();
        let mut now = at(0);
        for (kind, backlog, delay) in steps {
            let i = usize::from(kind) % flows;
            match kind % 4 {
                0 => {
                    let (id, s) = &mut senders[i];
                    let t = s.pull_target(u64::from(backlog), None, flows as u32);
                    let _ = p.on_target(*id, t);
                }
                1 | 2 => {
                    now = now.saturating_add(Duration::from_nanos(u64::from(delay) * 10));
                    if let Some(pull) = p.poll_pull(now) {
                        let i = senders.iter().position(|(id, _)| *id == pull.flow).unwrap();
                        wire.push((i, pull.granted));
                        if kind & 0x40 != 0 {
                            wire.push((i, pull.granted));
                        }
                    }
                }
                _ => {
                    if wire.is_empty() {
                        continue;
                    }
                    let at = usize::from(delay) % wire.len();
                    let (i, g) = wire.remove(at);
                    if kind & 0x80 == 0 {
                        let s = &mut senders[i].1;
                        let _ = s.on_grant(g);
                    }
                }
            }
            for (id, s) in &senders {
                let (granted, _) = p.flow(*id).unwrap();
                prop_assert!(s.granted() <= granted);
                prop_assert_eq!(s.stats().quanta, s.granted());
            }
        }
        for (id, s) in &mut senders {
            let (granted, _) = p.flow(*id).unwrap();
            s.on_grant(granted as u32 & 0xFF_FFFF).unwrap();
            prop_assert_eq!(s.granted(), granted);
            prop_assert_eq!(s.stats().quanta, granted);
        }
    }
}
