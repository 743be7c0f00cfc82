//! The link-level replay sequence space (UALink 1.0 §6.6): flit sequence numbers are 1..=511 (0 is
//! reserved; 511 wraps to 1), and comparisons use differences modulo 511, except the reconstruction
//! of a command flit's sequence number from its 3 low bits, which the text writes modulo 512. Both
//! rules are implemented exactly as written, here only.

/// The largest sequence number; the one after it is 1.
pub const MAX_SEQ: u16 = 511;
/// How far ahead an acknowledgement or replay request may point (the acceptance windows).
pub const WINDOW: u16 = 256;
/// The reset value of `Rx_last_ack`, `Tx_last_seq` and `Rx_last_seq_calc` (0x1FF).
pub const RESET_SEQ: u16 = 0x1FF;

/// The sequence number after `s` (511 wraps to 1; 0, reserved, is followed by 1 too).
pub const fn next(s: u16) -> u16 {
    if s >= MAX_SEQ { 1 } else { s + 1 }
}

/// `(a − b) % 511`, in 0..511.
pub const fn diff511(a: u16, b: u16) -> u16 {
    ((a as i32 - b as i32).rem_euclid(MAX_SEQ as i32)) as u16
}

/// Whether an Ack of `ack_seq` is accepted: `(ackReqSeq − Rx_last_ack) % 511 ≤ 256` and
/// `(Tx_last_seq − ackReqSeq) % 511 ≤ 256`; an `ackReqSeq` of 0 never is.
pub const fn ack_acceptable(ack_seq: u16, rx_last_ack: u16, tx_last_seq: u16) -> bool {
    ack_seq != 0 && diff511(ack_seq, rx_last_ack) <= WINDOW && diff511(tx_last_seq, ack_seq) <= WINDOW
}

/// Whether a Replay Request from `from_seq` is accepted: no replay request is being ignored,
/// `(ackReqSeq − Rx_last_ack − 1) % 511 ≤ 256` and `(Tx_last_seq − ackReqSeq) % 511 ≤ 256`; an
/// `ackReqSeq` of 0 never is.
pub const fn replay_acceptable(from_seq: u16, rx_last_ack: u16, tx_last_seq: u16, ignore_count: u8) -> bool {
    from_seq != 0
        && ignore_count == 0
        && diff511(from_seq, rx_last_ack.wrapping_add(1)) <= WINDOW
        && diff511(tx_last_seq, from_seq) <= WINDOW
}

/// The sequence number of a command flit from the low 3 bits it carries: `delta = (flitSeqLo −
/// Rx_last_seq_calc & 7) % 8`, 8 when that is 0 and the flit carries payload, and
/// `Rx_seq_calc = (Rx_last_seq_calc + delta) % 512`, as §6.6 writes it.
pub const fn command_seq(seq_lo: u8, rx_last_seq_calc: u16, payload: bool) -> u16 {
    let mut delta = (seq_lo as u16).wrapping_sub(rx_last_seq_calc & 7) & 7;
    if delta == 0 && payload {
        delta = 8;
    }
    (rx_last_seq_calc + delta) % 512
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_from_511_to_1() {
        assert_eq!(next(1), 2);
        assert_eq!(next(510), 511);
        assert_eq!(next(511), 1);
        assert_eq!(next(0), 1);
        let mut s = 500;
        for _ in 0..20 {
            s = next(s);
            assert!((1..=511).contains(&s));
        }
        assert_eq!(s, 9);
    }

    #[test]
    fn differences_are_modulo_511() {
        assert_eq!(diff511(5, 3), 2);
        assert_eq!(diff511(1, 511), 1, "511 → 1 is one step");
        assert_eq!(diff511(3, 510), 4);
        assert_eq!(diff511(510, 3), 507);
    }

    #[test]
    fn ack_window() {
        // After reset (Rx_last_ack = 511) with flits 1..=10 sent, Acks of 1..=10 are accepted.
        for a in 1..=10 {
            assert!(ack_acceptable(a, RESET_SEQ, 10), "ack {a}");
        }
        assert!(!ack_acceptable(11, RESET_SEQ, 10), "beyond what was sent");
        assert!(!ack_acceptable(0, RESET_SEQ, 10), "0 is reserved");
        // Across the wrap: last acked 500, sent up to 20.
        assert!(ack_acceptable(505, 500, 20));
        assert!(ack_acceptable(511, 500, 20));
        assert!(ack_acceptable(1, 500, 20));
        assert!(ack_acceptable(20, 500, 20));
        assert!(!ack_acceptable(21, 500, 20));
        assert!(ack_acceptable(500, 500, 20), "a repeated Ack is harmless");
        assert!(!ack_acceptable(200, 500, 20), "far behind");
    }

    #[test]
    fn replay_window() {
        // Last acked 9, sent up to 12: replay from 10, 11 or 12 only, and not while ignoring.
        assert!(replay_acceptable(10, 9, 12, 0));
        assert!(replay_acceptable(12, 9, 12, 0));
        assert!(!replay_acceptable(9, 9, 12, 0), "already acknowledged");
        assert!(!replay_acceptable(13, 9, 12, 0), "not sent");
        assert!(!replay_acceptable(10, 9, 12, 3), "inside the ignore window");
        assert!(!replay_acceptable(0, 9, 12, 0));
        // Across the wrap.
        assert!(replay_acceptable(1, 510, 3, 0));
        assert!(replay_acceptable(511, 510, 3, 0));
    }

    #[test]
    fn command_flit_sequence_reconstruction() {
        // Low bits 3 after 8 (low bits 0): 11.
        assert_eq!(command_seq(3, 8, true), 11);
        // The same low bits with payload means the next lap of 8.
        assert_eq!(command_seq(0, 8, true), 16);
        assert_eq!(command_seq(0, 8, false), 8);
        // Modulo 512 as written: from 509 (low bits 5), low bits 1 is 513 % 512 = 1.
        assert_eq!(command_seq(1, 509, true), 1);
        // …and low bits 0 after 511 gives 0 (the reserved number), which the mix of %512 here
        // and %511 elsewhere permits; callers treat 0 as invalid.
        assert_eq!(command_seq(0, 511, false), 0);
    }
}
