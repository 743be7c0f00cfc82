//! A seeded simulation of two UET endpoints exchanging messages over a sprayed multipath fabric
//! (issue 4): the whole `uet_wire::msg::Endpoint` path, from `send` to the `Received` event.
//!
//! Both endpoints send messages to each other over several JobIDs (so several PDCs each way):
//! SENDs, WRITEs, and READs of the other side's memory, whose data comes back on the same PDC.
//! Every packet is the endpoint's headers, the message or read bytes the `Transmit` names (a
//! pattern the receiver can check), and a CRC32C trailer, carried by the [`fabric`](crate::fabric) (RUD
//! sprayed, ROD on one path per direction; trimmed requests go to `handle_trimmed`, corrupted
//! packets fail the CRC check). With [`EndpointSimConfig::secure`] every packet is sealed by a
//! TSS [`SecureDomain`] instead of carrying a CRC, and opened before the endpoint sees it: a
//! corrupted packet fails authentication, and a trimmed one, whose header is ciphertext, is lost.
//!
//! Checked as it runs, panicking on a breach: every message arrives exactly once with every byte
//! right; messages of one PDC key arrive in the order they were sent; a READ completes only with
//! every byte of its data right; no message fails; at the end both endpoints hold no message and
//! no PDC.

use crate::fabric::{Fabric, FabricConfig, InFlight, percentile};
use crate::link_sim::Rng;
use linklayer::{Duration, Instant};
use std::collections::HashMap;
use uet_wire::msg::{
    CONTROL_QUEUE, EXTENSIONS, Endpoint, EndpointConfig, Event, MessageDesc, MsgHandle, ORDER_POOL, ORDER_WINDOW,
    RETURN_DIRECTIONS, Secure, SecureStart, Service,
};
use uet_wire::packet::{CRC_LEN, append_crc};
use uet_wire::pdc::held::HELD_RESPONSES;
use uet_wire::pdc::{IpAddr, PdcConfig, ipv4};
use uet_wire::pds::{DeliveryMode, NackCode, PdsHeader, RequestFlags};
use uet_wire::ses::{Opcode, ReturnCode};
use uet_wire::tss::{DomainConfig, Framing, ICV_LEN, Mode, Path, SecureDomain, TssError};

/// The endpoints, with `R` guaranteed-delivery response slots per target PDC and `D` return
/// directions.
type Ep<const R: usize, const D: usize> =
    Endpoint<16, 256, 128, R, 0, ORDER_WINDOW, CONTROL_QUEUE, ORDER_POOL, EXTENSIONS, D>;

/// One run.
#[derive(Clone, Copy, Debug)]
pub struct EndpointSimConfig {
    /// RNG seed.
    pub seed: u64,
    /// RUD or ROD for every message.
    pub mode: DeliveryMode,
    /// Messages each endpoint sends.
    pub messages_per_side: u64,
    /// Message lengths are uniform in `0..=max_message_len`.
    pub max_message_len: u32,
    /// JobIDs the messages spread over (one PDC key each, per direction).
    pub jobs: u32,
    /// Messages each endpoint keeps queued.
    pub window: usize,
    /// Payload bytes per packet.
    pub mtu: u16,
    /// Each endpoint's sending rate.
    pub link_gbps: u64,
    /// The fabric.
    pub fabric: FabricConfig,
    /// PDC timers and limits.
    pub pdc: PdcConfig,
    /// Every `response_every`-th message (by number; 0: none) is answered, when its last packet
    /// arrives, with a guaranteed-delivery SES RESPONSE carrying its length
    /// ([`Endpoint::respond`]).
    pub response_every: u64,
    /// Every `read_every`-th message (by number, the last of each group; 0: none) is a READ of
    /// its length from the other side; of the rest, odd numbers are WRITEs and even SENDs.
    pub read_every: u64,
    /// Seal every packet with TSS (cluster mode, one domain key) instead of a CRC32C trailer.
    pub secure: bool,
}

