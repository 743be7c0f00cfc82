//! Test-only: the packer and unpacker together, against the flit sequences of UALink 1.0 §5.2–5.4
//! and §5.7, and a property test that any traffic packs and unpacks to itself.
#![cfg(test)]

use super::compress::{Indexing, RxDecompressor, TxCompressor};
use super::credit::{Class, Target};
use super::field::{CreditReturn, CreditTarget, FlowControl};
use super::flit::beat_byte_enables;
use super::*;
use crate::Error;
use crate::upli::{AtomicAttr, AtomicOp, Command, OpSize, ReadResponse, Request, Status, WriteResponse};
use proptest::prelude::*;
use std::collections::HashMap;
use std::vec::Vec;

type P = Packer<16, 4, 64>;
type U = Unpacker<16, 4>;

/// Beats by the id they were pushed with.
#[derive(Default)]
struct Store(HashMap<u32, Vec<([u8; 64], u64, bool)>>);

impl BeatSource for Store {
    fn beat(&self, id: u32, beat: u8) -> Option<Beat<'_>> {
        let (data, byte_en, error) = self.0.get(&id)?.get(usize::from(beat))?;
        Some(Beat { data, byte_en: *byte_en, error: *error })
    }
}

fn beats_for(seed: u32, n: u8, poison: u8) -> Vec<([u8; 64], u64, bool)> {
    (0..n)
        .map(|b| {
            let mut d = [0u8; 64];
            for (i, x) in d.iter_mut().enumerate() {
                *x = (seed as usize * 31 + usize::from(b) * 7 + i) as u8;
            }
            (d, u64::from(seed) << 8 | u64::from(b) | 0xF0F0 << 32, poison >> b & 1 == 1)
        })
        .collect()
}

/// Plenty of credits in the pool of every class.
fn flush_credits(p: &mut P) {
    for class in Class::ALL {
        p.credits.held.add(class, Target::Pool, 1000).unwrap();
    }
}

fn pair(auth: bool, compress_responses: bool) -> (P, U) {
    let mut p = P::new(PackerConfig { auth, compress_responses }, TxCompressor::new(Indexing::ByDst, true));
    flush_credits(&mut p);
    (p, U::new(auth, RxDecompressor::new(Indexing::ByDst)))
}

/// A packer and unpacker whose caches hold `region` for destination `dst` (the first request to
/// a region travels uncompressed; the §5.4 examples assume a warm cache).
fn warm_pair(auth: bool, region: u64, dst: u16) -> (P, U) {
    let mut tx = TxCompressor::<16, 4>::new(Indexing::ByDst, true);
    let mut rx = RxDecompressor::<16, 4>::new(Indexing::ByDst);
    let f = tx.encode(&read(region << 20, dst, 0)).unwrap();
    rx.decode(&f).unwrap();
    let mut p = P::new(PackerConfig { auth, compress_responses: true }, tx);
    flush_credits(&mut p);
    (p, U::new(auth, rx))
}

fn req(cmd: Command, addr: u64, len: u8, num_beats: u8, tag: u16) -> Request {
    let attr = match cmd {
        Command::AtomicR | Command::AtomicNR => AtomicAttr { op: AtomicOp::Add, size: OpSize::Bits64 }.to_attr(),
        _ => Request::new(cmd, addr, len, tag, 1, 2).attr,
    };
    Request { num_beats, attr, ..Request::new(cmd, addr, len, tag, 1, 2) }
}

fn read(addr: u64, dst: u16, tag: u16) -> Request {
    Request { dst, ..req(Command::Read, addr, 63, 0, tag) }
}

fn write_full_256(addr: u64, tag: u16) -> Request {
    req(Command::WriteFull, addr, 63, 3, tag)
}

fn wr_rsp(tag: u16) -> Response {
    Response::Write(WriteResponse::new(tag, 0, 1))
}

fn rd_rsp(tag: u16, num_beats: u8) -> Response {
    Response::Read(ReadResponse::new(tag, 0, 1, num_beats + 1))
}

/// Packs until idle, unpacking each flit; returns the flits and what each carried (halves only).
fn run(p: &mut P, u: &mut U, store: &Store) -> (Vec<TlFlit>, Vec<(RxHalf<'static>, RxHalf<'static>)>) {
    let mut flits = Vec::new();
    let mut kinds = Vec::new();
    for _ in 0..10_000 {
        if p.is_idle() && u.owed_halves() == 0 {
            break;
        }
        let mut f = TlFlit::default();
        p.pack(store, &mut f).unwrap();
        let mut got = Unpacked::default();
        u.unpack(&f, &mut got).unwrap();
        kinds.push((strip(got.lower), strip(got.upper)));
        flits.push(f);
    }
    (flits, kinds)
}

/// A half's kind without its borrowed bytes.
fn strip(h: RxHalf<'_>) -> RxHalf<'static> {
    static ZERO: [u8; 32] = [0; 32];
    match h {
        RxHalf::Data { id, beat, second, .. } => RxHalf::Data { id, beat, second, bytes: &ZERO },
        RxHalf::ByteEnables { id, .. } => RxHalf::ByteEnables { id, bytes: &ZERO },
        RxHalf::Control => RxHalf::Control,
        RxHalf::MandatoryNop => RxHalf::MandatoryNop,
        RxHalf::AuthTags => RxHalf::AuthTags,
        RxHalf::Poisoned { id, beat, second } => RxHalf::Poisoned { id, beat, second },
        RxHalf::Message(m) => RxHalf::Message(m),
    }
}

fn data(id: u32, beat: u8, second: bool) -> RxHalf<'static> {
    static ZERO: [u8; 32] = [0; 32];
    RxHalf::Data { id, beat, second, bytes: &ZERO }
}

