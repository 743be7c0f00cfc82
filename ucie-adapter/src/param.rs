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
//!
//! What each link needs advertised (both sides; with the downstream/upstream roles except
//! for streaming and management transport alone, which are [`Role::Symmetric`]):
//!
//! | link | [`AdapterCaps`] | [`CxlCaps`] | format |
//! |---|---|---|---|
//! | CXL, 68B flits | `FLIT_68B` | `CXL_IO` (+ `CXL_MEM`, `CXL_CACHE`) | 2 |
//! | CXL, 256B flits | `FLIT_68B`, `CXL_256B`, `PCIE_FLIT` (+ `CXL_LATOPT_FMT5`/`FMT6`) | `CXL_IO` (+ …) | 4 (5, 6) |
//! | PCIe flit mode | `FLIT_68B`, `PCIE_FLIT` | `PCIE` | 3 |
//! | PCIe non-flit | `FLIT_68B` | `PCIE` | 2 |
//! | streaming | `STREAMING` and a format bit (`FORMAT_68B`, `STD_END_HEADER`, `STD_START_HEADER`, `LATOPT_NO_OPT`, `LATOPT_OPT`) | — | Table 3-10 |
//! | any of these | `RETRY` for retry, `STACK0`; two stacks: `STACK1` and `MULTI_PROTOCOL` | | |
//!
//! A `MANAGEMENT` bit adds management transport; `RAW` (both sides) selects Format 1.

use crate::crc::Format;
use crate::sideband::{CapKind, Message, STALL};
use bitflags::bitflags;
use linklayer::{Duration, Instant};

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
/// and management transport alone, with Enhanced Multi-Protocol, or when any flit-format bit
/// (23–27) is set; Table 3-9 otherwise.
pub fn flit_format(protocol: LinkProtocol, fin: AdapterCaps) -> Option<Format> {
    let optional = matches!(protocol, LinkProtocol::Streaming | LinkProtocol::ManagementOnly)
        || fin.intersects(AdapterCaps::FORMATS.union(AdapterCaps::ENHANCED_MULTI_PROTOCOL));
    if optional { flit_format_optional(fin) } else { flit_format_pcie_cxl(fin) }
}

/// Which side of parameter exchange this adapter is (§3.2.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Role {
    /// PCIe/CXL downstream port: advertises first and finalizes.
    Downstream,
    /// PCIe/CXL upstream port: waits for the downstream port's advertisement, answers with its
    /// own, and takes the finalized capabilities.
    Upstream,
    /// Streaming or management transport alone: no roles and no FinCap; both advertise and the
    /// result is what both advertised.
    Symmetric,
}

/// What the link will run, once parameter exchange is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Negotiated {
    /// The finalized adapter capabilities (for streaming: what both advertised).
    pub adapter: AdapterCaps,
    /// The finalized CXL capabilities (PCIe and CXL only).
    pub cxl: Option<CxlCaps>,
    /// The protocol (Table 3-8).
    pub protocol: LinkProtocol,
    /// Whether management transport rides along.
    pub management: bool,
    /// The flit format (Table 3-9 or 3-10).
    pub format: Format,
    /// Whether Retry is on.
    pub retry: bool,
    /// Stack 0 and stack 1 enabled.
    pub stacks: [bool; 2],
    /// The peer's retimer credits (from its {AdvCap.Adapter}).
    pub retimer_credits: u16,
    /// With Enhanced Multi-Protocol: stack 1's protocol (from {MultiProtFinCap.Adapter} and
    /// its {FinCap.CXL}); `None` when stack 1 carries `protocol` or is off.
    pub protocol1: Option<LinkProtocol>,
    /// With Enhanced Multi-Protocol: stack 1's finalized CXL capabilities.
    pub cxl1: Option<CxlCaps>,
    /// Stack 0 and stack 1 Maximum Bandwidth_Limit as the peer advertised them: what it
    /// receives of that stack is limited to 50%.
    pub peer_limits: [bool; 2],
}

impl Negotiated {
    /// The protocol `stack` carries.
    pub fn protocol_of(&self, stack: u8) -> LinkProtocol {
        match (stack, self.protocol1) {
            (1, Some(p)) => p,
            _ => self.protocol,
        }
    }

    /// Whether the peer may not receive two flits of `stack` back to back: both stacks under
    /// Multi_Protocol_Enable, and under Enhanced Multi-Protocol a stack the peer advertised
    /// with a 50% Maximum Bandwidth_Limit (§3.1).
    pub fn alternates(&self, stack: u8) -> bool {
        let limited = if stack == 0 { self.peer_limits[0] } else { self.peer_limits[1] };
        self.adapter.contains(AdapterCaps::MULTI_PROTOCOL)
            || (self.adapter.contains(AdapterCaps::ENHANCED_MULTI_PROTOCOL) && limited)
    }
}

/// Why parameter exchange failed; either is an Uncorrectable Internal Error that takes RDI to
/// LinkError (Table 9-33: Adapter Timeout 0001b, Invalid Parameter Exchange).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ExchangeError {
    /// No answer within 8 ms (no stall received meanwhile).
    Timeout,
    /// The capabilities do not make a link (Invalid Parameter Exchange).
    Invalid(Invalid),
}

