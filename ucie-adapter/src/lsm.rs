//! The adapter link state machine (UCIe 2.0 §3.5, §10.2.7–10.2.9, §10.3): one per protocol
//! stack, exposed on FDI as `pl_state_sts`, coordinated with the peer's by
//! {LinkMgmt.Adapter0/1.*} sideband messages.
//!
//! | state | `pl_state_sts` | `lp_state_req` | entered |
//! |---|---|---|---|
//! | Reset | 0000b | NOP 0000b | at power-up, from LinkReset/Disabled/LinkError/L2 on an Active request |
//! | Active | 0001b | 0001b | Active Entry handshake: each side sends Req.Active and answers the peer's with Rsp.Active once `lp_rx_active_sts` = 1; Active when it has sent and received Rsp.Active |
//! | Active.PMNAK | 0011b | — | the peer refused PM; left on an Active request |
//! | L1 / L2 | 0100b / 1000b | 0100b / 1000b | PM handshake: Req.L1/L2 answered by Rsp.L1/L2 (or Rsp.PMNAK) |
//! | LinkReset | 1001b | 1001b | Req/Rsp.LinkReset, or RDI |
//! | LinkError | 1010b | (`lp_linkerror`) | from RDI, or `lp_linkerror`; left after ≥ 16 ms on an Active request |
//! | Retrain | 1011b | 1011b (RDI) | RDI retrains; left by a new Active Entry handshake after a NOP→Active request |
//! | Disabled | 1100b | 1100b | Req/Rsp.Disable, or RDI |
//!
//! Requests are sampled with [`AdapterLsm::handle_request`]; one the current state does not
//! consider (Table 10-4) is refused with [`LsmError::Ignored`] and changes nothing; from Reset
//! (and for leaving Retrain entered from Active) a request counts only after a NOP.
//! A request that expects a response times out after 8 ms (a stall response restarts it): an
//! Uncorrectable Internal Error, reported as [`LsmEvent::Timeout`], which takes RDI to
//! LinkError. PM entry waits until the retry buffer holds none of this stack's flits
//! ([`AdapterLsm::set_retry_idle`]) and for the StallReq/Ack handshake with the protocol layer
//! ([`LsmEvent::StallRequest`], [`AdapterLsm::handle_stall_ack`]); a PM request the local
//! protocol layer does not match within 1 µs is refused with PMNAK (at once in Retrain).
//!
//! *Project-defined:* which side may initiate PM (for PCIe and CXL only the upstream port,
//! §10.2.9) is [`LsmConfig::pm_initiator`]; LinkReset and Disable requests are accepted from
//! either side (the spec has the downstream port initiate them for PCIe and CXL); a request
//! for L2 is answered like one for L1; exit from L2 goes through Reset; a partner's
//! {Req.Active} that arrives while this end is still in LinkReset, Disabled or LinkError is
//! answered once this end comes out through Reset (the partner, already out, does not send it
//! again, and its 8 ms would run out); an RDI Reset in between voids it, as it resets the
//! partner too.

use crate::sideband::{LinkState, LinkTarget, Message};
use heapless::Deque;
use linklayer::{Duration, Instant, ZeroOption};

/// `pl_state_sts` (Table 10-3; the same encodings on RDI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LinkStatus {
    /// 0000b.
    Reset,
    /// 0001b.
    Active,
    /// 0011b.
    ActivePmNak,
    /// 0100b.
    L1,
    /// 1000b.
    L2,
    /// 1001b.
    LinkReset,
    /// 1010b.
    LinkError,
    /// 1011b.
    Retrain,
    /// 1100b.
    Disabled,
}

impl LinkStatus {
    /// The 4-bit encoding.
    pub const fn bits(self) -> u8 {
        match self {
            LinkStatus::Reset => 0b0000,
            LinkStatus::Active => 0b0001,
            LinkStatus::ActivePmNak => 0b0011,
            LinkStatus::L1 => 0b0100,
            LinkStatus::L2 => 0b1000,
            LinkStatus::LinkReset => 0b1001,
            LinkStatus::LinkError => 0b1010,
            LinkStatus::Retrain => 0b1011,
            LinkStatus::Disabled => 0b1100,
        }
    }

    /// Decodes a 4-bit status (`None` for a reserved value).
    pub const fn from_bits(v: u8) -> Option<LinkStatus> {
        Some(match v {
            0b0000 => LinkStatus::Reset,
            0b0001 => LinkStatus::Active,
            0b0011 => LinkStatus::ActivePmNak,
            0b0100 => LinkStatus::L1,
            0b1000 => LinkStatus::L2,
            0b1001 => LinkStatus::LinkReset,
            0b1010 => LinkStatus::LinkError,
            0b1011 => LinkStatus::Retrain,
            0b1100 => LinkStatus::Disabled,
            _ => return None,
        })
    }

    /// Whether the link is "up" for the protocol layer (Active, Active.PMNAK, Retrain, L1, L2).
    pub const fn is_up(self) -> bool {
        matches!(
            self,
            LinkStatus::Active | LinkStatus::ActivePmNak | LinkStatus::Retrain | LinkStatus::L1 | LinkStatus::L2
        )
    }
}

/// `lp_state_req` (Table 10-3); LinkError is the separate `lp_linkerror` wire
/// ([`AdapterLsm::handle_linkerror`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LinkRequest {
    /// 0000b.
    Nop,
    /// 0001b.
    Active,
    /// 0100b.
    L1,
    /// 1000b.
    L2,
    /// 1001b.
    LinkReset,
    /// 1011b.
    Retrain,
    /// 1100b.
    Disable,
}

impl LinkRequest {
    /// The 4-bit encoding.
    pub const fn bits(self) -> u8 {
        match self {
            LinkRequest::Nop => 0b0000,
            LinkRequest::Active => 0b0001,
            LinkRequest::L1 => 0b0100,
            LinkRequest::L2 => 0b1000,
            LinkRequest::LinkReset => 0b1001,
            LinkRequest::Retrain => 0b1011,
            LinkRequest::Disable => 0b1100,
        }
    }

