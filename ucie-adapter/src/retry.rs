//! Flit-mode retry (UCIe 2.0 §3.8): PCIe 6.x flit-mode retry (PCIe §4.2.3.4.2.1) with UCIe's
//! changes, on the workspace's go-back-N [`ReplayBuffer`].
//!
//! [`Retry`] is one direction-pair of the mechanism: the transmitter numbers payload flits,
//! keeps them until acknowledged and replays them; the receiver checks each flit, delivers the
//! next in order and schedules Acks and Naks, which ride in the flit header of whatever goes
//! the other way. It is sans-I/O: the embedder calls [`Retry::poll_transmit`] once per flit
//! time the link could send, [`Retry::handle_flit`] for every flit received, and
//! [`Retry::handle_timeout`] when [`Retry::poll_timeout`] says.
//!
//! UCIe's changes to the PCIe rules, all applied here:
//!
//! | rule | PCIe 6.x | UCIe 2.0 §3.8 |
//! |---|---|---|
//! | sequence numbers | 10 bits, 1..=1023 | 8 bits, 1..=255 (`Seq<NonZeroBits<8>>`); 0 means "no Ack/Nak" |
//! | unacknowledged flits | ≤ 511 | ≤ 127 ([`ReplayBuffer::MAX_FRAMES`]) |
//! | explicit-sequence flits in a row while an Ack/Nak is pending | < 3 | < 1: they alternate |
//! | `REPLAY_TIMEOUT_FLIT_COUNT` | 11 bits, ≥ 1500 | 9 bits saturating at 1FFh, ≥ 375; also counts flit times with nothing sent |
//! | Selective Nak, Rx retry buffer, Nak withdrawal, IDLE flit handshake | used | not used: every Nak replays all unacknowledged flits |
//! | Sequence Number Handshake | at L0 entry, timeout 256/512 flits | on every RDI entry to Active from Reset or Retrain, timeout 128 flits → Retrain |
//! | Ack/Nak with a bad sequence number, payload flit with explicit sequence 0 | Data Link Protocol Error | Uncorrectable Internal Error |
//! | conditions that lead to Recovery | Recovery | Retrain on RDI |
//!
//! The rules by their PCIe names (module-internal names follow them):
//!
//! - **Transmitter.** A payload flit carries either its own sequence number (explicit) or the
//!   receiver's `TX_ACKNAK_FLIT_SEQ_NUM` as an Ack or Nak; the receiver infers the sequence
//!   number of a payload flit without one (`IMPLICIT_RX_FLIT_SEQ_NUM`). An explicit NOP carries
//!   `NEXT_TX_FLIT_SEQ_NUM − 1` (during a replay, the last payload flit's number). NOPs bypass
//!   the buffer.
//! - **Ack/Nak received** (§4.2.3.4.2.1.4). S is valid when `(NEXT_TX−1 − S) mod 255` and
//!   `(S − ACKD) mod 255` are both at most 127; a valid S releases every flit up to S. A Nak
//!   then schedules a replay from S + 1 (Replay Schedule Rule 1) unless a replay is scheduled
//!   or in progress, or S repeats the Nak that caused the last replay inside the Nak ignore
//!   window.
//! - **Replay** (§4.2.3.4.2.1.6–7). Rule 0: `REPLAY_TIMEOUT_FLIT_COUNT ≥ 375` schedules a replay
//!   from `ACKD + 1` (a Correctable Internal Error). A replay starts only on an explicit flit
//!   after a non-explicit one, and only while `FLIT_REPLAY_NUM` (3 bits, +2 per replay) is
//!   below 110b; reaching it requests Retrain. A purge clears `FLIT_REPLAY_NUM`.
//! - **Receiver** (§4.2.3.4.2.1.5). A flit is invalid when a CRC fails or its header uses a
//!   reserved encoding. Without a Nak pending: a payload flit numbered `NEXT_EXPECTED` is
//!   delivered and acknowledged; an older one (within 127) is a duplicate, dropped; a newer one
//!   or an invalid flit schedules a Nak. With a Nak pending only an explicit payload flit
//!   numbered `NEXT_EXPECTED` is accepted (it clears the Nak), or an explicit NOP saying
//!   nothing is missing.
//! - **Sequence Number Handshake** (§4.2.3.4.2.1.2). Ends after ≥ 9 explicit flits and ≥ 3
//!   Acks sent once an explicit flit arrived; until then flits alternate explicit / Ack (NOPs
//!   when there is no payload), and received flits are dropped until the first explicit one.
//!
//! *Project-defined* (where UCIe or the public PCIe text leaves a value open): PCIe's window
//! constant 511 becomes 127; the Nak ignore window is counted in flit times
//! ([`RetryConfig::nak_ignore_window`], default 32) instead of nanoseconds; after a Nak is
//! received or cleared two Acks are owed (the spec's recommendation), and after a duplicate
//! one, since a UCIe
//! link may idle where a PCIe link always carries the next flit; a D2D NOP is a flit whose
//! Protocol ID is 00b with Flit Type 00b, and a test flit (Flit Type 01b) is treated like one
//! (never numbered, never delivered). Format 2's PDS before a replay belongs to the 68B
//! stream, not to this machine.
//!
//! The mechanism relies on what the physical layer guarantees: every flit sent arrives, in
//! order, intact or not. A flit that vanished or arrived twice would shift the implicit
//! numbering of the flits after it; the tests model loss as an erased flit, as a die-to-die
//! PHY delivers it.

use crate::crc::{self, Format};
use crate::flit::{self, Flit, Layout, Map, Protocol, Span};
use crate::header::{FlitHeader, FlitType, ReplayCommand};
use heapless::Deque;
use linklayer::llr::ReplayBuffer;
use linklayer::{Duration, Instant, NonZeroBits, Seq};

/// A UCIe retry sequence number: 1..=255, wrapping 255 → 1.
pub type SeqNum = Seq<NonZeroBits<8>>;

/// Tunables of the retry machine; [`RetryConfig::new`] gives the spec's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryConfig {
    /// The negotiated flit format (2–6).
    pub format: Format,
    /// Each stack's protocol, for the flit view handed to the protocol layer.
    pub protocols: [Protocol; 2],
    /// Replay Schedule Rule 0 threshold (375).
    pub replay_timeout_flits: u16,
    /// `FLIT_REPLAY_NUM` added per replay: 2 at ≤ 32 GT/s, 1 permitted (and used at 64 GT/s).
    pub replay_num_step: u8,
    /// `FLIT_REPLAY_NUM` at which a replay requests Retrain instead: 110b at ≤ 32 GT/s,
    /// 111b at 64 GT/s.
    pub replay_num_limit: u8,
    /// Flit times a Nak repeating the one that caused the last replay is ignored after the
    /// replay's first flit went out (project-defined; PCIe: min(Ack/Nak latency + 2 flits,
    /// 300 ns)).
    pub nak_ignore_window: u16,
    /// Flits transmitted without completing the Sequence Number Handshake before Retrain (128).
    pub handshake_timeout_flits: u16,
    /// No Ack or Nak for this long with flits unacknowledged is an Adapter Timeout (8 ms).
    pub ack_timeout: Duration,
}

impl RetryConfig {
    /// The spec's values for `format` at ≤ 32 GT/s, both stacks carrying `protocol`.
    pub const fn new(format: Format, protocol: Protocol) -> RetryConfig {
        RetryConfig {
            format,
            protocols: [protocol; 2],
            replay_timeout_flits: 375,
            replay_num_step: 2,
            replay_num_limit: 0b110,
            nak_ignore_window: 32,
            handshake_timeout_flits: 128,
            ack_timeout: Duration::from_nanos(8_000_000),
        }
    }
}

/// Why the retry machine asks for Retrain on RDI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RetrainCause {
    /// `FLIT_REPLAY_NUM` reached its limit (REPLAY_NUM Rollover).
    ReplayNumRollover,
    /// The Sequence Number Handshake did not finish within 128 flits.
    HandshakeTimeout,
}

