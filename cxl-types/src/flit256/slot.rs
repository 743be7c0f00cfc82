//! The 256B flit's slot formats (CXL 3.x §4.3.3, Tables 4-14, 4-15 and 4-16): G-slots (16
//! bytes), the H-slot (slot 0, 14 bytes) and the HS-slot of the latency-optimized flit (12
//! bytes), each starting with a 4-bit SlotFmt, for hierarchy-based routing (HBR) and
//! port-based routing (PBR).
//!
//! | SlotFmt | G-slot (HBR / PBR) | H-slot (HBR / PBR) | HS-slot |
//! |---|---|---|---|
//! | 0 | H2D Req + H2D Rsp / H2D Req | H2D Req | H2D Req |
//! | 1 | 3 H2D Rsp / 2 | 2 H2D Rsp | 2 H2D Rsp |
//! | 2 | D2H Req + 2 D2H Rsp / D2H Req | D2H Req + D2H Rsp / D2H Req | D2H Req |
//! | 3 | 4 D2H Rsp / 3 | 4 D2H Rsp / 3 | 3 D2H Rsp |
//! | 4 | M2S Req | M2S Req (PBR: first 108 bits) | M2S Req (first 92 bits) |
//! | 5 | 3 M2S BIRsp / 2 | 2 M2S BIRsp | 2 M2S BIRsp |
//! | 6 | S2M BISnp + S2M NDR / S2M BISnp | S2M BISnp | S2M BISnp |
//! | 7 | 3 S2M NDR / 2 | 2 S2M NDR | 2 S2M NDR |
//! | 8 | reserved | LLCTRL ([`Llctrl`]) | LLCTRL |
//! | 9–11 | reserved | reserved | reserved |
//! | 12 | 4 H2D DH / 3 | 3 H2D DH | 3 H2D DH |
//! | 13 | 4 D2H DH / 3 | 4 D2H DH / 3 | 3 D2H DH |
//! | 14 | M2S RwD | M2S RwD (PBR: first 108 bits) | M2S RwD (first 92 bits) |
//! | 15 | 3 S2M DRS / 2 | 2 S2M DRS | 2 S2M DRS |
//!
//! A message longer than the slot keeps only the bits that fit ("zero-extended"): its higher
//! bits must be zero to be sent there and read as zero. *Project-defined* (the figures are
//! images): SlotFmt in slot bits 3:0, then the messages in table order, each from the next free
//! bit — every message length is a multiple of four, so each starts on a nibble boundary as
//! the specification requires. The LLCTRL slot holds LLCTRL in bits 7:4, SubType in 11:8 and
//! its payload from bit 16, as the 68B control flit orders them.

use crate::msg::{Kind, Msg, MsgError, Width, slot_mask};

/// Which slot of a 256B flit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SlotKind {
    /// A 16-byte generic slot.
    G,
    /// The 14-byte header slot (slot 0).
    H,
    /// The 12-byte header slot of the latency-optimized flit (slot 8).
    Hs,
}

impl SlotKind {
    /// The slot's bits, SlotFmt included.
    pub const fn bits(self) -> u32 {
        match self {
            SlotKind::G => 128,
            SlotKind::H => 112,
            SlotKind::Hs => 96,
        }
    }
}

/// What a slot format holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// These messages, packed from bit 4 (each present when its Valid bit is set).
    Messages(&'static [Kind]),
    /// A link-layer control message.
    Llctrl,
}

use Kind::*;

const G_HBR: [Option<Contents>; 16] = [
    Some(Contents::Messages(&[H2dReq, H2dRsp])),
    Some(Contents::Messages(&[H2dRsp, H2dRsp, H2dRsp])),
    Some(Contents::Messages(&[D2hReq, D2hRsp, D2hRsp])),
    Some(Contents::Messages(&[D2hRsp, D2hRsp, D2hRsp, D2hRsp])),
    Some(Contents::Messages(&[M2sReq])),
    Some(Contents::Messages(&[M2sBiRsp, M2sBiRsp, M2sBiRsp])),
    Some(Contents::Messages(&[S2mBiSnp, S2mNdr])),
    Some(Contents::Messages(&[S2mNdr, S2mNdr, S2mNdr])),
    None,
    None,
    None,
    None,
    Some(Contents::Messages(&[H2dData, H2dData, H2dData, H2dData])),
    Some(Contents::Messages(&[D2hData, D2hData, D2hData, D2hData])),
    Some(Contents::Messages(&[M2sRwd])),
    Some(Contents::Messages(&[S2mDrs, S2mDrs, S2mDrs])),
];

