//! RC Link TYPE1 reliable unicast: the go-back-N requester and responder of one queue pair.
//!
//! Public facts (UniVista RCLINK_AFH_SPEC v2.4 as `xiangli-sophgo/Tier6-Model`
//! `docs/design/PAXI/12_rclink` quotes it): TYPE1 is reliable unicast with go-back-N over a
//! 12-bit PSN, with 512 packets outstanding at most (the IP's TYPE1 queue, `TYPE1_OST_N`,
//! shared by its QPs); each transmit slot moves EMPTY →
//! WAIT_GRANT → WAIT_ACK, back to WAIT_GRANT on a retry request and to EMPTY on an ACK, and waits
//! (WAIT_CRD) while rate control holds it; the receiver merges ACKs (ACK MERGE) and answers a
//! packet with Fack = 1 at once; a retry timeout and a retry-count threshold end in an error
//! interrupt; RNR retries are counted apart from timeouts (`RETRY_CNT_MEM`: retry_counter,
//! rnr_retry_counter); only QPs with the same P_key communicate; rate control gives each QP a
//! byte budget per window of 4.096, 8.192, 16.384, 32.768 or 65.536 µs, and at each window's
//! reset subtracts the budget from the bytes counted, saturating at 0 (an overspend carries
//! over).
//!
//! Here: [`Requester`] keeps each SEND's payload in a [`ReplayBuffer`] (the EMPTY/WAIT_ACK
//! slots; its cursor is WAIT_GRANT) and [`Responder`] accepts packets strictly in PSN order.
//! Both are sans-I/O: payloads in through [`Requester::send`] and [`Responder::handle_send`],
//! RHs and payloads out through [`Requester::poll_transmit`] and [`Responder::poll_ack`], time
//! through [`Requester::poll_timeout`] and [`Requester::handle_timeout`] (a responder's ACKs fall
//! due by themselves: [`Responder::poll_timeout`] says when to call `poll_ack` again). Framing is
//! [`crate::frame`]'s; CBFC and LLR underneath are `linklayer`'s (a `linklayer::link::Link`
//! carries RC Link frames like any other).
//!
//! One endpoint that both sends and receives on a QP holds a [`Requester`] (its SENDs, and the
//! ACKs that come back for them) and a [`Responder`] (the peer's SENDs, and the ACKs it owes).
//! Route a received packet by its RH: [`RhKind::Send`] to the responder, ACK, NAK and CNP to the
//! requester. Neither checks the Dest_QP of an ACK; the embedder demultiplexes QPs (one pair per
//! peer QP), which is also how it knows the peer of a packet.
//!
//! Go-back-N resends every packet after a lost one: at a loss rate `p` and a window of `W`
//! packets in flight, expect about `p·W` resends per packet sent. Carried over LLR, the link
//! replays first and the end-to-end retry rarely fires.
//!
//! *Project-defined* (no source says; IB RC's rules where RC Link borrows IB names):
//!
//! * an ACK carries the PSN of the last packet received in order (cumulative); a NAK (syndrome
//!   NAK, code 0, PSN sequence error) carries the PSN expected next and acknowledges every
//!   packet before it; the responder sends one NAK per gap, and again only after the gap's
//!   packet arrives or times out at the requester;
//! * one requester keeps at most [`RequesterConfig::max_outstanding`] packets outstanding (at
//!   most 512, what the whole IP holds);
//! * a duplicate (a PSN already received, up to 2047 behind) is dropped and answered by an ACK
//!   at once, in case the requester lost the earlier one; a packet ahead of the expected PSN is
//!   dropped (go-back-N has no reordering buffer);
//! * the responder merges ACKs: one per [`ResponderConfig::ack_every`] packets, at once on
//!   Fack, a duplicate or a NAK, else within [`ResponderConfig::ack_delay`];
//! * the requester sets Fack on every [`RequesterConfig::fack_every`]-th packet and on the last
//!   packet queued, so the responder's merging never waits out its delay at the end of a burst;
//! * a retry timeout rewinds to the oldest unacknowledged packet; [`RequesterConfig::max_retries`]
//!   timeouts in a row without progress fail the QP ([`QpEvent::Failed`]); any acknowledgement
//!   of new packets resets the count;
//! * RNR NAK: the requester acknowledges what precedes its PSN and resends from it after
//!   `(timer + 1)` µs, the retry timer held off meanwhile; [`RequesterConfig::max_rnr_retries`]
//!   RNR NAKs in a row fail the QP (the timer encoding is not public; InfiniBand's table is not
//!   assumed);
//! * a NAK restarts the retry timer from the resend;
//! * Timestamp: the requester stamps every transmission with the time in units of
//!   [`TIMESTAMP_UNIT_NS`] (16 bits, Timestamp_en set); the responder echoes the newest stamp in
//!   its ACK or NAK; the requester's RTT sample is the difference;
//! * rate control: a packet may start while the window's count is below the budget (it may end
//!   past it); windows follow each other from the first transmission, any duration allowed.

use crate::rclink::{PSN_MODULUS, RhKind, RoutingHeader, Syndrome};
use heapless::Deque;
use linklayer::llr::ReplayBuffer;
use linklayer::seq::{Bits, Seq};
use linklayer::{Duration, Instant};

/// The PSN space: 12 bits.
pub type Psn = Seq<Bits<12>>;

/// The most packets outstanding: RC Link's TYPE1 queue, shared by the IP's QPs.
pub const MAX_OUTSTANDING: usize = 512;

/// Nanoseconds per unit of the RH timestamp (project-defined; 16 bits span about 1 ms).
pub const TIMESTAMP_UNIT_NS: u64 = 16;

