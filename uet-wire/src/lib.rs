#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "arbitrary")]
extern crate std;

pub mod cms;
pub mod crc32c;
pub mod entropy;
mod error;
pub mod lb;
pub mod msg;
pub mod packet;
pub mod pdc;
pub mod pds;
pub mod ses;
pub mod tss;

pub use error::Error;
/// The time types every handler takes (`linklayer::Instant`, `Duration`) and, with feature
/// `std`, `linklayer::StdClock`: `StdClock::new()`, then `clock.now()` for each call's `now` and
/// `clock.to_std(deadline)` to wait until a `poll_timeout`.
pub use linklayer;
#[doc(inline)]
pub use linklayer::{Duration, Instant};
pub use packet::{Body, PacketRepr, UetPacket, WalkConfig, parse_request_std};

#[cfg(test)]
mod tests {
    /// Sizes of the owned Reprs (they are returned by value from `parse`, so they are kept in view).
    #[test]
    fn repr_sizes() {
        use core::mem::size_of;
        let sizes = [
            ("PdsHeader", size_of::<crate::pds::PdsHeader>()),
            ("SesHeader", size_of::<crate::ses::SesHeader>()),
            ("StandardRequest", size_of::<crate::ses::StandardRequest>()),
            ("Extension", size_of::<crate::ses::Extension>()),
            ("Error", size_of::<crate::Error>()),
        ];
        for (name, size) in sizes {
            std::println!("{name}: {size} B");
        }
        assert!(sizes.iter().all(|&(_, s)| s <= 160));
    }
}
