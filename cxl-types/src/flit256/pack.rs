//! Packing messages into 256B flits and unpacking them (CXL 3.x §4.3.4), standard or
//! latency-optimized ([`Layout`]), with hierarchy-based (HBR, [`Width::Flit256`]) or port-based
//! routing ([`Width::Pbr`]).
//!
//! * Every transfer is 64 bytes: four 16-byte data slots follow the data header in the next
//!   G-slots, then a trailer slot when the header says so (TRP in M2S RwD and S2M DRS, BEP in
//!   a D2H data header); what does not fit rolls over into slot 1 onwards of the next flit.
//!   Data slots carry no SlotFmt and are G-slots only (never the H- or HS-slot). Data of
//!   several headers goes in header order.
//! * Slot groups A (slots 0–3), B (4–7), C (8–11) and D (12–14; in the latency-optimized flit
//!   slot 7 belongs to B and C): each rolling pair AB, BC, CD and DA (D with the next flit's A)
//!   carries at most D2H Req 4, D2H Rsp 4, D2H DH 4,
//!   S2M BISnp 2, S2M NDR 6, S2M DRS 3, H2D Req 2, H2D Rsp 6, H2D DH 4, M2S Req 4, M2S RwD 2,
//!   M2S BIRsp 3.
//! * The first message of a data-header slot format (SlotFmt 12–15) is valid.
//! * CRD returns credits. A flit goes only with a message, data or credits: with nothing to
//!   send the packer returns `false` and the physical layer sends IDLE or NOP; it never needs
//!   an Empty flit, which returns no credits (§4.3.8.1).
//!
//! The packer fills bytes 2–241 and the flit header's Flit Type (CXL.cachemem); the rest of
//! the header, the CRC and the FEC are the physical layer's.
//!
//! *Project-defined:* the trailer slot is kept whole (its byte-enable and EMD layout is in the
//! figures only); a data header goes into the H-slot only while at most 16 data slots are
//! owed, and into any slot only while at most 32 are (the specification bounds the H-slot
//! case; the second bound keeps the packer's store fixed); an empty slot is sent as SlotFmt 0
//! with every Valid bit clear.

use super::crd::Crd;
use super::header::{FlitHeader, FlitType, ReplayCommand};
use super::slot::{self, Contents, SlotKind};
use super::{CRD, FLIT_LEN, Layout, SLOTS};
use crate::flit68::pack::Counts;
pub use crate::flit68::pack::{Queues, Source};
pub use crate::flit68::slot::Direction;
use crate::msg::{Kind, Msg, Width};
use heapless::Deque;

/// Bytes of a data slot.
pub const CHUNK: usize = 16;

/// A data header's data in a 256B flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Data {
    /// The 64 bytes.
    pub bytes: [u8; 64],
    /// The trailer, present exactly when the header's TRP (or BEP) is set: a whole slot after
    /// the data for M2S RwD and D2H data; for an S2M DRS its 32-bit EMD in bytes 0–3 (bytes
    /// 4–15 zero), because the DRS headers of one slot share one trailer slot (Table 4-17).
    pub trailer: Option<[u8; CHUNK]>,
}

impl Default for Data {
    fn default() -> Self {
        Data { bytes: [0; 64], trailer: None }
    }
}

impl Data {
    /// Slots the data takes.
    pub const fn slots(&self) -> usize {
        4 + self.trailer.is_some() as usize
    }

    fn chunk(&self, i: usize) -> [u8; CHUNK] {
        let mut c = [0u8; CHUNK];
        match self.bytes.get(i * CHUNK..(i + 1) * CHUNK) {
            Some(src) => c.copy_from_slice(src),
            None => c = self.trailer.unwrap_or_default(),
        }
        c
    }

    fn set_chunk(&mut self, i: usize, c: &[u8; CHUNK]) {
        match self.bytes.get_mut(i * CHUNK..(i + 1) * CHUNK) {
            Some(dst) => dst.copy_from_slice(c),
            None => self.trailer = Some(*c),
        }
    }
}