/// An Uncorrectable Internal Error the retry machine found (§3.8; Table 9-33).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UncorrectableCause {
    /// An Ack or Nak for a sequence number outside the unacknowledged window (never sent, or
    /// already acknowledged).
    InvalidAckNak {
        /// Ack (else Nak).
        ack: bool,
        /// The S field.
        seq: u8,
    },
    /// A payload flit with explicit sequence number 0 (Flit Discard 2).
    ExplicitZero,
    /// No Ack or Nak for [`RetryConfig::ack_timeout`] with flits unacknowledged (Header Log 2
    /// Adapter Timeout 0100b).
    RetryTimeout,
}

/// Something the embedder must act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RetryEvent {
    /// The Sequence Number Handshake finished.
    HandshakeComplete,
    /// A replay was scheduled from `from`; `timeout`: by Replay Schedule Rule 0 (log a
    /// Correctable Internal Error), else by a Nak.
    ReplayScheduled {
        /// First flit to replay.
        from: u8,
        /// Caused by the replay timer.
        timeout: bool,
    },
    /// Request Retrain on RDI.
    Retrain(RetrainCause),
    /// Report an Uncorrectable Internal Error.
    Uncorrectable(UncorrectableCause),
}

/// Why a received flit was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Discard {
    /// Not the format's flit length (an embedder error; nothing changed).
    Length,
    /// A CRC failed or the header uses a reserved encoding.
    Invalid,
    /// An all-zero flit header.
    Idle,
    /// A Format 2 PDS flit header.
    Pds,
    /// A NOP or test flit (its Ack/Nak, if any, was processed).
    Nop,
    /// Received before the first explicit-sequence flit of the handshake.
    BeforeHandshake,
    /// Already received (its Ack/Nak, if any, was processed).
    Duplicate,
    /// Out of order: a flit before it was lost, or a Nak is pending.
    OutOfOrder,
    /// A payload flit with explicit sequence number 0.
    ExplicitZero,
}

/// What became of a received flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received<'a> {
    /// The next payload flit in order: pass it to the protocol layer of its stack.
    Deliver {
        /// Its sequence number.
        seq: SeqNum,
        /// The flit, read in place.
        flit: Flit<'a>,
    },
    /// Not delivered.
    Discarded(Discard),
}

/// What [`Retry::poll_transmit`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sent {
    /// A payload flit's sequence number, 0 without Retry (which numbers no flit; the
    /// [`Adapter`](crate::adapter::Adapter) sends flits then); `None`: a NOP.
    pub payload: Option<u8>,
    /// Whether the payload flit is a replay.
    pub replay: bool,
    /// What its header's S field means.
    pub command: ReplayCommand,
    /// The S field.
    pub seq: u8,
    /// The first flit of a replay: a Format 2 stream sends a PDS before it (§3.3.2.1;
    /// [`crate::stream68`]).
    pub pds_before: bool,
}

/// Why a flit cannot be queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RetryError {
    /// 127 flits (or the buffer's capacity) are unacknowledged: wait for Acks.
    Full,
    /// A flit of another length than the format's.
    Length,
    /// The configured format has no retry (Format 1).
    Raw,
    /// A corrupted flit must go out next, and flits are queued before it; or a corrupted
    /// flit waits to go out, and nothing may be queued behind it.
    Busy,
}

impl core::fmt::Display for RetryError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RetryError::Full => f.write_str("retry buffer full"),
            RetryError::Length => f.write_str("flit length differs from the format's"),
            RetryError::Raw => f.write_str("Format 1 has no retry"),
            RetryError::Busy => f.write_str("a corrupted flit must go out alone, next"),
        }
    }
}

impl core::error::Error for RetryError {}

/// Counters for tests, logs and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryStats {
    /// Payload flits sent for the first time.
    pub sent: u64,
    /// Payload flits sent again.
    pub replayed: u64,
    /// NOP flits sent.
    pub nops: u64,
    /// Replays started.
    pub replays: u64,
    /// Payload flits delivered.
    pub delivered: u64,
    /// Invalid flits received.
    pub invalid: u64,
    /// Flits carrying a Nak sent.
    pub naks_sent: u64,
    /// Events dropped because the queue was full.
    pub events_dropped: u64,
}

