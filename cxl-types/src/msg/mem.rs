//! CXL.mem messages (CXL 4.0 §3.3): M2S Req, M2S RwD, M2S BIRsp, S2M BISnp, S2M NDR and S2M DRS,
//! with their opcodes and field codes (Tables 3-34…3-53).
//!
//! | message | 68B | 256B | PBR | fields |
//! |---|---|---|---|---|
//! | M2S Req | 87 | 100 | 120 | MemOpcode 4, SnpType 3, MetaField 2, MetaValue 2, Tag 16, Address\[51:5\] (68B) or \[51:6\], LD-ID 4 (not PBR), SPID/DPID 12 (PBR), CKID 13 (256B, PBR), TC 2 |
//! | M2S RwD | 87 | 104 | 124 | as M2S Req with Address\[51:6\], plus Poison and TRP (256B, PBR) |
//! | M2S BIRsp | — | 40 | 52 | Opcode 4, BI-ID 12 (not PBR), BITag 12, LowAddr 2, SPID/DPID (PBR) |
//! | S2M BISnp | — | 84 | 96 | Opcode 4, BI-ID 12 (not PBR), BITag 12, Address\[51:6\], SPID/DPID (PBR) |
//! | S2M NDR | 30 | 40 | 48 | Opcode 3, MetaField, MetaValue, Tag, LD-ID (not PBR), DevLoad 2, DPID (PBR) |
//! | S2M DRS | 40 | 40 | 48 | as NDR plus Poison and TRP (256B, PBR) |
//!
//! Wire order: see [`super`]; each layout below is the one place that states it.

use super::{Place, RSVD, addr, code, message_impl, p};

code! {
    /// M2S Req MemOpcode (Table 3-35). MemRdTEE, MemRdDataTEE, MemSpecRdTEE and TEUpdate exist
    /// only in 256B and PBR flits.
    M2sReqOpcode, 4 bits, {
        /// Invalidate.
        MemInv = 0b0000,
        /// Read.
        MemRd = 0b0001,
        /// Read data only.
        MemRdData = 0b0010,
        /// Read forwarded from a CXL.cache request.
        MemRdFwd = 0b0011,
        /// Write forwarded from a CXL.cache request.
        MemWrFwd = 0b0100,
        /// TEE read.
        MemRdTee = 0b0101,
        /// TEE read data.
        MemRdDataTee = 0b0110,
        /// TEE invalidate.
        MemInvTee = 0b0111,
        /// Speculative read.
        MemSpecRd = 0b1000,
        /// Invalidate, non-temporal (MemInvP in later revisions).
        MemInvNt = 0b1001,
        /// Clean eviction.
        MemClnEvct = 0b1010,
        /// TEE invalidate, persistent.
        MemInvPTee = 0b1011,
        /// TEE speculative read.
        MemSpecRdTee = 0b1100,
        /// TE state update.
        TeUpdate = 0b1101,
        /// TEE clean eviction.
        MemClnEvctTee = 0b1110,
        /// Clean eviction, unmodified.
        MemClnEvctU = 0b1111,
    }
}

code! {
    /// M2S RwD MemOpcode (Table 3-41). MemRdFill, MemWrTEE, MemWrPtlTEE and MemRdFillTEE
    /// exist only in 256B and PBR flits, and so does BIConflict: the back-invalidate flows it
    /// belongs to (BISnp, BIRsp, BI-ConflictAck) have no 68B form.
    M2sRwdOpcode, 4 bits, {
        /// Write a full line.
        MemWr = 0b0001,
        /// Partial write (with byte enables).
        MemWrPtl = 0b0010,
        /// Back-invalidate conflict.
        BiConflict = 0b0100,
        /// Read fill.
        MemRdFill = 0b0101,
        /// TEE write.
        MemWrTee = 0b1001,
        /// TEE partial write.
        MemWrPtlTee = 0b1010,
        /// TEE read fill.
        MemRdFillTee = 0b1101,
    }
}

