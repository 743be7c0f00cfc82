//! Configurations to start from: the SAI hardware defaults, a profile for software links, and
//! the sizing of the replay buffer and timer from a measured loop time.
//!
//! The sizing follows HPE's Slingshot link driver (`HewlettPackard/ss-link`,
//! `sl_core_hw_llr.c`), which measures the loop time during the LLR handshake and programs:
//!
//! * replay timer = 3 × loop time + 500 ns, clamped to 1 µs … 15.5 µs;
//! * replay buffer = loop time × line rate + 2 × 9216 + 9000 bytes (a loop's worth of data,
//!   plus two maximum-size frames in flight at either end and one being built).
//!
//! The replay storage should hold `replay_bytes` plus a maximum frame: the buffer never splits a
//! frame, so a fragmented one can refuse a frame a little below the limit (the sizing's two
//! 9216-byte margins cover that in practice).
//!
//! The 15.5 µs ceiling is that hardware's register range; [`LlrSizing::software`] drops it for
//! links whose loop time is that of a host stack. Frame limits are project-defined: the buffer
//! divided by the 64-byte minimum frame, at most 2^19 − 1 (half the 20-bit sequence space less one; the
//! largest window the OTG model `ultra_ethernet/ultraethernet.yaml` allows).

use super::{FrameAction, LlrRxConfig, LlrTxConfig};
use crate::time::{Duration, LinkRate};

/// The largest number of outstanding frames: half the 20-bit sequence space, less one. The OTG
/// model and SONiC's YANG allow 2^19; at exactly half the space RFC 1982 serial arithmetic cannot
/// tell a number ahead from one behind, so this crate stops one short (project-defined).
pub const OUTSTANDING_FRAMES_LIMIT: u32 = (1 << 19) - 1;

/// Replay buffer and timer sized for one link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LlrSizing {
    /// The loop time it was computed from.
    pub loop_time: Duration,
    /// `REPLAY_TIMER_MAX`.
    pub replay_timeout: Duration,
    /// `OUTSTANDING_BYTES_MAX`: the replay storage, in bytes, the transmitter needs.
    pub replay_bytes: u32,
    /// `OUTSTANDING_FRAMES_MAX`: `replay_bytes` of minimum-size frames, at most
    /// [`OUTSTANDING_FRAMES_LIMIT`]; the replay buffer's frame slots.
    pub replay_frames: u32,
}

const MAX_FRAME: u64 = 9216;
const MIN_FRAME: u64 = 64;

impl LlrSizing {
    /// HPE's sizing for a hardware link of `rate` whose measured loop time (LLR_INIT out to
    /// LLR_INIT_ECHO back) is `loop_time`: the timer clamped to 1–15.5 µs.
    pub const fn hardware(loop_time: Duration, rate: LinkRate) -> Self {
        let timer = Self::timer(loop_time).as_nanos();
        let timer = if timer < 1_000 {
            1_000
        } else if timer > 15_500 {
            15_500
        } else {
            timer
        };
        Self::with_timer(loop_time, rate, Duration::from_nanos(timer))
    }

    /// The same sizing for a software link (a simulator, or frames carried over UDP): the timer
    /// is at least 1 µs and has no upper clamp.
    pub const fn software(loop_time: Duration, rate: LinkRate) -> Self {
        let timer = Self::timer(loop_time).as_nanos();
        Self::with_timer(loop_time, rate, Duration::from_nanos(if timer < 1_000 { 1_000 } else { timer }))
    }

    const fn timer(loop_time: Duration) -> Duration {
        loop_time.saturating_mul(3).saturating_add(Duration::from_nanos(500))
    }

    const fn with_timer(loop_time: Duration, rate: LinkRate, replay_timeout: Duration) -> Self {
        let bytes = rate.bytes_in(loop_time).saturating_add(2 * MAX_FRAME + 9000);
        let bytes = if bytes > u32::MAX as u64 { u32::MAX } else { bytes as u32 };
        let frames = (bytes as u64).div_ceil(MIN_FRAME);
        let frames = if frames > OUTSTANDING_FRAMES_LIMIT as u64 { OUTSTANDING_FRAMES_LIMIT } else { frames as u32 };
        LlrSizing { loop_time, replay_timeout, replay_bytes: bytes, replay_frames: frames }
    }

