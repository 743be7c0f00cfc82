//! The UALink transaction layer (UALink 1.0 §5): 64-byte TL flits between two TLs.
//!
//! Source: chapter 5 of the UALink_200 Rev 1.0 Specification, in the public GitHub repository
//! `VarunMusham/UALink-Docs`, file `Chapters/5_Transaction_Layer_TL.pdf` (link down: chapter 3,
//! `Chapters/3_Reliability_Availability_and_Serviceability_RAS.pdf`).
//!
//! * [`field`]: the control-half-flit fields (flow control/NOP, requests, responses).
//! * [`half`]: control half-flits: fields at legal footprints, NOPs elsewhere.
//! * [`flit`]: the TL flit with its message bits; message, AuthTags and byte-enable half-flits.
//! * [`response`]: read and write responses as compressed or uncompressed fields.
//! * [`compress`]: address compression with lockstep Tx/Rx address caches.
//! * [`credit`]: TL credits per class and pool/VC.
//! * [`sequence`]: the half-flit sequencing rules and source rate limits, shared by:
//! * [`pack`]: UPLI requests, responses and data beats into TL flits, and
//! * [`unpack`]: TL flits back into requests, responses, credits and data.

pub mod compress;
pub mod credit;
pub mod field;
pub mod flit;
pub mod half;
pub mod pack;
pub mod response;
pub mod sequence;
pub mod unpack;

pub use field::{
    CompressedCmd, CompressedReadResponse, CompressedRequest, CompressedResponse, ControlField, CreditReturn,
    CreditTarget, FlowControl, UncompressedRequest, UncompressedResponse,
};
pub use flit::{Message, MessageType, TlFlit};
pub use half::ControlHalfFlit;
pub use pack::{Beat, BeatSource, Dropped, PackStats, Packer, PackerConfig};
pub use response::Response;
pub use unpack::{RxHalf, RxItem, Unpacked, Unpacker};

#[cfg(test)]
mod tests;
