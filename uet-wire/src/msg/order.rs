//! Message completion in message order at the target (issue 4: RUD delivers packets in any order,
//! but messages complete to the application in the order they were sent).
//!
//! *Project-defined* (the public sources give no rule): the initiator numbers the messages of each
//! PDC 0, 1, 2, … in the SES `message_id` (wrapping at 2^16), and starts every message only after
//! the previous one is fully handed to the PDC. The target counts the bytes of each message as its
//! packets arrive (the PDC has already dropped duplicates, so every byte counts once) and knows a
//! message's length from `request_length`, which every standard request carries. A message is
//! complete when all its bytes arrived; it is *released* once every earlier message is released.
//!
//! [`MessageOrder`] tracks the `N` messages from the oldest unreleased one on. A packet of a
//! message further ahead is refused with [`OrderError::TooFarAhead`]; the caller NACKs it
//! NO_SES_MSG_AVAIL (0x09), a retransmit-class code, so it comes back later.

/// Why a packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OrderError {
    /// The message is `N` or more ahead of the oldest unreleased one.
    TooFarAhead {
        /// The packet's message id.
        message_id: u16,
    },
    /// The message was released already (a stale packet the PDC let through).
    Released {
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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Slot {
    /// Bytes arrived, and the length once a packet gave it.
    received: u64,
    total: Option<u32>,
}

/// The messages of one PDC from the oldest unreleased one on, `N` at most.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageOrder<const N: usize> {
    /// The oldest unreleased message id; slot `i` is message `next + i`.
    next: u16,
    /// Ring of slots, slot of message `next` at `head`.
    slots: [Slot; N],
    head: usize,
}

impl<const N: usize> Default for MessageOrder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> MessageOrder<N> {
    const SIZE_OK: () = assert!(N >= 1 && N <= 1 << 15, "1 to 2^15 messages in progress");

    /// Nothing arrived; message 0 is the first.
    pub fn new() -> Self {
        let () = Self::SIZE_OK;
        MessageOrder { next: 0, slots: [Slot::default(); N], head: 0 }
    }

    /// The oldest unreleased message id.
    pub const fn next_id(&self) -> u16 {
        self.next
    }

    fn slot(&mut self, ahead: usize) -> Option<&mut Slot> {
        let i = (self.head + ahead) % N;
        self.slots.get_mut(i)
    }

    /// Accounts `len` payload bytes of message `message_id`, whose length is `request_length`.
    /// Returns whether that message is now complete (it may still wait for earlier ones).
    pub fn on_packet(&mut self, message_id: u16, request_length: u32, len: u16) -> Result<bool, OrderError> {
        let (ahead, received) = self.check(message_id, request_length, len)?;
        let slot = self.slot(ahead).ok_or(OrderError::TooFarAhead { message_id })?;
        slot.total = Some(request_length);
        slot.received = received;
        Ok(received == u64::from(request_length))
    }

    /// What [`MessageOrder::on_packet`] would say, without recording: the message's slot and its
    /// byte count after the packet.
    pub fn check(&self, message_id: u16, request_length: u32, len: u16) -> Result<(usize, u64), OrderError> {
        let ahead = message_id.wrapping_sub(self.next);
        if ahead >= 1 << 15 {
            return Err(OrderError::Released { message_id });
        }
        if usize::from(ahead) >= N {
            return Err(OrderError::TooFarAhead { message_id });
        }
        let slot =
            self.slots.get((self.head + usize::from(ahead)) % N).ok_or(OrderError::TooFarAhead { message_id })?;
        if slot.total.is_some_and(|t| t != request_length) {
            return Err(OrderError::Inconsistent { message_id });
        }
        let received = slot.received + u64::from(len);
        if received > u64::from(request_length) {
            return Err(OrderError::Inconsistent { message_id });
        }
        Ok((usize::from(ahead), received))
    }

    /// Releases the oldest message if it is complete: returns its id and length. Call until
    /// `None` after each packet.
    pub fn release(&mut self) -> Option<(u16, u32)> {
        let slot = self.slots.get_mut(self.head)?;
        let total = slot.total?;
        if slot.received != u64::from(total) {
            return None;
        }
        *slot = Slot::default();
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        self.head = (self.head + 1) % N;
        Some((id, total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn completes_in_message_order() {
        let mut o = MessageOrder::<4>::new();
        // Message 1 (one packet) completes before message 0 (two packets), but waits for it.
        assert_eq!(o.on_packet(1, 100, 100), Ok(true));
        assert_eq!(o.release(), None);
        assert_eq!(o.on_packet(0, 5000, 4096), Ok(false));
        assert_eq!(o.release(), None);
        assert_eq!(o.on_packet(0, 5000, 904), Ok(true));
        assert_eq!(o.release(), Some((0, 5000)));
        assert_eq!(o.release(), Some((1, 100)));
        assert_eq!(o.release(), None);
        // Zero-length messages complete with their one (empty) packet.
        assert_eq!(o.on_packet(2, 0, 0), Ok(true));
        assert_eq!(o.release(), Some((2, 0)));
        // Refusals change nothing.
        let before = o.clone();
        assert_eq!(o.on_packet(7, 10, 10), Err(OrderError::TooFarAhead { message_id: 7 }));
        assert_eq!(o.on_packet(1, 100, 100), Err(OrderError::Released { message_id: 1 }));
        assert_eq!(o.on_packet(3, 10, 11), Err(OrderError::Inconsistent { message_id: 3 }));
        assert_eq!(o, before);
        o.on_packet(3, 10, 5).unwrap();
        assert_eq!(o.on_packet(3, 12, 5), Err(OrderError::Inconsistent { message_id: 3 }));
    }

    proptest! {
        /// Messages of random lengths, their packets delivered in a random order: every message
        /// is released exactly once, in id order, with its length, across the 16-bit wrap.
        #[test]
        fn releases_every_message_once_in_order(
            first in any::<u16>(),
            lens in prop::collection::vec(0u32..20_000, 1..40),
            seed in any::<u64>(),
        ) {
            let mtu = 4096u32;
            let mut o = MessageOrder::<64>::new();
            // Start the numbering at `first` by releasing that many empty messages first.
            for k in 0..first {
                o.on_packet(k, 0, 0).unwrap();
                o.release().unwrap();
            }
            let mut packets = Vec::new();
            for (m, &len) in lens.iter().enumerate() {
                let n = if len == 0 { 1 } else { len.div_ceil(mtu) };
                for i in 0..n {
                    let l = (len - i * mtu).min(mtu) as u16;
                    packets.push((first.wrapping_add(m as u16), len, if len == 0 { 0 } else { l }));
                }
            }
            // A seeded shuffle.
            let mut x = seed | 1;
            for i in (1..packets.len()).rev() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                packets.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut released = Vec::new();
            for (id, len, l) in packets {
                o.on_packet(id, len, l).unwrap();
                while let Some(r) = o.release() { released.push(r); }
            }
            let want: Vec<(u16, u32)> = lens.iter().enumerate().map(|(m, &l)| (first.wrapping_add(m as u16), l)).collect();
            prop_assert_eq!(released, want);
        }
    }
}
