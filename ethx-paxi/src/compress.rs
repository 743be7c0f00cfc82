//! Transaction header compression: each stream of transactions to one peer on one VC is encoded
//! against the previous transaction of the same kind on that stream, so a repeated ID, repeated
//! attributes and a sequential address cost nothing on the wire.
//!
//! **The whole encoding is project-defined.** The ETH-X whitepaper names header compression as
//! one of its two efficiency tools but its encoding is not public (ETH-X ScaleUp protocol
//! specification, ODCC-2025-03002, text not published); PAXI's own flits
//! ([`crate::paxi`]) carry every field of every transaction. This module is the crate's answer,
//! in one place, for the compressed framings ([`crate::frame`]'s AFH and PRI forms).
//!
//! # Lockstep contexts
//! The sender and the receiver each keep one [`Context`] per stream: the previous AR, the
//! previous AW, and the ID, USER and length of the previous R and B. Both start from
//! [`Context::new`] (every field zero, INCR, one beat of one byte). A stream is keyed by a
//! [`StreamKey`]: the peer (an embedder-chosen number for the destination at the sender, the
//! source at the receiver) and the VC. Tables are of fixed size ([`Compressor`],
//! [`Decompressor`]); a full table evicts its least recently used stream.
//!
//! # Frame header (4 bytes, before the records)
//! | byte | bits | field |
//! |---|---|---|
//! | 0 | 7 | RESET: the receiver starts this stream from [`Context::new`] before the records |
//! | 0 | 6 | RESYNC: the sender of this frame asks its peer to RESET the peer's stream to it on VC `[5:3]` |
//! | 0 | 5:3 | the VC RESYNC names (0 when RESYNC is clear) |
//! | 0 | 2:0 | this stream's VC |
//! | 1 | | the stream's epoch: a new one each time the sender starts the stream afresh |
//! | 2–3 | | this stream's frame sequence number, big-endian, +1 per frame (mod 2^16) |
//!
//! The sender starts a stream afresh — a RESET frame with the next value of one epoch counter
//! for all its streams — when it first uses the stream, after evicting it from a full table, and
//! when the peer asks. A frame that is not RESET must carry the epoch of the receiver's context
//! (else [`CompressError::UnknownContext`]: the receiver missed that RESET, and its context is
//! an older one) and the sequence number the receiver expects (else
//! [`CompressError::OutOfSequence`]: a frame was lost). After either, or a malformed record, the
//! stream refuses frames ([`CompressError::NeedsReset`]) until a RESET frame arrives; a frame
//! for a stream the receiver has no context for is [`CompressError::UnknownContext`] too. The
//! frame's records are never delivered: a lost frame cannot make a later one decode to a wrong
//! address. The receiver answers each such error with a RESYNC request (its aggregator's
//! [`crate::aggregate::Aggregator::request_resync`]); the sender's next frame on that stream is
//! RESET.
//!
//! Limits: a loss of exactly a multiple of 65 536 consecutive frames of one stream, or a lost
//! RESET whose stream comes back with both the epoch (after a multiple of 256 fresh starts at
//! the sender) and the sequence number of the receiver's stale context, is not detected. Over RC
//! Link TYPE1 (go-back-N) no frame is lost; on a link reset, clear both ends' tables
//! ([`Compressor::clear`], [`Decompressor::clear`]).
//!
//! # Records
//! Byte 0 of every record: `[7:6]` kind (00 AR, 01 AW + W, 10 R, 11 B), the rest per kind. Fields
//! are big-endian; an ID takes `ceil(id width / 8)` bytes and a USER `ceil(user width / 8)`
//! bytes of the configured [`ChannelWidths`]. Bits marked 0 are sent as zero and ignored.
//!
//! **AR and AW** — `[5]` ID follows (else the previous request's on this channel), `[4]`
//! attributes follow (else the previous request's), `[3:1]` address mode, `[0]` (AW) strobes
//! follow (else every strobe is set, as PAXI's WSTRB elision), 0 on AR.
//!
//! | address mode | address | bytes |
//! |---|---|---|
//! | 0 NEXT | previous request's address + its `beats × size` on this channel | 0 |
//! | 1 SAME | previous request's address | 0 |
//! | 2, 3, 4, 5 | NEXT + a signed 8-, 16-, 32-, 48-bit delta (mod 2^64) | 1, 2, 4, 6 |
//! | 6 ABS | the address | 8 |
//! | 7 | reserved: [`CompressError::ReservedAddressMode`] | |
//!
//! Attributes (5 bytes + USER): `size[7:5] burst[4:3] lock[2] 0[1:0]`, `beats − 1`,
//! `cache[7:4] prot[3:1] 0[0]`, `qos[7:4] region[3:0]`, `0[7:6] atop[5:0]`, USER. Then for AW the
//! data, `beats × size` bytes (one `size`-byte container per beat), then with `[0]` the strobes,
//! one bit per data byte, least significant bit first, `ceil(beats × size / 8)` bytes.
//!
//! **R** (a run of read beats with one RRESP) — `[5]` ID follows (else the previous R's), `[4]`
//! RRESP byte follows (`[1:0]`; else OKAY), `[3]` USER follows (else the previous R's), `[2]` a
//! 16-bit data length follows (else the previous R's), `[1]` RLAST, `[0]` 0; then the data.
//!
//! **B** — `[5]` ID follows (else the previous B's), `[4]` BRESP byte follows (else OKAY), `[3]`
//! USER follows (else the previous B's), `[2:0]` 0.
//!
//! A 128-byte load to the next address with an unchanged ID is then a 1-byte AR and a 129-byte
//! R: the numbers behind the README's efficiency table.

use crate::axi::{AddrReq, Atop, Burst, Cache, Channel, Prot, Resp, Size, WriteResp};
use crate::paxi::ChannelWidths;
use heapless::Vec;

/// Why a frame or a transaction cannot be encoded or decoded. Nothing was delivered and no
/// context changed, except where a variant says the stream now needs a reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CompressError {
    /// The frame or a record ends before its fields do.
    Truncated,
    /// The output buffer cannot hold the record.
    BufferTooSmall,
    /// A frame that is not RESET for a stream without a context.
    UnknownContext,
    /// A frame with another sequence number than the next one: a frame of the stream was lost
    /// or reordered. The stream now needs a reset.
    OutOfSequence {
        /// The sequence number the receiver expected.
        expected: u16,
        /// The one the frame carries.
        got: u16,
    },
    /// The stream lost lockstep earlier and waits for a RESET frame.
    NeedsReset,
    /// Address mode 7. The stream now needs a reset.
    ReservedAddressMode,
    /// A field does not fit its configured width (an ID, USER or address), or QoS or REGION is
    /// above 15. On receive the stream now needs a reset.
    FieldTooWide {
        /// The field.
        field: &'static str,
    },
    /// A write's data is not `beats × size` bytes, its strobes not one bit per data byte, or a
    /// read run's data longer than 65 535 bytes.
    DataLength,
    /// An AR record given a write request or an AW record a read request.
    ChannelMismatch,
    /// A reserved AxBURST or AWATOP code on receive. The stream now needs a reset.
    Reserved {
        /// The field.
        field: &'static str,
    },
    /// The widths are not ones [`ChannelWidths::validate`] accepts.
    BadWidths,
    /// A VC above 7.
    BadVc,
}

