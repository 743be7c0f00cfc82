//! Segmentation of one SES message into packets (UE 1.0 §3.4, standard request): every packet
//! carries a full MTU of payload except the last; the first has SOM (its offset is 0 by
//! definition and its tail carries the header data), the last has EOM, and every other packet
//! says where its payload sits with `payload_length` (14 bits) and `message_offset`.
//! `request_length` (the whole message) and `buffer_offset` (where the message starts in the
//! target buffer) are the same on every packet.
//!
//! Packet `i` of a message is computed from `i` alone, so a resend rebuilds its header from the
//! packet index with no per-packet state. A zero-length message is one packet with SOM and EOM.

use crate::ses::{Extension, SesFlags, StandardRequest, StandardTail};
use core::num::NonZeroU16;

/// The largest payload a packet may carry: `payload_length` has 14 bits.
pub const MAX_PAYLOAD: u16 = (1 << 14) - 1;

/// Why a message cannot be segmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SegmentError {
    /// The payload per packet is 0 or does not fit the 14-bit `payload_length`.
    BadMtu {
        /// The payload size asked for.
        mtu: u16,
    },
}

impl core::fmt::Display for SegmentError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SegmentError::BadMtu { mtu } => write!(f, "payload per packet {mtu} is 0 or above {MAX_PAYLOAD}"),
        }
    }
}

impl core::error::Error for SegmentError {}

/// Where one packet's payload sits in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Segment {
    /// Packet index within the message.
    pub index: u32,
    /// Byte offset of the payload in the message.
    pub offset: u32,
    /// Payload bytes.
    pub len: u16,
    /// First packet.
    pub som: bool,
    /// Last packet.
    pub eom: bool,
}

/// The packets of one message of `len` bytes, `mtu` payload bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Segmenter {
    len: u32,
    /// Non-zero, so dividing by it cannot fail (no panic path is linked).
    mtu: NonZeroU16,
}

impl Segmenter {
    /// A segmenter for a message of `len` bytes with `mtu` payload bytes per packet
    /// (1..=[`MAX_PAYLOAD`]).
    pub const fn new(len: u32, mtu: u16) -> Result<Self, SegmentError> {
        match NonZeroU16::new(mtu) {
            Some(mtu) if mtu.get() <= MAX_PAYLOAD => Ok(Segmenter { len, mtu }),
            _ => Err(SegmentError::BadMtu { mtu }),
        }
    }

    /// The segmenter of a message of `len` bytes with an MTU already checked.
    pub(crate) const fn with_mtu(len: u32, mtu: NonZeroU16) -> Self {
        Segmenter { len, mtu }
    }

    /// The payload bytes per packet.
    pub const fn mtu(&self) -> NonZeroU16 {
        self.mtu
    }

    /// The message length.
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// Whether the message is empty (it still takes one packet).
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Packets the message takes (at least 1).
    pub const fn packets(&self) -> u32 {
        if self.len == 0 { 1 } else { self.len.div_ceil(self.mtu.get() as u32) }
    }

    /// Packet `index`, or `None` past the last.
    pub const fn segment(&self, index: u32) -> Option<Segment> {
        let packets = self.packets();
        if index >= packets {
            return None;
        }
        let mtu = self.mtu.get() as u32;
        let offset = index * mtu;
        let left = self.len - offset;
        let len = if left < mtu { left } else { mtu };
        Some(Segment { index, offset, len: len as u16, som: index == 0, eom: index + 1 == packets })
    }

    /// Every packet, in order.
    pub fn segments(&self) -> impl Iterator<Item = Segment> + '_ {
        (0..self.packets()).filter_map(|i| self.segment(i))
    }
}

impl Segment {
    /// The bytes of compare and swap values a compare-and-swap extension carries (two 128-bit
    /// fields, UE 1.0 §3.4; uet-ref-prov's `UET_CSWAP_DATA_BYTES`).
    pub const CAS_OPERANDS: u32 = 32;

