//! The Format 2 byte stream (UCIe 2.0 §3.3.2.1, 68B Flit Format Alignment and Padding Rules):
//! 68-byte flits back to back across 64-byte RDI beats, transfers in multiples of 256 bytes,
//! and Pause of Data Stream (PDS) to stop or realign it.
//!
//! A PDS is a flit header followed by padding: zeros to the next 64-byte boundary, two more
//! 64-byte chunks of zeros, then zeros to the next 256-byte boundary; the next flit starts
//! 256-byte aligned. A PDS is mandatory before a replay and on entry to Retrain (before
//! `lp_stallack`), and may end any burst. Its header (§3.3.2.1, Table 3-3): byte 0 bit 4 = 1,
//! byte 1 bits 7 and 6 = 1, and with Retry byte 1 bits 5:4 = 00b with the sequence field the
//! bitwise inverse of the transmitter's `NEXT_TX_FLIT_SEQ_NUM − 1` ([`pds_header`]).
//!
//! A receiver takes a header as PDS when any two of those four conditions hold with Retry
//! (the last: "bits 5:4 = 00b and the sequence field matches the expected PDS value"), or when
//! conditions 1 and 2 hold without ([`is_pds`]). [`Packer`] writes the stream, [`Unpacker`]
//! reads it beat by beat.
//!
//! *Project-defined:* the expected PDS sequence value a receiver checks is the inverse of the
//! last sequence number it received (`Retry::next_expected() − 1`), the number the transmitter
//! had sent last when nothing was lost; when only two or three conditions hold the caller
//! should check the next flit as the spec recommends (an explicit-sequence flit with the
//! expected number and a good CRC).

/// Bytes of a Format 2 flit.
pub const FLIT_LEN: usize = 68;
/// Bytes of an RDI beat in this model.
pub const BEAT: usize = 64;
/// The stream's transfer unit.
pub const UNIT: usize = 256;

/// The PDS flit header. `seq_field` is, with Retry, the bitwise inverse of
/// `NEXT_TX_FLIT_SEQ_NUM − 1`; without Retry it is not sent.
pub const fn pds_header(retry: bool, seq_field: u8) -> [u8; 2] {
    if retry {
        [0x10 | seq_field >> 4, 0xC0 | (seq_field & 0x0F)]
    } else {
        // Byte 1 bit 6 as §3.3.2.1 lists it (Table 3-2 reserves it; both are accepted).
        [0x10, 0xC0]
    }
}

/// Whether a flit header is a PDS header: with Retry any two of the four conditions, where
/// `expected_seq_field` is the sequence field a PDS is expected to carry; without Retry
/// conditions 1 and 2.
pub const fn is_pds(header: [u8; 2], retry: bool, expected_seq_field: u8) -> bool {
    let [b0, b1] = header;
    let c1 = b0 & 0x10 != 0;
    let c2 = b1 & 0x80 != 0;
    if !retry {
        return c1 && c2;
    }
    let c3 = b1 & 0x40 != 0;
    let s = (b0 & 0x0F) << 4 | (b1 & 0x0F);
    let c4 = b1 & 0x30 == 0 && s == expected_seq_field;
    (c1 as u8 + c2 as u8 + c3 as u8 + c4 as u8) >= 2
}

/// Bytes from a PDS header at stream offset `at` to the end of its padding (header included):
/// to the next 64-byte boundary after the header, two more 64-byte chunks, then to the next
/// 256-byte boundary.
pub const fn pds_len(at: usize) -> usize {
    let header_end = at + 2;
    let beat_end = header_end.div_ceil(BEAT) * BEAT;
    let end = (beat_end + 2 * BEAT).div_ceil(UNIT) * UNIT;
    end - at
}

/// Writes 68-byte flits and PDS padding into a byte stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packer {
    offset: usize,
}

impl Packer {
    /// A stream starting 256-byte aligned.
    pub const fn new() -> Packer {
        Packer { offset: 0 }
    }

    /// Bytes written so far.
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// Appends a flit to `out` (which must hold it); returns the bytes written (68) or `None`
    /// when `out` is too short.
    pub fn push(&mut self, flit: &[u8; FLIT_LEN], out: &mut [u8]) -> Option<usize> {
        out.get_mut(..FLIT_LEN)?.copy_from_slice(flit);
        self.offset += FLIT_LEN;
        Some(FLIT_LEN)
    }

    /// Appends a PDS (its header and padding) to `out`; returns the bytes written or `None`
    /// when `out` is too short. The next flit starts 256-byte aligned. With Retry, give the
    /// count to the transmitter's replay timer too ([`crate::retry::Retry::note_pds`] or
    /// [`crate::adapter::Adapter::note_pds`]), which counts PDS bytes (§3.8).
    pub fn push_pds(&mut self, header: [u8; 2], out: &mut [u8]) -> Option<usize> {
        let len = pds_len(self.offset);
        let dst = out.get_mut(..len)?;
        dst.fill(0);
        dst.get_mut(..2)?.copy_from_slice(&header);
        self.offset += len;
        Some(len)
    }

    /// Bytes of zeros that pad the stream to the next 256-byte boundary (a transfer ends on
    /// one).
    pub const fn pad_to_unit(&self) -> usize {
        self.offset.div_ceil(UNIT) * UNIT - self.offset
    }
}

/// What [`Unpacker::push_beat`] found, with where it starts in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A whole 68-byte flit (its CRC not yet checked).
    Flit {
        /// Its first byte's stream offset.
        at: usize,
        /// The flit.
        flit: &'a [u8; FLIT_LEN],
    },
    /// A PDS header; the padding after it ([`pds_len`]) is skipped.
    Pds {
        /// The header's stream offset.
        at: usize,
    },
}

