//! A scripted mock of a Chrome DevTools Protocol endpoint, for tests and
//! benchmarks of CDP clients.
//!
//! One loopback port serves both `GET /json/version` (with a
//! `webSocketDebuggerUrl` pointing back at the mock) and the browser
//! WebSocket. Tests script it so that it reads like the scenario it plays:
//!
//! ```no_run
//! # async fn demo() {
//! use cdp_mock::{Disconnect, MockCdp, Reply};
//! use serde_json::json;
//! use std::time::Duration;
//!
//! let mock = MockCdp::start().await;
//! mock.on("Page.enable", Reply::result(json!({})));
//! mock.on_session("S1", "Page.handleJavaScriptDialog", Reply::error(-32602, "No dialog is showing"));
//! mock.on("Runtime.evaluate", Reply::never());
//! mock.on("Page.navigate", Reply::result(json!({"frameId": "T1"})).after(Duration::from_millis(200)));
//! // ... point the client under test at mock.http_url() or mock.ws_url() ...
//! mock.emit(Some("S1"), "Page.javascriptDialogOpening", json!({"message": "hi", "type": "alert"})).await;
//! mock.drop_connections(Disconnect::Reset).await;
//! # }
//! ```
//!
//! What it answers, in order of precedence:
//! 1. handlers ([`MockCdp::handle`]), in registration order; the first `Some` wins;
//! 2. rules ([`MockCdp::on_session`] before [`MockCdp::on`]); the latest registered wins;
//! 3. a built-in default browser with one page target `T1`, enough for an
//!    attach sequence (`Target.getTargets`, `Target.attachToTarget` → `S1`,
//!    `Page.getFrameTree`, `Target.createTarget`);
//! 4. `{}` for anything else.
//!
//! Several clients may connect at once; each WebSocket gets a
//! `connection_index` (0, 1, …, in accept order) that [`Command`]s carry and
//! [`MockCdp::emit_to`] / [`MockCdp::drop_connection`] take.
//!
//! The mock does not depend on any CDP client crate: it speaks the wire.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Largest message the mock accepts or sends (same as the supervisor's limit).
pub const MAX_MESSAGE_SIZE: usize = 256 << 20;

/// The path of [`MockCdp::ws_url`].
pub const WS_PATH: &str = "/devtools/browser/mock";

/// How long a close handshake may take before the mock drops the socket anyway.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// One command the mock received.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// The client's request id.
    pub id: u64,
    /// e.g. `"Page.enable"`.
    pub method: String,
    /// The command's params (`{}` when absent).
    pub params: Value,
    /// The flatten-mode session it was sent on; `None` for the browser session.
    pub session_id: Option<String>,
    /// Which WebSocket it came on: 0 for the first accepted, then 1, 2…
    pub connection_index: usize,
}

#[derive(Clone, Debug)]
enum ReplyKind {
    Result(Value),
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    Never,
}

/// How the mock answers a command: a result, an error object, or never;
/// optionally late ([`Reply::after`]) and preceded by events ([`Reply::emit_first`]).
#[derive(Clone, Debug)]
pub struct Reply {
    kind: ReplyKind,
    delay: Option<Duration>,
    events_first: Vec<(Option<String>, String, Value)>,
}

impl Reply {
    /// Answer `{"id", "result": result}`.
    pub fn result(result: Value) -> Reply {
        Reply {
            kind: ReplyKind::Result(result),
            delay: None,
            events_first: Vec::new(),
        }
    }

    /// Answer `{"id", "error": {"code", "message"}}`, e.g. `Reply::error(-32602, "No dialog is showing")`.
    pub fn error(code: i64, message: &str) -> Reply {
        Reply {
            kind: ReplyKind::Error {
                code,
                message: message.to_owned(),
                data: None,
            },
            delay: None,
            events_first: Vec::new(),
        }
    }

    /// Like [`Reply::error`], with the error object's `data` field.
    pub fn error_with_data(code: i64, message: &str, data: Value) -> Reply {
        Reply {
            kind: ReplyKind::Error {
                code,
                message: message.to_owned(),
                data: Some(data),
            },
            delay: None,
            events_first: Vec::new(),
        }
    }

