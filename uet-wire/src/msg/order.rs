//! Message completion in send order at the target (RUD delivers packets in any order, but
//! messages complete to the application in the order they were sent).
//!
//! **Message ids** come from any counter. The reference provider (`ultraethernet/uet-ref-prov`,
//! `uet_api.c` `uet_alloc_msg_id`) takes SES `message_id`s from one pool per provider instance,
//! shared by all its PDCs: on one PDC they start anywhere, skip values, and come back out of order
//! once ids are reused. The target therefore assumes only that the ids of a PDC's messages in
//! progress differ, and orders messages by **the PSN of their first packet** (SOM, message offset
//! 0): PSNs are numbered in send order on a PDC. Our own initiator numbers the messages of each
//! PDC 0, 1, 2, … (wrapping at 2^16) and sends each message's packets on consecutive PSNs, which
//! satisfies both rules.
//!
//! The target counts the bytes of each message as its packets arrive (the PDC has already dropped
//! duplicates, so every byte counts once) and knows its length from `request_length`, which every
//! standard request carries. A message is complete when all its bytes arrived, and is *released*
//! (*project-defined*: the public sources give no rule) once it is complete, every PSN before its
//! first packet has arrived (so no message that started earlier can still be unknown), and every
//! message that started earlier is released.
//!
//! **A cancelled message** ends where its initiator stopped: an initiator that gives a message
//! up before sending all of it sends a MSG_ERROR request (SES opcode 0x0F: no SOM, EOM, no
//! payload, `message_offset` the bytes it sent; uet-ref-prov `uet_rx_cancel_pkt` handles it so,
//! and its initiator sends one after an error response to a message it had not finished
//! sending). The message is then complete once those bytes arrived ([`MessageOrder::on_cancel`]);
//! its later packets may state the original `request_length`. Without this, the bytes never
//! sent would keep it in progress for good, and each such message would hold one of the `N`.
//! A new packet of a cancelled message all of whose bytes arrived is the message sent again
//! under its id: the caller releases the cancelled one first ([`MessageOrder::release_cancelled`];
//! *project-defined*, as is letting a cancelled message's later packets state any length from
//! the cut up: uet-ref-prov's target keeps no order and matches packets by id alone).
//!
//! [`MessageOrder`] tracks up to `N` messages in progress: [`OWN_SLOTS`] (two) in itself, the
//! others in an [`OrderPool`] the PDCs of one endpoint share (*project-defined*: a PDC rarely has
//! many messages in progress, so thousands of PDCs need not each keep room for `N`). A packet of
//! another message while all `N` are in use, or while its own two are and the pool has no free
//! entry, is refused with [`OrderError::NoRoom`]; the caller NACKs it NO_SES_MSG_AVAIL (0x09), a
//! retransmit-class code, so it comes back later.
//!
//! **No deadlock when a peer starts more messages than `N`** (*project-defined*). If the `N`
//! tracked messages all started after one whose first packet is still missing, none can be
//! released before that one, and it cannot be tracked: each side would wait for the other
//! forever. So the caller that is refused for want of room first releases a complete message
//! out of order ([`MessageOrder::release_complete`]); RUD promises no order, so only the
//! completion order the application sees suffers, and only while a peer exceeds the window (an
//! endpoint whose `messages_per_pdc` is at most the target's `N` never does). A message still
//! arriving in part progresses, since its packets are taken — unless it is longer than the
//! sender's window of PSNs and waits for that earlier message's resends to move the window: a
//! message's packets take consecutive PSNs, so at most one tracked message can wait so, and
//! with `N` at least 2 the earlier one always finds room (a complete message to release, or a
//! free slot). `N` is therefore 2 or more, and those two are the PDC's own: other PDCs holding
//! every pool entry cannot take them, so the argument holds for each PDC whatever the others do.
//! The price of sharing: while the pool is full, a PDC whose own two are in use releases
//! complete messages out of order as if its peer exceeded `N`.

use crate::pdc::psn_after;
use crate::pdc::table::SlotRef;

/// Why a packet was refused. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OrderError {
    /// The packet starts a message while `N` others are in progress.
    NoRoom {
        /// The packet's message id.
        message_id: u16,
    },
    /// The packet's bytes do not fit its message's length, or its `request_length` differs from
    /// the one an earlier packet of the message gave (for a cancelled message: is below the
    /// bytes sent); or a MSG_ERROR cancels a message cancelled already, or one of which more
    /// bytes arrived than it says were sent.
    Inconsistent {
        /// The packet's message id.
        message_id: u16,
    },
}

impl core::fmt::Display for OrderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OrderError::NoRoom { message_id } => write!(f, "no room to track message {message_id}"),
            OrderError::Inconsistent { message_id } => {
                write!(f, "packet does not fit message {message_id}'s length")
            }
        }
    }
}

impl core::error::Error for OrderError {}

/// One message in progress (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Slot {
    message_id: u16,
    /// Whether its first packet arrived; `first_psn` is that packet's PSN then.
    started: bool,
    /// Whether its initiator cancelled it (MSG_ERROR): `total` is then the bytes it sent.
    cancelled: bool,
    first_psn: u32,
    /// Bytes arrived (never more than `total`), and the message's length.
    received: u32,
    total: u32,
}