code! {
    /// M2S BIRsp opcode (Table 3-45).
    BiRspOpcode, 4 bits, {
        /// Invalid.
        BiRspI = 0b0000,
        /// Shared.
        BiRspS = 0b0001,
        /// Exclusive.
        BiRspE = 0b0010,
        /// Invalid, block.
        BiRspIBlk = 0b0100,
        /// Shared, block.
        BiRspSBlk = 0b0101,
        /// Exclusive, block.
        BiRspEBlk = 0b0110,
    }
}

code! {
    /// S2M BISnp opcode (Table 3-47).
    BiSnpOpcode, 4 bits, {
        /// Current.
        BiSnpCur = 0b0000,
        /// Data.
        BiSnpData = 0b0001,
        /// Invalidate.
        BiSnpInv = 0b0010,
        /// Current, block.
        BiSnpCurBlk = 0b0100,
        /// Data, block.
        BiSnpDataBlk = 0b0101,
        /// Invalidate, block.
        BiSnpInvBlk = 0b0110,
        /// TEE current.
        BiSnpCurTee = 0b1000,
        /// TEE data.
        BiSnpDataTee = 0b1001,
        /// TEE invalidate.
        BiSnpInvTee = 0b1010,
        /// TEE current, block.
        BiSnpCurBlkTee = 0b1100,
        /// TEE data, block.
        BiSnpDataBlkTee = 0b1101,
        /// TEE invalidate, block.
        BiSnpInvBlkTee = 0b1110,
    }
}

code! {
    /// S2M NDR opcode (Table 3-50). BI-ConflictAck and the TEE completions exist only in 256B
    /// and PBR flits; Cmp-M is optional.
    NdrOpcode, 3 bits, {
        /// Completion.
        Cmp = 0b000,
        /// Completion, shared.
        CmpS = 0b001,
        /// Completion, exclusive.
        CmpE = 0b010,
        /// Completion, modified.
        CmpM = 0b011,
        /// Back-invalidate conflict acknowledgement.
        BiConflictAck = 0b100,
        /// TEE completion.
        CmpTee = 0b101,
        /// TEE completion, shared.
        CmpTeeS = 0b110,
        /// TEE completion, exclusive.
        CmpTeeE = 0b111,
    }
}

code! {
    /// S2M DRS opcode (Table 3-53). MemDataTEE exists only in 256B and PBR flits.
    DrsOpcode, 3 bits, {
        /// Memory data.
        MemData = 0b000,
        /// Memory data, no such address (all ones).
        MemDataNxm = 0b001,
        /// TEE memory data.
        MemDataTee = 0b010,
    }
}

code! {
    /// SnpType (for TEUpdate: the length index).
    SnpType, 3 bits, {
        /// No snoop.
        NoOp = 0b000,
        /// Snoop for data.
        SnpData = 0b001,
        /// Snoop current.
        SnpCur = 0b010,
        /// Snoop invalidate.
        SnpInv = 0b011,
    }
}

code! {
    /// MetaField.
    MetaField, 2 bits, {
        /// Meta0-State.
        Meta0State = 0b00,
        /// Extended Meta-State (CXL 3.2 and later).
        ExtendedMetaState = 0b01,
        /// No meta-data operation.
        NoOp = 0b11,
    }
}

code! {
    /// DevLoad.
    DevLoad, 2 bits, {
        /// Light load.
        Light = 0b00,
        /// Optimal load.
        Optimal = 0b01,
        /// Moderate overload.
        ModerateOverload = 0b10,
        /// Severe overload.
        SevereOverload = 0b11,
    }
}

/// MetaValue for Meta0-State: 00b Invalid, 01b Explicit No-Op (with EMS only),
/// 10b Any, 11b Shared. For TEUpdate: 00b clear TE, 01b set TE. Kept raw (2 bits).
pub mod meta_value {
    /// Invalid.
    pub const INVALID: u8 = 0b00;
    /// Explicit No-Op.
    pub const EXPLICIT_NO_OP: u8 = 0b01;
    /// Any.
    pub const ANY: u8 = 0b10;
    /// Shared.
    pub const SHARED: u8 = 0b11;
}