impl core::fmt::Display for CompressError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CompressError::Truncated => f.write_str("compressed frame truncated"),
            CompressError::BufferTooSmall => f.write_str("output buffer too small"),
            CompressError::UnknownContext => f.write_str("no context for the stream and the frame is not a reset"),
            CompressError::OutOfSequence { expected, got } => {
                write!(f, "compressed frame {got} where {expected} was next: the stream needs a reset")
            }
            CompressError::NeedsReset => f.write_str("the stream waits for a reset frame"),
            CompressError::ReservedAddressMode => f.write_str("reserved address mode 7"),
            CompressError::FieldTooWide { field } => write!(f, "{field} wider than configured"),
            CompressError::DataLength => f.write_str("data or strobe length does not match the transaction"),
            CompressError::ChannelMismatch => f.write_str("record kind and request channel differ"),
            CompressError::Reserved { field } => write!(f, "reserved {field} code"),
            CompressError::BadWidths => f.write_str("channel widths not valid"),
            CompressError::BadVc => f.write_str("VC above 7"),
        }
    }
}

impl core::error::Error for CompressError {}

/// One AXI transaction as a compressed frame carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Txn<'a> {
    /// An AR request.
    Read(AddrReq),
    /// An AW request with its W beats.
    Write {
        /// The AW fields (`channel` [`Channel::Write`]).
        req: AddrReq,
        /// `beats × size` bytes: each beat's `size`-byte container, in beat order.
        data: &'a [u8],
        /// One bit per data byte (least significant first), or `None` when every strobe is set.
        strobes: Option<&'a [u8]>,
    },
    /// A run of R beats of one read burst sharing RID, RRESP and RUSER.
    ReadData {
        /// RID.
        id: u32,
        /// RRESP of every beat of the run.
        resp: Resp,
        /// RLAST: the run ends the burst.
        last: bool,
        /// RUSER.
        user: u64,
        /// The beats' data (at most 65 535 bytes).
        data: &'a [u8],
    },
    /// A B response.
    WriteResp(WriteResp),
}

/// A stream's identity: the peer and the VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamKey {
    /// The peer: the destination at the sender, the source at the receiver (embedder-chosen
    /// numbers, such as the PAXI DA).
    pub peer: u32,
    /// The VC, 0 to 7.
    pub vc: u8,
}

/// A compressed frame's header (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FrameHeader {
    /// The receiver starts the stream afresh before the records.
    pub reset: bool,
    /// The VC on which the sender of this frame asks its peer to reset the peer's stream to it.
    pub resync: Option<u8>,
    /// This stream's VC.
    pub vc: u8,
    /// The stream's epoch.
    pub epoch: u8,
    /// This stream's frame sequence number.
    pub seq: u16,
}

/// Bytes of [`FrameHeader`].
pub const FRAME_HEADER_LEN: usize = 4;

impl FrameHeader {
    /// Writes the header into `out[..4]`.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, CompressError> {
        let resync = self.resync.unwrap_or(0);
        if self.vc > 7 || resync > 7 {
            return Err(CompressError::BadVc);
        }
        let out = out.first_chunk_mut::<FRAME_HEADER_LEN>().ok_or(CompressError::BufferTooSmall)?;
        let [hi, lo] = self.seq.to_be_bytes();
        let flags = (self.reset as u8) << 7 | (self.resync.is_some() as u8) << 6;
        *out = [flags | resync << 3 | self.vc, self.epoch, hi, lo];
        Ok(FRAME_HEADER_LEN)
    }

    /// Reads the header; returns it and the records after it.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), CompressError> {
        let (h, rest) = bytes.split_first_chunk::<FRAME_HEADER_LEN>().ok_or(CompressError::Truncated)?;
        let header = FrameHeader {
            reset: h[0] & 0x80 != 0,
            resync: if h[0] & 0x40 != 0 { Some(h[0] >> 3 & 7) } else { None },
            vc: h[0] & 7,
            epoch: h[1],
            seq: u16::from_be_bytes([h[2], h[3]]),
        };
        Ok((header, rest))
    }
}

const KIND_AR: u8 = 0b00;
const KIND_AW: u8 = 0b01;
const KIND_R: u8 = 0b10;
const KIND_B: u8 = 0b11;
const ID: u8 = 1 << 5;
const ATTR: u8 = 1 << 4;
const STRB: u8 = 1;
const RESP: u8 = 1 << 4;
const USER: u8 = 1 << 3;
const LEN: u8 = 1 << 2;
const LAST: u8 = 1 << 1;
const ATTR_LEN: usize = 5;

/// Address modes (module doc).
const MODE_NEXT: u8 = 0;
const MODE_SAME: u8 = 1;
const MODE_ABS: u8 = 6;
/// The address modes that carry a delta.
const MODES_DELTA: core::ops::RangeInclusive<u8> = 2..=5;

/// Bytes of a delta address mode's delta.
const fn delta_bytes(mode: u8) -> usize {
    match mode {
        2 => 1,
        3 => 2,
        4 => 4,
        _ => 6,
    }
}

/// One stream's lockstep state (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Context {
    read: AddrReq,
    write: AddrReq,
    r_id: u32,
    r_len: u16,
    r_user: u64,
    b_id: u32,
    b_user: u64,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

const fn initial(channel: Channel) -> AddrReq {
    AddrReq::incr(channel, 0, 1, Size::ONE_BYTE)
}

/// Big-endian writer over a bounded slice; every write checks room first.
struct Writer<'o> {
    out: &'o mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), CompressError> {
        let end = self.at.checked_add(bytes.len()).ok_or(CompressError::BufferTooSmall)?;
        linklayer::bytes::copy_prefix(self.out.get_mut(self.at..end).ok_or(CompressError::BufferTooSmall)?, bytes);
        self.at = end;
        Ok(())
    }

    fn uint(&mut self, value: u64, bytes: usize) -> Result<(), CompressError> {
        let be = value.to_be_bytes();
        match bytes {
            0 => Ok(()),
            1 => self.put(&[value as u8]),
            2 => self.put(&(value as u16).to_be_bytes()),
            4 => self.put(&(value as u32).to_be_bytes()),
            _ => self.put(be.get(8 - bytes.min(8)..).unwrap_or(&[])),
        }
    }
}

/// Big-endian reader over a bounded slice.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CompressError> {
        if n > self.bytes.len() {
            return Err(CompressError::Truncated);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, CompressError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    /// A big-endian number of `bytes` bytes (the common widths without a byte-wise loop: a
    /// loop or a copy into a zeroed word costs a store-forwarding stall per field).
    fn uint(&mut self, bytes: usize) -> Result<u64, CompressError> {
        Ok(match *self.take(bytes)? {
            [] => 0,
            [a] => a as u64,
            [a, b] => u16::from_be_bytes([a, b]) as u64,
            [a, b, c, d] => u32::from_be_bytes([a, b, c, d]) as u64,
            [a, b, c, d, e, f] => u64::from_be_bytes([0, 0, a, b, c, d, e, f]),
            [a, b, c, d, e, f, g, h] => u64::from_be_bytes([a, b, c, d, e, f, g, h]),
            ref other => other.iter().fold(0u64, |v, &b| v << 8 | b as u64),
        })
    }
}

