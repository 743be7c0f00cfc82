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
    CmsConfig { nscc, lb, seed: 7, sleek: true }
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
    let a = EndpointConfig { cms: Some(cms(initial, lb)), ..config(ipv4([10, 0, 0, 1])) };
    let run = Run { mode: Service::Rud, loss, reorder: true, window: 16, read_every: 5, pause: None, seed, corrupt: 0 };
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
    // of the others closed, and every message completes.
    let addrs = [1, 2, 3, 4].map(|i| ipv4([10, 0, 0, i]));
    let cfg = |addr| EndpointConfig { cms: Some(cms(8, LoadBalancing::Reps { paths: 8 })), ..config(addr) };
    let mut a = Ep::new(cfg(addrs[0]), 1);
    let mut peers: Vec<Ep> = addrs[1..].iter().map(|&addr| Ep::new(config(addr), 2)).collect();
    for (i, &dst) in addrs[1..].iter().enumerate() {
        a.send(desc(dst, Service::Rud, i as u64, 3000)).unwrap();
    }
    let mut sent = 0;
    let mut out = [0u8; 256];
    for round in 0..50u64 {
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
    assert_eq!(sent, 3);
    assert!(a.stats().ccc_waits > 0, "the third destination waited for a CCC slot");
    assert_eq!(a.initiator_pdcs(), 0);
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
