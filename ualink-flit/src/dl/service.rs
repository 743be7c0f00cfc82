//! The DL message service of one port (UALink 1.0 §6.2.2, §6.4): what the alt-sector messages of
//! [`message`](super::message) are for.
//!
//! [`MessageService`] is driven once per flit time, beside [`DataLink`](super::DataLink):
//! [`MessageService::pump`] before `transmit` moves the next messages, chosen by the §6.4.1.2
//! arbitration, into the link's alt-sector queue and sets the link's Channel 0 gates; every
//! alt-sector word the link delivers goes to [`MessageService::receive`], which answers requests
//! and reports what changed as a [`ServiceEvent`]. Time is the count of `pump` calls (flit times).
//!
//! * **Arbitration** (§6.4.1.2): round robin within the Basic group (TL Rate Notification,
//!   Device ID, Port Number), within the Control group (channel negotiation) and within the UART
//!   group (Stream Transport, Credit Update, Reset Request, Reset Response), then round robin
//!   across the three groups. A UART Stream Transport Message goes into the queue whole, so no
//!   other message comes between its words.
//! * **Basic messages** (§6.4.2): a request is answered with an Ack carrying this port's own
//!   values ([`ServiceConfig`]); the values a request or response advertises are recorded as the
//!   link partner's. A TL Rate Notification sets the [`TxPacer`] to the partner's rate (§6.5.4).
//! * **Channel negotiation** (§6.4.3): Channels 0 (TL flits) and 4 (DL UART), offline after
//!   reset. A request is answered with an Ack; the requester sends the confirming Ack. The flows of
//!   Figures 6-12 to 6-16 (success, Nack, decision pending, identical requests) are followed.
//! * **UART stream 0** (§6.4.4): transmit and receive buffers, the two modulo-2^12 credit
//!   counters, Credit Updates, Stream Transport Messages sized by §6.4.4.1.3, and the stream
//!   reset handshake of §6.4.4.1.2 (40 No-Ops, Reset Request, 10 ms retry).
//!
//! *Project-defined* where the text leaves a choice:
//!
//! * **Channel gates.** A channel has separate transmit and receive gates so no data is lost
//!   while a negotiation's messages cross. Going online, each side opens its receive gate when it
//!   sends its request or its Ack, and its transmit gate when the negotiation completes: the
//!   responder on the confirming Ack, the requester once its confirming Ack has left (the link
//!   took it from the alt-sector queue, [`AltQueue::taken`]), so nothing it sends on the channel
//!   reaches a partner that waits for that Ack to take the channel online (§6.4.3, Figure 6-12:
//!   the change takes place once the negotiation completes). Going offline is the reverse:
//!   transmit closes when the request or Ack is sent, receive when the negotiation completes.
//!   [`DataLink::set_tl_channel`](super::DataLink::set_tl_channel) applies Channel 0's gates.
//! * **Policy.** This service always accepts (Acks) a channel request and never answers
//!   decision pending; it follows the peer's decision pending by not requesting again until the
//!   peer's own request has completed. A request on a channel other than 0 or 4 is Nacked.
//!   A request for the current state is Acked and counted ([`ServiceStats::same_state_requests`]).
//! * **One negotiation at a time** of this port's own (§6.4.3: no second request of the same
//!   mclass and mtype until the current one completes).
//! * **Unsolicited responses** (an Ack nobody asked for) are counted and otherwise ignored.
//!   Requests beyond [`MAX_PENDING`] unanswered ones of one type are dropped and counted. A
//!   request on a channel this port does not have is Nacked with that channel offline as its
//!   TargetState (§6.4.3.2: an Ack's or NAck's TargetState is the sender's desired state).
//! * **Configured values out of range** (a Device ID or port number of 1024 or more) are sent
//!   as not configured (Valid 0), so a bad configuration cannot stall the Basic group.
//! * **UART timing.** The Credit Update rule's "4 Flits have been Transmitted" counts calls of
//!   `pump` since the last update. The Reset Response time-out is
//!   [`ServiceConfig::uart_reset_timeout`] flit times (default 400 000, 10 ms at 25 ns a flit).
//!   Only stream 0 is defined; words for other streams are dropped and counted.
//! * **Channel 4 and the UART counters.** The counters start at reset ([`MessageService::new`],
//!   [`MessageService::uart_reset`]), not when the channel comes online: the first Credit Update
//!   goes out once Channel 4 is online. Words written while Channel 4 is offline wait in the
//!   transmit buffer. Words in flight when Channel 4 goes offline are dropped by the receiver
//!   while their credits stay spent, so take it online again with a UART stream reset. A reset
//!   in progress ends when Channel 4's transmit gate closes: its No-Ops and Reset Request are UART
//!   traffic, which may not go out on an offline channel (§6.4.3.2).
//! * **Link down.** [`MessageService::link_reset`] returns every channel to offline and the UART to
//!   its initial state; call it when the data link is enabled again
//!   ([`DataLink::enable`](super::link::DataLink::enable) empties the DL's message queue, so
//!   words pumped into it while the link was down would be lost), then ask for the channels again.

use super::message::{AltItem, AltQueue, AltReceiver, DlMessage, UART_MAX_WORDS};
use super::pacing::TxPacer;
use crate::Error;
use linklayer::ZeroOption;

/// The TL flit channel.
pub const CHANNEL_TL: u8 = 0;
/// The DL UART channel.
pub const CHANNEL_UART: u8 = 4;
/// No-Op messages sent before a UART Stream Reset Request (§6.4.2.5).
pub const UART_RESET_NO_OPS: u8 = 40;
/// Flits transmitted between Credit Updates for read-out words (§6.4.4.1.3).
pub const CREDIT_UPDATE_FLITS: u32 = 4;
/// Unanswered requests of one Basic type held at most.
pub const MAX_PENDING: u8 = 8;
/// The alt-sector words kept queued ahead in the link: one DL flit's worth (one per segment).
const AHEAD: usize = 5;
/// Channel negotiation commands (Table 6-8).
const CMD_REQUEST: u8 = 0b0100;
const CMD_ACK: u8 = 0b0110;
const CMD_NACK: u8 = 0b0111;
const CMD_PENDING: u8 = 0b1000;
/// Modulo of the UART credit counters.
const FC_MOD: u16 = 1 << 12;

/// A device's type in Device ID messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DeviceKind {
    /// A switch (Type 0).
    Switch,
    /// An accelerator (Type 1).
    Accelerator,
}

impl DeviceKind {
    const fn code(self) -> u8 {
        match self {
            DeviceKind::Switch => 0,
            DeviceKind::Accelerator => 1,
        }
    }
}

/// This port's own values and timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ServiceConfig {
    /// This device's 10-bit ID, if configured (1024 or more is sent as not configured).
    pub device_id: Option<u16>,
    /// This device's type.
    pub kind: DeviceKind,
    /// This port's number (below 1024), if configured (1024 or more is sent as not
    /// configured).
    pub port: Option<u16>,
    /// Flit times to wait for a UART Stream Reset Response before starting over.
    pub uart_reset_timeout: u32,
}

impl ServiceConfig {
    /// The defaults (the same as [`Default`]).
    pub const DEFAULT: ServiceConfig =
        ServiceConfig { device_id: None, kind: DeviceKind::Accelerator, port: None, uart_reset_timeout: 400_000 };
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig::DEFAULT
    }
}

