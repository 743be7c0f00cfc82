//! Two UET endpoints over real UDP sockets on localhost, one thread each, driven by the host's
//! monotonic clock: endpoint A sends messages of one size to endpoint B, keeping a window of them
//! in flight, while a seeded injector drops datagrams both ways. Sockets are `quinn-udp`'s
//! (`recvmmsg` batches on receive, GSO batches of equal datagrams on send where the kernel has
//! it, and ECN readout, which congestion control will need).
//!
//! For each message size (64 B, 4 KiB, 64 KiB) and loss rate (0 %, 1 %) it prints messages/s,
//! payload MB/s, the resends by cause (timeout / NACK / SACK: packets marked, see
//! `EndpointStats::resends`), and the verdict: every message A completed arrived at B exactly
//! once with the right bytes, and none failed. Beside it, in the same run, the kernel carrying
//! datagrams of the same size with a plain `send_to` loop and no protocol at all (one syscall
//! per datagram; the endpoints batch theirs, so they may beat it), and the ratio of the two.
//! With `UET_UDP_DEBUG` set, A's whole `EndpointStats` goes to stderr after each run.
//!
//! Usage: `uet-udp [--seconds S] [--window W] [--sizes 64,4096,65536] [--losses 0,0.01]`. Each
//! datagram is one UET packet from the PDS header on (UET over UDP, UE 1.0 §3.2; the
//! well-known port 4793 is not used here, both ends take ephemeral ports on 127.0.0.1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use quinn_udp::{RecvMeta, Transmit as UdpTransmit, UdpSocketState};
use std::collections::HashMap;
use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration as StdDuration, Instant as Clock};
use uet_wire::linklayer::{Instant, StdClock};
use uet_wire::msg::{Endpoint, EndpointConfig, Event, MAX_HEADER_LEN, MessageDesc, Service};
use uet_wire::pdc::{PdcConfig, ip};
use uet_wire::ses::Opcode;

/// Payload bytes per packet.
const MTU: u16 = 4096;
/// Up to 4 PDCs each way, 64 messages, 256 events.
type Ep = Endpoint<4, 64, 256>;
/// Receive batch: datagrams per `recvmmsg`, and the room for each (a GRO batch fills it).
const RECV_BATCH: usize = 8;
const RECV_BUF: usize = 64 * 1024;
/// The pattern every message's bytes come from: message `k`'s byte `o` is `SOURCE[k % 251 + o]`.
const SOURCE_LEN: usize = 64 * 1024 + 256;
/// Waits up to this long spin on the socket; longer ones block in the kernel, which wakes them
/// on a scheduler tick.
const SPIN: StdDuration = StdDuration::from_millis(5);

/// Two UET endpoints over UDP on localhost, with loss, reporting throughput and exactly-once.
#[derive(clap::Parser, Debug)]
#[command(version)]
struct Args {
    /// Seconds of sending per size and loss rate.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Messages A keeps in flight.
    #[arg(long, default_value_t = 32)]
    window: usize,
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,4096,65536")]
    sizes: Vec<u32>,
    /// Loss probabilities, each direction.
    #[arg(long, value_delimiter = ',', default_value = "0,0.01")]
    losses: Vec<f64>,
    /// Seed of the loss injector.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let source: Vec<u8> = (0..SOURCE_LEN).map(|i| (i * 131 + (i >> 8)) as u8).collect();
    println!(
        "uet-udp: two endpoints over UDP on 127.0.0.1 (quinn-udp), window {}, {} s per run, software profile",
        args.window, args.seconds
    );
    println!(
        "{:>8} {:>6} {:>10} {:>9} {:>22} {:>12} {:>14} {:>7}",
        "size", "loss", "msgs/s", "MB/s", "resends t/n/s", "verdict", "send_to MB/s", "vs it"
    );
    let mut ok = true;
    for &size in &args.sizes {
        // The floor: the same datagrams carried by the kernel alone.
        let floor = plain_send_to(size, args.seconds.min(1.0));
        for &loss in &args.losses {
            let r = run(&args, size, loss, &source);
            ok &= r.exactly_once;
            println!(
                "{:>8} {:>5.1}% {:>10.0} {:>9.1} {:>22} {:>12} {:>14.1} {:>6.2}x",
                size,
                loss * 100.0,
                r.messages as f64 / r.seconds,
                r.bytes as f64 / r.seconds / 1e6,
                format!("{}/{}/{}", r.resends.0, r.resends.1, r.resends.2),
                if r.exactly_once { "exactly once" } else { "FAILED" },
                floor,
                r.bytes as f64 / r.seconds / 1e6 / floor.max(1e-9),
            );
        }
    }
    if !ok {
        println!("FAILED: a message was lost, duplicated, corrupted or failed");
        std::process::exit(1);
    }
}