    /// The standard SES request of this packet, from the message's `template` (its opcode,
    /// flags, ids, buffer offset, match bits, extension header; its tail holds the header data).
    /// Sets SOM and EOM, the continuation tail, and `request_length = message_len`; HD only with
    /// SOM, as the header data goes in the first packet alone (uet-ref-prov's `uet_build_ses_hdr`;
    /// its receiver takes header data from whichever packet of an HD message comes first, so a
    /// continuation with HD that overtook the first would give it the tail). Every packet
    /// keeps the extension: whether a request carries one follows from its opcode alone (UE 1.0
    /// §3.4, the header parsing guide; so parse uet-ref-prov's `uet_parse_pkt` and Wireshark's
    /// `dissect_ses_std_req`, and uet-ref-prov sends its SYNC_WRITE extension on every packet),
    /// so a receiver reads one after every standard request of an atomic or rendezvous opcode,
    /// whatever its SOM, and a continuation packet without it would lose 4 to 36 payload bytes
    /// to the parser. Atomics are single packets in practice (uet-ref-prov refuses others).
    pub fn standard_header(&self, template: &StandardRequest, message_len: u32) -> StandardRequest {
        let mut h = *template;
        h.common.flags.set(SesFlags::SOM, self.som);
        h.common.flags.set(SesFlags::EOM, self.eom);
        // (A removal: a `set` of HD from both conditions measured 400 more instructions per
        // message in the firmware image at opt-level z.)
        if !self.som {
            h.common.flags.remove(SesFlags::HD);
        }
        h.request_length = message_len;
        h.tail = if self.som {
            match template.tail {
                StandardTail::Som { header_data } => StandardTail::Som { header_data },
                StandardTail::Continuation { .. } => StandardTail::Som { header_data: 0 },
            }
        } else {
            StandardTail::Continuation { payload_length: self.len, message_offset: self.offset }
        };
        h
    }

    /// The message bytes a received standard request carries, given the `payload_len` bytes that
    /// followed its headers: those, or for a compare-and-swap sent without payload its
    /// extension's compare and swap values, up to `request_length` (at most 32). That is the form
    /// [`Segment::carries_payload`] sends and uet-ref-prov's `uet_build_atomic_req_ses_hdr` sends
    /// (FETCHING_ATOMIC with CSWAP, `request_length` 32, and its parser counts the 32 value bytes
    /// as the request's payload); a request with payload after the extension counts that.
    /// `None` for a compare-and-swap without payload whose `request_length` passes the 32 bytes
    /// its extension carries (uet-ref-prov answers OP_VIOLATION): it could never complete.
    pub fn received_len(h: &StandardRequest, payload_len: usize) -> Option<usize> {
        match h.ext {
            Some(Extension::CompareAndSwap { .. }) if payload_len == 0 && h.common.flags.contains(SesFlags::SOM) => {
                (h.request_length <= Segment::CAS_OPERANDS).then_some(h.request_length as usize)
            }
            _ => Some(payload_len),
        }
    }

    /// Whether a packet of a message with extension `ext` carries the message's bytes as payload:
    /// all do but a compare-and-swap's, whose operands the extension carries (see
    /// [`Segment::received_len`]), so its packet has no payload after the extension.
    pub const fn carries_payload(ext: Option<&Extension>) -> bool {
        !matches!(ext, Some(Extension::CompareAndSwap { .. }))
    }

