//! Sending: `poll_transmit` and the packets it writes — control packets the PDCs owe first,
//! then new requests, the PDCs with some taking turns — and the PDC a new message goes on.

use super::*;

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
    /// The next packet to send, its headers written to the front of `out`, which must hold
    /// [`MAX_HEADER_LEN`] bytes (checked first, so a short buffer changes nothing). NACKs go
    /// first, then resends and control packets, then ACKs, then new packets of queued messages:
    /// the PDCs with one to send take turns, a packet each (each PDC sends its messages in the
    /// order they were queued), and RUDI, UUD and read data go when they are older than the
    /// message whose turn it is.
    ///
    /// In a secure domain ([`EndpointConfig::secure`]) the headers start after
    /// [`Secure::header_room`] bytes left for the TSS header, which [`Transmit::header_len`]
    /// counts, and `out` must hold that much more.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        let room = self.config().secure.map_or(0, |s| usize::from(s.header_room));
        let Some(rest) = out.get_mut(room..).filter(|r| r.len() >= MAX_HEADER_LEN) else {
            return Err(EndpointError::BufferTooShort);
        };
        let t = self.transmit_into(now, rest)?;
        Ok(t.map(|t| Transmit { header_len: t.header_len + room, ..t }))
    }

    /// [`Endpoint::poll_transmit`] for an endpoint in a secure domain, with the packet finished
    /// and sealed in one call: the headers are written after the TSS header's room, `payload`
    /// gives the bytes the [`Transmit`] names ([`Transmit::payload`] or [`Transmit::read`]; it
    /// is not called for a packet without), which are copied after them, and `domain` seals the
    /// whole. Returns the transmit and the sealed packet's length, `out[..n]`.
    ///
    /// `out` must hold [`Secure::header_room`] + [`MAX_HEADER_LEN`] + `mtu` + 16 bytes (checked
    /// first, so a short buffer changes nothing). A `payload` slice of another length than the
    /// transmit names is `Err(EndpointError::PayloadLength)`, as is a refusal by the domain
    /// (`Err(EndpointError::Tss(..))`): the packet counts as sent and its PDC resends it.
    pub fn poll_transmit_sealed<'p, const DS: usize, const DW: usize>(
        &mut self,
        now: Instant,
        out: &mut [u8],
        domain: &mut crate::tss::SecureDomain<DS, DW>,
        framing: crate::tss::Framing,
        payload: impl FnOnce(&Transmit) -> &'p [u8],
    ) -> Result<Option<(Transmit, usize)>, EndpointError> {
        let room = self.config().secure.map_or(0, |s| usize::from(s.header_room));
        let need = room + MAX_HEADER_LEN + usize::from(self.config().mtu) + crate::tss::ICV_LEN;
        if out.len() < need {
            return Err(EndpointError::BufferTooShort);
        }
        let Some(t) = self.poll_transmit(now, out)? else { return Ok(None) };
        let named = t.payload.map(|p| p.len).or(t.read.map(|r| r.len)).map_or(0, usize::from);
        let len = t.header_len + named;
        if named > 0 {
            let bytes = payload(&t);
            let dst = out.get_mut(t.header_len..len).filter(|d| d.len() == bytes.len());
            dst.ok_or(EndpointError::PayloadLength)?.copy_from_slice(bytes);
        }
        let path = crate::tss::Path::new(self.config().addr, t.dst, framing);
        let n = domain.seal(out, len, &path).map_err(EndpointError::Tss)?;
        Ok(Some((t, n)))
    }

    /// [`Endpoint::poll_transmit`] with `out` starting where the PDS header goes.
    fn transmit_into(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        self.now = self.now.max(now);
        let now = self.now;
        if let Some((dst, n)) = self.nacks.front().copied() {
            let header_len = emit(out, &PdsHeader::Nack(n))?;
            self.nacks.pop_front();
            self.stats.nacks_sent.add(n.code);
            return Ok(Some(header_only(dst, header_len)));
        }
        if let Some(t) = self.transmit_pull(now, out)? {
            return Ok(Some(t));
        }
        if let Some((dst, r, rsp)) = self.rudi_responses.front().copied() {
            let n = emit(out, &PdsHeader::Rudi(r))?;
            let k = rsp.emit(out.get_mut(n..).unwrap_or_default()).map_err(|_| EndpointError::BufferTooShort)?;
            self.rudi_responses.pop_front();
            return Ok(Some(header_only(dst, n + k)));
        }
        if let Some(t) = self.transmit_rudi_resend(now, out)? {
            return Ok(Some(t));
        }
        if let Some(t) = self.transmit_initiator_pending(now, out)? {
            return Ok(Some(t));
        }
        if let Some(t) = self.transmit_target_pending(now, out)? {
            return Ok(Some(t));
        }
        self.transmit_new(now, out)
    }

    pub(super) fn transmit_initiator_pending(
        &mut self,
        now: Instant,
        out: &mut [u8],
    ) -> Result<Option<Transmit>, EndpointError> {
        while let Some(index) = self.initiators_ready.first() {
            // Served or not, it leaves the front; `after_initiator_change` puts it at the back
            // while it has more (round robin over the PDCs with something to send).
            self.initiators_ready.unlink(&mut self.initiators_ready_links, index);
            let Some(id) = self.initiators.id_at(usize::from(index)) else { continue };
            let Some(dst) = self.initiators.key(id).map(|k| k.dst) else { continue };
            let Some(p) = self.initiators.get_mut(id) else { continue };
            let ret = self.receivers.get_mut(p.ret);
            // What an idle PDC has to send (its return direction's ACKs) leaves it idle.
            let Some(tx) = self.senders.with_kept(&mut p.pdc, |pdc| pdc.poll_transmit(ret, now)).flatten() else {
                // Nothing after all (resends still held): its deadline may have moved, and it
                // stays off the ready list until its next change (so this loop ends).
                self.refresh_initiator(id, false);
                self.initiators_ready.unlink(&mut self.initiators_ready_links, index);
                continue;
            };
            let t = match tx {
                InitiatorTx::Resend(stamp) => {
                    let Some((slot, index)) = self.message_at(id, stamp.psn) else {
                        self.refresh_initiator(id, false);
                        continue;
                    };
                    self.write_request(out, id, slot, index, stamp)?
                }
                InitiatorTx::Control(c) => {
                    use crate::pds::ControlType::{AckReq, Probe};
                    let probe = matches!(c.ctl_type, AckReq | Probe);
                    if probe {
                        self.stats.resends.probes = self.stats.resends.probes.wrapping_add(1);
                    }
                    // A probe draws a path as a request does; other control packets are the
                    // caller's to route.
                    let t = header_only(dst, emit(out, &PdsHeader::Control(c))?);
                    Transmit { entropy: if probe { self.cc_entropy(id, None) } else { None }, ..t }
                }
                InitiatorTx::Nack(n) => {
                    self.stats.nacks_sent.add(n.code);
                    header_only(dst, emit(out, &PdsHeader::Nack(n))?)
                }
                InitiatorTx::Ack(a) => {
                    // The ACK of read data carries the DEFAULT_RESPONSE for it (the reference
                    // provider's target checks its `modified_length`).
                    // Older data gets RC_NULL, so every ACK of read data answers it; the ACK of a
                    // CLOSE_REQ is bare.
                    let named = a.ack_psn();
                    let rsp = p.answer.take_for(named);
                    let received = self.receivers.get(p.ret).is_some_and(|r| r.window().received(named));
                    let data = p.close_req_psn != Some(named) && received;
                    let rsp = rsp.or_else(|| data.then(|| p.answer.null()));
                    write_ack(out, dst, a, rsp)?
                }
            };
            self.after_initiator_change(now, id);
            return Ok(Some(t));
        }
        Ok(None)
    }

    pub(super) fn transmit_target_pending(
        &mut self,
        now: Instant,
        out: &mut [u8],
    ) -> Result<Option<Transmit>, EndpointError> {
        while let Some(index) = self.targets_ready.first() {
            // As for initiators: off the front, back at the end while it has more.
            self.targets_ready.unlink(&mut self.targets_ready_links, index);
            let Some(id) = self.targets.id_at(usize::from(index)) else { continue };
            let Some(dst) = self.targets.key(id).map(|k| k.src) else { continue };
            let Some(p) = self.targets.get_mut(id) else { continue };
            let ret = self.returns.get_mut(p.ret);
            // A block claimed for a response is its own again: answered or not by now.
            self.helds.unclaim(p.held);
            let Some(tx) = self.helds.with(&mut p.held, &mut p.own, |held| p.pdc.poll_transmit(held, ret, now)) else {
                self.refresh_target(id, false);
                self.targets_ready.unlink(&mut self.targets_ready_links, index);
                continue;
            };
            let credit = p.credit;
            let t = match tx {
                TargetTx::Ack(a) if a.next_header == NextHeader::RspData => {
                    // The ACK carries the guaranteed-delivery response with data held for its PSN.
                    let psn = a.ack_psn();
                    let held = self.helds.response(p.held, &p.own, psn).zip(self.helds.data(p.held, psn));
                    let a = self.ack_with_credit(credit, a);
                    match held {
                        Some((rsp, data)) => write_ack_with_data(out, dst, a, rsp, data)?,
                        // (Not reached: the ACK names a response with data only while one is held.)
                        None => write_ack(out, dst, a, None)?,
                    }
                }
                TargetTx::Ack(a) => {
                    let rsp = if a.next_header == NextHeader::Rsp {
                        // The ACK carries the guaranteed-delivery response held for its PSN.
                        self.helds.response(p.held, &p.own, a.ack_psn())
                    } else {
                        // Else the default response for the request it names: RC_OK if that is the
                        // one the PDC took last, else RC_NULL for any request it received (answering a
                        // probe or a CLEAR); nothing once the PDC closed (the CLOSE's ACK).
                        let named = a.ack_psn();
                        let last = p.answer.take_for(named);
                        let received =
                            p.pdc.state() != crate::pdc::TargetState::Closed && p.pdc.window().received(named);
                        last.or_else(|| received.then(|| p.answer.null()))
                    };
                    write_ack(out, dst, self.ack_with_credit(credit, a), rsp)?
                }
                TargetTx::Control(c) => header_only(dst, emit(out, &PdsHeader::Control(c))?),
                TargetTx::Nack(n) => {
                    self.stats.nacks_sent.add(n.code);
                    header_only(dst, emit(out, &PdsHeader::Nack(n))?)
                }
                TargetTx::Resend(stamp) => {
                    let run = self.runs_on(id).find_map(|slot| {
                        let m = self.msgs.get(slot)?.as_ref()?;
                        let index = stamp.psn.wrapping_sub(m.first_psn);
                        (index < m.sent).then_some((slot, index))
                    });
                    // Data no longer kept (its READ's PDC closed) is not resent.
                    let Some((slot, index)) = run else {
                        self.refresh_target(id, false);
                        continue;
                    };
                    self.write_read_data(out, slot, index, stamp)?
                }
            };
            self.after_target_change(now, id);
            return Ok(Some(t));
        }
        Ok(None)
    }

    /// The message slot holding PSN `psn` of initiator PDC `id`, and the packet's index in it
    /// (PSNs of a PDC's messages are consecutive).
    pub(super) fn message_at(&self, id: u16, psn: u32) -> Option<(usize, u32)> {
        self.started_on(id).find_map(|slot| {
            let m = self.msgs.get(slot)?.as_ref()?;
            let i = psn.wrapping_sub(m.first_psn);
            (i < m.sent).then_some((slot, i))
        })
    }

    /// Writes packet `index` of message `slot`, sent (or resent) on initiator PDC `id` as
    /// `stamp`: its PDS request with the congestion fields of the PDC's CCC, and its SES header;
    /// the transmit carries the entropy value the CCC draws for it.
    pub(super) fn write_request(
        &mut self,
        out: &mut [u8],
        id: u16,
        slot: usize,
        index: u32,
        stamp: crate::pdc::Stamp,
    ) -> Result<Transmit, EndpointError> {
        let cc = self.cc_request(id, slot);
        let entropy = self.cc_entropy(id, Some(stamp.psn));
        self.write_packet(out, slot, index, &PdsHeader::Request(stamp.request(NextHeader::ReqStd, cc)), entropy)
    }

    /// Writes packet `index` of read data run `slot` (a [`MsgKind::ReadData`]): the return
    /// direction's request header stamped `stamp` and RESPONSE_W_DATA.
    pub(super) fn write_read_data(
        &self,
        out: &mut [u8],
        slot: usize,
        index: u32,
        stamp: crate::pdc::Stamp,
    ) -> Result<Transmit, EndpointError> {
        let m = self.msgs.get(slot).and_then(MsgSlot::as_ref).ok_or(EndpointError::Unsupported)?;
        let MsgKind::ReadData { offset: run, read_length, .. } = m.kind else {
            return Err(EndpointError::Unsupported);
        };
        let seg = m.segments().segment(index).ok_or(EndpointError::Unsupported)?;
        let (offset, len) = (run + seg.offset, seg.len);
        // The READ's fields as the slot keeps them (what `sent_header` would build them from).
        let read = ReadRef { request: m.request, message_id: m.message_id, request_length: read_length, offset, len };
        let rsp = crate::ses::ResponseWithData {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::ResponseWithData,
            return_code: ReturnCode::Ok,
            message_id: m.message_id,
            job_id: m.request.common.job_id,
            read_request_message_id: m.message_id,
            payload_length: len,
            modified_length: read_length,
            message_offset: offset,
        };
        let n = emit(out, &PdsHeader::Request(stamp.request(NextHeader::RspData, None)))?;
        let k = rsp.emit(out.get_mut(n..).unwrap_or_default()).map_err(|_| EndpointError::BufferTooShort)?;
        Ok(Transmit { dst: m.dst, header_len: n + k, payload: None, read: Some(read), entropy: None })
    }

    /// Writes `pds` and the SES header of packet `index` of message `slot`, to go with
    /// `entropy`.
    pub(super) fn write_packet(
        &self,
        out: &mut [u8],
        slot: usize,
        index: u32,
        pds: &PdsHeader,
        entropy: Option<u16>,
    ) -> Result<Transmit, EndpointError> {
        let m = self.msgs.get(slot).and_then(MsgSlot::as_ref).ok_or(EndpointError::Unsupported)?;
        if let Some(seg) = m.msg_error(index) {
            return self.write_msg_error(out, m, seg, pds, entropy);
        }
        let seg = m.segments().segment(index).ok_or(EndpointError::Unsupported)?;
        let template = m.request.standard(m.message_id, m.len, self.extensions.get(m.ext));
        let ses = seg.standard_header(&template, m.len);
        let n = emit(out, pds)?;
        let k = ses.emit(out.get_mut(n..).unwrap_or_default()).map_err(|_| EndpointError::BufferTooShort)?;
        // READ requests carry no payload (a READ refused is `Cancelled`): their segments say
        // which data each asks for. Nor does a compare-and-swap: its extension carries its
        // operands.
        let requests = matches!(m.kind, MsgKind::Request | MsgKind::Cancelled { .. })
            && m.request.common.opcode != crate::ses::Opcode::Read;
        let carries = requests && self.extensions.carries_payload(m.ext);
        let payload = carries.then_some(PayloadRef { msg: m.handle(slot), offset: seg.offset, len: seg.len });
        Ok(Transmit { dst: m.dst, header_len: n + k, payload, read: None, entropy })
    }

    /// Writes `pds` and the MSG_ERROR `seg` that ends message `m`, cut short: its fields but its
    /// opcode and extension, with no payload.
    #[cold]
    #[inline(never)]
    fn write_msg_error(
        &self,
        out: &mut [u8],
        m: &SendMsg,
        seg: Segment,
        pds: &PdsHeader,
        entropy: Option<u16>,
    ) -> Result<Transmit, EndpointError> {
        let mut template = m.request.standard(m.message_id, m.len, None);
        template.common.opcode = crate::ses::Opcode::MsgError;
        let ses = seg.standard_header(&template, m.len);
        let n = emit(out, pds)?;
        let k = ses.emit(out.get_mut(n..).unwrap_or_default()).map_err(|_| EndpointError::BufferTooShort)?;
        Ok(Transmit { dst: m.dst, header_len: n + k, payload: None, read: None, entropy })
    }

    /// New packets: of the messages no PDC holds (RUDI, UUD, read data, messages whose key has
    /// no PDC yet, which get one here), oldest first while older than the message of the PDC whose
    /// turn it is; then of the PDCs' messages, one packet per PDC in turn.
    pub(super) fn transmit_new(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        if self.unsent.first().is_none() {
            return self.transmit_pdc_new(now, out);
        }
        let turns = self.turns();
        let turn = self.initiators_new.first().and_then(|index| {
            let id = self.initiators.id_at(usize::from(index))?;
            let p = self.initiators.get(id)?;
            let slot = p.next_new(self.senders.state(&p.pdc), turns)?;
            Some(self.msgs.get(usize::from(slot))?.as_ref()?.seq)
        });
        if let Some(t) = self.transmit_unheld(now, out, turn)? {
            return Ok(Some(t));
        }
        if let Some(t) = self.transmit_pdc_new(now, out)? {
            return Ok(Some(t));
        }
        if turn.is_none() {
            return Ok(None);
        }
        // No PDC could send after all: the rest of the walk, then the PDCs it opened.
        if let Some(t) = self.transmit_unheld(now, out, None)? {
            return Ok(Some(t));
        }
        self.transmit_pdc_new(now, out)
    }

    /// The next packet of the messages no PDC holds, oldest first, up to those newer than
    /// `turn`; a message waiting for a PDC gets one (its key's, opened if need be) and waits in
    /// its queue. When the walk opened a PDC and stopped early, the rest of the list is passed
    /// once more for messages whose key now has a PDC: one left behind would not keep its new
    /// PDC open, and would wait for another.
    fn transmit_unheld(
        &mut self,
        now: Instant,
        out: &mut [u8],
        turn: Option<u64>,
    ) -> Result<Option<Transmit>, EndpointError> {
        let (mut next, mut opened, mut sent) = (self.unsent.first(), false, None);
        while let Some(at) = next {
            next = SlotList::next(&self.unsent_links, at);
            let slot = usize::from(at);
            let Some(m) = self.msgs.get(slot).and_then(MsgSlot::as_ref) else { continue };
            if turn.is_some_and(|seq| m.seq > seq) {
                next = Some(at);
                break;
            }
            let (service, read_data) = (m.service, m.kind.read_data_pdc());
            sent = match (service, read_data) {
                (Service::Rudi, _) => self.transmit_rudi_new(now, out, slot)?,
                (Service::Uud, _) => Some(self.transmit_uud(out, slot)?),
                (_, Some(tpdc)) => self.transmit_read_data_new(now, out, slot, tpdc)?,
                (Service::Rud | Service::Rod, None) => {
                    // Its key's PDC, opened now if there is none (or, with the table full, later;
                    // one opened in the place of a PDC closed at once to make room leaves the
                    // table as full as it was).
                    if let Some((id, new)) = self.pdc_for(slot) {
                        opened |= new;
                        self.unsent.unlink(&mut self.unsent_links, at);
                        self.queue_on(id, slot);
                    }
                    None
                }
            };
            if sent.is_some() {
                break;
            }
        }
        if opened {
            self.queue_waiting_from(next);
        }
        Ok(sent)
    }

    /// Queues every message on the unsent list from `start` on whose key has an open PDC on
    /// that PDC.
    fn queue_waiting_from(&mut self, start: Option<u16>) {
        let mut next = start;
        while let Some(at) = next {
            next = SlotList::next(&self.unsent_links, at);
            let m = self.msgs.get(usize::from(at)).and_then(MsgSlot::as_ref);
            let waits = m.filter(|m| m.pdc.is_none() && m.kind.read_data_pdc().is_none());
            let Some(key) = waits.filter(|m| m.service.pdc_mode().is_some()).map(|m| m.key()) else {
                continue;
            };
            if let Some(id) = self.initiators.find(&key) {
                self.unsent.unlink(&mut self.unsent_links, at);
                self.queue_on(id, usize::from(at));
            }
        }
    }

    /// The next packet of a message of the PDC whose turn it is; a PDC served goes to the back of
    /// the list while it can send more.
    fn transmit_pdc_new(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        while let Some(index) = self.initiators_new.first() {
            self.initiators_new.unlink(&mut self.initiators_new_links, index);
            let Some(id) = self.initiators.id_at(usize::from(index)) else { continue };
            // A shut window: the PDC waits on its CCC's list until the window opens.
            let Some(fills) = self.cc_admits(id, index) else { continue };
            let turns = self.turns();
            let Some(p) = self.initiators.get_mut(id) else { continue };
            let slot = p.next_new(self.senders.state(&p.pdc), turns).map(usize::from);
            // Its request direction, taken from the pool if it was idle: none free (or PDCs
            // waiting for one), and it joins the PDCs waiting.
            let holder = matches!(p.pdc, SenderAt::Pooled(_));
            let pdc = if holder || !turns.yields { self.senders.take(&mut p.pdc) } else { None };
            if !holder && pdc.is_some() {
                p.took_turn = false;
            }
            let m = slot.and_then(|slot| self.msgs.get_mut(slot)?.as_mut());
            let sent = m.and_then(|m| {
                let last = m.sent + 1 == m.packets();
                Some((m, last, pdc?.send(now, &configured(&self.cfg).pdc, last || fills).ok()?))
            });
            let (Some(slot), Some((m, last, stamp))) = (slot, sent) else {
                // Nothing after all: off the list until its next change (so this loop ends).
                self.refresh_initiator(id, false);
                self.initiators_new.unlink(&mut self.initiators_new_links, index);
                continue;
            };
            if m.sent == 0 {
                p.queued.unlink(&mut self.pdc_links, slot as u16);
                p.messages += 1;
                p.took_turn = true;
                p.started.insert(&mut self.pdc_links, slot as u16, |_| true);
                m.message_id = p.next_message_id;
                m.first_psn = stamp.psn;
                p.next_message_id = p.next_message_id.wrapping_add(1);
            }
            let packet = m.sent;
            p.active = if last { SlotRef::NONE } else { SlotRef::to(slot) };
            self.count_sent(slot);
            self.refresh_initiator(id, false);
            // Built where it is returned (a transmit taken and rebuilt is copied twice).
            return self.write_request(out, id, slot, packet, stamp).map(Some);
        }
        Ok(None)
    }

    /// Sends read data `slot` on target PDC `tpdc` if its return window has room. AR is set when
    /// no other read data waits for that PDC, so the initiator's ACK follows the burst's last
    /// packet.
    fn transmit_read_data_new(
        &mut self,
        now: Instant,
        out: &mut [u8],
        slot: usize,
        tpdc: u16,
    ) -> Result<Option<Transmit>, EndpointError> {
        let cfg = &configured(&self.cfg).pdc;
        let waiting: u32 =
            self.runs_on(tpdc).filter_map(|slot| self.msgs.get(slot)?.as_ref()).map(|m| m.packets() - m.sent).sum();
        let Some(t) = self.targets.get_mut(tpdc) else { return Ok(None) };
        if self.returns.with(&mut t.ret, |ret| t.pdc.can_send(ret)) != Some(true) {
            return Ok(None);
        }
        // Its return direction, from the pool if it was idle: none free, and the data waits.
        let Some(ret) = self.returns.take(&mut t.ret) else {
            self.stats.return_direction_waits = self.stats.return_direction_waits.wrapping_add(1);
            return Ok(None);
        };
        let Ok(stamp) = t.pdc.send(ret, now, cfg, waiting <= 1) else {
            self.returns.settle(&mut t.ret);
            return Ok(None);
        };
        let Some(m) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut) else {
            self.refresh_target(tpdc, false);
            return Ok(None);
        };
        if m.sent == 0 {
            m.first_psn = stamp.psn;
        }
        let index = m.sent;
        self.count_sent(slot);
        self.refresh_target(tpdc, false);
        self.write_read_data(out, slot, index, stamp).map(Some)
    }

    /// With the initiator table full (or every CCC in use), closes the kept-open PDC idle
    /// longest to make room for a key without one (project-defined: UE 1.0 leaves when to close
    /// a PDC to the endpoint; with the table full, a PDC with nothing to do stands in the way of
    /// messages that wait). One at a time: none while the last one closed so still closes and
    /// its peer answers, that is until its CLOSE, sent, first times out; a peer that does not
    /// answer would otherwise hold the table for good under
    /// [`UNLIMITED_RTO_RETX`](crate::pdc::UNLIMITED_RTO_RETX). A PDC that never sent closes at
    /// once, and its slot is free on return.
    fn close_idle_longest(&mut self) {
        let still_closing = |p: &IniPdc, sender: returns::Sender<'_>| {
            let state = sender.state();
            let closing = p.close_wanted || !matches!(state, InitiatorState::Creating | InitiatorState::Established);
            // (A count left from before the close, by a CLEAR that timed out, does not count.)
            let unanswered = state == InitiatorState::CloseAckWait && sender.timeouts() > 0;
            closing && !unanswered
        };
        let evicting = self.evicting.and_then(|id| self.initiators.get(id));
        if evicting.is_some_and(|p| still_closing(p, self.senders.sender(&p.pdc))) {
            return;
        }
        self.evicting = None;
        let Some(index) = self.initiators_idle.first() else { return };
        let Some(id) = self.initiators.id_at(usize::from(index)) else { return };
        self.evicting = Some(id);
        self.stats.idle_pdcs_closed = self.stats.idle_pdcs_closed.wrapping_add(1);
        let now = self.now;
        self.close_initiator(now, id);
        self.after_initiator_change(now, id);
    }

    /// The PDC of message `slot`'s key, and whether it opened now: the open one, else a new one
    /// (while the table or the CCCs are full, none, the PDC idle longest closing to make room).
    pub(super) fn pdc_for(&mut self, slot: usize) -> Option<(u16, bool)> {
        let key = self.msgs.get(slot)?.as_ref()?.key();
        let bucket = match self.find_pdc(&key, slot) {
            Ok(id) => return Some((id, false)),
            Err(bucket) => bucket,
        };
        if self.initiators.next_id().is_none() {
            self.close_idle_longest();
        }
        let id = self.initiators.next_id()?;
        let Ok(ccc) = self.join_ccc(key.dst) else {
            // Kept-open PDCs may hold every CCC: the same room made.
            self.close_idle_longest();
            return None;
        };
        let start = self.random_start_psn(&key.dst);
        let mut pdc: InitiatorCore = InitiatorCore::new(&self.config().pdc, key.mode, id, start);
        if ccc.is_some() && self.config().cms.is_some_and(|c| c.sleek && c.controllers.nscc()) {
            pdc.use_sleek();
        }
        // A new PDC is idle until it sends.
        let opened = pdc.idle().and_then(|idle| {
            self.initiators
                .insert_in(
                    bucket,
                    key,
                    IniPdc {
                        start_psn: start,
                        pdc: SenderAt::Idle(idle),
                        ret: ReceiverAt::Idle(IdleReceiver::new(start)),
                        answer: AckAnswer::default(),
                        close_req_psn: None,
                        next_message_id: 0,
                        active: SlotRef::NONE,
                        messages: 0,
                        started: SlotList::default(),
                        queued: SlotList::default(),
                        ccc,
                        charged: 0,
                        took_turn: false,
                        close_wanted: false,
                    },
                )
                .ok()
        });
        match opened {
            // Keys found without a PDC may have one now.
            Some(_) => self.absent_for = None,
            None => self.leave_ccc(ccc),
        }
        opened.map(|id| (id, true))
    }
}

