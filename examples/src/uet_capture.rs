//! UET packets in capture files: an exchange produced by the `uet-wire` PDC engine, framed as
//! Ethernet/IPv4/UDP 4793 (or native IP with the entropy header), and pcap/pcapng files.
//!
//! The outer headers are built and parsed with etherparse here, in the examples, because they are
//! not UET's: `uet-wire` starts at the UDP payload or the entropy header.
//!
//! **The exchange** is the worked example of the UE design paper, run through the library's own
//! [`Initiator`] and [`Target`] PDCs (every PDS field is the engine's; only the SES headers, the
//! payload bytes, entropy values and addresses are this example's): initiator PDC 7 writes five
//! packets, PSNs 4–8, opening the PDC with SYN from start PSN 4; the target creates PDC 19 on the
//! first packet and names it in every ACK; the first ACKs reach the initiator after its second
//! packet, so PSNs 4 and 5 carry SYN and the rest do not. Every ACK that names a write packet
//! answers it with the SES DEFAULT_RESPONSE (RC_OK), as the library's `Endpoint` does. Then the
//! initiator reads 2.5 KiB of the target's memory: three READ requests, PSNs 9–11, without
//! payload, each answered by one RSP_DATA packet (SES RESPONSE_W_DATA and the data) in the
//! target's return direction, target PSNs 4–6 (numbered from the initiator's start PSN, as the
//! reference provider's target numbers them; the paper's figure shows 2–4), acknowledged by the
//! initiator with a DEFAULT_RESPONSE as the `Endpoint` does. Then the target asks the initiator
//! to close (CLOSE_REQ at its next PSN, 7), the initiator acknowledges it and sends CLOSE at its
//! next PSN, 12, and the target acknowledges the CLOSE.

use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};
use linklayer::{Duration, Instant};
use uet_wire::PacketRepr;
use uet_wire::entropy::{DEFAULT_IP_PROTOCOL, Encapsulation, EntropyHeader, UDP_PORT};
use uet_wire::msg::Segmenter;
use uet_wire::pdc::{Initiator, InitiatorTx, PdcConfig, StartPolicy, Target, TargetTx};
use uet_wire::pds::{DeliveryMode, NextHeader, PdsHeader};
use uet_wire::ses::{
    Opcode, RequestCommon, Response, ResponseList, ResponseOpcode, ResponseWithData, ReturnCode, SesFlags, SesHeader,
    StandardRequest, StandardTail,
};

/// The initiator's address, MAC and PDC id.
pub const INITIATOR: Host = Host { ip: [10, 0, 0, 1], mac: [0x02, 0, 0, 0, 0, 1], pdc: 7 };
/// The target's address, MAC and PDC id.
pub const TARGET: Host = Host { ip: [10, 0, 0, 2], mac: [0x02, 0, 0, 0, 0, 2], pdc: 19 };
/// The initiator's random start PSN in the worked example.
pub const START_PSN: u32 = 4;
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

impl Packet {
    fn control(from_initiator: bool, entropy: u16, pds: PdsHeader, note: String) -> Self {
        Packet {
            from_initiator,
            entropy,
            repr: PacketRepr { entropy: None, pds, ses: None },
            payload: Vec::new(),
            note,
        }
    }
}

/// A target packet as the exchange shows it. An ACK naming a request the target delivered answers
/// it with the SES DEFAULT_RESPONSE (RC_OK), as `uet_wire::msg::Endpoint` does.
fn target_packet(tx: TargetTx, entropy: u16, delivered: &[(u32, StandardRequest)]) -> Packet {
    let (pds, note) = match tx {
        TargetTx::Ack(mut a) => {
            let answered = delivered.iter().find(|(psn, _)| *psn == a.ack_psn());
            let mut note = format!("ACK up to PSN {} (ACK_PSN {})", a.cack_psn, a.ack_psn());
            let ses = answered.map(|(_, req)| SesHeader::Response(Response::default_for(req, ReturnCode::Ok)));
            if ses.is_some() {
                a.next_header = NextHeader::Rsp;
                note.push_str(" with DEFAULT_RESPONSE, RC_OK");
            }
            let repr = PacketRepr { entropy: None, pds: PdsHeader::Ack(a), ses };
            return Packet { from_initiator: false, entropy, repr, payload: Vec::new(), note };
        }
        TargetTx::Control(c) => (PdsHeader::Control(c), format!("{:?} at target PSN {}", c.ctl_type, c.psn)),
        TargetTx::Nack(n) => (PdsHeader::Nack(n), format!("NACK {:?}", n.code)),
        TargetTx::Resend(_) => panic!("nothing is lost in this exchange"),
    };
    Packet::control(false, entropy, pds, note)
}

