//! Sideband packets (UCIe 2.0 §7.1): register access requests, completions and messages, with
//! and without data, and the messages the adapter speaks (Tables 7-8 and 7-10).
//!
//! A packet is a 64-bit header, sent as two 32-bit phases (phase 0 = header bits 31:0, bit 0
//! first), and, for opcodes with data, a 64-bit data phase. In bytes ([`Packet::emit`],
//! [`Packet::parse`]) the header is little-endian at bytes 0–7 and the data at bytes 8–15, so
//! byte 0 bit 0 is the first bit on the wire. Header fields (Figures 7-1 to 7-4; [`field`]):
//!
//! | bits | register access request | completion | message |
//! |---|---|---|---|
//! | 4:0 | opcode | opcode | opcode |
//! | 5 | EP (poisoned data) | EP | reserved |
//! | 21:14 | byte enables BE\[7:0\] | BE\[7:0\] | MsgCode |
//! | 26:22 | Tag | Tag | reserved |
//! | 31:29 | srcid | srcid | srcid |
//! | 55:32 | Addr\[23:0\] | 34:32 Status | 39:32 MsgSubcode, 55:40 MsgInfo |
//! | 58:56 | dstid | dstid | dstid |
//! | 61 | Cr (credit return) | Cr | reserved |
//! | 62 | CP: even parity over header bits 0–61 | CP | CP |
//! | 63 | DP: even parity over the data (0 without data) | DP | DP |
//!
//! Reserved bits are sent as zero and ignored on receive, as are the reserved address bits of
//! register requests (Addr\[1:0\] and BE\[7:4\] of 32-bit accesses, Addr\[2:0\] of 64-bit ones)
//! and the upper half of 32-bit data. A header or data parity error, an unknown opcode and a
//! short packet are [`SidebandError`]s. A message with an unknown or PHY-owned code decodes as
//! [`Message::Other`], so the adapter can ignore it and keep going.
//!
//! *Project-defined:* management port messages (opcodes 10111b, 11000b) are kept as opaque
//! headers ([`Packet::Mpm`]): the adapter relays them without reading their fields.

use linklayer::bits::WordField;

/// The header fields, as `[hi:lo]` of the 64-bit header.
pub mod field {
    use super::WordField as F;
    /// Opcode.
    pub const OPCODE: F = F::bits(4, 0);
    /// Data poisoned (requests and completions).
    pub const EP: F = F::bit(5);
    /// Byte enables (requests and completions).
    pub const BE: F = F::bits(21, 14);
    /// Message code (messages).
    pub const MSG_CODE: F = F::bits(21, 14);
    /// Tag (requests and completions).
    pub const TAG: F = F::bits(26, 22);
    /// Source.
    pub const SRCID: F = F::bits(31, 29);
    /// Address (requests).
    pub const ADDR: F = F::bits(55, 32);
    /// Completion status.
    pub const STATUS: F = F::bits(34, 32);
    /// Message subcode.
    pub const MSG_SUBCODE: F = F::bits(39, 32);
    /// Message info.
    pub const MSG_INFO: F = F::bits(55, 40);
    /// Destination.
    pub const DSTID: F = F::bits(58, 56);
    /// End-to-end credit return (requests and completions).
    pub const CR: F = F::bit(61);
    /// Header parity.
    pub const CP: F = F::bit(62);
    /// Data parity.
    pub const DP: F = F::bit(63);
}

/// Bytes of a packet header.
pub const HEADER_LEN: usize = 8;
/// Bytes of a packet with data.
pub const DATA_PACKET_LEN: usize = 16;

/// `srcid` of the stack 0 protocol layer (Table 7-2).
pub const SRC_STACK0: u8 = 0b000;
/// `srcid` of the stack 1 protocol layer.
pub const SRC_STACK1: u8 = 0b100;
/// `srcid` of the D2D adapter.
pub const SRC_ADAPTER: u8 = 0b001;
/// `srcid` of the physical layer.
pub const SRC_PHY: u8 = 0b010;
/// `srcid` of the management port gateway.
pub const SRC_MPG: u8 = 0b011;
/// `dstid` of the remote die's D2D adapter (Tables 7-3, 7-4; bit 2 set: remote).
pub const DST_REMOTE_ADAPTER: u8 = 0b101;
/// `dstid` of the remote die's physical layer.
pub const DST_REMOTE_PHY: u8 = 0b110;
/// `dstid` of the remote die's management port gateway.
pub const DST_REMOTE_MPG: u8 = 0b111;

