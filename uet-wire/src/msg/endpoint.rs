//! One fabric endpoint: messages in, packets out, and back (issue 4; digest `shared/spec/uet.md`
//! §4.1 for the PDC keys, §4.3 for PDC life, §5.2 for the standard request).
//!
//! The [`Endpoint`] owns the initiator and target PDCs of one address in two [`PdcTable`]s and the
//! messages it is sending. It copies no payload:
//!
//! * [`Endpoint::send`] queues a message (a standard SES request template and a length). Its
//!   packets go out through [`Endpoint::poll_transmit`], which writes the PDS and SES headers into
//!   the caller's buffer and says which bytes of which message follow them ([`Transmit`]).
//! * [`Endpoint::handle_packet`] takes a received packet (from the PDS header on, the UDP payload
//!   or what follows the entropy header) and returns where its payload belongs ([`Placement`]),
//!   borrowed from the packet; the caller copies it into the message's buffer.
//! * [`Endpoint::poll_event`] reports sent messages completed or failed, and received messages
//!   complete, in send order per PDC.
//!
//! *Project-defined* choices, each here only:
//!
//! * Messages to one PDC key (mode, JobID, addresses, TC) go out one after another: a message's
//!   packets take consecutive PSNs, so a resend finds its message and packet index from the PSN.
//!   Our message ids count from 0 on each PDC; received messages are ordered by the PSN of their
//!   first packet, so a peer's ids may come from any counter ([`order`](super::order)).
//! * A sent message completes when every PSN up to its last is acknowledged (in order, per PDC).
//! * With [`EndpointConfig::close_when_idle`], a PDC closes as soon as it has no message left to
//!   send or acknowledge; a later message opens a new PDC.
//! * A PDC the target asked to close (CLOSE_REQ) finishes the message in progress; the messages
//!   after it wait for that PDC to close and then open a new one.
//! * **Every ACK names a request and answers it** (the reference provider's target answers every
//!   accepted request packet, `ultraethernet/uet-ref-prov` `uet_pds_to_ses_rx_req`, and its
//!   initiator completes a packet acknowledged by name only when the ACK carries an SES
//!   response): the ACK carries the guaranteed-delivery response held for the PSN it names
//!   (ACK_PSN), else the SES DEFAULT_RESPONSE — RC_OK with the request's message id, RI
//!   generation and JobID and `modified_length` = `request_length` for a request delivered now,
//!   RC_NULL for a duplicate (a PSN received before, in the current or the prior window; UE 1.0
//!   §3.5.20.1). An ACK that names an older request (answering a probe, or a CLEAR) carries an
//!   RC_NULL DEFAULT_RESPONSE, since only the last request's ids are kept; only the CLOSE's ACK
//!   is bare. Our initiator accepts bare ACKs too, as other peers send them.
//! * A NACK NEW_START_PSN (secure start, 0-RTT or 1-RTT) moves the PSNs of the PDC's messages
//!   with its window: they are resent at the new PSNs and complete only when those are
//!   acknowledged.
//! * Every packet that names an established PDC must come from that PDC's peer address; one that
//!   does not changes nothing and is counted in [`EndpointStats::source_mismatches`].
//! * **Guaranteed-delivery responses** (digest §4.4, §5: any response but DEFAULT_RESPONSE and
//!   NO_RESPONSE is kept until cleared): the caller answers a placed request with
//!   [`Endpoint::respond`]; the target PDC holds the RESPONSE (`R` per PDC, by default
//!   [`HELD_RESPONSES`]) and the request's ACK carries it. Since
//!   any request may need one, a request is delivered only while a response could be held for it,
//!   else NACKed NO_GTD_DEL_AVAIL. The initiator reports it once as [`Event::Response`], before its
//!   message's `Sent`.
//! * **Late SYNs.** A SYN request for no open target PDC opens one, so a copy of a packet of a
//!   PDC that already closed (a fabric duplicate, or one delayed past the close) would open a
//!   new PDC and be delivered again. The endpoint remembers its last 16 closed target PDCs for
//!   `New_PDC_Time` (default 5 ms) after the close, and drops unanswered a SYN request with the
//!   same key (source, destination, SPDCID) and start PSN (its PSN − psn_offset). A new PDC from
//!   the same initiator PDC id picks a fresh start PSN (random, digest §4.3 initiator step 1, or
//!   above `Expected_PSN` under secure start, §2.3), so it is not mistaken for one.
//! * A request the event queue has no room for is dropped unanswered (its resend comes back once
//!   the caller has polled events), so no event is ever lost.
//!
//! **RUDI and UUD** (digest §3.11, \[B\] REF README) need no PDC:
//!
//! * RUDI (reliable, unordered, for idempotent operations): every packet carries a fresh packet
//!   id and waits for its RUDI response; the initiator resends it after `RTO_Init_Timer`,
//!   doubled after each resend up to [`PdcConfig::rto_max`] (per packet, REF README), at most
//!   `Max_RTO_Retx_Cnt` times, then fails the message. A RUDI NACK of a retransmit-class code
//!   resends at once; other codes fail the message. The target places every request it gets,
//!   duplicates included (the operation is idempotent), and answers each with a RUDI response
//!   carrying the SES DEFAULT_RESPONSE (RC_OK, the whole message). It keeps no state, so it reports no
//!   `Received` event for a RUDI message: the placements are the delivery.
//! * UUD (best effort): one packet, no answer. The message counts as `Sent` once on the wire;
//!   the target places it and reports it `Received` (PDC 0, which no PDC uses).

use super::order::{MessageOrder, OrderError};
use super::segment::{Segment, SegmentError, Segmenter};
use crate::Error;
use crate::pdc::held::HELD_RESPONSES;
use crate::pdc::{
    Delivery, Failure, Initiator, InitiatorEvent, InitiatorKey, InitiatorState, InitiatorTx, IpAddr, PdcConfig,
    PdcTable, StartPolicy, Target, TargetEvent, TargetKey, TargetTx, psn_after,
};
use crate::pds::{DeliveryMode, Nack, NackCode, NackTarget, NextHeader, PdcDest, PdsHeader, Request};
use crate::pds::{Rudi, RudiFlags};
use crate::ses::{Response, ResponseList, ResponseOpcode, ReturnCode, SesHeader, StandardRequest};
use linklayer::Instant;

/// The most header bytes one packet takes: a 16-byte PDS header (RUD_CC, NACK, control) or a
/// 32-byte ACK_CC or NACK_CCX, 40-byte ACK_CCX; or a 12-byte request with a 44-byte standard SES
/// request and a 36-byte compare-and-swap extension.
pub const MAX_HEADER_LEN: usize = 16 + 44 + 36;

/// Messages a target PDC tracks in progress (arrived in part, or complete and waiting for an
/// earlier one); a packet starting one more is NACKed NO_SES_MSG_AVAIL.
pub const ORDER_WINDOW: usize = 16;

/// Configuration of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EndpointConfig {
    /// This endpoint's address.
    pub addr: IpAddr,
    /// Payload bytes per packet (every packet of a message but the last is full).
    pub mtu: u16,
    /// PDC timers and limits.
    pub pdc: PdcConfig,
    /// Close a PDC as soon as it has nothing left to send or acknowledge.
    pub close_when_idle: bool,
    /// The most messages started on one PDC and not yet completed (`Sent` or `Failed`); the next
    /// waits for one to complete. A target tracks a bounded number of messages in progress per
    /// PDC (ours [`ORDER_WINDOW`], 16) and refuses the packets of more with NACK
    /// NO_SES_MSG_AVAIL, so sending more under loss only draws NACKs. Default [`ORDER_WINDOW`].
    pub messages_per_pdc: u16,
}

impl EndpointConfig {
    /// An endpoint at `addr` sending `mtu` payload bytes per packet, with the default PDC timers,
    /// PDCs closed when idle, and [`ORDER_WINDOW`] messages in progress per PDC.
    pub fn new(addr: IpAddr, mtu: u16) -> Self {
        EndpointConfig {
            addr,
            mtu,
            pdc: PdcConfig::default(),
            close_when_idle: true,
            messages_per_pdc: ORDER_WINDOW as u16,
        }
    }
}

/// How a message is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Service {
    /// Reliable unordered delivery on a PDC; messages complete in order.
    Rud,
    /// Reliable ordered delivery on a PDC.
    Rod,
    /// Reliable unordered delivery for idempotent operations, without a PDC.
    Rudi,
    /// Unreliable datagram of one packet.
    Uud,
}

impl Service {
    /// The PDC mode, for the services that use a PDC.
    pub const fn pdc_mode(self) -> Option<DeliveryMode> {
        match self {
            Service::Rud => Some(DeliveryMode::Rud),
            Service::Rod => Some(DeliveryMode::Rod),
            Service::Rudi | Service::Uud => None,
        }
    }
}

/// A message to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageDesc {
    /// Destination address.
    pub dst: IpAddr,
    /// RUD, ROD, RUDI or UUD.
    pub service: Service,
    /// Traffic class (part of the PDC key).
    pub tc: u8,
    /// The standard request: opcode, flags (SOM, EOM and the message id are set per packet),
    /// JobID, PIDonFEP, resource index, buffer offset, initiator, match bits, header data.
    pub header: StandardRequest,
    /// Payload bytes.
    pub len: u32,
}

/// A queued message, as the caller names it: slot and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MsgHandle {
    slot: u16,
    generation: u16,
}

/// Which bytes of which message follow the headers [`Endpoint::poll_transmit`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PayloadRef {
    /// The message.
    pub msg: MsgHandle,
    /// Byte offset in the message.
    pub offset: u32,
    /// Bytes.
    pub len: u16,
}

/// A packet to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Transmit {
    /// Destination address.
    pub dst: IpAddr,
    /// Header bytes written at the front of the buffer.
    pub header_len: usize,
    /// The payload to append, for a request.
    pub payload: Option<PayloadRef>,
}

/// Where a received payload belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Placement<'a> {
    /// Sender address.
    pub src: IpAddr,
    /// The target PDC it arrived on (this endpoint's id).
    pub pdc: u16,
    /// The sender's message id on that PDC.
    pub message_id: u16,
    /// The request's PSN, which [`Endpoint::respond`] answers (0 for RUDI and UUD, which have
    /// no PDC and no guaranteed-delivery response).
    pub psn: u32,
    /// The whole request header, for the SES (opcode, buffer offset, match bits, ...).
    pub header: StandardRequest,
    /// Byte offset of the payload in the message.
    pub offset: u32,
    /// The payload.
    pub payload: &'a [u8],
}

/// What happened, reported by [`Endpoint::poll_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// Every packet of a sent message was acknowledged.
    Sent(MsgHandle),
    /// A sent message failed: its PDC closed in error.
    Failed(MsgHandle, Failure),
    /// The target answered a packet of a sent message with a guaranteed-delivery SES response
    /// (any opcode but DEFAULT_RESPONSE and NO_RESPONSE), reported once, before the message's
    /// `Sent`.
    Response {
        /// The message.
        msg: MsgHandle,
        /// The PSN of the packet answered.
        psn: u32,
        /// The response.
        response: Response,
    },
    /// The target's DEFAULT_RESPONSE (RC_OK) for a packet of a sent message reports fewer bytes
    /// than the message has: it was truncated at the target (the reference provider's initiator
    /// completes such a message in error). Reported once, before the message's `Sent`.
    Truncated {
        /// The message.
        msg: MsgHandle,
        /// The PSN of the packet answered.
        psn: u32,
        /// The bytes the target says it took (`modified_length`).
        modified_length: u32,
    },
    /// A received message is complete (reported in send order per PDC).
    Received {
        /// Sender address.
        src: IpAddr,
        /// The target PDC (this endpoint's id).
        pdc: u16,
        /// The sender's message id.
        message_id: u16,
        /// Message length.
        len: u32,
    },
}

/// Why the endpoint refused a call or a packet. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EndpointError {
    /// Every message slot is in use.
    TooManyMessages,
    /// The message cannot be segmented.
    Segment(SegmentError),
    /// The packet does not parse.
    Malformed(Error),
    /// The packet is not one this endpoint handles (a response it did not ask for, another SES
    /// format).
    Unsupported,
    /// A UUD message must fit one packet.
    UudTooLong,
    /// The event queue is full: poll events, then the packet's resend will be accepted.
    EventsFull,
    /// The queue of RUDI responses is full: transmit, then the request's resend will be answered.
    ResponsesFull,
    /// The output buffer cannot hold the headers.
    BufferTooShort,
    /// [`Endpoint::respond`] cannot hold the response (see [`Target::hold_response`]).
    Respond(crate::pdc::PdcError),
}

