//! RCCC on the endpoint: receiver-driven credit for the CCCs that run it
//! ([`Controllers::Rccc`] or [`Controllers::Both`]), after the UEC simulator (`uet-htsim`
//! `uec.cpp`: `computePullTarget`, `UecSink::processData`, `UecPullPacer`; see
//! [`crate::cms::rccc`]).
//!
//! * **Sender.** Each CCC keeps a [`CreditSender`]: it starts speculating with `maxwnd` of
//!   credit, every packet it sends (resends too) spends a packet's worth, and a new packet waits
//!   while the credit is spent, as for a shut window. Every request of its PDCs goes as RUD_CC /
//!   ROD_CC with `CCC_ID` (the CCC's credit session, see below) and `credit_target`, the pull
//!   target: the bytes still to send (the message's packets not yet sent and the PDC's packets
//!   to resend, plus a full `maxwnd` while more messages wait on the PDC), within the NSCC
//!   window when NSCC runs too, at most `maxwnd` beyond the grants, shared among the CCCs in use.
//!   A grant arrives as a CREDIT control packet or in an ACK_CC of credit state; any ACK or NACK
//!   ends speculation.
//! * **Receiver.** An endpoint whose own configuration runs RCCC keeps one [`PullPacer`] for its
//!   port, with a flow for each sender's credit session (source address and `CCC_ID`; at most
//!   `C` flows), which every target PDC of that session shares. Each pull goes out as a CREDIT
//!   control packet from the session's PDC that carried its latest target, unless that PDC owes
//!   an ACK, and every ACK_CC of a PDC with a flow carries the cumulative grant (credit state,
//!   `cc_type` 1). A trimmed request's pull target counts, and queues its flow for a pull. A
//!   CREDIT_REQ is taken as a request's pull target; it is never NACKed.
//!
//! *Project-defined*, here only:
//!
//! * **Credit sessions.** The cumulative counts of a sender's CCC and of the receiver's flow must
//!   start together: a CCC taken up again after all its PDCs closed starts a new session, with
//!   fresh counts and a new `CCC_ID` (8 bits, counting the sessions the endpoint opened), so a
//!   flow the receiver still holds for the old one stays apart. A new flow takes only a session's
//!   opening target (at most `maxwnd` and one pull).
//! * **Granted at once.** A target with no pacer (its endpoint runs no RCCC), or that first sees a
//!   session with no free flow or already under way, grants every pull target of that session at
//!   once in its ACK_CCs (the largest it saw), and so do the session's other PDCs there: a sender
//!   running RCCC toward it is paced by its own window only.
//! * **Asking again.** A CCC with nothing in flight may send one packet without credit: its pull
//!   target tells the receiver what the CCC waits for (the simulator's RTS after a timeout), and
//!   its ACK brings the grant back, so a lost CREDIT packet never leaves a sender waiting for
//!   good. The packet that spends the last credit asks for an ACK (AR).
//! * **Sizes.** Every packet spends a full packet of credit ([`NsccConfig::mtu`]), the short last
//!   packet of a message too (the simulator spends each packet's size), and the backlog counts
//!   packets. The pull target's backlog is what the PDC sending has left (the simulator counts
//!   the flow's); "CCCs in use" are those with a PDC open (the simulator's sources waiting to send
//!   at the NIC).
//! * Resends are not held for credit; they spend it.
//! * A CREDIT packet takes no PSN; its PSN field repeats the target's `CACK_PSN`.

use super::*;
use crate::cms::rccc::{CREDIT_PER_PULL, CreditSender, FlowId, PullPacer, PullPacerConfig, QUANTUM, RcccStats};
use crate::cms::{Nscc, NsccConfig};
use crate::pds::{AckCc, AckExtension, CcState, RequestCc};

/// A target PDC's part in RCCC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum TargetCredit {
    /// Its initiator asked for no credit.
    #[default]
    None,
    /// A flow of the pull pacer grants it.
    Paced(FlowId),
    /// Granted at once: the largest pull target it carried, of the sender's CCC session
    /// `ccc_id` (no pacer here, or no free flow when the session began).
    Echo { target: u32, ccc_id: u8 },
}

/// A flow of the pull pacer: the sender's CCC session it serves (source address and `CCC_ID`),
/// the target PDCs that carry it, and the one its CREDIT packets go from.
#[derive(Clone, Copy, Debug)]
struct Owner {
    flow: FlowId,
    src: IpAddr,
    ccc_id: u8,
    /// The target PDC whose request carried the flow's latest pull target, while it is open.
    pdc: Option<u16>,
    /// Target PDCs carrying the flow.
    refs: u16,
}

