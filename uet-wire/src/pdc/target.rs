//! The target end of a PDC (UE 1.0 §3.5.9 to §3.5.12, §3.5.20; `ultraethernet/uet-ref-prov`
//! `uet_pds.c`): created by the first SYN packet, it classifies every request PSN, decides what
//! the caller delivers, acknowledges with CACK + SACK, and sends read data back in the return
//! direction.
//!
//! States of UE 1.0 §3.5.9.4, *project-defined* names (the spec figure was not consulted; ns-3
//! model, Linux ultraeth RFC and uet-ref-prov names differ):
//!
//! ```text
//!  first SYN ─┬─ start PSN accepted ──────────────▶ Established ── request_close ──▶ CloseReqWait
//!             └─ secure, start refused ─▶ Pending ──┘ (SYN with the       │ CLOSE            │ CLOSE
//!                    │ New_PDC_Time                   required start)      ▼                  ▼
//!                    └──────────────────────────────────────────────▶ Closed ◀── close in error
//! ```
//!
//! Every transition is in one `match` (the private function `transition`).
//!
//! * **RUD** (UE 1.0 §3.5.11.4; uet-ref-prov `uet_pds.c`): a new PSN in the window is delivered
//!   whatever its order; a duplicate in the window is re-ACKed, never NACKed (*project-defined*:
//!   uet-ref-prov's `uet_pds_check_duplicate_and_rtx` NACKs RCVD_SES_PROCG when it has no ACK
//!   stored for it, which an initiator ignores, recovering by its timer); a PSN of the prior
//!   window is re-ACKed with [`Delivery::Stale`] (the caller adds the SES DEFAULT_RESPONSE,
//!   RC_NULL); a PSN outside both is NACKed PSN_OOR_WINDOW (INVALID_SYN with SYN).
//! * **ROD**: only the next PSN in order is delivered. *Project-defined* (uet-ref-prov and the ns-3
//!   model buffer out-of-order packets, which needs payload memory this crate does not own): an
//!   out-of-order packet is dropped and NACKed ROD_OOO once per missing PSN, and the initiator
//!   goes back N.
//! * **Secure start PSN** (uet-ref-prov `uet_pds.c`): with [`StartPolicy::Expected0Rtt`] a SYN
//!   whose start PSN is before the domain's `Expected_PSN` (serial order), and with
//!   [`StartPolicy::Random1Rtt`] every SYN, puts the PDC in Pending and is NACKed NEW_START_PSN
//!   with the start PSN required; the PDC becomes Established when a SYN with that start arrives,
//!   and is reaped after `New_PDC_Time`. *Project-defined*: while Pending, a control packet too
//!   is NACKed NEW_START_PSN (uet-ref-prov answers UNEXP_EVENT, which would fail a PDC whose
//!   tail-loss probe overtook its restart). *Project-defined*: once past Pending, a SYN packet
//!   (trimmed too) whose start PSN is the one the restart refused belongs to the PSN space the
//!   initiator left, and is dropped unanswered (uet-ref-prov checks only its PSN against the
//!   window, so it delivers such a late packet when the PSN falls inside it, data of another
//!   message; a NACK would name an old PSN the initiator may take for a new one, and INVALID_SYN
//!   would close the live PDC).
//!   On close, [`Target::next_expected_psn`] gives the value the caller stores as the domain's
//!   next `Expected_PSN`: *project-defined* as one past its cumulative ACK, `CACK_PSN + 1` (the
//!   CLOSE's PSN + 1 after a CLOSE; uet-ref-prov uses start + 1, which would let a later PDC
//!   reuse PSNs of this one).
//! * **Return direction** (UE 1.0 §3.5.20.1, §3.5.20.2.5: read data larger than
//!   `Max_ACK_Data_Size`): [`Target::send`] stamps RUD or ROD requests from this PDC to its
//!   initiator (Established form, SPDCID this PDC), whose next header the caller sets (RSP_DATA)
//!   and whose SES header and data it adds. Their PSNs count from the initiator's start PSN, as
//!   the reference provider's target numbers them (`uet_pdsm_assign_tgt_pdc`); the initiator's
//!   ACKs (CACK, SACK, ACK_PSN) acknowledge them, and they are resent like requests: after the
//!   RTO with backoff (failing the PDC after `Max_RTO_Retx_Cnt` timeouts of the same packet), or
//!   after SACK shows a loss and the reorder window passed; a NACK from the initiator resends
//!   (ROD_OOO: go back N) or closes the PDC. The send window and the initiator's MP_RANGE limit
//!   how many are outstanding.
//! * **Close** (UE 1.0 §3.5.8.3): a CLOSE clears the forward direction, is ACKed and closes the
//!   PDC. *Project-defined*: return packets still unacknowledged then are given up (the reference
//!   provider NACKs CLOSING_IN_ERR instead; but an initiator closes only once its reads are
//!   complete, so what is unacknowledged arrived and only its ACK was lost). `request_close`
//!   sends CLOSE_REQ (it takes the next PSN of the return direction, AR set) and waits: it is
//!   resent every `Close_REQ_Time` until the initiator's ACK covers its PSN. The PDC closes in
//!   error (NACK CLOSING_IN_ERR) after `Max_RTO_Retx_Cnt` further periods of `Close_REQ_Time` with
//!   no packet from the initiator (*project-defined*: the initiator may need as many RTOs to
//!   finish its messages before its CLOSE, so one period, as in the sources, fails PDCs that
//!   merely lost a packet).
//! * **Idle timeout** (*project-defined* default 60 s, from the Linux RFC draft; the spec table has
//!   none): a target PDC that hears nothing from its initiator that long closes, so a PDC created
//!   by a stray late SYN, or left by an initiator that vanished, does not leak.
//! * **Guaranteed-delivery responses** ([`held`](super::held)): [`Target::hold_response`] keeps
//!   the SES response to a request until `CLEAR_PSN` (from any request, or a CLEAR) passes it; an
//!   ACK carrying it goes out at once and again for every duplicate, and every other ACK leaves
//!   its PSN unacknowledged. [`Target::hold_response_with_data`] holds one with data (a fetching
//!   atomic's value), which the ACK carries as RESPONSE_W_DATA.
//! * ACKs are coalesced by [`AckCoalescer`]; a duplicate, an ACK_REQ, a PROBE and a CLOSE are
//!   answered at once (a PROBE by an ACK of its own with P set that echoes its opaque value in
//!   place of ACK_PSN's offset, its SACK based at the PSN the probe's payload names, as the
//!   Wireshark dissector, uet-ref-prov's headers and XDP2 lay out the fields),
//!   and so is a new packet that fills a gap behind the newest PSN the last ACK reported
//!   (*project-defined*, after RFC 5681 §4.2).
//!   Every ACK is an ACK_CC carrying the SACK bitmap and this PDC's MPR.
//! * **Refusals** leave as NACKs through [`Target::poll_transmit`]; *project-defined*: at most
//!   [`PENDING_NACKS`] wait between two polls, and more are dropped as a lost NACK would be.

use super::config::{MPR_GRANULARITY, PdcConfig};
use super::held::{HELD_RESPONSES, HeldResponses, Responses};
use super::initiator::{AckOutcome, Stamp};
use super::rtt::RttEstimator;
use super::window::{AckCoalescer, AckTriggers, Arrival, LossDetector, RxWindow, TxWindow, psn_after};
use super::{Failure, PdcError, PdcState};
use crate::pds::{
    Ack, AckFlags, AckRequest, Control, ControlFlags, ControlType, DeliveryMode, Nack, NackClass, NackCode, NackFlags,
    NackTarget, NextHeader, PdcDest, Request, RequestFlags,
};
use crate::ses::{Response, ResponseOpcode, ResponseWithData};
use linklayer::{Deadline, Instant};

/// The states of a target PDC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TargetState {
    /// Secure PDC whose initiator was told to restart at another start PSN.
    Pending,
    /// Accepting requests.
    Established,
    /// CLOSE_REQ sent; waiting for the initiator's CLOSE.
    CloseReqWait,
    /// Done: the PDC may be freed once its last ACK or NACK is sent.
    Closed,
}

/// How the target accepts the start PSN of a new PDC (the two secure-PDC methods of uet-ref-prov
/// `uet_pds.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StartPolicy {
    /// Not a secure PDC: any start PSN.
    Open,
    /// EXPECTED_0RTT_START: accept a start PSN at or after the domain's `Expected_PSN`.
    Expected0Rtt {
        /// The domain's `Expected_PSN`.
        expected_psn: u32,
    },
    /// RANDOM_1RTT_START: always restart the initiator at this (random) start PSN.
    Random1Rtt {
        /// The start PSN to require.
        start_psn: u32,
    },
}

/// What the caller does with a request's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Delivery {
    /// New: hand it to the SES.
    New,
    /// Received before, in the current window: already delivered; an ACK is due.
    Duplicate,
    /// Received before, cumulatively acknowledged (prior window): answer with the SES
    /// DEFAULT_RESPONSE, RC_NULL; an ACK is due.
    Stale,
    /// Not accepted (see the NACK, if any; a late SYN of the PSN space a restart refused draws
    /// none).
    Dropped,
}

