//! PDC timers and limits: UE 1.0 §3.5.12 and its parameter table (Table 3-28), whose names,
//! defaults and ranges XDP2 transcribes in `config.h` (`xdp2-dev/xdp2`, `uet/config.h`, "from the
//! spec"), with the reference provider's (`ultraethernet/uet-ref-prov`) and the Linux driver
//! RFC's values where they differ.
//!
//! Three profiles:
//!
//! * [`PdcConfig::hardware`] (also [`Default`]): the table's defaults, for a NIC on a fabric
//!   whose round trips are microseconds: 1 ms `RTO_Init_Timer`, 5 timeouts or 5 NACKs of one
//!   packet before a failure.
//! * [`PdcConfig::sprayed`]: for a NIC on a fabric that sprays packets over paths, with its
//!   timers scaled from the fabric's round trip (project-defined): the table's 1 ms timers leave
//!   a PDC idle through most of each loss.
//! * [`PdcConfig::software`]: for endpoints in software over a host's UDP stack, where a thread
//!   may be descheduled for milliseconds: the timeout adapts to the measured round trip (at least
//!   1 ms), backs off up to 1 s, and a packet fails only after 11 timeouts (a peer silent for
//!   up to about 2 s loses nothing, [`PdcConfig::min_give_up_time`]); NACKs for want of a
//!   resource are retried without limit (the target is alive and answering).
//!
//! Both retry counters count **per packet**, as the table defines them ("for a single packet
//! before declaring a failure"): the packet whose retries decide is the oldest unacknowledged one
//! for timeouts and the oldest NACKed one for NACKs (one counter each per PDC, see below), so a
//! PDC never fails earlier than a count kept for every packet would make it (a packet behind the
//! oldest may be resent more often). The largest value of each range means no limit: 15 for
//! `Max_RTO_Retx_Cnt` ([`UNLIMITED_RTO_RETX`]) and 31 for `Max_NACK_Retx_Cnt`
//! ([`UNLIMITED_NACK_RETX`]; the table says so of the NACK counter, and the Soft-UE project's
//! parameter list, `Transport_Layer.hpp`, of the timeout counter).
//!
//! *Project-defined* additions, each configurable:
//!
//! * [`PdcConfig::rto_min`] and the round-trip estimate ([`rtt`](super::rtt)): after the first
//!   round-trip sample the timeout is `SRTT + 4·RTTVAR` within `[rto_min, rto_max]` (RFC 6298);
//!   the spec names only the initial value. The hardware profile's `rto_min` equals its
//!   `RTO_Init_Timer`, so on a fabric with microsecond round trips it keeps the table's 1 ms.
//! * [`PdcConfig::loss_threshold`] and [`PdcConfig::reorder_window`]: an unacknowledged PSN with
//!   at least `loss_threshold` later PSNs acknowledged becomes a loss candidate, and is resent
//!   without waiting for the RTO if it is still unacknowledged `reorder_window` later. UE 1.0
//!   infers loss from out-of-order counts but no public source gives the rule. Packet spraying
//!   reorders by the spread of the path delays, often more than a hundred packets at 800 Gb/s,
//!   so a count alone (TCP's 3, RFC 5681 §3.2) would resend much that is merely late; the window
//!   is RACK's idea (RFC 8985 §6.2) without per-packet timestamps. Defaults: 3 and 50 µs. A
//!   packet resent once is left to the RTO after that, so a late SACK never starts a storm.
//! * [`PdcConfig::idle_timeout`]: a target PDC that hears nothing from its initiator for 60 s
//!   closes (the Linux driver RFC's idle timeout; the spec table has none), so stray PDCs do not
//!   leak.
//! * [`PdcConfig::rto_max`]: the retransmission timeout doubles with each timeout of the same
//!   packet (`RTO × 2^retry`), up to this cap (default 8 s, the top of the range the table gives
//!   `RTO_Init_Timer`). "The same packet" is the oldest unacknowledged one: the count restarts
//!   only when the cumulative acknowledgement passes it, so a packet that keeps getting lost
//!   while later ones arrive still fails the PDC after `Max_RTO_Retx_Cnt` timeouts.
//! * `Max_NACK_Retx_Cnt` counts the NACKs of the oldest NACKed packet still unacknowledged (one
//!   counter per PDC, not one per PSN; a later packet's NACKs count once that one is
//!   acknowledged). A NACK of a packet already waiting to be resent does not count again. A
//!   retransmit-class NACK of the oldest unacknowledged packet clears its timeout count and
//!   restarts the retransmission timer from the resend: a target that keeps refusing it for
//!   want of a resource is bounded by `Max_NACK_Retx_Cnt` alone.
//! * `NACK_Retx_Time` delays the resend of packets refused for want of a resource (codes
//!   0x04–0x0A), where waiting helps; other retransmit-class codes are resent at once. The table
//!   says only "how long to delay the retransmission of a NACK'd packet", and the reference
//!   provider delays none.
//! * The target resends an unanswered CLOSE_REQ every `Close_REQ_Time`, and closes in error only
//!   after `Max_RTO_Retx_Cnt` periods of `Close_REQ_Time` without a packet from the initiator
//!   (the sources close in error after one `Close_REQ_Time`, which a single lost packet would
//!   turn into failed messages).

