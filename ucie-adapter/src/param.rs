//! Parameter exchange (UCIe 2.0 §3.2): the capability words the adapters trade over the
//! sideband, and the truth tables that turn the finalized capabilities into a protocol and a
//! flit format.
//!
//! | message | data | who |
//! |---|---|---|
//! | {AdvCap.Adapter} / {FinCap.Adapter} | [`AdapterCaps`] (Table 7-10) | both advertise; the downstream port finalizes |
//! | {AdvCap.CXL} / {FinCap.CXL} | [`CxlCaps`]: the Flex Bus mode bits of CXL's modified TS1/TS2 | when the finalized adapter capabilities include 68B or CXL 256B flits |
//! | {MultiProtAdvCap.Adapter} / {MultiProtFinCap.Adapter} | [`MultiProtocolCaps`] | with Enhanced Multi-Protocol, for stack 1 |
//!
//! The protocol follows Table 3-8 ([`protocol`]); the flit format Table 3-9 for PCIe and CXL
//! with none of the optional flit-format capabilities, Table 3-10 otherwise ([`flit_format`]).

use crate::crc::Format;
use bitflags::bitflags;

bitflags! {
    /// {AdvCap.Adapter} / {FinCap.Adapter} data (UCIe 2.0 Table 7-10). Bits 63:32 are reserved:
    /// sent as zero, kept on receive.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct AdapterCaps: u64 {
        /// Raw format (Format 1).
        const RAW = 1 << 0;
        /// 68B flit mode (always set for PCIe and CXL).
        const FLIT_68B = 1 << 1;
        /// CXL 256B flit mode.
        const CXL_256B = 1 << 2;
        /// PCIe flit mode.
        const PCIE_FLIT = 1 << 3;
        /// The streaming protocol.
        const STREAMING = 1 << 4;
        /// Retry.
        const RETRY = 1 << 5;
        /// Multi_Protocol_Enable: two stacks of the same protocol.
        const MULTI_PROTOCOL = 1 << 6;
        /// Stack 0 enabled.
        const STACK0 = 1 << 7;
        /// Stack 1 enabled.
        const STACK1 = 1 << 8;
        /// CXL latency-optimized Format 5.
        const CXL_LATOPT_FMT5 = 1 << 9;
        /// CXL latency-optimized Format 6.
        const CXL_LATOPT_FMT6 = 1 << 10;
        /// A retimer is present.
        const RETIMER = 1 << 11;
        /// Retimer credits, 9 bits (each 256 bytes); see [`AdapterCaps::retimer_credits`].
        const RETIMER_CREDITS = 0x1FF << 12;
        /// Sent by the downstream port.
        const DP = 1 << 21;
        /// Sent by the upstream port.
        const UP = 1 << 22;
        /// Format 2 for streaming or Enhanced Multi-Protocol.
        const FORMAT_68B = 1 << 23;
        /// Format 3.
        const STD_END_HEADER = 1 << 24;
        /// Format 4.
        const STD_START_HEADER = 1 << 25;
        /// Format 5.
        const LATOPT_NO_OPT = 1 << 26;
        /// Format 6.
        const LATOPT_OPT = 1 << 27;
        /// Enhanced_Multi_Protocol_Enable: two stacks, possibly of different protocols.
        const ENHANCED_MULTI_PROTOCOL = 1 << 28;
        /// Stack 0 limited to 50% of the link.
        const STACK0_BW_LIMIT = 1 << 29;
        /// Stack 1 limited to 50% of the link.
        const STACK1_BW_LIMIT = 1 << 30;
        /// Management transport protocol.
        const MANAGEMENT = 1 << 31;
    }
}

impl AdapterCaps {
    /// The flit-format capability bits of Table 3-10 (23–27).
    pub const FORMATS: AdapterCaps = AdapterCaps::FORMAT_68B
        .union(AdapterCaps::STD_END_HEADER)
        .union(AdapterCaps::STD_START_HEADER)
        .union(AdapterCaps::LATOPT_NO_OPT)
        .union(AdapterCaps::LATOPT_OPT);