    /// The same sizing with at most `slots` frames: the frame slots a replay buffer was built with
    /// (`ReplayBuffer::MAX_FRAMES`).
    pub const fn with_frame_slots(mut self, slots: usize) -> Self {
        if (self.replay_frames as usize) > slots {
            self.replay_frames = if slots > u32::MAX as usize { u32::MAX } else { slots as u32 };
        }
        self
    }
}

impl LlrTxConfig {
    /// The SAI defaults for everything the sizing does not set: `REPLAY_COUNT_MAX` 1, INIT and
    /// FLUSH frame action best-effort, no re-initialisation on FLUSH, no PCS-lost or data-age
    /// timeout (SAI 0), LLR_INIT repeated every replay timeout (project-defined).
    pub const fn hardware(sizing: &LlrSizing) -> Self {
        LlrTxConfig {
            outstanding_frames_max: sizing.replay_frames,
            outstanding_bytes_max: sizing.replay_bytes,
            replay_timeout: sizing.replay_timeout,
            replay_count_max: 1,
            pcs_lost_timeout: None,
            data_age_timeout: None,
            init_action: FrameAction::BestEffort,
            flush_action: FrameAction::BestEffort,
            reinit_on_flush: false,
            link_down_action: FrameAction::Discard,
            init_interval: sizing.replay_timeout,
        }
    }

    /// A profile for software links, where scheduling jitter, loss bursts and restarts are the
    /// rule (project-defined): 16 replays before FLUSH, FLUSH re-initialises by itself, a frame
    /// older than 1000 replay timeouts flushes, and frames offered outside ADVANCE wait
    /// ([`FrameAction::Block`]) instead of travelling unprotected — so a lossless VC never leaks
    /// credits around LLR and a CC_Update is never lost.
    pub const fn software(sizing: &LlrSizing) -> Self {
        LlrTxConfig {
            replay_count_max: 16,
            data_age_timeout: Some(sizing.replay_timeout.saturating_mul(1000)),
            init_action: FrameAction::Block,
            flush_action: FrameAction::Block,
            reinit_on_flush: true,
            link_down_action: FrameAction::Block,
            ..Self::hardware(sizing)
        }
    }
}

impl LlrRxConfig {
    /// LLR reception enabled, an LLR_ACK every 2048 bytes (`CTLOS_TARGET_SPACING` default) at
    /// `rate`.
    pub const fn enabled(rate: LinkRate) -> Self {
        LlrRxConfig { enabled: true, ack_spacing: 2048, link_rate: rate }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_follows_the_slingshot_formulas() {
        // 1 µs loop at 200 Gb/s: 25 000 bytes in flight.
        let s = LlrSizing::hardware(Duration::from_micros(1), LinkRate::GBPS_200);
        assert_eq!(s.replay_timeout, Duration::from_nanos(3_500));
        assert_eq!(s.replay_bytes, 25_000 + 2 * 9216 + 9000);
        assert_eq!(s.replay_frames, (25_000u32 + 2 * 9216 + 9000).div_ceil(64));
        // The timer's clamp: 1 µs below, 15.5 µs above (hardware only).
        assert_eq!(LlrSizing::hardware(Duration::ZERO, LinkRate::GBPS_800).replay_timeout, Duration::from_micros(1));
        let long = Duration::from_micros(10);
        assert_eq!(LlrSizing::hardware(long, LinkRate::GBPS_800).replay_timeout, Duration::from_nanos(15_500));
        assert_eq!(LlrSizing::software(long, LinkRate::GBPS_800).replay_timeout, Duration::from_nanos(30_500));
        // A huge loop is capped at half the 20-bit space.
        let huge = LlrSizing::software(Duration::from_millis(100), LinkRate::GBPS_800);
        assert_eq!(huge.replay_frames, OUTSTANDING_FRAMES_LIMIT);
        assert_eq!(huge.with_frame_slots(512).replay_frames, 512);
    }

    #[test]
    fn profiles() {
        let s = LlrSizing::software(Duration::from_micros(50), LinkRate::new(10_000_000_000).unwrap());
        let hw = LlrTxConfig::hardware(&s);
        assert_eq!((hw.replay_count_max, hw.reinit_on_flush, hw.init_action), (1, false, FrameAction::BestEffort));
        let sw = LlrTxConfig::software(&s);
        assert_eq!((sw.replay_count_max, sw.reinit_on_flush, sw.flush_action), (16, true, FrameAction::Block));
        assert_eq!(sw.replay_timeout, Duration::from_nanos(150_500));
        assert_eq!(sw.outstanding_bytes_max, 62_500 + 27_432);
    }
}
