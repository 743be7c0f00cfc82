//! The compressed layer-2 forms of an ETH-X frame: RC Link's AFH_GEN2_16b MAC header and the
//! ETH-X PRI forwarding header. (The Standard form, Ethernet + IPv4 + UDP 4791 + RH, is plain
//! Ethernet framing around [`rclink::RoutingHeader`](crate::rclink::RoutingHeader).)
//!
//! **AFH_GEN2_16b** (UniVista's RCLINK_AFH_SPEC v2.4 as secondary sources quote it): the two MAC
//! addresses carry a 16-bit destination and source, a traffic class, a key byte and 24 bits each
//! of "SUE payload":
//!
//! | bits | MAC DA | MAC SA |
//! |---|---|---|
//! | 47:40 | Traffic Class: 7:2 traffic type or priority (the VC when CBFC is on) | Key_words |
//! | 39:16 | SUE payload (requests), reserved (ACKs) | SUE payload, reserved (ACKs) |
//! | 15:0 | destination address | source address |
//!
//! Key_words, bit 7 to 0: W (1: AFH_GEN2_16b, 0: AFH_GEN2_32b), V (version, 0), two reserved
//! bits, Z and Y (the SLAP quadrant, 00 = AAI), X (1 local, 0 global address), M (1 multicast,
//! TYPE2; 0 unicast, TYPE1). X and M sit where IEEE 802 puts the U/L and I/G bits of an
//! address's first octet: a multicast frame's SA is therefore a group address, which IEEE 802.3
//! does not allow in a source address; it is the vendor's layout, and switches that check it
//! would drop such frames.
//!
//! *Project-defined:* bits 1:0 of the Traffic Class octet are the DA's U/L and I/G bits; the
//! crate copies X and M there (so a multicast frame's DA is a multicast address to a switch) and
//! ignores them on receive. The meaning of the 24-bit SUE payload is not public: it is carried
//! as a number. This crate only parses Key_words with W = 1; a W = 0 (32-bit) header is refused.
//!
//! **PRI** (ETH-X): a 12-byte forwarding header replacing the destination and source MAC
//! addresses. Only "2 bytes of network device ID and 10 bytes of device address" is public, and
//! that split is a secondary paraphrase. *Project-defined:* bytes 0–1 the network device ID and
//! bytes 2–11 the device address, network byte order; whether an EtherType follows is left to
//! the caller.

/// Why a header does not parse or emit. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameError {
    /// Fewer bytes than the header.
    Truncated,
    /// Key_words W = 0: an AFH_GEN2_32b header, which this crate does not parse.
    NotGen2_16b,
    /// A field does not fit its bits.
    FieldRange {
        /// The field.
        field: &'static str,
    },
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FrameError::Truncated => write!(f, "frame too short for its header"),
            FrameError::NotGen2_16b => write!(f, "an AFH_GEN2_32b header (Key_words W = 0)"),
            FrameError::FieldRange { field } => write!(f, "header field {field} out of range"),
        }
    }
}

impl core::error::Error for FrameError {}

/// Bytes of the AFH_GEN2_16b MAC header (the two addresses).
pub const AFH_GEN2_16B_LEN: usize = 12;
/// Bytes of the PRI header.
pub const PRI_LEN: usize = 12;

/// The Key_words octet of an AFH_GEN2_16b source address (W = 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KeyWords {
    /// V: the version flag (0 today).
    pub version: bool,
    /// Z, Y: the SLAP quadrant (0 = AAI).
    pub slap_quadrant: u8,
    /// X: a locally administered address (the default).
    pub local: bool,
    /// M: multicast (TYPE2); else unicast (TYPE1).
    pub multicast: bool,
}

impl KeyWords {
    /// The octet (W = 1, reserved bits 0).
    pub const fn bits(self) -> u8 {
        0x80 | (self.version as u8) << 6
            | (self.slap_quadrant & 0b11) << 2
            | (self.local as u8) << 1
            | self.multicast as u8
    }

    /// From the octet; W must be 1, the reserved bits 5:4 are ignored.
    pub const fn from_bits(bits: u8) -> Result<Self, FrameError> {
        if bits & 0x80 == 0 {
            return Err(FrameError::NotGen2_16b);
        }
        Ok(KeyWords {
            version: bits & 0x40 != 0,
            slap_quadrant: (bits >> 2) & 0b11,
            local: bits & 0b10 != 0,
            multicast: bits & 1 != 0,
        })
    }
}

/// The AFH_GEN2_16b MAC header: the DA and SA octets, 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AfhGen2 {
    /// Traffic type or priority, 6 bits (Traffic Class 7:2; the VC when CBFC is on).
    pub traffic: u8,
    /// DA bits 39:16: the SUE payload of a request (0 in ACKs), 24 bits.
    pub da_payload: u32,
    /// Destination address.
    pub dest: u16,
    /// Key_words.
    pub key: KeyWords,
    /// SA bits 39:16, 24 bits.
    pub sa_payload: u32,
    /// Source address.
    pub source: u16,
}

