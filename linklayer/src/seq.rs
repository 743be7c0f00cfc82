//! Wrapping sequence numbers and cyclic counters with serial-number arithmetic.
//!
//! Every link in the workspace counts in a finite, wrapping space:
//!
//! | user | space | type |
//! |---|---|---|
//! | UE PDS packet sequence numbers | 32 bits, 0 allowed | `Seq<Bits<32>>` |
//! | UE CBFC credits consumed / freed (UE 1.0 §5.2) | 20 bits, cyclic | [`crate::cbfc::CreditCounter`] |
//! | UE LLR frame sequence numbers (UE 1.0 §5.1) | 20 bits, wrapping (SONiC LLR test plan, OTG model) | [`crate::llr::UeLlrSpace`] |
//! | UALink DL replay (UALink 1.0 §6.6) | 1..=511, 0 reserved, "%511" arithmetic | `Seq<NonZeroBits<9>>` |
//! | UCIe retry (UCIe 2.0 §3.8) | 1..=255, 0 reserved | `Seq<NonZeroBits<8>>` |
//!
//! A space is a marker type implementing [`SeqSpace`]: [`Bits<N>`] holds every value of `N` bits
//! (modulus 2^N), [`NonZeroBits<N>`] holds `1..=2^N-1` and skips 0 on wrap (modulus 2^N-1). Values
//! of different spaces are different types, so a PSN can never be compared with a credit counter.
//!
//! Ordering follows RFC 1982 serial-number arithmetic generalised to any modulus `M`: with
//! `d = (b - a) mod M`, `a` is before `b` when `0 < d < M/2` and after it when `d > M/2`; when `M`
//! is even and `d == M/2` the two are incomparable ([`Seq::serial_cmp`] returns `None`).
//! Protocols that define their own acceptance windows (UALink's "`(a - b) % 511 <= 256`") build
//! them from [`Seq::distance_to`], which is always defined.

use core::cmp::Ordering;
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;

/// A wrapping number space: `BITS` bits wide, optionally with 0 reserved.
pub trait SeqSpace: Copy + Eq + Hash + fmt::Debug + 'static {
    /// Width of the field that carries the number, 1..=32.
    const BITS: u32;
    /// Whether 0 is reserved: values run `1..=2^BITS-1` and wrap from the top to 1.
    const ZERO_RESERVED: bool;
    /// Number of distinct values.
    const MODULUS: u64 = (1u64 << Self::BITS) - Self::ZERO_RESERVED as u64;
    /// Compile-time check of the parameters; evaluated by every constructor.
    const VALID: () = assert!(
        Self::BITS >= 1 && Self::BITS <= 32 && (Self::BITS >= 2 || !Self::ZERO_RESERVED),
        "a sequence space is 1..=32 bits wide and keeps at least one value"
    );
}

/// Every value of `N` bits; modulus 2^N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bits<const N: u32>;

impl<const N: u32> SeqSpace for Bits<N> {
    const BITS: u32 = N;
    const ZERO_RESERVED: bool = false;
}

/// The values `1..=2^N-1` of an `N`-bit field, 0 reserved; modulus 2^N-1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NonZeroBits<const N: u32>;

impl<const N: u32> SeqSpace for NonZeroBits<N> {
    const BITS: u32 = N;
    const ZERO_RESERVED: bool = true;
}

/// A number in the wrapping space `S`.
///
/// Construction checks the range once; every operation afterwards stays in range and never
/// panics. It keeps its position from [`Seq::FIRST`], so `FIRST` is zero bytes in every space
/// (an engine's empty value can be a `static` in `.bss`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seq<S: SeqSpace> {
    /// [`Seq::index`]: `0..MODULUS`.
    index: u32,
    space: PhantomData<S>,
}

impl<S: SeqSpace> Seq<S> {
    const OFFSET: u32 = S::ZERO_RESERVED as u32;

    /// The lowest value of the space (0, or 1 when 0 is reserved).
    pub const FIRST: Self = Self::at(0);

    /// The highest value of the space.
    pub const LAST: Self = Self::at((S::MODULUS - 1) as u32);

    /// The number of distinct values.
    pub const MODULUS: u64 = S::MODULUS;

    /// The value at `index`, which must be below `MODULUS`.
    const fn at(index: u32) -> Self {
        let () = S::VALID;
        Seq { index, space: PhantomData }
    }

    /// `value` if it lies in the space (fits `BITS` bits and is not a reserved 0).
    pub const fn new(value: u32) -> Option<Self> {
        let () = S::VALID;
        if value < Self::OFFSET || value as u64 >= S::MODULUS + Self::OFFSET as u64 {
            None
        } else {
            Some(Self::at(value - Self::OFFSET))
        }
    }

