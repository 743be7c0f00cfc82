//! Golden vectors and round trips for every message in every width.

use super::*;
use crate::msg::cache::*;
use crate::msg::mem::*;
use proptest::prelude::*;

#[test]
fn lengths_match_the_field_tables() {
    use Width::*;
    let want: [(Kind, [Option<u32>; 3]); 12] = [
        (Kind::M2sReq, [Some(87), Some(100), Some(120)]),
        (Kind::M2sRwd, [Some(87), Some(104), Some(124)]),
        (Kind::M2sBiRsp, [None, Some(40), Some(52)]),
        (Kind::S2mBiSnp, [None, Some(84), Some(96)]),
        (Kind::S2mNdr, [Some(30), Some(40), Some(48)]),
        (Kind::S2mDrs, [Some(40), Some(40), Some(48)]),
        (Kind::D2hReq, [Some(79), Some(76), Some(96)]),
        (Kind::D2hRsp, [Some(20), Some(24), Some(36)]),
        (Kind::D2hData, [Some(17), Some(24), Some(36)]),
        (Kind::H2dReq, [Some(64), Some(72), Some(92)]),
        (Kind::H2dRsp, [Some(32), Some(40), Some(48)]),
        (Kind::H2dData, [Some(24), Some(28), Some(36)]),
    ];
    for (kind, bits) in want {
        assert_eq!([kind.bits(Flit68), kind.bits(Flit256), kind.bits(Pbr)], bits, "{kind:?}");
    }
}

/// Sets `value` at bits `lo..lo+width` of a hand-built vector.
fn at(lo: u32, value: u128) -> u128 {
    value << lo
}

#[test]
fn m2s_req_68b_by_hand() {
    // Valid 0, MemOpcode 1-4, SnpType 5-7, MetaField 8-9, MetaValue 10-11, Tag 12-27,
    // Address[51:5] 28-74, TC 75-76, LD-ID 77-80, RSVD 81-86.
    let m = M2sReq {
        opcode: M2sReqOpcode::MemRd,
        snp_type: SnpType::SnpInv,
        meta_field: MetaField::Meta0State,
        meta_value: meta_value::ANY,
        tag: 0xBEEF,
        addr: 0x000F_1234_5678_9AE0,
        ld_id: 0xA,
        tc: 0b10,
        ..M2sReq::default()
    };
    let w = 1
        | at(1, 0b0001)
        | at(5, 0b011)
        | at(8, 0b00)
        | at(10, 0b10)
        | at(12, 0xBEEF)
        | at(28, 0x000F_1234_5678_9AE0 >> 5)
        | at(75, 0b10)
        | at(77, 0xA);
    assert_eq!(m.encode(Width::Flit68), Ok(w));
    assert_eq!(M2sReq::decode(w, Width::Flit68), Ok(m));
    // 256B: no Address[5]; LD-ID 74-77, CKID 78-90, TC 98-99.
    let m256 = M2sReq { addr: 0x000F_1234_5678_9AC0, ckid: 0x1ABC, ..m };
    let w256 = 1
        | at(1, 0b0001)
        | at(5, 0b011)
        | at(10, 0b10)
        | at(12, 0xBEEF)
        | at(28, 0x000F_1234_5678_9AC0 >> 6)
        | at(74, 0xA)
        | at(78, 0x1ABC)
        | at(98, 0b10);
    assert_eq!(m256.encode(Width::Flit256), Ok(w256));
    assert_eq!(M2sReq::decode(w256, Width::Flit256), Ok(m256));
    // Address[5] does not exist in 256B; LD-ID does not exist in PBR; CKID not in 68B.
    assert_eq!(
        m.encode(Width::Flit256),
        Err(MsgError::Range { message: "M2S Req", field: "Address", value: 0x000F_1234_5678_9AE0 })
    );
    assert_eq!(m256.encode(Width::Pbr), Err(MsgError::Range { message: "M2S Req", field: "LD-ID", value: 0xA }));
    assert!(matches!(m256.encode(Width::Flit68), Err(MsgError::Range { field: "CKID", .. })));
    assert!(matches!(
        M2sReq { tag: 1, addr: 1 << 52, ..M2sReq::default() }.encode(Width::Flit68),
        Err(MsgError::Range { field: "Address", .. })
    ));
}

#[test]
fn m2s_rwd_68b_and_pbr_by_hand() {
    // 68B: … Address[51:6] 28-73, Poison 74, TC 75-76, LD-ID 77-80.
    let m = M2sRwd {
        opcode: M2sRwdOpcode::MemWrPtl,
        tag: 7,
        addr: 0x40,
        poison: true,
        ld_id: 3,
        tc: 1,
        ..M2sRwd::default()
    };
    let w = 1 | at(1, 0b0010) | at(12, 7) | at(28, 1) | at(74, 1) | at(75, 1) | at(77, 3);
    assert_eq!(m.encode(Width::Flit68), Ok(w));
    // PBR: Poison 74, TRP 75, SPID 76-87, DPID 88-99, CKID 100-112, RSVD 113-121, TC 122-123.
    let p = M2sRwd { ld_id: 0, trp: true, spid: 0xABC, dpid: 0x123, ckid: 5, ..m };
    let wp = 1
        | at(1, 0b0010)
        | at(12, 7)
        | at(28, 1)
        | at(74, 1)
        | at(75, 1)
        | at(76, 0xABC)
        | at(88, 0x123)
        | at(100, 5)
        | at(122, 1);
    assert_eq!(p.encode(Width::Pbr), Ok(wp));
    assert_eq!(M2sRwd::decode(wp, Width::Pbr), Ok(p));
}