/// M2S Req (Table 3-34): a request without data from the host (master) to the memory device
/// (subordinate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct M2sReq {
    /// MemOpcode.
    pub opcode: M2sReqOpcode,
    /// SnpType (the length index for TEUpdate).
    pub snp_type: SnpType,
    /// MetaField.
    pub meta_field: MetaField,
    /// MetaValue (2 bits, [`meta_value`]).
    pub meta_value: u8,
    /// Tag.
    pub tag: u16,
    /// The byte address: bits 51:5 in 68B flits (Address\[5\] exists only there), 51:6 in
    /// 256B and PBR flits; lower bits zero.
    pub addr: u64,
    /// LD-ID\[3:0\] (not in PBR).
    pub ld_id: u8,
    /// SPID (PBR, 12 bits).
    pub spid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
    /// CKID (256B and PBR, 13 bits).
    pub ckid: u16,
    /// Traffic class (2 bits).
    pub tc: u8,
}

const REQ_NAMES: [&str; 11] =
    ["MemOpcode", "SnpType", "MetaField", "MetaValue", "Tag", "Address", "LD-ID", "SPID", "DPID", "CKID", "TC"];
const REQ_68: &[Place] = &[p(0, 4), p(1, 3), p(2, 2), p(3, 2), p(4, 16), addr(5, 47, 5), p(10, 2), p(6, 4), p(RSVD, 6)];
const REQ_256: &[Place] =
    &[p(0, 4), p(1, 3), p(2, 2), p(3, 2), p(4, 16), addr(5, 46, 6), p(6, 4), p(9, 13), p(RSVD, 7), p(10, 2)];
const REQ_PBR: &[Place] =
    &[p(0, 4), p(1, 3), p(2, 2), p(3, 2), p(4, 16), addr(5, 46, 6), p(7, 12), p(8, 12), p(9, 13), p(RSVD, 7), p(10, 2)];

message_impl! {
    M2sReq, M2sReq, "M2S Req", opcode: |m: &M2sReq| m.opcode, only_256: &[0b0101, 0b0110, 0b1100, 0b1101],
    names: REQ_NAMES, layouts: [Some(REQ_68), Some(REQ_256), Some(REQ_PBR)],
    values(m) {
        [
            m.opcode.bits().into(),
            m.snp_type.bits().into(),
            m.meta_field.bits().into(),
            m.meta_value.into(),
            m.tag.into(),
            m.addr,
            m.ld_id.into(),
            m.spid.into(),
            m.dpid.into(),
            m.ckid.into(),
            m.tc.into(),
        ]
    },
    from(v) {
        let [op, snp, mf, mv, tag, a, ld, spid, dpid, ckid, tc] = v;
        M2sReq {
            opcode: M2sReqOpcode::from_bits(op as u8),
            snp_type: SnpType::from_bits(snp as u8),
            meta_field: MetaField::from_bits(mf as u8),
            meta_value: mv as u8,
            tag: tag as u16,
            addr: a,
            ld_id: ld as u8,
            spid: spid as u16,
            dpid: dpid as u16,
            ckid: ckid as u16,
            tc: tc as u8,
        }
    }
}

/// M2S RwD (Table 3-40): the header of a request with data (a write) from the host to the
/// memory device; 64 bytes of data follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct M2sRwd {
    /// MemOpcode.
    pub opcode: M2sRwdOpcode,
    /// SnpType.
    pub snp_type: SnpType,
    /// MetaField.
    pub meta_field: MetaField,
    /// MetaValue (2 bits, [`meta_value`]).
    pub meta_value: u8,
    /// Tag.
    pub tag: u16,
    /// The byte address (bits 51:6; lower bits zero).
    pub addr: u64,
    /// The data is poisoned.
    pub poison: bool,
    /// A trailer follows the data (256B and PBR; formerly BEP).
    pub trp: bool,
    /// LD-ID\[3:0\] (not in PBR).
    pub ld_id: u8,
    /// SPID (PBR, 12 bits).
    pub spid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
    /// CKID (256B and PBR, 13 bits).
    pub ckid: u16,
    /// Traffic class (2 bits).
    pub tc: u8,
}

