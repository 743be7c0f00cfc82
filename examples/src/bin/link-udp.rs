//! Two UE link ends in two processes, carrying Ethernet frames and CtlOS over UDP on localhost,
//! each end one `linklayer::link::Link` (LLR both ways, CBFC on four lossless VCs, one of them
//! drained slowly by its application). The wire loses 0.5 % of datagrams and corrupts 0.1 %
//! (frames carry an FCS, CtlOS their CRC-8, so corruption is caught where the hardware would
//! catch it). Half-way through, end B restarts: it builds a new link object with a new first
//! sequence number, as a rebooted port would.
//!
//! Each end checks what its application receives: per VC and per sender life, frame numbers
//! strictly increase (nothing duplicated, nothing reordered), the CBFC receiver never overruns,
//! and every VC carries traffic again after the restart. Either end failing a check fails the
//! run (exit status 1).
//!
//! Usage: `link-udp [--seconds S] [--restart-at S] [--loss P] [--corrupt P]` (`--help` lists
//! them); the roles `--role a` / `--role b --peer PORT` are how the program runs its two halves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::cbfc::{Vc, VcMode};
use linklayer::link::{Link, LinkConfig, LinkEvent, Received};
use linklayer::llr::{FrameCheck, InitOutcome, LlrSizing};
use linklayer::wire::{CTLOS_LEN, CtlOs};
use linklayer::{Duration, Error, Instant, LinkRate};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Instant as Clock;

const SLOTS: usize = 1024;
const VCS: u8 = 4;
/// The VC whose application drains one frame per `SLOW_DRAIN`.
const SLOW_VC: u8 = 3;
const SLOW_DRAIN: Duration = Duration::from_micros(200);
const FRAME_LEN: usize = 512;
/// Datagram kinds: an LLR frame (preamble sequence number follows), an ordinary frame, a CtlOS.
const LLR_FRAME: u8 = 0;
const PLAIN_FRAME: u8 = 1;
const CTLOS: u8 = 2;

const FCS: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// Two UE link ends (LLR + CBFC) in two processes over UDP on localhost, one restarting.
#[derive(clap::Parser, Debug)]
#[command(version)]
struct Args {
    /// Which half to run (the program starts both itself): `a` or `b`.
    #[arg(long, value_parser = ["a", "b"])]
    role: Option<String>,
    /// The UDP port of end A (for end B).
    #[arg(long)]
    peer: Option<u16>,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// When end B restarts, in seconds (default: half-way).
    #[arg(long)]
    restart_at: Option<f64>,
    /// Probability that a datagram is lost.
    #[arg(long, default_value_t = 0.005)]
    loss: f64,
    /// Probability that a datagram is corrupted.
    #[arg(long, default_value_t = 0.001)]
    corrupt: f64,
}

impl Args {
    /// When end B restarts, in seconds.
    fn restart_at(&self) -> f64 {
        self.restart_at.unwrap_or(self.seconds / 2.0)
    }
}

fn args() -> Args {
    <Args as clap::Parser>::parse()
}

fn main() {
    let a = args();
    match a.role.as_deref() {
        None => std::process::exit(parent(&a)),
        Some(role) => std::process::exit(end(&a, role)),
    }
}

