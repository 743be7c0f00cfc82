//! Incast through real `Endpoint`s: `senders` endpoints each write messages to one receiver
//! endpoint across a fabric of `paths` parallel switch paths and the receiver's downlink, with
//! the endpoints' own congestion management on or off ([`uet_wire::msg::CmsConfig`]).
//!
//! * **Fabric.** Every path and the downlink is a FIFO served at its rate, with a byte capacity:
//!   a packet that finds more than the ECN threshold queued is marked CE (the receiver gets it
//!   through `handle_ce_packet`); one that does not fit is dropped. A request's path is its
//!   [`Transmit::entropy`] modulo `paths` (a hash of its sender when the endpoint names none).
//!   Each host sends one packet at a time at its link rate. ACKs and other packets from the
//!   receiver travel on a control class without queueing, after the one-way delay.
//! * **Checks.** Every message is reported `Sent` once at its sender and `Received` once at the
//!   receiver, with every byte placed (each byte is a function of sender, message and offset).
//!
//! Reported: completion time, the downlink's largest queue and its mean in the second half of
//! the run, drops and marks, and each sender's bytes delivered in the second half of the time
//! before the first sender finished, while all were sending (their Jain index).

use crate::cms_sim::jain;
use linklayer::{Duration, Instant, LinkRate};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use uet_wire::cms::nscc::NsccConfig;
use uet_wire::msg::{
    CmsConfig, Controllers, Endpoint, EndpointConfig, Event, LoadBalancing, MAX_HEADER_LEN, MessageDesc, Service,
    Transmit,
};
use uet_wire::pdc::held::HELD_RESPONSES;
use uet_wire::pdc::{IpAddr, PdcConfig, ipv4};
use uet_wire::ses::Opcode;

/// The endpoints of the run: 32 PDCs each way (the receiver's one per sender), 64 messages, 256
/// events, and 16 CCC slots (a sender uses one; the receiver's pull pacer takes a flow per
/// sender).
pub type SimEndpoint = Endpoint<32, 64, 256, HELD_RESPONSES, 16>;

/// One run.
#[derive(Clone, Copy, Debug)]
pub struct CmsEndpointSimConfig {
    /// Seed of the endpoints' start PSNs and load balancers.
    pub seed: u64,
    /// Senders, all to the one receiver.
    pub senders: usize,
    /// Messages each sender writes.
    pub messages_per_sender: u64,
    /// Bytes per message.
    pub message_len: u32,
    /// Payload bytes per packet.
    pub mtu: u16,
    /// Every host link and the receiver's downlink.
    pub link: LinkRate,
    /// Parallel switch paths.
    pub paths: u16,
    /// Each path's rate.
    pub path_rate: LinkRate,
    /// One-way propagation delay.
    pub one_way: Duration,
    /// Bytes a queue holds; a packet that does not fit is dropped.
    pub queue_capacity: u64,
    /// Bytes queued above which a packet is marked CE.
    pub ecn_threshold: u64,
    /// Messages each sender keeps queued or in flight.
    pub window: usize,
    /// The senders' load balancer with congestion management on; `None`: off.
    pub cms: Option<LoadBalancing>,
    /// SLEEK loss recovery with congestion management ([`CmsConfig::sleek`]).
    pub sleek: bool,
    /// NSCC, RCCC or both, with congestion management ([`CmsConfig::controllers`]); the
    /// receiver's pull pacer runs with RCCC.
    pub controllers: Controllers,
    /// Packets lost at random on the switch paths, per million (besides drops at full queues).
    pub loss_ppm: u32,
}

/// Header bytes on the wire beyond the UET headers (Ethernet, IP, UDP).
const WIRE_OVERHEAD: u64 = 14 + 20 + 8 + 4;

