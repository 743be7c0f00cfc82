//! The xlink fabric demo: protocol stacks over simulated, noisy links, with a short report.
//!
//! Part 1 (link layer): two link ends, each running UE LLR and CBFC from `linklayer`, exchange
//! data frames over a 100 Gb/s, 100 m link that corrupts frames and loses control ordered sets;
//! the receivers drain their buffers slower than the link delivers, so CBFC has to throttle.
//!
//! Part 2 (scale-out): UET PDCs from `uet-wire` over a sprayed 8-path fabric that loses,
//! duplicates, trims and corrupts packets. One initiator host opens a PDC per flow to one target
//! host (RUD sprayed, ROD on one path) and closes it when done (half the flows at the target's
//! request), packet by packet; then two `Endpoint`s exchange a few thousand messages of up to
//! 64 KiB both ways over the same fabric, every packet sealed with TSS (AES-256-GCM, secure start
//! PSNs) unless `--no-tss`, printing authentication failures, replays refused and the seal + open
//! cost. Last, congestion management: 16 senders into one receiver through switch queues under
//! NSCC, RCCC and both (fairness, queueing delay), and one flow around a slowed or failed path
//! with each entropy selector (REPS, bitmap, oblivious).
//!
//! Part 3 (scale-up): two accelerators on one UALink 200 link, each running the whole
//! `ualink-flit` stack (UPLI requests → TL packer → DL flits with link-level replay → wire → DL →
//! TL unpacker), issuing loads, stores and atomics to each other over a wire that flips bits in
//! DL flits and loses some in the PCS; one row starves the senders of TL credits. Then the same
//! link with each port one `UpliPort` object, through link downs.
//!
//! Part 4 (scale-up over Ethernet): two GPUs on one lossy 400 Gb/s Ethernet link running the
//! whole `ethx-paxi` stack (AXI loads and stores, header compression and aggregation, RC Link
//! go-back-N, PRI frames with an ICRC), printing the wire efficiency and the retransmissions.
//!
//! Part 5 (die-to-die): two chiplets' UCIe D2D adapters from `ucie-adapter` bring up a link over
//! a simulated sideband (printing each state change and the negotiated format), then carry
//! CXL.cachemem flits both ways over a mainband with bit errors; one row adds an error burst
//! beyond what retry handles, which retrains the link.
//!
//! Usage: `fabric-demo [FRAMES_PER_END] [SEED] [--no-tss]` (`--help` says more).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::Duration;
use uet_wire::msg::{Controllers, LoadBalancing};
use uet_wire::pdc::PdcConfig;
use uet_wire::pds::DeliveryMode;
use xlink_examples::cms_endpoint_sim::{self, CmsEndpointSimConfig};
use xlink_examples::cms_sim::{Cc, CmsSim, CmsSimConfig, Degrade, Lb};
use xlink_examples::endpoint_sim::{EndpointSim, EndpointSimConfig};
use xlink_examples::ethx_sim::{EthxSim, EthxSimConfig};
use xlink_examples::fabric::FabricConfig;
use xlink_examples::link_sim::{Sim, SimConfig};
use xlink_examples::pdc_sim::{PdcSim, PdcSimConfig};
use xlink_examples::ualink_port_sim::{PortSim, PortSimConfig};
use xlink_examples::ualink_sim::{FLIT_NS, RxBuffers, UaSim, UaSimConfig};
use xlink_examples::ucie_sim::{UcieSim, UcieSimConfig};

/// The xlink fabric demo: link layer, scale-out and scale-up stacks over simulated noisy links.
#[derive(clap::Parser, Debug)]
#[command(version)]
struct Args {
    /// Frames each link end sends in part 1.
    #[arg(default_value_t = 200_000)]
    frames: u64,
    /// Seed of every simulated wire.
    #[arg(default_value_t = 1)]
    seed: u64,
    /// Send part 2's endpoint messages in clear with a CRC32C trailer instead of sealing them with
    /// TSS (AES-256-GCM).
    #[arg(long)]
    no_tss: bool,
}