/// Whether a data header announces a trailer (TRP, or BEP for D2H data).
pub fn has_trailer(msg: &Msg) -> bool {
    match msg {
        Msg::M2sRwd(m) => m.trp,
        Msg::S2mDrs(m) => m.trp,
        Msg::D2hData(m) => m.bep,
        _ => false,
    }
}

/// The most messages of a kind in a rolling pair of 128-byte slot groups.
pub const fn max_per_pair(kind: Kind) -> usize {
    match kind {
        Kind::D2hReq | Kind::D2hRsp | Kind::D2hData | Kind::H2dData | Kind::M2sReq => 4,
        Kind::S2mNdr | Kind::H2dRsp => 6,
        Kind::S2mDrs | Kind::M2sBiRsp => 3,
        Kind::S2mBiSnp | Kind::H2dReq | Kind::M2sRwd => 2,
    }
}

/// Per-group message counts of a flit (A = slots 0–3, B = 4–7, C = 8–11, D = 12–14), with
/// the previous flit's group D. In the latency-optimized flit slot 7 lies in both B and C: its
/// messages are kept apart (`shared`) and counted in every pair touching B or C.
#[derive(Clone, Copy, Debug, Default)]
struct Groups {
    prev_d: Counts,
    now: [Counts; 4],
    shared: Counts,
    split7: bool,
}

impl Groups {
    const fn new(layout: Layout) -> Groups {
        Groups {
            prev_d: Counts::new(),
            now: [Counts::new(); 4],
            shared: Counts::new(),
            split7: matches!(layout, Layout::LatencyOptimized),
        }
    }

    /// The group slot `s` lies in (`None`: its messages are `shared`).
    fn group(&self, s: usize) -> Option<usize> {
        match s {
            7 if self.split7 => None,
            12.. => Some(3),
            _ => Some(s / 4),
        }
    }

    /// `kind` messages in the pair ending with group `g` (0: the previous D with A).
    fn pair(&self, g: usize, kind: Kind) -> usize {
        let count = |i: usize| self.now.get(i).map_or(0, |c| c.get(kind));
        let (before, here) = match g.checked_sub(1) {
            Some(p) => (count(p), count(g)),
            None => (self.prev_d.get(kind), count(0)),
        };
        let shared = if g >= 1 && self.split7 { self.shared.get(kind) } else { 0 };
        before + here + shared
    }

    /// Whether `extra` more `kind` messages in slot `s` keep every pair within limits.
    fn room(&self, s: usize, kind: Kind, extra: usize) -> bool {
        let pairs = match self.group(s) {
            Some(g) => g..g + 2,
            None => 1..4,
        };
        pairs.filter(|p| *p < 4).all(|p| self.pair(p, kind) + extra <= max_per_pair(kind))
    }

    fn add(&mut self, s: usize, kind: Kind) {
        match self.group(s) {
            Some(g) => {
                if let Some(c) = self.now.get_mut(g) {
                    c.add(kind);
                }
            }
            None => self.shared.add(kind),
        }
    }

    fn next_flit(&mut self) {
        self.prev_d = self.now.get(3).copied().unwrap_or_default();
        self.now = [Counts::new(); 4];
        self.shared = Counts::new();
    }
}

/// Why a flit could not be packed. A CRD that does not encode is refused before anything is
/// taken; a data header whose data is missing or wrong stays queued, but messages already
/// taken into the same flit are dropped with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PackError {
    /// A data header without data, or whose trailer disagrees with its TRP/BEP bit (or, for an
    /// S2M DRS, holds more than the 32-bit EMD).
    Data {
        /// The kind.
        kind: Kind,
    },
    /// The source said a message was waiting and then gave none, or one of another kind.
    Source {
        /// The kind asked for.
        kind: Kind,
    },
    /// The CRD value does not encode.
    Crd(super::crd::CrdError),
}

