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
//! [`UpliPort::poll_timeout`] / [`UpliPort::handle_timeout`] end requests whose response is
//! overdue ([`PortConfig::completion_timeout`]); time is the embedder's count of flit times.
//!
//! # Bring-up
//!
//! [`UpliPort::new`] checks the configuration and the TxReplay storage; [`UpliPort::start`] is
//! the whole bring-up in one call: the RS reports no fault, the management layer enables the
//! link (DL NOP), the port advertises its receive buffers as TL credits (UALink 1.0 §5.8, then
//! Initial Credit Release Complete) and asks its partner for Channel 0 (§6.4.3.2) with DL
//! messages. The link comes up (DL Up, §6.7) once both ports have started and seen each other's
//! NOP flits; requests issued before that wait. [`UpliPort::waiting_on`] says why nothing moves.
//!
//! # Data: the port copies
//!
//! [`UpliPort::request`] and [`UpliPort::respond`] copy the data they are given (at most 256
//! bytes) into the port's own slot for that request, so the caller's buffer is free again when
//! the call returns; nothing is lent. Received data is assembled into whole 64-byte beats (byte
//! enables applied after they arrive, poisoned beats marked) and lent in the event, as [`Data`],
//! until the next call that takes `&mut self`. A request's data stays readable
//! ([`UpliPort::request_data`]) until it is answered. (For zero-copy data, drive the lower objects:
//! [`Packer`] with a [`BeatSource`] and [`Packer::holds_data`].)
//!
//! # Tags and buffers
//!
//! The port has `S` slots each way. A request takes the free originator slot whose number is its
//! ReqTag, so at most `S` requests are outstanding; a request that arrives takes a completer slot
//! until its response has been sent. The port advertises exactly what its slots hold, as pool
//! credits (*project-defined*): `S` request commands and `4·S` request data beats, `S` response
//! commands and `4·S` response data beats. A request's credits go back to the partner when its
//! response has been packed (its slot is free again); a response's as soon as it has arrived whole
//! (its originator slot is reserved for it).
//!
//! # Link down
//!
//! When the data link leaves DL Up, the TL enters Drop Mode (§3.1.4.3) and the port does what the
//! text asks of an accelerator: the packer and unpacker drop what they hold ([`Packer::link_down`],
//! [`Unpacker::link_down`]), every outstanding request ends with [`Event::Failed`]
//! ([`Failure::LinkDown`]: the dummy Completion Timeout of Isolation Mode), and every request the
//! completer still holds ends with [`Event::Dropped`] (its handle is void; the partner fails it on
//! its side). Nothing is replayed above the DL: a request may or may not have been performed. New
//! requests are refused until the management layer recovers the link: [`UpliPort::start`] again,
//! which advertises the receive buffers afresh and negotiates Channel 0 again.
//!
//! # Memory
//!
//! Each slot pair (one originator and one completer slot, each with 256 bytes of data) costs
//! 782 B on a 64-bit host, on top of the data link and the TL. The default `UpliPort` (64
//! TxReplay entries inline, 32 slots each way) is 71 384 B; with 16 slots 58 872 B, with 64
//! slots 96 408 B.

use crate::Error;
use crate::dl::link::REPLAY_ENTRY_LEN;
use crate::dl::service::{CHANNEL_TL, MessageService, ServiceConfig, ServiceEvent};
use crate::dl::{DataLink, Delivered, DlConfig, FLIT_LEN, LinkState, Received, Stall, TlSource, Transmitted};
use crate::tl::compress::{Indexing, RxDecompressor, TxCompressor};
use crate::tl::credit::{Class, Target};
use crate::tl::flit::beat_byte_enables;
use crate::tl::{
    Beat, BeatSource, Message, MessageType, Packer, PackerConfig, Response, RxHalf, RxItem, TlFlit, Unpacked, Unpacker,
};
use crate::upli::{BEAT_LEN, MAX_TRANSFER, Request, Status};

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
    /// Flit times after which a request without its response ends with
    /// [`Failure::Timeout`]; `None`: only a link down ends it.
    pub completion_timeout: Option<u64>,
}

