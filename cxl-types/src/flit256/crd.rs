//! CRD\[15:0\], the 256B flit's credit return (CXL 3.x §4.3, Table 4-19), in flit bytes 240–241.
//!
//! Three 5-bit fields return credits of one message class each; a field names the channel and
//! the count:
//!
//! | code | CRD\[4:0\] (requests) | CRD\[9:5\] (data) | CRD\[14:10\] (responses) |
//! |---|---|---|---|
//! | 00h | none | none | none |
//! | 01h | none, and this flit is Empty | reserved | reserved |
//! | 04h–08h | H2D Req | H2D Data | H2D Rsp |
//! | 09h–0Dh | D2H Req | D2H Data | D2H Rsp |
//! | 14h–18h | M2S Req | M2S RwD | M2S BIRsp |
//! | 19h–1Dh | S2M BISnp | S2M DRS | S2M NDR |
//!
//! Within each range the five codes return 1, 4, 8, 12 or 16 credits. CRD\[15\] is reserved.
//! *Project-defined:* byte 240 carries CRD\[7:0\] and byte 241 CRD\[15:8\] (no source states the
//! byte order).

use crate::msg::Kind;

/// The channel a credit return is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Channel {
    /// Host to device (CXL.cache).
    H2d,
    /// Device to host (CXL.cache).
    D2h,
    /// Master to subordinate (CXL.mem).
    M2s,
    /// Subordinate to master (CXL.mem).
    S2m,
}

/// The message class a CRD field returns credits of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Class {
    /// CRD\[4:0\]: requests (and S2M BISnp).
    Req,
    /// CRD\[9:5\]: data headers with their data.
    Data,
    /// CRD\[14:10\]: responses (and M2S BIRsp).
    Rsp,
}

/// One credit return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Return {
    /// The channel.
    pub channel: Channel,
    /// Credits returned: 1, 4, 8, 12 or 16.
    pub count: u8,
}

impl Return {
    /// The message kind these credits are for, in a field of `class`.
    pub const fn kind(self, class: Class) -> Kind {
        match (class, self.channel) {
            (Class::Req, Channel::H2d) => Kind::H2dReq,
            (Class::Req, Channel::D2h) => Kind::D2hReq,
            (Class::Req, Channel::M2s) => Kind::M2sReq,
            (Class::Req, Channel::S2m) => Kind::S2mBiSnp,
            (Class::Data, Channel::H2d) => Kind::H2dData,
            (Class::Data, Channel::D2h) => Kind::D2hData,
            (Class::Data, Channel::M2s) => Kind::M2sRwd,
            (Class::Data, Channel::S2m) => Kind::S2mDrs,
            (Class::Rsp, Channel::H2d) => Kind::H2dRsp,
            (Class::Rsp, Channel::D2h) => Kind::D2hRsp,
            (Class::Rsp, Channel::M2s) => Kind::M2sBiRsp,
            (Class::Rsp, Channel::S2m) => Kind::S2mNdr,
        }
    }

    /// The largest encodable return of at most `n` credits for `channel` (`None` for 0).
    pub const fn at_most(channel: Channel, n: u32) -> Option<Return> {
        let count = match n {
            0 => return None,
            1..=3 => 1,
            4..=7 => 4,
            8..=11 => 8,
            12..=15 => 12,
            _ => 16,
        };
        Some(Return { channel, count })
    }
}

/// A CRD value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Crd {
    /// CRD\[4:0\].
    pub req: Option<Return>,
    /// CRD\[9:5\].
    pub data: Option<Return>,
    /// CRD\[14:10\].
    pub rsp: Option<Return>,
    /// CRD\[4:0\] = 01h: the flit is Empty; it returns no credits and a receiver may drop it.
    pub empty: bool,
}

/// Why CRD bits do not decode, or a value does not encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CrdError {
    /// A reserved code in a field.
    Reserved {
        /// The field: `"CRD[4:0]"`, `"CRD[9:5]"` or `"CRD[14:10]"`.
        field: &'static str,
        /// The code.
        value: u8,
    },
    /// A count other than 1, 4, 8, 12 or 16.
    Count {
        /// The field.
        field: &'static str,
        /// The count given.
        count: u8,
    },
    /// Empty together with credits: an Empty flit may be dropped, so it returns none
    /// (§4.3.8.1).
    EmptyWithCredit,
}

impl core::fmt::Display for CrdError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CrdError::Reserved { field, value } => write!(f, "{field} = {value:#04x} is reserved"),
            CrdError::Count { field, count } => write!(f, "{field} cannot return {count} credits"),
            CrdError::EmptyWithCredit => f.write_str("an Empty flit returns no credits"),
        }
    }
}

impl core::error::Error for CrdError {}

const FIELDS: [&str; 3] = ["CRD[4:0]", "CRD[9:5]", "CRD[14:10]"];
const COUNTS: [u8; 5] = [1, 4, 8, 12, 16];
const BASES: [(u8, Channel); 4] =
    [(0x04, Channel::H2d), (0x09, Channel::D2h), (0x14, Channel::M2s), (0x19, Channel::S2m)];

fn encode_field(field: &'static str, r: Option<Return>) -> Result<u16, CrdError> {
    let Some(r) = r else { return Ok(0) };
    let i = COUNTS.iter().position(|c| *c == r.count).ok_or(CrdError::Count { field, count: r.count })?;
    let base = BASES.iter().find(|(_, c)| *c == r.channel).map_or(0, |(b, _)| *b);
    Ok(u16::from(base) + i as u16)
}

