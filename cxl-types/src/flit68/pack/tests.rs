//! Packing by hand, the packing property over random queues, and every refusal.

use super::*;
use crate::msg::cache::*;
use crate::msg::mem::*;
use crate::msg::{Message, Width};
use proptest::prelude::*;

fn line(seed: u8) -> [u8; 64] {
    core::array::from_fn(|i| seed.wrapping_add(i as u8))
}

fn slot(flit: &[u8; 64], s: usize) -> u128 {
    u128::from_le_bytes(flit[s * 16..s * 16 + 16].try_into().unwrap())
}

/// Unpacks every flit, collecting what comes out.
fn unpack_all(u: &mut Unpacker, flits: &[[u8; 64]]) -> Vec<(Msg, Option<Payload>)> {
    let mut got = Vec::new();
    for f in flits {
        u.unpack(f, |item| match item {
            Item::Msg(m) => got.push((m, None)),
            Item::Data(m, p) => got.push((m, Some(*p))),
            Item::Mac(_) => panic!("no MAC sent"),
        })
        .unwrap();
    }
    got
}

fn pack_all<const N: usize>(p: &mut Packer, q: &mut Queues<N>) -> Vec<[u8; 64]> {
    let mut flits = Vec::new();
    loop {
        let mut f = [0u8; 64];
        match p.pack(q, [Credit::NONE; 3], &mut f).unwrap() {
            Some(_) => flits.push(f),
            None => return flits,
        }
    }
}

/// An M2S RwD with 64 bytes of data: the header in H4, chunks 0–2 in slots 1–3, chunk 3 rolled
/// over into slot 1 of the next flit, whose slot 0 carries the M2S Req queued behind it.
#[test]
fn rwd_by_hand() {
    let rwd = M2sRwd { opcode: M2sRwdOpcode::MemWr, tag: 0x1234, addr: 0x1000, ..M2sRwd::default() };
    let req = M2sReq { opcode: M2sReqOpcode::MemRd, tag: 0x55, addr: 0x2000, ..M2sReq::default() };
    let mut q = Queues::<4>::default();
    q.push(Msg::M2sRwd(rwd), Some(Payload { bytes: line(0x10), ..Payload::default() })).unwrap();
    let mut p = Packer::new(Direction::Downstream);
    let mut f = [0u8; 64];
    let credits = [Credit::NONE, Credit::new(true, 8).unwrap(), Credit::NONE];
    assert_eq!(p.pack(&mut q, credits, &mut f), Ok(Some(Packed::Protocol)));
    // Header: Sz (bit 4), slot 0 = H4 (100b at 7:5), slots 1-3 G0, ReqCrd = 1100b (mem, 8).
    let hdr: u32 = 1 << 4 | 0b100 << 5 | 0b1100 << 24;
    assert_eq!(u32::from_le_bytes(f[..4].try_into().unwrap()), hdr);
    assert_eq!(slot(&f, 0) >> 32, rwd.encode(Width::Flit68).unwrap());
    assert_eq!(&f[16..64], &line(0x10)[..48]);
    assert_eq!(p.pending_chunks(), 1);
    q.push(Msg::M2sReq(req), None).unwrap();
    let mut g = [0u8; 64];
    assert_eq!(p.pack(&mut q, [Credit::NONE; 3], &mut g), Ok(Some(Packed::Protocol)));
    // Slot 0 H5 (M2S Req), slot 1 G0 with chunk 3, slots 2-3 empty G1.
    let hdr: u32 = 0b101 << 5 | 0b001 << 11 | 0b001 << 14;
    assert_eq!(u32::from_le_bytes(g[..4].try_into().unwrap()), hdr);
    assert_eq!(&g[16..32], &line(0x10)[48..]);
    assert_eq!(&g[32..], &[0u8; 32]);
    assert_eq!(p.pack(&mut q, [Credit::NONE; 3], &mut [0; 64]), Ok(None));

    let mut u = Unpacker::new(Direction::Downstream);
    let got = unpack_all(&mut u, &[f, g]);
    assert_eq!(
        got,
        vec![(Msg::M2sReq(req), None), (Msg::M2sRwd(rwd), Some(Payload { bytes: line(0x10), ..Payload::default() }))]
    );
}