impl From<Error> for EndpointError {
    fn from(e: Error) -> Self {
        EndpointError::Malformed(e)
    }
}

impl core::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EndpointError::TooManyMessages => write!(f, "every message slot is in use"),
            EndpointError::Segment(e) => write!(f, "{e}"),
            EndpointError::Malformed(e) => write!(f, "malformed packet: {e}"),
            EndpointError::Unsupported => write!(f, "a packet this endpoint does not handle"),
            EndpointError::UudTooLong => write!(f, "a UUD message must fit one packet"),
            EndpointError::EventsFull => write!(f, "the event queue is full: poll events"),
            EndpointError::ResponsesFull => write!(f, "the RUDI response queue is full: transmit"),
            EndpointError::BufferTooShort => write!(f, "the output buffer cannot hold the headers"),
            EndpointError::Respond(e) => write!(f, "cannot respond: {e}"),
        }
    }
}

impl core::error::Error for EndpointError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            EndpointError::Segment(e) => Some(e),
            EndpointError::Malformed(e) => Some(e),
            EndpointError::Respond(e) => Some(e),
            _ => None,
        }
    }
}

/// What the endpoint dropped or refused, by cause (counts since [`Endpoint::new`], wrapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EndpointStats {
    /// Packets that named a PDC here but came from an address other than its peer's: requests
    /// and control packets for a target PDC were NACKed PDC_HDR_MISMATCH, ACKs and NACKs for an
    /// initiator PDC dropped. None changed the PDC.
    pub source_mismatches: u64,
}

struct SendMsg {
    generation: u16,
    desc: MessageDesc,
    segments: Segmenter,
    /// Order of submission (for fairness and per-key order).
    seq: u64,
    /// The initiator PDC carrying it, its message id there and its first PSN, once started.
    pdc: Option<u16>,
    message_id: u16,
    first_psn: u32,
    sent: u32,
}

struct IniPdc {
    pdc: Initiator,
    /// The PDC's start PSN when its messages' PSNs were last set: a NACK NEW_START_PSN moves
    /// the window, and the messages' PSNs move with it.
    start_psn: u32,
    next_message_id: u16,
    /// The message whose packets are going out (the next message waits for it).
    active: Option<u16>,
}

struct TgtPdc<const R: usize> {
    pdc: Target<2, R>,
    order: MessageOrder<ORDER_WINDOW>,
    /// The SES DEFAULT_RESPONSE the next ACK carries if it names this PSN (ACK_PSN) and carries
    /// no held response: RC_OK for the request delivered last, RC_NULL for a duplicate.
    ack_response: Option<(u32, Response)>,
    /// The RI generation and JobID of the last request taken, for the RC_NULL response of an ACK
    /// that names an older request (one answering a probe, or a CLEAR).
    last_ids: (u8, u32),
}

/// One fabric endpoint with up to `P` initiator and `P` target PDCs, `M` messages being sent,
/// `E` undelivered events, and room for `R` guaranteed-delivery responses per target PDC (see
/// [`held`](crate::pdc::held); more slots let more answered requests wait for their CLEAR at once).
pub struct Endpoint<const P: usize, const M: usize, const E: usize, const R: usize = HELD_RESPONSES> {
    cfg: EndpointConfig,
    initiators: PdcTable<InitiatorKey, IniPdc, P>,
    targets: PdcTable<TargetKey, TgtPdc<R>, P>,
    msgs: [Option<SendMsg>; M],
    generations: [u16; M],
    next_seq: u64,
    events: heapless::Deque<Event, E>,
    /// Random bits for start PSNs (the caller seeds it; time and randomness are inputs).
    rng: u64,
    /// The latest time a call gave (for work `poll_event` triggers).
    now: Instant,
    /// NACKs waiting to go: (destination, NACK).
    nacks: heapless::Deque<(IpAddr, Nack), NACK_QUEUE>,
    /// RUDI packets sent and not yet answered.
    rudi: heapless::Vec<RudiOut, RUDI_IN_FLIGHT>,
    next_pkt_id: u32,
    /// Message ids of RUDI and UUD messages (no PDC numbers them).
    next_connectionless_id: u16,
    /// RUDI responses waiting to go.
    rudi_responses: heapless::Deque<(IpAddr, Rudi, Response), NACK_QUEUE>,
    /// Target PDCs closed lately, newest last.
    closed_targets: heapless::Deque<ClosedTarget, CLOSED_MEMORY>,
    stats: EndpointStats,
}

/// A target PDC closed lately: a SYN request for its key and start PSN before `until` is a late
/// copy of one of its packets.
#[derive(Clone, Copy, Debug)]
struct ClosedTarget {
    key: TargetKey,
    start_psn: u32,
    until: Instant,
}

/// Closed target PDCs an endpoint remembers (the oldest is forgotten first).
const CLOSED_MEMORY: usize = 16;

/// RUDI packets an endpoint keeps in flight.
const RUDI_IN_FLIGHT: usize = 32;

/// A RUDI packet waiting for its response.
#[derive(Clone, Copy, Debug)]
struct RudiOut {
    pkt_id: u32,
    slot: u16,
    index: u32,
    resend_at: Instant,
    retries: u8,
}

/// NACKs an endpoint holds for sending.
const NACK_QUEUE: usize = 16;

impl<const P: usize, const M: usize, const E: usize, const R: usize> Endpoint<P, M, E, R> {
    const SIZES_OK: () = assert!(M >= 1 && M <= 1 << 15 && E > ORDER_WINDOW, "bad endpoint capacities");

    /// An endpoint with no PDC and no message. `seed` feeds the start PSNs.
    pub fn new(cfg: EndpointConfig, seed: u64) -> Self {
        let () = Self::SIZES_OK;
        Endpoint {
            cfg,
            initiators: PdcTable::new(),
            targets: PdcTable::new(),
            msgs: core::array::from_fn(|_| None),
            generations: [0; M],
            next_seq: 0,
            events: heapless::Deque::new(),
            rng: seed | 1,
            now: Instant::ZERO,
            nacks: heapless::Deque::new(),
            rudi: heapless::Vec::new(),
            next_pkt_id: (seed >> 32) as u32,
            next_connectionless_id: 0,
            rudi_responses: heapless::Deque::new(),
            closed_targets: heapless::Deque::new(),
            stats: EndpointStats::default(),
        }
    }

    /// What the endpoint dropped or refused so far.
    pub const fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// The configuration.
    pub const fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// Initiator PDCs open.
    pub fn initiator_pdcs(&self) -> usize {
        self.initiators.len()
    }

    /// Target PDCs open.
    pub fn target_pdcs(&self) -> usize {
        self.targets.len()
    }

    /// Messages queued or in flight.
    pub fn messages_in_flight(&self) -> usize {
        self.msgs.iter().flatten().count()
    }

    fn random_u32(&mut self) -> u32 {
        // xorshift64: start PSNs need only be unpredictable to the peer, not cryptographic.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 16) as u32
    }

    /// Queues a message; its packets go out through [`Endpoint::poll_transmit`].
    pub fn send(&mut self, desc: MessageDesc) -> Result<MsgHandle, EndpointError> {
        let segments = Segmenter::new(desc.len, self.cfg.mtu).map_err(EndpointError::Segment)?;
        if desc.service == Service::Uud && segments.packets() > 1 {
            return Err(EndpointError::UudTooLong);
        }
        let slot = self.msgs.iter().position(Option::is_none).ok_or(EndpointError::TooManyMessages)?;
        let generation = self.generations.get(slot).copied().unwrap_or(0);
        let seq = self.next_seq;
        self.next_seq += 1;
        let message_id = if desc.service.pdc_mode().is_none() {
            let id = self.next_connectionless_id;
            self.next_connectionless_id = id.wrapping_add(1);
            id
        } else {
            // Numbered by its PDC when it starts.
            0
        };
        if let Some(m) = self.msgs.get_mut(slot) {
            *m = Some(SendMsg { generation, desc, segments, seq, pdc: None, message_id, first_psn: 0, sent: 0 });
        }
        Ok(MsgHandle { slot: slot as u16, generation })
    }

    fn key(&self, desc: &MessageDesc) -> InitiatorKey {
        InitiatorKey {
            mode: desc.service.pdc_mode().unwrap_or(DeliveryMode::Rud),
            job_id: desc.header.common.job_id,
            src: self.cfg.addr,
            dst: desc.dst,
            tc: desc.tc,
        }
    }

    fn free_msg(&mut self, slot: usize) -> Option<SendMsg> {
        let m = self.msgs.get_mut(slot)?.take()?;
        if let Some(g) = self.generations.get_mut(slot) {
            *g = g.wrapping_add(1);
        }
        Some(m)
    }

