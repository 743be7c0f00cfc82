//! Guaranteed-delivery SES responses a target PDC holds until `CLEAR_PSN` passes them (UE 1.0
//! §3.4.3.3 on guaranteed delivery and, for `CLEAR_PSN`,
//! §3.5.11.4.4).
//!
//! A response other than DEFAULT_RESPONSE and NO_RESPONSE must reach the initiator even when the
//! ACK carrying it is lost, and the request must not be executed twice. So the target keeps the
//! response, answers a duplicate of its request with the response again, and forgets it only when
//! the initiator's `CLEAR_PSN` (carried by every request, or by a CLEAR control packet) says the
//! initiator has it. Until then every ACK that does not carry the response leaves its PSN
//! unacknowledged: `CACK_PSN` stops before it (as the reference provider `uet-ref-prov` does in
//! `uet_pds.c`) and its SACK bit reads 0. The initiator therefore releases the PSN only on the ACK
//! that carries the response, resends it after a timeout otherwise, and its `CLEAR_PSN` (its left
//! edge − 1) passes the PSN only after that.
//!
//! *Project-defined*, here only:
//!
//! * A [`Target`] holds at most `R` responses, a const generic (default
//!   [`HELD_RESPONSES`] = 4; at least 1; each slot is 16 B, the PSN and the 12 bytes the ACK
//!   will carry, and `F` more for data, a const generic too, default 0).
//!   A response is held for about one RTT, so the slots bound how many answered requests one PDC
//!   takes per RTT. In the endpoint simulation at 800 Gb/s with every message (32 KiB average)
//!   answered and no loss, `R` = 4 (six slots with an endpoint PDC's own two, below) cost 33 647
//!   NACK-driven resends of 38 620 request packets and `R` = 16 none (`examples/tests/pdc_sim.rs`,
//!   `response_slots_bound_guaranteed_delivery_rate`).
//!   Any request may need a guaranteed-delivery response, so one that arrives while none could
//!   be held is refused with NACK NO_GTD_DEL_AVAIL
//!   (retransmit class) before it is delivered ([`Target::handle_request_admitting`]).
//! * A [`Target`]'s last free slot is kept for the oldest PSN not yet received
//!   (`CACK_PSN + 1`). Responses held for later PSNs cannot be cleared while the initiator's
//!   left edge waits on that PSN, so if it could be refused for want of a slot the PDC would
//!   deadlock (the PDC simulation found this); with the slot kept, the PSN the window waits on
//!   always gets through.
//! * An [`Endpoint`]'s target PDC holds up to `R` + 2: two slots of its own, the last of which
//!   is kept for responses to requests received in order, and a block of `R` from a pool of `D`
//!   the PDCs share while it needs one (see the `Endpoint` doc): only PDCs whose requests are
//!   answered use any.
//! * A request refused for want of a slot makes the ACKs carrying the responses held for PSNs
//!   up to `CACK_PSN` due again: the slot frees when the initiator's `CLEAR_PSN` passes one of
//!   them, which it does once such an ACK arrives, so a lost one is sent again at the pace of
//!   the refused resends rather than of the initiator's retransmission timeouts.
//! * A held response may carry up to [`RESPONSE_DATA_MAX`] bytes of data: the ACK then carries
//!   it as RESPONSE_W_DATA (next header RSP_DATA), as a target answers a fetching atomic with the
//!   value it fetched (uet-ref-prov's `uet_pds_to_ses_rx_req` sends 8 bytes with
//!   `read_request_message_id` = the request's message id, `message_offset` 0). A [`Target`]'s
//!   slots take up to `F` bytes each; an [`Endpoint`]'s PDC holds data only in a block of its
//!   pool (each slot 48 B; its own two slots are 16 B each), so a request that may need data (a
//!   fetching atomic) is let in only while a block slot could take its response, the last free
//!   one only for the oldest PSN not yet received (as for its own slots, below).
//! * While a response is held, ACKs carry `REQ = Clear`, so an initiator with no request to send
//!   sends a CLEAR control packet, once its `CLEAR_PSN` (left edge − 1) passes the newest CACK:
//!   that is when the CLEAR releases a response (CACK stops before the oldest held), and a CLEAR
//!   that releases nothing would only draw the same ACK again. A closing initiator sends none
//!   (its CLOSE clears them all).
//! * NACK GTD_DEL_RESP_UNAVAIL is never sent: a response is released only after the initiator
//!   acknowledged the ACK carrying it, so a well-behaved initiator never resends its request.
//!
//! [`Target`]: super::Target
//! [`Endpoint`]: crate::msg::Endpoint
//! [`Target::handle_request_admitting`]: super::Target::handle_request_admitting

