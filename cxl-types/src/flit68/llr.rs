//! CXL link-layer retry for 68B flits (CXL 3.x §4.2.7–§4.2.8, Tables 4-11 to 4-13): a sans-I/O
//! machine holding the link-layer retry buffer (LLRB, on `linklayer`'s go-back-N
//! [`ReplayBuffer`]), the local retry state machine (LRSM) of the receive direction and the
//! remote one (RRSM) that answers the peer.
//!
//! **Sequence numbers are implicit.** Every retryable flit — protocol, all-data, LLCRD, INIT and
//! IDE flits — takes the next LLRB entry (WrPtr); RETRY.Idle/Frame/Req/Ack take none. The
//! receiver counts error-free retryable flits in ESeq. On a CRC error it sends RETRY.Req with
//! ESeq, discards everything until a RETRY.Ack echoing its NUM_RETRY, and the sender replays
//! from LLRB\[ESeq\] right after that Ack. A Req or Ack goes as five RETRY.Frame flits followed by
//! it. Acknowledgements are counts: Ak = 1 in a protocol flit header acknowledges 8 flits (sent
//! once at least 8 are owed), an LLCRD's Full_Ack any number up to 255; each frees that many
//! LLRB entries. The LLRB never fills: no retryable flit while only one entry is free.
//!
//! | LRSM state | on | next |
//! |---|---|---|
//! | `LocalNormal` | error-free retryable flit | `LocalNormal`: ESeq + 1, NumAck + 1, NUM_RETRY = NUM_PHY_REINIT = 0, deliver |
//! | | CRC error | `LlrReq` |
//! | `LlrReq` | Req sequence sent | `LocalIdle`, NUM_RETRY + 1 |
//! | | NUM_RETRY = MAX | `PhyReinit` (NUM_PHY_REINIT + 1; [`Event::PhyReinit`]), or `Abort` when NUM_PHY_REINIT = MAX too |
//! | `LocalIdle` | RETRY.Ack echoing the Req's NUM_RETRY | `LocalNormal` (Empty = 1 also clears NUM_RETRY and NUM_PHY_REINIT) |
//! | | TIMEOUT flits transmitted | `LlrReq` (the Req again) |
//! | `PhyReinit` | [`Llr::handle_phy_reinit_done`] | `LlrReq`, NUM_RETRY = 0 |
//! | `Abort` | — | link failed |
//!
//! The RRSM goes to `LlrAck` on an error-free RETRY.Req sequence in any LRSM state, sends the
//! Ack sequence before anything else, rewinds the LLRB to the Req's ESeq and returns to
//! `RemoteNormal`. RETRY.Req and RETRY.Ack are acted on in every state, even right after a CRC
//! error.
//!
//! **Initialization** (§4.2.7): RETRY.Idle until an error-free flit arrives, then INIT.Param;
//! new flits only once the peer's INIT.Param has arrived as well ([`Llr::is_initialized`]).
//! A RETRY flit must also pass the static-bit check (every bit outside its fields clear);
//! one failing it counts as a CRC error (§4.2.2, §4.2.6). Other control flits' reserved bits
//! are ignored on receive.
//!
//! **All-data flits carry no header**, so only the receiver's unpacker knows one is due
//! ([`super::pack::Unpacker::expects_all_data`], passed to [`Llr::handle_flit`]), and no control
//! flit may be sent inside an all-data run: the sender says when one follows
//! ([`Llr::send`]), and the LLRB marks all-data flits so that a replay keeps its runs whole.
//!
//! *Project-defined* (the specification leaves these open or shows them only in figures):
//! * LLR Wrap Value W: sequence numbers run 0..=W ("value after which the counter wraps to 0");
//!   this machine's LLRB has `N` entries (22 to 255) and advertises W = N − 1. Before the peer's INIT.Param
//!   ESeq wraps at the default 9.
//! * A RETRY.Req or RETRY.Ack is accepted after at least one error-free RETRY.Frame directly
//!   before it (the sender always sends five; with the static-bit check an all-data flit cannot
//!   pass for a RETRY flit).
//! * [`Llr::handle_retrain`] (the virtual link state machine entering Retrain) resets the RRSM
//!   and asks for a replay at once, where §4.2.8.6 forces a retry on the next flit and Table
//!   4-12 passes through RETRY_PHY_REINIT until the retrain ends (the two meet: nothing is sent
//!   while the link retrains).
//! * The RETRY.Req carries NUM_RETRY before its increment; the Ack must echo that value.
//! * An LLCRD acknowledgement is sent when there is nothing else to send and at least two
//!   acknowledgements are owed (an idle link then stops after one LLCRD each way); busy links
//!   acknowledge with Ak in their protocol flits. Its credit fields are zero: credits ride in
//!   protocol flit headers, or in LLCRD flits the caller builds.
//! * A new protocol flit is admitted ([`Llr::can_send`]) only with room for it, four all-data
//!   flits after it and two entries to spare, so the last flit of a run still leaves two free
//!   (at two free entries only an acknowledging LLCRD goes, at one nothing).
//!
//! Not built: Viral (forcing a CRC error and reporting it in RETRY.Ack) and IDE.

