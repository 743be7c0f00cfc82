#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "arbitrary")]
extern crate std;

pub mod adapter;
pub mod crc;
pub mod flit;
pub mod header;
pub mod lsm;
pub mod param;
pub mod retry;
pub mod sideband;
pub mod stream68;

pub use linklayer;
