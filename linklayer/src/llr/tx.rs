//! The LLR transmitter (UE 1.0 §5.1): OFF, INIT, ADVANCE, REPLAY, FLUSH.

use super::FrameAction;
use super::replay::{Outgoing, ReplayBuffer};
use crate::Error;
use crate::seq::{Seq, SeqSpace};
use crate::time::{Duration, Instant};
use crate::wire::CtlOs;
use heapless::Deque;

/// Transmitter states (SAI `sai_port_llr_tx_status_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TxState {
    /// LLR transmission disabled: frames go out as ordinary frames.
    Off,
    /// Sending LLR_INIT, waiting for LLR_INIT_ECHO.
    Init,
    /// Normal operation: new frames are numbered, stored and sent.
    Advance,
    /// Retransmitting from the replay buffer.
    Replay,
    /// Failed: the replay buffer was flushed; waiting for re-initialisation.
    Flush,
}

impl TxState {
    /// The state's name in the specification.
    pub const fn name(self) -> &'static str {
        match self {
            TxState::Off => "OFF",
            TxState::Init => "INIT",
            TxState::Advance => "ADVANCE",
            TxState::Replay => "REPLAY",
            TxState::Flush => "FLUSH",
        }
    }
}

/// Why the transmitter entered FLUSH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FlushReason {
    /// Replays exceeded `REPLAY_COUNT_MAX` without an acknowledgement.
    ReplayCountExceeded,
    /// The PCS was down longer than `PCS_LOST_TIMEOUT`.
    PcsLost,
    /// A frame stayed in the replay buffer longer than `DATA_AGE_TIMEOUT`.
    DataAge,
}

/// What started a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ReplayCause {
    /// An LLR_NACK.
    Nack,
    /// The replay timer.
    Timer,
}

/// Something the embedder may want to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LlrTxEvent {
    /// LLR_INIT_ECHO arrived: the link is in ADVANCE.
    Initialized,
    /// A go-back-N replay started at sequence number `from`.
    ReplayStarted {
        /// First frame replayed.
        from: u32,
        /// What started it.
        cause: ReplayCause,
    },
    /// The transmitter entered FLUSH and dropped `frames_dropped` unacknowledged frames; they
    /// were not delivered by LLR and must be recovered above it.
    Flushed {
        /// Why.
        reason: FlushReason,
        /// Frames dropped from the replay buffer.
        frames_dropped: u32,
    },
    /// [`LlrTx::restart`] started a new handshake and dropped `frames_dropped` unacknowledged
    /// frames.
    Restarted {
        /// Frames dropped from the replay buffer.
        frames_dropped: u32,
    },
}

/// Transmitter configuration (SAI port LLR profile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LlrTxConfig {
    /// `OUTSTANDING_FRAMES_MAX`: frames stored and not acknowledged.
    pub outstanding_frames_max: u32,
    /// `OUTSTANDING_BYTES_MAX`: bytes stored and not acknowledged.
    pub outstanding_bytes_max: u32,
    /// `REPLAY_TIMER_MAX`: time without progress before the buffer is replayed. Must exceed the
    /// link round trip plus the ACK spacing.
    pub replay_timeout: Duration,
    /// `REPLAY_COUNT_MAX`: replays (started by the replay timer or by an LLR_NACK) without an
    /// LLR_ACK making progress before FLUSH (default 1); [`REPLAY_COUNT_UNLIMITED`] (255) means
    /// no maximum (SAI `inc/saiport.h`).
    pub replay_count_max: u8,
    /// `PCS_LOST_TIMEOUT`, or `None` to never flush for PCS loss.
    pub pcs_lost_timeout: Option<Duration>,
    /// `DATA_AGE_TIMEOUT`, or `None` to never flush for age.
    pub data_age_timeout: Option<Duration>,
    /// `INIT_LLR_FRAME_ACTION` (default best-effort).
    pub init_action: FrameAction,
    /// `FLUSH_LLR_FRAME_ACTION` (default best-effort).
    pub flush_action: FrameAction,
    /// `RE_INIT_ON_FLUSH` (default false).
    pub reinit_on_flush: bool,
    /// What happens to an LLR-eligible frame offered while the PCS reports the link down
    /// ([`LlrTx::set_pcs_status`]), in ADVANCE or REPLAY (default discard, as HPE's Slingshot
    /// driver programs its link-down behaviour; project-defined, SAI has no such attribute).
    pub link_down_action: FrameAction,
    /// How often LLR_INIT is repeated until echoed (project-defined).
    pub init_interval: Duration,
}

/// `REPLAY_COUNT_MAX` = 255: no maximum, the transmitter never flushes for the replay count.
pub const REPLAY_COUNT_UNLIMITED: u8 = 255;

