//! 256B packing by hand, the packing property over random queues in both routings, and the
//! refusals.

use super::*;
use crate::flit68::pack::Queues;
use crate::msg::mem::{M2sReqOpcode, M2sRwdOpcode};
use crate::msg::{M2sReq, M2sRwd, Message};
use proptest::prelude::*;

fn line(seed: u8) -> [u8; 64] {
    core::array::from_fn(|i| seed.wrapping_add(i as u8))
}

fn unpack_all(u: &mut Unpacker, flits: &[[u8; 256]]) -> Vec<(Msg, Option<Data>)> {
    let mut got = Vec::new();
    for f in flits {
        u.unpack(f, |item| match item {
            Item::Msg(m) => got.push((m, None)),
            Item::Data(m, d) => got.push((m, Some(*d))),
            Item::Llctrl(_) => panic!("no LLCTRL sent"),
        })
        .unwrap();
    }
    got
}

fn pack_all<const N: usize>(p: &mut Packer, q: &mut Queues<N, Data>) -> Vec<[u8; 256]> {
    let mut flits = Vec::new();
    loop {
        let mut f = [0u8; 256];
        match p.pack(q, Crd::default(), &mut f).unwrap() {
            true => flits.push(f),
            false => return flits,
        }
    }
}

/// An M2S RwD with a trailer in the H-slot (H14): its four data slots and the trailer fill
/// slots 1–5; an M2S Req behind it takes slot 6 as G4.
#[test]
fn rwd_with_trailer_by_hand() {
    let rwd = M2sRwd { opcode: M2sRwdOpcode::MemWrPtl, tag: 3, addr: 0x40, trp: true, ..M2sRwd::default() };
    let req = M2sReq { opcode: M2sReqOpcode::MemRd, tag: 4, addr: 0x80, ..M2sReq::default() };
    let data = Data { bytes: line(9), trailer: Some([0xEE; 16]) };
    let mut q = Queues::<4, Data>::default();
    q.push(Msg::M2sRwd(rwd), Some(data)).unwrap();
    q.push(Msg::M2sReq(req), None).unwrap();
    let mut p = Packer::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap();
    let flits = pack_all(&mut p, &mut q);
    assert_eq!(flits.len(), 1);
    let f = flits[0];
    assert_eq!(f[0] >> 6, 0b10, "Flit Type: CXL.cachemem");
    // Slot 0: SlotFmt 14 then the RwD from bit 4.
    let mut h = [0u8; 16];
    h[..14].copy_from_slice(&f[2..16]);
    assert_eq!(u128::from_le_bytes(h), 14 | rwd.encode(Width::Flit256).unwrap() << 4);
    assert_eq!(&f[16..80], &line(9)[..]);
    assert_eq!(&f[80..96], &[0xEE; 16]);
    let g = u128::from_le_bytes(f[96..112].try_into().unwrap());
    assert_eq!(g, 4 | req.encode(Width::Flit256).unwrap() << 4);
    // Empty slots after, CRD zero.
    assert!(f[112..242].iter().all(|b| *b == 0));
    let mut u = Unpacker::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap();
    assert_eq!(unpack_all(&mut u, &flits), vec![(Msg::M2sRwd(rwd), Some(data)), (Msg::M2sReq(req), None)]);
    // A trailer the header does not announce is refused.
    let mut q = Queues::<4, Data>::default();
    q.push(Msg::M2sRwd(M2sRwd { trp: false, ..rwd }), Some(data)).unwrap();
    assert_eq!(p.pack(&mut q, Crd::default(), &mut [0; 256]), Err(PackError::Data { kind: Kind::M2sRwd }));
}

