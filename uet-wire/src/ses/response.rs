//! SES responses (UE 1.0 §3.4): response (12 bytes), response with data (20 bytes), small response
//! with data (12 bytes as in uet-ref-prov and XDP2; Wireshark reads only 4).
//!
//! All start `list 2 | opcode 6` ‖ `version 2 | return code 6`, then:
//!
//! * response: message id 16 ‖ RI generation 8 ‖ JobID 24 ‖ modified length 32;
//! * with data: message id 16 ‖ reserved 8 ‖ JobID 24 ‖ read-request message id 16 ‖
//!   `rsvd 2 | payload length 14` (Wireshark, uet-ref-prov; XDP2 has 12 bits) ‖ modified length 32
//!   ‖ message offset 32;
//! * small with data: `rsvd 2 | payload length 14` ‖ reserved 8 ‖ JobID 24 ‖ original request PSN
//!   32.
//!
//! Guaranteed delivery (UE 1.0 §3.4.3.3): a response other than DEFAULT_RESPONSE or NO_RESPONSE is
//! kept by the target until cleared ([`ResponseOpcode::needs_clear`]).
//!
//! The opcode must fit the header kind ([`ResponseOpcode::fits`]): RESPONSE_W_DATA only in the
//! forms with data, the other spec opcodes only in the plain response; vendor opcodes anywhere.
//! A mismatch is an error on parse and on emit.
//!
//! Receive policy: the reserved byte and the 2 reserved bits above a payload length are ignored
//! and sent as zero; [`SesHeader::check_reserved`](super::SesHeader::check_reserved) reports them.

use super::{check_len14, check_len14_reserved, codepoints, len14};
use crate::error::{Error, reserved_zero};
use crate::pds::{u24_from, u24_to, view, write};
use zerocopy::byteorder::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

codepoints! {
    /// Which list the message matched on (2 bits).
    ResponseList, "SES response list", vendor 2..=3, {
        /// The expected (posted receive) list.
        Expected = 0,
        /// The overflow (unexpected) list.
        Overflow = 1,
    }
}

codepoints! {
    /// Response opcodes (6 bits).
    ResponseOpcode, "SES response opcode", vendor 0x30..=0x3F, {
        /// Default response.
        DefaultResponse = 0,
        /// Response.
        Response = 1,
        /// Response with data.
        ResponseWithData = 2,
        /// No response.
        NoResponse = 3,
    }
}

impl ResponseOpcode {
    /// Whether this opcode may appear in a response header with data (`with_data`) or in a plain
    /// response: RESPONSE_W_DATA exactly in the forms with data; vendor opcodes in either.
    pub const fn fits(self, with_data: bool) -> bool {
        match self {
            ResponseOpcode::ResponseWithData => with_data,
            ResponseOpcode::Vendor(_) => true,
            _ => !with_data,
        }
    }

    /// Whether the target must keep this response until the initiator clears it.
    pub const fn needs_clear(self) -> bool {
        !matches!(self, ResponseOpcode::DefaultResponse | ResponseOpcode::NoResponse)
    }
}