/// Runs the two ends as child processes and reports.
fn parent(a: &Args) -> i32 {
    println!(
        "link-udp: two UE link ends over UDP on localhost, {} s, {:.1} % loss, {:.1} % corruption, end B restarts at {} s",
        a.seconds,
        a.loss * 100.0,
        a.corrupt * 100.0,
        a.restart_at()
    );
    let me = std::env::current_exe().expect("own path");
    let common = |c: &mut Command| {
        c.args(["--seconds", &a.seconds.to_string(), "--restart-at", &a.restart_at().to_string()]).args([
            "--loss",
            &a.loss.to_string(),
            "--corrupt",
            &a.corrupt.to_string(),
        ]);
    };
    let mut cmd_a = Command::new(&me);
    cmd_a.args(["--role", "a"]).stdout(Stdio::piped());
    common(&mut cmd_a);
    let mut child_a = cmd_a.spawn().expect("spawn end A");
    let mut out_a = BufReader::new(child_a.stdout.take().unwrap());
    let mut first = String::new();
    out_a.read_line(&mut first).expect("end A's port");
    let port = first.trim().strip_prefix("port ").expect("port line").to_string();
    let mut cmd_b = Command::new(&me);
    cmd_b.args(["--role", "b", "--peer", &port]);
    common(&mut cmd_b);
    let status_b = cmd_b.status().expect("run end B");
    for line in out_a.lines() {
        println!("{}", line.unwrap());
    }
    let status_a = child_a.wait().expect("end A");
    if status_a.success() && status_b.success() {
        println!("both ends: nothing duplicated, nothing reordered, no overrun, every VC recovered");
        0
    } else {
        println!("FAILED: end A {status_a}, end B {status_b}");
        1
    }
}

/// A small generator for the wire's faults and the first sequence numbers.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
}

fn new_link(mac: [u8; 6], first_seq: u32, now: Instant) -> Link<Vec<u8>, SLOTS> {
    // A host stack's loop time is tens of microseconds; size generously.
    let rate = LinkRate::new(1_000_000_000).unwrap();
    let sizing = LlrSizing::software(Duration::from_micros(500), rate).with_frame_slots(SLOTS);
    let config = LinkConfig::software(&sizing, rate, mac);
    let storage = vec![0u8; sizing.replay_bytes as usize];
    let mut link = Link::new(config, storage, first_seq).expect("configuration fits");
    for vc in 0..VCS {
        link.set_vc_mode(now, Vc::new(vc).unwrap(), VcMode::Lossless { credit_limit: Some(64) }).unwrap();
    }
    link.enable(now).unwrap();
    link
}

/// What one end's application saw.
#[derive(Default)]
struct Tally {
    delivered: [u64; VCS as usize],
    delivered_after_restart: [u64; VCS as usize],
    duplicates_or_reordered: u64,
    gaps: u64,
    /// The last (sender life, frame number) per VC.
    last: [Option<(u32, u32)>; VCS as usize],
}