/// Credits alone go in a flit of their own; a reserved CRD code is refused.
#[test]
fn credits_and_refusals() {
    use super::super::crd::{Channel, Return};
    let mut p = Packer::new(Width::Pbr, Layout::Standard, Direction::Upstream).unwrap();
    let mut q = Queues::<4, Data>::default();
    let crd = Crd { data: Some(Return { channel: Channel::M2s, count: 4 }), ..Crd::default() };
    let mut f = [0u8; 256];
    assert_eq!(p.pack(&mut q, crd, &mut f), Ok(true));
    let mut u = Unpacker::new(Width::Pbr, Layout::Standard, Direction::Upstream).unwrap();
    assert_eq!(u.unpack(&f, |_| panic!()), Ok(crd), "credits alone: not an Empty flit");
    // A reserved code in CRD[4:0]: that field returns nothing, the flit is still read.
    f[240] = f[240] & !0x1F | 0x02;
    assert_eq!(u.unpack(&f, |_| panic!()), Ok(crd));
    assert!(Crd::parse([f[240], f[241]]).is_err());
    // A CRD that does not encode is refused before any message leaves the queues.
    q.push(Msg::S2mNdr(crate::msg::S2mNdr::default()), None).unwrap();
    let bad = Crd { rsp: Some(Return { channel: Channel::S2m, count: 3 }), ..Crd::default() };
    assert!(matches!(p.pack(&mut q, bad, &mut [0; 256]), Err(PackError::Crd(_))));
    assert_eq!(q.len(), 1);
    // A reserved SlotFmt (9) in slot 3.
    let mut f = [0u8; 256];
    f[48] = 9;
    assert_eq!(u.unpack(&f, |_| panic!()), Err(UnpackError::ReservedFormat { slot: 3 }));
    // A downstream message at an upstream unpacker.
    let mut f = [0u8; 256];
    f[16] = 0x10 | 1; // SlotFmt 1 (H2D Rsp), the first Valid bit set at bit 4
    assert_eq!(u.unpack(&f, |_| panic!()), Err(UnpackError::Direction { slot: 1 }));
    // SlotFmt 13 (D2H DH) with its first message invalid.
    let mut f = [0u8; 256];
    f[16] = 13;
    assert_eq!(u.unpack(&f, |_| panic!()), Err(UnpackError::FirstInvalid { slot: 1 }));
    // Three valid S2M BISnp in slots 1-3 (group A): more than two per group pair.
    let mut f = [0u8; 256];
    for s in 1..4 {
        f[16 * s] = 0x16; // SlotFmt 6, Valid at bit 4
    }
    assert_eq!(u.unpack(&f, |_| panic!()), Err(UnpackError::RateLimit { kind: Kind::S2mBiSnp }));
    assert_eq!(u.pending_slots(), 0);
}

fn kinds(direction: Direction, width: Width) -> Vec<Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| k.downstream() == (direction == Direction::Downstream) && k.bits(width).is_some())
        .collect()
}

fn random_msg(kind: Kind, bits: u128, width: Width) -> Msg {
    let n = kind.bits(width).unwrap();
    let m = Msg::decode(kind, bits & ((1u128 << n) - 1) | 1, width).unwrap();
    Msg::decode(kind, m.encode(width).unwrap(), width).unwrap()
}

