//! PSN windows of one PDC direction: what the target has received ([`RxWindow`]), what the
//! initiator has sent and had acknowledged ([`TxWindow`]), and when the target sends an ACK
//! ([`AckCoalescer`]). Behaviour of the reference provider (`ultraethernet/uet-ref-prov`
//! `uet_pds.c`; UE 1.0 §3.5.11.4, §3.5.12) unless noted.
//!
//! * **Serial arithmetic.** PSNs are 32-bit and wrap; `a` is after `b` when
//!   `(a - b) as i32 > 0` (uet-ref-prov's `UET_PDS_PSN_AFTER` and the Linux ultraeth driver RFC
//!   agree), so every comparison here is a wrapping difference.
//! * **Window.** A PSN is in the window when `psn - base < MP_RANGE`. Here the receive window is
//!   anchored one past the cumulative ACK (`CACK_PSN + 1`), as the ns-3 model
//!   `Necromancer0912/ultra-ethernet-transport-ns3` recommends and as the initiator's send window
//!   is anchored at its oldest unacknowledged PSN; the *prior* window is the `MP_RANGE` PSNs up to
//!   and including `CACK_PSN`. `MP_RANGE` is `64 × W` PSNs (const generic `W`; the default 2 gives
//!   uet-ref-prov's 128).
//! * **Duplicates are re-ACKed, never NACKed** (*project-defined*; a NACKed duplicate can
//!   deadlock after a lost ACK; uet-ref-prov NACKs RCVD_SES_PROCG when it stored no ACK):
//!   [`Arrival`] tells the caller which case it has, and the caller answers.
//! * **SACK.** ACK_CC carries a 64-bit SACK bitmap at `SACK_PSN = CACK_PSN + sack_psn_offset`.
//!   [`RxWindow::sack`] uses the base uet-htsim calls ideal (*project-defined*; uet-ref-prov's
//!   `uet_pds_update_sack_base` moves it in steps of 64, and an initiator reads either): the
//!   oldest PSN not yet reported, `max(max_rcvd − 63, CACK + 1)`, so the newest arrivals are
//!   always in the bitmap.
//! * **Sending.** The initiator may send PSN `p` only if `p` is in its own window and
//!   `p ≤ CACK + peer MP_RANGE` (the range the peer advertised in ACK_CC).

/// How a request PSN relates to the receive window (UE 1.0 §3.5.12.2; classification as in
/// uet-ref-prov `uet_pds.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arrival {
    /// Not seen before, inside the window: deliver it.
    New,
    /// Inside the current window and already received: resend the stored ACK or response (or NACK
    /// RCVD_SES_PROCG when there is none).
    Duplicate,
    /// In the prior window, at or before `CACK_PSN`: cumulatively acknowledged already; reply with
    /// an ACK carrying the SES DEFAULT_RESPONSE with RC_NULL.
    Stale,
    /// Outside both windows: NACK PSN_OOR_WINDOW (INVALID_SYN if SYN was set).
    OutOfWindow,
}

/// A 64-bit selective-acknowledgement bitmap and its base: bit `i` set means PSN `base + i` was
/// received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sack {
    /// `SACK_PSN`, the PSN of bit 0.
    pub base: u32,
    /// Received PSNs from `base`, least significant bit first.
    pub bitmap: u64,
}

/// `a` is after `b` in serial order.
#[inline]
pub const fn psn_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// A bit set over the `64 × W` PSNs after an anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Bits<const W: usize>([u64; W]);

impl<const W: usize> Bits<W> {
    const SPAN: u32 = 64 * W as u32;

    fn get(&self, i: u32) -> bool {
        self.0.get((i / 64) as usize).is_some_and(|w| w >> (i % 64) & 1 != 0)
    }

    fn set(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut((i / 64) as usize) {
            *w |= 1 << (i % 64);
        }
    }

    /// Bits `i .. i + 64` as one word (bits past the end read as zero).
    fn word_at(&self, i: u32) -> u64 {
        let (w, b) = ((i / 64) as usize, i % 64);
        let lo = self.0.get(w).copied().unwrap_or(0) >> b;
        let hi = if b == 0 { 0 } else { self.0.get(w + 1).copied().unwrap_or(0) << (64 - b) };
        lo | hi
    }

    /// Sets bits `i .. i + 64` where `v` has ones (bits past the end are dropped).
    fn or_word_at(&mut self, i: u32, v: u64) {
        let (w, b) = ((i / 64) as usize, i % 64);
        if let Some(x) = self.0.get_mut(w) {
            *x |= v << b;
        }
        if b != 0 {
            if let Some(x) = self.0.get_mut(w + 1) {
                *x |= v >> (64 - b);
            }
        }
    }

    /// The number of set bits from bit 0 up to the first clear one.
    fn leading_run(&self) -> u32 {
        let mut n = 0;
        for w in self.0 {
            let ones = w.trailing_ones();
            n += ones;
            if ones < 64 {
                break;
            }
        }
        n
    }