impl Slot {
    /// All-zero bytes (what a free pool entry holds).
    const VACANT: Slot = Slot { message_id: 0, started: false, cancelled: false, first_psn: 0, received: 0, total: 0 };

    /// Whether a packet stating `request_length` belongs to this message: the length its
    /// packets state, which a cancelled message's length is at most.
    fn states(&self, request_length: u32) -> bool {
        if self.cancelled { request_length >= self.total } else { request_length == self.total }
    }

    fn complete(&self) -> bool {
        self.received == self.total
    }

    /// The PSN of its first packet, once that arrived.
    fn first(&self) -> Option<u32> {
        self.started.then_some(self.first_psn)
    }
}

/// Messages a [`MessageOrder`] keeps in itself; the rest of its `N` go to an [`OrderPool`].
pub const OWN_SLOTS: usize = 2;

/// An entry of an [`OrderPool`]: a message, and the next entry of its [`MessageOrder`]'s list
/// (or, free, of the free list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Entry {
    slot: Slot,
    next: SlotRef,
}

/// Room for messages in progress that the [`MessageOrder`]s of one endpoint share, beyond the
/// [`OWN_SLOTS`] each keeps (`N` at most 2^15; 20 bytes an entry). Empty, it is all-zero bytes.
///
/// A message order takes an entry for a message once its own slots are full (and it tracks
/// fewer than its `N`), and gives it back when the message is released or the order is
/// [cleared](MessageOrder::clear). When every entry is in use, a PDC's new message waits for room
/// as when its own `N` are in use ([`OrderError::NoRoom`]); its own slots keep the no-deadlock
/// rule of the module doc true for every PDC whatever the others hold.
#[derive(Clone, Debug)]
pub struct OrderPool<const N: usize> {
    entries: [Entry; N],
    /// The entries given back, last given first, then those never used: `fresh..N`.
    returned: SlotRef,
    fresh: u16,
    in_use: u16,
}

impl<const N: usize> Default for OrderPool<N> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const N: usize> OrderPool<N> {
    const SIZE_OK: () = assert!(N <= 1 << 15, "OrderPool<N>: N (shared entries) at most 2^15");

    /// Every entry free (all-zero bytes).
    pub const EMPTY: Self = {
        let () = Self::SIZE_OK;
        OrderPool {
            entries: [Entry { slot: Slot::VACANT, next: SlotRef::NONE }; N],
            returned: SlotRef::NONE,
            fresh: 0,
            in_use: 0,
        }
    };

    /// Entries in use.
    pub fn in_use(&self) -> usize {
        usize::from(self.in_use)
    }

    /// Every entry free again, in place. Only for a pool whose message orders are all dropped
    /// or cleared: one still holding entries would share them with the next taker.
    pub fn clear(&mut self) {
        (self.returned, self.fresh, self.in_use) = (SlotRef::NONE, 0, 0);
    }

    /// The entry [`OrderPool::take`] gives next.
    fn next_free(&self) -> Option<usize> {
        let fresh = usize::from(self.fresh);
        self.returned.index().or((fresh < N).then_some(fresh))
    }

    /// A free entry, now holding `slot` before `next` on a list.
    fn take(&mut self, slot: Slot, next: SlotRef) -> Option<usize> {
        let i = self.next_free()?;
        let entry = self.entries.get_mut(i)?;
        if self.returned.index().is_some() {
            self.returned = entry.next;
        } else {
            self.fresh += 1;
        }
        *entry = Entry { slot, next };
        self.in_use += 1;
        Some(i)
    }

    /// Frees entry `i`, which is in use.
    fn give(&mut self, i: usize) {
        if let Some(entry) = self.entries.get_mut(i) {
            (entry.next, self.returned) = (self.returned, SlotRef::to(i));
            self.in_use = self.in_use.saturating_sub(1);
        }
    }

    /// Checks that `orders` (every order that uses this pool) hold disjoint lists of entries,
    /// each as long as it counts, and that the free list holds the rest: the first disagreement,
    /// if any. For tests and fuzz targets.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn check_lists<'a, const W: usize>(
        &self,
        orders: impl Iterator<Item = &'a MessageOrder<W>>,
    ) -> Result<(), &'static str> {
        let mut seen = [0u64; (1 << 15) / 64];
        let mut mark = |i: usize| {
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            match seen.get_mut(word) {
                Some(w) if *w & bit == 0 && i < usize::from(self.fresh) => {
                    *w |= bit;
                    Ok(())
                }
                _ => Err("a shared message-order entry is on two lists, or was never handed out"),
            }
        };
        let mut held = 0;
        for order in orders {
            let mut at = order.head.index();
            for _ in 0..order.pooled {
                let i = at.ok_or("a message order's list is shorter than its count")?;
                mark(i)?;
                at = self.next(i);
            }
            if at.is_some() {
                return Err("a message order's list is longer than its count");
            }
            held += usize::from(order.pooled);
        }
        let mut free = 0;
        let mut at = self.returned.index();
        while let Some(i) = at {
            mark(i)?;
            (at, free) = (self.next(i), free + 1);
        }
        if held != self.in_use() || held + free != usize::from(self.fresh) {
            return Err("the shared message-order entries held, free and never used do not add up");
        }
        Ok(())
    }

    /// The entry after `i` on its list.
    fn next(&self, i: usize) -> Option<usize> {
        self.entries.get(i)?.next.index()
    }
}

