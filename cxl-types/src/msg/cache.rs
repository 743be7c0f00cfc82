//! CXL.cache messages (CXL 4.0 §3.2): D2H Req, D2H Rsp, D2H data header, H2D Req, H2D Rsp and
//! H2D data header, with their opcodes (Tables 3-13…3-27).
//!
//! | message | 68B | 256B | PBR | fields |
//! |---|---|---|---|---|
//! | D2H Req | 79 | 76 | 96 | Opcode 5, CQID 12, NT, CacheID 4 (256B), Address\[51:6\], SPID/DPID 12 (PBR) |
//! | D2H Rsp | 20 | 24 | 36 | Opcode 5, UQID 12, DPID (PBR) |
//! | D2H data header | 17 | 24 | 36 | UQID 12, ChunkValid (68B), Bogus, Poison, BEP (256B, PBR), DPID (PBR) |
//! | H2D Req | 64 | 72 | 92 | Opcode 3, Address\[51:6\], UQID 12, CacheID 4 (256B), SPID/DPID (PBR) |
//! | H2D Rsp | 32 | 40 | 48 | Opcode 4, RspData 12, RSP_PRE 2, CQID 12, CacheID 4 (256B), DPID (PBR) |
//! | H2D data header | 24 | 28 | 36 | CQID 12, ChunkValid (68B), Poison, GO-Err, CacheID 4 (256B), DPID (PBR) |
//!
//! Wire order: see [`super`]; each layout below is the one place that states it.

use super::{Place, RSVD, addr, code, message_impl, p};

code! {
    /// D2H Req opcode.
    D2hReqOpcode, 5 bits, {
        /// Read current.
        RdCurr = 0b00001,
        /// Read for ownership.
        RdOwn = 0b00010,
        /// Read shared.
        RdShared = 0b00011,
        /// Read any.
        RdAny = 0b00100,
        /// Ownership without data.
        RdOwnNoData = 0b00101,
        /// Invalid to modified write.
        ItoMWr = 0b00110,
        /// Write current.
        WrCur = 0b00111,
        /// Flush a line.
        ClFlush = 0b01000,
        /// Clean eviction.
        CleanEvict = 0b01001,
        /// Dirty eviction.
        DirtyEvict = 0b01010,
        /// Clean eviction without data.
        CleanEvictNoData = 0b01011,
        /// Weakly ordered write invalidate.
        WoWrInv = 0b01100,
        /// Weakly ordered write invalidate, full line.
        WoWrInvF = 0b01101,
        /// Write invalidate.
        WrInv = 0b01110,
        /// The device cache was flushed.
        CacheFlushed = 0b10000,
    }
}

code! {
    /// D2H Rsp opcode.
    D2hRspOpcode, 5 bits, {
        /// Shared or exclusive hit, kept shared.
        RspSHitSe = 0b00001,
        /// Invalid, was invalid.
        RspIHitI = 0b00100,
        /// Invalid, hit shared or exclusive.
        RspIHitSe = 0b00101,
        /// Valid, hit valid.
        RspVHitV = 0b00110,
        /// Shared, forwarded modified.
        RspSFwdM = 0b00111,
        /// Invalid, forwarded modified.
        RspIFwdM = 0b01111,
        /// Valid, forwarded valid.
        RspVFwdV = 0b10110,
    }
}

code! {
    /// H2D Req opcode.
    H2dReqOpcode, 3 bits, {
        /// Snoop for data.
        SnpData = 0b001,
        /// Snoop invalidate.
        SnpInv = 0b010,
        /// Snoop current.
        SnpCur = 0b011,
    }
}

code! {
    /// H2D Rsp opcode.
    H2dRspOpcode, 4 bits, {
        /// Write pull (RspData = UQID).
        WritePull = 0b0001,
        /// Global observation (RspData\[3:0\] = the cache state, [`go_state`]).
        Go = 0b0100,
        /// GO and write pull.
        GoWritePull = 0b0101,
        /// Extended completion.
        ExtCmp = 0b0110,
        /// GO, write pull, drop the data.
        GoWritePullDrop = 0b1000,
        /// Fast GO and write pull.
        FastGoWritePull = 0b1101,
        /// GO error and write pull.
        GoErrWritePull = 0b1111,
    }
}

