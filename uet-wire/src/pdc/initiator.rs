//! The initiator end of a PDC (UE 1.0 §3.5.8.2, §3.5.8.3, §3.5.9.3, §3.5.11.4; uet-ref-prov
//! `uet_pds.c`, also for secure PDCs): zero-RTT set-up with SYN, the send window, ACK and NACK
//! processing, loss recovery, and the close handshake.
//!
//! States of UE 1.0 §3.5.9.3, *project-defined* names (the spec figure was not consulted; ns-3
//! model, Linux ultraeth RFC and uet-ref-prov names differ):
//!
//! ```text
//!            first ACK                 request_close / CLOSE_REQ          close()
//! Creating ───────────▶ Established ──────────────────────────▶ Quiesce ─────────▶ AckWait
//!     │                      │ close()                                  │               │ all ACKed
//!     └──────────────────────┴──────────────────────────────────────────┴──▶ CloseAckWait ◀┘
//!                                                                               │ CLOSE ACKed
//!                                                                               ▼
//!                                                                            Closed
//! ```
//!
//! Every transition is in one `match` (the private function `transition`). Close in error
//! (retries exhausted, or a NACK whose code closes the PDC) fails everything outstanding
//! (reported once as [`InitiatorEvent::Failed`]), then sends CLOSE when the peer may still hold
//! the PDC, or goes straight to Closed when its NACK said it does not. A Closed PDC gives up its
//! send window: a CLOSE that went unanswered or was NACKed no longer counts as outstanding
//! (*project-defined*: the PDC is done either way, and nothing may still wait on it).
//!
//! Recovery (UE 1.0 §3.5.12 and Table 3-28; uet-ref-prov `uet_pds.c`):
//!
//! * **RTO**: one timer per PDC, restarted whenever an ACK makes progress; on expiry every
//!   unacknowledged PSN is resent (RETX and AR set). The timeout is the round-trip estimate's
//!   ([`rtt`](super::rtt); `RTO_Init_Timer` before the first sample), doubled by each expiry
//!   (capped by [`PdcConfig::rto_max`]); the count belongs to the oldest unacknowledged packet
//!   and restarts when the cumulative ACK passes it. `Max_RTO_Retx_Cnt` expiries for the same
//!   packet close the PDC in error.
//! * **SACK-driven resend** (RUD): an unacknowledged PSN with [`PdcConfig::loss_threshold`]
//!   acknowledged PSNs after it, still unacknowledged [`PdcConfig::reorder_window`] later, is
//!   resent once without waiting for the RTO (project-defined, see [`config`](super::config)).
//! * **NACKs** by code class ([`NackClass`]): trimmed packets are resent at once; packets refused
//!   for want of a resource (codes 0x04–0x0A) after `NACK_Retx_Time`; the other retransmit-class
//!   codes (PKT_NOT_RCVD, PSN_OOR_WINDOW, …) at once (the `NACK_Retx_Time` hold ends once no
//!   packet waits to be resent, so a later loss is not held by it: *project-defined*); ROD_OOO resends every unacknowledged PSN
//!   (go-back-N); close-class codes close in error, with a CLOSE so the target frees its PDC
//!   too, unless the code says it holds none (INV_DPDCID, CLOSING_IN_ERR: *project-defined*; the
//!   reference provider sends a CLOSE after every close-class code, which such a target answers
//!   INV_DPDCID); NEW_START_PSN re-stamps everything (only
//!   while SYN is still set); RCVD_SES_PROCG is dropped. A NACK outside `[tx_base, next_psn − 1]`
//!   changes nothing. `Max_NACK_Retx_Cnt` counts the NACKs of one packet (the oldest NACKed one
//!   not yet acknowledged, see [`config`](super::config)), so one shortage that refuses a whole
//!   burst costs each packet one count.
//! * **Tail-loss probe**: `Tail_Loss_Time` after the last new packet with PSNs still
//!   unacknowledged, an ACK_REQ for the newest PSN asks the target for a fresh ACK (or a NACK
//!   PKT_NOT_RCVD, which resends it), at most `Max_Tail_Loss_Retx` times without progress.
//! * **SLEEK** ([`sleek`](super::sleek), off unless [`Initiator::use_sleek`]): the probe is a
//!   PROBE control packet answered by an ACK with P set, and a congestion controller drives
//!   recovery from the out-of-order count and the probe's round trip.
//!
//! **Return direction** (UE 1.0 §3.5.20.1): read data from the target arrives as requests from
//! its PDC, numbered from this PDC's start PSN (as the reference provider's target numbers them).
//! [`Initiator::handle_data`] records them in a receive window and says which are new; ACKs for
//! them ([`InitiatorTx::Ack`]: CACK, SACK, ACK_PSN naming the packet that drew it) are coalesced
//! as a target's are, and ROD NACKs ROD_OOO once per missing PSN. The target's CLOSE_REQ takes a
//! PSN of the same direction and is acknowledged the same way; one whose PSN lies outside the
//! window (a peer numbering from elsewhere) is acknowledged alone, its PSN as CACK. An
//! [`Initiator`] keeps its return direction; an [`Endpoint`](crate::msg::Endpoint) keeps only the
//! cumulative ACK of an idle one, and takes the rest from a pool while packets of it are not yet
//! acknowledged (its const generic `D`). Likewise an endpoint keeps 52 bytes of an initiator PDC
//! with nothing outstanding and no timer running (its state, ids, PSNs, the peer's range,
//! round-trip estimate, SLEEK state, counts and events), and takes a whole state machine from a
//! pool while it sends (its const generic `S`).

use super::config::{MPR_GRANULARITY, PdcConfig};
use super::rtt::RttEstimator;
use super::sleek::{Sleek, SleekLimits};
use super::target::Delivery;
use super::window::{AckCoalescer, AckTriggers, Arrival, LossDetector, RxWindow, TxWindow, psn_after};
use super::{Failure, PdcError, PdcState};
use crate::pds::{
    Ack, AckExtension, AckFlags, AckRequest, Control, ControlFlags, ControlType, DeliveryMode, Nack, NackClass,
    NackCode, NackTarget, NextHeader, PdcDest, Request, RequestCc, RequestFlags,
};
use linklayer::{Deadline, Instant, ZeroOption};

/// The states of an initiator PDC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitiatorState {
    /// Sending with SYN; the target's PDC id is not known yet.
    Creating,
    /// The target's PDC id is known.
    Established,
    /// A close is wanted: packets of messages already started may still go, no new message should
    /// start.
    Quiesce,
    /// Closing: waiting for every outstanding packet to be acknowledged.
    AckWait,
    /// CLOSE sent; waiting for its ACK.
    CloseAckWait,
    /// Done: the PDC may be freed.
    Closed,
}

/// Something that happened to the PDC, reported once by [`Initiator::poll_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitiatorEvent {
    /// The first ACK arrived: the target's PDC id is known.
    Established {
        /// The target's PDC id.
        tpdcid: u16,
    },
    /// The PDC closed in error: every PSN not acknowledged by now failed.
    Failed(Failure),
    /// The PDC is closed and may be freed.
    Closed,
}

/// The PDS fields the initiator stamps on a request packet; the caller names the SES header that
/// follows and adds it and the payload of that PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stamp {
    /// RUD or ROD.
    pub mode: DeliveryMode,
    /// RETX and AR.
    pub flags: RequestFlags,
    /// `CLEAR_PSN − PSN`, with `CLEAR_PSN = tx_base − 1`.
    pub clear_psn_offset: i16,
    /// The packet's PSN.
    pub psn: u32,
    /// This PDC's id.
    pub spdcid: u16,
    /// The target's PDC id, or the SYN form while it is not known.
    pub dest: PdcDest,
}

impl Stamp {
    /// The stamp of `psn` from PDC `spdcid` to `dest`, whose send window starts at `tx_base`:
    /// `CLEAR_PSN = tx_base − 1`.
    pub(crate) const fn at(
        mode: DeliveryMode,
        flags: RequestFlags,
        tx_base: u32,
        psn: u32,
        spdcid: u16,
        dest: PdcDest,
    ) -> Self {
        let clear_psn = tx_base.wrapping_sub(1);
        // Both PSNs lie within one window, so the difference fits 16 bits.
        Stamp { mode, flags, clear_psn_offset: clear_psn.wrapping_sub(psn) as i32 as i16, psn, spdcid, dest }
    }

    /// The whole PDS request header, with the SES header that follows and the optional CC fields.
    pub const fn request(self, next_header: NextHeader, cc: Option<RequestCc>) -> Request {
        Request {
            mode: self.mode,
            next_header,
            flags: self.flags,
            clear_psn_offset: self.clear_psn_offset,
            psn: self.psn,
            spdcid: self.spdcid,
            dest: self.dest,
            cc,
        }
    }

    /// Whether SYN is set.
    pub const fn syn(&self) -> bool {
        matches!(self.dest, PdcDest::Syn { .. })
    }
}

/// A packet the initiator needs sent (besides new requests, which [`Initiator::send`] stamps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitiatorTx {
    /// Resend the request with this PSN (RETX and AR set).
    Resend(Stamp),
    /// A control packet: CLOSE, CLEAR, or the tail-loss probe (ACK_REQ, or PROBE with SLEEK on).
    Control(Control),
    /// An ACK of the return direction (read data, CLOSE_REQ).
    Ack(Ack),
    /// A NACK of a return-direction packet (ROD_OOO).
    Nack(Nack),
}

