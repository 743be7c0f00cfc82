//! A seeded simulation of one UALink 200 link: two accelerator ports, each running the whole
//! `ualink-flit` stack (UPLI requests and responses → TL packer → DL flits with replay → wire →
//! DL → TL unpacker), issuing loads, stores and atomics to each other.
//!
//! What the wire does, per direction: a fixed delay in flit times (one flit time is 25 ns, the
//! 200GAUI-1 figure of UALink 1.0 §6.6.5.8); each DL flit has one bit flipped with probability
//! `bit_error_rate` (the CRC catches it) and is lost in the PCS with probability `fec_loss_rate`
//! (reported to the DL with `receive_lost`). On top of that, bursts: the link loses every flit
//! in both directions for `burst_len` flit times, starting with probability `burst_rate` each
//! flit time and once at the very start, while the link comes up (`initial_burst`). Seven or
//! more losses in a row make the receivers' `flitSeqLo` ambiguous (§6.6.6.2), and the Replay
//! Requests such a burst leaves behind outlive their need: the pattern with which the
//! `ualink_link` fuzz target once made the DL deliver an old flit as new.
//!
//! The link starts as the specification has it after reset, every DL channel offline (§6.4.3.2):
//! each port runs a DL message service; port 1 asks for its partner's Device ID and negotiates
//! Channel 0 (TL flits) online, then Channel 4 (the DL UART), all over the same lossy link. Once
//! Channel 4 is online each port streams `uart_words` numbered words to the other through the
//! UART (its credits, its 128-word buffers), and the receiver reads a few each flit time.
//!
//! What the ports do: each issues `requests_per_port` requests (reads of 64..256 bytes, partial
//! writes, 256-byte WriteFulls, 8-byte AtomicRs), at most `max_outstanding` at a time. The
//! completer serves at most `service_per_slot` requests every `service_interval` flit times and
//! only then returns the request's TL credits, so with small receive buffers (`rx_credits`) the senders run out
//! of credits and wait: credit starvation.
//!
//! Link down and up (`link_downs`): at each of those flit times port 1's RS reports a fault for a
//! few flit times, so its DL drops to DL Fault and its partner, seeing Idle, to DL Idle. Each port
//! then does what UALink 1.0 §3.1.4.3 asks of an accelerator: its TL enters Drop Mode
//! ([`Packer::link_down`], [`Unpacker::link_down`]), its completer drops the requests it holds,
//! and its originator, put into Isolation Mode by the TL's ISOLATE write response, ends every
//! outstanding request with a Completion Timeout. Once both ends are down the management layer
//! enables both links again; each advertises its receive buffers afresh, renegotiates Channel 0,
//! and issues new requests. Every request ends exactly once, answered or failed.
//!
//! Checked as it runs (a broken invariant panics): requests arrive exactly once and in issue
//! order (the address carries the issue number); every response matches an outstanding request
//! exactly once; every data beat of requests and read responses arrives intact; no TL receive
//! error; UART words arrive exactly once and in order. Checked at the end: nothing outstanding,
//! every credit back where it started, every UART word delivered, no TL flit discarded.

use crate::link_sim::Rng;
use std::collections::{HashMap, VecDeque};
use ualink_flit::dl::link::REPLAY_ENTRY_LEN;
use ualink_flit::dl::service::{CHANNEL_TL, CHANNEL_UART, MessageService, ServiceConfig, ServiceEvent};
use ualink_flit::dl::{DataLink, Delivered, DlConfig, FLIT_LEN, LinkState, Received, TlSource, Transmitted};
use ualink_flit::tl::compress::{Indexing, RxDecompressor, TxCompressor};
use ualink_flit::tl::credit::{Class, Ledger, Target};
use ualink_flit::tl::{
    Beat, BeatSource, Message, MessageType, Packer, PackerConfig, Response, RxHalf, RxItem, TlFlit, Unpacked, Unpacker,
};
use ualink_flit::upli::{AtomicAttr, AtomicOp, Command, OpSize, ReadResponse, Request, WriteResponse};

/// The `i`th UART word a port sends.
fn uart_word(i: u32) -> u32 {
    i.wrapping_mul(0x9E37_79B9) ^ 0x5A5A
}

