//! AXI4 and AXI5 transactions as PAXI carries them: the five channels' fields, their encodings,
//! and the rules a legal transaction follows, each broken rule a typed [`AxiError`].
//!
//! Encodings (AMBA AXI, ARM IHI0022; as the PULP AXI package `pulp-platform/axi`
//! `src/axi_pkg.sv` defines them):
//!
//! | field | width | encoding |
//! |---|---|---|
//! | AxLEN | 8 | beats − 1 ([`AddrReq::beats`] holds the beat count, 1 to 256) |
//! | AxSIZE | 3 | bytes per beat = 2^AxSIZE ([`Size`]) |
//! | AxBURST | 2 | 00 FIXED, 01 INCR, 10 WRAP, 11 reserved ([`Burst`]) |
//! | AxLOCK | 1 | 0 normal, 1 exclusive |
//! | AxCACHE | 4 | bit 0 bufferable, 1 modifiable, 2 read-allocate, 3 write-allocate ([`Cache`]) |
//! | AxPROT | 3 | bit 0 privileged, 1 non-secure, 2 instruction ([`Prot`]) |
//! | AxQOS, AxREGION | 4, 4 | opaque |
//! | BRESP, RRESP | 2 | 00 OKAY, 01 EXOKAY, 10 SLVERR, 11 DECERR ([`Resp`]) |
//! | AWATOP | 6 | AXI5 atomics ([`Atop`]) |
//!
//! Rules checked by [`AddrReq::validate`] (IHI0022 as commonly quoted, §A3.4 bursts and §A7.2
//! exclusive access; the digest this crate was built from marks them not re-verified against the
//! specification text, so each is a separate [`AxiError`] a caller can tell apart):
//!
//! * beats 1 to 256 for INCR, 1 to 16 for FIXED, and 2, 4, 8 or 16 for WRAP;
//! * bytes per beat at most the data bus width;
//! * a WRAP burst starts at an address aligned to its beat size;
//! * an INCR burst does not cross a 4 KiB boundary (nor does a FIXED one, trivially; a WRAP burst
//!   stays inside its own aligned window, at most 16 × 128 bytes);
//! * an exclusive access moves 1 to 128 bytes, a power of two, in at most 16 beats, from an
//!   address aligned to that total;
//! * an AXI5 atomic is not exclusive, moves 1, 2, 4 or 8 bytes out (AtomicCompare 2, 4, 8, 16 or
//!   32, half of them compare data) from an address aligned to that size (AtomicCompare: to half
//!   of it, the size of one operand), uses the full bus width for every beat when it takes more
//!   than one, and is INCR — except an AtomicCompare whose address is not aligned to its total
//!   (it names the second operand), which is WRAP, possibly of one beat (the rule of IHI0022 as
//!   PULP's AXI test generator and Thales's AXI assertions both implement it).
//!
//! The IDs and USER bits are implementation widths: this module keeps them in `u32` and `u64`,
//! and the PAXI flit codec checks them against its configured widths.

use bitflags::bitflags;

/// Why a transaction or a field is not legal AXI. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AxiError {
    /// AxBURST 0b11 is reserved.
    ReservedBurst,
    /// AxSIZE above 7 (more than 128 bytes per beat) cannot be encoded.
    BadSize {
        /// The size code given.
        code: u8,
    },
    /// The beat count is outside what the burst type allows.
    BadLength {
        /// The burst type.
        burst: Burst,
        /// Beats.
        beats: u16,
    },
    /// More bytes per beat than the data bus carries.
    SizeExceedsBus {
        /// Bytes per beat.
        size_bytes: u16,
        /// Bytes of the data bus.
        bus_bytes: u16,
    },
    /// A WRAP burst must start at an address aligned to its beat size.
    WrapUnaligned {
        /// The start address.
        addr: u64,
    },
    /// An INCR burst crosses a 4 KiB boundary.
    Crosses4KiB {
        /// The first byte's address.
        first: u64,
        /// The last byte's address.
        last: u64,
    },
    /// The burst runs past the top of the 64-bit address space.
    AddressOverflow,
    /// An exclusive access breaks a rule of exclusive accesses.
    Exclusive(ExclusiveRule),
    /// An atomic transaction breaks a rule of atomics.
    Atomic(AtomicRule),
    /// An AWATOP code with no meaning (reserved).
    ReservedAtop {
        /// The 6-bit code.
        code: u8,
    },
    /// Write strobes set outside the byte lanes a beat may use.
    StrobesOutsideLanes {
        /// The beat (0-based).
        beat: u16,
    },
}