impl RetryStats {
    /// Every counter zero.
    pub const ZERO: Self = RetryStats {
        sent: 0,
        replayed: 0,
        nops: 0,
        replays: 0,
        delivered: 0,
        invalid: 0,
        naks_sent: 0,
        events_dropped: 0,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IgnoreWindow {
    NotStarted,
    Open(u16),
    Elapsed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handshake {
    flits: u16,
    explicit_sent: u8,
    acks_sent: u8,
    timed_out: bool,
}

const HANDSHAKE: Handshake = Handshake { flits: 0, explicit_sent: 0, acks_sent: 0, timed_out: false };
const REPLAY_TIMEOUT_MAX: u16 = 0x1FF;
/// Bytes of a Format 2 flit slot.
const FLIT68: u16 = 68;
/// PCIe's receive window constant 511, for UCIe's 8-bit space (project-defined: 127, the
/// largest number of unacknowledged flits).
const RX_WINDOW: u64 = 127;
const EVENTS: usize = 8;

fn seq(v: u8) -> Option<SeqNum> {
    SeqNum::new(u32::from(v))
}

fn wire(s: SeqNum) -> u8 {
    s.value() as u8
}

/// Every variable of the mechanism except the buffer. In its reset state ([`State::INITIAL`])
/// every byte is zero, so an empty machine can be a `static` in `.bss`: PCIe's
/// `ACKD_SEQ` is kept as the number after it, and `TX_ACKNAK` is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    // Transmitter.
    /// `ACKD_SEQ` + 1: the oldest flit not acknowledged.
    unackd: SeqNum,
    consec_explicit: u8,
    consec_nak: u8,
    replay_timeout: u16,
    /// Format 2: bytes sent toward the next 256-byte unit of the replay timer.
    timer_bytes: u16,
    replay_scheduled: Option<SeqNum>,
    replay_in_progress: bool,
    nak_ignore: Option<SeqNum>,
    ignore_window: IgnoreWindow,
    replay_num: u8,
    last_payload: Option<SeqNum>,
    ack_deadline: Option<Instant>,
    // Receiver.
    next_expected: SeqNum,
    implicit: Option<SeqNum>,
    explicit_rcvd: bool,
    nak_scheduled: bool,
    acks_owed: u8,
    handshake: Option<Handshake>,
}

const FIRST: SeqNum = SeqNum::from_index(0);

impl State {
    /// PCIe's `TX_ACKNAK_FLIT_SEQ_NUM`: the last flit accepted in order, which an Ack or Nak
    /// names (it moves with `NEXT_EXPECTED` on every accepted flit and is set to
    /// `NEXT_EXPECTED − 1` when a Nak is scheduled, so it is always that).
    const fn tx_acknak(&self) -> SeqNum {
        self.next_expected.prev()
    }

    const INITIAL: State = State {
        unackd: FIRST,
        consec_explicit: 0,
        consec_nak: 0,
        replay_timeout: 0,
        timer_bytes: 0,
        replay_scheduled: None,
        replay_in_progress: false,
        nak_ignore: None,
        ignore_window: IgnoreWindow::NotStarted,
        replay_num: 0,
        last_payload: None,
        ack_deadline: None,
        next_expected: FIRST,
        implicit: None,
        explicit_rcvd: false,
        nak_scheduled: false,
        acks_owed: 0,
        handshake: Some(HANDSHAKE),
    };
}

/// UCIe flit-mode retry over a replay buffer of `N` flits in storage `B` (at least `N` times
/// the flit length, e.g. `[u8; 127 * 256]`).
///
/// Size on a 64-bit host: 2 344 bytes with 64 flits, 32 more per flit, besides the buffer.
/// Built in place: [`Retry::EMPTY`] and [`Retry::init`].
#[derive(Clone, Debug)]
pub struct Retry<B, const N: usize> {
    config: RetryConfig,
    header: Option<Span>,
    buf: ReplayBuffer<NonZeroBits<8>, B, N>,
    st: State,
    events: Deque<RetryEvent, EVENTS>,
    stats: RetryStats,
}

impl RetryConfig {
    /// Format 1 (no retry), both stacks PCIe, every other field zero: the configuration of a
    /// [`Retry::EMPTY`].
    pub const ZERO: RetryConfig = RetryConfig {
        format: Format::Raw,
        protocols: [Protocol::Pcie; 2],
        replay_timeout_flits: 0,
        replay_num_step: 0,
        replay_num_limit: 0,
        nak_ignore_window: 0,
        handshake_timeout_flits: 0,
        ack_timeout: Duration::ZERO,
    };
}

impl<const L: usize, const N: usize> Retry<[u8; L], N> {
    /// A machine with its replay buffer inline and every byte zero, so a `static` holding it
    /// lands in `.bss` (no flash, no start-up copy): configured for Format 1
    /// ([`RetryConfig::ZERO`]), so it sends and accepts nothing until [`Retry::init`].
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> Retry<B, N> {
    /// A machine in its reset state (RDI Reset), about to do the Sequence Number Handshake.
    /// (Configured for Format 1, which has no retry, it sends and accepts nothing.) (Built on
    /// the stack; see [`Retry::init`] for building one in place.)
    pub fn new(config: RetryConfig, storage: B) -> Self {
        let mut retry = Self::unconfigured(storage);
        retry.init(config);
        retry
    }

    /// A machine with every field zero but `storage`: [`RetryConfig::ZERO`].
    pub(crate) const fn unconfigured(storage: B) -> Self {
        Retry {
            config: RetryConfig::ZERO,
            header: None,
            buf: ReplayBuffer::new(storage, FIRST),
            st: State::INITIAL,
            events: Deque::new(),
            stats: RetryStats::ZERO,
        }
    }

    /// Makes this machine what [`Retry::new`]`(config, storage)` returns with its own storage,
    /// in place (without a second machine on the stack): the reset state, no event, counters at
    /// zero. On a [`Retry::EMPTY`] in a `static`, this is how firmware builds one.
    pub fn init(&mut self, config: RetryConfig) {
        self.reconfigure(config);
        self.events.clear();
        self.stats = RetryStats::ZERO;
    }

    /// Takes a new configuration (the format negotiated at link initialization) and starts
    /// over from the reset state, as [`Retry::reset`].
    pub fn reconfigure(&mut self, config: RetryConfig) {
        self.header = flit::header_span(config.format);
        self.config = config;
        self.reset();
    }

    /// The flit [`Retry::poll_transmit`] would send next if it sends a payload flit: the next
    /// replay or new flit, as stored (sequence field and CRCs not yet written).
    pub fn peek_payload(&self) -> Option<&[u8]> {
        let cursor = self.buf.in_flight() - self.buf.replays_pending();
        let next =
            if let Some(from) = self.st.replay_scheduled { from } else { self.buf.base().wrapping_add(cursor as u64) };
        self.buf.get(next)
    }

    /// The stack ID of a stored or received flit of this format.
    pub fn stack_of(&self, flit: &[u8]) -> u8 {
        self.header.and_then(|h| flit.get(h.start)).map_or(0, |b| b >> 5 & 1)
    }

    /// The configuration.
    pub fn config(&self) -> &RetryConfig {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> &RetryStats {
        &self.stats
    }

    /// The replay buffer (read-only).
    pub fn buffer(&self) -> &ReplayBuffer<NonZeroBits<8>, B, N> {
        &self.buf
    }

    /// Whether the Sequence Number Handshake is still running.
    pub fn in_handshake(&self) -> bool {
        self.st.handshake.is_some()
    }

    /// Whether a replay is scheduled or in progress.
    pub fn is_replaying(&self) -> bool {
        self.st.replay_scheduled.is_some() || self.st.replay_in_progress
    }

    /// The sequence number the receiver expects next.
    pub fn next_expected(&self) -> SeqNum {
        self.st.next_expected
    }

    /// The PDS flit header this transmitter sends now (Format 2, §3.3.2.1): its sequence
    /// field is the bitwise inverse of `NEXT_TX_FLIT_SEQ_NUM − 1`.
    pub fn pds_header(&self) -> [u8; 2] {
        crate::stream68::pds_header(true, !wire(self.buf.last_sent()))
    }

    /// The sequence field a PDS from the peer is expected to carry: the inverse of the last
    /// sequence number the peer sent as far as this receiver knows (`IMPLICIT_RX_FLIT_SEQ_NUM`,
    /// which counts flits lost to errors too; see [`crate::stream68`]).
    pub fn expected_pds_field(&self) -> u8 {
        !wire(self.st.implicit.unwrap_or(self.st.next_expected.prev()))
    }

    /// RDI went through Reset: every variable back to its initial value, the buffer emptied
    /// (its flits are lost with the link), a new handshake. Unpolled events are kept.
    pub fn reset(&mut self) {
        self.buf.reset_to(FIRST);
        self.st = State::INITIAL;
    }

    /// RDI went through Retrain and is Active again: the variables PCIe initialises in the
    /// IDLE flit handshake start over and a new Sequence Number Handshake begins; sequence
    /// numbers, the buffer and any pending Nak or replay carry on.
    pub fn retrain(&mut self) {
        self.st.consec_explicit = 0;
        self.st.consec_nak = 0;
        self.st.explicit_rcvd = false;
        self.st.implicit = None;
        self.st.handshake = Some(HANDSHAKE);
    }

    /// Whether a payload flit would be accepted now (not while a corrupted flit waits to go:
    /// the next flit must take its place).
    pub fn can_send(&self) -> bool {
        !self.poisoned_pending() && self.buf.can_push(self.config.format.flit_len())
    }

    /// Whether a flit sent with corrupted CRCs is queued and not yet transmitted.
    fn poisoned_pending(&self) -> bool {
        self.buf.unsent() > 0 && self.buf.peek_newest_mark()
    }

    /// Queues a payload flit built in place by `fill`, which gets the flit's bytes (zeroed):
    /// the header's Protocol ID, Stack ID, marker and Flit Type, the payload and DLP/FM/CRD
    /// bytes are the caller's; the sequence number, command and CRCs are written at each
    /// transmission. Returns the flit's sequence number.
    pub fn send_with(&mut self, now: Instant, fill: impl FnOnce(&mut [u8])) -> Result<SeqNum, RetryError> {
        let len = self.config.format.flit_len();
        if self.header.is_none() {
            return Err(RetryError::Raw);
        }
        if self.poisoned_pending() {
            return Err(RetryError::Busy);
        }
        let s = self
            .buf
            .push_with(now, len, |_, b| {
                b.fill(0);
                fill(b)
            })
            .map_err(|_| RetryError::Full)?;
        Ok(s)
    }

    /// Queues a flit like [`Retry::send_with`] that goes out with its CRCs corrupted by
    /// [`crc::CORRUPT_SYNDROME`] (`lp_corrupt_crc`, Table 10-3: CXL.cachemem viral and poison
    /// containment; both CRCs of the flit). The receiver drops it as invalid; the flit is
    /// never replayed: the next flit queued takes its place and sequence number in the retry
    /// buffer. Refused ([`RetryError::Busy`]) unless it is the next flit to go out (nothing
    /// queued before it, no replay pending).
    pub fn send_corrupted_with(&mut self, now: Instant, fill: impl FnOnce(&mut [u8])) -> Result<SeqNum, RetryError> {
        if self.header.is_none() {
            return Err(RetryError::Raw);
        }
        if self.buf.unsent() > 0 || self.is_replaying() {
            return Err(RetryError::Busy);
        }
        let len = self.config.format.flit_len();
        self.buf
            .push_marked_with(now, len, true, |_, b| {
                b.fill(0);
                fill(b)
            })
            .map_err(|_| RetryError::Full)
    }

    /// Queues a copy of `flit`; see [`Retry::send_with`].
    pub fn send(&mut self, now: Instant, flit: &[u8]) -> Result<SeqNum, RetryError> {
        if flit.len() != self.config.format.flit_len() {
            return Err(RetryError::Length);
        }
        self.send_with(now, |b| b.copy_from_slice(flit))
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<RetryEvent> {
        self.events.pop_front()
    }

    fn event(&mut self, e: RetryEvent) {
        if self.events.push_back(e).is_err() {
            self.stats.events_dropped += 1;
        }
    }

    /// When [`Retry::handle_timeout`] is due: the Adapter Timeout of flits left without an
    /// Ack or Nak.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.st.ack_deadline
    }

    /// RDI was away from Active for `by` (Retrain, PM) and is back at `now`: the Adapter
    /// Timeout, which counts only while RDI is Active (Table 9-33, Header Log 2 0100b), moves on
    /// by as much, and one armed while RDI was away has its whole time from `now`.
    pub fn postpone(&mut self, now: Instant, by: Duration) {
        let full = now.saturating_add(self.config.ack_timeout);
        self.st.ack_deadline = self.st.ack_deadline.map(|d| d.saturating_add(by).min(full));
    }

    /// Fires the Adapter Timeout if due: an Uncorrectable Internal Error (the embedder takes
    /// RDI to LinkError). Counting restarts with the next Ack or Nak.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.st.ack_deadline.is_some_and(|d| now >= d) {
            self.st.ack_deadline = None;
            self.event(RetryEvent::Uncorrectable(UncorrectableCause::RetryTimeout));
        }
    }

    fn header_mut<'b>(&self, flit: &'b mut [u8]) -> Option<&'b mut [u8; 2]> {
        let h = self.header?;
        flit.get_mut(h.start..h.end).and_then(|b| b.first_chunk_mut::<2>())
    }