use super::control::ControlFlit;
use super::crc;
use linklayer::llr::ReplayBuffer;
use linklayer::{Bits, Instant, Seq, ZeroOption};

/// Bytes of one LLRB entry: a sealed 66-byte flit.
pub const ENTRY: usize = crc::FLIT_LEN;

/// RETRY.Frame flits before a RETRY.Req or RETRY.Ack.
pub const FRAMES: u8 = 5;

/// Entries a new protocol flit needs free: itself, four all-data flits after it and two more.
const ROOM: usize = 7;

/// The local retry state machine's states (Table 4-12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LocalState {
    /// RETRY_LOCAL_NORMAL.
    LocalNormal,
    /// RETRY_LLRREQ: a RETRY.Req sequence is due.
    LlrReq,
    /// RETRY_LOCAL_IDLE: waiting for the RETRY.Ack.
    LocalIdle,
    /// RETRY_PHY_REINIT: the physical layer is retraining.
    PhyReinit,
    /// RETRY_ABORT: the link failed.
    Abort,
}

/// The remote retry state machine's states (Table 4-13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RemoteState {
    /// RETRY_REMOTE_NORMAL.
    RemoteNormal,
    /// RETRY_LLRACK: a RETRY.Ack sequence is due.
    LlrAck,
}

/// Limits of the retry machine (§4.2.8.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct LlrConfig {
    /// MAX_NUM_RETRY (5 bits; suggested at least 10; default 10).
    pub max_num_retry: u8,
    /// MAX_NUM_PHY_REINIT (5 bits; suggested at least 10; default 10).
    pub max_num_phy_reinit: u8,
    /// TIMEOUT: flits transmitted in `LocalIdle` before the Req is sent again (suggested at
    /// least 4096; default 4096). Each RETRY.Req or RETRY.Ack sequence lost on the wire costs
    /// this many flit times, so on a channel that corrupts many flits the timeout, not the
    /// replay, sets the throughput.
    pub timeout: u32,
    /// The version sent in INIT.Param (0010b: CXL 2.0 and later; the default).
    pub version: u8,
}

impl Default for LlrConfig {
    fn default() -> Self {
        LlrConfig { max_num_retry: 10, max_num_phy_reinit: 10, timeout: 4096, version: 0b0010 }
    }
}

/// What a retryable flit handed to [`Llr::send`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FlitKind {
    /// A protocol flit (the machine may set its Ak bit).
    Protocol,
    /// An all-data flit.
    AllData,
    /// A retryable control flit (LLCRD, INIT, IDE), built by the caller.
    Control,
}

/// A flit [`Llr::handle_flit`] hands to the caller, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// A protocol flit: give bytes 0–63 to the unpacker.
    Protocol,
    /// An all-data flit: give bytes 0–63 to the unpacker.
    AllData,
    /// A retryable control flit (LLCRD with its credits, INIT.Param, IDE, or another LLCTRL).
    Control(ControlFlit),
}

/// What [`Llr::poll_transmit`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Sent {
    /// A retryable flit sent for the first time.
    New,
    /// A retryable flit sent again from the LLRB.
    Replay,
    /// A RETRY flit (Frame, Req, Ack, Idle).
    Retry,
}

