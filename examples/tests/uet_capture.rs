//! The `uet-pcap` exchange and the `uet-decode` path: every packet goes through Ethernet/IPv4/UDP
//! framing, a pcap file, and back through the UET walker unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use uet_wire::entropy::{DEFAULT_IP_PROTOCOL, Encapsulation, UDP_PORT};
use uet_wire::pds::{ControlType, PdcDest, PdsHeader, RequestFlags};
use uet_wire::ses::{Opcode, SesFlags, SesHeader};
use uet_wire::{Body, UetPacket, WalkConfig};
use xlink_examples::uet_capture::{
    INITIATOR, START_PSN, TARGET, describe, exchange, frame, hex, parse_hex, read_pcap, uet_bytes, uet_payload,
    write_pcap,
};

#[test]
fn pcap_round_trip_in_both_encapsulations() {
    let packets = exchange();
    for (encapsulation, crc) in [
        (Encapsulation::Udp, false),
        (Encapsulation::NativeIp, false),
        (Encapsulation::Udp, true),
        (Encapsulation::NativeIp, true),
    ] {
        let frames: Vec<Vec<u8>> = packets.iter().map(|p| frame(p, encapsulation, crc)).collect();
        let file = write_pcap(&frames, 10);
        let read = read_pcap(&file).unwrap();
        assert_eq!(read.len(), packets.len());
        for (p, f) in packets.iter().zip(read) {
            let found = uet_payload(f, DEFAULT_IP_PROTOCOL).unwrap().expect("a UET frame");
            assert_eq!(found.encapsulation, encapsulation);
            let config = WalkConfig { encapsulation, crc };
            let pkt = UetPacket::parse(found.bytes, config).unwrap();
            let Body::Clear { pds, ses, payload, crc: trailer } = pkt.body else { panic!("clear packet expected") };
            assert_eq!((pds, ses, payload, trailer.is_some()), (p.repr.pds, p.repr.ses, &p.payload[..], crc));
            assert_eq!(pkt.entropy.map(|e| e.entropy), (encapsulation == Encapsulation::NativeIp).then_some(p.entropy));
            pkt.verify_crc(&found.crc_prefix).unwrap();
            let text = describe(found.bytes, config, Some(&found.crc_prefix)).unwrap();
            assert!(text.contains("PDS"));
            assert_eq!(text.contains("correct"), crc);
            if crc {
                // One flipped payload bit fails the trailer.
                let mut bad = found.bytes.to_vec();
                bad[found.bytes.len() / 2] ^= 1;
                assert!(describe(&bad, config, Some(&found.crc_prefix)).is_err());
            }
        }
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
    }
}

/// The worked example, packet by packet: PDC 7 opens with SYN from PSN 4, learns 19 from the first
/// ACK and drops SYN; the write covers PSNs 4–8, the read PSNs 9–11, CLOSE is PSN 12.
#[test]
fn the_exchange_is_the_worked_example() {
    let packets = exchange();
    let mut requests = Vec::new();
    let mut seen_ack_from_19 = false;
    let mut acks = Vec::new();
    for p in &packets {
        match p.repr.pds {
            PdsHeader::Request(r) => {
                assert_eq!(r.spdcid, 7);
                match r.dest {
                    PdcDest::Syn { psn_offset, .. } => {
                        assert!(!seen_ack_from_19, "SYN after the initiator learned the target's PDC");
                        assert_eq!(r.start_psn(), Some(START_PSN));
                        assert_eq!(u32::from(psn_offset), r.psn - START_PSN);
                    }
                    PdcDest::Established { dpdcid } => {
                        assert!(seen_ack_from_19);
                        assert_eq!(dpdcid, 19);
                    }
                }
                let Some(SesHeader::Standard(s)) = p.repr.ses else { panic!("standard request expected") };
                // AR exactly on a message's last packet.
                assert_eq!(r.flags.contains(RequestFlags::AR), s.common.flags.contains(SesFlags::EOM));
                requests.push((r.psn, s.common.opcode));
            }
            PdsHeader::Ack(a) if p.from_initiator => {
                // The initiator ACKs the target's CLOSE_REQ, at the target's PSN 2.
                assert_eq!((a.spdcid, a.dpdcid, a.cack_psn), (7, 19, 2));
            }
            PdsHeader::Ack(a) => {
                assert_eq!((a.spdcid, a.dpdcid), (19, 7));
                acks.push(a.cack_psn);
                seen_ack_from_19 = true;
            }
            PdsHeader::Control(c) => match c.ctl_type {
                ControlType::CloseReq => assert_eq!((c.spdcid, c.psn), (19, 2)),
                ControlType::Close => assert_eq!((c.spdcid, c.psn), (7, 12)),
                other => panic!("unexpected control {other:?}"),
            },
            other => panic!("unexpected {other:?}"),
        }
    }
    let writes: Vec<u32> = requests.iter().filter(|r| r.1 == Opcode::Write).map(|r| r.0).collect();
    let reads: Vec<u32> = requests.iter().filter(|r| r.1 == Opcode::Read).map(|r| r.0).collect();
    assert_eq!(writes, [4, 5, 6, 7, 8]);
    assert_eq!(reads, [9, 10, 11]);
    // Each SYN packet (4, 5) and each AR packet (8, the reads, the CLOSE) is ACKed, in that order.
    assert_eq!(acks, [4, 5, 8, 9, 10, 11, 12]);
    // Golden prologue of the first packet: RUD_REQ (2), next header standard request (3), SYN.
    let first = uet_bytes(&packets[0], Encapsulation::Udp, None);
    assert_eq!(&first[..2], &[0x11, 0x84]);
    // Its SYN field: use_rsv_pdc 0, PSN offset 0; SPDCID 7; PSN 4.
    assert_eq!(&first[4..12], &[0, 0, 0, 4, 0, 7, 0, 0]);
}

#[test]
fn hex_and_bad_input() {
    let bytes = uet_bytes(&exchange()[2], Encapsulation::Udp, None);
    assert_eq!(parse_hex(&hex(&bytes)).unwrap(), bytes);
    assert_eq!(parse_hex("0x0a:0B").unwrap(), [0x0A, 0x0B]);
    assert!(parse_hex("abc").is_err());
    assert!(parse_hex("zz").is_err());
    assert!(describe(&bytes[..5], WalkConfig::default(), None).is_err());
    assert!(read_pcap(&[0u8; 24]).is_err());
    let mut file = write_pcap(&[vec![0u8; 60]], 1);
    file.truncate(file.len() - 1);
    assert!(read_pcap(&file).is_err());
}
