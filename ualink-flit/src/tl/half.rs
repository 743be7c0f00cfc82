//! Control half-flits (UALink 1.0 §5.1, §5.9, Table 5-2): 8 sectors (32 bytes) holding control
//! fields at legal footprints, every unused sector a NOP (all zero).
//!
//! Footprints: a 4-sector field at sectors 3..0 or 7..4; a 2-sector field at 1..0, 3..2, 5..4 or
//! 7..6; a 1-sector field anywhere. A field's FTYPE sits in the top nibble of its highest sector,
//! so a half-flit is read from sector 7 down. Within one half-flit, at most one flow-control
//! field may return credits for any credit class and target (pool, or one VC), so a receiver may
//! OR the fields together.

use super::field::{ControlField, CreditTarget, FlowControl, ftype};
use crate::Error;

/// Bytes in a half-flit.
pub const HALF_FLIT_LEN: usize = 32;
/// Sectors in a half-flit.
pub const SECTORS: u8 = 8;

/// A control half-flit: its non-NOP fields, each with the lowest sector it occupies, in
/// ascending sector order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ControlHalfFlit {
    /// The fields and where they sit.
    pub fields: heapless::Vec<(u8, ControlField), 8>,
}

/// Whether a field of `sectors` sectors may start at `low`.
const fn legal_footprint(low: u8, sectors: u8) -> bool {
    match sectors {
        1 => low < SECTORS,
        2 => low < SECTORS && low % 2 == 0,
        4 => low == 0 || low == 4,
        _ => false,
    }
}

/// A bit per credit class and target: class (0 ReqCmd, 1 RspCmd, 2 ReqData, 3 RspData) × target
/// (pool, VC 0..3).
fn credit_bits(f: &FlowControl) -> u32 {
    let mut bits = 0;
    for (class, r) in [f.req_cmd, f.rsp_cmd, f.req_data, f.rsp_data].into_iter().enumerate() {
        if r.credits != 0 {
            let target = match r.target {
                CreditTarget::Pool => 0,
                CreditTarget::Vc(v) => 1 + u32::from(v & 3),
            };
            bits |= 1 << (class as u32 * 5 + target);
        }
    }
    bits
}

impl ControlHalfFlit {
    /// Checks footprints, overlaps and the one-credit-field-per-class rule.
    pub fn check(&self) -> Result<(), Error> {
        let mut used = 0u8;
        let mut credits = CreditRule::default();
        for (low, f) in &self.fields {
            let n = f.sectors();
            if !legal_footprint(*low, n) {
                return Err(Error::BadValue { field: "control field footprint", value: u32::from(*low) });
            }
            let mask = (((1u16 << n) - 1) << low) as u8;
            if used & mask != 0 {
                return Err(Error::BadValue { field: "control fields overlap at sector", value: u32::from(*low) });
            }
            used |= mask;
            if let ControlField::FlowControl(fc) = f {
                credits.admit(fc)?;
            }
        }
        Ok(())
    }

    /// Writes the half-flit: each field little-endian over its sectors, NOP elsewhere.
    pub fn emit(&self, out: &mut [u8; HALF_FLIT_LEN]) -> Result<(), Error> {
        self.check()?;
        *out = [0; HALF_FLIT_LEN];
        for (low, f) in &self.fields {
            put_field(out, *low, f)?;
        }
        Ok(())
    }

    /// Where the non-NOP fields sit, read from sector 7 down (a field's FTYPE is in its highest
    /// sector): `(lowest sector, sectors)` in ascending order. Footprints are checked; all-zero
    /// sectors are NOPs and left out.
    pub fn layout(bytes: &[u8; HALF_FLIT_LEN]) -> Result<Layout, Error> {
        let words = sectors(bytes);
        // Filled from the end, so the footprints found top-down read in ascending order.
        let mut found = Layout { footprints: [(0, 0); 8], next: SECTORS };
        let mut top = SECTORS;
        while top > 0 {
            let high = top - 1;
            let w = words.get(usize::from(high)).copied().unwrap_or(0);
            if w == 0 {
                top = high;
                continue;
            }
            let t = (w >> 28) as u8;
            let n = ftype::sectors(t).ok_or(Error::BadValue { field: "FTYPE", value: u32::from(t) })?;
            let low = (high + 1)
                .checked_sub(n)
                .ok_or(Error::BadValue { field: "control field footprint", value: u32::from(high) })?;
            if !legal_footprint(low, n) {
                return Err(Error::BadValue { field: "control field footprint", value: u32::from(low) });
            }
            // At most 8 fields fit in 8 sectors, so `next` never underflows.
            found.next = found.next.saturating_sub(1);
            if let Some(slot) = found.footprints.get_mut(usize::from(found.next)) {
                *slot = (low, n);
            }
            top = low;
        }
        Ok(found)
    }

