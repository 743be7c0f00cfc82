//! Prints any UET packet field by field, from a pcap file or from hex.
//!
//! ```text
//! cargo run --release -p xlink-examples --bin uet-decode -- FILE.pcap [--crc]
//! cargo run --release -p xlink-examples --bin uet-decode -- --hex "11 8c 00 00 ..." [--native-ip] [--crc]
//! cargo run --release -p xlink-examples --bin uet-decode -- --frame-hex "02 00 ..." [--crc]
//! ```
//!
//! From a pcap, frames are taken as UET when they are UDP to port 4793 or IP protocol 253 (native
//! IP, with the entropy header). `--hex` takes the UET bytes themselves (the UDP payload; with
//! `--native-ip`, the IP payload); `--frame-hex` takes a whole Ethernet frame. `--crc` says the
//! packets end with the CRC32C trailer (checked when
//! the outer headers are known).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::process::ExitCode;
use uet_wire::WalkConfig;
use uet_wire::entropy::{DEFAULT_IP_PROTOCOL, Encapsulation};
use xlink_examples::uet_capture::{describe, parse_hex, read_pcap, uet_payload};

const USAGE: &str = "usage: uet-decode FILE.pcap [--crc]\n       uet-decode --hex HEX [--native-ip] [--crc]\n       uet-decode --frame-hex HEX [--crc]";

fn decode_frame(i: usize, frame: &[u8], crc: bool) -> bool {
    match uet_payload(frame, DEFAULT_IP_PROTOCOL) {
        Ok(Some(found)) => {
            println!("frame {i}: {} bytes, UET over {:?}", frame.len(), found.encapsulation);
            decode(found.bytes, WalkConfig { encapsulation: found.encapsulation, crc }, Some(&found.crc_prefix))
        }
        Ok(None) => {
            println!("frame {i}: {} bytes, not UET", frame.len());
            true
        }
        Err(e) => {
            println!("frame {i}: {e}");
            false
        }
    }
}

fn decode(bytes: &[u8], config: WalkConfig, crc_prefix: Option<&[u8]>) -> bool {
    match describe(bytes, config, crc_prefix) {
        Ok(text) => {
            print!("{text}");
            true
        }
        Err(e) => {
            println!("  {e}");
            false
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let crc = args.iter().any(|a| a == "--crc");
    let native = args.iter().any(|a| a == "--native-ip");
    let value_of = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
    let ok = if let Some(text) = value_of("--hex") {
        let encapsulation = if native { Encapsulation::NativeIp } else { Encapsulation::Udp };
        match parse_hex(text) {
            Ok(bytes) => decode(&bytes, WalkConfig { encapsulation, crc }, None),
            Err(e) => {
                eprintln!("{e}");
                false
            }
        }
    } else if let Some(text) = value_of("--frame-hex") {
        match parse_hex(text) {
            Ok(bytes) => decode_frame(1, &bytes, crc),
            Err(e) => {
                eprintln!("{e}");
                false
            }
        }
    } else if let Some(path) = args.iter().find(|a| !a.starts_with("--")) {
        let file = match std::fs::read(path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        match read_pcap(&file) {
            Ok(frames) => frames.iter().enumerate().map(|(i, f)| decode_frame(i + 1, f, crc)).fold(true, |a, b| a & b),
            Err(e) => {
                eprintln!("{path}: {e}");
                false
            }
        }
    } else {
        eprintln!("{USAGE}");
        false
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