impl AfhGen2 {
    /// Parses the header at the front of `bytes`; returns it and the bytes after it.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), FrameError> {
        let (h, rest) = bytes.split_first_chunk::<AFH_GEN2_16B_LEN>().ok_or(FrameError::Truncated)?;
        let [t, d1, d2, d3, d4, d5, k, s1, s2, s3, s4, s5] = *h;
        let key = KeyWords::from_bits(k)?;
        Ok((
            AfhGen2 {
                traffic: t >> 2,
                da_payload: u32::from_be_bytes([0, d1, d2, d3]),
                dest: u16::from_be_bytes([d4, d5]),
                key,
                sa_payload: u32::from_be_bytes([0, s1, s2, s3]),
                source: u16::from_be_bytes([s4, s5]),
            },
            rest,
        ))
    }

    /// Writes the header at the front of `out`; returns its length, 12.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, FrameError> {
        if self.traffic > 0x3F {
            return Err(FrameError::FieldRange { field: "traffic" });
        }
        if self.da_payload > 0xFF_FFFF || self.sa_payload > 0xFF_FFFF {
            return Err(FrameError::FieldRange { field: "SUE payload" });
        }
        if self.key.slap_quadrant > 3 {
            return Err(FrameError::FieldRange { field: "SLAP quadrant" });
        }
        let h = out.first_chunk_mut::<AFH_GEN2_16B_LEN>().ok_or(FrameError::Truncated)?;
        let [_, d1, d2, d3] = self.da_payload.to_be_bytes();
        let [_, s1, s2, s3] = self.sa_payload.to_be_bytes();
        let [d4, d5] = self.dest.to_be_bytes();
        let [s4, s5] = self.source.to_be_bytes();
        // The Traffic Class octet's low bits are the DA's U/L and I/G bits: X and M.
        let tc = self.traffic << 2 | (self.key.local as u8) << 1 | self.key.multicast as u8;
        *h = [tc, d1, d2, d3, d4, d5, self.key.bits(), s1, s2, s3, s4, s5];
        Ok(AFH_GEN2_16B_LEN)
    }
}

/// The ETH-X PRI forwarding header (12 bytes; the field split is project-defined, see the
/// module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Pri {
    /// Network device ID.
    pub network_device_id: u16,
    /// Device address, 10 bytes.
    pub device_address: [u8; 10],
}

impl Pri {
    /// Parses the header at the front of `bytes`; returns it and the bytes after it.
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), FrameError> {
        let (h, rest) = bytes.split_first_chunk::<PRI_LEN>().ok_or(FrameError::Truncated)?;
        let (id, addr) = h.split_first_chunk::<2>().ok_or(FrameError::Truncated)?;
        let device_address = <[u8; 10]>::try_from(addr).map_err(|_| FrameError::Truncated)?;
        Ok((Pri { network_device_id: u16::from_be_bytes(*id), device_address }, rest))
    }

    /// Writes the header at the front of `out`; returns its length, 12.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, FrameError> {
        let h = out.first_chunk_mut::<PRI_LEN>().ok_or(FrameError::Truncated)?;
        let (id, addr) = h.split_at_mut(2);
        id.copy_from_slice(&self.network_device_id.to_be_bytes());
        addr.copy_from_slice(&self.device_address);
        Ok(PRI_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn afh_by_hand() {
        let key = KeyWords { version: false, slap_quadrant: 0, local: true, multicast: false };
        assert_eq!(key.bits(), 0b1000_0010);
        let h = AfhGen2 { traffic: 5, da_payload: 0x12_3456, dest: 0xABCD, key, sa_payload: 0x65_4321, source: 0x0102 };
        let mut out = [0u8; 14];
        assert_eq!(h.emit(&mut out), Ok(12));
        // TC = 5 << 2 | X 1 << 1 | M 0 = 0x16.
        assert_eq!(out[..12], [0x16, 0x12, 0x34, 0x56, 0xAB, 0xCD, 0x82, 0x65, 0x43, 0x21, 0x01, 0x02]);
        assert_eq!(AfhGen2::parse(&out), Ok((h, &out[12..])));
        // W = 0 is a 32-bit header; too short is truncated; reserved bits are ignored.
        let mut gen32 = out;
        gen32[6] = 0x02;
        assert_eq!(AfhGen2::parse(&gen32), Err(FrameError::NotGen2_16b));
        assert_eq!(AfhGen2::parse(&out[..11]), Err(FrameError::Truncated));
        let mut rsv = out;
        rsv[6] |= 0b0011_0000;
        assert_eq!(AfhGen2::parse(&rsv).map(|(h, _)| h), Ok(h));
        assert_eq!(AfhGen2 { traffic: 64, ..h }.emit(&mut out), Err(FrameError::FieldRange { field: "traffic" }));
    }

    #[test]
    fn pri_by_hand() {
        let p = Pri { network_device_id: 0x0A0B, device_address: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] };
        let mut out = [0u8; 12];
        assert_eq!(p.emit(&mut out), Ok(12));
        assert_eq!(out, [0x0A, 0x0B, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(Pri::parse(&out), Ok((p, &[][..])));
        assert_eq!(Pri::parse(&out[..11]), Err(FrameError::Truncated));
    }

    proptest! {
        /// Every AFH_GEN2_16b header emits and parses back; every 12 bytes with W = 1 parse and
        /// re-emit with the reserved bits cleared and the TC's low bits set from X and M.
        #[test]
        fn afh_round_trips(bytes: [u8; 12]) {
            match AfhGen2::parse(&bytes) {
                Ok((h, _)) => {
                    let mut out = [0u8; 12];
                    prop_assert_eq!(h.emit(&mut out), Ok(12));
                    let mut want = bytes;
                    want[6] &= !0b0011_0000;
                    want[0] = (bytes[0] & !0b11) | (bytes[6] & 0b11);
                    prop_assert_eq!(out, want);
                    prop_assert_eq!(AfhGen2::parse(&out).map(|(g, _)| g), Ok(h));
                }
                Err(e) => prop_assert_eq!((e, bytes[6] & 0x80), (FrameError::NotGen2_16b, 0)),
            }
            let (p, _) = Pri::parse(&bytes).unwrap();
            let mut out = [0u8; 12];
            prop_assert_eq!(p.emit(&mut out), Ok(12));
            prop_assert_eq!(out, bytes);
        }
    }
}
