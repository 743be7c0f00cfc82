//! RUDI requests and responses (types 4, 5; 8 bytes) and UUD requests (type 6; 4 bytes), UE 1.0
//! §3.5.11; Wireshark, uet-ref-prov and XDP2 agree.
//!
//! RUDI: prologue (flags M 0x20, RETX 0x10; 0x4F reserved) ‖ 16 reserved bits ‖ 32-bit packet id.
//! UUD: prologue (flags all reserved) ‖ 16 reserved bits.
//!
//! Receive policy: reserved bits are ignored and sent as zero; [`Rudi::check_reserved`] and
//! [`Uud::check_reserved`] report them.

use super::{NextHeader, PacketType, Prologue, check_flags, defmt_bits, view, write};
use crate::error::{Error, reserved_zero};
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

bitflags! {
    /// RUDI flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct RudiFlags: u8 {
        /// ECN mark (on a response: the request arrived marked).
        const M = 0x20;
        /// Retransmission.
        const RETX = 0x10;
    }
}
defmt_bits!(RudiFlags);

/// The raw 8-byte RUDI layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RudiRaw {
    /// Prologue.
    pub prologue: U16,
    /// Reserved.
    pub reserved: U16,
    /// Packet id.
    pub pkt_id: U32,
}

/// The raw 4-byte UUD layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct UudRaw {
    /// Prologue.
    pub prologue: U16,
    /// Reserved.
    pub reserved: U16,
}

/// A RUDI request or response header: connectionless, one response per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Rudi {
    /// Response (type 5) rather than request (type 4).
    pub response: bool,
    /// SES header: a request on a request, none or a response on a response.
    pub next_header: NextHeader,
    /// M, RETX.
    pub flags: RudiFlags,
    /// Per-packet id (not sequential).
    pub pkt_id: u32,
}

impl Rudi {
    /// Header length.
    pub const LEN: usize = 8;

    /// The packet type this header is sent as.
    pub const fn packet_type(&self) -> PacketType {
        if self.response { PacketType::RudiResp } else { PacketType::RudiReq }
    }

    fn check_next(response: bool, nh: NextHeader) -> Result<(), Error> {
        let ok = if response { nh.is_response_or_none() } else { nh.is_request() };
        if ok { Ok(()) } else { Err(Error::Mismatch { field: "RUDI next header" }) }
    }

    /// Parses a RUDI header from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<RudiRaw>(bytes, "PDS RUDI")?;
        let p = Prologue::from_word(raw.prologue.get());
        let response = match PacketType::try_from(p.packet_type)? {
            PacketType::RudiReq => false,
            PacketType::RudiResp => true,
            _ => return Err(Error::Mismatch { field: "PDS type (not RUDI)" }),
        };
        let next_header = NextHeader::try_from(p.next)?;
        Self::check_next(response, next_header)?;
        let h = Rudi { response, next_header, flags: RudiFlags::from_bits_truncate(p.flags), pkt_id: raw.pkt_id.get() };
        Ok((h, rest))
    }

    /// The strict check: the first reserved bit set in the RUDI header at the front of `bytes`,
    /// by field name ([`Rudi::parse`] ignores them).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<RudiRaw>(bytes, "PDS RUDI")?;
        check_flags(Prologue::from_word(raw.prologue.get()).flags, 0x4F, "RUDI flags reserved bits")?;
        reserved_zero(u64::from(raw.reserved.get()), "RUDI reserved")
    }

    /// Bytes [`Rudi::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        Self::check_next(self.response, self.next_header)?;
        let p = Prologue {
            packet_type: self.packet_type().into(),
            next: self.next_header.into(),
            flags: self.flags.intersection(RudiFlags::all()).bits(),
        };
        write(&RudiRaw { prologue: U16::new(p.to_word()), reserved: U16::ZERO, pkt_id: U32::new(self.pkt_id) }, out)
    }
}

/// A UUD request header: best-effort, single-packet, connectionless.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Uud {
    /// The SES request that follows.
    pub next_header: NextHeader,
}

impl Uud {
    /// Header length.
    pub const LEN: usize = 4;

    /// Parses a UUD header from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<UudRaw>(bytes, "PDS UUD")?;
        let p = Prologue::from_word(raw.prologue.get());
        if PacketType::try_from(p.packet_type)? != PacketType::UudReq {
            return Err(Error::Mismatch { field: "PDS type (not UUD)" });
        }
        let next_header = NextHeader::try_from(p.next)?;
        if !next_header.is_request() {
            return Err(Error::Mismatch { field: "UUD next header (not an SES request)" });
        }
        Ok((Uud { next_header }, rest))
    }

    /// The strict check: the first reserved bit set in the UUD header at the front of `bytes`,
    /// by field name ([`Uud::parse`] ignores them).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<UudRaw>(bytes, "PDS UUD")?;
        reserved_zero(u64::from(Prologue::from_word(raw.prologue.get()).flags), "UUD flags")?;
        reserved_zero(u64::from(raw.reserved.get()), "UUD reserved")
    }

    /// Bytes [`Uud::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        if !self.next_header.is_request() {
            return Err(Error::Mismatch { field: "UUD next header (not an SES request)" });
        }
        let p = Prologue { packet_type: PacketType::UudReq.into(), next: self.next_header.into(), flags: 0 };
        write(&UudRaw { prologue: U16::new(p.to_word()), reserved: U16::ZERO }, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden() {
        // RUDI request, NH standard (3), RETX; pkt id 0x01020304.
        let b = [0x21, 0x90, 0, 0, 1, 2, 3, 4];
        let (r, _) = Rudi::parse(&b).unwrap();
        assert_eq!(
            r,
            Rudi { response: false, next_header: NextHeader::ReqStd, flags: RudiFlags::RETX, pkt_id: 0x01020304 }
        );
        let mut out = [0u8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);
        // A RUDI response carrying a request is refused.
        assert!(matches!(Rudi::parse(&[0x29, 0x80, 0, 0, 1, 2, 3, 4]), Err(Error::Mismatch { .. })));
        // Reserved bits: ignored, reported by the strict check.
        let odd = [0x21, 0xC0, 0, 1, 1, 2, 3, 4];
        assert_eq!(Rudi::parse(&odd).unwrap().0, Rudi { flags: RudiFlags::empty(), ..r });
        assert_eq!(Rudi::check_reserved(&odd), Err(Error::Reserved { field: "RUDI flags reserved bits" }));
        assert_eq!(Rudi::check_reserved(&b), Ok(()));
        // UUD with a small request.
        let (u, rest) = Uud::parse(&[0x30, 0x80, 0, 0, 9]).unwrap();
        assert_eq!((u.next_header, rest), (NextHeader::ReqSmall, &[9u8][..]));
        assert_eq!(Uud::parse(&[0x30, 0x81, 0, 0]).unwrap().0, Uud { next_header: NextHeader::ReqSmall });
        assert_eq!(Uud::check_reserved(&[0x30, 0x81, 0, 0]), Err(Error::Reserved { field: "UUD flags" }));
        let mut out = [0u8; 4];
        u.emit(&mut out).unwrap();
        assert_eq!(out, [0x30, 0x80, 0, 0]);
    }
}
