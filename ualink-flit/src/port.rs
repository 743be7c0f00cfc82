//! One UALink port as one sans-I/O object: [`UpliPort`] joins the UPLI Originator and Completer
//! of an accelerator port to its TL (packer, unpacker, address caches, credits) and its DL (link
//! replay, link states, DL message service), so an embedder drives a port with a handful of calls
//! instead of wiring five objects by hand.
//!
//! Sources: the UALink_200 Rev 1.0 Specification in the public GitHub repository
//! `VarunMusham/UALink-Docs`, chapters 2 (UPLI), 3 (link down, §3.1.4.3), 5 (TL) and 6 (DL):
//! `Chapters/2_UPLI_Interface_Definition_and_Operation_Rules.pdf`,
//! `Chapters/3_Reliability_Availability_and_Serviceability_RAS.pdf`,
//! `Chapters/5_Transaction_Layer_TL.pdf`, `Chapters/6_Data_Link.pdf`.
//!
//! # The loop
//!
//! Every flit time (25 ns at 200GAUI-1), the embedder:
//!
//! 1. hands the port the flit that arrived: [`UpliPort::handle_flit`], or
//!    [`UpliPort::handle_lost`] for one the PCS could not correct, or [`UpliPort::handle_idle`]
//!    when the partner sent Idle or control codewords;
//! 2. takes the flit to send: [`UpliPort::poll_transmit`];
//! 3. takes events ([`UpliPort::poll_event`]): requests that arrived whole (answer each with
//!    [`UpliPort::respond`]), responses to its own requests, failures, link changes;
//! 4. issues requests ([`UpliPort::request`]) while tags are free.
//!
//! [`UpliPort::poll_timeout`] / [`UpliPort::handle_timeout`] run the Originator's watchdog
//! ([`PortConfig::completion_timeout`]); time is the embedder's count of flit times.
//!
//! # Bring-up
//!
//! [`UpliPort::new`] checks the configuration and the TxReplay storage; [`UpliPort::start`] is
//! the whole bring-up in one call: the data link leaves its reset state (unless the embedder
//! reported an RS fault with [`UpliPort::rs_fault`]), the management layer enables it (DL NOP),
//! the port advertises its receive buffers as TL credits (UALink 1.0 §5.8, then Initial Credit
//! Release Complete) and asks its partner for Channel 0 (§6.4.3.2) with DL messages. The link
//! comes up (DL Up, §6.7) once both ports have started and seen each other's NOP flits; requests
//! issued before that wait. [`UpliPort::waiting_on`] says why nothing moves.
//!
//! # Data: the port copies
//!
//! [`UpliPort::request`] and [`UpliPort::respond`] copy the data they are given (at most 256
//! bytes) into the port's own slot for that request, so the caller's buffer is free again when
//! the call returns; nothing is lent. Received data is assembled into whole 64-byte beats (byte
//! enables applied after they arrive, poisoned beats marked) and lent in the event, as [`Data`],
//! until the next call that takes `&mut self`. A request's data stays readable
//! ([`UpliPort::request_data`]) until it is answered. (For zero-copy data, sparse byte enables or
//! a sub-DWord atomic off its DWord's first byte, drive the lower objects: [`Packer`] with a
//! [`BeatSource`] and [`Packer::holds_data`].)
//!
//! Which bytes a transfer's data are ([`Data::bytes`], and what [`UpliPort::request`] and
//! [`UpliPort::respond`] take): `bytes()` from the address's lane for reads and writes, and for
//! a single-operand atomic (its elements, ReqLen a multiple of the element size, each element's
//! old value returned in its lanes, §2.8); for a double-operand atomic, 64 bytes from lane 0
//! in the request (Op1 in lanes 0..32, Op2 in 32..64, whatever ReqAddr) and the 32 bytes it
//! updates in lanes 0..32 of the response (§2.8, Figure 2-24: "Data Returned in Low 32
//! Bytes"); whole beats from lane 0 for vendor commands and Write Messages, whose address and
//! length are the vendor's (§2.8).
//!
//! # Order
//!
//! Requests are reported in the order they arrived, each once its data is complete, so requests
//! to one address on one VC reach the Completer in the order they were sent (§2.7.9): a read that
//! arrives beside the last data of an earlier write waits for it.
//!
//! # Tags and buffers
//!
//! The port has `S` slots each way. A request takes the free originator slot whose number is its
//! ReqTag (unique per port, §2.7.4.2), so at most `S` requests are outstanding; a request that
//! arrives takes a completer slot until its response has been sent. The port advertises exactly
//! what its free slots hold, as pool credits (*project-defined*; §5.8 leaves the amounts to the
//! implementation): a request command and 4 request data beats per completer slot, `S` response
//! commands and `4·S` response data beats. A request's credits go back to the partner when its
//! response has been packed (its slot is free again); a response's as soon as it has arrived (its
//! originator slot is reserved for it). A read may be answered in one multi-beat response or in
//! single-beat parts in any order (§2.7.8); it completes when every beat has arrived, with the
//! first status other than OKAY if a part had one. A request that arrives with every completer
//! slot taken broke the credits advertised: it is a TL receive error (§5.3), and error
//! containment takes the link down.
//!
//! The port does not wait for the partner's Initial Credit Release Complete before it sends:
//! credits it holds are real whenever they arrive (*project-defined*). It does not support the
//! partner's Shared Data Buffer mode (one data class of credits only): such a partner's reads
//! would wait for response data credits that never come ([`Waiting::Credits`]).
//!
//! # Link down
//!
//! When the data link leaves DL Up (or DL NOP), the TL enters Drop Mode (§3.1.3, §3.1.4.3) and the
//! port does what the text asks of an accelerator: the packer and unpacker drop what they hold
//! ([`Packer::link_down`], [`Unpacker::link_down`]), every outstanding request ends with
//! [`Event::Failed`] ([`Failure::LinkDown`]: the dummy Completion Timeout of Isolation Mode), and
//! every request the completer still holds ends with [`Event::Dropped`] (its handle is void; the
//! partner fails it on its side). Nothing is replayed above the DL: a request may or may not have
//! been performed, and §3.1.4.3 has the applications restarted. New requests are refused until the
//! management layer recovers the link with [`UpliPort::start`], which advertises the receive
//! buffers afresh and negotiates Channel 0 again.
//!
//! **When to start again: when [`UpliPort::waiting_on`] says [`Waiting::Start`]** (poll it every
//! flit time while the link is down; [`Event::Link`] reports the level, not every bounce). A port
//! whose link went down first waits until both ends have been quiet ([`Waiting::Quiescing`]): it
//! has sent four control codeword groups (Idle) and, at some time since the link went down,
//! received four in a row, the count that takes a partner's DL Up down (§6.7.1.4). So the partner
//! has gone down too and flushed its TL, and no flit or response sent before the link down is
//! still on the wire when the new link comes up: a port that came straight back while its partner
//! stayed up would take the partner's old responses for its new requests (*project-defined*; the
//! text leaves the restart to management). Once a port may start it may start at any later time:
//! the two ends' management need not act together (at power-on neither waits).
//!
//! Two duties stay with the embedder: an accelerator's TL enters Drop Mode for **all** ports of
//! the station (take the station's other ports down too), and through a switch, management clears
//! what the remote completers still hold before the tags are reused (§3.1.4.3); the port frees its
//! tags at once.
//!
//! # Completion timeout
//!
//! With [`PortConfig::completion_timeout`] set, a request whose response is overdue trips the
//! Originator's watchdog. As §3.1.3 has it (the default, [`PortConfig::isolate_on_timeout`]), the
//! Originator then enters Isolation Mode: every outstanding request ends with
//! [`Failure::Timeout`], new requests are refused and arriving responses are discarded (their
//! credits returned) until management resets the link ([`UpliPort::take_link_down`], then
//! [`UpliPort::start`] when it says [`Waiting::Start`]). *Project-defined*, off by default: without
//! isolation only the overdue request ends, and its tag stays taken until the last beat of its late
//! response arrives (§2.7.4.2) or the link goes down.
//!
//! # Memory
//!
//! Each slot pair (one originator and one completer slot, each with 256 bytes of data) costs
//! 774 B on a 64-bit host, on top of the data link and the TL. The default `UpliPort` (64
//! TxReplay entries inline, 32 slots each way) is 71 392 B; with 16 slots 59 008 B, with 64
//! slots 96 160 B.

