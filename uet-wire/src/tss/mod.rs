//! The Transport Security Sublayer (UE 1.0 §3.7): its header (here), the key derivation
//! ([`kdf`]), the IV, AAD and AES-256-GCM over a packet ([`aead`]), and the secure domain that
//! holds the keys, counters and receive checks ([`domain`]); how an `Endpoint` uses them is in
//! [`Secure`](crate::msg::Secure).
//!
//! The header (Wireshark and uet-ref-prov agree):
//!
//! | bits | field |
//! |---|---|
//! | 5 | type = 1 (the PDS prologue's type slot: "this is TSS") |
//! | 1 | SP: SSI present |
//! | 1 | reserved |
//! | 1 | AN: association number (which of two keys) |
//! | 24 | SDI: secure domain index |
//! | 32 | SSI: secure source identifier, only when SP = 1 |
//! | 64 | TSC: transport security counter = 16-bit epoch ‖ 48-bit counter |
//!
//! 12 bytes, or 16 with SSI. Everything after the header up to the 16-byte ICV ([`ICV_LEN`]) at the
//! end of the packet is AES-256-GCM ciphertext (the encrypted PDS prologue onwards).

pub mod aead;
pub mod domain;
pub mod kdf;

pub use aead::{Aad, AuthFailed, Framing, PacketKey};
pub use domain::{DomainConfig, Mode, Opened, Path, SecureDomain, TssError, TssStats};
pub use kdf::{Identity, SessionKey};

use crate::error::{Error, reserved_zero};
use zerocopy::byteorder::network_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The raw 12-byte TSS header (SP = 0).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TssRaw {
    /// type ‖ SP ‖ reserved ‖ AN ‖ SDI.
    pub word: U32,
    /// Epoch ‖ counter.
    pub tsc: U64,
}

/// The raw 16-byte TSS header (SP = 1).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TssSsiRaw {
    /// type ‖ SP ‖ reserved ‖ AN ‖ SDI.
    pub word: U32,
    /// Secure source identifier.
    pub ssi: U32,
    /// Epoch ‖ counter.
    pub tsc: U64,
}

/// Length of the GCM integrity check value appended to a TSS packet.
pub const ICV_LEN: usize = 16;

/// The 5-bit type value that marks a TSS header.
pub const TSS_TYPE: u8 = 1;

/// The largest 48-bit counter value.
pub const COUNTER_MAX: u64 = (1 << 48) - 1;

/// The transport security counter: epoch ‖ counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tsc {
    /// Epoch (upper 16 bits).
    pub epoch: u16,
    /// Per-endpoint packet counter (lower 48 bits); never reused under one key.
    pub counter: u64,
}

impl Tsc {
    /// The 64-bit wire value.
    pub const fn to_u64(self) -> u64 {
        ((self.epoch as u64) << 48) | (self.counter & COUNTER_MAX)
    }

    /// Splits a 64-bit wire value.
    pub const fn from_u64(v: u64) -> Self {
        Tsc { epoch: (v >> 48) as u16, counter: v & COUNTER_MAX }
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Tsc {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Tsc::from_u64(u64::arbitrary(u)?))
    }
}

/// A TSS header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TssHeader {
    /// Association number: selects one of the secure domain's two live keys.
    pub an: bool,
    /// Secure domain index (24 bits).
    pub sdi: u32,
    /// Secure source identifier; `Some` sets SP.
    pub ssi: Option<u32>,
    /// Transport security counter.
    pub tsc: Tsc,
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for TssHeader {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(TssHeader {
            an: bool::arbitrary(u)?,
            sdi: u32::arbitrary(u)? & 0xFF_FFFF,
            ssi: Option::<u32>::arbitrary(u)?,
            tsc: Tsc::arbitrary(u)?,
        })
    }
}

impl TssHeader {
    /// Header length without SSI.
    pub const LEN: usize = 12;
    /// Header length with SSI.
    pub const LEN_SSI: usize = 16;

    /// Whether `bytes` starts with a TSS header (its 5-bit type is 1) rather than a PDS prologue.
    pub fn starts(bytes: &[u8]) -> bool {
        bytes.first().is_some_and(|b| b >> 3 == TSS_TYPE)
    }

