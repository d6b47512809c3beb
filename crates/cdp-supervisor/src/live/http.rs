//! The live view over HTTP: the page, its script and style, and the small
//! API under a token (DESIGN "A person at the wheel"):
//!
//! | route | what |
//! |---|---|
//! | `GET /live/<token>` | the page |
//! | `GET /live/<token>/state` | `{task, access, expires_at, controller, reason, since, until, url, title, tabs, pending_dialogs, connection, viewers, casting}` |
//! | `POST /live/<token>/answer` | `{dialog_id, action, text?, username?, password?}` → `{ok, dialog}` (control only) |
//! | `POST /live/<token>/done` | ends the handoff → `{handoff}` (control only) |
//! | `GET /live/<token>/ws` | WebSocket: frames and state out, input in (and `{"type":"tab", target_id}`: show that tab) |
//!
//! A wrong, expired or ended token is a bare 404, whatever the route. Every
//! request must name this server in `Host` (DNS rebinding), and one that
//! carries an `Origin` must come from this same origin: a page of any other
//! site — another port of this machine included — can neither read the API
//! nor open the WebSocket (cross-site WebSocket hijacking).

use super::input::{InputMessage, commands};
use super::{Access, EndedBy, TaskLive, hub};
use crate::supervisor::snapshot::ClosedBy;
use crate::supervisor::state::{DialogAction, DialogRequest, Login};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

const PAGE: &str = include_str!("assets/live.html");
const SCRIPT: &str = include_str!("assets/live.js");
const STYLE: &str = include_str!("assets/live.css");
/// The page may load only its own script, style and frames, and talk only
/// to its own origin.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
/// Largest message a viewer may send (an input event, a paste).
pub const WS_MESSAGE_MAX_BYTES: usize = 64 * 1024;
/// Largest API request body.
const BODY_MAX_BYTES: usize = 64 * 1024;
/// A state update goes out at most this often per viewer.
const STATE_MIN_INTERVAL: Duration = Duration::from_millis(100);
/// A viewer's write that takes longer than this drops the viewer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Which `Host` names this server.
#[derive(Clone, Debug)]
pub struct HostCheck {
    bound: SocketAddr,
}

impl HostCheck {
    /// For a listener bound to `bound`: loopback names, or its address.
    pub fn for_bound(bound: SocketAddr) -> HostCheck {
        HostCheck { bound }
    }

    fn host_ok(&self, host: &str) -> bool {
        if self.bound.ip().is_unspecified() {
            return true;
        }
        let Ok(url) = url::Url::parse(&format!("http://{host}/")) else {
            return false;
        };
        if url.path() != "/" || !url.username().is_empty() {
            return false;
        }
        let name = url.host_str().unwrap_or("").to_ascii_lowercase();
        ["localhost", "127.0.0.1", "[::1]"].contains(&name.as_str())
            || name == literal(self.bound.ip())
    }
}

fn literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// `http://host:port` of a listener bound to `bound` (loopback for an
/// unspecified bind).
pub fn base_url(bound: SocketAddr) -> String {
    let ip = if bound.ip().is_unspecified() {
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
    } else {
        bound.ip()
    };
    format!("http://{}:{}", literal(ip), bound.port())
}

/// The live view's routes, with the Host and same-origin checks in front.
pub fn router(hosts: HostCheck) -> axum::Router {
    axum::Router::new()
        .route("/live/static/live.js", axum::routing::get(script))
        .route("/live/static/live.css", axum::routing::get(style))
        .route("/live/{token}", axum::routing::get(page))
        .route("/live/{token}/state", axum::routing::get(state))
        .route("/live/{token}/answer", axum::routing::post(answer))
        .route("/live/{token}/done", axum::routing::post(done))
        .route("/live/{token}/ws", axum::routing::get(ws))
        // A route asked with another method: a bare 404 too, as for a
        // wrong token (a 405 would say which routes exist).
        .method_not_allowed_fallback(|| async { not_found() })
        .layer(axum::middleware::from_fn_with_state(Arc::new(hosts), guard))
}