    /// Whether no bit is set.
    #[inline]
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// Drops the lowest `n` bits, moving the rest down.
    fn shift_down(&mut self, n: u32) {
        if n >= Self::SPAN {
            self.0 = [0; W];
            return;
        }
        let (skip, b) = ((n / 64) as usize, n % 64);
        // Word `i` takes words `i + skip` and `i + skip + 1`, which lie at or above it: ascending
        // order reads each source word before it is overwritten.
        for i in 0..W {
            let lo = self.0.get(i + skip).copied().unwrap_or(0);
            let v = if b == 0 { lo } else { lo >> b | self.0.get(i + skip + 1).copied().unwrap_or(0) << (64 - b) };
            if let Some(w) = self.0.get_mut(i) {
                *w = v;
            }
        }
    }

    /// The number of set bits. Empty words are skipped: without the POPCNT instruction (the
    /// baseline x86-64 and Cortex-M targets) a population count is a dozen instructions, and on
    /// the fast path every word is empty.
    #[inline]
    fn count(&self) -> u32 {
        self.0.iter().map(|&w| if w == 0 { 0 } else { w.count_ones() }).sum()
    }

    fn clear(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut((i / 64) as usize) {
            *w &= !(1 << (i % 64));
        }
    }

    /// The lowest set bit, if any.
    fn first_set(&self) -> Option<u32> {
        let mut base = 0;
        for w in self.0 {
            if w != 0 {
                return Some(base + w.trailing_zeros());
            }
            base += 64;
        }
        None
    }

    /// The highest set bit, if any.
    fn last_set(&self) -> Option<u32> {
        let mut top = None;
        let mut base = 0;
        for w in self.0 {
            if w != 0 {
                top = Some(base + 63 - w.leading_zeros());
            }
            base += 64;
        }
        top
    }

    /// Sets every bit below `n` where `keep` and `skip` are both clear: `self |= !keep & !skip`
    /// over bits `0 .. n`. Returns how many bits it newly set.
    fn set_below_unless(&mut self, n: u32, keep: &Self, skip: &Self) -> u32 {
        let mut added = 0;
        for (i, ((w, k), s)) in self.0.iter_mut().zip(keep.0).zip(skip.0).enumerate() {
            let lo = 64 * i as u32;
            let mask = match n.saturating_sub(lo) {
                0 => 0,
                b @ 1..=63 => (1u64 << b) - 1,
                _ => u64::MAX,
            };
            let new = mask & !k & !s & !*w;
            added += new.count_ones();
            *w |= new;
        }
        added
    }

    /// Clears every bit set in `other`.
    fn clear_all_in(&mut self, other: &Self) {
        for (w, o) in self.0.iter_mut().zip(other.0) {
            *w &= !o;
        }
    }
}

/// The target's record of the request PSNs it has received on one PDC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxWindow<const W: usize = 2> {
    cack: u32,
    max_rcvd: u32,
    /// Bit `i`: PSN `cack + 1 + i` received.
    above: Bits<W>,
}

impl<const W: usize> RxWindow<W> {
    /// `MP_RANGE`, in PSNs.
    pub const MP_RANGE: u32 = Bits::<W>::SPAN;

    /// A window expecting `start_psn` first (`CACK_PSN = start_psn − 1`).
    pub const fn new(start_psn: u32) -> Self {
        let cack = start_psn.wrapping_sub(1);
        RxWindow { cack, max_rcvd: cack, above: Bits([0; W]) }
    }

    /// The cumulative ACK PSN: every PSN up to it has arrived.
    pub const fn cack_psn(&self) -> u32 {
        self.cack
    }

    /// The newest PSN received (`CACK_PSN` when nothing past it has arrived).
    pub const fn max_rcvd(&self) -> u32 {
        self.max_rcvd
    }

    /// Whether `psn` has arrived (PSNs before the prior window read as not arrived).
    pub fn received(&self, psn: u32) -> bool {
        match self.classify(psn) {
            Arrival::Duplicate | Arrival::Stale => true,
            Arrival::New | Arrival::OutOfWindow => false,
        }
    }

    /// Classifies `psn` without recording it.
    pub fn classify(&self, psn: u32) -> Arrival {
        let ahead = psn.wrapping_sub(self.cack.wrapping_add(1));
        if ahead < Self::MP_RANGE {
            if self.above.get(ahead) { Arrival::Duplicate } else { Arrival::New }
        } else if self.cack.wrapping_sub(psn) < Self::MP_RANGE {
            Arrival::Stale
        } else {
            Arrival::OutOfWindow
        }
    }

    /// Records `psn` if it is new, advancing `CACK_PSN` over every contiguous arrival.
    #[inline]
    pub fn receive(&mut self, psn: u32) -> Arrival {
        // The common case: the next PSN in order with nothing held above it.
        if psn == self.cack.wrapping_add(1) && self.above.0.iter().all(|&w| w == 0) {
            self.cack = psn;
            if psn_after(psn, self.max_rcvd) {
                self.max_rcvd = psn;
            }
            return Arrival::New;
        }
        let arrival = self.classify(psn);
        if arrival == Arrival::New {
            self.above.set(psn.wrapping_sub(self.cack.wrapping_add(1)));
            if psn_after(psn, self.max_rcvd) {
                self.max_rcvd = psn;
            }
            let run = self.above.leading_run();
            if run > 0 {
                self.above.shift_down(run);
                self.cack = self.cack.wrapping_add(run);
            }
        }
        arrival
    }