const RWD_NAMES: [&str; 13] = [
    "MemOpcode",
    "SnpType",
    "MetaField",
    "MetaValue",
    "Tag",
    "Address",
    "Poison",
    "TRP",
    "LD-ID",
    "SPID",
    "DPID",
    "CKID",
    "TC",
];
const RWD_68: &[Place] =
    &[p(0, 4), p(1, 3), p(2, 2), p(3, 2), p(4, 16), addr(5, 46, 6), p(6, 1), p(12, 2), p(8, 4), p(RSVD, 6)];
const RWD_256: &[Place] = &[
    p(0, 4),
    p(1, 3),
    p(2, 2),
    p(3, 2),
    p(4, 16),
    addr(5, 46, 6),
    p(6, 1),
    p(7, 1),
    p(8, 4),
    p(11, 13),
    p(RSVD, 9),
    p(12, 2),
];
const RWD_PBR: &[Place] = &[
    p(0, 4),
    p(1, 3),
    p(2, 2),
    p(3, 2),
    p(4, 16),
    addr(5, 46, 6),
    p(6, 1),
    p(7, 1),
    p(9, 12),
    p(10, 12),
    p(11, 13),
    p(RSVD, 9),
    p(12, 2),
];

message_impl! {
    M2sRwd, M2sRwd, "M2S RwD", opcode: |m: &M2sRwd| m.opcode, only_256: &[0b0100, 0b0101, 0b1001, 0b1010, 0b1101],
    names: RWD_NAMES, layouts: [Some(RWD_68), Some(RWD_256), Some(RWD_PBR)],
    values(m) {
        [
            m.opcode.bits().into(),
            m.snp_type.bits().into(),
            m.meta_field.bits().into(),
            m.meta_value.into(),
            m.tag.into(),
            m.addr,
            m.poison.into(),
            m.trp.into(),
            m.ld_id.into(),
            m.spid.into(),
            m.dpid.into(),
            m.ckid.into(),
            m.tc.into(),
        ]
    },
    from(v) {
        let [op, snp, mf, mv, tag, a, poison, trp, ld, spid, dpid, ckid, tc] = v;
        M2sRwd {
            opcode: M2sRwdOpcode::from_bits(op as u8),
            snp_type: SnpType::from_bits(snp as u8),
            meta_field: MetaField::from_bits(mf as u8),
            meta_value: mv as u8,
            tag: tag as u16,
            addr: a,
            poison: poison != 0,
            trp: trp != 0,
            ld_id: ld as u8,
            spid: spid as u16,
            dpid: dpid as u16,
            ckid: ckid as u16,
            tc: tc as u8,
        }
    }
}

/// M2S BIRsp (Table 3-44): the host's response to a back-invalidate snoop (256B and PBR only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct M2sBiRsp {
    /// Opcode.
    pub opcode: BiRspOpcode,
    /// BI-ID (12 bits, not in PBR).
    pub bi_id: u16,
    /// BITag (12 bits).
    pub bi_tag: u16,
    /// LowAddr: Address\[7:6\] (2 bits; reserved for the *Blk opcodes).
    pub low_addr: u8,
    /// SPID (PBR, 12 bits).
    pub spid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const BIRSP_NAMES: [&str; 6] = ["Opcode", "BI-ID", "BITag", "LowAddr", "SPID", "DPID"];
const BIRSP_256: &[Place] = &[p(0, 4), p(1, 12), p(2, 12), p(3, 2), p(RSVD, 9)];
const BIRSP_PBR: &[Place] = &[p(0, 4), p(2, 12), p(3, 2), p(4, 12), p(5, 12), p(RSVD, 9)];