async fn guard(State(hosts): State<Arc<HostCheck>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !hosts.host_ok(host) {
        return (
            StatusCode::FORBIDDEN,
            "forbidden: the Host header does not name this server\n",
        )
            .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        // The live page's own origin: this Host, over http (or https
        // behind a proxy that terminates TLS).
        let host = host.to_ascii_lowercase();
        let same = origin.to_str().ok().is_some_and(|o| {
            let o = o.to_ascii_lowercase();
            o == format!("http://{host}") || o == format!("https://{host}")
        });
        if !same {
            tracing::warn!("refused a live-view request from another origin");
            return (
                StatusCode::FORBIDDEN,
                "forbidden: the live view answers only its own pages\n",
            )
                .into_response();
        }
    }
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}

/// The bare 404 of a wrong, expired or ended token.
fn not_found() -> Response {
    StatusCode::NOT_FOUND.into_response()
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

async fn page(Path(token): Path<String>) -> Response {
    if hub().open(&token).is_none() {
        return not_found();
    }
    asset(PAGE, "text/html; charset=utf-8")
}

/// What `/state` and the WebSocket's `state` messages say.
pub fn state_of(task: &TaskLive, access: Access, expires_at: f64) -> Value {
    let control = task.person_in_control();
    let mut v = json!({
        "task": task.task_id(),
        "access": access,
        "expires_at": expires_at,
        "controller": if control.is_some() { "person" } else { "agent" },
        "reason": control.as_ref().map(|c| c.reason.clone()),
        "since": control.as_ref().map(|c| c.since),
        "until": control.as_ref().map(|c| c.until),
        "viewers": task.viewer_count(),
        "casting": task.casting(),
        "ended": task.is_ended(),
    });
    match task.supervisor() {
        Some(sup) => {
            let snap = sup.snapshot();
            v["url"] = json!(snap.url);
            v["title"] = json!(snap.title);
            v["tabs"] = json!(snap.tabs);
            v["pending_dialogs"] = json!(snap.pending_dialogs);
            v["connection"] = json!(snap.connection);
        }
        None => {
            v["tabs"] = json!([]);
            v["pending_dialogs"] = json!([]);
            v["connection"] = json!("closed");
        }
    }
    v
}

async fn state(Path(token): Path<String>) -> Response {
    let Some((task, access, expires_at)) = hub().open_until(&token) else {
        return not_found();
    };
    axum::Json(state_of(&task, access, expires_at)).into_response()
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        axum::Json(json!({"ok": false, "error": message.into()})),
    )
        .into_response()
}

const VIEW_ONLY: &str = "this link is view-only: only the person the task was handed to can act";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    dialog_id: String,
    action: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

async fn read_json<T: for<'de> Deserialize<'de>>(request: Request) -> Result<T, Response> {
    let bytes = axum::body::to_bytes(request.into_body(), BODY_MAX_BYTES)
        .await
        .map_err(|_| {
            refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body may have at most {BODY_MAX_BYTES} bytes"),
            )
        })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        refuse(
            StatusCode::BAD_REQUEST,
            format!("the body must be JSON {{dialog_id, action: accept|dismiss, text?, username?, password?}}: {}", crate::supervisor::wording::cut(&e.to_string())),
        )
    })
}

