//! UPLI, the protocol-level interface (UALink 1.0 §2.7):
//! the records an accelerator exchanges with its TL on the four channels.
//!
//! Source: chapter 2 of the UALink_200 Rev 1.0 Specification, in the public GitHub repository
//! `VarunMusham/UALink-Docs`, file
//! `Chapters/2_UPLI_Interface_Definition_and_Operation_Rules.pdf`.
//!
//! | channel | record | direction |
//! |---|---|---|
//! | Request (Table 2-2) | [`Request`] | originator → completer |
//! | Originator Data (Table 2-14) | [`OrigDataBeat`] | originator → completer |
//! | Read Response/Data (Table 2-8) | [`ReadResponse`] + [`ReadDataBeat`] | completer → originator |
//! | Write Response (Table 2-11) | [`WriteResponse`] | completer → originator |
//!
//! Signals that never cross the link are left out: `*Vld`, `*PortID` (a link-local TDM slot,
//! regenerated on ingress), the parity bits and the credit-return wires (credits travel in TL
//! flow-control fields, see [`crate::tl::credit`]).
//!
//! Each record's `check` applies the rules of §2.7 and §2.8 that the fields alone can decide: field
//! widths, DWord alignment, the 256-byte boundary, the beat count a transfer needs, the WriteFull
//! and atomic shapes, the defined command, status and write-message codes.
//!
//! *Project-defined*:
//! * Atomic OpType values: [`AtomicOp`], the AXI ATOP operations numbered 0..=9, other values kept
//!   as [`AtomicOp::Other`].
//! * An unsupported atomic is answered with [`Status::TargetAbort`] (the text's "SLVERR" has no
//!   UALink code).
//! * All four OpSize codes are accepted; [`Request::check`] holds an atomic's address and length
//!   to its element (§2.8); which element sizes an operation supports is the completer's.
//! * A UPLI Write Message has no byte-enable half-flit.
//! * A command without data carries NumBeats = 0, and a multi-beat read response is one record
//!   with Offset = 0 and Last = 1.
//! * A vendor-defined Write Message type is answered on the write channel, a vendor atomic on the
//!   read channel.

use crate::Error;

/// Bytes in one UPLI data beat.
pub const BEAT_LEN: usize = 64;
/// Largest transfer: 256 bytes, never crossing a 256-byte boundary (§2.7.4).
pub const MAX_TRANSFER: u64 = 256;

fn check_width(v: u64, bits: u32, field: &'static str) -> Result<(), Error> {
    crate::error::fits(v, bits, field).map(|_| ())
}

/// Request commands (ReqCmd, Table 2-6). Bit 5 set means data follows on OrigData.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
// Read at tag 0, so a free request slot is all-zero bytes (an engine's empty value can live in
// `.bss`); without it the compiler keeps Read in a spare value of a vendor variant's field.
#[repr(u8)]
pub enum Command {
    /// 0x03: read.
    Read,
    /// 0x08..=0x0F: vendor-defined read class (the low three bits).
    VendorRead(u8),
    /// 0x28: write with byte enables.
    Write,
    /// 0x29: full write (all bytes enabled, 64-byte aligned, whole beats).
    WriteFull,
    /// 0x2A: UPLI Write Message (the message type is in ReqMetaData).
    WriteMessage,
    /// 0x2C..=0x2F: vendor-defined write class (the low two bits).
    VendorWrite(u8),
    /// 0x30: atomic returning data on the read-response channel.
    AtomicR,
    /// 0x32: atomic without returned data.
    AtomicNR,
    /// 0x3C..=0x3F: vendor-defined atomic class (the low two bits).
    VendorAtomic(u8),
}

impl Command {
    /// The 6-bit code.
    #[inline(always)]
    pub const fn code(self) -> u8 {
        match self {
            Command::Read => 0x03,
            Command::VendorRead(v) => 0x08 | (v & 0x7),
            Command::Write => 0x28,
            Command::WriteFull => 0x29,
            Command::WriteMessage => 0x2A,
            Command::VendorWrite(v) => 0x2C | (v & 0x3),
            Command::AtomicR => 0x30,
            Command::AtomicNR => 0x32,
            Command::VendorAtomic(v) => 0x3C | (v & 0x3),
        }
    }

    /// Whether this is the command its code reads back as: a vendor number fits its bits (3 for
    /// reads, 2 for writes and atomics). Any other would be sent as a different command.
    pub const fn is_canonical(self) -> bool {
        match self {
            Command::VendorRead(v) => v <= 0x7,
            Command::VendorWrite(v) | Command::VendorAtomic(v) => v <= 0x3,
            _ => true,
        }
    }

    /// The command for a 6-bit code; reserved codes are refused.
    pub const fn from_code(c: u8) -> Result<Self, Error> {
        Ok(match c {
            0x03 => Command::Read,
            0x08..=0x0F => Command::VendorRead(c & 0x7),
            0x28 => Command::Write,
            0x29 => Command::WriteFull,
            0x2A => Command::WriteMessage,
            0x2C..=0x2F => Command::VendorWrite(c & 0x3),
            0x30 => Command::AtomicR,
            0x32 => Command::AtomicNR,
            0x3C..=0x3F => Command::VendorAtomic(c & 0x3),
            _ => return Err(Error::BadValue { field: "ReqCmd", value: c as u32 }),
        })
    }

    /// Whether data beats follow on the OrigData channel (ReqCmd\[5\]).
    #[inline(always)]
    pub const fn has_data(self) -> bool {
        self.code() & 0x20 != 0
    }