    /// The flit for the next flit time, written into `out` (the format's flit length) with
    /// header, sequence field and CRCs complete; `None` when nothing needs sending. Call it
    /// once per flit time the link could send: a `None` counts as a flit time with nothing
    /// sent for the replay timer (UCIe §3.8).
    pub fn poll_transmit(&mut self, now: Instant, out: &mut [u8]) -> Option<Sent> {
        self.transmit(now, out, false)
    }

    /// [`Retry::poll_transmit`] that sends a NOP (carrying what is owed) instead of the next
    /// payload flit: for stack multiplexing, which never sends two flits of one stack back to
    /// back (§3.1).
    pub fn poll_nop(&mut self, now: Instant, out: &mut [u8]) -> Option<Sent> {
        self.transmit(now, out, true)
    }

    fn transmit(&mut self, now: Instant, out: &mut [u8], hold: bool) -> Option<Sent> {
        if out.len() != self.config.format.flit_len() || self.header.is_none() {
            return None;
        }
        let command = self.choose_command();
        // A replay starts on an explicit flit that follows a non-explicit one (or a reset
        // count), when Naks are not mid-burst and FLIT_REPLAY_NUM allows.
        let mut pds_before = false;
        let mut corrupt = false;
        if let (Some(from), ReplayCommand::Explicit, false) = (self.st.replay_scheduled, command, hold) {
            let nak_burst_done = self.st.handshake.is_some() || self.st.consec_nak == 0 || self.st.consec_nak > 2;
            if self.st.consec_explicit == 0 && nak_burst_done {
                pds_before = self.start_replay(from);
            }
        }
        let waiting_replay = self.st.replay_scheduled.is_some();
        let payload = if waiting_replay || hold { None } else { self.buf.poll_next() };
        let sent = match payload {
            Some(o) => {
                let (s, replay) = (o.seq, o.replay);
                corrupt = o.mark;
                if let Some(dst) = out.get_mut(..o.frame.len()) {
                    // A 256-byte flit moves as an array (one memory copy); a byte loop stays a
                    // byte loop at `opt-level = "z"` (3 000 more instructions a flit on a
                    // Cortex-M4), and `copy_from_slice` would link a panic.
                    match (<&mut [u8; 256]>::try_from(&mut *dst), <&[u8; 256]>::try_from(o.frame)) {
                        (Ok(d), Ok(s)) => *d = *s,
                        _ => _ = linklayer::bytes::copy_prefix(dst, o.frame),
                    }
                }
                self.after_payload(s, replay);
                let field = self.field(command, Some(s));
                Sent { payload: Some(wire(s)), replay, command, seq: field, pds_before }
            }
            None => {
                let explicit_owed = self.explicit_owed();
                let owed = hold
                    || explicit_owed
                    || self.st.handshake.is_some()
                    || self.st.acks_owed > 0
                    || self.st.nak_scheduled
                    || waiting_replay;
                if !owed {
                    // A flit slot with nothing sent: a Flit Time, or in Format 2 a 68-byte slot.
                    let slot = if self.config.format == Format::Flit68 { FLIT68 } else { 0 };
                    self.tick(slot);
                    return None;
                }
                // With nothing to number, a NOP carries what is owed: the Ack or Nak, or an
                // explicit sequence number in the handshake and when the peer needs one.
                let command = match command {
                    ReplayCommand::Explicit if self.st.handshake.is_none() && !explicit_owed => self.acknak(),
                    c => c,
                };
                out.fill(0);
                self.stats.nops += 1;
                let field = self.field(command, None);
                Sent { payload: None, replay: false, command, seq: field, pds_before: false }
            }
        };
        let header = FlitHeader { command: sent.command, seq: sent.seq, ..FlitHeader::NOP };
        let bits = header.emit_256(true).unwrap_or([0; 2]);
        if let Some(h) = self.header_mut(out) {
            h[0] = h[0] & 0xF0 | bits[0] & 0x0F;
            h[1] = h[1] & 0xC0 | bits[1] & 0x3F;
        }
        // The flit length was checked above, so sealing cannot fail.
        let _ = crc::seal_corrupted(self.config.format, out, if corrupt { 0b11 } else { 0 });
        if corrupt {
            // Overwritten by the next flit: never replayed.
            self.buf.retract_newest();
        }
        self.after_transmit(sent);
        if self.st.ack_deadline.is_none() && self.buf.in_flight() > 0 {
            self.st.ack_deadline = Some(now.saturating_add(self.config.ack_timeout));
        }
        Some(sent)
    }

    /// The S field for `command`: a payload flit's own number, an explicit NOP's
    /// `NEXT_TX − 1` (the last payload flit during a replay), or `TX_ACKNAK`.
    fn field(&self, command: ReplayCommand, payload: Option<SeqNum>) -> u8 {
        match (command, payload) {
            (ReplayCommand::Explicit, Some(s)) => wire(s),
            (ReplayCommand::Explicit, None) => match (self.st.replay_in_progress, self.st.last_payload) {
                (true, Some(s)) => wire(s),
                _ => wire(self.buf.last_sent()),
            },
            _ => wire(self.st.tx_acknak()),
        }
    }

    /// The peer Naked the last flit sent (`NAK_IGNORE_FLIT_SEQ_NUM` set, no replay): it needs
    /// an explicit sequence number to see that nothing is missing (§4.2.3.4.2.1.3).
    fn explicit_owed(&self) -> bool {
        self.st.nak_ignore.is_some() && self.st.replay_scheduled.is_none() && !self.st.replay_in_progress
    }

    fn acknak(&self) -> ReplayCommand {
        if self.st.nak_scheduled { ReplayCommand::Nak } else { ReplayCommand::Ack }
    }

    /// Explicit sequence number, Ack or Nak for the next flit (§4.2.3.4.2.1.3 with UCIe's
    /// "< 1"): a Nak burst runs to three; otherwise explicit flits alternate with Acks/Naks
    /// while one is owed or a replay waits, and run back to back when nothing is pending.
    fn choose_command(&self) -> ReplayCommand {
        let st = &self.st;
        if st.nak_scheduled && st.consec_nak > 0 && st.consec_nak < 3 {
            return ReplayCommand::Nak;
        }
        let pending = st.nak_scheduled || st.acks_owed > 0 || st.replay_scheduled.is_some() || self.explicit_owed();
        if st.consec_explicit >= 1 && (pending || st.handshake.is_some()) {
            return self.acknak();
        }
        ReplayCommand::Explicit
    }

