//! Packing messages into 68B flits and unpacking them (CXL 3.x §4.2.5, Flit Packing Rules).
//!
//! * Data follows its header in the next free slots of the same flit (slots 1–3), and what does
//!   not fit rolls over: with more than three chunks pending the next flit is an all-data flit
//!   (four chunks, no flit header); with one to three pending, the next protocol flit carries
//!   them in slots 1, 1–2 or 1–3 and packs its other slots independently. Data of several
//!   headers goes in header order (lowest bit position first), each line in chunk order.
//! * A flit begins at most one data message, and the flit header's Sz (64 or 32 bytes) and BE
//!   (a byte-enable chunk follows the data) describe it. 32-byte transfers are allowed for H2D,
//!   D2H and S2M data, byte enables for M2S and D2H data (Table 4-3).
//! * With MDH (multiple data headers; off unless both ends enable it, `with_mdh`), one slot
//!   may hold several data headers, each a 64-byte transfer without byte enables (Sz = 1,
//!   BE = 0); that flit carries no other data header, and a slot format holding several data
//!   headers is used only for more than one. With MDH off such a format is refused on receive.
//! * Per flit at most: D2H Req 4, D2H Rsp 2, D2H DH 4, S2M NDR 2, S2M DRS 3, H2D Req 2,
//!   H2D Rsp 4, H2D DH 4, M2S Req 2, M2S RwD 1.
//!
//! The receiver tells an all-data flit from a protocol flit by the chunks it still expects
//! ([`Unpacker::expects_all_data`]): an all-data flit has no header to say so. A link layer
//! asks before it reads the control-flit Type bit.
//!
//! *Project-defined:* the byte-enable chunk carries BE\[63:0\] little-endian in bytes 0–7
//! (byte n holds the enables of data bytes 8n to 8n+7), bytes 8–15 zero (the figure is an
//! image); an empty slot is sent as format H0 (slot 0) or G1 with every Valid bit clear; a
//! flit with no data header sends Sz = BE = 0.

use super::header::{Credit, FlitHeader, HeaderError};
use super::slot::{self, Contents, Direction, Position};
use crate::msg::{Kind, Msg, MsgError};
use heapless::Deque;

/// Bytes of a flit the packer fills (the CRC follows, [`super::crc`]).
pub const BODY_LEN: usize = 64;
/// Bytes of a data chunk.
pub const CHUNK: usize = 16;

/// The most messages of each kind one flit may carry (§4.2.5), indexed like [`Kind::ALL`].
pub const fn max_per_flit(kind: Kind) -> usize {
    match kind {
        Kind::D2hReq | Kind::D2hData | Kind::H2dRsp | Kind::H2dData => 4,
        Kind::S2mDrs => 3,
        Kind::D2hRsp | Kind::S2mNdr | Kind::H2dReq | Kind::M2sReq => 2,
        Kind::M2sRwd => 1,
        Kind::M2sBiRsp | Kind::S2mBiSnp => 0,
    }
}

/// The shape of a data message's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Shape {
    /// A 32-byte transfer (else 64).
    pub half: bool,
    /// Byte enables follow the data.
    pub be: bool,
}

impl Shape {
    /// The 16-byte chunks the data takes.
    pub const fn chunks(self) -> usize {
        (if self.half { 2 } else { 4 }) + self.be as usize
    }

    /// Whether Table 4-3 allows the shape for data of `kind`.
    pub const fn allowed(self, kind: Kind) -> bool {
        let half_ok = !matches!(kind, Kind::M2sRwd);
        let be_ok = matches!(kind, Kind::M2sRwd | Kind::D2hData);
        (!self.half || half_ok) && (!self.be || be_ok)
    }
}

/// A data header's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Payload {
    /// The data: all 64 bytes, or the first 32 for a 32-byte transfer (the header's
    /// ChunkValid says which half of the line they are).
    pub bytes: [u8; 64],
    /// A 32-byte transfer.
    pub half: bool,
    /// Byte enables, bit n for byte n of the line; with a 32-byte transfer the half sent
    /// uses BE\[31:0\] (lower half) or BE\[63:32\] (upper half).
    pub be: Option<u64>,
}

