//! Support code for the runnable xlink programs and the workspace's seeded simulations.
//!
//! This crate is not a library crate of the project: it runs on `std`, may allocate, and stops
//! loudly (panics) when a simulated invariant breaks, because that is what a test harness is for.
//!
//! * [`link_sim`]: one full-duplex link, both ends running UE LLR + CBFC from `linklayer`, over a
//!   wire that corrupts frames and loses or corrupts control ordered sets.
//! * [`fabric`], [`pdc_sim`], [`endpoint_sim`]: a sprayed multipath fabric, and UET PDCs and
//!   endpoints simulated over it.
//! * [`cms_sim`]: UET congestion management (`uet_wire::cms`) and load balancing
//!   (`uet_wire::lb`) over a fabric with switch queues, ECN marking and trimming.
//! * [`uet_capture`]: a UET exchange framed as Ethernet/IPv4/UDP, and pcap/pcapng files.
//! * [`uet_fields`]: UET packets as named fields, text and JSON (the `uet-decode` model).
//! * [`ethx_efficiency`]: wire bytes per useful byte of AXI loads and stores in each ETH-X
//!   framing, from `ethx-paxi`'s encodings (the `ethx-efficiency` table).
//! * [`ethx_sim`]: two GPUs over a lossy Ethernet link running the whole `ethx-paxi` stack
//!   (compression, aggregation, RC Link go-back-N, PRI frames with an ICRC).
//! * [`ucie_sim`]: two chiplets' UCIe D2D adapters over a simulated physical layer (sideband
//!   and a mainband with bit errors): link-up, parameter exchange, retry, retrain.
//! * [`ualink_sim`]: one UALink 200 link, both ports running the whole `ualink-flit` stack (TL,
//!   DL, replay) over a wire with bit errors, with credit starvation.
//! * [`ualink_port_sim`]: the same link with each port one `UpliPort`: loads, stores and atomics
//!   both ways over a lossy wire, with link downs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

pub mod cms_endpoint_sim;
pub mod cms_sim;
pub mod cxl_sim;
pub mod endpoint_sim;
pub mod ethx_efficiency;
pub mod ethx_sim;
pub mod fabric;
pub mod link_sim;
pub mod pdc_sim;
pub mod ualink_port_sim;
pub mod ualink_sim;
pub mod ucie_sim;
pub mod uet_capture;
pub mod uet_fields;
