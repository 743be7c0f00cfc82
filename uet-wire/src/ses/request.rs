//! SES requests: the common first 12 bytes (UE 1.0 §3.4), the standard request (44 bytes),
//! and the medium (32 bytes) and small (20 bytes) requests.
//!
//! Common: `rsvd 2 | opcode 6` ‖ `version 2 | DC | IE | REL | HD | EOM | SOM` ‖ message id
//! (standard) or `rsvd 2 | request length 14` (small, medium) ‖ RI generation 8 ‖ JobID 24 ‖
//! `rsvd 4 | PIDonFEP 12` ‖ `rsvd 4 | resource index 12`.
//!
//! Standard, from byte 12: buffer offset 64 ‖ initiator 32 ‖ match bits / memory key 64 ‖ (SOM = 1:
//! header data 64 | SOM = 0: `rsvd 18 | payload length 14` ‖ message offset 32) ‖ request
//! length 32 ‖ extension. For the deferrable opcodes the buffer offset (DEFERRABLE_SEND/TSEND) or
//! the match bits (DEFERRABLE_RTR) carry the restart token: initiator token (high 32) ‖ target
//! token (low 32); see [`StandardRequest::restart_token`].
//!
//! Medium, from byte 12: header data (HD = 1) or buffer offset (HD = 0) 64 ‖ initiator 32 ‖ match
//! bits 64. Small, from byte 12: buffer offset 64; its HD bit is reserved.
//!
//! Receive policy: reserved bits (above the opcode, PIDonFEP and resource index, a length, and the
//! small request's HD) are ignored and sent as zero; [`SesHeader::check_reserved`] reports them.
//! The version must be 0.
//!
//! [`SesHeader::check_reserved`]: super::SesHeader::check_reserved

use super::{Extension, Opcode, check_bits, check_len14, check_len14_reserved, len14};
use crate::error::{Error, reserved_zero};
use crate::pds::{NextHeader, defmt_bits, view, write};
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

bitflags! {
    /// SES request flags (byte 1, below the version).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct SesFlags: u8 {
        /// Delivery complete: complete at the initiator only once delivered to the target buffer.
        const DC = 0x20;
        /// Initiator error.
        const IE = 0x10;
        /// Relative addressing (JobID-relative resource index); absolute when clear.
        const REL = 0x08;
        /// Header data present.
        const HD = 0x04;
        /// End of message.
        const EOM = 0x02;
        /// Start of message.
        const SOM = 0x01;
    }
}
defmt_bits!(SesFlags);

/// The raw common 12 bytes.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CommonRaw {
    /// Reserved ‖ opcode.
    pub opcode: u8,
    /// Version ‖ flags.
    pub flags: u8,
    /// Message id, or reserved ‖ request length.
    pub word2: U16,
    /// RI generation ‖ JobID (24 bits): one word, so the JobID is read with one load.
    pub generation_job: U32,
    /// Reserved ‖ PIDonFEP.
    pub pid_on_fep: U16,
    /// Reserved ‖ resource index.
    pub resource_index: U16,
}

/// The fields every SES request starts with (except bytes 2–3, which each format owns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RequestCommon {
    /// Operation.
    pub opcode: Opcode,
    /// DC, IE, REL, HD, EOM, SOM.
    pub flags: SesFlags,
    /// Resource-index generation.
    pub ri_generation: u8,
    /// JobID (24 bits): selects and authorises the job.
    pub job_id: u32,
    /// Process on the fabric endpoint (12 bits).
    pub pid_on_fep: u16,
    /// Resource index (12 bits): the receive context.
    pub resource_index: u16,
}

impl RequestCommon {
    /// Length of the common part.
    pub const LEN: usize = 12;

