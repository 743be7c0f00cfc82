//! SES extension headers (UE 1.0 §3.4): atomic (4 bytes), compare-and-swap (36 bytes), rendezvous
//! (24 bytes).
//!
//! Atomic: atomic opcode ‖ datatype ‖ semantic control (bit 0 cacheable, bit 1 CPU coherent, as
//! Wireshark and uet-ref-prov have it; XDP2 uses 0x80 and 0x40; other bits reserved) ‖ reserved
//! byte. Compare-and-swap: the atomic extension, then a 128-bit compare value and a 128-bit swap
//! value, for the CSWAP opcodes. Rendezvous: eager length (32) ‖ read RI generation (8) ‖ read
//! PIDonFEP (12) ‖ read resource index (12) ‖ read offset (64) ‖ read match bits / memory key (64);
//! the word at offset 4 follows uet-ref-prov and XDP2 (Wireshark reads a 14-bit PIDonFEP; 12 bits
//! matches the common header).
//!
//! **Which packets carry one:** every request packet whose opcode has an extension, first packet
//! of a message or not: the Wireshark dissector (`epan/dissectors/packet-uet.c`, its "Header
//! Parsing Guide") decides by opcode alone, and no public source ties the extension to SOM.
//!
//! Receive policy: the atomic extension's reserved byte and semantic-control bits 2–7 are ignored
//! and sent as zero; [`Extension::check_reserved`] reports them.

use super::{Opcode, check_bits, codepoints};
use crate::error::{Error, reserved_zero};
use crate::pds::{defmt_bits, read, view, write};
use bitflags::bitflags;
use zerocopy::byteorder::network_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

codepoints! {
    /// Atomic operations (Wireshark, uet-ref-prov and XDP2 agree).
    AtomicOpcode, "atomic opcode", vendor 0xE0..=0xFE, {
        /// Minimum.
        Min = 0x00,
        /// Maximum.
        Max = 0x01,
        /// Sum.
        Sum = 0x02,
        /// Difference.
        Diff = 0x03,
        /// Product.
        Prod = 0x04,
        /// Logical or.
        Lor = 0x05,
        /// Logical and.
        Land = 0x06,
        /// Bitwise or.
        Bor = 0x07,
        /// Bitwise and.
        Band = 0x08,
        /// Logical exclusive or.
        Lxor = 0x09,
        /// Bitwise exclusive or.
        Bxor = 0x0A,
        /// Atomic read.
        Read = 0x0B,
        /// Atomic write.
        Write = 0x0C,
        /// Compare (equal) and swap.
        Cswap = 0x0D,
        /// Compare (not equal) and swap.
        CswapNe = 0x0E,
        /// Compare (less or equal) and swap.
        CswapLe = 0x0F,
        /// Compare (less) and swap.
        CswapLt = 0x10,
        /// Compare (greater or equal) and swap.
        CswapGe = 0x11,
        /// Compare (greater) and swap.
        CswapGt = 0x12,
        /// Masked swap: `(T & mask) ^ I`.
        Mswap = 0x13,
        /// Invalidate.
        Inval = 0x14,
    }
}

impl AtomicOpcode {
    /// Whether the operation carries compare and swap values (the CAS extension).
    pub const fn is_compare_and_swap(self) -> bool {
        matches!(
            self,
            AtomicOpcode::Cswap
                | AtomicOpcode::CswapNe
                | AtomicOpcode::CswapLe
                | AtomicOpcode::CswapLt
                | AtomicOpcode::CswapGe
                | AtomicOpcode::CswapGt
        )
    }
}

codepoints! {
    /// Atomic datatypes (Wireshark, uet-ref-prov and XDP2 agree).
    Datatype, "atomic datatype", vendor 0xE0..=0xFE, {
        /// Signed 8-bit.
        Int8 = 0x00,
        /// Unsigned 8-bit.
        Uint8 = 0x01,
        /// Signed 16-bit.
        Int16 = 0x02,
        /// Unsigned 16-bit.
        Uint16 = 0x03,
        /// Signed 32-bit.
        Int32 = 0x04,
        /// Unsigned 32-bit.
        Uint32 = 0x05,
        /// Signed 64-bit.
        Int64 = 0x06,
        /// Unsigned 64-bit.
        Uint64 = 0x07,
        /// Signed 128-bit.
        Int128 = 0x08,
        /// Unsigned 128-bit.
        Uint128 = 0x09,
        /// IEEE binary32.
        Float = 0x0A,
        /// IEEE binary64.
        Double = 0x0B,
        /// Complex of two binary32.
        FloatComplex = 0x0C,
        /// Complex of two binary64.
        DoubleComplex = 0x0D,
        /// Long double.
        LongDouble = 0x0E,
        /// Complex long double.
        LongDoubleComplex = 0x0F,
        /// bfloat16.
        Bf16 = 0x10,
        /// IEEE binary16.
        Fp16 = 0x11,
    }
}