    /// The little-endian value of the field of `n` sectors starting at sector `low` (a footprint
    /// from [`Self::layout`]).
    pub fn word_at(bytes: &[u8; HALF_FLIT_LEN], low: u8, n: u8) -> Result<u128, Error> {
        let at = 4 * usize::from(low);
        Ok(match n {
            1 => u128::from(u32::from_le_bytes(take(bytes, at))),
            2 => u128::from(u64::from_le_bytes(take(bytes, at))),
            4 => u128::from_le_bytes(take(bytes, at)),
            _ => return Err(Error::BadValue { field: "control field sectors", value: u32::from(n) }),
        })
    }

    /// Decodes the field of `n` sectors starting at sector `low` (a footprint from
    /// [`Self::layout`]).
    pub fn field_at(bytes: &[u8; HALF_FLIT_LEN], low: u8, n: u8) -> Result<ControlField, Error> {
        ControlField::from_word(Self::word_at(bytes, low, n)?, n)
    }

    /// The strict check of a control half-flit: the first bit set that a field's table leaves
    /// open ([`ControlField::check_reserved`]). Reading ignores them.
    pub fn check_reserved(bytes: &[u8; HALF_FLIT_LEN]) -> Result<(), Error> {
        Self::layout(bytes)?.try_for_each(|(low, n)| ControlField::check_reserved(Self::word_at(bytes, low, n)?, n))
    }

    /// The value of the field of `n` sectors at sector `low` when it is a compressed request
    /// (the receiver's shortcut: [`CompressedRequest::from_word`](super::field::CompressedRequest)
    /// reads it without the generic [`ControlField`]).
    pub(crate) fn compressed_request_at(bytes: &[u8; HALF_FLIT_LEN], low: u8, n: u8) -> Option<u64> {
        if n != 2 {
            return None;
        }
        let w = u64::from_le_bytes(take(bytes, 4 * usize::from(low)));
        (w >> 60 == u64::from(ftype::COMPRESSED_REQUEST)).then_some(w)
    }

    /// The value of the field of `n` sectors at sector `low` when it is a compressed response
    /// (the receiver's shortcut: `Response::from_compressed_word` reads it).
    pub(crate) fn compressed_response_at(bytes: &[u8; HALF_FLIT_LEN], low: u8, n: u8) -> Option<u32> {
        if n != 1 {
            return None;
        }
        let w = u32::from_le_bytes(take(bytes, 4 * usize::from(low)));
        let t = (w >> 28) as u8;
        (t == ftype::COMPRESSED_READ_RESPONSE || t == ftype::COMPRESSED_RESPONSE).then_some(w)
    }

    /// Reads a control half-flit. NOP sectors are skipped.
    pub fn parse(bytes: &[u8; HALF_FLIT_LEN]) -> Result<Self, Error> {
        let mut h = ControlHalfFlit::default();
        let mut credits = CreditRule::default();
        for (low, n) in Self::layout(bytes)? {
            let f = Self::field_at(bytes, low, n)?;
            if let ControlField::FlowControl(fc) = &f {
                credits.admit(fc)?;
            }
            // At most 8 fields fit in 8 sectors.
            let _ = h.fields.push((low, f));
        }
        Ok(h)
    }
}

