//! Packet delivery contexts (PDCs): the sans-I/O reliability engine of the PDS (UE 1.0 §3.5.9 to
//! §3.5.12; the reference provider `uet-ref-prov` `uet_pds.c`, also for the secure start PSN).
//!
//! * [`window`]: the PSN windows of one PDC direction: the target's receive window with duplicate
//!   classification, cumulative and selective ACK state; the initiator's send window with the
//!   peer's MP_RANGE limit, ACK processing and loss marks; and ACK coalescing.
//! * [`initiator`] and [`target`]: the two ends of a PDC as explicit state machines, every
//!   transition in one `match`; an event a state does not accept returns [`PdcError`] and changes
//!   nothing. Each end sends and receives: requests go forward, read data and CLOSE_REQ come back
//!   in the return direction, each direction with its own PSN window.
//! * [`config`]: the timer table, with a hardware and a software profile.
//! * [`rtt`]: the round-trip time estimate and the retransmission timeout it gives.
//! * [`sleek`]: the UEC simulator's loss recovery for sprayed packets (out-of-order count and
//!   probes), which a congestion controller drives on an initiator.
//! * [`table`]: the fixed-capacity PDC table, by id (never 0, not reused at once) and by the
//!   initiator's or target's selection key.
//!
//! The PDC layer carries PSNs, not bytes: the initiator stamps the PDS header of each packet it is
//! allowed to send or must resend, and the caller (the message layer) adds the SES header and the
//! payload that belong to that PSN. So a PDC stays small (see `pdc_sizes` in the tests) and nothing
//! here copies payload.
//!
//! **Speed.** The per-packet entry points (`Initiator::send`, `Initiator::handle_ack`,
//! `Target::handle_request`, `Target::poll_transmit`) are `#[inline(always)]`: each has one caller
//! in this crate (the message layer's `Endpoint`), so inlining adds no code there, and returning
//! their results through memory cost about 6 ns a packet (`pdc/loopback_state_machines_only`
//! 26 ns → 20 ns). The bit sets skip empty words before a population count, which the baseline
//! x86-64 and Cortex-M4 targets do in software, and the send window moves its base without
//! shifting when nothing is marked: the in-order, loss-free case touches no bitmap.

pub mod config;
pub mod held;
pub mod initiator;
pub mod rtt;
pub mod sleek;
pub mod table;
pub mod target;
pub mod window;

#[cfg(test)]
mod tests;

pub use config::{PdcConfig, UNLIMITED_NACK_RETX, UNLIMITED_RTO_RETX};
pub use initiator::{AckOutcome, Initiator, InitiatorEvent, InitiatorState, InitiatorTx, Stamp};
pub use rtt::RttEstimator;
pub use sleek::SleekLimits;
pub use table::{InitiatorKey, IpAddr, PdcTable, TableError, TargetKey, ip, ipv4};
pub use target::{Delivery, PENDING_NACKS, StartPolicy, Target, TargetEvent, TargetState, TargetTx};
pub use window::{AckCoalescer, AckError, AckPolicy, AckTriggers, Arrival, RxWindow, Sack, TxWindow, psn_after};

/// Takes the MP_RANGE an ACK_CC or ACK_CCX advertises as the peer's range, in PSNs. An update
/// counts only with a CACK newer than the last update's (the reference provider's rule). MPR 0
/// means the peer gives no range (the reference provider reads `peer_mp_range == 0` so): only the
/// sender's own window limits it.
fn update_peer_range(ack: &crate::pds::Ack, range: &mut u32, range_cack: &mut u32) {
    let mpr = match ack.ext {
        crate::pds::AckExtension::None => return,
        crate::pds::AckExtension::Cc(cc) => cc.mpr,
        crate::pds::AckExtension::Ccx(cc) => cc.mpr,
    };
    if window::psn_after(ack.cack_psn, *range_cack) {
        *range = if mpr == 0 { u32::MAX } else { u32::from(mpr) * config::MPR_GRANULARITY };
        *range_cack = ack.cack_psn;
    }
}

/// The fields of an ACK_CC sent by a PDC end that receives PSNs in a window of `mp_range`.
#[derive(Clone, Copy)]
struct AckCcFields {
    local: u16,
    remote: u16,
    cack: u32,
    sack: window::Sack,
    ack_psn: u32,
    flags: crate::pds::AckFlags,
    request: crate::pds::AckRequest,
    next_header: crate::pds::NextHeader,
    mp_range: u32,
    out_of_order: u32,
}