/// The exclusive-access rule a transaction broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ExclusiveRule {
    /// The total is not a power of two from 1 to 128 bytes.
    TotalBytes,
    /// More than 16 beats.
    TooManyBeats,
    /// The address is not aligned to the total bytes.
    Unaligned,
}

/// The atomic-transaction rule a transaction broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AtomicRule {
    /// An atomic on the read address channel, which carries none.
    OnReadChannel,
    /// Atomics are not exclusive.
    Exclusive,
    /// The burst type is not the one the address calls for (INCR; an AtomicCompare at its
    /// second operand, WRAP).
    Burst,
    /// A multi-beat atomic whose beats are narrower than the bus.
    NarrowBeats,
    /// The outbound data size is not one the operation allows.
    DataSize,
    /// The address is not aligned to the operand size.
    Unaligned,
}

impl core::fmt::Display for AxiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AxiError::ReservedBurst => write!(f, "AxBURST 0b11 is reserved"),
            AxiError::BadSize { code } => write!(f, "AxSIZE {code} is not encodable"),
            AxiError::BadLength { burst, beats } => write!(f, "{beats} beats is not a legal {burst:?} burst"),
            AxiError::SizeExceedsBus { size_bytes, bus_bytes } => {
                write!(f, "{size_bytes} bytes per beat on a {bus_bytes}-byte bus")
            }
            AxiError::WrapUnaligned { addr } => write!(f, "WRAP burst at {addr:#x} not aligned to its size"),
            AxiError::Crosses4KiB { first, last } => write!(f, "burst {first:#x}..={last:#x} crosses 4 KiB"),
            AxiError::AddressOverflow => write!(f, "burst runs past the top of the address space"),
            AxiError::Exclusive(r) => write!(f, "exclusive access: {r:?}"),
            AxiError::Atomic(r) => write!(f, "atomic: {r:?}"),
            AxiError::ReservedAtop { code } => write!(f, "AWATOP {code:#04x} is reserved"),
            AxiError::StrobesOutsideLanes { beat } => write!(f, "beat {beat} strobes lanes it may not use"),
        }
    }
}

impl core::error::Error for AxiError {}

/// AxBURST.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Burst {
    /// Every beat at the same address (a FIFO).
    Fixed,
    /// Each beat at the next address.
    Incr,
    /// Incrementing within an aligned window of `beats × size` bytes, wrapping at its end.
    Wrap,
}

impl Burst {
    /// The 2-bit code.
    pub const fn bits(self) -> u8 {
        match self {
            Burst::Fixed => 0b00,
            Burst::Incr => 0b01,
            Burst::Wrap => 0b10,
        }
    }

    /// From the 2-bit code (higher bits ignored); 0b11 is reserved.
    pub const fn from_bits(bits: u8) -> Result<Self, AxiError> {
        match bits & 0b11 {
            0b00 => Ok(Burst::Fixed),
            0b01 => Ok(Burst::Incr),
            0b10 => Ok(Burst::Wrap),
            _ => Err(AxiError::ReservedBurst),
        }
    }
}

/// AxSIZE: bytes per beat, a power of two from 1 to 128.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Size(u8);

impl Size {
    /// One byte per beat (code 0).
    pub const ONE_BYTE: Size = Size(0);

    /// The size with code `code` (2^code bytes per beat), 0 to 7.
    pub const fn from_bits(code: u8) -> Result<Self, AxiError> {
        if code <= 7 { Ok(Size(code)) } else { Err(AxiError::BadSize { code }) }
    }

    /// The size of `bytes` bytes per beat, if that is a power of two from 1 to 128.
    pub const fn from_bytes(bytes: u16) -> Option<Self> {
        if bytes.is_power_of_two() && bytes <= 128 { Some(Size(bytes.trailing_zeros() as u8)) } else { None }
    }

    /// The 3-bit code.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Bytes per beat.
    pub const fn bytes(self) -> u16 {
        1 << self.0
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Size {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Size(u.int_in_range(0..=7)?))
    }
}

