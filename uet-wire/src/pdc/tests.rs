//! Tests of the initiator and target PDCs together: the worked example of the digest, every
//! refused event, and each recovery path. Every packet crosses a codec round trip on the way.
//!
//! Test code only: `pdc/mod.rs` declares this module under `#[cfg(test)]`, so its `unwrap`s and
//! `panic!`s never reach the library.

use super::*;
use crate::pds::{
    Ack, AckExtension, AckFlags, AckRequest, Control, ControlFlags, ControlType, DeliveryMode, Nack, NackClass,
    NackCode, NackTarget, NextHeader, PdcDest, PdsHeader, Request, RequestFlags,
};
use linklayer::{Duration, Instant};

fn t(us: u64) -> Instant {
    Instant::from_nanos(us * 1000)
}

/// Emits and re-parses a PDS header: every packet of these tests is a real wire packet.
fn wire(h: PdsHeader) -> PdsHeader {
    let mut buf = [0u8; 64];
    let n = h.emit(&mut buf).unwrap();
    let (back, rest) = PdsHeader::parse(&buf[..n]).unwrap();
    assert!(rest.is_empty());
    assert_eq!(back, h);
    back
}

fn req(stamp: Stamp) -> Request {
    match wire(PdsHeader::Request(stamp.request(NextHeader::ReqStd, None))) {
        PdsHeader::Request(r) => r,
        other => panic!("not a request: {other:?}"),
    }
}

fn ack_of(tx: TargetTx) -> Ack {
    match tx {
        TargetTx::Ack(a) => match wire(PdsHeader::Ack(a)) {
            PdsHeader::Ack(a) => a,
            _ => panic!("not an ACK"),
        },
        other => panic!("expected an ACK, got {other:?}"),
    }
}

fn nack(n: Nack) -> Nack {
    match wire(PdsHeader::Nack(n)) {
        PdsHeader::Nack(n) => n,
        _ => panic!("wrong packet type"),
    }
}

/// The NACK the target queued for `poll_transmit`, through the wire.
fn pending_nack<const R: usize>(tg: &mut Target<2, R>) -> Nack {
    match tg.poll_transmit(Instant::ZERO) {
        Some(TargetTx::Nack(n)) => nack(n),
        other => panic!("expected a NACK, got {other:?}"),
    }
}

fn ctl(c: Control) -> Control {
    match wire(PdsHeader::Control(c)) {
        PdsHeader::Control(c) => c,
        _ => panic!("wrong packet type"),
    }
}

fn cfg() -> PdcConfig {
    PdcConfig::default()
}

/// An initiator (id 7, start PSN 4) whose first packet created a target (id 19) that ACKed it.
fn established(mode: DeliveryMode) -> (Initiator, Target) {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, mode, 7, 4);
    let r = req(i.send(t(0), &cfg, false).unwrap());
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r, StartPolicy::Open).unwrap();
    assert_eq!(tg.handle_request(t(1), &cfg, &r, 4096, false).unwrap(), Delivery::New);
    let a = ack_of(tg.poll_transmit(t(1)).unwrap());
    i.handle_ack(t(2), &cfg, &a).unwrap();
    assert_eq!(i.state(), InitiatorState::Established);
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Established { tpdcid: 19 }));
    assert_eq!(tg.poll_event(), Some(TargetEvent::Established));
    (i, tg)
}

#[test]
fn worked_example_write_read_and_target_requested_close() {
    // Digest §4.3 and the `uet-pcap` exchange: PDC 7 opens with SYN from PSN 4; the target takes
    // id 19; a write at PSNs 4–8, reads at 9–11, then the target asks to close.
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 4);
    let mut acks = Vec::new();

    // PSN 4: SYN, psn_offset 0, CLEAR_PSN = start − 1.
    let s4 = i.send(t(0), &cfg, false).unwrap();
    assert_eq!((s4.psn, s4.spdcid), (4, 7));
    assert_eq!(s4.dest, PdcDest::Syn { use_rsv_pdc: false, psn_offset: 0 });
    assert_eq!(s4.request(NextHeader::ReqStd, None).clear_psn(), 3);
    let r4 = req(s4);
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r4, StartPolicy::Open).unwrap();
    assert_eq!(tg.poll_event(), Some(TargetEvent::Established));
    assert_eq!(tg.handle_request(t(1), &cfg, &r4, 4096, false).unwrap(), Delivery::New);
    // PSN 5: still SYN (no ACK yet), psn_offset 1.
    let s5 = i.send(t(1), &cfg, false).unwrap();
    assert_eq!(s5.dest, PdcDest::Syn { use_rsv_pdc: false, psn_offset: 1 });
    // SYN packets are ACKed at once (digest §4.4).
    let a4 = ack_of(tg.poll_transmit(t(1)).unwrap());
    assert_eq!((a4.cack_psn, a4.spdcid, a4.dpdcid), (4, 19, 7));
    acks.push(a4.cack_psn);
    assert_eq!(tg.handle_request(t(2), &cfg, &req(s5), 4096, false).unwrap(), Delivery::New);
    let a5 = ack_of(tg.poll_transmit(t(2)).unwrap());
    acks.push(a5.cack_psn);
    assert_eq!(i.handle_ack(t(3), &cfg, &a4).unwrap().acked, 1);
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Established { tpdcid: 19 }));
    assert_eq!(i.state(), InitiatorState::Established);
    assert_eq!(i.handle_ack(t(3), &cfg, &a5).unwrap().acked, 1);

    // PSNs 6–8: DPDCID 19; AR on the last packet of the write only.
    for psn in 6..=8 {
        let s = i.send(t(4), &cfg, psn == 8).unwrap();
        assert_eq!((s.psn, s.dest), (psn, PdcDest::Established { dpdcid: 19 }));
        assert_eq!(s.flags.contains(RequestFlags::AR), psn == 8);
        assert_eq!(s.request(NextHeader::ReqStd, None).clear_psn(), 5);
        assert_eq!(tg.handle_request(t(5), &cfg, &req(s), 4096, false).unwrap(), Delivery::New);
        // 8 KiB accepted is under ACK_Gen_Trigger: only the AR packet is ACKed.
        assert_eq!(tg.ack_due(), psn == 8);
    }
    let a8 = ack_of(tg.poll_transmit(t(5)).unwrap());
    acks.push(a8.cack_psn);
    assert_eq!(i.handle_ack(t(6), &cfg, &a8).unwrap().acked, 3);

    // Reads at 9–11: one request each, AR set, each ACKed; each is answered by one read data
    // packet in the return direction (UE 1.0 §3.5.20.1), numbered from the initiator's start
    // PSN as the reference provider's target numbers it: target PSNs 4–6, the last with AR.
    let mut data = Vec::new();
    for psn in 9..=11 {
        let s = i.send(t(7), &cfg, true).unwrap();
        assert_eq!(s.psn, psn);
        tg.handle_request(t(8), &cfg, &req(s), 0, false).unwrap();
        let a = ack_of(tg.poll_transmit(t(8)).unwrap());
        acks.push(a.cack_psn);
        i.handle_ack(t(9), &cfg, &a).unwrap();
        assert!(tg.can_send());
        let d = tg.send(t(9), &cfg, psn == 11).unwrap();
        assert_eq!((d.psn, d.spdcid, d.dest), (psn - 5, 19, PdcDest::Established { dpdcid: 7 }));
        data.push(d.request(NextHeader::RspData, None));
    }
    assert_eq!(i.outstanding(), 0);
    assert_eq!(tg.return_window().outstanding(), 3);
    let before = tg.clone();
    assert!(matches!(tg.request_close(t(9), &cfg), Err(PdcError::IllegalEvent { .. })), "read data in flight");
    assert_eq!(tg, before);
    // The first data packet is lost; the other two arrive, the last draws an ACK at once.
    for d in &data[1..] {
        assert_eq!(i.handle_data(t(10), &cfg, d, 4096, false).unwrap(), Delivery::New);
    }
    let Some(InitiatorTx::Ack(ad)) = i.poll_transmit(t(10)) else { panic!("no ACK of the read data") };
    assert_eq!((ad.cack_psn, ad.ack_psn(), ad.spdcid, ad.dpdcid), (3, 6, 7, 19));
    assert_eq!(ad.sack(), Some((4, 0b110)));
    assert_eq!(tg.handle_ack(t(10), &cfg, &ad).unwrap().acked, 2);
    // The RTO resends PSN 4 alone (RETX and AR set); its ACK completes the return direction.
    let rto = tg.poll_timeout().unwrap();
    assert_eq!(rto, t(10).saturating_add(cfg.rto), "restarted by the ACK that made progress");
    tg.handle_timeout(rto, &cfg);
    let Some(TargetTx::Resend(r4)) = tg.poll_transmit(rto) else { panic!("no resend of the lost data") };
    assert_eq!((r4.psn, r4.flags), (4, RequestFlags::RETX | RequestFlags::AR));
    assert_eq!(tg.poll_transmit(rto), None);
    let r4 = r4.request(NextHeader::RspData, None);
    assert_eq!(i.handle_data(rto, &cfg, &r4, 4096, false).unwrap(), Delivery::New);
    assert_eq!(i.handle_data(rto, &cfg, &r4, 4096, false).unwrap(), Delivery::Stale);
    let Some(InitiatorTx::Ack(ad)) = i.poll_transmit(rto) else { panic!("no ACK of the resend") };
    assert_eq!(ad.cack_psn, 6);
    tg.handle_ack(rto, &cfg, &ad).unwrap();
    assert_eq!(tg.return_window().outstanding(), 0);

    // The target asks to close: CLOSE_REQ at the next return PSN (7), AR set.
    tg.request_close(t(10), &cfg).unwrap();
    let TargetTx::Control(cr) = tg.poll_transmit(t(10)).unwrap() else { panic!("no CLOSE_REQ") };
    let cr = ctl(cr);
    assert_eq!(
        (cr.ctl_type, cr.psn, cr.spdcid, cr.dest),
        (ControlType::CloseReq, 7, 19, PdcDest::Established { dpdcid: 7 })
    );
    assert!(cr.flags.contains(ControlFlags::AR));
    i.handle_control(t(11), &cr).unwrap();
    assert_eq!(i.state(), InitiatorState::Quiesce);
    // The initiator ACKs the CLOSE_REQ, then closes: CLOSE at the next PSN, 12.
    let Some(InitiatorTx::Ack(ack_cr)) = i.poll_transmit(t(11)) else { panic!("no ACK of CLOSE_REQ") };
    assert_eq!((ack_cr.cack_psn, ack_cr.ack_psn(), ack_cr.spdcid, ack_cr.dpdcid), (7, 7, 7, 19));
    tg.handle_ack(t(12), &cfg, &ack_cr).unwrap();
    i.close(t(12), &cfg).unwrap();
    assert_eq!(i.state(), InitiatorState::CloseAckWait);
    let Some(InitiatorTx::Control(close)) = i.poll_transmit(t(12)) else { panic!("no CLOSE") };
    let close = ctl(close);
    assert_eq!((close.ctl_type, close.psn), (ControlType::Close, 12));
    assert!(close.flags.contains(ControlFlags::AR));
    tg.handle_control(t(13), &cfg, &close).unwrap();
    assert_eq!(tg.state(), TargetState::Closed);
    let a12 = ack_of(tg.poll_transmit(t(13)).unwrap());
    acks.push(a12.cack_psn);
    assert_eq!(tg.poll_event(), Some(TargetEvent::Closed));
    assert_eq!(i.handle_ack(t(14), &cfg, &a12).unwrap().acked, 0);
    assert_eq!(i.state(), InitiatorState::Closed);
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Closed));
    assert_eq!(i.poll_event(), None);
    assert_eq!(acks, [4, 5, 8, 9, 10, 11, 12]);
    assert_eq!(i.failure(), None);
    assert_eq!(tg.next_expected_psn(), 13);
}

#[test]
fn refused_events_change_nothing() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    // An ACK beyond the sent PSNs.
    let before = i.clone();
    let mut bad = tg.ack();
    bad.cack_psn = 100;
    assert!(matches!(i.handle_ack(t(5), &cfg, &bad), Err(PdcError::Ack(AckError::BeyondSent { .. }))));
    assert_eq!(i, before);
    // An ACK from another PDC.
    let mut other = tg.ack();
    other.spdcid = 20;
    assert_eq!(i.handle_ack(t(5), &cfg, &other), Err(PdcError::WrongPdc { expected: 19, got: 20 }));
    assert_eq!(i, before);
    // A NACK outside [tx_base, next_psn − 1].
    let n = Nack::for_pdc(NackCode::Trimmed, 4, 19, 7);
    assert_eq!(i.handle_nack(t(5), &cfg, &n), Err(PdcError::StaleNack { psn: 4 }));
    assert_eq!(i, before);
    // NEW_START_PSN once established.
    let s = i.send(t(5), &cfg, false).unwrap();
    let before = i.clone();
    let ns = Nack { code: NackCode::NewStartPsn, target: NackTarget::Pdc { psn: s.psn, spdcid: 19, dpdcid: 7 }, ..n };
    assert!(matches!(i.handle_nack(t(6), &cfg, &ns), Err(PdcError::IllegalEvent { .. })));
    assert_eq!(i, before);
    // CLOSE_REQ and ACK_REQ are the only control packets an initiator takes.
    let probe = Control {
        ctl_type: ControlType::Clear,
        flags: ControlFlags::empty(),
        probe_opaque: 0,
        psn: 2,
        spdcid: 19,
        dest: PdcDest::Established { dpdcid: 7 },
        payload: 0,
    };
    assert!(matches!(i.handle_control(t(6), &probe), Err(PdcError::IllegalEvent { .. })));
    assert_eq!(i, before);

    // Closing: no new sends once the close is under way.
    tg.handle_request(t(6), &cfg, &req(s), 100, false).unwrap();
    let a = ack_of(TargetTx::Ack(tg.ack()));
    i.handle_ack(t(7), &cfg, &a).unwrap();
    i.close(t(7), &cfg).unwrap();
    assert_eq!(i.state(), InitiatorState::CloseAckWait);
    let before = i.clone();
    assert_eq!(
        i.send(t(8), &cfg, false),
        Err(PdcError::IllegalEvent { event: "send", state: PdcState::Initiator(InitiatorState::CloseAckWait) })
    );
    assert!(!i.can_send(&cfg));
    assert_eq!(i, before);

    // A closed target refuses everything.
    let Some(InitiatorTx::Control(close)) = i.poll_transmit(t(8)) else { panic!() };
    tg.handle_control(t(9), &cfg, &ctl(close)).unwrap();
    let tbefore = tg.clone();
    assert!(matches!(tg.handle_control(t(9), &cfg, &close), Err(PdcError::IllegalEvent { .. })));
    assert!(matches!(tg.request_close(t(9), &cfg), Err(PdcError::IllegalEvent { .. })));
    assert_eq!(tg, tbefore);
}

