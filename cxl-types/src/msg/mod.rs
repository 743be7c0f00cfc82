//! CXL.mem and CXL.cache messages (CXL 4.0 §3.2–§3.3; field tables 3-13…3-21 and 3-34…3-52),
//! each in the three widths a slot carries it in ([`Width`]): the 68B flit, the 256B flit and
//! the port-based-routing (PBR) flit.
//!
//! A message is a plain struct ([`mem`], [`cache`]) holding every field of every width; the
//! fields a width does not carry must be zero when it is encoded there, and decode as zero.
//! [`Message::encode`] gives the message's bits, least significant first, starting with the
//! Valid bit at bit 0, as a slot holds them; [`Message::decode`] reads them back. Reserved bits
//! are sent as zero and ignored on receive; [`Message::check`] reports what a receiver only
//! warns about (a reserved opcode or one the width does not define).
//!
//! Wire order. *Project-defined* where the specification shows the order only in slot figures
//! (images), each layout kept in one table beside its message:
//! * 68B: the positions three public readings of the CXL 2.0/3.1 slot figures agree on — M2S
//!   Req and RwD put TC right after the address (RwD: after Poison), then LD-ID, then the
//!   reserved bits; D2H Req has 7 reserved bits before the address. (CXL 4.0's table order is
//!   the alternative.) Every other 68B message is in table order, matching the figures.
//! * 256B and PBR: CXL 4.0 table order, fields LSB-first, except the S2M DRS, whose figure puts
//!   DevLoad before LD-ID (DPID in PBR). 256B D2H Req keeps table order (Address at bit 23);
//!   one public package places it at bit 26 instead.

pub mod cache;
pub mod mem;

pub use cache::{D2hData, D2hReq, D2hRsp, H2dData, H2dReq, H2dRsp};
pub use mem::{M2sBiRsp, M2sReq, M2sRwd, S2mBiSnp, S2mDrs, S2mNdr};

/// The flit a message travels in; field widths differ between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Width {
    /// The 68B flit (CXL 1.1 and later).
    Flit68,
    /// The 256B flit with hierarchy-based routing (CXL 3.0 and later).
    Flit256,
    /// The 256B flit with port-based routing (SPID/DPID instead of LD-ID and CacheID).
    Pbr,
}

/// Why a message does not encode, or what [`Message::check`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MsgError {
    /// The message does not exist in this width (M2S BIRsp and S2M BISnp in 68B flits).
    NotInWidth {
        /// The message.
        message: &'static str,
    },
    /// A field's value needs bits the width does not carry: too large, an address with bits
    /// below the line or above bit 51, or a field the width lacks (LD-ID in PBR) not zero.
    Range {
        /// The message.
        message: &'static str,
        /// The field.
        field: &'static str,
        /// The value given.
        value: u64,
    },
    /// An opcode the specification reserves (decoded and kept; only [`Message::check`] says so).
    ReservedOpcode {
        /// The message.
        message: &'static str,
        /// The raw opcode.
        value: u8,
    },
    /// An opcode defined only in 256B and PBR flits, found in a 68B flit.
    OpcodeNotInWidth {
        /// The message.
        message: &'static str,
        /// The raw opcode.
        value: u8,
    },
}

impl core::fmt::Display for MsgError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MsgError::NotInWidth { message } => write!(f, "{message} is not carried in this flit width"),
            MsgError::Range { message, field, value } => {
                write!(f, "{message} {field} = {value:#x} does not fit the field in this flit width")
            }
            MsgError::ReservedOpcode { message, value } => write!(f, "{message} opcode {value:#x} is reserved"),
            MsgError::OpcodeNotInWidth { message, value } => {
                write!(f, "{message} opcode {value:#x} exists only in 256B and PBR flits")
            }
        }
    }
}

impl core::error::Error for MsgError {}