use super::window::{Sack, psn_after};
use crate::ses::Response;

/// How many guaranteed-delivery responses one target PDC holds by default (project-defined).
pub const HELD_RESPONSES: usize = 4;

/// The most data bytes a held response carries (project-defined): one element of the widest
/// atomic datatype, LONG_DOUBLE_COMPLEX (UE 1.0 §3.4), what a fetching atomic answers with.
pub const RESPONSE_DATA_MAX: usize = 32;

/// Data bytes of a slot of an endpoint's pooled block (its PDCs' own slots take none).
pub(crate) const WITH_DATA: usize = RESPONSE_DATA_MAX;

/// One held response: its request's PSN and the response as the ACK will carry it (emitted
/// once, when held), with room for `B` bytes of data. The response's SES version bits (byte 1's
/// top two, always 0 on the wire here) hold [`UNSENT`] and [`DATA`] while it is kept; with
/// [`DATA`], byte 4 (the RI generation, which RESPONSE_W_DATA has no field for) is the length
/// of the data at the front of `data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held<const B: usize> {
    psn: u32,
    rsp: [u8; Response::LEN],
    data: [u8; B],
}

/// In byte 1 of a held response: an ACK carrying it is due.
const UNSENT: u8 = 0x80;
/// In byte 1 of a held response: it carries data (RESPONSE_W_DATA).
const DATA: u8 = 0x40;
/// The byte of a held response with data that holds the data's length.
const DATA_LEN: usize = 4;

impl<const B: usize> Held<B> {
    fn unsent(&self) -> bool {
        self.rsp[1] & UNSENT != 0
    }

    fn set_unsent(&mut self, unsent: bool) {
        self.rsp[1] = if unsent { self.rsp[1] | UNSENT } else { self.rsp[1] & !UNSENT };
    }

    /// The response, with the version bits it is sent with (0); with data, RI generation 0.
    fn response(&self) -> Option<Response> {
        let mut wire = self.rsp;
        if wire[1] & DATA != 0 {
            wire[DATA_LEN] = 0;
        }
        wire[1] &= !(UNSENT | DATA);
        Response::parse(&wire).ok().map(|(rsp, _)| rsp)
    }

    /// The data it carries, if any.
    fn data(&self) -> Option<&[u8]> {
        (self.rsp[1] & DATA != 0).then(|| self.data.get(..usize::from(self.rsp[DATA_LEN])))?
    }
}

/// The responses one target PDC holds, by request PSN (`R` at most 65 535), each with up to
/// `B` bytes of data (at most 255).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeldResponses<const R: usize, const B: usize = 0> {
    held: heapless::Vec<Held<B>, R, u16>,
}

