//! Key derivation: NIST SP 800-108 counter mode with AES-256-CMAC as the pseudo-random function.
//!
//! `K(i) = CMAC(K_in, [i]_8 ‖ FixedInput)` for i = 1, 2, …: an 8-bit counter that starts at 1 and
//! comes **before** the fixed input, and `FixedInput = Label ‖ 0x00 ‖ Context ‖ [L]_16` with L the
//! output length in bits as a **16-bit** big-endian field. UET derives L = 352 bits: a 32-byte
//! AES-256 key followed by a 12-byte IV mask (UE 1.0 §3.7; the reference provider
//! `ultraethernet/uet-ref-prov`, `uet_sec.c`, `uet_sec_sd.c` and `crypto/kdf_ctr_cmac_aes.c`,
//! whose known-answer test `crypto/test/test_uec_kdf.c` this module reproduces; a 32-bit L gives
//! other keys).
//!
//! Why CMAC and not HKDF: the UE KDF is SP 800-108 with a block-cipher PRF, so the same AES-256
//! core that seals packets derives keys. HKDF (HMAC-SHA-256) would give different bytes.
//!
//! Labels and contexts are the reference provider's; the specification text was not the source,
//! so they are *project-defined* until it is checked:
//! - label `"U1"` derives a cluster-mode key per source, `"U2"` a server-mode client key; the label
//!   goes in without a terminating zero;
//! - the context is 10 bytes for an IPv4 identity (`epoch ‖ rekey ‖ SSI or IPv4 source`) and
//!   26 bytes for IPv6 (`4 zero bytes ‖ epoch ‖ rekey ‖ IPv6 address`), every field big-endian.

use aes::Aes256;
use cmac::digest::KeyInit;
use cmac::{Cmac, Mac};
use zeroize::{Zeroize, ZeroizeOnDrop};

/// Bytes UET derives: an AES-256 key and a 12-byte IV mask (L = 352 bits).
pub const DERIVED_LEN: usize = 44;

/// The label of a cluster-mode key (one per source).
pub const LABEL_CLUSTER: &[u8] = b"U1";

/// The label of a server-mode client key.
pub const LABEL_SERVER: &[u8] = b"U2";

/// An AES-256 key and the 12-byte mask XORed into every IV it seals: what [`derive()`] produces.
///
/// Zeroed on drop; `Debug` prints no key bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey {
    /// The AES-256-GCM key.
    pub key: [u8; 32],
    /// XORed into the 12-byte IV (zero in direct mode).
    pub iv_mask: [u8; 12],
}

impl Drop for SessionKey {
    fn drop(&mut self) {
        self.key.zeroize();
        self.iv_mask.zeroize();
    }
}

impl ZeroizeOnDrop for SessionKey {}

impl core::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    /// A key used as provisioned, with no IV mask (direct mode).
    pub const fn direct(key: [u8; 32]) -> Self {
        SessionKey { key, iv_mask: [0; 12] }
    }
}

/// Who a derived key belongs to: the 4-byte identity of an IPv4 source (its SSI when it sends
/// one, else its address) or the 16-byte address of an IPv6 one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Identity {
    /// SSI, or IPv4 source address, as 4 bytes.
    V4([u8; 4]),
    /// IPv6 address.
    V6([u8; 16]),
}

/// SP 800-108 counter mode with AES-256-CMAC, 8-bit counter before the fixed input: fills `out`
/// with `K(1) ‖ K(2) ‖ …`, where the fixed input is the concatenation of `fixed`.
///
/// The caller's fixed input carries L itself (as [`derive()`] does); this form exists so the NIST
/// CAVP vectors, whose fixed input is opaque, run through the same code. Outputs longer than
/// 255 blocks (4 080 bytes) are cut at that length: an 8-bit counter cannot number more.
pub fn counter_mode_cmac(key: &[u8; 32], fixed: &[&[u8]], out: &mut [u8]) {
    let prf = <Cmac<Aes256> as KeyInit>::new(key.into());
    for (chunk, i) in out.chunks_mut(16).zip(1u8..=255) {
        let mut mac = prf.clone();
        mac.update(&[i]);
        for part in fixed {
            mac.update(part);
        }
        let mut block = mac.finalize().into_bytes();
        let n = chunk.len();
        chunk.copy_from_slice(block.get(..n).unwrap_or_default());
        block.zeroize();
    }
}