    /// Never answer (as Chromium does with a `Runtime.evaluate` blocked by a dialog).
    /// The command is still recorded.
    pub fn never() -> Reply {
        Reply {
            kind: ReplyKind::Never,
            delay: None,
            events_first: Vec::new(),
        }
    }

    /// Answer `delay` after the command arrived (other traffic flows meanwhile).
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    /// Send this event (on `session_id`, `None` = browser session) on the same
    /// connection just before the reply, as Chromium sends
    /// `Page.javascriptDialogClosed` before its reply to `Page.handleJavaScriptDialog`.
    /// Can be chained; events go out in order.
    pub fn emit_first(mut self, session_id: Option<&str>, method: &str, params: Value) -> Reply {
        self.events_first
            .push((session_id.map(str::to_owned), method.to_owned(), params));
        self
    }
}

/// How [`MockCdp::drop_connections`] ends a WebSocket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disconnect {
    /// A WebSocket close frame (code 1000), then the socket closes.
    CloseFrame,
    /// A TCP reset: `SO_LINGER 0` and drop, no close frame.
    Reset,
}

type Handler = Arc<dyn Fn(&Command) -> Option<Reply> + Send + Sync>;

struct Rule {
    session_id: Option<String>,
    method: String,
    reply: Reply,
}

enum Out {
    Send(Message, Option<oneshot::Sender<()>>),
    /// Queue the frame without flushing it: the next `Drop` writes it
    /// together with the close, in one write.
    Feed(Message),
    Drop(Disconnect, oneshot::Sender<()>),
    /// Pre-encoded frames ([`encode_text_frames`]) written to the socket in
    /// one write, under the WebSocket layer (after flushing it).
    Raw(Arc<Vec<u8>>, oneshot::Sender<()>),
}

struct Slot {
    out: mpsc::UnboundedSender<Out>,
    open: bool,
    task: Option<JoinHandle<()>>,
}

struct Target {
    target_id: String,
    url: String,
}

struct State {
    handlers: Vec<Handler>,
    rules: Vec<Rule>,
    commands: Vec<Command>,
    connections: Vec<Slot>,
    targets: Vec<Target>,
    /// session id → target id, for `Page.getFrameTree`.
    sessions: HashMap<String, String>,
    next_session: u64,
    next_target: u64,
    refusing: bool,
    stalling: bool,
    stalled: Vec<TcpStream>,
    accept_task: Option<JoinHandle<()>>,
}

struct Inner {
    addr: SocketAddr,
    state: Mutex<State>,
    command_received: Notify,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running mock CDP endpoint on `127.0.0.1`. Dropping it stops the
/// listener and every connection.
pub struct MockCdp {
    inner: Arc<Inner>,
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_SIZE))
        .max_frame_size(Some(MAX_MESSAGE_SIZE))
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    // Lets `refuse_connections(false)` take the same port back despite TIME_WAIT sockets.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

