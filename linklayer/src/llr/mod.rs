//! Link-level retry (LLR), Ultra Ethernet 1.0 §5.1, on a reusable go-back-N replay engine.
//!
//! Facts implemented (digest `shared/spec/uet.md` §6.1, tag \[B\], from the OCP SAI LLR proposal
//! citing UE 1.0 §5.1):
//!
//! * each LLR-eligible frame gets a sequence number (carried in the Ethernet preamble) and is
//!   kept in a replay buffer; sequence numbers increase by one per frame;
//! * the receiver acknowledges cumulatively with LLR_ACK (the newest good frame), spaced by
//!   `CTLOS_TARGET_SPACING` bytes (default 2048);
//! * a frame with a bad FCS (CRC or uncorrectable FEC) or an out-of-sequence number makes the
//!   receiver send LLR_NACK with the newest good sequence number, then discard every frame until
//!   the expected one arrives, sending no ACK or NACK meanwhile;
//! * on LLR_NACK the transmitter retransmits every stored frame after the NACK's number
//!   (go-back-N); on LLR_ACK it releases every frame up to the ACK's number;
//! * a replay timer (`REPLAY_TIMER_MAX`) replays the whole buffer when no progress is seen (last
//!   frame lost, NACK lost); replays repeat at most `REPLAY_COUNT_MAX` times (default 1) without
//!   an ACK;
//! * the transmitter enters FLUSH when replays exceed `REPLAY_COUNT_MAX`, when the PCS is down
//!   longer than `PCS_LOST_TIMEOUT`, or when data stays in the replay buffer longer than
//!   `DATA_AGE_TIMEOUT`; from FLUSH it re-initialises by itself if `RE_INIT_ON_FLUSH`, else waits
//!   for management;
//! * frames offered in INIT or FLUSH are discarded, blocked or sent best-effort
//!   (`INIT_LLR_FRAME_ACTION`, `FLUSH_LLR_FRAME_ACTION`, default best-effort);
//! * at most `OUTSTANDING_FRAMES_MAX` frames and `OUTSTANDING_BYTES_MAX` bytes are unacknowledged;
//! * control messages LLR_INIT, LLR_INIT_ECHO, LLR_ACK, LLR_NACK travel in control ordered sets;
//! * transmitter states OFF, INIT, ADVANCE, REPLAY, FLUSH ([`TxState`]); receiver states OFF,
//!   SEND_ACKS, SEND_NACK, NACK_SENT ([`RxState`]).
//!
//! Project-defined choices (marked \[I\] in the digest's sense: inferred, not stated by a source):
//!
//! * **Sequence width.** Not public. [`UeLlrSpace`] is 16 bits, wrapping through 0; the engines are
//!   generic over the space, so a different width is a type parameter.
//! * **INIT handshake.** LLR_INIT carries the first sequence number the transmitter will use and
//!   is repeated every `init_interval` until an LLR_INIT_ECHO with the same number arrives; the
//!   receiver (if LLR reception is enabled) adopts the number as its expected sequence number and
//!   echoes it. An LLR_INIT received in any state restarts the receiver (the peer re-initialised).
//! * **Replay count.** Counts replays started by the replay timer since the last ACK that made
//!   progress; a NACK-driven replay is not counted (the SAI text attaches the cap to timer
//!   replays: "can be performed multiple times (capped by `REPLAY_COUNT_MAX`) if no further
//!   LLR_ACKs are received").
//! * **Poisoned frames** (FCS deliberately stomped by the sender) with the expected number consume
//!   the number and are not delivered: a replay would carry the same poison.
//! * **Receiver in SEND_NACK** (NACK not yet emitted) accepts the expected frame if it arrives and
//!   cancels the NACK.
//! * **Byte spacings** become time through the link rate ([`crate::time::LinkRate`]).
//! * The CtlOS layouts are in [`crate::wire`].
//!
//! The split between the generic [`ReplayBuffer`] and the UE machines ([`LlrTx`], [`LlrRx`]) is
//! what UALink's DL replay and UCIe's retry reuse; see the table in [`replay`].

mod profile;
pub mod replay;
mod rx;
mod tx;

pub use profile::{LlrSizing, OUTSTANDING_FRAMES_LIMIT};
pub use replay::{Outgoing, ReplayBuffer};
pub use rx::{FrameCheck, InitOutcome, LlrRx, LlrRxConfig, RxState, RxStats, RxVerdict};
pub use tx::{
    Admit, FlushReason, LlrTx, LlrTxConfig, LlrTxEvent, REPLAY_COUNT_UNLIMITED, ReplayCause, TxState, TxStats,
};

use crate::seq::Bits;

/// The UE LLR sequence space: 16 bits (project-defined; the width is not public).
pub type UeLlrSpace = Bits<20>;

/// What happens to an LLR-eligible frame offered while the transmitter is in INIT or FLUSH
/// (SAI `sai_llr_frame_action_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FrameAction {
    /// Drop the frame (counted).
    Discard,
    /// Refuse it: the caller keeps it and offers it again later.
    Block,
    /// Send it as an ordinary frame, without a sequence number or replay.
    #[default]
    BestEffort,
}