/// Why a sideband packet cannot be read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SidebandError {
    /// Fewer bytes than the opcode needs, or an output buffer too small.
    Length {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// An opcode Table 7-1 does not define.
    UnknownOpcode(u8),
    /// The header's bits 0–62 have odd parity.
    HeaderParity,
    /// DP does not match the data.
    DataParity,
    /// A field's value does not fit it.
    FieldRange {
        /// The field.
        field: &'static str,
    },
}

impl core::fmt::Display for SidebandError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SidebandError::Length { needed, got } => write!(f, "sideband packet needs {needed} bytes, got {got}"),
            SidebandError::UnknownOpcode(op) => write!(f, "unknown sideband opcode {op:#07b}"),
            SidebandError::HeaderParity => f.write_str("sideband header parity error"),
            SidebandError::DataParity => f.write_str("sideband data parity error"),
            SidebandError::FieldRange { field } => write!(f, "sideband field {field} out of range"),
        }
    }
}

impl core::error::Error for SidebandError {}

/// A register access (Table 7-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Access {
    /// Memory read.
    MemRead,
    /// Memory write.
    MemWrite,
    /// DMS register read.
    DmsRead,
    /// DMS register write.
    DmsWrite,
    /// Configuration read.
    CfgRead,
    /// Configuration write.
    CfgWrite,
}

impl Access {
    const fn index(self) -> u8 {
        match self {
            Access::MemRead => 0,
            Access::MemWrite => 1,
            Access::DmsRead => 2,
            Access::DmsWrite => 3,
            Access::CfgRead => 4,
            Access::CfgWrite => 5,
        }
    }

    /// Whether the access carries data.
    pub const fn is_write(self) -> bool {
        self.index() & 1 == 1
    }
}

/// Completion status (Table 7-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CplStatus {
    /// 000b: successful completion.
    Success,
    /// 001b: unsupported request (the data is the request's header).
    Unsupported,
    /// 100b: completer abort.
    Abort,
    /// 111b: stall; resets the requester's timeout (sent every 4 ms).
    Stall,
    /// Another value, kept.
    Reserved(u8),
}

impl CplStatus {
    const fn code(self) -> u8 {
        match self {
            CplStatus::Success => 0b000,
            CplStatus::Unsupported => 0b001,
            CplStatus::Abort => 0b100,
            CplStatus::Stall => 0b111,
            CplStatus::Reserved(v) => v,
        }
    }

    const fn from_code(v: u8) -> CplStatus {
        match v {
            0b000 => CplStatus::Success,
            0b001 => CplStatus::Unsupported,
            0b100 => CplStatus::Abort,
            0b111 => CplStatus::Stall,
            v => CplStatus::Reserved(v),
        }
    }
}

/// A completion's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CplData {
    /// Opcode 10000b: no data.
    None,
    /// Opcode 10001b: 32 bits.
    D32(u32),
    /// Opcode 11001b: 64 bits.
    D64(u64),
}

/// Addressing and flow-control fields every request and completion carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Route {
    /// Source (3 bits).
    pub srcid: u8,
    /// Destination (3 bits).
    pub dstid: u8,
    /// Tag (5 bits), unique per outstanding request.
    pub tag: u8,
    /// Byte enables.
    pub be: u8,
    /// Poisoned data.
    pub ep: bool,
    /// End-to-end credit return.
    pub cr: bool,
}

/// One sideband packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Packet {
    /// A register access request.
    Request {
        /// What kind.
        access: Access,
        /// A 64-bit access (else 32-bit).
        wide: bool,
        /// Route, tag, byte enables, EP, Cr.
        route: Route,
        /// Addr\[23:0\] (`{RL[3:0], offset}`).
        addr: u32,
        /// Write data (ignored for reads; the upper half of a 32-bit write is not sent).
        data: u64,
    },
    /// A completion.
    Completion {
        /// Route, tag, byte enables, EP, Cr.
        route: Route,
        /// Status.
        status: CplStatus,
        /// Data.
        data: CplData,
    },
    /// A message, with or without 64 bits of data.
    Message(MessagePacket),
    /// A management port message (kept opaque).
    Mpm {
        /// The header with parity bits cleared.
        header: u64,
        /// The data, for opcode 11000b.
        data: Option<u64>,
    },
}

/// A message's raw fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct MessagePacket {
    /// Source.
    pub srcid: u8,
    /// Destination.
    pub dstid: u8,
    /// MsgCode.
    pub code: u8,
    /// MsgSubcode.
    pub subcode: u8,
    /// MsgInfo.
    pub info: u16,
    /// Data (opcode 11011b), if any.
    pub data: Option<u64>,
}