/// What a received message changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ServiceEvent {
    /// The link partner notified its TL rate (50 kHz units); it was acknowledged and the pacer set.
    PeerTlRate(u16),
    /// The link partner acknowledged this port's TL Rate Notification.
    TlRateAcked,
    /// The link partner's Device ID (from its request or its response).
    PeerDeviceId {
        /// The ID, if the partner has one.
        id: Option<u16>,
        /// Its type code (0 switch, 1 accelerator).
        kind: u8,
        /// This was the response to this port's request.
        response: bool,
    },
    /// The link partner's port number (from its request or its response).
    PeerPort {
        /// The number, if the partner has one.
        port: Option<u16>,
        /// This was the response to this port's request.
        response: bool,
    },
    /// A channel negotiation completed: the channel is now online or offline.
    Channel {
        /// The channel.
        channel: u8,
        /// Its state.
        online: bool,
    },
    /// The link partner refused this port's channel request.
    ChannelRefused {
        /// The channel.
        channel: u8,
    },
    /// The link partner answered decision pending; it will request the channel itself.
    ChannelPending {
        /// The channel.
        channel: u8,
    },
    /// The UART stream was reset (this port's reset was answered, or the partner's was served).
    UartReset,
}

/// Counters of what the service refused or dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ServiceStats {
    /// Messages sent (alt-sector words, UART payload included).
    pub words_sent: u64,
    /// Responses no request of this port asked for.
    pub unsolicited: u64,
    /// Requests dropped beyond [`MAX_PENDING`] unanswered.
    pub requests_dropped: u64,
    /// Channel requests for the state the channel already has (§6.4.3.2: logged as an error).
    pub same_state_requests: u64,
    /// UART words or messages dropped: channel 4 offline, a reset in progress, another stream.
    pub uart_dropped: u64,
    /// UART payload words beyond the receive buffer (the partner overran its credits).
    pub uart_overruns: u64,
}

impl ServiceStats {
    /// Nothing counted.
    pub const ZERO: ServiceStats = ServiceStats {
        words_sent: 0,
        unsolicited: 0,
        requests_dropped: 0,
        same_state_requests: 0,
        uart_dropped: 0,
        uart_overruns: 0,
    };
}

/// A Basic message type's state: requests to answer and this port's own request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Basic {
    to_answer: u8,
    request: ZeroOption<DlMessage>,
    outstanding: bool,
}

impl Basic {
    fn ready(&self) -> bool {
        self.to_answer > 0 || self.request.is_some()
    }
}

/// One channel's negotiated state and gates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Channel {
    online: bool,
    tx: bool,
    rx: bool,
}

/// The UART stream reset handshake, from this port's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum UartReset {
    /// Not resetting.
    Off,
    /// Sending No-Ops (this many left), then the Reset Request; every other message blocked.
    Flushing(u8),
    /// Waiting this many more flit times for the Reset Response.
    Waiting(u32),
}

/// Where a requester's confirming Ack is on its way out: the channel's transmit gate opens once
/// it has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Opening {
    /// In the control queue: it moves to the link's queue when `control_moved` reaches `moved`.
    Queued { channel: u8, moved: u32 },
    /// In the link's queue: it has gone when the queue's `taken` reaches `taken`.
    InLink { channel: u8, taken: u32 },
}

impl Opening {
    const fn channel(self) -> u8 {
        match self {
            Opening::Queued { channel, .. } | Opening::InLink { channel, .. } => channel,
        }
    }
}

/// The DL message service of one port, with a UART stream of `U` words each way (the
/// specification recommends 128, the default: 1 328 B on a 64-bit host).
#[derive(Clone, Debug)]
pub struct MessageService<const U: usize = 128> {
    cfg: ServiceConfig,
    /// TL Rate Notification, Device ID, Port Number.
    basic: [Basic; 3],
    basic_next: u8,
    /// Channel negotiation words, in order (responses in the order their causes arrived).
    control: heapless::Deque<DlMessage, 8>,
    channels: [Channel; 2],
    /// This port's negotiation in flight: channel and the state asked for.
    own: ZeroOption<(u8, bool)>,
    /// A partner request this port Acked, waiting for the confirming Ack.
    confirm: ZeroOption<(u8, bool)>,
    /// The partner answered decision pending on this channel.
    peer_pending: Option<u8>,
    /// This port's transmit gate waiting for its confirming Ack to leave (module doc).
    opening: ZeroOption<Opening>,
    /// Control words moved to the link's queue so far (wrapping).
    control_moved: u32,
    group_next: u8,
    uart_next: u8,
    uart_tx: heapless::Deque<u32, U>,
    uart_rx: heapless::Deque<u32, U>,
    /// Receiver Credit Counter (mod 2^12).
    rx_credits: u16,
    /// Transmit Credit Counter (mod 2^12).
    tx_credits: u16,
    /// The most recent DataFCSeq received.
    peer_fc_seq: u16,
    /// No Credit Update sent since reset.
    first_update_due: bool,
    /// Receiver Credit Counter incremented since the last update.
    credits_grew: bool,
    flits_since_update: u32,
    reset: UartReset,
    /// Reset Responses owed (all_streams bit of each request).
    reset_responses: heapless::Deque<bool, 2>,
    receiver: AltReceiver,
    pacer: TxPacer,
    peer_rate: u16,
    stats: ServiceStats,
}

/// The channel's index, for channels 0 and 4.
const fn slot(channel: u8) -> Option<usize> {
    match channel {
        CHANNEL_TL => Some(0),
        CHANNEL_UART => Some(1),
        _ => None,
    }
}

/// A Channel negotiation message.
const fn negotiation(target_state: u8, command: u8, response: u8) -> DlMessage {
    DlMessage::ChannelNegotiation { target_state, command, response }
}

/// A channel's state nibble: online bit 3, channel id bits 2..0.
const fn state_nibble(channel: u8, online: bool) -> u8 {
    (online as u8) << 3 | (channel & 7)
}

impl<const U: usize> MessageService<U> {
    /// The receive buffer's size in credits: a buffer of 2^12 words or more would read as
    /// fewer in the modulo-2^12 counters, so it is refused at compile time.
    const RX_BUFFER: u16 = {
        assert!(U >= 1 && U < FC_MOD as usize, "the UART buffers hold 1 to 4095 words");
        U as u16
    };

    /// A service with every byte zero (a `static` holding it, or a port holding it, lands in
    /// `.bss`): a configuration of zeros, not out of reset until [`Self::init`].
    pub const EMPTY: Self = {
        let () = assert!(Self::RX_BUFFER > 0);
        MessageService {
            cfg: ServiceConfig { device_id: None, kind: DeviceKind::Switch, port: None, uart_reset_timeout: 0 },
            basic: [Basic { to_answer: 0, request: ZeroOption::NONE, outstanding: false }; 3],
            basic_next: 0,
            control: heapless::Deque::new(),
            channels: [Channel { online: false, tx: false, rx: false }; 2],
            own: ZeroOption::NONE,
            confirm: ZeroOption::NONE,
            peer_pending: None,
            opening: ZeroOption::NONE,
            control_moved: 0,
            group_next: 0,
            uart_next: 0,
            uart_tx: heapless::Deque::new(),
            uart_rx: heapless::Deque::new(),
            rx_credits: 0,
            tx_credits: 0,
            peer_fc_seq: 0,
            first_update_due: false,
            credits_grew: false,
            flits_since_update: 0,
            reset: UartReset::Off,
            reset_responses: heapless::Deque::new(),
            receiver: AltReceiver::new(),
            pacer: TxPacer::STOPPED,
            peer_rate: 0,
            stats: ServiceStats::ZERO,
        }
    };

