//! UET packets in capture files: a realistic exchange framed as Ethernet/IPv4/UDP 4793 (or native
//! IP with the entropy header), classic pcap files, and a field-by-field decoder.
//!
//! The outer headers are built and parsed with etherparse here, in the examples, because they are
//! not UET's: `uet-wire` starts at the UDP payload or the entropy header.
//!
//! **The exchange** follows the worked example of the UE design paper (digest
//! `shared/spec/overview.md`): initiator PDC 7 writes five packets, PSNs 4–8, opening the PDC with
//! SYN from start PSN 4 (PSN offsets 0, 1 while SYN is set); the target creates PDC 19 on the first
//! packet and names it in every ACK; once the initiator has that ACK it stops setting SYN. Then a
//! read: read requests at PSNs 9–11. In UE 1.0 read data returns in ACKs carrying an SES response
//! with data (the NACK codes TRIMMED_ACK and ACK_WITH_DATA and `Trimmable_ACK_Size`, digest §3.8
//! and §4, are about exactly those ACKs), so each read is answered by an ACK with `RSP_DATA`. Last,
//! the target asks the initiator to close (a CLOSE_REQ control packet at the target's first PSN,
//! 2, as in the design paper), the initiator ACKs that and sends CLOSE at its next PSN, and the
//! target ACKs the CLOSE.
//!
//! ACKs follow the coalescing rules of digest §4.4 with the default `ACK_Gen_Trigger` (16 KiB):
//! every SYN packet and every AR packet (EOM packets, CLOSE) is ACKed at once; the other write
//! packets add up to less than the trigger. Entropy values, addresses, the 1 KiB payload size and
//! which packets the first ACK overtakes are *project-defined* choices of this example.

use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};
use std::fmt::Write as _;
use uet_wire::entropy::{DEFAULT_IP_PROTOCOL, Encapsulation, EntropyHeader, UDP_PORT};
use uet_wire::pds::{
    Ack, AckExtension, AckFlags, AckRequest, Control, ControlFlags, ControlType, DeliveryMode, NextHeader, PdcDest,
    PdsHeader, Request, RequestFlags,
};
use uet_wire::ses::{
    Opcode, RequestCommon, ResponseList, ResponseOpcode, ResponseWithData, ReturnCode, SesFlags, SesHeader,
    StandardRequest, StandardTail,
};
use uet_wire::{Body, PacketRepr, UetPacket, WalkConfig};

/// The initiator's address, MAC and PDC id.
pub const INITIATOR: Host = Host { ip: [10, 0, 0, 1], mac: [0x02, 0, 0, 0, 0, 1], pdc: 7 };
/// The target's address, MAC and PDC id.
pub const TARGET: Host = Host { ip: [10, 0, 0, 2], mac: [0x02, 0, 0, 0, 0, 2], pdc: 19 };
/// The initiator's random start PSN in the worked example.
pub const START_PSN: u32 = 4;
/// The target's start PSN for its own requests (the design paper's target PSNs begin at 2).
pub const TARGET_START_PSN: u32 = 2;
/// Payload bytes per full packet (a small MTU keeps the capture readable).
pub const MTU_PAYLOAD: usize = 1024;

const JOB: u32 = 0x00_1234;
const PID: u16 = 0x011;
const RI: u16 = 0x022;

/// One end of the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Host {
    /// IPv4 address.
    pub ip: [u8; 4],
    /// MAC address.
    pub mac: [u8; 6],
    /// Its PDC id.
    pub pdc: u16,
}

/// One UET packet of the exchange.
#[derive(Clone, Debug)]
pub struct Packet {
    /// True when the initiator sends it.
    pub from_initiator: bool,
    /// Entropy value (UDP source port, or entropy header).
    pub entropy: u16,
    /// The headers.
    pub repr: PacketRepr,
    /// The payload.
    pub payload: Vec<u8>,
    /// What the packet is, for people.
    pub note: String,
}

fn request_pds(psn: u32, dest: PdcDest, flags: RequestFlags) -> PdsHeader {
    PdsHeader::Request(Request {
        mode: DeliveryMode::Rud,
        next_header: NextHeader::ReqStd,
        flags,
        clear_psn_offset: 0,
        psn,
        spdcid: INITIATOR.pdc,
        dest,
        cc: None,
    })
}