/// A packet the target needs sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TargetTx {
    /// An ACK_CC.
    Ack(Ack),
    /// CLOSE_REQ.
    Control(Control),
    /// A NACK: a refused request or control packet, or CLOSING_IN_ERR.
    Nack(Nack),
    /// Resend the return-direction packet with this PSN (RETX and AR set): the caller adds the
    /// SES header and payload that belong to it, as for [`Target::send`].
    Resend(Stamp),
}

/// Something that happened to the PDC, reported once by [`Target::poll_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TargetEvent {
    /// The PDC accepts requests.
    Established,
    /// The PDC closed in error.
    Failed(Failure),
    /// The PDC is closed and may be freed.
    Closed,
}

const TX_CLOSE_REQ: u8 = 1;
const TX_CLOSING_IN_ERR: u8 = 2;
/// The answer to a PROBE (an ACK with P set), a packet of its own.
const TX_PROBE_ACK: u8 = 4;

// Which of a target PDC's optional PSNs hold one, as bits.
const ROD_NACKED: u8 = 1;
const LAST_NEW: u8 = 2;
/// `left_start` holds the start PSN a restart (NACK NEW_START_PSN) made the initiator leave.
const LEFT_START: u8 = 4;

const EV_ESTABLISHED: u8 = 1;
const EV_FAILED: u8 = 2;
const EV_CLOSED: u8 = 4;

/// What drives a transition (see [`transition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// A request or control packet handled without a state change.
    Packet,
    /// A SYN with the start PSN a Pending PDC required.
    RequiredStart,
    /// The initiator's CLOSE.
    Close,
    /// `request_close`.
    WantClose,
    /// A new packet of the return direction.
    Send,
    /// `New_PDC_Time` passed in Pending.
    Reap,
    /// The idle timeout passed.
    Idle,
    /// Close in error.
    Fail,
}

/// The target end of one PDC, with a receive window of `64 × W` PSNs and room for `R`
/// guaranteed-delivery responses (see [`held`](super::held)), each with up to `F` bytes of data
/// (none by default; [`RESPONSE_DATA_MAX`] holds any fetching atomic's value).
///
/// [`RESPONSE_DATA_MAX`]: super::held::RESPONSE_DATA_MAX
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target<const W: usize = 2, const R: usize = HELD_RESPONSES, const F: usize = 0> {
    core: TargetCore<W, R>,
    ret: ReturnDirection<W>,
    held: HeldResponses<R, F>,
}

/// A target PDC without the state of its return direction or its held responses, which the
/// caller keeps and passes in ([`ReturnDirection`], [`HeldResponses`]): [`Target`] keeps the
/// three together, and an endpoint keeps the return directions and held responses of its target
/// PDCs in pools, since only PDCs sending read data, or holding responses, need theirs. Methods
/// that take the return direction as an `Option` read `None` as an idle one (nothing
/// outstanding, no timer running: see [`ReturnDirection::idle`]); an empty [`HeldResponses`]
/// stands for none held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TargetCore<const W: usize, const R: usize> {
    state: TargetState,
    mode: DeliveryMode,
    /// This PDC's id (TPDCID).
    local: u16,
    /// The initiator's id (IPDCID).
    remote: u16,
    start_psn: u32,
    rx: RxWindow<W>,
    coalescer: AckCoalescer,
    ack_due: bool,
    /// The PSN that triggered the ACK and the flags it echoes.
    ack_psn: u32,
    ack_flags: AckFlags,
    /// The latest PROBE's opaque value, echoed by its answer, and the SACK base it asked for.
    probe: (u16, u32),
    /// The newest PSN received when the last ACK went out.
    acked_max: u32,
    /// Pending: when the PDC is reaped. CloseReqWait: when the CLOSE_REQ is resent or given up
    /// (the two states never overlap; no other state arms it).
    state_at: Deadline,
    /// When the PDC is reaped for want of packets (`PdcConfig::idle_timeout`).
    idle_at: Deadline,
    /// ROD: the missing PSN already NACKed ROD_OOO (with `ROD_NACKED` in `marks`).
    rod_nacked: u32,
    /// The initiator's MP_RANGE for the return direction, and the CACK of the ACK_CC that set it.
    ret_range: u32,
    ret_range_cack: u32,
    close_req_psn: u32,
    close_req_acked: bool,
    close_req_count: u8,
    tx_pending: u8,
    events: u8,
    failure: Option<Failure>,
    /// `CLEAR_PSN`: the initiator has every response up to it.
    clear_psn: u32,
    /// The PSN `handle_request` last delivered as new, until the next ACK goes out: the one
    /// request whose response may still be held (with `LAST_NEW` in `marks`).
    last_new: u32,
    /// `ROD_NACKED`, `LAST_NEW`: which of the two PSNs above holds one (two `Option<u32>`s would
    /// take 8 bytes more); `LEFT_START`: whether `left_start` below does.
    marks: u8,
    /// The start PSN of the SYN that found this PDC's start refused (with `LEFT_START` in
    /// `marks`): late packets of that PSN space are dropped.
    left_start: u32,
    /// NACKs waiting for `poll_transmit`, oldest first.
    nacks: [Option<PendingNack>; PENDING_NACKS],
}

/// A NACK waiting to be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PendingNack {
    code: NackCode,
    retx: bool,
    psn: u32,
    payload: u32,
    /// The initiator PDC it goes to: the refused packet's SPDCID.
    to: u16,
}

/// The return direction of a target PDC (read data and CLOSE_REQ, numbered from the initiator's
/// start PSN): its send window, retransmission timer, round-trip estimate and SACK-driven loss
/// detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReturnDirection<const W: usize> {
    window: TxWindow<W>,
    /// Retransmission timer, and its timeouts for the oldest packet.
    rto_at: Deadline,
    rto_count: u8,
    rtt: RttEstimator,
    losses: LossDetector,
}

/// What an idle return direction (nothing outstanding, no timer running) needs kept: its next
/// PSN, the newest CACK it saw and its round-trip estimate. [`ReturnDirection::resume`] makes it
/// whole again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IdleReturn {
    next: u32,
    max_cack: u32,
    srtt: u32,
    rttvar: u32,
}

impl IdleReturn {
    /// The return direction of a new PDC whose start PSN is `start_psn`.
    pub(crate) const fn new(start_psn: u32) -> Self {
        IdleReturn { next: start_psn, max_cack: start_psn.wrapping_sub(1), srtt: 0, rttvar: 0 }
    }

    /// Its next PSN (every one before it acknowledged).
    pub(crate) const fn next_psn(&self) -> u32 {
        self.next
    }
}

impl<const W: usize> ReturnDirection<W> {
    /// Every byte zero: a placeholder (for storage built in `const`), not a return direction in
    /// use; [`ReturnDirection::resume`] makes one.
    pub(crate) const ZERO: Self = ReturnDirection {
        window: TxWindow::resume(0, 0),
        rto_at: Deadline::NONE,
        rto_count: 0,
        rtt: RttEstimator::ZERO,
        losses: LossDetector::ZERO,
    };

    /// The return direction that was `idle`.
    pub(crate) const fn resume(idle: IdleReturn) -> Self {
        ReturnDirection {
            window: TxWindow::resume(idle.next, idle.max_cack),
            rto_at: Deadline::NONE,
            rto_count: 0,
            rtt: RttEstimator::resume(idle.srtt, idle.rttvar),
            losses: LossDetector::ZERO,
        }
    }

    /// What it needs kept, if it is idle: nothing outstanding or marked, no timer running and
    /// no packet timed, so [`ReturnDirection::resume`] of the answer behaves exactly as it does.
    pub(crate) fn idle(&self) -> Option<IdleReturn> {
        let w = &self.window;
        let idle = *w == TxWindow::resume(w.next_psn(), w.max_cack())
            && !self.rto_at.is_armed()
            && self.rto_count == 0
            && !self.rtt.is_timing()
            && !self.losses.deadline().is_armed();
        let (srtt, rttvar) = self.rtt.learned();
        idle.then_some(IdleReturn { next: w.next_psn(), max_cack: w.max_cack(), srtt, rttvar })
    }

    /// The send window.
    pub(crate) const fn window(&self) -> &TxWindow<W> {
        &self.window
    }

    /// Retransmission timeouts of the oldest unacknowledged packet so far.
    pub(crate) const fn timeouts(&self) -> u8 {
        self.rto_count
    }

    /// The round-trip estimate.
    pub(crate) const fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Its next deadline: the RTO or the reorder window.
    fn deadline(&self) -> Deadline {
        self.rto_at.earlier(self.losses.deadline())
    }

    /// Gives up every packet outstanding (the PDC closed).
    fn abandon(&mut self) {
        self.window.abandon();
        self.rto_at.clear();
        self.losses.stop();
    }
}

/// NACKs a target PDC holds for sending (project-defined): more than that between two
/// [`Target::poll_transmit`] calls are dropped, as a lost NACK would be; the initiator's timers
/// recover either.
pub const PENDING_NACKS: usize = 2;

