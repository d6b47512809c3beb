//! The CDP connection. (contract skeleton; implemented by the cdp work item)

use crate::cdp::protocol::SessionId;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Default deadline of a command (issue: "a deadline on every command (default 10 s)").
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot connect to {url}: {reason}")]
    Unreachable { url: String, reason: String },
}

/// Why a command got no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// The browser answered with a CDP error object.
    #[error("{method}: CDP error {code}: {message}")]
    Protocol { method: String, code: i64, message: String, data: Option<String> },
    /// No reply within the deadline.
    #[error("{method}: no reply within {}ms", after.as_millis())]
    Timeout { method: String, after: Duration },
    /// The connection dropped (or was closed) before the reply came.
    #[error("{method}: the CDP connection dropped before the reply ({reason})")]
    Disconnected { method: String, reason: String },
}

/// One message from the browser that is not a reply: an event, or the end of the connection.
#[derive(Clone, Debug)]
pub enum Incoming {
    Event { session_id: Option<SessionId>, method: String, params: Box<serde_json::value::RawValue> },
    /// The connection is gone; no more messages follow.
    Closed { reason: String },
}

/// Events in arrival order.
pub type EventStream = tokio::sync::mpsc::UnboundedReceiver<Incoming>;

/// A handle to one browser-level CDP WebSocket. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Connection {}

impl Connection {
    /// Opens the WebSocket at `ws_url` (a `ws://…/devtools/browser/…` URL).
    pub async fn connect(ws_url: &str) -> Result<(Connection, EventStream), ConnectError> {
        let _ = ws_url;
        todo!()
    }

    /// Queues a command at once (order of calls is the order on the wire) and
    /// returns its reply future.
    pub fn send(&self, session_id: Option<&SessionId>, method: &str, params: Value, timeout: Duration) -> PendingReply {
        let _ = (session_id, method, params, timeout);
        todo!()
    }

    /// Closes the WebSocket; in-flight commands fail with `Disconnected`.
    pub fn close(&self) {}

    /// Whether the connection is still open.
    pub fn is_open(&self) -> bool {
        todo!()
    }
}

/// The reply to one command.
pub struct PendingReply {}

impl Future for PendingReply {
    type Output = Result<Value, CommandError>;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        todo!()
    }
}