async fn answer(Path(token): Path<String>, request: Request) -> Response {
    let Some((task, access)) = hub().open(&token) else {
        return not_found();
    };
    if access != Access::Control {
        return refuse(StatusCode::FORBIDDEN, VIEW_ONLY);
    }
    let a: Answer = match read_json(request).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let action = match a.action.as_str() {
        "accept" => DialogAction::Accept,
        "dismiss" => DialogAction::Dismiss,
        other => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!(
                    "unknown action {:?}; accept or dismiss",
                    super::input::cut(other)
                ),
            );
        }
    };
    let Some(sup) = task.supervisor() else {
        return refuse(StatusCode::CONFLICT, "the task has no browser now");
    };
    let login = match (action, a.username, a.password) {
        (DialogAction::Accept, Some(username), Some(password)) => Some(Login {
            username,
            password: crate::supervisor::credentials::Secret::new(password),
        }),
        _ => None,
    };
    let req = DialogRequest {
        action,
        prompt_text: a.text,
        dialog_id: Some(a.dialog_id),
        files: None,
        login,
    };
    match sup.answer_dialog_as(req, ClosedBy::User).await {
        Ok(closed) => axum::Json(json!({"ok": true, "dialog": closed})).into_response(),
        Err(e) => refuse(StatusCode::CONFLICT, e.to_string()),
    }
}

async fn done(Path(token): Path<String>) -> Response {
    let Some((task, access)) = hub().open(&token) else {
        return not_found();
    };
    if access != Access::Control {
        return refuse(StatusCode::FORBIDDEN, VIEW_ONLY);
    }
    match task.end_handoff(None, EndedBy::Person) {
        Some(report) => axum::Json(json!({"ok": true, "handoff": report})).into_response(),
        None => not_found(),
    }
}