/// What the embedder is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// NUM_RETRY reached its maximum: retrain the physical layer, then call
    /// [`Llr::handle_phy_reinit_done`].
    PhyReinit,
    /// NUM_PHY_REINIT reached its maximum too: the link failed.
    Abort,
    /// A RETRY.Ack arrived when none was awaited (an error; the state is unchanged).
    UnexpectedAck,
    /// A RETRY.Req asked for a replay from an entry outside the LLRB; the whole LLRB is
    /// replayed.
    BadEseq {
        /// The ESeq received.
        eseq: u8,
    },
    /// A retryable flit before the peer's INIT.Param, or a second INIT.Param (an uncorrectable
    /// error, §4.2.7; the flit is still delivered).
    Init,
}

/// Why [`Llr::send`] refused a flit (nothing changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LlrError {
    /// Only one LLRB entry is free.
    Full,
    /// The link failed (`Abort`).
    Aborted,
    /// Link initialization is not complete ([`Llr::is_initialized`]).
    NotInitialized,
    /// [`Llr::new`]: `N` is not 22 to 255, or the storage is smaller than `N ×` [`ENTRY`].
    Config {
        /// Bytes the storage needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
}

impl core::fmt::Display for LlrError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LlrError::Full => f.write_str("the LLRB keeps one entry free"),
            LlrError::Aborted => f.write_str("the link failed"),
            LlrError::NotInitialized => f.write_str("link initialization is not complete"),
            LlrError::Config { needed, got } => {
                write!(f, "an LLRB of 22 to 255 entries needs {needed} bytes of storage, got {got}")
            }
        }
    }
}

impl core::error::Error for LlrError {}

/// Counters for the embedder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Flits received with a CRC error.
    pub crc_errors: u64,
    /// RETRY.Req sequences sent.
    pub retry_reqs: u64,
    /// Flits sent again from the LLRB.
    pub replayed: u64,
    /// Retryable flits discarded while a retry was under way.
    pub discarded: u64,
}

impl Stats {
    /// Every counter zero.
    pub const ZERO: Self = Stats { crc_errors: 0, retry_reqs: 0, replayed: 0, discarded: 0 };
}

/// A RETRY sequence being sent: frames left, then the message.
#[derive(Clone, Copy, Debug)]
struct Sequence {
    frames_left: u8,
    msg: ControlFlit,
}

const EVENTS: usize = 8;

/// The 68B link-layer retry machine over an LLRB of `N` entries (22 to 255) kept in `B`
/// (at least `N ×` [`ENTRY`] bytes: `Llr<[u8; 66 * 32], 32>`; the size is written twice
/// because stable Rust cannot compute one from the other in a type). It seals what it sends
/// and checks the CRC of what it receives.
///
/// Size on a 64-bit host: 2 256 bytes with 64 entries, 32 more per entry, besides the LLRB.
/// Built in place: [`Llr::EMPTY`] and [`Llr::init`].
#[derive(Clone, Debug)]
pub struct Llr<B, const N: usize> {
    config: LlrConfig,
    llrb: ReplayBuffer<Bits<16>, B, N>,
    /// LLRB index of the oldest stored flit (WrPtr − stored, modulo N).
    base_index: u16,
    local: LocalState,
    remote: RemoteState,
    req: ZeroOption<Sequence>,
    ack: ZeroOption<(Sequence, u8)>,
    eseq: u16,
    rx_modulus: u16,
    got_init: bool,
    heard: bool,
    sent_init: bool,
    num_ack: u16,
    num_retry: u8,
    num_phy_reinit: u8,
    req_num_retry: u8,
    timeout: u32,
    frames_seen: u8,
    all_data_run: bool,
    flits: u64,
    events: heapless::Deque<Event, EVENTS>,
    stats: Stats,
}

/// Entries of an LLRB holding `n` flits, as a modulus of LLRB indices (`n` is 22..=255).
const fn modulus(n: usize) -> u16 {
    if n > 255 {
        255
    } else if n == 0 {
        1
    } else {
        n as u16
    }
}

impl LlrConfig {
    /// Every limit zero: the configuration of an [`Llr::EMPTY`] until [`Llr::init`].
    pub const ZERO: LlrConfig = LlrConfig { max_num_retry: 0, max_num_phy_reinit: 0, timeout: 0, version: 0 };
}

impl<const L: usize, const N: usize> Llr<[u8; L], N> {
    const SIZES_OK: () = assert!(
        N >= 22 && N <= 255 && L >= N * ENTRY,
        "Llr<[u8; L], N>: N (LLRB entries) must be 22 to 255 and L at least N × ENTRY (66) bytes"
    );

