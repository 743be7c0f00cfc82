//! One fabric endpoint: messages in, packets out, and back (UE 1.0
//! §3.5.8.1 for the PDC keys, §3.5.8.2–§3.5.8.3 and §3.5.9 for PDC life, §3.4 for the standard
//! request).
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
//!   complete, in send order per PDC (while the peer keeps at most the target's `W` messages in
//!   progress on a PDC and the `O` entries its target PDCs share have room; see [`Endpoint`]).
//!
//! *Project-defined* choices, each here only:
//!
//! * Messages to one PDC key (mode, JobID, addresses, TC) go out one after another: a message's
//!   packets take consecutive PSNs, so a resend finds its message and packet index from the PSN.
//!   Our message ids count from 0 on each PDC; received messages are ordered by the PSN of their
//!   first packet, so a peer's ids may come from any counter ([`order`](super::order)).
//! * The PDCs with a new packet to send take turns, a packet each (round robin), so one PDC's
//!   backlog does not hold the others back; RUDI, UUD and read data go oldest first, whenever
//!   they are older than the message whose turn it is. While more initiator PDCs have something
//!   to send than there are request directions (`S`), they take turns for those too, a message
//!   per turn, oldest waiting first (see [`Endpoint`]).
//! * A sent message completes when every PSN up to its last is acknowledged, and the messages of
//!   one PDC key are reported `Sent` in the order they were sent; a READ only once its data
//!   arrived too, so messages sent after it may be reported before it.
//! * With [`EndpointConfig::close_when_idle`], a PDC closes as soon as it has no message left to
//!   send or acknowledge (its CLOSE waiting its turn for a request direction while all `S` are in
//!   use); a later message opens a new PDC. Without it, PDCs stay open until the table of `P` is
//!   full and a message's key has none: then the PDC idle longest closes to make room, one at a
//!   time, the next once the last one's CLOSE has timed out (project-defined; UE 1.0 §3.5.8.3
//!   leaves when to close to the endpoint).
//! * A PDC the target asked to close (CLOSE_REQ) finishes the message in progress; the messages
//!   after it wait for that PDC to close and then open a new one.
//! * With the target table of `P` full, the SYN of a new PDC is NACKed NO_PDC_AVAIL (its
//!   initiator retries after `NACK_Retx_Time`), and the target PDC idle longest (established,
//!   nothing in progress or held) is asked to close with CLOSE_REQ to make room
//!   ([`EndpointStats::idle_targets_closed`]), one at a time: the next once the last one's
//!   initiator has let a `Close_REQ_Time` pass without answering (project-defined, as the
//!   initiator table's eviction; otherwise a PDC its initiator kept open, or forgot after a
//!   failure, holds its slot until the idle timeout). The CLOSE_REQ takes one of the `D` target
//!   return directions; while the last PDC asked still waits, the next eviction leaves the last
//!   free one to read data. A silent initiator's PDC frees its slot only when it closes in
//!   error, after `Max_RTO_Retx_Cnt` + 1 periods of `Close_REQ_Time`: an initiator whose
//!   NO_PDC_AVAIL retries run out first (five by default, one per `NACK_Retx_Time`) fails its
//!   message.
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
//! * Initiator PDC ids are 1 to 0x7FFF and target PDC ids 0x8000 to 0xFFFF, so the DPDCID of an
//!   ACK, NACK or control packet (which travel both ways on a PDC) names one PDC of this endpoint
//!   by itself; the ranges are this crate's choice, a peer sees only ids.
//! * Every packet that names an established PDC must come from that PDC's peer address; one that
//!   does not changes nothing and is counted in [`EndpointStats::source_mismatches`].
//! * **Guaranteed-delivery responses** (UE 1.0 §3.4.3.3: any response but DEFAULT_RESPONSE and
//!   NO_RESPONSE is kept until cleared): the caller answers a placed request with
//!   [`Endpoint::respond`]; the target PDC holds the RESPONSE (`R` per PDC, by default
//!   [`HELD_RESPONSES`]) and the request's ACK carries it. Since
//!   any request may need one, a request is delivered only while a response could be held for it,
//!   else NACKed NO_GTD_DEL_AVAIL. The initiator reports it once as [`Event::Response`], before its
//!   message completes.
//! * **Error responses** (uet-ref-prov's initiator, `uet_pds_to_ses_rx_rsp`): a response whose
//!   return code is neither OK nor NULL fails its message ([`Failure::Refused`], once every
//!   packet that went out is acknowledged), and what it had not sent goes as a MSG_ERROR
//!   instead (below); a RUDI message fails when the RUDI response arrives. uet-ref-prov's
//!   initiator does the same for a DEFAULT_RESPONSE with an error code, but answered NO_MATCH,
//!   DISABLED_GEN or BAD_GENERATION in a RESPONSE it resends the whole message (after 50 to
//!   100 ms, doubling, five times at most, for the first two; at once, with the target's
//!   generation, for the last); this endpoint leaves resending to its caller, which has the
//!   response (*project-defined*). A DEFAULT_RESPONSE with RC_OK and a short `modified_length`
//!   is reported as [`Event::Truncated`] and the message completes `Sent`, where uet-ref-prov's
//!   initiator fails it (*project-defined*).
//! * **Cancelling** (SES MSG_ERROR, opcode 0x0F; uet-ref-prov's `uet_tx_cancel` and
//!   `uet_rx_cancel_pkt`): an initiator that gives up a message it has not finished sending
//!   (refused, above, or by its caller, [`Endpoint::cancel`]) sends a MSG_ERROR in place of the
//!   rest, and a target completes the message once the bytes sent before it arrived
//!   ([`Placement::read`]; [`MessageOrder::on_cancel`](super::order::MessageOrder::on_cancel)).
//! * **READs** (UE 1.0 §3.5.20.1; the reference provider's `uet_tx_msg`, `uet_rx_rd_req_pkt`):
//!   a message whose opcode is READ ([`Opcode::Read`]) sends one request per `mtu` bytes of the
//!   read (one for an empty READ, answered by empty data), carrying no payload. The target's
//!   endpoint answers each with one packet of data in its PDC's return direction (RSP_DATA,
//!   RESPONSE_W_DATA with RC_OK, the read's length and the chunk's offset): [`Transmit::read`]
//!   names the bytes, which the caller takes from the memory the READ's header names. The initiator
//!   places them ([`Placement::read`]) and reports the READ `Sent` once every request is
//!   acknowledged and every byte arrived; if the data stops coming for [`PdcConfig::idle_timeout`]
//!   after that, the READ alone fails ([`Failure::ReadTimeout`]: the target went silent).
//!   *Project-defined*: data always travels in the return direction, small reads too (the reference
//!   provider puts reads of at most `Max_ACK_Data_Size`, 16 B, in the ACK; our initiator places
//!   such data as well); both ends use the same `mtu`, as the first request states no chunk length.
//!   A target keeps a message slot (`M`) per run of read data in flight (consecutive chunks of one
//!   READ share one; reordered requests split runs), and NACKs a READ request NO_PKT_BUFFER while
//!   it has none free.
//! * **Late SYNs.** A SYN request for no open target PDC opens one, so a copy of a packet of a
//!   PDC that already closed (a fabric duplicate, or one delayed past the close) would open a
//!   new PDC and be delivered again. The endpoint remembers its last 16 closed target PDCs for
//!   `New_PDC_Time` (default 5 ms) after the close, and drops unanswered a SYN request with the
//!   same key (source, destination, SPDCID) and start PSN (its PSN − psn_offset). A new PDC from
//!   the same initiator PDC id picks a fresh start PSN (random, UE 1.0 §3.5.11.4, or
//!   above `Expected_PSN` under secure start as in uet-ref-prov), so it is not mistaken for one.
//! * **Secure domains** ([`Secure`]; UE 1.0 §3.7, uet-ref-prov `uet_pds.c` for the secure start
//!   PSN): one endpoint serves one secure domain, and the domain's `Expected_PSN` moves to one
//!   past a closing target PDC's cumulative ACK (`CACK_PSN + 1`), whenever that PDC started at
//!   or after it and however it closed (uet-ref-prov moves it on a CLOSE only, to the PDC's
//!   start PSN plus one). An initiator PDC starts 2^16 to 2^17 past where the last PDC to its destination
//!   stopped (random in [2^16, 2^31) for the first), so 0-RTT starts are not refused once
//!   `Expected_PSN` has risen (the reference provider's initiator learns `Expected_PSN` from an
//!   ACK flag of its own instead, which this crate does not send).
//! * A request the event queue has no room for is dropped unanswered (its resend comes back once
//!   the caller has polled events), so no event is ever lost.
//!
//! **RUDI and UUD** (as the uet-ref-prov README describes them) need no PDC:
//!
//! * RUDI (reliable, unordered, for idempotent operations): every packet carries a fresh packet
//!   id and waits for its RUDI response; the initiator resends it after `RTO_Init_Timer`,
//!   doubled after each resend up to [`PdcConfig::rto_max`] (per packet, as that README says), at
//!   most `Max_RTO_Retx_Cnt` times, then fails the message. A RUDI NACK of a retransmit-class code
//!   resends at once; other codes fail the message. The target places every request it gets,
//!   duplicates included (the operation is idempotent), and answers each with a RUDI response
//!   carrying the SES DEFAULT_RESPONSE (RC_OK, the whole message). It keeps no state, so it reports
//!   no `Received` event for a RUDI message: the placements are the delivery.
//! * UUD (best effort): one packet, no answer. The message counts as `Sent` once on the wire;
//!   the target places it and reports it `Received` (PDC 0, which no PDC uses).
//!
//! The code is split by concern, each part an `impl` block of [`Endpoint`] in its own file:
//! which PDC a received packet belongs to (`demux.rs`: lookups, SYN handling, late SYNs, the
//! source check, NACKs for unknown PDCs), the target side (`receiving.rs`), the initiator side
//! (`sending.rs`), everything `poll_transmit` writes (`transmit.rs`), RUDI and UUD
//! (`connectionless.rs`), and congestion management (`congestion.rs`: one CCC per destination,
//! see [`CmsConfig`]).

use super::order::{MessageOrder, OrderError, OrderPool};
use super::segment::{Segment, SegmentError, Segmenter};
use crate::Error;
use crate::pdc::held::{HELD_RESPONSES, HeldResponses, OWN_HELD, Tiered};
use crate::pdc::initiator::{IdleInitiator, IdleReceiver, InitiatorCore, ReturnReceiver};
use crate::pdc::table::{FreeSlots, SlotRef, same_addr};
use crate::pdc::target::{IdleReturn, ReturnDirection, TargetCore};
use crate::pdc::{
    Delivery, Failure, InitiatorEvent, InitiatorState, InitiatorTx, IpAddr, PdcConfig, PdcTable, StartPolicy,
    TargetEvent, TargetState, TargetTx, psn_after,
};
use crate::pds::{DeliveryMode, Nack, NackCode, NackTarget, NextHeader, PdcDest, PdsHeader, Request};
use crate::pds::{Rudi, RudiFlags};
use crate::ses::{
    Extension, Opcode, RequestCommon, Response, ResponseList, ResponseOpcode, ReturnCode, SesFlags, SesHeader,
    StandardRequest, StandardTail,
};
pub use congestion::{BITMAP_PATHS, CmsConfig, Controllers, EV_MEMORY, LoadBalancing};
use congestion::{CcSignal, Cccs};
use core::num::NonZeroU16;
use credit::{Pulls, TargetCredit};
use extensions::Extensions;
use held::{HeldAt, HeldPool};
use linklayer::{Instant, ZeroOption};
use links::{Link, SlotList};
use returns::{ReceiverAt, ReceiverPool, ReturnAt, ReturnPool, SenderAt, SenderPool};
use stats::Marked;
pub use stats::{EndpointStats, NackCounts, Resends};
use timers::TimerHeap;

/// The most header bytes one packet takes: a 16-byte PDS header (RUD_CC, NACK, control) or a
/// 32-byte ACK_CC or NACK_CCX, 40-byte ACK_CCX; or a 12-byte request with a 44-byte standard SES
/// request and a 36-byte compare-and-swap extension. (An ACK_CCX with a 20-byte RESPONSE_W_DATA
/// and [`FETCHED_MAX`] bytes of data takes 92.)
pub const MAX_HEADER_LEN: usize = 16 + 44 + 36;

/// The most bytes a fetching atomic's result may have for this endpoint to place it (a
/// [`Placement`] with `read`), and to answer one with ([`Endpoint::respond_with_data`]): one
/// element of the widest datatype, LONG_DOUBLE_COMPLEX (UE 1.0 §3.4). Longer fetched data is
/// dropped; the message still completes on its ACK.
pub const FETCHED_MAX: usize = crate::pdc::held::RESPONSE_DATA_MAX;

/// Messages a target PDC tracks in progress (arrived in part, or complete and waiting for an
/// earlier one) by default: [`Endpoint`]'s const generic `W`. A packet starting one more is
/// NACKed NO_SES_MSG_AVAIL.
pub const ORDER_WINDOW: usize = 16;

/// Messages in progress the target PDCs of an endpoint share by default, beyond the two each
/// keeps: [`Endpoint`]'s const generic `O`. 256 holds the rest of eighteen PDCs' full
/// [`ORDER_WINDOW`]s (14 each), enough for a 16-to-1 incast whose senders keep 16 messages in
/// progress each.
pub const ORDER_POOL: usize = 256;

/// Extension headers (atomic, compare-and-swap, rendezvous) of the messages being sent that an
/// endpoint holds by default: [`Endpoint`]'s const generic `X`. A message with one more is
/// refused ([`EndpointError::TooManyExtensions`]).
pub const EXTENSIONS: usize = 16;

/// Return directions, and blocks of held responses, an endpoint's PDCs share by default:
/// [`Endpoint`]'s const generic `D`, the target PDCs that may have read data outstanding at once,
/// the initiator PDCs that may have return packets (read data, CLOSE_REQ) not yet acknowledged
/// at once, and the target PDCs that may hold guaranteed-delivery responses beyond their own two
/// slots (or with data: fetching atomics' values) at once.
pub const RETURN_DIRECTIONS: usize = 16;

/// Request directions an endpoint's initiator PDCs share by default: [`Endpoint`]'s const
/// generic `S`, the initiator PDCs that may have requests outstanding at once.
pub const REQUEST_DIRECTIONS: usize = 16;

/// Depth of an endpoint's control queues by default: [`Endpoint`]'s const generic `Q` (NACKs
/// and RUDI responses waiting to go, RUDI packets in flight).
pub const CONTROL_QUEUE: usize = 16;

