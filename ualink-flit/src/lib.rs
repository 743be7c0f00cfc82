#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// The `arbitrary` derive names `std`.
#[cfg(feature = "arbitrary")]
extern crate std;

pub mod dl;
mod error;
pub mod port;
pub mod tl;
pub mod upli;

pub use error::Error;
/// The `heapless` crate, whose `Vec` appears in this API ([`tl::Unpacked`], [`dl::Delivered`]).
pub use heapless;
pub use linklayer;

/// The sizes the type docs state (a 64-bit host).
#[cfg(all(test, target_pointer_width = "64"))]
#[test]
fn documented_sizes() {
    use core::mem::size_of;
    assert_eq!(size_of::<dl::DataLink32>(), 21_776);
    assert_eq!(size_of::<dl::DataLink>(), 43_056);
    assert_eq!(size_of::<dl::DataLink128>(), 85_744);
    assert_eq!(size_of::<dl::DataLink<&'static mut [u8], 64, 8>>(), 2_560);
    assert_eq!(size_of::<tl::Packer>(), 6_048);
    assert_eq!(size_of::<tl::Packer<16, 4, 32>>(), 3_488);
    assert_eq!(size_of::<tl::Packer<64, 4, 64>>() - size_of::<tl::Packer>(), 1_584);
    assert_eq!(size_of::<tl::Unpacker>(), 728);
    assert_eq!(size_of::<tl::Unpacker<64, 4>>(), 2_312);
    assert_eq!(size_of::<dl::service::MessageService>(), 1_328);
    assert_eq!(size_of::<port::UpliPort>(), 71_392);
    assert_eq!(size_of::<port::UpliPort<[u8; dl::link::REPLAY_ENTRY_LEN * 64], 64, 16>>(), 59_008);
    assert_eq!(size_of::<port::UpliPort<[u8; dl::link::REPLAY_ENTRY_LEN * 64], 64, 64>>(), 96_160);
}
