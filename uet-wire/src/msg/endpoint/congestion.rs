//! Congestion management on the endpoint: the initiator PDCs to one destination share a
//! congestion-control context (CCC) whose NSCC window gates their new packets and whose
//! load balancer picks each packet's entropy value (UE 1.0 §3.6, the CMS; the algorithms follow
//! the UEC simulator, `ultraethernet/uet-htsim` `40ccb05`, see [`crate::cms`] and [`crate::lb`]).
//!
//! *Project-defined*, each here only:
//!
//! * One CCC per destination address, shared by every initiator PDC to it (any mode, JobID or
//!   traffic class). The endpoint holds `C` of them ([`Endpoint`]'s last const generic, 0 by
//!   default: no congestion management and no cost). A CCC no PDC uses keeps its state until its
//!   slot is needed for another destination; a message whose destination finds no CCC slot waits,
//!   as for a full PDC table (and, PDCs kept open, the PDC idle longest closes, which frees its
//!   CCC once no other PDC uses it).
//! * The window counts each packet as [`NsccConfig::mtu`] bytes, the short last packet of a
//!   message and a READ's requests too, so the flight the window sees is the PDCs' own: request
//!   PSNs sent and neither acknowledged nor marked lost (a CLOSE not counted). The flight is
//!   settled after every change of a PDC, as the simulator's sender (`uec.cpp`) keeps its own:
//!   * an ACK credits every packet it acknowledged ([`Nscc::on_ack`], with the ACK's ECN echo
//!     and the round trip its PDC measured, one packet timed at a time); a packet acknowledged
//!     after it was marked lost comes back into the flight first (`processAck`);
//!   * a NACK of a trimmed packet takes it out with a congestion signal ([`Nscc::on_nack`],
//!     `processNack`);
//!   * a retransmission timeout shrinks the window by one packet ([`Nscc::on_timeout`]): the
//!     simulator cuts a packet's size per expired packet timer (`mark_packet_for_retransmission`),
//!     and a PDC keeps one timer, for its oldest packet;
//!   * every other packet that leaves the flight leaves the window as it is
//!     ([`Nscc::on_leave`]): marked lost by SACK (the simulator's SLEEK recovery only takes the
//!     packet out of the flight), marked with a timed-out one, refused by a NACK of another
//!     code, or given up by a PDC that closed;
//!   * a resend enters the flight again.
//! * Only an initiator's new requests wait for the window; resends, probes, ACKs, NACKs, control
//!   packets and read data (the return direction) go at once. The simulator holds resends after
//!   a timeout for the window too; here they only refill the flight the timeout emptied, so the
//!   flight passes the shrunk window by at most the one packet it was cut by.
//! * A new request that leaves the window no room for another asks for an immediate ACK (AR), as
//!   the simulator's sender does (`in_flight + size >= cwnd`).
//! * Each request and probe of a PDC with a CCC carries an entropy value drawn from its load
//!   balancer ([`Transmit::entropy`]); other control packets are the caller's to route. The CCC
//!   remembers each request's value in a table of [`EV_MEMORY`] entries by PSN, so the ACK or
//!   NACK naming that PSN feeds its path back: `Good` or `Ecn` for an ACK, `Nack` for a packet
//!   trimmed inside the network, `Good` (or `Ecn`) for one trimmed at the last hop; a timeout
//!   names no path; a NACK of another code says nothing about the path and is not fed back.
//! * SLEEK ([`CmsConfig::sleek`], on by [`CmsConfig::new`]; see [`crate::pdc::sleek`]) runs on
//!   every initiator PDC with a CCC, after the window took each ACK, as the simulator's sender
//!   runs it: the recovery threshold and window come from the CCC's window
//!   ([`SleekLimits::from_window`], counting packets of [`NsccConfig::mtu`] bytes as the window
//!   does, where the simulator counts its payload size); the next probe is due 3 base round
//!   trips after the ACK, or the base round trip plus the target delay once the PDC has no new
//!   packet; a probe answered with a queueing delay (its round trip less the base) below NSCC's
//!   target starts recovery.
//!   The packets it marks leave the flight without a window change, as SACK losses do. With
//!   RCCC beside NSCC ([`Controllers::Both`]) a probe's answer starts no recovery: the credit
//!   keeps the queues short whatever is missing, so a quick answer does not say that the
//!   packets still unacknowledged were lost (in the endpoint incast at 5 % loss it would resend
//!   three packets per loss and cost 7 % of the goodput); the out-of-order rule still runs. The
//!   simulator also feeds a probe's delay to its average; here a probe's round trip only decides
//!   recovery. [`EndpointStats::resends`] counts its resends apart.
//! * Under NSCC alone requests go as plain RUD or ROD requests: the CCC is the sender's own. With
//!   RCCC ([`Controllers`]; the module `credit`) they go as RUD_CC / ROD_CC, and NSCC, when it
//!   runs too, is told so ([`NsccConfig::with_credit`]).