impl<const W: usize, const R: usize, const F: usize> Target<W, R, F> {
    /// `MP_RANGE` of this PDC, in PSNs.
    pub const MP_RANGE: u32 = RxWindow::<W>::MP_RANGE;

    /// A PDC for the SYN request `req` (UE 1.0 §3.5.8.2): `Start_PSN = PSN − psn_offset`.
    /// `local` is its id (never 0). Its return direction numbers its packets from the same start
    /// PSN. Established at once unless `policy` refuses the start PSN (then Pending; the caller
    /// then passes `req` to [`Target::handle_request`], which NACKs NEW_START_PSN).
    pub fn new(
        now: Instant,
        cfg: &PdcConfig,
        local: u16,
        req: &Request,
        policy: StartPolicy,
    ) -> Result<Self, PdcError> {
        let core = TargetCore::new(now, cfg, local, req, policy)?;
        let ret = ReturnDirection::resume(IdleReturn::new(core.start_psn));
        Ok(Target { core, ret, held: HeldResponses::EMPTY })
    }

    /// The current state.
    pub const fn state(&self) -> TargetState {
        self.core.state()
    }

    /// RUD or ROD.
    pub const fn mode(&self) -> DeliveryMode {
        self.core.mode()
    }

    /// This PDC's id.
    pub const fn local_id(&self) -> u16 {
        self.core.local_id()
    }

    /// The initiator's PDC id.
    pub const fn remote_id(&self) -> u16 {
        self.core.remote_id()
    }

    /// The start PSN in force; while Pending, the one the initiator was told to restart at.
    pub const fn start_psn(&self) -> u32 {
        self.core.start_psn()
    }

    /// The receive window.
    pub const fn window(&self) -> &RxWindow<W> {
        self.core.window()
    }

    /// Why the PDC closed in error, if it did.
    pub const fn failure(&self) -> Option<Failure> {
        self.core.failure()
    }

    /// For a secure domain: the `Expected_PSN` a later PDC's start must reach, one past this PDC's
    /// cumulative ACK (`CACK_PSN + 1`: after a CLOSE, the CLOSE's PSN + 1). Project-defined; see
    /// the module doc.
    pub const fn next_expected_psn(&self) -> u32 {
        self.core.next_expected_psn()
    }

    /// Whether an ACK is waiting for [`Target::poll_transmit`].
    pub const fn ack_due(&self) -> bool {
        self.core.ack_due()
    }

    /// Classifies a request for this PDC (found by DPDCID, or by the SYN key) and records it:
    /// [`Target::handle_request_admitting`] with a caller that takes every request.
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub fn handle_request(
        &mut self,
        now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
    ) -> Result<Delivery, PdcError> {
        self.core.handle_request(&mut self.held, now, cfg, req, payload_len, ecn)
    }

    /// Classifies a request for this PDC (found by DPDCID, or by the SYN key) and records it.
    /// `payload_len` feeds ACK coalescing; `ecn` says the packet arrived CE-marked. What the
    /// caller does with the payload is the returned [`Delivery`]; a refusal's NACK leaves
    /// through [`Target::poll_transmit`].
    ///
    /// A request that would be delivered as new is first admitted, so that nothing counts it
    /// received that cannot take it: it is refused (NACKed, not recorded) when no
    /// guaranteed-delivery response could be held for it (NO_GTD_DEL_AVAIL, see
    /// [`held`](super::held)), or when `admit` refuses it with a NACK code (the message layer's
    /// NO_SES_MSG_AVAIL, for instance). `admit` is asked about every request, and its answer
    /// counts only for one that would be delivered as new, so it must not change anything.
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub fn handle_request_admitting(
        &mut self,
        now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
        admit: impl FnOnce() -> Result<(), NackCode>,
    ) -> Result<Delivery, PdcError> {
        self.core.handle_request_admitting(&mut self.held, now, cfg, req, payload_len, ecn, false, admit)
    }

    /// Whether [`Target::handle_request`] would deliver `req` as new (if admitted), without
    /// recording anything.
    pub fn would_deliver(&self, req: &Request) -> bool {
        self.core.would_deliver(req)
    }

    /// Answers a request that arrived trimmed (its payload cut by a switch; the caller knows from
    /// the packet's length or marking): NACK TRIMMED, or TRIMMED_LASTHOP when the last-hop switch
    /// cut it, so the initiator resends at once. Nothing is recorded. Past Pending, a SYN of the
    /// PSN space a restart refused draws no NACK (module doc).
    pub fn handle_trimmed(&mut self, req: &Request, last_hop: bool) -> Result<(), PdcError> {
        self.core.handle_trimmed(req, last_hop)
    }

    /// Handles a control packet from the initiator: CLOSE, ACK_REQ, CLEAR, NOOP, PROBE; others are
    /// NACKed UNEXP_EVENT (as uet-ref-prov `uet_pds.c` does). While Pending every control is NACKed
    /// NEW_START_PSN, like a request; past Pending one of the PSN space a restart refused is
    /// dropped unanswered (module doc).
    pub fn handle_control(&mut self, now: Instant, cfg: &PdcConfig, ctl: &Control) -> Result<(), PdcError> {
        self.core.handle_control(&mut self.held, Some(&mut self.ret), now, cfg, ctl)
    }

    /// Handles an ACK from the initiator for the return direction: read data and CLOSE_REQ. Its
    /// CACK, SACK and ACK_PSN acknowledge return PSNs as an initiator's window takes them; the
    /// CLOSE_REQ is acknowledged once its PSN is.
    pub fn handle_ack(&mut self, now: Instant, cfg: &PdcConfig, ack: &Ack) -> Result<AckOutcome, PdcError> {
        self.core.handle_ack(&mut self.held, &mut self.ret, now, cfg, ack)
    }

    /// Handles a NACK from the initiator for a return-direction packet: a retransmit-class code
    /// resends it (ROD_OOO every unacknowledged one); a close-class code closes the PDC in error;
    /// a NACK outside the sent PSNs changes nothing.
    pub fn handle_nack(&mut self, now: Instant, cfg: &PdcConfig, nack: &Nack) -> Result<NackClass, PdcError> {
        self.core.handle_nack(&mut self.held, &mut self.ret, now, cfg, nack)
    }

    /// Retransmission timeouts of the oldest unacknowledged return-direction packet so far.
    pub const fn timeouts(&self) -> u8 {
        self.ret.timeouts()
    }

    /// Replaces the return direction with what [`ReturnDirection::resume`] makes of it if it is
    /// idle, as an endpoint's pool does; returns whether it was.
    #[cfg(test)]
    pub(crate) fn rest_return_direction(&mut self) -> bool {
        super::rest(&mut self.ret, ReturnDirection::idle, ReturnDirection::resume)
    }

    /// The round-trip estimate of the return direction.
    pub const fn rtt(&self) -> &RttEstimator {
        self.ret.rtt()
    }

    /// The return direction's send window: read data and CLOSE_REQ (the caller keeps each read
    /// packet's data until its PSN is acknowledged).
    pub const fn return_window(&self) -> &TxWindow<W> {
        self.ret.window()
    }

    /// Whether a return-direction packet may be sent now: the PDC is established (or waiting
    /// for the initiator's CLOSE) and both windows have room.
    pub fn can_send(&self) -> bool {
        self.core.can_send(&self.ret)
    }

    /// Takes the next return-direction PSN and stamps a packet for it (UE 1.0 §3.5.20.1, read
    /// data larger than `Max_ACK_Data_Size`): a RUD or ROD request from this PDC (SPDCID = its
    /// id, DPDCID = the initiator's) whose next header the caller sets (RSP_DATA) and whose SES
    /// header and data it adds. `ar` asks for an immediate ACK (set on a burst's last packet);
    /// with `Enb_ACK_Per_Pkt` every packet carries AR. The packet is resent until acknowledged
    /// (RTO with backoff, or SACK-driven), through [`TargetTx::Resend`].
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub fn send(&mut self, now: Instant, cfg: &PdcConfig, ar: bool) -> Result<Stamp, PdcError> {
        self.core.send(&mut self.ret, now, cfg, ar)
    }

    /// Asks the initiator to close (UE 1.0 §3.5.8.3): sends CLOSE_REQ and waits. The
    /// CLOSE_REQ takes the next return-direction PSN ([`PdcError::WindowFull`] while the return
    /// window has no room). Only once every return packet (read data) is acknowledged, as in
    /// uet-ref-prov: before, [`PdcError::IllegalEvent`] and nothing changes.
    pub fn request_close(&mut self, now: Instant, cfg: &PdcConfig) -> Result<(), PdcError> {
        self.core.request_close(&mut self.held, &mut self.ret, now, cfg)
    }

    /// Whether [`Target::poll_transmit`] has a packet to give: a NACK, CLOSE_REQ, an ACK due (or
    /// owed for a held response), or a return-direction packet to resend. Only the calls that
    /// take a packet or run a timer change it, so a scheduler polls a PDC only while this holds.
    pub fn has_pending(&self) -> bool {
        self.core.has_pending(&self.held, Some(&self.ret))
    }

