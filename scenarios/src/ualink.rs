//! Two UALink accelerator ports (`UpliPort` with its defaults) joined by a wire that loses 1 % of
//! flits each way: [`run`] sends [`WRITES`] writes of 64 B from port 1 to port 2, each answered.
//! Every byte written is checked and every write must complete exactly once.

use ualink_flit::dl::{FLIT_LEN, Transmitted};
use ualink_flit::port::{Event, PortConfig, UpliPort};
use ualink_flit::upli::{Request, Status};

use crate::Rng;

/// Writes in a run.
pub const WRITES: u32 = 400;

/// The bytes of write `index`: 64 bytes of the pattern from `31 index mod 1021` (32-bit
/// arithmetic: a 64-bit remainder is a library call on a 32-bit core).
#[inline]
pub fn data(index: u32) -> &'static [u8] {
    crate::pattern((index as usize).wrapping_mul(31) % 1021, 64).unwrap_or(&[])
}

/// Configures and starts `ports` as accelerators 1 and 2; false if either refuses.
#[inline]
pub fn start(ports: &mut [UpliPort; 2]) -> bool {
    ports.iter_mut().zip([1, 2]).all(|(p, acc)| p.init(PortConfig::new(acc)).is_ok() && p.start().is_ok())
}

/// What a run found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Writes answered with `Okay`.
    pub completed: u32,
    /// Anything else: a wrong byte, an unexpected event, a refused response.
    pub wrong: u32,
    /// Flit times the run took.
    pub flit_times: u64,
}

impl Outcome {
    /// Every write completed once, nothing wrong.
    #[inline]
    pub const fn ok(&self) -> bool {
        self.completed == WRITES && self.wrong == 0
    }
}

/// One flit time one way: what `from` sends reaches `to`, or is lost (1 %).
#[inline]
fn carry(from: &mut UpliPort, to: &mut UpliPort, now: u64, flit: &mut [u8; FLIT_LEN], rng: &mut Rng) {
    match from.poll_transmit(now, flit) {
        Transmitted::Flit { .. } if rng.chance(10) => _ = to.handle_lost(),
        Transmitted::Flit { .. } => _ = to.handle_flit(flit),
        Transmitted::Idle => to.handle_idle(),
    }
}

/// [`WRITES`] writes from port 1 to port 2 of `ports` (started by [`start`]), one flit time at a
/// time, until every one is answered.
#[inline]
pub fn run(ports: &mut [UpliPort; 2], rng: &mut Rng) -> Outcome {
    let mut o = Outcome { completed: 0, wrong: 0, flit_times: 0 };
    let mut issued = 0u32;
    let mut wire = [[0u8; FLIT_LEN]; 2];
    let [a, b] = ports;
    for now in 0..2_000_000u64 {
        o.flit_times = now;
        while issued < WRITES {
            let Ok(req) = Request::write(u64::from(issued) * 64, 64) else { return o };
            match a.request(req.to_acc(2), data(issued)) {
                Ok(_) => issued += 1,
                Err(_) => break,
            }
        }
        let [to_b, to_a] = &mut wire;
        carry(a, b, now, to_b, rng);
        carry(b, a, now, to_a, rng);
        for p in [&mut *a, &mut *b] {
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
        }
        while let Some(ev) = b.poll_event() {
            if let Event::Request { handle, req, data: d } = ev {
                if !crate::same_bytes(d.bytes(), data((req.addr / 64) as u32)) {
                    o.wrong += 1;
                }
                if b.respond(handle, Status::Okay, &[]).is_err() {
                    o.wrong += 1;
                }
            }
        }
        while let Some(ev) = a.poll_event() {
            match ev {
                Event::Response { status: Status::Okay, .. } => o.completed += 1,
                Event::Link { .. } | Event::Service(_) => {}
                _ => o.wrong += 1,
            }
        }
        if o.completed == WRITES {
            break;
        }
    }
    o
}

/// The floor of `flit_times` flit times: each port copies a 640-byte flit and runs the DL CRC
/// over it. Returns the CRC bytes folded together (keep it, or the work may be optimised away).
#[inline]
pub fn floor(flit_times: u32) -> u8 {
    let mut flits = [[0u8; FLIT_LEN]; 2];
    let mut crc = 0u8;
    for i in 0..flit_times {
        let [x, y] = &mut flits;
        *x = *y;
        if let Some(b) = x.first_mut() {
            *b = i as u8;
        }
        crc ^= ualink_flit::dl::crc::flit_crc(x).iter().fold(0, |a, b| a ^ b);
        *y = *x;
        crc ^= ualink_flit::dl::crc::flit_crc(y).iter().fold(0, |a, b| a ^ b);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_write_completes_once() {
        let mut ports = [UpliPort::EMPTY, UpliPort::EMPTY];
        assert!(start(&mut ports));
        let o = run(&mut ports, &mut Rng::new(1));
        assert!(o.ok(), "{o:?}");
        assert!(o.flit_times > u64::from(WRITES) / 8);
    }
}