impl Default for Payload {
    fn default() -> Self {
        Payload { bytes: [0; 64], half: false, be: None }
    }
}

impl Payload {
    /// The payload's shape.
    pub const fn shape(&self) -> Shape {
        Shape { half: self.half, be: self.be.is_some() }
    }

    /// Chunk `i` as sent: data chunks first, then the byte-enable chunk.
    fn chunk(&self, i: usize) -> [u8; CHUNK] {
        let data = if self.half { 2 } else { 4 };
        let mut c = [0u8; CHUNK];
        if i < data {
            if let Some(src) = self.bytes.get(i * CHUNK..(i + 1) * CHUNK) {
                c.copy_from_slice(src);
            }
        } else if let (Some(be), Some(dst)) = (self.be, c.get_mut(..8)) {
            dst.copy_from_slice(&be.to_le_bytes());
        }
        c
    }

    /// Stores received chunk `i`.
    fn set_chunk(&mut self, i: usize, c: &[u8; CHUNK]) {
        let data = if self.half { 2 } else { 4 };
        if i < data {
            if let Some(dst) = self.bytes.get_mut(i * CHUNK..(i + 1) * CHUNK) {
                dst.copy_from_slice(c);
            }
        } else {
            let mut be = [0u8; 8];
            be.copy_from_slice(c.get(..8).unwrap_or(&[0; 8]));
            self.be = Some(u64::from_le_bytes(be));
        }
    }
}

/// Where a packer takes messages from: one first-in first-out queue per message kind, with
/// only the messages the sender holds credits for (credit counting is the caller's: the
/// packer offers what the source offers, and carries the credit returns it is given). `P` is the data a data header carries
/// ([`Payload`] for 68B flits, [`crate::flit256::pack::Data`] for 256B flits).
pub trait Source<P = Payload> {
    /// The `i`-th oldest waiting message of `kind` (`i = 0` the next to send) with its data;
    /// `None` when fewer are waiting.
    fn peek(&self, kind: Kind, i: usize) -> Option<(&Msg, Option<&P>)>;
    /// Removes the oldest message of `kind`, with its data for a data header.
    fn pop(&mut self, kind: Kind) -> Option<(Msg, Option<P>)>;
}

/// The shape of the `i`-th waiting message of `kind` (the default for one without data).
fn peek_shape<S: Source>(src: &S, kind: Kind, i: usize) -> Option<Shape> {
    src.peek(kind, i).map(|(_, d)| d.map(Payload::shape).unwrap_or_default())
}

/// What [`Packer::pack`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Packed {
    /// A protocol flit (it carries the credits given).
    Protocol,
    /// An all-data flit: four chunks of rolled-over data, no header (credits not sent).
    AllData,
}

/// Why a flit could not be packed. The message at fault stays queued; messages already
/// taken into the same flit are dropped with it, so a source should hold only messages that
/// encode in 68B ([`crate::msg::Message::encode`] with [`crate::msg::Width::Flit68`]) and
/// give every data header its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PackError {
    /// A data message whose shape Table 4-3 does not allow for its kind (32 bytes of M2S data,
    /// byte enables on H2D or S2M data), or whose payload differs from the shape peeked.
    Shape {
        /// The kind.
        kind: Kind,
    },
    /// A message that does not encode in a 68B slot, or whose kind the direction does not send.
    Message(MsgError),
    /// The source said a message was waiting and then gave none, or one of another kind.
    Source {
        /// The kind asked for.
        kind: Kind,
    },
}

impl core::fmt::Display for PackError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PackError::Shape { kind } => write!(f, "{kind:?} data of a shape Table 4-3 does not allow"),
            PackError::Message(e) => write!(f, "{e}"),
            PackError::Source { kind } => write!(f, "the source announced a {kind:?} message and gave none"),
        }
    }
}

impl core::error::Error for PackError {}

/// Per-kind counts for one flit.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts([u8; 12]);

impl Counts {
    pub(crate) const fn new() -> Counts {
        Counts([0; 12])
    }

