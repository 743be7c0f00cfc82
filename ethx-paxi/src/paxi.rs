//! PAXI flits: the 10-bit flit header, the flit kinds, the channel widths an implementation
//! configures, and the frame size of every flit kind.
//!
//! Public facts (UniVista's PAXI SUE2.0 documentation as secondary sources quote it; the crate's
//! README says how thin that record is):
//!
//! * The flit header is 10 bits: `[9:8]` flit type (00 AXI request, 01 AXI response, 10 APB),
//!   `[7:6]` encode, `[5:0]` length, whose meaning depends on the type ([`FlitKind`]).
//! * AW+W flits carry a whole write burst, with the write strobes or, when every strobe of the
//!   burst is set, without them (encode 01). AR and B flits aggregate up to 16 requests or
//!   responses to one destination and VC (the transmit buffers hold 16).
//! * The channel widths are implementation parameters ([`ChannelWidths`]): AW = ID + address +
//!   29 + USER bits for AXI4 (+ 6 AWATOP bits when AXI5 atomics are carried), AR the same without
//!   AWATOP, W = data + data/8 strobes + 1 (WLAST) + USER, B = ID + 2 + USER, R = ID + data + 2 +
//!   1 (RLAST) + USER.
//! * Frame sizes in bytes, `⌈x⌉₈` rounding bits up to a byte and `⌈x⌉₅₁₂` up to 64 bytes:
//!   AW+W = ⌈10 + AW + 1⌉₈/8 + beats·⌈W + 1⌉₈/8; R = ⌈10 + R + 1⌉₈/8 + (beats − 1)·⌈R + 1⌉₈/8;
//!   AR×1 = ⌈10 + AR + 1⌉₈/8; AR×N = ⌈10 + AR + 1⌉₅₁₂/8 + (N − 2)·⌈AR + 1⌉₅₁₂/8 + ⌈AR + 1⌉₈/8;
//!   B×N the same with B ([`frame_bytes`]). The only worked example, "WSTRB elision saves about
//!   11 % per 512-bit beat", matches: 75 → 67 bytes a beat with 512-bit data and 16-bit USER.
//!
//! *Project-defined* (each a documented default, since no source says):
//!
//! * **Length of a burst is the beat count**, 1 to 63; 0 is reserved, and a longer AXI burst is
//!   split by the sender or refused ([`PaxiError::BadLength`]). The R formula's `beats − 1` reads
//!   as a count of beats.
//! * **Length of AR×N and B×N is N**, 1 to 16 (the documentation says "number of ARs"); 0 and
//!   17 to 63 are refused.
//! * **APB flits:** length bit 0 is the REQ bit of a register access (1 request, 0 response);
//!   the other length bits are sent as zero and ignored.
//! * Flit type 11 and the encodes the table leaves empty are reserved: refused on receive.
//! * **The ×N padding:** every entry of an AR×N or B×N flit but the last padded to 512 bits is
//!   the formula as quoted; whether the vendor really pads to its datapath or the quote mis-copied
//!   a byte round-up is unknown. [`frame_bytes`] implements the quote exactly;
//!   [`packed_frame_bytes`] is this crate's packed form (every entry rounded to a byte), for the
//!   compressed framing, named apart so neither is mistaken for the other.
//! * **Length of AR×N and B×N** is not in the digest's list of open questions either; the
//!   documentation's "number of ARs" is taken literally.

/// Why a flit header or a flit does not decode or cannot be built. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PaxiError {
    /// Flit type 11 is reserved.
    ReservedType,
    /// An encode the flit type does not define.
    ReservedEncode {
        /// The 2-bit flit type.
        flit_type: u8,
        /// The 2-bit encode.
        encode: u8,
    },
    /// A burst's beat count outside 1 to 63.
    BadLength {
        /// The beats.
        beats: u16,
    },
    /// An AR×N or B×N count outside 1 to 16.
    BadCount {
        /// The count.
        count: u16,
    },
    /// A channel width the configuration does not allow.
    BadWidth {
        /// Which width.
        field: &'static str,
    },
}

