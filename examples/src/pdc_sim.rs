//! A seeded simulation of UET PDCs over a sprayed multipath fabric (issue 4).
//!
//! One initiator host opens one PDC per flow to one target host. Every packet is a real wire
//! packet: the PDS header from `uet-wire`'s codec, a 20-byte tag standing in for the SES header
//! and payload (flow, packet index, send time), and a CRC32C trailer. The entropy value picks one
//! of the fabric's paths; each path is a FIFO with its own delay plus jitter. RUD packets and all
//! ACKs are sprayed (a random entropy per packet), so they reorder across paths; a ROD flow keeps
//! one entropy value, hence one path and its order, as ROD needs. The fabric loses, duplicates, corrupts (the receiver's CRC check
//! drops those) and trims (cuts the payload and marks the packet, as a switch's DSCP mark would)
//! packets at configured rates.
//!
//! Every `response_every`-th packet stands for an operation whose SES answer needs guaranteed
//! delivery (an atomic): the target refuses it NO_GTD_DEL_AVAIL while its response slots are full,
//! holds the response when it delivers it, and sends it after the ACK; the initiator records it.
//!
//! The harness checks, and panics on, any breach: every packet index of every flow is delivered
//! exactly once; ROD flows deliver in packet order; no PDC fails; every guaranteed-delivery
//! response reaches the initiator; at the end every PDC on both sides is closed and both tables
//! are empty.

pub use crate::fabric::FabricConfig;
use crate::fabric::{Fabric, InFlight, percentile};
use crate::link_sim::Rng;
use linklayer::{Duration, Instant};
use uet_wire::packet::crc32c;
use uet_wire::pdc::{
    Delivery, Initiator, InitiatorEvent, InitiatorKey, InitiatorState, InitiatorTx, PdcConfig, PdcTable, StartPolicy,
    Target, TargetEvent, TargetKey, TargetTx, ipv4,
};
use uet_wire::pds::{DeliveryMode, Nack, NackCode, NackTarget, NextHeader, PdcDest, PdsHeader};
use uet_wire::ses::{Response, ResponseList, ResponseOpcode, ReturnCode, SesHeader};

/// Bytes of the tag that stands in for the SES header and payload.
const TAG_LEN: usize = 20;
/// Capacity of each side's PDC table.
const MAX_PDCS: usize = 64;

/// One simulation run.
#[derive(Clone, Copy, Debug)]
pub struct PdcSimConfig {
    /// RNG seed.
    pub seed: u64,
    /// RUD or ROD, for every flow.
    pub mode: DeliveryMode,
    /// Flows (PDCs) from the initiator host.
    pub flows: u32,
    /// Packets each flow sends.
    pub packets_per_flow: u64,
    /// Messages are 1 to this many packets long (AR on each message's last packet).
    pub max_message_packets: u64,
    /// Bytes each request stands for (pacing and ACK coalescing).
    pub packet_bytes: u32,
    /// The initiator host's sending rate.
    pub link_gbps: u64,
    /// Share of flows the target closes (CLOSE_REQ) rather than the initiator.
    pub target_close_share: f64,
    /// Every this many packets, one needs a guaranteed-delivery response (0: none).
    pub response_every: u64,
    /// The fabric.
    pub fabric: FabricConfig,
    /// PDC timers and limits.
    pub pdc: PdcConfig,
}

