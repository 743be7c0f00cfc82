//! Flit formats 1–6 byte by byte, per protocol (UCIe 2.0 §3.3, Tables 3-6 and 3-7, Figures
//! 3-10 to 3-26).
//!
//! The protocol layer hands the adapter a flit with the adapter's bytes zero; the adapter fills
//! in the flit header, the DLP bytes of PCIe and CXL.io, and the CRCs. Which bytes are whose
//! depends on the format and on what the flit carries ([`Layout`]); one table ([`Map::new`])
//! holds every combination, and a test checks that each map covers the flit exactly once:
//!
//! | format | PCIe / CXL.io ([`Layout::Io`]) | CXL.cachemem ([`Layout::CacheMem`]) | streaming | management |
//! |---|---|---|---|---|
//! | 2 (68B) | FH 0–1, PL 2–65, CRC 66–67 | the same | the same | — |
//! | 3 (standard, end header) | PL 0–235, FH 236–237, DLP 238–241 | — | PL 0–235 and 238–241, FH 236–237 | PL 0–231, FH 236–237, CRD 238–241 |
//! | 4 (standard, start header) | FH 0–1, PL 2–237, DLP 238–241 | FH 0–1, PL 2–241 | as CXL.cachemem | FH 0–1, PL 2–233, CRD 238–241 |
//! | 5 (latency-optimized) | FH, PL 2–121, DLP 122–125, CRC0, PL 128–243, FM 250–253 | FH, PL 2–121, CRC0, PL 128–243 | as CXL.cachemem | FH, PL 2–121, CRC0, PL 128–239, CRD 240–243 |
//! | 6 (latency-optimized, optional bytes) | as Format 5 but PL 128–247 | FH, PL 2–125, CRC0, PL 128–253 | as CXL.cachemem | FH, PL 2–125, CRC0, PL 128–243, CRD 250–253 |
//!
//! Standard 256B flits carry reserved bytes 242–251 and their two CRCs at 252–255; every byte
//! not named above is reserved: sent as zero, ignored on receive. Format 1 (raw) has no adapter
//! bytes at all: the protocol layer's bytes pass unmodified ([`Flit::raw`]).
//!
//! When PCIe or CXL.io shares a stack with management transport, the flit header's Flit Type
//! picks the map (§3.3.3–3.3.4): a management flit (10b) follows the management column, any
//! other the PCIe/CXL.io one ([`Layout::of`]). In Formats 5 and 6, header byte 0 bit 4 says
//! whether the FM bytes 250–253 carry a Flit_Marker or Optimized_Update_FC; when it is 0 they
//! are reserved ([`Flit::fm`] is `None`).
//!
//! *Project-defined:* a CXL flit with Protocol ID 11b (ARB/MUX) uses the CXL.cachemem map —
//! all payload, no adapter-inserted DLP bytes — since no source read gives ALMPs DLP
//! bytes; a D2D NOP (all zero) reads the same under any map.

pub use crate::crc::Format;
use crate::crc::{self, CrcError};
use crate::header::{FlitHeader, FlitType, HeaderError};

/// Flit bytes `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// Bytes in the span.
    pub const fn len(self) -> usize {
        self.end - self.start
    }

    /// Whether the span has no bytes.
    pub const fn is_empty(self) -> bool {
        self.end == self.start
    }
}

/// The protocol a stack carries, as the flit layout sees it (the negotiated protocol, §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Protocol {
    /// PCIe, flit mode or not.
    Pcie,
    /// CXL: CXL.io, CXL.cachemem and ARB/MUX flits, told apart by the Protocol ID.
    Cxl,
    /// The streaming protocol.
    Streaming,
    /// Management transport alone.
    Management,
}

/// Whose bytes a flit carries: the column of the module doc's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Layout {
    /// PCIe or CXL.io: the adapter inserts DLP bytes (and FM bytes in Formats 5–6).
    Io,
    /// CXL.cachemem (and CXL ARB/MUX): all payload.
    CacheMem,
    /// Streaming: all payload.
    Streaming,
    /// Management transport: payload and a credit-return DWORD (CRD).
    Management,
}