/// What a target PDC's state machine needs of the responses it holds, wherever they are kept:
/// [`HeldResponses`] (a [`Target`]'s own `R` slots) or [`Tiered`] (an endpoint's PDC: two slots
/// of its own and a block from the endpoint's pool).
///
/// [`Target`]: super::Target
pub(crate) trait Responses {
    /// Whether none is held.
    fn is_empty(&self) -> bool;
    /// Whether a response is held for `psn`.
    fn holds(&self, psn: u32) -> bool;
    /// Whether a response's ACK is due.
    fn has_unsent(&self) -> bool;
    /// The oldest held PSN other than `carried`, which the ACK being built carries.
    fn oldest_except(&self, carried: Option<u32>) -> Option<u32>;
    /// `sack` with the bits of the held PSNs other than `carried` cleared.
    fn mask(&self, sack: Sack, carried: Option<u32>) -> Sack;
    /// Whether the response held for `psn` carries data.
    fn carries_data(&self, psn: u32) -> bool;
    /// Whether any request has room, whatever it releases: none held, and more than one slot
    /// (the common case, checked first). `data`: its response may carry data.
    fn roomy(&self, data: bool) -> bool;
    /// Whether a response could be held for a request that arrives now, once the responses up
    /// to `release` (its `CLEAR_PSN`, when recording it releases any) are released. `in_order`:
    /// the request is the oldest PSN not yet received (`CACK_PSN + 1`); `data`: its response may
    /// carry data.
    fn room(&self, release: Option<u32>, in_order: bool, data: bool) -> bool;
    /// Whether [`Responses::hold`] has a slot for a response (with data or not) to a request
    /// received in order (every PSN before it received) or not.
    fn can_hold(&self, in_order: bool, data: bool) -> bool;
    /// Holds `rsp` for `psn`, with `data` (none if empty), and makes an ACK carrying it due;
    /// false when there is no slot for it or it is held already, and when the wire cannot carry
    /// `rsp` (see [`Response::emit`]).
    fn hold(&mut self, psn: u32, rsp: Response, data: &[u8], in_order: bool) -> bool;
    /// A duplicate of `psn` arrived: if its response is held, an ACK carrying it is due again.
    fn resend(&mut self, psn: u32) -> bool;
    /// A request was refused for want of a slot: an ACK carrying each response held for a PSN
    /// up to `cack` is due again (see [`HeldResponses::resend_through`]).
    fn resend_through(&mut self, cack: u32);
    /// The PSN of a response whose ACK is due, marked sent.
    fn take_unsent(&mut self) -> Option<u32>;
    /// Forgets every response for a PSN up to `clear` (serial order).
    fn release_through(&mut self, clear: u32);
    /// Forgets them all (the PDC closed).
    fn clear(&mut self);
}

impl<const R: usize, const B: usize> HeldResponses<R, B> {
    /// None held.
    pub(crate) const EMPTY: Self = HeldResponses { held: heapless::Vec::new() };

    const SIZE_OK: () = assert!(
        R <= u16::MAX as usize && B <= u8::MAX as usize,
        "at most 65 535 held responses, with 255 bytes of data at most"
    );

    /// Whether none is held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Slots not in use.
    pub(crate) fn free(&self) -> usize {
        R - self.held.len()
    }

    /// Slots that would be free after [`HeldResponses::release_through`] of `clear`.
    pub(crate) fn free_after_release_through(&self, clear: u32) -> usize {
        R - self.held.iter().filter(|h| psn_after(h.psn, clear)).count()
    }

    /// The response held for `psn`.
    pub(crate) fn get(&self, psn: u32) -> Option<Response> {
        self.held.iter().find(|h| h.psn == psn).and_then(Held::response)
    }

    /// The data of the response held for `psn`, if it carries any.
    pub(crate) fn data(&self, psn: u32) -> Option<&[u8]> {
        self.held.iter().find(|h| h.psn == psn).and_then(Held::data)
    }

    /// Whether a response is held for `psn`.
    pub(crate) fn holds(&self, psn: u32) -> bool {
        self.held.iter().any(|h| h.psn == psn)
    }

    /// Holds `rsp` for `psn`, with `data` (none if empty), and makes an ACK carrying it due;
    /// false when full or held already, when the slots take no data or not that much, and when
    /// the wire cannot carry `rsp` (see [`Response::emit`]).
    pub(crate) fn hold(&mut self, psn: u32, rsp: Response, data: &[u8]) -> bool {
        let () = Self::SIZE_OK;
        let mut wire = [0; Response::LEN];
        let mut with = [0; B];
        if self.holds(psn) || rsp.emit(&mut wire).is_err() {
            return false;
        }
        if !data.is_empty() {
            // A slot without room for it refuses it.
            let Some(to) = with.get_mut(..data.len()) else { return false };
            to.copy_from_slice(data);
            wire[1] |= DATA;
            wire[DATA_LEN] = data.len() as u8;
        }
        let mut held = Held { psn, rsp: wire, data: with };
        held.set_unsent(true);
        self.held.push(held).is_ok()
    }