/// Transmitter counters: the SAI `SAI_PORT_STAT_LLR_*` statistics of the transmit side, each
/// named in its doc, and a few of this crate's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TxStats {
    /// LLR_INIT sent (`LLR_TX_INIT_CTL_OS`).
    pub init_tx: u64,
    /// LLR_INIT_ECHO received (`LLR_RX_INIT_ECHO_CTL_OS`).
    pub init_echo_rx: u64,
    /// LLR_ACK received (`LLR_RX_ACK_CTL_OS`).
    pub ack_rx: u64,
    /// LLR_NACK received (`LLR_RX_NACK_CTL_OS`).
    pub nack_rx: u64,
    /// LLR_ACK or LLR_NACK with an unexpected sequence number (`LLR_RX_ACK_NACK_SEQ_ERROR`).
    pub ack_nack_seq_errors: u64,
    /// Frames sent with a good FCS, first sends and replays alike (`LLR_TX_OK`).
    pub tx_ok: u64,
    /// Frames sent with a poisoned FCS, first sends and replays alike (`LLR_TX_POISONED`).
    pub tx_poisoned: u64,
    /// Frames sent again in replays (this crate's).
    pub frames_replayed: u64,
    /// Replays started, by the replay timer or by an LLR_NACK (this crate's).
    pub replays_started: u64,
    /// Replays completed: the last frame to resend went out (`LLR_TX_REPLAY`).
    pub tx_replay: u64,
    /// Frames discarded by the INIT or FLUSH frame action (`LLR_TX_DISCARD`, which SAI defines
    /// for those two states only).
    pub tx_discard: u64,
    /// Frames discarded by the link-down action (this crate's).
    pub link_down_discards: u64,
    /// Frames dropped by FLUSH or [`LlrTx::restart`].
    pub flushed_frames: u64,
    /// Times FLUSH was entered.
    pub flushes: u64,
    /// Handshakes restarted by [`LlrTx::restart`].
    pub restarts: u64,
    /// Events dropped because the event queue was full.
    pub events_dropped: u64,
}

impl TxStats {
    /// Every counter zero.
    pub const ZERO: Self = TxStats {
        init_tx: 0,
        init_echo_rx: 0,
        ack_rx: 0,
        nack_rx: 0,
        ack_nack_seq_errors: 0,
        tx_ok: 0,
        tx_poisoned: 0,
        frames_replayed: 0,
        replays_started: 0,
        tx_replay: 0,
        tx_discard: 0,
        link_down_discards: 0,
        flushed_frames: 0,
        flushes: 0,
        restarts: 0,
        events_dropped: 0,
    };
}

/// How an offered frame was admitted by [`LlrTx::send`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Admit<S: SeqSpace> {
    /// Stored with this sequence number; it goes out through [`LlrTx::poll_transmit`].
    Queued(Seq<S>),
    /// Not LLR-protected: the caller sends it now as an ordinary frame.
    SendPlain,
    /// Dropped by the INIT/FLUSH frame action.
    Discarded,
}

/// Inputs that change the transmitter's state; see [`transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxInput {
    Enable,
    Disable,
    InitEchoed,
    Nack,
    ReplayTimer,
    ReplayCaughtUp,
    Fault,
    Reinit,
    Restart,
}

/// Every state change of the transmitter, in one place. `None`: not allowed.
fn transition(state: TxState, input: TxInput) -> Option<TxState> {
    use TxInput as I;
    use TxState as S;
    Some(match (state, input) {
        (_, I::Disable) => S::Off,
        (S::Off, I::Enable) => S::Init,
        (S::Init, I::InitEchoed) => S::Advance,
        (S::Advance | S::Replay, I::Nack | I::ReplayTimer) => S::Replay,
        (S::Replay, I::ReplayCaughtUp) => S::Advance,
        (S::Advance | S::Replay, I::Fault) => S::Flush,
        (S::Flush, I::Reinit) => S::Init,
        (S::Init | S::Advance | S::Replay | S::Flush, I::Restart) => S::Init,
        _ => return None,
    })
}

const EVENT_QUEUE: usize = 8;

/// The LLR transmitter over sequence space `S`, replay storage `B` and `N` frame slots.
///
/// Drive it as a sans-I/O machine: offer frames with [`LlrTx::send`]; put
/// [`LlrTx::poll_transmit`]'s frames and [`LlrTx::poll_control`]'s CtlOS on the wire; feed received
/// LLR_ACK / LLR_NACK / LLR_INIT_ECHO to the `handle_*` methods; call [`LlrTx::handle_timeout`] at
/// [`LlrTx::poll_timeout`]; read [`LlrTx::poll_event`].
///
/// Size on a 64-bit host: 2 440 bytes with 64 frame slots, 32 more per slot, besides the replay
/// storage. Built in place: [`LlrTx::EMPTY`] and [`LlrTx::init`].
#[derive(Clone, Debug)]
pub struct LlrTx<S: SeqSpace, B, const N: usize> {
    config: LlrTxConfig,
    state: TxState,
    buf: ReplayBuffer<S, B, N>,
    replay_deadline: Option<Instant>,
    replay_count: u8,
    /// When the next LLR_INIT is due (INIT state).
    init_due: Option<Instant>,
    pcs_down_since: Option<Instant>,
    events: Deque<LlrTxEvent, EVENT_QUEUE>,
    stats: TxStats,
}

impl LlrTxConfig {
    /// Every field zero (discard in INIT, FLUSH and link down): the configuration of an
    /// [`LlrTx::EMPTY`], which [`LlrTx::new`] refuses.
    pub(crate) const ZERO: Self = LlrTxConfig {
        outstanding_frames_max: 0,
        outstanding_bytes_max: 0,
        replay_timeout: Duration::ZERO,
        replay_count_max: 0,
        pcs_lost_timeout: None,
        data_age_timeout: None,
        init_action: FrameAction::Discard,
        flush_action: FrameAction::Discard,
        reinit_on_flush: false,
        link_down_action: FrameAction::Discard,
        init_interval: Duration::ZERO,
    };
}

