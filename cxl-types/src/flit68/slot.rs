//! The 68B flit's slot formats (CXL 3.x §4.2.3, Tables 4-6, 4-7 and 4-8): H0–H6 for the header
//! slot (slot 0, 96 bits after the flit header) and G0–G6 for the generic slots 1–3 (128 bits),
//! in each direction.
//!
//! | code | H2D/M2S slot 0 | H2D/M2S slots 1–3 | D2H/S2M slot 0 | D2H/S2M slots 1–3 |
//! |---|---|---|---|---|
//! | 000 | H0: H2D Req, H2D Rsp | G0: a 16-byte data chunk | H0: D2H DH, 2 D2H Rsp, S2M NDR | G0: data chunk |
//! | 001 | H1: H2D DH, 2 H2D Rsp | G1: 4 H2D Rsp | H1: D2H Req, D2H DH | G1: D2H Req, 2 D2H Rsp |
//! | 010 | H2: H2D Req, H2D DH | G2: H2D Req, H2D DH, H2D Rsp | H2: 4 D2H DH, D2H Rsp | G2: D2H Req, D2H DH, D2H Rsp |
//! | 011 | H3: 4 H2D DH | G3: 4 H2D DH, H2D Rsp | H3: S2M DRS, S2M NDR | G3: 4 D2H DH |
//! | 100 | H4: M2S RwD | G4: M2S Req, H2D DH | H4: 2 S2M NDR | G4: S2M DRS, 2 S2M NDR |
//! | 101 | H5: M2S Req | G5: M2S RwD, H2D Rsp | H5: 2 S2M DRS | G5: 2 S2M NDR |
//! | 110 | H6: MAC (IDE) | reserved | H6: MAC | G6: 3 S2M DRS |
//! | 111 | reserved | reserved | reserved | reserved |
//!
//! Messages are packed tightly from the slot's first free bit (bit 32 of slot 0, bit 0 of a
//! generic slot), earlier messages at lower bits, each field least significant bit first.
//! Where two S2M NDRs share a slot (H4, G4, G5) the first one's DevLoad does not sit with it:
//! it follows the second NDR's DevLoad (Figures 4-26, 4-34 and 4-35; the "\*" field).
//! *Project-defined:* G4 and G5 of the H2D/M2S direction start their second message at bit 88,
//! after one reserved bit (the figures are images; two public slot implementations agree).

use crate::msg::{Kind, Msg, MsgError, Width, slot_mask};

/// The direction of a link's traffic; the same slot format code means different contents in
/// each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Direction {
    /// Host to device: H2D (CXL.cache) and M2S (CXL.mem).
    Downstream,
    /// Device to host: D2H and S2M.
    Upstream,
}

/// Where one message sits in a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// The message kind.
    pub kind: Kind,
    /// The slot bit of its Valid bit (slot bit `8n + b` is bit `b` of the slot's byte `n`).
    pub at: u8,
    /// For the first of two S2M NDRs: the slot bit of its DevLoad, which does not follow the
    /// message.
    pub dev_load_at: Option<u8>,
}

/// What a slot format holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// Messages at fixed positions (each present when its Valid bit is set).
    Messages(&'static [Position]),
    /// A 16-byte data chunk (G0).
    Data,
    /// A 96-bit IDE MAC (H6).
    Mac,
}

const fn at(kind: Kind, at: u8) -> Position {
    Position { kind, at, dev_load_at: None }
}

const fn ndr_split(at: u8, dev_load_at: u8) -> Position {
    Position { kind: Kind::S2mNdr, at, dev_load_at: Some(dev_load_at) }
}

use Kind::*;

/// H2D/M2S header-slot formats H0–H6.
const DOWN_H: [Contents; 7] = [
    Contents::Messages(&[at(H2dReq, 32), at(H2dRsp, 96)]),
    Contents::Messages(&[at(H2dData, 32), at(H2dRsp, 56), at(H2dRsp, 88)]),
    Contents::Messages(&[at(H2dReq, 32), at(H2dData, 96)]),
    Contents::Messages(&[at(H2dData, 32), at(H2dData, 56), at(H2dData, 80), at(H2dData, 104)]),
    Contents::Messages(&[at(M2sRwd, 32)]),
    Contents::Messages(&[at(M2sReq, 32)]),
    Contents::Mac,
];

/// H2D/M2S generic-slot formats G0–G5 (G6 reserved).
const DOWN_G: [Contents; 6] = [
    Contents::Data,
    Contents::Messages(&[at(H2dRsp, 0), at(H2dRsp, 32), at(H2dRsp, 64), at(H2dRsp, 96)]),
    Contents::Messages(&[at(H2dReq, 0), at(H2dData, 64), at(H2dRsp, 88)]),
    Contents::Messages(&[at(H2dData, 0), at(H2dData, 24), at(H2dData, 48), at(H2dData, 72), at(H2dRsp, 96)]),
    Contents::Messages(&[at(M2sReq, 0), at(H2dData, 88)]),
    Contents::Messages(&[at(M2sRwd, 0), at(H2dRsp, 88)]),
];