    /// A duplicate of `psn` arrived: if its response is held, an ACK carrying it is due again.
    pub(crate) fn resend(&mut self, psn: u32) -> bool {
        match self.held.iter_mut().find(|h| h.psn == psn) {
            Some(h) => {
                h.set_unsent(true);
                true
            }
            None => false,
        }
    }

    /// The PSNs of the responses held (for the invariant checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn psns(&self) -> impl Iterator<Item = u32> + '_ {
        self.held.iter().map(|h| h.psn)
    }

    /// Makes an ACK due again for each response held for a PSN up to `cack` (serial order).
    pub(crate) fn resend_through(&mut self, cack: u32) {
        for h in self.held.iter_mut().filter(|h| !psn_after(h.psn, cack)) {
            h.set_unsent(true);
        }
    }

    /// Whether a response's ACK is due.
    #[inline]
    pub(crate) fn has_unsent(&self) -> bool {
        self.held.iter().any(Held::unsent)
    }

    /// The PSN of a response whose ACK is due, marked sent.
    #[inline]
    pub(crate) fn take_unsent(&mut self) -> Option<u32> {
        if self.held.is_empty() {
            return None;
        }
        let h = self.held.iter_mut().find(|h| h.unsent())?;
        h.set_unsent(false);
        Some(h.psn)
    }

    /// Forgets every response for a PSN up to `clear` (serial order).
    #[inline]
    pub(crate) fn release_through(&mut self, clear: u32) {
        if self.held.is_empty() {
            return;
        }
        self.held.retain(|h| psn_after(h.psn, clear));
    }

    /// Forgets them all (the PDC closed).
    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }

    /// The oldest held PSN other than `carried`, which the ACK being built carries.
    pub(crate) fn oldest_except(&self, carried: Option<u32>) -> Option<u32> {
        self.held
            .iter()
            .map(|h| h.psn)
            .filter(|&p| Some(p) != carried)
            .reduce(|a, b| if psn_after(a, b) { b } else { a })
    }

    /// `sack` with the bits of the held PSNs other than `carried` cleared.
    pub(crate) fn mask(&self, sack: Sack, carried: Option<u32>) -> Sack {
        let mut bitmap = sack.bitmap;
        for h in self.held.iter().filter(|h| Some(h.psn) != carried) {
            let bit = h.psn.wrapping_sub(sack.base);
            if bit < 64 {
                bitmap &= !(1 << bit);
            }
        }
        Sack { base: sack.base, bitmap }
    }
}

impl<const R: usize, const B: usize> Responses for HeldResponses<R, B> {
    fn is_empty(&self) -> bool {
        HeldResponses::is_empty(self)
    }

    fn carries_data(&self, psn: u32) -> bool {
        self.data(psn).is_some()
    }

    fn holds(&self, psn: u32) -> bool {
        HeldResponses::holds(self, psn)
    }

    fn has_unsent(&self) -> bool {
        HeldResponses::has_unsent(self)
    }

    fn oldest_except(&self, carried: Option<u32>) -> Option<u32> {
        HeldResponses::oldest_except(self, carried)
    }

    fn mask(&self, sack: Sack, carried: Option<u32>) -> Sack {
        HeldResponses::mask(self, sack, carried)
    }

    fn roomy(&self, data: bool) -> bool {
        self.is_empty() && R > 1 && (B > 0 || !data)
    }

    /// The last free slot is kept for the oldest PSN not yet received (see the module doc).
    fn room(&self, release: Option<u32>, in_order: bool, data: bool) -> bool {
        match release.map_or(self.free(), |clear| self.free_after_release_through(clear)) {
            _ if data && B == 0 => false,
            0 => false,
            1 => in_order,
            _ => true,
        }
    }

    fn can_hold(&self, _in_order: bool, data: bool) -> bool {
        self.free() > 0 && (B > 0 || !data)
    }

    fn hold(&mut self, psn: u32, rsp: Response, data: &[u8], _in_order: bool) -> bool {
        HeldResponses::hold(self, psn, rsp, data)
    }

    fn resend(&mut self, psn: u32) -> bool {
        HeldResponses::resend(self, psn)
    }

    fn resend_through(&mut self, cack: u32) {
        HeldResponses::resend_through(self, cack)
    }

