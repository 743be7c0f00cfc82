//! The TL packer (UALink 1.0 §5.1–5.8): UPLI requests, responses and their data beats in, TL
//! flits out, following the sequencing rules of [`super::sequence`].
//!
//! Each call to [`Packer::pack`] makes one TL flit:
//!
//! * Owed data half-flits go first (the lower half while two or more are owed).
//! * At a control slot the packer fills a control half-flit: responses first, room taken from
//!   sector 7 down for any that fits (requests must never block responses, §10; §5.5 lets
//!   responses drain out of order). *Project-defined*: the responses of one size are then laid
//!   out in queue order, lowest sector first, so a receiver reading up the half-flit meets the
//!   parts of a read answered beat by beat in order, the one marked Last last. Then requests in
//!   order from sector 0 up (a
//!   request that does not fit, or lacks credits, stops the requests behind it: strict order),
//!   then flow-control fields returning owed credits in the free sectors. Each item needs its
//!   command credit and its data credits, of one kind (VC first, then pool), and room under the
//!   §5.7 rate limits.
//! * The upper half is the swapped final data half-flit, the AuthTags, the first data half-flit,
//!   or a mandatory NOP.
//!
//! Data stays with the caller until it is sent: the packer asks a [`BeatSource`] for each beat by
//! the id given at [`Packer::push_request`] / [`Packer::push_response`]. A beat marked in error is
//! sent as two Poisoned Data messages (§5.3). *Project-defined*: a beat the source no longer has
//! is sent poisoned too, and counted in [`PackStats::missing_beats`].
//!
//! **Link down** ([`Packer::link_down`]). When the data link leaves DL Up, the TL enters Drop
//! Mode (§3.1.3, §3.1.4.3): traffic in both directions is dropped, on an accelerator's TL for
//! every port of the station, on a switch's for the affected port only. An accelerator's TL
//! sends its UPLI Originator an ISOLATE write response; the Originator, in Isolation Mode, ends
//! every outstanding request with a dummy Completion Timeout (CMPTO) response, and its partner's
//! requests end when the partner's watchdog timer expires. `link_down` is the flush at that
//! moment: what the packer still held is handed back item by item ([`Dropped`]), so none is lost
//! silently. Drop Mode itself lasts until management software recovers the link; until then the
//! embedder keeps dropping (pushes nothing, packs nothing).
//!
//! *Project-defined*: what the packer is after the flush, for the restart. It holds no credits
//! (the partner advertises its buffers again: [`Owed::release`], then the Initial Credit Release
//! Complete message, as after reset) and its Tx address cache is empty: requests carrying CLOAD
//! may have been lost with the link, so no entry is trusted (Tx entries may be invalidated at any
//! time, §5.6.2). The sequencing and rate limits start over.

use super::compress::TxCompressor;
use super::credit::{Class, Owed, TxCredits};
use super::field::ControlField;
use super::flit::{Message, MessageType, TlFlit, emit_auth_tags, put_beat_byte_enables};
use super::half::{HALF_FLIT_LEN, SECTORS, put_field, put_two_sectors};
use super::response::Response;
use super::sequence::{DataPlan, MAX_AUTH_ITEMS, RateLimit, Tenure};
use crate::Error;
use crate::upli::{BEAT_LEN, Request};
use linklayer::ZeroOption;
use linklayer::bytes::copy_prefix;

/// One data beat, lent by the caller.
#[derive(Clone, Copy, Debug)]
pub struct Beat<'a> {
    /// The 64 bytes, byte at address X in lane X mod 64.
    pub data: &'a [u8; BEAT_LEN],
    /// Byte enables (requests only; one bit per lane). Sent as given: lanes outside the
    /// request's ReqAddr/ReqLen must be 0 (§2.8, the Originator's rule, which
    /// [`UpliPort`](crate::port::UpliPort) keeps).
    pub byte_en: u64,
    /// The beat is poisoned (OrigDataError / RdRspDataError).
    pub error: bool,
}

