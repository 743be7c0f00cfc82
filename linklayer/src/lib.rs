//! # linklayer
//!
//! The shared base of every link in the xlink workspace:
//!
//! * [`time`]: [`Instant`] and [`Duration`] as inputs (no crate reads a clock), and [`LinkRate`] to
//!   turn byte spacings into time;
//! * [`seq`]: wrapping sequence numbers and cyclic counters of any width up to 32 bits, with or
//!   without a reserved 0, compared by RFC 1982 serial arithmetic; every crate uses them instead of
//!   ad-hoc modular arithmetic;
//! * [`bits`]: the one bit-field helper for bit-packed formats;
//! * [`cbfc`]: Ultra Ethernet 1.0 §5.2 credit-based flow control, sender and receiver engines;
//! * [`llr`]: Ultra Ethernet 1.0 §5.1 link-level retry: the transmitter and receiver machines on a
//!   go-back-N [`llr::ReplayBuffer`] that UALink's DL replay and UCIe's retry reuse;
//! * [`wire`]: the project-defined encodings of the CtlOS (8 bytes) and CC_Update (64 bytes on the
//!   wire) control messages. The engines are independent of them.
//!
//! Sources: `shared/spec/uet.md` §6 (facts tagged \[B\], from the OCP SAI LLR and CBFC proposals
//! that cite UE 1.0 §5.1/§5.2), `shared/spec/ualink-ethx.md` §1.4 and `shared/spec/ucie-cxl.md`
//! §1.7 for the replay-engine requirements of the other links. No bit layout of the UE link-layer
//! messages is public: [`wire`] is project-defined, and every other project-defined choice is
//! listed in the module that makes it.
//!
//! `no_std`, no allocation, no `unsafe`, no panics on any input or call sequence. Every state
//! object has a compile-time size; capacities are const generics or caller-provided buffers.
//! Optional features: `defmt` (derive `defmt::Format`) and `arbitrary` (derive
//! `arbitrary::Arbitrary` on messages and inputs, for fuzzing on a host; the derive's recursion
//! guard needs `std`, so this feature, and only it, links `std`).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "arbitrary")]
extern crate std;

pub mod bits;
pub mod cbfc;
mod error;
pub mod llr;
pub mod seq;
pub mod time;
pub mod wire;

pub use bits::{BitField, WordField};
pub use error::Error;
pub use seq::{Bits, NonZeroBits, Seq, SeqSpace};
pub use time::{Duration, Instant, LinkRate};

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
