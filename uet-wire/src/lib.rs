//! # uet-wire
//!
//! Ultra Ethernet Transport (UE Specification 1.0, 11 Jun 2025, with errata 1.0.1–1.0.3 as public
//! implementations reflect them): the scale-out transport for AI and HPC over plain Ethernet/IP.
//!
//! ## What this crate implements, by layer (module names follow the specification)
//!
//! | sub-layer | content | status |
//! |---|---|---|
//! | encapsulation / [`entropy`] | UDP destination port 4793 with the entropy value in the UDP source port; the 4-byte entropy header of native-IP mode. The crate starts at the UDP payload or the entropy header; outer Ethernet/IP/UDP are the embedder's. | codec done |
//! | [`tss`] | Transport Security Sublayer: 12/16-byte header (type, SP, AN, SDI, SSI, TSC = 16-bit epoch ‖ 48-bit counter); AES-256-GCM with 16-byte ICV and key derivation | header done; crypto planned |
//! | [`pds`] | Packet Delivery Sublayer: the 2-byte prologue, every packet type, ACK/SACK, NACK codes, control packets; the PDC state machines for RUD, ROD, RUDI and UUD | headers done; PDC engine in [`pdc`]: initiator and target state machines, PSN windows, SACK, ACK coalescing, loss recovery, close, secure start PSN; message layer begun in [`msg`] (segmentation, message order); the `Endpoint`, RUDI and UUD to come (issue 4) |
//! | [`ses`] | Semantic Sublayer: standard/medium/small requests, responses, opcodes, return codes, atomic, CAS and rendezvous extension headers | done |
//! | [`packet`] | the walker (entropy → TSS or PDS → SES → payload → ICV or CRC32C) and the builder | done |
//! | `cms`, `lb` | NSCC and RCCC congestion control, REPS load balancing | planned |
//!
//! The UE link layer (LLR §5.1, CBFC §5.2) lives in [`linklayer`], shared with the other links.
//!
//! ## Three layers per header
//!
//! * **Raw layouts** (`RequestRaw`, `CommonRaw`, ...): zerocopy structs of the wire bytes, with no
//!   checks at all.
//! * **Reprs** (`Request`, `StandardRequest`, ...): owned `Copy` values with `parse`,
//!   `buffer_len` and `emit`; every reserved bit and codepoint is checked, and
//!   `parse(emit(r)) == r`.
//! * **Validated views** on the receive fast path ([`pds::RequestView`], [`ses::StandardView`]):
//!   one pass makes every check the Repr's `parse` makes (that parse is built on the view), then
//!   accessors read the borrowed bytes without failing and without copying the header. A failed
//!   check takes a cold path that names the field. [`parse_request_std`] returns both views of
//!   the commonest data packet (a RUD/ROD request with a standard SES request) from one length
//!   check, every field tested as masks on whole words.
//!
//! ## Verified versus project-defined
//!
//! The specification PDF text was not a direct source. Header layouts tagged \[A\] in
//! `shared/spec/uet.md` (Wireshark `packet-uet.c`, UEC `uet-ref-prov` and XDP2 agreeing
//! byte for byte) are implemented as the wire format. Facts from one source (\[B\]) are used with a
//! citation; conflicts (\[X\]) and gaps follow the digest's recommended defaults and are marked
//! *project-defined* in the module that implements them.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "arbitrary")]
extern crate std;

pub mod entropy;
mod error;
pub mod msg;
pub mod packet;
pub mod pdc;
pub mod pds;
pub mod ses;
pub mod tss;

pub use error::Error;
pub use linklayer;
pub use packet::{Body, PacketRepr, UetPacket, WalkConfig, parse_request_std};

#[cfg(test)]
mod tests {
    /// Sizes of the owned Reprs (they are returned by value from `parse`, so they are kept in view).
    #[test]
    fn repr_sizes() {
        use core::mem::size_of;
        let sizes = [
            ("PdsHeader", size_of::<crate::pds::PdsHeader>()),
            ("SesHeader", size_of::<crate::ses::SesHeader>()),
            ("StandardRequest", size_of::<crate::ses::StandardRequest>()),
            ("Extension", size_of::<crate::ses::Extension>()),
            ("Error", size_of::<crate::Error>()),
        ];
        for (name, size) in sizes {
            std::println!("{name}: {size} B");
        }
        assert!(sizes.iter().all(|&(_, s)| s <= 160));
    }
}