    #[inline]
    fn parse<'a>(bytes: &'a [u8], field: &'static str) -> Result<(Self, u16, &'a [u8]), Error> {
        let (raw, rest) = view::<CommonRaw>(bytes, field)?;
        Self::check(raw)?;
        Ok((Self::decode(raw), raw.word2.get(), rest))
    }

    /// Checks the common bytes: the version and the opcode at once on the hot path; only a
    /// header that fails goes through [`RequestCommon::check_each`], which names the field.
    /// Reserved bits are not looked at.
    #[inline(always)]
    fn check(raw: &CommonRaw) -> Result<(), Error> {
        if raw.flags >> 6 == 0 && Opcode::is_valid(raw.opcode & 0x3F) { Ok(()) } else { Self::check_each(raw) }
    }

    /// [`RequestCommon::check`] one field at a time, in wire order.
    #[cold]
    fn check_each(raw: &CommonRaw) -> Result<(), Error> {
        let version = raw.flags >> 6;
        if version != 0 {
            return Err(Error::BadValue { field: "SES version", value: u64::from(version) });
        }
        Opcode::try_from(raw.opcode & 0x3F).map(drop)
    }

    /// The strict check of the common bytes' reserved bits, in wire order.
    fn check_reserved(raw: &CommonRaw) -> Result<(), Error> {
        reserved_zero(u64::from(raw.opcode & 0xC0), "SES opcode reserved bits")?;
        reserved_zero(u64::from(raw.pid_on_fep.get() & 0xF000), "SES PIDonFEP reserved bits")?;
        reserved_zero(u64::from(raw.resource_index.get() & 0xF000), "SES resource index reserved bits")
    }

    /// Decodes common bytes that [`RequestCommon::check`] accepted, reserved bits masked out.
    #[inline]
    fn decode(raw: &CommonRaw) -> Self {
        RequestCommon {
            opcode: Opcode::from_valid(raw.opcode & 0x3F),
            flags: SesFlags::from_bits_truncate(raw.flags),
            ri_generation: (raw.generation_job.get() >> 24) as u8,
            job_id: raw.generation_job.get() & 0xFF_FFFF,
            pid_on_fep: raw.pid_on_fep.get() & 0x0FFF,
            resource_index: raw.resource_index.get() & 0x0FFF,
        }
    }

    #[inline]
    fn raw(&self, word2: u16) -> Result<CommonRaw, Error> {
        Ok(CommonRaw {
            opcode: self.opcode.to_u8()?,
            flags: self.flags.intersection(SesFlags::all()).bits(),
            word2: U16::new(word2),
            generation_job: U32::new(u32::from(self.ri_generation) << 24 | check_bits(self.job_id, 24, "SES JobID")?),
            pid_on_fep: U16::new(check_bits(u32::from(self.pid_on_fep), 12, "SES PIDonFEP")? as u16),
            resource_index: U16::new(check_bits(u32::from(self.resource_index), 12, "SES resource index")? as u16),
        })
    }
}

/// The strict check of the SES request `next` names at the front of `bytes`: the first reserved
/// bit set, by field name, the extension's included.
pub(crate) fn check_reserved(next: NextHeader, bytes: &[u8]) -> Result<(), Error> {
    let (common, rest) = view::<CommonRaw>(bytes, "SES request")?;
    RequestCommon::check_reserved(common)?;
    let word2 = common.word2.get();
    let body_len = match next {
        NextHeader::ReqStd => {
            let (body, _) = view::<StandardRaw>(rest, "SES standard request")?;
            if common.flags & SesFlags::SOM.bits() == 0 {
                let hi = (body.tail.get() >> 32) as u32;
                reserved_zero(u64::from(hi & !0x3FFF), "SES payload length reserved bits")?;
            }
            StandardRequest::LEN - RequestCommon::LEN
        }
        NextHeader::ReqMedium => {
            check_len14_reserved(word2, "SES request length reserved bits")?;
            MediumRequest::LEN - RequestCommon::LEN
        }
        NextHeader::ReqSmall => {
            if common.flags & SesFlags::HD.bits() != 0 {
                return Err(Error::Reserved { field: "SES small request HD flag" });
            }
            check_len14_reserved(word2, "SES request length reserved bits")?;
            SmallRequest::LEN - RequestCommon::LEN
        }
        _ => return Ok(()),
    };
    let ext = rest.get(body_len..).unwrap_or_default();
    let opcode = Opcode::from_valid(common.opcode & 0x3F);
    if next == NextHeader::ReqStd {
        Extension::check_reserved(opcode, ext)
    } else {
        Extension::check_reserved_compact(opcode, ext)
    }
}

/// Bytes an optional extension adds.
const fn ext_len(ext: &Option<Extension>) -> usize {
    match ext {
        Some(e) => e.buffer_len(),
        None => 0,
    }
}

