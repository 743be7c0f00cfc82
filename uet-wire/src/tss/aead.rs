//! AES-256-GCM over a UET packet: the IV, the additional authenticated data and the in-place seal
//! and open (UE 1.0 §3.7; the reference provider `ultraethernet/uet-ref-prov`, `uet_sec.c`).
//!
//! - **IV** (12 bytes) = a 4-byte identifier ‖ the 64-bit TSC, big-endian, then XOR the key's IV
//!   mask (zero in direct mode). The identifier is the SSI when the header carries one, else the
//!   SDI (as a big-endian 32-bit word) for IPv6, else the IPv4 source address.
//! - **AAD** = IP source ‖ IP destination (4 bytes each for IPv4, 16 for IPv6) ‖ the entropy header
//!   (native-IP framing) ‖ the TSS header as sent (12 or 16 bytes). The reference provider covers
//!   native-IP framing only. For UDP framing the AAD is not public: this crate uses the same rule
//!   without the entropy header, which UDP framing does not have (*project-defined*; [`Aad::new`]
//!   is the one place it is built).
//! - **Clear text** is everything up to the end of the TSS header; the **ciphertext** runs from the
//!   PDS prologue to the end of the payload; the 16-byte ICV (the GCM tag) follows it.

use super::kdf::SessionKey;
use super::{ICV_LEN, Tsc};
use crate::packet::CrcPrefix;
use crate::pdc::IpAddr;
use crate::pdc::table::mapped_ipv4;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};

/// How the packet is framed below the TSS header, which decides what the AAD covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Framing {
    /// In UDP: no entropy header.
    Udp,
    /// Directly in IP: the 4-byte entropy header as it is on the wire (reserved half included,
    /// so a receiver authenticates the bytes it got).
    NativeIp([u8; 4]),
}

/// The 12-byte IV of the packet whose TSS header carries `ssi` and `tsc`, sent by `src` in
/// domain `sdi`, under `mask`.
pub fn iv(ssi: Option<u32>, sdi: u32, src: &IpAddr, tsc: Tsc, mask: &[u8; 12]) -> [u8; 12] {
    let id = match (ssi, mapped_ipv4(src)) {
        (Some(ssi), _) => ssi.to_be_bytes(),
        (None, Some(v4)) => v4,
        (None, None) => sdi.to_be_bytes(),
    };
    let tsc = tsc.to_u64().to_be_bytes();
    core::array::from_fn(|i| {
        let byte = if i < 4 { id.get(i) } else { tsc.get(i - 4) };
        byte.copied().unwrap_or(0) ^ mask.get(i).copied().unwrap_or(0)
    })
}

/// The additional authenticated data of one packet, built on the stack (at most 52 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aad {
    bytes: [u8; 52],
    len: usize,
}

impl Aad {
    /// The AAD of a packet from `src` to `dst` framed as `framing` whose TSS header is `tss`
    /// (12 or 16 bytes as sent). The addresses are those the CRC32C trailer covers too
    /// ([`CrcPrefix::ip`]): 4 bytes each when both are IPv4-mapped, else 16.
    pub fn new(src: &IpAddr, dst: &IpAddr, framing: Framing, tss: &[u8]) -> Self {
        let mut aad = Aad { bytes: [0; 52], len: 0 };
        aad.push(CrcPrefix::ip(src, dst).as_bytes());
        if let Framing::NativeIp(entropy) = framing {
            aad.push(&entropy);
        }
        aad.push(tss.get(..tss.len().min(16)).unwrap_or_default());
        aad
    }

    fn push(&mut self, part: &[u8]) {
        if let Some(dst) = self.bytes.get_mut(self.len..self.len + part.len()) {
            dst.copy_from_slice(part);
            self.len += part.len();
        }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }
}

/// A key ready to seal and open: the expanded AES-256-GCM state of a [`SessionKey`] and its IV
/// mask. Build it once per key (the key schedule and the GHASH key cost more than a small
/// packet); the expanded state is zeroed on drop.
#[derive(Clone)]
pub struct PacketKey {
    aead: Aes256Gcm,
    iv_mask: [u8; 12],
}

impl core::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PacketKey(..)")
    }
}

/// The ICV did not match: the packet was altered, or sealed under another key or IV.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AuthFailed;

impl PacketKey {
    /// Expands `key`.
    pub fn new(key: &SessionKey) -> Self {
        PacketKey { aead: Aes256Gcm::new(&key.key.into()), iv_mask: key.iv_mask }
    }

    /// The IV mask this key XORs in.
    pub(crate) fn iv_mask(&self) -> &[u8; 12] {
        &self.iv_mask
    }

    /// Encrypts `body` in place under `iv` and `aad`; returns the ICV.
    pub fn seal(&self, iv: &[u8; 12], aad: &[u8], body: &mut [u8]) -> [u8; ICV_LEN] {
        let nonce = Nonce::from(*iv);
        // GCM refuses only plaintexts over 2^36 - 32 bytes and AAD over 2^61 - 1: no UET packet.
        match self.aead.encrypt_inout_detached(&nonce, aad, body.into()) {
            Ok(tag) => tag.into(),
            Err(_) => [0; ICV_LEN],
        }
    }