fn common(opcode: Opcode, flags: SesFlags) -> RequestCommon {
    RequestCommon { opcode, flags, ri_generation: 1, job_id: JOB, pid_on_fep: PID, resource_index: RI }
}

fn ack(from_initiator: bool, cack_psn: u32, next_header: NextHeader) -> PdsHeader {
    let (src, dst) = if from_initiator { (INITIATOR, TARGET) } else { (TARGET, INITIATOR) };
    PdsHeader::Ack(Ack {
        next_header,
        flags: AckFlags::empty(),
        request: AckRequest::None,
        ack_psn_offset: 0,
        cack_psn,
        spdcid: src.pdc,
        dpdcid: dst.pdc,
        ext: AckExtension::None,
    })
}

/// A bare ACK (no SES response) as a packet of the exchange.
fn ack_packet(from_initiator: bool, cack_psn: u32, entropy: u16, note: String) -> Packet {
    let repr = PacketRepr { entropy: None, pds: ack(from_initiator, cack_psn, NextHeader::None), ses: None };
    Packet { from_initiator, entropy, repr, payload: Vec::new(), note }
}

/// The exchange of the worked example, in wire order.
pub fn exchange() -> Vec<Packet> {
    let mut out = Vec::new();
    let message: Vec<u8> = (0..4 * MTU_PAYLOAD + MTU_PAYLOAD / 2).map(|i| (i % 251) as u8).collect();
    let chunks: Vec<&[u8]> = message.chunks(MTU_PAYLOAD).collect();
    let last = chunks.len() - 1;
    let mut psn = START_PSN;
    // The first ACK reaches the initiator after two packets: those two carry SYN.
    let syn_packets = 2;
    for (i, chunk) in chunks.iter().enumerate() {
        let dest = if i < syn_packets {
            PdcDest::Syn { use_rsv_pdc: false, psn_offset: (psn - START_PSN) as u16 }
        } else {
            PdcDest::Established { dpdcid: TARGET.pdc }
        };
        let mut flags = if i == last { SesFlags::EOM } else { SesFlags::empty() };
        let tail = if i == 0 {
            StandardTail::Som { header_data: 0 }
        } else {
            StandardTail::Continuation { payload_length: chunk.len() as u16, message_offset: (i * MTU_PAYLOAD) as u32 }
        };
        if i == 0 {
            flags |= SesFlags::SOM;
        }
        let ses = StandardRequest {
            common: common(Opcode::Write, flags),
            message_id: 1,
            buffer_offset: 0x10_0000,
            initiator: 1,
            match_bits: 0xC0FFEE,
            tail,
            request_length: message.len() as u32,
            ext: None,
        };
        let ar = if i == last { RequestFlags::AR } else { RequestFlags::empty() };
        out.push(Packet {
            from_initiator: true,
            entropy: 0xC000 | (i as u16),
            repr: PacketRepr { entropy: None, pds: request_pds(psn, dest, ar), ses: Some(SesHeader::Standard(ses)) },
            payload: chunk.to_vec(),
            note: format!("WRITE packet {} of {}, PSN {psn}{}", i + 1, chunks.len(), if i < 2 { ", SYN" } else { "" }),
        });
        if i + 1 == syn_packets {
            // A SYN packet makes an ACK due at once (digest §4.4): one per SYN packet, and the first
            // of them tells the initiator the target's PDC id.
            for (k, acked) in (START_PSN..=psn).enumerate() {
                let note = format!("ACK up to PSN {acked} (SYN packet): from target PDC 19");
                out.push(ack_packet(false, acked, 0xD000 | k as u16, note));
            }
        }
        psn += 1;
    }
    // Packets 6 and 7 add 2 KiB, below ACK_Gen_Trigger; packet 8 is EOM, so it has AR.
    out.push(ack_packet(false, psn - 1, 0xD010, format!("ACK up to PSN {} (AR): the write is delivered", psn - 1)));
    // The read: three requests of one packet's worth each, each answered by an ACK with data.
    for r in 0..3u16 {
        let ses = StandardRequest {
            common: common(Opcode::Read, SesFlags::SOM | SesFlags::EOM),
            message_id: 2 + r,
            buffer_offset: 0x20_0000 + u64::from(r) * MTU_PAYLOAD as u64,
            initiator: 1,
            match_bits: 0xC0FFEE,
            tail: StandardTail::Som { header_data: 0 },
            request_length: MTU_PAYLOAD as u32,
            ext: None,
        };
        out.push(Packet {
            from_initiator: true,
            entropy: 0xC100 | r,
            repr: PacketRepr {
                entropy: None,
                // A one-packet message: EOM, so AR.
                pds: request_pds(psn, PdcDest::Established { dpdcid: TARGET.pdc }, RequestFlags::AR),
                ses: Some(SesHeader::Standard(ses)),
            },
            payload: Vec::new(),
            note: format!("READ request {} of 3, PSN {psn}", r + 1),
        });
        let data: Vec<u8> = (0..MTU_PAYLOAD).map(|i| (i as u16 ^ r) as u8).collect();
        let rsp = ResponseWithData {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::ResponseWithData,
            return_code: ReturnCode::Ok,
            message_id: 100 + r,
            job_id: JOB,
            read_request_message_id: 2 + r,
            payload_length: MTU_PAYLOAD as u16,
            modified_length: MTU_PAYLOAD as u32,
            message_offset: 0,
        };
        out.push(Packet {
            from_initiator: false,
            entropy: 0xD100 | r,
            repr: PacketRepr {
                entropy: None,
                pds: ack(false, psn, NextHeader::RspData),
                ses: Some(SesHeader::ResponseWithData(rsp)),
            },
            payload: data,
            note: format!("ACK of PSN {psn} with the read data (RSP_DATA, {MTU_PAYLOAD} bytes)"),
        });
        psn += 1;
    }
    let control = |ctl_type, from_initiator: bool, psn, note: String| Packet {
        from_initiator,
        entropy: 0xE000,
        repr: PacketRepr {
            entropy: None,
            pds: PdsHeader::Control(Control {
                ctl_type,
                flags: ControlFlags::AR,
                probe_opaque: 0,
                psn,
                spdcid: if from_initiator { INITIATOR.pdc } else { TARGET.pdc },
                dest: PdcDest::Established { dpdcid: if from_initiator { TARGET.pdc } else { INITIATOR.pdc } },
                payload: 0,
            }),
            ses: None,
        },
        payload: Vec::new(),
        note,
    };
    // CLOSE_REQ takes a new PSN from the target's own space; the initiator ACKs it, then closes
    // (digest §4.3, initiator step 7).
    let note = format!("CLOSE_REQ at target PSN {TARGET_START_PSN}: the target asks the initiator to close");
    out.push(control(ControlType::CloseReq, false, TARGET_START_PSN, note));
    out.push(ack_packet(
        true,
        TARGET_START_PSN,
        0xC200,
        format!("ACK of the CLOSE_REQ (target PSN {TARGET_START_PSN})"),
    ));
    out.push(control(ControlType::Close, true, psn, format!("CLOSE at PSN {psn}")));
    out.push(ack_packet(false, psn, 0xD200, format!("ACK of the CLOSE (PSN {psn}): both PDCs are freed")));
    out
}