    /// A service just out of reset: every channel offline, the UART empty, the partner at full
    /// rate.
    pub fn new(cfg: ServiceConfig) -> Self {
        let mut service = Self::EMPTY;
        service.init(cfg);
        service
    }

    /// Makes this service what [`Self::new`]`(cfg)` returns, in place.
    pub fn init(&mut self, cfg: ServiceConfig) {
        self.cfg = cfg;
        self.link_reset();
    }

    /// Back to the state after reset, keeping the configuration: call it right after
    /// [`DataLink::enable`](super::link::DataLink::enable) brings the link back from a link
    /// down (module doc).
    pub fn link_reset(&mut self) {
        self.basic = [Basic::default(); 3];
        self.basic_next = 0;
        self.control.clear();
        self.channels = [Channel::default(); 2];
        self.own.clear();
        self.confirm.clear();
        self.peer_pending = None;
        self.opening.clear();
        (self.group_next, self.uart_next) = (0, 0);
        self.uart_tx.clear();
        self.uart_rx.clear();
        self.rx_credits = Self::RX_BUFFER;
        (self.tx_credits, self.peer_fc_seq) = (0, 0);
        (self.first_update_due, self.credits_grew, self.flits_since_update) = (true, false, 0);
        self.reset = UartReset::Off;
        self.reset_responses.clear();
        self.receiver = AltReceiver::new();
        self.pacer = TxPacer::new();
        self.peer_rate = super::pacing::FULL_RATE;
        self.stats = ServiceStats::ZERO;
    }

    /// The configuration.
    pub fn config(&self) -> &ServiceConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> &ServiceStats {
        &self.stats
    }

    /// Whether `channel` is online (negotiated).
    pub fn channel_online(&self, channel: u8) -> bool {
        slot(channel).and_then(|i| self.channels.get(i)).is_some_and(|c| c.online)
    }

    /// Channel 0's gates, `(transmit, receive)`, for
    /// [`DataLink::set_tl_channel`](super::DataLink::set_tl_channel).
    pub fn tl_gates(&self) -> (bool, bool) {
        let c = self.channels.first().copied().unwrap_or_default();
        (c.tx, c.rx)
    }

    /// The link partner's TL rate (50 kHz units; full rate until it notifies another).
    pub fn peer_tl_rate(&self) -> u16 {
        self.peer_rate
    }

    /// The pacer set to the link partner's rate.
    pub fn pacer(&mut self) -> &mut TxPacer {
        &mut self.pacer
    }

    /// Whether a negotiation of this port's own is in flight.
    pub fn negotiating(&self) -> bool {
        self.own.is_some()
    }

    fn channel_mut(&mut self, channel: u8) -> Option<&mut Channel> {
        slot(channel).and_then(|i| self.channels.get_mut(i))
    }

    fn uart_tx_online(&self) -> bool {
        self.channels.get(1).is_some_and(|c| c.tx)
    }

    fn uart_rx_online(&self) -> bool {
        self.channels.get(1).is_some_and(|c| c.rx)
    }

    // ----- Requests of this port -----

    fn basic_request(&mut self, i: usize, m: DlMessage) -> Result<(), Error> {
        m.to_word()?;
        let b = self.basic.get_mut(i).ok_or(Error::BadValue { field: "Basic message type", value: i as u32 })?;
        if b.request.is_some() || b.outstanding {
            return Err(Error::Full { queue: "DL Basic request (one outstanding)" });
        }
        b.request = ZeroOption::Some(m);
        Ok(())
    }

    /// Sends a TL Rate Notification of this port's new rate (50 kHz units, §6.5.4 step 4b/4g).
    pub fn notify_tl_rate(&mut self, rate: u16) -> Result<(), Error> {
        self.basic_request(0, DlMessage::TlRate { ack: false, rate })
    }

    /// Asks the link partner for its Device ID, advertising this port's.
    pub fn request_device_id(&mut self) -> Result<(), Error> {
        self.basic_request(1, self.device_id(false))
    }

    /// Asks the link partner for its port number, advertising this port's.
    pub fn request_port_number(&mut self) -> Result<(), Error> {
        self.basic_request(2, self.port_number(false))
    }

    fn device_id(&self, ack: bool) -> DlMessage {
        let (id, valid) = self.cfg.device_id.filter(|&id| id < 1024).map_or((0, false), |id| (id, true));
        DlMessage::DeviceId { ack, id, kind: self.cfg.kind.code(), valid }
    }

    fn port_number(&self, ack: bool) -> DlMessage {
        let (port, valid) = self.cfg.port.filter(|&p| p < 1024).map_or((0, false), |p| (p, true));
        DlMessage::PortNumber { ack, port, valid }
    }

    /// Asks for `channel` (0 or 4) to go online or offline. Refused while a negotiation of this
    /// port's is in flight, while the partner's decision is pending, while this port waits for a
    /// confirming Ack, or when the channel is already in that state (§6.4.3.2).
    pub fn request_channel(&mut self, channel: u8, online: bool) -> Result<(), Error> {
        let c = self
            .channel_mut(channel)
            .copied()
            .ok_or(Error::BadValue { field: "DL channel", value: u32::from(channel) })?;
        // (A transmit gate still waiting for this port's last confirming Ack does not hold a new
        // request back: the request queues behind that Ack, and taking the same channel offline
        // keeps the gate shut.)
        if self.own.is_some() || self.confirm.is_some() || self.peer_pending.is_some() {
            return Err(Error::Full { queue: "DL channel negotiation (one at a time)" });
        }
        if c.online == online {
            return Err(Error::State { needs: "the channel in the other state" });
        }
        self.control
            .push_back(negotiation(state_nibble(channel, online), CMD_REQUEST, 0))
            .map_err(|_| Error::Full { queue: "DL control messages" })?;
        self.own = ZeroOption::Some((channel, online));
        self.open_first(channel, online);
        Ok(())
    }

    /// The gate that moves when a negotiation toward `online` starts: receive opens, or
    /// transmit closes.
    fn open_first(&mut self, channel: u8, online: bool) {
        if let Some(c) = self.channel_mut(channel) {
            if online {
                c.rx = true;
            } else {
                c.tx = false;
            }
        }
        if !online {
            self.transmit_closed(channel);
        }
    }

    /// `channel`'s transmit gate closed: a gate waiting to open stays shut, and a UART stream
    /// reset in progress ends (its messages may not go out on an offline channel, §6.4.3.2).
    fn transmit_closed(&mut self, channel: u8) {
        if self.opening.as_ref().is_some_and(|o| o.channel() == channel) {
            self.opening.clear();
        }
        if channel == CHANNEL_UART {
            self.reset = UartReset::Off;
        }
    }