/// Bytes a field of `bits` takes.
const fn field_bytes(bits: u16) -> usize {
    (bits as usize).div_ceil(8)
}

const fn fits(value: u64, bits: u16) -> bool {
    bits >= 64 || value >> bits == 0
}

fn check_width(value: u64, bits: u16, field: &'static str) -> Result<(), CompressError> {
    if fits(value, bits) { Ok(()) } else { Err(CompressError::FieldTooWide { field }) }
}

fn next_addr(prev: &AddrReq) -> u64 {
    prev.addr.wrapping_add(prev.total_bytes() as u64)
}

/// The smallest address mode for `addr` after `prev`, and the bytes it carries.
fn address_mode(prev: &AddrReq, addr: u64) -> (u8, u64, usize) {
    let next = next_addr(prev);
    if addr == next {
        return (MODE_NEXT, 0, 0);
    }
    if addr == prev.addr {
        return (MODE_SAME, 0, 0);
    }
    let delta = addr.wrapping_sub(next) as i64;
    for mode in MODES_DELTA {
        let bytes = delta_bytes(mode);
        let bits = 8 * bytes as u32;
        let lo = -(1i64 << (bits - 1));
        let hi = (1i64 << (bits - 1)) - 1;
        if (lo..=hi).contains(&delta) {
            let mask = (1u64 << bits) - 1;
            return (mode, delta as u64 & mask, bytes);
        }
    }
    (MODE_ABS, addr, 8)
}

/// Strobe bytes of a write: one bit per data byte.
fn strobe_len(data_len: usize) -> usize {
    data_len.div_ceil(8)
}

impl Context {
    /// The state both ends start a stream from.
    pub const fn new() -> Self {
        Context {
            read: initial(Channel::Read),
            write: initial(Channel::Write),
            r_id: 0,
            r_len: 0,
            r_user: 0,
            b_id: 0,
            b_user: 0,
        }
    }

    /// Encodes `txn` against this context into `out`, then makes it the previous transaction of
    /// its kind. Returns the record's length. On an error nothing changed (the bytes of `out`
    /// may have been written).
    pub fn encode(&mut self, w: &ChannelWidths, txn: &Txn<'_>, out: &mut [u8]) -> Result<usize, CompressError> {
        check(w, txn)?;
        self.encode_checked(w, txn, out)
    }

    /// [`Context::encode`] of a transaction [`check`] accepted.
    fn encode_checked(&mut self, w: &ChannelWidths, txn: &Txn<'_>, out: &mut [u8]) -> Result<usize, CompressError> {
        let mut wr = Writer { out, at: 0 };
        match *txn {
            Txn::Read(req) => {
                encode_request(w, &self.read, &req, KIND_AR, 0, &mut wr)?;
                self.read = req;
            }
            Txn::Write { req, data, strobes } => {
                let strb = if strobes.is_some() { STRB } else { 0 };
                encode_request(w, &self.write, &req, KIND_AW, strb, &mut wr)?;
                wr.put(data)?;
                if let Some(s) = strobes {
                    wr.put(s)?;
                }
                self.write = req;
            }
            Txn::ReadData { id, resp, last, user, data } => {
                let len = data.len() as u16;
                let mut h = (KIND_R << 6) | if last { LAST } else { 0 };
                h |= if id != self.r_id { ID } else { 0 };
                h |= if resp != Resp::Okay { RESP } else { 0 };
                h |= if user != self.r_user { USER } else { 0 };
                h |= if len != self.r_len { LEN } else { 0 };
                wr.put(&[h])?;
                put_common(w, h, id, resp, user, &mut wr)?;
                if h & LEN != 0 {
                    wr.uint(len as u64, 2)?;
                }
                wr.put(data)?;
                (self.r_id, self.r_user, self.r_len) = (id, user, len);
            }
            Txn::WriteResp(b) => {
                let mut h = KIND_B << 6;
                h |= if b.id != self.b_id { ID } else { 0 };
                h |= if b.resp != Resp::Okay { RESP } else { 0 };
                h |= if b.user != self.b_user { USER } else { 0 };
                wr.put(&[h])?;
                put_common(w, h, b.id, b.resp, b.user, &mut wr)?;
                (self.b_id, self.b_user) = (b.id, b.user);
            }
        }
        Ok(wr.at)
    }

    /// Decodes one record from the front of `input` against this context, then makes it the
    /// previous transaction of its kind. Returns the transaction and the bytes it took. On an
    /// error nothing changed; the caller's stream has lost lockstep (module doc).
    pub fn decode<'a>(&mut self, w: &ChannelWidths, input: &'a [u8]) -> Result<(Txn<'a>, usize), CompressError> {
        let step = self.step(w, input)?;
        let data_end = step.data + step.data_len;
        let data = input.get(step.data..data_end).unwrap_or_default();
        let txn = match step.h >> 6 {
            KIND_AR => Txn::Read(self.read),
            KIND_AW => Txn::Write {
                req: self.write,
                data,
                strobes: (step.h & STRB != 0).then(|| input.get(data_end..step.len).unwrap_or_default()),
            },
            KIND_R => {
                Txn::ReadData { id: self.r_id, resp: step.resp, last: step.h & LAST != 0, user: self.r_user, data }
            }
            _ => Txn::WriteResp(WriteResp { id: self.b_id, resp: step.resp, user: self.b_user }),
        };
        Ok((txn, step.len))
    }

    /// Decodes one record into this context and says where its parts lie, without building the
    /// transaction (what a check of a whole frame needs). On an error nothing changed.
    fn step(&mut self, w: &ChannelWidths, input: &[u8]) -> Result<Step, CompressError> {
        let mut rd = Reader { bytes: input };
        let h = rd.byte()?;
        let mut resp = Resp::Okay;
        let (data_len, strobes) = match h >> 6 {
            KIND_AR => {
                let mut req = self.read;
                decode_request(w, &mut req, Channel::Read, h, &mut rd)?;
                self.read = req;
                (0, 0)
            }
            KIND_AW => {
                let mut req = self.write;
                decode_request(w, &mut req, Channel::Write, h, &mut rd)?;
                let n = req.total_bytes() as usize;
                let strobes = if h & STRB != 0 { strobe_len(n) } else { 0 };
                if rd.bytes.len() < n + strobes {
                    return Err(CompressError::Truncated);
                }
                self.write = req;
                (n, strobes)
            }
            KIND_R => {
                let (id, r, user) = take_common(w, h, self.r_id, self.r_user, &mut rd)?;
                let len = if h & LEN != 0 { rd.uint(2)? as u16 } else { self.r_len };
                if rd.bytes.len() < len as usize {
                    return Err(CompressError::Truncated);
                }
                (self.r_id, self.r_user, self.r_len, resp) = (id, user, len, r);
                (len as usize, 0)
            }
            _ => {
                let (id, r, user) = take_common(w, h, self.b_id, self.b_user, &mut rd)?;
                (self.b_id, self.b_user, resp) = (id, user, r);
                (0, 0)
            }
        };
        let data = input.len() - rd.bytes.len();
        Ok(Step { h, resp, data, data_len, len: data + data_len + strobes })
    }
}