impl core::fmt::Display for PaxiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PaxiError::ReservedType => write!(f, "PAXI flit type 0b11 is reserved"),
            PaxiError::ReservedEncode { flit_type, encode } => {
                write!(f, "PAXI flit type {flit_type:#04b} has no encode {encode:#04b}")
            }
            PaxiError::BadLength { beats } => write!(f, "a PAXI burst of {beats} beats (1 to 63)"),
            PaxiError::BadCount { count } => write!(f, "{count} requests in one PAXI flit (1 to 16)"),
            PaxiError::BadWidth { field } => write!(f, "PAXI channel width {field} out of range"),
        }
    }
}

impl core::error::Error for PaxiError {}

/// The longest burst one flit carries (a 6-bit length of beats, 0 reserved).
pub const MAX_BEATS: u16 = 63;
/// The most AR requests or B responses one flit aggregates.
pub const MAX_AGGREGATED: u16 = 16;

/// What a flit carries, with its length field's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FlitKind {
    /// AW and its W beats, with write strobes (type 00, encode 00).
    WriteWithStrobes {
        /// Beats, 1 to 63.
        beats: u16,
    },
    /// AW and its W beats without strobes, every strobe set (type 00, encode 01).
    WriteFull {
        /// Beats, 1 to 63.
        beats: u16,
    },
    /// AR requests (type 00, encode 10).
    Reads {
        /// Requests, 1 to 16.
        count: u16,
    },
    /// B responses (type 01, encode 00).
    WriteResponses {
        /// Responses, 1 to 16.
        count: u16,
    },
    /// R beats of one read (type 01, encode 10).
    ReadData {
        /// Beats, 1 to 63.
        beats: u16,
    },
    /// An APB register read or write (type 10, encode 00).
    ApbRegister {
        /// A request (else the response).
        request: bool,
    },
    /// An APB message such as link-up (type 10, encode 01).
    ApbMessage,
}

impl FlitKind {
    /// The 10-bit flit header.
    pub const fn header(self) -> Result<u16, PaxiError> {
        let (flit_type, encode, length) = match self {
            FlitKind::WriteWithStrobes { beats } => (0b00, 0b00, beats_field(beats)),
            FlitKind::WriteFull { beats } => (0b00, 0b01, beats_field(beats)),
            FlitKind::Reads { count } => (0b00, 0b10, count_field(count)),
            FlitKind::WriteResponses { count } => (0b01, 0b00, count_field(count)),
            FlitKind::ReadData { beats } => (0b01, 0b10, beats_field(beats)),
            FlitKind::ApbRegister { request } => (0b10, 0b00, Ok(request as u16)),
            FlitKind::ApbMessage => (0b10, 0b01, Ok(0)),
        };
        match length {
            Ok(l) => Ok((flit_type << 8) | (encode << 6) | l),
            Err(e) => Err(e),
        }
    }

    /// From a 10-bit flit header (bits above 9 ignored).
    pub const fn from_header(header: u16) -> Result<Self, PaxiError> {
        let flit_type = ((header >> 8) & 0b11) as u8;
        let encode = ((header >> 6) & 0b11) as u8;
        let length = header & 0x3F;
        let kind = match (flit_type, encode) {
            (0b00, 0b00) => FlitKind::WriteWithStrobes { beats: length },
            (0b00, 0b01) => FlitKind::WriteFull { beats: length },
            (0b00, 0b10) => FlitKind::Reads { count: length },
            (0b01, 0b00) => FlitKind::WriteResponses { count: length },
            (0b01, 0b10) => FlitKind::ReadData { beats: length },
            (0b10, 0b00) => FlitKind::ApbRegister { request: length & 1 != 0 },
            (0b10, 0b01) => FlitKind::ApbMessage,
            (0b11, _) => return Err(PaxiError::ReservedType),
            _ => return Err(PaxiError::ReservedEncode { flit_type, encode }),
        };
        // The length's range: re-encoding checks it.
        match kind.header() {
            Ok(_) => Ok(kind),
            Err(e) => Err(e),
        }
    }
}

const fn beats_field(beats: u16) -> Result<u16, PaxiError> {
    if beats >= 1 && beats <= MAX_BEATS { Ok(beats) } else { Err(PaxiError::BadLength { beats }) }
}

const fn count_field(count: u16) -> Result<u16, PaxiError> {
    if count >= 1 && count <= MAX_AGGREGATED { Ok(count) } else { Err(PaxiError::BadCount { count }) }
}