/// What [`Initiator::handle_ack`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AckOutcome {
    /// Request PSNs newly acknowledged (the CLOSE's PSN not counted).
    pub acked: u32,
    /// PSNs newly marked for resend by SACK-driven loss detection.
    pub lost: u32,
    /// The round trip this ACK measured: the PDC times one packet at a time, sent once (Karn's
    /// rule), so most ACKs carry none. Congestion control takes its delay from it.
    pub rtt: Option<linklayer::Duration>,
    /// With SLEEK on ([`Initiator::use_sleek`]), for an ACK with P set answering this PDC's
    /// latest probe: the probe's round trip.
    pub probe_rtt: Option<linklayer::Duration>,
}

// Control packets waiting to go, as bits.
const TX_CLOSE: u8 = 2;
const TX_CLEAR: u8 = 4;
const TX_PROBE: u8 = 8;

// Packets of the return direction waiting to go, as bits.
const RET_ACK_CLOSE_REQ: u8 = 1;
const RET_ACK: u8 = 2;
const RET_NACK: u8 = 4;
// The return direction's NACK marks, as bits: `rod_nacked` holds a PSN; the NACK waiting to go is
// ROD_OOO (else PKT_NOT_RCVD).
const ROD_NACKED: u8 = 1;
const NACK_ROD_OOO: u8 = 2;

// Events waiting to be polled, as bits.
const EV_ESTABLISHED: u8 = 1;
const EV_FAILED: u8 = 2;
const EV_CLOSED: u8 = 4;

/// PSN distance after which `Limit_PSN_Range` forces a close (close at `Start_PSN + 2^31`:
/// uet-ref-prov `UET_PSN_RANGE_LIMIT`, XDP2 `config.h`).
const PSN_RANGE_LIMIT: u32 = 1 << 31;
/// While SYN is set, `psn_offset` has 12 bits (UE 1.0 §3.5.8.2; Wireshark, uet-ref-prov and XDP2
/// agree).
const SYN_PSN_SPAN: u32 = 1 << 12;

/// What drives a transition (see [`InitiatorCore::transition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// A new request PSN.
    Send,
    /// An ACK, NACK or timeout that changes no state.
    Update,
    /// The first ACK: the target's id is learned.
    FirstAck,
    /// The target's CLOSE_REQ, or a local wish to close.
    WantClose,
    /// Close now; `sent` PSNs are not acknowledged yet.
    Close { outstanding: u32, ever_sent: bool },
    /// Every request PSN is acknowledged.
    Drained,
    /// The CLOSE was acknowledged, or its resends ran out.
    CloseDone,
    /// Close in error; `peer_alive`: the target may still hold the PDC.
    Fail { peer_alive: bool },
}

/// The initiator end of one PDC, with a send window of `64 × W` PSNs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Initiator<const W: usize = 2> {
    core: InitiatorCore<W>,
    ret: ReturnReceiver<W>,
}

/// An initiator PDC without the state of its return direction, which the caller keeps and passes
/// in ([`ReturnReceiver`]): [`Initiator`] keeps the two together, and an endpoint keeps the return
/// directions of its initiator PDCs in a pool, since only PDCs receiving read data need theirs.
/// Methods that take the return direction as an `Option` read `None` as an idle one (see
/// [`ReturnReceiver::idle`]); a caller keeping an idle one's [`IdleReceiver`] makes it anew when
/// a NACK NEW_START_PSN moves the start PSN (the return direction is numbered from it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InitiatorCore<const W: usize = 2> {
    state: InitiatorState,
    mode: DeliveryMode,
    /// This PDC's id (IPDCID).
    local: u16,
    /// The target's id (TPDCID); 0, which is never a PDC id, until the first ACK.
    remote: u16,
    start_psn: u32,
    tx: TxWindow<W>,
    /// The peer's MP_RANGE in PSNs, and the CACK of the ACK_CC that set it.
    peer_range: u32,
    peer_range_cack: u32,
    /// The CLOSE's PSN (meaningful from CloseAckWait on).
    close_psn: u32,
    rto_at: Deadline,
    probe_at: Deadline,
    /// SACK-driven loss detection.
    losses: LossDetector,
    /// SLEEK's loss recovery and probes (off unless [`Initiator::use_sleek`]).
    sleek: Sleek,
    /// Resends wait until then (NACK_Retx_Time after a resource NACK).
    hold_until: Deadline,
    /// The round-trip estimate of the request direction.
    rtt: RttEstimator,
    /// The packet whose NACK-driven resends `nack_count` counts: the oldest NACKed one not yet
    /// acknowledged.
    nack_psn: u32,
    rto_count: u8,
    nack_count: u8,
    probe_count: u8,
    tx_pending: u8,
    events: u8,
    failure: ZeroOption<Failure>,
}

/// The return direction of an initiator PDC (read data and CLOSE_REQ from the target, numbered
/// from the PDC's start PSN): its receive window, ACK coalescing, and the ACK or NACK waiting to
/// go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReturnReceiver<const W: usize> {
    window: RxWindow<W>,
    coalescer: AckCoalescer,
    /// The return PSN the next return ACK names, and the flags it echoes.
    ack_psn: u32,
    ack_flags: AckFlags,
    /// ROD: the missing return PSN already NACKed ROD_OOO (with `ROD_NACKED` in `marks`).
    rod_nacked: u32,
    /// The PSN of the NACK waiting to go (ROD_OOO with `NACK_ROD_OOO` in `marks`, else
    /// PKT_NOT_RCVD).
    nack_psn: u32,
    /// The newest return PSN received when the last return ACK went out.
    acked_max: u32,
    /// PSN of the target's CLOSE_REQ to acknowledge, when it lies outside the window (a peer that
    /// numbers its return direction from another start).
    close_req_psn: u32,
    /// ACKs and NACKs waiting to go, as bits (`RET_*`).
    pending: u8,
    /// `ROD_NACKED`, `NACK_ROD_OOO`.
    marks: u8,
}

/// What an idle [`ReturnReceiver`] keeps: its cumulative ACK. [`ReturnReceiver::resume`] makes it
/// whole again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdleReceiver {
    cack: u32,
}

impl IdleReceiver {
    /// The idle return direction of a PDC whose start PSN is `start_psn`.
    pub(crate) const fn new(start_psn: u32) -> Self {
        IdleReceiver { cack: start_psn.wrapping_sub(1) }
    }
}

/// What an idle [`InitiatorCore`] keeps: its state, ids, PSNs, the peer's range, round-trip
/// estimate, SLEEK state, counts and events waiting. [`InitiatorCore::resume`] makes it whole
/// again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IdleInitiator {
    state: InitiatorState,
    mode: DeliveryMode,
    events: u8,
    rto_count: u8,
    probe_count: u8,
    failure: Option<Failure>,
    local: u16,
    remote: u16,
    start_psn: u32,
    next_psn: u32,
    max_cack: u32,
    peer_range: u32,
    peer_range_cack: u32,
    srtt: u32,
    rttvar: u32,
    sleek: Sleek,
}

impl IdleInitiator {
    /// Every byte zero: a placeholder for a PDC being removed, not one in use.
    pub(crate) const ZERO: Self = IdleInitiator {
        state: InitiatorState::Creating,
        mode: DeliveryMode::Rud,
        events: 0,
        rto_count: 0,
        probe_count: 0,
        failure: None,
        local: 0,
        remote: 0,
        start_psn: 0,
        next_psn: 0,
        max_cack: 0,
        peer_range: 0,
        peer_range_cack: 0,
        srtt: 0,
        rttvar: 0,
        sleek: Sleek::ZERO,
    };

    /// [`InitiatorCore::state`].
    pub(crate) const fn state(&self) -> InitiatorState {
        self.state
    }

    /// [`InitiatorCore::timeouts`].
    pub(crate) const fn timeouts(&self) -> u8 {
        self.rto_count
    }

    /// [`InitiatorCore::remote_id`].
    pub(crate) const fn remote_id(&self) -> Option<u16> {
        if self.remote == 0 { None } else { Some(self.remote) }
    }

    /// [`InitiatorCore::start_psn`].
    pub(crate) const fn start_psn(&self) -> u32 {
        self.start_psn
    }

    /// The next PSN to send, every one before it acknowledged (the send window's base too).
    pub(crate) const fn next_psn(&self) -> u32 {
        self.next_psn
    }

    /// [`InitiatorCore::failure`].
    pub(crate) const fn failure(&self) -> Option<Failure> {
        self.failure
    }

    /// [`InitiatorCore::rtt`], by value.
    pub(crate) const fn rtt(&self) -> RttEstimator {
        RttEstimator::resume(self.srtt, self.rttvar)
    }

    /// The send window of the PDC it stands for: empty.
    const fn window<const W: usize>(&self) -> TxWindow<W> {
        TxWindow::resume(self.next_psn, self.max_cack)
    }

    /// [`InitiatorCore::is_acked`].
    pub(crate) fn is_acked(&self, psn: u32) -> bool {
        self.window::<2>().is_acked(psn)
    }

    /// [`InitiatorCore::can_send`].
    pub(crate) fn can_send(&self, cfg: &PdcConfig) -> bool {
        transition(self.state, Ev::Send).is_ok()
            && has_room(&self.window::<2>(), self.peer_range, self.remote, self.start_psn, cfg)
    }

    /// [`InitiatorCore::has_pending`]: only its return direction's packets (an idle PDC has no
    /// control packet waiting and nothing to resend).
    pub(crate) fn has_pending<const W: usize>(&self, ret: Option<&ReturnReceiver<W>>) -> bool {
        ret.is_some_and(ReturnReceiver::has_pending)
    }
}

impl<const W: usize> ReturnReceiver<W> {
    /// Every byte zero: a placeholder (for storage built in `const`), not a return direction in
    /// use; [`ReturnReceiver::resume`] makes one.
    pub(crate) const ZERO: Self = ReturnReceiver { ack_psn: 0, acked_max: 0, ..Self::new(1) };

