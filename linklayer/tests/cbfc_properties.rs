//! Property tests of CBFC over a lossy link, through the public API and the project's wire
//! encodings.
//!
//! The model: a FIFO data channel sender → receiver carrying frames and CC_Updates, and a control
//! channel receiver → sender carrying CF_Updates; either may drop anything. The receiver drains
//! its buffer at arbitrary moments. The properties:
//!
//! 1. the sender never exceeds the receiver's credit: every frame that arrives fits the
//!    receiver's buffer (no `CreditOverrun`), under any interleaving and any loss;
//! 2. credits are conserved: after any number of lost frames, CF_Updates and CC_Updates, once the
//!    receiver has drained and one CC_Update and then one CF_Update per VC get through, the sender
//!    has every credit back;
//! 3. the 20-bit counters wrap without effect on either;
//! 4. any VC may be re-initialised at any moment (the sender holds it, an epoch marker travels
//!    in order with the data, the receiver re-initialises when it arrives and its buffer has
//!    drained, and its `R_CF = 0` report releases the sender once the marker's echo is back):
//!    credits are still conserved and no VC stays stuck.

// Test code: a broken invariant should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use linklayer::Instant;
use linklayer::cbfc::{
    CbfcReceiver, CbfcReceiverConfig, CbfcSender, CbfcSenderConfig, CreditRule, MAX_VCS, Vc, VcMode,
};
use linklayer::wire::{CC_UPDATE_LEN, CcUpdate, CtlOs};
use proptest::prelude::*;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
enum Op {
    /// Try to send a frame of this length on VC `vc % lossless`.
    Send { vc: u8, len: u16 },
    /// Deliver (or, if `lose`, drop) the next item of the data channel.
    Data { lose: bool },
    /// Drain the oldest frame of a VC at the receiver.
    Drain { vc: u8 },
    /// Let the receiver emit a CF_Update; deliver it unless `lose`.
    Cf { lose: bool },
    /// Let time pass so periodic updates fall due.
    Tick { ns: u32 },
    /// Deliver the next item of the control channel.
    Ctl,
    /// Re-initialise a VC at the sender (recovery step 1); its epoch marker follows the data.
    Resync { vc: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), 1u16..=9216).prop_map(|(vc, len)| Op::Send { vc, len }),
        6 => prop::bool::weighted(0.2).prop_map(|lose| Op::Data { lose }),
        4 => any::<u8>().prop_map(|vc| Op::Drain { vc }),
        3 => prop::bool::weighted(0.3).prop_map(|lose| Op::Cf { lose }),
        1 => (1u32..500_000).prop_map(|ns| Op::Tick { ns }),
        4 => Just(Op::Ctl),
        1 => any::<u8>().prop_map(|vc| Op::Resync { vc }),
    ]
}

enum Item {
    Frame {
        vc: Vc,
        len: usize,
    },
    Cc([u8; CC_UPDATE_LEN]),
    /// The sender's new epoch of a VC, as the LLR_INIT marks it on a link: never lost (LLR_INIT
    /// repeats until echoed).
    Epoch {
        vc: Vc,
        epoch: u32,
    },
}

/// Receiver → sender.
enum Ctl {
    Cf([u8; 8]),
    Echo { vc: Vc, epoch: u32 },
}

struct Link {
    tx: CbfcSender,
    rx: CbfcReceiver,
    vcs: Vec<(Vc, u32)>,
    data: VecDeque<Item>,
    ctl: VecDeque<Ctl>,
    buffered: Vec<VecDeque<usize>>,
    /// Per VC: the sender's current epoch, and whether its marker's echo is back.
    epoch: Vec<(u32, bool)>,
    now: Instant,
}

impl Link {
    fn new(rule: CreditRule, vcs: &[(u8, u32)]) -> Link {
        let mut tx = CbfcSender::new(CbfcSenderConfig { rule, ..Default::default() }).unwrap();
        let mut rx = CbfcReceiver::new(CbfcReceiverConfig { rule, ..Default::default() }).unwrap();
        let mut list = Vec::new();
        for &(vc, limit) in vcs {
            let vc = Vc::new(vc).unwrap();
            let mode = VcMode::Lossless { credit_limit: Some(limit) };
            tx.set_vc_mode(Instant::ZERO, vc, mode).unwrap();
            rx.set_vc_mode(Instant::ZERO, vc, mode).unwrap();
            list.push((vc, limit));
        }
        Link {
            tx,
            rx,
            vcs: list,
            data: VecDeque::new(),
            ctl: VecDeque::new(),
            buffered: vec![VecDeque::new(); MAX_VCS],
            epoch: vec![(0, true); MAX_VCS],
            now: Instant::ZERO,
        }
    }

    fn pick(&self, vc: u8) -> (Vc, u32) {
        self.vcs[usize::from(vc) % self.vcs.len()]
    }

    fn queue_cc_updates(&mut self) {
        while let Some(msg) = self.tx.poll_cc_update(self.now) {
            let mut b = [0u8; CC_UPDATE_LEN];
            msg.emit(&mut b).unwrap();
            self.data.push_back(Item::Cc(b));
        }
    }

    fn emit_cf(&mut self, lose: bool) -> bool {
        let Some(update) = self.rx.poll_cf_update(self.now) else { return false };
        let mut b = [0u8; 8];
        CtlOs::CfUpdate(update).emit(&mut b).unwrap();
        if !lose {
            self.ctl.push_back(Ctl::Cf(b));
        }
        true
    }