/// Which message a slot position holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Kind {
    /// CXL.mem master-to-subordinate request.
    M2sReq,
    /// CXL.mem master-to-subordinate request with data (the header).
    M2sRwd,
    /// CXL.mem back-invalidate response.
    M2sBiRsp,
    /// CXL.mem back-invalidate snoop.
    S2mBiSnp,
    /// CXL.mem no-data response.
    S2mNdr,
    /// CXL.mem data response (the header).
    S2mDrs,
    /// CXL.cache device-to-host request.
    D2hReq,
    /// CXL.cache device-to-host response.
    D2hRsp,
    /// CXL.cache device-to-host data header.
    D2hData,
    /// CXL.cache host-to-device request (snoop).
    H2dReq,
    /// CXL.cache host-to-device response.
    H2dRsp,
    /// CXL.cache host-to-device data header.
    H2dData,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 12] = [
        Kind::M2sReq,
        Kind::M2sRwd,
        Kind::M2sBiRsp,
        Kind::S2mBiSnp,
        Kind::S2mNdr,
        Kind::S2mDrs,
        Kind::D2hReq,
        Kind::D2hRsp,
        Kind::D2hData,
        Kind::H2dReq,
        Kind::H2dRsp,
        Kind::H2dData,
    ];

    /// Whether data follows the message (a data header: M2S RwD, S2M DRS, D2H and H2D data).
    pub const fn has_data(self) -> bool {
        matches!(self, Kind::M2sRwd | Kind::S2mDrs | Kind::D2hData | Kind::H2dData)
    }

    /// The message's length in bits in `width`, Valid included; `None` where the width does
    /// not carry it.
    pub fn bits(self, width: Width) -> Option<u32> {
        match self {
            Kind::M2sReq => M2sReq::bits(width),
            Kind::M2sRwd => M2sRwd::bits(width),
            Kind::M2sBiRsp => M2sBiRsp::bits(width),
            Kind::S2mBiSnp => S2mBiSnp::bits(width),
            Kind::S2mNdr => S2mNdr::bits(width),
            Kind::S2mDrs => S2mDrs::bits(width),
            Kind::D2hReq => D2hReq::bits(width),
            Kind::D2hRsp => D2hRsp::bits(width),
            Kind::D2hData => D2hData::bits(width),
            Kind::H2dReq => H2dReq::bits(width),
            Kind::H2dRsp => H2dRsp::bits(width),
            Kind::H2dData => H2dData::bits(width),
        }
    }

    /// Whether the message travels host/master to device/subordinate (H2D, M2S).
    pub const fn downstream(self) -> bool {
        matches!(self, Kind::M2sReq | Kind::M2sRwd | Kind::M2sBiRsp | Kind::H2dReq | Kind::H2dRsp | Kind::H2dData)
    }
}

/// One CXL.cachemem message of any kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[allow(missing_docs, reason = "each variant is its message type, documented there")]
pub enum Msg {
    M2sReq(M2sReq),
    M2sRwd(M2sRwd),
    M2sBiRsp(M2sBiRsp),
    S2mBiSnp(S2mBiSnp),
    S2mNdr(S2mNdr),
    S2mDrs(S2mDrs),
    D2hReq(D2hReq),
    D2hRsp(D2hRsp),
    D2hData(D2hData),
    H2dReq(H2dReq),
    H2dRsp(H2dRsp),
    H2dData(H2dData),
}

macro_rules! each_msg {
    ($m:expr, $v:ident => $e:expr) => {
        match $m {
            Msg::M2sReq($v) => $e,
            Msg::M2sRwd($v) => $e,
            Msg::M2sBiRsp($v) => $e,
            Msg::S2mBiSnp($v) => $e,
            Msg::S2mNdr($v) => $e,
            Msg::S2mDrs($v) => $e,
            Msg::D2hReq($v) => $e,
            Msg::D2hRsp($v) => $e,
            Msg::D2hData($v) => $e,
            Msg::H2dReq($v) => $e,
            Msg::H2dRsp($v) => $e,
            Msg::H2dData($v) => $e,
        }
    };
}

impl Msg {
    /// The message's kind.
    pub const fn kind(&self) -> Kind {
        match self {
            Msg::M2sReq(_) => Kind::M2sReq,
            Msg::M2sRwd(_) => Kind::M2sRwd,
            Msg::M2sBiRsp(_) => Kind::M2sBiRsp,
            Msg::S2mBiSnp(_) => Kind::S2mBiSnp,
            Msg::S2mNdr(_) => Kind::S2mNdr,
            Msg::S2mDrs(_) => Kind::S2mDrs,
            Msg::D2hReq(_) => Kind::D2hReq,
            Msg::D2hRsp(_) => Kind::D2hRsp,
            Msg::D2hData(_) => Kind::D2hData,
            Msg::H2dReq(_) => Kind::H2dReq,
            Msg::H2dRsp(_) => Kind::H2dRsp,
            Msg::H2dData(_) => Kind::H2dData,
        }
    }

    /// [`Message::encode`] of the message inside.
    pub fn encode(&self, width: Width) -> Result<u128, MsgError> {
        each_msg!(self, m => m.encode(width))
    }

    /// [`Message::check`] of the message inside.
    pub fn check(&self, width: Width) -> Result<(), MsgError> {
        each_msg!(self, m => m.check(width))
    }