/// D2H/S2M header-slot formats H0–H6.
const UP_H: [Contents; 7] = [
    Contents::Messages(&[at(D2hData, 32), at(D2hRsp, 49), at(D2hRsp, 69), at(S2mNdr, 89)]),
    Contents::Messages(&[at(D2hReq, 32), at(D2hData, 111)]),
    Contents::Messages(&[at(D2hData, 32), at(D2hData, 49), at(D2hData, 66), at(D2hData, 83), at(D2hRsp, 100)]),
    Contents::Messages(&[at(S2mDrs, 32), at(S2mNdr, 72)]),
    Contents::Messages(&[ndr_split(32, 90), at(S2mNdr, 60)]),
    Contents::Messages(&[at(S2mDrs, 32), at(S2mDrs, 72)]),
    Contents::Mac,
];

/// D2H/S2M generic-slot formats G0–G6.
const UP_G: [Contents; 7] = [
    Contents::Data,
    Contents::Messages(&[at(D2hReq, 0), at(D2hRsp, 79), at(D2hRsp, 99)]),
    Contents::Messages(&[at(D2hReq, 0), at(D2hData, 79), at(D2hRsp, 96)]),
    Contents::Messages(&[at(D2hData, 0), at(D2hData, 17), at(D2hData, 34), at(D2hData, 51)]),
    Contents::Messages(&[at(S2mDrs, 0), ndr_split(40, 98), at(S2mNdr, 68)]),
    Contents::Messages(&[ndr_split(0, 58), at(S2mNdr, 28)]),
    Contents::Messages(&[at(S2mDrs, 0), at(S2mDrs, 40), at(S2mDrs, 80)]),
];

/// The contents of format `code` in the header slot (`header`) or a generic slot, in
/// `direction`; `None` for a reserved code.
pub fn contents(direction: Direction, header: bool, code: u8) -> Option<Contents> {
    let table: &[Contents] = match (direction, header) {
        (Direction::Downstream, true) => &DOWN_H,
        (Direction::Downstream, false) => &DOWN_G,
        (Direction::Upstream, true) => &UP_H,
        (Direction::Upstream, false) => &UP_G,
    };
    table.get(usize::from(code)).copied()
}

/// Bit `code` set for each format of a table with two or more data-header positions (an MDH
/// format, §4.2.5); computed at compile time.
const fn mdh_formats(table: &[Contents]) -> u8 {
    let mut flags = 0u8;
    let mut rest = table;
    let mut code = 0;
    while let [first, tail @ ..] = rest {
        if let Contents::Messages(positions) = first {
            let mut n = 0;
            let mut p = *positions;
            while let [pos, more @ ..] = p {
                n += pos.kind.has_data() as usize;
                p = more;
            }
            flags |= ((n > 1) as u8) << code;
        }
        code += 1;
        rest = tail;
    }
    flags
}

const MDH: [u8; 4] = [mdh_formats(&DOWN_H), mdh_formats(&DOWN_G), mdh_formats(&UP_H), mdh_formats(&UP_G)];

/// Whether format `code` of a header slot or a generic slot in `direction` has two or more
/// data-header positions (an MDH format).
pub fn is_mdh(direction: Direction, header: bool, code: u8) -> bool {
    mdh_table(direction, header) >> (code & 7) & 1 != 0
}

fn mdh_table(direction: Direction, header: bool) -> u8 {
    MDH.get(usize::from(direction == Direction::Upstream) * 2 + usize::from(!header)).copied().unwrap_or_default()
}

/// The format codes that hold messages, for a header slot or a generic slot, in `direction`,
/// each with its positions and whether it is an MDH format.
pub(crate) fn message_formats(
    direction: Direction,
    header: bool,
) -> impl Iterator<Item = (u8, &'static [Position], bool)> {
    let mdh = mdh_table(direction, header);
    (0..8u8).filter_map(move |code| match contents(direction, header, code) {
        Some(Contents::Messages(p)) => Some((code, p, mdh >> code & 1 != 0)),
        _ => None,
    })
}

/// The bits of the first NDR that travel apart in a split pair (its DevLoad, message bits
/// 28–29).
const DEV_LOAD: u32 = 28;

/// Writes `msg` at `pos` into `slot` (a 68B encoding).
pub fn put(slot: &mut u128, pos: &Position, msg: &Msg) -> Result<(), MsgError> {
    let bits = msg.encode(Width::Flit68)?;
    match pos.dev_load_at {
        None => *slot |= bits << pos.at,
        Some(d) => {
            let low = bits & ((1 << DEV_LOAD) - 1);
            *slot |= low << pos.at | (bits >> DEV_LOAD & 0b11) << d;
        }
    }
    Ok(())
}

