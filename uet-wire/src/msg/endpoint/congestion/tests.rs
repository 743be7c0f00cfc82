//! Congestion management on the endpoint: the window holds new packets back and opens with
//! ACKs, ECN with queueing delay cuts it, every packet names a path, and exchanges under loss,
//! duplication and reordering deliver everything once with the CCC's flight exact throughout
//! (`check_invariants` runs after every transmit round).

use super::super::tests::{Ep, Run, config, desc, exchange_run, lens};
use super::*;
use crate::pdc::ipv4;
use linklayer::{Duration, LinkRate};
use std::vec::Vec;

/// NSCC for a 100 Gb/s link in a 2 µs network, packets of the tests' 1 024-byte MTU, starting
/// with a window of `initial` packets; entropy as `lb`.
fn cms(initial: u32, lb: LoadBalancing) -> CmsConfig {
    let mut nscc = NsccConfig::new(LinkRate::GBPS_100, Duration::from_micros(2), 1024);
    nscc.initial_cwnd = Some(initial * 1024);
    CmsConfig { nscc, lb, seed: 7, sleek: true, controllers: Controllers::Nscc }
}

fn managed(addr: IpAddr, cms: CmsConfig) -> EndpointConfig {
    EndpointConfig { cms: Some(cms), close_when_idle: false, ..config(addr) }
}

/// Everything `ep` sends now, as (packet, entropy).
fn drain(ep: &mut Ep, now: Instant) -> Vec<(Vec<u8>, Option<u16>)> {
    let mut out = [0u8; 256];
    let mut pkts = Vec::new();
    while let Some(t) = ep.poll_transmit(now, &mut out).unwrap() {
        assert!(pkts.len() < 1000, "poll_transmit does not end: {t:?}");
        let mut pkt = out[..t.header_len].to_vec();
        pkt.resize(t.header_len + t.payload.map_or(0, |p| usize::from(p.len)), 0);
        pkts.push((pkt, t.entropy));
    }
    ep.check_ready_lists(now);
    pkts
}

/// SLEEK on the endpoint: a PDC whose last packets were lost sends a PROBE (with a path) after
/// the tail-loss time; the target answers with P set; the answer comes back sooner than the
/// queueing-delay target, so the PDC resends every missing packet at once, where without SLEEK
/// it would wait for its retransmission timer.
#[test]
fn a_probe_answered_quickly_resends_the_missing_packets() {
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let pdc = crate::pdc::PdcConfig::sprayed(Duration::from_micros(4));
    let cfg = EndpointConfig { pdc, ..managed(a_addr, cms(16, LoadBalancing::Reps { paths: 8 })) };
    let mut a = Ep::new(cfg, 1);
    let mut b = Ep::new(EndpointConfig { pdc, close_when_idle: false, ..config(b_addr) }, 2);
    a.send(desc(b_addr, Service::Rud, 0, 8 * 1024)).unwrap();
    let mut now = Instant::ZERO;
    // The first packet draws B's ACK (SYN); of the rest, the last three are lost.
    let sent = drain(&mut a, now);
    assert_eq!(sent.len(), 8);
    for (pkt, _) in &sent[..5] {
        b.handle_packet(now, a_addr, pkt).unwrap();
    }
    now = now.saturating_add(Duration::from_micros(2));
    for (pkt, _) in drain(&mut b, now) {
        a.handle_packet(now, b_addr, &pkt).unwrap();
    }
    assert!(drain(&mut a, now).is_empty(), "nothing to send before the probe");
    // The probe timer is the first deadline, well before the RTO.
    now = a.poll_timeout().unwrap();
    assert!(now < Instant::from_nanos(Duration::from_micros(8 + 4).as_nanos()), "{now:?}");
    a.handle_timeout(now);
    let probe = drain(&mut a, now);
    assert_eq!(probe.len(), 1);
    let (pkt, ev) = &probe[0];
    assert!(ev.is_some(), "a probe names its path");
    let Ok((crate::pds::PdsHeader::Control(c), _)) = crate::pds::PdsHeader::parse(pkt) else {
        panic!("a control packet")
    };
    assert_eq!(c.ctl_type, crate::pds::ControlType::Probe);
    b.handle_packet(now, a_addr, pkt).unwrap();
    let answer = drain(&mut b, now);
    assert_eq!(answer.len(), 1);
    let Ok((crate::pds::PdsHeader::Ack(ack), _)) = crate::pds::PdsHeader::parse(&answer[0].0) else { panic!("an ACK") };
    assert!(ack.flags.contains(crate::pds::AckFlags::P));
    // Back after 1 µs: below NSCC's target delay over its base RTT.
    now = now.saturating_add(Duration::from_micros(1));
    a.handle_packet(now, b_addr, &answer[0].0).unwrap();
    let resent = drain(&mut a, now);
    assert_eq!(resent.len(), 3, "the three lost packets, at once");
    assert_eq!(a.stats().resends.sleek, 3);
    assert_eq!(a.stats().resends.probes, 1);
    for (pkt, _) in &resent {
        b.handle_packet(now, a_addr, pkt).unwrap();
    }
    for (pkt, _) in drain(&mut b, now) {
        a.handle_packet(now, b_addr, &pkt).unwrap();
    }
    assert!(core::iter::from_fn(|| a.poll_event()).any(|e| matches!(e, Event::Sent(_))));
    assert_eq!(a.stats().resends.timeout, 0);
    assert_eq!(a.congestion(&b_addr).unwrap().in_flight(), 0);
}

