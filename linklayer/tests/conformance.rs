//! The operators' public test cases for UE link-level retry and credit-based flow control, run
//! against the engines, each test named after the case it follows and checking the counters the
//! case prescribes (by their SAI names, `SAI_PORT_STAT_LLR_*` and
//! `SAI_VIRTUAL_CHANNEL_STAT_*`, which `TxStats`, `RxStats` and the CBFC accessors document).
//!
//! Sources:
//! * SONiC LLR test plan, `docs/testplan/LLR/LLR_TestPlan.md` in sonic-net/sonic-mgmt (TC1–TC20);
//! * SONiC Scale-Up test standard, `doc/SONiC-ScaleUp-Test-Standard.md` in sonic-net/SONiC
//!   (LLR-01..10, CBFC-01..12);
//! * the SAI CBFC proposal, `doc/CBFC/SAI-Credit_Based_Flow_Control.md` in
//!   opencomputeproject/SAI (lossless VC initialization and removal workflows).
//!
//! The bench stands for the test set-up: the engine under test (the DUT's transmitter) faces a
//! tester (an `LlrRx`) across a wire with a jammer that drops or corrupts frames and CtlOS. Cases
//! that test a switch or a platform rather than a link end are not run here: TC3 and TC14 (many
//! ports; each port is an independent object here), TC11 and TC13 (hour-long throughput and
//! latency on hardware), CBFC-05/06/07 (PCP/DSCP to VC classification, the embedder's), CBFC-10
//! and CBFC-11 (incast through a switch buffer).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::cbfc::{CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, CreditRule, Vc, VcMode};
use linklayer::link::{Link, LinkConfig, LinkEvent, Received};
use linklayer::llr::{
    Admit, FlushReason, FrameAction, FrameCheck, InitOutcome, LlrRx, LlrRxConfig, LlrSizing, LlrTx, LlrTxConfig,
    LlrTxEvent, REPLAY_COUNT_UNLIMITED, ReplayCause, RxState, RxVerdict, TxState, UeLlrSpace,
};
use linklayer::wire::CtlOs;
use linklayer::{Duration, Error, Instant, LinkRate, Seq};
use std::collections::VecDeque;

const SLOTS: usize = 1024;
type Tx = LlrTx<UeLlrSpace, Vec<u8>, SLOTS>;

const RATE: LinkRate = LinkRate::GBPS_100;
const STEP: Duration = Duration::from_nanos(100);

/// What the jammer does to one transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jam {
    Pass,
    Drop,
    /// Bad FCS at the receiver.
    Corrupt,
}

/// One frame put on the wire by the transmitter under test.
#[derive(Clone, Copy, Debug)]
struct Sent {
    /// The application's number for the frame (0, 1, 2, … in offer order).
    id: u32,
    seq: u32,
    replay: bool,
}

#[derive(Clone, Copy, Debug)]
enum Fwd {
    Frame { id: u32, seq: u32, check: FrameCheck, len: usize },
    Ctl(CtlOs),
}

type BackJammer = Box<dyn FnMut(Instant, &CtlOs) -> bool>;

/// The DUT's transmitter, a tester's receiver, and the wire between them.
struct Bench {
    now: Instant,
    tx: Tx,
    rx: LlrRx<UeLlrSpace>,
    /// One-way delay, both directions.
    delay: Duration,
    /// Line rate of the forward wire; `None` sends without serialisation time.
    rate: Option<LinkRate>,
    wire_free_at: Instant,
    fwd: VecDeque<(Instant, Fwd)>,
    back: VecDeque<(Instant, CtlOs)>,
    /// Frames the application wants sent, and the next one to offer.
    to_offer: u32,
    offered: u32,
    /// Offer at most one frame per step (else as many as the engine takes).
    paced: bool,
    /// Frame length of each id.
    size_of: fn(u32) -> usize,
    /// The id sent with a poisoned FCS.
    poison: Option<u32>,
    jam: Box<dyn FnMut(&Sent) -> Jam>,
    /// The jammer on the return path: `true` drops the CtlOS.
    jam_back: BackJammer,
    transmissions: u64,
    delivered: Vec<u32>,
    delivered_at: Vec<Instant>,
    sent_at: Vec<Option<Instant>>,
    plain: u64,
    discarded: u64,
    window_full: u64,
    blocked: u64,
    /// The transmitter's events with their time.
    events: Vec<(Instant, LlrTxEvent)>,
    /// The receiver states seen, in order, without repeats.
    rx_states: Vec<RxState>,
    tx_states: Vec<TxState>,
    /// Delivered bytes (for line-rate cases).
    bytes_delivered: u64,
}

fn frame_bytes(id: u32, len: usize) -> Vec<u8> {
    let mut f = vec![id as u8; len.max(4)];
    f[..4].copy_from_slice(&id.to_be_bytes());
    f
}

/// The hardware profile for a 2 µs loop at 100 Gb/s (timer 6.5 µs) with the SONiC sample
/// profiles' REPLAY_COUNT_MAX of 3 (`llr_profile_lookup.ini.sample` in sonic-net/SONiC), SAI
/// defaults elsewhere.
fn hw_config() -> LlrTxConfig {
    LlrTxConfig { replay_count_max: 3, ..sai_defaults() }
}

/// The SAI defaults (REPLAY_COUNT_MAX 1) with the same sizing.
fn sai_defaults() -> LlrTxConfig {
    LlrTxConfig::hardware(&LlrSizing::hardware(Duration::from_micros(2), RATE).with_frame_slots(SLOTS))
}

impl Bench {
    fn new(config: LlrTxConfig) -> Self {
        Self::with_first(config, 1000)
    }

    fn with_first(config: LlrTxConfig, first: u32) -> Self {
        let storage = vec![0u8; config.outstanding_bytes_max as usize];
        let tx = Tx::new(config, storage, Seq::new(first).unwrap()).unwrap();
        Bench {
            now: Instant::ZERO,
            tx,
            rx: LlrRx::new(LlrRxConfig::enabled(RATE)),
            delay: Duration::from_micros(1),
            rate: None,
            wire_free_at: Instant::ZERO,
            fwd: VecDeque::new(),
            back: VecDeque::new(),
            to_offer: 0,
            offered: 0,
            paced: true,
            size_of: |_| 64,
            poison: None,
            jam: Box::new(|_| Jam::Pass),
            jam_back: Box::new(|_, _| false),
            transmissions: 0,
            delivered: Vec::new(),
            delivered_at: Vec::new(),
            sent_at: Vec::new(),
            plain: 0,
            discarded: 0,
            window_full: 0,
            blocked: 0,
            events: Vec::new(),
            rx_states: Vec::new(),
            tx_states: Vec::new(),
            bytes_delivered: 0,
        }
    }

    /// Enables LLR and runs the INIT handshake to ADVANCE.
    fn up(&mut self) {
        if self.tx.state() == TxState::Off {
            self.tx.enable(self.now).unwrap();
        }
        self.run_until(Duration::from_micros(100), |b| b.tx.state() == TxState::Advance);
        assert_eq!(self.tx.state(), TxState::Advance, "the handshake completes");
        // The cases watch the states from here on.
        self.rx_states = vec![self.rx.state()];
        self.tx_states = vec![self.tx.state()];
    }

    fn offer(&mut self) {
        while self.offered < self.to_offer {
            let id = self.offered;
            let frame = frame_bytes(id, (self.size_of)(id));
            let r = if self.poison == Some(id) {
                self.tx.send_poisoned(self.now, &frame)
            } else {
                self.tx.send(self.now, &frame)
            };
            match r {
                Ok(Admit::Queued(_)) => {}
                Ok(Admit::SendPlain) => self.plain += 1,
                Ok(Admit::Discarded) => self.discarded += 1,
                Err(Error::WindowFull) => {
                    self.window_full += 1;
                    return;
                }
                Err(Error::InvalidState { .. }) => {
                    self.blocked += 1;
                    return;
                }
                Err(e) => panic!("send refused: {e:?}"),
            }
            self.offered += 1;
            if self.paced {
                return;
            }
        }
    }

    fn transmit(&mut self) {
        if let Some(rate) = self.rate {
            // An idle wire does not bank time.
            let floor = Instant::from_nanos(self.now.as_nanos().saturating_sub(STEP.as_nanos()));
            self.wire_free_at = self.wire_free_at.max(floor);
            while self.wire_free_at <= self.now {
                let Some(out) = self.tx.poll_transmit(self.now) else { break };
                let len = out.frame.len();
                // Preamble, start and inter-packet gap: 20 bytes of line time per frame.
                self.wire_free_at = self.wire_free_at.saturating_add(rate.time_for_bytes(len as u64 + 20));
                let at = self.wire_free_at.saturating_add(self.delay);
                let (id, seq, replay, mark) = (id_of(out.frame), out.seq.value(), out.replay, out.mark);
                self.put(at, id, seq, replay, mark, len);
            }
        } else {
            while let Some(out) = self.tx.poll_transmit(self.now) {
                let (id, seq, replay, mark, len) =
                    (id_of(out.frame), out.seq.value(), out.replay, out.mark, out.frame.len());
                self.put(self.now.saturating_add(self.delay), id, seq, replay, mark, len);
            }
        }
    }

