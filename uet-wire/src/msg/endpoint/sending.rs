//! The initiator side: ACKs that carry SES responses, and settling messages and PDCs after
//! an initiator PDC changed.

use super::demux::Side;
use super::*;

/// Completions of one PDC reported per pass of [`Endpoint::after_initiator_change`], sorted into
/// send order.
const COMPLETION_BATCH: usize = 16;

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
    /// An ACK carrying an SES response to initiator PDC `a.dpdcid`, which is reported the first
    /// time its PSN is acknowledged (the target resends a held response with the ACK of every
    /// duplicate; later copies only acknowledge): a guaranteed-delivery response, or a
    /// DEFAULT_RESPONSE with an error code, as [`Event::Response`] (an error code refuses the
    /// message, see [`Endpoint::refused`]); a DEFAULT_RESPONSE with RC_OK whose
    /// `modified_length` (0 means the whole message) falls short of the message as
    /// [`Event::Truncated`] (uet-ref-prov's initiator fails it; see the module doc). RC_NULL,
    /// NO_RESPONSE and other forms only acknowledge (uet-ref-prov's `uet_pds_to_ses_rx_rsp`).
    ///
    /// An ACK carrying RESPONSE_W_DATA with RC_OK for a READ request answers it with the data
    /// itself (a READ of at most `Max_ACK_Data_Size` bytes from the reference provider's target,
    /// `uet_rx_rd_req_pkt`): placed like read data from the return direction, once.
    pub(super) fn response_ack<'a>(
        &mut self,
        now: Instant,
        a: &crate::pds::Ack,
        rest: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        // Parsed by the header it names, not as a `SesHeader`: that enum is as large as a
        // standard request, and moving it cost more than parsing the response.
        let (response, with_data, data) = match a.next_header {
            NextHeader::Rsp => {
                let (r, data) = crate::ses::Response::parse(rest)?;
                let answers = !matches!(
                    (r.opcode, r.return_code),
                    (ResponseOpcode::NoResponse, _) | (ResponseOpcode::DefaultResponse, ReturnCode::Null)
                );
                (answers.then_some(r), None, data)
            }
            NextHeader::RspData => {
                let (r, data) = crate::ses::ResponseWithData::parse(rest)?;
                if r.return_code == ReturnCode::Ok {
                    if usize::from(r.payload_length) != data.len() {
                        return Err(EndpointError::Malformed(Error::Mismatch {
                            field: "SES payload length and payload bytes",
                        }));
                    }
                    (None, Some(r), data)
                } else {
                    // A READ refused: reported like any error response.
                    let rsp = Response {
                        list: r.list,
                        opcode: r.opcode,
                        return_code: r.return_code,
                        message_id: r.message_id,
                        ri_generation: 0,
                        job_id: r.job_id,
                        modified_length: r.modified_length,
                    };
                    (Some(rsp), None, data)
                }
            }
            // Other forms only acknowledge (once their header parses).
            next => (None, None, SesHeader::parse(next, rest)?.1),
        };
        let id = a.dpdcid;
        let psn = a.ack_psn();
        let cfg = &configured(&self.cfg).pdc;
        let Some(p) = self.initiators.get_mut(id) else { return Ok(None) };
        let first = !self.senders.sender(&p.pdc).is_acked(psn);
        if response.is_some() && first && self.events.is_full() {
            // Nothing changed: the response comes again with the ACK of the packet's resend.
            return Err(EndpointError::EventsFull);
        }
        // A refused ACK changes nothing; there is nothing to answer.
        let ret = self.receivers.get_mut(p.ret);
        let Some(outcome) = self.senders.with_kept(&mut p.pdc, |pdc| pdc.handle_ack(ret, now, cfg, a)) else {
            // It asked an idle PDC for a CLEAR, with every request direction in use: dropped.
            self.stats.request_direction_drops = self.stats.request_direction_drops.wrapping_add(1);
            self.refresh_initiator(id, false);
            return Ok(None);
        };
        let marked = outcome.map_or(Marked::Nothing, |o| Marked::Sack(o.lost));
        let pdc = self.senders.sender(&p.pdc);
        self.stats.after_initiator_call(marked, &pdc.rtt());
        self.cc_signal = outcome.map_or(CcSignal::None, |o| CcSignal::of_ack(a, &o));
        let accepted = outcome.is_ok() && pdc.is_acked(psn);
        let placement = with_data.filter(|_| first && accepted).and_then(|r| self.place_ack_data(id, psn, &r, data));
        if let Some(response) = response.filter(|_| first && accepted) {
            if let Some((slot, _)) = self.message_at(id, psn) {
                let Some(m) = self.msgs.get(slot).and_then(MsgSlot::as_ref) else {
                    self.after_initiator_change(now, id);
                    return Ok(placement);
                };
                let (msg, len) = (m.handle(slot), m.len);
                let event = match (response.opcode, response.return_code) {
                    (ResponseOpcode::DefaultResponse, ReturnCode::Ok) => {
                        let short = response.modified_length != 0 && response.modified_length != len;
                        short.then_some(Event::Truncated { msg, psn, modified_length: response.modified_length })
                    }
                    _ => Some(Event::Response { msg, psn, response }),
                };
                if !matches!(response.return_code, ReturnCode::Ok | ReturnCode::Null) {
                    self.refused(id, slot, response.return_code);
                }
                if let Some(ev) = event {
                    // Room was checked above.
                    let _ = self.events.push_back(ev);
                }
            }
        }
        self.after_initiator_change(now, id);
        // Most ACKs place nothing: returning that alone copies no placement.
        let Some(placement) = placement else { return Ok(None) };
        Ok(Some(placement))
    }

    /// The target answered a packet of message `slot`, on initiator PDC `id`, with error `code`:
    /// the message fails ([`Failure::Refused`]) once what went out is acknowledged, and what did
    /// not go out goes as one MSG_ERROR (as uet-ref-prov's initiator does, `uet_tx_cancel`, a
    /// READ's requests too; the response named a packet of the message, so a target that keeps
    /// errored messages has it, and one that does not answers the MSG_ERROR with an error,
    /// reported as a response); a READ stops waiting for data. The first refusal counts, and a
    /// message the caller cut short stays so.
    fn refused(&mut self, id: u16, slot: usize, code: ReturnCode) {
        let sends = self.sends_requests(id);
        let Some(m) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut) else { return };
        if matches!(m.kind, MsgKind::Request | MsgKind::Read { .. }) {
            // A PDC that sends no more ends the message as it ends: no MSG_ERROR.
            let cut = if sends { m.sent } else { u32::MAX };
            m.kind = MsgKind::Cancelled { cut, why: Failure::Refused(code) };
            // A READ refused waits for no data.
            self.read_timers.set(slot as u16, None);
        }
    }

    /// Places the data an ACK carried for request `psn` of initiator PDC `id`: read data, if that
    /// request belongs to a READ and the data fit it; a fetching atomic's fetched value
    /// ([`FETCHED_MAX`] bytes at most, and no more than the request's length, at offset 0).
    fn place_ack_data<'a>(
        &mut self,
        id: u16,
        psn: u32,
        r: &crate::ses::ResponseWithData,
        data: &'a [u8],
    ) -> Option<Placement<'a>> {
        let (slot, _) = self.message_at(id, psn)?;
        let src = self.initiators.key(id)?.dst;
        // Data came: the READ's wait for the rest starts again (`after_initiator_change`).
        self.read_timers.set(slot as u16, None);
        let m = self.msgs.get_mut(slot)?.as_mut()?;
        if m.message_id != r.read_request_message_id {
            return None;
        }
        let header = match &mut m.kind {
            MsgKind::Read { arrived, .. } => {
                if u64::from(r.message_offset) + data.len() as u64 > u64::from(m.len) {
                    return None;
                }
                *arrived = arrived.saturating_add(data.len() as u32);
                m.sent_header(&self.extensions)
            }
            MsgKind::Request => {
                // A fetching atomic's old value (UE 1.0 §3.4: RESPONSE_W_DATA; uet-ref-prov's
                // target sends 8 bytes, for CSWAP too, at offset 0).
                let header = m.sent_header(&self.extensions);
                let fetching = header.common.opcode.fetches();
                // One element of the operands at most (8 of a CSWAP's 32 bytes in the reference).
                let fits = data.len() <= FETCHED_MAX && data.len() as u64 <= u64::from(m.len);
                if !fetching || r.message_offset != 0 || !fits {
                    return None;
                }
                header
            }
            // (A fetching atomic or a READ refused, `Cancelled`, takes no data.)
            MsgKind::ReadData { .. } | MsgKind::Cancelled { .. } => return None,
        };
        Some(Placement {
            src,
            pdc: id,
            message_id: m.message_id,
            psn,
            header,
            offset: r.message_offset,
            payload: data,
            read: Some(m.handle(slot)),
        })
    }

    /// Read data from the target of initiator PDC `dpdcid` (a request with next header RSP_DATA
    /// and an SES RESPONSE_W_DATA, UE 1.0 §3.5.20.1): recorded by the PDC's return window, and
    /// placed if new. Data for no READ in progress here (one that failed, or a message id never
    /// read) is acknowledged and dropped.
    pub(super) fn handle_read_data<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        r: Request,
        rest: &'a [u8],
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        let (ses, payload) = SesHeader::parse(NextHeader::RspData, rest)?;
        let Some(SesHeader::ResponseWithData(rsp)) = ses else { return Err(EndpointError::Unsupported) };
        if usize::from(rsp.payload_length) != payload.len() {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "SES payload length and payload bytes" }));
        }
        let PdcDest::Established { dpdcid: id } = r.dest else { return Err(EndpointError::Unsupported) };
        if self.side_of(id, r.spdcid, src) != Some(Side::Initiator) {
            if self.initiators.key(id).is_none() && self.targets.key(id).is_none() {
                // Read data for a PDC gone from here: NACK INV_DPDCID, so the target stops
                // resending it and closes (a packet naming no PDC, as for a request).
                self.nack_unknown(src, r.psn, r.spdcid);
            }
            return Ok(None);
        }
        let cfg = &configured(&self.cfg).pdc;
        // The READ this data answers, if its bytes fit it.
        let slot = self.started_on(id).find(|&slot| {
            self.msgs.get(slot).and_then(MsgSlot::as_ref).is_some_and(|m| {
                matches!(m.kind, MsgKind::Read { .. })
                    && m.message_id == rsp.read_request_message_id
                    && u64::from(rsp.message_offset) + payload.len() as u64 <= u64::from(m.len)
            })
        });
        let Some(p) = self.initiators.get_mut(id) else { return Ok(None) };
        let Some(ret) = self.receivers.take(&mut p.ret) else {
            // Every return direction is in use: dropped, as if lost (the target resends it).
            self.stats.return_receiver_drops = self.stats.return_receiver_drops.wrapping_add(1);
            return Ok(None);
        };
        // Read data leaves the PDC's request direction as it was: an idle one stays idle.
        let delivery =
            self.senders.with_kept(&mut p.pdc, |pdc| pdc.handle_data(ret, now, cfg, &r, payload.len() as u32, ce));
        let Some(Ok(delivery)) = delivery else {
            self.refresh_initiator(id, false);
            return Ok(None);
        };
        let mut placement = None;
        let m = slot.and_then(|slot| Some((slot, self.msgs.get_mut(slot)?.as_mut()?)));
        if let Some((slot, m)) = m {
            // The ACK naming this PSN answers it as the reference provider's initiator does:
            // DEFAULT_RESPONSE, RC_OK and the read's length when new, RC_NULL for a duplicate.
            let code = if delivery == Delivery::New { ReturnCode::Ok } else { ReturnCode::Null };
            let header = m.sent_header(&self.extensions);
            let mut answer = Response::default_for(&header, code);
            answer.modified_length = rsp.modified_length;
            if delivery != Delivery::Dropped {
                p.answer.set(r.psn, &answer);
            }
            if delivery == Delivery::New {
                if let MsgKind::Read { arrived, .. } = &mut m.kind {
                    *arrived = arrived.saturating_add(payload.len() as u32);
                    // Data arrived: the wait for the rest starts again (`after_initiator_change`).
                    self.read_timers.set(slot as u16, None);
                }
                placement = Some(Placement {
                    src,
                    pdc: id,
                    message_id: m.message_id,
                    psn: r.psn,
                    header,
                    offset: rsp.message_offset,
                    payload,
                    read: Some(m.handle(slot)),
                });
            }
        }
        self.after_initiator_change(now, id);
        Ok(placement)
    }

    /// Settles initiator PDC `id` after it changed: reports its events, completes or fails its
    /// messages, closes it when its work is done, and frees it once closed and settled.
    pub(super) fn after_initiator_change(&mut self, now: Instant, id: u16) {
        let Some(p) = self.initiators.get_mut(id) else { return };
        let ret = self.receivers.get(p.ret);
        // Polling events leaves an idle PDC idle.
        let _ = self.senders.with_kept(&mut p.pdc, |pdc| {
            while let Some(ev) = pdc.poll_event(ret) {
                if let InitiatorEvent::Failed(_) = ev {
                    p.active = SlotRef::NONE;
                }
            }
        });
        let pdc = self.senders.sender(&p.pdc);
        let restarted_by = pdc.start_psn().wrapping_sub(p.start_psn);
        p.start_psn = pdc.start_psn();
        if restarted_by != 0 && matches!(p.ret, ReceiverAt::Idle(_)) {
            // NEW_START_PSN: nothing came back yet, and the return direction starts again there.
            p.ret = ReceiverAt::Idle(IdleReceiver::new(p.start_psn));
        }
        let (base, failure, state) = (pdc.base_and_next().0, pdc.failure(), pdc.state());
        let (mut started_unsent, mut for_key);
        if restarted_by != 0 {
            // NEW_START_PSN moved every PSN of the PDC (nothing was acknowledged yet).
            let mut next = p.started.first();
            while let Some(slot) = next {
                next = SlotList::next(&self.pdc_links, slot);
                if let Some(m) = self.msgs.get_mut(usize::from(slot)).and_then(MsgSlot::as_mut) {
                    m.first_psn = m.first_psn.wrapping_add(restarted_by);
                }
            }
        }
        // Messages for this PDC's key that have not started keep it open.
        let queued_for_key = p.queued.first().is_some();
        // Completions are reported in send order, a batch at a time.
        loop {
            let mut done: heapless::Vec<(u64, u16), COMPLETION_BATCH> = heapless::Vec::new();
            let mut overflow = false;
            (started_unsent, for_key) = (false, queued_for_key);
            let mut next = self.initiators.get(id).and_then(|p| p.started.first());
            while let Some(slot) = next {
                next = SlotList::next(&self.pdc_links, slot);
                let slot = usize::from(slot);
                let Some(m) = self.msgs.get(slot).and_then(MsgSlot::as_ref) else { continue };
                if failure.is_none()
                    && !m.partly_acked
                    && !psn_after(base, m.first_psn)
                    && state != InitiatorState::Quiesce
                {
                    // Nothing of it is acknowledged, nor of any message started after it (they
                    // start in PSN order): none of them changes, and only Quiesce asks whether
                    // they are all sent. One marked partly acknowledged is walked past, however
                    // far the window has moved since (`psn_after` wraps after 2^31 PSNs, which a
                    // PDC without `limit_psn_range` may pass while a READ waits for its data).
                    for_key = true;
                    break;
                }
                let packets = m.packets();
                // Read before a failure gives the window up.
                let partly_acked = m.partly_acked || (failure.is_none() && m.sent > 0 && psn_after(base, m.first_psn));
                // A READ completes once its data arrived too.
                let data_in = match m.kind {
                    MsgKind::Read { arrived } => arrived >= m.len,
                    _ => true,
                };
                let requests_acked = m.sent == packets && psn_after(base, m.first_psn.wrapping_add(packets - 1));
                let (unsent, seq) = (m.sent < packets, m.seq);
                let completes = failure.is_some() || (requests_acked && data_in);
                // A READ whose requests are all acknowledged waits for its data at most
                // `idle_timeout` from now (or from the last data).
                let wait = self.config().pdc.idle_timeout;
                if let Some(m) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut) {
                    m.partly_acked = partly_acked;
                    let waits = matches!(m.kind, MsgKind::Read { .. }) && requests_acked && !completes;
                    if waits && wait != linklayer::Duration::ZERO && self.read_timers.deadline(slot as u16).is_none() {
                        self.read_timers.set(slot as u16, Some(now.saturating_add(wait)));
                    }
                }
                if completes && done.is_full() {
                    // The batch keeps the earliest sent: this one or its latest makes way.
                    overflow = true;
                    if let Some(latest) = done.iter_mut().max().filter(|l| l.0 > seq) {
                        *latest = (seq, slot as u16);
                    }
                    for_key = true;
                } else if !(completes && done.push((seq, slot as u16)).is_ok()) {
                    for_key = true;
                    started_unsent |= unsent;
                }
            }
            // Oldest first, by insertion (at most COMPLETION_BATCH entries): `sort_unstable`
            // brings a panic path for inconsistent orderings that the optimiser does not always
            // remove, and firmware images must not link one.
            let batch = done.as_mut_slice();
            for i in 1..batch.len() {
                for j in (1..=i).rev() {
                    match batch.get_mut(j - 1..=j) {
                        Some([a, b]) if *a > *b => core::mem::swap(a, b),
                        _ => break,
                    }
                }
            }
            let mut reported_all = true;
            for &(_, slot) in &done {
                let slot = usize::from(slot);
                let Some(m) = self.msgs.get(slot).and_then(MsgSlot::as_ref) else { continue };
                let event = match (failure, m.kind) {
                    (Some(f), _) => m.failed(slot, f),
                    (None, MsgKind::Cancelled { why, .. }) => m.failed(slot, why),
                    (None, _) => Event::Sent(m.handle(slot)),
                };
                // No room: the message stays and is settled on a later change.
                if reported_all && self.events.push_back(event).is_ok() {
                    self.free_msg(slot);
                } else {
                    reported_all = false;
                    for_key = true;
                    self.unsettled = true;
                }
            }
            if !(overflow && reported_all) {
                break;
            }
        }
        let Some(close_wanted) = self.initiators.get(id).map(|p| p.close_wanted) else { return };
        let wants_close = match state {
            // The target asked to close: once the message in progress is all sent.
            InitiatorState::Quiesce => !started_unsent,
            // Idle, or made room for another key (`close_idle_longest`) and still idle.
            InitiatorState::Creating | InitiatorState::Established => {
                (configured(&self.cfg).close_when_idle || close_wanted) && !for_key
            }
            InitiatorState::AckWait | InitiatorState::CloseAckWait | InitiatorState::Closed => false,
        };
        if wants_close {
            self.close_initiator(now, id);
        } else if let Some(p) = self.initiators.get_mut(id) {
            // A close that waited for a request direction is no longer wanted.
            p.close_wanted = false;
        }
        let Some(p) = self.initiators.get(id) else { return };
        let pdc = self.senders.sender(&p.pdc);
        let remove =
            pdc.state() == InitiatorState::Closed && p.messages == 0 && !pdc.has_pending(self.receivers.get(p.ret));
        let stopped = pdc.base_and_next().1;
        // Off the lists before a removal; what waited for it waits for a new PDC.
        self.refresh_initiator(id, remove);
        if remove {
            if let Some(key) = self.initiators.key(id).copied() {
                self.remember_start_hint(key.dst, stopped);
            }
            self.requeue_from(id);
            self.initiators.remove(id);
        }
    }
}
