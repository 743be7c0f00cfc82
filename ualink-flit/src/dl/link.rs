//! The data link of one UALink port: link-level replay (UALink 1.0 §6.6) and the DL link states
//! (§6.7), over the flit packing of [`packing`](super::packing).
//!
//! [`DataLink`] is driven one flit time at a time: [`DataLink::transmit`] fills the next
//! 640-byte flit to send (every flit interval has one while the link is not down) and
//! [`DataLink::receive`] takes each flit that arrives. Time is the count of those calls: every
//! timer of §6.6 is in flit times. There is no clock and nothing else to poll.
//!
//! The flags and counters are the specification's, by name, with their widths and defaults
//! (§6.6.4, §6.6.5); the rules are §6.6.6 in order:
//!
//! * **Rx ingress** (§6.6.6.2): `Rx_replay_ignore_count` counts down on every flit; a CRC failure
//!   counts in `Rx_bad_crc_count` (7 makes `Rx_ambiguous`) and, during a replay, in
//!   `Rx_unexpected_count`.
//! * **Ack and Replay Request processing** (§6.6.6.3): the acceptance windows of
//!   [`seq`](super::seq); an accepted Ack releases TxReplay up to its number, an accepted Replay
//!   Request rewinds TxReplay to its `ackReqSeq` (it is not an Ack; during a replay it moves the
//!   replay there, forward or back) and opens the 12-flit ignore window.
//! * **Rx enqueuing** (§6.6.6.4, Figure 6-20): an expected flit (a NOP repeating
//!   `Rx_last_seq_calc`, a payload flit one after it) is taken. A command flit whose `flitSeqLo`
//!   is not trusted (`Rx_ambiguous` or `Rx_replay`) is dropped: during a replay it counts towards
//!   `Rx_replay_limit`, otherwise the receiver waits for an explicit flit and asks for nothing.
//!   Any other unexpected flit starts a replay (three Replay Requests), or during one counts
//!   towards `Rx_replay_limit`, which re-sends them.
//! * **Tx enqueue and source** (§6.6.6.5–6): new payload only when not replaying, TxReplay not
//!   full and at most 255 flits unacknowledged (§6.6.6.5 admits a flit while no more than 255 are
//!   held, so 256 in all; this stops at 255, one short and harmless); otherwise NOP flits.
//! * **Tx scheduling** (§6.6.6.7): first flit of a replay explicit, an explicit flit at least every
//!   7th flit, then Replay Requests (one per FEC codeword group), else an Ack of
//!   `Rx_last_seq_calc`.
//! * **Tx forward progress** (§6.6.6.8): `Tx_ack_counter` runs down while flits are unacknowledged;
//!   at 0 the link goes to DL Idle.
//!
//! TxReplay is [`linklayer::llr::ReplayBuffer`] over the 1..=511 space; an entry is a flit's
//! five segment-header bytes and 628 payload bytes ([`REPLAY_ENTRY_LEN`]), framed again with a
//! fresh flit header and CRC each time it is sent.
//!
//! Link states (§6.7.1): DL Fault (reset) → DL Idle when the RS reports no fault → DL NOP when a
//! higher layer enables the link → DL Up after 10 NOP flits sent and 2 consecutive flits received.
//! DL Up → DL Idle on 4 consecutive control (non-flit) codeword groups from the RS, on error
//! containment, or on ack time-out; any state → DL Fault on an RS fault.
//!
//! *Project-defined* where the text leaves a choice:
//!
//! * **FEC codeword groups.** One DL flit is one RS(544,514) codeword; a codeword group is
//!   [`DlConfig::interleave`] consecutive transmitted flits (4 for 802.3 4-way interleave, 2 or 1
//!   in the low-latency modes). A Replay Request is sent at most once per group.
//! * **A flit the PCS could not correct** never reaches the DL (§6.6.1), but it must still count
//!   as a bad CRC, or eight lost flits in a row could alias in the 3-bit `flitSeqLo`: report it
//!   with [`DataLink::receive_lost`]. Every flit time the RS delivers is one call of
//!   [`DataLink::receive`], [`DataLink::receive_lost`] or [`DataLink::receive_control`]; none may
//!   pass unseen. A few flits lost unseen are still caught by the next flit's `flitSeqLo` and
//!   replayed: six always, seven except across the wrap from 511 to 1 (the numbers skip 0, so
//!   `flitSeqLo` steps from 7 to 1 there). More, and the next command flit can read as the
//!   expected one: a later flit's TL flits are then delivered in place of the lost ones. Nothing
//!   in the flit can tell (§6.6.6.2 counts only the losses it is told of).
//! * **Dropped flits.** A command flit with `ackReqSeq` 0, an explicit flit with `flitSeqNo` 0,
//!   or a flit header with a reserved `op` passes CRC but is dropped whole (counted), as if not
//!   received. Reserved *bits* in the flit and segment headers are ignored (see
//!   [`header`](super::header)), counted in [`DlStats::reserved_ignored`].
//! * **Windows at their edge.** An Ack or Replay Request the §6.6.6.3 windows admit but naming a
//!   flit never sent (possible only near 256 ahead, with at most one flit in flight) is ignored
//!   as unexpected.
//! * **Replay Request copies** still pending when the expected flit arrives are cancelled: the
//!   gap they ask about is filled, and a stale copy would only cause a needless replay.
//! * **`Rx_unexpected_count` counts every flit time of a replay that delivers nothing.** The
//!   rules of §6.6.6.2 and §6.6.6.4 (and Figure 6-20) count a CRC failure and a command flit that
//!   cannot be numbered, and drop an explicit flit with an unexpected number without counting
//!   it; §6.6.4.5 describes the counter as counting "Flits with unexpected sequence number while
//!   the Rx is in the replay state". Here that explicit flit counts too, so the counter counts
//!   every flit time and `Rx_replay_limit` is the limit "in Flit times" §6.6.4.6 calls it.
//! * **A stale Replay Request.** A Replay Request copy already on the wire when the flit it asks
//!   for arrives (by the replay it started, or because it was never lost: a receiver that went
//!   ambiguous during bring-up asks for flit 1 before any was sent) can still be accepted,
//!   once the partner's ignore window has passed, and start a replay of flits the receiver
//!   already holds. Such a replay begins with an explicit flit, which the receiver refuses as
//!   unexpected; but if that flit is lost, its next flit is a command flit whose 3-bit
//!   `flitSeqLo` can alias as the expected one (one time in eight), and an old flit's payload
//!   would be delivered as new. The `ualink_link` fuzz target found this. So for
//!   `Rx_replay_limit` flit times after sending a Replay Request (at least the round trip, as
//!   §6.6.4.6 asks), a lost flit sets `Rx_ambiguous` at once rather than after seven: command
//!   flits are then dropped until an explicit flit shows where the stream is. It costs at most a
//!   replay, and only in that window.
//! * **`Rx_replay_limit` is a period.** When `Rx_unexpected_count` reaches the limit, the three
//!   Replay Requests are re-armed *and the count restarts from 0*, so they are re-sent once per
//!   `Rx_replay_limit` flit times while the replay does not arrive. Read literally, §6.6.6.4
//!   never clears the count, so every further unexpected flit would re-arm them: a Replay Request
//!   in every codeword group, each accepted by the transmitter once its 12-flit ignore window has
//!   passed, restarting the replay again and again. That is not only wasteful: a replay that
//!   starts after the receiver already has its first flit is a *spurious* replay, and if that
//!   replay's explicit first flit is lost, its next (command) flit is a duplicate whose 3-bit
//!   `flitSeqLo` can alias as the expected one (one chance in eight), delivering the wrong TL
//!   flit. The seeded link simulation found exactly this at a 5 % flit error rate. The same
//!   hazard exists, whatever the reading, when `Rx_replay_limit` is shorter than the time a
//!   replay takes to arrive; as §6.6.4.6 says, set it to at least twice the round trip.
//! * **`Tx_ack_counter`** is armed to `Tx_ack_time_out` when a flit enters an empty TxReplay and
//!   when an Ack releases flits (§6.6.6.8 rearms on the latter; its default of 0 would otherwise
//!   expire at once).
//! * **Entering DL NOP** resets every replay flag and counter to its default and empties TxReplay,
//!   the carried-over TL flit and the alt-sector queue, on both directions: the link partner
//!   starts afresh too. Flits in TxReplay are not delivered. The embedder takes the TL into Drop
//!   Mode when the link leaves DL Up ([`Packer::link_down`](crate::tl::Packer::link_down),
//!   [`Unpacker::link_down`](crate::tl::Unpacker::link_down)), which hands back what it held;
//!   on an accelerator the requests in flight end with a Completion Timeout at the UPLI
//!   Originator (§3.1.3, §3.1.4.3). Enable the link again only once the
//!   partner has left DL Up too and the channel has retrained (nothing sent before is still on
//!   the wire), then reset the [`MessageService`](super::service::MessageService).
//! * **"Two consecutive DL flits received"** means two flits in a row that pass CRC.
//! * **Error containment** ([`DataLink::contain`]): the next flit goes out as a NOP flit with its
//!   CRC inverted, then the link goes to DL Idle and sends nothing more. From DL NOP too, and so
//!   does an unpacking error below: Figure 6-23 gives DL NOP only the exits to DL Fault and DL
//!   Up, but a link that must not send payload any more cannot stay in either.
//! * **Channel 0** (§6.4.3.2) is offline after reset: until [`DataLink::set_tl_channel`] opens
//!   its gates (a [`MessageService`](super::service::MessageService) negotiates them), no TL
//!   flit is sent and any received is discarded. DL messages flow regardless.
//! * **A TL flit the unpacker cannot place** (a segment header against §6.3.4 in a flit that
//!   passed CRC) is error containment on the receive side (§6.7.4.2): nothing of the flit is
//!   delivered and the link goes to DL Idle.

