//! TL control-half-flit fields (UALink 1.0 §5.9, Tables 5-27 … 5-38): the flow-control/NOP
//! field, the uncompressed and compressed requests, and the three response forms. Every field
//! carries its type (FTYPE) in its top four bits.
//!
//! Each field form's bit positions are one table in [`layout`], written as the specification's
//! table writes them (`[hi:lo]`); the encoder, the decoders (the generic
//! [`ControlField::from_word`] and the receiver's shortcuts for compressed requests and responses,
//! which call the same per-form decoders) and the strict check all read those tables.
//!
//! **Receive tolerance.** Bits a table leaves open are sent as zero and ignored on receive (§6.4's
//! convention for DL messages, applied here as a *project-defined* rule: the tables do not call
//! these bits reserved, but give them no meaning): the SPARE ("unassigned") bits of the response
//! forms; CWAY when CLOAD = 0 (Table 5-29: meaningful only with CLOAD = 1); NUMBEATS of a command
//! for which it is not valid (Table 2-2: valid for commands with data and read-class vendor
//! commands); the FC `vv` bits when `t` = 0 (Table 5-38: valid only with `t` = 1); LEN, OFFSET and
//! LAST of a write response (Tables 5-30 and 5-36 give them only for read responses), and OFFSET
//! of a multi-beat read response (Table 5-30: not valid there). A decoded field has them cleared,
//! so re-encoding it gives the value with those bits zero. [`ControlField::check_reserved`] names
//! the first one set, for conformance tests and warnings.
//!
//! *Project-defined*: a field is a little-endian value over its sectors: bit 0
//! is bit 0 of the lowest byte of its lowest sector, so FTYPE sits in the high nibble of the last
//! byte of the field's highest sector.

use crate::Error;
use crate::upli::num_beats_valid;
use linklayer::WordField;

/// Field types (FTYPE, Table 5-27).
pub mod ftype {
    /// Flow control / NOP (1 sector).
    pub const FLOW_CONTROL: u8 = 0x0;
    /// Uncompressed request (4 sectors).
    pub const UNCOMPRESSED_REQUEST: u8 = 0x1;
    /// Uncompressed response (2 sectors).
    pub const UNCOMPRESSED_RESPONSE: u8 = 0x2;
    /// Compressed request (2 sectors).
    pub const COMPRESSED_REQUEST: u8 = 0x3;
    /// Compressed response for a single-beat read (1 sector).
    pub const COMPRESSED_READ_RESPONSE: u8 = 0x4;
    /// Compressed response for a write or a multi-beat read (1 sector).
    pub const COMPRESSED_RESPONSE: u8 = 0x5;

    /// Sectors a field of this type takes, or `None` for a reserved type.
    pub const fn sectors(t: u8) -> Option<u8> {
        match t {
            FLOW_CONTROL | COMPRESSED_READ_RESPONSE | COMPRESSED_RESPONSE => Some(1),
            UNCOMPRESSED_RESPONSE | COMPRESSED_REQUEST => Some(2),
            UNCOMPRESSED_REQUEST => Some(4),
            _ => None,
        }
    }
}

/// The bit positions of every control field form, one table each, as Tables 5-29 … 5-38 give
/// them (bit 0 the least significant bit of the field's little-endian value).
pub mod layout {
    use linklayer::WordField;

    /// Table 5-38: the flow-control / NOP field (1 sector). Each credit slot is `t`, `vv`, then
    /// the count: `tvvccc` for commands, `tvvccccc` for data.
    pub mod flow_control {
        use super::WordField;
        /// FTYPE = 0x0.
        pub const FTYPE: WordField = WordField::bits(31, 28);
        /// ReqCmd credits, `tvvccc`.
        pub const REQ_CMD: WordField = WordField::bits(27, 22);
        /// RspCmd credits, `tvvccc`.
        pub const RSP_CMD: WordField = WordField::bits(21, 16);
        /// ReqData credits, `tvvccccc`.
        pub const REQ_DATA: WordField = WordField::bits(15, 8);
        /// RspData credits, `tvvccccc`.
        pub const RSP_DATA: WordField = WordField::bits(7, 0);
    }

    /// Table 5-29: the uncompressed request (4 sectors).
    pub mod uncompressed_request {
        use super::WordField;
        /// FTYPE = 0x1.
        pub const FTYPE: WordField = WordField::bits(127, 124);
        /// ReqCmd.
        pub const CMD: WordField = WordField::bits(123, 118);
        /// ReqVC.
        pub const VCHAN: WordField = WordField::bits(117, 116);
        /// ReqASI.
        pub const ASI: WordField = WordField::bits(115, 114);
        /// ReqTag.
        pub const TAG: WordField = WordField::bits(113, 103);
        /// TL credit used: 1 = pool.
        pub const POOL: WordField = WordField::bit(102);
        /// ReqAttr.
        pub const ATTR: WordField = WordField::bits(101, 94);
        /// ReqLen.
        pub const LEN: WordField = WordField::bits(93, 88);
        /// ReqMetaData.
        pub const METADATA: WordField = WordField::bits(87, 80);
        /// ReqAddr\[56:2\].
        pub const ADDR: WordField = WordField::bits(79, 25);
        /// ReqSrcPhysAccID.
        pub const SRCACCID: WordField = WordField::bits(24, 15);
        /// ReqDstPhysAccID.
        pub const DSTACCID: WordField = WordField::bits(14, 5);
        /// Load ReqAddr\[56:20\] into the receiver's address cache.
        pub const CLOAD: WordField = WordField::bit(4);
        /// The way to load (valid only when CLOAD = 1).
        pub const CWAY: WordField = WordField::bits(3, 2);
        /// ReqNumBeats (valid only when ReqCmd\[5\] = 1 or for a read-class vendor command).
        pub const NUMBEATS: WordField = WordField::bits(1, 0);
    }

