use super::*;
use crate::pdc::ipv4;
use aes_gcm::aead::{AeadInOut, KeyInit};
use proptest::prelude::*;
use std::vec::Vec;

const KEY0: [u8; 32] = [0x11; 32];
const KEY1: [u8; 32] = [0x22; 32];
const A4: IpAddr = ipv4([10, 0, 0, 1]);
const B4: IpAddr = ipv4([10, 0, 0, 2]);
const A6: IpAddr = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xa];
const B6: IpAddr = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb];

type Dom = SecureDomain<4>;

fn pair(mode: Mode, ssi: (Option<u32>, Option<u32>)) -> (Dom, Dom) {
    let mut a = Dom::new(DomainConfig { ssi: ssi.0, ..DomainConfig::new(0x123, mode) });
    let mut b = Dom::new(DomainConfig { ssi: ssi.1, ..DomainConfig::new(0x123, mode) });
    a.install(false, KEY0);
    b.install(false, KEY0);
    (a, b)
}

/// A sealed packet from `d` along `path` carrying `plain` after the header.
fn seal(d: &mut Dom, path: &Path, plain: &[u8]) -> Result<Vec<u8>, TssError> {
    let (h, icv) = d.overhead();
    let mut buf = std::vec![0u8; h + plain.len() + icv];
    buf[h..h + plain.len()].copy_from_slice(plain);
    let n = d.seal(&mut buf, h + plain.len(), path)?;
    assert_eq!(n, buf.len());
    Ok(buf)
}

fn open(d: &mut Dom, path: &Path, mut pkt: Vec<u8>) -> Result<Vec<u8>, TssError> {
    let o = d.open(&mut pkt, path)?;
    Ok(pkt[o.body].to_vec())
}

fn paths(v6: bool, native: bool) -> (Path, Path) {
    let framing = if native { Framing::NativeIp([0xAB, 0xCD, 0, 0]) } else { Framing::Udp };
    let (a, b) = if v6 { (A6, B6) } else { (A4, B4) };
    (Path::new(a, b, framing), Path::new(b, a, framing))
}

#[test]
fn every_mode_and_framing_round_trips() {
    let plain: Vec<u8> = (0..100u8).collect();
    // A client talks to a server: the server case pairs them.
    for mode in [Mode::Direct, Mode::Cluster, Mode::Server] {
        for v6 in [false, true] {
            for native in [false, true] {
                for ssi in [(None, None), (Some(0xA), Some(0xB))] {
                    let (mut a, mut b) = pair(mode, ssi);
                    let (ab, mut ba) = paths(v6, native);
                    if mode == Mode::Direct && v6 && ssi.0.is_none() {
                        // Every sender's IV would start with the SDI under the one key.
                        assert_eq!(seal(&mut a, &ab, &plain), Err(TssError::SsiRequired));
                        let mut forged = seal(&mut pair(mode, (Some(1), None)).0, &ab, &plain).unwrap();
                        forged[0] &= !0x04; // SP cleared: the same header without SSI
                        let forged: Vec<u8> = [&forged[..4], &forged[8..]].concat();
                        assert_eq!(open(&mut b, &ab, forged), Err(TssError::SsiRequired));
                        continue;
                    }
                    // A server sends under its client's SSI: B serves A (SSI 0xA).
                    if mode == Mode::Server {
                        if ssi.0.is_none() {
                            continue; // server mode needs SSIs
                        }
                        b.cfg.ssi = None;
                        ba.peer_ssi = ssi.0;
                        a.cfg.mode = Mode::Client;
                        a.install(false, KEY0); // its counters start in the client's half
                        b.install(false, KEY0);
                    }
                    for i in 0..600u32 {
                        let pkt = seal(&mut a, &ab, &plain).unwrap();
                        assert_ne!(&pkt[pkt.len() - 116..pkt.len() - 16], &plain[..], "encrypted");
                        assert_eq!(open(&mut b, &ab, pkt).unwrap(), plain, "{mode:?} v6 {v6} {i}");
                        let back = seal(&mut b, &ba, &plain).unwrap();
                        assert_eq!(open(&mut a, &ba, back).unwrap(), plain, "{mode:?} back");
                    }
                    assert_eq!(a.stats().out_auth_pkts, 600);
                    assert_eq!(b.stats().in_auth_pkts, 600);
                    assert_eq!(a.tx_tsc().counter, 600);
                }
            }
        }
    }
}

