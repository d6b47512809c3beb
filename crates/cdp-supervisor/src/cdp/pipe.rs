//! CDP over a pipe: a Chromium we launch with `--remote-debugging-pipe`
//! reads commands on its file descriptor 3 and writes replies and events on
//! 4, each message a JSON text ended by a NUL byte. It opens no TCP port, so
//! no other process on the machine can reach the browser (DESIGN
//! "Security").
//!
//! A pipe has one client; a browser shared by many tasks (`isolation:
//! context`) and a supervisor that reconnects both need several. So a
//! [`Hub`] owns the pipe and hands out [`Link`]s: each link is a browser
//! session of its own (`Target.attachToBrowserTarget`), as independent of
//! the others as a second WebSocket client would be — its own target
//! discovery and auto-attach, and the `disposeOnDetach` contexts it creates
//! go when its session is detached (when the link is dropped). A
//! [`crate::cdp::Connection`] runs on a link as on a WebSocket: its commands
//! without a session go to the link's browser session, whose events and
//! replies come back to it without one.
//!
//! The hub routes without parsing what a frame carries: a reply by its `id`
//! (Chromium takes ids of 31 bits, so each command gets one of the hub's
//! on its way out and its link's own back on the reply), an event by its
//! `sessionId` (a session belongs to the link on whose session
//! `Target.attachedToTarget` announced it, or whose `Target.attachToTarget`
//! reply named it). A link whose
//! queue is full ([`LINK_QUEUE`] frames) holds the pipe's reader until its
//! connection takes some, as a full TCP window holds a WebSocket.
//!
//! A hub is named by a URL `pipe://<128 random bits>` ([`Hub::url`]) that
//! [`crate::cdp::Connection::connect`] opens a link on. The URL is never an
//! endpoint a user can give: endpoint resolution refuses the scheme, so an
//! agent cannot reach another task's browser by naming it.

use crate::cdp::message::encode_command;
use futures_util::{Sink, Stream};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};

/// The scheme of a hub's URL.
pub const SCHEME: &str = "pipe";

/// Frames that wait for one link's connection before the hub stops reading
/// the pipe.
pub const LINK_QUEUE: usize = 1024;

/// Bytes a frame may have before its NUL: past this the pipe is broken
/// (the WebSocket's [`crate::cdp::connection::MAX_MESSAGE_SIZE`]).
const MAX_FRAME: usize = crate::cdp::connection::MAX_MESSAGE_SIZE;

/// Bytes one read of the pipe takes.
const READ_SIZE: usize = 64 << 10;