/// Where a decoded record's parts lie.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// The record's first byte.
    h: u8,
    /// RRESP or BRESP.
    resp: Resp,
    /// Offset and length of the data (AW, R).
    data: usize,
    data_len: usize,
    /// The whole record's length (with AW strobes after the data).
    len: usize,
}

/// Checks what [`Context::encode`] checks of `txn` regardless of context (widths, channel, data
/// and strobe lengths, beats 1 to 256) and returns the most bytes its record can take.
pub fn check(w: &ChannelWidths, txn: &Txn<'_>) -> Result<usize, CompressError> {
    let (id, user) = (field_bytes(w.id), field_bytes(w.user));
    let request = |req: &AddrReq, channel| {
        if req.channel != channel {
            return Err(CompressError::ChannelMismatch);
        }
        if req.cache.bits() > 0xF || req.prot.bits() > 7 {
            return Err(CompressError::FieldTooWide { field: "cache/prot" });
        }
        check_width(req.id as u64, w.id, "id")?;
        check_width(req.addr, w.addr, "addr")?;
        check_width(req.user, w.user, "user")?;
        if req.qos > 15 || req.region > 15 {
            return Err(CompressError::FieldTooWide { field: "qos/region" });
        }
        if !(1..=256).contains(&req.beats) {
            return Err(CompressError::DataLength);
        }
        Ok(1 + id + ATTR_LEN + user + 8)
    };
    let response = |rid: u32, ruser: u64| {
        check_width(rid as u64, w.id, "id")?;
        check_width(ruser, w.user, "user")?;
        Ok(1 + id + 1 + user)
    };
    match *txn {
        Txn::Read(req) => request(&req, Channel::Read),
        Txn::Write { req, data, strobes } => {
            let header = request(&req, Channel::Write)?;
            if data.len() != req.total_bytes() as usize || strobes.is_some_and(|s| s.len() != strobe_len(data.len())) {
                return Err(CompressError::DataLength);
            }
            Ok(header + data.len() + strobes.map_or(0, <[u8]>::len))
        }
        Txn::ReadData { id: rid, user: ruser, data, .. } => {
            if data.len() > u16::MAX as usize {
                return Err(CompressError::DataLength);
            }
            Ok(response(rid, ruser)? + 2 + data.len())
        }
        Txn::WriteResp(b) => response(b.id, b.user),
    }
}

/// The ID, RESP and USER fields of an R or B record, as its header `h` says.
fn put_common(
    w: &ChannelWidths,
    h: u8,
    id: u32,
    resp: Resp,
    user: u64,
    wr: &mut Writer<'_>,
) -> Result<(), CompressError> {
    if h & ID != 0 {
        wr.uint(id as u64, field_bytes(w.id))?;
    }
    if h & RESP != 0 {
        wr.put(&[resp.bits()])?;
    }
    if h & USER != 0 {
        wr.uint(user, field_bytes(w.user))?;
    }
    Ok(())
}

fn take_common(
    w: &ChannelWidths,
    h: u8,
    id: u32,
    user: u64,
    rd: &mut Reader<'_>,
) -> Result<(u32, Resp, u64), CompressError> {
    let id = if h & ID != 0 { read_id(w, rd)? } else { id };
    let resp = if h & RESP != 0 { Resp::from_bits(rd.byte()?) } else { Resp::Okay };
    let user = if h & USER != 0 { read_user(w, rd)? } else { user };
    Ok((id, resp, user))
}

fn read_id(w: &ChannelWidths, rd: &mut Reader<'_>) -> Result<u32, CompressError> {
    let id = rd.uint(field_bytes(w.id))?;
    check_width(id, w.id, "id")?;
    Ok(id as u32)
}

fn read_user(w: &ChannelWidths, rd: &mut Reader<'_>) -> Result<u64, CompressError> {
    let user = rd.uint(field_bytes(w.user))?;
    check_width(user, w.user, "user")?;
    Ok(user)
}

/// Whether two requests share every attribute the attribute block carries.
fn same_attrs(a: &AddrReq, b: &AddrReq) -> bool {
    (a.size, a.burst, a.exclusive, a.beats, a.cache, a.prot, a.qos, a.region, a.atop, a.user)
        == (b.size, b.burst, b.exclusive, b.beats, b.cache, b.prot, b.qos, b.region, b.atop, b.user)
}

fn encode_request(
    w: &ChannelWidths,
    prev: &AddrReq,
    req: &AddrReq,
    kind: u8,
    low: u8,
    wr: &mut Writer<'_>,
) -> Result<(), CompressError> {
    let (mode, value, bytes) = address_mode(prev, req.addr);
    let mut h = kind << 6 | mode << 1 | low;
    h |= if req.id != prev.id { ID } else { 0 };
    h |= if !same_attrs(req, prev) { ATTR } else { 0 };
    wr.put(&[h])?;
    if h & ID != 0 {
        wr.uint(req.id as u64, field_bytes(w.id))?;
    }
    if h & ATTR != 0 {
        let attrs: [u8; ATTR_LEN] = [
            req.size.bits() << 5 | req.burst.bits() << 3 | (req.exclusive as u8) << 2,
            req.len_field(),
            (req.cache.bits() & 0xF) << 4 | (req.prot.bits() & 7) << 1,
            req.qos << 4 | req.region,
            req.atop.bits(),
        ];
        wr.put(&attrs)?;
        wr.uint(req.user, field_bytes(w.user))?;
    }
    wr.uint(value, bytes)
}

/// Decodes an AR or AW record's fields into `req`, which holds the previous request of the
/// channel. On an error `req` may be partly changed (callers decode into a copy).
fn decode_request(
    w: &ChannelWidths,
    req: &mut AddrReq,
    channel: Channel,
    h: u8,
    rd: &mut Reader<'_>,
) -> Result<(), CompressError> {
    let (prev_addr, next) = (req.addr, next_addr(req));
    req.channel = channel;
    if h & ID != 0 {
        req.id = read_id(w, rd)?;
    }
    if h & ATTR != 0 {
        let attrs: [u8; ATTR_LEN] = rd.take(ATTR_LEN)?.try_into().map_err(|_| CompressError::Truncated)?;
        let [a0, a1, a2, a3, a4] = attrs;
        req.size = Size::from_bits(a0 >> 5).map_err(|_| CompressError::Reserved { field: "size" })?;
        req.burst = Burst::from_bits(a0 >> 3).map_err(|_| CompressError::Reserved { field: "burst" })?;
        req.exclusive = a0 & 0b100 != 0;
        req.beats = a1 as u16 + 1;
        req.cache = Cache::from_bits_retain(a2 >> 4);
        req.prot = Prot::from_bits_retain(a2 >> 1 & 7);
        req.qos = a3 >> 4;
        req.region = a3 & 0xF;
        req.atop = Atop::from_bits(a4).map_err(|_| CompressError::Reserved { field: "atop" })?;
        req.user = read_user(w, rd)?;
    }
    let mode = h >> 1 & 7;
    req.addr = match mode {
        MODE_NEXT => next,
        MODE_SAME => prev_addr,
        2..=5 => {
            let bytes = delta_bytes(mode);
            let shift = 64 - 8 * bytes as u32;
            let delta = ((rd.uint(bytes)? << shift) as i64 >> shift) as u64;
            next.wrapping_add(delta)
        }
        MODE_ABS => rd.uint(8)?,
        _ => return Err(CompressError::ReservedAddressMode),
    };
    check_width(req.addr, w.addr, "addr")
}