/// With MDH, four H2D data headers share H3 and their 16 chunks fill slots 1–3, three all-data
/// flits and slot 1 of a fifth flit.
#[test]
fn mdh_rollover_into_all_data_flits() {
    let mut q = Queues::<8>::default();
    for i in 0..4u8 {
        let dh = H2dData { cqid: u16::from(i), ..H2dData::default() };
        q.push(Msg::H2dData(dh), Some(Payload { bytes: line(i * 64), ..Payload::default() })).unwrap();
    }
    let mut p = Packer::new(Direction::Downstream).with_mdh(true);
    let flits = pack_all(&mut p, &mut q);
    assert_eq!(flits.len(), 5);
    assert_eq!(flits[0][0] >> 5, 0b011, "slot 0 is H3");
    assert_eq!(&flits[1][..], &[line(48)[..16].to_vec(), line(64).to_vec()[..48].to_vec()].concat()[..]);
    let mut u = Unpacker::new(Direction::Downstream).with_mdh(true);
    let got = unpack_all(&mut u, &flits);
    assert_eq!(got.len(), 4);
    for (i, (m, d)) in got.iter().enumerate() {
        assert_eq!(*m, Msg::H2dData(H2dData { cqid: i as u16, ..H2dData::default() }));
        assert_eq!(d.unwrap().bytes, line(i as u8 * 64));
    }
    // Without MDH the same data headers go one per flit.
    let mut q = Queues::<8>::default();
    for i in 0..4u8 {
        q.push(Msg::H2dData(H2dData { cqid: u16::from(i), ..H2dData::default() }), Some(Payload::default())).unwrap();
    }
    let flits = pack_all(&mut Packer::new(Direction::Downstream), &mut q);
    assert_eq!(flits.len(), 5);
    // … and an unpacker without MDH refuses an MDH flit, delivering nothing.
    let mut q = Queues::<8>::default();
    for _ in 0..2 {
        q.push(Msg::H2dData(H2dData::default()), Some(Payload::default())).unwrap();
    }
    let flits = pack_all(&mut Packer::new(Direction::Downstream).with_mdh(true), &mut q);
    let mut u = Unpacker::new(Direction::Downstream);
    assert_eq!(u.unpack(&flits[0], |_| panic!()), Err(UnpackError::Mdh));
    assert_eq!(u.pending_chunks(), 0);
}

