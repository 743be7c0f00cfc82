//! Encapsulation (UE 1.0 §3.5.10) and the entropy header of native-IP mode.
//!
//! * **UDP mode**: UET rides in UDP with destination port [`UDP_PORT`] (4793; Wireshark,
//!   XDP2 and uet-ref-prov agree). The entropy value (EV) travels in the UDP *source* port; the
//!   UDP checksum is zero on send and ignored on receive (§3.5.10.1). There is no entropy header:
//!   the TSS header or PDS prologue starts the UDP payload.
//! * **Native-IP mode**: UET rides directly in IP; a 4-byte [`EntropyHeader`] (16-bit EV, 16
//!   reserved bits) comes first. No source fixes the IP protocol number; [`DEFAULT_IP_PROTOCOL`]
//!   (253, RFC 3692 experimental) is the value uet-ref-prov's XDP path uses (XDP2 leaves it
//!   configurable) and is *project-defined*.
//!
//! Outer Ethernet, IP and UDP headers are the embedder's: this crate starts at the UDP payload or
//! at the entropy header.

use crate::error::{Error, reserved_zero, take, take_mut};
use zerocopy::byteorder::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// UDP destination port of UET (Wireshark, XDP2 and uet-ref-prov agree).
pub const UDP_PORT: u16 = 4793;

/// IP protocol number for native-IP mode: *project-defined* default (253), configurable by the
/// embedder.
pub const DEFAULT_IP_PROTOCOL: u8 = 253;

/// How UET is encapsulated below this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Encapsulation {
    /// In UDP (destination port 4793); the EV is the UDP source port.
    Udp,
    /// Directly in IP, with the 4-byte entropy header.
    NativeIp,
}

/// The raw entropy header.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct EntropyHeaderRaw {
    /// Entropy value.
    pub entropy: U16,
    /// Reserved, zero.
    pub reserved: U16,
}

/// The entropy header of native-IP mode (4 bytes; Wireshark, uet-ref-prov and XDP2 agree).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct EntropyHeader {
    /// The entropy value switches hash for ECMP and packet spraying.
    pub entropy: u16,
}

impl EntropyHeader {
    /// Header length.
    pub const LEN: usize = 4;

    /// Parses the header from the front of `bytes`; the reserved half is ignored, as a receiver
    /// must ([`EntropyHeader::check_reserved`] reports it).
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), Error> {
        let (head, rest) = take(bytes, Self::LEN, "entropy header")?;
        let raw = EntropyHeaderRaw::ref_from_bytes(head).map_err(|_| Error::Mismatch { field: "entropy header" })?;
        Ok((EntropyHeader { entropy: raw.entropy.get() }, rest))
    }

    /// The strict check: fails with [`Error::Reserved`] when the reserved half is not zero.
    pub fn check_reserved(bytes: &[u8]) -> Result<(), Error> {
        let (head, _) = take(bytes, Self::LEN, "entropy header")?;
        let raw = EntropyHeaderRaw::ref_from_bytes(head).map_err(|_| Error::Mismatch { field: "entropy header" })?;
        reserved_zero(u64::from(raw.reserved.get()), "entropy header reserved")
    }

    /// Bytes [`EntropyHeader::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the header to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let raw = EntropyHeaderRaw { entropy: U16::new(self.entropy), reserved: U16::ZERO };
        take_mut(out, Self::LEN)?.copy_from_slice(raw.as_bytes());
        Ok(Self::LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden() {
        let (h, rest) = EntropyHeader::parse(&[0xBE, 0xEF, 0, 0, 0x11]).unwrap();
        assert_eq!(h.entropy, 0xBEEF);
        assert_eq!(rest, &[0x11]);
        // The reserved half is ignored on receive and reported by the strict check.
        assert_eq!(EntropyHeader::parse(&[1, 2, 0, 1]).map(|(h, _)| h.entropy), Ok(0x0102));
        assert_eq!(
            EntropyHeader::check_reserved(&[1, 2, 0, 1]),
            Err(Error::Reserved { field: "entropy header reserved" })
        );
        assert_eq!(EntropyHeader::check_reserved(&[1, 2, 0, 0]), Ok(()));
        assert!(EntropyHeader::check_reserved(&[1, 2, 0]).is_err());
        assert!(matches!(EntropyHeader::parse(&[1, 2, 0]), Err(Error::Truncated { .. })));
        let mut out = [0xFF; 4];
        h.emit(&mut out).unwrap();
        assert_eq!(out, [0xBE, 0xEF, 0, 0]);
        assert_eq!(UDP_PORT, 4793);
    }
}
