//! Transaction aggregation: many transactions to one peer on one VC packed into one compressed
//! frame, up to the MTU, each waiting at most a time budget the embedder sets.
//!
//! ETH-X names aggregation as its second efficiency tool beside header compression (the
//! whitepaper's encoding is not public); PAXI's own rule for AR×N and B×N flits is the model:
//! a flit is sent when its count reaches the watermark `TX_BUF_WM`, when the DA or VC changes,
//! or when the accumulation timer `TX_BUF_ACC_TW` expires (UniVista PAXI SUE2.0 documentation as
//! quoted by `xiangli-sophgo/Tier6-Model`, `docs/design/PAXI`). This aggregator keeps one open
//! frame per stream instead of flushing on a change of DA or VC, so interleaved traffic to
//! several peers still aggregates. **Project-defined:** the frame format (it is
//! [`crate::compress`]'s) and these rules:
//!
//! * a frame is ready when it holds [`AggregatorConfig::max_per_frame`] transactions, when the
//!   next transaction of its stream does not fit in [`AggregatorConfig::mtu`], when
//!   [`AggregatorConfig::budget`] has passed since its first transaction (checked by
//!   [`Aggregator::poll_transmit`] and [`Aggregator::handle_timeout`]), or on
//!   [`Aggregator::flush`];
//! * ready frames leave in the order they became ready, so each stream's frames leave in the
//!   order its compression context saw them;
//! * with a budget of zero, transactions pushed before the next `poll_transmit` still share a
//!   frame: batching without waiting.
//!
//! Sans-I/O: [`Aggregator::push`] takes a transaction, [`Aggregator::poll_transmit`] hands out
//! frames, [`Aggregator::poll_timeout`] says when to call [`Aggregator::handle_timeout`].
//! [`Deaggregator`] is the receiving half, a [`Decompressor`] that also collects the RESYNC
//! requests frames carry (even from frames it refuses): hand each one from
//! [`Deaggregator::poll_resync`] to this end's own [`Aggregator::reset_stream`], and answer a
//! frame [`Deaggregator::open`] refuses with [`Aggregator::request_resync`].
//!
//! With RC Link underneath, each frame is one packet's payload: keep `mtu` (and `M`) at most
//! the requester's `max_payload` (1344 for TYPE1), and ask `Requester::can_send(max_payload)`
//! before [`Aggregator::poll_transmit`], so that a frame taken out always has a place.
//!
//! ```
//! use ethx_paxi::aggregate::{Aggregator, AggregatorConfig, Deaggregator};
//! use ethx_paxi::axi::{AddrReq, Channel, Size};
//! use ethx_paxi::compress::{StreamKey, Txn};
//! use ethx_paxi::paxi::ChannelWidths;
//! use linklayer::{Duration, Instant};
//!
//! let config = AggregatorConfig { mtu: 1024, max_per_frame: 16, budget: Duration::from_nanos(200) };
//! // 8 streams' contexts, 2 open frames of up to 1024 bytes.
//! let mut tx = Aggregator::<8, 2, 1024>::new(ChannelWidths::EXAMPLE, config).unwrap();
//! let mut rx = Deaggregator::<8>::new(ChannelWidths::EXAMPLE).unwrap();
//! let gpu1 = StreamKey { peer: 1, vc: 0 };
//! let t0 = Instant::from_nanos(0);
//! for k in 0..4 {
//!     let load = AddrReq::incr(Channel::Read, 0x8000 + 128 * k, 2, Size::from_bytes(64).unwrap());
//!     tx.push(t0, gpu1, &Txn::Read(load)).unwrap();
//! }
//! assert_eq!(tx.poll_timeout(), Some(Instant::from_nanos(200)));
//! assert!(tx.poll_transmit(Instant::from_nanos(100)).is_none()); // still within the budget
//! let frame = tx.poll_transmit(Instant::from_nanos(200)).unwrap();
//! // Frame header 4 bytes; the first AR 10 (attributes, USER, a 16-bit address delta), the
//! // others 1 each (same ID and attributes, the next address).
//! assert_eq!((frame.key, frame.count, frame.bytes.len()), (gpu1, 4, 4 + 10 + 1 + 1 + 1));
//! let loads: Vec<_> = rx.open(1, frame.bytes).unwrap().collect();
//! assert_eq!(loads.len(), 4);
//! ```