    /// A return direction for the start PSN `start_psn`.
    pub(crate) const fn new(start_psn: u32) -> Self {
        ReturnReceiver {
            window: RxWindow::new(start_psn),
            coalescer: AckCoalescer::ZERO,
            ack_psn: start_psn,
            ack_flags: AckFlags::empty(),
            rod_nacked: 0,
            nack_psn: 0,
            acked_max: start_psn.wrapping_sub(1),
            close_req_psn: 0,
            pending: 0,
            marks: 0,
        }
    }

    /// The return direction `idle` stands for: one behaving as the one [`ReturnReceiver::idle`]
    /// made it of does.
    pub(crate) const fn resume(idle: IdleReceiver) -> Self {
        Self::new(idle.cack.wrapping_add(1))
    }

    /// What it keeps while idle, if it is: every PSN received up to its cumulative ACK and
    /// acknowledged, nothing coalesced or waiting to go, and (ROD) no missing PSN NACKed. What
    /// it then drops is read only once a packet sets it again.
    pub(crate) fn idle(&self) -> Option<IdleReceiver> {
        let cack = self.window.cack_psn();
        let idle = self.pending == 0
            && self.coalescer.accepted() == 0
            && self.window.max_rcvd() == cack
            && self.acked_max == cack
            && self.rod_nacked() != Some(cack.wrapping_add(1));
        idle.then_some(IdleReceiver { cack })
    }

    /// The receive window.
    pub(crate) const fn window(&self) -> &RxWindow<W> {
        &self.window
    }

    /// Whether an ACK or NACK of it waits to go.
    pub(crate) const fn has_pending(&self) -> bool {
        self.pending != 0
    }

    /// ROD: the missing PSN already NACKed ROD_OOO, if any.
    const fn rod_nacked(&self) -> Option<u32> {
        if self.marks & ROD_NACKED != 0 { Some(self.rod_nacked) } else { None }
    }

    /// Queues a NACK of `psn`: ROD_OOO, else PKT_NOT_RCVD.
    fn nack_now(&mut self, psn: u32, rod_ooo: bool) {
        self.nack_psn = psn;
        self.marks = if rod_ooo { self.marks | NACK_ROD_OOO } else { self.marks & !NACK_ROD_OOO };
        self.pending |= RET_NACK;
    }

    /// Queues an ACK naming `psn` with `flags`.
    fn ack_now(&mut self, psn: u32, flags: AckFlags) {
        self.ack_psn = psn;
        self.ack_flags = flags;
        self.pending |= RET_ACK;
    }
}

impl<const W: usize> Initiator<W> {
    /// `MP_RANGE` of this PDC, in PSNs.
    pub const MP_RANGE: u32 = TxWindow::<W>::MP_RANGE;

    /// A new PDC in `Creating` (allocated on the first message to a new selection tuple,
    /// UE 1.0 §3.5.8.1). `local` is its id (never 0); `start_psn` should be random, or the
    /// security domain's `ini_start_psn` for a secure PDC.
    pub fn new(cfg: &PdcConfig, mode: DeliveryMode, local: u16, start_psn: u32) -> Self {
        let core = InitiatorCore::new(cfg, mode, local, start_psn);
        Initiator { core, ret: ReturnReceiver::new(start_psn) }
    }

    /// The current state.
    pub const fn state(&self) -> InitiatorState {
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

    /// The target's PDC id once known.
    pub const fn remote_id(&self) -> Option<u16> {
        self.core.remote_id()
    }

    /// The start PSN (moved by a NEW_START_PSN NACK).
    pub const fn start_psn(&self) -> u32 {
        self.core.start_psn()
    }

    /// The send window.
    pub const fn window(&self) -> &TxWindow<W> {
        self.core.window()
    }

    /// Why the PDC closed in error, if it did.
    pub const fn failure(&self) -> Option<Failure> {
        self.core.failure()
    }

    /// Whether `psn` is acknowledged.
    pub fn is_acked(&self, psn: u32) -> bool {
        self.core.is_acked(psn)
    }

    /// PSNs sent and not acknowledged (a CLOSE's included).
    pub fn outstanding(&self) -> u32 {
        self.core.outstanding()
    }

    /// Request packets in flight: sent, and neither acknowledged nor marked lost (a CLOSE, which
    /// takes a PSN of its own, not counted). What a congestion window counts for this PDC.
    pub fn requests_in_flight(&self) -> u32 {
        self.core.requests_in_flight()
    }

    /// Whether a new request may be sent now: the state allows it, both windows have room, and
    /// (while SYN is set) the 12-bit `psn_offset` and (with `Limit_PSN_Range`) the 2^31 PSN range
    /// are not used up.
    pub fn can_send(&self, cfg: &PdcConfig) -> bool {
        self.core.can_send(cfg)
    }

    /// Takes the next PSN for a new request and stamps it. `ar` asks for an immediate ACK (set it
    /// on the last packet of a message; with `Enb_ACK_Per_Pkt`, [`AckPolicy::per_packet`], every
    /// request carries AR). Once `Limit_PSN_Range` is used up, the PDC moves to Quiesce by itself.
    ///
    /// [`AckPolicy::per_packet`]: super::window::AckPolicy::per_packet
    #[inline(always)]
    pub fn send(&mut self, now: Instant, cfg: &PdcConfig, ar: bool) -> Result<Stamp, PdcError> {
        self.core.send(now, cfg, ar)
    }

    /// Processes an ACK addressed to this PDC (DPDCID = our id).
    #[inline(always)]
    pub fn handle_ack(&mut self, now: Instant, cfg: &PdcConfig, ack: &Ack) -> Result<AckOutcome, PdcError> {
        self.core.handle_ack(Some(&mut self.ret), now, cfg, ack)
    }

    /// Turns SLEEK on ([`sleek`](super::sleek)): tail-loss probes go as PROBE control packets,
    /// whose answers [`AckOutcome::probe_rtt`] times, and [`Initiator::run_sleek`] (after every
    /// ACK) and [`Initiator::recover`] restart the probe timer and start loss recovery.
    /// A congestion controller drives it: the limits and the probe's verdict come from its window
    /// and delays.
    pub fn use_sleek(&mut self) {
        self.core.use_sleek()
    }

    /// Whether SLEEK's loss recovery runs now.
    pub const fn recovering(&self) -> bool {
        self.core.recovering()
    }

    /// SLEEK after [`Initiator::handle_ack`] accepted `ack` at `now`: restarts the probe timer
    /// ([`SleekLimits::probe_after`]) and starts, continues or ends loss recovery from the
    /// out-of-order count (the ACK_CC's `ooo_count`, else the PSNs this PDC knows arrived past
    /// the cumulative ACK) and `limits` (see [`sleek`](super::sleek)). Returns how many PSNs it
    /// newly marked for resend; 0 with SLEEK off.
    pub fn run_sleek(&mut self, now: Instant, ack: &Ack, limits: SleekLimits) -> u32 {
        self.core.run_sleek(now, ack, limits)
    }

    /// SLEEK: a probe's answer found the network empty (its queueing delay below the congestion
    /// controller's target), so what is still missing was lost: loss recovery starts again from
    /// the cumulative ACK, packets resent before included, and the next [`Initiator::run_sleek`]
    /// marks them. Nothing without SLEEK or with nothing outstanding.
    pub fn recover(&mut self) {
        self.core.recover()
    }

    /// Retransmission timeouts of the oldest unacknowledged packet so far (0 once an ACK passed
    /// it).
    pub const fn timeouts(&self) -> u8 {
        self.core.timeouts()
    }

    /// The round-trip estimate of the request direction.
    pub const fn rtt(&self) -> &RttEstimator {
        self.core.rtt()
    }

    /// Processes a NACK addressed to this PDC.
    pub fn handle_nack(&mut self, now: Instant, cfg: &PdcConfig, nack: &Nack) -> Result<NackClass, PdcError> {
        self.core.handle_nack(Some(&mut self.ret), now, cfg, nack)
    }

    /// Processes a control packet from the target: CLOSE_REQ (acknowledged, then the PDC
    /// quiesces), ACK_REQ (the target's probe of a return PSN: ACKed, or NACKed PKT_NOT_RCVD),
    /// CLEAR_REQ (a CLEAR goes out). Other control types are not for the initiator.
    pub fn handle_control(&mut self, now: Instant, ctl: &Control) -> Result<(), PdcError> {
        self.core.handle_control(&mut self.ret, now, ctl)
    }

    /// A close is wanted (idle, resources, or policy): stop starting messages; the caller calls
    /// [`Initiator::close`] when the messages it started are sent.
    pub fn request_close(&mut self) -> Result<(), PdcError> {
        self.core.request_close()
    }

    /// Closes the PDC: waits for every outstanding ACK, then sends CLOSE (UE 1.0 §3.5.8.3). A
    /// PDC that never sent anything closes at once.
    pub fn close(&mut self, now: Instant, cfg: &PdcConfig) -> Result<(), PdcError> {
        self.core.close(Some(&mut self.ret), now, cfg)
    }

    /// The next packet to send that is not a new request: the ACK of a CLOSE_REQ, CLOSE, CLEAR,
    /// a tail-loss probe, or a resend, in that order.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<InitiatorTx> {
        self.core.poll_transmit(Some(&mut self.ret), now)
    }

    /// Takes a return-direction packet from the target (read data: a RUD or ROD request from the
    /// target's PDC, next header RSP_DATA) and records its PSN in the return window, numbered
    /// from this PDC's start PSN. Returns what the caller does with its payload: place it when
    /// [`Delivery::New`]; a duplicate or an old PSN is only acknowledged again. ROD takes only
    /// the next PSN in order and NACKs ROD_OOO once per missing PSN; a PSN outside the window is
    /// dropped. ACKs ([`InitiatorTx::Ack`]) are coalesced as the target's are; AR, SYN-less
    /// duplicates and `ecn` (with `ACK_On_ECN`) draw one at once.
    pub fn handle_data(
        &mut self,
        now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
    ) -> Result<Delivery, PdcError> {
        self.core.handle_data(&mut self.ret, now, cfg, req, payload_len, ecn)
    }