    fn put(&mut self, at: Instant, id: u32, seq: u32, replay: bool, mark: bool, len: usize) {
        let sent = Sent { id, seq, replay };
        self.transmissions += 1;
        if self.sent_at.len() <= id as usize {
            self.sent_at.resize(id as usize + 1, None);
        }
        self.sent_at[id as usize].get_or_insert(self.now);
        let check = match (self.jam)(&sent) {
            Jam::Drop => return,
            Jam::Corrupt => FrameCheck::Bad,
            Jam::Pass if mark => FrameCheck::Poisoned,
            Jam::Pass => FrameCheck::Good,
        };
        self.fwd.push_back((at, Fwd::Frame { id, seq, check, len }));
    }

    fn step(&mut self) {
        let now = self.now;
        self.offer();
        self.transmit();
        while let Some(c) = self.tx.poll_control(now) {
            self.fwd.push_back((now.saturating_add(self.delay), Fwd::Ctl(c)));
        }
        // Arrivals may be out of time order when serialised frames and CtlOS interleave.
        let mut i = 0;
        while i < self.fwd.len() {
            if self.fwd[i].0 > now {
                i += 1;
                continue;
            }
            let (_, item) = self.fwd.remove(i).unwrap();
            match item {
                Fwd::Frame { id, seq, check, len } => {
                    if self.rx.handle_frame(now, seq, check) == RxVerdict::Deliver {
                        let expect = frame_bytes(id, (self.size_of)(id));
                        assert_eq!(len, expect.len(), "frame {id} arrives whole");
                        self.delivered.push(id);
                        self.delivered_at.push(now);
                        self.bytes_delivered += len as u64;
                    }
                }
                Fwd::Ctl(CtlOs::LlrInit { seq }) => {
                    let _ = self.rx.handle_init(now, seq);
                }
                Fwd::Ctl(_) => {}
            }
            if self.rx_states.last() != Some(&self.rx.state()) {
                self.rx_states.push(self.rx.state());
            }
        }
        while let Some(c) = self.rx.poll_control(now) {
            if !(self.jam_back)(now, &c) {
                self.back.push_back((now.saturating_add(self.delay), c));
            }
        }
        while self.back.front().is_some_and(|(t, _)| *t <= now) {
            let (_, c) = self.back.pop_front().unwrap();
            let _ = match c {
                CtlOs::LlrInitEcho { seq } => self.tx.handle_init_echo(now, seq),
                CtlOs::LlrAck { seq } => self.tx.handle_ack(now, seq).map(|_| ()),
                CtlOs::LlrNack { seq } => self.tx.handle_nack(now, seq),
                _ => Ok(()),
            };
        }
        self.tx.handle_timeout(now);
        while let Some(e) = self.tx.poll_event() {
            self.events.push((now, e));
        }
        if self.rx_states.last() != Some(&self.rx.state()) {
            self.rx_states.push(self.rx.state());
        }
        if self.tx_states.last() != Some(&self.tx.state()) {
            self.tx_states.push(self.tx.state());
        }
        self.now = now.saturating_add(STEP);
    }

    /// Steps until `done` holds or `limit` passes.
    fn run_until(&mut self, limit: Duration, done: impl Fn(&Self) -> bool) {
        let end = self.now.saturating_add(limit);
        while !done(self) && self.now < end {
            self.step();
        }
    }

    /// Offers `n` more frames and runs until all are acknowledged (or `limit` passes).
    fn send_all(&mut self, n: u32, limit: Duration) {
        self.to_offer += n;
        self.run_until(limit, |b| b.offered == b.to_offer && b.tx.buffer().is_empty() && b.fwd.is_empty());
    }

    /// Runs for `d` regardless.
    fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }

    /// Every id `0..n` delivered exactly once and in order.
    fn assert_delivered_in_order(&self, n: u32) {
        assert_eq!(self.delivered, (0..n).collect::<Vec<_>>(), "delivered exactly once and in order");
    }

    fn replays(&self) -> Vec<(Instant, ReplayCause)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                LlrTxEvent::ReplayStarted { cause, .. } => Some((*t, *cause)),
                _ => None,
            })
            .collect()
    }
}

fn id_of(frame: &[u8]) -> u32 {
    u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]])
}

/// A small deterministic generator for the random-loss cases.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const MS: Duration = Duration::from_millis(1);

// ---------------------------------------------------------------------------------------------
// SONiC LLR test plan
// ---------------------------------------------------------------------------------------------

/// TC1 LLR Profile Creation and Verification: a profile with the mandatory limits only
/// (OUTSTANDING_FRAMES_MAX 1000, OUTSTANDING_BYTES_MAX 50 000) is taken and reads back; zero
/// limits and limits beyond what the storage holds are refused.
#[test]
fn tc01_llr_profile_creation_and_verification() {
    let base = sai_defaults();
    let profile = LlrTxConfig { outstanding_frames_max: 1000, outstanding_bytes_max: 50_000, ..base };
    let tx = Tx::new(profile, vec![0; 50_000], Seq::new(0).unwrap()).unwrap();
    assert_eq!(*tx.config(), profile, "read back");
    assert_eq!((tx.config().replay_count_max, tx.config().init_action), (1, FrameAction::BestEffort));
    for (bad, storage) in [
        (LlrTxConfig { outstanding_frames_max: 0, ..profile }, 50_000),
        (LlrTxConfig { outstanding_frames_max: SLOTS as u32 + 1, ..profile }, 50_000),
        (LlrTxConfig { outstanding_bytes_max: 0, ..profile }, 50_000),
        (profile, 49_999),
    ] {
        assert!(matches!(Tx::new(bad, vec![0; storage], Seq::new(0).unwrap()), Err(Error::BadConfig { .. })));
    }
}

/// TC2 LLR Initialization Sequence: TX in INIT sending LLR_INIT, then the echo; RX in
/// SEND_ACKS. INIT and INIT_ECHO CtlOS counted at both ends.
#[test]
fn tc02_llr_initialization_sequence() {
    let mut b = Bench::new(hw_config());
    b.tx.enable(b.now).unwrap();
    assert_eq!(b.tx.state(), TxState::Init);
    b.up();
    assert_eq!(b.rx.state(), RxState::SendAcks);
    let (tx, rx) = (b.tx.stats(), b.rx.stats());
    assert_eq!((tx.init_tx, rx.init_rx, rx.init_echo_tx, tx.init_echo_rx), (1, 1, 1, 1));
    assert_eq!(b.events.first().map(|e| e.1), Some(LlrTxEvent::Initialized));
}

/// TC4 Frame Sequence Numbering: 1000 frames; TX_OK and RX_OK +1000, RX_EXPECTED_SEQ_GOOD +1000,
/// RX_DUPLICATE_SEQ 0, no gaps; TX in ADVANCE, RX in SEND_ACKS.
#[test]
fn tc04_frame_sequence_numbering() {
    let mut b = Bench::new(hw_config());
    b.up();
    let mut last: Option<u32> = None;
    let mut gaps = 0;
    b.jam = Box::new(move |s| {
        gaps += u32::from(last.is_some_and(|l| s.seq != l + 1));
        assert_eq!(gaps, 0, "sequence numbers go up by one");
        last = Some(s.seq);
        Jam::Pass
    });
    b.send_all(1000, MS);
    b.assert_delivered_in_order(1000);
    let (tx, rx) = (b.tx.stats(), b.rx.stats());
    assert_eq!((tx.tx_ok, rx.ok, rx.expected_seq_good, rx.duplicate_seq, rx.missing_seq), (1000, 1000, 1000, 0, 0));
    assert_eq!((b.tx.state(), b.rx.state()), (TxState::Advance, RxState::SendAcks));
}

/// TC5 Frame Sequence Number Wrap Around: across the top of the 20-bit space (1 048 575 → 0;
/// the plan's objective names 20 bits, its example the 19-bit 524 287) numbers continue 0, 1,
/// 2 …, ACKs stay correct, no duplicates and no loss, states unchanged.
#[test]
fn tc05_frame_sequence_number_wrap_around() {
    let top = (1u32 << 20) - 1;
    let mut b = Bench::with_first(hw_config(), top - 499);
    b.up();
    let mut seen = Vec::new();
    b.jam = Box::new(move |s| {
        seen.push(s.seq);
        if let [.., a, c] = seen[..] {
            assert_eq!(c, if a == top { 0 } else { a + 1 });
        }
        Jam::Pass
    });
    b.send_all(1000, MS);
    b.assert_delivered_in_order(1000);
    assert_eq!(b.tx.buffer().next_seq().value(), 500, "wrapped through 0");
    let rx = b.rx.stats();
    assert_eq!((rx.duplicate_seq, rx.missing_seq, b.tx.stats().ack_nack_seq_errors), (0, 0, 0));
    assert!(rx.ack_tx > 1 && b.tx.stats().ack_rx == rx.ack_tx);
    assert_eq!((b.tx.state(), b.rx.state()), (TxState::Advance, RxState::SendAcks));
}

