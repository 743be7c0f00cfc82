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
//! [`MessageOrder`] tracks `N` messages in progress. A packet of another message while all `N`
//! are in use is refused with [`OrderError::NoRoom`]; the caller NACKs it NO_SES_MSG_AVAIL
//! (0x09), a retransmit-class code, so it comes back later.
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
//! free slot). `N` is therefore 2 or more.

use crate::pdc::psn_after;

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
    /// the one an earlier packet of the message gave.
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

/// One message in progress (16 bytes: a target PDC keeps `N` of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Slot {
    message_id: u16,
    /// Whether its first packet arrived; `first_psn` is that packet's PSN then.
    started: bool,
    first_psn: u32,
    /// Bytes arrived (never more than `total`), and the message's length.
    received: u32,
    total: u32,
}

impl Slot {
    fn complete(&self) -> bool {
        self.received == self.total
    }

    /// The PSN of its first packet, once that arrived.
    fn first(&self) -> Option<u32> {
        self.started.then_some(self.first_psn)
    }
}

/// The messages of one PDC in progress, `N` at most.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageOrder<const N: usize> {
    slots: [Option<Slot>; N],
}

impl<const N: usize> Default for MessageOrder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> MessageOrder<N> {
    const SIZE_OK: () = assert!(N >= 2 && N <= 1 << 15, "2 to 2^15 messages in progress (see the module doc)");

    /// No message in progress.
    pub fn new() -> Self {
        let () = Self::SIZE_OK;
        MessageOrder { slots: [None; N] }
    }

    /// Messages in progress (arrived in part, or complete and not released).
    pub fn in_progress(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    fn find(&self, message_id: u16) -> Option<usize> {
        self.slots.iter().position(|s| s.is_some_and(|s| s.message_id == message_id))
    }

    /// What [`MessageOrder::on_packet`] would say, without recording: the message's slot and its
    /// byte count after the packet.
    pub fn check(&self, message_id: u16, request_length: u32, len: u16) -> Result<(usize, u64), OrderError> {
        let (at, received) = match self.find(message_id) {
            Some(at) => {
                let Some(s) = self.slots.get(at).copied().flatten() else {
                    return Err(OrderError::NoRoom { message_id });
                };
                if s.total != request_length {
                    return Err(OrderError::Inconsistent { message_id });
                }
                (at, u64::from(s.received))
            }
            None => (self.slots.iter().position(Option::is_none).ok_or(OrderError::NoRoom { message_id })?, 0),
        };
        let received = received + u64::from(len);
        if received > u64::from(request_length) {
            return Err(OrderError::Inconsistent { message_id });
        }
        Ok((at, received))
    }

    /// Accounts the `len` payload bytes at `offset` of message `message_id` (length
    /// `request_length`), which arrived with PSN `psn`. Returns whether that message is now
    /// complete (it may still wait for earlier ones).
    pub fn on_packet(
        &mut self,
        message_id: u16,
        psn: u32,
        offset: u32,
        request_length: u32,
        len: u16,
    ) -> Result<bool, OrderError> {
        let (at, received) = self.check(message_id, request_length, len)?;
        let slot = self.slots.get_mut(at).ok_or(OrderError::NoRoom { message_id })?;
        let s =
            slot.get_or_insert(Slot { message_id, started: false, first_psn: 0, received: 0, total: request_length });
        // At most `request_length` (checked), so it fits.
        s.received = received as u32;
        if offset == 0 {
            (s.started, s.first_psn) = (true, psn);
        }
        Ok(s.complete())
    }

    /// Releases the message that started first if it is complete and everything before its first
    /// packet has arrived (`cack_psn`: the PDC received every PSN up to it). Returns its id and
    /// length. Call until `None` after each packet.
    pub fn release(&mut self, cack_psn: u32) -> Option<(u16, u32)> {
        // The known message that started first; any message not yet known started after
        // `cack_psn` (its first packet is missing), so it cannot come before one at or below
        // `cack_psn + 1`.
        let (at, first) = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.as_ref()?.first()?)))
            .reduce(|a, b| if psn_after(a.1, b.1) { b } else { a })?;
        if psn_after(first, cack_psn.wrapping_add(1)) {
            return None;
        }
        let slot = self.slots.get_mut(at)?;
        let s = slot.filter(Slot::complete)?;
        *slot = None;
        Some((s.message_id, s.total))
    }
}