    /// The ACK_CC of the return direction this PDC would send now: CACK and SACK of the return
    /// window, ACK_PSN naming the packet that asked for it.
    pub fn return_ack(&self) -> Ack {
        self.core.return_ack(&self.ret)
    }

    /// Whether a resend or control packet is waiting for [`Initiator::poll_transmit`]. Resends
    /// held back by `NACK_Retx_Time` are not: the hold's end is a [`Initiator::poll_timeout`]
    /// deadline, and [`Initiator::handle_timeout`] at it makes them pending.
    pub fn has_pending(&self) -> bool {
        self.core.has_pending(Some(&self.ret))
    }

    /// The next deadline: RTO, tail-loss probe, end of a reorder window, or end of a NACK hold.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.core.poll_timeout()
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant, cfg: &PdcConfig) {
        self.core.handle_timeout(Some(&mut self.ret), now, cfg)
    }

    /// The next event, each reported once: Established, then Failed, then Closed.
    pub fn poll_event(&mut self) -> Option<InitiatorEvent> {
        self.core.poll_event(Some(&self.ret))
    }

    /// The return window: what arrived from the target.
    pub const fn return_window(&self) -> &RxWindow<W> {
        self.ret.window()
    }

    /// Test support: behaves as if `n` more PSNs had been sent and acknowledged.
    #[cfg(test)]
    pub(crate) fn skip_psns(&mut self, n: u32) {
        self.core.skip_psns(n);
    }

    /// If the PDC is idle: whether what its idle form answers without resuming it (what an
    /// endpoint reads of an idle PDC) is what the PDC answers.
    #[cfg(test)]
    pub(crate) fn idle_form_agrees(&self, cfg: &PdcConfig, psns: &[u32]) -> Option<bool> {
        let idle = self.core.idle()?;
        let (c, r) = (&self.core, Some(&self.ret));
        Some(
            (idle.state(), idle.remote_id(), idle.start_psn(), idle.failure())
                == (c.state(), c.remote_id(), c.start_psn(), c.failure())
                && (idle.rtt().smoothed(), idle.rtt().variation()) == (c.rtt().smoothed(), c.rtt().variation())
                && (idle.next_psn(), idle.next_psn()) == (c.window().base(), c.window().next_psn())
                && (idle.can_send(cfg), idle.has_pending(r)) == (c.can_send(cfg), c.has_pending(r))
                && c.poll_timeout().is_none()
                && (c.requests_in_flight(), c.window().lost_count()) == (0, 0)
                && psns.iter().all(|&psn| idle.is_acked(psn) == c.is_acked(psn)),
        )
    }

    /// Replaces the PDC's state with what [`InitiatorCore::resume`] makes of it if it is idle,
    /// as an endpoint's pool does; returns whether it was.
    #[cfg(test)]
    pub(crate) fn rest_request_direction(&mut self) -> bool {
        super::rest(&mut self.core, InitiatorCore::idle, InitiatorCore::resume)
    }

    /// Replaces the return direction with what [`ReturnReceiver::resume`] makes of it if it is
    /// idle, as an endpoint's pool does; returns whether it was.
    #[cfg(test)]
    pub(crate) fn rest_return_direction(&mut self) -> bool {
        super::rest(&mut self.ret, ReturnReceiver::idle, ReturnReceiver::resume)
    }
}

impl<const W: usize> InitiatorCore<W> {
    /// `MP_RANGE` of this PDC, in PSNs.
    pub const MP_RANGE: u32 = TxWindow::<W>::MP_RANGE;

    const SIZE_OK: () = assert!(W >= 1 && 64 * W <= 32768, "the window must fit the 16-bit PSN offsets");

    /// [`Initiator::new`].
    pub fn new(cfg: &PdcConfig, mode: DeliveryMode, local: u16, start_psn: u32) -> Self {
        let () = Self::SIZE_OK;
        InitiatorCore {
            mode,
            local,
            start_psn,
            tx: TxWindow::new(start_psn),
            peer_range: u32::from(cfg.default_mpr) * MPR_GRANULARITY,
            peer_range_cack: start_psn.wrapping_sub(1),
            rtt: RttEstimator::new(),
            ..Self::ZERO
        }
    }

    /// Every byte zero: a placeholder (for storage built in `const`), not a PDC in use;
    /// [`InitiatorCore::resume`] makes one.
    pub(crate) const ZERO: Self = InitiatorCore {
        state: InitiatorState::Creating,
        mode: DeliveryMode::Rud,
        local: 0,
        remote: 0,
        start_psn: 0,
        tx: TxWindow::resume(0, 0),
        peer_range: 0,
        peer_range_cack: 0,
        close_psn: 0,
        rto_at: Deadline::NONE,
        probe_at: Deadline::NONE,
        losses: LossDetector::ZERO,
        sleek: Sleek::ZERO,
        hold_until: Deadline::NONE,
        rtt: RttEstimator::ZERO,
        nack_psn: 0,
        rto_count: 0,
        nack_count: 0,
        probe_count: 0,
        tx_pending: 0,
        events: 0,
        failure: ZeroOption::None,
    };

    /// The PDC `idle` stands for: one behaving as the one [`InitiatorCore::idle`] made it of
    /// does.
    #[inline(always)]
    pub(crate) const fn resume(idle: IdleInitiator) -> Self {
        // What an idle one drops is what `ZERO` holds: no timer, nothing marked or waiting, no
        // NACK counted, no CLOSE's PSN.
        InitiatorCore {
            state: idle.state,
            mode: idle.mode,
            local: idle.local,
            remote: idle.remote,
            start_psn: idle.start_psn,
            tx: TxWindow::resume(idle.next_psn, idle.max_cack),
            peer_range: idle.peer_range,
            peer_range_cack: idle.peer_range_cack,
            sleek: idle.sleek,
            rtt: RttEstimator::resume(idle.srtt, idle.rttvar),
            rto_count: idle.rto_count,
            probe_count: idle.probe_count,
            events: idle.events,
            failure: match idle.failure {
                Some(f) => ZeroOption::Some(f),
                None => ZeroOption::None,
            },
            ..Self::ZERO
        }
    }

    /// What it keeps while idle, if it is: nothing outstanding, marked or selectively
    /// acknowledged, no timer running, no packet timed and no control packet waiting. What it
    /// then drops is read only once a packet sets it again: the CLOSE's PSN (read only while
    /// the CLOSE is outstanding) and the NACKed packet the NACK count follows (it counts only
    /// while that packet is not acknowledged).
    pub(crate) fn idle(&self) -> Option<IdleInitiator> {
        let w = &self.tx;
        if w.has_outstanding() {
            return None;
        }
        let idle = *w == TxWindow::resume(w.next_psn(), w.max_cack())
            && !self.rto_at.is_armed()
            && !self.probe_at.is_armed()
            && !self.hold_until.is_armed()
            && !self.losses.deadline().is_armed()
            && !self.rtt.is_timing()
            && self.tx_pending == 0;
        let (srtt, rttvar) = self.rtt.learned();
        idle.then_some(IdleInitiator {
            state: self.state,
            mode: self.mode,
            events: self.events,
            rto_count: self.rto_count,
            probe_count: self.probe_count,
            failure: self.failure(),
            local: self.local,
            remote: self.remote,
            start_psn: self.start_psn,
            next_psn: w.next_psn(),
            max_cack: w.max_cack(),
            peer_range: self.peer_range,
            peer_range_cack: self.peer_range_cack,
            srtt,
            rttvar,
            sleek: self.sleek,
        })
    }

    /// [`Initiator::state`].
    pub const fn state(&self) -> InitiatorState {
        self.state
    }

    /// [`Initiator::mode`].
    pub const fn mode(&self) -> DeliveryMode {
        self.mode
    }

    /// [`Initiator::local_id`].
    pub const fn local_id(&self) -> u16 {
        self.local
    }

    /// [`Initiator::remote_id`].
    pub const fn remote_id(&self) -> Option<u16> {
        if self.remote == 0 { None } else { Some(self.remote) }
    }

    /// [`Initiator::start_psn`].
    pub const fn start_psn(&self) -> u32 {
        self.start_psn
    }

    /// [`Initiator::window`].
    pub const fn window(&self) -> &TxWindow<W> {
        &self.tx
    }

    /// [`Initiator::failure`].
    pub const fn failure(&self) -> Option<Failure> {
        match self.failure {
            ZeroOption::Some(f) => Some(f),
            ZeroOption::None => None,
        }
    }

    /// [`Initiator::is_acked`].
    pub fn is_acked(&self, psn: u32) -> bool {
        self.tx.is_acked(psn)
    }

    /// [`Initiator::outstanding`].
    pub fn outstanding(&self) -> u32 {
        self.tx.outstanding()
    }

    /// [`Initiator::requests_in_flight`].
    pub fn requests_in_flight(&self) -> u32 {
        let close = self.state == InitiatorState::CloseAckWait
            && !self.tx.is_acked(self.close_psn)
            && !self.tx.is_lost(self.close_psn);
        self.tx.outstanding().saturating_sub(self.tx.lost_count()).saturating_sub(u32::from(close))
    }

    /// [`Initiator::can_send`].
    pub fn can_send(&self, cfg: &PdcConfig) -> bool {
        self.transition(Ev::Send).is_ok() && self.has_room(cfg)
    }