const OP_CPL: u8 = 0b10000;
const OP_CPL32: u8 = 0b10001;
const OP_MSG: u8 = 0b10010;
const OP_MPM: u8 = 0b10111;
const OP_MPM_DATA: u8 = 0b11000;
const OP_CPL64: u8 = 0b11001;
const OP_MSG_DATA: u8 = 0b11011;

const fn parity(v: u64) -> u64 {
    (v.count_ones() & 1) as u64
}

fn put(h: &mut u64, f: WordField, v: u64, name: &'static str) -> Result<(), SidebandError> {
    if !f.fits(v) {
        return Err(SidebandError::FieldRange { field: name });
    }
    *h |= f.place(v) as u64;
    Ok(())
}

fn get(h: u64, f: WordField) -> u64 {
    f.get(u128::from(h))
}

impl Packet {
    /// The opcode (Table 7-1).
    pub const fn opcode(&self) -> u8 {
        match self {
            Packet::Request { access, wide, .. } => (*wide as u8) << 3 | access.index(),
            Packet::Completion { data: CplData::None, .. } => OP_CPL,
            Packet::Completion { data: CplData::D32(_), .. } => OP_CPL32,
            Packet::Completion { data: CplData::D64(_), .. } => OP_CPL64,
            Packet::Message(MessagePacket { data: None, .. }) => OP_MSG,
            Packet::Message(MessagePacket { data: Some(_), .. }) => OP_MSG_DATA,
            Packet::Mpm { data: None, .. } => OP_MPM,
            Packet::Mpm { data: Some(_), .. } => OP_MPM_DATA,
        }
    }

    /// Bytes on the wire: 8, or 16 with data.
    pub const fn len(&self) -> usize {
        if Self::has_data(self.opcode()) { DATA_PACKET_LEN } else { HEADER_LEN }
    }

    /// Never empty: a packet is at least a header.
    pub const fn is_empty(&self) -> bool {
        false
    }

    const fn has_data(opcode: u8) -> bool {
        match opcode {
            0b00000..=0b01101 => opcode & 1 == 1,
            OP_CPL32 | OP_CPL64 | OP_MSG_DATA | OP_MPM_DATA => true,
            _ => false,
        }
    }

    fn route_bits(h: &mut u64, r: &Route) -> Result<(), SidebandError> {
        put(h, field::TAG, r.tag.into(), "tag")?;
        put(h, field::BE, r.be.into(), "BE")?;
        put(h, field::EP, r.ep.into(), "EP")?;
        put(h, field::CR, r.cr.into(), "Cr")
    }

    /// The header (parity bits set) and data, if any.
    pub fn encode(&self) -> Result<(u64, Option<u64>), SidebandError> {
        let mut h = 0u64;
        put(&mut h, field::OPCODE, self.opcode().into(), "opcode")?;
        let (srcid, dstid, data) = match self {
            Packet::Request { access, wide, route, addr, data } => {
                Self::route_bits(&mut h, route)?;
                // 32-bit accesses: Addr[1:0] and BE[7:4] reserved; 64-bit: Addr[2:0].
                let (addr_rsvd, be_mask) = if *wide { (0b111, 0xFFu64) } else { (0b11, 0x0F) };
                h &= !(field::BE.place(!be_mask & 0xFF) as u64);
                put(&mut h, field::ADDR, u64::from(*addr), "Addr")?;
                h &= !(field::ADDR.place(addr_rsvd) as u64);
                let data = access.is_write().then_some(if *wide { *data } else { *data & 0xFFFF_FFFF });
                (route.srcid, route.dstid, data)
            }
            Packet::Completion { route, status, data } => {
                Self::route_bits(&mut h, route)?;
                put(&mut h, field::STATUS, status.code().into(), "Status")?;
                let data = match data {
                    CplData::None => None,
                    CplData::D32(d) => Some(u64::from(*d)),
                    CplData::D64(d) => Some(*d),
                };
                (route.srcid, route.dstid, data)
            }
            Packet::Message(m) => {
                put(&mut h, field::MSG_CODE, m.code.into(), "MsgCode")?;
                put(&mut h, field::MSG_SUBCODE, m.subcode.into(), "MsgSubcode")?;
                put(&mut h, field::MSG_INFO, m.info.into(), "MsgInfo")?;
                (m.srcid, m.dstid, m.data)
            }
            Packet::Mpm { header, data } => {
                h |= header & !(field::OPCODE.mask() | field::CP.mask() | field::DP.mask()) as u64;
                (get(*header, field::SRCID) as u8, get(*header, field::DSTID) as u8, *data)
            }
        };
        h &= !(field::SRCID.mask() | field::DSTID.mask()) as u64;
        put(&mut h, field::SRCID, srcid.into(), "srcid")?;
        put(&mut h, field::DSTID, dstid.into(), "dstid")?;
        if let Some(d) = data {
            h |= field::DP.place(parity(d)) as u64;
        }
        h |= field::CP.place(parity(h & !(field::DP.mask() as u64))) as u64;
        Ok((h, data))
    }