    /// The next packet to send: a NACK refusing a packet, NACK CLOSING_IN_ERR, CLOSE_REQ, the
    /// answer to a PROBE, the ACK that is due, or a resend of the return direction.
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<TargetTx> {
        self.core.poll_transmit(&mut self.held, Some(&mut self.ret), now)
    }

    /// A CREDIT control packet granting `granted` (RCCC's cumulative quanta, 24 bits, in the
    /// payload) to the initiator; it takes no PSN (the PSN field repeats `CACK_PSN`).
    pub fn credit(&self, granted: u32) -> Control {
        self.core.credit(granted)
    }

    /// Keeps `rsp`, the guaranteed-delivery SES response (opcode `RESPONSE`) to the request `psn`,
    /// until `CLEAR_PSN` passes it, and makes an ACK carrying it due (see [`held`](super::held)):
    /// the ACK comes from [`Target::poll_transmit`] with `next_header` RSP, and the caller emits
    /// [`Target::held_response`] of its `ack_psn` after it.
    ///
    /// `psn` must be the request [`Target::handle_request`] just delivered as new, before the next
    /// `poll_transmit`: an ACK sent since may have acknowledged it already. A request is delivered
    /// only while a response could be held for it.
    pub fn hold_response(&mut self, psn: u32, rsp: Response) -> Result<(), PdcError> {
        self.core.hold_response(&mut self.held, psn, rsp, &[])
    }

    /// [`Target::hold_response`] for a response with `data` (1 to `F` bytes, the PDC's const
    /// generic; a fetching atomic's value needs up to
    /// [`RESPONSE_DATA_MAX`](super::held::RESPONSE_DATA_MAX)): the ACK comes with
    /// `next_header` RSP_DATA, and the caller emits [`Target::held_response_with_data`] of its
    /// `ack_psn` after it. `rsp` gives the fields RESPONSE_W_DATA shares with RESPONSE (its
    /// opcode RESPONSE or RESPONSE_W_DATA).
    pub fn hold_response_with_data(&mut self, psn: u32, rsp: Response, data: &[u8]) -> Result<(), PdcError> {
        if data.is_empty() || data.len() > F {
            return Err(PdcError::CannotHold {
                psn,
                why: "response data of 1 to F bytes (the Target's const generic)",
            });
        }
        self.core.hold_response(&mut self.held, psn, rsp, data)
    }

    /// Whether a guaranteed-delivery response could be held for `req` if it were delivered now
    /// (else [`Target::handle_request_admitting`] NACKs it NO_GTD_DEL_AVAIL, retransmit class: the
    /// initiator resends after `NACK_Retx_Time`). The last free slot is kept for the oldest PSN
    /// not yet received (`CACK_PSN + 1`; project-defined, see [`held`](super::held)).
    ///
    /// The slots the request's own `CLEAR_PSN` releases count as free: recording the request
    /// applies it. (Were they not counted, a PDC whose slots are all held would refuse every new
    /// request, and with it the `CLEAR_PSN` that frees them: the initiator would only get out of
    /// it with a CLEAR control packet, after ACKs it may never get.)
    #[inline]
    pub fn response_room(&self, req: &Request) -> bool {
        self.core.response_room(&self.held, req, false)
    }

    /// The response held for the request `psn`: what follows an ACK with `next_header` RSP.
    pub fn held_response(&self, psn: u32) -> Option<Response> {
        self.held.get(psn)
    }

    /// The response with data held for the request `psn`, and its data: what follows an ACK
    /// with `next_header` RSP_DATA (see [`Response::with_data`]).
    pub fn held_response_with_data(&self, psn: u32) -> Option<(ResponseWithData, &[u8])> {
        let data = self.held.data(psn)?;
        Some((self.held.get(psn)?.with_data(data.len() as u16), data))
    }

    /// The ACK_CC this PDC would send now.
    pub fn ack(&self) -> Ack {
        self.core.ack(&self.held)
    }

    /// The next deadline: reaping a Pending PDC, resending or giving up a CLOSE_REQ, the
    /// return direction's RTO or reorder window, or the idle timeout.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.core.poll_timeout(Some(&self.ret))
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, cfg: &PdcConfig) {
        self.core.handle_timeout(&mut self.held, Some(&mut self.ret), now, cfg)
    }

    /// The next event, each reported once: Established, Failed, then Closed (after the last
    /// packet is sent).
    pub fn poll_event(&mut self) -> Option<TargetEvent> {
        self.core.poll_event()
    }
}

impl<const W: usize, const R: usize> TargetCore<W, R> {
    /// `MP_RANGE` of this PDC, in PSNs.
    const MP_RANGE: u32 = RxWindow::<W>::MP_RANGE;

    /// ROD: the missing PSN already NACKed ROD_OOO, if any.
    const fn rod_nacked(&self) -> Option<u32> {
        if self.marks & ROD_NACKED != 0 { Some(self.rod_nacked) } else { None }
    }

    /// The PSN `handle_request` last delivered as new, while no ACK has gone out since.
    const fn last_new(&self) -> Option<u32> {
        if self.marks & LAST_NEW != 0 { Some(self.last_new) } else { None }
    }

    const SIZE_OK: () = {
        assert!(
            W >= 2 && W % 2 == 0 && 64 * W <= 32768,
            "the window must be a whole number of MPR units (128 PSNs) and fit the 16-bit offsets"
        );
        assert!(R >= 1, "a target PDC must be able to hold at least one response");
    };

    /// See [`Target::new`].
    pub(crate) fn new(
        now: Instant,
        cfg: &PdcConfig,
        local: u16,
        req: &Request,
        policy: StartPolicy,
    ) -> Result<Self, PdcError> {
        let () = TargetCore::<W, R>::SIZE_OK;
        let Some(start) = req.start_psn() else {
            return Err(PdcError::IllegalEvent {
                event: "first request without SYN",
                state: PdcState::Target(TargetState::Closed),
            });
        };
        let required = match policy {
            StartPolicy::Open => start,
            StartPolicy::Expected0Rtt { expected_psn } if psn_after(expected_psn, start) => expected_psn,
            StartPolicy::Expected0Rtt { .. } => start,
            StartPolicy::Random1Rtt { start_psn } => start_psn,
        };
        let established = required == start;
        Ok(TargetCore {
            state: if established { TargetState::Established } else { TargetState::Pending },
            mode: req.mode,
            local,
            remote: req.spdcid,
            start_psn: required,
            rx: RxWindow::new(required),
            coalescer: AckCoalescer::default(),
            ack_due: false,
            ack_psn: start,
            ack_flags: AckFlags::empty(),
            probe: (0, 0),
            acked_max: required.wrapping_sub(1),
            state_at: if established { Deadline::NONE } else { Deadline::at(now.saturating_add(cfg.new_pdc_time)) },
            idle_at: Deadline::from_option(idle_deadline(now, cfg)),
            rod_nacked: 0,
            ret_range: u32::from(cfg.default_mpr) * MPR_GRANULARITY,
            ret_range_cack: required.wrapping_sub(1),
            close_req_psn: 0,
            close_req_acked: false,
            close_req_count: 0,
            tx_pending: 0,
            events: if established { EV_ESTABLISHED } else { 0 },
            failure: None,
            clear_psn: required.wrapping_sub(1),
            last_new: 0,
            marks: if established { 0 } else { LEFT_START },
            left_start: start,
            nacks: [None; PENDING_NACKS],
        })
    }

    /// See [`Target::state`].
    pub(crate) const fn state(&self) -> TargetState {
        self.state
    }

    /// In CloseReqWait, the periods of `Close_REQ_Time` that passed without a packet from the
    /// initiator since the last one.
    pub(crate) const fn close_req_periods(&self) -> u8 {
        self.close_req_count
    }

    /// See [`Target::mode`].
    pub(crate) const fn mode(&self) -> DeliveryMode {
        self.mode
    }

    /// See [`Target::local_id`].
    pub(crate) const fn local_id(&self) -> u16 {
        self.local
    }

    /// See [`Target::remote_id`].
    pub(crate) const fn remote_id(&self) -> u16 {
        self.remote
    }

    /// See [`Target::start_psn`].
    pub(crate) const fn start_psn(&self) -> u32 {
        self.start_psn
    }

    /// See [`Target::window`].
    pub(crate) const fn window(&self) -> &RxWindow<W> {
        &self.rx
    }

    /// See [`Target::failure`].
    pub(crate) const fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// See [`Target::next_expected_psn`].
    pub(crate) const fn next_expected_psn(&self) -> u32 {
        self.rx.cack_psn().wrapping_add(1)
    }

    /// See [`Target::ack_due`].
    pub(crate) const fn ack_due(&self) -> bool {
        self.ack_due
    }

    fn nack(&self, code: NackCode, psn: u32, retx: bool, payload: u32, to: u16) -> Nack {
        let flags = if retx { NackFlags::RETX } else { NackFlags::empty() };
        Nack { flags, payload, ..Nack::for_pdc(code, psn, self.local, to) }
    }