    /// Table 5-30: the uncompressed response (2 sectors).
    pub mod uncompressed_response {
        use super::WordField;
        /// FTYPE = 0x2.
        pub const FTYPE: WordField = WordField::bits(63, 60);
        /// RdRspVC / WrRspVC.
        pub const VCHAN: WordField = WordField::bits(59, 58);
        /// RdRspTag / WrRspTag.
        pub const TAG: WordField = WordField::bits(57, 47);
        /// TL credit used: 1 = pool.
        pub const POOL: WordField = WordField::bit(46);
        /// RdRspNumBeats of a multi-beat read ("else 00").
        pub const LEN: WordField = WordField::bits(45, 44);
        /// RdRspOffset of a single-beat read ("else 00").
        pub const OFFSET: WordField = WordField::bits(43, 42);
        /// RdRspStatus / WrRspStatus.
        pub const STATUS: WordField = WordField::bits(41, 38);
        /// 1 = read response (AtomicR included), 0 = write response.
        pub const RD_WR: WordField = WordField::bit(37);
        /// RdRspLast ("0 for writes").
        pub const LAST: WordField = WordField::bit(36);
        /// Source accelerator (debug only).
        pub const SRCACCID: WordField = WordField::bits(35, 26);
        /// Destination accelerator.
        pub const DSTACCID: WordField = WordField::bits(25, 16);
        /// Unassigned.
        pub const SPARE: WordField = WordField::bits(15, 0);
    }

    /// Table 5-31: the compressed request (2 sectors).
    pub mod compressed_request {
        use super::WordField;
        /// FTYPE = 0x3.
        pub const FTYPE: WordField = WordField::bits(63, 60);
        /// Compressed command (Table 5-33).
        pub const CMD: WordField = WordField::bits(59, 57);
        /// ReqVC.
        pub const VCHAN: WordField = WordField::bits(56, 55);
        /// ReqASI.
        pub const ASI: WordField = WordField::bits(54, 53);
        /// ReqTag.
        pub const TAG: WordField = WordField::bits(52, 42);
        /// TL credit used: 1 = pool.
        pub const POOL: WordField = WordField::bit(41);
        /// Length: 64 · (LEN + 1) bytes.
        pub const LEN: WordField = WordField::bits(40, 39);
        /// ReqMetaData\[2:0\].
        pub const METADATA: WordField = WordField::bits(38, 36);
        /// ReqAddr\[19:6\].
        pub const ADDR: WordField = WordField::bits(35, 22);
        /// ReqSrcPhysAccID.
        pub const SRCACCID: WordField = WordField::bits(21, 12);
        /// ReqDstPhysAccID.
        pub const DSTACCID: WordField = WordField::bits(11, 2);
        /// The cache way holding ReqAddr\[56:20\].
        pub const CWAY: WordField = WordField::bits(1, 0);
    }

    /// Tables 5-34 and 5-36: the two compressed responses (1 sector each) share every position;
    /// only bits 3:2 and 1 are named apart.
    pub mod compressed_response {
        use super::WordField;
        /// FTYPE = 0x4 (single-beat read) or 0x5 (write or multi-beat read).
        pub const FTYPE: WordField = WordField::bits(31, 28);
        /// VC.
        pub const VCHAN: WordField = WordField::bits(27, 26);
        /// Tag.
        pub const TAG: WordField = WordField::bits(25, 15);
        /// TL credit used: 1 = pool.
        pub const POOL: WordField = WordField::bit(14);
        /// Destination accelerator.
        pub const DSTACCID: WordField = WordField::bits(13, 4);
        /// OFFSET (Table 5-34) or LEN (Table 5-36: RdRspNumBeats, "00 for writes").
        pub const OFFSET_OR_LEN: WordField = WordField::bits(3, 2);
        /// LAST (Table 5-34) or RD/WR (Table 5-36: 1 = read).
        pub const LAST_OR_RD_WR: WordField = WordField::bit(1);
        /// Unassigned.
        pub const SPARE: WordField = WordField::bit(0);
    }
}

use layout::{compressed_request as cq, compressed_response as cr, flow_control as fcl};
use layout::{uncompressed_request as uq, uncompressed_response as ur};

/// `v` at field `f`'s place, or a `BadValue` naming `name` when it is too wide for it.
fn put(f: WordField, v: impl Into<u64>, name: &'static str) -> Result<u128, Error> {
    let v = v.into();
    if f.fits(v) {
        Ok(f.place(v))
    } else {
        Err(Error::BadValue { field: name, value: v.min(u64::from(u32::MAX)) as u32 })
    }
}

/// Where returned credits go. On the wire `t` = 0 means the pool and `t` = 1 a VC: the opposite
/// sense to the POOL bit of requests and responses (Table 5-38).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CreditTarget {
    /// The shared pool (`t` = 0).
    Pool,
    /// A virtual channel 0..=3 (`t` = 1, `vv`).
    Vc(u8),
}

/// One credit-return slot of a flow-control field: where, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CreditReturn {
    /// Pool or VC.
    pub target: CreditTarget,
    /// Credits returned (0..=7 for command slots, 0..=31 for data slots).
    pub credits: u8,
}

/// The parts of a credit slot (`tvvc…`) at field `slot`: `t`, `vv` and the count below them.
/// Built from the fields, not with `WordField::bits`: this runs at run time, where that bound
/// check would link a panic.
const fn slot_parts(slot: WordField) -> (WordField, WordField, WordField) {
    let count = slot.width.saturating_sub(3);
    (
        WordField { lo: slot.lo + count + 2, width: 1 },
        WordField { lo: slot.lo + count, width: 2 },
        WordField { lo: slot.lo, width: count },
    )
}

impl CreditReturn {
    /// No credits, to the pool: the all-zero slot.
    pub const NONE: Self = CreditReturn { target: CreditTarget::Pool, credits: 0 };

    /// The slot's bits at field `slot` of a flow-control field.
    fn encode(self, slot: WordField, name: &'static str) -> Result<u128, Error> {
        let (t, vv, count) = slot_parts(slot);
        let target = match self.target {
            CreditTarget::Pool => 0,
            CreditTarget::Vc(v) => t.place(1) | put(vv, v, "FC VC")?,
        };
        Ok(target | put(count, self.credits, name)?)
    }