    /// Writes the packet into `out` and returns its length.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, SidebandError> {
        let (h, data) = self.encode()?;
        let len = self.len();
        let got = out.len();
        let dst = out.get_mut(..len).ok_or(SidebandError::Length { needed: len, got })?;
        let (hdr, rest) = dst.split_at_mut(HEADER_LEN.min(len));
        hdr.copy_from_slice(&h.to_le_bytes());
        if let Some(d) = data {
            rest.copy_from_slice(&d.to_le_bytes());
        }
        Ok(len)
    }

    /// Reads a packet from a header and its data (`None` for opcodes without data).
    pub fn decode(h: u64, data: Option<u64>) -> Result<Packet, SidebandError> {
        let opcode = get(h, field::OPCODE) as u8;
        if parity(h & !(field::DP.mask() as u64)) != 0 {
            return Err(SidebandError::HeaderParity);
        }
        let d = match (Self::has_data(opcode), data) {
            (true, Some(d)) => {
                if parity(d) != get(h, field::DP) {
                    return Err(SidebandError::DataParity);
                }
                Some(d)
            }
            (true, None) => return Err(SidebandError::Length { needed: DATA_PACKET_LEN, got: HEADER_LEN }),
            (false, _) => None,
        };
        let srcid = get(h, field::SRCID) as u8;
        let dstid = get(h, field::DSTID) as u8;
        let route = Route {
            srcid,
            dstid,
            tag: get(h, field::TAG) as u8,
            be: get(h, field::BE) as u8,
            ep: get(h, field::EP) == 1,
            cr: get(h, field::CR) == 1,
        };
        let packet = match opcode {
            0b00000..=0b00101 | 0b01000..=0b01101 => {
                let wide = opcode & 0b1000 != 0;
                let access = match opcode & 0b111 {
                    0 => Access::MemRead,
                    1 => Access::MemWrite,
                    2 => Access::DmsRead,
                    3 => Access::DmsWrite,
                    4 => Access::CfgRead,
                    _ => Access::CfgWrite,
                };
                let (addr_rsvd, be) = if wide { (0b111, route.be) } else { (0b11, route.be & 0x0F) };
                let mask = if wide { u64::MAX } else { 0xFFFF_FFFF };
                Packet::Request {
                    access,
                    wide,
                    route: Route { be, ..route },
                    addr: (get(h, field::ADDR) & !addr_rsvd) as u32,
                    data: d.unwrap_or(0) & mask,
                }
            }
            OP_CPL | OP_CPL32 | OP_CPL64 => Packet::Completion {
                route,
                status: CplStatus::from_code(get(h, field::STATUS) as u8),
                data: match (opcode, d) {
                    (OP_CPL32, Some(d)) => CplData::D32(d as u32),
                    (OP_CPL64, Some(d)) => CplData::D64(d),
                    _ => CplData::None,
                },
            },
            OP_MSG | OP_MSG_DATA => Packet::Message(MessagePacket {
                srcid,
                dstid,
                code: get(h, field::MSG_CODE) as u8,
                subcode: get(h, field::MSG_SUBCODE) as u8,
                info: get(h, field::MSG_INFO) as u16,
                data: d,
            }),
            OP_MPM | OP_MPM_DATA => Packet::Mpm { header: h & !(field::CP.mask() | field::DP.mask()) as u64, data: d },
            other => return Err(SidebandError::UnknownOpcode(other)),
        };
        Ok(packet)
    }

    /// Reads a packet from the start of `bytes`; returns it and its length. (Eight zero bytes
    /// are a well-formed packet: a 32-bit memory read of address 0 with tag 0.)
    pub fn parse(bytes: &[u8]) -> Result<(Packet, usize), SidebandError> {
        let short = |needed| SidebandError::Length { needed, got: bytes.len() };
        let h = u64::from_le_bytes(*bytes.first_chunk::<HEADER_LEN>().ok_or(short(HEADER_LEN))?);
        let with_data = Self::has_data(get(h, field::OPCODE) as u8);
        let data = if with_data {
            let d = bytes.get(HEADER_LEN..).and_then(|b| b.first_chunk::<8>()).ok_or(short(DATA_PACKET_LEN))?;
            Some(u64::from_le_bytes(*d))
        } else {
            None
        };
        let p = Self::decode(h, data)?;
        Ok((p, if with_data { DATA_PACKET_LEN } else { HEADER_LEN }))
    }
}

