//! The message layer between the SES and the PDCs: cutting a message into packets
//! ([`segment`]), completing received messages in send order ([`order`]), and the [`Endpoint`]
//! that maps messages to PDCs and drives them ([`endpoint`]).

pub mod endpoint;
pub mod order;
pub mod segment;

pub use endpoint::{
    BITMAP_PATHS, CONTROL_QUEUE, Cancel, CmsConfig, Controllers, EV_MEMORY, EXTENSIONS, Endpoint, EndpointConfig,
    EndpointError, EndpointStats, Event, FETCHED_MAX, FailedDelivery, LoadBalancing, MAX_HEADER_LEN, MessageDesc,
    MsgHandle, NackCounts, ORDER_POOL, ORDER_WINDOW, PayloadRef, Placement, REQUEST_DIRECTIONS, RETURN_DIRECTIONS,
    ReadRef, Resends, SECURE_START_END, SECURE_START_MIN, Secure, SecureStart, Service, Transmit,
};
pub use order::{MessageOrder, OWN_SLOTS, OrderError, OrderPool};
pub use segment::{MAX_PAYLOAD, Segment, SegmentError, Segmenter};