use super::*;
use crate::cms::nscc::{AckSignal, NackSignal, Nscc, NsccConfig};
use crate::cms::rccc::CreditSender;
use crate::lb::{Bitmap, EntropySource, Oblivious, PathFeedback, Reps};
use crate::pdc::SleekLimits;

/// How an endpoint manages congestion ([`EndpointConfig::cms`]); it takes effect on an
/// [`Endpoint`] with at least one CCC slot (`C` > 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CmsConfig {
    /// The NSCC of every CCC: link rate, network round trip, packet size, target delay.
    pub nscc: NsccConfig,
    /// How each CCC sprays its packets over the fabric's paths.
    pub lb: LoadBalancing,
    /// Seeds the load balancers' random draws (time and randomness are inputs); each CCC mixes
    /// in how many CCCs were opened before it.
    pub seed: u64,
    /// SLEEK loss recovery on every initiator PDC with a CCC whose NSCC window gates it
    /// ([`crate::pdc::sleek`]): its out-of-order threshold and recovery window come from the
    /// CCC's window, and a probe answered with a queueing delay below NSCC's target starts
    /// recovery.
    pub sleek: bool,
    /// What gates a CCC's new packets: NSCC's window, RCCC's credit, or both (see
    /// [`Controllers`]).
    pub controllers: Controllers,
}

/// The congestion controllers of each CCC (UE 1.0 §3.6: NSCC and RCCC, alone or together).
///
/// With RCCC ([`crate::cms::rccc`], after the UEC simulator) each CCC keeps a
/// [`CreditSender`](crate::cms::CreditSender): it starts with `maxwnd` of speculative credit,
/// every packet it sends (resends too) spends a packet's worth, and a new packet waits while
/// the credit is spent. Its PDCs' requests go as RUD_CC / ROD_CC: `CCC_ID` names the CCC's
/// credit session (a new value each time the CCC is taken up again after all its PDCs closed),
/// `credit_target` its pull target. A receiving endpoint whose own configuration runs RCCC keeps
/// one [`PullPacer`](crate::cms::PullPacer) of `C` flows, one per sender's credit session, and
/// grants by CREDIT control packets and in every ACK_CC of those PDCs (credit state). A
/// receiver without a pacer, or without a free flow when a session begins, grants each pull
/// target of that session at once in its ACK_CCs. The packet that spends the last credit asks
/// for an ACK (AR), and a CCC with nothing in flight may send one packet without credit, whose
/// pull target asks again: a lost CREDIT packet never leaves it waiting. Each packet spends a
/// full [`NsccConfig::mtu`] of credit. See [`Endpoint::credit`] and [`Endpoint::pull_stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Controllers {
    /// NSCC's window (sender-based).
    Nscc,
    /// RCCC's credit (receiver-based): the receiver's pull pacer grants it.
    Rccc,
    /// Both: a packet needs room in the window and credit.
    Both,
}

impl Controllers {
    /// Whether NSCC's window gates new packets.
    pub const fn nscc(self) -> bool {
        matches!(self, Controllers::Nscc | Controllers::Both)
    }

    /// Whether RCCC's credit gates new packets.
    pub const fn rccc(self) -> bool {
        matches!(self, Controllers::Rccc | Controllers::Both)
    }
}