/// Why a parameter exchange is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Invalid {
    /// The finalized capabilities match no row of Table 3-8 (see the module doc's table of
    /// what each protocol needs advertised).
    NoProtocol,
    /// No flit format both sides support (Tables 3-9, 3-10).
    NoFormat,
    /// No stack both sides enable.
    NoStack,
    /// A FinCap with a capability this side did not advertise.
    NotAdvertised,
    /// A capability message out of order (e.g. a FinCap to the downstream port).
    OutOfOrder,
}

/// The parameter-exchange machine's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// `Idle` is tag 0 (without the `repr` it could take a spare value of a field of `Done` or
// `Failed`), so an empty machine is all-zero bytes.
#[repr(u8)]
pub enum ExchangeState {
    /// Not started (RDI not yet Active).
    Idle,
    /// Waiting for the peer's {AdvCap.Adapter}.
    AwaitAdvCap,
    /// Upstream port: waiting for {FinCap.Adapter}.
    AwaitFinCap,
    /// Waiting for the peer's {AdvCap.CXL}.
    AwaitCxlAdvCap,
    /// Upstream port: waiting for {FinCap.CXL}.
    AwaitCxlFinCap,
    /// Enhanced Multi-Protocol: waiting for the peer's {MultiProtAdvCap.Adapter}.
    AwaitMultiAdvCap,
    /// Enhanced Multi-Protocol, upstream port: waiting for {MultiProtFinCap.Adapter}.
    AwaitMultiFinCap,
    /// Done.
    Done(Negotiated),
    /// Failed.
    Failed(ExchangeError),
}

/// This adapter's side of parameter exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExchangeConfig {
    /// Downstream, upstream or symmetric.
    pub role: Role,
    /// {AdvCap.Adapter} (the DP/UP bit is set from `role`).
    pub adapter: AdapterCaps,
    /// {AdvCap.CXL} (PCIe and CXL only).
    pub cxl: CxlCaps,
    /// With Enhanced Multi-Protocol: {MultiProtAdvCap.Adapter}, stack 1's protocols.
    pub multi: MultiProtocolCaps,
    /// With Enhanced Multi-Protocol: stack 1's {AdvCap.CXL}.
    pub cxl1: CxlCaps,
    /// The timeout (8 ms; the spec allows up to +50%).
    pub timeout: Duration,
}

impl ExchangeConfig {
    /// Downstream, nothing advertised, no timeout: the configuration of a
    /// [`ParamExchange::EMPTY`].
    pub const ZERO: ExchangeConfig = ExchangeConfig {
        role: Role::Downstream,
        adapter: AdapterCaps::empty(),
        cxl: CxlCaps::empty(),
        multi: MultiProtocolCaps::empty(),
        cxl1: CxlCaps::empty(),
        timeout: Duration::ZERO,
    };

    /// A configuration with the spec's 8 ms timeout.
    pub const fn new(role: Role, adapter: AdapterCaps, cxl: CxlCaps) -> ExchangeConfig {
        ExchangeConfig {
            role,
            adapter,
            cxl,
            multi: MultiProtocolCaps::empty(),
            cxl1: CxlCaps::empty(),
            timeout: Duration::from_nanos(8_000_000),
        }
    }

    /// The same with stack 1's advertisement for Enhanced Multi-Protocol (the adapter
    /// capabilities also need `ENHANCED_MULTI_PROTOCOL`, `STACK0` and `STACK1`).
    pub const fn with_stack1(mut self, multi: MultiProtocolCaps, cxl1: CxlCaps) -> ExchangeConfig {
        self.multi = multi;
        self.cxl1 = cxl1;
        self
    }

    fn advertised(&self) -> AdapterCaps {
        match self.role {
            Role::Downstream => self.adapter.union(AdapterCaps::DP).difference(AdapterCaps::UP),
            Role::Upstream => self.adapter.union(AdapterCaps::UP).difference(AdapterCaps::DP),
            Role::Symmetric => self.adapter.difference(AdapterCaps::DP.union(AdapterCaps::UP)),
        }
    }
}

/// The downstream port's {FinCap.Adapter} from both advertisements (§3.2.1.2): a protocol or
/// format bit, Raw, Format 5/6 when both advertised it; Retry when both did and Raw is not
/// negotiated; Enhanced Multi-Protocol, else Multi-Protocol, enabling both stacks; otherwise
/// the stacks in common, stack 0 when both are.
///
/// *Project-defined* (the spec gives no FinCap rule for these): the flit-format bits 23–27 and
/// Management Transport are set when both advertised them (Table 3-10 reads them as that AND),
/// a stack's Bandwidth_Limit when either side asked for it, and the DP bit is set; Retimer and
/// its credits stay 0 (credits are taken from the AdvCap).
pub fn finalize(dp: AdapterCaps, up: AdapterCaps) -> AdapterCaps {
    use AdapterCaps as A;
    let both = dp.intersection(up);
    let mut fin = both.intersection(
        A::FLIT_68B
            | A::CXL_256B
            | A::PCIE_FLIT
            | A::RAW
            | A::CXL_LATOPT_FMT5
            | A::CXL_LATOPT_FMT6
            | A::FORMATS
            | A::MANAGEMENT,
    );
    if both.contains(A::RETRY) && !fin.contains(A::RAW) {
        fin |= A::RETRY;
    }
    fin |= stacks(both);
    fin |= dp.union(up).intersection(A::STACK0_BW_LIMIT | A::STACK1_BW_LIMIT);
    fin | A::DP
}