proptest! {
    /// Any interleaving of message queues packs into flits that unpack to the same messages
    /// with the same data, in order per kind, in both routings and directions.
    #[test]
    fn packing_round_trip(
        down in any::<bool>(),
        pbr in any::<bool>(),
        lopt in any::<bool>(),
        script in proptest::collection::vec((0..8usize, any::<u128>(), any::<u8>(), 0..3usize), 1..64),
    ) {
        let direction = if down { Direction::Downstream } else { Direction::Upstream };
        let width = if pbr { Width::Pbr } else { Width::Flit256 };
        let layout = if lopt && !pbr { Layout::LatencyOptimized } else { Layout::Standard };
        let ks = kinds(direction, width);
        let mut q = Queues::<64, Data>::default();
        let mut p = Packer::new(width, layout, direction).unwrap();
        let mut u = Unpacker::new(width, layout, direction).unwrap();
        let (mut sent, mut got) = (Vec::new(), Vec::new());
        for (k, bits, seed, flits_now) in script {
            let kind = ks[k % ks.len()];
            let msg = random_msg(kind, bits, width);
            let trailer = if kind == Kind::S2mDrs { [seed, seed, seed, seed, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] } else { [seed; 16] };
            let data = kind.has_data().then(|| Data { bytes: line(seed), trailer: has_trailer(&msg).then_some(trailer) });
            q.push(msg, data).unwrap();
            sent.push((msg, data));
            for _ in 0..flits_now {
                let mut f = [0u8; 256];
                if p.pack(&mut q, Crd::default(), &mut f).unwrap() {
                    got.extend(unpack_all(&mut u, &[f]));
                }
            }
        }
        got.extend(unpack_all(&mut u, &pack_all(&mut p, &mut q)));
        prop_assert_eq!(u.pending_slots(), 0);
        for kind in ks {
            let a: Vec<_> = sent.iter().filter(|(m, _)| m.kind() == kind).collect();
            let b: Vec<_> = got.iter().filter(|(m, _)| m.kind() == kind).collect();
            prop_assert_eq!(a, b, "{:?}", kind);
        }
    }

    /// Arbitrary bytes never panic the unpacker; a refused flit changes nothing.
    #[test]
    fn unpacker_total(down in any::<bool>(), pbr in any::<bool>(), lopt in any::<bool>(), flits in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 256), 1..8)) {
        let direction = if down { Direction::Downstream } else { Direction::Upstream };
        let width = if pbr { Width::Pbr } else { Width::Flit256 };
        let layout = if lopt && !pbr { Layout::LatencyOptimized } else { Layout::Standard };
        let mut u = Unpacker::new(width, layout, direction).unwrap();
        for f in flits {
            let f: [u8; 256] = f.try_into().unwrap();
            let before = u.pending_slots();
            if u.unpack(&f, |_| ()).is_err() {
                prop_assert_eq!(u.pending_slots(), before);
            }
        }
    }
}

/// The latency-optimized flit: an HS-slot in slot 8 (never data), slot 7 split around the even
/// half's CRC, and PBR refused.
#[test]
fn latency_optimized_layout() {
    assert_eq!(
        Packer::new(Width::Pbr, Layout::LatencyOptimized, Direction::Upstream).err(),
        Some(ConfigError::PbrLatencyOptimized)
    );
    assert_eq!(
        Unpacker::new(Width::Flit68, Layout::Standard, Direction::Upstream).err(),
        Some(ConfigError::NotA256BWidth)
    );
    let mut q = Queues::<8, Data>::default();
    // Two D2H data headers (G13 in slot 1 could take four) fill slots 2–9 with data, but slot 8
    // is the HS-slot: data goes 2–7 and 9–10.
    for i in 0..2u8 {
        let dh = crate::msg::D2hData { uqid: u16::from(i), ..crate::msg::D2hData::default() };
        q.push(Msg::D2hData(dh), Some(Data { bytes: line(i * 64), trailer: None })).unwrap();
    }
    let mut p = Packer::new(Width::Flit256, Layout::LatencyOptimized, Direction::Upstream).unwrap();
    let flits = pack_all(&mut p, &mut q);
    assert_eq!(flits.len(), 1);
    let f = &flits[0];
    assert_eq!(f[2] & 0xF, 13, "slot 0: H13, both data headers");
    assert_eq!(&f[16..32], &line(0)[..16], "data from slot 1");
    // Slot 7's 16 bytes: 112–121 then 138–143 (the seventh data chunk: line(64)[32..48]).
    assert_eq!(&f[112..122], &line(64)[32..42]);
    assert_eq!(&f[138..144], &line(64)[42..48]);
    assert_eq!(&f[122..128], &[0; 6], "the even half's CRC is left alone");
    assert_eq!(&f[144..160], &line(64)[48..64], "slot 9 after the HS-slot");
    let mut u = Unpacker::new(Width::Flit256, Layout::LatencyOptimized, Direction::Upstream).unwrap();
    assert_eq!(unpack_all(&mut u, &flits).len(), 2);
}