impl CmsConfig {
    /// NSCC as configured, packets sprayed by REPS over `paths` entropy values, SLEEK on; no
    /// RCCC.
    pub const fn new(nscc: NsccConfig, paths: u16) -> Self {
        CmsConfig { nscc, lb: LoadBalancing::Reps { paths }, seed: 0, sleek: true, controllers: Controllers::Nscc }
    }
}

/// The load balancer of each CCC (see [`crate::lb`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LoadBalancing {
    /// [`Oblivious`] spraying over `paths` entropy values.
    Oblivious {
        /// Entropy values (rounded down to a power of two).
        paths: u16,
    },
    /// [`Reps`] over `paths` entropy values.
    Reps {
        /// Entropy values (any count from 1; REPS draws below it).
        paths: u16,
    },
    /// The bitmap-penalty selector over [`BITMAP_PATHS`] entropy values ([`Bitmap`]).
    Bitmap,
}

/// Entropy values the [`LoadBalancing::Bitmap`] selector spreads over.
pub const BITMAP_PATHS: usize = 64;

/// `probe_first_trial_time`: base round trips after an ACK before a PDC with more to send probes
/// (the simulator's `uec.cpp` 1081).
const PROBE_FIRST_TRIAL_RTTS: u64 = 3;

/// PSNs whose entropy value a CCC remembers for the feedback of their ACK or NACK (a table by
/// PSN; 2 KiB per CCC): enough for a window of 256 packets, 1 MiB of 4 KiB packets.
pub const EV_MEMORY: usize = 256;

/// A CCC's load balancer.
#[derive(Clone, Debug)]
enum Selector {
    Oblivious(Oblivious),
    Reps(Reps),
    Bitmap(Bitmap<BITMAP_PATHS>),
}

impl Selector {
    fn new(lb: LoadBalancing, seed: u64) -> Self {
        match lb {
            LoadBalancing::Oblivious { paths } => Selector::Oblivious(Oblivious::new(paths, seed)),
            LoadBalancing::Reps { paths } => Selector::Reps(Reps::new(paths, seed)),
            LoadBalancing::Bitmap => Selector::Bitmap(Bitmap::new(seed)),
        }
    }

    fn source(&mut self) -> &mut dyn EntropySource {
        match self {
            Selector::Oblivious(s) => s,
            Selector::Reps(s) => s,
            Selector::Bitmap(s) => s,
        }
    }
}

/// The entropy value a packet went out with (PDC 0, which no PDC is: an empty entry).
#[derive(Clone, Copy, Debug, Default)]
struct SentEv {
    psn: u32,
    pdc: u16,
    ev: u16,
}

/// One congestion-control context: the destination it serves, its window and its load balancer.
#[derive(Clone, Debug)]
pub(super) struct Ccc {
    dst: IpAddr,
    /// Counts the flight always; gates new packets when `gates`.
    pub(super) nscc: Nscc,
    gates: bool,
    /// RCCC's credit, when it runs.
    pub(super) credit: Option<CreditSender>,
    /// The `CCC_ID` its requests carry: a new value for each stretch of use (see `credit`).
    pub(super) session: u8,
    lb: Selector,
    evs: [SentEv; EV_MEMORY],
    /// Initiator PDCs using it.
    users: u16,
    /// Its PDCs that have a new packet to send and wait for the window, by table slot.
    pub(super) blocked: SlotList,
}

impl Ccc {
    /// Whether NSCC's window gates new packets (else it only counts the flight).
    pub(super) const fn gates(&self) -> bool {
        self.gates
    }

    /// Bytes one packet counts in the window.
    pub(super) fn packet(&self) -> u32 {
        self.nscc.config().mtu.max(1)
    }

    /// Whether the window (if NSCC gates) and the credit (if RCCC runs) take one more packet.
    /// With nothing in flight a packet may go without credit: its pull target tells the receiver
    /// what this CCC waits for (the simulator's RTS), and its ACK brings the grant back, so a
    /// lost CREDIT never leaves the CCC waiting for good.
    pub(super) fn open(&self) -> bool {
        let credit = self.credit.as_ref().is_none_or(|c| c.can_send() || self.nscc.in_flight() == 0);
        (!self.gates || self.nscc.can_send(self.packet())) && credit
    }