    /// Decodes a 4-bit request (`None` for a reserved value).
    pub const fn from_bits(v: u8) -> Option<LinkRequest> {
        Some(match v {
            0b0000 => LinkRequest::Nop,
            0b0001 => LinkRequest::Active,
            0b0100 => LinkRequest::L1,
            0b1000 => LinkRequest::L2,
            0b1001 => LinkRequest::LinkReset,
            0b1011 => LinkRequest::Retrain,
            0b1100 => LinkRequest::Disable,
            _ => return None,
        })
    }
}

/// Table 10-4: whether the lower layer considers `request` in `status` (Active.PMNAK as
/// Active, except that it takes an Active request).
pub const fn considered(request: LinkRequest, status: LinkStatus) -> bool {
    use LinkRequest as R;
    use LinkStatus as S;
    match (request, status) {
        (R::Nop, S::Reset) => true,
        (R::Nop, _) => false,
        (R::Active, S::Active) => false,
        (R::Active, _) => true,
        (R::L1 | R::L2 | R::Retrain, S::Active | S::ActivePmNak) => true,
        (R::L1 | R::L2 | R::Retrain, _) => false,
        (R::LinkReset, S::LinkReset | S::Disabled | S::LinkError) => false,
        (R::LinkReset, _) => true,
        (R::Disable, S::Disabled | S::LinkError) => false,
        (R::Disable, _) => true,
    }
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LsmError {
    /// Table 10-4 ignores this request in the current state.
    Ignored {
        /// The request.
        request: LinkRequest,
        /// The state.
        status: LinkStatus,
    },
    /// The request needs a NOP first (leaving Reset, or Retrain entered from Active).
    NeedsNop,
    /// Not now: RDI is not Active or parameter exchange has not finished (Active), the
    /// 16 ms LinkError residency has not passed, `lp_linkerror` is still asserted, or PM is
    /// requested from Active.PMNAK (request Active first).
    NotReady,
}

impl core::fmt::Display for LsmError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LsmError::Ignored { request, status } => write!(f, "{request:?} is ignored in {status:?}"),
            LsmError::NeedsNop => f.write_str("request needs a NOP first"),
            LsmError::NotReady => f.write_str("link not ready for this request"),
        }
    }
}

impl core::error::Error for LsmError {}

/// Something the embedder acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LsmEvent {
    /// `pl_state_sts` changed.
    Status(LinkStatus),
    /// `pl_rx_active_req` changed: the protocol layer answers with
    /// [`AdapterLsm::handle_rx_active`].
    RxActiveRequest(bool),
    /// The peer asks for PM (L1 or L2) and the protocol layer has not: requesting it within
    /// 1 µs enters PM, otherwise the adapter answers PMNAK.
    PmRequested(LinkState),
    /// `pl_stallreq` changed (before PM entry): the protocol layer stops presenting flits
    /// and answers with [`AdapterLsm::handle_stall_ack`].
    StallRequest(bool),
    /// A request got no response within 8 ms (Header Log 2 Adapter Timeout 0010b, or 0011b
    /// for an Active Entry handshake whose peer never sent its own request): an Uncorrectable
    /// Internal Error; take RDI to LinkError.
    Timeout(LinkState),
}

/// Per-stack configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LsmConfig {
    /// Stack 0 or 1 (selects {LinkMgmt.Adapter0.*} or {LinkMgmt.Adapter1.*}).
    pub stack: u8,
    /// Whether this side may initiate PM entry (PCIe/CXL: the upstream port only; streaming
    /// and management transport: both).
    pub pm_initiator: bool,
    /// Response timeout (8 ms).
    pub response_timeout: Duration,
    /// How long a PM request waits for the local protocol layer before PMNAK (1 µs).
    pub pm_nak_delay: Duration,
    /// Minimum LinkError residency (16 ms).
    pub linkerror_residency: Duration,
}

impl LsmConfig {
    /// The spec's timings for `stack`.
    pub const fn new(stack: u8, pm_initiator: bool) -> LsmConfig {
        LsmConfig {
            stack,
            pm_initiator,
            response_timeout: Duration::from_nanos(8_000_000),
            pm_nak_delay: Duration::from_nanos(1_000),
            linkerror_residency: Duration::from_nanos(16_000_000),
        }
    }

    fn target(&self) -> LinkTarget {
        if self.stack == 0 { LinkTarget::Adapter0 } else { LinkTarget::Adapter1 }
    }
}

/// The Active Entry handshake's four halves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ActiveEntry {
    sent_req: bool,
    rcvd_req: bool,
    sent_rsp: bool,
    rcvd_rsp: bool,
}

/// One stack's adapter link state machine.
///
/// Size on a 64-bit host: 272 bytes. Built in place: [`AdapterLsm::EMPTY`] and
/// [`AdapterLsm::init`].
#[derive(Clone, Debug)]
pub struct AdapterLsm {
    config: LsmConfig,
    status: LinkStatus,
    request: LinkRequest,
    nop_seen: bool,
    /// An Active request that may start the Active Entry handshake (after its NOP edge where
    /// one is needed), not yet used.
    armed: bool,
    ready: bool,
    /// The retry buffer holds flits ([`AdapterLsm::set_retry_idle`]`(false)`); kept inverted so
    /// that an empty machine is all-zero bytes.
    retry_busy: bool,
    linkerror_wire: bool,
    rx_active_req: bool,
    rx_active_sts: bool,
    stallreq: bool,
    stallack: bool,
    entry: ActiveEntry,
    /// The request sent that awaits a response, and its deadline.
    pending: ZeroOption<(LinkState, Instant)>,
    /// A PM request received that awaits the local protocol layer, and when to refuse it.
    pm_asked: ZeroOption<(LinkState, Instant)>,
    linkerror_since: Option<Instant>,
    retrain_from_active: bool,
    out: Deque<Message, 4>,
    events: Deque<LsmEvent, 8>,
}