impl<S: SeqSpace, const L: usize, const N: usize> LlrTx<S, [u8; L], N> {
    /// A transmitter with its replay storage inline and every byte zero, so a `static` holding
    /// it lands in `.bss`: in OFF with a configuration of zeros, refusing [`LlrTx::enable`] until
    /// [`LlrTx::init`] configures it in place.
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<S: SeqSpace, B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> LlrTx<S, B, N> {
    /// A transmitter in OFF whose first frame will be numbered `first`, storing frames in
    /// `storage`. (Built on the stack; see [`LlrTx::init`] for building one in place.)
    pub fn new(config: LlrTxConfig, storage: B, first: Seq<S>) -> Result<Self, Error> {
        let mut tx = Self::unconfigured(storage);
        tx.init(config, first)?;
        Ok(tx)
    }

    /// A transmitter in OFF with every field zero but `storage`: [`LlrTxConfig::ZERO`].
    pub(crate) const fn unconfigured(storage: B) -> Self {
        LlrTx {
            config: LlrTxConfig::ZERO,
            state: TxState::Off,
            buf: ReplayBuffer::new(storage, Seq::from_index(0)),
            replay_deadline: None,
            replay_count: 0,
            init_due: None,
            pcs_down_since: None,
            events: Deque::new(),
            stats: TxStats::ZERO,
        }
    }

    /// Makes this transmitter what [`LlrTx::new`]`(config, storage, first)` returns with its own
    /// storage, in place (without a second one on the stack): OFF, nothing stored, counters at
    /// zero. Refused as `new` refuses, and then nothing changed.
    pub fn init(&mut self, config: LlrTxConfig, first: Seq<S>) -> Result<(), Error> {
        Self::check(&config, self.buf.capacity_bytes())?;
        self.config = config;
        self.state = TxState::Off;
        self.buf.reset_to(first);
        self.replay_deadline = None;
        self.replay_count = 0;
        self.init_due = None;
        self.pcs_down_since = None;
        self.events.clear();
        self.stats = TxStats::ZERO;
        Ok(())
    }

    /// Why `config` cannot drive a transmitter whose storage holds `storage_len` bytes.
    pub(crate) fn check(config: &LlrTxConfig, storage_len: usize) -> Result<(), Error> {
        if config.outstanding_frames_max == 0 {
            return Err(Error::BadConfig { field: "outstanding_frames_max" });
        }
        if config.outstanding_bytes_max == 0 {
            return Err(Error::BadConfig { field: "outstanding_bytes_max" });
        }
        if config.replay_count_max == 0 {
            // SONiC's YANG range is 1..=255: at least one replay before FLUSH.
            return Err(Error::BadConfig { field: "replay_count_max (0)" });
        }
        if config.replay_timeout == Duration::ZERO {
            return Err(Error::BadConfig { field: "replay_timeout" });
        }
        if config.init_interval == Duration::ZERO {
            return Err(Error::BadConfig { field: "init_interval" });
        }
        // The limits must fit the storage: more would be refused by the buffer with WindowFull
        // long before the configured limit, and the configuration would not say what happens.
        if config.outstanding_frames_max as usize > ReplayBuffer::<S, B, N>::MAX_FRAMES {
            return Err(Error::BadConfig {
                field: "outstanding_frames_max (beyond the frame slots or half the sequence space)",
            });
        }
        if config.outstanding_bytes_max as usize > storage_len {
            return Err(Error::BadConfig { field: "outstanding_bytes_max (beyond the replay storage)" });
        }
        Ok(())
    }

    /// Whether the PCS is up, as last reported by [`LlrTx::set_pcs_status`].
    pub fn pcs_up(&self) -> bool {
        self.pcs_down_since.is_none()
    }

    /// The current state.
    pub fn state(&self) -> TxState {
        self.state
    }

    /// Counters.
    pub fn stats(&self) -> &TxStats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &LlrTxConfig {
        &self.config
    }

    /// The replay buffer (read-only).
    pub fn buffer(&self) -> &ReplayBuffer<S, B, N> {
        &self.buf
    }

    fn apply(&mut self, input: TxInput, name: &'static str) -> Result<TxState, Error> {
        let to = transition(self.state, input).ok_or(Error::InvalidState { state: self.state.name(), input: name })?;
        self.state = to;
        Ok(to)
    }

    fn emit(&mut self, e: LlrTxEvent) {
        if self.events.is_full() {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        let _ = self.events.push_back(e);
    }

    /// Enables LLR transmission (`LLR_MODE_REMOTE`): OFF → INIT, sending LLR_INIT. An
    /// [`LlrTx::EMPTY`] not yet [`LlrTx::init`]ed is refused ([`Error::BadConfig`]).
    pub fn enable(&mut self, now: Instant) -> Result<(), Error> {
        if self.config.init_interval == Duration::ZERO {
            return Err(Error::BadConfig { field: "not configured (init)" });
        }
        self.apply(TxInput::Enable, "enable")?;
        self.init_due = Some(now);
        Ok(())
    }

    /// Disables LLR transmission: any state → OFF. Stored frames are dropped and reported as a
    /// count.
    pub fn disable(&mut self) -> u32 {
        let _ = self.apply(TxInput::Disable, "disable");
        self.init_due = None;
        self.replay_deadline = None;
        self.buf.clear() as u32
    }

    /// Management re-initialisation out of FLUSH: FLUSH → INIT.
    pub fn reinit(&mut self, now: Instant) -> Result<(), Error> {
        self.apply(TxInput::Reinit, "reinit")?;
        self.init_due = Some(now);
        Ok(())
    }

    /// Starts a new INIT handshake from any enabled state (OFF stays OFF, [`Error::InvalidState`]),
    /// dropping the unacknowledged frames (returned, and reported by [`LlrTxEvent::Restarted`]).
    /// Numbering continues after the last number used, so frames of the old handshake still on
    /// the wire arrive behind the receiver's new expected number and are dropped as duplicates.
    ///
    /// This is the response to a peer that restarted ([`super::InitOutcome::PeerRestarted`]):
    /// its receiver lost its state, so this transmitter must announce itself again. The dropped
    /// frames were not acknowledged; whether the old peer delivered them is unknown, so sending
    /// them to the new one could duplicate them.
    pub fn restart(&mut self, now: Instant) -> Result<u32, Error> {
        self.apply(TxInput::Restart, "restart")?;
        let dropped = self.buf.clear() as u32;
        self.replay_deadline = None;
        self.replay_count = 0;
        self.init_due = Some(now);
        self.stats.restarts += 1;
        self.stats.flushed_frames += u64::from(dropped);
        self.emit(LlrTxEvent::Restarted { frames_dropped: dropped });
        Ok(dropped)
    }

    /// Offers an LLR-eligible frame. In ADVANCE and REPLAY it is stored and numbered
    /// ([`Admit::Queued`]), or refused with [`Error::WindowFull`] when the outstanding limits or
    /// the buffer are exhausted (the caller keeps it and retries after an ACK). In OFF it goes
    /// out plain; in INIT and FLUSH the configured [`FrameAction`] decides, and
    /// [`FrameAction::Block`] refuses with [`Error::InvalidState`].
    pub fn send(&mut self, now: Instant, frame: &[u8]) -> Result<Admit<S>, Error> {
        self.send_with(now, frame.len(), |_, buf| _ = crate::bytes::copy_prefix(buf, frame))
    }

    /// [`LlrTx::send`] for a frame the sender marks bad on purpose: stored and numbered like any
    /// other, and handed out by [`LlrTx::poll_transmit`] with [`Outgoing::mark`] set every time
    /// it goes out, for the embedder to send with a poisoned FCS (`LLR_TX_POISONED`). The
    /// receiver consumes its number and does not deliver it.
    pub fn send_poisoned(&mut self, now: Instant, frame: &[u8]) -> Result<Admit<S>, Error> {
        self.offer(now, frame.len(), true, |_, buf| _ = crate::bytes::copy_prefix(buf, frame))
    }

    /// [`LlrTx::send`] for a frame built in place by `fill`, which is called only when the frame
    /// is stored ([`Admit::Queued`]). On [`Admit::SendPlain`] nothing was stored and `fill` was not
    /// called: the caller builds the frame itself and sends it without a sequence number.
    pub fn send_with(
        &mut self,
        now: Instant,
        len: usize,
        fill: impl FnOnce(Seq<S>, &mut [u8]),
    ) -> Result<Admit<S>, Error> {
        self.offer(now, len, false, fill)
    }

    fn offer(
        &mut self,
        now: Instant,
        len: usize,
        poisoned: bool,
        fill: impl FnOnce(Seq<S>, &mut [u8]),
    ) -> Result<Admit<S>, Error> {
        // A frame no window can ever hold is refused for good, not with WindowFull (which
        // promises room after an ACK).
        if len > self.config.outstanding_bytes_max as usize {
            return Err(Error::BadValue { field: "frame length (beyond OUTSTANDING_BYTES_MAX)", value: len as u32 });
        }
        let link_down = self.pcs_down_since.is_some();
        let action = match self.state {
            TxState::Off => return Ok(Admit::SendPlain),
            TxState::Init => self.config.init_action,
            TxState::Flush => self.config.flush_action,
            TxState::Advance | TxState::Replay if link_down => self.config.link_down_action,
            TxState::Advance | TxState::Replay => {
                if self.buf.len() >= self.config.outstanding_frames_max as usize
                    || self.buf.bytes().saturating_add(len) > self.config.outstanding_bytes_max as usize
                {
                    return Err(Error::WindowFull);
                }
                return self.buf.push_marked_with(now, len, poisoned, fill).map(Admit::Queued);
            }
        };
        match action {
            FrameAction::BestEffort => Ok(Admit::SendPlain),
            FrameAction::Discard => {
                if matches!(self.state, TxState::Init | TxState::Flush) {
                    self.stats.tx_discard += 1;
                } else {
                    self.stats.link_down_discards += 1;
                }
                Ok(Admit::Discarded)
            }
            FrameAction::Block => Err(Error::InvalidState { state: self.state.name(), input: "send (blocked)" }),
        }
    }

    /// The next frame to put on the wire, replays first. Nothing in OFF, INIT or FLUSH.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing<'_, S>> {
        if !matches!(self.state, TxState::Advance | TxState::Replay) {
            return None;
        }
        if self.buf.pending() == 0 {
            return None;
        }
        // The replay completes with the last frame it resends.
        if self.state == TxState::Replay && self.buf.replays_pending() <= 1 {
            self.replay_done();
        }
        if self.replay_deadline.is_none() {
            self.replay_deadline = Some(now.saturating_add(self.config.replay_timeout));
        }
        let out = self.buf.poll_next()?;
        if out.replay {
            self.stats.frames_replayed += 1;
        }
        if out.mark {
            self.stats.tx_poisoned += 1;
        } else {
            self.stats.tx_ok += 1;
        }
        Some(out)
    }

    /// The next control ordered set the transmitter needs sent (LLR_INIT in INIT).
    pub fn poll_control(&mut self, now: Instant) -> Option<CtlOs> {
        let due = self.init_due?;
        if self.state != TxState::Init || now < due {
            return None;
        }
        self.init_due = Some(now.saturating_add(self.config.init_interval));
        self.stats.init_tx += 1;
        Some(CtlOs::LlrInit { seq: self.buf.next_seq().value() })
    }

    fn seq(raw: u32, field: &'static str) -> Result<Seq<S>, Error> {
        Seq::new(raw).ok_or(Error::OutOfWindow { field, seq: raw })
    }

    /// Handles LLR_INIT_ECHO: INIT → ADVANCE when it echoes the number announced.
    pub fn handle_init_echo(&mut self, _now: Instant, seq: u32) -> Result<(), Error> {
        self.stats.init_echo_rx += 1;
        if self.state != TxState::Init {
            return Err(Error::InvalidState { state: self.state.name(), input: "LLR_INIT_ECHO" });
        }
        if seq != self.buf.next_seq().value() {
            return Err(Error::OutOfWindow { field: "LLR_INIT_ECHO", seq });
        }
        self.apply(TxInput::InitEchoed, "LLR_INIT_ECHO")?;
        self.init_due = None;
        self.replay_count = 0;
        self.emit(LlrTxEvent::Initialized);
        Ok(())
    }

    fn check_ack_state(&self, input: &'static str) -> Result<(), Error> {
        match self.state {
            TxState::Advance | TxState::Replay => Ok(()),
            s => Err(Error::InvalidState { state: s.name(), input }),
        }
    }

    /// REPLAY → ADVANCE: a replay completed (`LLR_TX_REPLAY`).
    fn replay_done(&mut self) {
        if self.apply(TxInput::ReplayCaughtUp, "replay caught up").is_ok() {
            self.stats.tx_replay += 1;
        }
    }

    fn after_progress(&mut self, now: Instant, released: usize) {
        // An ACK may release every frame a replay still had to resend.
        if self.state == TxState::Replay && !self.buf.is_replaying() {
            self.replay_done();
        }
        if released > 0 {
            self.replay_count = 0;
            self.replay_deadline = (self.buf.in_flight() > 0).then(|| now.saturating_add(self.config.replay_timeout));
        }
    }

    /// Handles LLR_ACK: releases every frame up to `seq`. An out-of-window number is counted and
    /// refused with [`Error::OutOfWindow`], changing nothing.
    pub fn handle_ack(&mut self, now: Instant, seq: u32) -> Result<usize, Error> {
        self.stats.ack_rx += 1;
        self.check_ack_state("LLR_ACK")?;
        let released = Self::seq(seq, "LLR_ACK").and_then(|s| self.buf.ack(s)).inspect_err(|_| {
            self.stats.ack_nack_seq_errors += 1;
        })?;
        self.after_progress(now, released);
        Ok(released)
    }

    /// Handles LLR_NACK: releases every frame up to `seq` (the receiver has them) and replays
    /// from the next (go-back-N).
    pub fn handle_nack(&mut self, now: Instant, seq: u32) -> Result<(), Error> {
        self.stats.nack_rx += 1;
        self.check_ack_state("LLR_NACK")?;
        let released = Self::seq(seq, "LLR_NACK").and_then(|s| self.buf.ack(s)).inspect_err(|_| {
            self.stats.ack_nack_seq_errors += 1;
        })?;
        self.after_progress(now, released);
        if self.buf.in_flight() > 0 {
            self.start_replay(now, ReplayCause::Nack);
        }
        Ok(())
    }

    /// Starts a go-back-N replay, or flushes when it would be one more than `REPLAY_COUNT_MAX`
    /// without progress. Replays started by an LLR_NACK count like timer replays (the SONiC LLR
    /// test plan's persistent-loss case: `LLR_TX_REPLAY` never exceeds `REPLAY_COUNT_MAX`).
    fn start_replay(&mut self, now: Instant, cause: ReplayCause) {
        let max = self.config.replay_count_max;
        if max != REPLAY_COUNT_UNLIMITED && self.replay_count >= max {
            return self.flush(now, FlushReason::ReplayCountExceeded);
        }
        let input = match cause {
            ReplayCause::Nack => TxInput::Nack,
            ReplayCause::Timer => TxInput::ReplayTimer,
        };
        if self.apply(input, "replay").is_err() {
            return;
        }
        self.replay_count = self.replay_count.saturating_add(1);
        self.buf.rewind_all();
        self.replay_deadline = Some(now.saturating_add(self.config.replay_timeout));
        self.stats.replays_started += 1;
        self.emit(LlrTxEvent::ReplayStarted { from: self.buf.base().value(), cause });
    }

    /// Reports the PCS link status (`PCS status`); a PCS down longer than `PCS_LOST_TIMEOUT`
    /// flushes.
    pub fn set_pcs_status(&mut self, now: Instant, up: bool) {
        self.pcs_down_since = match (up, self.pcs_down_since) {
            (true, _) => None,
            (false, Some(since)) => Some(since),
            (false, None) => Some(now),
        };
    }

    fn flush(&mut self, now: Instant, reason: FlushReason) {
        if self.apply(TxInput::Fault, "fault").is_err() {
            return;
        }
        let dropped = self.buf.clear() as u32;
        self.replay_deadline = None;
        self.replay_count = 0;
        self.stats.flushes += 1;
        self.stats.flushed_frames += u64::from(dropped);
        self.emit(LlrTxEvent::Flushed { reason, frames_dropped: dropped });
        if self.config.reinit_on_flush {
            let _ = self.reinit(now);
        }
    }

    fn data_age_deadline(&self) -> Option<Instant> {
        let age = self.config.data_age_timeout?;
        Some(self.buf.oldest_stored_at()?.saturating_add(age))
    }

    fn pcs_deadline(&self) -> Option<Instant> {
        Some(self.pcs_down_since?.saturating_add(self.config.pcs_lost_timeout?))
    }

    /// The next instant [`LlrTx::handle_timeout`] or [`LlrTx::poll_control`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let active = matches!(self.state, TxState::Advance | TxState::Replay);
        [
            if self.state == TxState::Init { self.init_due } else { None },
            if active { self.replay_deadline } else { None },
            if active { self.data_age_deadline() } else { None },
            if active { self.pcs_deadline() } else { None },
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs the timers due at `now`; safe to call at any time.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !matches!(self.state, TxState::Advance | TxState::Replay) {
            return;
        }
        if self.pcs_deadline().is_some_and(|d| now >= d) {
            return self.flush(now, FlushReason::PcsLost);
        }
        if self.data_age_deadline().is_some_and(|d| now >= d) {
            return self.flush(now, FlushReason::DataAge);
        }
        if self.replay_deadline.is_some_and(|d| now >= d) {
            if self.buf.in_flight() == 0 {
                self.replay_deadline = None;
            } else {
                self.start_replay(now, ReplayCause::Timer);
            }
        }
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<LlrTxEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seq::Bits;

    type Tx = LlrTx<Bits<16>, [u8; 256], 8>;

    fn t(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    /// The SAI defaults with a 10 µs replay timer and limits that fit the tests' 8-slot,
    /// 256-byte storage.
    fn small() -> LlrTxConfig {
        LlrTxConfig {
            outstanding_frames_max: 8,
            outstanding_bytes_max: 256,
            replay_timeout: Duration::from_micros(10),
            init_interval: Duration::from_micros(10),
            ..LlrTxConfig::hardware(&crate::llr::LlrSizing::hardware(Duration::ZERO, crate::LinkRate::GBPS_800))
        }
    }

    fn advancing(config: LlrTxConfig) -> Tx {
        let mut tx = Tx::new(config, [0; 256], Seq::new(10).unwrap()).unwrap();
        tx.enable(t(0)).unwrap();
        assert_eq!(tx.poll_control(t(0)), Some(CtlOs::LlrInit { seq: 10 }));
        tx.handle_init_echo(t(1), 10).unwrap();
        assert_eq!(tx.poll_event(), Some(LlrTxEvent::Initialized));
        tx
    }

    fn drain(tx: &mut Tx, now: Instant) -> heapless::Vec<(u32, bool), 16> {
        core::iter::from_fn(|| tx.poll_transmit(now).map(|o| (o.seq.value(), o.replay))).collect()
    }

    #[test]
    fn init_handshake() {
        let mut tx = Tx::new(small(), [0; 256], Seq::new(10).unwrap()).unwrap();
        assert_eq!(tx.send(t(0), &[1; 8]).unwrap(), Admit::SendPlain);
        assert!(tx.handle_init_echo(t(0), 10).is_err());
        tx.enable(t(0)).unwrap();
        assert!(tx.enable(t(0)).is_err());
        assert_eq!(tx.state(), TxState::Init);
        assert_eq!(tx.poll_control(t(0)), Some(CtlOs::LlrInit { seq: 10 }));
        assert_eq!(tx.poll_control(t(5)), None);
        // Repeated every init_interval until echoed.
        assert_eq!(tx.poll_timeout(), Some(t(10_000)));
        assert_eq!(tx.poll_control(t(10_000)), Some(CtlOs::LlrInit { seq: 10 }));
        assert_eq!(tx.send(t(0), &[1; 8]).unwrap(), Admit::SendPlain);
        assert!(matches!(tx.handle_init_echo(t(1), 11), Err(Error::OutOfWindow { .. })));
        tx.handle_init_echo(t(1), 10).unwrap();
        assert_eq!(tx.state(), TxState::Advance);
        assert_eq!(tx.poll_control(t(20_000)), None);
    }

    #[test]
    fn ack_releases_and_nack_goes_back() {
        let mut tx = advancing(small());
        for i in 0..4u8 {
            assert_eq!(tx.send(t(2), &[i; 16]).unwrap(), Admit::Queued(Seq::new(10 + u32::from(i)).unwrap()));
        }
        assert_eq!(&drain(&mut tx, t(3))[..], &[(10, false), (11, false), (12, false), (13, false)]);
        assert_eq!(tx.handle_ack(t(4), 10).unwrap(), 1);
        // 12 was corrupted: NACK carries the newest good frame, 11.
        tx.handle_nack(t(5), 11).unwrap();
        assert_eq!(tx.state(), TxState::Replay);
        assert_eq!(tx.poll_event(), Some(LlrTxEvent::ReplayStarted { from: 12, cause: ReplayCause::Nack }));
        tx.send(t(5), &[9; 16]).unwrap();
        assert_eq!(tx.poll_transmit(t(6)).map(|o| (o.seq.value(), o.replay)), Some((12, true)));
        assert_eq!(tx.state(), TxState::Replay);
        assert_eq!(tx.poll_transmit(t(6)).map(|o| (o.seq.value(), o.replay)), Some((13, true)));
        assert_eq!(tx.state(), TxState::Advance, "the replay completes with its last frame");
        assert_eq!(&drain(&mut tx, t(6))[..], &[(14, false)]);
        // An ACK beyond the newest frame sent is refused and counted.
        assert!(matches!(tx.handle_ack(t(7), 15), Err(Error::OutOfWindow { .. })));
        assert_eq!(tx.stats().ack_nack_seq_errors, 1);
        assert_eq!(tx.handle_ack(t(7), 14).unwrap(), 3);
        assert!(tx.buffer().is_empty());
        assert_eq!(tx.poll_timeout(), None);
    }

    #[test]
    fn replay_timer_then_flush() {
        let cfg = LlrTxConfig { replay_count_max: 2, ..small() };
        let mut tx = advancing(cfg);
        tx.send(t(0), &[1; 16]).unwrap();
        tx.send(t(0), &[2; 16]).unwrap();
        drain(&mut tx, t(100));
        let deadline = tx.poll_timeout().unwrap();
        assert_eq!(deadline, t(10_100));
        tx.handle_timeout(t(10_099));
        assert_eq!(tx.state(), TxState::Advance);
        for round in 1..=2u64 {
            let now = tx.poll_timeout().unwrap();
            tx.handle_timeout(now);
            assert_eq!(tx.state(), TxState::Replay);
            assert_eq!(tx.poll_event(), Some(LlrTxEvent::ReplayStarted { from: 10, cause: ReplayCause::Timer }));
            assert_eq!(&drain(&mut tx, now)[..], &[(10, true), (11, true)], "round {round}");
        }
        let now = tx.poll_timeout().unwrap();
        tx.handle_timeout(now);
        assert_eq!(tx.state(), TxState::Flush);
        assert_eq!(
            tx.poll_event(),
            Some(LlrTxEvent::Flushed { reason: FlushReason::ReplayCountExceeded, frames_dropped: 2 })
        );
        assert_eq!(tx.send(now, &[3; 4]).unwrap(), Admit::SendPlain);
        assert!(tx.handle_ack(now, 11).is_err());
        tx.reinit(now).unwrap();
        // Numbering continues after the flushed frames.
        assert_eq!(tx.poll_control(now), Some(CtlOs::LlrInit { seq: 12 }));
    }

    /// A replay started by an LLR_NACK counts towards `REPLAY_COUNT_MAX` like a timer replay
    /// (SONiC LLR test plan, persistent loss: `LLR_TX_REPLAY` never exceeds the maximum; Scale-Up
    /// LLR-02: one NACK, one retry).
    #[test]
    fn nack_replays_count_towards_the_maximum() {
        let mut tx = advancing(LlrTxConfig { replay_count_max: 3, ..small() });
        tx.send(t(0), &[1; 16]).unwrap();
        drain(&mut tx, t(0));
        tx.handle_nack(t(1), 9).unwrap(); // nothing received: the newest good frame is 9
        assert_eq!(tx.stats().replays_started, 1, "one NACK, one retry");
        drain(&mut tx, t(1));
        for _ in 0..2 {
            tx.handle_timeout(tx.poll_timeout().unwrap());
            drain(&mut tx, t(1));
        }
        assert_eq!(tx.stats().replays_started, 3);
        assert_eq!(tx.stats().tx_replay, 3, "each replay completed");
        tx.handle_timeout(tx.poll_timeout().unwrap());
        assert_eq!(tx.state(), TxState::Flush, "a fourth would exceed REPLAY_COUNT_MAX");
        assert!(tx.stats().tx_replay <= 3);
    }

    /// `REPLAY_COUNT_MAX` = 255 means no maximum (SAI `inc/saiport.h`).
    #[test]
    fn replay_count_255_never_flushes() {
        let mut tx = advancing(LlrTxConfig { replay_count_max: REPLAY_COUNT_UNLIMITED, ..small() });
        tx.send(t(0), &[1; 16]).unwrap();
        drain(&mut tx, t(0));
        for _ in 0..1000 {
            tx.handle_timeout(tx.poll_timeout().unwrap());
            drain(&mut tx, t(0));
        }
        assert_eq!(tx.state(), TxState::Advance);
        assert_eq!((tx.stats().replays_started, tx.stats().flushes), (1000, 0));
    }

    /// `LLR_TX_OK` counts every frame sent with a good FCS, replays included; a poisoned frame
    /// goes out marked every time and counts in `LLR_TX_POISONED`.
    #[test]
    fn tx_counters_follow_sai() {
        let mut tx = advancing(small());
        tx.send(t(0), &[1; 16]).unwrap();
        tx.send_poisoned(t(0), &[2; 16]).unwrap();
        let marks: heapless::Vec<bool, 4> = core::iter::from_fn(|| tx.poll_transmit(t(0)).map(|o| o.mark)).collect();
        assert_eq!(&marks[..], &[false, true]);
        tx.handle_timeout(tx.poll_timeout().unwrap());
        let marks: heapless::Vec<bool, 4> = core::iter::from_fn(|| tx.poll_transmit(t(0)).map(|o| o.mark)).collect();
        assert_eq!(&marks[..], &[false, true], "the replay carries the poison again");
        let s = tx.stats();
        assert_eq!((s.tx_ok, s.tx_poisoned, s.frames_replayed, s.tx_replay), (2, 2, 2, 1));
    }

    /// Limits beyond the storage are refused when the transmitter is made.
    #[test]
    fn limits_must_fit_the_storage() {
        let too_many = LlrTxConfig { outstanding_frames_max: 9, ..small() };
        assert!(matches!(Tx::new(too_many, [0; 256], Seq::FIRST), Err(Error::BadConfig { .. })));
        let too_big = LlrTxConfig { outstanding_bytes_max: 257, ..small() };
        assert!(matches!(Tx::new(too_big, [0; 256], Seq::FIRST), Err(Error::BadConfig { .. })));
        assert!(Tx::new(small(), [0; 256], Seq::FIRST).is_ok());
        let no_replay = LlrTxConfig { replay_count_max: 0, ..small() };
        assert!(matches!(Tx::new(no_replay, [0; 256], Seq::FIRST), Err(Error::BadConfig { .. })));
    }

    /// While the PCS reports the link down, offered frames meet the link-down action.
    #[test]
    fn frames_offered_while_the_link_is_down() {
        let mut tx = advancing(LlrTxConfig { link_down_action: FrameAction::Block, ..small() });
        tx.set_pcs_status(t(0), false);
        assert!(matches!(tx.send(t(0), &[1; 4]), Err(Error::InvalidState { .. })));
        let mut tx = advancing(small());
        tx.set_pcs_status(t(0), false);
        assert_eq!(tx.send(t(0), &[1; 4]), Ok(Admit::Discarded));
        assert_eq!((tx.stats().tx_discard, tx.stats().link_down_discards), (0, 1));
        assert!(!tx.pcs_up());
        tx.set_pcs_status(t(1), true);
        assert!(matches!(tx.send(t(1), &[1; 4]), Ok(Admit::Queued(_))));
    }

    #[test]
    fn ack_progress_resets_the_replay_count() {
        let mut tx = advancing(small());
        tx.send(t(0), &[1; 16]).unwrap();
        tx.send(t(0), &[2; 16]).unwrap();
        drain(&mut tx, t(0));
        tx.handle_timeout(tx.poll_timeout().unwrap());
        assert_eq!(tx.state(), TxState::Replay);
        // The ACK releases both frames the replay still had to resend: the replay is over.
        tx.handle_ack(t(10_001), 11).unwrap();
        assert_eq!(tx.state(), TxState::Advance);
        tx.send(t(10_001), &[3; 16]).unwrap();
        drain(&mut tx, t(10_001));
        // One more timer replay is allowed again.
        tx.handle_timeout(tx.poll_timeout().unwrap());
        assert_eq!(tx.state(), TxState::Replay);
    }

    #[test]
    fn outstanding_limits_and_frame_actions() {
        let cfg = LlrTxConfig {
            outstanding_frames_max: 2,
            outstanding_bytes_max: 40,
            init_action: FrameAction::Discard,
            flush_action: FrameAction::Block,
            data_age_timeout: Some(Duration::from_micros(1)),
            ..small()
        };
        let mut tx = Tx::new(cfg, [0; 256], Seq::FIRST).unwrap();
        tx.enable(t(0)).unwrap();
        assert_eq!(tx.send(t(0), &[0; 8]).unwrap(), Admit::Discarded);
        assert_eq!(tx.stats().tx_discard, 1);
        tx.handle_init_echo(t(0), 0).unwrap();
        tx.send(t(0), &[0; 30]).unwrap();
        assert_eq!(tx.send(t(0), &[0; 11]), Err(Error::WindowFull));
        tx.send(t(0), &[0; 10]).unwrap();
        assert_eq!(tx.send(t(0), &[0; 1]), Err(Error::WindowFull));
        // A frame no window can hold is refused for good, not "retry after an ACK".
        assert!(matches!(tx.send(t(0), &[0; 41]), Err(Error::BadValue { .. })));
        // Data age flushes; FLUSH blocks.
        assert_eq!(tx.poll_timeout(), Some(t(1_000)));
        tx.handle_timeout(t(1_000));
        assert_eq!(tx.state(), TxState::Flush);
        assert!(matches!(tx.send(t(1_000), &[0; 1]), Err(Error::InvalidState { .. })));
    }

    #[test]
    fn pcs_loss_flushes_and_reinit_on_flush() {
        let cfg = LlrTxConfig { pcs_lost_timeout: Some(Duration::from_nanos(500)), reinit_on_flush: true, ..small() };
        let mut tx = advancing(cfg);
        tx.send(t(0), &[0; 8]).unwrap();
        tx.set_pcs_status(t(100), false);
        tx.set_pcs_status(t(200), false);
        tx.set_pcs_status(t(300), true);
        tx.handle_timeout(t(700));
        assert_eq!(tx.state(), TxState::Advance);
        tx.set_pcs_status(t(1000), false);
        assert_eq!(tx.poll_timeout(), Some(t(1500)));
        tx.handle_timeout(t(1500));
        assert_eq!(tx.state(), TxState::Init);
        assert_eq!(tx.poll_event(), Some(LlrTxEvent::Flushed { reason: FlushReason::PcsLost, frames_dropped: 1 }));
        assert_eq!(tx.disable(), 0);
        assert_eq!(tx.state(), TxState::Off);
    }

    #[test]
    fn transitions_table() {
        use TxInput as I;
        use TxState as S;
        assert_eq!(transition(S::Off, I::InitEchoed), None);
        assert_eq!(transition(S::Init, I::Nack), None);
        assert_eq!(transition(S::Flush, I::Enable), None);
        assert_eq!(transition(S::Replay, I::Disable), Some(S::Off));
        assert_eq!(transition(S::Advance, I::ReplayCaughtUp), None);
        assert!(Tx::new(LlrTxConfig { replay_timeout: Duration::ZERO, ..small() }, [0; 256], Seq::FIRST).is_err());
    }
}