    #[inline]
    pub(crate) fn get(&self, kind: Kind) -> usize {
        self.0.get(kind as usize).copied().map_or(0, usize::from)
    }
    #[inline]
    pub(crate) fn add(&mut self, kind: Kind) {
        if let Some(c) = self.0.get_mut(kind as usize) {
            *c = c.saturating_add(1);
        }
    }
}

/// Chunks that can wait in the packer: up to three rolled over plus four 64-byte lines.
const PENDING: usize = 20;

/// Fills 68B flits from a [`Source`] (sans-I/O: the caller seals each flit with
/// [`super::crc::seal`] and sends it).
#[derive(Clone, Debug)]
pub struct Packer {
    direction: Direction,
    mdh: bool,
    pending: Deque<[u8; CHUNK], PENDING>,
}

/// The data header that begins in the flit being packed.
#[derive(Clone, Copy, Default)]
struct FlitData {
    headers: usize,
    shape: Shape,
}

impl Packer {
    /// A packer for `direction`, with multiple data headers per slot (MDH) disabled.
    pub const fn new(direction: Direction) -> Packer {
        Packer { direction, mdh: false, pending: Deque::new() }
    }

    /// With `mdh` true both ends support multiple data headers per slot and have it enabled
    /// (§4.2.5).
    pub const fn with_mdh(mut self, mdh: bool) -> Packer {
        self.mdh = mdh;
        self
    }

    /// Data chunks waiting to be sent.
    pub fn pending_chunks(&self) -> usize {
        self.pending.len()
    }

    /// Whether the next flit must be an all-data flit (no control flit may come before it).
    pub fn owes_all_data(&self) -> bool {
        self.pending.len() >= 4
    }

    /// Packs the next flit into `out` (flit bytes 0–63): an all-data flit while more than
    /// three chunks are pending, else a protocol flit carrying `credits` (RspCrd, ReqCrd,
    /// DataCrd) and as many of the source's messages as the slot rules allow. `None` when
    /// there is nothing to send: no pending data, no message and no credit.
    pub fn pack<S: Source>(
        &mut self,
        src: &mut S,
        credits: [Credit; 3],
        out: &mut [u8; BODY_LEN],
    ) -> Result<Option<Packed>, PackError> {
        if self.pending.len() >= 4 {
            for c in out.chunks_exact_mut(CHUNK) {
                c.copy_from_slice(&self.pending.pop_front().unwrap_or([0; CHUNK]));
            }
            return Ok(Some(Packed::AllData));
        }
        let [rsp_crd, req_crd, data_crd] = credits;
        let mut header = FlitHeader { rsp_crd, req_crd, data_crd, ..FlitHeader::default() };
        let mut slots = [0u128; 4];
        let mut counts = Counts::default();
        let avail = waiting(src, self.direction);
        let mut data = FlitData::default();
        let mut placed = 0usize;
        let was_pending = !self.pending.is_empty();
        for (s, slot) in slots.iter_mut().enumerate() {
            let code = if s > 0 && !self.pending.is_empty() {
                let c = self.pending.pop_front().unwrap_or([0; CHUNK]);
                *slot = u128::from_le_bytes(c);
                0
            } else {
                let (code, n) = self.fill_slot(src, s == 0, slot, &mut counts, &avail, &mut data)?;
                placed += n;
                code
            };
            if let Some(h) = header.slots.get_mut(s) {
                *h = code;
            }
        }
        if placed == 0 && !was_pending && credits == [Credit::NONE; 3] {
            return Ok(None);
        }
        if data.headers > 0 {
            header.sz = !data.shape.half;
            header.be = data.shape.be;
        }
        if let Some(s0) = slots.first_mut() {
            *s0 |= u128::from(u32::from_le_bytes(header.emit()));
        }
        for (c, s) in out.chunks_exact_mut(CHUNK).zip(slots) {
            c.copy_from_slice(&s.to_le_bytes());
        }
        Ok(Some(Packed::Protocol))
    }

