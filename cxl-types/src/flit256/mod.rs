//! The CXL 256B flit of CXL.cachemem (CXL 3.x §4.3; the flit header from §6.2.3.1.1, Tables
//! 6-5 and 6-6), standard and latency-optimized ([`Layout`]), with hierarchy-based or
//! port-based routing (PBR; standard layout only).
//!
//! | bytes | standard | latency-optimized |
//! |---|---|---|
//! | 0–1 | flit header ([`header`]) | flit header |
//! | 2–15 | slot 0, the H-slot (14 bytes) | slot 0, the H-slot |
//! | 16–111 | slots 1–6, G-slots (16 bytes) | slots 1–6 |
//! | 112–121 | slot 7 | slot 7, first 10 bytes |
//! | 122–127 | slot 7 | the even half's CRC |
//! | 128–137 | slot 8 | slot 8, the HS-slot (12 bytes), first 10 bytes |
//! | 138–143 | slot 8 | slot 7, last 6 bytes |
//! | 144–239 | slots 9–14 | slots 9–14 |
//! | 240–241 | CRD: credit return ([`crd`]) | CRD |
//! | 242–243 | the CRC (8 bytes, to 249) | slot 8, last 2 bytes |
//! | 244–255 | the CRC, then the FEC (250–255) | the FEC (244–249), the odd half's CRC (250–255) |
//!
//! Each slot starts with a 4-bit SlotFmt ([`slot`]); data slots have none. Retry, CRC and FEC
//! belong to the physical layer in 256B mode; [`pack`] fills and reads the slots, CRD and the
//! flit header's Flit Type. *Project-defined:* the latency-optimized split is read from the
//! specification's Figure 4-44 as a table (the figure is an image); it is kept in
//! [`Layout::slot_bytes`] alone.

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
/// Slots in a flit (slot 0 and slots 1–14).
pub const SLOTS: usize = 15;
/// The first byte of CRD.
pub const CRD: usize = 240;

/// The byte layout of a 256B flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Layout {
    /// The standard flit: the H-slot and fourteen G-slots in order.
    Standard,
    /// The latency-optimized flit: slot 7 split around the even half's CRC, slot 8 an HS-slot
    /// split between bytes 128–137 and 242–243 (not with PBR).
    LatencyOptimized,
}

impl Layout {
    /// The kind of slot `i`.
    pub const fn slot_kind(self, i: usize) -> slot::SlotKind {
        match (self, i) {
            (_, 0) => slot::SlotKind::H,
            (Layout::LatencyOptimized, 8) => slot::SlotKind::Hs,
            _ => slot::SlotKind::G,
        }
    }

    /// Where slot `i`'s bytes sit: up to two runs `(first byte, length)`, in slot byte order
    /// (a second run of length 0 when the slot is in one piece).
    pub const fn slot_bytes(self, i: usize) -> [(usize, usize); 2] {
        match (self, i) {
            (_, 0) => [(SLOT0, H_SLOT_LEN), (0, 0)],
            (Layout::LatencyOptimized, 7) => [(112, 10), (138, 6)],
            (Layout::LatencyOptimized, 8) => [(128, 10), (242, 2)],
            _ => [(16 * i, G_SLOT_LEN), (0, 0)],
        }
    }

    /// Slot `i`'s bits, least significant first from its first byte.
    pub fn read_slot(self, flit: &[u8; FLIT_LEN], i: usize) -> u128 {
        let mut b = [0u8; 16];
        let mut at = 0;
        for (start, len) in self.slot_bytes(i) {
            if let (Some(dst), Some(src)) = (b.get_mut(at..at + len), flit.get(start..start + len)) {
                dst.copy_from_slice(src);
            }
            at += len;
        }
        u128::from_le_bytes(b)
    }

    /// Writes slot `i`'s bits (those beyond the slot are dropped).
    pub fn write_slot(self, flit: &mut [u8; FLIT_LEN], i: usize, bits: u128) {
        let b = bits.to_le_bytes();
        let mut at = 0;
        for (start, len) in self.slot_bytes(i) {
            if let (Some(dst), Some(src)) = (flit.get_mut(start..start + len), b.get(at..at + len)) {
                dst.copy_from_slice(src);
            }
            at += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of 2–241 (and 242–243 in the latency-optimized flit) belongs to exactly one
    /// slot or to CRD; the rest is the physical layer's.
    #[test]
    fn layouts_cover_each_byte_once() {
        for (layout, phy) in [
            (Layout::Standard, (0..2).chain(242..256).collect::<Vec<_>>()),
            (Layout::LatencyOptimized, (0..2).chain(122..128).chain(244..256).collect::<Vec<_>>()),
        ] {
            let mut owner = [0u8; FLIT_LEN];
            for b in phy.into_iter().chain(CRD..CRD + 2) {
                owner[b] += 1;
            }
            for i in 0..SLOTS {
                let mut n = 0;
                for (start, len) in layout.slot_bytes(i) {
                    for o in &mut owner[start..start + len] {
                        *o += 1;
                    }
                    n += len;
                }
                assert_eq!(n as u32 * 8, layout.slot_kind(i).bits(), "{layout:?} slot {i}");
            }
            assert!(owner.iter().all(|o| *o == 1), "{layout:?}: {owner:?}");
        }
        let mut f = [0u8; FLIT_LEN];
        Layout::LatencyOptimized.write_slot(&mut f, 8, u128::MAX);
        assert_eq!(Layout::LatencyOptimized.read_slot(&f, 8), (1u128 << 96) - 1);
        assert_eq!((f[127], f[128], f[137], f[138], f[242], f[243], f[244]), (0, 0xFF, 0xFF, 0, 0xFF, 0xFF, 0));
    }
}