/// Which link state machine a link-management message is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LinkTarget {
    /// The RDI state machine (MsgCode 01h/02h).
    Rdi,
    /// Stack 0's adapter LSM (03h/04h).
    Adapter0,
    /// Stack 1's adapter LSM (05h/06h).
    Adapter1,
}

/// The state a link-management request or response names (its MsgSubcode, Table 7-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LinkState {
    /// 01h.
    Active,
    /// 02h, responses only: the PM request is refused.
    PmNak,
    /// 04h.
    L1,
    /// 08h.
    L2,
    /// 09h.
    LinkReset,
    /// 0Ah, RDI only.
    LinkError,
    /// 0Bh, RDI only.
    Retrain,
    /// 0Ch.
    Disable,
}

impl LinkState {
    /// The MsgSubcode.
    pub const fn subcode(self) -> u8 {
        match self {
            LinkState::Active => 0x01,
            LinkState::PmNak => 0x02,
            LinkState::L1 => 0x04,
            LinkState::L2 => 0x08,
            LinkState::LinkReset => 0x09,
            LinkState::LinkError => 0x0A,
            LinkState::Retrain => 0x0B,
            LinkState::Disable => 0x0C,
        }
    }

    /// The state a subcode names, if it is allowed for `target` in a request (`response`
    /// false) or response.
    pub const fn from_subcode(subcode: u8, target: LinkTarget, response: bool) -> Option<LinkState> {
        let state = match subcode {
            0x01 => LinkState::Active,
            0x02 if response => LinkState::PmNak,
            0x04 => LinkState::L1,
            0x08 => LinkState::L2,
            0x09 => LinkState::LinkReset,
            0x0A if matches!(target, LinkTarget::Rdi) => LinkState::LinkError,
            0x0B if matches!(target, LinkTarget::Rdi) => LinkState::Retrain,
            0x0C => LinkState::Disable,
            _ => return None,
        };
        Some(state)
    }
}

/// Error message severity ({ErrMsg} MsgSubcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Severity {
    /// 00h.
    Correctable,
    /// 01h.
    NonFatal,
    /// 02h.
    Fatal,
}

/// The capability messages of parameter exchange (Table 7-10, MsgSubcode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CapKind {
    /// 00h: {AdvCap/FinCap.Adapter}.
    Adapter,
    /// 01h: {AdvCap/FinCap.CXL}.
    Cxl,
    /// 02h: {MultiProtAdvCap/MultiProtFinCap.Adapter}.
    MultiProtocol,
}

/// MsgInfo of a stall: the sender needs more time (resets the peer's timeout).
pub const STALL: u16 = 0xFFFF;

/// A sideband message the adapter understands (Tables 7-8 and 7-10), or any other kept whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Message {
    /// {Nop.Crd}: `credits` (1–4) sideband credits returned.
    NopCrd {
        /// Credits returned.
        credits: u16,
    },
    /// {LinkMgmt.*.Req.*}.
    LinkRequest {
        /// Whose state machine.
        target: LinkTarget,
        /// The state requested.
        state: LinkState,
        /// MsgInfo FFFFh (a stall).
        stall: bool,
    },
    /// {LinkMgmt.*.Rsp.*}.
    LinkResponse {
        /// Whose state machine.
        target: LinkTarget,
        /// The state granted (or PMNAK).
        state: LinkState,
        /// MsgInfo FFFFh (a stall).
        stall: bool,
    },
    /// {ParityFeature.Req}.
    ParityFeatureRequest,
    /// {ParityFeature.Ack} (`stall`: MsgInfo FFFFh) or {ParityFeature.Nak}.
    ParityFeatureResponse {
        /// Ack (else Nak).
        ack: bool,
        /// MsgInfo FFFFh.
        stall: bool,
    },
    /// {ErrMsg}.
    Error(Severity),
    /// {AdvCap.*}, {FinCap.*}, {MultiProtAdvCap.Adapter}, {MultiProtFinCap.Adapter}.
    Capability {
        /// Which capability message.
        kind: CapKind,
        /// FinCap (else AdvCap).
        finalized: bool,
        /// MsgInfo: 0000h, the stack (0001h: stack 1) for CXL with Enhanced Multi-Protocol, or
        /// [`STALL`].
        info: u16,
        /// The 64-bit capability data.
        caps: u64,
    },
    /// Anything else: vendor-defined messages (MsgCode FFh), the physical layer's training
    /// messages, codes this implementation does not know.
    Other(MessagePacket),
}

