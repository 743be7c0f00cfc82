//! The adapter CRC (UCIe 2.0 §3.7) and where each flit format carries it (§3.3).
//!
//! Public facts: generator polynomial x^16 + x^15 + x^2 + 1 (0x8005), initial value 0, no final
//! XOR; computed over a 128-byte message, a shorter one zero-extended (its trailing bytes 0);
//! bits are taken bit 0 first within each byte, byte 0 first; C\[7:0\] is CRC byte 0, sent at the
//! lower flit address, and C\[15:8\] CRC byte 1. The bit-exact algorithm is the specification's
//! own LFSR (Figure 3-29): feedback = C\[15\] XOR the message bit, entering C\[0\] and XORed into
//! C\[2\] and C\[15\]. That is the `crc` crate's algorithm with input reflection and no output
//! reflection ([`ALGORITHM`]), which reproduces the six vectors this module's tests pin; the
//! specification's golden `crc_gen.vs` is not public.
//!
//! | format | CRC0 over | CRC1 over | CRC bytes |
//! |---|---|---|---|
//! | 2 (68B) | flit bytes 0..66 | — | 66–67 |
//! | 3, 4 (standard 256B) | 0..128 | 128..242 (the reserved bytes 242–251 are not covered) | 252–253, 254–255 |
//! | 5, 6 (latency-optimized 256B) | 0..126 | 128..254 | 126–127, 254–255 |
//!
//! A receiver recomputes and compares ([`check`]); a mismatch marks the flit invalid (a replay
//! when Retry is on, an Uncorrectable Internal Error otherwise — the caller's). The protocol
//! layer's `lp_corrupt_crc` is honoured by XORing the computed CRC with [`CORRUPT_SYNDROME`]
//! (0x138E, which no one- or two-bit error produces; Table 10-3), in both halves of a standard
//! 256B flit and in the half concerned of a latency-optimized one ([`seal_corrupted`]).

/// The adapter CRC for the `crc` crate: polynomial 0x8005, initial value 0, each byte fed bit 0
/// first (`refin`), the register not reflected on output, no final XOR. `check` is the CRC of
/// the nine bytes `"123456789"` without zero extension.
pub const ALGORITHM: crc::Algorithm<u16> = crc::Algorithm {
    width: 16,
    poly: 0x8005,
    init: 0,
    refin: true,
    refout: false,
    xorout: 0,
    check: 0xBCDD,
    residue: 0,
};

/// Bytes of the CRC's message.
pub const MESSAGE_LEN: usize = 128;

/// What `lp_corrupt_crc` XORs into the computed CRC.
pub const CORRUPT_SYNDROME: u16 = 0x138E;

/// The slice-by-16 tables (8 KiB), or one table (512 B) with the feature `small-crc`, for
/// firmware that counts flash: sealing a standard 256B flit (both CRCs) takes 59 ns against
/// 488 ns on an x86-64 host (`cargo bench -p ucie-adapter -- crc/seal`, with and without the
/// feature).
#[cfg(not(feature = "small-crc"))]
const CRC: crc::Crc<u16, crc::Table<16>> = crc::Crc::<u16, crc::Table<16>>::new(&ALGORITHM);
#[cfg(feature = "small-crc")]
const CRC: crc::Crc<u16, crc::Table<1>> = crc::Crc::<u16, crc::Table<1>>::new(&ALGORITHM);
const ZEROS: [u8; MESSAGE_LEN] = [0; MESSAGE_LEN];

/// The flit formats (UCIe 2.0 §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Format {
    /// Format 1: raw, no adapter CRC.
    Raw,
    /// Format 2: 68B flits.
    Flit68,
    /// Format 3: standard 256B, flit header at the end.
    Standard256EndHeader,
    /// Format 4: standard 256B, flit header at the start.
    Standard256StartHeader,
    /// Format 5: latency-optimized 256B without optional bytes.
    LatencyOptimized256,
    /// Format 6: latency-optimized 256B with optional bytes.
    LatencyOptimized256Optional,
}

impl Format {
    /// The format's number, 1 to 6.
    pub const fn number(self) -> u8 {
        match self {
            Format::Raw => 1,
            Format::Flit68 => 2,
            Format::Standard256EndHeader => 3,
            Format::Standard256StartHeader => 4,
            Format::LatencyOptimized256 => 5,
            Format::LatencyOptimized256Optional => 6,
        }
    }

    /// Bytes of one flit (Format 1 has none: 0).
    pub const fn flit_len(self) -> usize {
        match self {
            Format::Raw => 0,
            Format::Flit68 => 68,
            _ => 256,
        }
    }