    /// The next packet to send, its headers written to the front of `out`, which must hold
    /// [`MAX_HEADER_LEN`] bytes (checked first, so a short buffer changes nothing). NACKs go
    /// first, then resends and control packets, then ACKs, then new packets of queued messages,
    /// oldest message first.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        if out.len() < MAX_HEADER_LEN {
            return Err(EndpointError::BufferTooShort);
        }
        self.now = self.now.max(now);
        if let Some((dst, n)) = self.nacks.front().copied() {
            let header_len = emit(out, &PdsHeader::Nack(n))?;
            self.nacks.pop_front();
            return Ok(Some(Transmit { dst, header_len, payload: None }));
        }
        if let Some((dst, r, rsp)) = self.rudi_responses.front().copied() {
            let n = emit(out, &PdsHeader::Rudi(r))?;
            let k = SesHeader::Response(rsp)
                .emit(out.get_mut(n..).unwrap_or_default())
                .map_err(|_| EndpointError::BufferTooShort)?;
            self.rudi_responses.pop_front();
            return Ok(Some(Transmit { dst, header_len: n + k, payload: None }));
        }
        if let Some(t) = self.transmit_rudi_resend(now, out)? {
            return Ok(Some(t));
        }
        if let Some(t) = self.transmit_initiator_pending(now, out)? {
            return Ok(Some(t));
        }
        if let Some(t) = self.transmit_target_pending(now, out)? {
            return Ok(Some(t));
        }
        self.transmit_new(now, out)
    }

    fn transmit_initiator_pending(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        let ids: heapless::Vec<u16, P> = self.initiators.iter().map(|(id, _)| id).collect();
        for id in ids {
            let Some(dst) = self.initiators.key(id).map(|k| k.dst) else { continue };
            let Some(p) = self.initiators.get_mut(id) else { continue };
            let Some(tx) = p.pdc.poll_transmit(now) else { continue };
            let t = match tx {
                InitiatorTx::Resend(stamp) => {
                    let Some((slot, index)) = self.message_at(id, stamp.psn) else { continue };
                    self.write_request(out, slot, index, stamp.request(NextHeader::ReqStd, None))?
                }
                InitiatorTx::Control(c) => {
                    Transmit { dst, header_len: emit(out, &PdsHeader::Control(c))?, payload: None }
                }
                InitiatorTx::Ack(a) => Transmit { dst, header_len: emit(out, &PdsHeader::Ack(a))?, payload: None },
            };
            self.after_initiator_change(now, id);
            return Ok(Some(t));
        }
        Ok(None)
    }

    fn transmit_target_pending(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        let ids: heapless::Vec<u16, P> = self.targets.iter().map(|(id, _)| id).collect();
        for id in ids {
            let Some(dst) = self.targets.key(id).map(|k| k.src) else { continue };
            let Some(p) = self.targets.get_mut(id) else { continue };
            let Some(tx) = p.pdc.poll_transmit(now) else { continue };
            let t = match tx {
                TargetTx::Ack(mut a) => match if a.next_header == NextHeader::Rsp {
                    // The ACK carries the guaranteed-delivery response held for its PSN.
                    p.pdc.held_response(a.ack_psn())
                } else {
                    // Else the default response for the request it names: RC_OK if that is the
                    // one the PDC took last, else RC_NULL for any request it received (answering a
                    // probe or a CLEAR); nothing once the PDC closed (the CLOSE's ACK).
                    let named = a.ack_psn();
                    let last = p.ack_response.take().filter(|(psn, _)| *psn == named).map(|(_, rsp)| rsp);
                    let received = p.pdc.state() != crate::pdc::TargetState::Closed && p.pdc.window().received(named);
                    last.or_else(|| received.then(|| null_response(p.last_ids)))
                } {
                    Some(rsp) => {
                        a.next_header = NextHeader::Rsp;
                        let n = emit(out, &PdsHeader::Ack(a))?;
                        let k = SesHeader::Response(rsp)
                            .emit(out.get_mut(n..).unwrap_or_default())
                            .map_err(|_| EndpointError::BufferTooShort)?;
                        Transmit { dst, header_len: n + k, payload: None }
                    }
                    None => {
                        a.next_header = NextHeader::None;
                        Transmit { dst, header_len: emit(out, &PdsHeader::Ack(a))?, payload: None }
                    }
                },
                TargetTx::Control(c) => Transmit { dst, header_len: emit(out, &PdsHeader::Control(c))?, payload: None },
                TargetTx::Nack(n) => Transmit { dst, header_len: emit(out, &PdsHeader::Nack(n))?, payload: None },
            };
            self.after_target_change(now, id);
            return Ok(Some(t));
        }
        Ok(None)
    }

    /// The message slot holding PSN `psn` of initiator PDC `id`, and the packet's index in it
    /// (PSNs of a PDC's messages are consecutive).
    fn message_at(&self, id: u16, psn: u32) -> Option<(usize, u32)> {
        self.msgs.iter().enumerate().find_map(|(slot, m)| {
            let m = m.as_ref()?;
            let i = psn.wrapping_sub(m.first_psn);
            (m.pdc == Some(id) && i < m.sent).then_some((slot, i))
        })
    }

    /// Writes the PDS request and the SES header of packet `index` of message `slot`.
    fn write_request(&self, out: &mut [u8], slot: usize, index: u32, pds: Request) -> Result<Transmit, EndpointError> {
        self.write_packet(out, slot, index, &PdsHeader::Request(pds))
    }

    /// Writes `pds` and the SES header of packet `index` of message `slot`.
    fn write_packet(
        &self,
        out: &mut [u8],
        slot: usize,
        index: u32,
        pds: &PdsHeader,
    ) -> Result<Transmit, EndpointError> {
        let m = self.msgs.get(slot).and_then(Option::as_ref).ok_or(EndpointError::Unsupported)?;
        let seg = m.segments.segment(index).ok_or(EndpointError::Unsupported)?;
        let mut template = m.desc.header;
        template.message_id = m.message_id;
        let ses = seg.standard_header(&template, m.desc.len);
        let n = emit(out, pds)?;
        let k = SesHeader::Standard(ses)
            .emit(out.get_mut(n..).unwrap_or_default())
            .map_err(|_| EndpointError::BufferTooShort)?;
        Ok(Transmit {
            dst: m.desc.dst,
            header_len: n + k,
            payload: Some(PayloadRef {
                msg: MsgHandle { slot: slot as u16, generation: m.generation },
                offset: seg.offset,
                len: seg.len,
            }),
        })
    }

    fn transmit_new(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        // Oldest message first among those that can go.
        let mut order: heapless::Vec<(u64, u16), M> = heapless::Vec::new();
        for (slot, m) in self.msgs.iter().enumerate() {
            if let Some(m) = m {
                if m.sent < m.segments.packets() {
                    let _ = order.push((m.seq, slot as u16));
                }
            }
        }
        order.sort_unstable();
        for &(_, slot) in &order {
            let slot = usize::from(slot);
            let service = self.msgs.get(slot).and_then(Option::as_ref).map(|m| m.desc.service);
            match service {
                Some(Service::Rudi) => match self.transmit_rudi_new(now, out, slot)? {
                    Some(t) => return Ok(Some(t)),
                    None => continue,
                },
                Some(Service::Uud) => return self.transmit_uud(out, slot).map(Some),
                _ => {}
            }
            let Some(id) = self.pdc_for(slot) else { continue };
            let cfg = self.cfg.pdc;
            let Some(p) = self.initiators.get_mut(id) else { continue };
            if !p.pdc.can_send(&cfg) || p.active.is_some_and(|a| usize::from(a) != slot) {
                continue;
            }
            let Some(m) = self.msgs.get_mut(slot).and_then(Option::as_mut) else { continue };
            let last = m.sent + 1 == m.segments.packets();
            let Ok(stamp) = p.pdc.send(now, &cfg, last) else { continue };
            if m.sent == 0 {
                m.pdc = Some(id);
                m.message_id = p.next_message_id;
                m.first_psn = stamp.psn;
                p.next_message_id = p.next_message_id.wrapping_add(1);
            }
            let index = m.sent;
            m.sent += 1;
            p.active = if last { None } else { Some(slot as u16) };
            let t = self.write_request(out, slot, index, stamp.request(NextHeader::ReqStd, None))?;
            return Ok(Some(t));
        }
        Ok(None)
    }

    /// The next packet of RUDI message `slot`, if the in-flight table has room.
    fn transmit_rudi_new(
        &mut self,
        now: Instant,
        out: &mut [u8],
        slot: usize,
    ) -> Result<Option<Transmit>, EndpointError> {
        if self.rudi.is_full() {
            return Ok(None);
        }
        let pkt_id = self.next_pkt_id;
        let Some(m) = self.msgs.get_mut(slot).and_then(Option::as_mut) else { return Ok(None) };
        let index = m.sent;
        let t = self.write_rudi(out, slot, index, pkt_id, false)?;
        self.next_pkt_id = pkt_id.wrapping_add(1);
        if let Some(m) = self.msgs.get_mut(slot).and_then(Option::as_mut) {
            m.sent += 1;
        }
        let resend_at = now.saturating_add(self.cfg.pdc.rto);
        // Room was checked above.
        let _ = self.rudi.push(RudiOut { pkt_id, slot: slot as u16, index, resend_at, retries: 0 });
        Ok(Some(t))
    }

    /// A RUDI packet whose response is overdue, resent; or, past `Max_RTO_Retx_Cnt`, its message
    /// failed.
    fn transmit_rudi_resend(&mut self, now: Instant, out: &mut [u8]) -> Result<Option<Transmit>, EndpointError> {
        let Some(k) = self.rudi.iter().position(|r| r.resend_at <= now) else { return Ok(None) };
        let Some(r) = self.rudi.get(k).copied() else { return Ok(None) };
        if r.retries >= self.cfg.pdc.max_rto_retx {
            self.fail_rudi(usize::from(r.slot), Failure::RetriesExhausted);
            return Ok(None);
        }
        let t = self.write_rudi(out, usize::from(r.slot), r.index, r.pkt_id, true)?;
        if let Some(e) = self.rudi.get_mut(k) {
            e.retries += 1;
            e.resend_at = now.saturating_add(self.cfg.pdc.rto_backoff(e.retries));
        }
        Ok(Some(t))
    }

    /// Fails RUDI message `slot` and forgets its packets in flight (their late responses find
    /// nothing).
    fn fail_rudi(&mut self, slot: usize, why: Failure) {
        let Some(m) = self.msgs.get(slot).and_then(Option::as_ref) else { return };
        let handle = MsgHandle { slot: slot as u16, generation: m.generation };
        if self.events.push_back(Event::Failed(handle, why)).is_ok() {
            self.rudi.retain(|r| usize::from(r.slot) != slot);
            self.free_msg(slot);
        }
    }

    /// Writes RUDI packet `index` of message `slot`.
    fn write_rudi(
        &self,
        out: &mut [u8],
        slot: usize,
        index: u32,
        pkt_id: u32,
        retx: bool,
    ) -> Result<Transmit, EndpointError> {
        let flags = if retx { RudiFlags::RETX } else { RudiFlags::empty() };
        let rudi = Rudi { response: false, next_header: NextHeader::ReqStd, flags, pkt_id };
        self.write_packet(out, slot, index, &PdsHeader::Rudi(rudi))
    }

    /// Sends the one packet of UUD message `slot`; it counts as sent at once.
    fn transmit_uud(&mut self, out: &mut [u8], slot: usize) -> Result<Transmit, EndpointError> {
        let uud = crate::pds::Uud { next_header: NextHeader::ReqStd };
        let t = self.write_packet(out, slot, 0, &PdsHeader::Uud(uud))?;
        if let Some(m) = self.msgs.get_mut(slot).and_then(Option::as_mut) {
            m.sent = 1;
        }
        self.complete_connectionless(slot);
        Ok(t)
    }

    /// Reports a connectionless message sent once all its packets went out and (RUDI) were
    /// answered; it stays until the event queue has room.
    fn complete_connectionless(&mut self, slot: usize) {
        let Some(m) = self.msgs.get(slot).and_then(Option::as_ref) else { return };
        let answered = !self.rudi.iter().any(|r| usize::from(r.slot) == slot);
        if m.sent == m.segments.packets() && answered {
            let handle = MsgHandle { slot: slot as u16, generation: m.generation };
            if self.events.push_back(Event::Sent(handle)).is_ok() {
                self.free_msg(slot);
            }
        }
    }

    /// The PDC a message goes out on: its own once started; else the open PDC of its key if it
    /// takes new messages; else a new one (none while the key's PDC is closing or the table is
    /// full).
    fn pdc_for(&mut self, slot: usize) -> Option<u16> {
        let m = self.msgs.get(slot)?.as_ref()?;
        if let Some(id) = m.pdc {
            return Some(id);
        }
        let key = self.key(&m.desc);
        if let Some(id) = self.initiators.find(&key) {
            let p = self.initiators.get(id)?;
            let takes_new = matches!(p.pdc.state(), InitiatorState::Creating | InitiatorState::Established);
            // No more messages in progress than the target tracks (see `messages_per_pdc`).
            let open = self.msgs.iter().flatten().filter(|m| m.pdc == Some(id)).count();
            return (takes_new && open < usize::from(self.cfg.messages_per_pdc)).then_some(id);
        }
        let id = self.initiators.next_id()?;
        let start = self.random_u32();
        let pdc = Initiator::new(&self.cfg.pdc, key.mode, id, start);
        self.initiators.insert(key, IniPdc { start_psn: pdc.start_psn(), pdc, next_message_id: 0, active: None }).ok()
    }

    /// Takes a received packet: PDS header on, without any CRC trailer. Returns where a new
    /// request's payload belongs. For a packet that arrived CE-marked, call
    /// [`Endpoint::handle_ce_packet`] instead.
    pub fn handle_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        self.handle_any_packet(now, src, bytes, false)
    }

    /// [`Endpoint::handle_packet`] for a packet whose IP header carried ECN CE (congestion
    /// experienced): the ACK for it sets the M flag, and with `ACK_On_ECN` it is sent at once.
    pub fn handle_ce_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        self.handle_any_packet(now, src, bytes, true)
    }

    fn handle_any_packet<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &'a [u8],
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        let (pds, rest) = PdsHeader::parse(bytes)?;
        self.now = self.now.max(now);
        match pds {
            PdsHeader::Request(r) => self.handle_request(now, src, r, rest, ce),
            PdsHeader::Ack(a) if !self.is_from_peer_of(a.dpdcid, src) => Ok(None),
            PdsHeader::Nack(Nack { target: NackTarget::Pdc { dpdcid, .. }, .. })
                if !self.is_from_peer_of(dpdcid, src) =>
            {
                Ok(None)
            }
            PdsHeader::Ack(a) if a.next_header != NextHeader::None && self.initiators.get(a.dpdcid).is_some() => {
                self.response_ack(now, &a, rest)?;
                Ok(None)
            }
            PdsHeader::Ack(a) => {
                self.on_initiator(
                    now,
                    a.dpdcid,
                    |p, cfg| p.handle_ack(now, cfg, &a).map(drop),
                    |t, cfg| t.handle_ack(now, cfg, &a),
                );
                Ok(None)
            }
            PdsHeader::Nack(n) => {
                match n.target {
                    NackTarget::Pdc { dpdcid, .. } => {
                        self.on_initiator(now, dpdcid, |p, cfg| p.handle_nack(now, cfg, &n).map(drop), |_, _| Ok(()));
                    }
                    NackTarget::Rudi { pkt_id, .. } => self.rudi_nacked(now, pkt_id, n.code),
                }
                Ok(None)
            }
            PdsHeader::Control(c) => {
                match c.dest {
                    // Control packets to an initiator come from its target (CLOSE_REQ); to a
                    // target from its initiator. The DPDCID says which table.
                    PdcDest::Established { dpdcid } => {
                        let to_initiator = self.initiators.key(dpdcid).is_some()
                            && matches!(c.ctl_type, crate::pds::ControlType::CloseReq);
                        if !to_initiator {
                            self.control_to_target(now, src, dpdcid, &c);
                        } else if self.is_from_peer_of(dpdcid, src) {
                            self.on_initiator(now, dpdcid, |p, _| p.handle_control(now, &c), |_, _| Ok(()));
                        }
                    }
                    PdcDest::Syn { .. } => {
                        let key = TargetKey { src, dst: self.cfg.addr, spdcid: c.spdcid };
                        if let Some(id) = self.targets.find(&key) {
                            self.control_to_target(now, src, id, &c);
                        }
                    }
                }
                Ok(None)
            }
            PdsHeader::Rudi(r) if r.response => {
                self.rudi_answered(r.pkt_id);
                Ok(None)
            }
            PdsHeader::Rudi(r) => self.handle_connectionless(src, Some(r), rest),
            PdsHeader::Uud(_) => self.handle_connectionless(src, None, rest),
        }
    }

    /// Takes a request that arrived trimmed (its payload cut by a switch; the caller knows from
    /// the packet's marking): the target PDC NACKs it TRIMMED (TRIMMED_LASTHOP with `last_hop`) so
    /// the initiator resends at once. Nothing is recorded.
    pub fn handle_trimmed(
        &mut self,
        now: Instant,
        src: IpAddr,
        bytes: &[u8],
        last_hop: bool,
    ) -> Result<(), EndpointError> {
        let (pds, _) = PdsHeader::parse(bytes)?;
        self.now = self.now.max(now);
        let PdsHeader::Request(r) = pds else { return Err(EndpointError::Unsupported) };
        let id = match r.dest {
            PdcDest::Established { dpdcid } if !self.is_from_initiator_of(dpdcid, src) => {
                self.queue_nack(src, refusal(NackCode::PdcHdrMismatch, &r, dpdcid));
                return Ok(());
            }
            PdcDest::Established { dpdcid } => Some(dpdcid),
            PdcDest::Syn { .. } => self.targets.find(&TargetKey { src, dst: self.cfg.addr, spdcid: r.spdcid }),
        };
        let verdict = id.and_then(|id| self.targets.get(id)).map(|t| t.pdc.handle_trimmed(&r, last_hop));
        match verdict {
            Some(Ok(v)) => {
                if let Some(n) = v.nack {
                    self.queue_nack(src, n);
                }
            }
            Some(Err(_)) => {}
            // No PDC yet (a trimmed SYN): NACK it so the initiator resends; the resend creates it.
            None => {
                let code = if last_hop { NackCode::TrimmedLastHop } else { NackCode::Trimmed };
                self.queue_nack(src, refusal(code, &r, 0));
            }
        }
        Ok(())
    }

    /// A RUDI response arrived: its packet is done.
    fn rudi_answered(&mut self, pkt_id: u32) {
        let Some(k) = self.rudi.iter().position(|r| r.pkt_id == pkt_id) else { return };
        let slot = usize::from(self.rudi.swap_remove(k).slot);
        self.complete_connectionless(slot);
    }

    /// A RUDI NACK: resend at once for a retransmit-class code, else fail the message.
    fn rudi_nacked(&mut self, now: Instant, pkt_id: u32, code: NackCode) {
        let Some(r) = self.rudi.iter_mut().find(|r| r.pkt_id == pkt_id) else { return };
        if code.class() == crate::pds::NackClass::Retransmit {
            r.resend_at = now;
        } else {
            let slot = usize::from(r.slot);
            self.fail_rudi(slot, Failure::Nack(code));
        }
    }

    /// A RUDI or UUD request: placed without a PDC; RUDI answered with a RUDI response, UUD
    /// reported received.
    fn handle_connectionless<'a>(
        &mut self,
        src: IpAddr,
        rudi: Option<Rudi>,
        rest: &'a [u8],
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        let (ses, payload) = SesHeader::parse(NextHeader::ReqStd, rest)?;
        let Some(SesHeader::Standard(ses)) = ses else { return Err(EndpointError::Unsupported) };
        let seg = Segment::of_received(&ses, u16::try_from(payload.len()).unwrap_or(u16::MAX));
        if usize::from(seg.len) != payload.len()
            || u64::from(seg.offset) + payload.len() as u64 > u64::from(ses.request_length)
        {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "SES payload length and payload bytes" }));
        }
        match rudi {
            Some(r) => {
                if self.rudi_responses.is_full() {
                    // Unanswered, the initiator resends; placing it again is harmless.
                    return Err(EndpointError::ResponsesFull);
                }
                let rsp = Response::default_for(&ses, ReturnCode::Ok);
                let answer = Rudi {
                    response: true,
                    next_header: NextHeader::Rsp,
                    flags: r.flags & RudiFlags::M,
                    pkt_id: r.pkt_id,
                };
                let _ = self.rudi_responses.push_back((src, answer, rsp));
            }
            None => {
                if !(seg.som && seg.eom) {
                    return Err(EndpointError::Malformed(Error::Mismatch { field: "UUD is not one packet" }));
                }
                let ev = Event::Received { src, pdc: 0, message_id: ses.message_id, len: ses.request_length };
                self.events.push_back(ev).map_err(|_| EndpointError::EventsFull)?;
            }
        }
        Ok(Some(Placement {
            src,
            pdc: 0,
            message_id: ses.message_id,
            psn: 0,
            header: ses,
            offset: seg.offset,
            payload,
        }))
    }

    /// Applies `f` to initiator PDC `id` (or `g` to target PDC `id` for an ACK of a CLOSE_REQ),
    /// then settles messages and events. A packet for no PDC is dropped.
    fn on_initiator(
        &mut self,
        now: Instant,
        id: u16,
        f: impl FnOnce(&mut Initiator, &PdcConfig) -> Result<(), crate::pdc::PdcError>,
        g: impl FnOnce(&mut Target<2, R>, &PdcConfig) -> Result<(), crate::pdc::PdcError>,
    ) {
        let cfg = self.cfg.pdc;
        if let Some(p) = self.initiators.get_mut(id) {
            // A refused packet changes nothing; there is nothing to answer.
            let _ = f(&mut p.pdc, &cfg);
            self.after_initiator_change(now, id);
        } else if let Some(t) = self.targets.get_mut(id) {
            let _ = g(&mut t.pdc, &cfg);
            self.after_target_change(now, id);
        }
    }

    /// An ACK carrying an SES response to initiator PDC `a.dpdcid`, which is reported the first
    /// time its PSN is acknowledged (the target resends a held response with the ACK of every
    /// duplicate; later copies only acknowledge): a guaranteed-delivery response, or a
    /// DEFAULT_RESPONSE with an error code, as [`Event::Response`]; a DEFAULT_RESPONSE with RC_OK
    /// whose `modified_length` (0 means the whole message) falls short of the message as
    /// [`Event::Truncated`]. RC_NULL, NO_RESPONSE and other forms only acknowledge (the reference
    /// provider's initiator rules, `uet_pds_to_ses_rx_rsp`).
    fn response_ack(&mut self, now: Instant, a: &crate::pds::Ack, rest: &[u8]) -> Result<(), EndpointError> {
        let response = match SesHeader::parse(a.next_header, rest)? {
            (Some(SesHeader::Response(r)), _) => match (r.opcode, r.return_code) {
                (ResponseOpcode::NoResponse, _) | (ResponseOpcode::DefaultResponse, ReturnCode::Null) => None,
                _ => Some(r),
            },
            // Other response forms (with data: this endpoint issues no reads) only acknowledge.
            _ => None,
        };
        let id = a.dpdcid;
        let psn = a.ack_psn();
        let cfg = self.cfg.pdc;
        let Some(p) = self.initiators.get_mut(id) else { return Ok(()) };
        let first = !p.pdc.is_acked(psn);
        if response.is_some() && first && self.events.is_full() {
            // Nothing changed: the response comes again with the ACK of the packet's resend.
            return Err(EndpointError::EventsFull);
        }
        // A refused ACK changes nothing; there is nothing to answer.
        let accepted = p.pdc.handle_ack(now, &cfg, a).is_ok() && p.pdc.is_acked(psn);
        if let Some(response) = response.filter(|_| first && accepted) {
            if let Some((slot, _)) = self.message_at(id, psn) {
                let m = self.msgs.get(slot).and_then(Option::as_ref);
                let (generation, len) = m.map_or((0, 0), |m| (m.generation, m.desc.len));
                let msg = MsgHandle { slot: slot as u16, generation };
                let event = match (response.opcode, response.return_code) {
                    (ResponseOpcode::DefaultResponse, ReturnCode::Ok) => {
                        let short = response.modified_length != 0 && response.modified_length != len;
                        short.then_some(Event::Truncated { msg, psn, modified_length: response.modified_length })
                    }
                    _ => Some(Event::Response { msg, psn, response }),
                };
                if let Some(ev) = event {
                    // Room was checked above.
                    let _ = self.events.push_back(ev);
                }
            }
        }
        self.after_initiator_change(now, id);
        Ok(())
    }

    /// Answers the request `placement` came from with a guaranteed-delivery SES RESPONSE carrying
    /// `return_code` and `modified_length`: the target PDC holds it until the initiator's
    /// `CLEAR_PSN` passes the request, and the ACK of the request carries it (again on every
    /// duplicate). Call it after [`Endpoint::handle_packet`] returned `placement` and before the
    /// next [`Endpoint::poll_transmit`]: an ACK sent since may have acknowledged the request
    /// already. The endpoint delivers a request only while a response could be held for it.
    pub fn respond(
        &mut self,
        placement: &Placement<'_>,
        return_code: ReturnCode,
        modified_length: u32,
    ) -> Result<(), EndpointError> {
        let rsp = Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::Response,
            return_code,
            message_id: placement.message_id,
            ri_generation: placement.header.common.ri_generation,
            job_id: placement.header.common.job_id,
            modified_length,
        };
        let from = self.targets.key(placement.pdc).map(|k| k.src);
        match self.targets.get_mut(placement.pdc) {
            Some(t) if from == Some(placement.src) => {
                t.pdc.hold_response(placement.psn, rsp).map_err(EndpointError::Respond)
            }
            _ => Err(EndpointError::Respond(crate::pdc::PdcError::CannotHold {
                psn: placement.psn,
                why: "no such target PDC",
            })),
        }
    }

    fn control_to_target(&mut self, now: Instant, src: IpAddr, id: u16, c: &crate::pds::Control) {
        let cfg = self.cfg.pdc;
        if !self.is_from_initiator_of(id, src) {
            self.queue_nack(src, Nack::for_pdc(NackCode::PdcHdrMismatch, c.psn, id, c.spdcid));
            return;
        }
        let Some(t) = self.targets.get_mut(id) else {
            self.nack_unknown(src, c.psn, c.spdcid);
            return;
        };
        if let Ok(v) = t.pdc.handle_control(now, &cfg, c) {
            if let Some(n) = v.nack {
                self.queue_nack(src, n);
            }
        }
        self.after_target_change(now, id);
    }

    fn handle_request<'a>(
        &mut self,
        now: Instant,
        src: IpAddr,
        r: Request,
        rest: &'a [u8],
        ce: bool,
    ) -> Result<Option<Placement<'a>>, EndpointError> {
        if r.next_header != NextHeader::ReqStd {
            return Err(EndpointError::Unsupported);
        }
        let (ses, payload) = SesHeader::parse(NextHeader::ReqStd, rest)?;
        let Some(SesHeader::Standard(ses)) = ses else { return Err(EndpointError::Unsupported) };
        let seg = Segment::of_received(&ses, u16::try_from(payload.len()).unwrap_or(u16::MAX));
        if usize::from(seg.len) != payload.len() {
            return Err(EndpointError::Malformed(Error::Mismatch { field: "SES payload length and payload bytes" }));
        }
        // Room for every event this packet could release.
        if E - self.events.len() < ORDER_WINDOW {
            return Err(EndpointError::EventsFull);
        }
        let cfg = self.cfg.pdc;
        let id = match r.dest {
            PdcDest::Established { dpdcid } => {
                if self.targets.get(dpdcid).is_none() {
                    self.nack_unknown(src, r.psn, r.spdcid);
                    return Ok(None);
                }
                if !self.is_from_initiator_of(dpdcid, src) {
                    self.queue_nack(src, refusal(NackCode::PdcHdrMismatch, &r, dpdcid));
                    return Ok(None);
                }
                dpdcid
            }
            PdcDest::Syn { .. } => {
                let key = TargetKey { src, dst: self.cfg.addr, spdcid: r.spdcid };
                match self.targets.find(&key) {
                    Some(id) => id,
                    None if r.start_psn().is_some_and(|s| self.is_late_syn(now, &key, s)) => return Ok(None),
                    None => {
                        let Some(id) = self.targets.next_id() else {
                            self.queue_nack(src, refusal(NackCode::NoPdcAvail, &r, 0));
                            return Ok(None);
                        };
                        let own_start = self.random_u32();
                        let Ok(pdc) = Target::new(now, &cfg, id, &r, StartPolicy::Open, own_start) else {
                            return Ok(None);
                        };
                        let tgt = TgtPdc { pdc, order: MessageOrder::new(), ack_response: None, last_ids: (0, 0) };
                        if self.targets.insert(key, tgt).is_err() {
                            return Ok(None);
                        }
                        id
                    }
                }
            }
        };
        let Some(t) = self.targets.get_mut(id) else { return Ok(None) };
        // The message layer must take a new packet before the PDC counts it received.
        if t.pdc.would_deliver(&r) {
            if let Err(e) = t.order.check(ses.message_id, ses.request_length, seg.len) {
                let code = match e {
                    OrderError::NoRoom { .. } => NackCode::NoSesMsgAvail,
                    OrderError::Inconsistent { .. } => NackCode::UnexpEvent,
                };
                self.queue_nack(src, refusal(code, &r, id));
                return Ok(None);
            }
            // Any request may need a guaranteed-delivery response: none is delivered unless one
            // could be held for it.
            if let Some(n) = t.pdc.check_response_room(&r) {
                self.queue_nack(src, n);
                return Ok(None);
            }
        }
        let verdict = t.pdc.handle_request(now, &cfg, &r, u32::from(seg.len), ce);
        let mut placement = None;
        if let Ok(v) = verdict {
            if v.delivery == Delivery::New {
                // Checked above, so this cannot fail.
                let _ = t.order.on_packet(ses.message_id, r.psn, seg.offset, ses.request_length, seg.len);
                let cack = t.pdc.window().cack_psn();
                while let Some((message_id, len)) = t.order.release(cack) {
                    let _ = self.events.push_back(Event::Received { src, pdc: id, message_id, len });
                }
                placement = Some(Placement {
                    src,
                    pdc: id,
                    message_id: ses.message_id,
                    psn: r.psn,
                    header: ses,
                    offset: seg.offset,
                    payload,
                });
            }
            // The ACK that names this request carries the SES DEFAULT_RESPONSE, unless it carries
            // a held response: RC_OK for a request delivered now, RC_NULL for one received before
            // (UE 1.0 §3.5.20.1; see the module doc).
            let code = match v.delivery {
                Delivery::New => Some(ReturnCode::Ok),
                Delivery::Stale | Delivery::Duplicate => Some(ReturnCode::Null),
                Delivery::Dropped => None,
            };
            if let Some(code) = code {
                t.ack_response = Some((r.psn, Response::default_for(&ses, code)));
                t.last_ids = (ses.common.ri_generation, ses.common.job_id);
            }
            if let Some(n) = v.nack {
                self.queue_nack(src, n);
            }
        }
        self.after_target_change(now, id);
        Ok(placement)
    }

    /// Whether a packet from `src` may touch PDC `id` as an ACK or NACK does: initiator PDC `id`
    /// if there is one (its target's address), else target PDC `id` (its initiator's address,
    /// for the ACK of a CLOSE_REQ). A mismatch is counted; no such PDC is not a mismatch.
    fn is_from_peer_of(&mut self, id: u16, src: IpAddr) -> bool {
        let peer = match self.initiators.key(id) {
            Some(k) => Some(k.dst),
            None => self.targets.key(id).map(|k| k.src),
        };
        self.count_mismatch(peer, src)
    }

    /// Whether a request or control packet from `src` may touch target PDC `id`: it comes from
    /// the PDC's initiator (else NACK PDC_HDR_MISMATCH, UE 1.0 Table 3-58: "a non-SYN packet that
    /// does not match the PDC's state, e.g. its source IP"). A mismatch is counted; no such PDC is
    /// not a mismatch.
    fn is_from_initiator_of(&mut self, id: u16, src: IpAddr) -> bool {
        let peer = self.targets.key(id).map(|k| k.src);
        self.count_mismatch(peer, src)
    }

    fn count_mismatch(&mut self, peer: Option<IpAddr>, src: IpAddr) -> bool {
        let ok = peer.is_none_or(|p| p == src);
        if !ok {
            self.stats.source_mismatches = self.stats.source_mismatches.wrapping_add(1);
        }
        ok
    }

    /// Queues a NACK for the next `poll_transmit`. When the queue is full the NACK is dropped:
    /// NACKs only speed recovery up, and the sender's timers cover their loss.
    fn queue_nack(&mut self, dst: IpAddr, n: Nack) {
        let _ = self.nacks.push_back((dst, n));
    }

    /// NACK INV_DPDCID for a packet that names no PDC here.
    fn nack_unknown(&mut self, src: IpAddr, psn: u32, spdcid: u16) {
        self.queue_nack(src, Nack::for_pdc(NackCode::InvDpdcid, psn, 0, spdcid));
    }

    /// Settles initiator PDC `id` after it changed: reports its events, completes or fails its
    /// messages, closes it when its work is done, and frees it once closed and settled.
    fn after_initiator_change(&mut self, now: Instant, id: u16) {
        let Some(key) = self.initiators.key(id).copied() else { return };
        let Some(p) = self.initiators.get_mut(id) else { return };
        while let Some(ev) = p.pdc.poll_event() {
            if let InitiatorEvent::Failed(_) = ev {
                p.active = None;
            }
        }
        let restarted_by = p.pdc.start_psn().wrapping_sub(p.start_psn);
        p.start_psn = p.pdc.start_psn();
        let base = p.pdc.window().base();
        let failure = p.pdc.failure();
        let state = p.pdc.state();
        let mut started_unsent = false;
        let mut for_key = false;
        if restarted_by != 0 {
            // NEW_START_PSN moved every PSN of the PDC (nothing was acknowledged yet).
            for m in self.msgs.iter_mut().flatten().filter(|m| m.pdc == Some(id)) {
                m.first_psn = m.first_psn.wrapping_add(restarted_by);
            }
        }
        for slot in 0..M {
            let Some(m) = self.msgs.get(slot).and_then(Option::as_ref) else { continue };
            if m.pdc != Some(id) {
                for_key |= m.pdc.is_none() && self.key(&m.desc) == key;
                continue;
            }
            let handle = MsgHandle { slot: slot as u16, generation: m.generation };
            let packets = m.segments.packets();
            let event = match failure {
                Some(f) => Some(Event::Failed(handle, f)),
                None if m.sent == packets && psn_after(base, m.first_psn.wrapping_add(packets - 1)) => {
                    Some(Event::Sent(handle))
                }
                None => None,
            };
            match event {
                // No room: the message stays and is settled on a later change.
                Some(ev) if self.events.push_back(ev).is_ok() => {
                    self.free_msg(slot);
                }
                _ => {
                    for_key = true;
                    started_unsent |= m.sent < packets;
                }
            }
        }
        let cfg = self.cfg.pdc;
        let Some(p) = self.initiators.get_mut(id) else { return };
        let wants_close = match state {
            // The target asked to close: once the message in progress is all sent.
            InitiatorState::Quiesce => !started_unsent,
            InitiatorState::Creating | InitiatorState::Established => self.cfg.close_when_idle && !for_key,
            InitiatorState::AckWait | InitiatorState::CloseAckWait | InitiatorState::Closed => false,
        };
        if wants_close {
            let _ = p.pdc.close(now, &cfg);
        }
        let settled = !self.msgs.iter().flatten().any(|m| m.pdc == Some(id));
        if p.pdc.state() == InitiatorState::Closed && settled && !p.pdc.has_pending() {
            self.initiators.remove(id);
        }
    }

    /// Reports a target PDC's events and frees it once closed, remembering it for late SYNs.
    fn after_target_change(&mut self, now: Instant, id: u16) {
        let Some(t) = self.targets.get_mut(id) else { return };
        let mut closed = false;
        while let Some(ev) = t.pdc.poll_event() {
            closed |= ev == TargetEvent::Closed;
        }
        if closed {
            let start_psn = t.pdc.start_psn();
            if let (Some(key), Some(_)) = (self.targets.key(id).copied(), self.targets.remove(id)) {
                if self.closed_targets.is_full() {
                    self.closed_targets.pop_front();
                }
                let until = now.saturating_add(self.cfg.pdc.new_pdc_time);
                let _ = self.closed_targets.push_back(ClosedTarget { key, start_psn, until });
            }
        }
    }

    /// Whether a SYN request with `start_psn` for `key` is a late copy of a packet of a target
    /// PDC closed at most `New_PDC_Time` ago (see the module doc).
    fn is_late_syn(&self, now: Instant, key: &TargetKey, start_psn: u32) -> bool {
        self.closed_targets.iter().any(|c| c.key == *key && c.start_psn == start_psn && now < c.until)
    }

    /// The next deadline of any PDC.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let i = self.initiators.iter().filter_map(|(_, p)| p.pdc.poll_timeout());
        let t = self.targets.iter().filter_map(|(_, p)| p.pdc.poll_timeout());
        let r = self.rudi.iter().map(|r| r.resend_at);
        i.chain(t).chain(r).min()
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let cfg = self.cfg.pdc;
        let due: heapless::Vec<u16, P> = self
            .initiators
            .iter()
            .filter(|(_, p)| p.pdc.poll_timeout().is_some_and(|t| t <= now))
            .map(|(id, _)| id)
            .collect();
        for id in due {
            if let Some(p) = self.initiators.get_mut(id) {
                p.pdc.handle_timeout(now, &cfg);
            }
            self.after_initiator_change(now, id);
        }
        let due: heapless::Vec<u16, P> = self
            .targets
            .iter()
            .filter(|(_, p)| p.pdc.poll_timeout().is_some_and(|t| t <= now))
            .map(|(id, _)| id)
            .collect();
        for id in due {
            if let Some(p) = self.targets.get_mut(id) {
                p.pdc.handle_timeout(now, &cfg);
            }
            self.after_target_change(now, id);
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        let ev = self.events.pop_front();
        if ev.is_some() {
            // Room again: settle what waited for it.
            let ids: heapless::Vec<u16, P> = self.initiators.iter().map(|(id, _)| id).collect();
            for id in ids {
                self.settle_later(id);
            }
            for slot in 0..M {
                let connectionless =
                    self.msgs.get(slot).and_then(Option::as_ref).is_some_and(|m| m.desc.service.pdc_mode().is_none());
                if connectionless {
                    self.complete_connectionless(slot);
                }
            }
        }
        ev
    }

    /// Messages that found the event queue full are settled once it has room (at the latest
    /// time a call gave).
    fn settle_later(&mut self, id: u16) {
        let any = self.msgs.iter().flatten().any(|m| m.pdc == Some(id));
        if any {
            self.after_initiator_change(self.now, id);
        }
    }
}