    /// Starts the scheduled replay if `FLIT_REPLAY_NUM` allows; whether it started.
    fn start_replay(&mut self, from: SeqNum) -> bool {
        if self.st.replay_num >= self.config.replay_num_limit {
            // REPLAY_NUM Rollover: the counter rolls over and the link retrains; the replay
            // stays scheduled for after.
            self.st.replay_num = self.st.replay_num.wrapping_add(self.config.replay_num_step) & 0b111;
            self.event(RetryEvent::Retrain(RetrainCause::ReplayNumRollover));
            return false;
        }
        if self.buf.rewind(from).is_err() {
            // Acknowledged meanwhile: nothing left to replay from there.
            self.st.replay_scheduled = None;
            return false;
        }
        self.st.replay_num = self.st.replay_num.wrapping_add(self.config.replay_num_step) & 0b111;
        self.st.replay_scheduled = None;
        self.st.replay_in_progress = self.buf.is_replaying();
        self.stats.replays += 1;
        true
    }

    fn after_payload(&mut self, s: SeqNum, replay: bool) {
        if replay {
            self.stats.replayed += 1;
        } else {
            self.stats.sent += 1;
        }
        self.st.last_payload = Some(s);
        if !self.buf.is_replaying() {
            self.st.replay_in_progress = false;
        }
    }

    fn after_transmit(&mut self, sent: Sent) {
        let explicit = sent.command == ReplayCommand::Explicit;
        self.st.consec_explicit = if explicit { (self.st.consec_explicit + 1).min(3) } else { 0 };
        self.st.consec_nak = if sent.command == ReplayCommand::Nak { (self.st.consec_nak + 1).min(7) } else { 0 };
        match sent.command {
            ReplayCommand::Ack => self.st.acks_owed = self.st.acks_owed.saturating_sub(1),
            ReplayCommand::Nak => self.stats.naks_sent += 1,
            ReplayCommand::Explicit => {}
        }
        // The Nak ignore window opens when the flit after the ignored Nak goes out.
        if let (Some(ig), Some(p), IgnoreWindow::NotStarted) = (self.st.nak_ignore, sent.payload, self.st.ignore_window)
        {
            if explicit && p == wire(ig.next()) {
                self.st.ignore_window = IgnoreWindow::Open(self.config.nak_ignore_window);
            }
        }
        if let Some(h) = &mut self.st.handshake {
            h.flits = h.flits.saturating_add(1);
            if explicit && sent.seq != 0 {
                h.explicit_sent = h.explicit_sent.saturating_add(1);
            }
            if sent.command == ReplayCommand::Ack && sent.seq != 0 && self.st.explicit_rcvd {
                h.acks_sent = h.acks_sent.saturating_add(1);
            }
            if h.explicit_sent >= 9 && h.acks_sent >= 3 {
                self.st.handshake = None;
                self.event(RetryEvent::HandshakeComplete);
            } else if h.flits >= self.config.handshake_timeout_flits && !h.timed_out {
                h.timed_out = true;
                self.event(RetryEvent::Retrain(RetrainCause::HandshakeTimeout));
            }
        }
        self.tick(self.config.format.flit_len() as u16);
    }

    /// Format 2: a PDS of `bytes` (its header and padding, as
    /// [`crate::stream68::Packer::push_pds`] counts them) went out in the stream. The replay
    /// timer counts 256-byte units "including the PDS bytes" (§3.8).
    pub fn note_pds(&mut self, bytes: usize) {
        if bytes > 0 && self.config.format == Format::Flit68 {
            self.advance_timer(u16::try_from(bytes).unwrap_or(u16::MAX));
        }
    }

    /// One flit slot passed, `bytes` long (0: a whole Flit Time with nothing sent): the replay
    /// timer, Rule 0 and the Nak ignore window advance. In Format 2 the timer counts 256-byte
    /// units (§3.8), PDS bytes with them ([`Retry::note_pds`]).
    fn tick(&mut self, bytes: u16) {
        if let IgnoreWindow::Open(n) = self.st.ignore_window {
            self.st.ignore_window = if n <= 1 { IgnoreWindow::Elapsed } else { IgnoreWindow::Open(n - 1) };
        }
        self.advance_timer(bytes);
    }

    /// The replay timer advances by `bytes` (0: a Flit Time), and Rule 0 is checked.
    fn advance_timer(&mut self, bytes: u16) {
        if self.buf.in_flight() == 0 {
            return;
        }
        let units = if bytes == 0 || self.config.format != Format::Flit68 {
            1
        } else {
            self.st.timer_bytes = self.st.timer_bytes.saturating_add(bytes);
            let whole = self.st.timer_bytes / 256;
            self.st.timer_bytes %= 256;
            whole
        };
        self.st.replay_timeout = (self.st.replay_timeout + units).min(REPLAY_TIMEOUT_MAX);
        if self.st.replay_timeout >= self.config.replay_timeout_flits
            && self.st.replay_scheduled.is_none()
            && !self.st.replay_in_progress
        {
            let from = self.st.unackd;
            self.st.replay_scheduled = Some(from);
            self.st.consec_explicit = 0;
            self.st.consec_nak = 0;
            self.st.replay_timeout = 0;
            self.event(RetryEvent::ReplayScheduled { from: wire(from), timeout: true });
        }
    }

    /// A received Ack or Nak with S field `s` (non-zero): §4.2.3.4.2.1.4 and Replay Schedule
    /// Rule 1.
    fn handle_acknak(&mut self, now: Instant, ack: bool, s: SeqNum) {
        let last_sent = self.buf.last_sent();
        let max = ReplayBuffer::<NonZeroBits<8>, B, N>::MAX_FRAMES as u64;
        if s.distance_to(last_sent) > max || self.st.unackd.prev().distance_to(s) > max {
            self.event(RetryEvent::Uncorrectable(UncorrectableCause::InvalidAckNak { ack, seq: wire(s) }));
            return;
        }
        match self.buf.ack(s) {
            Ok(n) if n > 0 => {
                self.st.replay_num = 0;
                self.st.replay_timeout = 0;
            }
            Ok(_) => {}
            Err(_) => {
                self.event(RetryEvent::Uncorrectable(UncorrectableCause::InvalidAckNak { ack, seq: wire(s) }));
                return;
            }
        }
        self.st.unackd = s.next();
        if !self.buf.is_replaying() {
            self.st.replay_in_progress = false;
        }
        self.st.ack_deadline = (self.buf.in_flight() > 0).then(|| now.saturating_add(self.config.ack_timeout));
        if ack {
            self.st.nak_ignore = None;
            if let Some(r) = self.st.replay_scheduled {
                if r.distance_to(s) < max {
                    self.st.replay_scheduled = None;
                }
            }
            return;
        }
        // After a Nak, at least two flits carry an Ack (§3.8 implementation note).
        self.st.acks_owed = self.st.acks_owed.max(2);
        let ignored_repeat = self.st.nak_ignore == Some(s) && matches!(self.st.ignore_window, IgnoreWindow::Open(_));
        if s == last_sent {
            self.st.nak_ignore = Some(s);
        } else if self.st.nak_ignore != Some(s) {
            self.st.nak_ignore = None;
        }
        let has_next = s != last_sent && self.buf.in_flight() > 0;
        if has_next && self.st.replay_scheduled.is_none() && !self.st.replay_in_progress && !ignored_repeat {
            let from = s.next();
            self.st.replay_scheduled = Some(from);
            self.st.nak_ignore = Some(s);
            self.st.ignore_window = IgnoreWindow::NotStarted;
            self.event(RetryEvent::ReplayScheduled { from: wire(from), timeout: false });
        }
    }