    /// Everything up to `psn` counts as received (a CLOSE command clears the forward direction).
    pub fn clear_through(&mut self, psn: u32) {
        let ahead = psn.wrapping_sub(self.cack);
        if ahead == 0 || ahead > Self::MP_RANGE {
            return;
        }
        self.above.shift_down(ahead);
        self.cack = psn;
        if psn_after(psn, self.max_rcvd) {
            self.max_rcvd = psn;
        }
        let run = self.above.leading_run();
        self.above.shift_down(run);
        self.cack = self.cack.wrapping_add(run);
    }

    /// The SACK to send now: based at `max(max_rcvd − 63, CACK + 1)`.
    #[inline]
    pub fn sack(&self) -> Sack {
        let first = self.cack.wrapping_add(1);
        let newest_fit = self.max_rcvd.wrapping_sub(63);
        let base = if psn_after(newest_fit, first) { newest_fit } else { first };
        Sack { base, bitmap: self.above.word_at(base.wrapping_sub(first)) }
    }

    /// The SACK based at `base`, any PSN of the current window or the prior one (from `base` to
    /// `CACK_PSN` every PSN reads as received): for an ACK whose `CACK_PSN` a held
    /// guaranteed-delivery response stops early, or that must cover the PSN whose response it
    /// carries. A base outside both windows gives [`RxWindow::sack`].
    pub fn sack_from(&self, base: u32) -> Sack {
        let first = self.cack.wrapping_add(1);
        let ahead = base.wrapping_sub(first);
        if ahead < Self::MP_RANGE {
            return Sack { base, bitmap: self.above.word_at(ahead) };
        }
        let below = first.wrapping_sub(base);
        if below == 0 || below > Self::MP_RANGE {
            return self.sack();
        }
        if below >= 64 {
            return Sack { base, bitmap: u64::MAX };
        }
        Sack { base, bitmap: ((1u64 << below) - 1) | (self.above.word_at(0) << below) }
    }

    /// PSNs received past `CACK_PSN` (out of order).
    pub fn out_of_order(&self) -> u32 {
        self.above.count()
    }
}

/// Why the initiator rejected an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AckError {
    /// The ACK covers a PSN that was never sent.
    BeyondSent {
        /// The offending PSN.
        psn: u32,
        /// The next PSN the initiator would send.
        next_psn: u32,
    },
}

impl core::fmt::Display for AckError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AckError::BeyondSent { psn, next_psn } => {
                write!(f, "ACK covers PSN {psn}, never sent (next PSN {next_psn})")
            }
        }
    }
}

impl core::error::Error for AckError {}

/// The initiator's record of the request PSNs it has sent on one PDC and which are acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TxWindow<const W: usize = 2> {
    /// Oldest PSN not yet acknowledged (`tx_base`).
    base: u32,
    /// Next PSN to send.
    next: u32,
    /// The newest cumulative ACK PSN seen.
    max_cack: u32,
    /// Bit `i`: PSN `base + i` selectively acknowledged.
    acked: Bits<W>,
    /// Bit `i`: PSN `base + i` is deemed lost and waits to be resent.
    lost: Bits<W>,
    /// Bit `i`: PSN `base + i` has been resent at least once.
    resent: Bits<W>,
}

impl<const W: usize> TxWindow<W> {
    /// `MP_RANGE`, in PSNs.
    pub const MP_RANGE: u32 = Bits::<W>::SPAN;

    /// A window whose first PSN is `start_psn`.
    pub const fn new(start_psn: u32) -> Self {
        TxWindow {
            base: start_psn,
            next: start_psn,
            max_cack: start_psn.wrapping_sub(1),
            acked: Bits([0; W]),
            lost: Bits([0; W]),
            resent: Bits([0; W]),
        }
    }

    /// An empty window whose next PSN is `next`, after a cumulative ACK of `max_cack`: what a
    /// window with nothing outstanding, marked or selectively acknowledged equals.
    pub(crate) const fn resume(next: u32, max_cack: u32) -> Self {
        TxWindow { max_cack, ..TxWindow::new(next) }
    }

    /// Oldest PSN not yet acknowledged; `CLEAR_PSN` is one before it.
    pub const fn base(&self) -> u32 {
        self.base
    }

    /// The PSN the next new packet gets.
    pub const fn next_psn(&self) -> u32 {
        self.next
    }

    /// The newest cumulative ACK PSN.
    pub const fn max_cack(&self) -> u32 {
        self.max_cack
    }

    /// Packets sent and not yet acknowledged.
    #[inline]
    pub fn outstanding(&self) -> u32 {
        self.span().saturating_sub(self.acked.count())
    }

    /// PSNs from the base to the next to send: sent and not cumulatively acknowledged.
    #[inline]
    fn span(&self) -> u32 {
        self.next.wrapping_sub(self.base)
    }

    /// Whether any packet sent is unacknowledged (`outstanding() > 0`), without counting: the
    /// base is always unacknowledged, since an acknowledgement of the base moves it on.
    #[inline]
    pub const fn has_outstanding(&self) -> bool {
        self.next != self.base
    }

    /// Whether a new PSN may be sent, given the peer's advertised range `peer_mp_range`.
    #[inline]
    pub fn can_send(&self, peer_mp_range: u32) -> bool {
        self.span() < Self::MP_RANGE && self.next.wrapping_sub(self.max_cack) <= peer_mp_range
    }