/// TC6 Frame Buffering and Acknowledgment: with ACKs delayed, the 100 frames stay buffered and
/// the transmitter goes from ADVANCE to REPLAY; once the ACKs arrive, every frame is freed.
#[test]
fn tc06_frame_buffering_and_acknowledgment() {
    let mut b = Bench::new(hw_config());
    b.up();
    let release = b.now.saturating_add(Duration::from_micros(12));
    b.jam_back = Box::new(move |t, c| matches!(c, CtlOs::LlrAck { .. }) && t < release);
    b.paced = false;
    b.to_offer = 100;
    b.run_until(Duration::from_micros(25), |b| b.tx.state() == TxState::Replay);
    assert_eq!(b.tx.buffer().len(), 100, "held until acknowledged");
    assert!(b.tx_states.ends_with(&[TxState::Advance, TxState::Replay]));
    b.run_until(MS, |b| b.tx.buffer().is_empty());
    assert!(b.tx.buffer().is_empty() && b.tx.buffer().bytes() == 0, "freed");
    b.assert_delivered_in_order(100);
    assert_eq!(b.tx.stats().tx_ok, 100 + b.tx.stats().frames_replayed);
}

/// TC7 Loss Detection and NACK Generation: 5 % of frames dropped at random among 1000; RX goes
/// SEND_NACK → NACK_SENT, TX to REPLAY; every lost frame is retransmitted; no NACK without a
/// loss.
#[test]
fn tc07_loss_detection_and_nack_generation() {
    let mut b = Bench::new(hw_config());
    b.up();
    let mut rng = Rng(0x5EED_0007);
    let dropped = std::rc::Rc::new(std::cell::RefCell::new(std::collections::HashSet::new()));
    let nacks = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let (d, n) = (dropped.clone(), nacks.clone());
    b.jam = Box::new(move |s| {
        if rng.below(100) < 5 {
            d.borrow_mut().insert(s.seq);
            Jam::Drop
        } else {
            Jam::Pass
        }
    });
    b.jam_back = Box::new(move |_, c| {
        if let CtlOs::LlrNack { seq } = c {
            n.borrow_mut().push(*seq);
        }
        false
    });
    b.send_all(1000, MS.saturating_mul(10));
    b.assert_delivered_in_order(1000);
    let (tx, rx) = (*b.tx.stats(), *b.rx.stats());
    assert!(rx.nack_tx > 0 && tx.nack_rx == rx.nack_tx, "every NACK sent arrives");
    // No false NACKs: each names a frame after which one was really lost.
    for seq in nacks.borrow().iter() {
        assert!(dropped.borrow().contains(&((seq + 1) % (1 << 20))), "NACK {seq} without a loss after it");
    }
    assert!(tx.tx_replay > 0 && rx.rx_replay > 0);
    assert!(b.rx_states.windows(2).any(|w| w == [RxState::SendNack, RxState::NackSent]));
    assert!(b.tx_states.contains(&TxState::Replay));
}

/// TC8 NACK and retransmission: 100 frames with exactly the 50th dropped: one NACK for it, no
/// ACK between the NACK and the replay, every frame from the 50th on sent again, 100 delivered
/// without duplicates.
#[test]
fn tc08_nack_and_retransmission() {
    let mut b = Bench::new(hw_config());
    b.up();
    b.jam = Box::new(|s| if s.id == 49 && !s.replay { Jam::Drop } else { Jam::Pass });
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let record = log.clone();
    b.jam_back = Box::new(move |t, c| {
        record.borrow_mut().push((t, *c));
        false
    });
    b.send_all(100, MS);
    let nacked_at = log.borrow().iter().find(|(_, c)| matches!(c, CtlOs::LlrNack { .. })).unwrap().0;
    let replay_arrived = b.delivered_at[49];
    let acks_between = log
        .borrow()
        .iter()
        .filter(|(t, c)| matches!(c, CtlOs::LlrAck { .. }) && *t > nacked_at && *t < replay_arrived)
        .count();
    assert_eq!(acks_between, 0, "no ACK after the NACK until the replay arrives");
    b.assert_delivered_in_order(100);
    let (tx, rx) = (b.tx.stats(), b.rx.stats());
    assert_eq!((rx.nack_tx, tx.nack_rx, tx.tx_replay, rx.rx_replay, rx.duplicate_seq), (1, 1, 1, 1, 0));
    assert!(rx.missing_seq >= 1);
    assert_eq!(b.replays(), [(b.replays()[0].0, ReplayCause::Nack)]);
    let from_50th = b.events.iter().any(|(_, e)| matches!(e, LlrTxEvent::ReplayStarted { from: 1049, .. }));
    assert!(from_50th, "the replay starts at the 50th frame");
    assert!(tx.frames_replayed >= 1 && tx.frames_replayed <= 51);
}

/// TC9 Timeout-Based Retransmission: with every ACK suppressed, the 10 frames (sent together)
/// are sent again when REPLAY_TIMER_MAX has passed (within ±10 %), not before; the
/// receiver stays in SEND_ACKS; TX_REPLAY counts the replay.
#[test]
fn tc09_timeout_based_retransmission() {
    let config = LlrTxConfig { replay_timeout: Duration::from_micros(10), replay_count_max: 3, ..hw_config() };
    let mut b = Bench::new(config);
    b.up();
    b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
    b.paced = false;
    b.to_offer = 10;
    b.run_until(MS, |b| b.tx.stats().tx_replay > 0);
    let last_first_send = b.sent_at[9].unwrap();
    let (replayed_at, cause) = b.replays()[0];
    assert_eq!(cause, ReplayCause::Timer);
    let waited = replayed_at.saturating_duration_since(last_first_send).as_nanos();
    assert!((9_000..=11_000).contains(&waited), "replayed after {waited} ns");
    assert_eq!(b.tx.stats().tx_replay, 1);
    assert!(b.rx_states.iter().all(|s| *s == RxState::SendAcks), "duplicates do not NACK");
}

/// TC10 Corrupted Frame Detection and Retransmission: with bit errors on 1000 frames, RX_BAD
/// counts the corrupted frames, and each corruption (spaced wider than the loop) costs one NACK
/// and one replay; RX_EXPECTED_SEQ_BAD counts them; RX goes SEND_NACK → NACK_SENT.
#[test]
fn tc10_corrupted_frame_detection_and_retransmission() {
    let mut b = Bench::new(hw_config());
    b.up();
    let corrupt = |s: &Sent| !s.replay && s.id % 97 == 50;
    b.jam = Box::new(move |s| if corrupt(s) { Jam::Corrupt } else { Jam::Pass });
    b.send_all(1000, MS.saturating_mul(10));
    b.assert_delivered_in_order(1000);
    let corrupted = (0..1000).filter(|i| i % 97 == 50).count() as u64;
    let (tx, rx) = (b.tx.stats(), b.rx.stats());
    assert_eq!((rx.bad, rx.expected_seq_bad, rx.nack_tx, tx.nack_rx), (corrupted, corrupted, corrupted, corrupted));
    assert_eq!((tx.tx_replay, rx.rx_replay), (corrupted, corrupted));
    assert!(b.rx_states.windows(2).any(|w| w == [RxState::SendNack, RxState::NackSent]));
}

/// Not a listed case (project-defined, `llr::rx` module doc): the receiver holds every frame
/// stored when a corrupted timer replay draws an LLR_NACK that is lost. It waits in NACK_SENT
/// for the frame after the transmitter's newest, and each further replay brings only frames it
/// has. Those are acknowledged again, so the transmitter empties its buffer without a FLUSH,
/// with a replay limit or without one, and the next frame ends NACK_SENT.
#[test]
fn a_lost_nack_after_the_newest_frame_is_not_a_dead_end() {
    for replay_count_max in [REPLAY_COUNT_UNLIMITED, 3] {
        let mut b = Bench::new(LlrTxConfig { replay_count_max, ..hw_config() });
        b.up();
        let mut corrupted = false;
        b.jam = Box::new(move |s| {
            if s.replay && !corrupted {
                corrupted = true;
                return Jam::Corrupt;
            }
            Jam::Pass
        });
        // Every CtlOS back is lost until the NACK is: the timer replays, then the receiver waits.
        let mut nack_lost = false;
        b.jam_back = Box::new(move |_, c| {
            if nack_lost {
                return false;
            }
            nack_lost = matches!(c, CtlOs::LlrNack { .. });
            true
        });
        b.to_offer = 10;
        b.run_until(MS, |b| b.rx.stats().nack_tx == 1);
        assert_eq!((b.rx.state(), b.rx.expected().value()), (RxState::NackSent, 1010));
        b.run_until(MS, |b| b.tx.buffer().is_empty());
        assert!(b.tx.buffer().is_empty(), "the replays of frames the receiver has never end");
        assert_eq!(b.tx.stats().flushes, 0);
        b.assert_delivered_in_order(10);
        b.send_all(1, MS);
        b.assert_delivered_in_order(11);
        assert_eq!(b.rx.state(), RxState::SendAcks);
    }
}