    /// Both windows, the SYN form's 12-bit `psn_offset` and the 2^31 PSN range allow one more PSN.
    #[inline(always)]
    fn has_room(&self, cfg: &PdcConfig) -> bool {
        has_room(&self.tx, self.peer_range, self.remote, self.start_psn, cfg)
    }

    fn psn_range_used(&self) -> bool {
        psn_range_used(self.tx.next_psn(), self.start_psn)
    }

    /// [`Initiator::send`].
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub fn send(&mut self, now: Instant, cfg: &PdcConfig, ar: bool) -> Result<Stamp, PdcError> {
        let next = self.transition(Ev::Send)?;
        if !self.has_room(cfg) {
            return Err(PdcError::WindowFull);
        }
        let first = !self.tx.has_outstanding();
        let psn = self.tx.send(self.peer_range).ok_or(PdcError::WindowFull)?;
        self.state = next;
        self.rtt.on_send(psn, now);
        if first {
            // The oldest packet now: its retransmissions count from zero (a CLEAR's resends before
            // it were the CLEAR's).
            self.rto_count = 0;
        }
        if first || !self.rto_at.is_armed() {
            // Its timer starts with the oldest packet, or with this one if none runs.
            self.rto_at.set(self.rto_deadline(now, cfg));
        }
        self.probe_at.set(now.saturating_add(cfg.tail_loss_time));
        if cfg.limit_psn_range && self.psn_range_used() {
            self.want_close();
        }
        // The request carries CLEAR_PSN, so a CLEAR the target asked for is no longer needed.
        self.tx_pending &= !TX_CLEAR;
        // `Enb_ACK_Per_Pkt`: AR on every request, not only a message's last.
        let flags = if ar || cfg.ack.per_packet { RequestFlags::AR } else { RequestFlags::empty() };
        Ok(self.stamp(psn, flags))
    }

    fn stamp(&self, psn: u32, flags: RequestFlags) -> Stamp {
        let dest = if self.remote == 0 {
            PdcDest::Syn { use_rsv_pdc: false, psn_offset: (psn.wrapping_sub(self.start_psn) & 0xFFF) as u16 }
        } else {
            PdcDest::Established { dpdcid: self.remote }
        };
        Stamp::at(self.mode, flags, self.tx.base(), psn, self.local, dest)
    }

    /// [`transition`] from the current state.
    fn transition(&self, ev: Ev) -> Result<InitiatorState, PdcError> {
        transition(self.state, ev)
    }

    /// Enters `next`, raising the events entering it implies.
    fn enter(&mut self, next: InitiatorState, ret: Option<&mut ReturnReceiver<W>>) {
        if next == InitiatorState::Closed && self.state != InitiatorState::Closed {
            self.events |= EV_CLOSED;
            self.rto_at.clear();
            self.probe_at.clear();
            self.losses.stop();
            self.sleek.stop();
            self.hold_until.clear();
            self.tx_pending = 0;
            // Nothing waits for an ACK any more: a CLOSE that went unanswered, or was NACKed, is
            // given up (every request was acknowledged before it went, or given up in error).
            self.tx.abandon();
            if let Some(ret) = ret {
                ret.pending &= RET_ACK_CLOSE_REQ;
            }
        }
        self.state = next;
    }

    /// [`Initiator::handle_ack`], with the return direction passed in.
    // Fast path: see "Speed" in the module doc of `pdc`.
    #[inline(always)]
    pub fn handle_ack(
        &mut self,
        mut ret: Option<&mut ReturnReceiver<W>>,
        now: Instant,
        cfg: &PdcConfig,
        ack: &Ack,
    ) -> Result<AckOutcome, PdcError> {
        if ack.dpdcid != self.local {
            return Err(PdcError::WrongPdc { expected: self.local, got: ack.dpdcid });
        }
        if self.remote != 0 && ack.spdcid != self.remote {
            return Err(PdcError::WrongPdc { expected: self.remote, got: ack.spdcid });
        }
        if ack.spdcid == 0 {
            return Err(PdcError::WrongPdc { expected: self.remote, got: 0 });
        }
        let ev = if self.remote == 0 { Ev::FirstAck } else { Ev::Update };
        let mut next = self.transition(ev)?;
        let base_before = self.tx.base();
        let acked = self.tx.on_ack_fields(ack)?;

        if self.remote == 0 {
            self.remote = ack.spdcid;
            self.events |= EV_ESTABLISHED;
        }
        super::update_peer_range(ack, &mut self.peer_range, &mut self.peer_range_cack);
        let close_acked = next == InitiatorState::CloseAckWait && self.tx.is_acked(self.close_psn);
        if self.tx.base() != base_before {
            // The oldest unacknowledged packet is a new one: its timeouts start from zero.
            self.rto_count = 0;
        }
        let mut rtt = None;
        let probe_rtt = if ack.flags.contains(AckFlags::P) {
            self.sleek.probe_answered(now, ack.ack_psn_offset as u16)
        } else {
            None
        };
        if acked > 0 {
            let tx = &self.tx;
            rtt = self.rtt.on_ack(now, |psn| tx.is_acked(psn));
            self.probe_count = 0;
            if self.tx.has_outstanding() || self.clear_owed() {
                self.rto_at.set(self.rto_deadline(now, cfg));
            } else {
                self.rto_at.clear();
            }
            if !self.tx.has_outstanding() {
                self.probe_at.clear();
            }
        } else if self.rto_at.is_armed() && !self.tx.has_outstanding() && !self.clear_owed() {
            // An ACK that shows the target's CACK caught up: no CLEAR is owed any more.
            self.rto_at.clear();
        }
        let lost = self.detect_losses(now, cfg);
        if !self.tx.has_lost() {
            // The hold was for packets refused for want of a resource, all acknowledged now: a
            // later loss is resent at once.
            self.hold_until.clear();
        }
        match ack.request {
            // A CLEAR releases the responses held up to its CLEAR_PSN (the left edge − 1), and the
            // target's CACK stops before the oldest one it holds: a CLEAR_PSN not past the newest
            // CACK releases nothing. Sent anyway, its AR would draw the same ACK asking again, and
            // the two would ping-pong as fast as the wire allows until the gap that holds the left
            // edge back is resent (*project-defined*: uet-ref-prov sends a CLEAR on every such ACK).
            // Once the CLOSE is queued none goes: the CLOSE clears everything, and after a failure
            // the left edge has passed PSNs the target never received, which a CLEAR cannot pass.
            AckRequest::Clear
                if next != InitiatorState::CloseAckWait
                    && psn_after(self.tx.base().wrapping_sub(1), self.tx.max_cack()) =>
            {
                self.tx_pending |= TX_CLEAR;
            }
            AckRequest::None | AckRequest::Clear => {}
            AckRequest::Close => next = transition(next, Ev::WantClose)?,
        }
        if next == InitiatorState::AckWait && !self.tx.has_outstanding() {
            next = transition(next, Ev::Drained)?;
            self.queue_close(ret.as_deref_mut(), now, cfg);
        } else if close_acked {
            next = transition(next, Ev::CloseDone)?;
        }
        self.enter(next, ret);
        let request_acked = if close_acked { acked.saturating_sub(1) } else { acked };
        Ok(AckOutcome { acked: request_acked, lost, rtt, probe_rtt })
    }

    /// SACK-driven loss detection (RUD only; a ROD target keeps no SACK): arms the reorder window
    /// for the current candidates, or marks them at once when the window is zero. Returns how
    /// many PSNs it marked.
    #[inline]
    fn detect_losses(&mut self, now: Instant, cfg: &PdcConfig) -> u32 {
        if self.mode != DeliveryMode::Rud {
            return 0;
        }
        self.losses.on_ack(&mut self.tx, now, cfg)
    }

    /// [`Initiator::use_sleek`].
    pub fn use_sleek(&mut self) {
        self.sleek.enable();
    }

    /// [`Initiator::recovering`].
    pub const fn recovering(&self) -> bool {
        self.sleek.recovering()
    }

    /// [`Initiator::run_sleek`].
    pub fn run_sleek(&mut self, now: Instant, ack: &Ack, limits: SleekLimits) -> u32 {
        self.run_sleek_counted(now, super::sleek::ooo_count(ack), limits)
    }

    /// [`Initiator::run_sleek`] with the ACK's out-of-order count, if it carried one.
    pub(crate) fn run_sleek_counted(&mut self, now: Instant, ooo: Option<u32>, limits: SleekLimits) -> u32 {
        if !self.sleek.on() || !self.sends_requests() {
            return 0;
        }
        // The probe timer restarts with every ACK while packets are outstanding.
        if self.tx.has_outstanding() {
            self.probe_at.set(now.saturating_add(limits.probe_after));
        }
        let ooo = match (self.mode, ooo) {
            (DeliveryMode::Rud, Some(n)) => n,
            (DeliveryMode::Rud, None) => {
                self.tx.next_psn().wrapping_sub(self.tx.base()).saturating_sub(self.tx.outstanding())
            }
            _ => 0,
        };
        // The receiver's count cannot pass this PDC's window: a threshold above it would never
        // be met (project-defined cap, see `sleek`).
        let threshold = limits.threshold.min(Self::MP_RANGE * 3 / 4);
        self.sleek.on_ack(&mut self.tx, ooo, SleekLimits { threshold, ..limits })
    }

    /// Whether every outstanding PSN is a request (no CLOSE among them), so SLEEK may resend.
    fn sends_requests(&self) -> bool {
        matches!(self.state, InitiatorState::Established | InitiatorState::Quiesce | InitiatorState::AckWait)
    }

    /// [`Initiator::recover`].
    pub fn recover(&mut self) {
        if self.sends_requests() {
            self.sleek.recover(&mut self.tx);
        }
    }

