//! The LLR receiver (UE 1.0 §5.1): OFF, SEND_ACKS, SEND_NACK, NACK_SENT.
//!
//! *Project-defined* (the `llr` module doc says why): in NACK_SENT a frame already received is
//! acknowledged again, as in SEND_ACKS.

use crate::Error;
use crate::seq::{Seq, SeqSpace};
use crate::time::{Duration, Instant, LinkRate};
use crate::wire::CtlOs;

/// Receiver states (SAI `sai_port_llr_rx_status_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxState {
    /// Not initialised (no LLR_INIT yet) or disabled: frames pass without sequence checks.
    Off,
    /// Accepting frames in sequence and acknowledging them.
    SendAcks,
    /// A frame was bad or missing; an LLR_NACK is due.
    SendNack,
    /// LLR_NACK sent: discarding until the expected frame arrives (frames already received are
    /// acknowledged again; `llr` module doc).
    NackSent,
}

impl RxState {
    /// The state's name in the specification.
    pub const fn name(self) -> &'static str {
        match self {
            RxState::Off => "OFF",
            RxState::SendAcks => "SEND_ACKS",
            RxState::SendNack => "SEND_NACK",
            RxState::NackSent => "NACK_SENT",
        }
    }
}

/// The FCS verdict of a received frame, as the MAC/PCS reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FrameCheck {
    /// Good FCS.
    Good,
    /// Bad FCS or uncorrectable FEC error: the frame, its sequence number included, is not to be
    /// trusted.
    Bad,
    /// The sender marked the frame bad on purpose (poisoned FCS).
    Poisoned,
}

/// What to do with a received LLR frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxVerdict {
    /// Pass the frame up: it is the next in sequence (or LLR is OFF and the FCS is good).
    Deliver,
    /// Drop it: a poisoned frame that consumed its sequence number.
    DropPoisoned,
    /// Drop it: already delivered (a replay overlapping frames received before).
    Duplicate,
    /// Drop it: bad FCS, out of sequence, waiting for the expected frame after a NACK, or an LLR
    /// frame before the INIT handshake.
    Discard,
}

/// What an LLR_INIT meant to the receiver ([`LlrRx::handle_init`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitOutcome {
    /// The first handshake since reset or since the receiver was enabled.
    First,
    /// The same number again with no frame received since: the peer repeats LLR_INIT until its
    /// echo arrives (the echo, or what followed it, was lost).
    Repeated,
    /// A new handshake while the receiver was running (a different number, or frames received
    /// since the last one): the peer's transmitter started over, after a restart of that end or
    /// a re-initialisation, and what it sent before the LLR_INIT is gone.
    PeerRestarted {
        /// The number the receiver expected next.
        was_expecting: u32,
    },
}

/// Receiver configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LlrRxConfig {
    /// `LLR_MODE_LOCAL`: accept LLR_INIT and run LLR reception.
    pub enabled: bool,
    /// `CTLOS_TARGET_SPACING`: bytes between LLR_ACKs (default 2048).
    pub ack_spacing: u32,
    /// Rate of the link the ACKs travel on, to turn the spacing into time.
    pub link_rate: LinkRate,
}

impl LlrRxConfig {
    /// Reception disabled, every field zero: the configuration of an [`LlrRx::EMPTY`].
    pub(crate) const ZERO: Self = LlrRxConfig { enabled: false, ack_spacing: 0, link_rate: LinkRate::ZERO };
}

impl Default for LlrRxConfig {
    fn default() -> Self {
        LlrRxConfig { enabled: true, ack_spacing: 2048, link_rate: LinkRate::GBPS_800 }
    }
}

