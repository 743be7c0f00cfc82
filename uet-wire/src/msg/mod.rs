//! The message layer between the SES and the PDCs (issue 4): cutting a message into packets
//! ([`segment`]), completing messages in message order at the target ([`order`]), and the
//! [`Endpoint`] that maps messages to PDCs and drives them ([`endpoint`]).
//!
//! Still to come: RUDI and UUD through the endpoint, guaranteed-delivery responses.

pub mod endpoint;
pub mod order;
pub mod segment;

pub use endpoint::{
    Endpoint, EndpointConfig, EndpointError, EndpointStats, Event, MessageDesc, MsgHandle, PayloadRef, Placement,
    Service, Transmit,
};
pub use order::{MessageOrder, OrderError};
pub use segment::{MAX_PAYLOAD, Segment, SegmentError, Segmenter};