/// TC12 Buffer Overflow Handling: OUTSTANDING_FRAMES_MAX 100 and no ACKs. The 101st frame is
/// refused (the caller keeps it), the replay limit takes TX to FLUSH while RX stays in
/// SEND_ACKS, and what is offered in FLUSH follows the FLUSH action: LLR-ineligible with
/// BEST_EFFORT, counted in TX_DISCARD with DISCARD. Deviation (documented in `llr`): the plan
/// expects the overflow itself to flush and count TX_DISCARD; here a full window is
/// back-pressure, and FLUSH comes from the replay limit.
#[test]
fn tc12_buffer_overflow_handling() {
    for action in [FrameAction::BestEffort, FrameAction::Discard] {
        let config = LlrTxConfig { outstanding_frames_max: 100, flush_action: action, ..hw_config() };
        let mut b = Bench::new(config);
        b.up();
        b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
        b.paced = false;
        b.to_offer = 150;
        b.step();
        assert_eq!((b.offered, b.tx.buffer().len()), (100, 100));
        assert!(b.window_full > 0, "the 101st frame waits");
        b.run_until(MS, |b| b.tx.state() == TxState::Flush);
        assert_eq!(b.tx.state(), TxState::Flush);
        assert!(b.rx_states.iter().all(|s| *s == RxState::SendAcks));
        b.run_until(MS, |b| b.offered == 150);
        match action {
            FrameAction::BestEffort => assert_eq!((b.plain, b.tx.stats().tx_discard), (50, 0)),
            _ => assert_eq!((b.discarded, b.tx.stats().tx_discard), (50, 50)),
        }
    }
}

/// TC15 Maximum Retry Limit: REPLAY_COUNT_MAX 3 under loss that persists: TX_REPLAY never exceeds
/// 3, TX enters FLUSH and stays there (no endless loop), RX stays in SEND_ACKS, and TX_DISCARD
/// counts the frames offered afterwards (FLUSH action DISCARD); the frames FLUSH dropped from
/// the buffer are counted apart (SAI's TX_DISCARD covers frames offered in INIT or FLUSH).
#[test]
fn tc15_maximum_retry_limit() {
    let config = LlrTxConfig { replay_count_max: 3, flush_action: FrameAction::Discard, ..hw_config() };
    let mut b = Bench::new(config);
    b.up();
    b.send_all(10, MS);
    b.jam = Box::new(|_| Jam::Drop);
    b.to_offer += 10;
    b.run_until(MS, |b| b.tx.state() == TxState::Flush);
    let tx = *b.tx.stats();
    assert_eq!(b.tx.state(), TxState::Flush);
    assert_eq!((tx.replays_started, tx.tx_replay, tx.flushes), (3, 3, 1));
    assert!(
        b.events.iter().any(|(_, e)| matches!(e, LlrTxEvent::Flushed { reason: FlushReason::ReplayCountExceeded, .. }))
    );
    let transmissions = b.transmissions;
    b.to_offer += 5;
    b.run_for(MS);
    assert_eq!(b.transmissions, transmissions, "nothing more goes out in FLUSH");
    assert_eq!(b.tx.stats().tx_replay, 3);
    assert_eq!(b.tx.stats().tx_discard, 5);
    assert!(b.rx_states.iter().all(|s| *s == RxState::SendAcks));
}

/// TC16 Rapid Successive Errors: a burst of 100 consecutive frames lost within 1000. Every frame
/// is recovered with one NACK, and the recovery takes at most twice a single loss's.
/// Deviation (documented in `llr`): RX_MISSING_SEQ counts the frames whose number showed the
/// gap, not the burst size the plan names.
#[test]
fn tc16_rapid_successive_errors() {
    fn recovery(burst: std::ops::Range<u32>) -> (Bench, u64) {
        let mut b = Bench::new(hw_config());
        b.paced = false;
        b.up();
        let lost = burst.clone();
        b.jam = Box::new(move |s| if !s.replay && lost.contains(&s.id) { Jam::Drop } else { Jam::Pass });
        b.send_all(1000, MS.saturating_mul(10));
        b.assert_delivered_in_order(1000);
        // From the first loss to the last lost frame delivered.
        let (first, last) = (burst.start as usize, burst.end as usize - 1);
        let took = b.delivered_at[last].saturating_duration_since(b.sent_at[first].unwrap()).as_nanos();
        (b, took)
    }
    let (_, single) = recovery(400..401);
    let (b, burst) = recovery(400..500);
    assert_eq!((b.rx.stats().nack_tx, b.tx.stats().tx_replay), (1, 1));
    assert!(b.rx.stats().missing_seq >= 1);
    assert!(burst <= 2 * single, "burst recovery {burst} ns vs single loss {single} ns");
}

/// TC17 Warm Boot: after the DUT restarts, LLR re-initialises (TX INIT → ADVANCE, RX
/// SEND_ACKS) with a new handshake counted in the INIT/INIT_ECHO CtlOS, the tester's receiver
/// reports the restart, and the new life's frames are delivered.
#[test]
fn tc17_warm_boot_reinitialisation() {
    let config = hw_config();
    let mut b = Bench::new(config);
    b.up();
    b.send_all(50, MS);
    // The DUT comes back with its configuration and a new first sequence number.
    let storage = vec![0u8; config.outstanding_bytes_max as usize];
    b.tx = Tx::new(config, storage, Seq::new(777_777).unwrap()).unwrap();
    b.tx.enable(b.now).unwrap();
    let outcome = match b.tx.poll_control(b.now) {
        Some(CtlOs::LlrInit { seq }) => b.rx.handle_init(b.now, seq).unwrap(),
        other => panic!("LLR_INIT expected, got {other:?}"),
    };
    assert!(matches!(outcome, InitOutcome::PeerRestarted { .. }));
    b.run_until(MS, |b| b.tx.state() == TxState::Advance);
    assert_eq!((b.tx.state(), b.rx.state()), (TxState::Advance, RxState::SendAcks));
    assert_eq!((b.tx.stats().init_echo_rx, b.rx.stats().init_rx, b.rx.stats().init_echo_tx), (1, 2, 2));
    b.send_all(50, MS);
    b.assert_delivered_in_order(100);
}

/// TC18 Mixed LLR/Non-LLR Traffic: half the frames LLR-ineligible (`Link::send_plain`), loss on
/// both kinds: LLR counters count LLR frames only, every LLR frame arrives, lost plain frames
/// stay lost and their credits come back with the CC_Update.
#[test]
fn tc18_mixed_llr_and_non_llr_traffic() {
    let (mut a, mut z) = link_pair(LinkConfig::hardware(&sizing(), RATE, MAC_A), 5);
    let vc = Vc::new(0).unwrap();
    let mut rng = Rng(18);
    let (mut llr_sent, mut llr_delivered, mut plain_delivered, mut plain_lost) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..1000u32 {
        let frame = frame_bytes(i, 100);
        let lost = rng.below(100) < 2;
        if i % 2 == 0 {
            // Not LLR-eligible, on lossless VC 1: credits charged, no sequence number, and a
            // loss is final (its credits come back with the next CC_Update).
            let plain_vc = Vc::new(1).unwrap();
            a.send_plain(plain_vc, &frame).unwrap();
            plain_lost += u64::from(lost);
            if !lost && z.handle_frame(now_of(i), None, FrameCheck::Good, plain_vc, &frame) == Received::Deliver {
                z.on_drained(plain_vc, frame.len()).unwrap();
                plain_delivered += 1;
            }
        } else {
            let r = a.send(now_of(i), vc, &frame);
            assert!(matches!(r, Ok(Admit::Queued(_))), "{i}: {r:?}");
            llr_sent += 1;
        }
        llr_delivered += pump(&mut a, &mut z, now_of(i), vc, u32::from(lost && i % 2 == 1));
    }
    for t in 1000..3000 {
        llr_delivered += pump(&mut a, &mut z, now_of(t), vc, 0);
    }
    assert_eq!(llr_delivered, llr_sent, "no LLR frame lost");
    assert!(plain_lost > 0 && plain_delivered == 500 - plain_lost, "plain frames lost stay lost, the others arrive");
    // CC_Updates travel as LLR frames too.
    let cc = z.cbfc_receiver().stats().cc_updates_rx;
    let (tx, rx) = (a.llr_tx().stats(), z.llr_rx().stats());
    assert_eq!(rx.expected_seq_good, llr_sent + cc);
    assert_eq!(rx.ok + rx.bad, tx.tx_ok, "plain frames are not counted");
    assert_eq!(a.cbfc_sender().in_use(Vc::new(1).unwrap()), 0, "lost plain frames' credits recovered");
}