fn decode_field(field: &'static str, code: u8) -> Result<Option<Return>, CrdError> {
    if code == 0 {
        return Ok(None);
    }
    for (base, channel) in BASES {
        if let Some(count) = code.checked_sub(base).and_then(|i| COUNTS.get(usize::from(i))) {
            return Ok(Some(Return { channel, count: *count }));
        }
    }
    Err(CrdError::Reserved { field, value: code })
}

impl Crd {
    /// Flit bytes 240–241.
    pub fn emit(&self) -> Result<[u8; 2], CrdError> {
        let [f0, f1, f2] = FIELDS;
        let req = match (self.empty, self.req, self.data, self.rsp) {
            (true, None, None, None) => 0x01,
            (true, ..) => return Err(CrdError::EmptyWithCredit),
            (false, r, ..) => encode_field(f0, r)?,
        };
        let w = req | encode_field(f1, self.data)? << 5 | encode_field(f2, self.rsp)? << 10;
        Ok(w.to_le_bytes())
    }

    /// Reads flit bytes 240–241; CRD\[15\] is ignored.
    pub fn parse(bytes: [u8; 2]) -> Result<Crd, CrdError> {
        let w = u16::from_le_bytes(bytes);
        let [f0, f1, f2] = FIELDS;
        let code = |shift: u16| (w >> shift & 0x1F) as u8;
        let empty = code(0) == 0x01;
        let crd = Crd {
            req: if empty { None } else { decode_field(f0, code(0))? },
            data: decode_field(f1, code(5))?,
            rsp: decode_field(f2, code(10))?,
            empty,
        };
        if empty && (crd.data.is_some() || crd.rsp.is_some()) {
            return Err(CrdError::EmptyWithCredit);
        }
        Ok(crd)
    }

    /// What a receiver takes from flit bytes 240–241: a field with a reserved code returns
    /// nothing, and an Empty flit no credits (§4.3.8.1), so a CRC-good flit is never dropped
    /// for its CRD; [`Crd::parse`] reports either as an error.
    pub fn received(bytes: [u8; 2]) -> Crd {
        let w = u16::from_le_bytes(bytes);
        let code = |shift: u16| (w >> shift & 0x1F) as u8;
        if code(0) == 0x01 {
            return Crd { empty: true, ..Crd::default() };
        }
        let [f0, f1, f2] = FIELDS;
        let field = |name, shift| decode_field(name, code(shift)).unwrap_or(None);
        Crd { req: field(f0, 0), data: field(f1, 5), rsp: field(f2, 10), empty: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_by_hand() {
        let crd = Crd {
            req: Some(Return { channel: Channel::M2s, count: 16 }),
            data: Some(Return { channel: Channel::D2h, count: 1 }),
            rsp: Some(Return { channel: Channel::S2m, count: 8 }),
            empty: false,
        };
        // 18h | 09h << 5 | 1Bh << 10.
        let w: u16 = 0x18 | 0x09 << 5 | 0x1B << 10;
        assert_eq!(crd.emit(), Ok(w.to_le_bytes()));
        assert_eq!(Crd::parse(w.to_le_bytes()), Ok(crd));
        assert_eq!(Crd::parse([0x01, 0x80]), Ok(Crd { empty: true, ..Crd::default() }), "CRD[15] ignored");
        assert_eq!(Crd::parse([0x01 | 0x04 << 5, 0]), Err(CrdError::EmptyWithCredit));
        assert_eq!(Crd::parse([0x02, 0]), Err(CrdError::Reserved { field: "CRD[4:0]", value: 2 }));
        assert_eq!(Crd::parse([0x01 << 5, 0]), Err(CrdError::Reserved { field: "CRD[9:5]", value: 1 }));
        assert_eq!(Crd::parse([0, 0x0E << 2]), Err(CrdError::Reserved { field: "CRD[14:10]", value: 0x0E }));
        let bad = Crd { rsp: Some(Return { channel: Channel::H2d, count: 5 }), ..Crd::default() };
        assert_eq!(bad.emit(), Err(CrdError::Count { field: "CRD[14:10]", count: 5 }));
        let both = Crd { empty: true, req: Some(Return { channel: Channel::H2d, count: 1 }), ..Crd::default() };
        assert_eq!(both.emit(), Err(CrdError::EmptyWithCredit));
        assert_eq!(Return { channel: Channel::S2m, count: 1 }.kind(Class::Req), Kind::S2mBiSnp);
        assert_eq!(Return::at_most(Channel::H2d, 13), Some(Return { channel: Channel::H2d, count: 12 }));
    }

    #[test]
    fn every_code_round_trips() {
        for w in 0..=0x7FFFu16 {
            let received = Crd::received(w.to_le_bytes());
            if let Ok(c) = Crd::parse(w.to_le_bytes()) {
                assert_eq!(c.emit(), Ok(w.to_le_bytes()), "{w:#06x}");
                assert_eq!(received, c);
            }
            // What a receiver takes re-emits to the bytes with what it ignored cleared.
            let kept = received.emit().map(u16::from_le_bytes).unwrap();
            let fields = [0, 5, 10].map(|s| (kept >> s & 0x1F, w >> s & 0x1F));
            assert!(fields.iter().all(|&(k, b)| k == b || k == 0), "{w:#06x} -> {kept:#06x}");
        }
        assert_eq!(
            Crd::received((0x02u16 | 0x09 << 5).to_le_bytes()).data,
            Some(Return { channel: Channel::D2h, count: 1 })
        );
    }
}