impl EndpointSimConfig {
    /// A run with `loss` on every packet and the other faults at a quarter of it each.
    pub fn new(seed: u64, mode: DeliveryMode, messages_per_side: u64, loss: f64) -> Self {
        let base = crate::pdc_sim::PdcSimConfig::new(seed, mode, 1, 1, loss);
        EndpointSimConfig {
            seed,
            mode,
            messages_per_side,
            max_message_len: 64 * 1024,
            jobs: 4,
            window: 16,
            mtu: 4096,
            link_gbps: 800,
            fabric: base.fabric,
            pdc: base.pdc,
            response_every: 0,
            read_every: 4,
            secure: false,
        }
    }

    /// The same run with the PDC timers of [`PdcConfig::sprayed`] for this fabric's longest round
    /// trip (the retry limits kept).
    pub fn with_sprayed_timers(mut self) -> Self {
        self.pdc = self.fabric.sprayed_timers(self.pdc);
        self
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct EndpointSimReport {
    /// Whether every message arrived and both endpoints emptied before the time limit.
    pub completed: bool,
    /// Simulated time used.
    pub elapsed: Duration,
    /// Messages received (both directions).
    pub messages: u64,
    /// Payload bytes received.
    pub bytes: u64,
    /// Request packets sent (read data included), and the resends among them.
    pub requests: u64,
    /// Resends (RETX set).
    pub resends: u64,
    /// Packets the fabric lost, duplicated, trimmed, corrupted.
    pub lost: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Trimmed.
    pub trimmed: u64,
    /// Corrupted.
    pub corrupted: u64,
    /// Guaranteed-delivery responses the targets held, and those the initiators reported.
    pub responses_held: u64,
    /// Responses reported (each exactly once, checked).
    pub responses_received: u64,
    /// READs completed, and the bytes they brought back.
    pub reads: u64,
    /// Read bytes.
    pub read_bytes: u64,
    /// Message latency, `send` to `Received`, in ns, sorted.
    pub latencies_ns: Vec<u64>,
    /// TSS: packets sealed and opened.
    pub sealed: u64,
    /// Packets that authenticated.
    pub opened: u64,
    /// Authentication failures (each a packet the fabric corrupted: checked).
    pub auth_failures: u64,
    /// Copies TSS refused as replays (fabric duplicates and deep reordering).
    pub replays: u64,
    /// Wall-clock time spent in seal and open, in ns.
    pub tss_ns: u64,
    /// Secure start: SYNs (and probes) the targets answered NEW_START_PSN, each a PDC restart.
    pub restarts: u64,
    /// Times read data waited for one of the endpoint's return directions (both sides).
    pub return_direction_waits: u64,
    /// Read data and CLOSE_REQs dropped at an initiator PDC for want of one of the `D` return
    /// directions (`EndpointStats::return_receiver_drops`, summed over both sides).
    pub return_receiver_drops: u64,
    /// Requests refused with NACK NO_GTD_DEL_AVAIL (both sides): no guaranteed-delivery response
    /// could have been held for them.
    pub gtd_refusals: u64,
}

impl EndpointSimReport {
    /// The `p`-th percentile of the message latency.
    pub fn latency_percentile(&self, p: f64) -> Duration {
        percentile(&self.latencies_ns, p)
    }
}

struct Side<const R: usize, const D: usize> {
    ep: Ep<R, D>,
    /// Its TSS domain (used when the run is secure).
    tss: SecureDomain<4>,
    addr: IpAddr,
    next_message: u64,
    tx_free_at: Instant,
    /// Handle → (message number, send time).
    sending: HashMap<MsgHandle, (u64, u64)>,
    /// Receive buffers by (PDC, message id): (message number, bytes).
    buffers: HashMap<(u16, u16), (u64, Vec<u8>)>,
    /// READs this side sent: handle → (message number, local buffer, bytes arrived).
    reads: HashMap<MsgHandle, (u64, Vec<u8>, usize)>,
    /// Per JobID, the last message number received from the other side.
    last_per_job: HashMap<u32, u64>,
    received: Vec<bool>,
    /// Per message number sent, whether its response arrived.
    answered: Vec<bool>,
}

/// The simulation, with `R` guaranteed-delivery response slots per target PDC and `D` return
/// directions the target PDCs share (defaults: the crate's).
pub struct EndpointSim<const R: usize = HELD_RESPONSES, const D: usize = RETURN_DIRECTIONS> {
    /// Its configuration.
    pub cfg: EndpointSimConfig,
    rng: Rng,
    now: Instant,
    fabric: Fabric,
    sides: [Side<R, D>; 2],
    /// Per direction, message number → (length, JobID, send time).
    plan: [Vec<(u32, u32, u64)>; 2],
    report: EndpointSimReport,
}

fn byte(side: usize, message: u64, offset: u32) -> u8 {
    let x = (message as u32).wrapping_mul(2_654_435_761) ^ offset.wrapping_mul(40_503) ^ side as u32;
    (x >> 13) as u8
}

impl<const R: usize, const D: usize> EndpointSim<R, D> {
    /// Two endpoints, nothing sent yet.
    pub fn new(cfg: EndpointSimConfig) -> Self {
        let mut rng = Rng::new(cfg.seed);
        let addrs = [ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2])];
        let domain = || {
            let mut d = SecureDomain::new(DomainConfig::new(0x10, Mode::Cluster));
            d.install(false, [0x5e; 32]);
            d
        };
        let secure = cfg.secure.then(|| Secure::for_domain(&domain(), SecureStart::Expected0Rtt));
        let side = |i: usize, rng: &mut Rng| Side {
            ep: Ep::<R, D>::new(
                EndpointConfig { pdc: cfg.pdc, secure, ..EndpointConfig::new(addrs[i], cfg.mtu) },
                rng.next_u64(),
            ),
            tss: domain(),
            addr: addrs[i],
            next_message: 0,
            tx_free_at: Instant::ZERO,
            sending: HashMap::new(),
            buffers: HashMap::new(),
            reads: HashMap::new(),
            last_per_job: HashMap::new(),
            received: vec![false; cfg.messages_per_side as usize],
            answered: vec![false; cfg.messages_per_side as usize],
        };
        let sides = [side(0, &mut rng), side(1, &mut rng)];
        let plan = [0, 1].map(|_| {
            (0..cfg.messages_per_side)
                .map(|_| {
                    let len = rng.below(u64::from(cfg.max_message_len) + 1) as u32;
                    (len, rng.below(u64::from(cfg.jobs)) as u32, 0)
                })
                .collect()
        });
        EndpointSim {
            cfg,
            rng,
            now: Instant::ZERO,
            fabric: Fabric::new(cfg.fabric),
            sides,
            plan,
            report: EndpointSimReport::default(),
        }
    }