impl<const N: usize> MessageOrder<N> {
    /// Releases the complete message that started first, whether or not everything before it
    /// has arrived: room for a message that started earlier, when all `N` slots are in use
    /// (see the module doc). Returns its id and length.
    pub fn release_complete(&mut self) -> Option<(u16, u32)> {
        let (at, _) = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.filter(Slot::complete).map(|s| (i, s.first().unwrap_or(0))))
            .reduce(|a, b| if psn_after(a.1, b.1) { b } else { a })?;
        let s = self.slots.get_mut(at)?.take()?;
        Some((s.message_id, s.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn release_complete_makes_room_for_an_earlier_message() {
        // Two slots hold messages 2 and 3 (PSNs 11, 12), both complete, waiting for message 1
        // (PSN 10), which has no room: releasing the earliest complete one makes room.
        let mut o = MessageOrder::<2>::new();
        o.on_packet(3, 12, 0, 1, 1).unwrap();
        o.on_packet(2, 11, 0, 1, 1).unwrap();
        assert_eq!(o.release(9), None);
        assert_eq!(o.check(1, 1, 1), Err(OrderError::NoRoom { message_id: 1 }));
        assert_eq!(o.release_complete(), Some((2, 1)));
        assert_eq!(o.on_packet(1, 10, 0, 1, 1), Ok(true));
        assert_eq!(o.release(12), Some((1, 1)));
        assert_eq!(o.release(12), Some((3, 1)));
        // Nothing complete: nothing to release.
        o.on_packet(4, 13, 0, 2, 1).unwrap();
        assert_eq!(o.release_complete(), None);
    }

    #[test]
    fn completes_in_send_order() {
        let mut o = MessageOrder::<4>::new();
        // Message 9 (PSNs 100–101) and message 3 (PSN 102, one packet): 3 completes first but
        // waits for 9, which started earlier.
        assert_eq!(o.on_packet(3, 102, 0, 100, 100), Ok(true));
        assert_eq!(o.release(99), None);
        assert_eq!(o.on_packet(9, 101, 4096, 5000, 904), Ok(false));
        assert_eq!(o.release(99), None);
        assert_eq!(o.on_packet(9, 100, 0, 5000, 4096), Ok(true));
        assert_eq!(o.release(102), Some((9, 5000)));
        assert_eq!(o.release(102), Some((3, 100)));
        assert_eq!(o.release(102), None);
        // A zero-length message completes with its one (empty) packet; its id may be one used
        // before.
        assert_eq!(o.on_packet(9, 103, 0, 0, 0), Ok(true));
        assert_eq!(o.release(103), Some((9, 0)));
        // Refusals change nothing.
        o.on_packet(1, 104, 0, 10, 5).unwrap();
        let before = o.clone();
        assert_eq!(o.on_packet(1, 105, 5, 10, 6), Err(OrderError::Inconsistent { message_id: 1 }));
        assert_eq!(o.on_packet(1, 105, 5, 12, 5), Err(OrderError::Inconsistent { message_id: 1 }));
        for id in 20..23 {
            o.on_packet(id, 200 + u32::from(id), 0, 10, 1).unwrap();
        }
        let full = o.clone();
        assert_eq!(o.on_packet(30, 300, 0, 10, 1), Err(OrderError::NoRoom { message_id: 30 }));
        assert_eq!(o, full);
        assert_ne!(before, full);
    }

    /// A message whose first packet has not arrived holds back the ones after it: until every PSN
    /// before a complete message has arrived, it is not released.
    #[test]
    fn an_unknown_earlier_message_holds_back_later_ones() {
        let mut o = MessageOrder::<4>::new();
        // Message 5 starts at PSN 11; PSN 10 (the only packet of some message) is missing.
        assert_eq!(o.on_packet(5, 11, 0, 10, 10), Ok(true));
        assert_eq!(o.release(9), None);
        assert_eq!(o.on_packet(4, 10, 0, 1, 1), Ok(true));
        assert_eq!(o.release(11), Some((4, 1)));
        assert_eq!(o.release(11), Some((5, 10)));
    }

    proptest! {
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
            let mut o = MessageOrder::<64>::new();
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
                o.on_packet(mid, p, offset, len, l).unwrap();
                arrived.insert(p.wrapping_sub(start));
                while arrived.contains(&cack.wrapping_add(1).wrapping_sub(start)) {
                    cack = cack.wrapping_add(1);
                }
                while let Some(r) = o.release(cack) { released.push(r); }
            }
            let want: Vec<(u16, u32)> = lens.iter().enumerate().map(|(m, &l)| (ids[m], l)).collect();
            prop_assert_eq!(released, want);
            prop_assert_eq!(o.in_progress(), 0);
        }
    }
}
