//! The crate's one error type.

use core::fmt;

/// Everything that can go wrong in `linklayer`: bad bytes, bad values, impossible counters,
/// full windows and calls in the wrong state.
///
/// Every error leaves the object it came from unchanged. The type is `Copy` and carries enough to
/// debug without a heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The input is shorter than the format needs.
    Truncated {
        /// Bytes the format needs.
        needed: usize,
        /// Bytes available.
        got: usize,
    },
    /// A reserved field is not zero.
    Reserved {
        /// The field.
        field: &'static str,
    },
    /// A field holds a value the format or the call does not allow.
    BadValue {
        /// The field or argument.
        field: &'static str,
        /// The value found (truncated to 32 bits).
        value: u32,
    },
    /// An integrity check failed.
    Crc {
        /// The check value computed over the bytes.
        expected: u32,
        /// The check value carried in the bytes.
        got: u32,
    },
    /// A configuration parameter is outside its allowed range.
    BadConfig {
        /// The parameter.
        field: &'static str,
    },
    /// A flow-controlled virtual channel has too few credits for the frame.
    NoCredit {
        /// The virtual channel.
        vc: u8,
        /// Credits the frame needs.
        needed: u32,
        /// Credits currently available.
        available: u32,
    },
    /// The receiver would hold more credits than its buffer allows: the sender overran it.
    CreditOverrun {
        /// The virtual channel.
        vc: u8,
    },
    /// A counter update is impossible given the local counters (stale, reordered or corrupt).
    CounterMismatch {
        /// The counter.
        field: &'static str,
        /// The distance the update would move the counter.
        distance: u32,
        /// The largest distance that is possible.
        limit: u32,
    },
    /// A sequence number is outside the window of frames it may refer to.
    OutOfWindow {
        /// The message that carried it.
        field: &'static str,
        /// The sequence number.
        seq: u32,
    },
    /// The replay buffer or send window is full; try again after an acknowledgement.
    WindowFull,
    /// The input is not allowed in the machine's current state.
    InvalidState {
        /// The state.
        state: &'static str,
        /// The input.
        input: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { needed, got } => write!(f, "truncated: need {needed} bytes, got {got}"),
            Error::Reserved { field } => write!(f, "reserved field {field} is not zero"),
            Error::BadValue { field, value } => write!(f, "bad value {value:#x} in {field}"),
            Error::Crc { expected, got } => write!(f, "check failed: computed {expected:#x}, carried {got:#x}"),
            Error::BadConfig { field } => write!(f, "configuration parameter {field} out of range"),
            Error::NoCredit { vc, needed, available } => {
                write!(f, "VC {vc}: frame needs {needed} credits, {available} available")
            }
            Error::CreditOverrun { vc } => write!(f, "VC {vc}: sender overran the receiver's credit limit"),
            Error::CounterMismatch { field, distance, limit } => {
                write!(f, "impossible {field} update: moves {distance}, at most {limit} possible")
            }
            Error::OutOfWindow { field, seq } => write!(f, "{field} sequence number {seq} is outside the window"),
            Error::WindowFull => f.write_str("replay buffer or send window is full"),
            Error::InvalidState { state, input } => write!(f, "{input} is not allowed in state {state}"),
        }
    }
}

impl core::error::Error for Error {}