const G_PBR: [Option<Contents>; 16] = [
    Some(Contents::Messages(&[H2dReq])),
    Some(Contents::Messages(&[H2dRsp, H2dRsp])),
    Some(Contents::Messages(&[D2hReq])),
    Some(Contents::Messages(&[D2hRsp, D2hRsp, D2hRsp])),
    Some(Contents::Messages(&[M2sReq])),
    Some(Contents::Messages(&[M2sBiRsp, M2sBiRsp])),
    Some(Contents::Messages(&[S2mBiSnp])),
    Some(Contents::Messages(&[S2mNdr, S2mNdr])),
    None,
    None,
    None,
    None,
    Some(Contents::Messages(&[H2dData, H2dData, H2dData])),
    Some(Contents::Messages(&[D2hData, D2hData, D2hData])),
    Some(Contents::Messages(&[M2sRwd])),
    Some(Contents::Messages(&[S2mDrs, S2mDrs])),
];

const H_HBR: [Option<Contents>; 16] = [
    Some(Contents::Messages(&[H2dReq])),
    Some(Contents::Messages(&[H2dRsp, H2dRsp])),
    Some(Contents::Messages(&[D2hReq, D2hRsp])),
    Some(Contents::Messages(&[D2hRsp, D2hRsp, D2hRsp, D2hRsp])),
    Some(Contents::Messages(&[M2sReq])),
    Some(Contents::Messages(&[M2sBiRsp, M2sBiRsp])),
    Some(Contents::Messages(&[S2mBiSnp])),
    Some(Contents::Messages(&[S2mNdr, S2mNdr])),
    Some(Contents::Llctrl),
    None,
    None,
    None,
    Some(Contents::Messages(&[H2dData, H2dData, H2dData])),
    Some(Contents::Messages(&[D2hData, D2hData, D2hData, D2hData])),
    Some(Contents::Messages(&[M2sRwd])),
    Some(Contents::Messages(&[S2mDrs, S2mDrs])),
];

const HS_HBR: [Option<Contents>; 16] = [
    Some(Contents::Messages(&[H2dReq])),
    Some(Contents::Messages(&[H2dRsp, H2dRsp])),
    Some(Contents::Messages(&[D2hReq])),
    Some(Contents::Messages(&[D2hRsp, D2hRsp, D2hRsp])),
    Some(Contents::Messages(&[M2sReq])),
    Some(Contents::Messages(&[M2sBiRsp, M2sBiRsp])),
    Some(Contents::Messages(&[S2mBiSnp])),
    Some(Contents::Messages(&[S2mNdr, S2mNdr])),
    Some(Contents::Llctrl),
    None,
    None,
    None,
    Some(Contents::Messages(&[H2dData, H2dData, H2dData])),
    Some(Contents::Messages(&[D2hData, D2hData, D2hData])),
    Some(Contents::Messages(&[M2sRwd])),
    Some(Contents::Messages(&[S2mDrs, S2mDrs])),
];

/// The contents of SlotFmt `code` in a slot of `slot` kind for `width` (256B or PBR); `None`
/// for a reserved code, for the HS-slot in PBR flits (PBR has no latency-optimized flit) and
/// for 68B.
pub fn contents(width: Width, slot: SlotKind, code: u8) -> Option<Contents> {
    let table = match (width, slot) {
        (Width::Flit256, SlotKind::G) => &G_HBR,
        (Width::Pbr, SlotKind::G) => &G_PBR,
        (Width::Flit256, SlotKind::H) => &H_HBR,
        // The PBR H-slot holds what the PBR G-slot does (M2S Req and RwD zero-extended), plus
        // LLCTRL.
        (Width::Pbr, SlotKind::H) if code == 8 => return Some(Contents::Llctrl),
        (Width::Pbr, SlotKind::H) => &G_PBR,
        (Width::Flit256, SlotKind::Hs) => &HS_HBR,
        _ => return None,
    };
    table.get(usize::from(code)).copied().flatten()
}

/// The slot bit each of `kinds` starts at (after the 4-bit SlotFmt, one after another).
pub fn positions(kinds: &'static [Kind], width: Width) -> impl Iterator<Item = (Kind, u32)> {
    kinds.iter().scan(4u32, move |at, k| {
        let here = *at;
        *at += k.bits(width).unwrap_or(0);
        Some((*k, here))
    })
}

/// Writes `msg` at bit `at` of a `slot`-kind slot's bits; fails when the message does not
/// encode in `width` or has set bits beyond the slot's end.
pub fn put(bits: &mut u128, slot: SlotKind, at: u32, msg: &Msg, width: Width) -> Result<(), MsgError> {
    let m = msg.encode(width)?;
    let room = slot.bits().saturating_sub(at);
    if m & !slot_mask(room) != 0 {
        return Err(MsgError::Range { message: "slot", field: "bits beyond the slot", value: u64::from(room) });
    }
    *bits |= m << at;
    Ok(())
}

