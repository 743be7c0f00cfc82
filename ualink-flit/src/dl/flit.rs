//! Framing and deframing of one 640-byte DL flit (UALink 1.0 §6.3): flit header, five segment
//! headers, 628 payload bytes in sector order, CRC; placed per [`layout`](super::layout).

use super::crc::flit_crc;
use super::header::{FlitHeader, SegmentHeader};
use super::layout::{CRC_AT, FLIT_HEADER_AT, FLIT_LEN, PAYLOAD_LEN, SEGMENT_HEADER_AT, gather_payload, place_flit};
use crate::Error;
use linklayer::bytes::copy_prefix;

/// A DL flit with its payload in sector order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DlFlit {
    /// The flit header.
    pub header: FlitHeader,
    /// SH0..SH4.
    pub segments: [SegmentHeader; 5],
    /// 157 sectors of payload (zeros in a NOP flit).
    pub payload: [u8; PAYLOAD_LEN],
}

impl DlFlit {
    /// Writes the flit, CRC included, into `out`.
    pub fn emit(&self, out: &mut [u8; FLIT_LEN]) -> Result<(), Error> {
        frame(&self.header, &self.segments, &self.payload, out)
    }

    /// Checks the CRC and reads the flit.
    pub fn parse(bytes: &[u8; FLIT_LEN]) -> Result<Self, Error> {
        let mut payload = [0u8; PAYLOAD_LEN];
        let (header, segments) = deframe(bytes, &mut payload)?;
        Ok(DlFlit { header, segments, payload })
    }
}

/// Writes a flit from its parts, CRC included: the zero-copy form of [`DlFlit::emit`].
pub fn frame(
    header: &FlitHeader,
    segments: &[SegmentHeader; 5],
    payload: &[u8; PAYLOAD_LEN],
    out: &mut [u8; FLIT_LEN],
) -> Result<(), Error> {
    // Spelled out: `array::map` is not inlined here.
    let [s0, s1, s2, s3, s4] = segments;
    frame_bytes(header, &[s0.to_byte(), s1.to_byte(), s2.to_byte(), s3.to_byte(), s4.to_byte()], payload, out)
}

/// [`frame`] with the segment headers already as bytes (as the replay buffer keeps them).
pub fn frame_bytes(
    header: &FlitHeader,
    segments: &[u8; 5],
    payload: &[u8; PAYLOAD_LEN],
    out: &mut [u8; FLIT_LEN],
) -> Result<(), Error> {
    let fh = header.to_bytes()?;
    place_flit(payload, segments, &fh, out);
    let crc = flit_crc(out);
    if let Some(dst) = out.get_mut(CRC_AT..) {
        copy_prefix(dst, &crc);
    }
    Ok(())
}

/// Inverts a framed flit's CRC, so the receiver is sure to refuse it (error containment,
/// §6.7.4.2).
pub fn invert_crc(out: &mut [u8; FLIT_LEN]) {
    if let Some(crc) = out.get_mut(CRC_AT..) {
        crc.iter_mut().for_each(|b| *b = !*b);
    }
}

/// Checks a flit's CRC and reads it: returns the flit header and segment headers and writes the
/// payload, in sector order, into `payload`. Nothing is written on error. Reserved header bits
/// are ignored ([`check_reserved`] names them); a reserved flit-header `op` is refused.
pub fn deframe(
    bytes: &[u8; FLIT_LEN],
    payload: &mut [u8; PAYLOAD_LEN],
) -> Result<(FlitHeader, [SegmentHeader; 5]), Error> {
    let expected = flit_crc(bytes);
    let got = bytes.get(CRC_AT..).and_then(|b| b.first_chunk::<4>()).copied().unwrap_or([0; 4]);
    if expected != got {
        return Err(Error::Crc { expected, got });
    }
    let fh = bytes.get(FLIT_HEADER_AT..).and_then(|b| b.first_chunk::<3>()).copied().unwrap_or([0; 3]);
    let header = FlitHeader::from_bytes(fh)?;
    let mut segments = [SegmentHeader::default(); 5];
    for (sh, at) in segments.iter_mut().zip(SEGMENT_HEADER_AT) {
        *sh = SegmentHeader::from_byte(bytes.get(at).copied().unwrap_or(0));
    }
    gather_payload(bytes, payload);
    Ok((header, segments))
}