/// Every hub alive, by its URL's token.
static HUBS: LazyLock<Mutex<HashMap<String, Weak<Hub>>>> = LazyLock::new(Mutex::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `url` names a hub (`pipe://…`): only the launch that made the
/// hub passes such a URL on, never a user's input.
pub fn is_pipe_url(url: &str) -> bool {
    url.strip_prefix(SCHEME)
        .is_some_and(|rest| rest.starts_with("://"))
}

/// The hub `url` names, while its pipe is open.
pub fn hub_of(url: &str) -> Option<Arc<Hub>> {
    let token = url.strip_prefix(SCHEME)?.strip_prefix("://")?;
    lock(&HUBS).get(token)?.upgrade()
}

type OwnReply = oneshot::Sender<Result<Value, String>>;

/// Where frames go (see the module).
#[derive(Default)]
struct Routes {
    /// Each open link's queue.
    links: HashMap<u64, mpsc::Sender<Utf8Bytes>>,
    /// Which link a session belongs to.
    sessions: HashMap<String, u64>,
    /// The hub's own commands waiting for their reply.
    own: HashMap<u64, OwnReply>,
    /// Links' commands waiting for their reply, by the hub's id: the link
    /// and the link's own id.
    replies: HashMap<u64, (u64, u64)>,
    /// Why the pipe is gone, once it is.
    closed: Option<String>,
}

/// One browser's pipe, shared by the links opened on it (see the module).
pub struct Hub {
    token: String,
    to_browser: mpsc::UnboundedSender<String>,
    routes: Mutex<Routes>,
    next_link: AtomicU64,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("closed", &lock(&self.routes).closed)
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// Starts a hub on a browser's pipe: `from_browser` is the read end of
    /// what it writes (its fd 4), `to_browser` the write end of what it
    /// reads (its fd 3). Must run inside a tokio runtime.
    ///
    /// # Errors
    /// When either descriptor is not a pipe end tokio can use.
    pub fn start(from_browser: OwnedFd, to_browser: OwnedFd) -> std::io::Result<Arc<Hub>> {
        let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(from_browser)?;
        let writer = tokio::net::unix::pipe::Sender::from_owned_fd(to_browser)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let token = crate::random::random_hex(16);
        let hub = Arc::new(Hub {
            token: token.clone(),
            to_browser: tx,
            routes: Mutex::default(),
            next_link: AtomicU64::new(1),
            next_id: AtomicU64::new(0),
        });
        lock(&HUBS).insert(token, Arc::downgrade(&hub));
        tokio::spawn(write_pipe(writer, rx));
        tokio::spawn(read_pipe(reader, hub.clone()));
        Ok(hub)
    }

    /// The URL [`crate::cdp::Connection::connect`] opens a link of this hub on.
    pub fn url(&self) -> String {
        format!("{SCHEME}://{}", self.token)
    }

    /// Why the pipe is gone, once it is (the browser exited or closed it).
    pub fn closed(&self) -> Option<String> {
        lock(&self.routes).closed.clone()
    }

    /// Sends a command of the hub's own on the browser's root session and
    /// waits up to `timeout` for its result.
    ///
    /// # Errors
    /// The CDP error's message, no reply in time, or the pipe gone.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let id = self.new_id();
        let (tx, rx) = oneshot::channel();
        {
            let mut routes = lock(&self.routes);
            if let Some(why) = &routes.closed {
                return Err(why.clone());
            }
            routes.own.insert(id, tx);
        }
        if self
            .to_browser
            .send(encode_command(id, None, method, &params))
            .is_err()
        {
            lock(&self.routes).own.remove(&id);
            return Err("the browser's pipe is closed".into());
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self
                .closed()
                .unwrap_or_else(|| "the browser's pipe is closed".into())),
            Err(_) => {
                lock(&self.routes).own.remove(&id);
                Err(format!(
                    "{method}: no reply within {} ms",
                    timeout.as_millis()
                ))
            }
        }
    }

    /// Opens a link: a browser session of its own
    /// (`Target.attachToBrowserTarget`), within `timeout`.
    ///
    /// # Errors
    /// As [`Hub::call`].
    pub async fn open(self: &Arc<Self>, timeout: Duration) -> Result<Link, String> {
        let reply = self
            .call("Target.attachToBrowserTarget", json!({}), timeout)
            .await?;
        let session = reply
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or("Target.attachToBrowserTarget: the reply has no sessionId")?
            .to_owned();
        let id = self.next_link.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(LINK_QUEUE);
        {
            let mut routes = lock(&self.routes);
            if let Some(why) = &routes.closed {
                return Err(why.clone());
            }
            routes.links.insert(id, tx);
            routes.sessions.insert(session.clone(), id);
        }
        Ok(Link {
            hub: self.clone(),
            id,
            session,
            rx,
            released: false,
        })
    }

    /// Forgets link `id` and its sessions, and detaches its browser
    /// session (which disposes the contexts it made with `disposeOnDetach`).
    fn release(&self, id: u64, session: &str) {
        {
            let mut routes = lock(&self.routes);
            routes.links.remove(&id);
            routes.sessions.retain(|_, link| *link != id);
            routes.replies.retain(|_, (link, _)| *link != id);
        }
        let own = self.new_id();
        let _ = self.to_browser.send(encode_command(
            own,
            None,
            "Target.detachFromTarget",
            &json!({"sessionId": session}),
        ));
    }

    /// An id for a command on the pipe: 1 to 2^31 − 1, as Chromium takes them.
    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) % MAX_ID + 1
    }

    /// Sends link `link`'s command frame under an id of the hub's, kept to
    /// give the reply its own id back.
    fn send_for(&self, link: u64, frame: &str) -> Result<(), WsError> {
        let Some((own_id, rest)) = split_id(frame) else {
            // Not a command as `encode_command` writes them: sent as it is.
            tracing::warn!("a link's frame has no leading id; sent as it is");
            return self
                .to_browser
                .send(frame.to_owned())
                .map_err(|_| WsError::ConnectionClosed);
        };
        let id = self.new_id();
        lock(&self.routes).replies.insert(id, (link, own_id));
        self.to_browser
            .send(format!("{{\"id\":{id}{rest}"))
            .map_err(|_| WsError::ConnectionClosed)
    }

    /// Routes one frame from the browser (see the module); waits while the
    /// link it goes to has a full queue.
    async fn route(&self, text: String) {
        let Ok(head) = serde_json::from_str::<Head>(&text) else {
            tracing::warn!(
                len = text.len(),
                "ignoring a malformed frame on the browser's pipe"
            );
            return;
        };
        // A reply, with its link's own id back.
        let mut renamed = None;
        let link = {
            let mut routes = lock(&self.routes);
            let link = match (head.id, head.session.as_deref()) {
                (Some(id), _) => {
                    if let Some(reply) = routes.own.remove(&id) {
                        let _ = reply.send(own_result(&text));
                        return;
                    }
                    let Some((link, own_id)) = routes.replies.remove(&id) else {
                        return; // its link is gone
                    };
                    renamed = Some(with_id(&text, id, own_id));
                    Some(link)
                }
                (None, Some(session)) => routes.sessions.get(session).copied(),
                // The root session's events: the hub's own, for no link.
                (None, None) => None,
            };
            // A session announced to a link, or named in its reply, is that link's.
            let learned = match head.method.as_deref() {
                Some("Target.attachedToTarget") if head.session.is_some() => params_session(&text),
                None if text.contains(r#""result":{"sessionId":""#) => result_session(&text),
                _ => None,
            };
            if let (Some(link), Some(session)) = (link, learned) {
                routes.sessions.insert(session, link);
            }
            if head.method.as_deref() == Some("Target.detachedFromTarget")
                && let Some(session) = params_session(&text)
            {
                routes.sessions.remove(&session);
            }
            link.and_then(|l| routes.links.get(&l).cloned())
        };
        if let Some(link) = link {
            let text = renamed.unwrap_or(text);
            // A link dropped meanwhile: its frames go nowhere.
            let _ = link.send(Utf8Bytes::from(text)).await;
        }
    }

    /// The pipe is gone: every link's stream ends, every own command fails.
    fn shut(&self, why: String) {
        tracing::debug!(%why, "the browser's pipe closed");
        let mut routes = lock(&self.routes);
        routes.closed.get_or_insert(why);
        routes.links.clear();
        routes.own.clear();
        routes.sessions.clear();
        drop(routes);
        lock(&HUBS).remove(&self.token);
    }
}

