//! Writes a capture of a UET exchange produced by the `uet-wire` PDC engine (the worked PDC
//! example: a five-packet write opening PDC 7 ↔ 19 with SYN from PSN 4, then a target-requested
//! close) that Wireshark's UET dissector can read.
//!
//! ```text
//! cargo run --release -p xlink-examples --bin uet-pcap -- [OUT.pcap] [--pcapng] [--native-ip] [--crc]
//! ```
//!
//! UDP mode (the default) puts the entropy in the UDP source port and sends to port 4793 with a
//! zero checksum; `--native-ip` uses IP protocol 253 and the 4-byte entropy header; `--crc` ends
//! every packet with the CRC32C trailer (set Wireshark's `uet.has_crc` preference to read it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use clap::Parser;
use uet_wire::entropy::Encapsulation;
use xlink_examples::uet_capture::{exchange, frame, write_pcap, write_pcapng};

/// Writes a capture of the worked UET PDC exchange, as the library's PDC engine produces it.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Output file.
    #[arg(default_value = "uet-exchange.pcap")]
    out: std::path::PathBuf,
    /// Write pcapng instead of classic pcap.
    #[arg(long)]
    pcapng: bool,
    /// Native IP (protocol 253, entropy header) instead of UDP port 4793.
    #[arg(long)]
    native_ip: bool,
    /// End every packet with the CRC32C trailer.
    #[arg(long)]
    crc: bool,
}

fn main() {
    let args = Args::parse();
    let encapsulation = if args.native_ip { Encapsulation::NativeIp } else { Encapsulation::Udp };
    let packets = exchange();
    let frames: Vec<Vec<u8>> = packets.iter().map(|p| frame(p, encapsulation, args.crc)).collect();
    for (i, (p, f)) in packets.iter().zip(&frames).enumerate() {
        let dir = if p.from_initiator { "I → T" } else { "T → I" };
        println!("{:>3}  {dir}  {:>5} B  {}", i + 1, f.len(), p.note);
    }
    let file = if args.pcapng { write_pcapng(&frames, 10) } else { write_pcap(&frames, 10) };
    let path = args.out.display();
    std::fs::write(&args.out, file).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    println!("wrote {} packets to {path}", frames.len());
}
