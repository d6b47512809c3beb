//! The CDP connection: one browser-level WebSocket, shared by every session
//! on it (flatten mode: a command names its `sessionId`, events carry theirs).
//!
//! Two tasks per connection:
//! - the **writer** drains a queue of frames onto the socket, so
//!   [`Connection::send`] is synchronous and the order of calls is the order
//!   on the wire;
//! - the **reader** matches replies to waiting commands by `id` and forwards
//!   events, in arrival order, to the [`EventStream`]. It never awaits
//!   anything but the socket: a slow consumer or a command that never gets
//!   its reply cannot hold up an event. Events are read in place
//!   ([`message::decode_routed`]: no copy, `params` unparsed) and go to the
//!   stream a burst at a time — every frame the socket has ready, in one
//!   channel send.
//!
//! Every command has a deadline ([`CommandError::Timeout`]). When the socket
//! goes (close frame, reset, read error, [`Connection::close`], or the last
//! handle dropped), every command in flight fails at once with
//! [`CommandError::Disconnected`], later sends fail immediately, and the
//! event stream yields [`Incoming::Closed`] and ends.

use crate::cdp::endpoint::{CdpHeaders, auth_hint, redact_url};
use crate::cdp::message::{self, RawEvent, Routed};
use crate::cdp::protocol::SessionId;
use crate::cdp::socket::LoadBuffered;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_util::sync::CancellationToken;

/// About 30 years: what a deadline of `Duration::MAX` ("no deadline in
/// effect") becomes, instead of an overflow panic.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `now + after` as a tokio deadline, saturating at about 30 years from
/// now: a caller's `Duration::MAX` never panics.
pub fn deadline_after(after: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(after).unwrap_or_else(|| now + FAR_FUTURE)
}

/// Default deadline of a command: every command has one.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// tungstenite's read buffer of one connection, in bytes: what it keeps
/// while idle, and the most one of its reads takes (the socket below
/// buffers larger reads under load: [`crate::cdp::socket`]). The replies of
/// an attach grow a 512-byte one to 1 KiB anyway; 2 KiB would cost an idle
/// supervisor 1 KiB more (`benches/many.rs`).
pub const READ_BUFFER_SIZE: usize = 1 << 10;

/// Deadline of the WebSocket handshake in [`Connection::connect`].
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest message accepted from the browser. Screenshots, `DOM.getDocument`
/// of big pages and long evaluate results reach tens of MiB; tungstenite's
/// default (64 MiB message / 16 MiB frame) cuts them.
pub const MAX_MESSAGE_SIZE: usize = 256 << 20;

/// How often the socket of a Selenium Grid session (`…/session/<id>/se/cdp`)
/// is looked at: when nothing was sent since the last look, a keep-alive
/// goes. DESIGN (Grid facts, measured on Selenium 4.48): the Grid ends a
/// session that no command reached for its `session-timeout` (300 s by
/// default, never under 10 s: it raises smaller values to 10); CDP commands
/// count, an open idle socket does not. Looks 3 s apart leave at most 6 s
/// without a command, under any timeout a Grid accepts.
pub const GRID_KEEP_ALIVE_EVERY: Duration = Duration::from_secs(3);

/// A keep-alive unanswered for this long drops the connection (the
/// supervisor then reconnects, or gives up): after its session ends — a
/// `DELETE`, its timeout — the Grid leaves the socket open and silent.
pub const GRID_KEEP_ALIVE_DEADLINE: Duration = Duration::from_secs(10);

/// tungstenite logs each handshake request whole — its headers and URL
/// with their credentials — at trace level under this target.
pub const HANDSHAKE_LOG_TARGET: &str = "tungstenite::handshake";

/// A log filter from `directives` (`RUST_LOG` syntax; empty: `default`)
/// that turns [`HANDSHAKE_LOG_TARGET`] off, however verbose the rest is:
/// `cdp_headers` and URL credentials stay out of the logs (a failed
/// handshake is an error we return, not a log line we need), and caps
/// [`MCP_LOG_TARGET`] at `info` and tungstenite at `debug` (passwords in
/// tool calls and CDP frames). Every subscriber this crate installs uses
/// it; an embedder that installs its own should do the same.
///
/// ```
/// let filter = cdp_supervisor::cdp::connection::log_filter("trace", "warn");
/// let text = filter.to_string();
/// assert!(text.contains("tungstenite::handshake=off"));
/// assert!(text.contains("rmcp=info") && text.contains("tungstenite=debug"));
/// let quiet = cdp_supervisor::cdp::connection::log_filter("", "warn").to_string();
/// assert!(!quiet.contains("rmcp"), "a cap never raises a level: {quiet}");
/// // A more specific target is held to its crate's cap too.
/// let deep = cdp_supervisor::cdp::connection::log_filter("trace,rmcp::service=trace,rmcp", "warn").to_string();
/// assert!(deep.contains("rmcp::service=info") && !deep.contains("=trace,rmcp,"), "{deep}");
/// assert!(!deep.contains("rmcp::service=trace"), "{deep}");
/// ```
pub fn log_filter(directives: &str, default: &str) -> tracing_subscriber::EnvFilter {
    let directives = if directives.trim().is_empty() {
        default
    } else {
        directives
    };
    let directives = capped(directives);
    let base = tracing_subscriber::EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let base = base.add_directive(
        format!("{HANDSHAKE_LOG_TARGET}=off")
            .parse()
            .expect("a valid directive"),
    );
    // A cap, not a level: added only past it (a directive would also raise
    // a target the directives left quieter).
    let most = base.max_level_hint();
    let past = |cap: tracing::Level| most.is_some_and(|m| m > cap);
    let mut filter = base;
    if past(tracing::Level::INFO) {
        filter = filter.add_directive(
            format!("{MCP_LOG_TARGET}=info")
                .parse()
                .expect("a valid directive"),
        );
    }
    if past(tracing::Level::DEBUG) {
        for target in ["tungstenite", "tokio_tungstenite"] {
            filter = filter.add_directive(
                format!("{target}=debug")
                    .parse()
                    .expect("a valid directive"),
            );
        }
    }
    filter
}