codepoints! {
    /// SES return codes (6 bits; Wireshark, uet-ref-prov and XDP2 agree).
    ReturnCode, "SES return code", vendor 0x30..=0x37, {
        /// No code.
        Null = 0x00,
        /// Success.
        Ok = 0x01,
        /// Resource-index generation mismatch.
        BadGeneration = 0x02,
        /// Resource disabled.
        Disabled = 0x03,
        /// Resource disabled by generation.
        DisabledGen = 0x04,
        /// No matching receive.
        NoMatch = 0x05,
        /// Unsupported operation.
        UnsupportedOp = 0x06,
        /// Unsupported size.
        UnsupportedSize = 0x07,
        /// Address translation: invalid.
        AtInvalid = 0x08,
        /// Address translation: permission.
        AtPerm = 0x09,
        /// Address translation: ATS error.
        AtAtsError = 0x0A,
        /// Address translation: no translation.
        AtNoTrans = 0x0B,
        /// Address translation: out of range.
        AtOutOfRange = 0x0C,
        /// Host memory poisoned.
        HostPoisoned = 0x0D,
        /// Host unsuccessful completion.
        HostUnsuccessCmpl = 0x0E,
        /// Atomic: unsupported operation.
        AmoUnsupportedOp = 0x0F,
        /// Atomic: unsupported datatype.
        AmoUnsupportedDt = 0x10,
        /// Atomic: unsupported size.
        AmoUnsupportedSize = 0x11,
        /// Atomic: unaligned.
        AmoUnaligned = 0x12,
        /// Atomic: floating-point NaN.
        AmoFpNan = 0x13,
        /// Atomic: floating-point underflow.
        AmoFpUnderflow = 0x14,
        /// Atomic: floating-point overflow.
        AmoFpOverflow = 0x15,
        /// Atomic: floating-point inexact.
        AmoFpInexact = 0x16,
        /// Permission violation.
        PermViolation = 0x17,
        /// Operation violation.
        OpViolation = 0x18,
        /// Bad resource index.
        BadIndex = 0x19,
        /// Bad PID.
        BadPid = 0x1A,
        /// Bad JobID.
        BadJobId = 0x1B,
        /// Bad memory key.
        BadMkey = 0x1C,
        /// Bad address.
        BadAddr = 0x1D,
        /// Cancelled.
        Cancelled = 0x1E,
        /// Undeliverable.
        Undeliverable = 0x1F,
        /// Uncorrectable error.
        Uncor = 0x20,
        /// Uncorrectable transient error.
        UncorTrnsnt = 0x21,
        /// Message too long.
        TooLong = 0x22,
        /// Initiator error.
        InitiatorErr = 0x23,
        /// Dropped.
        Dropped = 0x24,
    }
}

/// Parses the first two bytes of a response, of a header with data or not.
#[inline]
fn parse_head(b0: u8, b1: u8, with_data: bool) -> Result<(ResponseList, ResponseOpcode, ReturnCode), Error> {
    if b1 >> 6 != 0 {
        return Err(Error::BadValue { field: "SES version", value: u64::from(b1 >> 6) });
    }
    let opcode = ResponseOpcode::try_from(b0 & 0x3F)?;
    fit(opcode, with_data)?;
    Ok((ResponseList::try_from(b0 >> 6)?, opcode, ReturnCode::try_from(b1 & 0x3F)?))
}

#[inline]
fn emit_head(list: ResponseList, opcode: ResponseOpcode, rc: ReturnCode, with_data: bool) -> Result<(u8, u8), Error> {
    fit(opcode, with_data)?;
    Ok((list.to_u8()? << 6 | opcode.to_u8()?, rc.to_u8()?))
}

/// [`ResponseOpcode::fits`] as an error.
#[inline]
const fn fit(opcode: ResponseOpcode, with_data: bool) -> Result<(), Error> {
    if opcode.fits(with_data) {
        Ok(())
    } else if with_data {
        Err(Error::Mismatch { field: "SES response opcode (not RESPONSE_W_DATA in a response with data)" })
    } else {
        Err(Error::Mismatch { field: "SES response opcode (RESPONSE_W_DATA in a response without data)" })
    }
}

/// The raw 12-byte response.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ResponseRaw {
    /// List ‖ opcode.
    pub opcode: u8,
    /// Version ‖ return code.
    pub return_code: u8,
    /// Message id.
    pub message_id: U16,
    /// RI generation.
    pub ri_generation: u8,
    /// JobID.
    pub job_id: [u8; 3],
    /// Modified length.
    pub modified_length: U32,
}

/// A response without data (next header 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Response {
    /// Matched list.
    pub list: ResponseList,
    /// Response opcode.
    pub opcode: ResponseOpcode,
    /// Outcome.
    pub return_code: ReturnCode,
    /// The request's message id.
    pub message_id: u16,
    /// Resource-index generation.
    pub ri_generation: u8,
    /// JobID (24 bits).
    pub job_id: u32,
    /// Bytes actually written or read.
    pub modified_length: u32,
}

