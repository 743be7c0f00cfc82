//! Half-flit sequencing (UALink 1.0 §5.1.1–5.1.2, §5.2, §5.7), shared by the
//! [`Packer`](super::pack::Packer) and the [`Unpacker`](super::unpack::Unpacker) so both read the
//! same rules from one place.
//!
//! A half-flit's kind is never written down; it follows from the ones before it:
//!
//! 1. The lower half of a flit is a control half-flit, unless data half-flits are still owed.
//! 2. A control half-flit owes, for each data request field in ascending sector order, two data
//!    half-flits per 64-byte beat and then, for writes, atomics and vendor commands with data, one
//!    byte-enable half-flit.
//! 3. **Swap**: the final owed data half-flit never sits in a lower half. When exactly one is owed
//!    at a lower half, the lower half is the next control half-flit and the owed one goes above it.
//! 4. With authentication, a control half-flit carrying requests or responses is followed, in the
//!    upper half of its flit, by an AuthTags half-flit (so at most four of them), and a control
//!    half-flit under a swapped data half-flit may carry flow control only.
//! 5. An upper half with nothing owed and nothing to authenticate is a **mandatory NOP**: all zero.
//! 6. A message half-flit (M bit set) delays the sequence by one half, except: one in a lower half
//!    that would have been control leaves the upper half to another message, a mandatory NOP or a
//!    swapped data half-flit; a Poisoned Data message *replaces* a data half-flit (never a
//!    byte-enable one), always both halves of a 64-byte beat.
//! 7. **Source rate limits** (§5.7): at most 4 requests and 8 responses outstanding at the
//!    receiver's catch buffers, which retire one of each per TL flit.
//!
//! *Project-defined*: a message may stand in an upper half that would be a mandatory NOP (a NOP
//! carries nothing, so there is nothing to delay); the packer itself never sends one there.

/// Data half-flits still owed for one data request field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tenure {
    /// The item the data belongs to.
    pub id: u32,
    /// 64-byte beats.
    pub beats: u8,
    /// A byte-enable half-flit follows the data.
    pub byte_enables: bool,
    /// The request address (places the byte enables; 0 for responses).
    pub addr: u64,
    /// The next half-flit: 0..2·beats are data, 2·beats the byte enables.
    pub next: u8,
    /// The beat now being received is poisoned (its first half was).
    pub poisoned: bool,
}

impl Tenure {
    /// No tenure: no half-flit owed (every byte zero).
    pub const NONE: Tenure = Tenure::new(0, 0, false, 0);

    pub const fn new(id: u32, beats: u8, byte_enables: bool, addr: u64) -> Self {
        Tenure { id, beats, byte_enables, addr, next: 0, poisoned: false }
    }

    /// Half-flits in all.
    pub const fn halves(&self) -> u16 {
        2 * self.beats as u16 + self.byte_enables as u16
    }

    /// Whether the next half-flit is the byte enables.
    pub const fn at_byte_enables(&self) -> bool {
        self.next >= 2 * self.beats
    }
}

/// Most tenures owed at once: the one swapped half-flit plus eight new read responses.
pub(crate) const MAX_TENURES: usize = 9;

/// The data half-flits owed, in order.
///
/// The tenure being sent or received is kept apart from the ones queued behind it, so each data
/// half-flit reads and advances it directly; the queue is touched only when a tenure starts or
/// ends. No tenure is [`Tenure::NONE`], which owes no half-flit (one that owes none is never
/// queued), so an empty plan is all-zero bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DataPlan {
    /// The tenure the next owed half-flit belongs to; [`Tenure::NONE`] only when nothing is
    /// queued.
    current: Tenure,
    /// The tenures after it.
    queued: heapless::Deque<Tenure, { MAX_TENURES - 1 }>,
    /// Half-flits owed in all.
    pub remaining: u16,
}

impl DataPlan {
    pub const fn new() -> Self {
        DataPlan { current: Tenure::NONE, queued: heapless::Deque::new(), remaining: 0 }
    }

    /// Queues a tenure; `false` if the plan is full (cannot happen within the rules above).
    pub fn push(&mut self, t: Tenure) -> bool {
        let n = t.halves();
        if n == 0 {
            return true;
        }
        if self.current.halves() == 0 {
            self.current = t;
        } else if self.queued.push_back(t).is_err() {
            return false;
        }
        self.remaining += n;
        true
    }

    /// The tenure the next owed half-flit belongs to.
    pub fn front_mut(&mut self) -> Option<&mut Tenure> {
        Some(&mut self.current).filter(|t| t.halves() > 0)
    }