fn end(a: &Args, role: &str) -> i32 {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket.set_nonblocking(true).unwrap();
    let clock = Clock::now();
    let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
    let mut rng = Rng(u64::from(std::process::id()) << 20 | clock.elapsed().subsec_nanos() as u64 | 1);
    let mac = if role == "a" { [2, 0, 0, 0, 0, 0xa] } else { [2, 0, 0, 0, 0, 0xb] };
    let mut peer = None;
    if let Some(port) = a.peer {
        let addr = format!("127.0.0.1:{port}");
        socket.connect(&addr).expect("connect");
        peer = Some(addr);
    } else {
        println!("port {}", socket.local_addr().unwrap().port());
    }
    let first = |rng: &mut Rng| (rng.next() % (1 << 20)) as u32;
    let mut link = new_link(mac, first(&mut rng), now());
    let mut life = 0u32;
    let restart_at = (role == "b").then(|| Duration::from_nanos((a.restart_at() * 1e9) as u64));
    let mut restarted_at: Option<Instant> = None;
    let end_at = Instant::ZERO.saturating_add(Duration::from_nanos((a.seconds * 1e9) as u64));
    let mut next_number = [0u32; VCS as usize];
    let mut buffers: [VecDeque<usize>; VCS as usize] = Default::default();
    let mut slow_drained_at = Instant::ZERO;
    let mut tally = Tally::default();
    let mut restarts_seen = 0u32;
    let mut recovered_in: Option<Duration> = None;
    let mut events = Vec::new();
    let mut buf = [0u8; 2048];
    let mut dgram = Vec::with_capacity(2048);

    loop {
        let t = now();
        if t >= end_at {
            break;
        }
        if let (Some(at), None) = (restart_at, restarted_at) {
            if t >= Instant::ZERO.saturating_add(at) {
                // The port reboots: a new link object, a new life for the application's numbers.
                link = new_link(mac, first(&mut rng), t);
                life += 1;
                restarted_at = Some(t);
                tally.delivered_after_restart = [0; VCS as usize];
                for b in &mut buffers {
                    b.clear();
                }
            }
        }
        // The application offers one frame per VC when credits and LLR allow.
        for vc in 0..VCS {
            let mut frame = [0u8; FRAME_LEN];
            frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xff]);
            frame[6..12].copy_from_slice(&mac);
            frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes()); // local experimental
            frame[14] = vc;
            frame[15..19].copy_from_slice(&life.to_be_bytes());
            frame[19..23].copy_from_slice(&next_number[vc as usize].to_be_bytes());
            match link.send(t, Vc::new(vc).unwrap(), &frame) {
                Ok(linklayer::llr::Admit::SendPlain) => {
                    next_number[vc as usize] += 1;
                    send(&socket, &peer, &mut rng, a, &mut dgram, PLAIN_FRAME, None, &frame);
                }
                Ok(_) => next_number[vc as usize] += 1,
                Err(Error::NoCredit { .. } | Error::WindowFull | Error::InvalidState { .. }) => {}
                Err(e) => panic!("send: {e:?}"),
            }
        }
        while let Some(out) = link.poll_transmit(t) {
            let (seq, frame) = (out.seq.value(), out.frame.to_vec());
            send(&socket, &peer, &mut rng, a, &mut dgram, LLR_FRAME, Some(seq), &frame);
        }
        while let Some(ctl) = link.poll_control(t) {
            let mut bytes = [0u8; CTLOS_LEN];
            ctl.emit(&mut bytes).unwrap();
            send(&socket, &peer, &mut rng, a, &mut dgram, CTLOS, None, &bytes);
        }
        // Receive everything waiting.
        let mut idle = true;
        loop {
            let got = match &peer {
                Some(_) => socket.recv(&mut buf),
                None => socket.recv_from(&mut buf).map(|(n, from)| {
                    socket.connect(from).unwrap();
                    peer = Some(from.to_string());
                    n
                }),
            };
            let Ok(n) = got else { break };
            idle = false;
            receive(&mut link, t, &buf[..n], &mut buffers, &mut tally, restarted_at.is_some());
        }
        // The applications drain: three VCs at once, the slow one at its pace.
        for vc in 0..VCS {
            let v = Vc::new(vc).unwrap();
            if vc == SLOW_VC {
                if t >= slow_drained_at.saturating_add(SLOW_DRAIN) {
                    if let Some(len) = buffers[vc as usize].pop_front() {
                        link.on_drained(v, len).unwrap();
                        slow_drained_at = t;
                    }
                }
            } else {
                while let Some(len) = buffers[vc as usize].pop_front() {
                    link.on_drained(v, len).unwrap();
                }
            }
        }
        link.handle_timeout(t);
        while let Some(e) = link.poll_event() {
            if matches!(e, LinkEvent::PeerHandshake(InitOutcome::PeerRestarted { .. })) {
                restarts_seen += 1;
                tally.delivered_after_restart = [0; VCS as usize];
                restarted_at.get_or_insert(t);
            }
            if !matches!(e, LinkEvent::ReplayStarted { .. }) && events.len() < 16 {
                events.push((t, e));
            }
        }
        if let (Some(at), None) = (restarted_at, recovered_in) {
            if tally.delivered_after_restart.iter().all(|&n| n > 0) {
                recovered_in = Some(t.saturating_duration_since(at));
            }
        }
        if idle {
            std::thread::yield_now();
        }
    }

    let rx = link.llr_rx().stats();
    let tx = link.llr_tx().stats();
    let overruns = link.cbfc_receiver().stats().overruns;
    println!(
        "end {role}: delivered per VC {:?} (after the restart {:?}, every VC again {:.3} ms after it; {} gaps from frames the restart dropped); LLR: {} NACKs sent, {} replays, {} bad FCS, {} duplicates dropped; CBFC: {} overruns, {} CC_Updates; restarts seen {}",
        tally.delivered,
        tally.delivered_after_restart,
        recovered_in.map_or(f64::NAN, |d| d.as_nanos() as f64 / 1e6),
        tally.gaps,
        rx.nack_tx,
        tx.tx_replay,
        rx.bad,
        rx.duplicate_seq,
        overruns,
        link.cbfc_receiver().stats().cc_updates_rx,
        restarts_seen + u32::from(role == "b"),
    );
    println!("  end {role}'s link events (replays left out):");
    for (t, e) in &events {
        println!("  end {role} at {:>9.3} ms: {e:?}", t.as_nanos() as f64 / 1e6);
    }
    let recovered = tally.delivered_after_restart.iter().all(|&n| n > 0);
    let ok = tally.duplicates_or_reordered == 0 && overruns == 0 && recovered;
    if !ok {
        println!(
            "end {role} FAILED: {} duplicated or reordered, {overruns} overruns, recovered on every VC: {recovered}",
            tally.duplicates_or_reordered
        );
    }
    i32::from(!ok)
}

