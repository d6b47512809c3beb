//! The dialog bridge behind a CDP proxy that behaves like Browserbase's: it
//! forwards everything and answers every native dialog itself at once. In
//! front of a real Chromium, on pages whose CSP allows connecting to their
//! own origin only (`connect-src 'self'`) and that are secure contexts like
//! https pages (`--unsafely-treat-insecure-origin-as-secure`: no
//! certificates needed), in the main frame and in an OOPIF: alert, confirm (accept and dismiss) and prompt reach the agent as
//! pending dialogs and the page gets the agent's answers — none of them was
//! a native dialog. A page that hooks `XMLHttpRequest`, `JSON.stringify` and
//! `Function.prototype.call` never sees the bridge's secret, and a request
//! it forges to the bridge path is failed and never becomes a dialog.

mod common;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use cdp_supervisor::browser::LocalChromium;
use cdp_supervisor::demo_site::SiteServer;
use cdp_supervisor::supervisor::driver::{Supervisor, SupervisorOptions};
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::DialogAction;
use common::Harness;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

/// Ids of the proxy's own commands: far above the supervisor's, within
/// the int32 Chromium reads ids as.
const PROXY_IDS: u64 = 1_000_000_000;

/// A Browserbase-like CDP proxy in front of `upstream` (a ws URL): every
/// `Page.javascriptDialogOpening` is answered by the proxy itself, at once.
/// Returns the proxy's ws URL and how many native dialogs it answered.
async fn auto_dismissing_proxy(upstream: String) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let path = url::Url::parse(&upstream).unwrap().path().to_owned();
    let answered = Arc::new(AtomicUsize::new(0));
    let count = answered.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let upstream = upstream.clone();
            let count = count.clone();
            tokio::spawn(async move {
                let Ok(client) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                let Ok((server, _)) = tokio_tungstenite::connect_async(upstream.as_str()).await
                else {
                    return;
                };
                let (mut c_tx, mut c_rx) = client.split();
                let (s_tx, mut s_rx) = server.split();
                let s_tx = Arc::new(tokio::sync::Mutex::new(s_tx));
                let up = s_tx.clone();
                let to_server = tokio::spawn(async move {
                    while let Some(Ok(m)) = c_rx.next().await {
                        if up.lock().await.send(m).await.is_err() {
                            break;
                        }
                    }
                });
                let mut next = PROXY_IDS;
                while let Some(Ok(m)) = s_rx.next().await {
                    if let Message::Text(text) = &m {
                        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                        if v["id"].as_u64().is_some_and(|id| id >= PROXY_IDS) {
                            continue; // the reply to our own answer
                        }
                        if v["method"] == "Page.javascriptDialogOpening" {
                            next += 1;
                            count.fetch_add(1, Ordering::SeqCst);
                            let mut answer = json!({"id": next, "method": "Page.handleJavaScriptDialog",
                                                    "params": {"accept": false}});
                            if let Some(s) = v.get("sessionId") {
                                answer["sessionId"] = s.clone();
                            }
                            let _ = s_tx
                                .lock()
                                .await
                                .send(Message::Text(answer.to_string().into()))
                                .await;
                        }
                    }
                    if c_tx.send(m).await.is_err() {
                        break;
                    }
                }
                to_server.abort();
            });
        }
    });
    (format!("ws://{addr}{path}"), answered)
}

/// A page of the strict site: its own origin only for connections, an
/// OOPIF from the other host, and a hostile script (hooks every builtin the
/// bridge uses, recording what passes through them).
fn strict_page(port: u16, frame: &str) -> String {
    let iframe = if frame == "main" {
        format!(
            r#"<iframe id="child" src="http://b.test:{port}/frame" width="300" height="100"></iframe>"#
        )
    } else {
        String::new()
    };
    format!(
        r#"<!doctype html><html><head><meta charset="utf-8"><title>strict {frame}</title></head><body>
{iframe}
<script>
window.results = [];
window.seen = [];
const record = (what, args) => {{ try {{ window.seen.push(what + ":" + Array.from(args).map(String).join("|")); }} catch (e) {{}} }};
const P = XMLHttpRequest.prototype;
for (const name of ["open", "send", "setRequestHeader"]) {{
  const orig = P[name];
  P[name] = function () {{ record(name, arguments); return orig.apply(this, arguments); }};
}}
const stringify = JSON.stringify;
JSON.stringify = function () {{ record("stringify", arguments); return stringify.apply(JSON, arguments); }};
const call = Function.prototype.call;
Function.prototype.call = function () {{ record("call", arguments); return call.apply(this, [this].concat(Array.from(arguments))); }};
const reflectApply = Reflect.apply;
window.fire = (kind, message, dflt) => setTimeout(() => {{
  const value = kind === "alert" ? alert(message) : kind === "confirm" ? confirm(message) : prompt(message, dflt);
  window.results.push({{kind, value: value === undefined ? "undefined" : value}});
}}, 0);
window.forge = () => {{
  const bridge = performance.getEntriesByType("resource").map(e => e.name).find(n => n.includes("__cdp_supervisor_"));
  if (!bridge) return "no bridge request seen";
  const x = new XMLHttpRequest();
  try {{
    x.open("POST", bridge, false);
    x.send('{{"secret":"guess","type":"alert","message":"forged"}}');
    return "answered " + x.status;
  }} catch (e) {{
    return "failed";
  }}
}};
</script></body></html>"#
    )
}