/// TC19 LLR NACK Response During PFC Pause: the application pauses (no new frames) while a lost
/// frame is being recovered: NACK, replay and ACK carry on, no new sequence number is used,
/// TX is back in ADVANCE after the replay and RX goes SEND_NACK → NACK_SENT. Deviation
/// (documented in `llr`): TX_OK counts the replayed frames, so it does not stop.
#[test]
fn tc19_nack_response_during_pause() {
    let mut b = Bench::new(hw_config());
    b.up();
    b.jam = Box::new(|s| if s.id == 15 && !s.replay { Jam::Drop } else { Jam::Pass });
    b.to_offer = 20; // the pause begins after frame 19
    b.run_until(MS, |b| b.offered == 20);
    let next = b.tx.buffer().next_seq();
    let acks = b.rx.stats().ack_tx;
    b.run_for(Duration::from_micros(50));
    assert_eq!(b.tx.buffer().next_seq(), next, "no new frames during the pause");
    let (tx, rx) = (b.tx.stats(), b.rx.stats());
    assert_eq!((rx.nack_tx, tx.tx_replay, rx.rx_replay), (1, 1, 1));
    assert!(rx.ack_tx > acks, "ACKs continue");
    assert!(b.rx_states.windows(2).any(|w| w == [RxState::SendNack, RxState::NackSent]));
    assert_eq!(b.tx.state(), TxState::Advance);
    b.assert_delivered_in_order(20);
}

/// TC20 LLR retry response During PFC Pause: ACKs suppressed while paused: the replay timer
/// takes TX to REPLAY, TX_REPLAY and RX_REPLAY continue, and TX_DISCARD does not move (TX_OK
/// counts the replays, as in TC19).
#[test]
fn tc20_retry_response_during_pause() {
    let config = LlrTxConfig { replay_count_max: 4, ..hw_config() };
    let mut b = Bench::new(config);
    b.up();
    b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
    b.to_offer = 10;
    b.run_until(MS, |b| b.offered == 10);
    b.run_until(MS, |b| b.tx.stats().tx_replay >= 2);
    b.run_for(Duration::from_micros(2)); // the replay reaches the receiver
    let (tx, rx) = (*b.tx.stats(), *b.rx.stats());
    assert!(b.tx_states.contains(&TxState::Replay));
    assert_eq!((tx.tx_replay, rx.rx_replay, tx.tx_discard), (2, 2, 0));
    assert_eq!(b.tx.buffer().next_seq().value(), 1010, "no new frames");
}

// ---------------------------------------------------------------------------------------------
// SONiC Scale-Up test standard: LLR
// ---------------------------------------------------------------------------------------------

/// LLR-01 Basic Seq/ACK: N = 100 good frames: LLR_TX_OK = LLR_RX_OK = N, no loss.
#[test]
fn llr01_basic_seq_ack() {
    let mut b = Bench::new(hw_config());
    b.up();
    b.send_all(100, MS);
    b.assert_delivered_in_order(100);
    assert_eq!((b.tx.stats().tx_ok, b.rx.stats().ok), (100, 100));
}

/// LLR-02 Retry (NACK): one frame of 100 dropped: LLR_RX_NACK_CTL_OS = 1 and one retry at the
/// DUT's transmitter, a valid replay at the tester, no loss.
#[test]
fn llr02_retry_nack() {
    let mut b = Bench::new(hw_config());
    b.up();
    b.jam = Box::new(|s| if s.id == 30 && !s.replay { Jam::Drop } else { Jam::Pass });
    b.send_all(100, MS);
    b.assert_delivered_in_order(100);
    let (tx, rx) = (b.tx.stats(), b.rx.stats());
    assert_eq!((tx.nack_rx, tx.replays_started, tx.tx_replay, rx.rx_replay), (1, 1, 1, 1));
}

/// LLR-03 Retry (replay timer), REPLAY_COUNT_MAX 3: with ACKs (A) blocked or (B) frozen at an old
/// number, three replays and then FLUSH, the stored frames dropped.
#[test]
fn llr03_retry_replay_timer() {
    for frozen in [false, true] {
        let config = LlrTxConfig { replay_count_max: 3, ..hw_config() };
        let mut b = Bench::new(config);
        b.up();
        b.send_all(1, MS);
        let old = b.tx.buffer().last_sent().value();
        b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
        b.to_offer += 100;
        b.run_until(MS, |b| b.offered == b.to_offer);
        if frozen {
            // The tester keeps acknowledging the frame before the 100.
            for _ in 0..200 {
                let _ = b.tx.handle_ack(b.now, old);
                b.step();
                if b.tx.state() == TxState::Flush {
                    break;
                }
            }
        }
        b.run_until(MS, |b| b.tx.state() == TxState::Flush);
        assert_eq!(b.tx.state(), TxState::Flush, "frozen ACKs: {frozen}");
        let tx = b.tx.stats();
        assert_eq!((tx.tx_replay, tx.flushes, tx.flushed_frames), (3, 1, 100));
        assert!(b.tx.buffer().is_empty());
    }
}

/// LLR-04 NACK generation, N = 1000: (1) one bad-CRC frame: LLR_RX_EXPECTED_SEQ_BAD = 1,
/// LLR_TX_NACK_CTL_OS = 1, LLR_RX_REPLAY = 1; (2) one sequence gap: the NACK and the replay
/// alike. No loss, no reordering.
#[test]
fn llr04_nack_generation() {
    for jam in [Jam::Corrupt, Jam::Drop] {
        let mut b = Bench::new(hw_config());
        b.up();
        b.jam = Box::new(move |s| if s.id == 500 && !s.replay { jam } else { Jam::Pass });
        b.send_all(1000, MS.saturating_mul(10));
        b.assert_delivered_in_order(1000);
        let rx = b.rx.stats();
        let bad = u64::from(jam == Jam::Corrupt);
        assert_eq!((rx.expected_seq_bad, rx.nack_tx, rx.rx_replay), (bad, 1, 1), "{jam:?}");
    }
}

/// LLR-05 Poison CRC: one of 100 frames sent poisoned: LLR_RX_EXPECTED_SEQ_POISONED = 1,
/// LLR_TX_NACK_CTL_OS = 0, LLR_RX_REPLAY = 0; LLR_TX_POISONED = 1; the frame is not delivered.
#[test]
fn llr05_poison_crc() {
    let mut b = Bench::new(hw_config());
    b.poison = Some(42);
    b.up();
    b.send_all(100, MS);
    let rx = b.rx.stats();
    assert_eq!((rx.expected_seq_poisoned, rx.poisoned, rx.nack_tx, rx.rx_replay), (1, 1, 0, 0));
    assert_eq!((b.tx.stats().tx_poisoned, b.tx.stats().tx_ok), (1, 99));
    assert_eq!(b.delivered, (0..100).filter(|i| *i != 42).collect::<Vec<_>>());
}

/// LLR-06 OUTSTANDING_FRAMES_MAX 4 with the FLUSH action DISCARD, ACKs dropped, 100 offered:
/// the DUT replays only the 4 outstanding frames before FLUSH, then discards.
#[test]
fn llr06_outstanding_frames_max() {
    let config = LlrTxConfig { outstanding_frames_max: 4, flush_action: FrameAction::Discard, ..sai_defaults() };
    let mut b = Bench::new(config);
    b.up();
    b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
    b.to_offer = 100;
    b.run_until(MS, |b| b.offered == 100);
    let tx = b.tx.stats();
    assert_eq!((tx.frames_replayed, tx.tx_replay, tx.flushes, tx.flushed_frames), (4, 1, 1, 4));
    assert_eq!((b.tx.state(), tx.tx_discard, b.discarded), (TxState::Flush, 96, 96));
}

/// LLR-07 Buffer capacity (and CBFC-12's link): CtlOS delayed by a 500 m round trip (2.5 µs each
/// way), maximum then minimum frames at 100 % of 100 Gb/s: with the replay buffer and timer
/// from `LlrSizing`, no loss, no stall for window, line rate received.
#[test]
fn llr07_buffer_capacity() {
    let delay = Duration::from_nanos(2_500);
    let loop_time = delay.saturating_mul(2);
    for size in [9216usize, 64] {
        let config = LlrTxConfig::hardware(&LlrSizing::hardware(loop_time, RATE).with_frame_slots(SLOTS));
        let mut b = Bench::new(config);
        b.delay = delay;
        b.rate = Some(RATE);
        b.size_of = if size == 64 { |_| 64 } else { |_| 9216 };
        b.paced = false;
        b.up();
        let start = b.now;
        // A source that always has the next frames ready (about 2 KB of them).
        let ready = (2000 / size).max(1);
        for _ in 0..2000 {
            if b.tx.buffer().unsent() < ready {
                b.to_offer = b.offered + ready as u32;
            }
            b.step();
        }
        let elapsed = b.now.saturating_duration_since(start).as_nanos() - 2 * delay.as_nanos();
        let line = RATE.bytes_in(Duration::from_nanos(elapsed)) as f64 * size as f64 / (size + 20) as f64;
        let share = b.bytes_delivered as f64 / line;
        assert_eq!(b.window_full, 0, "{size} B: the buffer covers the loop");
        assert!(share > 0.97, "{size} B frames: {share:.3} of line rate");
        b.assert_delivered_in_order(b.delivered.len() as u32);
    }
}