/// An independent path to the same bytes: the reference provider's known-answer master key, a
/// cluster-mode packet sealed by the domain, opened here with `aes-gcm` alone from the key
/// `crypto/test/test_uec_kdf.c` gives for 192.168.42.1 at epoch 0x1DC0 and rekey 0x74E5, the IV
/// mask computed outside the crate, and the IV and AAD built by hand.
#[test]
fn cluster_packet_opens_with_the_reference_key() {
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    };
    let master: [u8; 32] = hex("34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca").try_into().unwrap();
    let mut cfg = DomainConfig::new(0x00_0042, Mode::Cluster);
    (cfg.rekey_mask, cfg.rekey_shift) = (0xFFFF_0000_0000, 32);
    let mut d = Dom::new(cfg);
    d.install(false, master);
    d.epoch = 0x1dc0;
    d.resume_counter(0x74E5_0000_0023);
    let (src, dst) = (ipv4([192, 168, 42, 1]), ipv4([192, 168, 42, 2]));
    let path = Path::new(src, dst, Framing::NativeIp([0x12, 0x34, 0, 0]));
    let plain = *b"PDS header and payload";
    let pkt = seal(&mut d, &path, &plain).unwrap();
    let tss = [0x08, 0x00, 0x00, 0x42, 0x1d, 0xc0, 0x74, 0xe5, 0x00, 0x00, 0x00, 0x23];
    assert_eq!(pkt[..12], tss);
    let key = hex("151b4ddb30112971ddeff3213000ee74d8f18aac2135601f1e5215e505fed449");
    let mask = hex("a7c6992c26b0bd5dd5c20e0c");
    let iv: Vec<u8> =
        [192, 168, 42, 1, 0x1d, 0xc0, 0x74, 0xe5, 0, 0, 0, 0x23].iter().zip(&mask).map(|(a, b)| a ^ b).collect();
    let aad = [&[192, 168, 42, 1, 192, 168, 42, 2, 0x12, 0x34, 0, 0][..], &tss].concat();
    let gcm = aes_gcm::Aes256Gcm::new_from_slice(&key).unwrap();
    let mut body = pkt[12..pkt.len() - 16].to_vec();
    let tag = aes_gcm::Tag::try_from(&pkt[pkt.len() - 16..]).unwrap();
    let nonce = aes_gcm::Nonce::try_from(&iv[..]).unwrap();
    gcm.decrypt_inout_detached(&nonce, &aad, body.as_mut_slice().into(), &tag).unwrap();
    assert_eq!(body, plain);
}

#[test]
fn replays_are_refused_and_reordering_within_the_window_is_not() {
    let (mut a, mut b) = pair(Mode::Cluster, (None, None));
    let (ab, _) = paths(false, true);
    let span = 64 * REPLAY_WINDOW as u64;
    let pkts: Vec<Vec<u8>> = (0..300).map(|_| seal(&mut a, &ab, b"x").unwrap()).collect();
    // Delivered newest first: every one opens once, and a second copy is refused.
    for p in pkts.iter().rev() {
        open(&mut b, &ab, p.clone()).unwrap();
    }
    for p in &pkts {
        assert!(matches!(open(&mut b, &ab, p.clone()), Err(TssError::Replayed(_))));
    }
    assert_eq!((b.stats().in_auth_pkts, b.stats().in_replayed_pkts), (300, 300));
    // A counter a whole window below the highest is refused unseen; one just inside opens.
    a.resume_counter(span + 299);
    let top = seal(&mut a, &ab, b"top").unwrap(); // counter span + 299
    open(&mut b, &ab, top).unwrap();
    // Rebuild packets at chosen counters: 299 is exactly `span` below, 300 just inside.
    for (counter, want_ok) in [(299u64, false), (300, true)] {
        let mut s = Dom::new(DomainConfig::new(0x123, Mode::Cluster));
        s.install(false, KEY0);
        s.resume_counter(counter);
        let p = seal(&mut s, &ab, b"old").unwrap();
        assert_eq!(open(&mut b, &ab, p).is_ok(), want_ok, "counter {counter}");
    }
    // A jump of more than a window clears it; the counters between are fresh.
    a.resume_counter(10 * span);
    let far = seal(&mut a, &ab, b"far").unwrap();
    open(&mut b, &ab, far).unwrap();
    let mut s = Dom::new(DomainConfig::new(0x123, Mode::Cluster));
    s.install(false, KEY0);
    s.resume_counter(10 * span - 5);
    let p = seal(&mut s, &ab, b"between").unwrap();
    assert_eq!(open(&mut b, &ab, p).unwrap(), b"between");
}

