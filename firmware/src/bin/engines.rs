//! The other stacks' engines built in place on a Cortex-M4F: two UE link ends (`Link`: LLR and
//! CBFC), two CXL 68B retry machines (`Llr`), two UCIe retry machines (`Retry`) and adapters
//! (`Adapter`), and an ETH-X RC Link requester with its aggregator and the peer's deaggregator.
//! Each is a `static` of its all-zero `EMPTY` (in `.bss`: no flash, no start-up copy),
//! configured where it lies with `init`. Then each pair carries units one way over a wire that
//! loses or corrupts 1 % of them (the UCIe adapters come up through parameter exchange and the
//! Active handshake), and every unit must arrive exactly once, in order. Prints the start-up
//! peak stack, the stack while running and instructions per unit; `.ci/run` checks the image
//! has no initialised data and links no panic.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cxl_types::flit68::llr::{Delivered, ENTRY, FlitKind, Llr, LlrConfig};
use ethx_paxi::aggregate::{Aggregator, AggregatorConfig, Deaggregator};
use ethx_paxi::axi::{AddrReq, Channel, Size};
use ethx_paxi::compress::{StreamKey, Txn};
use ethx_paxi::paxi::ChannelWidths;
use ethx_paxi::qp::{Requester, RequesterConfig, Responder, ResponderConfig, Verdict};
use linklayer::cbfc::{Vc, VcMode};
use linklayer::link::{Link, LinkConfig, Received};
use linklayer::llr::{FrameCheck, LlrSizing};
use linklayer::{Duration, Instant, LinkRate};
use ucie_adapter::adapter::{Adapter, AdapterEvent};
use ucie_adapter::crc::Format;
use ucie_adapter::flit::Protocol;
use ucie_adapter::lsm::{LinkRequest, LinkStatus};
use ucie_adapter::param::{AdapterCaps, CxlCaps, ExchangeConfig, Role};
use ucie_adapter::retry::{Retry, RetryConfig};
use xlink_firmware::{Meter, Rng, exit, finish, paint_stack, peak_stack, report};

/// Units each pair carries.
const UNITS: u32 = 200;
/// Link replay storage and frame slots.
const LINK_BYTES: usize = 8192;
const LINK_SLOTS: usize = 32;
type UeLink = Link<[u8; LINK_BYTES], LINK_SLOTS>;
type CxlLlr = Llr<[u8; ENTRY * 32], 32>;
type UcieRetry = Retry<[u8; 32 * 256], 32>;
type UcieAdapter = Adapter<[u8; 8 * 256], 8>;
type EthxRequester = Requester<[u8; 4096], 16>;
type EthxAggregator = Aggregator<4, 2, 512>;

/// Every engine of the program.
struct Engines {
    links: [UeLink; 2],
    llrs: [CxlLlr; 2],
    retries: [UcieRetry; 2],
    adapters: [UcieAdapter; 2],
    requester: EthxRequester,
    aggregator: EthxAggregator,
    deaggregator: Deaggregator<4>,
}

/// An all-zero constant: the engines (with their buffers) live in `.bss`.
const EMPTY: Engines = Engines {
    links: [UeLink::EMPTY, UeLink::EMPTY],
    llrs: [CxlLlr::EMPTY, CxlLlr::EMPTY],
    retries: [UcieRetry::EMPTY, UcieRetry::EMPTY],
    adapters: [UcieAdapter::EMPTY, UcieAdapter::EMPTY],
    requester: EthxRequester::EMPTY,
    aggregator: EthxAggregator::EMPTY,
    deaggregator: Deaggregator::EMPTY,
};

const RATE: LinkRate = LinkRate::GBPS_100;
const VC: Vc = Vc::ZERO;
const LOSSLESS: VcMode = VcMode::Lossless { credit_limit: Some(64) };

fn link_config(mac: u8) -> LinkConfig {
    let sizing = LlrSizing::software(Duration::from_micros(1), RATE).with_frame_slots(LINK_SLOTS);
    let mut config = LinkConfig::software(&sizing, RATE, [2, 0, 0, 0, 0, mac]);
    config.llr_tx.outstanding_bytes_max = LINK_BYTES as u32;
    config
}