fn be(id: u32) -> RxHalf<'static> {
    static ZERO: [u8; 32] = [0; 32];
    RxHalf::ByteEnables { id, bytes: &ZERO }
}

#[test]
fn table_5_5_a_read_then_a_mandatory_nop() {
    let (mut p, mut u) = pair(false, true);
    p.push_request(0, read(0x4000, 2, 1)).unwrap();
    let (flits, kinds) = run(&mut p, &mut u, &Store::default());
    assert_eq!(kinds, [(RxHalf::Control, RxHalf::MandatoryNop)]);
    assert_eq!(flits[0].upper, [0; 32]);
    // An uncompressed request at sectors 3..0: FTYPE 1 in the top nibble of byte 15.
    assert_eq!(flits[0].lower[15] >> 4, 1);
}

#[test]
fn table_5_6_writefull_with_the_last_data_half_swapped_under_the_next_control() {
    let (mut p, mut u) = pair(false, true);
    let mut store = Store::default();
    store.0.insert(9, beats_for(9, 4, 0));
    p.push_request(9, write_full_256(0x1_0000, 3)).unwrap();
    // A credit to return, so the next control half-flit carries a flow-control field.
    p.owed.release(Class::ReqCmd, Target::Vc(1), 1).unwrap();
    let (flits, kinds) = run(&mut p, &mut u, &store);
    let d = |i: u8| data(0, i / 2, i % 2 == 1);
    assert_eq!(
        kinds,
        [(RxHalf::Control, d(0)), (d(1), d(2)), (d(3), d(4)), (d(5), d(6)), (RxHalf::Control, d(7))],
        "five flits, Req0.Data.7 above the next control half-flit"
    );
    assert_eq!(flits[4].upper[..], store.0[&9][3].0[32..]);
}

#[test]
fn table_5_8_write_and_atomic_with_byte_enables_and_a_swap() {
    let (mut p, mut u) = pair(false, true);
    let mut store = Store::default();
    store.0.insert(0, beats_for(1, 1, 0));
    store.0.insert(1, beats_for(2, 1, 0));
    p.push_request(0, req(Command::Write, 0x80, 15, 0, 1)).unwrap();
    p.push_request(1, req(Command::AtomicR, 0x2000, 1, 0, 2)).unwrap();
    let (flits, kinds) = run(&mut p, &mut u, &store);
    assert_eq!(
        kinds,
        [
            (RxHalf::Control, data(0, 0, false)),
            (data(0, 0, true), be(0)),
            (data(1, 0, false), data(1, 0, true)),
            (RxHalf::Control, be(1)),
        ]
    );
    // The write at 0x80 has its enables at bytes 16..24 of its byte-enable half-flit.
    assert_eq!(beat_byte_enables(&flits[1].upper, 0x80, 0), store.0[&0][0].1);
}

#[test]
fn table_5_13_poisoned_beat_replaces_both_its_halves() {
    let (mut p, mut u) = pair(false, true);
    let mut store = Store::default();
    store.0.insert(0, beats_for(4, 4, 0b0010));
    p.push_request(0, write_full_256(0, 1)).unwrap();
    let (flits, kinds) = run(&mut p, &mut u, &store);
    let poisoned = |second| RxHalf::Poisoned { id: 0, beat: 1, second };
    assert_eq!(kinds[1], (data(0, 0, true), poisoned(false)));
    assert_eq!(kinds[2], (poisoned(true), data(0, 2, false)));
    assert!(flits[1].m1 && flits[2].m0 && !flits[2].m1);
    assert_eq!(flits[1].upper[0], 0x20);
}

/// Data bytes over all bytes, as §5.4 counts them.
fn efficiency(flits: usize, data_bytes: usize) -> f64 {
    data_bytes as f64 / (flits * 64) as f64
}

#[test]
fn table_5_18_five_compressed_writefulls_and_five_responses_reach_95_24_percent() {
    let (mut p, mut u) = warm_pair(false, 0, 2);
    let mut store = Store::default();
    for i in 0..5u32 {
        store.0.insert(i, beats_for(i, 4, 0));
        p.push_request(i, write_full_256(u64::from(i) * 256, i as u16)).unwrap();
        p.push_response(100 + i, wr_rsp(50 + i as u16)).unwrap();
    }
    let (flits, _) = run(&mut p, &mut u, &store);
    assert_eq!(flits.len(), 21);
    assert_eq!(p.stats.data_halves * 32, 1280);
    assert!((p.stats.efficiency() - 1280.0 / 1344.0).abs() < 1e-12);
    assert!((efficiency(21, 1280) - 0.9524).abs() < 1e-4);
}

