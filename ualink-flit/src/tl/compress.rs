//! Address compression (UALink 1.0 §5.5–5.6, Tables 5-31 … 5-33): a Tx address cache at the sender
//! and an Rx address cache at the receiver, kept in lockstep by the requests themselves.
//!
//! * A cache has up to 1024 rows (congruence classes) of up to 4 ways. Each entry holds
//!   ReqAddr\[56:20\], a 1 MB region.
//! * The row is an accelerator id: the destination on an accelerator's Tx cache (and the switch's
//!   Rx cache), the source on a switch's Tx cache (and the accelerator's Rx cache). See
//!   [`Indexing`].
//! * An uncompressed request with CLOAD = 1 loads its region into row/CWAY at the receiver; the
//!   entry is usable by any later compressed request, even in the same control half-flit.
//! * A compressed request names a way; the receiver rebuilds ReqAddr = {entry, ADDR, 6'b0},
//!   ReqLen = 16 · (LEN + 1) − 1, NUMBEATS = LEN for writes, ReqAttr = 0xFF for reads and 0x00 for
//!   writes.
//! * Rx entries are never invalidated, only overwritten; the Tx cache may drop entries at any time.
//!
//! Lockstep holds because the DL delivers TL flits exactly once and in order, replay included:
//! the Rx cache sees the loads in the order the Tx cache made them.
//!
//! **The rule that matters: a Tx cache and its link partner's Rx cache index the same way**, or
//! compressed requests decode to wrong addresses. Through a switch that is the pairing above (the
//! accelerator's Tx and the switch's Rx by destination; the switch's Tx and the accelerator's Rx
//! by source). Two accelerators joined directly, with no switch between, get no pairing from the
//! text: give both caches of the link the same [`Indexing`] (e.g. [`Indexing::ByDst`] at both
//! ends, as this crate's examples do; *project-defined*).
//!
//! *Project-defined*:
//! * A cache smaller than 1024 rows uses row = id mod ROWS, at both ends.
//! * Load policy: every uncompressed request that misses loads its region, into an invalid way if
//!   the row has one, else round-robin. The Tx cache never has to keep an entry for a later
//!   request, because [`TxCompressor::encode`] decides and updates in one step, in issue order.
//! * Compress only when ReqMetaData\[7:2\] = 0; on receive, METADATA\[2:0\] is
//!   taken as carried.

use super::field::{CompressedCmd, CompressedRequest, ControlField, UncompressedRequest};
use crate::Error;
use crate::upli::{Command, Request};

/// Which accelerator id selects the cache row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Indexing {
    /// DSTACCID: an accelerator's Tx cache and a switch's Rx cache.
    ByDst,
    /// SRCACCID: a switch's Tx cache and an accelerator's Rx cache.
    BySrc,
}

/// An entry: the region ReqAddr\[56:20\] with a valid bit above it.
const VALID: u64 = 1 << 63;
/// Bits of ReqAddr held by an entry.
const REGION_SHIFT: u32 = 20;

/// A set-associative cache of 1 MB regions: `ROWS` rows (1..=1024) of `WAYS` ways (1..=4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrCache<const ROWS: usize = 16, const WAYS: usize = 4> {
    entries: [[u64; WAYS]; ROWS],
    victim: [u8; ROWS],
    indexing: Indexing,
}

impl<const ROWS: usize, const WAYS: usize> AddrCache<ROWS, WAYS> {
    const SHAPE_OK: () = assert!(ROWS >= 1 && ROWS <= 1024 && WAYS >= 1 && WAYS <= 4, "1..=1024 rows, 1..=4 ways");

    /// An empty cache.
    pub const fn new(indexing: Indexing) -> Self {
        let () = Self::SHAPE_OK;
        AddrCache { entries: [[0; WAYS]; ROWS], victim: [0; ROWS], indexing }
    }

    /// The row a request uses.
    pub fn row(&self, src: u16, dst: u16) -> usize {
        let id = match self.indexing {
            Indexing::ByDst => dst,
            Indexing::BySrc => src,
        };
        usize::from(id) % ROWS
    }

    /// The region held at `row`/`way`, if loaded.
    pub fn get(&self, row: usize, way: u8) -> Option<u64> {
        let e = *self.entries.get(row)?.get(usize::from(way))?;
        (e & VALID != 0).then_some(e & !VALID)
    }