/// Configuration of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EndpointConfig {
    /// This endpoint's address.
    pub addr: IpAddr,
    /// Payload bytes per packet (every packet of a message but the last is full): 1 to
    /// [`MAX_PAYLOAD`](crate::msg::MAX_PAYLOAD), checked by [`Endpoint::send`]. Both ends of a
    /// READ must use the same, since a READ's data comes back one packet per request.
    pub mtu: u16,
    /// PDC timers and limits.
    pub pdc: PdcConfig,
    /// Close a PDC as soon as it has nothing left to send or acknowledge. Otherwise a PDC stays
    /// open for the next message to its key, until the initiator table (`P`) is full and a
    /// message's key has no PDC (or, under congestion management, every CCC is in use): then
    /// the open PDC with nothing to do that was idle longest closes to make room
    /// ([`EndpointStats::idle_pdcs_closed`]), one at a time (the next once the last one's close
    /// has timed out, so that a silent peer does not hold the table), and the message goes on a
    /// new PDC once it is gone. Default `true`.
    pub close_when_idle: bool,
    /// The most messages started on one PDC and not yet completed (`Sent` or `Failed`); the next
    /// waits for one to complete. A target tracks a bounded number of messages in progress per
    /// PDC (ours [`Endpoint`]'s `W`, by default [`ORDER_WINDOW`], 16) and refuses the packets of
    /// more with NACK NO_SES_MSG_AVAIL, so sending more under loss only draws NACKs. Default
    /// [`ORDER_WINDOW`].
    pub messages_per_pdc: u16,
    /// TSS: `Some` when this endpoint's packets are sealed by a
    /// [`SecureDomain`](crate::tss::SecureDomain) (see [`Secure`]); its PDCs then limit their
    /// PSN range whatever [`PdcConfig::limit_psn_range`] says. Default `None`.
    pub secure: Option<Secure>,
    /// Congestion management: `Some` to gate each destination's new packets by an NSCC window and
    /// spray them over the fabric's paths (see [`CmsConfig`]); it takes effect on an endpoint
    /// with CCC slots (the const generic `C` of [`Endpoint`] above 0). Default `None`.
    pub cms: Option<CmsConfig>,
}

/// How an endpoint in a secure domain frames its packets and starts its PDCs (UE 1.0 §3.7; the
/// secure start PSN of the reference provider `ultraethernet/uet-ref-prov`, `uet_pds.c`).
///
/// The endpoint holds no key: [`Endpoint::poll_transmit_sealed`] writes the headers after
/// `header_room` bytes, copies the payload the caller gives for it and seals the packet with the
/// caller's [`SecureDomain`](crate::tss::SecureDomain) in one call (or: [`Endpoint::poll_transmit`],
/// append the payload, then [`SecureDomain::seal`](crate::tss::SecureDomain::seal));
/// [`Endpoint::handle_sealed_packet`] opens a received packet and hands only its plaintext on,
/// so a packet that fails authentication changes no PDC state. The clear entry points
/// ([`Endpoint::handle_packet`] and its kin) take plaintext as authenticated: a packet that
/// arrived without TSS must not reach a secure endpoint through them.
///
/// Start PSNs: the first initiator PDC to a destination starts at a random PSN in [2^16, 2^31)
/// (the reference provider's range), a later one 2^16 to 2^17 past where the last one stopped;
/// target PDCs accept a SYN's start PSN per [`SecureStart`]. The domain's `Expected_PSN` moves
/// past every PDC that closes, so a replayed SYN of a closed PDC is refused (NACK NEW_START_PSN)
/// instead of opening a second PDC.
///
/// One endpoint serves one secure domain (one SDI). For several, run an endpoint per domain at
/// the same address and route each received packet to the endpoint of the SDI its TSS header
/// names (the header is clear: [`TssHeader::parse`](crate::tss::TssHeader::parse)); PDCs of jobs
/// outside any domain go through an endpoint without `secure`. Each endpoint numbers its PDCs on
/// its own, so a peer that keeps one PDC table across domains may see one PDC id used in two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Secure {
    /// Bytes left for the TSS header: 12, or 16 when the domain sends SSIs (the first value of
    /// [`SecureDomain::overhead`](crate::tss::SecureDomain::overhead); [`Secure::for_domain`]
    /// takes it from the domain). A header longer than the room would overwrite the PDS header.
    pub header_room: u8,
    /// How target PDCs accept start PSNs.
    pub start: SecureStart,
}

impl Secure {
    /// The framing `domain` seals with: room for its TSS header ([`SecureDomain::overhead`]),
    /// and `start`. Build the configuration so, and the room always fits the header.
    ///
    /// [`SecureDomain::overhead`]: crate::tss::SecureDomain::overhead
    pub const fn for_domain<const S: usize, const W: usize>(
        domain: &crate::tss::SecureDomain<S, W>,
        start: SecureStart,
    ) -> Self {
        Secure { header_room: domain.overhead().0 as u8, start }
    }
}

/// The two secure-PDC establishment methods of the reference provider (`uet_pds.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SecureStart {
    /// EXPECTED_0RTT_START (the reference provider's default): a SYN whose start PSN is at or
    /// after the domain's `Expected_PSN` opens the PDC at once; an earlier one is NACKed
    /// NEW_START_PSN with `Expected_PSN`.
    Expected0Rtt,
    /// RANDOM_1RTT_START: every SYN is NACKed NEW_START_PSN with a random start PSN.
    Random1Rtt,
}

/// The lowest start PSN of a secure PDC (2^16, the reference provider's).
pub const SECURE_START_MIN: u32 = 1 << 16;

/// One past the highest start PSN of a secure PDC (2^31, the reference provider's).
pub const SECURE_START_END: u32 = 1 << 31;

impl EndpointConfig {
    /// What an [`Endpoint::EMPTY`] reports as its configuration before [`Endpoint::init`]: the
    /// unspecified address, `mtu` 0.
    pub const UNCONFIGURED: EndpointConfig = EndpointConfig::new([0; 16], 0);

    /// An endpoint at `addr` sending `mtu` payload bytes per packet, with the default PDC timers,
    /// PDCs closed when idle, and [`ORDER_WINDOW`] messages in progress per PDC.
    pub const fn new(addr: IpAddr, mtu: u16) -> Self {
        EndpointConfig {
            addr,
            mtu,
            pdc: PdcConfig::DEFAULT,
            close_when_idle: true,
            messages_per_pdc: ORDER_WINDOW as u16,
            secure: None,
            cms: None,
        }
    }
}

/// How a message is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Service {
    /// Reliable unordered delivery on a PDC; messages complete in order (within the target's `W`;
    /// see [`Endpoint`]).
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
    /// JobID, PIDonFEP, resource index, buffer offset, initiator, match bits, header data, and
    /// the extension header its opcode carries (atomic or compare-and-swap for the atomic
    /// opcodes, rendezvous for the rendezvous sends), which goes on every packet of the message.
    pub header: StandardRequest,
    /// Payload bytes. For a compare-and-swap, the bytes of operands its extension carries
    /// (`request_length`, at most 32, in one packet): its packet carries no payload after the
    /// extension, and [`Transmit::payload`] is `None`. uet-ref-prov's target takes
    /// FETCHING_ATOMIC with atomic opcode CSWAP and `len` 32, each 64-bit value big-endian in
    /// the last 8 bytes of its 128-bit field (`compare[8..]`, `swap[8..]`), and answers the old
    /// value.
    pub len: u32,
    /// The caller's own value for this message (an index, a tag), returned by
    /// [`MsgHandle::user`] in every event and placement about it. Never sent.
    pub user: u64,
}

impl MessageDesc {
    /// A message of `len` bytes to `dst` by `service`, for job `job_id`, whose standard request
    /// has opcode `opcode`; every other field is zero (traffic class, PIDonFEP, resource index,
    /// buffer offset, initiator id, match bits or memory key, header data) and the user value.
    /// The endpoint sets SOM, EOM, the message id and the lengths per packet.
    pub const fn new(dst: IpAddr, service: Service, opcode: Opcode, job_id: u32, len: u32) -> Self {
        MessageDesc {
            dst,
            service,
            tc: 0,
            header: StandardRequest {
                common: RequestCommon {
                    opcode,
                    flags: SesFlags::empty(),
                    ri_generation: 0,
                    job_id,
                    pid_on_fep: 0,
                    resource_index: 0,
                },
                message_id: 0,
                buffer_offset: 0,
                initiator: 0,
                match_bits: 0,
                tail: StandardTail::Som { header_data: 0 },
                request_length: 0,
                ext: None,
            },
            len,
            user: 0,
        }
    }

    /// With this user value ([`MessageDesc::user`]), returned in every event about the message.
    pub const fn with_user(mut self, user: u64) -> Self {
        self.user = user;
        self
    }

    /// With these match bits (tagged sends), or this memory key (RMA: WRITE, READ).
    pub const fn with_match_bits(mut self, match_bits: u64) -> Self {
        self.header.match_bits = match_bits;
        self
    }

    /// Where the message goes in (or, for a READ, comes from) the target's buffer.
    pub const fn with_buffer_offset(mut self, offset: u64) -> Self {
        self.header.buffer_offset = offset;
        self
    }

    /// The target process and resource: PIDonFEP and resource index.
    pub const fn with_resource(mut self, pid_on_fep: u16, resource_index: u16) -> Self {
        self.header.common.pid_on_fep = pid_on_fep;
        self.header.common.resource_index = resource_index;
        self
    }

    /// The traffic class (part of the PDC key).
    pub const fn with_tc(mut self, tc: u8) -> Self {
        self.tc = tc;
        self
    }
}

/// A queued message, as the caller names it: slot and generation, and the caller's user value
/// ([`MessageDesc::user`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MsgHandle {
    slot: u16,
    generation: u16,
    user: u64,
}

impl MsgHandle {
    /// The user value the message was sent with ([`MessageDesc::with_user`]).
    pub const fn user(&self) -> u64 {
        self.user
    }
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

/// Read data a target sends back: `len` bytes at byte `offset` of the READ whose request header
/// is [`ReadRef::header`]: in the memory its resource index and key (`match_bits`) name, the
/// bytes from `header().buffer_offset + offset` on.
///
/// The header is kept as a message slot keeps it (56 B here against 104 with a whole
/// [`StandardRequest`]), since every [`Transmit`] carries room for a `ReadRef`, and a small core
/// pays for each byte a transmit moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadRef {
    request: RequestFields,
    message_id: u16,
    request_length: u32,
    /// Byte offset in the READ.
    pub offset: u32,
    /// Bytes.
    pub len: u16,
}

impl ReadRef {
    /// The READ's standard request as the request packet this data answers first carried it:
    /// the READ's first packet's form, or a later packet's (its continuation tail) when that
    /// packet came first. A READ has no extension header.
    pub fn header(&self) -> StandardRequest {
        self.request.standard(self.message_id, self.request_length, None)
    }
}

/// A packet to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// Laid out as declared, `payload` last: the results and options holding a `Transmit` keep their
// tag in `payload`'s, so moving one out copies one aligned run before it (rustc's own order put
// that tag first, and each move was a byte-misaligned copy on a 32-bit core: 3.5 % of the
// Cortex-M4 instructions per UET message).
#[repr(C)]
pub struct Transmit {
    /// Destination address.
    pub dst: IpAddr,
    /// Header bytes written at the front of the buffer.
    pub header_len: usize,
    /// The entropy value to send the packet with (the entropy header's, or the UDP source port),
    /// chosen by its CCC's load balancer under congestion management ([`EndpointConfig::cms`]);
    /// `None`: the caller's choice.
    pub entropy: Option<u16>,
    /// The read data to append, for a packet answering a READ this endpoint received.
    pub read: Option<ReadRef>,
    /// The payload to append, for a request of a message this endpoint sends (`None` for a
    /// READ's requests, which carry none).
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
    /// Byte offset of the payload in the message (a WRITE's bytes go to
    /// `header.buffer_offset + offset` of the memory its header names).
    pub offset: u32,
    /// The payload. Empty for a compare-and-swap sent in uet-ref-prov's form (its operands are
    /// in `header.ext`, and count as `len` bytes of the message).
    pub payload: &'a [u8],
    /// `Some(msg)`: the payload is read data answering READ message `msg` this endpoint sent
    /// (copy it to byte `offset` of the READ's local buffer); `pdc` is then the initiator PDC,
    /// `psn` the PSN of the packet that carried the data (a return-direction PSN, or the READ
    /// request's for data inside an ACK) and `header` the READ's request. For a FETCHING_ATOMIC
    /// or TSEND_FETCH_ATOMIC message `msg`, the payload is the value the target fetched (its
    /// RESPONSE_W_DATA in the ACK of the request, offset 0, at most [`FETCHED_MAX`] bytes;
    /// uet-ref-prov's target returns the 8-byte old value, for CSWAP too), given once, before
    /// the message's [`Event::Sent`]. Only the ACK of the request carries it: uet-ref-prov's
    /// target acknowledges the request no other way until the value is cleared (its CACK stops
    /// before it, and a resend draws the stored ACK again), but a target that let a later ACK
    /// acknowledge the request would leave `Sent` without the value, so a caller waiting for one
    /// treats `Sent` before it as a lost result.
    /// `None`: a request this endpoint received. For a READ request the payload is empty: the
    /// endpoint answers it with the bytes [`Transmit::read`] names. For a MSG_ERROR (opcode
    /// [`Opcode::MsgError`], no SOM, EOM, no payload) the
    /// initiator gave the message up after `offset` bytes: the message completes
    /// ([`Event::Received`]) once those arrived. The answer is the caller's
    /// ([`Endpoint::respond`]): uet-ref-prov's target answers OP_VIOLATION once the cut completes
    /// the message (which it reports as failed), else the code the message failed with, and
    /// every later packet of the message with that code.
    pub read: Option<MsgHandle>,
}

/// What [`Endpoint::cancel`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Cancel {
    /// The message had not started: it is forgotten, and no event will name it.
    Withdrawn,
    /// The message had started: the rest of it goes as a MSG_ERROR, and it fails with
    /// [`Failure::Cancelled`] once that and what went out are acknowledged.
    CutShort,
}

/// What happened, reported by [`Endpoint::poll_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// Every packet of a sent message was acknowledged; for a READ, every byte of its data
    /// arrived too.
    Sent(MsgHandle),
    /// A sent message failed: its PDC closed in error, the target refused it, its caller cut it
    /// short, or (a READ) its data stopped coming ([`Failure`]).
    Failed {
        /// The message.
        msg: MsgHandle,
        /// Why.
        why: Failure,
        /// What the target may hold of it. A failure never proves that nothing arrived: an
        /// acknowledgement lost on the way back looks like a lost request.
        delivery: FailedDelivery,
    },
    /// The target answered a packet of a sent message with a guaranteed-delivery SES response
    /// (any opcode but DEFAULT_RESPONSE and NO_RESPONSE), or with a DEFAULT_RESPONSE whose
    /// return code is an error: reported once, before the message completes. An error code
    /// (neither OK nor NULL) fails the message, [`Failure::Refused`]. (Messages on a PDC only:
    /// a RUDI response with an error code fails its message with no `Response` first.)
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
    /// A received message is complete (reported in send order per PDC, while the sender keeps at
    /// most this endpoint's `W` messages in progress on it and its `O` shared entries have room; see
    /// [`Endpoint`] and [`EndpointStats::released_out_of_order`]). For a READ: every
    /// request of it arrived (its data goes back through [`Endpoint::poll_transmit`]); `len` is the
    /// READ's length. For a message its initiator cancelled with a MSG_ERROR (see
    /// [`Placement::read`]), `len` is the bytes it sent.
    Received {
        /// Sender address.
        src: IpAddr,
        /// The target PDC (this endpoint's id).
        pdc: u16,
        /// The sender's message id.
        message_id: u16,
        /// Message length (for a cancelled one, the bytes sent).
        len: u32,
    },
}

