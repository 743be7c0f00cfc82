//! RUDI and UUD messages, which need no PDC (see the parent module).

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
    /// The next packet of RUDI message `slot`, if the in-flight table has room.
    pub(super) fn transmit_rudi_new(
        &mut self,
        now: Instant,
        out: &mut [u8],
        slot: usize,
    ) -> Result<Option<Transmit>, EndpointError> {
        if self.rudi.is_full() {
            return Ok(None);
        }
        let pkt_id = self.next_pkt_id;
        let Some(m) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut) else { return Ok(None) };
        let index = m.sent;
        let t = self.write_rudi(out, slot, index, pkt_id, false)?;
        self.next_pkt_id = pkt_id.wrapping_add(1);
        self.count_sent(slot);
        let resend_at = now.saturating_add(self.config().pdc.rto);
        // Room was checked above.
        let _ = self.rudi.push(RudiOut { pkt_id, slot: slot as u16, index, resend_at, retries: 0, nacked: false });
        Ok(Some(t))
    }

    /// A RUDI packet whose response is overdue, resent; or, past `Max_RTO_Retx_Cnt`, its message
    /// failed.
    pub(super) fn transmit_rudi_resend(
        &mut self,
        now: Instant,
        out: &mut [u8],
    ) -> Result<Option<Transmit>, EndpointError> {
        let Some(k) = self.rudi.iter().position(|r| r.resend_at <= now) else { return Ok(None) };
        let Some(r) = self.rudi.get(k).copied() else { return Ok(None) };
        if self.config().pdc.rto_retx_exhausted(r.retries.saturating_add(1)) {
            self.fail_rudi(usize::from(r.slot), Failure::RetriesExhausted);
            return Ok(None);
        }
        let t = self.write_rudi(out, usize::from(r.slot), r.index, r.pkt_id, true)?;
        if !r.nacked {
            self.stats.resends.timeout = self.stats.resends.timeout.wrapping_add(1);
        }
        if let Some(e) = self.rudi.get_mut(k) {
            e.nacked = false;
            e.retries += 1;
            e.resend_at = now.saturating_add(configured(&self.cfg).pdc.rto_backoff(e.retries));
        }
        Ok(Some(t))
    }

    /// Fails RUDI message `slot` and forgets its packets in flight (their late responses find
    /// nothing).
    pub(super) fn fail_rudi(&mut self, slot: usize, why: Failure) {
        let Some(m) = self.msgs.get(slot).and_then(MsgSlot::as_ref) else { return };
        if self.events.push_back(m.failed(slot, why)).is_ok() {
            self.rudi.retain(|r| usize::from(r.slot) != slot);
            self.free_msg(slot);
        }
    }

    /// Writes RUDI packet `index` of message `slot`.
    pub(super) fn write_rudi(
        &self,
        out: &mut [u8],
        slot: usize,
        index: u32,
        pkt_id: u32,
        retx: bool,
    ) -> Result<Transmit, EndpointError> {
        let flags = if retx { RudiFlags::RETX } else { RudiFlags::empty() };
        let rudi = Rudi { response: false, next_header: NextHeader::ReqStd, flags, pkt_id };
        self.write_packet(out, slot, index, &PdsHeader::Rudi(rudi), None)
    }

    /// Sends the one packet of UUD message `slot`; it counts as sent at once.
    pub(super) fn transmit_uud(&mut self, out: &mut [u8], slot: usize) -> Result<Transmit, EndpointError> {
        let uud = crate::pds::Uud { next_header: NextHeader::ReqStd };
        let t = self.write_packet(out, slot, 0, &PdsHeader::Uud(uud), None)?;
        self.count_sent(slot);
        self.complete_connectionless(slot);
        Ok(t)
    }

    /// Reports a connectionless message sent once all its packets went out and (RUDI) were
    /// answered; it stays until the event queue has room.
    pub(super) fn complete_connectionless(&mut self, slot: usize) {
        let Some(m) = self.msgs.get(slot).and_then(MsgSlot::as_ref) else { return };
        let answered = !self.rudi.iter().any(|r| usize::from(r.slot) == slot);
        if m.sent == m.packets() && answered {
            if self.events.push_back(Event::Sent(m.handle(slot))).is_ok() {
                self.free_msg(slot);
            } else {
                self.unsettled = true;
            }
        }
    }

    /// A RUDI response `r` arrived, its SES header in `rest`: its packet is done. An SES response
    /// (not NO_RESPONSE) with an error code (neither OK nor NULL; uet-ref-prov's target answers a
    /// RUDI WRITE it cannot take with BAD_MKEY, PERM_VIOLATION, OP_VIOLATION or BAD_ADDR) fails
    /// the message at once, [`Failure::Refused`], as uet-ref-prov's initiator handles a RUDI
    /// response like any other (`uet_rudi_rx_rsp`); with the event queue full, nothing changes
    /// and the answer to the packet's resend decides. An SES header that does not parse only
    /// answers.
    pub(super) fn rudi_answered(&mut self, r: &Rudi, rest: &[u8]) {
        let rsp = (r.next_header == NextHeader::Rsp).then(|| Response::parse(rest).ok()).flatten();
        let refusal = |rsp: &Response| {
            rsp.opcode != ResponseOpcode::NoResponse && !matches!(rsp.return_code, ReturnCode::Ok | ReturnCode::Null)
        };
        if let Some((rsp, _)) = rsp.filter(|(rsp, _)| refusal(rsp)) {
            if let Some(slot) = self.rudi.iter().find(|o| o.pkt_id == r.pkt_id).map(|o| usize::from(o.slot)) {
                self.fail_rudi(slot, Failure::Refused(rsp.return_code));
            }
            return;
        }
        // (`swap_remove` right after `position`: the optimiser sees the index is in bounds, and
        // firmware images must link no panic.)
        let Some(k) = self.rudi.iter().position(|o| o.pkt_id == r.pkt_id) else { return };
        let slot = usize::from(self.rudi.swap_remove(k).slot);
        self.complete_connectionless(slot);
    }

    /// A RUDI NACK: resend at once for a retransmit-class code; ignore a drop-class one (the
    /// packet's own timer resends it, as uet-ref-prov's PDC NACK handling, `uet_pds_nack_action`,
    /// drops RCVD_SES_PROCG; its RUDI engine sends no NACK at all); else fail the message.
    pub(super) fn rudi_nacked(&mut self, now: Instant, pkt_id: u32, code: NackCode) {
        let Some(r) = self.rudi.iter_mut().find(|r| r.pkt_id == pkt_id) else { return };
        match code.class() {
            crate::pds::NackClass::Retransmit => {
                r.resend_at = now;
                r.nacked = true;
                self.stats.resends.nack = self.stats.resends.nack.wrapping_add(1);
            }
            crate::pds::NackClass::Drop => {}
            crate::pds::NackClass::Close | crate::pds::NackClass::NewStartPsn => {
                let slot = usize::from(r.slot);
                self.fail_rudi(slot, Failure::Nack(code));
            }
        }
    }

    /// A RUDI or UUD request: placed without a PDC; RUDI answered with a RUDI response, UUD
    /// reported received.
    pub(super) fn handle_connectionless<'a>(
        &mut self,
        src: IpAddr,
        next_header: NextHeader,
        rudi: Option<Rudi>,
        rest: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        // The SES header the PDS header names: this endpoint takes standard requests only.
        if next_header != NextHeader::ReqStd {
            return Err(EndpointError::Unsupported);
        }
        let (ses, payload) = SesHeader::parse(next_header, rest)?;
        let Some(SesHeader::Standard(ses)) = ses else { return Err(EndpointError::Unsupported) };
        // This endpoint answers READs on PDCs only (see `EndpointError::ReadWithoutPdc`).
        if ses.common.opcode == crate::ses::Opcode::Read {
            return Err(EndpointError::Unsupported);
        }
        let carried = super::receiving::carried(&ses, payload)?;
        let seg = Segment::of_received(&ses, u16::try_from(carried).unwrap_or(u16::MAX));
        if usize::from(seg.len) != carried || u64::from(seg.offset) + carried as u64 > u64::from(ses.request_length) {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "SES payload length and payload bytes" }));
        }
        match rudi {
            Some(r) => {
                if self.rudi_responses.is_full() {
                    // Unanswered, the initiator resends; placing it again is harmless.
                    return Err(EndpointError::ResponsesFull);
                }
                let rsp = Response::default_for(&ses, ReturnCode::Ok);
                let answer = Rudi {
                    response: true,
                    next_header: NextHeader::Rsp,
                    flags: r.flags & RudiFlags::M,
                    pkt_id: r.pkt_id,
                };
                let _ = self.rudi_responses.push_back((src, answer, rsp));
            }
            None => {
                // One packet carries the whole message: first, last, and all of its bytes.
                if !(seg.som && seg.eom) || payload.len() as u64 != u64::from(ses.request_length) {
                    return Err(EndpointError::Malformed(Error::Mismatch {
                        field: "UUD message length (not one whole packet)",
                    }));
                }
                let ev = Event::Received { src, pdc: 0, message_id: ses.message_id, len: ses.request_length };
                self.events.push_back(ev).map_err(|_| EndpointError::EventsFull)?;
            }
        }
        Ok(Some(Placement {
            src,
            pdc: 0,
            message_id: ses.message_id,
            psn: 0,
            header: ses,
            offset: seg.offset,
            payload,
            read: None,
        }))
    }
}