/// Receiver counters: the SAI `SAI_PORT_STAT_LLR_*` statistics of the receive side, each named
/// in its doc, and one of this crate's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxStats {
    /// LLR_INIT received (`LLR_RX_INIT_CTL_OS`).
    pub init_rx: u64,
    /// LLR_INIT_ECHO sent (`LLR_TX_INIT_ECHO_CTL_OS`).
    pub init_echo_tx: u64,
    /// LLR_ACK sent (`LLR_TX_ACK_CTL_OS`).
    pub ack_tx: u64,
    /// LLR_NACK sent (`LLR_TX_NACK_CTL_OS`).
    pub nack_tx: u64,
    /// LLR frames with a good FCS (`LLR_RX_OK`).
    pub ok: u64,
    /// LLR frames with a bad FCS (`LLR_RX_BAD`).
    pub bad: u64,
    /// LLR frames with a poisoned FCS (`LLR_RX_POISONED`).
    pub poisoned: u64,
    /// Frames with the expected number and a good FCS (`LLR_RX_EXPECTED_SEQ_GOOD`).
    pub expected_seq_good: u64,
    /// Frames with the expected number and a poisoned FCS (`LLR_RX_EXPECTED_SEQ_POISONED`).
    pub expected_seq_poisoned: u64,
    /// Frames with the expected number and a bad FCS (`LLR_RX_EXPECTED_SEQ_BAD`).
    pub expected_seq_bad: u64,
    /// Frames whose number shows a missing frame, whatever their FCS (`LLR_RX_MISSING_SEQ`).
    pub missing_seq: u64,
    /// Frames with a number already received, whatever their FCS (`LLR_RX_DUPLICATE_SEQ`).
    pub duplicate_seq: u64,
    /// Replays seen starting, after an LLR_NACK or on the sender's replay timer: a frame
    /// numbered at or before the one received just before it, or the expected frame after a
    /// NACK (`LLR_RX_REPLAY`).
    pub rx_replay: u64,
    /// LLR frames discarded because they came before the INIT handshake (this crate's).
    pub before_init: u64,
}

impl RxStats {
    /// Every counter zero.
    pub const ZERO: Self = RxStats {
        init_rx: 0,
        init_echo_tx: 0,
        ack_tx: 0,
        nack_tx: 0,
        ok: 0,
        bad: 0,
        poisoned: 0,
        expected_seq_good: 0,
        expected_seq_poisoned: 0,
        expected_seq_bad: 0,
        missing_seq: 0,
        duplicate_seq: 0,
        rx_replay: 0,
        before_init: 0,
    };
}

/// Inputs that change the receiver's state; see [`transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxInput {
    Init,
    Disable,
    Gap,
    NackEmitted,
    Expected,
}

/// Every state change of the receiver, in one place. `None`: not allowed.
fn transition(state: RxState, input: RxInput) -> Option<RxState> {
    use RxInput as I;
    use RxState as S;
    Some(match (state, input) {
        (_, I::Disable) => S::Off,
        (_, I::Init) => S::SendAcks,
        (S::SendAcks, I::Gap) => S::SendNack,
        (S::SendNack, I::NackEmitted) => S::NackSent,
        (S::SendAcks | S::SendNack | S::NackSent, I::Expected) => S::SendAcks,
        _ => return None,
    })
}

/// The LLR receiver over sequence space `S`.
///
/// It never touches frame bytes: the embedder passes each LLR frame's sequence number and FCS
/// verdict to [`LlrRx::handle_frame`] and acts on the returned [`RxVerdict`]; it sends what
/// [`LlrRx::poll_control`] returns.
///
/// Size on a 64-bit host: 176 bytes. Built in place: [`LlrRx::EMPTY`] and [`LlrRx::init`].
#[derive(Clone, Debug)]
pub struct LlrRx<S: SeqSpace> {
    config: LlrRxConfig,
    ack_spacing: Duration,
    state: RxState,
    expected: Seq<S>,
    ack_pending: bool,
    last_ack_at: Option<Instant>,
    echo_pending: Option<Seq<S>>,
    /// The number of the last LLR frame received with a trustworthy number, to see replays start.
    last_seen: Option<Seq<S>>,
    /// Whether a replay was seen start since the receiver last found a gap.
    replay_seen: bool,
    stats: RxStats,
}

