//! The TL unpacker (UALink 1.0 §5.1–5.8): TL flits in, requests, responses, credits and data
//! half-flits out, every sequencing rule of [`super::sequence`] enforced.
//!
//! [`Unpacker::unpack`] reads one flit and fills in what it carried: the requests and responses of
//! its control half-flit (each with an id; requests decompressed through the Rx address cache and
//! authenticated with their tags when authentication is on), the flow-control fields, and what
//! each half was. Data half-flits are lent out of the flit with the id and beat they belong to.
//!
//! Refused: a malformed control half-flit, a request or response that breaks §2.7, more items
//! than the rate limits or the AuthTags half-flit allow, items under a swapped data half-flit with
//! authentication, a mandatory NOP that is not all zero, a message in place of AuthTags, a
//! Poisoned Data message in place of byte enables or in half a beat, an undefined message type.
//! A refusal is fatal, as §5.3 has it for errors a TL detects (the receiver stops forwarding
//! flits; *project-defined* that a protocol violation counts as one): every later call returns
//! [`Error::Stopped`], until a link down ([`Unpacker::link_down`]).
//!
//! Bits the specification leaves open are ignored, never a refusal: the don't-care bits of the
//! control fields ([`super::field`]), ReqAttr\[1\] of an atomic, and unused AuthTags. Each flit
//! that carried one is counted ([`Unpacker::reserved_ignored`]), for warnings.

use super::compress::RxDecompressor;
use super::field::{CompressedRequest, ControlField, FlowControl};
use super::flit::{Message, MessageType, TlFlit, check_auth_tags_reserved, parse_auth_tags};
use super::half::{ControlHalfFlit, CreditRule, HALF_FLIT_LEN};
use super::response::Response;
use super::sequence::{DataPlan, MAX_AUTH_ITEMS, RateLimit, Tenure};
use crate::Error;
use crate::upli::Request;

/// A request or response from a control half-flit.
///
/// Its `id` is this [`Unpacker`]'s own count of the items it read (from 0, one per item, never
/// reset), not the id the sender pushed it with: the sender's ids never cross the link. Data
/// half-flits name the item by this id ([`RxHalf::Data`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxItem {
    /// A request; `pool` is the TL credit it used.
    Request {
        /// Its id (data half-flits name it).
        id: u32,
        /// The request.
        req: Request,
    },
    /// A response; its pool bit is the TL credit it used.
    Response {
        /// Its id.
        id: u32,
        /// The response.
        rsp: Response,
    },
}

/// What one half-flit was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxHalf<'a> {
    /// The control half-flit (its contents are in [`Unpacked`]).
    #[default]
    Control,
    /// A mandatory NOP.
    MandatoryNop,
    /// The AuthTags of this flit's control half-flit (applied to its items).
    AuthTags,
    /// Half `second` of beat `beat` of item `id`.
    Data {
        /// The item.
        id: u32,
        /// The beat.
        beat: u8,
        /// The upper 32 bytes of the beat.
        second: bool,
        /// The bytes.
        bytes: &'a [u8; HALF_FLIT_LEN],
    },
    /// Half `second` of beat `beat` of item `id`, poisoned.
    Poisoned {
        /// The item.
        id: u32,
        /// The beat.
        beat: u8,
        /// The upper half of the beat.
        second: bool,
    },
    /// The byte-enable half-flit of request `id`. It comes **after** the request's data
    /// half-flits (§5.1.1: data first, then the enables), so hold the beats until it arrives
    /// and apply it to all of them at once: 64 enable bits per beat, the beat of lane address X
    /// at the beat's place in the 256-byte block ([`super::flit::beat_byte_enables`]).
    ByteEnables {
        /// The item.
        id: u32,
        /// The bytes (see [`super::flit::beat_byte_enables`]).
        bytes: &'a [u8; HALF_FLIT_LEN],
    },
    /// A message (it delayed the sequence).
    Message(Message),
}