/// Where the packer finds data beats.
///
/// **Ownership.** The packer reads an item's beats during the [`Packer::pack`] calls that send
/// them, which may come many calls after the item was pushed (credits, rate limits and other
/// items' data go first). Keep an item's beats while [`Packer::holds_data`] says so; once it is
/// false the packer will not ask again, and the beats may be released or reused. A beat that is
/// gone when asked for (`None`) is sent poisoned and counted in [`PackStats::missing_beats`].
pub trait BeatSource {
    /// Beat `beat` of the item pushed with `id`, or `None` if it is gone.
    fn beat(&self, id: u32, beat: u8) -> Option<Beat<'_>>;
}

/// An item a link down took from a [`Packer`] before it was all sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dropped {
    /// A request still queued (never sent), by the id it was pushed with.
    Request(u32),
    /// A response still queued (never sent).
    Response(u32),
    /// A request or response whose control field went out but not all of its data.
    Unfinished(u32),
}

/// Packer options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PackerConfig {
    /// Authentication (AuthTags half-flits; at most four requests and responses per control
    /// half-flit). Both ends must agree.
    pub auth: bool,
    /// Send responses with status OKAY in their compressed forms.
    pub compress_responses: bool,
}

/// What the packer has sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PackStats {
    /// TL flits made.
    pub flits: u64,
    /// Data half-flits carrying data (not byte enables, not poisoned).
    pub data_halves: u64,
    /// Requests sent.
    pub requests: u64,
    /// Responses sent.
    pub responses: u64,
    /// Beats the source no longer had (sent poisoned).
    pub missing_beats: u64,
}

impl PackStats {
    /// Data bytes over all bytes sent (the §5.4 efficiency).
    pub fn efficiency(&self) -> f64 {
        if self.flits == 0 { 0.0 } else { self.data_halves as f64 * 32.0 / (self.flits as f64 * 64.0) }
    }
}

/// Guards the one thing direct writing relies on: the field takes the `n` sectors its slot was
/// found for (a mismatch would be a bug in this crate, refused rather than written over a
/// neighbour).
fn same_size(f: &ControlField, n: u8) -> Result<(), Error> {
    if f.sectors() == n {
        Ok(())
    } else {
        Err(Error::BadValue { field: "control field size (packer slot)", value: u32::from(f.sectors()) })
    }
}

/// Lowest legal start ≥ `from` for a field of `n` sectors in the free sectors of `used`.
fn slot_up(used: u8, n: u8, from: u8) -> Option<u8> {
    let mut low = from.div_ceil(n) * n;
    while low + n <= SECTORS {
        if used & (((1u16 << n) - 1) << low) as u8 == 0 {
            return Some(low);
        }
        low += n;
    }
    None
}

/// Highest legal start for a field of `n` sectors in the free sectors of `used`.
fn slot_down(used: u8, n: u8) -> Option<u8> {
    (0..=(SECTORS - n) / n).rev().map(|k| k * n).find(|low| used & (((1u16 << n) - 1) << low) as u8 == 0)
}

/// Whether any entry of `q` satisfies `f`, over the ring's two slices (a slice walk is cheaper
/// on a small core than the deque's own iterator).
fn any<T, const Q: usize>(q: &heapless::Deque<T, Q>, mut f: impl FnMut(&T) -> bool) -> bool {
    let (front, back) = q.as_slices();
    front.iter().any(&mut f) || back.iter().any(f)
}

/// Removes entry `i` of `q`, keeping the others in order: the ones in front of it each move one
/// place back, so taking the front (the common case) moves nothing.
fn remove_in_order<T, const Q: usize>(q: &mut heapless::Deque<T, Q>, i: usize) {
    if i >= q.len() {
        return;
    }
    // Entry `i` to the front: the entries up to it rotate one place, across the ring's two
    // slices if they span both. (Swaps, not `Deque::swap` or `rotate_right`, which assert and
    // so link a panic.)
    let (front, back) = q.as_mut_slices();
    if let Some(run) = front.get_mut(..=i) {
        rotate_right_one(run);
    } else if let Some(run) = back.get_mut(..=i - front.len()) {
        rotate_right_one(run);
        if let (Some(x), Some(y)) = (front.last_mut(), run.first_mut()) {
            core::mem::swap(x, y);
        }
        rotate_right_one(front);
    }
    q.pop_front();
}

/// Moves the last entry of `run` to its front, the others one place back.
fn rotate_right_one<T>(run: &mut [T]) {
    if let Some((last, rest)) = run.split_last_mut() {
        // Each entry in turn trades places with the one held in the last slot.
        for x in rest {
            core::mem::swap(x, last);
        }
    }
}

