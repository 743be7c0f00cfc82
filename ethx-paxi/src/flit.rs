//! PAXI flits bit by bit: every flit kind of [`crate::paxi`] emitted into a caller's buffer and
//! parsed as a zero-copy view, at exactly the documented sizes ([`frame_bytes`], or
//! [`packed_frame_bytes`] for the packed AR×N and B×N form).
//!
//! The sizes, the 10-bit header and each channel's width are public ([`crate::paxi`]); where
//! each field sits inside a flit is not. *Project-defined*, in one place:
//!
//! * A flit is a run of **units**, each padded to a byte (the ×N form as quoted pads every unit
//!   but the last to 64 bytes): the first unit starts with the 10-bit header. Bits go most
//!   significant first; multi-bit fields most significant bit first.
//! * The **extra bit** each unit carries beyond its channel (the formulas' `+ 1`) is MORE: 1
//!   when another unit of the flit follows, 0 in the last — so a receiver finds the flit's end
//!   without a length field beyond the header.
//! * In each unit the control fields and MORE come first and are padded to a byte; the data
//!   (WDATA, RDATA; a whole number of bytes) follows byte-aligned, so [`WBeat::data`] and
//!   [`RBeat::data`] are slices of the received bytes. Padding before the data instead of after
//!   it keeps every unit's size exactly the formula's.
//! * Field order: AR and AW — ID, address, AxLEN, AxSIZE, AxBURST, AxLOCK, AxCACHE, AxPROT,
//!   AxQOS, AxREGION, (AWATOP when the widths carry atomics), USER; W — strobes (byte lane 0
//!   first, absent in an AW+W flit without WSTRB), WLAST, WUSER, then WDATA; R — RID, RRESP,
//!   RLAST, RUSER, then RDATA; B — BID, BRESP, BUSER. An AW+W unit 1 is the header and AW; a W
//!   beat per later unit. An R flit's first unit holds the header and the first beat.
//! * **APB** (no size or layout is public): a register request is PWRITE, PADDR (32), PWDATA
//!   (32), PSTRB (4), PPROT (3); a response PRDATA (32), PSLVERR; a message a 32-bit code and 32
//!   bits of data; each one unit.
//!
//! A reserved AxBURST or AWATOP code, a flit shorter than its size or a MORE bit that
//! contradicts the header's length is a typed [`FlitError`]; padding bits are sent as zero and
//! ignored.

use crate::axi::{AddrReq, Atop, Burst, Cache, Channel, Prot, Resp, Size, WriteResp};
use crate::paxi::{ChannelWidths, FlitKind, PaxiError, frame_bytes, packed_frame_bytes};

/// Why a flit cannot be emitted or parsed. Nothing was written: every field and the buffer's
/// size are checked before the first bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FlitError {
    /// The header or the widths: [`PaxiError`].
    Paxi(PaxiError),
    /// The flit ends before its size.
    Truncated,
    /// The output buffer is smaller than the flit.
    BufferTooSmall,
    /// A field does not fit its configured width.
    FieldTooWide {
        /// The field.
        field: &'static str,
    },
    /// Data or strobes not of the beats' size, WLAST not on the last beat only, an AW+W flit
    /// whose AxLEN is not its beat count, or a count of entries outside 1 to 16.
    BadShape,
    /// A reserved AxBURST or AWATOP code.
    Reserved {
        /// The field.
        field: &'static str,
    },
    /// A MORE bit says the flit ends elsewhere than its header's length.
    MoreMismatch,
}

impl From<PaxiError> for FlitError {
    fn from(e: PaxiError) -> Self {
        FlitError::Paxi(e)
    }
}

impl core::fmt::Display for FlitError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FlitError::Paxi(e) => write!(f, "{e}"),
            FlitError::Truncated => f.write_str("PAXI flit shorter than its size"),
            FlitError::BufferTooSmall => f.write_str("output buffer smaller than the flit"),
            FlitError::FieldTooWide { field } => write!(f, "{field} wider than configured"),
            FlitError::BadShape => f.write_str("data, strobes or entry count do not match the flit"),
            FlitError::Reserved { field } => write!(f, "reserved {field} code"),
            FlitError::MoreMismatch => f.write_str("a MORE bit contradicts the flit's length"),
        }
    }
}

impl core::error::Error for FlitError {}

/// An APB register access or message (project-defined layout, module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Apb {
    /// A register read or write request.
    Request {
        /// PWRITE.
        write: bool,
        /// PADDR.
        addr: u32,
        /// PWDATA.
        data: u32,
        /// PSTRB (4 bits).
        strobes: u8,
        /// PPROT (3 bits).
        prot: u8,
    },
    /// A register access's response.
    Response {
        /// PRDATA.
        data: u32,
        /// PSLVERR.
        error: bool,
    },
    /// A message (such as link-up).
    Message {
        /// Its code.
        code: u32,
        /// Its data.
        data: u32,
    },
}

/// MSB-first bit writer over a byte buffer.
struct Bits<'o> {
    out: &'o mut [u8],
    bit: usize,
}