use crate::Error;
use crate::dl::link::{DownReason, REPLAY_ENTRY_LEN};
use crate::dl::service::{CHANNEL_TL, DeviceKind, MessageService, ServiceConfig, ServiceEvent};
use crate::dl::{DataLink, Delivered, DlConfig, FLIT_LEN, LinkState, Received, Stall, TlSource, Transmitted};
use crate::tl::compress::{Indexing, RxDecompressor, TxCompressor};
use crate::tl::credit::{Class, Target};
use crate::tl::flit::beat_byte_enables;
use crate::tl::{
    Beat, BeatSource, Message, MessageType, Packer, PackerConfig, Response, RxHalf, RxItem, TlFlit, Unpacked, Unpacker,
};
use crate::upli::{BEAT_LEN, MAX_TRANSFER, Request, ResponseChannel, Status};
use linklayer::bytes::copy_prefix;

/// Data bytes a slot holds: one transfer of up to four 64-byte beats.
const SLOT_BYTES: usize = MAX_TRANSFER as usize;
/// Beats a slot holds.
const SLOT_BEATS: usize = SLOT_BYTES / BEAT_LEN;
/// Packer ids of responses: the completer slot with this bit set (requests use their tag).
const RESPONSE_ID: u32 = 1 << 31;

/// A port's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortConfig {
    /// This accelerator's PhysAccID (10 bits): the source of its requests.
    pub acc: u16,
    /// The data link's settings.
    pub dl: DlConfig,
    /// The DL message service's settings (Device ID, port number).
    pub service: ServiceConfig,
    /// The TL packer's settings (authentication, response compression); the unpacker takes the
    /// same authentication setting, which must match the partner's.
    pub packer: PackerConfig,
    /// How this port's Tx address cache picks a row. The partner's Rx cache must index the same
    /// way ([`crate::tl::compress`]); [`Indexing::ByDst`] at both ends of an accelerator-to-
    /// accelerator link.
    pub tx_indexing: Indexing,
    /// How this port's Rx address cache picks a row (the partner's Tx cache's way).
    pub rx_indexing: Indexing,
    /// Negotiate Channel 0 (TL flits) with DL messages at start (§6.4.3.2). `false` opens it at
    /// once, for a partner known to have it online.
    pub negotiate: bool,
    /// The Originator's watchdog (§3.1.3): flit times a request may wait for its response.
    /// `None`: no watchdog; only a link down ends a request without its response.
    pub completion_timeout: Option<u64>,
    /// What an expired watchdog does (module doc): `true` (the specification's rule) puts the
    /// Originator in Isolation Mode; `false` (*project-defined*) ends the overdue request only.
    pub isolate_on_timeout: bool,
}

impl PortConfig {
    /// Every field zero: what an [`UpliPort::EMPTY`] holds until [`UpliPort::init`].
    const ZERO: PortConfig = PortConfig {
        acc: 0,
        dl: DlConfig { rx_replay_limit: 0, tx_ack_time_out: 0, interleave: 0 },
        service: ServiceConfig { device_id: None, kind: DeviceKind::Switch, port: None, uart_reset_timeout: 0 },
        packer: PackerConfig { auth: false, compress_responses: false },
        tx_indexing: Indexing::ByDst,
        rx_indexing: Indexing::ByDst,
        negotiate: false,
        completion_timeout: None,
        isolate_on_timeout: false,
    };

    /// Accelerator `acc` with the defaults: default DL, no authentication, compressed responses,
    /// both caches indexed by destination, Channel 0 negotiated, no watchdog (isolation when one
    /// is set).
    pub const fn new(acc: u16) -> Self {
        PortConfig {
            acc,
            dl: DlConfig::DEFAULT,
            service: ServiceConfig::DEFAULT,
            packer: PackerConfig { auth: false, compress_responses: true },
            tx_indexing: Indexing::ByDst,
            rx_indexing: Indexing::ByDst,
            negotiate: true,
            completion_timeout: None,
            isolate_on_timeout: true,
        }
    }
}

/// Why a request ended without its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Failure {
    /// The link went down (Drop Mode): the request may or may not have been performed.
    LinkDown,
    /// The watchdog expired ([`PortConfig::completion_timeout`]): this request was overdue, or,
    /// in Isolation Mode, another one was and every outstanding request ends.
    Timeout,
}

/// A request the completer holds, from [`Event::Request`] until [`UpliPort::respond`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Handle {
    slot: u16,
    generation: u16,
}

/// Data lent by an event: whole 64-byte beats, the byte at address X in lane X mod 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data<'a> {
    beats: &'a [u8],
    byte_en: &'a [u64],
    poisoned: u8,
    /// The transfer's first lane and length.
    first: usize,
    len: usize,
}

impl<'a> Data<'a> {
    /// The transfer's bytes (module doc: a read's, write's or single-operand atomic's bytes from
    /// its address on, a double-operand atomic's 64 bytes, a vendor command's whole beats).
    pub fn bytes(&self) -> &'a [u8] {
        self.beats.get(self.first..self.first + self.len).unwrap_or(&[])
    }

    /// The whole beats.
    pub fn beats(&self) -> &'a [u8] {
        self.beats
    }

    /// Byte enables per beat, one bit per lane (requests with byte enables; all ones otherwise).
    pub fn byte_enables(&self) -> &'a [u64] {
        self.byte_en
    }

    /// Whether beat `beat` arrived poisoned (OrigDataError / RdRspDataError). A poisoned beat
    /// carried no data: its lanes read as zeros.
    pub fn poisoned(&self, beat: u8) -> bool {
        beat < 8 && self.poisoned >> beat & 1 == 1
    }

    /// Whether any beat arrived poisoned.
    pub fn any_poisoned(&self) -> bool {
        self.poisoned != 0
    }
}

/// What happened at the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The port can carry requests now (DL Up and Channel 0 online both ways), or no longer.
    Link {
        /// Whether it can.
        up: bool,
    },
    /// A request arrived whole, with its data (in arrival order). Answer it with
    /// [`UpliPort::respond`].
    Request {
        /// The request's handle.
        handle: Handle,
        /// The request.
        req: Request,
        /// Its data (empty for commands without data).
        data: Data<'a>,
    },
    /// The response to request `tag` arrived whole.
    Response {
        /// The request's tag (from [`UpliPort::request`]).
        tag: u16,
        /// The request as issued (its POOL bit as given, not the credit the packer used).
        req: Request,
        /// The response's status: OKAY, or the first other status a part of it had.
        status: Status,
        /// The read data (empty for a write response).
        data: Data<'a>,
    },
    /// Request `tag` ended without its response.
    Failed {
        /// The request's tag.
        tag: u16,
        /// The request, as issued.
        req: Request,
        /// Why.
        why: Failure,
    },
    /// A request this port held was dropped by a link down; its handle is void.
    Dropped {
        /// The handle it had.
        handle: Handle,
        /// The request.
        req: Request,
    },
    /// A DL message from the partner changed something ([`UpliPort::service`]): its Device ID
    /// or port number, a channel negotiated, a UART stream reset.
    Service(ServiceEvent),
}