    /// Whether a byte-enable half-flit follows the data on the TL (§5.1.1): writes, atomics and
    /// vendor commands with data; not WriteFull, not a Write Message.
    pub const fn has_byte_enables(self) -> bool {
        self.has_data() && !matches!(self, Command::WriteFull | Command::WriteMessage)
    }

    /// Whether this is an atomic (AtomicR, AtomicNR or a vendor atomic).
    pub const fn is_atomic(self) -> bool {
        matches!(self, Command::AtomicR | Command::AtomicNR | Command::VendorAtomic(_))
    }

    /// Whether this is a vendor-defined command (§2.8: its ReqAddr, ReqLen, ReqAttr and
    /// ReqMetaData are vendor-defined, and ReqNumBeats alone sets its data beats).
    pub const fn is_vendor(self) -> bool {
        matches!(self, Command::VendorRead(_) | Command::VendorWrite(_) | Command::VendorAtomic(_))
    }

    /// Whether ReqNumBeats is valid for this command (Table 2-2): commands with data
    /// (ReqCmd\[5\] = 1) and read-class vendor-defined commands; the others drive it to 0.
    pub const fn num_beats_valid(self) -> bool {
        num_beats_valid(self.code())
    }
}

/// [`Command::num_beats_valid`] for a raw ReqCmd code (the TL decoder's view of a field).
pub const fn num_beats_valid(code: u8) -> bool {
    code & 0x20 != 0 || code & 0x38 == 0x08
}

/// Atomic operation sizes (ReqAttr\[3:2\], Table 2-5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum OpSize {
    /// 00: 32 bits.
    Bits32,
    /// 01: 64 bits.
    Bits64,
    /// 10: 16 bits.
    Bits16,
    /// 11: 8 bits.
    Bits8,
}

impl OpSize {
    /// Element size in bytes.
    pub const fn bytes(self) -> u8 {
        match self {
            OpSize::Bits32 => 4,
            OpSize::Bits64 => 8,
            OpSize::Bits16 => 2,
            OpSize::Bits8 => 1,
        }
    }
}

/// Atomic operations. *Project-defined*: UALink leaves OpType\[4:0\] to the
/// implementation; these are the AXI ATOP operations, so PAXI/AXI bridges map one to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum AtomicOp {
    /// 0: add.
    Add,
    /// 1: bit clear.
    Clear,
    /// 2: exclusive or.
    Xor,
    /// 3: bit set.
    Set,
    /// 4: signed maximum.
    SignedMax,
    /// 5: signed minimum.
    SignedMin,
    /// 6: unsigned maximum.
    UnsignedMax,
    /// 7: unsigned minimum.
    UnsignedMin,
    /// 8: swap.
    Swap,
    /// 9: compare and swap (two operands).
    Compare,
    /// 10..=31: not assigned here, carried through (5 bits).
    Other(u8),
}

impl AtomicOp {
    /// The 5-bit OpType.
    pub const fn code(self) -> u8 {
        match self {
            AtomicOp::Add => 0,
            AtomicOp::Clear => 1,
            AtomicOp::Xor => 2,
            AtomicOp::Set => 3,
            AtomicOp::SignedMax => 4,
            AtomicOp::SignedMin => 5,
            AtomicOp::UnsignedMax => 6,
            AtomicOp::UnsignedMin => 7,
            AtomicOp::Swap => 8,
            AtomicOp::Compare => 9,
            AtomicOp::Other(v) => v & 0x1F,
        }
    }

    /// The operation for a 5-bit OpType.
    pub const fn from_code(c: u8) -> Self {
        match c & 0x1F {
            0 => AtomicOp::Add,
            1 => AtomicOp::Clear,
            2 => AtomicOp::Xor,
            3 => AtomicOp::Set,
            4 => AtomicOp::SignedMax,
            5 => AtomicOp::SignedMin,
            6 => AtomicOp::UnsignedMax,
            7 => AtomicOp::UnsignedMin,
            8 => AtomicOp::Swap,
            9 => AtomicOp::Compare,
            v => AtomicOp::Other(v),
        }
    }
}

/// ReqAttr of an atomic (Table 2-4): OpType\[3:0\] in bits 7:4, OpSize (Table 2-5) in 3:2, bit 1
/// reserved, OpType\[4\] in bit 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AtomicAttr {
    /// The operation.
    pub op: AtomicOp,
    /// The element size.
    pub size: OpSize,
}

impl AtomicAttr {
    /// The ReqAttr byte.
    pub const fn to_attr(self) -> u8 {
        let op = self.op.code();
        let size = match self.size {
            OpSize::Bits32 => 0,
            OpSize::Bits64 => 1,
            OpSize::Bits16 => 2,
            OpSize::Bits8 => 3,
        };
        (op & 0xF) << 4 | size << 2 | op >> 4
    }

    /// The reserved bit of an atomic's ReqAttr (Table 2-4): bit 1.
    pub const RESERVED: u8 = 0b10;

    /// Reads a ReqAttr byte, ignoring the reserved bit 1 ([`Request::check_reserved`] names it).
    pub const fn from_attr(a: u8) -> Self {
        let size = match a >> 2 & 0b11 {
            0 => OpSize::Bits32,
            1 => OpSize::Bits64,
            2 => OpSize::Bits16,
            _ => OpSize::Bits8,
        };
        AtomicAttr { op: AtomicOp::from_code(a >> 4 | (a & 1) << 4), size }
    }
}

/// UPLI Write Message types (ReqMetaData of command 0x2A, Table 2-7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WriteMessageType {
    /// 0x00: NOP (one beat of zeros; write response).
    Nop,
    /// 0x01: key roll on the request channel (write response).
    KeyRollReq,
    /// 0x02: key roll on the read-response channel (read response).
    KeyRollRdRsp,
    /// 0x03: key roll on the write-response channel (write response).
    KeyRollWrRsp,
    /// 0xF0..=0xFF: vendor-defined.
    Vendor(u8),
}