    /// When the retransmission timer started now expires: the round-trip estimate's timeout
    /// doubled for each timeout of the oldest unacknowledged packet so far, capped
    /// ([`RttEstimator::backed_off`]).
    #[inline(always)]
    fn rto_deadline(&self, now: Instant, cfg: &PdcConfig) -> Instant {
        // No timeout yet (every ACK of a loss-free flow): the plain RTO, without the backoff sums.
        let rto = if self.rto_count == 0 { self.rtt.rto(cfg) } else { self.rtt.backed_off(cfg, self.rto_count) };
        now.saturating_add(rto)
    }

    /// [`Initiator::timeouts`].
    pub const fn timeouts(&self) -> u8 {
        self.rto_count
    }

    /// [`Initiator::rtt`].
    pub const fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The NACK counter after a NACK of `psn` (`Max_NACK_Retx_Cnt` counts per packet): it
    /// follows the oldest NACKed packet not yet acknowledged, and a NACK of a packet already
    /// waiting to be resent (a second NACK before the resend) does not count again. Returns the
    /// packet counted and its count.
    fn nack_counted(&self, psn: u32) -> (u32, u8) {
        let tracked = self.nack_count > 0 && !self.tx.is_acked(self.nack_psn);
        if self.tx.is_lost(psn) && tracked {
            (self.nack_psn, self.nack_count)
        } else if !tracked || psn_after(self.nack_psn, psn) {
            (psn, 1)
        } else if psn == self.nack_psn {
            (psn, self.nack_count.saturating_add(1))
        } else {
            (self.nack_psn, self.nack_count)
        }
    }

    /// Whether the target's cumulative ACK lags this PDC's left edge while nothing is
    /// outstanding: it holds guaranteed-delivery responses until a `CLEAR_PSN` passes them, and
    /// the peer's range may stop new requests (which would carry it) until it moves. A CLEAR
    /// (with AR, so it always draws an ACK) is then owed, and resent on the retransmission timer
    /// until an ACK shows the cumulative ACK caught up.
    fn clear_owed(&self) -> bool {
        !self.tx.has_outstanding()
            && matches!(self.state, InitiatorState::Established | InitiatorState::Quiesce)
            && psn_after(self.tx.base().wrapping_sub(1), self.tx.max_cack())
    }

    /// Takes a PSN for the CLOSE and queues it.
    fn queue_close(&mut self, ret: Option<&mut ReturnReceiver<W>>, now: Instant, cfg: &PdcConfig) {
        // The window is empty here (all acknowledged, or abandoned), so a PSN is always free.
        let psn = self.tx.send(u32::MAX).unwrap_or(self.tx.next_psn());
        self.close_psn = psn;
        // The CLOSE clears every response the target holds: a CLEAR still waiting is not sent.
        self.tx_pending = (self.tx_pending | TX_CLOSE) & !TX_CLEAR;
        self.rto_count = 0;
        self.rto_at.set(self.rto_deadline(now, cfg));
        self.probe_at.clear();
        // Return data received since the last return ACK is acknowledged before the CLOSE.
        if let Some(ret) = ret.filter(|r| r.coalescer.accepted() > 0) {
            ret.pending |= RET_ACK;
        }
    }

    /// [`Initiator::handle_nack`], with the return direction passed in.
    pub fn handle_nack(
        &mut self,
        mut ret: Option<&mut ReturnReceiver<W>>,
        now: Instant,
        cfg: &PdcConfig,
        nack: &Nack,
    ) -> Result<NackClass, PdcError> {
        let NackTarget::Pdc { psn, spdcid, dpdcid } = nack.target else {
            return Err(PdcError::IllegalEvent { event: "RUDI NACK", state: PdcState::Initiator(self.state) });
        };
        if dpdcid != self.local {
            return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
        }
        if self.remote != 0 && spdcid != self.remote && spdcid != 0 {
            return Err(PdcError::WrongPdc { expected: self.remote, got: spdcid });
        }
        let sent = self.tx.next_psn().wrapping_sub(self.tx.base());
        let class = nack.code.class();
        // A target closing in error names its next expected PSN, which is the next one this PDC
        // would send once everything sent is acknowledged.
        let next_ok = class == NackClass::Close && psn == self.tx.next_psn();
        if psn.wrapping_sub(self.tx.base()) >= sent && !next_ok {
            return Err(PdcError::StaleNack { psn });
        }
        if self.state == InitiatorState::CloseAckWait && psn == self.close_psn {
            // The target no longer knows the PDC (it freed it, and our CLOSE was a resend), or
            // refused the close: either way the PDC is done.
            let next = self.transition(Ev::CloseDone)?;
            if class == NackClass::Close && nack.code == NackCode::ClosingInErr && self.failure.is_none() {
                self.failure = ZeroOption::Some(Failure::Nack(nack.code));
                self.events |= EV_FAILED;
            }
            self.enter(next, ret);
            return Ok(class);
        }
        if nack.code == NackCode::UnexpEvent && self.sleek.awaits_probe_answer() {
            // A target that does not take PROBE (the reference provider NACKs control types it
            // does not know UNEXP_EVENT): later probes are ACK_REQs, and the PDC goes on.
            self.transition(Ev::Update)?;
            self.sleek.refuse_probes();
            return Ok(NackClass::Drop);
        }
        match class {
            NackClass::Drop => {
                self.transition(Ev::Update)?;
            }
            NackClass::Retransmit => {
                let next = self.transition(Ev::Update)?;
                let (nack_psn, nack_count) = self.nack_counted(psn);
                if cfg.nack_retx_exhausted(nack_count) {
                    self.fail(ret, now, cfg, Failure::NackRetriesExhausted, true)?;
                    return Ok(class);
                }
                (self.nack_psn, self.nack_count) = (nack_psn, nack_count);
                match nack.code {
                    NackCode::RodOoo => {
                        self.tx.mark_all_lost();
                    }
                    code => {
                        self.tx.mark_lost(psn);
                        if is_resource_shortage(code) {
                            self.hold_until.set(now.saturating_add(cfg.nack_retx_time));
                        }
                    }
                }
                // A NACK of the oldest packet is the target's answer about the packet the
                // timer guards: its timeout count gives way to the NACK count (so a target that
                // keeps refusing for want of a resource is bounded by `Max_NACK_Retx_Cnt`
                // alone) and the timer starts again from the resend. A NACK of a later packet
                // leaves the timer alone, so older packets still get resent on time.
                if psn == self.tx.base() {
                    self.rto_count = 0;
                    let resend_at = self.hold_until.get().map_or(now, |t| t.max(now));
                    self.rto_at.set(self.rto_deadline(resend_at, cfg));
                }
                self.enter(next, ret);
            }
            NackClass::Close => {
                // The target still holds the PDC unless the code says it does not: then a CLOSE
                // frees it there too.
                let peer_alive = !matches!(nack.code, NackCode::InvDpdcid | NackCode::ClosingInErr);
                self.fail(ret, now, cfg, Failure::Nack(nack.code), peer_alive)?;
            }
            NackClass::NewStartPsn => {
                // Only while SYN is set, i.e. before anything was acknowledged (as uet-ref-prov's
                // `uet_pds.c` requires).
                if self.remote != 0 || self.state != InitiatorState::Creating {
                    return Err(PdcError::IllegalEvent {
                        event: "NACK NEW_START_PSN",
                        state: PdcState::Initiator(self.state),
                    });
                }
                if nack.payload == self.start_psn {
                    // The restart was made already (a NACK per packet the Pending target
                    // refused): nothing moves, as in uet-ref-prov (`delta == 0`).
                    return Ok(class);
                }
                let next = self.transition(Ev::Update)?;
                if !self.tx.restart_at(nack.payload) {
                    return Err(PdcError::IllegalEvent {
                        event: "NACK NEW_START_PSN",
                        state: PdcState::Initiator(self.state),
                    });
                }
                self.start_psn = nack.payload;
                self.rtt.forget_timed();
                self.peer_range_cack = nack.payload.wrapping_sub(1);
                // Nothing came back yet (no ACK named the target): its return direction is idle,
                // and starts again from the new start PSN.
                if let Some(ret) = ret.as_deref_mut() {
                    *ret = ReturnReceiver::new(nack.payload);
                }
                self.rto_at.set(self.rto_deadline(now, cfg));
                self.enter(next, ret);
            }
        }
        Ok(class)
    }