    /// Retimer credits (bits 20:12).
    pub const fn retimer_credits(self) -> u16 {
        ((self.bits() >> 12) & 0x1FF) as u16
    }

    /// The same capabilities with `credits` retimer credits (at most 511; more saturates).
    pub const fn with_retimer_credits(self, credits: u16) -> AdapterCaps {
        let c = if credits > 0x1FF { 0x1FF } else { credits as u64 };
        AdapterCaps::from_bits_retain(self.bits() & !AdapterCaps::RETIMER_CREDITS.bits() | c << 12)
    }
}

bitflags! {
    /// {AdvCap.CXL} / {FinCap.CXL} data bits 23:0: CXL's Flex Bus mode negotiation bits
    /// (Table 7-10). Other bits are kept as received.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct CxlCaps: u64 {
        /// PCIe capable / enabled.
        const PCIE = 1 << 0;
        /// CXL.io.
        const CXL_IO = 1 << 1;
        /// CXL.mem.
        const CXL_MEM = 1 << 2;
        /// CXL.cache.
        const CXL_CACHE = 1 << 3;
        /// CXL 68B flit and VH capable.
        const CXL_68B_VH = 1 << 4;
        /// Multi-logical device.
        const MLD = 1 << 8;
        /// CXL.io throttle.
        const CXL_IO_THROTTLE = 1 << 15;
    }
}

bitflags! {
    /// {MultiProtAdvCap.Adapter} / {MultiProtFinCap.Adapter} data (Table 7-10): stack 1's
    /// protocol under Enhanced Multi-Protocol (bit 3 is reserved in the finalized form).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct MultiProtocolCaps: u64 {
        /// 68B flit mode.
        const FLIT_68B = 1 << 0;
        /// CXL 256B flit mode.
        const CXL_256B = 1 << 1;
        /// PCIe flit mode.
        const PCIE_FLIT = 1 << 2;
        /// Streaming.
        const STREAMING = 1 << 3;
        /// Management transport.
        const MANAGEMENT = 1 << 4;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for AdapterCaps {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "AdapterCaps({=u64:#x})", self.bits())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for CxlCaps {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "CxlCaps({=u64:#x})", self.bits())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for MultiProtocolCaps {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "MultiProtocolCaps({=u64:#x})", self.bits())
    }
}

/// The protocol a link carries after parameter exchange (Table 3-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LinkProtocol {
    /// CXL with 68B flit rules.
    Cxl68,
    /// CXL 256B flit mode.
    Cxl256,
    /// PCIe non-flit mode (carried in CXL.io 68B flits).
    PcieNonFlit,
    /// PCIe flit mode.
    PcieFlit,
    /// The streaming protocol (no FinCap exchange).
    Streaming,
    /// Management transport only.
    ManagementOnly,
}

impl LinkProtocol {
    /// What the flit layout sees ([`crate::flit::Protocol`]).
    pub const fn layout_protocol(self) -> crate::flit::Protocol {
        use crate::flit::Protocol;
        match self {
            LinkProtocol::Cxl68 | LinkProtocol::Cxl256 => Protocol::Cxl,
            LinkProtocol::PcieNonFlit | LinkProtocol::PcieFlit => Protocol::Pcie,
            LinkProtocol::Streaming => Protocol::Streaming,
            LinkProtocol::ManagementOnly => Protocol::Management,
        }
    }
}