    /// Takes the next PSN if [`TxWindow::can_send`] allows it.
    #[inline]
    pub fn send(&mut self, peer_mp_range: u32) -> Option<u32> {
        if !self.can_send(peer_mp_range) {
            return None;
        }
        let psn = self.next;
        self.next = psn.wrapping_add(1);
        Some(psn)
    }

    /// Whether `psn` (sent) has been acknowledged.
    #[inline(always)]
    pub fn is_acked(&self, psn: u32) -> bool {
        let i = psn.wrapping_sub(self.base);
        if i >= self.span() {
            // Before the base (acknowledged and released) or not yet sent.
            return psn_after(self.base, psn);
        }
        self.acked.get(i)
    }

    /// Applies an ACK: cumulative `cack_psn`, then the SACK bitmap if any. Returns how many sent
    /// PSNs became acknowledged. A stale cumulative PSN (not newer than one already seen) is
    /// ignored, but its SACK bits still count.
    #[inline]
    pub fn on_ack(&mut self, cack_psn: u32, sack: Option<Sack>) -> Result<u32, AckError> {
        let last_sent = self.next.wrapping_sub(1);
        if psn_after(cack_psn, last_sent) {
            return Err(AckError::BeyondSent { psn: cack_psn, next_psn: self.next });
        }
        if let Some(s) = sack.filter(|s| s.bitmap != 0) {
            let newest = s.base.wrapping_add(63 - s.bitmap.leading_zeros());
            if psn_after(newest, last_sent) {
                return Err(AckError::BeyondSent { psn: newest, next_psn: self.next });
            }
        }
        // In order, nothing is selectively acknowledged before or after, and the count needs no
        // population count (a dozen instructions a word where the CPU has none).
        let before = if self.acked.is_empty() { self.span() } else { self.outstanding() };
        if psn_after(cack_psn, self.max_cack) {
            self.max_cack = cack_psn;
        }
        if let Some(s) = sack.filter(|s| s.bitmap != 0) {
            // Bit `i` is PSN `s.base + i`; bits before the window base are already acknowledged.
            match s.base.wrapping_sub(self.base) as i32 {
                o @ 0.. => self.acked.or_word_at(o as u32, s.bitmap),
                o @ -63..=-1 => self.acked.or_word_at(0, s.bitmap >> o.unsigned_abs()),
                _ => {}
            }
        }
        // Everything up to the cumulative PSN is acknowledged.
        if psn_after(cack_psn.wrapping_add(1), self.base) {
            let n = cack_psn.wrapping_add(1).wrapping_sub(self.base);
            self.advance(n);
        }
        if self.acked.is_empty() {
            return Ok(before.saturating_sub(self.span()));
        }
        let run = self.acked.leading_run();
        if run > 0 {
            self.advance(run);
        }
        self.lost.clear_all_in(&self.acked);
        Ok(before.saturating_sub(self.outstanding()))
    }

    /// Applies every acknowledgement `ack` carries: `CACK_PSN`, the SACK bitmap of the CC forms,
    /// and the PSN `ACK_PSN = CACK_PSN + ack_psn_offset` names. ACK_PSN acknowledges that PSN even
    /// where CACK does not reach it (UE 1.0 §3.5.20.2.2: a guaranteed-delivery response's PSN is
    /// released above CACK; the reference provider marks ACK_PSN acknowledged, and its plain ACKs
    /// carry no SACK). Not for probes, whose field is the probe's opaque value. Returns how many
    /// sent PSNs became acknowledged; an ACK naming a PSN never sent changes nothing.
    #[inline(always)]
    pub fn on_ack_fields(&mut self, ack: &crate::pds::Ack) -> Result<u32, AckError> {
        let sack = ack.sack().map(|(base, bitmap)| Sack { base, bitmap });
        let named = Some(ack.ack_psn())
            .filter(|&psn| !ack.flags.contains(crate::pds::AckFlags::P) && psn_after(psn, ack.cack_psn))
            .map(|psn| Sack { base: psn, bitmap: 1 });
        if let Some(s) = named {
            if psn_after(s.base, self.next.wrapping_sub(1)) {
                return Err(AckError::BeyondSent { psn: s.base, next_psn: self.next });
            }
        }
        let mut acked = self.on_ack(ack.cack_psn, sack)?;
        if named.is_some() {
            acked += self.on_ack(ack.cack_psn, named)?;
        }
        Ok(acked)
    }

    /// Moves the base `n` PSNs on, dropping their state.
    #[inline]
    fn advance(&mut self, n: u32) {
        self.base = self.base.wrapping_add(n);
        // In order and without loss nothing is marked, and only the base moves.
        if self.acked.is_empty() && self.lost.is_empty() && self.resent.is_empty() {
            return;
        }
        self.acked.shift_down(n);
        self.lost.shift_down(n);
        self.resent.shift_down(n);
    }

    /// Test support: behaves as if `n` more PSNs had been sent and acknowledged.
    #[cfg(test)]
    pub(crate) fn skip(&mut self, n: u32) {
        self.base = self.base.wrapping_add(n);
        self.next = self.next.wrapping_add(n);
        self.max_cack = self.base.wrapping_sub(1);
    }

    /// Gives up every PSN sent so far (close in error): the base moves to the next PSN, and
    /// nothing is outstanding or marked lost.
    pub fn abandon(&mut self) {
        let sent = self.span();
        self.advance(sent);
    }