impl WriteMessageType {
    /// The type for a ReqMetaData value; 0x04..=0xEF are reserved.
    pub const fn from_metadata(m: u8) -> Result<Self, Error> {
        Ok(match m {
            0x00 => WriteMessageType::Nop,
            0x01 => WriteMessageType::KeyRollReq,
            0x02 => WriteMessageType::KeyRollRdRsp,
            0x03 => WriteMessageType::KeyRollWrRsp,
            0xF0..=0xFF => WriteMessageType::Vendor(m),
            _ => return Err(Error::BadValue { field: "ReqMetaData (write message type)", value: m as u32 }),
        })
    }

    /// The ReqMetaData value.
    pub const fn metadata(self) -> u8 {
        match self {
            WriteMessageType::Nop => 0x00,
            WriteMessageType::KeyRollReq => 0x01,
            WriteMessageType::KeyRollRdRsp => 0x02,
            WriteMessageType::KeyRollWrRsp => 0x03,
            WriteMessageType::Vendor(v) => v,
        }
    }
}

/// Response status (RdRspStatus/WrRspStatus, Tables 2-9 and 2-12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Status {
    /// 0000.
    Okay,
    /// 0010.
    TargetAbort,
    /// 0011.
    DecodeError,
    /// 0110.
    ProtectionViolation,
    /// 1000: completion timeout.
    CompletionTimeout,
    /// 1111: isolate (write responses from the TL to an accelerator only).
    Isolate,
    /// Another code of 0001..=1110: reserved, vendor-defined for vendor commands.
    Vendor(u8),
}

impl Status {
    /// The 4-bit code.
    pub const fn code(self) -> u8 {
        match self {
            Status::Okay => 0b0000,
            Status::TargetAbort => 0b0010,
            Status::DecodeError => 0b0011,
            Status::ProtectionViolation => 0b0110,
            Status::CompletionTimeout => 0b1000,
            Status::Isolate => 0b1111,
            Status::Vendor(v) => v & 0xF,
        }
    }

    /// Whether this is the status its code reads back as: a vendor code fits 4 bits and is none
    /// of the named ones. Any other would be sent as a different status.
    pub const fn is_canonical(self) -> bool {
        match self {
            Status::Vendor(v) => v <= 0xF && matches!(Status::from_code(v), Status::Vendor(_)),
            _ => true,
        }
    }

    /// The status for a 4-bit code (every code has a meaning).
    pub const fn from_code(c: u8) -> Self {
        match c & 0xF {
            0b0000 => Status::Okay,
            0b0010 => Status::TargetAbort,
            0b0011 => Status::DecodeError,
            0b0110 => Status::ProtectionViolation,
            0b1000 => Status::CompletionTimeout,
            0b1111 => Status::Isolate,
            v => Status::Vendor(v),
        }
    }
}

/// Which response channel a request is answered on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResponseChannel {
    /// Read Response/Data.
    Read,
    /// Write Response.
    Write,
}

/// One beat on the Request channel (Table 2-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Request {
    /// ReqCmd.
    pub cmd: Command,
    /// ReqAddr: byte address of the first DWord (57 bits, DWord aligned).
    pub addr: u64,
    /// ReqLen: DWords − 1 (0 → 4 B … 63 → 256 B).
    pub len: u8,
    /// ReqNumBeats: OrigData beats − 1 (0 for commands without data).
    pub num_beats: u8,
    /// ReqTag (11 bits).
    pub tag: u16,
    /// ReqSrcPhysAccID (10 bits).
    pub src: u16,
    /// ReqDstPhysAccID (10 bits).
    pub dst: u16,
    /// ReqAttr: read byte enables, atomic OpType/OpSize, or write metadata.
    pub attr: u8,
    /// ReqMetaData: implementation-defined, or the write-message type.
    pub metadata: u8,
    /// ReqASI (2 bits).
    pub asi: u8,
    /// ReqVC (2 bits).
    pub vc: u8,
    /// ReqPool: issued with a UPLI pool credit.
    pub pool: bool,
    /// ReqAuthTag (0 when authentication is off).
    pub auth_tag: u64,
}

/// 64-byte blocks touched by `bytes` bytes at `addr`: the beats the transfer needs.
pub const fn beats_spanned(addr: u64, bytes: u64) -> u64 {
    (addr % 64 + bytes).div_ceil(64)
}

impl Request {
    /// A Read of `bytes` bytes at `addr`: whole DWords (4 to 256 bytes, a multiple of 4, at a
    /// DWord-aligned address) within one 256-byte block; every byte enabled. Tag and both
    /// accelerator ids are 0: set them with [`Self::with_tag`], [`Self::from_acc`] and
    /// [`Self::to_acc`]. Refused with [`Error::BadValue`] where [`Self::check`] would refuse it.
    ///
    /// ```
    /// use ualink_flit::upli::{Command, Request};
    /// let r = Request::read(0x1000, 64)?.with_tag(7).from_acc(1).to_acc(2);
    /// assert_eq!((r.cmd, r.bytes(), r.response_beats()), (Command::Read, 64, 1));
    /// assert_eq!((r.tag, r.src, r.dst), (7, 1, 2));
    /// # Ok::<(), ualink_flit::Error>(())
    /// ```
    pub fn read(addr: u64, bytes: u16) -> Result<Self, Error> {
        Self::sized(Command::Read, addr, bytes)
    }