    /// A machine with its LLRB inline and every byte zero, so a `static` holding it lands in
    /// `.bss` (no flash, no start-up copy): it sends and accepts nothing until [`Llr::init`]
    /// configures it in place. `N` and `L` are checked when the program is built.
    pub const EMPTY: Self = {
        let () = Self::SIZES_OK;
        Self::unconfigured([0; L])
    };
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> Llr<B, N> {
    /// A machine starting link initialization: it sends RETRY.Idle until it receives an
    /// error-free flit, then its INIT.Param (the first retryable flit, LLRB entry 0).
    /// Refuses an `N` outside 22..=255 (the LLRB's minimum and the 8-bit index) or storage
    /// smaller than `N ×` [`ENTRY`] bytes. (Built on the stack; see [`Llr::init`] for building
    /// one in place.)
    pub fn new(config: LlrConfig, storage: B) -> Result<Self, LlrError> {
        let mut llr = Self::unconfigured(storage);
        llr.init(config)?;
        Ok(llr)
    }

    /// A machine with every field zero but `storage`, [`LlrConfig::ZERO`].
    const fn unconfigured(storage: B) -> Self {
        Llr {
            config: LlrConfig::ZERO,
            llrb: ReplayBuffer::new(storage, Seq::from_index(0)),
            base_index: 0,
            local: LocalState::LocalNormal,
            remote: RemoteState::RemoteNormal,
            req: ZeroOption::NONE,
            ack: ZeroOption::NONE,
            eseq: 0,
            rx_modulus: 0,
            got_init: false,
            heard: false,
            sent_init: false,
            num_ack: 0,
            num_retry: 0,
            num_phy_reinit: 0,
            req_num_retry: 0,
            timeout: 0,
            frames_seen: 0,
            all_data_run: false,
            flits: 0,
            events: heapless::Deque::new(),
            stats: Stats::ZERO,
        }
    }

    /// Makes this machine what [`Llr::new`]`(config, storage)` returns with its own storage, in
    /// place (without a second machine on the stack): link initialization from the start, the
    /// LLRB empty, counters at zero. Refused as `new` refuses, and then nothing changed. On an
    /// [`Llr::EMPTY`] in a `static`, this is how firmware builds one.
    pub fn init(&mut self, config: LlrConfig) -> Result<(), LlrError> {
        let needed = N * ENTRY;
        let got = self.llrb.capacity_bytes();
        if !(22..=255).contains(&N) || got < needed {
            return Err(LlrError::Config { needed, got });
        }
        self.config = config;
        self.llrb.reset_to(Seq::from_index(0));
        self.base_index = 0;
        self.local = LocalState::LocalNormal;
        self.remote = RemoteState::RemoteNormal;
        self.req.clear();
        self.ack.clear();
        self.eseq = 0;
        self.rx_modulus = 10;
        (self.got_init, self.heard, self.sent_init) = (false, false, false);
        self.num_ack = 0;
        (self.num_retry, self.num_phy_reinit, self.req_num_retry) = (0, 0, 0);
        self.timeout = 0;
        self.frames_seen = 0;
        self.all_data_run = false;
        self.flits = 0;
        self.events.clear();
        self.stats = Stats::ZERO;
        Ok(())
    }

    /// Whether [`Llr::init`] (or [`Llr::new`]) configured the machine: an [`Llr::EMPTY`] sends
    /// and accepts nothing until then. (The INIT.Param modulus is 10 from `init` on and never
    /// 0 after; an `EMPTY` one is 0.)
    fn is_configured(&self) -> bool {
        self.rx_modulus != 0
    }

    /// Whether link initialization is complete (§4.2.7): this end has sent its INIT.Param and
    /// received the peer's. Until then only RETRY flits and the INIT.Param go.
    pub fn is_initialized(&self) -> bool {
        self.sent_init && self.got_init
    }

    /// The LRSM's state.
    pub fn local_state(&self) -> LocalState {
        self.local
    }

    /// The RRSM's state.
    pub fn remote_state(&self) -> RemoteState {
        self.remote
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Free LLRB entries (NumFreeBuf).
    pub fn free_entries(&self) -> usize {
        self.depth().saturating_sub(self.llrb.len())
    }

    /// Retryable flits stored and not yet acknowledged.
    pub fn unacknowledged(&self) -> usize {
        self.llrb.len()
    }

    /// Acknowledgements owed to the peer (NumAck).
    pub fn acks_owed(&self) -> u16 {
        self.num_ack
    }

    fn depth(&self) -> usize {
        usize::from(modulus(N)).min(ReplayBuffer::<Bits<16>, B, N>::MAX_FRAMES)
    }

    /// Whether a new protocol flit may be sent now: the link has not failed, no all-data run
    /// is under way, and the LLRB has room for it and the all-data flits that may follow it.
    /// The all-data flits a protocol flit commits to are sent with [`Llr::send`] regardless.
    pub fn can_send(&self) -> bool {
        self.is_initialized()
            && self.local != LocalState::Abort
            && !self.all_data_run
            && self.free_entries() >= ROOM
            && self.llrb.can_push(ENTRY)
    }

    /// Stores a retryable flit (bytes 0–63; the machine seals it) for transmission.
    /// `all_data_follows`: the next retryable flit is an all-data flit, so no control flit may
    /// go between (the packer's [`super::pack::Packer::owes_all_data`] after packing this one).
    /// For a protocol flit the machine sets Ak when 8 or more acknowledgements are owed.
    pub fn send(&mut self, body: &[u8; crc::COVERED], kind: FlitKind, all_data_follows: bool) -> Result<(), LlrError> {
        if self.local == LocalState::Abort {
            return Err(LlrError::Aborted);
        }
        if !self.is_initialized() {
            return Err(LlrError::NotInitialized);
        }
        // At two free entries only a flit carrying an acknowledgement may go (§4.2.8.2).
        let acks = match kind {
            FlitKind::Protocol => self.num_ack >= 8,
            FlitKind::Control => matches!(ControlFlit::parse(body), Ok(ControlFlit::LlcrdAck { full_ack: 1.., .. })),
            FlitKind::AllData => false,
        };
        if self.free_entries() < 2 || (self.free_entries() == 2 && !acks) || !self.llrb.can_push(ENTRY) {
            return Err(LlrError::Full);
        }
        let mut body = *body;
        if kind == FlitKind::Protocol && self.num_ack >= 8 {
            if let Some(b) = body.first_mut() {
                *b |= 1 << 2;
            }
            self.num_ack -= 8;
        }
        self.store(&body, kind == FlitKind::AllData)?;
        self.all_data_run = all_data_follows;
        Ok(())
    }

    fn store(&mut self, body: &[u8; crc::COVERED], all_data: bool) -> Result<(), LlrError> {
        let now = Instant::from_nanos(self.flits);
        self.llrb
            .push_marked_with(now, ENTRY, all_data, |_, buf| {
                if let Some((covered, _)) = buf.split_first_chunk_mut::<{ crc::COVERED }>() {
                    *covered = *body;
                }
                if let Ok(flit) = <&mut [u8; ENTRY]>::try_from(buf) {
                    crc::seal(flit);
                }
            })
            .map(|_| ())
            .map_err(|_| LlrError::Full)
    }

    /// Whether a control flit may go now: not inside an all-data run, new or replayed.
    fn control_allowed(&self) -> bool {
        match self.llrb.peek_next_mark() {
            Some(next_is_data) => !next_is_data,
            None => !self.all_data_run,
        }
    }

    /// The next flit to put on the wire, sealed, into `out`; `None` when there is nothing to
    /// send. Order: a due RETRY.Ack sequence; a due RETRY.Req sequence (not inside an all-data
    /// run); during initialization RETRY.Idle until an error-free flit has arrived, then the
    /// INIT.Param; flits from the LLRB (a replay first); an LLCRD when two or more
    /// acknowledgements are owed; RETRY.Idle while waiting for an Ack (so TIMEOUT keeps
    /// counting).
    pub fn poll_transmit(&mut self, out: &mut [u8; ENTRY]) -> Option<Sent> {
        if !self.is_configured() {
            return None;
        }
        let sent = self.next_flit(out)?;
        self.flits += 1;
        if self.local == LocalState::LocalIdle {
            self.timeout += 1;
            if self.timeout >= self.config.timeout {
                self.timeout = 0;
                self.enter_llr_req();
            }
        }
        Some(sent)
    }

    fn next_flit(&mut self, out: &mut [u8; ENTRY]) -> Option<Sent> {
        if let Some((seq, eseq)) = self.ack.as_mut() {
            let eseq = *eseq;
            if emit_sequence(seq, out) {
                self.ack.clear();
                self.remote = RemoteState::RemoteNormal;
                self.rewind_to(eseq);
            }
            return Some(Sent::Retry);
        }
        if self.local == LocalState::LlrReq && self.control_allowed() {
            let mut seq = self.req.take().unwrap_or(Sequence {
                frames_left: FRAMES,
                msg: ControlFlit::RetryReq {
                    eseq: self.eseq as u8,
                    num_retry: self.num_retry,
                    num_phy_reinit: self.num_phy_reinit,
                },
            });
            if !emit_sequence(&mut seq, out) {
                self.req = ZeroOption::Some(seq);
            } else {
                self.req.clear();
                self.req_num_retry = self.num_retry;
                self.num_retry = self.num_retry.saturating_add(1);
                self.local = LocalState::LocalIdle;
                self.timeout = 0;
                self.stats.retry_reqs += 1;
            }
            return Some(Sent::Retry);
        }
        if !self.sent_init {
            if !self.heard {
                control(ControlFlit::RetryIdle, out);
                return Some(Sent::Retry);
            }
            let wrap = (modulus(N) - 1) as u8;
            let init = ControlFlit::InitParam { version: self.config.version, wrap }.emit();
            let mut body = [0u8; crc::COVERED];
            if let Some(b) = body.get_mut(..16) {
                b.copy_from_slice(&init);
            }
            self.sent_init = self.store(&body, false).is_ok();
        }
        if let Some(o) = self.llrb.poll_next() {
            out.copy_from_slice(o.frame.get(..ENTRY).unwrap_or(&[0; ENTRY]));
            if o.replay {
                self.stats.replayed += 1;
                return Some(Sent::Replay);
            }
            return Some(Sent::New);
        }
        if self.control_allowed() && self.num_ack >= 2 && self.free_entries() >= 2 {
            let full_ack = self.num_ack.min(255) as u8;
            let llcrd = ControlFlit::LlcrdAck {
                full_ack,
                rsp_crd: Default::default(),
                req_crd: Default::default(),
                data_crd: Default::default(),
            };
            let mut body = [0u8; crc::COVERED];
            if let Some(b) = body.get_mut(..16) {
                b.copy_from_slice(&llcrd.emit());
            }
            if self.store(&body, false).is_ok() {
                self.num_ack -= u16::from(full_ack);
                if let Some(o) = self.llrb.poll_next() {
                    out.copy_from_slice(o.frame.get(..ENTRY).unwrap_or(&[0; ENTRY]));
                    return Some(Sent::New);
                }
            }
        }
        if self.local == LocalState::LocalIdle && self.control_allowed() {
            control(ControlFlit::RetryIdle, out);
            return Some(Sent::Retry);
        }
        None
    }

    /// Replays from LLRB index `eseq` (the peer's ESeq).
    fn rewind_to(&mut self, eseq: u8) {
        let m = modulus(N);
        let offset = (u16::from(eseq) + m - self.base_index % m) % m;
        let from = self.llrb.base().wrapping_add(u64::from(offset));
        if usize::from(offset) > self.llrb.in_flight() || self.llrb.rewind(from).is_err() {
            self.push_event(Event::BadEseq { eseq });
            self.llrb.rewind_all();
        }
    }

    /// Releases `n` acknowledged entries (never more than were sent).
    fn release(&mut self, n: usize) {
        let n = n.min(self.llrb.in_flight());
        if n == 0 {
            return;
        }
        let upto = self.llrb.base().wrapping_add(n as u64 - 1);
        if self.llrb.ack(upto).is_ok() {
            self.base_index = ((usize::from(self.base_index) + n) % usize::from(modulus(N))) as u16;
        }
    }

    fn enter_llr_req(&mut self) {
        if self.num_retry >= self.config.max_num_retry {
            if self.num_phy_reinit >= self.config.max_num_phy_reinit {
                self.local = LocalState::Abort;
                self.push_event(Event::Abort);
            } else {
                self.num_phy_reinit = self.num_phy_reinit.saturating_add(1);
                self.local = LocalState::PhyReinit;
                self.push_event(Event::PhyReinit);
            }
            return;
        }
        self.local = LocalState::LlrReq;
        self.req.clear();
    }

    /// The virtual link state machine went from Active to Retrain (§4.2.8.6): the RRSM is
    /// reset and any pending RETRY.Ack dropped (the peer asks again), and this end asks for a
    /// replay from its ESeq. From RETRY_LOCAL_NORMAL, RETRY_LLRREQ and RETRY_LOCAL_IDLE the
    /// retrain leads (through RETRY_PHY_REINIT, Table 4-12) to RETRY_LLRREQ with NUM_RETRY and
    /// TIMEOUT reset (§4.2.8.5.1): a retry in progress starts over, and the RETRY.Ack the peer
    /// dropped is not waited for.
    pub fn handle_retrain(&mut self) {
        self.remote = RemoteState::RemoteNormal;
        self.ack.clear();
        self.frames_seen = 0;
        if matches!(self.local, LocalState::LocalNormal | LocalState::LlrReq | LocalState::LocalIdle) {
            self.num_retry = 0;
            self.timeout = 0;
            self.local = LocalState::LlrReq;
            self.req.clear();
        }
    }

    /// The physical layer finished retraining: the Req goes again with NUM_RETRY = 0.
    pub fn handle_phy_reinit_done(&mut self) {
        if self.local == LocalState::PhyReinit {
            self.num_retry = 0;
            self.timeout = 0;
            self.frames_seen = 0;
            self.local = LocalState::LlrReq;
            self.req.clear();
        }
    }

    fn push_event(&mut self, e: Event) {
        let _ = self.events.push_back(e);
    }

    /// The next event for the embedder.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Takes a received 66-byte flit and checks its CRC (the caller does not). `all_data_expected`:
    /// the unpacker expects an all-data flit ([`super::pack::Unpacker::expects_all_data`]).
    /// Acknowledgements are taken here — a protocol flit's Ak, an LLCRD's Full_Ack — and free
    /// LLRB entries; credits are the caller's (the protocol flit header, an LLCRD's fields).
    /// Returns what to hand on, in order (bytes 0–63 of `flit`: [`crc::body`]); `None` for
    /// RETRY flits and for flits discarded during a retry.
    pub fn handle_flit(&mut self, flit: &[u8; ENTRY], all_data_expected: bool) -> Option<Delivered> {
        if !self.is_configured() {
            return None;
        }
        if crc::check(flit).is_err() {
            self.stats.crc_errors += 1;
            self.frames_seen = 0;
            if self.local == LocalState::LocalNormal {
                self.enter_llr_req();
            }
            return None;
        }
        self.heard = true;
        let normal = self.local == LocalState::LocalNormal;
        let [b0, ..] = *flit;
        if normal && all_data_expected {
            self.frames_seen = 0;
            self.accept(None);
            return Some(Delivered::AllData);
        }
        if b0 & 1 == 0 {
            self.frames_seen = 0;
            if !normal {
                self.stats.discarded += 1;
                return None;
            }
            self.accept(None);
            if b0 & 1 << 2 != 0 {
                self.release(8);
            }
            return Some(Delivered::Protocol);
        }
        let Ok(cf) = ControlFlit::parse(flit) else { return None };
        if !static_bits_hold(flit, &cf) {
            // A RETRY flit whose fixed bits are wrong is treated as a CRC error (§4.2.2).
            self.frames_seen = 0;
            if normal {
                self.stats.crc_errors += 1;
                self.enter_llr_req();
            }
            return None;
        }
        let framed = self.frames_seen > 0;
        self.frames_seen = match cf {
            ControlFlit::RetryFrame => self.frames_seen.saturating_add(1),
            _ => 0,
        };
        match cf {
            ControlFlit::RetryFrame | ControlFlit::RetryIdle => None,
            ControlFlit::RetryReq { eseq, num_retry, .. } => {
                if framed {
                    let ack = ControlFlit::RetryAck {
                        empty: false,
                        viral: false,
                        num_retry,
                        wr_ptr: 0,
                        eseq,
                        num_free_buf: 0,
                        viral_ld_id: 0,
                    };
                    self.remote = RemoteState::LlrAck;
                    self.ack = ZeroOption::Some((Sequence { frames_left: FRAMES, msg: ack }, eseq));
                    self.fill_ack_fields();
                }
                None
            }
            ControlFlit::RetryAck { num_retry, empty, .. } => {
                if framed {
                    if self.local == LocalState::LocalIdle && num_retry == self.req_num_retry {
                        self.local = LocalState::LocalNormal;
                        self.timeout = 0;
                        if empty {
                            self.num_retry = 0;
                            self.num_phy_reinit = 0;
                        }
                    } else if self.local != LocalState::LocalIdle {
                        self.push_event(Event::UnexpectedAck);
                    }
                }
                None
            }
            ControlFlit::Other { llctrl: super::control::llctrl::RETRY, .. } => None,
            _ => {
                if !normal {
                    self.stats.discarded += 1;
                    return None;
                }
                self.accept(Some(&cf));
                Some(Delivered::Control(cf))
            }
        }
    }

    /// The RETRY.Ack's Empty, WrPtr and NumFreeBuf for the replay it announces.
    fn fill_ack_fields(&mut self) {
        let m = modulus(N);
        let wr_ptr = ((self.base_index + self.llrb.len() as u16) % m) as u8;
        let free = self.free_entries().min(255) as u8;
        let in_flight = self.llrb.in_flight() as u16;
        if let Some((Sequence { msg: ControlFlit::RetryAck { empty, wr_ptr: w, num_free_buf, .. }, .. }, eseq)) =
            self.ack.as_mut()
        {
            let offset = (u16::from(*eseq) + m - self.base_index % m) % m;
            *empty = offset >= in_flight;
            *w = wr_ptr;
            *num_free_buf = free;
        }
    }

    /// An error-free retryable flit in `LocalNormal`.
    fn accept(&mut self, control: Option<&ControlFlit>) {
        self.eseq = (self.eseq + 1) % self.rx_modulus.max(1);
        self.num_ack = self.num_ack.saturating_add(1);
        self.num_retry = 0;
        self.num_phy_reinit = 0;
        match control {
            Some(ControlFlit::InitParam { wrap, .. }) => {
                if self.got_init {
                    self.push_event(Event::Init);
                }
                self.got_init = true;
                self.rx_modulus = u16::from(*wrap) + 1;
                self.eseq %= self.rx_modulus;
            }
            other => {
                if !self.got_init {
                    self.push_event(Event::Init);
                }
                if let Some(ControlFlit::LlcrdAck { full_ack, .. }) = other {
                    self.release(usize::from(*full_ack));
                }
            }
        }
    }
}

/// The static-bit check of a CRC-good RETRY flit (§4.2.6: a receiver "should also check as
/// many defined bits as possible" to qualify a RETRY message, which it must answer even in the
/// shadow of a CRC error): slot 0 has every bit outside its fields clear (it equals its own
/// re-encoding, bytes 5–7 zero) and slots 1–3 are zero, so an all-data flit mistaken for a
/// RETRY flit fails it. *Project-defined:* the whole slot, where the spec names the bits with
/// fixed values, since data such as the words 1 and 19 would match those alone. Other control
/// flits are taken as they parse (their bytes 5–7 left to [`ControlFlit::check_reserved`]).
fn static_bits_hold(flit: &[u8; ENTRY], cf: &ControlFlit) -> bool {
    match cf {
        ControlFlit::RetryIdle
        | ControlFlit::RetryReq { .. }
        | ControlFlit::RetryAck { .. }
        | ControlFlit::RetryFrame => {
            flit.get(..16) == Some(&cf.emit()[..])
                && flit.get(16..crc::COVERED).is_some_and(|r| r.iter().all(|b| *b == 0))
        }
        _ => true,
    }
}

/// Writes the next flit of a RETRY sequence; whether it was the final message.
fn emit_sequence(seq: &mut Sequence, out: &mut [u8; ENTRY]) -> bool {
    if seq.frames_left > 0 {
        seq.frames_left -= 1;
        control(ControlFlit::RetryFrame, out);
        false
    } else {
        control(seq.msg, out);
        true
    }
}

/// Writes a sealed control flit (slots 1–3 zero).
fn control(cf: ControlFlit, out: &mut [u8; ENTRY]) {
    out.fill(0);
    if let Some(s0) = out.get_mut(..16) {
        s0.copy_from_slice(&cf.emit());
    }
    crc::seal(out);
}

#[cfg(test)]
mod tests;