#[test]
fn target_refusals_are_nacks() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s = i.send(t(3), &cfg, false).unwrap();
    // Wrong SPDCID: PDC_HDR_MISMATCH; wrong mode: PDC_MODE_MISMATCH; neither is recorded.
    let before = tg.clone();
    let mut r = req(s);
    r.spdcid = 8;
    // The NACK goes to the PDC that sent the packet (uet-ref-prov's `uet_pds_tx_nack`), not
    // to this PDC's initiator, which did nothing wrong.
    let n = {
        tg.handle_request(t(4), &cfg, &r, 0, false).unwrap();
        pending_nack(&mut tg)
    };
    assert_eq!(n.code, NackCode::PdcHdrMismatch);
    assert!(matches!(n.target, NackTarget::Pdc { dpdcid: 8, .. }), "{:?}", n.target);
    assert_eq!(n.payload, 0, "this PDC's PSNs are not the other PDC's");
    let mut r = req(s);
    r.mode = DeliveryMode::Rod;
    assert_eq!(
        {
            tg.handle_request(t(4), &cfg, &r, 0, false).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::PdcModeMismatch
    );
    // Outside both windows: PSN_OOR_WINDOW; with SYN: INVALID_SYN.
    let mut r = req(s);
    r.psn = s.psn + 1000;
    assert_eq!(
        {
            tg.handle_request(t(4), &cfg, &r, 0, false).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::PsnOorWindow
    );
    r.dest = PdcDest::Syn { use_rsv_pdc: false, psn_offset: 0 };
    assert_eq!(
        {
            tg.handle_request(t(4), &cfg, &r, 0, false).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::InvalidSyn
    );
    // Another DPDCID is not this PDC's packet at all.
    let mut r = req(s);
    r.dest = PdcDest::Established { dpdcid: 20 };
    assert_eq!(tg.handle_request(t(4), &cfg, &r, 0, false), Err(PdcError::WrongPdc { expected: 19, got: 20 }));
    assert_eq!(tg, before);

    // A duplicate is re-ACKed, never NACKed; a stale one too.
    let r = req(i.send(t(3), &cfg, false).unwrap());
    assert_eq!(tg.handle_request(t(5), &cfg, &r, 0, false).unwrap(), Delivery::New);
    assert_eq!(tg.handle_request(t(5), &cfg, &r, 0, false).unwrap(), Delivery::Duplicate);
    let r4 = Request { psn: 4, ..r };
    assert_eq!(tg.handle_request(t(5), &cfg, &r4, 0, false).unwrap(), Delivery::Stale);
    assert!(tg.ack_due());
    // Unknown control types: UNEXP_EVENT. An ACK_REQ for a PSN not received: PKT_NOT_RCVD.
    let c = Control {
        ctl_type: ControlType::Credit,
        flags: ControlFlags::empty(),
        probe_opaque: 0,
        psn: 9,
        spdcid: 7,
        dest: PdcDest::Established { dpdcid: 19 },
        payload: 0,
    };
    assert_eq!(
        {
            tg.handle_control(t(6), &cfg, &c).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::UnexpEvent
    );
    let c = Control { ctl_type: ControlType::AckReq, ..c };
    assert_eq!(
        {
            tg.handle_control(t(6), &cfg, &c).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::PktNotRcvd
    );
    // Trimmed arrivals are NACKed for an immediate resend and not recorded.
    let s2 = i.send(t(6), &cfg, false).unwrap();
    tg.handle_trimmed(&req(s2), false).unwrap();
    assert_eq!(pending_nack(&mut tg).code, NackCode::Trimmed);
    assert!(!tg.window().received(s2.psn));
}

#[test]
fn nack_classes_drive_recovery() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s = i.send(t(3), &cfg, false).unwrap();
    // TRIMMED: resent at once with RETX and AR.
    let n = {
        tg.handle_trimmed(&req(s), false).unwrap();
        pending_nack(&mut tg)
    };
    assert_eq!(i.handle_nack(t(4), &cfg, &n), Ok(NackClass::Retransmit));
    let Some(InitiatorTx::Resend(r)) = i.poll_transmit(t(4)) else { panic!("no resend") };
    assert_eq!(r.psn, s.psn);
    assert!(r.flags.contains(RequestFlags::RETX | RequestFlags::AR));
    // A resource NACK: resent only after NACK_Retx_Time.
    let n2 = Nack { code: NackCode::NoPktBuffer, ..n };
    i.handle_nack(t(5), &cfg, &n2).unwrap();
    assert_eq!(i.poll_transmit(t(6)), None);
    assert!(i.poll_timeout().unwrap() <= t(5).saturating_add(cfg.nack_retx_time));
    assert!(matches!(i.poll_transmit(t(5).saturating_add(cfg.nack_retx_time)), Some(InitiatorTx::Resend(_))));
    // RCVD_SES_PROCG is dropped.
    let n3 = Nack { code: NackCode::RcvdSesProcg, ..n };
    assert_eq!(i.handle_nack(t(2000), &cfg, &n3), Ok(NackClass::Drop));
    assert!(!i.has_pending());
    // Max_NACK_Retx_Cnt retransmitting NACKs of one packet close in error (two counted
    // already); a second NACK before the resend does not count.
    for k in 2..cfg.max_nack_retx {
        i.handle_nack(t(3000 + u64::from(k)), &cfg, &n).unwrap();
        i.handle_nack(t(3000 + u64::from(k)), &cfg, &n).unwrap();
        assert!(matches!(i.poll_transmit(t(3000 + u64::from(k))), Some(InitiatorTx::Resend(_))));
    }
    assert_eq!(i.failure(), None);
    i.handle_nack(t(3100), &cfg, &n).unwrap();
    assert_eq!(i.failure(), Some(Failure::NackRetriesExhausted));
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Failed(Failure::NackRetriesExhausted)));
    assert_eq!(i.state(), InitiatorState::CloseAckWait);
    assert_eq!(i.outstanding(), 1, "only the CLOSE: the requests were given up");
    let Some(InitiatorTx::Control(c)) = i.poll_transmit(t(3100)) else { panic!("no CLOSE") };
    assert_eq!(c.ctl_type, ControlType::Close);

    // A close-class NACK closes at once: the target has no usable PDC.
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s = i.send(t(3), &cfg, false).unwrap();
    let mut n = {
        tg.handle_trimmed(&req(s), false).unwrap();
        pending_nack(&mut tg)
    };
    n.code = NackCode::InvDpdcid;
    assert_eq!(i.handle_nack(t(4), &cfg, &n), Ok(NackClass::Close));
    assert_eq!(i.state(), InitiatorState::Closed);
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Failed(Failure::Nack(NackCode::InvDpdcid))));
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Closed));
}

#[test]
fn rto_resends_then_closes_in_error() {
    let cfg = cfg();
    let (mut i, _tg) = established(DeliveryMode::Rud);
    let s = i.send(t(10), &cfg, true).unwrap();
    let mut now;
    for round in 1..=cfg.max_rto_retx {
        now = i.poll_timeout().unwrap();
        // The tail-loss probe comes first (same default time), then the RTO resend.
        i.handle_timeout(now, &cfg);
        let mut resent = false;
        while let Some(tx) = i.poll_transmit(now) {
            if let InitiatorTx::Resend(r) = tx {
                assert_eq!(r.psn, s.psn, "round {round}");
                resent = true;
            }
        }
        assert!(resent, "round {round}");
    }
    now = i.poll_timeout().unwrap();
    i.handle_timeout(now, &cfg);
    assert_eq!(i.failure(), Some(Failure::RetriesExhausted));
    assert_eq!(i.state(), InitiatorState::CloseAckWait);
    // The CLOSE itself is resent, then given up.
    for _ in 0..=cfg.max_rto_retx {
        assert!(matches!(i.poll_transmit(now), Some(InitiatorTx::Control(_))));
        now = i.poll_timeout().unwrap();
        i.handle_timeout(now, &cfg);
    }
    assert_eq!(i.state(), InitiatorState::Closed);
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Failed(Failure::RetriesExhausted)));
    assert_eq!(i.poll_event(), Some(InitiatorEvent::Closed));
    assert_eq!(i.poll_timeout(), None);
}

#[test]
fn rto_backs_off_and_counts_timeouts_of_the_same_packet() {
    // Probes and SACK-driven resends out of the way: only the RTO resends here.
    let cfg = PdcConfig { tail_loss_time: Duration::from_millis(100_000), loss_threshold: u32::MAX, ..cfg() };
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let lost = i.send(t(10), &cfg, true).unwrap();
    let mut now = t(10);
    for retries in 0..=cfg.max_rto_retx {
        // A later packet arrives and is acknowledged each round: progress, but not for `lost`,
        // which stays the oldest unacknowledged packet.
        let later = i.send(now, &cfg, true).unwrap();
        tg.handle_request(now, &cfg, &req(later), 100, false).unwrap();
        i.handle_ack(now, &cfg, &ack_of(tg.poll_transmit(now).unwrap())).unwrap();
        assert!(!i.is_acked(lost.psn));
        let expiry = i.poll_timeout().unwrap();
        assert_eq!(expiry, now.saturating_add(cfg.rto_backoff(retries)), "retry {retries}");
        assert_eq!(cfg.rto_backoff(retries), cfg.rto.saturating_mul(1 << retries));
        now = expiry;
        i.handle_timeout(now, &cfg);
        while i.poll_transmit(now).is_some() {} // every resend is lost
    }
    assert_eq!(i.failure(), Some(Failure::RetriesExhausted));
    // The cap holds, however many retries.
    let capped = PdcConfig { rto_max: Duration::from_millis(3), ..cfg };
    assert_eq!(capped.rto_backoff(1), Duration::from_millis(2));
    assert_eq!(capped.rto_backoff(2), Duration::from_millis(3));
    assert_eq!(capped.rto_backoff(u8::MAX), Duration::from_millis(3));
}

/// SLEEK's probe: a PROBE control packet with a counted opaque value and the SACK base as
/// payload, answered by an ACK with P set that echoes it; the initiator times the answer, and a
/// recovery started from it resends every missing PSN, one already resent included.
#[test]
fn sleek_probe_is_answered_with_p_and_restarts_recovery() {
    use crate::pdc::SleekLimits;
    let cfg = PdcConfig { rto: Duration::from_millis(10), rto_min: Duration::from_millis(10), ..cfg() };
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    i.use_sleek();
    let stamps: Vec<Stamp> = (0..4).map(|_| i.send(t(10), &cfg, false).unwrap()).collect();
    // PSNs 5 and 7 arrive, 6 and 8 are lost; the target owes no ACK yet (coalescing).
    for s in [stamps[0], stamps[2]] {
        tg.handle_request(t(11), &cfg, &req(s), 64, false).unwrap();
    }
    while tg.poll_transmit(t(11)).is_some() {}
    let now = i.poll_timeout().unwrap();
    assert_eq!(now, t(10).saturating_add(cfg.tail_loss_time));
    i.handle_timeout(now, &cfg);
    let Some(InitiatorTx::Control(p)) = i.poll_transmit(now) else { panic!("no probe") };
    let p = ctl(p);
    assert_eq!((p.ctl_type, p.probe_opaque, p.payload), (ControlType::Probe, 1, stamps[0].psn));
    tg.handle_control(now, &cfg, &p).unwrap();
    let a = ack_of(tg.poll_transmit(now).unwrap());
    assert!(a.flags.contains(AckFlags::P));
    assert_eq!(a.ack_psn_offset, 1, "the opaque value is echoed");
    assert_eq!(a.sack(), Some((stamps[0].psn, 0b101)), "SACK based where the probe asked");
    let later = now.saturating_add(Duration::from_micros(3));
    let o = i.handle_ack(later, &cfg, &a).unwrap();
    assert_eq!((o.acked, o.probe_rtt), (2, Some(Duration::from_micros(3))));
    // Below the threshold, no recovery; the probe's verdict starts one.
    let limits = SleekLimits { threshold: 100, window: 100, probe_after: Duration::from_micros(50) };
    assert_eq!(i.run_sleek(later, &a, limits), 0);
    i.recover();
    assert!(i.recovering());
    assert_eq!(i.run_sleek(later, &a, limits), 2);
    let resent: Vec<u32> = core::iter::from_fn(|| match i.poll_transmit(later) {
        Some(InitiatorTx::Resend(r)) => Some(r.psn),
        _ => None,
    })
    .collect();
    assert_eq!(resent, [stamps[1].psn, stamps[3].psn]);
    // A second probe's answer: the first one's opaque value no longer times anything.
    assert_eq!(i.handle_ack(later, &cfg, &a).unwrap().probe_rtt, None);
    // Recovery again resends 6 even though it was resent.
    i.recover();
    assert_eq!(
        i.run_sleek(later, &a, SleekLimits { threshold: 100, window: 2, probe_after: Duration::from_micros(50) }),
        1
    );
    assert!(matches!(i.poll_transmit(later), Some(InitiatorTx::Resend(r)) if r.psn == stamps[1].psn));
    // Both arrive: recovery ends with the cumulative ACK past PSN 8.
    for s in [stamps[1], stamps[3]] {
        tg.handle_request(later, &cfg, &req(s), 64, false).unwrap();
    }
    let a = ack_of(tg.poll_transmit(later).unwrap());
    i.handle_ack(later, &cfg, &a).unwrap();
    assert_eq!(i.run_sleek(later, &a, limits), 0);
    assert!(!i.recovering());
    assert_eq!(i.outstanding(), 0);
}

/// SLEEK never resends a CLOSE as a request: once the PDC closes, an ACK neither restarts the
/// probe timer nor starts recovery, and a probe's answer changes nothing.
#[test]
fn sleek_leaves_a_closing_pdc_alone() {
    use crate::pdc::SleekLimits;
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    i.use_sleek();
    let s = i.send(t(10), &cfg, true).unwrap();
    tg.handle_request(t(11), &cfg, &req(s), 64, false).unwrap();
    let a = ack_of(tg.poll_transmit(t(11)).unwrap());
    i.handle_ack(t(12), &cfg, &a).unwrap();
    i.close(t(12), &cfg).unwrap();
    assert_eq!(i.state(), InitiatorState::CloseAckWait);
    let Some(InitiatorTx::Control(close)) = i.poll_transmit(t(12)) else { panic!("no CLOSE") };
    assert_eq!(close.ctl_type, ControlType::Close);
    // The CLOSE is outstanding; an ACK without progress and an eager controller change nothing.
    let limits = SleekLimits { threshold: 1, window: 8, probe_after: Duration::from_micros(1) };
    i.recover();
    assert_eq!(i.run_sleek(t(13), &a, limits), 0);
    assert!(!i.recovering());
    assert_ne!(i.poll_timeout(), Some(t(13).saturating_add(Duration::from_micros(1))));
    assert_eq!(i.poll_transmit(t(13)), None);
}