code! {
    /// RSP_PRE: where the host found the line.
    RspPre, 2 bits, {
        /// Host miss, local socket.
        MissLocal = 0b00,
        /// Host hit.
        Hit = 0b01,
        /// Host miss, remote socket.
        MissRemote = 0b10,
    }
}

/// The cache state a GO carries in RspData\[3:0\].
pub mod go_state {
    /// Invalid.
    pub const I: u16 = 0b0011;
    /// Shared.
    pub const S: u16 = 0b0001;
    /// Exclusive.
    pub const E: u16 = 0b0010;
    /// Modified.
    pub const M: u16 = 0b0110;
    /// Error.
    pub const ERROR: u16 = 0b0100;
}

/// D2H Req: a request from the device's cache to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct D2hReq {
    /// Opcode.
    pub opcode: D2hReqOpcode,
    /// CQID (12 bits).
    pub cqid: u16,
    /// NT: move the line to LRU.
    pub nt: bool,
    /// CacheID (256B, 4 bits).
    pub cache_id: u8,
    /// The byte address (bits 51:6; lower bits zero).
    pub addr: u64,
    /// SPID (PBR, 12 bits).
    pub spid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const D2H_REQ_NAMES: [&str; 7] = ["Opcode", "CQID", "NT", "CacheID", "Address", "SPID", "DPID"];
/// 68B: seven reserved bits before the address (the slot figures; not table order).
const D2H_REQ_68: &[Place] = &[p(0, 5), p(1, 12), p(2, 1), p(RSVD, 7), addr(4, 46, 6), p(RSVD, 7)];
const D2H_REQ_256: &[Place] = &[p(0, 5), p(1, 12), p(2, 1), p(3, 4), addr(4, 46, 6), p(RSVD, 7)];
const D2H_REQ_PBR: &[Place] = &[p(0, 5), p(1, 12), p(2, 1), addr(4, 46, 6), p(5, 12), p(6, 12), p(RSVD, 7)];

message_impl! {
    D2hReq, D2hReq, "D2H Req", opcode: |m: &D2hReq| m.opcode, only_256: &[],
    names: D2H_REQ_NAMES, layouts: [Some(D2H_REQ_68), Some(D2H_REQ_256), Some(D2H_REQ_PBR)],
    values(m) { [m.opcode.bits().into(), m.cqid.into(), m.nt.into(), m.cache_id.into(), m.addr, m.spid.into(), m.dpid.into()] },
    from(v) {
        let [op, cqid, nt, cache_id, a, spid, dpid] = v;
        D2hReq {
            opcode: D2hReqOpcode::from_bits(op as u8),
            cqid: cqid as u16,
            nt: nt != 0,
            cache_id: cache_id as u8,
            addr: a,
            spid: spid as u16,
            dpid: dpid as u16,
        }
    }
}

/// D2H Rsp: the device's response to a snoop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct D2hRsp {
    /// Opcode.
    pub opcode: D2hRspOpcode,
    /// UQID (12 bits).
    pub uqid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const D2H_RSP_NAMES: [&str; 3] = ["Opcode", "UQID", "DPID"];
const D2H_RSP_68: &[Place] = &[p(0, 5), p(1, 12), p(RSVD, 2)];
const D2H_RSP_256: &[Place] = &[p(0, 5), p(1, 12), p(RSVD, 6)];
const D2H_RSP_PBR: &[Place] = &[p(0, 5), p(1, 12), p(2, 12), p(RSVD, 6)];