bitflags! {
    /// Atomic semantic control (bit order of Wireshark and uet-ref-prov; XDP2 differs).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
    pub struct SemanticControl: u8 {
        /// The target may cache the result.
        const CACHEABLE = 0x01;
        /// The operation must be coherent with target CPUs.
        const CPU_COHERENT = 0x02;
    }
}
defmt_bits!(SemanticControl);

/// The atomic extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct AtomicExt {
    /// Operation.
    pub opcode: AtomicOpcode,
    /// Operand type.
    pub datatype: Datatype,
    /// Semantic control.
    pub semantic_control: SemanticControl,
}

/// The rendezvous extension: where the target reads the rest of the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RendezvousExt {
    /// Bytes sent eagerly.
    pub eager_length: u32,
    /// Resource-index generation of the read.
    pub read_ri_generation: u8,
    /// PIDonFEP of the read (12 bits).
    pub read_pid_on_fep: u16,
    /// Resource index of the read (12 bits).
    pub read_resource_index: u16,
    /// Offset to read from.
    pub read_offset: u64,
    /// Match bits / memory key of the read.
    pub read_match_bits: u64,
}

/// An extension header after an SES request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Extension {
    /// Atomic (4 bytes).
    Atomic(AtomicExt),
    /// Compare-and-swap (36 bytes).
    CompareAndSwap {
        /// The atomic part; its opcode is a CSWAP opcode.
        atomic: AtomicExt,
        /// Compare value (128 bits).
        compare: [u8; 16],
        /// Swap value (128 bits).
        swap: [u8; 16],
    },
    /// Rendezvous (24 bytes).
    Rendezvous(RendezvousExt),
}

/// The raw atomic layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct AtomicRaw {
    /// Atomic opcode.
    pub opcode: u8,
    /// Datatype.
    pub datatype: u8,
    /// Semantic control.
    pub semantic_control: u8,
    /// Reserved.
    pub reserved: u8,
}

/// The raw rendezvous layout.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RendezvousRaw {
    /// Eager length.
    pub eager_length: U32,
    /// RI generation ‖ PIDonFEP ‖ RI.
    pub read_target: U32,
    /// Read offset.
    pub read_offset: U64,
    /// Read match bits.
    pub read_match_bits: U64,
}

impl Extension {
    /// Parses the extension a standard request with `opcode` carries, if any (on every packet
    /// of the message; see the module doc).
    #[inline]
    pub fn parse_for(opcode: Opcode, bytes: &[u8]) -> Result<(Option<Self>, &[u8]), Error> {
        Self::parse_kinds(opcode.has_atomic_ext(), opcode.has_rendezvous_ext(), bytes)
    }

    /// Parses the extension a small or medium request with `opcode` carries, if any: an atomic
    /// one ([`Opcode::has_compact_atomic_ext`]).
    #[inline]
    pub fn parse_for_compact(opcode: Opcode, bytes: &[u8]) -> Result<(Option<Self>, &[u8]), Error> {
        Self::parse_kinds(opcode.has_compact_atomic_ext(), false, bytes)
    }

    /// Parses an atomic (or CAS) extension when `atomic`, else a rendezvous one when
    /// `rendezvous`, else none.
    #[inline]
    fn parse_kinds(atomic: bool, rendezvous: bool, bytes: &[u8]) -> Result<(Option<Self>, &[u8]), Error> {
        if atomic {
            let (raw, rest) = view::<AtomicRaw>(bytes, "SES atomic extension")?;
            let atomic = AtomicExt {
                opcode: AtomicOpcode::try_from(raw.opcode)?,
                datatype: Datatype::try_from(raw.datatype)?,
                semantic_control: SemanticControl::from_bits_truncate(raw.semantic_control),
            };
            if atomic.opcode.is_compare_and_swap() {
                let (compare, rest) = read::<[u8; 16]>(rest, "SES CAS compare value")?;
                let (swap, rest) = read::<[u8; 16]>(rest, "SES CAS swap value")?;
                return Ok((Some(Extension::CompareAndSwap { atomic, compare, swap }), rest));
            }
            return Ok((Some(Extension::Atomic(atomic)), rest));
        }
        if rendezvous {
            let (raw, rest) = view::<RendezvousRaw>(bytes, "SES rendezvous extension")?;
            let t = raw.read_target.get();
            let ext = RendezvousExt {
                eager_length: raw.eager_length.get(),
                read_ri_generation: (t >> 24) as u8,
                read_pid_on_fep: ((t >> 12) & 0xFFF) as u16,
                read_resource_index: (t & 0xFFF) as u16,
                read_offset: raw.read_offset.get(),
                read_match_bits: raw.read_match_bits.get(),
            };
            return Ok((Some(Extension::Rendezvous(ext)), rest));
        }
        Ok((None, bytes))
    }

