//! The message layer between the SES and the PDCs (issue 4, in progress): cutting a message into
//! packets ([`segment`]) and completing messages in message order at the target ([`order`]).
//!
//! Still to come: the `Endpoint` that maps messages to PDCs and drives them.

pub mod order;
pub mod segment;

pub use order::{MessageOrder, OrderError};
pub use segment::{MAX_PAYLOAD, Segment, SegmentError, Segmenter};