message_impl! {
    D2hRsp, D2hRsp, "D2H Rsp", opcode: |m: &D2hRsp| m.opcode, only_256: &[],
    names: D2H_RSP_NAMES, layouts: [Some(D2H_RSP_68), Some(D2H_RSP_256), Some(D2H_RSP_PBR)],
    values(m) { [m.opcode.bits().into(), m.uqid.into(), m.dpid.into()] },
    from(v) {
        let [op, uqid, dpid] = v;
        D2hRsp { opcode: D2hRspOpcode::from_bits(op as u8), uqid: uqid as u16, dpid: dpid as u16 }
    }
}

/// The D2H data header: data from the device follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct D2hData {
    /// UQID (12 bits).
    pub uqid: u16,
    /// ChunkValid (68B): for a 32-byte transfer, 1 = the upper half of the line.
    pub chunk_valid: bool,
    /// Bogus: the data is stale and must be dropped.
    pub bogus: bool,
    /// The data is poisoned.
    pub poison: bool,
    /// Byte enables follow the data (256B and PBR).
    pub bep: bool,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const D2H_DATA_NAMES: [&str; 6] = ["UQID", "ChunkValid", "Bogus", "Poison", "BEP", "DPID"];
const D2H_DATA_68: &[Place] = &[p(0, 12), p(1, 1), p(2, 1), p(3, 1), p(RSVD, 1)];
const D2H_DATA_256: &[Place] = &[p(0, 12), p(2, 1), p(3, 1), p(4, 1), p(RSVD, 8)];
const D2H_DATA_PBR: &[Place] = &[p(0, 12), p(2, 1), p(3, 1), p(4, 1), p(5, 12), p(RSVD, 8)];

message_impl! {
    D2hData, D2hData, "D2H Data Header",
    names: D2H_DATA_NAMES, layouts: [Some(D2H_DATA_68), Some(D2H_DATA_256), Some(D2H_DATA_PBR)],
    values(m) { [m.uqid.into(), m.chunk_valid.into(), m.bogus.into(), m.poison.into(), m.bep.into(), m.dpid.into()] },
    from(v) {
        let [uqid, cv, bogus, poison, bep, dpid] = v;
        D2hData { uqid: uqid as u16, chunk_valid: cv != 0, bogus: bogus != 0, poison: poison != 0, bep: bep != 0, dpid: dpid as u16 }
    }
}

/// H2D Req: a snoop from the host to the device's cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct H2dReq {
    /// Opcode.
    pub opcode: H2dReqOpcode,
    /// The byte address (bits 51:6; lower bits zero).
    pub addr: u64,
    /// UQID (12 bits).
    pub uqid: u16,
    /// CacheID (256B, 4 bits).
    pub cache_id: u8,
    /// SPID (PBR, 12 bits).
    pub spid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const H2D_REQ_NAMES: [&str; 6] = ["Opcode", "Address", "UQID", "CacheID", "SPID", "DPID"];
const H2D_REQ_68: &[Place] = &[p(0, 3), addr(1, 46, 6), p(2, 12), p(RSVD, 2)];
const H2D_REQ_256: &[Place] = &[p(0, 3), addr(1, 46, 6), p(2, 12), p(3, 4), p(RSVD, 6)];
const H2D_REQ_PBR: &[Place] = &[p(0, 3), addr(1, 46, 6), p(2, 12), p(4, 12), p(5, 12), p(RSVD, 6)];

message_impl! {
    H2dReq, H2dReq, "H2D Req", opcode: |m: &H2dReq| m.opcode, only_256: &[],
    names: H2D_REQ_NAMES, layouts: [Some(H2D_REQ_68), Some(H2D_REQ_256), Some(H2D_REQ_PBR)],
    values(m) { [m.opcode.bits().into(), m.addr, m.uqid.into(), m.cache_id.into(), m.spid.into(), m.dpid.into()] },
    from(v) {
        let [op, a, uqid, cache_id, spid, dpid] = v;
        H2dReq {
            opcode: H2dReqOpcode::from_bits(op as u8),
            addr: a,
            uqid: uqid as u16,
            cache_id: cache_id as u8,
            spid: spid as u16,
            dpid: dpid as u16,
        }
    }
}

