//! The extension headers of the messages an endpoint is sending, kept apart from the message
//! slots: few messages carry one (atomics and rendezvous sends, UE 1.0 §3.4: the atomic
//! extension 4 B, compare-and-swap 36 B, rendezvous 24 B on the wire), and a slot that kept
//! room for the largest would grow by 40 B. The endpoint's const generic `X` sizes this pool
//! (*project-defined*, [`EXTENSIONS`](super::EXTENSIONS) by default); a message whose
//! extension finds it full is refused with
//! [`EndpointError::TooManyExtensions`](super::EndpointError::TooManyExtensions).

use crate::pdc::table::{FreeSlots, SlotRef};
use crate::ses::Extension;
use linklayer::ZeroOption;

/// `X` extension headers, each owned by one message slot (its `SendMsg::ext`). Empty, it is
/// all-zero bytes.
pub(super) struct Extensions<const X: usize> {
    entries: [ZeroOption<Extension>; X],
    free: FreeSlots<X>,
}

impl<const X: usize> Extensions<X> {
    /// Every entry free.
    pub(super) const EMPTY: Self = Extensions { entries: [const { ZeroOption::NONE }; X], free: FreeSlots::EMPTY };

    /// Keeps `ext`, returning where ([`SlotRef::NONE`] for none); `None`, with nothing changed,
    /// when every entry is in use.
    pub(super) fn keep(&mut self, ext: Option<Extension>) -> Option<SlotRef> {
        let Some(ext) = ext else { return Some(SlotRef::NONE) };
        let i = self.free.take()?;
        let entry = self.entries.get_mut(usize::from(i))?;
        *entry = ZeroOption::Some(ext);
        Some(SlotRef::to(usize::from(i)))
    }

    /// The extension kept at `at`.
    pub(super) fn get(&self, at: SlotRef) -> Option<Extension> {
        self.entries.get(at.index()?)?.as_ref().copied()
    }

    /// Whether a message with the extension at `at` carries its bytes as payload (see
    /// [`Segment::carries_payload`](crate::msg::Segment::carries_payload)), looked at where it
    /// is kept.
    pub(super) fn carries_payload(&self, at: SlotRef) -> bool {
        let ext = at.index().and_then(|i| self.entries.get(i)).and_then(ZeroOption::as_ref);
        crate::msg::Segment::carries_payload(ext)
    }

    /// Frees the entry at `at` (nothing for none, or an entry already free).
    pub(super) fn give(&mut self, at: SlotRef) {
        let Some(i) = at.index() else { return };
        if let Some(entry) = self.entries.get_mut(i).filter(|e| e.is_some()) {
            entry.clear();
            self.free.give(i as u16);
        }
    }

    /// Entries in use.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(super) fn used(&self) -> usize {
        self.free.used()
    }

    /// Every entry free, in place.
    pub(super) fn clear(&mut self) {
        self.entries.iter_mut().for_each(ZeroOption::clear);
        self.free.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ses::{AtomicExt, AtomicOpcode, Datatype, SemanticControl};

    fn atomic(n: u8) -> Extension {
        Extension::Atomic(AtomicExt {
            opcode: AtomicOpcode::Sum,
            datatype: Datatype::Uint64,
            semantic_control: SemanticControl::from_bits_retain(n),
        })
    }

    #[test]
    fn keeps_gives_back_and_refuses_when_full() {
        let mut pool = Extensions::<2>::EMPTY;
        assert_eq!(pool.keep(None), Some(SlotRef::NONE));
        let (a, b) = (pool.keep(Some(atomic(1))).unwrap(), pool.keep(Some(atomic(2))).unwrap());
        assert_eq!((pool.get(a), pool.get(b), pool.used()), (Some(atomic(1)), Some(atomic(2)), 2));
        assert_eq!(pool.keep(Some(atomic(3))), None);
        assert_eq!((pool.keep(None), pool.used()), (Some(SlotRef::NONE), 2));
        pool.give(a);
        pool.give(a);
        pool.give(SlotRef::NONE);
        assert_eq!((pool.get(a), pool.used()), (None, 1));
        let c = pool.keep(Some(atomic(4))).unwrap();
        assert_eq!((c, pool.get(c), pool.get(b)), (a, Some(atomic(4)), Some(atomic(2))));
        pool.clear();
        assert_eq!((pool.used(), pool.get(b)), (0, None));
        let mut none = Extensions::<0>::EMPTY;
        assert_eq!((none.keep(Some(atomic(1))), none.keep(None)), (None, Some(SlotRef::NONE)));
    }
}