    /// The way at `row` holding `region`.
    pub fn find(&self, row: usize, region: u64) -> Option<u8> {
        let want = region | VALID;
        self.entries.get(row)?.iter().position(|e| *e == want).map(|w| w as u8)
    }

    /// Loads `region` into `row`/`way`. A way out of range is refused.
    pub fn load(&mut self, row: usize, way: u8, region: u64) -> Result<(), Error> {
        let slot = self
            .entries
            .get_mut(row)
            .and_then(|r| r.get_mut(usize::from(way)))
            .ok_or(Error::BadValue { field: "CWAY (beyond the cache's ways)", value: u32::from(way) })?;
        *slot = region | VALID;
        Ok(())
    }

    /// The way the next load at `row` replaces: an invalid way, else round-robin.
    fn victim(&mut self, row: usize) -> u8 {
        let Some(ways) = self.entries.get(row) else { return 0 };
        if let Some(w) = ways.iter().position(|e| e & VALID == 0) {
            return w as u8;
        }
        let Some(v) = self.victim.get_mut(row) else { return 0 };
        let w = *v;
        *v = ((usize::from(w) + 1) % WAYS) as u8;
        w
    }

    /// Drops every entry (allowed at the Tx cache at any time).
    pub fn clear(&mut self) {
        *self = Self::new(self.indexing);
    }
}

/// Whether a request may travel compressed, cache aside (Table 5-32): Read, Write or WriteFull;
/// 64, 128, 192 or 256 bytes, 64-byte aligned; ReqAttr 0xFF for reads and 0x00 for writes;
/// ReqMetaData\[7:2\] = 0.
pub const fn compressible(r: &Request) -> bool {
    let attr_ok = match r.cmd {
        Command::Read => r.attr == 0xFF,
        Command::Write | Command::WriteFull => r.attr == 0x00,
        _ => false,
    };
    attr_ok && r.addr % 64 == 0 && r.len % 16 == 15 && r.metadata >> 2 == 0
}

/// What the Tx cache holds for a request: its row, the way holding its 1 MB region (when
/// compression is on), and whether the request travels compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lookup {
    row: usize,
    way: Option<u8>,
    compressed: bool,
}

impl Lookup {
    /// Sectors the request's field takes: 2 compressed, 4 uncompressed.
    pub(crate) const fn sectors(&self) -> u8 {
        if self.compressed { 2 } else { 4 }
    }

    /// The way holding the request's region, when the request travels compressed.
    const fn compressed_way(&self) -> Option<u8> {
        if self.compressed { self.way } else { None }
    }

    /// The compressed field's value (FTYPE included) for `r`, the checked request this lookup
    /// was taken for, when it travels compressed. A hit changes nothing in the cache, so this
    /// is all [`TxCompressor::encode_found`] would do, and the packer writes the value straight
    /// into its slot.
    pub(crate) fn compressed_word(&self, r: &Request) -> Option<u64> {
        self.compressed_way().map(|way| compress(r, way).word())
    }
}

/// `r` in its compressed form through `way` (Table 5-31); `r` is [`compressible`].
const fn compress(r: &Request, way: u8) -> CompressedRequest {
    let cmd = match r.cmd {
        Command::Read => CompressedCmd::Read,
        Command::Write => CompressedCmd::Write,
        _ => CompressedCmd::WriteFull,
    };
    CompressedRequest {
        cmd,
        vc: r.vc,
        asi: r.asi,
        tag: r.tag,
        pool: r.pool,
        len: r.len / 16,
        metadata: r.metadata,
        addr_block: (r.addr >> 6 & 0x3FFF) as u16,
        src: r.src,
        dst: r.dst,
        way,
    }
}

/// The sending side: turns requests into request fields, compressed when the cache allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxCompressor<const ROWS: usize = 16, const WAYS: usize = 4> {
    /// The Tx address cache.
    pub cache: AddrCache<ROWS, WAYS>,
    /// When false, every request goes uncompressed with CLOAD = 0 and the cache is left alone.
    pub enabled: bool,
}

impl<const ROWS: usize, const WAYS: usize> TxCompressor<ROWS, WAYS> {
    /// A compressor with an empty cache.
    pub const fn new(indexing: Indexing, enabled: bool) -> Self {
        TxCompressor { cache: AddrCache::new(indexing), enabled }
    }