/// What one run measured.
struct Report {
    messages: u64,
    bytes: u64,
    seconds: f64,
    /// Resends by timeout, NACK, SACK.
    resends: (u64, u64, u64),
    exactly_once: bool,
}

/// One side's socket, its quinn-udp state, its peer, the loss injector and the clock.
struct Net {
    sock: UdpSocket,
    state: UdpSocketState,
    peer: SocketAddr,
    rng: u64,
    loss: f64,
    /// The endpoints' clock: monotonic, its epoch the run's start.
    clock: StdClock,
    /// Datagrams waiting to go as one GSO batch (equal lengths), and that length.
    batch: Vec<u8>,
    batch_len: usize,
}

impl Net {
    fn new(sock: UdpSocket, peer: SocketAddr, seed: u64, loss: f64, clock: StdClock) -> Net {
        let state = UdpSocketState::new((&sock).into()).expect("quinn-udp socket state");
        sock.set_nonblocking(true).unwrap();
        Net { sock, state, peer, rng: seed | 1, loss, clock, batch: Vec::new(), batch_len: 0 }
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn lost(&mut self) -> bool {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 1_000_000) as f64 / 1e6 < self.loss
    }

    /// Queues one datagram; datagrams of one length go out together (GSO), the batch flushed
    /// when the length changes or it is full.
    fn send(&mut self, datagram: &[u8]) {
        if self.lost() {
            return;
        }
        // A GSO send carries at most `max_gso_segments` datagrams and 64 KiB in all.
        let full = self.batch.len() / self.batch_len.max(1) >= self.state.max_gso_segments()
            || self.batch.len() + datagram.len() > 65_000;
        if !self.batch.is_empty() && (datagram.len() != self.batch_len || full) {
            self.flush();
        }
        self.batch_len = datagram.len();
        self.batch.extend_from_slice(datagram);
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let segments = self.batch.len() / self.batch_len;
        let t = UdpTransmit {
            destination: self.peer,
            ecn: None,
            contents: &self.batch,
            segment_size: (segments > 1).then_some(self.batch_len),
            src_ip: None,
        };
        // A full socket buffer drops the batch, as the wire would.
        let _ = self.state.send((&self.sock).into(), &t);
        self.batch.clear();
    }

    /// Receives what has arrived, waiting at most `wait` when nothing has, and hands each
    /// datagram to `take`.
    fn recv(&mut self, bufs: &mut [Vec<u8>], wait: Option<StdDuration>, mut take: impl FnMut(&[u8])) -> usize {
        let wait = wait.unwrap_or(StdDuration::ZERO);
        let until = Clock::now() + wait;
        if wait > SPIN {
            // `recvmmsg` on a blocking socket would wait for a whole batch: wait for the first
            // datagram with a blocking peek (the kernel's timeout has a granularity of a
            // scheduler tick, so it stops a tick short), then take what is there.
            self.sock.set_nonblocking(false).unwrap();
            self.sock.set_read_timeout(Some(wait - SPIN)).unwrap();
            let _ = self.sock.peek(&mut [0u8; 1]);
            self.sock.set_nonblocking(true).unwrap();
        }
        loop {
            let n = self.recv_now(bufs, &mut take);
            // Waits shorter than a tick (a reorder window, a short timeout) are spun.
            if n > 0 || Clock::now() >= until {
                return n;
            }
            std::thread::yield_now();
        }
    }

    /// Takes what has arrived, without waiting.
    fn recv_now(&mut self, bufs: &mut [Vec<u8>], take: &mut impl FnMut(&[u8])) -> usize {
        let mut meta = [RecvMeta::default(); RECV_BATCH];
        let mut slices: Vec<IoSliceMut<'_>> = bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let Ok(n) = self.state.recv((&self.sock).into(), &mut slices, &mut meta) else { return 0 };
        let mut count = 0;
        for (m, buf) in meta.iter().zip(bufs.iter()).take(n) {
            let stride = m.stride.max(1);
            for datagram in buf[..m.len].chunks(stride) {
                take(datagram);
                count += 1;
            }
        }
        count
    }
}