impl LsmConfig {
    /// Stack 0, not a PM initiator, every timing zero: the configuration of an
    /// [`AdapterLsm::EMPTY`].
    pub const ZERO: LsmConfig = LsmConfig {
        stack: 0,
        pm_initiator: false,
        response_timeout: Duration::ZERO,
        pm_nak_delay: Duration::ZERO,
        linkerror_residency: Duration::ZERO,
    };
}

impl AdapterLsm {
    /// A machine in Reset with [`LsmConfig::ZERO`] and every byte zero, so a `static` holding
    /// it lands in `.bss`; [`AdapterLsm::init`] configures it in place.
    pub const EMPTY: AdapterLsm = AdapterLsm {
        config: LsmConfig::ZERO,
        status: LinkStatus::Reset,
        request: LinkRequest::Nop,
        nop_seen: false,
        armed: false,
        ready: false,
        retry_busy: false,
        linkerror_wire: false,
        rx_active_req: false,
        rx_active_sts: false,
        stallreq: false,
        stallack: false,
        entry: ActiveEntry { sent_req: false, rcvd_req: false, sent_rsp: false, rcvd_rsp: false },
        pending: ZeroOption::NONE,
        pm_asked: ZeroOption::NONE,
        linkerror_since: None,
        retrain_from_active: false,
        out: Deque::new(),
        events: Deque::new(),
    };

    /// A machine in Reset. (Built on the stack; see [`AdapterLsm::init`] for building one in
    /// place.)
    pub fn new(config: LsmConfig) -> AdapterLsm {
        let mut lsm = Self::EMPTY;
        lsm.init(config);
        lsm
    }

    /// Makes this machine what [`AdapterLsm::new`]`(config)` returns, in place: Reset, nothing
    /// pending, no message or event.
    pub fn init(&mut self, config: LsmConfig) {
        self.config = config;
        self.status = LinkStatus::Reset;
        self.request = LinkRequest::Nop;
        (self.nop_seen, self.armed, self.ready, self.retry_busy) = (false, false, false, false);
        (self.linkerror_wire, self.rx_active_req, self.rx_active_sts) = (false, false, false);
        (self.stallreq, self.stallack) = (false, false);
        self.entry = ActiveEntry::default();
        self.pending.clear();
        self.pm_asked.clear();
        self.linkerror_since = None;
        self.retrain_from_active = false;
        self.out.clear();
        self.events.clear();
    }

    /// `pl_state_sts`.
    pub fn status(&self) -> LinkStatus {
        self.status
    }

    /// `pl_rx_active_req`.
    pub fn rx_active_req(&self) -> bool {
        self.rx_active_req
    }

    /// The configuration.
    pub fn config(&self) -> &LsmConfig {
        &self.config
    }