/// `directives` with each one naming a target under rmcp or tungstenite
/// (`rmcp::service=trace`) held to that target's cap: a more specific
/// directive wins over the cap [`log_filter`] adds for the crate.
fn capped(directives: &str) -> String {
    use std::str::FromStr;
    use tracing::level_filters::LevelFilter;
    let caps = [
        (MCP_LOG_TARGET, LevelFilter::INFO),
        ("tungstenite", LevelFilter::DEBUG),
        ("tokio_tungstenite", LevelFilter::DEBUG),
    ];
    directives
        .split(',')
        .map(|d| {
            let target = d.split(['[', '=']).next().unwrap_or("").trim();
            // A target with no level means every level.
            let level = d.rsplit_once('=').map_or(Ok(LevelFilter::TRACE), |(_, l)| {
                LevelFilter::from_str(l.trim())
            });
            let cap = caps.iter().find(|(t, _)| {
                target == *t || target.strip_prefix(t).is_some_and(|r| r.starts_with("::"))
            });
            match (cap, level) {
                (Some((_, cap)), Ok(l)) if l > *cap => format!("{target}={cap}"),
                _ => d.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// rmcp's log target. At `debug` it prints every request whole, and a
/// `browser_dialog` answering an `http_auth` carries a password:
/// [`log_filter`] caps it at `info`, and tungstenite at `debug` (whose `trace`
/// prints every CDP frame: `Fetch.continueWithAuth` carries the password,
/// a bridge reply the bridge's secret).
pub const MCP_LOG_TARGET: &str = "rmcp";

/// Why a connection could not be opened. URLs in it are redacted.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// TCP connect or the WebSocket handshake failed.
    #[error("cannot connect to {url}: {reason}")]
    Unreachable {
        /// The WebSocket URL, redacted.
        url: String,
        /// What failed: tungstenite's error, or the HTTP status of a refused handshake.
        reason: String,
    },
    /// The text is not a WebSocket URL tungstenite can use.
    #[error(
        "bad CDP WebSocket URL {url:?}: {reason}; expected ws://host:port/devtools/browser/<id>"
    )]
    BadUrl {
        /// The text given, redacted.
        url: String,
        /// What tungstenite found wrong with it.
        reason: String,
    },
    /// No handshake within [`CONNECT_TIMEOUT`].
    #[error("cannot connect to {url}: no WebSocket handshake within {}s", after.as_secs())]
    Timeout {
        /// The WebSocket URL, redacted.
        url: String,
        /// How long we waited (always [`CONNECT_TIMEOUT`]).
        after: Duration,
    },
}

/// Why a command got no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// The browser answered with a CDP error object.
    #[error("{method}: CDP error {code}: {message}")]
    Protocol {
        /// The CDP method of the command, e.g. `Page.navigate`.
        method: String,
        /// The CDP error code (JSON-RPC style, e.g. `-32000`); `0` when the
        /// failure is not a CDP error object (an unreadable `result`, a
        /// `Page.navigate` `errorText`).
        code: i64,
        /// The CDP error message.
        message: String,
        /// The error's `data`: its text when a JSON string, else the raw JSON;
        /// `None` when absent or `null`.
        data: Option<String>,
    },
    /// No reply within the deadline.
    #[error("{method}: no reply within {}ms", after.as_millis())]
    Timeout {
        /// The CDP method of the command.
        method: String,
        /// The command's deadline, counted from when it was sent.
        after: Duration,
    },
    /// The reply was larger than the command may return: dropped unread.
    #[error(
        "{method}: the reply is {bytes} bytes, over the {max} bytes this command may return; it was dropped unread (ask for less: a smaller expression result, a clip, a part of the tree)"
    )]
    TooLarge {
        /// The CDP method of the command.
        method: String,
        /// The reply's size, in bytes.
        bytes: usize,
        /// The bound it passed.
        max: usize,
    },
    /// The connection dropped (or was closed) before the reply came.
    #[error("{method}: the CDP connection dropped before the reply ({reason})")]
    Disconnected {
        /// The CDP method of the command.
        method: String,
        /// Why the connection is gone (close frame, socket error, `close()`, drop).
        reason: String,
    },
}

/// One message from the browser, in arrival order: an event, the reply to a
/// command sent with [`Connection::send_in_order`], or the end of the connection.
#[derive(Clone, Debug)]
pub enum Incoming {
    /// The outcome of the command `id` sent with [`Connection::send_in_order`]:
    /// its result, a CDP error, its deadline, or the connection dropping
    /// (always before [`Incoming::Closed`]).
    Reply {
        /// The id [`Connection::send_in_order`] returned.
        id: u64,
        /// The command's `result` object, or why there is none.
        result: Result<Value, CommandError>,
    },
    /// A CDP event, as it came: its method, session (`None` for
    /// browser-level events) and `params` (undecoded) are read from it.
    Event(RawEvent),
    /// The connection is gone; no more messages follow.
    Closed {
        /// Why: close frame (with its code), socket error, `close()`, or every handle dropped.
        reason: String,
    },
}

/// Gives back the room of a map of commands in flight once it is empty:
/// an idle connection keeps none (with room for 7 kept, the two maps of a
/// supervisor held 0.9 KiB), and a map that empties between two commands
/// costs one small allocation at the next, next to a CDP round trip.
pub(crate) fn give_back<K, V>(map: &mut HashMap<K, V>) {
    if map.is_empty() && map.capacity() > 0 {
        *map = HashMap::new();
    }
}

pub use tokio::sync::mpsc::error::TryRecvError;

/// Events (and in-order replies) in arrival order, then one
/// [`Incoming::Closed`], then the end of the stream. The reader hands them
/// over a burst at a time, through a queue in the connection's state (not
/// a channel: an unbounded channel allocates a cache-padded header and its
/// first 32 slots up front, 1.3 KiB per idle connection); an idle stream
/// holds no burst and no room for one.
pub struct EventStream {
    /// The connection's state, where the reader queues bursts.
    shared: Arc<Shared>,
    /// The burst being handed out.
    burst: std::vec::IntoIter<Incoming>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("backlog", &self.backlog())
            .finish_non_exhaustive()
    }
}

