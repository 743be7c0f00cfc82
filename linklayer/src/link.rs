//! One end of a UE link: LLR in both directions and CBFC on top, wired together so that a restart
//! of either end recovers by itself.
//!
//! [`Link`] owns an [`LlrTx`], an [`LlrRx`], a [`CbfcSender`] and a [`CbfcReceiver`] and makes
//! every call-order decision the separate engines leave to their embedder: the credit check before
//! LLR admission, credits charged only for frames LLR accepted, CtlOS dispatch, CC_Updates built,
//! framed ([`CcUpdateFrame`]) and sent as LLR frames (so they travel in order with the data they
//! account for, and stay pending while LLR cannot take them), received CC_Updates recognised and
//! applied, and the recovery sequence below. The embedder still owns the wire, the clock and the
//! receive buffers: it classifies frames into VCs, carries [`Link::poll_transmit`] frames with
//! their sequence number in the preamble and [`Link::poll_control`] CtlOS, and reports drained
//! frames with [`Link::on_drained`].
//!
//! ## Recovery from a restart (project-defined)
//!
//! UE 1.0 §5.1 and §5.2 (as SAI, SONiC and the OTG model publish them) give the pieces: LLR_INIT
//! and LLR_INIT_ECHO, and the SAI "lossless VC initialization" workflow that clears one VC's
//! counters at both ends. They do not say how the two ends agree on *when*; this is the sequence
//! this crate uses, and the reason for each step:
//!
//! 1. **Every new LLR handshake of a transmitter starts a new epoch of its direction.** When this
//!    end's transmitter starts one ([`Link::enable`], FLUSH with re-initialisation, or step 3),
//!    every lossless VC of its CBFC sender is re-initialised and *held*
//!    ([`CbfcSender::resync_vc`]): nothing is sent on it until the peer's receiver confirms it has
//!    re-initialised too. Frames offered meanwhile are refused with [`Error::NoCredit`]; LLR holds
//!    its own frames in INIT when the profile says [`FrameAction::Block`](crate::llr::FrameAction::Block).
//! 2. **The receiver learns of the new epoch from the LLR_INIT** ([`InitOutcome::First`] or
//!    [`InitOutcome::PeerRestarted`]). Frames of the old epoch are no longer delivered (their
//!    numbers are behind the new expected one; a fresh receiver delivers nothing before the
//!    handshake), so from that point the receiver re-initialises each lossless VC once its buffer
//!    has drained ([`CbfcReceiver::resync_vc`]) and reports `R_CF = 0`. The report follows the
//!    LLR_INIT_ECHO on the wire, and the sender takes CF_Updates only after its handshake has
//!    completed, so no report from the old epoch can release a held VC. A repeated LLR_INIT
//!    means the echo or what followed was lost: every VC is reported again.
//! 3. **A peer that restarted lost its receiver too.** On [`InitOutcome::PeerRestarted`] this
//!    end's transmitter restarts its handshake ([`LlrTx::restart`], dropping the frames not yet
//!    acknowledged: whether the old peer delivered them is unknown) and step 1 applies. It does
//!    not when its own handshake is in progress or completed less than
//!    [`LinkConfig::restart_holdoff`] ago: then the LLR_INIT answers this end's own new epoch, and
//!    answering it in turn would never end. The LLR_INIT cannot tell a restarted peer from one
//!    whose transmitter alone re-initialised after a FLUSH: for the latter too this end restarts,
//!    and its own unacknowledged frames, which the peer's receiver may have delivered, are
//!    dropped and reported ([`LinkEvent::TxRestarted`]); *project-defined*, as SAI describes the
//!    re-initialisation as the transmitter's own and names no signal to its partner.
//!
//! Nothing acknowledged is lost or delivered twice: LLR delivers each epoch's frames once and in
//! order; CBFC's counters restart at a point where neither end holds a frame of the old epoch
//! the other still counts. The one race left is a peer restarting again within the hold-off of
//! this end's own restart; then this end's transmitter finds no receiver, and recovers through
//! its replay count and FLUSH re-initialisation ([`LlrTxConfig::software`] sets both).
//!
//! Each step is reported as a [`LinkEvent`].
//!
//! Not done here: the port-wide minimum spacing between CtlOS (SAI `CTLOS_MIN_SPACING`, default
//! 6400 bytes). [`Link::poll_control`] hands a CtlOS out as soon as it is due; the embedder's
//! PCS paces them on the wire.

