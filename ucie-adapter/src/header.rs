//! The 2-byte flit header (UCIe 2.0 §3.3.2 Tables 3-2 and 3-3 for Format 2; §3.3.3–3.3.4
//! Tables 3-4 and 3-5 for Formats 3–6), with and without Retry.
//!
//! | byte | bits | Formats 3–6 | Format 2 |
//! |---|---|---|---|
//! | 0 | 7:6 | Protocol ID | Protocol ID |
//! | 0 | 5 | Stack ID | Stack ID |
//! | 0 | 4 | CXL.io/PCIe: 1 = Optimized_Update_FC or Flit_Marker in the DLP (or FM) bytes; else reserved | 1 = PDS flit header |
//! | 0 | 3:0 | with Retry: sequence number S\[7:4\]; else reserved | the same |
//! | 1 | 7:6 | Flit Type: 00 protocol flit or NOP, 01 test, 10 management, 11 reserved | with Retry: 00 regular, 01 test, 11 PDS, 10 reserved; without: 01 test, else bit 7 = PDS |
//! | 1 | 5:4 | with Retry: 00 explicit sequence number S, 01 Ack(S), 10 Nak (module doc), 11 reserved; else reserved | the same |
//! | 1 | 3:0 | with Retry: S\[3:0\]; else reserved | the same |
//!
//! A Nak of flit N carries S = N − 1, and 255 for N = 1 ([`nak_field`], [`naked_seq`]);
//! sequence number 0 is reserved: a header with S = 0 implies no Ack or Nak. A header of two
//! zero bytes is discarded on receive ([`FlitHeader::is_nop`]). Reserved bits are sent as zero
//! and ignored on receive; reserved *encodings* (Flit Type 11, command 11, Format 2's PDS
//! combinations other than 00 and 11 with Retry) are [`HeaderError`]s.
//!
//! *Project-defined* (the spec is ambiguous): a Format 2 PDS header without Retry is sent with
//! byte 1 bits 7 and 6 set (Table 3-2 reserves bit 6, §3.3.2.1 lists it as 1) and either is
//! accepted on receive.

/// Protocol ID values (flit header byte 0 bits 7:6; §3.3, Tables 3-2 to 3-5). 00b is the
/// adapter's own (NOP, PDS) and never a protocol layer's flit.
pub mod protocol_id {
    /// 00b: the D2D adapter: a NOP (or, in Format 2, a PDS).
    pub const ADAPTER: u8 = 0b00;
    /// 01b on a CXL link: CXL.io.
    pub const CXL_IO: u8 = 0b01;
    /// 10b on a CXL link: CXL.cachemem.
    pub const CXL_CACHEMEM: u8 = 0b10;
    /// 11b on a CXL link: ARB/MUX (ALMPs).
    pub const ARB_MUX: u8 = 0b11;
    /// 01b on a PCIe link.
    pub const PCIE: u8 = 0b01;
    /// 01b on a streaming link in Format 2 ("protocol layer flit"); in Formats 3–6 streaming
    /// Protocol IDs 01b–11b are vendor-defined (the protocol layer never sends 00b).
    pub const STREAMING: u8 = 0b01;
    /// 01b for management transport: a management flit (sent with Flit Type 10b).
    pub const MANAGEMENT: u8 = 0b01;
}

use crate::crc::Format;

/// Why a flit header does not decode or encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderError {
    /// Flit Type 11.
    ReservedFlitType,
    /// Ack/Nak command 11.
    ReservedCommand,
    /// Format 2 with Retry: byte 1 bits 7:6 neither 00 nor 11.
    ReservedPdsEncoding,
    /// A field out of range (Protocol ID above 3, Stack ID above 1).
    FieldRange {
        /// The field.
        field: &'static str,
    },
}