impl EventStream {
    /// The next item; `None` once [`Incoming::Closed`] has been taken.
    ///
    /// Cancel-safe: an item is taken only when this returns it, and a
    /// wakeup missed by a dropped wait is kept as `Notify`'s permit.
    pub async fn recv(&mut self) -> Option<Incoming> {
        // tokio's cooperative budget, spent as a channel's receive spends
        // it: a consumer whose stream never runs dry still yields to the
        // other tasks of its worker (other supervisors' drivers).
        tokio::task::consume_budget().await;
        loop {
            if let Some(item) = self.next_of_burst() {
                return Some(item);
            }
            match self.take_burst() {
                Ok(()) => {}
                Err(TryRecvError::Empty) => self.shared.bursts_ready.notified().await,
                Err(TryRecvError::Disconnected) => return None,
            }
        }
    }

    /// Takes the oldest queued burst as the one being handed out.
    fn take_burst(&mut self) -> Result<(), TryRecvError> {
        let burst = {
            let mut state = self.shared.lock();
            let burst = match state.bursts.pop_front() {
                Some(burst) => burst,
                None if state.stream_open => return Err(TryRecvError::Empty),
                None => return Err(TryRecvError::Disconnected),
            };
            if state.bursts.is_empty() && state.bursts.capacity() > 0 {
                // Give the emptied queue's room back.
                state.bursts = VecDeque::new();
            }
            burst
        };
        self.burst = burst.into_iter();
        self.shared.counts.taken_one();
        Ok(())
    }

    /// How many bursts wait in the stream, not yet taken. The reader stops
    /// reading the socket while [`MAX_QUEUED_BURSTS`] do: a consumer that
    /// falls behind slows the browser down (TCP back-pressure) instead of
    /// the queue growing without bound.
    pub fn backlog(&self) -> usize {
        self.shared.counts.backlog()
    }

    /// How many bursts were taken from this stream so far: once it reaches
    /// a [`Connection::mark`] taken after a reply, every event Chromium
    /// sent before that reply has been taken.
    pub fn taken(&self) -> u64 {
        self.shared.counts.taken.load(Ordering::Acquire)
    }

    /// Whether `mark` is of this stream's connection.
    pub fn is_of(&self, mark: &StreamMark) -> bool {
        Arc::ptr_eq(&self.shared.counts, &mark.counts)
    }

    /// The next item if one is queued.
    ///
    /// # Errors
    /// [`TryRecvError::Empty`] when none is yet, [`TryRecvError::Disconnected`]
    /// after [`Incoming::Closed`].
    pub fn try_recv(&mut self) -> Result<Incoming, TryRecvError> {
        loop {
            if let Some(item) = self.next_of_burst() {
                return Ok(item);
            }
            self.take_burst()?;
        }
    }

    fn next_of_burst(&mut self) -> Option<Incoming> {
        let item = self.burst.next();
        if item.is_none() && self.burst.as_slice().is_empty() {
            // Give the emptied burst's room back.
            self.burst = Vec::new().into_iter();
        }
        item
    }
}

impl Drop for EventStream {
    /// Nobody takes bursts any more: the reader queues none from now on
    /// (and never waits for this stream to drain).
    fn drop(&mut self) {
        let left = {
            let mut state = self.shared.lock();
            state.stream_open = false;
            std::mem::take(&mut state.bursts)
        };
        // Outside the lock: a burst can hold many events.
        drop(left);
    }
}

/// The most items one burst carries.
const BURST_MAX: usize = 256;

/// How many bursts the event stream holds before the reader stops reading
/// the socket until the consumer takes some: at most
/// `MAX_QUEUED_BURSTS × BURST_MAX` events wait in memory.
pub const MAX_QUEUED_BURSTS: usize = 128;

/// Frames for the writer.
enum Outgoing {
    Text(String),
    Close,
}

type ReplySender = oneshot::Sender<Result<Value, CommandError>>;

/// Where a reply goes.
enum ReplyTo {
    /// The command's own [`PendingReply`] future.
    Future(ReplySender),
    /// The event stream, as [`Incoming::Reply`], in order with the events.
    Stream,
}

struct Pending {
    method: String,
    reply: ReplyTo,
    /// A larger reply is [`CommandError::TooLarge`], never parsed.
    max_reply: usize,
    /// The deadline task of an in-order command: aborted once the reply is
    /// delivered, so no timer outlives its command.
    timer: Option<tokio::task::AbortHandle>,
}

impl Pending {
    /// Delivers `result` to the command's future, or returns it as the
    /// [`Incoming::Reply`] the caller puts on the stream.
    fn deliver(self, id: u64, result: Result<Value, CommandError>) -> Option<Incoming> {
        if let Some(timer) = self.timer {
            timer.abort();
        }
        match self.reply {
            ReplyTo::Future(tx) => {
                let _ = tx.send(result);
                None
            }
            ReplyTo::Stream => Some(Incoming::Reply { id, result }),
        }
    }
}

struct State {
    next_id: u64,
    pending: HashMap<u64, Pending>,
    /// `Some(reason)` once the connection is gone.
    closed: Option<String>,
    /// Frames for the writer, in order ([`Shared::outgoing_ready`] says
    /// when there are some). A queue, not a channel: an idle connection
    /// holds no room for frames (a channel keeps its first 32 slots).
    outgoing: VecDeque<Outgoing>,
    /// The event stream's bursts, not yet taken, oldest first
    /// ([`Shared::bursts_ready`] says when there are some).
    bursts: VecDeque<Vec<Incoming>>,
    /// Whether the stream takes bursts: until `Closed` has been queued,
    /// or the [`EventStream`] is dropped.
    stream_open: bool,
}

/// Bursts sent to the event stream and taken from it (both only grow), and
/// the reader's wakeup when the consumer takes one off a full backlog.
#[derive(Debug, Default)]
struct Counts {
    sent: AtomicU64,
    taken: AtomicU64,
    drained: Notify,
}