bitflags! {
    /// AxCACHE.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Cache: u8 {
        /// Bufferable.
        const BUFFERABLE = 0b0001;
        /// Modifiable (AXI3: cacheable).
        const MODIFIABLE = 0b0010;
        /// Read-allocate (AxCACHE\[2\]).
        const READ_ALLOCATE = 0b0100;
        /// Write-allocate (AxCACHE\[3\]).
        const WRITE_ALLOCATE = 0b1000;
    }
}

bitflags! {
    /// AxPROT.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Prot: u8 {
        /// Privileged access.
        const PRIVILEGED = 0b001;
        /// Non-secure access.
        const NON_SECURE = 0b010;
        /// Instruction access (else data).
        const INSTRUCTION = 0b100;
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Cache {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Cache({=u8:#x})", self.bits());
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Prot {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Prot({=u8:#x})", self.bits());
    }
}

/// BRESP and RRESP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Resp {
    /// Normal access success (an exclusive access that failed, too).
    Okay,
    /// Exclusive access success.
    ExOkay,
    /// Subordinate error.
    SlvErr,
    /// Decode error: no subordinate at the address.
    DecErr,
}

impl Resp {
    /// The 2-bit code.
    pub const fn bits(self) -> u8 {
        match self {
            Resp::Okay => 0b00,
            Resp::ExOkay => 0b01,
            Resp::SlvErr => 0b10,
            Resp::DecErr => 0b11,
        }
    }

    /// From the 2-bit code (higher bits ignored).
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0b00 => Resp::Okay,
            0b01 => Resp::ExOkay,
            0b10 => Resp::SlvErr,
            _ => Resp::DecErr,
        }
    }
}

/// The arithmetic of an AtomicStore or AtomicLoad (AWATOP\[2:0\]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AtomicOp {
    /// Add.
    Add,
    /// Bit clear.
    Clr,
    /// Exclusive or.
    Eor,
    /// Bit set.
    Set,
    /// Signed maximum.
    Smax,
    /// Signed minimum.
    Smin,
    /// Unsigned maximum.
    Umax,
    /// Unsigned minimum.
    Umin,
}

impl AtomicOp {
    /// The 3-bit code (AWATOP\[2:0\]).
    pub const fn bits(self) -> u8 {
        match self {
            AtomicOp::Add => 0b000,
            AtomicOp::Clr => 0b001,
            AtomicOp::Eor => 0b010,
            AtomicOp::Set => 0b011,
            AtomicOp::Smax => 0b100,
            AtomicOp::Smin => 0b101,
            AtomicOp::Umax => 0b110,
            AtomicOp::Umin => 0b111,
        }
    }

    /// From the 3-bit code (higher bits ignored).
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0b111 {
            0b000 => AtomicOp::Add,
            0b001 => AtomicOp::Clr,
            0b010 => AtomicOp::Eor,
            0b011 => AtomicOp::Set,
            0b100 => AtomicOp::Smax,
            0b101 => AtomicOp::Smin,
            0b110 => AtomicOp::Umax,
            _ => AtomicOp::Umin,
        }
    }
}

/// AWATOP (AXI5): whether and how a write is atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Atop {
    /// Not atomic (0b000000).
    NonAtomic,
    /// AtomicStore: the operation at the target, no data back (a write response only).
    Store {
        /// The operation.
        op: AtomicOp,
        /// Big-endian operands (AWATOP\[3\]).
        big_endian: bool,
    },
    /// AtomicLoad: the operation at the target, the original value returned as read data.
    Load {
        /// The operation.
        op: AtomicOp,
        /// Big-endian operands (AWATOP\[3\]).
        big_endian: bool,
    },
    /// AtomicSwap (0b110000).
    Swap,
    /// AtomicCompare (0b110001): compare and swap.
    Compare,
}

impl Atop {
    /// The 6-bit code.
    pub const fn bits(self) -> u8 {
        match self {
            Atop::NonAtomic => 0,
            Atop::Store { op, big_endian } => 0b01_0000 | (big_endian as u8) << 3 | op.bits(),
            Atop::Load { op, big_endian } => 0b10_0000 | (big_endian as u8) << 3 | op.bits(),
            Atop::Swap => 0b11_0000,
            Atop::Compare => 0b11_0001,
        }
    }

