//! The wire: the CDP message envelope, typed params for the events we use,
//! endpoint resolution and the connection (request/response correlation,
//! flatten-session multiplexing, deadlines, disconnect handling).

pub mod compact;
pub mod connection;
pub mod endpoint;
pub mod message;
pub mod pipe;
pub mod protocol;
pub mod socket;

pub use connection::{CommandError, ConnectError, Connection, EventStream, Incoming, PendingReply};
pub use endpoint::{CdpHeaders, EndpointError, redact_url, resolve_ws_url, resolve_ws_url_with};
pub use protocol::{Event, FrameId, SessionId, TargetId};