/// The protocol of Table 3-8 from {FinCap.Adapter} and, for PCIe and CXL, {FinCap.CXL}; with
/// whether management transport rides along. `None` for a combination the table does not list
/// (an invalid parameter exchange).
pub fn protocol(adapter: AdapterCaps, cxl: Option<CxlCaps>) -> Option<(LinkProtocol, bool)> {
    let mgmt = adapter.contains(AdapterCaps::MANAGEMENT);
    let Some(cxl) = cxl else {
        // No FinCap: streaming (with or without management transport), or management alone.
        return if adapter.contains(AdapterCaps::STREAMING) {
            Some((LinkProtocol::Streaming, mgmt))
        } else if mgmt {
            Some((LinkProtocol::ManagementOnly, true))
        } else {
            None
        };
    };
    let f68 = adapter.contains(AdapterCaps::FLIT_68B);
    let c256 = adapter.contains(AdapterCaps::CXL_256B);
    let pcie = adapter.contains(AdapterCaps::PCIE_FLIT);
    let (is_pcie, is_io) = (cxl.contains(CxlCaps::PCIE), cxl.contains(CxlCaps::CXL_IO));
    match (f68, c256, pcie, is_pcie, is_io) {
        (true, false, false, false, true) => Some((LinkProtocol::Cxl68, mgmt)),
        (true, true, true, false, true) => Some((LinkProtocol::Cxl256, mgmt)),
        (true, false, false, true, false) => Some((LinkProtocol::PcieNonFlit, mgmt)),
        (true, false, true, true, false) => Some((LinkProtocol::PcieFlit, mgmt)),
        _ => None,
    }
}

/// Table 3-9: the flit format for PCIe and CXL from {Raw, 68B, CXL 256B, PCIe flit, Format 5,
/// Format 6} of {FinCap.Adapter}.
pub fn flit_format_pcie_cxl(fin: AdapterCaps) -> Option<Format> {
    let b = |f| fin.contains(f);
    let (raw, f68, c256, pcie, f5, f6) = (
        b(AdapterCaps::RAW),
        b(AdapterCaps::FLIT_68B),
        b(AdapterCaps::CXL_256B),
        b(AdapterCaps::PCIE_FLIT),
        b(AdapterCaps::CXL_LATOPT_FMT5),
        b(AdapterCaps::CXL_LATOPT_FMT6),
    );
    Some(match () {
        () if raw => Format::Raw,
        () if c256 && f6 => Format::LatencyOptimized256Optional,
        () if c256 && f5 => Format::LatencyOptimized256,
        () if c256 => Format::Standard256StartHeader,
        () if pcie => Format::Standard256EndHeader,
        () if f68 => Format::Flit68,
        () => return None,
    })
}

/// Table 3-10: the flit format for streaming, management transport, or when one of the
/// optional flit-format capabilities is in use, from {Raw} and bits 23–27 of
/// {FinCap.Adapter} (or of both AdvCaps ANDed, for streaming). Priority: Format 6, 4, 3, 2,
/// then 5.
pub fn flit_format_optional(fin: AdapterCaps) -> Option<Format> {
    let b = |f| fin.contains(f);
    Some(match () {
        () if b(AdapterCaps::RAW) => Format::Raw,
        () if b(AdapterCaps::LATOPT_OPT) => Format::LatencyOptimized256Optional,
        () if b(AdapterCaps::STD_START_HEADER) => Format::Standard256StartHeader,
        () if b(AdapterCaps::STD_END_HEADER) => Format::Standard256EndHeader,
        () if b(AdapterCaps::FORMAT_68B) => Format::Flit68,
        () if b(AdapterCaps::LATOPT_NO_OPT) => Format::LatencyOptimized256,
        () => return None,
    })
}