/// What the target may hold of a message that failed ([`Event::Failed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FailedDelivery {
    /// Unknown: none of its packets was acknowledged, so the target may hold all, some or none
    /// of it, and may have acted on it.
    Unknown,
    /// The target acknowledged part of it (for a READ: its requests), so it holds at least that
    /// part and may have acted on it.
    Partial,
}

/// Why the endpoint refused a call or a packet. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EndpointError {
    /// Every message slot is in use (for [`Endpoint::send`], every one but the last, kept for
    /// read data).
    TooManyMessages,
    /// The message has an extension header and every one the endpoint holds (its `X`) is in
    /// use: send it once a message with one settles.
    TooManyExtensions,
    /// The message's SES header cannot go on the wire: a field beyond its width (JobID 24 bits,
    /// PIDonFEP and resource index 12, the same in a rendezvous extension), a code point the wire
    /// cannot carry (a vendor opcode, atomic opcode or datatype outside its vendor range), or an
    /// extension header other than the one its opcode carries (UE 1.0 §3.4: atomic or
    /// compare-and-swap for the atomic opcodes, rendezvous for the rendezvous sends, none for the
    /// rest). [`StandardRequest::check`] says which.
    Header(Error),
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
    /// [`Endpoint::respond`] cannot hold the response (see
    /// [`Target::hold_response`](crate::pdc::Target::hold_response)).
    Respond(crate::pdc::PdcError),
    /// [`Endpoint::cancel`]: the message has started and cannot be cut short (it went out whole,
    /// was cut short already, is a READ, goes by RUDI or UUD, or its PDC is closing); it
    /// completes or fails as usual.
    Started,
    /// [`Endpoint::cancel`]: no such message (completed already, or never sent).
    UnknownMessage,
    /// [`Endpoint::cancel`]: the message started, but its first packet is not acknowledged yet,
    /// so its target may not know it; it can be cut short once it is.
    Unacknowledged,
    /// A READ goes on a PDC (RUD or ROD): this endpoint neither sends nor answers READs over RUDI
    /// (whose data would ride in the RUDI response) or UUD.
    ReadWithoutPdc,
    /// [`Endpoint::handle_sealed_packet`]: TSS refused the packet (counted in the domain's
    /// statistics); nothing here changed. From [`Endpoint::poll_transmit_sealed`]: the domain
    /// refused to seal (no key, counters exhausted, ...).
    Tss(crate::tss::TssError),
    /// [`Endpoint::poll_transmit_sealed`]: the payload given is not as long as the transmit
    /// names.
    PayloadLength,
    /// The endpoint is an [`Endpoint::EMPTY`] not yet given its configuration by
    /// [`Endpoint::init`]: it takes no message and no packet.
    Unconfigured,
}

impl From<Error> for EndpointError {
    fn from(e: Error) -> Self {
        EndpointError::Malformed(e)
    }
}

impl core::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EndpointError::TooManyMessages => write!(f, "every message slot is in use (send: but the last)"),
            EndpointError::TooManyExtensions => write!(f, "every extension header slot is in use"),
            EndpointError::Header(e) => write!(f, "the message's header cannot be sent: {e}"),
            EndpointError::Segment(e) => write!(f, "{e}"),
            EndpointError::Malformed(e) => write!(f, "malformed packet: {e}"),
            EndpointError::Unsupported => write!(f, "a packet this endpoint does not handle"),
            EndpointError::UudTooLong => write!(f, "a UUD message must fit one packet"),
            EndpointError::EventsFull => write!(f, "the event queue is full: poll events"),
            EndpointError::ResponsesFull => write!(f, "the RUDI response queue is full: transmit"),
            EndpointError::BufferTooShort => write!(f, "the output buffer cannot hold the headers"),
            EndpointError::Respond(e) => write!(f, "cannot respond: {e}"),
            EndpointError::Started => write!(f, "the message has started and cannot be withdrawn"),
            EndpointError::UnknownMessage => write!(f, "no such message"),
            EndpointError::Unacknowledged => write!(f, "the message's first packet is not acknowledged yet"),
            EndpointError::ReadWithoutPdc => write!(f, "a READ needs RUD or ROD"),
            EndpointError::Tss(e) => write!(f, "{e}"),
            EndpointError::PayloadLength => write!(f, "the payload given is not the length the transmit names"),
            EndpointError::Unconfigured => write!(f, "the endpoint is not configured: call init"),
        }
    }
}

impl core::error::Error for EndpointError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            EndpointError::Segment(e) => Some(e),
            EndpointError::Malformed(e) | EndpointError::Header(e) => Some(e),
            EndpointError::Respond(e) => Some(e),
            _ => None,
        }
    }
}

/// What a message slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MsgKind {
    /// A message whose requests carry its payload (WRITE, SEND, ...).
    Request,
    /// A READ: its requests carry no payload, one per `mtu` bytes of the read, each answered by
    /// one packet of data; it completes when every request is acknowledged and `arrived` bytes
    /// equal its length. Once every request is acknowledged it fails if no data arrives before
    /// its deadline in `read_timers` ([`Failure::ReadTimeout`]). (Refused, it is `Cancelled`.)
    Read { arrived: u32 },
    /// Read data answering a run of request packets of one READ received on target PDC `tpdc`:
    /// `len` bytes from byte `offset` of the READ, one packet per request (`segments`), at
    /// consecutive return PSNs from `first_psn`; `request` and `message_id` are the READ's (of
    /// the request packet that opened the run), and `read_length` its `request_length`.
    ReadData { tpdc: u16, offset: u32, read_length: u32 },
    /// A message of requests, or a READ, that fails with `why` once every packet is
    /// acknowledged: cut short by [`Endpoint::cancel`] ([`Failure::Cancelled`]) or refused by
    /// the target ([`Failure::Refused`]) after its first `cut` packets went out. Its packet
    /// `cut`, its last, is a MSG_ERROR (see [`SendMsg::msg_error`]), unless `cut` is all its
    /// packets (or more: refused while its PDC sends no more, it ends as its PDC does). A READ's
    /// data still arriving is acknowledged and dropped.
    Cancelled { cut: u32, why: Failure },
}

impl MsgKind {
    /// The target PDC read data goes out on.
    const fn read_data_pdc(self) -> Option<u16> {
        match self {
            MsgKind::ReadData { tpdc, .. } => Some(tpdc),
            _ => None,
        }
    }
}

/// A standard request as a message slot keeps it: the fields its sender chose, in 40 B where a
/// [`StandardRequest`] takes 96. Its message id, `request_length` and extension header live
/// elsewhere (the slot's `message_id`, the message's length or the READ's, the endpoint's
/// [`Extensions`]), and the tail is kept as the 64 bits UE 1.0 §3.4 puts on the wire: header
/// data when the flags have SOM, else the continuation's payload length and message offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct RequestFields {
    common: RequestCommon,
    initiator: u32,
    buffer_offset: u64,
    match_bits: u64,
    tail: u64,
}

impl RequestFields {
    /// The fields of `h` (the flags' SOM set to say which tail it has).
    fn of(h: &StandardRequest) -> Self {
        let mut common = h.common;
        let tail = match h.tail {
            StandardTail::Som { header_data } => {
                common.flags.insert(SesFlags::SOM);
                header_data
            }
            StandardTail::Continuation { payload_length, message_offset } => {
                common.flags.remove(SesFlags::SOM);
                (u64::from(payload_length) << 32) | u64::from(message_offset)
            }
        };
        RequestFields { common, initiator: h.initiator, buffer_offset: h.buffer_offset, match_bits: h.match_bits, tail }
    }

    /// The standard request with `message_id`, `request_length` and `ext`.
    fn standard(&self, message_id: u16, request_length: u32, ext: Option<Extension>) -> StandardRequest {
        let tail = if self.common.flags.contains(SesFlags::SOM) {
            StandardTail::Som { header_data: self.tail }
        } else {
            StandardTail::Continuation { payload_length: (self.tail >> 32) as u16, message_offset: self.tail as u32 }
        };
        StandardRequest {
            common: self.common,
            message_id,
            buffer_offset: self.buffer_offset,
            initiator: self.initiator,
            match_bits: self.match_bits,
            tail,
            request_length,
            ext,
        }
    }
}

/// A message slot: what [`MessageDesc`] gave (but its extension header, kept in the endpoint's
/// [`Extensions`] at `ext`) and how far the message got.
struct SendMsg {
    user: u64,
    request: RequestFields,
    /// Order of submission (for fairness and per-key order).
    seq: u64,
    dst: IpAddr,
    len: u32,
    /// Its first PSN on its PDC and the packets that went out, once started.
    first_psn: u32,
    sent: u32,
    kind: MsgKind,
    generation: u16,
    /// Payload bytes per packet: the message's packets are `Segmenter` of `len` and this (see
    /// `segments`). Never 0: a slot whose `mtu` is 0 holds no message ([`MsgSlot`]).
    mtu: u16,
    /// The initiator PDC it is queued on (not started: `sent` is 0) or goes on.
    pdc: Option<u16>,
    /// Its message id: its PDC's once started (RUD, ROD), the endpoint's (RUDI, UUD), the READ's
    /// (read data).
    message_id: u16,
    ext: SlotRef,
    service: Service,
    tc: u8,
    /// The cumulative acknowledgement passed its first packet (for [`FailedDelivery`]).
    partly_acked: bool,
}

/// A message slot: a [`SendMsg`], or none when its `mtu` is 0. An empty slot is every byte
/// zero, as a [`ZeroOption`] would be, without `ZeroOption`'s tag byte, which would be padded to
/// the message's alignment (8 bytes a slot).
struct MsgSlot(SendMsg);

impl MsgSlot {
    /// No message (every byte zero).
    const NONE: MsgSlot = MsgSlot(SendMsg {
        user: 0,
        request: RequestFields {
            common: RequestCommon {
                opcode: Opcode::NoOp,
                flags: SesFlags::empty(),
                ri_generation: 0,
                job_id: 0,
                pid_on_fep: 0,
                resource_index: 0,
            },
            initiator: 0,
            buffer_offset: 0,
            match_bits: 0,
            tail: 0,
        },
        seq: 0,
        dst: [0; 16],
        len: 0,
        first_psn: 0,
        sent: 0,
        kind: MsgKind::Request,
        generation: 0,
        mtu: 0,
        pdc: None,
        message_id: 0,
        ext: SlotRef::NONE,
        service: Service::Rud,
        tc: 0,
        partly_acked: false,
    });

    /// Holds `msg` (whose `mtu` is never 0).
    const fn some(msg: SendMsg) -> MsgSlot {
        MsgSlot(msg)
    }

    /// The message, by reference.
    const fn as_ref(&self) -> Option<&SendMsg> {
        if self.0.mtu == 0 { None } else { Some(&self.0) }
    }

    /// The message, by mutable reference.
    const fn as_mut(&mut self) -> Option<&mut SendMsg> {
        if self.0.mtu == 0 { None } else { Some(&mut self.0) }
    }

    /// Whether it holds a message.
    #[cfg(any(test, feature = "fuzzing"))]
    const fn is_some(&self) -> bool {
        self.0.mtu != 0
    }

    /// Whether it holds none.
    #[cfg(any(test, feature = "fuzzing"))]
    const fn is_none(&self) -> bool {
        !self.is_some()
    }

    /// Empties it (writes `mtu` alone).
    fn clear(&mut self) {
        self.0.mtu = 0;
    }
}

impl SendMsg {
    /// Message `desc`, queued in a slot of generation `generation`, not started; its extension
    /// header is kept at `ext`.
    fn new(
        generation: u16,
        kind: MsgKind,
        desc: &MessageDesc,
        ext: SlotRef,
        mtu: NonZeroU16,
        seq: u64,
        message_id: u16,
    ) -> Self {
        SendMsg {
            user: desc.user,
            request: RequestFields::of(&desc.header),
            seq,
            dst: desc.dst,
            len: desc.len,
            first_psn: 0,
            sent: 0,
            kind,
            generation,
            mtu: mtu.get(),
            pdc: None,
            message_id,
            ext,
            service: desc.service,
            tc: desc.tc,
            partly_acked: false,
        }
    }

    /// The message's packets.
    const fn segments(&self) -> Segmenter {
        let mtu = match NonZeroU16::new(self.mtu) {
            Some(mtu) => mtu,
            // Only an empty slot's (never a message's).
            None => NonZeroU16::MIN,
        };
        Segmenter::with_mtu(self.len, mtu)
    }

    /// Its packets: its segments, or for one cut short, those sent and its MSG_ERROR.
    #[inline(always)]
    const fn packets(&self) -> u32 {
        match self.kind {
            MsgKind::Cancelled { cut, .. } if cut < self.segments().packets() => cut.saturating_add(1),
            _ => self.segments().packets(),
        }
    }

    /// Whether every packet went out.
    const fn all_sent(&self) -> bool {
        self.sent >= self.packets()
    }

    /// The segment of its MSG_ERROR, if it was cut short and `index` is that packet: no payload,
    /// at the first byte not sent, the last packet.
    fn msg_error(&self, index: u32) -> Option<Segment> {
        let MsgKind::Cancelled { cut, .. } = self.kind else { return None };
        let offset = self.segments().segment(cut)?.offset;
        // (No packet goes past it: one named so would be this one again.)
        (index >= cut).then_some(Segment { index: cut, offset, len: 0, som: false, eom: true })
    }

    /// The caller's name for this message, in slot `slot`.
    const fn handle(&self, slot: usize) -> MsgHandle {
        MsgHandle { slot: slot as u16, generation: self.generation, user: self.user }
    }

    /// The event for its failure.
    const fn failed(&self, slot: usize, why: Failure) -> Event {
        let delivery = if self.partly_acked { FailedDelivery::Partial } else { FailedDelivery::Unknown };
        Event::Failed { msg: self.handle(slot), why, delivery }
    }

    /// The message's standard request as its first packet carried it, its extension from
    /// `exts`: its message id and `request_length` set. For read data, the READ's request.
    fn sent_header<const X: usize>(&self, exts: &Extensions<X>) -> StandardRequest {
        let request_length = match self.kind {
            MsgKind::ReadData { read_length, .. } => read_length,
            _ => self.len,
        };
        self.request.standard(self.message_id, request_length, exts.get(self.ext))
    }

