//! The LLR receiver (UE 1.0 §5.1): OFF, SEND_ACKS, SEND_NACK, NACK_SENT.

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
    /// LLR_NACK sent: discarding until the expected frame arrives.
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
    /// Drop it: bad FCS, out of sequence, or waiting for the expected frame after a NACK.
    Discard,
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

impl Default for LlrRxConfig {
    fn default() -> Self {
        LlrRxConfig { enabled: true, ack_spacing: 2048, link_rate: LinkRate::GBPS_800 }
    }
}

/// Receiver counters (SAI `LLR_RX_*` and `LLR_TX_*ACK*` statistics of the receive side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxStats {
    /// LLR_INIT received.
    pub init_rx: u64,
    /// LLR_INIT_ECHO sent.
    pub init_echo_tx: u64,
    /// LLR_ACK sent.
    pub ack_tx: u64,
    /// LLR_NACK sent.
    pub nack_tx: u64,
    /// Frames with a good FCS (`LLR_RX_OK`).
    pub ok: u64,
    /// Frames with a bad FCS (`LLR_RX_BAD`).
    pub bad: u64,
    /// Frames with a poisoned FCS (`LLR_RX_POISONED`).
    pub poisoned: u64,
    /// Frames delivered in sequence (`LLR_RX_EXPECTED_SEQ_GOOD`).
    pub expected_seq_good: u64,
    /// Frames with a number beyond the expected one (`LLR_RX_MISSING_SEQ`).
    pub missing_seq: u64,
    /// Frames with a number already received (`LLR_RX_DUPLICATE_SEQ`).
    pub duplicate_seq: u64,
    /// Replays detected: the expected frame arrived after a NACK (`LLR_RX_REPLAY`).
    pub replays: u64,
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
#[derive(Clone, Debug)]
pub struct LlrRx<S: SeqSpace> {
    config: LlrRxConfig,
    ack_spacing: Duration,
    state: RxState,
    expected: Seq<S>,
    ack_pending: bool,
    last_ack_at: Option<Instant>,
    echo_pending: Option<Seq<S>>,
    stats: RxStats,
}

