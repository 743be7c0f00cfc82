//! Which PDC a received packet belongs to: the entry points for received packets, the key and
//! id lookups, SYN handling and late-SYN memory, the source check, and the NACKs for packets that
//! name no PDC here.

use super::*;
use crate::pds::ControlType;

/// Which end of a PDC a packet is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Initiator,
    Target,
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
    /// Takes a received packet: PDS header on, without any CRC trailer (a trailer left on would
    /// be taken for payload; packets that carry one go to [`Endpoint::handle_crc_packet`]).
    /// Returns where a new request's payload belongs. For a packet that arrived CE-marked, call
    /// [`Endpoint::handle_ce_packet`] instead.
    ///
    /// An endpoint in a secure domain ([`EndpointConfig::secure`]) trusts whatever this and the
    /// other clear entry points give it: hand them only plaintext that TSS authenticated (an
    /// inline engine's output), and packets that arrived sealed to
    /// [`Endpoint::handle_sealed_packet`]. A packet that arrived without TSS is not for a secure
    /// endpoint: anyone could have sent it (uet-ref-prov sends its NACKs for an unknown PDC in
    /// clear; dropping them costs only the initiator's quicker failure, after its RTO retries).
    pub fn handle_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        self.handle_any_packet(now, src, bytes, false)
    }

    /// [`Endpoint::handle_packet`] for a packet whose IP header carried ECN CE (congestion
    /// experienced): the ACK for it sets the M flag, and with `ACK_On_ECN` it is sent at once.
    pub fn handle_ce_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        self.handle_any_packet(now, src, bytes, true)
    }

    /// [`Endpoint::handle_packet`] (or, with `ce`, [`Endpoint::handle_ce_packet`]) for a packet
    /// that ends with its CRC32C trailer: the trailer is checked over `crc_prefix ‖` the packet,
    /// then the packet is handled, in one call and one pass over its bytes. The prefix is the IP
    /// source and destination addresses as the IP header carries them, then the UDP header (UDP
    /// framing) or the entropy header (native-IP framing):
    /// [`CrcPrefix::ip(&src, &own_address)`](crate::packet::CrcPrefix::ip) with `.with_udp(..)`
    /// or `.with_entropy(..)`, see [`packet`](crate::packet). A wrong trailer is
    /// `Malformed(Error::Crc { .. })` and changes nothing; so is one computed with another
    /// prefix.
    ///
    /// The sender's side: [`append_crc`](crate::packet::append_crc) after the payload that
    /// [`Endpoint::poll_transmit`] names, with the prefix of the packet's own direction. A buffer
    /// of [`MAX_HEADER_LEN`] + `mtu` + [`CRC_LEN`](crate::packet::CRC_LEN) bytes holds any packet
    /// built in place.
    pub fn handle_crc_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
        crc_prefix: &[u8],
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        let covered = crate::packet::check_crc(crc_prefix, bytes)?;
        self.handle_any_packet(now, src, covered, ce)
    }

    /// Opens a packet sealed by TSS with `domain` and handles its plaintext, in one call (see
    /// [`Secure`]). `datagram` holds the TSS header, the ciphertext and the ICV (the UDP payload,
    /// or what follows the entropy header, whose bytes `framing` carries); it is decrypted in
    /// place. A packet TSS refuses (forged, corrupted, replayed, another domain, an unknown key)
    /// is `Err(EndpointError::Tss(..))`, counted in the domain's statistics, and changes no PDC
    /// state. `ce`: the packet arrived CE-marked.
    ///
    /// The sender's side: [`SecureDomain::seal`](crate::tss::SecureDomain::seal) after the
    /// payload that [`Endpoint::poll_transmit`] names, with the path from this endpoint to
    /// [`Transmit::dst`].
    pub fn handle_sealed_packet<'a, const DS: usize, const DW: usize>(
        &mut self,
        now: Instant,
        src: IpAddr,
        datagram: &'a mut [u8],
        domain: &mut crate::tss::SecureDomain<DS, DW>,
        framing: crate::tss::Framing,
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        if self.cfg.is_none() {
            return Err(EndpointError::Unconfigured);
        }
        let path = crate::tss::Path::new(src, self.config().addr, framing);
        let opened = domain.open(datagram, &path).map_err(EndpointError::Tss)?;
        let plain: &'a [u8] = datagram;
        self.handle_any_packet(now, src, plain.get(opened.body).unwrap_or_default(), ce)
    }

    pub(super) fn handle_any_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        if self.cfg.is_none() {
            return Err(EndpointError::Unconfigured);
        }
        let (pds, rest) = PdsHeader::parse(bytes)?;
        self.now = self.now.max(now);
        let now = self.now;
        match pds {
            // Read data comes back from the target as a request with next header RSP_DATA.
            PdsHeader::Request(r) if r.next_header == NextHeader::RspData => {
                self.handle_read_data(now, src, r, rest, ce)
            }
            PdsHeader::Request(r) => self.handle_request(now, src, r, rest, ce),
            PdsHeader::Ack(a) => {
                match self.side_of(a.dpdcid, a.spdcid, src) {
                    Some(Side::Initiator) if a.next_header != NextHeader::None => {
                        return self.response_ack(now, &a, rest);
                    }
                    Some(Side::Initiator) => self.on_initiator(now, a.dpdcid, |p, ret, cfg| {
                        p.handle_ack(ret, now, cfg, &a).map(|o| (Marked::Sack(o.lost), CcSignal::of_ack(&a, &o)))
                    }),
                    Some(Side::Target) => self.on_target(now, a.dpdcid, |t, held, ret, cfg| {
                        t.handle_ack(held, ret, now, cfg, &a).map(|o| Marked::Sack(o.lost))
                    }),
                    None => {}
                }
                Ok(None)
            }
            PdsHeader::Nack(n) => {
                self.stats.nacks_received.add(n.code);
                match n.target {
                    NackTarget::Pdc { dpdcid, spdcid, psn } => match self.side_of(dpdcid, spdcid, src) {
                        Some(Side::Initiator) => self.on_initiator(now, dpdcid, |p, ret, cfg| {
                            let lost = p.window().lost_count();
                            p.handle_nack(ret, now, cfg, &n)?;
                            let signal =
                                CcSignal::Nack { code: n.code, psn, ecn: n.flags.contains(crate::pds::NackFlags::M) };
                            Ok((Marked::Nack(p.window().lost_count().saturating_sub(lost)), signal))
                        }),
                        Some(Side::Target) => self.on_target(now, dpdcid, |t, held, ret, cfg| {
                            let lost = ret.window().lost_count();
                            t.handle_nack(held, ret, now, cfg, &n)?;
                            Ok(Marked::Nack(ret.window().lost_count().saturating_sub(lost)))
                        }),
                        None => {}
                    },
                    NackTarget::Rudi { pkt_id, .. } => self.rudi_nacked(now, pkt_id, n.code),
                }
                Ok(None)
            }
            PdsHeader::Control(c) => {
                match c.dest {
                    // Control packets to an initiator come from its target (CLOSE_REQ, ACK_REQ
                    // probing the return direction, CLEAR_REQ, CREDIT); to a target from its
                    // initiator. The id ranges say which.
                    PdcDest::Established { dpdcid } => {
                        if self.initiators.get(dpdcid).is_some() {
                            if self.side_of(dpdcid, c.spdcid, src) == Some(Side::Initiator) {
                                if c.ctl_type == ControlType::Credit {
                                    // RCCC's grant is the CCC's, not the PDC's (see `credit`).
                                    let ccc = self.initiators.get(dpdcid).and_then(|p| p.ccc);
                                    if ccc.and_then(|c| self.cccs.get(c)).is_some_and(|c| c.credit.is_some()) {
                                        let grant = CcSignal::Grant(c.payload);
                                        self.on_initiator(now, dpdcid, |_, _, _| Ok((Marked::Nothing, grant)));
                                    } else {
                                        self.stats.stray_grants = self.stats.stray_grants.wrapping_add(1);
                                    }
                                } else if self
                                    .initiators
                                    .get_mut(dpdcid)
                                    .and_then(|p| self.receivers.take(&mut p.ret))
                                    .is_some()
                                {
                                    // A CLOSE_REQ or ACK_REQ takes a PSN of the return direction
                                    // (a CLEAR_REQ, which takes none, goes the same way).
                                    let mut taken = false;
                                    self.on_initiator(now, dpdcid, |p, ret, _| {
                                        // Taken just above, so never `None`.
                                        let Some(ret) = ret else { return Ok((Marked::Nothing, CcSignal::None)) };
                                        p.handle_control(ret, now, &c)?;
                                        taken = true;
                                        Ok((Marked::Nothing, CcSignal::None))
                                    });
                                    // The ACK of a CLOSE_REQ the PDC took goes bare (one it refused,
                                    // from a peer it does not know yet, say, names no PSN of it).
                                    if let Some(p) = self
                                        .initiators
                                        .get_mut(dpdcid)
                                        .filter(|_| taken && c.ctl_type == ControlType::CloseReq)
                                    {
                                        p.close_req_psn = Some(c.psn);
                                    }
                                } else {
                                    // Every return direction is in use: dropped, as if lost.
                                    self.stats.return_receiver_drops = self.stats.return_receiver_drops.wrapping_add(1);
                                }
                            }
                        } else if c.ctl_type != ControlType::CloseReq {
                            self.control_to_target(now, src, dpdcid, &c);
                        } else if self.targets.get(dpdcid).is_none() {
                            // A CLOSE_REQ for an initiator PDC gone from here (closed, failed, or
                            // forgotten by `init`): NACK INV_DPDCID, as uet-ref-prov does for a
                            // packet naming no PDC, so its target closes now instead of after
                            // its CLOSE_REQ's retries.
                            self.nack_unknown(src, c.psn, c.spdcid);
                        }
                    }
                    PdcDest::Syn { .. } => {
                        let key = PeerSource { src, spdcid: c.spdcid };
                        if let Some(id) = self.targets.find(&key) {
                            self.control_to_target(now, src, id, &c);
                        }
                    }
                }
                Ok(None)
            }
            PdsHeader::Rudi(r) if r.response => {
                self.rudi_answered(&r, rest);
                Ok(None)
            }
            PdsHeader::Rudi(r) => self.handle_connectionless(src, r.next_header, Some(r), rest),
            PdsHeader::Uud(u) => self.handle_connectionless(src, u.next_header, None, rest),
        }
    }

    /// Takes a request that arrived trimmed (its payload cut by a switch; the caller knows from
    /// the packet's marking): the target PDC NACKs it TRIMMED (TRIMMED_LASTHOP with `last_hop`) so
    /// the initiator resends at once. Nothing is recorded.
    pub fn handle_trimmed(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &[u8],
        last_hop: bool,
    ) -> Result<(), EndpointError> {
        if self.cfg.is_none() {
            return Err(EndpointError::Unconfigured);
        }
        let (pds, _) = PdsHeader::parse(bytes)?;
        self.now = self.now.max(now);
        let PdsHeader::Request(r) = pds else { return Err(EndpointError::Unsupported) };
        let id = match r.dest {
            PdcDest::Established { dpdcid } if !self.is_from_initiator_of(dpdcid, src) => {
                self.queue_nack(src, refusal(NackCode::PdcHdrMismatch, &r, dpdcid));
                return Ok(());
            }
            PdcDest::Established { dpdcid } => Some(dpdcid),
            PdcDest::Syn { .. } => self.targets.find(&PeerSource { src, spdcid: r.spdcid }),
        };
        match id.and_then(|id| Some((id, self.targets.get_mut(id)?))) {
            // Its NACK leaves through the PDC's `poll_transmit`.
            Some((id, t)) => {
                let _ = t.pdc.handle_trimmed(&r, last_hop);
                // Its pull target counts (the simulator's `processTrimmed`), and its flow is
                // queued for a pull.
                if let Some(cc) = r.cc {
                    self.on_credit_target(id, src, cc);
                }
                self.on_credit_trimmed(id);
                self.refresh_target(id, false);
            }
            // No PDC yet (a trimmed SYN): NACK it so the initiator resends; the resend creates it.
            None => {
                let code = if last_hop { NackCode::TrimmedLastHop } else { NackCode::Trimmed };
                self.queue_nack(src, refusal(code, &r, 0));
            }
        }
        Ok(())
    }

    /// The target PDC a request from `src` belongs to: the one its DPDCID names (NACK INV_DPDCID
    /// if there is none, PDC_HDR_MISMATCH if `src` is not its initiator), or for a SYN the one of
    /// its key, else a new one (none for a late copy of a closed PDC's SYN, NACK NO_PDC_AVAIL when
    /// the table is full). `None`: the request is answered or dropped here.
    pub(super) fn target_for_request(&mut self, now: Instant, src: IpAddr, r: &Request) -> Option<u16> {
        match r.dest {
            PdcDest::Established { dpdcid } => {
                if self.targets.get(dpdcid).is_none() {
                    self.nack_unknown(src, r.psn, r.spdcid);
                    return None;
                }
                if !self.is_from_initiator_of(dpdcid, src) {
                    self.queue_nack(src, refusal(NackCode::PdcHdrMismatch, r, dpdcid));
                    return None;
                }
                Some(dpdcid)
            }
            PdcDest::Syn { .. } => {
                let key = PeerSource { src, spdcid: r.spdcid };
                let bucket = self.targets.bucket_of(&key);
                if let Some(id) = self.targets.find_in(&key, bucket) {
                    return Some(id);
                }
                if r.start_psn().is_some_and(|s| self.is_late_syn(now, &key, s)) {
                    return None;
                }
                let Some(id) = self.targets.next_id() else {
                    self.close_idle_target(now);
                    self.queue_nack(src, refusal(NackCode::NoPdcAvail, r, 0));
                    return None;
                };
                let policy = self.start_policy();
                let pdc = TargetCore::new(now, &self.config().pdc, id, r, policy).ok()?;
                let tgt = TgtPdc {
                    ret: ReturnAt::Idle(IdleReturn::new(pdc.start_psn())),
                    own: HeldResponses::EMPTY,
                    held: HeldAt::NONE,
                    pdc,
                    order: MessageOrder::new(),
                    answer: AckAnswer::default(),
                    runs: SlotList::default(),
                    credit: TargetCredit::None,
                };
                self.targets.insert_in(bucket, key, tgt).ok().map(|_| id)
            }
        }
    }

    /// With the target table full, asks the target PDC idle longest to close (CLOSE_REQ), so that
    /// the initiator the SYN came from, NACKed NO_PDC_AVAIL, finds room when it retries
    /// (project-defined, mirroring the initiator table's eviction: UE 1.0 §3.5.8.3 lets a target
    /// ask for a close; otherwise a PDC its initiator forgot, after a failure, holds its slot
    /// until the idle timeout). One at a time: none while the last one asked still closes and its
    /// initiator answers, that is until a `Close_REQ_Time` passes without a packet from it. Its
    /// return direction carries the CLOSE_REQ; while the last one asked still waits, the next
    /// takes one only if another stays free: PDCs asked to close whose initiators are silent hold
    /// theirs until they close in error (or, under unlimited retransmissions, time out idle),
    /// and read data must still find one.
    fn close_idle_target(&mut self, now: Instant) {
        let evicting = self.evicting_target.and_then(|id| self.targets.get(id));
        let waiting = evicting.filter(|t| t.pdc.state() == TargetState::CloseReqWait);
        let room = D.saturating_sub(self.returns.used()) >= 2;
        if waiting.is_some_and(|t| t.pdc.close_req_periods() == 0 || !room) {
            return;
        }
        self.evicting_target = None;
        let Some(index) = self.targets_idle.first() else { return };
        let Some(id) = self.targets.id_at(usize::from(index)) else { return };
        let cfg = &configured(&self.cfg).pdc;
        let Some(t) = self.targets.get_mut(id) else { return };
        let Some(ret) = self.returns.take(&mut t.ret) else { return };
        if self.helds.with(&mut t.held, &mut t.own, |held| t.pdc.request_close(held, ret, now, cfg)).is_err() {
            self.returns.settle(&mut t.ret);
            return;
        }
        self.evicting_target = Some(id);
        self.stats.idle_targets_closed = self.stats.idle_targets_closed.wrapping_add(1);
        self.refresh_target(id, false);
    }

    /// Which end of PDC `id` an ACK, NACK or CLOSE_REQ from `src` naming `peer_id` as its sender
    /// (0: not named) is for: initiator and target ids come from disjoint ranges, and the PDC's
    /// peer must have that address and id. A packet for a PDC here from an address other than its
    /// peer's is counted a source mismatch; `None` drops it.
    pub(super) fn side_of(&mut self, id: u16, peer_id: u16, src: IpAddr) -> Option<Side> {
        let named = |remote: Option<u16>| peer_id == 0 || remote.is_none_or(|r| r == peer_id);
        // Whether each end has PDC `id`, and if so whether its peer is `src` (compared where the
        // keys lie: an address copied out is a `memcpy` call on a small core).
        let ini = self.initiators.key(id).map(|k| same_addr(&k.dst, &src));
        let tgt = self.targets.key(id).map(|k| same_addr(&k.src, &src));
        if ini == Some(true) && self.initiators.get(id).is_some_and(|p| named(self.senders.remote_id(&p.pdc))) {
            return Some(Side::Initiator);
        }
        if tgt == Some(true) && self.targets.get(id).is_some_and(|t| named(Some(t.pdc.remote_id()))) {
            return Some(Side::Target);
        }
        if (ini.is_some() || tgt.is_some()) && ini != Some(true) && tgt != Some(true) {
            self.stats.source_mismatches = self.stats.source_mismatches.wrapping_add(1);
        }
        None
    }

    /// Whether a request or control packet from `src` may touch target PDC `id`: it comes from
    /// the PDC's initiator (else NACK PDC_HDR_MISMATCH, UE 1.0 Table 3-58: "a non-SYN packet that
    /// does not match the PDC's state, e.g. its source IP"). A mismatch is counted; no such PDC is
    /// not a mismatch.
    pub(super) fn is_from_initiator_of(&mut self, id: u16, src: IpAddr) -> bool {
        let ok = self.targets.key(id).is_none_or(|k| same_addr(&k.src, &src));
        if !ok {
            self.stats.source_mismatches = self.stats.source_mismatches.wrapping_add(1);
        }
        ok
    }

    /// Queues a NACK for the next `poll_transmit`. When the queue is full the NACK is dropped:
    /// NACKs only speed recovery up, and the sender's timers cover their loss.
    pub(super) fn queue_nack(&mut self, dst: IpAddr, n: Nack) {
        let _ = self.nacks.push_back((dst, n));
    }

    /// NACK INV_DPDCID for a packet that names no PDC here.
    pub(super) fn nack_unknown(&mut self, src: IpAddr, psn: u32, spdcid: u16) {
        self.queue_nack(src, Nack::for_pdc(NackCode::InvDpdcid, psn, 0, spdcid));
    }

    /// Whether a SYN request with `start_psn` for `key` is a late copy of a packet of a target
    /// PDC closed at most `New_PDC_Time` ago (see the module doc).
    pub(super) fn is_late_syn(&self, now: Instant, key: &PeerSource, start_psn: u32) -> bool {
        self.closed_targets.iter().any(|c| c.key == *key && c.start_psn == start_psn && now < c.until)
    }

    /// Applies `f` to initiator PDC `id`, then settles messages and events. A refused packet
    /// changes nothing; there is nothing to answer.
    pub(super) fn on_initiator(
        &mut self,
        now: Instant,
        id: u16,
        f: impl FnOnce(
            &mut InitiatorCore,
            Option<&mut ReturnReceiver<2>>,
            &PdcConfig,
        ) -> Result<(Marked, CcSignal), crate::pdc::PdcError>,
    ) {
        let cfg = &configured(&self.cfg).pdc;
        if let Some(p) = self.initiators.get_mut(id) {
            let ret = self.receivers.get_mut(p.ret);
            let Some(outcome) = self.senders.with_kept(&mut p.pdc, |pdc| f(pdc, ret, cfg)) else {
                // It would have made an idle PDC send, with every request direction in use (its
                // return direction may have changed: the lists see to it).
                self.stats.request_direction_drops = self.stats.request_direction_drops.wrapping_add(1);
                self.refresh_initiator(id, false);
                return;
            };
            let (marked, signal) = outcome.unwrap_or((Marked::Nothing, CcSignal::None));
            self.stats.after_initiator_call(marked, &self.senders.sender(&p.pdc).rtt());
            self.cc_signal = signal;
            self.after_initiator_change(now, id);
        }
    }

    /// Applies `g` to target PDC `id` and its return direction (an ACK or NACK of it), then
    /// settles it.
    pub(super) fn on_target(
        &mut self,
        now: Instant,
        id: u16,
        g: impl FnOnce(
            &mut TargetCore<2, R>,
            &mut Tiered<'_, R>,
            &mut ReturnDirection<2>,
            &PdcConfig,
        ) -> Result<Marked, crate::pdc::PdcError>,
    ) {
        let cfg = &configured(&self.cfg).pdc;
        if let Some(t) = self.targets.get_mut(id) {
            let returns = &mut self.returns;
            let run = |held: &mut Tiered<'_, R>| returns.with(&mut t.ret, |ret| g(&mut t.pdc, held, ret, cfg));
            if let Some(Ok(n)) = self.helds.with(&mut t.held, &mut t.own, run) {
                self.stats.resends.count(n);
            }
            self.after_target_change(now, id);
        }
    }

    pub(super) fn control_to_target(&mut self, now: Instant, src: IpAddr, id: u16, c: &crate::pds::Control) {
        if !self.is_from_initiator_of(id, src) {
            self.queue_nack(src, Nack::for_pdc(NackCode::PdcHdrMismatch, c.psn, id, c.spdcid));
            return;
        }
        let Some(t) = self.targets.get_mut(id) else {
            self.nack_unknown(src, c.psn, c.spdcid);
            return;
        };
        if c.ctl_type == crate::pds::ControlType::CreditReq {
            // RCCC: a pull target outside a request (the simulator's RTS). It raises the flow's
            // target of a paced PDC, and is ignored by any other (it takes no PSN; a NACK would
            // close the sender's PDC).
            self.on_credit_request(id, src, c.payload);
            return;
        }
        // A refused control packet's NACK leaves through the PDC's `poll_transmit`.
        let ret = self.returns.get_mut(t.ret);
        let cfg = &configured(&self.cfg).pdc;
        let _ = self.helds.with(&mut t.held, &mut t.own, |held| t.pdc.handle_control(held, ret, now, cfg, c));
        self.after_target_change(now, id);
    }
}