    /// The value at position `index` counted from [`Seq::FIRST`], reduced modulo the space.
    pub const fn from_index(index: u64) -> Self {
        // An index in range (the common case) skips the division: a 64-bit one is a library
        // call on a 32-bit core.
        let index = if index < S::MODULUS { index } else { index % S::MODULUS };
        Self::at(index as u32)
    }

    /// The value as carried on the wire.
    pub const fn value(self) -> u32 {
        // Below MODULUS + OFFSET ≤ 2^32: no overflow.
        self.index + Self::OFFSET
    }

    /// Position of the value counted from [`Seq::FIRST`] (`0..MODULUS`).
    pub const fn index(self) -> u64 {
        self.index as u64
    }

    /// The value `n` steps later, wrapping.
    #[must_use]
    pub const fn wrapping_add(self, n: u64) -> Self {
        Self::from_index(self.index() + n % S::MODULUS)
    }

    /// The value `n` steps earlier, wrapping.
    #[must_use]
    pub const fn wrapping_sub(self, n: u64) -> Self {
        Self::from_index(self.index() + S::MODULUS - n % S::MODULUS)
    }

    /// The next value.
    #[must_use]
    pub const fn next(self) -> Self {
        self.wrapping_add(1)
    }

    /// The previous value.
    #[must_use]
    pub const fn prev(self) -> Self {
        self.wrapping_sub(1)
    }

    /// Steps forward from `self` to `later`: `(later - self) mod MODULUS`, always defined.
    pub const fn distance_to(self, later: Self) -> u64 {
        (later.index() + S::MODULUS - self.index()) % S::MODULUS
    }

    /// RFC 1982 comparison; `None` when the two are exactly half the space apart.
    pub const fn serial_cmp(self, other: Self) -> Option<Ordering> {
        let d = self.distance_to(other);
        if d == 0 {
            Some(Ordering::Equal)
        } else if S::MODULUS % 2 == 0 && d == S::MODULUS / 2 {
            None
        } else if d <= S::MODULUS / 2 {
            Some(Ordering::Less)
        } else {
            Some(Ordering::Greater)
        }
    }

    /// `self` comes strictly before `other` in serial order.
    pub const fn is_before(self, other: Self) -> bool {
        matches!(self.serial_cmp(other), Some(Ordering::Less))
    }

    /// `self` comes strictly after `other` in serial order.
    pub const fn is_after(self, other: Self) -> bool {
        matches!(self.serial_cmp(other), Some(Ordering::Greater))
    }

    /// `self` lies in the `len` values starting at `start` (`start`, `start+1`, ...).
    pub const fn is_within(self, start: Self, len: u64) -> bool {
        start.distance_to(self) < len
    }
}

impl<S: SeqSpace> fmt::Debug for Seq<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Seq({})", self.value())
    }
}

impl<S: SeqSpace> fmt::Display for Seq<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.value(), f)
    }
}

impl<S: SeqSpace> Default for Seq<S> {
    fn default() -> Self {
        Self::FIRST
    }
}

impl<S: SeqSpace> From<Seq<S>> for u32 {
    fn from(s: Seq<S>) -> u32 {
        s.value()
    }
}

impl<S: SeqSpace> TryFrom<u32> for Seq<S> {
    type Error = crate::Error;

    fn try_from(value: u32) -> Result<Self, crate::Error> {
        Self::new(value).ok_or(crate::Error::BadValue { field: "sequence number", value })
    }
}

#[cfg(feature = "defmt")]
impl<S: SeqSpace> defmt::Format for Seq<S> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Seq({=u32})", self.value())
    }
}