/// A packet [`MessageOrder::admit`] found room for: where its message is kept (`None`: a new
/// one) and that message's bytes received with the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admitted {
    place: Option<Place>,
    message_id: u16,
    /// The message's length: its `request_length`, or for a cancel the bytes its initiator sent.
    total: u32,
    received: u32,
    /// The packet cancels the message (MSG_ERROR).
    cancel: bool,
}

/// Where one of a PDC's messages in progress is kept: an own slot, or a pool entry and the
/// entry before it on the PDC's list (`None`: it is the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Own(usize),
    Pooled { at: usize, before: Option<usize> },
}

/// The messages a [`MessageOrder`] tracks, where each is kept: its own slots, then its list of
/// pool entries.
struct Messages<'a, const K: usize> {
    own: &'a [Option<Slot>; OWN_SLOTS],
    next_own: usize,
    pool: &'a OrderPool<K>,
    at: Option<usize>,
    before: Option<usize>,
    left: u16,
}

impl<const K: usize> Iterator for Messages<'_, K> {
    type Item = (Place, Slot);

    fn next(&mut self) -> Option<(Place, Slot)> {
        while let Some(own) = self.own.get(self.next_own) {
            self.next_own += 1;
            if let Some(s) = own {
                return Some((Place::Own(self.next_own - 1), *s));
            }
        }
        let at = self.at.filter(|_| self.left > 0)?;
        let entry = self.pool.entries.get(at)?;
        let place = Place::Pooled { at, before: self.before };
        (self.at, self.before, self.left) = (entry.next.index(), Some(at), self.left - 1);
        Some((place, entry.slot))
    }
}

/// The messages of one PDC in progress, `N` at most: [`OWN_SLOTS`] here, the rest in an
/// [`OrderPool`] shared with other PDCs, which every call that needs them is given (always the
/// same pool). Not `Clone`: a copy would share its pool entries with the original.
#[derive(Debug)]
pub struct MessageOrder<const N: usize> {
    own: [Option<Slot>; OWN_SLOTS],
    /// Its first entry in the pool, newest first.
    head: SlotRef,
    /// Its entries in the pool.
    pooled: u16,
}

impl<const N: usize> Default for MessageOrder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> MessageOrder<N> {
    const SIZE_OK: () = assert!(N >= 2 && N <= 1 << 15, "2 to 2^15 messages in progress (see the module doc)");

    /// No message in progress.
    pub const fn new() -> Self {
        let () = Self::SIZE_OK;
        MessageOrder { own: [None; OWN_SLOTS], head: SlotRef::NONE, pooled: 0 }
    }

    /// Messages in progress.
    pub fn in_progress(&self) -> usize {
        self.own.iter().flatten().count() + usize::from(self.pooled)
    }

    /// Entries of the pool this order holds.
    pub fn pooled(&self) -> usize {
        usize::from(self.pooled)
    }

    /// Every message in progress, and where it is kept.
    fn messages<'a, const K: usize>(&'a self, pool: &'a OrderPool<K>) -> Messages<'a, K> {
        Messages { own: &self.own, next_own: 0, pool, at: self.head.index(), before: None, left: self.pooled }
    }

    /// Whether a new message can be tracked: a free own slot, or (fewer than `N` in progress)
    /// a free pool entry.
    fn has_room<const K: usize>(&self, pool: &OrderPool<K>) -> bool {
        self.own.iter().any(Option::is_none) || (self.in_progress() < N && pool.next_free().is_some())
    }

    /// Whether a packet of `len` bytes of message `message_id`, whose `request_length` it
    /// states, can be taken, and where its message is kept: what [`MessageOrder::check`] answers,
    /// kept for [`MessageOrder::take`] (valid until the order or its pool changes).
    pub(crate) fn admit<const K: usize>(
        &self,
        pool: &OrderPool<K>,
        message_id: u16,
        request_length: u32,
        len: u16,
    ) -> Result<Admitted, OrderError> {
        let (place, received, total) = self.find(pool, message_id, request_length)?;
        let received = received + u64::from(len);
        match u32::try_from(received) {
            Ok(received) if received <= total => Ok(Admitted { place, message_id, total, received, cancel: false }),
            _ => Err(OrderError::Inconsistent { message_id }),
        }
    }

    /// Where message `message_id`, whose `request_length` a packet states, is kept (`None`: it
    /// is new and there is room for it), its bytes received and its length.
    fn find<const K: usize>(
        &self,
        pool: &OrderPool<K>,
        message_id: u16,
        request_length: u32,
    ) -> Result<(Option<Place>, u64, u32), OrderError> {
        match self.messages(pool).find(|(_, s)| s.message_id == message_id) {
            Some((_, s)) if !s.states(request_length) => Err(OrderError::Inconsistent { message_id }),
            Some((place, s)) => Ok((Some(place), u64::from(s.received), s.total)),
            None if self.has_room(pool) => Ok((None, 0, request_length)),
            None => Err(OrderError::NoRoom { message_id }),
        }
    }

