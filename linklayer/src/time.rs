//! Time as an input: [`Instant`], [`Duration`] and [`LinkRate`].
//!
//! No crate in the workspace reads a clock. The embedder passes `now` into every handler and
//! poll; an [`Instant`] is a count of nanoseconds since an epoch the embedder chooses (boot, the
//! start of a simulation, ...). All arithmetic saturates, so no input can make it panic or wrap.
//!
//! **What a caller's clock must do.** It must be monotonic: every state machine treats a `now`
//! earlier than one it was given before as that earlier `now` (nothing runs backwards, but timers
//! stall until the clock passes it again), so a wall clock that steps back delays timers and one
//! that jumps forward fires them early. One clock per state machine: two endpoints may use
//! different epochs. On a host, [`StdClock`] (feature `std`) counts from its creation with
//! `std::time::Instant`, which is monotonic; on a microcontroller, a cycle counter or a timer
//! peripheral scaled to nanoseconds, extended to 64 bits, does the same.
//!
//! Link-layer parameters in the UE specification are often given in *bytes on the wire*
//! (`CTLOS_TARGET_SPACING`, `CF_min_spacing`, ...). A byte count becomes a time through the
//! link's [`LinkRate`]: a link that is idle still clocks idle code groups, so bytes and time are
//! the same clock seen two ways.

use core::fmt;