    /// From the 6-bit code (higher bits ignored). Codes with `[5:4]` 00 other than 0, and with
    /// `[5:4]` 11 other than Swap and Compare, are reserved.
    pub const fn from_bits(bits: u8) -> Result<Self, AxiError> {
        let code = bits & 0x3F;
        let op = AtomicOp::from_bits(code);
        let big_endian = code & 0b1000 != 0;
        match code >> 4 {
            0b00 if code == 0 => Ok(Atop::NonAtomic),
            0b01 => Ok(Atop::Store { op, big_endian }),
            0b10 => Ok(Atop::Load { op, big_endian }),
            0b11 if code == 0b11_0000 => Ok(Atop::Swap),
            0b11 if code == 0b11_0001 => Ok(Atop::Compare),
            _ => Err(AxiError::ReservedAtop { code }),
        }
    }

    /// Whether the target returns read data (AtomicLoad, Swap, Compare: AWATOP\[5\] set).
    pub const fn returns_data(self) -> bool {
        matches!(self, Atop::Load { .. } | Atop::Swap | Atop::Compare)
    }
}

/// Which address channel a request travels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Channel {
    /// AW: a write (with its W beats).
    Write,
    /// AR: a read (answered by R beats).
    Read,
}

/// An AW or AR request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AddrReq {
    /// AW or AR.
    pub channel: Channel,
    /// AxID.
    pub id: u32,
    /// AxADDR: the first beat's byte address (it may be unaligned for FIXED and INCR).
    pub addr: u64,
    /// Beats (AxLEN + 1): 1 to 256.
    pub beats: u16,
    /// AxSIZE.
    pub size: Size,
    /// AxBURST.
    pub burst: Burst,
    /// AxLOCK: an exclusive access.
    pub exclusive: bool,
    /// AxCACHE.
    pub cache: Cache,
    /// AxPROT.
    pub prot: Prot,
    /// AxQOS (4 bits).
    pub qos: u8,
    /// AxREGION (4 bits).
    pub region: u8,
    /// AWATOP (AW only; [`Atop::NonAtomic`] on AR).
    pub atop: Atop,
    /// AxUSER.
    pub user: u64,
}

impl AddrReq {
    /// A plain INCR request of `beats` beats of `size` from `addr`, ID 0, every other field zero.
    pub const fn incr(channel: Channel, addr: u64, beats: u16, size: Size) -> Self {
        AddrReq {
            channel,
            id: 0,
            addr,
            beats,
            size,
            burst: Burst::Incr,
            exclusive: false,
            cache: Cache::empty(),
            prot: Prot::empty(),
            qos: 0,
            region: 0,
            atop: Atop::NonAtomic,
            user: 0,
        }
    }

    /// AxLEN: beats − 1 (0 for an illegal beat count of 0).
    pub const fn len_field(&self) -> u8 {
        let l = self.beats.saturating_sub(1);
        if l > 255 { 255 } else { l as u8 }
    }

    /// The bytes the burst moves: beats × bytes per beat (for an unaligned first beat of an
    /// INCR or FIXED burst, the lanes below the address carry nothing).
    pub const fn total_bytes(&self) -> u32 {
        self.beats as u32 * self.size.bytes() as u32
    }

    /// The address of beat `k` (0-based): the start for beat 0 and every FIXED beat; for INCR
    /// each later beat at the next size-aligned address; for WRAP likewise within the aligned
    /// window of `beats × size` bytes. `None` past the top of the address space.
    pub const fn beat_addr(&self, k: u16) -> Option<u64> {
        let size = self.size.bytes() as u64;
        let aligned = self.addr & !(size - 1);
        if k == 0 {
            return Some(self.addr);
        }
        match self.burst {
            Burst::Fixed => Some(self.addr),
            Burst::Incr => match (k as u64).checked_mul(size) {
                Some(off) => aligned.checked_add(off),
                None => None,
            },
            Burst::Wrap => {
                let window = self.beats as u64 * size;
                if window == 0 {
                    return Some(self.addr);
                }
                let base = aligned - rem(aligned, window);
                let off = rem(aligned - base + k as u64 * size, window);
                base.checked_add(off)
            }
        }
    }

