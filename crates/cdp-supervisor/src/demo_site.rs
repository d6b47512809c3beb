//! The bundled demo site, also the fixture server of the end-to-end tests.
//!
//! One HTTP server on `127.0.0.1` serves every "site": Chromium is launched
//! with [`host_resolver_arg`] so that `a.test`, `b.test`, `c.test`… all
//! resolve to loopback, and since they are distinct sites Chromium isolates
//! cross-site iframes into OOPIFs. Pages are chosen by path; `/nested` also
//! reads the `Host` header to pick the next host.
//!
//! Every built-in page defines:
//! - `window.results`: what each dialog returned, in order, as
//!   `{kind, frame, value}` — `kind` is `alert`/`confirm`/`prompt`
//!   (`beforeunload` is pushed by its handler, `value: null`), `frame` names
//!   the frame (`main`, `same`, `oopif`, `nested-<depth>`…), `value` is the
//!   dialog's return value (`null` for alert or a dismissed prompt). A
//!   frame's results are also posted to the top page, so the top's
//!   `window.results` holds every frame's results.
//! - `window.fire(kind, text?, defaultText?)`: opens the dialog in this frame
//!   and returns the record (blocks until answered, like the dialog itself).
//! - `window.fireLater(kind, text?, defaultText?)`: the same from
//!   `setTimeout(0)`; returns `"scheduled"` at once.
//! - `window.fireIn(iframeId, kind, text?, defaultText?)`: asks the child
//!   iframe with that element id to `fireLater` (by `postMessage`, so it
//!   works across origins); returns `"posted"`.
//!
//! A prompt's default text is `"default text"` unless given. Titles are
//! fixed per page and never reflect results.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use cdp_supervisor::demo_site::{SiteServer, host_resolver_arg};
//!
//! let site = SiteServer::start().await?;
//! // launch Chromium with `host_resolver_arg()`, then navigate to:
//! let url = site.url("a.test", "/demo");
//! # Ok(()) }
//! ```

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, RwLock};
use tokio::sync::oneshot;

/// The Chromium flag that maps every `*.test` host to loopback.
pub fn host_resolver_arg() -> &'static str {
    "--host-resolver-rules=MAP *.test 127.0.0.1"
}

/// Most `/nested` levels served; deeper requests are clamped.
const NESTED_MAX_DEPTH: u32 = 10;
/// Default `/nested` depth: enough for OOPIF depth 3, one past the
/// snapshot's depth-2 cut.
const NESTED_DEFAULT_DEPTH: u32 = 3;
/// Most `/many` iframes served; more are clamped.
const MANY_MAX: u32 = 500;
/// Default `/many` count: past the snapshot's 30-entry frame cap.
const MANY_DEFAULT: u32 = 40;

/// The demo/fixture HTTP server. Stops when dropped.
#[derive(Debug)]
pub struct SiteServer {
    port: u16,
    pages: Pages,
    requests: Requests,
    stop: Option<oneshot::Sender<()>>,
}

type Pages = Arc<RwLock<HashMap<String, String>>>;
/// Every request served, as `host path` (for tests: what reached the network).
type Requests = Arc<RwLock<Vec<String>>>;
/// The request log's bound (a fixture server, not a production one).
const REQUESTS_LOGGED_MAX: usize = 10_000;

#[derive(Clone)]
struct AppState {
    port: u16,
    pages: Pages,
    requests: Requests,
}

impl SiteServer {
    /// Binds `127.0.0.1:0` and serves in a background task.
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start() -> std::io::Result<SiteServer> {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let port = listener.local_addr()?.port();
        let pages = Pages::default();
        let requests = Requests::default();
        let app = axum::Router::new().fallback(serve).with_state(AppState {
            port,
            pages: pages.clone(),
            requests: requests.clone(),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let result = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = result {
                tracing::warn!("demo site server stopped: {e}");
            }
        });
        tracing::debug!(port, "demo site listening");
        Ok(SiteServer {
            port,
            pages,
            requests,
            stop: Some(stop),
        })
    }

