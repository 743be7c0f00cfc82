//! TL control-half-flit fields (UALink 1.0 §5.9, Tables 5-27 … 5-38; digest
//! `shared/spec/ualink-ethx.md` §1.3): the flow-control/NOP field, the uncompressed and
//! compressed requests, and the three response forms. Every field carries its type (FTYPE) in its
//! top four bits.
//!
//! *Project-defined* (open question 1): a field is a little-endian value over its sectors: bit 0
//! is bit 0 of the lowest byte of its lowest sector, so FTYPE sits in the high nibble of the last
//! byte of the field's highest sector. The SPARE bits of the response fields are emitted as zero
//! and refused when set, like every reserved bit.

use crate::Error;
use crate::error::fits;

/// Bits `lo .. lo + n` of `w`.
const fn get(w: u128, lo: u32, n: u32) -> u64 {
    (w >> lo) as u64 & ((1u64 << n) - 1)
}

/// The low `n` bits of `v`, placed at bit `at`.
const fn bits(v: u64, n: u32, at: u32) -> u64 {
    (v & ((1 << n) - 1)) << at
}

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

/// Where returned credits go. On the wire `t` = 0 means the pool and `t` = 1 a VC: the opposite
/// sense to the POOL bit of requests and responses (digest §1.3, open question 17).
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

impl CreditReturn {
    /// No credits, to the pool: the all-zero slot.
    pub const NONE: Self = CreditReturn { target: CreditTarget::Pool, credits: 0 };

    /// `tvv` followed by `count_bits` of credits.
    fn encode(self, count_bits: u32, field: &'static str) -> Result<u64, Error> {
        let (t, vv) = match self.target {
            CreditTarget::Pool => (0, 0),
            CreditTarget::Vc(v) => (1, fits(u64::from(v), 2, "FC VC")?),
        };
        let c = fits(u64::from(self.credits), count_bits, field)?;
        Ok(t << (count_bits + 2) | vv << count_bits | c)
    }

    fn decode(v: u64, count_bits: u32) -> Result<Self, Error> {
        let credits = (v & ((1 << count_bits) - 1)) as u8;
        let vv = (v >> count_bits & 0b11) as u8;
        let target = if v >> (count_bits + 2) & 1 == 1 {
            CreditTarget::Vc(vv)
        } else if vv != 0 {
            return Err(Error::Reserved { field: "FC vv with t = 0 (pool)" });
        } else {
            CreditTarget::Pool
        };
        Ok(CreditReturn { target, credits })
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
    /// A read response (true; AtomicR included) or a write response (open question 13).
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
        (ftype::COMPRESSED_REQUEST as u64) << 60
            | cmd << 57
            | bits(self.vc as u64, 2, 55)
            | bits(self.asi as u64, 2, 53)
            | bits(self.tag as u64, 11, 42)
            | (self.pool as u64) << 41
            | bits(self.len as u64, 2, 39)
            | bits(self.metadata as u64, 3, 36)
            | bits(self.addr_block as u64, 14, 22)
            | bits(self.src as u64, 10, 12)
            | bits(self.dst as u64, 10, 2)
            | bits(self.way as u64, 2, 0)
    }

    /// Reads the field from its 2-sector value, FTYPE included (the caller has seen that FTYPE
    /// is [`ftype::COMPRESSED_REQUEST`]). Every value read this way fits its bits.
    pub(crate) fn from_word(w: u64) -> Result<Self, Error> {
        let g = |lo: u32, n: u32| w >> lo & ((1 << n) - 1);
        Ok(CompressedRequest {
            cmd: match g(57, 3) {
                0b000 => CompressedCmd::Read,
                0b100 => CompressedCmd::Write,
                0b110 => CompressedCmd::WriteFull,
                c => return Err(Error::BadValue { field: "compressed CMD", value: c as u32 }),
            },
            vc: g(55, 2) as u8,
            asi: g(53, 2) as u8,
            tag: g(42, 11) as u16,
            pool: w >> 41 & 1 != 0,
            len: g(39, 2) as u8,
            metadata: g(36, 3) as u8,
            addr_block: g(22, 14) as u16,
            src: g(12, 10) as u16,
            dst: g(2, 10) as u16,
            way: g(0, 2) as u8,
        })
    }