impl Bits<'_> {
    fn put(&mut self, value: u64, width: u32) -> Result<(), FlitError> {
        for i in (0..width).rev() {
            let byte = self.out.get_mut(self.bit / 8).ok_or(FlitError::BufferTooSmall)?;
            let mask = 0x80u8 >> (self.bit % 8);
            if (value.checked_shr(i).unwrap_or(0)) & 1 != 0 {
                *byte |= mask;
            } else {
                *byte &= !mask;
            }
            self.bit += 1;
        }
        Ok(())
    }

    fn put_wide(&mut self, value: u128, width: u32) -> Result<(), FlitError> {
        if width > 64 {
            self.put((value >> 64) as u64, width - 64)?;
            self.put(value as u64, 64)
        } else {
            self.put(value as u64, width)
        }
    }

    /// Zero bits up to the next byte, then up to `unit_end` bits.
    fn pad_to(&mut self, unit_end: usize) -> Result<(), FlitError> {
        while self.bit < unit_end {
            self.put(0, 1)?;
        }
        Ok(())
    }

    fn bytes(&mut self, data: &[u8]) -> Result<(), FlitError> {
        let at = self.bit / 8;
        self.out.get_mut(at..at + data.len()).ok_or(FlitError::BufferTooSmall)?.copy_from_slice(data);
        self.bit += 8 * data.len();
        Ok(())
    }
}

/// MSB-first bit reader.
#[derive(Clone, Debug)]
struct Reader<'a> {
    bytes: &'a [u8],
    bit: usize,
}

impl<'a> Reader<'a> {
    fn get(&mut self, width: u32) -> Result<u64, FlitError> {
        let mut v = 0u64;
        for _ in 0..width {
            let byte = self.bytes.get(self.bit / 8).ok_or(FlitError::Truncated)?;
            v = v << 1 | u64::from(byte >> (7 - self.bit % 8) & 1);
            self.bit += 1;
        }
        Ok(v)
    }

    fn get_wide(&mut self, width: u32) -> Result<u128, FlitError> {
        if width > 64 {
            let hi = self.get(width - 64)?;
            Ok(u128::from(hi) << 64 | u128::from(self.get(64)?))
        } else {
            Ok(u128::from(self.get(width)?))
        }
    }

    fn skip_to(&mut self, bit: usize) -> Result<(), FlitError> {
        if bit > self.bytes.len() * 8 {
            return Err(FlitError::Truncated);
        }
        self.bit = self.bit.max(bit);
        Ok(())
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], FlitError> {
        let at = self.bit.div_ceil(8);
        let slice = self.bytes.get(at..at + n).ok_or(FlitError::Truncated)?;
        self.bit = 8 * (at + n);
        Ok(slice)
    }
}

const fn fits(value: u64, bits: u16) -> bool {
    bits >= 64 || value >> bits == 0
}

fn check(value: u64, bits: u16, field: &'static str) -> Result<(), FlitError> {
    if fits(value, bits) { Ok(()) } else { Err(FlitError::FieldTooWide { field }) }
}

/// Bits of the data bus in bytes.
fn bus_bytes(w: &ChannelWidths) -> usize {
    w.data as usize / 8
}

/// The end (in bits) of a unit starting at `start` with `bits` of content, padded to a byte or,
/// for the ×N form's non-last units, to 512 bits.
fn unit_end(start: usize, bits: usize, pad512: bool) -> usize {
    let len = if pad512 { bits.div_ceil(512) * 512 } else { bits.div_ceil(8) * 8 };
    start + len
}

/// Checks an AR or AW against the widths and its fields' bits (before anything is written).
fn check_addr_req(w: &ChannelWidths, r: &AddrReq) -> Result<(), FlitError> {
    check(u64::from(r.id), w.id, "id")?;
    check(r.addr, w.addr, "addr")?;
    check(r.user, w.user, "user")?;
    if r.qos > 15 || r.region > 15 || r.cache.bits() > 0xF || r.prot.bits() > 7 || !(1..=256).contains(&r.beats) {
        return Err(FlitError::FieldTooWide { field: "qos/region/cache/prot/beats" });
    }
    if r.atop != Atop::NonAtomic && !(r.channel == Channel::Write && w.atomics) {
        return Err(FlitError::FieldTooWide { field: "atop" });
    }
    Ok(())
}

fn put_addr_req(b: &mut Bits<'_>, w: &ChannelWidths, r: &AddrReq) -> Result<(), FlitError> {
    b.put(u64::from(r.id), u32::from(w.id))?;
    b.put(r.addr, u32::from(w.addr))?;
    b.put(u64::from(r.len_field()), 8)?;
    b.put(u64::from(r.size.bits()), 3)?;
    b.put(u64::from(r.burst.bits()), 2)?;
    b.put(u64::from(r.exclusive), 1)?;
    b.put(u64::from(r.cache.bits() & 0xF), 4)?;
    b.put(u64::from(r.prot.bits() & 7), 3)?;
    b.put(u64::from(r.qos), 4)?;
    b.put(u64::from(r.region), 4)?;
    if r.channel == Channel::Write && w.atomics {
        b.put(u64::from(r.atop.bits()), 6)?;
    }
    b.put(r.user, u32::from(w.user))
}