fn socket_pair() -> (UdpSocket, UdpSocket) {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    (a, b)
}

fn uet_addr(addr: SocketAddr) -> uet_wire::pdc::IpAddr {
    ip(addr.ip())
}

/// How long until `deadline`, from `now` (zero if past; `None` without a deadline).
fn until(now: Instant, deadline: Option<Instant>) -> StdDuration {
    match deadline {
        Some(d) => StdDuration::from_nanos(d.as_nanos().saturating_sub(now.as_nanos())),
        None => StdDuration::from_millis(5),
    }
}

/// Runs A sending `size`-byte messages to B for `args.seconds` under `loss`.
fn run(args: &Args, size: u32, loss: f64, source: &[u8]) -> Report {
    let (sa, sb) = socket_pair();
    let (addr_a, addr_b) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    let cfg = |addr| EndpointConfig { pdc: PdcConfig::software(), ..EndpointConfig::new(uet_addr(addr), MTU) };
    let clock = StdClock::new();
    let done = AtomicBool::new(false);
    // The endpoint keeps the last of its 64 message slots for read data.
    let window = args.window.min(63);
    let (seconds, seed) = (args.seconds, args.seed);
    std::thread::scope(|s| {
        let b = s.spawn(|| receiver(Net::new(sb, addr_a, seed ^ 0xB, loss, clock), cfg(addr_b), source, &done));
        let (sent, bytes, elapsed, a_stats) =
            sender(Net::new(sa, addr_b, seed ^ 0xA, loss, clock), cfg(addr_a), size, window, seconds, source);
        done.store(true, Ordering::Relaxed);
        let received = b.join().unwrap();
        // Exactly once: B received every message A completed, once each, with the right bytes.
        let exactly_once = received.good
            && received.counts.len() as u64 == sent
            && received.counts.values().all(|&c| c == 1)
            && (0..sent).all(|k| received.counts.contains_key(&k));
        let r = a_stats.resends;
        Report { messages: sent, bytes, seconds: elapsed, resends: (r.timeout, r.nack, r.sack), exactly_once }
    })
}

/// A's side: keeps `window` messages in flight for `seconds`, then lets them complete. Returns
/// messages completed, their bytes, the seconds it took and A's counters.
fn sender(
    mut net: Net,
    cfg: EndpointConfig,
    size: u32,
    window: usize,
    seconds: f64,
    source: &[u8],
) -> (u64, u64, f64, uet_wire::msg::EndpointStats) {
    let mut ep = Box::new(Ep::new(cfg, 0xA11CE));
    let dst = uet_addr(net.peer);
    let mut bufs = vec![vec![0u8; RECV_BUF]; RECV_BATCH];
    let mut out = vec![0u8; MAX_HEADER_LEN + usize::from(MTU)];
    let stop_at = Clock::now() + StdDuration::from_secs_f64(seconds);
    let (mut next, mut completed, mut failed) = (0u64, 0u64, 0u64);
    loop {
        let now = net.now();
        let sending = Clock::now() < stop_at;
        while sending && ep.messages_in_flight() < window {
            let d = MessageDesc::new(dst, Service::Rud, Opcode::Send, 1, size).with_match_bits(next).with_user(next);
            ep.send(d).unwrap();
            next += 1;
        }
        let mut moved = 0usize;
        while let Some(t) = ep.poll_transmit(now, &mut out).unwrap() {
            let mut n = t.header_len;
            if let Some(p) = t.payload {
                let from = (p.msg.user() % 251) as usize + p.offset as usize;
                out[n..n + usize::from(p.len)].copy_from_slice(&source[from..from + usize::from(p.len)]);
                n += usize::from(p.len);
            }
            net.send(&out[..n]);
            moved += 1;
        }
        net.flush();
        let wait = if moved > 0 { None } else { Some(until(now, ep.poll_timeout())) };
        let (from, clock) = (uet_addr(net.peer), net.clock);
        net.recv(&mut bufs, wait, |d| {
            // A packet of another run or a stray: refused, nothing changes.
            let _ = ep.handle_packet(clock.now(), from, d);
        });
        let now = net.now();
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
        while let Some(ev) = ep.poll_event() {
            match ev {
                Event::Sent(_) => completed += 1,
                Event::Failed { .. } => failed += 1,
                _ => {}
            }
        }
        if !sending && ep.messages_in_flight() == 0 {
            break;
        }
    }
    let elapsed = net.now().as_nanos() as f64 / 1e9;
    if std::env::var_os("UET_UDP_DEBUG").is_some() {
        eprintln!("{:?}", ep.stats());
    }
    // A failed message fails the verdict: count it as never sent.
    let sent = if failed > 0 { u64::MAX } else { completed };
    (sent, completed * u64::from(size), elapsed, *ep.stats())
}