/// A packet fewer than this many PSNs behind the expected one is a duplicate (half the space).
const DUPLICATE_WINDOW: u64 = PSN_MODULUS as u64 / 2;

/// Why a call was refused. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QpError {
    /// The window (outstanding packets or stored bytes) is full: wait for ACKs.
    WindowFull,
    /// The QP failed ([`QpEvent::Failed`]); make both ends anew.
    Failed,
    /// An empty payload, or one larger than [`RequesterConfig::max_payload`].
    BadPayload,
    /// A configuration value out of range.
    BadConfig {
        /// The field.
        field: &'static str,
    },
}

impl core::fmt::Display for QpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            QpError::WindowFull => f.write_str("send window full"),
            QpError::Failed => f.write_str("queue pair failed"),
            QpError::BadPayload => f.write_str("payload empty or too large"),
            QpError::BadConfig { field } => write!(f, "configuration field {field} out of range"),
        }
    }
}

impl core::error::Error for QpError {}

/// Per-QP rate control: at most `bytes` of payload per `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RateLimit {
    /// The window (RC Link: 4.096 to 65.536 µs).
    pub window: Duration,
    /// The payload bytes a window allows.
    pub bytes: u32,
}

/// The requester's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequesterConfig {
    /// Dest_QP of every SEND. The vendor's RC Link IP banks its TYPE1 requests by the QP
    /// number's two low bits and asks that a QP and its peer agree in them (SRC_QPID\[1:0\] =
    /// DEST_QPID\[1:0\], RCLINK_AFH_SPEC v2.4 as `12_rclink` §12.3.4 quotes it); nothing here
    /// depends on it, so it is not checked: pick numbers that keep it when the peer is that IP.
    pub dest_qp: u16,
    /// P_key of every SEND.
    pub p_key: u8,
    /// The first PSN.
    pub first_psn: u16,
    /// Packets outstanding at most: 1 to [`MAX_OUTSTANDING`] (and the buffer's slots).
    pub max_outstanding: u16,
    /// The largest payload (RC Link TYPE1: 1344 bytes).
    pub max_payload: u16,
    /// The retry timer.
    pub retry_timeout: Duration,
    /// Timeouts in a row without progress before the QP fails (at least 1; RC Link's field is
    /// 4 bits).
    pub max_retries: u8,
    /// RNR NAKs in a row without progress before the QP fails (at least 1).
    pub max_rnr_retries: u8,
    /// Fack on every this many packets (0: only on the last packet queued).
    pub fack_every: u16,
    /// Rate control, if on.
    pub rate: Option<RateLimit>,
}

impl RequesterConfig {
    /// Defaults for `dest_qp`: 512 outstanding, 1344-byte payloads, a 20 µs retry timer, 7
    /// retries, Fack every 64 packets, no rate limit.
    pub const fn new(dest_qp: u16) -> Self {
        RequesterConfig {
            dest_qp,
            p_key: 0,
            first_psn: 0,
            max_outstanding: MAX_OUTSTANDING as u16,
            max_payload: 1344,
            retry_timeout: Duration::from_micros(20),
            max_retries: 7,
            max_rnr_retries: 7,
            fack_every: 64,
            rate: None,
        }
    }
}

/// What a requester reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QpEvent {
    /// `max_retries` timeouts, or `max_rnr_retries` RNR waits, in a row without progress: the
    /// QP stops. `unacked` packets were not acknowledged.
    Failed {
        /// Packets stored and not acknowledged.
        unacked: usize,
    },
}

/// Counters of a requester.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequesterStats {
    /// Packets transmitted the first time.
    pub sent: u64,
    /// Packets transmitted again.
    pub retransmitted: u64,
    /// Packets acknowledged.
    pub acked: u64,
    /// NAKs (and RNR NAKs) received.
    pub naks: u64,
    /// Retry timeouts.
    pub timeouts: u64,
    /// CNPs received.
    pub cnps: u64,
    /// The newest RTT sample.
    pub rtt: Option<Duration>,
}

impl RequesterStats {
    /// Every counter zero, no RTT sample.
    pub const ZERO: Self =
        RequesterStats { sent: 0, retransmitted: 0, acked: 0, naks: 0, timeouts: 0, cnps: 0, rtt: None };
}

/// An RC Link packet to send: its RH and payload (borrowed from the requester's buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing<'a> {
    /// The RH (Pad and Pkt_len are set by [`crate::frame::emit`]).
    pub rh: RoutingHeader,
    /// The payload.
    pub payload: &'a [u8],
    /// Whether this is a retransmission.
    pub retransmission: bool,
}

fn stamp(now: Instant) -> u16 {
    (now.as_nanos() / TIMESTAMP_UNIT_NS) as u16
}

/// The go-back-N sender of one QP: payload storage `B` and `N` packet slots.
///
/// Sizing: at most `min(N, max_outstanding)` packets are outstanding, so make `N` the
/// configured `max_outstanding` (at most [`MAX_OUTSTANDING`], 512). `B` holds their payloads
/// contiguously in a ring; give it `max_outstanding × max_payload` bytes to never run out before
/// the slots do (less limits the window by bytes: [`Requester::send`] then says
/// [`QpError::WindowFull`] earlier). [`Requester::new`] refuses storage smaller than one
/// `max_payload`.
///
/// Size on a 64-bit host: 2 312 bytes with 64 slots, 32 more per slot, besides the payload
/// storage. Built in place: [`Requester::EMPTY`] and [`Requester::init`].
#[derive(Clone, Debug)]
pub struct Requester<B, const N: usize> {
    config: RequesterConfig,
    buffer: ReplayBuffer<Bits<12>, B, N>,
    /// When the retry timer fires, while packets are outstanding.
    retry_at: Option<Instant>,
    /// Resend from the cursor not before this (an RNR NAK's wait).
    hold_until: Option<Instant>,
    retries: u8,
    rnr_retries: u8,
    since_fack: u16,
    /// The current rate window's end and the bytes it has used.
    window_end: Instant,
    window_used: u32,
    failed: bool,
    events: Deque<QpEvent, 2>,
    stats: RequesterStats,
}

