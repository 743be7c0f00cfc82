//! Responses on the TL (UALink 1.0 §5.9.2, §5.9.4, §5.9.5; Tables 5-30, 5-34, 5-36): a read or
//! write response as an uncompressed field (2 sectors) or, when its status is OKAY, a compressed
//! one (1 sector).
//!
//! * A compressed response drops SRCACCID, which is for debugging only and may be zeroed (§2.7):
//!   it decodes with `src` = 0.
//! * *Project-defined* (§2.7.8): RD/WR = 1 for reads; a multi-beat read is one
//!   field with LEN = beats − 1, OFFSET = 0 and LAST = 1; a single-beat read has LEN = 0 with its
//!   OFFSET and LAST. A 1-beat read at offset 0 with LAST travels as the single-beat compressed
//!   form. Write responses carry LEN = OFFSET = LAST = 0; on receive those bits are ignored (the
//!   field decoders clear them, [`ControlField::check_reserved`] names them), and so are a
//!   multi-beat read's OFFSET and LAST (taken as 0 and 1: the field carries every beat).

use super::field::{CompressedReadResponse, CompressedResponse, ControlField, UncompressedResponse, ftype};
use crate::Error;
use crate::upli::{ReadResponse, Status, WriteResponse};

/// A response record as the TL carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Response {
    /// On the Read Response/Data channel (reads, AtomicR), followed by its data.
    Read(ReadResponse),
    /// On the Write Response channel (writes, AtomicNR).
    Write(WriteResponse),
}

impl Response {
    /// The OKAY response to `req` on its response channel
    /// ([`Request::response_channel`](crate::upli::Request::response_channel)), with tag, VC and
    /// routing from `req` ([`ReadResponse::answering`], [`WriteResponse::answering`]). Set
    /// another status with [`Self::set_status`].
    pub const fn answering(req: &crate::upli::Request) -> Self {
        match req.response_channel() {
            crate::upli::ResponseChannel::Read => Response::Read(ReadResponse::answering(req)),
            crate::upli::ResponseChannel::Write => Response::Write(WriteResponse::answering(req)),
        }
    }

    /// The status.
    pub const fn status(&self) -> Status {
        match self {
            Response::Read(r) => r.status,
            Response::Write(w) => w.status,
        }
    }

    /// Sets the status (every beat of a read response carries it).
    pub const fn set_status(&mut self, status: Status) {
        match self {
            Response::Read(r) => r.status = status,
            Response::Write(w) => w.status = status,
        }
    }

    /// VC.
    pub const fn vc(&self) -> u8 {
        match self {
            Response::Read(r) => r.vc,
            Response::Write(w) => w.vc,
        }
    }

    /// The TL credit used (POOL).
    pub const fn pool(&self) -> bool {
        match self {
            Response::Read(r) => r.pool,
            Response::Write(w) => w.pool,
        }
    }

    /// Sets the TL credit used.
    pub const fn set_pool(&mut self, pool: bool) {
        match self {
            Response::Read(r) => r.pool = pool,
            Response::Write(w) => w.pool = pool,
        }
    }

    /// The authentication tag.
    pub const fn auth_tag(&self) -> u64 {
        match self {
            Response::Read(r) => r.auth_tag,
            Response::Write(w) => w.auth_tag,
        }
    }

    /// Sets the authentication tag.
    pub const fn set_auth_tag(&mut self, tag: u64) {
        match self {
            Response::Read(r) => r.auth_tag = tag,
            Response::Write(w) => w.auth_tag = tag,
        }
    }

    /// Data beats that follow (0 for a write response).
    pub const fn data_beats(&self) -> u8 {
        match self {
            Response::Read(r) => r.beats(),
            Response::Write(_) => 0,
        }
    }

    /// Checks the record.
    pub fn check(&self) -> Result<(), Error> {
        match self {
            Response::Read(r) => r.check(),
            Response::Write(w) => w.check(),
        }
    }

    /// Sectors the field takes: 1 when compressed.
    pub const fn sectors(&self, compress: bool) -> u8 {
        if compress && self.compressible() { 1 } else { 2 }
    }

    const fn compressible(&self) -> bool {
        match self {
            Response::Read(r) => matches!(r.status, Status::Okay),
            Response::Write(w) => matches!(w.status, Status::Okay),
        }
    }

    /// The field for this response; compressed when `compress` and the status is OKAY.
    pub fn to_field(&self, compress: bool) -> Result<ControlField, Error> {
        self.check()?;
        Ok(self.field(compress))
    }

