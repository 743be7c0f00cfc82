//! TL flow control (UALink 1.0 §5.8, Table 5-26, Table 5-38): credits per class, each either a pool
//! credit (any VC) or a credit of one VC.
//!
//! * Four classes: request fields, response fields, request data (64-byte buffers for write data,
//!   atomic operands and write messages) and response data (64-byte buffers for read data). One
//!   data credit = one 64-byte beat = two data half-flits; byte-enable half-flits need none.
//! * Both ends start with no credits. Each receiver advertises its buffers in flow-control
//!   fields, then sends the Initial Credit Release Complete message.
//! * A request or response carries POOL = 1 when a pool credit paid for it; its data credits are
//!   of the same kind. The receiver returns each credit as recorded: to the pool, or to the VC.
//! * In a flow-control field `t` = 0 means the pool: the opposite sense to POOL. Only
//!   [`CreditReturn`] speaks `t`; everything here speaks [`Target`].
//! * Within one control half-flit, at most one flow-control field returns credits for any class
//!   and target, so a receiver may OR the fields (here: add, which is the same).
//!
//! *Project-defined*: a sender uses VC credits before pool credits.

use super::field::{CreditReturn, CreditTarget, FlowControl};
use crate::Error;

/// A credit class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Class {
    /// Request fields.
    ReqCmd = 0,
    /// Response fields.
    RspCmd = 1,
    /// Request data beats.
    ReqData = 2,
    /// Response data beats.
    RspData = 3,
}

impl Class {
    /// All four classes, in flow-control field order.
    pub const ALL: [Class; 4] = [Class::ReqCmd, Class::RspCmd, Class::ReqData, Class::RspData];

    /// The most credits one flow-control field returns for this class: 7 or 31.
    pub const fn max_per_field(self) -> u8 {
        match self {
            Class::ReqCmd | Class::RspCmd => 7,
            Class::ReqData | Class::RspData => 31,
        }
    }
}

/// Where a credit belongs: the pool, or one VC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Target {
    /// The pool (POOL = 1 on requests and responses; `t` = 0 in flow-control fields).
    Pool,
    /// VC 0..=3.
    Vc(u8),
}

impl Target {
    /// The target a request or response names with its POOL and VCHAN bits.
    pub const fn of(pool: bool, vc: u8) -> Self {
        if pool { Target::Pool } else { Target::Vc(vc & 3) }
    }

    /// Index 0 (pool) or 1..=4 (VC 0..=3).
    const fn index(self) -> usize {
        match self {
            Target::Pool => 0,
            Target::Vc(v) => 1 + (v & 3) as usize,
        }
    }

    const fn from_index(i: usize) -> Self {
        if i == 0 { Target::Pool } else { Target::Vc((i - 1) as u8 & 3) }
    }

    const fn from_wire(t: CreditTarget) -> Self {
        match t {
            CreditTarget::Pool => Target::Pool,
            CreditTarget::Vc(v) => Target::Vc(v & 3),
        }
    }

    const fn to_wire(self) -> CreditTarget {
        match self {
            Target::Pool => CreditTarget::Pool,
            Target::Vc(v) => CreditTarget::Vc(v),
        }
    }
}

/// Credit counts per class and target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ledger {
    counts: [[u16; 5]; 4],
}

impl Ledger {
    /// No credits.
    pub const EMPTY: Self = Ledger { counts: [[0; 5]; 4] };

    /// Credits held for `class` at `target`.
    pub fn get(&self, class: Class, target: Target) -> u16 {
        self.counts.get(class as usize).and_then(|c| c.get(target.index())).copied().unwrap_or(0)
    }

    fn slot(&mut self, class: Class, target: Target) -> Option<&mut u16> {
        self.counts.get_mut(class as usize).and_then(|c| c.get_mut(target.index()))
    }