impl RequesterConfig {
    /// Every field zero (no packet outstanding, no payload): the configuration of a
    /// [`Requester::EMPTY`], which refuses every payload until [`Requester::init`].
    pub const ZERO: Self = RequesterConfig {
        dest_qp: 0,
        p_key: 0,
        first_psn: 0,
        max_outstanding: 0,
        max_payload: 0,
        retry_timeout: Duration::ZERO,
        max_retries: 0,
        max_rnr_retries: 0,
        fack_every: 0,
        rate: None,
    };
}

impl<const L: usize, const N: usize> Requester<[u8; L], N> {
    /// A requester with its payload storage inline and every byte zero, so a `static` holding
    /// it lands in `.bss` (no flash, no start-up copy): [`RequesterConfig::ZERO`], refusing
    /// every payload until [`Requester::init`] configures it in place.
    pub const EMPTY: Self = Self::unconfigured([0; L]);
}

impl<B: AsRef<[u8]> + AsMut<[u8]>, const N: usize> Requester<B, N> {
    /// A requester storing payloads in `storage`. (Built on the stack; see [`Requester::init`]
    /// for building one in place.)
    pub fn new(config: RequesterConfig, storage: B) -> Result<Self, QpError> {
        let mut requester = Self::unconfigured(storage);
        requester.init(config)?;
        Ok(requester)
    }

    /// A requester with every field zero but `storage`: [`RequesterConfig::ZERO`].
    const fn unconfigured(storage: B) -> Self {
        Requester {
            config: RequesterConfig::ZERO,
            buffer: ReplayBuffer::new(storage, Psn::from_index(0)),
            retry_at: None,
            hold_until: None,
            retries: 0,
            rnr_retries: 0,
            since_fack: 0,
            window_end: Instant::ZERO,
            window_used: 0,
            failed: false,
            events: Deque::new(),
            stats: RequesterStats::ZERO,
        }
    }

    /// Makes this requester what [`Requester::new`]`(config, storage)` returns with its own
    /// storage, in place (without a second requester on the stack): nothing stored or
    /// outstanding, counters at zero. Refused as `new` refuses, and then nothing changed. On a
    /// [`Requester::EMPTY`] in a `static`, this is how firmware builds one.
    pub fn init(&mut self, config: RequesterConfig) -> Result<(), QpError> {
        let slots = (config.max_outstanding as usize).min(N);
        if slots == 0 || config.max_outstanding as usize > MAX_OUTSTANDING {
            return Err(QpError::BadConfig { field: "max_outstanding" });
        }
        if config.max_retries == 0 || config.max_rnr_retries == 0 {
            return Err(QpError::BadConfig { field: "max_retries" });
        }
        if config.dest_qp > crate::rclink::MAX_QP {
            return Err(QpError::BadConfig { field: "dest_qp" });
        }
        let first = Psn::new(config.first_psn as u32).ok_or(QpError::BadConfig { field: "first_psn" })?;
        if config.rate.is_some_and(|r| r.bytes == 0 || r.window == Duration::ZERO) {
            return Err(QpError::BadConfig { field: "rate" });
        }
        if self.buffer.capacity_bytes() < config.max_payload as usize || config.max_payload == 0 {
            return Err(QpError::BadConfig { field: "storage smaller than max_payload" });
        }
        self.config = config;
        self.buffer.reset_to(first);
        self.retry_at = None;
        self.hold_until = None;
        self.retries = 0;
        self.rnr_retries = 0;
        self.since_fack = 0;
        self.window_end = Instant::ZERO;
        self.window_used = 0;
        self.failed = false;
        self.events.clear();
        self.stats = RequesterStats::ZERO;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &RequesterConfig {
        &self.config
    }

    /// The counters.
    pub fn stats(&self) -> &RequesterStats {
        &self.stats
    }

    /// Packets stored: sent and unacknowledged, or queued.
    pub fn outstanding(&self) -> usize {
        self.buffer.len()
    }

    /// Whether the QP failed.
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Whether [`Requester::send`] would take a payload of `len` bytes now. Ask it with
    /// `max_payload` before taking a frame out of an aggregator, so that a refused one is never
    /// left in hand.
    pub fn can_send(&self, len: usize) -> bool {
        !self.failed
            && (1..=self.config.max_payload as usize).contains(&len)
            && self.buffer.len() < self.config.max_outstanding as usize
            && self.buffer.can_push(len)
    }

    /// Queues `payload` as the next SEND; returns its PSN.
    pub fn send(&mut self, now: Instant, payload: &[u8]) -> Result<u16, QpError> {
        if self.failed {
            return Err(QpError::Failed);
        }
        if payload.is_empty() || payload.len() > self.config.max_payload as usize {
            return Err(QpError::BadPayload);
        }
        if self.buffer.len() >= self.config.max_outstanding as usize {
            return Err(QpError::WindowFull);
        }
        let psn = self.buffer.push(now, payload).map_err(|_| QpError::WindowFull)?;
        Ok(psn.value() as u16)
    }

    /// The next packet to transmit, if the window, the rate limit and an RNR wait allow.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing<'_>> {
        if self.failed || self.buffer.pending() == 0 || self.hold_until.is_some_and(|t| now < t) {
            return None;
        }
        self.hold_until = None;
        if let Some(rate) = self.config.rate {
            if now >= self.window_end {
                // Each window's reset takes one budget off the count (an overspend carries over);
                // windows follow each other from the first transmission.
                let window = rate.window.as_nanos().max(1);
                let resets = match self.window_end {
                    Instant::ZERO => 1,
                    end => now.saturating_duration_since(end).as_nanos() / window + 1,
                };
                let credit = u32::try_from(resets.saturating_mul(u64::from(rate.bytes))).unwrap_or(u32::MAX);
                self.window_used = self.window_used.saturating_sub(credit);
                self.window_end = match self.window_end {
                    Instant::ZERO => now.saturating_add(rate.window),
                    end => end.saturating_add(Duration::from_nanos(resets.saturating_mul(window))),
                };
            }
            if self.window_used >= rate.bytes {
                return None;
            }
        }
        let last_queued = self.buffer.pending() == 1;
        let config = self.config;
        let out = self.buffer.poll_next()?;
        self.since_fack = self.since_fack.wrapping_add(1);
        let fack = last_queued || (config.fack_every != 0 && self.since_fack >= config.fack_every);
        if fack {
            self.since_fack = 0;
        }
        if out.replay {
            self.stats.retransmitted += 1;
        } else {
            self.stats.sent += 1;
        }
        self.window_used = self.window_used.saturating_add(out.frame.len() as u32);
        if self.retry_at.is_none() {
            self.retry_at = Some(now.saturating_add(config.retry_timeout));
        }
        let rh = RoutingHeader {
            p_key: config.p_key,
            timestamp: stamp(now),
            timestamp_en: true,
            fack,
            ..RoutingHeader::send(config.dest_qp, out.seq.value() as u16)
        };
        Some(Outgoing { rh, payload: out.frame, retransmission: out.replay })
    }