    /// [`MessageOrder::admit`] for a MSG_ERROR (UE 1.0 §3.4, SES opcode 0x0F) of message
    /// `message_id`, whose `request_length` it states: its initiator stopped after `sent` bytes
    /// (the packet's `message_offset`), so the message is complete once those arrived. Refused
    /// ([`OrderError::Inconsistent`]) for a message already cancelled, or one of which more than
    /// `sent` bytes arrived or whose length is under `sent`.
    pub(crate) fn admit_cancel<const K: usize>(
        &self,
        pool: &OrderPool<K>,
        message_id: u16,
        request_length: u32,
        sent: u32,
    ) -> Result<Admitted, OrderError> {
        let (place, received, total) = self.find(pool, message_id, request_length)?;
        let cancelled = place.and_then(|p| self.slot(pool, p)).is_some_and(|s| s.cancelled);
        if cancelled || received > u64::from(sent) || sent > total {
            return Err(OrderError::Inconsistent { message_id });
        }
        Ok(Admitted { place, message_id, total: sent, received: received as u32, cancel: true })
    }

    /// Whether [`MessageOrder::on_packet`] would take the packet (same arguments but the PSN and
    /// offset); nothing changes.
    pub fn check<const K: usize>(
        &self,
        pool: &OrderPool<K>,
        message_id: u16,
        request_length: u32,
        len: u16,
    ) -> Result<(), OrderError> {
        self.admit(pool, message_id, request_length, len).map(|_| ())
    }

    /// Counts the packet `admitted` answered for (nothing changed the order or its pool since),
    /// received at `psn`, at byte `offset` of its message: [`MessageOrder::on_packet`] without
    /// looking the message up again.
    pub(crate) fn take<const K: usize>(
        &mut self,
        pool: &mut OrderPool<K>,
        admitted: Admitted,
        psn: u32,
        offset: u32,
    ) -> Result<bool, OrderError> {
        let Admitted { place, message_id, total, received, cancel } = admitted;
        let place = match place {
            Some(place) => place,
            None => {
                let new = Slot { message_id, total, ..Slot::VACANT };
                self.add(pool, new).ok_or(OrderError::NoRoom { message_id })?
            }
        };
        let s = self.slot_mut(pool, place).ok_or(OrderError::NoRoom { message_id })?;
        (s.received, s.total) = (received, total);
        s.cancelled |= cancel;
        // (A MSG_ERROR at offset 0 for a message started already does not move its start.)
        if offset == 0 && !s.started {
            (s.started, s.first_psn) = (true, psn);
        }
        Ok(s.complete())
    }

    /// Counts a new packet (the PDC took it, so it is no duplicate) of `len` bytes at byte
    /// `offset` of message `message_id`, whose `request_length` it states, received at `psn`.
    /// Returns whether the message is now complete. A refusal changes nothing.
    pub fn on_packet<const K: usize>(
        &mut self,
        pool: &mut OrderPool<K>,
        message_id: u16,
        psn: u32,
        offset: u32,
        request_length: u32,
        len: u16,
    ) -> Result<bool, OrderError> {
        let admitted = self.admit(pool, message_id, request_length, len)?;
        self.take(pool, admitted, psn, offset)
    }

    /// Counts a new MSG_ERROR of message `message_id`, whose `request_length` it states,
    /// received at `psn`, its initiator having sent `sent` bytes of it (the packet's
    /// `message_offset`): the message is complete once those arrived (see the module doc).
    /// Returns whether it is now complete. A refusal changes nothing.
    pub fn on_cancel<const K: usize>(
        &mut self,
        pool: &mut OrderPool<K>,
        message_id: u16,
        psn: u32,
        request_length: u32,
        sent: u32,
    ) -> Result<bool, OrderError> {
        let admitted = self.admit_cancel(pool, message_id, request_length, sent)?;
        self.take(pool, admitted, psn, sent)
    }

    /// Tracks `slot`: in an own slot if one is free, else in a pool entry.
    fn add<const K: usize>(&mut self, pool: &mut OrderPool<K>, slot: Slot) -> Option<Place> {
        if let Some((i, own)) = self.own.iter_mut().enumerate().find(|(_, s)| s.is_none()) {
            *own = Some(slot);
            return Some(Place::Own(i));
        }
        if self.in_progress() >= N {
            return None;
        }
        let i = pool.take(slot, self.head)?;
        (self.head, self.pooled) = (SlotRef::to(i), self.pooled + 1);
        Some(Place::Pooled { at: i, before: None })
    }

    fn slot<'a, const K: usize>(&'a self, pool: &'a OrderPool<K>, place: Place) -> Option<&'a Slot> {
        match place {
            Place::Own(i) => self.own.get(i)?.as_ref(),
            Place::Pooled { at, .. } => Some(&pool.entries.get(at)?.slot),
        }
    }

    fn slot_mut<'a, const K: usize>(&'a mut self, pool: &'a mut OrderPool<K>, place: Place) -> Option<&'a mut Slot> {
        match place {
            Place::Own(i) => self.own.get_mut(i)?.as_mut(),
            Place::Pooled { at, .. } => Some(&mut pool.entries.get_mut(at)?.slot),
        }
    }

    /// Stops tracking the message at `place`; returns its id and length.
    fn remove<const K: usize>(&mut self, pool: &mut OrderPool<K>, place: Place) -> Option<(u16, u32)> {
        let s = match place {
            Place::Own(i) => self.own.get_mut(i)?.take()?,
            Place::Pooled { at, before } => {
                let entry = *pool.entries.get(at)?;
                match before {
                    Some(before) => pool.entries.get_mut(before)?.next = entry.next,
                    None => self.head = entry.next,
                }
                pool.give(at);
                self.pooled -= 1;
                entry.slot
            }
        };
        Some((s.message_id, s.total))
    }