impl Counts {
    fn backlog(&self) -> usize {
        let taken = self.taken.load(Ordering::Acquire);
        let sent = self.sent.load(Ordering::Acquire);
        usize::try_from(sent.saturating_sub(taken)).unwrap_or(usize::MAX)
    }

    fn full(&self) -> bool {
        self.backlog() >= MAX_QUEUED_BURSTS
    }

    /// The consumer took a burst: the reader may read on.
    fn taken_one(&self) {
        self.taken.fetch_add(1, Ordering::AcqRel);
        if self.backlog() + 1 == MAX_QUEUED_BURSTS {
            self.drained.notify_one();
        }
    }
}

/// A point in a connection's event stream ([`Connection::mark`]).
#[derive(Clone, Debug)]
pub struct StreamMark {
    counts: Arc<Counts>,
    sent: u64,
}

impl StreamMark {
    /// Whether `stream` has taken every burst sent before the mark.
    pub fn reached_by(&self, stream: &EventStream) -> bool {
        !stream.is_of(self) || stream.taken() >= self.sent
    }
}

struct Shared {
    state: Mutex<State>,
    /// Frames were queued for the writer (a notification while it writes
    /// is kept for its next look).
    outgoing_ready: Notify,
    /// Stops the reader (and the writer) when the connection is shut down from our side.
    cancel: CancellationToken,
    /// Which events the stream carries ([`Connection::set_event_filter`]).
    event_filter: std::sync::OnceLock<fn(&str) -> bool>,
    /// The event stream's counts ([`EventStream::backlog`]).
    counts: Arc<Counts>,
    /// Bursts were queued for the event stream (a notification while
    /// nobody waits is kept for its next look).
    bursts_ready: Notify,
    /// A pipe link's browser session ([`Connection::start`]).
    root: Option<SessionId>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave `State` inconsistent
        // enough to matter; keep serving rather than cascade the panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the connection gone: fails every command in flight, ends the
    /// event stream with `Closed`, and stops both tasks. Idempotent.
    fn shutdown(&self, reason: String, send_close_frame: bool) {
        {
            let mut state = self.lock();
            if state.closed.is_some() {
                return;
            }
            tracing::debug!(%reason, in_flight = state.pending.len(), "CDP connection closed");
            state.closed = Some(reason.clone());
            if send_close_frame {
                state.outgoing.push_back(Outgoing::Close);
            }
            // The writer sends what is queued (the close frame too), then stops.
            self.outgoing_ready.notify_one();
            let mut pending: Vec<(u64, Pending)> =
                std::mem::take(&mut state.pending).into_iter().collect();
            pending.sort_by_key(|(id, _)| *id);
            // In-order replies fail on the stream before it says Closed.
            for (id, p) in pending {
                let error = CommandError::Disconnected {
                    method: p.method.clone(),
                    reason: reason.clone(),
                };
                if let Some(reply) = p.deliver(id, Err(error)) {
                    self.to_stream(&mut state, vec![reply]);
                }
            }
            self.to_stream(
                &mut state,
                vec![Incoming::Closed {
                    reason: reason.clone(),
                }],
            );
            state.stream_open = false;
        };
        if !send_close_frame {
            self.cancel.cancel();
        }
    }

    fn remove_pending(&self, id: u64) {
        self.lock().pending.remove(&id);
    }

    /// Queues a command frame and registers where its reply goes; `None`
    /// when the connection is closed (the reason is returned instead).
    fn queue(
        &self,
        session_id: Option<&SessionId>,
        method: &str,
        params: &Value,
        reply: ReplyTo,
        max_reply: usize,
    ) -> (u64, Result<(), (String, ReplyTo)>) {
        let session_id = session_id.or(self.root.as_ref());
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        if state.closed.is_none() {
            let frame = message::encode_command(id, session_id, method, params);
            state.outgoing.push_back(Outgoing::Text(frame));
            self.outgoing_ready.notify_one();
            state.pending.insert(
                id,
                Pending {
                    method: method.to_owned(),
                    reply,
                    max_reply,
                    timer: None,
                },
            );
            (id, Ok(()))
        } else {
            let reason = state
                .closed
                .clone()
                .unwrap_or_else(|| "the connection is closed".into());
            (id, Err((reason, reply)))
        }
    }
}

/// Closes the socket when the last [`Connection`] clone is dropped.
struct Owner {
    shared: Arc<Shared>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.shutdown(
            "the connection was closed: every handle to it was dropped".into(),
            true,
        );
    }
}

/// `%XX` escapes of a URL's userinfo, decoded (invalid ones kept as they are).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A handle to one browser-level CDP WebSocket. Cheap to clone; the socket
/// closes when the last clone is dropped (or on [`Connection::close`]).
#[derive(Clone)]
pub struct Connection {
    owner: Arc<Owner>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.owner.shared.lock();
        f.debug_struct("Connection")
            .field("open", &state.closed.is_none())
            .field("in_flight", &state.pending.len())
            .finish()
    }
}

impl Connection {
    /// Opens the WebSocket at `ws_url` (a `ws://…/devtools/browser/…` URL;
    /// resolve other forms with [`crate::cdp::resolve_ws_url`] first) and
    /// starts its reader and writer tasks. Must run inside a tokio runtime.
    ///
    /// Accepts messages up to [`MAX_MESSAGE_SIZE`]; the handshake has a
    /// [`CONNECT_TIMEOUT`] deadline.
    ///
    /// # Errors
    /// [`ConnectError`] naming the (redacted) URL and the cause.
    pub async fn connect(ws_url: &str) -> Result<(Connection, EventStream), ConnectError> {
        Connection::connect_with(ws_url, &CdpHeaders::default()).await
    }

