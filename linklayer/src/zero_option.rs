//! [`ZeroOption`]: an optional value whose "none" is all-zero bytes, so that an engine's empty
//! value can be a `static` in `.bss`.
//!
//! A `static` initialised to a constant lands in `.bss` (no flash, cleared by the start-up code)
//! only when every byte of the constant is zero or left unset; one other byte puts the whole
//! value in initialised data, its image in flash and a copy at start-up. `Option<T>` usually
//! keeps `None` in an invalid value of one of `T`'s fields (a `bool`'s 2, an enum's next
//! discriminant), which is rarely zero. [`ZeroOption`] has its own tag byte, 0 for
//! [`ZeroOption::None`], and leaves the rest of an empty one unset.
//!
//! The price is the tag: one byte, padded to `T`'s alignment (8 bytes beside a `T` holding a
//! `u64`), where `Option<T>` often takes none.

/// An `Option<T>` whose `None` is all-zero bytes, whatever `T` is (see the [module](self)).
///
/// ```
/// use linklayer::ZeroOption;
/// let mut slot = ZeroOption::NONE;
/// assert_eq!(slot.as_ref(), None);
/// slot = ZeroOption::Some(3u32);
/// if let Some(v) = slot.as_mut() {
///     *v += 1;
/// }
/// assert_eq!(slot.take(), Some(4));
/// assert!(slot.is_none());
/// slot = ZeroOption::Some(5);
/// slot.clear();
/// assert!(slot.is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum ZeroOption<T> {
    /// No value: the tag 0 and nothing else set.
    None = 0,
    /// A value.
    Some(T) = 1,
}

impl<T> ZeroOption<T> {
    /// No value.
    pub const NONE: Self = ZeroOption::None;

    /// The value, by reference.
    pub const fn as_ref(&self) -> Option<&T> {
        match self {
            ZeroOption::Some(v) => Some(v),
            ZeroOption::None => None,
        }
    }

    /// The value, by mutable reference.
    pub const fn as_mut(&mut self) -> Option<&mut T> {
        match self {
            ZeroOption::Some(v) => Some(v),
            ZeroOption::None => None,
        }
    }

    /// Whether it holds a value.
    pub const fn is_some(&self) -> bool {
        matches!(self, ZeroOption::Some(_))
    }

    /// Whether it holds none.
    pub const fn is_none(&self) -> bool {
        !self.is_some()
    }

    /// Leaves none, dropping the value if any. Prefer it to assigning [`ZeroOption::NONE`]:
    /// rustc copies a constant whole, every byte of `T` (179 instructions for a 176-byte value
    /// on x86-64 at opt-level z, measured), where this writes the tag alone.
    pub fn clear(&mut self) {
        *self = ZeroOption::None;
    }

    /// Takes the value out, leaving none.
    pub fn take(&mut self) -> Option<T> {
        core::mem::replace(self, ZeroOption::None).into_option()
    }

    /// As an `Option`.
    pub fn into_option(self) -> Option<T> {
        match self {
            ZeroOption::Some(v) => Some(v),
            ZeroOption::None => None,
        }
    }
}

impl<T> Default for ZeroOption<T> {
    /// No value.
    fn default() -> Self {
        ZeroOption::None
    }
}

impl<T> From<Option<T>> for ZeroOption<T> {
    fn from(value: Option<T>) -> Self {
        match value {
            Some(v) => ZeroOption::Some(v),
            None => ZeroOption::None,
        }
    }
}

impl<T> From<ZeroOption<T>> for Option<T> {
    fn from(value: ZeroOption<T>) -> Self {
        value.into_option()
    }
}

impl<'a, T> IntoIterator for &'a ZeroOption<T> {
    type Item = &'a T;
    type IntoIter = core::option::IntoIter<&'a T>;

    /// The value, if any, by reference (so `slots.iter().flatten()` walks the values).
    fn into_iter(self) -> Self::IntoIter {
        self.as_ref().into_iter()
    }
}

impl<'a, T> IntoIterator for &'a mut ZeroOption<T> {
    type Item = &'a mut T;
    type IntoIter = core::option::IntoIter<&'a mut T>;

    /// The value, if any, by mutable reference.
    fn into_iter(self) -> Self::IntoIter {
        self.as_mut().into_iter()
    }
}