impl core::fmt::Display for PackError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PackError::Data { kind } => write!(f, "{kind:?} data missing or its trailer disagrees with the header"),
            PackError::Source { kind } => write!(f, "the source announced a {kind:?} message and gave none"),
            PackError::Crd(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for PackError {}

/// Data slots the packer can hold.
const PENDING: usize = 40;
/// Data slots owed after which no data header goes into any slot.
const MAX_OWED: usize = 32;
/// Data slots owed after which no data header goes into the H-slot.
const MAX_OWED_H: usize = 16;

/// A width and layout that do not make a 256B flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ConfigError {
    /// [`Width::Flit68`] is not a 256B width.
    NotA256BWidth,
    /// PBR flits use the standard layout only.
    PbrLatencyOptimized,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::NotA256BWidth => f.write_str("the 68B width is not a 256B flit"),
            ConfigError::PbrLatencyOptimized => f.write_str("PBR flits use the standard layout only"),
        }
    }
}

impl core::error::Error for ConfigError {}

const fn check(width: Width, layout: Layout) -> Result<(), ConfigError> {
    match (width, layout) {
        (Width::Flit68, _) => Err(ConfigError::NotA256BWidth),
        (Width::Pbr, Layout::LatencyOptimized) => Err(ConfigError::PbrLatencyOptimized),
        _ => Ok(()),
    }
}

/// Fills 256B flits from a [`Source`] of messages with [`Data`].
#[derive(Clone, Debug)]
pub struct Packer {
    width: Width,
    layout: Layout,
    direction: Direction,
    mdh: bool,
    pending: Deque<[u8; CHUNK], PENDING>,
    groups: Groups,
}

impl Packer {
    /// A packer for `direction` in `width` (256B or PBR) and `layout`.
    pub const fn new(width: Width, layout: Layout, direction: Direction) -> Result<Packer, ConfigError> {
        match check(width, layout) {
            Ok(()) => {
                Ok(Packer { width, layout, direction, mdh: true, pending: Deque::new(), groups: Groups::new(layout) })
            }
            Err(e) => Err(e),
        }
    }

    /// With `mdh` false (multiple data headers disabled, §4.3.4) at most one data header goes
    /// in a slot; enabled by default.
    pub const fn with_mdh(mut self, mdh: bool) -> Packer {
        self.mdh = mdh;
        self
    }

    /// Data slots waiting to be sent.
    pub fn pending_slots(&self) -> usize {
        self.pending.len()
    }

    /// Writes a flit carrying the link-layer control message `llctrl` in the H-slot, with
    /// `crd`; the slots after it are reserved (zero) and owed data waits for the next flit
    /// (Table 4-20).
    pub fn pack_llctrl(&mut self, llctrl: slot::Llctrl, crd: Crd, out: &mut [u8; FLIT_LEN]) -> Result<(), PackError> {
        let crd = crd.emit().map_err(PackError::Crd)?;
        self.groups.next_flit();
        out.fill(0);
        self.write_frame(out, crd);
        self.layout.write_slot(out, 0, llctrl.emit(SlotKind::H));
        Ok(())
    }

    /// The flit header's Flit Type and CRD.
    fn write_frame(&self, out: &mut [u8; FLIT_LEN], crd: [u8; 2]) {
        let header = FlitHeader {
            flit_type: FlitType::CacheMem,
            prior_payload: false,
            dllp_type: false,
            replay: ReplayCommand::ExplicitSequence,
            seq: 0,
        };
        if let Some(h) = out.get_mut(..2) {
            h.copy_from_slice(&header.emit());
        }
        if let Some(c) = out.get_mut(CRD..CRD + 2) {
            c.copy_from_slice(&crd);
        }
    }