/// The flit format for `protocol` from the finalized capabilities: Table 3-10 for streaming
/// and management transport alone, or when any flit-format bit (23–27) is set; Table 3-9
/// otherwise.
pub fn flit_format(protocol: LinkProtocol, fin: AdapterCaps) -> Option<Format> {
    let optional = matches!(protocol, LinkProtocol::Streaming | LinkProtocol::ManagementOnly)
        || fin.intersects(AdapterCaps::FORMATS);
    if optional { flit_format_optional(fin) } else { flit_format_pcie_cxl(fin) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_positions() {
        assert_eq!(AdapterCaps::RETRY.bits(), 1 << 5);
        assert_eq!(AdapterCaps::MANAGEMENT.bits(), 1 << 31);
        let c = AdapterCaps::RETIMER.with_retimer_credits(300);
        assert_eq!((c.retimer_credits(), c.bits()), (300, 1 << 11 | 300 << 12));
        assert_eq!(c.with_retimer_credits(9999).retimer_credits(), 511);
        assert_eq!(AdapterCaps::FORMATS.bits(), 0x1F << 23);
    }

    #[test]
    fn table_3_8() {
        use AdapterCaps as A;
        let io = Some(CxlCaps::CXL_IO | CxlCaps::CXL_MEM);
        let pcie = Some(CxlCaps::PCIE);
        assert_eq!(protocol(A::FLIT_68B, io), Some((LinkProtocol::Cxl68, false)));
        assert_eq!(protocol(A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT, io), Some((LinkProtocol::Cxl256, false)));
        let m = A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT | A::MANAGEMENT;
        assert_eq!(protocol(m, io), Some((LinkProtocol::Cxl256, true)));
        assert_eq!(protocol(A::FLIT_68B, pcie), Some((LinkProtocol::PcieNonFlit, false)));
        assert_eq!(protocol(A::FLIT_68B | A::PCIE_FLIT, pcie), Some((LinkProtocol::PcieFlit, false)));
        assert_eq!(protocol(A::STREAMING | A::MANAGEMENT, None), Some((LinkProtocol::Streaming, true)));
        assert_eq!(protocol(A::MANAGEMENT, None), Some((LinkProtocol::ManagementOnly, true)));
        // Not in the table: CXL 256B without PCIe flit mode, PCIe and CXL.io both, nothing.
        assert_eq!(protocol(A::FLIT_68B | A::CXL_256B, io), None);
        assert_eq!(protocol(A::FLIT_68B, Some(CxlCaps::PCIE | CxlCaps::CXL_IO)), None);
        assert_eq!(protocol(A::empty(), None), None);
    }

    #[test]
    fn tables_3_9_and_3_10() {
        use AdapterCaps as A;
        use Format::*;
        let t1 = |c| flit_format_pcie_cxl(c);
        assert_eq!(t1(A::RAW | A::CXL_256B), Some(Raw));
        assert_eq!(t1(A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT), Some(Standard256StartHeader));
        assert_eq!(t1(A::CXL_256B | A::CXL_LATOPT_FMT5 | A::CXL_LATOPT_FMT6), Some(LatencyOptimized256Optional));
        assert_eq!(t1(A::CXL_256B | A::CXL_LATOPT_FMT5), Some(LatencyOptimized256));
        assert_eq!(t1(A::FLIT_68B | A::PCIE_FLIT), Some(Standard256EndHeader));
        assert_eq!(t1(A::FLIT_68B), Some(Flit68));
        assert_eq!(t1(A::empty()), None);
        let t2 = |c| flit_format_optional(c);
        assert_eq!(t2(A::FORMATS), Some(LatencyOptimized256Optional));
        assert_eq!(t2(A::FORMAT_68B | A::STD_END_HEADER | A::STD_START_HEADER), Some(Standard256StartHeader));
        assert_eq!(t2(A::FORMAT_68B | A::STD_END_HEADER | A::LATOPT_NO_OPT), Some(Standard256EndHeader));
        assert_eq!(t2(A::FORMAT_68B | A::LATOPT_NO_OPT), Some(Flit68));
        assert_eq!(t2(A::LATOPT_NO_OPT), Some(LatencyOptimized256));
        assert_eq!(t2(A::STREAMING), None);
        // PCIe flit mode with the start-header capability goes by Table 3-10.
        let fin = A::FLIT_68B | A::PCIE_FLIT | A::STD_END_HEADER | A::STD_START_HEADER;
        assert_eq!(flit_format(LinkProtocol::PcieFlit, fin), Some(Standard256StartHeader));
        assert_eq!(flit_format(LinkProtocol::PcieFlit, A::FLIT_68B | A::PCIE_FLIT), Some(Standard256EndHeader));
    }
}