    /// The PDCs it may go on.
    const fn key(&self) -> PeerDest {
        peer_dest(self.service, self.request.common.job_id, self.dst, self.tc)
    }
}

struct IniPdc {
    /// Its state machine: idle, or an entry of the endpoint's [`SenderPool`].
    pdc: SenderAt,
    /// Its return direction: idle, or an entry of the endpoint's [`ReceiverPool`].
    ret: ReceiverAt,
    /// The SES responses of the return ACKs: the DEFAULT_RESPONSE for the read data that arrived
    /// last, and RC_NULL with that READ's ids for older data.
    answer: AckAnswer,
    /// The PSN of the target's last CLOSE_REQ, whose ACK is bare.
    close_req_psn: Option<u32>,
    /// The PDC's start PSN when its messages' PSNs were last set: a NACK NEW_START_PSN moves
    /// the window, and the messages' PSNs move with it.
    start_psn: u32,
    next_message_id: u16,
    /// The message whose packets are going out (the next message waits for it).
    active: SlotRef,
    /// Messages started on this PDC and not yet settled (`Sent` or `Failed`): how many, and
    /// their slots, in the order they started.
    messages: u16,
    started: SlotList,
    /// The messages of this PDC's key that have not started, in the order they were sent.
    queued: SlotList,
    /// Its congestion-control context, and the packets it counts in that CCC's flight.
    ccc: Option<u16>,
    charged: u16,
    /// It started a message since it took its entry of the [`SenderPool`] (its turn).
    took_turn: bool,
    /// Its close waits for an entry of the [`SenderPool`] (the CLOSE takes a PSN).
    close_wanted: bool,
}

/// What bounds the new messages of an initiator PDC: [`EndpointConfig::messages_per_pdc`]
/// started and not yet completed, and while other PDCs wait for a request direction, one
/// message per turn (one that started a message since it took its request direction starts no
/// other, and gives the request direction back once everything it sent is acknowledged).
#[derive(Clone, Copy)]
struct Turns {
    limit: u16,
    yields: bool,
}

impl IniPdc {
    /// The message slot this PDC would send a new packet of, in state `state`: the message in
    /// progress, else (while the PDC takes new messages, fewer than the limit have started and
    /// its turn lasts) the oldest queued.
    #[inline(always)]
    fn next_new(&self, state: InitiatorState, turns: Turns) -> Option<u16> {
        if let Some(slot) = self.active.index() {
            return Some(slot as u16);
        }
        let takes_new = matches!(state, InitiatorState::Creating | InitiatorState::Established)
            && self.messages < turns.limit
            && !(turns.yields && self.took_turn);
        self.queued.first().filter(|_| takes_new)
    }

    /// Open in state `state` with no message, none queued, and no close waiting: kept open with
    /// nothing to do, unless its state machine has a packet to give or a timer running.
    fn kept_idle(&self, state: InitiatorState) -> bool {
        matches!(state, InitiatorState::Creating | InitiatorState::Established)
            && self.messages == 0
            && self.active.index().is_none()
            && self.queued.first().is_none()
            && !self.close_wanted
    }
}

impl<const R: usize, const W: usize> TgtPdc<R, W> {
    /// Established with no message in progress, no read data, no response held and its return
    /// direction idle: open with nothing to do, unless its state machine has a packet to give.
    fn kept_idle(&self) -> bool {
        self.pdc.state() == TargetState::Established
            && matches!(self.ret, ReturnAt::Idle(_))
            && self.order.in_progress() == 0
            && self.runs.first().is_none()
            && !self.held.is_pooled()
            && self.own.is_empty()
    }
}

struct TgtPdc<const R: usize, const W: usize> {
    pdc: TargetCore<2, R>,
    /// Its return direction: idle, or an entry of the endpoint's [`ReturnPool`].
    ret: ReturnAt,
    /// Its guaranteed-delivery responses: in its own two slots, and in a block of the endpoint's
    /// [`HeldPool`] while it has one.
    own: HeldResponses<OWN_HELD>,
    held: HeldAt,
    order: MessageOrder<W>,
    /// The SES responses of ACKs that carry no held response: RC_OK for the request delivered
    /// last, RC_NULL for a duplicate, and RC_NULL with the last request's ids for an ACK that
    /// names an older one (answering a probe, or a CLEAR).
    answer: AckAnswer,
    /// The read data runs answering READs that arrived on this PDC, oldest first.
    runs: SlotList,
    /// Its part in RCCC: the pull pacer's flow, or the credit granted at once.
    credit: TargetCredit,
}

/// One fabric endpoint with up to `P` initiator and `P` target PDCs, `M` messages being sent
/// (read data it answers with included; its own messages take at most `M` − 1, the last free
/// slot kept for read data where `M` > 1), `E` undelivered events, room for `R`
/// guaranteed-delivery responses per target PDC that holds any (see [`held`](crate::pdc::held)
/// and `D` below; more slots let more answered requests wait for their CLEAR at once), and `C`
/// congestion-control contexts, one per destination in use (0 by default: no congestion
/// management; see [`CmsConfig`]).
///
/// [`Endpoint::send`] leaves the last free message slot to the read data of READs that arrive
/// (project-defined, where `M` > 1): a READ that finds no free slot draws NACK NO_PKT_BUFFER and
/// is resent, and two endpoints whose slots all held their own messages, each waiting for the
/// other to answer a READ (the READing PDCs holding every request direction, `S`), would wait for
/// each other for good under unlimited resource NACK retries ([`PdcConfig::software`]), or fail
/// those READs.
///
/// Five more sizes have defaults that suit a host:
/// - `W`, the messages a target PDC tracks in progress ([`ORDER_WINDOW`], 16; at least 2, see
///   [`order`](crate::msg::order)). When a peer starts more on one PDC, complete messages are
///   released out of order to make room, and while none is complete the packets of more draw
///   NACKs NO_SES_MSG_AVAIL; a peer avoids both by setting [`EndpointConfig::messages_per_pdc`]
///   to at most this. That setting is the sender's own (default 16, whatever `W` is): endpoints
///   built with a smaller `W` should lower it to match.
/// - `O`, the messages in progress the target PDCs share ([`ORDER_POOL`], 256; may be 0): each
///   target PDC keeps two of its `W` itself and takes the rest from these ([`OrderPool`]). When
///   all `O` are in use, a PDC with its own two full treats a packet starting another message as
///   when it is at `W` (above): a complete message is released out of order, else the packet
///   draws NACK NO_SES_MSG_AVAIL. [`EndpointStats::released_out_of_order`] counts such releases;
///   `O` of (`W` − 2) × the target PDCs that receive `W` messages at once never releases one
///   while peers keep within `W`.
/// - `Q`, the depth of the control queues ([`CONTROL_QUEUE`], 16): the NACKs the endpoint sends
///   outside a PDC (INV_DPDCID, PDC_HDR_MISMATCH, NO_PDC_AVAIL, a trimmed SYN) waiting to go (one
///   that finds the queue full is dropped; the sender's timers cover it), RUDI responses waiting
///   to go (a RUDI request that finds that queue full is refused with
///   [`EndpointError::ResponsesFull`], and its sender resends it after its timeout, which counts
///   toward its retries: make `Q` at least the RUDI requests that arrive between two
///   [`Endpoint::poll_transmit`] rounds) and RUDI packets in flight (a RUDI message waits for
///   room). One depth serves the three: each is traffic outside the PDCs, bounded by what the
///   endpoint answers or sends between two rounds, and a firmware build sizes them together.
/// - `X`, the extension headers of messages being sent ([`EXTENSIONS`], 16; may be 0): a message
///   slot keeps none itself (the largest, compare-and-swap, would add 40 B to every slot), so
///   each message with one (atomics, rendezvous sends) takes one of these until it settles, and
///   [`Endpoint::send`] refuses one more with [`EndpointError::TooManyExtensions`].
/// - `D`, the return directions the target PDCs share ([`RETURN_DIRECTIONS`], 16; at least 1):
///   the send window, timers and round-trip estimate of the read data a target PDC sends (UE 1.0
///   §3.5.20.1). A target PDC keeps 20 B of an idle one, takes one of these when its READs' data
///   starts to go, and gives it back once all of it is acknowledged and its timers stopped
///   (project-defined: the sources keep one in every PDC, though only target PDCs answering READs
///   use it). While all `D` are in use, the read data of another target PDC waits in its queue
///   and [`EndpointStats::return_direction_waits`] counts the waits. A PDC keeps its return
///   direction while its read data keeps going out, so a waiting one gets it only when a holder
///   pauses; one kept waiting past its initiator's READ timeout fails that READ. Make `D` the
///   target PDCs that send read data at once. (Project-defined: holders are not made to stop
///   for waiting PDCs, since a holder's drain takes a round trip, or a retransmission timeout
///   under loss, while the read data of every other PDC waits in message slots: in the test
///   of four PDCs sharing one return direction at 2 % loss, that made READ requests draw NACK
///   NO_PKT_BUFFER until their initiators gave up.)
///
///   `D` also counts the return directions the initiator PDCs share: the receive window of the
///   read data and CLOSE_REQ their targets send, its ACK coalescing, and the ACK or NACK waiting
///   to go. An initiator PDC keeps 8 B of an idle one (where it is, and its cumulative ACK),
///   takes one of these when a return packet reaches it, and gives it back once it is idle
///   again: every return PSN up to the newest that arrived has arrived, and its ACK has gone
///   (return ACKs are coalesced as a target's are, so a PDC keeps it while a run of read data
///   without AR arrives), and in ROD no missing PSN waits after its NACK ROD_OOO. A return
///   packet that reaches an initiator PDC while all `D` are in use is dropped, as if lost, and
///   [`EndpointStats::return_receiver_drops`] counts it (one the PDC would have refused too):
///   its target resends it, within its own retry limits (project-defined, like the rest of
///   `D`). A gap the target never fills (it gave the read data up) keeps the entry until the
///   PDC closes. Make `D` the initiator PDCs receiving read data at once.
///
///   `D` also counts the blocks of `R` guaranteed-delivery responses the target PDCs share
///   (UE 1.0 §3.4.3.3; project-defined: the sources keep the slots in every PDC, or a pool per
///   domain). A target PDC holds responses in two slots of its own, the last of which takes
///   only a response to a request received in order (every PSN before it received);
///   [`Endpoint::respond`] takes a block for the others, and the block goes back once the
///   initiator's `CLEAR_PSN` has released what it holds. A response with data (a fetching
///   atomic's value, [`Endpoint::respond_with_data`]) goes in a block only, whose last free slot
///   likewise takes only a response to a request received in order. Any request may need a
///   response, so a request is let in only while there is a slot for its response (its PDC's
///   own, its block's, or a free block's, which it then takes at once so that no other PDC's
///   request is let in on the same block; for a fetching atomic, a block's); else it is
///   refused with NACK NO_GTD_DEL_AVAIL (UE 1.0 §3.5.12.7, "no
///   SES guaranteed-delivery response resource"; retransmit class: the initiator resends after
///   `NACK_Retx_Time`, and gives up after `Max_NACK_Retx_Cnt` refusals of one packet), and the
///   ACKs carrying the responses the initiator must clear first are sent again. A PDC whose
///   requests are never answered is never refused for want of a slot, and one holding
///   responses always takes the request its window waits on in the end (a fetching atomic, once
///   its PDC has a block or one is free; see below), so none deadlocks. But
///   while its slots are full a RUD PDC refuses the requests behind a lost one until that one
///   is resent, and under the default `Max_NACK_Retx_Cnt` their initiator may give up first
///   (answering every request of a PDC with 16 in flight, shuffled, at 15 % loss each way, about
///   1 % of its messages; at 5 %, under 0.3 %; in ROD, or with [`PdcConfig::software`]'s
///   unlimited retries, none). `R` costs memory per block only: `R` of 16, which answers every message
///   at 800 Gb/s with no refusal, costs `D` × 576 B more (48 B a slot), not `P` × 576. A PDC that
///   keeps fetching atomics in flight keeps its block until they are all answered and cleared,
///   so the others wait for a block that long. Make `D` at least the target PDCs holding
///   responses beyond their own two, or answering fetching atomics, at once
///   ([`EndpointStats::nacks_sent`] counts the refusals).
/// - `S`, the request directions the initiator PDCs share ([`REQUEST_DIRECTIONS`], 16; at least
///   1): an initiator PDC's state machine, with its send window, timers, loss recovery and timed
///   packet (UE 1.0 §3.5.8–§3.5.12). An initiator PDC with nothing outstanding and no timer
///   running keeps 52 B of it (its state, ids, PSNs, the peer's range, round-trip estimate, SLEEK
///   state, counts and events), takes one of these when it sends (a new message, its CLOSE),
///   and gives it back once everything it sent is acknowledged, its timers have stopped and no
///   control packet waits to go (project-defined, like `D`: the sources keep the whole state in
///   every PDC). While all `S` are in use, a PDC with a message to start (or its CLOSE to send)
///   waits on a list, oldest first, and [`EndpointStats::request_direction_waits`] counts the
///   waits. While PDCs wait, each PDC holding a request direction starts at most one message in
///   its turn, sends it whole, and once it is acknowledged hands the request direction to the
///   oldest waiting PDC (and waits behind the others for its next message): so every PDC with a
///   message starts one before any PDC starts a second, whatever `S` is (among PDCs whose CCC's
///   window is open: one whose window is shut waits for the window, not on the list, and gives
///   its request direction back while it waits), but with `S` smaller than the PDCs sending at
///   once, at most `S` messages are in flight and each draws its own ACK. A packet that would make an idle PDC send while all `S` are in use (an ACK asking it
///   for a CLEAR, a NACK closing it in error) is dropped, as if lost, and
///   [`EndpointStats::request_direction_drops`] counts it; the peer's timers cover it. Make `S`
///   the initiator PDCs sending at once.
///
/// `W` costs no memory, each entry of `O` 20 B, each entry of `Q` 124 B, each entry of `X` 50 B,
/// each of `D` 379 B (a target's return direction 122 B, an initiator's 58 B and a block of 4
/// held responses 199 B, each with room for a fetched value), each of `S` 178 B (64-bit host).
/// The sizes are checked when the type is used, and a build error names the rule: `P` 2 to
/// 32 767, `M` 1 to 32 768, `R` at least 1, `W` 2 to 32 768, `E` more than `W` (a packet can
/// release `W` messages and one more), `Q` at least 1, `O` and `X` at most 32 768, `D` and `S` 1
/// to 32 768.
///
/// ```compile_fail,E0080
/// use uet_wire::msg::{Endpoint, EndpointConfig};
/// use uet_wire::pdc::ipv4;
/// // E (8 events) is not more than W (8 messages in progress per target PDC): a build error,
/// // "Endpoint<P, M, E, R, C, W, Q, O, X, D, S>: ... E (events) more than W ...".
/// let ep: Endpoint<2, 2, 8, 4, 0, 8> = Endpoint::new(EndpointConfig::new(ipv4([10, 0, 0, 1]), 1024), 1);
/// ```
///
/// ```
/// use uet_wire::msg::{Endpoint, EndpointConfig};
/// use uet_wire::pdc::ipv4;
/// // 9 events suit W = 8; a control queue of 4.
/// let ep: Endpoint<2, 2, 9, 4, 0, 8, 4> = Endpoint::new(EndpointConfig::new(ipv4([10, 0, 0, 1]), 1024), 1);
/// assert!(core::mem::size_of_val(&ep) < core::mem::size_of::<Endpoint<2, 2, 17>>());
/// ```
///
/// # The loop
///
/// The endpoint owns no socket and no clock: each turn, hand it what arrived, let it send, run its
/// timers, and take its events. Two endpoints joined by a `Vec` here; over UDP, each
/// [`Transmit`] is one datagram to port 4793 of `dst` (the entropy in the source port). `now` is
/// the caller's monotonic clock (`linklayer::Instant` counts nanoseconds from any
/// epoch); a call with an earlier `now` than the last counts as the last, and
/// [`Endpoint::handle_timeout`] before a deadline does nothing. A placement is a WRITE's or
/// SEND's bytes (at `header.buffer_offset + offset`), read data answering this endpoint's READ
/// ([`Placement::read`]), or a READ request this endpoint answers by itself (empty payload).
///
/// ```
/// use uet_wire::linklayer::{Duration, Instant};
/// use uet_wire::msg::{Endpoint, EndpointConfig, Event, MessageDesc, Service, MAX_HEADER_LEN};
/// use uet_wire::pdc::ipv4;
/// use uet_wire::ses::Opcode;
///
/// let (a_addr, b_addr) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
/// // Up to 8 PDCs each way, 32 messages in flight, 64 events waiting.
/// let mut eps: [Endpoint<8, 32, 64>; 2] =
///     [Endpoint::new(EndpointConfig::new(a_addr, 1024), 1), Endpoint::new(EndpointConfig::new(b_addr, 1024), 2)];
/// // A writes 5000 bytes to B, then reads 3000 bytes of B's memory (key 0x77).
/// let message: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
/// let b_memory: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
/// let write = eps[0].send(MessageDesc::new(b_addr, Service::Rud, Opcode::Write, 42, 5000)).unwrap();
/// let read_desc = MessageDesc::new(b_addr, Service::Rud, Opcode::Read, 42, 3000).with_match_bits(0x77);
/// let read = eps[0].send(read_desc).unwrap();
/// let (mut written, mut read_back) = (vec![0u8; 5000], vec![0u8; 3000]);
/// let (mut done, mut now) = (0, Instant::ZERO);
/// let mut wire: Vec<(usize, Vec<u8>)> = Vec::new();
/// while done < 2 || !eps.iter().all(|e| e.is_idle()) {
///     // 1. Send: headers are written into the buffer; append the bytes the Transmit names.
///     for (i, ep) in eps.iter_mut().enumerate() {
///         let mut buf = [0u8; MAX_HEADER_LEN];
///         while let Some(t) = ep.poll_transmit(now, &mut buf).unwrap() {
///             let mut pkt = buf[..t.header_len].to_vec();
///             if let Some(p) = t.payload {
///                 // A message this endpoint sends (here only A's write).
///                 pkt.extend_from_slice(&message[p.offset as usize..][..usize::from(p.len)]);
///             }
///             if let Some(r) = t.read {
///                 // Read data this endpoint answers with, from the memory the READ names.
///                 assert_eq!(r.header().match_bits, 0x77);
///                 pkt.extend_from_slice(&b_memory[r.offset as usize..][..usize::from(r.len)]);
///             }
///             wire.push((1 - i, pkt));
///         }
///     }
///     // 2. Receive: place each payload where the Placement says.
///     for (to, pkt) in wire.drain(..) {
///         let from = if to == 0 { b_addr } else { a_addr };
///         match eps[to].handle_packet(now, from, &pkt).unwrap() {
///             // Read data for A's READ.
///             Some(p) if p.read == Some(read) => {
///                 read_back[p.offset as usize..][..p.payload.len()].copy_from_slice(p.payload)
///             }
///             // A READ request at B: answered from `poll_transmit`, nothing to place.
///             Some(p) if p.header.common.opcode == Opcode::Read => assert!(p.payload.is_empty()),
///             // The WRITE's bytes at B.
///             Some(p) => written[p.offset as usize..][..p.payload.len()].copy_from_slice(p.payload),
///             None => {}
///         }
///     }
///     // 3. Timers, then 4. events (poll them every turn: a full queue holds packets back).
///     now = now.saturating_add(Duration::from_micros(1));
///     if eps.iter().filter_map(|e| e.poll_timeout()).any(|t| t <= now) {
///         eps.iter_mut().for_each(|e| e.handle_timeout(now));
///     }
///     for ep in eps.iter_mut() {
///         while let Some(ev) = ep.poll_event() {
///             match ev {
///                 Event::Sent(h) => assert!(h == write || h == read, "completed: {h:?}"),
///                 Event::Received { len, .. } => assert!(len == 5000 || len == 3000),
///                 other => panic!("{other:?}"),
///             }
///             done += usize::from(matches!(ev, Event::Sent(_)));
///         }
///     }
/// }
/// assert_eq!((written, read_back), (message, b_memory));
/// ```
///
/// # Memory, and building one in place
///
/// An endpoint holds everything it needs: 500 B per `P`, 136 B per `M` and 21.4 kB besides
/// (with 64 events) at the default `R`, `C`, `W`, `Q`, `O`, `X`, `D` and `S` on a 64-bit host
/// (`size_of::<Endpoint<P, M, E>>()` says exactly). [`Endpoint::new`] returns it by value, so it
/// is built on the stack first, and at low optimisation levels copied again. Where that is too much stack (firmware), start from [`Endpoint::EMPTY`], whose
/// bytes are all zero, so a `static` holding it costs no flash and no start-up copy (it lands in
/// `.bss`), and configure it in place with [`Endpoint::init`]:
///
/// ```
/// use uet_wire::msg::{Endpoint, EndpointConfig};
/// use uet_wire::pdc::ipv4;
/// // In firmware: `static mut EP: Endpoint<8, 8, 32> = Endpoint::EMPTY;` at the top of
/// // cortex-m-rt's `#[entry]` function (which hands it out as a `&'static mut`), or any
/// // `static` cell.
/// let mut ep: Endpoint<8, 8, 32> = Endpoint::EMPTY;
/// assert!(ep.handle_packet(Default::default(), ipv4([10, 0, 0, 2]), &[0; 12]).is_err());
/// ep.init(EndpointConfig::new(ipv4([10, 0, 0, 1]), 1024), 7);
/// assert_eq!(ep.config().mtu, 1024);
/// ```
pub struct Endpoint<
    const P: usize,
    const M: usize,
    const E: usize,
    const R: usize = HELD_RESPONSES,
    const C: usize = 0,
    const W: usize = ORDER_WINDOW,
    const Q: usize = CONTROL_QUEUE,
    const O: usize = ORDER_POOL,
    const X: usize = EXTENSIONS,
    const D: usize = RETURN_DIRECTIONS,
    const S: usize = REQUEST_DIRECTIONS,