fn get_addr_req(rd: &mut Reader<'_>, w: &ChannelWidths, channel: Channel) -> Result<AddrReq, FlitError> {
    let id = rd.get(u32::from(w.id))? as u32;
    let addr = rd.get(u32::from(w.addr))?;
    let beats = rd.get(8)? as u16 + 1;
    let size = Size::from_bits(rd.get(3)? as u8).map_err(|_| FlitError::Reserved { field: "size" })?;
    let burst = Burst::from_bits(rd.get(2)? as u8).map_err(|_| FlitError::Reserved { field: "burst" })?;
    let exclusive = rd.get(1)? == 1;
    let cache = Cache::from_bits_retain(rd.get(4)? as u8);
    let prot = Prot::from_bits_retain(rd.get(3)? as u8);
    let qos = rd.get(4)? as u8;
    let region = rd.get(4)? as u8;
    let atop = if channel == Channel::Write && w.atomics {
        Atop::from_bits(rd.get(6)? as u8).map_err(|_| FlitError::Reserved { field: "atop" })?
    } else {
        Atop::NonAtomic
    };
    let user = rd.get(u32::from(w.user))?;
    Ok(AddrReq { channel, id, addr, beats, size, burst, exclusive, cache, prot, qos, region, atop, user })
}

/// One W beat of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WBeat<'a> {
    /// WDATA: one bus word (data width / 8 bytes).
    pub data: &'a [u8],
    /// WSTRB, bit k for byte lane k; every lane in a flit without strobes.
    pub strobes: u128,
    /// WLAST.
    pub last: bool,
    /// WUSER.
    pub user: u64,
}

/// One R beat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RBeat<'a> {
    /// RID.
    pub id: u32,
    /// RRESP.
    pub resp: Resp,
    /// RLAST.
    pub last: bool,
    /// RUSER.
    pub user: u64,
    /// RDATA: one bus word.
    pub data: &'a [u8],
}

/// WSTRB as sent: byte lane 0's bit first.
fn lanes_first(strobes: u128, lanes: u32) -> u128 {
    strobes.reverse_bits().checked_shr(128 - lanes).unwrap_or(0)
}

fn all_lanes(w: &ChannelWidths) -> u128 {
    let lanes = bus_bytes(w) as u32;
    if lanes >= 128 { u128::MAX } else { (1u128 << lanes) - 1 }
}