impl MockCdp {
    /// Starts listening on `127.0.0.1:0` (a free port). Must run inside a tokio runtime.
    ///
    /// # Panics
    /// When no loopback port can be bound (a broken test machine).
    pub async fn start() -> MockCdp {
        let listener = bind("127.0.0.1:0".parse().expect("valid address"))
            .expect("cdp-mock: cannot bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("cdp-mock: bound socket has an address");
        let inner = Arc::new(Inner {
            addr,
            state: Mutex::new(State {
                handlers: Vec::new(),
                rules: Vec::new(),
                commands: Vec::new(),
                connections: Vec::new(),
                targets: vec![Target {
                    target_id: "T1".into(),
                    url: "about:blank".into(),
                }],
                sessions: HashMap::new(),
                next_session: 2,
                next_target: 2,
                refusing: false,
                stalling: false,
                stalled: Vec::new(),
                accept_task: None,
            }),
            command_received: Notify::new(),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::downgrade(&inner)));
        inner.lock().accept_task = Some(task);
        MockCdp { inner }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// `http://127.0.0.1:PORT`: serves `GET /json/version` with a `webSocketDebuggerUrl` of [`MockCdp::ws_url`].
    pub fn http_url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    /// `ws://127.0.0.1:PORT/devtools/browser/mock`: the browser WebSocket.
    pub fn ws_url(&self) -> String {
        format!("ws://{}{WS_PATH}", self.inner.addr)
    }

    /// Answers every command named `method` (on any session) with `reply`.
    /// A later rule for the same method replaces it; session rules come first.
    pub fn on(&self, method: &str, reply: Reply) {
        self.inner.lock().rules.push(Rule {
            session_id: None,
            method: method.to_owned(),
            reply,
        });
    }

    /// Answers every command named `method` sent on session `session_id` with `reply`.
    pub fn on_session(&self, session_id: &str, method: &str, reply: Reply) {
        self.inner.lock().rules.push(Rule {
            session_id: Some(session_id.to_owned()),
            method: method.to_owned(),
            reply,
        });
    }

    /// Adds a scripted handler, asked before any rule: the first handler
    /// returning `Some` answers the command; `None` passes it on.
    pub fn handle(&self, handler: impl Fn(&Command) -> Option<Reply> + Send + Sync + 'static) {
        self.inner.lock().handlers.push(Arc::new(handler));
    }

    /// Forgets every rule and handler (the built-in defaults remain).
    pub fn clear_rules(&self) {
        let mut state = self.inner.lock();
        state.rules.clear();
        state.handlers.clear();
    }

    /// Sends an event to every open connection and waits until it is written.
    /// `session_id: None` is a browser-level event.
    pub async fn emit(&self, session_id: Option<&str>, method: &str, params: Value) {
        self.send_to(None, Message::text(event_text(session_id, method, &params)))
            .await;
    }

    /// Sends an event to the connection with this index (if open) and waits until it is written.
    pub async fn emit_to(
        &self,
        connection_index: usize,
        session_id: Option<&str>,
        method: &str,
        params: Value,
    ) {
        self.send_to(
            Some(connection_index),
            Message::text(event_text(session_id, method, &params)),
        )
        .await;
    }

    /// Writes pre-encoded frames ([`encode_text_frames`]) to every open
    /// connection in one write each, and waits until they are written: a
    /// flood sender that is not the bottleneck (no per-frame encoding or
    /// syscall), for throughput benchmarks.
    pub async fn flood(&self, frames: Arc<Vec<u8>>) {
        self.to_open(None, |ack| Out::Raw(frames.clone(), ack))
            .await;
    }

    /// Sends `text` as is, in a text frame, to every open connection (malformed JSON, a huge message, a stray reply…).
    pub async fn send_raw_text(&self, text: impl Into<String>) {
        self.send_to(None, Message::text(text.into())).await;
    }

    /// Sends a binary frame (CDP never does) to every open connection.
    pub async fn send_binary(&self, bytes: Vec<u8>) {
        self.send_to(None, Message::binary(bytes)).await;
    }

    async fn send_to(&self, index: Option<usize>, message: Message) {
        self.to_open(index, |ack| Out::Send(message.clone(), Some(ack)))
            .await;
    }

    /// Queues `out(ack)` on every open connection (or only `index`) and
    /// waits until each has acted on it.
    async fn to_open(&self, index: Option<usize>, out: impl Fn(oneshot::Sender<()>) -> Out) {
        let acks: Vec<oneshot::Receiver<()>> = {
            let state = self.inner.lock();
            state
                .connections
                .iter()
                .enumerate()
                .filter(|(i, slot)| slot.open && index.is_none_or(|want| want == *i))
                .filter_map(|(_, slot)| {
                    let (ack, done) = oneshot::channel();
                    slot.out.send(out(ack)).ok().map(|()| done)
                })
                .collect()
        };
        for done in acks {
            let _ = done.await;
        }
    }

    /// Sends an event and ends every open connection the given way in the
    /// same write, so the client reads both in one burst (a socket that dies
    /// right after an event). Waits until the connections are gone.
    pub async fn emit_and_drop(
        &self,
        session_id: Option<&str>,
        method: &str,
        params: Value,
        how: Disconnect,
    ) {
        let text = event_text(session_id, method, &params);
        let acks: Vec<oneshot::Receiver<()>> = {
            let state = self.inner.lock();
            state
                .connections
                .iter()
                .filter(|slot| slot.open)
                .filter_map(|slot| {
                    let (ack, done) = oneshot::channel();
                    slot.out.send(Out::Feed(Message::text(text.clone()))).ok()?;
                    slot.out.send(Out::Drop(how, ack)).ok().map(|()| done)
                })
                .collect()
        };
        for done in acks {
            let _ = done.await;
        }
    }

    /// Ends every open connection the given way and waits until they are gone.
    pub async fn drop_connections(&self, how: Disconnect) {
        self.drop_where(None, how).await;
    }

    /// Ends the connection with this index (if open) and waits until it is gone.
    pub async fn drop_connection(&self, connection_index: usize, how: Disconnect) {
        self.drop_where(Some(connection_index), how).await;
    }

    async fn drop_where(&self, index: Option<usize>, how: Disconnect) {
        self.to_open(index, |ack| Out::Drop(how, ack)).await;
    }

    /// `true`: stop listening, so new connections (HTTP or WebSocket) are
    /// refused; open connections stay. `false`: listen again on the **same
    /// port**. Must be called inside the tokio runtime.
    pub fn refuse_connections(&self, refuse: bool) {
        let mut state = self.inner.lock();
        if state.refusing == refuse {
            return;
        }
        state.refusing = refuse;
        if refuse {
            if let Some(task) = state.accept_task.take() {
                task.abort();
            }
            return;
        }
        let addr = self.inner.addr;
        let weak = Arc::downgrade(&self.inner);
        match bind(addr) {
            Ok(listener) => state.accept_task = Some(tokio::spawn(accept_loop(listener, weak))),
            Err(_) => {
                // The aborted listener is dropped on the runtime's next turn; retry until it is.
                state.accept_task = Some(tokio::spawn(async move {
                    for _ in 0..400 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        if let Ok(listener) = bind(addr) {
                            accept_loop(listener, weak).await;
                            return;
                        }
                    }
                    eprintln!("cdp-mock: cannot listen on {addr} again");
                }));
            }
        }
    }

    /// `true`: accept TCP connections but never answer them (no HTTP
    /// response, no WebSocket handshake): an endpoint that never returns.
    /// `false`: answer again (connections stalled so far are closed).
    pub fn stall_connections(&self, stall: bool) {
        let mut state = self.inner.lock();
        state.stalling = stall;
        if !stall {
            state.stalled.clear();
        }
    }

    /// Every command received so far, in arrival order (across connections).
    pub fn commands(&self) -> Vec<Command> {
        self.inner.lock().commands.clone()
    }

    /// The commands named `method` received so far.
    pub fn commands_named(&self, method: &str) -> Vec<Command> {
        self.inner
            .lock()
            .commands
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// The first command named `method` (already received, or the next one
    /// within `timeout`); `None` if none came in time.
    pub async fn wait_for_command(&self, method: &str, timeout: Duration) -> Option<Command> {
        self.wait_for_commands(method, 1, timeout)
            .await
            .into_iter()
            .next()
    }

    /// Waits until `count` commands named `method` have been received (or
    /// `timeout` passes) and returns those received (possibly fewer).
    pub async fn wait_for_commands(
        &self,
        method: &str,
        count: usize,
        timeout: Duration,
    ) -> Vec<Command> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.command_received.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let found = self.commands_named(method);
            if found.len() >= count {
                return found;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.commands_named(method);
            }
        }
    }