use crate::compress::{
    self, CompressError, Compressor, Decompressor, FRAME_HEADER_LEN, Records, StreamKey, StreamSlot, Txn,
};
use crate::paxi::ChannelWidths;
use heapless::Vec;
use linklayer::{Duration, Instant};

/// Why a transaction was not taken. It was not queued; the stream's open frame may have been
/// made ready (when the transaction did not fit in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AggregateError {
    /// The transaction is not encodable ([`compress::check`]).
    Compress(CompressError),
    /// Every frame buffer is open for another stream or waiting to be sent: call
    /// [`Aggregator::poll_transmit`] first.
    Busy,
    /// The transaction cannot fit in one frame of the configured MTU.
    TooLarge,
    /// The configuration is not usable: `mtu` below 4 or above the frame buffers, or
    /// `max_per_frame` 0.
    BadConfig,
}

impl From<CompressError> for AggregateError {
    fn from(e: CompressError) -> Self {
        AggregateError::Compress(e)
    }
}

impl core::fmt::Display for AggregateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AggregateError::Compress(e) => write!(f, "{e}"),
            AggregateError::Busy => f.write_str("every frame buffer is in use"),
            AggregateError::TooLarge => f.write_str("transaction larger than one frame"),
            AggregateError::BadConfig => f.write_str("aggregator configuration not usable"),
        }
    }
}

impl core::error::Error for AggregateError {}

/// The aggregation rules (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AggregatorConfig {
    /// The most bytes of one compressed frame (header and records): the RC Link payload, so at
    /// most `RequesterConfig::max_payload` and the aggregator's `M` (the transport's and the
    /// framing's headers come on top; this is not the Ethernet MTU).
    pub mtu: usize,
    /// A frame is ready at this many transactions (PAXI's `TX_BUF_WM` + 1).
    pub max_per_frame: u16,
    /// The longest a transaction waits in an open frame (PAXI's `TX_BUF_ACC_TW`).
    pub budget: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Empty,
    Open { slot: StreamSlot, key: StreamKey, deadline: Instant, count: u16 },
    Ready { key: StreamKey, order: u32, count: u16 },
}

#[derive(Clone, Debug)]
struct FrameBuf<const M: usize> {
    state: State,
    len: usize,
    bytes: [u8; M],
}

/// A frame ready to send, borrowed from the aggregator until the next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing<'a> {
    /// The stream: the peer to send to and the VC.
    pub key: StreamKey,
    /// The transactions in it.
    pub count: u16,
    /// The compressed frame: the payload of one transport packet.
    pub bytes: &'a [u8],
}

/// The sending half: `S` streams' compression contexts, `F` frame buffers of `M` bytes.
///
/// Size on a 64-bit host: 2 600 bytes as `Aggregator<16, 4, 64>`: 128 per stream, `M` + 32 per
/// frame buffer. Built in place: [`Aggregator::EMPTY`] and [`Aggregator::init`].
#[derive(Clone, Debug)]
pub struct Aggregator<const S: usize, const F: usize, const M: usize> {
    compressor: Compressor<S>,
    config: AggregatorConfig,
    frames: [FrameBuf<M>; F],
    order: u32,
    /// RESYNC requests to carry: the stream the peer should reset, and by when to send it.
    resync: Vec<(StreamKey, Instant), F>,
}

impl<const S: usize, const F: usize, const M: usize> Aggregator<S, F, M> {
    /// An aggregator with no widths, an `mtu` of 0 and every byte zero, so a `static` holding
    /// it lands in `.bss` (no flash, no start-up copy): it takes no transaction until
    /// [`Aggregator::init`] configures it in place.
    pub const EMPTY: Self = Aggregator {
        compressor: Compressor::EMPTY,
        config: AggregatorConfig { mtu: 0, max_per_frame: 0, budget: Duration::ZERO },
        frames: [const { FrameBuf { state: State::Empty, len: 0, bytes: [0; M] } }; F],
        order: 0,
        resync: Vec::new(),
    };

    /// An aggregator for transactions of these widths. (Built on the stack; see
    /// [`Aggregator::init`] for building one in place.)
    pub fn new(widths: ChannelWidths, config: AggregatorConfig) -> Result<Self, AggregateError> {
        let mut a = Self::EMPTY;
        a.init(widths, config)?;
        Ok(a)
    }