    /// Chooses the format for one slot, fills it from the source and queues the data of any
    /// data header; the format code and the messages placed. `avail`: the messages of each
    /// kind waiting when the flit began (at most a flit's worth).
    fn fill_slot<S: Source>(
        &mut self,
        src: &mut S,
        header: bool,
        slot: &mut u128,
        counts: &mut Counts,
        avail: &Counts,
        data: &mut FlitData,
    ) -> Result<(u8, usize), PackError> {
        let mut best: Option<(u8, &'static [Position], bool, usize)> = None;
        for (code, positions, mdh_format) in slot::message_formats(self.direction, header) {
            let n = self.plan(src, positions, mdh_format, counts, avail, data)?;
            if n > 0 && best.is_none_or(|(.., b)| n > b) {
                best = Some((code, positions, mdh_format, n));
            }
        }
        let Some((code, positions, mdh_format, _)) = best else {
            return Ok((if header { 0 } else { 1 }, 0));
        };
        let mut pick = Pick::new(mdh_format);
        for pos in positions {
            if !self.can_place(src, pos.kind, 0, counts, avail, &pick, data) {
                continue;
            }
            // Encoded from the queue before it leaves it: a message that does not fit a 68B
            // slot stays queued.
            let (next, _) = src.peek(pos.kind, 0).ok_or(PackError::Source { kind: pos.kind })?;
            slot::put(slot, pos, next).map_err(PackError::Message)?;
            let (msg, payload) = src.pop(pos.kind).ok_or(PackError::Source { kind: pos.kind })?;
            if msg.kind() != pos.kind {
                return Err(PackError::Source { kind: pos.kind });
            }
            if pos.kind.has_data() {
                let payload = payload.ok_or(PackError::Shape { kind: pos.kind })?;
                if !payload.shape().allowed(pos.kind) {
                    return Err(PackError::Shape { kind: pos.kind });
                }
                for i in 0..payload.shape().chunks() {
                    // Capacity covers the worst case (three rolled over plus four lines).
                    let _ = self.pending.push_back(payload.chunk(i));
                }
                if data.headers == 0 {
                    data.shape = payload.shape();
                }
                data.headers += 1;
            }
            pick.add(pos.kind);
            counts.add(pos.kind);
        }
        Ok((code, pick.placed))
    }

    /// How many messages the source could put in a slot of this format now.
    fn plan<S: Source>(
        &self,
        src: &S,
        positions: &'static [Position],
        mdh_format: bool,
        counts: &Counts,
        avail: &Counts,
        data: &FlitData,
    ) -> Result<usize, PackError> {
        let mut pick = Pick::new(mdh_format);
        let mut data = *data;
        // Picks made in this slot are not yet in `counts`: count them in.
        let mut seen = *counts;
        for pos in positions {
            let next = pick.local.get(pos.kind);
            if self.can_place(src, pos.kind, next, &seen, avail, &pick, &data) {
                if pos.kind.has_data() {
                    // A data header without its data is refused while still queued.
                    if let Some((_, None)) = src.peek(pos.kind, next) {
                        return Err(PackError::Shape { kind: pos.kind });
                    }
                    let shape = peek_shape(src, pos.kind, next).unwrap_or_default();
                    if !shape.allowed(pos.kind) {
                        return Err(PackError::Shape { kind: pos.kind });
                    }
                    if data.headers == 0 {
                        data.shape = shape;
                    }
                    data.headers += 1;
                }
                pick.add(pos.kind);
                seen.add(pos.kind);
            }
        }
        // An MDH format only for more than one data header.
        if pick.mdh_format && pick.headers < 2 {
            return Ok(0);
        }
        Ok(pick.placed)
    }

    /// Whether the waiting message of `kind` at queue index `next` may take a position of the
    /// slot being picked, given what the flit holds already (`counts`, this slot's picks
    /// included).
    #[allow(clippy::too_many_arguments, reason = "one private predicate over the packing state")]
    fn can_place<S: Source>(
        &self,
        src: &S,
        kind: Kind,
        next: usize,
        counts: &Counts,
        avail: &Counts,
        pick: &Pick,
        data: &FlitData,
    ) -> bool {
        let taken = counts.get(kind);
        if taken >= max_per_flit(kind) || taken >= avail.get(kind) {
            return false;
        }
        if !kind.has_data() {
            return true;
        }
        let Some(shape) = peek_shape(src, kind, next) else { return false };
        if !pick.mdh_format {
            return data.headers == 0;
        }
        // An MDH slot: the flit's only data headers, all 64 bytes without byte enables.
        self.mdh && data.headers == pick.headers && shape == Shape::default()
    }
}

/// One slot's picks while its format is chosen and filled.
struct Pick {
    /// The format has several data-header positions.
    mdh_format: bool,
    /// Messages picked, per kind.
    local: Counts,
    /// Messages picked.
    placed: usize,
    /// Data headers picked.
    headers: usize,
}

impl Pick {
    const fn new(mdh_format: bool) -> Pick {
        Pick { mdh_format, local: Counts::new(), placed: 0, headers: 0 }
    }