/// H2D Rsp: the host's response to a device request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct H2dRsp {
    /// Opcode.
    pub opcode: H2dRspOpcode,
    /// RspData (12 bits): the UQID for WritePull, the cache state for GO ([`go_state`]).
    pub rsp_data: u16,
    /// RSP_PRE.
    pub rsp_pre: RspPre,
    /// CQID (12 bits).
    pub cqid: u16,
    /// CacheID (256B, 4 bits).
    pub cache_id: u8,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const H2D_RSP_NAMES: [&str; 6] = ["Opcode", "RspData", "RSP_PRE", "CQID", "CacheID", "DPID"];
const H2D_RSP_68: &[Place] = &[p(0, 4), p(1, 12), p(2, 2), p(3, 12), p(RSVD, 1)];
const H2D_RSP_256: &[Place] = &[p(0, 4), p(1, 12), p(2, 2), p(3, 12), p(4, 4), p(RSVD, 5)];
const H2D_RSP_PBR: &[Place] = &[p(0, 4), p(1, 12), p(2, 2), p(3, 12), p(5, 12), p(RSVD, 5)];

message_impl! {
    H2dRsp, H2dRsp, "H2D Rsp", opcode: |m: &H2dRsp| m.opcode, only_256: &[],
    names: H2D_RSP_NAMES, layouts: [Some(H2D_RSP_68), Some(H2D_RSP_256), Some(H2D_RSP_PBR)],
    values(m) { [m.opcode.bits().into(), m.rsp_data.into(), m.rsp_pre.bits().into(), m.cqid.into(), m.cache_id.into(), m.dpid.into()] },
    from(v) {
        let [op, rsp_data, pre, cqid, cache_id, dpid] = v;
        H2dRsp {
            opcode: H2dRspOpcode::from_bits(op as u8),
            rsp_data: rsp_data as u16,
            rsp_pre: RspPre::from_bits(pre as u8),
            cqid: cqid as u16,
            cache_id: cache_id as u8,
            dpid: dpid as u16,
        }
    }
}

/// The H2D data header: data from the host follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct H2dData {
    /// CQID (12 bits).
    pub cqid: u16,
    /// ChunkValid (68B): for a 32-byte transfer, 1 = the upper half of the line.
    pub chunk_valid: bool,
    /// The data is poisoned.
    pub poison: bool,
    /// GO-Err: the request failed.
    pub go_err: bool,
    /// CacheID (256B, 4 bits).
    pub cache_id: u8,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const H2D_DATA_NAMES: [&str; 6] = ["CQID", "ChunkValid", "Poison", "GO-Err", "CacheID", "DPID"];
const H2D_DATA_68: &[Place] = &[p(0, 12), p(1, 1), p(2, 1), p(3, 1), p(RSVD, 8)];
const H2D_DATA_256: &[Place] = &[p(0, 12), p(2, 1), p(3, 1), p(4, 4), p(RSVD, 9)];
const H2D_DATA_PBR: &[Place] = &[p(0, 12), p(2, 1), p(3, 1), p(5, 12), p(RSVD, 9)];

message_impl! {
    H2dData, H2dData, "H2D Data Header",
    names: H2D_DATA_NAMES, layouts: [Some(H2D_DATA_68), Some(H2D_DATA_256), Some(H2D_DATA_PBR)],
    values(m) { [m.cqid.into(), m.chunk_valid.into(), m.poison.into(), m.go_err.into(), m.cache_id.into(), m.dpid.into()] },
    from(v) {
        let [cqid, cv, poison, go_err, cache_id, dpid] = v;
        H2dData {
            cqid: cqid as u16,
            chunk_valid: cv != 0,
            poison: poison != 0,
            go_err: go_err != 0,
            cache_id: cache_id as u8,
            dpid: dpid as u16,
        }
    }
}