    /// Adds `n` credits; more than 65535 of one kind is refused and changes nothing.
    pub fn add(&mut self, class: Class, target: Target, n: u16) -> Result<(), Error> {
        let s = self.slot(class, target).ok_or(Error::BadValue { field: "credit target", value: 0 })?;
        *s = s.checked_add(n).ok_or(Error::BadValue { field: "credits (count overflows)", value: u32::from(n) })?;
        Ok(())
    }

    /// Takes `n` credits if held.
    fn take(&mut self, class: Class, target: Target, n: u16) -> bool {
        match self.slot(class, target) {
            Some(s) if *s >= n => {
                *s -= n;
                true
            }
            _ => false,
        }
    }

    /// Whether every count is zero.
    pub fn is_empty(&self) -> bool {
        // An OR of the counts, written out: no `memcmp` call (which comparing the array with `==`
        // is on a small core, 77 instructions for these 40 bytes), and no iterator, which a
        // Cortex-M4 at opt-level z ran as a loop of about 8 instructions a count.
        let [a, b, c, d] = self.counts;
        let row = |[p, v0, v1, v2, v3]: [u16; 5]| p | v0 | v1 | v2 | v3;
        row(a) | row(b) | row(c) | row(d) == 0
    }
}

/// The credits a sender holds, granted by the peer's flow-control fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TxCredits {
    /// What is held.
    pub held: Ledger,
}

impl TxCredits {
    /// Adds the credits of a flow-control field. An overflowing grant is refused whole.
    pub fn grant(&mut self, fc: &FlowControl) -> Result<(), Error> {
        let mut next = self.held;
        for (class, r) in Class::ALL.into_iter().zip([fc.req_cmd, fc.rsp_cmd, fc.req_data, fc.rsp_data]) {
            next.add(class, Target::from_wire(r.target), u16::from(r.credits))?;
        }
        self.held = next;
        Ok(())
    }

    /// Whether [`TxCredits::take`] would succeed.
    pub fn can_take(&self, cmd: Class, data_class: Class, vc: u8, data: u16) -> bool {
        [Target::Vc(vc & 3), Target::Pool]
            .into_iter()
            .any(|t| self.held.get(cmd, t) >= 1 && self.held.get(data_class, t) >= data)
    }

    /// Takes one `cmd` credit and `data` credits of `data_class` on VC `vc`, all of one kind:
    /// the VC's own if it has them all, else the pool's. Returns POOL, or `None` (nothing taken).
    pub fn take(&mut self, cmd: Class, data_class: Class, vc: u8, data: u16) -> Option<bool> {
        for (target, pool) in [(Target::Vc(vc & 3), false), (Target::Pool, true)] {
            if self.held.get(cmd, target) >= 1 && self.held.get(data_class, target) >= data {
                self.held.take(cmd, target, 1);
                self.held.take(data_class, target, data);
                return Some(pool);
            }
        }
        None
    }
}

/// The credits a receiver owes back, returned through flow-control fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Owed {
    /// What is owed.
    pub owed: Ledger,
}

impl Owed {
    /// Records `n` credits to return (buffers freed, or initial credits to advertise).
    pub fn release(&mut self, class: Class, target: Target, n: u16) -> Result<(), Error> {
        self.owed.add(class, target, n)
    }