/// A PBR flit by hand: an H2D Req in H0 and an H2D Rsp in G1, each field at the place the
/// PBR tables give it.
#[test]
fn pbr_by_hand() {
    use crate::msg::cache::{H2dReqOpcode, H2dRspOpcode};
    use crate::msg::{H2dReq, H2dRsp};
    let req = H2dReq {
        opcode: H2dReqOpcode::SnpInv,
        addr: 0xFC0,
        uqid: 0x123,
        spid: 0xABC,
        dpid: 0x456,
        ..H2dReq::default()
    };
    let rsp = H2dRsp { opcode: H2dRspOpcode::GoWritePull, rsp_data: 0x77, cqid: 0x9, dpid: 0xFFF, ..H2dRsp::default() };
    // H2D Req, PBR: Valid 0, Opcode 1-3, Address[51:6] 4-49, UQID 50-61, SPID 62-73, DPID 74-85.
    let req_bits: u128 = 1 | 0b010 << 1 | 0x3F << 4 | 0x123 << 50 | 0xABC << 62 | 0x456 << 74;
    // H2D Rsp, PBR: Valid 0, Opcode 1-4, RspData 5-16, RSP_PRE 17-18, CQID 19-30, DPID 31-42.
    let rsp_bits: u128 = 1 | 0b0101 << 1 | 0x77 << 5 | 0x9 << 19 | 0xFFF << 31;
    assert_eq!(req.encode(Width::Pbr), Ok(req_bits));
    assert_eq!(rsp.encode(Width::Pbr), Ok(rsp_bits));
    let mut q = Queues::<4, Data>::default();
    q.push(Msg::H2dReq(req), None).unwrap();
    q.push(Msg::H2dRsp(rsp), None).unwrap();
    let mut p = Packer::new(Width::Pbr, Layout::Standard, Direction::Downstream).unwrap();
    let flits = pack_all(&mut p, &mut q);
    let f = &flits[0];
    let mut h = [0u8; 16];
    h[..14].copy_from_slice(&f[2..16]);
    assert_eq!(u128::from_le_bytes(h), req_bits << 4, "H0: SlotFmt 0, the request from bit 4");
    assert_eq!(u128::from_le_bytes(f[16..32].try_into().unwrap()), 1 | rsp_bits << 4, "G1 with one response");
    let mut u = Unpacker::new(Width::Pbr, Layout::Standard, Direction::Downstream).unwrap();
    assert_eq!(unpack_all(&mut u, &flits), vec![(Msg::H2dReq(req), None), (Msg::H2dRsp(rsp), None)]);
}

