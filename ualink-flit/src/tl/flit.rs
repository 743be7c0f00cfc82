//! The 64-byte TL flit and its non-control half-flits (UALink 1.0 §5.1, §5.3, Tables 5-1, 5-3,
//! 5-4, 5-28): message half-flits, AuthTags half-flits and byte-enable half-flits.
//!
//! * A TL flit is sectors 0..=15; the lower half-flit is sectors 0..=7 (bytes 0..32). Each half
//!   has a message bit outside the 64 bytes (M0 lower, M1 upper), carried by the DL in the
//!   segment headers.
//! * A message half-flit: byte 0 is the message type, bytes 1..32 its payload.
//! * An AuthTags half-flit: up to four 8-byte tags, in the order of the requests and responses of
//!   the control half-flit, unused tags zero.
//! * A byte-enable half-flit: one bit per byte of the 256-byte block the transfer lies in, so the
//!   enables of a 64-byte beat at block offset 128 are bytes 16..24.
//!
//! *Project-defined*: a tag is a little-endian `u64` at bytes 8i..8i+8
//! and a beat's enables a little-endian `u64` (bit n = lane n); a data beat's lower 32 bytes
//! travel in the first of its two data half-flits; unused bytes are sent as zero and ignored on
//! receipt; a Poisoned Data message carries zeros after its type byte.

use super::half::HALF_FLIT_LEN;
use crate::Error;
use linklayer::bytes::copy_prefix;

/// Bytes in a TL flit.
pub const TL_FLIT_LEN: usize = 64;

/// A TL flit with its two message bits.
///
/// `repr(C)` keeps the fields in this order, the half-flits at offsets 0 and 32, so a flit
/// copied by value (as a [`TlSource`] hands one over) is read back with loads that match the
/// copy's own stores (`BENCHMARKS.md`, "TlFlit layout").
///
/// [`TlSource`]: crate::dl::TlSource
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(C)]
pub struct TlFlit {
    /// The lower half-flit: sectors 0..=7, sector k at bytes 4k..4k+4.
    pub lower: [u8; HALF_FLIT_LEN],
    /// The upper half-flit: sectors 8..=15.
    pub upper: [u8; HALF_FLIT_LEN],
    /// M0: the lower half-flit is a message.
    pub m0: bool,
    /// M1: the upper half-flit is a message.
    pub m1: bool,
}

impl TlFlit {
    /// Half-flit `upper` (false: lower, true: upper).
    pub const fn half(&self, upper: bool) -> &[u8; HALF_FLIT_LEN] {
        if upper { &self.upper } else { &self.lower }
    }

    /// Half-flit `upper`, writable.
    pub const fn half_mut(&mut self, upper: bool) -> &mut [u8; HALF_FLIT_LEN] {
        if upper { &mut self.upper } else { &mut self.lower }
    }

    /// The message bit of half `upper`.
    pub const fn m(&self, upper: bool) -> bool {
        if upper { self.m1 } else { self.m0 }
    }

    /// The 64 bytes, lower half first.
    pub fn to_bytes(&self) -> [u8; TL_FLIT_LEN] {
        let mut b = [0u8; TL_FLIT_LEN];
        let (lo, hi) = b.split_at_mut(HALF_FLIT_LEN);
        copy_prefix(lo, &self.lower);
        copy_prefix(hi, &self.upper);
        b
    }

    /// A flit from its 64 bytes and message bits.
    pub fn from_bytes(b: &[u8; TL_FLIT_LEN], m0: bool, m1: bool) -> Self {
        let mut f = TlFlit { m0, m1, ..TlFlit::default() };
        let (lo, hi) = b.split_at(HALF_FLIT_LEN);
        copy_prefix(&mut f.lower, lo);
        copy_prefix(&mut f.upper, hi);
        f
    }
}

/// TL message types (Table 5-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum MessageType {
    /// 0x00: NOP.
    Nop,
    /// 0x01: Initial Credit Release Complete.
    InitialCreditReleaseComplete,
    /// 0x20: Poisoned Data: replaces a data half-flit of a corrupt beat.
    PoisonedData,
}

impl MessageType {
    /// The type byte.
    pub const fn code(self) -> u8 {
        match self {
            MessageType::Nop => 0x00,
            MessageType::InitialCreditReleaseComplete => 0x01,
            MessageType::PoisonedData => 0x20,
        }
    }

    /// The type for a byte; undefined types are refused.
    pub const fn from_code(c: u8) -> Result<Self, Error> {
        Ok(match c {
            0x00 => MessageType::Nop,
            0x01 => MessageType::InitialCreditReleaseComplete,
            0x20 => MessageType::PoisonedData,
            _ => return Err(Error::BadValue { field: "TL message type", value: c as u32 }),
        })
    }
}

/// A message half-flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Message {
    /// The type (byte 0).
    pub ty: MessageType,
    /// The payload (bytes 1..32). For Initial Credit Release Complete, bit 0 of byte 0 says the
    /// sender supports Shared Data Buffer mode.
    pub payload: [u8; HALF_FLIT_LEN - 1],
}