/// Stack enables from capabilities both sides advertised.
fn stacks(both: AdapterCaps) -> AdapterCaps {
    use AdapterCaps as A;
    if both.contains(A::ENHANCED_MULTI_PROTOCOL) {
        A::ENHANCED_MULTI_PROTOCOL | A::STACK0 | A::STACK1
    } else if both.contains(A::MULTI_PROTOCOL) {
        A::MULTI_PROTOCOL | A::STACK0 | A::STACK1
    } else if both.contains(A::STACK0) {
        A::STACK0
    } else {
        both.intersection(A::STACK1)
    }
}

/// The downstream port's {FinCap.CXL}, given the finalized adapter capabilities `fin`: only
/// one of PCIe and CXL.io is set (Table 3-8): CXL with CXL 256B flit mode (note d), PCIe with
/// PCIe flit mode without it (note f), and with 68B flits alone CXL when both sides can run
/// it, else PCIe. The CXL.mem, CXL.cache and other bits both advertised carry over.
/// *Project-defined:* CXL is preferred when both sides can run either over 68B flits.
pub fn finalize_cxl(dp: CxlCaps, up: CxlCaps, fin: AdapterCaps) -> CxlCaps {
    let both = dp.intersection(up);
    let cxl = if fin.contains(AdapterCaps::CXL_256B) {
        true
    } else if fin.contains(AdapterCaps::PCIE_FLIT) {
        false
    } else {
        both.contains(CxlCaps::CXL_IO)
    };
    if cxl { both.difference(CxlCaps::PCIE) } else { both.intersection(CxlCaps::PCIE) }
}

/// Parameter exchange as a sans-I/O machine: [`ParamExchange::start`] when RDI is Active,
/// [`ParamExchange::handle_message`] for each capability message received, then
/// [`ParamExchange::poll_message`] for those to send, and [`ParamExchange::handle_timeout`]
/// at [`ParamExchange::poll_timeout`].
///
/// Size on a 64-bit host: 304 bytes. Built in place: [`ParamExchange::EMPTY`] and
/// [`ParamExchange::init`].
#[derive(Clone, Debug)]
pub struct ParamExchange {
    config: ExchangeConfig,
    state: ExchangeState,
    deadline: Option<Instant>,
    out: heapless::Deque<Message, 4>,
    peer: AdapterCaps,
    fin: AdapterCaps,
    /// Which stack's CXL handshake runs (MsgInfo 0000h or 0001h).
    stack: u8,
    cxl0: Option<CxlCaps>,
    peer_multi: MultiProtocolCaps,
    multi_fin: MultiProtocolCaps,
}

impl ParamExchange {
    /// A machine that has not started, with [`ExchangeConfig::ZERO`] and every byte zero, so a
    /// `static` holding it lands in `.bss`; [`ParamExchange::init`] configures it in place.
    pub const EMPTY: ParamExchange = ParamExchange {
        config: ExchangeConfig::ZERO,
        state: ExchangeState::Idle,
        deadline: None,
        out: heapless::Deque::new(),
        peer: AdapterCaps::empty(),
        fin: AdapterCaps::empty(),
        stack: 0,
        cxl0: None,
        peer_multi: MultiProtocolCaps::empty(),
        multi_fin: MultiProtocolCaps::empty(),
    };

    /// A machine that has not started. (Built on the stack; see [`ParamExchange::init`] for
    /// building one in place.)
    pub fn new(config: ExchangeConfig) -> ParamExchange {
        let mut exchange = Self::EMPTY;
        exchange.init(config);
        exchange
    }

    /// Makes this machine what [`ParamExchange::new`]`(config)` returns, in place: not
    /// started, nothing learned, no message.
    pub fn init(&mut self, config: ExchangeConfig) {
        self.config = config;
        self.state = ExchangeState::Idle;
        self.deadline = None;
        self.out.clear();
        (self.peer, self.fin) = (AdapterCaps::empty(), AdapterCaps::empty());
        self.stack = 0;
        self.cxl0 = None;
        (self.peer_multi, self.multi_fin) = (MultiProtocolCaps::empty(), MultiProtocolCaps::empty());
    }

    /// The configuration.
    pub fn config(&self) -> &ExchangeConfig {
        &self.config
    }

    /// Progress.
    pub fn state(&self) -> ExchangeState {
        self.state
    }

    /// The result, once done.
    pub fn negotiated(&self) -> Option<Negotiated> {
        match self.state {
            ExchangeState::Done(n) => Some(n),
            _ => None,
        }
    }

    fn cap(kind: CapKind, finalized: bool, info: u16, caps: u64) -> Message {
        Message::Capability { kind, finalized, info, caps }
    }

    fn send(&mut self, m: Message) {
        // At most three messages are ever queued between polls.
        let _ = self.out.push_back(m);
    }

    /// RDI is Active: begins (again), with the timeout running. The downstream port and a
    /// symmetric side advertise now; the upstream port waits for the downstream port.
    pub fn start(&mut self, now: Instant) {
        self.out.clear();
        self.deadline = Some(now.saturating_add(self.config.timeout));
        self.state = ExchangeState::AwaitAdvCap;
        self.stack = 0;
        self.cxl0 = None;
        self.peer_multi = MultiProtocolCaps::empty();
        self.multi_fin = MultiProtocolCaps::empty();
        if self.config.role != Role::Upstream {
            self.send(Self::cap(CapKind::Adapter, false, 0, self.config.advertised().bits()));
        }
    }

