//! The UALink workload of `xlink_scenarios::ualink` on a Cortex-M4F: two accelerator ports
//! (`UpliPort` with its defaults) joined by a wire that loses 1 % of flits each way, 400 writes of
//! 64 B from port 1 to port 2, each answered. Every byte written is checked, every write must
//! complete exactly once. Prints static RAM, peak stack, instructions per write and the floor (a
//! copy plus the DL CRC of one 640-byte flit per flit time each way); `.ci/run` adds flash from
//! the ELF. `cargo bench -p xlink-scenarios` times the same workload on the host.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use ualink_flit::port::UpliPort;
use xlink_firmware::{Meter, Rng, exit, finish, paint_stack, peak_stack, report};
use xlink_scenarios::ualink::{WRITES, floor, run, start};

#[entry]
fn main() -> ! {
    // An all-zero constant: the ports (with their TxReplay storage) live in `.bss` (no flash, no
    // start-up copy) and are configured where they lie.
    static mut PORTS: [UpliPort; 2] = [UpliPort::EMPTY; 2];
    let Some(core) = cortex_m::Peripherals::take() else { exit(false) };
    let meter = Meter::start(core.SYST);
    meter.check_scale();
    let _ = paint_stack();
    let t0 = meter.now();
    let ports = PORTS;
    let mut ok = start(ports);
    report("start-up: ", meter.now() - t0, " instructions");
    let startup_stack = peak_stack();
    report("start-up peak stack: ", startup_stack as u64, " B");
    // From here on: the stack the running engines need, below this frame.
    let sp = paint_stack();
    let mut rng = Rng::new(1);
    let t0 = meter.now();
    let o = run(ports, &mut rng);
    let spent = meter.now() - t0;
    report("writes of 64 B completed: ", u64::from(o.completed), "");
    report("  flit times: ", o.flit_times, "");
    report("  instructions per write: ", spent / u64::from(WRITES), "");
    report("  instructions per flit time (both ports): ", spent / o.flit_times.max(1), "");
    ok &= o.ok();
    // The floor: per flit time, each port copies a 640-byte flit and runs the DL CRC over it.
    let t0 = meter.now();
    let crc = floor(1000);
    report("  floor (two flit copies + CRCs), instructions per flit time: ", (meter.now() - t0) / 1000, "");
    core::hint::black_box(crc);
    finish("ualink", ok, startup_stack, sp)
}