    /// SLEEK on `pdc` at `now`, after an ACK with out-of-order count `ooo` (if it carried one)
    /// that answered a probe after `probe_rtt`, if it did: a probe whose queueing delay is below
    /// the target starts recovery (not with RCCC too), and the limits come from the window; the
    /// next probe is due 3 base round trips on, or the base round trip plus the target delay once
    /// the PDC has no new packet to send (`backlog` false). Returns the PSNs it marked lost (none
    /// for a PDC without SLEEK).
    fn sleek(
        &self,
        now: Instant,
        pdc: &mut InitiatorCore,
        backlog: bool,
        ooo: Option<u32>,
        probe_rtt: Option<linklayer::Duration>,
    ) -> u32 {
        let n = &self.nscc;
        let (base, target) = (n.base_rtt(), n.target_qdelay());
        // Under RCCC too, queues stay short whatever is missing: a quick answer proves nothing.
        let empty = |rtt: linklayer::Duration| rtt.as_nanos().saturating_sub(base.as_nanos()) < target.as_nanos();
        if self.credit.is_none() && probe_rtt.is_some_and(empty) {
            pdc.recover();
        }
        let probe_after =
            if backlog { base.saturating_mul(PROBE_FIRST_TRIAL_RTTS) } else { base.saturating_add(target) };
        pdc.run_sleek_counted(now, ooo, SleekLimits::from_window(n.cwnd(), n.max_cwnd(), self.packet(), probe_after))
    }

    /// The entropy value PSN `psn` of PDC `pdc` went out with, if still remembered.
    fn ev_of(&self, pdc: u16, psn: u32) -> Option<u16> {
        let e = self.evs.get(psn as usize % EV_MEMORY)?;
        (e.pdc == pdc && e.psn == psn).then_some(e.ev)
    }
}

/// The endpoint's CCCs.
pub(super) struct Cccs<const C: usize> {
    slots: [ZeroOption<Ccc>; C],
    /// CCCs opened so far (mixed into each one's seed).
    opened: u64,
}

impl<const C: usize> Cccs<C> {
    /// No CCC open (all-zero bytes).
    pub(super) const EMPTY: Self = Cccs { slots: [const { ZeroOption::NONE }; C], opened: 0 };

    /// Closes every CCC, in place.
    pub(super) fn clear(&mut self) {
        self.slots.iter_mut().for_each(ZeroOption::clear);
        self.opened = 0;
    }

    pub(super) fn get(&self, c: u16) -> Option<&Ccc> {
        self.slots.get(usize::from(c))?.as_ref()
    }

    pub(super) fn get_mut(&mut self, c: u16) -> Option<&mut Ccc> {
        self.slots.get_mut(usize::from(c))?.as_mut()
    }