/// Three S2M DRS in one G15 slot, the second without TRP: the first's data, one trailer slot
/// with the two EMDs packed in order, then the others' data (Table 4-17).
#[test]
fn drs_group_shares_one_trailer_slot() {
    use crate::msg::S2mDrs;
    let mut q = Queues::<4, Data>::default();
    let emd = |b: u8| [b, b, b, b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let sent: Vec<_> = [(true, 0xA1), (false, 0xB2), (true, 0xC3)]
        .into_iter()
        .enumerate()
        .map(|(i, (trp, b))| {
            let m = Msg::S2mDrs(S2mDrs { tag: i as u16, trp, ..S2mDrs::default() });
            (m, Some(Data { bytes: line(b), trailer: trp.then_some(emd(b)) }))
        })
        .collect();
    for (m, d) in &sent {
        q.push(*m, *d).unwrap();
    }
    // Two NDRs take the H-slot (H7 ties with H15 and has the lower code), so the three DRS
    // share G15 in slot 1: slots 2-5 the first one's data, slot 6 the shared trailer, then the
    // others' data in slots 7-14.
    for _ in 0..2 {
        q.push(Msg::S2mNdr(crate::msg::S2mNdr::default()), None).unwrap();
    }
    let mut p = Packer::new(Width::Flit256, Layout::Standard, Direction::Upstream).unwrap();
    let flits = pack_all(&mut p, &mut q);
    assert_eq!(flits.len(), 1);
    let f = &flits[0];
    assert_eq!((f[2] & 0xF, f[16] & 0xF), (7, 15));
    assert_eq!(&f[32..96], &line(0xA1)[..]);
    assert_eq!(&f[96..112], &[0xA1, 0xA1, 0xA1, 0xA1, 0xC3, 0xC3, 0xC3, 0xC3, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&f[112..176], &line(0xB2)[..]);
    assert_eq!(&f[176..240], &line(0xC3)[..]);
    let mut u = Unpacker::new(Width::Flit256, Layout::Standard, Direction::Upstream).unwrap();
    let got: Vec<_> = unpack_all(&mut u, &flits).into_iter().filter(|(m, _)| m.kind() == Kind::S2mDrs).collect();
    assert_eq!(got, sent);
}

/// A control message goes in the H-slot of a flit of its own; owed data waits for the next
/// flit, and the unpacker skips the reserved slots after it.
#[test]
fn llctrl_flits() {
    use crate::flit256::slot::Llctrl;
    let mut q = Queues::<4, Data>::default();
    for i in 0..4u8 {
        q.push(
            Msg::H2dData(crate::msg::H2dData { cqid: u16::from(i), ..Default::default() }),
            Some(Data { bytes: line(i), trailer: None }),
        )
        .unwrap();
    }
    let mut p = Packer::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap();
    let mut u = Unpacker::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap();
    let mut f = [0u8; 256];
    assert_eq!(p.pack(&mut q, Crd::default(), &mut f), Ok(true));
    let mut got = unpack_all(&mut u, &[f]);
    assert!(p.pending_slots() > 0, "data rolls over");
    let viral = Llctrl::Viral { ld_id: 0x0003 };
    p.pack_llctrl(viral, Crd::default(), &mut f).unwrap();
    f[100] = 0xFF; // a reserved slot's bits are ignored
    let mut items = Vec::new();
    u.unpack(&f, |i| items.push(format!("{i:?}"))).unwrap();
    assert_eq!(items, vec![format!("{:?}", Item::Llctrl(viral))]);
    got.extend(unpack_all(&mut u, &pack_all(&mut p, &mut q)));
    assert_eq!(got.len(), 4);
    assert_eq!(u.pending_slots(), 0);
    // IDE and INIT.Param belong in the H-slot only.
    let mut lo = Unpacker::new(Width::Flit256, Layout::LatencyOptimized, Direction::Downstream).unwrap();
    let mut f = [0u8; 256];
    Layout::LatencyOptimized.write_slot(&mut f, 8, Llctrl::InitParam { p2p_mem: true }.emit(SlotKind::Hs));
    assert_eq!(lo.unpack(&f, |_| ()), Err(UnpackError::LlctrlPlacement { slot: 8 }));
}

/// With MDH disabled one data header per slot goes, and a slot with two is refused.
#[test]
fn mdh_disabled() {
    let mut q = Queues::<4, Data>::default();
    for _ in 0..2 {
        q.push(Msg::H2dData(crate::msg::H2dData::default()), Some(Data::default())).unwrap();
    }
    let mut p = Packer::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap().with_mdh(false);
    let flits = pack_all(&mut p, &mut q);
    let mut u = Unpacker::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap().with_mdh(false);
    assert_eq!(unpack_all(&mut u, &flits).len(), 2);
    let mut q = Queues::<4, Data>::default();
    for _ in 0..2 {
        q.push(Msg::H2dData(crate::msg::H2dData::default()), Some(Data::default())).unwrap();
    }
    let flits = pack_all(&mut Packer::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap(), &mut q);
    let mut u = Unpacker::new(Width::Flit256, Layout::Standard, Direction::Downstream).unwrap().with_mdh(false);
    assert_eq!(u.unpack(&flits[0], |_| ()), Err(UnpackError::Mdh { slot: 0 }));
}