    fn add(&mut self, kind: Kind) {
        self.local.add(kind);
        self.placed += 1;
        self.headers += usize::from(kind.has_data());
    }
}

/// Messages of each kind waiting at the start of a flit, up to what one flit may carry.
fn waiting<S: Source>(src: &S, direction: Direction) -> Counts {
    let mut avail = Counts::new();
    for kind in Kind::ALL {
        if kind.downstream() != (direction == Direction::Downstream) {
            continue;
        }
        for i in 0..max_per_flit(kind) {
            if src.peek(kind, i).is_none() {
                break;
            }
            avail.add(kind);
        }
    }
    avail
}

/// What the unpacker hands over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A message without data.
    Msg(Msg),
    /// A data header with its data, once the data has arrived.
    Data(Msg, &'a Payload),
    /// An IDE MAC slot (H6).
    Mac([u8; 12]),
}

/// What [`Unpacker::unpack`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unpacked {
    /// A protocol flit, with its header: the credits it returns are for the caller (its Ak is
    /// the retry machine's, [`super::llr::Llr::handle_flit`]).
    Protocol(FlitHeader),
    /// An all-data flit.
    AllData,
}

/// Why a protocol flit is refused; nothing of it was delivered and the unpacker's state is
/// unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UnpackError {
    /// The flit header does not decode (a control flit, a reserved format code).
    Header(HeaderError),
    /// A slot format the direction reserves (G6 in H2D/M2S).
    ReservedFormat {
        /// The slot.
        slot: u8,
    },
    /// Data was due in this slot and its format is not G0.
    DataExpected {
        /// The slot.
        slot: u8,
    },
    /// A G0 (data) slot with no data due.
    UnexpectedData {
        /// The slot.
        slot: u8,
    },
    /// More messages of a kind than a flit may carry.
    TooMany {
        /// The kind.
        kind: Kind,
    },
    /// A slot format with several data-header positions while MDH is disabled, or several data
    /// headers in one flit spread over slots or not all 64-byte transfers without byte
    /// enables.
    Mdh,
    /// The header's Sz or BE is not allowed for the flit's data (Table 4-3).
    Shape {
        /// The data header's kind.
        kind: Kind,
    },
}

impl core::fmt::Display for UnpackError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UnpackError::Header(e) => write!(f, "{e}"),
            UnpackError::ReservedFormat { slot } => write!(f, "slot {slot} uses a reserved format"),
            UnpackError::DataExpected { slot } => write!(f, "slot {slot} is due data and is not G0"),
            UnpackError::UnexpectedData { slot } => write!(f, "slot {slot} is G0 with no data due"),
            UnpackError::TooMany { kind } => write!(f, "more {kind:?} messages than a flit may carry"),
            UnpackError::Mdh => f.write_str("several data headers break the MDH rules"),
            UnpackError::Shape { kind } => write!(f, "Sz or BE not allowed for {kind:?} data"),
        }
    }
}

impl core::error::Error for UnpackError {}

/// A data header waiting for its data.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    msg: Msg,
    payload: Payload,
    got: u8,
}