    /// Makes this aggregator what [`Aggregator::new`]`(widths, config)` returns, in place
    /// (without a second one on the stack): no stream, no frame. Refused as `new` refuses, and
    /// then nothing changed.
    pub fn init(&mut self, widths: ChannelWidths, config: AggregatorConfig) -> Result<(), AggregateError> {
        if config.mtu < FRAME_HEADER_LEN + 1 || config.mtu > M || config.max_per_frame == 0 {
            return Err(AggregateError::BadConfig);
        }
        self.compressor.init(widths)?;
        self.config = config;
        for f in &mut self.frames {
            (f.state, f.len) = (State::Empty, 0);
        }
        self.order = 0;
        self.resync.clear();
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &AggregatorConfig {
        &self.config
    }

    /// Adds `txn` for the stream `key` at `now`.
    pub fn push(&mut self, now: Instant, key: StreamKey, txn: &Txn<'_>) -> Result<(), AggregateError> {
        let bound = compress::check(self.compressor.widths(), txn)?;
        if key.vc > 7 {
            return Err(CompressError::BadVc.into());
        }
        let open = self.frames.iter_mut().find(|f| matches!(f.state, State::Open { key: k, .. } if k == key));
        if let Some(f) = open {
            match f.add(&mut self.compressor, txn, &self.config, &mut self.order) {
                Err(CompressError::BufferTooSmall) => f.ready(&mut self.order),
                done => return done.map_err(AggregateError::from),
            }
        }
        if FRAME_HEADER_LEN + bound > self.config.mtu {
            return Err(AggregateError::TooLarge);
        }
        let i = self.open(now, key)?;
        let f = self.frames.get_mut(i).ok_or(AggregateError::Busy)?;
        Ok(f.add(&mut self.compressor, txn, &self.config, &mut self.order)?)
    }

    /// Asks the peer of `key` to reset its stream to us on `key.vc` (after
    /// [`Deaggregator::open`] refused one of its frames). The request rides on the next frame
    /// to that peer, or alone on an empty frame once the budget has passed.
    pub fn request_resync(&mut self, now: Instant, key: StreamKey) {
        if !self.resync.iter().any(|(k, _)| *k == key) {
            let deadline = now.saturating_add(self.config.budget);
            // A full list drops the request; the next refused frame asks again.
            let _ = self.resync.push((key, deadline));
        }
    }

    /// The peer asked us to reset our stream to it on `key.vc` ([`Records::header`]'s
    /// `resync`): the stream's next frame is RESET.
    pub fn reset_stream(&mut self, key: StreamKey) {
        self.compressor.reset(key);
    }

    /// Makes every open frame ready.
    pub fn flush(&mut self) {
        for f in &mut self.frames {
            f.ready(&mut self.order);
        }
    }

    /// Makes every frame whose budget has passed ready, and opens a frame for each RESYNC
    /// request that waited its budget without one.
    pub fn handle_timeout(&mut self, now: Instant) {
        for f in &mut self.frames {
            if matches!(f.state, State::Open { deadline, .. } if deadline <= now) {
                f.ready(&mut self.order);
            }
        }
        while let Some(&(key, _)) = self.resync.iter().find(|(_, at)| *at <= now) {
            let Ok(i) = self.open(now, key) else { break };
            if let Some(f) = self.frames.get_mut(i) {
                f.ready(&mut self.order);
            }
        }
    }

    /// When [`Aggregator::handle_timeout`] has work: the earliest budget or RESYNC deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let frames = self.frames.iter().filter_map(|f| match f.state {
            State::Open { deadline, .. } => Some(deadline),
            _ => None,
        });
        frames.chain(self.resync.iter().map(|(_, at)| *at)).min()
    }

    /// The next ready frame (after [`Aggregator::handle_timeout`] at `now`), oldest first.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing<'_>> {
        self.handle_timeout(now);
        let (i, key, count) = self
            .frames
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f.state {
                State::Ready { key, order, count } => Some((i, key, count, order)),
                _ => None,
            })
            .max_by_key(|&(.., order)| self.order.wrapping_sub(order))
            .map(|(i, key, count, _)| (i, key, count))?;
        let f = self.frames.get_mut(i)?;
        f.state = State::Empty;
        Some(Outgoing { key, count, bytes: f.bytes.get(..f.len).unwrap_or_default() })
    }

    /// Transactions waiting in open or ready frames.
    pub fn queued(&self) -> usize {
        self.frames
            .iter()
            .map(|f| match f.state {
                State::Open { count, .. } | State::Ready { count, .. } => count as usize,
                State::Empty => 0,
            })
            .sum()
    }

    /// Forgets every frame, request and stream (after a link reset; the peer clears its
    /// [`Deaggregator`]).
    pub fn clear(&mut self) {
        self.compressor.clear();
        self.resync.clear();
        for f in &mut self.frames {
            f.state = State::Empty;
        }
    }

    /// Opens a frame for `key` (with a waiting RESYNC request for the same peer on it). A frame
    /// still open for `key` is made ready first: one open frame per stream, so frames leave in
    /// the order their records were encoded.
    fn open(&mut self, now: Instant, key: StreamKey) -> Result<usize, AggregateError> {
        let i = self.frames.iter().position(|f| f.state == State::Empty).ok_or(AggregateError::Busy)?;
        for f in &mut self.frames {
            if matches!(f.state, State::Open { key: k, .. } if k == key) {
                f.ready(&mut self.order);
            }
        }
        let resync = self.resync.iter().position(|(k, _)| k.peer == key.peer);
        let ask = resync.and_then(|r| self.resync.get(r)).map(|(k, _)| k.vc);
        let frames = &self.frames;
        let in_use = |s: StreamSlot| frames.iter().any(|f| matches!(f.state, State::Open { slot, .. } if slot == s));
        let mut header = [0u8; FRAME_HEADER_LEN];
        let opened = self.compressor.open(key, ask, &mut header, in_use)?;
        let (slot, len) = opened.ok_or(AggregateError::Busy)?;
        let f = self.frames.get_mut(i).ok_or(AggregateError::Busy)?;
        linklayer::bytes::copy_prefix(f.bytes.get_mut(..len).ok_or(AggregateError::BadConfig)?, &header);
        // The request rides on this frame: removed, the last one taking its place.
        if let Some(r) = resync {
            let last = self.resync.pop();
            if let (Some(last), Some(place)) = (last, self.resync.get_mut(r)) {
                *place = last;
            }
        }
        f.len = len;
        f.state = State::Open { slot, key, deadline: now.saturating_add(self.config.budget), count: 0 };
        Ok(i)
    }
}