#[test]
fn a_shut_window_holds_new_packets_until_acks_open_it() {
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let mut a = Ep::new(managed(a_addr, cms(2, LoadBalancing::Oblivious { paths: 4 })), 1);
    let mut b = Ep::new(EndpointConfig { close_when_idle: false, ..config(b_addr) }, 2);
    a.send(desc(b_addr, Service::Rud, 0, 6 * 1024)).unwrap();
    let mut now = Instant::ZERO;
    let mut evs = Vec::new();
    let mut first = true;
    for _ in 0..100 {
        if a.messages_in_flight() == 0 {
            break;
        }
        let sent = drain(&mut a, now);
        let requests: Vec<_> = sent.iter().filter(|(p, _)| p.len() > 1024).collect();
        // The window takes two packets: never more in flight than that.
        assert!(requests.len() <= 2, "{} requests sent into a window of two", requests.len());
        if first {
            assert_eq!(requests.len(), 2);
            assert_eq!(a.congestion(&b_addr).unwrap().in_flight(), 2 * 1024);
            first = false;
        }
        for (pkt, ev) in &sent {
            evs.push(ev.expect("a request of a PDC with a CCC names its path"));
            b.handle_packet(now, a_addr, pkt).unwrap();
        }
        now = now.saturating_add(Duration::from_micros(1));
        for (pkt, ev) in drain(&mut b, now) {
            assert_eq!(ev, None, "the target's ACKs are the caller's to route");
            a.handle_packet(now, b_addr, &pkt).unwrap();
        }
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
    }
    assert!(evs.len() >= 6);
    // Oblivious spraying: every path once per round of four.
    let mut round: Vec<u16> = evs[..4].iter().map(|ev| ev & 3).collect();
    round.sort_unstable();
    assert_eq!(round, [0, 1, 2, 3]);
    let nscc = a.congestion(&b_addr).unwrap();
    assert_eq!(nscc.in_flight(), 0);
    assert!(nscc.stats().acks >= 3, "{:?}", nscc.stats());
}

