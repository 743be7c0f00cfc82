//! Seeded two-end simulation of [`linklayer::link::Link`]: four lossless VCs (one drained slowly)
//! in both directions over a lossy, corrupting wire with delay, the software profile's defaults,
//! and one end or the other rebuilt from scratch at random moments.
//!
//! On every seed: no frame is delivered twice or out of order (frame ids per direction and VC
//! only increase across restarts), no receive buffer is ever overrun, every VC of both
//! directions delivers again within a bounded time of each restart, and after the last restart
//! the link carries what the same seed carries without restarts. An end restarted in place
//! ([`Link::init`] on the same value) behaves exactly as one rebuilt with [`Link::new`].
//!
//! `LINK_RESTART_SEEDS` (default 12) and `LINK_RESTART_EVERY` (ticks between restarts on
//! average, default 4000) make longer runs, e.g.
//! `LINK_RESTART_SEEDS=400 LINK_RESTART_EVERY=1000 cargo test --release -p linklayer --test link_restart`.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::cbfc::{Vc, VcMode};
use linklayer::link::{Link, LinkConfig, LinkEvent, Received};
use linklayer::llr::{Admit, FrameCheck, LlrSizing};
use linklayer::wire::{CTLOS_LEN, CtlOs};
use linklayer::{Duration, Instant, LinkRate};
use std::collections::VecDeque;

const SLOTS: usize = 512;
const TICK: u64 = 100;
const VCS: [u8; 4] = [0, 1, 5, 17];
const CREDITS: u32 = 96;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

enum Item {
    Frame { seq: Option<u32>, check: FrameCheck, bytes: Vec<u8> },
    Ctl([u8; CTLOS_LEN]),
}

#[derive(Clone, Copy)]
struct Params {
    seed: u64,
    ticks: u64,
    restarts: bool,
    /// Restart an end with [`Link::init`] on the same value instead of a new one.
    in_place: bool,
    /// Ticks between restarts, on average.
    restart_every: f64,
    loss: f64,
    corrupt: f64,
}

struct End {
    link: Link<Box<[u8]>, SLOTS>,
    /// Frames delivered and not yet drained, per VC: their lengths.
    buffers: Vec<VecDeque<usize>>,
    next_drain: Vec<u64>,
    wire_free_at: u64,
}

fn new_end(rng: &mut Rng, now: Instant, sizing: &LlrSizing, rate: LinkRate) -> End {
    let config = LinkConfig::software(sizing, rate, [2, 0, 0, 0, 0, rng.below(256) as u8]);
    let storage = vec![0u8; sizing.replay_bytes as usize].into_boxed_slice();
    let mut link = Link::new(config, storage, rng.below(1 << 20) as u32).unwrap();
    start(&mut link, now);
    End { link, buffers: vec![VecDeque::new(); VCS.len()], next_drain: vec![0; VCS.len()], wire_free_at: 0 }
}

/// [`new_end`] on the same link value, configured afresh in place.
fn restart_in_place(end: &mut End, rng: &mut Rng, now: Instant, sizing: &LlrSizing, rate: LinkRate) {
    let config = LinkConfig::software(sizing, rate, [2, 0, 0, 0, 0, rng.below(256) as u8]);
    end.link.init(config, rng.below(1 << 20) as u32).unwrap();
    start(&mut end.link, now);
    end.buffers.iter_mut().for_each(VecDeque::clear);
    end.next_drain.fill(0);
    end.wire_free_at = 0;
}

fn start(link: &mut Link<Box<[u8]>, SLOTS>, now: Instant) {
    for vc in VCS {
        link.set_vc_mode(now, Vc::new(vc).unwrap(), VcMode::Lossless { credit_limit: Some(CREDITS) }).unwrap();
    }
    link.enable(now).unwrap();
}

#[derive(Debug, Default, PartialEq)]
struct Report {
    delivered: u64,
    /// Bytes delivered in the last fifth of the run.
    tail_bytes: u64,
    restarts: u32,
    /// The longest time from a restart until every VC of both directions delivered again.
    worst_recovery_ns: u64,
    overruns: u64,
    peer_restarts_seen: u64,
}