impl core::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HeaderError::ReservedFlitType => f.write_str("reserved Flit Type 11b"),
            HeaderError::ReservedCommand => f.write_str("reserved Ack/Nak command 11b"),
            HeaderError::ReservedPdsEncoding => f.write_str("reserved Format 2 flit header byte 1 bits 7:6"),
            HeaderError::FieldRange { field } => write!(f, "flit header field {field} out of range"),
        }
    }
}

impl core::error::Error for HeaderError {}

/// Byte 1 bits 5:4 with Retry: what S means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ReplayCommand {
    /// 00: S is this flit's own sequence number.
    Explicit,
    /// 01: S acknowledges flits up to S.
    Ack,
    /// 10: a Nak; S is [`nak_field`] of the flit asked for.
    Nak,
}

/// Formats 3–6, byte 1 bits 7:6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FlitType {
    /// 00: a CXL, PCIe or streaming flit, or a D2D NOP.
    Protocol,
    /// 01: a test flit.
    Test,
    /// 10: a management flit.
    Management,
}

/// A flit header's fields. For Format 2, `flit_type` is [`FlitType::Protocol`] or
/// [`FlitType::Test`] and `marker` is the PDS bit; with Retry off, `command` and `seq` are not
/// carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FlitHeader {
    /// Protocol ID, 0 to 3 (its meaning per protocol: §3.3).
    pub protocol_id: u8,
    /// Stack ID, 0 or 1.
    pub stack: u8,
    /// Byte 0 bit 4: Formats 3–6, a DLP/FM marker (Optimized_Update_FC or Flit_Marker);
    /// Format 2, a PDS flit header.
    pub marker: bool,
    /// Formats 3–6: the Flit Type.
    pub flit_type: FlitType,
    /// With Retry: what `seq` means.
    pub command: ReplayCommand,
    /// With Retry: the sequence number field S.
    pub seq: u8,
}

/// The S field of a Nak asking for flit `n`: n − 1, and 255 for n = 1.
pub const fn nak_field(n: u8) -> u8 {
    if n <= 1 { 255 } else { n - 1 }
}

/// The flit a Nak's S field asks for: S + 1, and 1 for S = 255 (sequence number 0 is skipped).
pub const fn naked_seq(s: u8) -> u8 {
    if s == 255 { 1 } else { s + 1 }
}

impl FlitHeader {
    /// A D2D Adapter NOP (all zero).
    pub const NOP: FlitHeader = FlitHeader {
        protocol_id: 0,
        stack: 0,
        marker: false,
        flit_type: FlitType::Protocol,
        command: ReplayCommand::Explicit,
        seq: 0,
    };

    /// Whether the header is all zero: a NOP, discarded on receive.
    pub const fn is_nop(bytes: [u8; 2]) -> bool {
        bytes[0] == 0 && bytes[1] == 0
    }

    fn byte0(&self, retry: bool) -> Result<u8, HeaderError> {
        if self.protocol_id > 3 {
            return Err(HeaderError::FieldRange { field: "Protocol ID" });
        }
        if self.stack > 1 {
            return Err(HeaderError::FieldRange { field: "Stack ID" });
        }
        let hi = if retry { self.seq >> 4 } else { 0 };
        Ok(self.protocol_id << 6 | self.stack << 5 | (self.marker as u8) << 4 | hi)
    }

    fn low(&self, retry: bool) -> u8 {
        if !retry {
            return 0;
        }
        let cmd = match self.command {
            ReplayCommand::Explicit => 0b00,
            ReplayCommand::Ack => 0b01,
            ReplayCommand::Nak => 0b10,
        };
        cmd << 4 | (self.seq & 0xF)
    }

