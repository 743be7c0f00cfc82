//! # ethx-paxi
//!
//! ETH-X scale-up over standard Ethernet (ODCC / CAICT) and its PAXI transaction layer: AXI
//! transactions of GPUs and CPUs carried across Ethernet switches so that a super node acts as one
//! "super GPU".
//!
//! ## What this crate implements
//!
//! | module | content | status |
//! |---|---|---|
//! | `axi` | AXI4/5 encodings (AxLEN, AxSIZE, AxBURST, AxCACHE, AxPROT, RESP, AWATOP) | planned |
//! | `paxi` | the PAXI flit header (10 bits), request/response/APB encodings, AR/B aggregation up to 16, WSTRB elision, AXI-USER DA/VC encoding | planned |
//! | `compress`, `aggregate` | header compression and transaction aggregation (the remedies for ~56 % efficiency of a 128-byte load) | planned |
//! | `ordering` | release consistency: every relaxed write issued before a release completes before the release takes effect, point to point and across GPUs | planned |
//!
//! Link-level reliability (CBFC and LLR) is [`linklayer`]'s.
//!
//! ## Verified versus project-defined
//!
//! Only secondary facts about ETH-X are public (`shared/spec/ualink-ethx.md` §2: the 12-byte PRI
//! header split, CBFC + LLR, efficiency figures); PAXI facts come from vendor documentation quotes.
//! The PRI bit layout, PAXI-over-Ethernet framing, ordering tags and aggregation formats are not
//! public: this crate defines them itself, each marked *project-defined* in its module.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use linklayer;