/// Emits `common` with `word2`, then `body`, then `ext`, after checking the extension (that of
/// a small or medium request when `compact`).
#[inline]
fn emit_request<B: IntoBytes + Immutable>(
    common: &RequestCommon,
    word2: u16,
    body: &B,
    (ext, compact): (Option<&Extension>, bool),
    out: &mut [u8],
) -> Result<usize, Error> {
    if compact {
        Extension::check_for_compact(ext, common.opcode)?;
    } else {
        Extension::check_for(ext, common.opcode)?;
    }
    let len = RequestCommon::LEN + core::mem::size_of_val(body) + ext.map_or(0, Extension::buffer_len);
    if out.len() < len {
        return Err(Error::BufferTooShort { needed: len, got: out.len() });
    }
    let mut n = write(&common.raw(word2)?, out)?;
    n += write(body, out.get_mut(n..).unwrap_or_default())?;
    if let Some(e) = ext {
        n += e.emit(out.get_mut(n..).unwrap_or_default())?;
    }
    Ok(n)
}

/// The raw standard-request body (bytes 12–43).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct StandardRaw {
    /// Buffer offset or restart token.
    pub buffer_offset: U64,
    /// Initiator id.
    pub initiator: U32,
    /// Match bits or memory key.
    pub match_bits: U64,
    /// Header data (SOM), or payload length ‖ message offset.
    pub tail: U64,
    /// Request length.
    pub request_length: U32,
}

/// Bytes 32–39 of a standard request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum StandardTail {
    /// SOM = 1: completion header data (meaningful when HD is set).
    Som {
        /// Header data.
        header_data: u64,
    },
    /// SOM = 0: where this packet's payload sits in the message.
    Continuation {
        /// Payload bytes in this packet (14 bits).
        payload_length: u16,
        /// Byte offset of this packet's payload in the message.
        message_offset: u32,
    },
}

/// A standard SES request (next header 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
// Laid out as declared, with `tail` last: the enums that hold a request (`SesHeader`, results)
// keep their own tag in the tail's, and a request moved out of one is then copied as one
// aligned run before it. With the tail's tag first (rustc's own order), each such move on a
// 32-bit core was a byte-misaligned copy: 3.5 % of the Cortex-M4 instructions per UET message.
#[repr(C)]
pub struct StandardRequest {
    /// Offset in the target buffer, or the restart token of a deferrable send.
    pub buffer_offset: u64,
    /// Match bits or memory key (RMA), or the restart token of DEFERRABLE_RTR.
    pub match_bits: u64,
    /// Atomic, compare-and-swap or rendezvous extension.
    pub ext: Option<Extension>,
    /// The common fields; the SOM flag is set from [`StandardRequest::tail`] on emit.
    pub common: RequestCommon,
    /// Initiator id (matching).
    pub initiator: u32,
    /// Total message length.
    pub request_length: u32,
    /// Message id.
    pub message_id: u16,
    /// Header data (first packet) or payload length and message offset.
    pub tail: StandardTail,
}

impl StandardRequest {
    /// Length without extension.
    pub const LEN: usize = 44;

    /// The restart token `(initiator token, target token)` of a deferrable request: the high
    /// and low 32 bits, as uet-ref-prov's header masks (`UET_SES_REQ_STD_INI_TOKEN_MASK`) and
    /// XDP2 lay them out. (uet-ref-prov's own RTR builder, `uet_build_ses_rtr_token`, puts the
    /// target's token high: from a peer built on it, read the halves the other way round.)
    pub const fn restart_token(&self) -> Option<(u32, u32)> {
        let t = match self.common.opcode {
            Opcode::DeferrableSend | Opcode::DeferrableTsend => self.buffer_offset,
            Opcode::DeferrableRtr => self.match_bits,
            _ => return None,
        };
        Some(((t >> 32) as u32, t as u32))
    }