    /// The port it listens on (on `127.0.0.1`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://{host}:{port}{path}`; `url("a.test", "/demo")`.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// Every request served so far, oldest first, as `host path` (the
    /// `Host` header without its port, the path without the query):
    /// `"b.test /blank"`. The first 10 000 are kept.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Serves `html` at `path` (on every host) from now on, replacing a
    /// built-in or earlier page there. `{port}` in `html` becomes the port.
    /// The query string is ignored when matching.
    pub fn add_page(&self, path: &str, html: &str) {
        let path = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        let html = html.replace("{port}", &self.port.to_string());
        self.pages
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path, html);
    }
}

impl Drop for SiteServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let path = uri.path();
    let added = state
        .pages
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(path)
        .cloned();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| h.split(':').next().unwrap_or(h).to_owned())
        .unwrap_or_default();
    {
        let mut log = state.requests.write().unwrap_or_else(|e| e.into_inner());
        if log.len() < REQUESTS_LOGGED_MAX {
            log.push(format!("{host} {path}"));
        }
    }
    match path {
        "/staff" if !logged_in(&headers) => return staff_login_required(),
        "/report.csv" => return report_csv(),
        _ => {}
    }
    match added.or_else(|| builtin_page(path, &query, &host, state.port)) {
        Some(html) => html_response(StatusCode::OK, html),
        None => html_response(
            StatusCode::NOT_FOUND,
            format!(
                "<!doctype html><title>404</title><p>not found: {}</p>",
                escape(path)
            ),
        ),
    }
}

/// The demo's login for `/staff` (HTTP Basic, realm "Staff area").
pub const STAFF_LOGIN: (&str, &str) = ("demo", "letmein");

/// Whether the request carries [`STAFF_LOGIN`] (`Authorization: Basic …`).
fn logged_in(headers: &HeaderMap) -> bool {
    use base64::Engine as _;
    let want = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", STAFF_LOGIN.0, STAFF_LOGIN.1));
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Basic {want}"))
}

/// `/staff` without the login: 401 with a Basic challenge.
fn staff_login_required() -> Response {
    let mut r = html_response(
        StatusCode::UNAUTHORIZED,
        "<!doctype html><title>401</title><h1>401: login required</h1>".into(),
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Basic realm=\"Staff area\""),
    );
    r
}

/// `/report.csv`: a 64 KiB attachment (a download).
fn report_csv() -> Response {
    let mut body = String::from("day,visits\n");
    let mut day = 1;
    while body.len() < 64 * 1024 {
        body.push_str(&format!("{day},{}\n", (day * 37) % 1000));
        day += 1;
    }
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/csv"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"report.csv\"",
            ),
        ],
        body,
    )
        .into_response()
}

fn html_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The script every page starts with; `{frame}` is the frame's name.
const COMMON_JS: &str = r#"
window.results = [];
window.FRAME = "{frame}";
window.fire = function (kind, text, defaultText) {
  if (text === undefined) text = kind + " from " + window.FRAME;
  if (defaultText === undefined) defaultText = "default text";
  let value;
  if (kind === "alert") value = alert(text);
  else if (kind === "confirm") value = confirm(text);
  else if (kind === "prompt") value = prompt(text, defaultText);
  else throw new Error("fire: unknown dialog kind " + kind);
  const record = { kind: kind, frame: window.FRAME, value: value === undefined ? null : value };
  window.results.push(record);
  if (window.top !== window) window.top.postMessage({ cdpSupervisorResult: record }, "*");
  return record;
};
window.fireLater = function (kind, text, defaultText) {
  setTimeout(function () { window.fire(kind, text, defaultText); }, 0);
  return "scheduled";
};
window.fireIn = function (iframeId, kind, text, defaultText) {
  const el = document.getElementById(iframeId);
  if (!el) throw new Error("fireIn: no iframe with id " + iframeId);
  el.contentWindow.postMessage({ cdpSupervisorFire: { kind: kind, text: text, defaultText: defaultText } }, "*");
  return "posted";
};
window.addEventListener("message", function (e) {
  const d = e.data || {};
  if (d.cdpSupervisorResult && window.top === window) window.results.push(d.cdpSupervisorResult);
  if (d.cdpSupervisorFire) window.fireLater(d.cdpSupervisorFire.kind, d.cdpSupervisorFire.text, d.cdpSupervisorFire.defaultText);
});
"#;

