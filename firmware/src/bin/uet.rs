//! The UET workload of `xlink_scenarios::uet` on a Cortex-M4F: two endpoints (`Endpoint<8, 8,
//! 32>`, 16 shared message-order entries, no extension headers, one return direction and one
//! request direction) joined by an in-memory wire that
//! carries one packet at a time and loses 1 % of them: 200 messages of 64 B, then 200 of 1 KiB,
//! from A to B; first with PDCs closed as soon as they are idle (the default), then again with
//! the endpoints configured afresh in place and PDCs kept open. Every byte placed is checked,
//! every message must arrive exactly once. Prints what the program can see (static RAM, peak
//! stack, instructions per message, and the floor: a copy plus CRC-32C of the same bytes);
//! `.ci/run` adds flash from the ELF. `cargo bench -p xlink-scenarios` times the same workload on
//! the host.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use uet_wire::linklayer::Instant;
use uet_wire::msg::MAX_HEADER_LEN;
use xlink_firmware::{Meter, Rng, exit, finish, out, paint_stack, peak_stack, report};
use xlink_scenarios::uet::{Ep, MESSAGES, MTU, Packet, config, floor, phase};

#[entry]
fn main() -> ! {
    // Both all-zero constants: they live in `.bss` (no flash, no start-up copy), and the
    // endpoints are configured where they lie.
    static mut EPS: [Ep; 2] = [Ep::EMPTY; 2];
    static mut BUF: Packet = [0; MAX_HEADER_LEN + MTU as usize];
    let Some(core) = cortex_m::Peripherals::take() else { exit(false) };
    let meter = Meter::start(core.SYST);
    meter.check_scale();
    let _ = paint_stack();
    let t0 = meter.now();
    let (eps, buf) = (EPS, BUF);
    for (i, ep) in eps.iter_mut().enumerate() {
        ep.init(config(i, true), i as u64 + 1);
    }
    report("start-up: ", meter.now() - t0, " instructions");
    let startup_stack = peak_stack();
    report("start-up peak stack: ", startup_stack as u64, " B");
    // From here on: the stack the running engines need, below this frame.
    let sp = paint_stack();
    let (mut now, mut rng, mut ok) = (Instant::ZERO, Rng::new(1), true);
    for close_when_idle in [true, false] {
        if close_when_idle {
            out("PDCs closed when idle (the default)\n");
        } else {
            // Configured afresh where they lie, PDCs kept open from here on.
            for (i, ep) in eps.iter_mut().enumerate() {
                ep.init(config(i, false), i as u64 + 1);
            }
            out("PDCs kept open\n");
        }
        for len in [64u32, 1024] {
            let t0 = meter.now();
            let o = phase(eps, buf, &mut now, &mut rng, len);
            let spent = meter.now() - t0;
            report("  message bytes: ", u64::from(len), "");
            report("    delivered: ", u64::from(o.delivered), "");
            report("    instructions per message: ", spent / u64::from(MESSAGES), "");
            ok &= o.ok();
            if close_when_idle {
                // The floor: copy the message's bytes and CRC-32C them, as sending and receiving must.
                let t0 = meter.now();
                let crc = floor(len);
                report(
                    "    floor (copy + CRC-32C), instructions per message: ",
                    (meter.now() - t0) / u64::from(MESSAGES),
                    "",
                );
                core::hint::black_box(crc);
            }
        }
    }
    finish("uet", ok, startup_stack, sp)
}