> {
    /// The configuration; none until [`Endpoint::init`] (an [`Endpoint::EMPTY`] refuses work).
    cfg: ZeroOption<EndpointConfig>,
    initiators: PdcTable<PeerDest, IniPdc, P>,
    targets: PdcTable<PeerSource, TgtPdc<R, W>, P>,
    /// The return directions of the target PDCs sending read data.
    returns: ReturnPool<D>,
    /// The return directions of the initiator PDCs receiving read data.
    receivers: ReceiverPool<D>,
    /// The state machines of the initiator PDCs with requests outstanding (or about to send).
    senders: SenderPool<S>,
    /// The initiator PDCs waiting for an entry of `senders`, by table slot, oldest first.
    senders_waiting: SlotList,
    senders_waiting_links: [Link; P],
    /// The guaranteed-delivery responses of the target PDCs holding any.
    helds: HeldPool<R, D>,
    /// Room for the target PDCs' messages in progress beyond the two each keeps.
    order_pool: OrderPool<O>,
    msgs: [MsgSlot; M],
    /// The extension headers of the messages in `msgs` that have one.
    extensions: Extensions<X>,
    generations: [u16; M],
    /// The messages with packets not yet sent that no initiator PDC holds, oldest first:
    /// RUDI and UUD messages, read data runs, and messages whose key has no PDC yet (what
    /// `poll_transmit` walks before serving the PDCs).
    unsent: SlotList,
    unsent_links: [Link; M],
    /// The links of the per-PDC lists of message slots: an initiator's started messages or its
    /// queued ones, a target's read data runs (a slot is on one of them at most).
    pdc_links: [Link; M],
    /// The initiator PDCs that can send a new packet of a message (`IniPdc::next_new`, room in
    /// the window), by table slot, served round robin.
    initiators_new: SlotList,
    initiators_new_links: [Link; P],
    /// The initiator and target PDCs with a packet to give (`has_pending`), by table slot, in the
    /// order `poll_transmit` serves them (one served goes to the back).
    initiators_ready: SlotList,
    initiators_ready_links: [Link; P],
    /// The open initiator PDCs with nothing to do (kept open, see
    /// [`EndpointConfig::close_when_idle`]), by table slot, idle longest first: with the table
    /// full, the first closes to make room for a key without a PDC.
    initiators_idle: SlotList,
    initiators_idle_links: [Link; P],
    /// The initiator PDC closed last to make room, while it closes: one at a time (until its
    /// close times out).
    evicting: Option<u16>,
    targets_ready: SlotList,
    targets_ready_links: [Link; P],
    /// The target PDCs with nothing to do (`TgtPdc::kept_idle`), by table slot, idle longest
    /// first: with the table full, a SYN asks the first to close.
    targets_idle: SlotList,
    targets_idle_links: [Link; P],
    /// The target PDC asked last to close to make room, while it closes: one at a time (until
    /// its CLOSE_REQ goes unanswered for `Close_REQ_Time`).
    evicting_target: Option<u16>,
    /// The deadlines of the initiator and target PDCs (`poll_timeout`), by table slot, and of the
    /// READs waiting for data, by message slot (see [`Failure::ReadTimeout`]).
    initiator_timers: TimerHeap<P>,
    target_timers: TimerHeap<P>,
    read_timers: TimerHeap<M>,
    /// The empty message slots, the next one to fill last.
    free_slots: FreeSlots<M>,
    next_seq: u64,
    events: heapless::Deque<Event, E>,
    /// Random bits for start PSNs (the caller seeds it; time and randomness are inputs).
    rng: u64,
    /// The secure domain's `Expected_PSN`: target PDCs under [`SecureStart::Expected0Rtt`]
    /// accept start PSNs at or after it; it moves past every target PDC that closes.
    expected_psn: u32,
    /// The latest time a call gave (for work `poll_event` triggers).
    now: Instant,
    /// NACKs waiting to go: (destination, NACK).
    nacks: heapless::Deque<(IpAddr, Nack), Q>,
    /// RUDI packets sent and not yet answered.
    rudi: heapless::Vec<RudiOut, Q>,
    next_pkt_id: u32,
    /// Message ids of RUDI and UUD messages (no PDC numbers them).
    next_connectionless_id: u16,
    /// RUDI responses waiting to go.
    rudi_responses: heapless::Deque<(IpAddr, Rudi, Response), Q>,
    /// Target PDCs closed lately, newest last.
    closed_targets: heapless::Deque<ClosedTarget, CLOSED_MEMORY>,
    /// In a secure domain: per destination, the furthest first-PSN-after of its initiator PDCs
    /// that closed (newest last), so the next one starts beyond it (see `random_start_psn`).
    start_hints: heapless::Vec<(IpAddr, u32), CLOSED_MEMORY>,
    stats: EndpointStats,
    /// A completed message waits for room in the event queue: the next event polled settles it.
    unsettled: bool,
    /// The initiator PDC a new message was last found for.
    last_pdc: Option<u16>,
    /// A message slot whose key had no initiator PDC when last looked up, none having opened
    /// and the message still there: its key is not looked up again (a run of messages to a
    /// closed key would hash the key for each). With its key's bucket in the initiators' key
    /// index, where the PDC that opens for it goes.
    absent_for: Option<(u16, u16)>,
    /// The congestion-control contexts, the links of their lists of initiator PDCs waiting for
    /// the window (by table slot), and what the last call did to an initiator for its CCC.
    cccs: Cccs<C>,
    blocked_links: [Link; P],
    cc_signal: CcSignal,
    /// The receiver's RCCC pull pacer.
    pulls: Pulls<C>,
}

/// What an endpoint draws from its seed, each by its own [`derive`].
#[derive(Clone, Copy)]
enum Derived {
    StartPsns = 1,
    PacketIds,
    InitiatorKey0,
    InitiatorKey1,
    TargetKey0,
    TargetKey1,
}

/// A value for `what` from `seed`: SipHash-1-3 keyed by the seed, so values that go on the wire
/// (start PSNs come from a linear generator, and tell its state) reveal neither the seed nor
/// the others, the PDC tables' hash keys among them.
fn derive(seed: u64, what: Derived) -> u64 {
    use core::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(seed, !seed);
    h.write_u8(what as u8);
    h.finish()
}

/// The configuration an endpoint holds, or [`EndpointConfig::UNCONFIGURED`] (a function of the
/// field alone, so a caller may hold another field mutably).
#[inline(always)]
const fn configured(cfg: &ZeroOption<EndpointConfig>) -> &EndpointConfig {
    match cfg {
        ZeroOption::Some(cfg) => cfg,
        ZeroOption::None => &EndpointConfig::UNCONFIGURED,
    }
}

/// An initiator PDC's key in the endpoint's table: the fields of [`InitiatorKey`] but the
/// source, which is always the endpoint's own address (16 bytes a PDC less).
///
/// [`InitiatorKey`]: crate::pdc::InitiatorKey
#[derive(Clone, Copy, Debug, Eq)]
struct PeerDest {
    mode: DeliveryMode,
    job_id: u32,
    dst: IpAddr,
    tc: u8,
}

// The derived equality, field for field, with the address compared as one word (`same_addr`):
// the table compares keys on every lookup.
impl PartialEq for PeerDest {
    fn eq(&self, other: &Self) -> bool {
        same_addr(&self.dst, &other.dst)
            && self.job_id == other.job_id
            && self.mode == other.mode
            && self.tc == other.tc
    }
}