impl Response {
    /// Length.
    pub const LEN: usize = 12;

    /// The DEFAULT_RESPONSE to request `req` with `code`: the request's message id, RI generation
    /// and JobID echoed; with RC_OK the whole message reported (`modified_length` =
    /// `request_length`), as the reference provider's target answers every request it accepts
    /// (`ultraethernet/uet-ref-prov` `uet_pds_to_ses_rx_req`); otherwise 0.
    pub const fn default_for(req: &super::StandardRequest, code: ReturnCode) -> Self {
        let whole = matches!(code, ReturnCode::Ok);
        Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::DefaultResponse,
            return_code: code,
            message_id: req.message_id,
            ri_generation: req.common.ri_generation,
            job_id: req.common.job_id,
            modified_length: if whole { req.request_length } else { 0 },
        }
    }

    /// This response as a RESPONSE_W_DATA carrying `payload_length` bytes, as a target answers
    /// a fetching atomic with the value it fetched (uet-ref-prov `uet_pds_to_ses_rx_req`): its
    /// list, return code, message id, JobID and `modified_length`, with `read_request_message_id`
    /// the message id and `message_offset` 0. (The RI generation has no field there.)
    pub const fn with_data(&self, payload_length: u16) -> ResponseWithData {
        ResponseWithData {
            list: self.list,
            opcode: ResponseOpcode::ResponseWithData,
            return_code: self.return_code,
            message_id: self.message_id,
            job_id: self.job_id,
            read_request_message_id: self.message_id,
            payload_length,
            modified_length: self.modified_length,
            message_offset: 0,
        }
    }

    /// Parses a response from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<ResponseRaw>(bytes, "SES response")?;
        let (list, opcode, return_code) = parse_head(raw.opcode, raw.return_code, false)?;
        let h = Response {
            list,
            opcode,
            return_code,
            message_id: raw.message_id.get(),
            ri_generation: raw.ri_generation,
            job_id: u24_from(raw.job_id),
            modified_length: raw.modified_length.get(),
        };
        Ok((h, rest))
    }

    /// Bytes [`Response::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the response to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let (opcode, return_code) = emit_head(self.list, self.opcode, self.return_code, false)?;
        let raw = ResponseRaw {
            opcode,
            return_code,
            message_id: U16::new(self.message_id),
            ri_generation: self.ri_generation,
            job_id: u24_to(self.job_id, "SES JobID")?,
            modified_length: U32::new(self.modified_length),
        };
        write(&raw, out)
    }
}

/// The raw 20-byte response with data.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ResponseWithDataRaw {
    /// List ‖ opcode.
    pub opcode: u8,
    /// Version ‖ return code.
    pub return_code: u8,
    /// Message id.
    pub message_id: U16,
    /// Reserved.
    pub reserved: u8,
    /// JobID.
    pub job_id: [u8; 3],
    /// Read request's message id.
    pub read_request_message_id: U16,
    /// Reserved ‖ payload length.
    pub payload_length: U16,
    /// Modified length.
    pub modified_length: U32,
    /// Message offset.
    pub message_offset: U32,
}

/// A response with data (next header 5): read data returning to the initiator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ResponseWithData {
    /// Matched list.
    pub list: ResponseList,
    /// Response opcode.
    pub opcode: ResponseOpcode,
    /// Outcome.
    pub return_code: ReturnCode,
    /// Message id.
    pub message_id: u16,
    /// JobID (24 bits).
    pub job_id: u32,
    /// Message id of the read request answered.
    pub read_request_message_id: u16,
    /// Data bytes in this packet (14 bits).
    pub payload_length: u16,
    /// Bytes read in all.
    pub modified_length: u32,
    /// Offset of this packet's data in the read.
    pub message_offset: u32,
}

