//! PDC timers and limits (digest `shared/spec/uet.md` §4.5; open question 39: the spec-table
//! column, as transcribed in XDP2's `config.h` "from the spec", for every parameter it lists).
//!
//! *Project-defined* additions, each configurable:
//!
//! * [`PdcConfig::loss_threshold`] and [`PdcConfig::reorder_window`]: an unacknowledged PSN with
//!   at least `loss_threshold` later PSNs acknowledged becomes a loss candidate, and is resent
//!   without waiting for the RTO if it is still unacknowledged `reorder_window` later. UE 1.0
//!   infers loss from out-of-order counts but no public source gives the rule. Packet spraying
//!   reorders by the spread of the path delays, often more than a hundred packets at 800 Gb/s,
//!   so a count alone (TCP's 3, RFC 5681 §3.2) would resend much that is merely late; the window
//!   is RACK's idea (RFC 8985 §6.2) without per-packet timestamps. Defaults: 3 and 50 µs. A
//!   packet resent once is left to the RTO after that, so a late SACK never starts a storm.
//! * [`PdcConfig::idle_timeout`]: a target PDC that hears nothing from its initiator for 60 s
//!   closes (the Linux RFC draft's idle timeout; the spec table has none), so stray PDCs do not
//!   leak.
//! * [`PdcConfig::rto_max`]: the retransmission timeout doubles with each timeout of the same
//!   packet (`RTO_Init_Timer × 2^retry`), up to this cap (default 8 s, the top of the range UE
//!   1.0 gives `RTO_Init_Timer`). "The same packet" is the oldest unacknowledged one: the count
//!   restarts only when the cumulative acknowledgement passes it, so a packet that keeps getting
//!   lost while later ones arrive still fails the PDC after `Max_RTO_Retx_Cnt` timeouts.
//! * The target resends an unanswered CLOSE_REQ every `Close_REQ_Time`, and closes in error only
//!   after `Max_RTO_Retx_Cnt` periods of `Close_REQ_Time` without a packet from the initiator
//!   (the sources close in error after one `Close_REQ_Time`, which a single lost packet would
//!   turn into failed messages).

use super::window::AckPolicy;
use linklayer::Duration;

/// `Max_NACK_Retx_Cnt` value meaning "no limit" (the spec table's range is 0..=31, with the
/// maximum meaning infinite).
pub const UNLIMITED_NACK_RETX: u8 = 31;

/// Granularity of the MPR field of ACK_CC: MP_RANGE = MPR × 128 PSNs (uet-ref-prov, digest §3.6).
pub const MPR_GRANULARITY: u32 = 128;

/// Timers and limits of the PDCs of one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PdcConfig {
    /// `RTO_Init_Timer`: the first retransmission timeout (default 1 ms). Each timeout of the
    /// same packet doubles it, up to [`PdcConfig::rto_max`].
    pub rto: Duration,
    /// The longest retransmission timeout backoff may reach (default 8 s, the top of the range
    /// UE 1.0 gives `RTO_Init_Timer`).
    pub rto_max: Duration,
    /// `Max_RTO_Retx_Cnt`: timeouts of the same packet (the oldest unacknowledged one) before the
    /// PDC closes in error (default 5).
    pub max_rto_retx: u8,
    /// `NACK_Retx_Time`: how long a packet NACKed for want of a resource waits before it is
    /// resent (default 1 ms; NACK codes 0x04–0x0A). Other NACKed packets are resent at once.
    pub nack_retx_time: Duration,
    /// `Max_NACK_Retx_Cnt`: retransmitting NACKs in a row without progress before the PDC closes
    /// in error (default 5; [`UNLIMITED_NACK_RETX`] means no limit).
    pub max_nack_retx: u8,
    /// `New_PDC_Time`: how long a target PDC may stay Pending (default 5000 µs).
    pub new_pdc_time: Duration,
    /// `Close_REQ_Time`: how long the target waits for the CLOSE after its CLOSE_REQ, measured from
    /// the last packet of the PDC (default 1 ms).
    pub close_req_time: Duration,
    /// `Tail_Loss_Time`: quiet time after the last new packet before a tail-loss probe (an
    /// ACK_REQ for the newest PSN) goes out (default 1 ms).
    pub tail_loss_time: Duration,
    /// `Max_Tail_Loss_Retx`: probes without progress (default 5).
    pub max_tail_loss_retx: u8,
    /// ACK coalescing (`ACK_Gen_Trigger`, `ACK_Gen_Min_Pkt_Add`, `Enb_ACK_Per_Pkt`,
    /// `ACK_On_ECN`).
    pub ack: AckPolicy,
    /// `Default_MPR`: the peer's MP_RANGE, in units of 128 PSNs, until its first ACK_CC says
    /// otherwise (default 8, i.e. 1024 PSNs).
    pub default_mpr: u8,
    /// `Limit_PSN_Range`: close the PDC before its PSNs reach `Start_PSN + 2^31` (default on; a
    /// secure PDC must).
    pub limit_psn_range: bool,
    /// How long a target PDC may hear nothing from its initiator before it closes (project-defined,
    /// default 60 s as in the Linux RFC draft; zero turns it off).
    pub idle_timeout: Duration,
    /// Later PSNs acknowledged before an unacknowledged one is a loss candidate (project-defined,
    /// default 3).
    pub loss_threshold: u32,
    /// How long a loss candidate may stay unacknowledged before it is resent (project-defined,
    /// default 50 µs; zero resends at once).
    pub reorder_window: Duration,
}

impl Default for PdcConfig {
    fn default() -> Self {
        PdcConfig {
            rto: Duration::from_millis(1),
            rto_max: Duration::from_millis(8000),
            max_rto_retx: 5,
            nack_retx_time: Duration::from_millis(1),
            max_nack_retx: 5,
            new_pdc_time: Duration::from_micros(5000),
            close_req_time: Duration::from_millis(1),
            tail_loss_time: Duration::from_millis(1),
            max_tail_loss_retx: 5,
            ack: AckPolicy::default(),
            default_mpr: 8,
            limit_psn_range: true,
            idle_timeout: Duration::from_millis(60_000),
            loss_threshold: 3,
            reorder_window: Duration::from_micros(50),
        }
    }
}

impl PdcConfig {
    /// The retransmission timeout after `retries` timeouts of the same packet:
    /// `RTO_Init_Timer × 2^retries`, at most [`PdcConfig::rto_max`] (and never below
    /// `RTO_Init_Timer`, should `rto_max` be set lower).
    pub const fn rto_backoff(&self, retries: u8) -> Duration {
        let shift = if retries > 32 { 32 } else { retries as u32 };
        let backed_off = self.rto.saturating_mul(1u64 << shift);
        let cap = if self.rto_max.as_nanos() > self.rto.as_nanos() { self.rto_max } else { self.rto };
        if backed_off.as_nanos() < cap.as_nanos() { backed_off } else { cap }
    }

    /// Whether `count` NACK-driven resends exceed `Max_NACK_Retx_Cnt`.
    pub const fn nack_retx_exhausted(&self, count: u8) -> bool {
        self.max_nack_retx != UNLIMITED_NACK_RETX && count > self.max_nack_retx
    }
}
