//! The 68B flit's link-layer control flits (CXL 3.x §4.2.8, Tables 4-9 and 4-10, Figure 4-37):
//! flit header Type = 1, only slot 0 (bytes 0–15) valid, slots 1–3 reserved.
//!
//! | bytes | CTL_FMT 000b (LLCRD, RETRY, INIT) | CTL_FMT 001b (IDE) |
//! |---|---|---|
//! | 0 | bit 0 Type = 1; bit 2 Ak (LLCRD); bits 7:5 CTL_FMT | the same, no Ak |
//! | 1 | reserved | reserved |
//! | 2 | bits 7:4 RspCrd (LLCRD) | reserved |
//! | 3 | bits 3:0 ReqCrd, 7:4 DataCrd (LLCRD) | SubType\[7:4\], LLCTRL\[3:0\] |
//! | 4 | SubType\[7:4\], LLCTRL\[3:0\] | payload\[95:0\] in bytes 4–15 |
//! | 5–7 | zero (checked on receive as a warning, [`ControlFlit::check_reserved`]) | |
//! | 8–15 | payload\[63:0\] | |
//!
//! | LLCTRL | SubType | message | payload |
//! |---|---|---|---|
//! | 0000b LLCRD | 0001b | Acknowledge | \[2:0\] Ack\[2:0\], \[7:4\] Ack\[7:4\]; with Ak: Full_Ack = {Ack\[7:4\], Ak, Ack\[2:0\]} |
//! | 0001b RETRY | 0000b | Idle | — |
//! | | 0001b | Req | \[7:0\] Eseq, \[20:16\] NUM_RETRY, \[25:21\] NUM_PHY_REINIT |
//! | | 0010b | Ack | \[0\] Empty, \[1\] Viral, \[7:3\] NUM_RETRY, \[15:8\] WrPtr, \[23:16\] Eseq, \[31:24\] NumFreeBuf, \[47:32\] Viral LD-ID vector |
//! | | 0011b | Frame | — |
//! | 0010b IDE | 0000b/0001b/0010b | Idle / Start / TMAC | 96 bits |
//! | 1100b INIT | 1000b | INIT.Param | \[3:0\] version (0001b CXL 1.x, 0010b 2.0 and later), \[31:24\] LLR Wrap Value |
//!
//! Anything else is kept whole as [`ControlFlit::Other`]. *Project-defined:* the credit fields
//! are read and written in LLCRD flits only (reserved in RETRY and INIT); the IDE layout is
//! the one three public implementations share (the specification's figure is an image).

use super::header::Credit;

/// LLCTRL encodings.
pub mod llctrl {
    /// Link-layer credit return.
    pub const LLCRD: u8 = 0b0000;
    /// Link-layer retry.
    pub const RETRY: u8 = 0b0001;
    /// Integrity and data encryption.
    pub const IDE: u8 = 0b0010;
    /// Initialization.
    pub const INIT: u8 = 0b1100;
}

/// A control flit's slot 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ControlFlit {
    /// LLCRD Acknowledge: credits and an acknowledgement of flits.
    LlcrdAck {
        /// Full_Ack (bit 3 is the header's Ak).
        full_ack: u8,
        /// RspCrd.
        rsp_crd: Credit,
        /// ReqCrd.
        req_crd: Credit,
        /// DataCrd.
        data_crd: Credit,
    },
    /// RETRY.Idle.
    RetryIdle,
    /// RETRY.Req.
    RetryReq {
        /// The sequence number expected next.
        eseq: u8,
        /// NUM_RETRY (5 bits).
        num_retry: u8,
        /// NUM_PHY_REINIT (5 bits).
        num_phy_reinit: u8,
    },
    /// RETRY.Ack.
    RetryAck {
        /// The retry buffer was empty.
        empty: bool,
        /// Viral.
        viral: bool,
        /// NUM_RETRY echoed (5 bits).
        num_retry: u8,
        /// The retry buffer's write pointer.
        wr_ptr: u8,
        /// Eseq echoed.
        eseq: u8,
        /// Free retry buffer entries.
        num_free_buf: u8,
        /// Viral LD-ID vector.
        viral_ld_id: u16,
    },
    /// RETRY.Frame.
    RetryFrame,
    /// INIT.Param.
    InitParam {
        /// Version: 0001b CXL 1.x, 0010b 2.0 and later (4 bits).
        version: u8,
        /// LLR Wrap Value.
        wrap: u8,
    },
    /// An IDE flit (CTL_FMT 001b).
    Ide {
        /// SubType: 0000b Idle, 0001b Start, 0010b TMAC.
        subtype: u8,
        /// The 96-bit payload, bytes 4–15.
        payload: [u8; 12],
    },
    /// Any other combination, kept as received.
    Other {
        /// CTL_FMT (3 bits).
        ctl_fmt: u8,
        /// LLCTRL (4 bits).
        llctrl: u8,
        /// SubType (4 bits).
        subtype: u8,
        /// Flit bytes 4–15 (for CTL_FMT 000b byte 4 is the LLCTRL/SubType byte and bytes 5–7
        /// are zero).
        payload: [u8; 12],
    },
}