use crate::Error;
use crate::cbfc::{CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, Vc, VcMode};
use crate::llr::{
    Admit, FrameCheck, InitOutcome, LlrRx, LlrRxConfig, LlrSizing, LlrTx, LlrTxConfig, LlrTxEvent, Outgoing,
    ReplayCause, RxVerdict, TxState, UeLlrSpace,
};
use crate::seq::Seq;
use crate::time::{Duration, Instant, LinkRate};
use crate::wire::{CC_UPDATE_FRAME_LEN, CcUpdateFrame, CtlOs};
use heapless::Deque;

/// Configuration of one link end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkConfig {
    /// The LLR transmitter.
    pub llr_tx: LlrTxConfig,
    /// The LLR receiver.
    pub llr_rx: LlrRxConfig,
    /// The CBFC sender.
    pub cbfc_sender: CbfcSenderConfig,
    /// The CBFC receiver.
    pub cbfc_receiver: CbfcReceiverConfig,
    /// This port's MAC address, the source of its CC_Update frames.
    pub mac: [u8; 6],
    /// How long after this end's own LLR handshake completes an LLR_INIT from the peer is taken
    /// as its answer rather than as a restart (recovery step 3; project-defined). At least the
    /// link's round trip and the LLR_INIT repeat interval; the profiles use twice the replay
    /// timeout, which is sized above both.
    pub restart_holdoff: Duration,
}

impl LinkConfig {
    /// The SAI hardware defaults ([`LlrTxConfig::hardware`], CBFC defaults) for a link of
    /// `rate` sized by `sizing`.
    pub fn hardware(sizing: &LlrSizing, rate: LinkRate, mac: [u8; 6]) -> Self {
        LinkConfig {
            llr_tx: LlrTxConfig::hardware(sizing),
            llr_rx: LlrRxConfig::enabled(rate),
            cbfc_sender: CbfcSenderConfig::default(),
            cbfc_receiver: CbfcReceiverConfig { link_rate: rate, ..CbfcReceiverConfig::default() },
            mac,
            // Above the LLR_INIT repeat interval, so a repeated LLR_INIT of the peer's answer
            // is not taken for a restart.
            restart_holdoff: sizing.replay_timeout.saturating_mul(2),
        }
    }

    /// The software profile ([`LlrTxConfig::software`]) for a simulated or UDP-carried link of
    /// `rate` sized by `sizing` (use [`LlrSizing::software`]).
    pub fn software(sizing: &LlrSizing, rate: LinkRate, mac: [u8; 6]) -> Self {
        LinkConfig { llr_tx: LlrTxConfig::software(sizing), ..Self::hardware(sizing, rate, mac) }
    }
}

/// What happened on the link, for logs and management ([`Link::poll_event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LinkEvent {
    /// This end's LLR handshake completed: its frames are protected.
    TxUp,
    /// The peer's transmitter started an epoch (its first handshake, a restart or a
    /// re-initialisation): this end's receivers re-initialise (recovery step 2).
    PeerHandshake(InitOutcome),
    /// This end's transmitter restarted its handshake in answer to a restarted peer (step 3),
    /// dropping `frames_dropped` unacknowledged frames.
    TxRestarted {
        /// Frames dropped.
        frames_dropped: u32,
    },
    /// This end's transmitter entered FLUSH, dropping `frames_dropped` frames.
    Flushed {
        /// Why.
        reason: crate::llr::FlushReason,
        /// Frames dropped.
        frames_dropped: u32,
    },
    /// A replay started.
    ReplayStarted {
        /// What started it.
        cause: ReplayCause,
    },
    /// The peer's receiver confirmed its re-initialisation of `vc`: the VC sends again.
    VcReady(Vc),
    /// A CC_Update entry was refused ([`CbfcReceiver::handle_cc_update`]); the message's other
    /// entries applied.
    CcUpdateRejected {
        /// The VC.
        vc: Vc,
        /// Why.
        error: Error,
    },
    /// A frame would have overrun `vc`'s buffer and was dropped.
    Overrun {
        /// The VC.
        vc: Vc,
    },
}