/// Nanoseconds per flit time.
pub const FLIT_NS: u64 = 25;
/// TxReplay entries per port (covers a round trip of up to 128 flit times).
pub const REPLAY_ENTRIES: usize = 128;

type Tx = Packer<16, 4, 64>;
type Rx = Unpacker<16, 4>;
type Dl = DataLink<Vec<u8>, REPLAY_ENTRIES, 40>;
type Svc = MessageService<128>;
/// UART words the receiver reads per flit time.
const UART_READS_PER_FLIT: usize = 2;

/// Receive buffers a port advertises, per class (all as pool credits).
#[derive(Clone, Copy, Debug)]
pub struct RxBuffers {
    /// Request command slots.
    pub req_cmd: u16,
    /// Request data buffers of 64 bytes.
    pub req_data: u16,
    /// Response command slots.
    pub rsp_cmd: u16,
    /// Response data buffers of 64 bytes.
    pub rsp_data: u16,
}

impl RxBuffers {
    /// The counts by TL credit class.
    pub fn by_class(&self) -> [(Class, u16); 4] {
        [
            (Class::ReqCmd, self.req_cmd),
            (Class::ReqData, self.req_data),
            (Class::RspCmd, self.rsp_cmd),
            (Class::RspData, self.rsp_data),
        ]
    }
}

/// The simulation's knobs.
#[derive(Clone, Debug)]
pub struct UaSimConfig {
    /// Seed of everything random.
    pub seed: u64,
    /// Requests each port issues.
    pub requests_per_port: u64,
    /// Probability that a DL flit gets one bit flipped.
    pub bit_error_rate: f64,
    /// Probability that a DL flit is lost in the PCS (uncorrectable FEC).
    pub fec_loss_rate: f64,
    /// One-way delay in flit times.
    pub delay: usize,
    /// Requests in flight per port.
    pub max_outstanding: usize,
    /// Requests a completer serves per service slot.
    pub service_per_slot: u32,
    /// Flit times between two service slots.
    pub service_interval: u64,
    /// Receive buffers each port advertises.
    pub rx_credits: RxBuffers,
    /// DL configuration.
    pub dl: DlConfig,
    /// Words each port sends through the DL UART.
    pub uart_words: u32,
    /// Probability per flit time that a burst of losses starts.
    pub burst_rate: f64,
    /// Flit times a burst lasts.
    pub burst_len: u32,
    /// Whether the run starts with a burst.
    pub initial_burst: bool,
    /// Flit times at which the link goes down (port 1's RS reports a fault for a few flit times).
    pub link_downs: Vec<u64>,
}

impl UaSimConfig {
    /// A link of 20 flit times each way (a 1 µs round trip, the §6.6.7 example), plenty of
    /// credits, a fast completer.
    pub fn new(seed: u64, requests_per_port: u64, bit_error_rate: f64) -> Self {
        UaSimConfig {
            seed,
            requests_per_port,
            bit_error_rate,
            fec_loss_rate: bit_error_rate / 4.0,
            delay: 20,
            max_outstanding: 1024,
            service_per_slot: 16,
            service_interval: 1,
            rx_credits: RxBuffers { req_cmd: 256, req_data: 512, rsp_cmd: 256, rsp_data: 512 },
            dl: DlConfig { rx_replay_limit: 90, ..DlConfig::default() },
            uart_words: 2000,
            burst_rate: 0.0,
            burst_len: 0,
            initial_burst: false,
            link_downs: Vec::new(),
        }
    }
}