#[test]
fn ecn_marks_with_queueing_delay_cut_the_window() {
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let mut a = Ep::new(managed(a_addr, cms(32, LoadBalancing::Reps { paths: 16 })), 1);
    let mut b = Ep::new(EndpointConfig { close_when_idle: false, ..config(b_addr) }, 2);
    let mut now = Instant::ZERO;
    for i in 0..120u64 {
        a.send(desc(b_addr, Service::Rud, i, 100)).unwrap();
        for (pkt, _) in drain(&mut a, now) {
            // The first round trips set a base RTT of 1 µs; later packets meet a queue of 6 µs
            // (above the 2 µs target, below the 8 µs at which quick adapt takes over) and come
            // CE-marked. The averaged delay passes the target after some 30 of them.
            let _ = if i < 4 { b.handle_packet(now, a_addr, &pkt) } else { b.handle_ce_packet(now, a_addr, &pkt) };
        }
        now = now.saturating_add(Duration::from_micros(if i < 4 { 1 } else { 7 }));
        for (pkt, _) in drain(&mut b, now) {
            a.handle_packet(now, b_addr, &pkt).unwrap();
        }
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
    }
    let nscc = a.congestion(&b_addr).unwrap();
    assert_eq!(nscc.base_rtt(), Duration::from_micros(1));
    assert!(nscc.stats().decreases > 0, "{:?}", nscc.stats());
    assert!(nscc.cwnd() < 32 * 1024, "window {}", nscc.cwnd());
    assert_eq!(nscc.in_flight(), 0);
}

/// Runs the test exchange with congestion management on, under `loss` per mille each way with
/// reordering; every message arrives once, in order, whole.
fn managed_exchange(lb: LoadBalancing, initial: u32, loss: u32, seed: u64) -> (Ep, Ep) {
    managed_exchange_with(cms(initial, lb), loss, seed)
}

/// [`managed_exchange`] with congestion management as `cms`, on both sides.
fn managed_exchange_with(cms: CmsConfig, loss: u32, seed: u64) -> (Ep, Ep) {
    let a = EndpointConfig { cms: Some(cms), ..config(ipv4([10, 0, 0, 1])) };
    let run = Run {
        respond_every: 0,
        keys: 1,
        mode: Service::Rud,
        loss,
        reorder: true,
        window: 16,
        read_every: 5,
        pause: None,
        seed,
        corrupt: 0,
    };
    let l = lens(120);
    let (received, sent, a, b, left) = exchange_run(&run, a, &l);
    assert!(left.is_empty());
    assert_eq!(sent, l.len());
    let reads = l.len() / 5;
    assert_eq!(received.len(), l.len(), "{reads} READs and the rest");
    (a, b)
}

#[test]
fn every_message_arrives_once_with_the_window_and_spraying_under_loss() {
    let b_addr = ipv4([10, 0, 0, 2]);
    for (i, lb) in [LoadBalancing::Oblivious { paths: 8 }, LoadBalancing::Reps { paths: 16 }, LoadBalancing::Bitmap]
        .into_iter()
        .enumerate()
    {
        for (initial, loss) in [(1, 0), (4, 30), (64, 60)] {
            let (a, _b) = managed_exchange(lb, initial, loss, 0x5EED + i as u64);
            // Every PDC closed when idle: the flight went back to zero.
            let nscc = a.congestion(&b_addr).expect("a CCC for B");
            assert_eq!(nscc.in_flight(), 0, "{lb:?} {initial} {loss}");
            assert!(nscc.stats().acks > 0);
            // Losses were recovered (the flight's accounting through them is checked after every
            // round by `check_invariants`).
            let r = a.stats().resends;
            assert_eq!(loss > 0, r.total() > 0, "{lb:?} {initial} {loss}: {r:?}");
            // SLEEK (on in these runs) marked some of them before any timer.
            assert_eq!(loss > 0, r.sleek > 0, "{lb:?} {initial} {loss}: {r:?}");
        }
    }
}

/// RCCC alone and beside NSCC, both ends running it: requests carry their pull target, the
/// receiver's pacer grants credit by CREDIT packets and in its ACKs, and under loss, duplication
/// and reordering every message arrives once with the CCC's flight exact throughout.
#[test]
fn rccc_alone_and_with_nscc_delivers_everything_once() {
    let b_addr = ipv4([10, 0, 0, 2]);
    for controllers in [Controllers::Rccc, Controllers::Both] {
        for loss in [0, 40] {
            let c = CmsConfig { controllers, ..cms(8, LoadBalancing::Reps { paths: 8 }) };
            let (a, b) = managed_exchange_with(c, loss, 0xC0FFEE + u64::from(loss));
            let credit = a.credit(&b_addr).expect("A's CCC for B runs RCCC");
            assert!(!credit.speculating(), "feedback ended speculation");
            assert!(credit.stats().grants > 0 && credit.stats().targets > 0, "{:?}", credit.stats());
            let pulls = b.pull_stats().expect("B runs a pull pacer");
            assert!(pulls.grants > 0 && pulls.targets > 0, "{pulls:?}");
            assert_eq!(a.congestion(&b_addr).unwrap().in_flight(), 0);
            // SLEEK runs only where NSCC's window gates.
            let r = a.stats().resends;
            assert!(controllers == Controllers::Both || r.sleek == 0, "{r:?}");
        }
    }
}