/// The exchange of the worked example, in wire order, as the engine produces it.
pub fn exchange() -> Vec<Packet> {
    let cfg = PdcConfig::default();
    let mut now = Instant::ZERO;
    let step = Duration::from_micros(1);
    let mut ini = Initiator::<2>::new(&cfg, DeliveryMode::Rud, INITIATOR.pdc, START_PSN);
    let mut tgt: Option<Target<2>> = None;
    let mut out = Vec::new();
    let message: Vec<u8> = (0..4 * MTU_PAYLOAD + MTU_PAYLOAD / 2).map(|i| (i % 251) as u8).collect();
    let len = message.len() as u32;
    let segments = Segmenter::new(len, MTU_PAYLOAD as u16).expect("a valid MTU");
    let template = StandardRequest {
        common: RequestCommon {
            opcode: Opcode::Write,
            flags: SesFlags::empty(),
            ri_generation: 1,
            job_id: JOB,
            pid_on_fep: PID,
            resource_index: RI,
        },
        message_id: 1,
        buffer_offset: 0x10_0000,
        initiator: 1,
        match_bits: 0xC0FFEE,
        tail: StandardTail::Som { header_data: 0 },
        request_length: 0,
        ext: None,
    };
    // ACKs on their way to the initiator; the first ones arrive after its second packet.
    let mut in_flight: Vec<Packet> = Vec::new();
    let mut delivered: Vec<(u32, StandardRequest)> = Vec::new();
    for seg in segments.segments() {
        let stamp = ini.send(now, &cfg, seg.eom).expect("the window has room");
        let request = stamp.request(NextHeader::ReqStd, None);
        let ses = seg.standard_header(&template, len);
        let payload = message[seg.offset as usize..][..usize::from(seg.len)].to_vec();
        let syn = if stamp.syn() { ", SYN" } else { "" };
        out.push(Packet {
            from_initiator: true,
            entropy: 0xC000 | seg.index as u16,
            repr: PacketRepr { entropy: None, pds: PdsHeader::Request(request), ses: Some(SesHeader::Standard(ses)) },
            payload,
            note: format!("WRITE packet {} of {}, PSN {}{syn}", seg.index + 1, segments.packets(), stamp.psn),
        });
        let t = tgt.get_or_insert_with(|| {
            Target::new(now, &cfg, TARGET.pdc, &request, StartPolicy::Open).expect("a SYN request")
        });
        t.handle_request(now, &cfg, &request, u32::from(seg.len), false).expect("a request for this PDC");
        delivered.push((stamp.psn, ses));
        while let Some(tx) = t.poll_transmit(now) {
            in_flight.push(target_packet(tx, 0xD000 | out.len() as u16, &delivered));
        }
        if seg.index >= 1 {
            for p in in_flight.drain(..) {
                if let PdsHeader::Ack(a) = p.repr.pds {
                    ini.handle_ack(now, &cfg, &a).expect("an ACK for this PDC");
                }
                out.push(p);
            }
        }
        now = now.saturating_add(step);
    }
    let mut tgt = tgt.expect("the write created the target PDC");
    read(&cfg, &mut now, &mut ini, &mut tgt, &template, &mut delivered, &mut out);
    // The target asks to close; the initiator acknowledges that, then closes.
    tgt.request_close(now, &cfg).expect("the target PDC is established");
    while let Some(tx) = tgt.poll_transmit(now) {
        if let TargetTx::Control(c) = tx {
            ini.handle_control(now, &c).expect("a CLOSE_REQ for this PDC");
        }
        out.push(target_packet(tx, 0xE000, &delivered));
    }
    now = now.saturating_add(step);
    let mut close_started = false;
    loop {
        let mut moved = false;
        while let Some(tx) = ini.poll_transmit(now) {
            moved = true;
            let p = match tx {
                InitiatorTx::Ack(a) => {
                    tgt.handle_ack(now, &cfg, &a).expect("the ACK of the CLOSE_REQ");
                    let note = format!("ACK of the CLOSE_REQ (target PSN {})", a.ack_psn());
                    Packet::control(true, 0xC200, PdsHeader::Ack(a), note)
                }
                InitiatorTx::Control(c) => {
                    tgt.handle_control(now, &cfg, &c).expect("the CLOSE for this PDC");
                    Packet::control(true, 0xC201, PdsHeader::Control(c), format!("{:?} at PSN {}", c.ctl_type, c.psn))
                }
                InitiatorTx::Resend(_) | InitiatorTx::Nack(_) => panic!("nothing is lost in this exchange"),
            };
            out.push(p);
        }
        while let Some(tx) = tgt.poll_transmit(now) {
            moved = true;
            if let TargetTx::Ack(a) = tx {
                ini.handle_ack(now, &cfg, &a).expect("the ACK of the CLOSE");
            }
            out.push(target_packet(tx, 0xD200, &delivered));
        }
        if !close_started {
            ini.close(now, &cfg).expect("the initiator may close");
            close_started = true;
            continue;
        }
        if !moved {
            break;
        }
        now = now.saturating_add(step);
    }
    out
}