impl ResponseWithData {
    /// Length.
    pub const LEN: usize = 20;

    /// Parses a response with data from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<ResponseWithDataRaw>(bytes, "SES response with data")?;
        let (list, opcode, return_code) = parse_head(raw.opcode, raw.return_code, true)?;
        let h = ResponseWithData {
            list,
            opcode,
            return_code,
            message_id: raw.message_id.get(),
            job_id: u24_from(raw.job_id),
            read_request_message_id: raw.read_request_message_id.get(),
            payload_length: len14(raw.payload_length.get()),
            modified_length: raw.modified_length.get(),
            message_offset: raw.message_offset.get(),
        };
        Ok((h, rest))
    }

    /// The strict check: the first reserved bit set in the response at the front of `bytes`.
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<ResponseWithDataRaw>(bytes, "SES response with data")?;
        reserved_zero(u64::from(raw.reserved), "SES response with data reserved byte")?;
        check_len14_reserved(raw.payload_length.get(), "SES payload length reserved bits")
    }

    /// Bytes [`ResponseWithData::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the response to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let (opcode, return_code) = emit_head(self.list, self.opcode, self.return_code, true)?;
        let raw = ResponseWithDataRaw {
            opcode,
            return_code,
            message_id: U16::new(self.message_id),
            reserved: 0,
            job_id: u24_to(self.job_id, "SES JobID")?,
            read_request_message_id: U16::new(self.read_request_message_id),
            payload_length: U16::new(check_len14(self.payload_length, "SES payload length")?),
            modified_length: U32::new(self.modified_length),
            message_offset: U32::new(self.message_offset),
        };
        write(&raw, out)
    }
}

/// The raw 12-byte small response with data.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ResponseDataSmallRaw {
    /// List ‖ opcode.
    pub opcode: u8,
    /// Version ‖ return code.
    pub return_code: u8,
    /// Reserved ‖ payload length.
    pub payload_length: U16,
    /// Reserved.
    pub reserved: u8,
    /// JobID.
    pub job_id: [u8; 3],
    /// PSN of the original request.
    pub original_request_psn: U32,
}

/// A small response with data (next header 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ResponseDataSmall {
    /// Matched list.
    pub list: ResponseList,
    /// Response opcode.
    pub opcode: ResponseOpcode,
    /// Outcome.
    pub return_code: ReturnCode,
    /// Data bytes in this packet (14 bits).
    pub payload_length: u16,
    /// JobID (24 bits).
    pub job_id: u32,
    /// PSN of the request answered.
    pub original_request_psn: u32,
}

impl ResponseDataSmall {
    /// Length.
    pub const LEN: usize = 12;

