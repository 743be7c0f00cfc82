//! The UALink data link layer (UALink 1.0 §6): 640-byte DL flits.
//!
//! Source: chapter 6 of the UALink_200 Rev 1.0 Specification, in the public GitHub repository
//! `VarunMusham/UALink-Docs`, file `Chapters/6_Data_Link.pdf`.
//!
//! * [`layout`]: where each byte of the flit sits (Figure 6-4).
//! * [`header`]: the 24-bit flit header and the segment headers.
//! * [`crc`]: the flit CRC.
//! * [`flit`]: framing and deframing.
//! * [`message`]: the DL messages of the alt sectors (§6.4).
//! * [`packing`]: TL flits and alt sectors into DL flit payloads and back (§6.3.3–6.3.5).
//! * [`seq`]: the replay sequence space and its acceptance windows (§6.6).
//! * [`link`]: the data link of one port: link-level replay (§6.6) and the link states (§6.7).
//! * [`service`]: the DL message service of a port (§6.4): arbitration, requests and their
//!   answers, channel negotiation, the UART stream.
//! * [`pacing`]: transmitter pacing to the link partner's TL rate (§6.5).

pub mod crc;
pub mod flit;
pub mod header;
pub mod layout;
pub mod link;
pub mod message;
pub mod pacing;
pub mod packing;
pub mod seq;
pub mod service;

pub use flit::{DlFlit, deframe, frame};
pub use header::{FlitHeader, MBits, SegmentHeader};
pub use layout::{FLIT_LEN, PAYLOAD_LEN};
pub use link::{DataLink, DataLink32, DataLink64, DataLink128, DlConfig, LinkState, Received, Stall, Transmitted};
pub use message::DlMessage;
pub use packing::{Delivered, TlSource};