/// Writes `f` little-endian over its sectors from `low` up. The caller keeps to the footprint
/// and overlap rules ([`ControlHalfFlit::check`]); the packer does so by construction, and
/// [`ControlHalfFlit::emit`] checks first.
pub(crate) fn put_field(out: &mut [u8; HALF_FLIT_LEN], low: u8, f: &ControlField) -> Result<(), Error> {
    let w = f.to_word()?;
    let at = 4 * usize::from(low);
    // One fixed-size copy per field size, so no call to `memcpy`.
    match f.sectors() {
        1 => put(out, at, &(w as u32).to_le_bytes()),
        2 => put(out, at, &(w as u64).to_le_bytes()),
        _ => put(out, at, &w.to_le_bytes()),
    }
    Ok(())
}

/// Writes a 2-sector field's little-endian value `w` from sector `low` up (the caller keeps to
/// the footprint rules, as for [`put_field`]).
pub(crate) fn put_two_sectors(out: &mut [u8; HALF_FLIT_LEN], low: u8, w: u64) {
    put(out, 4 * usize::from(low), &w.to_le_bytes());
}

/// Copies `N` bytes to `out[at..]` (nothing when they would not fit).
#[inline(always)]
fn put<const N: usize>(out: &mut [u8; HALF_FLIT_LEN], at: usize, bytes: &[u8; N]) {
    if let Some(dst) = out.get_mut(at..).and_then(|d| d.first_chunk_mut::<N>()) {
        *dst = *bytes;
    }
}

/// `N` bytes from `bytes[at..]`, zeros when out of range.
#[inline(always)]
fn take<const N: usize>(bytes: &[u8; HALF_FLIT_LEN], at: usize) -> [u8; N] {
    bytes.get(at..).and_then(|b| b.first_chunk::<N>()).copied().unwrap_or([0; N])
}

/// The sectors of a half-flit as little-endian words.
fn sectors(bytes: &[u8; HALF_FLIT_LEN]) -> [u32; SECTORS as usize] {
    core::array::from_fn(|i| u32::from_le_bytes(take(bytes, 4 * i)))
}

/// The footprints of a control half-flit's fields, `(lowest sector, sectors)` in ascending
/// order ([`ControlHalfFlit::layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    footprints: [(u8, u8); SECTORS as usize],
    /// The first footprint not yet read; the found ones end at the array's end.
    next: u8,
}

impl Iterator for Layout {
    type Item = (u8, u8);

    fn next(&mut self) -> Option<(u8, u8)> {
        let f = *self.footprints.get(usize::from(self.next))?;
        self.next += 1;
        Some(f)
    }
}

/// The one-credit-field-per-class-and-target rule of a control half-flit, checked field by field.
#[derive(Clone, Copy, Debug, Default)]
pub struct CreditRule(u32);

