//! Writes a pcap of a UET exchange (the worked PDC example: a five-packet write opening PDC 7 ↔ 19
//! with SYN from PSN 4, a read answered by ACKs with data, and a target-requested close) that
//! Wireshark's UET dissector can read.
//!
//! ```text
//! cargo run --release -p xlink-examples --bin uet-pcap -- [OUT.pcap] [--native-ip] [--crc]
//! ```
//!
//! UDP mode (the default) puts the entropy in the UDP source port and sends to port 4793 with a
//! zero checksum; `--native-ip` uses IP protocol 253 and the 4-byte entropy header; `--crc` ends
//! every packet with the CRC32C trailer (set Wireshark's `uet.has_crc` preference to read it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use uet_wire::entropy::Encapsulation;
use xlink_examples::uet_capture::{exchange, frame, write_pcap};

fn main() {
    let mut path = String::from("uet-exchange.pcap");
    let mut encapsulation = Encapsulation::Udp;
    let mut crc = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--native-ip" => encapsulation = Encapsulation::NativeIp,
            "--crc" => crc = true,
            "-h" | "--help" => {
                println!("usage: uet-pcap [OUT.pcap] [--native-ip] [--crc]");
                return;
            }
            other => path = other.to_string(),
        }
    }
    let packets = exchange();
    let frames: Vec<Vec<u8>> = packets.iter().map(|p| frame(p, encapsulation, crc)).collect();
    for (i, (p, f)) in packets.iter().zip(&frames).enumerate() {
        let dir = if p.from_initiator { "I → T" } else { "T → I" };
        println!("{:>3}  {dir}  {:>5} B  {}", i + 1, f.len(), p.note);
    }
    std::fs::write(&path, write_pcap(&frames, 10)).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    println!("wrote {} packets to {path}", frames.len());
}