/// The TL packer for one link direction: `ROWS` × `WAYS` Tx address cache, `Q` requests and `Q`
/// responses queued.
///
/// Size on a 64-bit host: the default `Packer` (16 × 4 cache, 64 queued each way) 6 048 B;
/// `Packer<16, 4, 32>` 3 488 B; a 64-row cache adds 1 584 B.
#[derive(Clone, Debug)]
pub struct Packer<const ROWS: usize = 16, const WAYS: usize = 4, const Q: usize = 64> {
    config: PackerConfig,
    compressor: TxCompressor<ROWS, WAYS>,
    /// Credits granted by the peer.
    pub credits: TxCredits,
    /// Credits to return to the peer.
    pub owed: Owed,
    requests: heapless::Deque<(u32, Request), Q>,
    /// In queue order; taken mostly from the front, so a deque (no shifting).
    responses: heapless::Deque<(u32, Response), Q>,
    plan: DataPlan,
    rate: RateLimit,
    message: ZeroOption<Message>,
    /// Counters.
    pub stats: PackStats,
}

impl<const ROWS: usize, const WAYS: usize, const Q: usize> Packer<ROWS, WAYS, Q> {
    /// A packer with no credits; `compressor` decides request compression.
    pub const fn new(config: PackerConfig, compressor: TxCompressor<ROWS, WAYS>) -> Self {
        Packer {
            config,
            compressor,
            credits: TxCredits { held: super::credit::Ledger::EMPTY },
            owed: Owed { owed: super::credit::Ledger::EMPTY },
            requests: heapless::Deque::new(),
            responses: heapless::Deque::new(),
            plan: DataPlan::new(),
            rate: RateLimit::START,
            message: ZeroOption::NONE,
            stats: PackStats { flits: 0, data_halves: 0, requests: 0, responses: 0, missing_beats: 0 },
        }
    }

    /// [`Packer::new`] with a configuration of zeros, the compressor off and nothing allowed
    /// out: every byte zero, for an engine's empty value (its `init` calls [`Packer::init`]).
    pub(crate) const fn unconfigured() -> Self {
        let off = PackerConfig { auth: false, compress_responses: false };
        let mut p = Self::new(off, TxCompressor::new(super::compress::Indexing::ByDst, false));
        p.rate = RateLimit::STOPPED;
        p
    }

    /// Makes this packer what [`Packer::new`]`(config, compressor)` returns, in place (its
    /// queues are not built again on the stack).
    pub fn init(&mut self, config: PackerConfig, compressor: TxCompressor<ROWS, WAYS>) {
        self.config = config;
        self.compressor = compressor;
        self.credits = TxCredits { held: super::credit::Ledger::EMPTY };
        self.owed = Owed { owed: super::credit::Ledger::EMPTY };
        self.requests.clear();
        self.responses.clear();
        self.plan = DataPlan::new();
        self.rate = RateLimit::START;
        self.message.clear();
        self.stats = PackStats { flits: 0, data_halves: 0, requests: 0, responses: 0, missing_beats: 0 };
    }

    /// Queues a request; its data beats (if any) are read from the [`BeatSource`] by `id`. A
    /// request that breaks §2.7, or sets a bit the specification leaves open
    /// ([`Request::check_reserved`]), is refused.
    pub fn push_request(&mut self, id: u32, r: Request) -> Result<(), Error> {
        r.check()?;
        r.check_reserved()?;
        self.requests.push_back((id, r)).map_err(|_| Error::Full { queue: "TL requests" })
    }

    /// Queues a response; a read response's data beats are read by `id`.
    pub fn push_response(&mut self, id: u32, r: Response) -> Result<(), Error> {
        r.check()?;
        self.responses.push_back((id, r)).map_err(|_| Error::Full { queue: "TL responses" })
    }

    /// Drops the requests queued and not yet begun (their control fields not sent), for an
    /// Originator in Isolation Mode, which issues nothing more (§3.1.3). A request whose data is
    /// still going out finishes. No credit is owed for them: credits are taken when a request is
    /// packed. Returns how many were dropped.
    pub fn cancel_queued_requests(&mut self) -> usize {
        let n = self.requests.len();
        self.requests.clear();
        n
    }