/// The UET bytes of `p` (the UDP payload, or the IP payload in native-IP mode).
pub fn uet_bytes(p: &Packet, encapsulation: Encapsulation, crc_prefix: Option<&[u8]>) -> Vec<u8> {
    let mut repr = p.repr;
    if encapsulation == Encapsulation::NativeIp {
        repr.entropy = Some(EntropyHeader { entropy: p.entropy });
    }
    let mut buf = vec![0u8; repr.header_len() + p.payload.len() + uet_wire::packet::CRC_LEN];
    let n = repr.emit(&p.payload, crc_prefix, &mut buf).expect("the exchange is valid UET");
    buf.truncate(n);
    buf
}

/// The bytes the CRC32C trailer covers before the UET bytes (digest §1.2, project-defined where
/// open): IP source and destination, then in UDP mode the UDP header (checksum zero).
pub fn crc_prefix(src: [u8; 4], dst: [u8; 4], udp: Option<(u16, usize)>) -> Vec<u8> {
    let mut prefix = [src, dst].concat();
    if let Some((entropy, uet_len)) = udp {
        prefix.extend_from_slice(&entropy.to_be_bytes());
        prefix.extend_from_slice(&UDP_PORT.to_be_bytes());
        prefix.extend_from_slice(&((8 + uet_len) as u16).to_be_bytes());
        prefix.extend_from_slice(&[0, 0]);
    }
    prefix
}

