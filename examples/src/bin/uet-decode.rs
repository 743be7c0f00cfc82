//! Prints UET packets field by field, from a capture file (pcap or pcapng) or from hex.
//!
//! ```text
//! cargo run --release -p xlink-examples --bin uet-decode -- FILE.pcapng [--crc] [--json]
//! cargo run --release -p xlink-examples --bin uet-decode -- --hex "11 8c 00 00 ..." [--native-ip] [--crc]
//! cargo run --release -p xlink-examples --bin uet-decode -- --frame-hex "02 00 ..." [--crc]
//! ```
//!
//! From a capture, frames are taken as UET when they are UDP to port 4793 (`--port`) or IP
//! protocol 253 (`--ip-proto`, native IP with the entropy header). `--hex` takes the UET bytes
//! themselves (the UDP payload; with `--native-ip`, the IP payload); `--frame-hex` takes a whole
//! Ethernet frame. `--crc` says the packets end with the CRC32C trailer (checked when the outer
//! headers are known). Every header that parsed is printed, then the error (with the byte offset
//! of the header that failed) if one did; reserved bits set are warnings. The exit status is 1 when
//! any packet failed to decode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use clap::Parser;
use std::process::ExitCode;
use uet_wire::WalkConfig;
use uet_wire::entropy::{DEFAULT_IP_PROTOCOL, Encapsulation, UDP_PORT};
use xlink_examples::uet_capture::{parse_hex, read_capture, uet_payload_on};
use xlink_examples::uet_fields::{Decoded, decode, to_json, to_text};

/// Decodes UET packets (Ultra Ethernet Transport: entropy, TSS, PDS, SES) field by field.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// A pcap or pcapng capture of Ethernet frames.
    #[arg(required_unless_present_any = ["hex", "frame_hex"], conflicts_with_all = ["hex", "frame_hex"])]
    file: Option<std::path::PathBuf>,
    /// The UET bytes in hex (the UDP payload; with --native-ip, the IP payload).
    #[arg(long, conflicts_with = "frame_hex")]
    hex: Option<String>,
    /// A whole Ethernet frame in hex.
    #[arg(long)]
    frame_hex: Option<String>,
    /// With --hex: the bytes are an IP payload starting with the entropy header.
    #[arg(long, requires = "hex")]
    native_ip: bool,
    /// Packets end with the CRC32C trailer.
    #[arg(long)]
    crc: bool,
    /// UDP destination port that marks UET.
    #[arg(long, default_value_t = UDP_PORT)]
    port: u16,
    /// IP protocol number that marks native-IP UET.
    #[arg(long = "ip-proto", default_value_t = DEFAULT_IP_PROTOCOL)]
    ip_proto: u8,
    /// Print JSON (one object per packet, one per line) instead of text.
    #[arg(long)]
    json: bool,
}

/// Prints one packet's decode; returns whether it decoded without error.
fn show(args: &Args, frame: Option<(usize, usize)>, info: &str, d: &Decoded) -> bool {
    if args.json {
        let mut v = to_json(d);
        if let Some((i, len)) = frame {
            v["frame"] = serde_json::json!(i);
            v["frame_len"] = serde_json::json!(len);
        }
        v["carried"] = serde_json::json!(info);
        println!("{v}");
    } else {
        match frame {
            Some((i, len)) => println!("frame {i}: {len} bytes, {info}"),
            None => println!("{info}"),
        }
        print!("{}", to_text(d));
    }
    d.error.is_none()
}

fn decode_frame(args: &Args, i: usize, frame: &[u8]) -> bool {
    match uet_payload_on(frame, args.port, args.ip_proto) {
        Ok(Some(found)) => {
            let config = WalkConfig { encapsulation: found.encapsulation, crc: args.crc };
            let d = decode(found.bytes, config, found.entropy, Some(&found.crc_prefix));
            let info = format!("UET over {}", encapsulation_name(found.encapsulation));
            show(args, Some((i, frame.len())), &info, &d)
        }
        Ok(None) => {
            show(args, Some((i, frame.len())), "not UET", &Decoded::default());
            true
        }
        Err(e) => {
            let d = Decoded { error: Some((0, e)), ..Decoded::default() };
            show(args, Some((i, frame.len())), "not decoded", &d)
        }
    }
}

fn encapsulation_name(e: Encapsulation) -> &'static str {
    match e {
        Encapsulation::Udp => "UDP",
        Encapsulation::NativeIp => "native IP",
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let ok = if let Some(text) = &args.hex {
        let encapsulation = if args.native_ip { Encapsulation::NativeIp } else { Encapsulation::Udp };
        match parse_hex(text) {
            Ok(bytes) => {
                let d = decode(&bytes, WalkConfig { encapsulation, crc: args.crc }, None, None);
                show(&args, None, &format!("{} bytes of UET", bytes.len()), &d)
            }
            Err(e) => {
                eprintln!("{e}");
                false
            }
        }
    } else if let Some(text) = &args.frame_hex {
        match parse_hex(text) {
            Ok(bytes) => decode_frame(&args, 1, &bytes),
            Err(e) => {
                eprintln!("{e}");
                false
            }
        }
    } else if let Some(path) = &args.file {
        let frames = std::fs::read(path).map_err(|e| e.to_string()).and_then(|b| read_capture(&b));
        match frames {
            Ok(frames) => {
                let mut all = true;
                for (i, f) in frames.iter().enumerate() {
                    all &= decode_frame(&args, i + 1, f);
                }
                all
            }
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                false
            }
        }
    } else {
        false
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
