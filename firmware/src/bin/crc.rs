//! Every protocol CRC in the workspace that has a choice of tables (linklayer's CtlOS CRC-8 has
//! one 256 B table in every build), on a Cortex-M4F, with the backend this build selects (the
//! default slice-by-16 tables, or one table with `--features small-crc`): instructions per
//! unit each protocol checks, averaged over 200 calls on changing bytes, and the bytes of tables
//! the CRC links. The results go to FIRMWARE.md's CRC table; `.ci/run` runs both builds.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use xlink_firmware::{Meter, exit, out, report};

/// Calls per CRC.
const CALLS: u64 = 200;

/// The tables a CRC links with the build's backend: sixteen 256-entry tables of its width, or
/// one.
const fn tables(width_bytes: usize) -> usize {
    let n = if cfg!(feature = "small-crc") { 1 } else { 16 };
    n * 256 * width_bytes
}

/// Runs `f` over `data` [`CALLS`] times, a different first word each time, and prints its
/// instructions per call beside `what` and its tables.
fn measure(meter: &Meter, what: &str, table_bytes: usize, data: &mut [u8], mut f: impl FnMut(&mut [u8]) -> u32) {
    let mut acc = 0u32;
    let t0 = meter.now();
    for i in 0..CALLS as u32 {
        if let Some(head) = data.first_chunk_mut::<4>() {
            *head = i.to_le_bytes();
        }
        acc ^= f(data);
    }
    let spent = meter.now() - t0;
    core::hint::black_box(acc);
    out(what);
    report(": ", spent / CALLS, " instructions per call");
    report("  tables: ", table_bytes as u64, " B");
}

#[entry]
fn main() -> ! {
    static mut BUF: [u8; 4096] = [0; 4096];
    let Some(core) = cortex_m::Peripherals::take() else { exit(false) };
    let meter = Meter::start(core.SYST);
    meter.check_scale();
    let data: &mut [u8; 4096] = BUF;
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i * 7 + (i >> 8)) as u8;
    }
    out(if cfg!(feature = "small-crc") {
        "backend: one table (small-crc)\n"
    } else {
        "backend: slice-by-16 tables (default)\n"
    });
    // UET: the CRC-32C trailer over a 1 KiB packet.
    measure(&meter, "UET CRC-32C, 1 KiB packet", tables(4), &mut data[..1024], |d| uet_wire::crc32c::crc32c(&[], d));
    // UALink: the DL flit CRC over a 640-byte flit; every build also links the one-table
    // correction term (1 KiB).
    let ualink_tables = if cfg!(feature = "small-crc") { 1024 } else { tables(4) + 1024 };
    measure(&meter, "UALink DL flit CRC, 640-byte flit", ualink_tables, &mut data[..640], |d| {
        d.first_chunk::<640>().map_or(0, |f| u32::from_le_bytes(ualink_flit::dl::crc::flit_crc(f)))
    });
    // UCIe: both adapter CRCs of a standard 256B flit (format 3), sealed in place.
    let mut sealed = true;
    measure(&meter, "UCIe adapter CRC, standard 256B flit (both CRCs)", tables(2), &mut data[..256], |flit| {
        sealed &= ucie_adapter::crc::seal(ucie_adapter::crc::Format::Standard256EndHeader, flit).is_ok();
        flit.last_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c))
    });
    // CXL: the 68B flit's CRC-16 over its 64 bytes.
    measure(&meter, "CXL 68B flit CRC-16, 64 bytes", tables(2), &mut data[..64], |d| {
        d.first_chunk::<64>().map_or(0, |f| u32::from(cxl_types::flit68::crc::crc(f)))
    });
    // ETH-X: the ICRC over a 1 KiB RH, payload and pad.
    measure(&meter, "ETH-X ICRC, 1 KiB", tables(4), &mut data[..1024], |d| ethx_paxi::frame::icrc_of(d));
    out(if sealed { "crc: done\n" } else { "crc: FAILED (a UCIe flit did not seal)\n" });
    exit(sealed)
}