/// A packet of headers only.
pub(super) const fn header_only(dst: IpAddr, header_len: usize) -> Transmit {
    Transmit { dst, header_len, payload: None, read: None, entropy: None }
}

/// Writes ACK `a`, with the SES response `rsp` after it if any (next header RSP).
fn write_ack(
    out: &mut [u8],
    dst: IpAddr,
    mut a: crate::pds::Ack,
    rsp: Option<Response>,
) -> Result<Transmit, EndpointError> {
    a.next_header = if rsp.is_some() { NextHeader::Rsp } else { NextHeader::None };
    // Each header by its own `emit`: moved into `PdsHeader` or `SesHeader` first, it would be
    // copied whole, which a small core pays for on every ACK. (The rarer packets still go
    // through `PdsHeader`: changing those too cost the firmware program more than it saved, as
    // the optimiser inlined differently.)
    let n = a.emit(out).map_err(|_| EndpointError::BufferTooShort)?;
    let k = match rsp {
        Some(r) => r.emit(out.get_mut(n..).unwrap_or_default()).map_err(|_| EndpointError::BufferTooShort)?,
        None => 0,
    };
    Ok(header_only(dst, n + k))
}

/// Writes ACK `a` with `rsp` held for its PSN as the RESPONSE_W_DATA it stands for, and `data`
/// (at most [`FETCHED_MAX`] bytes: [`MAX_HEADER_LEN`] holds the largest ACK with them).
fn write_ack_with_data(
    out: &mut [u8],
    dst: IpAddr,
    a: crate::pds::Ack,
    rsp: Response,
    data: &[u8],
) -> Result<Transmit, EndpointError> {
    let n = a.emit(out).map_err(|_| EndpointError::BufferTooShort)?;
    let rest = out.get_mut(n..).unwrap_or_default();
    let k = rsp.with_data(data.len() as u16).emit(rest).map_err(|_| EndpointError::BufferTooShort)?;
    rest.get_mut(k..k + data.len()).ok_or(EndpointError::BufferTooShort)?.copy_from_slice(data);
    Ok(header_only(dst, n + k + data.len()))
}
