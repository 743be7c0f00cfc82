//! The Congestion Management Sublayer (CMS): how fast a congestion-control context (CCC) may send.
//!
//! UE 1.0's CMS defines two algorithms that may run alone or together on one CCC (the `CCC_ID` a
//! RUD_CC / ROD_CC request carries; several PDCs to one destination may share one):
//!
//! * [`nscc`] — network-signal congestion control, at the sender: a congestion window driven by
//!   ECN marks, queueing delay (round-trip time above the base), NACKs of trimmed packets and
//!   the receiver's byte counts in ACK_CC;
//! * [`rccc`] — receiver credit congestion control: a sender spends credit the receiver grants,
//!   and the receiver divides its ingress rate among its active senders.
//!
//! The CMS specification text was not available to this crate. Both algorithms follow the UEC
//! Congestion Management working group's simulator (`ultraethernet/uet-htsim`, commit `40ccb05`,
//! `htsim/sim/uec.cpp`), which says of itself that it is "not a standard": its constants are the
//! algorithms' constants, scaled from a network the configuration describes. Each module names
//! the simulator functions it follows, and marks where it departs from them as *project-defined*.
//!
//! The [`Endpoint`](crate::msg::Endpoint) runs NSCC and a load balancer ([`crate::lb`]) per
//! destination by itself when configured to ([`CmsConfig`](crate::msg::CmsConfig)); the engines
//! here also work alone, driven by an embedder's own transport.
//!
//! Everything is integer or fixed-point arithmetic (firmware has no FPU on its fast path), and
//! nothing here panics or allocates: a value out of range is ignored and counted
//! ([`Ignored`]), never trusted.
//!
//! DFC (destination flow control): public summaries of UE 1.0 describe it as the destination
//! slowing its credit (RCCC) and sending NSCC senders a window penalty. Both means are here
//! ([`PullPacer::set_rate`], and the ACK_CC `rcv_cwnd_pend` penalty that [`Nscc`] applies with
//! [`NsccConfig::honor_penalty`]), but no policy for when a destination should use them: no
//! public text or code gives one (the simulator has no DFC).

pub mod nscc;
pub mod rccc;

pub use nscc::{AckSignal, NackSignal, Nscc, NsccConfig, NsccStats, ReceivedBytes};
pub use rccc::{CreditSender, FlowId, Pull, PullPacer, PullPacerConfig, RcccStats};

use linklayer::{Duration, LinkRate};

/// The reference network every NSCC constant is scaled from: 100 Gb/s (htsim
/// `_reference_network_linkspeed`).
pub const REFERENCE_LINK: LinkRate = LinkRate::GBPS_100;

/// The reference network's round-trip time: 12 µs (htsim `_reference_network_rtt`).
pub const REFERENCE_RTT: Duration = Duration::from_micros(12);

/// The reference network's bandwidth-delay product in bytes: 100 Gb/s × 12 µs / 8 = 150 000.
pub const REFERENCE_BDP: u64 = 150_000;

/// Why a congestion-control input was ignored. Each one leaves the state as it was and counts
/// in the algorithm's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Ignored {
    /// The receiver's window penalty (`rcv_cwnd_pend`) does not fit its 7 bits.
    PenaltyOutOfRange,
    /// An ACK_CC's received-byte count went backwards (a reordered, older ACK), or jumped by more
    /// than half its 24-bit range.
    StaleReceivedBytes,
    /// A credit grant older than one already applied (reordered or duplicated).
    StaleGrant,
    /// A flow the credit scheduler does not hold.
    UnknownFlow,
    /// The credit scheduler holds as many flows as it can.
    NoRoom,
}

impl core::fmt::Display for Ignored {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Ignored::PenaltyOutOfRange => "receiver window penalty does not fit 7 bits",
            Ignored::StaleReceivedBytes => "received-byte count went backwards",
            Ignored::StaleGrant => "credit grant older than one already applied",
            Ignored::UnknownFlow => "unknown flow",
            Ignored::NoRoom => "credit scheduler full",
        })
    }
}

impl core::error::Error for Ignored {}

/// `a × b / c` without overflow, saturating at `u64::MAX`; 0 when `c` is 0.
pub(crate) fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    let q = (u128::from(a) * u128::from(b)).checked_div(u128::from(c)).unwrap_or(0);
    u64::try_from(q).unwrap_or(u64::MAX)
}