/// A sender running RCCC toward a receiver without a pull pacer (no congestion management
/// there): the receiver grants every pull target at once in its ACK_CCs, so the sender never
/// waits for credit that would not come.
#[test]
fn rccc_toward_a_receiver_without_a_pacer_is_granted_at_once() {
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let c = CmsConfig { controllers: Controllers::Rccc, ..cms(2, LoadBalancing::Oblivious { paths: 4 }) };
    let mut a = Ep::new(managed(a_addr, c), 1);
    let mut b = Ep::new(EndpointConfig { close_when_idle: false, ..config(b_addr) }, 2);
    assert!(b.pull_stats().is_none());
    for i in 0..4 {
        a.send(desc(b_addr, Service::Rud, i, 64 * 1024)).unwrap();
    }
    let mut now = Instant::ZERO;
    let mut sent = 0;
    for _ in 0..2_000 {
        if a.messages_in_flight() == 0 {
            break;
        }
        for (pkt, _) in drain(&mut a, now) {
            let Ok((crate::pds::PdsHeader::Request(r), _)) = crate::pds::PdsHeader::parse(&pkt) else { continue };
            assert!(r.cc.is_some(), "a request of a CCC with RCCC is RUD_CC");
            b.handle_packet(now, a_addr, &pkt).unwrap();
        }
        now = now.saturating_add(Duration::from_micros(1));
        for (pkt, _) in drain(&mut b, now) {
            a.handle_packet(now, b_addr, &pkt).unwrap();
        }
        sent += core::iter::from_fn(|| a.poll_event()).filter(|e| matches!(e, Event::Sent(_))).count();
        while b.poll_event().is_some() {}
        if let Some(t) = a.poll_timeout().filter(|t| *t <= now) {
            a.handle_timeout(t);
        }
    }
    assert_eq!(sent, 4);
    let credit = a.credit(&b_addr).unwrap();
    assert!(credit.stats().grants > 0 && credit.stats().ignored == 0, "{:?}", credit.stats());
    assert_eq!(a.stats().resends.total(), 0, "no loss, no timeout: credit never ran out");
}

/// Credit packets where no credit runs: a CREDIT to an initiator PDC whose CCC runs no RCCC is
/// counted and ignored, a CREDIT_REQ to a target PDC without a flow is ignored; neither is
/// NACKed (UNEXP_EVENT would close the sender's PDC) nor disturbs the exchange.
#[test]
fn stray_credit_packets_are_counted_and_never_refused() {
    use crate::pds::{Control, ControlFlags, ControlType, PdsHeader};
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let mut a = Ep::new(managed(a_addr, cms(4, LoadBalancing::Oblivious { paths: 4 })), 1);
    let mut b = Ep::new(EndpointConfig { close_when_idle: false, ..config(b_addr) }, 2);
    a.send(desc(b_addr, Service::Rud, 0, 2 * 1024)).unwrap();
    let now = Instant::ZERO;
    let first = drain(&mut a, now);
    let Ok((PdsHeader::Request(r), _)) = PdsHeader::parse(&first[0].0) else { panic!("a request") };
    assert!(r.cc.is_none(), "NSCC alone sends plain requests");
    for (pkt, _) in &first {
        b.handle_packet(now, a_addr, pkt).unwrap();
    }
    let acks = drain(&mut b, now);
    let Ok((PdsHeader::Ack(ack), _)) = PdsHeader::parse(&acks[0].0) else { panic!("an ACK") };
    // B's target PDC and A's initiator PDC, as the ACK names them.
    let (tpdc, ipdc) = (ack.spdcid, ack.dpdcid);
    let control = |ctl_type, spdcid, dpdcid| {
        let c = Control {
            ctl_type,
            flags: ControlFlags::empty(),
            probe_opaque: 0,
            psn: 0,
            spdcid,
            dest: crate::pds::PdcDest::Established { dpdcid },
            payload: 64,
        };
        let mut buf = [0u8; 16];
        PdsHeader::Control(c).emit(&mut buf).unwrap();
        buf
    };
    a.handle_packet(now, b_addr, &control(ControlType::Credit, tpdc, ipdc)).unwrap();
    assert_eq!(a.stats().stray_grants, 1);
    b.handle_packet(now, a_addr, &control(ControlType::CreditReq, ipdc, tpdc)).unwrap();
    assert_eq!(b.stats().nacks_sent.total(), 0);
    for (pkt, _) in acks {
        a.handle_packet(now, b_addr, &pkt).unwrap();
    }
    assert!(core::iter::from_fn(|| a.poll_event()).any(|e| matches!(e, Event::Sent(_))));
    assert!(drain(&mut a, now).iter().all(|(p, _)| !matches!(PdsHeader::parse(p), Ok((PdsHeader::Nack(_), _)))));
}

