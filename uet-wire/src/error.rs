//! The crate's error type.

use core::fmt;

/// Everything that can be wrong with UET bytes or a call: every variant names the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The input is shorter than the header needs.
    Truncated {
        /// The header or field being read.
        field: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        got: usize,
    },
    /// A reserved field is not zero.
    Reserved {
        /// The field.
        field: &'static str,
    },
    /// A field holds a value the specification does not define (or one a `Repr` cannot carry).
    BadValue {
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// Two fields contradict each other (a packet type with a next header it cannot carry, a
    /// length that disagrees with the bytes, ...).
    Mismatch {
        /// What disagrees.
        field: &'static str,
    },
    /// A CRC32C trailer does not match.
    Crc {
        /// CRC computed over the packet.
        expected: u32,
        /// CRC carried in the packet.
        got: u32,
    },
    /// The output buffer is too short.
    BufferTooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        got: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { field, needed, got } => write!(f, "{field}: truncated, need {needed} bytes, got {got}"),
            Error::Reserved { field } => write!(f, "reserved field {field} is not zero"),
            Error::BadValue { field, value } => write!(f, "{field}: value {value:#x} not defined"),
            Error::Mismatch { field } => write!(f, "inconsistent {field}"),
            Error::Crc { expected, got } => {
                write!(f, "CRC32C mismatch: computed {expected:#010x}, carried {got:#010x}")
            }
            Error::BufferTooShort { needed, got } => write!(f, "output buffer too short: need {needed}, got {got}"),
        }
    }
}

impl core::error::Error for Error {}

/// `bytes[..n]` or a [`Error::Truncated`] naming `field`.
pub(crate) fn take<'a>(bytes: &'a [u8], n: usize, field: &'static str) -> Result<(&'a [u8], &'a [u8]), Error> {
    if bytes.len() < n {
        return Err(Error::Truncated { field, needed: n, got: bytes.len() });
    }
    Ok(bytes.split_at(n))
}

/// `out[..n]` or a [`Error::BufferTooShort`].
pub(crate) fn take_mut(out: &mut [u8], n: usize) -> Result<&mut [u8], Error> {
    let got = out.len();
    out.get_mut(..n).ok_or(Error::BufferTooShort { needed: n, got })
}

/// Fails with [`Error::Reserved`] if `value` has any bit set.
pub(crate) fn reserved_zero(value: u64, field: &'static str) -> Result<(), Error> {
    if value == 0 { Ok(()) } else { Err(Error::Reserved { field }) }
}