    /// A received flit (the format's length): checks it, processes the Ack or Nak it
    /// carries, and says whether to deliver it (§4.2.3.4.2.1.5).
    pub fn handle_flit<'a>(&mut self, now: Instant, bytes: &'a [u8]) -> Received<'a> {
        let format = self.config.format;
        let Some(h) = self.header.filter(|_| bytes.len() == format.flit_len()) else {
            return Received::Discarded(Discard::Length);
        };
        let raw = bytes.get(h.start..h.end).and_then(|b| b.first_chunk::<2>()).copied().unwrap_or([0; 2]);
        let header = match crc::check(format, bytes) {
            Ok(()) if FlitHeader::is_nop(raw) => return Received::Discarded(Discard::Idle),
            Ok(()) => FlitHeader::parse_for(format, raw, true).ok(),
            Err(_) => None,
        };
        let Some(h) = header else { return self.invalid() };
        if format == Format::Flit68 && h.marker {
            // A PDS flit header: the 68B stream's padding, not a flit.
            return Received::Discarded(Discard::Pds);
        }
        let nop = (h.protocol_id == 0 && h.flit_type == FlitType::Protocol) || h.flit_type == FlitType::Test;
        let explicit = h.command == ReplayCommand::Explicit;
        let s = seq(h.seq);
        if let (false, Some(s)) = (explicit, s) {
            self.handle_acknak(now, h.command == ReplayCommand::Ack, s);
        }
        // IMPLICIT_RX_FLIT_SEQ_NUM.
        match (explicit, s) {
            (true, Some(s)) => {
                self.st.implicit = Some(s);
                self.st.explicit_rcvd = true;
            }
            (true, None) if !nop => {
                self.event(RetryEvent::Uncorrectable(UncorrectableCause::ExplicitZero));
                return Received::Discarded(Discard::ExplicitZero);
            }
            (false, _) if !nop && self.st.explicit_rcvd => self.st.implicit = self.st.implicit.map(|i| i.next()),
            _ => {}
        }
        let Some(implicit) = self.st.implicit.filter(|_| self.st.explicit_rcvd) else {
            return Received::Discarded(Discard::BeforeHandshake);
        };
        let window = RX_WINDOW;
        // bad_sequence_number: (NEXT_EXPECTED − IMPLICIT) mod 255 > 127, the flit is beyond
        // the next expected; duplicate: (TX_ACKNAK − IMPLICIT) mod 255 < 127, at or before
        // the last acknowledged.
        let bad_sequence = implicit.distance_to(self.st.next_expected) > window;
        let duplicate = implicit.distance_to(self.st.tx_acknak()) < window;
        if self.st.nak_scheduled {
            if nop {
                if explicit && implicit == self.st.next_expected.prev() {
                    self.st.nak_scheduled = false;
                    self.st.acks_owed = 2;
                }
                return Received::Discarded(Discard::Nop);
            }
            if explicit && implicit == self.st.next_expected {
                // Ack Schedule 1: the replay arrived.
                self.st.nak_scheduled = false;
                self.st.acks_owed = 2;
                return self.accept(implicit, h, bytes);
            }
            let why = if duplicate { Discard::Duplicate } else { Discard::OutOfOrder };
            return Received::Discarded(why);
        }
        if nop {
            // bad_nop: the NOP says flits were sent that never arrived.
            if bad_sequence || implicit == self.st.next_expected {
                self.schedule_nak();
            }
            return Received::Discarded(Discard::Nop);
        }
        if duplicate {
            // A replay of flits already received: their Ack was lost. The link may idle, so an
            // Ack is owed (on a PCIe link one would follow in the continuous flit stream).
            self.st.acks_owed = self.st.acks_owed.max(1);
            return Received::Discarded(Discard::Duplicate);
        }
        if bad_sequence || implicit != self.st.next_expected {
            self.schedule_nak();
            return Received::Discarded(Discard::OutOfOrder);
        }
        self.st.acks_owed = self.st.acks_owed.max(1);
        self.accept(implicit, h, bytes)
    }

    fn schedule_nak(&mut self) {
        self.st.nak_scheduled = true;
    }

    fn invalid(&mut self) -> Received<'static> {
        self.stats.invalid += 1;
        if self.st.explicit_rcvd {
            self.st.implicit = self.st.implicit.map(|i| i.next());
            if !self.st.nak_scheduled {
                self.schedule_nak();
            }
        }
        Received::Discarded(Discard::Invalid)
    }

    fn accept<'a>(&mut self, s: SeqNum, h: FlitHeader, bytes: &'a [u8]) -> Received<'a> {
        self.st.next_expected = s.next();
        self.stats.delivered += 1;
        let [p0, p1] = self.config.protocols;
        let protocol = if h.stack == 0 { p0 } else { p1 };
        match Map::new(self.config.format, Layout::of(protocol, &h)) {
            Ok(map) => Received::Deliver { seq: s, flit: Flit::checked(map, h, bytes) },
            // No such layout in this format (a management flit in Format 2): acknowledged, as
            // the sequence rules require, but unreadable.
            Err(_) => Received::Discarded(Discard::Invalid),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::vec::Vec;

    const FMT: Format = Format::Standard256StartHeader;
    type R = Retry<[u8; 64 * 256], 64>;
    const LATENCY: u64 = 4;

    fn machine() -> R {
        Retry::new(RetryConfig::new(FMT, Protocol::Cxl), [0; 64 * 256])
    }

    /// A CXL.cachemem payload flit carrying `n`.
    fn fill(n: u64) -> impl FnOnce(&mut [u8]) {
        move |b: &mut [u8]| {
            b[0] = 0b10 << 6;
            b[2..10].copy_from_slice(&n.to_le_bytes());
        }
    }

    fn number(f: &Flit<'_>) -> u64 {
        u64::from_le_bytes(f.payload()[0][..8].try_into().unwrap())
    }

    fn header(flit: &[u8]) -> FlitHeader {
        FlitHeader::parse_256([flit[0], flit[1]], true).unwrap()
    }

    /// Tiny deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn chance(&mut self, per_million: u64) -> bool {
            self.next() % 1_000_000 < per_million
        }
    }

    #[derive(Clone, Copy, Default)]
    struct Impair {
        loss: u64,
        corrupt: u64,
        duplicate: u64,
        reorder: u64,
    }

    struct Sim {
        a: R,
        b: R,
        rng: Rng,
        wire_ab: VecDeque<(u64, Vec<u8>)>,
        wire_ba: VecDeque<(u64, Vec<u8>)>,
        impair: Impair,
        next_a: u64,
        got_b: Vec<u64>,
        events: Vec<(char, RetryEvent)>,
        slot: u64,
    }

    impl Sim {
        fn new(seed: u64, impair: Impair) -> Sim {
            Sim {
                a: machine(),
                b: machine(),
                rng: Rng(seed | 1),
                wire_ab: VecDeque::new(),
                wire_ba: VecDeque::new(),
                impair,
                next_a: 0,
                got_b: Vec::new(),
                events: Vec::new(),
                slot: 0,
            }
        }

        /// The link: a flit arrives `LATENCY` flit times after it was sent. `loss` erases a
        /// flit (the receiver still clocks in a flit-time of garbage, as a die-to-die PHY
        /// does), `corrupt` flips one bit; `duplicate` and `reorder` model what a real link
        /// never does, to show the machine stays live and panic-free under them.
        fn carry(rng: &mut Rng, impair: Impair, wire: &mut VecDeque<(u64, Vec<u8>)>, due: u64, mut flit: Vec<u8>) {
            if rng.chance(impair.loss) {
                flit.fill(0xA5);
            }
            if rng.chance(impair.corrupt) {
                let bit = rng.next() as usize % (flit.len() * 8);
                flit[bit / 8] ^= 1 << (bit % 8);
            }
            if rng.chance(impair.duplicate) {
                wire.push_back((due, flit.clone()));
            }
            if rng.chance(impair.reorder) && !wire.is_empty() {
                let at = wire.len() - 1;
                wire.insert(at, (due, flit));
            } else {
                wire.push_back((due, flit));
            }
        }

        /// One flit time: A sends data (while below `total`), both send what retry owes, and
        /// flits sent `LATENCY` flit times ago arrive.
        fn step(&mut self, total: u64) {
            let now = Instant::from_nanos(self.slot);
            let due = self.slot + LATENCY;
            while self.next_a < total && self.a.can_send() {
                self.a.send_with(now, fill(self.next_a)).unwrap();
                self.next_a += 1;
            }
            let mut out = std::vec![0u8; 256];
            if self.a.poll_transmit(now, &mut out).is_some() {
                Self::carry(&mut self.rng, self.impair, &mut self.wire_ab, due, out.clone());
            }
            if self.b.poll_transmit(now, &mut out).is_some() {
                Self::carry(&mut self.rng, self.impair, &mut self.wire_ba, due, out.clone());
            }
            while self.wire_ab.front().is_some_and(|(d, _)| *d <= self.slot) {
                let (_, f) = self.wire_ab.pop_front().unwrap();
                if let Received::Deliver { flit, .. } = self.b.handle_flit(now, &f) {
                    self.got_b.push(number(&flit));
                }
            }
            while self.wire_ba.front().is_some_and(|(d, _)| *d <= self.slot) {
                let (_, f) = self.wire_ba.pop_front().unwrap();
                assert!(!matches!(self.a.handle_flit(now, &f), Received::Deliver { .. }));
            }
            self.slot += 1;
            while let Some(e) = self.a.poll_event() {
                self.events.push(('a', e));
            }
            while let Some(e) = self.b.poll_event() {
                self.events.push(('b', e));
            }
            for (who, e) in &self.events {
                if let RetryEvent::Retrain(_) = e {
                    // The link retrains: in this model, instantly, with nothing in flight lost
                    // beyond what the wire dropped.
                    if *who == 'a' {
                        self.a.retrain();
                    } else {
                        self.b.retrain();
                    }
                }
            }
            self.events.retain(|(_, e)| !matches!(e, RetryEvent::Retrain(_)));
        }

        fn run(&mut self, total: u64, max_slots: u64) {
            while (self.got_b.len() as u64) < total && self.slot < max_slots {
                self.step(total);
            }
        }
    }

    /// Format 2: the replay timer counts 256-byte units of the stream, PDS bytes included
    /// (§3.8): 100 units of PDS bring the timeout 100 × 256 bytes of flits sooner.
    #[test]
    fn format_2_counts_pds_bytes_in_the_replay_timer() {
        let flits_to_timeout = |pds: usize| {
            let mut r =
                Retry::<[u8; 64 * 256], 64>::new(RetryConfig::new(Format::Flit68, Protocol::Cxl), [0; 64 * 256]);
            r.send_with(Instant::ZERO, |b: &mut [u8]| b[0] = 0b10 << 6).unwrap();
            let mut out = [0u8; 68];
            r.poll_transmit(Instant::ZERO, &mut out).unwrap();
            r.note_pds(pds);
            (1..10_000)
                .find(|_| {
                    r.poll_transmit(Instant::ZERO, &mut out);
                    core::iter::from_fn(|| r.poll_event())
                        .any(|e| matches!(e, RetryEvent::ReplayScheduled { timeout: true, .. }))
                })
                .unwrap()
        };
        let (plain, after_pds) = (flits_to_timeout(0), flits_to_timeout(100 * 256));
        assert_eq!(plain, 375 * 256 / 68, "375 units of 68-byte flits");
        assert_eq!(plain - after_pds, 100 * 256 / 68);
    }

    #[test]
    fn handshake_then_stream() {
        let mut sim = Sim::new(1, Impair::default());
        sim.run(1000, 20_000);
        assert_eq!(sim.got_b, (0..1000).collect::<Vec<_>>());
        assert!(!sim.a.in_handshake() && !sim.b.in_handshake());
        assert!(
            sim.events.iter().filter(|(_, e)| *e == RetryEvent::HandshakeComplete).count() == 2,
            "{:?}",
            sim.events
        );
        assert_eq!(sim.a.stats().replays, 0, "{:?}", sim.events);
        // Everything acknowledged once the Acks come back.
        for _ in 0..20 {
            sim.step(1000);
        }
        assert_eq!(sim.a.buffer().len(), 0);
    }

    #[test]
    fn init_in_place_restarts_as_new() {
        let impair = Impair { loss: 20_000, corrupt: 20_000, ..Impair::default() };
        let mut fresh = Sim::new(7, impair);
        fresh.run(300, 20_000);
        assert!(fresh.a.stats().replays > 0, "the run replayed");
        // A used pair, left mid-replay with flits in its buffer, configured afresh in place.
        let mut used = Sim::new(8, impair);
        used.run(100, 150);
        assert!(!used.a.buffer().is_empty());
        let config = RetryConfig::new(FMT, Protocol::Cxl);
        used.a.init(config);
        used.b.init(config);
        let mut again = Sim::new(7, impair);
        (again.a, again.b) = (used.a, used.b);
        again.run(300, 20_000);
        assert_eq!(again.got_b, fresh.got_b);
        assert_eq!(again.events, fresh.events);
        assert_eq!((again.a.stats(), again.b.stats()), (fresh.a.stats(), fresh.b.stats()));
        // From EMPTY, too.
        static EMPTY: R = R::EMPTY;
        let mut again = Sim::new(7, impair);
        (again.a, again.b) = (EMPTY.clone(), EMPTY.clone());
        let mut out = [0u8; 256];
        assert!(again.a.poll_transmit(Instant::ZERO, &mut out).is_none(), "Format 1 sends nothing");
        again.a.init(config);
        again.b.init(config);
        again.run(300, 20_000);
        assert_eq!((again.got_b, again.events), (fresh.got_b, fresh.events));
    }

    #[test]
    fn handshake_flits_by_hand() {
        let mut a = machine();
        let mut out = [0u8; 256];
        let t = Instant::ZERO;
        // Explicit NOP carrying NEXT_TX − 1 = 255, then an Ack of TX_ACKNAK = 255: alternating.
        let s = a.poll_transmit(t, &mut out).unwrap();
        assert_eq!((s.payload, s.command, s.seq), (None, ReplayCommand::Explicit, 255));
        assert_eq!(out[..2], [0x0F, 0x0F]);
        assert_eq!(crc::check(FMT, &out), Ok(()));
        let s = a.poll_transmit(t, &mut out).unwrap();
        assert_eq!((s.command, s.seq), (ReplayCommand::Ack, 255));
        assert_eq!(out[..2], [0x0F, 0x1F]);
        // A payload flit goes out explicit, numbered 1, with its Protocol ID kept.
        a.send_with(t, fill(7)).unwrap();
        let s = a.poll_transmit(t, &mut out).unwrap();
        assert_eq!((s.payload, s.command, s.seq), (Some(1), ReplayCommand::Explicit, 1));
        assert_eq!(header(&out).protocol_id, 0b10);
        assert_eq!(header(&out).seq, 1);
    }

    #[test]
    fn bit_errors_deliver_exactly_once_in_order() {
        for seed in 1..=8u64 {
            let impair = Impair { loss: 20_000, corrupt: 30_000, ..Impair::default() };
            let mut sim = Sim::new(seed, impair);
            sim.run(3000, 200_000);
            assert!(sim.got_b == (0..3000).collect::<Vec<_>>(), "seed {seed}: {:?}", &sim.got_b[..40]);
            assert!(sim.a.stats().replays > 0);
            assert!(sim.b.stats().naks_sent > 0);
            let uie = sim.events.iter().find(|(_, e)| matches!(e, RetryEvent::Uncorrectable(_)));
            assert_eq!(uie, None, "seed {seed}");
        }
    }

    /// Duplicated and reordered flits break the implicit numbering PCIe's design relies on
    /// (a real die-to-die link never produces them); the machines must stay panic-free and
    /// keep moving.
    #[test]
    fn duplication_and_reordering_stay_live() {
        for seed in 1..=4u64 {
            let impair = Impair { loss: 10_000, corrupt: 10_000, duplicate: 10_000, reorder: 10_000 };
            let mut sim = Sim::new(seed, impair);
            sim.run(2000, 100_000);
            assert_eq!(sim.got_b.len(), 2000, "seed {seed}: stalled at slot {}", sim.slot);
        }
    }

    /// A corrupted NOP makes A schedule a Nak with nothing missing; B answers with an explicit
    /// sequence number, A clears its Nak, and the link goes quiet again.
    #[test]
    fn a_nak_for_nothing_clears_and_the_link_idles() {
        let mut sim = Sim::new(5, Impair::default());
        sim.run(5, 10_000);
        for _ in 0..50 {
            sim.step(5);
        }
        let now = Instant::from_nanos(sim.slot);
        let mut bad = peer_flit(FlitHeader { command: ReplayCommand::Ack, seq: 1, ..FlitHeader::NOP });
        bad[3] ^= 1;
        assert_eq!(sim.a.handle_flit(now, &bad), Received::Discarded(Discard::Invalid));
        let mut a_sent = 0;
        for _ in 0..100 {
            let before = sim.a.stats().nops;
            sim.step(5);
            a_sent += sim.a.stats().nops - before;
        }
        assert!(sim.a.stats().naks_sent >= 3);
        assert!(a_sent < 20, "A kept sending: {a_sent}");
        let mut out = [0u8; 256];
        assert_eq!(sim.a.poll_transmit(now, &mut out), None);
        assert_eq!(sim.b.poll_transmit(now, &mut out), None);
    }

    /// `lp_corrupt_crc`: the poisoned flit is dropped by the receiver and never replayed; the
    /// next flit takes its sequence number and everything else arrives in order.
    #[test]
    fn a_corrupted_flit_is_replaced_by_the_next() {
        let mut sim = Sim::new(6, Impair::default());
        sim.run(3, 10_000);
        for _ in 0..50 {
            sim.step(3);
        }
        let now = Instant::from_nanos(sim.slot);
        assert_eq!(sim.a.send_corrupted_with(now, fill(999)).map(|s| s.value()), Ok(4));
        assert_eq!(sim.a.send_corrupted_with(now, fill(998)), Err(RetryError::Busy));
        // Nothing queues behind it until it has gone.
        assert!(!sim.a.can_send());
        assert_eq!(sim.a.send_with(now, fill(997)), Err(RetryError::Busy));
        for _ in 0..10 {
            sim.step(3);
        }
        assert_eq!(sim.b.stats().invalid, 1);
        sim.next_a = 3;
        sim.run(6, 20_000);
        assert_eq!(sim.got_b, [0, 1, 2, 3, 4, 5]);
        // The receiver's Nak may replay the flit that took the poisoned one's number.
        assert!(sim.a.stats().replays <= 1);
        let uie = sim.events.iter().any(|(_, e)| matches!(e, RetryEvent::Uncorrectable(_)));
        assert!(!uie, "{:?}", sim.events);
    }

    #[test]
    fn replay_timer_and_rollover() {
        // B goes silent after the handshake: A's replay timer fires after 375 flit times, and
        // the third replay without progress asks for Retrain.
        let mut sim = Sim::new(3, Impair::default());
        sim.run(10, 10_000);
        assert_eq!(sim.got_b.len(), 10);
        for _ in 0..10 {
            sim.step(10);
        }
        let now = Instant::ZERO;
        for i in 0..5 {
            sim.a.send_with(now, fill(100 + i)).unwrap();
        }
        let mut out = [0u8; 256];
        let mut events = Vec::new();
        for _ in 0..2000 {
            sim.a.poll_transmit(now, &mut out);
            while let Some(e) = sim.a.poll_event() {
                events.push(e);
            }
        }
        let timeouts = events.iter().filter(|e| matches!(e, RetryEvent::ReplayScheduled { timeout: true, .. })).count();
        assert!(timeouts >= 3, "{events:?}");
        assert!(events.contains(&RetryEvent::ReplayScheduled { from: 11, timeout: true }));
        assert!(events.contains(&RetryEvent::Retrain(RetrainCause::ReplayNumRollover)), "{events:?}");
    }

    #[test]
    fn handshake_timeout_and_ack_timeout() {
        let mut a = machine();
        let mut out = [0u8; 256];
        for _ in 0..128 {
            a.poll_transmit(Instant::ZERO, &mut out).unwrap();
        }
        assert_eq!(a.poll_event(), Some(RetryEvent::Retrain(RetrainCause::HandshakeTimeout)));
        a.send_with(Instant::ZERO, fill(1)).unwrap();
        a.poll_transmit(Instant::from_nanos(10), &mut out).unwrap();
        let due = a.poll_timeout().unwrap();
        assert_eq!(due, Instant::from_nanos(8_000_010));
        a.handle_timeout(Instant::from_nanos(8_000_009));
        assert_eq!(a.poll_event(), None);
        a.handle_timeout(due);
        assert_eq!(a.poll_event(), Some(RetryEvent::Uncorrectable(UncorrectableCause::RetryTimeout)));
    }

    /// A flit from the peer with header `h` and a good CRC.
    fn peer_flit(h: FlitHeader) -> [u8; 256] {
        let mut f = [0u8; 256];
        f[..2].copy_from_slice(&h.emit_256(true).unwrap());
        crc::seal(FMT, &mut f).unwrap();
        f
    }

    #[test]
    fn bad_input_is_typed() {
        let mut a = machine();
        let t = Instant::ZERO;
        // An Ack for a flit never sent.
        let ack = FlitHeader { command: ReplayCommand::Ack, seq: 40, ..FlitHeader::NOP };
        assert_eq!(a.handle_flit(t, &peer_flit(ack)), Received::Discarded(Discard::BeforeHandshake));
        assert_eq!(
            a.poll_event(),
            Some(RetryEvent::Uncorrectable(UncorrectableCause::InvalidAckNak { ack: true, seq: 40 }))
        );
        // A payload flit with explicit sequence number 0.
        let zero = FlitHeader { protocol_id: 0b10, ..FlitHeader::NOP };
        assert_eq!(a.handle_flit(t, &peer_flit(zero)), Received::Discarded(Discard::ExplicitZero));
        assert_eq!(a.poll_event(), Some(RetryEvent::Uncorrectable(UncorrectableCause::ExplicitZero)));
        // A bad CRC before any explicit flit: dropped without a Nak.
        let mut bad = peer_flit(FlitHeader { protocol_id: 0b10, seq: 1, ..FlitHeader::NOP });
        bad[100] ^= 1;
        assert_eq!(a.handle_flit(t, &bad), Received::Discarded(Discard::Invalid));
        assert_eq!(a.handle_flit(t, &bad[..10]), Received::Discarded(Discard::Length));
        assert_eq!(a.handle_flit(t, &peer_flit(FlitHeader::NOP)), Received::Discarded(Discard::Idle));
        // Flit 1 arrives: delivered; flit 3 next: a Nak for 2 (S = 1) is owed.
        let one = peer_flit(FlitHeader { protocol_id: 0b10, seq: 1, ..FlitHeader::NOP });
        assert!(matches!(a.handle_flit(t, &one), Received::Deliver { .. }));
        assert_eq!(a.handle_flit(t, &one), Received::Discarded(Discard::Duplicate));
        let three = peer_flit(FlitHeader { protocol_id: 0b10, seq: 3, ..FlitHeader::NOP });
        assert_eq!(a.handle_flit(t, &three), Received::Discarded(Discard::OutOfOrder));
        let mut out = [0u8; 256];
        let mut naks = 0;
        for _ in 0..6 {
            let s = a.poll_transmit(t, &mut out).unwrap();
            if s.command == ReplayCommand::Nak {
                assert_eq!(s.seq, 1);
                naks += 1;
            }
        }
        assert!(naks >= 3);
        // The replayed flit 2, explicit, clears the Nak.
        let two = peer_flit(FlitHeader { protocol_id: 0b10, seq: 2, ..FlitHeader::NOP });
        assert!(matches!(a.handle_flit(t, &two), Received::Deliver { seq, .. } if seq.value() == 2));
    }
}