#[test]
fn s2m_by_hand() {
    // 68B DRS: [3:1] MemOp, [5:4] MF, [7:6] MV, [23:8] Tag, 24 Poison, [28:25] LD-ID, [30:29] DevLoad.
    let drs = S2mDrs {
        opcode: DrsOpcode::MemDataNxm,
        tag: 0x1234,
        poison: true,
        ld_id: 0xF,
        dev_load: DevLoad::ModerateOverload,
        meta_field: MetaField::NoOp,
        ..S2mDrs::default()
    };
    let w = 1 | at(1, 1) | at(4, 0b11) | at(8, 0x1234) | at(24, 1) | at(25, 0xF) | at(29, 0b10);
    assert_eq!(drs.encode(Width::Flit68), Ok(w));
    // 256B DRS: DevLoad 25-26, LD-ID 27-30, TRP 31.
    let w256 = 1 | at(1, 1) | at(4, 0b11) | at(8, 0x1234) | at(24, 1) | at(25, 0b10) | at(27, 0xF);
    assert_eq!(drs.encode(Width::Flit256), Ok(w256));
    assert_eq!(S2mDrs::decode(w256, Width::Flit256), Ok(drs));
    // 68B NDR: [3:1] Opcode, [5:4] MF, [7:6] MV, [23:8] Tag, [27:24] LD-ID, [29:28] DevLoad.
    let ndr = S2mNdr {
        opcode: NdrOpcode::CmpE,
        meta_value: 3,
        tag: 0xFFFF,
        ld_id: 1,
        dev_load: DevLoad::SevereOverload,
        ..S2mNdr::default()
    };
    let w = 1 | at(1, 0b010) | at(6, 3) | at(8, 0xFFFF) | at(24, 1) | at(28, 3);
    assert_eq!(ndr.encode(Width::Flit68), Ok(w));
    // PBR NDR: DevLoad 24-25, DPID 26-37.
    let p = S2mNdr { ld_id: 0, dpid: 0xFED, ..ndr };
    assert_eq!(p.encode(Width::Pbr), Ok(1 | at(1, 0b010) | at(6, 3) | at(8, 0xFFFF) | at(24, 3) | at(26, 0xFED)));
    // BI messages exist only in 256B and PBR.
    assert_eq!(S2mBiSnp::default().encode(Width::Flit68), Err(MsgError::NotInWidth { message: "S2M BISnp" }));
    let bisnp =
        S2mBiSnp { opcode: BiSnpOpcode::BiSnpInvBlk, bi_id: 0x801, bi_tag: 0x7FF, addr: 0xC0, ..S2mBiSnp::default() };
    assert_eq!(bisnp.encode(Width::Flit256), Ok(1 | at(1, 0b0110) | at(5, 0x801) | at(17, 0x7FF) | at(29, 3)));
    let birsp =
        M2sBiRsp { opcode: BiRspOpcode::BiRspE, bi_tag: 9, low_addr: 2, spid: 1, dpid: 2, ..M2sBiRsp::default() };
    // PBR: Opcode 1-4, BITag 5-16, LowAddr 17-18, SPID 19-30, DPID 31-42.
    assert_eq!(birsp.encode(Width::Pbr), Ok(1 | at(1, 0b0010) | at(5, 9) | at(17, 2) | at(19, 1) | at(31, 2)));
}