/// The Ethernet frame carrying `p`: IPv4 with UDP destination port 4793 and the entropy in the UDP
/// source port (checksum zero, as UE requires on send), or native IP with protocol 253; with `crc`,
/// the UET bytes end with the CRC32C trailer.
pub fn frame(p: &Packet, encapsulation: Encapsulation, crc: bool) -> Vec<u8> {
    let (src, dst) = if p.from_initiator { (INITIATOR, TARGET) } else { (TARGET, INITIATOR) };
    let ip = PacketBuilder::ethernet2(src.mac, dst.mac).ipv4(src.ip, dst.ip, 64);
    let entropy_len = if encapsulation == Encapsulation::NativeIp { EntropyHeader::LEN } else { 0 };
    let crc_len = if crc { uet_wire::packet::CRC_LEN } else { 0 };
    let len = entropy_len + p.repr.header_len() + p.payload.len() + crc_len;
    let udp = (encapsulation == Encapsulation::Udp).then_some((p.entropy, len));
    let prefix = crc.then(|| crc_prefix(src.ip, dst.ip, udp));
    let uet = uet_bytes(p, encapsulation, prefix.as_deref());
    match encapsulation {
        Encapsulation::Udp => {
            let b = ip.udp(p.entropy, UDP_PORT);
            let mut out = Vec::with_capacity(b.size(uet.len()));
            b.write(&mut out, &uet).expect("write to a Vec");
            // UDP checksum: zero on send (digest §1.1).
            out[14 + 20 + 6..14 + 20 + 8].fill(0);
            out
        }
        Encapsulation::NativeIp => {
            let mut out = Vec::with_capacity(ip.size(uet.len()));
            ip.write(&mut out, etherparse::IpNumber(DEFAULT_IP_PROTOCOL), &uet).expect("write to a Vec");
            out
        }
    }
}

const PCAP_MAGIC_US: u32 = 0xA1B2_C3D4;
const PCAP_MAGIC_NS: u32 = 0xA1B2_3C4D;
const LINKTYPE_ETHERNET: u32 = 1;

/// A classic pcap file (microsecond timestamps, Ethernet link type) holding `frames`, each
/// stamped `spacing_us` after the previous one.
pub fn write_pcap(frames: &[Vec<u8>], spacing_us: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for word in [PCAP_MAGIC_US, 0x0004_0002, 0, 0, 65535, LINKTYPE_ETHERNET] {
        // Major 2, minor 4 (two u16), then thiszone, sigfigs, snaplen, network.
        out.extend_from_slice(&word.to_le_bytes());
    }
    let mut t_us: u64 = 1_700_000_000 * 1_000_000;
    for f in frames {
        let len = f.len() as u32;
        for word in [(t_us / 1_000_000) as u32, (t_us % 1_000_000) as u32, len, len] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(f);
        t_us += u64::from(spacing_us);
    }
    out
}

/// The frames of a classic pcap file (either byte order, micro- or nanosecond stamps).
pub fn read_pcap(bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    let word = |b: &[u8], at: usize, le: bool| -> Result<u32, String> {
        let w: [u8; 4] = b.get(at..at + 4).and_then(|s| s.try_into().ok()).ok_or("pcap file is truncated")?;
        Ok(if le { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) })
    };
    let le = match word(bytes, 0, true)? {
        PCAP_MAGIC_US | PCAP_MAGIC_NS => true,
        m if m.swap_bytes() == PCAP_MAGIC_US || m.swap_bytes() == PCAP_MAGIC_NS => false,
        m => return Err(format!("not a classic pcap file (magic {m:#010x}; pcapng is not supported)")),
    };
    let link = word(bytes, 20, le)?;
    if link != LINKTYPE_ETHERNET {
        return Err(format!("link type {link} is not Ethernet (1)"));
    }
    let mut frames = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        let caplen = word(bytes, at + 8, le)? as usize;
        let start = at + 16;
        let frame = bytes.get(start..start + caplen).ok_or("pcap record is truncated")?;
        frames.push(frame);
        at = start + caplen;
    }
    Ok(frames)
}

