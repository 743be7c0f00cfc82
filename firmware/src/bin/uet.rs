//! Two UET endpoints (`Endpoint<8, 8, 32>`) in one Cortex-M4F, joined by a lossy in-memory wire:
//! 200 messages of 64 B, then 200 of 1 KiB, from A to B, 1 % of packets dropped each way. Every
//! byte placed is checked, every message must arrive exactly once. Prints flash-independent
//! facts the program can see (static RAM, peak stack, instructions per message, and the floor:
//! a copy plus CRC-32C of the same bytes); `.ci/run` adds flash from the ELF.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use uet_wire::linklayer::{Duration, Instant};
use uet_wire::msg::{Endpoint, EndpointConfig, Event, MAX_HEADER_LEN, MessageDesc, Service};
use uet_wire::pdc::{IpAddr, ipv4};
use uet_wire::ses::Opcode;
use xlink_firmware::{Meter, Rng, exit, finish, paint_stack, peak_stack, report};

type Ep = Endpoint<8, 8, 32>;

/// Payload bytes per packet.
const MTU: u16 = 1024;
/// Packets the wire holds at once (more are dropped, as a full queue would).
const WIRE: usize = 16;
/// Messages per phase.
const MESSAGES: u32 = 200;

/// The bytes messages are cut from: message `index` is `PATTERN[start(index)..][..len]`, so
/// filling and checking a packet is one copy or compare (the harness stays out of the count).
static PATTERN: [u8; 2048] = {
    let mut p = [0u8; 2048];
    let mut i = 0;
    while i < p.len() {
        p[i] = (i * 7 + (i >> 8)) as u8;
        i += 1;
    }
    p
};

/// Where message `index` starts in [`PATTERN`].
fn start(index: u64) -> usize {
    (index % 1021) as usize
}

/// Bytes `offset..offset + len` of message `index`.
fn bytes(index: u64, offset: u32, len: usize) -> Option<&'static [u8]> {
    PATTERN.get(start(index) + offset as usize..)?.get(..len)
}

/// Packets on their way to one endpoint.
struct Wire {
    packets: [[u8; MAX_HEADER_LEN + MTU as usize]; WIRE],
    lens: [usize; WIRE],
    count: usize,
}

impl Wire {
    const fn new() -> Wire {
        Wire { packets: [[0; MAX_HEADER_LEN + MTU as usize]; WIRE], lens: [0; WIRE], count: 0 }
    }
}

/// What a phase found.
struct Outcome {
    delivered: u32,
    sent: u32,
    wrong: u32,
}

/// A side's address.
fn addr(side: usize) -> IpAddr {
    ipv4([10, 0, 0, 1 + side as u8])
}

/// Moves packets from `from` onto `wire`, dropping some; payload bytes come from the message
/// index kept in the handle's user value. Returns how many it sent (`None` on an error).
fn send_all(ep: &mut Ep, now: Instant, wire: &mut Wire, rng: &mut Rng) -> Option<u32> {
    let mut sent = 0;
    loop {
        let slot = wire.count;
        let buf = wire.packets.get_mut(slot.min(WIRE - 1))?;
        let t = ep.poll_transmit(now, buf).ok()?;
        let Some(t) = t else { return Some(sent) };
        sent += 1;
        let mut len = t.header_len;
        if let Some(p) = t.payload {
            let n = usize::from(p.len);
            let (Some(room), Some(src)) = (buf.get_mut(len..len + n), bytes(p.msg.user(), p.offset, n)) else {
                return None;
            };
            linklayer::bytes::copy_prefix(room, src);
            len += n;
        }
        if slot < WIRE && !rng.chance(10) {
            if let Some(l) = wire.lens.get_mut(slot) {
                *l = len;
            }
            wire.count += 1;
        }
    }
}

/// Hands every packet on `wire` to `ep`; checks placed bytes against the message's user value
/// carried in its header data.
fn receive_all(ep: &mut Ep, now: Instant, from: IpAddr, wire: &mut Wire, wrong: &mut u32) -> bool {
    for (pkt, &len) in wire.packets.iter().zip(wire.lens.iter()).take(wire.count) {
        let Some(pkt) = pkt.get(..len) else { return false };
        match ep.handle_packet(now, from, pkt) {
            Ok(Some(p)) => {
                if bytes(p.header.match_bits, p.offset, p.payload.len()) != Some(p.payload) {
                    *wrong += 1;
                }
            }
            Ok(None) => {}
            Err(_) => {}
        }
    }
    wire.count = 0;
    true
}