/// The AXI channel widths, in bits, an implementation configures; every frame size follows from
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ChannelWidths {
    /// AxID, BID and RID.
    pub id: u16,
    /// AxADDR.
    pub addr: u16,
    /// WDATA and RDATA: 8 to 1024, a power of two.
    pub data: u16,
    /// Each channel's USER.
    pub user: u16,
    /// AW carries AWATOP (AXI5 atomics); AXI4 has none.
    pub atomics: bool,
}

impl ChannelWidths {
    /// The widths of the documentation's example: 8-bit ID, 64-bit address, 512-bit data,
    /// 16-bit USER, AXI4.
    pub const EXAMPLE: ChannelWidths = ChannelWidths { id: 8, addr: 64, data: 512, user: 16, atomics: false };

    /// Every width zero: no data width, so [`ChannelWidths::validate`] refuses it; the widths of
    /// an engine not yet configured (`EMPTY`).
    pub const ZERO: ChannelWidths = ChannelWidths { id: 0, addr: 0, data: 0, user: 0, atomics: false };

    /// Checks the widths: data a power of two from 8 to 1024 bits, ID at most 32, address at
    /// most 64, USER at most 64 bits (what this crate's `u32` and `u64` fields hold).
    pub const fn validate(&self) -> Result<(), PaxiError> {
        if !(self.data.is_power_of_two() && self.data >= 8 && self.data <= 1024) {
            return Err(PaxiError::BadWidth { field: "data" });
        }
        if self.id > 32 {
            return Err(PaxiError::BadWidth { field: "id" });
        }
        if self.addr > 64 {
            return Err(PaxiError::BadWidth { field: "addr" });
        }
        if self.user > 64 {
            return Err(PaxiError::BadWidth { field: "user" });
        }
        Ok(())
    }

    /// AR bits: ID + address + 29 (AxLEN 8, AxSIZE 3, AxBURST 2, AxLOCK 1, AxCACHE 4, AxPROT
    /// 3, AxQOS 4, AxREGION 4) + USER.
    pub const fn ar_bits(&self) -> u32 {
        self.id as u32 + self.addr as u32 + 29 + self.user as u32
    }

    /// AW bits: as AR, plus the 6 AWATOP bits when atomics are carried.
    pub const fn aw_bits(&self) -> u32 {
        self.ar_bits() + if self.atomics { 6 } else { 0 }
    }

    /// W bits: data, the data/8 strobes unless elided, WLAST, USER.
    pub const fn w_bits(&self, strobes: bool) -> u32 {
        let strb = if strobes { self.data as u32 / 8 } else { 0 };
        self.data as u32 + strb + 1 + self.user as u32
    }

    /// B bits: ID, BRESP, USER.
    pub const fn b_bits(&self) -> u32 {
        self.id as u32 + 2 + self.user as u32
    }

    /// R bits: ID, data, RRESP, RLAST, USER.
    pub const fn r_bits(&self) -> u32 {
        self.id as u32 + self.data as u32 + 2 + 1 + self.user as u32
    }
}

/// Bits rounded up to whole bytes, in bytes.
const fn bytes8(bits: u32) -> u32 {
    bits.div_ceil(8)
}

/// Bits rounded up to whole 64-byte (512-bit) units, in bytes.
const fn bytes512(bits: u32) -> u32 {
    bits.div_ceil(512) * 64
}

/// The frame size in bytes of a flit of `kind` with these widths, by the documented formulas
/// (module doc), the ×N padding exactly as quoted. `None` for APB flits (the documentation does
/// not size them) and for a kind whose length its header cannot carry ([`FlitKind::header`]).
/// Sizes saturate at `u32::MAX` for widths [`ChannelWidths::validate`] would refuse.
pub const fn frame_bytes(w: &ChannelWidths, kind: FlitKind) -> Option<u32> {
    const H: u32 = 10;
    if kind.header().is_err() {
        return None;
    }
    match kind {
        FlitKind::WriteWithStrobes { beats } => {
            Some(first_and_rest(H + w.aw_bits() + 1, beats as u32, w.w_bits(true) + 1))
        }
        FlitKind::WriteFull { beats } => Some(first_and_rest(H + w.aw_bits() + 1, beats as u32, w.w_bits(false) + 1)),
        FlitKind::ReadData { beats } => Some(first_and_rest(H + w.r_bits() + 1, beats as u32 - 1, w.r_bits() + 1)),
        FlitKind::Reads { count } => Some(aggregated(w.ar_bits(), count)),
        FlitKind::WriteResponses { count } => Some(aggregated(w.b_bits(), count)),
        FlitKind::ApbRegister { .. } | FlitKind::ApbMessage => None,
    }
}