/// Totals of a run.
#[derive(Clone, Debug, Default)]
pub struct UaSimReport {
    /// Flit times simulated.
    pub flit_times: u64,
    /// Requests completed (both ports).
    pub completed: u64,
    /// TL flits delivered to the TLs (both directions).
    pub tl_flits: u64,
    /// DL flits sent (both ports), payload flits among them, and replayed ones.
    pub dl_flits: u64,
    /// Payload DL flits sent for the first time.
    pub dl_payload: u64,
    /// Payload DL flits sent again.
    pub dl_replayed: u64,
    /// Replays started.
    pub replays: u64,
    /// Flits that failed CRC or were lost in the PCS.
    pub bad_flits: u64,
    /// Payload flits (first sends and replays) the wire corrupted or lost.
    pub damaged_payload: u64,
    /// Times a port's link left DL Up.
    pub link_downs: u64,
    /// Requests ended by a Completion Timeout at a link down (both ports).
    pub failed: u64,
    /// Items the packers still held at a link down (queued, or sent without all their data).
    pub dropped_by_tl: u64,
    /// Data bytes moved (request data and read data).
    pub data_bytes: u64,
    /// Flit times some request waited at the head of a TL queue for lack of credits.
    pub credit_waits: u64,
    /// Request latencies (issue to completion), in flit times, sorted.
    pub latencies: Vec<u64>,
    /// Requests completed by kind: loads (reads), stores (writes and WriteFulls), atomics.
    pub kinds: [u64; 3],
    /// TL efficiency (§5.4: data bytes over TL flit bytes), both ports together.
    pub tl_efficiency: f64,
    /// Flit times until Channel 0 was online at both ports.
    pub tl_online_at: u64,
    /// UART words delivered (both directions).
    pub uart_words: u64,
    /// DL message words sent (both ports, UART payload included).
    pub dl_message_words: u64,
}

impl UaSimReport {
    /// The `p`-th percentile latency in nanoseconds.
    pub fn latency_ns(&self, p: f64) -> u64 {
        if self.latencies.is_empty() {
            return 0;
        }
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i] * FLIT_NS
    }

    /// DL efficiency: TL bytes delivered over the bytes of the payload flits sent (first
    /// transmissions and replays; 628/640 = 98.125 % at best).
    pub fn dl_efficiency(&self) -> f64 {
        let payload = self.dl_payload + self.dl_replayed;
        if payload == 0 { 0.0 } else { (self.tl_flits * 64) as f64 / (payload * 640) as f64 }
    }

    /// The share of flit times that carried payload (the rest were NOP flits).
    pub fn link_busy(&self) -> f64 {
        if self.dl_flits == 0 { 0.0 } else { (self.dl_payload + self.dl_replayed) as f64 / self.dl_flits as f64 }
    }

    /// Data goodput in Gb/s (both directions together).
    pub fn goodput_gbps(&self) -> f64 {
        self.data_bytes as f64 * 8.0 / (self.flit_times * FLIT_NS) as f64
    }
}

/// 4096 distinct 64-byte patterns; a beat's data is a pattern picked by its owner and number.
struct Patterns(Vec<[u8; 64]>);

impl Patterns {
    fn new(seed: u64) -> Self {
        let mut r = Rng::new(seed);
        Patterns((0..4096).map(|_| core::array::from_fn(|_| r.next_u64() as u8)).collect())
    }

    /// Data of beat `beat` of request number `seq` (`response` for its read data).
    fn of(&self, seq: u64, beat: u8, response: bool) -> &[u8; 64] {
        &self.0[((seq * 8 + u64::from(beat) * 2 + u64::from(response)) % 4096) as usize]
    }
}

/// Item ids: a request's is its issue number; a response's has the top bit set.
const RESPONSE_ID: u32 = 1 << 31;

impl BeatSource for Patterns {
    fn beat(&self, id: u32, beat: u8) -> Option<Beat<'_>> {
        let response = id & RESPONSE_ID != 0;
        let seq = u64::from(id & !RESPONSE_ID);
        Some(Beat { data: self.of(seq, beat, response), byte_en: u64::MAX, error: false })
    }
}

/// The TL packer as the DL's source of TL flits.
struct Feed<'a> {
    tx: &'a mut Tx,
    data: &'a Patterns,
    /// Every TL flit handed to the DL, until the peer's DL delivers it.
    in_flight: &'a mut VecDeque<TlFlit>,
}

impl TlSource for Feed<'_> {
    fn has_flit(&self) -> bool {
        self.tx.has_work()
    }
    fn next_flit(&mut self, out: &mut TlFlit) -> bool {
        if !self.tx.has_work() {
            return false;
        }
        self.tx.pack(self.data, out).expect("the packer never fails on checked items");
        self.in_flight.push_back(*out);
        true
    }
}

/// A request received by a completer, waiting for its data or for service.
#[derive(Clone, Copy, Debug)]
struct Work {
    req: Request,
    seq: u64,
    beats_left: u8,
}