    /// Parses a standard request (and its extension) from the front of `bytes`, through
    /// [`StandardView::parse`], which holds every check.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        StandardView::parse(bytes).map(|(v, rest)| (v.to_repr(), rest))
    }

    /// Bytes [`StandardRequest::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN + ext_len(&self.ext)
    }

    /// The checks [`StandardRequest::emit`] makes, without writing: whether it writes this
    /// request into a buffer of [`StandardRequest::buffer_len`] bytes (each field within its
    /// width, each code point one the wire can carry, the extension the one its opcode carries).
    pub fn check(&self) -> Result<(), Error> {
        // In `emit`'s order, so that both report the same first fault.
        if let StandardTail::Continuation { payload_length, .. } = self.tail {
            check_len14(payload_length, "SES payload length")?;
        }
        Extension::check_for(self.ext.as_ref(), self.common.opcode)?;
        self.common.raw(self.message_id)?;
        self.ext.as_ref().map_or(Ok(()), Extension::check)
    }

    /// Writes the request to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let mut common = self.common;
        let tail = match self.tail {
            StandardTail::Som { header_data } => {
                common.flags.insert(SesFlags::SOM);
                header_data
            }
            StandardTail::Continuation { payload_length, message_offset } => {
                common.flags.remove(SesFlags::SOM);
                (u64::from(check_len14(payload_length, "SES payload length")?) << 32) | u64::from(message_offset)
            }
        };
        let body = StandardRaw {
            buffer_offset: U64::new(self.buffer_offset),
            initiator: U32::new(self.initiator),
            match_bits: U64::new(self.match_bits),
            tail: U64::new(tail),
            request_length: U32::new(self.request_length),
        };
        emit_request(&common, self.message_id, &body, (self.ext.as_ref(), false), out)
    }
}

/// A validated standard SES request borrowed from the packet: the receive fast path.
///
/// [`StandardView::parse`] makes every check [`StandardRequest::parse`] makes (that parse is built
/// on this one), so the accessors read the borrowed bytes without failing; the extension, when the
/// opcode has one, is checked here and decoded again by [`StandardView::ext`].
#[derive(Clone, Copy, Debug)]
pub struct StandardView<'a> {
    common: &'a CommonRaw,
    body: &'a StandardRaw,
    /// The checked extension bytes (empty when there is none).
    ext: &'a [u8],
}

impl<'a> StandardView<'a> {
    /// Validates the standard request (and extension) at the front of `bytes`; returns it and the
    /// bytes after it.
    #[inline(always)]
    pub fn parse(bytes: &'a [u8]) -> Result<(Self, &'a [u8]), Error> {
        let (common, rest) = view::<CommonRaw>(bytes, "SES standard request")?;
        RequestCommon::check(common)?;
        let (body, rest) = view::<StandardRaw>(rest, "SES standard request")?;
        let opcode = common.opcode & 0x3F;
        let (ext, rest) = if Opcode::EXTENDED >> opcode & 1 != 0 {
            let (_, after) = Extension::parse_for(Opcode::from_valid(opcode), rest)?;
            rest.split_at_checked(rest.len().saturating_sub(after.len())).unwrap_or((&[], rest))
        } else {
            (&[][..], rest)
        };
        Ok((StandardView { common, body, ext }, rest))
    }

    /// The view of `common` and `body` if they are a valid standard request that carries no
    /// extension; `None` for anything else, valid or not, which [`StandardView::parse`] then
    /// handles.
    ///
    /// The version is tested on bytes 0–1 read as a little-endian word (`rsvd 2 | opcode 6` ‖
    /// `version 2 | flags 6`, the version's mask byte-swapped into place); reserved bits are not
    /// looked at.
    #[inline(always)]
    pub(crate) fn without_ext(common: &'a CommonRaw, body: &'a StandardRaw) -> Option<Self> {
        /// The valid 6-bit opcodes as a set of bits.
        const VALID: u64 = {
            let mut set = 0u64;
            let mut v = 0u8;
            while v < 64 {
                if Opcode::is_valid(v) {
                    set |= 1 << v;
                }
                v += 1;
            }
            set
        };
        // An extended opcode brings an extension, so only the others take the fast path.
        const ALLOWED: u64 = VALID & !Opcode::EXTENDED;
        let head = u16::from_le_bytes(*common.as_bytes().first_chunk::<2>()?);
        let version = head & 0xC000;
        if (version == 0) & (ALLOWED >> (common.opcode & 63) & 1 != 0) {
            Some(StandardView { common, body, ext: &[] })
        } else {
            None
        }
    }