impl Message {
    /// Reads a message packet.
    pub fn from_packet(p: &MessagePacket) -> Message {
        let stall = p.info == STALL;
        let link = |code: u8| match code {
            0x01 | 0x02 => Some(LinkTarget::Rdi),
            0x03 | 0x04 => Some(LinkTarget::Adapter0),
            0x05 | 0x06 => Some(LinkTarget::Adapter1),
            _ => None,
        };
        match (p.code, p.subcode, p.data) {
            (0x00, 0x00, None) if p.info >= 1 && p.info <= 4 => Message::NopCrd { credits: p.info },
            (code @ 0x01..=0x06, sub, None) => {
                let response = code % 2 == 0;
                let Some(target) = link(code) else { return Message::Other(*p) };
                match LinkState::from_subcode(sub, target, response) {
                    Some(state) if response => Message::LinkResponse { target, state, stall },
                    Some(state) => Message::LinkRequest { target, state, stall },
                    None => Message::Other(*p),
                }
            }
            (0x07, 0x00, None) => Message::ParityFeatureRequest,
            (0x08, sub @ (0x00 | 0x01), None) => Message::ParityFeatureResponse { ack: sub == 0, stall },
            (0x09, 0x00, None) => Message::Error(Severity::Correctable),
            (0x09, 0x01, None) => Message::Error(Severity::NonFatal),
            (0x09, 0x02, None) => Message::Error(Severity::Fatal),
            (code @ (0x01 | 0x02), sub @ 0x00..=0x02, Some(caps)) => Message::Capability {
                kind: match sub {
                    0x00 => CapKind::Adapter,
                    0x01 => CapKind::Cxl,
                    _ => CapKind::MultiProtocol,
                },
                finalized: code == 0x02,
                info: p.info,
                caps,
            },
            _ => Message::Other(*p),
        }
    }

