//! The UALink transaction layer (UALink 1.0 §5): 64-byte TL flits.
//!
//! * [`field`]: the control-half-flit fields (flow control/NOP, requests, responses).
//! * [`half`]: control half-flits: fields at legal footprints, NOPs elsewhere.
//!
//! Still to come (issue 5): data, message and AuthTag half-flits, the half-flit sequencing packer
//! and unpacker, address compression, TL credits.

pub mod field;
pub mod half;

pub use field::{
    CompressedCmd, CompressedReadResponse, CompressedRequest, CompressedResponse, ControlField, CreditReturn,
    CreditTarget, FlowControl, UncompressedRequest, UncompressedResponse,
};
pub use half::ControlHalfFlit;