/// Reads the message at `pos` in `slot`; `None` when its Valid bit is clear.
pub fn get(slot: u128, pos: &Position) -> Option<Msg> {
    if slot >> pos.at & 1 == 0 {
        return None;
    }
    let len = pos.kind.bits(Width::Flit68).unwrap_or(0);
    let bits = match pos.dev_load_at {
        None => slot >> pos.at & slot_mask(len),
        Some(d) => (slot >> pos.at & slot_mask(DEV_LOAD)) | (slot >> d & 0b11) << DEV_LOAD,
    };
    Msg::decode(pos.kind, bits, Width::Flit68).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message-holding format fits its slot, its messages do not overlap and the split
    /// NDR's DevLoad sits in bits no message uses.
    #[test]
    fn positions_fit_without_overlap() {
        for direction in [Direction::Downstream, Direction::Upstream] {
            for header in [true, false] {
                for (code, positions, _) in message_formats(direction, header) {
                    let mut used: u128 = if header { 0xFFFF_FFFF } else { 0 };
                    for pos in positions {
                        let len = pos.kind.bits(Width::Flit68).unwrap();
                        let (body, apart) = match pos.dev_load_at {
                            None => (len, None),
                            Some(d) => (DEV_LOAD, Some(d)),
                        };
                        assert!(u32::from(pos.at) + body <= 128, "{direction:?} {header} {code}");
                        let m = slot_mask(body) << pos.at;
                        assert_eq!(used & m, 0, "{direction:?} header={header} code={code} {pos:?}");
                        used |= m;
                        if let Some(d) = apart {
                            assert!(u32::from(d) + 2 <= 128);
                            let m = 0b11u128 << d;
                            assert_eq!(used & m, 0);
                            used |= m;
                        }
                        assert_eq!(pos.kind.downstream(), direction == Direction::Downstream);
                    }
                }
            }
        }
    }

    /// The slot lengths of Tables 4-7 and 4-8 (bits used, messages and their gaps).
    #[test]
    fn slot_lengths() {
        let span = |direction, header, code| -> u32 {
            let Some(Contents::Messages(p)) = contents(direction, header, code) else { panic!() };
            let start = if header { 32 } else { 0 };
            p.iter()
                .map(|pos| {
                    let len = pos.kind.bits(Width::Flit68).unwrap();
                    (u32::from(pos.at) + len).max(pos.dev_load_at.map_or(0, |d| u32::from(d) + 2))
                })
                .max()
                .unwrap()
                - start
        };
        use Direction::*;
        let down_h = [96, 88, 88, 96, 87, 87];
        let down_g = [128, 120, 128, 112, 120];
        let up_h = [87, 96, 88, 70, 60, 80];
        let up_g = [119, 116, 68, 100, 60, 120];
        for (code, want) in down_h.iter().enumerate() {
            assert_eq!(span(Downstream, true, code as u8), *want, "down H{code}");
        }
        for (i, want) in down_g.iter().enumerate() {
            assert_eq!(span(Downstream, false, i as u8 + 1), *want, "down G{}", i + 1);
        }
        for (code, want) in up_h.iter().enumerate() {
            assert_eq!(span(Upstream, true, code as u8), *want, "up H{code}");
        }
        for (i, want) in up_g.iter().enumerate() {
            assert_eq!(span(Upstream, false, i as u8 + 1), *want, "up G{}", i + 1);
        }
        assert_eq!(contents(Downstream, false, 6), None);
        assert_eq!(contents(Upstream, true, 7), None);
        assert_eq!(contents(Upstream, false, 0), Some(Contents::Data));
        assert_eq!(contents(Downstream, true, 6), Some(Contents::Mac));
    }

    /// H4 (D2H/S2M): NDR0 at 32–59 without its DevLoad, NDR1 at 60–89 with its DevLoad at
    /// 88–89, NDR0's DevLoad at 90–91.
    #[test]
    fn split_dev_load_by_hand() {
        use crate::msg::S2mNdr;
        use crate::msg::mem::{DevLoad, NdrOpcode};
        let Some(Contents::Messages(p)) = contents(Direction::Upstream, true, 4) else { panic!() };
        let n0 = Msg::S2mNdr(S2mNdr {
            opcode: NdrOpcode::CmpS,
            tag: 1,
            dev_load: DevLoad::SevereOverload,
            ..S2mNdr::default()
        });
        let n1 =
            Msg::S2mNdr(S2mNdr { opcode: NdrOpcode::Cmp, tag: 2, dev_load: DevLoad::Optimal, ..S2mNdr::default() });
        let mut slot = 0u128;
        put(&mut slot, &p[0], &n0).unwrap();
        put(&mut slot, &p[1], &n1).unwrap();
        let want = 1u128 << 32 | 1 << 33 | 1 << 40 | 1 << 60 | 2 << 68 | 0b01 << 88 | 0b11 << 90;
        assert_eq!(slot, want);
        assert_eq!(get(slot, &p[0]), Some(n0));
        assert_eq!(get(slot, &p[1]), Some(n1));
    }
}
