//! End to end: messages from one `Endpoint` to another over in-memory frames, CRC32C trailer on,
//! beside the floor — the codec work the same frames need with no endpoint — in the same run.
//!
//! * `endpoint/rud_{64,4096,65536}`: ns per message, RUD WRITEs of 64 B and 4 KiB (one packet
//!   each) and 64 KiB (16 packets of 4 KiB), 16 messages in flight on one PDC, kept open. Each packet the
//!   sender's `poll_transmit` names is built in one frame buffer (headers, then the payload copied
//!   from the message's memory, then `append_crc`), handed at once to the receiver's
//!   `handle_crc_packet`, and its payload copied to where the `Placement` says. The receiver's
//!   ACKs go back the same way, and both sides' events are taken every turn. The wire is perfect;
//!   the clock advances 1 µs after each side transmits (a round trip of 2 µs for NSCC to measure,
//!   and the ACK coalescing timer's).
//! * `cms/rud_{64,4096,65536}`: the same with congestion management on (one CCC: an NSCC window
//!   for a 400 Gb/s link and a 4 µs network, REPS over 64 paths), beside `rud_*` in the same run:
//!   its cost per message is the window's accounting and an entropy value per packet.
//! * `cms_rccc/rud_{64,4096,65536}`: the same with RCCC beside NSCC: each request carries its
//!   pull target, the receiver's pull pacer grants credit (CREDIT packets, and the grant in every
//!   ACK_CC) and the sender spends it.
//! * `floor/rud_{64,4096,65536}`: per message, for each of its packets, `PacketRepr::emit` of the
//!   same request (headers, payload copy, CRC), `UetPacket::parse` and `verify_crc` of the frame,
//!   and the copy of its payload out. No ACKs, no state.
//! * `floor_with_ack/rud_{64,4096,65536}`: the floor plus the same for the one ACK per message the
//!   endpoint sends back (a 12-byte ACK with the 12-byte DEFAULT_RESPONSE; every message's last
//!   packet asks for an ACK), the least a reliable message needs on the wire.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration as StdDuration;
use uet_wire::cms::nscc::NsccConfig;
use uet_wire::linklayer::{Duration, Instant, LinkRate};
use uet_wire::msg::{CmsConfig, Controllers, Endpoint, EndpointConfig, Event, MAX_HEADER_LEN, MessageDesc, Service};
use uet_wire::packet::{CRC_LEN, CrcPrefix, append_crc};
use uet_wire::pdc::held::HELD_RESPONSES;
use uet_wire::pdc::{IpAddr, ipv4};
use uet_wire::pds::{
    Ack, AckExtension, AckFlags, AckRequest, DeliveryMode, NextHeader, PdcDest, PdsHeader, Request, RequestFlags,
};
use uet_wire::ses::{
    Opcode, RequestCommon, Response, ResponseList, ResponseOpcode, ReturnCode, SesFlags, SesHeader, StandardRequest,
    StandardTail,
};
use uet_wire::{PacketRepr, UetPacket, WalkConfig};

const MTU: u16 = 4096;
const IN_FLIGHT: usize = 16;
const FRAME: usize = MAX_HEADER_LEN + MTU as usize + CRC_LEN;

/// The CRC prefix of a packet from `src` to `dst`: the two IPv4 addresses.
fn prefix(src: IpAddr, dst: IpAddr) -> [u8; 8] {
    CrcPrefix::ip(&src, &dst).as_bytes().try_into().unwrap()
}

/// The PDC stays open between bursts (a stream of messages, not one PDC per burst).
fn config(addr: IpAddr) -> EndpointConfig {
    EndpointConfig { close_when_idle: false, ..EndpointConfig::new(addr, MTU) }
}

/// [`config`] with congestion management: NSCC for 400 Gb/s in a 4 µs network, REPS over 64
/// paths.
fn managed(addr: IpAddr) -> EndpointConfig {
    let nscc = NsccConfig::new(LinkRate::GBPS_400, Duration::from_micros(4), u32::from(MTU));
    EndpointConfig { cms: Some(CmsConfig::new(nscc, 64)), ..config(addr) }
}

/// [`managed`] with RCCC beside NSCC.
fn managed_rccc(addr: IpAddr) -> EndpointConfig {
    let mut c = managed(addr);
    c.cms = c.cms.map(|cms| CmsConfig { controllers: Controllers::Both, ..cms });
    c
}

