//! What an endpoint counted: refusals, resends by cause, NACKs by code, the round-trip time.

use crate::pds::NackCode;
use linklayer::Duration;

/// What the endpoint counted since [`Endpoint::new`](super::Endpoint::new) (counters wrap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EndpointStats {
    /// Packets that named a PDC here but came from an address other than its peer's: requests
    /// and control packets for a target PDC were NACKed PDC_HDR_MISMATCH, ACKs and NACKs for an
    /// initiator PDC dropped. None changed the PDC.
    pub source_mismatches: u64,
    /// Packets marked for resending, by cause (requests, read data and RUDI packets).
    pub resends: Resends,
    /// NACKs received, by code.
    pub nacks_received: NackCounts,
    /// NACKs sent, by code.
    pub nacks_sent: NackCounts,
    /// The smoothed round-trip time of the initiator PDC that took an ACK last (see
    /// [`RttEstimator`](crate::pdc::RttEstimator)); `None` before the first sample, and on an
    /// endpoint that only receives (read data it sends is timed by its target PDCs, which this
    /// does not report).
    pub rtt: Option<Duration>,
    /// Times a message's new PDC could not open because every congestion-control context served
    /// another destination's PDCs (the message waits, see [`CmsConfig`](super::CmsConfig)).
    pub ccc_waits: u64,
    /// CREDIT control packets to an initiator PDC whose CCC runs no RCCC (or that has no CCC):
    /// ignored. Refused grants to one that does are counted by its
    /// [`CreditSender`](crate::cms::CreditSender)'s `stats().ignored`.
    pub stray_grants: u64,
    /// Received messages released before an earlier message of their PDC, to make room for
    /// another (a peer started more than the target PDC's `W`, or the shared `O` entries were all
    /// in use; see [`Endpoint`](super::Endpoint)). While this stays 0, every PDC's messages were
    /// reported in send order.
    pub released_out_of_order: u64,
    /// Times [`Endpoint::poll_transmit`](super::Endpoint::poll_transmit) had read data ready to
    /// go on a target PDC whose return direction was idle while every one of the endpoint's `D`
    /// was in use: the data waited (and was tried again on the next call). While this stays 0,
    /// `D` never held read data back.
    pub return_direction_waits: u64,
    /// Return-direction packets (read data, CLOSE_REQ, ACK_REQ) that reached an initiator PDC
    /// whose return direction was idle while every one of the endpoint's `D` was in use: dropped,
    /// as if lost (the target resends them; one the PDC would have refused counts too). While
    /// this stays 0, `D` never dropped one.
    pub return_receiver_drops: u64,
    /// Times an initiator PDC with something to send (a new message, or its CLOSE) found every
    /// one of the endpoint's `S` request directions in use and joined the PDCs waiting for one
    /// (see [`Endpoint`](super::Endpoint)). While this stays 0, `S` never held a PDC back.
    pub request_direction_waits: u64,
    /// Packets (ACKs asking for a CLEAR, NACKs closing the PDC) that would have made an idle
    /// initiator PDC send while every one of the endpoint's `S` request directions was in use:
    /// dropped, as if lost. While this stays 0, `S` never dropped one.
    pub request_direction_drops: u64,
    /// Kept-open initiator PDCs with nothing to do chosen to close, to make room in the full
    /// table (or CCCs) for a message's key without a PDC (see
    /// [`EndpointConfig::close_when_idle`]; one whose CLOSE waited for a request direction stays
    /// open if a message for it comes first). While this stays 0, `P` held every key kept open.
    ///
    /// [`EndpointConfig::close_when_idle`]: super::EndpointConfig::close_when_idle
    pub idle_pdcs_closed: u64,
    /// Target PDCs with nothing to do asked to close (CLOSE_REQ), idle longest first, to make
    /// room in the full target table for a new initiator's PDC (whose SYN is NACKed NO_PDC_AVAIL
    /// and retried). One at a time: the next once the last one's initiator has let a
    /// `Close_REQ_Time` pass without answering.
    pub idle_targets_closed: u64,
}

impl EndpointStats {
    /// Nothing counted.
    pub const ZERO: EndpointStats = EndpointStats {
        source_mismatches: 0,
        resends: Resends::ZERO,
        nacks_received: NackCounts::ZERO,
        nacks_sent: NackCounts::ZERO,
        rtt: None,
        ccc_waits: 0,
        stray_grants: 0,
        released_out_of_order: 0,
        return_direction_waits: 0,
        return_receiver_drops: 0,
        request_direction_waits: 0,
        request_direction_drops: 0,
        idle_pdcs_closed: 0,
        idle_targets_closed: 0,
    };

