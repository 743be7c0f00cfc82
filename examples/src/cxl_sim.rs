//! A seeded CXL.cachemem link over 68B flits: a host and a device, each with a packer, an
//! unpacker and the link-layer retry machine (`cxl_types::flit68`), joined by a channel that
//! flips bits. Both send random CXL.mem and CXL.cache messages of their direction, with data
//! where the message has it; [`CxlSim::run`] checks that each message arrives exactly once, in
//! order per kind, with its data.

use crate::link_sim::Rng;
use cxl_types::flit68::crc::FLIT_LEN;
use cxl_types::flit68::header::Credit;
use cxl_types::flit68::llr::{Delivered, ENTRY, Event, FlitKind, Llr, LlrConfig, LocalState};
use cxl_types::flit68::pack::{Item, Packed, Packer, Payload, Queues, Shape, Unpacker};
use cxl_types::flit68::slot::Direction;
use cxl_types::msg::{Kind, Msg, Width};

/// LLRB entries at each end.
pub const LLRB: usize = 64;

/// The simulation's knobs.
#[derive(Clone, Copy, Debug)]
pub struct CxlSimConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Messages each end sends.
    pub messages: u64,
    /// Probability that a bit on the channel flips.
    pub ber: f64,
    /// Multiple data headers per slot enabled at both ends.
    pub mdh: bool,
}

/// What a run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct CxlSimReport {
    /// Flits put on the wire, host to device and device to host.
    pub flits: [u64; 2],
    /// Flits the channel corrupted.
    pub corrupted: u64,
    /// Messages delivered, at the device and at the host.
    pub delivered: [u64; 2],
    /// RETRY.Req sequences sent.
    pub retry_reqs: u64,
    /// Flits replayed.
    pub replayed: u64,
    /// Physical-layer retrains requested.
    pub phy_reinits: u64,
    /// Time steps (one flit slot each way).
    pub steps: u64,
}

/// One end of the link.
struct End {
    direction: Direction,
    queues: Queues<8>,
    packer: Packer,
    llr: Llr<[u8; ENTRY * LLRB], LLRB>,
    unpacker: Unpacker,
    /// Messages generated so far, per kind index.
    made: [u64; 12],
    /// Messages received so far, per kind index.
    got: [u64; 12],
    sent: u64,
}