    /// The slot at field `slot` of a flow-control field `w` (`vv` ignored when `t` = 0).
    const fn decode(w: u128, slot: WordField) -> Self {
        let (t, vv, count) = slot_parts(slot);
        let target = if t.is_set(w) { CreditTarget::Vc(vv.get(w) as u8) } else { CreditTarget::Pool };
        CreditReturn { target, credits: count.get(w) as u8 }
    }

    /// Whether the slot at `slot` of `w` has `vv` set with `t` = 0 (a pool return).
    const fn vv_without_t(w: u128, slot: WordField) -> bool {
        let (t, vv, _) = slot_parts(slot);
        !t.is_set(w) && vv.is_set(w)
    }
}
/// Flow-control / NOP field (FTYPE 0x0, 1 sector, Table 5-38). All zero is a NOP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FlowControl {
    /// Request command credits.
    pub req_cmd: CreditReturn,
    /// Response command credits.
    pub rsp_cmd: CreditReturn,
    /// Request data credits.
    pub req_data: CreditReturn,
    /// Response data credits.
    pub rsp_data: CreditReturn,
}

impl FlowControl {
    /// The NOP field.
    pub const NOP: Self = FlowControl {
        req_cmd: CreditReturn::NONE,
        rsp_cmd: CreditReturn::NONE,
        req_data: CreditReturn::NONE,
        rsp_data: CreditReturn::NONE,
    };
}

/// Uncompressed request (FTYPE 0x1, 4 sectors, Table 5-29).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct UncompressedRequest {
    /// ReqCmd (6 bits).
    pub cmd: u8,
    /// ReqVC (2 bits).
    pub vc: u8,
    /// ReqASI (2 bits).
    pub asi: u8,
    /// ReqTag (11 bits).
    pub tag: u16,
    /// The TL credit used: pool (true) or VC.
    pub pool: bool,
    /// ReqAttr.
    pub attr: u8,
    /// ReqLen: DWords − 1 (6 bits).
    pub len: u8,
    /// ReqMetaData.
    pub metadata: u8,
    /// ReqAddr: a 57-bit byte address, DWord aligned.
    pub addr: u64,
    /// Source accelerator (10 bits).
    pub src: u16,
    /// Destination accelerator (10 bits).
    pub dst: u16,
    /// CLOAD with its CWAY: load ReqAddr\[56:20\] into this way of the receiver's address cache.
    pub cache_load: Option<u8>,
    /// NUMBEATS: data beats − 1 (2 bits).
    pub num_beats: u8,
}

/// Uncompressed response (FTYPE 0x2, 2 sectors, Table 5-30).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct UncompressedResponse {
    /// VC (2 bits).
    pub vc: u8,
    /// Tag (11 bits).
    pub tag: u16,
    /// Pool credit (true) or VC.
    pub pool: bool,
    /// RdRspNumBeats for multi-beat reads, else 0 (2 bits).
    pub len: u8,
    /// RdRspOffset for single-beat reads, else 0 (2 bits).
    pub offset: u8,
    /// Status (4 bits).
    pub status: u8,
    /// A read response (true; AtomicR included) or a write response.
    pub read: bool,
    /// RdRspLast (0 for writes).
    pub last: bool,
    /// Source accelerator (10 bits; debug only).
    pub src: u16,
    /// Destination accelerator (10 bits).
    pub dst: u16,
}

/// Compressed-request commands (Table 5-33).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CompressedCmd {
    /// 000: read.
    Read,
    /// 100: write.
    Write,
    /// 110: full write.
    WriteFull,
}

/// Compressed request (FTYPE 0x3, 2 sectors, Table 5-31).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CompressedRequest {
    /// Command.
    pub cmd: CompressedCmd,
    /// VC (2 bits).
    pub vc: u8,
    /// ASI (2 bits).
    pub asi: u8,
    /// Tag (11 bits).
    pub tag: u16,
    /// Pool credit (true) or VC.
    pub pool: bool,
    /// Length: 64 · (LEN + 1) bytes (2 bits).
    pub len: u8,
    /// ReqMetaData\[2:0\].
    pub metadata: u8,
    /// ReqAddr\[19:6\]: the 64-byte block within the cached 1 MB region (14 bits).
    pub addr_block: u16,
    /// Source accelerator (10 bits).
    pub src: u16,
    /// Destination accelerator (10 bits).
    pub dst: u16,
    /// The cache way holding ReqAddr\[56:20\] (2 bits).
    pub way: u8,
}

impl CompressedRequest {
    /// The field's value, FTYPE included, for a request that passes [`Self::check`] (a wider
    /// value would be cut to its bits, never spill into a neighbour).
    pub(crate) const fn word(&self) -> u64 {
        let cmd = match self.cmd {
            CompressedCmd::Read => 0b000,
            CompressedCmd::Write => 0b100,
            CompressedCmd::WriteFull => 0b110,
        };
        (cq::FTYPE.place(ftype::COMPRESSED_REQUEST as u64)
            | cq::CMD.place(cmd)
            | cq::VCHAN.place(self.vc as u64)
            | cq::ASI.place(self.asi as u64)
            | cq::TAG.place(self.tag as u64)
            | cq::POOL.place(self.pool as u64)
            | cq::LEN.place(self.len as u64)
            | cq::METADATA.place(self.metadata as u64)
            | cq::ADDR.place(self.addr_block as u64)
            | cq::SRCACCID.place(self.src as u64)
            | cq::DSTACCID.place(self.dst as u64)
            | cq::CWAY.place(self.way as u64)) as u64
    }