    /// A partial Write of `bytes` bytes at `addr` (the rules of [`Self::read`]); the data beats'
    /// byte enables pick the bytes written.
    pub fn write(addr: u64, bytes: u16) -> Result<Self, Error> {
        Self::sized(Command::Write, addr, bytes)
    }

    /// A WriteFull of `bytes` bytes at `addr`: whole aligned 64-byte beats (64 to 256 bytes).
    pub fn write_full(addr: u64, bytes: u16) -> Result<Self, Error> {
        Self::sized(Command::WriteFull, addr, bytes)
    }

    /// An atomic `op` on one `size` element at `addr` (§2.8 Atomics): AtomicR (the old value
    /// returns as read data) when `returns`, AtomicNR otherwise. `addr` is aligned to the element
    /// and to a DWord (ReqAddr\[1:0\] is always 0): an 8- or 16-bit element at another byte of its
    /// DWord is chosen by byte enables, which this constructor cannot express (build the request
    /// and its data beats with [`crate::tl::Packer`] instead). [`AtomicOp::Compare`], the
    /// double-operand atomic, is a 64-byte transfer (ReqLen = 15) at a 32-byte-aligned `addr`,
    /// its first operand in byte lanes 0..32 and its second in 32..64 whatever the address.
    pub fn atomic(op: AtomicOp, size: OpSize, addr: u64, returns: bool) -> Result<Self, Error> {
        let cmd = if returns { Command::AtomicR } else { Command::AtomicNR };
        let element = u64::from(size.bytes());
        if op == AtomicOp::Compare && addr % 32 != 0 {
            return Err(Error::BadValue {
                field: "double-operand atomic ReqAddr (not on a 32-byte boundary)",
                value: addr as u32,
            });
        }
        if addr % element.max(4) != 0 {
            return Err(Error::BadValue { field: "atomic ReqAddr (not aligned to its element)", value: addr as u32 });
        }
        let bytes = if op == AtomicOp::Compare { 64 } else { element.max(4) as u16 };
        let attr = AtomicAttr { op, size }.to_attr();
        // A double-operand atomic is one beat of operands whatever its address.
        let r = Request { attr, ..Request::new(cmd, addr, (bytes / 4 - 1) as u8, 0, 0, 0) };
        let r = if op == AtomicOp::Compare { Request { num_beats: 0, ..r } } else { r };
        r.check()?;
        Ok(r)
    }

    /// Whether this is a double-operand atomic ([`AtomicOp::Compare`]): ReqLen 15 at a 32-byte
    /// boundary, its operands in byte lanes 0..64 whatever the address (§2.8).
    pub const fn is_double_operand(&self) -> bool {
        matches!(self.cmd, Command::AtomicR | Command::AtomicNR)
            && matches!(AtomicAttr::from_attr(self.attr).op, AtomicOp::Compare)
    }

    /// `cmd` for `bytes` bytes at `addr`, checked.
    fn sized(cmd: Command, addr: u64, bytes: u16) -> Result<Self, Error> {
        if bytes == 0 || bytes % 4 != 0 || u64::from(bytes) > MAX_TRANSFER {
            return Err(Error::BadValue { field: "request bytes (whole DWords, 4 to 256)", value: u32::from(bytes) });
        }
        let r = Request::new(cmd, addr, (bytes / 4 - 1) as u8, 0, 0, 0);
        r.check()?;
        Ok(r)
    }

    /// This request with ReqTag `tag`.
    pub const fn with_tag(self, tag: u16) -> Self {
        Request { tag, ..self }
    }

    /// This request from accelerator `src` (ReqSrcPhysAccID).
    pub const fn from_acc(self, src: u16) -> Self {
        Request { src, ..self }
    }

    /// This request to accelerator `dst` (ReqDstPhysAccID).
    pub const fn to_acc(self, dst: u16) -> Self {
        Request { dst, ..self }
    }

    /// A request for `4 · (len + 1)` bytes at `addr`: NumBeats set to the beats the transfer spans
    /// (0 without data), ReqAttr 0xFF for a read (every byte) and 0 otherwise; metadata, ASI, VC,
    /// pool and authentication tag zero.
    pub const fn new(cmd: Command, addr: u64, len: u8, tag: u16, src: u16, dst: u16) -> Self {
        let num_beats =
            if cmd.has_data() { beats_spanned(addr, 4 * (len as u64 + 1)).saturating_sub(1) as u8 } else { 0 };
        let attr = if matches!(cmd, Command::Read) { 0xFF } else { 0 };
        Request { cmd, addr, len, num_beats, tag, src, dst, attr, metadata: 0, asi: 0, vc: 0, pool: false, auth_tag: 0 }
    }

    /// Bytes addressed: 4 · (ReqLen + 1).
    pub const fn bytes(&self) -> u64 {
        4 * (self.len as u64 + 1)
    }

    /// Data beats on OrigData: ReqNumBeats + 1, or 0 for commands without data.
    #[inline(always)]
    pub const fn data_beats(&self) -> u8 {
        if self.cmd.has_data() { self.num_beats + 1 } else { 0 }
    }

    /// The response channel: reads and AtomicR on Read, writes and AtomicNR on Write; a Write
    /// Message by its type; a vendor atomic on Read (it may return data; project-defined).
    pub const fn response_channel(&self) -> ResponseChannel {
        match self.cmd {
            Command::Read | Command::VendorRead(_) | Command::AtomicR | Command::VendorAtomic(_) => {
                ResponseChannel::Read
            }
            Command::WriteMessage if self.metadata == 0x02 => ResponseChannel::Read,
            _ => ResponseChannel::Write,
        }
    }