    /// RDI left Active: the exchange stops (it is redone from the start after Reset); a
    /// finished or failed exchange keeps its result.
    pub fn stop(&mut self) {
        self.out.clear();
        self.deadline = None;
        if !matches!(self.state, ExchangeState::Done(_) | ExchangeState::Failed(_)) {
            self.state = ExchangeState::Idle;
        }
    }

    /// The next capability message to send to the peer's adapter.
    pub fn poll_message(&mut self) -> Option<Message> {
        self.out.pop_front()
    }

    /// When the exchange times out.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline
    }

    /// RDI was away from Active for `by` (a Retrain) and is back at `now`: the timeout, which
    /// counts only while RDI is Active (§3.2.1.2), moves on by as much, and one restarted while
    /// RDI was away (a stall) has its whole time from `now`.
    pub fn postpone(&mut self, now: Instant, by: Duration) {
        let full = now.saturating_add(self.config.timeout);
        self.deadline = self.deadline.map(|d| d.saturating_add(by).min(full));
    }

    /// Fails the exchange if its timeout has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.deadline.is_some_and(|d| now >= d) {
            self.fail(ExchangeError::Timeout);
        }
    }

    fn fail(&mut self, e: ExchangeError) {
        self.deadline = None;
        self.state = ExchangeState::Failed(e);
    }

    /// Stack 0's exchange is done: with Enhanced Multi-Protocol stack 1's follows (roles
    /// only), else the link is finalized.
    fn finish_stack0(&mut self, cxl: Option<CxlCaps>) {
        self.cxl0 = cxl;
        let enhanced = self.fin.contains(AdapterCaps::ENHANCED_MULTI_PROTOCOL);
        if !enhanced {
            return self.finish(None);
        }
        // The downstream port advertises first; without roles both do.
        if self.config.role != Role::Upstream {
            self.send(Self::cap(CapKind::MultiProtocol, false, 0, self.config.multi.bits()));
        }
        self.state = ExchangeState::AwaitMultiAdvCap;
    }

    /// After {MultiProtFinCap.Adapter}: stack 1's CXL handshake (MsgInfo 0001h) when it runs
    /// 68B or CXL 256B flits, else done.
    fn after_multi_fin(&mut self) {
        if self.multi_fin.intersects(MultiProtocolCaps::FLIT_68B | MultiProtocolCaps::CXL_256B) {
            self.stack = 1;
            if self.config.role == Role::Downstream {
                self.send(Self::cap(CapKind::Cxl, false, 1, self.config.cxl1.bits()));
            }
            self.state = ExchangeState::AwaitCxlAdvCap;
        } else {
            self.finish(None);
        }
    }

    /// Stack 1's protocol under Enhanced Multi-Protocol: Table 3-8 on the
    /// {MultiProtFinCap.Adapter} bits, or streaming when both advertised it and nothing else.
    fn stack1_protocol(&self, cxl1: Option<CxlCaps>) -> Option<LinkProtocol> {
        use MultiProtocolCaps as M;
        let m = self.multi_fin;
        let mut caps = AdapterCaps::empty();
        for (bit, cap) in [
            (M::FLIT_68B, AdapterCaps::FLIT_68B),
            (M::CXL_256B, AdapterCaps::CXL_256B),
            (M::PCIE_FLIT, AdapterCaps::PCIE_FLIT),
            (M::MANAGEMENT, AdapterCaps::MANAGEMENT),
        ] {
            if m.contains(bit) {
                caps |= cap;
            }
        }
        if cxl1.is_none() && m.contains(M::STREAMING) {
            caps |= AdapterCaps::STREAMING;
        }
        protocol(caps, cxl1).map(|(p, _)| p)
    }

    fn finish(&mut self, cxl1: Option<CxlCaps>) {
        let fin = self.fin;
        let Some((protocol, management)) = protocol(fin, self.cxl0) else {
            return self.fail(ExchangeError::Invalid(Invalid::NoProtocol));
        };
        let protocol1 = if fin.contains(AdapterCaps::ENHANCED_MULTI_PROTOCOL) {
            match self.stack1_protocol(cxl1) {
                Some(p) => Some(p),
                None => return self.fail(ExchangeError::Invalid(Invalid::NoProtocol)),
            }
        } else {
            None
        };
        let Some(format) = flit_format(protocol, fin) else {
            return self.fail(ExchangeError::Invalid(Invalid::NoFormat));
        };
        let stacks = [fin.contains(AdapterCaps::STACK0), fin.contains(AdapterCaps::STACK1)];
        if stacks == [false, false] {
            return self.fail(ExchangeError::Invalid(Invalid::NoStack));
        }
        let retry = fin.contains(AdapterCaps::RETRY);
        let retimer_credits = self.peer.retimer_credits();
        self.deadline = None;
        self.state = ExchangeState::Done(Negotiated {
            adapter: fin,
            cxl: self.cxl0,
            protocol,
            management,
            format,
            retry,
            stacks,
            retimer_credits,
            protocol1,
            cxl1,
            peer_limits: [
                self.peer.contains(AdapterCaps::STACK0_BW_LIMIT),
                self.peer.contains(AdapterCaps::STACK1_BW_LIMIT),
            ],
        });
    }

    /// A message from the peer's adapter. Capability messages advance the exchange; a stall
    /// (MsgInfo FFFFh) restarts the timeout; anything else is not for this machine and is
    /// ignored.
    pub fn handle_message(&mut self, now: Instant, msg: &Message) {
        let Message::Capability { kind, finalized, info, caps } = *msg else { return };
        if matches!(self.state, ExchangeState::Idle | ExchangeState::Done(_) | ExchangeState::Failed(_)) {
            return;
        }
        if info == STALL {
            self.deadline = Some(now.saturating_add(self.config.timeout));
            return;
        }
        let role = self.config.role;
        let ours = self.config.advertised();
        if kind == CapKind::Cxl && info != u16::from(self.stack) {
            // Another stack's CXL handshake (MsgInfo 0000h stack 0, 0001h stack 1): not this
            // one's; ignored.
            return;
        }
        match (self.state, kind, finalized, role) {
            (ExchangeState::AwaitAdvCap, CapKind::Adapter, false, Role::Symmetric) => {
                self.peer = AdapterCaps::from_bits_retain(caps);
                let both = ours.intersection(self.peer);
                let mut fin = both.difference(AdapterCaps::RETRY | AdapterCaps::STACK0 | AdapterCaps::STACK1);
                if both.contains(AdapterCaps::RETRY) && !both.contains(AdapterCaps::RAW) {
                    fin |= AdapterCaps::RETRY;
                }
                self.fin = fin | stacks(both);
                self.finish_stack0(None);
            }
            (ExchangeState::AwaitAdvCap, CapKind::Adapter, false, Role::Downstream) => {
                self.peer = AdapterCaps::from_bits_retain(caps);
                self.fin = finalize(ours, self.peer);
                self.send(Self::cap(CapKind::Adapter, true, 0, self.fin.bits()));
                self.after_fin();
            }
            (ExchangeState::AwaitAdvCap, CapKind::Adapter, false, Role::Upstream) => {
                self.peer = AdapterCaps::from_bits_retain(caps);
                self.send(Self::cap(CapKind::Adapter, false, 0, ours.bits()));
                self.state = ExchangeState::AwaitFinCap;
            }
            (ExchangeState::AwaitFinCap, CapKind::Adapter, true, Role::Upstream) => {
                let fin = AdapterCaps::from_bits_retain(caps);
                // A finalized capability this side never advertised is an invalid exchange.
                let negotiable = AdapterCaps::FLIT_68B
                    | AdapterCaps::CXL_256B
                    | AdapterCaps::PCIE_FLIT
                    | AdapterCaps::RAW
                    | AdapterCaps::RETRY
                    | AdapterCaps::CXL_LATOPT_FMT5
                    | AdapterCaps::CXL_LATOPT_FMT6;
                if !ours.contains(fin.intersection(negotiable)) {
                    return self.fail(ExchangeError::Invalid(Invalid::NotAdvertised));
                }
                self.fin = fin;
                self.after_fin();
            }
            (ExchangeState::AwaitCxlAdvCap, CapKind::Cxl, false, Role::Downstream) => {
                let (ours_cxl, fin_adapter) = self.cxl_side();
                let fin = finalize_cxl(ours_cxl, CxlCaps::from_bits_retain(caps), fin_adapter);
                self.send(Self::cap(CapKind::Cxl, true, u16::from(self.stack), fin.bits()));
                self.cxl_done(fin);
            }
            (ExchangeState::AwaitCxlAdvCap, CapKind::Cxl, false, Role::Upstream) => {
                let (ours_cxl, _) = self.cxl_side();
                self.send(Self::cap(CapKind::Cxl, false, u16::from(self.stack), ours_cxl.bits()));
                self.state = ExchangeState::AwaitCxlFinCap;
            }
            (ExchangeState::AwaitCxlFinCap, CapKind::Cxl, true, Role::Upstream) => {
                let fin = CxlCaps::from_bits_retain(caps);
                let (ours_cxl, _) = self.cxl_side();
                if !ours_cxl.contains(fin.intersection(CxlCaps::PCIE | CxlCaps::CXL_IO)) {
                    return self.fail(ExchangeError::Invalid(Invalid::NotAdvertised));
                }
                self.cxl_done(fin);
            }
            (ExchangeState::AwaitMultiAdvCap, CapKind::MultiProtocol, false, _) => {
                self.peer_multi = MultiProtocolCaps::from_bits_retain(caps);
                if role == Role::Upstream {
                    self.send(Self::cap(CapKind::MultiProtocol, false, 0, self.config.multi.bits()));
                }
                let both = self.config.multi.intersection(self.peer_multi);
                let pcie_cxl = MultiProtocolCaps::FLIT_68B | MultiProtocolCaps::CXL_256B | MultiProtocolCaps::PCIE_FLIT;
                if role == Role::Symmetric || !both.intersects(pcie_cxl) {
                    // Stack 1 streaming or management transport: no FinCap (Table 7-10 sends
                    // it only for PCIe or CXL); both take what both advertised.
                    self.multi_fin = both;
                    self.finish(None);
                } else if role == Role::Downstream {
                    // Each protocol both advertised; streaming is reserved in the finalized form.
                    self.multi_fin = both.difference(MultiProtocolCaps::STREAMING);
                    self.send(Self::cap(CapKind::MultiProtocol, true, 0, self.multi_fin.bits()));
                    self.after_multi_fin();
                } else {
                    self.state = ExchangeState::AwaitMultiFinCap;
                }
            }
            (ExchangeState::AwaitMultiFinCap, CapKind::MultiProtocol, true, Role::Upstream) => {
                let fin = MultiProtocolCaps::from_bits_retain(caps);
                if !self.config.multi.contains(fin) {
                    return self.fail(ExchangeError::Invalid(Invalid::NotAdvertised));
                }
                self.multi_fin = fin;
                self.after_multi_fin();
            }
            // A repeated advertisement (the peer restarted its side) is answered again.
            (_, CapKind::Adapter, false, Role::Upstream) => {
                self.send(Self::cap(CapKind::Adapter, false, 0, ours.bits()));
            }
            _ => self.fail(ExchangeError::Invalid(Invalid::OutOfOrder)),
        }
    }

    /// After {FinCap.Adapter}: the CXL handshake when the finalized capabilities include 68B
    /// or CXL 256B flit mode (so for every PCIe or CXL link), else done.
    fn after_fin(&mut self) {
        if self.fin.intersects(AdapterCaps::FLIT_68B | AdapterCaps::CXL_256B) {
            self.stack = 0;
            if self.config.role == Role::Downstream {
                self.send(Self::cap(CapKind::Cxl, false, 0, self.config.cxl.bits()));
            }
            self.state = ExchangeState::AwaitCxlAdvCap;
        } else {
            self.finish_stack0(None);
        }
    }

    /// This side's {AdvCap.CXL} and the finalized adapter bits for the stack whose CXL
    /// handshake runs.
    fn cxl_side(&self) -> (CxlCaps, AdapterCaps) {
        if self.stack == 0 {
            return (self.config.cxl, self.fin);
        }
        let m = self.multi_fin;
        let mut fin = AdapterCaps::empty();
        if m.contains(MultiProtocolCaps::FLIT_68B) {
            fin |= AdapterCaps::FLIT_68B;
        }
        if m.contains(MultiProtocolCaps::CXL_256B) {
            fin |= AdapterCaps::CXL_256B;
        }
        if m.contains(MultiProtocolCaps::PCIE_FLIT) {
            fin |= AdapterCaps::PCIE_FLIT;
        }
        (self.config.cxl1, fin)
    }

    fn cxl_done(&mut self, fin: CxlCaps) {
        if self.stack == 0 { self.finish_stack0(Some(fin)) } else { self.finish(Some(fin)) }
    }
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

    /// Runs two machines against each other until both are quiet; returns the messages in
    /// the order they crossed.
    fn shuttle(a: &mut ParamExchange, b: &mut ParamExchange) -> std::vec::Vec<(char, Message)> {
        let now = Instant::ZERO;
        a.start(now);
        b.start(now);
        let mut log = std::vec::Vec::new();
        loop {
            let mut quiet = true;
            while let Some(m) = a.poll_message() {
                log.push(('a', m));
                b.handle_message(now, &m);
                quiet = false;
            }
            while let Some(m) = b.poll_message() {
                log.push(('b', m));
                a.handle_message(now, &m);
                quiet = false;
            }
            if quiet {
                return log;
            }
        }
    }

    const CXL_DEV: CxlCaps = CxlCaps::CXL_IO.union(CxlCaps::CXL_MEM).union(CxlCaps::PCIE);

    #[test]
    fn cxl_256b_downstream_upstream() {
        use AdapterCaps as A;
        let caps = A::FLIT_68B | A::CXL_256B | A::PCIE_FLIT | A::RETRY | A::STACK0 | A::CXL_LATOPT_FMT6;
        let mut dp = ParamExchange::new(ExchangeConfig::new(Role::Downstream, caps | A::CXL_LATOPT_FMT5, CXL_DEV));
        let up_caps = (caps | A::STACK1).with_retimer_credits(0);
        let mut up = ParamExchange::new(ExchangeConfig::new(Role::Upstream, up_caps, CXL_DEV));
        let log = shuttle(&mut dp, &mut up);
        // Figure 3-4's order.
        let order: std::vec::Vec<(char, CapKind, bool)> = log
            .iter()
            .map(|(w, m)| match m {
                Message::Capability { kind, finalized, .. } => (*w, *kind, *finalized),
                _ => panic!("{m:?}"),
            })
            .collect();
        assert_eq!(
            order,
            [
                ('a', CapKind::Adapter, false),
                ('b', CapKind::Adapter, false),
                ('a', CapKind::Adapter, true),
                ('a', CapKind::Cxl, false),
                ('b', CapKind::Cxl, false),
                ('a', CapKind::Cxl, true),
            ]
        );
        let n = dp.negotiated().unwrap();
        assert_eq!(up.negotiated(), Some(n));
        assert_eq!(
            (n.protocol, n.format, n.retry, n.stacks),
            (LinkProtocol::Cxl256, Format::LatencyOptimized256Optional, true, [true, false])
        );
        assert_eq!(n.cxl, Some(CxlCaps::CXL_IO | CxlCaps::CXL_MEM));
        // The advertisements carry the role bits.
        assert!(matches!(log[0].1, Message::Capability { caps, .. } if caps & A::DP.bits() != 0));
        assert!(matches!(log[1].1, Message::Capability { caps, .. } if caps & A::UP.bits() != 0));
    }

    #[test]
    fn pcie_flit_and_non_flit() {
        use AdapterCaps as A;
        let pcie = CxlCaps::PCIE;
        let mut dp = ParamExchange::new(ExchangeConfig::new(
            Role::Downstream,
            A::FLIT_68B | A::PCIE_FLIT | A::RETRY | A::STACK0,
            pcie,
        ));
        let mut up =
            ParamExchange::new(ExchangeConfig::new(Role::Upstream, A::FLIT_68B | A::PCIE_FLIT | A::STACK0, CXL_DEV));
        shuttle(&mut dp, &mut up);
        let n = up.negotiated().unwrap();
        assert_eq!((n.protocol, n.format, n.retry), (LinkProtocol::PcieFlit, Format::Standard256EndHeader, false));
        let mut dp =
            ParamExchange::new(ExchangeConfig::new(Role::Downstream, A::FLIT_68B | A::RETRY | A::STACK0, pcie));
        let mut up = ParamExchange::new(ExchangeConfig::new(
            Role::Upstream,
            A::FLIT_68B | A::PCIE_FLIT | A::RETRY | A::STACK0,
            pcie,
        ));
        shuttle(&mut dp, &mut up);
        let n = dp.negotiated().unwrap();
        assert_eq!((n.protocol, n.format, n.retry), (LinkProtocol::PcieNonFlit, Format::Flit68, true));
    }

    #[test]
    fn streaming_is_symmetric() {
        use AdapterCaps as A;
        let a_caps =
            A::STREAMING | A::RETRY | A::STACK0 | A::STACK1 | A::MULTI_PROTOCOL | A::STD_START_HEADER | A::LATOPT_OPT;
        let b_caps = A::STREAMING | A::RETRY | A::STACK0 | A::STACK1 | A::MULTI_PROTOCOL | A::STD_START_HEADER;
        let mut a = ParamExchange::new(ExchangeConfig::new(Role::Symmetric, a_caps, CxlCaps::empty()));
        let mut b = ParamExchange::new(ExchangeConfig::new(Role::Symmetric, b_caps, CxlCaps::empty()));
        let log = shuttle(&mut a, &mut b);
        assert_eq!(log.len(), 2);
        let n = a.negotiated().unwrap();
        assert_eq!(b.negotiated(), Some(n));
        assert_eq!(
            (n.protocol, n.format, n.retry, n.stacks),
            (LinkProtocol::Streaming, Format::Standard256StartHeader, true, [true, true])
        );
    }

    #[test]
    fn timeout_stall_and_invalid() {
        use AdapterCaps as A;
        let caps = A::FLIT_68B | A::PCIE_FLIT | A::STACK0;
        let mut dp = ParamExchange::new(ExchangeConfig::new(Role::Downstream, caps, CxlCaps::PCIE));
        dp.start(Instant::ZERO);
        assert!(dp.poll_message().is_some());
        assert_eq!(dp.poll_timeout(), Some(Instant::from_nanos(8_000_000)));
        // A stall restarts the 8 ms.
        let stall = Message::Capability { kind: CapKind::Adapter, finalized: false, info: STALL, caps: 0 };
        dp.handle_message(Instant::from_nanos(5_000_000), &stall);
        dp.handle_timeout(Instant::from_nanos(8_000_000));
        assert_eq!(dp.state(), ExchangeState::AwaitAdvCap);
        dp.handle_timeout(Instant::from_nanos(13_000_000));
        assert_eq!(dp.state(), ExchangeState::Failed(ExchangeError::Timeout));
        // An upstream port finalized with a capability it never advertised.
        let mut up = ParamExchange::new(ExchangeConfig::new(Role::Upstream, caps, CxlCaps::PCIE));
        up.start(Instant::ZERO);
        assert_eq!(up.poll_message(), None);
        up.handle_message(
            Instant::ZERO,
            &Message::Capability { kind: CapKind::Adapter, finalized: false, info: 0, caps: (caps | A::DP).bits() },
        );
        assert!(up.poll_message().is_some());
        let fin = (caps | A::RETRY | A::DP).bits();
        up.handle_message(
            Instant::ZERO,
            &Message::Capability { kind: CapKind::Adapter, finalized: true, info: 0, caps: fin },
        );
        assert_eq!(up.state(), ExchangeState::Failed(ExchangeError::Invalid(Invalid::NotAdvertised)));
        // Nothing in common.
        let mut a =
            ParamExchange::new(ExchangeConfig::new(Role::Symmetric, A::STREAMING | A::STACK0, CxlCaps::empty()));
        let mut b =
            ParamExchange::new(ExchangeConfig::new(Role::Symmetric, A::MANAGEMENT | A::STACK1, CxlCaps::empty()));
        shuttle(&mut a, &mut b);
        assert_eq!(a.state(), ExchangeState::Failed(ExchangeError::Invalid(Invalid::NoProtocol)));
    }

    #[test]
    fn finalize_rules() {
        use AdapterCaps as A;
        let dp =
            A::FLIT_68B | A::RAW | A::RETRY | A::STACK0 | A::STACK1 | A::ENHANCED_MULTI_PROTOCOL | A::STACK1_BW_LIMIT;
        let up = A::FLIT_68B | A::RAW | A::RETRY | A::STACK0 | A::STACK1 | A::ENHANCED_MULTI_PROTOCOL;
        // Raw negotiated: no Retry. Enhanced MP: both stacks.
        let fin = finalize(dp, up);
        assert_eq!(
            fin,
            A::FLIT_68B | A::RAW | A::STACK0 | A::STACK1 | A::ENHANCED_MULTI_PROTOCOL | A::STACK1_BW_LIMIT | A::DP
        );
        // Both stacks advertised without multi-protocol: stack 0 only.
        assert_eq!(finalize(A::STACK0 | A::STACK1, A::STACK0 | A::STACK1), A::STACK0 | A::DP);
        assert_eq!(finalize(A::STACK1, A::STACK0 | A::STACK1), A::STACK1 | A::DP);
        let both = CxlCaps::PCIE | CxlCaps::CXL_IO;
        assert_eq!(finalize_cxl(both, CxlCaps::PCIE, A::FLIT_68B), CxlCaps::PCIE);
        assert_eq!(finalize_cxl(both, both, A::FLIT_68B), CxlCaps::CXL_IO);
        // PCIe flit mode without CXL 256B: PCIe, though both could run CXL.io (note f).
        assert_eq!(finalize_cxl(both, both, A::FLIT_68B | A::PCIE_FLIT), CxlCaps::PCIE);
        assert_eq!(finalize_cxl(both, both, A::FLIT_68B | A::PCIE_FLIT | A::CXL_256B), CxlCaps::CXL_IO);
    }

    #[test]
    fn enhanced_multi_protocol_negotiates_stack_1() {
        use AdapterCaps as A;
        use MultiProtocolCaps as M;
        let caps = A::FLIT_68B
            | A::CXL_256B
            | A::PCIE_FLIT
            | A::RETRY
            | A::STACK0
            | A::STACK1
            | A::ENHANCED_MULTI_PROTOCOL
            | A::STD_START_HEADER;
        let dp_cfg =
            ExchangeConfig::new(Role::Downstream, caps, CXL_DEV).with_stack1(M::FLIT_68B | M::PCIE_FLIT, CxlCaps::PCIE);
        let up_cfg = ExchangeConfig::new(Role::Upstream, caps | A::STACK1_BW_LIMIT, CXL_DEV)
            .with_stack1(M::FLIT_68B | M::PCIE_FLIT | M::CXL_256B, CxlCaps::PCIE | CxlCaps::CXL_IO);
        let (mut dp, mut up) = (ParamExchange::new(dp_cfg), ParamExchange::new(up_cfg));
        let log = shuttle(&mut dp, &mut up);
        let order: std::vec::Vec<(char, CapKind, bool, u16)> = log
            .iter()
            .map(|(w, m)| match m {
                Message::Capability { kind, finalized, info, .. } => (*w, *kind, *finalized, *info),
                _ => panic!("{m:?}"),
            })
            .collect();
        assert_eq!(
            order[6..],
            [
                ('a', CapKind::MultiProtocol, false, 0),
                ('b', CapKind::MultiProtocol, false, 0),
                ('a', CapKind::MultiProtocol, true, 0),
                ('a', CapKind::Cxl, false, 1),
                ('b', CapKind::Cxl, false, 1),
                ('a', CapKind::Cxl, true, 1),
            ]
        );
        let n = dp.negotiated().unwrap();
        let u = up.negotiated().unwrap();
        assert_eq!(Negotiated { peer_limits: [false; 2], ..u }, Negotiated { peer_limits: [false; 2], ..n });
        assert_eq!(
            (n.protocol, n.protocol_of(1), n.format),
            (LinkProtocol::Cxl256, LinkProtocol::PcieFlit, Format::Standard256StartHeader)
        );
        assert_eq!((n.cxl1, n.stacks), (Some(CxlCaps::PCIE), [true, true]));
        // The upstream port receives stack 1 at half the link: the downstream port never
        // sends two stack 1 flits back to back; stack 0's, and the other direction, may.
        assert!(n.alternates(1) && !n.alternates(0) && !u.alternates(1));
    }

    #[test]
    fn enhanced_multi_protocol_with_a_streaming_stack_1_has_no_fincap() {
        use AdapterCaps as A;
        use MultiProtocolCaps as M;
        let caps = A::FLIT_68B
            | A::CXL_256B
            | A::PCIE_FLIT
            | A::STACK0
            | A::STACK1
            | A::ENHANCED_MULTI_PROTOCOL
            | A::STD_START_HEADER;
        let cfg = |role| ExchangeConfig::new(role, caps, CXL_DEV).with_stack1(M::STREAMING, CxlCaps::empty());
        let (mut dp, mut up) = (ParamExchange::new(cfg(Role::Downstream)), ParamExchange::new(cfg(Role::Upstream)));
        let log = shuttle(&mut dp, &mut up);
        // Two MultiProtAdvCaps and no MultiProtFinCap.
        let multi: std::vec::Vec<bool> = log
            .iter()
            .filter_map(|(_, m)| match m {
                Message::Capability { kind: CapKind::MultiProtocol, finalized, .. } => Some(*finalized),
                _ => None,
            })
            .collect();
        assert_eq!(multi, [false, false]);
        assert_eq!(dp.negotiated().map(|n| n.protocol_of(1)), Some(LinkProtocol::Streaming));
        assert_eq!(up.negotiated().map(|n| n.protocol_of(1)), Some(LinkProtocol::Streaming));
        // Both stacks streaming, no roles: both advertise MultiProtAdvCap.
        let s = A::STREAMING | A::STACK0 | A::STACK1 | A::ENHANCED_MULTI_PROTOCOL | A::STD_START_HEADER;
        let sym = ExchangeConfig::new(Role::Symmetric, s, CxlCaps::empty()).with_stack1(M::STREAMING, CxlCaps::empty());
        let (mut a, mut b) = (ParamExchange::new(sym), ParamExchange::new(sym));
        assert_eq!(shuttle(&mut a, &mut b).len(), 4);
        assert_eq!(
            a.negotiated().map(|n| (n.protocol, n.protocol_of(1))),
            Some((LinkProtocol::Streaming, LinkProtocol::Streaming))
        );
    }
}