/// The window against a model (the set of counters seen and the highest): random counters
/// around a moving top, as a sprayed fabric and fan-out deliver them.
#[test]
fn replay_window_matches_a_model() {
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut w = Replay::<2>::new();
    let mut seen = std::collections::HashSet::new();
    let mut top = 0u64;
    for _ in 0..100_000 {
        let r = next();
        let c = match r % 4 {
            0 => top + r % 200,                      // ahead, small gaps
            1 => top.saturating_sub(r % 160),        // behind, partly out of the window
            2 => top + (r >> 8) % 1000,              // ahead, large gaps
            _ => top.saturating_sub((r >> 8) % 130), // near the edge
        };
        let inside = seen.is_empty() || c > top || top - c < 128;
        let want = inside && !seen.contains(&c);
        assert_eq!(w.fresh(c), want, "counter {c} top {top}");
        if want {
            w.record(c);
            seen.insert(c);
            top = top.max(c);
        }
    }
}

#[test]
fn make_before_break_rotation() {
    let (mut a, mut b) = pair(Mode::Cluster, (None, None));
    let (ab, _) = paths(false, false);
    let old = seal(&mut a, &ab, b"old").unwrap();
    assert_eq!(a.rotate(true), Err(TssError::UnknownAn(true)));
    a.install(true, KEY1);
    b.install(true, KEY1);
    a.rotate(true).unwrap();
    assert_eq!(a.tx_tsc(), Tsc { epoch: 0, counter: 0 }, "a fresh key starts its counter again");
    // Rotating back to a key still installed continues its count: no IV is used twice.
    a.rotate(false).unwrap();
    assert_eq!(a.tx_tsc().counter, 1);
    a.rotate(true).unwrap();
    let new = seal(&mut a, &ab, b"new").unwrap();
    assert!(TssHeader::parse(&new).unwrap().0.an);
    // During the rotation both open.
    assert_eq!(open(&mut b, &ab, new.clone()).unwrap(), b"new");
    let old2 = old.clone();
    assert_eq!(open(&mut b, &ab, old).unwrap(), b"old");
    // Replay windows are per AN: counter 0 under AN 1 did not shadow counter 0 under AN 0.
    assert!(matches!(open(&mut b, &ab, new), Err(TssError::Replayed(0))));
    b.retire(false);
    let before = *b.stats();
    assert_eq!(open(&mut b, &ab, old2), Err(TssError::UnknownAn(false)));
    assert_eq!(b.stats().in_invalid_sa, before.in_invalid_sa + 1);
}