#[cfg(feature = "arbitrary")]
impl<'a, S: SeqSpace> arbitrary::Arbitrary<'a> for Seq<S> {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Self::from_index(u64::from(u32::arbitrary(u)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type U8 = Seq<Bits<8>>;
    type U32 = Seq<Bits<32>>;
    type Ual = Seq<NonZeroBits<9>>;
    type Ucie = Seq<NonZeroBits<8>>;

    #[test]
    fn ranges() {
        assert_eq!(U8::FIRST.value(), 0);
        assert_eq!(U8::LAST.value(), 255);
        assert_eq!(U32::LAST.value(), u32::MAX);
        assert_eq!(U32::MODULUS, 1 << 32);
        assert_eq!(Ual::FIRST.value(), 1);
        assert_eq!(Ual::LAST.value(), 511);
        assert_eq!(Ual::MODULUS, 511);
        assert_eq!(Ucie::LAST.value(), 255);
        assert!(U8::new(256).is_none());
        assert!(Ual::new(0).is_none());
        assert!(Ual::new(512).is_none());
        assert!(Seq::<Bits<20>>::new(1 << 20).is_none());
        assert!(Seq::<Bits<20>>::try_from((1u32 << 20) - 1).is_ok());
    }

    #[test]
    fn ualink_wraps_from_511_to_1() {
        // UALink 1.0 §6.6: "511 wraps to 1"; 0 is never a payload sequence number.
        let s = Ual::new(511).unwrap();
        assert_eq!(s.next().value(), 1);
        assert_eq!(Ual::new(1).unwrap().prev().value(), 511);
        assert_eq!(s.distance_to(Ual::new(3).unwrap()), 3);
        // The acceptance window "(ackReqSeq - Rx_last_ack) % 511 <= 256" is distance_to.
        assert_eq!(Ual::new(10).unwrap().distance_to(Ual::new(266).unwrap()), 256);
    }

    #[test]
    fn ucie_wraps_from_255_to_1() {
        assert_eq!(Ucie::LAST.next(), Ucie::FIRST);
        assert_eq!(Ucie::FIRST.value(), 1);
    }

    #[test]
    fn rfc1982_examples() {
        // RFC 1982 §5.2 examples for SERIAL_BITS = 8.
        let s = |v| U8::new(v).unwrap();
        assert!(s(0).is_before(s(1)));
        assert!(s(0).is_before(s(44)));
        assert!(s(0).is_before(s(100)));
        assert!(s(44).is_before(s(100)));
        assert!(s(100).is_before(s(200)));
        assert!(s(200).is_before(s(255)));
        assert!(s(255).is_before(s(0)));
        assert!(s(255).is_before(s(100)));
        assert!(s(200).is_before(s(0)));
        assert!(s(200).is_before(s(44)));
        // Exactly half the space apart: undefined.
        assert_eq!(s(0).serial_cmp(s(128)), None);
        assert_eq!(s(128).serial_cmp(s(0)), None);
    }

    #[test]
    fn odd_modulus_has_no_undefined_pair() {
        let a = Ual::new(1).unwrap();
        for n in 1..511 {
            assert!(a.serial_cmp(a.wrapping_add(n)).is_some());
        }
        assert!(a.is_before(a.wrapping_add(255)));
        assert!(a.is_after(a.wrapping_add(256)));
    }

    fn check_space<S: SeqSpace>(a: u64, n: u64) {
        let x = Seq::<S>::from_index(a);
        let y = x.wrapping_add(n);
        assert_eq!(y.wrapping_sub(n), x);
        assert_eq!(x.distance_to(y), n % S::MODULUS);
        assert!(Seq::<S>::new(y.value()).is_some());
        let d = n % S::MODULUS;
        match x.serial_cmp(y) {
            Some(Ordering::Equal) => assert_eq!(d, 0),
            Some(Ordering::Less) => {
                assert!(d > 0 && d <= S::MODULUS / 2);
                assert!(y.is_after(x));
            }
            Some(Ordering::Greater) => assert!(d > S::MODULUS / 2),
            None => assert_eq!(2 * d, S::MODULUS),
        }
        assert!(y.is_within(x, d + 1));
        assert!(!y.is_within(x, d));
    }

    proptest! {
        #[test]
        fn wrapping_is_consistent(a in any::<u64>(), n in any::<u64>()) {
            check_space::<Bits<1>>(a, n);
            check_space::<Bits<8>>(a, n);
            check_space::<Bits<20>>(a, n);
            check_space::<Bits<32>>(a, n);
            check_space::<NonZeroBits<2>>(a, n);
            check_space::<NonZeroBits<8>>(a, n);
            check_space::<NonZeroBits<9>>(a, n);
            check_space::<NonZeroBits<32>>(a, n);
        }

        #[test]
        fn counters_wrap_like_modular_integers(start in 0u32..(1 << 20), steps in proptest::collection::vec(0u64..5000, 0..64)) {
            // A 20-bit cyclic counter advanced by many steps equals the plain sum mod 2^20.
            let mut c = Seq::<Bits<20>>::new(start).unwrap();
            let mut plain = u64::from(start);
            for s in steps {
                c = c.wrapping_add(s);
                plain += s;
            }
            prop_assert_eq!(u64::from(c.value()), plain % (1 << 20));
        }
    }
}
