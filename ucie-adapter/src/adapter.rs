//! The whole D2D adapter of one die (UCIe 2.0 chapter 3): parameter exchange, one adapter link
//! state machine per stack, retry, and the arbitration of two stacks onto one mainband, wired
//! to the physical layer's RDI and the protocol layers' FDI.
//!
//! Sans-I/O, like its parts: the embedder feeds what the physical layer reports
//! ([`Adapter::handle_rdi`]: RDI status; [`Adapter::handle_sideband`]: sideband packets from
//! the peer's adapter; [`Adapter::handle_flit`]: mainband flits), what the protocol layers ask
//! ([`Adapter::handle_request`], [`Adapter::handle_rx_active`], [`Adapter::send_with`]) and the
//! time ([`Adapter::handle_timeout`]); and takes what the adapter produces
//! ([`Adapter::poll_sideband`], [`Adapter::poll_transmit`] once per flit time,
//! [`Adapter::poll_event`]: state changes, RDI requests, errors).
//!
//! | RDI | the adapter |
//! |---|---|
//! | Active (from Reset) | runs parameter exchange; when it finishes, the stacks it enabled may enter Active, and retry starts its Sequence Number Handshake |
//! | Retrain | Active stacks follow to Retrain; back in Active, retry's handshake runs again |
//! | LinkError, LinkReset, Disabled | every stack follows |
//! | Reset | everything starts over, with a fresh parameter exchange |
//!
//! When every enabled stack is in L1 (or L2), the adapter asks RDI for it
//! ([`AdapterEvent::RdiRequest`]), and likewise for LinkReset and Disabled (the higher of the
//! two when the stacks differ); a protocol layer's Active request in PM asks RDI for Active,
//! and its Retrain request asks RDI for Retrain.
//!
//! Uncorrectable Internal Errors (a parameter-exchange or link-state timeout, an invalid
//! parameter exchange, retry's Adapter Timeout or invalid Ack/Nak, a payload flit with explicit
//! sequence 0, a CRC error without Retry) are reported as [`AdapterEvent::Uncorrectable`] and
//! ask RDI for LinkError ([`AdapterEvent::RdiLinkError`]); retry's escalations ask RDI for
//! Retrain ([`AdapterEvent::RdiRequest`]).
//!
//! With Multi_Protocol_Enable the two stacks share the link and the adapter (with Retry or
//! without) never sends two flits of one stack back to back, sending a NOP between them instead
//! (§3.1); with Enhanced Multi-Protocol the stacks may carry different protocols, and only a
//! stack limited to half the link alternates ([`Negotiated::alternates`]).
//!
//! *Project-defined:* Format 1 (raw) is not carried by this type (its bytes pass the adapter
//! unmodified, so there is nothing to do); a stack's PM entry waits until the whole retry
//! buffer is empty (the buffer is shared); an invalid parameter exchange is reported as an
//! Uncorrectable Internal Error like its timeout.

use crate::crc::{self, Format};
use crate::flit::{Flit, Layout, Map, Protocol};
use crate::header::{FlitHeader, FlitType, ReplayCommand, protocol_id};
use crate::lsm::{AdapterLsm, LinkRequest, LinkStatus, LsmConfig, LsmError, LsmEvent};
use crate::param::{ExchangeConfig, ExchangeError, ExchangeState, Negotiated, ParamExchange, Role};
use crate::retry::{Received, Retry, RetryConfig, RetryError, RetryEvent, Sent, UncorrectableCause};
use crate::sideband::{DST_REMOTE_ADAPTER, Message, Packet, SRC_ADAPTER, Severity};
use heapless::Deque;
use linklayer::{Instant, ZeroOption};

/// An Uncorrectable Internal Error's cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Uncorrectable {
    /// Parameter exchange failed.
    Exchange(ExchangeError),
    /// A stack's link state request got no response (Header Log 2 0010b/0011b).
    LsmTimeout {
        /// The stack.
        stack: u8,
    },
    /// Retry found one.
    Retry(UncorrectableCause),
    /// A CRC error without Retry.
    CrcWithoutRetry,
}

/// What the adapter reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AdapterEvent {
    /// Parameter exchange finished.
    Negotiated(Negotiated),
    /// A stack's `pl_state_sts` changed.
    Status {
        /// The stack.
        stack: u8,
        /// The new status.
        status: LinkStatus,
    },
    /// A stack's `pl_rx_active_req` changed; answer with [`Adapter::handle_rx_active`].
    RxActiveRequest {
        /// The stack.
        stack: u8,
        /// The new value.
        request: bool,
    },
    /// A stack's `pl_stallreq` changed (before PM entry); answer with
    /// [`Adapter::handle_stall_ack`].
    StallRequest {
        /// The stack.
        stack: u8,
        /// The new value.
        request: bool,
    },
    /// The peer asks a stack for PM: the protocol layer requests L1/L2 within 1 µs to agree.
    PmRequested {
        /// The stack.
        stack: u8,
        /// L1 or L2.
        state: crate::sideband::LinkState,
    },
    /// Drive this `lp_state_req` on RDI.
    RdiRequest(LinkRequest),
    /// Assert `lp_linkerror` on RDI.
    RdiLinkError,
    /// An Uncorrectable Internal Error (logged; RDI is asked for LinkError).
    Uncorrectable(Uncorrectable),
    /// A Correctable Internal Error: the replay timer expired.
    ReplayTimeout,
    /// The peer reported an error over the sideband ({ErrMsg}).
    PeerError(Severity),
}