fn run(p: Params) -> Report {
    let mut rng = Rng(p.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let rate = LinkRate::GBPS_100;
    let delay = 1_000u64;
    // Loop time: a round trip plus a maximum frame's serialisation, as a measurement would give.
    let sizing = LlrSizing::software(Duration::from_nanos(2 * delay + 800), rate).with_frame_slots(SLOTS);
    let mut ends = [new_end(&mut rng, Instant::ZERO, &sizing, rate), new_end(&mut rng, Instant::ZERO, &sizing, rate)];
    // wires[i]: items from end i to end 1-i, with arrival times in order.
    let mut wires: [VecDeque<(u64, Item)>; 2] = [VecDeque::new(), VecDeque::new()];
    // Per direction and VC: the next frame id to send, the last one delivered.
    let mut next_id = [[0u64; VCS.len()]; 2];
    let mut last_delivered: [[Option<u64>; VCS.len()]; 2] = [[None; VCS.len()]; 2];
    // Delivered since the last restart, per direction and VC.
    let mut since_restart = [[false; VCS.len()]; 2];
    let mut restart_at: Option<u64> = None;
    let mut report = Report::default();
    let drain_ns = [40u64, 40, 40, 400];
    let last_restart_tick = p.ticks * 3 / 5;
    for tick in 0..p.ticks {
        let t = tick * TICK;
        let now = Instant::from_nanos(t);
        if p.restarts && tick < last_restart_tick && tick > 100 && rng.chance(1.0 / p.restart_every) {
            let k = rng.below(2) as usize;
            if p.in_place {
                restart_in_place(&mut ends[k], &mut rng, now, &sizing, rate);
            } else {
                ends[k] = new_end(&mut rng, now, &sizing, rate);
            }
            report.restarts += 1;
            restart_at = Some(t);
            since_restart = [[false; VCS.len()]; 2];
        }
        for i in 0..2 {
            let (a, b) = ends.split_at_mut(1);
            let (end, _peer) = if i == 0 { (&mut a[0], &mut b[0]) } else { (&mut b[0], &mut a[0]) };
            let dir_in = 1 - i;
            // 1. Arrivals from the peer.
            while wires[dir_in].front().is_some_and(|(at, _)| *at <= t) {
                let (_, item) = wires[dir_in].pop_front().unwrap();
                match item {
                    Item::Ctl(b) => {
                        if let Ok((msg, _)) = CtlOs::parse(&b) {
                            let _ = end.link.handle_control(now, msg);
                        }
                    }
                    Item::Frame { seq, check, bytes } => {
                        let slot = usize::from(bytes[0]);
                        let vc = Vc::new(VCS[slot % VCS.len()]).unwrap();
                        match end.link.handle_frame(now, seq, check, vc, &bytes) {
                            Received::Deliver => {
                                assert_eq!(check, FrameCheck::Good);
                                let id = u64::from_be_bytes(bytes[1..9].try_into().unwrap());
                                let last = &mut last_delivered[dir_in][slot];
                                assert!(
                                    last.is_none_or(|l| id > l),
                                    "seed {}: frame {id} of VC slot {slot} delivered after {last:?}",
                                    p.seed
                                );
                                *last = Some(id);
                                end.buffers[slot].push_back(bytes.len());
                                report.delivered += 1;
                                if tick >= p.ticks * 4 / 5 {
                                    report.tail_bytes += bytes.len() as u64;
                                }
                                since_restart[dir_in][slot] = true;
                            }
                            Received::CcUpdate | Received::Drop => {}
                        }
                    }
                }
            }
            // 2. The application drains its buffers.
            for (slot, q) in end.buffers.iter_mut().enumerate() {
                if t >= end.next_drain[slot] {
                    if let Some(len) = q.pop_front() {
                        end.link.on_drained(Vc::new(VCS[slot]).unwrap(), len).unwrap();
                        end.next_drain[slot] = t + drain_ns[slot];
                    }
                }
            }
            // 3. Timers.
            if end.link.poll_timeout().is_some_and(|d| d <= now) {
                end.link.handle_timeout(now);
            }
            // 4. Control ordered sets.
            while let Some(c) = end.link.poll_control(now) {
                let mut b = [0u8; CTLOS_LEN];
                c.emit(&mut b).unwrap();
                if rng.chance(p.loss) {
                    continue;
                }
                if rng.chance(p.corrupt) {
                    b[rng.below(7) as usize] ^= 1 << rng.below(8);
                }
                let at = wires[i].back().map_or(0, |(a, _)| *a).max(t + delay);
                wires[i].push_back((at, Item::Ctl(b)));
            }
            // 5. The application offers frames: every VC always has one more.
            for slot in 0..VCS.len() {
                let vc = Vc::new(VCS[slot]).unwrap();
                for _ in 0..4 {
                    let len = 64 + rng.below(1400) as usize;
                    let mut bytes = vec![0u8; len];
                    bytes[0] = slot as u8;
                    bytes[1..9].copy_from_slice(&next_id[i][slot].to_be_bytes());
                    match end.link.send(now, vc, &bytes) {
                        Ok(Admit::Queued(_) | Admit::Discarded) => next_id[i][slot] += 1,
                        Ok(Admit::SendPlain) => panic!("the software profile never sends unprotected"),
                        Err(_) => break,
                    }
                }
            }
            // 6. The wire takes frames as fast as the rate allows.
            while end.wire_free_at <= t {
                let Some(out) = end.link.poll_transmit(now) else { break };
                let mut bytes = out.frame.to_vec();
                let seq = Some(out.seq.value());
                end.wire_free_at = t.max(end.wire_free_at) + rate.time_for_bytes(bytes.len() as u64).as_nanos();
                if rng.chance(p.loss) {
                    continue;
                }
                let check = if rng.chance(p.corrupt) {
                    let at = rng.below(bytes.len() as u64) as usize;
                    bytes[at] ^= 0x40;
                    FrameCheck::Bad
                } else {
                    FrameCheck::Good
                };
                let at = wires[i].back().map_or(0, |(a, _)| *a).max(t + delay);
                wires[i].push_back((at, Item::Frame { seq, check, bytes }));
            }
            // 7. Events.
            while let Some(e) = end.link.poll_event() {
                match e {
                    LinkEvent::Overrun { .. } => report.overruns += 1,
                    LinkEvent::PeerHandshake(linklayer::llr::InitOutcome::PeerRestarted { .. }) => {
                        report.peer_restarts_seen += 1
                    }
                    _ => {}
                }
            }
        }
        if let Some(r) = restart_at {
            if since_restart.iter().flatten().all(|&d| d) {
                report.worst_recovery_ns = report.worst_recovery_ns.max(t - r);
                restart_at = None;
            }
        }
    }
    assert_eq!(restart_at, None, "seed {}: not every VC delivered again after the last restart", p.seed);
    for end in &ends {
        report.overruns += end.link.cbfc_receiver().stats().overruns;
    }
    report
}

const RECOVERY_BOUND_NS: u64 = 2_000_000;

/// A knob from the environment, for longer stress runs.
fn env(name: &str, default: f64) -> f64 {
    std::env::var(name).map_or(default, |v| v.parse().expect("a number"))
}

#[test]
fn restarts_recover_without_duplicates_or_overruns() {
    let seeds: u64 = env("LINK_RESTART_SEEDS", 12.0) as u64;
    let restart_every = env("LINK_RESTART_EVERY", 4_000.0);
    for seed in 1..=seeds {
        let p =
            Params { seed, ticks: 60_000, restarts: true, in_place: false, restart_every, loss: 0.005, corrupt: 0.001 };
        let r = run(p);
        let baseline = run(Params { restarts: false, ..p });
        println!("seed {seed}: {r:?}; without restarts {}", baseline.tail_bytes);
        assert!(r.restarts > 0, "seed {seed} restarted nothing");
        // Every restart is seen by the peer, unless the peer itself restarted before the news came.
        assert!(r.peer_restarts_seen > 0, "{r:?}");
        assert_eq!(r.overruns, 0, "seed {seed}: {r:?}");
        assert!(r.worst_recovery_ns <= RECOVERY_BOUND_NS, "seed {seed}: {r:?}");
        // Back at full rate: the last fifth carries what it carries without restarts.
        assert!(r.tail_bytes * 10 >= baseline.tail_bytes * 9, "seed {seed}: {r:?} vs {}", baseline.tail_bytes);
        assert_eq!(baseline.overruns, 0);
    }
}

#[test]
fn an_end_restarted_in_place_behaves_as_a_new_one() {
    for seed in 1..=3 {
        let p = Params {
            seed,
            ticks: 30_000,
            restarts: true,
            in_place: false,
            restart_every: 3_000.0,
            loss: 0.005,
            corrupt: 0.001,
        };
        let rebuilt = run(p);
        assert!(rebuilt.restarts > 0, "seed {seed} restarted nothing");
        assert_eq!(run(Params { in_place: true, ..p }), rebuilt, "seed {seed}");
    }
}

#[test]
fn an_empty_link_works_only_after_init() {
    let rate = LinkRate::GBPS_100;
    let sizing = LlrSizing::software(Duration::from_nanos(2_800), rate).with_frame_slots(16);
    let mut config = LinkConfig::software(&sizing, rate, [2, 0, 0, 0, 0, 1]);
    config.llr_tx.outstanding_bytes_max = 4096;
    let vc = Vc::new(0).unwrap();
    let mut link: Link<[u8; 4096], 16> = Link::EMPTY;
    assert!(link.enable(Instant::ZERO).is_err(), "an empty link is not configured");
    let lossless = VcMode::Lossless { credit_limit: Some(CREDITS) };
    assert!(link.set_vc_mode(Instant::ZERO, vc, lossless).is_err());
    assert!(link.send(Instant::ZERO, vc, &[0; 64]).is_err());
    assert_eq!(link.poll_transmit(Instant::ZERO).map(|o| o.seq), None);
    // Refused (a first number beyond 20 bits): nothing changed.
    assert!(link.init(config, 1 << 20).is_err());
    assert!(link.enable(Instant::ZERO).is_err());
    link.init(config, 7).unwrap();
    assert_eq!(link.config(), &config);
    link.set_vc_mode(Instant::ZERO, vc, lossless).unwrap();
    link.enable(Instant::ZERO).unwrap();
    link.handle_timeout(Instant::from_nanos(5_000));
    // Each part's refusal leaves the whole link as it was (every check comes first).
    let before = format!("{link:?}");
    let mut bad = [config; 4];
    bad[0].llr_tx.outstanding_bytes_max = 4097;
    bad[1].cbfc_sender.cc_update_interval = Duration::ZERO;
    bad[2].cbfc_receiver.cf_min_spacing = 0;
    bad[3].llr_tx.init_interval = Duration::ZERO;
    for b in bad {
        assert!(link.init(b, 7).is_err(), "{b:?}");
        assert_eq!(format!("{link:?}"), before);
    }
}
