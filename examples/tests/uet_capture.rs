//! The `uet-pcap` exchange and the `uet-decode` path: the capture is what the PDC engine emits,
//! every packet goes through Ethernet/IPv4/UDP framing, a pcap or pcapng file, and back through
//! the UET walker unchanged; the decoder shows every header that parsed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::Instant;
use uet_wire::entropy::{DEFAULT_IP_PROTOCOL, Encapsulation, UDP_PORT};
use uet_wire::pdc::{Initiator, InitiatorState, PdcConfig, StartPolicy, Target, TargetState, TargetTx};
use uet_wire::pds::{Ack, ControlType, DeliveryMode, NextHeader, PdcDest, PdsHeader, RequestFlags};
use uet_wire::ses::{ResponseOpcode, ReturnCode, SesFlags, SesHeader};
use uet_wire::{Body, UetPacket, WalkConfig};
use xlink_examples::uet_capture::{
    INITIATOR, START_PSN, TARGET, exchange, frame, hex, parse_hex, read_capture, uet_bytes, uet_payload,
    uet_payload_on, write_pcap, write_pcapng,
};
use xlink_examples::uet_fields::{decode, to_json, to_text};

#[test]
fn capture_round_trip_in_both_encapsulations_and_formats() {
    let packets = exchange();
    for (encapsulation, crc, ng) in [
        (Encapsulation::Udp, false, false),
        (Encapsulation::NativeIp, false, true),
        (Encapsulation::Udp, true, true),
        (Encapsulation::NativeIp, true, false),
    ] {
        let frames: Vec<Vec<u8>> = packets.iter().map(|p| frame(p, encapsulation, crc)).collect();
        let file = if ng { write_pcapng(&frames, 10) } else { write_pcap(&frames, 10) };
        let read = read_capture(&file).unwrap();
        assert_eq!(read, frames);
        for (p, f) in packets.iter().zip(&read) {
            let found = uet_payload(f, DEFAULT_IP_PROTOCOL).unwrap().expect("a UET frame");
            assert_eq!(found.encapsulation, encapsulation);
            let config = WalkConfig { encapsulation, crc };
            let pkt = UetPacket::parse(found.bytes, config).unwrap();
            let Body::Clear { pds, ses, payload, crc: trailer } = pkt.body else { panic!("clear packet expected") };
            assert_eq!((pds, ses, payload, trailer.is_some()), (p.repr.pds, p.repr.ses, &p.payload[..], crc));
            assert_eq!(pkt.entropy.map(|e| e.entropy), (encapsulation == Encapsulation::NativeIp).then_some(p.entropy));
            assert_eq!(found.entropy, (encapsulation == Encapsulation::Udp).then_some(p.entropy));
            pkt.verify_crc(&found.crc_prefix).unwrap();
            let d = decode(found.bytes, config, found.entropy, Some(&found.crc_prefix));
            assert_eq!((d.error.clone(), d.warnings.is_empty()), (None, true));
            let text = to_text(&d);
            assert!(text.contains("PDS"));
            assert_eq!(text.contains("correct"), crc);
            if crc {
                // One flipped payload bit fails the trailer, after every header was shown.
                let mut bad = found.bytes.to_vec();
                bad[found.bytes.len() / 2] ^= 1;
                let d = decode(&bad, config, None, Some(&found.crc_prefix));
                assert!(d.error.is_some() && d.headers.iter().any(|h| h.name.starts_with("PDS")));
            }
        }
    }
}

/// Short frames are padded to 60 bytes on the wire: the UET bytes, and so the CRC32C trailer, are
/// found from the IP length, not from the end of the frame.
#[test]
fn padded_short_frames_keep_their_trailer() {
    let ack = exchange().into_iter().find(|p| !p.from_initiator).unwrap();
    for encapsulation in [Encapsulation::Udp, Encapsulation::NativeIp] {
        let mut f = frame(&ack, encapsulation, true);
        let unpadded = f.len();
        f.resize(unpadded.max(60) + 4, 0);
        let found = uet_payload(&f, DEFAULT_IP_PROTOCOL).unwrap().unwrap();
        let config = WalkConfig { encapsulation, crc: true };
        let d = decode(found.bytes, config, found.entropy, Some(&found.crc_prefix));
        assert_eq!(d.error, None, "{encapsulation:?}");
        assert!(to_text(&d).contains("correct"));
    }
}