    /// The next sideband message to send to the peer's adapter.
    pub fn poll_message(&mut self) -> Option<Message> {
        self.out.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<LsmEvent> {
        self.events.pop_front()
    }

    fn event(&mut self, e: LsmEvent) {
        // Status changes come at most a few per call; the queue holds eight.
        let _ = self.events.push_back(e);
    }

    fn send(&mut self, m: Message) {
        let _ = self.out.push_back(m);
    }

    fn set_status(&mut self, s: LinkStatus, now: Instant) {
        if s == self.status {
            return;
        }
        if s == LinkStatus::LinkError {
            self.linkerror_since = Some(now);
        }
        if matches!(s, LinkStatus::LinkReset | LinkStatus::Disabled | LinkStatus::LinkError) {
            // An Active Entry handshake in progress is abandoned, with the response it waited
            // for (its 8 ms would fire a spurious timeout); a request from the peer that arrives
            // from now on outlives the way out through Reset (`enter_reset`).
            self.entry = ActiveEntry::default();
            self.pending.clear();
        }
        if !matches!(s, LinkStatus::Active | LinkStatus::ActivePmNak) {
            self.set_rx_active_req(false);
        }
        // The stall before PM entry ends with the state change it guarded.
        self.set_stallreq(false);
        self.status = s;
        self.event(LsmEvent::Status(s));
    }

    fn set_rx_active_req(&mut self, v: bool) {
        if self.rx_active_req != v {
            self.rx_active_req = v;
            self.event(LsmEvent::RxActiveRequest(v));
        }
    }

    fn set_stallreq(&mut self, v: bool) {
        if self.stallreq != v {
            self.stallreq = v;
            self.event(LsmEvent::StallRequest(v));
        }
    }

    /// `pl_stallack` from the protocol layer: with `pl_stallreq` raised, PM entry goes on.
    pub fn handle_stall_ack(&mut self, now: Instant, ack: bool) {
        self.stallack = ack;
        if ack && self.stallreq {
            self.try_pm(now);
        }
    }

    fn request_msg(&mut self, state: LinkState, now: Instant) {
        let target = self.config.target();
        self.send(Message::LinkRequest { target, state, stall: false });
        self.pending = ZeroOption::Some((state, now.saturating_add(self.config.response_timeout)));
    }

    fn respond(&mut self, state: LinkState) {
        let target = self.config.target();
        self.send(Message::LinkResponse { target, state, stall: false });
    }

    /// Whether RDI is Active and parameter exchange has finished: the Active Entry handshake
    /// may run. Dropping it (RDI leaving Active) does not change the state by itself; RDI's
    /// own transitions arrive through [`AdapterLsm::handle_rdi`].
    pub fn set_ready(&mut self, now: Instant, ready: bool) {
        self.ready = ready;
        if ready {
            self.try_active_entry(now);
        }
    }

    /// Whether the retry buffer holds none of this stack's flits (PM entry waits for it).
    pub fn set_retry_idle(&mut self, now: Instant, idle: bool) {
        self.retry_busy = !idle;
        if idle {
            self.try_pm(now);
        }
    }

    /// `lp_rx_active_sts` from the protocol layer.
    pub fn handle_rx_active(&mut self, now: Instant, sts: bool) {
        self.rx_active_sts = sts;
        self.try_active_entry(now);
    }

    /// Samples `lp_state_req`. A request the state does not consider, or cannot take now, is
    /// refused with an [`LsmError`] and acted on never; it is still the sampled value, so a
    /// later request's NOP edge is judged from it.
    ///
    /// Active from Reset, and from a Retrain entered from Active, needs a NOP first; from
    /// Active.PMNAK it returns to Active at once; from L1 it starts PM exit. A PM request on
    /// the side that does not initiate PM (the downstream port of PCIe or CXL) is held until
    /// the peer asks ([`LsmEvent::PmRequested`]). Retrain is RDI's: the [`crate::adapter`]
    /// turns it into an RDI request.
    pub fn handle_request(&mut self, now: Instant, request: LinkRequest) -> Result<(), LsmError> {
        let previous = self.request;
        self.request = request;
        if self.stallreq && !matches!(request, LinkRequest::L1 | LinkRequest::L2) {
            // The protocol layer gave up PM entry: the stall ends (§10.3.2's four phases).
            self.set_stallreq(false);
        }
        if request == LinkRequest::Nop {
            self.nop_seen = true;
            return Ok(());
        }
        let edge = previous == LinkRequest::Nop || self.nop_seen;
        let status = self.status;
        if !considered(request, status) {
            return Err(LsmError::Ignored { request, status });
        }
        use LinkRequest as R;
        use LinkStatus as S;
        match (request, status) {
            (R::Active, S::Reset) => {
                if !edge {
                    return Err(LsmError::NeedsNop);
                }
                if !self.ready {
                    return Err(LsmError::NotReady);
                }
                self.nop_seen = false;
                self.armed = true;
                self.try_active_entry(now);
            }
            (R::Active, S::ActivePmNak) => self.set_status(S::Active, now),
            (R::Active, S::Retrain) => {
                if self.retrain_from_active && !edge {
                    return Err(LsmError::NeedsNop);
                }
                self.nop_seen = false;
                self.armed = true;
                self.try_active_entry(now);
            }
            (R::Active, S::L1) => {
                // PM exit: once RDI is Active again, the Active Entry handshake.
                self.entry = ActiveEntry::default();
                self.armed = true;
                self.try_active_entry(now);
            }
            (R::Active, S::L2 | S::LinkReset | S::Disabled) => self.enter_reset(now),
            (R::Active, S::LinkError) => {
                let resided = self
                    .linkerror_since
                    .is_some_and(|t| now.saturating_duration_since(t) >= self.config.linkerror_residency);
                if !resided || self.linkerror_wire {
                    return Err(LsmError::NotReady);
                }
                self.enter_reset(now);
            }
            // Active.PMNAK never moves to PM directly: the protocol layer asks for Active first.
            (R::L1 | R::L2, S::ActivePmNak) => return Err(LsmError::NotReady),
            (R::L1 | R::L2, S::Active) => self.try_pm(now),
            (R::Retrain, _) => {} // RDI's: the embedder requests Retrain on RDI.
            (R::LinkReset | R::Disable, _) => {
                if status == S::Reset && !edge {
                    return Err(LsmError::NeedsNop);
                }
                self.nop_seen = false;
                let state = if request == R::Disable { LinkState::Disable } else { LinkState::LinkReset };
                self.request_msg(state, now);
            }
            _ => {}
        }
        Ok(())
    }

    fn enter_reset(&mut self, now: Instant) {
        // The peer's {Req.Active} that came while this end waited in LinkReset, Disabled or
        // LinkError still stands: the peer, already out, does not send it again, and times out
        // (an Uncorrectable Internal Error) unless it is answered.
        let stands = self.entry.rcvd_req
            && matches!(self.status, LinkStatus::LinkReset | LinkStatus::Disabled | LinkStatus::LinkError);
        self.entry = ActiveEntry { rcvd_req: stands, ..ActiveEntry::default() };
        self.pending.clear();
        self.pm_asked.clear();
        self.linkerror_since = None;
        self.nop_seen = false;
        self.armed = false;
        self.set_status(LinkStatus::Reset, now);
    }

    /// Advances the Active Entry handshake as far as the inputs allow.
    fn try_active_entry(&mut self, now: Instant) {
        let entering = matches!(self.status, LinkStatus::Reset | LinkStatus::Retrain | LinkStatus::L1);
        if !entering || !self.ready {
            return;
        }
        if self.armed && self.request == LinkRequest::Active && !self.entry.sent_req {
            self.entry.sent_req = true;
            self.request_msg(LinkState::Active, now);
        }
        if self.entry.rcvd_req && !self.entry.sent_rsp {
            self.set_rx_active_req(true);
            if self.rx_active_sts {
                self.entry.sent_rsp = true;
                self.respond(LinkState::Active);
            }
        }
        if self.entry.sent_rsp && self.entry.rcvd_rsp {
            self.entry = ActiveEntry::default();
            self.pending.clear();
            self.retrain_from_active = false;
            self.armed = false;
            let rx = self.rx_active_req;
            self.set_status(LinkStatus::Active, now);
            self.set_rx_active_req(rx);
        }
    }

    /// Sends or answers a PM request as far as the inputs allow.
    fn try_pm(&mut self, now: Instant) {
        let state = match self.request {
            LinkRequest::L1 => LinkState::L1,
            LinkRequest::L2 => LinkState::L2,
            _ => return,
        };
        if self.status != LinkStatus::Active || self.retry_busy {
            return;
        }
        let will_act = self.pm_asked.is_some() || (self.config.pm_initiator && self.pending.is_none());
        if !will_act {
            return;
        }
        // The StallReq/Ack handshake comes first (§10.3.2: on FDI in flit mode, only for
        // Active → PM); `pl_stallreq` rises only while `lp_stallack` is low.
        if !self.stallreq {
            if self.stallack {
                return;
            }
            self.set_stallreq(true);
        }
        if !self.stallack {
            return;
        }
        if let Some((asked, _)) = self.pm_asked.take() {
            self.respond(asked);
            let s = if asked == LinkState::L2 { LinkStatus::L2 } else { LinkStatus::L1 };
            self.set_status(s, now);
            return;
        }
        if self.config.pm_initiator && self.pending.is_none() {
            self.request_msg(state, now);
        }
    }

    /// A {LinkMgmt.*} message from the peer's adapter; messages for the other stack and
    /// anything else are ignored.
    pub fn handle_message(&mut self, now: Instant, msg: &Message) {
        let target = self.config.target();
        match *msg {
            // A stall Req.Active (a retimer still resolving) only restarts the timer that waits
            // for the peer's request (Table 7-8).
            Message::LinkRequest { target: t, stall: true, .. } if t == target => {
                if let Some((s, _)) = self.pending.into_option() {
                    self.pending = ZeroOption::Some((s, now.saturating_add(self.config.response_timeout)));
                }
            }
            Message::LinkRequest { target: t, state, .. } if t == target => self.on_request(now, state),
            Message::LinkResponse { target: t, state, stall } if t == target => {
                if stall {
                    if let Some((s, _)) = self.pending.into_option() {
                        self.pending = ZeroOption::Some((s, now.saturating_add(self.config.response_timeout)));
                    }
                    return;
                }
                self.on_response(now, state);
            }
            _ => {}
        }
    }

    fn on_request(&mut self, now: Instant, state: LinkState) {
        use LinkStatus as S;
        match state {
            LinkState::Active => {
                if self.status == S::L1 {
                    self.set_status(S::Retrain, now);
                } else if self.status == S::L2 {
                    // L2 exits through Reset; the peer's request still stands.
                    self.enter_reset(now);
                }
                self.entry.rcvd_req = true;
                self.try_active_entry(now);
            }
            LinkState::L1 | LinkState::L2 => match self.status {
                S::L1 | S::L2 => self.respond(state),
                S::Retrain | S::ActivePmNak => self.respond(LinkState::PmNak),
                S::Active => {
                    self.pm_asked = ZeroOption::Some((state, now.saturating_add(self.config.pm_nak_delay)));
                    if !matches!(self.request, LinkRequest::L1 | LinkRequest::L2) {
                        self.event(LsmEvent::PmRequested(state));
                    }
                    self.try_pm(now);
                }
                _ => {}
            },
            LinkState::LinkReset | LinkState::Disable => {
                if matches!(self.status, S::LinkError) || (state == LinkState::LinkReset && self.status == S::Disabled)
                {
                    return;
                }
                self.respond(state);
                let s = if state == LinkState::Disable { S::Disabled } else { S::LinkReset };
                self.entry = ActiveEntry::default();
                self.set_status(s, now);
            }
            _ => {}
        }
    }

    fn on_response(&mut self, now: Instant, state: LinkState) {
        let Some((asked, _)) = self.pending.into_option() else { return };
        use LinkStatus as S;
        match (asked, state) {
            (LinkState::Active, LinkState::Active) => {
                self.entry.rcvd_rsp = true;
                self.try_active_entry(now);
                if self.status != S::Active {
                    // Waiting on the peer's own request or our Rsp; the timer keeps running
                    // (Header Log 2 0011b if the peer never requests).
                    return;
                }
            }
            (LinkState::L1 | LinkState::L2, LinkState::PmNak) => {
                if self.status == S::Active {
                    self.set_status(S::ActivePmNak, now);
                }
            }
            (LinkState::L1, LinkState::L1) | (LinkState::L2, LinkState::L2) => {
                if self.status == S::Active {
                    self.set_status(if asked == LinkState::L2 { S::L2 } else { S::L1 }, now);
                }
            }
            (LinkState::LinkReset, LinkState::LinkReset) => self.set_status(S::LinkReset, now),
            (LinkState::Disable, LinkState::Disable) => self.set_status(S::Disabled, now),
            _ => return,
        }
        self.pending.clear();
    }

    /// RDI's state changed: Retrain reaches an Active LSM; LinkError, LinkReset and Disabled
    /// reach every LSM; Reset sends the LSM to Reset.
    pub fn handle_rdi(&mut self, now: Instant, rdi: LinkStatus) {
        use LinkStatus as S;
        match rdi {
            S::Retrain if matches!(self.status, S::Active | S::ActivePmNak) => {
                self.entry = ActiveEntry::default();
                self.retrain_from_active = true;
                self.armed = false;
                self.pm_asked.clear();
                self.set_status(S::Retrain, now);
            }
            S::LinkError => self.set_status(S::LinkError, now),
            S::Disabled if self.status != S::LinkError => self.set_status(S::Disabled, now),
            S::LinkReset if !matches!(self.status, S::LinkError | S::Disabled) => self.set_status(S::LinkReset, now),
            S::Reset => {
                self.ready = false;
                // The link starts over: a request the peer sent before went with it.
                self.entry = ActiveEntry::default();
                if self.status != S::LinkError {
                    self.enter_reset(now);
                }
            }
            _ => {}
        }
    }

    /// `lp_linkerror` from the protocol layer (or an internal uncorrectable error): recorded;
    /// the embedder takes RDI to LinkError and the LSM follows when RDI is there
    /// ([`AdapterLsm::handle_rdi`]; §3.5: RDI first). Deasserting it allows the exit after the
    /// residency.
    pub fn handle_linkerror(&mut self, _now: Instant, asserted: bool) {
        self.linkerror_wire = asserted;
        if asserted {
            self.pending.clear();
        }
    }

    /// The earliest deadline: a response timeout or a PM request to refuse.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let wants_pm = matches!(self.request, LinkRequest::L1 | LinkRequest::L2);
        let refuse = self.pm_asked.into_option().filter(|_| !wants_pm).map(|p| p.1);
        match (self.pending.into_option().map(|p| p.1), refuse) {
            (Some(a), Some(b)) => Some(if a < b { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Fires due deadlines.
    pub fn handle_timeout(&mut self, now: Instant) {
        // PMNAK only when the protocol layer still asks for Active; a PM request of its own
        // is answered once the stall handshake and the retry buffer allow (§10.2.9).
        let wants_pm = matches!(self.request, LinkRequest::L1 | LinkRequest::L2);
        if self.pm_asked.into_option().is_some_and(|p| now >= p.1) && !wants_pm {
            self.pm_asked.clear();
            self.respond(LinkState::PmNak);
        }
        if let Some((state, _)) = self.pending.into_option().filter(|p| now >= p.1) {
            self.pending.clear();
            self.event(LsmEvent::Timeout(state));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const T0: Instant = Instant::ZERO;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    /// Carries messages both ways until quiet; each protocol layer answers
    /// `pl_rx_active_req` at once. Returns the statuses each side reported.
    fn shuttle(now: Instant, a: &mut AdapterLsm, b: &mut AdapterLsm) -> (Vec<LinkStatus>, Vec<LinkStatus>) {
        fn pump(now: Instant, x: &mut AdapterLsm, y: &mut AdapterLsm, log: &mut Vec<LinkStatus>) -> bool {
            let mut moved = false;
            while let Some(e) = x.poll_event() {
                moved = true;
                match e {
                    LsmEvent::Status(s) => log.push(s),
                    LsmEvent::RxActiveRequest(r) => x.handle_rx_active(now, r),
                    LsmEvent::StallRequest(r) => x.handle_stall_ack(now, r),
                    LsmEvent::PmRequested(_) | LsmEvent::Timeout(_) => {}
                }
            }
            while let Some(m) = x.poll_message() {
                moved = true;
                y.handle_message(now, &m);
            }
            moved
        }
        let (mut sa, mut sb) = (Vec::new(), Vec::new());
        while pump(now, a, b, &mut sa) | pump(now, b, a, &mut sb) {}
        (sa, sb)
    }

    /// Downstream (a) and upstream (b, the PM initiator) brought to Active.
    fn active_pair() -> (AdapterLsm, AdapterLsm) {
        let mut a = AdapterLsm::new(LsmConfig::new(0, false));
        let mut b = AdapterLsm::new(LsmConfig::new(0, true));
        for m in [&mut a, &mut b] {
            m.set_ready(T0, true);
            m.handle_request(T0, LinkRequest::Active).unwrap();
        }
        let (sa, sb) = shuttle(T0, &mut a, &mut b);
        assert_eq!((sa, sb), (std::vec![LinkStatus::Active], std::vec![LinkStatus::Active]));
        (a, b)
    }

    #[test]
    fn encodings_and_table_10_4() {
        for s in [
            LinkStatus::Reset,
            LinkStatus::Active,
            LinkStatus::ActivePmNak,
            LinkStatus::L1,
            LinkStatus::L2,
            LinkStatus::LinkReset,
            LinkStatus::LinkError,
            LinkStatus::Retrain,
            LinkStatus::Disabled,
        ] {
            assert_eq!(LinkStatus::from_bits(s.bits()), Some(s));
        }
        assert_eq!(LinkStatus::from_bits(0b0010), None);
        assert_eq!(LinkRequest::from_bits(0b1010), None); // LinkError is a wire, not a request
        assert_eq!(LinkStatus::Retrain.bits(), 0b1011);
        use LinkRequest as R;
        use LinkStatus as S;
        assert!(considered(R::Nop, S::Reset) && !considered(R::Nop, S::Active));
        assert!(!considered(R::Active, S::Active) && considered(R::Active, S::ActivePmNak));
        assert!(considered(R::Retrain, S::Active) && !considered(R::Retrain, S::L1));
        assert!(considered(R::LinkReset, S::L2) && !considered(R::LinkReset, S::Disabled));
        assert!(considered(R::Disable, S::LinkReset) && !considered(R::Disable, S::LinkError));
        assert!(!considered(R::L1, S::Reset));
    }

    #[test]
    fn bring_up_needs_nop_ready_and_both_halves() {
        let mut a = AdapterLsm::new(LsmConfig::new(0, false));
        // Active straight out of power-up is a NOP→Active edge; before parameter exchange
        // it is refused.
        assert_eq!(a.handle_request(T0, LinkRequest::Active), Err(LsmError::NotReady));
        assert_eq!(a.handle_request(T0, LinkRequest::Active), Err(LsmError::NeedsNop));
        assert_eq!(
            a.handle_request(T0, LinkRequest::L1),
            Err(LsmError::Ignored { request: LinkRequest::L1, status: LinkStatus::Reset })
        );
        let mut b = AdapterLsm::new(LsmConfig::new(0, true));
        a.handle_request(T0, LinkRequest::Nop).unwrap();
        a.set_ready(T0, true);
        a.handle_request(T0, LinkRequest::Active).unwrap();
        assert_eq!(
            a.poll_message(),
            Some(Message::LinkRequest { target: LinkTarget::Adapter0, state: LinkState::Active, stall: false })
        );
        // b answers (its protocol layer acknowledges rx_active) before its own request.
        b.set_ready(T0, true);
        b.handle_message(
            T0,
            &Message::LinkRequest { target: LinkTarget::Adapter0, state: LinkState::Active, stall: false },
        );
        assert_eq!(b.poll_event(), Some(LsmEvent::RxActiveRequest(true)));
        assert_eq!(b.poll_message(), None); // not before lp_rx_active_sts
        b.handle_rx_active(T0, true);
        let rsp = b.poll_message().unwrap();
        assert_eq!(rsp, Message::LinkResponse { target: LinkTarget::Adapter0, state: LinkState::Active, stall: false });
        a.handle_message(T0, &rsp);
        assert_eq!(a.status(), LinkStatus::Reset); // has not sent its own Rsp yet
        b.handle_request(T0, LinkRequest::Active).unwrap();
        let (sa, sb) = shuttle(T0, &mut a, &mut b);
        assert_eq!((sa.last(), sb.last()), (Some(&LinkStatus::Active), Some(&LinkStatus::Active)));
    }

    #[test]
    fn pm_entry_refusal_and_exit() {
        let (mut dp, mut up) = active_pair();
        // Only the upstream port initiates; the downstream port waits for the request.
        assert_eq!(dp.handle_request(T0, LinkRequest::L1), Ok(()));
        assert_eq!(dp.poll_message(), None); // held until the peer asks
        assert_eq!(
            dp.handle_request(T0, LinkRequest::Active),
            Err(LsmError::Ignored { request: LinkRequest::Active, status: LinkStatus::Active })
        );
        // The downstream protocol layer stays Active: PMNAK after 1 µs.
        up.handle_request(T0, LinkRequest::L1).unwrap();
        shuttle(T0, &mut dp, &mut up);
        assert_eq!(dp.poll_timeout(), Some(at(1_000)));
        dp.handle_timeout(at(1_000));
        let (_, su) = shuttle(at(1_000), &mut dp, &mut up);
        assert_eq!(su, [LinkStatus::ActivePmNak]);
        up.handle_request(at(2_000), LinkRequest::Active).unwrap();
        assert_eq!(up.status(), LinkStatus::Active);
        // Both want L1 now, but the upstream retry buffer still holds flits.
        up.set_retry_idle(at(3_000), false);
        up.handle_request(at(3_000), LinkRequest::L1).unwrap();
        assert_eq!(up.poll_message(), None);
        up.set_retry_idle(at(3_500), true);
        // The downstream protocol layer's PM request is sampled, then answered when the
        // upstream port's request arrives.
        assert_eq!(dp.handle_request(at(3_600), LinkRequest::L1), Ok(()));
        let (sd, su) = shuttle(at(3_700), &mut dp, &mut up);
        // (The upstream log starts with its earlier return from Active.PMNAK.)
        assert_eq!((sd, su), (std::vec![LinkStatus::L1], std::vec![LinkStatus::Active, LinkStatus::L1]));
        // PM exit: the downstream protocol layer asks for Active; the peer goes to Retrain
        // on the request and answers; both end Active.
        dp.handle_request(at(5_000), LinkRequest::Active).unwrap();
        let (sd, su) = shuttle(at(5_000), &mut dp, &mut up);
        assert_eq!(su.first(), Some(&LinkStatus::Retrain));
        up.handle_request(at(5_100), LinkRequest::Active).unwrap();
        let (sd2, su2) = shuttle(at(5_100), &mut dp, &mut up);
        assert_eq!([sd, sd2].concat().last(), Some(&LinkStatus::Active));
        assert_eq!(su2.last(), Some(&LinkStatus::Active));
    }

    #[test]
    fn retrain_link_reset_and_link_error() {
        let (mut a, mut b) = active_pair();
        for m in [&mut a, &mut b] {
            m.handle_rdi(T0, LinkStatus::Retrain);
            assert_eq!(m.status(), LinkStatus::Retrain);
            // Entered from Active: leaving needs a NOP→Active transition.
            assert_eq!(m.handle_request(T0, LinkRequest::Active), Err(LsmError::NeedsNop));
            m.handle_request(T0, LinkRequest::Nop).unwrap();
            m.handle_request(T0, LinkRequest::Active).unwrap();
        }
        let (sa, sb) = shuttle(T0, &mut a, &mut b);
        assert_eq!((sa.last(), sb.last()), (Some(&LinkStatus::Active), Some(&LinkStatus::Active)));
        // LinkReset by request and response.
        a.handle_request(T0, LinkRequest::LinkReset).unwrap();
        let (sa, sb) = shuttle(T0, &mut a, &mut b);
        assert_eq!((sa, sb), (std::vec![LinkStatus::LinkReset], std::vec![LinkStatus::LinkReset]));
        a.handle_request(T0, LinkRequest::Active).unwrap();
        assert_eq!(a.status(), LinkStatus::Reset);
        // LinkError: RDI first, then the LSM; 16 ms residency and the wire released before
        // the exit.
        b.handle_linkerror(at(100), true);
        assert_eq!(b.status(), LinkStatus::LinkReset);
        b.handle_rdi(at(100), LinkStatus::LinkError);
        assert_eq!(b.status(), LinkStatus::LinkError);
        b.handle_linkerror(at(200), false);
        assert_eq!(b.handle_request(at(16_000_099), LinkRequest::Active), Err(LsmError::NotReady));
        b.handle_request(at(16_000_100), LinkRequest::Active).unwrap();
        assert_eq!(b.status(), LinkStatus::Reset);
    }

    /// The peer leaves LinkReset (or LinkError, after its 16 ms) first and sends {Req.Active}
    /// while this end is still there: the request is answered once this end's protocol layer
    /// asks for Active too, and both reach Active without a timeout (before, leaving through
    /// Reset forgot it, and the peer's 8 ms ran out).
    #[test]
    fn a_request_for_active_that_came_before_the_way_out_still_stands() {
        for error in [false, true] {
            let (mut a, mut b) = active_pair();
            let out = if error {
                for m in [&mut a, &mut b] {
                    m.handle_rdi(T0, LinkStatus::LinkError);
                }
                at(16_000_000)
            } else {
                a.handle_request(T0, LinkRequest::LinkReset).unwrap();
                shuttle(T0, &mut a, &mut b);
                at(1_000)
            };
            assert_eq!(
                (a.status(), b.status()),
                if error {
                    (LinkStatus::LinkError, LinkStatus::LinkError)
                } else {
                    (LinkStatus::LinkReset, LinkStatus::LinkReset)
                }
            );
            // Out through Reset: a request, then a NOP→Active edge.
            let leave = |m: &mut AdapterLsm, now| {
                for r in [LinkRequest::Active, LinkRequest::Nop, LinkRequest::Active] {
                    m.handle_request(now, r).unwrap();
                }
            };
            leave(&mut b, out);
            shuttle(out, &mut a, &mut b);
            assert_eq!(
                (a.status(), b.status()),
                (if error { LinkStatus::LinkError } else { LinkStatus::LinkReset }, LinkStatus::Reset)
            );
            let later = out.saturating_add(Duration::from_micros(10));
            leave(&mut a, later);
            let (sa, sb) = shuttle(later, &mut a, &mut b);
            assert_eq!((sa.last(), sb.last()), (Some(&LinkStatus::Active), Some(&LinkStatus::Active)), "error {error}");
            for m in [&mut a, &mut b] {
                m.handle_timeout(at(30_000_000));
                assert!(!core::iter::from_fn(|| m.poll_event()).any(|e| matches!(e, LsmEvent::Timeout(_))));
            }
        }
    }

    #[test]
    fn response_timeout_and_stall() {
        let mut a = AdapterLsm::new(LsmConfig::new(1, false));
        a.set_ready(T0, true);
        a.handle_request(T0, LinkRequest::Active).unwrap();
        assert!(matches!(a.poll_message(), Some(Message::LinkRequest { target: LinkTarget::Adapter1, .. })));
        assert_eq!(a.poll_timeout(), Some(at(8_000_000)));
        // A stall response (a retimer resolving) restarts the 8 ms.
        let stall = Message::LinkResponse { target: LinkTarget::Adapter1, state: LinkState::Active, stall: true };
        a.handle_message(at(7_000_000), &stall);
        a.handle_timeout(at(8_000_000));
        assert_eq!(a.poll_event(), None);
        a.handle_timeout(at(15_000_000));
        assert_eq!(a.poll_event(), Some(LsmEvent::Timeout(LinkState::Active)));
        // Messages for stack 0 are not this machine's.
        a.handle_message(
            T0,
            &Message::LinkRequest { target: LinkTarget::Adapter0, state: LinkState::Disable, stall: false },
        );
        assert_eq!(a.status(), LinkStatus::Reset);
    }

    #[test]
    fn pm_entry_waits_for_the_stall_handshake() {
        let (mut dp, mut up) = active_pair();
        up.handle_request(T0, LinkRequest::L1).unwrap();
        assert_eq!(up.poll_event(), Some(LsmEvent::StallRequest(true)));
        assert_eq!(up.poll_message(), None);
        up.handle_stall_ack(T0, true);
        let req = up.poll_message().unwrap();
        assert_eq!(req, Message::LinkRequest { target: LinkTarget::Adapter0, state: LinkState::L1, stall: false });
        // The downstream side stalls too before it answers.
        dp.handle_request(T0, LinkRequest::L1).unwrap();
        dp.handle_message(T0, &req);
        assert_eq!(dp.poll_event(), Some(LsmEvent::StallRequest(true)));
        assert_eq!(dp.poll_message(), None);
        dp.handle_stall_ack(T0, true);
        let rsp = dp.poll_message().unwrap();
        assert_eq!(dp.status(), LinkStatus::L1);
        let events = |m: &mut AdapterLsm| core::iter::from_fn(|| m.poll_event()).collect::<Vec<_>>();
        assert!(events(&mut dp).contains(&LsmEvent::StallRequest(false)));
        up.handle_message(T0, &rsp);
        assert_eq!(up.status(), LinkStatus::L1);
        assert!(events(&mut up).contains(&LsmEvent::StallRequest(false)));
    }

    #[test]
    fn stall_request_and_pm_answer_after_stall() {
        // A stall Req.Active restarts the wait for the peer's own request and is no request.
        let mut a = AdapterLsm::new(LsmConfig::new(0, false));
        a.set_ready(T0, true);
        a.handle_request(T0, LinkRequest::Active).unwrap();
        a.poll_message();
        a.handle_message(
            T0,
            &Message::LinkResponse { target: LinkTarget::Adapter0, state: LinkState::Active, stall: false },
        );
        a.handle_message(
            at(7_000_000),
            &Message::LinkRequest { target: LinkTarget::Adapter0, state: LinkState::Active, stall: true },
        );
        assert!(a.poll_message().is_none());
        assert_eq!(a.status(), LinkStatus::Reset);
        assert_eq!(a.poll_timeout(), Some(at(15_000_000)));
        // A PM request while this side's protocol layer also asks for PM but has not
        // acknowledged the stall yet: no PMNAK after 1 µs.
        let (mut dp, mut up) = active_pair();
        dp.handle_request(T0, LinkRequest::L1).unwrap();
        up.handle_request(T0, LinkRequest::L1).unwrap();
        up.handle_stall_ack(T0, true);
        let req = up.poll_message().unwrap();
        dp.handle_message(T0, &req);
        assert_eq!(dp.poll_timeout(), None);
        dp.handle_timeout(at(5_000));
        assert_eq!(dp.poll_message(), None);
        dp.handle_stall_ack(at(6_000), true);
        assert_eq!(
            dp.poll_message(),
            Some(Message::LinkResponse { target: LinkTarget::Adapter0, state: LinkState::L1, stall: false })
        );
    }

    #[test]
    fn giving_up_pm_releases_the_stall_and_pmnak_needs_active_first() {
        let (mut dp, mut up) = active_pair();
        up.handle_request(T0, LinkRequest::L1).unwrap();
        up.handle_stall_ack(T0, true);
        let req = up.poll_message().unwrap();
        dp.handle_message(T0, &req);
        dp.handle_request(T0, LinkRequest::L1).unwrap();
        let events = |m: &mut AdapterLsm| core::iter::from_fn(|| m.poll_event()).collect::<Vec<_>>();
        assert!(events(&mut dp).contains(&LsmEvent::StallRequest(true)));
        // The protocol layer changes its mind before acknowledging: the stall ends, PMNAK.
        assert!(dp.handle_request(T0, LinkRequest::Active).is_err()); // already Active
        assert_eq!(events(&mut dp), [LsmEvent::StallRequest(false)]);
        dp.handle_timeout(at(1_000));
        let nak = dp.poll_message().unwrap();
        assert_eq!(nak, Message::LinkResponse { target: LinkTarget::Adapter0, state: LinkState::PmNak, stall: false });
        up.handle_message(at(1_000), &nak);
        assert_eq!(up.status(), LinkStatus::ActivePmNak);
        // From Active.PMNAK, PM needs an Active request first.
        assert_eq!(up.handle_request(at(2_000), LinkRequest::L1), Err(LsmError::NotReady));
        up.handle_request(at(2_000), LinkRequest::Active).unwrap();
        assert_eq!(up.status(), LinkStatus::Active);
    }
}
