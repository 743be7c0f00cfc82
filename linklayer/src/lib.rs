#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(feature = "arbitrary", feature = "std"))]
extern crate std;

pub mod bits;
pub mod bytes;
pub mod cbfc;
mod error;
pub mod link;
pub mod llr;
pub mod seq;
pub mod time;
pub mod wire;
pub mod zero_option;

pub use bits::{BitField, WordField};
pub use error::Error;
pub use seq::{Bits, NonZeroBits, Seq, SeqSpace};
#[cfg(feature = "std")]
pub use time::StdClock;
pub use time::{Deadline, Duration, Instant, LinkRate};
pub use zero_option::ZeroOption;

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of every state object is a compile-time constant; these are the documented ones.
    #[test]
    fn state_sizes() {
        use core::mem::size_of;
        let sender = size_of::<cbfc::CbfcSender>();
        let receiver = size_of::<cbfc::CbfcReceiver>();
        let rx = size_of::<llr::LlrRx<llr::UeLlrSpace>>();
        let tx = size_of::<llr::LlrTx<llr::UeLlrSpace, [u8; 0], 128>>();
        let slot = (size_of::<llr::LlrTx<llr::UeLlrSpace, [u8; 0], 129>>() - tx) as usize;
        std::println!("CbfcSender {sender} B, CbfcReceiver {receiver} B, LlrRx {rx} B");
        std::println!("LlrTx<_, [u8; 0], 128> {tx} B + replay storage; {slot} B per extra frame slot");
        assert!(sender <= 1024 && receiver <= 2048 && rx <= 256 && slot <= 32);
    }
}
