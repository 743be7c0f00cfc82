#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "arbitrary")]
extern crate std;

pub mod aggregate;
pub mod axi;
pub mod compress;
pub mod flit;
pub mod frame;
pub mod framing;
pub mod paxi;
pub mod qp;
pub mod rclink;
pub mod routing;

pub use linklayer;