/// Why bytes are not a control flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ControlError {
    /// Flit header Type = 0: a protocol flit.
    NotControl,
    /// Fewer than 16 bytes.
    Length,
    /// Bytes 5–7 of a CTL_FMT 000b flit are not zero ([`ControlFlit::check_reserved`] only).
    Reserved,
}

impl core::fmt::Display for ControlError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ControlError::NotControl => f.write_str("a protocol flit, not a control flit"),
            ControlError::Length => f.write_str("a control flit's slot 0 is 16 bytes"),
            ControlError::Reserved => f.write_str("control flit bytes 5-7 are not zero"),
        }
    }
}

impl core::error::Error for ControlError {}

fn payload64(slot: &[u8; 16]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(slot.get(8..16).unwrap_or(&[0; 8]));
    u64::from_le_bytes(b)
}

impl ControlFlit {
    /// Reads slot 0 (flit bytes 0–15) of a control flit.
    pub fn parse(bytes: &[u8]) -> Result<ControlFlit, ControlError> {
        let slot: &[u8; 16] = bytes.first_chunk::<16>().ok_or(ControlError::Length)?;
        let [b0, _, b2, b3, b4, ..] = *slot;
        if b0 & 1 == 0 {
            return Err(ControlError::NotControl);
        }
        let ctl_fmt = b0 >> 5;
        let mut rest = [0u8; 12];
        rest.copy_from_slice(slot.get(4..16).unwrap_or(&[0; 12]));
        if ctl_fmt != 0 {
            // IDE's layout (LLCTRL/SubType in byte 3); other CTL_FMT values are reserved and
            // kept in the same shape.
            let (llctrl, subtype) = (b3 & 0xF, b3 >> 4);
            return Ok(if llctrl == llctrl::IDE {
                ControlFlit::Ide { subtype, payload: rest }
            } else {
                ControlFlit::Other { ctl_fmt, llctrl, subtype, payload: rest }
            });
        }
        let (llctrl, subtype) = (b4 & 0xF, b4 >> 4);
        // Bytes 5-7 are zero on the wire; an unknown message keeps its payload bytes 8-15.
        if let Some(z) = rest.get_mut(1..4) {
            z.fill(0);
        }
        let p = payload64(slot);
        let bits = |hi: u32, lo: u32| ((p >> lo) & ((1u64 << (hi - lo + 1)) - 1)) as u8;
        let m = match (ctl_fmt, llctrl, subtype) {
            (0, llctrl::LLCRD, 0b0001) => ControlFlit::LlcrdAck {
                full_ack: (bits(7, 4) << 4) | ((b0 >> 2 & 1) << 3) | bits(2, 0),
                rsp_crd: Credit { mem: b2 & 0x80 != 0, code: b2 >> 4 & 7 },
                req_crd: Credit { mem: b3 & 0x08 != 0, code: b3 & 7 },
                data_crd: Credit { mem: b3 & 0x80 != 0, code: b3 >> 4 & 7 },
            },
            (0, llctrl::RETRY, 0b0000) => ControlFlit::RetryIdle,
            (0, llctrl::RETRY, 0b0001) => {
                ControlFlit::RetryReq { eseq: bits(7, 0), num_retry: bits(20, 16), num_phy_reinit: bits(25, 21) }
            }
            (0, llctrl::RETRY, 0b0010) => ControlFlit::RetryAck {
                empty: p & 1 != 0,
                viral: p & 2 != 0,
                num_retry: bits(7, 3),
                wr_ptr: bits(15, 8),
                eseq: bits(23, 16),
                num_free_buf: bits(31, 24),
                viral_ld_id: (p >> 32) as u16,
            },
            (0, llctrl::RETRY, 0b0011) => ControlFlit::RetryFrame,
            (0, llctrl::INIT, 0b1000) => ControlFlit::InitParam { version: bits(3, 0), wrap: bits(31, 24) },
            _ => ControlFlit::Other { ctl_fmt, llctrl, subtype, payload: rest },
        };
        Ok(m)
    }