/// Where a table's stream stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stream {
    key: StreamKey,
    ctx: Context,
    /// The current epoch.
    epoch: u8,
    /// The next frame's sequence number (sender: to send; receiver: expected).
    seq: u16,
    /// Sender: the next frame is RESET. Receiver: the stream waits for a RESET frame.
    reset: bool,
    last_used: u32,
}

/// A fixed-size table of `N` streams, least recently used evicted first.
#[derive(Clone, Debug)]
struct Table<const N: usize> {
    streams: Vec<Stream, N>,
    tick: u32,
}

impl<const N: usize> Table<N> {
    const fn new() -> Self {
        Table { streams: Vec::new(), tick: 0 }
    }

    /// No stream, the clock at zero: what [`Table::new`] returns.
    fn clear(&mut self) {
        self.streams.clear();
        self.tick = 0;
    }

    /// The stream's index, marked used.
    fn find(&mut self, key: StreamKey) -> Option<usize> {
        self.tick = self.tick.wrapping_add(1);
        let tick = self.tick;
        let (i, s) = self.streams.iter_mut().enumerate().find(|(_, s)| s.key == key)?;
        s.last_used = tick;
        Some(i)
    }

    /// The stream's index, created fresh (evicting the least recently used stream whose index
    /// `keep` does not protect) when absent. `None` when every stream is protected.
    fn find_or_insert(&mut self, key: StreamKey, keep: impl Fn(usize) -> bool) -> Option<usize> {
        if let Some(i) = self.find(key) {
            return Some(i);
        }
        let fresh = Stream { key, ctx: Context::new(), epoch: 0, seq: 0, reset: true, last_used: self.tick };
        if self.streams.push(fresh).is_ok() {
            return Some(self.streams.len() - 1);
        }
        let tick = self.tick;
        let (victim, s) = self
            .streams
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| !keep(*i))
            .max_by_key(|(_, s)| tick.wrapping_sub(s.last_used))?;
        *s = fresh;
        Some(victim)
    }

    fn get(&mut self, i: usize) -> Result<&mut Stream, CompressError> {
        self.streams.get_mut(i).ok_or(CompressError::UnknownContext)
    }
}

/// The sender's contexts: `N` streams (module doc).
///
/// Size on a 64-bit host: 2 080 bytes with 16 streams, 128 more per stream. Built in place:
/// [`Compressor::EMPTY`] and [`Compressor::init`].
#[derive(Clone, Debug)]
pub struct Compressor<const N: usize> {
    widths: ChannelWidths,
    table: Table<N>,
    /// The next fresh start's epoch.
    epoch: u8,
}

/// A stream's handle inside a [`Compressor`], valid until the next call that may evict
/// ([`Compressor::open`] of another key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StreamSlot(usize);

impl<const N: usize> Compressor<N> {
    /// A compressor with no widths and every byte zero, so a `static` holding it lands in
    /// `.bss`: it opens no stream ([`CompressError::BadWidths`]) until [`Compressor::init`].
    pub const EMPTY: Self = Compressor { widths: ChannelWidths::ZERO, table: Table::new(), epoch: 0 };

    /// An empty table for transactions of these widths. (Built on the stack; see
    /// [`Compressor::init`] for building one in place.)
    pub fn new(widths: ChannelWidths) -> Result<Self, CompressError> {
        let mut c = Self::EMPTY;
        c.init(widths)?;
        Ok(c)
    }

    /// Makes this compressor what [`Compressor::new`]`(widths)` returns, in place: no stream.
    /// Refused as `new` refuses, and then nothing changed.
    pub fn init(&mut self, widths: ChannelWidths) -> Result<(), CompressError> {
        widths.validate().map_err(|_| CompressError::BadWidths)?;
        (self.widths, self.epoch) = (widths, 0);
        self.table.clear();
        Ok(())
    }

    /// The widths.
    pub fn widths(&self) -> &ChannelWidths {
        &self.widths
    }

    /// Starts a frame on `key`'s stream: writes its header (RESET for a new stream or one the
    /// peer asked to reset, with `resync` for the peer) into `out` and returns the stream's slot
    /// and the header's length. Streams for which `keep` holds are not evicted (an aggregator's
    /// open frames); `None` when every stream is kept.
    pub fn open(
        &mut self,
        key: StreamKey,
        resync: Option<u8>,
        out: &mut [u8],
        keep: impl Fn(StreamSlot) -> bool,
    ) -> Result<Option<(StreamSlot, usize)>, CompressError> {
        if key.vc > 7 {
            return Err(CompressError::BadVc);
        }
        if self.widths == ChannelWidths::ZERO {
            return Err(CompressError::BadWidths);
        }
        let Some(i) = self.table.find_or_insert(key, |i| keep(StreamSlot(i))) else { return Ok(None) };
        let epoch = self.epoch;
        let s = self.table.get(i)?;
        if s.reset {
            s.epoch = epoch;
        }
        let header = FrameHeader { reset: s.reset, resync, vc: key.vc, epoch: s.epoch, seq: s.seq };
        let len = header.emit(out)?;
        if s.reset {
            s.ctx = Context::new();
            s.reset = false;
            self.epoch = epoch.wrapping_add(1);
        }
        s.seq = s.seq.wrapping_add(1);
        Ok(Some((StreamSlot(i), len)))
    }

    /// Encodes `txn` on the stream of `slot` into `out` (module doc); returns the record's
    /// length. On an error the stream is unchanged.
    pub fn encode(&mut self, slot: StreamSlot, txn: &Txn<'_>, out: &mut [u8]) -> Result<usize, CompressError> {
        check(&self.widths, txn)?;
        self.encode_checked(slot, txn, out)
    }

    /// [`Compressor::encode`] of a transaction [`check`] accepted.
    pub(crate) fn encode_checked(
        &mut self,
        slot: StreamSlot,
        txn: &Txn<'_>,
        out: &mut [u8],
    ) -> Result<usize, CompressError> {
        let widths = self.widths;
        self.table.get(slot.0)?.ctx.encode_checked(&widths, txn, out)
    }

    /// The key of the stream in `slot`.
    pub fn key(&self, slot: StreamSlot) -> Option<StreamKey> {
        self.table.streams.get(slot.0).map(|s| s.key)
    }

