//! # cxl-types
//!
//! Compute Express Link types: memory expansion, pooling and coherent caching over PCIe-class links
//! (CXL 3.x/4.0 message sets).
//!
//! ## What this crate implements
//!
//! | module | content | status |
//! |---|---|---|
//! | `mem` | CXL.mem M2S Req/RwD and S2M NDR/DRS messages with every field and opcode | planned |
//! | `cache` | CXL.cache D2H/H2D request, response and data messages | planned |
//! | `flit68`, `flit256` | 68B flit (header, slots H0–H6/G0–G6, credits, CRC-16 0x1F053) and 256B flit slot packing | planned |
//! | `regs`, `mailbox` | DVSEC and register-locator types, HDM decoders, mailbox commands, return codes, event records | planned |
//!
//! CXL over UCIe is wired in the examples, not by a dependency on `ucie-adapter`.
//!
//! ## Verified versus project-defined
//!
//! Field widths and opcodes are verified from a CXL 4.0 text rendering and cross-checked against
//! Linux and QEMU (`shared/spec/ucie-cxl.md` §2). Bit positions that exist only in the
//! specification's figures are inferred from implementations and marked as such in their module.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use linklayer;