impl CmsEndpointSimConfig {
    /// 16 senders at 100 Gb/s into one receiver over 8 paths of 100 Gb/s, 2 µs each way, 4 KiB
    /// packets, 512 messages of 64 KiB each, queues of 1 MiB marking above 64 KiB (about the
    /// network round trip's worth at the downlink's rate, NSCC's target delay).
    pub fn incast(seed: u64, cms: Option<LoadBalancing>) -> Self {
        CmsEndpointSimConfig {
            seed,
            senders: 16,
            messages_per_sender: 512,
            message_len: 64 * 1024,
            mtu: 4096,
            link: LinkRate::GBPS_100,
            paths: 8,
            path_rate: LinkRate::GBPS_100,
            one_way: Duration::from_micros(2),
            queue_capacity: 1 << 20,
            ecn_threshold: 64 << 10,
            window: 16,
            cms,
            sleek: true,
            controllers: Controllers::Nscc,
            loss_ppm: 0,
        }
    }

    /// The unloaded round trip: both one-way delays and a full packet's serialisation on each
    /// hop.
    pub fn network_rtt(&self) -> Duration {
        let packet = u64::from(self.mtu) + MAX_HEADER_LEN as u64 + WIRE_OVERHEAD;
        let ser = |rate: LinkRate| rate.time_for_bytes(packet).as_nanos();
        Duration::from_nanos(2 * self.one_way.as_nanos() + 2 * ser(self.link) + ser(self.path_rate))
    }