impl Layout {
    /// The map of a flit with `header` on a stack carrying `protocol`.
    pub const fn of(protocol: Protocol, header: &FlitHeader) -> Layout {
        if matches!(header.flit_type, FlitType::Management) {
            return Layout::Management;
        }
        match protocol {
            Protocol::Pcie => Layout::Io,
            Protocol::Cxl => match header.protocol_id {
                0b00 | 0b01 => Layout::Io,
                _ => Layout::CacheMem,
            },
            Protocol::Streaming => Layout::Streaming,
            Protocol::Management => Layout::Management,
        }
    }
}

/// Where the flit header sits in a `format` flit (the same in every layout): bytes 236–237
/// in Format 3, 0–1 otherwise; Format 1 has none.
pub const fn header_span(format: Format) -> Option<Span> {
    match format {
        Format::Raw => None,
        Format::Standard256EndHeader => Some(Span { start: 236, end: 238 }),
        _ => Some(FH0),
    }
}

/// Why a flit cannot be built or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FlitError {
    /// The format does not carry this layout (Table 3-7: CXL.cachemem in Format 3, management
    /// in Format 2), or is Format 1, which has no adapter bytes.
    NotApplicable {
        /// The format.
        format: Format,
        /// The layout asked for.
        layout: Layout,
    },
    /// A buffer of another length than the format's flit, or payload of another length than
    /// the map's.
    Length {
        /// Bytes expected.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// A CRC does not match: the flit is invalid (a replay with Retry on).
    Crc(CrcError),
    /// The flit header uses a reserved encoding.
    Header(HeaderError),
}

impl core::fmt::Display for FlitError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FlitError::NotApplicable { format, layout } => {
                write!(f, "format {} does not carry {layout:?} flits", format.number())
            }
            FlitError::Length { expected, got } => write!(f, "{got} bytes where {expected} are expected"),
            FlitError::Crc(e) => write!(f, "{e}"),
            FlitError::Header(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for FlitError {}

impl From<CrcError> for FlitError {
    fn from(e: CrcError) -> Self {
        FlitError::Crc(e)
    }
}

impl From<HeaderError> for FlitError {
    fn from(e: HeaderError) -> Self {
        FlitError::Header(e)
    }
}

/// Where everything is in a flit of one format and layout. The CRCs are
/// [`Format::coverage`]'s; every byte is in exactly one of header, payload, DLP, FM, CRD,
/// reserved or a CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Map {
    /// The format.
    pub format: Format,
    /// The layout.
    pub layout: Layout,
    /// The flit header's two bytes.
    pub header: Span,
    /// The protocol layer's bytes, in order (one or two runs).
    pub payload: &'static [Span],
    /// PCIe/CXL.io DLP bytes 2–5 (DLLP, Optimized_Update_FC or Flit_Marker).
    pub dlp: Option<Span>,
    /// Formats 5–6, PCIe/CXL.io: the Flit_Marker / Optimized_Update_FC bytes.
    pub fm: Option<Span>,
    /// Management transport's credit-return DWORD.
    pub crd: Option<Span>,
    /// Reserved bytes: zero on send, ignored on receive.
    pub reserved: &'static [Span],
}

/// A span literal (a struct expression, so `&[s!(..)]` is promoted to `'static`).
macro_rules! s {
    ($start:expr, $end:expr) => {
        Span { start: $start, end: $end }
    };
}

/// A map's parts in table order: header, payload, DLP, FM, CRD, reserved.
type Parts = (Span, &'static [Span], Option<Span>, Option<Span>, Option<Span>, &'static [Span]);

const FH0: Span = s!(0, 2);
const NONE: &[Span] = &[];
const STD_RSVD: &[Span] = &[s!(242, 252)];