/// ⌈first⌉₈/8 + n·⌈each⌉₈/8 bytes, saturating.
const fn first_and_rest(first_bits: u32, n: u32, each_bits: u32) -> u32 {
    bytes8(first_bits).saturating_add(n.saturating_mul(bytes8(each_bits)))
}

/// AR×N and B×N as quoted: one entry alone is ⌈10 + E + 1⌉₈/8; more pad the first and the middle
/// ones to 512 bits.
const fn aggregated(entry: u32, count: u16) -> u32 {
    const H: u32 = 10;
    match count {
        0 | 1 => bytes8(H + entry + 1),
        n => bytes512(H + entry + 1)
            .saturating_add((n as u32 - 2).saturating_mul(bytes512(entry + 1)))
            .saturating_add(bytes8(entry + 1)),
    }
}

/// The *project-defined* packed size of an AR×N or B×N flit: every entry rounded to a byte
/// instead of to 64 bytes, ⌈10 + E + 1⌉₈/8 + (N − 1)·⌈E + 1⌉₈/8 (the digest's default for the
/// compressed framing). For other kinds the same as [`frame_bytes`].
pub const fn packed_frame_bytes(w: &ChannelWidths, kind: FlitKind) -> Option<u32> {
    if kind.header().is_err() {
        return None;
    }
    match kind {
        FlitKind::Reads { count } => Some(first_and_rest(10 + w.ar_bits() + 1, count as u32 - 1, w.ar_bits() + 1)),
        FlitKind::WriteResponses { count } => {
            Some(first_and_rest(10 + w.b_bits() + 1, count as u32 - 1, w.b_bits() + 1))
        }
        other => frame_bytes(w, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: ChannelWidths = ChannelWidths::EXAMPLE;

    /// A header from its fields: type, encode, length.
    fn hdr(flit_type: u16, encode: u16, length: u16) -> u16 {
        flit_type << 8 | encode << 6 | length
    }

    #[test]
    fn documented_sizes_by_hand() {
        // AR = 8 + 64 + 29 + 16 = 117 bits; AR×1 = ⌈10 + 117 + 1 = 128⌉₈ = 16 B, the "16 B
        // instruction" of the design note.
        assert_eq!(W.ar_bits(), 117);
        assert_eq!(frame_bytes(&W, FlitKind::Reads { count: 1 }), Some(16));
        // AR×16 = 64 (128 bits padded to 512) + 14 × 64 (118 bits padded) + 15 (118 bits) = 975.
        assert_eq!(frame_bytes(&W, FlitKind::Reads { count: 16 }), Some(975));
        // B = 8 + 2 + 16 = 26 bits: B×1 = ⌈37⌉₈ = 5 B; B×16 = 64 + 14 × 64 + ⌈27⌉₈ = 964 B.
        assert_eq!(W.b_bits(), 26);
        assert_eq!(frame_bytes(&W, FlitKind::WriteResponses { count: 1 }), Some(5));
        assert_eq!(frame_bytes(&W, FlitKind::WriteResponses { count: 16 }), Some(964));
        // A W beat: 512 + 64 + 1 + 16 = 593 bits, +1 → 75 B; without strobes 529 + 1 → 67 B:
        // the documented "about 11 %" saving per 512-bit beat.
        assert_eq!((W.w_bits(true), W.w_bits(false)), (593, 529));
        let aw = 16; // ⌈10 + 117 + 1⌉₈ / 8
        assert_eq!(frame_bytes(&W, FlitKind::WriteWithStrobes { beats: 2 }), Some(aw + 2 * 75));
        assert_eq!(frame_bytes(&W, FlitKind::WriteFull { beats: 2 }), Some(aw + 2 * 67));
        // R = 8 + 512 + 3 + 16 = 539 bits: a 2-beat read = ⌈10 + 539 + 1 = 550⌉₈ (69) + ⌈540⌉₈ (68).
        assert_eq!(W.r_bits(), 539);
        assert_eq!(frame_bytes(&W, FlitKind::ReadData { beats: 2 }), Some(69 + 68));
        // Atomics add AWATOP's 6 bits to AW only.
        let a5 = ChannelWidths { atomics: true, ..W };
        assert_eq!((a5.aw_bits(), a5.ar_bits()), (123, 117));
        // The packed AR×16: 16 + 15 × ⌈118⌉₈ (15) = 241 B, against 975 as quoted; B×16 5 + 15 × 4.
        assert_eq!(packed_frame_bytes(&W, FlitKind::Reads { count: 16 }), Some(241));
        assert_eq!(packed_frame_bytes(&W, FlitKind::WriteResponses { count: 16 }), Some(65));
        // Lengths the header cannot carry have no size; absurd widths saturate.
        assert_eq!(frame_bytes(&W, FlitKind::Reads { count: 17 }), None);
        assert_eq!(frame_bytes(&W, FlitKind::ReadData { beats: 0 }), None);
        let huge = ChannelWidths { id: u16::MAX, addr: u16::MAX, data: u16::MAX, user: u16::MAX, atomics: true };
        assert!(frame_bytes(&huge, FlitKind::WriteWithStrobes { beats: 63 }).is_some());
        assert_eq!(frame_bytes(&W, FlitKind::ApbMessage), None);
    }

    #[test]
    fn header_fields() {
        assert_eq!(FlitKind::Reads { count: 16 }.header(), Ok(hdr(0b00, 0b10, 0b010000)));
        assert_eq!(FlitKind::ReadData { beats: 63 }.header(), Ok(hdr(0b01, 0b10, 0b111111)));
        assert_eq!(FlitKind::ApbRegister { request: true }.header(), Ok(hdr(0b10, 0b00, 0b000001)));
        assert_eq!(FlitKind::from_header(hdr(0b11, 0b00, 0b000001)), Err(PaxiError::ReservedType));
        assert_eq!(
            FlitKind::from_header(hdr(0b01, 0b01, 0b000001)),
            Err(PaxiError::ReservedEncode { flit_type: 1, encode: 1 })
        );
        assert_eq!(FlitKind::from_header(hdr(0b00, 0b10, 0b010001)), Err(PaxiError::BadCount { count: 17 }));
        assert_eq!(FlitKind::from_header(hdr(0b00, 0b00, 0b000000)), Err(PaxiError::BadLength { beats: 0 }));
        assert_eq!(FlitKind::WriteFull { beats: 64 }.header(), Err(PaxiError::BadLength { beats: 64 }));
        // Receive liberally: an APB register flit's other length bits are ignored.
        assert_eq!(FlitKind::from_header(hdr(0b10, 0b00, 0b111110)), Ok(FlitKind::ApbRegister { request: false }));
        assert!(ChannelWidths { data: 500, ..W }.validate().is_err());
        assert_eq!(W.validate(), Ok(()));
    }

    proptest! {
        /// Every 10-bit header either decodes to a kind that encodes back to the same bits (APB
        /// flits: their defined bits), or is refused; sizes grow with the count and the packed
        /// form is never larger than the quoted one.
        #[test]
        fn headers_round_trip(h in 0u16..1024, data_exp in 3u32..=10, id in 0u16..=32, user in 0u16..=64) {
            if let Ok(kind) = FlitKind::from_header(h) {
                let back = kind.header().unwrap();
                let mask = match kind {
                    FlitKind::ApbMessage => 0x3C0,
                    FlitKind::ApbRegister { .. } => 0x3C1,
                    _ => 0x3FF,
                };
                prop_assert_eq!(back, h & mask);
            }
            let w = ChannelWidths { id, addr: 48, data: 1 << data_exp, user, atomics: false };
            prop_assert_eq!(w.validate(), Ok(()));
            for n in 1..MAX_AGGREGATED {
                let (a, b) = (FlitKind::Reads { count: n }, FlitKind::Reads { count: n + 1 });
                prop_assert!(frame_bytes(&w, a) < frame_bytes(&w, b));
                prop_assert!(packed_frame_bytes(&w, b) <= frame_bytes(&w, b));
            }
        }
    }
}