    /// Refuses a packet of this PDC's initiator: queues its NACK for [`Target::poll_transmit`]
    /// (dropped when [`PENDING_NACKS`] wait already).
    fn refuse(&mut self, code: NackCode, psn: u32, retx: bool) -> Delivery {
        self.refuse_from(code, psn, retx, self.remote)
    }

    /// [`TargetCore::refuse`] for a packet from initiator PDC `spdcid`, which the NACK goes to
    /// (PDC_HDR_MISMATCH: another PDC than this one's initiator, as uet-ref-prov's
    /// `uet_pds_tx_nack` addresses it to the packet's SPDCID).
    fn refuse_from(&mut self, code: NackCode, psn: u32, retx: bool, spdcid: u16) -> Delivery {
        let payload = match code {
            NackCode::NewStartPsn => self.start_psn,
            // To another PDC than this one's initiator this PDC's PSNs mean nothing: 0, as
            // uet-ref-prov's `uet_pds_tx_nack` sends for PDC_HDR_MISMATCH.
            _ if spdcid != self.remote => 0,
            // Wireshark labels the payload "Max Recvd PSN + 1".
            _ => self.rx.max_rcvd().wrapping_add(1),
        };
        if let Some(slot) = self.nacks.iter_mut().find(|n| n.is_none()) {
            *slot = Some(PendingNack { code, retx, psn, payload, to: spdcid });
        }
        Delivery::Dropped
    }

    /// Whether a packet implying start PSN `start` (SYN form) belongs to the PSN space its
    /// initiator left when told NEW_START_PSN: such a late packet is dropped unanswered (module
    /// doc).
    fn left_behind(&self, start: Option<u32>) -> bool {
        self.marks & LEFT_START != 0 && start == Some(self.left_start)
    }

    /// [`TargetCore::refuse`] for a packet that changes nothing else.
    fn refused(&mut self, code: NackCode, psn: u32, retx: bool) -> Result<(), PdcError> {
        self.refuse(code, psn, retx);
        Ok(())
    }

    /// See [`Target::handle_request`].
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub(crate) fn handle_request(
        &mut self,
        held: &mut impl Responses,
        now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
    ) -> Result<Delivery, PdcError> {
        self.handle_request_admitting(held, now, cfg, req, payload_len, ecn, false, || Ok(()))
    }

