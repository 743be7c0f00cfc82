//! Two UET endpoints (`Endpoint<8, 8, 32>`, 16 shared message-order entries, no extension headers) in one Cortex-M4F, joined by an in-memory wire that
//! carries one packet at a time and loses 1 % of them: 200 messages of 64 B, then 200 of 1 KiB,
//! from A to B; first with PDCs closed as soon as they are idle (the default), then again with
//! the endpoints configured afresh in place and PDCs kept open. A turn in which neither endpoint
//! sends sleeps to the earliest deadline. Every
//! byte placed is checked, every message must arrive exactly once. Prints flash-independent
//! facts the program can see (static RAM, peak stack, instructions per message, and the floor:
//! a copy plus CRC-32C of the same bytes); `.ci/run` adds flash from the ELF.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use uet_wire::linklayer::{Duration, Instant};
use uet_wire::msg::{
    CONTROL_QUEUE, Endpoint, EndpointConfig, Event, MAX_HEADER_LEN, MessageDesc, ORDER_WINDOW, Service,
};
use uet_wire::pdc::{IpAddr, ipv4};
use uet_wire::ses::Opcode;
use xlink_firmware::{Meter, Rng, exit, finish, out, paint_stack, peak_stack, report};

/// The default sizes but `O` and `X`: each endpoint has one target PDC at a time here, which
/// needs at most 14 shared message-order entries besides its own two (the default, 256, suits a
/// host receiving from many peers at once), and sends no atomics or rendezvous sends, so it
/// keeps no extension headers.
type Ep = Endpoint<8, 8, 32, { uet_wire::pdc::held::HELD_RESPONSES }, 0, ORDER_WINDOW, CONTROL_QUEUE, 16, 0>;

/// Payload bytes per packet.
const MTU: u16 = 1024;
/// One packet on the wire.
type Packet = [u8; MAX_HEADER_LEN + MTU as usize];
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

/// Sends one packet from `from` (at `src`) to `to`, or loses it (1 %): the wire holds one packet
/// at a time, so it costs one buffer, not a queue. Payload bytes come from the message index in
/// the handle's user value; placed bytes are checked against it. Returns whether `from` had a
/// packet (`None` on an error).
fn carry(
    from: &mut Ep,
    to: &mut Ep,
    src: IpAddr,
    now: Instant,
    buf: &mut Packet,
    rng: &mut Rng,
    wrong: &mut u32,
) -> Option<bool> {
    let Some(t) = from.poll_transmit(now, buf).ok()? else { return Some(false) };
    let mut len = t.header_len;
    if let Some(p) = t.payload {
        let n = usize::from(p.len);
        let room = buf.get_mut(len..len + n)?;
        linklayer::bytes::copy_prefix(room, bytes(p.msg.user(), p.offset, n)?);
        len += n;
    }
    if rng.chance(10) {
        return Some(true);
    }
    if let Ok(Some(p)) = to.handle_packet(now, src, buf.get(..len)?)
        && bytes(p.header.match_bits, p.offset, p.payload.len()) != Some(p.payload)
    {
        *wrong += 1;
    }
    Some(true)
}

/// One phase: `MESSAGES` messages of `len` bytes from A to B. It ends when every message is
/// sent and delivered and, where PDCs close when idle, both endpoints are idle.
fn phase(eps: &mut [Ep; 2], buf: &mut Packet, now: &mut Instant, rng: &mut Rng, len: u32) -> Outcome {
    let mut o = Outcome { delivered: 0, sent: 0, wrong: 0 };
    let mut queued = 0u32;
    let [a, b] = eps;
    for _turn in 0..2_000_000u32 {
        while queued < MESSAGES {
            let index = u64::from(queued);
            let desc = MessageDesc::new(addr(1), Service::Rud, Opcode::Write, 7, len).with_match_bits(index);
            match a.send(MessageDesc { user: index, ..desc }) {
                Ok(_) => queued += 1,
                Err(_) => break,
            }
        }
        // Both ways, a packet at a time, until neither has one to send.
        let mut sent = 0;
        loop {
            let (Some(x), Some(y)) = (
                carry(a, b, addr(0), *now, buf, rng, &mut o.wrong),
                carry(b, a, addr(1), *now, buf, rng, &mut o.wrong),
            ) else {
                return o;
            };
            if !x && !y {
                break;
            }
            sent += u32::from(x) + u32::from(y);
        }
        // A turn that sent nothing sleeps until the next deadline, as firmware would.
        let next = now.saturating_add(Duration::from_micros(1));
        *now = match (sent, a.poll_timeout().into_iter().chain(b.poll_timeout()).min()) {
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
        let settled = !a.config().close_when_idle || (a.is_idle() && b.is_idle());
        if o.sent == MESSAGES && o.delivered == MESSAGES && a.messages_in_flight() == 0 && settled {
            break;
        }
    }
    o
}

#[entry]
fn main() -> ! {
    // Both all-zero constants: they live in `.bss` (no flash, no start-up copy), and the
    // endpoints are configured where they lie.
    static mut EPS: [Ep; 2] = [Ep::EMPTY; 2];
    static mut BUF: Packet = [0; MAX_HEADER_LEN + MTU as usize];
    let Some(core) = cortex_m::Peripherals::take() else { exit(false) };
    let meter = Meter::start(core.SYST);
    meter.check_scale();
    let _ = paint_stack();
    let t0 = meter.now();
    let (eps, buf) = (EPS, BUF);
    let config =
        |i: usize, close_when_idle: bool| EndpointConfig { close_when_idle, ..EndpointConfig::new(addr(i), MTU) };
    for (i, ep) in eps.iter_mut().enumerate() {
        ep.init(config(i, true), i as u64 + 1);
    }
    report("start-up: ", meter.now() - t0, " instructions");
    let startup_stack = peak_stack();
    report("start-up peak stack: ", startup_stack as u64, " B");
    // From here on: the stack the running engines need, below this frame.
    let sp = paint_stack();
    let (mut now, mut rng, mut ok) = (Instant::ZERO, Rng::new(1), true);
    for close_when_idle in [true, false] {
        if close_when_idle {
            out("PDCs closed when idle (the default)\n");
        } else {
            // Configured afresh where they lie, PDCs kept open from here on.
            for (i, ep) in eps.iter_mut().enumerate() {
                ep.init(config(i, false), i as u64 + 1);
            }
            out("PDCs kept open\n");
        }
        for len in [64u32, 1024] {
            let t0 = meter.now();
            let o = phase(eps, buf, &mut now, &mut rng, len);
            let spent = meter.now() - t0;
            report("  message bytes: ", u64::from(len), "");
            report("    delivered: ", u64::from(o.delivered), "");
            report("    instructions per message: ", spent / u64::from(MESSAGES), "");
            ok &= o.delivered == MESSAGES && o.sent == MESSAGES && o.wrong == 0;
            if close_when_idle {
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
                report(
                    "    floor (copy + CRC-32C), instructions per message: ",
                    (meter.now() - t0) / u64::from(MESSAGES),
                    "",
                );
                core::hint::black_box(crc);
            }
        }
    }
    finish("uet", ok, startup_stack, sp)
}
