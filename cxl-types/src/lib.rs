#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "arbitrary")]
extern crate std;

pub mod flit256;
pub mod flit68;
pub mod msg;

pub use linklayer;