    /// Packs the next flit into `out`: rolled-over data first (slot 1 on), then as many
    /// messages as the slot and rate rules allow, and `crd`. `false` (and `out` untouched)
    /// when there is nothing to send: no data, no message and no credit.
    pub fn pack<S: Source<Data>>(
        &mut self,
        src: &mut S,
        crd: Crd,
        out: &mut [u8; FLIT_LEN],
    ) -> Result<bool, PackError> {
        // Checked before anything leaves the source or the pending data.
        let crd_bytes = crd.emit().map_err(PackError::Crd)?;
        let was_pending = !self.pending.is_empty();
        let mut groups = self.groups;
        groups.next_flit();
        let mut slots = [0u128; SLOTS];
        let mut placed = 0;
        for (s, bits) in slots.iter_mut().enumerate() {
            if self.layout.slot_kind(s) == SlotKind::G {
                if let Some(c) = self.pending.pop_front() {
                    *bits = u128::from_le_bytes(c);
                    continue;
                }
            }
            placed += self.fill_slot(src, s, bits, &mut groups)?;
        }
        if placed == 0 && !was_pending && crd == Crd::default() {
            return Ok(false);
        }
        self.groups = groups;
        out.fill(0);
        self.write_frame(out, crd_bytes);
        for (s, bits) in slots.into_iter().enumerate() {
            self.layout.write_slot(out, s, bits);
        }
        Ok(true)
    }