    /// Checks `icv` and decrypts `body` in place; on failure `body` is left as it came.
    pub fn open(&self, iv: &[u8; 12], aad: &[u8], body: &mut [u8], icv: &[u8; ICV_LEN]) -> Result<(), AuthFailed> {
        let nonce = Nonce::from(*iv);
        let tag = Tag::from(*icv);
        self.aead.decrypt_inout_detached(&nonce, aad, body.into(), &tag).map_err(|_| AuthFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdc::ipv4;

    fn hex(s: &str) -> std::vec::Vec<u8> {
        let s: std::string::String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn iv_takes_ssi_then_ipv4_source_then_sdi() {
        let tsc = Tsc { epoch: 0x0102, counter: 0x0304_0506_0708 };
        let v4 = ipv4([10, 0, 0, 9]);
        let v6 = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let none = [0; 12];
        assert_eq!(iv(Some(0xAABB_CCDD), 7, &v4, tsc, &none), [0xAA, 0xBB, 0xCC, 0xDD, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(iv(None, 7, &v4, tsc, &none), [10, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(iv(None, 0x12_3456, &v6, tsc, &none), [0, 0x12, 0x34, 0x56, 1, 2, 3, 4, 5, 6, 7, 8]);
        let mask = [0xFF; 12];
        assert_eq!(iv(None, 7, &v4, tsc, &mask), [!10, 0xFF, 0xFF, !9, !1, !2, !3, !4, !5, !6, !7, !8]);
    }

    #[test]
    fn aad_layouts() {
        let tss = [0x08, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5];
        let (a, b) = (ipv4([10, 0, 0, 1]), ipv4([10, 0, 0, 2]));
        let aad = Aad::new(&a, &b, Framing::NativeIp([0x12, 0x34, 0, 0]), &tss);
        assert_eq!(aad.as_bytes(), [&[10, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0, 0][..], &tss].concat());
        let aad = Aad::new(&a, &b, Framing::Udp, &tss);
        assert_eq!(aad.as_bytes(), [&[10, 0, 0, 1, 10, 0, 0, 2][..], &tss].concat());
        let v6 = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let tss16 = [0x0C; 16];
        let aad = Aad::new(&v6, &a, Framing::NativeIp([0; 4]), &tss16);
        assert_eq!(aad.as_bytes(), [&v6[..], &a[..], &[0; 4][..], &tss16[..]].concat());
    }

    /// One AES-256-GCM known answer: key, IV, plaintext, AAD, ciphertext, tag (hex).
    type Vector = [&'static str; 6];

    /// AES-256 with a 96-bit IV: McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)",
    /// test cases 15 and 16, and NIST CAVP `gcmEncryptExtIV256.rsp` (CAVS 14.0), `[PTlen = 256]
    /// [AADlen = 128]` Count 0.
    const GCM: [Vector; 3] = [
        [
            "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
            "cafebabefacedbaddecaf888",
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
             1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
            "",
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa\
             8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
            "b094dac5d93471bdec1a502270e3cc6c",
        ],
        [
            "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
            "cafebabefacedbaddecaf888",
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
             1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
            "feedfacedeadbeeffeedfacedeadbeefabaddad2",
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa\
             8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
            "76fc6ece0f4e1768cddf8853bb2d551b",
        ],
        [
            "37ccdba1d929d6436c16bba5b5ff34deec88ed7df3d15d0f4ddf80c0c731ee1f",
            "5c1b21c8998ed6299006d3f9",
            "ad4260e3cdc76bcc10c7b2c06b80b3be948258e5ef20c508a81f51e96a518388",
            "22ed235946235a85a45bc5fad7140bfa",
            "3b335f8b08d33ccdcad228a74700f1007542a4d1e7fc1ebe3f447fe71af29816",
            "1fbf49cc46f458bf6e88f6370975e6d4",
        ],
    ];

    #[test]
    fn gcm_known_answers() {
        for [key, iv, pt, aad, ct, tag] in GCM {
            let k = PacketKey::new(&SessionKey::direct(hex(key).try_into().unwrap()));
            let iv: [u8; 12] = hex(iv).try_into().unwrap();
            let mut body = hex(pt);
            let icv = k.seal(&iv, &hex(aad), &mut body);
            assert_eq!(body, hex(ct));
            assert_eq!(icv[..], hex(tag)[..]);
            k.open(&iv, &hex(aad), &mut body, &icv).unwrap();
            assert_eq!(body, hex(pt));
        }
    }

    /// NIST CAVP `gcmDecrypt256.rsp` (CAVS 14.0), `[PTlen = 128] [AADlen = 128]`: Count 0 opens,
    /// Count 2 is marked FAIL and leaves the ciphertext as it came.
    #[test]
    fn gcm_decrypt_pass_and_fail() {
        let cases = [
            (
                "54e352ea1d84bfe64a1011096111fbe7668ad2203d902a01458c3bbd85bfce14",
                "df7c3bca00396d0c018495d9",
                "426e0efc693b7be1f3018db7ddbb7e4d",
                "7e968d71b50c1f11fd001f3fef49d045",
                "ee8257795be6a1164d7e1d2d6cac77a7",
                Some("85fc3dfad9b5a8d3258e4fc44571bd3b"),
            ),
            (
                "9a0343f850a6427120f764789ffec6d237447b898fbf51d2182f065d3861497d",
                "3deef6f453dd70d92143adcd",
                "e93165935ac18e3a2845d15fe31a9286",
                "dbb8226a624520863db6897017b2a4f8",
                "f5fc50d18766bc3d9e16dd136d45816b",
                None,
            ),
        ];
        for (key, iv, ct, aad, tag, pt) in cases {
            let k = PacketKey::new(&SessionKey::direct(hex(key).try_into().unwrap()));
            let mut body = hex(ct);
            let r = k.open(&hex(iv).try_into().unwrap(), &hex(aad), &mut body, &hex(tag).try_into().unwrap());
            match pt {
                Some(pt) => assert_eq!((r, body), (Ok(()), hex(pt))),
                None => assert_eq!((r, body), (Err(AuthFailed), hex(ct))),
            }
        }
    }
}