    /// The CCC of `dst`, opened in a free slot (or one no PDC uses) if it has none; `None`
    /// while every slot serves another destination's PDCs. O(C).
    fn join(&mut self, cfg: &CmsConfig, dst: IpAddr, now: Instant) -> Option<u16> {
        let found = self.slots.iter().position(|c| c.as_ref().is_some_and(|c| same_addr(&c.dst, &dst)));
        let slot = found.or_else(|| {
            let free = self.slots.iter().position(ZeroOption::is_none);
            free.or_else(|| self.slots.iter().position(|c| c.as_ref().is_some_and(|c| c.users == 0)))
        })?;
        let entry = self.slots.get_mut(slot)?;
        if found.is_none() {
            self.opened = self.opened.wrapping_add(1);
            let with_credit = cfg.controllers == Controllers::Both;
            let nscc = Nscc::new(NsccConfig { with_credit, ..cfg.nscc }, now);
            let maxwnd = u32::try_from(nscc.max_cwnd()).unwrap_or(u32::MAX);
            *entry = ZeroOption::Some(Ccc {
                dst,
                credit: cfg.controllers.rccc().then(|| CreditSender::new(maxwnd, cfg.nscc.mtu)),
                session: self.opened as u8,
                gates: cfg.controllers.nscc(),
                nscc,
                lb: Selector::new(cfg.lb, cfg.seed ^ self.opened.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                evs: [SentEv::default(); EV_MEMORY],
                users: 0,
                blocked: SlotList::default(),
            });
        }
        let c = entry.as_mut()?;
        if found.is_some() && c.users == 0 {
            if let Some(credit) = c.credit.as_mut() {
                // A new credit session: the receiver's flow for the last one ended with its PDCs,
                // and a new `CCC_ID` keeps a flow that lingers apart.
                self.opened = self.opened.wrapping_add(1);
                c.session = self.opened as u8;
                *credit = CreditSender::new(credit.maxwnd(), cfg.nscc.mtu);
            }
        }
        c.users = c.users.saturating_add(1);
        u16::try_from(slot).ok()
    }

    /// The CCC serving `dst`.
    pub(super) fn find(&self, dst: &IpAddr) -> Option<&Ccc> {
        self.slots.iter().flatten().find(|c| same_addr(&c.dst, dst))
    }

    /// CCCs some PDC uses (RCCC shares a pull target among them; the simulator shares it among
    /// the sources waiting to send at the NIC). O(C).
    pub(super) fn in_use(&self) -> u32 {
        self.slots.iter().flatten().filter(|c| c.users > 0).count() as u32
    }

    /// The CCCs in use, for the invariant check.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn iter(&self) -> impl Iterator<Item = (u16, &Ccc)> {
        self.slots.iter().enumerate().filter_map(|(i, c)| Some((i as u16, c.as_ref()?)))
    }
}

/// Whether NACK `code` says its packet was trimmed by a switch.
const fn trimmed(code: NackCode) -> bool {
    matches!(code, NackCode::Trimmed | NackCode::TrimmedLastHop | NackCode::TrimmedAck)
}

/// What the last call did to an initiator PDC, for its CCC (taken when the PDC is settled).
///
/// `repr(u8)` puts `None` at tag 0, so an endpoint's empty value is all-zero bytes (without it
/// the compiler keeps `None` in a spare value of a field of `Ack`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(u8)]
pub(super) enum CcSignal {
    /// Nothing the window reacts to.
    #[default]
    None,
    /// An ACK naming `psn` (`None` for the answer to a probe, whose PSN field is the probe's):
    /// `acked` request PSNs newly acknowledged, the round trip measured, whether it echoed an
    /// ECN mark, the out-of-order count it carried, the round trip of the probe it answers, and
    /// the cumulative credit an ACK_CC of credit state granted.
    Ack {
        ecn: bool,
        acked: u32,
        psn: Option<u32>,
        ooo: Option<u32>,
        grant: Option<u32>,
        rtt: Option<linklayer::Duration>,
        probe_rtt: Option<linklayer::Duration>,
    },
    /// A NACK naming `psn`; `code` says why, `ecn` whether it echoed an ECN mark.
    Nack { code: NackCode, psn: u32, ecn: bool },
    /// The retransmission timer fired.
    Timeout,
    /// A CREDIT control packet granted this cumulative credit (24-bit quanta).
    Grant(u32),
}

impl CcSignal {
    /// The signal of `ack`'s outcome.
    pub(super) fn of_ack(a: &crate::pds::Ack, o: &crate::pdc::AckOutcome) -> Self {
        let ecn = a.flags.contains(crate::pds::AckFlags::M);
        let psn = (!a.flags.contains(crate::pds::AckFlags::P)).then(|| a.ack_psn());
        let ooo = crate::pdc::sleek::ooo_count(a);
        let grant = match a.ext {
            crate::pds::AckExtension::Cc(crate::pds::AckCc {
                state: crate::pds::CcState::Credit { credit, .. },
                ..
            }) => Some(credit),
            _ => None,
        };
        CcSignal::Ack { acked: o.acked, rtt: o.rtt, ecn, psn, ooo, probe_rtt: o.probe_rtt, grant }
    }
}

impl<
    const P: usize,
    const M: usize,
    const E: usize,
    const R: usize,
    const C: usize,
    const W: usize,
    const Q: usize,
    const O: usize,
    const X: usize,
    const D: usize,
    const S: usize,