    /// The byte lanes beat `k` may use on a bus of `bus_bytes` bytes: a bit mask, bit `i` for
    /// lane `i` (the lanes of the beat's address within the bus word, from the address up to the
    /// end of its size-aligned container; a WRAP beat's whole container). Buses up to 128 bytes
    /// (a width of 0 or above 128 counts as 128; a bus of another width than a power of two, or a
    /// beat past the burst's end, gets lanes by the same arithmetic).
    pub const fn lanes(&self, k: u16, bus_bytes: u16) -> u128 {
        let Some(addr) = self.beat_addr(k) else { return 0 };
        let size = self.size.bytes() as u64;
        let bus = if bus_bytes == 0 || bus_bytes > 128 { 128 } else { bus_bytes as u64 };
        // A WRAP beat fills its whole size-aligned container (an AtomicCompare at its second
        // operand starts mid-container, but carries both operands).
        let start = if matches!(self.burst, Burst::Wrap) { addr & !(size - 1) } else { addr };
        let lo = rem(start, bus);
        let hi = rem(addr & !(size - 1), bus) + size;
        if hi <= lo || hi > 128 {
            return 0;
        }
        let upto = if hi == 128 { u128::MAX } else { (1u128 << hi) - 1 };
        upto & !((1u128 << lo) - 1)
    }

    /// Checks every rule of the module doc for a data bus of `bus_bytes` bytes.
    pub const fn validate(&self, bus_bytes: u16) -> Result<(), AxiError> {
        let beats = self.beats;
        // An AtomicCompare's WRAP follows its own rules (see `validate_atomic`): it may be one
        // beat, starting at the second operand.
        let compare_wrap = matches!(self.atop, Atop::Compare) && matches!(self.burst, Burst::Wrap);
        let ok_len = match self.burst {
            Burst::Incr => beats >= 1 && beats <= 256,
            Burst::Fixed => beats >= 1 && beats <= 16,
            Burst::Wrap if compare_wrap => beats >= 1 && beats <= 16,
            Burst::Wrap => matches!(beats, 2 | 4 | 8 | 16),
        };
        if !ok_len {
            return Err(AxiError::BadLength { burst: self.burst, beats });
        }
        let size = self.size.bytes();
        if size > bus_bytes {
            return Err(AxiError::SizeExceedsBus { size_bytes: size, bus_bytes });
        }
        let size64 = size as u64;
        match self.burst {
            Burst::Wrap if !compare_wrap && rem(self.addr, size64) != 0 => {
                return Err(AxiError::WrapUnaligned { addr: self.addr });
            }
            Burst::Incr => {
                let Some(last_beat) = self.beat_addr(beats - 1) else { return Err(AxiError::AddressOverflow) };
                // The last byte: the end of the last beat's size-aligned container.
                let last = last_beat | (size64 - 1);
                if last >> 12 != self.addr >> 12 {
                    return Err(AxiError::Crosses4KiB { first: self.addr, last });
                }
            }
            _ => {}
        }
        if self.exclusive {
            let total = self.total_bytes();
            if !total.is_power_of_two() || total > 128 {
                return Err(AxiError::Exclusive(ExclusiveRule::TotalBytes));
            }
            if beats > 16 {
                return Err(AxiError::Exclusive(ExclusiveRule::TooManyBeats));
            }
            if rem(self.addr, total as u64) != 0 {
                return Err(AxiError::Exclusive(ExclusiveRule::Unaligned));
            }
        }
        if !matches!(self.atop, Atop::NonAtomic) {
            return self.validate_atomic(bus_bytes);
        }
        Ok(())
    }