/// The first reserved bit set in a flit's header or segment headers, by name (the strict check
/// for conformance tests and warnings; [`deframe`] ignores them).
pub fn check_reserved(bytes: &[u8; FLIT_LEN]) -> Result<(), Error> {
    let fh = bytes.get(FLIT_HEADER_AT..).and_then(|b| b.first_chunk::<3>()).copied().unwrap_or([0; 3]);
    FlitHeader::check_reserved(FlitHeader::word(fh))?;
    SEGMENT_HEADER_AT.iter().try_for_each(|&at| SegmentHeader::check_reserved(bytes.get(at).copied().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dl::header::MBits;
    use crate::dl::layout::PAYLOAD_AT;
    use proptest::prelude::*;

    fn sample() -> DlFlit {
        let mut payload = [0u8; PAYLOAD_LEN];
        for (i, b) in payload.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        DlFlit {
            header: FlitHeader::Original { seq: 42 },
            segments: [
                SegmentHeader {
                    alt_sector: false,
                    tl_flits: [Some(MBits::default()), Some(MBits { m0: true, m1: false })],
                },
                SegmentHeader::default(),
                SegmentHeader { alt_sector: true, tl_flits: [None, None] },
                SegmentHeader::default(),
                SegmentHeader { alt_sector: false, tl_flits: [Some(MBits { m0: false, m1: true }), None] },
            ],
            payload,
        }
    }

    #[test]
    fn fields_land_where_figure_6_4_puts_them() {
        let f = sample();
        let mut out = [0u8; FLIT_LEN];
        f.emit(&mut out).unwrap();
        for (i, &at) in PAYLOAD_AT.iter().enumerate() {
            assert_eq!(out[usize::from(at)], f.payload[i]);
        }
        assert_eq!(out[67], f.segments[0].to_byte());
        assert_eq!(out[579], f.segments[4].to_byte());
        assert_eq!(&out[624..627], &f.header.to_bytes().unwrap());
        assert_eq!(&out[636..], &flit_crc(&out));
        assert_eq!(DlFlit::parse(&out), Ok(f));
    }

    /// A flit whose reserved header bits are set (and whose CRC covers them) reads as the same
    /// flit; the strict check names the first.
    #[test]
    fn reserved_header_bits_are_ignored() {
        let f = sample();
        let mut b = [0u8; FLIT_LEN];
        f.emit(&mut b).unwrap();
        assert_eq!(check_reserved(&b), Ok(()));
        b[FLIT_HEADER_AT] |= 0x5A; // bits 7..0
        b[FLIT_HEADER_AT + 2] |= 0b1110; // bits 19..17 of an explicit header
        b[SEGMENT_HEADER_AT[1]] |= 0b10; // segment header bit 1
        b[SEGMENT_HEADER_AT[3]] |= 0b0110_1100; // Message bits of absent TL flits
        let c = flit_crc(&b);
        b[CRC_AT..].copy_from_slice(&c);
        assert_eq!(DlFlit::parse(&b), Ok(f));
        assert_eq!(check_reserved(&b), Err(Error::Reserved { field: "flit header bits 7..0" }));
    }

    #[test]
    fn any_single_bit_error_is_caught() {
        let mut out = [0u8; FLIT_LEN];
        sample().emit(&mut out).unwrap();
        for bit in (0..FLIT_LEN * 8).step_by(7) {
            let mut bad = out;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(DlFlit::parse(&bad), Err(Error::Crc { .. })), "bit {bit}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(seq in 0u16..512, sh in prop::array::uniform5(any::<u8>()), seed in any::<u64>()) {
            let mut payload = [0u8; PAYLOAD_LEN];
            let mut x = seed | 1;
            for b in payload.iter_mut() {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                *b = x as u8;
            }
            let segments = sh.map(SegmentHeader::from_byte);
            let f = DlFlit { header: FlitHeader::Replay { seq }, segments, payload };
            let mut out = [0u8; FLIT_LEN];
            f.emit(&mut out).unwrap();
            prop_assert_eq!(DlFlit::parse(&out), Ok(f));
        }

        /// A framed flit with a few bytes changed (and its CRC made good again, or not): either
        /// refused, or re-emitted as it came with its reserved bits cleared (byte for byte when
        /// the strict check finds none). Starting from a valid flit keeps the property from being
        /// vacuous: random bytes almost never carry a good CRC.
        #[test]
        fn parse_then_emit_is_identity_up_to_reserved_bits(
            seq in 0u16..512,
            edits in prop::collection::vec((0..FLIT_LEN, any::<u8>()), 0..4),
            fix_crc in any::<bool>(),
        ) {
            let mut b = [0u8; FLIT_LEN];
            DlFlit { header: FlitHeader::Original { seq }, ..sample() }.emit(&mut b).unwrap();
            for (at, x) in edits {
                b[at] ^= x;
            }
            if fix_crc {
                let c = flit_crc(&b);
                b[CRC_AT..].copy_from_slice(&c);
            }
            if let Ok(f) = DlFlit::parse(&b) {
                let mut out = [0u8; FLIT_LEN];
                f.emit(&mut out).unwrap();
                let mut cleared = b;
                cleared[FLIT_HEADER_AT..FLIT_HEADER_AT + 3].copy_from_slice(&f.header.to_bytes().unwrap());
                for (sh, at) in f.segments.iter().zip(SEGMENT_HEADER_AT) {
                    cleared[at] = sh.to_byte();
                }
                let c = flit_crc(&cleared);
                cleared[CRC_AT..].copy_from_slice(&c);
                prop_assert_eq!(out, cleared);
                prop_assert_eq!(out == b, check_reserved(&b).is_ok());
            }
        }
    }
}