/// Emits a PDS header at the front of `out`.
fn emit(out: &mut [u8], h: &PdsHeader) -> Result<usize, EndpointError> {
    h.emit(out).map_err(|_| EndpointError::BufferTooShort)
}

/// The RC_NULL DEFAULT_RESPONSE for an ACK that names a request received before, whose own ids
/// this endpoint no longer keeps: the PDC's last RI generation and JobID, message id 0. Receivers
/// ignore RC_NULL but for acknowledging the PSN (the reference provider's initiator completes a
/// PSN named by an ACK only when the ACK carries an SES response).
const fn null_response((ri_generation, job_id): (u8, u32)) -> Response {
    Response {
        list: ResponseList::Expected,
        opcode: ResponseOpcode::DefaultResponse,
        return_code: ReturnCode::Null,
        message_id: 0,
        ri_generation,
        job_id,
        modified_length: 0,
    }
}

/// A NACK refusing request `r`.
const fn refusal(code: NackCode, r: &Request, spdcid: u16) -> Nack {
    Nack::for_pdc(code, r.psn, spdcid, r.spdcid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdc::ipv4;
    use crate::ses::{Opcode, RequestCommon, SesFlags, StandardTail};
    use std::collections::HashMap;
    use std::vec::Vec;

    type Ep = Endpoint<8, 32, 64>;

    fn config(addr: IpAddr) -> EndpointConfig {
        EndpointConfig {
            pdc: PdcConfig { max_rto_retx: 15, ..PdcConfig::default() },
            ..EndpointConfig::new(addr, 1024)
        }
    }

    fn desc(dst: IpAddr, service: Service, index: u64, len: u32) -> MessageDesc {
        MessageDesc {
            dst,
            service,
            tc: 0,
            header: StandardRequest {
                common: RequestCommon {
                    opcode: Opcode::Send,
                    flags: SesFlags::empty(),
                    ri_generation: 0,
                    job_id: 42,
                    pid_on_fep: 1,
                    resource_index: 2,
                },
                message_id: 0,
                buffer_offset: 0,
                initiator: 5,
                // The test's own message number, so the receiver can check the bytes.
                match_bits: index,
                tail: StandardTail::Som { header_data: 0 },
                request_length: 0,
                ext: None,
            },
            len,
        }
    }

    fn byte(index: u64, offset: u32) -> u8 {
        (index as u32).wrapping_mul(31).wrapping_add(offset).to_le_bytes()[0] ^ (offset >> 8) as u8
    }

    struct Wire {
        rng: u64,
        loss: u32, // per mille
        reorder: bool,
        flight: Vec<(usize, Vec<u8>)>,
    }

    impl Wire {
        fn next(&mut self) -> u32 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            (self.rng >> 32) as u32
        }
    }

    /// Runs two endpoints until both are idle; returns the messages B received in order, by
    /// sender index, and A's sent events.
    type Leftover = HashMap<(u16, u16), (u64, Vec<u8>)>;

    fn exchange(mode: Service, lens: &[u32], loss: u32, reorder: bool) -> (Vec<(u64, u32)>, usize, Ep, Ep, Leftover) {
        exchange_window(mode, lens, loss, reorder, 8)
    }

    /// [`exchange`] keeping up to `window` messages queued at A.
    fn exchange_window(
        mode: Service,
        lens: &[u32],
        loss: u32,
        reorder: bool,
        window: usize,
    ) -> (Vec<(u64, u32)>, usize, Ep, Ep, Leftover) {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let mut eps = [Ep::new(config(a_addr), 1), Ep::new(config(b_addr), 2)];
        let mut handles: HashMap<MsgHandle, u64> = HashMap::new();
        let mut next_msg = 0usize;
        let mut wire = Wire { rng: 0x9E37_79B9_7F4A_7C15, loss, reorder, flight: Vec::new() };
        let mut buffers: HashMap<(u16, u16), (u64, Vec<u8>)> = HashMap::new();
        let mut received = Vec::new();
        let mut sent = 0usize;
        let mut now = Instant::ZERO;
        let mut out = [0u8; 256];
        for _round in 0..200_000 {
            // Keep up to `window` messages queued at A.
            while next_msg < lens.len() && eps[0].messages_in_flight() < window {
                let h = eps[0].send(desc(b_addr, mode, next_msg as u64, lens[next_msg])).unwrap();
                handles.insert(h, next_msg as u64);
                next_msg += 1;
            }
            let mut moved = false;
            for (side, ep) in eps.iter_mut().enumerate() {
                while let Some(t) = ep.poll_transmit(now, &mut out).unwrap() {
                    let mut pkt = out[..t.header_len].to_vec();
                    if let Some(p) = t.payload {
                        let index = handles[&p.msg];
                        pkt.extend((0..u32::from(p.len)).map(|i| byte(index, p.offset + i)));
                    }
                    if wire.next() % 1000 >= wire.loss {
                        wire.flight.push((1 - side, pkt));
                    }
                    moved = true;
                }
            }
            if wire.reorder && wire.flight.len() > 1 {
                for i in (1..wire.flight.len()).rev() {
                    let j = wire.next() as usize % (i + 1);
                    wire.flight.swap(i, j);
                }
            }
            for (to, pkt) in core::mem::take(&mut wire.flight) {
                let from = eps[1 - to].config().addr;
                let placed = match eps[to].handle_packet(now, from, &pkt) {
                    Ok(p) => p,
                    // Dropped unanswered; the sender's resend comes back.
                    Err(EndpointError::EventsFull | EndpointError::ResponsesFull) => None,
                    Err(e) => panic!("a good packet was refused: {e:?}"),
                };
                if let Some(p) = placed {
                    let (index, buf) = buffers
                        .entry((p.pdc, p.message_id))
                        .or_insert_with(|| (p.header.match_bits, vec![0; p.header.request_length as usize]));
                    assert_eq!(*index, p.header.match_bits);
                    buf[p.offset as usize..p.offset as usize + p.payload.len()].copy_from_slice(p.payload);
                }
                moved = true;
            }
            for ep in eps.iter_mut() {
                while let Some(ev) = ep.poll_event() {
                    match ev {
                        Event::Sent(h) => {
                            assert!(handles.remove(&h).is_some());
                            sent += 1;
                        }
                        Event::Failed(h, f) => panic!("message {h:?} failed: {f:?}"),
                        Event::Response { .. } => panic!("no request was answered"),
                        Event::Truncated { .. } => panic!("no message was truncated"),
                        Event::Received { pdc, message_id, len, .. } => {
                            let (index, buf) = buffers.remove(&(pdc, message_id)).expect("placed");
                            assert_eq!(buf.len(), len as usize);
                            for (o, b) in buf.iter().enumerate() {
                                assert_eq!(*b, byte(index, o as u32), "message {index} byte {o}");
                            }
                            received.push((index, len));
                        }
                    }
                }
            }
            let idle = next_msg == lens.len() && eps.iter().all(|e| e.messages_in_flight() == 0);
            if idle && eps.iter().all(|e| e.initiator_pdcs() == 0 && e.target_pdcs() == 0) {
                break;
            }
            if !moved {
                match eps.iter().filter_map(Ep::poll_timeout).min() {
                    Some(t) => now = now.max(t),
                    None => now = now.saturating_add(linklayer::Duration::from_micros(10)),
                }
                for ep in eps.iter_mut() {
                    ep.handle_timeout(now);
                }
            } else {
                now = now.saturating_add(linklayer::Duration::from_micros(1));
            }
        }
        let [a, b] = eps;
        (received, sent, a, b, buffers)
    }

    fn lens(n: usize) -> Vec<u32> {
        (0..n).map(|i| [0u32, 1, 1023, 1024, 1025, 5000, 20_000][i % 7]).collect()
    }

    #[test]
    fn messages_arrive_whole_and_in_order_on_a_clean_wire() {
        let l = lens(40);
        let (received, sent, a, b, left) = exchange(Service::Rud, &l, 0, false);
        assert!(left.is_empty());
        assert_eq!(sent, l.len());
        let want: Vec<(u64, u32)> = l.iter().enumerate().map(|(i, &n)| (i as u64, n)).collect();
        assert_eq!(received, want);
        assert_eq!((a.initiator_pdcs(), a.target_pdcs(), b.initiator_pdcs(), b.target_pdcs()), (0, 0, 0, 0));
    }

    #[test]
    fn guaranteed_delivery_response_reaches_the_initiator_once() {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let (mut a, mut b) = (Ep::new(config(a_addr), 1), Ep::new(config(b_addr), 2));
        let mut out = [0u8; 256];
        let h = a.send(desc(b_addr, Service::Rud, 0, 100)).unwrap();
        let n = a.poll_transmit(Instant::ZERO, &mut out).unwrap().unwrap().header_len;
        let mut req = out[..n].to_vec();
        req.extend((0..100).map(|i| byte(0, i)));
        let pl = b.handle_packet(Instant::ZERO, a_addr, &req).unwrap().unwrap();
        b.respond(&pl, ReturnCode::NoMatch, 7).unwrap();
        assert!(matches!(b.respond(&pl, ReturnCode::Ok, 7), Err(EndpointError::Respond(_))), "one per request");
        let wrong_src = Placement { src: b_addr, ..pl };
        assert!(matches!(b.respond(&wrong_src, ReturnCode::Ok, 7), Err(EndpointError::Respond(_))));
        // The ACK carries the response, and is lost.
        let t = b.poll_transmit(Instant::ZERO, &mut out).unwrap().unwrap();
        let (PdsHeader::Ack(ack), rest) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("an ACK") };
        assert_eq!(ack.next_header, NextHeader::Rsp);
        let Ok((Some(SesHeader::Response(rsp)), _)) = SesHeader::parse(NextHeader::Rsp, rest) else { panic!() };
        assert_eq!(
            (rsp.opcode, rsp.return_code, rsp.modified_length),
            (ResponseOpcode::Response, ReturnCode::NoMatch, 7)
        );
        assert_eq!(b.poll_transmit(Instant::ZERO, &mut out).unwrap(), None);
        // The RTO resends the request; its duplicate draws the response again.
        let later = a.poll_timeout().unwrap();
        a.handle_timeout(later);
        let resend = a.poll_transmit(later, &mut out).unwrap().unwrap();
        let mut req = out[..resend.header_len].to_vec();
        req.extend((0..100).map(|i| byte(0, i)));
        assert!(b.handle_packet(later, a_addr, &req).unwrap().is_none(), "a duplicate is not placed again");
        let t = b.poll_transmit(later, &mut out).unwrap().unwrap();
        let ack = out[..t.header_len].to_vec();
        a.handle_packet(later, b_addr, &ack).unwrap();
        let psn = pl.psn;
        assert_eq!(a.poll_event(), Some(Event::Response { msg: h, psn, response: rsp }));
        assert_eq!(a.poll_event(), Some(Event::Sent(h)));
        // A copy of that ACK reports nothing more.
        a.handle_packet(later, b_addr, &ack).unwrap();
        assert_eq!(a.poll_event(), None);
    }

    #[test]
    fn no_request_is_delivered_once_no_response_could_be_held() {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let (mut a, mut b) = (Ep::new(config(a_addr), 1), Ep::new(config(b_addr), 2));
        let mut out = [0u8; 256];
        for i in 0..5 {
            a.send(desc(b_addr, Service::Rud, i, 10)).unwrap();
        }
        for i in 0..5u64 {
            let n = a.poll_transmit(Instant::ZERO, &mut out).unwrap().unwrap().header_len;
            let mut req = out[..n].to_vec();
            req.extend((0..10).map(|k| byte(i, k)));
            match b.handle_packet(Instant::ZERO, a_addr, &req).unwrap() {
                // Four slots: every request but the fifth is delivered and answered.
                Some(pl) => b.respond(&pl, ReturnCode::Ok, 10).unwrap(),
                None => assert_eq!(i, 4, "request {i} refused with a slot free"),
            }
        }
        let t = b.poll_transmit(Instant::ZERO, &mut out).unwrap().unwrap();
        let Ok((PdsHeader::Nack(n), _)) = PdsHeader::parse(&out[..t.header_len]) else { panic!("a NACK first") };
        assert_eq!(n.code, NackCode::NoGtdDelAvail);
    }

    #[test]
    fn rud_messages_complete_in_order_despite_reordering_and_loss() {
        let l = lens(60);
        let (received, sent, _, _, _) = exchange(Service::Rud, &l, 100, true);
        assert_eq!(sent, l.len());
        let want: Vec<(u64, u32)> = l.iter().enumerate().map(|(i, &n)| (i as u64, n)).collect();
        assert_eq!(received, want);
    }

    /// More messages in flight than the target tracks on one PDC, under loss: the initiator keeps
    /// no more than `messages_per_pdc` in progress, so none is refused into failure.
    #[test]
    fn more_messages_in_flight_than_the_target_tracks() {
        let l: Vec<u32> = (0..200).map(|i| [1u32, 100, 1500][i % 3]).collect();
        let (received, sent, ..) = exchange_window(Service::Rud, &l, 30, true, 32);
        assert_eq!(sent, l.len());
        let want: Vec<(u64, u32)> = l.iter().enumerate().map(|(i, &n)| (i as u64, n)).collect();
        assert_eq!(received, want);
    }

    #[test]
    fn rod_messages_survive_loss() {
        let l = lens(30);
        let (received, sent, _, _, _) = exchange(Service::Rod, &l, 50, false);
        assert_eq!(sent, l.len());
        assert_eq!(received.len(), l.len());
        assert!(received.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn rudi_messages_are_placed_whole_despite_loss_and_reordering() {
        let l = lens(40);
        let (received, sent, a, b, left) = exchange(Service::Rudi, &l, 100, true);
        assert_eq!(sent, l.len());
        // No PDC, no completion at the target: the placements are the delivery.
        assert!(received.is_empty());
        assert_eq!((a.initiator_pdcs(), b.target_pdcs()), (0, 0));
        assert_eq!(left.len(), l.len());
        for (index, buf) in left.values() {
            assert_eq!(buf.len() as u32, l[*index as usize]);
            for (o, b) in buf.iter().enumerate() {
                assert_eq!(*b, byte(*index, o as u32), "RUDI message {index} byte {o}");
            }
        }
    }

    #[test]
    fn uud_datagrams_are_best_effort() {
        let l: Vec<u32> = (0..50).map(|i| i * 20).collect();
        let (received, sent, ..) = exchange(Service::Uud, &l, 0, false);
        assert_eq!(sent, l.len());
        assert_eq!(received.len(), l.len());
        let (received, sent, ..) = exchange(Service::Uud, &l, 200, false);
        assert_eq!(sent, l.len());
        assert!(received.len() < l.len() && !received.is_empty());
        let mut ep = Ep::new(config(ipv4([10, 0, 0, 1])), 1);
        assert_eq!(ep.send(desc(ipv4([10, 0, 0, 2]), Service::Uud, 0, 1025)), Err(EndpointError::UudTooLong));
    }

    #[test]
    fn stale_duplicate_gets_the_default_response() {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let keep = |addr| EndpointConfig { close_when_idle: false, ..config(addr) };
        let (mut a, mut b) = (Ep::new(keep(a_addr), 1), Ep::new(keep(b_addr), 2));
        let now = Instant::ZERO;
        let mut out = [0u8; 256];
        a.send(desc(b_addr, Service::Rud, 7, 100)).unwrap();
        let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
        let mut pkt = out[..t.header_len].to_vec();
        pkt.extend([0u8; 100]);
        assert!(b.handle_packet(now, a_addr, &pkt).unwrap().is_some());
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let (PdsHeader::Ack(ack), rest) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("not an ACK") };
        // Delivered: the ACK answers it with DEFAULT_RESPONSE, RC_OK, the whole message.
        let (Some(SesHeader::Response(rsp)), _) = SesHeader::parse(ack.next_header, rest).unwrap() else {
            panic!("no SES response")
        };
        assert_eq!(
            (rsp.opcode, rsp.return_code, rsp.modified_length, rsp.job_id),
            (ResponseOpcode::DefaultResponse, ReturnCode::Ok, 100, 42)
        );
        // The same packet again: cumulatively acknowledged, so stale; not placed again.
        assert!(b.handle_packet(now, a_addr, &pkt).unwrap().is_none());
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let (PdsHeader::Ack(ack), rest) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("not an ACK") };
        assert_eq!(ack.next_header, NextHeader::Rsp);
        let (Some(SesHeader::Response(rsp)), _) = SesHeader::parse(NextHeader::Rsp, rest).unwrap() else {
            panic!("no SES response")
        };
        assert_eq!(
            (rsp.opcode, rsp.return_code, rsp.message_id, rsp.job_id),
            (ResponseOpcode::DefaultResponse, ReturnCode::Null, 0, 42)
        );
    }

    /// A duplicate in the current window (a gap below it, so not cumulatively acknowledged) is
    /// answered by an ACK carrying the default response too (UE 1.0 §3.5.20.1); a CE-marked
    /// packet's ACK carries the M flag.
    #[test]
    fn in_window_duplicate_gets_the_default_response_and_ce_sets_m() {
        use crate::pds::AckFlags;
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let keep = |addr| EndpointConfig { close_when_idle: false, ..config(addr) };
        let (mut a, mut b) = (Ep::new(keep(a_addr), 1), Ep::new(keep(b_addr), 2));
        let now = Instant::ZERO;
        let mut out = [0u8; 256];
        let mut pkts = Vec::new();
        for i in 0..2 {
            a.send(desc(b_addr, Service::Rud, i, 10)).unwrap();
            let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
            let mut pkt = out[..t.header_len].to_vec();
            pkt.extend([0u8; 10]);
            pkts.push(pkt);
        }
        // The second arrives first, CE-marked: its ACK says so.
        assert!(b.handle_ce_packet(now, a_addr, &pkts[1]).unwrap().is_some());
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let (PdsHeader::Ack(ack), _) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("an ACK") };
        assert!(ack.flags.contains(AckFlags::M));
        assert_eq!(ack.next_header, NextHeader::Rsp);
        // Its copy: received, not cumulatively acknowledged (the first is missing).
        assert!(b.handle_packet(now, a_addr, &pkts[1]).unwrap().is_none());
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let (PdsHeader::Ack(ack), rest) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("an ACK") };
        assert!(!ack.flags.contains(AckFlags::M));
        assert_eq!(ack.next_header, NextHeader::Rsp);
        let (Some(SesHeader::Response(rsp)), _) = SesHeader::parse(NextHeader::Rsp, rest).unwrap() else {
            panic!("no SES response")
        };
        assert_eq!((rsp.opcode, rsp.return_code), (ResponseOpcode::DefaultResponse, ReturnCode::Null));
    }

    /// Every ACK that names a delivered request answers it with DEFAULT_RESPONSE, RC_OK, its ids
    /// echoed and `modified_length` = `request_length` (coalesced ACKs name the newest packet).
    #[test]
    fn every_ack_answers_the_request_it_names() {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let (mut a, mut b) = (Ep::new(config(a_addr), 1), Ep::new(config(b_addr), 2));
        let now = Instant::ZERO;
        let mut out = [0u8; 256];
        let h = a.send(desc(b_addr, Service::Rud, 3, 2500)).unwrap();
        while let Some(t) = a.poll_transmit(now, &mut out).unwrap() {
            let mut pkt = out[..t.header_len].to_vec();
            pkt.extend((0..t.payload.map_or(0, |p| p.len)).map(|_| 0u8));
            b.handle_packet(now, a_addr, &pkt).unwrap();
        }
        let mut acks = 0;
        while let Some(t) = b.poll_transmit(now, &mut out).unwrap() {
            let bytes = out[..t.header_len].to_vec();
            let (PdsHeader::Ack(ack), rest) = PdsHeader::parse(&bytes).unwrap() else { panic!("an ACK") };
            let (Some(SesHeader::Response(rsp)), _) = SesHeader::parse(ack.next_header, rest).unwrap() else {
                panic!("ACK of PSN {} without a response", ack.ack_psn())
            };
            assert_eq!(
                (rsp.opcode, rsp.return_code, rsp.message_id, rsp.job_id, rsp.modified_length),
                (ResponseOpcode::DefaultResponse, ReturnCode::Ok, 0, 42, 2500)
            );
            a.handle_packet(now, b_addr, &bytes).unwrap();
            acks += 1;
        }
        assert!(acks >= 1);
        assert_eq!(a.poll_event(), Some(Event::Sent(h)));
    }

    /// An ACK that answers a probe (ACK_REQ) for an older request names it and carries an RC_NULL
    /// DEFAULT_RESPONSE, so a peer that completes a named PSN only with an SES response (the
    /// reference provider) completes it; the CLOSE's ACK stays bare.
    #[test]
    fn an_ack_naming_an_older_request_carries_a_response() {
        use crate::pds::{Control, ControlFlags, ControlType};
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let keep = |addr| EndpointConfig { close_when_idle: false, ..config(addr) };
        let (mut a, mut b) = (Ep::new(keep(a_addr), 1), Ep::new(keep(b_addr), 2));
        let now = Instant::ZERO;
        let mut out = [0u8; 256];
        let mut psns = Vec::new();
        for i in 0..2 {
            a.send(desc(b_addr, Service::Rud, i, 10)).unwrap();
            let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
            let (PdsHeader::Request(r), _) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!() };
            psns.push((r.psn, r.spdcid));
            let mut pkt = out[..t.header_len].to_vec();
            pkt.extend([0u8; 10]);
            b.handle_packet(now, a_addr, &pkt).unwrap();
        }
        let mut tpdc = 0;
        while let Some(t) = b.poll_transmit(now, &mut out).unwrap() {
            let (PdsHeader::Ack(ack), _) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!() };
            tpdc = ack.spdcid;
        }
        let (first, ipdc) = psns[0];
        let probe = Control {
            ctl_type: ControlType::AckReq,
            flags: ControlFlags::empty(),
            probe_opaque: 0,
            psn: first,
            spdcid: ipdc,
            dest: PdcDest::Established { dpdcid: tpdc },
            payload: 0,
        };
        let n = probe.emit(&mut out).unwrap();
        b.handle_packet(now, a_addr, &out[..n]).unwrap();
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let (PdsHeader::Ack(ack), rest) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("an ACK") };
        assert_eq!(ack.ack_psn(), first);
        let (Some(SesHeader::Response(rsp)), _) = SesHeader::parse(ack.next_header, rest).unwrap() else {
            panic!("the probe's ACK carries no response")
        };
        assert_eq!((rsp.opcode, rsp.return_code, rsp.job_id), (ResponseOpcode::DefaultResponse, ReturnCode::Null, 42));
    }

    /// The initiator accepts a bare ACK, and reads a DEFAULT_RESPONSE as the reference provider's
    /// initiator does: RC_NULL and a whole-message RC_OK only acknowledge, a short
    /// `modified_length` is reported truncated, another code is reported as a response.
    #[test]
    fn the_initiator_reads_default_responses() {
        use crate::pds::Ack;
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let mut out = [0u8; 256];
        let now = Instant::ZERO;
        let cases = [
            (None, None),
            (Some((ReturnCode::Null, 0)), None),
            (Some((ReturnCode::Ok, 100)), None),
            (Some((ReturnCode::Ok, 0)), None),
            (Some((ReturnCode::Ok, 60)), Some("truncated")),
            (Some((ReturnCode::NoMatch, 0)), Some("response")),
        ];
        for (answer, report) in cases {
            let mut a = Ep::new(config(a_addr), 1);
            let h = a.send(desc(b_addr, Service::Rud, 0, 100)).unwrap();
            let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
            let (PdsHeader::Request(r), _) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!() };
            let ack = Ack {
                next_header: if answer.is_some() { NextHeader::Rsp } else { NextHeader::None },
                flags: crate::pds::AckFlags::empty(),
                request: crate::pds::AckRequest::None,
                ack_psn_offset: 0,
                cack_psn: r.psn,
                spdcid: 19,
                dpdcid: r.spdcid,
                ext: crate::pds::AckExtension::None,
            };
            let mut n = ack.emit(&mut out).unwrap();
            if let Some((code, len)) = answer {
                let mut rsp = Response::default_for(&desc(b_addr, Service::Rud, 0, 100).header, code);
                rsp.modified_length = len;
                n += SesHeader::Response(rsp).emit(&mut out[n..]).unwrap();
            }
            a.handle_packet(now, b_addr, &out[..n]).unwrap();
            match (report, a.poll_event()) {
                (None, Some(Event::Sent(s))) => assert_eq!(s, h),
                (Some("truncated"), Some(Event::Truncated { msg, modified_length: 60, .. })) => assert_eq!(msg, h),
                (Some("response"), Some(Event::Response { msg, response, .. })) => {
                    assert_eq!((msg, response.return_code), (h, ReturnCode::NoMatch));
                }
                (want, got) => panic!("{answer:?}: wanted {want:?}, got {got:?}"),
            }
            if report.is_some() {
                assert_eq!(a.poll_event(), Some(Event::Sent(h)));
            }
        }
    }

    /// Interop: ACKs in the reference provider's form — plain ACKs (no SACK) naming a PSN above
    /// CACK by ACK_PSN, its own flag 0x40 set, each carrying a DEFAULT_RESPONSE — drive our
    /// initiator: each named PSN is acknowledged, and messages complete in order.
    #[test]
    fn reference_provider_acks_complete_messages() {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let mut a = Ep::new(config(a_addr), 1);
        let now = Instant::ZERO;
        let mut out = [0u8; 256];
        let hs =
            [a.send(desc(b_addr, Service::Rud, 0, 10)).unwrap(), a.send(desc(b_addr, Service::Rud, 1, 10)).unwrap()];
        let mut reqs = Vec::new();
        while let Some(t) = a.poll_transmit(now, &mut out).unwrap() {
            let (PdsHeader::Request(r), rest) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!() };
            let Ok((Some(SesHeader::Standard(ses)), _)) = SesHeader::parse(NextHeader::ReqStd, rest) else { panic!() };
            reqs.push((r, ses));
        }
        assert_eq!(reqs.len(), 2);
        let ref_ack = |cack: u32, named: &(Request, StandardRequest), out: &mut [u8; 256]| {
            let a = crate::pds::Ack {
                next_header: NextHeader::Rsp,
                flags: crate::pds::AckFlags::empty(),
                request: crate::pds::AckRequest::None,
                ack_psn_offset: named.0.psn.wrapping_sub(cack) as i16,
                cack_psn: cack,
                spdcid: 19,
                dpdcid: named.0.spdcid,
                ext: crate::pds::AckExtension::None,
            };
            let mut n = a.emit(out).unwrap();
            out[1] |= 0x40; // the reference provider's own ACK flag
            n += SesHeader::Response(Response::default_for(&named.1, ReturnCode::Ok)).emit(&mut out[n..]).unwrap();
            n
        };
        // The second packet is named first, CACK still before the first: acknowledged, but the
        // second message waits for the first.
        let before_first = reqs[0].0.psn.wrapping_sub(1);
        let n = ref_ack(before_first, &reqs[1], &mut out);
        a.handle_packet(now, b_addr, &out[..n]).unwrap();
        assert_eq!(a.poll_event(), None);
        // Then the first, by name too.
        let n = ref_ack(before_first, &reqs[0], &mut out);
        a.handle_packet(now, b_addr, &out[..n]).unwrap();
        assert_eq!([a.poll_event(), a.poll_event()], hs.map(|h| Some(Event::Sent(h))));
    }

    /// A copy of a PDC's first packet arriving after the PDC closed opens no new PDC and is not
    /// delivered again; a SYN with the same key and another start PSN (a new PDC) is let in.
    #[test]
    fn late_syn_after_close_is_not_delivered_again() {
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let (mut a, mut b) = (Ep::new(config(a_addr), 1), Ep::new(config(b_addr), 2));
        let mut out = [0u8; 256];
        let now = Instant::ZERO;
        a.send(desc(b_addr, Service::Rud, 0, 100)).unwrap();
        let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
        let mut syn = out[..t.header_len].to_vec();
        syn.extend([0u8; 100]);
        assert!(b.handle_packet(now, a_addr, &syn).unwrap().is_some());
        // ACK, CLOSE, close ACK: both ends close.
        for _ in 0..8 {
            while let Some(t) = b.poll_transmit(now, &mut out).unwrap() {
                a.handle_packet(now, b_addr, &out[..t.header_len]).unwrap();
            }
            while let Some(t) = a.poll_transmit(now, &mut out).unwrap() {
                b.handle_packet(now, a_addr, &out[..t.header_len]).unwrap();
            }
        }
        assert_eq!((a.initiator_pdcs(), b.target_pdcs()), (0, 0));
        assert!(matches!(b.poll_event(), Some(Event::Received { .. })));
        // The copy, at once and just before New_PDC_Time has passed: dropped unanswered.
        let until = now.saturating_add(config(b_addr).pdc.new_pdc_time);
        for at in [now, Instant::from_nanos(until.as_nanos() - 1)] {
            assert!(b.handle_packet(at, a_addr, &syn).unwrap().is_none());
            assert_eq!((b.target_pdcs(), b.poll_event(), b.poll_transmit(at, &mut out).unwrap()), (0, None, None));
        }
        // A SYN of the same initiator PDC with another start PSN opens a PDC.
        let (PdsHeader::Request(mut r), _) = PdsHeader::parse(&syn).unwrap() else { panic!("a request") };
        r.psn = r.psn.wrapping_add(1000);
        r.emit(&mut syn).unwrap();
        assert!(b.handle_packet(now, a_addr, &syn).unwrap().is_some());
        assert_eq!(b.target_pdcs(), 1);
    }

    /// Packets that name an established PDC but come from another address change nothing:
    /// requests and control packets draw PDC_HDR_MISMATCH, ACKs and NACKs are dropped; each is
    /// counted.
    #[test]
    fn packets_from_the_wrong_source_change_nothing() {
        let (a_addr, b_addr, c_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]), ipv4([10, 0, 0, 3]));
        let keep = |addr| EndpointConfig { close_when_idle: false, ..config(addr) };
        let (mut a, mut b) = (Ep::new(keep(a_addr), 1), Ep::new(keep(b_addr), 2));
        let now = Instant::ZERO;
        let mut out = [0u8; 256];
        // Establish with one message, then start a second one whose ACK is still owed.
        a.send(desc(b_addr, Service::Rud, 0, 10)).unwrap();
        let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
        let mut first = out[..t.header_len].to_vec();
        first.extend([0u8; 10]);
        assert!(b.handle_packet(now, a_addr, &first).unwrap().is_some());
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let ack = out[..t.header_len].to_vec();
        a.handle_packet(now, b_addr, &ack).unwrap();
        let h = a.send(desc(b_addr, Service::Rud, 1, 10)).unwrap();
        let t = a.poll_transmit(now, &mut out).unwrap().unwrap();
        let mut second = out[..t.header_len].to_vec();
        second.extend([0u8; 10]);
        let (PdsHeader::Request(r), _) = PdsHeader::parse(&second).unwrap() else { panic!("a request") };
        assert!(matches!(r.dest, PdcDest::Established { .. }));
        while a.poll_event().is_some() {}

        // The established request from C: NACKed PDC_HDR_MISMATCH to C, not placed.
        assert!(b.handle_packet(now, c_addr, &second).unwrap().is_none());
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        assert_eq!(t.dst, c_addr);
        let (PdsHeader::Nack(n), _) = PdsHeader::parse(&out[..t.header_len]).unwrap() else { panic!("a NACK") };
        assert_eq!(n.code, NackCode::PdcHdrMismatch);
        assert_eq!(b.poll_event(), Some(Event::Received { src: a_addr, pdc: 1, message_id: 0, len: 10 }));
        assert_eq!(b.poll_event(), None);
        // C's copy of B's ACK for it, naming A's PDC: dropped, the message is not done.
        b.handle_packet(now, a_addr, &second).unwrap().unwrap();
        let t = b.poll_transmit(now, &mut out).unwrap().unwrap();
        let ack2 = out[..t.header_len].to_vec();
        a.handle_packet(now, c_addr, &ack2).unwrap();
        assert_eq!(a.poll_event(), None);
        // A NACK from C that would close A's PDC: dropped too.
        let (PdsHeader::Ack(ack_hdr), _) = PdsHeader::parse(&ack2).unwrap() else { panic!("an ACK") };
        let closing = Nack::for_pdc(NackCode::PdcHdrMismatch, r.psn, ack_hdr.spdcid, ack_hdr.dpdcid);
        let n = closing.emit(&mut out).unwrap();
        a.handle_packet(now, c_addr, &out[..n]).unwrap();
        assert_eq!((a.poll_event(), a.initiator_pdcs()), (None, 1));
        assert_eq!(a.stats().source_mismatches, 2);
        assert_eq!(b.stats().source_mismatches, 1);
        // From the right source the ACK completes the message.
        a.handle_packet(now, b_addr, &ack2).unwrap();
        assert_eq!(a.poll_event(), Some(Event::Sent(h)));
    }

    /// A secure target moves the PDC's start PSN (NACK NEW_START_PSN, 0-RTT and 1-RTT alike):
    /// the messages' PSNs move with the window, and no message is reported sent before its new
    /// PSNs are acknowledged.
    #[test]
    fn new_start_psn_moves_the_messages_with_the_window() {
        use crate::pdc::{Delivery, StartPolicy, Target, TargetTx};
        let policies: [fn(u32) -> StartPolicy; 2] = [
            |start| StartPolicy::Expected0Rtt { expected_psn: start },
            |start| StartPolicy::Random1Rtt { start_psn: start },
        ];
        for policy in policies {
            let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
            let mut a = Ep::new(config(a_addr), 1);
            let cfg = config(b_addr).pdc;
            let now = Instant::ZERO;
            let mut out = [0u8; 256];
            let sent = [
                a.send(desc(b_addr, Service::Rud, 0, 2000)).unwrap(),
                a.send(desc(b_addr, Service::Rud, 1, 10)).unwrap(),
            ];
            let requests = |a: &mut Ep, out: &mut [u8; 256]| {
                let mut got = Vec::new();
                while let Some(t) = a.poll_transmit(now, out).unwrap() {
                    let (PdsHeader::Request(r), _) = PdsHeader::parse(&out[..t.header_len]).unwrap() else {
                        panic!("a request")
                    };
                    got.push((r, t.payload.map_or(0, |p| u32::from(p.len))));
                }
                got
            };
            let first = requests(&mut a, &mut out);
            assert_eq!(first.len(), 3);
            let new_start = first[0].0.psn.wrapping_add(1 << 30);
            let mut tg = Target::<2>::new(now, &cfg, 19, &first[0].0, policy(new_start), 7).unwrap();
            let n = tg.handle_request(now, &cfg, &first[0].0, first[0].1, false).unwrap().nack.unwrap();
            assert_eq!((n.code, n.payload), (NackCode::NewStartPsn, new_start));
            let len = n.emit(&mut out).unwrap();
            a.handle_packet(now, b_addr, &out[..len]).unwrap();
            assert_eq!(a.poll_event(), None, "nothing was delivered yet");
            // Every packet again, at the new PSNs, delivered once each.
            let again = requests(&mut a, &mut out);
            let psns: Vec<u32> = again.iter().map(|(r, _)| r.psn).collect();
            assert_eq!(psns, [0, 1, 2].map(|k| new_start.wrapping_add(k)));
            for (r, len) in &again {
                assert_eq!(r.start_psn(), Some(new_start));
                assert_eq!(tg.handle_request(now, &cfg, r, *len, false).unwrap().delivery, Delivery::New);
            }
            while let Some(tx) = tg.poll_transmit(now) {
                let TargetTx::Ack(ack) = tx else { panic!("an ACK") };
                let len = ack.emit(&mut out).unwrap();
                a.handle_packet(now, b_addr, &out[..len]).unwrap();
            }
            assert_eq!([a.poll_event(), a.poll_event()], sent.map(|h| Some(Event::Sent(h))));
        }
    }

    /// A peer whose message ids come from one counter shared by its PDCs (the reference
    /// provider's pool): on each PDC they skip, wrap past 65535 and are reused. With packets
    /// reordered, duplicated and late, every message is received exactly once, in send order per
    /// PDC.
    #[test]
    fn message_ids_from_any_counter() {
        use crate::msg::Segmenter;
        let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let mut b = Ep::new(config(b_addr), 2);
        let cfg = config(a_addr).pdc;
        let now = Instant::ZERO;
        let mut pdcs = [
            Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 1000),
            Initiator::<2>::new(&cfg, DeliveryMode::Rud, 8, 5000),
        ];
        let ids = [7u16, 9, 12, 3, 65534, 65535, 0, 7, 2, 9];
        let mut sent: [Vec<u16>; 2] = [Vec::new(), Vec::new()];
        let mut packets = Vec::new();
        for (k, &id) in ids.iter().enumerate() {
            let which = k % 2;
            let len = [0u32, 10, 1024, 2500, 3000][k % 5];
            let segments = Segmenter::new(len, 1024).unwrap();
            let mut template = desc(b_addr, Service::Rud, k as u64, len).header;
            template.message_id = id;
            for seg in segments.segments() {
                let stamp = pdcs[which].send(now, &cfg, seg.eom).unwrap();
                let mut pkt = vec![0u8; 256];
                let n = PdsHeader::Request(stamp.request(NextHeader::ReqStd, None)).emit(&mut pkt).unwrap();
                let m = SesHeader::Standard(seg.standard_header(&template, len)).emit(&mut pkt[n..]).unwrap();
                pkt.truncate(n + m);
                pkt.extend((0..u32::from(seg.len)).map(|i| byte(k as u64, seg.offset + i)));
                packets.push(pkt);
            }
            sent[which].push(id);
        }
        // Reordered; one packet in four duplicated, one in five held back to the end.
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for i in (1..packets.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            packets.swap(i, j);
        }
        let mut order = Vec::new();
        let mut late = Vec::new();
        for p in packets {
            match next() % 20 {
                0..=4 => order.extend([p.clone(), p]),
                5..=8 => late.push(p),
                _ => order.push(p),
            }
        }
        order.extend(late);
        // Received message ids per target PDC of B.
        let mut received: HashMap<u16, Vec<u16>> = HashMap::new();
        let mut out = [0u8; 256];
        for p in order {
            b.handle_packet(now, a_addr, &p).unwrap();
            while b.poll_transmit(now, &mut out).unwrap().is_some() {}
            while let Some(ev) = b.poll_event() {
                let Event::Received { pdc, message_id, .. } = ev else { panic!("{ev:?}") };
                received.entry(pdc).or_default().push(message_id);
            }
        }
        let mut got: Vec<Vec<u16>> = received.into_values().collect();
        got.sort();
        let mut want = sent.to_vec();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn refusals() {
        let mut ep = Ep::new(config(ipv4([10, 0, 0, 1])), 1);
        let bad_mtu = EndpointConfig { mtu: 0, ..config(ipv4([10, 0, 0, 1])) };
        let mut e2 = Ep::new(bad_mtu, 1);
        assert_eq!(
            e2.send(desc(ipv4([10, 0, 0, 2]), Service::Rud, 0, 10)),
            Err(EndpointError::Segment(SegmentError::BadMtu { mtu: 0 }))
        );
        for i in 0..32 {
            ep.send(desc(ipv4([10, 0, 0, 2]), Service::Rud, i, 10)).unwrap();
        }
        assert_eq!(ep.send(desc(ipv4([10, 0, 0, 2]), Service::Rud, 99, 10)), Err(EndpointError::TooManyMessages));
        assert!(matches!(
            ep.handle_packet(Instant::ZERO, ipv4([10, 0, 0, 2]), &[0xFF; 3]),
            Err(EndpointError::Malformed(_))
        ));
        let mut tiny = [0u8; 8];
        assert_eq!(ep.poll_transmit(Instant::ZERO, &mut tiny), Err(EndpointError::BufferTooShort));
    }
}
