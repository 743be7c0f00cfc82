//! The panic check's own test: this program can panic (an index the compiler cannot check at
//! build time), so building it with `--features panic-check` must fail to link. `.ci/run`
//! builds it and fails if the build succeeds.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use xlink_firmware::{exit, report};

#[entry]
fn main() -> ! {
    let table = [1u64, 2, 3];
    // The stack pointer's low bits: a value only known at run time.
    let i = cortex_m::register::msp::read() as usize & 7;
    #[allow(clippy::indexing_slicing)]
    let v = table[i];
    report("value: ", v, "");
    exit(true)
}