    fn opcode(&self, message: u64) -> Opcode {
        let every = self.cfg.read_every;
        if every > 0 && message % every == every - 1 {
            Opcode::Read
        } else if message % 2 == 1 {
            Opcode::Write
        } else {
            Opcode::Send
        }
    }

    fn desc(&self, from: usize, message: u64) -> MessageDesc {
        let (len, job, _) = self.plan[from][message as usize];
        let service = match self.cfg.mode {
            DeliveryMode::Rud => Service::Rud,
            DeliveryMode::Rod => Service::Rod,
        };
        let mut d = MessageDesc::new(self.sides[1 - from].addr, service, self.opcode(message), job, len)
            .with_resource(1, 1)
            .with_match_bits(message)
            .with_user(message);
        d.header.initiator = from as u32;
        d
    }

    /// Side `i` queues messages up to its window and sends one packet if its link is free.
    fn side_send(&mut self, i: usize) -> bool {
        while self.sides[i].next_message < self.cfg.messages_per_side && self.sides[i].sending.len() < self.cfg.window {
            let m = self.sides[i].next_message;
            let desc = self.desc(i, m);
            let read = desc.header.common.opcode == Opcode::Read;
            let len = desc.len as usize;
            let Ok(h) = self.sides[i].ep.send(desc) else { break };
            if read {
                self.sides[i].reads.insert(h, (m, vec![0; len], 0));
            }
            self.sides[i].sending.insert(h, (m, self.now.as_nanos()));
            self.plan[i][m as usize].2 = self.now.as_nanos();
            self.sides[i].next_message += 1;
        }
        if self.sides[i].tx_free_at > self.now {
            return false;
        }
        let mut out = [0u8; 128];
        let Some(t) = self.sides[i].ep.poll_transmit(self.now, &mut out).unwrap() else { return false };
        let mut pkt = out[..t.header_len].to_vec();
        let is_request = t.payload.is_some() || t.read.is_some();
        if let Some(r) = t.read {
            // This side's memory, which the other side's READ `match_bits` names.
            pkt.extend((0..u32::from(r.len)).map(|k| byte(i, r.header().match_bits, r.offset + k)));
        }
        if let Some(p) = t.payload {
            let (message, _) = self.sides[i].sending[&p.msg];
            pkt.extend((0..u32::from(p.len)).map(|k| byte(i, message, p.offset + k)));
        }
        let room = if self.cfg.secure { self.sides[i].tss.overhead().0 } else { 0 };
        if is_request {
            self.report.requests += 1;
            if let Ok((PdsHeader::Request(r), _)) = PdsHeader::parse(&pkt[room..]) {
                if r.flags.contains(RequestFlags::RETX) {
                    self.report.resends += 1;
                }
            }
        }
        let len = pkt.len();
        if self.cfg.secure {
            pkt.resize(len + ICV_LEN, 0);
            let path = Path::new(self.sides[i].addr, t.dst, Framing::Udp);
            let started = std::time::Instant::now();
            self.sides[i].tss.seal(&mut pkt, len, &path).expect("a key, room, and counters left");
            self.report.tss_ns += started.elapsed().as_nanos() as u64;
            self.report.sealed += 1;
        } else {
            pkt.resize(len + CRC_LEN, 0);
            append_crc(&[], &mut pkt, len).expect("room for the trailer");
        }
        let bits = pkt.len() as u64 * 8;
        self.sides[i].tx_free_at =
            self.now.saturating_add(Duration::from_nanos(bits.div_ceil(self.cfg.link_gbps).max(1)));
        let entropy = match self.cfg.mode {
            // ROD stays on one path per direction; RUD sprays.
            DeliveryMode::Rod => Some(i as u32),
            DeliveryMode::Rud => None,
        };
        // A sealed packet's header is ciphertext: the fabric cannot trim it to the header.
        let trim_to = (is_request && !self.cfg.secure).then_some(t.header_len);
        self.fabric.send(&mut self.rng, self.now, 1 - i, &pkt, trim_to, entropy);
        true
    }