    /// Releases the next message in send order, if it is complete and nothing before it is
    /// missing: every PSN up to `cack_psn` (the PDC's cumulative ACK PSN) arrived. Returns its
    /// id and length.
    pub fn release<const K: usize>(&mut self, pool: &mut OrderPool<K>, cack_psn: u32) -> Option<(u16, u32)> {
        // The known message that started first; any message not yet known started after
        // `cack_psn` (its first packet is missing), so it cannot come before one at or below
        // `cack_psn + 1`.
        let (place, s, first) = self
            .messages(pool)
            .filter_map(|(place, s)| Some((place, s, s.first()?)))
            .reduce(|a, b| if psn_after(a.2, b.2) { b } else { a })?;
        if psn_after(first, cack_psn.wrapping_add(1)) || !s.complete() {
            return None;
        }
        self.remove(pool, place)
    }

    /// Stops tracking message `message_id` if its initiator cancelled it and every byte it sent
    /// arrived, whether or not the messages that started before it are released: a new packet
    /// naming it belongs to the message sent again under the same id (uet-ref-prov resends a
    /// message it cancelled, whole and with its id, after NO_MATCH or DISABLED_GEN). Returns its
    /// id and length.
    pub fn release_cancelled<const K: usize>(
        &mut self,
        pool: &mut OrderPool<K>,
        message_id: u16,
    ) -> Option<(u16, u32)> {
        let (place, _) =
            self.messages(pool).find(|(_, s)| s.message_id == message_id && s.cancelled && s.complete())?;
        self.remove(pool, place)
    }

    /// Releases the complete message that started first, whether or not everything before it
    /// has arrived: room for a message that started earlier, when all `N` slots are in use
    /// (see the module doc). Returns its id and length.
    pub fn release_complete<const K: usize>(&mut self, pool: &mut OrderPool<K>) -> Option<(u16, u32)> {
        let (place, _) = self
            .messages(pool)
            .filter(|(_, s)| s.complete())
            .map(|(place, s)| (place, s.first().unwrap_or(0)))
            .reduce(|a, b| if psn_after(a.1, b.1) { b } else { a })?;
        self.remove(pool, place)
    }