#[test]
fn udp_framing_follows_the_encapsulation_rules() {
    for p in exchange() {
        let f = frame(&p, Encapsulation::Udp, false);
        let udp = &f[14 + 20..14 + 20 + 8];
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), p.entropy, "entropy in the UDP source port");
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), UDP_PORT);
        assert_eq!(&udp[6..8], &[0, 0], "UDP checksum zero on send");
        let (src, dst) = if p.from_initiator { (INITIATOR, TARGET) } else { (TARGET, INITIATOR) };
        assert_eq!((&f[14 + 12..14 + 16], &f[14 + 16..14 + 20]), (&src.ip[..], &dst.ip[..]));
        // Another port or protocol number: not UET.
        assert!(uet_payload_on(&f, UDP_PORT + 1, DEFAULT_IP_PROTOCOL).unwrap().is_none());
    }
}

/// The capture is what the engine emits: replayed into a fresh initiator and target PDC, every
/// initiator packet is what the initiator stamps and every target packet what the target sends,
/// both accept everything and end closed; and it is the worked example (PDC 7 opens with SYN from
/// PSN 4, learns 19 from the first ACK, writes PSNs 4–8, reads with PSNs 9–11 and gets the data
/// at target PSNs 4–6, closes at PSN 12).
#[test]
fn the_capture_is_the_engines_worked_example() {
    let cfg = PdcConfig::default();
    let now = Instant::ZERO;
    let packets = exchange();
    let mut ini = Initiator::<2>::new(&cfg, DeliveryMode::Rud, INITIATOR.pdc, START_PSN);
    let mut tgt: Option<Target<2>> = None;
    let mut writes = Vec::new();
    // What the replayed target has sent, in order, to compare with the captured target packets.
    let mut from_target = std::collections::VecDeque::new();
    let target_pds = |tx: TargetTx| match tx {
        TargetTx::Ack(a) => PdsHeader::Ack(a),
        TargetTx::Control(c) => PdsHeader::Control(c),
        TargetTx::Nack(n) => PdsHeader::Nack(n),
        TargetTx::Resend(_) => panic!("nothing is lost in this exchange"),
    };
    let mut seen_ack = false;
    let mut read_data = Vec::new();
    for p in &packets {
        match p.repr.pds {
            PdsHeader::Request(r) if !p.from_initiator => {
                // Read data: what the target stamps in its return direction now.
                let t = tgt.as_mut().unwrap();
                let stamp = t.send(now, &cfg, r.flags.contains(RequestFlags::AR)).unwrap();
                assert_eq!(stamp.request(NextHeader::RspData, None), r);
                assert_eq!((r.spdcid, r.dest), (TARGET.pdc, PdcDest::Established { dpdcid: INITIATOR.pdc }));
                let Some(SesHeader::ResponseWithData(d)) = p.repr.ses else { panic!("read data without its header") };
                assert_eq!((d.payload_length as usize, d.modified_length), (p.payload.len(), 2560));
                ini.handle_data(now, &cfg, &r, p.payload.len() as u32, false).unwrap();
                read_data.push(r.psn);
            }
            PdsHeader::Request(r) => {
                // The request the engine would stamp now is exactly the captured one.
                let Some(SesHeader::Standard(s)) = p.repr.ses else { panic!("standard request expected") };
                let last = s.common.flags.contains(SesFlags::EOM);
                let stamp = ini.send(now, &cfg, last).unwrap();
                assert_eq!(stamp.request(r.next_header, None), r);
                assert_eq!(r.flags.contains(RequestFlags::AR), last);
                assert_eq!(matches!(r.dest, PdcDest::Syn { .. }), !seen_ack);
                let t = tgt.get_or_insert_with(|| Target::new(now, &cfg, TARGET.pdc, &r, StartPolicy::Open).unwrap());
                t.handle_request(now, &cfg, &r, p.payload.len() as u32, false).unwrap();
                from_target.extend(std::iter::from_fn(|| t.poll_transmit(now)).map(target_pds));
                writes.push(r.psn);
            }
            PdsHeader::Ack(a) if p.from_initiator => {
                tgt.as_mut().unwrap().handle_ack(now, &cfg, &a).unwrap();
            }
            PdsHeader::Ack(a) => {
                // The PDC's ACK; the capture adds the SES response the endpoint would.
                let bare = PdsHeader::Ack(Ack { next_header: NextHeader::None, ..a });
                assert_eq!(from_target.pop_front(), Some(bare), "the target's next packet");
                if a.ack_psn() <= 8 {
                    let Some(SesHeader::Response(r)) = p.repr.ses else {
                        panic!("ACK of a write without its response")
                    };
                    assert_eq!(
                        (r.opcode, r.return_code, r.modified_length),
                        (ResponseOpcode::DefaultResponse, ReturnCode::Ok, 4608)
                    );
                }
                assert_eq!((a.spdcid, a.dpdcid), (TARGET.pdc, INITIATOR.pdc));
                ini.handle_ack(now, &cfg, &a).unwrap();
                seen_ack = true;
            }
            PdsHeader::Control(c) if p.from_initiator => {
                assert_eq!((c.ctl_type, c.psn), (ControlType::Close, 12));
                ini.close(now, &cfg).unwrap();
                let t = tgt.as_mut().unwrap();
                t.handle_control(now, &cfg, &c).unwrap();
                from_target.extend(std::iter::from_fn(|| t.poll_transmit(now)).map(target_pds));
            }
            PdsHeader::Control(c) => {
                let t = tgt.as_mut().unwrap();
                t.request_close(now, &cfg).unwrap();
                from_target.extend(std::iter::from_fn(|| t.poll_transmit(now)).map(target_pds));
                assert_eq!(from_target.pop_front(), Some(p.repr.pds), "the target's next packet");
                assert_eq!(c.ctl_type, ControlType::CloseReq);
                ini.handle_control(now, &c).unwrap();
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(writes, [4, 5, 6, 7, 8, 9, 10, 11], "the write, then the READ requests");
    assert_eq!(read_data, [4, 5, 6], "read data numbered from the initiator's start PSN");
    assert!(from_target.is_empty());
    assert_eq!(ini.state(), InitiatorState::Closed);
    assert_eq!(tgt.unwrap().state(), TargetState::Closed);
    // Golden bytes of the first packet: RUD_REQ (2), next header standard request (3), SYN;
    // CLEAR_PSN = Start_PSN − 1, so clear_psn_offset −1; PSN 4; SPDCID 7; psn_offset 0.
    let first = uet_bytes(&packets[0], Encapsulation::Udp, None);
    assert_eq!(&first[..12], &[0x11, 0x84, 0xFF, 0xFF, 0, 0, 0, 4, 0, 7, 0, 0]);
}

#[test]
fn the_decoder_shows_what_parsed_then_the_error() {
    let bytes = uet_bytes(&exchange()[0], Encapsulation::Udp, None);
    assert_eq!(parse_hex(&hex(&bytes)).unwrap(), bytes);
    assert_eq!(parse_hex("0x0a:0B").unwrap(), [0x0A, 0x0B]);
    assert!(parse_hex("abc").is_err());
    assert!(parse_hex("zz").is_err());
    // Cut inside the SES header: the PDS header is shown, the error names byte 12.
    let d = decode(&bytes[..20], WalkConfig::default(), Some(0xC000), None);
    let names: Vec<&str> = d.headers.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["UDP source port (outer header)", "PDS RUD_REQ"]);
    assert_eq!(d.error.as_ref().map(|e| e.0), Some(12));
    let json = to_json(&d);
    assert_eq!(json["error"]["offset"], 12);
    assert_eq!(json["headers"][1]["fields"][4]["name"], "clear_psn_offset");
    // A reserved bit is a warning, not a failure.
    let mut odd = bytes.clone();
    odd[1] |= 0x40;
    let d = decode(&odd, WalkConfig::default(), None, None);
    assert_eq!((d.error.clone(), d.warnings.len()), (None, 1));
    assert!(to_text(&d).contains("warning: reserved bits set"));
    // Not a capture; a truncated capture.
    assert!(read_capture(&[0u8; 24]).is_err());
    let mut file = write_pcap(&[vec![0u8; 60]], 1);
    file.truncate(file.len() - 1);
    assert!(read_capture(&file).is_err());
}