    /// Sectors `r`'s field would take now (2 compressed, 4 uncompressed), without changing
    /// anything.
    pub fn sectors(&self, r: &Request) -> u8 {
        self.lookup(r).sectors()
    }

    /// What the Tx cache holds for `r` now.
    pub(crate) fn lookup(&self, r: &Request) -> Lookup {
        let row = self.cache.row(r.src, r.dst);
        let way = if self.enabled { self.cache.find(row, r.addr >> REGION_SHIFT) } else { None };
        Lookup { row, way, compressed: way.is_some() && compressible(r) }
    }

    /// The field for `r` (whose `pool` is the TL credit used), updating the Tx cache as the
    /// receiver's will be updated. Call in issue order.
    pub fn encode(&mut self, r: &Request) -> Result<ControlField, Error> {
        r.check()?;
        r.check_reserved()?;
        let found = self.lookup(r);
        self.encode_found(r, found)
    }

    /// [`Self::encode`] for a request already checked, with `found`, its [`Self::lookup`] taken
    /// since the cache last changed (so the packer sizes a slot and fills it with one lookup).
    pub(crate) fn encode_found(&mut self, r: &Request, found: Lookup) -> Result<ControlField, Error> {
        if let Some(way) = found.compressed_way() {
            return Ok(ControlField::CompressedRequest(compress(r, way)));
        }
        let Lookup { row, way: hit, .. } = found;
        let region = r.addr >> REGION_SHIFT;
        let cache_load = match (self.enabled, hit) {
            (true, None) => {
                let way = self.cache.victim(row);
                self.cache.load(row, way, region)?;
                Some(way)
            }
            _ => None,
        };
        Ok(ControlField::UncompressedRequest(UncompressedRequest {
            cmd: r.cmd.code(),
            vc: r.vc,
            asi: r.asi,
            tag: r.tag,
            pool: r.pool,
            attr: r.attr,
            len: r.len,
            metadata: r.metadata,
            addr: r.addr,
            src: r.src,
            dst: r.dst,
            cache_load,
            num_beats: r.num_beats,
        }))
    }
}

/// The receiving side: turns request fields back into requests, loading and reading the Rx cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxDecompressor<const ROWS: usize = 16, const WAYS: usize = 4> {
    /// The Rx address cache.
    pub cache: AddrCache<ROWS, WAYS>,
}

impl<const ROWS: usize, const WAYS: usize> RxDecompressor<ROWS, WAYS> {
    /// A decompressor with an empty cache.
    pub const fn new(indexing: Indexing) -> Self {
        RxDecompressor { cache: AddrCache::new(indexing) }
    }

    /// The request a field carries, or `None` for a field that is not a request. The request's
    /// `pool` is the field's POOL bit and its `auth_tag` is 0 (tags travel in their own
    /// half-flit). A refused request leaves the cache untouched.
    pub fn decode(&mut self, f: &ControlField) -> Result<Option<Request>, Error> {
        let r = match *f {
            ControlField::UncompressedRequest(u) => {
                let r = Request {
                    cmd: Command::from_code(u.cmd)?,
                    addr: u.addr,
                    len: u.len,
                    num_beats: u.num_beats,
                    tag: u.tag,
                    src: u.src,
                    dst: u.dst,
                    attr: u.attr,
                    metadata: u.metadata,
                    asi: u.asi,
                    vc: u.vc,
                    pool: u.pool,
                    auth_tag: 0,
                };
                r.check()?;
                if let Some(way) = u.cache_load {
                    let row = self.cache.row(r.src, r.dst);
                    self.cache.load(row, way, r.addr >> REGION_SHIFT)?;
                }
                r
            }
            ControlField::CompressedRequest(c) => {
                c.check()?;
                self.decompress(&c)?
            }
            _ => return Ok(None),
        };
        Ok(Some(r))
    }