    /// The newest PSN known to have arrived: the highest selectively acknowledged one, else the
    /// newest cumulative ACK PSN.
    pub fn newest_acked(&self) -> u32 {
        match self.acked.last_set() {
            Some(i) => self.base.wrapping_add(i),
            None => self.max_cack,
        }
    }

    /// Marks `psn` lost if it was sent and is not acknowledged. Returns whether it is now marked.
    pub fn mark_lost(&mut self, psn: u32) -> bool {
        let i = psn.wrapping_sub(self.base);
        if i >= self.span() || self.acked.get(i) {
            return false;
        }
        self.lost.set(i);
        true
    }

    /// Whether `psn` is marked lost and waits to be resent.
    pub fn is_lost(&self, psn: u32) -> bool {
        let i = psn.wrapping_sub(self.base);
        i < self.span() && self.lost.get(i)
    }

    /// Every sent PSN from the base on, acknowledged or not, oldest first.
    pub fn unacked_span(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.span()).map(|i| self.base.wrapping_add(i))
    }

    /// Marks every sent, unacknowledged PSN lost (a retransmission timeout, or go-back-N).
    /// Returns how many were newly marked.
    pub fn mark_all_lost(&mut self) -> u32 {
        let sent = self.span();
        self.lost.set_below_unless(sent, &self.acked, &Bits([0; W]))
    }

    /// Fast loss detection: the newest unacknowledged PSN, neither resent nor marked yet, that has
    /// at least `threshold` PSNs after it that arrived (every such PSN at or before it is a loss
    /// candidate), or `None`.
    pub fn loss_candidates(&self, threshold: u32) -> Option<u32> {
        let top = self.acked.last_set()?;
        // PSN `base + i` qualifies when `top - i >= threshold`, i.e. `i < top + 1 - threshold`.
        let n = (top + 1).saturating_sub(threshold.max(1));
        let mut skip = self.resent;
        for (s, l) in skip.0.iter_mut().zip(self.lost.0) {
            *s |= l;
        }
        let mut probe = Bits([0; W]);
        probe.set_below_unless(n, &self.acked, &skip);
        probe.last_set().map(|i| self.base.wrapping_add(i))
    }

    /// Marks lost every unacknowledged PSN up to and including `psn` that has not been resent
    /// yet. Returns how many were newly marked.
    pub fn mark_lost_through(&mut self, psn: u32) -> u32 {
        let n = psn.wrapping_sub(self.base).wrapping_add(1);
        let sent = self.span();
        if psn_after(self.base, psn) {
            return 0;
        }
        self.lost.set_below_unless(n.min(sent), &self.acked, &self.resent)
    }

    /// Forgets which PSNs were resent, so loss detection may mark them lost again (SLEEK's
    /// recovery after a probe found the network empty).
    pub fn forget_resends(&mut self) {
        self.resent = Bits([0; W]);
    }

    /// The oldest PSN marked lost, without taking it.
    pub fn next_lost(&self) -> Option<u32> {
        self.lost.first_set().map(|i| self.base.wrapping_add(i))
    }

    /// Takes the oldest PSN marked lost, recording that it has been resent.
    pub fn take_lost(&mut self) -> Option<u32> {
        let i = self.lost.first_set()?;
        self.lost.clear(i);
        self.resent.set(i);
        Some(self.base.wrapping_add(i))
    }

    /// PSNs marked lost and not yet resent.
    pub fn lost_count(&self) -> u32 {
        self.lost.count()
    }

    /// Whether any PSN is marked lost and not yet resent (`lost_count() > 0`, without counting).
    #[inline(always)]
    pub fn has_lost(&self) -> bool {
        !self.lost.is_empty()
    }

    /// The sent, unacknowledged PSNs, oldest first (what a retransmission would resend).
    pub fn unacked(&self) -> impl Iterator<Item = u32> + '_ {
        let n = self.span();
        (0..n).filter(|&i| !self.acked.get(i)).map(|i| self.base.wrapping_add(i))
    }

    /// Moves every PSN by `new_start − old start` before anything was acknowledged (NACK
    /// NEW_START_PSN while SYN is set, as uet-ref-prov `uet_pds.c` does) and marks every sent PSN
    /// lost, to be re-stamped and resent. Returns false, changing nothing, once any packet has been
    /// acknowledged.
    pub fn restart_at(&mut self, new_start: u32) -> bool {
        if self.acked.count() != 0 || self.max_cack != self.base.wrapping_sub(1) {
            return false;
        }
        let sent = self.span();
        *self = TxWindow::new(new_start);
        self.next = new_start.wrapping_add(sent);
        self.mark_all_lost();
        true
    }
}

/// SACK-driven loss detection for one send direction (RUD; a ROD receiver keeps no SACK): an
/// unacknowledged PSN with `loss_threshold` acknowledged PSNs after it, still unacknowledged
/// `reorder_window` later, is resent once without waiting for the RTO (project-defined, see
/// [`config`](super::config)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct LossDetector {
    /// When the candidates up to `psn` are marked lost if still unacknowledged, if armed.
    at: linklayer::Deadline,
    psn: u32,
}

impl LossDetector {
    /// Not armed (every byte zero).
    pub(crate) const ZERO: Self = LossDetector { at: linklayer::Deadline::NONE, psn: 0 };