/// A target that answers PROBE only with NACK UNEXP_EVENT (as one that does not know it would):
/// the PDC takes that NACK as the refusal, goes on, and probes with ACK_REQ from then on.
#[test]
fn a_refused_probe_falls_back_to_ack_req() {
    let cfg = PdcConfig { rto: Duration::from_millis(10), rto_min: Duration::from_millis(10), ..cfg() };
    let (mut i, _tg) = established(DeliveryMode::Rud);
    i.use_sleek();
    let s = i.send(t(10), &cfg, false).unwrap();
    let now = i.poll_timeout().unwrap();
    i.handle_timeout(now, &cfg);
    let Some(InitiatorTx::Control(p)) = i.poll_transmit(now) else { panic!("no probe") };
    assert_eq!(p.ctl_type, ControlType::Probe);
    let refusal = nack(Nack::for_pdc(NackCode::UnexpEvent, p.psn, 19, 7));
    assert_eq!(i.handle_nack(now, &cfg, &refusal).unwrap(), NackClass::Drop);
    assert_eq!(i.failure(), None);
    assert_eq!(i.state(), InitiatorState::Established);
    let later = i.poll_timeout().unwrap();
    i.handle_timeout(later, &cfg);
    let Some(InitiatorTx::Control(p)) = i.poll_transmit(later) else { panic!("no second probe") };
    assert_eq!((p.ctl_type, p.psn), (ControlType::AckReq, s.psn));
    // With no probe waiting, UNEXP_EVENT closes the PDC as before.
    i.handle_nack(later, &cfg, &refusal).unwrap();
    assert!(i.failure().is_some());
}

/// A PROBE's answer is a packet of its own: a request recorded before it goes out neither
/// suppresses it nor is acknowledged by it in place of its own ACK.
#[test]
fn a_probe_answer_and_a_request_ack_both_go() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    i.use_sleek();
    let s = i.send(t(10), &cfg, true).unwrap();
    let probe = Control {
        ctl_type: ControlType::Probe,
        flags: ControlFlags::empty(),
        probe_opaque: 0xBEEF,
        psn: s.psn,
        spdcid: 7,
        dest: PdcDest::Established { dpdcid: 19 },
        payload: s.psn,
    };
    tg.handle_control(t(11), &cfg, &ctl(probe)).unwrap();
    tg.handle_request(t(11), &cfg, &req(s), 64, true).unwrap();
    let first = ack_of(tg.poll_transmit(t(11)).unwrap());
    let second = ack_of(tg.poll_transmit(t(11)).unwrap());
    assert!(first.flags.contains(AckFlags::P) && first.ack_psn_offset as u16 == 0xBEEF);
    assert!(!second.flags.contains(AckFlags::P) && second.flags.contains(AckFlags::M));
    assert_eq!(second.ack_psn(), s.psn);
    assert!(!tg.ack().flags.contains(AckFlags::P), "the ACK this PDC would send names no probe");
    assert_eq!(tg.poll_transmit(t(11)), None);
}

/// SLEEK's out-of-order rule: the ACK_CC's `ooo_count` reaching the threshold marks the missing
/// PSNs at once, without the reorder window; below it, and with SLEEK off, nothing.
#[test]
fn sleek_marks_losses_when_the_out_of_order_count_reaches_the_threshold() {
    use crate::pdc::SleekLimits;
    let cfg = PdcConfig { reorder_window: Duration::from_millis(1), ..cfg() };
    for on in [false, true] {
        let (mut i, mut tg) = established(DeliveryMode::Rud);
        if on {
            i.use_sleek();
        }
        let stamps: Vec<Stamp> = (0..8).map(|_| i.send(t(10), &cfg, false).unwrap()).collect();
        let limits = SleekLimits { threshold: 6, window: 8, probe_after: Duration::from_micros(50) };
        let mut marked = Vec::new();
        for (n, s) in stamps.iter().enumerate().skip(1) {
            tg.handle_request(t(11), &cfg, &req(*s), 64, false).unwrap();
            let a = tg.ack();
            i.handle_ack(t(12), &cfg, &a).unwrap();
            let AckExtension::Cc(cc) = a.ext else { panic!("not an ACK_CC") };
            assert!(matches!(cc.state, crate::pds::CcState::Nscc { ooo_count, .. } if usize::from(ooo_count) == n));
            marked.push(i.run_sleek(t(12), &a, limits));
        }
        // At 6 out of order, every unacknowledged PSN within the window from the cumulative ACK
        // is lost: the first, and the last, not yet arrived (the simulator's rule).
        let expect = if on { vec![0, 0, 0, 0, 0, 2, 0] } else { vec![0; 7] };
        assert_eq!(marked, expect, "SLEEK on: {on}");
        assert_eq!(i.recovering(), on);
    }
}

#[test]
fn tail_loss_probe_recovers_a_lost_last_packet() {
    let cfg = PdcConfig { rto: Duration::from_millis(10), rto_min: Duration::from_millis(10), ..cfg() };
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s = i.send(t(10), &cfg, true).unwrap(); // lost
    let now = i.poll_timeout().unwrap();
    assert_eq!(now, t(10).saturating_add(cfg.tail_loss_time));
    i.handle_timeout(now, &cfg);
    let Some(InitiatorTx::Control(p)) = i.poll_transmit(now) else { panic!("no probe") };
    assert_eq!((p.ctl_type, p.psn), (ControlType::AckReq, s.psn));
    let n = {
        tg.handle_control(now, &cfg, &ctl(p)).unwrap();
        pending_nack(&mut tg)
    };
    assert_eq!(n.code, NackCode::PktNotRcvd);
    i.handle_nack(now, &cfg, &n).unwrap();
    let Some(InitiatorTx::Resend(r)) = i.poll_transmit(now) else { panic!("no resend") };
    assert_eq!(tg.handle_request(now, &cfg, &req(r), 10, false).unwrap(), Delivery::New);
    i.handle_ack(now, &cfg, &ack_of(tg.poll_transmit(now).unwrap())).unwrap();
    assert_eq!(i.outstanding(), 0);
    assert_eq!(i.poll_timeout(), None);
}

/// Before the first ACK the target's PDC id is unknown, so there is no tail-loss probe (a
/// control packet in SYN form has no DPDCID; uet-ref-prov answers one with NACK INV_DPDCID):
/// the lost SYN packet is resent when the retransmission timer fires.
#[test]
fn no_tail_loss_probe_before_the_pdc_is_established() {
    let cfg = PdcConfig { rto: Duration::from_millis(10), rto_min: Duration::from_millis(10), ..cfg() };
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 4);
    let s = i.send(t(10), &cfg, true).unwrap(); // lost
    let probe_time = t(10).saturating_add(cfg.tail_loss_time);
    assert!(probe_time < t(10).saturating_add(cfg.rto));
    i.handle_timeout(probe_time, &cfg);
    assert_eq!(i.poll_transmit(probe_time), None, "no probe in SYN form");
    let rto = i.poll_timeout().unwrap();
    assert_eq!(rto, t(10).saturating_add(cfg.rto));
    i.handle_timeout(rto, &cfg);
    let Some(InitiatorTx::Resend(r)) = i.poll_transmit(rto) else { panic!("no resend") };
    assert_eq!(r.psn, s.psn);
    assert_eq!(i.failure(), None);
}

#[test]
fn sack_drives_fast_resend_once() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let stamps: Vec<Stamp> = (0..6).map(|_| i.send(t(3), &cfg, true).unwrap()).collect();
    // The first is lost; the other five arrive, each ACKed (AR).
    for s in &stamps[1..] {
        tg.handle_request(t(4), &cfg, &req(*s), 100, false).unwrap();
        assert_eq!(i.handle_ack(t(5), &cfg, &ack_of(tg.poll_transmit(t(4)).unwrap())).unwrap().lost, 0);
    }
    // After three later PSNs arrived it is a candidate; it is resent once the reorder window
    // has passed with no ACK for it.
    assert_eq!(i.poll_transmit(t(5)), None);
    assert_eq!(i.poll_timeout(), Some(t(5).saturating_add(cfg.reorder_window)));
    let now = t(5).saturating_add(cfg.reorder_window);
    i.handle_timeout(now, &cfg);
    let Some(InitiatorTx::Resend(r)) = i.poll_transmit(now) else { panic!("no resend") };
    assert_eq!(r.psn, stamps[0].psn);
    assert_eq!(i.poll_transmit(now), None);
    // Further SACKs do not mark it again.
    i.handle_ack(now, &cfg, &ack_of(TargetTx::Ack(tg.ack()))).unwrap();
    assert_eq!(i.poll_timeout(), Some(t(3).saturating_add(cfg.tail_loss_time)));
    tg.handle_request(now, &cfg, &req(r), 100, false).unwrap();
    i.handle_ack(now, &cfg, &ack_of(tg.poll_transmit(now).unwrap())).unwrap();
    assert_eq!(i.outstanding(), 0);

    // A late packet is not resent: it is acknowledged within the window.
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let stamps: Vec<Stamp> = (0..6).map(|_| i.send(t(3), &cfg, true).unwrap()).collect();
    for s in stamps[1..].iter().chain(&stamps[..1]) {
        tg.handle_request(t(4), &cfg, &req(*s), 100, false).unwrap();
        i.handle_ack(t(5), &cfg, &ack_of(tg.poll_transmit(t(4)).unwrap())).unwrap();
    }
    let now = t(5).saturating_add(cfg.reorder_window);
    i.handle_timeout(now, &cfg);
    assert_eq!(i.poll_transmit(now), None);
    assert_eq!(i.outstanding(), 0);

    // With a zero window the candidate is marked at once.
    let quick = PdcConfig { reorder_window: Duration::ZERO, ..cfg };
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let stamps: Vec<Stamp> = (0..5).map(|_| i.send(t(3), &quick, true).unwrap()).collect();
    let mut lost = 0;
    for s in &stamps[1..] {
        tg.handle_request(t(4), &quick, &req(*s), 100, false).unwrap();
        lost += i.handle_ack(t(5), &quick, &ack_of(tg.poll_transmit(t(4)).unwrap())).unwrap().lost;
    }
    assert_eq!(lost, 1);
}

#[test]
fn rod_delivers_in_order_and_goes_back_n() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rod);
    let stamps: Vec<Stamp> = (0..4).map(|_| i.send(t(3), &cfg, false).unwrap()).collect();
    // The first is lost: the second is NACKed ROD_OOO, the third and fourth dropped silently.
    let v = tg.handle_request(t(4), &cfg, &req(stamps[1]), 100, false).unwrap();
    assert_eq!(v, Delivery::Dropped);
    let n = pending_nack(&mut tg);
    assert_eq!(n.code, NackCode::RodOoo);
    for s in &stamps[2..] {
        assert_eq!(tg.handle_request(t(4), &cfg, &req(*s), 100, false).unwrap(), Delivery::Dropped);
    }
    i.handle_nack(t(5), &cfg, &n).unwrap();
    // Go-back-N: all four are resent, in order, and delivered in order.
    let mut delivered = Vec::new();
    while let Some(InitiatorTx::Resend(r)) = i.poll_transmit(t(5)) {
        let v = tg.handle_request(t(6), &cfg, &req(r), 100, false).unwrap();
        assert_eq!(v, Delivery::New);
        delivered.push(r.psn);
    }
    assert_eq!(delivered, stamps.iter().map(|s| s.psn).collect::<Vec<_>>());
    i.handle_ack(t(7), &cfg, &ack_of(tg.poll_transmit(t(6)).unwrap())).unwrap();
    assert_eq!(i.outstanding(), 0);
}

#[test]
fn secure_start_psn_0rtt_refused_then_restarted() {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 1000);
    let s0 = i.send(t(0), &cfg, false).unwrap();
    let s1 = i.send(t(0), &cfg, true).unwrap();
    // The domain expects start PSNs from 70_000 on: Pending, NACK NEW_START_PSN.
    let policy = StartPolicy::Expected0Rtt { expected_psn: 70_000 };
    let r0 = req(s0);
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r0, policy).unwrap();
    assert_eq!(tg.state(), TargetState::Pending);
    let v = tg.handle_request(t(1), &cfg, &r0, 100, false).unwrap();
    let n = pending_nack(&mut tg);
    assert_eq!((v, n.code, n.payload), (Delivery::Dropped, NackCode::NewStartPsn, 70_000));
    // The second SYN of the old start is refused the same way.
    assert_eq!(
        {
            tg.handle_request(t(1), &cfg, &req(s1), 100, false).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::NewStartPsn
    );
    // The initiator shifts every PSN and resends both, still with SYN.
    i.handle_nack(t(2), &cfg, &n).unwrap();
    assert_eq!(i.start_psn(), 70_000);
    // The second SYN's NACK names a PSN of the old numbering: stale, nothing more to do (each
    // packet goes out once below).
    assert!(matches!(i.handle_nack(t(2), &cfg, &n), Err(PdcError::StaleNack { psn: 1000 })));
    let mut psns = Vec::new();
    while let Some(InitiatorTx::Resend(r)) = i.poll_transmit(t(2)) {
        assert!(r.syn());
        assert_eq!(r.request(NextHeader::ReqStd, None).start_psn(), Some(70_000));
        let v = tg.handle_request(t(3), &cfg, &req(r), 100, false).unwrap();
        assert_eq!(v, Delivery::New);
        psns.push(r.psn);
    }
    assert_eq!(psns, [70_000, 70_001]);
    assert_eq!(tg.state(), TargetState::Established);
    assert_eq!(tg.poll_event(), Some(TargetEvent::Established));
    i.handle_ack(t(4), &cfg, &ack_of(tg.poll_transmit(t(3)).unwrap())).unwrap();
    assert_eq!(i.state(), InitiatorState::Established);
    assert_eq!(i.outstanding(), 0);

    // A start at or after Expected_PSN is accepted at once (serial order, across the wrap).
    let r = Request { psn: 5, dest: PdcDest::Syn { use_rsv_pdc: false, psn_offset: 0 }, ..r0 };
    let tg = Target::<2>::new(t(0), &cfg, 20, &r, StartPolicy::Expected0Rtt { expected_psn: u32::MAX - 10 }).unwrap();
    assert_eq!(tg.state(), TargetState::Established);
}

