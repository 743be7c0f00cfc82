//! The retry handshake step by step.

use super::*;

type L = Llr<[u8; ENTRY * 32], 32>;

fn llr() -> L {
    L::new(LlrConfig::default(), [0; ENTRY * 32]).unwrap()
}

fn body(tag: u8) -> [u8; 64] {
    // A protocol flit: Type 0, empty slots (H0, G1, G1, G1), a marker byte in slot 3.
    let mut b = [0u8; 64];
    b[1] = 0b0100_0001; // slot 1 = G1 (bits 10:8), slot 2 = G1 (bits 13:11)
    b[2] = 0b0000_0001 << 6; // slot 3 = G1 (bits 16:14): bit 14
    b[63] = tag;
    b
}

/// Sends every flit `from` has into `to`, corrupting the ones `lose` picks; returns what `to`
/// delivered.
fn pump(from: &mut L, to: &mut L, mut lose: impl FnMut(usize) -> bool) -> Vec<Delivered> {
    let mut got = Vec::new();
    let mut out = [0u8; ENTRY];
    let mut i = 0;
    while from.poll_transmit(&mut out).is_some() {
        if lose(i) {
            out[10] ^= 1;
        }
        if let Some(d) = to.handle_flit(&out, false) {
            got.push(d);
        }
        i += 1;
        if i > 200 {
            break;
        }
    }
    got
}

/// One flit time each way; what each end delivered.
fn exchange(a: &mut L, b: &mut L) -> (Option<Delivered>, Option<Delivered>) {
    let mut out = [0u8; ENTRY];
    let at_b = a.poll_transmit(&mut out).and_then(|_| b.handle_flit(&out, false));
    let at_a = b.poll_transmit(&mut out).and_then(|_| a.handle_flit(&out, false));
    (at_a, at_b)
}

/// Brings both ends up.
fn up() -> (L, L) {
    let (mut a, mut b) = (llr(), llr());
    for _ in 0..4 {
        exchange(&mut a, &mut b);
    }
    assert!(a.is_initialized() && b.is_initialized());
    (a, b)
}

#[test]
fn initialization_idles_then_exchanges_init_param() {
    let (mut a, mut b) = (llr(), llr());
    assert_eq!(a.send(&body(1), FlitKind::Protocol, false), Err(LlrError::NotInitialized));
    assert!(!a.can_send());
    // Both send RETRY.Idle until they hear an error-free flit, then INIT.Param.
    let mut out = [0u8; ENTRY];
    assert_eq!(a.poll_transmit(&mut out), Some(Sent::Retry));
    assert_eq!(ControlFlit::parse(&out), Ok(ControlFlit::RetryIdle));
    assert_eq!(b.handle_flit(&out, false), None);
    assert_eq!(b.poll_transmit(&mut out), Some(Sent::New));
    assert_eq!(ControlFlit::parse(&out), Ok(ControlFlit::InitParam { version: 0b0010, wrap: 31 }));
    assert_eq!(
        a.handle_flit(&out, false),
        Some(Delivered::Control(ControlFlit::InitParam { version: 0b0010, wrap: 31 }))
    );
    assert!(!a.is_initialized(), "A has not sent its own INIT.Param yet");
    assert_eq!(a.poll_transmit(&mut out), Some(Sent::New));
    b.handle_flit(&out, false);
    assert!(a.is_initialized() && b.is_initialized());
    a.send(&body(1), FlitKind::Protocol, false).unwrap();
    assert_eq!(pump(&mut a, &mut b, |_| false), vec![Delivered::Protocol]);
    assert_eq!(b.acks_owed(), 2);
    assert_eq!(b.poll_event(), None);
    // B, idle, acknowledges both with one LLCRD; A frees its two entries.
    let got = pump(&mut b, &mut a, |_| false);
    assert_eq!(got.len(), 1, "B's LLCRD");
    assert_eq!(a.unacknowledged(), 0);
    assert_eq!(b.acks_owed(), 0);
}

#[test]
fn a_retry_flit_with_a_wrong_fixed_bit_counts_as_a_crc_error() {
    let (mut a, mut b) = up();
    let mut frame = [0u8; ENTRY];
    frame[..16].copy_from_slice(&ControlFlit::RetryFrame.emit());
    frame[20] = 1; // slot 1 is not zero
    crc::seal(&mut frame);
    assert_eq!(b.handle_flit(&frame, false), None);
    assert_eq!(b.local_state(), LocalState::LlrReq);
    // A retrain resets the RRSM and asks for a replay.
    a.handle_retrain();
    assert_eq!((a.local_state(), a.remote_state()), (LocalState::LlrReq, RemoteState::RemoteNormal));
}

