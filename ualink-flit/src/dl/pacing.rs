//! Transmitter pacing (UALink 1.0 §6.5):
//! a port whose link partner runs its UPLI clock below full rate admits TL flits to the DL no
//! faster than the partner's TL can take them, so the partner's DL Rx FIFO never overflows.
//!
//! The rate is the link partner's, from its TL Rate Notification: 50 kHz units, full rate
//! 1562.5 MHz = [`FULL_RATE`], the reference clock 156.25 MHz = [`REFERENCE_RATE`] (the lowest a
//! device must support). At full rate the TL moves one 64-byte TL flit per UPLI clock, ten in the
//! time the link carries one 640-byte DL flit; at rate `r` it takes `10 × r / 31250` TL flits per
//! DL flit time, whatever the data-path width (§6.4.2.2 normalises every width to the link's rate).
//!
//! *Project-defined*: [`TxPacer`] is a token bucket counted in exact integer units: every DL flit
//! time adds `10 × r`, a TL flit costs [`FULL_RATE`], and the bucket holds at most one DL flit's
//! worth at full rate (a burst of ten TL flits, what the link carries in one DL flit time). A rate
//! below the reference clock is treated as the reference clock, and one above full rate as full
//! rate. At full rate pacing never binds (the DL carries at most 9.8 TL flits per flit time).

use super::packing::TlSource;
use crate::tl::TlFlit;

/// Full rate, 1562.5 MHz in 50 kHz units.
pub const FULL_RATE: u16 = 31_250;
/// The reference clock, 156.25 MHz in 50 kHz units: the lowest rate.
pub const REFERENCE_RATE: u16 = 3_125;
/// UPLI clocks (one TL flit each at full rate) per DL flit time.
const TICKS_PER_DL_FLIT: u32 = 10;
/// The bucket's depth: one DL flit time's worth at full rate, plus the remainder (under one TL
/// flit) a busy sender carries from one flit time to the next, so a saturated sender loses none.
const BUCKET: u32 = (TICKS_PER_DL_FLIT + 1) * FULL_RATE as u32 - 1;

/// Admits TL flits at the link partner's TL rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TxPacer {
    rate: u16,
    tokens: u32,
}

impl Default for TxPacer {
    fn default() -> Self {
        Self::new()
    }
}

impl TxPacer {
    /// Rate 0 and no tokens: all-zero bytes, for an engine's empty value (its `init` puts
    /// [`TxPacer::new`] in its place).
    pub(crate) const STOPPED: TxPacer = TxPacer { rate: 0, tokens: 0 };

    /// A pacer at full rate (the §6.5.4 default) with a full bucket.
    pub const fn new() -> Self {
        TxPacer { rate: FULL_RATE, tokens: BUCKET }
    }

    /// The rate in force, in 50 kHz units.
    pub const fn rate(&self) -> u16 {
        self.rate
    }

    /// Sets the link partner's rate (50 kHz units), clamped to
    /// [`REFERENCE_RATE`]`..=`[`FULL_RATE`].
    pub fn set_rate(&mut self, rate: u16) {
        self.rate = rate.clamp(REFERENCE_RATE, FULL_RATE);
    }

    /// One DL flit time passes.
    pub fn tick(&mut self) {
        self.tokens = (self.tokens + TICKS_PER_DL_FLIT * u32::from(self.rate)).min(BUCKET);
    }

    /// Whether a TL flit may go now.
    pub const fn may_send(&self) -> bool {
        self.tokens >= FULL_RATE as u32
    }

    /// Takes one TL flit's worth, if there is one.
    pub fn admit(&mut self) -> bool {
        let ok = self.may_send();
        if ok {
            self.tokens -= u32::from(FULL_RATE);
        }
        ok
    }
}

/// A [`TlSource`] paced by a [`TxPacer`]: hands the DL a TL flit only when the pacer admits one.
#[derive(Debug)]
pub struct Paced<'a, T> {
    /// The TL flits.
    pub source: &'a mut T,
    /// The pacer.
    pub pacer: &'a mut TxPacer,
}

impl<T: TlSource> TlSource for Paced<'_, T> {
    fn has_flit(&self) -> bool {
        self.pacer.may_send() && self.source.has_flit()
    }

    fn next_flit(&mut self, out: &mut TlFlit) -> bool {
        self.source.has_flit() && self.pacer.admit() && self.source.next_flit(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TL flits admitted over `flits` DL flit times at `rate`, taking all that are allowed.
    fn admitted(rate: u16, flits: u32) -> u32 {
        let mut p = TxPacer::new();
        p.set_rate(rate);
        p.tokens = 0;
        let mut n = 0;
        for _ in 0..flits {
            p.tick();
            while p.admit() {
                n += 1;
            }
        }
        n
    }

    #[test]
    fn rates_from_the_specification() {
        // Full rate: ten TL flits per DL flit time, more than the 9.8 a DL flit carries.
        assert_eq!(admitted(FULL_RATE, 100), 1000);
        // The reference clock: one TL flit per DL flit time.
        assert_eq!(admitted(REFERENCE_RATE, 100), 100);
        // §6.4.2.2's example register setting 30 664 (196.25 Gb/s of a 200 Gb/s link).
        assert_eq!(admitted(30_664, 3125), 30_664);
        // Out-of-range rates are clamped.
        assert_eq!(admitted(0, 100), 100);
        assert_eq!(admitted(u16::MAX, 100), 1000);
    }

    #[test]
    fn bursts_are_bounded_by_one_flit_time() {
        let mut p = TxPacer::new();
        p.set_rate(REFERENCE_RATE);
        for _ in 0..1000 {
            p.tick();
        }
        let mut burst = 0;
        while p.admit() {
            burst += 1;
        }
        assert_eq!(burst, 10, "an idle stretch saves up at most one DL flit time at full rate");
    }

    #[test]
    fn paced_source_holds_flits_back() {
        let mut q: heapless::Deque<TlFlit, 8> = heapless::Deque::new();
        for _ in 0..8 {
            q.push_back(TlFlit::default()).unwrap();
        }
        let mut p = TxPacer::new();
        p.set_rate(REFERENCE_RATE);
        p.tokens = 0;
        let mut src = Paced { source: &mut q, pacer: &mut p };
        assert!(!src.has_flit());
        let mut f = TlFlit::default();
        assert!(!src.next_flit(&mut f));
        src.pacer.tick();
        assert!(src.has_flit());
        assert!(src.next_flit(&mut f));
        assert!(!src.has_flit());
        assert_eq!(q.len(), 7, "only the admitted flit left the queue");
    }
}
