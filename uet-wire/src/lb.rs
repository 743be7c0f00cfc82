//! Load balancing: which entropy value (EV) the next packet of a CCC carries, so that a message's
//! packets spray over the fabric's paths.
//!
//! The EV is the entropy header's value in native IP mode, or the UDP source port
//! ([`crate::entropy`]); switches hash it to pick a path, so one EV is one path. Behind one trait,
//! [`EntropySource`], three selectors from the UEC simulator (`ultraethernet/uet-htsim`
//! `40ccb05`, `htsim/sim/uec_mp.cpp`, `buffer_reps.cpp`); an embedder may plug in its own:
//!
//! * [`Oblivious`]: every path once per round, in an order redrawn each round;
//! * [`Reps`]: recycled entropy packet spraying — EVs that came back in unmarked ACKs are reused,
//!   random ones explore; after a timeout it *freezes* on the EVs it knows to be good;
//! * [`Bitmap`]: the oblivious order, skipping paths penalised by recent ECN marks, NACKs and
//!   timeouts.
//!
//! Feedback ([`PathFeedback`]) is what the simulator feeds its selectors: an unmarked ACK is
//! `Good`, a marked one `Ecn`; a NACK of a packet trimmed at the last hop is `Good` (or `Ecn` if
//! marked) since another path cannot help there, any other NACK `Nack`; a retransmission timeout
//! is `Timeout`, with the EV the lost packet carried when the sender kept it (the simulator keeps
//! none and passes an unknown EV; [`Bitmap`] can penalise the path only when it is named). Every
//! transmission (first sends, resends, probes and credit requests) draws a new EV.
//!
//! Random draws come from a xorshift generator seeded by the caller: randomness is an input, and
//! a seed makes a run repeatable. *Project-defined*: the oblivious and bitmap selectors round
//! the path count down to a power of two (the simulator requires one there) and fix the random
//! upper bits of the EV per selector, as the simulator does; REPS takes any path count, and its
//! random EVs stay below it, as the simulator's `rand() % no_of_paths`.

use linklayer::{Duration, Instant};

/// What the network said about a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PathFeedback {
    /// An unmarked ACK (or a NACK of a packet trimmed at the last hop).
    Good,
    /// An ECN-marked ACK.
    Ecn,
    /// A NACK of a packet trimmed or refused inside the network.
    Nack,
    /// A retransmission timeout.
    Timeout,
}

/// Picks the entropy value of each packet of one CCC and learns from the feedback.
pub trait EntropySource {
    /// The EV for the next packet sent at `now`.
    fn next_entropy(&mut self, now: Instant) -> u16;
    /// Feedback at `now` about the path of EV `ev` (`None` when the feedback carries no EV, as
    /// a timeout).
    fn on_feedback(&mut self, now: Instant, ev: Option<u16>, feedback: PathFeedback);
}

/// One splitmix64 step: `seed` mixed so that nearby seeds give unrelated values.
const fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seeded xorshift32 generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct Rng(u32);

impl Rng {
    /// Seeds from `seed` mixed by one splitmix64 step, so that nearby seeds (flow numbers) give
    /// unrelated sequences.
    fn new(seed: u64) -> Self {
        let folded = (splitmix64(seed) >> 32) as u32;
        Rng(if folded == 0 { 0x9E37_79B9 } else { folded })
    }

    fn next(&mut self) -> u16 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        (x >> 16) as u16
    }
}

/// The largest power of two at most `paths` (at least 1).
fn power_of_two(paths: u16) -> u16 {
    if paths == 0 { 1 } else { 1 << (15 - paths.leading_zeros()) }
}

/// The oblivious round: every path index once per round, XORed with a value redrawn each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct Round {
    mask: u16,
    index: u16,
    xor: u16,
    /// The EV's bits above the path bits, fixed per selector.
    upper: u16,
}

impl Round {
    /// A round over the paths under `mask` (a power of two minus one).
    fn new(mask: u16, rng: &mut Rng) -> Self {
        let upper = rng.next() & !mask;
        Round { mask, index: 0, xor: rng.next() & mask, upper }
    }

    /// The current path index.
    fn path(&self) -> u16 {
        (self.index ^ self.xor) & self.mask
    }