    /// Beats of read data the completer returns (0 for the write channel).
    pub const fn response_beats(&self) -> u8 {
        match self.response_channel() {
            ResponseChannel::Write => 0,
            ResponseChannel::Read if self.cmd.is_atomic() => 1,
            ResponseChannel::Read if matches!(self.cmd, Command::WriteMessage | Command::VendorRead(_)) => {
                // A read-class vendor command's ReqNumBeats gives the beats returned (Table 2-2).
                self.num_beats + 1
            }
            ResponseChannel::Read => beats_spanned(self.addr, self.bytes()) as u8,
        }
    }

    /// The one rule of [`Self::check`] a request rebuilt from a compressed field can break: the
    /// transfer stays within one 256-byte block.
    pub(crate) fn check_span(&self) -> Result<(), Error> {
        // A double-operand atomic's 64 bytes are one beat of operands, not an address range.
        if self.addr % MAX_TRANSFER + self.bytes() > MAX_TRANSFER && !self.is_double_operand() {
            return Err(Error::BadValue { field: "ReqLen (crosses a 256-byte boundary)", value: u32::from(self.len) });
        }
        Ok(())
    }

    /// Checks the request against §2.7 and §2.8. A vendor-defined command's address, length and
    /// attributes are the vendor's (§2.8): only their widths are checked.
    pub fn check(&self) -> Result<(), Error> {
        check_width(self.addr, 57, "ReqAddr")?;
        if self.addr & 0b11 != 0 {
            return Err(Error::BadValue { field: "ReqAddr (not DWord aligned)", value: (self.addr & 3) as u32 });
        }
        check_width(u64::from(self.len), 6, "ReqLen")?;
        check_width(u64::from(self.num_beats), 2, "ReqNumBeats")?;
        check_width(u64::from(self.tag), 11, "ReqTag")?;
        check_width(u64::from(self.src), 10, "ReqSrcPhysAccID")?;
        check_width(u64::from(self.dst), 10, "ReqDstPhysAccID")?;
        check_width(u64::from(self.asi), 2, "ReqASI")?;
        check_width(u64::from(self.vc), 2, "ReqVC")?;
        if !self.cmd.is_canonical() {
            return Err(Error::BadValue {
                field: "ReqCmd (vendor number wider than its bits)",
                value: u32::from(self.cmd.code()),
            });
        }
        if self.cmd.is_vendor() {
            return Ok(());
        }
        self.check_span()?;
        let spanned = beats_spanned(self.addr, self.bytes());
        match self.cmd {
            Command::WriteFull if self.addr % 64 != 0 || self.bytes() % 64 != 0 => {
                return Err(Error::BadValue {
                    field: "WriteFull (not whole aligned beats)",
                    value: u32::from(self.len),
                });
            }
            Command::AtomicR | Command::AtomicNR if self.is_double_operand() => {
                if self.len != 15 || self.addr % 32 != 0 {
                    return Err(Error::BadValue {
                        field: "double-operand atomic (ReqLen 15 at a 32-byte boundary)",
                        value: u32::from(self.len),
                    });
                }
                // One 64-byte beat of operands, whatever the address (§2.8).
                return if self.num_beats == 0 {
                    Ok(())
                } else {
                    Err(Error::BadValue { field: "ReqNumBeats", value: u32::from(self.num_beats) })
                };
            }
            Command::AtomicR | Command::AtomicNR if spanned != 1 => {
                return Err(Error::BadValue { field: "atomic (crosses a 64-byte beat)", value: u32::from(self.len) });
            }
            Command::AtomicR | Command::AtomicNR
                if self.addr % u64::from(AtomicAttr::from_attr(self.attr).size.bytes()) != 0
                    || self.bytes() % u64::from(AtomicAttr::from_attr(self.attr).size.bytes()) != 0 =>
            {
                return Err(Error::BadValue {
                    field: "atomic (ReqAddr or ReqLen not a multiple of the element)",
                    value: u32::from(self.len),
                });
            }
            Command::WriteMessage => {
                let t = WriteMessageType::from_metadata(self.metadata)?;
                // Table 2-7: NOP and the key rolls are one beat of zeros.
                if !matches!(t, WriteMessageType::Vendor(_)) && self.num_beats != 0 {
                    return Err(Error::BadValue {
                        field: "ReqNumBeats (write-message NOP or key roll: one beat)",
                        value: u32::from(self.num_beats),
                    });
                }
                return Ok(());
            }
            _ => {}
        }
        // ReqNumBeats is valid only when ReqCmd[5] = 1 (Table 2-2): a command without data
        // leaves it open (sent as zero, see `check_reserved`).
        if self.cmd.has_data() && u64::from(self.num_beats) != spanned - 1 {
            return Err(Error::BadValue { field: "ReqNumBeats", value: u32::from(self.num_beats) });
        }
        Ok(())
    }

    /// The first bit set that the specification leaves open in this request, by name: ReqNumBeats
    /// of a command for which it is not valid ([`Command::num_beats_valid`]), and ReqAttr\[1\] of
    /// AtomicR or AtomicNR (reserved, Table 2-4; a vendor atomic's ReqAttr is the vendor's). A
    /// sender keeps them zero ([`crate::tl::Packer::push_request`] refuses a request that sets
    /// one); a receiver ignores them.
    pub fn check_reserved(&self) -> Result<(), Error> {
        if !self.cmd.num_beats_valid() && self.num_beats != 0 {
            return Err(Error::Reserved { field: "ReqNumBeats of a command without data" });
        }
        if matches!(self.cmd, Command::AtomicR | Command::AtomicNR) && self.attr & AtomicAttr::RESERVED != 0 {
            return Err(Error::Reserved { field: "ReqAttr[1] (atomic)" });
        }
        Ok(())
    }
}