    fn arrive(&mut self, p: InFlight) {
        let to = p.to;
        let from = self.sides[1 - to].addr;
        let now = self.now;
        if p.trimmed {
            let _ = self.sides[to].ep.handle_trimmed(now, from, &p.bytes, false);
            return;
        }
        let side = &mut self.sides[to];
        let mut bytes = p.bytes;
        let handled = if self.cfg.secure {
            let path = Path::new(from, side.addr, Framing::Udp);
            let started = std::time::Instant::now();
            let opened = side.tss.open(&mut bytes, &path);
            self.report.tss_ns += started.elapsed().as_nanos() as u64;
            match opened {
                Ok(o) => {
                    self.report.opened += 1;
                    side.ep.handle_packet(now, from, &bytes[o.body])
                }
                Err(TssError::AuthFailed) => {
                    assert!(p.corrupted, "an intact packet failed authentication");
                    self.report.auth_failures += 1;
                    return;
                }
                Err(TssError::Replayed(_)) => {
                    self.report.replays += 1;
                    return;
                }
                // A bit flipped in the clear header (SDI, AN, SP, type).
                Err(e) => {
                    assert!(p.corrupted, "an intact packet refused: {e:?}");
                    self.report.auth_failures += 1;
                    return;
                }
            }
        } else {
            // The CRC is checked and the packet handled in one call; a corrupted one is dropped.
            side.ep.handle_crc_packet(now, from, &bytes, &[], false)
        };
        match handled {
            Ok(Some(pl)) if pl.read.is_some() => {
                let h = pl.read.expect("read data");
                let (_, buf, arrived) = side.reads.get_mut(&h).expect("data for a READ in progress");
                buf[pl.offset as usize..pl.offset as usize + pl.payload.len()].copy_from_slice(pl.payload);
                *arrived += pl.payload.len();
            }
            Ok(Some(pl)) => {
                let (message, buf) = side
                    .buffers
                    .entry((pl.pdc, pl.message_id))
                    .or_insert_with(|| (pl.header.match_bits, vec![0; pl.header.request_length as usize]));
                assert_eq!(*message, pl.header.match_bits, "two messages share a PDC and message id");
                let len = if pl.header.common.opcode == Opcode::Read {
                    // A READ request carries no payload; it asks for one packet's worth.
                    assert!(pl.payload.is_empty());
                    (pl.header.request_length - pl.offset).min(u32::from(self.cfg.mtu)) as usize
                } else {
                    buf[pl.offset as usize..pl.offset as usize + pl.payload.len()].copy_from_slice(pl.payload);
                    pl.payload.len()
                };
                let last = pl.offset as usize + len == pl.header.request_length as usize;
                let every = self.cfg.response_every;
                if last && every > 0 && pl.header.match_bits % every == 0 {
                    let len = pl.header.request_length;
                    side.ep.respond(&pl, ReturnCode::Ok, len).expect("a delivered request can be answered");
                    self.report.responses_held += 1;
                }
            }
            Ok(None) => {}
            Err(uet_wire::msg::EndpointError::EventsFull | uet_wire::msg::EndpointError::ResponsesFull) => {}
            Err(uet_wire::msg::EndpointError::Malformed(uet_wire::Error::Crc { .. })) => {}
            Err(e) => panic!("a CRC-checked packet was refused: {e:?}"),
        }
    }