message_impl! {
    M2sBiRsp, M2sBiRsp, "M2S BIRsp", opcode: |m: &M2sBiRsp| m.opcode, only_256: &[],
    names: BIRSP_NAMES, layouts: [None, Some(BIRSP_256), Some(BIRSP_PBR)],
    values(m) { [m.opcode.bits().into(), m.bi_id.into(), m.bi_tag.into(), m.low_addr.into(), m.spid.into(), m.dpid.into()] },
    from(v) {
        let [op, bi_id, bi_tag, low, spid, dpid] = v;
        M2sBiRsp {
            opcode: BiRspOpcode::from_bits(op as u8),
            bi_id: bi_id as u16,
            bi_tag: bi_tag as u16,
            low_addr: low as u8,
            spid: spid as u16,
            dpid: dpid as u16,
        }
    }
}

/// S2M BISnp (Table 3-46): a back-invalidate snoop from the memory device to the host (256B
/// and PBR only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct S2mBiSnp {
    /// Opcode.
    pub opcode: BiSnpOpcode,
    /// BI-ID (12 bits, not in PBR).
    pub bi_id: u16,
    /// BITag (12 bits).
    pub bi_tag: u16,
    /// The byte address (bits 51:6; for the *Blk opcodes bits 7:6 give the block: 01b lower
    /// 128 B, 10b upper 128 B, 11b the whole 256 B).
    pub addr: u64,
    /// SPID (PBR, 12 bits).
    pub spid: u16,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const BISNP_NAMES: [&str; 6] = ["Opcode", "BI-ID", "BITag", "Address", "SPID", "DPID"];
const BISNP_256: &[Place] = &[p(0, 4), p(1, 12), p(2, 12), addr(3, 46, 6), p(RSVD, 9)];
const BISNP_PBR: &[Place] = &[p(0, 4), p(2, 12), addr(3, 46, 6), p(4, 12), p(5, 12), p(RSVD, 9)];

message_impl! {
    S2mBiSnp, S2mBiSnp, "S2M BISnp", opcode: |m: &S2mBiSnp| m.opcode, only_256: &[],
    names: BISNP_NAMES, layouts: [None, Some(BISNP_256), Some(BISNP_PBR)],
    values(m) { [m.opcode.bits().into(), m.bi_id.into(), m.bi_tag.into(), m.addr, m.spid.into(), m.dpid.into()] },
    from(v) {
        let [op, bi_id, bi_tag, a, spid, dpid] = v;
        S2mBiSnp {
            opcode: BiSnpOpcode::from_bits(op as u8),
            bi_id: bi_id as u16,
            bi_tag: bi_tag as u16,
            addr: a,
            spid: spid as u16,
            dpid: dpid as u16,
        }
    }
}

/// S2M NDR (Table 3-49): a completion without data from the memory device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct S2mNdr {
    /// Opcode.
    pub opcode: NdrOpcode,
    /// MetaField.
    pub meta_field: MetaField,
    /// MetaValue (2 bits, [`meta_value`]).
    pub meta_value: u8,
    /// Tag.
    pub tag: u16,
    /// LD-ID\[3:0\] (not in PBR).
    pub ld_id: u8,
    /// DevLoad.
    pub dev_load: DevLoad,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
}

const NDR_NAMES: [&str; 7] = ["Opcode", "MetaField", "MetaValue", "Tag", "LD-ID", "DevLoad", "DPID"];
/// The 68B NDR; in slots holding two NDRs the first one's DevLoad (bits 28–29 here) moves
/// elsewhere in the slot (`flit68::slot`).
const NDR_68: &[Place] = &[p(0, 3), p(1, 2), p(2, 2), p(3, 16), p(4, 4), p(5, 2)];
const NDR_256: &[Place] = &[p(0, 3), p(1, 2), p(2, 2), p(3, 16), p(4, 4), p(5, 2), p(RSVD, 10)];
const NDR_PBR: &[Place] = &[p(0, 3), p(1, 2), p(2, 2), p(3, 16), p(5, 2), p(6, 12), p(RSVD, 10)];