    /// After an ACK: arms the reorder window for the current candidates, or marks them at once
    /// when the window is zero. Returns how many PSNs it marked.
    #[inline]
    pub(crate) fn on_ack<const W: usize>(
        &mut self,
        tx: &mut TxWindow<W>,
        now: linklayer::Instant,
        cfg: &super::PdcConfig,
    ) -> u32 {
        if self.at.is_armed() {
            return 0;
        }
        let Some(psn) = tx.loss_candidates(cfg.loss_threshold) else { return 0 };
        if cfg.reorder_window == linklayer::Duration::ZERO {
            return tx.mark_lost_through(psn);
        }
        self.psn = psn;
        self.at.set(now.saturating_add(cfg.reorder_window));
        0
    }

    /// At `now`: marks the candidates whose reorder window ended, then looks for new ones.
    pub(crate) fn on_timeout<const W: usize>(
        &mut self,
        tx: &mut TxWindow<W>,
        now: linklayer::Instant,
        cfg: &super::PdcConfig,
    ) {
        if self.at.is_due(now) {
            self.at.clear();
            tx.mark_lost_through(self.psn);
            self.on_ack(tx, now, cfg);
        }
    }

    /// The end of the reorder window, if one runs.
    pub(crate) const fn deadline(&self) -> linklayer::Deadline {
        self.at
    }

    /// Stops the reorder window.
    pub(crate) fn stop(&mut self) {
        self.at.clear();
    }
}

/// ACK generation parameters (defaults of UE 1.0 Table 3-28, as XDP2 `src/include/uet/config.h`
/// lists them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AckPolicy {
    /// `ACK_Gen_Trigger`: bytes accepted before an ACK is due (default 16 KiB, at most 32 KiB).
    pub gen_trigger: u32,
    /// `ACK_Gen_Min_Pkt_Add`: the least a packet adds to the count (default 1024, at most 2 KiB).
    pub min_pkt_add: u32,
    /// `Enb_ACK_Per_Pkt`: ACK every packet (default off).
    pub per_packet: bool,
    /// `ACK_On_ECN`: an ECN-marked packet triggers an ACK (default on).
    pub on_ecn: bool,
}

impl AckPolicy {
    /// The spec table's defaults (the same as [`Default`]).
    pub const DEFAULT: AckPolicy =
        AckPolicy { gen_trigger: 16 * 1024, min_pkt_add: 1024, per_packet: false, on_ecn: true };
}

impl Default for AckPolicy {
    fn default() -> Self {
        AckPolicy::DEFAULT
    }
}

/// What about an accepted packet can make an ACK due at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AckTriggers {
    /// The request had AR (the initiator asked; set on EOM packets and every retransmission).
    pub ar: bool,
    /// The request had SYN.
    pub syn: bool,
    /// The packet arrived ECN-marked.
    pub ecn: bool,
    /// The response needs guaranteed delivery (it must be held until cleared).
    pub needs_clear: bool,
}

/// Counts accepted bytes and says when an ACK is due (`ACK_Gen_Trigger`, UE 1.0 Table 3-28;
/// coalescing rules of uet-ref-prov `uet_pds.c`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AckCoalescer {
    accepted: u32,
}

impl AckCoalescer {
    /// Nothing accepted since the last ACK.
    pub const ZERO: Self = AckCoalescer { accepted: 0 };

    /// Accounts one accepted packet of `payload_len` bytes; true when an ACK should go now.
    #[inline]
    pub fn on_packet(&mut self, policy: &AckPolicy, payload_len: u32, t: AckTriggers) -> bool {
        self.accepted = self.accepted.saturating_add(payload_len.max(policy.min_pkt_add));
        policy.per_packet
            || t.ar
            || t.syn
            || t.needs_clear
            || (t.ecn && policy.on_ecn)
            || self.accepted >= policy.gen_trigger
    }

    /// An ACK went out: start counting again.
    #[inline]
    pub fn sent(&mut self) {
        self.accepted = 0;
    }