/// Puts one datagram on the lossy, corrupting wire.
#[allow(clippy::too_many_arguments)]
fn send(
    socket: &UdpSocket,
    peer: &Option<String>,
    rng: &mut Rng,
    a: &Args,
    dgram: &mut Vec<u8>,
    kind: u8,
    seq: Option<u32>,
    bytes: &[u8],
) {
    if peer.is_none() || rng.chance(a.loss) {
        return;
    }
    dgram.clear();
    dgram.push(kind);
    dgram.extend_from_slice(&seq.unwrap_or(0).to_be_bytes());
    dgram.extend_from_slice(bytes);
    if kind != CTLOS {
        dgram.extend_from_slice(&FCS.checksum(bytes).to_le_bytes());
    }
    if rng.chance(a.corrupt) {
        let i = 5 + (rng.next() as usize % (dgram.len() - 5));
        dgram[i] ^= 1 << (rng.next() % 8);
    }
    let _ = socket.send(dgram);
}

/// Handles one datagram.
fn receive(
    link: &mut Link<Vec<u8>, SLOTS>,
    t: Instant,
    d: &[u8],
    buffers: &mut [VecDeque<usize>; VCS as usize],
    tally: &mut Tally,
    after_restart: bool,
) {
    if d.len() < 5 {
        return;
    }
    let seq = u32::from_be_bytes([d[1], d[2], d[3], d[4]]);
    let body = &d[5..];
    if d[0] == CTLOS {
        // The CtlOS's own CRC-8 rejects a corrupted one; a refusal by the link is harmless.
        if let Ok((ctl, _)) = CtlOs::parse(body) {
            let _ = link.handle_control(t, ctl);
        }
        return;
    }
    if body.len() < 4 {
        return;
    }
    let (frame, fcs) = body.split_at(body.len() - 4);
    let check = if FCS.checksum(frame).to_le_bytes() == fcs { FrameCheck::Good } else { FrameCheck::Bad };
    // Classify by the payload's VC byte (CC_Updates and anything unreadable: VC 0).
    let vc = frame.get(14).and_then(|&v| Vc::new(v).ok()).filter(|v| v.index() < VCS).unwrap_or(Vc::new(0).unwrap());
    let seq = (d[0] == LLR_FRAME).then_some(seq);
    if link.handle_frame(t, seq, check, vc, frame) != Received::Deliver {
        return;
    }
    let i = usize::from(vc.index());
    buffers[i].push_back(frame.len());
    let life = u32::from_be_bytes(frame[15..19].try_into().unwrap());
    let number = u32::from_be_bytes(frame[19..23].try_into().unwrap());
    match tally.last[i] {
        Some((l, n)) if l == life && number <= n => tally.duplicates_or_reordered += 1,
        Some((l, n)) if l == life && number > n + 1 => tally.gaps += 1,
        Some((l, _)) if life < l => tally.duplicates_or_reordered += 1,
        _ => {}
    }
    tally.last[i] = Some((life, number));
    tally.delivered[i] += 1;
    if after_restart {
        tally.delivered_after_restart[i] += 1;
    }
}
