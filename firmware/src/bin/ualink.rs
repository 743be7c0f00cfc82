//! Two UALink accelerator ports (`UpliPort` with its defaults) in one Cortex-M4F, joined by a
//! wire that loses 1 % of flits each way: 400 writes of 64 B from port 1 to port 2, each
//! answered. Every byte written is checked, every write must complete exactly once. Prints static
//! RAM, peak stack, instructions per write and the floor (a copy plus the DL CRC of one
//! 640-byte flit per flit time each way); `.ci/run` adds flash from the ELF.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use ualink_flit::dl::{FLIT_LEN, Transmitted};
use ualink_flit::port::{Event, PortConfig, UpliPort};
use ualink_flit::upli::{Request, Status};
use xlink_firmware::{Meter, Rng, exit, finish, paint_stack, peak_stack, report};

/// Writes in the run.
const WRITES: u32 = 400;

/// The bytes of write `index`.
fn data(index: u32) -> [u8; 64] {
    let mut d = [0u8; 64];
    for (i, b) in d.iter_mut().enumerate() {
        *b = (index as usize * 31 + i) as u8;
    }
    d
}

/// What the run found.
struct Outcome {
    completed: u32,
    wrong: u32,
    flit_times: u64,
}

/// One flit time one way: what `from` sends reaches `to`, or is lost (1 %).
fn carry(from: &mut UpliPort, to: &mut UpliPort, now: u64, flit: &mut [u8; FLIT_LEN], rng: &mut Rng) {
    match from.poll_transmit(now, flit) {
        Transmitted::Flit { .. } if rng.chance(10) => _ = to.handle_lost(),
        Transmitted::Flit { .. } => _ = to.handle_flit(flit),
        Transmitted::Idle => to.handle_idle(),
    }
}

fn run(ports: &mut [UpliPort; 2], rng: &mut Rng) -> Outcome {
    let mut o = Outcome { completed: 0, wrong: 0, flit_times: 0 };
    let mut issued = 0u32;
    let mut wire = [[0u8; FLIT_LEN]; 2];
    let [a, b] = ports;
    for now in 0..2_000_000u64 {
        o.flit_times = now;
        while issued < WRITES {
            let Ok(req) = Request::write(u64::from(issued) * 64, 64) else { return o };
            match a.request(req.to_acc(2), &data(issued)) {
                Ok(_) => issued += 1,
                Err(_) => break,
            }
        }
        let [to_b, to_a] = &mut wire;
        carry(a, b, now, to_b, rng);
        carry(b, a, now, to_a, rng);
        for p in [&mut *a, &mut *b] {
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
        }
        while let Some(ev) = b.poll_event() {
            if let Event::Request { handle, req, data: d } = ev {
                if Some(d.bytes()) != data((req.addr / 64) as u32).get(..) {
                    o.wrong += 1;
                }
                if b.respond(handle, Status::Okay, &[]).is_err() {
                    o.wrong += 1;
                }
            }
        }
        while let Some(ev) = a.poll_event() {
            match ev {
                Event::Response { status: Status::Okay, .. } => o.completed += 1,
                Event::Link { .. } | Event::Service(_) => {}
                _ => o.wrong += 1,
            }
        }
        if o.completed == WRITES {
            break;
        }
    }
    o
}

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
    let mut ok = ports.iter_mut().zip([1, 2]).all(|(p, acc)| p.init(PortConfig::new(acc)).is_ok() && p.start().is_ok());
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
    ok &= o.completed == WRITES && o.wrong == 0;
    // The floor: per flit time, each port copies a 640-byte flit and runs the DL CRC over it.
    let mut flits = [[0u8; FLIT_LEN]; 2];
    let t0 = meter.now();
    let mut crc = 0u8;
    for i in 0..1000u32 {
        let [x, y] = &mut flits;
        *x = *y;
        if let Some(b) = x.first_mut() {
            *b = i as u8;
        }
        crc ^= ualink_flit::dl::crc::flit_crc(x).iter().fold(0, |a, b| a ^ b);
        *y = *x;
        crc ^= ualink_flit::dl::crc::flit_crc(y).iter().fold(0, |a, b| a ^ b);
    }
    report("  floor (two flit copies + CRCs), instructions per flit time: ", (meter.now() - t0) / 1000, "");
    core::hint::black_box(crc);
    finish("ualink", ok, startup_stack, sp)
}