/// The UET derivation: 44 bytes from `master` under `label` and the context of `epoch`, `rekey`
/// and `who` (module doc), split into a [`SessionKey`]. The KDF runs 3 AES-CMAC blocks; callers
/// cache its result per key, epoch and rekey value rather than derive per packet.
pub fn derive(master: &[u8; 32], label: &[u8], epoch: u16, rekey: u32, who: &Identity) -> SessionKey {
    let mut context = [0u8; 26];
    let len = match who {
        Identity::V4(id) => {
            write(&mut context, 0, &epoch.to_be_bytes());
            write(&mut context, 2, &rekey.to_be_bytes());
            write(&mut context, 6, id);
            10
        }
        Identity::V6(addr) => {
            write(&mut context, 4, &epoch.to_be_bytes());
            write(&mut context, 6, &rekey.to_be_bytes());
            write(&mut context, 10, addr);
            26
        }
    };
    let bits = ((DERIVED_LEN * 8) as u16).to_be_bytes();
    let mut out = [0u8; DERIVED_LEN];
    counter_mode_cmac(master, &[label, &[0], context.get(..len).unwrap_or_default(), &bits], &mut out);
    let mut key = SessionKey { key: [0; 32], iv_mask: [0; 12] };
    let (k, m) = out.split_at(32);
    key.key.copy_from_slice(k);
    key.iv_mask.copy_from_slice(m);
    out.zeroize();
    context.zeroize();
    key
}