/// What one TL flit carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unpacked<'a> {
    /// Requests and responses, in sector order.
    pub items: heapless::Vec<RxItem, 8>,
    /// Flow-control fields that return credits (NOPs left out).
    pub credits: heapless::Vec<FlowControl, 8>,
    /// The lower half.
    pub lower: RxHalf<'a>,
    /// The upper half.
    pub upper: RxHalf<'a>,
}

/// The TL unpacker for one link direction, with a `ROWS` × `WAYS` Rx address cache (the same
/// shape and [`Indexing`](super::compress::Indexing) as the partner's Tx cache).
///
/// **Credits are the receiver's to return.** The unpacker frees no buffer: when this port is done
/// with a received request or response (its command slot and data beats), release their credits
/// on this port's own [`Packer`](super::Packer) (`packer.owed.release(class, target, n)`), which
/// sends them to the partner in flow-control fields. The credits the partner returns arrive here
/// in [`Unpacked::credits`]: grant each to this port's packer (`packer.credits.grant(&fc)`).
///
/// Size on a 64-bit host: the default `Unpacker` (16 × 4 cache) 728 B; 64 rows 2 312 B.
#[derive(Clone, Debug)]
pub struct Unpacker<const ROWS: usize = 16, const WAYS: usize = 4> {
    auth: bool,
    decompressor: RxDecompressor<ROWS, WAYS>,
    plan: DataPlan,
    rate: RateLimit,
    next_id: u32,
    stopped: bool,
    reserved_ignored: u64,
}

impl<const ROWS: usize, const WAYS: usize> Unpacker<ROWS, WAYS> {
    /// An unpacker; `auth` must match the sender's.
    pub const fn new(auth: bool, decompressor: RxDecompressor<ROWS, WAYS>) -> Self {
        Unpacker {
            auth,
            decompressor,
            plan: DataPlan::new(),
            rate: RateLimit::START,
            next_id: 0,
            stopped: false,
            reserved_ignored: 0,
        }
    }

    /// [`Unpacker::new`] without authentication and nothing allowed in: every byte zero, for an
    /// engine's empty value (its `init` calls [`Unpacker::init`]).
    pub(crate) const fn unconfigured() -> Self {
        let mut u = Self::new(false, RxDecompressor::new(super::compress::Indexing::ByDst));
        u.rate = RateLimit::STOPPED;
        u
    }

    /// Makes this unpacker what [`Unpacker::new`]`(auth, decompressor)` returns, in place.
    pub fn init(&mut self, auth: bool, decompressor: RxDecompressor<ROWS, WAYS>) {
        self.auth = auth;
        self.decompressor = decompressor;
        self.plan = DataPlan::new();
        self.rate = RateLimit::START;
        self.next_id = 0;
        self.stopped = false;
        self.reserved_ignored = 0;
    }

    /// Flits taken although they set a bit the specification leaves open (ignored; module doc).
    pub fn reserved_ignored(&self) -> u64 {
        self.reserved_ignored
    }

    /// Data half-flits still owed.
    pub fn owed_halves(&self) -> u16 {
        self.plan.remaining
    }

    /// The link went down (TL Drop Mode, §3.1.4.3; see [`super::pack`]): forgets the data still
    /// owed, the rate limits and a stop after a receive error, so the next flit is read as the
    /// first after reset (*project-defined*, for the restart). Each item whose data had not all
    /// arrived is handed to `unfinished` (by the id [`Unpacker::unpack`] gave it), so the
    /// completer or originator can drop its partial data. Item ids keep counting. The Rx address
    /// cache is kept: its entries are never invalidated, only overwritten (§5.6.2), and a sender
    /// that restarts with an empty Tx cache loads every entry again before it uses one.
    pub fn link_down(&mut self, unfinished: impl FnMut(u32)) {
        self.plan.drain(unfinished);
        self.rate = RateLimit::START;
        self.stopped = false;
    }