/// A request issued and not yet completed.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    seq: u64,
    req: Request,
    issued: u64,
    beats_left: u8,
}

/// One accelerator port.
struct Port {
    acc: u16,
    tx: Tx,
    rx: Rx,
    dl: Dl,
    svc: Svc,
    /// UART words written so far, and the next one expected from the partner.
    uart_written: u32,
    uart_expect: u32,
    /// Issued so far; the next issue number.
    issued: u64,
    /// Completed so far.
    completed: u64,
    free_tags: Vec<u16>,
    outstanding: HashMap<u16, Outstanding>,
    /// Requests received, by the unpacker's item id (data still arriving).
    arriving: HashMap<u32, Work>,
    /// Requests complete and waiting for the completer, in arrival order.
    work: VecDeque<Work>,
    /// Responses received, by the unpacker's item id (read data still arriving).
    answering: HashMap<u32, u16>,
    /// The issue number the next received request must carry; after a link down, any later one
    /// (the requests in between were dropped with the link).
    expect_seq: u64,
    resync: bool,
    /// Requests ended (answered or failed), by issue number: each must end exactly once.
    endings: Vec<u8>,
    /// Whether the data link was up at the last flit time.
    was_up: bool,
    next_service: u64,
    rng: Rng,
}

impl Port {
    fn new(acc: u16, cfg: &UaSimConfig, seed: u64) -> Port {
        let mut tx =
            Tx::new(PackerConfig { auth: false, compress_responses: true }, TxCompressor::new(Indexing::ByDst, true));
        advertise(&mut tx, cfg);
        let mut dl = Dl::new(cfg.dl, vec![0; REPLAY_ENTRY_LEN * REPLAY_ENTRIES]);
        dl.rs_fault(false);
        dl.enable().unwrap();
        let mut svc = Svc::new(ServiceConfig { device_id: Some(acc), port: Some(acc), ..ServiceConfig::default() });
        negotiate(&mut svc, acc);
        Port {
            acc,
            tx,
            rx: Rx::new(false, RxDecompressor::new(Indexing::ByDst)),
            dl,
            svc,
            uart_written: 0,
            uart_expect: 0,

            issued: 0,
            completed: 0,
            free_tags: (0..cfg.max_outstanding as u16).rev().collect(),
            outstanding: HashMap::new(),
            arriving: HashMap::new(),
            work: VecDeque::new(),
            answering: HashMap::new(),
            expect_seq: 0,
            resync: false,
            endings: vec![0; cfg.requests_per_port as usize],
            was_up: false,
            next_service: 0,
            rng: Rng::new(seed),
        }
    }

    /// The next request: its kind and size from the generator, its address from its issue number.
    fn make_request(&mut self, seq: u64, tag: u16, peer: u16) -> Request {
        let addr = seq << 8;
        match self.rng.below(8) {
            0..=2 => Request::new(Command::Read, addr, (16 * (1 + self.rng.below(4)) - 1) as u8, tag, self.acc, peer),
            3 | 4 => Request::new(Command::Write, addr, (1 + self.rng.below(63)) as u8, tag, self.acc, peer),
            5 | 6 => Request::new(Command::WriteFull, addr, 63, tag, self.acc, peer),
            _ => Request {
                attr: AtomicAttr { op: AtomicOp::Add, size: OpSize::Bits64 }.to_attr(),
                ..Request::new(Command::AtomicR, addr, 1, tag, self.acc, peer)
            },
        }
    }

    /// Issues requests while tags, queue room and the budget allow.
    /// The DL message service's part of a flit time before transmitting: UART words written,
    /// messages queued for the link, Channel 0's gates applied.
    fn pump_messages(&mut self, uart_words: u32) {
        if self.svc.channel_online(CHANNEL_UART) && self.uart_written < uart_words {
            let next: Vec<u32> = (self.uart_written..uart_words.min(self.uart_written + 64)).map(uart_word).collect();
            self.uart_written += self.svc.uart_write(&next) as u32;
        }
        self.svc.pump(self.dl.messages());
        let (tx, rx) = self.svc.tl_gates();
        self.dl.set_tl_channel(tx, rx);
    }