    /// The strict check: the first reserved bit set in the extension a standard request with
    /// `opcode` carries at the front of `bytes`, by field name ([`Extension::parse_for`] ignores
    /// them).
    pub fn check_reserved(opcode: Opcode, bytes: &[u8]) -> Result<(), Error> {
        Self::check_reserved_atomic(opcode.has_atomic_ext(), bytes)
    }

    /// [`Extension::check_reserved`] for a small or medium request.
    pub fn check_reserved_compact(opcode: Opcode, bytes: &[u8]) -> Result<(), Error> {
        Self::check_reserved_atomic(opcode.has_compact_atomic_ext(), bytes)
    }

    /// The reserved bits of an atomic extension at the front of `bytes`, when there is one.
    fn check_reserved_atomic(atomic: bool, bytes: &[u8]) -> Result<(), Error> {
        if !atomic {
            return Ok(());
        }
        let (raw, _) = view::<AtomicRaw>(bytes, "SES atomic extension")?;
        reserved_zero(u64::from(raw.semantic_control & !0x03), "atomic semantic control reserved bits")?;
        reserved_zero(u64::from(raw.reserved), "atomic extension reserved byte")
    }

    /// Checks that `ext` is exactly the extension a standard request with `opcode` must carry.
    pub fn check_for(ext: Option<&Self>, opcode: Opcode) -> Result<(), Error> {
        Self::check_kinds(ext, opcode.has_atomic_ext(), opcode.has_rendezvous_ext())
    }

    /// Checks that `ext` is exactly the extension a small or medium request with `opcode` must
    /// carry ([`Opcode::has_compact_atomic_ext`]).
    pub fn check_for_compact(ext: Option<&Self>, opcode: Opcode) -> Result<(), Error> {
        Self::check_kinds(ext, opcode.has_compact_atomic_ext(), false)
    }

    fn check_kinds(ext: Option<&Self>, atomic: bool, rendezvous: bool) -> Result<(), Error> {
        let ok = match ext {
            None => !atomic && !rendezvous,
            Some(Extension::Atomic(a)) => atomic && !a.opcode.is_compare_and_swap(),
            Some(Extension::CompareAndSwap { atomic: a, .. }) => atomic && a.opcode.is_compare_and_swap(),
            Some(Extension::Rendezvous(_)) => rendezvous,
        };
        if ok { Ok(()) } else { Err(Error::Mismatch { field: "SES extension for the opcode" }) }
    }

