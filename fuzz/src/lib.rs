//! The fuzz targets of xlink as plain functions.
//!
//! Each `fuzz_targets/<name>.rs` calls the function of the same name; the stable test
//! `examples/tests/fuzz_corpus.rs` includes this file and replays every file of
//! `fuzz/corpus/<name>/` through it, so the committed corpora run on every `cargo test`.
//!
//! A target panics only when an invariant of the code under test breaks; that is the finding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use arbitrary::{Arbitrary, Unstructured};
use linklayer::cbfc::{CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, CreditRule, Vc, VcMode};
use linklayer::link::{Link, LinkConfig, LinkEvent, Received};
use linklayer::llr::{
    Admit, FrameAction, FrameCheck, LlrRx, LlrRxConfig, LlrSizing, LlrTx, LlrTxConfig, REPLAY_COUNT_UNLIMITED,
    ReplayBuffer, RxState, RxVerdict, TxState,
};
use linklayer::wire::{CC_UPDATE_FRAME_LEN, CC_UPDATE_LEN, CTLOS_LEN, CcUpdate, CcUpdateFrame, CtlOs};
use linklayer::{Bits, Duration, Instant, LinkRate, Seq};
use std::collections::VecDeque;

/// A fuzz target: consumes one input, panics on a broken invariant.
pub type Target = fn(&[u8]);

/// Every target by name, for the corpus replay.
pub const TARGETS: &[(&str, Target)] = &[
    ("ctlos", ctlos),
    ("cc_update", cc_update),
    ("replay_buffer", replay_buffer),
    ("llr", llr),
    ("cbfc", cbfc),
    ("link", link),
    ("uet_pds", uet_pds),
    ("uet_ses", uet_ses),
    ("uet_tss_entropy", uet_tss_entropy),
    ("uet_packet", uet_packet),
    ("tss_open", tss_open),
    ("tss_domain", tss_domain),
    ("cms", cms),
    ("pdc_window", pdc_window),
    ("pdc_pair", pdc_pair),
    ("endpoint", endpoint),
    ("ualink_dl", ualink_dl),
    ("ualink_tl", ualink_tl),
    ("ualink_link", ualink_link),
    ("ualink_dl_service", ualink_dl_service),
    ("ualink_port", ualink_port),
    ("ethx_paxi", ethx_paxi),
    ("ethx_frame", ethx_frame),
    ("ethx_decompress", ethx_decompress),
    ("ethx_qp", ethx_qp),
    ("ethx_flit", ethx_flit),
    ("ucie_flit", ucie_flit),
    ("ucie_sideband", ucie_sideband),
    ("ucie_retry", ucie_retry),
    ("ucie_adapter", ucie_adapter),
    ("cxl_flit68", cxl_flit68),
    ("cxl_pack68", cxl_pack68),
    ("cxl_llr68", cxl_llr68),
    ("cxl_pack256", cxl_pack256),
];

/// For a drain on a perfect wire with nothing moving: `step` past the earliest of `deadlines`,
/// or past `now` when none is later (or there is none).
fn just_past(now: Instant, deadlines: impl IntoIterator<Item = Option<Instant>>, step: Duration) -> Instant {
    let due = deadlines.into_iter().flatten().min();
    due.map_or(now, |d| d.max(now)).saturating_add(step)
}

/// CtlOS parser: never panics; whatever parses re-emits the same bytes with its reserved bits
/// cleared (byte for byte when the strict check finds none set), and re-parses equal.
pub fn ctlos(data: &[u8]) {
    if let Ok((msg, rest)) = CtlOs::parse(data) {
        let mut out = [0u8; CTLOS_LEN];
        assert_eq!(msg.emit(&mut out), Ok(CTLOS_LEN));
        assert_eq!(CtlOs::parse(&out).map(|(m, _)| m), Ok(msg));
        assert_eq!(CtlOs::check_reserved(&out), Ok(()));
        assert_eq!(out[..] == data[..CTLOS_LEN], CtlOs::check_reserved(data).is_ok());
        assert_eq!(rest, &data[CTLOS_LEN..]);
    }
}

/// CC_Update parsers (the frame and its payload): never panic; whatever parses re-emits byte for
/// byte (the format has no reserved bits).
pub fn cc_update(data: &[u8]) {
    if let Ok((frame, rest)) = CcUpdateFrame::parse(data) {
        let mut out = [0u8; CC_UPDATE_FRAME_LEN];
        assert_eq!(frame.emit(&mut out), Ok(CC_UPDATE_FRAME_LEN));
        assert_eq!(&out[..], &data[..CC_UPDATE_FRAME_LEN]);
        assert_eq!(rest.len(), data.len() - CC_UPDATE_FRAME_LEN);
    }
    if let Ok((msg, rest)) = CcUpdate::parse(data) {
        let mut out = [0u8; CC_UPDATE_LEN];
        assert_eq!(msg.emit(&mut out), Ok(CC_UPDATE_LEN));
        assert_eq!(&out[..], &data[..CC_UPDATE_LEN]);
        assert_eq!(rest.len(), data.len() - CC_UPDATE_LEN);
        assert_eq!(msg.entries().count(), 16);
        assert!(msg.entries().all(|(vc, _)| CcUpdate::group_of(vc) == msg.group()));
    }
}

#[derive(Arbitrary, Debug)]
enum BufOp {
    Push(u8),
    Send,
    Ack(u8),
    Rewind(u8),
    RewindAll,
    Clear,
}

/// The replay buffer against a plain model, on a small 5-bit space with a 0 reserved.
pub fn replay_buffer(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut buf: ReplayBuffer<linklayer::NonZeroBits<5>, [u8; 200], 12> =
        ReplayBuffer::new([0; 200], Seq::new(29).unwrap());
    let mut model: VecDeque<(u32, Vec<u8>)> = VecDeque::new();
    let mut tag = 0u8;
    // `arbitrary` yields defaults once the input is used up: stop there.
    while !u.is_empty() {
        let Ok(op) = BufOp::arbitrary(&mut u) else { break };
        match op {
            BufOp::Push(len) => {
                tag = tag.wrapping_add(1);
                let frame = vec![tag; usize::from(len)];
                if let Ok(seq) = buf.push(Instant::ZERO, &frame) {
                    model.push_back((seq.value(), frame));
                }
            }
            BufOp::Send => {
                if let Some(o) = buf.poll_next() {
                    let (_, frame) = model.iter().find(|(s, _)| *s == o.seq.value()).expect("sent frame is stored");
                    assert_eq!(&frame[..], o.frame);
                }
            }
            BufOp::Ack(k) => {
                if let Ok(n) = buf.ack(buf.base().wrapping_add(u64::from(k)).prev()) {
                    model.drain(..n);
                }
            }
            BufOp::Rewind(k) => {
                let _ = buf.rewind(buf.base().wrapping_add(u64::from(k)));
            }
            BufOp::RewindAll => buf.rewind_all(),
            BufOp::Clear => {
                buf.clear();
                model.clear();
            }
        }
        assert_eq!(buf.len(), model.len());
        assert!(buf.in_flight() <= buf.len() && buf.pending() <= buf.len());
        assert!(buf.bytes() <= buf.capacity_bytes());
        for (i, (seq, frame)) in model.iter().enumerate() {
            assert_eq!(*seq, buf.base().wrapping_add(i as u64).value());
            assert_eq!(buf.get(Seq::new(*seq).unwrap()), Some(&frame[..]));
        }
    }
}

#[derive(Arbitrary, Debug)]
enum LlrOp {
    /// Offer a frame of `len + 1` bytes.
    Send(u8),
    /// Put the transmitter's next frame on the wire, corrupted or not, or lose it.
    Transmit {
        corrupt: bool,
        lose: bool,
    },
    /// Deliver the oldest frame on the wire.
    DeliverFrame,
    /// Move control ordered sets from each side's poll to the other, losing some.
    Control {
        lose_rx: bool,
        lose_tx: bool,
    },
    /// Let time pass and run the timers.
    Advance(u16),
    /// Report the PCS status.
    Pcs(bool),
    /// Management actions.
    Enable,
    Disable,
    Reinit,
    RxEnabled(bool),
    /// A hostile or broken peer: raw control values.
    RawAck(u32),
    RawNack(u32),
    RawInit(u32),
    RawEcho(u32),
    RawFrame(u16, FrameCheck),
}

/// An LLR transmitter and receiver over a lossy, corrupting wire, driven by arbitrary calls.
/// Invariants: no panic; while the peer is honest (no raw injections) and no FLUSH dropped data,
/// delivered frames are exactly the offered ones, in order; and once the input is used up, on a
/// perfect wire with the PCS up, an enabled transmitter gets every frame it stored acknowledged
/// (re-initialised after a FLUSH, as management would) — after a forged value or a stale frame
/// that misled the receiver only with a replay limit — and while honest and without a FLUSH
/// every frame it took is delivered.
pub fn llr(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok((config, first)) = <(LlrConfigInput, u16)>::arbitrary(&mut u) else { return };
    let mut tx: LlrTx<Bits<6>, [u8; 512], 16> = LlrTx::EMPTY;
    let mut rx: LlrRx<Bits<6>> = LlrRx::EMPTY;
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive the
    // unconfigured engines with the whole input, as firmware might before `init`: they refuse
    // or ignore it without a panic, and `init` leaves nothing of it behind.
    let rest = u.take_rest();
    if data.len() % 4 == 3 {
        llr_run(Unstructured::new(rest), &mut tx, &mut rx);
    }
    tx.init(config.into_config(), Seq::from_index(u64::from(first))).unwrap();
    rx.init(LlrRxConfig { enabled: true, ack_spacing: 800, link_rate: LinkRate::GBPS_100 });
    llr_run(Unstructured::new(rest), &mut tx, &mut rx);
}

/// The wire and the bookkeeping of [`llr_run`].
struct LlrHarness {
    now: Instant,
    wire: VecDeque<(Seq<Bits<6>>, Vec<u8>, FrameCheck)>,
    /// The tag of the next frame offered, and of the next one the receiver must deliver.
    next_tag: u16,
    expected_tag: u16,
    /// No raw injection, no frame from before an LLR_INIT left behind it on the wire, no disable.
    honest: bool,
    /// A raw control value or frame was injected.
    forged: bool,
    /// The receiver delivered a stale frame (sent before the one it expected, its number come
    /// round again in the 6-bit space while it waited on the wire): it is out of step with the
    /// transmitter, which LLR cannot see (a real wire holds far fewer frames than the numbers).
    misled: bool,
}

impl LlrHarness {
    /// Delivers the oldest frame on the wire, if any (`false`: the wire is empty).
    fn deliver(&mut self, tx: &LlrTx<Bits<6>, [u8; 512], 16>, rx: &mut LlrRx<Bits<6>>) -> bool {
        let Some((seq, frame, check)) = self.wire.pop_front() else { return false };
        // (A disabled receiver passes every good frame, stale ones too: only one that checks
        // numbers can be misled.)
        let checked = rx.state() != RxState::Off;
        if rx.handle_frame(self.now, seq.value(), check) == RxVerdict::Deliver && check == FrameCheck::Good {
            let tag = u16::from_be_bytes([frame[0], frame[1]]);
            if self.honest && tx.stats().flushes == 0 && tx.state() != TxState::Off {
                assert_eq!(tag, self.expected_tag, "LLR delivered out of order or twice");
            }
            self.misled |= checked && (tag.wrapping_sub(self.expected_tag) as i16) < 0;
            self.expected_tag = tag.wrapping_add(1);
        }
        true
    }

    /// Moves one control ordered set each way, if there is one, losing those the flags say;
    /// returns whether either side had one.
    fn control(
        &mut self,
        tx: &mut LlrTx<Bits<6>, [u8; 512], 16>,
        rx: &mut LlrRx<Bits<6>>,
        lose_rx: bool,
        lose_tx: bool,
    ) -> bool {
        let now = self.now;
        let from_rx = rx.poll_control(now);
        if let Some(c) = from_rx.filter(|_| !lose_rx) {
            // Through the project encoding, as on a real link.
            let mut b = [0u8; CTLOS_LEN];
            c.emit(&mut b).unwrap();
            let _ = match CtlOs::parse(&b).unwrap().0 {
                CtlOs::LlrAck { seq } => tx.handle_ack(now, seq).map(|_| ()),
                CtlOs::LlrNack { seq } => tx.handle_nack(now, seq),
                CtlOs::LlrInitEcho { seq } => tx.handle_init_echo(now, seq),
                other => panic!("receiver produced {other:?}"),
            };
        }
        let from_tx = tx.poll_control(now);
        if let Some(c) = from_tx.filter(|_| !lose_tx) {
            let CtlOs::LlrInit { seq } = c else { panic!("transmitter produced {c:?}") };
            // Frames from before a re-initialisation may still be on the wire.
            let _ = rx.handle_init(now, seq);
            self.expected_tag =
                tx.buffer().get(tx.buffer().base()).map_or(self.next_tag, |f| u16::from_be_bytes([f[0], f[1]]));
            self.honest &= self.wire.is_empty();
        }
        from_rx.is_some() || from_tx.is_some()
    }
}

/// [`llr`]'s calls on `tx` and `rx`.
fn llr_run(mut u: Unstructured<'_>, tx: &mut LlrTx<Bits<6>, [u8; 512], 16>, rx: &mut LlrRx<Bits<6>>) {
    let mut h = LlrHarness {
        now: Instant::ZERO,
        wire: VecDeque::new(),
        next_tag: 0,
        expected_tag: 0,
        honest: true,
        forged: false,
        misled: false,
    };
    // `arbitrary` yields defaults once the input is used up: stop there.
    while !u.is_empty() {
        let Ok(op) = LlrOp::arbitrary(&mut u) else { break };
        let now = h.now;
        match op {
            LlrOp::Send(len) => {
                let mut frame = vec![0u8; usize::from(len) + 2];
                frame[..2].copy_from_slice(&h.next_tag.to_be_bytes());
                if let Ok(Admit::Queued(_)) = tx.send(now, &frame) {
                    h.next_tag = h.next_tag.wrapping_add(1);
                }
            }
            LlrOp::Transmit { corrupt, lose } => {
                if let Some(o) = tx.poll_transmit(now) {
                    if !lose {
                        let check = if corrupt { FrameCheck::Bad } else { FrameCheck::Good };
                        h.wire.push_back((o.seq, o.frame.to_vec(), check));
                    }
                }
            }
            LlrOp::DeliverFrame => {
                h.deliver(tx, rx);
            }
            LlrOp::Control { lose_rx, lose_tx } => {
                h.control(tx, rx, lose_rx, lose_tx);
            }
            LlrOp::Advance(ns) => {
                h.now = now.saturating_add(Duration::from_nanos(u64::from(ns)));
                tx.handle_timeout(h.now);
            }
            LlrOp::Pcs(up) => tx.set_pcs_status(now, up),
            LlrOp::Enable => {
                let _ = tx.enable(now);
            }
            LlrOp::Disable => {
                tx.disable();
                h.honest = false;
            }
            LlrOp::Reinit => {
                let _ = tx.reinit(now);
            }
            LlrOp::RxEnabled(on) => {
                rx.set_enabled(on);
                h.honest &= on;
            }
            LlrOp::RawAck(s) => {
                (h.honest, h.forged) = (false, true);
                let _ = tx.handle_ack(now, s);
            }
            LlrOp::RawNack(s) => {
                (h.honest, h.forged) = (false, true);
                let _ = tx.handle_nack(now, s);
            }
            LlrOp::RawInit(s) => {
                (h.honest, h.forged) = (false, true);
                let _ = rx.handle_init(now, s);
            }
            LlrOp::RawEcho(s) => {
                (h.honest, h.forged) = (false, true);
                let _ = tx.handle_init_echo(now, s);
            }
            LlrOp::RawFrame(s, check) => {
                (h.honest, h.forged) = (false, true);
                let _ = rx.handle_frame(now, u32::from(s), check);
            }
        }
        let b = tx.buffer();
        assert!(b.in_flight() <= b.len() && b.len() <= 16 && b.bytes() <= 512);
        assert!(b.len() <= tx.config().outstanding_frames_max as usize);
        while tx.poll_event().is_some() {}
        if let Some(t) = tx.poll_timeout() {
            // A deadline in the past is due now; one in the future is reachable.
            assert!(t <= Instant::MAX);
        }
    }
    // Once the input is used up, a perfect wire with the PCS up and the receiver enabled (the
    // transmitter restarted when it was disabled): everything sent arrives in order, control
    // goes both ways, a FLUSH is followed by management's re-initialisation, and time moves to
    // the next deadline when nothing moves. An enabled transmitter ends in ADVANCE with every
    // stored frame acknowledged, and while honest and without a FLUSH every frame it took was
    // delivered. After a forged value (an ACK of frames never delivered, say) or a stale frame
    // that misled the receiver, the two ends can disagree for good, and only the replay limit's
    // FLUSH (with the re-initialisation) brings them together: without a limit that is not
    // checked.
    let limited = tx.config().replay_count_max != REPLAY_COUNT_UNLIMITED;
    if tx.state() == TxState::Off || ((h.forged || h.misled) && !limited) {
        return;
    }
    // What is still on the wire is lost (stale frames there could mislead the receiver).
    h.wire.clear();
    tx.set_pcs_status(h.now, true);
    if rx.state() == RxState::Off {
        // A receiver disabled on the way waits for an LLR_INIT: management, enabling it again,
        // restarts the transmitter's handshake (the frames it held are dropped).
        rx.set_enabled(true);
        if matches!(tx.state(), TxState::Advance | TxState::Replay) {
            tx.restart(h.now).unwrap();
        }
    }
    let mut steps = 0u32;
    while !(tx.state() == TxState::Advance && tx.buffer().is_empty()) {
        steps += 1;
        assert!(steps <= 20_000, "LLR never settled on a perfect wire: {:?}", tx.state());
        if tx.state() == TxState::Flush {
            tx.reinit(h.now).unwrap();
        }
        let mut moved = false;
        while let Some(o) = tx.poll_transmit(h.now) {
            h.wire.push_back((o.seq, o.frame.to_vec(), FrameCheck::Good));
        }
        while h.deliver(tx, rx) {
            moved = true;
        }
        moved |= h.control(tx, rx, false, false);
        while tx.poll_event().is_some() {}
        if !moved {
            h.now = just_past(h.now, [tx.poll_timeout(), rx.poll_timeout()], Duration::from_nanos(1));
            tx.handle_timeout(h.now);
        }
    }
    if h.honest && tx.stats().flushes == 0 {
        assert_eq!(h.expected_tag, h.next_tag, "a frame LLR took was never delivered");
    }
}

/// Fuzzer-chosen LLR transmitter configuration, kept within the valid ranges.
#[derive(Arbitrary, Debug)]
struct LlrConfigInput {
    frames_max: u8,
    bytes_max: u16,
    replay_timeout: u16,
    replay_count_max: u8,
    pcs_lost: Option<u16>,
    data_age: Option<u16>,
    init_action: FrameAction,
    flush_action: FrameAction,
    reinit_on_flush: bool,
    link_down_action: FrameAction,
}