/// One beat on the Originator Data channel (Table 2-14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OrigDataBeat {
    /// OrigData: the byte at address X is in lane X mod 64.
    pub data: [u8; BEAT_LEN],
    /// OrigDataByteEn: one bit per lane.
    pub byte_en: u64,
    /// OrigDataOffset: the beat index.
    pub offset: u8,
    /// OrigDataLast.
    pub last: bool,
    /// OrigDataError: the beat is poisoned.
    pub error: bool,
}

/// A response on the Read Response/Data channel (Table 2-8), without its data beats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ReadResponse {
    /// RdRspTag = ReqTag.
    pub tag: u16,
    /// RdRspSrcPhysAccID (debug only; may be zero).
    pub src: u16,
    /// RdRspDstPhysAccID = ReqSrcPhysAccID (routing).
    pub dst: u16,
    /// RdRspStatus (the same on every beat).
    pub status: Status,
    /// RdRspNumBeats: beats − 1 of a multi-beat response; 0 for a single beat.
    pub num_beats: u8,
    /// RdRspOffset: the beat index of a single-beat response; 0 for multi-beat.
    pub offset: u8,
    /// RdRspLast: the last beat of the transfer is in this response.
    pub last: bool,
    /// RdRspVC (2 bits).
    pub vc: u8,
    /// RdRspPool.
    pub pool: bool,
    /// RdRspAuthTag.
    pub auth_tag: u64,
}

impl ReadResponse {
    /// The OKAY response to `req` with all its read data in one multi-beat response: tag and VC
    /// from `req`, routed back to its source (`dst` = `req.src`, `src` = `req.dst`).
    pub const fn answering(req: &Request) -> Self {
        ReadResponse { vc: req.vc, ..ReadResponse::new(req.tag, req.dst, req.src, req.response_beats()) }
    }

    /// An OKAY response to a request from `dst`, returning all `beats` (1..=4) of data in one
    /// multi-beat response (offset 0, last), on VC 0 without pool or authentication tag.
    pub const fn new(tag: u16, src: u16, dst: u16, beats: u8) -> Self {
        ReadResponse {
            tag,
            src,
            dst,
            status: Status::Okay,
            num_beats: beats.saturating_sub(1),
            offset: 0,
            last: true,
            vc: 0,
            pool: false,
            auth_tag: 0,
        }
    }

    /// Beats of data this response carries.
    pub const fn beats(&self) -> u8 {
        self.num_beats + 1
    }

    /// Checks widths and the two beat modes (§2.7.8): multi-beat responses start at offset 0 and
    /// carry the last beat; ISOLATE is for write responses only.
    pub fn check(&self) -> Result<(), Error> {
        check_width(u64::from(self.tag), 11, "RdRspTag")?;
        check_width(u64::from(self.src), 10, "RdRspSrcPhysAccID")?;
        check_width(u64::from(self.dst), 10, "RdRspDstPhysAccID")?;
        check_width(u64::from(self.num_beats), 2, "RdRspNumBeats")?;
        check_width(u64::from(self.offset), 2, "RdRspOffset")?;
        check_width(u64::from(self.vc), 2, "RdRspVC")?;
        if matches!(self.status, Status::Isolate) {
            return Err(Error::BadValue { field: "RdRspStatus (ISOLATE)", value: 0xF });
        }
        if !self.status.is_canonical() {
            return Err(Error::BadValue { field: "RdRspStatus (vendor code)", value: u32::from(self.status.code()) });
        }
        if self.num_beats != 0 && (self.offset != 0 || !self.last) {
            return Err(Error::BadValue { field: "RdRspOffset/Last (multi-beat)", value: u32::from(self.offset) });
        }
        Ok(())
    }
}

/// One data beat on the Read Response/Data channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReadDataBeat {
    /// RdRspData: the byte at address X is in lane X mod 64.
    pub data: [u8; BEAT_LEN],
    /// RdRspDataError: the beat is poisoned.
    pub error: bool,
}

/// A response on the Write Response channel (Table 2-11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct WriteResponse {
    /// WrRspTag = ReqTag.
    pub tag: u16,
    /// WrRspSrcPhysAccID (debug only).
    pub src: u16,
    /// WrRspDstPhysAccID (routing).
    pub dst: u16,
    /// WrRspStatus.
    pub status: Status,
    /// WrRspVC (2 bits).
    pub vc: u8,
    /// WrRspPool.
    pub pool: bool,
    /// WrRspAuthTag.
    pub auth_tag: u64,
}

impl WriteResponse {
    /// The OKAY response to `req`: tag and VC from `req`, routed back to its source (`dst` =
    /// `req.src`, `src` = `req.dst`).
    pub const fn answering(req: &Request) -> Self {
        WriteResponse { vc: req.vc, ..WriteResponse::new(req.tag, req.dst, req.src) }
    }

    /// An OKAY response to a request from `dst`, on VC 0 without pool or authentication tag.
    pub const fn new(tag: u16, src: u16, dst: u16) -> Self {
        WriteResponse { tag, src, dst, status: Status::Okay, vc: 0, pool: false, auth_tag: 0 }
    }