    /// [`Initiator::handle_control`], with the return direction passed in.
    pub fn handle_control(
        &mut self,
        ret: &mut ReturnReceiver<W>,
        _now: Instant,
        ctl: &Control,
    ) -> Result<(), PdcError> {
        let PdcDest::Established { dpdcid } = ctl.dest else {
            return Err(PdcError::IllegalEvent { event: "control with SYN", state: PdcState::Initiator(self.state) });
        };
        if dpdcid != self.local {
            return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
        }
        if self.remote == 0 || ctl.spdcid != self.remote {
            return Err(PdcError::WrongPdc { expected: self.remote, got: ctl.spdcid });
        }
        match ctl.ctl_type {
            ControlType::CloseReq => {
                let next = self.transition(Ev::WantClose)?;
                if ret.window.receive(ctl.psn) == Arrival::OutOfWindow {
                    // A peer numbering its return direction from elsewhere: acknowledge the
                    // CLOSE_REQ alone, its PSN as CACK.
                    ret.close_req_psn = ctl.psn;
                    ret.pending |= RET_ACK_CLOSE_REQ;
                } else {
                    let retx = ctl.flags.contains(ControlFlags::RETX);
                    ret.ack_now(ctl.psn, if retx { AckFlags::RETX } else { AckFlags::empty() });
                }
                self.enter(next, Some(ret));
                Ok(())
            }
            ControlType::AckReq => {
                // The target's probe of a return PSN (the reference provider's target sends one
                // when an ACK of its read data went missing): ACKed at once if it arrived, else
                // NACKed PKT_NOT_RCVD so the target resends it.
                let next = self.transition(Ev::Update)?;
                let received = match self.mode {
                    DeliveryMode::Rud => ret.window.received(ctl.psn),
                    DeliveryMode::Rod => !psn_after(ctl.psn, ret.window.cack_psn()),
                };
                if received {
                    let retx = ctl.flags.contains(ControlFlags::RETX);
                    ret.ack_now(ctl.psn, if retx { AckFlags::RETX } else { AckFlags::empty() });
                } else {
                    ret.nack_now(ctl.psn, false);
                }
                self.enter(next, Some(ret));
                Ok(())
            }
            ControlType::ClearReq => {
                // The target asks for a CLEAR (UE 1.0 control type 3): sent as for an ACK asking
                // for one, with this initiator's CLEAR_PSN (its left edge − 1), whatever PSN the
                // payload names, as that is all it may clear; none once the CLOSE is queued, as
                // the CLOSE clears everything. Unlike an ACK's request, not only once the left
                // edge passed the newest CACK: the target asked outright, and one CLEAR and the
                // ACK it draws answer it. (Neither uet-ref-prov's target nor this crate's sends
                // one.)
                let next = self.transition(Ev::Update)?;
                if next != InitiatorState::CloseAckWait {
                    self.tx_pending |= TX_CLEAR;
                }
                self.enter(next, Some(ret));
                Ok(())
            }
            _ => Err(PdcError::IllegalEvent {
                event: "control packet other than CLOSE_REQ, ACK_REQ and CLEAR_REQ",
                state: PdcState::Initiator(self.state),
            }),
        }
    }

    /// [`Initiator::request_close`].
    pub fn request_close(&mut self) -> Result<(), PdcError> {
        let next = self.transition(Ev::WantClose)?;
        // A wish to close never closes at once: the return direction is not touched.
        self.enter(next, None);
        Ok(())
    }

    fn want_close(&mut self) {
        if let Ok(next) = self.transition(Ev::WantClose) {
            self.enter(next, None);
        }
    }

    /// [`Initiator::close`], with the return direction passed in.
    pub fn close(
        &mut self,
        mut ret: Option<&mut ReturnReceiver<W>>,
        now: Instant,
        cfg: &PdcConfig,
    ) -> Result<(), PdcError> {
        let outstanding = self.tx.outstanding();
        let ever_sent = self.tx.next_psn() != self.start_psn;
        let next = self.transition(Ev::Close { outstanding, ever_sent })?;
        if next == InitiatorState::CloseAckWait && self.state != InitiatorState::CloseAckWait {
            self.queue_close(ret.as_deref_mut(), now, cfg);
        }
        self.enter(next, ret);
        Ok(())
    }

    /// Close in error: everything not acknowledged fails; then CLOSE if the target may still hold
    /// the PDC, else Closed.
    fn fail(
        &mut self,
        mut ret: Option<&mut ReturnReceiver<W>>,
        now: Instant,
        cfg: &PdcConfig,
        why: Failure,
        peer_alive: bool,
    ) -> Result<(), PdcError> {
        // A target that never answered has no id to address; one in CloseAckWait already has our
        // CLOSE.
        let peer_alive = peer_alive && self.remote != 0 && self.state != InitiatorState::CloseAckWait;
        let next = self.transition(Ev::Fail { peer_alive })?;
        if self.failure.is_none() {
            self.failure = ZeroOption::Some(why);
            self.events |= EV_FAILED;
        }
        self.tx.abandon();
        self.hold_until.clear();
        self.losses.stop();
        if next == InitiatorState::CloseAckWait {
            self.queue_close(ret.as_deref_mut(), now, cfg);
        }
        self.enter(next, ret);
        Ok(())
    }

    /// [`Initiator::poll_transmit`], with the return direction passed in.
    pub fn poll_transmit(&mut self, ret: Option<&mut ReturnReceiver<W>>, now: Instant) -> Option<InitiatorTx> {
        if let Some(ret) = ret.filter(|r| r.pending != 0) {
            return Some(self.poll_return(ret));
        }
        if self.tx_pending & TX_CLOSE != 0 {
            self.tx_pending &= !TX_CLOSE;
            let retx = if self.rto_count > 0 { ControlFlags::RETX } else { ControlFlags::empty() };
            return Some(InitiatorTx::Control(self.control(ControlType::Close, self.close_psn, 0, retx)));
        }
        if self.state == InitiatorState::Closed {
            return None;
        }
        if self.tx_pending & TX_CLEAR != 0 {
            self.tx_pending &= !TX_CLEAR;
            let clear = self.tx.base().wrapping_sub(1);
            return Some(InitiatorTx::Control(self.control(ControlType::Clear, 0, clear, ControlFlags::AR)));
        }
        if self.tx_pending & TX_PROBE != 0 {
            self.tx_pending &= !TX_PROBE;
            let newest = self.tx.next_psn().wrapping_sub(1);
            if self.sleek.probes() {
                // PROBE: its payload is the SACK base it asks for, the oldest unacknowledged PSN.
                let mut probe = self.control(ControlType::Probe, newest, self.tx.base(), ControlFlags::empty());
                probe.probe_opaque = self.sleek.probe_sent(now);
                return Some(InitiatorTx::Control(probe));
            }
            return Some(InitiatorTx::Control(self.control(ControlType::AckReq, newest, 0, ControlFlags::empty())));
        }
        if self.hold_until.get().is_some_and(|t| now < t) {
            return None;
        }
        self.hold_until.clear();
        let psn = self.tx.take_lost()?;
        self.rtt.on_resend(psn);
        Some(InitiatorTx::Resend(self.stamp(psn, RequestFlags::RETX | RequestFlags::AR)))
    }

    /// The return direction's packet waiting to go (one is): the ACK of a CLOSE_REQ, a NACK, or
    /// an ACK, in that order.
    fn poll_return(&self, ret: &mut ReturnReceiver<W>) -> InitiatorTx {
        if ret.pending & RET_ACK_CLOSE_REQ != 0 {
            ret.pending &= !RET_ACK_CLOSE_REQ;
            return InitiatorTx::Ack(Ack {
                next_header: NextHeader::None,
                flags: AckFlags::empty(),
                request: AckRequest::None,
                ack_psn_offset: 0,
                cack_psn: ret.close_req_psn,
                spdcid: self.local,
                dpdcid: self.remote,
                ext: AckExtension::None,
            });
        }
        if ret.pending & RET_NACK != 0 {
            ret.pending &= !RET_NACK;
            let code = if ret.marks & NACK_ROD_OOO != 0 { NackCode::RodOoo } else { NackCode::PktNotRcvd };
            let n = Nack::for_pdc(code, ret.nack_psn, self.local, self.remote);
            return InitiatorTx::Nack(Nack { payload: ret.window.max_rcvd().wrapping_add(1), ..n });
        }
        ret.pending &= !RET_ACK;
        ret.coalescer.sent();
        ret.acked_max = ret.window.max_rcvd();
        InitiatorTx::Ack(self.return_ack(ret))
    }

    /// [`Initiator::handle_data`], with the return direction passed in.
    pub fn handle_data(
        &mut self,
        ret: &mut ReturnReceiver<W>,
        _now: Instant,
        cfg: &PdcConfig,
        req: &Request,
        payload_len: u32,
        ecn: bool,
    ) -> Result<Delivery, PdcError> {
        let PdcDest::Established { dpdcid } = req.dest else {
            return Err(PdcError::IllegalEvent {
                event: "return packet with SYN",
                state: PdcState::Initiator(self.state),
            });
        };
        if dpdcid != self.local {
            return Err(PdcError::WrongPdc { expected: self.local, got: dpdcid });
        }
        if self.remote == 0 || req.spdcid != self.remote {
            return Err(PdcError::WrongPdc { expected: self.remote, got: req.spdcid });
        }
        if req.mode != self.mode {
            return Err(PdcError::IllegalEvent {
                event: "return packet of the other delivery mode",
                state: PdcState::Initiator(self.state),
            });
        }
        let next = self.transition(Ev::Update)?;
        let expected = ret.window.cack_psn().wrapping_add(1);
        if self.mode == DeliveryMode::Rod && req.psn != expected && ret.window.classify(req.psn) == Arrival::New {
            if ret.rod_nacked() != Some(expected) {
                ret.rod_nacked = expected;
                ret.marks |= ROD_NACKED;
                ret.nack_now(req.psn, true);
            }
            return Ok(Delivery::Dropped);
        }
        let mut flags = if req.flags.contains(RequestFlags::RETX) { AckFlags::RETX } else { AckFlags::empty() };
        if ecn {
            flags |= AckFlags::M;
        }
        let delivery = match ret.window.receive(req.psn) {
            Arrival::New => {
                let triggers =
                    AckTriggers { ar: req.flags.contains(RequestFlags::AR), syn: false, ecn, needs_clear: false };
                // As the target does: a packet filling a gap behind what the last ACK reported
                // is ACKed at once (project-defined, after RFC 5681 §4.2).
                let fills_gap = psn_after(ret.acked_max, req.psn);
                if ret.coalescer.on_packet(&cfg.ack, payload_len, triggers) || fills_gap {
                    ret.ack_now(req.psn, flags);
                } else {
                    ret.ack_psn = req.psn;
                    ret.ack_flags = flags;
                }
                Delivery::New
            }
            Arrival::Duplicate => {
                ret.ack_now(req.psn, flags);
                Delivery::Duplicate
            }
            Arrival::Stale => {
                ret.ack_now(req.psn, flags);
                Delivery::Stale
            }
            Arrival::OutOfWindow => Delivery::Dropped,
        };
        self.enter(next, Some(ret));
        Ok(delivery)
    }