impl<S: SeqSpace> LlrRx<S> {
    /// A receiver in OFF with LLR reception disabled (`enabled` false, every field zero, so a
    /// `static` holding it lands in `.bss`) until [`LlrRx::init`] configures it in place.
    pub const EMPTY: Self = LlrRx {
        config: LlrRxConfig::ZERO,
        ack_spacing: Duration::ZERO,
        state: RxState::Off,
        expected: Seq::from_index(0),
        ack_pending: false,
        last_ack_at: None,
        echo_pending: None,
        last_seen: None,
        replay_seen: false,
        stats: RxStats::ZERO,
    };

    /// A receiver in OFF. (Built on the stack; see [`LlrRx::init`] for building one in place.)
    pub fn new(config: LlrRxConfig) -> Self {
        let mut rx = Self::EMPTY;
        rx.init(config);
        rx
    }

    /// Makes this receiver what [`LlrRx::new`]`(config)` returns, in place: OFF, counters at
    /// zero.
    pub fn init(&mut self, config: LlrRxConfig) {
        self.config = config;
        self.ack_spacing = config.link_rate.time_for_bytes(u64::from(config.ack_spacing));
        self.state = RxState::Off;
        self.expected = Seq::FIRST;
        self.ack_pending = false;
        self.last_ack_at = None;
        self.echo_pending = None;
        self.last_seen = None;
        self.replay_seen = false;
        self.stats = RxStats::ZERO;
    }

    /// The current state.
    pub fn state(&self) -> RxState {
        self.state
    }

    /// The sequence number the receiver expects next.
    pub fn expected(&self) -> Seq<S> {
        self.expected
    }

    /// Counters.
    pub fn stats(&self) -> &RxStats {
        &self.stats
    }

    fn apply(&mut self, input: RxInput) {
        if let Some(to) = transition(self.state, input) {
            if to == RxState::SendNack {
                self.replay_seen = false;
            }
            self.state = to;
        }
    }

    /// Enables or disables LLR reception (`LLR_MODE_LOCAL`). Disabling returns to OFF.
    pub fn set_enabled(&mut self, enabled: bool) {
        self.config.enabled = enabled;
        if !enabled {
            self.apply(RxInput::Disable);
            self.ack_pending = false;
            self.echo_pending = None;
        }
    }

    /// Handles LLR_INIT: adopts `seq` as the next expected number, enters SEND_ACKS and echoes.
    /// Says whether this is the first handshake, a repeat, or the peer starting over with a new
    /// number ([`InitOutcome`]). Refused with [`Error::InvalidState`] when reception is disabled.
    pub fn handle_init(&mut self, _now: Instant, seq: u32) -> Result<InitOutcome, Error> {
        self.stats.init_rx += 1;
        if !self.config.enabled {
            return Err(Error::InvalidState { state: self.state.name(), input: "LLR_INIT" });
        }
        let announced = Seq::new(seq).ok_or(Error::OutOfWindow { field: "LLR_INIT", seq })?;
        let outcome = match self.state {
            RxState::Off => InitOutcome::First,
            // The number a repeated LLR_INIT carries is the one adopted, until a frame arrives.
            _ if announced == self.expected && self.last_seen.is_none() => InitOutcome::Repeated,
            _ => InitOutcome::PeerRestarted { was_expecting: self.expected.value() },
        };
        self.apply(RxInput::Init);
        self.expected = announced;
        self.last_seen = None;
        self.ack_pending = false;
        self.echo_pending = Some(announced);
        Ok(outcome)
    }