/// `senders` endpoints with congestion management `sender` send `per_sender` messages of `len`
/// bytes each (RUD and ROD alternating, so each sender has two PDCs of one CCC) to one receiver with `receiver`;
/// a CREDIT packet is lost when `lose_credit` says so, and one packet in `loss` (0: none) of the
/// rest. Runs until every message is reported sent, or a bounded number of rounds; returns the
/// messages sent and the endpoints.
fn incast_run(
    senders: usize,
    per_sender: u64,
    len: u32,
    sender: CmsConfig,
    receiver: CmsConfig,
    mut lose_credit: impl FnMut() -> bool,
    loss: u64,
) -> (usize, Vec<Ep>, Ep) {
    use crate::pds::{ControlType, PdsHeader};
    let rx_addr = ipv4([10, 0, 1, 1]);
    let addrs: Vec<IpAddr> = (0..senders).map(|i| ipv4([10, 0, 0, i as u8 + 1])).collect();
    let mut tx: Vec<Ep> = addrs.iter().map(|&a| Ep::new(managed(a, sender), 1 + u64::from(a[15]))).collect();
    let mut rx = Ep::new(managed(rx_addr, receiver), 99);
    for (i, ep) in tx.iter_mut().enumerate() {
        for k in 0..per_sender {
            let service = if k % 2 == 0 { Service::Rud } else { Service::Rod };
            ep.send(desc(rx_addr, service, i as u64 * 1000 + k, len)).unwrap();
        }
    }
    let (mut now, mut sent, mut n) = (Instant::ZERO, 0, 0u64);
    for _ in 0..20_000 {
        if sent == senders * per_sender as usize {
            break;
        }
        for (i, ep) in tx.iter_mut().enumerate() {
            for (pkt, _) in drain(ep, now) {
                n += 1;
                if loss == 0 || n % loss != 0 {
                    let _ = rx.handle_packet(now, addrs[i], &pkt);
                }
            }
        }
        now = now.saturating_add(Duration::from_micros(1));
        let mut out = [0u8; 256];
        while let Some(t) = rx.poll_transmit(now, &mut out).unwrap() {
            let pkt = &out[..t.header_len];
            let credit =
                matches!(PdsHeader::parse(pkt), Ok((PdsHeader::Control(c), _)) if c.ctl_type == ControlType::Credit);
            if credit && lose_credit() {
                continue;
            }
            if let Some(i) = addrs.iter().position(|a| *a == t.dst) {
                let _ = tx[i].handle_packet(now, rx_addr, pkt);
            }
        }
        now = now.saturating_add(Duration::from_micros(1));
        for ep in tx.iter_mut().chain(core::iter::once(&mut rx)) {
            if let Some(t) = ep.poll_timeout().filter(|t| *t <= now) {
                ep.handle_timeout(t);
            }
            assert_eq!(ep.check_invariants(), Ok(()));
        }
        for ep in &mut tx {
            sent += core::iter::from_fn(|| ep.poll_event()).filter(|e| matches!(e, Event::Sent(_))).count();
        }
        while rx.poll_event().is_some() {}
    }
    (sent, tx, rx)
}

