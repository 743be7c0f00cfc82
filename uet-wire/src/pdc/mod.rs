//! Packet delivery contexts (PDCs): the sans-I/O reliability engine of the PDS (UE 1.0 §3.5.9 to
//! §3.5.12; digest `shared/spec/uet.md` §4).
//!
//! Built so far:
//!
//! * [`window`]: the PSN windows of one PDC direction: the target's receive window with duplicate
//!   classification, cumulative and selective ACK state; the initiator's send window with the
//!   peer's MP_RANGE limit and ACK processing; and ACK coalescing.
//! * [`table`]: the fixed-capacity PDC table, by id (never 0, not reused at once) and by the
//!   initiator's or target's selection key.
//!
//! Still to come (issue 4): the initiator and target state machines, loss recovery and the
//! `Endpoint` glue.

pub mod table;
pub mod window;

pub use table::{InitiatorKey, IpAddr, PdcTable, TableError, TargetKey, ipv4};

pub use window::{AckCoalescer, AckError, AckPolicy, AckTriggers, Arrival, RxWindow, Sack, TxWindow, psn_after};