fn main() {
    let Args { frames, seed, no_tss } = <Args as clap::Parser>::parse();

    println!("xlink fabric demo");
    println!();
    println!(
        "Part 1: link layer (UE 1.0 §5.1 LLR + §5.2 CBFC), 100 Gb/s, 100 m, {frames} frames each way, seed {seed}"
    );
    println!();
    println!(
        "| frame error rate | CtlOS loss | delivered | corrupted | NACKs | replays | frames replayed | credit stalls | flushes | Gb/s goodput | wall time |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (fer, ctl_loss) in [(0.0, 0.0), (1e-5, 1e-4), (1e-3, 1e-3), (1e-2, 1e-2)] {
        let mut cfg = SimConfig::new(seed, frames, fer);
        cfg.ctl_loss_rate = ctl_loss;
        cfg.ctl_corrupt_rate = ctl_loss;
        let started = std::time::Instant::now();
        let mut sim = Sim::new(cfg);
        let r = sim.run(Duration::from_millis(10_000));
        let wall = started.elapsed();
        let bytes: u64 = frames * 2 * 288; // mean frame length of 64..=512
        let gbps = bytes as f64 * 8.0 / r.elapsed.as_nanos() as f64;
        assert_eq!(r.delivered, 2 * frames, "every frame delivered exactly once");
        println!(
            "| {fer:.0e} | {ctl_loss:.0e} | {} | {} | {} | {} | {} | {} | {} | {gbps:.1} | {:.2} s |",
            r.delivered,
            r.corrupted,
            r.nacks,
            r.replays,
            r.frames_replayed,
            r.credit_stalls,
            r.flushes,
            wall.as_secs_f64()
        );
    }
    println!();
    println!("Every frame was delivered exactly once and in order in every row (checked as it ran).");
    println!();
    scale_out(seed, !no_tss);
    println!();
    scale_up(seed);
    println!();
    scale_up_ports(seed);
    println!();
    scale_up_ethx(seed);
    println!();
    die_to_die(seed);
}