fn adapter_config(role: Role) -> ExchangeConfig {
    let caps = AdapterCaps::FLIT_68B | AdapterCaps::CXL_256B | AdapterCaps::PCIE_FLIT | AdapterCaps::RETRY;
    ExchangeConfig::new(role, caps | AdapterCaps::STACK0, CxlCaps::CXL_IO)
}

const WIDTHS: ChannelWidths = ChannelWidths::EXAMPLE;
const AGGREGATION: AggregatorConfig = AggregatorConfig { mtu: 512, max_per_frame: 8, budget: Duration::ZERO };

/// Configures every engine where it lies.
fn init(e: &mut Engines) -> bool {
    let mut ok = true;
    for (link, (mac, first)) in e.links.iter_mut().zip([(1, 5), (2, 700_000)]) {
        ok &= link.init(link_config(mac), first).is_ok()
            && link.set_vc_mode(Instant::ZERO, VC, LOSSLESS).is_ok()
            && link.enable(Instant::ZERO).is_ok();
    }
    for llr in &mut e.llrs {
        ok &= llr.init(LlrConfig::default()).is_ok();
    }
    for retry in &mut e.retries {
        retry.init(RetryConfig::new(Format::Standard256StartHeader, Protocol::Cxl));
    }
    for (adapter, role) in e.adapters.iter_mut().zip([Role::Downstream, Role::Upstream]) {
        adapter.init(adapter_config(role));
    }
    let requester = RequesterConfig { max_outstanding: 16, fack_every: 4, ..RequesterConfig::new(7) };
    ok &= e.requester.init(requester).is_ok();
    ok &= e.aggregator.init(WIDTHS, AGGREGATION).is_ok();
    ok & e.deaggregator.init(WIDTHS).is_ok()
}

/// Where a unit carries its id: four bytes from here (in a CXL protocol flit, in slot 0's
/// data, clear of the header's slot formats).
const ID_AT: usize = 8;

/// Writes `id` into a unit.
fn put_id(bytes: &mut [u8], id: u32) {
    if let Some(at) = bytes.get_mut(ID_AT..ID_AT + 4).and_then(|b| <&mut [u8; 4]>::try_from(b).ok()) {
        *at = id.to_be_bytes();
    }
}

/// The id a unit carries.
fn id_of(bytes: &[u8]) -> Option<u32> {
    bytes.get(ID_AT..ID_AT + 4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes)
}

/// What one pair's run found.
struct Outcome {
    delivered: u32,
    wrong: u32,
}

impl Outcome {
    /// Takes unit `id`: right only if it is the next one.
    fn take(&mut self, id: Option<u32>) {
        if id == Some(self.delivered) {
            self.delivered += 1;
        } else {
            self.wrong += 1;
        }
    }
}

/// 64-byte frames on a lossless VC from one link end to the other, 1 % lost, the CtlOS both
/// ways; the receiver drains each frame at once.
fn ue_link([a, b]: &mut [UeLink; 2], rng: &mut Rng) -> Outcome {
    let mut o = Outcome { delivered: 0, wrong: 0 };
    let mut sent = 0u32;
    for tick in 0..200_000u64 {
        let now = Instant::from_nanos(tick * 100);
        let mut frame = [0u8; 64];
        put_id(&mut frame, sent);
        if sent < UNITS && a.send(now, VC, &frame).is_ok() {
            sent += 1;
        }
        if let Some(out) = a.poll_transmit(now)
            && !rng.chance(10)
            && b.handle_frame(now, Some(out.seq.value()), FrameCheck::Good, VC, out.frame) == Received::Deliver
        {
            o.take(id_of(out.frame));
            if b.on_drained(VC, out.frame.len()).is_err() {
                o.wrong += 1;
            }
        }
        control(a, b, now, rng);
        control(b, a, now, rng);
        if o.delivered == UNITS {
            break;
        }
    }
    o
}

/// The CtlOS `from` has for `to`, 1 % lost, then `from`'s timers.
fn control(from: &mut UeLink, to: &mut UeLink, now: Instant, rng: &mut Rng) {
    while let Some(c) = from.poll_control(now) {
        if !rng.chance(10) {
            let _ = to.handle_control(now, c);
        }
    }
    from.handle_timeout(now);
}