/// A point in time: nanoseconds since an arbitrary, embedder-chosen epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Duration(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant; also "never" for a timer that is not armed.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    #[must_use]
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }

    /// `self + d`, or `None` on overflow.
    pub const fn checked_add(self, d: Duration) -> Option<Instant> {
        match self.0.checked_add(d.0) {
            Some(n) => Some(Instant(n)),
            None => None,
        }
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Self {
        Duration(nanos)
    }

    /// `micros` microseconds, saturating.
    pub const fn from_micros(micros: u64) -> Self {
        Duration(micros.saturating_mul(1_000))
    }

    /// `millis` milliseconds, saturating.
    pub const fn from_millis(millis: u64) -> Self {
        Duration(millis.saturating_mul(1_000_000))
    }

    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + other`, saturating.
    #[must_use]
    pub const fn saturating_add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }

    /// `self * n`, saturating.
    #[must_use]
    pub const fn saturating_mul(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }
}

impl From<core::time::Duration> for Duration {
    /// Saturates at `u64::MAX` nanoseconds (584 years).
    fn from(d: core::time::Duration) -> Self {
        Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Duration> for core::time::Duration {
    fn from(d: Duration) -> Self {
        core::time::Duration::from_nanos(d.as_nanos())
    }
}

/// An optional [`Instant`] in the space of one: a timer's deadline, or none.
///
/// `Option<Instant>` takes 16 bytes; a state machine with several timers per connection and
/// thousands of connections pays that twice over. `Deadline` stores the deadline's nanoseconds
/// inverted, so "not armed" ([`Deadline::NONE`]) is all-zero bytes (an engine's empty value can
/// live in `.bss`), and stores a deadline at `Instant::MAX` as one nanosecond earlier: a deadline
/// armed at the end of time fires at `Instant::MAX` − 1 ns (584 years after the epoch) rather
/// than never, the one place where it differs from `Option<Instant>`.
///
/// ```
/// use linklayer::{Deadline, Instant};
/// let mut t = Deadline::NONE;
/// assert_eq!(t.get(), None);
/// t.set(Instant::from_nanos(5));
/// assert!(t.is_due(Instant::from_nanos(5)) && !t.is_due(Instant::from_nanos(4)));
/// t.set(Instant::MAX);
/// assert!(t.is_due(Instant::MAX));
/// t.clear();
/// assert!(!t.is_due(Instant::MAX));
/// assert_eq!(core::mem::size_of::<Deadline>(), 8);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Deadline(u64);

impl Deadline {
    /// Not armed (all-zero bytes).
    pub const NONE: Deadline = Deadline(0);

    /// Armed at `at` (at `Instant::MAX` − 1 ns if `at` is `Instant::MAX`).
    pub const fn at(at: Instant) -> Deadline {
        Deadline(!if at.0 == u64::MAX { u64::MAX - 1 } else { at.0 })
    }

    /// Armed at `at`, or not armed.
    pub const fn from_option(at: Option<Instant>) -> Deadline {
        match at {
            Some(t) => Deadline::at(t),
            None => Deadline::NONE,
        }
    }

    /// The deadline, if armed.
    pub const fn get(self) -> Option<Instant> {
        if self.0 == 0 { None } else { Some(Instant(!self.0)) }
    }

    /// Whether it is armed.
    pub const fn is_armed(self) -> bool {
        self.0 != 0
    }

    /// Whether it is armed and `now` has reached it.
    pub const fn is_due(self, now: Instant) -> bool {
        self.is_armed() && !self.0 <= now.0
    }

    /// Arms it at `at`.
    pub fn set(&mut self, at: Instant) {
        *self = Deadline::at(at);
    }

    /// Disarms it.
    pub fn clear(&mut self) {
        *self = Deadline::NONE;
    }

    /// The earlier of the two; one armed before one not armed.
    ///
    /// ```
    /// use linklayer::{Deadline, Instant};
    /// let (a, b) = (Deadline::at(Instant::from_nanos(5)), Deadline::at(Instant::from_nanos(9)));
    /// assert_eq!(b.earlier(a), a);
    /// assert_eq!(Deadline::NONE.earlier(b), b);
    /// assert_eq!(Deadline::NONE.earlier(Deadline::NONE), Deadline::NONE);
    /// ```
    pub const fn earlier(self, other: Deadline) -> Deadline {
        // Stored inverted: the earlier instant is the larger value, and not armed (0) the least.
        if self.0 >= other.0 { self } else { other }
    }
}

impl Default for Deadline {
    /// Not armed.
    fn default() -> Self {
        Deadline::NONE
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.get(), f)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Deadline {
    /// As the `Option<Instant>` it stands for.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{}", self.get());
    }
}

impl From<Option<Instant>> for Deadline {
    fn from(at: Option<Instant>) -> Self {
        Deadline::from_option(at)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Deadline {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Deadline::from_option(u.arbitrary()?))
    }
}

/// A clock for hosts (feature `std`): [`Instant`]s counted in nanoseconds from the moment the
/// clock was made, read from `std::time::Instant`, which is monotonic.
///
/// ```
/// let clock = linklayer::StdClock::new();
/// let t0 = clock.now();
/// let t1 = clock.now();
/// assert!(t1 >= t0);
/// // A deadline a state machine returned, as a `std::time::Instant` to sleep until.
/// let wake = clock.to_std(t1.saturating_add(linklayer::Duration::from_micros(10)));
/// assert!(wake > clock.to_std(t0));
/// ```
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub struct StdClock {
    start: std::time::Instant,
}

#[cfg(feature = "std")]
impl Default for StdClock {
    fn default() -> Self {
        StdClock::new()
    }
}

#[cfg(feature = "std")]
impl StdClock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        StdClock { start: std::time::Instant::now() }
    }

    /// The time now: nanoseconds since the clock was made (saturating after 584 years).
    pub fn now(&self) -> Instant {
        Instant(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// `at` as a `std::time::Instant` (to sleep until a deadline, or to wait on a socket).
    pub fn to_std(&self, at: Instant) -> std::time::Instant {
        let d = core::time::Duration::from_nanos(at.0);
        self.start.checked_add(d).unwrap_or(self.start)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

/// The signalling rate of a link, used to turn byte spacings into time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct LinkRate {
    bits_per_second: u64,
}

impl LinkRate {
    /// 100 Gb/s (one 100GBASE lane set; 12.5 bytes per nanosecond).
    pub const GBPS_100: LinkRate = LinkRate { bits_per_second: 100_000_000_000 };
    /// 200 Gb/s (one 200G lane, UALink 200 and 802.3dj).
    pub const GBPS_200: LinkRate = LinkRate { bits_per_second: 200_000_000_000 };
    /// 400 Gb/s.
    pub const GBPS_400: LinkRate = LinkRate { bits_per_second: 400_000_000_000 };
    /// 800 Gb/s.
    pub const GBPS_800: LinkRate = LinkRate { bits_per_second: 800_000_000_000 };
    /// Zero bits per second, read as 1 b/s: the rate in an unconfigured engine's all-zero
    /// configuration (`EMPTY`).
    pub(crate) const ZERO: LinkRate = LinkRate { bits_per_second: 0 };

    /// A link of `bits_per_second`; `None` for zero.
    pub const fn new(bits_per_second: u64) -> Option<Self> {
        if bits_per_second == 0 { None } else { Some(LinkRate { bits_per_second }) }
    }

    /// The rate in bits per second (never zero).
    pub const fn bits_per_second(self) -> u64 {
        // A derived `Arbitrary` value may be zero; treat it as 1 b/s rather than divide by zero.
        if self.bits_per_second == 0 { 1 } else { self.bits_per_second }
    }

    /// Time to clock `bytes` onto the wire, rounded up to whole nanoseconds.
    pub const fn time_for_bytes(self, bytes: u64) -> Duration {
        let bits = (bytes as u128) * 8 * 1_000_000_000;
        let rate = self.bits_per_second() as u128;
        let ns = bits.div_ceil(rate);
        Duration(if ns > u64::MAX as u128 { u64::MAX } else { ns as u64 })
    }

    /// Bytes the link carries in `d`, rounded up.
    pub const fn bytes_in(self, d: Duration) -> u64 {
        let bits = (d.0 as u128) * (self.bits_per_second() as u128);
        let bytes = bits.div_ceil(8 * 1_000_000_000);
        if bytes > u64::MAX as u128 { u64::MAX } else { bytes as u64 }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn converts_to_and_from_core_durations() {
        use super::Duration;
        let d: Duration = core::time::Duration::from_micros(10).into();
        assert_eq!(d, Duration::from_micros(10));
        assert_eq!(core::time::Duration::from(Duration::from_nanos(7)), core::time::Duration::from_nanos(7));
        assert_eq!(Duration::from(core::time::Duration::MAX).as_nanos(), u64::MAX);
    }

    use super::*;

    #[test]
    fn a_deadline_is_an_option_of_instant_in_eight_bytes() {
        for at in [None, Some(Instant::ZERO), Some(Instant::from_nanos(77)), Some(Instant::from_nanos(u64::MAX - 1))] {
            assert_eq!(Deadline::from(at).get(), at);
            assert_eq!(Deadline::from(at).is_armed(), at.is_some());
        }
        // The end of time stays armed, one nanosecond early, and fires at the end of time.
        let end = Deadline::at(Instant::MAX);
        assert_eq!(end.get(), Some(Instant::from_nanos(u64::MAX - 1)));
        assert!(end.is_due(Instant::MAX) && end.is_due(Instant::from_nanos(u64::MAX - 1)));
        assert!(!end.is_due(Instant::from_nanos(u64::MAX - 2)));
        assert!(!Deadline::NONE.is_due(Instant::MAX));
        assert_eq!(Deadline::default(), Deadline::NONE);
        assert_eq!(core::mem::size_of::<Deadline>(), 8);
    }

    #[test]
    fn the_earlier_deadline_is_the_least_armed_one() {
        let all = [None, Some(0), Some(1), Some(77), Some(u64::MAX - 1), Some(u64::MAX)];
        for a in all.map(|t| t.map(Instant::from_nanos)) {
            for b in all.map(|t| t.map(Instant::from_nanos)) {
                let least = a.into_iter().chain(b).min();
                assert_eq!(Deadline::from(a).earlier(Deadline::from(b)), Deadline::from(least), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn instant_arithmetic_saturates() {
        assert_eq!(Instant::MAX.saturating_add(Duration::from_nanos(1)), Instant::MAX);
        assert_eq!(Instant::MAX.checked_add(Duration::from_nanos(1)), None);
        let t = Instant::from_nanos(10);
        assert_eq!(t.saturating_duration_since(Instant::from_nanos(25)), Duration::ZERO);
        assert_eq!(Instant::from_nanos(25).saturating_duration_since(t), Duration::from_nanos(15));
        assert_eq!(Duration::from_micros(u64::MAX), Duration::MAX);
        assert_eq!(Duration::from_millis(2).as_nanos(), 2_000_000);
    }

    #[test]
    fn link_rate_converts_bytes_to_time() {
        // 2048 bytes at 100 Gb/s = 163.84 ns, rounded up.
        assert_eq!(LinkRate::GBPS_100.time_for_bytes(2048), Duration::from_nanos(164));
        // 6400 bytes at 800 Gb/s = 64 ns exactly.
        assert_eq!(LinkRate::GBPS_800.time_for_bytes(6400), Duration::from_nanos(64));
        assert_eq!(LinkRate::new(0), None);
        assert_eq!(LinkRate::new(1).unwrap().time_for_bytes(u64::MAX), Duration::MAX);
    }
}