    /// Decodes a message of `kind` from `bits` (Valid at bit 0, not checked here).
    pub fn decode(kind: Kind, bits: u128, width: Width) -> Result<Msg, MsgError> {
        Ok(match kind {
            Kind::M2sReq => Msg::M2sReq(M2sReq::decode(bits, width)?),
            Kind::M2sRwd => Msg::M2sRwd(M2sRwd::decode(bits, width)?),
            Kind::M2sBiRsp => Msg::M2sBiRsp(M2sBiRsp::decode(bits, width)?),
            Kind::S2mBiSnp => Msg::S2mBiSnp(S2mBiSnp::decode(bits, width)?),
            Kind::S2mNdr => Msg::S2mNdr(S2mNdr::decode(bits, width)?),
            Kind::S2mDrs => Msg::S2mDrs(S2mDrs::decode(bits, width)?),
            Kind::D2hReq => Msg::D2hReq(D2hReq::decode(bits, width)?),
            Kind::D2hRsp => Msg::D2hRsp(D2hRsp::decode(bits, width)?),
            Kind::D2hData => Msg::D2hData(D2hData::decode(bits, width)?),
            Kind::H2dReq => Msg::H2dReq(H2dReq::decode(bits, width)?),
            Kind::H2dRsp => Msg::H2dRsp(H2dRsp::decode(bits, width)?),
            Kind::H2dData => Msg::H2dData(H2dData::decode(bits, width)?),
        })
    }
}

/// What every message type offers.
pub trait Message: Sized + Copy {
    /// The message's kind.
    const KIND: Kind;
    /// The message's name as the specification writes it.
    const NAME: &'static str;

    /// The length in bits in `width`, Valid included; `None` where the width does not carry
    /// the message.
    fn bits(width: Width) -> Option<u32>;

    /// The message's bits with Valid = 1, least significant first (bits at and above
    /// [`Self::bits`] are zero).
    fn encode(&self, width: Width) -> Result<u128, MsgError>;

    /// Reads a message from `bits` (bit 0 Valid, not checked; reserved bits ignored; fields
    /// the width lacks read as zero). Fails only where the width does not carry the message.
    fn decode(bits: u128, width: Width) -> Result<Self, MsgError>;

    /// What a strict receiver warns about: a reserved opcode, or a 256B-only opcode in a 68B
    /// flit.
    fn check(&self, width: Width) -> Result<(), MsgError>;
}

/// One place of a message layout: a field, its width in bits and the shift of its value (an
/// address field holds `address >> shift`). Listed in wire order after the Valid bit.
#[derive(Clone, Copy)]
pub(crate) struct Place {
    field: u8,
    bits: u8,
    shift: u8,
}

/// A reserved run of a layout.
pub(crate) const RSVD: u8 = u8::MAX;

/// `Place` by field index and width.
pub(crate) const fn p(field: u8, bits: u8) -> Place {
    Place { field, bits, shift: 0 }
}

/// `Place` of an address field holding `address >> shift`.
pub(crate) const fn addr(field: u8, bits: u8, shift: u8) -> Place {
    Place { field, bits, shift }
}

/// A layout's length in bits, Valid included.
pub(crate) const fn layout_bits(layout: &[Place]) -> u32 {
    let mut n = 1;
    let mut rest = layout;
    while let [first, tail @ ..] = rest {
        n += first.bits as u32;
        rest = tail;
    }
    n
}

/// A layout's length, if the width has the message.
pub(crate) const fn bits_of(layout: Option<&[Place]>) -> Option<u32> {
    match layout {
        Some(l) => Some(layout_bits(l)),
        None => None,
    }
}

