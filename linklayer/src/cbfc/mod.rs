//! Credit-based flow control (CBFC), Ultra Ethernet 1.0 §5.2.
//!
//! Sources: the OCP SAI CBFC proposal (`doc/CBFC/SAI-Credit_Based_Flow_Control.md`) and the
//! merged `inc/saiport.h` and `inc/saivirtualchannel.h` (opencomputeproject/SAI), which cite
//! UE 1.0 §5.2; the SONiC Scale-Up test standard's CBFC cases (sonic-net/SONiC); the Open
//! Traffic Generator model `ultra_ethernet/ultraethernet.yaml` (open-traffic-generator/models).
//!
//! Facts implemented:
//!
//! * up to 32 virtual channels per port, each lossless (flow-controlled) or best-effort;
//! * cyclic 20-bit *credits consumed* (CC) and *credits freed* (CF) counters per VC at both ends;
//!   credit limits `0..=2^20-1`;
//! * `pkt_credits = ceil((pktSize + PktOvhd) / CreditSize)`, overhead in `[-16, 127]` bytes;
//! * the sender sends iff `S_CU + pkt_credits <= S_CL`, for the VC and, where a port limit is
//!   configured, for the port; then `S_CC += pkt_credits`;
//! * the receiver counts `R_CC += pkt_credits` on enqueue and `R_CF += pkt_credits` on drain, and
//!   reports `R_CF` in frequent, small *CF_Update* control ordered sets; the sender applies
//!   `S_CU -= R_CF - S_CF; S_CF = R_CF`;
//! * the sender periodically sends *CC_Update* packets with `S_CC` of every VC (timer default
//!   256 µs, range 1..=250 000 µs); the receiver applies `R_CF += S_CC - R_CC; R_CC = S_CC`, which
//!   frees credits of frames lost on the link (credit-leak recovery);
//! * CF_Update spacing: at least `CF_min_spacing` bytes apart (default 6400, at least 800), and at
//!   most `CF_max_spacing` bytes apart (default 262 144, 16 KiB to 1 MiB in 16 KiB steps) so that a
//!   lost update is repaired;
//! * the SAI "lossless VC initialization" workflow clears one VC's sender `CREDITS_USED`,
//!   `CONSUMED`, `FREED` and receiver `CONSUMED`, `FREED`, the other VCs untouched
//!   ([`CbfcSender::set_vc_mode`], [`CbfcSender::resync_vc`], [`CbfcReceiver::resync_vc`]);
//! * the statistics are SAI's `SAI_VIRTUAL_CHANNEL_STAT_*`: [`CbfcSender::in_use`]
//!   (`SENDER_CREDITS_USED`), [`CbfcSender::consumed`], [`CbfcSender::freed`],
//!   [`CbfcSender::in_use_watermark`], [`CbfcReceiver::consumed`], [`CbfcReceiver::freed`].
//!
//! Project-defined choices (the public record does not settle them; each is marked where it is
//! made):
//!
//! * **One number per lossless VC.** [`VcMode::Lossless`]'s `credit_limit` is the sender's limit
//!   `S_CL_vc` and the receiver's buffer for the VC, in credits; configure both ends with the
//!   same value (SAI splits it into the receiver's native limit and the sender's profile).
//! * *Credits in use* `S_CU` is not stored per VC: it is `S_CC - S_CF`, exactly as the SAI text
//!   defines it, so it can never drift. The port's in-use sum is kept as a cache of the per-VC sums.
//! * A frame costs at least one credit even if `len + overhead <= 0` (a zero-cost frame could
//!   overrun the receiver; a peer that charges 0 only makes this end more conservative).
//! * `CF_max_spacing` is applied per VC: every lossless VC is refreshed at least that often, and
//!   `CF_min_spacing` is applied per port, between any two CF_Updates. A refresh due goes before
//!   a change (the refresh repairs a lost update, which the VC's own traffic, stopped by the
//!   loss, cannot); so idle lossless VCs take their share of the port's CF_Update slots (31 at
//!   the default spacings, 6 400 and 262 144 bytes, about three quarters of them).
//! * **CC_Update, entry by entry.** The reconciliation is only sound when the CC_Update travels in
//!   order with the data frames of its VC (on an LLR link, in the same LLR sequence:
//!   [`crate::link::Link`] sends it so). Each VC's entry stands alone: one refused (a counter
//!   behind `R_CC`, a jump beyond the VC's buffer) leaves that VC unchanged, the others apply,
//!   and the [`CcUpdateOutcome`] names it. A CC_Update reports all sixteen VCs of its group,
//!   zero for those not lossless at the sender. One that cannot be sent now is handed back
//!   ([`CbfcSender::unsent_cc_update`]) and stays pending.
//! * **Resynchronisation after a peer restart.** [`CbfcSender::resync_vc`] re-initialises a VC
//!   and *holds* it until the peer's receiver reports `R_CF = 0`, which
//!   [`CbfcReceiver::resync_vc`] sends once the frames of the old epoch have drained; meanwhile
//!   the receiver ignores the VC's CC_Update entries. [`crate::link`] says when to call them.
//! * **Counter width.** The SAI text gives both counters 20 bits, which this crate follows. The
//!   OTG model's results give CF as 15 bits, and 15 is what a CF_Update would carry in the 24
//!   data bits of a standard ordered set beside its type and VC ([`crate::wire`]).
//! * **Defaults.** SAI's (CC_Update every 256 µs, CF spacing 6400 to 262 144 bytes); the OTG
//!   model defaults differ (10 µs, 800 and 65 536 bytes) and allows at most 4 lossless VCs per
//!   port, which this crate does not enforce.
//! * The byte layouts of both messages are in [`crate::wire`].
//!
//! Credit pools and profiles (the SAI management objects that carve a port limit into reserved and
//! shared parts) are configuration policy above this engine and are not modelled: a VC has an
//! optional own limit and may share an optional port limit.
//!
//! The engines never see frame bytes and never encode messages themselves: the embedder calls
//! [`CbfcSender::may_send`] / [`CbfcSender::on_sent`] around its scheduler, reports drained buffers
//! with [`CbfcReceiver::on_freed`], and carries the counters returned by the polls in whatever
//! encoding the link uses ([`crate::wire`] has the project's own).