    fn events(&mut self, i: usize) {
        while let Some(ev) = self.sides[i].ep.poll_event() {
            match ev {
                Event::Sent(h) => {
                    let (message, _) = self.sides[i].sending.remove(&h).expect("a known message");
                    if let Some((m, buf, arrived)) = self.sides[i].reads.remove(&h) {
                        assert_eq!(arrived, buf.len(), "side {i} READ {m} completed before its data arrived");
                        for (o, b) in buf.iter().enumerate() {
                            assert_eq!(*b, byte(1 - i, m, o as u32), "side {i} READ {m} byte {o}");
                        }
                        self.report.reads += 1;
                        self.report.read_bytes += buf.len() as u64;
                    }
                    let every = self.cfg.response_every;
                    if every > 0 && message % every == 0 {
                        assert!(self.sides[i].answered[message as usize], "message {message} sent before its response");
                    }
                }
                Event::Failed { msg, why, .. } => panic!("side {i} message {msg:?} failed: {why:?}"),
                Event::Truncated { msg, .. } => panic!("side {i} message {msg:?} truncated"),
                Event::Response { msg, response, .. } => {
                    let (message, _) = self.sides[i].sending[&msg];
                    let every = self.cfg.response_every;
                    assert!(every > 0 && message % every == 0, "message {message} was not answered");
                    assert_eq!(response.return_code, ReturnCode::Ok);
                    assert_eq!(response.modified_length, self.plan[i][message as usize].0);
                    let answered = &mut self.sides[i].answered[message as usize];
                    assert!(!*answered, "side {i} message {message}: response reported twice");
                    *answered = true;
                    self.report.responses_received += 1;
                }
                Event::Received { pdc, message_id, len, .. } => {
                    let side = &mut self.sides[i];
                    // Every message, even an empty one, has its packets placed before release.
                    let (message, buf) = side.buffers.remove(&(pdc, message_id)).expect("placed before released");
                    assert_eq!(buf.len(), len as usize);
                    // A READ request brings no bytes: its data went back.
                    let read = self.cfg.read_every > 0 && message % self.cfg.read_every == self.cfg.read_every - 1;
                    for (o, b) in buf.iter().enumerate().filter(|_| !read) {
                        assert_eq!(*b, byte(1 - i, message, o as u32), "message {message} byte {o}");
                    }
                    assert!(!side.received[message as usize], "message {message} received twice");
                    side.received[message as usize] = true;
                    let (plen, job, sent_at) = self.plan[1 - i][message as usize];
                    assert_eq!(plen, len);
                    if let Some(prev) = side.last_per_job.insert(job, message) {
                        assert!(prev < message, "job {job}: message {message} after {prev}");
                    }
                    self.report.messages += 1;
                    if !read {
                        self.report.bytes += u64::from(len);
                    }
                    self.report.latencies_ns.push(self.now.as_nanos() - sent_at);
                }
            }
        }
    }