    /// WebSocket connections accepted since start (open or not).
    pub fn connection_count(&self) -> usize {
        self.inner.lock().connections.len()
    }

    /// WebSocket connections open now.
    pub fn open_connection_count(&self) -> usize {
        self.inner
            .lock()
            .connections
            .iter()
            .filter(|s| s.open)
            .count()
    }

    /// Waits until `count` WebSocket connections have been accepted since
    /// start; `false` if that did not happen within `timeout`.
    pub async fn wait_for_connections(&self, count: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.connection_count() < count {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }
}

impl Drop for MockCdp {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        if let Some(task) = state.accept_task.take() {
            task.abort();
        }
        for slot in &mut state.connections {
            if let Some(task) = slot.task.take() {
                task.abort();
            }
        }
        state.stalled.clear();
    }
}

/// An event as CDP sends it: `{"method", "params", "sessionId"?}` as JSON
/// text (`session_id: None`: a browser-level event).
pub fn event_text(session_id: Option<&str>, method: &str, params: &Value) -> String {
    let mut event = json!({"method": method, "params": params});
    if let Some(session_id) = session_id {
        event["sessionId"] = json!(session_id);
    }
    event.to_string()
}

async fn accept_loop(listener: TcpListener, inner: std::sync::Weak<Inner>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let Some(inner) = inner.upgrade() else { return };
        let _ = stream.set_nodelay(true);
        {
            let mut state = inner.lock();
            if state.refusing {
                // Accepted in the instant before the listener went away: refuse it loudly.
                let _ = stream.set_zero_linger();
                continue;
            }
            if state.stalling {
                state.stalled.push(stream);
                continue;
            }
        }
        tokio::spawn(serve_socket(inner, stream));
    }
}