    /// Takes an ACK, NAK or CNP for this QP's SENDs (the Dest_QP is not checked: module doc; one
    /// with another P_key is ignored).
    /// Returns how many packets it acknowledged; a stale or impossible one changes nothing.
    pub fn handle_ack(&mut self, now: Instant, rh: &RoutingHeader) -> usize {
        if self.failed {
            return 0;
        }
        let Some(psn) = Psn::new(rh.psn as u32) else { return 0 };
        if rh.p_key != self.config.p_key {
            return 0;
        }
        // `taken`: an ACK or NAK of this QP's that its window accepts (not a CNP, a reserved
        // syndrome, or a stale or impossible PSN).
        let (acked, taken) = match rh.kind {
            RhKind::AckNak(Syndrome::Ack { .. }) => self.buffer.ack(psn).map_or((0, false), |n| (n, true)),
            RhKind::AckNak(Syndrome::Nak { .. }) | RhKind::AckNak(Syndrome::RnrNak { .. }) => {
                let Ok(acked) = self.buffer.ack(psn.prev()) else { return 0 };
                if acked > 0 {
                    self.rnr_retries = 0;
                }
                let rewound = self.buffer.rewind(psn).is_ok();
                if rewound {
                    self.stats.naks += 1;
                    let holding = self.hold_until.is_some_and(|t| now < t);
                    if let RhKind::AckNak(Syndrome::RnrNak { timer }) = rh.kind {
                        let until = now.saturating_add(Duration::from_micros(timer as u64 + 1));
                        self.hold_until = Some(self.hold_until.filter(|_| holding).map_or(until, |h| h.max(until)));
                        // One wait counts once, however many RNR NAKs (duplicates) announce it.
                        if !holding {
                            self.rnr_retries = self.rnr_retries.saturating_add(1);
                        }
                    }
                    // The retry timer runs from the resend, not from before the NAK.
                    self.retry_at = Some(self.resend_base(now).saturating_add(self.config.retry_timeout));
                }
                (acked, rewound)
            }
            RhKind::AckNak(Syndrome::Reserved { .. }) | RhKind::Send { .. } => (0, false),
            RhKind::Cnp { .. } => {
                self.stats.cnps += 1;
                (0, false)
            }
        };
        // The round trip is sampled from the answers taken only.
        if taken && rh.timestamp_en {
            let units = stamp(now).wrapping_sub(rh.timestamp) as u64;
            self.stats.rtt = Some(Duration::from_nanos(units * TIMESTAMP_UNIT_NS));
        }
        if acked > 0 {
            self.stats.acked += acked as u64;
            self.retries = 0;
            if matches!(rh.kind, RhKind::AckNak(Syndrome::Ack { .. })) {
                self.rnr_retries = 0;
                let base = self.resend_base(now);
                self.retry_at = (self.buffer.in_flight() > 0).then(|| base.saturating_add(self.config.retry_timeout));
            }
        }
        if self.rnr_retries >= self.config.max_rnr_retries {
            self.fail();
        }
        acked
    }

    /// When the next (re)transmission can start: now, or the end of an RNR wait.
    fn resend_base(&self, now: Instant) -> Instant {
        self.hold_until.filter(|&t| now < t).unwrap_or(now)
    }