/// Why a port moves nothing ([`UpliPort::waiting_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Waiting {
    /// The link is down and the port may be started: call [`UpliPort::start`].
    Start,
    /// The link went down, and the port waits until both ends have been quiet before it may
    /// start: four control codeword groups sent (it sends Idle while down) and four received in
    /// a row at some time since, so the partner has gone down too and nothing sent before is
    /// still on the wire. Keep calling [`UpliPort::poll_transmit`] and handing it what arrives;
    /// then [`Waiting::Start`], which stays until the port is started, however late.
    Quiescing,
    /// The data link: [`Stall::Fault`] while the RS reports a fault, [`Stall::Training`] until
    /// the partner's NOP flits arrive, [`Stall::TlChannelClosed`] until Channel 0 is negotiated,
    /// [`Stall::Replay`] while TxReplay waits for acknowledgements.
    Link(Stall),
    /// The Originator is in Isolation Mode after its watchdog expired: reset the link
    /// ([`UpliPort::take_link_down`], then [`UpliPort::start`]).
    Isolated,
    /// Requests or responses are queued, and the partner has not advertised its receive buffers
    /// yet (no Initial Credit Release Complete since the link came up).
    PartnerCredits,
    /// Requests or responses are queued, waiting for credits the partner has not returned (its
    /// buffers are full).
    Credits,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PortStats {
    /// Requests issued.
    pub requests: u64,
    /// Responses to this port's requests that completed a request.
    pub responses: u64,
    /// Requests that arrived whole.
    pub served: u64,
    /// Requests ended by [`Event::Failed`].
    pub failed: u64,
    /// Requests ended by [`Event::Dropped`].
    pub dropped: u64,
    /// Times the port left DL Up.
    pub link_downs: u64,
    /// Times the watchdog put the Originator in Isolation Mode.
    pub isolations: u64,
    /// Responses (or parts) that matched no outstanding request, came on the wrong channel or
    /// to another accelerator, repeated a beat, or carried ISOLATE (TL-local, never sent over a
    /// link), and responses discarded in Isolation Mode: dropped with their credits returned.
    pub stray_responses: u64,
    /// Requests addressed to another accelerator than this port's (served all the same).
    pub misrouted: u64,
    /// TL receive errors (§5.3), a request beyond the credits advertised among them: each took the
    /// link down by error containment.
    pub tl_errors: u64,
    /// DL message service events dropped because [`SERVICE_EVENTS`] were waiting (poll events
    /// every flit time and none is lost: a flit carries at most five DL message words).
    pub service_events_lost: u64,
}

impl PortStats {
    /// Nothing counted.
    pub const ZERO: PortStats = PortStats {
        requests: 0,
        responses: 0,
        served: 0,
        failed: 0,
        dropped: 0,
        link_downs: 0,
        isolations: 0,
        stray_responses: 0,
        misrouted: 0,
        tl_errors: 0,
        service_events_lost: 0,
    };
}

/// DL message service events the port keeps for [`UpliPort::poll_event`].
pub const SERVICE_EVENTS: usize = 16;

/// Control codeword groups in a row that take a partner's DL Up down (§6.7.1.4): after a link
/// down, a port sends and receives this many before it starts again.
const QUIET_GROUPS: u8 = 4;

/// Items whose data half-flits may be owed at once: the unpacker's tenures (one swapped half-flit
/// and eight read responses) with room to spare.
const INCOMING: usize = 16;

/// An originator slot's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Orig {
    Free,
    /// Queued or sent, waiting for its response (or the rest of it).
    Outstanding,
    /// The response is complete; reported by the next `poll_event`.
    Done,
    /// Ended without its response; reported by the next `poll_event`, then free.
    Failed(Failure),
    /// Overdue (watchdog without isolation): its failure is reported, or still to be (`reported`
    /// false); the tag waits for the last beat of the late response.
    TimedOut {
        reported: bool,
    },
    /// Overdue, and its late response arrived whole before the failure was reported.
    TimedOutAnswered,
}

impl Orig {
    /// Whether responses for the slot's tag are taken (their data collected or discarded).
    const fn takes_responses(self) -> bool {
        matches!(self, Orig::Outstanding | Orig::TimedOut { .. })
    }
}

/// A completer slot's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compl {
    Free,
    /// Data half-flits still owed.
    Arriving,
    /// Whole; reported in arrival order.
    Ready,
    /// Reported; waiting for `respond`.
    Held,
    /// Answered; the packer is sending the response.
    Responding,
    /// Dropped by a link down after it was reported; the drop is reported next.
    Dropped,
}

/// Where the data half-flits of an unpacked item go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Completer(u16),
    Originator(u16),
    /// Nowhere: a stray response's data, taken off the link and dropped.
    Discard,
}

/// An unpacked item whose data half-flits are still owed: where they go, from which beat of the
/// slot on, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Incoming {
    id: u32,
    owner: Owner,
    base: u8,
    halves: u8,
}

/// A data-carrying half-flit.
#[derive(Clone, Copy, Debug)]
enum Half<'a> {
    Data { beat: u8, second: bool, bytes: &'a [u8; 32] },
    Poisoned { beat: u8, second: bool },
    ByteEnables { bytes: &'a [u8; 32] },
}

/// One transfer's data and its record.
#[derive(Clone, Copy, Debug)]
struct Slot<St> {
    state: St,
    req: Request,
    generation: u16,
    /// Originator: the watchdog's deadline in flit times.
    deadline: u64,
    /// Originator: beats of the response announced by the parts taken, and received (bit per
    /// beat), whether a part marked last arrived, and the parts whose data is still arriving.
    claimed: u8,
    got: u8,
    last: bool,
    parts: u8,
    status: Status,
    poisoned: u8,
    byte_en: [u64; SLOT_BEATS],
    data: [u8; SLOT_BYTES],
}

impl<St: Copy> Slot<St> {
    const fn new(state: St) -> Self {
        Slot {
            state,
            // A placeholder until the slot is used: every byte zero.
            req: Request { attr: 0, ..Request::new(crate::upli::Command::Read, 0, 0, 0, 0, 0) },
            generation: 0,
            // Read only while the slot is outstanding.
            deadline: 0,
            claimed: 0,
            got: 0,
            last: false,
            parts: 0,
            status: Status::Okay,
            poisoned: 0,
            byte_en: [0; SLOT_BEATS],
            data: [0; SLOT_BYTES],
        }
    }

    /// The data of `beats` beats, with the window `(first, len)`.
    fn lend(&self, beats: u8, (first, len): (usize, usize)) -> Data<'_> {
        let n = usize::from(beats).min(SLOT_BEATS);
        Data {
            beats: self.data.get(..n * BEAT_LEN).unwrap_or(&[]),
            byte_en: self.byte_en.get(..n).unwrap_or(&[]),
            poisoned: self.poisoned,
            first,
            len,
        }
    }

    /// Copies `bytes` in from lane `first`, the rest of the first `lent` lanes zero, and enables
    /// exactly those bytes. `lent` covers every lane the slot may lend before it is filled again:
    /// the whole slot for a request (its response's beats may be set by the response), the
    /// response's own beats for a response.
    fn fill(&mut self, first: usize, bytes: &[u8], lent: usize) {
        self.poisoned = 0;
        let end = first + bytes.len();
        match self.data.get_mut(first..end) {
            Some(dst) => _ = copy_prefix(dst, bytes),
            None => self.data = [0; SLOT_BYTES],
        }
        self.data.get_mut(..first).unwrap_or(&mut []).fill(0);
        self.data.get_mut(end..lent.max(end)).unwrap_or(&mut []).fill(0);
        // Beat b covers lanes [64 b, 64 b + 64): the enabled ones are those in [first, end).
        for (b, e) in self.byte_en.iter_mut().enumerate() {
            // (`max` and `min`, not `clamp`, which asserts its bounds and would link a panic.)
            let (lo, hi) =
                (first.max(b * BEAT_LEN).min((b + 1) * BEAT_LEN), end.max(b * BEAT_LEN).min((b + 1) * BEAT_LEN));
            let n = hi - lo;
            *e = if n == 0 { 0 } else { (u64::MAX >> (BEAT_LEN - n)) << (lo - b * BEAT_LEN) };
        }
    }

    /// Stores a received half-flit of an item whose first beat is beat `base` of the slot;
    /// returns the slot beat it completed, if it was a beat's second half.
    fn put(&mut self, half: Half<'_>, base: u8) -> Option<u8> {
        match half {
            Half::Data { beat, second, bytes } => {
                let at = usize::from(base + beat) * BEAT_LEN + if second { 32 } else { 0 };
                if let Some(dst) = self.data.get_mut(at..at + 32) {
                    copy_prefix(dst, bytes);
                }
                second.then_some(base + beat)
            }
            Half::Poisoned { beat, second } => {
                if usize::from(base + beat) < SLOT_BEATS {
                    self.poisoned |= 1 << (base + beat);
                }
                // Its lanes read as zeros, never as what the slot held for an earlier transfer.
                let at = usize::from(base + beat) * BEAT_LEN + if second { 32 } else { 0 };
                self.data.get_mut(at..at + 32).unwrap_or(&mut []).fill(0);
                second.then_some(base + beat)
            }
            Half::ByteEnables { bytes } => {
                for beat in 0..self.req.data_beats() {
                    if let Some(e) = self.byte_en.get_mut(usize::from(beat)) {
                        *e = beat_byte_enables(bytes, self.req.addr, beat);
                    }
                }
                None
            }
        }
    }
}