    const fn validate_atomic(&self, bus_bytes: u16) -> Result<(), AxiError> {
        if matches!(self.channel, Channel::Read) {
            return Err(AxiError::Atomic(AtomicRule::OnReadChannel));
        }
        if self.exclusive {
            return Err(AxiError::Atomic(AtomicRule::Exclusive));
        }
        let compare = matches!(self.atop, Atop::Compare);
        let total = self.total_bytes();
        let size_ok = if compare { matches!(total, 2 | 4 | 8 | 16 | 32) } else { matches!(total, 1 | 2 | 4 | 8) };
        if !size_ok {
            return Err(AxiError::Atomic(AtomicRule::DataSize));
        }
        // More than one beat: every beat the full bus width.
        if self.beats > 1 && self.size.bytes() != bus_bytes {
            return Err(AxiError::Atomic(AtomicRule::NarrowBeats));
        }
        let operand = if compare { total / 2 } else { total };
        if rem(self.addr, operand as u64) != 0 {
            return Err(AxiError::Atomic(AtomicRule::Unaligned));
        }
        // INCR, except an AtomicCompare whose address is not aligned to its total (it names the
        // second operand): WRAP, and only then.
        let wrap_needed = compare && rem(self.addr, total as u64) != 0;
        let want = if wrap_needed { Burst::Wrap } else { Burst::Incr };
        if self.burst as u8 != want as u8 {
            return Err(AxiError::Atomic(AtomicRule::Burst));
        }
        Ok(())
    }

    /// Checks the write strobes of beat `k` (bit `i` for byte lane `i` of a `bus_bytes` bus):
    /// no strobe outside the lanes the beat may use ([`AddrReq::lanes`]). A beat may strobe
    /// fewer lanes, or none.
    pub const fn check_strobes(&self, k: u16, bus_bytes: u16, strobes: u128) -> Result<(), AxiError> {
        if strobes & !self.lanes(k, bus_bytes) != 0 {
            return Err(AxiError::StrobesOutsideLanes { beat: k });
        }
        Ok(())
    }
}

/// `x mod m` (`m` > 0): a mask for the powers of two AXI sizes, windows and buses are, a division
/// for anything else.
const fn rem(x: u64, m: u64) -> u64 {
    if m.is_power_of_two() { x & (m - 1) } else { x % m }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for AddrReq {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(AddrReq {
            channel: u.arbitrary()?,
            id: u.arbitrary()?,
            addr: u.arbitrary()?,
            beats: u.int_in_range(0..=300)?,
            size: u.arbitrary()?,
            burst: u.arbitrary()?,
            exclusive: u.arbitrary()?,
            cache: Cache::from_bits_truncate(u.arbitrary()?),
            prot: Prot::from_bits_truncate(u.arbitrary()?),
            qos: u.int_in_range(0..=15)?,
            region: u.int_in_range(0..=15)?,
            atop: u.arbitrary()?,
            user: u.arbitrary()?,
        })
    }
}

/// A B (write response) beat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct WriteResp {
    /// BID.
    pub id: u32,
    /// BRESP.
    pub resp: Resp,
    /// BUSER.
    pub user: u64,
}