/// Reads a Format 2 byte stream beat by beat, reassembling flits that straddle beats and
/// skipping PDS padding.
#[derive(Clone, Debug)]
pub struct Unpacker {
    retry: bool,
    /// Bytes consumed so far.
    pos: usize,
    buf: [u8; FLIT_LEN],
    have: usize,
    skip: usize,
}

impl Unpacker {
    /// A reader at a 256-byte aligned start; `retry` selects the PDS detection rule.
    pub const fn new(retry: bool) -> Unpacker {
        Unpacker { retry, pos: 0, buf: [0; FLIT_LEN], have: 0, skip: 0 }
    }

    /// Bytes read so far.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Feeds `bytes` (any length; a beat is 64) and calls `on_item` for every flit completed
    /// and every PDS found. `expected_seq_field` is the sequence field a PDS header is
    /// expected to carry (see the module doc).
    pub fn push_beat(&mut self, bytes: &[u8], expected_seq_field: u8, mut on_item: impl FnMut(Item<'_>)) {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(rest.len());
                self.skip -= n;
                self.pos += n;
                rest = rest.get(n..).unwrap_or_default();
                continue;
            }
            let n = (FLIT_LEN - self.have).min(rest.len());
            if let (Some(dst), Some(src)) = (self.buf.get_mut(self.have..self.have + n), rest.get(..n)) {
                dst.copy_from_slice(src);
            }
            let before = self.have;
            self.have += n;
            self.pos += n;
            rest = rest.get(n..).unwrap_or_default();
            let at = self.pos - self.have;
            // A header is known as soon as its two bytes are in.
            if before < 2 && self.have >= 2 {
                let [b0, b1, ..] = self.buf;
                if is_pds([b0, b1], self.retry, expected_seq_field) {
                    // What was read past the header counts toward the padding.
                    self.skip = pds_len(at) - self.have;
                    self.have = 0;
                    on_item(Item::Pds { at });
                    continue;
                }
            }
            if self.have == FLIT_LEN {
                self.have = 0;
                on_item(Item::Flit { at, flit: &self.buf });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    #[test]
    fn padding_lengths() {
        // At 0: header, 62 zeros, two beats, then to 256: 256 in all.
        assert_eq!(pds_len(0), 256);
        // After three flits (204 bytes): to 256, then two beats = 384, then to 512.
        assert_eq!(pds_len(204), 512 - 204);
        // Header ending exactly on a beat boundary.
        assert_eq!(pds_len(62), 256 - 62);
        assert_eq!(pds_len(63), 256 - 63);
        assert_eq!(pds_len(127), 512 - 127);
        for at in 0..1024 {
            let end = at + pds_len(at);
            assert_eq!(end % UNIT, 0);
            assert!(end - (at + 2).div_ceil(BEAT) * BEAT >= 2 * BEAT);
        }
    }

    #[test]
    fn pds_detection() {
        let h = pds_header(true, !7);
        assert_eq!(h, [0x10 | (!7u8 >> 4), 0xC0 | (!7u8 & 0xF)]);
        assert!(is_pds(h, true, !7));
        // Two of four conditions are enough with Retry.
        assert!(is_pds([0x10, 0x80], true, 0x55));
        assert!(is_pds([0x00, 0xC0], true, 0x55));
        assert!(!is_pds([0x10, 0x00], true, 0x55));
        // A regular explicit-sequence header is not a PDS.
        assert!(!is_pds([0x80, 0x05], true, 0x55));
        // Without Retry: conditions 1 and 2.
        assert!(is_pds(pds_header(false, 0), false, 0));
        assert!(!is_pds([0x00, 0xC0], false, 0));
    }

    fn flit(n: u8) -> [u8; FLIT_LEN] {
        let mut f = [n; FLIT_LEN];
        // Protocol ID 01, stack 0, regular header, explicit sequence n (never a PDS).
        f[0] = 0x40 | (n >> 4);
        f[1] = n & 0x0F;
        f
    }

    proptest! {
        /// Flits and PDSs packed into a stream come back out in order, whatever the beat
        /// size the reader is fed.
        #[test]
        fn stream_round_trip(items in proptest::collection::vec(any::<Option<u8>>(), 0..40), chunk in 1..200usize) {
            let mut p = Packer::new();
            let mut stream = Vec::new();
            let mut buf = [0u8; 512];
            for item in &items {
                let n = match item {
                    Some(n) => p.push(&flit(*n), &mut buf).unwrap(),
                    None => p.push_pds(pds_header(true, 0x3C), &mut buf).unwrap(),
                };
                stream.extend_from_slice(&buf[..n]);
            }
            let pad = p.pad_to_unit();
            stream.extend(std::iter::repeat_n(0, pad));
            prop_assert_eq!(stream.len() % UNIT, 0);
            let mut u = Unpacker::new(true);
            let mut got = Vec::new();
            for c in stream.chunks(chunk) {
                u.push_beat(c, 0x3C, |i| got.push(match i { Item::Flit { flit, .. } => Some((flit[0], flit[2])), Item::Pds { .. } => None }));
            }
            let expect: Vec<Option<(u8, u8)>> = items.iter().map(|i| i.map(|n| (0x40 | n >> 4, n))).collect();
            prop_assert_eq!(&got[..expect.len()], &expect[..]);
            // What follows is the zero padding of the last transfer, read as all-zero flits.
            prop_assert!(got[expect.len()..].iter().all(|g| *g == Some((0, 0))));
        }
    }
}