/// Reads the `kind` message at bit `at`; `None` when its Valid bit is clear.
pub fn get(bits: u128, slot: SlotKind, at: u32, kind: Kind, width: Width) -> Option<Msg> {
    if bits >> at & 1 == 0 {
        return None;
    }
    let len = kind.bits(width)?;
    let room = slot.bits().saturating_sub(at).min(len);
    Msg::decode(kind, bits >> at & slot_mask(room), width).ok()
}

/// A link-layer control message in an H- or HS-slot (SlotFmt 8; §4.3.6, Table 4-20). 256B mode
/// has no RETRY and no LLCRD: retry is the physical layer's and credits travel in CRD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Llctrl {
    /// IDE (LLCTRL 0010b): SubType 0000b Idle, 0001b Start, 0010b TMAC, 0011b MAC, 0100b Stop
    /// (H-slot only), with its payload.
    Ide {
        /// SubType.
        subtype: u8,
        /// Payload bits 95:0 (an HS-slot carries bits 79:0).
        payload: [u8; 12],
    },
    /// In-band Error, Viral (LLCTRL 0011b, SubType 0000b).
    Viral {
        /// The LD-ID vector (payload bits 15:0).
        ld_id: u16,
    },
    /// In-band Error, Poison (LLCTRL 0011b, SubType 0001b).
    Poison {
        /// The message offset, 0–7 (payload bits 3:0).
        offset: u8,
    },
    /// INIT.Param (LLCTRL 1100b, SubType 1000b).
    InitParam {
        /// Direct P2P CXL.mem capable (payload bit 0).
        p2p_mem: bool,
    },
    /// Any other LLCTRL and SubType, kept as received.
    Other {
        /// LLCTRL (4 bits).
        llctrl: u8,
        /// SubType (4 bits).
        subtype: u8,
        /// Payload bits 95:0.
        payload: [u8; 12],
    },
}

impl Llctrl {
    /// Whether this is IDE.MAC, after which a flit's slots keep their messages (after any
    /// other control message they are reserved).
    pub const fn is_ide_mac(&self) -> bool {
        matches!(self, Llctrl::Ide { subtype: 0b0011, .. })
    }

    /// The strict check: a Poison offset beyond 7 is reserved.
    pub const fn check_reserved(&self) -> Result<(), u8> {
        match self {
            Llctrl::Poison { offset } if *offset > 7 => Err(*offset),
            _ => Ok(()),
        }
    }

    /// The slot's bits (SlotFmt 8 included) for a slot of `slot` kind; an HS-slot keeps
    /// payload bits 79:0.
    pub fn emit(&self, slot: SlotKind) -> u128 {
        let (llctrl, subtype, payload): (u8, u8, u128) = match *self {
            Llctrl::Ide { subtype, payload } => (0b0010, subtype, le96(payload)),
            Llctrl::Viral { ld_id } => (0b0011, 0b0000, u128::from(ld_id)),
            Llctrl::Poison { offset } => (0b0011, 0b0001, u128::from(offset & 0xF)),
            Llctrl::InitParam { p2p_mem } => (0b1100, 0b1000, u128::from(p2p_mem)),
            Llctrl::Other { llctrl, subtype, payload } => (llctrl, subtype, le96(payload)),
        };
        let w = 8 | u128::from(llctrl & 0xF) << 4 | u128::from(subtype & 0xF) << 8 | payload << 16;
        w & slot_mask(slot.bits())
    }

    /// Reads an LLCTRL slot's bits.
    pub fn parse(bits: u128) -> Llctrl {
        let llctrl = (bits >> 4 & 0xF) as u8;
        let subtype = (bits >> 8 & 0xF) as u8;
        let payload = bits >> 16;
        let bytes = payload.to_le_bytes();
        let mut p = [0u8; 12];
        p.copy_from_slice(bytes.get(..12).unwrap_or(&[0; 12]));
        match (llctrl, subtype) {
            (0b0010, s) if s <= 0b0100 => Llctrl::Ide { subtype: s, payload: p },
            (0b0011, 0b0000) => Llctrl::Viral { ld_id: payload as u16 },
            (0b0011, 0b0001) => Llctrl::Poison { offset: (payload & 0xF) as u8 },
            (0b1100, 0b1000) => Llctrl::InitParam { p2p_mem: payload & 1 != 0 },
            _ => Llctrl::Other { llctrl, subtype, payload: p },
        }
    }
}

