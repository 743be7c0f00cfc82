//! The initiator side: ACKs that carry SES responses, and settling messages and PDCs after
//! an initiator PDC changed.

use super::*;

impl<const P: usize, const M: usize, const E: usize, const R: usize> Endpoint<P, M, E, R> {
    /// An ACK carrying an SES response to initiator PDC `a.dpdcid`, which is reported the first
    /// time its PSN is acknowledged (the target resends a held response with the ACK of every
    /// duplicate; later copies only acknowledge): a guaranteed-delivery response, or a
    /// DEFAULT_RESPONSE with an error code, as [`Event::Response`]; a DEFAULT_RESPONSE with RC_OK
    /// whose `modified_length` (0 means the whole message) falls short of the message as
    /// [`Event::Truncated`]. RC_NULL, NO_RESPONSE and other forms only acknowledge (the reference
    /// provider's initiator rules, `uet_pds_to_ses_rx_rsp`).
    pub(super) fn response_ack(&mut self, now: Instant, a: &crate::pds::Ack, rest: &[u8]) -> Result<(), EndpointError> {
        let response = match SesHeader::parse(a.next_header, rest)? {
            (Some(SesHeader::Response(r)), _) => match (r.opcode, r.return_code) {
                (ResponseOpcode::NoResponse, _) | (ResponseOpcode::DefaultResponse, ReturnCode::Null) => None,
                _ => Some(r),
            },
            // Other response forms (with data: this endpoint issues no reads) only acknowledge.
            _ => None,
        };
        let id = a.dpdcid;
        let psn = a.ack_psn();
        let cfg = self.cfg.pdc;
        let Some(p) = self.initiators.get_mut(id) else { return Ok(()) };
        let first = !p.pdc.is_acked(psn);
        if response.is_some() && first && self.events.is_full() {
            // Nothing changed: the response comes again with the ACK of the packet's resend.
            return Err(EndpointError::EventsFull);
        }
        // A refused ACK changes nothing; there is nothing to answer.
        let accepted = p.pdc.handle_ack(now, &cfg, a).is_ok() && p.pdc.is_acked(psn);
        if let Some(response) = response.filter(|_| first && accepted) {
            if let Some((slot, _)) = self.message_at(id, psn) {
                let m = self.msgs.get(slot).and_then(Option::as_ref);
                let (generation, len) = m.map_or((0, 0), |m| (m.generation, m.desc.len));
                let msg = MsgHandle { slot: slot as u16, generation };
                let event = match (response.opcode, response.return_code) {
                    (ResponseOpcode::DefaultResponse, ReturnCode::Ok) => {
                        let short = response.modified_length != 0 && response.modified_length != len;
                        short.then_some(Event::Truncated { msg, psn, modified_length: response.modified_length })
                    }
                    _ => Some(Event::Response { msg, psn, response }),
                };
                if let Some(ev) = event {
                    // Room was checked above.
                    let _ = self.events.push_back(ev);
                }
            }
        }
        self.after_initiator_change(now, id);
        Ok(())
    }

    /// Settles initiator PDC `id` after it changed: reports its events, completes or fails its
    /// messages, closes it when its work is done, and frees it once closed and settled.
    pub(super) fn after_initiator_change(&mut self, now: Instant, id: u16) {
        let Some(key) = self.initiators.key(id).copied() else { return };
        let Some(p) = self.initiators.get_mut(id) else { return };
        while let Some(ev) = p.pdc.poll_event() {
            if let InitiatorEvent::Failed(_) = ev {
                p.active = None;
            }
        }
        let restarted_by = p.pdc.start_psn().wrapping_sub(p.start_psn);
        p.start_psn = p.pdc.start_psn();
        let base = p.pdc.window().base();
        let failure = p.pdc.failure();
        let state = p.pdc.state();
        let mut started_unsent = false;
        let mut for_key = false;
        if restarted_by != 0 {
            // NEW_START_PSN moved every PSN of the PDC (nothing was acknowledged yet).
            for m in self.msgs.iter_mut().flatten().filter(|m| m.pdc == Some(id)) {
                m.first_psn = m.first_psn.wrapping_add(restarted_by);
            }
        }
        for slot in 0..M {
            let Some(m) = self.msgs.get(slot).and_then(Option::as_ref) else { continue };
            if m.pdc != Some(id) {
                for_key |= m.pdc.is_none() && self.key(&m.desc) == key;
                continue;
            }
            let handle = MsgHandle { slot: slot as u16, generation: m.generation };
            let packets = m.segments.packets();
            let event = match failure {
                Some(f) => Some(Event::Failed(handle, f)),
                None if m.sent == packets && psn_after(base, m.first_psn.wrapping_add(packets - 1)) => {
                    Some(Event::Sent(handle))
                }
                None => None,
            };
            match event {
                // No room: the message stays and is settled on a later change.
                Some(ev) if self.events.push_back(ev).is_ok() => {
                    self.free_msg(slot);
                }
                _ => {
                    for_key = true;
                    started_unsent |= m.sent < packets;
                }
            }
        }
        let cfg = self.cfg.pdc;
        let Some(p) = self.initiators.get_mut(id) else { return };
        let wants_close = match state {
            // The target asked to close: once the message in progress is all sent.
            InitiatorState::Quiesce => !started_unsent,
            InitiatorState::Creating | InitiatorState::Established => self.cfg.close_when_idle && !for_key,
            InitiatorState::AckWait | InitiatorState::CloseAckWait | InitiatorState::Closed => false,
        };
        if wants_close {
            let _ = p.pdc.close(now, &cfg);
        }
        let settled = !self.msgs.iter().flatten().any(|m| m.pdc == Some(id));
        if p.pdc.state() == InitiatorState::Closed && settled && !p.pdc.has_pending() {
            self.initiators.remove(id);
        }
    }
}
