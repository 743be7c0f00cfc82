//! # ualink-flit
//!
//! UALink 200 Rev 1.0: the scale-up memory-semantic interconnect (loads, stores and atomics
//! between accelerators, up to 1024 of them through switches).
//!
//! ## What this crate implements, by layer (module names follow the specification)
//!
//! | layer | content | status |
//! |---|---|---|
//! | [`upli`] | Protocol-level interface: request, originator-data, read-response/data and write-response channel records (UALink 1.0 §2.7, Tables 2-2 … 2-14) | done |
//! | [`tl`] | 64-byte TL flits of two half-flits; the five control-field types and the flow-control/NOP field (§5.1, §5.9, Tables 5-27 … 5-38); message, AuthTags and byte-enable half-flits; half-flit sequencing as a packer and an unpacker (§5.1–5.3, §5.7); address compression (§5.5–5.6); TL credits (§5.8) | done |
//! | [`dl`] | 640-byte DL flits (flit header, five segment headers, 628 payload bytes, CRC-32; §6.3); continuous packing of TL flits and DL message sectors across segments and DL flits (§6.3.4); DL messages (§6.4); the data link of a port with link-level replay (§6.6) on [`linklayer::llr::ReplayBuffer`] over the 1..=511 sequence space, and the DL link states (§6.7) | done (speed goals open) |
//!
//! ## Verified versus project-defined
//!
//! The UALink 1.0 text is publicly mirrored and every format in `shared/spec/ualink-ethx.md` §1 is
//! tagged verified against it. The specification leaves open the byte and bit order of fields,
//! the M0/M1 placement in segment headers, the CRC input order and reflection, and the atomic
//! OpType values: each is a *project-defined* choice made in one module and documented there.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod dl;
mod error;
pub mod tl;
pub mod upli;

pub use error::Error;
pub use linklayer;