    /// Queues a TL message, sent in the next control slot once every owed credit has gone out
    /// (so Initial Credit Release Complete follows the credits it announces). Poisoned Data is the
    /// packer's own and is refused.
    pub fn send_message(&mut self, m: Message) -> Result<(), Error> {
        if m.ty == MessageType::PoisonedData || self.message.is_some() {
            return Err(Error::Full { queue: "TL message" });
        }
        self.message = ZeroOption::Some(m);
        Ok(())
    }

    /// The link went down (module doc): the flush on entering Drop Mode. Drops every queued
    /// request and response, the data still owed, a pending message, every credit held and owed,
    /// and the Tx address cache, and restarts the sequencing and rate limits. Each item dropped is
    /// handed to `dropped` once: unfinished ones first, then queued requests and responses in
    /// order. Statistics are kept.
    pub fn link_down(&mut self, mut dropped: impl FnMut(Dropped)) {
        self.plan.drain(|id| dropped(Dropped::Unfinished(id)));
        while let Some((id, _)) = self.requests.pop_front() {
            dropped(Dropped::Request(id));
        }
        for (id, _) in self.responses.iter() {
            dropped(Dropped::Response(*id));
        }
        self.responses.clear();
        self.credits = TxCredits { held: super::credit::Ledger::EMPTY };
        self.owed = Owed { owed: super::credit::Ledger::EMPTY };
        self.compressor.cache.clear();
        self.rate = RateLimit::START;
        self.message.clear();
    }

    /// Whether the packer may still read item `id`'s data beats from its [`BeatSource`]: the item
    /// is queued, or some of its data half-flits are not packed yet. Once false, its beats may be
    /// released. (Requests and responses pushed to one packer should have distinct ids.)
    pub fn holds_data(&self, id: u32) -> bool {
        any(&self.requests, |(i, _)| *i == id) || any(&self.responses, |(i, _)| *i == id) || self.plan.owes(id)
    }

    /// Requests and responses still queued.
    pub fn queued(&self) -> (usize, usize) {
        (self.requests.len(), self.responses.len())
    }

    /// Whether a flit would carry nothing: nothing queued, owed or pending.
    pub fn is_idle(&self) -> bool {
        self.requests.is_empty()
            && self.responses.is_empty()
            && self.plan.remaining == 0
            && self.owed.is_empty()
            && self.message.is_none()
    }

    /// Whether the next flit would carry something now: data or a message due, credits owed, or
    /// a queued response or the first queued request for which the credits are held. When this is
    /// false but the packer is not idle, it is waiting for credits, and a flit would be all NOPs.
    pub fn has_work(&self) -> bool {
        self.plan.remaining > 0
            || self.message.is_some()
            || !self.owed.is_empty()
            || any(&self.responses, |(_, r)| {
                self.credits.can_take(Class::RspCmd, Class::RspData, r.vc(), u16::from(r.data_beats()))
            })
            || self.requests.front().is_some_and(|(_, r)| {
                self.credits.can_take(Class::ReqCmd, Class::ReqData, r.vc, u16::from(r.data_beats()))
            })
    }

    /// Makes the next TL flit, writing every byte of `out` and both message bits. An error here
    /// is a bug in this crate (fields are checked when queued).
    pub fn pack(&mut self, src: &impl BeatSource, out: &mut TlFlit) -> Result<(), Error> {
        let swap = self.plan.remaining == 1;
        let mut counts = (0u8, 0u8);
        let mut tags: heapless::Vec<u64, 8> = heapless::Vec::new();
        let mut control = false;
        if self.plan.lower_is_data() {
            out.m0 = self.data_half(src, &mut out.lower);
        } else if let Some(m) = self.message.into_option().filter(|_| self.owed.is_empty()) {
            self.message.clear();
            m.emit(&mut out.lower);
            out.m0 = true;
        } else {
            out.m0 = false;
            counts = self.control_half(swap, &mut tags, &mut out.lower)?;
            control = true;
        }
        let items = usize::from(counts.0) + usize::from(counts.1);
        out.m1 = if swap {
            self.data_half(src, &mut out.upper)
        } else if control && self.config.auth && items > 0 {
            emit_auth_tags(&tags, &mut out.upper);
            false
        } else if self.plan.remaining > 0 {
            self.data_half(src, &mut out.upper)
        } else {
            out.upper = [0; HALF_FLIT_LEN];
            false
        };
        self.rate.advance(counts.0, counts.1);
        self.stats.flits += 1;
        Ok(())
    }