#[test]
fn table_5_20_five_compressed_reads_and_five_read_responses_reach_95_24_percent() {
    let (mut p, mut u) = warm_pair(false, 0, 2);
    let mut store = Store::default();
    for i in 0..5u32 {
        store.0.insert(100 + i, beats_for(i, 4, 0));
        p.push_request(i, read(u64::from(i) * 256, 2, i as u16)).unwrap();
        p.push_response(100 + i, rd_rsp(50 + i as u16, 3)).unwrap();
    }
    let (flits, _) = run(&mut p, &mut u, &store);
    assert_eq!(flits.len(), 21);
    assert!((p.stats.efficiency() - 1280.0 / 1344.0).abs() < 1e-12);
}

#[test]
fn table_5_19_with_authentication_two_writes_two_responses_reach_88_89_percent() {
    let (mut p, mut u) = warm_pair(true, 0, 2);
    let mut store = Store::default();
    for i in 0..2u32 {
        store.0.insert(i, beats_for(i, 4, 0));
        p.push_request(i, Request { auth_tag: 0xA0 + u64::from(i), ..write_full_256(u64::from(i) * 256, i as u16) })
            .unwrap();
        let mut r = wr_rsp(50 + i as u16);
        r.set_auth_tag(0xB0 + u64::from(i));
        p.push_response(100 + i, r).unwrap();
    }
    let mut flits = Vec::new();
    let mut tags = Vec::new();
    while !(p.is_idle() && u.owed_halves() == 0) {
        let mut f = TlFlit::default();
        p.pack(&store, &mut f).unwrap();
        flits.push(f);
        let mut got = Unpacked::default();
        u.unpack(flits.last().unwrap(), &mut got).unwrap();
        for it in &got.items {
            tags.push(match it {
                RxItem::Request { req, .. } => req.auth_tag,
                RxItem::Response { rsp, .. } => rsp.auth_tag(),
            });
        }
    }
    assert_eq!(flits.len(), 9);
    assert!((p.stats.efficiency() - 512.0 / 576.0).abs() < 1e-12);
    tags.sort_unstable();
    assert_eq!(tags, [0xA0, 0xA1, 0xB0, 0xB1], "every item authenticated with its own tag");
}

#[test]
fn table_5_24_request_rate_limit() {
    // Compressed (2-sector) reads, so four fit in one control half-flit.
    let (mut p, mut u) = warm_pair(false, 0, 2);
    for i in 0..9u16 {
        p.push_request(u32::from(i), read(u64::from(i) * 256, 2, i)).unwrap();
    }
    let mut per_flit = Vec::new();
    while !p.is_idle() {
        let mut f = TlFlit::default();
        p.pack(&Store::default(), &mut f).unwrap();
        let mut got = Unpacked::default();
        u.unpack(&f, &mut got).unwrap();
        per_flit.push(got.items.len());
    }
    assert_eq!(per_flit, [4, 1, 1, 1, 1, 1]);
}

#[test]
fn credits_gate_requests_and_come_back_through_flow_control() {
    let mut p =
        P::new(PackerConfig { auth: false, compress_responses: true }, TxCompressor::new(Indexing::ByDst, true));
    let mut u = U::new(false, RxDecompressor::new(Indexing::ByDst));
    p.push_request(0, read(0, 2, 1)).unwrap();
    assert!(!p.is_idle() && !p.has_work(), "queued, but nothing can go out");
    let mut f = TlFlit::default();
    p.pack(&Store::default(), &mut f).unwrap();
    let mut got = Unpacked::default();
    u.unpack(&f, &mut got).unwrap();
    assert!(got.items.is_empty(), "no credits, no request");
    // The peer advertises one VC 0 request credit.
    let fc = FlowControl { req_cmd: CreditReturn { target: CreditTarget::Vc(0), credits: 1 }, ..FlowControl::NOP };
    p.credits.grant(&fc).unwrap();
    assert!(p.has_work());
    p.pack(&Store::default(), &mut f).unwrap();
    let mut got = Unpacked::default();
    u.unpack(&f, &mut got).unwrap();
    assert!(matches!(got.items[..], [RxItem::Request { req: Request { pool: false, vc: 0, .. }, .. }]));
    // The receiver returns it; its flow-control field reads back as the same credit.
    p.owed.release(Class::ReqCmd, Target::Vc(0), 1).unwrap();
    p.pack(&Store::default(), &mut f).unwrap();
    let mut got = Unpacked::default();
    u.unpack(&f, &mut got).unwrap();
    assert_eq!(got.credits[..], [fc]);
}

#[test]
fn initial_credit_release_complete_follows_the_credits() {
    let (mut p, mut u) = pair(false, true);
    p.owed.release(Class::ReqData, Target::Pool, 100).unwrap();
    p.send_message(Message::new(MessageType::InitialCreditReleaseComplete)).unwrap();
    let mut seen = Vec::new();
    while !p.is_idle() {
        let mut f = TlFlit::default();
        p.pack(&Store::default(), &mut f).unwrap();
        let mut got = Unpacked::default();
        u.unpack(&f, &mut got).unwrap();
        seen.push((got.credits.iter().map(|c| u32::from(c.req_data.credits)).sum::<u32>(), strip(got.lower)));
    }
    assert_eq!(
        seen,
        [
            // One field per class and target in a control half-flit: 100 pool credits take four.
            (31, RxHalf::Control),
            (31, RxHalf::Control),
            (31, RxHalf::Control),
            (7, RxHalf::Control),
            (0, RxHalf::Message(Message::new(MessageType::InitialCreditReleaseComplete))),
        ]
    );
}