use super::flit::{check_reserved, deframe, frame_bytes, invert_crc};
use super::header::{FlitHeader, SegmentHeader};
use super::layout::{FLIT_LEN, PAYLOAD_LEN};
use super::message::AltQueue;
use super::packing::{Delivered, FlitPacker, FlitUnpacker, TlSource};
use super::seq::{RESET_SEQ, ack_acceptable, command_seq, next, replay_acceptable};
use crate::Error;
use linklayer::llr::ReplayBuffer;
use linklayer::{Instant, NonZeroBits, Seq, ZeroOption};

/// The DL flit sequence space: 1..=511.
pub type DlSeqSpace = NonZeroBits<9>;
/// A DL flit sequence number.
pub type DlSeq = Seq<DlSeqSpace>;

/// Bytes of one TxReplay entry: five segment-header bytes, then the 628 payload bytes.
pub const REPLAY_ENTRY_LEN: usize = 5 + PAYLOAD_LEN;
/// `Rx_replay_ignore_count` after an accepted Replay Request (§6.6.6.3).
pub const REPLAY_IGNORE_FLITS: u8 = 12;
/// Replay Requests sent per replay (§6.6.1).
pub const REPLAY_REQUEST_COPIES: u8 = 3;
/// The `Tx_explicit_count` reload value (§6.6.5.6).
pub const EXPLICIT_EVERY: u8 = 7;
/// NOP flits sent in DL NOP before DL Up (§6.7.1.3).
pub const NOP_FLITS_TO_UP: u8 = 10;
/// Consecutive flits received in DL NOP before DL Up (§6.7.1.3).
pub const RX_FLITS_TO_UP: u8 = 2;
/// Consecutive control codeword groups that take DL Up to DL Idle (§6.7.1.4).
pub const CONTROL_TO_IDLE: u8 = 4;

/// Configuration (§6.6.4–6.6.5 defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DlConfig {
    /// `Rx_replay_limit`: unexpected flits during a replay before the Replay Requests are sent
    /// again (default 50, about twice the round trip in flits).
    pub rx_replay_limit: u8,
    /// `Tx_ack_time_out` in flit times (24 bits; default 40 000, 1 ms at 25 ns per flit).
    pub tx_ack_time_out: u32,
    /// Flits per FEC codeword group (project-defined; default 4, the 802.3 4-way interleave).
    pub interleave: u8,
}

impl DlConfig {
    /// The defaults (the same as [`Default`]).
    pub const DEFAULT: DlConfig = DlConfig { rx_replay_limit: 50, tx_ack_time_out: 40_000, interleave: 4 };
}

impl Default for DlConfig {
    fn default() -> Self {
        DlConfig::DEFAULT
    }
}

/// The DL link states (§6.7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LinkState {
    /// Reset state: the RS reports a local or remote fault. Link down.
    Fault,
    /// Sending Idle. Link down.
    Idle,
    /// Sending NOP flits only. Link down.
    Nop,
    /// Sending NOP and payload flits. Link up.
    Up,
}

/// What moves the link state ([`DataLink::transition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// The RS reports a fault.
    RsFault,
    /// The RS reports no fault.
    RsClear,
    /// The higher layer enables the link.
    Enable,
    /// Enough NOP flits sent and good flits received.
    Trained,
    /// The link goes down for this reason.
    Down(DownReason),
}

/// Why the link left DL Up (or DL NOP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DownReason {
    /// The RS reported a fault.
    Fault,
    /// Four consecutive control codeword groups: the partner went down.
    PartnerDown,
    /// `Tx_ack_counter` ran out.
    AckTimeout,
    /// Error containment on transmit ([`DataLink::contain`]).
    Contained,
    /// A received flit could not be unpacked (§6.7.4.2).
    Unpacking(Error),
}

/// What [`DataLink::transmit`] produced for this flit time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Transmitted {
    /// No flit: the RS sends Idle (the link is down).
    Idle,
    /// A flit was written.
    Flit {
        /// Its header.
        header: FlitHeader,
        /// A replay of a stored flit.
        replay: bool,
    },
}

/// What [`DataLink::receive`] did with a flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Received {
    /// Ignored: the link is down.
    LinkDown,
    /// The CRC failed; discarded.
    BadCrc,
    /// Passed CRC but dropped whole (malformed header, sequence number 0).
    Dropped,
    /// Not the expected flit; discarded (a replay is under way or requested).
    Unexpected,
    /// The expected NOP flit.
    Nop,
    /// The expected payload flit: its TL flits and alternative sectors are in the output.
    Payload,
    /// A payload flit that could not be unpacked: error containment, the link went down.
    Contained,
}

/// Counters (events, not state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DlStats {
    /// Flits sent.
    pub flits_sent: u64,
    /// Payload flits sent for the first time.
    pub payload_sent: u64,
    /// Payload flits sent again in replays.
    pub replayed: u64,
    /// NOP flits sent.
    pub nop_sent: u64,
    /// Replay Requests sent.
    pub replay_requests_sent: u64,
    /// Replay Requests received and accepted (replays started).
    pub replays: u64,
    /// Replay Requests received and ignored (ignore window, or outside the window).
    pub replay_requests_ignored: u64,
    /// Acks received and ignored (outside the window).
    pub acks_ignored: u64,
    /// Flits received with a bad CRC (or lost in the PCS).
    pub crc_errors: u64,
    /// Flits dropped whole after passing CRC.
    pub dropped: u64,
    /// Flits taken although a reserved header bit was set (ignored; for warnings).
    pub reserved_ignored: u64,
    /// Unexpected flits discarded.
    pub unexpected: u64,
    /// Payload flits received and unpacked.
    pub payload_received: u64,
    /// TL flits delivered.
    pub tl_delivered: u64,
    /// TL flits started in transmitted DL flits.
    pub tl_sent: u64,
    /// TL flits received while Channel 0's receive gate was closed, discarded.
    pub tl_discarded: u64,
}

impl DlStats {
    /// Nothing counted.
    pub const ZERO: DlStats = DlStats {
        flits_sent: 0,
        payload_sent: 0,
        replayed: 0,
        nop_sent: 0,
        replay_requests_sent: 0,
        replays: 0,
        replay_requests_ignored: 0,
        acks_ignored: 0,
        crc_errors: 0,
        dropped: 0,
        reserved_ignored: 0,
        unexpected: 0,
        payload_received: 0,
        tl_delivered: 0,
        tl_sent: 0,
        tl_discarded: 0,
    };
}

/// The §6.6.4–6.6.5 flags and counters, at their defaults. `Tx_last_seq` and `Tx_replay` are
/// read from TxReplay itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counters {
    rx_last_seq_calc: u16,
    rx_last_ack: u16,
    rx_bad_crc_count: u8,
    rx_unexpected_count: u8,
    rx_ambiguous: bool,
    rx_replay: bool,
    rx_replay_ignore_count: u8,
    tx_replay_req_seq_no: u16,
    tx_replay_req_count: u8,
    tx_first_replay: bool,
    tx_explicit_count: u8,
    tx_ack_counter: u32,
    /// Flit times left in which a Replay Request already sent may still start a replay at the
    /// partner (project-defined, see the module doc).
    rx_stale_request: u8,
    /// Flits sent since the reset (for codeword groups).
    tx_flits: u64,
    /// The codeword group of the last Replay Request sent.
    last_request_group: Option<u64>,
}

impl Counters {
    /// Every counter 0 and every flag clear (not the reset values: see [`Counters::RESET`]).
    const ZERO: Counters = Counters {
        rx_last_seq_calc: 0,
        rx_last_ack: 0,
        rx_bad_crc_count: 0,
        rx_unexpected_count: 0,
        rx_ambiguous: false,
        rx_replay: false,
        rx_replay_ignore_count: 0,
        tx_replay_req_seq_no: 0,
        tx_replay_req_count: 0,
        tx_first_replay: false,
        tx_explicit_count: 0,
        tx_ack_counter: 0,
        rx_stale_request: 0,
        tx_flits: 0,
        last_request_group: None,
    };

    /// The §6.6.4–6.6.5 defaults, as DL Idle → DL NOP sets them.
    const RESET: Counters = Counters {
        rx_last_seq_calc: RESET_SEQ,
        rx_last_ack: RESET_SEQ,
        tx_explicit_count: EXPLICIT_EVERY,
        ..Counters::ZERO
    };
}

/// One port's data link: replay, link states, packing. `B` is TxReplay's byte storage (at least
/// `N` × [`REPLAY_ENTRY_LEN`] bytes: [`DataLink::try_new`]), `N` its entry count, `A` the
/// alternative-sector queue in DL message words.
///
/// **Sizing.** TxReplay must hold every flit sent in one round trip (flit times from sending a
/// flit to receiving its acknowledgement, plus the partner's acknowledgement coalescing), or the
/// link stalls waiting for acknowledgements. At 25 ns per flit time (200GAUI-1), 64 entries cover
/// a 1.6 µs round trip. Size on a 64-bit host, storage inline:
///
/// | type | entries | bytes |
/// |---|---:|---:|
/// | [`DataLink32`] | 32 | 21 776 |
/// | [`DataLink64`] (the default `DataLink`) | 64 | 43 056 |
/// | [`DataLink128`] | 128 | 85 744 |
///
/// Storage may also live outside the link (`B` = `&mut [u8]`, `Vec<u8>`, …): 64 entries then
/// leave 2 560 B in the link itself.
///
/// **In place.** With storage inline, [`DataLink::EMPTY`] is all-zero bytes (a `static` holding
/// it lands in `.bss`: no flash, no start-up copy) and [`DataLink::init`] configures it where it
/// lies, where [`DataLink::new`] would build it on the stack first.
#[derive(Clone, Debug)]
pub struct DataLink<B = [u8; REPLAY_ENTRY_LEN * 64], const N: usize = 64, const A: usize = 8> {
    cfg: DlConfig,
    state: LinkState,
    down: ZeroOption<DownReason>,
    tx_replay_buf: ReplayBuffer<DlSeqSpace, B, N>,
    packer: FlitPacker,
    unpacker: FlitUnpacker,
    alt: AltQueue<A>,
    c: Counters,
    /// NOP flits sent since entering DL NOP (saturating).
    nop_sent_in_nop: u8,
    /// Flits received in a row that passed CRC (saturating).
    rx_in_a_row: u8,
    /// Control codeword groups received in a row (saturating).
    control_in_a_row: u8,
    contain: bool,
    /// Channel 0 (TL flits) transmit and receive gates (§6.4.3.2).
    tl_tx: bool,
    tl_rx: bool,
    stats: DlStats,
}