/// The largest id a command on the pipe gets.
const MAX_ID: u64 = (1 << 31) - 1;

/// A command frame's leading id and what follows it: `{"id":7,"method"…`
/// → `(7, ",\"method\"…")`.
fn split_id(frame: &str) -> Option<(u64, &str)> {
    let rest = frame.strip_prefix(r#"{"id":"#)?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    Some((rest[..digits].parse().ok()?, &rest[digits..]))
}

/// A reply frame with its id `hub_id` replaced by `own_id`: in place when
/// the id leads, as Chromium writes replies; else through a full parse.
fn with_id(text: &str, hub_id: u64, own_id: u64) -> String {
    if let Some((id, rest)) = split_id(text)
        && id == hub_id
    {
        return format!("{{\"id\":{own_id}{rest}");
    }
    match serde_json::from_str::<serde_json::Map<String, Value>>(text) {
        Ok(mut frame) => {
            frame.insert("id".into(), own_id.into());
            Value::Object(frame).to_string()
        }
        Err(_) => text.to_owned(),
    }
}

/// What routing reads of a frame: its top-level `id`, `sessionId` and
/// `method` (the rest is skipped unparsed).
#[derive(Deserialize)]
struct Head<'a> {
    id: Option<u64>,
    #[serde(rename = "sessionId", borrow)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
}

/// `params.sessionId` of an event frame.
fn params_session(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Frame {
        params: Named,
    }
    serde_json::from_str::<Frame>(text).ok()?.params.session
}

/// `result.sessionId` of a reply frame.
fn result_session(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Frame {
        result: Named,
    }
    serde_json::from_str::<Frame>(text).ok()?.result.session
}

#[derive(Deserialize)]
struct Named {
    #[serde(rename = "sessionId")]
    session: Option<String>,
}