    /// Handles one received LLR frame numbered `seq` (as its preamble carries it), whose FCS
    /// check gave `check`. With LLR reception disabled the frame is an ordinary one (delivered if
    /// its FCS is good); enabled, nothing is delivered before the INIT handshake.
    pub fn handle_frame(&mut self, _now: Instant, seq: u32, check: FrameCheck) -> RxVerdict {
        if !self.config.enabled {
            return if check == FrameCheck::Good { RxVerdict::Deliver } else { RxVerdict::Discard };
        }
        match check {
            FrameCheck::Good => self.stats.ok += 1,
            FrameCheck::Bad => self.stats.bad += 1,
            FrameCheck::Poisoned => self.stats.poisoned += 1,
        }
        if self.state == RxState::Off {
            self.stats.before_init += 1;
            return RxVerdict::Discard;
        }
        let Some(seq) = Seq::<S>::new(seq) else {
            // A number outside the space: nothing in the frame can be trusted.
            self.stats.missing_seq += 1;
            if self.state == RxState::SendAcks {
                self.apply(RxInput::Gap);
            }
            return RxVerdict::Discard;
        };
        let expected = seq == self.expected;
        // A replay starts where a number steps back, or with the expected frame after a NACK
        // (only a replay can bring it then); a bad frame's number is not trusted for either.
        if check != FrameCheck::Bad {
            let stepped_back = self.last_seen.is_some_and(|last| !last.is_before(seq));
            let after_nack = expected && self.state != RxState::SendAcks && !self.replay_seen;
            if stepped_back || after_nack {
                self.stats.rx_replay += 1;
                self.replay_seen = true;
            }
            self.last_seen = Some(seq);
        }
        if expected {
            match check {
                FrameCheck::Good => self.stats.expected_seq_good += 1,
                FrameCheck::Poisoned => self.stats.expected_seq_poisoned += 1,
                FrameCheck::Bad => self.stats.expected_seq_bad += 1,
            }
        } else if seq.is_before(self.expected) {
            self.stats.duplicate_seq += 1;
        } else {
            self.stats.missing_seq += 1;
        }
        if check == FrameCheck::Bad {
            // Nothing in a bad frame can be trusted, its number included.
            if self.state == RxState::SendAcks {
                self.apply(RxInput::Gap);
            }
            return RxVerdict::Discard;
        }
        if expected {
            self.apply(RxInput::Expected);
            self.expected = self.expected.next();
            self.ack_pending = true;
            return if check == FrameCheck::Poisoned { RxVerdict::DropPoisoned } else { RxVerdict::Deliver };
        }
        if seq.is_before(self.expected) {
            if matches!(self.state, RxState::SendAcks | RxState::NackSent) {
                // The sender replayed what we have: tell it again where we are (in NACK_SENT too,
                // where our NACK may have been lost; module doc).
                self.ack_pending = true;
            }
            return RxVerdict::Duplicate;
        }
        if self.state == RxState::SendAcks {
            self.apply(RxInput::Gap);
        }
        RxVerdict::Discard
    }

    /// The next control ordered set to send: LLR_INIT_ECHO, then LLR_NACK (at once), then LLR_ACK
    /// (once `CTLOS_TARGET_SPACING` has passed since the last).
    pub fn poll_control(&mut self, now: Instant) -> Option<CtlOs> {
        if let Some(seq) = self.echo_pending.take() {
            self.stats.init_echo_tx += 1;
            return Some(CtlOs::LlrInitEcho { seq: seq.value() });
        }
        let newest_good = self.expected.prev().value();
        match self.state {
            RxState::SendNack => {
                // At once: the spacing is a target between ACKs and NACKs, and a NACK is urgent;
                // the next ACK keeps its distance from it (`CTLOS_TARGET_SPACING`).
                self.apply(RxInput::NackEmitted);
                self.ack_pending = false;
                self.last_ack_at = Some(now);
                self.stats.nack_tx += 1;
                Some(CtlOs::LlrNack { seq: newest_good })
            }
            RxState::SendAcks | RxState::NackSent if self.ack_due().is_some_and(|due| now >= due) => {
                self.ack_pending = false;
                self.last_ack_at = Some(now);
                self.stats.ack_tx += 1;
                Some(CtlOs::LlrAck { seq: newest_good })
            }
            _ => None,
        }
    }

    fn ack_due(&self) -> Option<Instant> {
        if !self.ack_pending {
            return None;
        }
        Some(self.last_ack_at.map_or(Instant::ZERO, |t| t.saturating_add(self.ack_spacing)))
    }