    fn take_unsent(&mut self) -> Option<u32> {
        HeldResponses::take_unsent(self)
    }

    fn release_through(&mut self, clear: u32) {
        HeldResponses::release_through(self, clear)
    }

    fn clear(&mut self) {
        HeldResponses::clear(self)
    }
}

/// Slots of its own an endpoint's target PDC keeps for guaranteed-delivery responses (its
/// [`Tiered`] `own`): two, so that a PDC that answers nothing lets every request in as a
/// [`Target`] does, whatever the endpoint's pool holds (see [`Tiered`]).
///
/// [`Target`]: super::Target
pub(crate) const OWN_HELD: usize = 2;

// `Tiered::roomy` and the rule that keeps the last own slot for a request received in order
// need more than one own slot.
const _: () = assert!(OWN_HELD > 1);

/// The responses an endpoint's target PDC holds: [`OWN_HELD`] slots of its own (`own`, without
/// data) and a block of `R` from the endpoint's pool (`block`, each slot taking data) while it
/// has one. `spare`: it has no block and the pool has a free one, which
/// [`Endpoint::respond`](crate::msg::Endpoint::respond) takes before a response that needs it
/// (so [`Responses::room`] counts it).
///
/// The last free slot of its own, and the last free slot of its block, are kept for responses
/// to requests received in order (every PSN before them received), as the last free slot of a
/// [`Target`]'s `R` is kept for the oldest PSN not yet received (see the module doc). A response
/// to a request received in order is one the initiator's `CLEAR_PSN` passes once the ACK
/// carrying it arrives, with no other request let in first. So the PSN the window waits on
/// always finds a slot of the PDC's own free again (it carries that `CLEAR_PSN` itself), even
/// while other PDCs hold every block: no PDC deadlocks for want of a block, and one with nothing
/// held lets in any request, in order or not. A response with data goes in the block only; the
/// block's kept slot is what lets the PSN the window waits on in when it needs data, while
/// responses to later PSNs (which wait on it) fill the rest.
///
/// [`Target`]: super::Target
pub(crate) struct Tiered<'a, const R: usize> {
    /// The PDC's own slots.
    pub(crate) own: &'a mut HeldResponses<OWN_HELD>,
    /// Its block, if it has one.
    pub(crate) block: Option<&'a mut HeldResponses<R, WITH_DATA>>,
    /// It has no block and the pool has a free one.
    pub(crate) spare: bool,
}

impl<const R: usize> Tiered<'_, R> {
    /// Whether the slots of its own `own` take a response to a request received in order or
    /// not: the last free one only in order.
    pub(crate) fn own_takes(own: &HeldResponses<OWN_HELD>, in_order: bool) -> bool {
        own.free() > usize::from(!in_order)
    }

    /// Free slots of the block (of the one the pool would give), after releasing through
    /// `release`.
    fn block_free(&self, release: Option<u32>) -> usize {
        match &self.block {
            Some(b) => release.map_or(b.free(), |clear| b.free_after_release_through(clear)),
            None if self.spare => R,
            None => 0,
        }
    }

    /// Whether the block has a slot for a response to a request received in order or not: the
    /// last free one only in order.
    fn block_takes(&self, in_order: bool) -> bool {
        self.block.as_ref().is_some_and(|b| b.free() > usize::from(!in_order))
    }
}