    /// A negotiation toward `online` completed: the state changes and the other gate follows
    /// (but see [`Self::complete_requested`]).
    fn complete(&mut self, channel: u8, online: bool) -> Option<ServiceEvent> {
        let c = self.channel_mut(channel)?;
        let changed = c.online != online;
        *c = Channel { online, tx: online, rx: online };
        if !online {
            self.transmit_closed(channel);
        }
        changed.then_some(ServiceEvent::Channel { channel, online })
    }

    /// This port's own negotiation toward `online` was Acked: it queues the confirming Ack
    /// (whose TargetState echoes the partner's `peer_state`) and completes, but going online the
    /// transmit gate waits for that Ack to leave (module doc).
    fn complete_requested(&mut self, channel: u8, online: bool, peer_state: u8) -> Option<ServiceEvent> {
        let queued = self.control.push_back(negotiation(state_nibble(channel, online), CMD_ACK, peer_state)).is_ok();
        if !queued {
            self.stats.requests_dropped += 1;
        }
        let event = self.complete(channel, online);
        if online && queued {
            if let Some(c) = self.channel_mut(channel) {
                c.tx = false;
            }
            let moved = self.control_moved.wrapping_add(self.control.len() as u32);
            self.opening = ZeroOption::Some(Opening::Queued { channel, moved });
        }
        event
    }

    /// Opens a transmit gate whose confirming Ack the link has taken.
    fn open_when_gone<const A: usize>(&mut self, alt: &AltQueue<A>) {
        let Some(Opening::InLink { channel, taken }) = self.opening.into_option() else { return };
        // Wrapping: `taken` lies at most a queue's length ahead.
        if alt.taken().wrapping_sub(taken) < u32::MAX / 2 {
            self.opening.clear();
            if let Some(c) = self.channel_mut(channel) {
                c.tx = c.online;
            }
        }
    }

    /// A negotiation of this port's toward `online` failed: the gate it moved goes back.
    fn abandon(&mut self, channel: u8) {
        if let Some(c) = self.channel_mut(channel) {
            let online = c.online;
            *c = Channel { online, tx: online, rx: online };
        }
    }

    /// Writes words to the UART transmit buffer; returns how many fit (none while the stream is
    /// being reset: §6.4.4.1.2 discards them).
    pub fn uart_write(&mut self, words: &[u32]) -> usize {
        if self.reset != UartReset::Off {
            return 0;
        }
        let mut n = 0;
        for w in words {
            if self.uart_tx.push_back(*w).is_err() {
                break;
            }
            n += 1;
        }
        n
    }

    /// Reads the next word from the UART receive buffer, returning its credit to the partner.
    pub fn uart_read(&mut self) -> Option<u32> {
        let w = self.uart_rx.pop_front()?;
        self.rx_credits = (self.rx_credits + 1) % FC_MOD;
        self.credits_grew = true;
        Some(w)
    }

    /// Words waiting in the UART transmit and receive buffers.
    pub fn uart_fill(&self) -> (usize, usize) {
        (self.uart_tx.len(), self.uart_rx.len())
    }

    /// Starts a UART stream reset (§6.4.4.1.2): buffers flushed, credits zeroed, every DL message
    /// blocked while 40 No-Ops and the Reset Request go out, then the Reset Response awaited.
    /// Refused while Channel 4 is offline: no UART message may be sent then (§6.4.3.2).
    pub fn uart_reset(&mut self) -> Result<(), Error> {
        if !self.uart_tx_online() {
            return Err(Error::State { needs: "Channel 4 online" });
        }
        self.uart_flush();
        self.reset = UartReset::Flushing(UART_RESET_NO_OPS);
        Ok(())
    }

    /// Steps 2–4 of either side of the reset: buffers empty, counters zero.
    fn uart_flush(&mut self) {
        self.uart_tx.clear();
        self.uart_rx.clear();
        self.rx_credits = 0;
        self.tx_credits = 0;
        self.peer_fc_seq = 0;
        self.credits_grew = false;
        self.first_update_due = false;
    }

    // ----- Transmit -----

    /// One flit time: advances the timers and tops up `alt` (the link's alt-sector queue) with
    /// the next messages by arbitration, keeping about one DL flit's worth queued. Call it once
    /// per flit time before [`DataLink::transmit`](super::DataLink::transmit), and apply
    /// [`Self::tl_gates`] to the link.
    pub fn pump<const A: usize>(&mut self, alt: &mut AltQueue<A>) {
        self.open_when_gone(alt);
        self.pacer.tick();
        self.flits_since_update = self.flits_since_update.saturating_add(1);
        if let UartReset::Waiting(left) = self.reset {
            self.reset = match left.checked_sub(1) {
                Some(0) | None => UartReset::Flushing(UART_RESET_NO_OPS),
                Some(l) => UartReset::Waiting(l),
            };
        }
        while alt.len() < AHEAD {
            if !self.next_message(alt) {
                break;
            }
        }
    }