    /// Reads the field from its 2-sector value, FTYPE included (the caller has seen that FTYPE
    /// is [`ftype::COMPRESSED_REQUEST`]). Every value read this way fits its bits.
    pub(crate) fn from_word(w: u64) -> Result<Self, Error> {
        let w = u128::from(w);
        Ok(CompressedRequest {
            cmd: match cq::CMD.get(w) {
                0b000 => CompressedCmd::Read,
                0b100 => CompressedCmd::Write,
                0b110 => CompressedCmd::WriteFull,
                c => return Err(Error::BadValue { field: "compressed CMD", value: c as u32 }),
            },
            vc: cq::VCHAN.get(w) as u8,
            asi: cq::ASI.get(w) as u8,
            tag: cq::TAG.get(w) as u16,
            pool: cq::POOL.is_set(w),
            len: cq::LEN.get(w) as u8,
            metadata: cq::METADATA.get(w) as u8,
            addr_block: cq::ADDR.get(w) as u16,
            src: cq::SRCACCID.get(w) as u16,
            dst: cq::DSTACCID.get(w) as u16,
            way: cq::CWAY.get(w) as u8,
        })
    }

    /// Checks that every value fits its bits (a field read off the wire always does).
    pub fn check(&self) -> Result<(), Error> {
        put(cq::VCHAN, self.vc, "VCHAN")?;
        put(cq::ASI, self.asi, "ASI")?;
        put(cq::TAG, self.tag, "TAG")?;
        put(cq::LEN, self.len, "LEN")?;
        put(cq::METADATA, self.metadata, "METADATA")?;
        put(cq::ADDR, self.addr_block, "ADDR")?;
        put(cq::SRCACCID, self.src, "SRCACCID")?;
        put(cq::DSTACCID, self.dst, "DSTACCID")?;
        put(cq::CWAY, self.way, "CWAY")?;
        Ok(())
    }
}

/// Compressed response for a single-beat read (FTYPE 0x4, 1 sector, Table 5-34; status OKAY).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CompressedReadResponse {
    /// VC (2 bits).
    pub vc: u8,
    /// Tag (11 bits).
    pub tag: u16,
    /// Pool credit (true) or VC.
    pub pool: bool,
    /// Destination accelerator (10 bits).
    pub dst: u16,
    /// Beat offset (2 bits).
    pub offset: u8,
    /// Last beat.
    pub last: bool,
}

impl CompressedReadResponse {
    /// Reads the field from its 1-sector value (FTYPE 0x4 on top, which the caller has seen);
    /// SPARE is ignored.
    pub(crate) const fn from_word(w: u32) -> Self {
        let w = w as u128;
        CompressedReadResponse {
            vc: cr::VCHAN.get(w) as u8,
            tag: cr::TAG.get(w) as u16,
            pool: cr::POOL.is_set(w),
            dst: cr::DSTACCID.get(w) as u16,
            offset: cr::OFFSET_OR_LEN.get(w) as u8,
            last: cr::LAST_OR_RD_WR.is_set(w),
        }
    }
}

/// Compressed response for a write or a multi-beat read (FTYPE 0x5, 1 sector, Table 5-36;
/// status OKAY).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CompressedResponse {
    /// VC (2 bits).
    pub vc: u8,
    /// Tag (11 bits).
    pub tag: u16,
    /// Pool credit (true) or VC.
    pub pool: bool,
    /// Destination accelerator (10 bits).
    pub dst: u16,
    /// RdRspNumBeats (0 for writes; 2 bits).
    pub len: u8,
    /// Read (true) or write.
    pub read: bool,
}

impl CompressedResponse {
    /// Reads the field from its 1-sector value (FTYPE 0x5 on top, which the caller has seen);
    /// SPARE, and LEN of a write response, are ignored.
    pub(crate) const fn from_word(w: u32) -> Self {
        let w = w as u128;
        let read = cr::LAST_OR_RD_WR.is_set(w);
        CompressedResponse {
            vc: cr::VCHAN.get(w) as u8,
            tag: cr::TAG.get(w) as u16,
            pool: cr::POOL.is_set(w),
            dst: cr::DSTACCID.get(w) as u16,
            len: if read { cr::OFFSET_OR_LEN.get(w) as u8 } else { 0 },
            read,
        }
    }
}

/// Any control-half-flit field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ControlField {
    /// Flow control or NOP.
    FlowControl(FlowControl),
    /// Uncompressed request.
    UncompressedRequest(UncompressedRequest),
    /// Uncompressed response.
    UncompressedResponse(UncompressedResponse),
    /// Compressed request.
    CompressedRequest(CompressedRequest),
    /// Compressed single-beat read response.
    CompressedReadResponse(CompressedReadResponse),
    /// Compressed write or multi-beat read response.
    CompressedResponse(CompressedResponse),
}

impl ControlField {
    /// The field's FTYPE.
    pub const fn ftype(&self) -> u8 {
        match self {
            ControlField::FlowControl(_) => ftype::FLOW_CONTROL,
            ControlField::UncompressedRequest(_) => ftype::UNCOMPRESSED_REQUEST,
            ControlField::UncompressedResponse(_) => ftype::UNCOMPRESSED_RESPONSE,
            ControlField::CompressedRequest(_) => ftype::COMPRESSED_REQUEST,
            ControlField::CompressedReadResponse(_) => ftype::COMPRESSED_READ_RESPONSE,
            ControlField::CompressedResponse(_) => ftype::COMPRESSED_RESPONSE,
        }
    }

    /// Sectors the field takes: 1, 2 or 4.
    pub const fn sectors(&self) -> u8 {
        match ftype::sectors(self.ftype()) {
            Some(n) => n,
            None => 1,
        }
    }

