//! The Semantic Sublayer headers (UE 1.0 §3.4; Wireshark, uet-ref-prov and XDP2 agree unless
//! noted).
//!
//! The PDS next-header field selects the SES header:
//!
//! | next header | header | bytes | Repr |
//! |---|---|---|---|
//! | 1 | optimized non-matching request | 20 | [`SmallRequest`] |
//! | 2 | small-message request | 32 | [`MediumRequest`] |
//! | 3 | standard request | 44 + extension | [`StandardRequest`] |
//! | 4 | response | 12 | [`Response`] |
//! | 5 | response with data | 20 | [`ResponseWithData`] |
//! | 6 | small response with data | 12 (uet-ref-prov, XDP2; Wireshark reads 4) | [`ResponseDataSmall`] |
//!
//! Requests start with a common 12 bytes ([`RequestCommon`]): opcode, version (0), flags DC, IE,
//! REL, HD, EOM, SOM, the message id (standard) or request length (small, medium), the resource
//! index generation, JobID (24 bits), PIDonFEP (12 bits) and resource index (12 bits).
//!
//! Extension headers ([`Extension`]) follow the request when its opcode needs one: atomic (4
//! bytes) or compare-and-swap (36 bytes) for the atomic opcodes, rendezvous (24 bytes) for the
//! rendezvous sends, on every packet of the message: whether one follows is told by the opcode
//! alone, SOM or not, as the reference provider (`uet_parse_pkt`) and Wireshark
//! (`dissect_ses_std_req`) parse it, and the reference provider sends its SYNC_WRITE extension
//! on every packet. A standard TSEND_ATOMIC carries the atomic extension as the reference
//! provider parses it (`uet_parse_pkt`; Wireshark's guide lists only ATOMIC, FETCHING_ATOMIC
//! and TSEND_FETCH_ATOMIC). Small and medium requests, which the reference provider does not
//! parse, follow Wireshark (`dissect_ses_small_req`, `dissect_ses_medium_req`): the atomic
//! extension for ATOMIC, FETCHING_ATOMIC and TSEND_FETCH_ATOMIC, and no other
//! ([`Opcode::has_compact_atomic_ext`]).
//!
//! Reserved bits are emitted as zero and ignored on parse (`check_reserved` reports them); the
//! version must be 0; unknown opcodes and codes are rejected except in the vendor ranges, which
//! parse to `Vendor` variants.

mod ext;
#[cfg(test)]
mod proptests;
mod request;
mod response;

pub use ext::{AtomicExt, AtomicOpcode, Datatype, Extension, RendezvousExt, SemanticControl};
pub(crate) use request::{CommonRaw, StandardRaw};
pub use request::{MediumRequest, RequestCommon, SesFlags, SmallRequest, StandardRequest, StandardTail, StandardView};
pub use response::{Response, ResponseDataSmall, ResponseList, ResponseOpcode, ResponseWithData, ReturnCode};

use crate::error::Error;
use crate::pds::NextHeader;