impl Map {
    /// The map of `layout` flits in `format`.
    pub const fn new(format: Format, layout: Layout) -> Result<Map, FlitError> {
        use Format::*;
        use Layout::*;
        // (header, payload, dlp, fm, crd, reserved)
        let parts: Option<Parts> = match (format, layout) {
            (Flit68, Io | CacheMem | Streaming) => Some((FH0, &[s!(2, 66)], None, None, None, NONE)),
            (Standard256EndHeader, Io) => Some((s!(236, 238), &[s!(0, 236)], Some(s!(238, 242)), None, None, STD_RSVD)),
            (Standard256EndHeader, Streaming) => {
                Some((s!(236, 238), &[s!(0, 236), s!(238, 242)], None, None, None, STD_RSVD))
            }
            (Standard256EndHeader, Management) => {
                Some((s!(236, 238), &[s!(0, 232)], None, None, Some(s!(238, 242)), &[s!(232, 236), s!(242, 252)]))
            }
            (Standard256StartHeader, Io) => Some((FH0, &[s!(2, 238)], Some(s!(238, 242)), None, None, STD_RSVD)),
            (Standard256StartHeader, CacheMem | Streaming) => Some((FH0, &[s!(2, 242)], None, None, None, STD_RSVD)),
            (Standard256StartHeader, Management) => {
                Some((FH0, &[s!(2, 234)], None, None, Some(s!(238, 242)), &[s!(234, 238), s!(242, 252)]))
            }
            (LatencyOptimized256, Io) => {
                Some((FH0, &[s!(2, 122), s!(128, 244)], Some(s!(122, 126)), Some(s!(250, 254)), None, &[s!(244, 250)]))
            }
            (LatencyOptimized256, CacheMem | Streaming) => {
                Some((FH0, &[s!(2, 122), s!(128, 244)], None, None, None, &[s!(122, 126), s!(244, 254)]))
            }
            (LatencyOptimized256, Management) => {
                Some((FH0, &[s!(2, 122), s!(128, 240)], None, None, Some(s!(240, 244)), &[s!(122, 126), s!(244, 254)]))
            }
            (LatencyOptimized256Optional, Io) => {
                Some((FH0, &[s!(2, 122), s!(128, 248)], Some(s!(122, 126)), Some(s!(250, 254)), None, &[s!(248, 250)]))
            }
            (LatencyOptimized256Optional, CacheMem | Streaming) => {
                Some((FH0, &[s!(2, 126), s!(128, 254)], None, None, None, NONE))
            }
            (LatencyOptimized256Optional, Management) => {
                Some((FH0, &[s!(2, 126), s!(128, 244)], None, None, Some(s!(250, 254)), &[s!(244, 250)]))
            }
            _ => None,
        };
        match parts {
            Some((header, payload, dlp, fm, crd, reserved)) => {
                Ok(Map { format, layout, header, payload, dlp, fm, crd, reserved })
            }
            None => Err(FlitError::NotApplicable { format, layout }),
        }
    }

    /// Bytes of protocol-layer payload one flit carries.
    pub fn payload_len(&self) -> usize {
        self.payload.iter().map(|s| s.len()).sum()
    }

    /// Copies `payload` (exactly [`Map::payload_len`] bytes) into the payload runs of `flit`.
    pub fn write_payload(&self, flit: &mut [u8], payload: &[u8]) -> Result<(), FlitError> {
        self.check_len(flit.len())?;
        if payload.len() != self.payload_len() {
            return Err(FlitError::Length { expected: self.payload_len(), got: payload.len() });
        }
        let mut rest = payload;
        for span in self.payload {
            let (part, tail) = rest.split_at_checked(span.len()).unwrap_or((rest, &[]));
            if let Some(dst) = flit.get_mut(span.start..span.end) {
                dst.copy_from_slice(part);
            }
            rest = tail;
        }
        Ok(())
    }