impl PdcSimConfig {
    /// A run of `flows × packets_per_flow` packets, `loss` on every packet and the other faults at
    /// a quarter of it each, with limits generous enough for heavy loss.
    pub fn new(seed: u64, mode: DeliveryMode, flows: u32, packets_per_flow: u64, loss: f64) -> Self {
        PdcSimConfig {
            seed,
            mode,
            flows,
            packets_per_flow,
            max_message_packets: 16,
            packet_bytes: 4096,
            link_gbps: 800,
            target_close_share: 0.5,
            response_every: 0,
            fabric: FabricConfig::sprayed(loss),
            pdc: PdcConfig {
                max_rto_retx: 15,
                max_nack_retx: uet_wire::pdc::UNLIMITED_NACK_RETX,
                max_tail_loss_retx: 15,
                ..PdcConfig::default()
            },
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
pub struct PdcSimReport {
    /// Whether every flow finished and every PDC closed before the time limit.
    pub completed: bool,
    /// Simulated time used.
    pub elapsed: Duration,
    /// Distinct packets delivered to the target (exactly once each).
    pub delivered: u64,
    /// Requests put on the wire, first sends and resends.
    pub requests_sent: u64,
    /// Resends among them.
    pub resends: u64,
    /// ACKs sent by the target.
    pub acks: u64,
    /// NACKs sent by the target.
    pub nacks: u64,
    /// Control packets sent (CLOSE, ACK_REQ, CLOSE_REQ, ...).
    pub controls: u64,
    /// Duplicate or stale requests the target filtered.
    pub filtered: u64,
    /// Packets the fabric lost, duplicated, trimmed, and corrupted.
    pub lost: u64,
    /// Packets duplicated.
    pub duplicated: u64,
    /// Requests trimmed.
    pub trimmed: u64,
    /// Packets corrupted (and dropped by the CRC check).
    pub corrupted: u64,
    /// Guaranteed-delivery responses the targets held.
    pub responses_held: u64,
    /// Distinct guaranteed-delivery responses the initiator received.
    pub responses_received: u64,
    /// Requests refused NO_GTD_DEL_AVAIL (every response slot in use).
    pub response_refusals: u64,
    /// PDCs closed on each side.
    pub initiators_closed: u64,
    /// Target PDCs closed.
    pub targets_closed: u64,
    /// Delivery latency of every packet (first send to delivery, resends included), in
    /// nanoseconds, sorted.
    pub latencies_ns: Vec<u64>,
}

impl PdcSimReport {
    /// The `p`-th percentile of the delivery latency (`p` in 0..=100).
    pub fn latency_percentile(&self, p: f64) -> Duration {
        percentile(&self.latencies_ns, p)
    }
}

struct Flow {
    /// The initiator PDC's id, while it exists.
    pdc: Option<u16>,
    sent: u64,
    message_left: u64,
    closing: bool,
    target_closes: bool,
    /// Target side: which packet indices arrived, and the next expected for ROD.
    delivered: Vec<bool>,
    /// Initiator side: when each packet index was first sent (ns).
    first_sent: Vec<u64>,
    delivered_count: u64,
    next_in_order: u64,
    /// Initiator side: which guaranteed-delivery responses arrived.
    responses: Vec<bool>,
}

/// The simulation.
pub struct PdcSim {
    /// Its configuration.
    pub cfg: PdcSimConfig,
    rng: Rng,
    now: Instant,
    fabric: Fabric,
    initiators: PdcTable<InitiatorKey, Initiator, MAX_PDCS>,
    targets: PdcTable<TargetKey, Target, MAX_PDCS>,
    flows: Vec<Flow>,
    next_flow: usize,
    tx_free_at: Instant,
    report: PdcSimReport,
}

const INITIATOR_IP: [u8; 4] = [10, 0, 0, 1];
const TARGET_IP: [u8; 4] = [10, 0, 0, 2];

impl PdcSim {
    /// A simulation with every flow's PDC not yet open.
    pub fn new(cfg: PdcSimConfig) -> PdcSim {
        assert!(cfg.flows as usize <= MAX_PDCS);
        let mut rng = Rng::new(cfg.seed);
        let flows = (0..cfg.flows)
            .map(|_| Flow {
                pdc: None,
                sent: 0,
                message_left: 0,
                closing: false,
                target_closes: rng.chance(cfg.target_close_share),
                delivered: vec![false; cfg.packets_per_flow as usize],
                first_sent: vec![0; cfg.packets_per_flow as usize],
                delivered_count: 0,
                next_in_order: 0,
                responses: vec![false; cfg.packets_per_flow as usize],
            })
            .collect();
        PdcSim {
            cfg,
            rng,
            now: Instant::ZERO,
            fabric: Fabric::new(cfg.fabric),
            initiators: PdcTable::new(),
            targets: PdcTable::new(),
            flows,
            next_flow: 0,
            tx_free_at: Instant::ZERO,
            report: PdcSimReport::default(),
        }
    }

    fn key(&self, flow: usize) -> InitiatorKey {
        InitiatorKey { mode: self.cfg.mode, job_id: flow as u32, src: ipv4(INITIATOR_IP), dst: ipv4(TARGET_IP), tc: 0 }
    }

    /// Puts a packet on the fabric: entropy picks the path; loss, duplication, trimming and
    /// corruption as configured.
    fn transmit(&mut self, to_target: bool, header: PdsHeader, tag: Option<[u8; TAG_LEN]>, entropy: Option<u32>) {
        self.transmit_with(to_target, header, tag, None, entropy);
    }

    /// [`PdcSim::transmit`], with an SES response after an ACK that carries one.
    fn transmit_with(
        &mut self,
        to_target: bool,
        header: PdsHeader,
        tag: Option<[u8; TAG_LEN]>,
        rsp: Option<Response>,
        entropy: Option<u32>,
    ) {
        let mut bytes = vec![0u8; header.buffer_len() + TAG_LEN + Response::LEN + 4];
        let n = header.emit(&mut bytes).unwrap();
        let mut len = n;
        if let Some(tag) = tag {
            bytes[n..n + TAG_LEN].copy_from_slice(&tag);
            len += TAG_LEN;
        }
        if let Some(rsp) = rsp {
            len += SesHeader::Response(rsp).emit(&mut bytes[len..]).unwrap();
        }
        let crc = crc32c(&[], &bytes[..len]);
        bytes[len..len + 4].copy_from_slice(&crc.to_be_bytes());
        bytes.truncate(len + 4);
        let trim_to = tag.map(|_| n);
        self.fabric.send(&mut self.rng, self.now, usize::from(to_target), &bytes, trim_to, entropy);
    }

    fn tag(&self, flow: usize, index: u64, sent_at: u64) -> [u8; TAG_LEN] {
        let mut tag = [0u8; TAG_LEN];
        tag[..4].copy_from_slice(&(flow as u32).to_be_bytes());
        tag[4..12].copy_from_slice(&index.to_be_bytes());
        tag[12..].copy_from_slice(&sent_at.to_be_bytes());
        tag
    }

    /// The initiator host sends one packet if its link is free and a flow has one.
    fn initiator_send(&mut self) -> bool {
        if self.tx_free_at > self.now {
            return false;
        }
        let cfg = self.cfg;
        for k in 0..self.flows.len() {
            let f = (self.next_flow + k) % self.flows.len();
            if self.flows[f].pdc.is_none() && self.flows[f].sent == 0 && !self.flows[f].closing {
                let id = self.initiators.next_id().unwrap();
                let start = self.rng.next_u64() as u32;
                let pdc = Initiator::new(&cfg.pdc, cfg.mode, id, start);
                self.initiators.insert(self.key(f), pdc).unwrap();
                self.flows[f].pdc = Some(id);
            }
            let Some(id) = self.flows[f].pdc else { continue };
            let now = self.now;
            let pdc = self.initiators.get_mut(id).unwrap();
            let out = if let Some(tx) = pdc.poll_transmit(now) {
                match tx {
                    InitiatorTx::Resend(stamp) => {
                        let index = u64::from(stamp.psn.wrapping_sub(pdc.start_psn()));
                        self.report.resends += 1;
                        self.report.requests_sent += 1;
                        let tag = self.tag(f, index, now.as_nanos());
                        Some((PdsHeader::Request(stamp.request(NextHeader::ReqStd, None)), Some(tag)))
                    }
                    InitiatorTx::Control(c) => {
                        self.report.controls += 1;
                        Some((PdsHeader::Control(c), None))
                    }
                    InitiatorTx::Ack(a) => Some((PdsHeader::Ack(a), None)),
                    InitiatorTx::Nack(n) => Some((PdsHeader::Nack(n), None)),
                }
            } else if self.flows[f].sent < cfg.packets_per_flow && pdc.can_send(&cfg.pdc) {
                let flow = &mut self.flows[f];
                if flow.message_left == 0 {
                    flow.message_left = 1 + self.rng.below(cfg.max_message_packets);
                }
                flow.message_left -= 1;
                let last = flow.message_left == 0 || flow.sent + 1 == cfg.packets_per_flow;
                let stamp = pdc.send(now, &cfg.pdc, last).unwrap();
                let index = flow.sent;
                flow.sent += 1;
                flow.first_sent[index as usize] = now.as_nanos();
                self.report.requests_sent += 1;
                let tag = self.tag(f, index, now.as_nanos());
                Some((PdsHeader::Request(stamp.request(NextHeader::ReqStd, None)), Some(tag)))
            } else {
                None
            };
            if let Some((header, tag)) = out {
                self.next_flow = (f + 1) % self.flows.len();
                let bits =
                    (header.buffer_len() as u64 + u64::from(if tag.is_some() { cfg.packet_bytes } else { 0 })) * 8;
                self.tx_free_at = now.saturating_add(Duration::from_nanos(bits.div_ceil(cfg.link_gbps).max(1)));
                let entropy = (cfg.mode == DeliveryMode::Rod).then_some(f as u32);
                self.transmit(true, header, tag, entropy);
                return true;
            }
        }
        false
    }

    /// Closes flows that have sent everything and are allowed to close.
    fn close_finished(&mut self) {
        let now = self.now;
        let cfg = self.cfg;
        for f in 0..self.flows.len() {
            let flow = &self.flows[f];
            let Some(id) = flow.pdc else { continue };
            if flow.sent < cfg.packets_per_flow || flow.closing {
                continue;
            }
            let pdc = self.initiators.get_mut(id).unwrap();
            // A target-closed flow waits for CLOSE_REQ (Quiesce); the others close themselves.
            if flow.target_closes && pdc.state() != InitiatorState::Quiesce {
                continue;
            }
            pdc.close(now, &cfg.pdc).unwrap();
            self.flows[f].closing = true;
        }
    }

    fn deliver_to_initiator(&mut self, header: PdsHeader, rest: &[u8]) {
        let now = self.now;
        let cfg = self.cfg;
        let id = match header {
            PdsHeader::Ack(a) => a.dpdcid,
            PdsHeader::Nack(n) => match n.target {
                NackTarget::Pdc { dpdcid, .. } => dpdcid,
                NackTarget::Rudi { .. } => return,
            },
            PdsHeader::Control(c) => match c.dest {
                PdcDest::Established { dpdcid } => dpdcid,
                PdcDest::Syn { .. } => return,
            },
            _ => panic!("initiator got {header:?}"),
        };
        // A packet for a PDC already closed and freed finds nothing.
        let Some(pdc) = self.initiators.get_mut(id) else { return };
        match header {
            PdsHeader::Ack(a) => {
                // Stale or duplicate ACKs are refused without harm; ACKs beyond what was sent
                // cannot happen on a CRC-checked fabric.
                if let Err(e) = pdc.handle_ack(now, &cfg.pdc, &a) {
                    assert!(!matches!(e, uet_wire::pdc::PdcError::Ack(_)), "{e:?} for {a:?}");
                }
                if a.next_header == NextHeader::Rsp {
                    let Ok((Some(SesHeader::Response(rsp)), _)) = SesHeader::parse(NextHeader::Rsp, rest) else {
                        panic!("ACK announcing a response without one: {a:?}")
                    };
                    let index = u64::from(rsp.modified_length);
                    let flow = &mut self.flows[rsp.job_id as usize];
                    assert_eq!(index.wrapping_sub(self.cfg.response_every - 1) % self.cfg.response_every, 0);
                    if !flow.responses[index as usize] {
                        flow.responses[index as usize] = true;
                        self.report.responses_received += 1;
                    }
                }
            }
            PdsHeader::Nack(n) => {
                let _ = pdc.handle_nack(now, &cfg.pdc, &n);
            }
            PdsHeader::Control(c) => {
                let _ = pdc.handle_control(now, &c);
            }
            _ => {}
        }
        self.initiator_events(id);
    }

    fn initiator_events(&mut self, id: u16) {
        let Some(pdc) = self.initiators.get_mut(id) else { return };
        while let Some(ev) = pdc.poll_event() {
            match ev {
                InitiatorEvent::Established { .. } => {}
                InitiatorEvent::Failed(why) => panic!("initiator PDC {id} failed: {why:?} at {:?}", self.now),
                InitiatorEvent::Closed => {
                    let f = self.flows.iter().position(|f| f.pdc == Some(id)).unwrap();
                    self.flows[f].pdc = None;
                    self.initiators.remove(id);
                    self.report.initiators_closed += 1;
                    return;
                }
            }
        }
    }

    fn nack_unknown(&mut self, psn: u32, spdcid: u16) {
        let n = Nack::for_pdc(NackCode::InvDpdcid, psn, 0, spdcid);
        self.report.nacks += 1;
        self.transmit(false, PdsHeader::Nack(n), None, None);
    }

    fn deliver_to_target(&mut self, header: PdsHeader, tag: &[u8], trimmed: bool) {
        let now = self.now;
        let cfg = self.cfg;
        let (dest, spdcid, psn) = match header {
            PdsHeader::Request(r) => (r.dest, r.spdcid, r.psn),
            PdsHeader::Control(c) => (c.dest, c.spdcid, c.psn),
            PdsHeader::Ack(a) => (PdcDest::Established { dpdcid: a.dpdcid }, a.spdcid, a.cack_psn),
            _ => panic!("target got {header:?}"),
        };
        let id = match dest {
            PdcDest::Established { dpdcid } => self.targets.get(dpdcid).map(|_| dpdcid),
            PdcDest::Syn { .. } => {
                let key = TargetKey { src: ipv4(INITIATOR_IP), dst: ipv4(TARGET_IP), spdcid };
                match (self.targets.find(&key), header) {
                    (Some(id), _) => Some(id),
                    (None, PdsHeader::Request(r)) => {
                        let id = self.targets.next_id().unwrap();
                        let t = Target::new(now, &cfg.pdc, id, &r, StartPolicy::Open).unwrap();
                        self.targets.insert(key, t).unwrap();
                        Some(id)
                    }
                    _ => None,
                }
            }
        };
        let Some(id) = id else {
            if !matches!(header, PdsHeader::Ack(_)) {
                self.nack_unknown(psn, spdcid);
            }
            return;
        };
        // A guaranteed-delivery operation waits for a free response slot.
        let needs_response = match header {
            PdsHeader::Request(_) if !trimmed => self.response_of(tag),
            _ => None,
        };
        let pdc = self.targets.get_mut(id).unwrap();
        // Refusals (their NACKs) leave through the PDC's `poll_transmit`, in `target_output`. A
        // request no guaranteed-delivery response could be held for is refused: any request may
        // need one.
        let delivery = match header {
            PdsHeader::Request(r) if trimmed => pdc.handle_trimmed(&r, false).map(|()| Delivery::Dropped).ok(),
            PdsHeader::Request(r) => pdc.handle_request(now, &cfg.pdc, &r, cfg.packet_bytes, false).ok(),
            PdsHeader::Control(c) => pdc.handle_control(now, &cfg.pdc, &c).map(|()| Delivery::Dropped).ok(),
            PdsHeader::Ack(a) => {
                let _ = pdc.handle_ack(now, &cfg.pdc, &a);
                None
            }
            _ => None,
        };
        match delivery {
            Some(Delivery::New) if matches!(header, PdsHeader::Request(_)) => {
                self.record_delivery(tag);
                if let (Some(rsp), PdsHeader::Request(r)) = (needs_response, header) {
                    self.targets.get_mut(id).unwrap().hold_response(r.psn, rsp).unwrap();
                    self.report.responses_held += 1;
                }
            }
            Some(Delivery::Duplicate | Delivery::Stale) => self.report.filtered += 1,
            _ => {}
        }
        self.target_output(id);
    }

    /// The guaranteed-delivery response the request with `tag` needs, if its index is one of
    /// every `response_every`: it names the flow (JobID) and the packet index (modified length).
    fn response_of(&self, tag: &[u8]) -> Option<Response> {
        let every = self.cfg.response_every;
        let flow = u32::from_be_bytes(tag.get(..4)?.try_into().ok()?);
        let index = u64::from_be_bytes(tag.get(4..12)?.try_into().ok()?);
        (every > 0 && index % every == every - 1).then_some(Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::Response,
            return_code: ReturnCode::Ok,
            message_id: 0,
            ri_generation: 0,
            job_id: flow,
            modified_length: index as u32,
        })
    }

    fn record_delivery(&mut self, tag: &[u8]) {
        let flow = u32::from_be_bytes(tag[..4].try_into().unwrap()) as usize;
        let index = u64::from_be_bytes(tag[4..12].try_into().unwrap());
        let mode = self.cfg.mode;
        let f = &mut self.flows[flow];
        let sent_at = f.first_sent[index as usize];
        assert!(!f.delivered[index as usize], "flow {flow} packet {index} delivered twice");
        f.delivered[index as usize] = true;
        f.delivered_count += 1;
        if mode == DeliveryMode::Rod {
            assert_eq!(index, f.next_in_order, "ROD flow {flow} delivered out of order");
            f.next_in_order += 1;
        }
        self.report.delivered += 1;
        self.report.latencies_ns.push(self.now.as_nanos() - sent_at);
    }

    /// Sends what a target PDC has to send, asks for a close where the flow wants the target to,
    /// and frees closed PDCs.
    fn target_output(&mut self, id: u16) {
        let now = self.now;
        let cfg = self.cfg;
        let Some(pdc) = self.targets.get_mut(id) else { return };
        let flow = pdc.remote_id();
        let f = self.flows.iter().position(|f| f.pdc == Some(flow));
        if let Some(f) = f {
            let flow = &self.flows[f];
            if flow.target_closes
                && flow.delivered_count == cfg.packets_per_flow
                && pdc.state() == uet_wire::pdc::TargetState::Established
            {
                pdc.request_close(now, &cfg.pdc).unwrap();
            }
        }
        let mut out = Vec::new();
        while let Some(tx) = pdc.poll_transmit(now) {
            out.push(match tx {
                TargetTx::Ack(a) => {
                    self.report.acks += 1;
                    let rsp = (a.next_header == NextHeader::Rsp).then(|| pdc.held_response(a.ack_psn()).unwrap());
                    (PdsHeader::Ack(a), rsp)
                }
                TargetTx::Control(c) => {
                    self.report.controls += 1;
                    (PdsHeader::Control(c), None)
                }
                TargetTx::Nack(n) => {
                    self.report.nacks += 1;
                    if n.code == uet_wire::pds::NackCode::NoGtdDelAvail {
                        self.report.response_refusals += 1;
                    }
                    (PdsHeader::Nack(n), None)
                }
                // This simulation sends no read data, so nothing of the return direction but
                // CLOSE_REQ (resent as a control packet) is ever outstanding.
                TargetTx::Resend(stamp) => (PdsHeader::Request(stamp.request(NextHeader::RspData, None)), None),
            });
        }
        let mut closed = false;
        while let Some(ev) = pdc.poll_event() {
            match ev {
                TargetEvent::Established => {}
                TargetEvent::Failed(why) => panic!("target PDC {id} failed: {why:?}"),
                TargetEvent::Closed => closed = true,
            }
        }
        if closed {
            self.targets.remove(id);
            self.report.targets_closed += 1;
        }
        for (h, rsp) in out {
            self.transmit_with(false, h, None, rsp, None);
        }
    }

    fn arrive(&mut self, p: InFlight) {
        let (bytes, trimmed) = (p.bytes, p.trimmed);
        let covered = if trimmed {
            &bytes[..]
        } else {
            let (covered, crc) = bytes.split_at(bytes.len() - 4);
            if crc32c(&[], covered).to_be_bytes() != crc {
                return;
            }
            covered
        };
        let Ok((header, rest)) = PdsHeader::parse(covered) else { return };
        if p.to == 1 {
            self.deliver_to_target(header, rest, trimmed);
        } else {
            self.deliver_to_initiator(header, rest);
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let arrival = self.fabric.next_arrival();
        let timers = self
            .initiators
            .iter()
            .filter_map(|(_, p)| p.poll_timeout())
            .chain(self.targets.iter().filter_map(|(_, p)| p.poll_timeout()))
            .min();
        let wants_send = self.flows.iter().any(|f| match f.pdc {
            None => f.sent == 0 && !f.closing,
            Some(id) => {
                let p = self.initiators.get(id).unwrap();
                p.has_pending() || (f.sent < self.cfg.packets_per_flow && p.can_send(&self.cfg.pdc))
            }
        });
        let send = if wants_send { Some(self.tx_free_at.max(self.now)) } else { None };
        [arrival, timers, send].into_iter().flatten().min()
    }

    /// Runs until every flow is done and every PDC closed, or `limit` of simulated time passes.
    pub fn run(&mut self, limit: Duration) -> PdcSimReport {
        let deadline = Instant::ZERO.saturating_add(limit);
        while let Some(wake) = self.next_wake() {
            if wake > deadline {
                break;
            }
            self.now = self.now.max(wake);
            while let Some(p) = self.fabric.pop_due(self.now) {
                self.arrive(p);
            }
            let now = self.now;
            let cfg = self.cfg.pdc;
            let due: Vec<u16> = self
                .initiators
                .iter()
                .filter(|(_, p)| p.poll_timeout().is_some_and(|t| t <= now))
                .map(|(id, _)| id)
                .collect();
            for id in due {
                self.initiators.get_mut(id).unwrap().handle_timeout(now, &cfg);
                self.initiator_events(id);
            }
            let due: Vec<u16> = self
                .targets
                .iter()
                .filter(|(_, p)| p.poll_timeout().is_some_and(|t| t <= now))
                .map(|(id, _)| id)
                .collect();
            for id in due {
                self.targets.get_mut(id).unwrap().handle_timeout(now, &cfg);
                self.target_output(id);
            }
            self.close_finished();
            while self.initiator_send() {}
        }
        self.report.elapsed = self.now.saturating_duration_since(Instant::ZERO);
        let faults = self.fabric.faults;
        (self.report.lost, self.report.duplicated, self.report.trimmed, self.report.corrupted) =
            (faults.lost, faults.duplicated, faults.trimmed, faults.corrupted);
        self.report.completed =
            self.flows.iter().all(|f| f.delivered_count == self.cfg.packets_per_flow && f.pdc.is_none())
                && self.initiators.is_empty()
                && self.targets.is_empty();
        if self.report.completed {
            let every = self.cfg.response_every;
            for (k, f) in self.flows.iter().enumerate() {
                for index in (0..self.cfg.packets_per_flow).filter(|i| every > 0 && i % every == every - 1) {
                    assert!(f.responses[index as usize], "flow {k}: response to packet {index} never arrived");
                }
            }
        }
        let mut r = self.report.clone();
        r.latencies_ns.sort_unstable();
        r
    }
}