    /// Chooses slot `s`'s format, fills it and queues the data of its data headers; the
    /// messages placed.
    fn fill_slot<S: Source<Data>>(
        &mut self,
        src: &mut S,
        s: usize,
        bits: &mut u128,
        groups: &mut Groups,
    ) -> Result<usize, PackError> {
        let kind = self.layout.slot_kind(s);
        // The format placing the most messages, then the most bits.
        let mut best: Option<(u8, &'static [Kind], (usize, u32))> = None;
        for code in 0..16u8 {
            let Some(Contents::Messages(kinds)) = slot::contents(self.width, kind, code) else { continue };
            let n = self.plan(src, s, kind, kinds, groups)?;
            let bits: u32 = kinds.iter().take(n).filter_map(|k| k.bits(self.width)).sum();
            if n > 0 && best.is_none_or(|(_, _, b)| (n, bits) > b) {
                best = Some((code, kinds, (n, bits)));
            }
        }
        let Some((code, kinds, (n, _))) = best else { return Ok(0) };
        let mut drs = [Data::default(); 3];
        let mut drs_n = 0;
        *bits = u128::from(code);
        for (i, (k, at)) in slot::positions(kinds, self.width).enumerate() {
            if i >= n {
                break;
            }
            let (msg, data) = src.pop(k).ok_or(PackError::Source { kind: k })?;
            if msg.kind() != k || slot::put(bits, kind, at, &msg, self.width).is_err() {
                return Err(PackError::Source { kind: k });
            }
            groups.add(s, k);
            if k.has_data() {
                let data = data.ok_or(PackError::Data { kind: k })?;
                if k == Kind::S2mDrs {
                    // Sent after the slot: the group shares one trailer slot.
                    if let Some(d) = drs.get_mut(drs_n) {
                        *d = data;
                    }
                    drs_n += 1;
                } else {
                    for c in 0..data.slots() {
                        // `plan` checked the room.
                        let _ = self.pending.push_back(data.chunk(c));
                    }
                }
            }
        }
        self.queue_drs(drs.get(..drs_n).unwrap_or(&[]));
        Ok(n)
    }

    /// Queues the data of the S2M DRS headers of one slot: the first one's four data slots,
    /// then one trailer slot with the EMD of each header whose TRP is set, packed in header
    /// order, then the others' data (§4.3.3.2, Table 4-17).
    fn queue_drs(&mut self, group: &[Data]) {
        for (i, d) in group.iter().enumerate() {
            for c in 0..4 {
                let _ = self.pending.push_back(d.chunk(c));
            }
            if i == 0 && group.iter().any(|d| d.trailer.is_some()) {
                let mut t = [0u8; CHUNK];
                for (dst, emd) in t.chunks_exact_mut(4).zip(group.iter().filter_map(|d| d.trailer)) {
                    dst.copy_from_slice(emd.get(..4).unwrap_or(&[0; 4]));
                }
                let _ = self.pending.push_back(t);
            }
        }
    }

    /// How many messages a slot of this format takes now: positions in order, each the next
    /// waiting message of its kind, stopping at the first that cannot go (the formats repeat
    /// one kind, or put a kind after one whose queue is empty).
    fn plan<S: Source<Data>>(
        &self,
        src: &S,
        s: usize,
        kind: SlotKind,
        kinds: &'static [Kind],
        groups: &Groups,
    ) -> Result<usize, PackError> {
        let mut local = Counts::default();
        let mut owed = self.pending.len();
        let mut n = 0;
        for (k, at) in slot::positions(kinds, self.width) {
            if k.downstream() != (self.direction == Direction::Downstream) {
                return Ok(0);
            }
            let Some((msg, data)) = src.peek(k, local.get(k)) else { break };
            if !groups.room(s, k, local.get(k) + 1) {
                break;
            }
            if slot::put(&mut 0, kind, at, msg, self.width).is_err() {
                break;
            }
            if k.has_data() {
                let fits = |d: &&Data| match (d.trailer, k) {
                    (Some(t), Kind::S2mDrs) => t.get(4..).is_some_and(|r| r.iter().all(|b| *b == 0)),
                    (t, _) => t.is_some() == has_trailer(msg),
                };
                let Some(data) = data.filter(|d| d.trailer.is_some() == has_trailer(msg)).filter(fits) else {
                    return Err(PackError::Data { kind: k });
                };
                let limit = if kind == SlotKind::G { MAX_OWED } else { MAX_OWED_H };
                if owed > limit || (!self.mdh && n > 0) {
                    break;
                }
                owed += data.slots();
            }
            local.add(k);
            n += 1;
        }
        Ok(n)
    }
}

/// What the unpacker hands over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A message without data.
    Msg(Msg),
    /// A data header with its data, once the data has arrived.
    Data(Msg, &'a Data),
    /// A link-layer control message.
    Llctrl(slot::Llctrl),
}

/// Why a flit is refused; nothing of it was delivered and the unpacker is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UnpackError {
    /// A reserved SlotFmt.
    ReservedFormat {
        /// The slot.
        slot: u8,
    },
    /// A message of the other direction.
    Direction {
        /// The slot.
        slot: u8,
    },
    /// A data-header format whose first message is not valid.
    FirstInvalid {
        /// The slot.
        slot: u8,
    },
    /// More messages of a kind in a pair of slot groups than allowed.
    RateLimit {
        /// The kind.
        kind: Kind,
    },
    /// More data owed than the unpacker holds (64 headers).
    Overflow,
    /// IDE or INIT.Param in the HS-slot (H-slot only).
    LlctrlPlacement {
        /// The slot.
        slot: u8,
    },
    /// More than one data header in a slot with multiple data headers disabled.
    Mdh {
        /// The slot.
        slot: u8,
    },
}

impl core::fmt::Display for UnpackError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UnpackError::ReservedFormat { slot } => write!(f, "slot {slot} uses a reserved SlotFmt"),
            UnpackError::Direction { slot } => write!(f, "slot {slot} holds a message of the other direction"),
            UnpackError::FirstInvalid { slot } => {
                write!(f, "slot {slot}: a data-header format's first message is not valid")
            }
            UnpackError::RateLimit { kind } => write!(f, "too many {kind:?} messages in two slot groups"),
            UnpackError::Overflow => f.write_str("more data owed than the unpacker holds"),
            UnpackError::LlctrlPlacement { slot } => write!(f, "slot {slot}: IDE and INIT.Param go in the H-slot only"),
            UnpackError::Mdh { slot } => write!(f, "slot {slot}: several data headers with MDH disabled"),
        }
    }
}