    /// Fills a control half-flit; returns (requests, responses) placed and their tags in order.
    fn control_half(
        &mut self,
        swap: bool,
        tags: &mut heapless::Vec<u64, 8>,
        out: &mut [u8; HALF_FLIT_LEN],
    ) -> Result<(u8, u8), Error> {
        let auth = self.config.auth;
        let max_items = if auth && swap {
            0
        } else if auth {
            MAX_AUTH_ITEMS
        } else {
            usize::from(SECTORS)
        };
        let mut used = 0u8;
        // Fields are written straight into `out`: the footprints below are legal and disjoint by
        // construction (`slot_up`/`slot_down` and the `used` mask), and `Owed::next_field` keeps
        // the one-field-per-credit-class rule, so nothing is left for `ControlHalfFlit::check`.
        *out = [0; HALF_FLIT_LEN];
        // The items placed, by the sector they start at (distinct: the footprints are disjoint),
        // so they come out in sector order without a sort.
        let mut placed: [Option<(Tenure, u64)>; SECTORS as usize] = [None; SECTORS as usize];
        let (mut n_req, mut n_rsp) = (0u8, 0u8);

        // Responses: room is taken from the top down, any response that fits (§5.5 lets them
        // drain out of order); then the ones of a size are laid out in the order they were
        // queued, lowest sector first, so that a receiver reading up the half-flit meets the
        // parts of one read in order (its last beat, RdRspLast, last).
        let mut chosen: heapless::Vec<(u32, Response, u8, u8), { SECTORS as usize }> = heapless::Vec::new();
        let mut i = 0;
        while i < self.responses.len() && n_rsp < self.rate.responses && usize::from(n_req + n_rsp) < max_items {
            let Some(&(id, mut r)) = self.responses.get(i) else { break };
            let n = r.sectors(self.config.compress_responses);
            let beats = r.data_beats();
            let Some(low) = slot_down(used, n) else {
                i += 1;
                continue;
            };
            let Some(pool) = self.credits.take(Class::RspCmd, Class::RspData, r.vc(), u16::from(beats)) else {
                i += 1;
                continue;
            };
            r.set_pool(pool);
            used |= (((1u16 << n) - 1) << low) as u8;
            // At most one response a sector, so there is room.
            let _ = chosen.push((id, r, n, low));
            remove_in_order(&mut self.responses, i);
            n_rsp += 1;
        }
        // An insertion sort of each size's sectors into queue order (at most eight responses).
        for b in 1..chosen.len() {
            let Some((before, rest)) = chosen.split_at_mut_checked(b) else { break };
            let Some(y) = rest.first_mut() else { break };
            for x in before.iter_mut().filter(|x| x.2 == y.2) {
                if x.3 > y.3 {
                    core::mem::swap(&mut x.3, &mut y.3);
                }
            }
        }
        for &(id, ref r, n, low) in &chosen {
            // Checked when queued; taking the credit changed only its pool bit.
            let f = r.field(self.config.compress_responses);
            same_size(&f, n)?;
            put_field(out, low, &f)?;
            if let Some(p) = placed.get_mut(usize::from(low)) {
                *p = Some((Tenure::new(id, r.data_beats(), false, 0), r.auth_tag()));
            }
        }

        // Requests, in order, from the bottom up.
        let mut cursor = 0u8;
        while n_req < self.rate.requests && usize::from(n_req + n_rsp) < max_items {
            let Some(&(id, mut r)) = self.requests.front() else { break };
            let found = self.compressor.lookup(&r);
            let n = found.sectors();
            let Some(low) = slot_up(used, n, cursor) else { break };
            let beats = r.data_beats();
            let Some(pool) = self.credits.take(Class::ReqCmd, Class::ReqData, r.vc, u16::from(beats)) else { break };
            r.pool = pool;
            if let Some(w) = found.compressed_word(&r) {
                put_two_sectors(out, low, w);
            } else {
                let f = self.compressor.encode_found(&r, found)?;
                same_size(&f, n)?;
                put_field(out, low, &f)?;
            }
            used |= (((1u16 << n) - 1) << low) as u8;
            cursor = low + n;
            if let Some(p) = placed.get_mut(usize::from(low)) {
                *p = Some((Tenure::new(id, beats, r.cmd.has_byte_enables(), r.addr), r.auth_tag));
            }
            self.requests.pop_front();
            n_req += 1;
        }

        // Credit returns in the free sectors.
        let mut targets = [0u8; 4];
        while !self.owed.is_empty() {
            let Some(low) = slot_up(used, 1, 0) else { break };
            let Some(fc) = self.owed.next_field(&mut targets) else { break };
            used |= 1 << low;
            put_field(out, low, &ControlField::FlowControl(fc))?;
        }

        for (t, tag) in placed.iter().flatten() {
            if !self.plan.push(*t) {
                return Err(Error::Full { queue: "TL data plan" });
            }
            let _ = tags.push(*tag);
        }
        self.stats.requests += u64::from(n_req);
        self.stats.responses += u64::from(n_rsp);
        Ok((n_req, n_rsp))
    }