impl Message {
    /// A message with an all-zero payload.
    pub const fn new(ty: MessageType) -> Self {
        Message { ty, payload: [0; HALF_FLIT_LEN - 1] }
    }

    /// Reads a message half-flit.
    pub fn parse(h: &[u8; HALF_FLIT_LEN]) -> Result<Self, Error> {
        let (ty, rest) = h.split_first().ok_or(Error::BadValue { field: "TL message", value: 0 })?;
        let mut payload = [0; HALF_FLIT_LEN - 1];
        copy_prefix(&mut payload, rest);
        Ok(Message { ty: MessageType::from_code(*ty)?, payload })
    }

    /// Writes the message half-flit.
    pub fn emit(&self, out: &mut [u8; HALF_FLIT_LEN]) {
        if let Some((ty, rest)) = out.split_first_mut() {
            *ty = self.ty.code();
            copy_prefix(rest, &self.payload);
        }
    }
}

/// Writes an AuthTags half-flit: `tags` in order, the rest zero.
pub fn emit_auth_tags(tags: &[u64], out: &mut [u8; HALF_FLIT_LEN]) {
    *out = [0; HALF_FLIT_LEN];
    for (slot, t) in out.chunks_exact_mut(8).zip(tags) {
        copy_prefix(slot, &t.to_le_bytes());
    }
}

/// Reads the four tags of an AuthTags half-flit. Tags past the first `used` are sent as zero
/// (§5.1.2: "unused = 0") and ignored here; [`check_auth_tags_reserved`] names one that is not.
pub fn parse_auth_tags(h: &[u8; HALF_FLIT_LEN]) -> [u64; 4] {
    let mut tags = [0u64; 4];
    for (t, b) in tags.iter_mut().zip(h.chunks_exact(8)) {
        let mut w = [0u8; 8];
        copy_prefix(&mut w, b);
        *t = u64::from_le_bytes(w);
    }
    tags
}

/// The strict check of an AuthTags half-flit whose first `used` tags are in use: an unused tag
/// that is not zero.
pub fn check_auth_tags_reserved(h: &[u8; HALF_FLIT_LEN], used: usize) -> Result<(), Error> {
    if parse_auth_tags(h).iter().skip(used).any(|&t| t != 0) {
        return Err(Error::Reserved { field: "unused AuthTag" });
    }
    Ok(())
}

/// The byte offset in a byte-enable half-flit of the enables of beat `beat` of a transfer at
/// `addr`: 8 · ((addr mod 256) / 64 + beat).
pub const fn byte_enable_offset(addr: u64, beat: u8) -> usize {
    8 * (((addr % 256) / 64) as usize + beat as usize)
}

/// Reads the enables of beat `beat` of a transfer at `addr` from a byte-enable half-flit.
pub fn beat_byte_enables(h: &[u8; HALF_FLIT_LEN], addr: u64, beat: u8) -> u64 {
    let at = byte_enable_offset(addr, beat);
    let mut w = [0u8; 8];
    if let Some(b) = h.get(at..at + 8) {
        copy_prefix(&mut w, b);
    }
    u64::from_le_bytes(w)
}

/// Writes the enables of beat `beat` of a transfer at `addr` into a byte-enable half-flit.
pub fn put_beat_byte_enables(h: &mut [u8; HALF_FLIT_LEN], addr: u64, beat: u8, en: u64) {
    let at = byte_enable_offset(addr, beat);
    if let Some(b) = h.get_mut(at..at + 8) {
        copy_prefix(b, &en.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_enables_of_a_beat_at_128_are_bytes_16_to_24() {
        let mut h = [0u8; HALF_FLIT_LEN];
        put_beat_byte_enables(&mut h, 0x1080, 0, u64::MAX);
        assert!(h[16..24].iter().all(|b| *b == 0xFF));
        assert_eq!(h.iter().filter(|b| **b != 0).count(), 8);
        assert_eq!(beat_byte_enables(&h, 0x1080, 0), u64::MAX);
        // Beat 3 of a transfer at block offset 0 is bytes 24..32.
        assert_eq!(byte_enable_offset(0x2000, 3), 24);
    }

    #[test]
    fn messages_and_tags() {
        let mut h = [0u8; HALF_FLIT_LEN];
        let mut m = Message::new(MessageType::InitialCreditReleaseComplete);
        m.payload[0] = 1;
        m.emit(&mut h);
        assert_eq!(&h[..2], &[0x01, 0x01]);
        assert_eq!(Message::parse(&h), Ok(m));
        h[0] = 0x21;
        assert!(Message::parse(&h).is_err());
        emit_auth_tags(&[7, 9], &mut h);
        assert_eq!(parse_auth_tags(&h), [7, 9, 0, 0]);
        assert_eq!(check_auth_tags_reserved(&h, 2), Ok(()));
        assert!(check_auth_tags_reserved(&h, 1).is_err(), "a tag beyond the fields present");
        let mut f = TlFlit::default();
        f.half_mut(true)[0] = 5;
        assert_eq!(f.to_bytes()[32], 5);
        assert_eq!(f.half(true)[0], 5);
    }
}