message_impl! {
    S2mNdr, S2mNdr, "S2M NDR", opcode: |m: &S2mNdr| m.opcode, only_256: &[0b100, 0b101, 0b110, 0b111],
    names: NDR_NAMES, layouts: [Some(NDR_68), Some(NDR_256), Some(NDR_PBR)],
    values(m) {
        [
            m.opcode.bits().into(),
            m.meta_field.bits().into(),
            m.meta_value.into(),
            m.tag.into(),
            m.ld_id.into(),
            m.dev_load.bits().into(),
            m.dpid.into(),
        ]
    },
    from(v) {
        let [op, mf, mv, tag, ld, dl, dpid] = v;
        S2mNdr {
            opcode: NdrOpcode::from_bits(op as u8),
            meta_field: MetaField::from_bits(mf as u8),
            meta_value: mv as u8,
            tag: tag as u16,
            ld_id: ld as u8,
            dev_load: DevLoad::from_bits(dl as u8),
            dpid: dpid as u16,
        }
    }
}

/// S2M DRS (Table 3-52): the header of a data response from the memory device; 64 (or, in
/// 68B flits, 32) bytes of data follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct S2mDrs {
    /// Opcode.
    pub opcode: DrsOpcode,
    /// MetaField.
    pub meta_field: MetaField,
    /// MetaValue (2 bits, [`meta_value`]).
    pub meta_value: u8,
    /// Tag.
    pub tag: u16,
    /// The data is poisoned.
    pub poison: bool,
    /// LD-ID\[3:0\] (not in PBR).
    pub ld_id: u8,
    /// DevLoad.
    pub dev_load: DevLoad,
    /// DPID (PBR, 12 bits).
    pub dpid: u16,
    /// A trailer follows the data (256B and PBR).
    pub trp: bool,
}

const DRS_NAMES: [&str; 9] = ["Opcode", "MetaField", "MetaValue", "Tag", "Poison", "LD-ID", "DevLoad", "DPID", "TRP"];
const DRS_68: &[Place] = &[p(0, 3), p(1, 2), p(2, 2), p(3, 16), p(4, 1), p(5, 4), p(6, 2), p(RSVD, 9)];
/// 256B: DevLoad before LD-ID, as the figure shows (not table order).
const DRS_256: &[Place] = &[p(0, 3), p(1, 2), p(2, 2), p(3, 16), p(4, 1), p(6, 2), p(5, 4), p(8, 1), p(RSVD, 8)];
const DRS_PBR: &[Place] = &[p(0, 3), p(1, 2), p(2, 2), p(3, 16), p(4, 1), p(6, 2), p(7, 12), p(8, 1), p(RSVD, 8)];

message_impl! {
    S2mDrs, S2mDrs, "S2M DRS", opcode: |m: &S2mDrs| m.opcode, only_256: &[0b010],
    names: DRS_NAMES, layouts: [Some(DRS_68), Some(DRS_256), Some(DRS_PBR)],
    values(m) {
        [
            m.opcode.bits().into(),
            m.meta_field.bits().into(),
            m.meta_value.into(),
            m.tag.into(),
            m.poison.into(),
            m.ld_id.into(),
            m.dev_load.bits().into(),
            m.dpid.into(),
            m.trp.into(),
        ]
    },
    from(v) {
        let [op, mf, mv, tag, poison, ld, dl, dpid, trp] = v;
        S2mDrs {
            opcode: DrsOpcode::from_bits(op as u8),
            meta_field: MetaField::from_bits(mf as u8),
            meta_value: mv as u8,
            tag: tag as u16,
            poison: poison != 0,
            ld_id: ld as u8,
            dev_load: DevLoad::from_bits(dl as u8),
            dpid: dpid as u16,
            trp: trp != 0,
        }
    }
}