/// The `i`-th message of `kind` an end sends, and its data: a function of the seed only, so
/// the receiver can check what it gets.
fn message(seed: u64, kind: Kind, i: u64) -> (Msg, Option<Payload>) {
    let mut r = Rng::new(seed ^ (kind as u64) << 56 ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let n = kind.bits(Width::Flit68).unwrap_or(1);
    let bits = (u128::from(r.next_u64()) << 64 | u128::from(r.next_u64())) & ((1u128 << n) - 1) | 1;
    let m = Msg::decode(kind, bits, Width::Flit68).expect("68B kinds decode");
    let m = Msg::decode(kind, m.encode(Width::Flit68).expect("decoded messages encode"), Width::Flit68)
        .expect("and decode again");
    let data = kind.has_data().then(|| {
        let shape = Shape { half: r.chance(0.25), be: r.chance(0.25) };
        let shape = if shape.allowed(kind) { shape } else { Shape::default() };
        let mut bytes = [0u8; 64];
        for b in bytes.iter_mut() {
            *b = r.next_u64() as u8;
        }
        if shape.half {
            bytes[32..].fill(0);
        }
        Payload { bytes, half: shape.half, be: shape.be.then(|| r.next_u64()) }
    });
    (m, data)
}

fn kinds(direction: Direction) -> impl Iterator<Item = Kind> {
    Kind::ALL
        .into_iter()
        .filter(move |k| k.downstream() == (direction == Direction::Downstream) && k.bits(Width::Flit68).is_some())
}

impl End {
    fn new(direction: Direction, mdh: bool) -> End {
        End {
            direction,
            queues: Queues::default(),
            packer: Packer::new(direction).with_mdh(mdh),
            llr: Llr::new(LlrConfig::default(), [0; ENTRY * LLRB]).expect("a valid LLRB"),
            unpacker: Unpacker::new(match direction {
                Direction::Downstream => Direction::Upstream,
                Direction::Upstream => Direction::Downstream,
            })
            .with_mdh(mdh),
            made: [0; 12],
            got: [0; 12],
            sent: 0,
        }
    }

    /// Queues new messages while `budget` lasts, packs what the retry buffer has room for and
    /// returns the next flit for the wire.
    fn transmit(&mut self, seed: u64, budget: u64, rng: &mut Rng, out: &mut [u8; FLIT_LEN]) -> bool {
        if self.sent < budget && rng.chance(0.7) {
            let ks: Vec<Kind> = kinds(self.direction).collect();
            let kind = ks[rng.below(ks.len() as u64) as usize];
            let i = self.made[kind as usize];
            let (m, d) = message(seed, kind, i);
            if self.queues.push(m, d).is_ok() {
                self.made[kind as usize] += 1;
                self.sent += 1;
            }
        }
        if self.packer.owes_all_data() || self.llr.can_send() {
            let mut body = [0u8; 64];
            if let Some(p) = self.packer.pack(&mut self.queues, [Credit::NONE; 3], &mut body).expect("messages pack") {
                let kind = match p {
                    Packed::Protocol => FlitKind::Protocol,
                    Packed::AllData => FlitKind::AllData,
                };
                self.llr.send(&body, kind, self.packer.owes_all_data()).expect("the LLRB keeps room for a run");
            }
        }
        self.llr.poll_transmit(out).is_some()
    }

    /// Takes a flit from the wire, checking every message against what the peer generated.
    fn receive(&mut self, seed: u64, flit: &[u8; FLIT_LEN]) -> u64 {
        let mut n = 0;
        match self.llr.handle_flit(flit, self.unpacker.expects_all_data()) {
            Some(Delivered::Protocol | Delivered::AllData) => {
                let body: &[u8; 64] = flit.first_chunk().expect("66 bytes");
                let got = &mut self.got;
                self.unpacker
                    .unpack(body, |item| {
                        let (m, d) = match item {
                            Item::Msg(m) => (m, None),
                            Item::Data(m, p) => (m, Some(*p)),
                            Item::Mac(_) => panic!("no MAC is sent"),
                        };
                        let i = &mut got[m.kind() as usize];
                        assert_eq!((m, d), message(seed, m.kind(), *i), "{:?} #{i}", m.kind());
                        *i += 1;
                        n += 1;
                    })
                    .expect("a CRC-good flit the retry machine delivers unpacks");
            }
            Some(Delivered::Control(_)) | None => {}
        }
        while let Some(e) = self.llr.poll_event() {
            match e {
                Event::PhyReinit => self.llr.handle_phy_reinit_done(),
                other => panic!("unexpected {other:?}"),
            }
        }
        n
    }
}

/// Two ends and the channel between them.
pub struct CxlSim {
    config: CxlSimConfig,
    host: End,
    device: End,
    rng: Rng,
}

impl CxlSim {
    /// A simulation with both ends idle.
    pub fn new(config: CxlSimConfig) -> CxlSim {
        CxlSim {
            config,
            host: End::new(Direction::Downstream, config.mdh),
            device: End::new(Direction::Upstream, config.mdh),
            rng: Rng::new(config.seed),
        }
    }

    /// Runs until every message has arrived or `max_steps` pass; panics on a message lost,
    /// duplicated, reordered or changed.
    pub fn run(&mut self, max_steps: u64) -> CxlSimReport {
        let mut r = CxlSimReport::default();
        let seeds = [self.config.seed ^ 0x1111, self.config.seed ^ 0x2222];
        let goal = self.config.messages;
        while r.steps < max_steps && !(r.delivered[0] >= goal && r.delivered[1] >= goal) {
            r.steps += 1;
            for (dir, seed) in seeds.into_iter().enumerate() {
                let (from, to) =
                    if dir == 0 { (&mut self.host, &mut self.device) } else { (&mut self.device, &mut self.host) };
                let mut flit = [0u8; FLIT_LEN];
                if !from.transmit(seed, goal, &mut self.rng, &mut flit) {
                    continue;
                }
                r.flits[dir] += 1;
                if self.config.ber > 0.0 && self.rng.chance(self.config.ber * 528.0) {
                    let bit = self.rng.below(528) as usize;
                    flit[bit / 8] ^= 1 << (bit % 8);
                    r.corrupted += 1;
                }
                r.delivered[dir] += to.receive(seed, &flit);
            }
        }
        for end in [&self.host, &self.device] {
            let s = end.llr.stats();
            r.retry_reqs += s.retry_reqs;
            r.replayed += s.replayed;
            assert_ne!(end.llr.local_state(), LocalState::Abort);
        }
        r
    }
}