/// A NACK NEW_START_PSN restarts the return direction whole, from the new start: read data is
/// then coalesced as on any PDC, also when the new start lies before the old one (the newest PSN
/// its last ACK covered moves with it, so the first packets are not taken for late ones filling
/// a gap, each ACKed at once).
#[test]
fn new_start_psn_restarts_the_return_direction() {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 1000);
    let r = req(i.send(t(0), &cfg, true).unwrap());
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r, StartPolicy::Random1Rtt { start_psn: 500 }).unwrap();
    tg.handle_request(t(1), &cfg, &r, 0, false).unwrap();
    let n = pending_nack(&mut tg);
    i.handle_nack(t(2), &cfg, &n).unwrap();
    assert_eq!(i.return_window().cack_psn(), 499);
    let Some(InitiatorTx::Resend(s)) = i.poll_transmit(t(2)) else { panic!("the SYN is resent") };
    assert_eq!(tg.handle_request(t(3), &cfg, &req(s), 0, false).unwrap(), Delivery::New);
    i.handle_ack(t(4), &cfg, &ack_of(tg.poll_transmit(t(3)).unwrap())).unwrap();
    // Read data without AR, far below the coalescing trigger: no ACK yet.
    let d = data(tg.send(t(5), &cfg, false).unwrap());
    assert_eq!(d.psn, 500);
    assert_eq!(i.handle_data(t(6), &cfg, &d, 100, false).unwrap(), Delivery::New);
    assert!(!i.has_pending(), "the first read data packet was taken for a late one");
}

/// A late SYN from the PSN space the initiator left on NEW_START_PSN is not taken for a packet of
/// the new one, though its PSN lies in the target's window: delivering it would hand over data
/// of another message, and the ACK would name a PSN the initiator never sent, which it refuses
/// whole (on a perfect wire the pair then never went quiet). A late CLOSE from that space does
/// not close the PDC either, and a trimmed late SYN draws no NACK TRIMMED naming an old PSN.
#[test]
fn a_late_syn_of_the_left_psn_space_is_dropped() {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 1000);
    let first = req(i.send(t(0), &cfg, false).unwrap());
    let late = req(i.send(t(0), &cfg, false).unwrap());
    assert_eq!((late.psn, late.start_psn()), (1001, Some(1000)));
    // The required start lies just below: PSN 1001 of the old space is inside the new window.
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &first, StartPolicy::Random1Rtt { start_psn: 990 }).unwrap();
    tg.handle_request(t(1), &cfg, &first, 0, false).unwrap();
    i.handle_nack(t(2), &cfg, &pending_nack(&mut tg)).unwrap();
    let Some(InitiatorTx::Resend(s)) = i.poll_transmit(t(2)) else { panic!("the SYN is resent") };
    assert_eq!(tg.handle_request(t(3), &cfg, &req(s), 0, false).unwrap(), Delivery::New);
    assert_eq!(tg.state(), TargetState::Established);

    assert!(!tg.would_deliver(&late));
    assert_eq!(tg.handle_request(t(4), &cfg, &late, 0, false).unwrap(), Delivery::Dropped);
    assert_eq!(tg.window().max_rcvd(), 990, "the late SYN counts as received");
    tg.handle_trimmed(&late, false).unwrap();
    let close = Control {
        ctl_type: ControlType::Close,
        flags: ControlFlags::AR,
        probe_opaque: 0,
        psn: 1002,
        spdcid: 7,
        dest: PdcDest::Syn { use_rsv_pdc: false, psn_offset: 2 },
        payload: 0,
    };
    tg.handle_control(t(4), &cfg, &ctl(close)).unwrap();
    assert_eq!(tg.state(), TargetState::Established, "a late CLOSE of the old space closed the PDC");
    // Only the resent SYN's ACK goes out, and the initiator takes it.
    let a = ack_of(tg.poll_transmit(t(4)).unwrap());
    i.handle_ack(t(5), &cfg, &a).unwrap();
    assert_eq!(i.window().base(), 991);
    assert!(tg.poll_transmit(t(4)).is_none(), "the late packets were answered");
}

#[test]
fn secure_start_psn_1rtt_and_pending_reaped() {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 1000);
    let r = req(i.send(t(0), &cfg, true).unwrap());
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r, StartPolicy::Random1Rtt { start_psn: 123_456 }).unwrap();
    let n = {
        tg.handle_request(t(1), &cfg, &r, 0, false).unwrap();
        pending_nack(&mut tg)
    };
    assert_eq!((n.code, n.payload), (NackCode::NewStartPsn, 123_456));
    // Nothing more arrives: the Pending PDC is reaped after New_PDC_Time.
    assert_eq!(tg.poll_timeout(), Some(t(1).saturating_add(cfg.new_pdc_time)));
    tg.handle_timeout(t(1).saturating_add(cfg.new_pdc_time), &cfg);
    assert_eq!(tg.state(), TargetState::Closed);
    assert_eq!(tg.poll_event(), Some(TargetEvent::Closed));
    // Control packets (a tail-loss probe, a CLOSE) are answered NEW_START_PSN while Pending, so
    // an initiator whose restart NACK was lost restarts instead of failing.
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r, StartPolicy::Random1Rtt { start_psn: 123_456 }).unwrap();
    let c = Control {
        ctl_type: ControlType::Close,
        flags: ControlFlags::AR,
        probe_opaque: 0,
        psn: 1001,
        spdcid: 7,
        dest: PdcDest::Syn { use_rsv_pdc: false, psn_offset: 1 },
        payload: 0,
    };
    assert_eq!(
        {
            tg.handle_control(t(2), &cfg, &c).unwrap();
            pending_nack(&mut tg)
        }
        .code,
        NackCode::NewStartPsn
    );
}

#[test]
fn psn_range_limit_forces_a_close() {
    let cfg = cfg();
    let (mut i, _tg) = established(DeliveryMode::Rud);
    // Behave as if 2^31 − 3 PSNs had gone by since the start.
    let used = i.window().next_psn().wrapping_sub(i.start_psn());
    i.skip_psns((1 << 31) - 3 - used);
    assert!(i.can_send(&cfg));
    i.send(t(5), &cfg, false).unwrap();
    i.send(t(5), &cfg, false).unwrap();
    assert_eq!(i.state(), InitiatorState::Quiesce, "the PDC must close before start + 2^31");
    assert!(!i.can_send(&cfg));
    // Without Limit_PSN_Range it could go on.
    let open = PdcConfig { limit_psn_range: false, ..cfg };
    let (mut j, _) = established(DeliveryMode::Rud);
    j.skip_psns((1 << 31) - 3 - used);
    j.send(t(5), &open, false).unwrap();
    j.send(t(5), &open, false).unwrap();
    assert_eq!(j.state(), InitiatorState::Established);
}

#[test]
fn target_close_request_resent_then_closed_in_error() {
    let cfg = cfg();
    let (_i, mut tg) = established(DeliveryMode::Rud);
    tg.request_close(t(10), &cfg).unwrap();
    let mut now = t(10);
    let mut sent = 0;
    loop {
        while let Some(tx) = tg.poll_transmit(now) {
            match tx {
                TargetTx::Control(c) => {
                    assert_eq!(c.ctl_type, ControlType::CloseReq);
                    assert_eq!(c.flags.contains(ControlFlags::RETX), sent > 0);
                    sent += 1;
                }
                TargetTx::Nack(n) => assert_eq!(n.code, NackCode::ClosingInErr),
                TargetTx::Ack(_) => {}
                TargetTx::Resend(s) => panic!("no read data was sent, yet PSN {} is resent", s.psn),
            }
        }
        let Some(next) = tg.poll_timeout() else { break };
        now = next;
        tg.handle_timeout(now, &cfg);
    }
    assert_eq!(sent, 1 + u32::from(cfg.max_rto_retx));
    assert_eq!(tg.state(), TargetState::Closed);
    assert_eq!(tg.poll_event(), Some(TargetEvent::Failed(Failure::CloseTimeout)));
    assert_eq!(tg.poll_event(), Some(TargetEvent::Closed));
}

#[test]
fn nack_limit_counts_per_packet() {
    // A shortage that refuses a burst of 12 packets, each refused 5 times (the limit): nothing
    // fails, since each packet has its own count.
    let cfg = cfg();
    let (mut i, _tg) = established(DeliveryMode::Rud);
    let sent: std::vec::Vec<_> = (0..12).map(|_| i.send(t(3), &cfg, false).unwrap()).collect();
    let mut now = t(4);
    for _ in 0..cfg.max_nack_retx {
        for s in &sent {
            let n = Nack::for_pdc(NackCode::NoSesMsgAvail, s.psn, i.remote_id().unwrap(), i.local_id());
            i.handle_nack(now, &cfg, &n).unwrap();
        }
        now = now.saturating_add(cfg.nack_retx_time);
        i.handle_timeout(now, &cfg);
        while i.poll_transmit(now).is_some() {}
    }
    assert_eq!(i.failure(), None);
    // The sixth refusal of the oldest fails the PDC; with the limit at its maximum it never does.
    let n = Nack::for_pdc(NackCode::NoSesMsgAvail, sent[0].psn, i.remote_id().unwrap(), i.local_id());
    let mut forever = i.clone();
    let unlimited = PdcConfig { max_nack_retx: UNLIMITED_NACK_RETX, ..cfg };
    for _ in 0..100 {
        forever.handle_nack(now, &unlimited, &n).unwrap();
        while forever.poll_transmit(now.saturating_add(cfg.nack_retx_time)).is_some() {}
    }
    assert_eq!(forever.failure(), None);
    i.handle_nack(now, &cfg, &n).unwrap();
    assert_eq!(i.failure(), Some(Failure::NackRetriesExhausted));
}

#[test]
fn a_target_refusing_for_long_fails_nothing_without_a_nack_limit() {
    // The software profile retries resource NACKs without limit. A target that refuses one
    // packet for 5 s (longer than the timeouts would allow a silent peer) fails nothing: each
    // NACK restarts the retransmission timer and clears the packet's timeout count.
    let cfg = PdcConfig::software();
    let (mut i, _tg) = established(DeliveryMode::Rud);
    let s = i.send(t(3), &cfg, true).unwrap();
    let n = Nack::for_pdc(NackCode::NoPktBuffer, s.psn, i.remote_id().unwrap(), i.local_id());
    let mut now = t(4);
    let mut resends = 0;
    while now < t(5_000_000) {
        i.handle_nack(now, &cfg, &n).unwrap();
        now = i.poll_timeout().unwrap();
        i.handle_timeout(now, &cfg);
        while let Some(tx) = i.poll_transmit(now) {
            resends += usize::from(matches!(tx, InitiatorTx::Resend(_)));
        }
        assert_eq!(i.failure(), None, "failed at {now:?}");
    }
    // One resend per NACK_Retx_Time.
    assert!(resends >= 4_900, "{resends}");
    assert_eq!(i.timeouts(), 0);
}

#[test]
fn pdc_sizes() {
    use core::mem::size_of;
    std::println!(
        "Initiator<2>: {} B, Target<2>: {} B (goal: at most 256 B for the initiator, 416 B for \
         the target, which sends read data too)",
        size_of::<Initiator<2>>(),
        size_of::<Target<2>>()
    );
    // Kept from growing unnoticed: 232 and 328 B now (the return directions, 56 B of the
    // initiator and 120 B of the target, are parts of their own, which an endpoint keeps in pools).
    assert!(size_of::<Initiator<2>>() <= 232);
    assert!(size_of::<Target<2>>() <= 328);
    // Each further response slot costs 16 B.
    std::println!("Target<2, 16>: {} B", size_of::<Target<2, 16>>());
    assert_eq!(size_of::<Target<2, 16>>() - size_of::<Target<2>>(), 12 * 16);
    // Room for a fetched value in each slot costs its bytes.
    assert_eq!(size_of::<Target<2, 4, 32>>() - size_of::<Target<2>>(), 4 * 32);
}

#[test]
fn late_packet_filling_a_gap_is_acked_at_once() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s5 = i.send(t(3), &cfg, false).unwrap();
    let s6 = i.send(t(3), &cfg, true).unwrap();
    // The message's last packet (AR) overtakes the one before it and is ACKed.
    tg.handle_request(t(4), &cfg, &req(s6), 4096, false).unwrap();
    i.handle_ack(t(4), &cfg, &ack_of(tg.poll_transmit(t(4)).unwrap())).unwrap();
    assert_eq!(i.outstanding(), 1);
    // The late one carries no AR and adds only 4 KiB, yet it fills the gap: ACKed at once.
    tg.handle_request(t(5), &cfg, &req(s5), 4096, false).unwrap();
    assert!(tg.ack_due());
    i.handle_ack(t(5), &cfg, &ack_of(tg.poll_transmit(t(5)).unwrap())).unwrap();
    assert_eq!(i.outstanding(), 0);
    // An in-order packet without AR still waits for the coalescing trigger.
    let s7 = i.send(t(6), &cfg, false).unwrap();
    tg.handle_request(t(6), &cfg, &req(s7), 4096, false).unwrap();
    assert!(!tg.ack_due());
}

#[test]
fn quiet_target_pdc_closes_after_the_idle_timeout() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    // Traffic restarts the idle timer.
    let s = i.send(t(100), &cfg, true).unwrap();
    tg.handle_request(t(100), &cfg, &req(s), 10, false).unwrap();
    assert_eq!(tg.poll_timeout(), Some(t(100).saturating_add(cfg.idle_timeout)));
    // Idle that long, it asks its initiator to close (CLOSE_REQ) rather than vanish.
    let mut now = t(100).saturating_add(cfg.idle_timeout);
    tg.handle_timeout(now, &cfg);
    assert_eq!(tg.state(), TargetState::CloseReqWait);
    let Some(TargetTx::Control(c)) = tg.poll_transmit(now) else { panic!("no CLOSE_REQ") };
    assert_eq!(c.ctl_type, ControlType::CloseReq);
    // An initiator that never answers: the PDC closes once its CLOSE_REQ goes unanswered.
    for _ in 0..100 {
        while tg.poll_transmit(now).is_some() {}
        match tg.poll_timeout() {
            Some(at) if tg.state() != TargetState::Closed => {
                now = at;
                tg.handle_timeout(now, &cfg);
            }
            _ => break,
        }
    }
    assert_eq!(tg.state(), TargetState::Closed);
    assert!(now < t(100).saturating_add(cfg.idle_timeout.saturating_mul(2)), "before a second idle timeout");
    assert_eq!(tg.poll_event(), Some(TargetEvent::Failed(Failure::CloseTimeout)));
    assert_eq!(tg.poll_event(), Some(TargetEvent::Closed));
    // Off when zero.
    let off = PdcConfig { idle_timeout: Duration::ZERO, ..cfg };
    let r = req(Initiator::<2>::new(&off, DeliveryMode::Rud, 7, 4).send(t(0), &off, false).unwrap());
    let tg = Target::<2>::new(t(0), &off, 19, &r, StartPolicy::Open).unwrap();
    assert_eq!(tg.poll_timeout(), None);
}

fn atomic_response(len: u32) -> crate::ses::Response {
    crate::ses::Response {
        list: crate::ses::ResponseList::Expected,
        opcode: crate::ses::ResponseOpcode::Response,
        return_code: crate::ses::ReturnCode::Ok,
        message_id: 3,
        ri_generation: 0,
        job_id: 9,
        modified_length: len,
    }
}