/// Writes an AW+W flit: `req` (a write) and its `beats` (as many as `req.beats`, 1 to 63).
/// Without WSTRB (encode 01) when every beat's strobes are all set, with them otherwise.
/// Returns the flit's length, [`frame_bytes`] of its kind.
pub fn emit_write(w: &ChannelWidths, req: &AddrReq, beats: &[WBeat<'_>], out: &mut [u8]) -> Result<usize, FlitError> {
    w.validate()?;
    let bus = bus_bytes(w);
    let last = beats.len().wrapping_sub(1);
    if req.channel != Channel::Write
        || beats.len() != usize::from(req.beats)
        || beats
            .iter()
            .enumerate()
            .any(|(k, b)| b.data.len() != bus || b.strobes & !all_lanes(w) != 0 || b.last != (k == last))
    {
        return Err(FlitError::BadShape);
    }
    check_addr_req(w, req)?;
    for beat in beats {
        check(beat.user, w.user, "user")?;
    }
    let full = beats.iter().all(|b| b.strobes == all_lanes(w));
    let n = req.beats;
    let kind = if full { FlitKind::WriteFull { beats: n } } else { FlitKind::WriteWithStrobes { beats: n } };
    let size = frame_bytes(w, kind).ok_or(PaxiError::BadLength { beats: n })? as usize;
    let out = out.get_mut(..size).ok_or(FlitError::BufferTooSmall)?;
    let mut b = Bits { out, bit: 0 };
    b.put(u64::from(kind.header()?), 10)?;
    put_addr_req(&mut b, w, req)?;
    b.put(1, 1)?; // MORE: the beats follow
    b.pad_to(unit_end(0, 10 + w.aw_bits() as usize + 1, false))?;
    for (k, beat) in beats.iter().enumerate() {
        let start = b.bit;
        if !full {
            let lanes = u32::from(w.data / 8);
            b.put_wide(lanes_first(beat.strobes, lanes), lanes)?;
        }
        b.put(u64::from(k + 1 == beats.len()), 1)?; // WLAST
        b.put(beat.user, u32::from(w.user))?;
        b.put(u64::from(k + 1 < beats.len()), 1)?; // MORE
        let control = w.w_bits(!full) as usize - usize::from(w.data) + 1;
        b.pad_to(unit_end(start, control, false))?;
        b.bytes(beat.data)?;
    }
    Ok(size)
}

/// Writes an R flit of `beats` (1 to 63; RLAST as each beat says). Returns its length.
pub fn emit_read_data(w: &ChannelWidths, beats: &[RBeat<'_>], out: &mut [u8]) -> Result<usize, FlitError> {
    w.validate()?;
    let n = u16::try_from(beats.len()).map_err(|_| FlitError::BadShape)?;
    if beats.iter().any(|b| b.data.len() != bus_bytes(w)) {
        return Err(FlitError::BadShape);
    }
    for beat in beats {
        check(u64::from(beat.id), w.id, "id")?;
        check(beat.user, w.user, "user")?;
    }
    let kind = FlitKind::ReadData { beats: n };
    let size = frame_bytes(w, kind).ok_or(PaxiError::BadLength { beats: n })? as usize;
    let out = out.get_mut(..size).ok_or(FlitError::BufferTooSmall)?;
    let mut b = Bits { out, bit: 0 };
    b.put(u64::from(kind.header()?), 10)?;
    for (k, beat) in beats.iter().enumerate() {
        let start = b.bit;
        b.put(u64::from(beat.id), u32::from(w.id))?;
        b.put(u64::from(beat.resp.bits()), 2)?;
        b.put(u64::from(beat.last), 1)?;
        b.put(beat.user, u32::from(w.user))?;
        b.put(u64::from(k + 1 < beats.len()), 1)?;
        let header = if k == 0 { 10 } else { 0 };
        let control = header + w.r_bits() as usize - usize::from(w.data) + 1;
        b.pad_to(unit_end(start - header, control, false))?;
        b.bytes(beat.data)?;
    }
    Ok(size)
}

/// Writes an AR×N flit of `reads` (1 to 16), the ×N padding as quoted unless `packed`.
pub fn emit_reads(w: &ChannelWidths, reads: &[AddrReq], packed: bool, out: &mut [u8]) -> Result<usize, FlitError> {
    if reads.iter().any(|r| r.channel != Channel::Read) {
        return Err(FlitError::BadShape);
    }
    for r in reads {
        check_addr_req(w, r)?;
    }
    emit_entries(w, reads.len(), packed, out, FlitKind::Reads { count: reads.len() as u16 }, w.ar_bits(), |b, i| {
        reads.get(i).map_or(Err(FlitError::BadShape), |r| put_addr_req(b, w, r))
    })
}

/// Writes a B×N flit of `resps` (1 to 16), the ×N padding as quoted unless `packed`.
pub fn emit_write_responses(
    w: &ChannelWidths,
    resps: &[WriteResp],
    packed: bool,
    out: &mut [u8],
) -> Result<usize, FlitError> {
    for r in resps {
        check(u64::from(r.id), w.id, "id")?;
        check(r.user, w.user, "user")?;
    }
    let kind = FlitKind::WriteResponses { count: resps.len() as u16 };
    emit_entries(w, resps.len(), packed, out, kind, w.b_bits(), |b, i| {
        let r = resps.get(i).ok_or(FlitError::BadShape)?;
        b.put(u64::from(r.id), u32::from(w.id))?;
        b.put(u64::from(r.resp.bits()), 2)?;
        b.put(r.user, u32::from(w.user))
    })
}

fn emit_entries(
    w: &ChannelWidths,
    count: usize,
    packed: bool,
    out: &mut [u8],
    kind: FlitKind,
    entry_bits: u32,
    mut put: impl FnMut(&mut Bits<'_>, usize) -> Result<(), FlitError>,
) -> Result<usize, FlitError> {
    w.validate()?;
    if !(1..=16).contains(&count) {
        return Err(FlitError::BadShape);
    }
    let size = if packed { packed_frame_bytes(w, kind) } else { frame_bytes(w, kind) };
    let size = size.ok_or(FlitError::BadShape)? as usize;
    let out = out.get_mut(..size).ok_or(FlitError::BufferTooSmall)?;
    let mut b = Bits { out, bit: 0 };
    b.put(u64::from(kind.header()?), 10)?;
    for i in 0..count {
        let header = if i == 0 { 10 } else { 0 };
        let start = b.bit - header;
        put(&mut b, i)?;
        b.put(u64::from(i + 1 < count), 1)?;
        let pad512 = !packed && count > 1 && i + 1 < count;
        b.pad_to(unit_end(start, header + entry_bits as usize + 1, pad512))?;
    }
    Ok(size)
}

/// Writes an APB flit (one unit). Returns its length.
pub fn emit_apb(apb: &Apb, out: &mut [u8]) -> Result<usize, FlitError> {
    let (kind, bits) = apb_shape(apb);
    let size = (10 + bits + 1).div_ceil(8);
    if let Apb::Request { strobes, prot, .. } = *apb {
        if strobes > 0xF || prot > 7 {
            return Err(FlitError::FieldTooWide { field: "PSTRB/PPROT" });
        }
    }
    let out = out.get_mut(..size).ok_or(FlitError::BufferTooSmall)?;
    let mut b = Bits { out, bit: 0 };
    b.put(u64::from(kind.header()?), 10)?;
    match *apb {
        Apb::Request { write, addr, data, strobes, prot } => {
            b.put(u64::from(write), 1)?;
            b.put(u64::from(addr), 32)?;
            b.put(u64::from(data), 32)?;
            b.put(u64::from(strobes), 4)?;
            b.put(u64::from(prot), 3)?;
        }
        Apb::Response { data, error } => {
            b.put(u64::from(data), 32)?;
            b.put(u64::from(error), 1)?;
        }
        Apb::Message { code, data } => {
            b.put(u64::from(code), 32)?;
            b.put(u64::from(data), 32)?;
        }
    }
    b.put(0, 1)?;
    b.pad_to(size * 8)?;
    Ok(size)
}

fn apb_shape(apb: &Apb) -> (FlitKind, usize) {
    let kind = match apb {
        Apb::Request { .. } => FlitKind::ApbRegister { request: true },
        Apb::Response { .. } => FlitKind::ApbRegister { request: false },
        Apb::Message { .. } => FlitKind::ApbMessage,
    };
    (kind, apb_bits(kind))
}

/// The content bits of an APB flit of `kind` (module doc); 0 for other kinds.
const fn apb_bits(kind: FlitKind) -> usize {
    match kind {
        FlitKind::ApbRegister { request: true } => 1 + 32 + 32 + 4 + 3,
        FlitKind::ApbRegister { request: false } => 32 + 1,
        FlitKind::ApbMessage => 64,
        _ => 0,
    }
}

/// A parsed flit: a view of the received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flit<'a> {
    widths: ChannelWidths,
    kind: FlitKind,
    packed: bool,
    bytes: &'a [u8],
}

impl<'a> Flit<'a> {
    /// Parses the flit at the front of `bytes` (AR×N and B×N in the quoted form, or `packed`)
    /// and checks it whole; returns it and the bytes after it.
    pub fn parse(w: &ChannelWidths, packed: bool, bytes: &'a [u8]) -> Result<(Self, &'a [u8]), FlitError> {
        w.validate()?;
        let mut rd = Reader { bytes, bit: 0 };
        let kind = FlitKind::from_header(rd.get(10)? as u16)?;
        let size = match kind {
            FlitKind::ApbRegister { .. } | FlitKind::ApbMessage => (10 + apb_bits(kind) + 1).div_ceil(8),
            _ if packed => packed_frame_bytes(w, kind).ok_or(FlitError::BadShape)? as usize,
            _ => frame_bytes(w, kind).ok_or(FlitError::BadShape)? as usize,
        };
        let (flit, rest) = bytes.split_at_checked(size).ok_or(FlitError::Truncated)?;
        let flit = Flit { widths: *w, kind, packed, bytes: flit };
        flit.check()?;
        Ok((flit, rest))
    }

    /// The flit's kind.
    pub fn kind(&self) -> FlitKind {
        self.kind
    }

    /// The flit's bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Walks every unit once (what [`Flit::parse`] checks).
    fn check(&self) -> Result<(), FlitError> {
        match self.kind {
            FlitKind::WriteWithStrobes { .. } | FlitKind::WriteFull { .. } => {
                let (_, beats) = self.write()?;
                beats.into_iter().try_for_each(|b| b.map(|_| ()))
            }
            FlitKind::ReadData { .. } => self.read_data().try_for_each(|b| b.map(|_| ())),
            FlitKind::Reads { .. } => self.reads().try_for_each(|r| r.map(|_| ())),
            FlitKind::WriteResponses { .. } => self.write_responses().try_for_each(|r| r.map(|_| ())),
            FlitKind::ApbRegister { .. } | FlitKind::ApbMessage => self.apb().map(|_| ()),
        }
    }

    /// An AW+W flit's request and beats.
    pub fn write(&self) -> Result<(AddrReq, WBeats<'a>), FlitError> {
        let (beats, strobes) = match self.kind {
            FlitKind::WriteWithStrobes { beats } => (beats, true),
            FlitKind::WriteFull { beats } => (beats, false),
            _ => return Err(FlitError::BadShape),
        };
        let w = &self.widths;
        let mut rd = Reader { bytes: self.bytes, bit: 10 };
        let req = get_addr_req(&mut rd, w, Channel::Write)?;
        if req.beats != beats {
            return Err(FlitError::BadShape);
        }
        if rd.get(1)? != 1 {
            return Err(FlitError::MoreMismatch);
        }
        rd.skip_to(unit_end(0, 10 + w.aw_bits() as usize + 1, false))?;
        Ok((req, WBeats { widths: *w, rd, left: beats, strobes }))
    }

    /// An R flit's beats.
    pub fn read_data(&self) -> RBeats<'a> {
        let left = match self.kind {
            FlitKind::ReadData { beats } => beats,
            _ => 0,
        };
        RBeats { widths: self.widths, rd: Reader { bytes: self.bytes, bit: 10 }, left, first: true }
    }

    /// An AR×N flit's requests.
    pub fn reads(&self) -> Entries<'a, AddrReq> {
        let count = match self.kind {
            FlitKind::Reads { count } => count,
            _ => 0,
        };
        self.entries(count, self.widths.ar_bits(), |rd, w| get_addr_req(rd, w, Channel::Read))
    }

    /// A B×N flit's responses.
    pub fn write_responses(&self) -> Entries<'a, WriteResp> {
        let count = match self.kind {
            FlitKind::WriteResponses { count } => count,
            _ => 0,
        };
        self.entries(count, self.widths.b_bits(), |rd, w| {
            let id = rd.get(u32::from(w.id))? as u32;
            let resp = Resp::from_bits(rd.get(2)? as u8);
            let user = rd.get(u32::from(w.user))?;
            Ok(WriteResp { id, resp, user })
        })
    }

    fn entries<T>(
        &self,
        count: u16,
        entry_bits: u32,
        get: fn(&mut Reader<'a>, &ChannelWidths) -> Result<T, FlitError>,
    ) -> Entries<'a, T> {
        Entries {
            widths: self.widths,
            rd: Reader { bytes: self.bytes, bit: 10 },
            index: 0,
            count,
            entry_bits,
            packed: self.packed,
            get,
        }
    }

    /// An APB flit's content.
    pub fn apb(&self) -> Result<Apb, FlitError> {
        let mut rd = Reader { bytes: self.bytes, bit: 10 };
        let apb = match self.kind {
            FlitKind::ApbRegister { request: true } => Apb::Request {
                write: rd.get(1)? == 1,
                addr: rd.get(32)? as u32,
                data: rd.get(32)? as u32,
                strobes: rd.get(4)? as u8,
                prot: rd.get(3)? as u8,
            },
            FlitKind::ApbRegister { request: false } => {
                Apb::Response { data: rd.get(32)? as u32, error: rd.get(1)? == 1 }
            }
            FlitKind::ApbMessage => Apb::Message { code: rd.get(32)? as u32, data: rd.get(32)? as u32 },
            _ => return Err(FlitError::BadShape),
        };
        if rd.get(1)? != 0 {
            return Err(FlitError::MoreMismatch);
        }
        Ok(apb)
    }
}