/// Server and client seal under the same key and IV prefix: they count in different halves.
#[test]
fn server_and_client_count_in_different_halves() {
    let mut server = Dom::new(DomainConfig::new(1, Mode::Server));
    let mut client = Dom::new(DomainConfig { ssi: Some(9), ..DomainConfig::new(1, Mode::Client) });
    server.install(false, KEY0);
    client.install(false, KEY0);
    assert_eq!(server.counter_range(), (1 << 47, COUNTER_MAX));
    assert_eq!(client.counter_range(), (0, 1 << 47));
    assert_eq!((server.tx_tsc().counter, client.tx_tsc().counter), (1 << 47, 0));
    let (ab, mut ba) = paths(false, false);
    ba.peer_ssi = Some(9);
    let up = seal(&mut client, &ab, b"up").unwrap();
    let down = seal(&mut server, &ba, b"down").unwrap();
    assert_eq!(open(&mut server, &ab, up).unwrap(), b"up");
    assert_eq!(open(&mut client, &ba, down).unwrap(), b"down");
    // The client stops at the half rather than enter the server's counters.
    client.resume_counter(u64::MAX);
    assert_eq!(client.tx_tsc().counter, 1 << 47);
    assert_eq!(seal(&mut client, &ab, b"x"), Err(TssError::CountersExhausted));
}

/// A client receiving at two IPv6 addresses from one server (its identity is the address
/// there, even with an SSI) derives a key for each.
#[test]
fn a_client_at_two_addresses_derives_a_key_for_each() {
    let mut server = Dom::new(DomainConfig::new(1, Mode::Server));
    let mut client = Dom::new(DomainConfig::new(1, Mode::Client));
    server.install(false, KEY0);
    client.install(false, KEY0);
    let mut other = A6;
    other[15] = 0x77;
    for (i, dst) in [A6, other, A6].into_iter().enumerate() {
        let path = Path { peer_ssi: Some(0x99), ..Path::new(B6, dst, Framing::Udp) };
        let p = seal(&mut server, &path, b"r").unwrap();
        assert_eq!(open(&mut client, &path, p).unwrap(), b"r", "packet {i}");
    }
}

/// A cluster-mode FEP sending from two addresses derives a key for each.
#[test]
fn a_sender_with_two_addresses_derives_a_key_for_each() {
    let (mut a, mut b) = pair(Mode::Cluster, (None, None));
    let other = ipv4([10, 0, 0, 9]);
    for i in 0..4 {
        let src = if i % 2 == 0 { A4 } else { other };
        let path = Path::new(src, B4, Framing::Udp);
        let p = seal(&mut a, &path, b"m").unwrap();
        assert_eq!(open(&mut b, &path, p).unwrap(), b"m", "packet {i}");
    }
}

#[test]
fn the_counter_refuses_to_wrap() {
    let (mut a, _) = pair(Mode::Direct, (None, None));
    let (ab, _) = paths(false, false);
    a.resume_counter(COUNTER_MAX - 2);
    seal(&mut a, &ab, b"1").unwrap();
    seal(&mut a, &ab, b"2").unwrap();
    assert_eq!(a.tx_tsc().counter, COUNTER_MAX);
    assert_eq!(seal(&mut a, &ab, b"3"), Err(TssError::CountersExhausted));
    assert_eq!(seal(&mut a, &ab, b"3"), Err(TssError::CountersExhausted));
    assert_eq!(a.tx_tsc().counter, COUNTER_MAX);
    assert_eq!((a.stats().out_auth_pkts, a.stats().out_invoke_fail), (2, 2));
    a.resume_counter(3); // never backwards
    assert_eq!(a.tx_tsc().counter, COUNTER_MAX);
}

#[test]
fn late_epochs_are_refused() {
    let (mut a, mut b) = pair(Mode::Cluster, (None, None));
    let (ab, _) = paths(true, false);
    let e0 = seal(&mut a, &ab, b"e0").unwrap();
    a.set_epoch(20);
    let e20 = seal(&mut a, &ab, b"e20").unwrap();
    b.set_epoch(17);
    b.set_epoch(3); // backwards: ignored
    assert_eq!(b.tx_tsc().epoch, 17);
    assert_eq!(open(&mut b, &ab, e0), Err(TssError::LateEpoch(0)));
    assert_eq!(open(&mut b, &ab, e20).unwrap(), b"e20", "newer epochs pass");
    assert_eq!(b.stats().in_late_pkts, 1);
}

