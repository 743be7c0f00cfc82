//! Two UET endpoints (`Endpoint<8, 8, 32>`, 16 shared message-order entries, no extension
//! headers, one return direction and one request direction) joined by an in-memory wire that carries one packet at a time and loses 1 % of them.
//! A [`phase`] sends [`MESSAGES`] messages of one size from A to B. A turn in which neither
//! endpoint sends sleeps to the earliest deadline, as firmware would. The payload of message `i`
//! is cut from a fixed pattern, so filling and checking a packet is one copy or compare and the
//! harness stays out of the count.

use linklayer::{Duration, Instant};
use uet_wire::msg::{
    CONTROL_QUEUE, Endpoint, EndpointConfig, Event, MAX_HEADER_LEN, MessageDesc, ORDER_WINDOW, Service,
};
use uet_wire::pdc::{IpAddr, ipv4};
use uet_wire::ses::Opcode;

use crate::Rng;

/// The default sizes but `O`, `X`, `D` and `S`: each endpoint has one target PDC at a time here,
/// which needs at most 14 shared message-order entries besides its own two (the default, 256,
/// suits a host receiving from many peers at once) and at most one return direction for read
/// data, one initiator PDC at a time, which needs one request direction, and sends no atomics or
/// rendezvous sends, so it keeps no extension headers.
pub type Ep = Endpoint<8, 8, 32, { uet_wire::pdc::held::HELD_RESPONSES }, 0, ORDER_WINDOW, CONTROL_QUEUE, 16, 0, 1, 1>;

/// Payload bytes per packet.
pub const MTU: u16 = 1024;

/// One packet on the wire.
pub type Packet = [u8; MAX_HEADER_LEN + MTU as usize];

/// Messages per phase.
pub const MESSAGES: u32 = 200;

/// Bytes `offset..offset + len` of message `index`.
#[inline]
pub fn bytes(index: u64, offset: u32, len: usize) -> Option<&'static [u8]> {
    // The remainder in `usize`: a hardware division on a 32-bit core, where `u64`'s is a call.
    let start = usize::try_from(index).ok()? % 1021;
    crate::pattern(start + offset as usize, len)
}

/// Side `side`'s address (A is 0, B is 1).
#[inline]
pub fn addr(side: usize) -> IpAddr {
    ipv4([10, 0, 0, 1 + side as u8])
}

/// Side `side`'s configuration: the default with `close_when_idle` as given.
#[inline]
pub fn config(side: usize, close_when_idle: bool) -> EndpointConfig {
    EndpointConfig { close_when_idle, ..EndpointConfig::new(addr(side), MTU) }
}

/// What a phase found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Messages B reported received at the phase's length.
    pub delivered: u32,
    /// Messages A reported sent.
    pub sent: u32,
    /// Anything else: a wrong byte, an unexpected event.
    pub wrong: u32,
}

impl Outcome {
    /// Every message sent and delivered once, nothing wrong.
    #[inline]
    pub const fn ok(&self) -> bool {
        self.delivered == MESSAGES && self.sent == MESSAGES && self.wrong == 0
    }
}

/// Sends one packet from `from` (at `src`) to `to`, or loses it (1 %). Payload bytes come from
/// the message index in the handle's user value; placed bytes are checked against it. Returns
/// whether `from` had a packet (`None` on an error).
#[inline]
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
        && !bytes(p.header.match_bits, p.offset, p.payload.len()).is_some_and(|b| crate::same_bytes(b, p.payload))
    {
        *wrong += 1;
    }
    Some(true)
}

/// One phase: [`MESSAGES`] messages of `len` bytes (at most 1 024) from A to B, configured by
/// [`config`]. It ends when every message is sent and delivered and, where PDCs close when
/// idle, both endpoints are idle.
#[inline]
pub fn phase(eps: &mut [Ep; 2], buf: &mut Packet, now: &mut Instant, rng: &mut Rng, len: u32) -> Outcome {
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

/// The floor of a phase: each of its messages' `len` bytes (at most 1 024) copied once and
/// CRC-32C'd, as sending and receiving them must at least. Returns the CRCs folded together
/// (keep it, or the work may be optimised away).
#[inline]
pub fn floor(len: u32) -> u32 {
    let mut dst = [0u8; MTU as usize];
    let mut crc = 0u32;
    for i in 0..MESSAGES {
        let (Some(s), Some(d)) = (bytes(u64::from(i), 0, len as usize), dst.get_mut(..len as usize)) else {
            return crc;
        };
        linklayer::bytes::copy_prefix(d, s);
        crc ^= uet_wire::crc32c::crc32c(&[], d);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_delivers_each_message_once() {
        let mut eps = [Ep::EMPTY, Ep::EMPTY];
        let mut buf = [0u8; MAX_HEADER_LEN + MTU as usize];
        let (mut now, mut rng) = (Instant::ZERO, Rng::new(1));
        for close_when_idle in [true, false] {
            for (i, ep) in eps.iter_mut().enumerate() {
                ep.init(config(i, close_when_idle), i as u64 + 1);
            }
            for len in [64, 1024] {
                let o = phase(&mut eps, &mut buf, &mut now, &mut rng, len);
                assert!(o.ok(), "{o:?} ({len} B, close when idle: {close_when_idle})");
            }
        }
        // The floor CRCs the bytes it copied: the same as the messages' own bytes give.
        for len in [64, 1024] {
            let direct = (0..MESSAGES)
                .filter_map(|i| bytes(u64::from(i), 0, len as usize))
                .fold(0, |crc, b| crc ^ uet_wire::crc32c::crc32c(&[], b));
            assert_eq!(floor(len), direct, "{len} B");
        }
    }
}