/// The W beats of an AW+W flit, in order.
#[derive(Clone, Debug)]
pub struct WBeats<'a> {
    widths: ChannelWidths,
    rd: Reader<'a>,
    left: u16,
    strobes: bool,
}

impl<'a> Iterator for WBeats<'a> {
    type Item = Result<WBeat<'a>, FlitError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let w = self.widths;
        let beat = (|| {
            let start = self.rd.bit;
            let lanes = u32::from(w.data / 8);
            let strobes = if self.strobes { lanes_first(self.rd.get_wide(lanes)?, lanes) } else { all_lanes(&w) };
            let last = self.rd.get(1)? == 1;
            let user = self.rd.get(u32::from(w.user))?;
            if (self.rd.get(1)? == 1) != (self.left > 0) || last != (self.left == 0) {
                return Err(FlitError::MoreMismatch);
            }
            let control = w.w_bits(self.strobes) as usize - usize::from(w.data) + 1;
            self.rd.skip_to(unit_end(start, control, false))?;
            let data = self.rd.bytes(bus_bytes(&w))?;
            Ok(WBeat { data, strobes, last, user })
        })();
        if beat.is_err() {
            self.left = 0;
        }
        Some(beat)
    }
}

/// The beats of an R flit, in order.
#[derive(Clone, Debug)]
pub struct RBeats<'a> {
    widths: ChannelWidths,
    rd: Reader<'a>,
    left: u16,
    first: bool,
}

