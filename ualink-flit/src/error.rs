//! The crate's error type.

/// Why a UALink structure was refused. Every parse and emit error names the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// A reserved field is not zero.
    Reserved {
        /// The field.
        field: &'static str,
    },
    /// A field holds a value the specification does not define.
    BadValue {
        /// The field.
        field: &'static str,
        /// The value found.
        value: u32,
    },
    /// The CRC does not match.
    Crc {
        /// The CRC computed over the flit.
        expected: [u8; 4],
        /// The CRC the flit carries.
        got: [u8; 4],
    },
    /// A fixed-capacity queue is full; nothing was added.
    Full {
        /// The queue.
        queue: &'static str,
    },
    /// An earlier error stopped this receiver for good (UALink 1.0 §5.3: a TL receive error is
    /// fatal and the receiver stops forwarding flits).
    Stopped,
    /// The call is not valid in the object's present state; nothing changed.
    State {
        /// What the call needs, by name (e.g. "DL Idle").
        needs: &'static str,
    },
    /// A buffer handed in is smaller than the object needs.
    TooSmall {
        /// The buffer.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes given.
        got: usize,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Error::Reserved { field } => write!(f, "reserved field {field} is not zero"),
            Error::BadValue { field, value } => write!(f, "{field}: value {value:#x} is not allowed"),
            Error::Crc { expected, got } => {
                write!(
                    f,
                    "CRC mismatch: computed {:08x}, flit carries {:08x}",
                    u32::from_be_bytes(expected),
                    u32::from_be_bytes(got)
                )
            }
            Error::Full { queue } => write!(f, "{queue} is full"),
            Error::Stopped => f.write_str("receiver stopped by an earlier TL receive error"),
            Error::State { needs } => write!(f, "not allowed now: needs {needs}"),
            Error::TooSmall { what, need, got } => write!(f, "{what} holds {got} bytes, needs {need}"),
        }
    }
}

impl core::error::Error for Error {}

/// `v` checked to fit in `bits` bits, or a `BadValue` naming `field`.
pub(crate) fn fits(v: u64, bits: u32, field: &'static str) -> Result<u64, Error> {
    if bits < 64 && v >> bits != 0 {
        Err(Error::BadValue { field, value: v.min(u64::from(u32::MAX)) as u32 })
    } else {
        Ok(v)
    }
}