/// The result of a reply to one of the hub's own commands, or its error's message.
fn own_result(text: &str) -> Result<Value, String> {
    let mut frame: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if let Some(error) = frame.get("error") {
        return Err(error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("CDP error")
            .to_owned());
    }
    Ok(frame
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// Writes each frame and its NUL; ends when the hub is dropped or a write
/// fails (the browser is gone: the reader sees the pipe end).
async fn write_pipe(
    mut pipe: tokio::net::unix::pipe::Sender,
    mut frames: mpsc::UnboundedReceiver<String>,
) {
    while let Some(mut frame) = frames.recv().await {
        frame.push('\0');
        if let Err(e) = pipe.write_all(frame.as_bytes()).await {
            tracing::debug!("writing to the browser's pipe: {e}");
            break;
        }
    }
}

/// Reads frames (each ended by a NUL) and routes them, until the pipe ends.
async fn read_pipe(mut pipe: tokio::net::unix::pipe::Receiver, hub: Arc<Hub>) {
    let mut buf: Vec<u8> = Vec::new();
    // Bytes of `buf` known to hold no NUL.
    let mut scanned = 0;
    let why = loop {
        // Read into spare room: nothing is zeroed first.
        buf.reserve(READ_SIZE);
        match pipe.read_buf(&mut buf).await {
            Ok(0) => break "the browser closed its pipe (it exited)".to_owned(),
            Ok(_) => {}
            Err(e) => break format!("reading the browser's pipe: {e}"),
        }
        let mut start = 0;
        while let Some(at) = buf[scanned..].iter().position(|&b| b == 0) {
            let end = scanned + at;
            let text = String::from_utf8_lossy(&buf[start..end]).into_owned();
            hub.route(text).await;
            start = end + 1;
            scanned = start;
        }
        buf.drain(..start);
        scanned = buf.len();
        if buf.len() > MAX_FRAME {
            break format!("a frame on the browser's pipe passed {MAX_FRAME} bytes");
        }
        if buf.is_empty() && buf.capacity() > 2 * READ_SIZE {
            // Give a large frame's room back; the usual room is kept.
            buf = Vec::new();
        }
    };
    hub.shut(why);
}

/// One client's share of a hub: a browser session of its own, as a
/// WebSocket is (see the module). A [`crate::cdp::Connection`] reads it as a
/// stream of text messages and writes it as a sink; dropping it (or a
/// close message) detaches its browser session.
pub struct Link {
    hub: Arc<Hub>,
    id: u64,
    session: String,
    rx: mpsc::Receiver<Utf8Bytes>,
    released: bool,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// The link's browser session: commands without a session go to it.
    pub fn session(&self) -> &str {
        &self.session
    }

    fn release(&mut self) {
        if !std::mem::replace(&mut self.released, true) {
            self.hub.release(self.id, &self.session);
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.release();
    }
}

impl Stream for Link {
    type Item = Result<Message, WsError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx
            .poll_recv(cx)
            .map(|frame| frame.map(|text| Ok(Message::Text(text))))
    }
}

impl Sink<Message> for Link {
    type Error = WsError;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        Poll::Ready(Ok(()))
    }

    fn start_send(mut self: Pin<&mut Self>, message: Message) -> Result<(), WsError> {
        match message {
            Message::Text(text) => self.hub.send_for(self.id, text.as_str()),
            Message::Close(_) => {
                self.release();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        self.release();
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_url_is_told_apart() {
        assert!(is_pipe_url("pipe://abc"));
        assert!(!is_pipe_url("pipeline://abc"));
        assert!(!is_pipe_url("ws://127.0.0.1:9222/devtools/browser/x"));
        assert!(hub_of("pipe://no-such-hub").is_none());
    }

    #[test]
    fn sessions_are_read_from_params_and_results() {
        let attached = r#"{"method":"Target.attachedToTarget","params":{"sessionId":"S2","targetInfo":{"targetId":"T"},"waitingForDebugger":true},"sessionId":"S1"}"#;
        assert_eq!(params_session(attached).as_deref(), Some("S2"));
        let reply = r#"{"id":12,"result":{"sessionId":"S3"},"sessionId":"S1"}"#;
        assert_eq!(result_session(reply).as_deref(), Some("S3"));
        let head: Head = serde_json::from_str(reply).unwrap();
        assert_eq!(head.id, Some(12));
        assert_eq!(head.session.as_deref(), Some("S1"));
        assert_eq!(
            own_result(r#"{"id":3,"error":{"code":-32000,"message":"nope"}}"#),
            Err("nope".into())
        );
    }
}