    /// Checks that every value fits its bits (a field read off the wire always does).
    pub fn check(&self) -> Result<(), Error> {
        fits(u64::from(self.vc), 2, "VCHAN")?;
        fits(u64::from(self.asi), 2, "ASI")?;
        fits(u64::from(self.tag), 11, "TAG")?;
        fits(u64::from(self.len), 2, "LEN")?;
        fits(u64::from(self.metadata), 3, "METADATA")?;
        fits(u64::from(self.addr_block), 14, "ADDR")?;
        fits(u64::from(self.src), 10, "SRCACCID")?;
        fits(u64::from(self.dst), 10, "DSTACCID")?;
        fits(u64::from(self.way), 2, "CWAY")?;
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

/// The bits both compressed responses share (Tables 5-34, 5-36): VCHAN 27:26, TAG 25:15,
/// POOL 14, DSTACCID 13:4, a 2-bit value at 3:2 (OFFSET or LEN), a flag at 1 (LAST or RD/WR) and
/// SPARE at 0, refused when set.
struct ResponseBits {
    vc: u8,
    tag: u16,
    pool: bool,
    dst: u16,
    two: u8,
    flag: bool,
}

impl ResponseBits {
    fn read(w: u32, spare: &'static str) -> Result<Self, Error> {
        if w & 1 != 0 {
            return Err(Error::Reserved { field: spare });
        }
        Ok(ResponseBits {
            vc: (w >> 26 & 0b11) as u8,
            tag: (w >> 15 & 0x7FF) as u16,
            pool: w >> 14 & 1 != 0,
            dst: (w >> 4 & 0x3FF) as u16,
            two: (w >> 2 & 0b11) as u8,
            flag: w >> 1 & 1 != 0,
        })
    }
}

impl CompressedReadResponse {
    /// Reads the field from its 1-sector value (FTYPE 0x4 on top, which the caller has seen).
    pub(crate) fn from_word(w: u32) -> Result<Self, Error> {
        let b = ResponseBits::read(w, "compressed read response SPARE")?;
        Ok(CompressedReadResponse { vc: b.vc, tag: b.tag, pool: b.pool, dst: b.dst, offset: b.two, last: b.flag })
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
    /// Reads the field from its 1-sector value (FTYPE 0x5 on top, which the caller has seen).
    pub(crate) fn from_word(w: u32) -> Result<Self, Error> {
        let b = ResponseBits::read(w, "compressed response SPARE")?;
        Ok(CompressedResponse { vc: b.vc, tag: b.tag, pool: b.pool, dst: b.dst, len: b.two, read: b.flag })
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

    /// The field as a little-endian value of `32 · sectors()` bits, FTYPE on top.
    pub fn to_word(&self) -> Result<u128, Error> {
        let bits = 32 * u32::from(self.sectors());
        let top = u128::from(self.ftype()) << (bits - 4);
        let pool = |p: bool| u64::from(p);
        // Every field but the uncompressed request fits in 64 bits, so it is built in a `u64` and
        // widened once.
        Ok(top
            | match *self {
                ControlField::FlowControl(f) => u128::from(
                    f.req_cmd.encode(3, "FC ReqCmd credits")? << 22
                        | f.rsp_cmd.encode(3, "FC RspCmd credits")? << 16
                        | f.req_data.encode(5, "FC ReqData credits")? << 8
                        | f.rsp_data.encode(5, "FC RspData credits")?,
                ),
                ControlField::UncompressedRequest(r) => {
                    if r.addr & 0b11 != 0 {
                        return Err(Error::BadValue {
                            field: "ReqAddr (not DWord aligned)",
                            value: (r.addr & 0b11) as u32,
                        });
                    }
                    let w = u128::from;
                    let (cload, cway) = match r.cache_load {
                        Some(way) => (1, fits(u64::from(way), 2, "CWAY")?),
                        None => (0, 0),
                    };
                    w(fits(u64::from(r.cmd), 6, "CMD")?) << 118
                        | w(fits(u64::from(r.vc), 2, "VCHAN")?) << 116
                        | w(fits(u64::from(r.asi), 2, "ASI")?) << 114
                        | w(fits(u64::from(r.tag), 11, "TAG")?) << 103
                        | w(pool(r.pool)) << 102
                        | u128::from(r.attr) << 94
                        | w(fits(u64::from(r.len), 6, "LEN")?) << 88
                        | u128::from(r.metadata) << 80
                        | w(fits(r.addr >> 2, 55, "ReqAddr")?) << 25
                        | w(fits(u64::from(r.src), 10, "SRCACCID")?) << 15
                        | w(fits(u64::from(r.dst), 10, "DSTACCID")?) << 5
                        | w(cload) << 4
                        | w(cway) << 2
                        | w(fits(u64::from(r.num_beats), 2, "NUMBEATS")?)
                }
                ControlField::UncompressedResponse(r) => u128::from(
                    fits(u64::from(r.vc), 2, "VCHAN")? << 58
                        | fits(u64::from(r.tag), 11, "TAG")? << 47
                        | pool(r.pool) << 46
                        | fits(u64::from(r.len), 2, "LEN")? << 44
                        | fits(u64::from(r.offset), 2, "OFFSET")? << 42
                        | fits(u64::from(r.status), 4, "STATUS")? << 38
                        | u64::from(r.read) << 37
                        | u64::from(r.last) << 36
                        | fits(u64::from(r.src), 10, "SRCACCID")? << 26
                        | fits(u64::from(r.dst), 10, "DSTACCID")? << 16,
                ),
                ControlField::CompressedRequest(r) => {
                    // `word` carries FTYPE too (the same bits as `top`).
                    r.check()?;
                    u128::from(r.word())
                }
                ControlField::CompressedReadResponse(r) => u128::from(
                    fits(u64::from(r.vc), 2, "VCHAN")? << 26
                        | fits(u64::from(r.tag), 11, "TAG")? << 15
                        | pool(r.pool) << 14
                        | fits(u64::from(r.dst), 10, "DSTACCID")? << 4
                        | fits(u64::from(r.offset), 2, "OFFSET")? << 2
                        | u64::from(r.last) << 1,
                ),
                ControlField::CompressedResponse(r) => u128::from(
                    fits(u64::from(r.vc), 2, "VCHAN")? << 26
                        | fits(u64::from(r.tag), 11, "TAG")? << 15
                        | pool(r.pool) << 14
                        | fits(u64::from(r.dst), 10, "DSTACCID")? << 4
                        | fits(u64::from(r.len), 2, "LEN")? << 2
                        | u64::from(r.read) << 1,
                ),
            })
    }

    /// Decodes a field of `sectors` sectors from its little-endian value (FTYPE on top).
    pub fn from_word(w: u128, sectors: u8) -> Result<Self, Error> {
        let bits = 32 * u32::from(sectors);
        if !matches!(sectors, 1 | 2 | 4) || (bits < 128 && w >> bits != 0) {
            return Err(Error::BadValue { field: "control field sectors", value: u32::from(sectors) });
        }
        let t = get(w, bits - 4, 4) as u8;
        if ftype::sectors(t) != Some(sectors) {
            return Err(Error::BadValue { field: "FTYPE", value: u32::from(t) });
        }
        let flag = |b: u32| w >> b & 1 != 0;
        let g = |lo: u32, n: u32| get(w, lo, n);
        Ok(match t {
            ftype::FLOW_CONTROL => ControlField::FlowControl(FlowControl {
                req_cmd: CreditReturn::decode(g(22, 6), 3)?,
                rsp_cmd: CreditReturn::decode(g(16, 6), 3)?,
                req_data: CreditReturn::decode(g(8, 8), 5)?,
                rsp_data: CreditReturn::decode(g(0, 8), 5)?,
            }),
            ftype::UNCOMPRESSED_REQUEST => ControlField::UncompressedRequest(UncompressedRequest {
                cmd: g(118, 6) as u8,
                vc: g(116, 2) as u8,
                asi: g(114, 2) as u8,
                tag: g(103, 11) as u16,
                pool: flag(102),
                attr: g(94, 8) as u8,
                len: g(88, 6) as u8,
                metadata: g(80, 8) as u8,
                addr: g(25, 55) << 2,
                src: g(15, 10) as u16,
                dst: g(5, 10) as u16,
                cache_load: if flag(4) {
                    Some(g(2, 2) as u8)
                } else if g(2, 2) != 0 {
                    return Err(Error::Reserved { field: "CWAY without CLOAD" });
                } else {
                    None
                },
                num_beats: g(0, 2) as u8,
            }),
            ftype::UNCOMPRESSED_RESPONSE => {
                if g(0, 16) != 0 {
                    return Err(Error::Reserved { field: "uncompressed response SPARE" });
                }
                ControlField::UncompressedResponse(UncompressedResponse {
                    vc: g(58, 2) as u8,
                    tag: g(47, 11) as u16,
                    pool: flag(46),
                    len: g(44, 2) as u8,
                    offset: g(42, 2) as u8,
                    status: g(38, 4) as u8,
                    read: flag(37),
                    last: flag(36),
                    src: g(26, 10) as u16,
                    dst: g(16, 10) as u16,
                })
            }
            ftype::COMPRESSED_REQUEST => ControlField::CompressedRequest(CompressedRequest::from_word(w as u64)?),
            ftype::COMPRESSED_READ_RESPONSE => {
                ControlField::CompressedReadResponse(CompressedReadResponse::from_word(w as u32)?)
            }
            _ => ControlField::CompressedResponse(CompressedResponse::from_word(w as u32)?),
        })
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
        assert_eq!(ControlField::from_word(0b01 << 5, 1), Err(Error::Reserved { field: "FC vv with t = 0 (pool)" }));
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
        // CWAY without CLOAD is refused.
        assert_eq!(
            ControlField::from_word(0x1 << 124 | 0b01 << 2, 4),
            Err(Error::Reserved { field: "CWAY without CLOAD" })
        );
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
            from_word: impl Fn(u32) -> Result<R, Error>,
        ) {
            let widest =
                [(3, 0b11 << 26), (0x7FF, 0x7FF << 15), (1, 1 << 14), (0x3FF, 0x3FF << 4), (3, 0b11 << 2), (1, 1 << 1)];
            for (k, (v, bits)) in widest.into_iter().enumerate() {
                let mut values = [0u16; 6];
                values[k] = v;
                let r = make(values);
                let w = ftype << 28 | bits;
                assert_eq!(field(r).to_word(), Ok(u128::from(w)), "{r:?}");
                assert_eq!(from_word(w), Ok(r));
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
        // SPARE (bit 0) is refused in both response forms.
        assert!(CompressedReadResponse::from_word(ftype4 | 1).is_err());
        assert!(CompressedResponse::from_word(ftype5 | 1).is_err());
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

        /// Every value that decodes re-encodes to itself, for every size.
        #[test]
        fn accepted_words_re_encode(w in any::<u128>(), s in prop_oneof![Just(1u8), Just(2), Just(4)]) {
            let bits = 32 * u32::from(s);
            let w = if bits < 128 { w & ((1 << bits) - 1) } else { w };
            // Bias toward defined types: set FTYPE from the low nibble.
            let t = (w & 0x7) % 6;
            let w = (w & !(0xF << (bits - 4))) | t << (bits - 4);
            if let Ok(f) = ControlField::from_word(w, s) {
                prop_assert_eq!(f.sectors(), s);
                prop_assert_eq!(f.to_word(), Ok(w));
            }
        }
    }
}