    /// [`Self::to_field`] for a response already checked (the packer checks each when queued).
    pub(crate) const fn field(&self, compress: bool) -> ControlField {
        let c = compress && self.compressible();
        match *self {
            Response::Read(r) if c && r.num_beats == 0 => {
                ControlField::CompressedReadResponse(CompressedReadResponse {
                    vc: r.vc,
                    tag: r.tag,
                    pool: r.pool,
                    dst: r.dst,
                    offset: r.offset,
                    last: r.last,
                })
            }
            Response::Read(r) if c => ControlField::CompressedResponse(CompressedResponse {
                vc: r.vc,
                tag: r.tag,
                pool: r.pool,
                dst: r.dst,
                len: r.num_beats,
                read: true,
            }),
            Response::Write(w) if c => ControlField::CompressedResponse(CompressedResponse {
                vc: w.vc,
                tag: w.tag,
                pool: w.pool,
                dst: w.dst,
                len: 0,
                read: false,
            }),
            Response::Read(r) => ControlField::UncompressedResponse(UncompressedResponse {
                vc: r.vc,
                tag: r.tag,
                pool: r.pool,
                len: r.num_beats,
                offset: r.offset,
                status: r.status.code(),
                read: true,
                last: r.last,
                src: r.src,
                dst: r.dst,
            }),
            Response::Write(w) => ControlField::UncompressedResponse(UncompressedResponse {
                vc: w.vc,
                tag: w.tag,
                pool: w.pool,
                len: 0,
                offset: 0,
                status: w.status.code(),
                read: false,
                last: false,
                src: w.src,
                dst: w.dst,
            }),
        }
    }

    /// The response a field carries, or `None` for a field that is not a response. `auth_tag`
    /// is 0 (tags travel in their own half-flit).
    pub fn from_field(f: &ControlField) -> Result<Option<Self>, Error> {
        let read = |tag, src, dst, status, num_beats, offset, last, vc, pool| {
            Response::Read(ReadResponse { tag, src, dst, status, num_beats, offset, last, vc, pool, auth_tag: 0 })
        };
        let write = |tag, src, dst, status, vc, pool| {
            Response::Write(WriteResponse { tag, src, dst, status, vc, pool, auth_tag: 0 })
        };
        let r = match *f {
            ControlField::UncompressedResponse(u) if u.read => {
                // A multi-beat read carries every beat, so its last one: its OFFSET and LAST have
                // no meaning of their own (Table 5-30) and are taken as 0 and 1.
                let (offset, last) = if u.len == 0 { (u.offset, u.last) } else { (0, true) };
                read(u.tag, u.src, u.dst, Status::from_code(u.status), u.len, offset, last, u.vc, u.pool)
            }
            ControlField::UncompressedResponse(u) => {
                write(u.tag, u.src, u.dst, Status::from_code(u.status), u.vc, u.pool)
            }
            ControlField::CompressedReadResponse(c) => Self::from_compressed_read(&c),
            ControlField::CompressedResponse(c) => Self::from_compressed(&c),
            _ => return Ok(None),
        };
        r.check()?;
        Ok(Some(r))
    }

    /// The response a 1-sector compressed field carries, read straight from its value (FTYPE
    /// 0x4 or 0x5 on top, which the caller has seen): the receiver's shortcut past
    /// [`ControlField`], decoding as [`Self::from_field`] does.
    pub(crate) fn from_compressed_word(w: u32) -> Result<Self, Error> {
        let r = if w >> 28 == u32::from(ftype::COMPRESSED_READ_RESPONSE) {
            Self::from_compressed_read(&CompressedReadResponse::from_word(w))
        } else {
            Self::from_compressed(&CompressedResponse::from_word(w))
        };
        r.check()?;
        Ok(r)
    }

    /// A single-beat read response with status OKAY (not yet checked).
    const fn from_compressed_read(c: &CompressedReadResponse) -> Self {
        Response::Read(ReadResponse {
            tag: c.tag,
            src: 0,
            dst: c.dst,
            status: Status::Okay,
            num_beats: 0,
            offset: c.offset,
            last: c.last,
            vc: c.vc,
            pool: c.pool,
            auth_tag: 0,
        })
    }