/// A whole page: `title`, the common script for `frame`, then `body`.
fn page(title: &str, frame: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;margin:8px}} iframe{{border:1px solid #888}}</style>\n<script>{}</script></head>\n<body>\n{}\n</body></html>\n",
        escape(title),
        COMMON_JS.replace("{frame}", frame),
        body
    )
}

/// Frames nested `depth` deep, each on the next of the `hosts` (a list of
/// `*.test` names, default `a,b,c`) after the one serving it: every level
/// an OOPIF of the one above.
fn nested_page(depth: u32, query: &HashMap<String, String>, host: &str, port: u16) -> String {
    let hosts_param = query.get("hosts").map(String::as_str).unwrap_or("a,b,c");
    let hosts: Vec<String> = hosts_param
        .split(',')
        .map(|h| h.trim().trim_end_matches(".test").to_owned())
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    let here = host.trim_end_matches(".test");
    let next = match hosts.iter().position(|h| h == here) {
        Some(i) => hosts.get((i + 1) % hosts.len()),
        None => hosts.first(),
    };
    let child = match (depth, next) {
        (1.., Some(next)) => format!(
            "<iframe id=\"child\" src=\"http://{next}.test:{port}/nested?depth={}&amp;hosts={}\" width=\"90%\" height=\"{}\"></iframe>",
            depth - 1,
            hosts.join(","),
            60 + 50 * depth
        ),
        _ => String::new(),
    };
    page(
        &format!("nested {here} depth {depth}"),
        &format!("nested-{depth}"),
        &format!("<p>{} depth {depth}</p>\n{child}", escape(host)),
    )
}

/// A checkout that opens its payment in a popup, whose first script asks
/// confirm() (bug class 19). `open`: the popup opens on load (a launched
/// Chromium allows popups), and the payment page closes itself once
/// answered.
fn checkout_page(open: bool) -> String {
    let on_load = if open {
        "<script>window.open(\"/pay?close=1\");</script>"
    } else {
        ""
    };
    page(
        "cdp-supervisor demo: checkout",
        "main",
        &format!(
            "<button id=\"pay\" style=\"position:absolute;left:0;top:0;width:400px;height:300px\" \
             onclick=\"window.open('/pay')\">Pay 12 EUR</button>{on_load}"
        ),
    )
}

/// The payment popup: asks confirm() as its first script, titles itself
/// `paid` or `not paid`, and with `close` closes itself after.
fn pay_page(close: bool) -> String {
    page(
        "payment",
        "pay",
        &format!(
            "<p>payment provider</p>\n<script>\nwindow.fire(\"confirm\", \"Pay 12 EUR?\");\n\
             document.title = window.results[0].value ? \"paid\" : \"not paid\";\n{}</script>",
            if close {
                "setTimeout(function () { window.close(); }, 100);\n"
            } else {
                ""
            }
        ),
    )
}

fn builtin_page(
    path: &str,
    query: &HashMap<String, String>,
    host: &str,
    port: u16,
) -> Option<String> {
    let num = |key: &str, default: u32, max: u32| {
        query
            .get(key)
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(default)
            .min(max)
    };
    let html = match path {
        "/frame" => {
            let name = query.get("name").map(String::as_str).unwrap_or("frame");
            let name: String = name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                .collect();
            page(&format!("frame {name}"), &name, "<p>frame</p>")
        }
        "/nested" => nested_page(
            num("depth", NESTED_DEFAULT_DEPTH, NESTED_MAX_DEPTH),
            query,
            host,
            port,
        ),
        "/many" => {
            let n = num("n", MANY_DEFAULT, MANY_MAX);
            let frames: String = (0..n)
                .map(|i| format!("<iframe id=\"f{i}\" src=\"/blank?i={i}\" width=\"40\" height=\"30\"></iframe>\n"))
                .collect();
            page(
                "cdp-supervisor demo: many",
                "main",
                &format!("<p>{n} same-origin iframes</p>\n{frames}"),
            )
        }
        // `?open=1`: the popup opens on load; the payment page with
        // `?close=1` closes itself once answered.
        "/checkout" => checkout_page(query.get("open").is_some_and(|v| v == "1")),
        "/pay" => pay_page(query.get("close").is_some_and(|v| v == "1")),
        _ => return static_page(path, port),
    };
    Some(html)
}