    /// When [`Requester::handle_timeout`] has work: the retry timer, an RNR wait, or the end of
    /// a rate window that holds packets back.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.failed {
            return None;
        }
        let held = self.buffer.pending() > 0;
        let rate = self.config.rate.filter(|r| held && self.window_used >= r.bytes).map(|_| self.window_end);
        [self.retry_at, self.hold_until.filter(|_| held), rate].into_iter().flatten().min()
    }

    /// The retry timer: go back to the oldest unacknowledged packet, or fail after
    /// `max_retries` in a row.
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(at) = self.retry_at else { return };
        if self.failed || now < at {
            return;
        }
        if self.buffer.in_flight() == 0 {
            self.retry_at = None;
            return;
        }
        self.stats.timeouts += 1;
        self.retries = self.retries.saturating_add(1);
        if self.retries >= self.config.max_retries {
            self.fail();
            return;
        }
        self.buffer.rewind_all();
        self.hold_until = None;
        self.retry_at = Some(now.saturating_add(self.config.retry_timeout));
    }

    fn fail(&mut self) {
        self.failed = true;
        self.retry_at = None;
        let _ = self.events.push_back(QpEvent::Failed { unacked: self.buffer.len() });
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<QpEvent> {
        self.events.pop_front()
    }
}

/// The responder's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ResponderConfig {
    /// This QP's number: SENDs to another Dest_QP are not ours.
    pub qp: u16,
    /// Dest_QP of our ACKs (the requester's QP; on the bank rule see
    /// [`RequesterConfig::dest_qp`]).
    pub ack_qp: u16,
    /// P_key: SENDs with another are not ours; our ACKs carry it.
    pub p_key: u8,
    /// The first PSN expected.
    pub first_psn: u16,
    /// Merge ACKs: one per this many packets in order (at least 1).
    pub ack_every: u16,
    /// The longest an ACK is owed.
    pub ack_delay: Duration,
}

impl ResponderConfig {
    /// Defaults: ACK every 16 packets or within 1 µs.
    pub const fn new(qp: u16, ack_qp: u16) -> Self {
        ResponderConfig { qp, ack_qp, p_key: 0, first_psn: 0, ack_every: 16, ack_delay: Duration::from_micros(1) }
    }
}

/// What became of a received SEND.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// In order: deliver the payload.
    Deliver,
    /// Received before: dropped (an ACK follows at once).
    Duplicate,
    /// Ahead of the expected PSN: dropped (a NAK follows, once per gap).
    OutOfOrder,
    /// For another QP, or not a SEND: ignored.
    NotOurs,
}

/// Counters of a responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ResponderStats {
    /// Packets delivered.
    pub delivered: u64,
    /// Duplicates dropped.
    pub duplicates: u64,
    /// Packets ahead of the expected PSN dropped.
    pub out_of_order: u64,
    /// ACKs sent.
    pub acks: u64,
    /// NAKs sent.
    pub naks: u64,
}

/// The in-order receiver of one QP.
#[derive(Clone, Debug)]
pub struct Responder {
    config: ResponderConfig,
    expected: Psn,
    /// Packets delivered since the last ACK.
    unacked: u16,
    /// An ACK is owed at once.
    ack_now: bool,
    /// An ACK is owed by then.
    ack_by: Option<Instant>,
    /// A NAK is to be sent; and one was sent for the current gap.
    nak_pending: bool,
    nak_sent: bool,
    echo: Option<u16>,
    stats: ResponderStats,
}

impl Responder {
    /// A responder expecting `config.first_psn`.
    pub fn new(config: ResponderConfig) -> Result<Self, QpError> {
        if config.ack_every == 0 {
            return Err(QpError::BadConfig { field: "ack_every" });
        }
        if config.qp > crate::rclink::MAX_QP || config.ack_qp > crate::rclink::MAX_QP {
            return Err(QpError::BadConfig { field: "qp" });
        }
        let expected = Psn::new(config.first_psn as u32).ok_or(QpError::BadConfig { field: "first_psn" })?;
        Ok(Responder {
            config,
            expected,
            unacked: 0,
            ack_now: false,
            ack_by: None,
            nak_pending: false,
            nak_sent: false,
            echo: None,
            stats: ResponderStats::default(),
        })
    }

    /// The counters.
    pub fn stats(&self) -> &ResponderStats {
        &self.stats
    }

    /// The PSN expected next.
    pub fn expected(&self) -> u16 {
        self.expected.value() as u16
    }

    /// Takes a received packet's RH: whether to deliver its payload.
    pub fn handle_send(&mut self, now: Instant, rh: &RoutingHeader) -> Verdict {
        if rh.dest_qp != self.config.qp || rh.p_key != self.config.p_key || !matches!(rh.kind, RhKind::Send { .. }) {
            return Verdict::NotOurs;
        }
        let Some(psn) = Psn::new(rh.psn as u32) else { return Verdict::NotOurs };
        if rh.timestamp_en {
            self.echo = Some(rh.timestamp);
        }
        if psn == self.expected {
            self.expected = psn.next();
            self.nak_sent = false;
            self.nak_pending = false;
            self.unacked = self.unacked.saturating_add(1);
            self.stats.delivered += 1;
            if rh.fack || self.unacked >= self.config.ack_every {
                self.ack_now = true;
            } else if self.ack_by.is_none() {
                self.ack_by = Some(now.saturating_add(self.config.ack_delay));
            }
            return Verdict::Deliver;
        }
        if psn.distance_to(self.expected) < DUPLICATE_WINDOW {
            self.stats.duplicates += 1;
            self.ack_now = true;
            return Verdict::Duplicate;
        }
        self.stats.out_of_order += 1;
        if !self.nak_sent {
            self.nak_pending = true;
            self.nak_sent = true;
        }
        Verdict::OutOfOrder
    }