/// Two endpoints, the memory each message is read from and written to, and one frame buffer.
struct Pair<const C: usize> {
    eps: [Endpoint<4, 32, 64, HELD_RESPONSES, C>; 2],
    addrs: [IpAddr; 2],
    source: Vec<u8>,
    dest: Vec<u8>,
    frame: Vec<u8>,
    now: Instant,
    in_flight: usize,
}

impl<const C: usize> Pair<C> {
    fn new(len: u32, config: fn(IpAddr) -> EndpointConfig) -> Self {
        let addrs = [ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2])];
        Pair {
            eps: [Endpoint::new(config(addrs[0]), 1), Endpoint::new(config(addrs[1]), 2)],
            addrs,
            source: (0..len).map(|i| i as u8).collect(),
            dest: vec![0; len as usize],
            frame: vec![0; FRAME],
            now: Instant::ZERO,
            in_flight: 0,
        }
    }

    /// After 64 messages, checked to arrive whole.
    fn warmed(mut self) -> Self {
        self.run(64);
        assert_eq!(self.dest, self.source, "the messages arrive whole");
        self
    }

    /// Benchmarks `name`: ns per message sent.
    fn bench(mut self, g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, name: String) {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = std::time::Instant::now();
                self.run(iters);
                start.elapsed()
            })
        });
    }

    /// Sends `count` messages from endpoint 0 to endpoint 1, keeping [`IN_FLIGHT`] started.
    fn run(&mut self, count: u64) {
        let len = self.source.len() as u32;
        let (mut started, mut sent) = (0u64, 0u64);
        while sent < count {
            while started < count && self.in_flight < IN_FLIGHT {
                let desc = MessageDesc::new(self.addrs[1], Service::Rud, Opcode::Write, 1, len);
                self.eps[0].send(desc).unwrap();
                self.in_flight += 1;
                started += 1;
            }
            // 1 µs each way: the receiver answers a turn later (a round trip NSCC can measure).
            for from in [0, 1] {
                self.transmit(from);
                self.now = self.now.saturating_add(Duration::from_micros(1));
            }
            for ep in &mut self.eps {
                if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                    ep.handle_timeout(self.now);
                }
            }
            while let Some(ev) = self.eps[0].poll_event() {
                match ev {
                    Event::Sent(_) => {
                        self.in_flight -= 1;
                        sent += 1;
                    }
                    other => panic!("{other:?}"),
                }
            }
            while let Some(ev) = self.eps[1].poll_event() {
                assert!(matches!(ev, Event::Received { .. }), "{ev:?}");
            }
        }
    }

    /// Every packet endpoint `from` has to send, each built in the frame buffer and handled by
    /// the other endpoint at once.
    fn transmit(&mut self, from: usize) {
        let to = 1 - from;
        let tx_prefix = prefix(self.addrs[from], self.addrs[to]);
        while let Some(t) = self.eps[from].poll_transmit(self.now, &mut self.frame).unwrap() {
            let mut len = t.header_len;
            if let Some(p) = t.payload {
                let bytes = &self.source[p.offset as usize..][..usize::from(p.len)];
                self.frame[len..len + bytes.len()].copy_from_slice(bytes);
                len += bytes.len();
            }
            let len = append_crc(&tx_prefix, &mut self.frame, len).unwrap();
            let placed =
                self.eps[to].handle_crc_packet(self.now, self.addrs[from], &self.frame[..len], &tx_prefix, false);
            if let Some(p) = placed.unwrap() {
                self.dest[p.offset as usize..][..p.payload.len()].copy_from_slice(p.payload);
            }
        }
    }
}

/// A data request of `len` payload bytes at `offset` of a `total`-byte message.
fn request(psn: u32, offset: u32, len: usize, total: u32) -> PacketRepr {
    let mut flags = SesFlags::empty();
    if offset == 0 {
        flags |= SesFlags::SOM;
    }
    if offset as usize + len == total as usize {
        flags |= SesFlags::EOM;
    }
    PacketRepr {
        entropy: None,
        pds: PdsHeader::Request(Request {
            mode: DeliveryMode::Rud,
            next_header: NextHeader::ReqStd,
            flags: RequestFlags::empty(),
            clear_psn_offset: 0,
            psn,
            spdcid: 1,
            dest: PdcDest::Established { dpdcid: 2 },
            cc: None,
        }),
        ses: Some(SesHeader::Standard(StandardRequest {
            common: RequestCommon {
                opcode: Opcode::Write,
                flags,
                ri_generation: 0,
                job_id: 1,
                pid_on_fep: 0,
                resource_index: 0,
            },
            message_id: 1,
            buffer_offset: 0,
            initiator: 0,
            match_bits: 0,
            tail: if offset == 0 {
                StandardTail::Som { header_data: 0 }
            } else {
                StandardTail::Continuation { payload_length: len as u16, message_offset: offset }
            },
            request_length: total,
            ext: None,
        })),
    }
}