// Every field, in one write of 22 bytes (see `PeerSource`'s). Equal keys write equal bytes.
impl core::hash::Hash for PeerDest {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        let mut b = [0u8; 22];
        let (dst, rest) = b.split_at_mut(16);
        dst.copy_from_slice(&self.dst);
        let (job, rest) = rest.split_at_mut(4);
        job.copy_from_slice(&self.job_id.to_le_bytes());
        rest.copy_from_slice(&[self.mode as u8, self.tc]);
        h.write(&b);
    }
}

/// A target PDC's key in the endpoint's table: the fields of [`TargetKey`] but the destination,
/// which is always the endpoint's own address (16 bytes a PDC less).
///
/// [`TargetKey`]: crate::pdc::TargetKey
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PeerSource {
    src: IpAddr,
    spdcid: u16,
}

// Every field, in one write of 18 bytes: the table's keyed hash (SipHash-1-3) takes a byte run
// eight bytes at a time, where the derived `Hash` writes each field and the address's length
// on its own, each a call that buffers its bytes (1 % of a 64-byte UET message's instructions
// on a Cortex-M4, where PDCs open and close). Equal keys write equal bytes.
impl core::hash::Hash for PeerSource {
    fn hash<H: core::hash::Hasher>(&self, h: &mut H) {
        let mut b = [0u8; 18];
        let (src, id) = b.split_at_mut(16);
        src.copy_from_slice(&self.src);
        id.copy_from_slice(&self.spdcid.to_le_bytes());
        h.write(&b);
    }
}

/// A target PDC closed lately: a SYN request for its key and start PSN before `until` is a late
/// copy of one of its packets.
#[derive(Clone, Copy, Debug)]
struct ClosedTarget {
    key: PeerSource,
    start_psn: u32,
    until: Instant,
}

/// Closed target PDCs an endpoint remembers (the oldest is forgotten first).
const CLOSED_MEMORY: usize = 16;

/// PDCs whose timers `handle_timeout` runs per batch (what it collects before running them).
const TIMER_BATCH: usize = 32;

/// A RUDI packet waiting for its response.
#[derive(Clone, Copy, Debug)]
struct RudiOut {
    pkt_id: u32,
    slot: u16,
    index: u32,
    resend_at: Instant,
    retries: u8,
    /// Resent because of a NACK (not a timeout) when `resend_at` comes.
    nacked: bool,
}

impl<
    const P: usize,
    const M: usize,
    const E: usize,
    const R: usize,
    const C: usize,
    const W: usize,
    const Q: usize,
    const O: usize,
    const X: usize,
    const D: usize,
    const S: usize,
