//! Two chiplets' UCIe D2D adapters (`ucie_adapter::adapter::Adapter`) over a simulated
//! physical layer: a sideband that carries packets as bytes, and a mainband with bit errors.
//!
//! The physical layer is modelled, not implemented: RDI on both dies goes Active after
//! "training", enters Retrain when either adapter asks (and the retrain recalibrates the lanes:
//! the error rate drops back to [`UcieSimConfig::ber`]), and LinkError when either asserts
//! `lp_linkerror`. One simulated flit time is 1 ns. The protocol layers answer `rx_active` at
//! once, request Active (after a NOP) whenever their stack is in Reset or Retrain, and send
//! CXL.cachemem flits numbered from 0 in both directions; the simulation checks that each
//! die receives the other's flits exactly once and in order.
//!
//! From [`UcieSimConfig::burst_at`] for [`UcieSimConfig::burst_len`] flit times the error rate
//! is [`UcieSimConfig::burst_ber`]: more than retry can handle, so the adapters' replay count
//! rolls over, they ask for Retrain, and the link comes back.

use crate::link_sim::Rng;
use linklayer::{Duration, Instant};
use std::collections::VecDeque;
use ucie_adapter::adapter::{Adapter, AdapterEvent};
use ucie_adapter::crc::Format;
use ucie_adapter::flit::Protocol;
use ucie_adapter::header::{FlitHeader, protocol_id};
use ucie_adapter::lsm::{LinkRequest, LinkStatus};
use ucie_adapter::param::{AdapterCaps, CxlCaps, ExchangeConfig, ExchangeState, MultiProtocolCaps, Negotiated, Role};
use ucie_adapter::sideband::Packet;
use ucie_adapter::stream68::{Item, Packer, Unpacker};

/// The retry buffer: 64 flits of 256 bytes.
pub type SimAdapter = Adapter<Box<[u8]>, 64>;

/// Sideband latency, in flit times.
const SIDEBAND_DELAY: u64 = 20;
/// Mainband latency, in flit times.
const MAINBAND_DELAY: u64 = 4;
/// Flit times the physical layer takes to retrain.
const RETRAIN_TIME: u64 = 200;

/// Parameters of one run.
#[derive(Clone, Debug)]
pub struct UcieSimConfig {
    /// Seed of the error pattern.
    pub seed: u64,
    /// Flits each die sends.
    pub flits: u64,
    /// Bit error rate of the mainband.
    pub ber: f64,
    /// When the error burst starts (flit times after the link is up), if any.
    pub burst_at: Option<u64>,
    /// How long the burst lasts.
    pub burst_len: u64,
    /// Bit error rate during the burst.
    pub burst_ber: f64,
    /// What the downstream die advertises.
    pub dp: AdapterCaps,
    /// What the upstream die advertises.
    pub up: AdapterCaps,
    /// {AdvCap.CXL} of both dies (PCIe or CXL).
    pub cxl: CxlCaps,
    /// Enhanced Multi-Protocol: stack 1's {MultiProtAdvCap.Adapter} and {AdvCap.CXL}.
    pub stack1: (MultiProtocolCaps, CxlCaps),
    /// Whether the upstream die's adapter never answers on the sideband.
    pub silent_peer: bool,
    /// Print each state change and the negotiated parameters.
    pub verbose: bool,
}

impl UcieSimConfig {
    /// The same link with Multi_Protocol_Enable: two stacks of the protocol share it, each
    /// sending `flits`.
    pub fn two_stacks(mut self) -> UcieSimConfig {
        let both = AdapterCaps::MULTI_PROTOCOL | AdapterCaps::STACK0 | AdapterCaps::STACK1;
        self.dp |= both;
        self.up |= both;
        self
    }

    /// Enhanced Multi-Protocol: CXL 256B on stack 0, PCIe flit mode on stack 1 (limited to
    /// half the link by the upstream die), sharing the standard 256B start-header format.
    pub fn two_protocols(mut self) -> UcieSimConfig {
        let both = AdapterCaps::ENHANCED_MULTI_PROTOCOL
            | AdapterCaps::STACK0
            | AdapterCaps::STACK1
            | AdapterCaps::STD_START_HEADER;
        self.dp |= both;
        self.up |= both | AdapterCaps::STACK1_BW_LIMIT;
        self.cxl |= CxlCaps::PCIE;
        self.stack1 = (MultiProtocolCaps::FLIT_68B | MultiProtocolCaps::PCIE_FLIT, CxlCaps::PCIE);
        self
    }
}