/// 32-byte S2M data and D2H data with byte enables (Sz = 0, BE = 1).
#[test]
fn half_lines_and_byte_enables() {
    let mut q = Queues::<4>::default();
    let drs = S2mDrs { tag: 9, ..S2mDrs::default() };
    let half = Payload {
        bytes: {
            let mut b = line(1);
            b[32..].fill(0);
            b
        },
        half: true,
        be: None,
    };
    q.push(Msg::S2mDrs(drs), Some(half)).unwrap();
    let dh = D2hData { uqid: 5, ..D2hData::default() };
    let be = Payload { bytes: line(2), half: false, be: Some(0x0F0F_0000_FFFF_0001) };
    q.push(Msg::D2hData(dh), Some(be)).unwrap();
    let mut p = Packer::new(Direction::Upstream);
    let flits = pack_all(&mut p, &mut q);
    let mut u = Unpacker::new(Direction::Upstream);
    let got = unpack_all(&mut u, &flits);
    assert!(got.contains(&(Msg::S2mDrs(drs), Some(half))));
    assert!(got.contains(&(Msg::D2hData(dh), Some(be))));
    // The BE chunk: BE[63:0] little-endian in bytes 0-7.
    assert!(flits.iter().any(|f| f[0] & 0b1000 != 0), "a flit with BE = 1");
    assert!(
        flits
            .iter()
            .any(|f| f.chunks(16).any(|c| c[..8] == 0x0F0F_0000_FFFF_0001u64.to_le_bytes() && c[8..] == [0; 8]))
    );
    // Table 4-3: no 32-byte M2S data, no byte enables on S2M data.
    let mut q = Queues::<4>::default();
    q.push(Msg::M2sRwd(M2sRwd::default()), Some(Payload { half: true, ..Payload::default() })).unwrap();
    assert_eq!(
        Packer::new(Direction::Downstream).pack(&mut q, [Credit::NONE; 3], &mut [0; 64]),
        Err(PackError::Shape { kind: Kind::M2sRwd })
    );
    assert_eq!(q.len(), 1, "the message stays queued");
    // A message that does not encode in 68B (CKID is 256B only) stays queued too.
    let mut q = Queues::<4>::default();
    q.push(Msg::M2sReq(M2sReq { ckid: 1, ..M2sReq::default() }), None).unwrap();
    assert!(matches!(
        Packer::new(Direction::Downstream).pack(&mut q, [Credit::NONE; 3], &mut [0; 64]),
        Err(PackError::Message(MsgError::Range { field: "CKID", .. }))
    ));
    assert_eq!(q.len(), 1);
    // So does a data header without its data.
    let mut q = Queues::<4>::default();
    q.push(Msg::H2dData(H2dData::default()), None).unwrap();
    assert_eq!(
        Packer::new(Direction::Downstream).pack(&mut q, [Credit::NONE; 3], &mut [0; 64]),
        Err(PackError::Shape { kind: Kind::H2dData })
    );
    assert_eq!(q.len(), 1);
}

/// Every refusal names what is wrong and leaves the unpacker as it was.
#[test]
fn unpacker_refusals() {
    let hdr = |slots: [u8; 4], sz: bool| FlitHeader { slots, sz, ..FlitHeader::default() }.emit();
    let flit = |h: [u8; 4], body: &[(usize, u8)]| {
        let mut f = [0u8; 64];
        f[..4].copy_from_slice(&h);
        for (i, b) in body {
            f[*i] = *b;
        }
        f
    };
    let mut u = Unpacker::new(Direction::Downstream);
    // G6 is reserved downstream.
    assert_eq!(u.unpack(&flit(hdr([0, 6, 1, 1], false), &[]), |_| ()), Err(UnpackError::ReservedFormat { slot: 1 }));
    // A G0 slot with no data due.
    assert_eq!(u.unpack(&flit(hdr([0, 1, 0, 1], false), &[]), |_| ()), Err(UnpackError::UnexpectedData { slot: 2 }));
    // A data header in slot 0 (H1: H2D DH) whose data slot 1 is not G0.
    let dh = flit(hdr([1, 1, 1, 1], true), &[(4, 1)]);
    assert_eq!(u.unpack(&dh, |_| ()), Err(UnpackError::DataExpected { slot: 1 }));
    // Three valid H2D Req (two in G2 slots, one in H0): more than two per flit.
    let reqs = flit(hdr([0, 2, 2, 1], false), &[(4, 1), (16, 1), (32, 1)]);
    assert_eq!(u.unpack(&reqs, |_| ()), Err(UnpackError::TooMany { kind: Kind::H2dReq }));
    // 32-byte M2S data (Sz = 0 with an M2S RwD in H4).
    let rwd = flit(hdr([4, 0, 0, 1], false), &[(4, 1)]);
    assert_eq!(u.unpack(&rwd, |_| ()), Err(UnpackError::Shape { kind: Kind::M2sRwd }));
    // A control flit is not a protocol flit.
    assert_eq!(u.unpack(&flit([1, 0, 0, 0], &[]), |_| ()), Err(UnpackError::Header(HeaderError::Control)));
    assert_eq!(u.pending_chunks(), 0);
    // An empty flit (every Valid clear) is fine and delivers nothing.
    assert_eq!(u.unpack(&flit(hdr([0, 1, 1, 1], false), &[]), |_| panic!()).map(|_| ()), Ok(()));
}