/// Credit never leaves a sender waiting for good: not when more senders' sessions than the
/// receiver's pacer has flows are granted at once beside paced ones (two PDCs per session), nor
/// when the sender's window is four times the receiver's, nor when every CREDIT packet is
/// lost (a CCC with nothing in flight sends one packet to ask again).
#[test]
fn rccc_never_leaves_a_sender_waiting_for_good() {
    let rccc = |link| {
        let nscc = NsccConfig::new(link, Duration::from_micros(2), 1024);
        CmsConfig { controllers: Controllers::Rccc, ..CmsConfig::new(nscc, 8) }
    };
    let (g100, g400) = (rccc(LinkRate::GBPS_100), rccc(LinkRate::GBPS_400));
    // Three senders, two pacer flows (C = 2): one session is granted at once.
    let (sent, tx, rx) = incast_run(3, 24, 8 * 1024, g100, g100, || false, 0);
    assert_eq!(sent, 72);
    assert!(rx.pull_stats().is_some_and(|s| s.grants > 0));
    assert!(tx.iter().all(|ep| ep.credit(&ipv4([10, 0, 1, 1])).is_some_and(|c| c.stats().grants > 0)));
    // Sender window 4× the receiver's.
    let (sent, _, rx) = incast_run(1, 16, 8 * 1024, g400, g100, || false, 0);
    assert_eq!(sent, 16);
    assert!(rx.pull_stats().is_some_and(|s| s.clamped > 0), "{:?}", rx.pull_stats());
    // Half the CREDIT packets lost at random, over 20 seeds (without the packet a CCC with
    // nothing in flight sends to ask again, about half of these runs waited for good).
    for seed in 1..=20u64 {
        assert_eq!(credit_lossy_pair(g100, seed), 4, "seed {seed}");
    }
}

/// A sender and a receiver both running `cms`; the sender writes four messages of 256 KiB, and
/// the receiver's CREDIT packets are lost at random, one in two (a generator seeded by `seed`).
/// Returns the messages reported sent within 20 000 rounds of 1 µs.
fn credit_lossy_pair(cms: CmsConfig, seed: u64) -> usize {
    use crate::pds::{ControlType, PdsHeader};
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let (mut a, mut b) = (Ep::new(managed(a_addr, cms), 1), Ep::new(managed(b_addr, cms), 2));
    for i in 0..4 {
        a.send(desc(b_addr, Service::Rud, i, 256 * 1024)).unwrap();
    }
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let (mut now, mut sent) = (Instant::ZERO, 0);
    for _ in 0..20_000 {
        if a.messages_in_flight() == 0 {
            break;
        }
        for (pkt, _) in drain(&mut a, now) {
            b.handle_packet(now, a_addr, &pkt).unwrap();
        }
        now = now.saturating_add(Duration::from_micros(1));
        for (pkt, _) in drain(&mut b, now) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let credit =
                matches!(PdsHeader::parse(&pkt), Ok((PdsHeader::Control(c), _)) if c.ctl_type == ControlType::Credit);
            if !(credit && x % 2 == 0) {
                a.handle_packet(now, b_addr, &pkt).unwrap();
            }
        }
        sent += core::iter::from_fn(|| a.poll_event()).filter(|e| matches!(e, Event::Sent(_))).count();
        while b.poll_event().is_some() {}
        for ep in [&mut a, &mut b] {
            if let Some(t) = ep.poll_timeout().filter(|t| *t <= now) {
                ep.handle_timeout(t);
            }
        }
    }
    sent
}