    /// When [`LlrRx::poll_control`] next has something to send.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.echo_pending.is_some() || self.state == RxState::SendNack {
            return Some(Instant::ZERO);
        }
        if matches!(self.state, RxState::SendAcks | RxState::NackSent) { self.ack_due() } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seq::Bits;

    type Rx = LlrRx<Bits<16>>;

    fn s(v: u32) -> Seq<Bits<16>> {
        Seq::new(v).unwrap()
    }

    const T: Instant = Instant::ZERO;

    fn ready() -> Rx {
        let mut rx = Rx::new(LlrRxConfig::default());
        rx.handle_init(T, 100).unwrap();
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrInitEcho { seq: 100 }));
        rx
    }

    /// `LLR_RX_REPLAY` counts every replay the receiver sees start, timer-started ones too (the
    /// SONiC test plan expects it to equal the peer's `LLR_TX_REPLAY`); frames with the expected
    /// number count by their FCS.
    #[test]
    fn rx_counters_follow_sai() {
        let mut rx = ready();
        for seq in 100..104 {
            assert_eq!(rx.handle_frame(T, seq, FrameCheck::Good), RxVerdict::Deliver);
        }
        // A timer replay of frames the receiver has: duplicates, one replay seen.
        for seq in 101..104 {
            assert_eq!(rx.handle_frame(T, seq, FrameCheck::Good), RxVerdict::Duplicate);
        }
        assert_eq!(rx.stats().rx_replay, 1);
        // The expected frame, bad then poisoned.
        assert_eq!(rx.handle_frame(T, 104, FrameCheck::Bad), RxVerdict::Discard);
        rx.poll_control(T); // the NACK
        assert_eq!(rx.handle_frame(T, 104, FrameCheck::Poisoned), RxVerdict::DropPoisoned);
        let s = rx.stats();
        assert_eq!((s.expected_seq_good, s.expected_seq_bad, s.expected_seq_poisoned), (4, 1, 1));
        assert_eq!((s.duplicate_seq, s.rx_replay), (3, 2), "the NACKed frame's return is a replay too");
    }

    /// LLR_INIT: the first, a repeat, and a new number from a running peer (it restarted).
    #[test]
    fn init_outcomes() {
        let mut rx = Rx::new(LlrRxConfig::default());
        assert_eq!(rx.handle_init(T, 100), Ok(InitOutcome::First));
        assert_eq!(rx.handle_init(T, 100), Ok(InitOutcome::Repeated));
        rx.handle_frame(T, 100, FrameCheck::Good);
        assert_eq!(rx.handle_init(T, 7), Ok(InitOutcome::PeerRestarted { was_expecting: 101 }));
        assert_eq!(rx.expected().value(), 7);
        assert_eq!(rx.handle_frame(T, 7, FrameCheck::Good), RxVerdict::Deliver);
    }

    /// An enabled receiver delivers no LLR frame before the INIT handshake (a restarted end
    /// must not pass its peer's replays up unchecked); a disabled one passes frames as ordinary.
    #[test]
    fn nothing_is_delivered_before_the_handshake() {
        let mut rx = Rx::new(LlrRxConfig::default());
        assert_eq!(rx.handle_frame(T, 5, FrameCheck::Good), RxVerdict::Discard);
        assert_eq!(rx.stats().before_init, 1);
        assert_eq!(rx.poll_control(T), None);
        rx.set_enabled(false);
        assert_eq!(rx.handle_frame(T, 5, FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.handle_frame(T, 5, FrameCheck::Bad), RxVerdict::Discard);
        assert!(rx.handle_init(T, 1).is_err());
    }

    #[test]
    fn acks_in_sequence_with_spacing() {
        let mut rx = ready();
        assert_eq!(rx.handle_frame(T, 100, FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrAck { seq: 100 }));
        assert_eq!(rx.handle_frame(T, 101, FrameCheck::Good), RxVerdict::Deliver);
        // 2048 bytes at 800 Gb/s: 21 ns between ACKs.
        assert_eq!(rx.poll_control(Instant::from_nanos(20)), None);
        assert_eq!(rx.poll_timeout(), Some(Instant::from_nanos(21)));
        assert_eq!(rx.poll_control(Instant::from_nanos(21)), Some(CtlOs::LlrAck { seq: 101 }));
        assert_eq!(rx.poll_timeout(), None);
    }

    #[test]
    fn nack_then_discard_until_expected() {
        let mut rx = ready();
        rx.handle_frame(T, 100, FrameCheck::Good);
        assert_eq!(rx.handle_frame(T, 101, FrameCheck::Bad), RxVerdict::Discard);
        assert_eq!(rx.state(), RxState::SendNack);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrNack { seq: 100 }));
        assert_eq!(rx.state(), RxState::NackSent);
        // Frames after the lost one are discarded, and no ACK or NACK goes out meanwhile.
        assert_eq!(rx.handle_frame(T, 102, FrameCheck::Good), RxVerdict::Discard);
        assert_eq!(rx.handle_frame(T, 101, FrameCheck::Bad), RxVerdict::Discard);
        assert_eq!(rx.poll_control(Instant::from_nanos(1000)), None);
        assert_eq!(rx.poll_timeout(), None);
        // A frame already received (the NACK may be lost) is acknowledged again, spaced from the
        // NACK; the state stays (project-defined, module doc).
        assert_eq!(rx.handle_frame(T, 100, FrameCheck::Good), RxVerdict::Duplicate);
        assert_eq!(rx.poll_timeout(), Some(Instant::from_nanos(21)));
        assert_eq!(rx.poll_control(Instant::from_nanos(1000)), Some(CtlOs::LlrAck { seq: 100 }));
        assert_eq!(rx.state(), RxState::NackSent);
        assert_eq!(rx.poll_control(Instant::from_nanos(2000)), None);
        // The replay arrives.
        assert_eq!(rx.handle_frame(T, 101, FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.state(), RxState::SendAcks);
        assert_eq!(rx.stats().rx_replay, 1);
        assert_eq!(rx.poll_control(Instant::from_nanos(2000)), Some(CtlOs::LlrAck { seq: 101 }));
    }

    #[test]
    fn gap_and_duplicates() {
        let mut rx = ready();
        assert_eq!(rx.handle_frame(T, 103, FrameCheck::Good), RxVerdict::Discard);
        assert_eq!(rx.stats().missing_seq, 1);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrNack { seq: 99 }));
        assert_eq!(rx.handle_frame(T, 100, FrameCheck::Poisoned), RxVerdict::DropPoisoned);
        assert_eq!(rx.expected(), s(101));
        // A duplicate in SEND_ACKS re-arms the ACK so a sender that lost ACKs learns the state.
        assert_eq!(rx.poll_control(Instant::from_nanos(100)), Some(CtlOs::LlrAck { seq: 100 }));
        assert_eq!(rx.handle_frame(T, 100, FrameCheck::Good), RxVerdict::Duplicate);
        assert_eq!(rx.poll_control(Instant::from_nanos(200)), Some(CtlOs::LlrAck { seq: 100 }));
    }

    #[test]
    fn expected_frame_cancels_an_unsent_nack() {
        let mut rx = ready();
        rx.handle_frame(T, 100, FrameCheck::Bad);
        assert_eq!(rx.state(), RxState::SendNack);
        assert_eq!(rx.handle_frame(T, 100, FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.state(), RxState::SendAcks);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrAck { seq: 100 }));
    }

    #[test]
    fn init_restarts_in_any_state() {
        let mut rx = ready();
        rx.handle_frame(T, 104, FrameCheck::Good);
        rx.poll_control(T);
        assert_eq!(rx.state(), RxState::NackSent);
        rx.handle_init(T, 7).unwrap();
        assert_eq!(rx.state(), RxState::SendAcks);
        assert_eq!(rx.expected(), s(7));
        assert!(matches!(rx.handle_init(T, 1 << 16), Err(Error::OutOfWindow { .. })));
        assert_eq!(transition(RxState::Off, RxInput::Gap), None);
        assert_eq!(transition(RxState::NackSent, RxInput::NackEmitted), None);
    }
}