/// The byte lanes of a request's data beats that [`UpliPort::request`] takes and
/// [`Data::bytes`] gives (module doc): `req.bytes()` lanes from the address's for a read, a write
/// or a single-operand atomic, lanes 0..64 for a double-operand atomic, whole beats for a vendor
/// command or Write Message; empty for a command without data.
pub fn request_lanes(req: &Request) -> core::ops::Range<usize> {
    let (first, len) = if req.cmd.has_data() { request_window(req) } else { (0, 0) };
    first..first + len
}

/// The byte lanes of a response's data beats that [`UpliPort::respond`] takes (at most) and
/// [`Data::bytes`] gives: a read's or single-operand atomic's `req.bytes()` lanes from the
/// address's, lanes 0..32 for a double-operand atomic, a vendor command's or Write Message's
/// whole beats; empty for a write-channel response.
pub fn response_lanes(req: &Request) -> core::ops::Range<usize> {
    let (first, len) = response_window(req, req.response_beats());
    first..first + len
}

/// Which lanes hold a request's data (module doc): `(first lane, length)`.
fn request_window(req: &Request) -> (usize, usize) {
    let lane = (req.addr % BEAT_LEN as u64) as usize;
    if req.cmd.is_vendor() || matches!(req.cmd, crate::upli::Command::WriteMessage) {
        (0, usize::from(req.data_beats()) * BEAT_LEN)
    } else if req.is_double_operand() {
        (0, BEAT_LEN)
    } else {
        // A single-operand atomic's elements too (ReqLen a multiple of the element, §2.8).
        (lane, req.bytes() as usize)
    }
}

/// Which lanes of `beats` response beats hold a response's data (module doc).
fn response_window(req: &Request, beats: u8) -> (usize, usize) {
    let lane = (req.addr % BEAT_LEN as u64) as usize;
    if beats == 0 || req.response_channel() == ResponseChannel::Write {
        (0, 0)
    } else if req.cmd.is_vendor() || matches!(req.cmd, crate::upli::Command::WriteMessage) {
        (0, usize::from(beats) * BEAT_LEN)
    } else if req.is_double_operand() {
        // The 32 bytes it updates, in the low 32 lanes (§2.8, Figure 2-24).
        (0, BEAT_LEN / 2)
    } else {
        // A single-operand atomic returns each element's old value in its lanes (§2.8).
        (lane, req.bytes() as usize)
    }
}

/// Whether a request's response beats are counted from the request (reads and standard atomics)
/// or set by the response itself (vendor commands and Write Messages, §2.7.4.6).
fn beats_from_request(req: &Request) -> bool {
    !(req.cmd.is_vendor() || matches!(req.cmd, crate::upli::Command::WriteMessage))
}

/// The beats the packer reads: request data from originator slots (by tag), response data from
/// completer slots (by slot, with [`RESPONSE_ID`]).
struct Beats<'a, const S: usize> {
    orig: &'a [Slot<Orig>; S],
    compl: &'a [Slot<Compl>; S],
}

impl<const S: usize> BeatSource for Beats<'_, S> {
    fn beat(&self, id: u32, beat: u8) -> Option<Beat<'_>> {
        let (slot, response) = if id & RESPONSE_ID != 0 {
            (self.compl.get((id & !RESPONSE_ID) as usize).map(|s| (&s.data, &s.byte_en))?, true)
        } else {
            (self.orig.get(id as usize).map(|s| (&s.data, &s.byte_en))?, false)
        };
        let at = usize::from(beat) * BEAT_LEN;
        let data = slot.0.get(at..)?.first_chunk::<BEAT_LEN>()?;
        let byte_en = if response { u64::MAX } else { *slot.1.get(usize::from(beat))? };
        Some(Beat { data, byte_en, error: false })
    }
}

/// The packer as the data link's source of TL flits.
struct Feed<'a, const S: usize> {
    packer: &'a mut Packer<16, 4, S>,
    beats: Beats<'a, S>,
}

impl<const S: usize> TlSource for Feed<'_, S> {
    fn has_flit(&self) -> bool {
        self.packer.has_work()
    }

    fn next_flit(&mut self, out: &mut TlFlit) -> bool {
        self.packer.has_work() && self.packer.pack(&self.beats, out).is_ok()
    }
}

/// One UALink accelerator port: UPLI Originator and Completer over the TL and DL (module doc).
///
/// `B` is TxReplay's storage, `N` its entries (as [`DataLink`]); `S` the slots each way (1 to
/// 2048): outstanding requests, and requests held by the completer. Size on a 64-bit host: the
/// default `UpliPort` (64 TxReplay entries inline, `S` = 32) 71 392 B, and 774 B more or less per
/// slot (module doc). [`UpliPort::new`] returns it by value: give it a home (a `static`, a `Box`)
/// rather than a small stack.
#[derive(Clone, Debug)]
pub struct UpliPort<B = [u8; REPLAY_ENTRY_LEN * 64], const N: usize = 64, const S: usize = 32> {
    cfg: PortConfig,
    dl: DataLink<B, N, 8>,
    service: MessageService<128>,
    packer: Packer<16, 4, S>,
    unpacker: Unpacker<16, 4>,
    orig: [Slot<Orig>; S],
    compl: [Slot<Compl>; S],
    /// Items whose data half-flits are owed, oldest first.
    incoming: heapless::Vec<Incoming, INCOMING>,
    /// Originator slots to report, in the order they ended.
    orig_events: heapless::Deque<u16, S>,
    /// Completer slots in the order their requests arrived (reported in that order once whole),
    /// and slots whose drop is to be reported.
    compl_order: heapless::Deque<u16, S>,
    /// Completer slots whose response the packer is sending.
    responding: heapless::Deque<u16, S>,
    /// DL message service events not yet reported.
    service_events: heapless::Deque<ServiceEvent, SERVICE_EVENTS>,
    /// Completer slots whose credits `start` withheld (dropped requests not yet reported): each
    /// one's credits go out when its drop is reported.
    withheld: u16,
    /// The embedder reported an RS fault and has not cleared it.
    rs_fault: bool,
    /// Since the link went down: whether [`QUIET_GROUPS`] control codeword groups arrived in a
    /// row (the partner went down and nothing older is still on the wire), the groups received in
    /// a row now, and the Idle flit times sent (saturating). The port may start again once it has
    /// heard the partner go quiet and sent [`QUIET_GROUPS`] Idle itself.
    heard_quiet: bool,
    idle_run: u8,
    idle_sent: u8,
    /// The Originator is in Isolation Mode (watchdog expired).
    isolated: bool,
    /// Whether the DL was enabled (DL NOP or Up), and Up, at the last check.
    was_enabled: bool,
    was_up: bool,
    /// Whether the port could carry requests at the last check, and when last reported.
    carrying: bool,
    reported: bool,
    /// The partner's Initial Credit Release Complete arrived since the link came up.
    partner_credits: bool,
    /// [`UpliPort::init`] ran (an [`UpliPort::EMPTY`] is not configured).
    configured: bool,
    now: u64,
    stats: PortStats,
}