#[test]
fn the_domain_latches_after_too_many_icv_failures() {
    let (mut a, mut b) = pair(Mode::Direct, (None, None));
    b.cfg.auth_fail_threshold = 3;
    let (ab, _) = paths(false, false);
    for _ in 0..4 {
        let mut p = seal(&mut a, &ab, b"p").unwrap();
        *p.last_mut().unwrap() ^= 1;
        assert_eq!(open(&mut b, &ab, p), Err(TssError::AuthFailed));
    }
    assert!(b.is_latched());
    let good = seal(&mut a, &ab, b"g").unwrap();
    assert_eq!(open(&mut b, &ab, good.clone()), Err(TssError::Latched));
    b.clear_latch();
    assert_eq!(open(&mut b, &ab, good).unwrap(), b"g");
    assert_eq!(b.stats().in_auth_fail_pkts, 4);
}

#[test]
fn bad_input_is_a_typed_error_and_changes_nothing_but_a_counter() {
    let (mut a, mut b) = pair(Mode::Cluster, (Some(1), Some(2)));
    let (ab, _) = paths(false, true);
    let good = seal(&mut a, &ab, b"payload").unwrap();
    type Case = (Vec<u8>, fn(&TssError) -> bool);
    let mut cases: Vec<Case> = Vec::new();
    cases.push((good[..20].to_vec(), |e| matches!(e, TssError::Malformed(_)))); // shorter than header + ICV
    cases.push((good[..good.len() - 1].to_vec(), |e| *e == TssError::AuthFailed)); // short ICV
    cases.push((good[..8].to_vec(), |e| matches!(e, TssError::Malformed(_))));
    let mut wrong_sdi = good.clone();
    wrong_sdi[3] ^= 1;
    cases.push((wrong_sdi, |e| *e == TssError::WrongSdi(0x122)));
    let mut unknown_an = good.clone();
    unknown_an[0] |= 1;
    cases.push((unknown_an, |e| *e == TssError::UnknownAn(true)));
    let mut no_ssi = good.clone();
    no_ssi[0] &= !0x04;
    cases.push((no_ssi, |e| *e == TssError::SsiRequired));
    let mut not_tss = good.clone();
    not_tss[0] = 0x10;
    cases.push((not_tss, |e| matches!(e, TssError::Malformed(_))));
    for (pkt, want) in cases {
        let (peers, tx) = (b.peers.len(), b.tx_tsc());
        let before = *b.stats();
        let mut copy = pkt.clone();
        let e = b.open(&mut copy, &ab).unwrap_err();
        assert!(want(&e), "{e:?}");
        assert_eq!(copy, pkt, "bytes as they came");
        assert_eq!((b.peers.len(), b.tx_tsc(), b.is_latched()), (peers, tx, false));
        let after = *b.stats();
        let moved = [
            after.in_invalid - before.in_invalid,
            after.in_invalid_sa - before.in_invalid_sa,
            after.in_auth_fail_pkts - before.in_auth_fail_pkts,
        ];
        assert_eq!(moved.iter().sum::<u64>(), 1, "{e:?}: one counter");
    }
    assert_eq!(open(&mut b, &ab, good).unwrap(), b"payload");
    // Sealing into a buffer without room for the ICV.
    let mut small = [0u8; 30];
    assert!(matches!(a.seal(&mut small, 20, &ab), Err(TssError::Malformed(Error::BufferTooShort { .. }))));
    assert!(matches!(a.seal(&mut small, 8, &ab), Err(TssError::Malformed(Error::BufferTooShort { .. }))));
    // A server without its client's SSI.
    let mut s = Dom::new(DomainConfig::new(0x123, Mode::Server));
    s.install(false, KEY0);
    assert_eq!(seal(&mut s, &ab, b"x"), Err(TssError::SsiRequired));
    // No key.
    let mut none = Dom::new(DomainConfig::new(0x123, Mode::Direct));
    assert_eq!(seal(&mut none, &ab, b"x"), Err(TssError::UnknownAn(false)));
}