impl<const R: usize> Responses for Tiered<'_, R> {
    fn is_empty(&self) -> bool {
        self.own.is_empty() && self.block.as_ref().is_none_or(|b| b.is_empty())
    }

    fn holds(&self, psn: u32) -> bool {
        self.own.holds(psn) || self.block.as_ref().is_some_and(|b| b.holds(psn))
    }

    fn has_unsent(&self) -> bool {
        self.own.has_unsent() || self.block.as_ref().is_some_and(|b| b.has_unsent())
    }

    fn carries_data(&self, psn: u32) -> bool {
        self.block.as_ref().is_some_and(|b| b.carries_data(psn))
    }

    fn oldest_except(&self, carried: Option<u32>) -> Option<u32> {
        let own = self.own.oldest_except(carried);
        match (own, self.block.as_ref().and_then(|b| b.oldest_except(carried))) {
            (Some(a), Some(b)) => Some(if psn_after(a, b) { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    fn mask(&self, sack: Sack, carried: Option<u32>) -> Sack {
        let sack = self.own.mask(sack, carried);
        self.block.as_ref().map_or(sack, |b| b.mask(sack, carried))
    }

    /// Its own slots all free (`OWN_HELD` is more than one), for a response without data.
    fn roomy(&self, data: bool) -> bool {
        !data && self.own.is_empty()
    }

    /// A slot of the block, or (without data) of its own; the last of either only `in_order`.
    fn room(&self, release: Option<u32>, in_order: bool, data: bool) -> bool {
        let kept = usize::from(!in_order);
        let own = || release.map_or(self.own.free(), |clear| self.own.free_after_release_through(clear));
        self.block_free(release) > kept || (!data && own() > kept)
    }

    fn can_hold(&self, in_order: bool, data: bool) -> bool {
        (!data && Tiered::<R>::own_takes(self.own, in_order)) || self.block_takes(in_order)
    }

    /// In its own slots if they take it (not with data), else in the block.
    fn hold(&mut self, psn: u32, rsp: Response, data: &[u8], in_order: bool) -> bool {
        if self.holds(psn) {
            return false;
        }
        if data.is_empty() && Tiered::<R>::own_takes(self.own, in_order) {
            return self.own.hold(psn, rsp, data);
        }
        self.block_takes(in_order) && self.block.as_mut().is_some_and(|b| b.hold(psn, rsp, data))
    }

    fn resend(&mut self, psn: u32) -> bool {
        self.own.resend(psn) || self.block.as_mut().is_some_and(|b| b.resend(psn))
    }

    fn resend_through(&mut self, cack: u32) {
        self.own.resend_through(cack);
        if let Some(b) = self.block.as_mut() {
            b.resend_through(cack);
        }
    }

    /// Its own slot's first, then the block's (each goes in its own ACK, in any order).
    fn take_unsent(&mut self) -> Option<u32> {
        self.own.take_unsent().or_else(|| self.block.as_mut().and_then(|b| b.take_unsent()))
    }

    fn release_through(&mut self, clear: u32) {
        self.own.release_through(clear);
        if let Some(b) = self.block.as_mut() {
            b.release_through(clear);
        }
    }

    fn clear(&mut self) {
        self.own.clear();
        if let Some(b) = self.block.as_mut() {
            b.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ses::{ResponseList, ResponseOpcode, ReturnCode};

    fn rsp(len: u32) -> Response {
        Response {
            list: ResponseList::Expected,
            opcode: ResponseOpcode::Response,
            return_code: ReturnCode::Ok,
            message_id: 1,
            ri_generation: 0,
            job_id: 7,
            modified_length: len,
        }
    }

    #[test]
    fn hold_resend_release() {
        let mut h = HeldResponses::<HELD_RESPONSES>::default();
        assert!(h.hold(u32::MAX, rsp(1), &[]));
        assert!(!h.hold(u32::MAX, rsp(2), &[]), "one response per PSN");
        assert!(h.hold(2, rsp(3), &[]));
        assert_eq!(h.take_unsent(), Some(u32::MAX));
        assert_eq!(h.take_unsent(), Some(2));
        assert_eq!(h.take_unsent(), None);
        assert!(h.resend(2) && !h.resend(5));
        assert_eq!(h.take_unsent(), Some(2));
        // Serial order across the wrap: u32::MAX is older than 2.
        assert_eq!(h.oldest_except(None), Some(u32::MAX));
        assert_eq!(h.oldest_except(Some(u32::MAX)), Some(2));
        let s = h.mask(Sack { base: u32::MAX - 1, bitmap: u64::MAX }, Some(2));
        assert_eq!(s.bitmap, !0b10);
        h.release_through(0);
        assert_eq!((h.get(u32::MAX), h.get(2)), (None, Some(rsp(3))));
        assert!(h.hold(3, rsp(0), &[]) && h.hold(4, rsp(0), &[]) && h.hold(5, rsp(0), &[]));
        assert!(h.free() == 0 && !h.hold(6, rsp(0), &[]));
        assert_eq!((h.free_after_release_through(3), h.free_after_release_through(5)), (2, 4));
        h.clear();
        assert!(h.is_empty());
    }

    #[test]
    fn a_held_response_reads_back_exactly_and_only_if_the_wire_carries_it() {
        let mut h = HeldResponses::<2>::default();
        let odd = Response {
            list: ResponseList::Overflow,
            return_code: ReturnCode::NoMatch,
            message_id: 0xFFFF,
            ri_generation: 0xFF,
            job_id: 0xFF_FFFF,
            modified_length: u32::MAX,
            ..rsp(0)
        };
        assert!(h.hold(9, odd, &[]));
        // Marked unsent, then sent: the mark never shows in the response.
        assert_eq!(h.get(9), Some(odd));
        assert_eq!(h.take_unsent(), Some(9));
        assert_eq!(h.get(9), Some(odd));
        assert!(h.holds(9) && !h.holds(8));
        // A JobID beyond 24 bits cannot be sent, so it is not held.
        assert!(!h.hold(10, Response { job_id: 1 << 24, ..rsp(0) }, &[]));
        assert!(!h.holds(10) && h.free() == 1);
        assert_eq!(core::mem::size_of::<Held<0>>(), 16);
    }

    #[test]
    fn a_response_with_data_is_held_only_where_slots_take_data() {
        let mut plain = HeldResponses::<2>::default();
        assert!(!plain.hold(1, rsp(8), &[7; 8]), "a slot without data refuses data");
        assert!(plain.is_empty() && !Responses::can_hold(&plain, true, true));
        assert!(!Responses::room(&plain, None, true, true) && !Responses::roomy(&plain, true));
        let mut h = HeldResponses::<2, WITH_DATA>::default();
        assert!(!h.hold(1, rsp(8), &[7; RESPONSE_DATA_MAX + 1]), "at most RESPONSE_DATA_MAX bytes");
        assert!(h.hold(1, rsp(8), &[7; RESPONSE_DATA_MAX]) && h.hold(2, rsp(8), &[]));
        assert_eq!(h.data(1), Some(&[7; RESPONSE_DATA_MAX][..]));
        assert_eq!((h.data(2), h.get(1)), (None, Some(rsp(8))));
        assert!(h.carries_data(1) && !h.carries_data(2) && !h.carries_data(3));
        // Marked unsent and sent: neither mark shows in the response or its data.
        let odd = Response { ri_generation: 0, message_id: 0xFFFF, job_id: 0xFF_FFFF, ..rsp(u32::MAX) };
        h.release_through(2);
        assert!(h.hold(3, odd, &[0xFF]) && h.take_unsent() == Some(3));
        assert_eq!((h.get(3), h.data(3)), (Some(odd), Some(&[0xFF][..])));
        assert_eq!(core::mem::size_of::<Held<WITH_DATA>>(), 48);
    }

    #[test]
    fn data_goes_in_the_block_and_its_last_slot_waits_for_the_oldest_psn() {
        let mut own = HeldResponses::<OWN_HELD>::default();
        let mut block = HeldResponses::<2, WITH_DATA>::default();
        // No block and none spare: no room for data, in order or not; room without data.
        let t = Tiered::<2> { own: &mut own, block: None, spare: false };
        assert!(!t.room(None, true, true) && t.room(None, true, false) && !t.roomy(true) && t.roomy(false));
        // A spare block: room for data.
        let t = Tiered::<2> { own: &mut own, block: None, spare: true };
        assert!(t.room(None, false, true));
        let mut t = Tiered { own: &mut own, block: Some(&mut block), spare: false };
        assert!(t.hold(5, rsp(8), &[1; 8], false), "out of order, with the block's last slot left");
        assert!(t.carries_data(5) && t.own.is_empty());
        assert!(!t.room(None, false, true) && !t.can_hold(false, true), "the last slot is kept");
        assert!(!t.hold(6, rsp(8), &[1; 8], false));
        assert!(t.room(None, true, true) && t.hold(4, rsp(8), &[2; 8], true));
        // Without data, its own slots still take one.
        assert!(t.room(None, false, false) && t.hold(7, rsp(0), &[], false) && !t.carries_data(7));
        assert!(t.own.holds(7));
    }
}