/// Copies `bytes` into `buf` at `at` (a no-op where it would not fit; callers write fixed layouts).
fn write(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> std::vec::Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The UET layout built byte by byte in the test, then one CMAC per block by hand: an
    /// independent path to the same 44 bytes.
    fn by_hand(master: &[u8; 32], fixed: &[u8]) -> [u8; 44] {
        let mut out = [0u8; 44];
        for (i, chunk) in out.chunks_mut(16).enumerate() {
            let mut mac = <Cmac<Aes256> as KeyInit>::new_from_slice(master).unwrap();
            let mut msg = std::vec![i as u8 + 1];
            msg.extend_from_slice(fixed);
            mac.update(&msg);
            let block = mac.finalize().into_bytes();
            chunk.copy_from_slice(&block[..chunk.len()]);
        }
        out
    }

    #[test]
    fn ipv4_and_ipv6_contexts_follow_the_layout() {
        let master: [u8; 32] = core::array::from_fn(|i| i as u8);
        // "U1" 00 | epoch 0x0102 | rekey 0x0000_0A0B | 10.0.0.7 | L = 0x0160
        let mut fixed = hex("553100" /* U1 00 */);
        fixed.extend(hex("0102" /* epoch */));
        fixed.extend(hex("00000a0b" /* rekey */));
        fixed.extend(hex("0a000007" /* 10.0.0.7 */));
        fixed.extend(hex("0160" /* L = 352 */));
        let k = derive(&master, LABEL_CLUSTER, 0x0102, 0x0a0b, &Identity::V4([10, 0, 0, 7]));
        let want = by_hand(&master, &fixed);
        assert_eq!(k.key[..], want[..32]);
        assert_eq!(k.iv_mask[..], want[32..]);
        // "U2" 00 | 0000_0000 | epoch 0x0005 | rekey 0 | 2001:db8::1 | L
        let addr: [u8; 16] = hex("20010db8000000000000000000000001").try_into().unwrap();
        let mut fixed = hex("553200" /* U2 00 */);
        fixed.extend(hex("00000000" /* zero */));
        fixed.extend(hex("0005" /* epoch */));
        fixed.extend(hex("00000000" /* rekey */));
        fixed.extend(addr);
        fixed.extend(hex("0160" /* L = 352 */));
        assert_eq!(fixed.len(), 3 + 26 + 2);
        let k = derive(&master, LABEL_SERVER, 5, 0, &Identity::V6(addr));
        let want = by_hand(&master, &fixed);
        assert_eq!(k.key[..], want[..32]);
        assert_eq!(k.iv_mask[..], want[32..]);
    }

    /// The reference provider's known answers (`crypto/test/test_uec_kdf.c`): master key
    /// 34448a06…b0ca, TSC 0x1DC0_74E5_0000_0023 read with rekey mask 0xFFFF_0000_0000 and shift 32
    /// (rekey 0x74E5, epoch 0x1DC0; server keys take rekey 0), 192.168.42.1 and
    /// 2001:cb0::fc0:0:0:abc. The file gives the keys; the IV masks were computed outside this
    /// crate (Python `cryptography`'s CMAC over the same fixed input).
    #[test]
    fn reference_provider_known_answers() {
        let master: [u8; 32] =
            hex("34448a064292601b11a0978f56a2d34cf3fc35ede1a6bc04f8db3e5243a2b0ca").try_into().unwrap();
        let v4 = Identity::V4([192, 168, 42, 1]);
        let v6 = Identity::V6(hex("20010cb0000000000fc0000000000abc").try_into().unwrap());
        let cases = [
            (
                LABEL_CLUSTER,
                0x74e5,
                v4,
                "151b4ddb30112971ddeff3213000ee74d8f18aac2135601f1e5215e505fed449",
                "a7c6992c26b0bd5dd5c20e0c",
            ),
            (
                LABEL_CLUSTER,
                0x74e5,
                v6,
                "55d1ee8647bd53fad0e5325795af18e7559b7d42a895edf70f9c170341e8f767",
                "9c96a5752fb5669ccd5ded3f",
            ),
            (
                LABEL_SERVER,
                0,
                v4,
                "245e67ab286218530edd53c26ea9ec33c96b35192d0a0eb54d08be281c5d304b",
                "02d5ee33684201990e1629e0",
            ),
            (
                LABEL_SERVER,
                0,
                v6,
                "b59002ad3e6a9ae5864878730070f8916e43e5011acaa4be3504256185f24d97",
                "209a3d29581028fb0da2749e",
            ),
        ];
        for (label, rekey, who, key, mask) in cases {
            let k = derive(&master, label, 0x1dc0, rekey, &who);
            assert_eq!(k.key[..], hex(key)[..]);
            assert_eq!(k.iv_mask[..], hex(mask)[..]);
        }
    }

    /// NIST CAVP KBKDF (CAVS 14.4, `KDFCTR_gen.rsp`), section `[PRF=CMAC_AES256]
    /// [CTRLOCATION=BEFORE_FIXED] [RLEN=8_BITS]`, COUNT 0, 10, 11 and 30: KI, fixed input, KO.
    #[test]
    fn cavp_counter_mode_cmac_aes256() {
        let cases = [
            (
                "aeb7201d055f754212b3e497bd0b25789a49e51da9f363df414a0f80e6f4e42c",
                "11ec30761780d4c44acb1f26ca1eb770f87c0e74505e15b7e456b019ce0c38103c4d14afa1de71d340db51410596627512cf199fffa20ef8c5f4841e",
                "2a9e2fe078bd4f5d3076d14d46f39fb2",
            ),
            (
                "5402c978955128558789bee7b571465174a60582a7640037387f99ac16683173",
                "5c7eb447481c2884a5398449eaecbb8b55f1f1981ba0fd187818d8b3581b430c3da52ab83d444e003625ff36fcbd160c67b18d85b6c9d00da1a15d15",
                "f22a4686abe599c2194d21fc9071ffceb023dd9b24c13f05a3d44cfc77fec44a",
            ),
            (
                "5f6ca05094e1634fbab2c41f3813bb23a0390ef3646330f2a74e8e2b55908dd7",
                "8db9895379fe497cb4be649a07dbe3d8775fd6cb7119c1a86cefa35fa2eef9c9369e3333c24d5f1b520827444de0645b0f9d37bd7af3b6e1e406c0ae",
                "fdb04f13c4ecfb9d6013dfda59db25730a16131b3da10d81973e72f35d273d2f",
            ),
            (
                "9debd1762a9643e967dbc174f2040e177b8053afb0829189a81fed94f8c365ee",
                "6c4e1e3fdd7f5c97d58bcdda792642cbd271d6968f6a8e368013d88763d0b306c832b7ab46b84d099596972d12220a4e9c81f82d6f5003d18b93c595",
                "2518a44ea347e924b03a7b4c966ec4e4bd76c1456d09096be9387638c2737faeebba4e2b921b19db",
            ),
        ];
        for (ki, fixed, ko) in cases {
            let ki: [u8; 32] = hex(ki).try_into().unwrap();
            let want = hex(ko);
            let mut out = std::vec![0u8; want.len()];
            counter_mode_cmac(&ki, &[&hex(fixed)], &mut out);
            assert_eq!(out, want);
            // Split fixed input: the same bytes in parts give the same output.
            let fixed = hex(fixed);
            let (a, b) = fixed.split_at(7);
            counter_mode_cmac(&ki, &[a, b], &mut out);
            assert_eq!(out, want);
        }
    }

    #[test]
    fn every_input_moves_the_output() {
        let master = [7u8; 32];
        let base = derive(&master, LABEL_CLUSTER, 1, 1, &Identity::V4([1, 2, 3, 4]));
        assert_ne!(base, derive(&master, LABEL_SERVER, 1, 1, &Identity::V4([1, 2, 3, 4])));
        assert_ne!(base, derive(&master, LABEL_CLUSTER, 2, 1, &Identity::V4([1, 2, 3, 4])));
        assert_ne!(base, derive(&master, LABEL_CLUSTER, 1, 2, &Identity::V4([1, 2, 3, 4])));
        assert_ne!(base, derive(&master, LABEL_CLUSTER, 1, 1, &Identity::V4([1, 2, 3, 5])));
        assert_ne!(base, derive(&[8; 32], LABEL_CLUSTER, 1, 1, &Identity::V4([1, 2, 3, 4])));
        assert_eq!(format!("{base:?}"), "SessionKey(..)");
    }
}
