//! The target side: delivering requests through the message order, the response each ACK
//! carries, guaranteed-delivery responses, and freeing closed target PDCs.

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
    /// Answers the request `placement` came from with a guaranteed-delivery SES RESPONSE carrying
    /// `return_code` and `modified_length`: the target PDC holds it until the initiator's
    /// `CLEAR_PSN` passes the request, and the ACK of the request carries it (again on every
    /// duplicate). Call it after [`Endpoint::handle_packet`] returned `placement` and before the
    /// next [`Endpoint::poll_transmit`]: an ACK sent since may have acknowledged the request
    /// already. The endpoint delivers a request only while a response could be held for it, and
    /// that room is sure only until the next [`Endpoint::handle_packet`]: a response the target
    /// PDC's own two slots do not take needs a block of the `D` the endpoint shares (see
    /// [`Endpoint`]), taken here, and answering requests delivered later first may take the last
    /// one (then this fails with [`EndpointError::Respond`]).
    pub fn respond(
        &mut self,
        placement: &Placement<'_>,
        return_code: ReturnCode,
        modified_length: u32,
    ) -> Result<(), EndpointError> {
        let rsp = Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::Response,
            return_code,
            message_id: placement.message_id,
            ri_generation: placement.header.common.ri_generation,
            job_id: placement.header.common.job_id,
            modified_length,
        };
        self.respond_with(placement, rsp)
    }

    /// [`Endpoint::respond`] with the response's other fields the caller's: its `list` (OVERFLOW
    /// for a send that went to the overflow list), `return_code`, `ri_generation` (with
    /// BAD_GENERATION, the target's current generation, which uet-ref-prov's initiator stores and
    /// resends with) and `modified_length` (the bytes taken: uet-ref-prov's initiator reads OK
    /// with 0 as "deferred" for a deferrable send and as truncated for any other). Its
    /// `message_id` and `job_id` are the request's, whatever `rsp` says. Its opcode must be
    /// RESPONSE, the one guaranteed-delivery response without data (else
    /// [`EndpointError::Header`]; for RESPONSE_W_DATA, [`Endpoint::respond_with_data`]).
    pub fn respond_with(&mut self, placement: &Placement<'_>, rsp: Response) -> Result<(), EndpointError> {
        if rsp.opcode != ResponseOpcode::Response {
            return Err(EndpointError::Header(Error::Mismatch {
                field: "SES response opcode (respond_with holds RESPONSE only)",
            }));
        }
        self.hold(placement, rsp, &[])
    }

    /// Answers the fetching atomic (FETCHING_ATOMIC or TSEND_FETCH_ATOMIC) `placement` came from
    /// with the value it fetched, `data` (1 to [`FETCHED_MAX`] bytes: for a compare-and-swap too,
    /// the old value, whether or not it swapped): a guaranteed-delivery RESPONSE_W_DATA, which
    /// the ACK of the request carries after an RSP_DATA next header, held as [`Endpoint::respond`]
    /// holds a response. `rsp` gives its list, return code and `modified_length` (uet-ref-prov's
    /// initiator wants the request's `request_length` there: 8 for a UINT64 fetch-add, 32 for a
    /// compare-and-swap); its `message_id`, `job_id` and `read_request_message_id` are the
    /// request's, `message_offset` 0, whatever its opcode and `ri_generation` (RESPONSE_W_DATA
    /// has no RI generation field).
    ///
    /// Errors: [`EndpointError::Header`] for any other request or for `data` empty or longer
    /// than [`FETCHED_MAX`] or the request's `request_length` (one element of its operands at
    /// most; an initiator of this crate drops a longer value); [`EndpointError::Respond`] as for
    /// [`Endpoint::respond`]. The endpoint lets a fetching atomic in only while a slot of a block
    /// could hold this, and claims that block for it (see [`Endpoint`]).
    pub fn respond_with_data(
        &mut self,
        placement: &Placement<'_>,
        rsp: Response,
        data: &[u8],
    ) -> Result<(), EndpointError> {
        let fetching = placement.header.common.opcode.fetches();
        let most = FETCHED_MAX.min(placement.header.request_length as usize);
        if !fetching || data.is_empty() || data.len() > most {
            return Err(EndpointError::Header(Error::Mismatch {
                field: "respond_with_data answers a fetching atomic with 1 to FETCHED_MAX bytes, within its length",
            }));
        }
        self.hold(placement, Response { opcode: ResponseOpcode::ResponseWithData, ..rsp }, data)
    }

    /// Holds `rsp` (with `data`, if any) for the request `placement` came from.
    fn hold(&mut self, placement: &Placement<'_>, rsp: Response, data: &[u8]) -> Result<(), EndpointError> {
        let rsp = Response { message_id: placement.message_id, job_id: placement.header.common.job_id, ..rsp };
        let from = self.targets.key(placement.pdc).map(|k| k.src);
        match self.targets.get_mut(placement.pdc) {
            Some(t) if from == Some(placement.src) => {
                let psn = placement.psn;
                // In its own slots if they take it (never with data), else in a block: taken
                // now (then `hold_response` refuses for want of a slot if every block is in use).
                let in_order = !crate::pdc::window::psn_after(psn, t.pdc.window().cack_psn());
                if !data.is_empty() || !Tiered::<R>::own_takes(&t.own, in_order) {
                    self.helds.take(&mut t.held);
                }
                let pdc = &t.pdc;
                let held = self.helds.with(&mut t.held, &mut t.own, |held| pdc.hold_response(held, psn, rsp, data));
                self.refresh_target(placement.pdc, false);
                held.map_err(EndpointError::Respond)
            }
            _ => Err(EndpointError::Respond(crate::pdc::PdcError::CannotHold {
                psn: placement.psn,
                why: "no such target PDC",
            })),
        }
    }

    pub(super) fn handle_request<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        r: Request,
        rest: &'a [u8],
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        if r.next_header != NextHeader::ReqStd {
            return Err(EndpointError::Unsupported);
        }
        let (ses, payload) = SesHeader::parse(NextHeader::ReqStd, rest)?;
        let Some(SesHeader::Standard(ses)) = ses else { return Err(EndpointError::Unsupported) };
        let read = matches!(ses.common.opcode, crate::ses::Opcode::Read);
        // A fetching atomic may be answered with the value fetched, held in a block (`held`).
        let fetching = ses.common.opcode.fetches();
        let carried = carried(&ses, payload)?;
        let seg = if read { self.read_chunk(&ses, payload)? } else { Segment::of_received(&ses, carried as u16) };
        if !read && usize::from(seg.len) != carried {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "SES payload length and payload bytes" }));
        }
        // A MSG_ERROR in uet-ref-prov's form (no SOM, EOM, no payload) cancels its message after
        // the `message_offset` bytes its initiator sent (see `order`); any other form is taken
        // as a packet of its message.
        let flags = ses.common.flags;
        let cancel = (ses.common.opcode == Opcode::MsgError
            && !flags.contains(SesFlags::SOM)
            && flags.contains(SesFlags::EOM)
            && carried == 0)
            .then_some(seg.offset);
        let admit_order = |order: &MessageOrder<W>, pool: &OrderPool<O>| match cancel {
            Some(sent) => order.admit_cancel(pool, ses.message_id, ses.request_length, sent),
            None => order.admit(pool, ses.message_id, ses.request_length, seg.len),
        };
        // Room for every event this packet could release: the messages it completes in order,
        // and one released out of order to make room (see `order`).
        if E - self.events.len() < W + 1 {
            return Err(EndpointError::EventsFull);
        }
        let Some(id) = self.target_for_request(now, src, &r) else { return Ok(None) };
        if let Some(cc) = r.cc {
            self.on_credit_target(id, src, cc);
        }
        // A READ is answered with data, which needs a message slot until acknowledged.
        let read_room = !read || self.free_slots.next().is_some() || self.read_run_for(id, &ses, seg).is_some();
        let Some(t) = self.targets.get_mut(id) else { return Ok(None) };
        let mut admitted = admit_order(&t.order, &self.order_pool);
        if matches!(admitted, Err(OrderError::NoRoom { .. }))
            && t.pdc.window().classify(r.psn) == crate::pdc::Arrival::New
        {
            // A new packet of a peer that starts more messages than the target tracks: room by
            // releasing a complete message out of order, so one that started earlier can still
            // come in (see `order`). Room for the event was checked above.
            if let Some((message_id, len)) = t.order.release_complete(&mut self.order_pool) {
                self.stats.released_out_of_order = self.stats.released_out_of_order.wrapping_add(1);
                let _ = self.events.push_back(Event::Received { src, pdc: id, message_id, len });
                admitted = admit_order(&t.order, &self.order_pool);
            }
        }
        if matches!(admitted, Err(OrderError::Inconsistent { .. }))
            && t.pdc.window().classify(r.psn) == crate::pdc::Arrival::New
        {
            // A new packet (or MSG_ERROR) of a message cancelled and complete: the message sent
            // again under its id (see `order`). Room for the event was checked above.
            if let Some((message_id, len)) = t.order.release_cancelled(&mut self.order_pool, ses.message_id) {
                self.stats.released_out_of_order = self.stats.released_out_of_order.wrapping_add(1);
                let _ = self.events.push_back(Event::Received { src, pdc: id, message_id, len });
                admitted = admit_order(&t.order, &self.order_pool);
            }
        }
        // The message layer must be able to take a new packet before the PDC counts it received
        // (the PDC also refuses one no guaranteed-delivery response could be held for).
        let admit = || match admitted {
            Err(OrderError::NoRoom { .. }) => Err(NackCode::NoSesMsgAvail),
            Err(OrderError::Inconsistent { .. }) => Err(NackCode::UnexpEvent),
            Ok(_) if !read_room => Err(NackCode::NoPktBuffer),
            Ok(_) => Ok(()),
        };
        let cfg = &configured(&self.cfg).pdc;
        let delivery = self.helds.admitting(&mut t.held, &mut t.own, |held| {
            t.pdc.handle_request_admitting(held, now, cfg, &r, u32::from(seg.len), ce, fetching, admit)
        });
        if matches!(delivery, Ok(Delivery::New)) {
            // A response to it that its own slots would not take (any with data) needs a block:
            // claimed now, so that no other PDC's request let in on the same free block takes it
            // first (given back after this PDC's next poll if it holds nothing).
            let in_order = !crate::pdc::window::psn_after(r.psn, t.pdc.window().cack_psn());
            if fetching || !Tiered::<R>::own_takes(&t.own, in_order) {
                self.helds.claim(&mut t.held);
            }
        }
        let mut new = false;
        if let Ok(delivery) = delivery {
            // Admitted above (a new packet is delivered only then), and nothing changed the order
            // since, so this cannot fail.
            if let (Delivery::New, Ok(admitted)) = (delivery, admitted) {
                let _ = t.order.take(&mut self.order_pool, admitted, r.psn, seg.offset);
                let cack = t.pdc.window().cack_psn();
                while let Some((message_id, len)) = t.order.release(&mut self.order_pool, cack) {
                    let _ = self.events.push_back(Event::Received { src, pdc: id, message_id, len });
                }
                new = true;
            }
            // The ACK that names this request carries the SES DEFAULT_RESPONSE, unless it carries
            // a held response: RC_OK for a request delivered now, RC_NULL for one received before
            // (UE 1.0 §3.5.20.1; see the module doc).
            let code = match delivery {
                Delivery::New => Some(ReturnCode::Ok),
                Delivery::Stale | Delivery::Duplicate => Some(ReturnCode::Null),
                Delivery::Dropped => None,
            };
            if let Some(code) = code {
                t.answer.set(r.psn, &Response::default_for(&ses, code));
            }
            if read && delivery == Delivery::New {
                self.answer_read(id, src, r.mode, ses, seg);
            }
        }
        self.after_target_change(now, id);
        // Built where it is returned: a placement held across the call above is copied again.
        if !new {
            return Ok(None);
        }
        Ok(Some(Placement {
            src,
            pdc: id,
            message_id: ses.message_id,
            psn: r.psn,
            header: ses,
            offset: seg.offset,
            payload,
            read: None,
        }))
    }

    /// The data a READ request packet asks for (UE 1.0 §3.5.20.1; the reference provider's
    /// `uet_tx_msg` splits a READ into one request per `max_payload_len` chunk): the first packet
    /// asks for `min(request_length, mtu)` bytes at offset 0, every other one for its
    /// `payload_length` bytes at its `message_offset`. A READ request carries no payload and asks
    /// for nothing past `request_length`. *Project-defined*, as in the reference provider: both
    /// ends use the same payload size per packet (`mtu`).
    fn read_chunk(&self, ses: &StandardRequest, payload: &[u8]) -> Result<Segment, EndpointError> {
        if !payload.is_empty() {
            return Err(EndpointError::Malformed(Error::Mismatch {
                field: "READ request and payload (a READ carries none)",
            }));
        }
        let mtu = u32::from(self.config().mtu);
        let som = ses.request_length.min(mtu) as u16;
        let seg = Segment::of_received(ses, som);
        if u64::from(seg.offset) + u64::from(seg.len) > u64::from(ses.request_length) {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "READ chunk and request_length" }));
        }
        Ok(seg)
    }

    /// The read data run that chunk `seg` of READ `ses` on target PDC `tpdc` extends, if any: the
    /// newest run of that PDC (so the chunk's return PSN follows the run's), of the same READ,
    /// ending where the chunk starts, with whole packets so far, and the chunk whole or the READ's
    /// last. One run answers a READ whose requests arrive in order, whatever its length.
    fn read_run_for(&self, tpdc: u16, ses: &StandardRequest, seg: Segment) -> Option<usize> {
        let mtu = u32::from(self.config().mtu);
        // The newest run: runs are listed oldest first.
        let slot = self.runs_on(tpdc).last()?;
        let m = self.msgs.get(slot)?.as_ref()?;
        let MsgKind::ReadData { offset, .. } = m.kind else { return None };
        let (_, next_psn) = self.returns.base_and_next(self.targets.get(tpdc)?.ret);
        let psns_follow = m.sent == 0 || next_psn == m.first_psn.wrapping_add(m.sent);
        let whole = u32::from(seg.len) == mtu || seg.offset + u32::from(seg.len) == ses.request_length;
        let extends = m.message_id == ses.message_id
            && m.request.common.job_id == ses.common.job_id
            && u64::from(offset) + u64::from(m.len) == u64::from(seg.offset)
            && m.len.checked_rem(mtu) == Some(0)
            && seg.len > 0
            && whole;
        (extends && psns_follow).then_some(slot)
    }

    /// Queues the read data answering READ request `ses` (chunk `seg`) that arrived on target PDC
    /// `tpdc` from `src`: it goes out on that PDC's return direction, as part of the run it
    /// extends or in a new one (a slot was checked free).
    fn answer_read(&mut self, tpdc: u16, src: IpAddr, mode: DeliveryMode, ses: StandardRequest, seg: Segment) {
        let mtu = self.config().mtu;
        if let Some(run) = self.read_run_for(tpdc, &ses, seg) {
            if let Some(m) = self.msgs.get_mut(run).and_then(MsgSlot::as_mut) {
                m.len += u32::from(seg.len);
                if let Ok(s) = Segmenter::new(m.len, mtu) {
                    m.mtu = s.mtu().get();
                }
                // A run sent whole has packets to send again, in its place by age.
                let seq = m.seq;
                let msgs = &self.msgs;
                let older = |s: u16| msgs.get(usize::from(s)).and_then(MsgSlot::as_ref).is_some_and(|o| o.seq < seq);
                self.unsent.insert(&mut self.unsent_links, run as u16, older);
            }
            return;
        }
        let Some(slot) = self.free_slots.next().map(usize::from) else { return };
        let Ok(segments) = Segmenter::new(u32::from(seg.len), mtu.max(seg.len)) else { return };
        let service = if mode == DeliveryMode::Rod { Service::Rod } else { Service::Rud };
        let desc = MessageDesc { dst: src, service, tc: 0, header: ses, len: u32::from(seg.len), user: 0 };
        let generation = self.generations.get(slot).copied().unwrap_or(0);
        let seq = self.next_seq;
        self.next_seq += 1;
        let kind = MsgKind::ReadData { tpdc, offset: seg.offset, read_length: ses.request_length };
        if let Some(m) = self.msgs.get_mut(slot) {
            *m = MsgSlot::some(SendMsg::new(
                generation,
                kind,
                &desc,
                SlotRef::NONE,
                segments.mtu(),
                seq,
                ses.message_id,
            ));
        }
        self.free_slots.take();
        self.unsent.insert(&mut self.unsent_links, slot as u16, |_| true);
        if let Some(t) = self.targets.get_mut(tpdc) {
            t.runs.insert(&mut self.pdc_links, slot as u16, |_| true);
        }
    }

    /// Reports a target PDC's events, forgets the read data it had acknowledged (all of it once
    /// the PDC closed), and frees it once closed, remembering it for late SYNs.
    pub(super) fn after_target_change(&mut self, now: Instant, id: u16) {
        let Some(t) = self.targets.get_mut(id) else { return };
        let mut closed = false;
        while let Some(ev) = t.pdc.poll_event() {
            closed |= ev == TargetEvent::Closed;
        }
        let (ret_base, _) = self.returns.base_and_next(t.ret);
        let open = t.pdc.state() != crate::pdc::TargetState::Closed;
        if !open && self.helds.is_claimed(t.held) {
            // A closed PDC answers nothing more: a block claimed for a response goes back.
            self.helds.unclaim(t.held);
            self.helds.with(&mut t.held, &mut t.own, |_| ());
        }
        let start_psn = t.pdc.start_psn();
        let next_expected = t.pdc.next_expected_psn();
        let mut next = t.runs.first();
        while let Some(slot) = next {
            next = SlotList::next(&self.pdc_links, slot);
            let slot = usize::from(slot);
            let done = self.msgs.get(slot).and_then(MsgSlot::as_ref).is_some_and(|m| {
                let packets = m.packets();
                let acked = m.sent == packets && psn_after(ret_base, m.first_psn.wrapping_add(packets - 1));
                !open || acked
            });
            if done {
                self.free_msg(slot);
            }
        }
        if closed {
            // The domain's Expected_PSN moves past this PDC (secure start only reads it).
            self.expected_psn = expected_after_close(self.expected_psn, start_psn, next_expected);
            // Off the lists before the removal.
            self.refresh_target(id, true);
            if let Some(t) = self.targets.get_mut(id) {
                t.order.clear(&mut self.order_pool);
            }
            if let (Some(key), Some(t)) = (self.targets.key(id).copied(), self.targets.remove(id)) {
                self.returns.release(t.ret);
                self.helds.release(t.held);
                if self.closed_targets.is_full() {
                    self.closed_targets.pop_front();
                }
                let until = now.saturating_add(self.config().pdc.new_pdc_time);
                let _ = self.closed_targets.push_back(ClosedTarget { key, start_psn, until });
            }
            return;
        }
        self.refresh_target(id, false);
    }
}