    /// [`Connection::connect`] sending `headers` on the WebSocket handshake
    /// (a grid's `Authorization`…). Credentials in the URL's userinfo
    /// (`wss://user:pass@host/…`) go as `Authorization: Basic` unless
    /// `headers` has an `Authorization` of its own.
    ///
    /// # Errors
    /// [`ConnectError`] naming the (redacted) URL and the cause; never a header value.
    pub async fn connect_with(
        ws_url: &str,
        headers: &CdpHeaders,
    ) -> Result<(Connection, EventStream), ConnectError> {
        let redacted = redact_url(ws_url);
        if crate::cdp::pipe::is_pipe_url(ws_url) {
            return Connection::open_link(ws_url, &redacted).await;
        }
        let (url, request) = handshake_request(ws_url, headers, &redacted)?;
        let socket = match tokio::time::timeout(CONNECT_TIMEOUT, open_socket(&url, request)).await {
            Err(_) => {
                return Err(ConnectError::Timeout {
                    url: redacted,
                    after: CONNECT_TIMEOUT,
                });
            }
            Ok(Err(e)) => return Err(handshake_error(e, redacted, headers)),
            Ok(Ok(socket)) => socket,
        };
        tracing::debug!(url = %redacted, "CDP connection open");
        Ok(Connection::start(
            socket,
            is_grid_session_path(url.path()),
            None,
        ))
    }

    /// A link of the pipe hub `url` names ([`crate::cdp::pipe`]): a browser
    /// session of its own on a browser we launched, used as a WebSocket.
    async fn open_link(
        url: &str,
        redacted: &str,
    ) -> Result<(Connection, EventStream), ConnectError> {
        let gone = |reason: String| ConnectError::Unreachable {
            url: redacted.to_owned(),
            reason,
        };
        let hub = crate::cdp::pipe::hub_of(url)
            .ok_or_else(|| gone("the browser's pipe is closed (the browser exited)".into()))?;
        let link = hub.open(CONNECT_TIMEOUT).await.map_err(gone)?;
        let root = SessionId::from(link.session().to_owned());
        tracing::debug!(url = %redacted, "CDP connection open (a link of the browser's pipe)");
        Ok(Connection::start(link, false, Some(root)))
    }

    /// Wraps an open socket: the shared state its two tasks and every
    /// handle use, the writer and reader tasks, and — on a Selenium Grid
    /// session's endpoint (`grid_session`) — the keep-alive the Grid needs
    /// to keep the session ([`GRID_KEEP_ALIVE_EVERY`]).
    ///
    /// On a pipe link, `root` is the link's browser session: commands
    /// without a session go to it and its frames come back without it.
    fn start<T>(socket: T, grid_session: bool, root: Option<SessionId>) -> (Connection, EventStream)
    where
        T: futures_util::Stream<Item = Result<Message, WsError>>
            + futures_util::Sink<Message, Error = WsError>
            + Send
            + 'static,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next_id: 1,
                pending: HashMap::new(),
                closed: None,
                outgoing: VecDeque::new(),
                bursts: VecDeque::new(),
                stream_open: true,
            }),
            outgoing_ready: Notify::new(),
            cancel: CancellationToken::new(),
            event_filter: std::sync::OnceLock::new(),
            counts: Arc::new(Counts::default()),
            bursts_ready: Notify::new(),
            root,
        });
        let (sink, stream) = socket.split();
        tokio::spawn(write_loop(sink, shared.clone()));
        tokio::spawn(read_loop(stream, shared.clone()));
        if grid_session {
            tokio::spawn(grid_keep_alive(Arc::downgrade(&shared)));
        }
        (
            Connection {
                owner: Arc::new(Owner {
                    shared: shared.clone(),
                }),
            },
            EventStream {
                shared,
                burst: Vec::new().into_iter(),
            },
        )
    }

    /// Queues a command at once (the order of calls is the order on the
    /// wire) and returns its reply future. `session_id: None` sends it to the
    /// browser session; `params` `Null` is sent as `{}`.
    ///
    /// The reply fails with [`CommandError::Protocol`] on a CDP error object,
    /// [`CommandError::Timeout`] when nothing came within `timeout` (counted
    /// from this call), and [`CommandError::Disconnected`] when the
    /// connection is gone or goes before the reply. Dropping the future
    /// forgets the command (a late reply is then ignored).
    pub fn send(
        &self,
        session_id: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> PendingReply {
        let shared = &self.owner.shared;
        let deadline = deadline_after(timeout);
        let (reply_tx, reply_rx) = oneshot::channel();
        let (id, queued) = shared.queue(
            session_id,
            method,
            &params,
            ReplyTo::Future(reply_tx),
            usize::MAX,
        );
        if let Err((reason, ReplyTo::Future(reply_tx))) = queued {
            let _ = reply_tx.send(Err(CommandError::Disconnected {
                method: method.to_owned(),
                reason,
            }));
        }
        PendingReply {
            id,
            method: method.to_owned(),
            timeout,
            deadline,
            sleep: None,
            reply: reply_rx,
            shared: Arc::downgrade(shared),
            done: false,
        }
    }

    /// Queues a command like [`Connection::send`], but its outcome comes on
    /// the [`EventStream`] as [`Incoming::Reply`] with the returned `id`, in
    /// wire order with the events: a reply is never handled after an event
    /// Chromium sent later (a stale `Page.getFrameTree` must not undo a newer
    /// `frameNavigated`). Exactly one `Reply` comes per id: the result, a CDP
    /// error, a `Timeout` after `timeout`, or `Disconnected` (before
    /// `Closed`). Must run inside a tokio runtime (the deadline is a timer task).
    pub fn send_in_order(
        &self,
        session_id: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> u64 {
        self.send_in_order_capped(session_id, method, params, timeout, usize::MAX)
    }

    /// [`Connection::send_in_order`], and a reply larger than `max_reply`
    /// bytes is [`CommandError::TooLarge`]: it is dropped as it comes off
    /// the socket, never parsed, so the reader moves on to the next frame
    /// at once (an agent's `browser_cdp` that asks for 20 MB).
    pub fn send_in_order_capped(
        &self,
        session_id: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
        max_reply: usize,
    ) -> u64 {
        let shared = &self.owner.shared;
        let (id, queued) = shared.queue(session_id, method, &params, ReplyTo::Stream, max_reply);
        match queued {
            Ok(()) => {
                let weak = Arc::downgrade(shared);
                let timer = tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    let Some(shared) = weak.upgrade() else { return };
                    let mut state = shared.lock();
                    if let Some(p) = state.pending.remove(&id) {
                        let error = CommandError::Timeout {
                            method: p.method.clone(),
                            after: timeout,
                        };
                        if let Some(reply) = p.deliver(id, Err(error)) {
                            shared.to_stream(&mut state, vec![reply]);
                        }
                    }
                });
                match shared.lock().pending.get_mut(&id) {
                    Some(p) => p.timer = Some(timer.abort_handle()),
                    // Replied (or failed) already: the deadline has nothing to guard.
                    None => timer.abort(),
                }
            }
            Err((reason, _)) => {
                // Closed already: the stream has ended or is about to; say it anyway.
                let reply = Incoming::Reply {
                    id,
                    result: Err(CommandError::Disconnected {
                        method: method.to_owned(),
                        reason,
                    }),
                };
                shared.to_stream(&mut shared.lock(), vec![reply]);
            }
        }
        id
    }

    /// The point the event stream has reached: taken right after a reply
    /// had straight from [`Connection::send`], every event Chromium sent
    /// before that reply is on the stream before the mark
    /// ([`StreamMark::reached_by`]), since the reader hands the events
    /// over before the reply.
    pub fn mark(&self) -> StreamMark {
        let counts = self.owner.shared.counts.clone();
        let sent = counts.sent.load(Ordering::Acquire);
        StreamMark { counts, sent }
    }

    /// Keeps only the events whose method `wanted` accepts in the event
    /// stream; the others are dropped by the reader before anything of them
    /// is copied (no allocation, no lock, no channel send per dropped
    /// event). Replies are never filtered. Set once; later calls are ignored.
    pub fn set_event_filter(&self, wanted: fn(&str) -> bool) {
        let _ = self.owner.shared.event_filter.set(wanted);
    }

    /// Closes the WebSocket (a close frame is sent): commands in flight fail
    /// with `Disconnected`, the event stream yields `Closed` and ends. Idempotent.
    pub fn close(&self) {
        self.owner.shared.shutdown(
            "the connection was closed by Connection::close()".into(),
            true,
        );
    }

    /// Whether the connection is still open (no close, drop or error seen yet).
    pub fn is_open(&self) -> bool {
        self.owner.shared.lock().closed.is_none()
    }

    /// Number of commands sent and still waiting for their reply.
    pub fn in_flight(&self) -> usize {
        self.owner.shared.lock().pending.len()
    }
}