/// What B received.
struct Received {
    /// Received events per message index.
    counts: HashMap<u64, u32>,
    /// Every byte matched.
    good: bool,
}

/// B's side: places and checks every payload, counts every message it completes, until A is
/// done.
fn receiver(mut net: Net, cfg: EndpointConfig, source: &[u8], done: &AtomicBool) -> Received {
    let mut ep = Box::new(Ep::new(cfg, 0xB0B));
    let mut bufs = vec![vec![0u8; RECV_BUF]; RECV_BATCH];
    let mut out = vec![0u8; MAX_HEADER_LEN + usize::from(MTU)];
    let mut index_of: HashMap<(u16, u16), u64> = HashMap::new();
    let mut counts: HashMap<u64, u32> = HashMap::new();
    let mut good = true;
    let (from, clock) = (uet_addr(net.peer), net.clock);
    while !done.load(Ordering::Relaxed) {
        let now = net.now();
        let wait = until(now, ep.poll_timeout()).min(StdDuration::from_millis(5));
        net.recv(&mut bufs, Some(wait), |d| {
            if let Ok(Some(p)) = ep.handle_packet(clock.now(), from, d) {
                let k = p.header.match_bits;
                let at = (k % 251) as usize + p.offset as usize;
                good &= source.get(at..at + p.payload.len()) == Some(p.payload);
                index_of.insert((p.pdc, p.message_id), k);
            }
        });
        let now = net.now();
        if ep.poll_timeout().is_some_and(|t| t <= now) {
            ep.handle_timeout(now);
        }
        while let Some(ev) = ep.poll_event() {
            if let Event::Received { pdc, message_id, .. } = ev {
                let k = index_of.remove(&(pdc, message_id)).unwrap_or(u64::MAX);
                *counts.entry(k).or_default() += 1;
            }
        }
        while let Some(t) = ep.poll_transmit(now, &mut out).unwrap() {
            net.send(&out[..t.header_len]);
        }
        net.flush();
    }
    Received { counts, good }
}

/// The floor: A sends datagrams of the size a message's packets have with one `send_to` each,
/// for `seconds`; B counts what arrives. Returns the payload MB/s that arrived.
fn plain_send_to(size: u32, seconds: f64) -> f64 {
    let (sa, sb) = socket_pair();
    let to = sb.local_addr().unwrap();
    let payload = size.min(u32::from(MTU)) as usize;
    let datagram = vec![7u8; payload + 56];
    let done = AtomicBool::new(false);
    sb.set_read_timeout(Some(StdDuration::from_millis(20))).unwrap();
    std::thread::scope(|s| {
        let counter = s.spawn(|| {
            let mut buf = vec![0u8; 65536];
            let (mut bytes, mut first, mut last) = (0u64, None, Clock::now());
            while !done.load(Ordering::Relaxed) {
                if let Ok(n) = sb.recv(&mut buf) {
                    first.get_or_insert_with(Clock::now);
                    last = Clock::now();
                    bytes += (n - 56) as u64;
                }
            }
            (bytes, first.map_or(0.0, |f| last.duration_since(f).as_secs_f64()))
        });
        let stop = Clock::now() + StdDuration::from_secs_f64(seconds);
        while Clock::now() < stop {
            for _ in 0..64 {
                let _ = sa.send_to(&datagram, to);
            }
        }
        std::thread::sleep(StdDuration::from_millis(50));
        done.store(true, Ordering::Relaxed);
        let (bytes, secs) = counter.join().unwrap();
        bytes as f64 / secs.max(1e-9) / 1e6
    })
}