/// A response with data (a fetching atomic's value) held by a `Target` whose slots take data:
/// its ACK has next header RSP_DATA, and `held_response_with_data` gives the RESPONSE_W_DATA
/// and the bytes that follow it. A `Target` without room for data refuses it.
#[test]
fn a_response_with_data_rides_its_ack() {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 4);
    let first = req(i.send(t(0), &cfg, false).unwrap());
    let mut plain = Target::<2>::new(t(0), &cfg, 19, &first, StartPolicy::Open).unwrap();
    let mut tg = Target::<2, { held::HELD_RESPONSES }, { held::RESPONSE_DATA_MAX }>::new(
        t(0),
        &cfg,
        19,
        &first,
        StartPolicy::Open,
    )
    .unwrap();
    assert_eq!(plain.handle_request(t(0), &cfg, &first, 8, false).unwrap(), Delivery::New);
    assert_eq!(tg.handle_request(t(0), &cfg, &first, 8, false).unwrap(), Delivery::New);
    let psn = first.psn;
    let mut with = atomic_response(8);
    with.opcode = crate::ses::ResponseOpcode::ResponseWithData;
    assert!(matches!(plain.hold_response_with_data(psn, with, &[5; 8]), Err(PdcError::CannotHold { .. })));
    for bad in [&[][..], &[5; 33][..]] {
        assert!(matches!(tg.hold_response_with_data(psn, with, bad), Err(PdcError::CannotHold { .. })));
    }
    assert!(matches!(tg.hold_response(psn, with), Err(PdcError::CannotHold { .. })), "no data, no RESPONSE_W_DATA");
    tg.hold_response_with_data(psn, with, &[5; 8]).unwrap();
    let a = ack_of(tg.poll_transmit(t(0)).unwrap());
    assert_eq!((a.next_header, a.ack_psn()), (NextHeader::RspData, psn));
    let (rsp, data) = tg.held_response_with_data(psn).unwrap();
    assert_eq!(data, &[5; 8]);
    assert_eq!(rsp, atomic_response(8).with_data(8));
    assert_eq!((rsp.opcode, rsp.read_request_message_id, rsp.message_offset), (with.opcode, 3, 0));
    assert_eq!(tg.held_response(psn), Some(atomic_response(8)));
}

/// A guaranteed-delivery response (digest §4.4, §5.4): the ACK carrying it is lost; later ACKs
/// leave its PSN unacknowledged, so the initiator resends the request; the duplicate brings the
/// held response back (not a second delivery); the initiator's CLEAR then releases it.
#[test]
fn guaranteed_delivery_response_survives_a_lost_ack_until_cleared() {
    use crate::pds::AckRequest;
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s5 = i.send(t(3), &cfg, false).unwrap();
    let r5 = req(s5);
    assert!(tg.response_room(&r5));
    assert_eq!(tg.handle_request(t(3), &cfg, &r5, 8, false).unwrap(), Delivery::New);
    // Only the request just delivered, and only a RESPONSE, can be held.
    let mut default = atomic_response(8);
    default.opcode = crate::ses::ResponseOpcode::DefaultResponse;
    assert!(matches!(tg.hold_response(5, default), Err(PdcError::CannotHold { psn: 5, .. })));
    assert!(matches!(tg.hold_response(4, atomic_response(8)), Err(PdcError::CannotHold { psn: 4, .. })));
    tg.hold_response(5, atomic_response(8)).unwrap();
    let lost = ack_of(tg.poll_transmit(t(3)).unwrap());
    assert_eq!((lost.next_header, lost.ack_psn(), lost.request), (NextHeader::Rsp, 5, AckRequest::Clear));
    assert_eq!(tg.held_response(5), Some(atomic_response(8)));
    assert_eq!(tg.poll_transmit(t(3)), None);
    // PSN 6 arrives (AR): its ACK stops CACK before 5 and leaves 5's SACK bit clear.
    let r6 = req(i.send(t(4), &cfg, true).unwrap());
    assert_eq!(tg.handle_request(t(4), &cfg, &r6, 8, false).unwrap(), Delivery::New);
    let a6 = ack_of(tg.poll_transmit(t(4)).unwrap());
    assert_eq!((a6.cack_psn, a6.next_header, a6.request), (4, NextHeader::None, AckRequest::Clear));
    i.handle_ack(t(4), &cfg, &a6).unwrap();
    assert!(!i.is_acked(5) && i.is_acked(6));
    // The RTO resends 5; the target answers the duplicate with the held response.
    let mut resent = None;
    while resent.is_none() {
        let now = i.poll_timeout().unwrap();
        i.handle_timeout(now, &cfg);
        while let Some(tx) = i.poll_transmit(now) {
            // The tail-loss probe (ACK_REQ for 6) may come first; only the resend matters here.
            if let InitiatorTx::Resend(s) = tx {
                resent = Some(s);
            }
        }
    }
    let r5b = req(resent.unwrap());
    assert_eq!(r5b.psn, 5);
    assert_eq!(tg.handle_request(t(1100), &cfg, &r5b, 8, false).unwrap(), Delivery::Duplicate);
    // It names 5 by ACK_PSN; CACK stays before 5, which is still held (CACK never moves back).
    let again = ack_of(tg.poll_transmit(t(1100)).unwrap());
    assert_eq!((again.next_header, again.ack_psn(), again.cack_psn), (NextHeader::Rsp, 5, 4));
    i.handle_ack(t(1101), &cfg, &again).unwrap();
    assert_eq!(i.outstanding(), 0);
    // REQ = Clear: the initiator, with no request to carry CLEAR_PSN, sends CLEAR.
    let InitiatorTx::Control(clear) = i.poll_transmit(t(1101)).unwrap() else { panic!("no CLEAR") };
    let clear = ctl(clear);
    assert_eq!((clear.ctl_type, clear.payload), (ControlType::Clear, 6));
    tg.handle_control(t(1102), &cfg, &clear).unwrap();
    assert_eq!(tg.held_response(5), None);
    assert_eq!(tg.ack().request, AckRequest::None);
    // Releasing it moved CACK past 5: an ACK says so at once (the initiator's window may be
    // waiting on that CACK, with nothing to send that would draw an ACK).
    let moved = ack_of(tg.poll_transmit(t(1102)).unwrap());
    assert_eq!((moved.cack_psn, moved.request), (6, AckRequest::None));
    // Had that CLEAR or this ACK been lost, the initiator (nothing outstanding, the target's
    // CACK behind its left edge) would resend the CLEAR on its retransmission timer, with AR so
    // it always draws an ACK; the ACK that shows CACK caught up stops the timer.
    assert!(clear.flags.contains(ControlFlags::AR));
    let later = i.poll_timeout().expect("a timer while the CLEAR is owed");
    i.handle_timeout(later, &cfg);
    let Some(InitiatorTx::Control(again)) = i.poll_transmit(later) else { panic!("no second CLEAR") };
    assert_eq!((again.ctl_type, again.payload), (ControlType::Clear, 6));
    i.handle_ack(later, &cfg, &moved).unwrap();
    assert_eq!(i.poll_timeout(), None);
    assert_eq!(i.failure(), None);
}

/// A CLEAR_REQ from the target (control type 3) draws a CLEAR with the initiator's CLEAR_PSN
/// (left edge − 1), whatever PSN its payload names; once the CLOSE is queued, none.
#[test]
fn a_clear_req_draws_a_clear() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let r = req(i.send(t(3), &cfg, true).unwrap());
    assert_eq!(tg.handle_request(t(3), &cfg, &r, 8, false).unwrap(), Delivery::New);
    i.handle_ack(t(4), &cfg, &ack_of(tg.poll_transmit(t(4)).unwrap())).unwrap();
    assert_eq!(i.poll_transmit(t(4)), None);
    let ask = Control {
        ctl_type: ControlType::ClearReq,
        flags: ControlFlags::empty(),
        probe_opaque: 0,
        psn: 0,
        spdcid: 19,
        dest: PdcDest::Established { dpdcid: 7 },
        payload: 3,
    };
    i.handle_control(t(5), &ask).unwrap();
    let Some(InitiatorTx::Control(clear)) = i.poll_transmit(t(5)) else { panic!("no CLEAR") };
    let clear = ctl(clear);
    assert_eq!((clear.ctl_type, clear.payload), (ControlType::Clear, r.psn));
    assert!(clear.flags.contains(ControlFlags::AR));
    tg.handle_control(t(6), &cfg, &clear).unwrap();
    assert_eq!(i.poll_transmit(t(6)), None, "one CLEAR");
    i.close(t(7), &cfg).unwrap();
    assert!(matches!(i.poll_transmit(t(7)), Some(InitiatorTx::Control(c)) if ctl(c).ctl_type == ControlType::Close));
    i.handle_control(t(8), &ask).unwrap();
    assert_eq!(i.poll_transmit(t(8)), None, "the CLOSE clears everything");
}

/// A target that never answers a CLEAR (uet-ref-prov's sends no ACK for one): the initiator
/// resends it Max_RTO_Retx_Cnt times, then stops, and the PDC stays up.
#[test]
fn an_unanswered_clear_fails_nothing() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let s = req(i.send(t(3), &cfg, true).unwrap());
    assert_eq!(tg.handle_request(t(3), &cfg, &s, 8, false).unwrap(), Delivery::New);
    tg.hold_response(s.psn, atomic_response(1)).unwrap();
    let a = ack_of(tg.poll_transmit(t(3)).unwrap());
    assert_eq!(a.request, AckRequest::Clear);
    i.handle_ack(t(4), &cfg, &a).unwrap();
    let mut clears = 0;
    let mut now = t(4);
    for _ in 0..100 {
        while let Some(tx) = i.poll_transmit(now) {
            assert!(matches!(tx, InitiatorTx::Control(c) if c.ctl_type == ControlType::Clear), "{tx:?}");
            clears += 1;
        }
        let Some(at) = i.poll_timeout() else { break };
        now = at;
        i.handle_timeout(now, &cfg);
    }
    assert_eq!(clears, 1 + u32::from(cfg.max_rto_retx), "the first CLEAR and its resends");
    assert_eq!(i.poll_timeout(), None);
    assert_eq!(i.failure(), None);
    assert_eq!(i.state(), InitiatorState::Established);
    // The CLEAR's resends are not the next request's: a lost one is resent Max_RTO_Retx_Cnt times
    // before the PDC fails.
    let s = i.send(now, &cfg, true).unwrap();
    let mut resends = 0;
    for _ in 0..100 {
        while let Some(tx) = i.poll_transmit(now) {
            resends += u32::from(matches!(tx, InitiatorTx::Resend(r) if r.psn == s.psn));
        }
        let Some(at) = i.poll_timeout() else { break };
        now = at;
        i.handle_timeout(now, &cfg);
    }
    assert_eq!(resends, u32::from(cfg.max_rto_retx));
    assert_eq!(i.failure(), Some(Failure::RetriesExhausted));
}

/// A response held for a PSN beyond a gap: the ACK carrying it asks for a CLEAR, but the
/// initiator's left edge still waits on the missing PSN, so a CLEAR could release nothing. The
/// initiator sends none (a CLEAR with AR would draw the same ACK again, and the two would
/// ping-pong as fast as the wire allows); once the gap is resent and acknowledged, the CLEAR goes
/// and frees the response.
#[test]
fn no_clear_is_sent_that_could_release_nothing() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let lost = req(i.send(t(3), &cfg, false).unwrap());
    let answered = req(i.send(t(3), &cfg, false).unwrap());
    assert_eq!(tg.handle_request(t(3), &cfg, &answered, 8, false).unwrap(), Delivery::New);
    tg.hold_response(answered.psn, atomic_response(1)).unwrap();
    let a = ack_of(tg.poll_transmit(t(3)).unwrap());
    assert_eq!((a.next_header, a.request, a.cack_psn), (NextHeader::Rsp, AckRequest::Clear, lost.psn - 1));
    i.handle_ack(t(4), &cfg, &a).unwrap();
    assert_eq!(i.poll_transmit(t(4)), None, "a CLEAR of {} releases nothing", lost.psn - 1);
    // The missing PSN comes (resent, as after its timeout); its ACK acknowledges both and still
    // asks: now the CLEAR releases the response.
    let resent = Request { flags: lost.flags | RequestFlags::RETX | RequestFlags::AR, ..lost };
    assert_eq!(tg.handle_request(t(5), &cfg, &resent, 8, false).unwrap(), Delivery::New);
    let a = ack_of(tg.poll_transmit(t(5)).unwrap());
    assert_eq!((a.request, a.cack_psn), (AckRequest::Clear, lost.psn));
    i.handle_ack(t(6), &cfg, &a).unwrap();
    let Some(InitiatorTx::Control(clear)) = i.poll_transmit(t(6)) else { panic!("no CLEAR") };
    assert_eq!((clear.ctl_type, clear.payload), (ControlType::Clear, answered.psn));
    tg.handle_control(t(7), &cfg, &ctl(clear)).unwrap();
    assert_eq!(tg.held_response(answered.psn), None);
    let a = ack_of(tg.poll_transmit(t(7)).unwrap());
    assert_eq!((a.request, a.cack_psn), (AckRequest::None, answered.psn));
    i.handle_ack(t(8), &cfg, &a).unwrap();
    assert_eq!(i.poll_transmit(t(8)), None);
}

/// After a failure the left edge has passed PSNs the target never received, so a CLEAR cannot
/// pass them and releases nothing: the closing initiator sends none (the CLOSE clears
/// everything). Sent, each CLEAR's AR drew an ACK asking again, and the two ping-ponged while the
/// CLOSE was lost, until its retransmission timer.
#[test]
fn a_closing_initiator_sends_no_clear() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let answered = req(i.send(t(3), &cfg, true).unwrap());
    let refused = req(i.send(t(3), &cfg, true).unwrap());
    assert_eq!(tg.handle_request(t(3), &cfg, &answered, 8, false).unwrap(), Delivery::New);
    tg.hold_response(answered.psn, atomic_response(1)).unwrap();
    let d = tg.handle_request_admitting(t(3), &cfg, &refused, 8, false, || Err(NackCode::UnexpEvent)).unwrap();
    assert_eq!(d, Delivery::Dropped);
    let n = pending_nack(&mut tg);
    let a = ack_of(tg.poll_transmit(t(3)).unwrap());
    assert_eq!((a.next_header, a.request), (NextHeader::Rsp, AckRequest::Clear));
    i.handle_ack(t(4), &cfg, &a).unwrap();
    // The NACK closes the PDC in error: the unreceived PSN is given up, the CLOSE queued.
    assert_eq!(i.handle_nack(t(4), &cfg, &n).unwrap(), NackClass::Close);
    assert_eq!(i.state(), InitiatorState::CloseAckWait);
    let Some(InitiatorTx::Control(close)) = i.poll_transmit(t(4)) else { panic!("no CLOSE") };
    assert_eq!(close.ctl_type, ControlType::Close);
    // The CLOSE is lost; an ACK asking for a CLEAR (a copy of the last) draws nothing.
    assert_eq!(i.poll_transmit(t(5)), None);
    i.handle_ack(t(5), &cfg, &a).unwrap();
    assert_eq!(i.poll_transmit(t(5)), None, "a CLEAR that releases nothing");
    // The CLOSE's timer resends it, and it clears the held response.
    let later = i.poll_timeout().unwrap();
    i.handle_timeout(later, &cfg);
    let Some(InitiatorTx::Control(again)) = i.poll_transmit(later) else { panic!("no CLOSE resent") };
    assert_eq!(again.ctl_type, ControlType::Close);
    tg.handle_control(later, &cfg, &ctl(again)).unwrap();
    assert_eq!(tg.held_response(answered.psn), None);
}