    /// Operation.
    #[inline]
    pub const fn opcode(&self) -> Opcode {
        Opcode::from_valid(self.common.opcode & 0x3F)
    }

    /// DC, IE, REL, HD, EOM, SOM.
    #[inline]
    pub const fn flags(&self) -> SesFlags {
        SesFlags::from_bits_truncate(self.common.flags)
    }

    /// Message id.
    #[inline]
    pub fn message_id(&self) -> u16 {
        self.common.word2.get()
    }

    /// Resource-index generation.
    #[inline]
    pub const fn ri_generation(&self) -> u8 {
        (self.common.generation_job.get() >> 24) as u8
    }

    /// JobID (24 bits).
    #[inline]
    pub const fn job_id(&self) -> u32 {
        self.common.generation_job.get() & 0xFF_FFFF
    }

    /// Process on the fabric endpoint (12 bits).
    #[inline]
    pub fn pid_on_fep(&self) -> u16 {
        self.common.pid_on_fep.get() & 0x0FFF
    }

    /// Resource index (12 bits).
    #[inline]
    pub fn resource_index(&self) -> u16 {
        self.common.resource_index.get() & 0x0FFF
    }

    /// The common fields.
    #[inline]
    pub fn common(&self) -> RequestCommon {
        RequestCommon::decode(self.common)
    }

    /// Offset in the target buffer, or the restart token of a deferrable send.
    #[inline]
    pub fn buffer_offset(&self) -> u64 {
        self.body.buffer_offset.get()
    }

    /// Initiator id.
    #[inline]
    pub fn initiator(&self) -> u32 {
        self.body.initiator.get()
    }

    /// Match bits or memory key.
    #[inline]
    pub fn match_bits(&self) -> u64 {
        self.body.match_bits.get()
    }

    /// Header data (SOM) or payload length and message offset.
    #[inline]
    pub fn tail(&self) -> StandardTail {
        let tail = self.body.tail.get();
        if self.flags().contains(SesFlags::SOM) {
            StandardTail::Som { header_data: tail }
        } else {
            StandardTail::Continuation { payload_length: len14((tail >> 32) as u16), message_offset: tail as u32 }
        }
    }

    /// Total message length.
    #[inline]
    pub fn request_length(&self) -> u32 {
        self.body.request_length.get()
    }

    /// The extension, if the opcode carries one.
    #[inline]
    pub fn ext(&self) -> Option<Extension> {
        // `parse` accepted these bytes, so this decode succeeds; an error cannot occur here.
        Extension::parse_for(self.opcode(), self.ext).ok().and_then(|(e, _)| e)
    }

    /// Header length, extension included.
    #[inline]
    pub const fn len(&self) -> usize {
        StandardRequest::LEN + self.ext.len()
    }

    /// Always false: a header is never empty (present for the `len` convention).
    #[inline]
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// The owned request.
    #[inline]
    pub fn to_repr(&self) -> StandardRequest {
        StandardRequest {
            common: self.common(),
            message_id: self.message_id(),
            buffer_offset: self.buffer_offset(),
            initiator: self.initiator(),
            match_bits: self.match_bits(),
            tail: self.tail(),
            request_length: self.request_length(),
            ext: self.ext(),
        }
    }
}

/// The raw medium-request body (bytes 12–31).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MediumRaw {
    /// Header data or buffer offset.
    pub data: U64,
    /// Initiator id.
    pub initiator: U32,
    /// Match bits or memory key.
    pub match_bits: U64,
}

/// A small-message SES request (next header 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct MediumRequest {
    /// The common fields.
    pub common: RequestCommon,
    /// Message length (14 bits).
    pub request_length: u16,
    /// Header data when HD is set, else the buffer offset.
    pub data: u64,
    /// Initiator id.
    pub initiator: u32,
    /// Match bits or memory key.
    pub match_bits: u64,
    /// Atomic or compare-and-swap extension.
    pub ext: Option<Extension>,
}

impl MediumRequest {
    /// Length without extension.
    pub const LEN: usize = 32;

    /// The header data, when HD is set.
    pub const fn header_data(&self) -> Option<u64> {
        if self.common.flags.contains(SesFlags::HD) { Some(self.data) } else { None }
    }