> Endpoint<P, M, E, R, C, W, Q, O, X, D, S>
{
    const SIZES_OK: () = assert!(
        P >= 2
            && P <= 0x7FFF
            && M >= 1
            && M <= 1 << 15
            && W >= 2
            && W <= 1 << 15
            && E > W
            && Q >= 1
            && O <= 1 << 15
            && X <= 1 << 15
            && R >= 1
            && D >= 1
            && D <= 1 << 15
            && S >= 1
            && S <= 1 << 15,
        "Endpoint<P, M, E, R, C, W, Q, O, X, D, S>: P (PDCs each way) must be 2 to 32767, M (messages) 1 \
         to 32768, R (held responses per block, default 4) at least 1, W (messages in progress per \
         target PDC, default 16) 2 to 32768, E (events) more than \
         W, Q (control queues, default 16) at least 1, O (shared messages in progress, default 256) \
         at most 32768, X (extension headers, default 16) at most 32768, D (return directions, \
         default 16) 1 to 32768, and S (request directions, default 16) 1 to 32768"
    );

    /// An endpoint that is not configured: every byte zero, so a `static` holding it lands in
    /// `.bss`. It holds nothing, refuses messages and packets
    /// ([`EndpointError::Unconfigured`]) and has nothing to send until [`Endpoint::init`].
    pub const EMPTY: Self = {
        let () = Self::SIZES_OK;
        Endpoint {
            cfg: ZeroOption::NONE,
            initiators: PdcTable::EMPTY,
            targets: PdcTable::EMPTY,
            returns: ReturnPool::EMPTY,
            receivers: ReceiverPool::EMPTY,
            senders: SenderPool::EMPTY,
            senders_waiting: SlotList::EMPTY,
            senders_waiting_links: [Link::UNLINKED; P],
            helds: HeldPool::EMPTY,
            order_pool: OrderPool::EMPTY,
            msgs: [const { MsgSlot::NONE }; M],
            extensions: Extensions::EMPTY,
            generations: [0; M],
            unsent: SlotList::EMPTY,
            unsent_links: [Link::UNLINKED; M],
            pdc_links: [Link::UNLINKED; M],
            initiators_new: SlotList::EMPTY,
            initiators_new_links: [Link::UNLINKED; P],
            initiators_ready: SlotList::EMPTY,
            initiators_ready_links: [Link::UNLINKED; P],
            initiators_idle: SlotList::EMPTY,
            initiators_idle_links: [Link::UNLINKED; P],
            evicting: None,
            targets_ready: SlotList::EMPTY,
            targets_ready_links: [Link::UNLINKED; P],
            targets_idle: SlotList::EMPTY,
            targets_idle_links: [Link::UNLINKED; P],
            evicting_target: None,
            initiator_timers: TimerHeap::EMPTY,
            target_timers: TimerHeap::EMPTY,
            read_timers: TimerHeap::EMPTY,
            free_slots: FreeSlots::EMPTY,
            next_seq: 0,
            events: heapless::Deque::new(),
            rng: 0,
            expected_psn: 0,
            now: Instant::ZERO,
            nacks: heapless::Deque::new(),
            rudi: heapless::Vec::new(),
            next_pkt_id: 0,
            next_connectionless_id: 0,
            rudi_responses: heapless::Deque::new(),
            closed_targets: heapless::Deque::new(),
            start_hints: heapless::Vec::new(),
            stats: EndpointStats::ZERO,
            unsettled: false,
            last_pdc: None,
            absent_for: None,
            cccs: Cccs::EMPTY,
            blocked_links: [Link::UNLINKED; P],
            cc_signal: CcSignal::None,
            pulls: Pulls::EMPTY,
        }
    };

    /// An endpoint with no PDC and no message. `seed` is the endpoint's randomness: its start
    /// PSNs, RUDI packet ids and the keys of its PDC tables' hash are drawn from it, each by a
    /// keyed hash, so what goes on the wire reveals neither the seed nor the keys. Where peers
    /// may be hostile, draw it from a source of randomness: a peer who knows it can choose
    /// addresses and PDC ids that make lookups slow. (Built on the stack; see
    /// [`Endpoint::init`] for building one in place.)
    pub fn new(cfg: EndpointConfig, seed: u64) -> Self {
        let mut ep = Self::EMPTY;
        ep.init(cfg, seed);
        ep
    }

    /// Makes this endpoint what [`Endpoint::new`]`(cfg, seed)` returns, in place: without a
    /// second endpoint on the stack. Whatever it held is forgotten (no events; handles of its
    /// messages may name new ones). On an [`Endpoint::EMPTY`] in a `static`, this is how firmware
    /// builds one.
    pub fn init(&mut self, mut cfg: EndpointConfig, seed: u64) {
        // A secure PDC closes before its PSNs wrap (UE 1.0 §3.7; uet-ref-prov's `uet_pds.c`:
        // "always enabled on secured PDCs"), or a replayed packet of the first lap would be new.
        cfg.pdc.limit_psn_range |= cfg.secure.is_some();
        self.pulls = Pulls::new(cfg.cms);
        self.cfg = ZeroOption::Some(cfg);
        // One id names one PDC of this node (ACKs and NACKs travel both ways): initiator ids in
        // the lower half, target ids in the upper.
        self.initiators.reset(1, 0x7FFF);
        self.targets.reset(0x8000, 0xFFFF);
        self.order_pool.clear();
        self.returns.clear();
        self.receivers.clear();
        self.senders.clear();
        self.helds.clear();
        // Peers choose the keys the tables index (addresses, PDC ids): key their hash.
        self.initiators.set_hash_key([derive(seed, Derived::InitiatorKey0), derive(seed, Derived::InitiatorKey1)]);
        self.targets.set_hash_key([derive(seed, Derived::TargetKey0), derive(seed, Derived::TargetKey1)]);
        self.msgs.iter_mut().for_each(MsgSlot::clear);
        self.extensions.clear();
        self.generations.fill(0);
        for list in [
            &mut self.unsent,
            &mut self.initiators_new,
            &mut self.initiators_ready,
            &mut self.initiators_idle,
            &mut self.targets_ready,
            &mut self.targets_idle,
            &mut self.senders_waiting,
        ] {
            *list = SlotList::EMPTY;
        }
        for links in [
            &mut self.unsent_links[..],
            &mut self.pdc_links,
            &mut self.initiators_new_links,
            &mut self.initiators_ready_links,
            &mut self.initiators_idle_links,
            &mut self.targets_ready_links,
            &mut self.targets_idle_links,
            &mut self.blocked_links,
            &mut self.senders_waiting_links,
        ] {
            links.fill(Link::UNLINKED);
        }
        self.initiator_timers.clear();
        self.target_timers.clear();
        self.read_timers.clear();
        self.free_slots.clear();
        self.evicting = None;
        self.evicting_target = None;
        self.next_seq = 0;
        self.events.clear();
        self.rng = derive(seed, Derived::StartPsns) | 1;
        self.expected_psn = SECURE_START_MIN;
        self.now = Instant::ZERO;
        self.nacks.clear();
        self.rudi.clear();
        self.next_pkt_id = (derive(seed, Derived::PacketIds) >> 32) as u32;
        self.next_connectionless_id = 0;
        self.rudi_responses.clear();
        self.closed_targets.clear();
        self.start_hints.clear();
        self.stats = EndpointStats::ZERO;
        self.unsettled = false;
        self.last_pdc = None;
        self.absent_for = None;
        self.cccs.clear();
        self.cc_signal = CcSignal::None;
    }

    /// What the endpoint counted so far: refusals, resends by cause, NACKs by code, the
    /// round-trip time.
    pub const fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// The configuration ([`EndpointConfig::UNCONFIGURED`] for an [`Endpoint::EMPTY`]).
    pub const fn config(&self) -> &EndpointConfig {
        configured(&self.cfg)
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
        self.free_slots.used()
    }

    /// Whether nothing is left to do: no message queued or in flight, no PDC open, no packet or
    /// event waiting. An idle endpoint has no deadline either.
    pub fn is_idle(&self) -> bool {
        self.free_slots.used() == 0
            && self.initiators.is_empty()
            && self.targets.is_empty()
            && self.nacks.is_empty()
            && self.rudi.is_empty()
            && self.rudi_responses.is_empty()
            && self.events.is_empty()
    }

    /// Withdraws a message that has not started (no packet of it went out): it is forgotten, as
    /// if never sent, and reports no event.
    ///
    /// A message of requests on a PDC (RUD or ROD) that started but has packets not yet sent is
    /// cut short instead: the rest of it is not sent, and a MSG_ERROR goes in their place (SES
    /// opcode 0x0F: no SOM, EOM, no payload, `message_offset` the bytes sent; the endpoint sends
    /// one by itself after an error response, [`Failure::Refused`], as uet-ref-prov's initiator
    /// does, and a target then ends the message with what arrived). The packets that went out
    /// are still resent until acknowledged, so the payload they name must stay readable; once
    /// they and the MSG_ERROR are, the message fails with [`Failure::Cancelled`] (the target's
    /// answer to the MSG_ERROR, if it is not the default, comes first as [`Event::Response`]:
    /// uet-ref-prov's is OP_VIOLATION when the bytes sent had all arrived, else INITIATOR_ERR).
    /// Only once its first packet is acknowledged ([`EndpointError::Unacknowledged`] before; no
    /// event says when it is, so call again after later packets arrive; *project-defined*, as
    /// uet-ref-prov's initiator cuts only after an error response, which names a packet the
    /// target has): uet-ref-prov's target refuses a MSG_ERROR for a message it has no packet of,
    /// keeping no record, so the data arriving after it would wait there for bytes that never
    /// come.
    ///
    /// Any other message that started ([`EndpointError::Started`]) completes or fails as usual;
    /// an unknown handle is [`EndpointError::UnknownMessage`].
    pub fn cancel(&mut self, msg: MsgHandle) -> Result<Cancel, EndpointError> {
        let slot = usize::from(msg.slot);
        let m = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut).filter(|m| m.generation == msg.generation);
        match m {
            None => Err(EndpointError::UnknownMessage),
            Some(m) if m.sent > 0 => {
                let on_pdc = m.service.pdc_mode().is_some();
                let (Some(id), MsgKind::Request, true, false) = (m.pdc, m.kind, on_pdc, m.all_sent()) else {
                    return Err(EndpointError::Started);
                };
                let first = m.first_psn;
                if !self.sends_requests(id) {
                    return Err(EndpointError::Started);
                }
                let sender = self.initiators.get(id).map(|p| self.senders.sender(&p.pdc));
                if !sender.is_some_and(|s| s.is_acked(first)) {
                    return Err(EndpointError::Unacknowledged);
                }
                let Some(m) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut) else {
                    return Err(EndpointError::UnknownMessage);
                };
                m.kind = MsgKind::Cancelled { cut: m.sent, why: Failure::Cancelled };
                self.after_initiator_change(self.now, id);
                Ok(Cancel::CutShort)
            }
            Some(m) => {
                let pdc = m.pdc;
                self.free_msg(slot);
                // The PDC it was queued on may have nothing left to do (close when idle).
                if let Some(id) = pdc {
                    self.after_initiator_change(self.now, id);
                }
                Ok(Cancel::Withdrawn)
            }
        }
    }

    /// Whether initiator PDC `id` still sends requests: a PDC past Quiesce (closing, or failed)
    /// sends none, and its messages end with it.
    fn sends_requests(&self, id: u16) -> bool {
        let state = self.initiators.get(id).map(|p| self.senders.sender(&p.pdc).state());
        matches!(state, Some(InitiatorState::Creating | InitiatorState::Established | InitiatorState::Quiesce))
    }

    /// A start PSN for a new PDC to `dst`: random; in a secure domain in [2^16, 2^31), or, after
    /// a PDC to `dst` closed, 2^16 to 2^17 past the last PSN it used. *Project-defined*: the
    /// target's `Expected_PSN` moved past that PDC's CLOSE, so a start beyond it opens under
    /// 0-RTT without a restart (the reference provider's initiator learns `Expected_PSN` from its
    /// own ACK flag instead, which this crate does not send; uet-ref-prov `uet_pds.c` also asks
    /// for a start at least 2^16 from the last PSN used).
    fn random_start_psn(&mut self, dst: &IpAddr) -> u32 {
        let r = self.random_u32();
        if self.config().secure.is_none() {
            return r;
        }
        match self.start_hints.iter().find(|(a, _)| same_addr(a, dst)) {
            Some(&(_, next)) => next.wrapping_add(SECURE_START_MIN).wrapping_add(r % SECURE_START_MIN),
            None => SECURE_START_MIN + r % (SECURE_START_END - SECURE_START_MIN),
        }
    }

    /// Remembers where the initiator PDC to `dst` that is closing stopped (secure domains only).
    pub(super) fn remember_start_hint(&mut self, dst: IpAddr, next_psn: u32) {
        if self.config().secure.is_none() {
            return;
        }
        // One entry per destination, oldest first, keeping the furthest PSN (PDCs to one
        // destination close in any order).
        let mut next_psn = next_psn;
        // (`retain`, not `remove`: `remove` asserts its index, and the firmware image must link
        // no panic.)
        let mut old = None;
        self.start_hints.retain(|&(a, psn)| {
            let same = same_addr(&a, &dst);
            old = old.or(same.then_some(psn));
            !same
        });
        match old {
            Some(old) if psn_after(old, next_psn) => next_psn = old,
            Some(_) => {}
            None if self.start_hints.is_full() => {
                let mut first = true;
                self.start_hints.retain(|_| !core::mem::take(&mut first));
            }
            None => {}
        }
        let _ = self.start_hints.push((dst, next_psn));
    }

    /// How a new target PDC accepts its start PSN.
    fn start_policy(&mut self) -> StartPolicy {
        match self.config().secure.map(|s| s.start) {
            None => StartPolicy::Open,
            Some(SecureStart::Expected0Rtt) => StartPolicy::Expected0Rtt { expected_psn: self.expected_psn },
            Some(SecureStart::Random1Rtt) => {
                let r = self.random_u32();
                StartPolicy::Random1Rtt { start_psn: SECURE_START_MIN + r % (SECURE_START_END - SECURE_START_MIN) }
            }
        }
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

    /// Queues a message; its packets go out through [`Endpoint::poll_transmit`]. Refused, with
    /// nothing changed, when every message slot but the one kept for read data is in use
    /// ([`EndpointError::TooManyMessages`]; see [`Endpoint`]'s `M`),
    /// when it has an extension header and every one of the `X` the endpoint holds is in use
    /// ([`EndpointError::TooManyExtensions`]), or when its header cannot go on the wire
    /// ([`EndpointError::Header`]: a field beyond its width, an extension that is not its
    /// opcode's).
    pub fn send(&mut self, desc: MessageDesc) -> Result<MsgHandle, EndpointError> {
        if self.cfg.is_none() {
            return Err(EndpointError::Unconfigured);
        }
        let segments = Segmenter::new(desc.len, self.config().mtu).map_err(EndpointError::Segment)?;
        if desc.service == Service::Uud && segments.packets() > 1 {
            return Err(EndpointError::UudTooLong);
        }
        if desc.header.common.opcode == crate::ses::Opcode::Read && desc.service.pdc_mode().is_none() {
            return Err(EndpointError::ReadWithoutPdc);
        }
        let one_packet = desc.len <= Segment::CAS_OPERANDS && segments.packets() == 1;
        if !Segment::carries_payload(desc.header.ext.as_ref()) && !one_packet {
            return Err(EndpointError::Header(Error::Mismatch {
                field: "compare-and-swap length (its extension carries at most 32 bytes, in one packet)",
            }));
        }
        // Its first packet's SES header gets the checks writing it makes here, so that a field
        // out of range fails this call instead of every `poll_transmit` to come (the other
        // packets differ only in their tails, which the endpoint fills).
        if let Some(first) = segments.segment(0) {
            first.standard_header(&desc.header, desc.len).check().map_err(EndpointError::Header)?;
        }
        // The last free slot is kept for read data (see `M`).
        if M > 1 && self.free_slots.used() + 1 >= M {
            return Err(EndpointError::TooManyMessages);
        }
        let slot = usize::from(self.free_slots.next().ok_or(EndpointError::TooManyMessages)?);
        // Nothing below fails: the extension's entry is the last thing that can refuse.
        let ext = self.extensions.keep(desc.header.ext).ok_or(EndpointError::TooManyExtensions)?;
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
            let kind = if is_read(&desc) { MsgKind::Read { arrived: 0 } } else { MsgKind::Request };
            *m = MsgSlot::some(SendMsg::new(generation, kind, &desc, ext, segments.mtu(), seq, message_id));
        }
        self.free_slots.take();
        // A message for a PDC waits in that PDC's queue; one whose key has none yet waits for
        // `poll_transmit` to open it.
        let key = peer_dest(desc.service, desc.header.common.job_id, desc.dst, desc.tc);
        match self.find_pdc(&key, slot).ok().filter(|_| desc.service.pdc_mode().is_some()) {
            Some(id) => self.queue_on(id, slot),
            None => self.unsent.insert(&mut self.unsent_links, slot as u16, |_| true),
        }
        Ok(MsgHandle { slot: slot as u16, generation, user: desc.user })
    }

    /// The open initiator PDC of `key`, the key of message `slot`; else the key's bucket in the
    /// initiators' key index, where the PDC that opens for it goes.
    fn find_pdc(&mut self, key: &PeerDest, slot: usize) -> Result<u16, usize> {
        // Messages come in runs to one key: the PDC found last is tried before the key index,
        // and a key found without one is not looked up again while its message waits and no
        // PDC opens (`absent_for`).
        if let Some(id) = self.last_pdc.filter(|&id| self.initiators.key(id) == Some(key)) {
            return Ok(id);
        }
        let absent = self.absent_for.and_then(|(s, bucket)| {
            let m = self.msgs.get(usize::from(s))?.as_ref()?;
            (m.key() == *key).then_some(usize::from(bucket))
        });
        if let Some(bucket) = absent {
            return Err(bucket);
        }
        let bucket = self.initiators.bucket_of(key);
        match self.initiators.find_in(key, bucket) {
            Some(id) => {
                self.last_pdc = Some(id);
                Ok(id)
            }
            None => {
                // (A bucket is below `P`, at most 32 767.)
                self.absent_for = Some((slot as u16, bucket as u16));
                Err(bucket)
            }
        }
    }

    /// Queues message `slot`, not started, on initiator PDC `id`, in its place by age.
    fn queue_on(&mut self, id: u16, slot: usize) {
        let Some(seq) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut).map(|m| {
            m.pdc = Some(id);
            m.seq
        }) else {
            return;
        };
        let turns = self.turns();
        let Some(p) = self.initiators.get_mut(id) else { return };
        let msgs = &self.msgs;
        let older = |s: u16| msgs.get(usize::from(s)).and_then(MsgSlot::as_ref).is_some_and(|o| o.seq < seq);
        p.queued.insert(&mut self.pdc_links, slot as u16, older);
        let core = self.senders.sender(&p.pdc);
        // A close that waits for a request direction is no longer wanted: the PDC has a message
        // to send (as `after_initiator_change` decides once it settles).
        let withdrawn =
            p.close_wanted && matches!(core.state(), InitiatorState::Creating | InitiatorState::Established);
        let new = p.next_new(core.state(), turns).is_some() && core.can_send(&configured(&self.cfg).pdc);
        let holder = matches!(p.pdc, SenderAt::Pooled(_));
        if withdrawn || (holder && turns.yields && !new) {
            // More than whether it has new packets changed: its close, or (a holder whose turn
            // ended while others wait) whether it gives its request direction on, which it does
            // once idle. Settled whole.
            p.close_wanted &= !withdrawn;
            self.refresh_initiator(id, false);
            return;
        }
        // Only whether it has new packets can have changed (it had one if it waits for its
        // CCC's window, and still waits), and it is not idle.
        let close_wanted = p.close_wanted;
        let index = self.initiators.index_of(id).map(|i| i as u16);
        if let Some(index) = index {
            SlotList::place(index, false, &mut self.initiators_idle, &mut self.initiators_idle_links);
        }
        if let Some(index) = index.filter(|&i| !SlotList::contains(&self.blocked_links, i)) {
            self.place_new(index, new, close_wanted, holder);
        }
    }

    /// What bounds the new messages of each initiator PDC now.
    fn turns(&self) -> Turns {
        Turns { limit: self.config().messages_per_pdc, yields: self.senders_waiting.first().is_some() }
    }

    /// Lists initiator PDC `index` by what it has to send: a new packet (`new`, its CCC's window
    /// open) goes on the list of PDCs taking turns while it holds its request direction, or one
    /// is free and no PDC waits for one; else it waits for one, as does a PDC whose close
    /// (`close_wanted`) waits for one.
    fn place_new(&mut self, index: u16, new: bool, close_wanted: bool, holder: bool) {
        let waiting = SlotList::contains(&self.senders_waiting_links, index);
        let may_take = holder || (!waiting && self.senders.has_free() && self.senders_waiting.first().is_none());
        let waits = !holder && (close_wanted || (new && !may_take));
        if waits && !waiting {
            self.stats.request_direction_waits = self.stats.request_direction_waits.wrapping_add(1);
        }
        SlotList::place(index, new && may_take, &mut self.initiators_new, &mut self.initiators_new_links);
        SlotList::place(index, waits, &mut self.senders_waiting, &mut self.senders_waiting_links);
    }

    /// Gives the free request directions to the initiator PDCs waiting for one, oldest first (a
    /// PDC that gives its back at once, its close refused, leaves it to the next).
    fn hand_off(&mut self) {
        while self.senders.has_free() {
            let Some(index) = self.senders_waiting.first() else { return };
            self.senders_waiting.unlink(&mut self.senders_waiting_links, index);
            let Some(id) = self.initiators.id_at(usize::from(index)) else { continue };
            if let Some(p) = self.initiators.get_mut(id) {
                if self.senders.take(&mut p.pdc).is_some() {
                    p.took_turn = false;
                }
            }
            self.refresh_lists(id, false);
        }
    }

    /// Closes initiator PDC `id` (UE 1.0 §3.5.8.3). A PDC whose CLOSE takes a PSN needs a
    /// request direction: without its own and with none free, the close waits for one.
    fn close_initiator(&mut self, now: Instant, id: u16) {
        let cfg = &configured(&self.cfg).pdc;
        let Some(p) = self.initiators.get_mut(id) else { return };
        let ret = self.receivers.get_mut(p.ret);
        let holder = matches!(p.pdc, SenderAt::Pooled(_));
        let closed = self.senders.with_kept(&mut p.pdc, |pdc| {
            let _ = pdc.close(ret, now, cfg);
        });
        if !holder && matches!(p.pdc, SenderAt::Pooled(_)) {
            p.took_turn = false;
        }
        p.close_wanted = closed.is_none();
    }

    /// Hands the messages queued on initiator PDC `id`, about to be removed, back to the unsent
    /// list, so that `poll_transmit` opens a new PDC for them.
    fn requeue_from(&mut self, id: u16) {
        while let Some(slot) = self.initiators.get(id).and_then(|p| p.queued.first()) {
            if let Some(p) = self.initiators.get_mut(id) {
                p.queued.unlink(&mut self.pdc_links, slot);
            }
            let Some(m) = self.msgs.get_mut(usize::from(slot)).and_then(MsgSlot::as_mut) else { continue };
            m.pdc = None;
            let seq = m.seq;
            let msgs = &self.msgs;
            let older = |s: u16| msgs.get(usize::from(s)).and_then(MsgSlot::as_ref).is_some_and(|o| o.seq < seq);
            self.unsent.insert(&mut self.unsent_links, slot, older);
        }
    }

    /// Counts a packet of message `slot` sent; it leaves the unsent list with its last packet.
    fn count_sent(&mut self, slot: usize) {
        let Some(m) = self.msgs.get_mut(slot).and_then(MsgSlot::as_mut) else { return };
        m.sent += 1;
        if m.all_sent() {
            self.unsent.unlink(&mut self.unsent_links, slot as u16);
        }
    }

    /// The slots of the messages started on initiator PDC `id`, in the order they started.
    fn started_on(&self, id: u16) -> impl Iterator<Item = usize> + '_ {
        let list = self.initiators.get(id).map(|p| p.started).unwrap_or_default();
        list.iter(&self.pdc_links).map(usize::from)
    }

    /// Puts initiator PDC `id` on the ready list while it has a packet to give and on the list of
    /// PDCs with new packets while it can send one, else takes it off, and files its deadline;
    /// call after anything that may change any of these (`gone`: it is about to be removed).
    fn refresh_initiator(&mut self, id: u16, gone: bool) {
        if self.refresh_lists(id, gone) {
            self.hand_off();
        }
    }

    /// [`Endpoint::refresh_initiator`] but for handing on the request direction it gave back, if
    /// it did (returns whether).
    fn refresh_lists(&mut self, id: u16, gone: bool) -> bool {
        let Some(index) = self.initiators.index_of(id).map(|i| i as u16) else { return false };
        // Settled with its CCC first: SLEEK may mark packets lost and move the probe timer, and a
        // window that opens lists the PDCs that waited for it.
        let open = self.cc_settle(id, gone);
        let turns = self.turns();
        let cfg = &configured(&self.cfg).pdc;
        let mut freed = false;
        if let Some(e) = self.initiators.get_mut(id) {
            // Idle parts go back to their pools; a gone PDC's go whatever they held.
            if gone {
                self.receivers.release(core::mem::replace(&mut e.ret, ReceiverAt::Idle(IdleReceiver::new(0))));
                freed = matches!(e.pdc, SenderAt::Pooled(_));
                // Not left naming an entry another PDC may take.
                self.senders.release(core::mem::replace(&mut e.pdc, SenderAt::Idle(IdleInitiator::ZERO)));
            } else {
                self.receivers.settle(&mut e.ret);
                if e.close_wanted && (matches!(e.pdc, SenderAt::Pooled(_)) || self.senders.has_free()) {
                    // The close waited for a request direction: there is one now.
                    if let Some(pdc) = self.senders.take(&mut e.pdc) {
                        let _ = pdc.close(self.receivers.get_mut(e.ret), self.now, cfg);
                        e.close_wanted = false;
                    }
                }
                // A request direction goes back once idle with nothing new to send, or its turn
                // over while others wait, or its CCC's window shut.
                let holder = matches!(e.pdc, SenderAt::Pooled(_));
                let state = self.senders.state(&e.pdc);
                if holder && !e.close_wanted && (e.next_new(state, turns).is_none() || !open) {
                    self.senders.settle(&mut e.pdc);
                    freed = matches!(e.pdc, SenderAt::Idle(_));
                }
                if freed || !holder {
                    e.took_turn = false;
                }
            }
        }
        let e = self.initiators.get(id).filter(|_| !gone);
        let (mut ready, mut deadline, mut new, mut holder, mut close_wanted) = (false, None, false, false, false);
        let mut idle = false;
        if let Some(e) = e {
            let core = self.senders.sender(&e.pdc);
            ready = core.has_pending(self.receivers.get(e.ret));
            deadline = core.poll_timeout();
            new = e.next_new(core.state(), turns).is_some() && core.can_send(cfg);
            holder = matches!(e.pdc, SenderAt::Pooled(_));
            close_wanted = e.close_wanted;
            idle = e.kept_idle(core.state()) && !ready && deadline.is_none();
        }
        self.cc_place(id, index, new && !open);
        SlotList::place(index, ready, &mut self.initiators_ready, &mut self.initiators_ready_links);
        SlotList::place(index, idle, &mut self.initiators_idle, &mut self.initiators_idle_links);
        self.place_new(index, new && open, close_wanted, holder);
        self.initiator_timers.set(index, deadline);
        freed
    }

    /// [`Endpoint::refresh_initiator`] for target PDC `id`.
    fn refresh_target(&mut self, id: u16, gone: bool) {
        let Some(index) = self.targets.index_of(id).map(|i| i as u16) else { return };
        if gone {
            self.release_credit(id);
        }
        let (mut ready, mut deadline, mut idle) = (false, None, false);
        if let Some(t) = self.targets.get_mut(id).filter(|_| !gone) {
            // An idle return direction goes back to the pool.
            self.returns.settle(&mut t.ret);
            let ret = self.returns.get(t.ret);
            let pending = self.helds.with(&mut t.held, &mut t.own, |held| t.pdc.has_pending(held, ret));
            (ready, deadline) = (pending, t.pdc.poll_timeout(ret));
            idle = t.kept_idle() && !ready;
        }
        SlotList::place(index, ready, &mut self.targets_ready, &mut self.targets_ready_links);
        SlotList::place(index, idle, &mut self.targets_idle, &mut self.targets_idle_links);
        self.target_timers.set(index, deadline);
    }

    /// After `poll_transmit` gave `None`: no PDC off the ready lists has a packet to give (each
    /// is tried on a copy) but one whose deadline is due, which `handle_timeout` puts back, and
    /// every index agrees with the state it summarises ([`Endpoint::check_invariants`]). Tests
    /// call it to show that the lists miss nothing.
    #[cfg(test)]
    fn check_ready_lists(&self, now: Instant) {
        assert_eq!(self.check_invariants(), Ok(()));
        for (id, p) in self.initiators.iter() {
            let listed = self
                .initiators
                .index_of(id)
                .is_some_and(|i| SlotList::contains(&self.initiators_ready_links, i as u16));
            let mut core = self.senders.view(p.pdc).clone();
            let due = core.poll_timeout().is_some_and(|t| t <= now);
            let mut ret = self.receivers.get(p.ret).cloned();
            assert!(
                listed || due || core.poll_transmit(ret.as_mut(), now).is_none(),
                "initiator {id} has a packet but is not ready"
            );
        }
        for (id, t) in self.targets.iter() {
            let listed =
                self.targets.index_of(id).is_some_and(|i| SlotList::contains(&self.targets_ready_links, i as u16));
            let mut ret = self.returns.get(t.ret).cloned();
            let (mut own, mut block) = (t.own.clone(), self.helds.block(t.held).cloned());
            let mut held = crate::pdc::held::Tiered { own: &mut own, block: block.as_mut(), spare: false };
            let due = t.pdc.poll_timeout(ret.as_ref()).is_some_and(|t| t <= now);
            assert!(
                listed || due || t.pdc.clone().poll_transmit(&mut held, ret.as_mut(), now).is_none(),
                "target {id} has a packet but is not ready"
            );
        }
    }

    /// The slots of the read data runs of target PDC `id`, oldest first.
    fn runs_on(&self, id: u16) -> impl Iterator<Item = usize> + '_ {
        let list = self.targets.get(id).map(|t| t.runs).unwrap_or_default();
        list.iter(&self.pdc_links).map(usize::from)
    }

    /// Empties message slot `slot` (in place: the message is not moved out). Its PDC may take a
    /// queued message now: the caller refreshes it (`after_initiator_change` does).
    fn free_msg(&mut self, slot: usize) {
        let Some(m) = self.msgs.get_mut(slot) else { return };
        let Some((pdc, kind, started, ext)) = m.as_ref().map(|m| (m.pdc, m.kind, m.sent > 0, m.ext)) else { return };
        m.clear();
        if self.absent_for.is_some_and(|(s, _)| usize::from(s) == slot) {
            // The slot may take a message for another key, which may have a PDC.
            self.absent_for = None;
        }
        self.extensions.give(ext);
        self.free_slots.give(slot as u16);
        self.unsent.unlink(&mut self.unsent_links, slot as u16);
        if let Some(p) = pdc.and_then(|id| self.initiators.get_mut(id)) {
            if started {
                p.messages = p.messages.saturating_sub(1);
                p.started.unlink(&mut self.pdc_links, slot as u16);
            } else {
                p.queued.unlink(&mut self.pdc_links, slot as u16);
            }
        }
        if let Some(t) = kind.read_data_pdc().and_then(|id| self.targets.get_mut(id)) {
            t.runs.unlink(&mut self.pdc_links, slot as u16);
        }
        self.read_timers.set(slot as u16, None);
        if let Some(g) = self.generations.get_mut(slot) {
            *g = g.wrapping_add(1);
        }
    }

    /// The next deadline: of a PDC, a RUDI resend, a READ waiting for data, or the next pull of
    /// the RCCC pull pacer (which [`Endpoint::poll_transmit`] sends once it is due).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let heads = [&self.initiator_timers.first(), &self.target_timers.first()];
        let pdcs = heads.into_iter().flatten().map(|&(at, _)| at);
        let reads = self.read_timers.first().map(|(at, _)| at);
        let rudi = self.rudi.iter().map(|r| r.resend_at);
        pdcs.chain(reads).chain(rudi).chain(self.pulls.poll_timeout()).min()
    }

    /// Runs every timer due at `now`: each PDC due is taken off its heap and runs its timers
    /// once, a batch at a time (a PDC still due after that runs them again at the next call).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = self.now.max(now);
        let now = self.now;
        self.give_up_reads(now);
        self.run_due(now, |e| &mut e.initiator_timers, |e, i| e.initiators.id_at(i), Self::initiator_timeout);
        self.run_due(now, |e| &mut e.target_timers, |e, i| e.targets.id_at(i), Self::target_timeout);
    }

    /// Takes the PDCs due at `now` off the heap `timers` picks, a batch of [`TIMER_BATCH`] at a
    /// time, and runs `run` on each (by the id `id_at` gives for its table slot): enough batches
    /// for every PDC due now; one back on the heap and due again waits for the next call.
    fn run_due(
        &mut self,
        now: Instant,
        timers: fn(&mut Self) -> &mut TimerHeap<P>,
        id_at: fn(&Self, usize) -> Option<u16>,
        run: fn(&mut Self, Instant, u16),
    ) {
        for _ in 0..=timers(self).len() / TIMER_BATCH {
            let mut due: heapless::Vec<u16, TIMER_BATCH> = heapless::Vec::new();
            while !due.is_full() {
                let Some(index) = timers(self).pop_due(now) else { break };
                // Not full, so the push succeeds.
                let _ = id_at(self, usize::from(index)).map(|id| due.push(id));
            }
            for &id in &due {
                run(self, now, id);
            }
            if !due.is_full() {
                break;
            }
        }
    }

    /// Runs initiator PDC `id`'s timers due at `now`, and what follows from them.
    fn initiator_timeout(&mut self, now: Instant, id: u16) {
        // An idle PDC has no timer.
        if let Some((pdc, p)) = self.initiators.get_mut(id).and_then(|p| Some((self.senders.get_mut(p.pdc)?, p))) {
            let (lost, timeouts) = (pdc.window().lost_count(), pdc.timeouts());
            pdc.handle_timeout(self.receivers.get_mut(p.ret), now, &configured(&self.cfg).pdc);
            let marked = pdc.window().lost_count().saturating_sub(lost);
            let fired = pdc.timeouts() != timeouts;
            self.stats.resends.count_timer(marked, fired);
            self.cc_signal = if fired { CcSignal::Timeout } else { CcSignal::None };
        }
        self.after_initiator_change(now, id);
    }

    /// Runs target PDC `id`'s timers due at `now`, and what follows from them.
    fn target_timeout(&mut self, now: Instant, id: u16) {
        if let Some(p) = self.targets.get_mut(id) {
            // An established PDC's idle timeout sends CLOSE_REQ, on a return direction (without a
            // free one, or with return packets unacknowledged, it closes at once; the entry goes
            // back below if it stays idle).
            if p.pdc.idle_close_due(now) {
                let _ = self.returns.take(&mut p.ret);
            }
            let mut ret = self.returns.get_mut(p.ret);
            let counts =
                |ret: Option<&ReturnDirection<2>>| ret.map_or((0, 0), |r| (r.window().lost_count(), r.timeouts()));
            let (lost, timeouts) = counts(ret.as_deref());
            let cfg = &configured(&self.cfg).pdc;
            self.helds.with(&mut p.held, &mut p.own, |held| p.pdc.handle_timeout(held, ret.as_deref_mut(), now, cfg));
            let (lost_after, timeouts_after) = counts(ret.as_deref());
            self.stats.resends.count_timer(lost_after.saturating_sub(lost), timeouts_after != timeouts);
        }
        self.after_target_change(now, id);
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        let ev = self.events.pop_front();
        if ev.is_some() && core::mem::take(&mut self.unsettled) {
            // Room again: settle what waited for it (what still finds no room sets the flag again).
            // A walk of every PDC and message slot, but only after the queue overflowed.
            for index in 0..P {
                if let Some(id) = self.initiators.id_at(index) {
                    self.settle_later(id);
                }
            }
            for slot in 0..M {
                let connectionless =
                    self.msgs.get(slot).and_then(MsgSlot::as_ref).is_some_and(|m| m.service.pdc_mode().is_none());
                if connectionless {
                    self.complete_connectionless(slot);
                }
            }
        }
        ev
    }

    /// Fails the READs whose data stopped arriving (see [`Failure::ReadTimeout`]); one that finds
    /// the event queue full fails at a later call.
    fn give_up_reads(&mut self, now: Instant) {
        while let Some((_, slot)) = self.read_timers.first().filter(|&(at, _)| at <= now) {
            let Some(m) = self.msgs.get(usize::from(slot)).and_then(MsgSlot::as_ref) else {
                self.read_timers.set(slot, None);
                continue;
            };
            let delivery = FailedDelivery::Partial;
            let failed = Event::Failed { msg: m.handle(usize::from(slot)), why: Failure::ReadTimeout, delivery };
            if self.events.push_back(failed).is_err() {
                // It keeps its deadline: a later call tries again.
                return;
            }
            let pdc = m.pdc;
            self.free_msg(usize::from(slot));
            // Its PDC may be done now (close when idle, removal once closed), or take a queued
            // message.
            if let Some(id) = pdc {
                self.after_initiator_change(now, id);
            }
        }
    }

    /// Messages that found the event queue full are settled once it has room (at the latest
    /// time a call gave).
    fn settle_later(&mut self, id: u16) {
        if self.initiators.get(id).is_some_and(|p| p.messages > 0) {
            self.after_initiator_change(self.now, id);
        }
    }
}