/// Link down mid-transfer (§3.1.4.3): the packer hands back every item it still held, once; the
/// unpacker names the item whose data was cut off; both start afresh, with no credits and empty
/// address caches, and the next request after the credits are advertised again goes through.
#[test]
fn link_down_drops_everything_held_once_and_the_link_starts_afresh() {
    let (mut p, mut u) = warm_pair(false, 0, 2);
    let mut store = Store::default();
    store.0.insert(1, beats_for(1, 4, 0));
    p.push_request(1, write_full_256(0, 1)).unwrap();
    for id in 2..=7u32 {
        p.push_request(id, read(0x100 * u64::from(id), 2, id as u16)).unwrap();
    }
    p.push_response(9, wr_rsp(9)).unwrap();
    // Two flits: the response, the WriteFull and its first data half-flits go out, and as many
    // reads as the §5.7 rate limit lets through (five in two flits); the rest wait.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut f = TlFlit::default();
        p.pack(&store, &mut f).unwrap();
        let mut got = Unpacked::default();
        u.unpack(&f, &mut got).unwrap();
        ids.extend(got.items.iter().map(|i| match i {
            RxItem::Request { id, .. } | RxItem::Response { id, .. } => *id,
        }));
    }
    assert!(u.owed_halves() > 0, "the WriteFull's data is still owed");
    let mut dropped = Vec::new();
    p.link_down(|d| dropped.push(d));
    // Every item pushed was either sent whole or is handed back, once.
    assert_eq!(dropped[0], Dropped::Unfinished(1), "the WriteFull whose data was cut off");
    let queued_requests = dropped.iter().filter(|d| matches!(d, Dropped::Request(_))).count();
    let queued_responses = dropped.iter().filter(|d| matches!(d, Dropped::Response(9))).count();
    assert_eq!(queued_requests as u64, 7 - p.stats.requests, "{dropped:?}");
    assert_eq!(queued_responses as u64, 1 - p.stats.responses, "{dropped:?}");
    assert_eq!(dropped.len(), 1 + queued_requests + queued_responses, "{dropped:?}");
    assert!(queued_requests > 0, "the reads were still queued");
    let mut unfinished = Vec::new();
    u.link_down(|id| unfinished.push(id));
    let wf_id = ids.iter().copied().find(|&id| unfinished.contains(&id));
    assert_eq!(unfinished.len(), 1);
    assert!(wf_id.is_some());
    // Afresh: nothing queued, no credits, the caches empty (the first read after reset travels
    // uncompressed and loads them again).
    assert!(p.is_idle());
    assert_eq!(p.credits.held, super::credit::Ledger::EMPTY);
    flush_credits(&mut p);
    p.push_request(4, read(0x300, 2, 4)).unwrap();
    let (flits, kinds) = run(&mut p, &mut u, &store);
    assert_eq!(flits[0].lower[15] >> 4, 0x1, "uncompressed: the caches were cleared");
    assert_eq!(kinds[0], (RxHalf::Control, RxHalf::MandatoryNop));
}

/// Feeds hand-made flits to a fresh unpacker.
fn feed(auth: bool, flits: &[TlFlit]) -> Result<(), Error> {
    let mut u = U::new(auth, RxDecompressor::new(Indexing::ByDst));
    for f in flits {
        u.unpack(f, &mut Unpacked::default())?;
    }
    Ok(())
}

fn control_flit(fields: &[(u8, ControlField)]) -> TlFlit {
    let mut f = TlFlit::default();
    ControlHalfFlit { fields: heapless::Vec::from_slice(fields).unwrap() }.emit(&mut f.lower).unwrap();
    f
}

fn field(r: Request) -> ControlField {
    TxCompressor::<16, 4>::new(Indexing::ByDst, false).encode(&r).unwrap()
}

/// What one flit unpacks to (items and credit fields), and whether the unpacker counted an open
/// bit in it.
fn take_one(auth: bool, f: &TlFlit) -> (Vec<RxItem>, Vec<FlowControl>, u64) {
    let mut u = U::new(auth, RxDecompressor::new(Indexing::ByDst));
    let mut out = Unpacked::default();
    u.unpack(f, &mut out).unwrap();
    (out.items.to_vec(), out.credits.to_vec(), u.reserved_ignored())
}

/// Sets bits `mask` of the little-endian field value at sector `low` of a half-flit.
fn set_field_bits(half: &mut [u8; 32], low: usize, mask: u128) {
    for (i, b) in mask.to_le_bytes().iter().enumerate() {
        if *b != 0 {
            half[4 * low + i] |= b;
        }
    }
}