    /// Where the CRCs are: for each, the flit bytes it covers and where its two bytes go.
    pub const fn coverage(self) -> &'static [Coverage] {
        match self {
            Format::Raw => &[],
            Format::Flit68 => &[Coverage { start: 0, end: 66, at: 66 }],
            Format::Standard256EndHeader | Format::Standard256StartHeader => {
                &[Coverage { start: 0, end: 128, at: 252 }, Coverage { start: 128, end: 242, at: 254 }]
            }
            Format::LatencyOptimized256 | Format::LatencyOptimized256Optional => {
                &[Coverage { start: 0, end: 126, at: 126 }, Coverage { start: 128, end: 254, at: 254 }]
            }
        }
    }
}

/// One CRC of a flit: it covers flit bytes `start..end` (at most 128) and sits at `at..at + 2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Coverage {
    /// First covered byte.
    pub start: usize,
    /// One past the last covered byte.
    pub end: usize,
    /// The CRC's byte 0 (byte 1 follows).
    pub at: usize,
}

/// Why a CRC cannot be computed or does not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CrcError {
    /// A message longer than 128 bytes, or a flit of another length than its format's.
    Length,
    /// CRC `index` (0 or 1) does not match.
    Mismatch {
        /// Which CRC.
        index: u8,
        /// The CRC computed over the received bytes.
        computed: u16,
        /// The CRC the flit carries.
        received: u16,
    },
}

impl core::fmt::Display for CrcError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CrcError::Length => f.write_str("message longer than 128 bytes or flit of the wrong length"),
            CrcError::Mismatch { index, computed, received } => {
                write!(f, "CRC{index} mismatch: computed {computed:#06x}, received {received:#06x}")
            }
        }
    }
}

impl core::error::Error for CrcError {}

/// The CRC of `message` (at most 128 bytes), zero-extended to 128 bytes.
pub fn crc(message: &[u8]) -> Result<u16, CrcError> {
    if let Some(full) = message.first_chunk::<MESSAGE_LEN>().filter(|_| message.len() == MESSAGE_LEN) {
        return Ok(CRC.checksum(full));
    }
    // A shorter message is copied into a zeroed 128-byte block: one pass of the table over
    // whole 16-byte strides is faster than a second pass over the zeros' odd remainder. The
    // formats' own lengths copy as arrays, one memory copy each: a byte loop stays a byte loop
    // at `opt-level = "z"` (600 instructions a CRC on a Cortex-M4), and `copy_from_slice`
    // would link a panic.
    let mut block = ZEROS;
    let copied = match message.len() {
        114 => copy_exact::<114>(&mut block, message),
        126 => copy_exact::<126>(&mut block, message),
        66 => copy_exact::<66>(&mut block, message),
        n => linklayer::bytes::copy_prefix(&mut block, message) == n,
    };
    if !copied {
        return Err(CrcError::Length);
    }
    Ok(CRC.checksum(&block))
}

/// Copies `message`, exactly `L` bytes, to the front of `block`.
fn copy_exact<const L: usize>(block: &mut [u8; MESSAGE_LEN], message: &[u8]) -> bool {
    match (block.first_chunk_mut::<L>(), message.first_chunk::<L>()) {
        (Some(to), Some(from)) => {
            *to = *from;
            true
        }
        _ => false,
    }
}

/// The CRC's two bytes in flit order: byte 0 (C\[7:0\]) first.
pub const fn crc_bytes(crc: u16) -> [u8; 2] {
    crc.to_le_bytes()
}

fn covered<'a>(flit: &'a [u8], c: &Coverage) -> Result<&'a [u8], CrcError> {
    flit.get(c.start..c.end).ok_or(CrcError::Length)
}

/// Computes every CRC of a `format` flit and writes it in place. `corrupt` selects CRCs to
/// corrupt with [`CORRUPT_SYNDROME`] (bit i: CRC i), for `lp_corrupt_crc`.
pub fn seal_corrupted(format: Format, flit: &mut [u8], corrupt: u8) -> Result<(), CrcError> {
    if flit.len() != format.flit_len() {
        return Err(CrcError::Length);
    }
    for (i, c) in format.coverage().iter().enumerate() {
        let mut value = crc(covered(flit, c)?)?;
        if corrupt >> i & 1 == 1 {
            value ^= CORRUPT_SYNDROME;
        }
        flit.get_mut(c.at..c.at + 2).ok_or(CrcError::Length)?.copy_from_slice(&crc_bytes(value));
    }
    Ok(())
}

/// Computes every CRC of a `format` flit and writes it in place.
pub fn seal(format: Format, flit: &mut [u8]) -> Result<(), CrcError> {
    seal_corrupted(format, flit, 0)
}