/// A PROBE's answer acknowledges everything received: a response for a request it acknowledged
/// can no longer be held (the next ACK would move CACK back to carry it).
#[test]
fn no_response_is_held_after_a_probe_answer_acknowledged_its_request() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let r = req(i.send(t(3), &cfg, false).unwrap());
    assert_eq!(tg.handle_request(t(3), &cfg, &r, 8, false).unwrap(), Delivery::New);
    let probe = Control {
        ctl_type: ControlType::Probe,
        flags: ControlFlags::empty(),
        probe_opaque: 9,
        psn: r.psn,
        spdcid: i.local_id(),
        dest: PdcDest::Established { dpdcid: tg.local_id() },
        payload: r.psn,
    };
    tg.handle_control(t(4), &cfg, &ctl(probe)).unwrap();
    let a = ack_of(tg.poll_transmit(t(4)).unwrap());
    assert!(a.flags.contains(AckFlags::P) && a.cack_psn == r.psn);
    assert!(matches!(tg.hold_response(r.psn, atomic_response(1)), Err(PdcError::CannotHold { .. })));
}

/// The one slot holds a response whose ACK was lost: the next request, whose `CLEAR_PSN` cannot
/// pass it yet, is refused NO_GTD_DEL_AVAIL, and the refusal sends the ACK carrying the response
/// again, so the initiator's left edge passes it and the request's resend is let in (not only
/// after the initiator's timeout resent the answered request).
#[test]
fn a_refusal_for_want_of_a_slot_sends_the_response_to_clear_again() {
    let cfg = cfg();
    let mut i = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 1);
    let first = req(i.send(t(0), &cfg, true).unwrap());
    let mut tg = Target::<2, 1>::new(t(0), &cfg, 19, &first, StartPolicy::Open).unwrap();
    assert_eq!(tg.handle_request(t(0), &cfg, &first, 8, false).unwrap(), Delivery::New);
    i.handle_ack(t(1), &cfg, &ack_of(tg.poll_transmit(t(0)).unwrap())).unwrap();
    let answered = req(i.send(t(2), &cfg, true).unwrap());
    assert_eq!(tg.handle_request(t(2), &cfg, &answered, 8, false).unwrap(), Delivery::New);
    tg.hold_response(answered.psn, atomic_response(1)).unwrap();
    let lost = ack_of(tg.poll_transmit(t(2)).unwrap());
    assert_eq!((lost.next_header, lost.ack_psn()), (NextHeader::Rsp, answered.psn));
    let next = req(i.send(t(3), &cfg, true).unwrap());
    assert_eq!(tg.handle_request(t(3), &cfg, &next, 8, false).unwrap(), Delivery::Dropped);
    let n = pending_nack(&mut tg);
    assert_eq!(n.code, NackCode::NoGtdDelAvail);
    let again = ack_of(tg.poll_transmit(t(3)).unwrap());
    assert_eq!((again.next_header, again.ack_psn()), (NextHeader::Rsp, answered.psn));
    i.handle_nack(t(4), &cfg, &n).unwrap();
    i.handle_ack(t(4), &cfg, &again).unwrap();
    assert!(i.is_acked(answered.psn));
    // The ACK asked for a CLEAR, which is lost; the resend, after NACK_Retx_Time, carries
    // CLEAR_PSN past the response: it frees the slot and is let in.
    let Some(InitiatorTx::Control(clear)) = i.poll_transmit(t(4)) else { panic!("no CLEAR") };
    assert_eq!(clear.ctl_type, ControlType::Clear);
    let later = t(4).saturating_add(cfg.nack_retx_time);
    i.handle_timeout(later, &cfg);
    let Some(InitiatorTx::Resend(r)) = i.poll_transmit(later) else { panic!("no resend") };
    assert_eq!(r.psn, next.psn);
    assert_eq!(tg.handle_request(later, &cfg, &req(r), 8, false).unwrap(), Delivery::New);
    assert_eq!(tg.held_response(answered.psn), None);
}

/// Every response slot in use: a request that needs one is refused NO_GTD_DEL_AVAIL before it is
/// delivered; a request carrying a CLEAR_PSN past the held PSNs frees them, and is let in for it.
#[test]
fn held_responses_are_bounded_and_freed_by_clear_psn() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    for k in 0..held::HELD_RESPONSES as u32 {
        let r = req(i.send(t(3), &cfg, false).unwrap());
        assert!(tg.response_room(&r));
        tg.handle_request(t(3), &cfg, &r, 8, false).unwrap();
        tg.hold_response(r.psn, atomic_response(k)).unwrap();
    }
    let full = req(i.send(t(3), &cfg, false).unwrap());
    assert!(!tg.response_room(&full));
    assert_eq!(tg.handle_request(t(3), &cfg, &full, 8, false).unwrap(), Delivery::Dropped);
    assert!(!tg.window().received(full.psn), "refused, not recorded");
    let n = pending_nack(&mut tg);
    assert_eq!(n.code, NackCode::NoGtdDelAvail);
    assert!(matches!(n.target, NackTarget::Pdc { psn, .. } if psn == full.psn));
    assert_eq!(n.code.class(), NackClass::Retransmit);
    // Every held response goes out once, each in its own ACK; the last ACK acknowledges all.
    let mut last = None;
    while let Some(tx) = tg.poll_transmit(t(3)) {
        let a = ack_of(tx);
        assert_eq!(a.next_header, NextHeader::Rsp);
        assert!(tg.held_response(a.ack_psn()).is_some());
        i.handle_ack(t(4), &cfg, &a).unwrap();
        last = Some(a);
    }
    assert_eq!(last.map(|a| a.ack_psn()), Some(4 + held::HELD_RESPONSES as u32));
    // The next request carries CLEAR_PSN = the initiator's left edge − 1, past all four: it is
    // let in while all four are still held, since taking it frees them; `full`, sent before the
    // ACKs, carries an older CLEAR_PSN and is still refused.
    let r = req(i.send(t(5), &cfg, false).unwrap());
    assert!(tg.response_room(&r));
    assert!(!tg.response_room(&full));
    tg.handle_request(t(5), &cfg, &r, 8, false).unwrap();
    assert_eq!(tg.handle_request(t(5), &cfg, &full, 8, false).unwrap(), Delivery::New);
    assert!((5..5 + held::HELD_RESPONSES as u32).all(|p| tg.held_response(p).is_none()));
    assert!(tg.response_room(&req(i.send(t(6), &cfg, false).unwrap())));
}

/// While an older response is held (CACK stays before it), the ACK carrying a response for a PSN
/// more than 64 past it still acknowledges that PSN: its SACK is moved to cover it.
#[test]
fn response_ack_covers_its_psn_beyond_an_older_held_one() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let r5 = req(i.send(t(3), &cfg, false).unwrap());
    tg.handle_request(t(3), &cfg, &r5, 8, false).unwrap();
    tg.hold_response(5, atomic_response(5)).unwrap();
    let _lost = tg.poll_transmit(t(3)).unwrap();
    let mut last = None;
    for _ in 6..=80 {
        let r = req(i.send(t(4), &cfg, false).unwrap());
        tg.handle_request(t(4), &cfg, &r, 8, false).unwrap();
        while let Some(tx) = tg.poll_transmit(t(4)) {
            i.handle_ack(t(4), &cfg, &ack_of(tx)).unwrap();
        }
        last = Some(r.psn);
    }
    assert_eq!(last, Some(80));
    assert!(!i.is_acked(5));
    let r81 = req(i.send(t(5), &cfg, false).unwrap());
    tg.handle_request(t(5), &cfg, &r81, 8, false).unwrap();
    tg.hold_response(81, atomic_response(81)).unwrap();
    let a = ack_of(tg.poll_transmit(t(5)).unwrap());
    assert_eq!((a.next_header, a.ack_psn(), a.cack_psn), (NextHeader::Rsp, 81, 4));
    i.handle_ack(t(5), &cfg, &a).unwrap();
    assert!(i.is_acked(81) && !i.is_acked(5));
}

/// A plain ACK in the reference provider's form: CACK_PSN stays below a lost PSN, ACK_PSN
/// (`CACK_PSN + ack_psn_offset`) names a later one, and no SACK travels with it.
fn named_ack(cack_psn: u32, named: u32, spdcid: u16, dpdcid: u16, flags: AckFlags) -> Ack {
    let a = Ack {
        next_header: NextHeader::None,
        flags,
        request: AckRequest::None,
        ack_psn_offset: named.wrapping_sub(cack_psn) as i16,
        cack_psn,
        spdcid,
        dpdcid,
        ext: AckExtension::None,
    };
    match wire(PdsHeader::Ack(a)) {
        PdsHeader::Ack(a) => a,
        other => panic!("not an ACK: {other:?}"),
    }
}

/// Interop: the PSN an ACK names by ACK_PSN is acknowledged even when CACK does not reach it
/// (UE 1.0 §3.5.20.2.2; the reference provider marks it acknowledged). A probe's ACK carries an
/// opaque value in that field, which names nothing.
#[test]
fn the_psn_named_by_ack_psn_is_acknowledged_above_cack() {
    let cfg = cfg();
    let (mut i, _tg) = established(DeliveryMode::Rud);
    let _r5 = req(i.send(t(3), &cfg, false).unwrap());
    let _r6 = req(i.send(t(3), &cfg, false).unwrap());
    // PSN 5 is lost; the peer acknowledges 6 by name, CACK stays at 4.
    let probe = named_ack(4, 6, 19, 7, AckFlags::P);
    assert_eq!(i.handle_ack(t(4), &cfg, &probe).unwrap().acked, 0);
    assert!(!i.is_acked(6));
    let out = i.handle_ack(t(4), &cfg, &named_ack(4, 6, 19, 7, AckFlags::empty())).unwrap();
    assert_eq!(out.acked, 1);
    assert!(i.is_acked(6) && !i.is_acked(5));
    // A PSN never sent cannot be acknowledged by name either.
    assert!(i.handle_ack(t(4), &cfg, &named_ack(4, 9, 19, 7, AckFlags::empty())).is_err());
}

/// Interop: the initiator's ACK of a CLOSE_REQ in the reference provider's form names the
/// CLOSE_REQ's PSN with ACK_PSN; CACK may stay below it. An ACK naming another PSN is refused.
#[test]
fn a_close_req_is_acknowledged_by_ack_psn() {
    let cfg = cfg();
    let (_i, mut tg) = established(DeliveryMode::Rud);
    tg.request_close(t(10), &cfg).unwrap();
    let Some(TargetTx::Control(c)) = tg.poll_transmit(t(10)) else { panic!("CLOSE_REQ expected") };
    let c = ctl(c);
    assert_eq!(c.ctl_type, ControlType::CloseReq);
    // An ACK naming an older PSN does not acknowledge it: the CLOSE_REQ is resent.
    let wrong = named_ack(c.psn.wrapping_sub(3), c.psn.wrapping_sub(1), 7, 19, AckFlags::empty());
    tg.handle_ack(t(11), &cfg, &wrong).unwrap();
    let resend = tg.poll_timeout().unwrap();
    tg.handle_timeout(resend, &cfg);
    assert!(matches!(tg.poll_transmit(resend), Some(TargetTx::Control(c)) if c.ctl_type == ControlType::CloseReq));
    // One naming a PSN never sent is refused.
    let beyond = named_ack(c.psn.wrapping_sub(3), c.psn.wrapping_add(1), 7, 19, AckFlags::empty());
    assert!(tg.handle_ack(t(11), &cfg, &beyond).is_err());
    let by_name = named_ack(c.psn.wrapping_sub(3), c.psn, 7, 19, AckFlags::empty());
    tg.handle_ack(t(11), &cfg, &by_name).unwrap();
    assert_eq!(tg.state(), TargetState::CloseReqWait);
    // Acknowledged: the CLOSE_REQ is not sent again; the target waits for the CLOSE.
    let next = tg.poll_timeout().unwrap();
    tg.handle_timeout(next, &cfg);
    assert!(!matches!(tg.poll_transmit(next), Some(TargetTx::Control(c)) if c.ctl_type == ControlType::CloseReq));
}

/// An ACK_CC with MPR 0 does not stop the PDC: the peer gives no range, and only the PDC's own
/// window limits it (the reference provider's reading). An MPR counts only with a newer CACK.
#[test]
fn mpr_zero_means_no_range_from_the_peer() {
    use crate::pds::{AckCc, CcState};
    let cfg = cfg();
    let ack_cc = |cack: u32, mpr: u8| {
        let mut a = named_ack(cack, cack, 19, 7, AckFlags::empty());
        let state =
            CcState::Nscc { service_time: 0, restore_cwnd: false, rcv_cwnd_pend: 0, rcvd_bytes: 0, ooo_count: 0 };
        a.ext = AckExtension::Cc(AckCc { mpr, sack_psn_offset: 0, sack_bitmap: 0, state });
        a
    };
    let room = |i: &Initiator<16>| {
        let mut probe = i.clone();
        let mut n = 0;
        while probe.can_send(&cfg) {
            probe.send(t(4), &cfg, false).unwrap();
            n += 1;
        }
        n
    };
    let mut i = Initiator::<16>::new(&cfg, DeliveryMode::Rud, 7, 4);
    i.send(t(0), &cfg, true).unwrap();
    i.handle_ack(t(1), &cfg, &ack_cc(4, 0)).unwrap();
    assert_eq!(room(&i), Initiator::<16>::MP_RANGE);
    // The same CACK with MPR 1 is not newer: ignored. A newer one counts.
    i.handle_ack(t(1), &cfg, &ack_cc(4, 1)).unwrap();
    assert_eq!(room(&i), Initiator::<16>::MP_RANGE);
    i.send(t(2), &cfg, true).unwrap();
    i.handle_ack(t(3), &cfg, &ack_cc(5, 1)).unwrap();
    assert_eq!(room(&i), config::MPR_GRANULARITY);
}

