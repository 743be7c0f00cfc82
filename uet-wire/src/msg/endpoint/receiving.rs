//! The target side: delivering requests through the message order, the response each ACK
//! carries, guaranteed-delivery responses, and freeing closed target PDCs.

use super::*;

impl<const P: usize, const M: usize, const E: usize, const R: usize> Endpoint<P, M, E, R> {
    /// Answers the request `placement` came from with a guaranteed-delivery SES RESPONSE carrying
    /// `return_code` and `modified_length`: the target PDC holds it until the initiator's
    /// `CLEAR_PSN` passes the request, and the ACK of the request carries it (again on every
    /// duplicate). Call it after [`Endpoint::handle_packet`] returned `placement` and before the
    /// next [`Endpoint::poll_transmit`]: an ACK sent since may have acknowledged the request
    /// already. The endpoint delivers a request only while a response could be held for it.
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
        let from = self.targets.key(placement.pdc).map(|k| k.src);
        match self.targets.get_mut(placement.pdc) {
            Some(t) if from == Some(placement.src) => {
                t.pdc.hold_response(placement.psn, rsp).map_err(EndpointError::Respond)
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
        let seg = Segment::of_received(&ses, u16::try_from(payload.len()).unwrap_or(u16::MAX));
        if usize::from(seg.len) != payload.len() {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "SES payload length and payload bytes" }));
        }
        // Room for every event this packet could release.
        if E - self.events.len() < ORDER_WINDOW {
            return Err(EndpointError::EventsFull);
        }
        let cfg = self.cfg.pdc;
        let Some(id) = self.target_for_request(now, src, &r) else { return Ok(None) };
        let Some(t) = self.targets.get_mut(id) else { return Ok(None) };
        // The message layer must take a new packet before the PDC counts it received.
        if t.pdc.would_deliver(&r) {
            if let Err(e) = t.order.check(ses.message_id, ses.request_length, seg.len) {
                let code = match e {
                    OrderError::NoRoom { .. } => NackCode::NoSesMsgAvail,
                    OrderError::Inconsistent { .. } => NackCode::UnexpEvent,
                };
                self.queue_nack(src, refusal(code, &r, id));
                return Ok(None);
            }
            // Any request may need a guaranteed-delivery response: none is delivered unless one
            // could be held for it.
            if let Some(n) = t.pdc.check_response_room(&r) {
                self.queue_nack(src, n);
                return Ok(None);
            }
        }
        let verdict = t.pdc.handle_request(now, &cfg, &r, u32::from(seg.len), ce);
        let mut placement = None;
        if let Ok(v) = verdict {
            if v.delivery == Delivery::New {
                // Checked above, so this cannot fail.
                let _ = t.order.on_packet(ses.message_id, r.psn, seg.offset, ses.request_length, seg.len);
                let cack = t.pdc.window().cack_psn();
                while let Some((message_id, len)) = t.order.release(cack) {
                    let _ = self.events.push_back(Event::Received { src, pdc: id, message_id, len });
                }
                placement = Some(Placement {
                    src,
                    pdc: id,
                    message_id: ses.message_id,
                    psn: r.psn,
                    header: ses,
                    offset: seg.offset,
                    payload,
                });
            }
            // The ACK that names this request carries the SES DEFAULT_RESPONSE, unless it carries
            // a held response: RC_OK for a request delivered now, RC_NULL for one received before
            // (UE 1.0 §3.5.20.1; see the module doc).
            let code = match v.delivery {
                Delivery::New => Some(ReturnCode::Ok),
                Delivery::Stale | Delivery::Duplicate => Some(ReturnCode::Null),
                Delivery::Dropped => None,
            };
            if let Some(code) = code {
                t.ack_response = Some((r.psn, Response::default_for(&ses, code)));
                t.last_ids = (ses.common.ri_generation, ses.common.job_id);
            }
            if let Some(n) = v.nack {
                self.queue_nack(src, n);
            }
        }
        self.after_target_change(now, id);
        Ok(placement)
    }

    /// Reports a target PDC's events and frees it once closed, remembering it for late SYNs.
    pub(super) fn after_target_change(&mut self, now: Instant, id: u16) {
        let Some(t) = self.targets.get_mut(id) else { return };
        let mut closed = false;
        while let Some(ev) = t.pdc.poll_event() {
            closed |= ev == TargetEvent::Closed;
        }
        if closed {
            let start_psn = t.pdc.start_psn();
            if let (Some(key), Some(_)) = (self.targets.key(id).copied(), self.targets.remove(id)) {
                if self.closed_targets.is_full() {
                    self.closed_targets.pop_front();
                }
                let until = now.saturating_add(self.cfg.pdc.new_pdc_time);
                let _ = self.closed_targets.push_back(ClosedTarget { key, start_psn, until });
            }
        }
    }
}