    /// Parses a small response with data from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (raw, rest) = view::<ResponseDataSmallRaw>(bytes, "SES small response with data")?;
        let (list, opcode, return_code) = parse_head(raw.opcode, raw.return_code, true)?;
        let h = ResponseDataSmall {
            list,
            opcode,
            return_code,
            payload_length: len14(raw.payload_length.get()),
            job_id: u24_from(raw.job_id),
            original_request_psn: raw.original_request_psn.get(),
        };
        Ok((h, rest))
    }

    /// The strict check: the first reserved bit set in the response at the front of `bytes`.
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (raw, _) = view::<ResponseDataSmallRaw>(bytes, "SES small response with data")?;
        check_len14_reserved(raw.payload_length.get(), "SES payload length reserved bits")?;
        reserved_zero(u64::from(raw.reserved), "SES small response reserved byte")
    }

    /// Bytes [`ResponseDataSmall::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the response to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let (opcode, return_code) = emit_head(self.list, self.opcode, self.return_code, true)?;
        let raw = ResponseDataSmallRaw {
            opcode,
            return_code,
            payload_length: U16::new(check_len14(self.payload_length, "SES payload length")?),
            reserved: 0,
            job_id: u24_to(self.job_id, "SES JobID")?,
            original_request_psn: U32::new(self.original_request_psn),
        };
        write(&raw, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden() {
        // OVERFLOW list, RESPONSE, OK; message id 0x0042; RI gen 3; JobID 0xABCD; 4096 bytes.
        let b = [0x41, 0x01, 0x00, 0x42, 0x03, 0x00, 0xAB, 0xCD, 0x00, 0x00, 0x10, 0x00];
        let (r, _) = Response::parse(&b).unwrap();
        assert_eq!(
            (r.list, r.opcode, r.return_code),
            (ResponseList::Overflow, ResponseOpcode::Response, ReturnCode::Ok)
        );
        assert!(r.opcode.needs_clear());
        assert_eq!((r.message_id, r.job_id, r.modified_length), (0x42, 0xABCD, 4096));
        let mut out = [0u8; 12];
        r.emit(&mut out).unwrap();
        assert_eq!(out, b);

        // Read data: RESPONSE_W_DATA, OK, 1024 bytes at offset 2048 of the read of message 9.
        let mut d = [0u8; 20];
        d[..12].copy_from_slice(&[0x02, 0x01, 0x00, 0x07, 0x00, 0x00, 0xAB, 0xCD, 0x00, 0x09, 0x04, 0x00]);
        d[12..16].copy_from_slice(&4096u32.to_be_bytes());
        d[16..20].copy_from_slice(&2048u32.to_be_bytes());
        let (r, _) = ResponseWithData::parse(&d).unwrap();
        assert_eq!((r.read_request_message_id, r.payload_length, r.message_offset), (9, 1024, 2048));
        let mut out = [0u8; 20];
        r.emit(&mut out).unwrap();
        assert_eq!(out, d);
        // Reserved byte and length bits: ignored, cleared on emit, reported strictly.
        let mut x = d;
        x[4] = 1;
        x[10] |= 0xC0;
        assert_eq!(ResponseWithData::parse(&x).unwrap().0, r);
        assert_eq!(
            ResponseWithData::check_reserved(&x),
            Err(Error::Reserved { field: "SES response with data reserved byte" })
        );
        assert_eq!(ResponseWithData::check_reserved(&d), Ok(()));

        let s = [0x02, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x09];
        let (r, _) = ResponseDataSmall::parse(&s).unwrap();
        assert_eq!((r.payload_length, r.original_request_psn), (64, 9));
    }

    #[test]
    fn codes() {
        assert!(ReturnCode::try_from(0x25).is_err());
        assert_eq!(ReturnCode::try_from(0x37), Ok(ReturnCode::Vendor(0x37)));
        assert!(ReturnCode::try_from(0x3E).is_err());
        assert!(Response::parse(&[0x01, 0x41, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(Response::parse(&[0x04, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert_eq!(
            Response::parse(&[0x83, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap().0.list,
            ResponseList::Vendor(2)
        );
        assert!(!ResponseOpcode::NoResponse.needs_clear());
    }

    /// An opcode that does not fit its header kind is refused, on parse and on emit.
    #[test]
    fn opcode_must_fit_the_header_kind() {
        let plain_with_data_opcode = [0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(matches!(Response::parse(&plain_with_data_opcode), Err(Error::Mismatch { .. })));
        let small_plain_opcode = [0x01, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x09];
        assert!(matches!(ResponseDataSmall::parse(&small_plain_opcode), Err(Error::Mismatch { .. })));
        let mut d = [0u8; 20];
        d[0] = 0x00; // DEFAULT_RESPONSE in a response with data
        assert!(matches!(ResponseWithData::parse(&d), Err(Error::Mismatch { .. })));
        d[0] = 0x30; // vendor: either kind
        assert!(ResponseWithData::parse(&d).is_ok());
        let r = Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::ResponseWithData,
            return_code: ReturnCode::Ok,
            message_id: 0,
            ri_generation: 0,
            job_id: 0,
            modified_length: 0,
        };
        assert!(matches!(r.emit(&mut [0u8; 12]), Err(Error::Mismatch { .. })));
    }
}
