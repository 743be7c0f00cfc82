//! The workloads of the firmware programs (`firmware/`, see FIRMWARE.md), in a crate that builds
//! for a host as well as for the Cortex-M4F: the same code runs under QEMU there, counted in
//! instructions, and under criterion here (`cargo bench -p xlink-scenarios`), timed beside the
//! same floor.
//!
//! * [`uet`]: two UET endpoints joined by a wire that carries one packet at a time and loses 1 %
//!   of them; 200 messages of one size from A to B.
//! * [`ualink`]: two UALink accelerator ports joined by a wire that loses 1 % of flits each way;
//!   400 writes of 64 B from port 1 to port 2, each answered.
//!
//! Each checks every byte placed and that every message arrives exactly once, and each has its
//! floor: what the same bytes cost at least (a copy plus the CRC). The code uses no indexing,
//! `unwrap` or `core::fmt`, so a firmware image built from it links no panic.
//!
//! Every function is `#[inline]`, so the program that calls it compiles it, and the engine code
//! it instantiates, in its own crate. Compiled here instead, then linked, the firmware's UET
//! program at `opt-level = "z"` took 16 % more instructions per message and 750 B more stack
//! with the same source: the pre-link optimisation of this crate's copies differs.
#![no_std]
#![forbid(unsafe_code)]

pub mod ualink;
pub mod uet;

/// A seeded xorshift64* generator: the wire's losses, the same on every target.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded with `seed` (0 is taken as 1: the generator's state is never zero).
    #[inline]
    pub const fn new(seed: u64) -> Rng {
        Rng(if seed == 0 { 1 } else { seed })
    }

    /// The next value.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// True with probability `per_mille` / 1000 (never for 0, always from 1000 on): the top 32
    /// bits scaled to `0..1000` by a multiply and a shift (a 64-bit remainder is a library call
    /// of some hundred instructions on a 32-bit core, which would count as the engines' work).
    #[inline]
    pub fn chance(&mut self, per_mille: u64) -> bool {
        ((self.next_u64() >> 32) * 1000) >> 32 < per_mille
    }
}

/// Whether `a` and `b` hold the same bytes, compared four at a time: `==` on slices calls
/// `memcmp`, which compares a byte at a time on a Cortex-M (7 instructions a byte), and the
/// harness's check of every placed byte would otherwise weigh on the count like the engines'
/// own work.
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let (mut aw, mut bw) = (a.chunks_exact(4), b.chunks_exact(4));
    // (The tails, at most three bytes and as long as each other, folded into words: `==` on
    // slices is the `memcmp` call again.)
    a.len() == b.len()
        && tail(aw.remainder()) == tail(bw.remainder())
        && aw.all(|x| bw.next().is_some_and(|y| word(x) == word(y)))
}

/// Up to four bytes as one word.
#[inline]
fn tail(x: &[u8]) -> u32 {
    x.iter().fold(0, |w, &b| w << 8 | u32::from(b))
}

/// Four bytes as one word (any order: both sides are read alike).
#[inline]
fn word(x: &[u8]) -> Option<u32> {
    x.try_into().ok().map(u32::from_ne_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_sees_every_byte_and_the_length() {
        let a: [u8; 11] = core::array::from_fn(|i| i as u8);
        for len in 0..=a.len() {
            assert!(same_bytes(&a[..len], &a[..len]));
            for i in 0..len {
                let mut b = a;
                b[i] ^= 0x40;
                assert!(!same_bytes(&a[..len], &b[..len]), "byte {i} of {len}");
            }
            assert!(len == 0 || !same_bytes(&a[..len], &a[..len - 1]));
            // Lengths four apart have the same tail length.
            if len + 4 <= a.len() {
                assert!(!same_bytes(&a[..len], &a[..len + 4]) && !same_bytes(&a[..len + 4], &a[..len]));
            }
        }
    }

    #[test]
    fn chance_is_per_mille() {
        let mut rng = Rng::new(7);
        let hits = (0..100_000).filter(|_| rng.chance(10)).count();
        assert!((900..1100).contains(&hits), "{hits} of 100 000 at 1 %");
        assert!(!(0..1000).any(|_| rng.chance(0)) && (0..1000).all(|_| rng.chance(1000)));
    }
}