impl AckCcFields {
    /// The ACK_CC: SACK bitmap, this end's MPR, the out-of-order count; the NSCC fields this
    /// crate does not compute are 0.
    #[inline(always)]
    fn ack(self) -> crate::pds::Ack {
        use crate::pds::{Ack, AckCc, AckExtension, CcState};
        let offset = |psn: u32| -> i16 { i16::try_from(psn.wrapping_sub(self.cack) as i32).unwrap_or(0) };
        Ack {
            next_header: self.next_header,
            flags: self.flags,
            request: self.request,
            ack_psn_offset: offset(self.ack_psn),
            cack_psn: self.cack,
            spdcid: self.local,
            dpdcid: self.remote,
            ext: AckExtension::Cc(AckCc {
                mpr: u8::try_from(self.mp_range / config::MPR_GRANULARITY).unwrap_or(u8::MAX),
                sack_psn_offset: offset(self.sack.base),
                sack_bitmap: self.sack.bitmap,
                state: CcState::Nscc {
                    service_time: 0,
                    restore_cwnd: false,
                    rcv_cwnd_pend: 0,
                    rcvd_bytes: 0,
                    ooo_count: u16::try_from(self.out_of_order).unwrap_or(u16::MAX),
                },
            }),
        }
    }
}

/// The state a PDC was in when it refused an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PdcState {
    /// An initiator PDC.
    Initiator(InitiatorState),
    /// A target PDC.
    Target(TargetState),
}

/// Why a PDC refused an event. The PDC is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PdcError {
    /// The event is not allowed in the current state.
    IllegalEvent {
        /// The event.
        event: &'static str,
        /// The state.
        state: PdcState,
    },
    /// The packet names another PDC (its SPDCID or DPDCID does not match this one).
    WrongPdc {
        /// The id this PDC expected.
        expected: u16,
        /// The id the packet carried.
        got: u16,
    },
    /// An ACK acknowledges a PSN that was never sent.
    Ack(AckError),
    /// A NACK names a PSN outside `[tx_base, next_psn − 1]`: it must not change the PDC (UE 1.0,
    /// quoted in uet-ref-prov).
    StaleNack {
        /// The NACKed PSN.
        psn: u32,
    },
    /// The send window (local or the peer's MP_RANGE) has no room.
    WindowFull,
    /// A guaranteed-delivery response cannot be held for this PSN (see
    /// [`Target::hold_response`]).
    CannotHold {
        /// The request's PSN.
        psn: u32,
        /// Why.
        why: &'static str,
    },
}

impl From<AckError> for PdcError {
    fn from(e: AckError) -> Self {
        PdcError::Ack(e)
    }
}

impl core::fmt::Display for PdcError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PdcError::IllegalEvent { event, state } => write!(f, "{event} is not allowed in state {state:?}"),
            PdcError::WrongPdc { expected, got } => write!(f, "packet for PDC {got}, this is PDC {expected}"),
            PdcError::Ack(e) => write!(f, "{e}"),
            PdcError::StaleNack { psn } => write!(f, "NACK of PSN {psn}, outside the send window"),
            PdcError::WindowFull => write!(f, "the send window has no room"),
            PdcError::CannotHold { psn, why } => write!(f, "cannot hold a response for PSN {psn}: {why}"),
        }
    }
}

impl core::error::Error for PdcError {}

/// Why a PDC closed in error, so that every message not yet acknowledged failed; or
/// ([`Failure::ReadTimeout`], [`Failure::Cancelled`], [`Failure::Refused`]) why one message
/// failed alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Failure {
    /// `Max_RTO_Retx_Cnt` timeouts in a row without progress.
    RetriesExhausted,
    /// `Max_NACK_Retx_Cnt` retransmitting NACKs in a row without progress.
    NackRetriesExhausted,
    /// The peer sent a NACK whose code closes the PDC.
    Nack(crate::pds::NackCode),
    /// The target closed in error (its CLOSE_REQ went unanswered).
    CloseTimeout,
    /// A READ's requests were all acknowledged, but its data stopped arriving for
    /// [`PdcConfig::idle_timeout`]: the target went silent (the reference provider's "Read
    /// Response Timeout"; the wait is project-defined). Only that READ fails.
    ReadTimeout,
    /// The caller cut the message short after it started
    /// ([`Endpoint::cancel`](crate::msg::Endpoint::cancel)): what went out, and the MSG_ERROR
    /// that ended it, were acknowledged. Only that message fails.
    Cancelled,
    /// The target answered a packet of the message with this error return code (any but OK and
    /// NULL; on a PDC, reported first as [`Event::Response`](crate::msg::Event::Response)), and
    /// every packet that went out is acknowledged. Packets it had not sent yet (a READ's requests
    /// too) went as one MSG_ERROR instead, as after
    /// [`Endpoint::cancel`](crate::msg::Endpoint::cancel); a READ stops waiting for its data. A
    /// RUDI message fails as soon as the RUDI response with the code arrives, with no
    /// `Event::Response` first. Only that message fails.
    Refused(crate::ses::ReturnCode),
}

/// Test support: replaces `part` with what `resume` makes of what `idle` says it keeps, if it is
/// idle, as an endpoint's pools do; returns whether it was.
#[cfg(test)]
pub(crate) fn rest<T, I>(part: &mut T, idle: impl FnOnce(&T) -> Option<I>, resume: impl FnOnce(I) -> T) -> bool {
    let Some(kept) = idle(part) else { return false };
    *part = resume(kept);
    true
}