/// A close-class NACK whose code leaves the target's PDC in place (PDC_HDR_MISMATCH, CLOSING,
/// UNEXP_EVENT, ...) fails the PDC and sends a CLOSE so the target frees it too; INV_DPDCID and
/// CLOSING_IN_ERR say there is nothing left to close.
#[test]
fn close_class_nacks_close_the_target_pdc_too() {
    let cfg = cfg();
    for (code, closes) in [
        (NackCode::PdcHdrMismatch, true),
        (NackCode::Closing, true),
        (NackCode::UnexpEvent, true),
        (NackCode::PdcModeMismatch, true),
        (NackCode::InvDpdcid, false),
        (NackCode::ClosingInErr, false),
    ] {
        let (mut i, _tg) = established(DeliveryMode::Rud);
        let s = i.send(t(3), &cfg, false).unwrap();
        let n = nack(Nack::for_pdc(code, s.psn, 19, 7));
        assert_eq!(i.handle_nack(t(4), &cfg, &n), Ok(NackClass::Close));
        assert_eq!(i.poll_event(), Some(InitiatorEvent::Failed(Failure::Nack(code))));
        if closes {
            assert_eq!(i.state(), InitiatorState::CloseAckWait, "{code:?}");
            let Some(InitiatorTx::Control(c)) = i.poll_transmit(t(4)) else { panic!("no CLOSE after {code:?}") };
            assert_eq!(c.ctl_type, ControlType::Close);
        } else {
            assert_eq!(i.state(), InitiatorState::Closed, "{code:?}");
        }
    }
}

/// `Enb_ACK_Per_Pkt`: every request asks for an ACK.
#[test]
fn ack_per_packet_sets_ar_on_every_request() {
    let mut cfg = cfg();
    let (mut i, _tg) = established(DeliveryMode::Rud);
    assert!(!i.send(t(3), &cfg, false).unwrap().flags.contains(RequestFlags::AR));
    cfg.ack.per_packet = true;
    assert!(i.send(t(3), &cfg, false).unwrap().flags.contains(RequestFlags::AR));
}