    /// The message as a packet from `srcid` to `dstid`.
    pub fn to_packet(&self, srcid: u8, dstid: u8) -> MessagePacket {
        let m = |code, subcode, info, data| MessagePacket { srcid, dstid, code, subcode, info, data };
        let info = |stall: bool| if stall { STALL } else { 0 };
        let link = |target: LinkTarget, response: bool| {
            let base = match target {
                LinkTarget::Rdi => 0x01,
                LinkTarget::Adapter0 => 0x03,
                LinkTarget::Adapter1 => 0x05,
            };
            base + response as u8
        };
        match *self {
            Message::NopCrd { credits } => m(0x00, 0x00, credits, None),
            Message::LinkRequest { target, state, stall } => m(link(target, false), state.subcode(), info(stall), None),
            Message::LinkResponse { target, state, stall } => m(link(target, true), state.subcode(), info(stall), None),
            Message::ParityFeatureRequest => m(0x07, 0x00, 0, None),
            Message::ParityFeatureResponse { ack, stall } => m(0x08, !ack as u8, info(stall), None),
            Message::Error(s) => m(0x09, s as u8, 0, None),
            Message::Capability { kind, finalized, info, caps } => {
                m(0x01 + finalized as u8, kind as u8, info, Some(caps))
            }
            Message::Other(p) => MessagePacket { srcid, dstid, ..p },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn link_request_by_hand() {
        // {LinkMgmt.Adapter0.Req.Active} from the adapter to the remote adapter.
        let m = Message::LinkRequest { target: LinkTarget::Adapter0, state: LinkState::Active, stall: false };
        let p = Packet::Message(m.to_packet(SRC_ADAPTER, DST_REMOTE_ADAPTER));
        // opcode 10010b, MsgCode 03h at 21:14, srcid 001b at 31:29, subcode 01h at 39:32,
        // dstid 101b at 58:56; eight bits set, so CP = 0.
        let h: u64 = 0b10010 | 0x03 << 14 | 1 << 29 | 0x01 << 32 | 0b101 << 56;
        let mut out = [0u8; 16];
        assert_eq!(p.emit(&mut out), Ok(8));
        assert_eq!(out[..8], h.to_le_bytes());
        assert_eq!(Packet::parse(&out), Ok((p, 8)));
        // A stall response carries MsgInfo FFFFh: 24 bits set, so CP = 0; from stack 0 (one bit
        // fewer, srcid 000b) CP = 1.
        let r = Message::LinkResponse { target: LinkTarget::Adapter1, state: LinkState::PmNak, stall: true };
        let (h, _) = Packet::Message(r.to_packet(SRC_ADAPTER, DST_REMOTE_ADAPTER)).encode().unwrap();
        assert_eq!(h, 0b10010 | 0x06 << 14 | 1 << 29 | 0x02 << 32 | 0xFFFF << 40 | 0b101 << 56);
        let (pl, _) = Packet::Message(r.to_packet(SRC_STACK0, DST_REMOTE_ADAPTER)).encode().unwrap();
        assert_eq!(pl, 0b10010 | 0x06 << 14 | 0x02 << 32 | 0xFFFF << 40 | 0b101 << 56 | 1 << 62);
        let Packet::Message(back) = Packet::decode(h, None).unwrap() else { panic!() };
        assert_eq!(Message::from_packet(&back), r);
    }

    #[test]
    fn capability_with_data() {
        let m = Message::Capability { kind: CapKind::Adapter, finalized: true, info: 0, caps: 0b10_0010 };
        let p = Packet::Message(m.to_packet(SRC_ADAPTER, DST_REMOTE_ADAPTER));
        let mut out = [0u8; 16];
        assert_eq!(p.emit(&mut out), Ok(16));
        let h = u64::from_le_bytes(out[..8].try_into().unwrap());
        assert_eq!(h & 0x1F, 0b11011);
        assert_eq!(h >> 14 & 0xFF, 0x02);
        assert_eq!(h >> 63, 0); // two data bits set: DP = 0
        assert_eq!(out[8..], 0b10_0010u64.to_le_bytes());
        assert_eq!(p.emit(&mut out[..15]), Err(SidebandError::Length { needed: 16, got: 15 }));
    }

    #[test]
    fn register_access_reserved_bits() {
        // A 32-bit config read: Addr[1:0] and BE[7:4] are reserved and sent as zero.
        let route = Route { srcid: SRC_ADAPTER, dstid: DST_REMOTE_ADAPTER, tag: 7, be: 0xFF, ep: false, cr: true };
        let p = Packet::Request { access: Access::CfgRead, wide: false, route, addr: 0x00_0013, data: 0 };
        let (h, data) = p.encode().unwrap();
        assert_eq!((h & 0x1F, data), (0b00100, None));
        assert_eq!(h >> 14 & 0xFF, 0x0F);
        assert_eq!(h >> 32 & 0xFF_FFFF, 0x10);
        assert_eq!(h >> 22 & 0x1F, 7);
        assert_eq!(h >> 61 & 1, 1);
        // Received with the reserved bits set (parity fixed up): ignored.
        let noisy = h | 0x3 << 32 | 0xF0 << 14;
        let noisy = noisy ^ (parity(noisy & !(1 << 63)) << 62);
        let Packet::Request { addr, route: r, .. } = Packet::decode(noisy, None).unwrap() else { panic!() };
        assert_eq!((addr, r.be), (0x10, 0x0F));
        // A completion with status Stall.
        let cpl = Packet::Completion { route, status: CplStatus::Stall, data: CplData::D32(5) };
        let (h, d) = cpl.encode().unwrap();
        assert_eq!((h & 0x1F, h >> 32 & 0b111, d), (0b10001, 0b111, Some(5)));
    }

    #[test]
    fn bad_packets() {
        let p = Packet::Message(Message::ParityFeatureRequest.to_packet(SRC_ADAPTER, DST_REMOTE_ADAPTER));
        let (h, _) = p.encode().unwrap();
        assert_eq!(Packet::decode(h ^ 1 << 40, None), Err(SidebandError::HeaderParity));
        // Opcode 00110b is not in Table 7-1 (fix the parity so the opcode is what fails).
        let bad = (h & !0x1F) | 0b00110;
        let bad = bad ^ (parity(bad & !(1 << 63)) << 62);
        assert_eq!(Packet::decode(bad, None), Err(SidebandError::UnknownOpcode(0b00110)));
        let cap = Packet::Message(
            Message::Capability { kind: CapKind::Cxl, finalized: false, info: 0, caps: 1 }.to_packet(1, 5),
        );
        let mut out = [0u8; 16];
        cap.emit(&mut out).unwrap();
        out[9] ^= 1;
        assert_eq!(Packet::parse(&out), Err(SidebandError::DataParity));
        assert_eq!(Packet::parse(&out[..12]), Err(SidebandError::Length { needed: 16, got: 12 }));
        assert_eq!(Packet::parse(&out[..3]), Err(SidebandError::Length { needed: 8, got: 3 }));
        let route = Route { tag: 32, ..Route::default() };
        let p = Packet::Completion { route, status: CplStatus::Success, data: CplData::None };
        assert_eq!(p.encode(), Err(SidebandError::FieldRange { field: "tag" }));
        // Unknown message codes and PHY training messages are kept, not refused.
        let phy = MessagePacket { srcid: SRC_PHY, dstid: 0b110, code: 0x91, subcode: 3, info: 0, data: None };
        assert_eq!(Message::from_packet(&phy), Message::Other(phy));
        let rsvd_state = MessagePacket { code: 0x03, subcode: 0x0B, ..phy }; // Retrain is RDI-only
        assert_eq!(Message::from_packet(&rsvd_state), Message::Other(rsvd_state));
    }

    fn any_message() -> impl Strategy<Value = Message> {
        let target = prop_oneof![Just(LinkTarget::Rdi), Just(LinkTarget::Adapter0), Just(LinkTarget::Adapter1)];
        let state = (0..8usize).prop_map(|i| {
            [
                LinkState::Active,
                LinkState::PmNak,
                LinkState::L1,
                LinkState::L2,
                LinkState::LinkReset,
                LinkState::LinkError,
                LinkState::Retrain,
                LinkState::Disable,
            ][i]
        });
        prop_oneof![
            (1..=4u16).prop_map(|credits| Message::NopCrd { credits }),
            (target.clone(), state.clone(), any::<bool>(), any::<bool>()).prop_filter_map(
                "state allowed",
                |(target, state, stall, response)| {
                    LinkState::from_subcode(state.subcode(), target, response)?;
                    Some(if response {
                        Message::LinkResponse { target, state, stall }
                    } else {
                        Message::LinkRequest { target, state, stall }
                    })
                }
            ),
            Just(Message::ParityFeatureRequest),
            (any::<bool>(), any::<bool>())
                .prop_map(|(ack, stall)| Message::ParityFeatureResponse { ack, stall: ack && stall }),
            (0..3usize).prop_map(|i| Message::Error([Severity::Correctable, Severity::NonFatal, Severity::Fatal][i])),
            (0..3usize, any::<bool>(), any::<u16>(), any::<u64>()).prop_map(|(k, finalized, info, caps)| {
                let kind = [CapKind::Adapter, CapKind::Cxl, CapKind::MultiProtocol][k];
                Message::Capability { kind, finalized, info, caps }
            }),
        ]
    }

    proptest! {
        /// Every message the adapter speaks survives the wire.
        #[test]
        fn messages_round_trip(m in any_message(), srcid in 0..8u8, dstid in 0..8u8) {
            let p = Packet::Message(m.to_packet(srcid, dstid));
            let mut out = [0u8; 16];
            let n = p.emit(&mut out).unwrap();
            let (back, len) = Packet::parse(&out[..n]).unwrap();
            prop_assert_eq!(len, n);
            prop_assert_eq!(back, p);
            let Packet::Message(mp) = back else { panic!() };
            prop_assert_eq!(Message::from_packet(&mp), m);
        }

        /// Register requests and completions round-trip with their reserved bits cleared.
        #[test]
        fn accesses_round_trip(op in 0..6u8, wide in any::<bool>(), tag in 0..32u8, be in any::<u8>(), addr in 0..1u32 << 24,
                               data in any::<u64>(), srcid in 0..8u8, dstid in 0..8u8, ep in any::<bool>(), cr in any::<bool>(), st in 0..8u8) {
            let access = [Access::MemRead, Access::MemWrite, Access::DmsRead, Access::DmsWrite, Access::CfgRead, Access::CfgWrite][op as usize];
            let route = Route { srcid, dstid, tag, be, ep, cr };
            let p = Packet::Request { access, wide, route, addr, data };
            let mut out = [0u8; 16];
            let n = p.emit(&mut out).unwrap();
            let (back, _) = Packet::parse(&out[..n]).unwrap();
            let (rsvd, be_mask, mask) = if wide { (7, 0xFF, u64::MAX) } else { (3, 0x0F, 0xFFFF_FFFF) };
            let data = if access.is_write() { data & mask } else { 0 };
            let expect = Packet::Request { access, wide, route: Route { be: be & be_mask, ..route }, addr: addr & !rsvd, data };
            prop_assert_eq!(back, expect);
            let cpl = Packet::Completion { route, status: CplStatus::from_code(st), data: if wide { CplData::D64(data) } else { CplData::D32(data as u32) } };
            let n = cpl.emit(&mut out).unwrap();
            prop_assert_eq!(Packet::parse(&out[..n]), Ok((cpl, 16)));
        }

        /// Any 16 bytes parse to a packet or a typed error, never a panic.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..20)) {
            if let Ok((p, n)) = Packet::parse(&bytes) {
                let mut out = [0u8; 16];
                prop_assert_eq!(p.emit(&mut out), Ok(n));
            }
        }
    }
}