macro_rules! codepoints {
    (
        $(#[$meta:meta])* $name:ident, $field:literal, vendor $lo:literal ..= $hi:literal,
        { $( $(#[$doc:meta])* $variant:ident = $value:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        // Discriminants equal to the wire values let the compiler turn `try_from` into a range
        // check instead of a jump table.
        #[repr(u8)]
        pub enum $name {
            $( $(#[$doc])* $variant = $value, )*
            /// A vendor-defined value (in the range the specification leaves to vendors).
            Vendor(u8) = $lo,
        }

        impl TryFrom<u8> for $name {
            type Error = Error;

            #[inline]
            fn try_from(v: u8) -> Result<Self, Error> {
                if Self::is_valid(v) {
                    Ok(Self::from_valid(v))
                } else {
                    Err(Error::BadValue { field: $field, value: u64::from(v) })
                }
            }
        }

        impl $name {
            /// Whether `v` is a defined or vendor value (what `try_from` accepts).
            #[allow(clippy::manual_range_patterns, reason = "the pattern lists the table's values")]
            pub const fn is_valid(v: u8) -> bool {
                matches!(v, $( $value )|* | $lo..=$hi)
            }

            /// Decodes a value [`Self::is_valid`] accepts; any other value decodes as `Vendor`.
            #[inline]
            pub(crate) const fn from_valid(v: u8) -> Self {
                match v {
                    $( $value => $name::$variant, )*
                    _ => $name::Vendor(v),
                }
            }

            /// The wire value; fails for a `Vendor` value outside the vendor range.
            pub fn to_u8(self) -> Result<u8, Error> {
                match self {
                    $( $name::$variant => Ok($value), )*
                    $name::Vendor(v @ $lo..=$hi) => Ok(v),
                    $name::Vendor(v) => Err(Error::BadValue { field: $field, value: u64::from(v) }),
                }
            }
        }
    };
}
pub(crate) use codepoints;

codepoints! {
    /// SES request opcodes (6 bits). 0x10–0x2F and 0x3F are reserved, as in Wireshark
    /// (uet-ref-prov's SYNC opcodes and XDP2's 0x3F escape each have one source).
    Opcode, "SES opcode", vendor 0x30..=0x3E, {
        /// No operation.
        NoOp = 0x00,
        /// RMA write.
        Write = 0x01,
        /// RMA read.
        Read = 0x02,
        /// Non-fetching atomic.
        Atomic = 0x03,
        /// Fetching atomic.
        FetchingAtomic = 0x04,
        /// Untagged send.
        Send = 0x05,
        /// Rendezvous send (eager part + RMA read of the rest).
        RendezvousSend = 0x06,
        /// Datagram send.
        DatagramSend = 0x07,
        /// Deferrable send.
        DeferrableSend = 0x08,
        /// Tagged send.
        TaggedSend = 0x09,
        /// Rendezvous tagged send.
        RendezvousTsend = 0x0A,
        /// Deferrable tagged send.
        DeferrableTsend = 0x0B,
        /// Deferrable send: ready to restart.
        DeferrableRtr = 0x0C,
        /// Tagged send with a non-fetching atomic.
        TsendAtomic = 0x0D,
        /// Tagged send with a fetching atomic.
        TsendFetchAtomic = 0x0E,
        /// Message error.
        MsgError = 0x0F,
    }
}

impl Opcode {
    /// Whether requests with this opcode carry an atomic (or CAS) extension.
    pub const fn has_atomic_ext(self) -> bool {
        matches!(self, Opcode::Atomic | Opcode::FetchingAtomic | Opcode::TsendAtomic | Opcode::TsendFetchAtomic)
    }

    /// Whether requests with this opcode fetch a value that the target returns: FETCHING_ATOMIC
    /// and TSEND_FETCH_ATOMIC, answered with RESPONSE_W_DATA.
    pub const fn fetches(self) -> bool {
        matches!(self, Opcode::FetchingAtomic | Opcode::TsendFetchAtomic)
    }

    /// Whether requests with this opcode carry a rendezvous extension.
    pub const fn has_rendezvous_ext(self) -> bool {
        matches!(self, Opcode::RendezvousSend | Opcode::RendezvousTsend)
    }

    /// Whether small and medium requests with this opcode carry an atomic (or CAS) extension:
    /// ATOMIC, FETCHING_ATOMIC and TSEND_FETCH_ATOMIC, as Wireshark parses them
    /// (`dissect_ses_small_req`, `dissect_ses_medium_req`). They never carry a rendezvous one.
    pub const fn has_compact_atomic_ext(self) -> bool {
        matches!(self, Opcode::Atomic | Opcode::FetchingAtomic | Opcode::TsendFetchAtomic)
    }

    /// The raw opcodes whose requests carry an extension, as a bit set (what
    /// [`Opcode::has_atomic_ext`] or [`Opcode::has_rendezvous_ext`] say, for the fast path).
    pub(crate) const EXTENDED: u64 = 1 << 0x03 | 1 << 0x04 | 1 << 0x06 | 1 << 0x0A | 1 << 0x0D | 1 << 0x0E;
}

/// Any SES header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SesHeader {
    /// Optimized non-matching request.
    Small(SmallRequest),
    /// Small-message request.
    Medium(MediumRequest),
    /// Standard request.
    Standard(StandardRequest),
    /// Response without data.
    Response(Response),
    /// Response with data.
    ResponseWithData(ResponseWithData),
    /// Small response with data.
    ResponseDataSmall(ResponseDataSmall),
}

impl SesHeader {
    /// Parses the SES header `next` names from the front of `bytes`; `None` for
    /// [`NextHeader::None`].
    #[inline]
    pub fn parse(next: NextHeader, bytes: &[u8]) -> Result<(Option<Self>, &[u8]), Error> {
        Ok(match next {
            NextHeader::None => (None, bytes),
            NextHeader::ReqSmall => {
                let (h, r) = SmallRequest::parse(bytes)?;
                (Some(SesHeader::Small(h)), r)
            }
            NextHeader::ReqMedium => {
                let (h, r) = MediumRequest::parse(bytes)?;
                (Some(SesHeader::Medium(h)), r)
            }
            NextHeader::ReqStd => {
                let (h, r) = StandardRequest::parse(bytes)?;
                (Some(SesHeader::Standard(h)), r)
            }
            NextHeader::Rsp => {
                let (h, r) = Response::parse(bytes)?;
                (Some(SesHeader::Response(h)), r)
            }
            NextHeader::RspData => {
                let (h, r) = ResponseWithData::parse(bytes)?;
                (Some(SesHeader::ResponseWithData(h)), r)
            }
            NextHeader::RspDataSmall => {
                let (h, r) = ResponseDataSmall::parse(bytes)?;
                (Some(SesHeader::ResponseDataSmall(h)), r)
            }
        })
    }

    /// The strict check of the SES header `next` names at the front of `bytes`: the first
    /// reserved bit set, by field name. [`SesHeader::parse`] ignores reserved bits (send zeros,
    /// ignore on receive); conformance tests and decoders use this to warn.
    pub fn check_reserved(next: NextHeader, bytes: &[u8]) -> Result<(), Error> {
        match next {
            NextHeader::None | NextHeader::Rsp => Ok(()),
            NextHeader::ReqSmall | NextHeader::ReqMedium | NextHeader::ReqStd => request::check_reserved(next, bytes),
            NextHeader::RspData => ResponseWithData::check_reserved(bytes),
            NextHeader::RspDataSmall => ResponseDataSmall::check_reserved(bytes),
        }
    }

    /// The PDS next-header value that announces this header.
    pub const fn next_header(&self) -> NextHeader {
        match self {
            SesHeader::Small(_) => NextHeader::ReqSmall,
            SesHeader::Medium(_) => NextHeader::ReqMedium,
            SesHeader::Standard(_) => NextHeader::ReqStd,
            SesHeader::Response(_) => NextHeader::Rsp,
            SesHeader::ResponseWithData(_) => NextHeader::RspData,
            SesHeader::ResponseDataSmall(_) => NextHeader::RspDataSmall,
        }
    }

    /// The payload length the header announces for this packet, where it announces one
    /// (responses with data, standard-request continuation packets). A READ request carries no
    /// payload: its `payload_length` is the data it asks for (the reference provider's
    /// `uet_tx_msg`), so it announces none here.
    pub const fn payload_length(&self) -> Option<u16> {
        match self {
            SesHeader::ResponseWithData(h) => Some(h.payload_length),
            SesHeader::ResponseDataSmall(h) => Some(h.payload_length),
            SesHeader::Standard(StandardRequest { common: RequestCommon { opcode: Opcode::Read, .. }, .. }) => None,
            SesHeader::Standard(StandardRequest {
                tail: StandardTail::Continuation { payload_length, .. }, ..
            }) => Some(*payload_length),
            _ => None,
        }
    }

    /// Bytes [`SesHeader::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        match self {
            SesHeader::Small(h) => h.buffer_len(),
            SesHeader::Medium(h) => h.buffer_len(),
            SesHeader::Standard(h) => h.buffer_len(),
            SesHeader::Response(h) => h.buffer_len(),
            SesHeader::ResponseWithData(h) => h.buffer_len(),
            SesHeader::ResponseDataSmall(h) => h.buffer_len(),
        }
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        match self {
            SesHeader::Small(h) => h.emit(out),
            SesHeader::Medium(h) => h.emit(out),
            SesHeader::Standard(h) => h.emit(out),
            SesHeader::Response(h) => h.emit(out),
            SesHeader::ResponseWithData(h) => h.emit(out),
            SesHeader::ResponseDataSmall(h) => h.emit(out),
        }
    }
}

/// The 14-bit length of a word of 2 reserved bits and a length (the reserved bits ignored).
#[inline]
pub(crate) const fn len14(word: u16) -> u16 {
    word & 0x3FFF
}

/// The strict check of a word of 2 reserved bits and a 14-bit length.
#[inline]
pub(crate) fn check_len14_reserved(word: u16, field: &'static str) -> Result<(), Error> {
    if word & 0xC000 != 0 { Err(Error::Reserved { field }) } else { Ok(()) }
}

/// Checks a 14-bit length before it is emitted.
#[inline]
pub(crate) fn check_len14(v: u16, field: &'static str) -> Result<u16, Error> {
    if v > 0x3FFF { Err(Error::BadValue { field, value: u64::from(v) }) } else { Ok(v) }
}

/// Checks a value fits `bits` bits before it is emitted.
#[inline]
pub(crate) fn check_bits(v: u32, bits: u32, field: &'static str) -> Result<u32, Error> {
    if v >> bits != 0 { Err(Error::BadValue { field, value: u64::from(v) }) } else { Ok(v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcode_ranges() {
        for v in 0..64u8 {
            let r = Opcode::try_from(v);
            match v {
                0x00..=0x0F => assert!(matches!(r, Ok(o) if !matches!(o, Opcode::Vendor(_)))),
                0x30..=0x3E => assert_eq!(r, Ok(Opcode::Vendor(v))),
                _ => assert!(r.is_err(), "{v:#x}"),
            }
            if let Ok(o) = r {
                assert_eq!(o.to_u8(), Ok(v));
            }
        }
        assert!(Opcode::Vendor(0x05).to_u8().is_err());
        assert!(Opcode::TsendFetchAtomic.has_atomic_ext());
        for v in 0u8..64 {
            let extended = Opcode::try_from(v).is_ok_and(|o| o.has_atomic_ext() || o.has_rendezvous_ext());
            assert_eq!(Opcode::EXTENDED >> v & 1 != 0, extended, "opcode {v:#x}");
        }
        assert!(Opcode::RendezvousTsend.has_rendezvous_ext());
        assert!(!Opcode::Send.has_atomic_ext());
    }
}