/// Emits a PDS header at the front of `out`.
fn emit(out: &mut [u8], h: &PdsHeader) -> Result<usize, EndpointError> {
    h.emit(out).map_err(|_| EndpointError::BufferTooShort)
}

/// The SES DEFAULT_RESPONSEs a PDC's ACKs carry: the one for the packet taken last, due on the
/// next ACK if that ACK names it, and RC_NULL for an ACK that names a packet received before,
/// whose own ids the endpoint no longer keeps. Both use the ids of the request answered last, so
/// they are kept once: 16 B.
#[derive(Clone, Copy, Debug, Default)]
struct AckAnswer {
    psn: u32,
    modified_length: u32,
    job_id: u32,
    message_id: u16,
    ri_generation: u8,
    due: Due,
}

/// Whether [`AckAnswer`]'s response is due, and its return code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Due {
    #[default]
    No,
    Ok,
    Null,
}

impl AckAnswer {
    /// The packet at `psn` was answered with `rsp`, a DEFAULT_RESPONSE with RC_OK or RC_NULL
    /// (any other code is kept as RC_NULL); its ids become the PDC's last.
    fn set(&mut self, psn: u32, rsp: &Response) {
        *self = AckAnswer {
            psn,
            modified_length: rsp.modified_length,
            job_id: rsp.job_id,
            message_id: rsp.message_id,
            ri_generation: rsp.ri_generation,
            due: if rsp.return_code == ReturnCode::Ok { Due::Ok } else { Due::Null },
        };
    }

    /// The response due for an ACK naming `named`, if it names the packet answered last; none is
    /// due afterwards, whatever the ACK names.
    fn take_for(&mut self, named: u32) -> Option<Response> {
        let due = core::mem::take(&mut self.due);
        let return_code = match due {
            Due::No => return None,
            _ if self.psn != named => return None,
            Due::Ok => ReturnCode::Ok,
            Due::Null => ReturnCode::Null,
        };
        Some(Response {
            return_code,
            message_id: self.message_id,
            modified_length: self.modified_length,
            ..self.null()
        })
    }

    /// The RC_NULL DEFAULT_RESPONSE for an ACK that names a packet received before: the last
    /// request's RI generation and JobID, message id 0. Receivers ignore RC_NULL but for
    /// acknowledging the PSN (the reference provider's initiator completes a PSN named by an ACK
    /// only when the ACK carries an SES response).
    const fn null(&self) -> Response {
        Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::DefaultResponse,
            return_code: ReturnCode::Null,
            message_id: 0,
            ri_generation: self.ri_generation,
            job_id: self.job_id,
            modified_length: 0,
        }
    }
}

/// The PDCs a message of `service` for JobID `job_id` to `dst` in traffic class `tc` may go on.
const fn peer_dest(service: Service, job_id: u32, dst: IpAddr, tc: u8) -> PeerDest {
    PeerDest {
        mode: match service.pdc_mode() {
            Some(m) => m,
            None => DeliveryMode::Rud,
        },
        job_id,
        dst,
        tc,
    }
}

/// Whether `desc` is a READ on a PDC (RUDI READs are answered in the RUDI response).
const fn is_read(desc: &MessageDesc) -> bool {
    matches!(desc.header.common.opcode, crate::ses::Opcode::Read) && desc.service.pdc_mode().is_some()
}

/// A NACK refusing request `r`.
const fn refusal(code: NackCode, r: &Request, spdcid: u16) -> Nack {
    Nack::for_pdc(code, r.psn, spdcid, r.spdcid)
}

mod congestion;
mod connectionless;
mod credit;
mod demux;
mod extensions;
mod held;
#[cfg(any(test, feature = "fuzzing"))]
mod invariants;
mod links;
mod receiving;
mod returns;
mod sending;
mod stats;
#[cfg(test)]
mod tests;
mod timers;
mod transmit;