    /// The next ACK or NAK to send (an RH with no payload), if one is due. Call it after every
    /// [`Responder::handle_send`] and when [`Responder::poll_timeout`] passes.
    pub fn poll_ack(&mut self, now: Instant) -> Option<RoutingHeader> {
        let (syndrome, psn) = if self.nak_pending {
            self.nak_pending = false;
            self.stats.naks += 1;
            (Syndrome::Nak { code: Syndrome::PSN_SEQUENCE_ERROR }, self.expected)
        } else if self.ack_now || self.ack_by.is_some_and(|t| now >= t) {
            self.stats.acks += 1;
            (Syndrome::Ack { credits: 0 }, self.expected.prev())
        } else {
            return None;
        };
        // A NAK acknowledges what precedes it: either way nothing more is owed.
        (self.ack_now, self.ack_by, self.unacked) = (false, None, 0);
        Some(RoutingHeader {
            dest_qp: self.config.ack_qp,
            psn: psn.value() as u16,
            kind: RhKind::AckNak(syndrome),
            p_key: self.config.p_key,
            timestamp: self.echo.unwrap_or(0),
            timestamp_en: self.echo.is_some(),
            pad: 0,
            fack: false,
        })
    }

    /// When an ACK falls due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.ack_now || self.nak_pending { Some(Instant::ZERO) } else { self.ack_by }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Req = Requester<[u8; 4096], 16>;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn pair(every: u16) -> (Req, Responder) {
        let config = RequesterConfig { max_outstanding: 16, fack_every: 0, ..RequesterConfig::new(7) };
        let responder = ResponderConfig { ack_every: every, ..ResponderConfig::new(7, 3) };
        (Requester::new(config, [0; 4096]).unwrap(), Responder::new(responder).unwrap())
    }

    /// Moves every packet the requester has to the responder (dropping those `lose` picks),
    /// returns the delivered payloads.
    fn deliver(tx: &mut Req, rx: &mut Responder, now: Instant, lose: &mut dyn FnMut(u16) -> bool) -> std::vec::Vec<u8> {
        let mut got = std::vec::Vec::new();
        while let Some(out) = tx.poll_transmit(now) {
            if lose(out.rh.psn) {
                continue;
            }
            if rx.handle_send(now, &out.rh) == Verdict::Deliver {
                got.push(out.payload[0]);
            }
        }
        got
    }

    /// A loss, its NAK, the resend and a retry timeout; every packet `tx` sent, with its RH.
    fn transcript(tx: &mut Req, rx: &mut Responder) -> std::vec::Vec<(RoutingHeader, std::vec::Vec<u8>)> {
        let mut sent = std::vec::Vec::new();
        for i in 0..6u8 {
            tx.send(at(0), &[i, 9]).unwrap();
        }
        for now in [at(0), at(0), at(30_000)] {
            tx.handle_timeout(now);
            while let Some(out) = tx.poll_transmit(now) {
                sent.push((out.rh, out.payload.to_vec()));
                if out.rh.psn != 2 || sent.len() > 6 {
                    rx.handle_send(now, &out.rh);
                }
            }
            while let Some(ack) = rx.poll_ack(now) {
                tx.handle_ack(now, &ack);
            }
        }
        sent
    }

    #[test]
    fn init_in_place_restarts_as_new() {
        let (mut tx, mut rx) = pair(100);
        let first = transcript(&mut tx, &mut rx);
        assert!(tx.stats().retransmitted > 0, "the run resent");
        let fresh = *tx.stats();
        // A used requester, packets outstanding, configured afresh: the same run, byte for byte.
        tx.send(at(40_000), &[7]).unwrap();
        let config = *tx.config();
        tx.init(config).unwrap();
        assert_eq!(tx.outstanding(), 0);
        let (_, mut rx) = pair(100);
        assert_eq!(transcript(&mut tx, &mut rx), first);
        assert_eq!(tx.stats(), &fresh);
        // Refused as `new` refuses: nothing changed.
        let before = std::format!("{tx:?}");
        assert!(tx.init(RequesterConfig { max_retries: 0, ..config }).is_err());
        assert!(tx.init(RequesterConfig { max_payload: 4097, ..config }).is_err());
        assert_eq!(std::format!("{tx:?}"), before);
    }

    /// Which of nine packets queued at once carry Fack, with Fack every 4.
    fn facks(tx: &mut Req) -> std::vec::Vec<bool> {
        for i in 0..9u8 {
            tx.send(at(0), &[i]).unwrap();
        }
        core::iter::from_fn(|| tx.poll_transmit(at(0)).map(|o| o.rh.fack)).collect()
    }

    #[test]
    fn fack_every_counts_from_the_start_and_after_init() {
        let config = RequesterConfig { max_outstanding: 16, fack_every: 4, ..RequesterConfig::new(7) };
        // The 4th and 8th by count, the 9th as the last one queued.
        let want = [false, false, false, true, false, false, false, true, true];
        let mut tx = Req::new(config, [0; 4096]).unwrap();
        assert_eq!(facks(&mut tx), want);
        // Two sent since the last Fack, then configured afresh: the count starts over.
        let mut used = Req::new(config, [0; 4096]).unwrap();
        used.send(at(0), &[1]).unwrap();
        used.send(at(0), &[2]).unwrap();
        used.send(at(0), &[3]).unwrap();
        while used.poll_transmit(at(0)).is_some() {}
        used.send(at(0), &[4]).unwrap();
        used.poll_transmit(at(0));
        used.init(config).unwrap();
        assert_eq!(facks(&mut used), want);
    }

    #[test]
    fn an_empty_requester_refuses_payloads_until_init() {
        static EMPTY: Req = Req::EMPTY;
        let mut tx = EMPTY.clone();
        assert!(tx.send(at(0), &[1]).is_err());
        assert!(tx.poll_transmit(at(0)).is_none());
        tx.init(RequesterConfig { max_outstanding: 16, fack_every: 0, ..RequesterConfig::new(7) }).unwrap();
        let (mut fresh, mut rx) = pair(100);
        let (_, mut rx2) = pair(100);
        assert_eq!(transcript(&mut tx, &mut rx), transcript(&mut fresh, &mut rx2));
    }

    #[test]
    fn in_order_with_merged_acks() {
        let (mut tx, mut rx) = pair(4);
        for i in 0..10u8 {
            assert_eq!(tx.send(at(0), &[i]), Ok(i as u16));
        }
        assert_eq!(deliver(&mut tx, &mut rx, at(0), &mut |_| false), (0..10).collect::<std::vec::Vec<_>>());
        // Merged: the ACK is due at once (4 packets, and the last one had Fack) and covers 9.
        let ack = rx.poll_ack(at(0)).unwrap();
        assert_eq!((ack.psn, ack.dest_qp, ack.kind), (9, 3, RhKind::AckNak(Syndrome::Ack { credits: 0 })));
        assert_eq!(rx.poll_ack(at(0)), None);
        assert_eq!(tx.handle_ack(at(500), &ack), 10);
        assert_eq!((tx.outstanding(), tx.poll_timeout()), (0, None));
        assert_eq!(tx.stats().rtt, Some(Duration::from_nanos(496)));
        // Another P_key's ACK, a CNP and an ACK of a PSN never sent carry timestamps too, but
        // are not answers this QP takes.
        let foreign = RoutingHeader { p_key: ack.p_key ^ 1, ..ack };
        let cnp = RoutingHeader { kind: RhKind::Cnp { bits: 0 }, ..ack };
        let impossible = RoutingHeader { psn: 900, ..ack };
        for rh in [foreign, cnp, impossible] {
            tx.handle_ack(at(9_000), &rh);
            assert_eq!(tx.stats().rtt, Some(Duration::from_nanos(496)), "{rh:?}");
        }
    }

    #[test]
    fn a_loss_is_naked_once_and_resent_from_the_gap() {
        let (mut tx, mut rx) = pair(100);
        for i in 0..6u8 {
            tx.send(at(0), &[i]).unwrap();
        }
        assert_eq!(deliver(&mut tx, &mut rx, at(0), &mut |psn| psn == 2), [0, 1]);
        assert_eq!(rx.stats().out_of_order, 3);
        let nak = rx.poll_ack(at(0)).unwrap();
        assert_eq!((nak.psn, nak.kind), (2, RhKind::AckNak(Syndrome::Nak { code: 0 })));
        assert_eq!(rx.poll_ack(at(0)), None, "one NAK per gap");
        assert_eq!(tx.handle_ack(at(0), &nak), 2);
        assert_eq!(deliver(&mut tx, &mut rx, at(0), &mut |_| false), [2, 3, 4, 5]);
        assert_eq!(tx.stats().retransmitted, 4);
        // A stale NAK after that changes nothing.
        assert_eq!(tx.handle_ack(at(0), &nak), 0);
    }

    #[test]
    fn lost_acks_are_recovered_by_the_timer_and_duplicates_re_acked() {
        let (mut tx, mut rx) = pair(1);
        tx.send(at(0), &[1]).unwrap();
        deliver(&mut tx, &mut rx, at(0), &mut |_| false);
        let _lost = rx.poll_ack(at(0)).unwrap();
        assert_eq!(tx.poll_timeout(), Some(at(20_000)));
        tx.handle_timeout(at(20_000));
        assert_eq!(deliver(&mut tx, &mut rx, at(20_000), &mut |_| false), [] as [u8; 0]);
        assert_eq!(rx.stats().duplicates, 1);
        let ack = rx.poll_ack(at(20_000)).unwrap();
        assert_eq!(tx.handle_ack(at(20_000), &ack), 1);
        assert_eq!((tx.stats().timeouts, tx.stats().retransmitted), (1, 1));
    }

    #[test]
    fn an_overspent_rate_window_carries_over() {
        let config = RequesterConfig {
            rate: Some(RateLimit { window: Duration::from_nanos(1000), bytes: 100 }),
            ..RequesterConfig::new(7)
        };
        let mut tx = Requester::<[u8; 4096], 16>::new(config, [0; 4096]).unwrap();
        tx.send(at(0), &[0; 1000]).unwrap();
        tx.send(at(0), &[1; 10]).unwrap();
        assert!(tx.poll_transmit(at(0)).is_some());
        // 1000 bytes against 100 a window: the next packet waits nine more windows.
        assert!(tx.poll_transmit(at(9000)).is_none());
        assert!(tx.poll_transmit(at(10_000)).is_some());
    }

    #[test]
    fn an_rnr_wait_outlasts_the_retry_timer_and_counts_once() {
        let mut tx = Requester::<[u8; 4096], 16>::new(RequesterConfig::new(7), [0; 4096]).unwrap();
        tx.send(at(0), &[1]).unwrap();
        tx.poll_transmit(at(0)).unwrap();
        let rnr = RoutingHeader { kind: RhKind::AckNak(Syndrome::RnrNak { timer: 31 }), ..RoutingHeader::send(3, 0) };
        tx.handle_ack(at(1000), &rnr);
        tx.handle_ack(at(1500), &rnr); // a duplicate of the same RNR NAK
        let nak = RoutingHeader { kind: RhKind::AckNak(Syndrome::Nak { code: 0 }), ..rnr };
        tx.handle_ack(at(2000), &nak); // and a plain NAK during the wait
        // The retry timer runs from the end of the 32 µs wait, not from the NAKs.
        tx.handle_timeout(at(22_000));
        assert_eq!((tx.stats().timeouts, tx.poll_transmit(at(22_000)).is_none()), (0, true));
        // The duplicate's own wait ends later (1.5 + 32 µs); it is one wait all the same.
        assert_eq!(tx.poll_timeout(), Some(at(33_500)));
        assert!(tx.poll_transmit(at(33_500)).is_some());
        // An ACK with another P_key is not for us.
        let ack = RoutingHeader { p_key: 9, kind: RhKind::AckNak(Syndrome::Ack { credits: 0 }), ..rnr };
        assert_eq!(tx.handle_ack(at(34_000), &ack), 0);
        assert_eq!(tx.handle_ack(at(34_000), &RoutingHeader { p_key: 0, ..ack }), 1);
    }

    #[test]
    fn another_p_key_is_not_ours() {
        let mut rx = Responder::new(ResponderConfig { p_key: 3, ..ResponderConfig::new(7, 1) }).unwrap();
        let mut tx = Requester::<[u8; 4096], 16>::new(RequesterConfig::new(7), [0; 4096]).unwrap();
        tx.send(at(0), &[1]).unwrap();
        let out = tx.poll_transmit(at(0)).unwrap();
        assert_eq!(rx.handle_send(at(0), &out.rh), Verdict::NotOurs);
        assert_eq!(rx.handle_send(at(0), &RoutingHeader { p_key: 3, ..out.rh }), Verdict::Deliver);
        assert_eq!(rx.poll_ack(at(0)).unwrap().p_key, 3);
    }

    #[test]
    fn retries_exhausted_fail_the_qp() {
        let (mut tx, _) = pair(1);
        tx.send(at(0), &[1]).unwrap();
        let mut now = at(0);
        for _ in 0..7 {
            assert!(tx.poll_transmit(now).is_some());
            now = tx.poll_timeout().unwrap();
            tx.handle_timeout(now);
        }
        assert_eq!(tx.poll_event(), Some(QpEvent::Failed { unacked: 1 }));
        assert_eq!(tx.send(now, &[2]), Err(QpError::Failed));
        assert!(tx.poll_transmit(now).is_none());
    }

    #[test]
    fn window_rate_and_rnr() {
        let config = RequesterConfig {
            max_outstanding: 2,
            rate: Some(RateLimit { window: Duration::from_nanos(4096), bytes: 100 }),
            ..RequesterConfig::new(7)
        };
        let mut tx = Requester::<[u8; 4096], 16>::new(config, [0; 4096]).unwrap();
        tx.send(at(0), &[0; 100]).unwrap();
        tx.send(at(0), &[1; 100]).unwrap();
        assert_eq!(tx.send(at(0), &[2]), Err(QpError::WindowFull));
        assert_eq!(tx.send(at(0), &[]), Err(QpError::BadPayload));
        assert!(tx.poll_transmit(at(0)).is_some());
        // The window's 100 bytes are spent: the second waits for the next window.
        assert!(tx.poll_transmit(at(1)).is_none());
        assert_eq!(tx.poll_timeout(), Some(at(4096)));
        assert!(tx.poll_transmit(at(4096)).is_some());
        // An RNR NAK for PSN 1: PSN 0 acknowledged, PSN 1 resent after (3 + 1) µs.
        let rnr = RoutingHeader {
            dest_qp: 3,
            psn: 1,
            kind: RhKind::AckNak(Syndrome::RnrNak { timer: 3 }),
            p_key: 0,
            timestamp: 0,
            timestamp_en: false,
            pad: 0,
            fack: false,
        };
        assert_eq!(tx.handle_ack(at(5000), &rnr), 1);
        assert!(tx.poll_transmit(at(8999)).is_none());
        let again = tx.poll_transmit(at(9000)).unwrap();
        assert_eq!((again.rh.psn, again.retransmission), (1, true));
        // RNR NAKs count apart from timeouts, and the retry timer waits for the resend.
        let rnr_long = RoutingHeader { psn: 2, kind: RhKind::AckNak(Syndrome::RnrNak { timer: 31 }), ..rnr };
        tx.send(at(9000), &[2; 10]).unwrap();
        assert!(tx.poll_transmit(at(9000)).is_none());
        assert_eq!(tx.poll_transmit(at(13096)).map(|o| o.rh.psn), Some(2));
        assert_eq!(tx.handle_ack(at(13100), &rnr_long), 1);
        assert_eq!(tx.poll_timeout(), Some(at(13100 + 32_000)));
        tx.handle_timeout(at(13100 + 32_000));
        assert_eq!(tx.stats().timeouts, 0);
        for k in 1..7u64 {
            let t = at(13100 + k * 100_000);
            assert!(tx.poll_transmit(t).is_some());
            tx.handle_ack(t, &rnr_long);
        }
        assert_eq!(tx.poll_event(), Some(QpEvent::Failed { unacked: 1 }));
        assert_eq!(
            Requester::<[u8; 16], 4>::new(RequesterConfig { max_outstanding: 513, ..RequesterConfig::new(1) }, [0; 16])
                .unwrap_err(),
            QpError::BadConfig { field: "max_outstanding" }
        );
    }
}