impl Waiting {
    fn needs(&self) -> usize {
        self.payload.shape().chunks().saturating_sub(usize::from(self.got))
    }
}

/// Headers that can wait for data: three partly received plus four new.
const WAITING: usize = 8;

/// Reads 68B flits back into messages, checking every slot against the header and the packing
/// rules.
#[derive(Clone, Debug)]
pub struct Unpacker {
    direction: Direction,
    mdh: bool,
    waiting: Deque<Waiting, WAITING>,
}

impl Unpacker {
    /// An unpacker for traffic in `direction`, with multiple data headers per slot (MDH)
    /// disabled: an MDH slot format is refused.
    pub const fn new(direction: Direction) -> Unpacker {
        Unpacker { direction, mdh: false, waiting: Deque::new() }
    }

    /// With `mdh` true MDH slot formats are accepted.
    pub const fn with_mdh(mut self, mdh: bool) -> Unpacker {
        self.mdh = mdh;
        self
    }

    /// Data chunks still expected.
    pub fn pending_chunks(&self) -> usize {
        self.waiting.iter().map(Waiting::needs).sum()
    }

    /// Whether the next flit is an all-data flit (more than three chunks expected).
    pub fn expects_all_data(&self) -> bool {
        self.pending_chunks() >= 4
    }