/// The receiver's pull pacer, and whom each of its flows serves.
pub(super) struct Pulls<const C: usize> {
    pacer: ZeroOption<PullPacer<C>>,
    owners: [ZeroOption<Owner>; C],
    /// The largest target that opens a session: a window and a pull, in quanta.
    opening: u32,
}

impl<const C: usize> Pulls<C> {
    /// No pacer (all-zero bytes; [`Pulls::new`] makes the one a configuration asks for).
    pub(super) const EMPTY: Self =
        Pulls { pacer: ZeroOption::NONE, owners: [const { ZeroOption::NONE }; C], opening: 0 };

    /// A pacer for an endpoint whose configuration runs RCCC (with CCC slots), else none.
    pub(super) fn new(cms: Option<CmsConfig>) -> Self {
        let cms = cms.filter(|c| C > 0 && c.controllers.rccc());
        let maxwnd = cms.map_or(0, |c| {
            let w = Nscc::new(NsccConfig { initial_cwnd: None, ..c.nscc }, Instant::ZERO).max_cwnd();
            u32::try_from(w).unwrap_or(u32::MAX)
        });
        let pacer = cms.map(|c| PullPacer::new(PullPacerConfig::new(c.nscc.link, maxwnd))).into();
        let opening = maxwnd.div_ceil(QUANTUM).saturating_add(CREDIT_PER_PULL);
        Pulls { pacer, owners: [ZeroOption::NONE; C], opening }
    }

    fn owner_mut(&mut self, flow: FlowId) -> Option<&mut Owner> {
        self.owners.iter_mut().flatten().find(|o| o.flow == flow)
    }

    /// Target PDC `id` carries pull target `target` of CCC session `ccc_id` of `src`: that
    /// session's flow, which takes the target. A session without a flow gets one if the pacer
    /// has room and `target` opens a session (a new flow refuses one beyond a window and a pull:
    /// a session under way, whose grants so far this pacer did not count); else `None`.
    fn join(&mut self, id: u16, src: IpAddr, ccc_id: u8, target: u32) -> Option<FlowId> {
        let pacer = self.pacer.as_mut()?;
        if let Some(o) = self.owners.iter_mut().flatten().find(|o| same_addr(&o.src, &src) && o.ccc_id == ccc_id) {
            o.refs = o.refs.saturating_add(1);
            o.pdc = Some(id);
            // A target beyond a window past the grants is clamped (`RcccStats::clamped`).
            let _ = pacer.on_target(o.flow, target);
            return Some(o.flow);
        }
        if target > self.opening {
            return None;
        }
        let entry = self.owners.iter_mut().find(|o| o.is_none())?;
        let flow = pacer.add_flow().ok()?;
        let _ = pacer.on_target(flow, target);
        *entry = ZeroOption::Some(Owner { flow, src, ccc_id, pdc: Some(id), refs: 1 });
        Some(flow)
    }

    /// Target PDC `id` no longer carries `flow` (it is being removed); the flow ends with the
    /// last one.
    fn leave(&mut self, id: u16, flow: FlowId) {
        let Some(o) = self.owner_mut(flow) else { return };
        o.refs = o.refs.saturating_sub(1);
        if o.pdc == Some(id) {
            o.pdc = None;
        }
        if o.refs == 0 {
            if let Some(pacer) = self.pacer.as_mut() {
                let _ = pacer.remove_flow(flow);
            }
            if let Some(entry) = self.owners.iter_mut().find(|o| o.as_ref().is_some_and(|o| o.flow == flow)) {
                entry.clear();
            }
        }
    }