#[test]
fn cache_68b_by_hand() {
    // D2H Req: Opcode 1-5, CQID 6-17, NT 18, RSVD 19-25, Address[51:6] 26-71.
    let r = D2hReq { opcode: D2hReqOpcode::RdOwn, cqid: 0xFFF, nt: true, addr: 0xFFC0, ..D2hReq::default() };
    assert_eq!(r.encode(Width::Flit68), Ok(1 | at(1, 0b00010) | at(6, 0xFFF) | at(18, 1) | at(26, 0x3FF)));
    // 256B: CacheID 19-22, Address 23-68.
    let r256 = D2hReq { cache_id: 5, ..r };
    assert_eq!(
        r256.encode(Width::Flit256),
        Ok(1 | at(1, 0b00010) | at(6, 0xFFF) | at(18, 1) | at(19, 5) | at(23, 0x3FF))
    );
    // H2D Rsp: [4:1] Opcode, [16:5] RspData, [18:17] RSP_PRE, [30:19] CQID.
    let rsp = H2dRsp {
        opcode: H2dRspOpcode::Go,
        rsp_data: go_state::E,
        rsp_pre: RspPre::MissRemote,
        cqid: 0x5A5,
        ..H2dRsp::default()
    };
    assert_eq!(rsp.encode(Width::Flit68), Ok(1 | at(1, 0b0100) | at(5, 2) | at(17, 0b10) | at(19, 0x5A5)));
    // H2D DH: [12:1] CQID, 13 ChunkValid, 14 Poison, 15 GO-Err.
    let dh = H2dData { cqid: 0x800, chunk_valid: true, go_err: true, ..H2dData::default() };
    assert_eq!(dh.encode(Width::Flit68), Ok(1 | at(1, 0x800) | at(13, 1) | at(15, 1)));
    // D2H DH: [12:1] UQID, 13 ChunkValid, 14 Bogus, 15 Poison. D2H Rsp: [5:1] Opcode, [17:6] UQID.
    let ddh = D2hData { uqid: 3, bogus: true, ..D2hData::default() };
    assert_eq!(ddh.encode(Width::Flit68), Ok(1 | at(1, 3) | at(14, 1)));
    let drsp = D2hRsp { opcode: D2hRspOpcode::RspIFwdM, uqid: 0x123, ..D2hRsp::default() };
    assert_eq!(drsp.encode(Width::Flit68), Ok(1 | at(1, 0b01111) | at(6, 0x123)));
    // H2D Req: [3:1] Opcode, Address[51:6] 4-49, UQID 50-61.
    let h = H2dReq { opcode: H2dReqOpcode::SnpCur, addr: 0x80, uqid: 0x7, ..H2dReq::default() };
    assert_eq!(h.encode(Width::Flit68), Ok(1 | at(1, 0b011) | at(4, 2) | at(50, 7)));
    // ChunkValid does not exist in 256B; BEP not in 68B.
    assert!(matches!(dh.encode(Width::Flit256), Err(MsgError::Range { field: "ChunkValid", .. })));
    assert!(matches!(D2hData { bep: true, ..ddh }.encode(Width::Flit68), Err(MsgError::Range { field: "BEP", .. })));
}

#[test]
fn opcodes_and_checks() {
    assert_eq!(M2sRwdOpcode::from_bits(0b0100), M2sRwdOpcode::BiConflict);
    assert_eq!(M2sRwdOpcode::from_bits(0b1000), M2sRwdOpcode::Reserved(0b1000));
    assert_eq!(NdrOpcode::from_bits(0b011), NdrOpcode::CmpM);
    let rwd = M2sRwd { opcode: M2sRwdOpcode::Reserved(0b1111), ..M2sRwd::default() };
    // A reserved opcode round-trips and is reported only by the strict check.
    let w = rwd.encode(Width::Flit68).unwrap();
    assert_eq!(M2sRwd::decode(w, Width::Flit68), Ok(rwd));
    assert_eq!(rwd.check(Width::Flit68), Err(MsgError::ReservedOpcode { message: "M2S RwD", value: 0b1111 }));
    let tee = M2sReq { opcode: M2sReqOpcode::TeUpdate, ..M2sReq::default() };
    assert_eq!(tee.check(Width::Flit68), Err(MsgError::OpcodeNotInWidth { message: "M2S Req", value: 0b1101 }));
    assert_eq!(tee.check(Width::Flit256), Ok(()));
    assert_eq!(D2hData::default().check(Width::Pbr), Ok(()));
    for v in 0..=u8::MAX {
        assert_eq!(D2hReqOpcode::from_bits(v).bits(), v & 0x1F);
    }
}

fn any_msg() -> impl Strategy<Value = Msg> {
    // Random bits decoded in each kind: every field value the wire can carry.
    (0..12usize, any::<u128>(), prop_oneof![Just(Width::Flit68), Just(Width::Flit256), Just(Width::Pbr)])
        .prop_filter_map("width carries the kind", |(k, bits, width)| Msg::decode(Kind::ALL[k], bits, width).ok())
}

proptest! {
    /// Any bits decode to a message that encodes to the same bits with the reserved ones cleared,
    /// in every width.
    #[test]
    fn decode_encode_clears_only_reserved(k in 0..12usize, bits in any::<u128>()) {
        for width in [Width::Flit68, Width::Flit256, Width::Pbr] {
            let kind = Kind::ALL[k];
            let Some(n) = kind.bits(width) else { continue };
            let bits = bits & ((1u128 << n) - 1) | 1;
            let m = Msg::decode(kind, bits, width).unwrap();
            let back = m.encode(width).unwrap();
            prop_assert_eq!(back & !bits, 0, "encode sets only bits that were set");
            prop_assert_eq!(Msg::decode(kind, back, width).unwrap(), m);
        }
    }

    /// Every message encodes and decodes to itself in every width that can carry its values.
    #[test]
    fn round_trip(m in any_msg()) {
        for width in [Width::Flit68, Width::Flit256, Width::Pbr] {
            if let Ok(bits) = m.encode(width) {
                prop_assert_eq!(Msg::decode(m.kind(), bits, width), Ok(m));
                prop_assert!(bits < 1u128 << m.kind().bits(width).unwrap());
            }
        }
    }
}