type Socket = tokio_tungstenite::WebSocketStream<
    tokio_tungstenite::MaybeTlsStream<LoadBuffered<tokio::net::TcpStream>>,
>;
type WsError = tokio_tungstenite::tungstenite::Error;

/// The WebSocket handshake request for `ws_url`: its URL without userinfo
/// (the credentials must not reach logs or the wire in the clear), plus
/// `headers` and, unless `headers` has its own, the userinfo as
/// `Authorization: Basic`. Errors name `redacted`, never a header value.
fn handshake_request(
    ws_url: &str,
    headers: &CdpHeaders,
    redacted: &str,
) -> Result<(url::Url, HandshakeRequest), ConnectError> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
    let bad_url = |reason: String| ConnectError::BadUrl {
        url: redacted.to_owned(),
        reason,
    };
    let mut url = url::Url::parse(ws_url.trim()).map_err(|e| bad_url(e.to_string()))?;
    let basic = basic_authorization(&url);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| bad_url(e.to_string()))?;
    let bad_header = |name: &str| {
        bad_url(format!(
            "browser.cdp_headers: {name:?} is not a valid HTTP header (name or value)"
        ))
    };
    for (name, value) in headers.iter() {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(name))?;
        let v = HeaderValue::from_str(value).map_err(|_| bad_header(name))?;
        request.headers_mut().insert(n, v);
    }
    if let Some(basic) = basic.filter(|_| !headers.has("authorization")) {
        let v = HeaderValue::from_str(&basic).map_err(|_| bad_header("Authorization"))?;
        request.headers_mut().insert("authorization", v);
    }
    Ok((url, request))
}

/// The `Authorization: Basic …` value of `url`'s userinfo (its `%XX`
/// escapes decoded), or `None` when the URL names no user.
fn basic_authorization(url: &url::Url) -> Option<String> {
    (!url.username().is_empty()).then(|| {
        use base64::Engine;
        let decode = |s: &str| percent_decode(s);
        let pair = format!(
            "{}:{}",
            decode(url.username()),
            decode(url.password().unwrap_or(""))
        );
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    })
}

/// The WebSocket handshake request type (an `http::Request<()>`).
type HandshakeRequest = tokio_tungstenite::tungstenite::handshake::client::Request;

/// Settings of every connection's WebSocket.
fn socket_config() -> WebSocketConfig {
    WebSocketConfig::default()
        // Allocated per connection, whether idle or not (tungstenite's
        // default is 128 KiB), and the most one read takes: small, as
        // the socket below buffers reads under load (`LoadBuffered`).
        .read_buffer_size(READ_BUFFER_SIZE)
        .max_message_size(Some(MAX_MESSAGE_SIZE))
        .max_frame_size(Some(MAX_MESSAGE_SIZE))
}

/// TCP connect to `url`'s host (no Nagle delay: CDP frames are small and
/// each waits for an answer) and the WebSocket handshake of `request` on it, TLS for
/// `wss`. The caller puts the deadline on the whole.
async fn open_socket(
    url: &url::Url,
    request: HandshakeRequest,
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::Error as WsError;
    use tokio_tungstenite::tungstenite::error::UrlError;
    let config = socket_config();
    let port = url
        .port_or_known_default()
        .ok_or(WsError::Url(UrlError::UnsupportedUrlScheme))?;
    let tcp = match url.host() {
        Some(url::Host::Domain(domain)) => tokio::net::TcpStream::connect((domain, port)).await,
        Some(url::Host::Ipv4(ip)) => tokio::net::TcpStream::connect((ip, port)).await,
        Some(url::Host::Ipv6(ip)) => tokio::net::TcpStream::connect((ip, port)).await,
        None => return Err(WsError::Url(UrlError::NoHostName)),
    }?;
    tcp.set_nodelay(true)?;
    if url.scheme() == "wss" {
        // TLS sits above the socket: its records hide the head's end.
        let (socket, _) = tokio_tungstenite::client_async_tls_with_config(
            request,
            LoadBuffered::new(tcp),
            Some(config),
            None,
        )
        .await?;
        return Ok(socket);
    }
    let (socket, _) = tokio_tungstenite::client_async_tls_with_config(
        request,
        LoadBuffered::until_head_end(tcp),
        Some(config),
        None,
    )
    .await?;
    // The handshake read nothing past the response's head, so its
    // 4 KiB buffer holds nothing: the WebSocket starts afresh on a
    // READ_BUFFER_SIZE one.
    Ok(tokio_tungstenite::WebSocketStream::from_raw_socket(
        socket.into_inner(),
        tokio_tungstenite::tungstenite::protocol::Role::Client,
        Some(config),
    )
    .await)
}