/// The demo site's pages that take no query, by path.
fn static_page(path: &str, port: u16) -> Option<String> {
    let html = match path {
        "/" => page(
            "cdp-supervisor demo site",
            "main",
            "<h1>cdp-supervisor demo site</h1><ul>\
             <li><a href=\"/demo\">/demo</a><li><a href=\"/alert-on-load\">/alert-on-load</a>\
             <li><a href=\"/beforeunload\">/beforeunload</a><li><a href=\"/nested\">/nested</a>\
             <li><a href=\"/many\">/many</a><li><a href=\"/console-error\">/console-error</a>\
             <li><a href=\"/two-dialogs\">/two-dialogs</a><li><a href=\"/checkout\">/checkout</a>\
             <li><a href=\"/blank\">/blank</a></ul>",
        ),
        "/demo" => page(
            "cdp-supervisor demo",
            "main",
            &format!(
                "<h1>cdp-supervisor demo</h1>\n\
                 <iframe id=\"same\" src=\"/demo-same\" width=\"360\" height=\"120\"></iframe>\n\
                 <iframe id=\"oopif\" src=\"http://b.test:{port}/demo-oopif\" width=\"360\" height=\"120\"></iframe>"
            ),
        ),
        "/demo-same" => page("same-origin frame", "same", "<p>same-origin iframe</p>"),
        "/staff" => page(
            "Staff area",
            "main",
            "<h1>Staff area</h1><p><a href=\"/report.csv\">report.csv</a></p>",
        ),
        "/demo-oopif" => page(
            "OOPIF b.test",
            "oopif",
            "<p>cross-origin iframe (OOPIF)</p>",
        ),
        "/alert-on-load" => page(
            "cdp-supervisor demo: alert-on-load",
            "main",
            "<p>before the alert</p>\n\
             <script>window.fire(\"alert\", \"alert during load\");</script>\n\
             <p id=\"after\">after the alert</p>\n\
             <script>window.addEventListener(\"load\", function () { window.loaded = true; });</script>",
        ),
        "/beforeunload" => page(
            "cdp-supervisor demo: beforeunload",
            "main",
            "<button id=\"big\" style=\"position:absolute;left:0;top:0;width:400px;height:300px\" \
             onclick=\"window.clicked = true\">click me (gesture for beforeunload)</button>\n\
             <script>\nwindow.clicked = false;\n\
             window.addEventListener(\"beforeunload\", function (e) {\n\
               window.results.push({ kind: \"beforeunload\", frame: window.FRAME, value: null });\n\
               e.preventDefault();\n  e.returnValue = \"Leave this page?\";\n  return \"Leave this page?\";\n});\n</script>",
        ),
        "/blank" => page("blank", "blank", ""),
        "/console-error" => page(
            "cdp-supervisor demo: console-error",
            "main",
            "<script>console.error(\"boom\");</script>\n\
             <script>throw new Error(\"uncaught boom\");</script>\n\
             <p id=\"after\">after the errors</p>",
        ),
        "/two-dialogs" => page(
            "cdp-supervisor demo: two-dialogs",
            "main",
            &format!(
                "<iframe id=\"oopif\" src=\"http://b.test:{port}/demo-oopif\" width=\"360\" height=\"120\"></iframe>\n\
                 <script>\nwindow.fireBoth = function () {{\n\
                   window.fireLater(\"alert\", \"main alert\");\n\
                   window.fireIn(\"oopif\", \"alert\", \"oopif alert\");\n\
                   return \"scheduled\";\n}};\n</script>"
            ),
        ),
        _ => return None,
    };
    Some(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(site: &SiteServer, host: &str, path: &str) -> reqwest::Response {
        reqwest::Client::new()
            .get(format!("http://127.0.0.1:{}{path}", site.port()))
            .header("Host", format!("{host}:{}", site.port()))
            .send()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn serves_demo_with_headers_and_both_iframes() {
        let site = SiteServer::start().await.unwrap();
        let resp = get(&site, "a.test", "/demo").await;
        assert_eq!(resp.status(), 200);
        let h = resp.headers();
        assert_eq!(h["content-type"], "text/html; charset=utf-8");
        assert_eq!(h["cache-control"], "no-store");
        let body = resp.text().await.unwrap();
        assert!(body.contains("<title>cdp-supervisor demo</title>"));
        assert!(body.contains(r#"<iframe id="same" src="/demo-same""#));
        let oopif = format!(
            r#"<iframe id="oopif" src="http://b.test:{}/demo-oopif""#,
            site.port()
        );
        assert!(body.contains(&oopif), "{body}");
        assert!(body.contains("window.fire = function"));
        assert!(body.contains(r#"window.FRAME = "main""#));
    }

    #[tokio::test]
    async fn oopif_page_is_recognisable() {
        let site = SiteServer::start().await.unwrap();
        let body = get(&site, "b.test", "/demo-oopif")
            .await
            .text()
            .await
            .unwrap();
        assert!(body.contains("<title>OOPIF b.test</title>"));
        assert!(body.contains(r#"window.FRAME = "oopif""#));
    }

    #[tokio::test]
    async fn builtin_pages_all_exist() {
        let site = SiteServer::start().await.unwrap();
        for path in [
            "/",
            "/demo",
            "/demo-same",
            "/demo-oopif",
            "/frame?name=x",
            "/alert-on-load",
            "/beforeunload",
            "/nested",
            "/many",
            "/blank",
            "/console-error",
            "/two-dialogs",
        ] {
            let resp = get(&site, "a.test", path).await;
            assert_eq!(resp.status(), 200, "{path}");
            let body = resp.text().await.unwrap();
            assert!(body.contains("window.results = [];"), "{path}");
        }
    }

    #[tokio::test]
    async fn nested_goes_to_next_host_cyclically() {
        let site = SiteServer::start().await.unwrap();
        let port = site.port();
        let body = get(&site, "c.test", "/nested?depth=2&hosts=a,b,c")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            body.contains(&format!(
                "src=\"http://a.test:{port}/nested?depth=1&amp;hosts=a,b,c\""
            )),
            "{body}"
        );
        assert!(body.contains(r#"window.FRAME = "nested-2""#));
        let body = get(&site, "a.test", "/nested?depth=1&hosts=a,b,c")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            body.contains(&format!("http://b.test:{port}/nested?depth=0")),
            "{body}"
        );
        let leaf = get(&site, "b.test", "/nested?depth=0&hosts=a,b,c")
            .await
            .text()
            .await
            .unwrap();
        assert!(!leaf.contains("<iframe"), "{leaf}");
    }

    #[tokio::test]
    async fn many_has_n_iframes() {
        let site = SiteServer::start().await.unwrap();
        let body = get(&site, "a.test", "/many?n=7")
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(body.matches("<iframe").count(), 7);
        let body = get(&site, "a.test", "/many").await.text().await.unwrap();
        assert_eq!(body.matches("<iframe").count(), 40);
    }

    #[tokio::test]
    async fn add_page_replaces_port_and_serves() {
        let site = SiteServer::start().await.unwrap();
        site.add_page("/custom", "<p>see http://b.test:{port}/x</p>");
        site.add_page("no-slash", "<p>ok</p>");
        let resp = get(&site, "a.test", "/custom?ignored=1").await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["cache-control"], "no-store");
        let body = resp.text().await.unwrap();
        assert_eq!(body, format!("<p>see http://b.test:{}/x</p>", site.port()));
        assert_eq!(get(&site, "a.test", "/no-slash").await.status(), 200);
        // Overrides a built-in.
        site.add_page("/blank", "replaced");
        assert_eq!(
            get(&site, "a.test", "/blank").await.text().await.unwrap(),
            "replaced"
        );
    }

    #[tokio::test]
    async fn unknown_path_is_404() {
        let site = SiteServer::start().await.unwrap();
        let resp = get(&site, "a.test", "/nope<x>").await;
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    }

    #[tokio::test]
    async fn url_and_resolver_arg() {
        let site = SiteServer::start().await.unwrap();
        assert_eq!(
            site.url("a.test", "/"),
            format!("http://a.test:{}/", site.port())
        );
        assert_eq!(
            host_resolver_arg(),
            "--host-resolver-rules=MAP *.test 127.0.0.1"
        );
    }

    #[tokio::test]
    async fn drop_stops_the_server() {
        let site = SiteServer::start().await.unwrap();
        let port = site.port();
        assert_eq!(get(&site, "a.test", "/blank").await.status(), 200);
        drop(site);
        let mut refused = false;
        for _ in 0..50 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
            {
                refused = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(refused, "port {port} still accepts connections after drop");
    }

    /// The fixture in a real Chromium: the OOPIF really is out of process,
    /// and dialogs from the main frame and from the OOPIF land in the top's
    /// `window.results`, tagged by frame. Needs Chromium (fails without it).
    mod in_chromium {
        use super::*;
        use crate::browser::{LaunchOptions, LocalChromium};
        use futures_util::{SinkExt, StreamExt};
        use serde_json::{Value, json};
        use std::time::Duration;
        use tokio_tungstenite::tungstenite::Message;

        struct RawCdp {
            ws: tokio_tungstenite::WebSocketStream<
                tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
            >,
            next_id: u64,
            events: Vec<Value>,
        }

        impl RawCdp {
            async fn read(&mut self) -> Value {
                loop {
                    let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                        .await
                        .expect("CDP message within 20 s")
                        .expect("socket open")
                        .expect("socket ok");
                    if let Message::Text(text) = msg {
                        return serde_json::from_str(&text).unwrap();
                    }
                }
            }

            async fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
                self.next_id += 1;
                let id = self.next_id;
                let mut msg = json!({"id": id, "method": method, "params": params});
                if let Some(s) = session {
                    msg["sessionId"] = json!(s);
                }
                self.ws
                    .send(Message::Text(msg.to_string().into()))
                    .await
                    .unwrap();
                loop {
                    let v = self.read().await;
                    if v["id"] == json!(id) {
                        assert!(v.get("error").is_none(), "{method}: {v}");
                        return v["result"].clone();
                    }
                    self.events.push(v);
                }
            }

            async fn event(&mut self, method: &str) -> Value {
                if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
                    return self.events.remove(i)["params"].clone();
                }
                loop {
                    let v = self.read().await;
                    if v["method"] == method {
                        return v["params"].clone();
                    }
                    self.events.push(v);
                }
            }

            async fn eval(&mut self, session: &str, expr: &str) -> Value {
                let r = self
                    .call(
                        "Runtime.evaluate",
                        json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
                        Some(session),
                    )
                    .await;
                r["result"]["value"].clone()
            }
        }

        /// A site, a Chromium of its own, a raw CDP client and a new tab
        /// attached (flatten) with the Page domain on: `(site, chromium, cdp, session_id)`.
        async fn open_page() -> (SiteServer, LocalChromium, RawCdp, String) {
            let site = SiteServer::start().await.unwrap();
            let chromium = LocalChromium::launch(&LaunchOptions {
                extra_args: vec![host_resolver_arg().to_owned()],
                // A raw WebSocket client of its own.
                debugging: crate::browser::Debugging::Port,
                ..LaunchOptions::default()
            })
            .await
            .unwrap_or_else(|e| panic!("this test needs Chromium: {e}"));
            let (ws, _) = tokio_tungstenite::connect_async(chromium.ws_url())
                .await
                .unwrap();
            let mut cdp = RawCdp {
                ws,
                next_id: 0,
                events: Vec::new(),
            };
            let target = cdp
                .call("Target.createTarget", json!({"url": "about:blank"}), None)
                .await["targetId"]
                .clone();
            let session = cdp
                .call(
                    "Target.attachToTarget",
                    json!({"targetId": target, "flatten": true}),
                    None,
                )
                .await["sessionId"]
                .as_str()
                .unwrap()
                .to_owned();
            cdp.call("Page.enable", json!({}), Some(session.as_str()))
                .await;
            (site, chromium, cdp, session)
        }

        #[tokio::test]
        async fn demo_dialogs_from_main_and_oopif_are_recorded() {
            let (site, chromium, mut cdp, session) = open_page().await;
            let s = Some(session.as_str());
            cdp.call(
                "Page.navigate",
                json!({"url": site.url("a.test", "/demo")}),
                s,
            )
            .await;
            cdp.event("Page.loadEventFired").await;

            // b.test is a distinct site: its iframe is a target of its own.
            let targets = cdp.call("Target.getTargets", json!({}), None).await;
            let oopif_url = site.url("b.test", "/demo-oopif");
            assert!(
                targets["targetInfos"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["type"] == "iframe" && t["url"] == oopif_url.as_str()),
                "no OOPIF target: {targets}"
            );
            assert_eq!(
                cdp.eval(&session, "document.title").await,
                "cdp-supervisor demo"
            );

            assert_eq!(
                cdp.eval(&session, "fireLater('confirm', 'sure?')").await,
                "scheduled"
            );
            let opening = cdp.event("Page.javascriptDialogOpening").await;
            assert_eq!(opening["type"], "confirm");
            assert_eq!(opening["message"], "sure?");
            cdp.call("Page.handleJavaScriptDialog", json!({"accept": true}), s)
                .await;

            assert_eq!(
                cdp.eval(&session, "fireIn('oopif', 'prompt', 'name?')")
                    .await,
                "posted"
            );
            let opening = cdp.event("Page.javascriptDialogOpening").await;
            assert_eq!(opening["type"], "prompt");
            assert_eq!(opening["url"], oopif_url.as_str());
            assert_eq!(opening["defaultPrompt"], "default text");
            cdp.call(
                "Page.handleJavaScriptDialog",
                json!({"accept": true, "promptText": "zoe"}),
                s,
            )
            .await;

            assert_eq!(
                cdp.eval(&session, "fireIn('same', 'alert', 'hi')").await,
                "posted"
            );
            cdp.event("Page.javascriptDialogOpening").await;
            cdp.call("Page.handleJavaScriptDialog", json!({"accept": true}), s)
                .await;

            // Results from the frames arrive by postMessage: poll briefly.
            let mut results = Value::Null;
            for _ in 0..50 {
                results = cdp.eval(&session, "window.results").await;
                if results.as_array().is_some_and(|r| r.len() == 3) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(
                results,
                json!([
                    {"kind": "confirm", "frame": "main", "value": true},
                    {"kind": "prompt", "frame": "oopif", "value": "zoe"},
                    {"kind": "alert", "frame": "same", "value": null},
                ])
            );
            assert_eq!(
                cdp.eval(&session, "document.title").await,
                "cdp-supervisor demo"
            );
            chromium.shutdown().await;
        }

        #[tokio::test]
        async fn alert_on_load_and_nested_oopifs() {
            let (site, chromium, mut cdp, session) = open_page().await;
            let s = Some(session.as_str());

            // The alert opens during load; the page finishes once it is answered.
            cdp.call(
                "Page.navigate",
                json!({"url": site.url("a.test", "/alert-on-load")}),
                s,
            )
            .await;
            let opening = cdp.event("Page.javascriptDialogOpening").await;
            assert_eq!(opening["message"], "alert during load");
            cdp.call("Page.handleJavaScriptDialog", json!({"accept": true}), s)
                .await;
            cdp.event("Page.loadEventFired").await;
            assert_eq!(
                cdp.eval(&session, "window.results").await,
                json!([{"kind": "alert", "frame": "main", "value": null}])
            );

            // a -> b -> c -> a: three cross-site boundaries, three OOPIF targets.
            cdp.call(
                "Page.navigate",
                json!({"url": site.url("a.test", "/nested?depth=3")}),
                s,
            )
            .await;
            cdp.event("Page.loadEventFired").await;
            let mut iframe_urls = Vec::new();
            for _ in 0..50 {
                let targets = cdp.call("Target.getTargets", json!({}), None).await;
                iframe_urls = targets["targetInfos"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|t| t["type"] == "iframe")
                    .map(|t| t["url"].as_str().unwrap().to_owned())
                    .collect();
                if iframe_urls.len() == 3 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            iframe_urls.sort();
            assert_eq!(
                iframe_urls,
                [
                    site.url("a.test", "/nested?depth=0&hosts=a,b,c"),
                    site.url("b.test", "/nested?depth=2&hosts=a,b,c"),
                    site.url("c.test", "/nested?depth=1&hosts=a,b,c"),
                ]
            );
            chromium.shutdown().await;
        }
    }
}