    /// Parses the header from the front of `bytes`.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let truncated = |needed| Error::Truncated { field: "TSS header", needed, got: bytes.len() };
        let (word, _) = U32::read_from_prefix(bytes).map_err(|_| truncated(Self::LEN))?;
        let word = word.get();
        let kind = (word >> 27) as u8;
        if kind != TSS_TYPE {
            return Err(Error::BadValue { field: "TSS type", value: u64::from(kind) });
        }
        let (ssi, tsc, rest) = if word & 0x0400_0000 != 0 {
            let (raw, rest) = TssSsiRaw::read_from_prefix(bytes).map_err(|_| truncated(Self::LEN_SSI))?;
            (Some(raw.ssi.get()), raw.tsc.get(), rest)
        } else {
            let (raw, rest) = TssRaw::read_from_prefix(bytes).map_err(|_| truncated(Self::LEN))?;
            (None, raw.tsc.get(), rest)
        };
        let h = TssHeader { an: word & 0x0100_0000 != 0, sdi: word & 0xFF_FFFF, ssi, tsc: Tsc::from_u64(tsc) };
        Ok((h, rest))
    }

    /// The strict check: fails with [`Error::Reserved`] when the reserved bit after SP is set
    /// (receivers ignore it; [`TssHeader::parse`] does).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (word, _) = U32::read_from_prefix(bytes).map_err(|_| Error::Truncated {
            field: "TSS header",
            needed: Self::LEN,
            got: bytes.len(),
        })?;
        reserved_zero(u64::from(word.get() & 0x0200_0000), "TSS reserved bit")
    }

    /// Bytes [`TssHeader::emit`] writes: 12, or 16 with SSI.
    pub const fn buffer_len(&self) -> usize {
        if self.ssi.is_some() { Self::LEN_SSI } else { Self::LEN }
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        if self.sdi > 0xFF_FFFF {
            return Err(Error::BadValue { field: "TSS SDI", value: u64::from(self.sdi) });
        }
        if self.tsc.counter > COUNTER_MAX {
            return Err(Error::BadValue { field: "TSS counter", value: self.tsc.counter });
        }
        let len = self.buffer_len();
        let short = Error::BufferTooShort { needed: len, got: out.len() };
        let word = (u32::from(TSS_TYPE) << 27)
            | if self.ssi.is_some() { 0x0400_0000 } else { 0 }
            | if self.an { 0x0100_0000 } else { 0 }
            | self.sdi;
        let (word, tsc) = (U32::new(word), U64::new(self.tsc.to_u64()));
        let written = match self.ssi {
            Some(ssi) => TssSsiRaw { word, ssi: U32::new(ssi), tsc }.write_to_prefix(out).is_ok(),
            None => TssRaw { word, tsc }.write_to_prefix(out).is_ok(),
        };
        if !written {
            return Err(short);
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_without_and_with_ssi() {
        // type 1, SP 0, AN 1, SDI 0x123456, TSC epoch 0x0002 counter 0x0000_0000_0305.
        let b = [0x09, 0x12, 0x34, 0x56, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x03, 0x05, 0xAA];
        let (h, rest) = TssHeader::parse(&b).unwrap();
        assert_eq!(h, TssHeader { an: true, sdi: 0x123456, ssi: None, tsc: Tsc { epoch: 2, counter: 0x305 } });
        assert_eq!(rest, &[0xAA]);
        assert!(TssHeader::starts(&b));
        // SP set: SSI 0xCAFEF00D then TSC.
        let b = [0x0C, 0, 0, 1, 0xCA, 0xFE, 0xF0, 0x0D, 0xFF, 0xFF, 0, 0, 0, 0, 0, 1];
        let (h, _) = TssHeader::parse(&b).unwrap();
        assert_eq!(h.ssi, Some(0xCAFEF00D));
        assert_eq!(h.tsc, Tsc { epoch: 0xFFFF, counter: 1 });
        let mut out = [0u8; 16];
        assert_eq!(h.emit(&mut out).unwrap(), 16);
        assert_eq!(out, b);
    }

    #[test]
    fn rejects() {
        // The reserved bit is ignored on receive and reported by the strict check.
        let reserved = [0x0A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(TssHeader::parse(&reserved).is_ok_and(|(h, _)| !h.an && h.ssi.is_none()));
        assert!(matches!(TssHeader::check_reserved(&reserved), Err(Error::Reserved { .. })));
        assert!(TssHeader::check_reserved(&reserved[..3]).is_err());
        assert!(TssHeader::check_reserved(&[0x08, 0, 0, 0]).is_ok());
        assert!(matches!(TssHeader::parse(&[0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), Err(Error::BadValue { .. })));
        assert!(matches!(TssHeader::parse(&[0x0C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), Err(Error::Truncated { .. })));
        let h = TssHeader { an: false, sdi: 1 << 24, ssi: None, tsc: Tsc::default() };
        assert!(h.emit(&mut [0; 12]).is_err());
        assert!(TssHeader { sdi: 0, ..h }.emit(&mut [0; 11]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(an: bool, sdi in 0u32..(1 << 24), ssi: Option<u32>, tsc: u64) {
            let h = TssHeader { an, sdi, ssi, tsc: Tsc::from_u64(tsc) };
            let mut out = [0u8; 16];
            let n = h.emit(&mut out).unwrap();
            prop_assert_eq!(n, h.buffer_len());
            prop_assert_eq!(TssHeader::parse(&out[..n]).unwrap(), (h, &[][..]));
        }
    }
}