mod receiver;
mod sender;

pub use receiver::{CbfcReceiver, CbfcReceiverConfig, CcUpdateOutcome, CfUpdate, ReceiverStats};
pub use sender::{CbfcSender, CbfcSenderConfig, SenderStats};

use crate::Error;
use crate::seq::{Bits, Seq};
use crate::time::Duration;

/// The number of virtual channels a port may have (UE 1.0 §5.2).
pub const MAX_VCS: usize = 32;

/// The largest credit limit a counter can express: `2^20 - 1` (UE 1.0 §5.2).
pub const CREDIT_LIMIT_MAX: u32 = (1 << 20) - 1;

/// A cyclic 20-bit credits-consumed or credits-freed counter (UE 1.0 §5.2).
pub type CreditCounter = Seq<Bits<20>>;

/// Default credit size in bytes at the sender (UE 1.0 §5.2 via SAI: 128 B).
pub const DEFAULT_CREDIT_SIZE: u16 = 128;

/// Default CC_Update period (UE 1.0 §5.2 via SAI: 256 µs).
pub const DEFAULT_CC_UPDATE_INTERVAL: Duration = Duration::from_micros(256);

/// A virtual channel number, `0..32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Vc(u8);

impl Vc {
    /// Virtual channel 0 (a constant: no `Result` to unwrap where only VC 0 is used).
    pub const ZERO: Vc = Vc(0);

    /// The virtual channel `index`, if it is below [`MAX_VCS`].
    pub const fn new(index: u8) -> Result<Self, Error> {
        if (index as usize) < MAX_VCS {
            Ok(Vc(index))
        } else {
            Err(Error::BadValue { field: "virtual channel", value: index as u32 })
        }
    }

    /// The channel number.
    pub const fn index(self) -> u8 {
        self.0
    }

    /// Every virtual channel, in order.
    pub fn all() -> impl Iterator<Item = Vc> {
        (0..MAX_VCS as u8).map(Vc)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Vc {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Vc(u.int_in_range(0..=(MAX_VCS as u8 - 1))?))
    }
}

/// How a virtual channel is treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum VcMode {
    /// Not flow-controlled: frames are sent and received without credit accounting.
    #[default]
    BestEffort,
    /// Lossless: frames need credits.
    Lossless {
        /// The VC's own credit limit (`S_CL_vc`, 1 to [`CREDIT_LIMIT_MAX`]), or `None` to share
        /// only the port limit (SAI's 0).
        credit_limit: Option<u32>,
    },
}

/// A VC's mode as the engines keep it: 8 bytes, all zero for best-effort ([`VcMode`] keeps
/// best-effort in a spare value of the limit's tag, so an engine's empty value would not be
/// all-zero bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mode {
    lossless: bool,
    /// The VC's own credit limit plus one; 0 for none. Limits are at most
    /// [`CREDIT_LIMIT_MAX`], so the sum fits.
    limit: u32,
}

impl Mode {
    const BEST_EFFORT: Mode = Mode { lossless: false, limit: 0 };

    fn of(mode: VcMode) -> Mode {
        match mode {
            VcMode::BestEffort => Mode::BEST_EFFORT,
            VcMode::Lossless { credit_limit } => {
                Mode { lossless: true, limit: credit_limit.map_or(0, |l| l.saturating_add(1)) }
            }
        }
    }

    fn get(self) -> VcMode {
        if self.lossless { VcMode::Lossless { credit_limit: self.limit.checked_sub(1) } } else { VcMode::BestEffort }
    }
}

/// The rule that turns a frame length into credits, shared by both ends of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CreditRule {
    credit_size: u16,
    packet_overhead: i16,
}

impl CreditRule {
    /// The smallest per-packet overhead (UE 1.0 §5.2: `[-16, 127]` bytes).
    pub const OVERHEAD_MIN: i16 = -16;
    /// The largest per-packet overhead.
    pub const OVERHEAD_MAX: i16 = 127;