impl UcieSimConfig {
    /// CXL 256B with Retry and the latency-optimized formats on both sides.
    pub fn new(seed: u64, flits: u64, ber: f64) -> UcieSimConfig {
        let caps = AdapterCaps::FLIT_68B
            | AdapterCaps::CXL_256B
            | AdapterCaps::PCIE_FLIT
            | AdapterCaps::RETRY
            | AdapterCaps::STACK0
            | AdapterCaps::CXL_LATOPT_FMT5
            | AdapterCaps::CXL_LATOPT_FMT6;
        UcieSimConfig {
            seed,
            flits,
            ber,
            burst_at: None,
            burst_len: 0,
            burst_ber: 0.0,
            dp: caps,
            up: caps,
            cxl: CxlCaps::CXL_IO | CxlCaps::CXL_MEM,
            stack1: (MultiProtocolCaps::empty(), CxlCaps::empty()),
            silent_peer: false,
            verbose: false,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UcieSimReport {
    /// What parameter exchange settled on (`None` if it failed).
    pub negotiated: Option<Negotiated>,
    /// Parameter exchange's final state on the downstream die.
    pub exchange: Option<ExchangeState>,
    /// Flits delivered, per direction (DP → UP, UP → DP), both stacks.
    pub delivered: [u64; 2],
    /// Payload flits of a stack that must alternate sent right after one of the same stack
    /// (must stay 0).
    pub same_stack_back_to_back: u64,
    /// Flits corrupted on the mainband.
    pub corrupted: u64,
    /// Replays started, both dies.
    pub replays: u64,
    /// Naks sent, both dies.
    pub naks: u64,
    /// Retrains the physical layer did.
    pub retrains: u64,
    /// Uncorrectable errors reported.
    pub uncorrectable: u64,
    /// Flit times simulated.
    pub flit_times: u64,
}

struct Die {
    adapter: SimAdapter,
    /// Format 2: the transmit stream and the receive stream reader.
    packer: Packer,
    unpacker: Unpacker,
    rdi: LinkStatus,
    sent: [u64; 2],
    received: [u64; 2],
    last_stack: Option<u8>,
}

impl Die {
    fn received(&self) -> u64 {
        self.received.iter().sum()
    }
}

/// One run.
pub struct UcieSim {
    config: UcieSimConfig,
    dies: [Die; 2],
    rng: Rng,
    sideband: [VecDeque<(u64, Vec<u8>)>; 2],
    mainband: [VecDeque<(u64, Vec<u8>)>; 2],
    now: u64,
    retrain_until: Option<u64>,
    up_since: Option<u64>,
    report: UcieSimReport,
}

impl UcieSim {
    /// A simulation of two dies, powered up, RDI in Reset.
    pub fn new(config: UcieSimConfig) -> UcieSim {
        let die = |role, caps| Die {
            adapter: Adapter::new(
                ExchangeConfig::new(role, caps, config.cxl).with_stack1(config.stack1.0, config.stack1.1),
                vec![0u8; 64 * 256].into_boxed_slice(),
            ),
            rdi: LinkStatus::Reset,
            packer: Packer::new(),
            unpacker: Unpacker::new(true),
            sent: [0; 2],
            received: [0; 2],
            last_stack: None,
        };
        UcieSim {
            dies: [die(Role::Downstream, config.dp), die(Role::Upstream, config.up)],
            rng: Rng::new(config.seed),
            sideband: [VecDeque::new(), VecDeque::new()],
            mainband: [VecDeque::new(), VecDeque::new()],
            now: 0,
            retrain_until: None,
            up_since: None,
            report: UcieSimReport::default(),
            config,
        }
    }

    fn instant(&self) -> Instant {
        Instant::from_nanos(self.now)
    }

    fn set_rdi(&mut self, status: LinkStatus) {
        let now = self.instant();
        for (i, d) in self.dies.iter_mut().enumerate() {
            if d.rdi != status {
                d.rdi = status;
                if self.config.verbose {
                    println!("{:>9} ns  die {i}: RDI {status:?}", self.now);
                }
                d.adapter.handle_rdi(now, status);
            }
        }
    }

    /// Runs until both dies delivered every flit, or `max_time` flit times passed.
    pub fn run(mut self, max_time: u64) -> UcieSimReport {
        // Mainband training finishes: RDI Active on both dies.
        self.set_rdi(LinkStatus::Active);
        while self.now < max_time {
            self.step();
            let n = self.config.flits * self.stacks().iter().filter(|&&s| s).count() as u64;
            let done = self.dies.iter().all(|d| d.received() == n);
            let failed = matches!(self.dies[0].adapter.exchange(), ExchangeState::Failed(_));
            if done || failed {
                break;
            }
        }
        self.report.negotiated = self.dies[0].adapter.negotiated();
        self.report.exchange = Some(self.dies[0].adapter.exchange());
        self.report.delivered = [self.dies[1].received(), self.dies[0].received()];
        self.report.flit_times = self.now;
        for d in &self.dies {
            self.report.replays += d.adapter.retry().stats().replays;
            self.report.naks += d.adapter.retry().stats().naks_sent;
        }
        self.report
    }

    fn step(&mut self) {
        let now = self.instant();
        // The physical layer finishes a retrain.
        if self.retrain_until.is_some_and(|t| self.now >= t) {
            self.retrain_until = None;
            self.set_rdi(LinkStatus::Active);
        }
        // Sideband packets arrive.
        for to in 0..2 {
            while self.sideband[to].front().is_some_and(|(t, _)| *t <= self.now) {
                let (_, bytes) = self.sideband[to].pop_front().unwrap();
                let (packet, _) = Packet::parse(&bytes).expect("sideband packets parse");
                if !(self.config.silent_peer && to == 1) {
                    self.dies[to].adapter.handle_sideband(now, &packet);
                }
            }
        }
        // Mainband flits (Format 2: stream bytes) arrive.
        for to in 0..2 {
            while self.mainband[to].front().is_some_and(|(t, _)| *t <= self.now) {
                let (_, bytes) = self.mainband[to].pop_front().unwrap();
                let die = &mut self.dies[to];
                if die.adapter.negotiated().is_some_and(|n| n.format == Format::Flit68) {
                    let mut flits = Vec::new();
                    let expected = die.adapter.retry().expected_pds_field();
                    die.unpacker.push_beat(&bytes, expected, |i| {
                        if let Item::Flit { flit, .. } = i {
                            flits.push(*flit);
                        }
                    });
                    for f in flits {
                        Self::receive(die, to, now, &f);
                    }
                } else {
                    Self::receive(die, to, now, &bytes);
                }
            }
        }
        // Protocol layers: bring their stacks up, send while there is room (stacks taking
        // turns).
        let stacks = self.stacks();
        for i in 0..2 {
            let die = &mut self.dies[i];
            for stack in [0u8, 1] {
                let status = die.adapter.status(stack);
                if stacks[usize::from(stack)] && matches!(status, LinkStatus::Reset | LinkStatus::Retrain) {
                    let _ = die.adapter.handle_request(now, stack, LinkRequest::Nop);
                    let _ = die.adapter.handle_request(now, stack, LinkRequest::Active);
                }
            }
            let Some(negotiated) = die.adapter.negotiated() else { continue };
            // CXL.cachemem flits on a CXL link, PCIe (or streaming) flits otherwise, numbered
            // at the start of the payload.
            loop {
                let stack = if stacks[1] && die.sent[1] < die.sent[0] { 1 } else { 0 };
                let s = usize::from(stack);
                if die.sent[s] >= self.config.flits || !die.adapter.can_send(stack) {
                    break;
                }
                let pid = if negotiated.protocol_of(stack).layout_protocol() == Protocol::Cxl {
                    protocol_id::CXL_CACHEMEM
                } else {
                    protocol_id::PCIE
                };
                let header = FlitHeader { protocol_id: pid, ..FlitHeader::NOP };
                die.adapter.send(now, stack, header, &die.sent[s].to_le_bytes()).unwrap();
                die.sent[s] += 1;
            }
        }
        // Each die's adapter: events, sideband, one flit.
        for i in 0..2 {
            self.drain(i);
            let format = self.dies[i].adapter.negotiated().map_or(Format::Raw, |n| n.format);
            let mut out = vec![0u8; self.dies[i].adapter.flit_len()];
            if let Some(sent) = self.dies[i].adapter.poll_transmit(now, &mut out) {
                let header_at = if format == Format::Standard256EndHeader { 236 } else { 0 };
                let stack = sent.payload.map(|_| out[header_at] >> 5 & 1);
                let alternates =
                    self.dies[i].adapter.negotiated().is_some_and(|n| stack.is_some_and(|s| n.alternates(s)));
                if alternates && stack == self.dies[i].last_stack {
                    self.report.same_stack_back_to_back += 1;
                }
                self.dies[i].last_stack = stack;
                if self.up_since.is_none() && self.dies.iter().all(|d| d.adapter.status(0) == LinkStatus::Active) {
                    self.up_since = Some(self.now);
                }
                if format == Format::Flit68 {
                    // The 68B stream: a PDS before a replay, then the flit.
                    let die = &mut self.dies[i];
                    let mut stream = vec![0u8; 512];
                    let mut len = 0;
                    if sent.pds_before {
                        let pds = die.packer.push_pds(die.adapter.retry().pds_header(), &mut stream).unwrap();
                        die.adapter.note_pds(now, pds);
                        len += pds;
                    }
                    len += die.packer.push(out[..68].try_into().unwrap(), &mut stream[len..]).unwrap();
                    stream.truncate(len);
                    out = stream;
                }
                let ber = self.ber();
                self.corrupt(&mut out, ber);
                self.mainband[1 - i].push_back((self.now + MAINBAND_DELAY, out));
            }
            self.drain(i);
        }
        if let Some(t) = [0, 1].iter().filter_map(|&i| self.dies[i].adapter.poll_timeout()).min() {
            if t <= now {
                for i in 0..2 {
                    self.dies[i].adapter.handle_timeout(now);
                    self.drain(i);
                }
            }
        }
        self.now += 1;
    }

    fn receive(die: &mut Die, to: usize, now: Instant, flit: &[u8]) {
        if let Some(d) = die.adapter.handle_flit(now, flit) {
            let n = u64::from_le_bytes(d.flit.payload()[0][..8].try_into().unwrap());
            let s = usize::from(d.stack);
            assert_eq!(n, die.received[s], "die {to} stack {s} receives each flit once, in order");
            die.received[s] += 1;
        }
    }

    fn stacks(&self) -> [bool; 2] {
        self.dies[0].adapter.negotiated().map_or([true, false], |n| n.stacks)
    }

    fn ber(&self) -> f64 {
        match (self.config.burst_at, self.up_since) {
            (Some(at), Some(up)) if self.now >= up + at && self.now < up + at + self.config.burst_len => {
                self.config.burst_ber
            }
            _ => self.config.ber,
        }
    }

    /// Flips each bit with probability `ber` (drawn as a count of flips per flit).
    fn corrupt(&mut self, flit: &mut [u8], ber: f64) {
        if ber <= 0.0 {
            return;
        }
        let bits = flit.len() as f64 * 8.0;
        // P(at least one flip) for the whole flit, then one to three flips.
        if self.rng.chance(1.0 - (1.0 - ber).powf(bits)) {
            self.report.corrupted += 1;
            for _ in 0..=self.rng.below(3) {
                let b = self.rng.below(flit.len() as u64 * 8) as usize;
                flit[b / 8] ^= 1 << (b % 8);
            }
        }
    }

    fn drain(&mut self, i: usize) {
        let now = self.instant();
        while let Some(e) = self.dies[i].adapter.poll_event() {
            if self.config.verbose {
                match e {
                    AdapterEvent::RxActiveRequest { .. } => {}
                    AdapterEvent::Negotiated(n) => println!(
                        "{:>9} ns  die {i}: negotiated {:?}, Format {} ({:?}), retry {}",
                        self.now,
                        n.protocol,
                        n.format.number(),
                        n.format,
                        n.retry
                    ),
                    e => println!("{:>9} ns  die {i}: {e:?}", self.now),
                }
            }
            match e {
                AdapterEvent::RxActiveRequest { stack, request } => {
                    self.dies[i].adapter.handle_rx_active(now, stack, request)
                }
                AdapterEvent::RdiRequest(LinkRequest::Retrain) if self.retrain_until.is_none() => {
                    self.report.retrains += 1;
                    self.retrain_until = Some(self.now + RETRAIN_TIME);
                    // In-flight flits are lost with the lanes' retrain; the 68B streams start
                    // again 256-byte aligned.
                    self.mainband = [VecDeque::new(), VecDeque::new()];
                    for d in &mut self.dies {
                        d.packer = Packer::new();
                        d.unpacker = Unpacker::new(true);
                    }
                    self.set_rdi(LinkStatus::Retrain);
                    if self.config.burst_at.is_some() {
                        // Recalibration: the burst is over.
                        self.config.burst_len = 0;
                    }
                }
                AdapterEvent::RdiLinkError => self.set_rdi(LinkStatus::LinkError),
                AdapterEvent::Uncorrectable(_) => self.report.uncorrectable += 1,
                _ => {}
            }
        }
        while let Some(p) = self.dies[i].adapter.poll_sideband() {
            let mut bytes = [0u8; 16];
            let n = p.emit(&mut bytes).unwrap();
            self.sideband[1 - i].push_back((self.now + SIDEBAND_DELAY, bytes[..n].to_vec()));
        }
    }

    /// Advances time without traffic (the silent-peer case): returns the report once the
    /// downstream die's parameter exchange has failed or `ns` passed.
    pub fn run_idle(mut self, ns: u64) -> UcieSimReport {
        self.set_rdi(LinkStatus::Active);
        for _ in 0..100 {
            self.step();
        }
        let later = self.instant().saturating_add(Duration::from_nanos(ns));
        for i in 0..2 {
            self.dies[i].adapter.handle_timeout(later);
            self.drain(i);
        }
        self.report.exchange = Some(self.dies[0].adapter.exchange());
        self.report
    }
}