use super::window::AckPolicy;
use linklayer::Duration;

/// `Max_NACK_Retx_Cnt` value meaning "no limit" (the table's range is 0 to 31, the maximum
/// meaning infinite).
pub const UNLIMITED_NACK_RETX: u8 = 31;

/// `Max_RTO_Retx_Cnt` value meaning "no limit" (the table's range is 0 to 15; the maximum
/// meaning infinite, as the Soft-UE project's parameter list says).
pub const UNLIMITED_RTO_RETX: u8 = 15;

/// Granularity of the MPR field of ACK_CC: MP_RANGE = MPR × 128 PSNs (uet-ref-prov
/// `UET_PDS_MPR_GRANULARITY`; pre-1.0 drafts used 2^MPR).
pub const MPR_GRANULARITY: u32 = 128;

/// Timers and limits of the PDCs of one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PdcConfig {
    /// `RTO_Init_Timer`: the retransmission timeout until the first round-trip sample (default
    /// 1 ms). Each timeout of the same packet doubles the timeout, up to [`PdcConfig::rto_max`].
    pub rto: Duration,
    /// The least retransmission timeout the round-trip estimate may give (project-defined;
    /// hardware profile 1 ms, software profile 1 ms).
    pub rto_min: Duration,
    /// The longest retransmission timeout backoff may reach (default 8 s, the top of the range
    /// UE 1.0 gives `RTO_Init_Timer`).
    pub rto_max: Duration,
    /// `Max_RTO_Retx_Cnt`: timeouts of one packet (the oldest unacknowledged one) before the PDC
    /// closes in error (default 5; [`UNLIMITED_RTO_RETX`] or more means no limit).
    pub max_rto_retx: u8,
    /// `NACK_Retx_Time`: how long a packet NACKed for want of a resource waits before it is
    /// resent (default 1 ms; NACK codes 0x04–0x0A). Other NACKed packets are resent at once.
    pub nack_retx_time: Duration,
    /// `Max_NACK_Retx_Cnt`: retransmitting NACKs of one packet before the PDC closes in error
    /// (default 5; [`UNLIMITED_NACK_RETX`] or more means no limit).
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
    /// secure PDC must, and an [`Endpoint`](crate::msg::Endpoint) with
    /// [`secure`](crate::msg::EndpointConfig::secure) turns it on).
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
        PdcConfig::DEFAULT
    }
}

impl PdcConfig {
    /// The spec table's defaults (the same as [`Default`] and [`PdcConfig::hardware`]), as a
    /// constant.
    pub const DEFAULT: PdcConfig = PdcConfig {
        rto: Duration::from_millis(1),
        rto_min: Duration::from_millis(1),
        rto_max: Duration::from_millis(8000),
        max_rto_retx: 5,
        nack_retx_time: Duration::from_millis(1),
        max_nack_retx: 5,
        new_pdc_time: Duration::from_micros(5000),
        close_req_time: Duration::from_millis(1),
        tail_loss_time: Duration::from_millis(1),
        max_tail_loss_retx: 5,
        ack: AckPolicy::DEFAULT,
        default_mpr: 8,
        limit_psn_range: true,
        idle_timeout: Duration::from_millis(60_000),
        loss_threshold: 3,
        reorder_window: Duration::from_micros(50),
    };

    /// The spec table's defaults (the same as [`Default`]): for a NIC on a fabric with
    /// microsecond round trips.
    pub fn hardware() -> Self {
        PdcConfig::default()
    }

    /// For an endpoint in software over a host's UDP stack: `RTO_Init_Timer` 5 ms (the reference
    /// provider's `UET_PDS_TX_TIMEOUT`) until the first round-trip sample, then the estimate, at
    /// least 1 ms; backoff up to 1 s; 11 timeouts of one packet before it fails (a silence of
    /// up to [`PdcConfig::min_give_up_time`], about 2 s, loses nothing); resource NACKs retried
    /// every `NACK_Retx_Time` without limit. The rest as [`PdcConfig::hardware`].
    pub fn software() -> Self {
        PdcConfig {
            rto: Duration::from_millis(5),
            rto_min: Duration::from_millis(1),
            rto_max: Duration::from_millis(1000),
            max_rto_retx: 11,
            max_nack_retx: UNLIMITED_NACK_RETX,
            ..PdcConfig::default()
        }
    }