/// The read of the exchange: one READ request per MTU, each answered by read data in the target's
/// return direction; the initiator's ACK of the data carries the DEFAULT_RESPONSE the `Endpoint`
/// sends (RC_OK, the read's length).
fn read(
    cfg: &PdcConfig,
    now: &mut Instant,
    ini: &mut Initiator<2>,
    tgt: &mut Target<2>,
    write: &StandardRequest,
    delivered: &mut Vec<(u32, StandardRequest)>,
    out: &mut Vec<Packet>,
) {
    let len = (2 * MTU_PAYLOAD + MTU_PAYLOAD / 2) as u32;
    let memory: Vec<u8> = (0..len).map(|i| (i % 13) as u8 ^ 0x5A).collect();
    let segments = Segmenter::new(len, MTU_PAYLOAD as u16).expect("a valid MTU");
    let mut template = *write;
    template.common.opcode = Opcode::Read;
    template.message_id = 2;
    template.buffer_offset = 0x20_0000;
    for seg in segments.segments() {
        let stamp = ini.send(*now, cfg, seg.eom).expect("the window has room");
        let request = stamp.request(NextHeader::ReqStd, None);
        let ses = seg.standard_header(&template, len);
        out.push(Packet {
            from_initiator: true,
            entropy: 0xC100 | seg.index as u16,
            repr: PacketRepr { entropy: None, pds: PdsHeader::Request(request), ses: Some(SesHeader::Standard(ses)) },
            payload: Vec::new(),
            note: format!(
                "READ request {} of {}, PSN {}, for bytes {}..{}",
                seg.index + 1,
                segments.packets(),
                stamp.psn,
                seg.offset,
                seg.offset + u32::from(seg.len)
            ),
        });
        tgt.handle_request(*now, cfg, &request, 0, false).expect("a request for this PDC");
        delivered.push((stamp.psn, ses));
        while let Some(tx) = tgt.poll_transmit(*now) {
            let p = target_packet(tx, 0xD100 | out.len() as u16, delivered);
            if let PdsHeader::Ack(a) = p.repr.pds {
                ini.handle_ack(*now, cfg, &a).expect("an ACK for this PDC");
            }
            out.push(p);
        }
        let data = tgt.send(*now, cfg, seg.eom).expect("the return window has room");
        let rsp = ResponseWithData {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::ResponseWithData,
            return_code: ReturnCode::Ok,
            message_id: template.message_id,
            job_id: JOB,
            read_request_message_id: template.message_id,
            payload_length: seg.len,
            modified_length: len,
            message_offset: seg.offset,
        };
        let request = data.request(NextHeader::RspData, None);
        out.push(Packet {
            from_initiator: false,
            entropy: 0xD180 | seg.index as u16,
            repr: PacketRepr {
                entropy: None,
                pds: PdsHeader::Request(request),
                ses: Some(SesHeader::ResponseWithData(rsp)),
            },
            payload: memory[seg.offset as usize..][..usize::from(seg.len)].to_vec(),
            note: format!("read data for bytes {}.., target PSN {}", seg.offset, data.psn),
        });
        ini.handle_data(*now, cfg, &request, u32::from(seg.len), false).expect("read data for this PDC");
        while let Some(tx) = ini.poll_transmit(*now) {
            let InitiatorTx::Ack(mut a) = tx else { panic!("nothing is lost in this exchange") };
            tgt.handle_ack(*now, cfg, &a).expect("the ACK of the read data");
            let mut answer = Response::default_for(&seg.standard_header(&template, len), ReturnCode::Ok);
            answer.modified_length = len;
            a.next_header = NextHeader::Rsp;
            let note = format!("ACK of the read data up to target PSN {} with DEFAULT_RESPONSE, RC_OK", a.cack_psn);
            let repr = PacketRepr { entropy: None, pds: PdsHeader::Ack(a), ses: Some(SesHeader::Response(answer)) };
            out.push(Packet { from_initiator: true, entropy: 0xC180, repr, payload: Vec::new(), note });
        }
        *now = now.saturating_add(Duration::from_micros(1));
    }
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

/// A classic pcap file (microsecond timestamps, Ethernet link type) holding `frames`, each
/// stamped `spacing_us` after the previous one.
pub fn write_pcap(frames: &[Vec<u8>], spacing_us: u32) -> Vec<u8> {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let header = PcapHeader { datalink: pcap_file::DataLink::ETHERNET, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(Vec::new(), header).expect("writing to a Vec");
    let mut t = std::time::Duration::from_secs(1_700_000_000);
    for f in frames {
        w.write_packet(&PcapPacket::new(t, f.len() as u32, f)).expect("writing to a Vec");
        t += std::time::Duration::from_micros(u64::from(spacing_us));
    }
    w.into_writer()
}

/// A pcapng file (one Ethernet interface) holding `frames`, as Wireshark saves by default.
pub fn write_pcapng(frames: &[Vec<u8>], spacing_us: u32) -> Vec<u8> {
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    let mut w = PcapNgWriter::new(Vec::new()).expect("writing to a Vec");
    let interface = InterfaceDescriptionBlock { linktype: pcap_file::DataLink::ETHERNET, snaplen: 0, options: vec![] };
    w.write_pcapng_block(interface).expect("writing to a Vec");
    let mut t = std::time::Duration::from_secs(1_700_000_000);
    for f in frames {
        let block = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: t,
            original_len: f.len() as u32,
            data: std::borrow::Cow::Borrowed(f),
            options: vec![],
        };
        w.write_pcapng_block(block).expect("writing to a Vec");
        t += std::time::Duration::from_micros(u64::from(spacing_us));
    }
    w.into_inner()
}

/// The Ethernet frames of a capture file, classic pcap (either byte order, micro- or
/// nanosecond stamps) or pcapng, read with the `pcap-file` crate.
pub fn read_capture(bytes: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    use pcap_file::DataLink;
    const PCAPNG_MAGIC: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
    let ethernet = |link: DataLink| {
        if link == DataLink::ETHERNET { Ok(()) } else { Err(format!("link type {link:?} is not Ethernet")) }
    };
    let mut frames = Vec::new();
    if bytes.starts_with(&PCAPNG_MAGIC) {
        use pcap_file::pcapng::Block;
        let mut r = pcap_file::pcapng::PcapNgReader::new(bytes).map_err(|e| format!("pcapng: {e}"))?;
        // The link type of each interface of the current section, in the order described.
        let mut links = r.interfaces().iter().map(|i| i.linktype).collect::<Vec<_>>();
        while let Some(block) = r.next_block() {
            let (interface, data) = match block.map_err(|e| format!("pcapng: {e}"))? {
                Block::SectionHeader(_) => {
                    links.clear();
                    continue;
                }
                Block::InterfaceDescription(i) => {
                    links.push(i.linktype);
                    continue;
                }
                Block::EnhancedPacket(p) => (p.interface_id as usize, p.data.into_owned()),
                Block::SimplePacket(p) => (0, p.data.into_owned()),
                _ => continue,
            };
            ethernet(*links.get(interface).ok_or("pcapng: a packet of an undescribed interface")?)?;
            frames.push(data);
        }
    } else {
        let mut r = pcap_file::pcap::PcapReader::new(bytes).map_err(|e| format!("not a pcap or pcapng file: {e}"))?;
        ethernet(r.header().datalink)?;
        while let Some(p) = r.next_packet() {
            frames.push(p.map_err(|e| format!("pcap: {e}"))?.data.into_owned());
        }
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
    /// The entropy value carried in the UDP source port (UDP mode).
    pub entropy: Option<u16>,
}

/// The UET packet in an Ethernet frame; `None` if the frame is not UET (not UDP to port 4793, not
/// IP protocol `native_protocol`).
pub fn uet_payload(frame: &[u8], native_protocol: u8) -> Result<Option<Found<'_>>, String> {
    uet_payload_on(frame, UDP_PORT, native_protocol)
}

/// [`uet_payload`] with the UDP destination port that marks UET given too.
pub fn uet_payload_on(frame: &[u8], port: u16, native_protocol: u8) -> Result<Option<Found<'_>>, String> {
    let sliced = SlicedPacket::from_ethernet(frame).map_err(|e| format!("outer headers: {e}"))?;
    let addresses = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => [&ip.header().source()[..], &ip.header().destination()[..]].concat(),
        Some(NetSlice::Ipv6(ip)) => [&ip.header().source()[..], &ip.header().destination()[..]].concat(),
        _ => return Ok(None),
    };
    if let Some(TransportSlice::Udp(udp)) = &sliced.transport {
        if udp.destination_port() != port {
            return Ok(None);
        }
        let mut crc_prefix = addresses;
        crc_prefix.extend_from_slice(udp.slice().get(..8).unwrap_or_default());
        let entropy = Some(udp.source_port());
        return Ok(Some(Found { bytes: udp.payload(), encapsulation: Encapsulation::Udp, crc_prefix, entropy }));
    }
    let ip_payload = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => ip.payload(),
        Some(NetSlice::Ipv6(ip)) => ip.payload(),
        _ => return Ok(None),
    };
    if ip_payload.ip_number.0 != native_protocol {
        return Ok(None);
    }
    Ok(Some(Found {
        bytes: ip_payload.payload,
        encapsulation: Encapsulation::NativeIp,
        crc_prefix: addresses,
        entropy: None,
    }))
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