    /// Copies the payload runs of `flit` into `out` (exactly [`Map::payload_len`] bytes).
    pub fn read_payload(&self, flit: &[u8], out: &mut [u8]) -> Result<(), FlitError> {
        self.check_len(flit.len())?;
        if out.len() != self.payload_len() {
            return Err(FlitError::Length { expected: self.payload_len(), got: out.len() });
        }
        let mut rest = out;
        for span in self.payload {
            let (part, tail) = rest.split_at_mut_checked(span.len()).unwrap_or((&mut [], &mut []));
            if let Some(src) = flit.get(span.start..span.end) {
                part.copy_from_slice(src);
            }
            rest = tail;
        }
        Ok(())
    }

    fn check_len(&self, got: usize) -> Result<(), FlitError> {
        let expected = self.format.flit_len();
        if got == expected { Ok(()) } else { Err(FlitError::Length { expected, got }) }
    }
}

fn put(flit: &mut [u8], span: Option<Span>, value: [u8; 4]) {
    if let Some(dst) = span.and_then(|s| flit.get_mut(s.start..s.end)) {
        dst.copy_from_slice(&value);
    }
}

fn get4(bytes: &[u8], span: Option<Span>) -> Option<[u8; 4]> {
    span.and_then(|s| bytes.get(s.start..s.end)).and_then(|b| b.first_chunk::<4>()).copied()
}

/// What the adapter writes into a flit around the protocol layer's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FlitRepr {
    /// The flit header.
    pub header: FlitHeader,
    /// DLP bytes 2–5, where the map has them (else ignored).
    pub dlp: [u8; 4],
    /// FM bytes, where the map has them and `header.marker` is set (else ignored, sent 0).
    pub fm: [u8; 4],
    /// The management credit-return DWORD, where the map has it (else ignored).
    pub crd: [u8; 4],
    /// `lp_corrupt_crc`: CRCs to corrupt with [`crc::CORRUPT_SYNDROME`] (bit i: CRC i).
    pub corrupt_crc: u8,
}

impl FlitRepr {
    /// A repr with only a header.
    pub const fn new(header: FlitHeader) -> FlitRepr {
        FlitRepr { header, dlp: [0; 4], fm: [0; 4], crd: [0; 4], corrupt_crc: 0 }
    }

    /// Completes a flit in place whose payload runs the protocol layer has filled: writes the
    /// header, DLP, FM and CRD bytes, zeroes the reserved bytes and seals the CRCs.
    pub fn emit(&self, map: &Map, retry: bool, flit: &mut [u8]) -> Result<(), FlitError> {
        map.check_len(flit.len())?;
        let header = self.header.emit_for(map.format, retry)?;
        if let Some(dst) = flit.get_mut(map.header.start..map.header.end) {
            dst.copy_from_slice(&header);
        }
        put(flit, map.dlp, self.dlp);
        put(flit, map.fm, if self.header.marker { self.fm } else { [0; 4] });
        put(flit, map.crd, self.crd);
        for span in map.reserved {
            if let Some(dst) = flit.get_mut(span.start..span.end) {
                dst.fill(0);
            }
        }
        crc::seal_corrupted(map.format, flit, self.corrupt_crc)?;
        Ok(())
    }
}

/// A received flit whose CRCs and header have been checked, read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flit<'a> {
    map: Option<Map>,
    header: FlitHeader,
    bytes: &'a [u8],
}

