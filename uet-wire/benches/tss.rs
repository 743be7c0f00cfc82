//! TSS seal + open of one UET packet (PDS request 12 B + SES standard request 44 B + payload,
//! native-IP framing, IPv4) through `SecureDomain`, beside the raw `aes-gcm` seal + open of the
//! same bytes with the same 24-byte AAD in the same run: the floor. Direct mode, cluster mode
//! with the rekey bits still (mask 0) and moving every 256 packets (the default), and the KDF
//! alone.
#![allow(missing_docs)]
// Harness code, not library code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use aes_gcm::aead::{AeadInOut, KeyInit};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use uet_wire::pdc::ipv4;
use uet_wire::tss::kdf::{self, Identity, LABEL_CLUSTER};
use uet_wire::tss::{DomainConfig, Framing, Mode, Path, SecureDomain};

const HEADERS: usize = 12 + 44;

fn pair(mode: Mode, rekey_mask: u64) -> (SecureDomain<4>, SecureDomain<4>) {
    let cfg = DomainConfig { rekey_mask, ..DomainConfig::new(7, mode) };
    let (mut a, mut b) = (SecureDomain::new(cfg), SecureDomain::new(cfg));
    a.install(false, [0x5a; 32]);
    b.install(false, [0x5a; 32]);
    (a, b)
}

fn tss_benches(c: &mut Criterion) {
    let path = Path::new(ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]), Framing::NativeIp([0x12, 0x34, 0, 0]));
    let mut g = c.benchmark_group("tss");
    for payload in [64usize, 4096] {
        let plain = HEADERS + payload;
        g.throughput(Throughput::Bytes(plain as u64));
        let mut buf = vec![0u8; 12 + plain + 16];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = i as u8;
        }
        for (name, mode, mask) in
            [("direct", Mode::Direct, 0), ("cluster", Mode::Cluster, 0), ("cluster_rekey256", Mode::Cluster, 0xFF00)]
        {
            let (mut a, mut b) = pair(mode, mask);
            g.bench_function(format!("seal_open/{name}/{payload}"), |t| {
                t.iter(|| {
                    let n = a.seal(black_box(&mut buf), 12 + plain, &path).unwrap();
                    let o = b.open(black_box(&mut buf[..n]), &path).unwrap();
                    black_box(o.body.len())
                })
            });
            assert_eq!(b.stats().in_auth_fail_pkts, 0);
        }
        let gcm = aes_gcm::Aes256Gcm::new(&[0x5a; 32].into());
        let aad = [10u8, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0, 0, 8, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut counter = 0u64;
        g.bench_function(format!("reference/aes_gcm_seal_open/{payload}"), |t| {
            t.iter(|| {
                counter += 1;
                let mut iv = [0u8; 12];
                iv[4..].copy_from_slice(&counter.to_be_bytes());
                let nonce = aes_gcm::Nonce::from(iv);
                let body = &mut buf[12..12 + plain];
                let tag = gcm.encrypt_inout_detached(&nonce, black_box(&aad), black_box(&mut *body).into()).unwrap();
                gcm.decrypt_inout_detached(&nonce, &aad, black_box(body).into(), &tag).unwrap();
            })
        });
    }
    g.finish();
    c.bench_function("tss/kdf_derive", |t| {
        t.iter(|| kdf::derive(black_box(&[0x5a; 32]), LABEL_CLUSTER, 1, 2, &Identity::V4([10, 0, 0, 1])))
    });
}

criterion_group!(tss, tss_benches);
criterion_main!(tss);