    /// For a NIC on a sprayed fabric whose longest unloaded round trip is `max_rtt`
    /// (*project-defined*, after the UEC simulator's SLEEK recovery, `ultraethernet/uet-htsim`
    /// `uec.cpp`, which probes after 3 base RTTs where the table's timers wait 1 ms): a packet
    /// with `loss_threshold` later ones acknowledged is resent once it is still missing
    /// `max_rtt / 2` later (packets sprayed over paths of different lengths arrive up to half a
    /// round trip apart); a tail-loss probe goes after `2 × max_rtt` of quiet; the retransmission
    /// timeout starts at `2 × max_rtt` and adapts above it (`SRTT + 4·RTTVAR`, which grows with
    /// queueing); 11 timeouts of one packet before it fails (about 4 000 × `2 × max_rtt` of
    /// silence). The rest as [`PdcConfig::hardware`].
    ///
    /// Why: with the table's 1 ms timers a RUD PDC at 800 Gb/s over 8 sprayed paths (round trips
    /// 4 to 17 µs) keeps 141 of its 755 Gb/s at 1 % loss, nearly all of the time spent waiting for
    /// timers; with this profile 96 % (`examples/tests/pdc_sim.rs`, `fabric-demo` part 2).
    pub fn sprayed(max_rtt: Duration) -> Self {
        let rtt = max_rtt.as_nanos().max(1);
        PdcConfig {
            rto: Duration::from_nanos(rtt.saturating_mul(2)),
            rto_min: Duration::from_nanos(rtt.saturating_mul(2)),
            max_rto_retx: 11,
            tail_loss_time: Duration::from_nanos(rtt.saturating_mul(2)),
            reorder_window: Duration::from_nanos(rtt / 2),
            ..PdcConfig::default()
        }
    }

    /// `base` doubled `retries` times, at most [`PdcConfig::rto_max`] (and never below `base`,
    /// should `rto_max` be set lower).
    pub const fn backoff(&self, base: Duration, retries: u8) -> Duration {
        let shift = if retries > 32 { 32 } else { retries as u32 };
        let backed_off = base.saturating_mul(1u64 << shift);
        let cap = if self.rto_max.as_nanos() > base.as_nanos() { self.rto_max } else { base };
        if backed_off.as_nanos() < cap.as_nanos() { backed_off } else { cap }
    }

    /// The retransmission timeout after `retries` timeouts of the same packet, before any
    /// round-trip sample: `RTO_Init_Timer × 2^retries`, at most [`PdcConfig::rto_max`].
    pub const fn rto_backoff(&self, retries: u8) -> Duration {
        self.backoff(self.rto, retries)
    }

    /// Whether `count` timeouts of one packet exceed `Max_RTO_Retx_Cnt`.
    pub const fn rto_retx_exhausted(&self, count: u8) -> bool {
        self.max_rto_retx < UNLIMITED_RTO_RETX && count > self.max_rto_retx
    }

    /// Whether `count` NACK-driven resends of one packet exceed `Max_NACK_Retx_Cnt`.
    pub const fn nack_retx_exhausted(&self, count: u8) -> bool {
        self.max_nack_retx < UNLIMITED_NACK_RETX && count > self.max_nack_retx
    }

    /// The longest silence of a peer that is sure to cost nothing: a peer that stops answering
    /// (a paused receiver, a link down) once it has acknowledged everything sent before, and
    /// answers again within this time, still hears the last resend, and no message fails. (A
    /// silence that starts while packets are unacknowledged, after earlier timeouts, has less
    /// left.) It is when the last of the
    /// `Max_RTO_Retx_Cnt` resends of one packet goes out at the earliest: the sum of that many
    /// timeouts, each at least the smaller of `RTO_Init_Timer` and [`PdcConfig::rto_min`],
    /// doubled per timeout up to [`PdcConfig::rto_max`]. `None` when `Max_RTO_Retx_Cnt` means
    /// no limit.
    pub const fn min_give_up_time(&self) -> Option<Duration> {
        if self.max_rto_retx >= UNLIMITED_RTO_RETX {
            return None;
        }
        let base = if self.rto_min.as_nanos() < self.rto.as_nanos() { self.rto_min } else { self.rto };
        let mut total = Duration::ZERO;
        let mut i = 0;
        while i < self.max_rto_retx {
            total = total.saturating_add(self.backoff(base, i));
            i += 1;
        }
        Some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_and_limits() {
        let hw = PdcConfig::hardware();
        assert_eq!(hw, PdcConfig::default());
        // The fifth resend goes 1 + 2 + 4 + 8 + 16 ms after the first send.
        assert_eq!(hw.min_give_up_time(), Some(Duration::from_millis(31)));
        assert!(!hw.rto_retx_exhausted(5) && hw.rto_retx_exhausted(6));
        assert!(!hw.nack_retx_exhausted(5) && hw.nack_retx_exhausted(6));
        let sw = PdcConfig::software();
        // 1 + 2 + ... + 512 ms, then 1 s.
        assert_eq!(sw.min_give_up_time(), Some(Duration::from_millis(2023)));
        assert!(sw.rto_retx_exhausted(12) && !sw.rto_retx_exhausted(11));
        assert!(!sw.nack_retx_exhausted(u8::MAX));
        let forever = PdcConfig { max_rto_retx: UNLIMITED_RTO_RETX, ..sw };
        assert_eq!(forever.min_give_up_time(), None);
        assert!(!forever.rto_retx_exhausted(u8::MAX));
        assert_eq!(sw.backoff(Duration::from_millis(3), 9), Duration::from_millis(1000));
        assert_eq!(sw.rto_backoff(0), Duration::from_millis(5));
    }
}