/// Reads the request line without consuming it: `GET /json…` is HTTP, anything else a WebSocket handshake.
async fn serve_socket(inner: Arc<Inner>, stream: TcpStream) {
    let mut buf = [0u8; 2048];
    let first_line = loop {
        let n = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(end) = buf[..n].windows(2).position(|w| w == b"\r\n") {
            break String::from_utf8_lossy(&buf[..end]).into_owned();
        }
        if n == buf.len() {
            return;
        }
        // `peek` returns at once while data is buffered; wait for the rest of the line.
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    if first_line.starts_with("GET /json") {
        serve_http(&inner, stream, &first_line).await;
    } else {
        serve_websocket(inner, stream).await;
    }
}

async fn serve_http(inner: &Inner, mut stream: TcpStream, first_line: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let path = first_line.split(' ').nth(1).unwrap_or("");
    let ws_url = format!("ws://{}{WS_PATH}", inner.addr);
    let (status, body) = match path.trim_end_matches('/') {
        "/json/version" => (
            "200 OK",
            json!({
                "Browser": "HeadlessChrome/156.0.0.0 (cdp-mock)",
                "Protocol-Version": "1.3",
                "User-Agent": "cdp-mock",
                "webSocketDebuggerUrl": ws_url,
            }),
        ),
        "/json" | "/json/list" => {
            let state = inner.lock();
            let targets: Vec<Value> = state
                .targets
                .iter()
                .map(|t| {
                    json!({
                        "id": t.target_id, "type": "page", "url": t.url, "title": "",
                        "webSocketDebuggerUrl": format!("ws://{}/devtools/page/{}", inner.addr, t.target_id),
                    })
                })
                .collect();
            ("200 OK", Value::Array(targets))
        }
        _ => ("404 Not Found", json!({"error": "not found"})),
    };
    let body = body.to_string();
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn serve_websocket(inner: Arc<Inner>, stream: TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async_with_config(stream, Some(ws_config())).await
    else {
        return;
    };
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let index = {
        let mut state = inner.lock();
        state.connections.push(Slot {
            out: out_tx.clone(),
            open: true,
            task: None,
        });
        state.connections.len() - 1
    };
    let task = tokio::spawn(connection_loop(inner.clone(), index, ws, out_tx, out_rx));
    if let Some(slot) = inner.lock().connections.get_mut(index)
        && slot.open
    {
        slot.task = Some(task);
    }
}

/// How much of a raw flood is written before the commands that came
/// meanwhile are read ([`MockCdp::flood`]).
const RAW_SLICE: usize = 256 * 1024;

async fn connection_loop(
    inner: Arc<Inner>,
    index: usize,
    mut ws: WebSocketStream<TcpStream>,
    out_tx: mpsc::UnboundedSender<Out>,
    mut out_rx: mpsc::UnboundedReceiver<Out>,
) {
    loop {
        tokio::select! {
            incoming = ws.next() => match incoming {
                Some(Ok(Message::Text(text))) => on_command(&inner, index, text.as_str(), &out_tx),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            out = out_rx.recv() => match out {
                Some(Out::Send(message, ack)) => {
                    let sent = ws.send(message).await;
                    if let Some(ack) = ack {
                        let _ = ack.send(());
                    }
                    if sent.is_err() {
                        break;
                    }
                }
                Some(Out::Raw(bytes, ack)) => {
                    use futures_util::FutureExt;
                    use tokio::io::AsyncWriteExt;
                    // In slices, taking the commands that came meanwhile
                    // between them: a client's command sent during a flood
                    // is seen when it arrives, not once the whole flood is
                    // written (its reply still queues behind the flood).
                    let mut written = ws.flush().await.is_ok();
                    let mut closed = false;
                    for slice in bytes.chunks(RAW_SLICE) {
                        if !written || closed {
                            break;
                        }
                        written = ws.get_mut().write_all(slice).await.is_ok();
                        while let Some(incoming) = ws.next().now_or_never() {
                            match incoming {
                                Some(Ok(Message::Text(text))) => {
                                    on_command(&inner, index, text.as_str(), &out_tx)
                                }
                                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                                    closed = true;
                                    break;
                                }
                                Some(Ok(_)) => {}
                            }
                        }
                    }
                    let _ = ack.send(());
                    if !written || closed {
                        break;
                    }
                }
                Some(Out::Feed(message)) => {
                    if ws.feed(message).await.is_err() {
                        break;
                    }
                }
                Some(Out::Drop(how, ack)) => {
                    mark_closed(&inner, index);
                    match how {
                        Disconnect::CloseFrame => {
                            let _ = ws.close(None).await;
                            // Wait for the client's close reply so the close is clean.
                            let _ = tokio::time::timeout(CLOSE_GRACE, async {
                                while let Some(Ok(_)) = ws.next().await {}
                            })
                            .await;
                        }
                        Disconnect::Reset => {
                            let _ = ws.get_ref().set_zero_linger();
                        }
                    }
                    drop(ws);
                    let _ = ack.send(());
                    return;
                }
                None => break,
            },
        }
    }
    mark_closed(&inner, index);
}

/// Encodes `texts` as WebSocket text frames from a server (unmasked, one
/// frame each), back to back: the bytes [`MockCdp::flood`] writes.
pub fn encode_text_frames<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for t in texts {
        let len = t.len();
        out.push(0x81); // FIN, text
        match len {
            0..=125 => out.push(len as u8),
            126..=0xFFFF => {
                out.push(126);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                out.push(127);
                out.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(t.as_bytes());
    }
    out
}

fn mark_closed(inner: &Inner, index: usize) {
    if let Some(slot) = inner.lock().connections.get_mut(index) {
        slot.open = false;
    }
}

fn on_command(inner: &Inner, index: usize, text: &str, out: &mpsc::UnboundedSender<Out>) {
    let Some(command) = parse_command(text, index) else {
        return;
    };
    let reply = reply_for(inner, &command);
    inner.command_received.notify_waiters();
    let frames = reply_frames(&command, reply.events_first, reply.kind);
    match reply.delay {
        None => {
            for frame in frames {
                let _ = out.send(Out::Send(Message::text(frame), None));
            }
        }
        Some(delay) => {
            let out = out.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                for frame in frames {
                    let _ = out.send(Out::Send(Message::text(frame), None));
                }
            });
        }
    }
}

/// A command as the client sent it on connection `index`; `None` for text
/// that is not a JSON command with an id (ignored, as Chromium would).
fn parse_command(text: &str, index: usize) -> Option<Command> {
    let value = serde_json::from_str::<Value>(text).ok()?;
    let id = value.get("id").and_then(Value::as_u64)?;
    Some(Command {
        id,
        method: value
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        params: value.get("params").cloned().unwrap_or_else(|| json!({})),
        session_id: value
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        connection_index: index,
    })
}

/// Records `command` and picks its reply: the first handler that takes
/// it, else the newest rule for its method (one naming its session
/// first), else the browser's default.
fn reply_for(inner: &Inner, command: &Command) -> Reply {
    let mut state = inner.lock();
    state.commands.push(command.clone());
    let handlers = state.handlers.clone();
    drop(state);
    // Handlers run without the lock: they may call back into the mock.
    if let Some(reply) = handlers.iter().find_map(|h| h(command)) {
        return reply;
    }
    let mut state = inner.lock();
    let rule = state
        .rules
        .iter()
        .rev()
        .find(|r| {
            r.method == command.method
                && r.session_id.is_some()
                && r.session_id == command.session_id
        })
        .or_else(|| {
            state
                .rules
                .iter()
                .rev()
                .find(|r| r.method == command.method && r.session_id.is_none())
        })
        .map(|r| r.reply.clone());
    match rule {
        Some(reply) => reply,
        None => default_reply(&mut state, command),
    }
}

/// The text frames a reply sends: its events first, then the reply itself
/// (with the command's session), unless it never replies.
fn reply_frames(
    command: &Command,
    events_first: Vec<(Option<String>, String, Value)>,
    kind: ReplyKind,
) -> Vec<String> {
    let mut frames: Vec<String> = events_first
        .iter()
        .map(|(session, method, params)| event_text(session.as_deref(), method, params))
        .collect();
    let id = command.id;
    let mut reply_json = match kind {
        ReplyKind::Never => None,
        ReplyKind::Result(result) => Some(json!({"id": id, "result": result})),
        ReplyKind::Error {
            code,
            message,
            data,
        } => {
            let mut error = json!({"code": code, "message": message});
            if let Some(data) = data {
                error["data"] = data;
            }
            Some(json!({"id": id, "error": error}))
        }
    };
    if let (Some(reply_json), Some(session)) = (reply_json.as_mut(), &command.session_id) {
        reply_json["sessionId"] = json!(session);
    }
    frames.extend(reply_json.map(|r| r.to_string()));
    frames
}

fn target_info(target: &Target, attached: bool) -> Value {
    json!({
        "targetId": target.target_id, "type": "page", "url": target.url, "title": "",
        "attached": attached, "canAccessOpener": false, "browserContextId": "B1",
    })
}

/// The built-in browser: one page `T1`; attaching to it gives `S1`.
fn default_reply(state: &mut State, command: &Command) -> Reply {
    let str_param = |name: &str| {
        command
            .params
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match command.method.as_str() {
        "Target.getTargets" => {
            let infos: Vec<Value> = state
                .targets
                .iter()
                .map(|t| target_info(t, state.sessions.values().any(|v| *v == t.target_id)))
                .collect();
            Reply::result(json!({"targetInfos": infos}))
        }
        "Target.attachToTarget" => {
            let target_id = str_param("targetId").unwrap_or_default();
            let Some(target) = state.targets.iter().find(|t| t.target_id == target_id) else {
                return Reply::error(-32602, "No target with given id found");
            };
            let info = target_info(target, true);
            let session_id = if target_id == "T1" {
                "S1".to_owned()
            } else {
                state.next_session += 1;
                format!("S{}", state.next_session - 1)
            };
            state.sessions.insert(session_id.clone(), target_id);
            Reply::result(json!({"sessionId": session_id})).emit_first(
                None,
                "Target.attachedToTarget",
                json!({"sessionId": session_id, "targetInfo": info, "waitingForDebugger": false}),
            )
        }
        "Target.createTarget" => {
            let target_id = format!("T{}", state.next_target);
            state.next_target += 1;
            let url = str_param("url").unwrap_or_else(|| "about:blank".into());
            state.targets.push(Target {
                target_id: target_id.clone(),
                url,
            });
            Reply::result(json!({"targetId": target_id}))
        }
        "Page.getFrameTree" => {
            let target = command
                .session_id
                .as_ref()
                .and_then(|s| state.sessions.get(s).cloned())
                .or_else(|| (command.session_id.as_deref() == Some("S1")).then(|| "T1".to_owned()));
            match target.and_then(|id| state.targets.iter().find(|t| t.target_id == id)) {
                Some(t) => Reply::result(json!({
                    "frameTree": {
                        "frame": {"id": t.target_id, "url": t.url, "securityOrigin": "null", "loaderId": "L", "mimeType": "text/html"},
                        "childFrames": [],
                    }
                })),
                None => Reply::error(-32601, "'Page.getFrameTree' wasn't found"),
            }
        }
        "Browser.getVersion" => Reply::result(json!({
            "protocolVersion": "1.3", "product": "HeadlessChrome/156.0.0.0", "revision": "mock",
            "userAgent": "cdp-mock", "jsVersion": "0",
        })),
        _ => Reply::result(json!({})),
    }
}