impl<const M: usize> FrameBuf<M> {
    /// Encodes `txn` into this open frame, within the MTU; ready at the watermark.
    fn add<const S: usize>(
        &mut self,
        compressor: &mut Compressor<S>,
        txn: &Txn<'_>,
        config: &AggregatorConfig,
        order: &mut u32,
    ) -> Result<(), CompressError> {
        let State::Open { slot, count, .. } = &mut self.state else { return Err(CompressError::UnknownContext) };
        let room = self.bytes.get_mut(self.len..config.mtu).unwrap_or_default();
        // `push` ran `compress::check` on `txn`.
        self.len += compressor.encode_checked(*slot, txn, room)?;
        *count += 1;
        if *count >= config.max_per_frame {
            self.ready(order);
        }
        Ok(())
    }

    /// An open frame becomes ready, `order` its place in the send order.
    fn ready(&mut self, order: &mut u32) {
        if let State::Open { key, count, .. } = self.state {
            self.state = State::Ready { key, order: *order, count };
            *order = order.wrapping_add(1);
        }
    }
}

/// The receiving half: `S` streams' decompression contexts.
///
/// Size on a 64-bit host: 2 216 bytes with 16 streams, 136 more per stream. Built in place:
/// [`Deaggregator::EMPTY`] and [`Deaggregator::init`].
#[derive(Clone, Debug)]
pub struct Deaggregator<const S: usize> {
    decompressor: Decompressor<S>,
    /// RESYNC requests received and not yet polled.
    resync: Vec<StreamKey, S>,
}

impl<const S: usize> Deaggregator<S> {
    /// A receiver with no widths and every byte zero, so a `static` holding it lands in
    /// `.bss`: it refuses every frame until [`Deaggregator::init`] configures it in place.
    pub const EMPTY: Self = Deaggregator { decompressor: Decompressor::EMPTY, resync: Vec::new() };