/// Every bit the tables leave open is ignored on receive (§6.4's convention, applied to the TL), the flit
/// reads as its clean twin, and the unpacker counts it for warnings.
#[test]
fn open_bits_are_ignored_on_receive_and_counted() {
    use super::field::layout::{compressed_response as cr, flow_control as fcl};
    use super::field::layout::{uncompressed_request as uq, uncompressed_response as ur};
    use super::field::{CompressedResponse, UncompressedResponse};
    let write_rsp = UncompressedResponse {
        vc: 1,
        tag: 9,
        pool: true,
        len: 0,
        offset: 0,
        status: 0b0010,
        read: false,
        last: false,
        src: 3,
        dst: 4,
    };
    let c_write = CompressedResponse { vc: 0, tag: 5, pool: false, dst: 6, len: 0, read: false };
    let fc = FlowControl { rsp_data: CreditReturn { target: CreditTarget::Pool, credits: 3 }, ..FlowControl::NOP };
    let clean = control_flit(&[
        (0, field(read(0x4000, 2, 1))),
        (4, ControlField::UncompressedResponse(write_rsp)),
        (6, ControlField::CompressedResponse(c_write)),
        (7, ControlField::FlowControl(fc)),
    ]);
    let (items, credits, counted) = take_one(false, &clean);
    assert_eq!((items.len(), credits.len(), counted), (3, 1, 0));
    let vv_of_rsp_data = 1u128 << (fcl::RSP_DATA.lo + 5);
    for (name, low, mask) in [
        ("CWAY without CLOAD", 0, uq::CWAY.mask()),
        ("NUMBEATS of a read", 0, uq::NUMBEATS.mask()),
        ("uncompressed response SPARE", 4, ur::SPARE.mask()),
        ("LEN/OFFSET/LAST of a write response", 4, ur::LEN.mask() | ur::OFFSET.mask() | ur::LAST.mask()),
        ("compressed response SPARE", 6, cr::SPARE.mask()),
        ("LEN of a compressed write response", 6, cr::OFFSET_OR_LEN.mask()),
        ("FC vv with t = 0", 7, vv_of_rsp_data),
    ] {
        let mut dirty = clean;
        set_field_bits(&mut dirty.lower, low, mask);
        assert_ne!(dirty, clean, "{name}");
        assert!(ControlHalfFlit::check_reserved(&dirty.lower).is_err(), "{name}");
        assert_eq!(take_one(false, &dirty), (items.clone(), credits.clone(), 1), "{name}");
    }
    // ReqAttr[1] of an atomic: passed up as carried (it is the completer's), counted.
    let atomic = req(Command::AtomicR, 32, 7, 0, 1);
    let (want, _, _) = take_one(false, &control_flit(&[(0, field(atomic))]));
    let mut dirty = control_flit(&[(0, field(atomic))]);
    set_field_bits(&mut dirty.lower, 0, uq::ATTR.place(u64::from(AtomicAttr::RESERVED)));
    let (got, _, counted) = take_one(false, &dirty);
    let strip = |items: &[RxItem]| match items {
        [RxItem::Request { req, .. }] => Request { attr: req.attr & !AtomicAttr::RESERVED, ..*req },
        other => panic!("one request: {other:?}"),
    };
    assert_eq!((strip(&got), counted), (strip(&want), 1));
    // An unused AuthTag that is not zero.
    let mut auth = control_flit(&[(0, field(read(0, 2, 1)))]);
    auth.upper[..8].copy_from_slice(&7u64.to_le_bytes());
    let (want, _, counted) = take_one(true, &auth);
    assert_eq!(counted, 0);
    auth.upper[24..].copy_from_slice(&0xDEADu64.to_le_bytes());
    assert_eq!(take_one(true, &auth), (want, Vec::new(), 1));
}