/// Checks every CRC of a received `format` flit; the first that does not match is the error.
pub fn check(format: Format, flit: &[u8]) -> Result<(), CrcError> {
    if flit.len() != format.flit_len() {
        return Err(CrcError::Length);
    }
    for (i, c) in format.coverage().iter().enumerate() {
        let computed = crc(covered(flit, c)?)?;
        let got = flit.get(c.at..c.at + 2).ok_or(CrcError::Length)?;
        let received = u16::from_le_bytes([got.first().copied().unwrap_or(0), got.get(1).copied().unwrap_or(0)]);
        if computed != received {
            return Err(CrcError::Mismatch { index: i as u8, computed, received });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The specification's LFSR (Figure 3-29) simulated bit by bit: the reference the table
    /// implementation is checked against.
    fn lfsr(message: &[u8; 128]) -> u16 {
        let mut c = 0u16;
        for byte in message {
            for bit in 0..8 {
                let feedback = (c >> 15 & 1) ^ u16::from(byte >> bit & 1);
                c <<= 1;
                if feedback == 1 {
                    c ^= 0x8005;
                }
            }
        }
        c
    }

    #[test]
    fn the_six_vectors() {
        let mut one = [0u8; 128];
        one[0] = 0x01;
        let mut last = [0u8; 128];
        last[127] = 0x80;
        let ramp: std::vec::Vec<u8> = (0..128u8).collect();
        assert_eq!(crc(&[0; 128]), Ok(0x0000));
        assert_eq!(crc(&one), Ok(0x8039));
        assert_eq!(crc(&last), Ok(0x8005));
        assert_eq!(crc(&[0xFF; 128]), Ok(0x002E));
        assert_eq!(crc(&ramp), Ok(0x249F));
        assert_eq!(crc(b"123456789"), Ok(0x4A2E));
        assert_eq!(CRC.checksum(b"123456789"), ALGORITHM.check);
        assert_eq!(crc(&[0; 129]), Err(CrcError::Length));
        // C[7:0] is byte 0.
        assert_eq!(crc_bytes(0x8039), [0x39, 0x80]);
    }

    #[test]
    fn coverage_and_corruption() {
        for format in [
            Format::Flit68,
            Format::Standard256EndHeader,
            Format::Standard256StartHeader,
            Format::LatencyOptimized256,
            Format::LatencyOptimized256Optional,
        ] {
            let mut flit = std::vec![0u8; format.flit_len()];
            for (i, b) in flit.iter_mut().enumerate() {
                *b = i as u8 ^ 0x5A;
            }
            seal(format, &mut flit).unwrap();
            assert_eq!(check(format, &flit), Ok(()));
            for c in format.coverage() {
                assert!(c.end - c.start <= MESSAGE_LEN);
                // A bit flip in covered bytes is caught.
                let mut bad = flit.clone();
                bad[c.start] ^= 1;
                assert!(matches!(check(format, &bad), Err(CrcError::Mismatch { .. })));
            }
            // lp_corrupt_crc: the syndrome is what the receiver sees.
            let mut poisoned = flit.clone();
            seal_corrupted(format, &mut poisoned, 0b11).unwrap();
            match check(format, &poisoned) {
                Err(CrcError::Mismatch { index: 0, computed, received }) => {
                    assert_eq!(computed ^ received, CORRUPT_SYNDROME)
                }
                other => panic!("{other:?}"),
            }
        }
        // Formats 3/4: bytes 242..252 are not covered.
        let mut flit = [0u8; 256];
        seal(Format::Standard256StartHeader, &mut flit).unwrap();
        flit[245] = 0xFF;
        assert_eq!(check(Format::Standard256StartHeader, &flit), Ok(()));
        assert_eq!(check(Format::Flit68, &flit), Err(CrcError::Length));
        assert_eq!(Format::Raw.coverage(), &[]);
    }

    proptest! {
        /// Every format's CRCs, as sealed in place, are the CRCs of the covered bytes
        /// zero-extended (the definition), whatever the uncovered bytes hold.
        #[test]
        fn sealed_crcs_are_the_definition(bytes in proptest::collection::vec(any::<u8>(), 256), f in 0..5usize) {
            let format = [Format::Flit68, Format::Standard256EndHeader, Format::Standard256StartHeader,
                          Format::LatencyOptimized256, Format::LatencyOptimized256Optional][f];
            let mut flit = bytes[..format.flit_len()].to_vec();
            seal(format, &mut flit).unwrap();
            for c in format.coverage() {
                let mut full = [0u8; 128];
                full[..c.end - c.start].copy_from_slice(&flit[c.start..c.end]);
                prop_assert_eq!(u16::from_le_bytes([flit[c.at], flit[c.at + 1]]), lfsr(&full));
            }
            prop_assert_eq!(check(format, &flit), Ok(()));
        }

        /// The table implementation is the specification's LFSR, for any message.
        #[test]
        fn table_is_the_figure(message in proptest::collection::vec(any::<u8>(), 0..=128)) {
            let mut full = [0u8; 128];
            full[..message.len()].copy_from_slice(&message);
            prop_assert_eq!(crc(&message), Ok(lfsr(&full)));
            // The one-table form `small-crc` selects gives the same.
            let one = crc::Crc::<u16, crc::Table<1>>::new(&ALGORITHM);
            prop_assert_eq!(one.checksum(&full), lfsr(&full));
        }
    }
}