    /// See [`Target::handle_request_admitting`].
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments, reason = "the public method's arguments and the held responses it keeps")]
    pub(crate) fn handle_request_admitting(
        &mut self,
        held: &mut impl Responses,
        now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
        data: bool,
        admit: impl FnOnce() -> Result<(), NackCode>,
    ) -> Result<Delivery, PdcError> {
        let refusal = match admit() {
            Err(code) => Some(code),
            Ok(()) => (!self.response_room(held, req, data)).then_some(NackCode::NoGtdDelAvail),
        };
        if let Some(code) = refusal {
            if self.would_deliver(req) {
                if code == NackCode::NoGtdDelAvail {
                    // The slot it waits for frees when the initiator's `CLEAR_PSN` passes a
                    // response held for a PSN it has every PSN up to, which it does once the ACK
                    // carrying that response arrives: send those ACKs again, in case they were
                    // lost, at the pace of the refused resends rather than of the initiator's
                    // timeouts (project-defined; without it, a lost ACK could cost the request
                    // `Max_NACK_Retx_Cnt` refusals before the timeout resent its request).
                    held.resend_through(self.rx.cack_psn());
                }
                return Ok(self.refuse(code, req.psn, req.flags.contains(RequestFlags::RETX)));
            }
        }
        self.record(held, now, cfg, req, payload_len, ecn)
    }

    #[inline(always)]
    fn record(
        &mut self,
        held: &mut impl Responses,
        now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
    ) -> Result<Delivery, PdcError> {
        let syn = matches!(req.dest, PdcDest::Syn { .. });
        let retx = req.flags.contains(RequestFlags::RETX);
        if let PdcDest::Established { dpdcid } = req.dest {
            if dpdcid != self.local {
                return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
            }
        }
        let mut next = transition(self.state, Ev::Packet)?;
        if req.spdcid != self.remote {
            return Ok(self.refuse_from(NackCode::PdcHdrMismatch, req.psn, retx, req.spdcid));
        }
        if req.mode != self.mode {
            return Ok(self.refuse(NackCode::PdcModeMismatch, req.psn, retx));
        }
        if self.state == TargetState::Pending {
            if !(syn && req.start_psn() == Some(self.start_psn)) {
                return Ok(self.refuse(NackCode::NewStartPsn, req.psn, retx));
            }
            next = transition(self.state, Ev::RequiredStart)?;
            self.state_at.clear();
            self.events |= EV_ESTABLISHED;
        } else if self.left_behind(req.start_psn()) {
            return Ok(Delivery::Dropped);
        }
        let arrival = match self.mode {
            DeliveryMode::Rud => self.rx.receive(req.psn),
            DeliveryMode::Rod => match self.rx.classify(req.psn) {
                Arrival::New if req.psn != self.rx.cack_psn().wrapping_add(1) => {
                    let missing = self.rx.cack_psn().wrapping_add(1);
                    self.state = next;
                    if self.rod_nacked() == Some(missing) {
                        return Ok(Delivery::Dropped);
                    }
                    self.rod_nacked = missing;
                    self.marks |= ROD_NACKED;
                    return Ok(self.refuse(NackCode::RodOoo, req.psn, retx));
                }
                _ => self.rx.receive(req.psn),
            },
        };
        self.state = next;
        if arrival != Arrival::OutOfWindow {
            self.apply_clear(held, req.psn.wrapping_add(i32::from(req.clear_psn_offset) as u32));
        }
        let delivery = match arrival {
            Arrival::Duplicate | Arrival::Stale if held.resend(req.psn) => Delivery::Duplicate,
            Arrival::New => {
                let triggers = AckTriggers { ar: req.flags.contains(RequestFlags::AR), syn, ecn, needs_clear: false };
                // A packet that fills a gap behind what the last ACK reported is ACKed at once
                // (project-defined, after RFC 5681 §4.2): otherwise a late packet after a
                // message's last, AR-carrying packet would wait for the initiator's timers.
                let fills_gap = psn_after(self.acked_max, req.psn);
                if self.coalescer.on_packet(&cfg.ack, payload_len, triggers) || fills_gap {
                    self.ack_due = true;
                }
                self.last_new = req.psn;
                self.marks |= LAST_NEW;
                Delivery::New
            }
            Arrival::Duplicate => {
                self.ack_due = true;
                Delivery::Duplicate
            }
            Arrival::Stale => {
                self.ack_due = true;
                Delivery::Stale
            }
            Arrival::OutOfWindow => {
                let code = if syn { NackCode::InvalidSyn } else { NackCode::PsnOorWindow };
                return Ok(self.refuse(code, req.psn, retx));
            }
        };
        self.ack_psn = req.psn;
        self.ack_flags = AckFlags::empty();
        if ecn {
            self.ack_flags |= AckFlags::M;
        }
        if retx {
            self.ack_flags |= AckFlags::RETX;
        }
        self.touch(now, cfg);
        Ok(delivery)
    }

    /// See [`Target::would_deliver`].
    pub(crate) fn would_deliver(&self, req: &Request) -> bool {
        let syn = matches!(req.dest, PdcDest::Syn { .. });
        if let PdcDest::Established { dpdcid } = req.dest {
            if dpdcid != self.local {
                return false;
            }
        }
        if self.state == TargetState::Closed || req.spdcid != self.remote || req.mode != self.mode {
            return false;
        }
        if self.left_behind(req.start_psn()) {
            return false;
        }
        let rx = if self.state == TargetState::Pending {
            if !(syn && req.start_psn() == Some(self.start_psn)) {
                return false;
            }
            RxWindow::<W>::new(self.start_psn)
        } else {
            self.rx
        };
        match self.mode {
            DeliveryMode::Rud => rx.classify(req.psn) == Arrival::New,
            DeliveryMode::Rod => req.psn == rx.cack_psn().wrapping_add(1),
        }
    }

    /// See [`Target::handle_trimmed`].
    pub(crate) fn handle_trimmed(&mut self, req: &Request, last_hop: bool) -> Result<(), PdcError> {
        if let PdcDest::Established { dpdcid } = req.dest {
            if dpdcid != self.local {
                return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
            }
        }
        transition(self.state, Ev::Packet)?;
        if self.state != TargetState::Pending && self.left_behind(req.start_psn()) {
            return Ok(());
        }
        let code = match (req.spdcid != self.remote, last_hop) {
            (true, _) => NackCode::PdcHdrMismatch,
            (false, true) => NackCode::TrimmedLastHop,
            (false, false) => NackCode::Trimmed,
        };
        self.refuse_from(code, req.psn, req.flags.contains(RequestFlags::RETX), req.spdcid);
        Ok(())
    }

    /// A packet from the initiator was accepted: the idle timer restarts, and so does the wait for
    /// the CLOSE after an acknowledged CLOSE_REQ.
    fn touch(&mut self, now: Instant, cfg: &PdcConfig) {
        self.idle_at = Deadline::from_option(idle_deadline(now, cfg));
        if self.state == TargetState::CloseReqWait && self.close_req_acked {
            self.state_at.set(now.saturating_add(cfg.close_req_time));
            self.close_req_count = 0;
        }
    }

    /// See [`Target::handle_control`].
    pub(crate) fn handle_control(
        &mut self,
        held: &mut impl Responses,
        ret: Option<&mut ReturnDirection<W>>,
        now: Instant,
        cfg: &PdcConfig,
        ctl: &Control,
    ) -> Result<(), PdcError> {
        if let PdcDest::Established { dpdcid } = ctl.dest {
            if dpdcid != self.local {
                return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
            }
        }
        let next = transition(self.state, Ev::Packet)?;
        let retx = ctl.flags.contains(ControlFlags::RETX);
        if ctl.spdcid != self.remote {
            self.refuse_from(NackCode::PdcHdrMismatch, ctl.psn, retx, ctl.spdcid);
            return Ok(());
        }
        if next == TargetState::Pending {
            // Its initiator has not restarted yet (the NACK that told it was lost, or this packet
            // overtook it): tell it again. *Project-defined*: UNEXP_EVENT here would fail a PDC
            // whose tail-loss probe merely arrived before its restart.
            return self.refused(NackCode::NewStartPsn, ctl.psn, retx);
        }
        if self.left_behind(ctl.start_psn()) {
            return Ok(());
        }
        match ctl.ctl_type {
            ControlType::Close => {
                // The CLOSE takes the PSN after every request (all were acknowledged first, or
                // abandoned in error): everything up to it counts as received.
                let cack = self.rx.cack_psn();
                if !psn_after(ctl.psn, cack) {
                    return self.refused(NackCode::UnexpEvent, ctl.psn, retx);
                }
                let next = transition(self.state, Ev::Close)?;
                self.rx = RxWindow::new(ctl.psn.wrapping_add(1));
                self.ack_now(ctl.psn, retx);
                self.enter(held, ret, next);
                Ok(())
            }
            ControlType::AckReq => {
                let received = match self.mode {
                    DeliveryMode::Rud => self.rx.received(ctl.psn),
                    DeliveryMode::Rod => !psn_after(ctl.psn, self.rx.cack_psn()),
                };
                if !received {
                    return self.refused(NackCode::PktNotRcvd, ctl.psn, retx);
                }
                self.ack_now(ctl.psn, retx);
                self.touch(now, cfg);
                Ok(())
            }
            ControlType::Probe => {
                // Answered at once, apart from any ACK due, by an ACK with P set that echoes the
                // probe's opaque value in place of ACK_PSN, its SACK based where the payload asks.
                self.tx_pending |= TX_PROBE_ACK;
                self.probe = (ctl.probe_opaque, ctl.payload);
                self.touch(now, cfg);
                Ok(())
            }
            ControlType::Clear | ControlType::Noop => {
                if ctl.ctl_type == ControlType::Clear {
                    // The payload is the initiator's CLEAR_PSN (its left edge − 1). Releasing a
                    // held response lets CACK move past it: an ACK says so at once, since an
                    // initiator whose window waits on that CACK sends nothing that would draw one.
                    let before = self.ack(held).cack_psn;
                    self.apply_clear(held, ctl.payload);
                    if self.ack(held).cack_psn != before {
                        self.ack_now(self.rx.cack_psn(), retx);
                    }
                }
                if ctl.flags.contains(ControlFlags::AR) {
                    self.ack_now(self.rx.cack_psn(), retx);
                }
                self.touch(now, cfg);
                Ok(())
            }
            _ => self.refused(NackCode::UnexpEvent, ctl.psn, retx),
        }
    }

    fn ack_now(&mut self, psn: u32, retx: bool) {
        self.ack_due = true;
        self.ack_psn = psn;
        self.ack_flags = if retx { AckFlags::RETX } else { AckFlags::empty() };
    }

    /// See [`Target::handle_ack`].
    pub(crate) fn handle_ack(
        &mut self,
        held: &mut impl Responses,
        ret: &mut ReturnDirection<W>,
        now: Instant,
        cfg: &PdcConfig,
        ack: &Ack,
    ) -> Result<AckOutcome, PdcError> {
        if ack.dpdcid != self.local {
            return Err(PdcError::WrongPdc { expected: self.local, got: ack.dpdcid });
        }
        if ack.spdcid != self.remote {
            return Err(PdcError::WrongPdc { expected: self.remote, got: ack.spdcid });
        }
        let next = transition(self.state, Ev::Packet)?;
        let base_before = ret.window.base();
        let acked = ret.window.on_ack_fields(ack)?;
        super::update_peer_range(ack, &mut self.ret_range, &mut self.ret_range_cack);
        if ret.window.base() != base_before {
            ret.rto_count = 0;
        }
        let mut rtt = None;
        if acked > 0 {
            let window = &ret.window;
            rtt = ret.rtt.on_ack(now, |psn| window.is_acked(psn));
            let rto = ret.rtt.backed_off(cfg, ret.rto_count);
            ret.rto_at = Deadline::from_option((self.data_outstanding(ret) > 0).then(|| now.saturating_add(rto)));
        }
        let lost = if self.mode == DeliveryMode::Rud { ret.losses.on_ack(&mut ret.window, now, cfg) } else { 0 };
        let close_req_acked =
            self.state == TargetState::CloseReqWait && !self.close_req_acked && ret.window.is_acked(self.close_req_psn);
        if close_req_acked {
            self.close_req_acked = true;
        }
        self.enter(held, Some(ret), next);
        self.touch(now, cfg);
        Ok(AckOutcome { acked: acked - u32::from(close_req_acked), lost, rtt, probe_rtt: None })
    }

    /// See [`Target::handle_nack`].
    pub(crate) fn handle_nack(
        &mut self,
        held: &mut impl Responses,
        ret: &mut ReturnDirection<W>,
        now: Instant,
        cfg: &PdcConfig,
        nack: &Nack,
    ) -> Result<NackClass, PdcError> {
        let NackTarget::Pdc { psn, spdcid, dpdcid } = nack.target else {
            return Err(PdcError::IllegalEvent { event: "RUDI NACK", state: PdcState::Target(self.state) });
        };
        if dpdcid != self.local {
            return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
        }
        if spdcid != self.remote && spdcid != 0 {
            return Err(PdcError::WrongPdc { expected: self.remote, got: spdcid });
        }
        let next = transition(self.state, Ev::Packet)?;
        if psn.wrapping_sub(ret.window.base()) >= ret.window.next_psn().wrapping_sub(ret.window.base()) {
            return Err(PdcError::StaleNack { psn });
        }
        let class = nack.code.class();
        match class {
            NackClass::Retransmit => {
                if nack.code == NackCode::RodOoo {
                    ret.window.mark_all_lost();
                } else {
                    ret.window.mark_lost(psn);
                }
                // A NACK of the oldest packet answers for the packet the timer guards: the
                // timer starts again (as the initiator's does).
                if psn == ret.window.base() {
                    ret.rto_count = 0;
                    ret.rto_at.set(now.saturating_add(ret.rtt.rto(cfg)));
                }
            }
            NackClass::Drop => {}
            NackClass::Close => {
                self.fail(held, Some(ret), Failure::Nack(nack.code), false);
                return Ok(class);
            }
            NackClass::NewStartPsn => {
                return Err(PdcError::IllegalEvent {
                    event: "NACK NEW_START_PSN",
                    state: PdcState::Target(self.state),
                });
            }
        }
        self.enter(held, Some(ret), next);
        self.touch(now, cfg);
        Ok(class)
    }

    /// Closes in error: every return packet not acknowledged is given up, and with `tell` the
    /// initiator gets NACK CLOSING_IN_ERR.
    fn fail(&mut self, held: &mut impl Responses, ret: Option<&mut ReturnDirection<W>>, why: Failure, tell: bool) {
        if let Ok(next) = transition(self.state, Ev::Fail) {
            self.failure = Some(why);
            self.events |= EV_FAILED;
            if tell {
                self.tx_pending |= TX_CLOSING_IN_ERR;
            }
            self.enter(held, ret, next);
        }
    }

    /// Return-direction packets sent and not acknowledged, the CLOSE_REQ not counted.
    fn data_outstanding(&self, ret: &ReturnDirection<W>) -> u32 {
        let close_req = self.state == TargetState::CloseReqWait && !ret.window.is_acked(self.close_req_psn);
        ret.window.outstanding() - u32::from(close_req)
    }

    /// See [`Target::can_send`].
    pub(crate) fn can_send(&self, ret: &ReturnDirection<W>) -> bool {
        transition(self.state, Ev::Send).is_ok() && ret.window.can_send(self.ret_range)
    }

    /// See [`Target::send`].
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub(crate) fn send(
        &mut self,
        ret: &mut ReturnDirection<W>,
        now: Instant,
        cfg: &PdcConfig,
        ar: bool,
    ) -> Result<Stamp, PdcError> {
        transition(self.state, Ev::Send)?;
        let psn = ret.window.send(self.ret_range).ok_or(PdcError::WindowFull)?;
        ret.rtt.on_send(psn, now);
        if !ret.rto_at.is_armed() {
            ret.rto_at.set(now.saturating_add(ret.rtt.backed_off(cfg, ret.rto_count)));
        }
        let flags = if ar || cfg.ack.per_packet { RequestFlags::AR } else { RequestFlags::empty() };
        Ok(self.stamp(ret, psn, flags))
    }

    fn stamp(&self, ret: &ReturnDirection<W>, psn: u32, flags: RequestFlags) -> Stamp {
        let dest = PdcDest::Established { dpdcid: self.remote };
        Stamp::at(self.mode, flags, ret.window.base(), psn, self.local, dest)
    }

    /// Whether the idle timeout has run out on an established PDC: its [`TargetCore::handle_timeout`]
    /// asks for a close, with a return direction to carry the CLOSE_REQ.
    pub(crate) fn idle_close_due(&self, now: Instant) -> bool {
        self.state == TargetState::Established && self.idle_at.is_due(now)
    }

    /// See [`Target::request_close`].
    pub(crate) fn request_close(
        &mut self,
        held: &mut impl Responses,
        ret: &mut ReturnDirection<W>,
        now: Instant,
        cfg: &PdcConfig,
    ) -> Result<(), PdcError> {
        let next = transition(self.state, Ev::WantClose)?;
        if self.state != TargetState::CloseReqWait && ret.window.outstanding() > 0 {
            // Only with nothing outstanding (the close would find it and fail CLOSING_IN_ERR):
            // uet-ref-prov's `uet_pds_target_pdc_close` returns -EAGAIN then.
            return Err(PdcError::IllegalEvent {
                event: "CLOSE_REQ with return packets unacknowledged",
                state: PdcState::Target(self.state),
            });
        }
        if self.state != TargetState::CloseReqWait {
            self.close_req_psn = ret.window.send(u32::MAX).ok_or(PdcError::WindowFull)?;
            self.tx_pending |= TX_CLOSE_REQ;
            self.state_at.set(now.saturating_add(cfg.close_req_time));
        }
        self.enter(held, Some(ret), next);
        Ok(())
    }

    fn enter(&mut self, held: &mut impl Responses, ret: Option<&mut ReturnDirection<W>>, next: TargetState) {
        if next == TargetState::Closed && self.state != TargetState::Closed {
            self.events |= EV_CLOSED;
            self.state_at.clear();
            self.idle_at.clear();
            self.tx_pending &= TX_CLOSING_IN_ERR;
            held.clear();
            if let Some(ret) = ret {
                ret.abandon();
            }
        }
        self.state = next;
    }

    /// See [`Target::has_pending`].
    pub(crate) fn has_pending(&self, held: &impl Responses, ret: Option<&ReturnDirection<W>>) -> bool {
        self.nacks.iter().any(Option::is_some)
            || self.tx_pending != 0
            || self.ack_due
            || held.has_unsent()
            || (self.state != TargetState::Closed && ret.is_some_and(|r| r.window.has_lost()))
    }

    /// See [`Target::poll_transmit`].
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub(crate) fn poll_transmit(
        &mut self,
        held: &mut impl Responses,
        ret: Option<&mut ReturnDirection<W>>,
        _now: Instant,
    ) -> Option<TargetTx> {
        if let Some(n) = self.nacks.first_mut().and_then(Option::take) {
            self.nacks.rotate_left(1);
            return Some(TargetTx::Nack(self.nack(n.code, n.psn, n.retx, n.payload, n.to)));
        }
        if self.tx_pending & TX_CLOSING_IN_ERR != 0 {
            self.tx_pending &= !TX_CLOSING_IN_ERR;
            let psn = self.rx.cack_psn().wrapping_add(1);
            return Some(TargetTx::Nack(self.nack(NackCode::ClosingInErr, psn, false, 0, self.remote)));
        }
        if self.tx_pending & TX_CLOSE_REQ != 0 {
            self.tx_pending &= !TX_CLOSE_REQ;
            return Some(TargetTx::Control(self.close_req()));
        }
        if self.tx_pending & TX_PROBE_ACK != 0 {
            self.tx_pending &= !TX_PROBE_ACK;
            // It reports everything received so far: a packet filling a gap behind it is
            // answered at once, as after any ACK, and no response can be held for a request it
            // acknowledged.
            self.acked_max = self.rx.max_rcvd();
            self.marks &= !LAST_NEW;
            return Some(TargetTx::Ack(self.ack_for(held, self.rx.cack_psn(), AckFlags::P, None)));
        }
        let carried = held.take_unsent();
        if carried.is_none() && !self.ack_due {
            return self.poll_resend(ret?);
        }
        self.marks &= !LAST_NEW;
        let ack = match carried {
            // The ACK a duplicate or an AR owes for this very PSN is this one.
            Some(psn) if !(self.ack_due && self.ack_psn == psn) => {
                return Some(TargetTx::Ack(self.ack_for(held, psn, AckFlags::empty(), carried)));
            }
            _ => self.ack_for(held, self.ack_psn, self.ack_flags, carried),
        };
        self.ack_due = false;
        self.coalescer.sent();
        self.acked_max = self.rx.max_rcvd();
        Some(TargetTx::Ack(ack))
    }

    /// The oldest return-direction packet marked lost: a CLOSE_REQ is resent as such.
    fn poll_resend(&mut self, ret: &mut ReturnDirection<W>) -> Option<TargetTx> {
        if self.state == TargetState::Closed {
            return None;
        }
        let psn = ret.window.take_lost()?;
        ret.rtt.on_resend(psn);
        if self.state == TargetState::CloseReqWait && psn == self.close_req_psn {
            self.close_req_count = self.close_req_count.max(1);
            return Some(TargetTx::Control(self.close_req()));
        }
        Some(TargetTx::Resend(self.stamp(ret, psn, RequestFlags::RETX | RequestFlags::AR)))
    }

    /// See [`Target::credit`].
    pub(crate) fn credit(&self, granted: u32) -> Control {
        let isrod = if self.mode == DeliveryMode::Rod { ControlFlags::ISROD } else { ControlFlags::empty() };
        Control {
            ctl_type: ControlType::Credit,
            flags: isrod,
            probe_opaque: 0,
            psn: self.rx.cack_psn(),
            spdcid: self.local,
            dest: PdcDest::Established { dpdcid: self.remote },
            payload: granted & 0x00FF_FFFF,
        }
    }

    fn close_req(&self) -> Control {
        let retx = if self.close_req_count > 0 { ControlFlags::RETX } else { ControlFlags::empty() };
        let isrod = if self.mode == DeliveryMode::Rod { ControlFlags::ISROD } else { ControlFlags::empty() };
        Control {
            ctl_type: ControlType::CloseReq,
            flags: ControlFlags::AR | retx | isrod,
            probe_opaque: 0,
            psn: self.close_req_psn,
            spdcid: self.local,
            dest: PdcDest::Established { dpdcid: self.remote },
            payload: 0,
        }
    }

    /// See [`Target::hold_response`].
    pub(crate) fn hold_response(
        &self,
        held: &mut impl Responses,
        psn: u32,
        rsp: Response,
        data: &[u8],
    ) -> Result<(), PdcError> {
        // Every PSN before it received (so `CLEAR_PSN` can pass it without another request).
        let in_order = !psn_after(psn, self.rx.cack_psn());
        // Held as RESPONSE: RESPONSE_W_DATA's fields are a RESPONSE's and its data.
        let rsp = match rsp.opcode {
            ResponseOpcode::ResponseWithData if !data.is_empty() => {
                Response { opcode: ResponseOpcode::Response, ..rsp }
            }
            _ => rsp,
        };
        let why = if rsp.opcode != ResponseOpcode::Response {
            "a guaranteed-delivery response is a RESPONSE, or a RESPONSE_W_DATA with data"
        } else if self.last_new() != Some(psn) {
            "not the request just delivered, or acknowledged since"
        } else if held.holds(psn) {
            "a response is held for it already"
        } else if !held.can_hold(in_order, !data.is_empty()) {
            "every response slot is in use"
        } else if !held.hold(psn, rsp, data, in_order) {
            "a response the wire cannot carry (Response::emit refuses it)"
        } else {
            return Ok(());
        };
        Err(PdcError::CannotHold { psn, why })
    }

    /// See [`Target::response_room`].
    #[inline]
    pub(crate) fn response_room(&self, held: &impl Responses, req: &Request, data: bool) -> bool {
        if held.roomy(data) {
            return true;
        }
        let clear = req.psn.wrapping_add(i32::from(req.clear_psn_offset) as u32);
        // As `apply_clear` would after recording the request.
        let newest = if psn_after(req.psn, self.rx.max_rcvd()) { req.psn } else { self.rx.max_rcvd() };
        let release = (psn_after(clear, self.clear_psn) && !psn_after(clear, newest)).then_some(clear);
        held.room(release, req.psn == self.rx.cack_psn().wrapping_add(1), data)
    }

    /// `CLEAR_PSN` moved to `clear` (ignored unless it moves forward and stays within what
    /// arrived): the responses it passes are released.
    fn apply_clear(&mut self, held: &mut impl Responses, clear: u32) {
        if psn_after(clear, self.clear_psn) && !psn_after(clear, self.rx.max_rcvd()) {
            self.clear_psn = clear;
            held.release_through(clear);
        }
    }

    /// See [`Target::ack`].
    pub(crate) fn ack(&self, held: &impl Responses) -> Ack {
        self.ack_for(held, self.ack_psn, self.ack_flags, None)
    }

    /// The ACK_CC for `ack_psn`, carrying the held response of `carried` if any. Every held
    /// response's PSN reads as not received but by the ACK that carries it: `CACK_PSN` stops
    /// before the oldest held one, the carried one included (so CACK never moves back when the
    /// next ACK does not carry it), the carried PSN is acknowledged by ACK_PSN and its SACK bit,
    /// and the other held PSNs' SACK bits are 0.
    #[inline(always)]
    fn ack_for(&self, held: &impl Responses, ack_psn: u32, flags: AckFlags, carried: Option<u32>) -> Ack {
        // Nothing held (the common case): the window's own CACK and SACK.
        let (cack, sack) = if held.is_empty() {
            (self.rx.cack_psn(), self.rx.sack())
        } else {
            let (cack, mut sack) = match held.oldest_except(None) {
                Some(p) if !psn_after(p, self.rx.cack_psn()) => (p.wrapping_sub(1), self.rx.sack_from(p)),
                _ => (self.rx.cack_psn(), self.rx.sack()),
            };
            // The ACK carrying a response must acknowledge its PSN: move the SACK to cover it.
            if let Some(c) = carried
                && psn_after(c, cack)
                && c.wrapping_sub(sack.base) >= 64
            {
                let lowest = cack.wrapping_add(1);
                let base = if psn_after(c.wrapping_sub(63), lowest) { c.wrapping_sub(63) } else { lowest };
                sack = self.rx.sack_from(base);
            }
            (cack, held.mask(sack, carried))
        };
        // ACK_PSN acknowledges the PSN it names (the initiator, like the reference provider,
        // marks it): a PSN whose held response this ACK does not carry is not named.
        let ack_psn = if carried != Some(ack_psn) && held.holds(ack_psn) { cack } else { ack_psn };
        let probe = flags.contains(AckFlags::P);
        // A probe's answer: its SACK based where the probe asked, when nothing held masks it.
        let sack = if probe && held.is_empty() { self.rx.sack_from(self.probe.1) } else { sack };
        let mut ack = super::AckCcFields {
            local: self.local,
            remote: self.remote,
            cack,
            sack,
            ack_psn,
            flags,
            request: if held.is_empty() { AckRequest::None } else { AckRequest::Clear },
            next_header: match carried {
                Some(psn) if held.carries_data(psn) => NextHeader::RspData,
                Some(_) => NextHeader::Rsp,
                None => NextHeader::None,
            },
            mp_range: Self::MP_RANGE,
            out_of_order: self.rx.out_of_order(),
        }
        .ack();
        if probe {
            // The opaque value goes where ACK_PSN's offset would (P set).
            ack.ack_psn_offset = self.probe.0 as i16;
        }
        ack
    }

    /// See [`Target::poll_timeout`].
    pub(crate) fn poll_timeout(&self, ret: Option<&ReturnDirection<W>>) -> Option<Instant> {
        let ret = ret.map_or(Deadline::NONE, ReturnDirection::deadline);
        self.state_at.earlier(ret).earlier(self.idle_at).get()
    }

    /// See [`Target::handle_timeout`].
    pub(crate) fn handle_timeout(
        &mut self,
        held: &mut impl Responses,
        mut ret: Option<&mut ReturnDirection<W>>,
        now: Instant,
        cfg: &PdcConfig,
    ) {
        if self.state == TargetState::Pending && self.state_at.is_due(now) {
            if let Ok(next) = transition(self.state, Ev::Reap) {
                self.enter(held, ret, next);
            }
            return;
        }
        if self.idle_at.is_due(now) {
            self.idle_at.clear();
            // Established, it asks its initiator to close (CLOSE_REQ), as the Linux "ultraeth"
            // RFC's target does on its idle timeout, rather than vanishing: an initiator that kept
            // its PDC open would have its next message refused INV_DPDCID. The close then runs
            // as any CLOSE_REQ's, and the idle timeout starts again (a last bound under unlimited
            // retransmissions). It closes at once without a return direction, or with return
            // packets unacknowledged (read data its initiator has not answered for that long).
            if self.state == TargetState::Established {
                if let Some(r) = ret.as_deref_mut() {
                    if self.request_close(held, r, now, cfg).is_ok() {
                        self.idle_at = Deadline::from_option(idle_deadline(now, cfg));
                        return;
                    }
                }
            }
            if let Ok(next) = transition(self.state, Ev::Idle) {
                self.enter(held, ret, next);
                return;
            }
        }
        if let Some(r) = ret.as_deref_mut() {
            r.losses.on_timeout(&mut r.window, now, cfg);
            if r.rto_at.is_due(now) {
                r.rto_at.clear();
                if self.data_outstanding(r) > 0 {
                    let count = r.rto_count.saturating_add(1);
                    if cfg.rto_retx_exhausted(count) {
                        self.fail(held, Some(r), Failure::RetriesExhausted, true);
                        return;
                    }
                    r.rto_count = count;
                    r.window.mark_all_lost();
                    r.rto_at.set(now.saturating_add(r.rtt.backed_off(cfg, count)));
                }
            }
        }
        if self.state_at.is_due(now) {
            self.state_at.clear();
            if self.state != TargetState::CloseReqWait {
                return;
            }
            let count = self.close_req_count.saturating_add(1);
            if !cfg.rto_retx_exhausted(count) {
                self.close_req_count = count;
                if !self.close_req_acked {
                    self.tx_pending |= TX_CLOSE_REQ;
                }
                self.state_at.set(now.saturating_add(cfg.close_req_time));
                return;
            }
            self.fail(held, ret, Failure::CloseTimeout, true);
        }
    }

    /// See [`Target::poll_event`].
    pub(crate) fn poll_event(&mut self) -> Option<TargetEvent> {
        if self.events & EV_ESTABLISHED != 0 {
            self.events &= !EV_ESTABLISHED;
            return Some(TargetEvent::Established);
        }
        if self.events & EV_FAILED != 0 {
            self.events &= !EV_FAILED;
            return self.failure.map(TargetEvent::Failed);
        }
        if self.events & EV_CLOSED != 0
            && self.tx_pending == 0
            && !self.ack_due
            && self.nacks.iter().all(Option::is_none)
        {
            self.events &= !EV_CLOSED;
            return Some(TargetEvent::Closed);
        }
        None
    }
}