impl core::error::Error for UnpackError {}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    msg: Msg,
    data: Data,
    slots: u8,
    got: u8,
    /// The first S2M DRS of a slot: which headers of its group (bit j: the j-th) have TRP set,
    /// whose EMDs its trailer slot carries.
    group_trp: u8,
}

impl Waiting {
    fn needs(&self) -> usize {
        usize::from(self.slots.saturating_sub(self.got))
    }
}

const WAITING: usize = 64;

/// Reads 256B flits back into messages, checking every slot.
#[derive(Clone, Debug)]
pub struct Unpacker {
    width: Width,
    layout: Layout,
    direction: Direction,
    mdh: bool,
    waiting: Deque<Waiting, WAITING>,
    groups: Groups,
}

impl Unpacker {
    /// An unpacker for traffic in `direction`, `width` (256B or PBR) and `layout`.
    pub const fn new(width: Width, layout: Layout, direction: Direction) -> Result<Unpacker, ConfigError> {
        match check(width, layout) {
            Ok(()) => {
                Ok(Unpacker { width, layout, direction, mdh: true, waiting: Deque::new(), groups: Groups::new(layout) })
            }
            Err(e) => Err(e),
        }
    }

    /// With `mdh` false (multiple data headers disabled) a slot with more than one data header
    /// is refused; enabled by default.
    pub const fn with_mdh(mut self, mdh: bool) -> Unpacker {
        self.mdh = mdh;
        self
    }

    /// Data slots still expected.
    pub fn pending_slots(&self) -> usize {
        self.waiting.iter().map(Waiting::needs).sum()
    }