    /// The alt-sector words of a received DL flit, and the UART words read this flit time.
    fn take_messages(&mut self, alt: &[u32], now: u64, report: &mut UaSimReport) {
        for w in alt {
            match self.svc.receive(*w).expect("DL messages from a conforming partner") {
                Some(ServiceEvent::Channel { channel: CHANNEL_TL, online: true }) => {
                    report.tl_online_at = report.tl_online_at.max(now);
                    if self.acc == 1 {
                        self.svc.request_channel(CHANNEL_UART, true).unwrap();
                    }
                }
                Some(ServiceEvent::PeerDeviceId { id, response: true, .. }) => {
                    assert_eq!(id, Some(3 - self.acc), "the partner's Device ID");
                }
                _ => {}
            }
        }
        for _ in 0..UART_READS_PER_FLIT {
            let Some(w) = self.svc.uart_read() else { break };
            assert_eq!(w, uart_word(self.uart_expect), "UART words arrive once, in order");
            self.uart_expect += 1;
            report.uart_words += 1;
        }
    }

    fn issue(&mut self, now: u64, budget: u64, peer: u16) {
        while self.issued < budget && self.tx.queued().0 < 48 {
            let Some(tag) = self.free_tags.pop() else { return };
            let seq = self.issued;
            let req = self.make_request(seq, tag, peer);
            self.tx.push_request(seq as u32, req).unwrap();
            let beats_left = req.response_beats();
            self.outstanding.insert(tag, Outstanding { seq, req, issued: now, beats_left });
            self.issued += 1;
        }
    }

    /// The completer: serves up to `n` of the oldest complete requests, answers them, frees
    /// their buffers.
    fn serve(&mut self, now: u64, n: u32, interval: u64) {
        if now < self.next_service {
            return;
        }
        self.next_service = now + interval;
        for _ in 0..n {
            if !self.serve_one() {
                return;
            }
        }
    }

    /// Serves the oldest complete request, if there is one and room for its response.
    fn serve_one(&mut self) -> bool {
        if self.tx.queued().1 >= 48 {
            return false;
        }
        let Some(w) = self.work.pop_front() else { return false };
        let r = w.req;
        let rsp = match r.response_beats() {
            0 => Response::Write(WriteResponse { vc: r.vc, ..WriteResponse::new(r.tag, self.acc, r.src) }),
            n => Response::Read(ReadResponse { vc: r.vc, ..ReadResponse::new(r.tag, self.acc, r.src, n) }),
        };
        self.tx.push_response(RESPONSE_ID | w.seq as u32, rsp).unwrap();
        let t = Target::of(r.pool, r.vc);
        self.tx.owed.release(Class::ReqCmd, t, 1).unwrap();
        self.tx.owed.release(Class::ReqData, t, u16::from(r.data_beats())).unwrap();
        true
    }