    /// Slot 0 (flit bytes 0–15) of this control flit; slots 1–3 are reserved (zero).
    pub fn emit(&self) -> [u8; 16] {
        let mut s = [0u8; 16];
        let (ctl_fmt, llctrl, subtype, payload): (u8, u8, u8, u64) = match *self {
            ControlFlit::LlcrdAck { full_ack, rsp_crd, req_crd, data_crd } => {
                if let Some(b) = s.get_mut(2) {
                    *b = (rsp_crd.mem as u8) << 7 | (rsp_crd.code & 7) << 4;
                }
                if let Some(b) = s.get_mut(3) {
                    *b = (data_crd.mem as u8) << 7
                        | (data_crd.code & 7) << 4
                        | (req_crd.mem as u8) << 3
                        | (req_crd.code & 7);
                }
                if let Some(b) = s.get_mut(0) {
                    *b |= (full_ack >> 3 & 1) << 2;
                }
                (0, llctrl::LLCRD, 0b0001, u64::from(full_ack & 0xF7))
            }
            ControlFlit::RetryIdle => (0, llctrl::RETRY, 0b0000, 0),
            ControlFlit::RetryReq { eseq, num_retry, num_phy_reinit } => (
                0,
                llctrl::RETRY,
                0b0001,
                u64::from(eseq) | u64::from(num_retry & 0x1F) << 16 | u64::from(num_phy_reinit & 0x1F) << 21,
            ),
            ControlFlit::RetryAck { empty, viral, num_retry, wr_ptr, eseq, num_free_buf, viral_ld_id } => (
                0,
                llctrl::RETRY,
                0b0010,
                u64::from(empty)
                    | u64::from(viral) << 1
                    | u64::from(num_retry & 0x1F) << 3
                    | u64::from(wr_ptr) << 8
                    | u64::from(eseq) << 16
                    | u64::from(num_free_buf) << 24
                    | u64::from(viral_ld_id) << 32,
            ),
            ControlFlit::RetryFrame => (0, llctrl::RETRY, 0b0011, 0),
            ControlFlit::InitParam { version, wrap } => {
                (0, llctrl::INIT, 0b1000, u64::from(version & 0xF) | u64::from(wrap) << 24)
            }
            ControlFlit::Ide { subtype, payload } => {
                if let Some(d) = s.get_mut(4..16) {
                    d.copy_from_slice(&payload);
                }
                if let Some(b) = s.get_mut(3) {
                    *b = (subtype & 0xF) << 4 | llctrl::IDE;
                }
                if let Some(b) = s.get_mut(0) {
                    *b = 1 | 0b001 << 5;
                }
                return s;
            }
            ControlFlit::Other { ctl_fmt, llctrl, subtype, payload } => {
                if let Some(d) = s.get_mut(4..16) {
                    d.copy_from_slice(&payload);
                }
                if ctl_fmt & 7 == 0 {
                    if let Some(b) = s.get_mut(4) {
                        *b = (subtype & 0xF) << 4 | (llctrl & 0xF);
                    }
                    // Bytes 5-7 stay zero.
                    if let Some(d) = s.get_mut(5..8) {
                        d.fill(0);
                    }
                } else if let Some(b) = s.get_mut(3) {
                    *b = (subtype & 0xF) << 4 | (llctrl & 0xF);
                }
                if let Some(b) = s.get_mut(0) {
                    *b = 1 | (ctl_fmt & 7) << 5;
                }
                return s;
            }
        };
        if let Some(b) = s.get_mut(0) {
            *b |= 1 | (ctl_fmt & 7) << 5;
        }
        if let Some(b) = s.get_mut(4) {
            *b = (subtype & 0xF) << 4 | (llctrl & 0xF);
        }
        if let Some(d) = s.get_mut(8..16) {
            d.copy_from_slice(&payload.to_le_bytes());
        }
        s
    }