impl<const L: usize, const N: usize, const S: usize> UpliPort<[u8; L], N, S> {
    /// A port with its TxReplay storage inline and every byte zero, so a `static` holding it
    /// lands in `.bss` (no flash, no start-up copy): in DL Fault with a configuration of zeros,
    /// refused by [`Self::start`] until [`Self::init`] configures it in place.
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize, const S: usize> UpliPort<B, N, S> {
    const SLOTS_OK: () = assert!(S >= 1 && S <= 2048, "1 to 2048 slots: a slot's number is its 11-bit ReqTag");

    /// A port in DL Fault (the reset state), with TxReplay in `storage`. Refused: `storage`
    /// shorter than `N` × [`REPLAY_ENTRY_LEN`] ([`Error::TooSmall`]), a PhysAccID wider than 10
    /// bits ([`Error::BadValue`]). (Built on the stack; see [`Self::init`] for building one in
    /// place.)
    pub fn new(cfg: PortConfig, storage: B) -> Result<Self, Error> {
        let mut port = Self::unconfigured(storage);
        port.init(cfg)?;
        Ok(port)
    }

    /// A port with every field zero but `storage`: DL Fault, a configuration of zeros.
    const fn unconfigured(storage: B) -> Self {
        let () = Self::SLOTS_OK;
        UpliPort {
            cfg: PortConfig::ZERO,
            dl: DataLink::unconfigured(storage),
            service: MessageService::EMPTY,
            packer: Packer::unconfigured(),
            unpacker: Unpacker::unconfigured(),
            orig: [Slot::new(Orig::Free); S],
            compl: [Slot::new(Compl::Free); S],
            incoming: heapless::Vec::new(),
            orig_events: heapless::Deque::new(),
            compl_order: heapless::Deque::new(),
            responding: heapless::Deque::new(),
            service_events: heapless::Deque::new(),
            withheld: 0,
            rs_fault: false,
            heard_quiet: false,
            idle_run: 0,
            idle_sent: 0,
            isolated: false,
            was_enabled: false,
            was_up: false,
            carrying: false,
            reported: false,
            partner_credits: false,
            configured: false,
            now: 0,
            stats: PortStats::ZERO,
        }
    }

    /// Makes this port what [`Self::new`]`(cfg, storage)` returns with its own storage, in place
    /// (without a second port on the stack), refused as `new` refuses (then nothing changed).
    /// Whatever the port held is forgotten without events. On an [`UpliPort::EMPTY`] in a
    /// `static`, this is how firmware builds a port.
    pub fn init(&mut self, cfg: PortConfig) -> Result<(), Error> {
        crate::error::fits(u64::from(cfg.acc), 10, "PhysAccID")?;
        self.dl.check_storage()?;
        self.dl.init(cfg.dl);
        self.service.init(cfg.service);
        self.packer.init(cfg.packer, TxCompressor::new(cfg.tx_indexing, true));
        self.unpacker.init(cfg.packer.auth, RxDecompressor::new(cfg.rx_indexing));
        self.orig.iter_mut().for_each(|s| *s = Slot::new(Orig::Free));
        self.compl.iter_mut().for_each(|s| *s = Slot::new(Compl::Free));
        self.incoming.clear();
        self.orig_events.clear();
        self.compl_order.clear();
        self.responding.clear();
        self.service_events.clear();
        self.withheld = 0;
        self.rs_fault = false;
        self.heard_quiet = true;
        self.idle_run = 0;
        self.idle_sent = QUIET_GROUPS;
        self.isolated = false;
        (self.was_enabled, self.was_up, self.carrying, self.reported) = (false, false, false, false);
        self.partner_credits = false;
        self.configured = true;
        self.now = 0;
        self.stats = PortStats::ZERO;
        self.cfg = cfg;
        Ok(())
    }

    /// Brings the port up (module doc): the link leaves its reset state and is enabled (DL NOP),
    /// the TL starts afresh with its free receive buffers advertised, Isolation Mode ends, and
    /// Channel 0 is asked for. Call it when [`Self::waiting_on`] says [`Waiting::Start`]. Refused
    /// with [`Error::State`] while the RS reports a fault ([`Self::rs_fault`]), after a link down
    /// until both ends are quiet ([`Waiting::Quiescing`]), and while the link is enabled (DL NOP
    /// or Up).
    pub fn start(&mut self) -> Result<(), Error> {
        if !self.configured {
            return Err(Error::State { needs: "a configured port (init)" });
        }
        if self.rs_fault {
            return Err(Error::State { needs: "no RS fault (rs_fault(false))" });
        }
        if !self.quiet() {
            return Err(Error::State { needs: "both ends quiet (four control codeword groups each way)" });
        }
        // Leaving the reset state: the RS reports no fault.
        self.dl.rs_fault(false);
        self.dl.enable()?;
        self.drop_mode();
        self.isolated = false;
        self.service.link_reset();
        if self.cfg.negotiate {
            self.dl.set_tl_channel(false, false);
            self.service.request_channel(CHANNEL_TL, true)?;
        } else {
            self.dl.set_tl_channel(true, true);
        }
        self.withheld = self.compl.iter().filter(|s| s.state != Compl::Free).count() as u16;
        self.advertise()?;
        self.after_link();
        Ok(())
    }

    /// The RS's fault indication (§6.7.1.1): a fault takes the link down (DL Fault) and keeps it
    /// there; clearing it takes DL Fault to DL Idle, from where [`Self::start`] brings it up.
    pub fn rs_fault(&mut self, fault: bool) {
        self.rs_fault = fault;
        self.dl.rs_fault(fault);
        self.after_link();
    }

    /// Management takes the link down (to leave Isolation Mode, or to reset it): error
    /// containment (§6.7.4.2), so the next flit goes out with its CRC inverted and the link goes
    /// to DL Idle; the partner, seeing the bad flit and then Idle, goes down too. Then
    /// [`Self::start`] both ports.
    pub fn take_link_down(&mut self) {
        self.dl.contain();
    }

    /// Issues `req` with `data` (module doc: a write's or single-operand atomic's `req.bytes()`
    /// bytes, a double-operand atomic's 64 bytes, a vendor command's or Write Message's whole
    /// beats; none for a command without data). The port sets ReqTag (returned) and
    /// ReqSrcPhysAccID. Refused: while the link is not enabled or the Originator is in Isolation
    /// Mode ([`Error::State`]), with every tag taken ([`Error::Full`]), data of the wrong length or
    /// a request that breaks §2.7 ([`Error::BadValue`]).
    pub fn request(&mut self, req: Request, data: &[u8]) -> Result<u16, Error> {
        if !matches!(self.dl.state(), LinkState::Nop | LinkState::Up) {
            return Err(Error::State { needs: "the link enabled (start)" });
        }
        if self.isolated {
            return Err(Error::State { needs: "the Originator out of Isolation Mode (a link reset)" });
        }
        let (first, len) = if req.cmd.has_data() { request_window(&req) } else { (0, 0) };
        if data.len() != len || first + len > SLOT_BYTES {
            return Err(Error::BadValue { field: "request data length", value: data.len() as u32 });
        }
        let tag = self.orig.iter().position(|s| s.state == Orig::Free).ok_or(Error::Full { queue: "request tags" })?;
        let req = Request { tag: tag as u16, src: self.cfg.acc, ..req };
        self.packer.push_request(tag as u32, req)?;
        let deadline = self.cfg.completion_timeout.map_or(u64::MAX, |t| self.now.saturating_add(t));
        if let Some(s) = self.orig.get_mut(tag) {
            s.fill(first, data, SLOT_BYTES);
            s.state = Orig::Outstanding;
            (s.req, s.deadline, s.status) = (req, deadline, Status::Okay);
            (s.claimed, s.got, s.last, s.parts) = (0, 0, false, 0);
        }
        self.stats.requests += 1;
        Ok(tag as u16)
    }

    /// Answers the request of `handle` with `status` and, for a read-channel response, its data:
    /// at most [`response_lanes`]`(&req).len()` bytes, fewer padded with zeros. Every request
    /// must be answered (§2.7.3): one never answered keeps its slot, and the credits of its
    /// buffers, for good. Refused: a handle this
    /// port does not hold ([`Error::State`]: answered, or dropped by a link down), data that does
    /// not fit, ISOLATE, which only a TL gives its own Originator, or a status code the tables
    /// reserve for a predefined command ([`Error::BadValue`]). A refused answer changes nothing.
    pub fn respond(&mut self, handle: Handle, status: Status, data: &[u8]) -> Result<(), Error> {
        let i = usize::from(handle.slot);
        let s = match self.compl.get_mut(i) {
            Some(s) if s.state == Compl::Held && s.generation == handle.generation => s,
            _ => return Err(Error::State { needs: "a request this port holds" }),
        };
        if status == Status::Isolate {
            return Err(Error::BadValue { field: "response status (ISOLATE is TL-local)", value: 0xF });
        }
        // The codes Tables 2-9 and 2-12 leave reserved are vendor-defined only for vendor
        // commands (Table 2-10).
        if matches!(status, Status::Vendor(_)) && !s.req.cmd.is_vendor() {
            return Err(Error::BadValue {
                field: "response status (reserved for a predefined command)",
                value: u32::from(status.code()),
            });
        }
        let mut rsp = Response::answering(&s.req);
        rsp.set_status(status);
        let (first, len) = response_window(&s.req, rsp.data_beats());
        if data.len() > len {
            return Err(Error::BadValue { field: "response data length", value: data.len() as u32 });
        }
        // Checked before the data goes in: a refused answer leaves the request's data as it was.
        rsp.check()?;
        // A write's response lends no lanes: nothing to clear.
        s.fill(first, data, usize::from(rsp.data_beats()) * BEAT_LEN);
        self.packer.push_response(RESPONSE_ID | u32::from(handle.slot), rsp)?;
        s.state = Compl::Responding;
        // Room for every slot: a slot is in the list at most once.
        let _ = self.responding.push_back(handle.slot);
        Ok(())
    }

    /// The data of a request this port holds.
    pub fn request_data(&self, handle: Handle) -> Option<Data<'_>> {
        let s = self.compl.get(usize::from(handle.slot))?;
        (s.state == Compl::Held && s.generation == handle.generation)
            .then(|| s.lend(s.req.data_beats(), request_window(&s.req)))
    }