impl PortConfig {
    /// Accelerator `acc` with the defaults: default DL, no authentication, compressed responses,
    /// both caches indexed by destination, Channel 0 negotiated, no completion timeout.
    pub fn new(acc: u16) -> Self {
        PortConfig {
            acc,
            dl: DlConfig::default(),
            service: ServiceConfig::default(),
            packer: PackerConfig { auth: false, compress_responses: true },
            tx_indexing: Indexing::ByDst,
            rx_indexing: Indexing::ByDst,
            negotiate: true,
            completion_timeout: None,
        }
    }
}

/// Why a request ended without its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Failure {
    /// The link went down (Drop Mode): the request may or may not have been performed.
    LinkDown,
    /// No response within [`PortConfig::completion_timeout`]. The tag stays taken until the late
    /// response arrives or the link goes down, so it cannot be confused with a new request's.
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
    /// The transfer's bytes, from its address on (a request's `bytes()`; a read response's
    /// requested bytes).
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

    /// Whether beat `beat` arrived poisoned (OrigDataError / RdRspDataError).
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
    /// A request arrived whole, with its data. Answer it with [`UpliPort::respond`].
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
        /// The request, as sent.
        req: Request,
        /// The response's status (of its last part, for a read answered in parts).
        status: Status,
        /// The read data (empty for a write response).
        data: Data<'a>,
    },
    /// Request `tag` ended without its response.
    Failed {
        /// The request's tag.
        tag: u16,
        /// The request, as sent.
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
    /// The data link: [`Stall::Fault`] or [`Stall::Idle`] until [`UpliPort::start`] (or while
    /// the RS reports a fault), [`Stall::Training`] until the partner's NOP flits arrive,
    /// [`Stall::TlChannelClosed`] until Channel 0 is negotiated, [`Stall::Replay`] while TxReplay
    /// waits for acknowledgements.
    Link(Stall),
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
    /// Times the port left the state in which it carries requests.
    pub link_downs: u64,
    /// Responses that matched no outstanding request (late ones after a timeout included),
    /// dropped with their credits returned.
    pub stray_responses: u64,
    /// Requests that arrived with every completer slot taken (the partner exceeded the credits
    /// advertised), dropped with their credits returned.
    pub overruns: u64,
    /// TL receive errors (§5.3): each took the link down by error containment.
    pub tl_errors: u64,
    /// DL message service events dropped because [`SERVICE_EVENTS`] were waiting (poll events
    /// every flit time and none is lost: a flit carries at most five DL message words).
    pub service_events_lost: u64,
}

/// DL message service events the port keeps for [`UpliPort::poll_event`].
pub const SERVICE_EVENTS: usize = 16;

/// A response whose data half-flits are arriving: the unpacker's id for it, the half-flits it
/// still owes, and the beat of the transfer its first beat is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RxData {
    id: u32,
    halves: u8,
    base: u8,
}

/// An originator slot's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Orig {
    Free,
    /// Queued or sent, waiting for its response (or the rest of it).
    Outstanding {
        rx: Option<RxData>,
    },
    /// The response is complete; reported by the next `poll_event`.
    Done,
    /// Ended without response; reported by the next `poll_event`. `answered`: a timed-out
    /// request's late response has arrived meanwhile, so its tag is free once reported.
    Failed {
        why: Failure,
        answered: bool,
    },
    /// Reported as timed out; the tag waits for the late response or a link down.
    Abandoned,
}

/// A data-carrying half-flit, for whichever slot owes it.
#[derive(Clone, Copy, Debug)]
enum Half<'a> {
    Data { beat: u8, second: bool, bytes: &'a [u8; 32] },
    Poisoned { beat: u8 },
    ByteEnables { bytes: &'a [u8; 32] },
}

/// A completer slot's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compl {
    Free,
    /// Data half-flits of unpacker item `rx` still owed.
    Arriving {
        rx: u32,
        halves: u8,
    },
    /// Whole; reported by the next `poll_event`.
    Ready,
    /// Reported; waiting for `respond`.
    Held,
    /// Answered; the packer is sending the response.
    Responding,
    /// Dropped by a link down after it was reported; the drop is reported next.
    Dropped,
}