/// LLR-08 Flush recovery: with RE_INIT_ON_FLUSH, a forced FLUSH re-initialises by itself and the
/// link carries frames again.
#[test]
fn llr08_flush_recovery() {
    let config = LlrTxConfig { reinit_on_flush: true, ..hw_config() };
    let mut b = Bench::new(config);
    b.up();
    b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
    b.to_offer = 10;
    b.run_until(MS, |b| b.tx.stats().flushes > 0);
    b.jam_back = Box::new(|_, _| false);
    b.run_until(MS, |b| b.tx.state() == TxState::Advance);
    assert_eq!(b.tx.state(), TxState::Advance, "re-initialised");
    assert_eq!(b.tx.stats().init_tx, 2);
    let before = b.delivered.len();
    b.send_all(10, MS);
    assert_eq!(b.delivered.len(), before + 10);
    assert!(b.tx.buffer().is_empty());
}

/// SAI `REPLAY_COUNT_MAX` = 255 (and the OTG model's default): no maximum; with ACKs blocked
/// for a long time the transmitter keeps replaying and never flushes, and recovers when they
/// return.
#[test]
fn sai_replay_count_max_255_is_unlimited() {
    let config = LlrTxConfig { replay_count_max: REPLAY_COUNT_UNLIMITED, ..sai_defaults() };
    let mut b = Bench::new(config);
    b.up();
    b.jam_back = Box::new(|_, c| matches!(c, CtlOs::LlrAck { .. }));
    b.to_offer = 10;
    b.run_for(MS.saturating_mul(2));
    assert!(b.tx.stats().tx_replay > 255, "{} replays", b.tx.stats().tx_replay);
    assert_eq!(b.tx.stats().flushes, 0);
    assert!(matches!(b.tx.state(), TxState::Advance | TxState::Replay));
    b.jam_back = Box::new(|_, _| false);
    b.send_all(0, MS);
    b.assert_delivered_in_order(10);
}

/// LLR-09 Packet sizes 64, 128, 256, 512, 1518, 2048, 4096 and 9216 bytes, each ±1 (64 only +1,
/// 9216 only −1), with a loss among them: no abnormal drops, every frame whole.
#[test]
fn llr09_packet_sizes() {
    fn size(id: u32) -> usize {
        const SIZES: [usize; 22] = [
            64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1517, 1518, 1519, 2047, 2048, 2049, 4095, 4096, 4097,
            9215, 9216,
        ];
        SIZES[id as usize % SIZES.len()]
    }
    let mut b = Bench::new(hw_config());
    b.size_of = size;
    b.up();
    b.jam = Box::new(|s| if s.id == 100 && !s.replay { Jam::Drop } else { Jam::Pass });
    b.send_all(220, MS);
    b.assert_delivered_in_order(220);
}

/// LLR-10 Mixed LLR and non-LLR with uncorrectable FEC errors: non-LLR frames hit are lost, LLR
/// frames hit are recovered.
#[test]
fn llr10_mixed_llr_and_non_llr() {
    let (mut a, mut z) = link_pair(LinkConfig::hardware(&sizing(), RATE, MAC_A), 6);
    let vc = Vc::new(0).unwrap();
    let frame = frame_bytes(7, 200);
    // A non-LLR frame with an uncorrectable FEC error is dropped, and nothing brings it back.
    assert_eq!(z.handle_frame(now_of(0), None, FrameCheck::Bad, vc, &frame), Received::Drop);
    // An LLR frame hit the same way is replayed and delivered.
    assert!(matches!(a.send(now_of(0), vc, &frame), Ok(Admit::Queued(_))));
    let mut delivered = pump(&mut a, &mut z, now_of(0), vc, 1);
    for t in 1..200 {
        delivered += pump(&mut a, &mut z, now_of(t), vc, 0);
    }
    assert_eq!(delivered, 1);
    assert_eq!(z.llr_rx().stats().bad, 1);
}

// ---------------------------------------------------------------------------------------------
// SONiC Scale-Up test standard: CBFC, and the SAI CBFC workflows
// ---------------------------------------------------------------------------------------------

const SIZES: [usize; 22] = [
    64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1517, 1518, 1519, 2047, 2048, 2049, 4095, 4096, 4097, 9215,
    9216,
];

fn cbfc_pair(rule: CreditRule, modes: &[(u8, VcMode)]) -> (CbfcSender, CbfcReceiver) {
    let mut s = CbfcSender::new(CbfcSenderConfig { rule, ..CbfcSenderConfig::default() }).unwrap();
    let mut r = CbfcReceiver::new(CbfcReceiverConfig { rule, ..CbfcReceiverConfig::default() }).unwrap();
    for &(vc, mode) in modes {
        s.set_vc_mode(Instant::ZERO, Vc::new(vc).unwrap(), mode).unwrap();
        r.set_vc_mode(Instant::ZERO, Vc::new(vc).unwrap(), mode).unwrap();
    }
    (s, r)
}

fn lossless(limit: u32) -> VcMode {
    VcMode::Lossless { credit_limit: Some(limit) }
}

/// Carries the CF_Updates due from `r` to `s` from `now` on, over the microseconds their
/// spacing needs.
fn cf_round(s: &mut CbfcSender, r: &mut CbfcReceiver, now: Instant) {
    for us in 0..64 {
        while let Some(u) = r.poll_cf_update(now.saturating_add(Duration::from_micros(us))) {
            s.handle_cf_update(u.vc, u.freed).unwrap();
        }
    }
}

/// CBFC-01 Sender credits and CBFC-02 Receiver credits, over the packet-size sweep with credit
/// size 256 and overhead 64 (the SAI workflow's example): SENDER_CREDITS_CONSUMED,
/// SENDER_CREDITS_FREED and SENDER_CREDITS_USED, RECEIVER_CREDITS_CONSUMED and
/// RECEIVER_CREDITS_FREED equal the formula `ceil((size + overhead) / credit size)` summed.
#[test]
fn cbfc01_cbfc02_sender_and_receiver_credits() {
    let rule = CreditRule::new(256, 64).unwrap();
    let vc = Vc::new(2).unwrap();
    let (mut s, mut r) = cbfc_pair(rule, &[(2, lossless(100_000))]);
    let mut expected = 0u32;
    let mut t = Instant::ZERO;
    for &size in SIZES.iter().cycle().take(220) {
        let credits = (size as u32 + 64).div_ceil(256);
        expected += credits;
        assert_eq!(s.on_sent(vc, size), Ok(credits));
        assert_eq!(r.on_received(vc, size), Ok(credits));
        assert_eq!((s.consumed(vc).value(), r.consumed(vc).value()), (expected, expected));
        r.on_frame_freed(vc, size).unwrap();
        t = t.saturating_add(Duration::from_micros(1));
        cf_round(&mut s, &mut r, t);
    }
    cf_round(&mut s, &mut r, t.saturating_add(MS));
    assert_eq!((r.freed(vc).value(), s.freed(vc).value(), s.in_use(vc)), (expected, expected, 0));
    assert!(s.in_use_watermark(vc) >= (9216u32 + 64).div_ceil(256));
}

/// CBFC-03 Credit loss/recovery: with CC_Update stopped, 100 frames corrupted on the link leave
/// the receiver's CONSUMED and FREED unchanged while the sender's credits leak; once CC_Update
/// resumes, the receiver's counters equal the sender's S_VC_CC and S_VC_CF, and S_P_CU is 0.
#[test]
fn cbfc03_credit_loss_and_recovery() {
    let vc = Vc::new(1).unwrap();
    let (mut s, mut r) = cbfc_pair(CreditRule::default(), &[(1, lossless(2000))]);
    let mut t = Instant::ZERO;
    for _ in 0..50 {
        s.on_sent(vc, 1000).unwrap();
        r.on_received(vc, 1000).unwrap();
        r.on_frame_freed(vc, 1000).unwrap();
    }
    t = t.saturating_add(MS);
    cf_round(&mut s, &mut r, t);
    let (cc, cf) = (r.consumed(vc), r.freed(vc));
    for _ in 0..100 {
        s.on_sent(vc, 1000).unwrap(); // corrupted on the link: never received
    }
    t = t.saturating_add(MS);
    cf_round(&mut s, &mut r, t);
    assert_eq!((r.consumed(vc), r.freed(vc)), (cc, cf), "the receiver never saw them");
    assert_eq!(s.in_use(vc), 800, "leaked");
    // CC_Update resumes.
    let update = s.poll_cc_update(t).expect("CC_Update due");
    let out = r.handle_cc_update(&update);
    assert!(out.is_ok() && out.credits_recovered == 800);
    cf_round(&mut s, &mut r, t.saturating_add(MS));
    assert_eq!((r.consumed(vc), r.freed(vc)), (s.consumed(vc), s.freed(vc)));
    assert_eq!((s.in_use(vc), s.port_in_use()), (0, 0));
}

