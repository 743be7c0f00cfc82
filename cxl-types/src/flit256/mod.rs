//! The CXL 256B flit of CXL.cachemem (CXL 3.x §4.3; the flit header from §6.2.3.1.1, Tables
//! 6-5 and 6-6), standard and port-based-routing (PBR) variants.
//!
//! | bytes | content |
//! |---|---|
//! | 0–1 | flit header ([`header`]) |
//! | 2–15 | slot 0, the H-slot (14 bytes; a 4-bit SlotFmt and up to 108 bits of messages) |
//! | 16–239 | slots 1–14, G-slots (16 bytes; a 4-bit SlotFmt and up to 124 bits), or data |
//! | 240–241 | CRD: credit return ([`crd`]) |
//! | 242–249 | the 8-byte CRC (the physical layer's; opaque here) |
//! | 250–255 | the 6-byte FEC (the physical layer's; opaque here) |
//!
//! Retry, CRC and FEC belong to the physical layer in 256B mode; this module fills and reads
//! bytes 0–241 ([`pack`]). The latency-optimized layout (an HS-slot split across the halves) is
//! not built.

pub mod crd;
pub mod header;
pub mod pack;
pub mod slot;

/// Bytes of a 256B flit.
pub const FLIT_LEN: usize = 256;
/// The first byte of slot 0.
pub const SLOT0: usize = 2;
/// Bytes of the H-slot.
pub const H_SLOT_LEN: usize = 14;
/// Bytes of a G-slot.
pub const G_SLOT_LEN: usize = 16;
/// Slots in a standard flit (slot 0 and G-slots 1–14).
pub const SLOTS: usize = 15;
/// The first byte of CRD.
pub const CRD: usize = 240;

/// The byte range of slot `i` (0–14) in a standard flit.
pub const fn slot_range(i: usize) -> core::ops::Range<usize> {
    if i == 0 { SLOT0..SLOT0 + H_SLOT_LEN } else { 16 * i..16 * i + G_SLOT_LEN }
}