#[test]
fn rekeying_moves_the_key_every_256_packets_and_both_sides_follow() {
    let (mut a, mut b) = pair(Mode::Cluster, (None, None));
    let (ab, _) = paths(false, false);
    a.resume_counter(250);
    let keys: Vec<u32> = (0..12)
        .map(|_| {
            let p = seal(&mut a, &ab, b"k").unwrap();
            open(&mut b, &ab, p).unwrap();
            a.tx_key.as_ref().unwrap().2
        })
        .collect();
    assert_eq!(keys, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]);
}

#[test]
fn a_full_peer_table_replaces_the_least_recently_used() {
    let (mut a, mut b) = pair(Mode::Direct, (None, None));
    for i in 0..10u8 {
        let path = Path::new(ipv4([10, 1, 0, i]), B4, Framing::Udp);
        let p = seal(&mut a, &path, b"p").unwrap();
        open(&mut b, &path, p).unwrap();
    }
    assert_eq!(b.peers.len(), 4);
    assert!(b.peers.iter().all(|p| p.addr[15] >= 6));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Flipping any single bit of the clear part, the ciphertext or the ICV (or of the addresses
    /// or entropy header the AAD covers) is refused, and leaves the receiver able to open the
    /// packet as sent.
    #[test]
    fn every_single_bit_flip_is_refused(
        plain in proptest::collection::vec(any::<u8>(), 0..80),
        ssi in any::<bool>(),
        v6 in any::<bool>(),
        mode in 0..3u8,
    ) {
        let mode = [Mode::Direct, Mode::Cluster, Mode::Client][usize::from(mode)];
        // Direct mode over IPv6 needs SSIs.
        let ssi = ssi || (mode == Mode::Direct && v6);
        let ids = if ssi { (Some(5), Some(6)) } else { (None, None) };
        let (mut a, mut b) = pair(mode, ids);
        if mode == Mode::Client {
            // A client sending to its server.
            b.cfg.mode = Mode::Server;
            b.cfg.ssi = None;
            b.install(false, KEY0);
        }
        b.cfg.auth_fail_threshold = u64::MAX; // thousands of forgeries below
        let (ab, _) = paths(v6, true);
        let pkt = seal(&mut a, &ab, &plain).unwrap();
        for bit in 0..pkt.len() * 8 {
            let mut bad = pkt.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(b.open(&mut bad, &ab).is_err(), "bit {}", bit);
        }
        let addr_bits = if v6 { 16 * 8 } else { 32 };
        let mut flips: Vec<Path> = Vec::new();
        for bit in 0..addr_bits {
            let mut p = ab;
            p.src[15 - bit / 8] ^= 1 << (bit % 8);
            flips.push(p);
            let mut p = ab;
            p.dst[15 - bit / 8] ^= 1 << (bit % 8);
            flips.push(p);
        }
        for bit in 0..32 {
            let mut p = ab;
            if let Framing::NativeIp(e) = &mut p.framing {
                e[bit / 8] ^= 1 << (bit % 8);
            }
            flips.push(p);
        }
        for p in flips {
            prop_assert!(b.open(&mut pkt.clone(), &p).is_err());
        }
        prop_assert_eq!(b.stats().in_auth_pkts, 0);
        prop_assert_eq!(open(&mut b, &ab, pkt).unwrap(), plain);
    }
}

/// Memory: an expanded AES-256-GCM key (the `aes` crate keeps the AES-NI and portable round keys)
/// is about 1.1 KiB, so each peer entry (with its 256-byte replay window) is about 1.5 KiB and a
/// 16-peer domain about 25 KiB.
#[test]
fn domain_memory_stays_in_budget() {
    use core::mem::size_of;
    let (key, peer, dom) = (size_of::<PacketKey>(), size_of::<Peer<REPLAY_WINDOW>>(), size_of::<SecureDomain<16>>());
    std::println!("PacketKey {key} B, peer entry {peer} B, SecureDomain<16> {dom} B");
    assert!(peer <= key + 400 && dom <= 16 * peer + 4 * key, "{peer} {dom}");
}