    /// The endpoints' configuration: PDC timers from the longest round trip (full queues on the
    /// way), congestion management as configured.
    fn endpoint(&self, addr: IpAddr) -> EndpointConfig {
        let queued = |rate: LinkRate| rate.time_for_bytes(self.queue_capacity).as_nanos();
        let max_rtt = self.network_rtt().as_nanos() + queued(self.link) + queued(self.path_rate);
        let cms = self.cms.map(|lb| {
            // A packet counts its bytes on the wire in the window and the credit (RCCC's pacer
            // grants the downlink's rate), its payload as NSCC's segment size.
            let wire = u32::from(self.mtu) + (16 + 44 + WIRE_OVERHEAD) as u32;
            let nscc = NsccConfig { mss: u32::from(self.mtu), ..NsccConfig::new(self.link, self.network_rtt(), wire) };
            CmsConfig { nscc, lb, seed: self.seed, sleek: self.sleek, controllers: self.controllers }
        });
        EndpointConfig {
            pdc: PdcConfig::sprayed(Duration::from_nanos(max_rtt)),
            cms,
            ..EndpointConfig::new(addr, self.mtu)
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct CmsEndpointSimReport {
    /// Every message `Sent` once and `Received` once, whole.
    pub exactly_once: bool,
    /// When the last message was reported `Sent`.
    pub completion: Duration,
    /// The downlink's largest queue, bytes.
    pub max_queue: u64,
    /// The downlink's mean queue in the second half of the run, bytes (as each packet found it).
    pub mean_late_queue: u64,
    /// Packets dropped at a full queue.
    pub drops: u64,
    /// Packets lost at random ([`CmsEndpointSimConfig::loss_ppm`]).
    pub lost: u64,
    /// The 99th percentile of the messages' times from `send` to `Sent`.
    pub p99_message: Duration,
    /// Packets the senders marked for resending, for any cause.
    pub resends: u64,
    /// Of those, marked by SLEEK.
    pub sleek_resends: u64,
    /// Packets marked CE.
    pub marks: u64,
    /// Bytes each sender delivered in the second half of the time before the first sender
    /// finished (while all were sending).
    pub shares: Vec<u64>,
    /// Jain's fairness index of those.
    pub jain: f64,
    /// Goodput of the whole run, Gb/s.
    pub goodput_gbps: f64,
}

/// The byte at `offset` of message `index` of sender `sender`.
fn byte(sender: usize, index: u64, offset: u32) -> u8 {
    (sender as u32 ^ (index as u32).wrapping_mul(7) ^ offset.wrapping_mul(31)) as u8
}

/// A FIFO served at a rate: when it is busy until.
#[derive(Clone, Copy, Default)]
struct Queue {
    busy_until: u64,
}

impl Queue {
    /// Bytes waiting at `now` on a link of `rate`.
    fn backlog(&self, now: u64, rate: LinkRate) -> u64 {
        rate.bytes_in(Duration::from_nanos(self.busy_until.saturating_sub(now)))
    }

    /// Takes `bytes` arriving at `now` if they fit under `capacity`: when they leave, and
    /// whether they found more than `mark` queued.
    fn enqueue(&mut self, now: u64, bytes: u64, rate: LinkRate, capacity: u64, mark: u64) -> Option<(u64, bool)> {
        let backlog = self.backlog(now, rate);
        if backlog + bytes > capacity {
            return None;
        }
        self.busy_until = self.busy_until.max(now) + rate.time_for_bytes(bytes).as_nanos();
        Some((self.busy_until, backlog > mark))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Host `i` may send its next packet.
    Send(usize),
    /// A packet from host `from` to the receiver reaches switch path `path`.
    Path { path: usize, from: usize, pkt: Vec<u8> },
    /// It reaches the receiver's downlink, CE-marked or not so far.
    Downlink { from: usize, ce: bool, pkt: Vec<u8> },
    /// A packet reaches host `to` (from `from`), CE-marked or not.
    Arrive { to: usize, from: usize, ce: bool, pkt: Vec<u8> },
    /// Host `i`'s deadline.
    Timer(usize),
}

/// What kind of event a host just had.
enum Kind {
    Send,
    Timer,
    Other,
}

/// Runs one incast; host `senders` is the receiver.
pub fn run(cfg: &CmsEndpointSimConfig) -> CmsEndpointSimReport {
    let n = cfg.senders;
    let receiver = n;
    let addrs: Vec<IpAddr> = (0..=n).map(|i| ipv4([10, 0, (i >> 8) as u8, i as u8 + 1])).collect();
    let mut eps: Vec<Box<SimEndpoint>> =
        (0..=n).map(|i| Box::new(SimEndpoint::new(cfg.endpoint(addrs[i]), cfg.seed ^ (i as u64 + 1)))).collect();
    let mut events: BinaryHeap<Reverse<(u64, u64, Ev)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |events: &mut BinaryHeap<Reverse<(u64, u64, Ev)>>, at: u64, ev: Ev| {
        seq += 1;
        events.push(Reverse((at, seq, ev)));
    };
    let one_way = cfg.one_way.as_nanos();
    let mut paths = vec![Queue::default(); usize::from(cfg.paths.max(1))];
    let mut downlink = Queue::default();
    let (mut max_queue, mut drops, mut marks, mut lost) = (0u64, 0u64, 0u64, 0u64);
    // Random loss: a xorshift generator from the seed.
    let mut rng = cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut lose = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % 1_000_000 < u64::from(cfg.loss_ppm)
    };
    // When each sender's messages were handed to `send`, and their times to `Sent`.
    let mut started: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut latencies: Vec<u64> = Vec::new();
    // The downlink's queue as each packet found it: (time, bytes).
    let mut queue_samples: Vec<(u64, u64)> = Vec::new();
    // Per host: whether a Send is scheduled, and the earliest Timer scheduled.
    let mut sending = vec![false; n + 1];
    let mut timer_at: Vec<Option<u64>> = vec![None; n + 1];
    let mut next_msg = vec![0u64; n];
    let mut sent = vec![0u64; n];
    let mut sent_twice = false;
    let mut received: HashMap<(usize, u64), u32> = HashMap::new();
    let mut placed: HashMap<(usize, u64), u64> = HashMap::new();
    let mut bytes_ok = true;
    // Payload bytes placed: (time, sender, bytes); when the first sender finished.
    let mut deliveries: Vec<(u64, usize, u64)> = Vec::new();
    let mut first_finish: Option<u64> = None;
    let mut completion = 0u64;
    let mut buf = vec![0u8; MAX_HEADER_LEN + usize::from(cfg.mtu)];
    for (i, s) in sending.iter_mut().enumerate().take(n) {
        push(&mut events, 0, Ev::Send(i));
        *s = true;
    }
    let total = cfg.messages_per_sender * n as u64;
    while let Some(Reverse((now, _, ev))) = events.pop() {
        if now > 10_000_000_000 {
            break;
        }
        let at = Instant::from_nanos(now);
        let (host, ev_kind) = match &ev {
            Ev::Send(i) => (*i, Kind::Send),
            Ev::Timer(i) => (*i, Kind::Timer),
            Ev::Arrive { to, .. } => (*to, Kind::Other),
            Ev::Path { .. } | Ev::Downlink { .. } => (receiver, Kind::Other),
        };
        match ev {
            Ev::Send(i) => {
                sending[i] = false;
                if i < n {
                    // Keep `window` messages queued.
                    while next_msg[i] < cfg.messages_per_sender && eps[i].messages_in_flight() < cfg.window {
                        let index = next_msg[i];
                        let desc = MessageDesc::new(addrs[receiver], Service::Rud, Opcode::Write, 1, cfg.message_len)
                            .with_user(index)
                            .with_match_bits((i as u64) << 32 | index);
                        eps[i].send(desc).expect("a free message slot");
                        started[i].push(now);
                        next_msg[i] += 1;
                    }
                }
                if let Some(t) = eps[i].poll_transmit(at, &mut buf).expect("a buffer that fits") {
                    let pkt = packet(&buf, &t, i);
                    let wire = pkt.len() as u64 + WIRE_OVERHEAD;
                    let free = now + cfg.link.time_for_bytes(wire).as_nanos();
                    push(&mut events, free, Ev::Send(i));
                    sending[i] = true;
                    let to = addrs.iter().position(|a| *a == t.dst).expect("a known destination");
                    if i == receiver {
                        push(&mut events, now + one_way, Ev::Arrive { to, from: i, ce: false, pkt });
                    } else {
                        // Out of the host at `free`, onto the path its EV picks.
                        let path = t.entropy.map_or(i, usize::from) % paths.len();
                        push(&mut events, free, Ev::Path { path, from: i, pkt });
                    }
                }
            }
            Ev::Path { path, from, pkt } => {
                if lose() {
                    lost += 1;
                    continue;
                }
                let wire = pkt.len() as u64 + WIRE_OVERHEAD;
                match paths[path].enqueue(now, wire, cfg.path_rate, cfg.queue_capacity, cfg.ecn_threshold) {
                    Some((left, ce)) => push(&mut events, left, Ev::Downlink { from, ce, pkt }),
                    None => drops += 1,
                }
                continue;
            }
            Ev::Downlink { from, ce, pkt } => {
                let wire = pkt.len() as u64 + WIRE_OVERHEAD;
                let backlog = downlink.backlog(now, cfg.link);
                max_queue = max_queue.max(backlog);
                queue_samples.push((now, backlog));
                match downlink.enqueue(now, wire, cfg.link, cfg.queue_capacity, cfg.ecn_threshold) {
                    Some((left, mark)) => {
                        marks += u64::from(ce || mark);
                        push(&mut events, left + one_way, Ev::Arrive { to: receiver, from, ce: ce || mark, pkt });
                    }
                    None => drops += 1,
                }
                continue;
            }
            Ev::Arrive { to, from, ce, pkt } => {
                let ep = &mut eps[to];
                let handled = if ce {
                    ep.handle_ce_packet(at, addrs[from], &pkt)
                } else {
                    ep.handle_packet(at, addrs[from], &pkt)
                };
                if let Ok(Some(p)) = handled {
                    let (s, index) = ((p.header.match_bits >> 32) as usize, p.header.match_bits & 0xFFFF_FFFF);
                    bytes_ok &= s == from
                        && p.payload.iter().enumerate().all(|(k, &b)| b == byte(s, index, p.offset + k as u32));
                    *placed.entry((s, index)).or_default() += p.payload.len() as u64;
                    deliveries.push((now, s, p.payload.len() as u64));
                }
            }
            Ev::Timer(i) => {
                if timer_at[i] == Some(now) {
                    timer_at[i] = None;
                }
                eps[i].handle_timeout(at);
            }
        }
        // Events of the host that changed, then its next send and deadline.
        while let Some(ev) = eps[host].poll_event() {
            match ev {
                Event::Sent(h) => {
                    let s = host;
                    // One sender's messages complete in the order they were sent.
                    bytes_ok &= h.user() == sent[s];
                    if let Some(&t) = started[s].get(sent[s] as usize) {
                        latencies.push(now - t);
                    }
                    sent[s] += 1;
                    sent_twice |= sent[s] > cfg.messages_per_sender;
                    completion = completion.max(now);
                    if sent[s] == cfg.messages_per_sender && first_finish.is_none() {
                        first_finish = Some(now);
                    }
                }
                Event::Received { src, len, .. } => {
                    let s = addrs.iter().position(|a| *a == src).unwrap_or(usize::MAX);
                    // Messages of one sender arrive in order on its one PDC.
                    let index = received.keys().filter(|(r, _)| *r == s).count() as u64;
                    let again = received.insert((s, index), len);
                    bytes_ok &= again.is_none() && placed.get(&(s, index)).copied().unwrap_or(0) == u64::from(len);
                }
                Event::Failed { .. } | Event::Response { .. } | Event::Truncated { .. } => bytes_ok = false,
            }
        }
        // A packet or a deadline may have given the host something to send (a send that found
        // nothing waits for one of those).
        if !sending[host] && !matches!(ev_kind, Kind::Send) {
            push(&mut events, now, Ev::Send(host));
            sending[host] = true;
        }
        // A deadline still due after its timers ran comes back a nanosecond later.
        let earliest = if matches!(ev_kind, Kind::Timer) { now + 1 } else { now };
        if let Some(t) = eps[host].poll_timeout().map(|t| t.as_nanos().max(earliest)) {
            if timer_at[host].is_none_or(|s| t < s) {
                timer_at[host] = Some(t);
                push(&mut events, t, Ev::Timer(host));
            }
        }
        if sent.iter().sum::<u64>() == total && eps.iter().all(|e| e.messages_in_flight() == 0) {
            break;
        }
    }
    let exactly_once =
        bytes_ok && !sent_twice && sent.iter().all(|&s| s == cfg.messages_per_sender) && received.len() as u64 == total;
    // The second half of the time every sender was sending.
    let end = first_finish.unwrap_or(completion);
    let mut shares = vec![0u64; n];
    for &(t, s, bytes) in &deliveries {
        if (end / 2..=end).contains(&t) {
            if let Some(share) = shares.get_mut(s) {
                *share += bytes;
            }
        }
    }
    let bits = total * u64::from(cfg.message_len) * 8;
    latencies.sort_unstable();
    let p99 = latencies.get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1))).copied();
    let resends: Vec<_> = eps[..n].iter().map(|e| e.stats().resends).collect();
    let late: Vec<u64> = queue_samples.iter().filter(|&&(t, _)| t >= completion / 2).map(|&(_, q)| q).collect();
    CmsEndpointSimReport {
        mean_late_queue: late.iter().sum::<u64>() / late.len().max(1) as u64,
        exactly_once,
        completion: Duration::from_nanos(completion),
        max_queue,
        drops,
        lost,
        p99_message: Duration::from_nanos(p99.unwrap_or(0)),
        resends: resends.iter().map(|r| r.total()).sum(),
        sleek_resends: resends.iter().map(|r| r.sleek).sum(),
        marks,
        jain: jain(&shares),
        shares,
        goodput_gbps: bits as f64 / completion.max(1) as f64,
    }
}

/// The packet `t` names, from host `sender`'s messages: the headers in `buf`, then the payload.
fn packet(buf: &[u8], t: &Transmit, sender: usize) -> Vec<u8> {
    let mut pkt = buf[..t.header_len].to_vec();
    if let Some(p) = t.payload {
        let index = p.msg.user();
        pkt.extend((0..u32::from(p.len)).map(|k| byte(sender, index, p.offset + k)));
    }
    pkt
}