impl<S: SeqSpace> LlrRx<S> {
    /// A receiver in OFF.
    pub fn new(config: LlrRxConfig) -> Self {
        LlrRx {
            config,
            ack_spacing: config.link_rate.time_for_bytes(u64::from(config.ack_spacing)),
            state: RxState::Off,
            expected: Seq::FIRST,
            ack_pending: false,
            last_ack_at: None,
            echo_pending: None,
            stats: RxStats::default(),
        }
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
    /// Refused with [`Error::InvalidState`] when reception is disabled.
    pub fn handle_init(&mut self, _now: Instant, seq: u32) -> Result<(), Error> {
        self.stats.init_rx += 1;
        if !self.config.enabled {
            return Err(Error::InvalidState { state: self.state.name(), input: "LLR_INIT" });
        }
        let seq = Seq::new(seq).ok_or(Error::OutOfWindow { field: "LLR_INIT", seq })?;
        self.apply(RxInput::Init);
        self.expected = seq;
        self.ack_pending = false;
        self.echo_pending = Some(seq);
        Ok(())
    }

    /// Handles one received LLR frame carrying `seq`, whose FCS check gave `check`.
    pub fn handle_frame(&mut self, _now: Instant, seq: Seq<S>, check: FrameCheck) -> RxVerdict {
        match check {
            FrameCheck::Good => self.stats.ok += 1,
            FrameCheck::Bad => self.stats.bad += 1,
            FrameCheck::Poisoned => self.stats.poisoned += 1,
        }
        if self.state == RxState::Off {
            return if check == FrameCheck::Good { RxVerdict::Deliver } else { RxVerdict::Discard };
        }
        if check == FrameCheck::Bad {
            // Nothing in a bad frame can be trusted, its number included.
            if self.state == RxState::SendAcks {
                self.apply(RxInput::Gap);
            }
            return RxVerdict::Discard;
        }
        if seq == self.expected {
            if self.state != RxState::SendAcks {
                self.stats.replays += 1;
            }
            self.apply(RxInput::Expected);
            self.expected = self.expected.next();
            self.ack_pending = true;
            self.stats.expected_seq_good += 1;
            return if check == FrameCheck::Poisoned { RxVerdict::DropPoisoned } else { RxVerdict::Deliver };
        }
        if seq.is_before(self.expected) {
            self.stats.duplicate_seq += 1;
            if self.state == RxState::SendAcks {
                // The sender replayed what we have: tell it again where we are.
                self.ack_pending = true;
            }
            return RxVerdict::Duplicate;
        }
        self.stats.missing_seq += 1;
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
                self.apply(RxInput::NackEmitted);
                self.ack_pending = false;
                self.stats.nack_tx += 1;
                Some(CtlOs::LlrNack { seq: newest_good })
            }
            RxState::SendAcks if self.ack_pending && self.ack_due().is_some_and(|due| now >= due) => {
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
        if self.state == RxState::SendAcks { self.ack_due() } else { None }
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

    #[test]
    fn off_passes_frames_through() {
        let mut rx = Rx::new(LlrRxConfig::default());
        assert_eq!(rx.handle_frame(T, s(5), FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.handle_frame(T, s(5), FrameCheck::Bad), RxVerdict::Discard);
        assert_eq!(rx.poll_control(T), None);
        rx.set_enabled(false);
        assert!(rx.handle_init(T, 1).is_err());
    }

    #[test]
    fn acks_in_sequence_with_spacing() {
        let mut rx = ready();
        assert_eq!(rx.handle_frame(T, s(100), FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrAck { seq: 100 }));
        assert_eq!(rx.handle_frame(T, s(101), FrameCheck::Good), RxVerdict::Deliver);
        // 2048 bytes at 800 Gb/s: 21 ns between ACKs.
        assert_eq!(rx.poll_control(Instant::from_nanos(20)), None);
        assert_eq!(rx.poll_timeout(), Some(Instant::from_nanos(21)));
        assert_eq!(rx.poll_control(Instant::from_nanos(21)), Some(CtlOs::LlrAck { seq: 101 }));
        assert_eq!(rx.poll_timeout(), None);
    }

    #[test]
    fn nack_then_discard_until_expected() {
        let mut rx = ready();
        rx.handle_frame(T, s(100), FrameCheck::Good);
        assert_eq!(rx.handle_frame(T, s(101), FrameCheck::Bad), RxVerdict::Discard);
        assert_eq!(rx.state(), RxState::SendNack);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrNack { seq: 100 }));
        assert_eq!(rx.state(), RxState::NackSent);
        // Frames after the lost one are discarded, and no ACK or NACK goes out meanwhile.
        assert_eq!(rx.handle_frame(T, s(102), FrameCheck::Good), RxVerdict::Discard);
        assert_eq!(rx.handle_frame(T, s(100), FrameCheck::Good), RxVerdict::Duplicate);
        assert_eq!(rx.handle_frame(T, s(101), FrameCheck::Bad), RxVerdict::Discard);
        assert_eq!(rx.poll_control(Instant::from_nanos(1000)), None);
        // The replay arrives.
        assert_eq!(rx.handle_frame(T, s(101), FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.state(), RxState::SendAcks);
        assert_eq!(rx.stats().replays, 1);
        assert_eq!(rx.poll_control(Instant::from_nanos(1000)), Some(CtlOs::LlrAck { seq: 101 }));
    }

    #[test]
    fn gap_and_duplicates() {
        let mut rx = ready();
        assert_eq!(rx.handle_frame(T, s(103), FrameCheck::Good), RxVerdict::Discard);
        assert_eq!(rx.stats().missing_seq, 1);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrNack { seq: 99 }));
        assert_eq!(rx.handle_frame(T, s(100), FrameCheck::Poisoned), RxVerdict::DropPoisoned);
        assert_eq!(rx.expected(), s(101));
        // A duplicate in SEND_ACKS re-arms the ACK so a sender that lost ACKs learns the state.
        assert_eq!(rx.poll_control(Instant::from_nanos(100)), Some(CtlOs::LlrAck { seq: 100 }));
        assert_eq!(rx.handle_frame(T, s(100), FrameCheck::Good), RxVerdict::Duplicate);
        assert_eq!(rx.poll_control(Instant::from_nanos(200)), Some(CtlOs::LlrAck { seq: 100 }));
    }

    #[test]
    fn expected_frame_cancels_an_unsent_nack() {
        let mut rx = ready();
        rx.handle_frame(T, s(100), FrameCheck::Bad);
        assert_eq!(rx.state(), RxState::SendNack);
        assert_eq!(rx.handle_frame(T, s(100), FrameCheck::Good), RxVerdict::Deliver);
        assert_eq!(rx.state(), RxState::SendAcks);
        assert_eq!(rx.poll_control(T), Some(CtlOs::LlrAck { seq: 100 }));
    }

    #[test]
    fn init_restarts_in_any_state() {
        let mut rx = ready();
        rx.handle_frame(T, s(104), FrameCheck::Good);
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