/// A retrain while a retry waits for its Ack (RETRY_LOCAL_IDLE): the retry starts over with
/// NUM_RETRY 0 (Table 4-12), and the next RETRY.Req says so (before, the machine kept waiting
/// for the Ack the peer had dropped, and NUM_RETRY kept counting across retrains).
#[test]
fn a_retrain_starts_a_waiting_retry_over() {
    let (mut a, mut b) = up();
    a.send(&body(1), FlitKind::Protocol, false).unwrap();
    assert!(pump(&mut a, &mut b, |i| i == 0).is_empty());
    // Five RETRY.Frames and the RETRY.Req.
    let req = |b: &mut L| {
        let mut out = [0u8; ENTRY];
        for _ in 0..FRAMES + 1 {
            b.poll_transmit(&mut out).unwrap();
        }
        ControlFlit::parse(&out).unwrap()
    };
    assert!(matches!(req(&mut b), ControlFlit::RetryReq { num_retry: 0, .. }));
    assert_eq!(b.local_state(), LocalState::LocalIdle, "the Req went; its Ack is lost");
    b.handle_retrain();
    assert_eq!(b.local_state(), LocalState::LlrReq);
    assert!(matches!(req(&mut b), ControlFlit::RetryReq { num_retry: 0, .. }));
    assert_eq!(b.local_state(), LocalState::LocalIdle);
}

/// An LLCRD whose bytes 5–7 are not zero (reserved for it) is taken, credits and all; only a
/// RETRY flit must match its fixed bits.
#[test]
fn an_llcrd_with_reserved_bits_set_is_taken() {
    let (_, mut b) = up();
    let llcrd = ControlFlit::LlcrdAck {
        full_ack: 0,
        rsp_crd: super::super::header::Credit { mem: true, code: 3 },
        req_crd: super::super::header::Credit::default(),
        data_crd: super::super::header::Credit::default(),
    };
    let mut flit = [0u8; ENTRY];
    flit[..16].copy_from_slice(&llcrd.emit());
    flit[5..8].copy_from_slice(&[0xA5; 3]);
    crc::seal(&mut flit);
    assert_eq!(b.handle_flit(&flit, false), Some(Delivered::Control(llcrd)));
    assert_eq!((b.stats().crc_errors, b.local_state()), (0, LocalState::LocalNormal));
}

#[test]
fn a_crc_error_is_retried_and_replayed_in_order() {
    let (mut a, mut b) = up();
    for t in 0..4 {
        a.send(&body(t), FlitKind::Protocol, false).unwrap();
    }
    // The second protocol flit is corrupted: B delivers one, then asks for a retry.
    let got = pump(&mut a, &mut b, |i| i == 1);
    assert_eq!(got.len(), 1);
    assert_eq!(b.local_state(), LocalState::LlrReq);
    assert_eq!(b.stats().crc_errors, 1);
    // B sends five frames and the Req; A answers with five frames, the Ack and the replay.
    let mut out = [0u8; ENTRY];
    let mut kinds = Vec::new();
    for _ in 0..6 {
        kinds.push(b.poll_transmit(&mut out).unwrap());
        a.handle_flit(&out, false);
    }
    assert_eq!(b.local_state(), LocalState::LocalIdle);
    assert!(kinds.iter().all(|k| *k == Sent::Retry));
    assert_eq!(a.remote_state(), RemoteState::LlrAck);
    let mut delivered = Vec::new();
    for _ in 0..12 {
        let Some(_) = a.poll_transmit(&mut out) else { break };
        if let Some(Delivered::Protocol) = b.handle_flit(&out, false) {
            delivered.push(out[63]);
        }
    }
    assert_eq!(b.local_state(), LocalState::LocalNormal);
    assert_eq!(delivered, vec![1, 2, 3]);
    assert_eq!(a.stats().replayed, 3);
}