    /// The request a compressed field carries, its values known to fit their bits (as read off
    /// the wire; [`Self::decode`] checks them first otherwise). It only reads the cache.
    pub(crate) fn decompress(&self, c: &CompressedRequest) -> Result<Request, Error> {
        let row = self.cache.row(c.src, c.dst);
        let region = self
            .cache
            .get(row, c.way)
            .ok_or(Error::BadValue { field: "CWAY (entry never loaded)", value: u32::from(c.way) })?;
        let (cmd, attr, num_beats) = match c.cmd {
            CompressedCmd::Read => (Command::Read, 0xFF, 0),
            CompressedCmd::Write => (Command::Write, 0x00, c.len),
            CompressedCmd::WriteFull => (Command::WriteFull, 0x00, c.len),
        };
        let r = Request {
            cmd,
            addr: region << REGION_SHIFT | u64::from(c.addr_block) << 6,
            len: 16 * (c.len + 1) - 1,
            num_beats,
            tag: c.tag,
            src: c.src,
            dst: c.dst,
            attr,
            metadata: c.metadata,
            asi: c.asi,
            vc: c.vc,
            pool: c.pool,
            auth_tag: 0,
        };
        // Every other rule of `Request::check` holds by construction: the entry came from a
        // checked request's ReqAddr[56:20] and the field's bits fit; the command is
        // Read/Write/WriteFull on whole aligned beats with NUMBEATS = LEN (writes) or 0 (reads)
        // and ReqAttr as Table 5-32 fixes it. Only LEN against the block's place in its 256
        // bytes is left.
        r.check_span()?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(addr: u64, dst: u16) -> Request {
        Request::new(Command::Read, addr, 63, 7, 1, dst)
    }

    #[test]
    fn first_request_loads_then_later_ones_compress() {
        let mut tx = TxCompressor::<16, 4>::new(Indexing::ByDst, true);
        let mut rx = RxDecompressor::<16, 4>::new(Indexing::ByDst);
        let a = read(0x1234_5600, 3);
        let f0 = tx.encode(&a).unwrap();
        assert!(matches!(f0, ControlField::UncompressedRequest(UncompressedRequest { cache_load: Some(0), .. })));
        let b = read(0x1234_5700, 3);
        let f1 = tx.encode(&b).unwrap();
        assert!(matches!(f1, ControlField::CompressedRequest(CompressedRequest { way: 0, .. })));
        assert_eq!(rx.decode(&f0), Ok(Some(a)));
        assert_eq!(rx.decode(&f1), Ok(Some(b)));
        // A compressed request naming a way the receiver never loaded is refused.
        let mut fresh = RxDecompressor::<16, 4>::new(Indexing::ByDst);
        assert!(fresh.decode(&f1).is_err());
        // Five regions in one row of four ways: round-robin replacement keeps both sides equal.
        for i in 0..5u64 {
            let f = tx.encode(&read(i << 20, 3)).unwrap();
            rx.decode(&f).unwrap();
        }
        for way in 0..4 {
            assert_eq!(tx.cache.get(3, way), rx.cache.get(3, way));
        }
    }

    /// A compressed field is refused, cache untouched, when a value is wider than its bits (a
    /// caller may build one by hand) or when LEN carries the transfer past its 256-byte block;
    /// the rest of `Request::check` holds by construction.
    #[test]
    fn compressed_fields_out_of_range_or_crossing_256_bytes_are_refused() {
        let mut tx = TxCompressor::<16, 4>::new(Indexing::ByDst, true);
        let mut rx = RxDecompressor::<16, 4>::new(Indexing::ByDst);
        rx.decode(&tx.encode(&read(0x1230_0000, 3)).unwrap()).unwrap();
        let ControlField::CompressedRequest(ok) = tx.encode(&read(0x1230_0100, 3)).unwrap() else {
            panic!("a hit compresses")
        };
        assert_eq!(rx.decode(&ControlField::CompressedRequest(ok)).unwrap().unwrap().addr, 0x1230_0100);
        let before = rx.clone();
        for (bad, field) in [
            (CompressedRequest { len: 4, ..ok }, "LEN"),
            (CompressedRequest { len: 255, ..ok }, "LEN"),
            (CompressedRequest { addr_block: 1 << 14, ..ok }, "ADDR"),
            (CompressedRequest { tag: 2048, ..ok }, "TAG"),
            (CompressedRequest { metadata: 8, ..ok }, "METADATA"),
            (CompressedRequest { dst: 1024, ..ok }, "DSTACCID"),
        ] {
            assert!(
                matches!(rx.decode(&ControlField::CompressedRequest(bad)), Err(Error::BadValue { field: f, .. }) if f == field),
                "{field}"
            );
        }
        // Block 3 of its 256 bytes with two beats: 192 + 128 > 256.
        let crossing = CompressedRequest { addr_block: ok.addr_block | 3, len: 1, ..ok };
        assert_eq!(
            rx.decode(&ControlField::CompressedRequest(crossing)),
            Err(Error::BadValue { field: "ReqLen (crosses a 256-byte boundary)", value: 31 })
        );
        // The last beat of the block alone is fine.
        let last = CompressedRequest { addr_block: ok.addr_block | 3, len: 0, ..ok };
        assert_eq!(rx.decode(&ControlField::CompressedRequest(last)).unwrap().unwrap().addr & 0xFF, 0xC0);
        assert_eq!(rx.cache, before.cache);
    }

    #[test]
    fn disabled_or_incompressible_requests_go_uncompressed_without_load() {
        let mut tx = TxCompressor::<4, 2>::new(Indexing::ByDst, false);
        let f = tx.encode(&read(0x4000, 1)).unwrap();
        assert!(matches!(f, ControlField::UncompressedRequest(UncompressedRequest { cache_load: None, .. })));
        let mut tx = TxCompressor::<4, 2>::new(Indexing::ByDst, true);
        tx.encode(&read(0x4000, 1)).unwrap();
        // A 4-byte read in the cached region: a hit, but not compressible.
        let small = Request { len: 0, ..read(0x4040, 1) };
        assert!(matches!(
            tx.encode(&small).unwrap(),
            ControlField::UncompressedRequest(UncompressedRequest { cache_load: None, .. })
        ));
    }

    fn any_request() -> impl Strategy<Value = Request> {
        (0u64..(1 << 16), 0u8..4, 0u8..4, prop::bool::ANY, 0u16..64, 0u16..2048, 0u8..8).prop_map(
            |(block, off, beats, write, dst, tag, md)| {
                // 16 regions of 1 MB, so regions repeat often.
                let addr = block << 8 | u64::from(off) << 6;
                let beats = beats.min(3 - off);
                let len = 16 * (beats + 1) - 1;
                Request {
                    cmd: if write { Command::WriteFull } else { Command::Read },
                    addr,
                    len,
                    num_beats: if write { beats } else { 0 },
                    tag,
                    src: 9,
                    dst,
                    attr: if write { 0 } else { 0xFF },
                    metadata: md,
                    asi: 1,
                    vc: 2,
                    pool: true,
                    auth_tag: 0,
                }
            },
        )
    }

    proptest! {
        /// Any stream of requests decodes to itself, the caches never diverge, and requests
        /// compressed or not decode to the same record.
        #[test]
        fn compressed_and_uncompressed_decode_to_the_same_request(reqs in prop::collection::vec(any_request(), 1..200)) {
            let mut tx = TxCompressor::<8, 2>::new(Indexing::ByDst, true);
            let mut rx = RxDecompressor::<8, 2>::new(Indexing::ByDst);
            let mut plain_tx = TxCompressor::<8, 2>::new(Indexing::ByDst, false);
            let mut plain_rx = RxDecompressor::<8, 2>::new(Indexing::ByDst);
            for r in &reqs {
                // The packer's shortcut: a compressed request's value, written without `encode`.
                let direct = tx.lookup(r).compressed_word(r);
                let before = tx.cache.clone();
                let f = tx.encode(r).unwrap();
                prop_assert_eq!(direct.is_some(), matches!(f, ControlField::CompressedRequest(_)));
                if let Some(w) = direct {
                    // Read back by the decoder (its own bit positions), not by `to_word`, which
                    // shares `CompressedRequest::word` with the shortcut.
                    prop_assert_eq!(ControlField::from_word(u128::from(w), 2), Ok(f));
                    // A hit leaves the cache as it was, which is why the shortcut may skip `encode`.
                    prop_assert_eq!(&tx.cache, &before);
                }
                prop_assert_eq!(rx.decode(&f).unwrap(), Some(*r));
                let p = plain_tx.encode(r).unwrap();
                prop_assert_eq!(plain_rx.decode(&p).unwrap(), Some(*r));
            }
            prop_assert_eq!(&tx.cache.entries, &rx.cache.entries);
        }
    }
}