/// A data link with TxReplay for 32 flits inline (0.8 µs round trip at 25 ns per flit time).
pub type DataLink32 = DataLink<[u8; REPLAY_ENTRY_LEN * 32], 32, 8>;
/// A data link with TxReplay for 64 flits inline (1.6 µs round trip): the default `DataLink`.
pub type DataLink64 = DataLink<[u8; REPLAY_ENTRY_LEN * 64], 64, 8>;
/// A data link with TxReplay for 128 flits inline (3.2 µs round trip) and 40 queued DL message
/// words (room for UART bursts).
pub type DataLink128 = DataLink<[u8; REPLAY_ENTRY_LEN * 128], 128, 40>;

/// A [`TlSource`] behind Channel 0's transmit gate.
struct Gate<'a, T> {
    source: &'a mut T,
    open: bool,
}

impl<T: TlSource> TlSource for Gate<'_, T> {
    fn has_flit(&self) -> bool {
        self.open && self.source.has_flit()
    }

    fn next_flit(&mut self, out: &mut crate::tl::TlFlit) -> bool {
        self.open && self.source.next_flit(out)
    }
}

/// Why a data link sends no payload flit now: the first thing missing, in bring-up order
/// ([`DataLink::stall`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stall {
    /// TxReplay's storage cannot hold one entry ([`REPLAY_ENTRY_LEN`] bytes): no payload flit
    /// can ever be sent. Build it with [`DataLink::try_new`] to have this refused.
    NoReplayStorage,
    /// DL Fault: the RS reports a fault, or [`DataLink::rs_fault`]`(false)` was never called.
    Fault,
    /// DL Idle: waiting for the higher layer's [`DataLink::enable`].
    Idle,
    /// DL NOP: sending NOP flits until the partner's arrive (§6.7.1.3).
    Training,
    /// Channel 0's transmit gate is closed: [`DataLink::set_tl_channel`] was not called, or the
    /// message service has not negotiated the channel online yet.
    TlChannelClosed,
    /// TxReplay is replaying, or full of flits the partner has not acknowledged yet.
    Replay,
}