/// CBFC-04 Backpressure: a VC whose buffer drains at 100 % carries the offered load, at 0 % it
/// pauses with the buffer full and nothing lost, at 50 % it carries a rate in between.
#[test]
fn cbfc04_backpressure() {
    let vc = Vc::new(0).unwrap();
    let mut rates = Vec::new();
    for drain_every in [1u32, 0, 2] {
        let (mut s, mut r) = cbfc_pair(CreditRule::default(), &[(0, lossless(64))]);
        let mut buffered = VecDeque::new();
        let mut sent = 0;
        for tick in 0..10_000u32 {
            let now = Instant::from_nanos(u64::from(tick) * 100);
            if s.may_send(vc, 1024).unwrap() {
                s.on_sent(vc, 1024).unwrap();
                r.on_received(vc, 1024).expect("never overrun");
                buffered.push_back(1024);
                sent += 1;
            }
            if drain_every != 0 && tick % drain_every == 0 {
                if let Some(len) = buffered.pop_front() {
                    r.on_frame_freed(vc, len).unwrap();
                }
            }
            cf_round(&mut s, &mut r, now);
        }
        if drain_every == 0 {
            assert_eq!((r.occupancy(vc), s.in_use(vc)), (64, 64), "paused with the buffer full");
        }
        rates.push(sent);
    }
    assert!(rates[1] == 8 && rates[2] > rates[1] && rates[2] < rates[0], "{rates:?}");
}

/// CBFC-08 Per-VC credit: four lossless VCs; backpressure on one does not slow the others.
#[test]
fn cbfc08_per_vc_credit() {
    let modes: Vec<_> = (0..4).map(|i| (i, lossless(32))).collect();
    let (mut s, mut r) = cbfc_pair(CreditRule::default(), &modes);
    let mut sent = [0u32; 4];
    for tick in 0..1000u64 {
        for i in 0..4u8 {
            let vc = Vc::new(i).unwrap();
            if s.may_send(vc, 512).unwrap() {
                s.on_sent(vc, 512).unwrap();
                r.on_received(vc, 512).unwrap();
                sent[usize::from(i)] += 1;
                if i != 3 {
                    r.on_frame_freed(vc, 512).unwrap(); // VC 3 never drains
                }
            }
        }
        cf_round(&mut s, &mut r, Instant::from_nanos(tick * 1000));
    }
    assert_eq!(sent[3], 8, "the blocked VC stops at its limit");
    assert!(sent[..3].iter().all(|&n| n > 500), "{sent:?}");
}

/// CBFC-09 Per-port credit: two lossless VCs sharing a port limit; backpressure on VC 1 may hold
/// VC 2 back (the standard leaves it to the implementation) but the port limit holds and
/// nothing overruns.
#[test]
fn cbfc09_per_port_credit() {
    let rule = CreditRule::default();
    let mut s = CbfcSender::new(CbfcSenderConfig { rule, port_credit_limit: Some(48), ..Default::default() }).unwrap();
    let mut r = CbfcReceiver::new(CbfcReceiverConfig { rule, ..Default::default() }).unwrap();
    for i in [1u8, 2] {
        let vc = Vc::new(i).unwrap();
        s.set_vc_mode(Instant::ZERO, vc, VcMode::Lossless { credit_limit: Some(32) }).unwrap();
        r.set_vc_mode(Instant::ZERO, vc, VcMode::Lossless { credit_limit: Some(32) }).unwrap();
    }
    let (v1, v2) = (Vc::new(1).unwrap(), Vc::new(2).unwrap());
    let mut sent2 = 0;
    for tick in 0..1000u64 {
        for vc in [v1, v2] {
            if s.may_send(vc, 128).unwrap() {
                s.on_sent(vc, 128).unwrap();
                r.on_received(vc, 128).expect("no overrun");
                if vc == v2 {
                    r.on_frame_freed(vc, 128).unwrap();
                    sent2 += 1;
                }
            }
        }
        assert!(s.port_in_use() <= 48);
        cf_round(&mut s, &mut r, Instant::from_nanos(tick * 1000));
    }
    assert_eq!(s.in_use(v1), 32);
    assert!(sent2 > 100, "VC 2 still flows within the port's remaining 16 credits");
}

/// SAI "Lossless VC initialization": one VC re-initialised at both ends while credits are in use
/// on it and another VC carries traffic: the sender's CREDITS_USED, CONSUMED and FREED and the
/// receiver's CONSUMED and FREED of that VC restart from zero, the other VC's are untouched and
/// it keeps flowing.
#[test]
fn sai_lossless_vc_initialization() {
    let (a, b) = (Vc::new(4).unwrap(), Vc::new(5).unwrap());
    let (mut s, mut r) = cbfc_pair(CreditRule::default(), &[(4, lossless(16)), (5, lossless(16))]);
    let mut t = Instant::ZERO;
    for _ in 0..5 {
        for vc in [a, b] {
            s.on_sent(vc, 300).unwrap();
            r.on_received(vc, 300).unwrap();
        }
        r.on_frame_freed(b, 300).unwrap(); // only VC b drains
    }
    t = t.saturating_add(MS);
    cf_round(&mut s, &mut r, t);
    assert_eq!((s.in_use(a), s.in_use(b)), (15, 0), "VC a is stuck with credits in use");
    let b_counters = (s.consumed(b), s.freed(b), r.consumed(b), r.freed(b));
    // The workflow: receiver disabled and cleared, sender's dequeue stopped and cleared, then
    // both enabled again. Here: the sender re-initialises and holds the VC; the receiver drains
    // its buffer (the frames already there) and re-initialises.
    s.resync_vc(a);
    r.resync_vc(t, a);
    assert_eq!((s.in_use(a), s.consumed(a).value(), s.freed(a).value()), (0, 0, 0));
    assert_eq!((r.consumed(a).value(), r.freed(a).value()), (0, 0));
    assert!(s.is_held(a) && !s.may_send(a, 300).unwrap());
    // VC b carries on meanwhile.
    for _ in 0..5 {
        s.on_sent(b, 300).unwrap();
        r.on_received(b, 300).unwrap();
        r.on_frame_freed(b, 300).unwrap();
    }
    for _ in 0..5 {
        r.on_frame_freed(a, 300).unwrap(); // the old frames leave the buffer
    }
    t = t.saturating_add(MS);
    cf_round(&mut s, &mut r, t);
    assert!(!s.is_held(a) && s.may_send(a, 300).unwrap(), "VC a is back");
    assert_eq!((s.in_use(a), r.freed(a).value()), (0, 0));
    assert_ne!(b_counters, (s.consumed(b), s.freed(b), r.consumed(b), r.freed(b)), "VC b moved on");
    assert_eq!((s.in_use(b), r.occupancy(b)), (0, 0));
    assert_eq!((s.stats().vc_reinits, r.stats().vc_reinits), (3, 3), "two set_vc_mode, one resync each");
}

/// SAI "Lossless VC removal": the sender stops, waits for its credits to come back, and both
/// ends make the VC best-effort; frames then need no credit.
#[test]
fn sai_lossless_vc_removal() {
    let vc = Vc::new(7).unwrap();
    let (mut s, mut r) = cbfc_pair(CreditRule::default(), &[(7, lossless(8))]);
    for _ in 0..8 {
        s.on_sent(vc, 128).unwrap();
        r.on_received(vc, 128).unwrap();
    }
    assert!(!s.may_send(vc, 128).unwrap());
    for _ in 0..8 {
        r.on_frame_freed(vc, 128).unwrap();
    }
    cf_round(&mut s, &mut r, Instant::ZERO.saturating_add(MS));
    assert_eq!(s.in_use(vc), 0, "queue occupancy 0");
    s.set_vc_mode(Instant::ZERO, vc, VcMode::BestEffort).unwrap();
    r.set_vc_mode(Instant::ZERO, vc, VcMode::BestEffort).unwrap();
    for _ in 0..100 {
        assert!(s.may_send(vc, 9000).unwrap());
        assert_eq!((s.on_sent(vc, 9000), r.on_received(vc, 9000)), (Ok(0), Ok(0)));
    }
}

// ---------------------------------------------------------------------------------------------
// A peer restart on the whole link
// ---------------------------------------------------------------------------------------------

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];

fn sizing() -> LlrSizing {
    LlrSizing::software(Duration::from_micros(2), RATE).with_frame_slots(256)
}

type End = Link<Vec<u8>, 256>;

fn link_pair(config: LinkConfig, seed: u32) -> (End, End) {
    let storage = || vec![0u8; config.llr_tx.outstanding_bytes_max as usize];
    let mut a = End::new(config, storage(), seed).unwrap();
    let mut z = End::new(LinkConfig { mac: [2, 0, 0, 0, 0, 0xb], ..config }, storage(), seed * 1000 + 1).unwrap();
    for end in [&mut a, &mut z] {
        for vc in 0..4 {
            end.set_vc_mode(Instant::ZERO, Vc::new(vc).unwrap(), lossless(64)).unwrap();
        }
        end.enable(Instant::ZERO).unwrap();
    }
    for t in 0..50 {
        pump(&mut a, &mut z, now_of(t), Vc::new(0).unwrap(), 0);
    }
    assert_eq!((a.llr_tx().state(), z.llr_tx().state()), (TxState::Advance, TxState::Advance));
    (a, z)
}

fn now_of(tick: u32) -> Instant {
    Instant::from_nanos(u64::from(tick) * 1000)
}