    fn advance(&mut self, rng: &mut Rng) {
        if self.index == self.mask {
            self.index = 0;
            self.xor = rng.next() & self.mask;
        } else {
            self.index += 1;
        }
    }

    fn ev(&self, path: u16) -> u16 {
        path | self.upper
    }
}

/// Oblivious spraying (htsim `UecMpOblivious`): ignores feedback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Oblivious {
    round: Round,
    rng: Rng,
}

impl Oblivious {
    /// Sprays over `paths` (rounded down to a power of two, at least 1), seeded by `seed`.
    pub fn new(paths: u16, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        Oblivious { round: Round::new(power_of_two(paths) - 1, &mut rng), rng }
    }

    /// The number of paths sprayed over.
    pub const fn paths(&self) -> u32 {
        self.round.mask as u32 + 1
    }
}

impl EntropySource for Oblivious {
    fn next_entropy(&mut self, _now: Instant) -> u16 {
        let ev = self.round.ev(self.round.path());
        self.round.advance(&mut self.rng);
        ev
    }

    fn on_feedback(&mut self, _now: Instant, _ev: Option<u16>, _feedback: PathFeedback) {}
}

/// Largest penalty of one path (htsim `_max_penalty`).
pub const MAX_PATH_PENALTY: u8 = 15;

/// Oblivious spraying that skips penalised paths (htsim `UecMpBitmap`) over `P` paths (a power
/// of two, at most 65 536).
///
/// Feedback adds to the path's penalty: ECN 1, NACK 4, timeout [`MAX_PATH_PENALTY`] (the penalty
/// is capped there). The next EV walks the oblivious order; the first penalised path it meets
/// loses one point, and every penalised path is skipped; after `P` steps the path reached is used
/// anyway. A timeout that names no EV penalises nothing (*project-defined*: the simulator
/// penalises its "unknown" EV, 0, which would punish a healthy path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bitmap<const P: usize = 64> {
    round: Round,
    rng: Rng,
    penalty: [u8; P],
    penalised: u32,
}

impl<const P: usize> Bitmap<P> {
    /// A selector with no path penalised, seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        const { assert!(P.is_power_of_two() && P <= 1 << 16, "Bitmap paths: a power of two up to 65 536") };
        let mut rng = Rng::new(seed);
        let round = Round::new((P - 1) as u16, &mut rng);
        Bitmap { round, rng, penalty: [0; P], penalised: 0 }
    }

    /// The penalty of path index `path` (the EV's low bits).
    pub fn penalty(&self, path: u16) -> u8 {
        self.penalty.get(usize::from(path & self.round.mask)).copied().unwrap_or(0)
    }

    /// How many paths carry a penalty.
    pub const fn penalised(&self) -> u32 {
        self.penalised
    }
}

impl<const P: usize> EntropySource for Bitmap<P> {
    fn next_entropy(&mut self, _now: Instant) -> u16 {
        let mut path = self.round.path();
        let mut steps = 0;
        while let Some(p) = self.penalty.get_mut(usize::from(path)).filter(|p| **p > 0) {
            if steps == 0 {
                *p -= 1;
                if *p == 0 {
                    self.penalised = self.penalised.saturating_sub(1);
                }
            }
            steps += 1;
            if steps > P {
                break;
            }
            self.round.advance(&mut self.rng);
            path = self.round.path();
        }
        self.round.advance(&mut self.rng);
        self.round.ev(path)
    }

    fn on_feedback(&mut self, _now: Instant, ev: Option<u16>, feedback: PathFeedback) {
        let add = match feedback {
            PathFeedback::Good => return,
            PathFeedback::Ecn => 1,
            PathFeedback::Nack => 4,
            PathFeedback::Timeout => MAX_PATH_PENALTY,
        };
        let Some(ev) = ev else { return };
        let path = ev & self.round.mask;
        if let Some(p) = self.penalty.get_mut(usize::from(path)) {
            if *p == 0 {
                self.penalised += 1;
            }
            *p = p.saturating_add(add).min(MAX_PATH_PENALTY);
        }
    }
}

/// Good EVs a [`Reps`] remembers (htsim `repsBufferSize`).
pub const REPS_BUFFER: usize = 8;

/// How long REPS stays frozen after a timeout: the first feedback after 10 ms ends it (htsim
/// `exit_freeze_after`).
pub const REPS_FREEZE: Duration = Duration::from_millis(10);