/// One transfer's data and its record.
#[derive(Clone, Copy, Debug)]
struct Slot<St> {
    state: St,
    req: Request,
    generation: u16,
    /// Deadline (originator) in flit times.
    deadline: u64,
    /// Beats received so far (originator) and the last response's status.
    beats: u8,
    status: Status,
    poisoned: u8,
    byte_en: [u64; SLOT_BEATS],
    data: [u8; SLOT_BYTES],
}

impl<St: Copy> Slot<St> {
    const fn new(state: St) -> Self {
        Slot {
            state,
            req: Request::new(crate::upli::Command::Read, 0, 0, 0, 0, 0),
            generation: 0,
            deadline: u64::MAX,
            beats: 0,
            status: Status::Okay,
            poisoned: 0,
            byte_en: [0; SLOT_BEATS],
            data: [0; SLOT_BYTES],
        }
    }

    /// The data of `beats` beats with the transfer window of `req`.
    fn lend(&self, beats: u8, len: u64) -> Data<'_> {
        let n = usize::from(beats).min(SLOT_BEATS);
        Data {
            beats: self.data.get(..n * BEAT_LEN).unwrap_or(&[]),
            byte_en: self.byte_en.get(..n).unwrap_or(&[]),
            poisoned: self.poisoned,
            first: (self.req.addr % BEAT_LEN as u64) as usize,
            len: len.min(SLOT_BYTES as u64) as usize,
        }
    }

    /// Copies `bytes` in at the lane of `addr`, the rest zero, and enables exactly those bytes.
    fn fill(&mut self, addr: u64, bytes: &[u8]) {
        self.poisoned = 0;
        let (first, end) = ((addr % BEAT_LEN as u64) as usize, (addr % BEAT_LEN as u64) as usize + bytes.len());
        match self.data.get_mut(first..end) {
            Some(dst) => dst.copy_from_slice(bytes),
            None => self.data = [0; SLOT_BYTES],
        }
        self.data.get_mut(..first).unwrap_or(&mut []).fill(0);
        self.data.get_mut(end..).unwrap_or(&mut []).fill(0);
        // Beat b covers lanes [64 b, 64 b + 64): the enabled ones are those in [first, end).
        for (b, e) in self.byte_en.iter_mut().enumerate() {
            let (lo, hi) = (first.clamp(b * BEAT_LEN, (b + 1) * BEAT_LEN), end.clamp(b * BEAT_LEN, (b + 1) * BEAT_LEN));
            let n = hi - lo;
            *e = if n == 0 { 0 } else { (u64::MAX >> (BEAT_LEN - n)) << (lo - b * BEAT_LEN) };
        }
    }

    /// Stores a received half-flit of the item whose first beat is beat `base` of the slot.
    fn put(&mut self, half: Half<'_>, base: u8) {
        match half {
            Half::Data { beat, second, bytes } => {
                let at = usize::from(base + beat) * BEAT_LEN + if second { 32 } else { 0 };
                if let Some(dst) = self.data.get_mut(at..at + 32) {
                    dst.copy_from_slice(bytes);
                }
            }
            Half::Poisoned { beat } => {
                if usize::from(base + beat) < SLOT_BEATS {
                    self.poisoned |= 1 << (base + beat);
                }
            }
            Half::ByteEnables { bytes } => {
                for beat in 0..self.req.data_beats() {
                    if let Some(e) = self.byte_en.get_mut(usize::from(beat)) {
                        *e = beat_byte_enables(bytes, self.req.addr, beat);
                    }
                }
            }
        }
    }
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

    fn next_flit(&mut self) -> Option<TlFlit> {
        if !self.packer.has_work() {
            return None;
        }
        let mut f = TlFlit::default();
        self.packer.pack(&self.beats, &mut f).ok()?;
        Some(f)
    }
}