async fn strict_site() -> u16 {
    async fn serve(State(port): State<u16>, Path(which): Path<String>) -> impl IntoResponse {
        if which == "sandboxed" {
            // An opaque origin: no same-origin path for the bridge.
            let body = r#"<!doctype html><title>sandboxed</title><iframe sandbox="allow-scripts allow-modals" srcdoc="<script>addEventListener('message', () => setTimeout(() => parent.postMessage(confirm('from an opaque origin'), '*'), 0));</script>"></iframe><script>window.got = null; addEventListener('message', (e) => { window.got = e.data; });</script>"#;
            return (
                [
                    ("content-type", "text/html; charset=utf-8"),
                    ("content-security-policy", "connect-src 'self'"),
                    ("cache-control", "no-store"),
                ],
                body.to_owned(),
            );
        }
        let frame = if which == "frame" { "oopif" } else { "main" };
        (
            [
                ("content-type", "text/html; charset=utf-8"),
                ("content-security-policy", "connect-src 'self'"),
                ("cache-control", "no-store"),
            ],
            strict_page(port, frame),
        )
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = Router::new()
        .route("/{which}", axum::routing::get(serve))
        .with_state(port);
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Runs `expression` (which opens a dialog from a timer) in `frame`: its
/// reply may come before the dialog or be overtaken by it (then the call is
/// reported interrupted); either is fine here.
async fn fire(h: &Harness, frame: Option<&str>, expression: &str) {
    h.sup
        .cdp(
            "Runtime.evaluate",
            json!({ "expression": expression }),
            frame,
            None,
            common::WAIT,
        )
        .await
        .expect("Runtime.evaluate");
}

async fn results_in(h: &Harness, frame: Option<&str>, n: usize) -> Vec<Value> {
    let until = tokio::time::Instant::now() + common::WAIT;
    loop {
        let v = h.eval_in(frame, "JSON.stringify(window.results)").await;
        let r: Vec<Value> = serde_json::from_str(v.as_str().unwrap()).unwrap();
        if r.len() >= n {
            return r;
        }
        assert!(tokio::time::Instant::now() < until, "results {r:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bridge_dialogs_work_behind_an_auto_dismissing_proxy_on_strict_pages_and_cannot_be_forged()
{
    let port = strict_site().await;
    // A secure context, as on https (mixed content rules and all), without
    // certificates: Chromium treats these http origins as trustworthy.
    let mut launch = common::launch_options();
    launch.extra_args.push(format!(
        "--unsafely-treat-insecure-origin-as-secure=http://a.test:{port},http://b.test:{port}"
    ));
    let chromium = LocalChromium::launch(&launch)
        .await
        .expect("launch Chromium");
    let (proxy, native_answered) = auto_dismissing_proxy(chromium.ws_url().to_owned()).await;
    let opts = SupervisorOptions {
        dialog_bridge: true,
        ..Default::default()
    };
    let sup = Supervisor::start(&proxy, opts)
        .await
        .expect("through the proxy");
    let h = Harness {
        site: SiteServer::start().await.unwrap(),
        chromium,
        sup,
    };
    common::goto(&h.sup, &format!("http://a.test:{port}/main")).await;
    let snap = common::wait_children(&h.sup, &["/frame"]).await;
    let oopif = snap
        .frame_tree
        .children
        .iter()
        .find(|c| c.is_oopif)
        .expect("the other host's frame is an OOPIF")
        .frame_id
        .clone();
    for frame in [None, Some(oopif.as_str())] {
        assert_eq!(
            h.eval_in(frame, "window.isSecureContext").await,
            true,
            "{frame:?} is a secure context"
        );
    }

    /// The frame (None: main), the dialog, the answer, the prompt text, what the page gets.
    type Case<'a> = (
        Option<&'a str>,
        &'a str,
        DialogAction,
        Option<&'a str>,
        Value,
    );
    let cases: [Case; 6] = [
        (
            None,
            "alert",
            DialogAction::Accept,
            None,
            json!("undefined"),
        ),
        (None, "confirm", DialogAction::Accept, None, json!(true)),
        (None, "confirm", DialogAction::Dismiss, None, json!(false)),
        (
            None,
            "prompt",
            DialogAction::Accept,
            Some("Ada"),
            json!("Ada"),
        ),
        (
            Some(&oopif),
            "confirm",
            DialogAction::Accept,
            None,
            json!(true),
        ),
        (
            Some(&oopif),
            "prompt",
            DialogAction::Accept,
            None,
            json!("Bob"),
        ),
    ];
    let mut done = [0usize, 0usize];
    for (frame, kind, action, text, want) in cases {
        let message = format!("{kind} in {}", frame.unwrap_or("main"));
        fire(&h, frame, &format!("fire({kind:?}, {message:?}, 'Bob')")).await;
        let d = h.pending(1).await.remove(0);
        assert_eq!(
            (d.dialog_type.as_str(), d.message.as_str()),
            (kind, message.as_str())
        );
        let closed = h.answer(action, text, Some(&d.id)).await.expect("answered");
        assert_eq!(closed.closed_by, ClosedBy::Agent, "{closed:?}");
        let slot = usize::from(frame.is_some());
        done[slot] += 1;
        let r = results_in(&h, frame, done[slot]).await;
        assert_eq!(
            r[done[slot] - 1]["value"],
            want,
            "{kind} in {frame:?}: {r:?}"
        );
    }
    assert_eq!(
        native_answered.load(Ordering::SeqCst),
        0,
        "every dialog went through the bridge, none natively"
    );

    // Why a same-origin path: the page's CSP refuses a foreign host (the
    // bridge's old fixed `http://….invalid`) before Fetch could see it.
    let refused = h
        .eval(
            "new Promise((resolve) => { addEventListener('securitypolicyviolation', (e) => resolve(e.effectiveDirective)); \
             try { const x = new XMLHttpRequest(); x.open('POST', 'http://cdp-supervisor-dialog-bridge.invalid/dialog', false); x.send(''); } \
             catch (e) {} })",
        )
        .await;
    assert_eq!(refused, "connect-src");

    // The hostile page's hooks never saw the secret (nor anything of ours).
    for frame in [None, Some(oopif.as_str())] {
        let seen = h.eval_in(frame, "JSON.stringify(window.seen)").await;
        let seen = seen.as_str().unwrap();
        assert!(
            !seen.contains("secret") && !seen.contains("__cdp_supervisor_"),
            "{frame:?} saw {seen}"
        );
    }
    // A forged request to the bridge path is failed, and no dialog comes of it.
    let forged = h.eval("forge()").await;
    assert_eq!(forged, "failed");
    let seen = h.eval("JSON.stringify(window.seen)").await;
    assert!(
        seen.as_str().unwrap().contains("open:POST"),
        "the hooks do record what passes: {seen}"
    );
    fire(&h, None, "fire('alert', 'after the forgery')").await;
    let d = h.pending(1).await.remove(0);
    assert_eq!(d.message, "after the forgery", "the forgery made no dialog");
    h.answer(DialogAction::Accept, None, Some(&d.id))
        .await
        .expect("answered");
    let recent = h.sup.snapshot().recent_dialogs.clone();
    assert!(
        recent.iter().all(|c| c.dialog.message != "forged"),
        "{recent:?}"
    );
    assert_eq!(native_answered.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn where_the_bridge_cannot_go_the_native_dialog_still_reaches_the_agent() {
    let port = strict_site().await;
    let h = Harness::start_with(SupervisorOptions {
        dialog_bridge: true,
        ..Default::default()
    })
    .await;
    common::goto(&h.sup, &format!("http://a.test:{port}/sandboxed")).await;
    // The sandboxed frame is another origin (opaque): it is asked by message.
    fire(
        &h,
        None,
        "document.querySelector('iframe').contentWindow.postMessage('fire', '*')",
    )
    .await;
    let d = h.pending(1).await.remove(0);
    assert_eq!(d.message, "from an opaque origin");
    let closed = h
        .answer(DialogAction::Accept, None, Some(&d.id))
        .await
        .expect("answered natively");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    let until = tokio::time::Instant::now() + common::WAIT;
    while h.eval("window.got").await != true {
        assert!(
            tokio::time::Instant::now() < until,
            "the frame got no answer"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