    /// Bytes [`Extension::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Extension::Atomic(_) => 4,
            Extension::CompareAndSwap { .. } => 36,
            Extension::Rendezvous(_) => 24,
        }
    }

    fn atomic_raw(a: &AtomicExt) -> Result<AtomicRaw, Error> {
        Ok(AtomicRaw {
            opcode: a.opcode.to_u8()?,
            datatype: a.datatype.to_u8()?,
            semantic_control: a.semantic_control.intersection(SemanticControl::all()).bits(),
            reserved: 0,
        })
    }

    /// The read target word of a rendezvous extension: RI generation, PIDonFEP, RI.
    fn read_target(r: &RendezvousExt) -> Result<u32, Error> {
        let pid = check_bits(u32::from(r.read_pid_on_fep), 12, "read PIDonFEP")?;
        let ri = check_bits(u32::from(r.read_resource_index), 12, "read resource index")?;
        Ok((u32::from(r.read_ri_generation) << 24) | (pid << 12) | ri)
    }

    /// The checks [`Extension::emit`] makes of the fields, without writing: each code point and
    /// width the wire can carry.
    pub fn check(&self) -> Result<(), Error> {
        match self {
            Extension::Atomic(a) | Extension::CompareAndSwap { atomic: a, .. } => Self::atomic_raw(a).map(drop),
            Extension::Rendezvous(r) => Self::read_target(r).map(drop),
        }
    }

    /// Writes the extension to the front of `out`.
    #[inline]
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, Error> {
        let len = self.buffer_len();
        if out.len() < len {
            return Err(Error::BufferTooShort { needed: len, got: out.len() });
        }
        match self {
            Extension::Atomic(a) => write(&Self::atomic_raw(a)?, out),
            Extension::CompareAndSwap { atomic, compare, swap } => {
                let mut n = write(&Self::atomic_raw(atomic)?, out)?;
                n += write(compare, out.get_mut(n..).unwrap_or_default())?;
                n += write(swap, out.get_mut(n..).unwrap_or_default())?;
                Ok(n)
            }
            Extension::Rendezvous(r) => {
                let raw = RendezvousRaw {
                    eager_length: U32::new(r.eager_length),
                    read_target: U32::new(Self::read_target(r)?),
                    read_offset: U64::new(r.read_offset),
                    read_match_bits: U64::new(r.read_match_bits),
                };
                write(&raw, out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_and_cas() {
        let (e, rest) = Extension::parse_for(Opcode::FetchingAtomic, &[0x02, 0x07, 0x03, 0x00, 0xAA]).unwrap();
        assert_eq!(
            e,
            Some(Extension::Atomic(AtomicExt {
                opcode: AtomicOpcode::Sum,
                datatype: Datatype::Uint64,
                semantic_control: SemanticControl::CACHEABLE | SemanticControl::CPU_COHERENT,
            }))
        );
        assert_eq!(rest, &[0xAA]);
        let mut cas = [0u8; 36];
        cas[0] = 0x0D;
        cas[1] = 0x09;
        cas[4] = 1;
        cas[35] = 2;
        let (e, _) = Extension::parse_for(Opcode::Atomic, &cas).unwrap();
        let Some(Extension::CompareAndSwap { compare, swap, .. }) = e else { panic!() };
        assert_eq!((compare[0], swap[15]), (1, 2));
        let mut out = [0u8; 36];
        e.unwrap().emit(&mut out).unwrap();
        assert_eq!(out, cas);
        // Reserved semantic-control bits and the reserved byte: ignored, reported strictly.
        let odd = [0x02, 0x07, 0x07, 0x5A];
        let (e, _) = Extension::parse_for(Opcode::Atomic, &odd).unwrap();
        let Some(Extension::Atomic(a)) = e else { panic!("atomic") };
        assert_eq!(a.semantic_control, SemanticControl::CACHEABLE | SemanticControl::CPU_COHERENT);
        assert_eq!(
            Extension::check_reserved(Opcode::Atomic, &odd),
            Err(Error::Reserved { field: "atomic semantic control reserved bits" })
        );
        assert_eq!(
            Extension::check_reserved(Opcode::Atomic, &[0x02, 0x07, 0x03, 1]),
            Err(Error::Reserved { field: "atomic extension reserved byte" })
        );
        assert_eq!(Extension::check_reserved(Opcode::Atomic, &[0x02, 0x07, 0x03, 0]), Ok(()));
        assert!(Extension::parse_for(Opcode::Atomic, &[0x15, 0x07, 0, 0]).is_err());
        assert_eq!(
            Extension::parse_for(Opcode::Atomic, &[0xE5, 0xF0, 0, 0]).unwrap().0.map(|e| e.buffer_len()),
            Some(4)
        );
        assert_eq!(Extension::parse_for(Opcode::Send, &[1, 2]).unwrap(), (None, &[1u8, 2][..]));
    }

    #[test]
    fn rendezvous_word_layout() {
        let mut b = [0u8; 24];
        b[..4].copy_from_slice(&4096u32.to_be_bytes());
        b[4..8].copy_from_slice(&((7u32 << 24) | (0xABC << 12) | 0x123).to_be_bytes());
        let (e, _) = Extension::parse_for(Opcode::RendezvousSend, &b).unwrap();
        let Some(Extension::Rendezvous(r)) = e else { panic!() };
        assert_eq!(
            (r.eager_length, r.read_ri_generation, r.read_pid_on_fep, r.read_resource_index),
            (4096, 7, 0xABC, 0x123)
        );
        assert!(Extension::check_for(e.as_ref(), Opcode::RendezvousSend).is_ok());
        assert!(Extension::check_for(e.as_ref(), Opcode::Send).is_err());
        assert!(Extension::check_for(None, Opcode::RendezvousSend).is_err());
    }
}