/// Random EVs REPS sends after a freeze, before any recycled one (htsim `explore_counter`).
pub const REPS_EXPLORE: u8 = 16;

/// Recycled entropy packet spraying (htsim `UecMpReps` with `CircularBufferREPS`).
///
/// * A good EV (unmarked ACK, or a NACK of a last-hop trim) goes into a ring of the latest
///   [`REPS_BUFFER`], overwriting the oldest, *fresh* (usable once).
/// * The next packet takes the earliest fresh EV; with none fresh, a random EV below the path
///   count.
/// * A timeout, unless frozen or exploring, **freezes** REPS: it then reuses the remembered EVs
///   round robin, fresh or not (random only if none is remembered), still recording good ones.
///   The first feedback more than [`REPS_FREEZE`] after the freeze ends it: the ring is cleared
///   and the next [`REPS_EXPLORE`] packets go on random EVs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reps {
    paths: u16,
    rng: Rng,
    ring: [u16; REPS_BUFFER],
    /// Where the next good EV goes.
    head: u8,
    /// EVs remembered (at most [`REPS_BUFFER`]).
    count: u8,
    /// Fresh EVs: the `fresh` newest ones.
    fresh: u8,
    /// Frozen until the first feedback after this.
    frozen_until: Option<Instant>,
    /// Next slot reused while frozen.
    frozen_next: u8,
    explore: u8,
}

impl Reps {
    /// REPS over `paths` (at least 1), seeded by `seed`.
    pub fn new(paths: u16, seed: u64) -> Self {
        Reps {
            paths: paths.max(1),
            rng: Rng::new(seed),
            ring: [0; REPS_BUFFER],
            head: 0,
            count: 0,
            fresh: 0,
            frozen_until: None,
            frozen_next: 0,
            explore: 0,
        }
    }

    /// Frozen by a timeout.
    pub const fn frozen(&self) -> bool {
        self.frozen_until.is_some()
    }

    /// Fresh EVs waiting to be reused.
    pub const fn fresh(&self) -> usize {
        self.fresh as usize
    }

    fn random(&mut self) -> u16 {
        self.rng.next() % self.paths
    }

    fn slot(&self, back: u8) -> usize {
        // The slot `back` places before `head`.
        (usize::from(self.head) + REPS_BUFFER - usize::from(back) % REPS_BUFFER) % REPS_BUFFER
    }
}

impl EntropySource for Reps {
    fn next_entropy(&mut self, _now: Instant) -> u16 {
        if self.explore > 0 {
            self.explore -= 1;
            return self.random();
        }
        if self.frozen_until.is_some() {
            if self.count == 0 {
                return self.random();
            }
            let at = usize::from(self.frozen_next);
            self.frozen_next = (self.frozen_next + 1) % self.count;
            // Freshness is not kept while frozen: the ring is cleared when the freeze ends.
            return self.ring.get(at).copied().unwrap_or(0);
        }
        if self.fresh == 0 {
            return self.random();
        }
        let at = self.slot(self.fresh);
        self.fresh -= 1;
        self.ring.get(at).copied().unwrap_or(0)
    }

    fn on_feedback(&mut self, now: Instant, ev: Option<u16>, feedback: PathFeedback) {
        if feedback == PathFeedback::Timeout && self.frozen_until.is_none() && self.explore == 0 {
            self.frozen_until = Some(now.saturating_add(REPS_FREEZE));
            self.frozen_next = 0;
        }
        if self.frozen_until.is_some_and(|until| now > until) {
            self.frozen_until = None;
            self.ring = [0; REPS_BUFFER];
            self.head = 0;
            self.count = 0;
            self.fresh = 0;
            self.frozen_next = 0;
            self.explore = REPS_EXPLORE;
        }
        if let (PathFeedback::Good, Some(ev)) = (feedback, ev) {
            if let Some(slot) = self.ring.get_mut(usize::from(self.head)) {
                *slot = ev;
            }
            self.head = (self.head + 1) % REPS_BUFFER as u8;
            self.count = (self.count + 1).min(REPS_BUFFER as u8);
            self.fresh = (self.fresh + 1).min(REPS_BUFFER as u8);
        }
    }
}

#[cfg(test)]
mod tests;