    /// Whether nothing is owed.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.owed.is_empty()
    }

    /// The next flow-control field for a control half-flit, given the targets already used per
    /// class in that half-flit (`used`, a bit per target); `None` when nothing more can go in it.
    pub fn next_field(&mut self, used: &mut [u8; 4]) -> Option<FlowControl> {
        let mut fc = FlowControl::NOP;
        let mut any = false;
        for (class, (slot, used)) in Class::ALL.into_iter().zip(
            [&mut fc.req_cmd, &mut fc.rsp_cmd, &mut fc.req_data, &mut fc.rsp_data].into_iter().zip(used.iter_mut()),
        ) {
            for i in 0..5 {
                let target = Target::from_index(i);
                let have = self.owed.get(class, target);
                if have != 0 && *used & 1 << i == 0 {
                    let n = have.min(u16::from(class.max_per_field()));
                    self.owed.take(class, target, n);
                    *slot = CreditReturn { target: target.to_wire(), credits: n as u8 };
                    *used |= 1 << i;
                    any = true;
                    break;
                }
            }
        }
        any.then_some(fc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ledger is empty only while every count is zero: one credit of any class at any target
    /// makes it not empty.
    #[test]
    fn ledger_is_empty_sees_every_count() {
        assert!(Ledger::EMPTY.is_empty());
        for class in Class::ALL {
            for t in 0..5 {
                let mut l = Ledger::EMPTY;
                l.add(class, Target::from_index(t), 1).unwrap();
                assert!(!l.is_empty(), "{class:?} {t}");
            }
        }
    }

    #[test]
    fn vc_credits_first_then_the_pool_with_data_of_the_same_kind() {
        let mut tx = TxCredits::default();
        let fc = FlowControl {
            req_cmd: CreditReturn { target: CreditTarget::Vc(1), credits: 1 },
            req_data: CreditReturn { target: CreditTarget::Pool, credits: 8 },
            ..FlowControl::NOP
        };
        tx.grant(&fc).unwrap();
        // VC 1 has a command credit but no data credits: a 4-beat write must use the pool, which
        // has data but no command credit.
        assert_eq!(tx.take(Class::ReqCmd, Class::ReqData, 1, 4), None);
        tx.grant(&FlowControl { req_cmd: CreditReturn { target: CreditTarget::Pool, credits: 2 }, ..FlowControl::NOP })
            .unwrap();
        assert_eq!(tx.take(Class::ReqCmd, Class::ReqData, 1, 4), Some(true));
        // A read needs no data credit: VC 1's own command credit pays.
        assert_eq!(tx.take(Class::ReqCmd, Class::ReqData, 1, 0), Some(false));
        assert_eq!(tx.held.get(Class::ReqCmd, Target::Pool), 1);
        assert_eq!(tx.held.get(Class::ReqData, Target::Pool), 4);
    }

    #[test]
    fn returns_split_into_fields_one_target_per_class_and_field_limits() {
        let mut owed = Owed::default();
        owed.release(Class::ReqData, Target::Pool, 40).unwrap();
        owed.release(Class::ReqData, Target::Vc(2), 3).unwrap();
        owed.release(Class::RspCmd, Target::Vc(0), 9).unwrap();
        let mut used = [0u8; 4];
        let a = owed.next_field(&mut used).unwrap();
        assert_eq!(a.req_data, CreditReturn { target: CreditTarget::Pool, credits: 31 });
        assert_eq!(a.rsp_cmd, CreditReturn { target: CreditTarget::Vc(0), credits: 7 });
        // In the same half-flit the pool and VC 0 are used: VC 2's data go next, nothing else.
        let b = owed.next_field(&mut used).unwrap();
        assert_eq!(b.req_data, CreditReturn { target: CreditTarget::Vc(2), credits: 3 });
        assert_eq!(b.rsp_cmd, CreditReturn::NONE);
        assert_eq!(owed.next_field(&mut used), None);
        // The next half-flit takes the rest.
        let mut used = [0u8; 4];
        let c = owed.next_field(&mut used).unwrap();
        assert_eq!((c.req_data.credits, c.rsp_cmd.credits), (9, 2));
        assert!(owed.is_empty());
    }

    #[test]
    fn an_overflowing_grant_changes_nothing() {
        let mut tx = TxCredits::default();
        let big =
            FlowControl { req_data: CreditReturn { target: CreditTarget::Pool, credits: 31 }, ..FlowControl::NOP };
        for _ in 0..2114 {
            tx.grant(&big).unwrap();
        }
        let before = tx;
        assert!(tx.grant(&big).is_err());
        assert_eq!(tx, before);
    }
}