/// The secure domain's `Expected_PSN` once a target PDC that started at `start` closes with
/// `next` the PSN after the last it received: `next` whenever the PDC started at or after the
/// current value (a PDC spans up to 2^31 PSNs, so comparing `next` alone, in serial order, could
/// leave the value behind a long PDC's start), or when `next` is after it; else unchanged.
pub(super) fn expected_after_close(expected: u32, start: u32, next: u32) -> u32 {
    if !psn_after(expected, start) || psn_after(next, expected) { next } else { expected }
}

/// The bytes of its message a received request `ses` carries, `payload` after its header (see
/// [`Segment::received_len`]); refused for a compare-and-swap whose `request_length` its
/// extension cannot carry.
pub(super) fn carried(ses: &StandardRequest, payload: &[u8]) -> Result<usize, EndpointError> {
    Segment::received_len(ses, payload.len()).ok_or(EndpointError::Malformed(Error::Mismatch {
        field: "compare-and-swap request_length (its extension carries 32 bytes)",
    }))
}

#[cfg(test)]
mod tests {
    use super::expected_after_close;

    #[test]
    fn expected_psn_moves_past_every_closed_pdc() {
        // A PDC from Expected on moves it to its end.
        assert_eq!(expected_after_close(70_000, 70_000, 70_010), 70_010);
        // One started earlier (1-RTT restarted elsewhere) moves it only if it ended later.
        assert_eq!(expected_after_close(70_000, 60_000, 65_000), 70_000);
        assert_eq!(expected_after_close(70_000, 60_000, 75_000), 75_000);
        // A long PDC from near 2^31 past Expected, ending more than 2^31 past it: still moved,
        // so a replay of its SYN (start) is before the new value.
        let (expected, start) = (0x0001_0000u32, 0x7FFF_0000u32);
        let next = start.wrapping_add(0x1000_0000);
        assert_eq!(expected_after_close(expected, start, next), next);
        assert!(crate::pdc::psn_after(next, start));
    }
}