    /// Takes one TL flit from the DL.
    fn take(&mut self, f: &TlFlit, now: u64, data: &Patterns, report: &mut UaSimReport) {
        let mut out = Unpacked::default();
        self.rx.unpack(f, &mut out).expect("no TL receive error on a link with replay");
        for fc in &out.credits {
            self.tx.credits.grant(fc).unwrap();
        }
        for item in &out.items {
            match *item {
                RxItem::Request { id, req } => {
                    let seq = req.addr >> 8;
                    if self.resync {
                        assert!(seq >= self.expect_seq, "requests arrive once each, in issue order");
                        self.resync = false;
                    } else {
                        assert_eq!(seq, self.expect_seq, "requests arrive once each, in issue order");
                    }
                    self.expect_seq = seq + 1;
                    let w = Work { req, seq, beats_left: req.data_beats() };
                    if w.beats_left == 0 {
                        self.work.push_back(w);
                    } else {
                        self.arriving.insert(id, w);
                    }
                }
                RxItem::Response { id, rsp } => {
                    let tag = match rsp {
                        Response::Read(r) => r.tag,
                        Response::Write(w) => w.tag,
                    };
                    let o = self.outstanding.get(&tag).expect("a response matches an outstanding request");
                    assert_eq!(u16::from(rsp.data_beats()), u16::from(o.req.response_beats()));
                    let t = Target::of(rsp.pool(), rsp.vc());
                    self.tx.owed.release(Class::RspCmd, t, 1).unwrap();
                    self.tx.owed.release(Class::RspData, t, u16::from(rsp.data_beats())).unwrap();
                    if o.beats_left == 0 {
                        self.complete(tag, now, report);
                    } else {
                        self.answering.insert(id, tag);
                    }
                }
            }
        }
        for half in [out.lower, out.upper] {
            let RxHalf::Data { id, beat, second, bytes } = half else {
                assert!(!matches!(half, RxHalf::Poisoned { .. }), "nothing is poisoned");
                continue;
            };
            let at = if second { 32 } else { 0 };
            if let Some(w) = self.arriving.get_mut(&id) {
                assert_eq!(bytes[..], data.of(w.seq, beat, false)[at..at + 32], "request data intact");
                report.data_bytes += 32;
                if second {
                    w.beats_left -= 1;
                    if w.beats_left == 0 {
                        let w = self.arriving.remove(&id).unwrap();
                        self.work.push_back(w);
                    }
                }
            } else {
                let tag = *self.answering.get(&id).expect("data belongs to a request or response");
                let o = self.outstanding.get_mut(&tag).unwrap();
                assert_eq!(bytes[..], data.of(o.seq, beat, true)[at..at + 32], "read data intact");
                report.data_bytes += 32;
                if second {
                    o.beats_left -= 1;
                    if o.beats_left == 0 {
                        self.answering.remove(&id);
                        self.complete(tag, now, report);
                    }
                }
            }
        }
    }

    fn complete(&mut self, tag: u16, now: u64, report: &mut UaSimReport) {
        let o = self.outstanding.remove(&tag).unwrap();
        self.free_tags.push(tag);
        self.completed += 1;
        self.endings[o.seq as usize] += 1;
        report.latencies.push(now - o.issued);
        let kind = match o.req.cmd {
            Command::Read => 0,
            Command::AtomicR => 2,
            _ => 1,
        };
        report.kinds[kind] += 1;
    }

    /// The data link left DL Up (§3.1.4.3): TL Drop Mode at both halves, the completer drops
    /// what it holds, the originator (in Isolation Mode) ends every outstanding request with a
    /// Completion Timeout; then the receive buffers are advertised afresh, to go out once the
    /// link is back.
    fn link_down(&mut self, cfg: &UaSimConfig, report: &mut UaSimReport) {
        report.link_downs += 1;
        self.tx.link_down(|_| report.dropped_by_tl += 1);
        self.rx.link_down(|_| {});
        self.arriving.clear();
        self.answering.clear();
        self.work.clear();
        for (tag, o) in self.outstanding.drain() {
            self.free_tags.push(tag);
            self.endings[o.seq as usize] += 1;
            report.failed += 1;
        }
        self.resync = true;
        advertise(&mut self.tx, cfg);
    }

    /// The link is enabled again: the DL message service starts over with it (after
    /// [`DataLink::enable`], which empties the DL's message queue), and Channel 0 is negotiated
    /// again.
    fn link_enabled(&mut self) {
        self.dl.enable().unwrap();
        self.svc.link_reset();
        negotiate(&mut self.svc, self.acc);
        self.uart_written = 0;
        self.uart_expect = 0;
    }
}

/// A port's receive buffers, advertised as TL credits to its partner, then Initial Credit
/// Release Complete (§5.8): at reset, and again after every link down.
fn advertise(tx: &mut Tx, cfg: &UaSimConfig) {
    for (class, n) in cfg.rx_credits.by_class() {
        tx.owed.release(class, Target::Pool, n).unwrap();
    }
    tx.send_message(Message::new(MessageType::InitialCreditReleaseComplete)).unwrap();
}

/// Port 1 asks for its partner's Device ID and for Channel 0 (the TL) to come online: at reset,
/// and again after every link down.
fn negotiate(svc: &mut Svc, acc: u16) {
    if acc == 1 {
        svc.request_device_id().unwrap();
        svc.request_channel(CHANNEL_TL, true).unwrap();
    }
}

/// A flit on the wire, and whether it carries payload.
type OnWire = ([u8; FLIT_LEN], bool);

/// Flit times an injected RS fault lasts.
const FAULT_FLIT_TIMES: u64 = 5;