    fn parse_common(bytes: [u8; 2], retry: bool) -> Result<FlitHeader, HeaderError> {
        let [b0, b1] = bytes;
        let (command, seq) = if retry {
            let command = match b1 >> 4 & 0b11 {
                0b00 => ReplayCommand::Explicit,
                0b01 => ReplayCommand::Ack,
                0b10 => ReplayCommand::Nak,
                _ => return Err(HeaderError::ReservedCommand),
            };
            (command, (b0 & 0xF) << 4 | (b1 & 0xF))
        } else {
            (ReplayCommand::Explicit, 0)
        };
        Ok(FlitHeader {
            protocol_id: b0 >> 6,
            stack: b0 >> 5 & 1,
            marker: b0 & 0x10 != 0,
            flit_type: FlitType::Protocol,
            command,
            seq,
        })
    }

    /// The header of a Format 3–6 flit (Tables 3-4 and 3-5).
    pub fn emit_256(&self, retry: bool) -> Result<[u8; 2], HeaderError> {
        let ty = match self.flit_type {
            FlitType::Protocol => 0b00,
            FlitType::Test => 0b01,
            FlitType::Management => 0b10,
        };
        Ok([self.byte0(retry)?, ty << 6 | self.low(retry)])
    }

    /// Reads a Format 3–6 flit header.
    pub fn parse_256(bytes: [u8; 2], retry: bool) -> Result<FlitHeader, HeaderError> {
        let flit_type = match bytes[1] >> 6 {
            0b00 => FlitType::Protocol,
            0b01 => FlitType::Test,
            0b10 => FlitType::Management,
            _ => return Err(HeaderError::ReservedFlitType),
        };
        Ok(FlitHeader { flit_type, ..Self::parse_common(bytes, retry)? })
    }

    /// The header in `format`'s layout: Format 2's ([`FlitHeader::emit_68`]) or Formats
    /// 3–6' ([`FlitHeader::emit_256`]).
    pub fn emit_for(&self, format: Format, retry: bool) -> Result<[u8; 2], HeaderError> {
        match format {
            Format::Flit68 => self.emit_68(retry),
            _ => self.emit_256(retry),
        }
    }

    /// Reads a header in `format`'s layout ([`FlitHeader::parse_68`] or
    /// [`FlitHeader::parse_256`]).
    pub fn parse_for(format: Format, bytes: [u8; 2], retry: bool) -> Result<FlitHeader, HeaderError> {
        match format {
            Format::Flit68 => Self::parse_68(bytes, retry),
            _ => Self::parse_256(bytes, retry),
        }
    }

    /// The header of a Format 2 flit (Tables 3-2 and 3-3); `marker` is the PDS bit, and a
    /// [`FlitType::Test`] flit carries byte 1 bits 7:6 = 01b (note a).
    pub fn emit_68(&self, retry: bool) -> Result<[u8; 2], HeaderError> {
        // With Retry 11b is PDS; without it bit 7 is, and bit 6 is sent as §3.3.2.1 lists it.
        let kind = match (self.flit_type, self.marker) {
            (FlitType::Test, _) => 0b01 << 6,
            (_, true) => 0b11 << 6,
            _ => 0,
        };
        Ok([self.byte0(retry)?, kind | self.low(retry)])
    }

    /// Reads a Format 2 flit header.
    pub fn parse_68(bytes: [u8; 2], retry: bool) -> Result<FlitHeader, HeaderError> {
        let h = Self::parse_common(bytes, retry)?;
        let (pds, flit_type) = match (bytes[1] >> 6, retry) {
            (0b01, _) => (false, FlitType::Test),
            (0b00, true) => (false, FlitType::Protocol),
            (0b11, true) => (true, FlitType::Protocol),
            (_, true) => return Err(HeaderError::ReservedPdsEncoding),
            (b, false) => (b & 0b10 != 0, FlitType::Protocol),
        };
        Ok(FlitHeader { marker: h.marker || pds, flit_type, ..h })
    }
}