    /// Fills the flit for this flit time (`now`, in flit times): DL messages pumped, TL flits
    /// packed, replays, NOPs. [`Transmitted::Idle`] (and `out` untouched) while the link is down.
    pub fn poll_transmit(&mut self, now: u64, out: &mut [u8; FLIT_LEN]) -> Transmitted {
        self.now = self.now.max(now);
        self.service.pump(self.dl.messages());
        if self.cfg.negotiate {
            let (tx, rx) = self.service.tl_gates();
            self.dl.set_tl_channel(tx, rx);
        }
        let beats = Beats { orig: &self.orig, compl: &self.compl };
        let sent = self.dl.transmit(&mut Feed { packer: &mut self.packer, beats }, out);
        if sent == Transmitted::Idle {
            self.idle_sent = self.idle_sent.saturating_add(1);
        }
        self.release_answered();
        self.after_link();
        sent
    }

    /// Takes the flit that arrived this flit time.
    pub fn handle_flit(&mut self, flit: &[u8; FLIT_LEN]) -> Received {
        self.idle_run = 0;
        let mut got = Delivered::default();
        let r = self.dl.receive(flit, &mut got);
        for w in &got.alt {
            // A malformed DL message is counted by the service; the link carries on.
            if let Ok(Some(ev)) = self.service.receive(*w) {
                if self.service_events.push_back(ev).is_err() {
                    self.stats.service_events_lost += 1;
                }
            }
        }
        for f in &got.flits {
            if !self.take_tl(f) {
                // The receiver stopped (§5.3); the rest waits for the link to come back.
                break;
            }
        }
        self.after_link();
        r
    }

    /// A flit arrived that failed its CRC or that the PCS could not correct. Each flit time is
    /// one call of [`Self::handle_flit`], this, or [`Self::handle_idle`]: a flit lost without
    /// this call is a gap the data link cannot always see (seven or more in a row can alias the
    /// 3-bit `flitSeqLo`: the [`dl::link`](crate::dl::link) module doc).
    pub fn handle_lost(&mut self) -> Received {
        self.idle_run = 0;
        let r = self.dl.receive_lost();
        self.after_link();
        r
    }

    /// The partner sent Idle or a control codeword group this flit time (no flit): one control
    /// codeword group per call. Four in a row take DL Up down (§6.7.1.4), and show a port whose
    /// link went down that its partner is down too ([`Waiting::Quiescing`]).
    pub fn handle_idle(&mut self) {
        self.idle_run = self.idle_run.saturating_add(1);
        self.heard_quiet |= self.idle_run >= QUIET_GROUPS;
        self.dl.receive_control();
        self.after_link();
    }