    /// The field as a little-endian value of `32 · sectors()` bits, FTYPE on top. Values too
    /// wide for their bits are refused, by field name; the bits the tables leave open are zero.
    pub fn to_word(&self) -> Result<u128, Error> {
        Ok(match *self {
            ControlField::FlowControl(f) => {
                fcl::FTYPE.place(u64::from(ftype::FLOW_CONTROL))
                    | f.req_cmd.encode(fcl::REQ_CMD, "FC ReqCmd credits")?
                    | f.rsp_cmd.encode(fcl::RSP_CMD, "FC RspCmd credits")?
                    | f.req_data.encode(fcl::REQ_DATA, "FC ReqData credits")?
                    | f.rsp_data.encode(fcl::RSP_DATA, "FC RspData credits")?
            }
            ControlField::UncompressedRequest(r) => {
                if r.addr & 0b11 != 0 {
                    return Err(Error::BadValue {
                        field: "ReqAddr (not DWord aligned)",
                        value: (r.addr & 0b11) as u32,
                    });
                }
                let cache = match r.cache_load {
                    Some(way) => uq::CLOAD.place(1) | put(uq::CWAY, way, "CWAY")?,
                    None => 0,
                };
                uq::FTYPE.place(u64::from(ftype::UNCOMPRESSED_REQUEST))
                    | put(uq::CMD, r.cmd, "CMD")?
                    | put(uq::VCHAN, r.vc, "VCHAN")?
                    | put(uq::ASI, r.asi, "ASI")?
                    | put(uq::TAG, r.tag, "TAG")?
                    | uq::POOL.place(u64::from(r.pool))
                    | uq::ATTR.place(u64::from(r.attr))
                    | put(uq::LEN, r.len, "LEN")?
                    | uq::METADATA.place(u64::from(r.metadata))
                    | put(uq::ADDR, r.addr >> 2, "ReqAddr")?
                    | put(uq::SRCACCID, r.src, "SRCACCID")?
                    | put(uq::DSTACCID, r.dst, "DSTACCID")?
                    | cache
                    // Open for a command without data (Table 2-2: driven to 0 for reads).
                    | if num_beats_valid(r.cmd) { put(uq::NUMBEATS, r.num_beats, "NUMBEATS")? } else { 0 }
            }
            ControlField::UncompressedResponse(r) => {
                // LEN, OFFSET and LAST are open for a write response (Table 5-30: set to 0), and
                // OFFSET for a multi-beat read response.
                let (len, offset, last) = match (r.read, r.len) {
                    (false, _) => (0, 0, false),
                    (true, 0) => (0, r.offset, r.last),
                    (true, len) => (len, 0, r.last),
                };
                ur::FTYPE.place(u64::from(ftype::UNCOMPRESSED_RESPONSE))
                    | put(ur::VCHAN, r.vc, "VCHAN")?
                    | put(ur::TAG, r.tag, "TAG")?
                    | ur::POOL.place(u64::from(r.pool))
                    | put(ur::LEN, len, "LEN")?
                    | put(ur::OFFSET, offset, "OFFSET")?
                    | put(ur::STATUS, r.status, "STATUS")?
                    | ur::RD_WR.place(u64::from(r.read))
                    | ur::LAST.place(u64::from(last))
                    | put(ur::SRCACCID, r.src, "SRCACCID")?
                    | put(ur::DSTACCID, r.dst, "DSTACCID")?
            }
            ControlField::CompressedRequest(r) => {
                r.check()?;
                u128::from(r.word())
            }
            ControlField::CompressedReadResponse(r) => {
                cr::FTYPE.place(u64::from(ftype::COMPRESSED_READ_RESPONSE))
                    | put(cr::VCHAN, r.vc, "VCHAN")?
                    | put(cr::TAG, r.tag, "TAG")?
                    | cr::POOL.place(u64::from(r.pool))
                    | put(cr::DSTACCID, r.dst, "DSTACCID")?
                    | put(cr::OFFSET_OR_LEN, r.offset, "OFFSET")?
                    | cr::LAST_OR_RD_WR.place(u64::from(r.last))
            }
            ControlField::CompressedResponse(r) => {
                cr::FTYPE.place(u64::from(ftype::COMPRESSED_RESPONSE))
                    | put(cr::VCHAN, r.vc, "VCHAN")?
                    | put(cr::TAG, r.tag, "TAG")?
                    | cr::POOL.place(u64::from(r.pool))
                    | put(cr::DSTACCID, r.dst, "DSTACCID")?
                    // LEN is open for a write response (Table 5-36: b'00').
                    | put(cr::OFFSET_OR_LEN, if r.read { r.len } else { 0 }, "LEN")?
                    | cr::LAST_OR_RD_WR.place(u64::from(r.read))
            }
        })
    }

    /// The FTYPE of a field of `sectors` sectors with value `w`, when `w` fits that size and
    /// FTYPE names a field of that size.
    fn ftype_of(w: u128, sectors: u8) -> Result<u8, Error> {
        // FTYPE is the field's top four bits. Constant shifts: a 32-bit core moves words for
        // them, where a shift by a variable is a library call per word pair.
        let (fits, top) = match sectors {
            1 => (w >> 32 == 0, w >> 28),
            2 => (w >> 64 == 0, w >> 60),
            4 => (true, w >> 124),
            _ => (false, 0),
        };
        if !fits {
            return Err(Error::BadValue { field: "control field sectors", value: u32::from(sectors) });
        }
        let t = (top & 0xF) as u8;
        if ftype::sectors(t) != Some(sectors) {
            return Err(Error::BadValue { field: "FTYPE", value: u32::from(t) });
        }
        Ok(t)
    }