    /// The buffer offset, when HD is clear.
    pub const fn buffer_offset(&self) -> Option<u64> {
        if self.common.flags.contains(SesFlags::HD) { None } else { Some(self.data) }
    }

    /// Parses a medium request from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (common, word2, rest) = RequestCommon::parse(bytes, "SES medium request")?;
        let request_length = len14(word2);
        let (raw, rest) = view::<MediumRaw>(rest, "SES medium request")?;
        let (ext, rest) = Extension::parse_for_compact(common.opcode, rest)?;
        let h = MediumRequest {
            common,
            request_length,
            data: raw.data.get(),
            initiator: raw.initiator.get(),
            match_bits: raw.match_bits.get(),
            ext,
        };
        Ok((h, rest))
    }

    /// Bytes [`MediumRequest::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN + ext_len(&self.ext)
    }

    /// Writes the request to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let body = MediumRaw {
            data: U64::new(self.data),
            initiator: U32::new(self.initiator),
            match_bits: U64::new(self.match_bits),
        };
        let word2 = check_len14(self.request_length, "SES request length")?;
        emit_request(&self.common, word2, &body, (self.ext.as_ref(), true), out)
    }
}

/// An optimized non-matching SES request (next header 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SmallRequest {
    /// The common fields (HD is reserved).
    pub common: RequestCommon,
    /// Message length (14 bits).
    pub request_length: u16,
    /// Offset in the target buffer.
    pub buffer_offset: u64,
    /// Atomic or compare-and-swap extension.
    pub ext: Option<Extension>,
}

impl SmallRequest {
    /// Length without extension.
    pub const LEN: usize = 20;

