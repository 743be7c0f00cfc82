//! The endpoint's indexes checked against the state they summarise, for fuzzers and tests: every
//! list well formed, each message on exactly the list its state says, each PDC on the list of
//! PDCs with new packets exactly when it has one, each deadline filed, every shared message-order
//! entry held by a target PDC, the key remembered as having no PDC still without one, and no PDC
//! left open or kept in the table with nothing left to do.

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
    /// Checks the endpoint's internal indexes against its state, in O(P + M); the first
    /// disagreement found, if any. For fuzz targets and tests (feature `fuzzing`): any `Err` is
    /// a bug in this crate.
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let well = |list: &SlotList, links: &[Link]| list.well_formed(links).ok_or("a list's links disagree");
        well(&self.unsent, &self.unsent_links)?;
        well(&self.initiators_ready, &self.initiators_ready_links)?;
        well(&self.initiators_new, &self.initiators_new_links)?;
        well(&self.initiators_idle, &self.initiators_idle_links)?;
        well(&self.targets_ready, &self.targets_ready_links)?;
        well(&self.targets_idle, &self.targets_idle_links)?;
        let used = self.msgs.iter().filter(|m| m.is_some()).count();
        let free = |&s: &u16| self.msgs.get(usize::from(s)).is_some_and(MsgSlot::is_none);
        if used != self.free_slots.used() || !self.free_slots.iter().all(|s| free(&s)) {
            return Err("message slots in use and free do not add up");
        }
        let seq = |s: u16| self.msgs.get(usize::from(s)).and_then(MsgSlot::as_ref).map_or(0, |m| m.seq);
        let in_order = |list: &SlotList, links: &[Link]| {
            let later = list.iter(links).skip(1).map(seq);
            list.iter(links).map(seq).zip(later).all(|(a, b)| a < b)
        };
        if !in_order(&self.unsent, &self.unsent_links) {
            return Err("the unsent list is out of order");
        }
        self.initiators.check_index()?;
        self.targets.check_index()?;
        let absent = self.absent_for.and_then(|(s, b)| Some((self.msgs.get(usize::from(s))?.as_ref()?, b)));
        if absent.is_some_and(|(m, _)| self.initiators.find(&m.key()).is_some()) {
            return Err("a key taken for one without a PDC has one");
        }
        if absent.is_some_and(|(m, b)| self.initiators.bucket_of(&m.key()) != usize::from(b)) {
            return Err("a key taken for one without a PDC is remembered with another's bucket");
        }
        let occupied = |list: &SlotList, links: &[Link], ids: &dyn Fn(usize) -> Option<u16>| {
            list.iter(links).all(|index| ids(usize::from(index)).is_some())
        };
        if !occupied(&self.initiators_ready, &self.initiators_ready_links, &|i| self.initiators.id_at(i))
            || !occupied(&self.initiators_new, &self.initiators_new_links, &|i| self.initiators.id_at(i))
            || !occupied(&self.initiators_idle, &self.initiators_idle_links, &|i| self.initiators.id_at(i))
            || !occupied(&self.targets_ready, &self.targets_ready_links, &|i| self.targets.id_at(i))
            || !occupied(&self.targets_idle, &self.targets_idle_links, &|i| self.targets.id_at(i))
        {
            return Err("a list names a PDC table slot that is empty");
        }
        let (limit, cfg) = (self.config().messages_per_pdc, &self.config().pdc);
        let turns = self.turns();
        let mut on_pdc_lists = 0;
        let mut receivers_used = [false; D];
        let mut senders_used = [false; S];
        well(&self.senders_waiting, &self.senders_waiting_links)?;
        if !occupied(&self.senders_waiting, &self.senders_waiting_links, &|i| self.initiators.id_at(i)) {
            return Err("a list names a PDC table slot that is empty");
        }
        if turns.yields && self.senders.has_free() {
            return Err("PDCs wait for a request direction while one is free");
        }
        for index in 0..P {
            let Some(id) = self.initiators.id_at(index) else { continue };
            let p = self.initiators.get(id).ok_or("a table slot without its PDC")?;
            if let ReceiverAt::Pooled(i) = p.ret {
                let idle = self.receivers.get(p.ret).and_then(ReturnReceiver::idle).is_some();
                claim(&mut receivers_used, i, idle)?;
            }
            let core = self.senders.view(p.pdc);
            // What the endpoint reads of the PDC, an idle one's form read as it is, is what its
            // state machine answers.
            let read = self.senders.sender(&p.pdc);
            let ret = self.receivers.get(p.ret);
            if (read.state(), read.can_send(cfg), read.has_pending(ret), read.poll_timeout())
                != (core.state(), core.can_send(cfg), core.has_pending(ret), core.poll_timeout())
                || (read.start_psn(), read.base_and_next(), read.failure())
                    != (core.start_psn(), (core.window().base(), core.window().next_psn()), core.failure())
                || (read.requests_in_flight(), read.lost_count(), read.rtt().smoothed())
                    != (core.requests_in_flight(), core.window().lost_count(), core.rtt().smoothed())
            {
                return Err("an idle initiator's form reads otherwise than its state machine");
            }
            let waits = SlotList::contains(&self.senders_waiting_links, index as u16);
            // What it would send were no PDC waiting (a holder whose turn is over keeps its
            // request direction until it is idle, and is listed as it was until its next change).
            let wants = p.next_new(core.state(), Turns { yields: false, ..turns }).is_some();
            if let SenderAt::Pooled(i) = p.pdc {
                let idle = core.idle().is_some();
                claim(&mut senders_used, i, idle && !wants)?;
                let listed = SlotList::contains(&self.initiators_new_links, index as u16);
                if idle && wants && p.next_new(core.state(), turns).is_none() && !listed {
                    return Err(
                        "an idle initiator whose turn is over holds its request direction, and nothing serves it",
                    );
                }
                if waits || p.close_wanted {
                    return Err("an initiator holding its request direction waits for one");
                }
            } else if p.close_wanted && !waits {
                return Err("an initiator's close waits for a request direction, and it is not on the list");
            }
            if waits && !(wants || p.close_wanted) {
                return Err("an initiator waits for a request direction it does not need");
            }
            let started = well(&p.started, &self.pdc_links)?;
            let queued = well(&p.queued, &self.pdc_links)?;
            on_pdc_lists += started + queued;
            if started != usize::from(p.messages) || p.messages > limit {
                return Err("an initiator's started list and message count disagree, or pass the limit");
            }
            if !in_order(&p.started, &self.pdc_links) || !in_order(&p.queued, &self.pdc_links) {
                return Err("an initiator's messages are out of order");
            }
            let is = |slot: u16, started: bool| {
                self.msgs
                    .get(usize::from(slot))
                    .and_then(MsgSlot::as_ref)
                    .is_some_and(|m| m.pdc == Some(id) && (m.sent > 0) == started)
            };
            if !p.started.iter(&self.pdc_links).all(|s| is(s, true)) {
                return Err("a started message does not name its PDC");
            }
            if !p.queued.iter(&self.pdc_links).all(|s| is(s, false)) {
                return Err("a queued message does not name its PDC, or has started");
            }
            // A PDC with a new packet is listed, or waits for its CCC's window (`check_cccs`).
            let new = SlotList::contains(&self.initiators_new_links, index as u16);
            let has_new = p.next_new(core.state(), turns).is_some() && core.can_send(cfg);
            // A holder that took its turn is listed as it was before PDCs came to wait until its
            // next change; one that stopped for them (it had requests outstanding, or a timer
            // running) is listed again only at its next change after they all took theirs.
            let holder = matches!(p.pdc, SenderAt::Pooled(_));
            let stale = holder && p.took_turn && !turns.yields;
            let gone_stale = holder && p.took_turn && turns.yields;
            if (new && !has_new && !gone_stale) || (has_new && !new && !waits && p.ccc.is_none() && !stale) {
                return Err("an initiator is on the list of PDCs with new packets, or off it, wrongly");
            }
            if new && waits {
                return Err("an initiator is listed and waits for a request direction at once");
            }
            let deadline = core.poll_timeout();
            if self.initiator_timers.deadline(index as u16) != deadline {
                return Err("an initiator's deadline is not filed");
            }
            let nothing_left =
                p.messages == 0 && p.queued.first().is_none() && !core.has_pending(self.receivers.get(p.ret));
            let open = matches!(core.state(), InitiatorState::Creating | InitiatorState::Established);
            if nothing_left && deadline.is_none() && open && self.config().close_when_idle && !p.close_wanted {
                return Err("an idle initiator stays open");
            }
            let idle = p.kept_idle(core.state()) && !core.has_pending(self.receivers.get(p.ret)) && deadline.is_none();
            if idle != SlotList::contains(&self.initiators_idle_links, index as u16) {
                return Err("an initiator is on the list of idle PDCs, or off it, wrongly");
            }
            if nothing_left && core.state() == InitiatorState::Closed {
                return Err("a closed initiator stays in the table");
            }
        }
        let filed = |timers: &TimerHeap<P>, ids: &dyn Fn(usize) -> Option<u16>| {
            let empty = (0..P).filter(|&i| ids(i).is_none());
            let with = (0..P).filter(|&i| timers.deadline(i as u16).is_some()).count();
            empty.clone().all(|i| timers.deadline(i as u16).is_none()) && with == timers.len()
        };
        if !filed(&self.initiator_timers, &|i| self.initiators.id_at(i))
            || !filed(&self.target_timers, &|i| self.targets.id_at(i))
        {
            return Err("a deadline is filed for an empty table slot");
        }
        let mut pooled = 0;
        let mut returns_used = [false; D];
        let mut helds_used = [false; D];
        for index in 0..P {
            let Some(id) = self.targets.id_at(index) else { continue };
            let t = self.targets.get(id).ok_or("a table slot without its PDC")?;
            if let ReturnAt::Pooled(i) = t.ret {
                let idle = self.returns.get(t.ret).and_then(ReturnDirection::idle).is_some();
                claim(&mut returns_used, i, idle)?;
            }
            if t.held.is_pooled() {
                let i = self.helds.index(t.held).and_then(|i| helds_used.get_mut(i));
                if core::mem::replace(i.ok_or("a block of held responses outside the pool")?, true) {
                    return Err("two target PDCs share a block of held responses");
                }
                // Else it was claimed for the response to the request just delivered.
                if self.helds.block(t.held).is_none_or(HeldResponses::is_empty) && !self.helds.is_claimed(t.held) {
                    return Err("an empty block of held responses is not back in the pool");
                }
            }
            // The last own slot takes only a response to a request received in order: every PSN
            // up to the one held received (what keeps the PDC from deadlocking).
            let cack = t.pdc.window().cack_psn();
            if t.own.psns().filter(|&psn| crate::pdc::window::psn_after(psn, cack)).count() > 1 {
                return Err("a target PDC's own slots hold two responses to requests received out of order");
            }
            let holds = !t.own.is_empty() || t.held.is_pooled();
            if holds && t.pdc.state() == crate::pdc::TargetState::Closed {
                return Err("a closed target PDC holds responses");
            }
            on_pdc_lists += well(&t.runs, &self.pdc_links)?;
            pooled += t.order.pooled();
            if t.order.in_progress() > W {
                return Err("a target tracks more than W messages");
            }
            let run = |slot: u16| {
                let m = self.msgs.get(usize::from(slot)).and_then(MsgSlot::as_ref);
                m.is_some_and(|m| m.kind.read_data_pdc() == Some(id))
            };
            if !t.runs.iter(&self.pdc_links).all(run) {
                return Err("a read data run is not of its PDC");
            }
            if self.target_timers.deadline(index as u16) != t.pdc.poll_timeout(self.returns.get(t.ret)) {
                return Err("a target's deadline is not filed");
            }
            // (Kept idle, it holds no block of responses and has no return direction pooled.)
            let idle = t.kept_idle() && !t.pdc.has_pending(&t.own, None);
            if idle != SlotList::contains(&self.targets_idle_links, index as u16) {
                return Err("a target is on the list of idle PDCs, or off it, wrongly");
            }
        }
        pool_accounts(&mut returns_used, self.returns.free_entries(), self.returns.used())
            .map_err(|()| "the target return directions free and in use are not the pool's")?;
        pool_accounts(&mut receivers_used, self.receivers.free_entries(), self.receivers.used())
            .map_err(|()| "the initiator return directions free and in use are not the pool's")?;
        pool_accounts(&mut senders_used, self.senders.free_entries(), self.senders.used())
            .map_err(|()| "the initiator request directions free and in use are not the pool's")?;
        pool_accounts(&mut helds_used, self.helds.free_entries(), self.helds.used())
            .map_err(|()| "the blocks of held responses free and in use are not the pool's")?;
        if pooled != self.order_pool.in_use() {
            return Err("the shared message-order entries in use are not the target PDCs' own");
        }
        let orders = (0..P).filter_map(|i| self.targets.get(self.targets.id_at(i)?)).map(|t| &t.order);
        self.order_pool.check_lists(orders)?;
        let on_links = (0..M).filter(|&slot| SlotList::contains(&self.pdc_links, slot as u16)).count();
        if on_links != on_pdc_lists {
            return Err("a message is linked on no PDC's list, or on two");
        }
        for (slot, m) in self.msgs.iter().enumerate() {
            let s = slot as u16;
            let Some(m) = m.as_ref() else {
                let linked = SlotList::contains(&self.unsent_links, s) || SlotList::contains(&self.pdc_links, s);
                if linked || self.read_timers.deadline(s).is_some() {
                    return Err("a free message slot is still listed");
                }
                continue;
            };
            // Connectionless messages and read data wait on the unsent list while they have
            // packets to send; a PDC message waits there only while no PDC holds it.
            let unheld = m.service.pdc_mode().is_none() || m.kind.read_data_pdc().is_some();
            let waits = if unheld { !m.all_sent() } else { m.pdc.is_none() };
            if SlotList::contains(&self.unsent_links, s) != waits {
                return Err("a message is on the unsent list, or off it, wrongly");
            }
            if !unheld && m.pdc.is_none() && self.initiators.find(&m.key()).is_some() {
                return Err("a message waits for a PDC its key has");
            }
            if !matches!(m.kind, MsgKind::Read { .. }) && self.read_timers.deadline(s).is_some() {
                return Err("a message that is no READ has a READ deadline");
            }
        }
        self.check_extensions()?;
        self.check_cccs()?;
        self.check_credit()
    }

    /// Each message's extension header is kept in an entry of its own, and every entry in use
    /// is a message's.
    fn check_extensions(&self) -> Result<(), &'static str> {
        let mut seen = [0u64; (1 << 15) / 64];
        let mut held = 0;
        for m in self.msgs.iter().filter_map(MsgSlot::as_ref) {
            let Some(i) = m.ext.index() else { continue };
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            match seen.get_mut(word) {
                Some(w) if *w & bit == 0 && self.extensions.get(m.ext).is_some() => *w |= bit,
                _ => return Err("a message's extension header is not kept, or shares its entry"),
            }
            held += 1;
        }
        if held != self.extensions.used() {
            return Err("an extension header is kept for no message");
        }
        Ok(())
    }
}

/// Marks pooled return direction `i` as owned by the PDC at hand: an error when it lies outside
/// its pool, another PDC owns it too, or it is `idle` (it should be back in the pool).
fn claim(owned: &mut [bool], i: u16, idle: bool) -> Result<(), &'static str> {
    let used = owned.get_mut(usize::from(i)).ok_or("a return direction outside its pool")?;
    if core::mem::replace(used, true) {
        return Err("two PDCs share a return direction");
    }
    if idle {
        return Err("an idle return direction is not back in its pool");
    }
    Ok(())
}

/// Whether a pool's entries add up: those the PDCs hold (`owned`, each by one PDC) are the pool's
/// `used`, and the free ones are each listed once, none owned, all the others.
fn pool_accounts(owned: &mut [bool], free: impl Iterator<Item = u16>, used: usize) -> Result<(), ()> {
    let in_use = owned.iter().filter(|&&u| u).count();
    let mut free_count = 0;
    for i in free {
        match owned.get_mut(usize::from(i)) {
            Some(seen @ false) => *seen = true,
            _ => return Err(()),
        }
        free_count += 1;
    }
    if in_use == used && in_use + free_count == owned.len() { Ok(()) } else { Err(()) }
}