/// 64-byte protocol flits from one CXL retry machine to the other, 1 % corrupted each way.
fn cxl_llr([a, b]: &mut [CxlLlr; 2], rng: &mut Rng) -> Outcome {
    let mut o = Outcome { delivered: 0, wrong: 0 };
    let (mut sent, mut out) = (0u32, [0u8; ENTRY]);
    for _ in 0..100_000 {
        let mut body = [0u8; 64];
        put_id(&mut body, sent);
        if sent < UNITS && a.can_send() && a.send(&body, FlitKind::Protocol, false).is_ok() {
            sent += 1;
        }
        if a.poll_transmit(&mut out).is_some() {
            corrupt(&mut out, rng);
            if let Some(Delivered::Protocol) = b.handle_flit(&out, false) {
                o.take(id_of(&out));
            }
        }
        if b.poll_transmit(&mut out).is_some() {
            corrupt(&mut out, rng);
            let _ = a.handle_flit(&out, false);
        }
        if o.delivered == UNITS {
            break;
        }
    }
    o
}

/// Flips a bit of `flit` 1 % of the time.
fn corrupt(flit: &mut [u8], rng: &mut Rng) {
    if rng.chance(10) {
        let at = rng.next_u64() as usize % flit.len().max(1);
        if let Some(byte) = flit.get_mut(at) {
            *byte ^= 0x10;
        }
    }
}

/// 256-byte CXL.cachemem flits from one UCIe retry machine to the other, 1 % corrupted each
/// way (Format 3; the handshake first).
fn ucie_retry([a, b]: &mut [UcieRetry; 2], rng: &mut Rng) -> Outcome {
    let mut o = Outcome { delivered: 0, wrong: 0 };
    let (mut sent, mut out) = (0u32, [0u8; 256]);
    for slot in 0..100_000u64 {
        let now = Instant::from_nanos(slot);
        while sent < UNITS && a.can_send() {
            let fill = |f: &mut [u8]| {
                if let Some(first) = f.first_mut() {
                    *first = 0b10 << 6;
                }
                // The payload starts after the 2-byte flit header.
                if let Some(payload) = f.get_mut(2..) {
                    put_id(payload, sent);
                }
            };
            if a.send_with(now, fill).is_err() {
                break;
            }
            sent += 1;
        }
        if a.poll_transmit(now, &mut out).is_some() {
            corrupt(&mut out, rng);
            if let ucie_adapter::retry::Received::Deliver { flit, .. } = b.handle_flit(now, &out) {
                o.take(flit.payload().first().and_then(|p| id_of(p)));
            }
        }
        if b.poll_transmit(now, &mut out).is_some() {
            corrupt(&mut out, rng);
            let _ = a.handle_flit(now, &out);
        }
        for m in [&mut *a, &mut *b] {
            while let Some(e) = m.poll_event() {
                if let ucie_adapter::retry::RetryEvent::Retrain(_) = e {
                    m.retrain();
                }
            }
        }
        if o.delivered == UNITS {
            break;
        }
    }
    o
}

/// RDI Active, parameter exchange over the sideband and stack 0's Active handshake: both UCIe
/// adapters reach Active.
fn ucie_bring_up(adapters: &mut [UcieAdapter; 2]) -> bool {
    let now = Instant::ZERO;
    for a in adapters.iter_mut() {
        a.handle_rdi(now, LinkStatus::Active);
    }
    settle(adapters);
    for a in adapters.iter_mut() {
        let _ = a.handle_request(now, 0, LinkRequest::Nop);
        let _ = a.handle_request(now, 0, LinkRequest::Active);
    }
    settle(adapters);
    adapters.iter().all(|a| a.status(0) == LinkStatus::Active)
}

/// Runs the sideband both ways and answers every handshake request.
fn settle([a, b]: &mut [UcieAdapter; 2]) {
    let now = Instant::ZERO;
    for _ in 0..20 {
        sideband(a, b, now);
        sideband(b, a, now);
    }
}