    /// Parses a small request from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (mut common, word2, rest) = RequestCommon::parse(bytes, "SES small request")?;
        // HD is reserved in the small request: ignored.
        common.flags.remove(SesFlags::HD);
        let request_length = len14(word2);
        let (raw, rest) = view::<U64>(rest, "SES small request")?;
        let (ext, rest) = Extension::parse_for_compact(common.opcode, rest)?;
        Ok((SmallRequest { common, request_length, buffer_offset: raw.get(), ext }, rest))
    }

    /// Bytes [`SmallRequest::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN + ext_len(&self.ext)
    }

    /// Writes the request to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        if self.common.flags.contains(SesFlags::HD) {
            return Err(Error::Reserved { field: "SES small request HD flag" });
        }
        let word2 = check_len14(self.request_length, "SES request length")?;
        emit_request(&self.common, word2, &U64::new(self.buffer_offset), (self.ext.as_ref(), true), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ses::{AtomicExt, AtomicOpcode, Datatype, SemanticControl, SesHeader};

    fn common(opcode: Opcode, flags: SesFlags) -> RequestCommon {
        RequestCommon { opcode, flags, ri_generation: 3, job_id: 0x00ABCD, pid_on_fep: 0x123, resource_index: 0x456 }
    }

    #[test]
    fn standard_write_golden() {
        // WRITE, first and last packet, REL, message id 0x0042; JobID 0xABCD, PID 0x123, RI 0x456.
        let mut b = [0u8; 44];
        b[..12].copy_from_slice(&[0x01, 0x0B, 0x00, 0x42, 0x03, 0x00, 0xAB, 0xCD, 0x01, 0x23, 0x04, 0x56]);
        b[12..20].copy_from_slice(&0x1000u64.to_be_bytes());
        b[20..24].copy_from_slice(&7u32.to_be_bytes());
        b[24..32].copy_from_slice(&0xFEED_0000_0000_0001u64.to_be_bytes());
        b[32..40].copy_from_slice(&0xDDu64.to_be_bytes());
        b[40..44].copy_from_slice(&16384u32.to_be_bytes());
        let (r, rest) = StandardRequest::parse(&b).unwrap();
        assert!(rest.is_empty());
        assert_eq!(r.common, common(Opcode::Write, SesFlags::REL | SesFlags::EOM | SesFlags::SOM));
        assert_eq!((r.message_id, r.buffer_offset, r.initiator), (0x42, 0x1000, 7));
        assert_eq!(r.tail, StandardTail::Som { header_data: 0xDD });
        assert_eq!(r.request_length, 16384);
        let mut out = [0u8; 44];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);

        // A continuation packet: SOM clear, payload length 4096 at message offset 4096.
        b[1] = 0x0A;
        b[32..40].copy_from_slice(&((4096u64 << 32) | 4096).to_be_bytes());
        let (r, _) = StandardRequest::parse(&b).unwrap();
        assert_eq!(r.tail, StandardTail::Continuation { payload_length: 4096, message_offset: 4096 });
        // The 18 bits above the payload length are reserved: ignored, reported strictly.
        let clean = b;
        b[32] = 0x01;
        b[34] |= 0xC0;
        assert_eq!(StandardRequest::parse(&b).unwrap().0, r);
        assert_eq!(
            SesHeader::check_reserved(NextHeader::ReqStd, &b),
            Err(Error::Reserved { field: "SES payload length reserved bits" })
        );
        assert_eq!(SesHeader::check_reserved(NextHeader::ReqStd, &clean), Ok(()));
    }

    proptest::proptest! {
        /// `check` passes exactly the requests `emit` writes, widths and code points at their
        /// edges, extensions matched to their opcodes or not.
        #[test]
        fn check_is_exactly_what_emit_accepts(
            opcode in proptest::prop_oneof![proptest::sample::select(&[0x03u8, 0x04, 0x06, 0x0A, 0x0D, 0x0E][..]), 0u8..0x40],
            widths in proptest::prelude::any::<[u16; 3]>(),
            job_id in proptest::prelude::any::<u32>(),
            continuation in proptest::prelude::any::<Option<u16>>(),
            ext in 0u8..4,
            codes in proptest::prelude::any::<[u8; 2]>(),
        ) {
            use crate::ses::{AtomicExt, AtomicOpcode, Datatype, RendezvousExt, SemanticControl};
            let edge = |w: u16| w >> (w % 16);
            let atomic = AtomicExt {
                opcode: AtomicOpcode::from_valid(codes[0]),
                datatype: Datatype::from_valid(codes[1]),
                semantic_control: SemanticControl::empty(),
            };
            let mut h = StandardRequest {
                common: RequestCommon {
                    opcode: Opcode::from_valid(opcode),
                    flags: SesFlags::empty(),
                    ri_generation: 0,
                    job_id: job_id >> (job_id % 32),
                    pid_on_fep: edge(widths[0]),
                    resource_index: edge(widths[1]),
                },
                message_id: 1,
                buffer_offset: 2,
                initiator: 3,
                match_bits: 4,
                tail: continuation.map_or(StandardTail::Som { header_data: 5 }, |n| StandardTail::Continuation {
                    payload_length: edge(n),
                    message_offset: 6,
                }),
                request_length: 7,
                ext: match ext {
                    0 => None,
                    1 => Some(Extension::Atomic(atomic)),
                    2 => Some(Extension::CompareAndSwap { atomic, compare: [1; 16], swap: [2; 16] }),
                    _ => Some(Extension::Rendezvous(RendezvousExt {
                        eager_length: 8,
                        read_ri_generation: 9,
                        read_pid_on_fep: edge(widths[2]),
                        read_resource_index: edge(widths[0]),
                        read_offset: 10,
                        read_match_bits: 11,
                    })),
                },
            };
            let mut out = [0u8; StandardRequest::LEN + 36];
            proptest::prop_assert_eq!(h.check().err(), h.emit(&mut out).err());
            // The extension alone, whatever the opcode.
            if let Some(e) = h.ext {
                proptest::prop_assert_eq!(e.check().err(), e.emit(&mut out).err());
            }
            h.ext = None;
            proptest::prop_assert_eq!(h.check().err(), h.emit(&mut out).err());
        }

        /// The all-at-once check agrees with the field-by-field one on any 12 bytes.
        #[test]
        fn common_check_fast_path_is_exact(mut b in proptest::prelude::any::<[u8; 12]>(), clear in proptest::prelude::any::<bool>()) {
            if clear {
                // Mostly valid headers: clear the reserved bits and pick a defined opcode.
                b[0] &= 0x0F;
                b[1] &= 0x3F;
                b[8] &= 0x0F;
                b[10] &= 0x0F;
            }
            let raw = CommonRaw::ref_from_bytes(&b[..]).unwrap();
            proptest::prop_assert_eq!(RequestCommon::check(raw), RequestCommon::check_each(raw));
            if RequestCommon::check(raw).is_ok() {
                proptest::prop_assert_eq!(Ok(RequestCommon::decode(raw).opcode), Opcode::try_from(b[0] & 0x3F));
            }
        }
    }

    #[test]
    fn common_validation() {
        let mut b = [0u8; 20];
        b[0] = 0x05;
        b[1] = 0x03;
        assert!(SmallRequest::parse(&b).is_ok());
        let (clean, _) = SmallRequest::parse(&b).unwrap();
        let strict = |x: &[u8]| SesHeader::check_reserved(NextHeader::ReqSmall, x);
        assert_eq!(strict(&b), Ok(()));
        let mut x = b;
        x[1] = 0x43;
        assert!(matches!(SmallRequest::parse(&x), Err(Error::BadValue { field: "SES version", .. })));
        // Reserved bits: ignored by the parse, each reported by the strict check.
        for (at, bits, field) in [
            (0, 0x40, "SES opcode reserved bits"),
            (1, 0x04, "SES small request HD flag"),
            (2, 0x40, "SES request length reserved bits"),
            (8, 0x10, "SES PIDonFEP reserved bits"),
            (10, 0x80, "SES resource index reserved bits"),
        ] {
            let mut x = b;
            x[at] |= bits;
            assert_eq!(SmallRequest::parse(&x).unwrap().0, clean, "{field}");
            assert_eq!(strict(&x), Err(Error::Reserved { field }));
        }
        let mut x = b;
        x[0] = 0x10;
        assert!(matches!(SmallRequest::parse(&x), Err(Error::BadValue { field: "SES opcode", .. })));
    }

    #[test]
    fn medium_atomic_with_extension() {
        // FETCHING_ATOMIC in a medium request, HD set: the 64-bit field is header data.
        let mut b = [0u8; 36];
        b[..4].copy_from_slice(&[0x04, 0x07, 0x00, 0x08]);
        b[12..20].copy_from_slice(&9u64.to_be_bytes());
        b[32..36].copy_from_slice(&[0x02, 0x07, 0x01, 0x00]);
        let (m, _) = MediumRequest::parse(&b).unwrap();
        assert_eq!((m.request_length, m.header_data(), m.buffer_offset()), (8, Some(9), None));
        assert_eq!(
            m.ext,
            Some(Extension::Atomic(AtomicExt {
                opcode: AtomicOpcode::Sum,
                datatype: Datatype::Uint64,
                semantic_control: SemanticControl::CACHEABLE
            }))
        );
        let mut out = [0u8; 36];
        assert_eq!(m.emit(&mut out).unwrap(), 36);
        assert_eq!(out, b);
        assert!(matches!(MediumRequest::parse(&b[..35]), Err(Error::Truncated { .. })));
        let no_ext = MediumRequest { ext: None, ..m };
        assert!(matches!(no_ext.emit(&mut out), Err(Error::Mismatch { .. })));
        // A medium or small RENDEZVOUS_SEND or TSEND_ATOMIC carries no extension (Wireshark):
        // what follows is payload.
        for opcode in [Opcode::RendezvousSend, Opcode::TsendAtomic] {
            let mut b = b;
            b[0] = opcode.to_u8().unwrap();
            let (m, rest) = MediumRequest::parse(&b).unwrap();
            assert_eq!((m.ext, rest.len()), (None, 4), "{opcode:?}");
            let (s, rest) = SmallRequest::parse(&b).unwrap();
            assert_eq!((s.ext, rest.len()), (None, 16), "{opcode:?}");
        }
    }

    #[test]
    fn restart_token() {
        let c = common(Opcode::DeferrableRtr, SesFlags::SOM);
        let r = StandardRequest {
            common: c,
            message_id: 1,
            buffer_offset: 0,
            initiator: 0,
            match_bits: 0x0000_0011_0000_0022,
            tail: StandardTail::Som { header_data: 0 },
            request_length: 0,
            ext: None,
        };
        assert_eq!(r.restart_token(), Some((0x11, 0x22)));
    }
}