> Endpoint<P, M, E, R, C, W, Q, O, X, D, S>
{
    /// The NSCC state of the CCC serving `dst`: its window, flight, base RTT, counters. `None`
    /// without congestion management or before a PDC to `dst` opened.
    pub fn congestion(&self, dst: &IpAddr) -> Option<&Nscc> {
        self.cccs.find(dst).map(|c| &c.nscc)
    }

    /// The CCC a new initiator PDC to `dst` joins: `Ok(None)` without congestion management,
    /// `Err(())` while every CCC slot serves another destination.
    pub(super) fn join_ccc(&mut self, dst: IpAddr) -> Result<Option<u16>, ()> {
        let Some(cms) = self.config().cms.filter(|_| C > 0) else { return Ok(None) };
        match self.cccs.join(&cms, dst, self.now) {
            Some(c) => Ok(Some(c)),
            None => {
                self.stats.ccc_waits = self.stats.ccc_waits.wrapping_add(1);
                Err(())
            }
        }
    }

    /// Undoes [`Endpoint::join_ccc`] for a PDC that did not open after all.
    pub(super) fn leave_ccc(&mut self, ccc: Option<u16>) {
        if let Some(c) = ccc.and_then(|c| self.cccs.get_mut(c)) {
            c.users = c.users.saturating_sub(1);
        }
    }

    /// Settles initiator PDC `id`'s flight with its CCC after a change (see the module doc;
    /// `gone`: it is being removed, its packets leave the flight and it leaves the CCC), and
    /// lists the PDCs that waited for the window when it opened. Whether the CCC's window takes
    /// a new packet (true without a CCC).
    pub(super) fn cc_settle(&mut self, id: u16, gone: bool) -> bool {
        if C == 0 {
            return true;
        }
        let signal = core::mem::take(&mut self.cc_signal);
        let (now, turns) = (self.now, self.turns());
        let Some(index) = self.initiators.index_of(id).map(|i| i as u16) else { return true };
        let Some(p) = self.initiators.get_mut(id) else { return true };
        let Some(c) = p.ccc else { return true };
        let flight = if gone { 0 } else { self.senders.sender(&p.pdc).requests_in_flight() };
        let charged = u32::from(p.charged);
        p.charged = u16::try_from(flight).unwrap_or(u16::MAX);
        if gone {
            p.ccc = None;
        }
        let Some(ccc) = self.cccs.get_mut(c) else { return true };
        let bytes = ccc.packet();
        let mut left = charged.saturating_sub(flight);
        if let Some(credit) = ccc.credit.as_mut() {
            let grant = match signal {
                CcSignal::Ack { grant, .. } => grant,
                CcSignal::Grant(g) => Some(g),
                CcSignal::Nack { .. } | CcSignal::Timeout | CcSignal::None => None,
            };
            if let Some(g) = grant {
                // A stale or excessive grant is refused and counted (`RcccStats::ignored`).
                let _ = credit.on_grant(g);
            } else if matches!(signal, CcSignal::Ack { .. } | CcSignal::Nack { .. }) {
                // Any feedback ends speculation (the simulator's `stopSpeculating`).
                credit.on_feedback();
            }
        }
        match signal {
            CcSignal::Ack { acked, rtt, ecn, psn, .. } => {
                // Packets acknowledged after they were marked lost come back into the flight
                // first (as the simulator adds them back), so the ACK credits all it acknowledged.
                let taken = acked.min(left);
                left -= taken;
                ccc.nscc.on_send((acked - taken).saturating_mul(bytes));
                let ack = AckSignal { acked: acked.saturating_mul(bytes), rtt, ecn, penalty: 0 };
                // A penalty of 0 is never out of range.
                let _ = ccc.nscc.on_ack(now, ack);
                let ev = psn.and_then(|psn| ccc.ev_of(id, psn));
                ccc.lb.source().on_feedback(now, ev, if ecn { PathFeedback::Ecn } else { PathFeedback::Good });
            }
            CcSignal::Nack { code, psn, ecn } if left > 0 && trimmed(code) => {
                let last_hop = code == NackCode::TrimmedLastHop;
                ccc.nscc.on_nack(now, NackSignal { bytes, rtt: None, last_hop });
                left -= 1;
                // Another path cannot help a packet trimmed at the receiver's port.
                let path = match (last_hop, ecn) {
                    (true, false) => PathFeedback::Good,
                    (true, true) => PathFeedback::Ecn,
                    (false, _) => PathFeedback::Nack,
                };
                let ev = ccc.ev_of(id, psn);
                ccc.lb.source().on_feedback(now, ev, path);
            }
            CcSignal::Timeout if left > 0 => {
                // One packet's timer expired (the simulator's packets each have one; the PDC
                // keeps one, for its oldest packet): the window shrinks by one packet.
                ccc.nscc.on_timeout(bytes);
                left -= 1;
                ccc.lb.source().on_feedback(now, None, PathFeedback::Timeout);
            }
            _ => {}
        }
        let sent = flight.saturating_sub(charged);
        // New packets and resends alike spend credit (one may overdraw it).
        if let Some(credit) = ccc.credit.as_mut() {
            credit.on_send(sent.saturating_mul(bytes));
        }
        // SLEEK, after the window took the ACK (as the simulator runs it after its update): the
        // packets it marks lost leave the flight too.
        let sleeks = ccc.gates;
        if let (CcSignal::Ack { ooo, probe_rtt, .. }, Some(p), false, true) =
            (signal, self.initiators.get_mut(id), gone, sleeks)
        {
            let backlog = p.next_new(self.senders.state(&p.pdc), turns).is_some();
            // An idle PDC (nothing outstanding) stays idle: SLEEK has nothing to mark.
            let marked = self.senders.with_kept(&mut p.pdc, |pdc| ccc.sleek(now, pdc, backlog, ooo, probe_rtt));
            let marked = marked.unwrap_or(0);
            if marked > 0 {
                self.stats.resends.sleek = self.stats.resends.sleek.wrapping_add(u64::from(marked));
                let after = self.senders.sender(&p.pdc).requests_in_flight();
                left = left.saturating_add(flight.saturating_sub(after));
                p.charged = u16::try_from(after).unwrap_or(u16::MAX);
            }
        }
        // The rest left the flight without a congestion signal: marked lost by SACK, SLEEK or
        // with the timed-out packet, refused for want of a resource, or given up by a closing
        // PDC.
        ccc.nscc.on_leave(left.saturating_mul(bytes));
        ccc.nscc.on_send(sent.saturating_mul(bytes));
        if gone {
            ccc.users = ccc.users.saturating_sub(1);
            ccc.blocked.unlink(&mut self.blocked_links, index);
        }
        let open = ccc.open();
        if open {
            // The window opened: the PDCs that waited for it take their turns again (one whose
            // close waits for a request direction keeps its place on that list).
            while let Some(waiting) = ccc.blocked.first() {
                ccc.blocked.unlink(&mut self.blocked_links, waiting);
                if !SlotList::contains(&self.senders_waiting_links, waiting) {
                    self.initiators_new.insert(&mut self.initiators_new_links, waiting, |_| true);
                }
            }
        }
        open
    }

    /// Whether initiator PDC `id`'s CCC takes a new packet: `Some(fills)` if so (always
    /// `Some(false)` without a CCC), `fills` when the packet leaves no room in the window for
    /// another (as the simulator's sender does) or spends the last credit, so it asks for an ACK
    /// at once (AR); `None` if not, and the PDC (table slot `index`) waits on the CCC's list
    /// until the window opens.
    pub(super) fn cc_admits(&mut self, id: u16, index: u16) -> Option<bool> {
        if C == 0 {
            return Some(false);
        }
        let Some(c) = self.initiators.get(id).and_then(|p| p.ccc) else { return Some(false) };
        let Some(ccc) = self.cccs.get_mut(c) else { return Some(false) };
        if ccc.open() {
            let packet = u64::from(ccc.packet());
            let after = ccc.nscc.in_flight().saturating_add(packet);
            let window_fills = ccc.gates && after.saturating_add(packet) >= ccc.nscc.cwnd();
            // The packet that spends the last credit asks for an ACK too, so one comes while the
            // sender waits for more (else ACK coalescing would hold it, and a probe fire).
            let credit_ends = ccc.credit.as_ref().is_some_and(|c| c.credit() <= packet as i64);
            return Some(window_fills || credit_ends);
        }
        ccc.blocked.insert(&mut self.blocked_links, index, |_| true);
        None
    }

    /// Places initiator PDC `index` on its CCC's waiting list when `waits`, else off it.
    pub(super) fn cc_place(&mut self, id: u16, index: u16, waits: bool) {
        if C == 0 {
            return;
        }
        let Some(c) = self.initiators.get(id).and_then(|p| p.ccc) else { return };
        if let Some(ccc) = self.cccs.get_mut(c) {
            SlotList::place(index, waits, &mut ccc.blocked, &mut self.blocked_links);
        }
    }

    /// The entropy value of a packet initiator PDC `id` sends now, drawn from its CCC's load
    /// balancer (`None` without a CCC); remembered for PSN `psn` when given.
    pub(super) fn cc_entropy(&mut self, id: u16, psn: Option<u32>) -> Option<u16> {
        if C == 0 {
            return None;
        }
        let c = self.initiators.get(id)?.ccc?;
        let now = self.now;
        let ccc = self.cccs.get_mut(c)?;
        let ev = ccc.lb.source().next_entropy(now);
        if let Some(psn) = psn {
            if let Some(e) = ccc.evs.get_mut(psn as usize % EV_MEMORY) {
                *e = SentEv { psn, pdc: id, ev };
            }
        }
        Some(ev)
    }

    /// The CCC part of [`Endpoint::check_invariants`]: each CCC's flight is its PDCs' charged
    /// packets, its user count theirs, and a PDC waits on its list only while it has a new packet
    /// and the window is shut.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn check_cccs(&self) -> Result<(), &'static str> {
        if C == 0 {
            return Ok(());
        }
        let (turns, cfg) = (self.turns(), &self.config().pdc);
        for (c, ccc) in self.cccs.iter() {
            ccc.blocked.well_formed(&self.blocked_links).ok_or("a CCC's waiting list is malformed")?;
            let (mut users, mut charged) = (0u16, 0u64);
            for index in 0..P {
                let Some(id) = self.initiators.id_at(index) else { continue };
                let p = self.initiators.get(id).ok_or("a table slot without its PDC")?;
                let on_blocked = ccc.blocked.iter(&self.blocked_links).any(|i| usize::from(i) == index);
                if p.ccc != Some(c) {
                    if on_blocked {
                        return Err("a PDC waits on another CCC's list");
                    }
                    continue;
                }
                users += 1;
                charged += u64::from(p.charged);
                let core = self.senders.sender(&p.pdc);
                if u32::from(p.charged) != core.requests_in_flight() {
                    return Err("a PDC's flight is not what its CCC counts");
                }
                // A holder that took its turn is listed as it was before PDCs came to wait (see
                // `check_invariants`).
                let has_new = p.next_new(core.state(), turns).is_some() && core.can_send(cfg);
                let holder = matches!(p.pdc, SenderAt::Pooled(_));
                let stale = holder && p.took_turn && !turns.yields;
                if on_blocked && (!(has_new || (holder && p.took_turn)) || ccc.open()) {
                    return Err("a PDC waits for a window that is open, or with nothing to send");
                }
                let listed = SlotList::contains(&self.initiators_new_links, index as u16);
                let waits = SlotList::contains(&self.senders_waiting_links, index as u16);
                if has_new && !(on_blocked || listed || waits || stale) {
                    return Err("a PDC with a new packet is neither listed nor waiting for its window");
                }
                if on_blocked && listed {
                    return Err("a PDC is listed and waits for its window at once");
                }
            }
            if users != ccc.users {
                return Err("a CCC's user count is wrong");
            }
            if charged * u64::from(ccc.packet()) != ccc.nscc.in_flight() {
                return Err("a CCC's flight is not its PDCs' packets");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