/// Why a flit cannot be queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SendError {
    /// The stack is not enabled, or not Active.
    NotActive,
    /// No room: wait for Acks (or for the last flit to go, without Retry).
    Full,
    /// The negotiated format is raw or has no map for the flit (a management flit in
    /// Format 2, or one with the marker bit, which Format 2 keeps for the PDS header).
    Format,
    /// The header reads as the adapter's own NOP (Protocol ID 00b with Flit Type 00b): a
    /// receiver would discard it.
    Nop,
}

impl core::fmt::Display for SendError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SendError::NotActive => f.write_str("stack not active"),
            SendError::Full => f.write_str("transmit buffer full"),
            SendError::Format => f.write_str("format carries no such flit"),
            SendError::Nop => f.write_str("a protocol flit cannot carry Protocol ID 00b"),
        }
    }
}

impl core::error::Error for SendError {}

/// A received flit for a protocol layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery<'a> {
    /// The stack it is for.
    pub stack: u8,
    /// The flit, read in place.
    pub flit: Flit<'a>,
}

/// One die's D2D adapter, with a retry buffer of `N` flits in storage `B` (at least
/// `N × 256` bytes).
///
/// Size on a 64-bit host: 4 720 bytes with a retry buffer of 64 flits, 32 more per flit, besides
/// the buffer. Built in place: [`Adapter::EMPTY`] and [`Adapter::init`].
#[derive(Clone, Debug)]
pub struct Adapter<B, const N: usize> {
    exchange: ParamExchange,
    lsm: [AdapterLsm; 2],
    retry: Retry<B, N>,
    negotiated: ZeroOption<Negotiated>,
    exchange_failed: bool,
    rdi_requested: ZeroOption<LinkRequest>,
    rdi: LinkStatus,
    /// When RDI left Active, while it is elsewhere: the timeouts that count only while RDI is
    /// Active resume from where they stopped.
    inactive_since: ZeroOption<Instant>,
    /// Without Retry: one flit waiting to go, and whether its CRCs are to be corrupted.
    staged: ZeroOption<(bool, [u8; 256])>,
    last_stack: Option<u8>,
    sideband: Deque<Packet, 8>,
    events: Deque<AdapterEvent, 16>,
}

const PLACEHOLDER: Format = Format::Standard256StartHeader;

impl<const L: usize, const N: usize> Adapter<[u8; L], N> {
    /// An adapter with its retry buffer inline and every byte zero, so a `static` holding it
    /// lands in `.bss` (no flash, no start-up copy). It advertises nothing
    /// ([`ExchangeConfig::ZERO`], no timeout, so parameter exchange fails at once) until
    /// [`Adapter::init`] configures it in place.
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> Adapter<B, N> {
    /// An adapter before link initialization. `exchange` says what it advertises; the
    /// upstream port (or either side of a streaming link) initiates PM. (Built on the stack;
    /// see [`Adapter::init`] for building one in place.)
    pub fn new(exchange: ExchangeConfig, storage: B) -> Self {
        let mut adapter = Self::unconfigured(storage);
        adapter.init(exchange);
        adapter
    }

    /// An adapter with every field zero but `storage`.
    const fn unconfigured(storage: B) -> Self {
        Adapter {
            exchange: ParamExchange::EMPTY,
            lsm: [AdapterLsm::EMPTY, AdapterLsm::EMPTY],
            retry: Retry::unconfigured(storage),
            negotiated: ZeroOption::NONE,
            exchange_failed: false,
            rdi_requested: ZeroOption::NONE,
            rdi: LinkStatus::Reset,
            inactive_since: ZeroOption::NONE,
            staged: ZeroOption::NONE,
            last_stack: None,
            sideband: Deque::new(),
            events: Deque::new(),
        }
    }

    /// Makes this adapter what [`Adapter::new`]`(exchange, storage)` returns with its own
    /// storage, in place (without a second adapter on the stack): before link initialization,
    /// the retry buffer empty, no event. On an [`Adapter::EMPTY`] in a `static`, this is how
    /// firmware builds one.
    pub fn init(&mut self, exchange: ExchangeConfig) {
        let pm_initiator = exchange.role != Role::Downstream;
        self.exchange.init(exchange);
        for (stack, lsm) in (0..).zip(&mut self.lsm) {
            lsm.init(LsmConfig::new(stack, pm_initiator));
        }
        self.retry.init(RetryConfig::new(PLACEHOLDER, Protocol::Streaming));
        self.negotiated.clear();
        self.exchange_failed = false;
        self.rdi_requested.clear();
        self.rdi = LinkStatus::Reset;
        self.inactive_since.clear();
        self.staged.clear();
        self.last_stack = None;
        self.sideband.clear();
        self.events.clear();
    }

    /// The result of parameter exchange, once done.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.negotiated.into_option()
    }

    /// A stack's `pl_state_sts`.
    pub fn status(&self, stack: u8) -> LinkStatus {
        self.lsm(stack).status()
    }