    /// The peer asked for a reset of `key`'s stream: its next frame is RESET.
    pub fn reset(&mut self, key: StreamKey) {
        if let Some(s) = self.table.find(key).and_then(|i| self.table.streams.get_mut(i)) {
            s.reset = true;
        }
    }

    /// Forgets every stream (after a link reset; the peer clears its [`Decompressor`]).
    pub fn clear(&mut self) {
        self.table.streams.clear();
    }
}

/// The receiver's contexts: `N` streams (module doc).
///
/// Size on a 64-bit host: 2 080 bytes with 16 streams, 128 more per stream. Built in place:
/// [`Decompressor::EMPTY`] and [`Decompressor::init`].
#[derive(Clone, Debug)]
pub struct Decompressor<const N: usize> {
    widths: ChannelWidths,
    table: Table<N>,
}

/// A validated frame's transactions, decoded in order by iteration.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    widths: ChannelWidths,
    ctx: Context,
    rest: &'a [u8],
    header: FrameHeader,
}

impl<'a> Records<'a> {
    /// The frame's header. Its `resync`, when set, asks the receiver's own sender to start its
    /// stream to this peer on that VC afresh: [`crate::aggregate::Aggregator::reset_stream`] (or
    /// [`Compressor::reset`]).
    pub fn header(&self) -> &FrameHeader {
        &self.header
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Txn<'a>;

    fn next(&mut self) -> Option<Txn<'a>> {
        // `Decompressor::open` decoded every record from this same context: no error is left.
        let (txn, used) = self.ctx.decode(&self.widths, self.rest).ok()?;
        self.rest = self.rest.get(used..)?;
        Some(txn)
    }
}

impl<const N: usize> Decompressor<N> {
    /// A decompressor with no widths and every byte zero, so a `static` holding it lands in
    /// `.bss`: it refuses every frame ([`CompressError::BadWidths`]) until
    /// [`Decompressor::init`].
    pub const EMPTY: Self = Decompressor { widths: ChannelWidths::ZERO, table: Table::new() };

    /// An empty table for transactions of these widths. (Built on the stack; see
    /// [`Decompressor::init`] for building one in place.)
    pub fn new(widths: ChannelWidths) -> Result<Self, CompressError> {
        let mut d = Self::EMPTY;
        d.init(widths)?;
        Ok(d)
    }

    /// Makes this decompressor what [`Decompressor::new`]`(widths)` returns, in place: no
    /// stream. Refused as `new` refuses, and then nothing changed.
    pub fn init(&mut self, widths: ChannelWidths) -> Result<(), CompressError> {
        widths.validate().map_err(|_| CompressError::BadWidths)?;
        self.widths = widths;
        self.table.clear();
        Ok(())
    }

    /// Checks a frame from `peer` whole and advances the stream past it; the returned
    /// [`Records`] yield its transactions. On an error nothing is delivered; the stream then
    /// waits for a RESET frame unless the header was truncated or the stream is not in the
    /// table (module doc). A frame's RESYNC request stands even when the frame is refused: read
    /// it with [`FrameHeader::parse`] first ([`crate::aggregate::Deaggregator`] does), or two
    /// ends that each lost a frame would each refuse the other's request for ever.
    pub fn open<'a>(&mut self, peer: u32, frame: &'a [u8]) -> Result<Records<'a>, CompressError> {
        if self.widths == ChannelWidths::ZERO {
            return Err(CompressError::BadWidths);
        }
        let (header, records) = FrameHeader::parse(frame)?;
        let key = StreamKey { peer, vc: header.vc };
        let i = if header.reset {
            let i = self.table.find_or_insert(key, |_| false).ok_or(CompressError::UnknownContext)?;
            let s = self.table.get(i)?;
            (s.ctx, s.reset, s.epoch) = (Context::new(), false, header.epoch);
            i
        } else {
            self.table.find(key).ok_or(CompressError::UnknownContext)?
        };
        let widths = self.widths;
        let s = self.table.get(i)?;
        if s.reset {
            return Err(CompressError::NeedsReset);
        }
        if header.epoch != s.epoch {
            s.reset = true;
            return Err(CompressError::UnknownContext);
        }
        if !header.reset && header.seq != s.seq {
            s.reset = true;
            return Err(CompressError::OutOfSequence { expected: s.seq, got: header.seq });
        }
        let start = s.ctx;
        let mut rest = records;
        while !rest.is_empty() {
            match s.ctx.step(&widths, rest) {
                Ok(step) => rest = rest.get(step.len..).unwrap_or(&[]),
                Err(e) => {
                    (s.ctx, s.reset) = (start, true);
                    return Err(e);
                }
            }
        }
        s.seq = header.seq.wrapping_add(1);
        Ok(Records { widths, ctx: start, rest: records, header })
    }

    /// Forgets every stream (after a link reset; the peer clears its [`Compressor`]).
    pub fn clear(&mut self) {
        self.table.streams.clear();
    }
}