impl<'a> Flit<'a> {
    /// Checks a received flit of `format` on a stack carrying `protocol`: its length, its CRCs
    /// (first, so a corrupt header is never interpreted), then its header, which picks the map.
    pub fn parse(format: Format, protocol: Protocol, retry: bool, bytes: &'a [u8]) -> Result<Flit<'a>, FlitError> {
        let Some(at) = header_span(format) else {
            return Err(FlitError::NotApplicable { format, layout: Layout::of(protocol, &FlitHeader::NOP) });
        };
        if bytes.len() != format.flit_len() {
            return Err(FlitError::Length { expected: format.flit_len(), got: bytes.len() });
        }
        crc::check(format, bytes)?;
        let raw = bytes.get(at.start..at.end).and_then(|b| b.first_chunk::<2>()).copied();
        let header = FlitHeader::parse_for(format, raw.unwrap_or([0; 2]), retry)?;
        let map = Map::new(format, Layout::of(protocol, &header))?;
        Ok(Flit { map: Some(map), header, bytes })
    }

    /// A flit whose CRCs and header the caller has checked (the retry machine).
    pub(crate) const fn checked(map: Map, header: FlitHeader, bytes: &'a [u8]) -> Flit<'a> {
        Flit { map: Some(map), header, bytes }
    }

    /// A Format 1 (raw) unit: every byte is the protocol layer's.
    pub const fn raw(bytes: &'a [u8]) -> Flit<'a> {
        Flit { map: None, header: FlitHeader::NOP, bytes }
    }

    /// The map the flit follows (`None` for Format 1).
    pub const fn map(&self) -> Option<Map> {
        self.map
    }

    /// The flit header (all zero for Format 1).
    pub const fn header(&self) -> FlitHeader {
        self.header
    }

    /// Whether the flit is a D2D adapter NOP (a header of two zero bytes): discarded on
    /// receive, never passed to the protocol layer (§3.1, §3.8).
    pub fn is_nop(&self) -> bool {
        self.map.is_some() && self.header == FlitHeader::NOP
    }

    /// The whole flit.
    pub const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The payload runs, borrowed from the flit (the second empty when there is one run).
    pub fn payload(&self) -> [&'a [u8]; 2] {
        let Some(map) = self.map else {
            return [self.bytes, &[]];
        };
        let run = |i: usize| map.payload.get(i).and_then(|s| self.bytes.get(s.start..s.end)).unwrap_or(&[]);
        [run(0), run(1)]
    }

    /// Copies the payload, its runs joined, into `out`; returns the bytes copied (the payload
    /// length, or less when `out` is shorter).
    pub fn read_payload(&self, out: &mut [u8]) -> usize {
        let mut n = 0;
        for run in self.payload() {
            let Some(dst) = out.get_mut(n..) else { break };
            let k = run.len().min(dst.len());
            if let (Some(d), Some(s)) = (dst.get_mut(..k), run.get(..k)) {
                d.copy_from_slice(s);
            }
            n += k;
        }
        n
    }

    /// DLP bytes 2–5 (PCIe/CXL.io).
    pub fn dlp(&self) -> Option<[u8; 4]> {
        get4(self.bytes, self.map?.dlp)
    }

    /// FM bytes (Formats 5–6, PCIe/CXL.io), when header byte 0 bit 4 says they are in use.
    pub fn fm(&self) -> Option<[u8; 4]> {
        if !self.header.marker {
            return None;
        }
        get4(self.bytes, self.map?.fm)
    }

    /// The management credit-return DWORD.
    pub fn crd(&self) -> Option<[u8; 4]> {
        get4(self.bytes, self.map?.crd)
    }

    /// The adapter's fields as a repr (what [`FlitRepr::emit`] would write again).
    pub fn repr(&self) -> FlitRepr {
        FlitRepr {
            header: self.header,
            dlp: self.dlp().unwrap_or_default(),
            fm: self.fm().unwrap_or_default(),
            crd: self.crd().unwrap_or_default(),
            corrupt_crc: 0,
        }
    }
}

#[cfg(test)]
// Binary literals grouped by field, as the header's table splits the bytes.
#[allow(clippy::unusual_byte_groupings)]
mod tests {
    use super::*;
    use crate::header::ReplayCommand;
    use proptest::prelude::*;

    const FORMATS: [Format; 5] = [
        Format::Flit68,
        Format::Standard256EndHeader,
        Format::Standard256StartHeader,
        Format::LatencyOptimized256,
        Format::LatencyOptimized256Optional,
    ];
    const LAYOUTS: [Layout; 4] = [Layout::Io, Layout::CacheMem, Layout::Streaming, Layout::Management];

    fn maps() -> impl Iterator<Item = Map> {
        FORMATS.into_iter().flat_map(|f| LAYOUTS.into_iter().filter_map(move |l| Map::new(f, l).ok()))
    }

    #[test]
    fn every_byte_has_one_owner() {
        let mut count = 0;
        for map in maps() {
            let mut owner = std::vec![0u8; map.format.flit_len()];
            let crcs = map.format.coverage().iter().map(|c| s!(c.at, c.at + 2));
            let spans = [map.header]
                .into_iter()
                .chain(map.payload.iter().copied())
                .chain(map.dlp)
                .chain(map.fm)
                .chain(map.crd)
                .chain(map.reserved.iter().copied())
                .chain(crcs);
            for span in spans {
                for b in &mut owner[span.start..span.end] {
                    *b += 1;
                }
            }
            assert!(owner.iter().all(|&n| n == 1), "{map:?}: {owner:?}");
            count += 1;
        }
        // Table 3-7: 3 layouts in Format 2, 3 in Format 3, 4 in each of Formats 4-6.
        assert_eq!(count, 3 + 3 + 4 + 4 + 4);
        for (f, l) in [
            (Format::Flit68, Layout::Management),
            (Format::Standard256EndHeader, Layout::CacheMem),
            (Format::Raw, Layout::Streaming),
        ] {
            assert_eq!(Map::new(f, l), Err(FlitError::NotApplicable { format: f, layout: l }));
        }
    }

    #[test]
    fn spec_byte_positions() {
        let m = |f, l| Map::new(f, l).unwrap();
        // Format 3, PCIe: FH replaces DLP0-1 at 236-237, DLP2-5 at 238-241, 236 bytes of TLP.
        let f3 = m(Format::Standard256EndHeader, Layout::Io);
        assert_eq!((f3.header, f3.dlp, f3.payload_len()), (s!(236, 238), Some(s!(238, 242)), 236));
        // Format 3 streaming: the DLP bytes are the protocol layer's, 240 bytes in all.
        assert_eq!(m(Format::Standard256EndHeader, Layout::Streaming).payload_len(), 240);
        // Format 4 CXL.cachemem: 240 bytes (CXL's own CRD at 240-241 is payload here).
        assert_eq!(m(Format::Standard256StartHeader, Layout::CacheMem).payload, &[s!(2, 242)]);
        // Management: CRD at 238-241 (Formats 3, 4), 240-243 (5), 250-253 (6).
        assert_eq!(m(Format::Standard256EndHeader, Layout::Management).crd, Some(s!(238, 242)));
        assert_eq!(m(Format::Standard256StartHeader, Layout::Management).payload_len(), 232);
        assert_eq!(m(Format::LatencyOptimized256, Layout::Management).crd, Some(s!(240, 244)));
        assert_eq!(m(Format::LatencyOptimized256Optional, Layout::Management).crd, Some(s!(250, 254)));
        // Latency-optimized CXL.io: DLP 122-125 before CRC0, FM 250-253 before CRC1.
        let f5 = m(Format::LatencyOptimized256, Layout::Io);
        assert_eq!((f5.dlp, f5.fm, f5.payload_len()), (Some(s!(122, 126)), Some(s!(250, 254)), 236));
        assert_eq!(m(Format::LatencyOptimized256Optional, Layout::Io).payload_len(), 240);
        // Format 6 CXL.cachemem: the optional bytes make 250 bytes of payload.
        assert_eq!(m(Format::LatencyOptimized256Optional, Layout::CacheMem).payload_len(), 250);
        assert_eq!(m(Format::Flit68, Layout::CacheMem).payload_len(), 64);
    }

    #[test]
    fn layout_follows_the_header() {
        let h = |pid, flit_type| FlitHeader { protocol_id: pid, flit_type, ..FlitHeader::NOP };
        assert_eq!(Layout::of(Protocol::Cxl, &h(0b01, FlitType::Protocol)), Layout::Io);
        assert_eq!(Layout::of(Protocol::Cxl, &h(0b10, FlitType::Protocol)), Layout::CacheMem);
        assert_eq!(Layout::of(Protocol::Cxl, &h(0b11, FlitType::Protocol)), Layout::CacheMem);
        assert_eq!(Layout::of(Protocol::Pcie, &h(0b01, FlitType::Management)), Layout::Management);
        assert_eq!(Layout::of(Protocol::Pcie, &h(0b01, FlitType::Test)), Layout::Io);
        assert_eq!(Layout::of(Protocol::Streaming, &h(0b11, FlitType::Protocol)), Layout::Streaming);
    }

    /// A PCIe Format 3 flit built by hand from the figure's byte positions.
    #[test]
    fn format3_by_hand() {
        let map = Map::new(Format::Standard256EndHeader, Layout::Io).unwrap();
        let mut flit = [0u8; 256];
        for (i, b) in flit[..236].iter_mut().enumerate() {
            *b = i as u8;
        }
        flit[245] = 0xEE; // reserved: zeroed by emit
        let header = FlitHeader { protocol_id: 0b01, seq: 0x2C, marker: true, ..FlitHeader::NOP };
        let repr = FlitRepr { dlp: [1, 2, 3, 4], ..FlitRepr::new(header) };
        repr.emit(&map, true, &mut flit).unwrap();
        assert_eq!(flit[236..242], [0b01_0_1_0010, 0b00_00_1100, 1, 2, 3, 4]);
        assert_eq!(flit[242..252], [0; 10]);
        let crc0 = crc::crc(&flit[..128]).unwrap().to_le_bytes();
        let crc1 = crc::crc(&flit[128..242]).unwrap().to_le_bytes();
        assert_eq!(flit[252..256], [crc0[0], crc0[1], crc1[0], crc1[1]]);
        let got = Flit::parse(Format::Standard256EndHeader, Protocol::Pcie, true, &flit).unwrap();
        assert_eq!(got.payload()[0], &flit[..236]);
        assert_eq!(got.repr(), repr);
    }

    #[test]
    fn bad_flits_are_typed_errors() {
        let map = Map::new(Format::LatencyOptimized256, Layout::CacheMem).unwrap();
        let mut flit = [0u8; 256];
        let header = FlitHeader { protocol_id: 0b10, seq: 9, ..FlitHeader::NOP };
        FlitRepr::new(header).emit(&map, true, &mut flit).unwrap();
        fn parse(f: &[u8]) -> Result<Flit<'_>, FlitError> {
            Flit::parse(Format::LatencyOptimized256, Protocol::Cxl, true, f)
        }
        assert!(parse(&flit).is_ok());
        // Reserved bytes are ignored on receive (a peer's CRC covers what it sent).
        let mut odd = flit;
        odd[123] = 0x77;
        crc::seal(Format::LatencyOptimized256, &mut odd).unwrap();
        assert_eq!(parse(&odd).map(|f| f.repr()), Ok(FlitRepr::new(header)));
        // A flipped payload bit is a CRC error in the half it hit.
        let mut bad = flit;
        bad[200] ^= 4;
        assert!(matches!(parse(&bad), Err(FlitError::Crc(CrcError::Mismatch { index: 1, .. }))));
        // Flit Type 11b under a good CRC.
        let mut ty = flit;
        ty[1] |= 0xC0;
        crc::seal(Format::LatencyOptimized256, &mut ty).unwrap();
        assert_eq!(parse(&ty), Err(FlitError::Header(HeaderError::ReservedFlitType)));
        assert_eq!(parse(&flit[..255]), Err(FlitError::Length { expected: 256, got: 255 }));
        assert_eq!(
            map.write_payload(&mut flit, &[0; 3]),
            Err(FlitError::Length { expected: map.payload_len(), got: 3 })
        );
        // lp_corrupt_crc on the second half only.
        let mut poisoned = [0u8; 256];
        FlitRepr { corrupt_crc: 0b10, ..FlitRepr::new(header) }.emit(&map, true, &mut poisoned).unwrap();
        assert!(matches!(parse(&poisoned), Err(FlitError::Crc(CrcError::Mismatch { index: 1, .. }))));
        // All-zero header: a NOP.
        let mut nop = [0u8; 256];
        FlitRepr::new(FlitHeader::NOP).emit(&map, true, &mut nop).unwrap();
        assert!(parse(&nop).unwrap().is_nop());
        assert_eq!(Flit::raw(&nop).payload()[0].len(), 256);
    }

    #[test]
    fn fm_bytes_need_the_marker() {
        let map = Map::new(Format::LatencyOptimized256Optional, Layout::Io).unwrap();
        let mut flit = [0u8; 256];
        let header = FlitHeader { protocol_id: 0b01, ..FlitHeader::NOP };
        FlitRepr { fm: [9; 4], ..FlitRepr::new(header) }.emit(&map, false, &mut flit).unwrap();
        assert_eq!(flit[250..254], [0; 4]); // reserved without the marker
        let parsed = Flit::parse(Format::LatencyOptimized256Optional, Protocol::Cxl, false, &flit).unwrap();
        assert_eq!(parsed.fm(), None);
        let marked = FlitHeader { marker: true, ..header };
        FlitRepr { fm: [9; 4], ..FlitRepr::new(marked) }.emit(&map, false, &mut flit).unwrap();
        let parsed = Flit::parse(Format::LatencyOptimized256Optional, Protocol::Cxl, false, &flit).unwrap();
        assert_eq!(parsed.fm(), Some([9; 4]));
    }

    fn any_header(format: Format) -> impl Strategy<Value = FlitHeader> {
        (0..4u8, 0..2u8, any::<bool>(), 0..3u8, 0..3u8, any::<u8>()).prop_map(
            move |(pid, stack, marker, ty, cmd, seq)| {
                let flit_type = if format == Format::Flit68 {
                    FlitType::Protocol
                } else {
                    [FlitType::Protocol, FlitType::Test, FlitType::Management][ty as usize]
                };
                let command = [ReplayCommand::Explicit, ReplayCommand::Ack, ReplayCommand::Nak][cmd as usize];
                FlitHeader { protocol_id: pid, stack, marker, flit_type, command, seq }
            },
        )
    }

    proptest! {
        /// Any flit of any format and protocol round-trips: payload, header and adapter bytes.
        #[test]
        fn round_trips(
            (format, header) in proptest::sample::select(&FORMATS[..]).prop_flat_map(|f| (Just(f), any_header(f))),
            protocol in proptest::sample::select(&[Protocol::Pcie, Protocol::Cxl, Protocol::Streaming, Protocol::Management][..]),
            extras in any::<[u8; 12]>(),
            fill in any::<u8>(),
        ) {
            let Ok(map) = Map::new(format, Layout::of(protocol, &header)) else { return Ok(()) };
            let payload: std::vec::Vec<u8> = (0..map.payload_len()).map(|i| (i as u8).wrapping_mul(31) ^ fill).collect();
            let mut flit = std::vec![0xA5u8; format.flit_len()];
            map.write_payload(&mut flit, &payload).unwrap();
            let [dlp, fm, crd] = [0, 4, 8].map(|i| *extras[i..].first_chunk::<4>().unwrap());
            let repr = FlitRepr { header, dlp, fm, crd, corrupt_crc: 0 };
            repr.emit(&map, true, &mut flit).unwrap();
            let got = Flit::parse(format, protocol, true, &flit).unwrap();
            let mut back = std::vec![0u8; map.payload_len()];
            map.read_payload(&flit, &mut back).unwrap();
            prop_assert_eq!(&back, &payload);
            prop_assert_eq!([got.payload()[0], got.payload()[1]].concat(), payload);
            prop_assert_eq!(got.map(), Some(map));
            let expect = FlitRepr {
                header: if format == Format::Flit68 { FlitHeader { marker: header.marker, ..header } } else { header },
                dlp: if map.dlp.is_some() { dlp } else { [0; 4] },
                fm: if map.fm.is_some() && header.marker { fm } else { [0; 4] },
                crd: if map.crd.is_some() { crd } else { [0; 4] },
                corrupt_crc: 0,
            };
            prop_assert_eq!(got.repr(), expect);
        }
    }
}