    /// Decodes a field of `sectors` sectors from its little-endian value (FTYPE on top). The
    /// bits the tables leave open are ignored (module doc); an undefined FTYPE or compressed
    /// command is refused.
    pub fn from_word(w: u128, sectors: u8) -> Result<Self, Error> {
        Ok(match Self::ftype_of(w, sectors)? {
            ftype::FLOW_CONTROL => ControlField::FlowControl(FlowControl {
                req_cmd: CreditReturn::decode(w, fcl::REQ_CMD),
                rsp_cmd: CreditReturn::decode(w, fcl::RSP_CMD),
                req_data: CreditReturn::decode(w, fcl::REQ_DATA),
                rsp_data: CreditReturn::decode(w, fcl::RSP_DATA),
            }),
            ftype::UNCOMPRESSED_REQUEST => ControlField::UncompressedRequest(UncompressedRequest {
                cmd: uq::CMD.get(w) as u8,
                vc: uq::VCHAN.get(w) as u8,
                asi: uq::ASI.get(w) as u8,
                tag: uq::TAG.get(w) as u16,
                pool: uq::POOL.is_set(w),
                attr: uq::ATTR.get(w) as u8,
                len: uq::LEN.get(w) as u8,
                metadata: uq::METADATA.get(w) as u8,
                addr: uq::ADDR.get(w) << 2,
                src: uq::SRCACCID.get(w) as u16,
                dst: uq::DSTACCID.get(w) as u16,
                cache_load: if uq::CLOAD.is_set(w) { Some(uq::CWAY.get(w) as u8) } else { None },
                num_beats: if num_beats_valid(uq::CMD.get(w) as u8) { uq::NUMBEATS.get(w) as u8 } else { 0 },
            }),
            ftype::UNCOMPRESSED_RESPONSE => {
                let read = ur::RD_WR.is_set(w);
                // LEN, OFFSET and LAST are a read response's; a write response's are ignored, and
                // so is a multi-beat read's OFFSET.
                let of_read = |f: WordField| if read { f.get(w) } else { 0 };
                let single_beat = ur::LEN.get(w) == 0;
                ControlField::UncompressedResponse(UncompressedResponse {
                    vc: ur::VCHAN.get(w) as u8,
                    tag: ur::TAG.get(w) as u16,
                    pool: ur::POOL.is_set(w),
                    len: of_read(ur::LEN) as u8,
                    offset: if single_beat { of_read(ur::OFFSET) as u8 } else { 0 },
                    status: ur::STATUS.get(w) as u8,
                    read,
                    last: of_read(ur::LAST) != 0,
                    src: ur::SRCACCID.get(w) as u16,
                    dst: ur::DSTACCID.get(w) as u16,
                })
            }
            ftype::COMPRESSED_REQUEST => ControlField::CompressedRequest(CompressedRequest::from_word(w as u64)?),
            ftype::COMPRESSED_READ_RESPONSE => {
                ControlField::CompressedReadResponse(CompressedReadResponse::from_word(w as u32))
            }
            _ => ControlField::CompressedResponse(CompressedResponse::from_word(w as u32)),
        })
    }