    /// Writes the next owed data half-flit; returns its message bit.
    fn data_half(&mut self, src: &impl BeatSource, out: &mut [u8; HALF_FLIT_LEN]) -> bool {
        let Some(t) = self.plan.front_mut() else {
            *out = [0; HALF_FLIT_LEN];
            return false;
        };
        let t = *t;
        self.plan.advance();
        if t.at_byte_enables() {
            *out = [0; HALF_FLIT_LEN];
            for b in 0..t.beats {
                if let Some(beat) = src.beat(t.id, b) {
                    put_beat_byte_enables(out, t.addr, b, beat.byte_en);
                }
            }
            return false;
        }
        let second = t.next % 2 == 1;
        match src.beat(t.id, t.next / 2) {
            Some(beat) if !beat.error => {
                let (lo, hi) = beat.data.split_at(HALF_FLIT_LEN);
                copy_prefix(out, if second { hi } else { lo });
                self.stats.data_halves += 1;
                false
            }
            missing => {
                if missing.is_none() && !second {
                    self.stats.missing_beats += 1;
                }
                Message::new(MessageType::PoisonedData).emit(out);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Removing any entry keeps the rest in order, wherever the ring's two slices meet.
    #[test]
    fn remove_in_order_keeps_the_order_across_the_wrap() {
        for start in 0..5 {
            for len in 1..=5 {
                for i in 0..=len {
                    let mut q: heapless::Deque<u8, 5> = heapless::Deque::new();
                    // Push and pop `start` entries so the ring begins at `start`.
                    for _ in 0..start {
                        q.push_back(0).unwrap();
                        q.pop_front();
                    }
                    for v in 0..len as u8 {
                        q.push_back(v).unwrap();
                    }
                    remove_in_order(&mut q, i);
                    let want: std::vec::Vec<u8> = (0..len as u8).filter(|&v| usize::from(v) != i).collect();
                    assert_eq!(q.iter().copied().collect::<std::vec::Vec<_>>(), want, "start {start} len {len} i {i}");
                }
            }
        }
    }

    #[test]
    fn slots() {
        assert_eq!(slot_up(0, 4, 0), Some(0));
        assert_eq!(slot_up(0b0000_0001, 4, 0), Some(4));
        assert_eq!(slot_up(0b0000_0001, 2, 1), Some(2));
        assert_eq!(slot_up(0xFF, 1, 0), None);
        assert_eq!(slot_down(0, 1), Some(7));
        assert_eq!(slot_down(0b1100_0000, 2), Some(4));
        assert_eq!(slot_down(0b0001_0000, 4), Some(0));
        assert_eq!(slot_down(0b0001_0001, 4), None);
    }

    /// The size guard passes a field into a slot of its own size and refuses any other, naming
    /// the field's real size (the packer cannot reach the refusal; this is its only check).
    #[test]
    fn size_guard_refuses_a_field_of_another_size() {
        use crate::tl::field::FlowControl;
        let one = ControlField::FlowControl(FlowControl::NOP);
        assert_eq!(one.sectors(), 1);
        assert_eq!(same_size(&one, 1), Ok(()));
        for n in [2, 4] {
            assert_eq!(
                same_size(&one, n),
                Err(Error::BadValue { field: "control field size (packer slot)", value: 1 })
            );
        }
    }
}