/// A UET packet found in an Ethernet frame.
#[derive(Clone, Debug)]
pub struct Found<'a> {
    /// The UET bytes (UDP payload, or IP payload in native-IP mode).
    pub bytes: &'a [u8],
    /// How they were carried.
    pub encapsulation: Encapsulation,
    /// What a CRC32C trailer would cover before `bytes` (IP addresses, and the UDP header).
    pub crc_prefix: Vec<u8>,
}

/// The UET packet in an Ethernet frame; `None` if the frame is not UET (not UDP to port 4793, not
/// IP protocol `native_protocol`).
pub fn uet_payload(frame: &[u8], native_protocol: u8) -> Result<Option<Found<'_>>, String> {
    let sliced = SlicedPacket::from_ethernet(frame).map_err(|e| format!("outer headers: {e}"))?;
    let addresses = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => [&ip.header().source()[..], &ip.header().destination()[..]].concat(),
        Some(NetSlice::Ipv6(ip)) => [&ip.header().source()[..], &ip.header().destination()[..]].concat(),
        _ => return Ok(None),
    };
    if let Some(TransportSlice::Udp(udp)) = &sliced.transport {
        if udp.destination_port() != UDP_PORT {
            return Ok(None);
        }
        let mut crc_prefix = addresses;
        crc_prefix.extend_from_slice(udp.slice().get(..8).unwrap_or_default());
        return Ok(Some(Found { bytes: udp.payload(), encapsulation: Encapsulation::Udp, crc_prefix }));
    }
    let ip_payload = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => ip.payload(),
        Some(NetSlice::Ipv6(ip)) => ip.payload(),
        _ => return Ok(None),
    };
    if ip_payload.ip_number.0 != native_protocol {
        return Ok(None);
    }
    Ok(Some(Found { bytes: ip_payload.payload, encapsulation: Encapsulation::NativeIp, crc_prefix: addresses }))
}

/// Decodes UET bytes and prints every header field by field; with `crc_prefix` (the bytes before
/// the UET bytes that the trailer covers), checks the CRC32C trailer too.
pub fn describe(bytes: &[u8], config: WalkConfig, crc_prefix: Option<&[u8]>) -> Result<String, String> {
    let pkt = UetPacket::parse(bytes, config).map_err(|e| format!("UET: {e}"))?;
    let mut s = String::new();
    if let Some(e) = pkt.entropy {
        writeln!(s, "  entropy header: {e:?}").ok();
    }
    match pkt.body {
        Body::Secured { tss, ciphertext, icv } => {
            writeln!(s, "  TSS: {tss:#?}").ok();
            writeln!(s, "  ciphertext: {} bytes (not decrypted)", ciphertext.len()).ok();
            writeln!(s, "  ICV: {}", hex(icv)).ok();
        }
        Body::Clear { pds, ses, payload, crc } => {
            writeln!(s, "  PDS {:?}: {pds:#?}", pds.packet_type()).ok();
            match ses {
                Some(h) => writeln!(s, "  SES {:?}: {h:#?}", h.next_header()).ok(),
                None => writeln!(s, "  SES: none").ok(),
            };
            let shown = &payload[..payload.len().min(16)];
            let more = if payload.len() > 16 { " …" } else { "" };
            writeln!(s, "  payload: {} bytes {}{more}", payload.len(), hex(shown)).ok();
            match (crc, crc_prefix) {
                (Some(c), Some(prefix)) => {
                    pkt.verify_crc(prefix).map_err(|e| format!("UET: {e}"))?;
                    writeln!(s, "  CRC32C trailer: {c:#010x}, correct").ok();
                }
                (Some(c), None) => {
                    writeln!(s, "  CRC32C trailer: {c:#010x} (not checked: the IP addresses are not known)").ok();
                }
                (None, _) => {}
            }
        }
    }
    Ok(s)
}

/// Lower-case hex, bytes separated by spaces.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// Parses hex digits, ignoring whitespace, colons and an optional `0x`.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: String =
        text.trim().trim_start_matches("0x").chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
    if digits.len() % 2 != 0 {
        return Err("odd number of hex digits".into());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| format!("not hex: {:?}", &digits[i..i + 2])))
        .collect()
}
