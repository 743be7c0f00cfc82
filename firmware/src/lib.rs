//! What the firmware programs share: an instruction meter, stack painting, a seeded random
//! number generator (`xlink_scenarios::Rng`), output through semihosting without `core::fmt`, and the panic handler.
//!
//! **Instructions.** QEMU runs the programs with `-icount shift=0`: every instruction advances
//! virtual time by one nanosecond. SysTick counts the processor clock, which QEMU's MPS2 AN386
//! model runs at 25 MHz, so one SysTick count is 40 ns of virtual time: 40 instructions. The
//! meter counts SysTick's wraps in its exception handler, so spans of any length are measured.
//! [`Meter::calibrate`] checks the scale on a loop of known length at start-up.
//!
//! **Stack.** [`paint_stack`] fills the free stack below the caller's frame with a pattern;
//! [`peak_stack`] finds the deepest word overwritten since, so the peak includes every frame the
//! engines pushed, interrupts included.
//!
//! **No panics.** With the `panic-check` feature the panic handler calls a function that exists
//! nowhere: if the optimised, link-time-optimised image can still reach a panic, the link
//! fails and names it. The programs are written without indexing, `unwrap` or `core::fmt` for
//! that reason. Without the feature a panic prints "panic" and exits with failure.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use cortex_m_semihosting::debug;

/// SysTick wraps so far (each is 2^24 counts).
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Instructions per SysTick count (see the crate doc).
pub const INSTRUCTIONS_PER_TICK: u64 = 40;

/// SysTick as a free-running counter of instructions.
pub struct Meter {
    syst: SYST,
}

impl Meter {
    /// Starts SysTick on the processor clock, reloading at 2^24 − 1, its wrap interrupt on.
    pub fn start(mut syst: SYST) -> Meter {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(0x00FF_FFFF);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The counter reads 0 until its first reload: wait for it, so time starts at 0.
        while SYST::get_current() == 0 {}
        Meter { syst }
    }

    /// Instructions since [`Meter::start`] (to the 40-instruction count).
    pub fn now(&self) -> u64 {
        let _ = &self.syst;
        loop {
            let wraps = WRAPS.load(Ordering::Relaxed);
            let current = SYST::get_current();
            // A wrap between the two reads shows as a changed count: read again.
            if WRAPS.load(Ordering::Relaxed) == wraps {
                let ticks = (u64::from(wraps) << 24) + u64::from(0x00FF_FFFF - current);
                return ticks * INSTRUCTIONS_PER_TICK;
            }
        }
    }

    /// Instructions a loop of `n` two-instruction iterations took, as measured (about `2 n`
    /// when the scale is right).
    pub fn calibrate(&self, n: u32) -> u64 {
        let t0 = self.now();
        cortex_m::asm::delay(n);
        self.now() - t0
    }

    /// Checks the scale on 100 000 iterations and prints it; ends the program with failure
    /// when it is off by more than 1 % (a QEMU whose SysTick or `-icount` works otherwise would
    /// make every count wrong).
    pub fn check_scale(&self) {
        let measured = self.calibrate(100_000);
        report("calibration: 100000 two-instruction loops measured as ", measured, " instructions");
        if !(198_000..=202_000).contains(&measured) {
            out("calibration: off by more than 1 %, the counts would be wrong\n");
            exit(false);
        }
    }
}

unsafe extern "C" {
    static mut __sheap: u32;
    static mut _stack_start: u32;
}

/// The word the free stack is painted with.
const PAINT: u32 = 0xC0DE_57AC;

/// Paints the stack from the end of static memory up to 256 bytes below the caller's frame;
/// returns the stack pointer it painted below (for [`stack_below`]).
#[inline(never)]
pub fn paint_stack() -> usize {
    let bottom = &raw mut __sheap;
    let sp = cortex_m::register::msp::read() as usize - 256;
    let mut p = bottom;
    while (p as usize) < sp {
        // SAFETY: every word from the end of .bss to below the live stack is free memory that
        // nothing else uses (no heap in these programs); it is written with plain stores.
        unsafe {
            p.write_volatile(PAINT);
            p = p.add(1);
        }
    }
    sp + 256
}

/// The deepest the stack has reached since [`paint_stack`], in bytes from its top.
pub fn peak_stack() -> usize {
    (&raw mut _stack_start as usize).saturating_sub(deepest())
}

/// The deepest the stack has reached since [`paint_stack`], in bytes below `sp` (what
/// [`paint_stack`] returned): what the calls made since needed, the caller's own frame apart.
pub fn stack_below(sp: usize) -> usize {
    sp.saturating_sub(deepest())
}

/// The lowest address written since [`paint_stack`].
fn deepest() -> usize {
    let (bottom, top) = (&raw mut __sheap, &raw mut _stack_start as usize);
    let mut p = bottom;
    // SAFETY: reads of the painted region, below the live stack, word by word.
    while (p as usize) < top && unsafe { p.read_volatile() } == PAINT {
        p = unsafe { p.add(1) };
    }
    p as usize
}

/// Bytes of static memory (.data and .bss): from the start of RAM to the end of .bss.
pub fn static_ram() -> usize {
    &raw mut __sheap as usize - 0x2000_0000
}

/// The seeded generator of the wire's losses, shared with the host benches.
pub use xlink_scenarios::Rng;

/// Writes `s` to the host's standard output.
pub fn out(s: &str) {
    if let Ok(mut o) = cortex_m_semihosting::hio::hstdout() {
        let _ = o.write_all(s.as_bytes());
    }
}

/// Writes `n` in decimal.
pub fn out_num(n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    if let (Some(d), Ok(mut o)) = (digits.get(at..), cortex_m_semihosting::hio::hstdout()) {
        let _ = o.write_all(d);
    }
}

/// Writes `label`, `n` and `unit`, then a new line.
pub fn report(label: &str, n: u64, unit: &str) {
    out(label);
    out_num(n);
    out(unit);
    out("\n");
}

/// The most stack a program may take, at start-up (building its engines) and below `main`
/// while they run: what a firmware task typically has.
pub const STACK_LIMIT: usize = 4096;

/// Prints static RAM, the stack used below `sp` (what [`paint_stack`] returned before the run)
/// and the verdict, then ends the program. It fails if the run did (`ok` false) or if the
/// start-up peak (`startup_stack`) or the running stack passed [`STACK_LIMIT`].
pub fn finish(program: &str, ok: bool, startup_stack: usize, sp: usize) -> ! {
    let running = stack_below(sp);
    report("static RAM: ", static_ram() as u64, " B");
    report("stack while running, below main's frame: ", running as u64, " B");
    let stack_ok = startup_stack <= STACK_LIMIT && running <= STACK_LIMIT;
    if !stack_ok {
        report("FAILED: more stack than the limit of ", STACK_LIMIT as u64, " B");
    }
    out(program);
    out(if ok { ": each exactly once, every byte right\n" } else { ": FAILED\n" });
    exit(ok && stack_ok)
}

/// Ends the program: QEMU exits with status 0 when `ok`, 1 otherwise.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}

#[cfg(feature = "panic-check")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        /// Defined nowhere: linking a call to it means a panic is reachable.
        fn xlink_firmware_reaches_a_panic() -> !;
    }
    // SAFETY: never runs; the link fails first if this call survives optimisation.
    unsafe { xlink_firmware_reaches_a_panic() }
}

#[cfg(not(feature = "panic-check"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    out("panic\n");
    exit(false)
}