/// One phase: `MESSAGES` messages of `len` bytes from A to B.
fn phase(eps: &mut [Ep; 2], wires: &mut [Wire; 2], now: &mut Instant, rng: &mut Rng, len: u32) -> Outcome {
    let mut o = Outcome { delivered: 0, sent: 0, wrong: 0 };
    let mut queued = 0u32;
    let [a, b] = eps;
    let [to_b, to_a] = wires;
    for _turn in 0..2_000_000u32 {
        while queued < MESSAGES {
            let index = u64::from(queued);
            let desc = MessageDesc::new(addr(1), Service::Rud, Opcode::Write, 7, len).with_match_bits(index);
            match a.send(MessageDesc { user: index, ..desc }) {
                Ok(_) => queued += 1,
                Err(_) => break,
            }
        }
        let (Some(from_a), Some(from_b)) = (send_all(a, *now, to_b, rng), send_all(b, *now, to_a, rng)) else {
            return o;
        };
        if !(receive_all(b, *now, addr(0), to_b, &mut o.wrong) && receive_all(a, *now, addr(1), to_a, &mut o.wrong)) {
            return o;
        }
        // A turn that sent nothing sleeps until the next deadline, as firmware would.
        let next = now.saturating_add(Duration::from_micros(1));
        *now = match (from_a + from_b, a.poll_timeout().into_iter().chain(b.poll_timeout()).min()) {
            (0, Some(t)) => t.max(next),
            _ => next,
        };
        for ep in [&mut *a, &mut *b] {
            if ep.poll_timeout().is_some_and(|t| t <= *now) {
                ep.handle_timeout(*now);
            }
        }
        while let Some(ev) = a.poll_event() {
            match ev {
                Event::Sent(_) => o.sent += 1,
                _ => o.wrong += 1,
            }
        }
        while let Some(ev) = b.poll_event() {
            match ev {
                Event::Received { len: l, .. } if l == len => o.delivered += 1,
                _ => o.wrong += 1,
            }
        }
        if o.sent == MESSAGES && a.is_idle() && b.is_idle() {
            break;
        }
    }
    o
}

#[entry]
fn main() -> ! {
    let Some(core) = cortex_m::Peripherals::take() else { exit(false) };
    let meter = Meter::start(core.SYST);
    report("calibration: 100000 two-instruction loops measured as ", meter.calibrate(100_000), " instructions");
    let _ = paint_stack();
    let t0 = meter.now();
    let Some(eps) = cortex_m::singleton!(: [Ep; 2] = [
        Ep::new(EndpointConfig::new(addr(0), MTU), 1),
        Ep::new(EndpointConfig::new(addr(1), MTU), 2),
    ]) else {
        exit(false)
    };
    let Some(wires) = cortex_m::singleton!(: [Wire; 2] = [Wire::new(), Wire::new()]) else { exit(false) };
    report("start-up: ", meter.now() - t0, " instructions");
    report("start-up peak stack: ", peak_stack() as u64, " B");
    // From here on: the stack the running engines need, below this frame.
    let sp = paint_stack();
    let (mut now, mut rng, mut ok) = (Instant::ZERO, Rng::new(1), true);
    for len in [64u32, 1024] {
        let t0 = meter.now();
        let o = phase(eps, wires, &mut now, &mut rng, len);
        let spent = meter.now() - t0;
        report("message bytes: ", u64::from(len), "");
        report("  delivered: ", u64::from(o.delivered), "");
        report("  instructions per message: ", spent / u64::from(MESSAGES), "");
        ok &= o.delivered == MESSAGES && o.sent == MESSAGES && o.wrong == 0;
        // The floor: copy the message's bytes and CRC-32C them, as sending and receiving must.
        let mut dst = [0u8; 1024];
        let t0 = meter.now();
        let mut crc = 0u32;
        for i in 0..MESSAGES {
            let (Some(s), Some(d)) = (bytes(u64::from(i), 0, len as usize), dst.get_mut(..len as usize)) else {
                exit(false)
            };
            linklayer::bytes::copy_prefix(d, s);
            crc ^= uet_wire::crc32c::crc32c(&[], d);
        }
        report("  floor (copy + CRC-32C), instructions per message: ", (meter.now() - t0) / u64::from(MESSAGES), "");
        core::hint::black_box(crc);
    }
    finish("uet", ok, sp)
}