/// One UALink accelerator port: UPLI Originator and Completer over the TL and DL (module doc).
///
/// `B` is TxReplay's storage, `N` its entries (as [`DataLink`]); `S` the slots each way (1 to
/// 2048): outstanding requests, and requests held by the completer. Size on a 64-bit host: the
/// default `UpliPort` (64 TxReplay entries inline, `S` = 32) 71 384 B, and 782 B more or less per
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
    /// Originator slots to report, in the order they ended.
    orig_events: heapless::Deque<u16, S>,
    /// Completer slots to report (arrived or dropped), in order.
    compl_events: heapless::Deque<u16, S>,
    /// Completer slots whose response the packer is sending.
    responding: heapless::Deque<u16, S>,
    /// DL message service events not yet reported.
    service_events: heapless::Deque<ServiceEvent, SERVICE_EVENTS>,
    /// Whether the DL was Up at the last check.
    was_up: bool,
    /// Whether the port could carry requests at the last check, and when last reported.
    carrying: bool,
    reported: bool,
    /// The partner's Initial Credit Release Complete arrived since the link came up.
    partner_credits: bool,
    /// The unpacker id and slot of the last data half-flit.
    last_owner: Option<(u32, Owner)>,
    now: u64,
    stats: PortStats,
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize, const S: usize> UpliPort<B, N, S> {
    const SLOTS_OK: () = assert!(S >= 1 && S <= 2048, "1 to 2048 slots: a slot's number is its 11-bit ReqTag");

    /// A port in DL Fault, with TxReplay in `storage`. Refused: `storage` shorter than
    /// `N` × [`REPLAY_ENTRY_LEN`] ([`Error::TooSmall`]), a PhysAccID wider than 10 bits
    /// ([`Error::BadValue`]).
    pub fn new(cfg: PortConfig, storage: B) -> Result<Self, Error> {
        let () = Self::SLOTS_OK;
        crate::error::fits(u64::from(cfg.acc), 10, "PhysAccID")?;
        Ok(UpliPort {
            dl: DataLink::try_new(cfg.dl, storage)?,
            service: MessageService::new(cfg.service),
            packer: Packer::new(cfg.packer, TxCompressor::new(cfg.tx_indexing, true)),
            unpacker: Unpacker::new(cfg.packer.auth, RxDecompressor::new(cfg.rx_indexing)),
            orig: [Slot::new(Orig::Free); S],
            compl: [Slot::new(Compl::Free); S],
            orig_events: heapless::Deque::new(),
            compl_events: heapless::Deque::new(),
            responding: heapless::Deque::new(),
            service_events: heapless::Deque::new(),
            was_up: false,
            carrying: false,
            reported: false,
            partner_credits: false,
            last_owner: None,
            now: 0,
            stats: PortStats::default(),
            cfg,
        })
    }

    /// Brings the port up (module doc): the RS reports no fault, the link is enabled (DL NOP),
    /// the TL starts afresh with its receive buffers advertised, and Channel 0 is asked for.
    /// Refused with [`Error::State`] while the link is already enabled (DL NOP or Up).
    pub fn start(&mut self) -> Result<(), Error> {
        self.dl.rs_fault(false);
        self.dl.enable()?;
        self.drop_mode();
        self.service.link_reset();
        if self.cfg.negotiate {
            self.dl.set_tl_channel(false, false);
            self.service.request_channel(CHANNEL_TL, true)?;
        } else {
            self.dl.set_tl_channel(true, true);
        }
        self.advertise()
    }

    /// The RS's fault indication (§6.7.1.1): a fault takes the link down (DL Fault).
    pub fn rs_fault(&mut self, fault: bool) {
        self.dl.rs_fault(fault);
        self.after_link();
    }

    /// Issues `req` with `data` (a command with data: exactly `req.bytes()` bytes, from its
    /// address on, each enabled; otherwise none). The port sets ReqTag (returned) and
    /// ReqSrcPhysAccID. Refused: while the link is not enabled ([`Error::State`]: Drop Mode, or
    /// before [`Self::start`]), with every tag taken ([`Error::Full`]), data of the wrong length
    /// or a request that breaks §2.7 ([`Error::BadValue`]).
    pub fn request(&mut self, req: Request, data: &[u8]) -> Result<u16, Error> {
        if !matches!(self.dl.state(), LinkState::Nop | LinkState::Up) {
            return Err(Error::State { needs: "the link enabled (start)" });
        }
        let want = if req.cmd.has_data() { req.bytes() } else { 0 };
        if data.len() as u64 != want {
            return Err(Error::BadValue { field: "request data length", value: data.len() as u32 });
        }
        let tag = self.orig.iter().position(|s| s.state == Orig::Free).ok_or(Error::Full { queue: "request tags" })?;
        let req = Request { tag: tag as u16, src: self.cfg.acc, ..req };
        self.packer.push_request(tag as u32, req)?;
        let deadline = self.cfg.completion_timeout.map_or(u64::MAX, |t| self.now.saturating_add(t));
        if let Some(s) = self.orig.get_mut(tag) {
            s.fill(req.addr, data);
            s.state = Orig::Outstanding { rx: None };
            (s.req, s.deadline, s.beats, s.status) = (req, deadline, 0, Status::Okay);
        }
        self.stats.requests += 1;
        Ok(tag as u16)
    }

    /// Answers the request of `handle` with `status` and, for a read-channel response, its data:
    /// at most the beats the request asks for, from the request's address on (the rest zero).
    /// Refused: a handle this port does not hold ([`Error::State`]: answered, or dropped by a
    /// link down), data that does not fit ([`Error::BadValue`]).
    pub fn respond(&mut self, handle: Handle, status: Status, data: &[u8]) -> Result<(), Error> {
        let i = usize::from(handle.slot);
        let s = match self.compl.get_mut(i) {
            Some(s) if s.state == Compl::Held && s.generation == handle.generation => s,
            _ => return Err(Error::State { needs: "a request this port holds" }),
        };
        let mut rsp = Response::answering(&s.req);
        rsp.set_status(status);
        let room = (usize::from(rsp.data_beats()) * BEAT_LEN).saturating_sub((s.req.addr % BEAT_LEN as u64) as usize);
        if data.len() > room {
            return Err(Error::BadValue { field: "response data length", value: data.len() as u32 });
        }
        let addr = s.req.addr;
        s.fill(addr, data);
        self.packer.push_response(RESPONSE_ID | u32::from(handle.slot), rsp)?;
        s.state = Compl::Responding;
        // Room for every slot: a slot is in the list at most once.
        let _ = self.responding.push_back(handle.slot);
        Ok(())
    }

    /// The data of a request this port holds.
    pub fn request_data(&self, handle: Handle) -> Option<Data<'_>> {
        let s = self.compl.get(usize::from(handle.slot))?;
        (s.state == Compl::Held && s.generation == handle.generation).then(|| s.lend(s.req.data_beats(), s.req.bytes()))
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
        self.release_answered();
        self.after_link();
        sent
    }

    /// Takes the flit that arrived this flit time.
    pub fn handle_flit(&mut self, flit: &[u8; FLIT_LEN]) -> Received {
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
            self.take_tl(f);
        }
        self.after_link();
        r
    }

    /// A flit arrived that failed its CRC or that the PCS could not correct.
    pub fn handle_lost(&mut self) -> Received {
        let r = self.dl.receive_lost();
        self.after_link();
        r
    }

    /// The partner sent Idle or a control codeword group this flit time (no flit).
    pub fn handle_idle(&mut self) {
        self.dl.receive_control();
        self.after_link();
    }

    /// The earliest flit time at which [`Self::handle_timeout`] ends a request, if any.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.orig
            .iter()
            .filter(|s| matches!(s.state, Orig::Outstanding { .. }))
            .map(|s| s.deadline)
            .filter(|&d| d != u64::MAX)
            .min()
    }

    /// Ends every request whose deadline is at or before `now` with [`Failure::Timeout`].
    pub fn handle_timeout(&mut self, now: u64) {
        self.now = self.now.max(now);
        for (i, s) in self.orig.iter_mut().enumerate() {
            if matches!(s.state, Orig::Outstanding { .. }) && s.deadline <= self.now {
                s.state = Orig::Failed { why: Failure::Timeout, answered: false };
                let _ = self.orig_events.push_back(i as u16);
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
        // Listed slots are Ready or Dropped (`drop_mode` rebuilds the list); others are skipped.
        let i = loop {
            let i = self.compl_events.pop_front()?;
            if matches!(self.compl.get(usize::from(i)).map(|s| s.state), Some(Compl::Ready | Compl::Dropped)) {
                break i;
            }
        };
        let s = self.compl.get_mut(usize::from(i))?;
        let handle = Handle { slot: i, generation: s.generation };
        if s.state == Compl::Dropped {
            s.state = Compl::Free;
            s.generation = s.generation.wrapping_add(1);
            self.stats.dropped += 1;
            return Some(Event::Dropped { handle, req: s.req });
        }
        s.state = Compl::Held;
        let s = &*s;
        Some(Event::Request { handle, req: s.req, data: s.lend(s.req.data_beats(), s.req.bytes()) })
    }

    /// Why the port moves nothing now, or `None` when it can (module doc).
    pub fn waiting_on(&self) -> Option<Waiting> {
        let queued = !self.packer.is_idle();
        match self.dl.stall() {
            Some(Stall::Replay) if !queued => None,
            Some(stall) => Some(Waiting::Link(stall)),
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

    /// Requests issued and not yet ended (reported timeouts whose tag waits included).
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

    /// The DL message service (Device ID, port number, the DL UART stream).
    pub fn service(&mut self) -> &mut MessageService<128> {
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

    /// Reports originator slot `i` and frees it (its tag is free again).
    fn report_orig(&mut self, i: u16) -> Option<Event<'_>> {
        let s = self.orig.get_mut(usize::from(i))?;
        let (tag, req) = (i, s.req);
        match s.state {
            Orig::Done => {
                s.state = Orig::Free;
                self.stats.responses += 1;
                let s = &*s;
                Some(Event::Response {
                    tag,
                    req,
                    status: s.status,
                    data: s.lend(req.response_beats(), if req.response_beats() == 0 { 0 } else { req.bytes() }),
                })
            }
            Orig::Failed { why, answered } => {
                s.state = if why == Failure::Timeout && !answered { Orig::Abandoned } else { Orig::Free };
                self.stats.failed += 1;
                Some(Event::Failed { tag, req, why })
            }
            _ => None,
        }
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

    /// Advertises every slot's buffers as pool credits, then Initial Credit Release Complete.
    fn advertise(&mut self) -> Result<(), Error> {
        let (cmds, beats) = (S as u16, (S * SLOT_BEATS) as u16);
        for (class, n) in
            [(Class::ReqCmd, cmds), (Class::ReqData, beats), (Class::RspCmd, cmds), (Class::RspData, beats)]
        {
            self.packer.owed.release(class, Target::Pool, n)?;
        }
        self.packer.send_message(Message::new(MessageType::InitialCreditReleaseComplete))
    }

    /// Checks whether the port still carries requests; on leaving DL Up, Drop Mode.
    fn after_link(&mut self) {
        let up = self.dl.state() == LinkState::Up;
        if self.was_up && !up {
            self.stats.link_downs += 1;
            self.drop_mode();
        }
        self.was_up = up;
        self.carrying = up && self.dl.tl_channel() == (true, true);
    }

    /// Drop Mode (module doc): the TL flushed, outstanding requests failed, held ones dropped.
    fn drop_mode(&mut self) {
        self.packer.link_down(|_| {});
        self.unpacker.link_down(|_| {});
        self.partner_credits = false;
        self.responding.clear();
        for (i, s) in self.orig.iter_mut().enumerate() {
            match s.state {
                Orig::Outstanding { .. } => {
                    s.state = Orig::Failed { why: Failure::LinkDown, answered: false };
                    let _ = self.orig_events.push_back(i as u16);
                }
                Orig::Abandoned => s.state = Orig::Free,
                Orig::Free | Orig::Done | Orig::Failed { .. } => {}
            }
        }
        // Drops not yet reported keep their place; requests that arrived and were not reported
        // yet vanish, as do those being answered; those the user holds are dropped, in order.
        let pending = core::mem::take(&mut self.compl_events);
        for i in pending {
            if self.compl.get(usize::from(i)).is_some_and(|s| s.state == Compl::Dropped) {
                let _ = self.compl_events.push_back(i);
            }
        }
        for (i, s) in self.compl.iter_mut().enumerate() {
            match s.state {
                Compl::Held => {
                    s.state = Compl::Dropped;
                    let _ = self.compl_events.push_back(i as u16);
                }
                Compl::Dropped | Compl::Free => {}
                Compl::Arriving { .. } | Compl::Ready | Compl::Responding => {
                    s.state = Compl::Free;
                    s.generation = s.generation.wrapping_add(1);
                }
            }
        }
    }

    /// Takes one TL flit the link delivered.
    fn take_tl(&mut self, f: &TlFlit) {
        let mut out = Unpacked::default();
        if self.unpacker.unpack(f, &mut out).is_err() {
            // §5.3: fatal for the receiver; error containment takes the link down.
            self.stats.tl_errors += 1;
            self.dl.contain();
            return;
        }
        for fc in &out.credits {
            // A grant beyond 65 535 credits of a kind is refused whole and changes nothing.
            let _ = self.packer.credits.grant(fc);
        }
        for item in &out.items {
            match *item {
                RxItem::Request { id, req } => self.arrived_request(id, req),
                RxItem::Response { id, rsp } => self.arrived_response(id, rsp),
            }
        }
        for half in [out.lower, out.upper] {
            match half {
                RxHalf::Data { id, beat, second, bytes } => self.arrived_half(id, Half::Data { beat, second, bytes }),
                RxHalf::Poisoned { id, beat, .. } => self.arrived_half(id, Half::Poisoned { beat }),
                RxHalf::ByteEnables { id, bytes } => self.arrived_half(id, Half::ByteEnables { bytes }),
                RxHalf::Message(m) if m.ty == MessageType::InitialCreditReleaseComplete => self.partner_credits = true,
                RxHalf::Control | RxHalf::MandatoryNop | RxHalf::AuthTags | RxHalf::Message(_) => {}
            }
        }
    }

    /// A request arrived: it takes a free completer slot.
    fn arrived_request(&mut self, id: u32, req: Request) {
        let Some(i) = self.compl.iter().position(|s| s.state == Compl::Free) else {
            self.stats.overruns += 1;
            self.return_credits(Class::ReqCmd, Class::ReqData, req.pool, req.vc, req.data_beats());
            return;
        };
        let halves = 2 * req.data_beats() + u8::from(req.cmd.has_byte_enables());
        if let Some(s) = self.compl.get_mut(i) {
            s.req = req;
            s.poisoned = 0;
            s.byte_en = [u64::MAX; SLOT_BEATS];
            s.state = if halves == 0 { Compl::Ready } else { Compl::Arriving { rx: id, halves } };
        }
        if halves == 0 {
            self.stats.served += 1;
            let _ = self.compl_events.push_back(i as u16);
        }
    }

    /// A response arrived: it belongs to the outstanding request of its tag, on that request's
    /// response channel.
    fn arrived_response(&mut self, id: u32, rsp: Response) {
        self.return_credits(Class::RspCmd, Class::RspData, rsp.pool(), rsp.vc(), rsp.data_beats());
        let (tag, base) = match rsp {
            Response::Read(r) => (r.tag, if r.num_beats == 0 { r.offset } else { 0 }),
            Response::Write(w) => (w.tag, 0),
        };
        // A response while the request's own data is still going out cannot be genuine.
        let sending = self.packer.holds_data(u32::from(tag));
        let s = match self.orig.get_mut(usize::from(tag)) {
            Some(s) if s.state == (Orig::Outstanding { rx: None }) && !sending => s,
            Some(s) => {
                match s.state {
                    Orig::Abandoned => s.state = Orig::Free,
                    Orig::Failed { why, .. } => s.state = Orig::Failed { why, answered: true },
                    _ => {}
                }
                self.stats.stray_responses += 1;
                return;
            }
            None => {
                self.stats.stray_responses += 1;
                return;
            }
        };
        let channel = match rsp {
            Response::Read(_) => crate::upli::ResponseChannel::Read,
            Response::Write(_) => crate::upli::ResponseChannel::Write,
        };
        let beats = rsp.data_beats();
        if channel != s.req.response_channel() || base + beats > s.req.response_beats() {
            self.stats.stray_responses += 1;
            return;
        }
        s.status = rsp.status();
        if beats == 0 {
            s.state = Orig::Done;
            let _ = self.orig_events.push_back(tag);
        } else {
            if s.beats == 0 {
                s.byte_en = [u64::MAX; SLOT_BEATS];
                s.poisoned = 0;
            }
            s.state = Orig::Outstanding { rx: Some(RxData { id, halves: 2 * beats, base }) };
        }
    }

    /// Stores a data, poisoned or byte-enable half-flit in the slot whose item `id` owes it.
    fn arrived_half(&mut self, id: u32, half: Half<'_>) {
        let Some(owner) = self.owner(id) else { return };
        self.last_owner = Some((id, owner));
        if let Owner::Completer(i) = owner {
            let i = usize::from(i);
            let Some(s) = self.compl.get_mut(i) else { return };
            s.put(half, 0);
            if let Compl::Arriving { rx, halves } = s.state {
                s.state = if halves <= 1 { Compl::Ready } else { Compl::Arriving { rx, halves: halves - 1 } };
            }
            if s.state == Compl::Ready {
                self.stats.served += 1;
                let _ = self.compl_events.push_back(i as u16);
            }
            return;
        }
        let Owner::Originator(i) = owner else { return };
        let Some(s) = self.orig.get_mut(usize::from(i)) else { return };
        let Orig::Outstanding { rx: Some(r) } = s.state else { return };
        s.put(half, r.base);
        let halves = r.halves.saturating_sub(1);
        if halves % 2 == 0 {
            s.beats = s.beats.saturating_add(1);
        }
        s.state = Orig::Outstanding { rx: (halves > 0).then_some(RxData { halves, ..r }) };
        if halves == 0 && s.beats >= s.req.response_beats() {
            s.state = Orig::Done;
            let _ = self.orig_events.push_back(i);
        }
    }

    /// The slot whose item `id` owes data half-flits. Consecutive half-flits mostly belong to one
    /// item, so the last answer is tried first.
    fn owner(&self, id: u32) -> Option<Owner> {
        let compl =
            |i: usize| self.compl.get(i).is_some_and(|s| matches!(s.state, Compl::Arriving { rx, .. } if rx == id));
        let orig = |i: usize| {
            self.orig.get(i).is_some_and(|s| matches!(s.state, Orig::Outstanding { rx: Some(r) } if r.id == id))
        };
        match self.last_owner {
            Some((last, Owner::Completer(i))) if last == id && compl(usize::from(i)) => {
                return Some(Owner::Completer(i));
            }
            Some((last, Owner::Originator(i))) if last == id && orig(usize::from(i)) => {
                return Some(Owner::Originator(i));
            }
            _ => {}
        }
        if let Some(i) = (0..S).find(|&i| compl(i)) {
            return Some(Owner::Completer(i as u16));
        }
        (0..S).find(|&i| orig(i)).map(|i| Owner::Originator(i as u16))
    }
}

/// The slot a data half-flit goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Completer(u16),
    Originator(u16),
}

#[cfg(test)]
mod tests;