    /// Bytes accepted since the last ACK.
    pub const fn accepted(&self) -> u32 {
        self.accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn in_order_and_out_of_order_arrivals() {
        let mut w = RxWindow::<2>::new(4);
        assert_eq!(w.cack_psn(), 3);
        assert_eq!(w.receive(5), Arrival::New);
        assert_eq!(w.cack_psn(), 3);
        assert_eq!(w.sack(), Sack { base: 4, bitmap: 0b10 });
        assert_eq!(w.receive(4), Arrival::New);
        assert_eq!(w.cack_psn(), 5);
        assert_eq!(w.receive(4), Arrival::Stale);
        assert_eq!(w.receive(7), Arrival::New);
        assert_eq!(w.receive(7), Arrival::Duplicate);
        assert_eq!(w.out_of_order(), 1);
        assert_eq!(w.receive(6 + 128), Arrival::OutOfWindow);
        assert_eq!(w.receive(6 + 127), Arrival::New);
        assert_eq!(w.max_rcvd(), 133);
        // The SACK follows the newest arrival: base 133 − 63 = 70.
        assert_eq!(w.sack(), Sack { base: 70, bitmap: 1 << 63 });
        assert_eq!(w.receive(5u32.wrapping_sub(128)), Arrival::OutOfWindow);
    }

    #[test]
    fn wraps_at_u32_max() {
        let mut w = RxWindow::<2>::new(u32::MAX - 1);
        for psn in [u32::MAX, 0, u32::MAX - 1, 1] {
            assert_eq!(w.receive(psn), Arrival::New);
        }
        assert_eq!(w.cack_psn(), 1);
        let mut t = TxWindow::<2>::new(u32::MAX - 1);
        for _ in 0..4 {
            t.send(128).unwrap();
        }
        assert_eq!(t.on_ack(0, None), Ok(3));
        assert_eq!(t.base(), 1);
        assert_eq!(t.outstanding(), 1);
    }

    #[test]
    fn tx_window_limits_and_acks() {
        let mut t = TxWindow::<2>::new(100);
        // The peer advertises 8 PSNs past its CACK.
        let sent: Vec<u32> = core::iter::from_fn(|| t.send(8)).collect();
        assert_eq!(sent, (100..108).collect::<Vec<_>>());
        assert_eq!(t.on_ack(108, None), Err(AckError::BeyondSent { psn: 108, next_psn: 108 }));
        assert_eq!(t.on_ack(99, Some(Sack { base: 100, bitmap: 0b1010 })), Ok(2));
        assert_eq!(t.unacked().collect::<Vec<_>>(), [100, 102, 104, 105, 106, 107]);
        assert!(t.is_acked(101) && !t.is_acked(100) && !t.is_acked(108));
        let before = t;
        assert_eq!(
            t.on_ack(101, Some(Sack { base: 106, bitmap: 0b1111 })),
            Err(AckError::BeyondSent { psn: 109, next_psn: 108 })
        );
        assert_eq!(t, before, "a rejected ACK changes nothing");
        assert_eq!(t.on_ack(101, None), Ok(1));
        assert_eq!(t.base(), 102);
        assert_eq!(t.on_ack(100, None), Ok(0), "a stale CACK changes nothing");
        assert!(t.is_acked(100));
        assert!(t.can_send(8));
        assert!(!t.restart_at(500));
        let mut fresh = TxWindow::<2>::new(4);
        fresh.send(128);
        fresh.send(128);
        assert!(fresh.restart_at(900));
        assert_eq!((fresh.base(), fresh.next_psn()), (900, 902));
    }

    /// The windows are most of a PDC's state; the budget for one PDC is 256 bytes.
    #[test]
    fn window_sizes() {
        use core::mem::size_of;
        std::println!("RxWindow<2>: {} B, TxWindow<2>: {} B", size_of::<RxWindow<2>>(), size_of::<TxWindow<2>>());
        assert_eq!(size_of::<RxWindow<2>>(), 24);
        assert_eq!(size_of::<TxWindow<2>>(), 64);
    }

    #[test]
    fn clear_through_advances_cack() {
        let mut w = RxWindow::<2>::new(10);
        w.receive(15);
        w.clear_through(13);
        assert_eq!(w.cack_psn(), 13);
        w.receive(14);
        assert_eq!(w.cack_psn(), 15);
        w.clear_through(5);
        assert_eq!(w.cack_psn(), 15);
    }

    #[test]
    fn coalescing_rules() {
        let p = AckPolicy::default();
        let mut c = AckCoalescer::default();
        for _ in 0..3 {
            assert!(!c.on_packet(&p, 4096, AckTriggers::default()));
        }
        assert!(c.on_packet(&p, 4096, AckTriggers::default()), "16 KiB reached");
        c.sent();
        assert!(!c.on_packet(&p, 10, AckTriggers::default()));
        assert_eq!(c.accepted(), 1024, "a small packet counts ACK_Gen_Min_Pkt_Add");
        assert!(c.on_packet(&p, 10, AckTriggers { ar: true, ..Default::default() }));
        assert!(c.on_packet(&p, 10, AckTriggers { ecn: true, ..Default::default() }));
        let no_ecn = AckPolicy { on_ecn: false, ..p };
        c.sent();
        assert!(!c.on_packet(&no_ecn, 10, AckTriggers { ecn: true, ..Default::default() }));
    }

    proptest! {
        /// The receive window against a set of received PSNs, from a start near the wrap.
        #[test]
        fn rx_window_matches_model(start in prop_oneof![Just(u32::MAX - 70), any::<u32>()], offsets in prop::collection::vec(0u32..200, 0..300)) {
            let mut w = RxWindow::<2>::new(start);
            let mut got = BTreeSet::new();
            for off in offsets {
                let psn = start.wrapping_add(off);
                let cack_off = w.cack_psn().wrapping_sub(start).wrapping_add(1); // PSNs below are all in
                let expected = if off < cack_off {
                    if cack_off - off <= 128 { Arrival::Stale } else { Arrival::OutOfWindow }
                } else if off - cack_off < 128 {
                    if got.contains(&off) { Arrival::Duplicate } else { Arrival::New }
                } else {
                    Arrival::OutOfWindow
                };
                prop_assert_eq!(w.receive(psn), expected);
                if expected == Arrival::New {
                    got.insert(off);
                }
                let mut c = 0;
                while got.contains(&c) { c += 1; }
                prop_assert_eq!(w.cack_psn(), start.wrapping_add(c).wrapping_sub(1));
                let s = w.sack();
                for i in 0..64 {
                    let o = s.base.wrapping_add(i).wrapping_sub(start);
                    prop_assert_eq!(s.bitmap >> i & 1 != 0, o >= c && got.contains(&o));
                }
                prop_assert_eq!(w.out_of_order() as usize, got.iter().filter(|&&o| o > c).count());
            }
        }

        /// Whatever ACKs arrive (from a receive window fed any order), the initiator never counts
        /// a PSN acked that did not arrive, and acks everything once all arrived.
        #[test]
        fn tx_window_follows_rx_window(start in any::<u32>(), order in prop::collection::vec(0u32..64, 1..200), sack_every in 1usize..5) {
            let mut tx = TxWindow::<2>::new(start);
            let mut rx = RxWindow::<2>::new(start);
            let n = 64;
            for _ in 0..n { tx.send(128).unwrap(); }
            for (k, off) in order.iter().enumerate() {
                rx.receive(start.wrapping_add(*off));
                let sack = (k % sack_every == 0).then(|| rx.sack());
                tx.on_ack(rx.cack_psn(), sack).unwrap();
                for o in 0..n {
                    let psn = start.wrapping_add(o);
                    if tx.is_acked(psn) { prop_assert!(rx.received(psn)); }
                }
            }
            for o in 0..n { rx.receive(start.wrapping_add(o)); }
            tx.on_ack(rx.cack_psn(), Some(rx.sack())).unwrap();
            prop_assert_eq!(tx.outstanding(), 0);
            prop_assert_eq!(tx.base(), start.wrapping_add(n));
        }

        /// The loss marks against a model: only sent, unacknowledged PSNs are ever marked; an
        /// acknowledgement clears a mark; `take_lost` yields the oldest mark once and records the
        /// resend; `loss_candidates` and `mark_lost_through` pick exactly the PSNs the rule names.
        #[test]
        fn loss_marks_match_model(
            start in any::<u32>(),
            ops in prop::collection::vec((0u8..6, 0u32..140), 1..300),
            threshold in 1u32..6,
        ) {
            let mut tx = TxWindow::<2>::new(start);
            let mut rx = RxWindow::<2>::new(start);
            let mut lost = BTreeSet::new();
            let mut resent = BTreeSet::new();
            let off = |p: u32| p.wrapping_sub(start);
            for (op, x) in ops {
                match op {
                    0 => { let _ = tx.send(128); }
                    1 => {
                        let psn = tx.base().wrapping_add(x % 128);
                        if psn_after(tx.next_psn(), psn) {
                            rx.receive(psn);
                            // An ACK in order or out of it: the PSNs it acknowledged, counted.
                            let (before, sack) = (tx.outstanding(), (x % 2 == 1).then(|| rx.sack()));
                            let acked = tx.on_ack(rx.cack_psn(), sack).unwrap();
                            prop_assert_eq!(acked, before - tx.outstanding());
                        }
                    }
                    2 => {
                        let psn = tx.base().wrapping_add(x);
                        let marked = tx.mark_lost(psn);
                        let eligible = psn_after(tx.next_psn(), psn) && !tx.is_acked(psn);
                        prop_assert_eq!(marked, eligible);
                        if marked { lost.insert(off(psn)); }
                    }
                    3 => {
                        tx.mark_all_lost();
                        for p in tx.unacked() { lost.insert(off(p)); }
                    }
                    4 => {
                        let expect = lost.iter().copied().find(|&o| !tx.is_acked(start.wrapping_add(o)));
                        let got = tx.take_lost().map(off);
                        prop_assert_eq!(got, expect);
                        if let Some(o) = got { lost.remove(&o); resent.insert(o); }
                    }
                    _ => {
                        // The rule: unacknowledged, neither marked nor resent, with the newest
                        // selectively acknowledged PSN at least `threshold` after it.
                        let top = tx.unacked_span().filter(|&p| tx.is_acked(p)).map(off).max();
                        let want = top.and_then(|top| {
                            tx.unacked_span()
                                .map(off)
                                .filter(|&o| !tx.is_acked(start.wrapping_add(o)) && !lost.contains(&o) && !resent.contains(&o))
                                .filter(|&o| top >= o + threshold)
                                .max()
                        });
                        prop_assert_eq!(tx.loss_candidates(threshold).map(off), want);
                        if let Some(o) = want {
                            let before: Vec<u32> = tx.unacked().map(off)
                                .filter(|&u| u <= o && !lost.contains(&u) && !resent.contains(&u)).collect();
                            prop_assert_eq!(tx.mark_lost_through(start.wrapping_add(o)) as usize, before.len());
                            lost.extend(before);
                        }
                    }
                }
                // Acknowledged PSNs lose their marks; the counts agree.
                lost.retain(|&o| !tx.is_acked(start.wrapping_add(o)));
                resent.retain(|&o| psn_after(start.wrapping_add(o).wrapping_add(1), tx.base()));
                prop_assert_eq!(tx.lost_count() as usize, lost.len());
                prop_assert_eq!(tx.has_lost(), !lost.is_empty());
                prop_assert_eq!(tx.next_lost().map(off), lost.iter().next().copied());
                // The base is never acknowledged: something is outstanding exactly when the base
                // has been sent.
                prop_assert_eq!(tx.has_outstanding(), tx.outstanding() > 0);
                prop_assert_eq!(tx.has_outstanding(), tx.unacked().next().is_some());
            }
        }
    }
}