/// `from`'s sideband packets to `to`, after answering its handshake requests.
fn sideband(from: &mut UcieAdapter, to: &mut UcieAdapter, now: Instant) {
    while let Some(e) = from.poll_event() {
        match e {
            AdapterEvent::RxActiveRequest { stack, request } => from.handle_rx_active(now, stack, request),
            AdapterEvent::StallRequest { stack, request } => from.handle_stall_ack(now, stack, request),
            _ => {}
        }
    }
    while let Some(p) = from.poll_sideband() {
        to.handle_sideband(now, &p);
    }
}

/// AXI reads aggregated into frames, each the payload of one RC Link packet (1 % lost), and
/// the peer's deaggregator reading them back.
fn ethx(e: &mut Engines, rng: &mut Rng) -> Outcome {
    let mut o = Outcome { delivered: 0, wrong: 0 };
    let Ok(mut responder) = Responder::new(ResponderConfig { ack_every: 4, ..ResponderConfig::new(7, 3) }) else {
        return o;
    };
    let Some(size) = Size::from_bytes(64) else { return o };
    let key = StreamKey { peer: 1, vc: 0 };
    let mut pushed = 0u32;
    for tick in 0..100_000u64 {
        let now = Instant::from_nanos(tick * 100);
        while pushed < UNITS {
            let read = Txn::Read(AddrReq::incr(Channel::Read, u64::from(pushed) * 64, 1, size));
            if e.aggregator.push(now, key, &read).is_err() {
                break;
            }
            pushed += 1;
        }
        e.aggregator.flush();
        while e.requester.can_send(512) {
            let Some(frame) = e.aggregator.poll_transmit(now) else { break };
            if e.requester.send(now, frame.bytes).is_err() {
                o.wrong += 1;
            }
        }
        while let Some(out) = e.requester.poll_transmit(now) {
            if rng.chance(10) || responder.handle_send(now, &out.rh) != Verdict::Deliver {
                continue;
            }
            match e.deaggregator.open(1, out.payload) {
                Ok(records) => {
                    for txn in records {
                        // Read `n` reads address `n` × 64.
                        o.take(if let Txn::Read(r) = txn { Some((r.addr / 64) as u32) } else { None });
                    }
                }
                Err(_) => o.wrong += 1,
            }
        }
        while let Some(ack) = responder.poll_ack(now) {
            e.requester.handle_ack(now, &ack);
        }
        e.requester.handle_timeout(now);
        if o.delivered == UNITS {
            break;
        }
    }
    o
}

/// Reports one pair's outcome and instructions per unit; whether it delivered everything once.
fn outcome(name: &str, o: &Outcome, spent: u64) -> bool {
    xlink_firmware::out(name);
    report(" units delivered: ", u64::from(o.delivered), "");
    report("  instructions per unit: ", spent / u64::from(UNITS), "");
    o.delivered == UNITS && o.wrong == 0
}

#[entry]
fn main() -> ! {
    static mut ENGINES: Engines = EMPTY;
    let Some(core) = cortex_m::Peripherals::take() else { exit(false) };
    let meter = Meter::start(core.SYST);
    meter.check_scale();
    let _ = paint_stack();
    let t0 = meter.now();
    let e = ENGINES;
    let mut ok = init(e);
    report("start-up: ", meter.now() - t0, " instructions");
    let startup_stack = peak_stack();
    report("start-up peak stack: ", startup_stack as u64, " B");
    let sp = paint_stack();
    let mut rng = Rng::new(3);
    let t0 = meter.now();
    let o = ue_link(&mut e.links, &mut rng);
    ok &= outcome("UE link (LLR + CBFC), 64 B frames:", &o, meter.now() - t0);
    let t0 = meter.now();
    let o = cxl_llr(&mut e.llrs, &mut rng);
    ok &= outcome("CXL 68B retry, flits:", &o, meter.now() - t0);
    let t0 = meter.now();
    let o = ucie_retry(&mut e.retries, &mut rng);
    ok &= outcome("UCIe retry, 256B flits:", &o, meter.now() - t0);
    let up = ucie_bring_up(&mut e.adapters);
    xlink_firmware::out(if up { "UCIe adapters: Active\n" } else { "UCIe adapters: FAILED to come up\n" });
    ok &= up;
    let t0 = meter.now();
    let o = ethx(e, &mut rng);
    ok &= outcome("ETH-X reads aggregated over RC Link:", &o, meter.now() - t0);
    finish("engines", ok, startup_stack, sp)
}