    /// The earliest flit time at which [`Self::handle_timeout`] has a request to end, if any.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.orig.iter().filter(|s| s.state == Orig::Outstanding).map(|s| s.deadline).filter(|&d| d != u64::MAX).min()
    }

    /// Runs the watchdog at `now`: a request whose deadline has passed puts the Originator in
    /// Isolation Mode (every outstanding request fails) or, without isolation, ends that request.
    pub fn handle_timeout(&mut self, now: u64) {
        self.now = self.now.max(now);
        let overdue = |s: &Slot<Orig>, now| s.state == Orig::Outstanding && s.deadline <= now;
        if !self.orig.iter().any(|s| overdue(s, self.now)) {
            return;
        }
        if self.cfg.isolate_on_timeout {
            self.isolated = true;
            self.stats.isolations += 1;
            // Isolation Mode blocks every request not yet issued (§3.1.3): the ones still queued
            // in the TL never go out (each ends with this Timeout below).
            self.packer.cancel_queued_requests();
        }
        for (i, s) in self.orig.iter_mut().enumerate() {
            if self.isolated && s.state.takes_responses() || overdue(s, self.now) {
                s.state = match s.state {
                    Orig::Outstanding if !self.isolated => Orig::TimedOut { reported: false },
                    // Already reported as timed out: isolation frees its tag.
                    Orig::TimedOut { reported: true } => Orig::Free,
                    Orig::TimedOut { reported: false } => Orig::TimedOutAnswered,
                    _ => Orig::Failed(Failure::Timeout),
                };
                if s.state != Orig::Free && s.state != Orig::TimedOutAnswered {
                    let _ = self.orig_events.push_back(i as u16);
                }
            }
        }
    }

    /// The next event. Data it lends stays valid until the next call that changes the port.
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        if self.carrying != self.reported {
            self.reported = self.carrying;
            return Some(Event::Link { up: self.carrying });
        }
        if let Some(ev) = self.service_events.pop_front() {
            return Some(Event::Service(ev));
        }
        if let Some(i) = self.orig_events.pop_front() {
            return self.report_orig(i);
        }
        // Requests in arrival order: the oldest still arriving holds back the ones behind it.
        let i = loop {
            let i = *self.compl_order.front()?;
            match self.compl.get(usize::from(i)).map(|s| s.state) {
                Some(Compl::Arriving) => return None,
                Some(Compl::Ready | Compl::Dropped) => break i,
                _ => {
                    self.compl_order.pop_front();
                }
            }
        };
        self.compl_order.pop_front();
        let s = self.compl.get_mut(usize::from(i))?;
        let handle = Handle { slot: i, generation: s.generation };
        if s.state == Compl::Dropped {
            s.state = Compl::Free;
            s.generation = s.generation.wrapping_add(1);
            let req = s.req;
            self.stats.dropped += 1;
            if self.withheld > 0 {
                // `start` advertised the free slots only: this one's credits go out now.
                self.withheld -= 1;
                let _ = self.packer.owed.release(Class::ReqCmd, Target::Pool, 1);
                let _ = self.packer.owed.release(Class::ReqData, Target::Pool, SLOT_BEATS as u16);
            }
            return Some(Event::Dropped { handle, req });
        }
        s.state = Compl::Held;
        let s = &*s;
        Some(Event::Request { handle, req: s.req, data: s.lend(s.req.data_beats(), request_window(&s.req)) })
    }

    /// Why the port moves nothing now, or `None` when it can (module doc).
    pub fn waiting_on(&self) -> Option<Waiting> {
        let queued = !self.packer.is_idle();
        match self.dl.stall() {
            Some(Stall::Fault | Stall::Idle) if !self.rs_fault => {
                Some(if self.quiet() { Waiting::Start } else { Waiting::Quiescing })
            }
            Some(Stall::Replay) if !queued => None,
            Some(stall) => Some(Waiting::Link(stall)),
            None if self.isolated => Some(Waiting::Isolated),
            None if queued && !self.packer.has_work() => {
                Some(if self.partner_credits { Waiting::Credits } else { Waiting::PartnerCredits })
            }
            None => None,
        }
    }

    /// Whether the port carries requests now: DL Up and Channel 0 online both ways.
    pub fn is_up(&self) -> bool {
        self.carrying
    }

    /// Whether the Originator is in Isolation Mode (module doc).
    pub fn is_isolated(&self) -> bool {
        self.isolated
    }

    /// Tags taken: requests issued and not yet ended, and timed-out ones whose late response has
    /// not arrived whole.
    pub fn outstanding(&self) -> usize {
        self.orig.iter().filter(|s| s.state != Orig::Free).count()
    }

    /// Whether nothing is outstanding or held, nothing waits to be sent, and nothing is
    /// unacknowledged: what a simulator may skip flit times on (with its partner alike).
    pub fn is_quiet(&self) -> bool {
        self.outstanding() == 0
            && self.compl.iter().all(|s| s.state == Compl::Free)
            && self.packer.is_idle()
            && self.dl.unacknowledged() == 0
    }

    /// Counters.
    pub fn stats(&self) -> &PortStats {
        &self.stats
    }

    /// The settings.
    pub fn config(&self) -> &PortConfig {
        &self.cfg
    }

    /// The data link (link state, statistics).
    pub fn link(&self) -> &DataLink<B, N, 8> {
        &self.dl
    }

    /// The DL message service (the partner's Device ID and port number, channels, UART fill).
    pub fn service(&self) -> &MessageService<128> {
        &self.service
    }

    /// The DL message service, to use it (ask for the partner's Device ID, write and read the DL
    /// UART stream).
    pub fn service_mut(&mut self) -> &mut MessageService<128> {
        &mut self.service
    }

    /// The TL packer (credits held and owed, statistics).
    pub fn packer(&self) -> &Packer<16, 4, S> {
        &self.packer
    }

    /// The TL unpacker.
    pub fn unpacker(&self) -> &Unpacker<16, 4> {
        &self.unpacker
    }

    /// Whether both ends have been quiet long enough since the link went down (`start`).
    fn quiet(&self) -> bool {
        self.heard_quiet && self.idle_sent >= QUIET_GROUPS
    }

    /// Reports originator slot `i`, freeing its tag unless a timed-out request's late response
    /// is still to come.
    fn report_orig(&mut self, i: u16) -> Option<Event<'_>> {
        let s = self.orig.get_mut(usize::from(i))?;
        let (tag, req) = (i, s.req);
        let why = match s.state {
            Orig::Done => {
                s.state = Orig::Free;
                self.stats.responses += 1;
                let beats = if beats_from_request(&req) { req.response_beats() } else { s.got.count_ones() as u8 };
                let s = &*s;
                return Some(Event::Response {
                    tag,
                    req,
                    status: s.status,
                    data: s.lend(beats, response_window(&req, beats)),
                });
            }
            Orig::Failed(why) => {
                s.state = Orig::Free;
                why
            }
            Orig::TimedOut { reported: false } => {
                s.state = Orig::TimedOut { reported: true };
                Failure::Timeout
            }
            Orig::TimedOutAnswered => {
                s.state = Orig::Free;
                Failure::Timeout
            }
            _ => return None,
        };
        self.stats.failed += 1;
        Some(Event::Failed { tag, req, why })
    }

    /// Frees the completer slots whose response the packer has sent whole, returning their
    /// request's credits.
    fn release_answered(&mut self) {
        for _ in 0..self.responding.len() {
            let Some(i) = self.responding.pop_front() else { break };
            if self.packer.holds_data(RESPONSE_ID | u32::from(i)) {
                let _ = self.responding.push_back(i);
                continue;
            }
            if let Some(s) = self.compl.get_mut(usize::from(i)) {
                let req = s.req;
                s.state = Compl::Free;
                s.generation = s.generation.wrapping_add(1);
                self.return_credits(Class::ReqCmd, Class::ReqData, req.pool, req.vc, req.data_beats());
            }
        }
    }

    /// Returns one command credit and `beats` data credits of the kind an item used.
    fn return_credits(&mut self, cmd: Class, data: Class, pool: bool, vc: u8, beats: u8) {
        let t = Target::of(pool, vc);
        // The counts never exceed what was advertised, so they cannot overflow.
        let _ = self.packer.owed.release(cmd, t, 1);
        if beats > 0 {
            let _ = self.packer.owed.release(data, t, u16::from(beats));
        }
    }

    /// Advertises the free completer slots' buffers and every originator slot's, as pool credits,
    /// then Initial Credit Release Complete.
    fn advertise(&mut self) -> Result<(), Error> {
        let free = (S as u16).saturating_sub(self.withheld);
        let (cmds, beats) = (S as u16, (S * SLOT_BEATS) as u16);
        for (class, n) in [
            (Class::ReqCmd, free),
            (Class::ReqData, free * SLOT_BEATS as u16),
            (Class::RspCmd, cmds),
            (Class::RspData, beats),
        ] {
            if n > 0 {
                self.packer.owed.release(class, Target::Pool, n)?;
            }
        }
        self.packer.send_message(Message::new(MessageType::InitialCreditReleaseComplete))
    }

    /// Checks whether the port still carries requests; on the link leaving DL NOP or Up, Drop
    /// Mode.
    fn after_link(&mut self) {
        let state = self.dl.state();
        let (enabled, up) = (matches!(state, LinkState::Nop | LinkState::Up), state == LinkState::Up);
        if self.was_enabled && !enabled {
            if self.was_up {
                self.stats.link_downs += 1;
            }
            // Both ends go quiet before either starts again (`start`). Down by four control
            // codeword groups, this port has heard its partner go quiet already.
            self.heard_quiet = self.dl.down_reason() == Some(DownReason::PartnerDown);
            (self.idle_run, self.idle_sent) = (0, 0);
            self.drop_mode();
        }
        (self.was_enabled, self.was_up) = (enabled, up);
        self.carrying = up && self.dl.tl_channel() == (true, true);
    }

    /// Drop Mode (module doc): the TL flushed, outstanding requests failed, held ones dropped.
    fn drop_mode(&mut self) {
        self.packer.link_down(|_| {});
        self.unpacker.link_down(|_| {});
        self.incoming.clear();
        self.partner_credits = false;
        self.responding.clear();
        for (i, s) in self.orig.iter_mut().enumerate() {
            s.parts = 0;
            s.state = match s.state {
                Orig::Outstanding => {
                    let _ = self.orig_events.push_back(i as u16);
                    Orig::Failed(Failure::LinkDown)
                }
                Orig::TimedOut { reported: true } => Orig::Free,
                Orig::TimedOut { reported: false } => Orig::TimedOutAnswered,
                other => other,
            };
        }
        // Drops not yet reported keep their place; requests that arrived and were not reported
        // yet vanish, as do those being answered; those the user holds are dropped, in order.
        let order = core::mem::take(&mut self.compl_order);
        for i in order {
            if self.compl.get(usize::from(i)).is_some_and(|s| s.state == Compl::Dropped) {
                let _ = self.compl_order.push_back(i);
            }
        }
        for (i, s) in self.compl.iter_mut().enumerate() {
            match s.state {
                Compl::Held => {
                    s.state = Compl::Dropped;
                    let _ = self.compl_order.push_back(i as u16);
                }
                Compl::Dropped | Compl::Free => {}
                Compl::Arriving | Compl::Ready | Compl::Responding => {
                    s.state = Compl::Free;
                    s.generation = s.generation.wrapping_add(1);
                }
            }
        }
    }

    /// Takes one TL flit the link delivered; `false` if it was a TL receive error.
    fn take_tl(&mut self, f: &TlFlit) -> bool {
        let mut out = Unpacked::default();
        if self.unpacker.unpack(f, &mut out).is_err() {
            self.receive_error();
            return false;
        }
        for fc in &out.credits {
            // A grant beyond 65 535 credits of a kind is refused whole and changes nothing.
            let _ = self.packer.credits.grant(fc);
        }
        for item in &out.items {
            let ok = match *item {
                RxItem::Request { id, req } => self.arrived_request(id, req),
                RxItem::Response { id, rsp } => {
                    self.arrived_response(id, rsp);
                    true
                }
            };
            if !ok {
                return false;
            }
        }
        // By reference: the two halves copied into an array first cost a `memcpy` on a small core.
        for half in [&out.lower, &out.upper] {
            match *half {
                RxHalf::Data { id, beat, second, bytes } => self.arrived_half(id, Half::Data { beat, second, bytes }),
                RxHalf::Poisoned { id, beat, second } => self.arrived_half(id, Half::Poisoned { beat, second }),
                RxHalf::ByteEnables { id, bytes } => self.arrived_half(id, Half::ByteEnables { bytes }),
                RxHalf::Message(m) if m.ty == MessageType::InitialCreditReleaseComplete => self.partner_credits = true,
                RxHalf::Control | RxHalf::MandatoryNop | RxHalf::AuthTags | RxHalf::Message(_) => {}
            }
        }
        true
    }

    /// A TL receive error (§5.3): fatal for the receiver; error containment takes the link down.
    fn receive_error(&mut self) {
        self.stats.tl_errors += 1;
        self.dl.contain();
    }

    /// Notes that `id`'s data half-flits go to `owner` from beat `base` on; `false` if there is no
    /// room (more items owing data than the TL's sequencing allows: a receive error).
    fn expect_data(&mut self, id: u32, owner: Owner, base: u8, halves: u8) -> bool {
        halves == 0 || self.incoming.push(Incoming { id, owner, base, halves }).is_ok()
    }

    /// A request arrived: it takes a free completer slot, in arrival order; `false` if none is
    /// free (a receive error).
    fn arrived_request(&mut self, id: u32, req: Request) -> bool {
        if req.dst != self.cfg.acc {
            self.stats.misrouted += 1;
        }
        let halves = 2 * req.data_beats() + u8::from(req.cmd.has_byte_enables());
        let Some(i) = self.compl.iter().position(|s| s.state == Compl::Free) else {
            // The partner sent beyond the credits advertised.
            self.receive_error();
            return false;
        };
        if !self.expect_data(id, Owner::Completer(i as u16), 0, halves) {
            self.receive_error();
            return false;
        }
        if let Some(s) = self.compl.get_mut(i) {
            s.req = req;
            s.poisoned = 0;
            s.byte_en = [u64::MAX; SLOT_BEATS];
            s.state = if halves == 0 { Compl::Ready } else { Compl::Arriving };
        }
        if halves == 0 {
            self.stats.served += 1;
        }
        // Room for every slot: a slot is listed at most once.
        let _ = self.compl_order.push_back(i as u16);
        true
    }

    /// A response (or part of one) arrived: it belongs to the outstanding request of its tag, on
    /// that request's response channel. Anything else is stray: its data is taken and dropped.
    fn arrived_response(&mut self, id: u32, rsp: Response) {
        self.return_credits(Class::RspCmd, Class::RspData, rsp.pool(), rsp.vc(), rsp.data_beats());
        let (tag, base, last) = match rsp {
            Response::Read(r) => (r.tag, if r.num_beats == 0 { r.offset } else { 0 }, r.last),
            Response::Write(w) => (w.tag, 0, true),
        };
        let beats = rsp.data_beats();
        let taken = self.take_response(tag, rsp, base, beats, last);
        let owner = if taken { Owner::Originator(tag) } else { Owner::Discard };
        if !taken {
            self.stats.stray_responses += 1;
        }
        if !self.expect_data(id, owner, base, 2 * beats) {
            self.receive_error();
            return;
        }
        if taken {
            if let Some(s) = self.orig.get_mut(usize::from(tag)) {
                s.parts += u8::from(beats > 0);
            }
            self.settle(tag);
        }
    }

    /// Whether the outstanding request `tag` takes this response part (and records it).
    fn take_response(&mut self, tag: u16, rsp: Response, base: u8, beats: u8, last: bool) -> bool {
        let dst = match rsp {
            Response::Read(r) => r.dst,
            Response::Write(w) => w.dst,
        };
        // A response while the request's own data is still going out cannot be genuine, nor one
        // routed to another accelerator.
        if self.isolated
            || rsp.status() == Status::Isolate
            || dst != self.cfg.acc
            || self.packer.holds_data(u32::from(tag))
        {
            return false;
        }
        let Some(s) = self.orig.get_mut(usize::from(tag)) else { return false };
        if !s.state.takes_responses() {
            return false;
        }
        let req = s.req;
        let channel = match rsp {
            Response::Read(_) => ResponseChannel::Read,
            Response::Write(_) => ResponseChannel::Write,
        };
        // A vendor atomic may answer on either channel (§2.7.4.6).
        let vendor_atomic = req.cmd.is_vendor() && req.cmd.is_atomic();
        let limit = if beats_from_request(&req) { req.response_beats() } else { SLOT_BEATS as u8 };
        let mask = ((1u16 << beats) - 1) << base;
        if (channel != req.response_channel() && !vendor_atomic)
            || u16::from(base) + u16::from(beats) > u16::from(limit)
            || u16::from(s.claimed) & mask != 0
        {
            return false;
        }
        s.claimed |= mask as u8;
        if s.got == 0 && s.parts == 0 {
            s.byte_en = [u64::MAX; SLOT_BEATS];
            s.poisoned = 0;
        }
        if s.status == Status::Okay {
            s.status = rsp.status();
        }
        s.last |= last;
        // A write response carries no beats: it answers the request whole.
        if beats == 0 {
            s.got = u8::MAX;
        }
        true
    }

    /// Completes originator slot `tag` once every beat of its response has arrived.
    fn settle(&mut self, tag: u16) {
        let Some(s) = self.orig.get_mut(usize::from(tag)) else { return };
        let whole = if s.got == u8::MAX || !beats_from_request(&s.req) {
            s.got == u8::MAX || s.last
        } else {
            u32::from(s.got) == (1u32 << s.req.response_beats()) - 1
        };
        if !whole || s.parts > 0 {
            return;
        }
        if s.got == u8::MAX {
            s.got = 0;
        }
        s.state = match s.state {
            Orig::Outstanding => {
                let _ = self.orig_events.push_back(tag);
                Orig::Done
            }
            Orig::TimedOut { reported: true } => Orig::Free,
            Orig::TimedOut { reported: false } => Orig::TimedOutAnswered,
            other => other,
        };
    }

    /// Stores a data, poisoned or byte-enable half-flit where its item's data goes.
    fn arrived_half(&mut self, id: u32, half: Half<'_>) {
        let Some(k) = self.incoming.iter().position(|x| x.id == id) else { return };
        let Some(x) = self.incoming.get_mut(k) else { return };
        x.halves = x.halves.saturating_sub(1);
        let (owner, base, done) = (x.owner, x.base, x.halves == 0);
        if done {
            self.incoming.remove(k);
        }
        match owner {
            Owner::Completer(i) => {
                let Some(s) = self.compl.get_mut(usize::from(i)) else { return };
                s.put(half, 0);
                if done && s.state == Compl::Arriving {
                    s.state = Compl::Ready;
                    self.stats.served += 1;
                }
            }
            Owner::Originator(tag) => {
                let Some(s) = self.orig.get_mut(usize::from(tag)) else { return };
                if let Some(beat) = s.put(half, base) {
                    s.got |= 1u8.checked_shl(u32::from(beat)).unwrap_or(0);
                }
                if done {
                    s.parts = s.parts.saturating_sub(1);
                    self.settle(tag);
                }
            }
            Owner::Discard => {}
        }
    }
}

#[cfg(test)]
mod tests;