    /// The segment a received standard request describes: its offset and payload length, from
    /// its tail (SOM: offset 0, length `payload_len`, the bytes that followed the headers, or
    /// what [`Segment::received_len`] counts).
    pub fn of_received(h: &StandardRequest, payload_len: u16) -> Segment {
        let eom = h.common.flags.contains(SesFlags::EOM);
        match h.tail {
            StandardTail::Som { .. } => Segment { index: 0, offset: 0, len: payload_len, som: true, eom },
            StandardTail::Continuation { payload_length, message_offset } => {
                Segment { index: 0, offset: message_offset, len: payload_length, som: false, eom }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ses::{Opcode, RequestCommon, SesHeader};
    use proptest::prelude::*;

    fn template() -> StandardRequest {
        StandardRequest {
            common: RequestCommon {
                opcode: Opcode::Write,
                flags: SesFlags::empty(),
                ri_generation: 0,
                job_id: 0x12345,
                pid_on_fep: 7,
                resource_index: 3,
            },
            message_id: 9,
            buffer_offset: 0x1000,
            initiator: 1,
            match_bits: 0xABCD,
            tail: StandardTail::Som { header_data: 0x77 },
            request_length: 0,
            ext: None,
        }
    }

    /// A compare-and-swap's operands count as its bytes when no payload follows its extension
    /// (uet-ref-prov's form); payload after it (or any other request's) counts as itself.
    #[test]
    fn a_compare_and_swap_carries_its_operands_in_its_extension() {
        use crate::ses::{AtomicExt, AtomicOpcode, Datatype, SemanticControl};
        let atomic =
            |opcode| AtomicExt { opcode, datatype: Datatype::Uint64, semantic_control: SemanticControl::empty() };
        let cas = Extension::CompareAndSwap { atomic: atomic(AtomicOpcode::Cswap), compare: [1; 16], swap: [2; 16] };
        let mut h = template();
        h.common.opcode = Opcode::FetchingAtomic;
        h.common.flags = SesFlags::SOM | SesFlags::EOM;
        h.request_length = 32;
        h.ext = Some(cas);
        assert_eq!((Segment::received_len(&h, 0), Segment::received_len(&h, 32)), (Some(32), Some(32)));
        assert!(!Segment::carries_payload(h.ext.as_ref()));
        h.request_length = 64;
        assert_eq!(Segment::received_len(&h, 0), None, "at most the extension's 32 bytes");
        h.ext = Some(Extension::Atomic(atomic(AtomicOpcode::Sum)));
        assert_eq!(Segment::received_len(&h, 0), Some(0));
        assert!(Segment::carries_payload(h.ext.as_ref()));
    }

    #[test]
    fn full_packets_then_a_short_last() {
        let s = Segmenter::new(10_000, 4096).unwrap();
        assert_eq!(s.packets(), 3);
        let segs: Vec<Segment> = s.segments().collect();
        assert_eq!(
            segs,
            [
                Segment { index: 0, offset: 0, len: 4096, som: true, eom: false },
                Segment { index: 1, offset: 4096, len: 4096, som: false, eom: false },
                Segment { index: 2, offset: 8192, len: 1808, som: false, eom: true },
            ]
        );
        let h = segs[2].standard_header(&template(), 10_000);
        assert_eq!(h.tail, StandardTail::Continuation { payload_length: 1808, message_offset: 8192 });
        assert_eq!((h.request_length, h.buffer_offset, h.message_id), (10_000, 0x1000, 9));
        assert!(h.common.flags.contains(SesFlags::EOM) && !h.common.flags.contains(SesFlags::SOM));
        let h0 = segs[0].standard_header(&template(), 10_000);
        assert_eq!(h0.tail, StandardTail::Som { header_data: 0x77 });
        assert!(h0.common.flags.contains(SesFlags::SOM) && !h0.common.flags.contains(SesFlags::EOM));
        // Header data, and its HD flag, go in the first packet alone.
        let mut hd = template();
        hd.common.flags.insert(SesFlags::HD);
        let flags = |s: &Segment| s.standard_header(&hd, 10_000).common.flags.contains(SesFlags::HD);
        assert_eq!(segs.iter().map(flags).collect::<Vec<_>>(), [true, false, false]);
    }

    #[test]
    fn empty_message_is_one_packet_and_bad_mtus_are_refused() {
        let s = Segmenter::new(0, 4096).unwrap();
        assert_eq!(s.segments().collect::<Vec<_>>(), [Segment { index: 0, offset: 0, len: 0, som: true, eom: true }]);
        assert_eq!(s.segment(1), None);
        assert_eq!(Segmenter::new(10, 0), Err(SegmentError::BadMtu { mtu: 0 }));
        assert_eq!(Segmenter::new(10, 16384), Err(SegmentError::BadMtu { mtu: 16384 }));
        assert!(Segmenter::new(u32::MAX, MAX_PAYLOAD).is_ok());
    }

    proptest! {
        /// The segments tile the message exactly; only the last is short; every header
        /// round-trips through the codec and describes its own segment.
        #[test]
        fn segments_tile_the_message(len in 0u32..200_000, mtu in 1u16..=MAX_PAYLOAD) {
            let s = Segmenter::new(len, mtu).unwrap();
            let mut next = 0u32;
            let n = s.packets();
            for seg in s.segments() {
                prop_assert_eq!(seg.offset, next);
                prop_assert!(seg.len == mtu || seg.eom);
                prop_assert_eq!(seg.som, seg.index == 0);
                prop_assert_eq!(seg.eom, seg.index + 1 == n);
                next += u32::from(seg.len);
                let h = seg.standard_header(&template(), len);
                let mut buf = [0u8; 64];
                let k = SesHeader::Standard(h).emit(&mut buf).unwrap();
                let (back, _) = SesHeader::parse(crate::pds::NextHeader::ReqStd, &buf[..k]).unwrap();
                let Some(SesHeader::Standard(back)) = back else { panic!("not standard") };
                prop_assert_eq!(back, h);
                let got = Segment::of_received(&back, seg.len);
                prop_assert_eq!((got.offset, got.len, got.som, got.eom), (seg.offset, seg.len, seg.som, seg.eom));
            }
            prop_assert_eq!(next, len);
            prop_assert_eq!(s.segment(n), None);
        }
    }
}