    /// A rule charging `ceil((len + packet_overhead) / credit_size)` credits per frame.
    pub const fn new(credit_size: u16, packet_overhead: i16) -> Result<Self, Error> {
        if credit_size == 0 {
            return Err(Error::BadConfig { field: "credit_size" });
        }
        if packet_overhead < Self::OVERHEAD_MIN || packet_overhead > Self::OVERHEAD_MAX {
            return Err(Error::BadConfig { field: "packet_overhead" });
        }
        Ok(CreditRule { credit_size, packet_overhead })
    }

    /// Credit size in bytes.
    pub const fn credit_size(self) -> u16 {
        self.credit_size
    }

    /// Signed per-packet overhead in bytes.
    pub const fn packet_overhead(self) -> i16 {
        self.packet_overhead
    }

    /// A credit size of zero, read as 1 byte: the rule in an unconfigured engine's all-zero
    /// configuration (`EMPTY`); [`CreditRule::new`] refuses it.
    pub(crate) const ZERO: CreditRule = CreditRule { credit_size: 0, packet_overhead: 0 };

    /// Credits a frame of `len` bytes costs: `ceil((len + overhead) / credit_size)`, at least 1
    /// (project-defined floor, see the module doc). Fails if the cost exceeds
    /// [`CREDIT_LIMIT_MAX`], which no credit limit could ever admit.
    pub const fn credits_for(self, len: usize) -> Result<u32, Error> {
        let too_long = Error::BadValue {
            field: "frame length",
            value: if len > u32::MAX as usize { u32::MAX } else { len as u32 },
        };
        // The longest frame any limit could admit is (2^20 - 1) credits of at most 65535 bytes,
        // so a length past 2^36 is refused before any arithmetic can overflow.
        if len as u128 > (1u128 << 36) {
            return Err(too_long);
        }
        let bytes = (len as u64).saturating_add_signed(self.packet_overhead as i64);
        // A zero size (only in an unconfigured engine, [`CreditRule::ZERO`]) counts bytes.
        let size = if self.credit_size == 0 { 1 } else { self.credit_size as u64 };
        // Power-of-two credit sizes (the common case) round up with a shift instead of a divide.
        let credits =
            if size.is_power_of_two() { (bytes + size - 1) >> size.trailing_zeros() } else { bytes.div_ceil(size) };
        let credits = if credits == 0 { 1 } else { credits };
        if credits > CREDIT_LIMIT_MAX as u64 { Err(too_long) } else { Ok(credits as u32) }
    }
}

impl Default for CreditRule {
    fn default() -> Self {
        CreditRule { credit_size: DEFAULT_CREDIT_SIZE, packet_overhead: 0 }
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for CreditRule {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let size = u.int_in_range(1..=u16::MAX)?;
        let ovhd = u.int_in_range(Self::OVERHEAD_MIN..=Self::OVERHEAD_MAX)?;
        Ok(CreditRule { credit_size: size, packet_overhead: ovhd })
    }
}

/// A credit limit is 1 to [`CREDIT_LIMIT_MAX`]: a limit of 0 would admit no frame (SAI's 0, "use
/// the port limit", is `None` here).
fn check_limit(limit: u32, field: &'static str) -> Result<(), Error> {
    if limit == 0 || limit > CREDIT_LIMIT_MAX { Err(Error::BadConfig { field }) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_credits_follow_the_spec_formula() {
        let r = CreditRule::new(128, 0).unwrap();
        assert_eq!(r.credits_for(64).unwrap(), 1);
        assert_eq!(r.credits_for(128).unwrap(), 1);
        assert_eq!(r.credits_for(129).unwrap(), 2);
        assert_eq!(r.credits_for(9216).unwrap(), 72);
        let r = CreditRule::new(256, 20).unwrap();
        assert_eq!(r.credits_for(236).unwrap(), 1);
        assert_eq!(r.credits_for(237).unwrap(), 2);
        let r = CreditRule::new(64, -16).unwrap();
        assert_eq!(r.credits_for(80).unwrap(), 1);
        assert_eq!(r.credits_for(81).unwrap(), 2);
        // Project-defined floor: a frame never costs nothing.
        assert_eq!(r.credits_for(0).unwrap(), 1);
        assert_eq!(r.credits_for(16).unwrap(), 1);
    }

    #[test]
    fn rule_and_vc_validation() {
        assert_eq!(CreditRule::new(0, 0), Err(Error::BadConfig { field: "credit_size" }));
        assert!(CreditRule::new(128, -17).is_err());
        assert!(CreditRule::new(128, 128).is_err());
        assert!(CreditRule::new(1, 0).unwrap().credits_for(usize::MAX).is_err());
        assert!(CreditRule::new(1, 0).unwrap().credits_for(CREDIT_LIMIT_MAX as usize).is_ok());
        assert!(Vc::new(31).is_ok());
        assert!(Vc::new(32).is_err());
        assert_eq!(Vc::all().count(), MAX_VCS);
    }
}