    /// When the next pull is due.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.pacer.as_ref()?.poll_timeout()
    }

    /// The cumulative grant (24-bit quanta) an ACK of a target PDC with `credit` carries.
    fn granted(&self, credit: TargetCredit) -> Option<u32> {
        match credit {
            TargetCredit::None => None,
            TargetCredit::Echo { target, .. } => Some(target),
            TargetCredit::Paced(flow) => {
                let (granted, _) = self.pacer.as_ref()?.flow(flow)?;
                Some((granted & 0x00FF_FFFF) as u32)
            }
        }
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
    /// The RCCC state of the CCC serving `dst` (its credit, grants and counters): `None` unless
    /// that CCC runs RCCC.
    pub fn credit(&self, dst: &IpAddr) -> Option<&CreditSender> {
        self.cccs.find(dst)?.credit.as_ref()
    }

    /// This endpoint's pull pacer's counters (pulls sent, quanta granted, targets): `None` unless
    /// its configuration runs RCCC.
    pub fn pull_stats(&self) -> Option<&RcccStats> {
        self.pulls.pacer.as_ref().map(PullPacer::stats)
    }

    /// The RUD_CC / ROD_CC fields of a request of initiator PDC `id` carrying packets of message
    /// `slot`: its CCC's id and pull target. `None` unless its CCC runs RCCC.
    pub(super) fn cc_request(&mut self, id: u16, slot: usize) -> Option<RequestCc> {
        if C == 0 {
            return None;
        }
        let in_use = self.cccs.in_use();
        let p = self.initiators.get(id)?;
        let c = p.ccc?;
        let m = self.msgs.get(slot)?.as_ref()?;
        let left = m.packets().saturating_sub(m.sent).saturating_add(self.senders.sender(&p.pdc).lost_count());
        let more = p.queued.first().is_some();
        let ccc = self.cccs.get_mut(c)?;
        let packet = u64::from(ccc.packet());
        let (maxwnd, cwnd) = (ccc.nscc.max_cwnd(), ccc.gates().then(|| ccc.nscc.cwnd()));
        let credit = ccc.credit.as_mut()?;
        let backlog = u64::from(left).saturating_mul(packet).saturating_add(if more { maxwnd } else { 0 });
        let credit_target = credit.pull_target(backlog, cwnd, in_use);
        Some(RequestCc { ccc_id: ccc.session, credit_target })
    }

    /// A request with CC fields from `src` arrived on target PDC `id`: its pull target goes to
    /// the pacer's flow for the sender's CCC session, or is granted at once without one.
    pub(super) fn on_credit_target(&mut self, id: u16, src: IpAddr, cc: RequestCc) {
        let (target, ccc_id) = (cc.credit_target & 0x00FF_FFFF, cc.ccc_id);
        let credit = self.targets.get(id).map(|t| t.credit);
        // A session another PDC sees granted at once is granted so on every PDC: its counts are
        // the sender's alone, which no new flow could take up. O(P), once per PDC.
        let echoed = credit == Some(TargetCredit::None)
            && self.targets.iter().any(|(other, t)| {
                other != id
                    && matches!(t.credit, TargetCredit::Echo { ccc_id: c, .. } if c == ccc_id)
                    && self.targets.key(other).is_some_and(|k| same_addr(&k.src, &src))
            });
        let Some(t) = self.targets.get_mut(id) else { return };
        t.credit = match t.credit {
            TargetCredit::None if echoed => TargetCredit::Echo { target, ccc_id },
            TargetCredit::None => match self.pulls.join(id, src, ccc_id, target) {
                Some(flow) => TargetCredit::Paced(flow),
                None => TargetCredit::Echo { target, ccc_id },
            },
            // A PDC granted at once stays so, with the largest target it saw (24-bit counts).
            TargetCredit::Echo { target: last, ccc_id } => {
                let ahead = target.wrapping_sub(last) & 0x00FF_FFFF;
                TargetCredit::Echo { target: if ahead < 1 << 23 { target } else { last }, ccc_id }
            }
            TargetCredit::Paced(flow) => {
                if let Some(o) = self.pulls.owner_mut(flow) {
                    o.pdc = Some(id);
                }
                if let Some(pacer) = self.pulls.pacer.as_mut() {
                    // A target beyond a window past the grants is clamped (`RcccStats::clamped`).
                    let _ = pacer.on_target(flow, target);
                }
                TargetCredit::Paced(flow)
            }
        };
    }

    /// A CREDIT_REQ carrying pull target `target` arrived on target PDC `id` from `src`: taken
    /// as a request's, for the session the PDC carries (one that carries none has no session to
    /// name, and ignores it).
    pub(super) fn on_credit_request(&mut self, id: u16, src: IpAddr, target: u32) {
        let ccc_id = match self.targets.get(id).map(|t| t.credit) {
            Some(TargetCredit::Paced(flow)) => self.pulls.owner_mut(flow).map(|o| o.ccc_id),
            Some(TargetCredit::Echo { ccc_id, .. }) => Some(ccc_id),
            _ => None,
        };
        if let Some(ccc_id) = ccc_id {
            self.on_credit_target(id, src, RequestCc { ccc_id, credit_target: target });
        }
    }

    /// A request of target PDC `id` arrived trimmed: its flow is queued for a pull.
    pub(super) fn on_credit_trimmed(&mut self, id: u16) {
        let flow = match self.targets.get(id).map(|t| t.credit) {
            Some(TargetCredit::Paced(flow)) => flow,
            _ => return,
        };
        if let Some(pacer) = self.pulls.pacer.as_mut() {
            let _ = pacer.on_trimmed(flow);
        }
    }

    /// Target PDC `id` is being removed: it leaves its flow, whose CREDIT packets go from
    /// another PDC carrying it if it sent them. O(P).
    pub(super) fn release_credit(&mut self, id: u16) {
        let Some(t) = self.targets.get_mut(id) else { return };
        let TargetCredit::Paced(flow) = core::mem::take(&mut t.credit) else { return };
        self.pulls.leave(id, flow);
        if let Some(o) = self.pulls.owner_mut(flow).filter(|o| o.pdc.is_none()) {
            o.pdc = self.targets.iter().find(|(_, t)| t.credit == TargetCredit::Paced(flow)).map(|(other, _)| other);
        }
    }

    /// `ack` of target PDC `credit`'s, carrying its cumulative grant (an ACK_CC of credit state)
    /// when the PDC takes part in RCCC.
    pub(super) fn ack_with_credit(&self, credit: TargetCredit, mut ack: crate::pds::Ack) -> crate::pds::Ack {
        if let (Some(granted), AckExtension::Cc(cc)) = (self.pulls.granted(credit), &mut ack.ext) {
            let ooo_count = match cc.state {
                CcState::Nscc { ooo_count, .. } | CcState::Credit { ooo_count, .. } => ooo_count,
            };
            *cc = AckCc { state: CcState::Credit { credit: granted, ooo_count }, ..*cc };
        }
        ack
    }

    /// The next pull of the pacer, if one is due: a CREDIT control packet from the target PDC
    /// its flow serves.
    pub(super) fn transmit_pull(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        while let Some(pull) = self.pulls.pacer.as_mut().and_then(|p| p.poll_pull(now)) {
            // A flow no PDC carries any more ends with its last one; `pdc` is set while any does.
            let Some(id) = self.pulls.owner_mut(pull.flow).and_then(|o| o.pdc) else { continue };
            let (Some(dst), Some(t)) = (self.targets.key(id).map(|k| k.src), self.targets.get(id)) else { continue };
            if t.pdc.ack_due() {
                // The ACK about to go carries the grant: no CREDIT packet is needed.
                continue;
            }
            let credit = t.pdc.credit(pull.granted);
            return Ok(Some(super::transmit::header_only(dst, emit(out, &PdsHeader::Control(credit))?)));
        }
        Ok(None)
    }

    /// The RCCC part of [`Endpoint::check_invariants`]: each flow is held by the pacer and
    /// counts the target PDCs that carry it, its sending PDC among them; no two serve one session.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn check_credit(&self) -> Result<(), &'static str> {
        let owners = self.pulls.owners.iter().flatten();
        for (k, o) in owners.clone().enumerate() {
            if self.pulls.pacer.as_ref().and_then(|p| p.flow(o.flow)).is_none() {
                return Err("a pull flow the pacer does not hold");
            }
            let carried = self.targets.iter().filter(|(_, t)| t.credit == TargetCredit::Paced(o.flow)).count();
            if carried != usize::from(o.refs) || o.refs == 0 {
                return Err("a pull flow's count of target PDCs is wrong");
            }
            if o.pdc.is_some_and(|id| self.targets.get(id).map(|t| t.credit) != Some(TargetCredit::Paced(o.flow))) {
                return Err("a pull flow sends from a PDC that does not carry it");
            }
            if owners.clone().skip(k + 1).any(|p| (p.src, p.ccc_id) == (o.src, o.ccc_id) || p.flow == o.flow) {
                return Err("two pull flows serve one CCC session");
            }
        }
        if self.targets.iter().any(|(_, t)| matches!(t.credit, TargetCredit::Paced(f) if self.pulls.owners.iter().flatten().all(|o| o.flow != f))) {
            return Err("a target PDC carries a flow nobody owns");
        }
        Ok(())
    }
}