#[test]
fn illegal_sequences_are_refused_and_stop_the_receiver() {
    // A mandatory NOP that is not all zero.
    let mut f = control_flit(&[(0, field(read(0, 2, 1)))]);
    f.upper[5] = 1;
    assert_eq!(feed(false, &[f]), Err(Error::BadValue { field: "mandatory NOP half-flit not all zero", value: 0 }));
    // Three requests, then three more: after three the rate limit allows two.
    let mut tx = TxCompressor::<16, 4>::new(Indexing::ByDst, true);
    let three = |tx: &mut TxCompressor<16, 4>, t: u16| {
        let fields = [0u64, 1, 2].map(|i| tx.encode(&read((u64::from(t) << 20) | (i * 256), 2, t + i as u16)).unwrap());
        control_flit(&[(0, fields[0]), (4, fields[1]), (6, fields[2])])
    };
    let (a1, a2) = (three(&mut tx, 0), three(&mut tx, 3));
    assert_eq!((a2.lower[15] >> 4, a2.lower[23] >> 4, a2.lower[31] >> 4), (1, 3, 3), "one load, two compressed");
    assert_eq!(feed(false, &[a1, a2]), Err(Error::BadValue { field: "requests beyond the §5.7 rate limit", value: 3 }));
    // Poisoned Data in place of byte enables: a 64-byte write owes data, data, enables.
    let w = control_flit(&[(0, field(req(Command::Write, 0, 15, 0, 1)))]);
    let mut d = TlFlit { m1: true, ..TlFlit::default() };
    d.upper[0] = 0x20;
    assert_eq!(
        feed(false, &[w, d]),
        Err(Error::BadValue { field: "Poisoned Data in place of byte enables", value: 0x20 })
    );
    // Poisoned Data in half a beat.
    let wf = control_flit(&[(0, field(req(Command::WriteFull, 0, 15, 0, 1)))]);
    let mut half_poisoned = wf;
    half_poisoned.m1 = true;
    half_poisoned.upper[0] = 0x20;
    assert_eq!(
        feed(false, &[half_poisoned, TlFlit::default()]),
        Err(Error::BadValue { field: "Poisoned Data in half a beat", value: 0 })
    );
    // A message in place of AuthTags.
    let mut a = control_flit(&[(0, field(read(0, 2, 1)))]);
    a.m1 = true;
    assert_eq!(feed(true, &[a]), Err(Error::BadValue { field: "message in place of AuthTags", value: 1 }));
    // A compressed request naming a way never loaded.
    let c = ControlField::CompressedRequest(CompressedRequest {
        cmd: CompressedCmd::Read,
        vc: 0,
        asi: 0,
        tag: 1,
        pool: true,
        len: 0,
        metadata: 0,
        addr_block: 0,
        src: 1,
        dst: 2,
        way: 1,
    });
    assert_eq!(
        feed(false, &[control_flit(&[(0, c)])]),
        Err(Error::BadValue { field: "CWAY (entry never loaded)", value: 1 })
    );
    // The receiver reads compressed requests straight from their bits: an undefined command,
    // and a transfer past its 256-byte block after the way was loaded, are refused there too.
    let mut undefined = TlFlit::default();
    undefined.lower[..8].copy_from_slice(&(0x3u64 << 60 | 0b001 << 57).to_le_bytes());
    assert_eq!(feed(false, &[undefined]), Err(Error::BadValue { field: "compressed CMD", value: 1 }));
    let mut tx = TxCompressor::<16, 4>::new(Indexing::ByDst, true);
    let load = control_flit(&[(0, tx.encode(&read(0x1230_0000, 2, 1)).unwrap())]);
    let ControlField::CompressedRequest(hit) = tx.encode(&read(0x1230_0100, 2, 2)).unwrap() else {
        panic!("a hit compresses")
    };
    let crossing = ControlField::CompressedRequest(CompressedRequest { addr_block: hit.addr_block | 3, len: 1, ..hit });
    assert_eq!(
        feed(false, &[load, TlFlit::default(), control_flit(&[(0, crossing)])]),
        Err(Error::BadValue { field: "ReqLen (crosses a 256-byte boundary)", value: 31 })
    );
    // After a refusal, nothing more is read.
    let mut u = U::new(false, RxDecompressor::new(Indexing::ByDst));
    assert!(u.unpack(&f, &mut Unpacked::default()).is_err());
    assert_eq!(u.unpack(&TlFlit::default(), &mut Unpacked::default()), Err(Error::Stopped));
}

/// One request or response of the generated traffic, with its data.
#[derive(Clone, Debug)]
enum Item {
    Req(Request, u8),
    Rsp(Response, u8),
}

fn any_request() -> impl Strategy<Value = Request> {
    (0u8..9, 0u64..4, 0u64..64, 0u8..4, 1u8..5, any::<u16>(), 0u16..4, any::<u64>()).prop_map(
        |(kind, region, block, off, beats, seed, dst, tag)| {
            let beats = beats.min(4 - off);
            let addr = region << 20 | block << 8 | u64::from(off) << 6;
            let (cmd, len, num_beats, attr, metadata) = match kind {
                0 => (Command::Read, 16 * beats - 1, 0, 0xFF, 0),
                1 => (Command::Read, (seed % 16) as u8, 0, seed as u8, 0),
                2 => (Command::WriteFull, 16 * beats - 1, beats - 1, 0, 0),
                3 => (Command::Write, 16 * beats - 1, beats - 1, (seed >> 8) as u8 & 1, 0),
                4 => {
                    // Compare (double operand) is a 64-byte transfer (ReqLen 15); the others one
                    // 8-byte element.
                    let op = AtomicOp::from_code(seed as u8);
                    let len = if op == AtomicOp::Compare { 15 } else { 1 };
                    (Command::AtomicR, len, 0, AtomicAttr { op, size: OpSize::Bits64 }.to_attr(), 0)
                }
                5 => (Command::AtomicNR, 15, 0, AtomicAttr { op: AtomicOp::Swap, size: OpSize::Bits32 }.to_attr(), 0),
                // A key roll is one beat (Table 2-7); a vendor message may have more.
                6 => (Command::WriteMessage, 15, beats - 1, 0, if beats == 1 { 1 } else { 0xF0 | (seed % 16) as u8 }),
                7 => (Command::VendorWrite((seed % 4) as u8), 16 * beats - 1, beats - 1, 0, 0),
                _ => (Command::VendorRead((seed % 8) as u8), 16 * beats - 1, 0, 0, (seed % 4) as u8),
            };
            Request {
                cmd,
                addr,
                len,
                num_beats,
                tag: 0,
                src: 1,
                dst,
                attr,
                metadata,
                asi: (seed % 4) as u8,
                vc: (seed >> 4) as u8 % 4,
                pool: false,
                auth_tag: tag,
            }
        },
    )
}