    fn done(&self) -> bool {
        self.sides.iter().all(|s| {
            s.next_message == self.cfg.messages_per_side
                && s.sending.is_empty()
                && s.ep.messages_in_flight() == 0
                && s.ep.initiator_pdcs() == 0
                && s.ep.target_pdcs() == 0
        }) && self.sides.iter().all(|s| s.received.iter().all(|&r| r))
    }

    /// Runs until both endpoints are done, or `limit` of simulated time passes.
    pub fn run(&mut self, limit: Duration) -> EndpointSimReport {
        let deadline = Instant::ZERO.saturating_add(limit);
        while !self.done() && self.now <= deadline {
            while let Some(p) = self.fabric.pop_due(self.now) {
                self.arrive(p);
            }
            for i in 0..2 {
                self.sides[i].ep.handle_timeout(self.now);
                self.events(i);
            }
            let mut sent = false;
            for i in 0..2 {
                sent |= self.side_send(i);
                self.events(i);
            }
            if sent {
                continue;
            }
            let arrival = self.fabric.next_arrival();
            let timers = self.sides.iter().filter_map(|s| s.ep.poll_timeout()).min();
            let link = self.sides.iter().map(|s| s.tx_free_at).filter(|&t| t > self.now).min();
            match [arrival, timers, link].into_iter().flatten().min() {
                Some(t) => self.now = t.max(self.now.saturating_add(Duration::from_nanos(1))),
                None => break,
            }
        }
        self.report.elapsed = self.now.saturating_duration_since(Instant::ZERO);
        let faults = self.fabric.faults;
        (self.report.lost, self.report.duplicated, self.report.trimmed, self.report.corrupted) =
            (faults.lost, faults.duplicated, faults.trimmed, faults.corrupted);
        self.report.completed = self.done();
        self.report.restarts =
            self.sides.iter().map(|s| u64::from(s.ep.stats().nacks_sent.get(NackCode::NewStartPsn))).sum();
        self.report.return_direction_waits = self.sides.iter().map(|s| s.ep.stats().return_direction_waits).sum();
        self.report.return_receiver_drops = self.sides.iter().map(|s| s.ep.stats().return_receiver_drops).sum();
        self.report.gtd_refusals =
            self.sides.iter().map(|s| u64::from(s.ep.stats().nacks_sent.get(NackCode::NoGtdDelAvail))).sum();
        let mut r = self.report.clone();
        r.latencies_ns.sort_unstable();
        r
    }
}