    /// Tracks nothing, and gives its pool entries back.
    pub fn clear<const K: usize>(&mut self, pool: &mut OrderPool<K>) {
        let mut at = self.head.index();
        for _ in 0..self.pooled {
            let Some(i) = at else { break };
            at = pool.next(i);
            pool.give(i);
        }
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The messages `o` tracks, where they are kept.
    fn tracked<const N: usize, const K: usize>(o: &MessageOrder<N>, pool: &OrderPool<K>) -> Vec<(Place, Slot)> {
        o.messages(pool).collect()
    }

    #[test]
    fn release_complete_makes_room_for_an_earlier_message() {
        // Two slots hold messages 2 and 3 (PSNs 11, 12), both complete, waiting for message 1
        // (PSN 10), which has no room: releasing the earliest complete one makes room.
        let (mut o, mut pool) = (MessageOrder::<2>::new(), OrderPool::<0>::EMPTY);
        o.on_packet(&mut pool, 3, 12, 0, 1, 1).unwrap();
        o.on_packet(&mut pool, 2, 11, 0, 1, 1).unwrap();
        assert_eq!(o.release(&mut pool, 9), None);
        assert_eq!(o.check(&pool, 1, 1, 1), Err(OrderError::NoRoom { message_id: 1 }));
        assert_eq!(o.release_complete(&mut pool), Some((2, 1)));
        assert_eq!(o.on_packet(&mut pool, 1, 10, 0, 1, 1), Ok(true));
        assert_eq!(o.release(&mut pool, 12), Some((1, 1)));
        assert_eq!(o.release(&mut pool, 12), Some((3, 1)));
        // Nothing complete: nothing to release.
        o.on_packet(&mut pool, 4, 13, 0, 2, 1).unwrap();
        assert_eq!(o.release_complete(&mut pool), None);
    }

    #[test]
    fn completes_in_send_order() {
        let (mut o, mut pool) = (MessageOrder::<4>::new(), OrderPool::<4>::EMPTY);
        // Message 9 (PSNs 100–101) and message 3 (PSN 102, one packet): 3 completes first but
        // waits for 9, which started earlier.
        assert_eq!(o.on_packet(&mut pool, 3, 102, 0, 100, 100), Ok(true));
        assert_eq!(o.release(&mut pool, 99), None);
        assert_eq!(o.on_packet(&mut pool, 9, 101, 4096, 5000, 904), Ok(false));
        assert_eq!(o.release(&mut pool, 99), None);
        assert_eq!(o.on_packet(&mut pool, 9, 100, 0, 5000, 4096), Ok(true));
        assert_eq!(o.release(&mut pool, 102), Some((9, 5000)));
        assert_eq!(o.release(&mut pool, 102), Some((3, 100)));
        assert_eq!(o.release(&mut pool, 102), None);
        // A zero-length message completes with its one (empty) packet; its id may be one used
        // before.
        assert_eq!(o.on_packet(&mut pool, 9, 103, 0, 0, 0), Ok(true));
        assert_eq!(o.release(&mut pool, 103), Some((9, 0)));
        // Refusals change nothing.
        o.on_packet(&mut pool, 1, 104, 0, 10, 5).unwrap();
        let before = tracked(&o, &pool);
        assert_eq!(o.on_packet(&mut pool, 1, 105, 5, 10, 6), Err(OrderError::Inconsistent { message_id: 1 }));
        assert_eq!(o.on_packet(&mut pool, 1, 105, 5, 12, 5), Err(OrderError::Inconsistent { message_id: 1 }));
        assert_eq!(tracked(&o, &pool), before);
        for id in 20..23 {
            o.on_packet(&mut pool, id, 200 + u32::from(id), 0, 10, 1).unwrap();
        }
        let full = (tracked(&o, &pool), pool.in_use());
        assert_eq!(o.on_packet(&mut pool, 30, 300, 0, 10, 1), Err(OrderError::NoRoom { message_id: 30 }));
        assert_eq!((tracked(&o, &pool), pool.in_use()), full);
        assert_ne!(before, full.0);
    }

    /// A message whose first packet has not arrived holds back the ones after it: until every PSN
    /// before a complete message has arrived, it is not released.
    #[test]
    fn an_unknown_earlier_message_holds_back_later_ones() {
        let (mut o, mut pool) = (MessageOrder::<4>::new(), OrderPool::<4>::EMPTY);
        // Message 5 starts at PSN 11; PSN 10 (the only packet of some message) is missing.
        assert_eq!(o.on_packet(&mut pool, 5, 11, 0, 10, 10), Ok(true));
        assert_eq!(o.release(&mut pool, 9), None);
        assert_eq!(o.on_packet(&mut pool, 4, 10, 0, 1, 1), Ok(true));
        assert_eq!(o.release(&mut pool, 11), Some((4, 1)));
        assert_eq!(o.release(&mut pool, 11), Some((5, 10)));
    }

    /// Two PDCs share a pool of two entries: the first to need them takes them, the other still
    /// has its own two slots, and a released or cleared message gives its entry back.
    #[test]
    fn pdcs_share_the_pool_and_keep_their_own_slots() {
        let mut pool = OrderPool::<2>::EMPTY;
        let (mut a, mut b) = (MessageOrder::<8>::new(), MessageOrder::<8>::new());
        // A tracks four incomplete messages: two of its own, two from the pool.
        for id in 0..4 {
            assert_eq!(a.on_packet(&mut pool, id, 10 + u32::from(id) * 2, 0, 2, 1), Ok(false));
        }
        assert_eq!((a.in_progress(), a.pooled(), pool.in_use()), (4, 2, 2));
        assert_eq!(a.check(&pool, 9, 2, 1), Err(OrderError::NoRoom { message_id: 9 }));
        // B still has its own two.
        assert_eq!(b.on_packet(&mut pool, 0, 50, 0, 1, 1), Ok(true));
        assert_eq!(b.on_packet(&mut pool, 1, 51, 0, 2, 1), Ok(false));
        assert_eq!(b.check(&pool, 2, 1, 1), Err(OrderError::NoRoom { message_id: 2 }));
        // A completes its messages out of PSN order; pooled ones release from the middle of its
        // list and give their entries back.
        assert_eq!(a.on_packet(&mut pool, 2, 15, 1, 2, 1), Ok(true));
        assert_eq!(a.on_packet(&mut pool, 0, 11, 1, 2, 1), Ok(true));
        assert_eq!(a.release(&mut pool, 15), Some((0, 2)));
        assert_eq!(a.release(&mut pool, 15), None);
        assert_eq!(a.release_complete(&mut pool), Some((2, 2)));
        assert_eq!((a.in_progress(), a.pooled(), pool.in_use()), (2, 1, 1));
        // B takes the entry A gave back.
        assert_eq!(b.on_packet(&mut pool, 2, 52, 0, 1, 1), Ok(true));
        assert_eq!((b.pooled(), pool.in_use()), (1, 2));
        // Clearing A gives back the entry it still holds; its messages are forgotten.
        a.clear(&mut pool);
        assert_eq!((a.in_progress(), pool.in_use()), (0, 1));
        assert_eq!(b.release(&mut pool, 52), Some((0, 1)));
        assert_eq!(b.on_packet(&mut pool, 1, 51, 1, 2, 1), Ok(true));
        assert_eq!(b.release(&mut pool, 52), Some((1, 2)));
        assert_eq!(b.release(&mut pool, 52), Some((2, 1)));
        assert_eq!((b.in_progress(), pool.in_use()), (0, 0));
    }

    /// A message goes to an own slot while one is free, to the pool only when both are in use,
    /// and never past `N` in progress however many entries the pool has free.
    #[test]
    fn own_slots_first_and_never_more_than_n() {
        let mut pool = OrderPool::<8>::EMPTY;
        let mut o = MessageOrder::<3>::new();
        o.on_packet(&mut pool, 1, 10, 0, 2, 1).unwrap();
        o.on_packet(&mut pool, 2, 12, 0, 2, 1).unwrap();
        assert_eq!((o.pooled(), pool.in_use()), (0, 0));
        o.on_packet(&mut pool, 3, 14, 0, 2, 1).unwrap();
        assert_eq!((o.pooled(), pool.in_use()), (1, 1));
        assert_eq!(o.check(&pool, 4, 2, 1), Err(OrderError::NoRoom { message_id: 4 }));
        // Message 1 completes and goes; the next takes its own slot, not the pool's.
        o.on_packet(&mut pool, 1, 11, 1, 2, 1).unwrap();
        assert_eq!(o.release(&mut pool, 11), Some((1, 2)));
        o.on_packet(&mut pool, 4, 16, 0, 2, 1).unwrap();
        assert_eq!((o.in_progress(), o.pooled(), pool.in_use()), (3, 1, 1));
        assert_eq!(pool.check_lists([&o].into_iter()), Ok(()));
    }

    /// A MSG_ERROR cuts its message at the bytes sent, whether it comes before or after them;
    /// it refuses (changing nothing) a second cancel, more bytes than it says were sent,
    /// or a cut past the message's length; later packets may state the original length.
    #[test]
    fn a_cancel_completes_its_message_at_the_bytes_sent() {
        let (mut o, mut pool) = (MessageOrder::<4>::new(), OrderPool::<4>::EMPTY);
        // Message 1 (PSNs 10–12, 3000 bytes): cancelled at PSN 12 after 2048; its data arrives late.
        assert_eq!(o.on_cancel(&mut pool, 1, 12, 3000, 2048), Ok(false));
        assert_eq!(o.on_packet(&mut pool, 1, 11, 1024, 3000, 1024), Ok(false));
        let before = tracked(&o, &pool);
        assert_eq!(o.on_cancel(&mut pool, 1, 13, 3000, 2048), Err(OrderError::Inconsistent { message_id: 1 }));
        assert_eq!(o.on_packet(&mut pool, 1, 13, 2048, 3000, 1100), Err(OrderError::Inconsistent { message_id: 1 }));
        assert_eq!(o.on_packet(&mut pool, 1, 13, 1024, 1000, 1024), Err(OrderError::Inconsistent { message_id: 1 }));
        assert_eq!(tracked(&o, &pool), before);
        assert_eq!(o.on_packet(&mut pool, 1, 10, 0, 3000, 1024), Ok(true));
        assert_eq!(o.release(&mut pool, 12), Some((1, 2048)));
        // Message 2 (PSN 13 on): cancelled after its first packet arrived; refused cuts first.
        assert_eq!(o.on_packet(&mut pool, 2, 13, 0, 100, 60), Ok(false));
        assert_eq!(o.on_cancel(&mut pool, 2, 14, 100, 50), Err(OrderError::Inconsistent { message_id: 2 }));
        assert_eq!(o.on_cancel(&mut pool, 2, 14, 100, 101), Err(OrderError::Inconsistent { message_id: 2 }));
        assert_eq!(o.on_cancel(&mut pool, 2, 14, 100, 60), Ok(true));
        assert_eq!(o.release(&mut pool, 14), Some((2, 60)));
        // Message 3: cancelled before any byte went; the cancel is its first packet.
        assert_eq!(o.on_cancel(&mut pool, 3, 15, 100, 0), Ok(true));
        assert_eq!(o.release(&mut pool, 15), Some((3, 0)));
        assert_eq!((o.in_progress(), pool.in_use()), (0, 0));
        // Message 4 waits behind message 5, which started earlier; cancelled and complete, it is
        // released by id when it is sent again, not before it is complete, and only if cancelled.
        assert_eq!(o.on_packet(&mut pool, 5, 20, 0, 10, 5), Ok(false));
        assert_eq!(o.on_packet(&mut pool, 4, 21, 0, 100, 10), Ok(false));
        assert_eq!(o.release_cancelled(&mut pool, 4), None);
        assert_eq!(o.on_cancel(&mut pool, 4, 22, 100, 10), Ok(true));
        assert_eq!(o.release(&mut pool, 22), None, "message 5 is not complete");
        assert_eq!(o.release_cancelled(&mut pool, 5), None);
        assert_eq!(o.release_cancelled(&mut pool, 4), Some((4, 10)));
        assert_eq!(o.on_packet(&mut pool, 4, 23, 0, 100, 100), Ok(true));
        assert_eq!(o.on_packet(&mut pool, 5, 24, 5, 10, 5), Ok(true));
        assert_eq!(o.release(&mut pool, 24), Some((5, 10)));
        assert_eq!(o.release(&mut pool, 24), Some((4, 100)));
    }

    /// Misuse changes counts but never panics: a pool cleared under an order that still holds
    /// entries, then the order cleared too.
    #[test]
    fn a_pool_cleared_under_its_orders_does_not_panic() {
        let mut pool = OrderPool::<2>::EMPTY;
        let mut o = MessageOrder::<4>::new();
        for id in 0..4 {
            o.on_packet(&mut pool, id, 10 + u32::from(id), 0, 2, 1).unwrap();
        }
        pool.clear();
        assert!(pool.check_lists([&o].into_iter()).is_err());
        o.clear(&mut pool);
        assert_eq!(pool.in_use(), 0);
    }

    proptest! {
        /// Up to four PDCs share a pool of two entries, each tracking up to 4 messages, their
        /// packets interleaved at random; a packet refused for want of room first releases a
        /// complete message of its PDC out of order (as the endpoint does), then comes back
        /// later. Every message is released exactly once, nothing waits forever, every entry
        /// comes back, and a PDC that never released out of order released in send order.
        #[test]
        fn pdcs_sharing_a_pool_release_every_message_once(
            lens in prop::collection::vec(prop::collection::vec(0u32..4, 1..12), 1..5),
            seed in any::<u64>(),
        ) {
            let mut pool = OrderPool::<2>::EMPTY;
            let mut orders: Vec<MessageOrder<4>> = lens.iter().map(|_| MessageOrder::new()).collect();
            // Per PDC: its packets (PSN, message id, offset, length, bytes), one byte each.
            let mut queue = std::collections::VecDeque::new();
            for (pdc, lens) in lens.iter().enumerate() {
                let mut psn = 1000u32 * pdc as u32;
                for (id, &len) in lens.iter().enumerate() {
                    for i in 0..len.max(1) {
                        queue.push_back((pdc, psn, id as u16, i, len, u16::from(len > 0)));
                        psn += 1;
                    }
                }
            }
            let mut x = seed | 1;
            let q = queue.make_contiguous();
            for i in (1..q.len()).rev() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                q.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut arrived = vec![std::collections::BTreeSet::new(); lens.len()];
            let mut released = vec![Vec::new(); lens.len()];
            let mut out_of_order = vec![false; lens.len()];
            let mut steps = 0;
            while let Some((pdc, psn, id, offset, len, bytes)) = queue.pop_front() {
                steps += 1;
                prop_assert!(steps < 10_000, "a packet waits forever");
                let o = &mut orders[pdc];
                if o.check(&pool, id, len, bytes).is_err() {
                    if let Some(r) = o.release_complete(&mut pool) {
                        released[pdc].push(r);
                        out_of_order[pdc] = true;
                    }
                    queue.push_back((pdc, psn, id, offset, len, bytes));
                    continue;
                }
                prop_assert!(o.on_packet(&mut pool, id, psn, offset, len, bytes).is_ok());
                arrived[pdc].insert(psn);
                let mut cack = (1000 * pdc as u32).wrapping_sub(1);
                while arrived[pdc].contains(&(cack.wrapping_add(1))) {
                    cack = cack.wrapping_add(1);
                }
                while let Some(r) = o.release(&mut pool, cack) {
                    released[pdc].push(r);
                }
                prop_assert_eq!(pool.check_lists(orders.iter()), Ok(()));
            }
            for (pdc, lens) in lens.iter().enumerate() {
                let want: Vec<(u16, u32)> = lens.iter().enumerate().map(|(id, &l)| (id as u16, l)).collect();
                let mut got = released[pdc].clone();
                if out_of_order[pdc] {
                    got.sort_unstable();
                }
                prop_assert_eq!(got, want);
                prop_assert_eq!(orders[pdc].in_progress(), 0);
            }
            prop_assert_eq!(pool.in_use(), 0);
        }
        /// Messages of random lengths with ids from any counter (skipping, reused, wrapping),
        /// their packets on consecutive PSNs from any start and delivered in a random order:
        /// every message is released exactly once, in send order, with its length.
        #[test]
        fn releases_every_message_once_in_send_order(
            start in any::<u32>(),
            first_id in any::<u16>(),
            steps in prop::collection::vec(0u16..4, 1..40),
            lens in prop::collection::vec(0u32..20_000, 1..40),
            seed in any::<u64>(),
        ) {
            let mtu = 4096u32;
            let (mut o, mut pool) = (MessageOrder::<64>::new(), OrderPool::<64>::EMPTY);
            // Ids: a counter that skips (by `steps`) and wraps; consecutive messages differ.
            let mut id = first_id;
            let mut ids = Vec::new();
            for (m, _) in lens.iter().enumerate() {
                ids.push(id);
                id = id.wrapping_add(1 + steps.get(m).copied().unwrap_or(0));
            }
            let mut packets = Vec::new();
            let mut psn = start;
            for (m, &len) in lens.iter().enumerate() {
                let n = if len == 0 { 1 } else { len.div_ceil(mtu) };
                for i in 0..n {
                    let l = if len == 0 { 0 } else { (len - i * mtu).min(mtu) as u16 };
                    packets.push((psn, ids[m], i * mtu, len, l));
                    psn = psn.wrapping_add(1);
                }
            }
            // A seeded shuffle; the PDC's CACK follows the arrivals.
            let mut x = seed | 1;
            for i in (1..packets.len()).rev() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                packets.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut arrived = std::collections::BTreeSet::new();
            let mut cack = start.wrapping_sub(1);
            let mut released = Vec::new();
            for (p, mid, offset, len, l) in packets {
                o.on_packet(&mut pool, mid, p, offset, len, l).unwrap();
                arrived.insert(p.wrapping_sub(start));
                while arrived.contains(&cack.wrapping_add(1).wrapping_sub(start)) {
                    cack = cack.wrapping_add(1);
                }
                while let Some(r) = o.release(&mut pool, cack) { released.push(r); }
            }
            let want: Vec<(u16, u32)> = lens.iter().enumerate().map(|(m, &l)| (ids[m], l)).collect();
            prop_assert_eq!(released, want);
            prop_assert_eq!(o.in_progress(), 0);
        }
    }
}