#[test]
fn retries_escalate_to_phy_reinit_and_abort() {
    let cfg = LlrConfig { max_num_retry: 2, max_num_phy_reinit: 1, timeout: 8, ..LlrConfig::default() };
    let mut b = L::new(cfg, [0; ENTRY * 32]).unwrap();
    let mut bad = [0u8; ENTRY];
    bad[0] = 2; // a CRC error
    assert_eq!(b.handle_flit(&bad, false), None);
    let mut out = [0u8; ENTRY];
    // Nobody answers: the Req repeats after each TIMEOUT, then the PHY is retrained once,
    // then the link aborts.
    for _ in 0..200 {
        if b.poll_transmit(&mut out).is_none() {
            break;
        }
        if b.local_state() == LocalState::PhyReinit {
            assert_eq!(b.poll_event(), Some(Event::PhyReinit));
            b.handle_phy_reinit_done();
        }
    }
    assert_eq!(b.local_state(), LocalState::Abort);
    assert_eq!(b.poll_event(), Some(Event::Abort));
    assert_eq!(b.send(&body(0), FlitKind::Protocol, false), Err(LlrError::Aborted));
}

#[test]
fn config_is_checked() {
    assert_eq!(
        Llr::<[u8; 100], 32>::new(LlrConfig::default(), [0; 100]).err(),
        Some(LlrError::Config { needed: 32 * ENTRY, got: 100 })
    );
    assert!(Llr::<[u8; ENTRY * 21], 21>::new(LlrConfig::default(), [0; ENTRY * 21]).is_err());
}

#[test]
fn the_llrb_keeps_room() {
    let (mut a, _) = up();
    let mut n = 0;
    while a.can_send() {
        a.send(&body(n), FlitKind::Protocol, false).unwrap();
        n += 1;
    }
    // 32 entries: INIT.Param plus 25 flits leave 6 free; the four all-data flits the last one
    // may commit to still leave two.
    assert_eq!((n, a.free_entries()), (25, 6));
    for _ in 0..4 {
        a.send(&[0; 64], FlitKind::AllData, false).unwrap();
    }
    assert_eq!(a.free_entries(), 2);
    // At two free entries only a flit carrying an acknowledgement goes.
    assert_eq!(a.send(&[0; 64], FlitKind::AllData, false), Err(LlrError::Full));
    let mut llcrd = [0u8; 64];
    llcrd[..16].copy_from_slice(
        &ControlFlit::LlcrdAck {
            full_ack: 1,
            rsp_crd: Default::default(),
            req_crd: Default::default(),
            data_crd: Default::default(),
        }
        .emit(),
    );
    a.send(&llcrd, FlitKind::Control, false).unwrap();
    assert_eq!(a.send(&llcrd, FlitKind::Control, false), Err(LlrError::Full));
}

/// Runs a CRC error and its retry over `a` and `b` (flit times with the second flit corrupted);
/// every flit each end sent.
fn retry_transcript(a: &mut L, b: &mut L) -> Vec<[u8; ENTRY]> {
    let mut sent = Vec::new();
    let mut out = [0u8; ENTRY];
    for t in 0..40u8 {
        if t % 3 == 0 {
            let _ = a.send(&body(t), FlitKind::Protocol, false);
        }
        if a.poll_transmit(&mut out).is_some() {
            sent.push(out);
            if t == 6 {
                out[10] ^= 1;
            }
            b.handle_flit(&out, false);
        }
        if b.poll_transmit(&mut out).is_some() {
            sent.push(out);
            a.handle_flit(&out, false);
        }
    }
    sent
}

#[test]
fn init_in_place_restarts_as_new() {
    let (mut fresh_a, mut fresh_b) = (llr(), llr());
    let first = retry_transcript(&mut fresh_a, &mut fresh_b);
    assert!(fresh_a.stats().replayed > 0 && fresh_b.stats().crc_errors > 0, "the run retried");
    // A used pair left mid-retry, then configured afresh in place: the same run, flit for flit.
    let (mut a, mut b) = (llr(), llr());
    retry_transcript(&mut a, &mut b);
    let mut out = [0u8; ENTRY];
    for _ in 0..7 {
        a.poll_transmit(&mut out);
        out[10] ^= 1;
        b.handle_flit(&out, false);
    }
    a.init(LlrConfig::default()).unwrap();
    b.init(LlrConfig::default()).unwrap();
    assert_eq!(retry_transcript(&mut a, &mut b), first);
    assert_eq!((a.stats(), b.stats()), (fresh_a.stats(), fresh_b.stats()));
}

#[test]
fn an_empty_llr_is_configured_in_place() {
    static EMPTY: L = L::EMPTY;
    let (mut a, mut b) = (EMPTY.clone(), EMPTY.clone());
    a.init(LlrConfig::default()).unwrap();
    b.init(LlrConfig::default()).unwrap();
    let (mut fresh_a, mut fresh_b) = (llr(), llr());
    assert_eq!(retry_transcript(&mut a, &mut b), retry_transcript(&mut fresh_a, &mut fresh_b));
}