impl Ev {
    const fn name(self) -> &'static str {
        match self {
            Ev::Packet => "request or control packet",
            Ev::RequiredStart => "SYN with the required start PSN",
            Ev::Close => "CLOSE",
            Ev::WantClose => "close request",
            Ev::Send => "return-direction packet",
            Ev::Reap => "New_PDC_Time expiry",
            Ev::Idle => "idle timeout",
            Ev::Fail => "close in error",
        }
    }
}

/// The idle deadline from `now`, if the idle timeout is on.
fn idle_deadline(now: Instant, cfg: &PdcConfig) -> Option<Instant> {
    (cfg.idle_timeout != linklayer::Duration::ZERO).then(|| now.saturating_add(cfg.idle_timeout))
}

/// Every transition of the target, in one place (the state diagram in the module doc). Pure:
/// callers check, then apply.
fn transition(state: TargetState, ev: Ev) -> Result<TargetState, PdcError> {
    use TargetState as S;
    let next = match (state, ev) {
        (S::Closed, _) => None,
        (S::Pending | S::Established | S::CloseReqWait, Ev::Packet) => Some(state),
        (S::Pending, Ev::RequiredStart) => Some(S::Established),
        (S::Established | S::CloseReqWait, Ev::RequiredStart) => None,
        (S::Established | S::CloseReqWait, Ev::Close) => Some(S::Closed),
        (S::Pending, Ev::Close) => None,
        (S::Established, Ev::WantClose) => Some(S::CloseReqWait),
        (S::CloseReqWait, Ev::WantClose) => Some(state),
        (S::Pending, Ev::WantClose) => None,
        (S::Established | S::CloseReqWait, Ev::Send) => Some(state),
        (S::Pending, Ev::Send) => None,
        (S::Pending, Ev::Reap) => Some(S::Closed),
        (S::Established | S::CloseReqWait, Ev::Reap) => None,
        (S::Established | S::CloseReqWait, Ev::Idle) => Some(S::Closed),
        (S::Pending, Ev::Idle) => None,
        (S::Pending | S::Established | S::CloseReqWait, Ev::Fail) => Some(S::Closed),
    };
    next.ok_or(PdcError::IllegalEvent { event: ev.name(), state: PdcState::Target(state) })
}