proptest::proptest! {
    /// Over any sequence of target events (arrivals in any order, duplicates, held responses,
    /// clears through later requests and CLEARs, lost ACKs, resends), the CACK_PSN of the ACKs the
    /// target sends never moves back (serial order): a cumulative acknowledgement is final for
    /// every peer.
    #[test]
    fn cack_never_moves_back(ops in proptest::collection::vec((0u8..5, proptest::prelude::any::<u8>()), 1..300)) {
        let cfg = cfg();
        let (mut i, mut tg) = established(DeliveryMode::Rud);
        let mut sent: Vec<Request> = Vec::new();
        let mut last_cack = ack_of(TargetTx::Ack(tg.ack())).cack_psn;
        let mut now = t(10);
        for (op, x) in ops {
            match op {
                0 => {
                    if i.can_send(&cfg) {
                        sent.push(req(i.send(now, &cfg, x & 1 == 0).unwrap()));
                    }
                }
                1 => {
                    if let Some(&r) = sent.get(usize::from(x) % sent.len().max(1)) {
                        let fresh = tg.response_room(&r);
                        if let Ok(v) = tg.handle_request(now, &cfg, &r, 100, false) {
                            if v == Delivery::New && fresh && x & 2 == 0 {
                                let _ = tg.hold_response(r.psn, atomic_response(8));
                            }
                        }
                    }
                }
                2 => {
                    while let Some(tx) = tg.poll_transmit(now) {
                        if let TargetTx::Ack(a) = tx {
                            let a = ack_of(TargetTx::Ack(a));
                            proptest::prop_assert!(!psn_after(last_cack, a.cack_psn), "CACK {} after {}", a.cack_psn, last_cack);
                            last_cack = a.cack_psn;
                            if x & 1 == 0 {
                                let _ = i.handle_ack(now, &cfg, &a);
                            }
                        }
                    }
                }
                3 => {
                    now = now.saturating_add(Duration::from_micros(u64::from(x) * 20));
                    i.handle_timeout(now, &cfg);
                    tg.handle_timeout(now, &cfg);
                }
                _ => {
                    while let Some(tx) = i.poll_transmit(now) {
                        match tx {
                            InitiatorTx::Resend(s) => sent.push(req(s)),
                            InitiatorTx::Control(c) if c.ctl_type == ControlType::Clear => {
                                let _ = tg.handle_control(now, &cfg, &ctl(c));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
    }
}

proptest::proptest! {
    /// A return direction rebuilt from what it keeps when idle ([`ReturnDirection::resume`], as
    /// an endpoint's pool does each time one goes idle) behaves exactly as the one it replaced:
    /// over any sequence of read data sent, lost, reordered, acknowledged, NACKed (ROD) and
    /// resent on timeouts, twin targets, one of them rebuilt whenever idle, give the same packets,
    /// outcomes and deadlines.
    #[test]
    fn an_idle_return_direction_resumes_exactly(
        rod in proptest::prelude::any::<bool>(),
        ops in proptest::collection::vec((0u8..5, proptest::prelude::any::<u8>()), 1..300),
    ) {
        let cfg = cfg();
        let (mut i, mut a) = established(if rod { DeliveryMode::Rod } else { DeliveryMode::Rud });
        let mut b = a.clone();
        let mut flight: Vec<Request> = Vec::new();
        let mut now = t(10);
        let mut sent = 0;
        let same = |a: &Target, b: &Target| {
            (a.can_send(), a.has_pending(), a.poll_timeout(), a.return_window(), a.timeouts())
                == (b.can_send(), b.has_pending(), b.poll_timeout(), b.return_window(), b.timeouts())
                && (a.rtt().smoothed(), a.rtt().variation()) == (b.rtt().smoothed(), b.rtt().variation())
        };
        for step in 0..ops.len() + 80 {
            // The ops, then a drain that delivers and acknowledges everything.
            let (op, x) = ops.get(step).copied().unwrap_or(((step % 4) as u8 + 1, 0));
            match op {
                0 => {
                    if a.can_send() {
                        let (sa, sb) = (a.send(now, &cfg, x & 1 == 0), b.send(now, &cfg, x & 1 == 0));
                        proptest::prop_assert_eq!(sa, sb);
                        flight.push(data(sa.unwrap()));
                        sent += 1;
                    }
                }
                1 if step >= ops.len() => {
                    for d in flight.drain(..) {
                        let _ = i.handle_data(now, &cfg, &d, 100, false);
                    }
                }
                1 => {
                    if !flight.is_empty() {
                        let d = flight.remove(usize::from(x) % flight.len());
                        if x & 0x80 == 0 {
                            let _ = i.handle_data(now, &cfg, &d, 100, false);
                        }
                    }
                }
                2 => {
                    while let Some(tx) = i.poll_transmit(now) {
                        let deliver = x & 1 == 0 || step >= ops.len();
                        match tx {
                            InitiatorTx::Ack(ack) if deliver => {
                                let ack = ack_of(TargetTx::Ack(ack));
                                proptest::prop_assert_eq!(a.handle_ack(now, &cfg, &ack), b.handle_ack(now, &cfg, &ack));
                            }
                            InitiatorTx::Nack(n) if deliver => {
                                let n = nack(n);
                                proptest::prop_assert_eq!(a.handle_nack(now, &cfg, &n), b.handle_nack(now, &cfg, &n));
                            }
                            _ => {}
                        }
                    }
                }
                3 => {
                    now = now.saturating_add(Duration::from_micros(u64::from(x) * 20 + 1));
                    // The drain runs to the return direction's next deadline (RTO or reorder
                    // window; not the idle timeout's, which would close the PDC).
                    let soon = now.saturating_add(Duration::from_millis(10_000));
                    if let Some(due) = a.poll_timeout().filter(|&d| step >= ops.len() && d < soon) {
                        now = now.max(due);
                    }
                    a.handle_timeout(now, &cfg);
                    b.handle_timeout(now, &cfg);
                    i.handle_timeout(now, &cfg);
                }
                _ => loop {
                    let (ta, tb) = (a.poll_transmit(now), b.poll_transmit(now));
                    proptest::prop_assert_eq!(ta, tb);
                    match ta {
                        Some(TargetTx::Resend(s)) => flight.push(data(s)),
                        Some(_) => {}
                        None => break,
                    }
                },
            }
            proptest::prop_assert!(same(&a, &b), "the twins differ after step {step}");
            proptest::prop_assert_eq!(a.return_window().outstanding(), b.return_window().outstanding());
            b.rest_return_direction();
            proptest::prop_assert!(same(&a, &b), "the rebuilt twin differs after step {step}");
        }
        // Everything was delivered and acknowledged in the drain, and its timers ran out: the
        // return direction ended idle, so the twin was rebuilt after its last packet. (Unless
        // the PDC failed first: then its packets were given up, and an endpoint frees it.)
        if a.state() != TargetState::Closed {
            proptest::prop_assert_eq!(a.return_window().outstanding(), 0, "{} sent", sent);
            proptest::prop_assert!(b.rest_return_direction(), "not idle after the drain");
        }
    }
}

/// Read data stamped by the target, as it arrives at the initiator.
fn data(stamp: Stamp) -> Request {
    match wire(PdsHeader::Request(stamp.request(NextHeader::RspData, None))) {
        PdsHeader::Request(r) => r,
        other => panic!("not a request: {other:?}"),
    }
}

proptest::proptest! {
    /// The initiator's side of the same: its return direction rebuilt from what it keeps when
    /// idle ([`ReturnReceiver::resume`]) behaves exactly as the one it replaced. Twin initiators,
    /// one rebuilt whenever its return direction is idle, take the same read data (lost,
    /// duplicated, reordered), ACK_REQ probes and CLOSE_REQ from one target, and must answer
    /// with the same packets and deliveries.
    #[test]
    fn an_idle_initiator_return_direction_resumes_exactly(
        rod in proptest::prelude::any::<bool>(),
        ops in proptest::collection::vec((0u8..6, proptest::prelude::any::<u8>()), 1..300),
    ) {
        let cfg = cfg();
        let (mut a, mut tg) = established(if rod { DeliveryMode::Rod } else { DeliveryMode::Rud });
        let mut b = a.clone();
        let mut flight: Vec<Request> = Vec::new();
        let mut now = t(10);
        for step in 0..ops.len() + 80 {
            // The ops, then a drain that delivers and acknowledges everything.
            let (op, x) = ops.get(step).copied().unwrap_or(((step % 4) as u8 + 1, 0));
            match op {
                0 => {
                    if tg.can_send() {
                        flight.push(data(tg.send(now, &cfg, x & 1 == 0).unwrap()));
                    }
                }
                1 => {
                    // One packet of the flight (all of them in the drain), to both twins; a
                    // copy stays in flight now and then (a duplicate).
                    let n = if step >= ops.len() { flight.len() } else { usize::from(!flight.is_empty()) };
                    for _ in 0..n {
                        let d = flight.remove(usize::from(x) % flight.len());
                        if x & 0x40 != 0 && step < ops.len() {
                            flight.push(d);
                        }
                        let (da, db) = (a.handle_data(now, &cfg, &d, 100, false), b.handle_data(now, &cfg, &d, 100, false));
                        proptest::prop_assert_eq!(da, db);
                    }
                }
                2 => loop {
                    let (ta, tb) = (a.poll_transmit(now), b.poll_transmit(now));
                    proptest::prop_assert_eq!(ta, tb);
                    let deliver = x & 1 == 0 || step >= ops.len();
                    match ta {
                        Some(InitiatorTx::Ack(ack)) if deliver => {
                            let _ = tg.handle_ack(now, &cfg, &ack_of(TargetTx::Ack(ack)));
                        }
                        Some(InitiatorTx::Nack(n)) if deliver => {
                            let _ = tg.handle_nack(now, &cfg, &nack(n));
                        }
                        Some(_) => {}
                        None => break,
                    }
                },
                3 => {
                    now = now.saturating_add(Duration::from_micros(u64::from(x) * 20 + 1));
                    // The drain runs to the target's next return-direction deadline.
                    let soon = now.saturating_add(Duration::from_millis(10_000));
                    if let Some(due) = tg.poll_timeout().filter(|&d| step >= ops.len() && d < soon) {
                        now = now.max(due);
                    }
                    tg.handle_timeout(now, &cfg);
                    a.handle_timeout(now, &cfg);
                    b.handle_timeout(now, &cfg);
                }
                4 => {
                    while let Some(tx) = tg.poll_transmit(now) {
                        match tx {
                            TargetTx::Resend(s) => flight.push(data(s)),
                            TargetTx::Control(c) if x & 0x80 == 0 || step >= ops.len() => {
                                let c = ctl(c);
                                proptest::prop_assert_eq!(a.handle_control(now, &c), b.handle_control(now, &c));
                            }
                            _ => {}
                        }
                    }
                }
                _ => {
                    if x == 0 {
                        let _ = tg.request_close(now, &cfg);
                    }
                }
            }
            proptest::prop_assert_eq!(
                (a.has_pending(), a.return_window(), a.state(), a.poll_timeout()),
                (b.has_pending(), b.return_window(), b.state(), b.poll_timeout()),
                "the twins differ after step {}", step
            );
            b.rest_return_direction();
        }
        // Everything was delivered and acknowledged in the drain: the return direction ended
        // idle, so the twin was rebuilt after its last packet. (Unless the target gave its read
        // data up first: a ROD gap then stays NACKed, and an endpoint frees the PDC's entry with
        // the PDC.)
        if tg.failure().is_none() {
            proptest::prop_assert!(b.rest_return_direction(), "not idle after the drain");
        }
    }
}

/// The return direction's ACKs: a late packet that fills a gap behind the last ACK is ACKed at
/// once, as the target does for requests; the target's ACK_REQ of a return PSN (the reference
/// provider's probe after a lost ACK) is answered by an ACK if it arrived, else NACK
/// PKT_NOT_RCVD, which resends it; and return data not yet acknowledged is acknowledged before
/// the CLOSE.
#[test]
fn return_direction_acks_gaps_probes_and_before_close() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let d4 = data(tg.send(t(3), &cfg, false).unwrap());
    let d5 = data(tg.send(t(3), &cfg, true).unwrap());
    let d6 = data(tg.send(t(3), &cfg, false).unwrap());
    assert_eq!((d4.psn, d5.psn, d6.psn), (4, 5, 6));
    assert_eq!(i.handle_data(t(4), &cfg, &d5, 1024, false).unwrap(), Delivery::New);
    let Some(InitiatorTx::Ack(a)) = i.poll_transmit(t(4)) else { panic!("AR draws an ACK") };
    assert_eq!((a.cack_psn, a.ack_psn()), (3, 5));
    tg.handle_ack(t(4), &cfg, &a).unwrap();
    // PSN 4, without AR and far below ACK_Gen_Trigger, fills the gap: ACKed at once.
    assert_eq!(i.handle_data(t(5), &cfg, &d4, 1024, false).unwrap(), Delivery::New);
    let Some(InitiatorTx::Ack(a)) = i.poll_transmit(t(5)) else { panic!("a filled gap draws an ACK") };
    assert_eq!(a.cack_psn, 5);
    tg.handle_ack(t(5), &cfg, &a).unwrap();
    // The target probes PSN 5 (arrived) and PSN 6 (lost).
    let probe = |psn| Control {
        ctl_type: ControlType::AckReq,
        flags: ControlFlags::empty(),
        probe_opaque: 0,
        psn,
        spdcid: 19,
        dest: PdcDest::Established { dpdcid: 7 },
        payload: 0,
    };
    i.handle_control(t(6), &ctl(probe(5))).unwrap();
    let Some(InitiatorTx::Ack(a)) = i.poll_transmit(t(6)) else { panic!("a probe of an arrived PSN draws an ACK") };
    assert_eq!((a.cack_psn, a.ack_psn()), (5, 5));
    i.handle_control(t(6), &ctl(probe(6))).unwrap();
    let Some(InitiatorTx::Nack(n)) = i.poll_transmit(t(6)) else { panic!("a probe of a lost PSN draws a NACK") };
    assert_eq!((n.code, n.target), (NackCode::PktNotRcvd, NackTarget::Pdc { psn: 6, spdcid: 7, dpdcid: 19 }));
    assert_eq!(tg.handle_nack(t(6), &cfg, &n).unwrap(), NackClass::Retransmit);
    let Some(TargetTx::Resend(r6)) = tg.poll_transmit(t(6)) else { panic!("the NACK resends PSN 6") };
    assert_eq!(r6.psn, 6);
    // PSN 6 arrives without AR; the initiator closes: its ACK goes before the CLOSE.
    assert_eq!(i.handle_data(t(7), &cfg, &d6, 1024, false).unwrap(), Delivery::New);
    assert_eq!(i.poll_transmit(t(7)), None, "coalesced");
    i.close(t(7), &cfg).unwrap();
    let Some(InitiatorTx::Ack(a)) = i.poll_transmit(t(7)) else { panic!("the return ACK goes first") };
    assert_eq!(a.cack_psn, 6);
    assert!(matches!(i.poll_transmit(t(7)), Some(InitiatorTx::Control(c)) if c.ctl_type == ControlType::Close));
    tg.handle_ack(t(8), &cfg, &a).unwrap();
    assert_eq!(tg.return_window().outstanding(), 0);
}

/// A target that gives up its return direction closes in error with NACK CLOSING_IN_ERR naming
/// its next expected PSN, which is the initiator's next PSN once everything was acknowledged:
/// the initiator takes it and fails, so a READ waiting for data does not wait forever.
#[test]
fn closing_in_err_at_the_next_psn_fails_the_initiator() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    tg.send(t(3), &cfg, true).unwrap();
    let mut now;
    let nack = loop {
        now = tg.poll_timeout().unwrap();
        tg.handle_timeout(now, &cfg);
        match tg.poll_transmit(now) {
            Some(TargetTx::Nack(n)) => break n,
            Some(TargetTx::Resend(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(tg.failure(), Some(Failure::RetriesExhausted));
    assert_eq!(nack.code, NackCode::ClosingInErr);
    let NackTarget::Pdc { psn, .. } = nack.target else { panic!("a PDC NACK") };
    assert_eq!(psn, i.window().next_psn());
    assert_eq!(i.handle_nack(now, &cfg, &nack).unwrap(), NackClass::Close);
    assert_eq!(i.failure(), Some(Failure::Nack(NackCode::ClosingInErr)));
}

proptest::proptest! {
    /// An initiator PDC rebuilt from what it keeps when idle ([`InitiatorCore::resume`], as an
    /// endpoint's pool does each time one goes idle) behaves exactly as the one it replaced.
    /// Twin initiators, one rebuilt whenever idle, send the same requests to one target over a
    /// path that loses, duplicates and reorders them and their ACKs, take the same NACKs (of
    /// every class the target sends, and resource shortages), requests for a CLEAR, timeouts,
    /// SLEEK probes and recoveries, and closes, and must give the same packets, outcomes, events
    /// and deadlines.
    #[test]
    fn an_idle_initiator_resumes_exactly(
        rod in proptest::prelude::any::<bool>(),
        sleek in proptest::prelude::any::<bool>(),
        ops in proptest::collection::vec((0u8..8, proptest::prelude::any::<u8>()), 1..300),
    ) {
        use crate::pdc::SleekLimits;
        let cfg = cfg();
        let (mut a, mut tg) = established(if rod { DeliveryMode::Rod } else { DeliveryMode::Rud });
        if sleek {
            a.use_sleek();
        }
        let mut b = a.clone();
        let mut flight: Vec<Request> = Vec::new();
        let mut now = t(10);
        let limits = SleekLimits { threshold: 3, window: 8, probe_after: Duration::from_micros(50) };
        let same = |a: &mut Initiator, b: &mut Initiator| {
            (a.state(), a.window(), a.has_pending(), a.poll_timeout(), a.timeouts(), a.failure())
                == (b.state(), b.window(), b.has_pending(), b.poll_timeout(), b.timeouts(), b.failure())
                && (a.rtt().smoothed(), a.rtt().variation(), a.recovering(), a.requests_in_flight())
                    == (b.rtt().smoothed(), b.rtt().variation(), b.recovering(), b.requests_in_flight())
                && a.can_send(&cfg) == b.can_send(&cfg)
                && a.poll_event() == b.poll_event()
        };
        for step in 0..ops.len() + 120 {
            // The ops, then a drain that delivers and acknowledges everything.
            let drain = step >= ops.len();
            let (op, x) = ops.get(step).copied().unwrap_or(((step % 4) as u8 + 1, 0));
            match op {
                0 => {
                    if a.can_send(&cfg) {
                        let (sa, sb) = (a.send(now, &cfg, x & 1 == 0), b.send(now, &cfg, x & 1 == 0));
                        proptest::prop_assert_eq!(sa, sb);
                        flight.push(req(sa.unwrap()));
                    }
                }
                1 => {
                    // One request of the flight (all of them in the drain) to the target; a copy
                    // stays in flight now and then (a duplicate), and one is lost now and then.
                    let n = if drain { flight.len() } else { usize::from(!flight.is_empty()) };
                    for _ in 0..n {
                        let r = flight.remove(usize::from(x) % flight.len());
                        if x & 0x40 != 0 && !drain {
                            flight.push(r);
                        }
                        if x & 0x80 == 0 || drain {
                            let _ = tg.handle_request(now, &cfg, &r, 100, false);
                        }
                    }
                }
                2 => {
                    while let Some(tx) = tg.poll_transmit(now) {
                        let deliver = x & 1 == 0 || drain;
                        match tx {
                            TargetTx::Ack(_) if deliver => {
                                let mut ack = ack_of(tx);
                                if x & 6 == 6 {
                                    // As a target holding guaranteed-delivery state asks (the
                                    // reference provider's does): a CLEAR, retried by RTO.
                                    ack.request = AckRequest::Clear;
                                }
                                let (oa, ob) = (a.handle_ack(now, &cfg, &ack), b.handle_ack(now, &cfg, &ack));
                                proptest::prop_assert_eq!(oa, ob);
                                if sleek && oa.is_ok() {
                                    proptest::prop_assert_eq!(a.run_sleek(now, &ack, limits), b.run_sleek(now, &ack, limits));
                                }
                            }
                            TargetTx::Nack(n) if deliver => {
                                let n = nack(n);
                                proptest::prop_assert_eq!(a.handle_nack(now, &cfg, &n), b.handle_nack(now, &cfg, &n));
                            }
                            TargetTx::Control(c) if deliver => {
                                // The target's CLOSE_REQ (the PDC quiesces, idle or not).
                                let c = ctl(c);
                                proptest::prop_assert_eq!(a.handle_control(now, &c), b.handle_control(now, &c));
                            }
                            _ => {}
                        }
                    }
                }
                3 => {
                    now = now.saturating_add(Duration::from_micros(u64::from(x) * 20 + 1));
                    // The drain runs to the initiator's next deadline (not the target's idle
                    // timeout, which would close its PDC).
                    let soon = now.saturating_add(Duration::from_millis(10_000));
                    if let Some(due) = a.poll_timeout().filter(|&d| drain && d < soon) {
                        now = now.max(due);
                    }
                    a.handle_timeout(now, &cfg);
                    b.handle_timeout(now, &cfg);
                    tg.handle_timeout(now, &cfg);
                }
                4 => loop {
                    let (ta, tb) = (a.poll_transmit(now), b.poll_transmit(now));
                    proptest::prop_assert_eq!(ta, tb);
                    match ta {
                        Some(InitiatorTx::Resend(s)) => flight.push(req(s)),
                        Some(InitiatorTx::Control(c)) if x & 0x80 == 0 || drain => {
                            let _ = tg.handle_control(now, &cfg, &ctl(c));
                        }
                        Some(_) => {}
                        None => break,
                    }
                },
                5 if x % 32 == 0 && !drain => {
                    // A target closing in error names the next PSN, which closes even an idle
                    // PDC (rarely: the run ends there).
                    let code = if x & 32 == 0 { NackCode::ClosingInErr } else { NackCode::InvDpdcid };
                    let n = nack(Nack::for_pdc(code, a.window().next_psn(), 19, 7));
                    proptest::prop_assert_eq!(a.handle_nack(now, &cfg, &n), b.handle_nack(now, &cfg, &n));
                }
                5 => {
                    // A NACK of a PSN sent: a resource shortage (held resend), a packet not
                    // received, or (ROD) out of order.
                    let sent = a.window().next_psn().wrapping_sub(a.window().base());
                    if sent > 0 && !drain {
                        let psn = a.window().base().wrapping_add(u32::from(x) % sent);
                        let code = match x % 3 {
                            0 => NackCode::NoPktBuffer,
                            1 => NackCode::PktNotRcvd,
                            _ if rod => NackCode::RodOoo,
                            _ => NackCode::NoGtdDelAvail,
                        };
                        let n = nack(Nack::for_pdc(code, psn, 19, 7));
                        proptest::prop_assert_eq!(a.handle_nack(now, &cfg, &n), b.handle_nack(now, &cfg, &n));
                    }
                }
                6 => {
                    if sleek && x & 1 == 0 {
                        a.recover();
                        b.recover();
                    }
                }
                _ => {
                    // Closes come late and rarely: most runs keep the PDC open.
                    if x == 0 {
                        proptest::prop_assert_eq!(a.request_close(), b.request_close());
                    } else if x == 1 {
                        proptest::prop_assert_eq!(a.close(now, &cfg), b.close(now, &cfg));
                    } else if x == 2 {
                        let _ = tg.request_close(now, &cfg);
                    }
                }
            }
            proptest::prop_assert!(same(&mut a, &mut b), "the twins differ after step {}", step);
            let base = b.window().base();
            let psns = [base.wrapping_sub(2), base.wrapping_sub(1), base, base.wrapping_add(1), u32::from(x)];
            proptest::prop_assert_ne!(b.idle_form_agrees(&cfg, &psns), Some(false), "after step {}", step);
            b.rest_request_direction();
            proptest::prop_assert!(same(&mut a, &mut b), "the rebuilt twin differs after step {}", step);
        }
        // Everything was delivered and acknowledged in the drain, and the timers ran out: the
        // PDC ended idle, so the twin was rebuilt after its last packet. (Unless it failed, or
        // its CLOSE went unanswered or was refused: an endpoint frees it then.)
        if a.failure().is_none() && a.state() != InitiatorState::CloseAckWait && a.state() != InitiatorState::Closed {
            proptest::prop_assert_eq!(a.outstanding(), 0);
            proptest::prop_assert!(b.rest_request_direction(), "not idle after the drain");
        }
    }
}

/// A new initiator PDC is idle before its first packet, and one rebuilt from that idle form
/// opens the PDC as the original does: the same SYN stamps, ACK outcomes, events and state.
#[test]
fn a_new_initiator_resumes_exactly() {
    let cfg = cfg();
    let mut a = Initiator::<2>::new(&cfg, DeliveryMode::Rud, 7, 4);
    a.use_sleek();
    let mut b = a.clone();
    assert!(b.rest_request_direction(), "a new PDC is idle");
    assert_eq!(b, a, "and rebuilt whole");
    let (ra, rb) = (a.send(t(0), &cfg, false).unwrap(), b.send(t(0), &cfg, false).unwrap());
    assert_eq!(ra, rb);
    assert!(ra.syn());
    let r = req(ra);
    let mut tg = Target::<2>::new(t(1), &cfg, 19, &r, StartPolicy::Open).unwrap();
    tg.handle_request(t(1), &cfg, &r, 100, false).unwrap();
    let ack = ack_of(tg.poll_transmit(t(1)).unwrap());
    assert_eq!(a.handle_ack(t(2), &cfg, &ack), b.handle_ack(t(2), &cfg, &ack));
    assert!(b.rest_request_direction(), "idle again once its packet is acknowledged");
    assert_eq!((a.poll_event(), a.state()), (b.poll_event(), b.state()));
    assert_eq!(b.state(), InitiatorState::Established);
    assert_eq!(a.send(t(3), &cfg, true), b.send(t(3), &cfg, true));
}

/// The wait after a NACK for want of a resource (`NACK_Retx_Time`) holds back the resends of
/// the packets it refused, and ends once no packet waits to be resent: a later loss is resent at
/// once.
#[test]
fn a_resource_hold_ends_once_nothing_waits_to_be_resent() {
    let cfg = cfg();
    let (mut i, mut tg) = established(DeliveryMode::Rud);
    let r5 = req(i.send(t(10), &cfg, true).unwrap());
    i.handle_nack(t(11), &cfg, &nack(Nack::for_pdc(NackCode::NoPktBuffer, r5.psn, 19, 7))).unwrap();
    assert_eq!(i.poll_transmit(t(12)), None, "the refused packet waits out NACK_Retx_Time");
    // A late copy of the request arrives after all, and its ACK ends the hold.
    tg.handle_request(t(12), &cfg, &r5, 100, false).unwrap();
    let ack = ack_of(tg.poll_transmit(t(12)).unwrap());
    i.handle_ack(t(13), &cfg, &ack).unwrap();
    assert_eq!(i.outstanding(), 0);
    let r6 = req(i.send(t(14), &cfg, true).unwrap());
    i.handle_nack(t(15), &cfg, &nack(Nack::for_pdc(NackCode::PktNotRcvd, r6.psn, 19, 7))).unwrap();
    assert!(
        matches!(i.poll_transmit(t(15)), Some(InitiatorTx::Resend(s)) if s.psn == r6.psn),
        "a packet not received is resent at once"
    );
}