    /// The strict check: the first bit set that the tables leave open, by name (module doc). For
    /// conformance tests and warnings; [`Self::from_word`] ignores these bits. A value that does
    /// not decode at all is refused as `from_word` refuses it.
    pub fn check_reserved(w: u128, sectors: u8) -> Result<(), Error> {
        let reserved = |field| Err(Error::Reserved { field });
        match Self::ftype_of(w, sectors)? {
            ftype::FLOW_CONTROL => {
                let slots = [fcl::REQ_CMD, fcl::RSP_CMD, fcl::REQ_DATA, fcl::RSP_DATA];
                if slots.iter().any(|&s| CreditReturn::vv_without_t(w, s)) {
                    return reserved("FC vv with t = 0 (pool)");
                }
            }
            ftype::UNCOMPRESSED_REQUEST => {
                if !uq::CLOAD.is_set(w) && uq::CWAY.is_set(w) {
                    return reserved("CWAY without CLOAD");
                }
                if !num_beats_valid(uq::CMD.get(w) as u8) && uq::NUMBEATS.is_set(w) {
                    return reserved("NUMBEATS of a command without data");
                }
            }
            ftype::UNCOMPRESSED_RESPONSE => {
                if ur::SPARE.is_set(w) {
                    return reserved("uncompressed response SPARE");
                }
                let read_only = ur::LEN.mask() | ur::OFFSET.mask() | ur::LAST.mask();
                if !ur::RD_WR.is_set(w) && w & read_only != 0 {
                    return reserved("LEN/OFFSET/LAST of a write response");
                }
                if ur::LEN.is_set(w) && ur::OFFSET.is_set(w) {
                    return reserved("OFFSET of a multi-beat read response");
                }
            }
            ftype::COMPRESSED_REQUEST => {
                CompressedRequest::from_word(w as u64)?;
            }
            ftype::COMPRESSED_READ_RESPONSE => {
                if cr::SPARE.is_set(w) {
                    return reserved("compressed read response SPARE");
                }
            }
            _ => {
                if cr::SPARE.is_set(w) {
                    return reserved("compressed response SPARE");
                }
                if !cr::LAST_OR_RD_WR.is_set(w) && cr::OFFSET_OR_LEN.is_set(w) {
                    return reserved("LEN of a compressed write response");
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nop_is_all_zero_and_ftype_is_on_top() {
        assert_eq!(ControlField::FlowControl(FlowControl::NOP).to_word(), Ok(0));
        let r = ControlField::CompressedReadResponse(CompressedReadResponse {
            vc: 0,
            tag: 0,
            pool: false,
            dst: 0,
            offset: 0,
            last: false,
        });
        assert_eq!(r.to_word(), Ok(0x4 << 28));
    }

    #[test]
    fn flow_control_polarity_is_the_opposite_of_pool() {
        // t = 1 means a VC: VC 2, 5 credits in the ReqCmd slot is t=1 vv=10 ccc=101.
        let f = FlowControl { req_cmd: CreditReturn { target: CreditTarget::Vc(2), credits: 5 }, ..FlowControl::NOP };
        assert_eq!(ControlField::FlowControl(f).to_word(), Ok((1 << 5 | 0b10 << 3 | 0b101) << 22));
        // t = 0 is the pool; vv must then be 0.
        let pool =
            FlowControl { rsp_data: CreditReturn { target: CreditTarget::Pool, credits: 31 }, ..FlowControl::NOP };
        assert_eq!(ControlField::FlowControl(pool).to_word(), Ok(31));
        // vv with t = 0 is ignored (a pool return), and named by the strict check.
        assert_eq!(
            ControlField::from_word(0b01 << 5 | 3, 1),
            Ok(ControlField::FlowControl(FlowControl {
                rsp_data: CreditReturn { target: CreditTarget::Pool, credits: 3 },
                ..FlowControl::NOP
            }))
        );
        assert_eq!(
            ControlField::check_reserved(0b01 << 5, 1),
            Err(Error::Reserved { field: "FC vv with t = 0 (pool)" })
        );
        // The request POOL bit: 1 = pool.
        let c = CompressedResponse { vc: 0, tag: 0, pool: true, dst: 0, len: 0, read: false };
        assert_eq!(ControlField::CompressedResponse(c).to_word(), Ok(0x5 << 28 | 1 << 14));
    }

    #[test]
    fn uncompressed_request_places_every_field() {
        let r = UncompressedRequest {
            cmd: 0b10_0000,
            vc: 1,
            asi: 2,
            tag: 0x7FF,
            pool: true,
            attr: 0xAB,
            len: 63,
            metadata: 0xCD,
            addr: (1 << 57) - 4,
            src: 0x3FF,
            dst: 1,
            cache_load: Some(3),
            num_beats: 3,
        };
        let w = ControlField::UncompressedRequest(r).to_word().unwrap();
        assert_eq!(w >> 124, 0x1);
        assert_eq!(w >> 103 & 0x7FF, 0x7FF);
        assert_eq!(w >> 25 & ((1 << 55) - 1), (1 << 55) - 1);
        assert_eq!(w & 0b11_111, 0b1_11_11);
        assert_eq!(ControlField::from_word(w, 4), Ok(ControlField::UncompressedRequest(r)));
        let bad = UncompressedRequest { addr: 2, ..r };
        assert!(ControlField::UncompressedRequest(bad).to_word().is_err());
        // CWAY without CLOAD, and NUMBEATS of a read, are ignored and named by the strict check.
        let Ok(ControlField::UncompressedRequest(read)) = ControlField::from_word(0x1 << 124 | 0b01 << 2 | 0b11, 4)
        else {
            panic!("a read decodes")
        };
        assert_eq!((read.cache_load, read.num_beats), (None, 0));
        assert_eq!(
            ControlField::check_reserved(0x1 << 124 | 0b01 << 2, 4),
            Err(Error::Reserved { field: "CWAY without CLOAD" })
        );
        assert_eq!(
            ControlField::check_reserved(0x1 << 124 | 0b11, 4),
            Err(Error::Reserved { field: "NUMBEATS of a command without data" })
        );
        // A write (ReqCmd[5] = 1) carries its NUMBEATS.
        assert_eq!(ControlField::check_reserved(0x1 << 124 | 0x28 << 118 | 0b11, 4), Ok(()));
    }

    /// A compressed read with every field zero.
    const ZERO_REQUEST: CompressedRequest = CompressedRequest {
        cmd: CompressedCmd::Read,
        vc: 0,
        asi: 0,
        tag: 0,
        pool: false,
        len: 0,
        metadata: 0,
        addr_block: 0,
        src: 0,
        dst: 0,
        way: 0,
    };

    /// The unchecked value cuts a too-wide value to its bits: it never reaches a neighbour.
    #[test]
    fn compressed_request_word_keeps_each_value_in_its_bits() {
        let zero = ZERO_REQUEST;
        assert_eq!(zero.word(), 0x3 << 60);
        let wide = CompressedRequest { vc: 0xFF, tag: 0xFFFF, addr_block: 0xFFFF, way: 0xFF, ..zero };
        assert_eq!(wide.word(), 0x3 << 60 | 0b11 << 55 | 0x7FF << 42 | 0x3FFF << 22 | 0b11);
        assert!(wide.check().is_err());
        assert_eq!(
            ControlField::CompressedRequest(wide).to_word(),
            Err(Error::BadValue { field: "VCHAN", value: 0xFF })
        );
    }

    /// Every field of the compressed forms at the bits Tables 5-31, 5-34 and 5-36 give, each set
    /// alone to its widest value: written there, and read back from there. (Encoder and decoder
    /// share nothing but these tables, so a shift wrong in both would still fail here.)
    #[test]
    fn compressed_fields_sit_where_tables_5_31_5_34_5_36_put_them() {
        let r0 = ZERO_REQUEST;
        let ftype3 = 0x3u64 << 60;
        for (r, bits) in [
            (CompressedRequest { cmd: CompressedCmd::WriteFull, ..r0 }, 0b110u64 << 57),
            (CompressedRequest { cmd: CompressedCmd::Write, ..r0 }, 0b100 << 57),
            (CompressedRequest { vc: 3, ..r0 }, 0b11 << 55),
            (CompressedRequest { asi: 3, ..r0 }, 0b11 << 53),
            (CompressedRequest { tag: 0x7FF, ..r0 }, 0x7FF << 42),
            (CompressedRequest { pool: true, ..r0 }, 1 << 41),
            (CompressedRequest { len: 3, ..r0 }, 0b11 << 39),
            (CompressedRequest { metadata: 7, ..r0 }, 0b111 << 36),
            (CompressedRequest { addr_block: 0x3FFF, ..r0 }, 0x3FFF << 22),
            (CompressedRequest { src: 0x3FF, ..r0 }, 0x3FF << 12),
            (CompressedRequest { dst: 0x3FF, ..r0 }, 0x3FF << 2),
            (CompressedRequest { way: 3, ..r0 }, 0b11),
        ] {
            assert_eq!(r.word(), ftype3 | bits, "{r:?}");
            assert_eq!(CompressedRequest::from_word(ftype3 | bits), Ok(r));
        }
        // Tables 5-34 and 5-36 share every position (VCHAN 27:26, TAG 25:15, POOL 14,
        // DSTACCID 13:4, OFFSET or LEN 3:2, LAST or RD/WR 1); only the last two are named apart.
        // Each field alone at its widest value, given as [vc, tag, pool, dst, 3:2, 1].
        fn pinned<R: Copy + PartialEq + core::fmt::Debug>(
            ftype: u32,
            make: impl Fn([u16; 6]) -> R,
            field: impl Fn(R) -> ControlField,
            from_word: impl Fn(u32) -> R,
        ) {
            let widest =
                [(3, 0b11 << 26), (0x7FF, 0x7FF << 15), (1, 1 << 14), (0x3FF, 0x3FF << 4), (3, 0b11 << 2), (1, 1 << 1)];
            for (k, (v, bits)) in widest.into_iter().enumerate() {
                let mut values = [0u16; 6];
                values[k] = v;
                let r = make(values);
                let w = ftype << 28 | bits;
                // LEN alone on a write response is a bit the table leaves open: sent as zero,
                // ignored on receive.
                let open = ControlField::check_reserved(u128::from(w), 1).is_err();
                assert_eq!(field(r).to_word(), Ok(u128::from(if open { ftype << 28 } else { w })), "{r:?}");
                assert_eq!(from_word(w), if open { make([0; 6]) } else { r });
            }
        }
        pinned(
            0x4,
            |[vc, tag, pool, dst, offset, last]| CompressedReadResponse {
                vc: vc as u8,
                tag,
                pool: pool == 1,
                dst,
                offset: offset as u8,
                last: last == 1,
            },
            ControlField::CompressedReadResponse,
            CompressedReadResponse::from_word,
        );
        pinned(
            0x5,
            |[vc, tag, pool, dst, len, read]| CompressedResponse {
                vc: vc as u8,
                tag,
                pool: pool == 1,
                dst,
                len: len as u8,
                read: read == 1,
            },
            ControlField::CompressedResponse,
            CompressedResponse::from_word,
        );
        let (ftype4, ftype5) = (0x4u32 << 28, 0x5u32 << 28);
        // SPARE (bit 0) is ignored in both response forms, and LEN of a write response; the
        // strict check names them.
        assert_eq!(CompressedReadResponse::from_word(ftype4 | 1), CompressedReadResponse::from_word(ftype4));
        assert_eq!(CompressedResponse::from_word(ftype5 | 1 | 0b11 << 2), CompressedResponse::from_word(ftype5));
        for (w, field) in [
            (ftype4 | 1, "compressed read response SPARE"),
            (ftype5 | 1, "compressed response SPARE"),
            (ftype5 | 0b01 << 2, "LEN of a compressed write response"),
        ] {
            assert_eq!(ControlField::check_reserved(u128::from(w), 1), Err(Error::Reserved { field }));
        }
        assert_eq!(ControlField::check_reserved(u128::from(ftype5 | 1 << 1 | 0b11 << 2), 1), Ok(()), "a read's LEN");
    }

    #[test]
    fn reserved_types_and_commands_are_refused() {
        assert_eq!(ControlField::from_word(0x6 << 28, 1), Err(Error::BadValue { field: "FTYPE", value: 6 }));
        // A 2-sector type in a 1-sector slot.
        assert_eq!(ControlField::from_word(0x2 << 28, 1), Err(Error::BadValue { field: "FTYPE", value: 2 }));
        assert_eq!(
            ControlField::from_word(0x3 << 60 | 0b001 << 57, 2),
            Err(Error::BadValue { field: "compressed CMD", value: 1 })
        );
    }

    /// Whatever a field value holds where the tables leave the bits open, `to_word` writes zeros
    /// there: a write response's LEN, OFFSET and LAST (Tables 5-30, 5-36), a multi-beat read
    /// response's OFFSET, and NUMBEATS of a command without data (Table 2-2).
    #[test]
    fn open_bits_go_out_as_zero() {
        for (read, len, offset, last) in (0..32u8).map(|k| (k & 1 != 0, k >> 1 & 3, k >> 3 & 3, k & 2 != 0)) {
            let u =
                UncompressedResponse { vc: 1, tag: 9, pool: false, len, offset, status: 0, read, last, src: 1, dst: 2 };
            let w = ControlField::UncompressedResponse(u).to_word().unwrap();
            assert_eq!(ControlField::check_reserved(w, 2), Ok(()), "{u:?}");
            let c = CompressedResponse { vc: 1, tag: 9, pool: false, dst: 2, len, read };
            let w = ControlField::CompressedResponse(c).to_word().unwrap();
            assert_eq!(ControlField::check_reserved(w, 1), Ok(()), "{c:?}");
        }
        let read = UncompressedRequest {
            cmd: crate::upli::Command::Read.code(),
            vc: 0,
            asi: 0,
            tag: 1,
            pool: false,
            attr: 0,
            len: 63,
            metadata: 0,
            addr: 0x1000,
            src: 1,
            dst: 2,
            cache_load: None,
            num_beats: 3,
        };
        let w = ControlField::UncompressedRequest(read).to_word().unwrap();
        assert_eq!(ControlField::check_reserved(w, 4), Ok(()));
        assert_eq!(uq::NUMBEATS.get(w), 0);
    }

    proptest! {
        /// A compressed request read from its bits always fits them: the receiver's shortcut may
        /// skip `check`.
        #[test]
        fn compressed_requests_read_from_bits_fit(w in any::<u64>()) {
            let w = w & !(0xF << 60) | 0x3 << 60;
            if let Ok(c) = CompressedRequest::from_word(w) {
                prop_assert_eq!(c.check(), Ok(()));
                prop_assert_eq!(c.word(), w);
            }
        }

        /// Every value that decodes re-encodes to itself with the bits the tables leave open
        /// cleared: to itself exactly when the strict check finds none.
        #[test]
        fn accepted_words_re_encode(w in any::<u128>(), s in prop_oneof![Just(1u8), Just(2), Just(4)]) {
            let bits = 32 * u32::from(s);
            let w = if bits < 128 { w & ((1 << bits) - 1) } else { w };
            // Bias toward defined types: set FTYPE from the low nibble.
            let t = (w & 0x7) % 6;
            let w = (w & !(0xF << (bits - 4))) | t << (bits - 4);
            if let Ok(f) = ControlField::from_word(w, s) {
                prop_assert_eq!(f.sectors(), s);
                let again = f.to_word().unwrap();
                prop_assert_eq!(ControlField::from_word(again, s), Ok(f));
                prop_assert_eq!(ControlField::check_reserved(again, s), Ok(()));
                prop_assert_eq!(again == w, ControlField::check_reserved(w, s).is_ok());
                // Only open bits were cleared.
                prop_assert_eq!(again & !w, 0);
            }
        }
    }
}