    /// Reads one TL flit into `out` (whose previous contents are replaced).
    pub fn unpack<'a>(&mut self, f: &'a TlFlit, out: &mut Unpacked<'a>) -> Result<(), Error> {
        if self.stopped {
            return Err(Error::Stopped);
        }
        out.items.clear();
        out.credits.clear();
        out.lower = RxHalf::Control;
        out.upper = RxHalf::MandatoryNop;
        let r = self.read(f, out);
        self.stopped = r.is_err();
        r
    }

    fn read<'a>(&mut self, f: &'a TlFlit, out: &mut Unpacked<'a>) -> Result<(), Error> {
        let swap = self.plan.remaining == 1;
        let mut control = false;
        if self.plan.lower_is_data() {
            out.lower = self.data_half(&f.lower, f.m0)?;
        } else if f.m0 {
            let m = Message::parse(&f.lower)?;
            if m.ty == MessageType::PoisonedData {
                return Err(Error::BadValue { field: "Poisoned Data in a control slot", value: 0x20 });
            }
            out.lower = RxHalf::Message(m);
        } else {
            self.control_half(&f.lower, swap, out)?;
            control = true;
        }
        let (n_req, n_rsp) = out.items.iter().fold((0u8, 0u8), |(q, s), i| match i {
            RxItem::Request { .. } => (q + 1, s),
            RxItem::Response { .. } => (q, s + 1),
        });
        out.upper = if swap {
            self.data_half(&f.upper, f.m1)?
        } else if control && self.auth && !out.items.is_empty() {
            if f.m1 {
                return Err(Error::BadValue { field: "message in place of AuthTags", value: 1 });
            }
            let tags = parse_auth_tags(&f.upper);
            if check_auth_tags_reserved(&f.upper, out.items.len()).is_err() {
                self.reserved_ignored += 1;
            }
            for (item, tag) in out.items.iter_mut().zip(tags) {
                match item {
                    RxItem::Request { req, .. } => req.auth_tag = tag,
                    RxItem::Response { rsp, .. } => rsp.set_auth_tag(tag),
                }
            }
            RxHalf::AuthTags
        } else if self.plan.remaining > 0 {
            self.data_half(&f.upper, f.m1)?
        } else if f.m1 {
            match Message::parse(&f.upper)? {
                m if m.ty == MessageType::PoisonedData => {
                    return Err(Error::BadValue { field: "Poisoned Data in a mandatory NOP", value: 0x20 });
                }
                m => RxHalf::Message(m),
            }
        } else if !linklayer::bytes::is_zero(&f.upper) {
            return Err(Error::BadValue { field: "mandatory NOP half-flit not all zero", value: 0 });
        } else {
            RxHalf::MandatoryNop
        };
        self.rate.advance(n_req, n_rsp);
        Ok(())
    }

    fn control_half(&mut self, bytes: &[u8; HALF_FLIT_LEN], swap: bool, out: &mut Unpacked<'_>) -> Result<(), Error> {
        let (mut n_req, mut n_rsp) = (0u8, 0u8);
        let mut rule = CreditRule::default();
        // Whether a field set a bit its table leaves open (ignored, counted).
        let mut open = false;
        for (low, n) in ControlHalfFlit::layout(bytes)? {
            let id = self.next_id;
            // The usual requests and responses on a busy link, compressed, are read straight
            // from their bits: a field read off the wire always fits, so the generic field and
            // its width checks are skipped (the same decoders serve `ControlField::from_word`).
            let req = if let Some(w) = ControlHalfFlit::compressed_request_at(bytes, low, n) {
                self.decompressor.decompress(&CompressedRequest::from_word(w)?)?
            } else if let Some(w) = ControlHalfFlit::compressed_response_at(bytes, low, n) {
                open |= ControlField::check_reserved(u128::from(w), 1).is_err();
                let rsp = Response::from_compressed_word(w)?;
                n_rsp += 1;
                self.admit(RxItem::Response { id, rsp }, Tenure::new(id, rsp.data_beats(), false, 0), out)?;
                continue;
            } else {
                let w = ControlHalfFlit::word_at(bytes, low, n)?;
                open |= ControlField::check_reserved(w, n).is_err();
                let field = &ControlField::from_word(w, n)?;
                if let ControlField::FlowControl(fc) = field {
                    rule.admit(fc)?;
                    let _ = out.credits.push(*fc);
                    continue;
                }
                match self.decompressor.decode(field)? {
                    Some(req) => req,
                    None => {
                        let Some(rsp) = Response::from_field(field)? else { continue };
                        n_rsp += 1;
                        self.admit(RxItem::Response { id, rsp }, Tenure::new(id, rsp.data_beats(), false, 0), out)?;
                        continue;
                    }
                }
            };
            n_req += 1;
            open |= req.check_reserved().is_err();
            let tenure = Tenure::new(id, req.data_beats(), req.cmd.has_byte_enables(), req.addr);
            self.admit(RxItem::Request { id, req }, tenure, out)?;
        }
        if n_req > self.rate.requests {
            return Err(Error::BadValue { field: "requests beyond the §5.7 rate limit", value: u32::from(n_req) });
        }
        if n_rsp > self.rate.responses {
            return Err(Error::BadValue { field: "responses beyond the §5.7 rate limit", value: u32::from(n_rsp) });
        }
        let items = out.items.len();
        if self.auth && items > MAX_AUTH_ITEMS {
            return Err(Error::BadValue { field: "more items than AuthTags", value: items as u32 });
        }
        if self.auth && swap && items > 0 {
            return Err(Error::BadValue {
                field: "items in a control half-flit under a swapped data half",
                value: items as u32,
            });
        }
        if open {
            self.reserved_ignored += 1;
        }
        Ok(())
    }

    /// Takes an item with the data it owes, under the next id.
    fn admit(&mut self, item: RxItem, tenure: Tenure, out: &mut Unpacked<'_>) -> Result<(), Error> {
        // Straight into the plan: any refusal after this stops the unpacker for good, so a plan
        // left half-filled is never read. (A control slot has at most one tenure owed and a
        // half-flit at most eight items, so the plan has room.)
        if !self.plan.push(tenure) {
            return Err(Error::Full { queue: "TL data plan" });
        }
        self.next_id = self.next_id.wrapping_add(1);
        let _ = out.items.push(item);
        Ok(())
    }

    /// Reads a half-flit in a data slot.
    fn data_half<'a>(&mut self, bytes: &'a [u8; HALF_FLIT_LEN], m: bool) -> Result<RxHalf<'a>, Error> {
        let Some(t) = self.plan.front_mut() else {
            return Err(Error::BadValue { field: "data half-flit with nothing owed", value: 0 });
        };
        let (id, beat, second, at_be) = (t.id, t.next / 2, t.next % 2 == 1, t.at_byte_enables());
        let half = if m {
            let msg = Message::parse(bytes)?;
            if msg.ty != MessageType::PoisonedData {
                // Any other message delays the sequence.
                return Ok(RxHalf::Message(msg));
            }
            if at_be {
                return Err(Error::BadValue { field: "Poisoned Data in place of byte enables", value: 0x20 });
            }
            if second && !t.poisoned {
                return Err(Error::BadValue { field: "Poisoned Data in half a beat", value: u32::from(beat) });
            }
            t.poisoned = true;
            RxHalf::Poisoned { id, beat, second }
        } else if at_be {
            RxHalf::ByteEnables { id, bytes }
        } else {
            if second && t.poisoned {
                return Err(Error::BadValue { field: "Poisoned Data in half a beat", value: u32::from(beat) });
            }
            t.poisoned = false;
            RxHalf::Data { id, beat, second, bytes }
        };
        self.plan.advance();
        Ok(half)
    }
}