/// Two ports and the wire between them.
pub struct UaSim {
    /// The configuration.
    pub cfg: UaSimConfig,
    ports: [Port; 2],
    /// Flits in flight; `None` where the port sent Idle.
    wire: [VecDeque<Option<OnWire>>; 2],
    /// TL flits each port's DL took and the other's has not delivered yet.
    in_flight: [VecDeque<TlFlit>; 2],
    data: Patterns,
    rng: Rng,
    now: u64,
    /// Flit times left in the current burst of losses.
    burst_left: u32,
    report: UaSimReport,
}

impl UaSim {
    /// A link brought up from DL NOP.
    pub fn new(cfg: UaSimConfig) -> Self {
        let ports = [Port::new(1, &cfg, cfg.seed ^ 0x11), Port::new(2, &cfg, cfg.seed ^ 0x22)];
        let wire = [(0..cfg.delay).map(|_| None).collect(), (0..cfg.delay).map(|_| None).collect()];
        UaSim {
            in_flight: [VecDeque::new(), VecDeque::new()],
            data: Patterns::new(cfg.seed),
            rng: Rng::new(cfg.seed),
            burst_left: if cfg.initial_burst { cfg.burst_len } else { 0 },
            cfg,
            ports,
            wire,
            now: 0,
            report: UaSimReport::default(),
        }
    }

    /// The link's management: faults injected at `link_downs`, each port's reaction to its link
    /// leaving DL Up, and both links enabled again once both are down.
    fn manage_links(&mut self) {
        let now = self.now;
        let faulted = self.cfg.link_downs.iter().any(|&t| (t..t + FAULT_FLIT_TIMES).contains(&now));
        self.ports[0].dl.rs_fault(faulted);
        self.ports[1].dl.rs_fault(false);
        for p in &mut self.ports {
            let up = p.dl.state() == LinkState::Up;
            if p.was_up && !up {
                p.link_down(&self.cfg, &mut self.report);
            }
            p.was_up = up;
        }
        if self.ports.iter().all(|p| p.dl.state() == LinkState::Idle) {
            for (d, p) in self.ports.iter_mut().enumerate() {
                p.link_enabled();
                // What this DL held and the partner never got is gone with its TxReplay, and
                // the link retrained: nothing sent before is still on the wire.
                self.in_flight[d].clear();
                self.wire[d].iter_mut().for_each(|f| *f = None);
            }
        }
    }

    /// One flit time.
    fn step(&mut self) {
        self.manage_links();
        let now = self.now;
        for d in 0..2 {
            let peer = self.ports[1 - d].acc;
            let p = &mut self.ports[d];
            p.issue(now, self.cfg.requests_per_port, peer);
            p.serve(now, self.cfg.service_per_slot, self.cfg.service_interval);
            if !p.tx.has_work() && p.tx.queued().0 > 0 {
                self.report.credit_waits += 1;
            }
            p.pump_messages(self.cfg.uart_words);
            let mut out = [0u8; FLIT_LEN];
            let sent = match p
                .dl
                .transmit(&mut Feed { tx: &mut p.tx, data: &self.data, in_flight: &mut self.in_flight[d] }, &mut out)
            {
                Transmitted::Flit { header, .. } => Some((out, header.has_payload())),
                Transmitted::Idle => None,
            };
            self.wire[d].push_back(sent);
        }
        if self.burst_left == 0 && self.cfg.burst_rate > 0.0 && self.rng.chance(self.cfg.burst_rate) {
            self.burst_left = self.cfg.burst_len;
        }
        let in_burst = self.burst_left > 0;
        self.burst_left = self.burst_left.saturating_sub(1);
        for d in 0..2 {
            let arriving = self.wire[1 - d].pop_front().flatten();
            let p = &mut self.ports[d];
            let Some((mut f, payload)) = arriving else {
                p.dl.receive_control();
                continue;
            };
            if in_burst || self.rng.chance(self.cfg.fec_loss_rate) {
                p.dl.receive_lost();
                self.report.damaged_payload += u64::from(payload);
                continue;
            }
            if self.rng.chance(self.cfg.bit_error_rate) {
                self.report.damaged_payload += u64::from(payload);
                let bit = self.rng.below(FLIT_LEN as u64 * 8) as usize;
                f[bit / 8] ^= 1 << (bit % 8);
            }
            let mut delivered = Delivered::default();
            let r = p.dl.receive(&f, &mut delivered);
            assert_ne!(r, Received::Contained, "no unpacking error");
            p.take_messages(&delivered.alt, now, &mut self.report);
            for tl in &delivered.flits {
                let sent = self.in_flight[1 - d].pop_front();
                assert_eq!(sent.as_ref(), Some(tl), "the DL delivers TL flits exactly once, in order");
                self.report.tl_flits += 1;
                p.take(tl, now, &self.data, &mut self.report);
            }
        }
        self.now += 1;
    }