    /// Reads one flit (bytes 0–63, CRC already checked), handing each message to `sink` in
    /// flit order; data headers are handed over when their last chunk arrives.
    pub fn unpack(&mut self, flit: &[u8; BODY_LEN], mut sink: impl FnMut(Item<'_>)) -> Result<Unpacked, UnpackError> {
        let mut slots = [0u128; 4];
        for (s, c) in slots.iter_mut().zip(flit.chunks_exact(CHUNK)) {
            let mut b = [0u8; CHUNK];
            b.copy_from_slice(c);
            *s = u128::from_le_bytes(b);
        }
        if self.expects_all_data() {
            for s in slots {
                self.take_chunk(&s.to_le_bytes(), &mut sink);
            }
            return Ok(Unpacked::AllData);
        }
        let [b0, b1, b2, b3, ..] = *flit;
        let header = FlitHeader::parse([b0, b1, b2, b3]).map_err(UnpackError::Header)?;
        self.validate(&header, &slots)?;
        let shape = Shape { half: !header.sz, be: header.be };
        for (s, (slot, code)) in slots.iter().zip(header.slots).enumerate() {
            if s > 0 && self.pending_chunks() > 0 {
                self.take_chunk(&slot.to_le_bytes(), &mut sink);
                continue;
            }
            match slot::contents(self.direction, s == 0, code) {
                Some(Contents::Messages(positions)) => {
                    for pos in positions {
                        let Some(msg) = slot::get(*slot, pos) else { continue };
                        if pos.kind.has_data() {
                            let payload = Payload { half: shape.half, be: shape.be.then_some(0), ..Payload::default() };
                            // Capacity covers the worst case (validated above).
                            let _ = self.waiting.push_back(Waiting { msg, payload, got: 0 });
                        } else {
                            sink(Item::Msg(msg));
                        }
                    }
                }
                Some(Contents::Mac) => {
                    let mut mac = [0u8; 12];
                    mac.copy_from_slice(slot.to_le_bytes().get(4..).unwrap_or(&[0; 12]));
                    sink(Item::Mac(mac));
                }
                Some(Contents::Data) | None => {}
            }
        }
        Ok(Unpacked::Protocol(header))
    }

    /// Gives a chunk to the oldest header still waiting for data, handing the header over once
    /// its data is complete.
    fn take_chunk(&mut self, chunk: &[u8; CHUNK], sink: &mut impl FnMut(Item<'_>)) {
        if let Some(w) = self.waiting.iter_mut().find(|w| w.needs() > 0) {
            w.payload.set_chunk(usize::from(w.got), chunk);
            w.got += 1;
        }
        while let Some(w) = self.waiting.front() {
            if w.needs() > 0 {
                break;
            }
            if let Some(w) = self.waiting.pop_front() {
                sink(Item::Data(w.msg, &w.payload));
            }
        }
    }

    /// Checks a protocol flit whole before anything of it is delivered.
    fn validate(&self, header: &FlitHeader, slots: &[u128; 4]) -> Result<(), UnpackError> {
        let shape = Shape { half: !header.sz, be: header.be };
        let mut due = self.pending_chunks();
        let mut counts = Counts::default();
        let mut headers = 0usize;
        let mut header_slots = 0usize;
        let mut first: Option<Kind> = None;
        for (s, (slot, code)) in slots.iter().zip(header.slots).enumerate() {
            let index = s as u8;
            if s > 0 && due > 0 {
                if code != 0 {
                    return Err(UnpackError::DataExpected { slot: index });
                }
                due -= 1;
                continue;
            }
            match slot::contents(self.direction, s == 0, code) {
                None => return Err(UnpackError::ReservedFormat { slot: index }),
                Some(Contents::Data) => return Err(UnpackError::UnexpectedData { slot: index }),
                Some(Contents::Mac) => {}
                Some(Contents::Messages(positions)) => {
                    // An MDH format received while MDH is disabled is an error (§4.2.5).
                    if !self.mdh && slot::is_mdh(self.direction, s == 0, code) {
                        return Err(UnpackError::Mdh);
                    }
                    let before = headers;
                    for pos in positions {
                        // The Valid bit alone: the message is decoded once, on delivery.
                        if slot >> pos.at & 1 == 0 {
                            continue;
                        }
                        counts.add(pos.kind);
                        if counts.get(pos.kind) > max_per_flit(pos.kind) {
                            return Err(UnpackError::TooMany { kind: pos.kind });
                        }
                        if pos.kind.has_data() {
                            headers += 1;
                            first.get_or_insert(pos.kind);
                            due += shape.chunks();
                        }
                    }
                    if headers > before {
                        header_slots += 1;
                    }
                }
            }
        }
        if headers > 1 && (!self.mdh || header_slots > 1 || shape != Shape::default()) {
            return Err(UnpackError::Mdh);
        }
        if let Some(kind) = first {
            if !shape.allowed(kind) {
                return Err(UnpackError::Shape { kind });
            }
        }
        Ok(())
    }
}

/// A [`Source`] over fixed-capacity queues, one per message kind, each holding up to `N`
/// messages with their data `P`: the simplest way to feed a packer.
#[derive(Clone, Debug)]
pub struct Queues<const N: usize, P = Payload> {
    queues: [Deque<(Msg, Option<P>), N>; 12],
}

impl<const N: usize, P> Default for Queues<N, P> {
    fn default() -> Self {
        Queues { queues: core::array::from_fn(|_| Deque::new()) }
    }
}

impl<const N: usize, P> Queues<N, P> {
    /// Queues a message (with its data for a data header); gives it back when its queue is
    /// full.
    #[allow(clippy::result_large_err, reason = "the message comes back when its queue is full")]
    pub fn push(&mut self, msg: Msg, data: Option<P>) -> Result<(), (Msg, Option<P>)> {
        match self.queues.get_mut(msg.kind() as usize) {
            Some(q) => q.push_back((msg, data)),
            None => Err((msg, data)),
        }
    }

    /// Whether a message of `kind` would be queued now.
    pub fn has_room(&self, kind: Kind) -> bool {
        self.queues.get(kind as usize).is_some_and(|q| !q.is_full())
    }

    /// Messages waiting, of every kind.
    pub fn len(&self) -> usize {
        self.queues.iter().map(Deque::len).sum()
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<const N: usize, P> Source<P> for Queues<N, P> {
    fn peek(&self, kind: Kind, i: usize) -> Option<(&Msg, Option<&P>)> {
        let (m, data) = self.queues.get(kind as usize)?.iter().nth(i)?;
        Some((m, data.as_ref()))
    }

    fn pop(&mut self, kind: Kind) -> Option<(Msg, Option<P>)> {
        self.queues.get_mut(kind as usize)?.pop_front()
    }
}

#[cfg(test)]
mod tests;