    /// Queues the next message (or UART stream) in `alt`; false when nothing is ready or it
    /// does not fit.
    fn next_message<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        if let UartReset::Flushing(left) = self.reset {
            let (m, next) = match left.checked_sub(1) {
                Some(l) => (DlMessage::NoOp, UartReset::Flushing(l)),
                None => (
                    DlMessage::UartResetReq { stream: 0, all_streams: false },
                    UartReset::Waiting(self.cfg.uart_reset_timeout.max(1)),
                ),
            };
            if alt.send(m).is_err() {
                return false;
            }
            self.reset = next;
            self.stats.words_sent += 1;
            return true;
        }
        // The groups in round-robin order from the one after the last winner.
        for k in 0..3u8 {
            let g = (self.group_next + k) % 3;
            let sent = match g {
                0 => self.next_basic(alt),
                1 => self.next_control(alt),
                _ => self.next_uart(alt),
            };
            if sent {
                self.group_next = (g + 1) % 3;
                return true;
            }
        }
        false
    }

    fn next_basic<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        for k in 0..3u8 {
            let i = (self.basic_next + k) % 3;
            let Some(b) = self.basic.get(usize::from(i)).copied() else { continue };
            if !b.ready() {
                continue;
            }
            // A response first: the partner waits at most 1 µs for it.
            let m = match (b.to_answer > 0, b.request.into_option()) {
                (true, _) => match i {
                    0 => DlMessage::TlRate { ack: true, rate: 0 },
                    1 => self.device_id(true),
                    _ => self.port_number(true),
                },
                (false, Some(m)) => m,
                (false, None) => continue,
            };
            if alt.send(m).is_err() {
                return false;
            }
            if let Some(b) = self.basic.get_mut(usize::from(i)) {
                if b.to_answer > 0 {
                    b.to_answer -= 1;
                } else {
                    b.request.clear();
                    b.outstanding = true;
                }
            }
            self.basic_next = (i + 1) % 3;
            self.stats.words_sent += 1;
            return true;
        }
        false
    }

    fn next_control<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        let Some(&m) = self.control.front() else { return false };
        if alt.send(m).is_err() {
            return false;
        }
        self.control.pop_front();
        self.control_moved = self.control_moved.wrapping_add(1);
        if let Some(Opening::Queued { channel, moved }) = self.opening.into_option() {
            if moved == self.control_moved {
                let taken = alt.taken().wrapping_add(alt.len() as u32);
                self.opening = ZeroOption::Some(Opening::InLink { channel, taken });
            }
        }
        self.stats.words_sent += 1;
        true
    }

    fn next_uart<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        for k in 0..4u8 {
            let i = (self.uart_next + k) % 4;
            let sent = match i {
                0 => self.next_transport(alt),
                1 => self.next_credit_update(alt),
                // Reset Requests come only from the blocking sequence above.
                2 => false,
                _ => self.next_reset_response(alt),
            };
            if sent {
                self.uart_next = (i + 1) % 4;
                return true;
            }
        }
        false
    }

    /// A Stream Transport Message when §6.4.4.1.3 allows one, sized by its rule (and by the room
    /// in `alt`, so it goes in whole).
    fn next_transport<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        if !self.uart_tx_online() || self.uart_tx.is_empty() {
            return false;
        }
        let avail = usize::from(self.peer_fc_seq.wrapping_sub(self.tx_credits) % FC_MOD);
        let room = A.saturating_sub(alt.len()).saturating_sub(1);
        let n = avail.min(self.uart_tx.len()).min(UART_MAX_WORDS).min(room);
        if n == 0 {
            return false;
        }
        let mut words: heapless::Vec<u32, UART_MAX_WORDS> = heapless::Vec::new();
        for w in self.uart_tx.iter().take(n) {
            let _ = words.push(*w);
        }
        if alt.send_uart(0, &words).is_err() {
            return false;
        }
        for _ in 0..n {
            self.uart_tx.pop_front();
        }
        self.tx_credits = (self.tx_credits + n as u16) % FC_MOD;
        self.stats.words_sent += n as u64 + 1;
        true
    }

    fn next_credit_update<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        let due = self.first_update_due || (self.credits_grew && self.flits_since_update >= CREDIT_UPDATE_FLITS);
        if !self.uart_tx_online() || !due {
            return false;
        }
        if alt.send(DlMessage::UartCredit { stream: 0, data_fc_seq: self.rx_credits }).is_err() {
            return false;
        }
        self.first_update_due = false;
        self.credits_grew = false;
        self.flits_since_update = 0;
        self.stats.words_sent += 1;
        true
    }

    fn next_reset_response<const A: usize>(&mut self, alt: &mut AltQueue<A>) -> bool {
        if !self.uart_tx_online() {
            return false;
        }
        let Some(&all_streams) = self.reset_responses.front() else { return false };
        if alt.send(DlMessage::UartResetRsp { stream: 0, all_streams, status: 0 }).is_err() {
            return false;
        }
        self.reset_responses.pop_front();
        // The first Credit Update after the reset follows its response, so the requester (which
        // ignores credits until the response) cannot miss it.
        self.first_update_due = true;
        self.flits_since_update = 0;
        self.stats.words_sent += 1;
        true
    }

    // ----- Receive -----

    /// Takes one alt-sector word the link delivered ([`Delivered::alt`](super::Delivered)), in
    /// order. A word that is not a DL message is refused (the reserved bits of a known message
    /// are ignored, §6.4).
    pub fn receive(&mut self, word: u32) -> Result<Option<ServiceEvent>, Error> {
        match self.receiver.receive(word)? {
            AltItem::UartWord { stream, word, .. } => {
                if stream != 0 || !self.uart_rx_online() || self.reset != UartReset::Off {
                    self.stats.uart_dropped += 1;
                } else if self.uart_rx.push_back(word).is_err() {
                    self.stats.uart_overruns += 1;
                }
                Ok(None)
            }
            AltItem::Message(m) => Ok(self.message(m)),
        }
    }

    fn answer(&mut self, i: usize) {
        if let Some(b) = self.basic.get_mut(i) {
            if b.to_answer < MAX_PENDING {
                b.to_answer += 1;
            } else {
                self.stats.requests_dropped += 1;
            }
        }
    }

    /// A response of Basic type `i`: whether this port asked for it.
    fn answered(&mut self, i: usize) -> bool {
        match self.basic.get_mut(i) {
            Some(b) if b.outstanding => {
                b.outstanding = false;
                true
            }
            _ => {
                self.stats.unsolicited += 1;
                false
            }
        }
    }

    fn message(&mut self, m: DlMessage) -> Option<ServiceEvent> {
        match m {
            DlMessage::NoOp => None,
            DlMessage::TlRate { ack: false, rate } => {
                self.answer(0);
                self.peer_rate = rate;
                self.pacer.set_rate(rate);
                Some(ServiceEvent::PeerTlRate(rate))
            }
            DlMessage::TlRate { ack: true, .. } => self.answered(0).then_some(ServiceEvent::TlRateAcked),
            DlMessage::DeviceId { ack, id, kind, valid } => {
                let response = if ack {
                    self.answered(1)
                } else {
                    self.answer(1);
                    false
                };
                (!ack || response).then_some(ServiceEvent::PeerDeviceId { id: valid.then_some(id), kind, response })
            }
            DlMessage::PortNumber { ack, port, valid } => {
                let response = if ack {
                    self.answered(2)
                } else {
                    self.answer(2);
                    false
                };
                (!ack || response).then_some(ServiceEvent::PeerPort { port: valid.then_some(port), response })
            }
            DlMessage::ChannelNegotiation { target_state, command, response } => {
                self.on_negotiation(target_state, command, response)
            }
            m => self.uart_message(m),
        }
    }

    fn on_negotiation(&mut self, target_state: u8, command: u8, response: u8) -> Option<ServiceEvent> {
        match command {
            CMD_REQUEST => {
                let (channel, online) = (target_state & 7, target_state & 8 != 0);
                let Some(c) = self.channel_mut(channel).copied() else {
                    // This port's desired state of a channel it does not have: offline.
                    self.push_control(negotiation(state_nibble(channel, false), CMD_NACK, target_state));
                    return None;
                };
                if self.peer_pending == Some(channel) {
                    self.peer_pending = None;
                }
                if c.online == online {
                    self.stats.same_state_requests += 1;
                } else {
                    self.open_first(channel, online);
                }
                // The Ack carries this port's desired state: the one asked for.
                self.push_control(negotiation(target_state, CMD_ACK, target_state));
                self.confirm = ZeroOption::Some((channel, online));
                None
            }
            CMD_ACK => {
                let (channel, online) = (response & 7, response & 8 != 0);
                if self.own == ZeroOption::Some((channel, online)) {
                    // The answer to this port's request: confirm it, and it is done.
                    self.own.clear();
                    self.complete_requested(channel, online, target_state)
                } else if self.confirm == ZeroOption::Some((channel, online)) {
                    self.confirm.clear();
                    self.complete(channel, online)
                } else {
                    self.stats.unsolicited += 1;
                    None
                }
            }
            CMD_NACK | CMD_PENDING => match self.own {
                ZeroOption::Some((channel, online)) if state_nibble(channel, online) == response => {
                    self.own.clear();
                    self.abandon(channel);
                    if command == CMD_NACK {
                        Some(ServiceEvent::ChannelRefused { channel })
                    } else {
                        self.peer_pending = Some(channel);
                        Some(ServiceEvent::ChannelPending { channel })
                    }
                }
                _ => {
                    self.stats.unsolicited += 1;
                    None
                }
            },
            _ => {
                self.stats.unsolicited += 1;
                None
            }
        }
    }

    fn push_control(&mut self, m: DlMessage) {
        if self.control.push_back(m).is_err() {
            self.stats.requests_dropped += 1;
        }
    }

    fn uart_message(&mut self, m: DlMessage) -> Option<ServiceEvent> {
        if !self.uart_rx_online() {
            self.stats.uart_dropped += 1;
            return None;
        }
        match m {
            // Credits from before this port's reset are stale; the partner's first update after the
            // reset follows its Reset Response.
            DlMessage::UartCredit { stream: 0, data_fc_seq } if self.reset == UartReset::Off => {
                self.peer_fc_seq = data_fc_seq;
                None
            }
            DlMessage::UartCredit { stream: 0, .. } => {
                self.stats.uart_dropped += 1;
                None
            }
            DlMessage::UartResetReq { stream: 0, all_streams } => {
                // The remote side of §6.4.4.1.2: flush, zero, answer, resume.
                self.uart_flush();
                self.rx_credits = Self::RX_BUFFER;
                if self.reset_responses.push_back(all_streams).is_err() {
                    self.stats.requests_dropped += 1;
                }
                Some(ServiceEvent::UartReset)
            }
            DlMessage::UartResetRsp { stream: 0, status: 0, .. } if matches!(self.reset, UartReset::Waiting(_)) => {
                // Normal operation resumes: the receive buffer's credits are advertised again.
                self.reset = UartReset::Off;
                self.rx_credits = Self::RX_BUFFER;
                self.first_update_due = true;
                self.flits_since_update = 0;
                Some(ServiceEvent::UartReset)
            }
            DlMessage::UartResetRsp { .. } => {
                self.stats.unsolicited += 1;
                None
            }
            // A Stream Transport header (its words follow) or another stream's message.
            DlMessage::UartStream { stream: 0, .. } => None,
            _ => {
                self.stats.uart_dropped += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dl::packing::AltSource;
    use std::vec::Vec;

    type S = MessageService<128>;
    type Q = AltQueue<40>;

    fn cfg(id: u16, port: u16) -> ServiceConfig {
        ServiceConfig {
            device_id: Some(id),
            kind: DeviceKind::Accelerator,
            port: Some(port),
            ..ServiceConfig::default()
        }
    }

    /// Two services joined by an alt-sector wire carrying five words a flit time each way.
    struct Pair {
        s: [S; 2],
        q: [Q; 2],
        events: [Vec<ServiceEvent>; 2],
        /// Every word sent, per direction.
        sent: [Vec<u32>; 2],
        /// Words of direction d to drop while this is set.
        drop: [bool; 2],
    }

    impl Pair {
        fn new() -> Self {
            Pair {
                s: [S::new(cfg(5, 1)), S::new(cfg(9, 2))],
                q: [Q::new(), Q::new()],
                events: [Vec::new(), Vec::new()],
                sent: [Vec::new(), Vec::new()],
                drop: [false, false],
            }
        }

        fn step(&mut self) {
            for d in 0..2 {
                self.s[d].pump(&mut self.q[d]);
            }
            for d in 0..2 {
                for _ in 0..5 {
                    let Some(w) = self.q[d].next_alt() else { break };
                    self.sent[d].push(w);
                    if self.drop[d] {
                        continue;
                    }
                    if let Some(e) = self.s[1 - d].receive(w).unwrap() {
                        self.events[1 - d].push(e);
                    }
                }
            }
        }

        fn run(&mut self, flits: usize) {
            for _ in 0..flits {
                self.step();
            }
        }

        fn online(&mut self, channel: u8) {
            self.s[0].request_channel(channel, true).unwrap();
            self.run(10);
            assert!(self.s[0].channel_online(channel) && self.s[1].channel_online(channel));
            self.events = [Vec::new(), Vec::new()];
        }
    }

    fn decode(words: &[u32]) -> Vec<DlMessage> {
        words.iter().map(|w| DlMessage::from_word(*w).unwrap()).collect()
    }

    /// The messages among `words`, UART payload left out.
    fn messages(words: &[u32]) -> Vec<DlMessage> {
        messages_from(words, 0)
    }

    /// The messages among `words[from..]`, read in the context of the words before.
    fn messages_from(words: &[u32], from: usize) -> Vec<DlMessage> {
        let mut rx = AltReceiver::new();
        let mut out = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if let AltItem::Message(m) = rx.receive(*w).unwrap() {
                if i >= from {
                    out.push(m);
                }
            }
        }
        out
    }

    #[test]
    fn basic_requests_are_answered_with_this_ports_values() {
        let mut p = Pair::new();
        p.s[0].request_device_id().unwrap();
        p.s[0].request_port_number().unwrap();
        p.s[0].notify_tl_rate(REFERENCE).unwrap();
        assert_eq!(p.s[0].request_device_id(), Err(Error::Full { queue: "DL Basic request (one outstanding)" }));
        p.run(3);
        assert_eq!(
            p.events[1],
            [
                ServiceEvent::PeerTlRate(REFERENCE),
                ServiceEvent::PeerDeviceId { id: Some(5), kind: 1, response: false },
                ServiceEvent::PeerPort { port: Some(1), response: false },
            ],
            "requests advertise the requester's values, in round-robin order"
        );
        assert_eq!(p.s[1].pacer().rate(), REFERENCE, "the partner's rate paces this port");
        assert_eq!(p.s[1].peer_tl_rate(), REFERENCE);
        assert_eq!(
            p.events[0],
            [
                ServiceEvent::TlRateAcked,
                ServiceEvent::PeerDeviceId { id: Some(9), kind: 1, response: true },
                ServiceEvent::PeerPort { port: Some(2), response: true },
            ]
        );
        assert_eq!(
            decode(&p.sent[1]),
            [
                DlMessage::TlRate { ack: true, rate: 0 },
                DlMessage::DeviceId { ack: true, id: 9, kind: 1, valid: true },
                DlMessage::PortNumber { ack: true, port: 2, valid: true },
            ]
        );
        // Answered, the request may be made again; an answer nobody asked for is counted.
        p.s[0].request_device_id().unwrap();
        let ack = DlMessage::PortNumber { ack: true, port: 3, valid: true }.to_word().unwrap();
        assert_eq!(p.s[0].receive(ack), Ok(None));
        assert_eq!(p.s[0].stats().unsolicited, 1);
        // A port with no ID says so.
        let mut bare = S::new(ServiceConfig::default());
        bare.receive(DlMessage::DeviceId { ack: false, id: 0, kind: 0, valid: false }.to_word().unwrap()).unwrap();
        let mut q = Q::new();
        bare.pump(&mut q);
        assert_eq!(decode(&[q.next_alt().unwrap()]), [DlMessage::DeviceId { ack: true, id: 0, kind: 1, valid: false }]);
    }

    const REFERENCE: u16 = crate::dl::pacing::REFERENCE_RATE;

    #[test]
    fn arbitration_is_round_robin_within_and_across_groups() {
        let mut s = S::new(cfg(1, 1));
        // Basic: three requests and two answers owed; Control: a request; UART: nothing yet.
        s.receive(DlMessage::DeviceId { ack: false, id: 2, kind: 1, valid: true }.to_word().unwrap()).unwrap();
        s.receive(DlMessage::TlRate { ack: false, rate: 31250 }.to_word().unwrap()).unwrap();
        s.notify_tl_rate(31250).unwrap();
        s.request_port_number().unwrap();
        s.request_channel(CHANNEL_UART, true).unwrap();
        let mut q: AltQueue<40> = AltQueue::new();
        s.pump(&mut q);
        let mut got = Vec::new();
        while let Some(w) = q.next_alt() {
            got.push(w);
        }
        s.pump(&mut q);
        while let Some(w) = q.next_alt() {
            got.push(w);
        }
        assert_eq!(
            decode(&got),
            [
                // Basic (TL Rate's answer), Control, then Basic again (UART has nothing): Device ID,
                // Port Number, TL Rate's own request.
                DlMessage::TlRate { ack: true, rate: 0 },
                DlMessage::ChannelNegotiation { target_state: 0b1100, command: CMD_REQUEST, response: 0 },
                DlMessage::DeviceId { ack: true, id: 1, kind: 1, valid: true },
                DlMessage::PortNumber { ack: false, port: 1, valid: true },
                DlMessage::TlRate { ack: false, rate: 31250 },
            ]
        );
    }

    #[test]
    fn channel_negotiation_opens_receive_before_transmit() {
        let mut p = Pair::new();
        assert_eq!(p.s[0].tl_gates(), (false, false), "offline after reset");
        p.s[0].request_channel(CHANNEL_TL, true).unwrap();
        assert_eq!(p.s[0].tl_gates(), (false, true), "the requester listens from its request on");
        assert!(p.s[0].request_channel(CHANNEL_UART, true).is_err(), "one negotiation at a time");
        p.s[0].pump(&mut p.q[0]);
        let req = p.q[0].next_alt().unwrap();
        p.s[1].receive(req).unwrap();
        assert_eq!(p.s[1].tl_gates(), (false, true), "the responder listens from its Ack on");
        p.s[1].pump(&mut p.q[1]);
        let ack = p.q[1].next_alt().unwrap();
        assert_eq!(
            DlMessage::from_word(ack),
            Ok(DlMessage::ChannelNegotiation { target_state: 0b1000, command: CMD_ACK, response: 0b1000 })
        );
        assert_eq!(p.s[0].receive(ack), Ok(Some(ServiceEvent::Channel { channel: CHANNEL_TL, online: true })));
        assert_eq!(p.s[0].tl_gates(), (false, true), "the requester sends once its confirming Ack has gone");
        p.s[0].pump(&mut p.q[0]);
        assert_eq!(p.s[0].tl_gates(), (false, true), "queued, not gone");
        let confirm = p.q[0].next_alt().unwrap();
        p.s[0].pump(&mut p.q[0]);
        assert_eq!(p.s[0].tl_gates(), (true, true));
        assert_eq!(p.s[1].receive(confirm), Ok(Some(ServiceEvent::Channel { channel: CHANNEL_TL, online: true })));
        assert_eq!(p.s[1].tl_gates(), (true, true));
        // A request for the state the channel has is refused locally, Acked and counted remotely.
        assert!(p.s[1].request_channel(CHANNEL_TL, true).is_err());
        p.s[1].receive(req).unwrap();
        assert_eq!(p.s[1].stats().same_state_requests, 1);
        // Offline: transmit closes at once, receive when the negotiation completes.
        let mut p2 = Pair::new();
        p2.online(CHANNEL_TL);
        p2.s[1].request_channel(CHANNEL_TL, false).unwrap();
        assert_eq!(p2.s[1].tl_gates(), (false, true));
        p2.run(10);
        assert_eq!((p2.s[0].tl_gates(), p2.s[1].tl_gates()), ((false, false), (false, false)));
        assert_eq!(p2.events[0], [ServiceEvent::Channel { channel: CHANNEL_TL, online: false }]);
        assert_eq!(p2.events[1], [ServiceEvent::Channel { channel: CHANNEL_TL, online: false }]);
    }

    #[test]
    fn identical_requests_complete_once_on_each_side() {
        let mut p = Pair::new();
        p.s[0].request_channel(CHANNEL_TL, true).unwrap();
        p.s[1].request_channel(CHANNEL_TL, true).unwrap();
        p.run(10);
        for d in 0..2 {
            assert_eq!(p.events[d], [ServiceEvent::Channel { channel: CHANNEL_TL, online: true }]);
            assert_eq!(p.s[d].tl_gates(), (true, true));
            assert!(!p.s[d].negotiating());
            assert_eq!(p.s[d].stats().unsolicited, 0);
            // Figure 6-16: request, Ack of the partner's request, confirming Ack.
            let cmds: Vec<u8> = decode(&p.sent[d])
                .iter()
                .map(|m| match m {
                    DlMessage::ChannelNegotiation { command, .. } => *command,
                    _ => 0,
                })
                .collect();
            assert_eq!(cmds, [CMD_REQUEST, CMD_ACK, CMD_ACK]);
        }
    }

    #[test]
    fn nack_and_decision_pending_undo_the_request() {
        let mut s = S::new(cfg(1, 1));
        s.request_channel(CHANNEL_TL, true).unwrap();
        let nack = negotiation(0, CMD_NACK, 0b1000).to_word().unwrap();
        assert_eq!(s.receive(nack), Ok(Some(ServiceEvent::ChannelRefused { channel: CHANNEL_TL })));
        assert_eq!(s.tl_gates(), (false, false));
        s.request_channel(CHANNEL_TL, true).unwrap();
        let pending = negotiation(0, CMD_PENDING, 0b1000).to_word().unwrap();
        assert_eq!(s.receive(pending), Ok(Some(ServiceEvent::ChannelPending { channel: CHANNEL_TL })));
        assert!(s.request_channel(CHANNEL_TL, true).is_err(), "the partner will ask itself");
        // The partner's request arrives and is Acked; its confirming Ack completes it.
        s.receive(negotiation(0b1000, CMD_REQUEST, 0).to_word().unwrap()).unwrap();
        let confirm = negotiation(0b1000, CMD_ACK, 0b1000).to_word().unwrap();
        assert_eq!(s.receive(confirm), Ok(Some(ServiceEvent::Channel { channel: CHANNEL_TL, online: true })));
        // A request on an undefined channel is Nacked.
        s.receive(negotiation(0b1010, CMD_REQUEST, 0).to_word().unwrap()).unwrap();
        let mut q = Q::new();
        s.pump(&mut q);
        let sent: Vec<u32> = core::iter::from_fn(|| q.next_alt()).collect();
        assert_eq!(decode(&sent).last(), Some(&negotiation(0b0010, CMD_NACK, 0b1010)), "channel 2, offline");
    }

    /// Nothing the requester sends on a channel it asked for reaches the partner before the
    /// confirming Ack: a partner that takes the channel online only then loses none of it (here,
    /// the first UART Credit Update, sent once only).
    #[test]
    fn the_requester_sends_on_a_new_channel_only_after_its_confirming_ack() {
        for busy in [false, true] {
            let mut p = Pair::new();
            if busy {
                // Basic traffic both ways, so the arbitration has more to interleave.
                p.s[0].request_device_id().unwrap();
                p.s[1].request_port_number().unwrap();
            }
            p.s[0].request_channel(CHANNEL_UART, true).unwrap();
            p.run(10);
            let sent = decode(&p.sent[0]);
            let confirm = sent
                .iter()
                .position(|m| matches!(m, DlMessage::ChannelNegotiation { command: CMD_ACK, .. }))
                .expect("a confirming Ack");
            let credit = sent.iter().position(|m| matches!(m, DlMessage::UartCredit { .. })).expect("a Credit Update");
            assert!(confirm < credit, "{sent:?}");
            assert!(p.s[0].channel_online(CHANNEL_UART) && p.s[1].channel_online(CHANNEL_UART));
        }
    }

    /// A request may follow at once the Ack that completes this port's last one: it queues
    /// behind the confirming Ack, and the first channel's gate still opens once that has gone.
    #[test]
    fn a_second_request_may_follow_the_first_at_once() {
        let mut p = Pair::new();
        p.s[0].request_channel(CHANNEL_TL, true).unwrap();
        for _ in 0..10 {
            p.step();
            if p.s[0].channel_online(CHANNEL_TL) {
                break;
            }
        }
        assert!(p.s[0].channel_online(CHANNEL_TL));
        p.s[0].request_channel(CHANNEL_UART, true).unwrap();
        p.run(10);
        assert_eq!(p.s[0].tl_gates(), (true, true));
        assert!(p.s[0].channel_online(CHANNEL_UART) && p.s[1].channel_online(CHANNEL_UART));
    }

    /// A UART stream reset ends when Channel 4 goes offline: no No-Op or Reset Request goes out
    /// on an offline channel, and the rest of the service carries on.
    #[test]
    fn taking_channel_4_offline_ends_a_uart_reset() {
        let mut p = Pair::new();
        p.s[0].cfg.uart_reset_timeout = 20;
        p.online(CHANNEL_UART);
        p.s[0].uart_reset().unwrap();
        p.s[1].request_channel(CHANNEL_UART, false).unwrap();
        p.run(10);
        assert!(!p.s[0].channel_online(CHANNEL_UART) && !p.s[1].channel_online(CHANNEL_UART));
        let before = p.sent[0].len();
        p.s[0].request_device_id().unwrap();
        p.run(200);
        let later = messages_from(&p.sent[0], before);
        assert_eq!(later, [DlMessage::DeviceId { ack: false, id: 5, kind: 1, valid: true }], "{later:?}");
        assert!(p.s[0].uart_write(&[1, 2]) == 2, "writes wait in the buffer again");
    }

    /// A Device ID or port number out of range goes out as not configured, and the Basic group
    /// keeps answering.
    #[test]
    fn configured_values_out_of_range_are_sent_as_not_configured() {
        let mut p = Pair::new();
        p.s[1].cfg.device_id = Some(1024);
        p.s[1].cfg.port = Some(4000);
        p.s[0].request_device_id().unwrap();
        p.s[0].request_port_number().unwrap();
        p.run(5);
        assert_eq!(
            p.events[0],
            [
                ServiceEvent::PeerDeviceId { id: None, kind: 1, response: true },
                ServiceEvent::PeerPort { port: None, response: true },
            ]
        );
        p.s[0].notify_tl_rate(REFERENCE).unwrap();
        p.run(3);
        assert_eq!(p.events[0].last(), Some(&ServiceEvent::TlRateAcked));
    }

    /// Moves `words` from port 0's UART to port 1's, port 1 reading `read_per_flit` a flit time;
    /// returns what port 1 read.
    fn uart_transfer(p: &mut Pair, words: &[u32], read_per_flit: usize, flits: usize) -> Vec<u32> {
        let mut written = 0;
        let mut read = Vec::new();
        for _ in 0..flits {
            written += p.s[0].uart_write(&words[written..]);
            p.step();
            for _ in 0..read_per_flit {
                if let Some(w) = p.s[1].uart_read() {
                    read.push(w);
                }
            }
            assert!(p.s[1].uart_fill().1 <= 128);
        }
        read
    }

    #[test]
    fn uart_words_flow_under_credits_in_order() {
        let mut p = Pair::new();
        let words: Vec<u32> = (0..2000).map(|i| i * 7 + 1).collect();
        // Channel 4 offline: nothing moves.
        assert_eq!(uart_transfer(&mut p, &words[..10], 1, 20), [0u32; 0]);
        assert!(p.sent[0].is_empty());
        let mut p = Pair::new();
        p.online(CHANNEL_UART);
        // A slow reader: the sender stops at the 128 credits and never overruns.
        let read = uart_transfer(&mut p, &words, 1, 3000);
        assert_eq!(read, words, "every word once, in order");
        assert_eq!(p.s[1].stats().uart_overruns, 0);
        let streams = messages(&p.sent[0]).iter().filter(|m| matches!(m, DlMessage::UartStream { .. })).count();
        assert!(streams > 0);
        // Transport words are at most 32 per message and their headers count right.
        let mut rx = AltReceiver::new();
        let mut payload = 0;
        for w in &p.sent[0] {
            match rx.receive(*w).unwrap() {
                AltItem::Message(DlMessage::UartStream { length, .. }) => assert!(usize::from(length) < 32),
                AltItem::UartWord { .. } => payload += 1,
                _ => {}
            }
        }
        assert_eq!(payload, 2000);
    }

    #[test]
    fn uart_reset_flushes_both_sides_and_resumes() {
        let mut p = Pair::new();
        assert!(p.s[0].uart_reset().is_err(), "no UART message while Channel 4 is offline");
        p.run(5);
        assert!(p.sent[0].is_empty());
        p.online(CHANNEL_UART);
        let words: Vec<u32> = (0..300).collect();
        let _ = uart_transfer(&mut p, &words, 0, 60);
        assert!(p.q[0].is_empty(), "the credits ran out and the last stream has gone");
        let mark = p.sent[0].len();
        p.s[0].uart_reset().unwrap();
        assert_eq!(p.s[0].uart_write(&[1]), 0, "writes are discarded until the reset completes");
        // The partner's reset response goes missing: the request is sent again after the time-out.
        p.s[0].cfg.uart_reset_timeout = 50;
        p.drop[1] = true;
        p.run(60);
        p.drop[1] = false;
        p.run(40);
        assert_eq!(p.events[0], [ServiceEvent::UartReset]);
        assert_eq!(p.events[1], [ServiceEvent::UartReset, ServiceEvent::UartReset]);
        let sent = messages_from(&p.sent[0], mark);
        assert!(sent[..40].iter().all(|m| *m == DlMessage::NoOp), "40 No-Ops first, nothing else");
        assert_eq!(sent[40], DlMessage::UartResetReq { stream: 0, all_streams: false });
        let requests = sent.iter().filter(|m| matches!(m, DlMessage::UartResetReq { .. })).count();
        assert_eq!(requests, 2, "sent again after the time-out");
        assert_eq!(p.s[1].uart_fill(), (0, 0), "the partner flushed");
        // Normal operation: a fresh transfer arrives whole.
        let fresh: Vec<u32> = (1000..1400).collect();
        assert_eq!(uart_transfer(&mut p, &fresh, 4, 400), fresh);
    }
}