    fn deliver_ctl(&mut self) {
        match self.ctl.pop_front() {
            Some(Ctl::Cf(b)) => {
                let (CtlOs::CfUpdate(u), _) = CtlOs::parse(&b).unwrap() else { panic!("a CF_Update parses as one") };
                // As the link object does: no CF_Update reaches a VC whose handshake is open.
                if self.epoch[usize::from(u.vc.index())].1 {
                    self.tx.handle_cf_update(u.vc, u.freed).unwrap();
                }
            }
            Some(Ctl::Echo { vc, epoch }) => {
                let e = &mut self.epoch[usize::from(vc.index())];
                if e.0 == epoch {
                    e.1 = true;
                }
            }
            None => {}
        }
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Send { vc, len } => {
                let (vc, _) = self.pick(vc);
                let len = usize::from(len);
                let may = self.tx.may_send(vc, len).unwrap();
                match self.tx.on_sent(vc, len) {
                    Ok(_) => {
                        assert!(may);
                        self.data.push_back(Item::Frame { vc, len });
                    }
                    Err(_) => assert!(!may),
                }
            }
            Op::Data { lose } => match self.data.pop_front() {
                Some(Item::Frame { vc, len }) if !lose => {
                    // Property 1: a frame the sender was allowed to send always fits.
                    self.rx.on_received(vc, len).expect("sender exceeded the receiver's credit");
                    self.buffered[usize::from(vc.index())].push_back(len);
                }
                Some(Item::Cc(b)) if !lose => {
                    let (msg, _) = CcUpdate::parse(&b).unwrap();
                    let out = self.rx.handle_cc_update(&msg);
                    assert!(out.is_ok(), "{out:?}");
                }
                Some(Item::Epoch { vc, epoch }) => {
                    self.rx.resync_vc(self.now, vc);
                    self.ctl.push_back(Ctl::Echo { vc, epoch });
                }
                _ => {}
            },
            Op::Drain { vc } => {
                let (vc, _) = self.pick(vc);
                if let Some(len) = self.buffered[usize::from(vc.index())].pop_front() {
                    self.rx.on_frame_freed(vc, len).unwrap();
                }
            }
            Op::Cf { lose } => {
                self.emit_cf(lose);
            }
            Op::Ctl => self.deliver_ctl(),
            Op::Resync { vc } => {
                let (vc, _) = self.pick(vc);
                self.tx.resync_vc(vc);
                let e = &mut self.epoch[usize::from(vc.index())];
                *e = (e.0 + 1, false);
                self.data.push_back(Item::Epoch { vc, epoch: e.0 });
            }
            Op::Tick { ns } => {
                self.now = self.now.saturating_add(linklayer::Duration::from_nanos(u64::from(ns)));
                self.queue_cc_updates();
            }
        }
        for &(vc, limit) in &self.vcs {
            assert!(self.tx.in_use(vc) <= limit);
            assert!(self.rx.occupancy(vc) <= limit);
        }
    }

    /// Stops sending, delivers what is in flight, drains everything, then lets one CC_Update
    /// round and the CF_Updates through without loss.
    fn settle(&mut self) {
        while !self.data.is_empty() {
            self.step(Op::Data { lose: false });
        }
        for (i, q) in self.buffered.iter_mut().enumerate() {
            while let Some(len) = q.pop_front() {
                self.rx.on_frame_freed(Vc::new(i as u8).unwrap(), len).unwrap();
            }
        }
        self.now = self.tx.poll_timeout().unwrap();
        self.queue_cc_updates();
        while !self.data.is_empty() {
            self.step(Op::Data { lose: false });
        }
        while !self.ctl.is_empty() {
            self.deliver_ctl();
        }
        for _ in 0..MAX_VCS {
            self.now = self.now.saturating_add(linklayer::Duration::from_micros(1));
            if self.emit_cf(false) {
                self.deliver_ctl();
            }
        }
    }
}

fn vcs() -> impl Strategy<Value = Vec<(u8, u32)>> {
    prop::collection::btree_map(0u8..32, 80u32..600, 1..5).prop_map(|m| m.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_exceeds_credit_and_conserves_credits(
        size in prop::sample::select(vec![64u16, 128, 256, 100]),
        ovhd in -16i16..=127,
        vcs in vcs(),
        ops in prop::collection::vec(op(), 0..400),
    ) {
        let mut link = Link::new(CreditRule::new(size, ovhd).unwrap(), &vcs);
        for op in ops {
            link.step(op);
        }
        link.settle();
        for &(vc, limit) in &link.vcs {
            // Property 2: every credit came back, lost frames and lost updates included; and
            // property 4: no VC is left held by a re-initialisation.
            prop_assert_eq!(link.rx.occupancy(vc), 0);
            prop_assert_eq!(link.tx.in_use(vc), 0, "vc {:?}", vc);
            prop_assert_eq!(link.tx.consumed(vc), link.rx.consumed(vc));
            prop_assert!(!link.tx.is_held(vc) && !link.rx.is_draining(vc), "vc {:?} stuck", vc);
            prop_assert_eq!(link.tx.available(vc), Some(limit));
        }
    }

    #[test]
    fn counters_wrap_without_effect(vc in 0u8..32, frames in prop::collection::vec((1u16..60_000, any::<bool>()), 1..80)) {
        // Credit size 1: each frame moves the 20-bit counters by up to 60 000, so they wrap often.
        let mut link = Link::new(CreditRule::new(1, 0).unwrap(), &[(vc, 1_000_000)]);
        for (len, lose) in frames {
            link.step(Op::Send { vc: 0, len });
            link.step(Op::Data { lose });
            link.step(Op::Drain { vc: 0 });
            link.step(Op::Cf { lose: false });
            link.step(Op::Ctl);
        }
        link.settle();
        let (v, _) = link.pick(0);
        prop_assert_eq!(link.tx.in_use(v), 0);
        prop_assert!(link.tx.stats().credits_consumed > 0);
    }
}