/// What to do with a received frame ([`Link::handle_frame`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Received {
    /// Deliver it: it is in the VC's buffer now, and [`Link::on_drained`] must follow when it
    /// leaves.
    Deliver,
    /// A CC_Update: the link consumed it.
    CcUpdate,
    /// Drop it (bad FCS, poisoned, duplicate, out of sequence, before the handshake, or an
    /// overrun); the engines' counters say which.
    Drop,
}

/// Counters of the link object itself; each engine keeps its own ([`Link::llr_tx`] …).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkStats {
    /// CF_Updates for a held VC ignored because this end's LLR handshake had not completed
    /// (recovery step 2).
    pub cf_ignored_before_handshake: u64,
    /// CC_Updates that arrived in frames without an LLR sequence number on a link whose LLR
    /// receiver is enabled, dropped: they could overtake frames still being replayed.
    pub cc_updates_unprotected: u64,
    /// CtlOS the engines refused (stale or out-of-window numbers, wrong state).
    pub ctlos_refused: u64,
    /// Restarts of the peer not answered because of the hold-off (step 3).
    pub restarts_held_off: u64,
    /// Events dropped because the queue was full.
    pub events_dropped: u64,
}

impl LinkStats {
    /// Every counter zero.
    pub const ZERO: Self = LinkStats {
        cf_ignored_before_handshake: 0,
        cc_updates_unprotected: 0,
        ctlos_refused: 0,
        restarts_held_off: 0,
        events_dropped: 0,
    };
}

const EVENTS: usize = 16;

/// One end of a UE link: LLR in both directions and CBFC, over `N` replay slots in storage `B`.
///
/// See the [module documentation](self) for the recovery sequence and the crate README for an
/// example of two ends.
///
/// Size on a 64-bit host: 5 920 bytes with 64 replay slots, 32 more per slot, besides the
/// replay storage (inline in `Link<[u8; L], N>`). Built in place: [`Link::EMPTY`] and [`Link::init`].
#[derive(Clone, Debug)]
pub struct Link<B, const N: usize> {
    config: LinkConfig,
    tx: LlrTx<UeLlrSpace, B, N>,
    rx: LlrRx<UeLlrSpace>,
    sender: CbfcSender,
    receiver: CbfcReceiver,
    /// When this end's current handshake completed.
    tx_up_at: Option<Instant>,
    /// The oldest stored frame when LLR last refused a CC_Update.
    cc_refused_at: Option<crate::seq::Seq<UeLlrSpace>>,
    events: Deque<LinkEvent, EVENTS>,
    stats: LinkStats,
}