fn any_response() -> impl Strategy<Value = Response> {
    (prop::bool::ANY, 0u8..4, 0u8..4, prop::bool::ANY, 0u8..15, 0u8..4, any::<u64>()).prop_map(
        |(is_read, beats, offset, last, status, vc, tag)| {
            let status = if status < 10 { Status::Okay } else { Status::from_code(status) };
            if is_read {
                let (offset, last) = if beats > 0 { (0, true) } else { (offset, last) };
                Response::Read(ReadResponse {
                    tag: 0,
                    src: 0,
                    dst: 7,
                    status,
                    num_beats: beats,
                    offset,
                    last,
                    vc,
                    pool: false,
                    auth_tag: tag,
                })
            } else {
                Response::Write(WriteResponse { tag: 0, src: 0, dst: 7, status, vc, pool: false, auth_tag: tag })
            }
        },
    )
}

fn any_item() -> impl Strategy<Value = Item> {
    prop_oneof![
        (any_request(), any::<u8>()).prop_map(|(r, p)| Item::Req(r, p)),
        (any_response(), any::<u8>()).prop_map(|(r, p)| Item::Rsp(r, p))
    ]
}

/// Received data per (request?, tag): beats with poison flags, and byte enables per beat.
type Got = HashMap<(bool, u16), (Vec<([u8; 64], bool)>, Vec<u64>)>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Any UPLI traffic — every command shape, responses of every status, poisoned beats, with
    /// and without authentication, compressed or not, with credits that arrive in drips — packs
    /// and unpacks to itself: requests in order, responses all there, data and byte enables
    /// intact, poison where it was, every credit returned.
    #[test]
    fn any_traffic_packs_and_unpacks_to_itself(
        items in prop::collection::vec(any_item(), 1..120),
        auth in prop::bool::ANY,
        compress in prop::bool::ANY,
        drip in 4u16..40,
    ) {
        let mut p = P::new(PackerConfig { auth, compress_responses: compress }, TxCompressor::new(Indexing::ByDst, compress));
        let mut u = U::new(auth, RxDecompressor::new(Indexing::ByDst));
        let mut store = Store::default();
        let (mut want_req, mut want_rsp) = (Vec::new(), Vec::new());
        let (mut got_req, mut got_rsp) = (Vec::new(), Vec::new());
        let mut got: Got = HashMap::new();
        let mut ids: HashMap<u32, (bool, u16, u64, Command)> = HashMap::new();
        let mut pending = items.clone();
        pending.reverse();
        let mut tag = 0u16;
        let mut flits = 0;
        // `drip` credits of every class for the pool and each VC; each comes back on receipt.
        for class in Class::ALL {
            for t in [Target::Pool, Target::Vc(0), Target::Vc(1), Target::Vc(2), Target::Vc(3)] {
                p.credits.held.add(class, t, drip).unwrap();
            }
        }
        let initial = p.credits;
        while flits < 20_000 {
            while let Some(it) = pending.last().cloned() {
                let id = u32::from(tag);
                let ok = match it {
                    Item::Req(mut r, poison) => {
                        r.tag = tag;
                        if !auth { r.auth_tag = 0; }
                        store.0.insert(id, beats_for(id, r.data_beats(), poison));
                        let ok = p.push_request(id, r).is_ok();
                        if ok { want_req.push(r); }
                        ok
                    }
                    Item::Rsp(mut r, poison) => {
                        match &mut r { Response::Read(x) => x.tag = tag, Response::Write(x) => x.tag = tag }
                        if !auth { r.set_auth_tag(0); }
                        store.0.insert(id, beats_for(id, r.data_beats(), poison));
                        let ok = p.push_response(id, r).is_ok();
                        if ok { want_rsp.push(r); }
                        ok
                    }
                };
                if !ok { break; }
                pending.pop();
                tag += 1;
            }
            if pending.is_empty() && p.is_idle() && u.owed_halves() == 0 { break; }
            let mut f = TlFlit::default();
            p.pack(&store, &mut f).unwrap();
            flits += 1;
            let mut out = Unpacked::default();
            u.unpack(&f, &mut out).unwrap();
            for it in &out.items {
                match *it {
                    RxItem::Request { id, req } => {
                        let t = Target::of(req.pool, req.vc);
                        p.credits.held.add(Class::ReqCmd, t, 1).unwrap();
                        p.credits.held.add(Class::ReqData, t, u16::from(req.data_beats())).unwrap();
                        ids.insert(id, (true, req.tag, req.addr, req.cmd));
                        got_req.push(req);
                    }
                    RxItem::Response { id, rsp } => {
                        let ct = Target::of(rsp.pool(), rsp.vc());
                        p.credits.held.add(Class::RspCmd, ct, 1).unwrap();
                        p.credits.held.add(Class::RspData, ct, u16::from(rsp.data_beats())).unwrap();
                        let t = match rsp { Response::Read(x) => x.tag, Response::Write(x) => x.tag };
                        ids.insert(id, (false, t, 0, Command::Read));
                        got_rsp.push(rsp);
                    }
                }
            }
            for h in [out.lower, out.upper] {
                match h {
                    RxHalf::Data { id, beat, second, bytes } => {
                        let (is_req, t, _, _) = ids[&id];
                        let e = got.entry((is_req, t)).or_default();
                        if e.0.len() <= usize::from(beat) { e.0.resize(usize::from(beat) + 1, ([0; 64], false)); }
                        let at = if second { 32 } else { 0 };
                        e.0[usize::from(beat)].0[at..at + 32].copy_from_slice(bytes);
                    }
                    RxHalf::Poisoned { id, beat, .. } => {
                        let (is_req, t, _, _) = ids[&id];
                        let e = got.entry((is_req, t)).or_default();
                        if e.0.len() <= usize::from(beat) { e.0.resize(usize::from(beat) + 1, ([0; 64], false)); }
                        e.0[usize::from(beat)].1 = true;
                    }
                    RxHalf::ByteEnables { id, bytes } => {
                        let (is_req, t, addr, cmd) = ids[&id];
                        let n = store.0[&u32::from(t)].len() as u8;
                        prop_assert!(cmd.has_byte_enables());
                        let e = got.entry((is_req, t)).or_default();
                        e.1 = (0..n).map(|b| beat_byte_enables(bytes, addr, b)).collect();
                    }
                    _ => {}
                }
            }
        }
        prop_assert!(pending.is_empty() && p.is_idle(), "everything sent in {} flits", flits);
        prop_assert_eq!(p.credits, initial, "no credit leaked");
        let unpool = |mut r: Request| { r.pool = false; r };
        prop_assert_eq!(got_req.into_iter().map(unpool).collect::<Vec<_>>(), want_req.clone());
        let key = |r: &Response| { let mut r = *r; r.set_pool(false); format!("{r:?}") };
        let mut a: Vec<_> = got_rsp.iter().map(key).collect();
        let mut b: Vec<_> = want_rsp.iter().map(key).collect();
        a.sort(); b.sort();
        prop_assert_eq!(a, b);
        // Data, poison and enables.
        for r in &want_req {
            let sent = &store.0[&u32::from(r.tag)];
            let e = got.get(&(true, r.tag)).cloned().unwrap_or_default();
            prop_assert_eq!(e.0.len(), sent.len());
            for (g, s) in e.0.iter().zip(sent) {
                prop_assert_eq!(g.1, s.2);
                if !s.2 { prop_assert_eq!(g.0, s.0); }
            }
            if r.cmd.has_byte_enables() {
                prop_assert_eq!(e.1, sent.iter().map(|s| s.1).collect::<Vec<_>>());
            }
        }
        for r in &want_rsp {
            let t = match r { Response::Read(x) => x.tag, Response::Write(x) => x.tag };
            let sent = &store.0[&u32::from(t)];
            let e = got.get(&(false, t)).cloned().unwrap_or_default();
            prop_assert_eq!(e.0.len(), sent.len());
            for (g, s) in e.0.iter().zip(sent) {
                prop_assert_eq!(g.1, s.2);
                if !s.2 { prop_assert_eq!(g.0, s.0); }
            }
        }
    }
}