/// A failed handshake as the [`ConnectError`] a user can act on: a URL
/// tungstenite cannot use, or an unreachable endpoint with the HTTP status
/// (and a hint on credentials) or the socket's error, header values scrubbed.
fn handshake_error(
    e: tokio_tungstenite::tungstenite::Error,
    redacted: String,
    headers: &CdpHeaders,
) -> ConnectError {
    use tokio_tungstenite::tungstenite::Error as WsError;
    // tungstenite's messages do not include the URL, so they carry no secret.
    match e {
        WsError::Url(reason) => ConnectError::BadUrl {
            url: redacted,
            reason: reason.to_string(),
        },
        WsError::Http(response) => ConnectError::Unreachable {
            url: redacted,
            reason: format!(
                "the WebSocket handshake got HTTP {}{}",
                response.status(),
                auth_hint(response.status().as_u16())
            ),
        },
        other => ConnectError::Unreachable {
            url: redacted,
            reason: headers.scrub(&other.to_string()),
        },
    }
}

/// Whether `path` is a Selenium Grid session's CDP endpoint (`se:cdp`,
/// `/session/<id>/se/cdp`, after a sub-path if the Grid has one).
pub fn is_grid_session_path(path: &str) -> bool {
    path.ends_with("/se/cdp") && path.contains("/session/")
}

/// Keeps a Grid session's socket from looking idle to the Grid
/// ([`GRID_KEEP_ALIVE_EVERY`]): a `Browser.getVersion` (answered by the
/// browser process, also while a dialog blocks a page) whenever nothing
/// was sent since the last look. Ends with the connection.
async fn grid_keep_alive(shared: std::sync::Weak<Shared>) {
    let Some(cancel) = shared.upgrade().map(|s| s.cancel.clone()) else {
        return;
    };
    let mut seen = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(GRID_KEEP_ALIVE_EVERY) => {}
            () = cancel.cancelled() => return,
        }
        let Some(strong) = shared.upgrade() else {
            return;
        };
        let next_id = strong.lock().next_id;
        if seen.replace(next_id) != Some(next_id) {
            continue; // Something went since the last look.
        }
        let (reply_tx, reply_rx) = oneshot::channel();
        let (id, queued) = strong.queue(
            None,
            "Browser.getVersion",
            &Value::Null,
            ReplyTo::Future(reply_tx),
            usize::MAX,
        );
        if queued.is_err() {
            return;
        }
        seen = Some(id + 1);
        drop(strong);
        let answered = tokio::select! {
            r = tokio::time::timeout(GRID_KEEP_ALIVE_DEADLINE, reply_rx) => r.is_ok(),
            () = cancel.cancelled() => return,
        };
        let Some(strong) = shared.upgrade() else {
            return;
        };
        if !answered {
            strong.remove_pending(id);
            strong.shutdown(
                format!(
                    "the connection dropped: the Selenium Grid answered no keep-alive within {}s (its session ended?)",
                    GRID_KEEP_ALIVE_DEADLINE.as_secs()
                ),
                false,
            );
            return;
        }
    }
}

async fn write_loop<K>(mut sink: K, shared: Arc<Shared>)
where
    K: futures_util::Sink<Message, Error = WsError> + Unpin,
{
    'writing: loop {
        // Everything queued so far, in order; later frames wait for the next look.
        let (frames, closed) = {
            let mut state = shared.lock();
            (std::mem::take(&mut state.outgoing), state.closed.is_some())
        };
        if frames.is_empty() {
            if closed {
                break;
            }
            tokio::select! {
                // A frame queued since we looked left its notification.
                () = shared.outgoing_ready.notified() => continue,
                () = shared.cancel.cancelled() => break,
            }
        }
        for frame in frames {
            if shared.cancel.is_cancelled() {
                break 'writing;
            }
            let (message, closing) = match frame {
                Outgoing::Text(text) => (Message::text(text), false),
                Outgoing::Close => (Message::Close(None), true),
            };
            if let Err(e) = sink.send(message).await {
                shared.shutdown(format!("the connection dropped: write failed: {e}"), false);
                break 'writing;
            }
            if closing {
                // Give the browser a moment to answer the close frame, then stop the reader.
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), shared.cancel.cancelled()).await;
                break 'writing;
            }
        }
    }
    let _ = sink.close().await;
    shared.cancel.cancel();
}

