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

    /// True with probability `per_mille` / 1000.
    #[inline]
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.next_u64() % 1000 < per_mille
    }
}