    /// A receiver for transactions of these widths. (Built on the stack; see
    /// [`Deaggregator::init`] for building one in place.)
    pub fn new(widths: ChannelWidths) -> Result<Self, CompressError> {
        let mut d = Self::EMPTY;
        d.init(widths)?;
        Ok(d)
    }

    /// Makes this receiver what [`Deaggregator::new`]`(widths)` returns, in place: no stream,
    /// no RESYNC request. Refused as `new` refuses, and then nothing changed.
    pub fn init(&mut self, widths: ChannelWidths) -> Result<(), CompressError> {
        self.decompressor.init(widths)?;
        self.resync.clear();
        Ok(())
    }

    /// Checks a frame from `peer` whole; the [`Records`] yield its transactions in order
    /// ([`Decompressor::open`]). On an error nothing is delivered: answer it with
    /// [`Aggregator::request_resync`] for `StreamKey { peer, vc }` of the frame's VC, which
    /// [`stream_of`] reads.
    pub fn open<'a>(&mut self, peer: u32, frame: &'a [u8]) -> Result<Records<'a>, CompressError> {
        if let Ok((compress::FrameHeader { resync: Some(vc), .. }, _)) = compress::FrameHeader::parse(frame) {
            let key = StreamKey { peer, vc };
            if !self.resync.contains(&key) {
                // A full list drops the request; the peer asks again on its next refused frame.
                let _ = self.resync.push(key);
            }
        }
        self.decompressor.open(peer, frame)
    }

    /// The next RESYNC request a frame carried: the peer asks this end to start its stream to
    /// the peer on that VC afresh ([`Aggregator::reset_stream`]).
    pub fn poll_resync(&mut self) -> Option<StreamKey> {
        self.resync.pop()
    }

    /// Forgets every stream and RESYNC request.
    pub fn clear(&mut self) {
        self.decompressor.clear();
        self.resync.clear();
    }
}