    /// Reads one flit (the physical layer has checked it), handing each message to `sink` in
    /// slot order, data headers once their data is complete; the flit's CRD as a receiver
    /// takes it ([`Crd::received`]: a reserved code returns nothing).
    pub fn unpack(&mut self, flit: &[u8; FLIT_LEN], mut sink: impl FnMut(Item<'_>)) -> Result<Crd, UnpackError> {
        let [.., c0, c1] = *flit.first_chunk::<{ CRD + 2 }>().unwrap_or(&[0; CRD + 2]);
        let crd = Crd::received([c0, c1]);
        let slots: [u128; SLOTS] = core::array::from_fn(|s| self.layout.read_slot(flit, s));
        let groups = self.validate(&slots)?;
        self.groups = groups;
        for (s, bits) in slots.iter().enumerate() {
            let kind = self.layout.slot_kind(s);
            if kind == SlotKind::G && self.pending_slots() > 0 {
                self.take(&bits.to_le_bytes(), &mut sink);
                continue;
            }
            match slot::contents(self.width, kind, (bits & 0xF) as u8) {
                Some(Contents::Messages(kinds)) => {
                    let first = self.waiting.len();
                    let (mut group_trp, mut members) = (0u8, 0u8);
                    for (k, at) in slot::positions(kinds, self.width) {
                        let Some(msg) = slot::get(*bits, kind, at, k, self.width) else { continue };
                        if k == Kind::S2mDrs {
                            group_trp |= u8::from(has_trailer(&msg)) << members;
                            members += 1;
                            // Capacity checked by `validate`; the group's trailer is added below.
                            let _ = self.waiting.push_back(Waiting {
                                msg,
                                data: Data::default(),
                                slots: 4,
                                got: 0,
                                group_trp: 0,
                            });
                        } else if k.has_data() {
                            let slots = 4 + u8::from(has_trailer(&msg));
                            let _ = self.waiting.push_back(Waiting {
                                msg,
                                data: Data::default(),
                                slots,
                                got: 0,
                                group_trp: 0,
                            });
                        } else {
                            sink(Item::Msg(msg));
                        }
                    }
                    if let (true, Some(w)) = (group_trp != 0, self.waiting.iter_mut().nth(first)) {
                        w.slots += 1;
                        w.group_trp = group_trp;
                    }
                }
                Some(Contents::Llctrl) => {
                    let c = slot::Llctrl::parse(*bits);
                    sink(Item::Llctrl(c));
                    if !c.is_ide_mac() {
                        break;
                    }
                }
                None => {}
            }
        }
        Ok(crd)
    }

    fn take(&mut self, chunk: &[u8; CHUNK], sink: &mut impl FnMut(Item<'_>)) {
        if let Some(i) = self.waiting.iter().position(|w| w.needs() > 0) {
            let mut members = self.waiting.iter_mut().skip(i);
            if let Some(w) = members.next() {
                if w.got == 4 && w.group_trp != 0 {
                    // The DRS group's shared trailer: EMDs in header order.
                    let mut emds = chunk.chunks_exact(4);
                    let trp = w.group_trp;
                    for (j, m) in core::iter::once(w).chain(members).enumerate().take(3) {
                        if trp >> j & 1 != 0 {
                            let mut t = [0u8; CHUNK];
                            if let Some(d) = t.get_mut(..4) {
                                d.copy_from_slice(emds.next().unwrap_or(&[0; 4]));
                            }
                            m.data.trailer = Some(t);
                        }
                        if j == 0 {
                            m.got += 1;
                        }
                    }
                } else {
                    w.data.set_chunk(usize::from(w.got), chunk);
                    w.got += 1;
                }
            }
        }
        while self.waiting.front().is_some_and(|w| w.needs() == 0) {
            if let Some(w) = self.waiting.pop_front() {
                sink(Item::Data(w.msg, &w.data));
            }
        }
    }

    /// Checks a flit whole; the group counts it leaves.
    fn validate(&self, slots: &[u128; SLOTS]) -> Result<Groups, UnpackError> {
        let mut groups = self.groups;
        groups.next_flit();
        let mut due = self.pending_slots();
        let mut headers = self.waiting.len();
        for (s, bits) in slots.iter().enumerate() {
            let index = s as u8;
            let kind = self.layout.slot_kind(s);
            if kind == SlotKind::G && due > 0 {
                due -= 1;
                continue;
            }
            let code = (bits & 0xF) as u8;
            let Some(contents) = slot::contents(self.width, kind, code) else {
                return Err(UnpackError::ReservedFormat { slot: index });
            };
            let kinds = match contents {
                Contents::Messages(kinds) => kinds,
                Contents::Llctrl => {
                    let c = slot::Llctrl::parse(*bits);
                    if kind == SlotKind::Hs && matches!(c, slot::Llctrl::Ide { .. } | slot::Llctrl::InitParam { .. }) {
                        return Err(UnpackError::LlctrlPlacement { slot: index });
                    }
                    // The slots after a control message are reserved, except after IDE.MAC.
                    if c.is_ide_mac() {
                        continue;
                    }
                    break;
                }
            };
            let mut headers_here = 0;
            let mut drs_trp = false;
            for (i, (k, at)) in slot::positions(kinds, self.width).enumerate() {
                let Some(msg) = slot::get(*bits, kind, at, k, self.width) else {
                    if i == 0 && code >= 12 {
                        return Err(UnpackError::FirstInvalid { slot: index });
                    }
                    continue;
                };
                if k.downstream() != (self.direction == Direction::Downstream) {
                    return Err(UnpackError::Direction { slot: index });
                }
                if !groups.room(s, k, 1) {
                    return Err(UnpackError::RateLimit { kind: k });
                }
                groups.add(s, k);
                if k.has_data() {
                    headers += 1;
                    headers_here += 1;
                    if headers_here > 1 && !self.mdh {
                        return Err(UnpackError::Mdh { slot: index });
                    }
                    if headers > WAITING {
                        return Err(UnpackError::Overflow);
                    }
                    // A DRS group's shared trailer counts once.
                    let trailer = has_trailer(&msg) && !(k == Kind::S2mDrs && drs_trp);
                    drs_trp |= k == Kind::S2mDrs && has_trailer(&msg);
                    due += 4 + usize::from(trailer);
                }
            }
        }
        Ok(groups)
    }
}

#[cfg(test)]
mod tests;