    /// Marks the front tenure's next half-flit delivered.
    pub fn advance(&mut self) {
        if let Some(t) = self.front_mut() {
            t.next += 1;
            if u16::from(t.next) >= t.halves() {
                self.current = self.queued.pop_front().unwrap_or(Tenure::NONE);
            }
            self.remaining = self.remaining.saturating_sub(1);
        }
    }

    /// Whether half-flits of item `id` are still owed.
    pub fn owes(&self, id: u32) -> bool {
        (self.current.halves() > 0 && self.current.id == id) || self.queued.iter().any(|t| t.id == id)
    }

    /// What the lower half of the next flit is.
    pub const fn lower_is_data(&self) -> bool {
        self.remaining >= 2
    }

    /// Empties the plan, handing each tenure still owed (its item's id) to `f`, oldest first.
    pub fn drain(&mut self, mut f: impl FnMut(u32)) {
        if self.current.halves() > 0 {
            f(self.current.id);
        }
        self.current = Tenure::NONE;
        while let Some(t) = self.queued.pop_front() {
            f(t.id);
        }
        self.remaining = 0;
    }
}

/// Requests one control half-flit may carry with authentication on.
pub const MAX_AUTH_ITEMS: usize = 4;
/// Outstanding requests the receiver's catch buffer holds.
pub const MAX_REQUESTS: u8 = 4;
/// Outstanding responses the receiver's catch buffer holds.
pub const MAX_RESPONSES: u8 = 8;

/// The §5.7 source rate limits, as allowances for the next flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RateLimit {
    pub requests: u8,
    pub responses: u8,
}

impl RateLimit {
    pub const START: Self = RateLimit { requests: MAX_REQUESTS, responses: MAX_RESPONSES };

    /// Nothing allowed (all-zero bytes, for an engine's empty value; its `init` starts it).
    pub const STOPPED: Self = RateLimit { requests: 0, responses: 0 };

    /// Moves to the next flit after one that carried `req` requests and `rsp` responses.
    #[inline(always)]
    pub fn advance(&mut self, req: u8, rsp: u8) {
        self.requests = (self.requests.saturating_sub(req) + 1).min(MAX_REQUESTS);
        self.responses = (self.responses.saturating_sub(rsp) + 1).min(MAX_RESPONSES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tenures come out in order, each half-flit by half-flit, with `remaining` counting them
    /// down; empty tenures are skipped, and a tenth is refused.
    #[test]
    fn plan_walks_tenures_in_order() {
        let mut plan = DataPlan::new();
        assert!(plan.push(Tenure::new(7, 0, false, 0)), "nothing owed: nothing queued");
        assert!(plan.front_mut().is_none());
        assert!(plan.push(Tenure::new(1, 1, true, 0)));
        assert!(plan.push(Tenure::new(2, 2, false, 0)));
        assert_eq!(plan.remaining, 3 + 4);
        let mut seen = Vec::new();
        while let Some(t) = plan.front_mut() {
            seen.push((t.id, t.next, t.at_byte_enables()));
            plan.advance();
        }
        assert_eq!(
            seen,
            [(1, 0, false), (1, 1, false), (1, 2, true), (2, 0, false), (2, 1, false), (2, 2, false), (2, 3, false)]
        );
        assert_eq!(plan.remaining, 0);
        plan.advance();
        assert_eq!(plan.remaining, 0);
        for id in 0..MAX_TENURES as u32 {
            assert!(plan.push(Tenure::new(id, 1, false, 0)));
        }
        assert!(!plan.push(Tenure::new(99, 1, false, 0)));
        assert_eq!(plan.remaining, 2 * MAX_TENURES as u16);
        assert_eq!(plan.front_mut().map(|t| t.id), Some(0));
    }

    #[test]
    fn request_allowance_follows_table_5_24() {
        // Requests per flit 4, 1, 1, 0, 2, 1 with allowances 4, 1, 1, 1, 2, 1.
        let mut r = RateLimit::START;
        let mut seen = [0u8; 6];
        for (i, n) in [4u8, 1, 1, 0, 2, 1].into_iter().enumerate() {
            seen[i] = r.requests;
            assert!(n <= r.requests);
            r.advance(n, 0);
        }
        assert_eq!(seen, [4, 1, 1, 1, 2, 1]);
        // Table 5-25: 4 requests, then data flits: 1, 2, 3, 4, 4.
        let mut r = RateLimit::START;
        r.advance(4, 0);
        let mut seen = [0u8; 5];
        for s in &mut seen {
            *s = r.requests;
            r.advance(0, 0);
        }
        assert_eq!(seen, [1, 2, 3, 4, 4]);
    }
}