    /// [`Initiator::return_ack`], with the return direction passed in.
    pub fn return_ack(&self, ret: &ReturnReceiver<W>) -> Ack {
        super::AckCcFields {
            local: self.local,
            remote: self.remote,
            cack: ret.window.cack_psn(),
            sack: ret.window.sack(),
            ack_psn: ret.ack_psn,
            flags: ret.ack_flags,
            request: AckRequest::None,
            next_header: NextHeader::None,
            mp_range: RxWindow::<W>::MP_RANGE,
            out_of_order: ret.window.out_of_order(),
        }
        .ack()
    }

    fn control(&self, ctl_type: ControlType, psn: u32, payload: u32, flags: ControlFlags) -> Control {
        let isrod = if self.mode == DeliveryMode::Rod { ControlFlags::ISROD } else { ControlFlags::empty() };
        let stamp = self.stamp(psn, RequestFlags::empty());
        let ar = if ctl_type == ControlType::Close { ControlFlags::AR } else { ControlFlags::empty() };
        Control {
            ctl_type,
            flags: flags | isrod | ar,
            probe_opaque: 0,
            psn,
            spdcid: self.local,
            dest: stamp.dest,
            payload,
        }
    }

    /// [`Initiator::has_pending`], with the return direction passed in.
    pub fn has_pending(&self, ret: Option<&ReturnReceiver<W>>) -> bool {
        self.tx_pending != 0
            || ret.is_some_and(ReturnReceiver::has_pending)
            || (self.state != InitiatorState::Closed && self.tx.has_lost() && !self.hold_until.is_armed())
    }

    /// [`Initiator::poll_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        let hold = if self.tx.has_lost() { self.hold_until } else { Deadline::NONE };
        self.rto_at.earlier(self.probe_at).earlier(self.losses.deadline()).earlier(hold).get()
    }

    /// [`Initiator::handle_timeout`], with the return direction passed in.
    pub fn handle_timeout(&mut self, ret: Option<&mut ReturnReceiver<W>>, now: Instant, cfg: &PdcConfig) {
        if self.state == InitiatorState::Closed {
            return;
        }
        if self.rto_at.is_due(now) {
            self.rto_at.clear();
            self.probe_at.clear();
            let count = self.rto_count.saturating_add(1);
            if self.state == InitiatorState::CloseAckWait {
                if cfg.rto_retx_exhausted(count) {
                    // The CLOSE went unanswered: give the PDC up.
                    if let Ok(next) = self.transition(Ev::CloseDone) {
                        self.enter(next, ret);
                    }
                    return;
                }
                self.rto_count = count;
                self.tx_pending |= TX_CLOSE;
                self.rto_at.set(self.rto_deadline(now, cfg));
                return;
            }
            if !self.tx.has_outstanding() {
                // The CLEAR, or the ACK it drew, was lost: send it again, up to Max_RTO_Retx_Cnt
                // times. A CLEAR left unanswered fails nothing: uet-ref-prov's target answers none
                // (`uet_pds_process_clear_cp` sends no ACK, AR or not), and the target holds its
                // responses only until the next request's CLEAR_PSN or the CLOSE.
                if self.clear_owed() && !cfg.rto_retx_exhausted(count) {
                    self.rto_count = count;
                    self.tx_pending |= TX_CLEAR;
                    self.rto_at.set(self.rto_deadline(now, cfg));
                }
                return;
            }
            if cfg.rto_retx_exhausted(count) {
                // Cannot fail from a state that allows no event; Closed was excluded above.
                let _ = self.fail(ret, now, cfg, Failure::RetriesExhausted, true);
                return;
            }
            self.rto_count = count;
            self.tx.mark_all_lost();
            self.hold_until.clear();
            self.rto_at.set(self.rto_deadline(now, cfg));
        }
        if self.hold_until.is_due(now) {
            self.hold_until.clear();
        }
        self.losses.on_timeout(&mut self.tx, now, cfg);
        if self.probe_at.is_due(now) {
            self.probe_at.clear();
            // No probe before the target's PDC id is known: a control packet in SYN form carries
            // no DPDCID, and uet-ref-prov's target (`uet_pds_process_control`) answers one with
            // NACK INV_DPDCID, which would fail the PDC; the retransmission timer covers it.
            if self.tx.has_outstanding()
                && self.remote != 0
                && self.probe_count < cfg.max_tail_loss_retx
                && !self.tx.has_lost()
            {
                self.probe_count += 1;
                self.tx_pending |= TX_PROBE;
                self.probe_at.set(now.saturating_add(cfg.tail_loss_time));
            }
        }
    }

    /// Test support: behaves as if `n` more PSNs had been sent and acknowledged.
    #[cfg(test)]
    pub(crate) fn skip_psns(&mut self, n: u32) {
        self.tx.skip(n);
    }

    /// [`Initiator::poll_event`], with the return direction passed in.
    pub fn poll_event(&mut self, ret: Option<&ReturnReceiver<W>>) -> Option<InitiatorEvent> {
        if self.events & EV_ESTABLISHED != 0 {
            self.events &= !EV_ESTABLISHED;
            return Some(InitiatorEvent::Established { tpdcid: self.remote });
        }
        if self.events & EV_FAILED != 0 {
            self.events &= !EV_FAILED;
            return self.failure().map(InitiatorEvent::Failed);
        }
        if self.events & EV_CLOSED != 0 && self.tx_pending == 0 && !ret.is_some_and(ReturnReceiver::has_pending) {
            self.events &= !EV_CLOSED;
            return Some(InitiatorEvent::Closed);
        }
        None
    }
}

/// [`InitiatorCore::has_room`] of a PDC with send window `tx`, the peer's range `peer_range`,
/// the target's id `remote` (0 while unknown) and start PSN `start_psn`.
#[inline(always)]
fn has_room<const W: usize>(tx: &TxWindow<W>, peer_range: u32, remote: u16, start_psn: u32, cfg: &PdcConfig) -> bool {
    tx.can_send(peer_range)
        && (remote != 0 || tx.next_psn().wrapping_sub(start_psn) < SYN_PSN_SPAN)
        && !(cfg.limit_psn_range && psn_range_used(tx.next_psn(), start_psn))
}

/// Whether the PSN range from `start_psn` is used up at `next_psn` (one PSN stays free for the
/// CLOSE).
const fn psn_range_used(next_psn: u32, start_psn: u32) -> bool {
    next_psn.wrapping_sub(start_psn) >= PSN_RANGE_LIMIT - 1
}

impl Ev {
    const fn name(self) -> &'static str {
        match self {
            Ev::Send => "send",
            Ev::Update => "ACK, NACK or timer",
            Ev::FirstAck => "first ACK",
            Ev::WantClose => "close wanted",
            Ev::Close { .. } => "close",
            Ev::Drained => "all acknowledged",
            Ev::CloseDone => "close acknowledged",
            Ev::Fail { .. } => "close in error",
        }
    }
}

/// NACK codes that say the target lacked a resource (0x04–0x0A): resending at once would meet
/// the same shortage, so the resend waits `NACK_Retx_Time`.
const fn is_resource_shortage(code: NackCode) -> bool {
    matches!(
        code,
        NackCode::NoPdcAvail
            | NackCode::NoCccAvail
            | NackCode::NoBitmap
            | NackCode::NoPktBuffer
            | NackCode::NoGtdDelAvail
            | NackCode::NoSesMsgAvail
            | NackCode::NoResource
    )
}

/// Every transition of the initiator, in one place (the state diagram in the module doc). Pure:
/// callers check, then apply.
fn transition(state: InitiatorState, ev: Ev) -> Result<InitiatorState, PdcError> {
    use InitiatorState as S;
    let next = match (state, ev) {
        (S::Closed, _) => None,
        // New requests: until the close is under way.
        (S::Creating | S::Established | S::Quiesce, Ev::Send) => Some(state),
        (S::AckWait | S::CloseAckWait, Ev::Send) => None,
        // ACKs, NACKs and timers that change no state.
        (_, Ev::Update) => Some(state),
        // The first ACK names the target's PDC.
        (S::Creating, Ev::FirstAck) => Some(S::Established),
        (S::Established | S::Quiesce | S::AckWait | S::CloseAckWait, Ev::FirstAck) => Some(state),
        // A close is wanted (the target's CLOSE_REQ, or ours).
        (S::Creating | S::Established, Ev::WantClose) => Some(S::Quiesce),
        (S::Quiesce | S::AckWait | S::CloseAckWait, Ev::WantClose) => Some(state),
        // Close now: nothing ever sent frees at once; wait for ACKs; or send CLOSE.
        (S::Creating | S::Established | S::Quiesce, Ev::Close { ever_sent: false, .. }) => Some(S::Closed),
        (S::Creating | S::Established | S::Quiesce, Ev::Close { outstanding: 1.., .. }) => Some(S::AckWait),
        (S::Creating | S::Established | S::Quiesce, Ev::Close { outstanding: 0, .. }) => Some(S::CloseAckWait),
        (S::AckWait | S::CloseAckWait, Ev::Close { .. }) => Some(state),
        (S::AckWait, Ev::Drained) => Some(S::CloseAckWait),
        (S::Creating | S::Established | S::Quiesce | S::CloseAckWait, Ev::Drained) => Some(state),
        (S::CloseAckWait, Ev::CloseDone) => Some(S::Closed),
        (S::Creating | S::Established | S::Quiesce | S::AckWait, Ev::CloseDone) => None,
        // Close in error.
        (_, Ev::Fail { peer_alive: true }) => Some(S::CloseAckWait),
        (_, Ev::Fail { peer_alive: false }) => Some(S::Closed),
    };
    next.ok_or(PdcError::IllegalEvent { event: ev.name(), state: PdcState::Initiator(state) })
}