async fn read_loop<S>(mut stream: S, shared: Arc<Shared>)
where
    S: futures_util::Stream<Item = Result<Message, WsError>> + Unpin,
{
    use futures_util::FutureExt;
    // What the socket had ready, sent to the stream in one go once it has
    // no more (or the burst is full).
    let mut burst: Vec<Incoming> = Vec::new();
    let full = || shared.counts.full();
    let reason = loop {
        if full() {
            // Back-pressure: what was read goes out, then a consumer this
            // far behind is waited for before the socket is read again.
            shared.send_burst(&mut burst);
            while full() {
                let drained = shared.counts.drained.notified();
                if !full() {
                    break;
                }
                tokio::select! {
                    () = drained => {}
                    () = shared.cancel.cancelled() => break,
                }
            }
        }
        let next = if burst.is_empty() {
            tokio::select! {
                next = stream.next() => next,
                () = shared.cancel.cancelled() => break None,
            }
        } else {
            if shared.cancel.is_cancelled() {
                break None;
            }
            match stream.next().now_or_never() {
                Some(next) if burst.len() < BURST_MAX => next,
                ready => {
                    shared.send_burst(&mut burst);
                    match ready {
                        Some(next) => next,
                        None => continue,
                    }
                }
            }
        };
        match next {
            None => break Some("the connection dropped: the socket ended".to_owned()),
            Some(Err(e)) => break Some(format!("the connection dropped: {e}")),
            Some(Ok(Message::Text(text))) => dispatch(&shared, text, &mut burst),
            Some(Ok(Message::Binary(bytes))) => {
                tracing::warn!(len = bytes.len(), "ignoring a binary CDP frame");
            }
            Some(Ok(Message::Close(frame))) => {
                break Some(match frame {
                    Some(f) => format!(
                        "the connection dropped: the browser closed it (code {}, {:?})",
                        f.code,
                        f.reason.as_str()
                    ),
                    None => "the connection dropped: the browser closed it".to_owned(),
                });
            }
            Some(Ok(_)) => {} // ping/pong: tungstenite answers pings itself.
        }
    };
    shared.send_burst(&mut burst);
    if let Some(reason) = reason {
        shared.shutdown(reason, false);
    }
    shared.cancel.cancel();
}

impl Shared {
    /// Sends what `burst` holds to the event stream (while it is open).
    fn send_burst(&self, burst: &mut Vec<Incoming>) {
        if !burst.is_empty() {
            self.to_stream(&mut self.lock(), std::mem::take(burst));
        }
    }

    /// Queues `burst` on the event stream while it is open, under the
    /// state's lock (`state`), and counts it.
    fn to_stream(&self, state: &mut State, burst: Vec<Incoming>) {
        if state.stream_open {
            state.bursts.push_back(burst);
            self.counts.sent.fetch_add(1, Ordering::AcqRel);
            self.bursts_ready.notify_one();
        }
    }
}

/// Routes one frame: a reply to its command (its future, or `burst` for an
/// in-order one), an event to `burst`.
fn dispatch(
    shared: &Shared,
    text: tokio_tungstenite::tungstenite::Utf8Bytes,
    burst: &mut Vec<Incoming>,
) {
    let filter = shared.event_filter.get().copied();
    let len = text.len();
    match message::decode_routed(text, |m| filter.is_none_or(|wanted| wanted(m))) {
        Ok(None) => {}
        Ok(Some(Routed::Event(mut event))) => {
            // A pipe link's own browser session stands for the browser.
            if let Some(root) = &shared.root
                && event.session_id() == Some(root.as_str())
            {
                event.clear_session();
            }
            burst.push(Incoming::Event(event));
        }
        Ok(Some(Routed::Reply { id, outcome })) => {
            let max = shared
                .lock()
                .pending
                .get(&id)
                .map_or(usize::MAX, |p| p.max_reply);
            // Parsed before taking the lock: a result can be tens of MiB.
            let outcome = match outcome {
                Ok(_) if len > max => Err(None),
                Ok(raw) => serde_json::from_str::<Value>(raw.get())
                    .map_err(|e| Some((0, format!("unreadable result: {e}"), None))),
                Err(error) => Err(Some((error.code, error.message.clone(), error.data_text()))),
            };
            let mut state = shared.lock();
            let Some(pending) = state.pending.remove(&id) else {
                tracing::debug!(
                    id,
                    "ignoring a reply for an unknown (or timed out) command id"
                );
                return;
            };
            give_back(&mut state.pending);
            let result = outcome.map_err(|e| match e {
                Some((code, message, data)) => CommandError::Protocol {
                    method: pending.method.clone(),
                    code,
                    message,
                    data,
                },
                None => CommandError::TooLarge {
                    method: pending.method.clone(),
                    bytes: len,
                    max,
                },
            });
            match pending.reply {
                // In order with the events before and after it, and on the
                // stream before this lock is let go: a shutdown (which
                // fails what is still pending) cannot come between taking
                // it out of `pending` and handing it over.
                ReplyTo::Stream => {
                    if let Some(timer) = pending.timer {
                        timer.abort();
                    }
                    burst.push(Incoming::Reply { id, result });
                    shared.to_stream(&mut state, std::mem::take(burst));
                }
                // Whoever awaits it may look at the stream next: every
                // event before the reply is on it by then.
                ReplyTo::Future(_) => {
                    drop(state);
                    shared.send_burst(burst);
                    pending.deliver(id, result);
                }
            }
        }
        Err(e) => tracing::warn!(len, error = %e, "ignoring a malformed CDP frame"),
    }
}

/// The reply to one command: resolves with the command's `result` (as JSON)
/// or a [`CommandError`]. Dropping it forgets the command.
pub struct PendingReply {
    id: u64,
    method: String,
    timeout: Duration,
    deadline: tokio::time::Instant,
    /// Created on first poll: `send` may run outside a runtime context.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    reply: oneshot::Receiver<Result<Value, CommandError>>,
    shared: std::sync::Weak<Shared>,
    done: bool,
}

impl PendingReply {
    /// The request id this command went out with.
    pub fn id(&self) -> u64 {
        self.id
    }

    fn forget(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.remove_pending(self.id);
        }
    }
}

impl Future for PendingReply {
    type Output = Result<Value, CommandError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Poll::Ready(result) = Pin::new(&mut this.reply).poll(cx) {
            this.done = true;
            return Poll::Ready(result.unwrap_or_else(|_| {
                Err(CommandError::Disconnected {
                    method: this.method.clone(),
                    reason: "the connection dropped before the reply".into(),
                })
            }));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if sleep.as_mut().poll(cx).is_ready() {
            this.done = true;
            this.forget();
            return Poll::Ready(Err(CommandError::Timeout {
                method: this.method.clone(),
                after: this.timeout,
            }));
        }
        Poll::Pending
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        if !self.done {
            self.forget();
        }
    }
}

impl std::fmt::Debug for PendingReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingReply")
            .field("id", &self.id)
            .field("method", &self.method)
            .finish()
    }
}