/// The kinds each direction sends, and a random message of each in 68B.
fn kinds(direction: Direction) -> Vec<Kind> {
    Kind::ALL
        .into_iter()
        .filter(|k| {
            k.downstream() == (direction == Direction::Downstream) && k.bits(crate::msg::Width::Flit68).is_some()
        })
        .collect()
}

fn random_msg(kind: Kind, bits: u128) -> Msg {
    let n = kind.bits(crate::msg::Width::Flit68).unwrap();
    let m = Msg::decode(kind, bits & ((1u128 << n) - 1) | 1, crate::msg::Width::Flit68).unwrap();
    // Normalise through an encode so reserved bits are cleared.
    Msg::decode(kind, m.encode(crate::msg::Width::Flit68).unwrap(), crate::msg::Width::Flit68).unwrap()
}

fn random_payload(kind: Kind, seed: u8, half: bool, be: bool) -> Payload {
    let shape = Shape { half, be };
    let shape = if shape.allowed(kind) { shape } else { Shape::default() };
    let mut bytes = line(seed);
    if shape.half {
        bytes[32..].fill(0);
    }
    Payload { bytes, half: shape.half, be: shape.be.then_some(u64::from(seed) * 0x0101_0101_0101) }
}

proptest! {
    /// Any interleaving of message queues packs into flits that the unpacker accepts, and
    /// unpacks to the same messages with the same data, in order per kind.
    #[test]
    fn packing_round_trip(
        down in any::<bool>(),
        mdh in any::<bool>(),
        script in proptest::collection::vec((0..8usize, any::<u128>(), any::<u8>(), any::<bool>(), any::<bool>(), 0..4usize), 1..64),
    ) {
        let direction = if down { Direction::Downstream } else { Direction::Upstream };
        let ks = kinds(direction);
        let mut q = Queues::<64>::default();
        let mut sent: Vec<(Msg, Option<Payload>)> = Vec::new();
        let mut p = Packer::new(direction).with_mdh(mdh);
        let mut u = Unpacker::new(direction).with_mdh(mdh);
        let mut got = Vec::new();
        for (k, bits, seed, half, be, flits_now) in script {
            let kind = ks[k % ks.len()];
            let msg = random_msg(kind, bits);
            let data = kind.has_data().then(|| random_payload(kind, seed, half, be));
            q.push(msg, data).unwrap();
            sent.push((msg, data));
            // Interleave: pack a few flits between arrivals.
            for _ in 0..flits_now {
                let mut f = [0u8; 64];
                if p.pack(&mut q, [Credit::NONE; 3], &mut f).unwrap().is_some() {
                    got.extend(unpack_all(&mut u, &[f]));
                }
            }
        }
        got.extend(unpack_all(&mut u, &pack_all(&mut p, &mut q)));
        prop_assert_eq!(u.pending_chunks(), 0);
        for kind in ks {
            let a: Vec<_> = sent.iter().filter(|(m, _)| m.kind() == kind).collect();
            let b: Vec<_> = got.iter().filter(|(m, _)| m.kind() == kind).collect();
            prop_assert_eq!(a, b, "{:?}", kind);
        }
    }

    /// Arbitrary flit bytes never panic the unpacker; a refused flit changes nothing.
    #[test]
    fn unpacker_total(down in any::<bool>(), mdh in any::<bool>(), flits in proptest::collection::vec(proptest::array::uniform32(any::<u16>()), 1..20)) {
        let direction = if down { Direction::Downstream } else { Direction::Upstream };
        let mut u = Unpacker::new(direction).with_mdh(mdh);
        for words in flits {
            let mut f = [0u8; 64];
            for (c, w) in f.chunks_exact_mut(2).zip(words) {
                c.copy_from_slice(&w.to_le_bytes());
            }
            let before = u.pending_chunks();
            if u.unpack(&f, |_| ()).is_err() {
                prop_assert_eq!(u.pending_chunks(), before);
            }
        }
    }
}