/// The floor of one message: every packet emitted with its CRC, walked, CRC-checked and its
/// payload copied out.
fn floor(source: &[u8], dest: &mut [u8], frame: &mut [u8], prefix: &[u8; 8]) {
    let total = source.len() as u32;
    for (k, chunk) in source.chunks(usize::from(MTU)).enumerate() {
        let offset = (k * usize::from(MTU)) as u32;
        let n = request(k as u32, offset, chunk.len(), total).emit(chunk, Some(prefix), frame).unwrap();
        let pkt = UetPacket::parse(&frame[..n], WalkConfig { crc: true, ..WalkConfig::default() }).unwrap();
        pkt.verify_crc(prefix).unwrap();
        let uet_wire::Body::Clear { payload, .. } = pkt.body else { panic!("clear") };
        dest[offset as usize..][..payload.len()].copy_from_slice(payload);
    }
}

/// The ACK of a message's last packet, with its DEFAULT_RESPONSE, emitted with its CRC, walked
/// and CRC-checked.
fn ack_floor(psn: u32, frame: &mut [u8], prefix: &[u8; 8]) -> u32 {
    let ack = PacketRepr {
        entropy: None,
        pds: PdsHeader::Ack(Ack {
            next_header: NextHeader::Rsp,
            flags: AckFlags::empty(),
            request: AckRequest::None,
            ack_psn_offset: 0,
            cack_psn: psn,
            spdcid: 2,
            dpdcid: 1,
            ext: AckExtension::None,
        }),
        ses: Some(SesHeader::Response(Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::DefaultResponse,
            return_code: ReturnCode::Ok,
            message_id: 1,
            ri_generation: 0,
            job_id: 1,
            modified_length: 64,
        })),
    };
    let n = ack.emit(&[], Some(prefix), frame).unwrap();
    let pkt = UetPacket::parse(&frame[..n], WalkConfig { crc: true, ..WalkConfig::default() }).unwrap();
    pkt.verify_crc(prefix).unwrap();
    let uet_wire::Body::Clear { pds: PdsHeader::Ack(a), .. } = pkt.body else { panic!("an ACK") };
    a.cack_psn
}

fn endpoint_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("endpoint");
    g.throughput(Throughput::Elements(1));
    for len in [64u32, 4096, 65536] {
        Pair::<0>::new(len, config).warmed().bench(&mut g, format!("rud_{len}"));
        let pair = Pair::<1>::new(len, managed).warmed();
        assert!(pair.eps[0].congestion(&pair.addrs[1]).is_some_and(|n| n.stats().acks > 0));
        pair.bench(&mut g, format!("cms/rud_{len}"));
        let pair = Pair::<1>::new(len, managed_rccc).warmed();
        assert!(pair.eps[1].pull_stats().is_some_and(|s| s.grants > 0));
        pair.bench(&mut g, format!("cms_rccc/rud_{len}"));

        let source: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut dest = vec![0; len as usize];
        let mut frame = vec![0; FRAME];
        let p = prefix(ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        floor(&source, &mut dest, &mut frame, &p);
        assert_eq!(dest, source);
        g.bench_function(format!("floor/rud_{len}"), |b| {
            b.iter(|| floor(black_box(&source), &mut dest, &mut frame, &p));
        });
        let back = prefix(ipv4([10, 0, 0, 2]), ipv4([10, 0, 0, 1]));
        g.bench_function(format!("floor_with_ack/rud_{len}"), |b| {
            b.iter(|| {
                floor(black_box(&source), &mut dest, &mut frame, &p);
                ack_floor(black_box(7), &mut frame, &back)
            });
        });
    }
    g.finish();
}

criterion_group! {
    name = endpoint;
    config = Criterion::default().measurement_time(StdDuration::from_secs(3));
    targets = endpoint_benches
}
criterion_main!(endpoint);