impl CreditRule {
    /// Admits a flow-control field, or refuses it when it returns credits of a class and target
    /// an earlier field of the same half-flit already returned.
    pub fn admit(&mut self, fc: &FlowControl) -> Result<(), Error> {
        let b = credit_bits(fc);
        if self.0 & b != 0 {
            return Err(Error::BadValue { field: "two FC fields return credits of one class", value: b });
        }
        self.0 |= b;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tl::field::{
        CompressedCmd, CompressedReadResponse, CompressedRequest, CreditReturn, UncompressedRequest,
    };
    use proptest::prelude::*;

    fn creq(tag: u16) -> ControlField {
        ControlField::CompressedRequest(CompressedRequest {
            cmd: CompressedCmd::Read,
            vc: 1,
            asi: 0,
            tag,
            pool: false,
            len: 0,
            metadata: 0,
            addr_block: 5,
            src: 1,
            dst: 2,
            way: 0,
        })
    }

    fn ureq() -> ControlField {
        ControlField::UncompressedRequest(UncompressedRequest {
            cmd: 0,
            vc: 0,
            asi: 0,
            tag: 9,
            pool: true,
            attr: 0xFF,
            len: 15,
            metadata: 0,
            addr: 0x1000,
            src: 3,
            dst: 4,
            cache_load: Some(1),
            num_beats: 0,
        })
    }

    fn fc(vc: u8, credits: u8) -> ControlField {
        ControlField::FlowControl(FlowControl {
            req_cmd: CreditReturn { target: CreditTarget::Vc(vc), credits },
            ..FlowControl::NOP
        })
    }

    #[test]
    fn fields_at_their_footprints_round_trip() {
        // An uncompressed request at 3..0, a compressed one at 5..4, and two FC fields.
        let h = ControlHalfFlit {
            fields: heapless::Vec::from_slice(&[(0, ureq()), (4, creq(1)), (6, fc(0, 3)), (7, fc(1, 2))]).unwrap(),
        };
        let mut out = [0u8; HALF_FLIT_LEN];
        h.emit(&mut out).unwrap();
        // The uncompressed request's FTYPE is the high nibble of byte 15.
        assert_eq!(out[15] >> 4, 0x1);
        assert_eq!(ControlHalfFlit::parse(&out), Ok(h));
        // An all-zero half-flit is all NOPs.
        assert_eq!(ControlHalfFlit::parse(&[0; HALF_FLIT_LEN]), Ok(ControlHalfFlit::default()));
    }

    #[test]
    fn illegal_footprints_overlaps_and_credit_doubles_are_refused() {
        let one = |low, f| ControlHalfFlit { fields: heapless::Vec::from_slice(&[(low, f)]).unwrap() };
        assert!(one(1, creq(1)).check().is_err(), "2-sector field at an odd sector");
        assert!(one(2, ureq()).check().is_err(), "4-sector field not at 0 or 4");
        let two = |a, b| ControlHalfFlit { fields: heapless::Vec::from_slice(&[a, b]).unwrap() };
        assert!(two((0, ureq()), (2, creq(1))).check().is_err(), "overlap");
        assert!(two((0, fc(2, 1)), (1, fc(2, 4))).check().is_err(), "two FC fields for VC 2 ReqCmd");
        assert!(two((0, fc(2, 1)), (1, fc(3, 4))).check().is_ok(), "different VCs");
        // A 2-sector FTYPE found at an even sector (its low half would be below it at an odd one).
        let mut bytes = [0u8; HALF_FLIT_LEN];
        bytes[3] = 0x30; // sector 0 holds a compressed-request FTYPE: it would need sector −1
        assert!(ControlHalfFlit::parse(&bytes).is_err());
        let mut bytes = [0u8; HALF_FLIT_LEN];
        bytes[11] = 0x30; // FTYPE 3 in sector 2: footprint 2..1, illegal
        assert!(ControlHalfFlit::parse(&bytes).is_err());
    }

    proptest! {
        /// Any 32 bytes: refused, or re-emitted with the bits the field tables leave open
        /// cleared (byte for byte exactly when the strict check finds none).
        #[test]
        fn parse_then_emit_is_identity_up_to_open_bits(
            bytes in prop::array::uniform32(any::<u8>()),
            types in prop::array::uniform8(0u8..6),
            nops in any::<u8>(),
        ) {
            let mut b = bytes;
            // Steer the FTYPE nibbles toward defined types, and make some sectors NOPs, so that
            // footprints fit often enough for the property to say something.
            for (s, t) in types.iter().enumerate() {
                b[4 * s + 3] = (b[4 * s + 3] & 0x0F) | t << 4;
                if nops >> s & 1 == 1 {
                    b[4 * s..4 * s + 4].fill(0);
                }
            }
            if let Ok(h) = ControlHalfFlit::parse(&b) {
                let mut out = [0u8; HALF_FLIT_LEN];
                h.emit(&mut out).unwrap();
                prop_assert_eq!(ControlHalfFlit::parse(&out), Ok(h));
                prop_assert_eq!(out == b, ControlHalfFlit::check_reserved(&b).is_ok());
                for (o, i) in out.iter().zip(&b) {
                    prop_assert_eq!(o & !i, 0, "only open bits cleared");
                }
            }
        }

        #[test]
        fn single_beat_read_responses_fill_all_eight_sectors(tags in prop::array::uniform8(0u16..2048)) {
            let mut h = ControlHalfFlit::default();
            for (s, tag) in tags.iter().enumerate() {
                let r = CompressedReadResponse { vc: 0, tag: *tag, pool: false, dst: 7, offset: 0, last: true };
                h.fields.push((s as u8, ControlField::CompressedReadResponse(r))).unwrap();
            }
            let mut out = [0u8; HALF_FLIT_LEN];
            h.emit(&mut out).unwrap();
            prop_assert_eq!(ControlHalfFlit::parse(&out), Ok(h));
        }
    }
}