    /// The retry machine (read-only: statistics, buffer occupancy).
    pub fn retry(&self) -> &Retry<B, N> {
        &self.retry
    }

    /// Parameter exchange's progress.
    pub fn exchange(&self) -> ExchangeState {
        self.exchange.state()
    }

    fn lsm(&self, stack: u8) -> &AdapterLsm {
        let [a, b] = &self.lsm;
        if stack == 0 { a } else { b }
    }

    fn lsm_mut(&mut self, stack: u8) -> &mut AdapterLsm {
        let [a, b] = &mut self.lsm;
        if stack == 0 { a } else { b }
    }

    fn event(&mut self, e: AdapterEvent) {
        // Sixteen entries outlast any single call's events; an overflow drops the newest.
        let _ = self.events.push_back(e);
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<AdapterEvent> {
        self.events.pop_front()
    }

    /// The next sideband packet for the peer's adapter.
    pub fn poll_sideband(&mut self) -> Option<Packet> {
        self.sideband.pop_front()
    }

    fn uncorrectable(&mut self, u: Uncorrectable) {
        self.event(AdapterEvent::Uncorrectable(u));
        self.event(AdapterEvent::RdiLinkError);
    }

    /// Moves what the parts produced into the adapter's queues.
    fn collect(&mut self, now: Instant) {
        while let Some(m) = self.exchange.poll_message() {
            self.push_message(m);
        }
        if let (ExchangeState::Failed(e), false) = (self.exchange.state(), self.exchange_failed) {
            self.exchange_failed = true;
            self.uncorrectable(Uncorrectable::Exchange(e));
        }
        if let (Some(n), None) = (self.exchange.negotiated(), self.negotiated.into_option()) {
            self.on_negotiated(now, n);
        }
        self.collect_lsms();
        while let Some(e) = self.retry.poll_event() {
            match e {
                RetryEvent::Retrain(_) => self.event(AdapterEvent::RdiRequest(LinkRequest::Retrain)),
                RetryEvent::Uncorrectable(c) => self.uncorrectable(Uncorrectable::Retry(c)),
                RetryEvent::ReplayScheduled { timeout: true, .. } => self.event(AdapterEvent::ReplayTimeout),
                RetryEvent::ReplayScheduled { .. } | RetryEvent::HandshakeComplete => {}
            }
        }
        let idle = self.retry.buffer().is_empty() && self.staged.is_none();
        for l in &mut self.lsm {
            l.set_retry_idle(now, idle);
        }
        // `set_retry_idle` may have moved PM entry on.
        self.collect_lsms();
        self.request_rdi_for_stacks();
    }

    /// What RDI is asked for once every enabled stack is there (§3.5, §3.6): the same PM
    /// state; or, when all are down, the highest of LinkError > Disabled > LinkReset.
    fn request_rdi_for_stacks(&mut self) {
        let Some(n) = self.negotiated.into_option() else { return };
        if !n.stacks.contains(&true) {
            return;
        }
        let [a, b] = &self.lsm;
        let stacks = [(n.stacks[0], a.status()), (n.stacks[1], b.status())];
        let all = |f: &dyn Fn(LinkStatus) -> bool| stacks.iter().filter(|(e, _)| *e).all(|(_, s)| f(*s));
        let any = |s: LinkStatus| stacks.iter().any(|&(e, x)| e && x == s);
        let down = |s: LinkStatus| matches!(s, LinkStatus::LinkReset | LinkStatus::Disabled | LinkStatus::LinkError);
        let pm = |s: LinkStatus| matches!(s, LinkStatus::L1 | LinkStatus::L2);
        let want = if all(&pm) {
            // All in PM: the shallowest state any stack is in.
            Some(if any(LinkStatus::L1) { LinkRequest::L1 } else { LinkRequest::L2 })
        } else if all(&down) && any(LinkStatus::Disabled) && !any(LinkStatus::LinkError) {
            Some(LinkRequest::Disable)
        } else if all(&down) && !any(LinkStatus::LinkError) {
            Some(LinkRequest::LinkReset)
        } else {
            None
        };
        let Some(w) = want else {
            self.rdi_requested.clear();
            return;
        };
        // Table 10-4: RDI takes PM from Active, LinkReset and Disable also from PM.
        let takes = match w {
            LinkRequest::L1 | LinkRequest::L2 => self.rdi == LinkStatus::Active,
            _ => matches!(self.rdi, LinkStatus::Active | LinkStatus::Retrain | LinkStatus::L1 | LinkStatus::L2),
        };
        if takes && self.rdi_requested.into_option() != want {
            self.event(AdapterEvent::RdiRequest(w));
            self.rdi_requested = want.into();
        }
    }

    fn collect_lsms(&mut self) {
        for stack in 0..2u8 {
            while let Some(m) = self.lsm_mut(stack).poll_message() {
                self.push_message(m);
            }
            while let Some(e) = self.lsm_mut(stack).poll_event() {
                match e {
                    LsmEvent::Status(status) => self.event(AdapterEvent::Status { stack, status }),
                    LsmEvent::RxActiveRequest(request) => self.event(AdapterEvent::RxActiveRequest { stack, request }),
                    LsmEvent::StallRequest(request) => self.event(AdapterEvent::StallRequest { stack, request }),
                    LsmEvent::PmRequested(state) => self.event(AdapterEvent::PmRequested { stack, state }),
                    LsmEvent::Timeout(_) => self.uncorrectable(Uncorrectable::LsmTimeout { stack }),
                }
            }
        }
    }

    fn push_message(&mut self, m: Message) {
        let _ = self.sideband.push_back(Packet::Message(m.to_packet(SRC_ADAPTER, DST_REMOTE_ADAPTER)));
    }

    fn on_negotiated(&mut self, now: Instant, n: Negotiated) {
        self.negotiated = ZeroOption::Some(n);
        self.event(AdapterEvent::Negotiated(n));
        if n.format != Format::Raw {
            let protocols = [n.protocol_of(0).layout_protocol(), n.protocol_of(1).layout_protocol()];
            self.retry.reconfigure(RetryConfig { protocols, ..RetryConfig::new(n.format, protocols[0]) });
        }
        let up = self.rdi == LinkStatus::Active;
        for (l, enabled) in self.lsm.iter_mut().zip(n.stacks) {
            l.set_ready(now, enabled && up);
        }
    }

    /// RDI's `pl_state_sts` changed.
    pub fn handle_rdi(&mut self, now: Instant, status: LinkStatus) {
        let previous = self.rdi;
        self.rdi = status;
        if previous == LinkStatus::Active && status != LinkStatus::Active {
            self.inactive_since = ZeroOption::Some(now);
        }
        match status {
            LinkStatus::Active => {
                // Parameter exchange's timeout and the Adapter Timeout count only while RDI is
                // Active (§3.2.1.2, Table 9-33): a Retrain or PM stretch stops them, not restarts.
                if let Some(since) = self.inactive_since.take() {
                    let stopped = now.saturating_duration_since(since);
                    self.exchange.postpone(now, stopped);
                    self.retry.postpone(now, stopped);
                }
                if self.negotiated.is_none() {
                    if matches!(self.exchange.state(), ExchangeState::Idle) {
                        self.exchange.start(now);
                    }
                } else {
                    // Back to Active (from Retrain, or from PM, which retrains the lanes):
                    // a new Sequence Number Handshake.
                    if previous != LinkStatus::Active {
                        self.retry.retrain();
                    }
                    let stacks = self.negotiated.into_option().map_or([false; 2], |n| n.stacks);
                    for (l, enabled) in self.lsm.iter_mut().zip(stacks) {
                        l.set_ready(now, enabled);
                    }
                }
            }
            LinkStatus::Reset => {
                self.inactive_since.clear();
                let config = *self.exchange.config();
                self.exchange.init(config);
                self.negotiated.clear();
                self.exchange_failed = false;
                self.retry.reset();
                self.staged.clear();
                self.last_stack = None;
            }
            _ => {
                if !matches!(status, LinkStatus::Retrain | LinkStatus::L1 | LinkStatus::L2) {
                    self.exchange.stop();
                }
            }
        }
        for l in &mut self.lsm {
            l.handle_rdi(now, status);
            if status != LinkStatus::Active {
                l.set_ready(now, false);
            }
        }
        self.collect(now);
    }

    /// A sideband packet from the peer: capability messages go to parameter exchange,
    /// {LinkMgmt.Adapter*} to the stacks' state machines; the physical layer's messages and
    /// register accesses are not the adapter's and are ignored.
    pub fn handle_sideband(&mut self, now: Instant, packet: &Packet) {
        let Packet::Message(p) = packet else { return };
        let m = Message::from_packet(p);
        match m {
            Message::Capability { .. } => self.exchange.handle_message(now, &m),
            Message::LinkRequest { .. } | Message::LinkResponse { .. } => {
                for l in &mut self.lsm {
                    l.handle_message(now, &m);
                }
            }
            Message::Error(s) => self.event(AdapterEvent::PeerError(s)),
            _ => {}
        }
        self.collect(now);
    }

    /// A stack's `lp_state_req`. Requests on stacks parameter exchange did not enable are
    /// refused as not ready.
    pub fn handle_request(&mut self, now: Instant, stack: u8, request: LinkRequest) -> Result<(), LsmError> {
        let enabled =
            self.negotiated.into_option().is_none_or(|n| n.stacks.get(usize::from(stack)).copied().unwrap_or(false));
        if !enabled || stack > 1 {
            return Err(LsmError::NotReady);
        }
        let r = self.lsm_mut(stack).handle_request(now, request);
        if r.is_ok() {
            match request {
                // PM exit or bring-up: the physical layer must be brought to Active first.
                LinkRequest::Active if self.rdi != LinkStatus::Active => {
                    self.event(AdapterEvent::RdiRequest(LinkRequest::Active))
                }
                // Retrain is RDI's (the protocol layer may ask for it in Active).
                LinkRequest::Retrain => self.event(AdapterEvent::RdiRequest(LinkRequest::Retrain)),
                _ => {}
            }
        }
        self.collect(now);
        r
    }

    /// A stack's `lp_rx_active_sts`.
    pub fn handle_rx_active(&mut self, now: Instant, stack: u8, sts: bool) {
        if stack <= 1 {
            self.lsm_mut(stack).handle_rx_active(now, sts);
        }
        self.collect(now);
    }

    /// A stack's `lp_stallack`.
    pub fn handle_stall_ack(&mut self, now: Instant, stack: u8, ack: bool) {
        if stack <= 1 {
            self.lsm_mut(stack).handle_stall_ack(now, ack);
        }
        self.collect(now);
    }

    /// The protocol layer's `lp_linkerror` (or its release).
    pub fn handle_linkerror(&mut self, now: Instant, asserted: bool) {
        for l in &mut self.lsm {
            l.handle_linkerror(now, asserted);
        }
        if asserted {
            self.event(AdapterEvent::RdiLinkError);
        }
        self.collect(now);
    }

    /// Queues a flit from `stack`'s protocol layer. `header` gives its Protocol ID
    /// ([`crate::header::protocol_id`]), Flit Type (management flits) and DLP/FM marker
    /// (Formats 3–6; [`SendError::Format`] in Format 2, where the bit marks a PDS); the
    /// stack ID, sequence number and CRCs are the adapter's. `fill` builds the rest in place:
    /// it gets the flit's [`Map`] (where the payload runs, DLP, FM and CRD bytes are for this
    /// format and protocol) and the zeroed flit. [`Adapter::send`] copies a payload instead.
    pub fn send_with(
        &mut self,
        now: Instant,
        stack: u8,
        header: FlitHeader,
        fill: impl FnOnce(&Map, &mut [u8]),
    ) -> Result<(), SendError> {
        self.queue(now, stack, header, false, fill)
    }

    /// [`Adapter::send_with`] with `lp_corrupt_crc`: the flit goes out with both CRCs
    /// corrupted (CXL.cachemem viral and poison containment, Table 10-3) and is never
    /// replayed — the next flit takes its place. Only with Retry ([`SendError::Format`]
    /// otherwise), and only as the next flit to go out; nothing is queued behind it until it
    /// has gone ([`SendError::Full`]).
    pub fn send_corrupted_with(
        &mut self,
        now: Instant,
        stack: u8,
        header: FlitHeader,
        fill: impl FnOnce(&Map, &mut [u8]),
    ) -> Result<(), SendError> {
        self.queue(now, stack, header, true, fill)
    }

    fn queue(
        &mut self,
        now: Instant,
        stack: u8,
        header: FlitHeader,
        corrupt: bool,
        fill: impl FnOnce(&Map, &mut [u8]),
    ) -> Result<(), SendError> {
        let Some(n) = self.negotiated.into_option() else { return Err(SendError::NotActive) };
        // lp_corrupt_crc applies only with Retry (Table 10-3); without it the peer would
        // raise an Uncorrectable Internal Error.
        if corrupt && !n.retry {
            return Err(SendError::Format);
        }
        if n.format == Format::Raw {
            return Err(SendError::Format);
        }
        if !matches!(self.status(stack), LinkStatus::Active | LinkStatus::ActivePmNak) {
            return Err(SendError::NotActive);
        }
        if header.protocol_id == protocol_id::ADAPTER && header.flit_type == FlitType::Protocol {
            return Err(SendError::Nop);
        }
        // In Format 2 the marker bit is the adapter's Pause of Data Stream header (Tables 3-2,
        // 3-3): a receiver would read the flit as a PDS and drop the stream's alignment.
        if header.marker && n.format == Format::Flit68 {
            return Err(SendError::Format);
        }
        let map = Map::new(n.format, Layout::of(n.protocol_of(stack).layout_protocol(), &header))
            .map_err(|_| SendError::Format)?;
        let bits = FlitHeader { stack, command: ReplayCommand::Explicit, seq: 0, ..header };
        let bytes = bits.emit_for(n.format, n.retry).map_err(|_| SendError::Format)?;
        let stamp = move |f: &mut [u8]| {
            fill(&map, f);
            if let Some(h) = f.get_mut(map.header.start..map.header.end) {
                h.copy_from_slice(&bytes);
            }
        };
        if n.retry {
            let queued =
                if corrupt { self.retry.send_corrupted_with(now, stamp) } else { self.retry.send_with(now, stamp) };
            queued.map_err(|e| match e {
                RetryError::Full | RetryError::Busy => SendError::Full,
                _ => SendError::Format,
            })?;
        } else {
            if self.staged.is_some() {
                return Err(SendError::Full);
            }
            let mut f = [0u8; 256];
            let len = n.format.flit_len();
            if let Some(b) = f.get_mut(..len) {
                stamp(b);
            }
            self.staged = ZeroOption::Some((corrupt, f));
        }
        self.collect(now);
        Ok(())
    }

    /// Queues a flit whose payload runs carry `payload` (at most the map's
    /// [`Map::payload_len`] bytes; the rest is zero); see [`Adapter::send_with`].
    pub fn send(&mut self, now: Instant, stack: u8, header: FlitHeader, payload: &[u8]) -> Result<(), SendError> {
        self.send_with(now, stack, header, |map, f| {
            let mut rest = payload;
            for span in map.payload {
                let k = span.len().min(rest.len());
                if let (Some(d), Some(s)) = (f.get_mut(span.start..span.start + k), rest.get(..k)) {
                    d.copy_from_slice(s);
                }
                rest = rest.get(k..).unwrap_or_default();
            }
        })
    }

    /// The flit length of the negotiated format (what [`Adapter::poll_transmit`] writes and
    /// [`Adapter::handle_flit`] takes): 68 or 256; 0 before negotiation or for Format 1.
    pub fn flit_len(&self) -> usize {
        self.negotiated.into_option().map_or(0, |n| n.format.flit_len())
    }

    /// Whether [`Adapter::send_with`] would accept a flit for `stack` now.
    pub fn can_send(&self, stack: u8) -> bool {
        let Some(n) = self.negotiated.into_option() else { return false };
        let active = matches!(self.status(stack), LinkStatus::Active | LinkStatus::ActivePmNak);
        active && n.format != Format::Raw && if n.retry { self.retry.can_send() } else { self.staged.is_none() }
    }

    /// The flit for this flit time, into `out` (the negotiated format's length); `None` when
    /// nothing needs sending or the mainband is not up.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut [u8]) -> Option<Sent> {
        let n = self.negotiated.into_option()?;
        if self.rdi != LinkStatus::Active || n.format == Format::Raw {
            return None;
        }
        let sent = if n.retry {
            let next_stack = self.retry.peek_payload().map(|f| self.retry.stack_of(f));
            let sent = match (next_stack, self.last_stack) {
                (Some(s), Some(last)) if s == last && n.alternates(s) => self.retry.poll_nop(now, out),
                _ => self.retry.poll_transmit(now, out),
            };
            if let Some(s) = &sent {
                self.last_stack = s.payload.map(|_| self.retry.stack_of(out));
            }
            sent
        } else {
            let len = n.format.flit_len();
            if out.len() < len {
                return None;
            }
            let (corrupt, flit) = self.staged.into_option()?;
            let (dst, src) = (out.get_mut(..len)?, flit.get(..len)?);
            let stack = self.retry.stack_of(src);
            let payload = if self.last_stack == Some(stack) && n.alternates(stack) {
                // Never two flits of a stack back to back (§3.1): a NOP between them.
                dst.fill(0);
                let _ = crc::seal_corrupted(n.format, dst, 0);
                self.last_stack = None;
                None
            } else {
                self.staged.clear();
                dst.copy_from_slice(src);
                let _ = crc::seal_corrupted(n.format, dst, if corrupt { 0b11 } else { 0 });
                self.last_stack = Some(stack);
                Some(0)
            };
            Some(Sent { payload, replay: false, command: ReplayCommand::Explicit, seq: 0, pds_before: false })
        };
        self.collect(now);
        sent
    }

