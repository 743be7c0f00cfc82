#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod dl;
mod error;
pub mod tl;
pub mod upli;

pub use error::Error;
pub use linklayer;