    /// Checks field widths, and that the status may cross the link: ISOLATE goes only from the
    /// TL to its own Accelerator's Originator (Table 2-12).
    pub fn check(&self) -> Result<(), Error> {
        check_width(u64::from(self.tag), 11, "WrRspTag")?;
        check_width(u64::from(self.src), 10, "WrRspSrcPhysAccID")?;
        check_width(u64::from(self.dst), 10, "WrRspDstPhysAccID")?;
        check_width(u64::from(self.vc), 2, "WrRspVC")?;
        if matches!(self.status, Status::Isolate) {
            return Err(Error::BadValue { field: "WrRspStatus (ISOLATE is TL-local)", value: 0xF });
        }
        if !self.status.is_canonical() {
            return Err(Error::BadValue { field: "WrRspStatus (vendor code)", value: u32::from(self.status.code()) });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(cmd: Command, addr: u64, len: u8, num_beats: u8) -> Request {
        Request { num_beats, attr: 0, ..Request::new(cmd, addr, len, 1, 2, 3) }
    }

    #[test]
    fn constructors_take_bytes_and_name_the_ends() {
        let r = Request::read(0x1040, 128).unwrap().with_tag(9).from_acc(3).to_acc(4);
        assert_eq!(r, Request::new(Command::Read, 0x1040, 31, 9, 3, 4));
        assert_eq!(r.response_beats(), 2);
        let w = Request::write(0x10C4, 8).unwrap();
        assert_eq!((w.len, w.num_beats, w.data_beats(), w.attr), (1, 0, 1, 0));
        assert_eq!(Request::write_full(0x1000, 256).unwrap().data_beats(), 4);
        let a = Request::atomic(AtomicOp::Add, OpSize::Bits64, 0x2008, true).unwrap();
        assert_eq!((a.cmd, a.bytes(), a.response_beats()), (Command::AtomicR, 8, 1));
        assert_eq!(AtomicAttr::from_attr(a.attr), AtomicAttr { op: AtomicOp::Add, size: OpSize::Bits64 });
        let b = Request::atomic(AtomicOp::Add, OpSize::Bits8, 0x2000, false).unwrap();
        assert_eq!((b.cmd, b.bytes(), b.response_beats()), (Command::AtomicNR, 4, 0));
        for (addr, bytes) in [(0, 0), (0, 6), (0, 260), (2, 4), (0xF0, 32)] {
            assert!(matches!(Request::read(addr, bytes), Err(Error::BadValue { .. })), "{addr} {bytes}");
        }
        assert!(Request::write_full(0x1000, 32).is_err(), "WriteFull is whole beats");
        // Double operand: 64 bytes of operands in one beat at a 32-byte boundary (§2.8).
        let cas = Request::atomic(AtomicOp::Compare, OpSize::Bits32, 0x10E0, true).unwrap();
        assert_eq!((cas.len, cas.num_beats, cas.data_beats(), cas.is_double_operand()), (15, 0, 1, true));
        assert!(Request::atomic(AtomicOp::Compare, OpSize::Bits32, 0x1010, true).is_err());
        assert!(Request::atomic(AtomicOp::Add, OpSize::Bits64, 0x2004, true).is_err(), "element alignment");
        for r in [r, w, a, b, cas] {
            assert_eq!(r.check(), Ok(()));
        }
        // Responses come back to the request's source with its tag and VC.
        let r = Request { vc: 2, ..r };
        let rsp = ReadResponse::answering(&r);
        assert_eq!((rsp.tag, rsp.src, rsp.dst, rsp.beats(), rsp.vc, rsp.status), (9, 4, 3, 2, 2, Status::Okay));
        let wr = WriteResponse::answering(&w.with_tag(5).from_acc(7));
        assert_eq!((wr.tag, wr.dst, wr.status), (5, 7, Status::Okay));
        let mut any = crate::tl::Response::answering(&b);
        assert!(matches!(any, crate::tl::Response::Write(_)));
        any.set_status(Status::TargetAbort);
        assert_eq!(any.status(), Status::TargetAbort);
        assert!(matches!(crate::tl::Response::answering(&a), crate::tl::Response::Read(_)));
    }

    #[test]
    fn errors_read_as_sentences() {
        let e = Request::read(0, 6).unwrap_err();
        assert_eq!(std::format!("{e}"), "request bytes (whole DWords, 4 to 256): value 0x6 is not allowed");
        let e: &dyn core::error::Error = &Error::State { needs: "DL Idle" };
        assert_eq!(std::format!("{e}"), "not allowed now: needs DL Idle");
        let crc = Error::Crc { expected: [0, 0, 0, 1], got: [0xFF, 0, 0, 0] };
        assert_eq!(std::format!("{crc}"), "CRC mismatch: computed 00000001, flit carries ff000000");
    }

    #[test]
    fn every_code_of_table_2_6_and_nothing_else() {
        let mut defined = 0;
        for c in 0..64u8 {
            if let Ok(cmd) = Command::from_code(c) {
                defined += 1;
                assert_eq!(cmd.code(), c);
                assert_eq!(cmd.has_data(), c & 0x20 != 0);
            }
        }
        // Read, 8 vendor reads, Write, WriteFull, WriteMessage, 4 vendor writes, AtomicR,
        // AtomicNR, 4 vendor atomics.
        assert_eq!(defined, 1 + 8 + 3 + 4 + 2 + 4);
        assert!(Command::from_code(0x31).is_err());
        assert!(Command::Write.has_byte_enables() && !Command::WriteFull.has_byte_enables());
        assert!(Command::AtomicNR.has_byte_enables() && !Command::WriteMessage.has_byte_enables());
    }

    #[test]
    fn atomic_attr_splits_optype_across_the_byte() {
        // OpType 0b1_0011 (19), OpSize 64 bits: bits 7:4 = 0011, 3:2 = 01, bit 0 = 1.
        let a = AtomicAttr { op: AtomicOp::Other(19), size: OpSize::Bits64 };
        assert_eq!(a.to_attr(), 0b0011_0101);
        assert_eq!(AtomicAttr::from_attr(0b0011_0101), a);
        assert_eq!(AtomicAttr::from_attr(0b0011_0111), a, "reserved bit 1 ignored");
        let atomic = Request { attr: 0b10, ..req(Command::AtomicR, 32, 7, 0) };
        assert_eq!(atomic.check(), Ok(()));
        assert_eq!(atomic.check_reserved(), Err(Error::Reserved { field: "ReqAttr[1] (atomic)" }));
        for c in 0..32 {
            assert_eq!(AtomicOp::from_code(c).code(), c);
        }
    }

    #[test]
    fn request_rules() {
        // A 256-byte WriteFull: 4 beats.
        assert_eq!(req(Command::WriteFull, 0x1000, 63, 3).check(), Ok(()));
        assert!(req(Command::WriteFull, 0x1000, 63, 2).check().is_err(), "beats");
        assert!(req(Command::WriteFull, 0x1020, 15, 0).check().is_err(), "unaligned WriteFull");
        // A write of 8 bytes at offset 60 spans two beats.
        assert_eq!(req(Command::Write, 60, 1, 1).check(), Ok(()));
        assert!(req(Command::Write, 60, 1, 0).check().is_err());
        // Crossing 256 bytes.
        assert!(req(Command::Read, 0xFC, 1, 0).check().is_err());
        assert!(req(Command::Read, 0x2, 0, 0).check().is_err(), "DWord alignment");
        assert!(req(Command::Read, 1 << 57, 0, 0).check().is_err(), "57-bit address");
        let numbeats_on_a_read = req(Command::Read, 0, 0, 1);
        assert_eq!(numbeats_on_a_read.check(), Ok(()), "open: ignored on receive");
        assert_eq!(
            numbeats_on_a_read.check_reserved(),
            Err(Error::Reserved { field: "ReqNumBeats of a command without data" })
        );
        // Atomics stay in one beat.
        assert_eq!(req(Command::AtomicR, 32, 7, 0).check(), Ok(()));
        assert!(req(Command::AtomicR, 48, 7, 0).check().is_err());
        // Write messages: defined types only; NOP is one beat.
        let mut m = req(Command::WriteMessage, 0, 15, 0);
        assert_eq!(m.check(), Ok(()));
        m.metadata = 0x04;
        assert!(m.check().is_err());
        m.metadata = 0x02;
        assert_eq!(m.check(), Ok(()));
        assert_eq!(m.response_channel(), ResponseChannel::Read);
        // NOP and the key rolls are one beat (Table 2-7); a vendor message may have more.
        for metadata in [0x00, 0x01, 0x02, 0x03] {
            assert!(Request { metadata, num_beats: 3, ..m }.check().is_err(), "{metadata:#x}");
        }
        assert_eq!(Request { metadata: 0xF0, num_beats: 3, ..m }.check(), Ok(()));
        // A vendor number wider than its bits would go out as another command.
        assert_eq!(req(Command::VendorRead(7), 0, 0, 0).check(), Ok(()));
        // Vendor-defined commands: address, length and attributes are the vendor's (§2.8), a
        // read-class one's ReqNumBeats is valid (Table 2-2), a vendor atomic's ReqAttr[1] is not
        // reserved.
        let vendor_read = req(Command::VendorRead(1), 0xFC, 63, 3);
        assert_eq!((vendor_read.check(), vendor_read.check_reserved()), (Ok(()), Ok(())));
        assert_eq!(vendor_read.response_beats(), 4);
        let vendor_atomic = Request { attr: 0xFF, ..req(Command::VendorAtomic(0), 0x3C, 40, 2) };
        assert_eq!((vendor_atomic.check(), vendor_atomic.check_reserved()), (Ok(()), Ok(())));
        assert_eq!(vendor_atomic.data_beats(), 3);
        assert!(req(Command::VendorRead(9), 0, 0, 0).check().is_err());
        assert!(req(Command::VendorAtomic(4), 0, 0, 0).check().is_err());
    }

    #[test]
    fn response_rules() {
        let r = ReadResponse::new(5, 0, 1, 4);
        assert_eq!((r.num_beats, r.offset, r.last, r.status), (3, 0, true, Status::Okay));
        assert_eq!(r.check(), Ok(()));
        assert!(ReadResponse { offset: 1, ..r }.check().is_err());
        assert!(ReadResponse { status: Status::Isolate, ..r }.check().is_err());
        // ISOLATE never crosses the link (Table 2-12).
        let w = WriteResponse::new(5, 0, 1);
        assert_eq!(w.check(), Ok(()));
        assert!(WriteResponse { status: Status::Isolate, ..w }.check().is_err());
        assert_eq!(ReadResponse { num_beats: 0, offset: 2, last: false, ..r }.check(), Ok(()));
        // A vendor status must be a 4-bit code with no name of its own.
        assert_eq!(ReadResponse { status: Status::Vendor(0b0101), ..r }.check(), Ok(()));
        assert!(ReadResponse { status: Status::Vendor(0), ..r }.check().is_err(), "OKAY's code");
        assert!(ReadResponse { status: Status::Vendor(0x15), ..r }.check().is_err(), "5 bits");
    }

    proptest! {
        #[test]
        fn status_codes_round_trip(c in 0u8..16) {
            prop_assert_eq!(Status::from_code(c).code(), c);
            prop_assert!(Status::from_code(c).is_canonical());
        }

        #[test]
        fn atomic_attr_round_trips(a in any::<u8>()) {
            prop_assert_eq!(AtomicAttr::from_attr(a).to_attr(), a & !AtomicAttr::RESERVED);
        }
    }
}