fn die_to_die(seed: u64) {
    println!(
        "Part 5: die-to-die (UCIe 2.0 D2D adapter: parameter exchange, link state machines, CRC, flit retry), 1 ns flit time"
    );
    println!();
    println!("Bring-up of one link (state changes as the adapters report them):");
    let r = UcieSim::new(UcieSimConfig { verbose: true, ..UcieSimConfig::new(seed, 1_000, 0.0) }).run(1_000_000);
    assert_eq!(r.delivered, [1_000, 1_000]);
    println!();
    let flits = 1_000_000u64;
    println!("{flits} CXL.cachemem flits each way (Format 6), seed {seed}:");
    println!();
    println!(
        "| bit error rate | corrupted flits | replays | Naks | retrains | flits delivered | efficiency | wall time |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let rows = [(0.0, None), (1e-7, None), (1e-6, None), (1e-5, None), (1e-7, Some(100_000))];
    for (ber, burst) in rows {
        let started = std::time::Instant::now();
        let cfg = UcieSimConfig {
            burst_at: burst,
            burst_len: 100_000,
            burst_ber: 2e-3,
            ..UcieSimConfig::new(seed, flits, ber)
        };
        let r = UcieSim::new(cfg).run(100_000_000);
        assert_eq!(r.delivered, [flits, flits], "every flit delivered once, in order");
        println!(
            "| {}{} | {} | {} | {} | {} | {} | {:.1} % | {:.2} s |",
            if ber == 0.0 { "0".to_string() } else { format!("{ber:.0e}") },
            if burst.is_some() { " + burst 2e-3" } else { "" },
            r.corrupted,
            r.replays,
            r.naks,
            r.retrains,
            r.delivered[0] + r.delivered[1],
            flits as f64 / r.flit_times as f64 * 100.0,
            started.elapsed().as_secs_f64()
        );
    }
    println!();
    println!("Each die received the other's flits once and in order (checked as it ran). Efficiency: flits per flit");
    println!("time in each direction; the rest went to replays, Ack/Nak NOPs and the retrain.");
}

fn scale_up_ethx(seed: u64) {
    let transactions = 200_000u64;
    println!(
        "Part 4: scale-up over Ethernet (ETH-X: AXI → header compression + aggregation → RC Link go-back-N → PRI frames with ICRC), \
         400 Gb/s, 1 µs each way, {transactions} loads and stores (64–256 B) from GPU A to GPU B, seed {seed}"
    );
    println!();
    println!(
        "| link layer | frame loss | corrupted, duplicated, reordered (each) | packets | retransmitted | NAKs | timeouts | frames refused (ICRC) | link-layer replays | useful / wire bytes | Gb/s data | simulated time | wall time |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (loss, link_layer) in [(0.0, false), (0.001, false), (0.01, false), (0.05, false), (0.01, true), (0.05, true)] {
        let started = std::time::Instant::now();
        let cfg = EthxSimConfig { link_layer, ..EthxSimConfig::new(seed, transactions, loss) };
        let r = EthxSim::new(cfg).run(100_000_000);
        let wall = started.elapsed();
        assert_eq!(r.completed, transactions, "every transaction completed exactly once");
        println!(
            "| {} | {:.1} % | {} | {} | {} | {} | {} | {} | {} | {:.1} % | {:.0} | {:.2} ms | {:.2} s |",
            if link_layer { "LLR + CBFC" } else { "none" },
            loss * 100.0,
            if link_layer { format!("{:.2} % corrupted", loss * 20.0) } else { format!("{:.2} %", loss * 20.0) },
            r.packets,
            r.retransmitted,
            r.naks,
            r.timeouts,
            r.refused,
            r.link_replayed,
            r.efficiency() * 100.0,
            r.useful_bytes as f64 * 8.0 / r.elapsed_ns as f64,
            r.elapsed_ns as f64 / 1e6,
            wall.as_secs_f64()
        );
    }
    println!();
    println!(
        "Every request reached GPU B once and in order with its data, and every response reached GPU A once and in"
    );
    println!(
        "order with its data (checked as it ran). Wire bytes count both directions with preamble, IFG, FCS and the"
    );
    println!(
        "64 B minimum frame; `cargo run --release -p xlink-examples --bin ethx-efficiency` shows the framing's share."
    );
}

fn scale_up(seed: u64) {
    let requests = 50_000u64;
    println!(
        "Part 3: scale-up (UALink 200: UPLI, TL, DL with replay), one 200G link, 25 ns flit time, 500 ns each way, {requests} requests per accelerator, seed {seed}"
    );
    println!();
    println!(
        "| flit error rate | credits | loads | stores | atomics | TL flits | DL flits | replays | flits replayed | bad flits | TL eff. | DL eff. | link busy | Gb/s data (both ways) | latency p50 | p99 | channel 0 online | UART words | DL msg words | wall time |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let starved = RxBuffers { req_cmd: 4, req_data: 4, rsp_cmd: 4, rsp_data: 4 };
    for (ber, credits) in [(0.0, None), (1e-4, None), (1e-3, None), (1e-2, None), (1e-2, Some(starved))] {
        let mut cfg = UaSimConfig::new(seed, requests, ber);
        let label = match credits {
            Some(c) => {
                cfg.rx_credits = c;
                cfg.service_per_slot = 1;
                cfg.service_interval = 3;
                "4 per class"
            }
            None => "ample",
        };
        let started = std::time::Instant::now();
        let r = UaSim::new(cfg).run(50_000_000);
        let wall = started.elapsed();
        println!(
            "| {ber:.0e} | {label} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} % | {:.1} % | {:.0} % | {:.1} | {} ns | {} ns | {} ns | {} | {} | {:.2} s |",
            r.kinds[0],
            r.kinds[1],
            r.kinds[2],
            r.tl_flits,
            r.dl_flits,
            r.replays,
            r.dl_replayed,
            r.bad_flits,
            r.tl_efficiency * 100.0,
            r.dl_efficiency() * 100.0,
            r.link_busy() * 100.0,
            r.goodput_gbps(),
            r.latency_ns(0.5),
            r.latency_ns(0.99),
            r.tl_online_at * FLIT_NS,
            r.uart_words,
            r.dl_message_words,
            wall.as_secs_f64()
        );
    }
    println!();
    println!(
        "Every request was answered exactly once, every TL flit delivered once and in order, and every TL credit returned, in every row (checked as it ran). Each run starts with the DL channels offline: the ports negotiate Channel 0 (TL) and Channel 4 (UART) online and exchange Device IDs by DL messages over the same lossy link, then stream UART words both ways beside the TL traffic, each delivered once and in order."
    );
}

fn scale_up_ports(seed: u64) {
    let requests = 50_000u64;
    println!(
        "Part 3b: the same link, each port one `UpliPort` (UPLI Originator and Completer over TL and DL), {requests} requests per accelerator, answered 4 flit times after arrival, seed {seed}"
    );
    println!();
    println!(
        "| flits lost / bit-flipped | link downs | answered | failed | dropped held | replays | Gb/s data | requests/s simulated | wall time |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (rate, downs) in [(0.0, vec![]), (1e-3, vec![]), (1e-2, vec![]), (1e-3, vec![20_000, 60_000])] {
        let cfg = PortSimConfig {
            loss: rate,
            bit_errors: rate,
            link_downs: downs.clone(),
            ..PortSimConfig::new(seed, requests)
        };
        let started = std::time::Instant::now();
        let r = PortSim::new(cfg).run(50_000_000);
        let wall = started.elapsed().as_secs_f64();
        println!(
            "| {rate:.0e} | {} | {} | {} | {} | {} | {:.1} | {:.2} M | {wall:.2} s |",
            downs.len(),
            r.answered,
            r.failed,
            r.dropped,
            r.replays,
            r.data_bytes as f64 * 8.0 / (r.flit_times * FLIT_NS) as f64,
            (r.answered + r.failed) as f64 / wall / 1e6,
        );
    }
    println!();
    println!(
        "Every request ended exactly once, answered or (at a link down) failed, with its data intact (checked as it ran). The port object replaces the ~250 lines of glue of part 3's hand-wired stack."
    );
}

fn scale_out(seed: u64, secure: bool) {
    let (flows, packets) = (8u32, 2_500u64);
    println!(
        "Part 2: scale-out (UET PDS, RUD and ROD PDCs), 800 Gb/s, 8 paths, {flows} PDCs x {packets} packets of 4 KiB, seed {seed}"
    );
    println!();
    println!(
        "| mode | loss | dup/trim/corrupt each | delivered | resends | ACKs | NACKs | filtered | latency p50 | p99 | p99.9 | Gb/s goodput |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (mode, loss) in [
        (DeliveryMode::Rud, 0.0),
        (DeliveryMode::Rud, 0.01),
        (DeliveryMode::Rud, 0.05),
        (DeliveryMode::Rud, 0.30),
        (DeliveryMode::Rod, 0.0),
        (DeliveryMode::Rod, 0.01),
    ] {
        let cfg = PdcSimConfig::new(seed, mode, flows, packets, loss).with_sprayed_timers();
        let r = PdcSim::new(cfg).run(Duration::from_millis(60_000));
        assert!(r.completed, "every packet delivered exactly once and every PDC closed");
        let gbps = (r.delivered * u64::from(cfg.packet_bytes) * 8) as f64 / r.elapsed.as_nanos() as f64;
        println!(
            "| {mode:?} | {:.0} % | {:.2} % | {} | {} | {} | {} | {} | {} | {} | {} | {gbps:.0} |",
            loss * 100.0,
            loss * 25.0,
            r.delivered,
            r.resends,
            r.acks,
            r.nacks,
            r.filtered,
            us(r.latency_percentile(50.0)),
            us(r.latency_percentile(99.0)),
            us(r.latency_percentile(99.9)),
        );
    }
    println!();
    println!(
        "Every packet was delivered exactly once (ROD in order), no PDC failed, and every PDC on both sides closed."
    );
    println!("Latency runs from a packet's first send to its delivery, resends included.");
    let max_rtt = FabricConfig::sprayed(0.0).max_rtt();
    let timers = PdcConfig::sprayed(max_rtt);
    println!(
        "PDC timers: `PdcConfig::sprayed` for this fabric's longest round trip ({}): resend {} after a gap, probe \
         after {} of quiet, retransmission timeout from {}.",
        us(max_rtt),
        us(timers.reorder_window),
        us(timers.tail_loss_time),
        us(timers.rto_min),
    );
    println!();
    messages(seed, secure);
    println!();
    congestion(seed);
}

fn congestion(seed: u64) {
    println!(
        "Congestion management (`uet_wire::cms`, `uet_wire::lb`): 16 senders into one 100 Gb/s receiver over 8 paths \
         of 25 Gb/s, switch queues of 1 MB marking ECN above 100 KB and trimming on overflow, 10 ms, seed {seed}"
    );
    println!();
    println!(
        "| CC | Jain index (2nd half) | Gb/s | queue max | mean queueing delay | NSCC target | trims (last hop) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for cc in [Cc::Nscc, Cc::Rccc, Cc::Both] {
        let cfg = CmsSimConfig::incast(seed, 16, cc);
        let r = CmsSim::new(cfg).run();
        assert!(r.delivered_once);
        println!(
            "| {cc:?} | {:.3} | {:.1} | {} kB | {} | {} | {} ({}) |",
            r.jain,
            r.goodput_gbps,
            r.max_queue / 1000,
            us(r.mean_queue_delay),
            us(cfg.target_qdelay()),
            r.trims,
            r.last_hop_trims
        );
    }
    println!();
    println!("One 16 MiB flow under NSCC, path 0 degraded 200 µs in; completion time per EV selector:");
    println!();
    println!("| path 0 | REPS | bitmap | oblivious |");
    println!("|---|---:|---:|---:|");
    for (name, degrade) in
        [("healthy", None), ("10x slower", Some(Degrade::Slower(10))), ("failed", Some(Degrade::Failed))]
    {
        let run = |lb| {
            let cfg = CmsSimConfig {
                bytes_per_sender: Some(16 << 20),
                duration: Duration::from_millis(50),
                lb,
                degrade: degrade.map(|d| (d, Duration::from_micros(200))),
                ..CmsSimConfig::incast(seed, 1, Cc::Nscc)
            };
            let r = CmsSim::new(cfg).run();
            assert!(r.delivered_once);
            us(r.completion.expect("the flow completes"))
        };
        println!("| {name} | {} | {} | {} |", run(Lb::Reps), run(Lb::Bitmap), run(Lb::Oblivious));
    }
    println!();
    println!(
        "Every packet was delivered once. REPS reuses only EVs that came back unmarked, so it leaves the bad path."
    );
    println!();
    println!(
        "The same incast through real `Endpoint`s (16 senders, 512 WRITEs of 64 KiB each, 8 paths of 100 Gb/s, \
         queues of 1 MiB marking above 64 KiB, drop on overflow), the endpoints' congestion management off and on:"
    );
    println!();
    println!("| endpoints | Jain index | Gb/s | mean queue (2nd half) | drops | completion |");
    println!("|---|---:|---:|---:|---:|---:|");
    let reps = Some(LoadBalancing::Reps { paths: 64 });
    for (name, lb, controllers) in [
        ("CMS off", None, Controllers::Nscc),
        ("NSCC + REPS", reps, Controllers::Nscc),
        ("NSCC + oblivious", Some(LoadBalancing::Oblivious { paths: 64 }), Controllers::Nscc),
        ("NSCC + bitmap", Some(LoadBalancing::Bitmap), Controllers::Nscc),
        ("RCCC + REPS", reps, Controllers::Rccc),
        ("NSCC + RCCC + REPS", reps, Controllers::Both),
    ] {
        let r = cms_endpoint_sim::run(&CmsEndpointSimConfig { controllers, ..CmsEndpointSimConfig::incast(seed, lb) });
        assert!(r.exactly_once);
        println!(
            "| {name} | {:.3} | {:.1} | {} kB | {} | {} |",
            r.jain,
            r.goodput_gbps,
            r.mean_late_queue / 1000,
            r.drops,
            us(r.completion)
        );
    }
    println!();
    println!(
        "With NSCC + REPS and packets also lost at random on the paths, SLEEK loss recovery (the out-of-order count \
         and probes) off and on:"
    );
    println!();
    println!("| random loss | SLEEK | Gb/s | p99 message | resends (by SLEEK) | completion |");
    println!("|---:|---|---:|---:|---:|---:|");
    for loss_ppm in [0, 10_000, 50_000] {
        for sleek in [false, true] {
            let cfg = CmsEndpointSimConfig {
                loss_ppm,
                sleek,
                ..CmsEndpointSimConfig::incast(seed, Some(LoadBalancing::Reps { paths: 64 }))
            };
            let r = cms_endpoint_sim::run(&cfg);
            assert!(r.exactly_once);
            println!(
                "| {} % | {} | {:.1} | {} | {} ({}) | {} |",
                loss_ppm / 10_000,
                if sleek { "on" } else { "off" },
                r.goodput_gbps,
                us(r.p99_message),
                r.resends,
                r.sleek_resends,
                us(r.completion)
            );
        }
    }
    println!();
    println!("Every message was reported sent once and received once, whole.");
}

fn messages(seed: u64, secure: bool) {
    let per_side = 1_500u64;
    println!(
        "Two endpoints, {per_side} messages each way (0 to 64 KiB, 4 JobIDs; SENDs, WRITEs and every fourth a READ \
         of the other side), 4 KiB packets, same fabric, seed {seed}"
    );
    if secure {
        println!(
            "Every packet sealed with TSS (AES-256-GCM, cluster-mode keys, secure start PSNs) and opened before the \
             endpoint sees it; `--no-tss` sends them in clear with a CRC32C trailer."
        );
    }
    println!();
    println!(
        "| mode | loss | messages | MB | READs | MB read | request packets | resends | latency p50 | p99 | p99.9 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut tss = Vec::new();
    for (mode, loss) in
        [(DeliveryMode::Rud, 0.0), (DeliveryMode::Rud, 0.01), (DeliveryMode::Rud, 0.10), (DeliveryMode::Rod, 0.01)]
    {
        let cfg =
            EndpointSimConfig { secure, ..EndpointSimConfig::new(seed, mode, per_side, loss).with_sprayed_timers() };
        let r = <EndpointSim>::new(cfg).run(Duration::from_millis(60_000));
        assert!(r.completed, "every message delivered exactly once, every PDC closed");
        println!(
            "| {mode:?} | {:.0} % | {} | {:.1} | {} | {:.1} | {} | {} | {} | {} | {} |",
            loss * 100.0,
            r.messages,
            r.bytes as f64 / 1e6,
            r.reads,
            r.read_bytes as f64 / 1e6,
            r.requests,
            r.resends,
            us(r.latency_percentile(50.0)),
            us(r.latency_percentile(99.0)),
            us(r.latency_percentile(99.9)),
        );
        tss.push((mode, loss, r));
    }
    println!();
    println!("Every message arrived once with every byte checked, in order per JobID; no message failed.");
    println!("Each READ's data came back on its PDC's return direction, every byte checked before the READ completed.");
    println!(
        "Request packets count read data packets too. Latency runs from `send` to the receiver's `Received` event."
    );
    if !secure {
        return;
    }
    println!();
    println!(
        "| mode | loss | sealed | opened | authentication failures | corrupted by the fabric | replays refused | PDC restarts | seal + open |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (mode, loss, r) in tss {
        let per_packet = r.tss_ns as f64 / r.sealed.max(1) as f64;
        println!(
            "| {mode:?} | {:.0} % | {} | {} | {} | {} | {} | {} | {per_packet:.0} ns/packet ({:.2} M/s) |",
            loss * 100.0,
            r.sealed,
            r.opened,
            r.auth_failures,
            r.corrupted,
            r.replays,
            r.restarts,
            1e3 / per_packet.max(1e-9),
        );
    }
    println!();
    println!(
        "Every authentication failure was a packet the fabric corrupted (checked); no intact packet failed. Replays \
         refused are the fabric's duplicates, caught by TSS before the PDC. PDC restarts are SYNs the target answered \
         NEW_START_PSN (0-RTT secure start), each resending what the PDC had sent. Seal + open is wall-clock time per \
         packet sealed, both ends together, 4 KiB packets and the ACKs between them."
    );
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_nanos() as f64 / 1000.0)
}