/// Encodes field values (indexed as the layout's fields) after a Valid bit of 1.
pub(crate) fn encode_fields<const N: usize>(
    message: &'static str,
    names: &[&'static str; N],
    layout: &[Place],
    values: &[u64; N],
) -> Result<u128, MsgError> {
    let mut covered = [0u64; N];
    let mut w: u128 = 1;
    let mut at = 1u32;
    for pl in layout {
        if let (Some(v), Some(c)) = (values.get(usize::from(pl.field)), covered.get_mut(usize::from(pl.field))) {
            let mask = low_mask(pl.bits);
            *c |= mask << pl.shift;
            w |= u128::from((v >> pl.shift) & mask) << at;
        }
        at += u32::from(pl.bits);
    }
    for ((v, c), name) in values.iter().zip(covered).zip(names) {
        if v & !c != 0 {
            return Err(MsgError::Range { message, field: name, value: *v });
        }
    }
    Ok(w)
}

/// Decodes field values (indexed as the layout's fields); the Valid bit is not looked at.
pub(crate) fn decode_fields<const N: usize>(layout: &[Place], bits: u128) -> [u64; N] {
    let mut values = [0u64; N];
    let mut at = 1u32;
    for pl in layout {
        if let Some(v) = values.get_mut(usize::from(pl.field)) {
            *v |= ((bits >> at) as u64 & low_mask(pl.bits)) << pl.shift;
        }
        at += u32::from(pl.bits);
    }
    values
}

/// The mask of the `n` low bits of a 128-bit slot (all of it for 128 or more).
pub(crate) const fn slot_mask(n: u32) -> u128 {
    match 1u128.checked_shl(n) {
        Some(b) => b - 1,
        None => u128::MAX,
    }
}

const fn low_mask(bits: u8) -> u64 {
    if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
}

/// Defines an open code: an enum of the specification's values plus `Reserved(u8)` for the
/// rest, decoded from and encoded to the raw bits.
macro_rules! code {
    (
        $(#[$meta:meta])* $name:ident, $bits:literal bits,
        { $( $(#[$doc:meta])* $variant:ident = $value:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub enum $name {
            $( $(#[$doc])* $variant, )*
            /// A value the specification reserves, kept as received.
            Reserved(u8),
        }

        impl $name {
            /// The code for raw bits (masked to the field's width).
            pub const fn from_bits(v: u8) -> Self {
                match v & ((1u16 << $bits) - 1) as u8 {
                    $( $value => $name::$variant, )*
                    other => $name::Reserved(other),
                }
            }

            /// The raw bits.
            pub const fn bits(self) -> u8 {
                match self {
                    $( $name::$variant => $value, )*
                    $name::Reserved(v) => v,
                }
            }

            /// Whether the value is one the specification reserves.
            pub const fn is_reserved(self) -> bool {
                matches!(self, $name::Reserved(_))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::from_bits(0)
            }
        }

        #[cfg(feature = "arbitrary")]
        impl<'a> arbitrary::Arbitrary<'a> for $name {
            fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                Ok(Self::from_bits(u8::arbitrary(u)?))
            }
        }
    };
}
pub(crate) use code;

/// Defines a message type's `Message` impl from its field list and three layouts.
macro_rules! message_impl {
    (
        $name:ident, $kind:ident, $label:literal, $(opcode: $op:expr, only_256: $only:expr,)?
        names: $names:expr, layouts: [$l68:expr, $l256:expr, $pbr:expr $(,)?],
        values($s:ident) $values:block, from($v:ident) $from:block
    ) => {
        impl $name {
            const fn layout(width: $crate::msg::Width) -> Option<&'static [$crate::msg::Place]> {
                match width {
                    $crate::msg::Width::Flit68 => $l68,
                    $crate::msg::Width::Flit256 => $l256,
                    $crate::msg::Width::Pbr => $pbr,
                }
            }

            /// The lengths in the three widths, computed once at compile time.
            const BITS: [Option<u32>; 3] = [
                $crate::msg::bits_of(Self::layout($crate::msg::Width::Flit68)),
                $crate::msg::bits_of(Self::layout($crate::msg::Width::Flit256)),
                $crate::msg::bits_of(Self::layout($crate::msg::Width::Pbr)),
            ];
        }

        impl $crate::msg::Message for $name {
            const KIND: $crate::msg::Kind = $crate::msg::Kind::$kind;
            const NAME: &'static str = $label;

            fn bits(width: $crate::msg::Width) -> Option<u32> {
                let [b68, b256, pbr] = Self::BITS;
                match width {
                    $crate::msg::Width::Flit68 => b68,
                    $crate::msg::Width::Flit256 => b256,
                    $crate::msg::Width::Pbr => pbr,
                }
            }

            fn encode(&self, width: $crate::msg::Width) -> Result<u128, $crate::msg::MsgError> {
                let layout = Self::layout(width).ok_or($crate::msg::MsgError::NotInWidth { message: $label })?;
                let $s = self;
                $crate::msg::encode_fields($label, &$names, layout, &$values)
            }

            fn decode(bits: u128, width: $crate::msg::Width) -> Result<Self, $crate::msg::MsgError> {
                let layout = Self::layout(width).ok_or($crate::msg::MsgError::NotInWidth { message: $label })?;
                let $v = $crate::msg::decode_fields(layout, bits);
                Ok($from)
            }

            fn check(&self, width: $crate::msg::Width) -> Result<(), $crate::msg::MsgError> {
                Self::layout(width).ok_or($crate::msg::MsgError::NotInWidth { message: $label })?;
                $(
                    let only: &[u8] = $only;
                    let op = ($op)(self);
                    if op.is_reserved() {
                        return Err($crate::msg::MsgError::ReservedOpcode { message: $label, value: op.bits() });
                    }
                    if width == $crate::msg::Width::Flit68 && only.contains(&op.bits()) {
                        return Err($crate::msg::MsgError::OpcodeNotInWidth { message: $label, value: op.bits() });
                    }
                )?
                Ok(())
            }
        }
    };
}
pub(crate) use message_impl;

#[cfg(test)]
mod tests;