    /// Counts what a call to an initiator PDC marked for resending, and takes its round-trip
    /// estimate.
    pub(super) fn after_initiator_call(&mut self, marked: Marked, rtt: &crate::pdc::RttEstimator) {
        self.resends.count(marked);
        if let Some(r) = rtt.smoothed() {
            self.rtt = Some(r);
        }
    }
}

/// Packets marked for resending, by what marked them. A marked packet that is acknowledged
/// before its turn to go is not sent again, so these count decisions, not datagrams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Resends {
    /// By a retransmission timeout (every unacknowledged packet of the PDC, or one RUDI packet).
    pub timeout: u64,
    /// By a NACK of a retransmit-class code (ROD_OOO: every unacknowledged packet).
    pub nack: u64,
    /// By SACK-driven loss detection (later packets acknowledged, the reorder window passed).
    pub sack: u64,
    /// By SLEEK loss recovery ([`CmsConfig::sleek`](super::CmsConfig::sleek)): the
    /// out-of-order count passed its threshold, or a probe found the network empty.
    pub sleek: u64,
    /// Tail-loss probes sent (ACK_REQ for the newest PSN, or PROBE with SLEEK; each costs one
    /// control packet).
    pub probes: u64,
}

/// Packets one PDC call marked for resending, and what marked them.
pub(super) enum Marked {
    /// SACK-driven loss detection (an ACK).
    Sack(u32),
    /// A NACK.
    Nack(u32),
    /// Nothing was marked.
    Nothing,
}

impl Resends {
    /// Nothing counted.
    pub const ZERO: Resends = Resends { timeout: 0, nack: 0, sack: 0, sleek: 0, probes: 0 };

    /// Counts what one PDC call marked.
    pub(super) fn count(&mut self, marked: Marked) {
        match marked {
            Marked::Sack(n) => self.sack = self.sack.wrapping_add(u64::from(n)),
            Marked::Nack(n) => self.nack = self.nack.wrapping_add(u64::from(n)),
            Marked::Nothing => {}
        }
    }

    /// `marked` packets marked at a timer: by the retransmission timeout if it `expired`, else
    /// by the end of a reorder window.
    pub(super) fn count_timer(&mut self, marked: u32, expired: bool) {
        let n = u64::from(marked);
        if expired {
            self.timeout = self.timeout.wrapping_add(n);
        } else {
            self.sack = self.sack.wrapping_add(n);
        }
    }

    /// Every resend, whatever its cause (probes not counted).
    pub const fn total(&self) -> u64 {
        self.timeout.wrapping_add(self.nack).wrapping_add(self.sack).wrapping_add(self.sleek)
    }
}

/// A count per NACK code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NackCounts([u32; 32]);

impl NackCounts {
    /// Nothing counted.
    pub const ZERO: NackCounts = NackCounts([0; 32]);

    /// The codes are 0x01–0x1A and 0xFD–0xFF: their low five bits tell them apart.
    const fn index(code: NackCode) -> usize {
        (code as u8 & 0x1F) as usize
    }

    /// NACKs of `code`.
    pub fn get(&self, code: NackCode) -> u32 {
        self.0.get(Self::index(code)).copied().unwrap_or(0)
    }

    /// Every NACK, whatever its code.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|&n| u64::from(n)).sum()
    }

    /// The codes counted at least once, with their counts, in code order.
    pub fn iter(&self) -> impl Iterator<Item = (NackCode, u32)> + '_ {
        self.0.iter().enumerate().filter(|&(_, &n)| n > 0).filter_map(|(i, &n)| {
            let code = if i >= 0x1D { i as u8 | 0xE0 } else { i as u8 };
            NackCode::try_from(code).ok().map(|c| (c, n))
        })
    }

    pub(super) fn add(&mut self, code: NackCode) {
        if let Some(n) = self.0.get_mut(Self::index(code)) {
            *n = n.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_counter() {
        let mut c = NackCounts::default();
        let codes: std::vec::Vec<NackCode> = (0..=255u8).filter_map(|v| NackCode::try_from(v).ok()).collect();
        for (k, &code) in codes.iter().enumerate() {
            for _ in 0..=k {
                c.add(code);
            }
        }
        let counted: std::vec::Vec<(NackCode, u32)> = c.iter().collect();
        let want: std::vec::Vec<(NackCode, u32)> =
            codes.iter().enumerate().map(|(k, &code)| (code, k as u32 + 1)).collect();
        assert_eq!(counted, want);
        assert_eq!(c.get(NackCode::ExpNackFatal), codes.len() as u32);
        assert_eq!(c.total(), (1..=codes.len() as u64).sum::<u64>());
    }
}