    /// The strict check: bytes 5–7 of a CTL_FMT 000b control flit are zero. A receiver
    /// ignores them ([`ControlFlit::parse`]); this reports them (a warning, not an error).
    pub fn check_reserved(bytes: &[u8]) -> Result<(), ControlError> {
        let slot = bytes.first_chunk::<16>().ok_or(ControlError::Length)?;
        let [b0, _, _, _, _, b5, b6, b7, ..] = *slot;
        if b0 >> 5 == 0 && (b5 | b6 | b7) != 0 { Err(ControlError::Reserved) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bytes_by_hand() {
        // INIT.Param, version 2.0+, wrap value 9: byte 0 = Type, byte 4 = {1000b, 1100b},
        // payload [3:0] = 0010b, [31:24] = 9.
        let init = ControlFlit::InitParam { version: 0b0010, wrap: 9 };
        let s = init.emit();
        assert_eq!(s[..8], [0x01, 0, 0, 0, 0x8C, 0, 0, 0]);
        assert_eq!(s[8..], [0x02, 0, 0, 9, 0, 0, 0, 0]);
        assert_eq!(ControlFlit::parse(&s), Ok(init));
        // LLCRD Acknowledge of Full_Ack 0x5D: Ak (bit 3) in byte 0 bit 2, the rest in the payload.
        let ack = ControlFlit::LlcrdAck {
            full_ack: 0x5D,
            rsp_crd: Credit { mem: true, code: 3 },
            req_crd: Credit { mem: false, code: 7 },
            data_crd: Credit { mem: true, code: 1 },
        };
        let s = ack.emit();
        assert_eq!(s[..5], [0x05, 0, 0b1011_0000, 0b1001_0111, 0x10]);
        assert_eq!(s[8], 0x55);
        assert_eq!(ControlFlit::parse(&s), Ok(ack));
        // RETRY.Req: Eseq 200, NUM_RETRY 3, NUM_PHY_REINIT 1.
        let req = ControlFlit::RetryReq { eseq: 200, num_retry: 3, num_phy_reinit: 1 };
        let p = u64::from_le_bytes(req.emit()[8..].try_into().unwrap());
        assert_eq!(p, 200 | 3 << 16 | 1 << 21);
        // An IDE flit: CTL_FMT 001b, LLCTRL/SubType in byte 3.
        let ide = ControlFlit::Ide { subtype: 1, payload: [7; 12] };
        let s = ide.emit();
        assert_eq!(s[..4], [0x21, 0, 0, 0x12]);
        assert_eq!(ControlFlit::parse(&s), Ok(ide));
        assert_eq!(ControlFlit::parse(&[0; 16]), Err(ControlError::NotControl));
        assert_eq!(ControlFlit::parse(&[1; 8]), Err(ControlError::Length));
        let mut noisy = init.emit();
        noisy[6] = 1;
        assert_eq!(ControlFlit::parse(&noisy), Ok(init));
        assert_eq!(ControlFlit::check_reserved(&noisy), Err(ControlError::Reserved));
    }

    proptest! {
        /// Every typed control message round-trips with its fields at their widths.
        #[test]
        fn typed_round_trip(a in any::<u8>(), b in any::<u8>(), c in any::<u8>(), d in any::<u8>(), e in any::<u16>(), f in any::<bool>(), g in any::<bool>(), k in 0..8u8) {
            let crd = |x: u8| Credit { mem: x & 8 != 0, code: x & 7 };
            let m = [
                ControlFlit::LlcrdAck { full_ack: a, rsp_crd: crd(b), req_crd: crd(c), data_crd: crd(d) },
                ControlFlit::RetryReq { eseq: a, num_retry: b & 0x1F, num_phy_reinit: c & 0x1F },
                ControlFlit::RetryAck { empty: f, viral: g, num_retry: b & 0x1F, wr_ptr: a, eseq: c, num_free_buf: d, viral_ld_id: e },
                ControlFlit::InitParam { version: a & 0xF, wrap: b },
                ControlFlit::RetryIdle,
                ControlFlit::RetryFrame,
                ControlFlit::Ide { subtype: a & 0xF, payload: [b; 12] },
                ControlFlit::RetryIdle,
            ][k as usize];
            prop_assert_eq!(ControlFlit::parse(&m.emit()), Ok(m));
        }

        /// Any 16 bytes with Type = 1 parse, and what parses re-emits to bytes that parse the
        /// same.
        #[test]
        fn parse_emit_parse(bytes in proptest::collection::vec(any::<u8>(), 16)) {
            let mut b = bytes.clone();
            b[0] |= 1;
            let m = ControlFlit::parse(&b).unwrap();
            prop_assert_eq!(ControlFlit::parse(&m.emit()), Ok(m));
        }
    }
}