impl LlrConfigInput {
    fn into_config(self) -> LlrTxConfig {
        LlrTxConfig {
            // Within the 16 slots and 512 bytes of replay storage the target gives it.
            outstanding_frames_max: u32::from(self.frames_max % 16 + 1),
            outstanding_bytes_max: u32::from(self.bytes_max % 512 + 1),
            replay_timeout: Duration::from_nanos(u64::from(self.replay_timeout.max(1))),
            // Small limits (at least one replay), and now and then no limit at all.
            replay_count_max: if self.replay_count_max >= 248 {
                REPLAY_COUNT_UNLIMITED
            } else {
                self.replay_count_max % 8 + 1
            },
            pcs_lost_timeout: self.pcs_lost.map(|n| Duration::from_nanos(u64::from(n))),
            data_age_timeout: self.data_age.map(|n| Duration::from_nanos(u64::from(n))),
            init_action: self.init_action,
            flush_action: self.flush_action,
            reinit_on_flush: self.reinit_on_flush,
            link_down_action: self.link_down_action,
            init_interval: Duration::from_nanos(100),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum CbfcOp {
    Send { vc: u8, len: u16 },
    Data { lose: bool },
    Drain { vc: u8 },
    Cf { lose: bool },
    Advance(u32),
    Mode { vc: u8, limit: Option<u16> },
    RawCf { vc: u8, freed: u32 },
    RawCc(Vec<u8>),
    RawFree { vc: u8, credits: u16 },
    Resync { vc: u8 },
}

enum CbfcItem {
    Frame(Vc, usize),
    Cc([u8; CC_UPDATE_LEN]),
    /// A VC's new epoch, as an LLR_INIT marks it on a link (never lost: LLR_INIT repeats).
    Epoch(Vc),
}

/// A CBFC sender and receiver over a lossy link, driven by arbitrary calls, with VCs
/// re-initialised at any moment as the link object does it (sender held, an epoch marker in order
/// with the data, receiver re-initialised when it arrives, CF_Updates from before it never
/// delivered). Invariants: no panic; while nothing hostile was injected, a frame the sender
/// admitted always fits the receiver's buffer, every update is accepted, neither side ever holds
/// more than its limit, and once the input is used up, on a lossless link whose receiver frees
/// every frame, every credit in use comes back to the sender (lost frames and lost CF_Updates
/// recovered by the CC_Updates).
pub fn cbfc(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(rule) = CreditRule::arbitrary(&mut u) else { return };
    let (mut tx, mut rx) = (CbfcSender::EMPTY, CbfcReceiver::EMPTY);
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive the
    // unconfigured pair with the whole input: no panic, the same invariants, and `init` leaves
    // nothing behind.
    let rest = u.take_rest();
    if data.len() % 4 == 3 {
        cbfc_run(Unstructured::new(rest), &mut tx, &mut rx, false);
    }
    tx.init(CbfcSenderConfig { rule, ..Default::default() }).unwrap();
    rx.init(CbfcReceiverConfig { rule, ..Default::default() }).unwrap();
    cbfc_run(Unstructured::new(rest), &mut tx, &mut rx, true);
}

/// [`cbfc`]'s calls on `tx` and `rx`, [`CbfcSender::init`]ed or not (`configured`).
fn cbfc_run(mut u: Unstructured<'_>, tx: &mut CbfcSender, rx: &mut CbfcReceiver, configured: bool) {
    let mut now = Instant::ZERO;
    let mut link: VecDeque<CbfcItem> = VecDeque::new();
    let mut buffers: Vec<VecDeque<usize>> = vec![VecDeque::new(); 32];
    // Epoch markers of each VC still on the link: its CF_Updates are from the old epoch.
    let mut markers = [0u32; 32];
    let mut honest = true;
    // `arbitrary` yields defaults once the input is used up: stop there.
    while !u.is_empty() {
        let Ok(op) = CbfcOp::arbitrary(&mut u) else { break };
        match op {
            CbfcOp::Mode { vc, limit } => {
                let Ok(vc) = Vc::new(vc % 32) else { continue };
                let limit = u32::from(limit.unwrap_or(u16::MAX));
                let mode = VcMode::Lossless { credit_limit: Some(limit) };
                // A mode change at both ends at once is exact only while none of the VC's frames
                // is in flight or buffered: unlike a resync, it does not hold the sender.
                honest &= tx.in_use(vc) == 0 && rx.occupancy(vc) == 0 && link.is_empty();
                // Refused by both ends until `init`, and a limit of 0 (it admits nothing) always;
                // taken by both otherwise.
                assert_eq!(tx.set_vc_mode(now, vc, mode).is_ok(), configured && limit != 0);
                assert_eq!(rx.set_vc_mode(now, vc, mode).is_ok(), configured && limit != 0);
            }
            CbfcOp::Send { vc, len } => {
                let Ok(vc) = Vc::new(vc % 32) else { continue };
                let may = tx.may_send(vc, usize::from(len)).unwrap();
                match tx.on_sent(vc, usize::from(len)) {
                    Ok(_) => {
                        assert!(may);
                        link.push_back(CbfcItem::Frame(vc, usize::from(len)));
                    }
                    Err(_) => assert!(!may),
                }
            }
            CbfcOp::Data { lose } => {
                if let Some(item) = link.pop_front() {
                    cbfc_arrive(item, lose, rx, now, &mut buffers, &mut markers, honest);
                }
            }
            CbfcOp::Resync { vc } => {
                let Ok(vc) = Vc::new(vc % 32) else { continue };
                tx.resync_vc(vc);
                markers[usize::from(vc.index())] += 1;
                link.push_back(CbfcItem::Epoch(vc));
            }
            CbfcOp::Drain { vc } => {
                let Ok(vc) = Vc::new(vc % 32) else { continue };
                if let Some(len) = buffers[usize::from(vc.index())].pop_front() {
                    let r = rx.on_frame_freed(vc, len);
                    assert!(r.is_ok() || !honest);
                }
            }
            CbfcOp::Cf { lose } => {
                cbfc_cf(tx, rx, now, lose, &markers, honest);
            }
            CbfcOp::Advance(ns) => {
                now = now.saturating_add(Duration::from_nanos(u64::from(ns)));
                while let Some(msg) = tx.poll_cc_update(now) {
                    let mut b = [0u8; CC_UPDATE_LEN];
                    msg.emit(&mut b).unwrap();
                    link.push_back(CbfcItem::Cc(b));
                }
            }
            CbfcOp::RawCf { vc, freed } => {
                honest = false;
                if let (Ok(vc), Some(f)) = (Vc::new(vc % 32), linklayer::cbfc::CreditCounter::new(freed)) {
                    let _ = tx.handle_cf_update(vc, f);
                }
            }
            CbfcOp::RawCc(bytes) => {
                honest = false;
                if let Ok((msg, _)) = CcUpdate::parse(&bytes) {
                    let _ = rx.handle_cc_update(&msg);
                }
            }
            CbfcOp::RawFree { vc, credits } => {
                honest = false;
                if let Ok(vc) = Vc::new(vc % 32) {
                    let _ = rx.on_freed(vc, u32::from(credits));
                }
            }
        }
        for vc in Vc::all() {
            if let VcMode::Lossless { credit_limit: Some(limit) } = tx.vc_mode(vc) {
                assert!(tx.in_use(vc) <= limit);
                assert!(rx.occupancy(vc) <= limit || !honest);
            }
        }
        let _ = (tx.poll_timeout(), rx.poll_timeout());
    }
    // Once the input is used up, a lossless link: everything on it arrives, the receiver frees
    // every frame it holds and its CF_Updates all arrive, and time moves to the next CC_Update
    // when nothing moves. While honest, every credit in use then comes back.
    let mut steps = 0u32;
    while configured && honest && Vc::all().any(|vc| tx.in_use(vc) > 0) {
        steps += 1;
        let stuck: Vec<_> = Vc::all().filter(|&vc| tx.in_use(vc) > 0).map(|vc| (vc.index(), tx.in_use(vc))).collect();
        assert!(steps <= 10_000, "credits in use never came back on a lossless link: {stuck:?}");
        let mut moved = false;
        while let Some(item) = link.pop_front() {
            moved = true;
            cbfc_arrive(item, false, rx, now, &mut buffers, &mut markers, honest);
        }
        for vc in Vc::all() {
            while let Some(len) = buffers[usize::from(vc.index())].pop_front() {
                moved = true;
                assert!(rx.on_frame_freed(vc, len).is_ok());
            }
        }
        while cbfc_cf(tx, rx, now, false, &markers, honest) {
            moved = true;
        }
        if !moved {
            now = just_past(now, [tx.poll_timeout(), rx.poll_timeout()], Duration::from_nanos(1));
        }
        while let Some(msg) = tx.poll_cc_update(now) {
            let mut b = [0u8; CC_UPDATE_LEN];
            msg.emit(&mut b).unwrap();
            link.push_back(CbfcItem::Cc(b));
        }
    }
}

/// `item` arrives at `rx` (or is lost, but for an epoch marker): a frame it takes waits in its
/// VC's `buffers`; an epoch marker re-initialises the VC. While `honest`, nothing is refused.
fn cbfc_arrive(
    item: CbfcItem,
    lose: bool,
    rx: &mut CbfcReceiver,
    now: Instant,
    buffers: &mut [VecDeque<usize>],
    markers: &mut [u32; 32],
    honest: bool,
) {
    match item {
        CbfcItem::Frame(vc, len) if !lose => match rx.on_received(vc, len) {
            // Best-effort frames (0 credits) are not flow-controlled: nothing to drain.
            Ok(0) => {}
            Ok(_) => buffers[usize::from(vc.index())].push_back(len),
            Err(e) => assert!(!honest, "admitted frame overran the receiver: {e}"),
        },
        CbfcItem::Cc(b) if !lose => {
            let r = rx.handle_cc_update(&CcUpdate::parse(&b).unwrap().0);
            assert!(r.is_ok() || !honest, "in-order CC_Update rejected: {r:?}");
        }
        CbfcItem::Epoch(vc) => {
            rx.resync_vc(now, vc);
            markers[usize::from(vc.index())] -= 1;
        }
        _ => {}
    }
}

/// Moves `rx`'s next CF_Update to `tx` unless `lose` (or an epoch marker of its VC is still on
/// the link: it is from the old epoch); returns whether `rx` had one.
fn cbfc_cf(
    tx: &mut CbfcSender,
    rx: &mut CbfcReceiver,
    now: Instant,
    lose: bool,
    markers: &[u32; 32],
    honest: bool,
) -> bool {
    let Some(update) = rx.poll_cf_update(now) else { return false };
    if !lose && markers[usize::from(update.vc.index())] == 0 {
        let r = tx.handle_cf_update(update.vc, update.freed);
        assert!(r.is_ok() || !honest, "honest CF_Update rejected: {r:?}");
    }
    true
}

#[derive(Arbitrary, Debug)]
enum LinkOp {
    Send { end: bool, vc: u8, len: u16 },
    Transmit { end: bool, lose: bool, corrupt: bool },
    Control { end: bool, lose: bool, flip: u8 },
    Arrive { to: bool },
    Drain { end: bool, vc: u8 },
    Advance(u16),
    Restart { end: bool, first: u32 },
    Pcs { end: bool, up: bool },
    RawControl { end: bool, msg: CtlOs },
}

enum LinkItem {
    Frame { seq: Option<u32>, check: FrameCheck, bytes: Vec<u8> },
    Ctl([u8; CTLOS_LEN]),
}

const LINK_VCS: u8 = 4;

/// Replay storage a [`link_config`] end needs: its `replay_bytes` (39 932), rounded up.
const LINK_STORAGE: usize = 40 * 1024;

fn link_config() -> LinkConfig {
    let sizing = LlrSizing::software(Duration::from_micros(1), LinkRate::GBPS_100).with_frame_slots(32);
    LinkConfig::software(&sizing, LinkRate::GBPS_100, [2, 0, 0, 0, 0, 1])
}

/// Configures `l` afresh in place with [`link_config`] and starts it ([`link_start`]).
fn link_restart<B: AsRef<[u8]> + AsMut<[u8]>>(l: &mut Link<B, 32>, now: Instant, first: u32) {
    l.init(link_config(), first % (1 << 20)).unwrap();
    link_start(l, now);
}

/// Makes `l`'s VCs lossless and enables it.
fn link_start<B: AsRef<[u8]> + AsMut<[u8]>>(l: &mut Link<B, 32>, now: Instant) {
    for vc in 0..LINK_VCS {
        l.set_vc_mode(now, Vc::new(vc).unwrap(), VcMode::Lossless { credit_limit: Some(32) }).unwrap();
    }
    l.enable(now).unwrap();
}

/// Two ends of a link object ([`linklayer::link::Link`]) over a lossy, corrupting FIFO wire,
/// driven by arbitrary calls, with either end configured afresh in place at any moment.
/// Invariants: no panic; while no hostile CtlOS injected, no frame is delivered twice or out of
/// order (ids per direction and VC only grow, across restarts), no receive buffer is overrun,
/// and once the input is used up, on a perfect wire, every frame taken is acknowledged and every
/// credit comes back (the link is never stuck). A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive two
/// unconfigured ends (`Link::EMPTY`) with the whole input, each configured only when the input
/// restarts it: no panic, and the same invariants.
pub fn link(data: &[u8]) {
    if data.len() % 4 == 3 {
        let mut ends: Box<[Link<[u8; LINK_STORAGE], 32>; 2]> = Box::new([Link::EMPTY, Link::EMPTY]);
        link_run(data, &mut ends);
    }
    let mut ends = [1, 700_000].map(|first| {
        let mut l = Link::<Vec<u8>, 32>::new(link_config(), vec![0; LINK_STORAGE], first).unwrap();
        link_start(&mut l, Instant::ZERO);
        l
    });
    link_run(data, &mut ends);
}

/// [`link`]'s calls on two ends.
fn link_run<B: AsRef<[u8]> + AsMut<[u8]>>(data: &[u8], ends: &mut [Link<B, 32>; 2]) {
    let mut u = Unstructured::new(data);
    let mut now = Instant::ZERO;
    let mut wires: [VecDeque<LinkItem>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut buffers: [Vec<VecDeque<usize>>; 2] = [vec![VecDeque::new(); 4], vec![VecDeque::new(); 4]];
    let mut next_id = [[0u32; 4]; 2];
    let mut last = [[None::<u32>; 4]; 2];
    let mut honest = true;
    while !u.is_empty() {
        let Ok(op) = LinkOp::arbitrary(&mut u) else { break };
        match op {
            LinkOp::Send { end, vc, len } => {
                let i = usize::from(end);
                let slot = vc % LINK_VCS;
                let mut bytes = vec![0u8; 5 + usize::from(len % 2048)];
                bytes[0] = slot;
                bytes[1..5].copy_from_slice(&next_id[i][usize::from(slot)].to_be_bytes());
                match ends[i].send(now, Vc::new(slot).unwrap(), &bytes) {
                    Ok(Admit::Queued(_) | Admit::Discarded) => next_id[i][usize::from(slot)] += 1,
                    Ok(Admit::SendPlain) => {
                        next_id[i][usize::from(slot)] += 1;
                        wires[i].push_back(LinkItem::Frame { seq: None, check: FrameCheck::Good, bytes });
                    }
                    Err(_) => {}
                }
            }
            LinkOp::Transmit { end, lose, corrupt } => {
                let i = usize::from(end);
                if let Some(out) = ends[i].poll_transmit(now) {
                    let item = LinkItem::Frame {
                        seq: Some(out.seq.value()),
                        check: if corrupt { FrameCheck::Bad } else { FrameCheck::Good },
                        bytes: out.frame.to_vec(),
                    };
                    if !lose {
                        wires[i].push_back(item);
                    }
                }
            }
            LinkOp::Control { end, lose, flip } => {
                let i = usize::from(end);
                if let Some(c) = ends[i].poll_control(now) {
                    let mut b = [0u8; CTLOS_LEN];
                    c.emit(&mut b).unwrap();
                    b[usize::from(flip % 8)] ^= flip & 0xF0;
                    if !lose {
                        wires[i].push_back(LinkItem::Ctl(b));
                    }
                }
            }
            LinkOp::Arrive { to } => {
                let i = usize::from(to);
                if let Some(item) = wires[1 - i].pop_front() {
                    link_arrive(ends, i, item, now, &mut buffers[i], &mut last[1 - i], honest);
                }
            }
            LinkOp::Drain { end, vc } => {
                let i = usize::from(end);
                let slot = vc % LINK_VCS;
                if let Some(len) = buffers[i][usize::from(slot)].pop_front() {
                    let r = ends[i].on_drained(Vc::new(slot).unwrap(), len);
                    assert!(r.is_ok() || !honest, "{r:?}");
                }
            }
            LinkOp::Advance(ns) => {
                now = now.saturating_add(Duration::from_nanos(u64::from(ns)));
                for e in ends.iter_mut() {
                    e.handle_timeout(now);
                }
            }
            LinkOp::Restart { end, first } => {
                let i = usize::from(end);
                link_restart(&mut ends[i], now, first);
                buffers[i] = vec![VecDeque::new(); 4];
            }
            LinkOp::Pcs { end, up } => ends[usize::from(end)].set_pcs_status(now, up),
            LinkOp::RawControl { end, msg } => {
                honest = false;
                let _ = ends[usize::from(end)].handle_control(now, msg);
            }
        }
        for e in ends.iter_mut() {
            while let Some(ev) = e.poll_event() {
                assert!(!matches!(ev, LinkEvent::Overrun { .. }) || !honest, "an honest sender overran: {ev:?}");
            }
            let _ = e.poll_timeout();
        }
    }
    // Once the input is used up, a perfect wire with the PCS up at both ends: everything sent
    // arrives in order, every delivered frame leaves its buffer, and time moves to the next
    // deadline when nothing moves. While honest, every frame either end took is then sent and
    // acknowledged (its replay buffer empty) and every credit is back (none in use).
    for e in ends.iter_mut() {
        e.set_pcs_status(now, true);
    }
    let settled = |ends: &[Link<B, 32>; 2]| {
        ends.iter().all(|e| {
            e.llr_tx().buffer().is_empty() && (0..LINK_VCS).all(|vc| e.cbfc_sender().in_use(Vc::new(vc).unwrap()) == 0)
        })
    };
    let mut steps = 0u32;
    while honest && !settled(ends) {
        steps += 1;
        assert!(steps <= 20_000, "the link never settled on a perfect wire");
        let mut moved = false;
        for i in 0..2 {
            while let Some(out) = ends[i].poll_transmit(now) {
                let bytes = out.frame.to_vec();
                wires[i].push_back(LinkItem::Frame { seq: Some(out.seq.value()), check: FrameCheck::Good, bytes });
            }
            while let Some(c) = ends[i].poll_control(now) {
                let mut b = [0u8; CTLOS_LEN];
                c.emit(&mut b).unwrap();
                wires[i].push_back(LinkItem::Ctl(b));
            }
        }
        for i in 0..2 {
            while let Some(item) = wires[1 - i].pop_front() {
                moved = true;
                link_arrive(ends, i, item, now, &mut buffers[i], &mut last[1 - i], honest);
            }
            for slot in 0..LINK_VCS {
                while let Some(len) = buffers[i][usize::from(slot)].pop_front() {
                    moved = true;
                    assert!(ends[i].on_drained(Vc::new(slot).unwrap(), len).is_ok());
                }
            }
            while let Some(ev) = ends[i].poll_event() {
                assert!(!matches!(ev, LinkEvent::Overrun { .. }), "an honest sender overran: {ev:?}");
            }
        }
        if !moved {
            now = just_past(now, ends.iter().map(|e| e.poll_timeout()), Duration::from_nanos(1));
            for e in ends.iter_mut() {
                e.handle_timeout(now);
            }
        }
    }
}

/// Delivers `item` from the other end to end `i`: frames it delivers go into its `buffers`, and
/// (while `honest`) each VC's ids must grow (`last`, the other end's per VC).
fn link_arrive<B: AsRef<[u8]> + AsMut<[u8]>>(
    ends: &mut [Link<B, 32>; 2],
    i: usize,
    item: LinkItem,
    now: Instant,
    buffers: &mut [VecDeque<usize>],
    last: &mut [Option<u32>; 4],
    honest: bool,
) {
    match item {
        LinkItem::Ctl(b) => {
            if let Ok((msg, _)) = CtlOs::parse(&b) {
                let _ = ends[i].handle_control(now, msg);
            }
        }
        LinkItem::Frame { seq, check, bytes } => {
            let slot = bytes.first().copied().unwrap_or(0) % LINK_VCS;
            let vc = Vc::new(slot).unwrap();
            let r = ends[i].handle_frame(now, seq, check, vc, &bytes);
            if r == Received::Deliver {
                assert_eq!(check, FrameCheck::Good);
                let id = u32::from_be_bytes(bytes[1..5].try_into().unwrap());
                let l = &mut last[usize::from(slot)];
                // A hostile LLR_INIT can make a receiver take old frames as new.
                assert!(!honest || l.is_none_or(|l| id > l), "frame {id} delivered after {l:?}");
                *l = Some(id);
                buffers[usize::from(slot)].push_back(bytes.len());
            }
        }
    }
}

/// PDS headers: never panic; whatever parses re-emits with its reserved bits cleared (byte for
/// byte when the strict check finds none set), and re-parses equal.
pub fn uet_pds(data: &[u8]) {
    use uet_wire::pds::PdsHeader;
    if let Ok((h, rest)) = PdsHeader::parse(data) {
        let mut out = [0u8; 64];
        let n = h.emit(&mut out).expect("a parsed header emits");
        assert_eq!(n, h.buffer_len());
        if PdsHeader::check_reserved(data).is_ok() {
            assert_eq!(&out[..n], &data[..data.len() - rest.len()]);
        }
        assert_eq!(PdsHeader::check_reserved(&out[..n]), Ok(()));
        assert_eq!(PdsHeader::parse(&out[..n]).unwrap().0, h);
    }
    // The request view accepts exactly the requests the Repr parse accepts, and reads the same.
    let view = uet_wire::pds::RequestView::parse(data);
    match (view, uet_wire::pds::Request::parse(data)) {
        (Ok((v, rest)), Ok((r, rest2))) => {
            assert_eq!((v.to_repr(), rest.len()), (r, rest2.len()));
            assert_eq!(
                (v.psn(), v.spdcid(), v.dest(), v.flags(), v.len()),
                (r.psn, r.spdcid, r.dest, r.flags, r.buffer_len())
            );
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (a, b) => panic!("view {a:?} and Repr {b:?} disagree"),
    }
    // The fused request + standard SES fast path gives what the two views give one at a time.
    let each = uet_wire::pds::RequestView::parse(data).and_then(|(pds, rest)| {
        if pds.next_header() != uet_wire::pds::NextHeader::ReqStd {
            return Err(uet_wire::Error::Mismatch { field: "PDS next header (not a standard SES request)" });
        }
        let (ses, rest) = uet_wire::ses::StandardView::parse(rest)?;
        Ok((pds, ses, rest))
    });
    assert_eq!(format!("{:?}", uet_wire::parse_request_std(data)), format!("{each:?}"));
}

/// SES headers after any next-header value: never panic; parsed bytes re-emit with their reserved
/// bits cleared (identically when the strict check finds none set) and re-parse equal. Any
/// standard request (built from the bytes): `check` fails exactly as `emit` does.
pub fn uet_ses(data: &[u8]) {
    use uet_wire::pds::NextHeader;
    use uet_wire::ses::SesHeader;
    if let Ok(r) = uet_wire::ses::StandardRequest::arbitrary(&mut Unstructured::new(data)) {
        let mut out = [0u8; 128];
        assert_eq!(r.check().err(), r.emit(&mut out).err(), "check and emit disagree on {r:?}");
    }
    let Some((&nh, bytes)) = data.split_first() else { return };
    let Ok(next) = NextHeader::try_from(nh & 0x0F) else { return };
    if let Ok((Some(h), rest)) = SesHeader::parse(next, bytes) {
        let mut out = [0u8; 128];
        let n = h.emit(&mut out).expect("a parsed header emits");
        if let SesHeader::Standard(r) = h {
            assert_eq!(r.check(), Ok(()), "a parsed request fails its check");
        }
        if SesHeader::check_reserved(next, bytes).is_ok() {
            assert_eq!(&out[..n], &bytes[..bytes.len() - rest.len()]);
        }
        assert_eq!(SesHeader::check_reserved(next, &out[..n]), Ok(()));
        assert_eq!(SesHeader::parse(next, &out[..n]).unwrap().0, Some(h));
        assert_eq!(h.next_header(), next);
    }
    // The standard-request view: its accessors agree with the Repr built from it.
    if let Ok((v, rest)) = uet_wire::ses::StandardView::parse(bytes) {
        let r = v.to_repr();
        assert_eq!(v.len(), bytes.len() - rest.len());
        assert_eq!(
            (v.opcode(), v.flags(), v.job_id(), v.tail(), v.ext()),
            (r.common.opcode, r.common.flags, r.common.job_id, r.tail, r.ext)
        );
    }
}

/// TSS and entropy headers: never panic; parsed bytes re-emit identically.
pub fn uet_tss_entropy(data: &[u8]) {
    use uet_wire::entropy::EntropyHeader;
    use uet_wire::tss::TssHeader;
    if let Ok((h, rest)) = TssHeader::parse(data) {
        let mut out = [0u8; 16];
        let n = h.emit(&mut out).expect("a parsed header emits");
        // The same bytes with the reserved bit cleared; exactly the same when it was clear.
        let mut want = data[..data.len() - rest.len()].to_vec();
        want[0] &= !0x02;
        assert_eq!(&out[..n], &want[..]);
        assert_eq!(TssHeader::check_reserved(data).is_ok(), data[0] & 0x02 == 0);
    }
    if let Ok((h, _)) = EntropyHeader::parse(data) {
        // The same bytes with the reserved half cleared; exactly the same when it was clear.
        let mut out = [0u8; 4];
        h.emit(&mut out).expect("a parsed header emits");
        assert_eq!(&out[..2], &data[..2]);
        assert_eq!(out[2..], [0, 0]);
        assert_eq!(EntropyHeader::check_reserved(data).is_ok(), data[2..4] == [0, 0]);
    }
}

/// The packet walker under every configuration; a clear packet that parses rebuilds through the
/// builder (with its CRC when one was present and valid for an empty prefix) into a packet that
/// walks the same, byte for byte when the strict check finds no reserved bit set.
pub fn uet_packet(data: &[u8]) {
    use uet_wire::entropy::Encapsulation;
    use uet_wire::{Body, PacketRepr, UetPacket, WalkConfig};
    let Some((&mode, bytes)) = data.split_first() else { return };
    let config = WalkConfig {
        encapsulation: if mode & 1 == 0 { Encapsulation::Udp } else { Encapsulation::NativeIp },
        crc: mode & 2 != 0,
    };
    let Ok(p) = UetPacket::parse(bytes, config) else { return };
    if let Body::Clear { pds, ses, payload, crc } = p.body {
        let repr = PacketRepr { entropy: p.entropy, pds, ses };
        let mut out = vec![0u8; bytes.len() + 8];
        let crc_ok = crc.is_some() && p.verify_crc(&[]).is_ok();
        let n = repr.emit(payload, crc_ok.then_some(&[][..]), &mut out).expect("a parsed packet rebuilds");
        let expected = if crc.is_some() && !crc_ok { &bytes[..bytes.len() - 4] } else { bytes };
        if UetPacket::check_reserved(bytes, config).is_ok() {
            assert_eq!(&out[..n], expected);
        }
        let again = UetPacket::parse(&out[..n], WalkConfig { crc: crc_ok, ..config }).expect("a rebuilt packet walks");
        let Body::Clear { pds: pds2, ses: ses2, payload: payload2, .. } = again.body else { panic!("clear") };
        assert_eq!((pds2, ses2, payload2), (pds, ses, payload));
        assert_eq!(UetPacket::check_reserved(&out[..n], config), Ok(()));
    }
}

/// PSN windows: a target window fed arrivals of sent PSNs in any order, duplicated or stale, and an
/// initiator window fed its ACKs, plus a second initiator window fed arbitrary ACKs. Never panics;
/// the initiator never counts a PSN acknowledged that the target has not received; once every sent
/// PSN arrived and is acknowledged nothing is outstanding.
pub fn pdc_window(data: &[u8]) {
    use uet_wire::pdc::{Arrival, RxWindow, Sack, TxWindow};
    let mut u = Unstructured::new(data);
    let start: u32 = u.arbitrary().unwrap_or(0);
    let mut rx = RxWindow::<2>::new(start);
    let mut tx = TxWindow::<2>::new(start);
    let mut wild = TxWindow::<2>::new(start);
    let mut arrived = std::collections::HashSet::new();
    while !u.is_empty() {
        match u.int_in_range(0u8..=3).unwrap_or(0) {
            0 => {
                let range = u.int_in_range(0u32..=300).unwrap_or(128);
                let _ = tx.send(range);
                let _ = wild.send(range);
            }
            1 => {
                // Any PSN up to the newest sent, reaching back past the windows.
                let back = u.int_in_range(0u32..=400).unwrap_or(0);
                let psn = tx.next_psn().wrapping_sub(1).wrapping_sub(back);
                let sent = !uet_wire::pdc::psn_after(start, psn);
                let arrival = rx.receive(psn);
                if arrival == Arrival::New {
                    assert!(sent, "a PSN from before the start was accepted");
                    assert!(arrived.insert(psn), "a PSN was accepted twice");
                }
            }
            2 => {
                let sack = rx.sack();
                tx.on_ack(rx.cack_psn(), Some(sack)).expect("the target only acks what was sent");
                // Every sent PSN the initiator counts acknowledged did arrive.
                let mut psn = start;
                while psn != tx.next_psn() {
                    if tx.is_acked(psn) {
                        assert!(arrived.contains(&psn), "PSN {psn} acknowledged but never received");
                    }
                    psn = psn.wrapping_add(1);
                }
            }
            _ => {
                let cack: u32 = u.arbitrary().unwrap_or(0);
                let sack = Sack { base: u.arbitrary().unwrap_or(0), bitmap: u.arbitrary().unwrap_or(0) };
                let before = wild.outstanding();
                if let Ok(n) = wild.on_ack(cack, Some(sack)) {
                    assert_eq!(before - n, wild.outstanding());
                }
                let _ = wild.unacked().count();
            }
        }
    }
    let last = tx.next_psn();
    let mut psn = tx.base();
    while psn != last {
        rx.receive(psn);
        psn = psn.wrapping_add(1);
    }
    tx.on_ack(rx.cack_psn(), Some(rx.sack())).expect("the target only acks what was sent");
    assert_eq!(tx.outstanding(), 0);
}

/// An initiator and a target PDC joined by a network the input drives: packets are delivered in
/// any order, duplicated or dropped; time jumps; closes are asked for; and arbitrary PDS headers
/// are injected at either end; the target sends read data back. Invariants: no panic; each end
/// delivers each PSN at most once, only in the PSN space it was sent in (a late SYN from before a
/// NEW_START_PSN restart is not delivered), and in ROD in order from the start PSN; the initiator counts
/// acknowledged only PSNs the target delivered (until something was injected at the initiator),
/// and the target only return PSNs the initiator delivered (until something was injected at the
/// target); every refused event leaves the PDC unchanged.
pub fn pdc_pair(data: &[u8]) {
    use uet_wire::pdc::{Delivery, Initiator, InitiatorTx, PdcConfig, StartPolicy, Target, TargetState, TargetTx};
    use uet_wire::pds::{DeliveryMode, NextHeader, PdsHeader};
    let mut u = Unstructured::new(data);
    let mode = if u.arbitrary().unwrap_or(false) { DeliveryMode::Rod } else { DeliveryMode::Rud };
    let start: u32 = u.arbitrary().unwrap_or(0);
    let policy = match u.int_in_range(0u8..=2).unwrap_or(0) {
        0 => StartPolicy::Open,
        1 => StartPolicy::Expected0Rtt { expected_psn: u.arbitrary().unwrap_or(0) },
        _ => StartPolicy::Random1Rtt { start_psn: u.arbitrary().unwrap_or(0) },
    };
    // The NACK limit picks the profile too (odd: software), and its maximum lifts both limits.
    let max_nack_retx = u.int_in_range(0u8..=31).unwrap_or(5);
    let base = if max_nack_retx % 2 == 1 { PdcConfig::software() } else { PdcConfig::default() };
    let max_rto_retx = if max_nack_retx == 31 { uet_wire::pdc::UNLIMITED_RTO_RETX } else { base.max_rto_retx };
    let cfg = PdcConfig { max_nack_retx, max_rto_retx, ..base };
    let mut now = Instant::ZERO;
    let mut ini = Initiator::<2>::new(&cfg, mode, 7, start);
    // SLEEK on half the inputs (by the start PSN, so the corpus keeps its meaning).
    if start % 2 == 0 {
        ini.use_sleek();
    }
    let mut tgt: Option<Target<2>> = None;
    // In flight: (to the target, header).
    let mut net: Vec<(bool, PdsHeader)> = Vec::new();
    let mut delivered = std::collections::HashSet::new();
    let mut next_in_order: Option<u32> = None;
    let mut tainted = false;
    // The return direction: data PSNs the target sent, and those the initiator delivered.
    let mut ret_sent = std::collections::HashSet::new();
    let mut ret = Returned::default();
    let mut tgt_tainted = false;
    while !u.is_empty() {
        // The packet that arrives at one end this step, if any.
        let mut arrival: Option<(bool, PdsHeader)> = None;
        match u.int_in_range(0u8..=9).unwrap_or(0) {
            0 => {
                let ar = u.arbitrary().unwrap_or(false);
                if ini.can_send(&cfg) {
                    let s = ini.send(now, &cfg, ar).expect("can_send said yes");
                    net.push((true, PdsHeader::Request(s.request(NextHeader::ReqStd, None))));
                } else {
                    let before = ini.clone();
                    assert!(ini.send(now, &cfg, ar).is_err());
                    assert_eq!(ini, before);
                }
            }
            1..=3 if !net.is_empty() => {
                let k = u.choose_index(net.len()).unwrap_or(0);
                match u.int_in_range(0u8..=3).unwrap_or(0) {
                    0 => {
                        net.swap_remove(k);
                    }
                    1 => net.push(net[k]),
                    _ => arrival = Some(net.swap_remove(k)),
                }
            }
            4 => {
                // An arbitrary header at either end.
                let bytes: Vec<u8> = u.arbitrary().unwrap_or_default();
                if let Ok((h, _)) = PdsHeader::parse(&bytes) {
                    let to_target = u.arbitrary().unwrap_or(true);
                    tainted |= !to_target;
                    tgt_tainted |= to_target;
                    arrival = Some((to_target, h));
                }
            }
            5 => {
                now = now.saturating_add(Duration::from_micros(u.int_in_range(0u64..=3000).unwrap_or(0)));
                ini.handle_timeout(now, &cfg);
                if let Some(t) = tgt.as_mut() {
                    t.handle_timeout(now, &cfg);
                }
            }
            6 => {
                let before = ini.clone();
                let r = match u.int_in_range(0u8..=1).unwrap_or(0) {
                    0 => ini.request_close(),
                    _ => ini.close(now, &cfg),
                };
                if r.is_err() {
                    assert_eq!(ini, before);
                }
            }
            7 => {
                if let Some(t) = tgt.as_mut() {
                    let before = t.clone();
                    let r = if u.arbitrary().unwrap_or(true) {
                        t.request_close(now, &cfg)
                    } else {
                        // A guaranteed-delivery response for the newest PSN, or for any PSN.
                        let psn = if u.arbitrary().unwrap_or(true) {
                            t.window().max_rcvd()
                        } else {
                            u.arbitrary().unwrap_or(0)
                        };
                        let rsp = uet_wire::ses::Response {
                            list: uet_wire::ses::ResponseList::Expected,
                            opcode: uet_wire::ses::ResponseOpcode::Response,
                            return_code: uet_wire::ses::ReturnCode::Ok,
                            message_id: 0,
                            ri_generation: 0,
                            job_id: 0,
                            modified_length: psn,
                        };
                        t.hold_response(psn, rsp)
                    };
                    if r.is_err() {
                        assert_eq!(*t, before);
                    }
                }
            }
            9 => {
                // Read data from the target.
                if let Some(t) = tgt.as_mut() {
                    let ar = u.arbitrary().unwrap_or(false);
                    if t.can_send() {
                        let s = t.send(now, &cfg, ar).expect("can_send said yes");
                        ret_sent.insert(s.psn);
                        net.push((false, PdsHeader::Request(s.request(NextHeader::RspData, None))));
                    } else {
                        let before = t.clone();
                        assert!(t.send(now, &cfg, ar).is_err());
                        assert_eq!(*t, before);
                    }
                }
            }
            _ => poll(now, &mut ini, &mut tgt, &mut net),
        }
        if let Some((to_target, h)) = arrival {
            let (d, n) = (&mut delivered, &mut next_in_order);
            deliver(&cfg, now, mode, policy, to_target, h, &mut ini, &mut tgt, d, n, &mut ret);
        }
        check(&ini, &tgt, tainted, tgt_tainted, &delivered, &ret_sent, &ret);
    }
    // Once the input is used up, a perfect wire: every packet sent is delivered in order until
    // none moves, then time moves to the earliest deadline, until neither end has one. Unless a
    // header was injected, every request and every read data packet is then acknowledged, or its
    // PDC failed or closed. Not where one end can no longer answer and the other's RTO retries
    // are unlimited: this harness has one PDC at each end, which answers nothing once closed or
    // failed (an endpoint answers for a PDC that is gone), and no target PDC opens once the
    // first SYN was refused.
    let unlimited = max_rto_retx == uet_wire::pdc::UNLIMITED_RTO_RETX;
    let (mut answers, mut quiet) = (true, false);
    for _ in 0..100_000 {
        if unlimited && !answers {
            break;
        }
        poll(now, &mut ini, &mut tgt, &mut net);
        if net.is_empty() {
            let due = ini.poll_timeout().into_iter().chain(tgt.as_ref().and_then(Target::poll_timeout)).min();
            let Some(due) = due else {
                quiet = true;
                break;
            };
            now = due.max(now).saturating_add(Duration::from_micros(1));
            ini.handle_timeout(now, &cfg);
            if let Some(t) = tgt.as_mut() {
                t.handle_timeout(now, &cfg);
            }
        }
        let reached = net.iter().any(|&(to_target, _)| to_target);
        for (to_target, h) in core::mem::take(&mut net) {
            let (d, n) = (&mut delivered, &mut next_in_order);
            deliver(&cfg, now, mode, policy, to_target, h, &mut ini, &mut tgt, d, n, &mut ret);
        }
        check(&ini, &tgt, tainted, tgt_tainted, &delivered, &ret_sent, &ret);
        let ini_open = ini.state() != uet_wire::pdc::InitiatorState::Closed && ini.failure().is_none();
        answers = ini_open
            && match tgt.as_ref() {
                Some(t) => t.state() != TargetState::Closed && t.failure().is_none(),
                None => answers && !reached,
            };
    }
    if !tainted && !tgt_tainted && (answers || !unlimited) {
        assert!(quiet, "the PDCs never went quiet on a perfect wire");
        let (w, closed) = (ini.window(), ini.state() == uet_wire::pdc::InitiatorState::Closed);
        assert!(
            ini.failure().is_some() || closed || w.base() == w.next_psn(),
            "requests never acknowledged on a perfect wire"
        );
        if let Some(t) = tgt.as_ref() {
            let r = t.return_window();
            assert!(
                t.failure().is_some() || t.state() == TargetState::Closed || r.base() == r.next_psn(),
                "read data never acknowledged on a perfect wire"
            );
        }
    }

    /// Takes every packet both ends have to send onto the network, and their events.
    fn poll(now: Instant, ini: &mut Initiator<2>, tgt: &mut Option<Target<2>>, net: &mut Vec<(bool, PdsHeader)>) {
        while let Some(tx) = ini.poll_transmit(now) {
            net.push(match tx {
                InitiatorTx::Resend(s) => (true, PdsHeader::Request(s.request(NextHeader::ReqStd, None))),
                InitiatorTx::Control(c) => (true, PdsHeader::Control(c)),
                InitiatorTx::Ack(a) => (true, PdsHeader::Ack(a)),
                InitiatorTx::Nack(n) => (true, PdsHeader::Nack(n)),
            });
        }
        if let Some(t) = tgt.as_mut() {
            while let Some(tx) = t.poll_transmit(now) {
                net.push(match tx {
                    TargetTx::Ack(a) => (false, PdsHeader::Ack(a)),
                    TargetTx::Control(c) => (false, PdsHeader::Control(c)),
                    TargetTx::Nack(n) => (false, PdsHeader::Nack(n)),
                    TargetTx::Resend(s) => (false, PdsHeader::Request(s.request(NextHeader::RspData, None))),
                });
            }
            while t.poll_event().is_some() {}
        }
        while ini.poll_event().is_some() {}
    }

    /// What each end counts acknowledged was delivered, and the initiator's window is in range.
    fn check(
        ini: &Initiator<2>,
        tgt: &Option<Target<2>>,
        tainted: bool,
        tgt_tainted: bool,
        delivered: &std::collections::HashSet<u32>,
        ret_sent: &std::collections::HashSet<u32>,
        ret: &Returned,
    ) {
        if !tgt_tainted {
            // Every return data PSN the target counts acknowledged was delivered.
            if let Some(t) = tgt.as_ref().filter(|t| t.failure().is_none() && t.state() != TargetState::Closed) {
                let w = t.return_window();
                let mut psn = w.base();
                while psn != w.next_psn() {
                    if w.is_acked(psn) && ret_sent.contains(&psn) {
                        assert!(ret.psns.contains(&psn), "return PSN {psn} acknowledged but never delivered");
                    }
                    psn = psn.wrapping_add(1);
                }
            }
        }
        if !tainted {
            // Every PSN the initiator counts acknowledged was delivered (the base moves only over
            // delivered PSNs or, after a close in error, abandoned ones).
            if ini.failure().is_none() {
                let w = ini.window();
                let mut psn = w.base();
                while psn != w.next_psn() {
                    if w.is_acked(psn) {
                        assert!(
                            delivered.contains(&psn) || tgt.as_ref().is_some_and(|t| t.state() == TargetState::Closed),
                            "PSN {psn} acknowledged but never delivered"
                        );
                    }
                    psn = psn.wrapping_add(1);
                }
            }
        }
        assert!(ini.window().next_psn().wrapping_sub(ini.window().base()) <= Initiator::<2>::MP_RANGE);
    }

    /// Read data the initiator delivered: each PSN once, and in ROD in order (every earlier
    /// return PSN, the CLOSE_REQ's included, arrived first).
    #[derive(Default)]
    struct Returned {
        psns: std::collections::HashSet<u32>,
    }

    impl Returned {
        /// `next` is the return PSN the window expected next before this one arrived.
        fn delivered(&mut self, mode: DeliveryMode, next: u32, psn: u32) {
            assert!(self.psns.insert(psn), "return PSN {psn} delivered twice");
            if mode == DeliveryMode::Rod {
                assert_eq!(psn, next, "ROD read data out of order");
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn deliver(
        cfg: &PdcConfig,
        now: Instant,
        mode: DeliveryMode,
        policy: StartPolicy,
        to_target: bool,
        h: PdsHeader,
        ini: &mut Initiator<2>,
        tgt: &mut Option<Target<2>>,
        delivered: &mut std::collections::HashSet<u32>,
        next_in_order: &mut Option<u32>,
        ret: &mut Returned,
    ) {
        if let (false, PdsHeader::Request(r)) = (to_target, h) {
            // Read data: the initiator delivers it to its return direction.
            let before = ini.clone();
            let next = ini.return_window().cack_psn().wrapping_add(1);
            match ini.handle_data(now, cfg, &r, 100, false) {
                Ok(Delivery::New) => ret.delivered(mode, next, r.psn),
                Ok(_) => {}
                Err(_) => assert_eq!(*ini, before, "refused read data changed the initiator"),
            }
            return;
        }
        if !to_target {
            let before = ini.clone();
            let r = match h {
                PdsHeader::Ack(a) => ini.handle_ack(now, cfg, &a).map(|o| {
                    // SLEEK (nothing when off): any probe answer starts recovery, and limits that
                    // vary with the ACK.
                    if o.probe_rtt.is_some() {
                        ini.recover();
                    }
                    let limits = uet_wire::pdc::SleekLimits {
                        threshold: a.cack_psn % 8 + 1,
                        window: (a.cack_psn >> 3) % 32 + 1,
                        probe_after: Duration::from_micros(u64::from(a.cack_psn % 64)),
                    };
                    ini.run_sleek(now, &a, limits);
                }),
                PdsHeader::Nack(n) => ini.handle_nack(now, cfg, &n).map(drop),
                PdsHeader::Control(c) => ini.handle_control(now, &c),
                _ => Ok(()),
            };
            if r.is_err() {
                assert_eq!(*ini, before, "a refused {h:?} changed the initiator");
            }
            return;
        }
        if tgt.is_none() {
            if let PdsHeader::Request(r) = h {
                if r.spdcid == ini.local_id() {
                    *tgt = Target::new(now, cfg, 19, &r, policy).ok();
                }
            }
        }
        let Some(t) = tgt.as_mut() else { return };
        let before = t.clone();
        let r = match h {
            PdsHeader::Request(r) => {
                let would = t.would_deliver(&r);
                // A request refused for want of a response slot is not delivered.
                let refused = !t.response_room(&r);
                let v = t.handle_request(now, cfg, &r, 1000, false);
                assert_eq!(would && !refused, v.is_ok_and(|v| v == Delivery::New), "would_deliver disagrees for {r:?}");
                if let Ok(v) = v {
                    if v == Delivery::New {
                        assert!(delivered.insert(r.psn), "PSN {} delivered twice", r.psn);
                        // Only in the PSN space it was sent in (a SYN names its start PSN).
                        if let Some(start) = r.start_psn() {
                            assert_eq!(start, t.start_psn(), "PSN {} of another PSN space delivered", r.psn);
                        }
                        if mode == DeliveryMode::Rod && r.spdcid == ini.local_id() {
                            let expect = next_in_order.unwrap_or(t.start_psn());
                            assert_eq!(r.psn, expect, "ROD delivered out of order");
                            *next_in_order = Some(r.psn.wrapping_add(1));
                        }
                    }
                }
                v.map(drop)
            }
            PdsHeader::Control(c) => t.handle_control(now, cfg, &c).map(drop),
            PdsHeader::Ack(a) => t.handle_ack(now, cfg, &a).map(drop),
            PdsHeader::Nack(n) => t.handle_nack(now, cfg, &n).map(drop),
            _ => Ok(()),
        };
        if r.is_err() {
            assert_eq!(*t, before, "a refused {h:?} changed the target");
        }
    }
}

/// Two endpoints over a network the input drives (any order, drops, duplicates, corruption, time
/// jumps, events left unpolled), with arbitrary bytes injected at either, over all four services.
/// Packets carry the CRC32C trailer (`append_crc`, `handle_crc_packet`); a corrupted one is
/// refused as a CRC mismatch. Invariants: no panic; every
/// placement lies inside its message; each message handle completes or fails at most once;
/// messages on a PDC complete once each, in message order, only after all their bytes were
/// placed; a UUD datagram is reported only after it was placed; a placement the input answers
/// with a guaranteed-delivery response can always hold it, and the initiator reports each
/// response at most once, before its message completes; once the input is used up, on a perfect
/// wire, every message completes or fails (the endpoints are never stuck).
pub fn endpoint(data: &[u8]) {
    use std::collections::{HashMap, HashSet};
    use uet_wire::msg::{Endpoint, EndpointConfig, Event, MessageDesc, Secure, SecureStart, Service};
    use uet_wire::pdc::ipv4;
    use uet_wire::ses::Opcode;
    type Ep = Endpoint<4, 8, 40, { uet_wire::pdc::held::HELD_RESPONSES }, 2, 4, 2, 2, 2, 1, 1>;
    let mut u = Unstructured::new(data);
    let addrs = [ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2])];
    let mtu = u.int_in_range(1u16..=2048).unwrap_or(512);
    // Odd MTUs run the software profile.
    let pdc = if mtu % 2 == 1 { uet_wire::pdc::PdcConfig::software() } else { uet_wire::pdc::PdcConfig::default() };
    // PDCs closed when idle or kept, and 1 to 8 messages in progress per PDC (7 of the 8 message
    // slots take the endpoint's own, the last kept for read data: 8 acts as 7). The target
    // tracks 4 (`W`): above that it releases complete messages out of order, as it does when its
    // 2 shared entries (`O`) are in use and a PDC's own two are full: order is checked per target
    // PDC until it releases one out of order, and with 2 in progress per PDC there must be none.
    // Control queues of 2 (`Q`), so full ones are met often, and one return direction (`D`) for
    // up to four target PDCs, so READs on several wait for it.
    let close_when_idle = u.arbitrary::<bool>().unwrap_or(true);
    let messages_per_pdc = u.int_in_range(1u16..=8).unwrap_or(8);
    // A third of MTUs put both ends in a secure domain (TSS header room, secure start PSNs by
    // 0-RTT or 1-RTT); derived, not drawn, so the committed corpus keeps its meaning.
    let secure = match (mtu / 2) % 3 {
        0 => None,
        1 => Some(Secure { header_room: 12, start: SecureStart::Expected0Rtt }),
        _ => Some(Secure { header_room: 16, start: SecureStart::Random1Rtt }),
    };
    let room = secure.map_or(0, |s| usize::from(s.header_room));
    // Three quarters of MTUs turn congestion management on, each load balancer in turn, with a
    // window of 1 to 7 packets at first; also derived, not drawn.
    let cms = {
        use uet_wire::cms::nscc::NsccConfig;
        use uet_wire::msg::{CmsConfig, LoadBalancing};
        let mut nscc = NsccConfig::new(linklayer::LinkRate::GBPS_100, Duration::from_micros(2), u32::from(mtu));
        nscc.initial_cwnd = Some(u32::from(mtu % 7 + 1) * u32::from(mtu));
        let lb = match (mtu / 6) % 4 {
            0 => None,
            1 => Some(LoadBalancing::Oblivious { paths: 8 }),
            2 => Some(LoadBalancing::Reps { paths: 16 }),
            _ => Some(LoadBalancing::Bitmap),
        };
        // NSCC, RCCC or both, by the MTU too.
        let controllers = match (mtu / 24) % 3 {
            0 => uet_wire::msg::Controllers::Nscc,
            1 => uet_wire::msg::Controllers::Rccc,
            _ => uet_wire::msg::Controllers::Both,
        };
        lb.map(|lb| CmsConfig { nscc, lb, seed: u64::from(mtu), sleek: mtu % 5 != 0, controllers })
    };
    let cfg =
        |addr| EndpointConfig { pdc, close_when_idle, messages_per_pdc, secure, cms, ..EndpointConfig::new(addr, mtu) };
    // A quarter of MTUs build the endpoints in place (`EMPTY`, then `init`), as firmware does,
    // after handing the unconfigured endpoint the input's first bytes as a packet, a transmit
    // and a timeout: it refuses them, and `init` leaves nothing of them behind.
    let build = |i: usize| {
        if mtu % 4 == 3 {
            let mut ep = Ep::EMPTY;
            let mut buf = [0u8; 256];
            let first = data.get(..data.len().min(200)).unwrap_or_default();
            assert!(ep.handle_packet(Instant::ZERO, addrs[1 - i], first).is_err());
            assert!(matches!(ep.poll_transmit(Instant::ZERO, &mut buf), Ok(None)));
            ep.handle_timeout(Instant::MAX);
            assert!(ep.is_idle() && ep.poll_event().is_none());
            ep.init(cfg(addrs[i]), i as u64 + 1);
            ep
        } else {
            Ep::new(cfg(addrs[i]), i as u64 + 1)
        }
    };
    let mut eps = [build(0), build(1)];
    let mut now = Instant::ZERO;
    let mut net: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut live: HashSet<(usize, uet_wire::msg::MsgHandle)> = HashSet::new();
    // Every handle given, in order (for cancels; completed ones stay and are refused).
    let mut given: Vec<(usize, uet_wire::msg::MsgHandle)> = Vec::new();
    // Packets of each message given (at least one).
    let mut packets: HashMap<(usize, uet_wire::msg::MsgHandle), u32> = HashMap::new();
    // Per receiver and (PDC, message id): bytes placed, and the last message id released.
    let mut placed: HashMap<(usize, u16, u16), u64> = HashMap::new();
    let mut last_released: HashMap<(usize, u16), u16> = HashMap::new();
    // Per receiver, the target PDCs that released a message out of order (`u16::MAX`: one of
    // them, not known which), whose order is no longer checked.
    let mut unordered: HashSet<(usize, u16)> = HashSet::new();
    let mut responses: HashSet<(usize, uet_wire::msg::MsgHandle, u32)> = HashSet::new();
    // READs in flight: (side, handle) → (length, bytes of data placed).
    let mut reads: HashMap<(usize, uet_wire::msg::MsgHandle), (u32, u64)> = HashMap::new();
    // Fetching atomics whose fetched value was placed: (side, handle).
    let mut fetched: HashSet<(usize, uet_wire::msg::MsgHandle)> = HashSet::new();
    let mut out = vec![0u8; 16 + uet_wire::msg::MAX_HEADER_LEN + usize::from(mtu) + uet_wire::tss::ICV_LEN];
    // In a secure domain every packet is sealed by its sender's domain and opened by the
    // receiver's (checked), then carried on as plaintext with the CRC below.
    let mut tss: [uet_wire::tss::SecureDomain<2>; 2] = std::array::from_fn(|_| {
        let cfg = uet_wire::tss::DomainConfig {
            ssi: secure.filter(|s| s.header_room == 16).map(|_| 7),
            ..uet_wire::tss::DomainConfig::new(3, uet_wire::tss::Mode::Cluster)
        };
        let mut d = uet_wire::tss::SecureDomain::new(cfg);
        d.install(false, [9; 32]);
        d
    });
    // While set, events are left in the queue (it fills; completions wait for room).
    let mut hold_events = false;
    // Once the input is used up, a perfect wire: every packet sent and delivered in order until
    // none moves, then time moved to the earliest deadline, until every message is done (sent
    // or failed). A message that never is, or packets that never stop, show the endpoints stuck.
    let (mut drain_ops, mut drain_next) = (0u32, 1u8);
    loop {
        let draining = u.is_empty();
        let op = if draining {
            // (Skipped where the messages left need more than 2 000 packets: a message of 20 000
            // bytes at an MTU of 1 takes seconds, and liveness does not hang on sizes.)
            let work: u32 = live.iter().map(|k| packets.get(k).copied().unwrap_or(0)).sum();
            if (live.is_empty() && net.is_empty()) || (drain_ops == 0 && work > 2_000) {
                break;
            }
            drain_ops += 1;
            // Room for the target's 60 s idle timeout: a target PDC whose initiator is gone (it
            // failed, say on NACK INVALID_SYN) with a message in progress keeps its slot until
            // then (an idle one is asked to close), and a full target table answers new PDCs
            // NO_PDC_AVAIL meanwhile, retried every NACK_Retx_Time. (The committed inputs drain
            // within 2 300 steps.)
            assert!(drain_ops <= 1_000_000, "messages never completed on a perfect wire: {live:?}");
            hold_events = false;
            // Send, then deliver what was sent; with nothing sent, the next deadline.
            let op = if drain_next == 1 {
                1
            } else if net.is_empty() {
                4
            } else {
                2
            };
            drain_next = if op == 1 { 2 } else { 1 };
            op
        } else {
            u.int_in_range(0u8..=6).unwrap_or(0)
        };
        match op {
            0 => {
                let side = usize::from(u.arbitrary::<bool>().unwrap_or(false));
                let len = u.int_in_range(0u32..=20_000).unwrap_or(0);
                let service = match u.int_in_range(0u8..=3).unwrap_or(0) {
                    0 => Service::Rud,
                    1 => Service::Rod,
                    2 => Service::Rudi,
                    _ => Service::Uud,
                };
                let opcode = match u.int_in_range(0u8..=3).unwrap_or(0) {
                    0 => Opcode::Send,
                    1 => Opcode::Read,
                    2 => Opcode::FetchingAtomic,
                    _ => Opcode::RendezvousSend,
                };
                let read = opcode == Opcode::Read;
                let job = u.int_in_range(0u32..=2).unwrap_or(0);
                let mut desc = MessageDesc::new(addrs[1 - side], service, opcode, job, len);
                desc.header.ext = endpoint_extension(opcode);
                if let Ok(h) = eps[side].send(desc) {
                    assert!(live.insert((side, h)), "a live handle was given twice");
                    given.push((side, h));
                    packets.insert((side, h), len.div_ceil(u32::from(mtu)).max(1));
                    if read && service.pdc_mode().is_some() {
                        reads.insert((side, h), (len, 0));
                    }
                }
            }
            1 => {
                for (side, ep) in eps.iter_mut().enumerate() {
                    let polls = if draining { u8::MAX } else { u.int_in_range(0u8..=8).unwrap_or(1) };
                    for _ in 0..polls {
                        let polled = if secure.is_some() {
                            let framing = uet_wire::tss::Framing::Udp;
                            let filler = [0xA5u8; 4096];
                            let payload = |t: &uet_wire::msg::Transmit| {
                                let n = t.payload.map(|p| p.len).or(t.read.map(|r| r.len)).unwrap_or(0);
                                &filler[..usize::from(n)]
                            };
                            match ep.poll_transmit_sealed(now, &mut out, &mut tss[side], framing, payload) {
                                Ok(Some((t, n))) => {
                                    let path = uet_wire::tss::Path::new(addrs[side], t.dst, framing);
                                    let mut sealed = out[..n].to_vec();
                                    let o = tss[1 - side].open(&mut sealed, &path).expect("a sealed packet opens");
                                    // The plaintext back where poll_transmit writes it.
                                    assert_eq!(o.body.start, room);
                                    out[room..o.body.end].copy_from_slice(&sealed[o.body.clone()]);
                                    Ok(Some(t))
                                }
                                other => other.map(|o| o.map(|(t, _)| t)),
                            }
                        } else {
                            ep.poll_transmit(now, &mut out)
                        };
                        match polled {
                            Ok(Some(t)) => {
                                let mut pkt = out[room..t.header_len].to_vec();
                                if let Some(p) = t.payload {
                                    pkt.extend(std::iter::repeat_n(0xA5, usize::from(p.len)));
                                }
                                if let Some(r) = t.read {
                                    assert!(
                                        u64::from(r.offset) + u64::from(r.len) <= u64::from(r.header().request_length),
                                        "read data past the READ's end"
                                    );
                                    pkt.extend(std::iter::repeat_n(0x5A, usize::from(r.len)));
                                }
                                let len = pkt.len();
                                pkt.resize(len + uet_wire::packet::CRC_LEN, 0);
                                let prefix = crc_prefix(&addrs, side);
                                uet_wire::packet::append_crc(prefix.as_bytes(), &mut pkt, len)
                                    .expect("room for the trailer");
                                net.push((1 - side, pkt));
                            }
                            Ok(None) => break,
                            Err(e) => panic!("poll_transmit with a big buffer failed: {e:?}"),
                        }
                    }
                }
            }
            2 if draining => {
                for (to, pkt) in core::mem::take(&mut net) {
                    let (p, rd, un, f) = (&mut placed, &mut reads, &mut unordered, &mut fetched);
                    deliver(&mut eps, now, &addrs, to, &pkt, true, p, rd, un, f, false, true);
                }
            }
            2 if !net.is_empty() => {
                let k = u.choose_index(net.len()).unwrap_or(0);
                match u.int_in_range(0u8..=4).unwrap_or(0) {
                    0 => {
                        net.swap_remove(k);
                    }
                    1 => net.push(net[k].clone()),
                    4 => {
                        // One bit flipped anywhere: the CRC check refuses the packet.
                        let (to, mut pkt) = net.swap_remove(k);
                        let bit = u.int_in_range(0..=pkt.len() * 8 - 1).unwrap_or(0);
                        pkt[bit / 8] ^= 1 << (bit % 8);
                        let r = eps[to].handle_crc_packet(
                            now,
                            addrs[1 - to],
                            &pkt,
                            crc_prefix(&addrs, 1 - to).as_bytes(),
                            false,
                        );
                        assert!(
                            matches!(r, Err(uet_wire::msg::EndpointError::Malformed(uet_wire::Error::Crc { .. }))),
                            "a corrupted packet was not refused by its CRC: {r:?}"
                        );
                    }
                    r => {
                        let (to, pkt) = net.swap_remove(k);
                        let (p, rd, un, f) = (&mut placed, &mut reads, &mut unordered, &mut fetched);
                        deliver(&mut eps, now, &addrs, to, &pkt, true, p, rd, un, f, r == 3, true);
                    }
                }
            }
            3 => {
                let to = usize::from(u.arbitrary::<bool>().unwrap_or(false));
                let mut pkt: Vec<u8> = u.arbitrary().unwrap_or_default();
                // With a valid trailer half the time, so the bytes reach the parser either way.
                let crc = u.arbitrary::<bool>().unwrap_or(false);
                if crc {
                    let len = pkt.len();
                    pkt.resize(len + uet_wire::packet::CRC_LEN, 0);
                    let prefix = crc_prefix(&addrs, 1 - to);
                    uet_wire::packet::append_crc(prefix.as_bytes(), &mut pkt, len).expect("room for the trailer");
                }
                let (p, rd, un, f) = (&mut placed, &mut reads, &mut unordered, &mut fetched);
                deliver(&mut eps, now, &addrs, to, &pkt, crc, p, rd, un, f, false, false);
            }
            4 if draining => {
                now = just_past(now, eps.iter().map(|e| e.poll_timeout()), Duration::from_micros(1));
                for ep in eps.iter_mut() {
                    ep.handle_timeout(now);
                }
            }
            4 => {
                now = now.saturating_add(Duration::from_micros(u.int_in_range(0u64..=3000).unwrap_or(0)));
                for ep in eps.iter_mut() {
                    ep.handle_timeout(now);
                }
            }
            5 => hold_events = !hold_events,
            6 if !given.is_empty() => {
                // Withdraw a message: one that has not started goes without a trace; one that
                // started is cut short with a MSG_ERROR and still ends with an event.
                let (side, h) = given[u.choose_index(given.len()).unwrap_or(0)];
                match eps[side].cancel(h) {
                    Ok(uet_wire::msg::Cancel::Withdrawn) => {
                        assert!(live.remove(&(side, h)), "a message not in flight was withdrawn");
                        reads.remove(&(side, h));
                    }
                    Ok(uet_wire::msg::Cancel::CutShort) => {
                        assert!(live.contains(&(side, h)), "a message not in flight was cut short");
                        assert!(!reads.contains_key(&(side, h)), "a READ was cut short");
                    }
                    Err(uet_wire::msg::EndpointError::Started | uet_wire::msg::EndpointError::Unacknowledged) => {
                        assert!(live.contains(&(side, h)), "a finished message said it had started")
                    }
                    // Finished (its event may still wait in the queue), or withdrawn before.
                    Err(uet_wire::msg::EndpointError::UnknownMessage) => {}
                    Err(e) => panic!("cancel failed: {e:?}"),
                }
            }
            _ => {}
        }
        for ep in &eps {
            if let Err(e) = ep.check_invariants() {
                panic!("endpoint invariant broken: {e}");
            }
        }
        for (side, ep) in eps.iter_mut().enumerate().filter(|_| !hold_events || u.is_empty()) {
            while let Some(ev) = ep.poll_event() {
                // Taking an event settles what waited for room, which may close PDCs.
                if let Err(e) = ep.check_invariants() {
                    panic!("endpoint invariant broken after poll_event: {e}");
                }
                match ev {
                    Event::Sent(h) => {
                        assert!(live.remove(&(side, h)), "an unknown message completed, or one completed twice");
                        if let Some((len, got)) = reads.remove(&(side, h)) {
                            assert_eq!(got, u64::from(len), "a READ completed without all its data");
                        }
                        fetched.remove(&(side, h));
                    }
                    Event::Failed { msg: h, .. } => {
                        assert!(live.remove(&(side, h)), "an unknown message completed, or one completed twice");
                        reads.remove(&(side, h));
                        fetched.remove(&(side, h));
                    }
                    Event::Truncated { msg, .. } => {
                        assert!(live.contains(&(side, msg)), "a truncation reported for a message not in flight");
                    }
                    Event::Response { msg, psn, .. } => {
                        assert!(live.contains(&(side, msg)), "a response for a message not in flight");
                        assert!(responses.insert((side, msg, psn)), "a response reported twice");
                    }
                    Event::Received { pdc: 0, message_id, len, .. } => {
                        // A UUD datagram: best effort, so a duplicate may arrive (and be reported)
                        // twice; each report follows its own placement.
                        let got = placed.entry((side, 0, message_id)).or_insert(0);
                        assert!(*got >= u64::from(len), "UUD reported before it was placed");
                        *got -= u64::from(len);
                    }
                    Event::Received { pdc, message_id, len, .. } => {
                        let got = placed.remove(&(side, pdc, message_id)).unwrap_or(0);
                        assert_eq!(got, u64::from(len), "message released before all its bytes were placed");
                        let prev = last_released.insert((side, pdc), message_id);
                        // A PDC's own two entries hold the messages of a sender that keeps two.
                        let out_of_order = ep.stats().released_out_of_order;
                        assert!(messages_per_pdc > 2 || out_of_order == 0, "released out of order, yet within W");
                        if !unordered.contains(&(side, pdc)) && !unordered.contains(&(side, u16::MAX)) {
                            if let Some(prev) = prev {
                                assert_eq!(message_id, prev.wrapping_add(1), "messages released out of order");
                            } else {
                                assert_eq!(message_id, 0, "a PDC's first message is not message 0");
                            }
                        }
                    }
                }
            }
        }
        // A freed PDC id may come back after its generations wrap; forget released order then
        // (once its events were all taken: held ones may still name the closed PDC).
        if !hold_events && eps[0].target_pdcs() == 0 && eps[1].target_pdcs() == 0 {
            last_released.clear();
            unordered.clear();
        }
    }

    /// The CRC prefix of a packet from side `from`: its IPv4 source and destination.
    fn crc_prefix(addrs: &[uet_wire::pdc::IpAddr; 2], from: usize) -> uet_wire::packet::CrcPrefix {
        uet_wire::packet::CrcPrefix::ip(&addrs[from], &addrs[1 - from])
    }

    /// Hands `pkt` to endpoint `to`, through `handle_crc_packet` when it carries a trailer;
    /// `from_peer` when the other endpoint wrote it (not the fuzzer).
    #[allow(clippy::too_many_arguments)]
    fn deliver(
        eps: &mut [Endpoint<4, 8, 40, { uet_wire::pdc::held::HELD_RESPONSES }, 2, 4, 2, 2, 2, 1, 1>; 2],
        now: Instant,
        addrs: &[uet_wire::pdc::IpAddr; 2],
        to: usize,
        pkt: &[u8],
        crc: bool,
        placed: &mut std::collections::HashMap<(usize, u16, u16), u64>,
        reads: &mut std::collections::HashMap<(usize, uet_wire::msg::MsgHandle), (u32, u64)>,
        unordered: &mut std::collections::HashSet<(usize, u16)>,
        fetched: &mut std::collections::HashSet<(usize, uet_wire::msg::MsgHandle)>,
        respond: bool,
        from_peer: bool,
    ) {
        let out_of_order = eps[to].stats().released_out_of_order;
        let mtu = u32::from(eps[to].config().mtu);
        // One packet in four arrives CE-marked (ECN feedback for congestion management).
        let ce = (pkt.len() + to) % 4 == 0;
        let handled = if crc {
            eps[to].handle_crc_packet(now, addrs[1 - to], pkt, crc_prefix(addrs, 1 - to).as_bytes(), ce)
        } else if ce {
            eps[to].handle_ce_packet(now, addrs[1 - to], pkt)
        } else {
            eps[to].handle_packet(now, addrs[1 - to], pkt)
        };
        if eps[to].stats().released_out_of_order != out_of_order {
            // Released out of order on the PDC this packet went to (any of `to`'s, if unknown).
            let pdc = match &handled {
                Ok(Some(p)) if p.read.is_none() => p.pdc,
                _ => u16::MAX,
            };
            unordered.insert((to, pdc));
        }
        if let Ok(Some(p)) = handled {
            if from_peer && p.read.is_none() {
                assert_eq!(p.header.ext, endpoint_extension(p.header.common.opcode), "a request's extension header");
            }
            let end = u64::from(p.offset) + p.payload.len() as u64;
            assert!(end <= u64::from(p.header.request_length), "placement past the message end");
            if let Some(h) = p.read {
                if p.header.common.opcode == uet_wire::ses::Opcode::FetchingAtomic {
                    let given = &ENDPOINT_FETCHED[..p.payload.len().min(8)];
                    assert!(p.offset == 0 && !p.payload.is_empty() && p.payload == given, "a fetched value, as given");
                    assert!(fetched.insert((to, h)), "a fetched value placed twice");
                    return;
                }
                let (len, got) = reads.get_mut(&(to, h)).expect("read data placed for no READ in flight");
                assert!(end <= u64::from(*len), "read data past the READ's end");
                *got += p.payload.len() as u64;
                assert!(*got <= u64::from(*len), "more read data placed than the READ asked for");
                return;
            }
            // A READ request carries no payload; it counts the chunk it asks for.
            let chunk = if p.header.common.opcode == uet_wire::ses::Opcode::Read {
                assert!(p.payload.is_empty(), "a READ request with payload was placed");
                u64::from((p.header.request_length - p.offset).min(mtu))
            } else {
                // A compare-and-swap's operands are in its extension.
                uet_wire::msg::Segment::received_len(&p.header, p.payload.len()).expect("a placed request's length")
                    as u64
            };
            *placed.entry((to, p.pdc, p.message_id)).or_insert(0) += chunk;
            if respond && p.pdc != 0 {
                // A fetch is answered with up to 8 bytes, no more than its length.
                let value = &ENDPOINT_FETCHED[..(p.header.request_length as usize).min(8)];
                let held = if p.header.common.opcode == uet_wire::ses::Opcode::FetchingAtomic && !value.is_empty() {
                    let rsp = uet_wire::ses::Response {
                        list: uet_wire::ses::ResponseList::Expected,
                        opcode: uet_wire::ses::ResponseOpcode::ResponseWithData,
                        return_code: uet_wire::ses::ReturnCode::Ok,
                        message_id: 0,
                        ri_generation: 0,
                        job_id: 0,
                        modified_length: p.header.request_length,
                    };
                    eps[to].respond_with_data(&p, rsp, value)
                } else {
                    // Some packets are refused (NO_MATCH), which fails their message and cuts
                    // what it has not sent yet short.
                    use uet_wire::ses::ReturnCode::{NoMatch, Ok};
                    let code = if (p.offset / mtu.max(1) + u32::from(p.message_id)) % 5 == 4 { NoMatch } else { Ok };
                    eps[to].respond(&p, code, p.payload.len() as u32)
                };
                assert!(held.is_ok(), "a delivered request could not be answered: {held:?}");
            }
        }
    }
}

/// The value the `endpoint` target answers a fetching atomic with.
const ENDPOINT_FETCHED: [u8; 8] = [0xFE, 1, 2, 3, 4, 5, 6, 7];

/// The extension header the `endpoint` target sends with `opcode`: compare-and-swap for
/// FETCHING_ATOMIC, rendezvous for RENDEZVOUS_SEND, none for the rest.
fn endpoint_extension(opcode: uet_wire::ses::Opcode) -> Option<uet_wire::ses::Extension> {
    use uet_wire::ses::{AtomicExt, AtomicOpcode, Datatype, Extension, Opcode, RendezvousExt, SemanticControl};
    match opcode {
        Opcode::FetchingAtomic => Some(Extension::CompareAndSwap {
            atomic: AtomicExt {
                opcode: AtomicOpcode::Cswap,
                datatype: Datatype::Uint64,
                semantic_control: SemanticControl::empty(),
            },
            compare: [1; 16],
            swap: [2; 16],
        }),
        Opcode::RendezvousSend => Some(Extension::Rendezvous(RendezvousExt {
            eager_length: 64,
            read_ri_generation: 1,
            read_pid_on_fep: 2,
            read_resource_index: 3,
            read_offset: 4,
            read_match_bits: 5,
        })),
        _ => None,
    }
}

/// UALink DL flit deframing: never panics; a flit that parses re-frames to itself with its
/// reserved header bits cleared (byte for byte when the strict check finds none); with its CRC
/// fixed up, every input reaches the header checks.
pub fn ualink_dl(data: &[u8]) {
    use ualink_flit::dl::crc::flit_crc;
    use ualink_flit::dl::flit::check_reserved;
    use ualink_flit::dl::layout::{CRC_AT, FLIT_HEADER_AT, SEGMENT_HEADER_AT};
    use ualink_flit::dl::{DlFlit, FLIT_LEN};
    let mut flit = [0u8; FLIT_LEN];
    let n = data.len().min(FLIT_LEN);
    flit[..n].copy_from_slice(&data[..n]);
    for fix in [false, true] {
        if fix {
            let c = flit_crc(&flit);
            flit[FLIT_LEN - 4..].copy_from_slice(&c);
        }
        if let Ok(f) = DlFlit::parse(&flit) {
            let mut out = [0u8; FLIT_LEN];
            f.emit(&mut out).expect("a parsed flit re-frames");
            if check_reserved(&flit).is_ok() {
                assert_eq!(out, flit, "re-framed flit differs");
            } else {
                assert_eq!(check_reserved(&out), Ok(()), "re-framed with reserved bits");
                assert_eq!(DlFlit::parse(&out).as_ref(), Ok(&f), "re-framed flit reads differently");
                let headers = FLIT_HEADER_AT..FLIT_HEADER_AT + 3;
                for i in (0..CRC_AT).filter(|i| !headers.contains(i) && !SEGMENT_HEADER_AT.contains(i)) {
                    assert_eq!(out[i], flit[i], "byte {i} changed in re-framing");
                }
            }
        }
    }
}

/// Data beats for the TL fuzz target, by item id.
struct TlBeats(Vec<Vec<([u8; 64], u64, bool)>>);

impl ualink_flit::tl::BeatSource for TlBeats {
    fn beat(&self, id: u32, beat: u8) -> Option<ualink_flit::tl::Beat<'_>> {
        let (data, byte_en, error) = self.0.get(id as usize)?.get(usize::from(beat))?;
        Some(ualink_flit::tl::Beat { data, byte_en: *byte_en, error: *error })
    }
}

/// One TL flit from `tx` through `rx`; each received item's credits go straight back to `tx`.
fn tl_step(
    tx: &mut ualink_flit::tl::Packer<8, 2, 16>,
    rx: &mut ualink_flit::tl::Unpacker<8, 2>,
    beats: &TlBeats,
    got_req: &mut Vec<ualink_flit::upli::Request>,
    got_rsp: &mut usize,
) {
    use ualink_flit::tl::credit::{Class, Target};
    use ualink_flit::tl::{RxItem, TlFlit};
    let mut f = TlFlit::default();
    tx.pack(beats, &mut f).expect("the packer never fails");
    let mut got = ualink_flit::tl::Unpacked::default();
    rx.unpack(&f, &mut got).expect("the unpacker accepts what the packer makes");
    for item in &got.items {
        let (t, data, cmd, dat) = match *item {
            RxItem::Request { req, .. } => {
                got_req.push(ualink_flit::upli::Request { pool: false, ..req });
                (Target::of(req.pool, req.vc), req.data_beats(), Class::ReqCmd, Class::ReqData)
            }
            RxItem::Response { rsp, .. } => {
                *got_rsp += 1;
                (Target::of(rsp.pool(), rsp.vc()), rsp.data_beats(), Class::RspCmd, Class::RspData)
            }
        };
        tx.credits.held.add(cmd, t, 1).unwrap();
        tx.credits.held.add(dat, t, u16::from(data)).unwrap();
    }
}

/// A UPLI request shaped from a few input bytes (most shapes pass `Request::check`).
fn tl_request(u: &mut Unstructured<'_>) -> arbitrary::Result<ualink_flit::upli::Request> {
    use ualink_flit::upli::{Command, Request};
    let kind: u8 = u.arbitrary()?;
    let off = u.int_in_range(0..=3u8)?;
    let beats = u.int_in_range(1..=4u8)?.min(4 - off);
    let addr =
        u64::from(u.int_in_range(0..=3u8)?) << 20 | u64::from(u.int_in_range(0..=63u8)?) << 8 | u64::from(off) << 6;
    let cmd = Command::from_code(u.arbitrary::<u8>()? & 0x3F).unwrap_or(Command::Read);
    let len = if kind & 1 == 0 { 16 * beats - 1 } else { u.int_in_range(0..=15u8)? };
    let num_beats =
        if cmd.has_data() { ualink_flit::upli::beats_spanned(addr, 4 * (u64::from(len) + 1)) as u8 - 1 } else { 0 };
    Ok(Request {
        cmd,
        addr,
        len,
        num_beats,
        tag: 0,
        src: u.int_in_range(0..=1023)?,
        dst: u.int_in_range(0..=7)?,
        attr: if kind & 2 == 0 { if cmd == Command::Read { 0xFF } else { 0 } } else { u.arbitrary::<u8>()? & 0xFD },
        metadata: if kind & 4 == 0 { 0 } else { u.arbitrary()? },
        asi: u.int_in_range(0..=3)?,
        vc: u.int_in_range(0..=3)?,
        pool: false,
        auth_tag: u.arbitrary()?,
    })
}

/// A TL response shaped from input bytes.
fn tl_response(u: &mut Unstructured<'_>) -> arbitrary::Result<ualink_flit::tl::Response> {
    use ualink_flit::upli::{ReadResponse, Status, WriteResponse};
    let status = Status::from_code(if u.arbitrary()? { 0 } else { u.int_in_range(0..=14)? });
    let (vc, dst, auth_tag) = (u.int_in_range(0..=3)?, u.int_in_range(0..=1023)?, u.arbitrary()?);
    Ok(if u.arbitrary()? {
        let num_beats = u.int_in_range(0..=3)?;
        let (offset, last) = if num_beats > 0 { (0, true) } else { (u.int_in_range(0..=3)?, u.arbitrary()?) };
        ualink_flit::tl::Response::Read(ReadResponse {
            tag: 0,
            src: 0,
            dst,
            status,
            num_beats,
            offset,
            last,
            vc,
            pool: false,
            auth_tag,
        })
    } else {
        ualink_flit::tl::Response::Write(WriteResponse { tag: 0, src: 0, dst, status, vc, pool: false, auth_tag })
    })
}

/// TL unpacking and packing. Mode 0: arbitrary flits into an unpacker, with link downs: no
/// panic, and after a refusal it stays stopped until a link down. Mode 1: traffic shaped by the
/// input (requests of every command, responses, poisoned beats, credit drips, messages, link
/// downs) through a packer into an unpacker: the packer never fails, the unpacker accepts every
/// flit, requests arrive in order (but those a link down handed back), every response arrives
/// (but those handed back), a link down's cut-off items are named at both ends, and every credit
/// comes back.
pub fn ualink_tl(data: &[u8]) {
    use ualink_flit::tl::compress::{Indexing, RxDecompressor, TxCompressor};
    use ualink_flit::tl::credit::{Class, Target};
    use ualink_flit::tl::{Dropped, Message, MessageType, Packer, PackerConfig, TlFlit, Unpacker};
    let mut u = Unstructured::new(data);
    let Ok(mode) = u.arbitrary::<u8>() else { return };
    let auth = mode & 2 != 0;
    let mut rx = Unpacker::<8, 2>::new(auth, RxDecompressor::new(Indexing::ByDst));
    if mode & 1 == 0 {
        let mut stopped = false;
        while u.len() >= 65 {
            let Ok(bytes) = u.arbitrary::<[u8; 64]>() else { break };
            let m = u.arbitrary::<u8>().unwrap_or(0);
            if m & 0x80 != 0 {
                // A link down lifts a stop and starts the receiver afresh.
                rx.link_down(|_| {});
                stopped = false;
            }
            let f = TlFlit::from_bytes(&bytes, m & 1 != 0, m & 2 != 0);
            let r = rx.unpack(&f, &mut ualink_flit::tl::Unpacked::default());
            if stopped {
                assert_eq!(r, Err(ualink_flit::Error::Stopped));
            }
            stopped |= r.is_err();
        }
        return;
    }
    let compress = mode & 4 != 0;
    let mut tx = Packer::<8, 2, 16>::new(
        PackerConfig { auth, compress_responses: compress },
        TxCompressor::new(Indexing::ByDst, compress),
    );
    let drip = u16::from(u.int_in_range(4..=20u8).unwrap_or(4));
    for class in Class::ALL {
        for t in [Target::Pool, Target::Vc(0), Target::Vc(1), Target::Vc(2), Target::Vc(3)] {
            tx.credits.held.add(class, t, drip).unwrap();
        }
    }
    let initial = tx.credits;
    let mut beats = TlBeats(Vec::new());
    let (mut sent_req, mut got_req) = (Vec::new(), Vec::new());
    let (mut sent_rsp, mut got_rsp) = (0usize, 0usize);
    for _ in 0..2000 {
        if u.is_empty() {
            break;
        }
        let action = u.arbitrary::<u8>().unwrap_or(255);
        let id = beats.0.len() as u32;
        let poison: u8 = u.arbitrary().unwrap_or(0);
        let beat =
            |n: u8| (0..n).map(|b| ([b ^ poison; 64], u64::from(poison) << b, poison >> b & 0x11 == 0x11)).collect();
        match action % 4 {
            0 => {
                if let Ok(mut r) = tl_request(&mut u) {
                    r.tag = id as u16 & 0x7FF;
                    if !auth {
                        r.auth_tag = 0;
                    }
                    if tx.push_request(id, r).is_ok() {
                        beats.0.push(beat(r.data_beats()));
                        sent_req.push((id, r));
                    }
                }
            }
            1 => {
                if let Ok(mut r) = tl_response(&mut u) {
                    if !auth {
                        r.set_auth_tag(0);
                    }
                    if tx.push_response(id, r).is_ok() {
                        beats.0.push(beat(r.data_beats()));
                        sent_rsp += 1;
                    }
                }
            }
            2 if action & 0x80 != 0 => {
                let _ = tx.send_message(Message::new(MessageType::InitialCreditReleaseComplete));
            }
            3 if action & 0x40 != 0 => {
                // Link down at both ends: what the packer still held comes back once; what it cut
                // off mid-data, the unpacker names; both restart, and the credits are advertised
                // again.
                let mut cut = 0;
                tx.link_down(|d| match d {
                    Dropped::Request(id) => sent_req.retain(|(i, _)| *i != id),
                    Dropped::Response(_) => sent_rsp -= 1,
                    Dropped::Unfinished(_) => cut += 1,
                });
                let mut named = 0;
                rx.link_down(|_| named += 1);
                assert_eq!(cut, named, "the unpacker names what the packer cut off");
                assert!(tx.is_idle());
                tx.credits = initial;
            }
            _ => {}
        }
        if action == 255 && tx.is_idle() && rx.owed_halves() == 0 {
            break;
        }
        tl_step(&mut tx, &mut rx, &beats, &mut got_req, &mut got_rsp);
    }
    let mut n = 0;
    while !(tx.is_idle() && rx.owed_halves() == 0) {
        n += 1;
        assert!(n < 10_000, "the packer drains");
        tl_step(&mut tx, &mut rx, &beats, &mut got_req, &mut got_rsp);
    }
    let sent_req: Vec<_> = sent_req.into_iter().map(|(_, r)| r).collect();
    assert_eq!(got_req, sent_req, "requests in order");
    assert_eq!(got_rsp, sent_rsp, "every response");
    assert_eq!(tx.credits, initial, "every credit back");
}

/// UALink data link (replay and link states, UALink 1.0 §6.6–6.7).
///
/// Mode 0: one port, any call sequence and any received bytes (raw, or with the CRC fixed so
/// the header and segment-header checks run): no panic, TxReplay within its bounds.
///
/// Mode 1: two ports over a wire of fixed delay whose flits the input corrupts or loses at will;
/// every TL flit the receiving DL delivers is the next one the sending DL took (exactly once, in
/// order), and after the input ends a clean stretch delivers everything. `Rx_replay_limit` is set
/// above twice the round trip, as §6.6.4.6 requires (see the `dl::link` module doc for why).
pub fn ualink_link(data: &[u8]) {
    use ualink_flit::dl::crc::flit_crc;
    use ualink_flit::dl::link::REPLAY_ENTRY_LEN;
    use ualink_flit::dl::{DataLink, Delivered, DlConfig, FLIT_LEN, LinkState, Transmitted};
    use ualink_flit::tl::TlFlit;
    type Port = DataLink<Vec<u8>, 32, 4>;
    let new_port = |cfg| {
        let mut p = Port::new(cfg, vec![0; REPLAY_ENTRY_LEN * 32]);
        p.rs_fault(false);
        p.enable().unwrap();
        p.set_tl_channel(true, true);
        p
    };
    let tl = |n: u32| {
        let mut b = [0u8; 64];
        b[..4].copy_from_slice(&n.to_le_bytes());
        TlFlit::from_bytes(&b, n & 1 == 1, n & 2 == 2)
    };
    /// Records what the DL takes from the source.
    struct Tap<'a> {
        q: &'a mut VecDeque<TlFlit>,
        log: &'a mut VecDeque<TlFlit>,
    }
    impl ualink_flit::dl::TlSource for Tap<'_> {
        fn has_flit(&self) -> bool {
            !self.q.is_empty()
        }
        fn next_flit(&mut self, out: &mut TlFlit) -> bool {
            let Some(f) = self.q.pop_front() else { return false };
            self.log.push_back(f);
            *out = f;
            true
        }
    }
    let mut u = Unstructured::new(data);
    let Ok(mode) = u.int_in_range(0u8..=1) else { return };
    if mode == 0 {
        let cfg = DlConfig {
            rx_replay_limit: u.arbitrary().unwrap_or(50),
            tx_ack_time_out: u.int_in_range(0..=200).unwrap_or(40),
            interleave: u.arbitrary().unwrap_or(4),
        };
        let mut p = new_port(cfg);
        let mut src: VecDeque<TlFlit> = VecDeque::new();
        let mut log = VecDeque::new();
        let mut n = 0;
        while !u.is_empty() {
            let mut out = [0u8; FLIT_LEN];
            match u.int_in_range(0u8..=9).unwrap_or(0) {
                0 | 1 => {
                    let mut f = [0u8; FLIT_LEN];
                    let take = u.int_in_range(0..=FLIT_LEN).unwrap_or(0);
                    for b in f.iter_mut().take(take) {
                        *b = u.arbitrary().unwrap_or(0);
                    }
                    if u.arbitrary().unwrap_or(true) {
                        let c = flit_crc(&f);
                        f[FLIT_LEN - 4..].copy_from_slice(&c);
                    }
                    let _ = p.receive(&f, &mut Delivered::default());
                }
                2 => {
                    let _ = p.receive_lost();
                }
                3 => p.receive_control(),
                4 => p.rs_fault(u.arbitrary().unwrap_or(false)),
                5 => {
                    let _ = p.enable();
                }
                6 => p.contain(),
                7 => p.set_tl_channel(u.arbitrary().unwrap_or(true), u.arbitrary().unwrap_or(true)),
                _ => {
                    while src.len() < 8 {
                        src.push_back(tl(n));
                        n += 1;
                    }
                    let _ = p.transmit(&mut Tap { q: &mut src, log: &mut log }, &mut out);
                    log.clear();
                }
            }
            assert!(p.unacknowledged() <= 32);
            assert!(!(p.state() != LinkState::Up && p.can_accept()));
        }
        return;
    }
    let delay = u.int_in_range(1usize..=8).unwrap_or(1);
    let cfg = DlConfig { rx_replay_limit: (4 * delay + 24) as u8, ..DlConfig::default() };
    let mut ports = [new_port(cfg), new_port(cfg)];
    let mut wire: [VecDeque<Option<[u8; FLIT_LEN]>>; 2] =
        [(0..delay).map(|_| None).collect(), (0..delay).map(|_| None).collect()];
    let mut src: [VecDeque<TlFlit>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut next = [0u32; 2];
    let mut in_flight: [VecDeque<TlFlit>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut delivered = [0u32; 2];
    let mut ticks = 0u32;
    let mut clean = 0u32;
    let limit = 200;
    while clean < 600 {
        // While input lasts, it decides the damage per direction: 0 fine, 1 bit flip, 2 lost.
        let damage: [u8; 2] = if u.is_empty() {
            clean += 1;
            [0, 0]
        } else {
            let b: u8 = u.arbitrary().unwrap_or(0);
            [b & 3, (b >> 2) & 3]
        };
        ticks += 1;
        if ticks > 20_000 {
            break;
        }
        for d in 0..2 {
            while next[d] < limit && src[d].len() < 16 {
                src[d].push_back(tl(next[d]));
                next[d] += 1;
            }
            let mut out = [0u8; FLIT_LEN];
            let t = ports[d].transmit(&mut Tap { q: &mut src[d], log: &mut in_flight[d] }, &mut out);
            wire[d].push_back(matches!(t, Transmitted::Flit { .. }).then_some(out));
        }
        for d in 0..2 {
            let Some(mut f) = wire[1 - d].pop_front().flatten() else {
                ports[d].receive_control();
                continue;
            };
            match damage[d] {
                2 => {
                    ports[d].receive_lost();
                    continue;
                }
                1 | 3 => f[usize::from(damage[d]) * 97 % FLIT_LEN] ^= 0x04,
                _ => {}
            }
            let mut got = Delivered::default();
            let _ = ports[d].receive(&f, &mut got);
            for g in &got.flits {
                let want = in_flight[1 - d].pop_front();
                assert_eq!(want.as_ref(), Some(g), "TL flits delivered exactly once, in order");
                delivered[d] += 1;
            }
        }
    }
    for (d, p) in ports.iter().enumerate() {
        assert_eq!(p.state(), LinkState::Up, "port {d} stays up");
    }
    if ticks <= 20_000 {
        assert_eq!(delivered, [limit, limit], "a clean stretch delivers everything");
    }
}

/// `UpliPort` (UALink): two ports of four slots each way joined by a wire, the input choosing per
/// flit time what each side does (issue a request of any kind, answer with any status and data,
/// give a stale handle, time out, fault its RS, start again) and what the wire does to each flit
/// (bit flip, loss, a second copy after it). Invariants, at every step: every event names a request
/// the harness holds; each request ends exactly once and arrives at most once; data arrives intact
/// (requests, and read responses with status OKAY); a refused call changes nothing; a port is
/// started only when it says `Waiting::Start`, and any other start is refused. After the input, a
/// clean stretch (RS faults cleared, isolation left by a link reset, each port started when it says
/// so) ends every request if both ports are up at its end, and returns every credit if both are
/// quiet.
pub fn ualink_port(data: &[u8]) {
    use std::collections::HashMap;
    use ualink_flit::dl::link::REPLAY_ENTRY_LEN;
    use ualink_flit::dl::{FLIT_LEN, LinkState, Transmitted};
    use ualink_flit::port::{Event, Failure, Handle, PortConfig, UpliPort, Waiting, request_lanes, response_lanes};
    use ualink_flit::upli::{AtomicOp, OpSize, Request, Status};
    type Port = UpliPort<Vec<u8>, 32, 4>;
    let pattern =
        |k: u64, addr: u64, len: u64| -> Vec<u8> { (0..len).map(|i| (k * 77 + addr + i * 5) as u8).collect() };
    let mut u = Unstructured::new(data);
    let timeout = u.int_in_range(0u64..=300).unwrap_or(0);
    let new = |acc| {
        // Both ends agree on Channel 0: both negotiate it, or both open it at once.
        let cfg = PortConfig {
            completion_timeout: (timeout > 0).then_some(timeout),
            negotiate: timeout % 2 == 0,
            isolate_on_timeout: timeout % 3 != 0,
            ..PortConfig::new(acc)
        };
        // A fifth of the runs configure ports made for another accelerator again, in place.
        let mut port =
            Port::new(PortConfig::new(if timeout % 5 == 4 { 3 } else { acc }), vec![0; REPLAY_ENTRY_LEN * 32]).unwrap();
        port.init(cfg).unwrap();
        port
    };
    let mut ports = [new(1), new(2)];
    for p in &mut ports {
        p.start().unwrap();
    }
    let mut wire: [VecDeque<Option<[u8; FLIT_LEN]>>; 2] = [VecDeque::from([None; 3]), VecDeque::from([None; 3])];
    // Per side: outstanding tag → (issue number, request); ends per issue number; held handles;
    // requests that arrived (by the issuer's side and number).
    let mut outstanding: [HashMap<u16, (u64, Request)>; 2] = [HashMap::new(), HashMap::new()];
    let mut ends: [HashMap<u64, u8>; 2] = [HashMap::new(), HashMap::new()];
    let mut held: [Vec<(Handle, Request)>; 2] = [Vec::new(), Vec::new()];
    let mut arrived: [std::collections::HashSet<u64>; 2] = Default::default();
    let mut issued = [0u64; 2];
    let mut now = 0u64;
    let mut clean = 0u32;
    while clean < 3_000 {
        let op: u8 = if u.is_empty() {
            clean += 1;
            // The clean stretch: no RS fault, no isolation; management starts each port again when
            // it may.
            for p in &mut ports {
                if p.link().state() == LinkState::Fault {
                    p.rs_fault(false);
                }
                if p.is_isolated() {
                    p.take_link_down();
                }
                if p.waiting_on() == Some(Waiting::Start) {
                    p.start().unwrap();
                }
            }
            // Serve and let the timers run; nothing new.
            0x30
        } else {
            u.arbitrary().unwrap_or(0)
        };
        let side = usize::from(op & 1);
        match op >> 4 {
            // Issue a request of a kind the input picks.
            0..=3 if clean == 0 => {
                let seq = issued[side];
                let base = seq << 8 | (side as u64) << 40;
                let off: u64 = u.int_in_range(0..=63).unwrap_or(0);
                let bytes = 4 * (1 + off % 32);
                let req = match op >> 1 & 7 {
                    0 | 1 => Request::read(base + 4 * (off % ((256 - bytes) / 4 + 1)), bytes as u16),
                    2 | 3 => Request::write(base + 4 * (off % ((256 - bytes) / 4 + 1)), bytes as u16),
                    4 => Request::write_full(base + 64 * (off % 4), 64),
                    5 => Request::atomic(AtomicOp::Add, OpSize::Bits64, base + 8 * (off % 32), true),
                    6 if off % 2 == 0 => Request::atomic(AtomicOp::Swap, OpSize::Bits32, base + 4 * off, false),
                    6 => Request::atomic(AtomicOp::Set, OpSize::Bits8, base + 4 * off, off % 4 == 1),
                    _ if off % 2 == 0 => {
                        Request::atomic(AtomicOp::Compare, OpSize::Bits64, base + 32 * (off % 8), true)
                    }
                    _ => Request::read(base, 256),
                }
                .unwrap()
                .to_acc(2 - side as u16);
                let data = pattern(side as u64, req.addr, request_lanes(&req).len() as u64);
                let before = ports[side].outstanding();
                match ports[side].request(req, &data) {
                    Ok(tag) => {
                        let sent = Request { tag, src: 1 + side as u16, ..req };
                        assert!(outstanding[side].insert(tag, (seq, sent)).is_none(), "tag given twice");
                        issued[side] += 1;
                    }
                    Err(_) => assert_eq!(ports[side].outstanding(), before, "a refused request changes nothing"),
                }
                // A wrong length is refused.
                if !data.is_empty() {
                    assert!(ports[side].request(req, &data[1..]).is_err());
                }
            }
            4 if clean == 0 => ports[side].rs_fault(op & 2 != 0),
            5 if clean == 0 => {
                // Management recovers the link once both ends are down (a real RS fault retrains
                // both); a start on an enabled port is refused and changes nothing.
                // Management: leave isolation by a link reset; start a port when it may; a start
                // at any other time is refused and changes nothing.
                let may = ports[side].waiting_on() == Some(Waiting::Start);
                if ports[side].is_isolated() {
                    ports[side].take_link_down();
                } else if may {
                    ports[side].start().unwrap();
                } else {
                    let state = ports[side].link().state();
                    assert!(ports[side].start().is_err(), "start only when the port says so");
                    assert_eq!(ports[side].link().state(), state);
                }
            }
            6 if clean == 0 => {
                // A stale or foreign handle, or a response that does not fit, is refused.
                if let Some(&(h, req)) = held[side].first() {
                    let room = response_lanes(&req).len();
                    assert!(ports[side].respond(h, Status::Okay, &vec![0; room + 1]).is_err());
                    assert!(ports[side].request_data(h).is_some(), "a held request's data stays readable");
                }
            }
            7 if clean == 0 => {
                now += u64::from(op & 0x0E) * 20;
                ports[side].handle_timeout(now);
            }
            _ => {
                // Serve: answer the oldest held requests, with a status the input picks (in the
                // clean stretch, both sides).
                let (n, also) = if clean > 0 { (4, 1 - side) } else { (usize::from(op >> 1 & 3), side) };
                for side in [side, also] {
                    for _ in 0..n.min(held[side].len()) {
                        let (h, req) = held[side].remove(0);
                        let status = if clean == 0 && op & 0x0C == 0x0C { Status::TargetAbort } else { Status::Okay };
                        let data = pattern(9 + side as u64, req.addr, response_lanes(&req).len() as u64);
                        match ports[side].respond(h, status, &data) {
                            Ok(()) => assert!(ports[side].respond(h, status, &data).is_err(), "answered once"),
                            // Dropped by a link down: its Dropped event follows.
                            Err(_) => held[side].insert(0, (h, req)),
                        }
                        if ports[side].request_data(h).is_some() {
                            break;
                        }
                    }
                }
            }
        }
        // One flit time: each port sends, the wire damages by the input.
        let damage: u8 = if clean > 0 { 0 } else { u.arbitrary().unwrap_or(0) };
        for d in 0..2 {
            let mut out = [0u8; FLIT_LEN];
            let sent = matches!(ports[d].poll_transmit(now, &mut out), Transmitted::Flit { .. }).then_some(out);
            wire[d].push_back(sent);
        }
        for d in 0..2 {
            let Some(mut f) = wire[1 - d].pop_front().flatten() else {
                ports[d].handle_idle();
                continue;
            };
            match damage >> (4 * d) & 0x0F {
                1 => f[usize::from(damage) * 7 % FLIT_LEN] ^= 0x10,
                2 => {
                    ports[d].handle_lost();
                    continue;
                }
                // A duplicate arrives as well as the flit, not in place of the next one: a flit
                // replaced unseen is a loss the PCS did not report, which the DL cannot number
                // (seven or more in a row can alias the 3-bit flitSeqLo, §6.6.6.2). The copy
                // takes a flit time of the receiver's own (its per-flit counters tick twice).
                3 => _ = ports[d].handle_flit(&f),
                _ => {}
            }
            let _ = ports[d].handle_flit(&f);
        }
        now += 1;
        for d in 0..2 {
            let peer = 1 - d;
            while let Some(ev) = ports[d].poll_event() {
                match ev {
                    Event::Link { .. } | Event::Service(_) => {}
                    Event::Request { handle, req, data } => {
                        let seq = (req.addr & ((1 << 40) - 1)) >> 8;
                        assert!(arrived[d].insert(seq), "a request arrived twice");
                        if !data.any_poisoned() {
                            let want = pattern(peer as u64, req.addr, request_lanes(&req).len() as u64);
                            assert_eq!(data.bytes(), want, "request data");
                        }
                        held[d].push((handle, req));
                    }
                    Event::Response { tag, req, status, data } => {
                        let (seq, sent) = outstanding[d].remove(&tag).expect("a response to an outstanding request");
                        assert_eq!(req, sent);
                        *ends[d].entry(seq).or_default() += 1;
                        if status == Status::Okay && !data.any_poisoned() {
                            let want = pattern(9 + peer as u64, req.addr, response_lanes(&req).len() as u64);
                            assert_eq!(data.bytes(), want, "read data");
                        }
                    }
                    Event::Failed { tag, req, why } => {
                        let (seq, sent) = outstanding[d].remove(&tag).expect("a failure of an outstanding request");
                        assert_eq!(req, sent);
                        assert!(why == Failure::LinkDown || timeout > 0);
                        *ends[d].entry(seq).or_default() += 1;
                    }
                    Event::Dropped { handle, .. } => {
                        let i = held[d].iter().position(|(h, _)| *h == handle).expect("a dropped request was held");
                        held[d].remove(i);
                    }
                }
            }
        }
        if clean > 0
            && outstanding.iter().all(HashMap::is_empty)
            && held.iter().all(Vec::is_empty)
            && ports.iter().all(|p| p.is_quiet())
        {
            break;
        }
    }
    let mut advertised = ualink_flit::tl::credit::Ledger::EMPTY;
    for (class, n) in ualink_flit::tl::credit::Class::ALL.into_iter().zip([4, 4, 16, 16]) {
        advertised.add(class, ualink_flit::tl::credit::Target::Pool, n).unwrap();
    }
    let up = ports.iter().all(|p| p.is_up());
    for d in 0..2 {
        assert!(ends[d].values().all(|&n| n == 1), "each request ends once");
        if up {
            assert!(
                outstanding[d].is_empty(),
                "a clean stretch on an up link ends every request: {outstanding:?} held {held:?} {:?} {:?}",
                ports.each_ref().map(|p| (p.waiting_on(), *p.stats(), p.link().tl_channel(), p.packer().queued())),
                ports.each_ref().map(|p| p.packer().credits.held)
            );
            if ports.iter().all(|p| p.is_quiet()) {
                assert_eq!(ports[d].packer().credits.held, advertised, "every credit came back");
            }
        }
    }
}

/// DL message service (UALink §6.4). Mode 0: one service fed arbitrary alt-sector words and
/// calls; never panics, the UART receive buffer stays within its size, a channel's gates agree
/// with its state whenever no negotiation is in flight. Mode 1: two services joined by a lossless
/// alt-sector wire (what a data link with replay gives), the input choosing calls and how many
/// words cross each flit time: UART words arrive once and in order, no response goes unasked, no
/// UART word is overrun, and once quiet both ends agree on every channel.
pub fn ualink_dl_service(data: &[u8]) {
    use ualink_flit::dl::message::AltQueue;
    use ualink_flit::dl::packing::AltSource;
    use ualink_flit::dl::service::{CHANNEL_TL, CHANNEL_UART, MessageService, ServiceConfig};
    type S = MessageService<16>;
    let mut u = Unstructured::new(data);
    let Ok(mode) = u.int_in_range(0u8..=1) else { return };
    // One call chosen by the input; returns whether it was a reset (UART or link).
    let call = |s: &mut S, u: &mut Unstructured<'_>, next: &mut u32| -> bool {
        let op = u.int_in_range(0u8..=7).unwrap_or(0);
        match op {
            0 => {
                let ch = if u.arbitrary().unwrap_or(true) { CHANNEL_TL } else { CHANNEL_UART };
                let _ = s.request_channel(ch, u.arbitrary().unwrap_or(true));
            }
            1 => {
                let _ = s.request_device_id();
            }
            2 => {
                let _ = s.request_port_number();
            }
            3 => {
                let _ = s.notify_tl_rate(u.arbitrary().unwrap_or(3125));
            }
            4 => {
                let _ = s.uart_reset();
            }
            5 => s.link_reset(),
            _ => {
                let n = u.int_in_range(0u32..=40).unwrap_or(0);
                let words: Vec<u32> = (*next..*next + n).collect();
                *next += s.uart_write(&words) as u32;
            }
        }
        op == 4 || op == 5
    };
    if mode == 0 {
        let mut s = S::new(ServiceConfig { device_id: Some(3), port: Some(7), ..ServiceConfig::default() });
        let mut q: AltQueue<40> = AltQueue::new();
        let mut next = 0;
        while !u.is_empty() {
            match u.int_in_range(0u8..=3).unwrap_or(0) {
                0 => {
                    let _ = s.receive(u.arbitrary().unwrap_or(0));
                }
                1 => {
                    call(&mut s, &mut u, &mut next);
                }
                2 => {
                    let _ = s.uart_read();
                }
                _ => {
                    s.pump(&mut q);
                    while q.next_alt().is_some() {}
                }
            }
            assert!(s.uart_fill().1 <= 16);
            if !s.negotiating() {
                let (tx, _) = s.tl_gates();
                assert!(!tx || s.channel_online(CHANNEL_TL), "transmit open only online");
            }
        }
        return;
    }
    let cfg = ServiceConfig { uart_reset_timeout: 200, ..ServiceConfig::default() };
    let mut s = [S::new(cfg), S::new(cfg)];
    let mut q: [AltQueue<40>; 2] = [AltQueue::new(), AltQueue::new()];
    let mut next = [0u32; 2];
    let mut expect = [0u32; 2];
    let mut quiet = 0;
    let mut resets = false;
    while quiet < 2000 {
        let (calls, cross) = if u.is_empty() {
            quiet += 1;
            (0, [5, 5])
        } else {
            (
                u.int_in_range(0u8..=2).unwrap_or(0),
                [u.int_in_range(0usize..=5).unwrap_or(5), u.int_in_range(0usize..=5).unwrap_or(5)],
            )
        };
        for _ in 0..calls {
            let d = usize::from(u.arbitrary::<bool>().unwrap_or(false));
            // A reset flushes words on purpose and a one-sided link reset leaves the ends
            // disagreeing: the checks that assume neither are skipped from then on.
            resets |= call(&mut s[d], &mut u, &mut next[d]);
        }
        for d in 0..2 {
            s[d].pump(&mut q[d]);
        }
        for d in 0..2 {
            for _ in 0..cross[d] {
                let Some(w) = q[d].next_alt() else { break };
                let r = s[1 - d].receive(w);
                // After a one-sided link reset the receiver may be mid-way through a UART stream.
                assert!(resets || r.is_ok(), "a conforming partner's words parse: {r:?}");
            }
            while let Some(w) = s[1 - d].uart_read() {
                if !resets {
                    assert_eq!(w, expect[1 - d], "UART words once and in order");
                }
                expect[1 - d] = w.wrapping_add(1);
            }
        }
        for x in &s {
            assert_eq!(x.stats().uart_overruns, 0);
        }
    }
    if !resets {
        for d in 0..2 {
            assert_eq!(s[d].stats().unsolicited, 0);
            for ch in [CHANNEL_TL, CHANNEL_UART] {
                assert_eq!(s[d].channel_online(ch), s[1 - d].channel_online(ch), "both ends agree on channel {ch}");
            }
        }
    }
}

/// ETH-X PAXI: AXI transaction rules (`ethx_paxi::axi`), the PAXI flit header and sizes
/// (`ethx_paxi::paxi`), AXI USER routes (`ethx_paxi::routing`), the RC Link RH
/// (`ethx_paxi::rclink`) and the AFH_GEN2_16b and PRI headers (`ethx_paxi::framing`). Never panics on any request, bus width, strobes, header, channel
/// widths, route field or RH bytes; every AXI field code, PAXI header, route and RH that decodes
/// encodes back to itself (an APB flit's undefined length bits, a multicast route's high bits
/// and the RH's reserved bits aside) and every kind the documentation sizes has a size; a request
/// `validate` accepts has an address and byte lanes for every beat, keeps an INCR burst's bytes
/// inside the first beat's 4 KiB page, a WRAP burst's beats distinct and inside its window, a
/// FIXED burst's at its address, and an exclusive access's total a power of two up to 128
/// bytes, aligned to it.
pub fn ethx_paxi(data: &[u8]) {
    use ethx_paxi::axi::{AddrReq, Atop, Burst, Resp};
    use ethx_paxi::paxi::{ChannelWidths, FlitKind, frame_bytes, packed_frame_bytes};
    let mut u = Unstructured::new(data);
    let Ok(r) = AddrReq::arbitrary(&mut u) else { return };
    let bus = 1u16 << u.int_in_range(0u8..=7).unwrap_or(6);
    let strobes: u128 = u.arbitrary().unwrap_or(0);
    let code: u8 = u.arbitrary().unwrap_or(0);
    let header: u16 = u.arbitrary().unwrap_or(0);
    let widths = ChannelWidths {
        id: u.arbitrary().unwrap_or(8),
        addr: u.arbitrary().unwrap_or(64),
        data: u.arbitrary().unwrap_or(512),
        user: u.arbitrary().unwrap_or(16),
        atomics: u.arbitrary().unwrap_or(false),
    };
    let _ = widths.validate();
    let da_bits: u8 = u.int_in_range(3u8..=16).unwrap_or(8);
    let route_field: u32 = u.arbitrary().unwrap_or(0);
    let rh: [u8; 8] = u.arbitrary().unwrap_or([0; 8]);
    ethx_routes_and_rh(da_bits, route_field, rh);
    ethx_l2_headers(u.bytes(12).unwrap_or(&[]));
    if let Ok(kind) = FlitKind::from_header(header) {
        let back = kind.header().expect("a decoded kind encodes");
        let defined = match kind {
            FlitKind::ApbMessage => 0x3C0,
            FlitKind::ApbRegister { .. } => 0x3C1,
            _ => 0x3FF,
        };
        assert_eq!(back, header & defined);
        let apb = matches!(kind, FlitKind::ApbMessage | FlitKind::ApbRegister { .. });
        assert_eq!(frame_bytes(&widths, kind).is_some(), !apb);
        assert!(packed_frame_bytes(&widths, kind) <= frame_bytes(&widths, kind));
    }
    if let Ok(a) = Atop::from_bits(code) {
        assert_eq!(a.bits(), code & 0x3F);
    }
    if let Ok(b) = Burst::from_bits(code) {
        assert_eq!(b.bits(), code & 0b11);
    }
    assert_eq!(Resp::from_bits(code).bits(), code & 0b11);
    for k in 0..r.beats.min(300) {
        let _ = (r.beat_addr(k), r.lanes(k, bus), r.check_strobes(k, bus, strobes));
    }
    if r.validate(bus).is_err() {
        return;
    }
    let size = u64::from(r.size.bytes());
    let addrs: Vec<u64> =
        (0..r.beats).map(|k| r.beat_addr(k).expect("every beat of a valid burst has an address")).collect();
    for (k, &a) in addrs.iter().enumerate() {
        let lanes = r.lanes(k as u16, bus);
        assert!(lanes != 0, "beat {k} of a valid burst has no byte lanes");
        assert_eq!(r.check_strobes(k as u16, bus, lanes), Ok(()));
        match r.burst {
            Burst::Fixed => assert_eq!(a, r.addr),
            Burst::Incr => assert_eq!((a | (size - 1)) >> 12, r.addr >> 12, "an INCR burst crosses 4 KiB"),
            Burst::Wrap => {
                let window = size * u64::from(r.beats);
                assert_eq!(a / window, r.addr / window, "a WRAP beat outside its window");
            }
        }
    }
    if r.burst != Burst::Fixed {
        let mut distinct = addrs.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), addrs.len(), "two beats at one address");
    }
    if r.exclusive {
        let total = r.total_bytes();
        assert!(total.is_power_of_two() && total <= 128 && r.addr % u64::from(total) == 0);
    }
}

/// The compressed layer-2 headers of [`ethx_paxi`]: AFH_GEN2_16b parses every 12 bytes whose
/// Key_words has W = 1 and re-emits them with the reserved bits cleared and the TC's U/L and I/G
/// bits from X and M; PRI re-emits any 12 bytes unchanged; fewer bytes are truncated.
fn ethx_l2_headers(bytes: &[u8]) {
    use ethx_paxi::framing::{AfhGen2, FrameError, Pri};
    let mut out = [0u8; 12];
    match AfhGen2::parse(bytes) {
        Ok((h, _)) => {
            assert_eq!(h.emit(&mut out), Ok(12));
            let mut want = [0u8; 12];
            want.copy_from_slice(&bytes[..12]);
            want[6] &= !0b0011_0000;
            want[0] = (bytes[0] & !0b11) | (bytes[6] & 0b11);
            assert_eq!(out, want);
        }
        Err(FrameError::Truncated) => assert!(bytes.len() < 12),
        Err(e) => assert_eq!((e, bytes[6] & 0x80), (FrameError::NotGen2_16b, 0)),
    }
    if let Ok((p, _)) = Pri::parse(bytes) {
        assert_eq!(p.emit(&mut out), Ok(12));
        assert_eq!(out[..], bytes[..12]);
    }
}

/// The route and RH half of [`ethx_paxi`].
fn ethx_routes_and_rh(da_bits: u8, field: u32, rh: [u8; 8]) {
    use ethx_paxi::rclink::{RhKind, RoutingHeader};
    use ethx_paxi::routing::{Route, RouteField, Traffic, VcMode, vc_for};
    let f = RouteField::new(da_bits).expect("3 to 16 bits");
    let field = field & ((1 << f.bits()) - 1);
    let route = f.decode(field);
    let back = f.encode(route).expect("a decoded route encodes");
    let expected = match route {
        Route::Unicast { .. } => field,
        Route::Multicast { .. } => field & 0x7F,
    };
    assert_eq!(back, expected);
    assert_eq!(f.check_reserved(field).is_ok(), back == field);
    for mode in [VcMode::Spread, VcMode::User] {
        for traffic in [Traffic::Request, Traffic::Response, Traffic::Apb] {
            if let Ok(vc) = vc_for(mode, traffic, route) {
                assert!(vc <= 7);
            }
        }
    }
    if let Ok((h, rest)) = RoutingHeader::parse(&rh) {
        assert!(rest.is_empty());
        let mut out = [0u8; 8];
        assert_eq!(h.emit(&mut out), Ok(8));
        let mut cleared = rh;
        cleared[0] &= !0b0000_0110; // bits 58:57
        if matches!(h.kind, RhKind::AckNak(_)) {
            cleared[0] &= !0b0010_0000; // Fack, 0 in an ACK or NAK
        }
        if !matches!(h.kind, RhKind::Send { .. }) {
            cleared[0] &= !0b0001_1000; // Pad, with no payload to pad
        }
        assert_eq!(out, cleared);
    }
}

/// Whole ETH-X frames (`ethx_paxi::frame`) in the three forms, with and without ICRC: never
/// panics on any bytes; whatever parses re-emits to a frame that parses to the same outer
/// headers, RH (Pad and Pkt_len aside, which `emit` sets) and payload.
pub fn ethx_frame(data: &[u8]) {
    use ethx_paxi::frame::{Form, FrameConfig, RC_LINK_UDP_PORT, emit, parse};
    use ethx_paxi::rclink::RhKind;
    let Some((&choice, bytes)) = data.split_first() else { return };
    let form = [Form::Standard, Form::Afh, Form::Pri][usize::from(choice % 3)];
    let config = FrameConfig { icrc: choice & 0x10 != 0, ..FrameConfig::default() };
    let Ok(p) = parse(&config, form, bytes) else { return };
    assert_eq!(p.outer.form(), form);
    let mut out = vec![0u8; bytes.len() + 64];
    let n = emit(&config, &p.outer, &p.rh, p.payload, &mut out).expect("a parsed frame re-emits");
    let q = parse(&config, form, &out[..n]).expect("a re-emitted frame parses");
    assert_eq!((q.outer, q.payload), (p.outer, p.payload));
    let strip = |mut rh: ethx_paxi::rclink::RoutingHeader| {
        rh.pad = 0;
        if let RhKind::Send { pkt_len } = &mut rh.kind {
            *pkt_len = 0;
        }
        rh
    };
    assert_eq!(strip(q.rh), strip(p.rh));
    if form == Form::Standard {
        let udp = p.outer.len() - 8;
        assert_eq!(out[udp + 2..udp + 4], RC_LINK_UDP_PORT.to_be_bytes()[..]);
    }
}

#[derive(Arbitrary, Debug)]
enum CompressOp {
    /// A transaction from the real sender to stream `vc` (0–3) of peer 1.
    Push { vc: u8, txn: FuzzTxn },
    /// The sender's frames: delivered, lost, or delivered with byte `at` xored with `x`.
    Deliver { lose: bool, at: u16, x: u8 },
    /// Arbitrary bytes as a frame from peer `peer` (0–1).
    Garbage { peer: u8, bytes: Vec<u8> },
    /// The receiver asks for a reset of stream `vc`.
    Resync { vc: u8 },
}

#[derive(Arbitrary, Debug, Clone)]
enum FuzzTxn {
    Read(ethx_paxi::axi::AddrReq),
    Write(ethx_paxi::axi::AddrReq, bool),
    ReadData(u32, u8, bool, u64, u16),
    WriteResp(ethx_paxi::axi::WriteResp),
}

/// Header compression (`ethx_paxi::compress`, through `ethx_paxi::aggregate`): a real sender's
/// frames, some lost or corrupted, mixed with arbitrary frames, into one receiver. Never
/// panics; a frame of the sender that arrives intact and is accepted decodes to exactly the
/// transactions pushed into it — across losses and resynchronisations — unless an arbitrary
/// frame was accepted on its stream since the stream's last reset (the compression layer has no
/// integrity check of its own: that is the ICRC's job).
pub fn ethx_decompress(data: &[u8]) {
    use ethx_paxi::aggregate::{Aggregator, AggregatorConfig, Deaggregator};
    use ethx_paxi::paxi::ChannelWidths;
    let widths = ChannelWidths::EXAMPLE;
    let config = AggregatorConfig { mtu: 1024, max_per_frame: 4, budget: Duration::ZERO };
    let (mut tx, mut rx) = (Aggregator::<3, 2, 1024>::EMPTY, Deaggregator::<3>::EMPTY);
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive the
    // unconfigured pair with the whole input: they take nothing, and `init` leaves nothing
    // behind.
    if data.len() % 4 == 3 {
        ethx_decompress_run(data, &mut tx, &mut rx);
        assert_eq!(tx.queued(), 0);
    }
    tx.init(widths, config).unwrap();
    rx.init(widths).unwrap();
    ethx_decompress_run(data, &mut tx, &mut rx);
}

/// [`ethx_decompress`]'s calls on `tx` and `rx`.
fn ethx_decompress_run(
    data: &[u8],
    tx: &mut ethx_paxi::aggregate::Aggregator<3, 2, 1024>,
    rx: &mut ethx_paxi::aggregate::Deaggregator<3>,
) {
    use ethx_paxi::axi::{Channel, Resp};
    use ethx_paxi::compress::{FrameHeader, StreamKey, Txn};
    let fill = [0xA5u8; 4096];
    // Per VC: what each queued frame should decode to (as Debug text), and whether garbage was
    // accepted since the stream's last reset.
    let mut pushed: [Vec<String>; 4] = Default::default();
    let mut tainted = [false; 4];
    let mut u = Unstructured::new(data);
    while !u.is_empty() {
        let Ok(op) = CompressOp::arbitrary(&mut u) else { break };
        match op {
            CompressOp::Push { vc, txn } => {
                let vc = vc % 4;
                let len = |n: usize| n.min(fill.len());
                let txn = match &txn {
                    FuzzTxn::Read(r) => Txn::Read(ethx_paxi::axi::AddrReq { channel: Channel::Read, ..*r }),
                    FuzzTxn::Write(r, strobes) => {
                        let n = len(r.total_bytes() as usize);
                        Txn::Write {
                            req: ethx_paxi::axi::AddrReq { channel: Channel::Write, ..*r },
                            data: &fill[..n],
                            strobes: strobes.then(|| &fill[..n.div_ceil(8)]),
                        }
                    }
                    FuzzTxn::ReadData(id, resp, last, user, n) => Txn::ReadData {
                        id: *id,
                        resp: Resp::from_bits(*resp),
                        last: *last,
                        user: *user,
                        data: &fill[..len(usize::from(*n))],
                    },
                    FuzzTxn::WriteResp(b) => Txn::WriteResp(*b),
                };
                let key = StreamKey { peer: 1, vc };
                if tx.push(Instant::ZERO, key, &txn).is_ok() {
                    pushed[usize::from(vc)].push(format!("{txn:?}"));
                }
            }
            CompressOp::Deliver { lose, at, x } => {
                tx.flush();
                while let Some(out) = tx.poll_transmit(Instant::ZERO) {
                    let vc = usize::from(out.key.vc);
                    let want: Vec<String> = pushed[vc].drain(..usize::from(out.count)).collect();
                    if lose {
                        continue;
                    }
                    let mut bytes = out.bytes.to_vec();
                    let corrupt = x != 0 && usize::from(at) < bytes.len();
                    if corrupt {
                        bytes[usize::from(at)] ^= x;
                    }
                    let reset = FrameHeader::parse(&bytes).map(|(h, _)| h.reset).unwrap_or(false);
                    if reset && !corrupt {
                        tainted[vc] = false;
                    }
                    match rx.open(1, &bytes) {
                        Ok(records) => {
                            let got: Vec<String> = records.map(|t| format!("{t:?}")).collect();
                            if !corrupt && !tainted[vc] {
                                assert_eq!(got, want, "an intact frame decodes to what was sent");
                            }
                            if corrupt {
                                tainted[vc] = true;
                            }
                        }
                        Err(_) => {
                            if let Some(key) = ethx_paxi::aggregate::stream_of(1, &bytes) {
                                tx.reset_stream(StreamKey { peer: 1, vc: key.vc });
                            }
                        }
                    }
                }
            }
            CompressOp::Garbage { peer, bytes } => {
                let peer = u32::from(peer % 2);
                if rx.open(peer, &bytes).is_ok() && peer == 1 {
                    if let Ok((h, _)) = FrameHeader::parse(&bytes) {
                        if usize::from(h.vc) < 4 {
                            tainted[usize::from(h.vc)] = true;
                        }
                    }
                }
            }
            CompressOp::Resync { vc } => tx.reset_stream(StreamKey { peer: 1, vc: vc % 4 }),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum QpOp {
    Send(u8),
    /// Transmit up to n packets; each lost (bit 0 of `fate`), duplicated (bit 1) or held back
    /// (bit 2).
    Transmit(u8, u8),
    /// Deliver held-back packets.
    Release,
    /// The responder's ACK or NAK: delivered or lost.
    Ack(bool),
    /// Time passes by `ns` × 64.
    Wait(u16),
    /// An arbitrary RH to the requester or the responder.
    Forge(bool, [u8; 8]),
}

/// RC Link go-back-N (`ethx_paxi::qp`): one requester and one responder driven by arbitrary
/// sends, losses, duplicates, reordering, ACK losses, time and forged RHs. Never panics; the
/// responder delivers the requester's payloads exactly once each and in order (while no RH was
/// forged); the requester never holds more than its window; and once the input is used up, on a
/// perfect wire, the requester ends with nothing outstanding or failed (retries used up on the
/// way) after at most one retry timeout, and unless it failed or an RH was forged, every payload
/// it took was delivered.
pub fn ethx_qp(data: &[u8]) {
    use ethx_paxi::qp::{Requester, RequesterConfig};
    let config = RequesterConfig {
        max_outstanding: 8,
        max_payload: 64,
        max_retries: 4,
        fack_every: 3,
        rate: Some(ethx_paxi::qp::RateLimit { window: Duration::from_nanos(4096), bytes: 64 }),
        ..RequesterConfig::new(5)
    };
    let mut tx = Requester::<[u8; 256], 8>::EMPTY;
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive the
    // unconfigured requester with the whole input: it refuses every payload, and `init` leaves
    // nothing behind.
    if data.len() % 4 == 3 {
        ethx_qp_run(data, &mut tx);
        assert_eq!(tx.stats().sent, 0);
    }
    tx.init(config).unwrap();
    ethx_qp_run(data, &mut tx);
}

/// [`ethx_qp`]'s calls on `tx` and a responder.
fn ethx_qp_run(data: &[u8], tx: &mut ethx_paxi::qp::Requester<[u8; 256], 8>) {
    use ethx_paxi::qp::{Responder, ResponderConfig, Verdict};
    use ethx_paxi::rclink::RoutingHeader;
    let mut rx = Responder::new(ResponderConfig { ack_every: 2, ..ResponderConfig::new(5, 9) }).unwrap();
    let mut now = Instant::ZERO;
    let mut sent: VecDeque<u8> = VecDeque::new();
    let mut next = 0u8;
    let mut held: Vec<(RoutingHeader, Vec<u8>)> = Vec::new();
    let mut forged = false;
    let mut u = Unstructured::new(data);
    let deliver =
        |rx: &mut Responder, now, rh: &RoutingHeader, payload: &[u8], sent: &mut VecDeque<u8>, forged: bool| {
            if rx.handle_send(now, rh) == Verdict::Deliver && !forged {
                assert_eq!(sent.pop_front(), Some(payload[0]), "delivered once, in order");
            }
        };
    while !u.is_empty() {
        let Ok(op) = QpOp::arbitrary(&mut u) else { break };
        match op {
            QpOp::Send(len) => {
                let payload = vec![next; usize::from(len % 40) + 1];
                if tx.send(now, &payload).is_ok() {
                    sent.push_back(next);
                    next = next.wrapping_add(1);
                }
            }
            QpOp::Transmit(n, fate) => {
                for _ in 0..n % 8 {
                    let Some(out) = tx.poll_transmit(now) else { break };
                    let (rh, payload) = (out.rh, out.payload.to_vec());
                    if fate & 1 != 0 {
                        continue;
                    }
                    if fate & 4 != 0 {
                        held.push((rh, payload));
                        continue;
                    }
                    deliver(&mut rx, now, &rh, &payload, &mut sent, forged);
                    if fate & 2 != 0 {
                        deliver(&mut rx, now, &rh, &payload, &mut sent, forged);
                    }
                }
            }
            QpOp::Release => {
                for (rh, payload) in held.drain(..).rev() {
                    deliver(&mut rx, now, &rh, &payload, &mut sent, forged);
                }
            }
            QpOp::Ack(lost) => {
                if let Some(ack) = rx.poll_ack(now) {
                    if !lost {
                        tx.handle_ack(now, &ack);
                    }
                }
            }
            QpOp::Wait(ns) => {
                now = now.saturating_add(Duration::from_nanos(u64::from(ns) * 64));
                tx.handle_timeout(now);
                let _ = tx.poll_event();
            }
            QpOp::Forge(to_requester, bytes) => {
                if let Ok((rh, _)) = RoutingHeader::parse(&bytes) {
                    forged = true;
                    if to_requester {
                        tx.handle_ack(now, &rh);
                    } else {
                        rx.handle_send(now, &rh);
                    }
                }
            }
        }
        assert!(tx.outstanding() <= 8);
        let _ = (tx.poll_timeout(), rx.poll_timeout());
    }
    // Once the input is used up, a perfect wire (what was held back is lost): every packet and
    // ACK arrives at once, and time moves to the next deadline when nothing moves.
    let mut steps = 0u32;
    let timeouts_before = tx.stats().timeouts;
    while !forged && !tx.is_failed() && tx.outstanding() > 0 {
        steps += 1;
        assert!(steps <= 10_000, "the QP never settled on a perfect wire: {} outstanding", tx.outstanding());
        let mut moved = false;
        while let Some(out) = tx.poll_transmit(now) {
            moved = true;
            let (rh, payload) = (out.rh, out.payload.to_vec());
            deliver(&mut rx, now, &rh, &payload, &mut sent, forged);
        }
        while let Some(ack) = rx.poll_ack(now) {
            moved = true;
            tx.handle_ack(now, &ack);
        }
        if !moved {
            now = just_past(now, [tx.poll_timeout(), rx.poll_timeout()], Duration::from_nanos(1));
            tx.handle_timeout(now);
        }
    }
    if !forged {
        // Packets lost before the wire turned perfect wait for one retry timeout (the last of
        // the QP's retries, if the others were used up); after that nothing times out.
        let timeouts = tx.stats().timeouts - timeouts_before;
        assert!(timeouts <= 1, "{timeouts} retry timeouts on a perfect wire");
        if !tx.is_failed() {
            assert!(sent.is_empty(), "payloads taken and never delivered: {sent:?}");
        }
    }
}

/// PAXI flits bit by bit (`ethx_paxi::flit`): never panics on any bytes and widths; whatever
/// parses (checked whole) yields every entry or beat without error and re-emits to a flit of the
/// same kind and size that parses to the same values.
pub fn ethx_flit(data: &[u8]) {
    use ethx_paxi::flit::{Flit, emit_apb, emit_read_data, emit_reads, emit_write, emit_write_responses};
    use ethx_paxi::paxi::{ChannelWidths, FlitKind};
    let mut u = Unstructured::new(data);
    let w = ChannelWidths {
        id: u.int_in_range(0..=32).unwrap_or(8),
        addr: u.int_in_range(1..=64).unwrap_or(64),
        data: 1 << u.int_in_range(3..=10).unwrap_or(9),
        user: u.int_in_range(0..=64).unwrap_or(16),
        atomics: u.arbitrary().unwrap_or(false),
    };
    let packed: bool = u.arbitrary().unwrap_or(false);
    let bytes = u.take_rest();
    let Ok((flit, rest)) = Flit::parse(&w, packed, bytes) else { return };
    assert_eq!(flit.as_bytes().len() + rest.len(), bytes.len());
    let mut out = vec![0u8; flit.as_bytes().len() + 16];
    let n = match flit.kind() {
        FlitKind::Reads { .. } => {
            let reads: Vec<_> = flit.reads().map(|r| r.expect("a checked flit decodes")).collect();
            emit_reads(&w, &reads, packed, &mut out).expect("decoded reads re-emit")
        }
        FlitKind::WriteResponses { .. } => {
            let resps: Vec<_> = flit.write_responses().map(|r| r.expect("a checked flit decodes")).collect();
            emit_write_responses(&w, &resps, packed, &mut out).expect("decoded responses re-emit")
        }
        FlitKind::ReadData { .. } => {
            let beats: Vec<_> = flit.read_data().map(|b| b.expect("a checked flit decodes")).collect();
            emit_read_data(&w, &beats, &mut out).expect("decoded beats re-emit")
        }
        FlitKind::WriteWithStrobes { .. } | FlitKind::WriteFull { .. } => {
            let (req, beats) = flit.write().expect("a checked flit decodes");
            let beats: Vec<_> = beats.map(|b| b.expect("a checked flit decodes")).collect();
            // All strobes set re-emits without WSTRB: the same flit but for the encode.
            emit_write(&w, &req, &beats, &mut out).expect("a decoded write re-emits")
        }
        FlitKind::ApbRegister { .. } | FlitKind::ApbMessage => {
            emit_apb(&flit.apb().expect("a checked flit decodes"), &mut out).expect("APB re-emits")
        }
    };
    let (again, _) = Flit::parse(&w, packed, &out[..n]).expect("a re-emitted flit parses");
    match flit.kind() {
        FlitKind::WriteWithStrobes { beats } if again.kind() == (FlitKind::WriteFull { beats }) => {}
        kind => assert_eq!(again.kind(), kind),
    }
    assert_eq!(format!("{:?}", again.reads().collect::<Vec<_>>()), format!("{:?}", flit.reads().collect::<Vec<_>>()));
    assert_eq!(again.read_data().collect::<Vec<_>>(), flit.read_data().collect::<Vec<_>>());
}

/// UCIe flit headers and the adapter CRC (`ucie_adapter::header`, `ucie_adapter::crc`): never
/// panics on any bytes; every header that parses (either layout, Retry on or off) re-emits to the
/// same bytes with its reserved bits cleared and parses equal; a flit of any format whose CRCs
/// are sealed checks, and one whose covered bytes then change by one bit does not.
pub fn ucie_flit(data: &[u8]) {
    use ucie_adapter::crc::{Format, check, seal};
    use ucie_adapter::header::FlitHeader;
    let Some((&choice, rest)) = data.split_first() else { return };
    let retry = choice & 1 != 0;
    if let [b0, b1, ..] = *rest {
        if let Ok(h) = FlitHeader::parse_256([b0, b1], retry) {
            let out = h.emit_256(retry).expect("a parsed header emits");
            assert_eq!(FlitHeader::parse_256(out, retry), Ok(h));
            let reserved_0 = if retry { 0xFF } else { 0xF0 };
            let reserved_1 = if retry { 0xFF } else { 0xC0 };
            let marker_ok = out[0] == b0 & reserved_0;
            assert!(marker_ok && out[1] == b1 & reserved_1, "{:02x?} -> {out:02x?}", [b0, b1]);
        }
        if let Ok(h) = FlitHeader::parse_68([b0, b1], retry) {
            let out = h.emit_68(retry).expect("a parsed header emits");
            assert_eq!(FlitHeader::parse_68(out, retry), Ok(h));
        }
    }
    let format = [
        Format::Flit68,
        Format::Standard256EndHeader,
        Format::Standard256StartHeader,
        Format::LatencyOptimized256,
        Format::LatencyOptimized256Optional,
    ][usize::from(choice >> 1) % 5];
    let _ = check(format, rest);
    if rest.len() >= format.flit_len() {
        let mut flit = rest[..format.flit_len()].to_vec();
        seal(format, &mut flit).expect("a flit of its format's length seals");
        assert_eq!(check(format, &flit), Ok(()));
        let c = format.coverage()[usize::from(choice >> 4) % format.coverage().len()];
        let at = c.start + usize::from(choice) % (c.end - c.start);
        flit[at] ^= 1 << (choice % 8);
        assert!(check(format, &flit).is_err(), "a one-bit error in covered bytes is caught");
    }
    ucie_flit_view(choice, format, retry, rest);
    ucie_stream68(choice, retry, rest);
}

/// The Format 2 stream reader: any bytes fed in any beat size come out as a gapless sequence
/// of items — each 68-byte flit equal to the input bytes at its offset, each PDS followed by
/// exactly its padding, so the next item starts on a 256-byte boundary.
fn ucie_stream68(choice: u8, retry: bool, rest: &[u8]) {
    use ucie_adapter::stream68::{FLIT_LEN, Item, UNIT, Unpacker, pds_len};
    let mut u = Unpacker::new(retry);
    let mut next = 0usize;
    for c in rest.chunks(usize::from(choice % 97) + 1) {
        u.push_beat(c, choice, |i| match i {
            Item::Flit { at, flit } => {
                assert_eq!(at, next, "items are gapless");
                assert_eq!(&flit[..], &rest[at..at + FLIT_LEN]);
                next = at + FLIT_LEN;
            }
            Item::Pds { at } => {
                assert_eq!(at, next, "items are gapless");
                next = at + pds_len(at);
                assert_eq!(next % UNIT, 0);
            }
        });
    }
    assert_eq!(u.position(), rest.len());
}

/// The checked flit view: a flit (sealed first when `choice` bit 7 says so) either parses or is
/// a typed error; one that parses rebuilds from its payload and repr into a flit that parses
/// to the same payload and repr.
fn ucie_flit_view(choice: u8, format: ucie_adapter::crc::Format, retry: bool, rest: &[u8]) {
    use ucie_adapter::flit::{Flit, Protocol};
    let protocol =
        [Protocol::Pcie, Protocol::Cxl, Protocol::Streaming, Protocol::Management][usize::from(choice >> 5) % 4];
    let mut flit = rest[..format.flit_len().min(rest.len())].to_vec();
    if choice & 0x80 != 0 && flit.len() == format.flit_len() {
        ucie_adapter::crc::seal(format, &mut flit).unwrap();
    }
    let Ok(f) = Flit::parse(format, protocol, retry, &flit) else { return };
    let map = f.map().expect("a parsed flit has a map");
    let payload = [f.payload()[0], f.payload()[1]].concat();
    assert_eq!(payload.len(), map.payload_len());
    let mut again = vec![0xA5; format.flit_len()];
    map.write_payload(&mut again, &payload).unwrap();
    f.repr().emit(&map, retry, &mut again).unwrap();
    let g = Flit::parse(format, protocol, retry, &again).expect("a rebuilt flit parses");
    assert_eq!((g.repr(), g.map()), (f.repr(), f.map()));
    assert_eq!([g.payload()[0], g.payload()[1]].concat(), payload);
}

/// Sideband packets (`ucie_adapter::sideband`): never panics on any bytes; whatever parses
/// re-emits to bytes that parse equal (reserved bits cleared), and its message, if any,
/// survives `Message::to_packet`.
pub fn ucie_sideband(data: &[u8]) {
    use ucie_adapter::sideband::{Message, Packet};
    let mut rest = data;
    while let Ok((p, n)) = Packet::parse(rest) {
        let mut out = [0u8; 16];
        assert_eq!(p.emit(&mut out), Ok(n));
        assert_eq!(Packet::parse(&out[..n]), Ok((p, n)));
        if let Packet::Message(m) = p {
            let typed = Message::from_packet(&m);
            assert_eq!(Message::from_packet(&typed.to_packet(m.srcid, m.dstid)), typed);
        }
        rest = &rest[n..];
    }
}

#[derive(Arbitrary, Debug)]
enum UcieRetryOp {
    /// Queue up to n payload flits at A.
    Send(u8),
    /// `n` flit times; each direction's flit suffers `fate` (bit 0: erased, bit 1: one bit
    /// flipped at `at`).
    Slots { n: u8, a_fate: u8, b_fate: u8, at: u16 },
    /// A flit with these header bytes, this payload byte and good CRCs, into B.
    Forge([u8; 2], u8),
    /// The link retrains (both sides see it).
    Retrain,
    /// Time passes.
    Wait(u32),
}

/// UCIe retry (`ucie_adapter::retry`): two machines over a link with erasures and bit errors,
/// driven by arbitrary operations, some flits sent with `lp_corrupt_crc`; never panics. Unless a
/// forged flit was injected: B delivers A's flits exactly once and in order and never a
/// poisoned one, no Uncorrectable error other than the Adapter Timeout is reported, and once
/// the link is clean again every flit queued arrives.
pub fn ucie_retry(data: &[u8]) {
    use ucie_adapter::crc::Format;
    use ucie_adapter::flit::Protocol;
    use ucie_adapter::retry::RetryConfig;
    let config = RetryConfig::new(Format::Standard256StartHeader, Protocol::Cxl);
    let (mut a, mut b) = (UcieR::EMPTY, UcieR::EMPTY);
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive the
    // unconfigured machines (Format 1: they send and accept nothing) with the whole input: no
    // panic, the same invariants, and `init` leaves nothing behind.
    if data.len() % 4 == 3 {
        ucie_retry_run(data, &mut a, &mut b);
        assert_eq!((a.stats().sent, b.stats().delivered), (0, 0));
    }
    a.init(config);
    b.init(config);
    ucie_retry_run(data, &mut a, &mut b);
}

type UcieR = ucie_adapter::retry::Retry<[u8; 16 * 256], 16>;

/// [`ucie_retry`]'s calls on `a` and `b`.
fn ucie_retry_run(data: &[u8], a: &mut UcieR, b: &mut UcieR) {
    use ucie_adapter::crc::{Format, seal};
    use ucie_adapter::retry::{Received, RetryEvent, UncorrectableCause};
    const FMT: Format = Format::Standard256StartHeader;
    type R = UcieR;
    let (mut queued, mut delivered, mut forged) = (0u64, 0u64, false);
    let mut now = Instant::ZERO;
    let mut u = Unstructured::new(data);
    let mut out = [0u8; 256];
    // One flit time's hop from `tx` to `rx`: what `rx` delivers, if anything.
    fn hop(tx: &mut R, rx: &mut R, now: Instant, fate: u8, at: u16, out: &mut [u8; 256]) -> Option<u64> {
        tx.poll_transmit(now, out)?;
        if fate & 1 != 0 {
            out.fill(0xA5);
        }
        if fate & 2 != 0 {
            out[usize::from(at) % 256] ^= 1 << (at % 8);
        }
        match rx.handle_flit(now, out) {
            Received::Deliver { flit, .. } => Some(u64::from_le_bytes(flit.payload()[0][..8].try_into().unwrap())),
            _ => None,
        }
    }
    let slot = |a: &mut R, b: &mut R, now: Instant, fates: (u8, u8, u16), delivered: &mut u64, forged: bool| {
        let mut out = [0u8; 256];
        if let Some(n) = hop(a, b, now, fates.0, fates.2, &mut out) {
            if !forged {
                assert_ne!(n, u64::MAX, "a poisoned flit is never delivered");
                assert_eq!(n, *delivered, "delivered once, in order");
            }
            *delivered += 1;
        }
        assert_eq!(hop(b, a, now, fates.1, fates.2, &mut out), None, "B sends no payload");
        for m in [a, b] {
            while let Some(e) = m.poll_event() {
                match e {
                    RetryEvent::Retrain(_) => m.retrain(),
                    RetryEvent::Uncorrectable(c) => {
                        assert!(forged || c == UncorrectableCause::RetryTimeout, "{c:?}");
                    }
                    _ => {}
                }
            }
        }
    };
    while !u.is_empty() {
        let Ok(op) = UcieRetryOp::arbitrary(&mut u) else { break };
        match op {
            UcieRetryOp::Send(n) => {
                if n & 0x80 != 0 {
                    // lp_corrupt_crc: a poisoned flit, which must never be delivered.
                    let _ = a.send_corrupted_with(now, |f: &mut [u8]| {
                        f[0] = 0x80;
                        f[2..10].copy_from_slice(&u64::MAX.to_le_bytes());
                    });
                }
                for _ in 0..n % 32 {
                    let q = queued;
                    let fill = |f: &mut [u8]| {
                        f[0] = 0x80;
                        f[2..10].copy_from_slice(&q.to_le_bytes());
                    };
                    if a.send_with(now, fill).is_err() {
                        break;
                    }
                    queued += 1;
                }
            }
            UcieRetryOp::Slots { n, a_fate, b_fate, at } => {
                for _ in 0..n % 64 {
                    now = now.saturating_add(Duration::from_nanos(1));
                    slot(a, b, now, (a_fate, b_fate, at), &mut delivered, forged);
                }
            }
            UcieRetryOp::Forge(h, fill) => {
                out.fill(fill);
                out[..2].copy_from_slice(&h);
                seal(FMT, &mut out).unwrap();
                forged = true;
                let _ = b.handle_flit(now, &out);
            }
            UcieRetryOp::Retrain => {
                a.retrain();
                b.retrain();
            }
            UcieRetryOp::Wait(ns) => {
                now = now.saturating_add(Duration::from_nanos(u64::from(ns)));
                a.handle_timeout(now);
                b.handle_timeout(now);
            }
        }
    }
    if forged {
        return;
    }
    for _ in 0..20_000 {
        if delivered == queued && a.buffer().is_empty() {
            return;
        }
        now = now.saturating_add(Duration::from_nanos(1));
        slot(a, b, now, (0, 0, 0), &mut delivered, false);
    }
    panic!("stalled: {delivered} of {queued} delivered, {} unacknowledged", a.buffer().len());
}

#[derive(Arbitrary, Debug)]
enum UcieAdapterOp {
    /// Both dies' RDI reports this status.
    Rdi(ucie_adapter::lsm::LinkStatus),
    /// A protocol layer's `lp_state_req` (die, stack).
    Request(bool, bool, ucie_adapter::lsm::LinkRequest),
    /// A protocol layer's `lp_rx_active_sts`.
    RxActive(bool, bool, bool),
    /// `lp_linkerror`.
    LinkError(bool, bool),
    /// Up to n flits from a die's stack.
    Send(bool, bool, u8),
    /// n flit times of mainband and sideband; `fate` bit 0 corrupts a flit, bit 1 drops a
    /// sideband packet.
    Slots(u8, u8),
    /// Raw bytes into a die's sideband.
    Sideband(bool, [u8; 16]),
    /// Raw bytes into a die's mainband.
    Flit(bool, Vec<u8>),
    /// Time passes.
    Wait(u32),
}

/// The whole UCIe adapter (`ucie_adapter::adapter::Adapter`), two dies driven by arbitrary RDI
/// changes, requests, traffic, raw sideband packets and flits: never panics; every flit it
/// transmits has good CRCs and every sideband packet it sends parses back to itself; a stack's
/// status is always one of the nine encodings; and once the input is used up, a clean restart
/// (RDI Reset, then Active, perfect bands) brings every stack parameter exchange enables to
/// Active on both dies, with the same parameters, and carries flits both ways, unless the two
/// dies' capabilities have nothing in common.
pub fn ucie_adapter(data: &[u8]) {
    use ucie_adapter::adapter::Adapter;
    use ucie_adapter::param::{AdapterCaps as A, CxlCaps, ExchangeConfig, Role};
    type D = Adapter<[u8; 16 * 256], 16>;
    let caps = A::FLIT_68B
        | A::CXL_256B
        | A::PCIE_FLIT
        | A::RETRY
        | A::STACK0
        | A::STACK1
        | A::MULTI_PROTOCOL
        | A::CXL_LATOPT_FMT6;
    let mut u = Unstructured::new(data);
    // The first byte picks each side's capabilities from a few link kinds.
    let kind = u.arbitrary::<u8>().unwrap_or(0);
    let pick = |k: u8| match k % 4 {
        0 => caps,
        1 => A::FLIT_68B | A::RETRY | A::STACK0,
        2 => A::STREAMING | A::RETRY | A::STACK0 | A::STD_START_HEADER,
        _ => A::FLIT_68B | A::PCIE_FLIT | A::STACK0,
    };
    let role = |k: u8, up: bool| {
        if k % 4 == 2 {
            Role::Symmetric
        } else if up {
            Role::Upstream
        } else {
            Role::Downstream
        }
    };
    let cxl = CxlCaps::CXL_IO | CxlCaps::CXL_MEM | CxlCaps::PCIE;
    // Bit 7: Enhanced Multi-Protocol, PCIe on stack 1 limited to half the link.
    let config = |k: u8, up: bool| {
        let c = ExchangeConfig::new(role(k, up), pick(k), cxl);
        if kind & 0x80 == 0 {
            return c;
        }
        let enhanced = A::ENHANCED_MULTI_PROTOCOL | A::STACK0 | A::STACK1 | A::STD_START_HEADER | A::STACK1_BW_LIMIT;
        let multi =
            ucie_adapter::param::MultiProtocolCaps::FLIT_68B | ucie_adapter::param::MultiProtocolCaps::PCIE_FLIT;
        ExchangeConfig { adapter: c.adapter | enhanced, ..c }.with_stack1(multi, CxlCaps::PCIE)
    };
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive two
    // unconfigured adapters (`EMPTY`) with the whole input: the same invariants hold, and
    // `init` leaves nothing behind.
    let rest = u.take_rest();
    let mut dies: Box<[D; 2]> = Box::new([Adapter::EMPTY, Adapter::EMPTY]);
    if data.len() % 4 == 3 {
        ucie_adapter_run(rest, &mut dies, false);
    }
    dies[0].init(config(kind, false));
    dies[1].init(config(kind >> 2, true));
    ucie_adapter_run(rest, &mut dies, true);
}

/// [`ucie_adapter`]'s calls on two adapters, [`Adapter::init`](ucie_adapter::adapter::Adapter::init)ed
/// or not (`configured`).
fn ucie_adapter_run(data: &[u8], dies: &mut [ucie_adapter::adapter::Adapter<[u8; 16 * 256], 16>; 2], configured: bool) {
    use ucie_adapter::adapter::AdapterEvent;
    use ucie_adapter::crc::check;
    use ucie_adapter::header::protocol_id;
    use ucie_adapter::lsm::{LinkRequest, LinkStatus};
    use ucie_adapter::param::ExchangeState;
    use ucie_adapter::sideband::Packet;
    type D = ucie_adapter::adapter::Adapter<[u8; 16 * 256], 16>;
    let mut u = Unstructured::new(data);
    let mut now = Instant::ZERO;
    let mut sideband: [VecDeque<Packet>; 2] = [VecDeque::new(), VecDeque::new()];
    // Each die's `pl_rx_active_req` per stack, as its events last said.
    let mut rx_active = [[false; 2]; 2];
    let pump = |dies: &mut [D; 2], sideband: &mut [VecDeque<Packet>; 2], rx_active: &mut [[bool; 2]; 2], now| {
        for i in 0..2 {
            while let Some(e) = dies[i].poll_event() {
                if let AdapterEvent::RxActiveRequest { stack, request } = e {
                    rx_active[i][usize::from(stack & 1)] = request;
                    dies[i].handle_rx_active(now, stack, request);
                }
            }
            while let Some(p) = dies[i].poll_sideband() {
                let mut out = [0u8; 16];
                let n = p.emit(&mut out).expect("the adapter's packets encode");
                assert_eq!(Packet::parse(&out[..n]), Ok((p, n)));
                sideband[1 - i].push_back(p);
            }
            for stack in 0..2 {
                assert!(LinkStatus::from_bits(dies[i].status(stack).bits()).is_some());
            }
        }
    };
    while !u.is_empty() {
        let Ok(op) = UcieAdapterOp::arbitrary(&mut u) else { break };
        match op {
            UcieAdapterOp::Rdi(s) => {
                for d in dies.iter_mut() {
                    d.handle_rdi(now, s);
                }
            }
            UcieAdapterOp::Request(die, stack, r) => {
                let _ = dies[usize::from(die)].handle_request(now, u8::from(stack), r);
            }
            UcieAdapterOp::RxActive(die, stack, v) => dies[usize::from(die)].handle_rx_active(now, u8::from(stack), v),
            UcieAdapterOp::LinkError(die, v) => dies[usize::from(die)].handle_linkerror(now, v),
            UcieAdapterOp::Send(die, stack, n) => {
                for k in 0..n % 8 {
                    // Protocol IDs 00b (refused: a NOP) to 11b; bit 7 of n poisons the first.
                    let header = ucie_adapter::header::FlitHeader {
                        protocol_id: k % 4,
                        ..ucie_adapter::header::FlitHeader::NOP
                    };
                    let d = &mut dies[usize::from(die)];
                    let fill = |map: &ucie_adapter::flit::Map, f: &mut [u8]| f[map.payload[0].start] = k;
                    let r = if k == 0 && n & 0x80 != 0 {
                        d.send_corrupted_with(now, u8::from(stack), header, fill)
                    } else {
                        d.send_with(now, u8::from(stack), header, fill)
                    };
                    if r.is_err() {
                        break;
                    }
                }
            }
            UcieAdapterOp::Slots(n, fate) => {
                for _ in 0..n % 32 {
                    now = now.saturating_add(Duration::from_nanos(1));
                    for i in 0..2 {
                        if let Some(p) = sideband[i].pop_front() {
                            if fate & 2 == 0 {
                                dies[i].handle_sideband(now, &p);
                            }
                        }
                    }
                    for i in 0..2 {
                        let Some(format) = dies[i].negotiated().map(|n| n.format) else { continue };
                        let mut out = vec![0u8; format.flit_len()];
                        if dies[i].poll_transmit(now, &mut out).is_some() {
                            assert_eq!(check(format, &out), Ok(()), "transmitted flits have good CRCs");
                            if fate & 1 != 0 {
                                let at = usize::from(fate) % out.len();
                                out[at] ^= 0x10;
                            }
                            let _ = dies[1 - i].handle_flit(now, &out);
                        }
                    }
                    pump(dies, &mut sideband, &mut rx_active, now);
                }
            }
            UcieAdapterOp::Sideband(die, bytes) => {
                if let Ok((p, _)) = Packet::parse(&bytes) {
                    dies[usize::from(die)].handle_sideband(now, &p);
                }
            }
            UcieAdapterOp::Flit(die, bytes) => {
                let _ = dies[usize::from(die)].handle_flit(now, &bytes);
            }
            UcieAdapterOp::Wait(ns) => {
                now = now.saturating_add(Duration::from_nanos(u64::from(ns) * 64));
                for d in dies.iter_mut() {
                    d.handle_timeout(now);
                }
            }
        }
        pump(dies, &mut sideband, &mut rx_active, now);
    }
    // Once the input is used up, a clean restart: the protocol layers release `lp_linkerror`
    // and follow `pl_rx_active_req` again (the input may have dropped `lp_rx_active_sts` while
    // it was asserted), the physical layer resets the link and trains it again (RDI Reset, then Active; what the
    // sideband held is lost) after LinkError's 16 ms residency, the protocol layers ask for
    // Active on every stack not in it, and both bands are perfect. Unless the dies' capabilities have nothing in common
    // (parameter exchange fails), both must agree on the parameters and bring every stack the
    // exchange enabled to Active; then three flits from each die on each such stack arrive.
    if !configured || dies.iter().any(|d| d.flit_len() == 0 && d.negotiated().is_some()) {
        return; // Unconfigured, or Format 1 (raw): the adapter carries nothing.
    }
    now = now.saturating_add(Duration::from_millis(17));
    for (d, rx_active) in dies.iter_mut().zip(rx_active) {
        d.handle_linkerror(now, false);
        for stack in 0..2u8 {
            d.handle_rx_active(now, stack, rx_active[usize::from(stack)]);
        }
        d.handle_rdi(now, LinkStatus::Reset);
    }
    pump(dies, &mut sideband, &mut rx_active, now);
    sideband = [VecDeque::new(), VecDeque::new()];
    for d in dies.iter_mut() {
        d.handle_rdi(now, LinkStatus::Active);
    }
    // One flit time on perfect bands: the sideband's packets arrive, each die sends a flit and
    // the other takes it, timers run and events are answered. Returns which dies were handed a
    // payload flit.
    let flit_time = |dies: &mut [D; 2], sideband: &mut [VecDeque<Packet>; 2], rx_active: &mut _, now| {
        let mut delivered = [false; 2];
        for i in 0..2 {
            while let Some(p) = sideband[i].pop_front() {
                dies[i].handle_sideband(now, &p);
            }
        }
        for i in 0..2 {
            let Some(format) = dies[i].negotiated().map(|n| n.format) else { continue };
            let mut out = vec![0u8; format.flit_len()];
            if dies[i].poll_transmit(now, &mut out).is_some() {
                delivered[1 - i] = dies[1 - i].handle_flit(now, &out).is_some();
            }
        }
        for d in dies.iter_mut() {
            d.handle_timeout(now);
        }
        pump(dies, sideband, rx_active, now);
        delivered
    };
    let up = |d: &D| {
        d.negotiated().is_some_and(|n| (0..2u8).all(|s| !n.stacks[usize::from(s)] || d.status(s) == LinkStatus::Active))
    };
    let mut slots = 0u32;
    while !dies.iter().all(up) {
        if dies.iter().any(|d| matches!(d.exchange(), ExchangeState::Failed(_))) {
            return;
        }
        slots += 1;
        let states: Vec<_> = dies.iter().map(|d| (d.exchange(), d.status(0), d.status(1))).collect();
        assert!(slots <= 100_000, "a clean restart never brought the link up: {states:?}");
        now = now.saturating_add(Duration::from_nanos(1));
        for d in dies.iter_mut() {
            for stack in 0..2u8 {
                if d.status(stack) != LinkStatus::Active {
                    let _ = d.handle_request(now, stack, LinkRequest::Nop);
                    let _ = d.handle_request(now, stack, LinkRequest::Active);
                }
            }
        }
        flit_time(dies, &mut sideband, &mut rx_active, now);
    }
    let negotiated = dies[0].negotiated();
    assert_eq!(negotiated, dies[1].negotiated(), "both dies agree");
    let Some(n) = negotiated else { return };
    // Flits each die has still to send per stack, has sent, and has received.
    let mut left = [n.stacks.map(|on| if on { 3u8 } else { 0 }); 2];
    let (mut sent, mut arrived) = ([0u32; 2], [0u32; 2]);
    let mut slots = 0u32;
    while left != [[0; 2]; 2] || arrived != [sent[1], sent[0]] {
        slots += 1;
        assert!(slots <= 10_000, "flits sent after a clean restart never arrived: {arrived:?} of {sent:?}");
        now = now.saturating_add(Duration::from_nanos(1));
        for i in 0..2 {
            for stack in 0..2u8 {
                let cxl = n.protocol_of(stack).layout_protocol() == ucie_adapter::flit::Protocol::Cxl;
                let protocol_id = if cxl { protocol_id::CXL_CACHEMEM } else { protocol_id::PCIE };
                let header = ucie_adapter::header::FlitHeader { protocol_id, ..ucie_adapter::header::FlitHeader::NOP };
                let left = &mut left[i][usize::from(stack)];
                if *left > 0 && dies[i].can_send(stack) {
                    dies[i].send(now, stack, header, &[*left]).unwrap();
                    (*left, sent[i]) = (*left - 1, sent[i] + 1);
                }
            }
        }
        let delivered = flit_time(dies, &mut sideband, &mut rx_active, now);
        for (a, d) in arrived.iter_mut().zip(delivered) {
            *a += u32::from(d);
        }
    }
}

/// The CXL 68B flit (`cxl_types::flit68`): never panics on any 66 bytes; a sealed flit checks
/// and one with a flipped covered bit does not; a protocol flit header or a control flit that
/// parses re-emits to bytes that parse the same.
pub fn cxl_flit68(data: &[u8]) {
    use cxl_types::flit68::control::ControlFlit;
    use cxl_types::flit68::crc::{check, seal};
    use cxl_types::flit68::header::{FlitHeader, HeaderError};
    let Some((&choice, rest)) = data.split_first() else { return };
    let Some(flit) = rest.first_chunk::<66>() else { return };
    let _ = check(flit);
    let mut sealed = *flit;
    seal(&mut sealed);
    assert_eq!(check(&sealed), Ok(()));
    let bit = usize::from(choice) * 2 % 512;
    sealed[bit / 8] ^= 1 << (bit % 8);
    assert!(check(&sealed).is_err(), "a one-bit error is caught");
    match FlitHeader::parse(*flit.first_chunk::<4>().unwrap()) {
        Ok(h) => assert_eq!(FlitHeader::parse(h.emit()), Ok(h)),
        Err(HeaderError::Control) => {
            let m = ControlFlit::parse(flit).expect("a Type 1 flit is a control flit");
            assert_eq!(ControlFlit::parse(&m.emit()), Ok(m));
        }
        Err(HeaderError::ReservedSlotFormat { .. }) => {}
    }
}

/// One step of the `cxl_pack68` target.
#[derive(Arbitrary, Debug)]
enum Pack68Op {
    /// Queue a message (kept only when it encodes in 68B and suits the direction), with data of
    /// this shape for a data header.
    Push(cxl_types::msg::Msg, u8, bool, bool),
    /// Pack a flit, seal it, check it and unpack it at the peer.
    Pack,
    /// Give arbitrary bytes to a second unpacker.
    Raw([u8; 64]),
}

/// The 68B packer and unpacker (`cxl_types::flit68::pack`): whatever the packer makes, the
/// peer's unpacker accepts, and every message comes out once, in order per kind, with its data;
/// arbitrary flit bytes never panic an unpacker, and a refused flit leaves it unchanged.
pub fn cxl_pack68(data: &[u8]) {
    use cxl_types::flit68::crc;
    use cxl_types::flit68::header::Credit;
    use cxl_types::flit68::pack::{Item, Packer, Payload, Queues, Shape, Unpacker};
    use cxl_types::flit68::slot::Direction;
    use cxl_types::msg::{Msg, Width};
    let mut u = Unstructured::new(data);
    let (Ok(down), Ok(mdh)) = (bool::arbitrary(&mut u), bool::arbitrary(&mut u)) else { return };
    let direction = if down { Direction::Downstream } else { Direction::Upstream };
    let mut queues = Queues::<16>::default();
    let mut packer = Packer::new(direction).with_mdh(mdh);
    let mut peer = Unpacker::new(direction).with_mdh(mdh);
    let mut raw = Unpacker::new(direction).with_mdh(mdh);
    let mut sent: Vec<(Msg, Option<Payload>)> = Vec::new();
    let mut got: Vec<(Msg, Option<Payload>)> = Vec::new();
    let mut deliver = |item: Item<'_>| match item {
        Item::Msg(m) => got.push((m, None)),
        Item::Data(m, p) => got.push((m, Some(*p))),
        Item::Mac(_) => panic!("the packer sends no MAC"),
    };
    let pack_one =
        |queues: &mut Queues<16>, packer: &mut Packer, peer: &mut Unpacker, deliver: &mut dyn FnMut(Item<'_>)| {
            let mut flit = [0u8; 66];
            let body: &mut [u8; 64] = flit.first_chunk_mut().unwrap();
            let packed = packer.pack(queues, [Credit::NONE; 3], body).expect("queued messages pack");
            if packed.is_none() {
                return false;
            }
            crc::seal(&mut flit);
            assert_eq!(crc::check(&flit), Ok(()));
            peer.unpack(flit.first_chunk().unwrap(), deliver).expect("the peer accepts what the packer makes");
            true
        };
    while !u.is_empty() {
        let Ok(op) = Pack68Op::arbitrary(&mut u) else { break };
        match op {
            Pack68Op::Push(msg, seed, half, be) => {
                let kind = msg.kind();
                if kind.downstream() != down {
                    continue;
                }
                let Ok(bits) = msg.encode(Width::Flit68) else { continue };
                let msg = Msg::decode(kind, bits, Width::Flit68).unwrap();
                let shape = Shape { half, be };
                let shape = if shape.allowed(kind) { shape } else { Shape::default() };
                let payload = kind.has_data().then(|| {
                    let mut bytes: [u8; 64] = core::array::from_fn(|i| seed.wrapping_mul(i as u8 + 1));
                    if shape.half {
                        bytes[32..].fill(0);
                    }
                    Payload { bytes, half: shape.half, be: shape.be.then_some(u64::from(seed) << 8 | 1) }
                });
                if queues.push(msg, payload).is_ok() {
                    sent.push((msg, payload));
                }
            }
            Pack68Op::Pack => {
                pack_one(&mut queues, &mut packer, &mut peer, &mut deliver);
            }
            Pack68Op::Raw(bytes) => {
                let before = raw.pending_chunks();
                if raw.unpack(&bytes, |_| ()).is_err() {
                    assert_eq!(raw.pending_chunks(), before, "a refused flit changes nothing");
                }
            }
        }
    }
    while pack_one(&mut queues, &mut packer, &mut peer, &mut deliver) {}
    assert_eq!(peer.pending_chunks(), 0);
    assert_eq!(packer.pending_chunks(), 0);
    for kind in cxl_types::msg::Kind::ALL {
        let a = sent.iter().filter(|(m, _)| m.kind() == kind);
        let b = got.iter().filter(|(m, _)| m.kind() == kind);
        assert!(a.eq(b), "{kind:?} messages come out as they went in");
    }
}

/// One step of the `cxl_llr68` target.
#[derive(Arbitrary, Debug)]
enum Llr68Op {
    /// A queues up to this many protocol flits, each followed by 0–4 all-data flits.
    Send(u8),
    /// One flit time each way; bit 0 of a fate flips the bit at the position given, bit 1
    /// replaces the flit with these bytes under a valid CRC (a forgery no CRC can catch).
    Step(u8, u8, u16, [u8; 8]),
    /// Several clean flit times.
    Run(u8),
}

/// The 68B link-layer retry machine (`cxl_types::flit68::llr`), A sending to B over a channel
/// that corrupts what the input says: never panics; unless a flit was forged under a valid CRC,
/// B delivers every protocol and all-data flit exactly once and in order, never mistakes a
/// control flit for data inside an all-data run, and after clean flit times has everything.
pub fn cxl_llr68(data: &[u8]) {
    use cxl_types::flit68::llr::LlrConfig;
    let config = LlrConfig { timeout: 64, max_num_retry: 4, max_num_phy_reinit: 2, ..LlrConfig::default() };
    let (mut a, mut b) = (Llr68::EMPTY, Llr68::EMPTY);
    // A quarter of inputs (chosen by length, so the corpus keeps its meaning) first drive the
    // unconfigured machines with the whole input: no panic, and `init` leaves nothing behind.
    if data.len() % 4 == 3 {
        cxl_llr68_run(data, &mut a, &mut b);
    }
    a.init(config).unwrap();
    b.init(config).unwrap();
    cxl_llr68_run(data, &mut a, &mut b);
}

type Llr68 = cxl_types::flit68::llr::Llr<[u8; cxl_types::flit68::llr::ENTRY * 24], 24>;

/// [`cxl_llr68`]'s calls on `a` and `b`.
fn cxl_llr68_run(data: &[u8], a: &mut Llr68, b: &mut Llr68) {
    use cxl_types::flit68::crc;
    use cxl_types::flit68::llr::{Delivered, ENTRY, Event, FlitKind, LocalState};
    type L = Llr68;
    let mut u = Unstructured::new(data);
    struct Rx {
        next: u64,
        expect: u8,
        forged: bool,
    }
    let mut rx = Rx { next: 0, expect: 0, forged: false };
    let mut queued = 0u64;
    fn step(a: &mut L, b: &mut L, rx: &mut Rx, fates: (u8, u8, u16, [u8; 8])) {
        let mut out = [0u8; ENTRY];
        if a.poll_transmit(&mut out).is_some() {
            damage(&mut out, fates.0, fates.2, fates.3, &mut rx.forged);
            match b.handle_flit(&out, rx.expect > 0) {
                Some(Delivered::Protocol) => {
                    let n = u64::from_le_bytes(out[8..16].try_into().unwrap());
                    if !rx.forged {
                        assert_eq!(rx.expect, 0, "a protocol flit inside an all-data run");
                        assert_eq!(n, rx.next, "delivered once, in order");
                    }
                    rx.next += 1;
                    rx.expect = out[63] % 5;
                }
                Some(Delivered::AllData) => {
                    let n = u64::from_le_bytes(out[..8].try_into().unwrap());
                    if !rx.forged {
                        assert_eq!(n, rx.next, "all-data flits once, in order");
                    }
                    rx.next += 1;
                    rx.expect = rx.expect.saturating_sub(1);
                }
                Some(Delivered::Control(_)) | None => {}
            }
        }
        if b.poll_transmit(&mut out).is_some() {
            damage(&mut out, fates.1, fates.2, fates.3, &mut rx.forged);
            assert!(
                rx.forged || !matches!(a.handle_flit(&out, false), Some(Delivered::Protocol | Delivered::AllData)),
                "B sends no data"
            );
        }
        for m in [a, b] {
            while let Some(e) = m.poll_event() {
                match e {
                    Event::PhyReinit => m.handle_phy_reinit_done(),
                    Event::Abort => {}
                    other => assert!(rx.forged, "{other:?}"),
                }
            }
        }
    }
    fn damage(out: &mut [u8; ENTRY], fate: u8, at: u16, bytes: [u8; 8], forged: &mut bool) {
        if fate & 1 != 0 {
            out[usize::from(at / 8) % ENTRY] ^= 1 << (at % 8);
        }
        if fate & 2 != 0 {
            out[..8].copy_from_slice(&bytes);
            crc::seal(out);
            *forged = true;
        }
    }
    while !u.is_empty() {
        let Ok(op) = Llr68Op::arbitrary(&mut u) else { break };
        match op {
            Llr68Op::Send(n) => {
                for i in 0..n % 16 {
                    if !a.can_send() {
                        break;
                    }
                    let run = (i ^ n) % 5;
                    let mut body = [0u8; 64];
                    body[8..16].copy_from_slice(&queued.to_le_bytes());
                    body[63] = run;
                    a.send(&body, FlitKind::Protocol, run > 0).unwrap();
                    queued += 1;
                    for k in 0..run {
                        let mut data = [0x5Au8; 64];
                        data[..8].copy_from_slice(&queued.to_le_bytes());
                        a.send(&data, FlitKind::AllData, k + 1 < run).unwrap();
                        queued += 1;
                    }
                }
            }
            Llr68Op::Step(fa, fb, at, bytes) => step(a, b, &mut rx, (fa, fb, at, bytes)),
            Llr68Op::Run(n) => {
                for _ in 0..n {
                    step(a, b, &mut rx, (0, 0, 0, [0; 8]));
                }
            }
        }
    }
    for _ in 0..20_000 {
        if rx.next >= queued || rx.forged || [a.local_state(), b.local_state()].contains(&LocalState::Abort) {
            break;
        }
        step(a, b, &mut rx, (0, 0, 0, [0; 8]));
    }
    if !rx.forged && ![a.local_state(), b.local_state()].contains(&LocalState::Abort) {
        assert_eq!(rx.next, queued, "every flit arrives on a clean link");
    }
}

/// One step of the `cxl_pack256` target.
#[derive(Arbitrary, Debug)]
enum Pack256Op {
    /// Queue a message (kept only when it encodes in the width and suits the direction), with
    /// data for a data header.
    Push(cxl_types::msg::Msg, u8),
    /// Pack a flit and unpack it at the peer.
    Pack,
    /// Give arbitrary bytes to a second unpacker.
    Raw(Box<[u8; 256]>),
}

/// The 256B packer and unpacker (`cxl_types::flit256::pack`), HBR or PBR, standard or
/// latency-optimized: whatever the packer
/// makes, the peer accepts, and every message comes out once, in order per kind, with its data;
/// arbitrary flits never panic an unpacker, and a refused flit leaves it unchanged.
pub fn cxl_pack256(data: &[u8]) {
    use cxl_types::flit68::pack::Queues;
    use cxl_types::flit68::slot::Direction;
    use cxl_types::flit256::Layout;
    use cxl_types::flit256::crd::Crd;
    use cxl_types::flit256::pack::{Data, Item, Packer, Unpacker, has_trailer};
    use cxl_types::msg::{Msg, Width};
    let mut u = Unstructured::new(data);
    let (Ok(down), Ok(pbr), Ok(lopt)) = (bool::arbitrary(&mut u), bool::arbitrary(&mut u), bool::arbitrary(&mut u))
    else {
        return;
    };
    let direction = if down { Direction::Downstream } else { Direction::Upstream };
    let width = if pbr { Width::Pbr } else { Width::Flit256 };
    let layout = if lopt && !pbr { Layout::LatencyOptimized } else { Layout::Standard };
    let mut queues = Queues::<16, Data>::default();
    let mut packer = Packer::new(width, layout, direction).unwrap();
    let mut peer = Unpacker::new(width, layout, direction).unwrap();
    let mut raw = Unpacker::new(width, layout, direction).unwrap();
    let mut sent: Vec<(Msg, Option<Data>)> = Vec::new();
    let mut got: Vec<(Msg, Option<Data>)> = Vec::new();
    let pack_one = |queues: &mut Queues<16, Data>, packer: &mut Packer, peer: &mut Unpacker, got: &mut Vec<_>| {
        let mut flit = [0u8; 256];
        if !packer.pack(queues, Crd::default(), &mut flit).expect("queued messages pack") {
            return false;
        }
        peer.unpack(&flit, |item| match item {
            Item::Msg(m) => got.push((m, None)),
            Item::Data(m, d) => got.push((m, Some(*d))),
            Item::Llctrl(_) => panic!("the packer sends no LLCTRL"),
        })
        .expect("the peer accepts what the packer makes");
        true
    };
    while !u.is_empty() {
        let Ok(op) = Pack256Op::arbitrary(&mut u) else { break };
        match op {
            Pack256Op::Push(msg, seed) => {
                let kind = msg.kind();
                if kind.downstream() != down {
                    continue;
                }
                let Ok(bits) = msg.encode(width) else { continue };
                let msg = Msg::decode(kind, bits, width).unwrap();
                let data = kind.has_data().then(|| Data {
                    bytes: core::array::from_fn(|i| seed.wrapping_mul(i as u8 + 3)),
                    // An S2M DRS trailer is its 32-bit EMD.
                    trailer: has_trailer(&msg).then(|| {
                        let mut t = [seed; 16];
                        if kind == cxl_types::msg::Kind::S2mDrs {
                            t[4..].fill(0);
                        }
                        t
                    }),
                });
                if queues.push(msg, data).is_ok() {
                    sent.push((msg, data));
                }
            }
            Pack256Op::Pack => {
                pack_one(&mut queues, &mut packer, &mut peer, &mut got);
            }
            Pack256Op::Raw(bytes) => {
                let before = raw.pending_slots();
                if raw.unpack(&bytes, |_| ()).is_err() {
                    assert_eq!(raw.pending_slots(), before, "a refused flit changes nothing");
                }
            }
        }
    }
    while pack_one(&mut queues, &mut packer, &mut peer, &mut got) {}
    assert_eq!((peer.pending_slots(), packer.pending_slots()), (0, 0));
    for kind in cxl_types::msg::Kind::ALL {
        let a = sent.iter().filter(|(m, _)| m.kind() == kind);
        let b = got.iter().filter(|(m, _)| m.kind() == kind);
        assert!(a.eq(b), "{kind:?} messages come out as they went in");
    }
}

/// The domain pair the TSS targets drive: `mode` 0–3 picks direct, cluster, client-to-server or
/// cluster with SSIs; `v6` and `native` pick the addresses and framing.
fn tss_pair(
    mode: u8,
    v6: bool,
    native: bool,
    key: [u8; 32],
) -> (uet_wire::tss::SecureDomain<4>, uet_wire::tss::SecureDomain<4>, uet_wire::tss::Path) {
    use uet_wire::tss::{DomainConfig, Framing, Mode, Path, SecureDomain};
    let (tx_mode, rx_mode, ssi) = match mode & 3 {
        // Direct mode over IPv6 needs SSIs.
        0 => (Mode::Direct, Mode::Direct, v6.then_some(3)),
        1 => (Mode::Cluster, Mode::Cluster, None),
        2 => (Mode::Client, Mode::Server, Some(7)),
        _ => (Mode::Cluster, Mode::Cluster, Some(9)),
    };
    let mut a = SecureDomain::new(DomainConfig { ssi, ..DomainConfig::new(0x42, tx_mode) });
    let rx_ssi = if rx_mode == Mode::Server { None } else { ssi.map(|s| s + 1) };
    let mut b = SecureDomain::new(DomainConfig {
        ssi: rx_ssi,
        auth_fail_threshold: u64::MAX,
        ..DomainConfig::new(0x42, rx_mode)
    });
    a.install(false, key);
    b.install(false, key);
    let (src, dst) = if v6 {
        let mut a6 = [0u8; 16];
        a6[..2].copy_from_slice(&[0x20, 0x01]);
        let mut b6 = a6;
        (a6[15], b6[15]) = (1, 2);
        (a6, b6)
    } else {
        (uet_wire::pdc::ipv4([10, 0, 0, 1]), uet_wire::pdc::ipv4([10, 0, 0, 2]))
    };
    let framing = if native { Framing::NativeIp([0x5a, 0xa5, 0, 0]) } else { Framing::Udp };
    (a, b, Path::new(src, dst, framing))
}

/// TSS open: arbitrary bytes never authenticate, never panic, come back unchanged and move only
/// one statistic; a packet the sender sealed opens to its plaintext once, and with any one bit
/// flipped (chosen by the input) does not.
pub fn tss_open(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let Some((&flip, rest)) = rest.split_first() else { return };
    let (mut a, mut b, path) = tss_pair(sel, sel & 4 != 0, sel & 8 != 0, [1; 32]);
    let mut bytes = rest.to_vec();
    assert!(b.open(&mut bytes, &path).is_err(), "arbitrary bytes authenticated");
    assert_eq!(bytes, rest, "a failed open changed the bytes");
    let s = b.stats();
    assert_eq!(s.in_invalid + s.in_invalid_sa + s.in_auth_fail_pkts + s.in_late_pkts + s.in_replayed_pkts, 1);
    // Seal the rest as a plaintext and open it.
    let (h, icv) = a.overhead();
    let mut pkt = vec![0u8; h + rest.len() + icv];
    pkt[h..h + rest.len()].copy_from_slice(rest);
    let n = a.seal(&mut pkt, h + rest.len(), &path).expect("a seal with room and a key");
    assert_eq!(n, pkt.len());
    let mut bad = pkt.clone();
    let bit = usize::from(flip) * 7 % (bad.len() * 8);
    bad[bit / 8] ^= 1 << (bit % 8);
    assert!(b.open(&mut bad, &path).is_err(), "bit {bit} flipped and still authenticated");
    let opened = b.open(&mut pkt, &path).expect("the sealed packet opens");
    assert_eq!(&pkt[opened.body], rest);
    let mut again = bad;
    again[bit / 8] ^= 1 << (bit % 8);
    assert!(matches!(b.open(&mut again, &path), Err(uet_wire::tss::TssError::Replayed(_))));
}

/// TSS domains under arbitrary key installs, rotations, retirements, epochs, counter jumps, and
/// packets delivered late, twice, corrupted or not at all. Invariants: no (AN, key, TSC) seals
/// twice; a packet opens at most once and to its own plaintext; a fresh packet under keys both
/// ends share opens at once; a refused seal leaves the counter where it was.
pub fn tss_domain(data: &[u8]) {
    use std::collections::HashSet;
    use uet_wire::tss::{TssError, TssHeader};
    let Some((&sel, ops)) = data.split_first() else { return };
    // Which key (by id) each end holds per AN; key `id` is its two bytes then zeros, and no id
    // is installed twice (a key manager never reinstalls a key).
    let (mut keys_a, mut keys_b) = ([Some(1u16), None], [Some(1u16), None]);
    let key = |id: u16| -> [u8; 32] {
        let mut k = [0u8; 32];
        k[..2].copy_from_slice(&id.to_be_bytes());
        k
    };
    let (mut a, mut b, path) = tss_pair(sel, sel & 4 != 0, sel & 8 != 0, key(1));
    let mut next_id = 2u16;
    let mut sealed: HashSet<(bool, u16, u64)> = HashSet::new();
    let mut opened: HashSet<(bool, u16, u64)> = HashSet::new();
    // Sealed packets: (bytes, plaintext, AN, key id).
    let mut wire: Vec<(Vec<u8>, Vec<u8>, bool, u16)> = Vec::new();
    let mut chunks = ops.chunks_exact(2);
    for (step, op) in chunks.by_ref().enumerate() {
        let (kind, arg) = (op[0], op[1]);
        let an = arg & 1 != 0;
        match kind % 10 {
            0..=2 => {
                let plain = vec![arg; usize::from(arg % 40)];
                let (h, icv) = a.overhead();
                let mut pkt = vec![0u8; h + plain.len() + icv];
                pkt[h..h + plain.len()].copy_from_slice(&plain);
                let before = a.tx_tsc();
                match a.seal(&mut pkt, h + plain.len(), &path) {
                    Ok(_) => {
                        let hdr = TssHeader::parse(&pkt).unwrap().0;
                        let key = keys_a[usize::from(hdr.an)].expect("sealed under an installed key");
                        assert!(sealed.insert((hdr.an, key, hdr.tsc.to_u64())), "IV reused");
                        // Delivered at once (kind 0) when both ends hold this key.
                        let age = b.tx_tsc().epoch.wrapping_sub(hdr.tsc.epoch);
                        let late = age < 0x8000 && age > b.config().max_epoch_lifetime;
                        let fresh_ok =
                            kind % 10 == 0 && keys_b[usize::from(hdr.an)] == Some(key) && !b.is_latched() && !late;
                        if fresh_ok && !opened.contains(&(hdr.an, key, hdr.tsc.counter)) {
                            let mut copy = pkt.clone();
                            let o = b.open(&mut copy, &path).expect("a fresh packet opens");
                            assert_eq!(copy[o.body], plain[..]);
                            opened.insert((hdr.an, key, hdr.tsc.counter));
                        }
                        wire.push((pkt, plain, hdr.an, key));
                    }
                    Err(e) => {
                        assert_eq!(a.tx_tsc(), before, "a refused seal moved the counter");
                        if e == TssError::CountersExhausted {
                            assert_eq!(before.counter, a.counter_range().1);
                        }
                    }
                }
            }
            3 | 4 => {
                // Deliver (maybe corrupted) an earlier packet.
                if wire.is_empty() {
                    continue;
                }
                let (pkt, plain, pan, key) = &wire[usize::from(arg) % wire.len()];
                let mut copy = pkt.clone();
                let corrupt = kind % 10 == 4;
                if corrupt {
                    let bit = (usize::from(arg) * 13 + step) % (copy.len() * 8);
                    copy[bit / 8] ^= 1 << (bit % 8);
                }
                if let Ok(o) = b.open(&mut copy, &path) {
                    assert!(!corrupt, "a corrupted packet opened");
                    assert_eq!(copy[o.body], plain[..]);
                    let hdr = TssHeader::parse(pkt).unwrap().0;
                    assert_eq!(keys_b[usize::from(*pan)], Some(*key), "opened under a key the receiver lacks");
                    assert!(opened.insert((*pan, *key, hdr.tsc.counter)), "a packet opened twice");
                }
            }
            5 => {
                // A new key at the sender, or at both ends (the key manager's make-before-break).
                let id = next_id;
                next_id += 1;
                a.install(an, key(id));
                keys_a[usize::from(an)] = Some(id);
                if kind & 0x10 != 0 {
                    b.install(an, key(id));
                    keys_b[usize::from(an)] = Some(id);
                    opened.retain(|&(x, _, _)| x != an);
                }
            }
            6 => {
                let r = a.rotate(an);
                assert_eq!(r.is_ok(), keys_a[usize::from(an)].is_some());
            }
            7 => {
                if kind & 0x10 == 0 {
                    a.retire(an);
                    keys_a[usize::from(an)] = None;
                } else {
                    b.retire(an);
                    keys_b[usize::from(an)] = None;
                    opened.retain(|&(x, _, _)| x != an);
                }
            }
            8 => {
                let epoch = u16::from(arg) * 3;
                if kind & 0x10 == 0 { a.set_epoch(epoch) } else { b.set_epoch(epoch) }
            }
            _ => {
                if kind & 0x10 == 0 {
                    a.resume_counter(a.counter_range().1 - u64::from(arg));
                } else {
                    b.clear_latch();
                }
            }
        }
    }
}

/// Congestion management and load balancing (`uet_wire::cms`, `uet_wire::lb`) under any input:
/// an NSCC window stays within [MTU, maxwnd] whatever feedback arrives; an RCCC sender and a pull
/// pacer talking over a channel that loses, repeats and reorders neither create nor destroy
/// credit (the sender never holds more grants than the pacer made, and adds up exactly the steps
/// it applied), while a second sender and flow take hostile fields; every entropy selector keeps
/// its EVs in range.
pub fn cms(data: &[u8]) {
    use uet_wire::cms::{AckSignal, CreditSender, NackSignal, Nscc, NsccConfig, PullPacer, PullPacerConfig};
    use uet_wire::lb::{Bitmap, EntropySource, Oblivious, PathFeedback, Reps};
    let mut u = Unstructured::new(data);
    let link = LinkRate::new(u.int_in_range(1..=1_600_000_000_000u64).unwrap_or(1)).unwrap();
    let rtt = Duration::from_nanos(u.int_in_range(0..=2_000_000u64).unwrap_or(12_000));
    let mtu = u.int_in_range(0..=9_000u32).unwrap_or(4096);
    let flags = u.arbitrary::<u8>().unwrap_or(0);
    let cfg = NsccConfig {
        trimming: flags & 1 != 0,
        quick_adapt: flags & 2 == 0,
        with_credit: flags & 4 != 0,
        qa_gate: flags >> 3,
        initial_cwnd: u.arbitrary().unwrap_or(None),
        target_qdelay: u.arbitrary().unwrap_or(None),
        ..NsccConfig::new(link, rtt, mtu)
    };
    let mut now = Instant::from_nanos(u.arbitrary::<u32>().unwrap_or(0).into());
    let mut nscc = Nscc::new(cfg, now);
    let maxwnd = u32::try_from(nscc.max_cwnd()).unwrap_or(u32::MAX);
    let mut pacer: PullPacer<3> = PullPacer::new(PullPacerConfig::new(link, maxwnd));
    let (fa, fb) = (pacer.add_flow().unwrap(), pacer.add_flow().unwrap());
    let (mut sa, mut sb) = (CreditSender::new(maxwnd, mtu), CreditSender::new(maxwnd, mtu));
    let paths = u.arbitrary::<u16>().unwrap_or(8);
    let seed = u.arbitrary::<u64>().unwrap_or(0);
    let (mut oblivious, mut reps, mut bitmap) =
        (Oblivious::new(paths, seed), Reps::new(paths, seed), Bitmap::<32>::new(seed));
    let mut wire: VecDeque<u32> = VecDeque::new();
    while !u.is_empty() {
        let op = u.arbitrary::<u8>().unwrap_or(0);
        let arg = u.arbitrary::<u32>().unwrap_or(0);
        let rtt = (op & 0x80 != 0).then(|| Duration::from_nanos(u64::from(arg >> 8)));
        match op % 12 {
            0 => nscc.on_send(arg >> 12),
            1 => {
                let ack = AckSignal { acked: arg >> 14, rtt, ecn: op & 0x40 != 0, penalty: (arg & 0xFF) as u8 };
                let _ = nscc.on_ack(now, ack);
            }
            2 => nscc.on_nack(now, NackSignal { bytes: arg >> 18, rtt, last_hop: op & 0x40 != 0 }),
            3 => nscc.on_timeout(arg >> 18),
            4 => now = now.saturating_add(Duration::from_nanos(u64::from(arg >> 10))),
            5 => {
                let cwnd = (op & 0x40 != 0).then(|| nscc.cwnd());
                let target = sa.pull_target(u64::from(arg >> 8), cwnd, u32::from(op >> 6) + 1);
                let _ = pacer.on_target(fa, target);
                sa.on_send(arg & 0xFFFF);
            }
            6 => {
                now = now.saturating_add(Duration::from_nanos(u64::from(arg >> 20)));
                if let Some(pull) = pacer.poll_pull(now) {
                    if pull.flow == fa {
                        wire.push_back(pull.granted);
                        if op & 0x40 != 0 {
                            wire.push_back(pull.granted);
                        }
                    }
                }
            }
            7 => {
                if wire.is_empty() {
                    continue;
                }
                let at = arg as usize % wire.len();
                let g = wire.remove(at).unwrap();
                if op & 0x40 == 0 {
                    let _ = sa.on_grant(g);
                }
            }
            8 => {
                let _ = pacer.on_target(fb, arg);
                let _ = sb.on_grant(arg.rotate_left(7));
                sb.pull_target(u64::from(arg), None, 0);
            }
            9 => match op >> 6 {
                0 => {
                    let _ = pacer.remove_flow(fb);
                    let _ = pacer.add_flow_with(arg);
                }
                1 => pacer.set_rate(arg),
                _ => {
                    let _ = pacer.on_trimmed(if op & 0x80 != 0 { fa } else { fb });
                }
            },
            10 => {
                let ev = reps.next_entropy(now);
                assert!(ev < paths.max(1), "REPS EV {ev} beyond {paths} paths");
                oblivious.next_entropy(now);
                bitmap.next_entropy(now);
            }
            _ => {
                let feedback = [PathFeedback::Good, PathFeedback::Ecn, PathFeedback::Nack, PathFeedback::Timeout]
                    [usize::from(op >> 6)];
                let ev = (arg & 1 != 0).then_some((arg >> 16) as u16);
                reps.on_feedback(now, ev.map(|e| e % paths.max(1)), feedback);
                oblivious.on_feedback(now, ev, feedback);
                bitmap.on_feedback(now, ev, feedback);
            }
        }
        assert!(nscc.cwnd() >= nscc.min_cwnd() && nscc.cwnd() <= nscc.max_cwnd().max(nscc.min_cwnd()));
        let (granted, _) = pacer.flow(fa).unwrap();
        assert!(sa.granted() <= granted, "sender holds {} quanta, pacer granted {granted}", sa.granted());
        // Every quantum counted became credit, unless a grant beyond the request was clamped.
        assert!(sa.stats().quanta <= sa.granted());
        assert!(sa.stats().clamped > 0 || sa.stats().quanta == sa.granted());
        assert!(sa.credit() <= i64::from(maxwnd.max(1)) && sb.credit() <= i64::from(maxwnd.max(1)));
        assert!(bitmap.penalised() <= 32);
    }
}
