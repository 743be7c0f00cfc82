//! Link-level retry (LLR), Ultra Ethernet 1.0 §5.1, on a reusable go-back-N replay engine.
//!
//! Sources: the OCP SAI LLR proposal (`doc/LLR/SAI-Link_Layer_Retry.md`) and the merged
//! `inc/saiport.h` (opencomputeproject/SAI), which cite UE 1.0 §5.1; the SONiC LLR test plan
//! (`docs/testplan/LLR/LLR_TestPlan.md` in sonic-net/sonic-mgmt); the Open Traffic Generator
//! model `ultra_ethernet/ultraethernet.yaml` (open-traffic-generator/models, following UE 1.0.3
//! §5.1); HPE's Slingshot link driver (HewlettPackard/ss-link, `sl_core_hw_llr.c`).
//!
//! Facts implemented:
//!
//! * each LLR-eligible frame gets a sequence number, carried in the Ethernet preamble, one more
//!   than the frame before; the number is **20 bits** wide ([`UeLlrSpace`]; the SONiC test plan's
//!   wrap case, and the OTG model's limit of 2^19 outstanding frames, half a 20-bit space);
//! * the receiver acknowledges cumulatively with LLR_ACK (the newest good frame), spaced by
//!   `CTLOS_TARGET_SPACING` bytes (default 2048);
//! * a frame with a bad FCS (CRC or uncorrectable FEC) or an out-of-sequence number makes the
//!   receiver send LLR_NACK with the newest good sequence number, then discard every frame until
//!   the expected one arrives, sending no ACK or NACK meanwhile (but see the project-defined
//!   receiver in NACK_SENT below);
//! * on LLR_NACK the transmitter retransmits every stored frame after the NACK's number
//!   (go-back-N); on LLR_ACK it releases every frame up to the ACK's number;
//! * a replay timer (`REPLAY_TIMER_MAX`) replays the whole buffer when no progress is seen (last
//!   frame lost, NACK lost);
//! * at most `REPLAY_COUNT_MAX` replays (default 1) without an LLR_ACK making progress, replays
//!   started by an LLR_NACK included (the SONiC test plan's persistent-loss case expects
//!   `LLR_TX_REPLAY` never to exceed it; the Scale-Up standard's LLR-02 counts one retry for one
//!   NACK); **255 means no maximum** ([`REPLAY_COUNT_UNLIMITED`], `inc/saiport.h` and the OTG
//!   model; HPE's driver programs 0xFF as its non-fatal setting);
//! * the transmitter enters FLUSH when the replays would exceed `REPLAY_COUNT_MAX`, when the PCS
//!   is down longer than `PCS_LOST_TIMEOUT`, or when data stays in the replay buffer longer than
//!   `DATA_AGE_TIMEOUT`; from FLUSH it re-initialises by itself if `RE_INIT_ON_FLUSH`, else waits
//!   for management ([`LlrTx::reinit`]);
//! * frames offered in INIT or FLUSH are discarded, blocked or sent best-effort
//!   (`INIT_LLR_FRAME_ACTION`, `FLUSH_LLR_FRAME_ACTION`, default best-effort) ([`FrameAction`]);
//! * at most `OUTSTANDING_FRAMES_MAX` frames and `OUTSTANDING_BYTES_MAX` bytes are unacknowledged;
//! * a poisoned frame (FCS stomped on purpose, `LLR_TX_POISONED`) consumes its number and is
//!   neither delivered nor NACKed nor replayed (Scale-Up LLR-05: `RX_EXPECTED_SEQ_POISONED` 1,
//!   `TX_NACK_CTL_OS` 0, `RX_REPLAY` 0);
//! * control messages LLR_INIT, LLR_INIT_ECHO, LLR_ACK, LLR_NACK travel in control ordered sets
//!   ([`crate::wire::CtlOs`]);
//! * transmitter states OFF, INIT, ADVANCE, REPLAY, FLUSH ([`TxState`]); receiver states OFF,
//!   SEND_ACKS, SEND_NACK, NACK_SENT ([`RxState`]);
//! * the counters are SAI's `SAI_PORT_STAT_LLR_*` ([`TxStats`], [`RxStats`], each field naming
//!   its statistic): `LLR_TX_OK` counts every frame sent with a good FCS, replays included;
//!   `LLR_TX_REPLAY` completed replays; `LLR_RX_REPLAY` replays the receiver sees start, whether
//!   a NACK or the sender's timer started them.
//!
//! Project-defined choices (no public source settles them):
//!
//! * **INIT handshake.** LLR_INIT carries the first sequence number the transmitter will use and
//!   is repeated every `init_interval` until an LLR_INIT_ECHO with the same number arrives; the
//!   receiver (if LLR reception is enabled) adopts the number as its expected sequence number and
//!   echoes it. An enabled receiver delivers no LLR frame before its first LLR_INIT. An LLR_INIT
//!   in any later state restarts the receiver and is reported ([`InitOutcome`]): the same number
//!   with no frame since is the peer repeating itself; anything else is a new handshake of the
//!   peer's transmitter (a restart or a re-initialisation), whose old frames are gone.
//! * **Restart.** [`LlrTx::restart`] starts a new handshake from any enabled state, dropping the
//!   unacknowledged frames, for an end that learns its peer restarted
//!   ([`crate::link`] documents the whole recovery sequence).
//! * **Link down.** Frames offered while the PCS is down (in ADVANCE or REPLAY) follow
//!   [`LlrTxConfig::link_down_action`], as HPE's driver configures its link-down behaviour (SAI
//!   has no such attribute).
//! * **Receiver in SEND_NACK** (NACK not yet emitted) accepts the expected frame if it arrives and
//!   cancels the NACK.
//! * **Receiver in NACK_SENT** acknowledges a frame it already has (an LLR_ACK of the last good
//!   number), where §5.1 has it send nothing until the expected frame arrives: a lost NACK that
//!   named the frame after the transmitter's newest would otherwise leave replays of frames it has
//!   going on forever, or end in a FLUSH of delivered frames. The ACK starts no replay, so it
//!   never counts toward `REPLAY_COUNT_MAX` (a second NACK would).
//! * **Byte spacings** become time through the link rate ([`crate::time::LinkRate`]).
//! * **Where the test plans disagree.** `LLR_TX_OK` and `LLR_RX_OK` count replayed frames too
//!   (SAI's wording; SONiC TC9), although TC19 and TC20 expect them to stop during a pause while
//!   replays go on. A full window (`OUTSTANDING_*`) is back-pressure ([`crate::Error::WindowFull`]),
//!   not FLUSH with `TX_DISCARD` as TC12 expects: SAI defines `TX_DISCARD` for frames offered in
//!   INIT or FLUSH only, and frames dropped by FLUSH are counted apart
//!   ([`TxStats::flushed_frames`]). `RX_MISSING_SEQ` counts every frame whose number shows a gap,
//!   not the frames missing (TC16 expects the burst size).
//! * **Zero timeouts.** SAI's default 0 for `PCS_LOST_TIMEOUT` and `DATA_AGE_TIMEOUT` is read as
//!   no timeout (`None`); the OTG model reads 0 as immediate expiry. SAI's default
//!   `REPLAY_TIMER_MAX` of 0 cannot be expressed: a replay timer is required, and
//!   `REPLAY_COUNT_MAX` is at least 1 (SONiC's range).
//! * **States.** An enabled receiver that has not yet seen LLR_INIT reports OFF (SAI's OFF means
//!   disabled). Leaving FLUSH is not an event of its own: the next handshake's
//!   [`LlrTxEvent::Initialized`] marks it.
//! * **Profiles.** [`LlrTxConfig::hardware`] is SAI's defaults around a sizing
//!   ([`LlrSizing`], HPE's formulas); [`LlrTxConfig::software`] is this crate's profile for links
//!   carried by a host stack.
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

/// The UE LLR sequence space: 20 bits, wrapping through 0 (the SONiC LLR test plan's wrap case;
/// the OTG model's 2^19 outstanding frames).
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