fn le96(p: [u8; 12]) -> u128 {
    let mut b = [0u8; 16];
    if let Some(d) = b.get_mut(..12) {
        d.copy_from_slice(&p);
    }
    u128::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message bits of every format (Tables 4-14, 4-15 and 4-16), and each fits its slot
    /// (whole, or zero-extended where the tables say so).
    #[test]
    fn slot_sizes_match_the_tables() {
        let used = |width, slot, code| -> u32 {
            let Some(Contents::Messages(k)) = contents(width, slot, code) else { panic!("{width:?} {slot:?} {code}") };
            k.iter().map(|k| k.bits(width).unwrap()).sum()
        };
        let g_hbr = [112, 120, 124, 96, 100, 120, 124, 120, 0, 0, 0, 0, 112, 96, 104, 120];
        let g_pbr = [92, 96, 96, 108, 120, 104, 96, 96, 0, 0, 0, 0, 108, 108, 124, 96];
        let h_hbr = [72, 80, 100, 96, 100, 80, 84, 80, 0, 0, 0, 0, 84, 96, 104, 80];
        let h_pbr = [92, 96, 96, 108, 120, 104, 96, 96, 0, 0, 0, 0, 108, 108, 124, 96];
        let hs = [72, 80, 76, 72, 100, 80, 84, 80, 0, 0, 0, 0, 84, 72, 104, 80];
        for (width, slot, want) in [
            (Width::Flit256, SlotKind::G, g_hbr),
            (Width::Pbr, SlotKind::G, g_pbr),
            (Width::Flit256, SlotKind::H, h_hbr),
            (Width::Pbr, SlotKind::H, h_pbr),
            (Width::Flit256, SlotKind::Hs, hs),
        ] {
            for (code, bits) in want.into_iter().enumerate() {
                let code = code as u8;
                match bits {
                    0 => assert!(!matches!(contents(width, slot, code), Some(Contents::Messages(_)))),
                    n => {
                        assert_eq!(used(width, slot, code), n, "{width:?} {slot:?} {code}");
                        // Only M2S Req and RwD (H4/H14 in PBR, HS4/HS14) may overrun the slot.
                        if 4 + n > slot.bits() {
                            assert!(matches!(code, 4 | 14), "{width:?} {slot:?} {code}");
                        }
                    }
                }
            }
        }
        assert_eq!(contents(Width::Pbr, SlotKind::Hs, 0), None);
        assert_eq!(contents(Width::Flit68, SlotKind::G, 0), None);
        assert_eq!(contents(Width::Flit256, SlotKind::H, 8), Some(Contents::Llctrl));
        assert_eq!(contents(Width::Flit256, SlotKind::G, 8), None);
    }

    #[test]
    fn zero_extended_messages() {
        use crate::msg::M2sReq;
        // PBR M2S Req in H4: 120 bits, the slot keeps bits 4..112 (108): TC and CKID[12:10]
        // must be zero.
        let m = Msg::M2sReq(M2sReq { tag: 7, spid: 1, dpid: 2, ckid: 0x3FF, ..M2sReq::default() });
        let mut bits = 4u128;
        put(&mut bits, SlotKind::H, 4, &m, Width::Pbr).unwrap();
        assert_eq!(get(bits, SlotKind::H, 4, Kind::M2sReq, Width::Pbr), Some(m));
        let too_big = Msg::M2sReq(M2sReq { tc: 1, ..M2sReq::default() });
        assert!(put(&mut 4u128, SlotKind::H, 4, &too_big, Width::Pbr).is_err());
        assert!(put(&mut 4u128, SlotKind::G, 4, &too_big, Width::Pbr).is_ok());
    }

    #[test]
    fn llctrl_by_hand() {
        let v = Llctrl::Viral { ld_id: 0x8001 };
        assert_eq!(v.emit(SlotKind::H), 8 | 0b0011 << 4 | 0x8001 << 16);
        assert_eq!(Llctrl::parse(v.emit(SlotKind::H)), v);
        let i = Llctrl::InitParam { p2p_mem: true };
        assert_eq!(Llctrl::parse(i.emit(SlotKind::Hs)), i);
        let ide = Llctrl::Ide { subtype: 3, payload: [0xAB; 12] };
        assert_eq!(Llctrl::parse(ide.emit(SlotKind::H)), ide);
        // An HS-slot keeps payload bits 79:0.
        let Llctrl::Ide { payload, .. } = Llctrl::parse(ide.emit(SlotKind::Hs)) else { panic!() };
        assert_eq!(payload, [0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0, 0]);
        let o = Llctrl::Other { llctrl: 0b0101, subtype: 1, payload: [1; 12] };
        assert_eq!(Llctrl::parse(o.emit(SlotKind::H)), o);
    }
}