impl<'a> Iterator for RBeats<'a> {
    type Item = Result<RBeat<'a>, FlitError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let w = self.widths;
        let header = if self.first { 10 } else { 0 };
        self.first = false;
        let beat = (|| {
            let start = self.rd.bit - header;
            let id = self.rd.get(u32::from(w.id))? as u32;
            let resp = Resp::from_bits(self.rd.get(2)? as u8);
            let last = self.rd.get(1)? == 1;
            let user = self.rd.get(u32::from(w.user))?;
            if (self.rd.get(1)? == 1) != (self.left > 0) {
                return Err(FlitError::MoreMismatch);
            }
            let control = header + w.r_bits() as usize - usize::from(w.data) + 1;
            self.rd.skip_to(unit_end(start, control, false))?;
            let data = self.rd.bytes(bus_bytes(&w))?;
            Ok(RBeat { id, resp, last, user, data })
        })();
        if beat.is_err() {
            self.left = 0;
        }
        Some(beat)
    }
}

/// The entries of an AR×N or B×N flit, in order.
#[derive(Clone, Debug)]
pub struct Entries<'a, T> {
    widths: ChannelWidths,
    rd: Reader<'a>,
    index: u16,
    count: u16,
    entry_bits: u32,
    packed: bool,
    get: fn(&mut Reader<'a>, &ChannelWidths) -> Result<T, FlitError>,
}

