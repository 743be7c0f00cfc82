//! # ucie-adapter
//!
//! The UCIe 2.0 die-to-die adapter: the layer between a protocol layer (PCIe, CXL, streaming) and
//! the UCIe physical layer, adding CRC and retry, arbitrating stacks, and bringing the link up.
//!
//! ## What this crate implements (module names follow the specification)
//!
//! | module | content | status |
//! |---|---|---|
//! | `flit` | flit formats 1–6 byte by byte (flit header, DLP, CRC positions) for each protocol mapping (UCIe 2.0 §3.3) | planned |
//! | `crc` | the adapter CRC (polynomial 0x8005 over 128-byte zero-extended messages, §3.7) | planned |
//! | `retry` | flit-mode retry: PCIe 6.0 retry with UCIe's deltas (8-bit sequence numbers 1..=255, 127 unacknowledged flits, `REPLAY_TIMEOUT_FLIT_COUNT`; §3.8) on [`linklayer::llr::ReplayBuffer`] | planned |
//! | `link` | adapter link state machine, FDI/RDI handshakes, parameter exchange (AdvCap/FinCap, §3.2, §10) | planned |
//! | `sideband` | sideband packets and message codes (§7) | planned |
//!
//! ## Verified versus project-defined
//!
//! Adapter facts come from the UCIe 2.0 text (`shared/spec/ucie-cxl.md` §1, [V-spec]). The exact
//! bit mapping of the CRC is inferred and corroborated, not from a golden vector; PCIe 6.0 retry
//! rule text is not public. Such points are *project-defined* choices, each in one module.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use linklayer;