/// An R (read data) beat's control fields (its data travels beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ReadBeat {
    /// RID.
    pub id: u32,
    /// RRESP.
    pub resp: Resp,
    /// RLAST.
    pub last: bool,
    /// RUSER.
    pub user: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn size(bytes: u16) -> Size {
        Size::from_bytes(bytes).unwrap()
    }

    #[test]
    fn encodings_round_trip() {
        for b in 0..4u8 {
            match Burst::from_bits(b) {
                Ok(burst) => assert_eq!(burst.bits(), b),
                Err(e) => assert_eq!((b, e), (3, AxiError::ReservedBurst)),
            }
        }
        for r in 0..4u8 {
            assert_eq!(Resp::from_bits(r).bits(), r);
        }
        let mut valid = 0;
        for code in 0..64u8 {
            if let Ok(a) = Atop::from_bits(code) {
                assert_eq!(a.bits(), code);
                valid += 1;
            }
        }
        // Non-atomic, 16 stores, 16 loads, swap, compare.
        assert_eq!(valid, 1 + 16 + 16 + 2);
        assert_eq!(Atop::from_bits(0b01_1101), Ok(Atop::Store { op: AtomicOp::Smin, big_endian: true }));
        assert_eq!(Atop::from_bits(0b00_0001), Err(AxiError::ReservedAtop { code: 1 }));
        assert!(Atop::Swap.returns_data() && !Atop::Store { op: AtomicOp::Add, big_endian: false }.returns_data());
        assert_eq!(Size::from_bits(8), Err(AxiError::BadSize { code: 8 }));
        assert_eq!(size(64).bits(), 6);
        assert_eq!(Size::from_bytes(3), None);
    }

    #[test]
    fn burst_lengths_and_sizes() {
        let r = AddrReq::incr(Channel::Read, 0, 256, size(4));
        assert_eq!((r.validate(64), r.len_field()), (Ok(()), 255));
        assert_eq!(AddrReq { beats: 0, ..r }.validate(64), Err(AxiError::BadLength { burst: Burst::Incr, beats: 0 }));
        assert!(AddrReq { beats: 257, ..r }.validate(64).is_err());
        let fixed = AddrReq { burst: Burst::Fixed, beats: 17, ..r };
        assert_eq!(fixed.validate(64), Err(AxiError::BadLength { burst: Burst::Fixed, beats: 17 }));
        for beats in 1..=20u16 {
            let w = AddrReq { burst: Burst::Wrap, beats, ..r };
            assert_eq!(w.validate(64).is_ok(), matches!(beats, 2 | 4 | 8 | 16), "{beats}");
        }
        let wide = AddrReq::incr(Channel::Write, 0, 1, size(128));
        assert_eq!(wide.validate(64), Err(AxiError::SizeExceedsBus { size_bytes: 128, bus_bytes: 64 }));
    }

    #[test]
    fn four_kib_boundary() {
        // 16 beats of 16 B from 0xF00 end at 0xFFF: inside; from 0xF10 they cross.
        let a = AddrReq::incr(Channel::Write, 0xF00, 16, size(16));
        assert_eq!(a.validate(64), Ok(()));
        let b = AddrReq { addr: 0xF10, ..a };
        assert_eq!(b.validate(64), Err(AxiError::Crosses4KiB { first: 0xF10, last: 0x100F }));
        // An unaligned start: the first beat is partial, the rest aligned.
        let c = AddrReq::incr(Channel::Read, 0xFF3, 2, size(4));
        assert_eq!((c.beat_addr(0), c.beat_addr(1)), (Some(0xFF3), Some(0xFF4)));
        assert_eq!(c.validate(64), Ok(()));
        assert_eq!(AddrReq { addr: u64::MAX - 1, ..c }.validate(64), Err(AxiError::AddressOverflow));
    }

    #[test]
    fn wrap_addresses() {
        // 4 beats of 4 B from 0x18: window 0x10..0x20, beats 0x18, 0x1C, 0x10, 0x14.
        let w = AddrReq { burst: Burst::Wrap, ..AddrReq::incr(Channel::Read, 0x18, 4, size(4)) };
        let addrs: std::vec::Vec<u64> = (0..4).map(|k| w.beat_addr(k).unwrap()).collect();
        assert_eq!(addrs, [0x18, 0x1C, 0x10, 0x14]);
        assert_eq!(AddrReq { addr: 0x19, ..w }.validate(64), Err(AxiError::WrapUnaligned { addr: 0x19 }));
    }

    #[test]
    fn exclusive_and_atomic_rules() {
        let ex = AddrReq { exclusive: true, ..AddrReq::incr(Channel::Read, 0x40, 4, size(16)) };
        assert_eq!(ex.validate(64), Ok(()));
        assert_eq!(AddrReq { addr: 0x20, ..ex }.validate(64), Err(AxiError::Exclusive(ExclusiveRule::Unaligned)));
        assert_eq!(AddrReq { beats: 3, ..ex }.validate(64), Err(AxiError::Exclusive(ExclusiveRule::TotalBytes)));
        let big = AddrReq { beats: 16, size: size(16), addr: 0, ..ex };
        assert_eq!(big.validate(64), Err(AxiError::Exclusive(ExclusiveRule::TotalBytes)));
        let add = Atop::Load { op: AtomicOp::Add, big_endian: false };
        let at = AddrReq { atop: add, ..AddrReq::incr(Channel::Write, 0x08, 1, size(8)) };
        assert_eq!(at.validate(64), Ok(()));
        assert_eq!(AddrReq { addr: 0x04, ..at }.validate(64), Err(AxiError::Atomic(AtomicRule::Unaligned)));
        assert_eq!(AddrReq { size: size(16), ..at }.validate(64), Err(AxiError::Atomic(AtomicRule::DataSize)));
        assert_eq!(
            AddrReq { channel: Channel::Read, ..at }.validate(64),
            Err(AxiError::Atomic(AtomicRule::OnReadChannel))
        );
        assert_eq!(AddrReq { exclusive: true, ..at }.validate(64), Err(AxiError::Atomic(AtomicRule::Exclusive)));
        // AtomicCompare of 32 B (two 16-byte operands) on a 16-byte bus: at 0x10, the second
        // operand, it is WRAP; at 0x20 INCR; narrow beats on a wider bus are refused.
        let cmp =
            AddrReq { atop: Atop::Compare, burst: Burst::Wrap, ..AddrReq::incr(Channel::Write, 0x10, 2, size(16)) };
        assert_eq!(cmp.validate(16), Ok(()));
        assert_eq!(cmp.validate(64), Err(AxiError::Atomic(AtomicRule::NarrowBeats)));
        assert_eq!(AddrReq { burst: Burst::Incr, ..cmp }.validate(16), Err(AxiError::Atomic(AtomicRule::Burst)));
        let aligned = AddrReq { addr: 0x20, burst: Burst::Incr, ..cmp };
        assert_eq!(aligned.validate(16), Ok(()));
        assert_eq!(AddrReq { burst: Burst::Wrap, ..aligned }.validate(16), Err(AxiError::Atomic(AtomicRule::Burst)));
        // A one-beat AtomicCompare of 8 B at its second operand (0x44): a one-beat WRAP.
        let one =
            AddrReq { atop: Atop::Compare, burst: Burst::Wrap, ..AddrReq::incr(Channel::Write, 0x44, 1, size(8)) };
        assert_eq!(one.validate(64), Ok(()));
        assert_eq!((one.beat_addr(0), one.lanes(0, 64)), (Some(0x44), 0xFF));
        // WRAP arithmetic near the top of the address space is checked, never wraps.
        let top = AddrReq { burst: Burst::Wrap, ..AddrReq::incr(Channel::Read, u64::MAX, 3, size(1)) };
        assert_eq!(top.beat_addr(1), None);
        let _ = (top.lanes(1, 64), top.check_strobes(1, 64, 1), top.validate(64));
        let fixed = AddrReq { burst: Burst::Fixed, ..at };
        assert_eq!(fixed.validate(64), Err(AxiError::Atomic(AtomicRule::Burst)));
    }

    #[test]
    fn strobe_lanes() {
        // A 4-byte beat at 0x102 on an 8-byte bus uses lanes 2 and 3 (up to the end of its
        // 4-byte container); the next beat at 0x104, lanes 4 to 7.
        let r = AddrReq::incr(Channel::Write, 0x102, 2, size(4));
        assert_eq!(r.lanes(0, 8), 0b0000_1100);
        assert_eq!(r.lanes(1, 8), 0b1111_0000);
        assert_eq!(r.check_strobes(0, 8, 0b0000_0100), Ok(()));
        assert_eq!(r.check_strobes(0, 8, 0b0000_0001), Err(AxiError::StrobesOutsideLanes { beat: 0 }));
        let full = AddrReq::incr(Channel::Write, 0, 1, size(128));
        assert_eq!(full.lanes(0, 128), u128::MAX);
    }

    proptest! {
        /// A valid INCR burst's beats are in order, aligned after the first, and inside one 4 KiB
        /// page; a valid WRAP burst's beats are distinct and inside its window.
        #[test]
        fn valid_bursts_stay_in_bounds(addr in 0u64..1 << 20, beats in 1u16..=256, code in 0u8..=6, wrap: bool) {
            let burst = if wrap { Burst::Wrap } else { Burst::Incr };
            let r = AddrReq { burst, ..AddrReq::incr(Channel::Read, addr, beats, Size::from_bits(code).unwrap()) };
            if r.validate(64).is_ok() {
                let size = u64::from(r.size.bytes());
                let addrs: std::vec::Vec<u64> = (0..beats).map(|k| r.beat_addr(k).unwrap()).collect();
                for (k, &a) in addrs.iter().enumerate() {
                    prop_assert_eq!(a >> 12, addr >> 12);
                    if k > 0 { prop_assert_eq!(a % size, 0); }
                    prop_assert!(r.lanes(k as u16, 64) != 0);
                }
                let mut sorted = addrs.clone();
                sorted.sort_unstable();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), addrs.len());
                if !wrap { prop_assert!(addrs.windows(2).all(|w| w[0] < w[1])); }
            }
        }
    }
}