#[cfg(test)]
// Binary literals grouped by field, as the module doc's tables split the bytes.
#[allow(clippy::unusual_byte_groupings)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: ChannelWidths = ChannelWidths::EXAMPLE;

    fn size(bytes: u16) -> Size {
        Size::from_bytes(bytes).unwrap()
    }

    fn read(addr: u64, beats: u16, bytes: u16) -> AddrReq {
        AddrReq::incr(Channel::Read, addr, beats, size(bytes))
    }

    fn round_trip(txns: &[Txn<'_>]) -> std::vec::Vec<u8> {
        let (mut tx, mut rx) = (Context::new(), Context::new());
        let mut wire = std::vec::Vec::new();
        for t in txns {
            let mut buf = [0u8; 9000];
            let n = tx.encode(&W, t, &mut buf).unwrap();
            let (back, used) = rx.decode(&W, &buf[..n]).unwrap();
            assert_eq!((&back, used), (t, n));
            wire.extend_from_slice(&buf[..n]);
        }
        assert_eq!(tx, rx);
        wire
    }

    #[test]
    fn hand_computed_bytes() {
        // First AR: ID 5 (differs from 0), attributes differ (64 B × 2 beats), address 0x1000
        // is NEXT + 0x1000 - 1 → Δ16.
        let mut ar = read(0x1000, 2, 64);
        ar.id = 5;
        let wire = round_trip(&[Txn::Read(ar), Txn::Read(read_id(0x1080, 5)), Txn::Read(read_id(0x1000, 5))]);
        assert_eq!(
            wire,
            [
                0b00_1_1_011_0,
                5,
                0b110_01_0_00,
                1,
                0,
                0,
                0,
                0,
                0,
                0x0F,
                0xFF,           // AR 1: 11 bytes
                0b00_0_0_000_0, // AR 2: NEXT, same ID and attributes: 1 byte
                0b00_0_0_011_0,
                0xFF,
                0x00, // AR 3: NEXT is 0x1100, Δ −0x100
            ]
        );
        // R run: new ID 5, OKAY, same USER, new length 128, RLAST; then the same again.
        let data = [0xAB; 128];
        let r = Txn::ReadData { id: 5, resp: Resp::Okay, last: true, user: 0, data: &data };
        let wire = round_trip(&[r, r]);
        assert_eq!(&wire[..4], &[0b10_1_0_0_1_1_0, 5, 0, 128]);
        assert_eq!(wire[4 + 128], 0b10_0_0_0_0_1_0);
        assert_eq!(wire.len(), 4 + 128 + 1 + 128);
        // B: SLVERR with ID 0 → header and RESP byte.
        let b = Txn::WriteResp(WriteResp { id: 0, resp: Resp::SlvErr, user: 0 });
        assert_eq!(round_trip(&[b]), [0b11_0_1_0_000, 0b10]);
    }

    fn read_id(addr: u64, id: u32) -> AddrReq {
        AddrReq { id, ..read(addr, 2, 64) }
    }

    #[test]
    fn writes_with_and_without_strobes() {
        let data = [7u8; 64];
        let strobes = [0xFFu8, 0, 0, 0, 0, 0, 0, 0x0F];
        let req = AddrReq::incr(Channel::Write, 64, 1, size(64));
        let full = Txn::Write { req, data: &data, strobes: None };
        let part = Txn::Write { req, data: &data, strobes: Some(&strobes) };
        let wire = round_trip(&[full, part]);
        // AW 1: attributes (5 + 2 USER), NEXT is 1 so Δ8 +63, data; AW 2: the same address
        // (SAME), strobes follow the data.
        assert_eq!((wire[0], wire[8]), (0b01_0_1_010_0, 63));
        assert_eq!(wire[1 + 7 + 1 + 64], 0b01_0_0_001_1);
        assert_eq!(wire.len(), 1 + 7 + 1 + 64 + 1 + 64 + 8);
        // A data length that is not beats × size is refused before anything is written.
        let mut ctx = Context::new();
        let bad = Txn::Write { req, data: &data[..63], strobes: None };
        assert_eq!(ctx.encode(&W, &bad, &mut [0; 100]), Err(CompressError::DataLength));
        let bad = Txn::Write { req, data: &data, strobes: Some(&strobes[..7]) };
        assert_eq!(ctx.encode(&W, &bad, &mut [0; 100]), Err(CompressError::DataLength));
        assert_eq!(ctx, Context::new());
    }

    #[test]
    fn widths_and_modes_are_checked() {
        let mut ctx = Context::new();
        let mut wide = read(0, 1, 1);
        wide.id = 256;
        assert_eq!(ctx.encode(&W, &Txn::Read(wide), &mut [0; 64]), Err(CompressError::FieldTooWide { field: "id" }));
        let w40 = ChannelWidths { addr: 40, ..W };
        assert_eq!(
            ctx.encode(&w40, &Txn::Read(read(1 << 40, 1, 1)), &mut [0; 64]),
            Err(CompressError::FieldTooWide { field: "addr" })
        );
        assert_eq!(
            ctx.encode(&W, &Txn::Write { req: read(0, 1, 1), data: &[0], strobes: None }, &mut [0; 64]),
            Err(CompressError::ChannelMismatch)
        );
        assert_eq!(ctx.decode(&W, &[0b00_0_0_111_0]), Err(CompressError::ReservedAddressMode));
        assert_eq!(
            ctx.decode(&W, &[0b00_0_1_000_0, 0b000_11_000, 0, 0, 0, 0, 0, 0]),
            Err(CompressError::Reserved { field: "burst" })
        );
        assert_eq!(ctx.decode(&W, &[0b00_1_0_000_0]), Err(CompressError::Truncated));
        // ABS with an address beyond 40 bits.
        let mut abs = [0u8; 9];
        abs[0] = 0b00_0_0_110_0;
        abs[1] = 1;
        assert_eq!(ctx.decode(&w40, &abs), Err(CompressError::FieldTooWide { field: "addr" }));
        assert_eq!(ctx, Context::new());
        // Reserved bits are ignored on receive: AR header bit 0 and the attribute block's.
        assert_eq!(ctx.decode(&W, &[0b00_0_0_000_1]).unwrap().1, 1);
        let mut enc = [0u8; 64];
        let n = Context::new().encode(&W, &Txn::Read(read(0x40, 1, 8)), &mut enc).unwrap();
        enc[1] |= 0b11;
        enc[3] |= 1;
        enc[5] |= 0xC0;
        let (t, _) = Context::new().decode(&W, &enc[..n]).unwrap();
        assert_eq!(t, Txn::Read(read(0x40, 1, 8)));
    }

    fn key(vc: u8) -> StreamKey {
        StreamKey { peer: 9, vc }
    }

    fn frame(c: &mut Compressor<4>, k: StreamKey, txns: &[Txn<'_>], resync: Option<u8>) -> std::vec::Vec<u8> {
        let mut buf = std::vec![0u8; 1 << 16];
        let (slot, mut n) = c.open(k, resync, &mut buf, |_| false).unwrap().unwrap();
        for t in txns {
            n += c.encode(slot, t, &mut buf[n..]).unwrap();
        }
        buf[..n].to_vec()
    }

    #[test]
    fn loss_is_detected_and_resynchronised() {
        let mut c = Compressor::<4>::new(W).unwrap();
        let mut d = Decompressor::<4>::new(W).unwrap();
        let t = |a| Txn::Read(read(a, 2, 64));
        let f0 = frame(&mut c, key(0), &[t(0x1000), t(0x1080)], None);
        let f1 = frame(&mut c, key(0), &[t(0x1100)], None);
        let f2 = frame(&mut c, key(0), &[t(0x1180)], None);
        assert_eq!(f0[..4], [0x80, 0, 0, 0]);
        assert_eq!(f1[..4], [0, 0, 0, 1]);
        // A stream the receiver never saw: unknown context.
        assert_eq!(d.open(9, &f1).unwrap_err(), CompressError::UnknownContext);
        assert_eq!(d.open(9, &f0).unwrap().collect::<std::vec::Vec<_>>(), [t(0x1000), t(0x1080)]);
        // f1 lost: f2 would decode NEXT as 0x1100, the wrong address; it is refused.
        assert_eq!(d.open(9, &f2).unwrap_err(), CompressError::OutOfSequence { expected: 1, got: 2 });
        assert_eq!(d.open(9, &f2).unwrap_err(), CompressError::NeedsReset);
        // The receiver asks for a reset; the sender's next frame is RESET and decodes.
        c.reset(key(0));
        let f3 = frame(&mut c, key(0), &[t(0x2000), t(0x2080)], None);
        assert_eq!(f3[0], 0x80);
        assert_eq!(d.open(9, &f3).unwrap().collect::<std::vec::Vec<_>>(), [t(0x2000), t(0x2080)]);
        // The RESYNC request rides in the header.
        let f4 = frame(&mut c, key(1), &[], Some(3));
        assert_eq!(d.open(9, &f4).unwrap().header().resync, Some(3));
        // A malformed record: nothing delivered, the stream waits for a reset.
        let mut bad = frame(&mut c, key(0), &[t(0x2100)], None);
        bad.push(0b00_0_0_111_0);
        assert_eq!(d.open(9, &bad).unwrap_err(), CompressError::ReservedAddressMode);
        let next = frame(&mut c, key(0), &[t(0x2180)], None);
        assert_eq!(d.open(9, &next).unwrap_err(), CompressError::NeedsReset);
    }

    #[test]
    fn full_table_evicts_least_recently_used() {
        let mut c = Compressor::<2>::new(W).unwrap();
        let mut buf = [0u8; 8];
        let (a, _) = c.open(key(0), None, &mut buf, |_| false).unwrap().unwrap();
        let (b, _) = c.open(key(1), None, &mut buf, |_| false).unwrap().unwrap();
        assert_ne!(a, b);
        // Both kept: no room.
        assert_eq!(c.open(key(2), None, &mut buf, |_| true).unwrap(), None);
        // Key 0 is least recently used: evicted; key 1 stays and continues its sequence.
        let (s, _) = c.open(key(2), None, &mut buf, |_| false).unwrap().unwrap();
        assert_eq!((s, buf[..2].to_vec()), (a, std::vec![0x82, 2]));
        c.open(key(1), None, &mut buf, |_| false).unwrap().unwrap();
        assert_eq!(buf[..4], [1, 1, 0, 1]);
        assert_eq!(c.key(s), Some(key(2)));
    }

    /// The fuzzer's find: a stream evicted at the sender comes back fresh (sequence 0), its
    /// RESET frame is lost, and its next frame carries the sequence number the receiver's stale
    /// context expects. The epoch tells them apart.
    #[test]
    fn a_stream_evicted_and_restarted_is_not_decoded_against_a_stale_context() {
        let mut c = Compressor::<1>::new(W).unwrap();
        let mut d = Decompressor::<4>::new(W).unwrap();
        let r = |user| Txn::ReadData { id: 0, resp: Resp::Okay, last: true, user, data: &[] };
        let first = frame1(&mut c, key(0), &[r(7)]);
        assert_eq!(d.open(9, &first).unwrap().count(), 1);
        frame1(&mut c, key(1), &[r(0)]); // evicts key 0
        let _lost_reset = frame1(&mut c, key(0), &[r(0)]);
        let next = frame1(&mut c, key(0), &[r(0)]);
        assert_eq!(next[2..4], [0, 1], "the sequence number the stale context expects");
        assert_eq!(d.open(9, &next).unwrap_err(), CompressError::UnknownContext);
        assert_eq!(d.open(9, &next).unwrap_err(), CompressError::NeedsReset);
    }

    fn frame1(c: &mut Compressor<1>, k: StreamKey, txns: &[Txn<'_>]) -> std::vec::Vec<u8> {
        let mut buf = [0u8; 256];
        let (slot, mut n) = c.open(k, None, &mut buf, |_| false).unwrap().unwrap();
        for t in txns {
            n += c.encode(slot, t, &mut buf[n..]).unwrap();
        }
        buf[..n].to_vec()
    }

    fn arb_req(channel: Channel) -> impl Strategy<Value = AddrReq> {
        (
            any::<u8>(),
            prop_oneof![0..8192u64, any::<u64>()],
            1..=256u16,
            0..=7u8,
            0..3u8,
            any::<bool>(),
            0..16u8,
            0..8u8,
            0..16u8,
            0..16u8,
            any::<u16>(),
        )
            .prop_map(move |(id, addr, beats, sz, burst, exclusive, cache, prot, qos, region, user)| AddrReq {
                channel,
                id: id as u32,
                addr,
                beats: if channel == Channel::Write { beats.min(16) } else { beats },
                size: Size::from_bits(sz).unwrap(),
                burst: Burst::from_bits(burst).unwrap(),
                exclusive,
                cache: Cache::from_bits_retain(cache),
                prot: Prot::from_bits_retain(prot),
                qos,
                region,
                atop: Atop::NonAtomic,
                user: user as u64,
            })
    }

    #[derive(Clone, Debug)]
    enum Op {
        Read(AddrReq),
        Write(AddrReq, bool),
        R(u8, u8, bool, u16, u16),
        B(u8, u8, u16),
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            arb_req(Channel::Read).prop_map(Op::Read),
            (arb_req(Channel::Write), any::<bool>()).prop_map(|(r, s)| Op::Write(r, s)),
            (0..4u8, 0..4u8, any::<bool>(), 0..2u16, 0..300u16).prop_map(|(i, r, l, u, n)| Op::R(i, r, l, u, n)),
            (0..4u8, 0..4u8, 0..2u16).prop_map(|(i, r, u)| Op::B(i, r, u)),
        ]
    }

    fn txn<'a>(op: &Op, data: &'a [u8]) -> Txn<'a> {
        match *op {
            Op::Read(r) => Txn::Read(r),
            Op::Write(r, s) => {
                let n = r.total_bytes() as usize;
                Txn::Write { req: r, data: &data[..n], strobes: s.then(|| &data[..n.div_ceil(8)]) }
            }
            Op::R(id, r, last, user, n) => Txn::ReadData {
                id: id as u32,
                resp: Resp::from_bits(r),
                last,
                user: user as u64,
                data: &data[..n as usize],
            },
            Op::B(id, r, user) => {
                Txn::WriteResp(WriteResp { id: id as u32, resp: Resp::from_bits(r), user: user as u64 })
            }
        }
    }

    proptest! {
        /// Any sequence of transactions compresses and decompresses to itself.
        #[test]
        fn any_sequence_round_trips(ops in proptest::collection::vec(arb_op(), 1..40)) {
            let data: std::vec::Vec<u8> = (0..2048u32).map(|i| i as u8).collect();
            let txns: std::vec::Vec<Txn<'_>> = ops.iter().map(|o| txn(o, &data)).collect();
            round_trip(&txns);
        }

        /// Across frame losses with resynchronisation, every frame the receiver accepts decodes
        /// to exactly what was sent, and every frame after a reset is accepted.
        #[test]
        fn lossy_frames_never_decode_wrongly(
            frames in proptest::collection::vec((proptest::collection::vec(arb_op(), 0..6), any::<bool>(), 0..2u8), 1..30)
        ) {
            let data: std::vec::Vec<u8> = (0..2048u32).map(|i| i as u8).collect();
            let mut c = Compressor::<4>::new(W).unwrap();
            let mut d = Decompressor::<4>::new(W).unwrap();
            let mut resync_asked = [false; 8];
            for (ops, lost, vc) in &frames {
                let txns: std::vec::Vec<Txn<'_>> = ops.iter().map(|o| txn(o, &data)).collect();
                let k = key(*vc);
                if resync_asked[*vc as usize] {
                    c.reset(k);
                }
                let bytes = frame(&mut c, k, &txns, None);
                let was_reset = bytes[0] & 0x80 != 0;
                if *lost {
                    continue;
                }
                match d.open(9, &bytes) {
                    Ok(records) => {
                        prop_assert_eq!(records.collect::<std::vec::Vec<_>>(), txns);
                        resync_asked[*vc as usize] = false;
                    }
                    Err(e) => {
                        prop_assert!(!was_reset, "a reset frame was refused: {:?}", e);
                        resync_asked[*vc as usize] = true;
                    }
                }
            }
        }
    }
}