    /// Format 2: a PDS of `bytes` went out in the stream ([`Retry::note_pds`]: the replay
    /// timer counts them).
    pub fn note_pds(&mut self, now: Instant, bytes: usize) {
        self.retry.note_pds(bytes);
        self.collect(now);
    }

    /// A mainband flit from the peer: checked, its Ack/Nak processed, and returned when it is
    /// the next payload flit for a protocol layer.
    pub fn handle_flit<'a>(&mut self, now: Instant, bytes: &'a [u8]) -> Option<Delivery<'a>> {
        let n = self.negotiated.into_option()?;
        let delivered = if n.retry {
            match self.retry.handle_flit(now, bytes) {
                Received::Deliver { flit, .. } => Some(Delivery { stack: flit.header().stack, flit }),
                Received::Discarded(_) => None,
            }
        } else {
            // Stack 1 may carry another protocol (Enhanced Multi-Protocol): read its flits
            // with its own map.
            let parsed = match Flit::parse(n.format, n.protocol.layout_protocol(), false, bytes) {
                Ok(f) if f.header().stack == 1 && n.protocol1.is_some() => {
                    Flit::parse(n.format, n.protocol_of(1).layout_protocol(), false, bytes)
                }
                other => other,
            };
            match parsed {
                Ok(flit) if flit.is_nop() => None,
                Ok(flit) => Some(Delivery { stack: flit.header().stack, flit }),
                Err(crate::flit::FlitError::Crc(_)) => {
                    self.uncorrectable(Uncorrectable::CrcWithoutRetry);
                    None
                }
                Err(_) => None,
            }
        };
        self.collect(now);
        delivered
    }

    /// The earliest deadline of any part.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let [a, b] = &self.lsm;
        let active = self.rdi == LinkStatus::Active;
        let (exchange, retry) =
            if active { (self.exchange.poll_timeout(), self.retry.poll_timeout()) } else { (None, None) };
        [exchange, a.poll_timeout(), b.poll_timeout(), retry].into_iter().flatten().min()
    }

    /// Fires every due deadline. Parameter exchange's timeout and retry's Adapter Timeout
    /// count only while RDI is Active (§3.2.1.2, Table 9-33): outside Active they wait, and
    /// back in Active they run on for what was left of them.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.rdi == LinkStatus::Active {
            self.exchange.handle_timeout(now);
            self.retry.handle_timeout(now);
        }
        for l in &mut self.lsm {
            l.handle_timeout(now);
        }
        self.collect(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::param::{AdapterCaps as A, CxlCaps};
    use std::vec::Vec;

    type D = Adapter<[u8; 4096], 16>;
    const T: Instant = Instant::ZERO;

    /// Runs the sideband and answers every handshake request; returns each die's events.
    fn settle(dies: &mut [D; 2]) -> [Vec<AdapterEvent>; 2] {
        let mut log = [Vec::new(), Vec::new()];
        for _ in 0..20 {
            for i in 0..2 {
                while let Some(e) = dies[i].poll_event() {
                    match e {
                        AdapterEvent::RxActiveRequest { stack, request } => dies[i].handle_rx_active(T, stack, request),
                        AdapterEvent::StallRequest { stack, request } => dies[i].handle_stall_ack(T, stack, request),
                        _ => {}
                    }
                    log[i].push(e);
                }
                while let Some(p) = dies[i].poll_sideband() {
                    dies[1 - i].handle_sideband(T, &p);
                }
            }
        }
        log
    }

    fn configs() -> [ExchangeConfig; 2] {
        let caps = A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT | A::RETRY | A::STACK0;
        let cxl = CxlCaps::CXL_IO;
        [ExchangeConfig::new(Role::Downstream, caps, cxl), ExchangeConfig::new(Role::Upstream, caps, cxl)]
    }

    fn up_pair() -> [D; 2] {
        let mut dies = configs().map(|c| D::new(c, [0; 4096]));
        bring_up(&mut dies);
        dies
    }

    /// RDI Active, parameter exchange and the Active Entry handshake of stack 0; each die's
    /// events.
    fn bring_up(dies: &mut [D; 2]) -> [Vec<AdapterEvent>; 2] {
        for d in dies.iter_mut() {
            d.handle_rdi(T, LinkStatus::Active);
        }
        let mut log = settle(dies);
        for d in dies.iter_mut() {
            d.handle_request(T, 0, LinkRequest::Nop).unwrap();
            d.handle_request(T, 0, LinkRequest::Active).unwrap();
        }
        let [a, b] = settle(dies);
        log[0].extend(a);
        log[1].extend(b);
        assert_eq!([dies[0].status(0), dies[1].status(0)], [LinkStatus::Active; 2]);
        log
    }

    #[test]
    fn init_in_place_restarts_as_new() {
        let mut fresh = configs().map(|c| D::new(c, [0; 4096]));
        let want = bring_up(&mut fresh);
        // Up, in L1 and with stack 0 retraining: configured afresh in place, the same bring-up.
        let mut used = up_pair();
        used[0].handle_request(T, 0, LinkRequest::Retrain).unwrap();
        used[1].handle_request(T, 0, LinkRequest::L1).unwrap();
        settle(&mut used);
        for (d, c) in used.iter_mut().zip(configs()) {
            d.init(c);
        }
        assert_eq!(bring_up(&mut used), want);
        assert_eq!(used.each_ref().map(|d| d.negotiated()), fresh.each_ref().map(|d| d.negotiated()));
        // From EMPTY: parameter exchange fails at once (no timeout) until configured.
        static EMPTY: D = D::EMPTY;
        let mut empty = [EMPTY.clone(), EMPTY.clone()];
        empty[0].handle_rdi(T, LinkStatus::Active);
        empty[0].handle_timeout(T);
        assert!(matches!(empty[0].exchange(), ExchangeState::Failed(_)), "{:?}", empty[0].exchange());
        for (d, c) in empty.iter_mut().zip(configs()) {
            d.init(c);
        }
        assert_eq!(bring_up(&mut empty), want);
    }

    #[test]
    fn stacks_drive_rdi() {
        let mut dies = up_pair();
        // A NOP-looking header is refused; stack 1 was not enabled.
        assert_eq!(dies[0].send(T, 0, FlitHeader::NOP, b"x"), Err(SendError::Nop));
        assert_eq!(dies[0].handle_request(T, 1, LinkRequest::Nop), Err(LsmError::NotReady));
        // The protocol layer's Retrain becomes an RDI request.
        dies[0].handle_request(T, 0, LinkRequest::Retrain).unwrap();
        assert_eq!(dies[0].poll_event(), Some(AdapterEvent::RdiRequest(LinkRequest::Retrain)));
        // Both in L1 (the upstream port asks, the downstream port agrees): RDI is asked for L1.
        dies[0].handle_request(T, 0, LinkRequest::L1).unwrap();
        dies[1].handle_request(T, 0, LinkRequest::L1).unwrap();
        let log = settle(&mut dies);
        assert_eq!([dies[0].status(0), dies[1].status(0)], [LinkStatus::L1; 2]);
        for l in &log {
            assert!(l.contains(&AdapterEvent::RdiRequest(LinkRequest::L1)), "{l:?}");
        }
    }

    /// A flit waits for its Ack while RDI retrains for 12 ms: the 8 ms Adapter Timeout counts
    /// only in Active, so it fires 8 ms of Active after the flit went (before, it fired as soon
    /// as RDI was Active again).
    #[test]
    fn the_adapter_timeout_stops_while_rdi_retrains() {
        let mut dies = up_pair();
        let ms = |n: u64| T.saturating_add(linklayer::Duration::from_millis(n));
        let header = FlitHeader { protocol_id: crate::header::protocol_id::CXL_IO, ..FlitHeader::NOP };
        dies[0].send(T, 0, header, &[7; 64]).unwrap();
        assert!(dies[0].poll_transmit(T, &mut [0u8; 256]).is_some(), "the flit goes, and is lost");
        assert_eq!(dies[0].poll_timeout(), Some(ms(8)));
        dies[0].handle_rdi(ms(3), LinkStatus::Retrain);
        dies[0].handle_timeout(ms(10));
        dies[0].handle_rdi(ms(15), LinkStatus::Active);
        assert_eq!(dies[0].poll_timeout(), Some(ms(20)), "3 ms in Active before, 5 left after");
        let timed_out = |d: &mut D| {
            core::iter::from_fn(|| d.poll_event())
                .any(|e| e == AdapterEvent::Uncorrectable(Uncorrectable::Retry(UncorrectableCause::RetryTimeout)))
        };
        dies[0].handle_timeout(ms(15));
        assert!(!timed_out(&mut dies[0]));
        dies[0].handle_timeout(ms(20));
        assert!(timed_out(&mut dies[0]));
        // Parameter exchange's 8 ms the same: one die up, its peer silent.
        let mut lone = D::new(configs()[0], [0; 4096]);
        lone.handle_rdi(T, LinkStatus::Active);
        lone.handle_rdi(ms(3), LinkStatus::Retrain);
        lone.handle_rdi(ms(15), LinkStatus::Active);
        assert_eq!(lone.poll_timeout(), Some(ms(20)));
        lone.handle_timeout(ms(19));
        assert!(!matches!(lone.exchange(), ExchangeState::Failed(_)));
        lone.handle_timeout(ms(20));
        assert!(matches!(lone.exchange(), ExchangeState::Failed(_)));
        // A stall that restarts the timeout while RDI retrains gives it its whole 8 ms from the
        // return, not the return plus the whole Retrain.
        let mut lone = D::new(configs()[0], [0; 4096]);
        lone.handle_rdi(T, LinkStatus::Active);
        lone.handle_rdi(ms(3), LinkStatus::Retrain);
        let stall = crate::sideband::Message::Capability {
            kind: crate::sideband::CapKind::Adapter,
            finalized: false,
            info: crate::sideband::STALL,
            caps: 0,
        };
        lone.handle_sideband(ms(90), &Packet::Message(stall.to_packet(SRC_ADAPTER, DST_REMOTE_ADAPTER)));
        lone.handle_rdi(ms(100), LinkStatus::Active);
        assert_eq!(lone.poll_timeout(), Some(ms(108)));
    }

    /// In Format 2 the marker bit would make a protocol flit a PDS header: refused.
    #[test]
    fn format_2_refuses_the_marker() {
        let caps = A::FLIT_68B | A::RETRY | A::STACK0;
        let cxl = CxlCaps::CXL_IO;
        let mut dies = [Role::Downstream, Role::Upstream].map(|r| D::new(ExchangeConfig::new(r, caps, cxl), [0; 4096]));
        bring_up(&mut dies);
        assert_eq!(dies[0].negotiated().map(|n| n.format), Some(Format::Flit68));
        let header = FlitHeader { protocol_id: crate::header::protocol_id::CXL_IO, ..FlitHeader::NOP };
        assert_eq!(dies[0].send(T, 0, FlitHeader { marker: true, ..header }, &[1; 8]), Err(SendError::Format));
        assert_eq!(dies[0].send(T, 0, header, &[1; 8]), Ok(()));
    }

    /// Multi_Protocol_Enable without Retry: two flits of stack 0 go with a NOP between them
    /// (§3.1), as with Retry (before, back to back).
    #[test]
    fn without_retry_a_stack_still_alternates() {
        let caps = A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT | A::STACK0 | A::STACK1 | A::MULTI_PROTOCOL;
        let mut dies = [Role::Downstream, Role::Upstream]
            .map(|r| D::new(ExchangeConfig::new(r, caps, CxlCaps::CXL_IO), [0; 4096]));
        bring_up(&mut dies);
        let n = dies[0].negotiated().unwrap();
        assert!(!n.retry && n.alternates(0));
        let header = FlitHeader { protocol_id: crate::header::protocol_id::CXL_IO, ..FlitHeader::NOP };
        let mut out = [0u8; 256];
        let (mut got, mut sent) = (Vec::new(), Vec::new());
        for payload in [1u8, 2] {
            dies[0].send(T, 0, header, &[payload; 8]).unwrap();
            while let Some(s) = dies[0].poll_transmit(T, &mut out) {
                sent.push(s.payload);
                got.push(dies[1].handle_flit(T, &out).and_then(|d| d.flit.payload()[0].first().copied()));
                if got.len() > 3 {
                    break;
                }
            }
        }
        assert_eq!(got, [Some(1), None, Some(2)], "flit, NOP, flit");
        // The caller tells its flits from the NOP by `Sent::payload`.
        assert_eq!(sent, [Some(0), None, Some(0)]);
    }

    #[test]
    fn link_reset_reaches_rdi() {
        let mut dies = up_pair();
        dies[0].handle_request(T, 0, LinkRequest::LinkReset).unwrap();
        let log = settle(&mut dies);
        assert_eq!([dies[0].status(0), dies[1].status(0)], [LinkStatus::LinkReset; 2]);
        for l in &log {
            assert!(l.contains(&AdapterEvent::RdiRequest(LinkRequest::LinkReset)), "{l:?}");
        }
    }
}