#[test]
fn holds_data_until_the_last_half_flit_of_an_item_is_packed() {
    let (mut p, mut u) = pair(false, true);
    let mut store = Store::default();
    store.0.insert(5, beats_for(5, 4, 0));
    let w = req(Command::Write, 0x4000, 63, 3, 1);
    assert!(!p.holds_data(5));
    p.push_request(5, w).unwrap();
    let (mut data, mut enables, mut flits) = (0, 0, 0);
    while p.holds_data(5) {
        assert!(flits < 10, "a 256-byte write packs in a few flits");
        let mut f = TlFlit::default();
        p.pack(&store, &mut f).unwrap();
        flits += 1;
        let mut out = Unpacked::default();
        u.unpack(&f, &mut out).unwrap();
        for h in [out.lower, out.upper] {
            data += usize::from(matches!(h, RxHalf::Data { .. }));
            enables += usize::from(matches!(h, RxHalf::ByteEnables { .. }));
        }
    }
    assert_eq!((data, enables), (8, 1), "every half-flit of the write was packed before the packer let go");
    // Released: the packer never asks for those beats again.
    store.0.clear();
    for _ in 0..4 {
        let mut f = TlFlit::default();
        p.pack(&store, &mut f).unwrap();
    }
    assert_eq!(p.stats.missing_beats, 0);
}

/// The parts of one read answered beat by beat (single-beat read responses, §5.5) leave in the
/// order they were queued, lowest sector first, so a receiver reading up the half-flit meets the
/// part marked Last last; responses of other sizes in between do not change that.
#[test]
fn parts_of_one_read_leave_in_queue_order() {
    for compress in [false, true] {
        let (mut p, mut u) = pair(false, compress);
        let part =
            |offset: u8, last: bool| Response::Read(ReadResponse { offset, last, ..ReadResponse::new(5, 0, 1, 1) });
        p.push_response(1, part(0, false)).unwrap();
        p.push_response(2, wr_rsp(8)).unwrap();
        p.push_response(3, part(1, false)).unwrap();
        p.push_response(4, part(2, true)).unwrap();
        let mut f = TlFlit::default();
        p.pack(&Store::default(), &mut f).unwrap();
        let mut got = Unpacked::default();
        u.unpack(&f, &mut got).unwrap();
        let parts: Vec<(u8, bool)> = got
            .items
            .iter()
            .filter_map(|i| match i {
                RxItem::Response { rsp: Response::Read(r), .. } => Some((r.offset, r.last)),
                _ => None,
            })
            .collect();
        assert_eq!(parts, [(0, false), (1, false), (2, true)], "compressed: {compress}");
    }
}