impl<const L: usize, const N: usize> Link<[u8; L], N> {
    /// A link end with its replay storage inline and every byte zero, so a `static` holding it
    /// lands in `.bss` (no flash, no start-up copy): unconfigured, refusing [`Link::enable`]
    /// until [`Link::init`] configures it in place.
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> Link<B, N> {
    /// A link end with replay storage `storage` whose first LLR frame will be numbered
    /// `first_seq`. Choose `first_seq` at random: a restarted end that announces exactly the
    /// number its peer expects next is indistinguishable from a repeated LLR_INIT. (Built on the
    /// stack; see [`Link::init`] for building one in place.)
    pub fn new(config: LinkConfig, storage: B, first_seq: u32) -> Result<Self, Error> {
        let mut link = Self::unconfigured(storage);
        link.init(config, first_seq)?;
        Ok(link)
    }

    /// A link end with every field zero but `storage`: the parts' zero configurations.
    const fn unconfigured(storage: B) -> Self {
        Link {
            config: LinkConfig {
                llr_tx: LlrTxConfig::ZERO,
                llr_rx: LlrRxConfig::ZERO,
                cbfc_sender: CbfcSenderConfig::ZERO,
                cbfc_receiver: CbfcReceiverConfig::ZERO,
                mac: [0; 6],
                restart_holdoff: Duration::ZERO,
            },
            tx: LlrTx::unconfigured(storage),
            rx: LlrRx::EMPTY,
            sender: CbfcSender::EMPTY,
            receiver: CbfcReceiver::EMPTY,
            tx_up_at: None,
            cc_refused_at: None,
            events: Deque::new(),
            stats: LinkStats::ZERO,
        }
    }

    /// Makes this link end what [`Link::new`]`(config, storage, first_seq)` returns with its own
    /// storage, in place (without a second link on the stack): LLR off, every VC best-effort,
    /// nothing stored, counters at zero. Refused as `new` refuses, and then nothing changed. On
    /// a [`Link::EMPTY`] in a `static`, this is how firmware builds a link end.
    pub fn init(&mut self, config: LinkConfig, first_seq: u32) -> Result<(), Error> {
        let first = Seq::new(first_seq).ok_or(Error::BadValue { field: "first_seq", value: first_seq })?;
        // Every check before any change, so a refusal leaves the link as it was.
        let storage_len = self.tx.buffer().capacity_bytes();
        LlrTx::<UeLlrSpace, B, N>::check(&config.llr_tx, storage_len)?;
        CbfcSender::check(&config.cbfc_sender)?;
        CbfcReceiver::check(&config.cbfc_receiver)?;
        self.tx.init(config.llr_tx, first)?;
        self.sender.init(config.cbfc_sender)?;
        self.receiver.init(config.cbfc_receiver)?;
        self.rx.init(config.llr_rx);
        self.config = config;
        self.tx_up_at = None;
        self.cc_refused_at = None;
        self.events.clear();
        self.stats = LinkStats::ZERO;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// The LLR transmitter (state and SAI counters).
    pub fn llr_tx(&self) -> &LlrTx<UeLlrSpace, B, N> {
        &self.tx
    }

    /// The LLR receiver.
    pub fn llr_rx(&self) -> &LlrRx<UeLlrSpace> {
        &self.rx
    }

    /// The CBFC sender.
    pub fn cbfc_sender(&self) -> &CbfcSender {
        &self.sender
    }

    /// The CBFC receiver.
    pub fn cbfc_receiver(&self) -> &CbfcReceiver {
        &self.receiver
    }

    /// The link object's own counters.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Sets `vc`'s mode in both directions of this end. Configure every VC before
    /// [`Link::enable`], the same at both ends; a change on a running link re-initialises the VC
    /// and must be made at both ends while none of its frames is in flight.
    pub fn set_vc_mode(&mut self, now: Instant, vc: Vc, mode: VcMode) -> Result<(), Error> {
        self.sender.set_vc_mode(now, vc, mode)?;
        self.receiver.set_vc_mode(now, vc, mode)
    }

    /// Starts LLR: the transmitter's first handshake (recovery step 1).
    pub fn enable(&mut self, now: Instant) -> Result<(), Error> {
        self.tx.enable(now)?;
        self.new_epoch();
        Ok(())
    }

    /// Management re-initialisation out of FLUSH (when the profile does not re-initialise by
    /// itself).
    pub fn reinit(&mut self, now: Instant) -> Result<(), Error> {
        self.tx.reinit(now)?;
        self.new_epoch();
        Ok(())
    }

    /// Recovery step 1: this end's transmitter starts a new epoch.
    fn new_epoch(&mut self) {
        self.tx_up_at = None;
        self.sender.resync_all();
    }

    /// Reports the PCS up or down.
    pub fn set_pcs_status(&mut self, now: Instant, up: bool) {
        self.tx.set_pcs_status(now, up);
        self.pump(now);
    }

    /// Offers a data frame on `vc`: the credit check first, then LLR admission, and the credits
    /// charged only if LLR took the frame ([`Admit::Queued`]: it goes out through
    /// [`Link::poll_transmit`]; [`Admit::SendPlain`]: the caller sends it now without a sequence
    /// number). [`Error::NoCredit`] (including a VC held for re-initialisation),
    /// [`Error::WindowFull`] and a blocking frame action ([`Error::InvalidState`]) leave nothing
    /// changed: offer the frame again later.
    pub fn send(&mut self, now: Instant, vc: Vc, frame: &[u8]) -> Result<Admit<UeLlrSpace>, Error> {
        let needed = self.sender.credits_for(frame.len())?;
        if let Some(available) = self.sender.available(vc) {
            if needed > available {
                return Err(Error::NoCredit { vc: vc.index(), needed, available });
            }
        }
        let admit = self.tx.send(now, frame)?;
        if admit != Admit::Discarded {
            self.sender.on_sent(vc, frame.len())?;
        }
        self.pump(now);
        Ok(admit)
    }

    /// Offers a frame that is not LLR-eligible (OTG `llr_eligible` false; the SONiC test plan's
    /// TC18 mix): credits are checked and charged on a lossless VC as for [`Link::send`], and
    /// the caller sends the frame now as an ordinary frame, without a sequence number. A loss
    /// of it is final; its credits come back with the next CC_Update that it does not overtake.
    /// (A CC_Update goes in order with the LLR frames; one that waits behind them while plain
    /// frames of its VC go ahead arrives with `S_CC` behind the receiver's `R_CC`, and the
    /// receiver refuses that entry: with steady plain traffic on a VC whose LLR queue never
    /// empties, the credits of lost plain frames are not recovered. A counter behind by more
    /// than the receiver's buffer holds reads as a loss the VC's limit allows when that limit
    /// is above 2^19: send only LLR frames on such a VC.)
    pub fn send_plain(&mut self, vc: Vc, frame: &[u8]) -> Result<(), Error> {
        self.sender.on_sent(vc, frame.len()).map(|_| ())
    }

    /// Whether LLR would take a CC_Update now; after a refusal, not before an ACK released a
    /// frame (the replay storage may be fragmented), so a pending CC_Update never spins.
    fn can_queue(&self) -> bool {
        let c = self.tx.config();
        let b = self.tx.buffer();
        matches!(self.tx.state(), TxState::Advance | TxState::Replay)
            && self.tx.pcs_up()
            && self.cc_refused_at != Some(b.base())
            && b.len() < c.outstanding_frames_max as usize
            && b.bytes().saturating_add(CC_UPDATE_FRAME_LEN) <= c.outstanding_bytes_max as usize
    }

    /// Puts due CC_Updates into the LLR transmitter; one it cannot take stays pending.
    fn queue_cc_updates(&mut self, now: Instant) {
        while self.can_queue() {
            let Some(update) = self.sender.poll_cc_update(now) else { return };
            let frame = CcUpdateFrame::new(self.config.mac, update);
            let queued = self.tx.send_with(now, CC_UPDATE_FRAME_LEN, |_, buf| {
                let _ = frame.emit(buf);
            });
            if !matches!(queued, Ok(Admit::Queued(_))) {
                self.sender.unsent_cc_update(&update);
                self.cc_refused_at = Some(self.tx.buffer().base());
                return;
            }
        }
    }

    /// The next frame to put on the wire (replays first), with its sequence number for the
    /// preamble ([`Outgoing::seq`]`.value()`). CC_Updates due are queued first.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing<'_, UeLlrSpace>> {
        self.queue_cc_updates(now);
        self.tx.poll_transmit(now)
    }

    /// The next CtlOS to send: the receiver's (LLR_INIT_ECHO, LLR_ACK, LLR_NACK) first, so that
    /// an echo precedes this end's own LLR_INIT and CF_Updates (recovery step 2), then LLR_INIT,
    /// then CF_Update.
    pub fn poll_control(&mut self, now: Instant) -> Option<CtlOs> {
        if let Some(c) = self.rx.poll_control(now) {
            return Some(c);
        }
        if let Some(c) = self.tx.poll_control(now) {
            return Some(c);
        }
        self.receiver.poll_cf_update(now).map(CtlOs::CfUpdate)
    }

    /// Handles a received CtlOS. An error says what the engine refused (a stale or out-of-window
    /// number, a message in the wrong state); it is counted and changes nothing, and the link
    /// carries on.
    pub fn handle_control(&mut self, now: Instant, msg: CtlOs) -> Result<(), Error> {
        let result = match msg {
            CtlOs::LlrInit { seq } => self.rx.handle_init(now, seq).map(|outcome| self.on_peer_init(now, outcome)),
            CtlOs::LlrInitEcho { seq } => self.tx.handle_init_echo(now, seq),
            CtlOs::LlrAck { seq } => self.tx.handle_ack(now, seq).map(|_| ()),
            CtlOs::LlrNack { seq } => self.tx.handle_nack(now, seq),
            // A held VC is released only by a report of this epoch, which follows the handshake.
            CtlOs::CfUpdate(u) if self.sender.is_held(u.vc) && self.tx_up_at.is_none() => {
                self.stats.cf_ignored_before_handshake += 1;
                Ok(())
            }
            CtlOs::CfUpdate(u) => {
                let held = self.sender.is_held(u.vc);
                let r = self.sender.handle_cf_update(u.vc, u.freed).map(|_| ());
                if held && r.is_ok() {
                    self.event(LinkEvent::VcReady(u.vc));
                }
                r
            }
        };
        if result.is_err() {
            self.stats.ctlos_refused += 1;
        }
        self.pump(now);
        result
    }

    /// Recovery steps 2 and 3.
    fn on_peer_init(&mut self, now: Instant, outcome: InitOutcome) {
        match outcome {
            InitOutcome::Repeated => {
                self.receiver.report_all();
                return;
            }
            InitOutcome::First | InitOutcome::PeerRestarted { .. } => self.receiver.resync_all(now),
        }
        self.event(LinkEvent::PeerHandshake(outcome));
        if !matches!(outcome, InitOutcome::PeerRestarted { .. }) {
            return;
        }
        let recent = self.tx_up_at.is_some_and(|t| now < t.saturating_add(self.config.restart_holdoff));
        // Out of FLUSH only by RE_INIT_ON_FLUSH or management (SAI), never by the peer.
        if matches!(self.tx.state(), TxState::Off | TxState::Init | TxState::Flush) || recent {
            self.stats.restarts_held_off += u64::from(recent);
            return;
        }
        if self.tx.restart(now).is_ok() {
            self.new_epoch();
        }
    }

    /// Handles a received frame on `vc` (the embedder's classification) with the sequence number
    /// its preamble carried (`None` for an ordinary frame) and the FCS verdict. Data frames
    /// delivered are accounted in the VC's buffer; CC_Updates are applied.
    pub fn handle_frame(
        &mut self,
        now: Instant,
        seq: Option<u32>,
        check: FrameCheck,
        vc: Vc,
        frame: &[u8],
    ) -> Received {
        let verdict = match seq {
            Some(seq) => self.rx.handle_frame(now, seq, check),
            None if check == FrameCheck::Good => RxVerdict::Deliver,
            None => RxVerdict::Discard,
        };
        let received = if verdict != RxVerdict::Deliver {
            Received::Drop
        } else if let Ok((cc, _)) = CcUpdateFrame::parse(frame) {
            if seq.is_none() && self.config.llr_rx.enabled {
                self.stats.cc_updates_unprotected += 1;
                self.pump(now);
                return Received::Drop;
            }
            let out = self.receiver.handle_cc_update(&cc.update);
            if let Some((vc, error)) = out.first_error {
                self.event(LinkEvent::CcUpdateRejected { vc, error });
            }
            Received::CcUpdate
        } else {
            match self.receiver.on_received(vc, frame.len()) {
                Ok(_) => Received::Deliver,
                Err(Error::CreditOverrun { .. }) => {
                    self.event(LinkEvent::Overrun { vc });
                    Received::Drop
                }
                Err(_) => Received::Drop,
            }
        };
        self.pump(now);
        received
    }

    /// Reports that a delivered frame of `len` bytes left `vc`'s buffer: its credits go back to
    /// the peer in a CF_Update.
    pub fn on_drained(&mut self, vc: Vc, len: usize) -> Result<(), Error> {
        self.receiver.on_frame_freed(vc, len)
    }

    /// The next instant [`Link::handle_timeout`], [`Link::poll_transmit`] or
    /// [`Link::poll_control`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let cc = if self.can_queue() { self.sender.poll_timeout() } else { None };
        [self.tx.poll_timeout(), self.rx.poll_timeout(), self.receiver.poll_timeout(), cc].into_iter().flatten().min()
    }

    /// Runs the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.tx.handle_timeout(now);
        self.pump(now);
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    fn event(&mut self, e: LinkEvent) {
        if self.events.push_back(e).is_err() {
            self.stats.events_dropped += 1;
        }
    }

    /// Turns the transmitter's events into the link's, with their CBFC consequences.
    fn pump(&mut self, now: Instant) {
        while let Some(e) = self.tx.poll_event() {
            let e = match e {
                LlrTxEvent::Initialized => {
                    self.tx_up_at = Some(now);
                    LinkEvent::TxUp
                }
                LlrTxEvent::ReplayStarted { cause, .. } => LinkEvent::ReplayStarted { cause },
                LlrTxEvent::Flushed { reason, frames_dropped } => {
                    // The next handshake (by itself, or by management) is a new epoch.
                    self.new_epoch();
                    LinkEvent::Flushed { reason, frames_dropped }
                }
                LlrTxEvent::Restarted { frames_dropped } => LinkEvent::TxRestarted { frames_dropped },
            };
            self.event(e);
        }
    }
}