#[test]
fn without_ccc_slots_the_configuration_changes_nothing() {
    // C = 0: `cms` is ignored, no entropy is chosen, and nothing waits.
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let mut a: Endpoint<8, 64, 96> = Endpoint::new(managed(a_addr, cms(1, LoadBalancing::Bitmap)), 1);
    a.send(desc(b_addr, Service::Rud, 0, 8 * 1024)).unwrap();
    let mut out = [0u8; 256];
    let mut n = 0;
    while let Some(t) = a.poll_transmit(Instant::ZERO, &mut out).unwrap() {
        assert_eq!(t.entropy, None);
        n += 1;
    }
    assert_eq!(n, 8);
    assert!(a.congestion(&b_addr).is_none());
}

#[test]
fn destinations_beyond_the_ccc_slots_wait_for_one() {
    // Two CCC slots, three destinations each sent to at once: the third opens its PDC once one
    // of the others closed, and every message completes. With PDCs kept open, the one idle
    // longest is closed for it (before, it waited forever).
    for keep in [false, true] {
        let addrs = [1, 2, 3, 4].map(|i| ipv4([10, 0, 0, i]));
        let cms = Some(cms(8, LoadBalancing::Reps { paths: 8 }));
        let cfg = |addr| EndpointConfig { cms, close_when_idle: !keep, ..config(addr) };
        let mut a = Ep::new(cfg(addrs[0]), 1);
        let mut peers: Vec<Ep> = addrs[1..].iter().map(|&addr| Ep::new(config(addr), 2)).collect();
        for (i, &dst) in addrs[1..].iter().enumerate() {
            a.send(desc(dst, Service::Rud, i as u64, 3000)).unwrap();
        }
        let mut sent = 0;
        let mut out = [0u8; 256];
        for round in 0..100u64 {
            let now = Instant::ZERO.saturating_add(Duration::from_micros(round));
            while let Some(t) = a.poll_transmit(now, &mut out).unwrap() {
                let mut pkt = out[..t.header_len].to_vec();
                pkt.resize(t.header_len + t.payload.map_or(0, |p| usize::from(p.len)), 0);
                let to = addrs[1..].iter().position(|&addr| addr == t.dst).unwrap();
                let _ = peers[to].handle_packet(now, addrs[0], &pkt);
            }
            a.check_ready_lists(now);
            for peer in peers.iter_mut() {
                for (pkt, _) in drain(peer, now) {
                    let _ = a.handle_packet(now, peer.config().addr, &pkt);
                }
                while peer.poll_event().is_some() {}
            }
            while let Some(ev) = a.poll_event() {
                sent += usize::from(matches!(ev, Event::Sent(_)));
            }
        }
        assert_eq!(sent, 3, "kept open: {keep}");
        assert!(a.stats().ccc_waits > 0, "the third destination waited for a CCC slot");
        assert_eq!((a.initiator_pdcs(), a.stats().idle_pdcs_closed), if keep { (2, 1) } else { (0, 0) });
    }
}

#[test]
fn a_closing_pdc_leaves_the_window_as_it_was() {
    // The CLOSE takes a PSN but is no request: its round trip neither fills nor cuts the window.
    let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
    let closing = |addr| EndpointConfig { close_when_idle: true, ..managed(addr, cms(8, LoadBalancing::Bitmap)) };
    let mut a = Ep::new(closing(a_addr), 1);
    let mut b = Ep::new(config(b_addr), 2);
    let mut now = Instant::ZERO;
    for i in 0..3 {
        a.send(desc(b_addr, Service::Rud, i, 2 * 1024)).unwrap();
        for _ in 0..10 {
            for (pkt, _) in drain(&mut a, now) {
                b.handle_packet(now, a_addr, &pkt).unwrap();
            }
            now = now.saturating_add(Duration::from_micros(1));
            for (pkt, _) in drain(&mut b, now) {
                a.handle_packet(now, b_addr, &pkt).unwrap();
            }
            while a.poll_event().is_some() {}
            while b.poll_event().is_some() {}
        }
        assert_eq!(a.initiator_pdcs(), 0, "the PDC closed");
        let nscc = a.congestion(&b_addr).unwrap();
        assert_eq!((nscc.in_flight(), nscc.stats().timeouts), (0, 0), "{:?}", nscc.stats());
        assert!(nscc.cwnd() >= 8 * 1024, "window {}", nscc.cwnd());
    }
}
