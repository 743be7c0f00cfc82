//! The 256B flit's 2-byte flit header (CXL 3.x §6.2.3.1.1, Table 6-5; the PCIe 6.x DLP bytes
//! 0–1 in CXL's use) and its flit types (Table 6-6).
//!
//! | byte 0 bits | field |
//! |---|---|
//! | 7:6 | Flit Type ([`FlitType`]) |
//! | 5 | Prior Flit Type: 1 = the previous flit was a payload flit, 0 = NOP or IDLE |
//! | 4 | Type of DLLP payload |
//! | 3:2 | Replay Command ([`ReplayCommand`]) |
//! | 1:0 | Flit Sequence Number\[9:8\] |
//!
//! Byte 1 is Flit Sequence Number\[7:0\].

/// Flit Type (Table 6-6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FlitType {
    /// Physical-layer IDLE or NOP, or a CXL.io NOP (not stored for retry).
    IdleNop,
    /// CXL.io payload.
    Io,
    /// CXL.cachemem payload, or an empty flit (stored for retry only).
    CacheMem,
    /// ARB/MUX link-management packet.
    Almp,
}

/// Replay Command (PCIe 6.x flit mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ReplayCommand {
    /// The sequence number field is the flit's explicit sequence number.
    ExplicitSequence,
    /// It acknowledges flits up to that number.
    Ack,
    /// Standard Nak: replay everything unacknowledged.
    Nak,
    /// Selective Nak: replay the flit after that number.
    SelectiveNak,
}

/// A 256B flit's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FlitHeader {
    /// Flit Type.
    pub flit_type: FlitType,
    /// The previous flit was a payload flit.
    pub prior_payload: bool,
    /// Type of DLLP payload.
    pub dllp_type: bool,
    /// Replay Command.
    pub replay: ReplayCommand,
    /// Flit Sequence Number (10 bits; higher bits are dropped on emit).
    pub seq: u16,
}

const TYPES: [FlitType; 4] = [FlitType::IdleNop, FlitType::Io, FlitType::CacheMem, FlitType::Almp];
const COMMANDS: [ReplayCommand; 4] =
    [ReplayCommand::ExplicitSequence, ReplayCommand::Ack, ReplayCommand::Nak, ReplayCommand::SelectiveNak];

impl FlitHeader {
    /// Flit bytes 0–1.
    pub fn emit(&self) -> [u8; 2] {
        let b0 = (self.flit_type as u8) << 6
            | u8::from(self.prior_payload) << 5
            | u8::from(self.dllp_type) << 4
            | (self.replay as u8) << 2
            | (self.seq >> 8 & 0b11) as u8;
        [b0, self.seq as u8]
    }

    /// Reads flit bytes 0–1 (every value decodes).
    pub fn parse(bytes: [u8; 2]) -> FlitHeader {
        let [b0, b1] = bytes;
        FlitHeader {
            flit_type: TYPES.get(usize::from(b0 >> 6)).copied().unwrap_or(FlitType::IdleNop),
            prior_payload: b0 & 1 << 5 != 0,
            dllp_type: b0 & 1 << 4 != 0,
            replay: COMMANDS.get(usize::from(b0 >> 2 & 0b11)).copied().unwrap_or(ReplayCommand::ExplicitSequence),
            seq: u16::from(b0 & 0b11) << 8 | u16::from(b1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_by_hand() {
        let h = FlitHeader {
            flit_type: FlitType::CacheMem,
            prior_payload: true,
            dllp_type: false,
            replay: ReplayCommand::Ack,
            seq: 0x2A5,
        };
        // Flit Type 10b, Prior 1, DLLP 0, Replay Command 01b, FSN[9:8] 10b.
        assert_eq!(h.emit(), [0b1010_0110, 0xA5]);
        assert_eq!(FlitHeader::parse(h.emit()), h);
        for b0 in 0..=255u8 {
            let h = FlitHeader::parse([b0, 0x5A]);
            assert_eq!(h.emit(), [b0, 0x5A]);
        }
    }
}