impl<T> Iterator for Entries<'_, T> {
    type Item = Result<T, FlitError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.index >= self.count {
            return None;
        }
        let (i, count) = (self.index, self.count);
        self.index += 1;
        let w = self.widths;
        let entry = (|| {
            let header = if i == 0 { 10 } else { 0 };
            let start = self.rd.bit - header;
            let value = (self.get)(&mut self.rd, &w)?;
            if (self.rd.get(1)? == 1) != (i + 1 < count) {
                return Err(FlitError::MoreMismatch);
            }
            let pad512 = !self.packed && count > 1 && i + 1 < count;
            self.rd.skip_to(unit_end(start, header + self.entry_bits as usize + 1, pad512))?;
            Ok(value)
        })();
        if entry.is_err() {
            self.index = self.count;
        }
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: ChannelWidths = ChannelWidths::EXAMPLE;

    fn size(bytes: u16) -> Size {
        Size::from_bytes(bytes).unwrap()
    }

    #[test]
    fn ar_by_hand() {
        // AR×1, EXAMPLE widths: header 00 10 000001, ID 8, address 64, then LEN..REGION 29, USER
        // 16, MORE 0: 128 bits, 16 bytes.
        let mut r = AddrReq::incr(Channel::Read, 0x0123_4567_89AB_CDEF, 2, size(64));
        r.id = 0xA5;
        let mut out = [0u8; 16];
        assert_eq!(emit_reads(&W, &[r], false, &mut out), Ok(16));
        // 0b0010_0000_01 then 0xA5: bits 10..18.
        assert_eq!(out[0], 0b0010_0000);
        assert_eq!(out[1], 0b01_101001);
        assert_eq!(out[2] >> 6, 0b01);
        let (flit, rest) = Flit::parse(&W, false, &out).unwrap();
        assert!(rest.is_empty());
        assert_eq!(flit.reads().map(Result::unwrap).collect::<std::vec::Vec<_>>(), [r]);
    }

    #[test]
    fn sizes_are_the_documented_ones() {
        let reads = [AddrReq::incr(Channel::Read, 64, 1, size(64)); 16];
        let mut buf = [0u8; 2048];
        assert_eq!(emit_reads(&W, &reads, false, &mut buf), Ok(975));
        assert_eq!(emit_reads(&W, &reads, true, &mut buf), Ok(241));
        let b = [WriteResp { id: 1, resp: Resp::SlvErr, user: 2 }; 16];
        assert_eq!(emit_write_responses(&W, &b, false, &mut buf), Ok(964));
        assert_eq!(emit_write_responses(&W, &b, true, &mut buf), Ok(65));
        assert_eq!(emit_write_responses(&W, &b[..1], false, &mut buf), Ok(5));
        // One 512-bit W beat: 75 bytes with strobes, 67 without (the documentation's 11 %).
        let data = [7u8; 64];
        let req = AddrReq::incr(Channel::Write, 0, 1, size(64));
        let full = WBeat { data: &data, strobes: u64::MAX as u128, last: true, user: 0 };
        let n = emit_write(&W, &req, &[full], &mut buf).unwrap();
        assert_eq!(n as u32, frame_bytes(&W, FlitKind::WriteFull { beats: 1 }).unwrap());
        let part = WBeat { strobes: 0xFF, ..full };
        let m = emit_write(&W, &req, &[part], &mut buf).unwrap();
        assert_eq!(m - n, 8);
        // The W unit starts at byte 16 (header + AW + MORE = 128 bits), byte lane 0's strobe first.
        assert_eq!(buf[16..24], [0xFF, 0, 0, 0, 0, 0, 0, 0]);
        // An AxLEN that is not the header's beat count is refused on receive.
        let mut two = buf;
        two[11] |= 1 << 6; // AxLEN's low bit: bits 82..90, bit 89 is byte 11's bit 6
        assert_eq!(Flit::parse(&W, false, &two[..m]).unwrap_err(), FlitError::BadShape);
        // WLAST where it is not the last beat.
        let early = WBeat { last: true, ..full };
        let req2 = AddrReq { beats: 2, ..req };
        assert_eq!(emit_write(&W, &req2, &[early, full], &mut buf), Err(FlitError::BadShape));
        assert_eq!(emit_write(&W, &req, &[part, part], &mut buf), Err(FlitError::BadShape));
        assert_eq!(emit_reads(&W, &[], false, &mut buf), Err(FlitError::BadShape));
        assert_eq!(emit_reads(&W, &[reads[0]; 17], false, &mut buf), Err(FlitError::BadShape));
    }

    #[test]
    fn bad_flits_are_typed_errors() {
        let mut buf = [0u8; 64];
        let r = AddrReq::incr(Channel::Read, 64, 1, size(64));
        let n = emit_reads(&W, &[r], false, &mut buf).unwrap();
        assert_eq!(Flit::parse(&W, false, &buf[..n - 1]).unwrap_err(), FlitError::Truncated);
        // B×1: 10 + 26 + 1 = 37 bits in 5 bytes; the 3 padding bits are ignored.
        let mut b = [0u8; 5];
        emit_write_responses(&W, &[WriteResp { id: 3, resp: Resp::Okay, user: 0 }], false, &mut b).unwrap();
        b[4] |= 0b111;
        assert!(Flit::parse(&W, false, &b).is_ok());
        // MORE set in the only entry: bit 10 + 117 = 127, the last bit of byte 15.
        let mut bad = buf;
        bad[15] |= 1;
        assert_eq!(Flit::parse(&W, false, &bad[..n]).unwrap_err(), FlitError::MoreMismatch);
        // AR×17 and type 11 in the header.
        assert_eq!(
            Flit::parse(&W, false, &[0b0010_0100, 0b0100_0000]).unwrap_err(),
            FlitError::Paxi(PaxiError::BadCount { count: 17 })
        );
        assert_eq!(Flit::parse(&W, false, &[0xC0, 0]).unwrap_err(), FlitError::Paxi(PaxiError::ReservedType));
        // AxBURST 11.
        let mut burst = buf;
        let bit = 10 + 8 + 64 + 8 + 3; // AxBURST's first bit
        burst[bit / 8] |= 0x80 >> (bit % 8);
        burst[(bit + 1) / 8] |= 0x80 >> ((bit + 1) % 8);
        assert_eq!(Flit::parse(&W, false, &burst[..n]).unwrap_err(), FlitError::Reserved { field: "burst" });
    }

    #[test]
    fn apb_round_trips() {
        let mut buf = [0u8; 16];
        // Sizes: ⌈10 + 72 + 1⌉₈, ⌈10 + 33 + 1⌉₈, ⌈10 + 64 + 1⌉₈ bits.
        for (apb, size) in [
            (Apb::Request { write: true, addr: 0x44, data: 0xDEAD_BEEF, strobes: 0xF, prot: 2 }, 11),
            (Apb::Response { data: 7, error: true }, 6),
            (Apb::Message { code: 1, data: 0x8000_0001 }, 10),
        ] {
            let n = emit_apb(&apb, &mut buf).unwrap();
            assert_eq!(n, size);
            // The header's first bits: type 10, and the REQ bit of a register access.
            assert_eq!(buf[0] >> 6, 0b10);
            let (flit, _) = Flit::parse(&W, false, &buf[..n]).unwrap();
            assert_eq!(flit.apb(), Ok(apb));
        }
    }

    fn arb_widths() -> impl Strategy<Value = ChannelWidths> {
        (0..=32u16, 12..=64u16, 3..=10u32, 0..=64u16, any::<bool>())
            .prop_map(|(id, addr, data, user, atomics)| ChannelWidths { id, addr, data: 1 << data, user, atomics })
    }

    fn mask(bits: u16) -> u64 {
        if bits >= 64 { u64::MAX } else { (1 << bits) - 1 }
    }

    proptest! {
        /// Every flit kind round-trips at its documented size, for any widths.
        #[test]
        fn flits_round_trip(w in arb_widths(), seed in any::<[u64; 4]>(), n in 1..=16usize, packed in any::<bool>()) {
            let bus = usize::from(w.data / 8);
            let data: std::vec::Vec<u8> = (0..bus * 16).map(|i| (i as u64 ^ seed[0]) as u8).collect();
            let mut buf = std::vec![0u8; 64 * 1024];
            let reads: std::vec::Vec<AddrReq> = (0..n)
                .map(|i| AddrReq {
                    id: (seed[1] >> i) as u32 & mask(w.id) as u32,
                    user: seed[2].rotate_left(i as u32) & mask(w.user),
                    qos: (i % 16) as u8,
                    ..AddrReq::incr(Channel::Read, seed[3].rotate_left(i as u32) & mask(w.addr), (i + 1) as u16, Size::ONE_BYTE)
                })
                .collect();
            let len = emit_reads(&w, &reads, packed, &mut buf).unwrap();
            let kind = FlitKind::Reads { count: n as u16 };
            let want = if packed { packed_frame_bytes(&w, kind) } else { frame_bytes(&w, kind) };
            prop_assert_eq!(Some(len as u32), want);
            let (flit, _) = Flit::parse(&w, packed, &buf[..len]).unwrap();
            prop_assert_eq!(flit.reads().map(Result::unwrap).collect::<std::vec::Vec<_>>(), reads.clone());

            let resps: std::vec::Vec<WriteResp> = reads.iter().map(|r| WriteResp { id: r.id, resp: Resp::from_bits(r.qos), user: r.user }).collect();
            let len = emit_write_responses(&w, &resps, packed, &mut buf).unwrap();
            let (flit, _) = Flit::parse(&w, packed, &buf[..len]).unwrap();
            prop_assert_eq!(flit.write_responses().map(Result::unwrap).collect::<std::vec::Vec<_>>(), resps);

            let mut req = AddrReq { channel: Channel::Write, beats: n as u16, ..reads[0] };
            if w.atomics {
                req.atop = Atop::Swap;
            }
            let all = all_lanes(&w);
            let beats: std::vec::Vec<WBeat<'_>> = (0..n)
                .map(|k| WBeat {
                    data: &data[k * bus..(k + 1) * bus],
                    strobes: if seed[0] & 1 == 0 { all } else { (u128::from(seed[1]) << k) & all },
                    last: k + 1 == n,
                    user: seed[3] >> k & mask(w.user),
                })
                .collect();
            let len = emit_write(&w, &req, &beats, &mut buf).unwrap();
            let (flit, _) = Flit::parse(&w, packed, &buf[..len]).unwrap();
            prop_assert_eq!(Some(len as u32), frame_bytes(&w, flit.kind()));
            let (back, got) = flit.write().unwrap();
            prop_assert_eq!(back, req);
            prop_assert_eq!(got.map(Result::unwrap).collect::<std::vec::Vec<_>>(), beats);

            let rbeats: std::vec::Vec<RBeat<'_>> = (0..n)
                .map(|k| RBeat { id: reads[k].id, resp: Resp::from_bits(k as u8), last: k + 1 == n, user: reads[k].user, data: &data[k * bus..(k + 1) * bus] })
                .collect();
            let len = emit_read_data(&w, &rbeats, &mut buf).unwrap();
            prop_assert_eq!(Some(len as u32), frame_bytes(&w, FlitKind::ReadData { beats: n as u16 }));
            let (flit, _) = Flit::parse(&w, packed, &buf[..len]).unwrap();
            prop_assert_eq!(flit.read_data().map(Result::unwrap).collect::<std::vec::Vec<_>>(), rbeats);
        }
    }
}