    /// Whether every request has been issued and completed.
    pub fn done(&self) -> bool {
        self.ports.iter().all(|p| {
            p.issued == self.cfg.requests_per_port && p.outstanding.is_empty() && p.uart_expect == self.cfg.uart_words
        })
    }

    /// Runs until done (or `max_flit_times`), then lets the last credits return, and checks that
    /// the link stayed up and no credit leaked. Returns the report.
    pub fn run(&mut self, max_flit_times: u64) -> UaSimReport {
        while !self.done() && self.now < max_flit_times {
            self.step();
        }
        assert!(self.done(), "stalled at flit time {}: {:?}", self.now, self.progress());
        let finished = self.now;
        // Let the returned credits cross the link (replays may delay them), then check.
        let mut waited = 0;
        while !self.settled() && waited < 100_000 {
            self.step();
            waited += 1;
        }
        for (d, p) in self.ports.iter().enumerate() {
            assert!(p.endings.iter().all(|&e| e == 1), "port {d}: every request ended exactly once");
            assert_eq!(p.dl.state(), LinkState::Up, "port {d} is up");
            assert!(p.work.is_empty() && p.arriving.is_empty() && p.answering.is_empty());
            assert!(p.tx.is_idle(), "port {d} has nothing left to send");
            assert_eq!(p.tx.credits.held, self.advertised(), "port {d}: every credit came back");
            assert_eq!(p.dl.stats().tl_discarded, 0, "port {d}: no TL flit arrived at a closed channel");
            let s = p.svc.stats();
            assert_eq!((s.unsolicited, s.uart_overruns, s.uart_dropped), (0, 0, 0), "port {d}: {s:?}");
        }
        let mut r = self.report.clone();
        r.flit_times = finished;
        r.completed = self.ports.iter().map(|p| p.completed).sum();
        for p in &self.ports {
            let s = p.dl.stats();
            r.dl_flits += s.flits_sent;
            r.dl_payload += s.payload_sent;
            r.dl_replayed += s.replayed;
            r.replays += s.replays;
            r.bad_flits += s.crc_errors;
            r.dl_message_words += p.svc.stats().words_sent;
        }
        r.latencies.sort_unstable();
        let (data, flits) =
            self.ports.iter().fold((0, 0), |(d, f), p| (d + p.tx.stats.data_halves, f + p.tx.stats.flits));
        r.tl_efficiency = if flits == 0 { 0.0 } else { data as f64 / (2 * flits) as f64 };
        r
    }

    /// The credits each port advertises.
    fn advertised(&self) -> Ledger {
        let mut l = Ledger::EMPTY;
        for (class, n) in self.cfg.rx_credits.by_class() {
            l.add(class, Target::Pool, n).unwrap();
        }
        l
    }

    /// Whether both ports hold every credit the other advertised and have nothing to send.
    fn settled(&self) -> bool {
        let want = self.advertised();
        self.ports.iter().all(|p| p.tx.is_idle() && p.tx.credits.held == want)
    }

    fn progress(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| {
                format!(
                    "issued {} completed {} outstanding {} {:?}; UART written {} read {} fill {:?} channels {}/{} {:?}",
                    p.issued,
                    p.completed,
                    p.outstanding.len(),
                    p.dl.state(),
                    p.uart_written,
                    p.uart_expect,
                    p.svc.uart_fill(),
                    p.svc.channel_online(CHANNEL_TL),
                    p.svc.channel_online(CHANNEL_UART),
                    p.svc.stats()
                )
            })
            .collect()
    }
}