/// Moves everything due between two ends at `now` (zero delay), `a`'s frames classified into
/// `vc`, the first `corrupt` of them corrupted, every delivered frame drained at once; returns
/// the data frames `z` delivered.
fn pump(a: &mut End, z: &mut End, now: Instant, vc: Vc, mut corrupt: u32) -> u64 {
    let mut delivered = 0;
    for _ in 0..8 {
        a.handle_timeout(now);
        z.handle_timeout(now);
        while let Some(c) = a.poll_control(now) {
            let _ = z.handle_control(now, c);
        }
        while let Some(c) = z.poll_control(now) {
            let _ = a.handle_control(now, c);
        }
        while let Some(out) = a.poll_transmit(now) {
            let (seq, frame) = (out.seq.value(), out.frame.to_vec());
            let check = if corrupt > 0 { FrameCheck::Bad } else { FrameCheck::Good };
            corrupt = corrupt.saturating_sub(1);
            if z.handle_frame(now, Some(seq), check, vc, &frame) == Received::Deliver {
                z.on_drained(vc, frame.len()).unwrap();
                delivered += 1;
            }
        }
        let back = Vc::new(0).unwrap();
        while let Some(out) = z.poll_transmit(now) {
            let (seq, frame) = (out.seq.value(), out.frame.to_vec());
            if a.handle_frame(now, Some(seq), FrameCheck::Good, back, &frame) == Received::Deliver {
                a.on_drained(back, frame.len()).unwrap();
            }
        }
    }
    delivered
}

/// The peer restarts while one VC has credits in use (its frames sit undrained in the peer's
/// buffer) and another is flowing: both ends re-handshake, each VC is re-initialised once its
/// old frames are gone, and both VCs carry traffic again with nothing duplicated or overrun.
#[test]
fn peer_restart_with_credits_in_use() {
    let config = LinkConfig::software(&sizing(), RATE, MAC_A);
    let (mut a, mut z) = link_pair(config, 9);
    let (stuck, flowing) = (Vc::new(1).unwrap(), Vc::new(2).unwrap());
    let mut t = 100;
    // VC 1's frames are delivered but never drained by the application.
    for i in 0..6u32 {
        a.send(now_of(t), stuck, &frame_bytes(i, 1000)).unwrap();
        while let Some(out) = a.poll_transmit(now_of(t)) {
            let (seq, f) = (out.seq.value(), out.frame.to_vec());
            assert_eq!(z.handle_frame(now_of(t), Some(seq), FrameCheck::Good, stuck, &f), Received::Deliver);
        }
        t += 1;
    }
    assert!(a.cbfc_sender().in_use(stuck) > 0);
    for _ in 0..10 {
        a.send(now_of(t), flowing, &frame_bytes(0, 500)).unwrap();
        pump(&mut a, &mut z, now_of(t), flowing, 0);
        t += 1;
    }
    // The peer restarts: a new object, a new first number, the same configuration.
    z = End::new(
        LinkConfig { mac: [2, 0, 0, 0, 0, 0xb], ..config },
        vec![0; config.llr_tx.outstanding_bytes_max as usize],
        424_242,
    )
    .unwrap();
    for vc in 0..4 {
        z.set_vc_mode(now_of(t), Vc::new(vc).unwrap(), lossless(64)).unwrap();
    }
    z.enable(now_of(t)).unwrap();
    let mut events = Vec::new();
    let mut delivered = [0u32; 2];
    for _ in 0..2000 {
        for (k, vc) in [stuck, flowing].into_iter().enumerate() {
            let _ = a.send(now_of(t), vc, &frame_bytes(delivered[k], 700)); // refused while held
            delivered[k] += pump(&mut a, &mut z, now_of(t), vc, 0) as u32;
        }
        while let Some(e) = a.poll_event() {
            events.push(e);
        }
        t += 1;
    }
    assert!(events.iter().any(|e| matches!(e, LinkEvent::PeerHandshake(InitOutcome::PeerRestarted { .. }))));
    assert!(events.iter().any(|e| matches!(e, LinkEvent::TxRestarted { .. })));
    assert!(events.contains(&LinkEvent::VcReady(stuck)) && events.contains(&LinkEvent::VcReady(flowing)));
    assert!(delivered.iter().all(|&n| n > 500), "both VCs flow again: {delivered:?}");
    assert_eq!(z.cbfc_receiver().stats().overruns + a.cbfc_receiver().stats().overruns, 0);
    assert_eq!(z.llr_rx().stats().duplicate_seq, 0);
}

// ---------------------------------------------------------------------------------------------
// The link object's own guarantees (found by an independent review against the sources)
// ---------------------------------------------------------------------------------------------

/// A pair on the SAI hardware profile (no re-initialisation on FLUSH) whose end `a` flushes
/// 2 µs after losing its PCS, with VC 1's frames delivered to `z` and not drained.
fn flushed_pair() -> (End, End, u32) {
    let base = LinkConfig::hardware(&sizing(), RATE, MAC_A);
    let config =
        LinkConfig { llr_tx: LlrTxConfig { pcs_lost_timeout: Some(Duration::from_micros(1)), ..base.llr_tx }, ..base };
    let (mut a, mut z) = link_pair(config, 3);
    let vc = Vc::new(1).unwrap();
    let mut t = 60;
    for i in 0..4 {
        a.send(now_of(t), vc, &frame_bytes(i, 500)).unwrap();
        while let Some(out) = a.poll_transmit(now_of(t)) {
            let (seq, f) = (out.seq.value(), out.frame.to_vec());
            assert_eq!(z.handle_frame(now_of(t), Some(seq), FrameCheck::Good, vc, &f), Received::Deliver);
        }
        t += 1;
    }
    a.set_pcs_status(now_of(t), false);
    t += 3;
    a.handle_timeout(now_of(t));
    assert_eq!(a.llr_tx().state(), TxState::Flush);
    assert!(a.cbfc_sender().is_held(vc), "a new epoch begins: the VC waits for the peer");
    (a, z, t)
}

/// A report from the peer's receiver of the old epoch (R_CF = 0: its buffer holds frames, none
/// freed) must not release a VC held in FLUSH: the frames are still in that buffer.
#[test]
fn a_stale_cf_update_cannot_release_a_held_vc_in_flush() {
    let (mut a, _z, t) = flushed_pair();
    let vc = Vc::new(1).unwrap();
    let stale = CtlOs::CfUpdate(linklayer::cbfc::CfUpdate { vc, freed: Seq::new(0).unwrap() });
    a.handle_control(now_of(t), stale).unwrap();
    assert!(a.cbfc_sender().is_held(vc));
    assert_eq!(a.stats().cf_ignored_before_handshake, 1);
}

/// Out of FLUSH only by RE_INIT_ON_FLUSH or management (SAI): not because the peer restarted.
#[test]
fn a_peer_restart_does_not_take_the_transmitter_out_of_flush() {
    let (mut a, _z, t) = flushed_pair();
    a.handle_control(now_of(t), CtlOs::LlrInit { seq: 4242 }).unwrap();
    let events: Vec<_> = std::iter::from_fn(|| a.poll_event()).collect();
    assert!(events.iter().any(|e| matches!(e, LinkEvent::PeerHandshake(InitOutcome::PeerRestarted { .. }))));
    assert_eq!(a.llr_tx().state(), TxState::Flush);
    a.reinit(now_of(t)).unwrap();
    assert_eq!(a.llr_tx().state(), TxState::Init);
}

/// With the PCS down and a CC_Update due, nothing spins: the link's next timeout is not "now",
/// and the CC_Update is not counted as an LLR_TX_DISCARD.
#[test]
fn a_pending_cc_update_waits_quietly_while_the_pcs_is_down() {
    let (mut a, _z) = link_pair(LinkConfig::hardware(&sizing(), RATE, MAC_A), 4);
    a.set_pcs_status(now_of(100), false);
    let later = now_of(1000); // beyond the 256 µs CC_Update period
    a.handle_timeout(later);
    while a.poll_control(later).is_some() {}
    assert!(a.poll_transmit(later).is_none());
    assert!(a.poll_timeout().is_none_or(|t| t > later), "{:?}", a.poll_timeout());
    assert_eq!(a.llr_tx().stats().tx_discard, 0);
    a.set_pcs_status(later, true);
    assert!(a.poll_transmit(later).is_some(), "the CC_Update goes once the PCS is back");
}

/// A CC_Update without an LLR sequence number on an LLR link could overtake frames still being
/// replayed and free their credits early: it is dropped and counted.
#[test]
fn an_unprotected_cc_update_is_not_applied() {
    let (_a, mut z) = link_pair(LinkConfig::hardware(&sizing(), RATE, MAC_A), 5);
    let mut update = linklayer::wire::CcUpdate::new(0).unwrap();
    update.set(Vc::new(1).unwrap(), Seq::new(40).unwrap()).unwrap();
    let mut bytes = [0u8; linklayer::wire::CC_UPDATE_FRAME_LEN];
    linklayer::wire::CcUpdateFrame::new(MAC_A, update).emit(&mut bytes).unwrap();
    let vc = Vc::new(0).unwrap();
    assert_eq!(z.handle_frame(now_of(60), None, FrameCheck::Good, vc, &bytes), Received::Drop);
    assert_eq!(z.stats().cc_updates_unprotected, 1);
    assert_eq!(z.cbfc_receiver().consumed(Vc::new(1).unwrap()).value(), 0);
}
