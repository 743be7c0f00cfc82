//! The UALink transaction layer (UALink 1.0 §5): 64-byte TL flits.
//!
//! * [`field`]: the control-half-flit fields (flow control/NOP, requests, responses).
//!
//! Still to come (issue 5): control half-flits and footprints, data, message and AuthTag
//! half-flits, the half-flit sequencing packer and unpacker, address compression, TL credits.

pub mod field;

pub use field::{
    CompressedCmd, CompressedReadResponse, CompressedRequest, CompressedResponse, ControlField, CreditReturn,
    CreditTarget, FlowControl, UncompressedRequest, UncompressedResponse,
};