    /// A multi-beat read or a write response with status OKAY (not yet checked).
    const fn from_compressed(c: &CompressedResponse) -> Self {
        if !c.read {
            let w = WriteResponse {
                tag: c.tag,
                src: 0,
                dst: c.dst,
                status: Status::Okay,
                vc: c.vc,
                pool: c.pool,
                auth_tag: 0,
            };
            return Response::Write(w);
        }
        Response::Read(ReadResponse {
            tag: c.tag,
            src: 0,
            dst: c.dst,
            status: Status::Okay,
            num_beats: c.len,
            offset: 0,
            last: true,
            vc: c.vc,
            pool: c.pool,
            auth_tag: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_response() -> impl Strategy<Value = Response> {
        let status = (0u8..15).prop_map(Status::from_code); // not ISOLATE (0xF) for reads
        (status, 0u16..2048, 0u16..1024, 0u8..4, 0u8..4, prop::bool::ANY, 0u8..4, prop::bool::ANY, prop::bool::ANY)
            .prop_map(|(status, tag, dst, beats, offset, last, vc, pool, is_read)| {
                if is_read {
                    let (offset, last) = if beats > 0 { (0, true) } else { (offset, last) };
                    Response::Read(ReadResponse {
                        tag,
                        src: 0,
                        dst,
                        status,
                        num_beats: beats,
                        offset,
                        last,
                        vc,
                        pool,
                        auth_tag: 0,
                    })
                } else {
                    Response::Write(WriteResponse { tag, src: 0, dst, status, vc, pool, auth_tag: 0 })
                }
            })
    }

    proptest! {
        /// The receiver's shortcut reads any 1-sector compressed response value as the generic
        /// field decoder and `from_field` do, refusals included.
        #[test]
        fn compressed_words_decode_as_fields_do(w in any::<u32>(), read_form in prop::bool::ANY) {
            let t = if read_form { ftype::COMPRESSED_READ_RESPONSE } else { ftype::COMPRESSED_RESPONSE };
            let w = w & 0x0FFF_FFFF | u32::from(t) << 28;
            let generic = ControlField::from_word(u128::from(w), 1).and_then(|f| Response::from_field(&f));
            prop_assert_eq!(Response::from_compressed_word(w).map(Some), generic);
        }

        #[test]
        fn compressed_and_uncompressed_forms_decode_to_the_response(r in any_response()) {
            for compress in [false, true] {
                let f = r.to_field(compress).unwrap();
                prop_assert_eq!(f.sectors(), r.sectors(compress));
                prop_assert_eq!(Response::from_field(&f), Ok(Some(r)));
            }
        }
    }

    #[test]
    fn compressed_forms_by_shape() {
        let ok = WriteResponse { tag: 1, src: 5, dst: 2, status: Status::Okay, vc: 0, pool: false, auth_tag: 0 };
        let w = Response::Write(ok);
        assert!(matches!(
            w.to_field(true),
            Ok(ControlField::CompressedResponse(CompressedResponse { read: false, .. }))
        ));
        let bad = Response::Write(WriteResponse { status: Status::DecodeError, ..ok });
        let Ok(ControlField::UncompressedResponse(mut u)) = bad.to_field(true) else { panic!("errors never compress") };
        // LAST on a write response is open: the field decoder clears it, and a response
        // rebuilt from a record that kept it still reads as the write response.
        let clean = Response::from_field(&ControlField::UncompressedResponse(u));
        u.last = true;
        assert_eq!(Response::from_field(&ControlField::UncompressedResponse(u)), clean);
        let w = ControlField::UncompressedResponse(u).to_word().unwrap();
        assert_eq!(ControlField::from_word(w, 2).and_then(|f| Response::from_field(&f)), clean);
        // A multi-beat read whose OFFSET and LAST a partner left at the first beat's values
        // reads as the response it is.
        let multi = Response::Read(ReadResponse::new(3, 0, 1, 4));
        let Ok(ControlField::UncompressedResponse(mut m)) = multi.to_field(false) else { panic!("uncompressed") };
        m.last = false;
        // (`to_word` sends OFFSET as zero: set it on the word, as such a partner would.)
        let w = ControlField::UncompressedResponse(m).to_word().unwrap()
            | crate::tl::field::layout::uncompressed_response::OFFSET.place(2);
        assert!(ControlField::check_reserved(w, 2).is_err(), "OFFSET of a multi-beat read");
        assert_eq!(ControlField::from_word(w, 2).and_then(|f| Response::from_field(&f)), Ok(Some(multi)));
    }
}
