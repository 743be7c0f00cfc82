//! The CXL 68B flit of CXL.cachemem (CXL 3.x §4.2): 528 bits, four 16-byte slots and a
//! 16-bit CRC.
//!
//! | flit bits | bytes | content |
//! |---|---|---|
//! | 511:0 | 0–63 | slot 0 (the header slot: 32-bit flit header, 12 bytes) and slots 1–3 (16 bytes each); or, in an all-data flit, four 16-byte data chunks |
//! | 527:512 | 64–65 | CRC\[15:0\] ([`crc`]) |
//!
//! Flit bit `8n + b` is bit `b` of byte `n`. On a Flex Bus link a 2-byte Protocol ID comes
//! first (68 bytes); over UCIe Format 2 the adapter's flit header and CRC replace those.

pub mod control;
pub mod crc;
pub mod header;
pub mod llr;
pub mod pack;
pub mod slot;