#[cfg(test)]
// Binary literals grouped by field, as the module doc's table splits the bytes.
#[allow(clippy::unusual_byte_groupings)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tables_by_hand() {
        // CXL.cachemem (10b), stack 1, Ack of 0x5A with Retry, Formats 3-6.
        let h = FlitHeader {
            protocol_id: 0b10,
            stack: 1,
            marker: false,
            flit_type: FlitType::Protocol,
            command: ReplayCommand::Ack,
            seq: 0x5A,
        };
        assert_eq!(h.emit_256(true), Ok([0b10_1_0_0101, 0b00_01_1010]));
        // Without Retry S and the command are reserved: zero.
        assert_eq!(h.emit_256(false), Ok([0b10_1_0_0000, 0]));
        // A management flit.
        let m = FlitHeader { flit_type: FlitType::Management, ..h };
        assert_eq!(m.emit_256(true).unwrap()[1] >> 6, 0b10);
        assert_eq!(FlitHeader::parse_256([0, 0b11 << 6], true), Err(HeaderError::ReservedFlitType));
        assert_eq!(FlitHeader::parse_256([0, 0b11 << 4], true), Err(HeaderError::ReservedCommand));
        // Reserved bits ignored without Retry.
        assert_eq!(FlitHeader::parse_256([0x0F, 0x3F], false).map(|h| h.seq), Ok(0));
        // Format 2 PDS: byte0 bit 4 and byte1 7:6 = 11 with Retry.
        let pds = FlitHeader { marker: true, seq: !7, ..FlitHeader::NOP };
        let b = pds.emit_68(true).unwrap();
        assert_eq!(b, [0x10 | (!7u8 >> 4), 0xC0 | (!7u8 & 0xF)]);
        assert_eq!(FlitHeader::parse_68(b, true), Ok(pds));
        assert_eq!(FlitHeader::parse_68([0, 0x80], true), Err(HeaderError::ReservedPdsEncoding));
        // Byte 1 bits 7:6 = 01b: a test flit, with Retry or without.
        assert_eq!(FlitHeader::parse_68([0x40, 0x40], true).map(|h| h.flit_type), Ok(FlitType::Test));
        assert_eq!(FlitHeader::parse_68([0x40, 0x40], false).map(|h| h.flit_type), Ok(FlitType::Test));
        // Without Retry either PDS form is accepted.
        assert!(FlitHeader::parse_68([0x10, 0x80], false).unwrap().marker);
        assert!(FlitHeader::is_nop([0, 0]));
        assert_eq!(FlitHeader { stack: 2, ..h }.emit_256(true), Err(HeaderError::FieldRange { field: "Stack ID" }));
    }

    #[test]
    fn nak_numbering() {
        assert_eq!((nak_field(1), nak_field(2), nak_field(255)), (255, 1, 254));
        for n in 1..=255u8 {
            assert_eq!(naked_seq(nak_field(n)), n);
        }
    }

    proptest! {
        /// Every header round-trips in both layouts, with and without Retry.
        #[test]
        fn round_trips(pid in 0..4u8, stack in 0..2u8, marker in any::<bool>(), ty in 0..3u8, cmd in 0..3u8, seq in any::<u8>(), retry in any::<bool>()) {
            let flit_type = [FlitType::Protocol, FlitType::Test, FlitType::Management][ty as usize];
            let command = [ReplayCommand::Explicit, ReplayCommand::Ack, ReplayCommand::Nak][cmd as usize];
            let h = FlitHeader { protocol_id: pid, stack, marker, flit_type, command, seq };
            let carried = |h: FlitHeader| if retry { h } else { FlitHeader { command: ReplayCommand::Explicit, seq: 0, ..h } };
            prop_assert_eq!(FlitHeader::parse_256(h.emit_256(retry).unwrap(), retry), Ok(carried(h)));
            let f2 = FlitHeader { flit_type: if ty == 1 { FlitType::Test } else { FlitType::Protocol }, ..h };
            prop_assert_eq!(FlitHeader::parse_68(f2.emit_68(retry).unwrap(), retry), Ok(carried(f2)));
        }
    }
}