impl<const L: usize, const N: usize, const A: usize> DataLink<[u8; L], N, A> {
    /// A data link with its TxReplay storage inline, every byte zero: in DL Fault with a
    /// configuration of zeros until [`DataLink::init`] (see the type's doc, "In place").
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize, const A: usize> DataLink<B, N, A> {
    /// TxReplay bytes a data link of `N` entries needs: `N` × [`REPLAY_ENTRY_LEN`].
    pub const STORAGE_LEN: usize = N * REPLAY_ENTRY_LEN;

    /// A data link in DL Fault, with TxReplay in `storage`, refused with [`Error::TooSmall`] if
    /// `storage` is shorter than [`Self::STORAGE_LEN`] (`N` entries).
    pub fn try_new(cfg: DlConfig, storage: B) -> Result<Self, Error> {
        let link = Self::new(cfg, storage);
        link.check_storage()?;
        Ok(link)
    }

    /// [`Error::TooSmall`] if TxReplay's storage is shorter than [`Self::STORAGE_LEN`].
    pub fn check_storage(&self) -> Result<(), Error> {
        let got = self.tx_replay_buf.capacity_bytes();
        if got < Self::STORAGE_LEN {
            return Err(Error::TooSmall { what: "TxReplay storage", need: Self::STORAGE_LEN, got });
        }
        Ok(())
    }

    /// A data link in DL Fault, with TxReplay in `storage`. Any storage is taken: shorter than
    /// [`Self::STORAGE_LEN`] holds fewer than `N` flits, and shorter than [`REPLAY_ENTRY_LEN`]
    /// none, so the link never sends payload ([`Stall::NoReplayStorage`]); [`Self::try_new`]
    /// refuses such storage instead.
    pub fn new(cfg: DlConfig, storage: B) -> Self {
        let mut link = Self::unconfigured(storage);
        link.init(cfg);
        link
    }

    /// A data link in DL Fault with every field zero (a configuration of zeros) but `storage`.
    pub(crate) const fn unconfigured(storage: B) -> Self {
        DataLink {
            cfg: DlConfig { rx_replay_limit: 0, tx_ack_time_out: 0, interleave: 0 },
            state: LinkState::Fault,
            down: ZeroOption::NONE,
            tx_replay_buf: ReplayBuffer::new(storage, DlSeq::FIRST),
            packer: FlitPacker::new(),
            unpacker: FlitUnpacker::new(),
            alt: AltQueue::new(),
            c: Counters::ZERO,
            nop_sent_in_nop: 0,
            rx_in_a_row: 0,
            control_in_a_row: 0,
            contain: false,
            tl_tx: false,
            tl_rx: false,
            stats: DlStats::ZERO,
        }
    }

    /// Makes this link what [`Self::new`]`(cfg, storage)` returns with its own storage, in place
    /// (without a second link on the stack): DL Fault, TxReplay empty, counters at zero. What
    /// the storage holds is not touched.
    pub fn init(&mut self, cfg: DlConfig) {
        self.cfg =
            DlConfig { interleave: cfg.interleave.max(1), tx_ack_time_out: cfg.tx_ack_time_out & 0xFF_FFFF, ..cfg };
        self.state = LinkState::Fault;
        self.down.clear();
        self.start_afresh();
        self.tl_tx = false;
        self.tl_rx = false;
        self.stats = DlStats::ZERO;
    }

    /// Sets Channel 0's gates (§6.4.3.2): with `tx` closed no new TL flit is packed (one already
    /// begun is finished), with `rx` closed received TL flits are discarded (counted in
    /// [`DlStats::tl_discarded`]). Both start closed: every channel is offline after reset. A
    /// [`MessageService`](super::service::MessageService) negotiates them
    /// ([`tl_gates`](super::service::MessageService::tl_gates)); a port whose partner is known to
    /// have Channel 0 online may open both.
    pub fn set_tl_channel(&mut self, tx: bool, rx: bool) {
        self.tl_tx = tx;
        self.tl_rx = rx;
    }

    /// Channel 0's gates, `(transmit, receive)`.
    pub fn tl_channel(&self) -> (bool, bool) {
        (self.tl_tx, self.tl_rx)
    }

    /// The link state.
    pub fn state(&self) -> LinkState {
        self.state
    }

    /// Why the link last went down from DL NOP or DL Up, if it did.
    pub fn down_reason(&self) -> Option<DownReason> {
        self.down.into_option()
    }

    /// The counters.
    pub fn stats(&self) -> &DlStats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &DlConfig {
        &self.cfg
    }

    /// The alternative-sector queue: DL messages to send.
    pub fn messages(&mut self) -> &mut AltQueue<A> {
        &mut self.alt
    }

    /// `Tx_last_seq`: the number of the newest flit added to TxReplay.
    pub fn tx_last_seq(&self) -> u16 {
        self.tx_replay_buf.next_seq().prev().value() as u16
    }

    /// `Rx_last_seq_calc`: the number of the newest flit taken in sequence.
    pub fn rx_last_seq(&self) -> u16 {
        self.c.rx_last_seq_calc
    }

    /// `Rx_last_ack`: the newest Ack accepted.
    pub fn rx_last_ack(&self) -> u16 {
        self.c.rx_last_ack
    }

    /// Whether the receiver is in a replay (`Rx_replay`).
    pub fn rx_replay(&self) -> bool {
        self.c.rx_replay
    }

    /// Whether flitSeqLo is not trusted (`Rx_ambiguous`).
    pub fn rx_ambiguous(&self) -> bool {
        self.c.rx_ambiguous
    }

    /// Flits in TxReplay (sent, not acknowledged).
    pub fn unacknowledged(&self) -> usize {
        self.tx_replay_buf.len()
    }

    /// Whether the transmitter is replaying (`Tx_replay`).
    pub fn tx_replay(&self) -> bool {
        self.tx_replay_buf.is_replaying()
    }

    /// Whether a new payload flit would be accepted now (§6.6.6.5); when not, the TL is held off.
    pub fn can_accept(&self) -> bool {
        self.state == LinkState::Up
            && !self.tx_replay()
            && self.tx_replay_buf.len() < ReplayBuffer::<DlSeqSpace, B, N>::MAX_FRAMES
            && self.tx_replay_buf.capacity_bytes() - self.tx_replay_buf.bytes() >= REPLAY_ENTRY_LEN
    }

    /// Why no new payload flit goes out now, or `None` when one would ([`Self::can_accept`] and
    /// Channel 0 open). Bring-up that does nothing says why here: storage, the RS fault, the
    /// missing [`Self::enable`], the partner not yet seen, the closed channel, or replay.
    pub fn stall(&self) -> Option<Stall> {
        if self.tx_replay_buf.capacity_bytes() < REPLAY_ENTRY_LEN {
            return Some(Stall::NoReplayStorage);
        }
        match self.state {
            LinkState::Fault => Some(Stall::Fault),
            LinkState::Idle => Some(Stall::Idle),
            LinkState::Nop => Some(Stall::Training),
            LinkState::Up if !self.tl_tx => Some(Stall::TlChannelClosed),
            LinkState::Up if !self.can_accept() => Some(Stall::Replay),
            LinkState::Up => None,
        }
    }

    /// Whether a TL flit is partly sent, its rest waiting for the next DL flit.
    pub fn has_carry(&self) -> bool {
        self.packer.has_carry()
    }

    /// The RS's fault indication (§6.7.1.1): a fault takes any state to DL Fault; no fault takes
    /// DL Fault to DL Idle.
    pub fn rs_fault(&mut self, fault: bool) {
        self.transition(if fault { Cause::RsFault } else { Cause::RsClear });
    }

    /// A higher layer enables the link (§6.7.1.2): DL Idle → DL NOP, with every replay flag and
    /// counter at its default, TxReplay empty and nothing carried over. Refused in any other
    /// state. Returns how many unacknowledged flits were discarded.
    pub fn enable(&mut self) -> Result<usize, Error> {
        if !self.transition(Cause::Enable) {
            return Err(Error::State { needs: "DL Idle" });
        }
        let dropped = self.tx_replay_buf.len();
        self.start_afresh();
        Ok(dropped)
    }

    /// TxReplay empty from the first sequence number, nothing carried over, every replay flag
    /// and counter at its default (what enabling the link and `init` share).
    fn start_afresh(&mut self) {
        self.tx_replay_buf.reset_to(DlSeq::FIRST);
        self.packer = FlitPacker::new();
        self.unpacker = FlitUnpacker::new();
        // Words queued before the link went down may be the rest of a UART stream whose start was
        // lost with TxReplay; the partner's message service starts afresh too.
        self.alt.clear();
        self.c = Counters::RESET;
        self.nop_sent_in_nop = 0;
        self.rx_in_a_row = 0;
        self.control_in_a_row = 0;
        self.contain = false;
    }

    /// Error containment (§6.7.4.2, egress): the next flit goes out with its CRC inverted, then
    /// the link goes to DL Idle.
    pub fn contain(&mut self) {
        if matches!(self.state, LinkState::Nop | LinkState::Up) {
            self.contain = true;
        }
    }

    /// The RS received a control codeword group (Idle or a fault sequence) instead of a flit.
    /// Four in a row take DL Up to DL Idle (§6.7.1.4).
    pub fn receive_control(&mut self) {
        self.rx_in_a_row = 0;
        self.control_in_a_row = self.control_in_a_row.saturating_add(1);
        if self.state == LinkState::Up && self.control_in_a_row >= CONTROL_TO_IDLE {
            self.go_down(DownReason::PartnerDown);
        }
    }

    /// Leaves DL NOP or DL Up for DL Idle, remembering why.
    fn go_down(&mut self, why: DownReason) {
        self.transition(Cause::Down(why));
    }

    /// The DL link states of Figure 6-23 (§6.7.1), every transition in one place: moves to the
    /// state `cause` leads to from the present one and returns `true`, or changes nothing and
    /// returns `false` where the figure has no such transition. One edge is not in the figure:
    /// DL NOP → DL Idle on containment or an unpacking error (*project-defined*, module doc).
    /// Leaving DL NOP or DL Up records why ([`Self::down_reason`]).
    fn transition(&mut self, cause: Cause) -> bool {
        use LinkState::{Fault, Idle, Nop, Up};
        let (next, why) = match (self.state, cause) {
            // §6.7.1.1: an RS fault takes any state to DL Fault; its end takes DL Fault to Idle.
            (Nop | Up, Cause::RsFault) => (Fault, Some(DownReason::Fault)),
            (Fault | Idle, Cause::RsFault) => (Fault, None),
            (Fault, Cause::RsClear) => (Idle, None),
            // §6.7.1.2: the higher layer enables the link.
            (Idle, Cause::Enable) => (Nop, None),
            // §6.7.1.3: 10 NOP flits sent and 2 good flits in a row received.
            (Nop, Cause::Trained) => (Up, None),
            // §6.7.1.4, §6.6.6.8, §6.7.4: the partner went down, an Ack time-out, containment;
            // from DL NOP too (containment, an unpacking error: project-defined, module doc).
            (Nop | Up, Cause::Down(why)) => (Idle, Some(why)),
            (Fault | Nop | Up, Cause::Enable)
            | (Idle | Nop | Up, Cause::RsClear)
            | (Fault | Idle | Up, Cause::Trained)
            | (Fault | Idle, Cause::Down(_)) => return false,
        };
        if why.is_some() {
            self.down = why.into();
        }
        self.state = next;
        true
    }

    /// Fills the flit for this flit time (§6.6.6.6–6.6.6.8), taking TL flits from `tl` when a
    /// new payload flit is due. Returns [`Transmitted::Idle`], with `out` untouched, while the
    /// link is down.
    pub fn transmit(&mut self, tl: &mut impl TlSource, out: &mut [u8; FLIT_LEN]) -> Transmitted {
        if !matches!(self.state, LinkState::Nop | LinkState::Up) {
            return Transmitted::Idle;
        }
        // Tx forward progress (§6.6.6.8), only in DL Up (§6.7.1.3: no Acks expected in DL NOP).
        if self.state == LinkState::Up && !self.tx_replay_buf.is_empty() {
            self.c.tx_ack_counter = self.c.tx_ack_counter.saturating_sub(1);
            if self.c.tx_ack_counter == 0 {
                self.go_down(DownReason::AckTimeout);
                return Transmitted::Idle;
            }
        }
        if self.contain {
            let header = FlitHeader::Nop { seq: self.tx_last_seq() };
            let _ = frame_bytes(&header, &[0; 5], &[0; PAYLOAD_LEN], out);
            invert_crc(out);
            self.contain = false;
            self.stats.flits_sent += 1;
            self.go_down(DownReason::Contained);
            return Transmitted::Flit { header, replay: false };
        }
        // Tx source (§6.6.6.6): a replay flit, a new payload flit, or a NOP flit.
        let mut new_payload = false;
        let tl = &mut Gate { source: tl, open: self.tl_tx };
        if self.can_accept() && self.packer.has_payload(tl, &self.alt) {
            let was_empty = self.tx_replay_buf.is_empty();
            let (packer, alt, stats) = (&mut self.packer, &mut self.alt, &mut self.stats);
            let now = Instant::from_nanos(self.c.tx_flits);
            let pushed = self.tx_replay_buf.push_with(now, REPLAY_ENTRY_LEN, |_, entry| {
                let (sh_bytes, payload) = entry.split_at_mut(5);
                if let Ok(payload) = <&mut [u8; PAYLOAD_LEN]>::try_from(payload) {
                    let mut sh = [SegmentHeader::default(); 5];
                    let packed = packer.pack(tl, alt, &mut sh, payload);
                    stats.tl_sent += u64::from(packed.started);
                    for (b, h) in sh_bytes.iter_mut().zip(sh) {
                        *b = h.to_byte();
                    }
                }
            });
            if pushed.is_ok() {
                new_payload = true;
                if was_empty {
                    self.c.tx_ack_counter = self.cfg.tx_ack_time_out;
                }
            }
        }
        let tx_last_seq = self.tx_last_seq();
        let replaying = self.tx_replay();
        let polled = if new_payload || replaying { self.tx_replay_buf.poll_next() } else { None };
        let stored = polled.and_then(|o| {
            let (sh, payload) = o.frame.split_at_checked(5)?;
            Some((
                o.seq.value() as u16,
                o.replay,
                <&[u8; 5]>::try_from(sh).ok()?,
                <&[u8; PAYLOAD_LEN]>::try_from(payload).ok()?,
            ))
        });
        let (header, replay) = match stored {
            Some((seq, replay, sh, payload)) => {
                let header = schedule(&mut self.c, &self.cfg, &mut self.stats, seq, true, replay);
                let _ = frame_bytes(&header, sh, payload, out);
                (header, replay)
            }
            None => {
                let header = schedule(&mut self.c, &self.cfg, &mut self.stats, tx_last_seq, false, false);
                let _ = frame_bytes(&header, &[0; 5], &[0; PAYLOAD_LEN], out);
                (header, false)
            }
        };
        self.c.tx_flits += 1;
        self.stats.flits_sent += 1;
        match (header.has_payload(), replay) {
            (false, _) => {
                self.stats.nop_sent += 1;
                if self.state == LinkState::Nop {
                    self.nop_sent_in_nop = self.nop_sent_in_nop.saturating_add(1);
                    self.maybe_up();
                }
            }
            (true, false) => self.stats.payload_sent += 1,
            (true, true) => self.stats.replayed += 1,
        }
        Transmitted::Flit { header, replay }
    }

    /// DL NOP → DL Up once 10 NOP flits have gone out and 2 flits in a row have come in.
    fn maybe_up(&mut self) {
        if self.nop_sent_in_nop >= NOP_FLITS_TO_UP && self.rx_in_a_row >= RX_FLITS_TO_UP {
            self.transition(Cause::Trained);
        }
    }

    /// Rx ingress for a flit that failed CRC, or that the PCS could not correct (§6.6.6.2).
    pub fn receive_lost(&mut self) -> Received {
        if !matches!(self.state, LinkState::Nop | LinkState::Up) {
            return Received::LinkDown;
        }
        self.control_in_a_row = 0;
        self.rx_in_a_row = 0;
        let c = &mut self.c;
        c.rx_replay_ignore_count = c.rx_replay_ignore_count.saturating_sub(1);
        c.rx_stale_request = c.rx_stale_request.saturating_sub(1);
        c.rx_bad_crc_count = (c.rx_bad_crc_count + 1).min(7);
        // Seven losses in a row could hide eight sequence numbers from flitSeqLo (§6.6.6.2); one
        // loss could hide the start of a replay a stale Replay Request began (module doc).
        if c.rx_bad_crc_count >= 7 || c.rx_stale_request > 0 {
            c.rx_ambiguous = true;
        }
        if c.rx_replay {
            c.rx_unexpected_count = c.rx_unexpected_count.saturating_add(1);
        }
        self.stats.crc_errors += 1;
        Received::BadCrc
    }

    /// Receives one flit (§6.6.6.2–6.6.6.4): checks its CRC, takes its Ack or Replay Request,
    /// and, if it is the expected payload flit, unpacks it into `out` (cleared first).
    pub fn receive(&mut self, flit: &[u8; FLIT_LEN], out: &mut Delivered) -> Received {
        out.flits.clear();
        out.alt.clear();
        if !matches!(self.state, LinkState::Nop | LinkState::Up) {
            return Received::LinkDown;
        }
        let mut payload = [0u8; PAYLOAD_LEN];
        let (header, segments) = match deframe(flit, &mut payload) {
            Ok(x) => x,
            Err(Error::Crc { .. }) => return self.receive_lost(),
            Err(_) => {
                // Passed CRC, a reserved op: dropped whole.
                self.good_flit();
                self.stats.dropped += 1;
                return Received::Dropped;
            }
        };
        self.good_flit();
        if check_reserved(flit).is_err() {
            self.stats.reserved_ignored += 1;
        }
        // Sequence number 0 in either header form: dropped whole (§6.6.6.3, §6.6.6.4).
        let explicit_seq = match header {
            FlitHeader::Nop { seq } | FlitHeader::Original { seq } | FlitHeader::Replay { seq } => Some(seq),
            FlitHeader::Ack { ack_seq: 0, .. } | FlitHeader::ReplayRequest { from_seq: 0, .. } => {
                self.stats.dropped += 1;
                return Received::Dropped;
            }
            FlitHeader::Ack { .. } | FlitHeader::ReplayRequest { .. } => None,
        };
        if explicit_seq == Some(0) {
            self.stats.dropped += 1;
            return Received::Dropped;
        }
        self.ack_and_replay_request(&header);
        self.enqueue(&header, explicit_seq, &segments, &payload, out)
    }

    /// Ingress bookkeeping common to every flit that passed CRC.
    fn good_flit(&mut self) {
        self.c.rx_replay_ignore_count = self.c.rx_replay_ignore_count.saturating_sub(1);
        self.c.rx_stale_request = self.c.rx_stale_request.saturating_sub(1);
        self.control_in_a_row = 0;
        self.rx_in_a_row = self.rx_in_a_row.saturating_add(1);
        self.maybe_up();
    }

    /// Rx Ack and Replay Request processing (§6.6.6.3).
    fn ack_and_replay_request(&mut self, header: &FlitHeader) {
        let tx_last_seq = self.tx_last_seq();
        match *header {
            FlitHeader::ReplayRequest { from_seq, .. } => {
                if self.c.rx_replay_ignore_count != 0 {
                    self.stats.replay_requests_ignored += 1;
                    return;
                }
                let sent = self.tx_replay_buf.in_flight() as u64;
                let target =
                    DlSeq::new(u32::from(from_seq)).filter(|s| self.tx_replay_buf.base().distance_to(*s) < sent);
                let accepted = replay_acceptable(from_seq, self.c.rx_last_ack, tx_last_seq, 0)
                    && target.is_some_and(|s| self.tx_replay_buf.rewind(s).is_ok());
                if accepted {
                    self.c.tx_first_replay = true;
                    self.c.rx_replay_ignore_count = REPLAY_IGNORE_FLITS;
                    self.stats.replays += 1;
                } else {
                    self.stats.replay_requests_ignored += 1;
                }
            }
            FlitHeader::Ack { ack_seq, .. } => {
                let released = if ack_acceptable(ack_seq, self.c.rx_last_ack, tx_last_seq) {
                    DlSeq::new(u32::from(ack_seq)).and_then(|s| self.tx_replay_buf.ack(s).ok())
                } else {
                    None
                };
                match released {
                    Some(n) => {
                        self.c.rx_last_ack = ack_seq;
                        if n > 0 {
                            self.c.tx_ack_counter = self.cfg.tx_ack_time_out;
                        }
                    }
                    None => self.stats.acks_ignored += 1,
                }
            }
            _ => {}
        }
    }

    /// Rx enqueuing (§6.6.6.4, Figure 6-20).
    fn enqueue(
        &mut self,
        header: &FlitHeader,
        explicit_seq: Option<u16>,
        segments: &[SegmentHeader; 5],
        payload: &[u8; PAYLOAD_LEN],
        out: &mut Delivered,
    ) -> Received {
        let c = &mut self.c;
        let has_payload = header.has_payload();
        let calc = match (explicit_seq, *header) {
            (Some(seq), _) => Some(seq),
            (None, FlitHeader::Ack { seq_lo, .. } | FlitHeader::ReplayRequest { seq_lo, .. })
                if !c.rx_ambiguous && !c.rx_replay =>
            {
                Some(command_seq(seq_lo, c.rx_last_seq_calc, has_payload))
            }
            _ => None,
        };
        let Some(calc) = calc else {
            // A command flit whose flitSeqLo cannot be trusted: dropped. In a replay it counts
            // towards Rx_replay_limit; otherwise (Rx_ambiguous alone) the receiver waits for an
            // explicit flit and asks for nothing (Figure 6-20).
            if c.rx_replay {
                self.count_unexpected();
            }
            self.stats.unexpected += 1;
            return Received::Unexpected;
        };
        let expected = if has_payload { calc == next(c.rx_last_seq_calc) } else { calc == c.rx_last_seq_calc };
        if !expected {
            if c.rx_replay {
                self.count_unexpected();
            } else {
                c.tx_replay_req_count = REPLAY_REQUEST_COPIES;
                c.rx_replay = true;
                c.rx_unexpected_count = 0;
            }
            self.stats.unexpected += 1;
            return Received::Unexpected;
        }
        let seq = calc;
        c.rx_unexpected_count = 0;
        c.rx_last_seq_calc = seq;
        c.rx_replay = false;
        c.rx_ambiguous = false;
        c.rx_bad_crc_count = 0;
        c.tx_replay_req_count = 0;
        if !has_payload {
            return Received::Nop;
        }
        self.stats.payload_received += 1;
        match self.unpacker.unpack(segments, payload, out) {
            Ok(()) => {
                if self.tl_rx {
                    self.stats.tl_delivered += out.flits.len() as u64;
                } else {
                    self.stats.tl_discarded += out.flits.len() as u64;
                    out.flits.clear();
                }
                Received::Payload
            }
            Err(e) => {
                self.go_down(DownReason::Unpacking(e));
                Received::Contained
            }
        }
    }

    /// An unexpected flit during a replay (§6.6.6.4): counts towards `Rx_replay_limit`, where
    /// the Replay Requests go out again and the count starts over (module doc).
    fn count_unexpected(&mut self) {
        let c = &mut self.c;
        c.rx_unexpected_count = c.rx_unexpected_count.saturating_add(1);
        if c.rx_unexpected_count >= self.cfg.rx_replay_limit {
            c.tx_replay_req_count = REPLAY_REQUEST_COPIES;
            c.rx_bad_crc_count = 0;
            c.rx_unexpected_count = 0;
        }
    }
}

/// Tx scheduling (§6.6.6.7): the header of the flit being sent, `seq` being its number (a NOP
/// flit's is `Tx_last_seq`).
fn schedule(
    c: &mut Counters,
    cfg: &DlConfig,
    stats: &mut DlStats,
    seq: u16,
    payload: bool,
    replay: bool,
) -> FlitHeader {
    c.tx_explicit_count = c.tx_explicit_count.saturating_sub(1);
    let seq_lo = (seq & 7) as u8;
    // At least 1 (`new` clamps it); `max` keeps the division total where the compiler cannot see it.
    let group = c.tx_flits / u64::from(cfg.interleave.max(1));
    if c.tx_first_replay && replay {
        c.tx_first_replay = false;
        c.tx_explicit_count = EXPLICIT_EVERY;
        FlitHeader::Replay { seq }
    } else if c.tx_explicit_count == 0 {
        c.tx_explicit_count = EXPLICIT_EVERY;
        match (payload, replay) {
            (false, _) => FlitHeader::Nop { seq },
            (true, false) => FlitHeader::Original { seq },
            (true, true) => FlitHeader::Replay { seq },
        }
    } else if c.tx_replay_req_count > 0 && c.last_request_group != Some(group) {
        if c.tx_replay_req_count == REPLAY_REQUEST_COPIES {
            c.tx_replay_req_seq_no = next(c.rx_last_seq_calc);
        }
        c.tx_replay_req_count -= 1;
        c.last_request_group = Some(group);
        c.rx_stale_request = cfg.rx_replay_limit;
        stats.replay_requests_sent += 1;
        FlitHeader::ReplayRequest { payload, from_seq: c.tx_replay_req_seq_no, seq_lo }
    } else {
        FlitHeader::Ack { payload, ack_seq: c.rx_last_seq_calc, seq_lo }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tl::TlFlit;
    use crate::tl::flit::TL_FLIT_LEN;
    use heapless::Deque;
    use std::collections::VecDeque;
    use std::vec::Vec;

    type Port = DataLink<[u8; REPLAY_ENTRY_LEN * 64], 64, 8>;

    fn port(cfg: DlConfig) -> Port {
        let mut p = Port::new(cfg, [0; REPLAY_ENTRY_LEN * 64]);
        p.rs_fault(false);
        p.enable().unwrap();
        // These tests are about replay: Channel 0 is online from the start.
        p.set_tl_channel(true, true);
        p
    }

    fn flit(n: u32) -> TlFlit {
        let mut b = [0u8; TL_FLIT_LEN];
        b[..4].copy_from_slice(&n.to_le_bytes());
        b[4] = 0xA5;
        TlFlit::from_bytes(&b, n % 3 == 0, n % 5 == 0)
    }

    /// Two ports over a wire `delay` flit times long each way; `corrupt(dir, tick, header)`
    /// says whether to flip a bit of the flit sent that tick.
    struct Pair {
        ports: [Port; 2],
        wire: [VecDeque<Option<[u8; FLIT_LEN]>>; 2],
        src: [Deque<TlFlit, 32>; 2],
        next: [u32; 2],
        to_send: [u32; 2],
        got: [Vec<TlFlit>; 2],
        headers: [Vec<FlitHeader>; 2],
        /// Flits corrupted on the wire in each direction: their header and whether it was a replay.
        corrupted: [Vec<(FlitHeader, bool)>; 2],
        /// Ports whose flits go out with every reserved header bit set (and a CRC covering them).
        reserved_bits: [bool; 2],
        received: [Vec<Received>; 2],
        /// Flits that vanish unseen on their way to a port (`(port, tick)` of arrival): neither
        /// received nor reported lost.
        vanish: Vec<(usize, u64)>,
        /// Ports that receive every flit twice (the copy takes a flit time of the receiver's
        /// own: its per-flit counters tick twice).
        twice: [bool; 2],
        tick: u64,
    }

    impl Pair {
        fn new(cfg: DlConfig, delay: usize, to_send: [u32; 2]) -> Pair {
            Pair {
                ports: [port(cfg), port(cfg)],
                wire: [(0..delay).map(|_| None).collect(), (0..delay).map(|_| None).collect()],
                src: [Deque::new(), Deque::new()],
                next: [0; 2],
                to_send,
                got: [Vec::new(), Vec::new()],
                headers: [Vec::new(), Vec::new()],
                corrupted: [Vec::new(), Vec::new()],
                reserved_bits: [false; 2],
                received: [Vec::new(), Vec::new()],
                vanish: Vec::new(),
                twice: [false; 2],
                tick: 0,
            }
        }

        fn step(&mut self, corrupt: &mut impl FnMut(usize, u64, &FlitHeader) -> bool) {
            for d in 0..2 {
                while self.next[d] < self.to_send[d] && self.src[d].push_back(flit(self.next[d])).is_ok() {
                    self.next[d] += 1;
                }
                let mut out = [0u8; FLIT_LEN];
                let t = self.ports[d].transmit(&mut self.src[d], &mut out);
                let sent = match t {
                    Transmitted::Flit { header, replay } => {
                        self.headers[d].push(header);
                        if self.reserved_bits[d] {
                            set_reserved_bits(&mut out);
                        }
                        if corrupt(d, self.tick, &header) {
                            out[100] ^= 0x10;
                            self.corrupted[d].push((header, replay));
                        }
                        Some(out)
                    }
                    Transmitted::Idle => None,
                };
                self.wire[d].push_back(sent);
            }
            for d in 0..2 {
                let arriving = self.wire[1 - d].pop_front().flatten();
                if self.vanish.contains(&(d, self.tick)) {
                    continue;
                }
                let mut out = Delivered::default();
                let Some(f) = arriving else {
                    self.ports[d].receive_control();
                    continue;
                };
                for _ in 0..if self.twice[d] { 2 } else { 1 } {
                    let r = self.ports[d].receive(&f, &mut out);
                    self.received[d].push(r);
                    self.got[d].extend(out.flits.iter().copied());
                }
            }
            self.tick += 1;
        }

        fn run(&mut self, ticks: u64, corrupt: &mut impl FnMut(usize, u64, &FlitHeader) -> bool) {
            for _ in 0..ticks {
                self.step(corrupt);
            }
        }

        /// What the damage the test did guarantees, whatever the seed: every corrupted flit is
        /// counted as a CRC error by its receiver, and a first transmission of a payload flit that
        /// was corrupted can only have reached the receiver (as [`Self::check_delivered`] shows it
        /// did) through a replay its sender started. A corrupted NOP flit, or a replayed copy of a
        /// flit already delivered, owes nothing (§6.6.6.4 asks for a replay only on an unexpected
        /// flit).
        fn check_replays_owed(&self) {
            for d in 0..2 {
                let (tx, rx) = (&self.ports[d], &self.ports[1 - d]);
                assert_eq!(rx.stats().crc_errors, self.corrupted[d].len() as u64, "port {d} -> {}", 1 - d);
                let originals = self.corrupted[d].iter().filter(|(h, replay)| h.has_payload() && !replay).count();
                if originals > 0 {
                    assert!(tx.stats().replays > 0, "port {d}: {originals} payload flits lost, no replay");
                }
            }
        }

        fn check_delivered(&self) {
            for d in 0..2 {
                let want: Vec<TlFlit> = (0..self.to_send[1 - d]).map(flit).collect();
                assert_eq!(self.got[d].len(), want.len(), "port {d}");
                assert!(self.got[d] == want, "port {d}: delivered in order, exactly once");
            }
        }
    }

    fn clean(_: usize, _: u64, _: &FlitHeader) -> bool {
        false
    }

    /// Sets every reserved bit of a framed flit's headers (flit header bits 7..0, and 19..17 in
    /// an explicit header; segment header bit 1 and the Message bits of absent TL flits), then
    /// makes its CRC good again.
    fn set_reserved_bits(f: &mut [u8; FLIT_LEN]) {
        use crate::dl::layout::{CRC_AT, FLIT_HEADER_AT, SEGMENT_HEADER_AT};
        f[FLIT_HEADER_AT] = 0xFF;
        if f[FLIT_HEADER_AT + 2] >> 5 <= 0b001 {
            f[FLIT_HEADER_AT + 2] |= 0b1110;
        }
        for at in SEGMENT_HEADER_AT {
            let b = f[at] | 0b10;
            let absent0 = if b & 0b1_0000 == 0 { 0b1100 } else { 0 };
            let absent1 = if b & 0b1000_0000 == 0 { 0b110_0000 } else { 0 };
            f[at] = b | absent0 | absent1;
        }
        let c = crate::dl::crc::flit_crc(f);
        f[CRC_AT..].copy_from_slice(&c);
    }

    /// A partner that sets every reserved header bit is understood as if it sent zeros,
    /// first sends and replays alike, and the link stays up.
    #[test]
    fn a_partner_setting_reserved_header_bits_is_understood() {
        let mut pair = Pair::new(DlConfig::default(), 3, [400, 300]);
        pair.reserved_bits = [true, false];
        // One first transmission of a payload flit lost: the replay carries the bits too.
        let mut hit = false;
        let mut once = |d: usize, _: u64, h: &FlitHeader| {
            let lose = d == 0 && !hit && h.has_payload() && pair_seq_is(h, 6);
            hit |= lose;
            lose
        };
        pair.run(300, &mut once);
        pair.check_delivered();
        assert!(pair.ports[0].stats().replays > 0);
        let rx = pair.ports[1].stats();
        assert_eq!(rx.dropped, 0);
        // Every flit that arrived (all but the 3 still on the wire) and passed CRC had them.
        assert_eq!(rx.reserved_ignored, pair.headers[0].len() as u64 - 3 - rx.crc_errors);
        for p in &pair.ports {
            assert_eq!(p.state(), LinkState::Up);
        }
    }

    /// Whether a payload flit's header names sequence number `seq` (fully or by flitSeqLo).
    fn pair_seq_is(h: &FlitHeader, seq: u16) -> bool {
        match *h {
            FlitHeader::Original { seq: s } | FlitHeader::Replay { seq: s } => s == seq,
            FlitHeader::Ack { seq_lo, .. } | FlitHeader::ReplayRequest { seq_lo, .. } => u16::from(seq_lo) == seq & 7,
            FlitHeader::Nop { .. } => false,
        }
    }

    #[test]
    fn a_stalled_bring_up_says_what_is_missing() {
        assert_eq!(
            DataLink::<[u8; 100], 2, 8>::try_new(DlConfig::default(), [0; 100]).err(),
            Some(Error::TooSmall { what: "TxReplay storage", need: 2 * REPLAY_ENTRY_LEN, got: 100 })
        );
        let mut small = DataLink::<[u8; 100], 2, 8>::new(DlConfig::default(), [0; 100]);
        small.rs_fault(false);
        assert_eq!(small.stall(), Some(Stall::NoReplayStorage));
        let mut p = Port::try_new(DlConfig::default(), [0; REPLAY_ENTRY_LEN * 64]).unwrap();
        assert_eq!(p.stall(), Some(Stall::Fault));
        p.rs_fault(false);
        assert_eq!(p.stall(), Some(Stall::Idle));
        assert_eq!(p.enable(), Ok(0));
        assert_eq!(p.enable(), Err(Error::State { needs: "DL Idle" }));
        assert_eq!(p.stall(), Some(Stall::Training));
        let mut pair = Pair::new(DlConfig::default(), 3, [0, 0]);
        pair.ports[0].set_tl_channel(false, false);
        pair.run(10, &mut clean);
        assert_eq!(pair.ports[0].state(), LinkState::Up);
        assert_eq!(pair.ports[0].stall(), Some(Stall::TlChannelClosed));
        assert_eq!(pair.ports[1].stall(), None);
    }

    #[test]
    fn bring_up_follows_figure_6_23() {
        let mut p = Port::new(DlConfig::default(), [0; REPLAY_ENTRY_LEN * 64]);
        assert_eq!(p.state(), LinkState::Fault);
        assert!(p.enable().is_err(), "enable only from DL Idle");
        let mut out = [0u8; FLIT_LEN];
        let mut none: Deque<TlFlit, 1> = Deque::new();
        assert_eq!(p.transmit(&mut none, &mut out), Transmitted::Idle);
        p.rs_fault(false);
        assert_eq!(p.state(), LinkState::Idle);
        assert_eq!(p.enable(), Ok(0));
        assert_eq!(p.state(), LinkState::Nop);
        // Two ports: DL Up after 10 NOP flits sent and 2 flits received.
        let mut pair = Pair::new(DlConfig::default(), 3, [0, 0]);
        pair.run(10, &mut clean);
        assert_eq!(pair.ports[0].state(), LinkState::Up);
        assert!(pair.headers[0].iter().all(|h| !h.has_payload()));
        // An RS fault takes any state to DL Fault.
        pair.ports[0].rs_fault(true);
        assert_eq!(pair.ports[0].state(), LinkState::Fault);
        assert_eq!(pair.ports[0].down_reason(), Some(DownReason::Fault));
    }

    #[test]
    fn clean_link_delivers_in_order_and_acks_empty_the_replay_buffer() {
        let mut pair = Pair::new(DlConfig::default(), 5, [500, 300]);
        pair.run(200, &mut clean);
        pair.check_delivered();
        for p in &pair.ports {
            assert_eq!(p.unacknowledged(), 0);
            assert_eq!(p.stats().replays, 0);
            assert_eq!(p.state(), LinkState::Up);
        }
        // 500 TL flits of 64 bytes in DL flits of 628: 51 payload flits (50.96 rounded up).
        assert_eq!(pair.ports[0].stats().payload_sent, 51);
        assert_eq!(pair.ports[0].tx_last_seq(), 51);
    }

    #[test]
    fn an_explicit_flit_at_least_every_seventh() {
        let mut pair = Pair::new(DlConfig::default(), 2, [300, 0]);
        pair.run(60, &mut clean);
        let explicit: Vec<bool> = pair.headers[0]
            .iter()
            .map(|h| matches!(h, FlitHeader::Nop { .. } | FlitHeader::Original { .. } | FlitHeader::Replay { .. }))
            .collect();
        for w in explicit.windows(7) {
            assert!(w.iter().any(|&e| e), "{explicit:?}");
        }
        assert_eq!(explicit.iter().filter(|&&e| e).count(), 60 / 7);
    }

    #[test]
    fn a_corrupted_payload_flit_is_replayed_once_in_order() {
        let mut pair = Pair::new(DlConfig::default(), 4, [400, 0]);
        // Corrupt the first transmission of payload flit 5 from port 0.
        let mut hit = false;
        let mut corrupt = |d: usize, _t: u64, h: &FlitHeader| {
            let seq5 = matches!(h, FlitHeader::Original { seq: 5 })
                || matches!(h, FlitHeader::Ack { payload: true, seq_lo: 5, .. });
            if d == 0 && !hit && seq5 {
                hit = true;
                return true;
            }
            false
        };
        pair.run(200, &mut corrupt);
        assert!(hit);
        pair.check_delivered();
        let (tx, rx) = (&pair.ports[0], &pair.ports[1]);
        assert_eq!(rx.stats().crc_errors, 1);
        assert_eq!(rx.stats().replay_requests_sent, 3, "three copies");
        assert_eq!(tx.stats().replays, 1, "the copies after the first fall in the ignore window");
        assert_eq!(tx.stats().replay_requests_ignored, 2);
        // The copies went out in different codeword groups of 4 flits, each asking for 5.
        let rr: Vec<(usize, u16)> = pair.headers[1]
            .iter()
            .enumerate()
            .filter_map(|(i, h)| match h {
                FlitHeader::ReplayRequest { from_seq, .. } => Some((i, *from_seq)),
                _ => None,
            })
            .collect();
        assert_eq!(rr.len(), 3);
        assert!(rr.iter().all(|&(_, s)| s == 5));
        assert!(rr.windows(2).all(|w| w[0].0 / 4 != w[1].0 / 4));
        // The replay starts with an explicit Replay flit of sequence number 5.
        let first_replay = pair.headers[0].iter().position(|h| matches!(h, FlitHeader::Replay { .. }));
        assert_eq!(first_replay.map(|i| pair.headers[0][i]), Some(FlitHeader::Replay { seq: 5 }));
        assert_eq!(tx.unacknowledged(), 0);
    }

    #[test]
    fn a_lost_replay_request_is_covered_by_its_copies_and_the_replay_limit() {
        // Corrupt every Replay Request from port 1 until the 5th, and a payload flit of port 0.
        let mut rr_seen = 0;
        let mut hit = false;
        let mut corrupt = |d: usize, _t: u64, h: &FlitHeader| match (d, h) {
            (0, FlitHeader::Original { seq: 9 } | FlitHeader::Ack { payload: true, seq_lo: 1, .. }) if !hit => {
                hit = true;
                true
            }
            (1, FlitHeader::ReplayRequest { .. }) => {
                rr_seen += 1;
                rr_seen <= 4
            }
            _ => false,
        };
        let cfg = DlConfig { rx_replay_limit: 20, ..DlConfig::default() };
        let mut pair = Pair::new(cfg, 3, [600, 0]);
        pair.run(400, &mut corrupt);
        assert!(hit);
        pair.check_delivered();
        assert!(pair.ports[1].stats().replay_requests_sent >= 5, "sent again after Rx_replay_limit");
        assert_eq!(pair.ports[0].stats().replays, 1);
    }

    #[test]
    fn seven_bad_crcs_make_the_receiver_wait_for_an_explicit_flit() {
        let mut pair = Pair::new(DlConfig::default(), 2, [2000, 0]);
        pair.run(20, &mut clean);
        let start = pair.tick;
        let mut corrupt = |d: usize, t: u64, _: &FlitHeader| d == 0 && (start..start + 9).contains(&t);
        pair.run(12, &mut corrupt);
        // Nine bad CRCs in a row: from the seventh on, flitSeqLo is not trusted, and only an
        // explicit flit can end that.
        assert_eq!(pair.ports[1].stats().crc_errors, 9);
        assert!(pair.ports[1].rx_ambiguous());
        pair.run(300, &mut clean);
        pair.check_delivered();
        assert!(!pair.ports[1].rx_ambiguous());
        assert_eq!(pair.ports[1].stats().crc_errors, 9);
    }

    /// Every flit arriving twice delivers each TL flit once: the copy is unexpected (an explicit
    /// flit repeats its number; a command flit's flitSeqLo, with payload, reads as eight ahead)
    /// and asks for a replay, which the receiver refuses flit by flit until the stream is past.
    #[test]
    fn duplicated_flits_are_delivered_once() {
        let mut pair = Pair::new(DlConfig::default(), 3, [600, 400]);
        pair.twice = [true, true];
        pair.run(40, &mut clean);
        pair.twice = [false, false];
        pair.run(400, &mut clean);
        pair.check_delivered();
        assert!(pair.received[1].contains(&Received::Unexpected));
        assert!(pair.ports.iter().all(|p| p.state() == LinkState::Up));
    }

    /// A loss nobody reports: up to six payload flits in a row may vanish unseen wherever the
    /// sequence stands, seven away from the 511 → 1 wrap, and the next flit's 3-bit flitSeqLo
    /// still shows the gap, so they are replayed. (More would alias: that is why a flit the PCS
    /// could not correct must be reported, `receive_lost`.)
    #[test]
    fn a_few_flits_lost_unseen_are_still_replayed() {
        for last in [12, 500, 503, 504, 505, 506, 507, 508, 509, 510, 511] {
            for gap in 1..=if last <= 503 { 7 } else { 6 } {
                let mut pair = Pair::new(DlConfig::default(), 2, [6000, 0]);
                // Payload flits one after another, until the receiver has taken `last` (511 is
                // also where it starts).
                for _ in 0..2000 {
                    if pair.ports[1].rx_last_seq() == last && pair.ports[1].stats().payload_received > 0 {
                        break;
                    }
                    pair.step(&mut clean);
                }
                assert_eq!(pair.ports[1].rx_last_seq(), last);
                pair.vanish = (pair.tick..pair.tick + gap).map(|t| (1, t)).collect();
                pair.run(900, &mut clean);
                pair.check_delivered();
                assert_eq!(pair.ports[0].stats().replays, 1, "after {last}, gap {gap}");
                assert_eq!(pair.ports[1].stats().crc_errors, 0);
            }
        }
    }

    #[test]
    fn a_silent_partner_times_the_link_out() {
        let cfg = DlConfig { tx_ack_time_out: 30, ..DlConfig::default() };
        let mut pair = Pair::new(cfg, 2, [100, 0]);
        pair.run(12, &mut clean);
        assert_eq!(pair.ports[0].state(), LinkState::Up);
        // From now on everything port 1 sends is lost: no Acks reach port 0.
        pair.run(60, &mut |d, _, _| d == 1);
        assert_eq!(pair.ports[0].state(), LinkState::Idle);
        assert_eq!(pair.ports[0].down_reason(), Some(DownReason::AckTimeout));
        // Port 1 then sees control codeword groups (Idle) and goes down too.
        pair.run(8, &mut |d, _, _| d == 1);
        assert_eq!(pair.ports[1].state(), LinkState::Idle);
        assert_eq!(pair.ports[1].down_reason(), Some(DownReason::PartnerDown));
    }

    #[test]
    fn containment_inverts_the_crc_and_takes_the_link_down() {
        let mut pair = Pair::new(DlConfig::default(), 1, [0, 0]);
        pair.run(15, &mut clean);
        pair.ports[0].contain();
        pair.run(2, &mut clean);
        assert_eq!(pair.ports[0].state(), LinkState::Idle);
        assert_eq!(pair.ports[0].down_reason(), Some(DownReason::Contained));
        assert!(pair.received[1].contains(&Received::BadCrc));
    }

    #[test]
    fn a_full_replay_buffer_sends_nop_flits() {
        // 64 entries, and a partner whose Acks never arrive (but the link stays up long enough).
        let cfg = DlConfig { tx_ack_time_out: 10_000, ..DlConfig::default() };
        let mut pair = Pair::new(cfg, 2, [5000, 0]);
        pair.run(12, &mut clean);
        pair.run(100, &mut |d, _, _| d == 1);
        assert_eq!(pair.ports[0].unacknowledged(), 64);
        assert!(!pair.ports[0].can_accept());
        assert!(pair.headers[0].iter().rev().take(10).all(|h| !h.has_payload()));
        pair.run(400, &mut clean);
        let n = pair.got[1].len() as u32;
        assert!(n > 1000, "traffic resumed: {n}");
        assert!(pair.got[1] == (0..n).map(flit).collect::<Vec<_>>(), "in order, exactly once");
    }

    #[test]
    fn windows_refuse_acks_and_replays_of_flits_never_sent() {
        let mut pair = Pair::new(DlConfig::default(), 1, [50, 0]);
        pair.run(30, &mut clean);
        let p = &mut pair.ports[0];
        let last = p.tx_last_seq();
        let before = (p.unacknowledged(), p.rx_last_ack(), p.tx_replay());
        let send = |h: FlitHeader, p: &mut Port| feed(p, h);
        let ignored = p.stats().acks_ignored;
        send(FlitHeader::Ack { payload: false, ack_seq: last + 1, seq_lo: 0 }, p);
        assert_eq!(p.stats().acks_ignored, ignored + 1);
        assert_eq!(send(FlitHeader::Ack { payload: false, ack_seq: 0, seq_lo: 0 }, p), Received::Dropped);
        assert_eq!(send(FlitHeader::Nop { seq: 0 }, p), Received::Dropped);
        let rr_ignored = p.stats().replay_requests_ignored;
        send(FlitHeader::ReplayRequest { payload: false, from_seq: last + 1, seq_lo: 0 }, p);
        assert_eq!(p.stats().replay_requests_ignored, rr_ignored + 1);
        assert_eq!((p.unacknowledged(), p.rx_last_ack(), p.tx_replay()), before);
    }

    /// A flit with header `h` and an empty payload, framed and received by `p`.
    fn feed(p: &mut Port, h: FlitHeader) -> Received {
        let mut f = [0u8; FLIT_LEN];
        crate::dl::flit::frame_bytes(&h, &[0; 5], &[0; PAYLOAD_LEN], &mut f).unwrap();
        p.receive(&f, &mut Delivered::default())
    }

    /// The headers of the next `n` flits `p` sends (with nothing to send from the TL).
    fn headers_sent(p: &mut Port, n: usize) -> Vec<FlitHeader> {
        let mut none: Deque<TlFlit, 1> = Deque::new();
        let mut out = [0u8; FLIT_LEN];
        (0..n)
            .filter_map(|_| match p.transmit(&mut none, &mut out) {
                Transmitted::Flit { header, .. } => Some(header),
                Transmitted::Idle => None,
            })
            .collect()
    }

    /// Figure 6-20: with `Rx_ambiguous` set and no replay under way, a command flit is dropped
    /// and the receiver waits for an explicit flit; it does not ask for a replay.
    #[test]
    fn an_ambiguous_receiver_drops_command_flits_and_waits_for_an_explicit_one() {
        let mut p = port(DlConfig::default());
        for _ in 0..7 {
            p.receive_lost();
        }
        assert!(p.rx_ambiguous());
        // A NOP command flit that numbers as expected (flitSeqLo 7 = 511's): not trusted.
        assert_eq!(feed(&mut p, FlitHeader::Ack { payload: false, ack_seq: 511, seq_lo: 7 }), Received::Unexpected);
        assert!(!p.rx_replay(), "no replay started");
        assert!(headers_sent(&mut p, 12).iter().all(|h| !matches!(h, FlitHeader::ReplayRequest { .. })));
        // The explicit NOP flit settles it.
        assert_eq!(feed(&mut p, FlitHeader::Nop { seq: 511 }), Received::Nop);
        assert!(!p.rx_ambiguous());
        assert_eq!(feed(&mut p, FlitHeader::Ack { payload: false, ack_seq: 511, seq_lo: 7 }), Received::Nop);
    }

    /// §6.6.6.3: an accepted Replay Request schedules the replay from its own `ackReqSeq`, also
    /// when a replay is already under way: forward past flits the receiver now has, or back.
    #[test]
    fn a_later_replay_request_moves_the_replay_to_its_flit() {
        let mut pair = Pair::new(DlConfig::default(), 1, [200, 0]);
        pair.run(12, &mut clean);
        // Nothing from port 1 arrives from now on: port 0 keeps its flits unacknowledged.
        pair.run(10, &mut |d, _, _| d == 1);
        let p = &mut pair.ports[0];
        let base = p.rx_last_ack() % 511 + 1;
        assert!(p.unacknowledged() >= 8, "{}", p.unacknowledged());
        let rr = |from_seq| FlitHeader::ReplayRequest { payload: false, from_seq, seq_lo: 7 };
        let ack = FlitHeader::Ack { payload: false, ack_seq: p.rx_last_ack(), seq_lo: 7 };
        feed(p, rr(base));
        assert_eq!(
            headers_sent(p, 2),
            [
                FlitHeader::Replay { seq: base },
                FlitHeader::Ack { payload: true, ack_seq: 511, seq_lo: ((base + 1) & 7) as u8 }
            ]
        );
        // After the 12-flit ignore window, a request from five further on: the replay jumps there.
        for _ in 0..12 {
            feed(p, ack);
        }
        feed(p, rr(base + 5));
        assert_eq!(headers_sent(p, 1), [FlitHeader::Replay { seq: base + 5 }]);
        for _ in 0..12 {
            feed(p, ack);
        }
        feed(p, rr(base + 1));
        assert_eq!(headers_sent(p, 1), [FlitHeader::Replay { seq: base + 1 }]);
        assert_eq!(p.stats().replays, 3);
    }

    /// The `ualink_link` fuzz finding (its minimised input, as a damage schedule): during bring-up
    /// seven bad CRCs in a row make one port's receiver ambiguous, and its Replay Requests for
    /// flit 1 outlive their need; the last copy reaches the partner just after it sent flit 1,
    /// which accepts it and starts a replay the receiver never needed. That replay's explicit first
    /// flit is lost, and its next flit, a command flit carrying an old flit's `flitSeqLo`, aliased
    /// as the expected one: a TL flit was delivered with half of another inside it.
    #[test]
    fn a_stale_replay_request_cannot_deliver_an_old_flit_as_new() {
        // Per flit time, the damage to the flit arriving then: bits 1..0 at port 0, bits 3..2 at
        // port 1, non-zero meaning lost.
        const ARRIVING: [u8; 34] = [
            0xae, 0x1f, 0xfb, 0x74, 0x44, 0x47, 0x47, 0x47, 0x47, 0x47, 0x47, 0x47, 0x47, 0x75, 0x02, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x0a, 0x00, 0x00, 0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a,
        ];
        let delay = 8;
        let cfg = DlConfig { rx_replay_limit: 4 * 8 + 24, ..DlConfig::default() };
        let mut pair = Pair::new(cfg, delay, [200, 200]);
        let mut lost = |d: usize, t: u64, _: &FlitHeader| {
            let at = usize::try_from(t).unwrap() + delay;
            ARRIVING.get(at).is_some_and(|b| b >> (2 * (1 - d)) & 3 != 0)
        };
        pair.run(600, &mut lost);
        pair.check_delivered();
        pair.check_replays_owed();
        for p in &pair.ports {
            assert_eq!(p.state(), LinkState::Up);
            assert_eq!(p.unacknowledged(), 0);
        }
    }

    /// Flit times of random damage in [`error_pattern_run`]. Far more than a clean link needs for
    /// its traffic (about 160 flit times): the damage covers the whole transfer unless replays
    /// make it last longer than this.
    const NOISY_TICKS: u64 = 20_000;
    /// Flit times a clean link is given after the damage stops. Recovery is bounded without
    /// chance: a pending Replay Request is sent again within `Rx_replay_limit` (at most 176 here)
    /// flit times, reaches the partner within 40, and the replay it starts plus the rest of the
    /// traffic is at most 255 + 225 payload flits, with an explicit flit every seventh.
    const RECOVERY_TICKS: u64 = 2_000;

    /// Two ports exchanging 1 500 and 700 TL flits over a wire `delay` flit times long that
    /// damages flits with probability `per_mille`/1000 per draw (a xorshift stream seeded with
    /// `seed`) for [`NOISY_TICKS`], then is clean for [`RECOVERY_TICKS`], plus a quiet tail for
    /// the last Acks. With `burst` 0 each flit in either direction is drawn alone; otherwise a hit
    /// loses every flit in both directions for `burst` flit times (from 7 on, the receivers'
    /// `flitSeqLo` becomes ambiguous). Whether everything arrives does not depend on luck: the
    /// damage stops, and recovery from any state it left is bounded.
    fn error_pattern_run(seed: u64, per_mille: u64, delay: usize, burst: u64) -> Pair {
        let mut x = seed | 1;
        let mut until = 0;
        let mut corrupt = |_: usize, t: u64, _: &FlitHeader| {
            if t < until {
                return true;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let hit = x % 1000 < per_mille;
            if hit {
                until = t + burst;
            }
            hit
        };
        // Rx_replay_limit at twice the round trip (§6.6.4.6), with some margin.
        let limit = u8::try_from(4 * delay + 20).expect("a delay the 8-bit Rx_replay_limit can cover");
        let cfg = DlConfig { rx_replay_limit: limit, ..DlConfig::default() };
        let mut pair = Pair::new(cfg, delay, [1500, 700]);
        let done = |pair: &Pair| pair.got[1].len() >= 1500 && pair.got[0].len() >= 700;
        while !done(&pair) && pair.tick < NOISY_TICKS {
            pair.step(&mut corrupt);
        }
        while !done(&pair) && pair.tick < NOISY_TICKS + RECOVERY_TICKS {
            pair.step(&mut clean);
        }
        pair.run(4 * delay as u64 + 40, &mut clean);
        pair
    }

    /// The case that showed the old assertion of `any_error_pattern_delivers_exactly_once` ("at a
    /// 5 % error rate, some replay happens") to be a matter of chance: the only flits this seed
    /// corrupts from port 0 are two NOP flits sent while the link was coming up, which owe no
    /// replay. Kept with its shrunk values so it outlives a change of the property's strategy.
    #[test]
    fn corrupted_nop_flits_owe_no_replay() {
        let pair = error_pattern_run(4569498972679728514, 50, 1, 0);
        pair.check_delivered();
        pair.check_replays_owed();
        assert!(!pair.corrupted[0].is_empty());
        assert!(pair.corrupted[0].iter().all(|(h, _)| !h.has_payload()));
        assert_eq!(pair.ports[0].stats().replays, 0, "nothing of port 0 was lost, so nothing was replayed");
        assert!(pair.corrupted[1].iter().any(|(h, replay)| h.has_payload() && !replay));
        assert!(pair.ports[1].stats().replays > 0);
    }
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Random bit errors on both directions (so Acks and Replay Requests are lost too), alone
        /// or in bursts, any delay: every TL flit arrives exactly once and in order, and TxReplay
        /// drains.
        #[test]
        fn any_error_pattern_delivers_exactly_once(
            seed in 0u64..,
            per_mille in 0u64..200,
            delay in 1usize..40,
            burst in proptest::prop_oneof![proptest::strategy::Just(0u64), 1u64..16],
        ) {
            let pair = error_pattern_run(seed, per_mille, delay, burst);
            pair.check_delivered();
            pair.check_replays_owed();
            for p in &pair.ports {
                proptest::prop_assert_eq!(p.state(), LinkState::Up);
                proptest::prop_assert_eq!(p.unacknowledged(), 0);
            }
        }
    }
}