async fn ws(Path(token): Path<String>, mut request: Request) -> Response {
    let Some((task, access, expires_at)) = hub().open_until(&token) else {
        return not_found();
    };
    let headers = request.headers();
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return (
            StatusCode::BAD_REQUEST,
            "a WebSocket upgrade is expected here\n",
        )
            .into_response();
    };
    if !upgrade {
        return (
            StatusCode::BAD_REQUEST,
            "a WebSocket upgrade is expected here\n",
        )
            .into_response();
    }
    let Some(watching) = task.watch() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{} viewers already watch this task\n", super::VIEWERS_MAX),
        )
            .into_response();
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(WS_MESSAGE_MAX_BYTES))
            .max_frame_size(Some(WS_MESSAGE_MAX_BYTES));
        let socket = tokio_tungstenite::WebSocketStream::from_raw_socket(
            hyper_util::rt::TokioIo::new(upgraded),
            Role::Server,
            Some(config),
        )
        .await;
        serve_viewer(task, access, expires_at, token, socket).await;
        drop(watching);
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(header::SEC_WEBSOCKET_ACCEPT, accept)
        .body(axum::body::Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// One viewer: frames and state out (the newest of each, never a queue),
/// input in. Ends when the viewer goes, its token stops working (a
/// handoff's control link at hand-back), or the task ends — the last two
/// told to the page first.
async fn serve_viewer<S>(
    task: Arc<TaskLive>,
    access: Access,
    expires_at: f64,
    token: String,
    socket: tokio_tungstenite::WebSocketStream<S>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut stream) = socket.split();
    let (replies_tx, mut replies) = tokio::sync::mpsc::channel::<Value>(8);
    let reader_task = task.clone();
    let reader = async move {
        while let Some(msg) = stream.next().await {
            let text = match msg {
                Ok(Message::Text(t)) => t,
                Ok(Message::Close(_)) | Err(_) => return,
                Ok(_) => continue,
            };
            if let Some(reply) = on_input(&reader_task, access, &token, text.as_str()).await
                && replies_tx.try_send(reply).is_err()
            {
                // A viewer that floods errors without reading them loses some.
            }
        }
    };
    let my_handoff = task.active_handoff();
    let writer = async {
        let mut frames = task.frames();
        let mut control = task.control_changes();
        let sup_snaps = task.supervisor().map(|s| s.subscribe());
        let mut snaps = sup_snaps;
        let mut sent_seq = 0u64;
        let mut last_state = String::new();
        let mut state_due = true;
        loop {
            if task.is_ended() {
                let _ = send(&mut sink, json!({"type": "ended", "message": "The task has ended: the agent's browser is closed. You can close this page."})).await;
                return;
            }
            if access == Access::Control && task.active_handoff() != my_handoff {
                let _ = send(&mut sink, json!({"type": "handed_back", "message": "Handed back to the agent. Thank you — you can close this page."})).await;
                return;
            }
            if state_due {
                let s = state_of(&task, access, expires_at).to_string();
                if s != last_state {
                    if send_text(&mut sink, s.clone()).await.is_err() {
                        return;
                    }
                    last_state = s;
                }
                state_due = false;
            }
            let frame = frames.borrow_and_update().clone();
            if let Some(f) = frame.filter(|f| f.seq != sent_seq) {
                sent_seq = f.seq;
                let m = json!({"type": "frame", "seq": f.seq, "data": f.data,
                               "width": f.metadata.device_width, "height": f.metadata.device_height,
                               "scroll_x": f.metadata.scroll_offset_x, "scroll_y": f.metadata.scroll_offset_y,
                               "target_id": f.target_id});
                if send(&mut sink, m).await.is_err() {
                    return;
                }
                continue;
            }
            let snap_changed = async {
                match snaps.as_mut() {
                    Some(s) => s.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = frames.changed() => if r.is_err() { return },
                r = control.changed() => {
                    if r.is_err() { return }
                    state_due = true;
                    snaps = task.supervisor().map(|s| s.subscribe());
                }
                ok = snap_changed => {
                    if !ok { snaps = task.supervisor().map(|s| s.subscribe()); }
                    tokio::time::sleep(STATE_MIN_INTERVAL).await;
                    state_due = true;
                }
                reply = replies.recv() => match reply {
                    Some(r) => if send(&mut sink, r).await.is_err() { return },
                    None => return,
                },
                () = tokio::time::sleep(Duration::from_secs(1)) => state_due = true,
            }
        }
    };
    tokio::select! {
        () = reader => {}
        () = writer => {}
    }
}

async fn send<S>(sink: &mut S, v: Value) -> Result<(), ()>
where
    S: futures_util::Sink<Message> + Unpin,
{
    send_text(sink, v.to_string()).await
}

async fn send_text<S>(sink: &mut S, text: String) -> Result<(), ()>
where
    S: futures_util::Sink<Message> + Unpin,
{
    match tokio::time::timeout(WRITE_TIMEOUT, sink.send(Message::text(text))).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// A viewer's message: input for the shown tab (control links only, while
/// the person has the task). Returns what to tell the viewer, if anything.
async fn on_input(task: &TaskLive, access: Access, token: &str, text: &str) -> Option<Value> {
    let error = |m: String| Some(json!({"type": "error", "message": m}));
    // The token may have ended (Done elsewhere) or expired since the socket opened.
    if hub().open(token).is_none() {
        return error("this link has ended".into());
    }
    if access != Access::Control {
        return error(VIEW_ONLY.into());
    }
    if let Ok(v) = serde_json::from_str::<Value>(text)
        && v["type"] == "tab"
    {
        // The person picks a tab (a popup they opened): it becomes current,
        // and the cast follows it.
        let target = v["target_id"].as_str().unwrap_or("");
        let sup = task.supervisor()?;
        return match sup.select_tab(target).await {
            Ok(()) => None,
            Err(e) => error(format!(
                "cannot show that tab: {}",
                crate::supervisor::wording::cut(&e.to_string())
            )),
        };
    }
    let msg: InputMessage = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => {
            return error(format!(
                "not an input message: {}",
                crate::supervisor::wording::cut(&e.to_string())
            ));
        }
    };
    let frame = task.frames().borrow().clone();
    let Some(frame) = frame else {
        return error("no screen yet: wait for the first frame".into());
    };
    let cmds = match commands(msg, &frame.metadata) {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    let sup = task.supervisor()?;
    let conn = sup.live_connection()?;
    let Ok((_, session)) = sup.route(None, frame.target_id.as_deref(), false).await else {
        return error("the shown tab is gone".into());
    };
    for c in cmds {
        // Sent in order, replies not awaited: a dialog the input opens
        // holds them, and the person answers it on this page.
        drop(conn.send(Some(&session), c.method, c.params, Duration::from_secs(5)));
    }
    None
}