/// The stream of a compressed frame from `peer` (its header's VC), if the header is whole.
pub fn stream_of(peer: u32, frame: &[u8]) -> Option<StreamKey> {
    compress::FrameHeader::parse(frame).ok().map(|(h, _)| StreamKey { peer, vc: h.vc })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::axi::{AddrReq, Channel, Resp, Size, WriteResp};

    const W: ChannelWidths = ChannelWidths::EXAMPLE;

    fn cfg(mtu: usize, max: u16, budget_ns: u64) -> AggregatorConfig {
        AggregatorConfig { mtu, max_per_frame: max, budget: Duration::from_nanos(budget_ns) }
    }

    fn load(k: u64) -> Txn<'static> {
        Txn::Read(AddrReq::incr(Channel::Read, 0x1000 + 128 * k, 2, Size::from_bytes(64).unwrap()))
    }

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn key(peer: u32, vc: u8) -> StreamKey {
        StreamKey { peer, vc }
    }

    #[test]
    fn watermark_mtu_and_budget_each_close_a_frame() {
        let mut a = Aggregator::<4, 3, 256>::new(W, cfg(256, 3, 1000)).unwrap();
        for k in 0..4 {
            a.push(at(0), key(1, 0), &load(k)).unwrap();
        }
        // Three reached the watermark; the fourth waits in a new frame.
        let f = a.poll_transmit(at(0)).unwrap();
        assert_eq!((f.count, f.bytes[0] & 0x80), (3, 0x80));
        assert!(a.poll_transmit(at(999)).is_none());
        assert_eq!(a.poll_timeout(), Some(at(1000)));
        let f = a.poll_transmit(at(1000)).unwrap();
        assert_eq!((f.count, f.bytes.len(), &f.bytes[..4]), (1, 5, &[0, 0, 0, 1][..]));
        // MTU: 128-byte R runs, two fit in 256 with the header, the third starts a frame.
        let data = [0u8; 120];
        let r = Txn::ReadData { id: 0, resp: Resp::Okay, last: true, user: 0, data: &data };
        for _ in 0..3 {
            a.push(at(2000), key(2, 1), &r).unwrap();
        }
        a.flush();
        let counts: std::vec::Vec<u16> = core::iter::from_fn(|| a.poll_transmit(at(2000)).map(|f| f.count)).collect();
        assert_eq!(counts, [2, 1]);
        // A transaction larger than a frame, and a bad one: refused, nothing queued.
        let big = [0u8; 300];
        let r = Txn::ReadData { id: 0, resp: Resp::Okay, last: true, user: 0, data: &big };
        assert_eq!(a.push(at(0), key(2, 1), &r), Err(AggregateError::TooLarge));
        let bad = Txn::WriteResp(WriteResp { id: 999, resp: Resp::Okay, user: 0 });
        assert_eq!(
            a.push(at(0), key(2, 1), &bad),
            Err(AggregateError::Compress(CompressError::FieldTooWide { field: "id" }))
        );
        assert_eq!(a.queued(), 0);
        assert_eq!(Aggregator::<4, 3, 256>::new(W, cfg(257, 3, 0)).unwrap_err(), AggregateError::BadConfig);
    }

    /// Six loads on two streams, a reset of one, and a frame the deaggregator refuses; every
    /// frame sent and every transaction delivered.
    fn transcript(a: &mut Aggregator<4, 2, 512>, d: &mut Deaggregator<4>) -> std::vec::Vec<std::vec::Vec<u8>> {
        let mut seen = std::vec::Vec::new();
        for round in 0..3 {
            for k in 0..6 {
                let _ = a.push(at(round * 1000), key(k as u32 % 2, 0), &load(k));
            }
            if round == 1 {
                a.reset_stream(key(1, 0));
            }
            a.flush();
            while let Some(f) = a.poll_transmit(at(round * 1000)) {
                seen.push(f.bytes.to_vec());
                let (peer, frame) = (f.key.peer, f.bytes.to_vec());
                let refused = round == 0 && peer == 0;
                if let Ok(records) = d.open(peer, if refused { &frame[..4] } else { &frame }) {
                    seen.extend(records.map(|t| std::format!("{t:?}").into_bytes()));
                }
            }
        }
        seen
    }

    #[test]
    fn init_in_place_restarts_as_new() {
        let config = cfg(512, 16, 0);
        let (mut a, mut d) = (Aggregator::<4, 2, 512>::new(W, config).unwrap(), Deaggregator::<4>::new(W).unwrap());
        let first = transcript(&mut a, &mut d);
        // Used, with frames open: configured afresh in place, the same run byte for byte.
        a.push(at(5000), key(3, 1), &load(9)).unwrap();
        a.request_resync(at(5000), key(1, 0));
        a.init(W, config).unwrap();
        d.init(W).unwrap();
        assert_eq!((a.queued(), d.poll_resync()), (0, None));
        assert_eq!(transcript(&mut a, &mut d), first);
        // Refused as `new` refuses: nothing changed.
        a.push(at(9000), key(3, 1), &load(9)).unwrap();
        let before = (std::format!("{a:?}"), std::format!("{d:?}"));
        assert_eq!(a.init(W, cfg(0, 16, 0)), Err(AggregateError::BadConfig));
        assert!(a.init(ChannelWidths { data: 7, ..W }, config).is_err());
        assert!(d.init(ChannelWidths { data: 7, ..W }).is_err());
        assert_eq!((std::format!("{a:?}"), std::format!("{d:?}")), before);
        a.init(W, config).unwrap();
        // From EMPTY: refused until configured, then the same.
        static A: Aggregator<4, 2, 512> = Aggregator::EMPTY;
        static D: Deaggregator<4> = Deaggregator::EMPTY;
        let (mut a, mut d) = (A.clone(), D.clone());
        assert!(a.push(at(0), key(1, 0), &load(0)).is_err());
        a.request_resync(at(0), key(1, 0));
        a.handle_timeout(at(0));
        assert!(a.poll_transmit(at(0)).is_none());
        assert!(d.open(1, &first[0]).is_err());
        assert_eq!(a.init(W, cfg(513, 16, 0)), Err(AggregateError::BadConfig));
        a.init(W, config).unwrap();
        d.init(W).unwrap();
        assert_eq!(transcript(&mut a, &mut d), first);
    }

    #[test]
    fn interleaved_streams_aggregate_and_leave_in_order() {
        let mut a = Aggregator::<4, 2, 512>::new(W, cfg(512, 16, 0)).unwrap();
        let mut d = Deaggregator::<4>::new(W).unwrap();
        for k in 0..6 {
            a.push(at(0), key(k as u32 % 2, 0), &load(k)).unwrap();
        }
        // A third stream finds both buffers open.
        assert_eq!(a.push(at(0), key(7, 0), &load(0)), Err(AggregateError::Busy));
        let mut want = [0, 2, 4, 1, 3, 5].iter().map(|&k| ((k % 2) as u32, load(k)));
        while let Some(f) = a.poll_transmit(at(0)) {
            let peer = f.key.peer;
            for t in d.open(peer, f.bytes).unwrap() {
                assert_eq!(Some((peer, t)), want.next());
            }
        }
        assert_eq!(want.next(), None);
    }

    /// Both directions lose a frame, so each end refuses the other's frames — including the
    /// ones carrying its RESYNC requests. The requests still count, and both recover.
    #[test]
    fn both_directions_losing_a_frame_recover() {
        let cfg = cfg(512, 16, 0);
        let mut tx = [Aggregator::<4, 2, 512>::new(W, cfg).unwrap(), Aggregator::<4, 2, 512>::new(W, cfg).unwrap()];
        let mut rx = [Deaggregator::<4>::new(W).unwrap(), Deaggregator::<4>::new(W).unwrap()];
        // End i is peer i + 1; each sends to the other on VC 0.
        let mut delivered = [std::vec::Vec::new(), std::vec::Vec::new()];
        for round in 0..6u64 {
            let now = at(round * 100);
            for (i, end) in tx.iter_mut().enumerate() {
                end.push(now, key(2 - i as u32, 0), &load(round)).unwrap();
            }
            for i in 0..2 {
                let (from, j) = (i as u32 + 1, 1 - i);
                let mut refused = false;
                while let Some(f) = tx[i].poll_transmit(now) {
                    if round == 1 {
                        continue; // both directions lose round 1's frames
                    }
                    match rx[j].open(from, f.bytes) {
                        Ok(records) => delivered[j].extend(records.map(|_| round)),
                        Err(_) => refused = true,
                    }
                }
                if refused {
                    tx[j].request_resync(now, key(from, 0));
                }
            }
            for i in 0..2 {
                while let Some(k) = rx[i].poll_resync() {
                    tx[i].reset_stream(k);
                }
            }
        }
        // Round 0 arrives; round 1 is lost and round 2 refused both ways. End 1 sends after end 0
        // in a round, so its request (raised by end 0's refused frame) leaves at once on a frame
        // of its own (the budget is 0) and end 0 restarts from round 3; end 0's request rides on
        // its round-3 frame, and end 1 restarts from round 4.
        assert_eq!(delivered, [std::vec![0, 4, 5], std::vec![0, 3, 4, 5]]);
    }

    #[test]
    fn resync_request_rides_on_a_frame_or_alone() {
        let mut a = Aggregator::<4, 2, 512>::new(W, cfg(512, 16, 100)).unwrap();
        a.request_resync(at(0), key(5, 3));
        a.request_resync(at(0), key(5, 3));
        assert_eq!(a.poll_timeout(), Some(at(100)));
        a.push(at(10), key(5, 1), &load(0)).unwrap();
        let f = a.poll_transmit(at(110)).unwrap();
        assert_eq!(f.bytes[0], 0x80 | 0x40 | 3 << 3 | 1);
        a.request_resync(at(200), key(6, 2));
        assert!(a.poll_transmit(at(299)).is_none());
        let f = a.poll_transmit(at(300)).unwrap();
        assert_eq!((f.key, f.count, f.bytes[0]), (key(6, 2), 0, 0x80 | 0x40 | 2 << 3 | 2));
        assert_eq!(a.poll_timeout(), None);
        // The peer asked us to reset: our next frame on that stream is RESET again.
        a.push(at(400), key(5, 1), &load(1)).unwrap();
        a.flush();
        assert_eq!(a.poll_transmit(at(400)).unwrap().bytes[0], 1);
        a.reset_stream(key(5, 1));
        a.push(at(500), key(5, 1), &load(2)).unwrap();
        a.flush();
        assert_eq!(a.poll_transmit(at(500)).unwrap().bytes[0], 0x81);
    }
}
