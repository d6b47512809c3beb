//! Any CDP grid: a local proxy in front of a real Chromium that, like a
//! hosted grid, refuses every request without credentials — a bearer
//! header (`browser.cdp_headers`), Basic credentials in the URL's userinfo,
//! or a token in the query. Reached with them on discovery and on the
//! WebSocket handshake; refused with a clear error without; the secret in
//! no error and no log line (at trace level, through the crate's log filter:
//! tungstenite itself dumps handshake requests at trace).

mod common;

use base64::Engine;
use cdp_supervisor::cdp::endpoint::CdpHeaders;
use cdp_supervisor::config::Config;
use cdp_supervisor::supervisor::driver::{Supervisor, SupervisorOptions};
use cdp_supervisor::supervisor::registry::Registry;
use cdp_supervisor::tools::AgentSession;
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "grid-s3cret-token";
const USER: &str = "grid-user";
const PASS: &str = "grid-pa55word";

/// What the proxy saw: `(path, authorized)` per request.
type Seen = Arc<Mutex<Vec<(String, bool)>>>;

/// A credential-checking proxy in front of Chromium's DevTools port.
/// Returns its `host:port` and what it saw.
async fn grid_proxy(chromium_port: u16) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let me = listener.local_addr().unwrap().to_string();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let host = me.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(serve(client, chromium_port, host.clone(), log.clone()));
        }
    });
    (me, seen)
}

async fn serve(mut client: TcpStream, chromium_port: u16, me: String, seen: Seen) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let target = request_line.split(' ').nth(1).unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASS}"));
    let authorized = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l == format!("authorization: bearer {TOKEN}")
            || l == format!("authorization: basic {basic}").to_ascii_lowercase()
    }) || query.split('&').any(|p| p == format!("token={TOKEN}"));
    seen.lock().unwrap().push((path.to_owned(), authorized));
    if !authorized {
        let _ = client
            .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 12\r\nconnection: close\r\n\r\nunauthorized")
            .await;
        return;
    }
    if path == "/json/version" {
        let body = reqwest::get(format!("http://127.0.0.1:{chromium_port}/json/version"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            .replace(&format!("127.0.0.1:{chromium_port}"), &me);
        let _ = client
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await;
        return;
    }
    // The WebSocket: forward the handshake (without the query) and splice.
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", chromium_port)).await else {
        return;
    };
    let forwarded = text.replacen(&target, path, 1);
    if upstream.write_all(forwarded.as_bytes()).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Everything logged in this test binary, at trace level.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() -> LogBuffer {
    static LOGS: std::sync::OnceLock<LogBuffer> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = LogBuffer::default();
        let writer = buf.clone();
        tracing_subscriber::fmt()
            // As the binary sets it up: everything, but tungstenite's handshake dump.
            .with_env_filter(cdp_supervisor::cdp::connection::log_filter(
                "trace", "trace",
            ))
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        buf
    })
    .clone()
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [TOKEN, PASS] {
        assert!(!text.contains(secret), "{what} shows a secret: {text}");
    }
}

fn grid_config(url: &str, headers: &[(&str, &str)]) -> Config {
    let mut c = Config::default();
    c.browser.cdp_url = url.to_owned();
    c.browser.cdp_headers = CdpHeaders::new(
        headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grid_that_wants_a_bearer_header_is_reached_with_cdp_headers_and_refused_without() {
    let logs = capture_logs();
    let (site, chromium) = common::site_and_chromium().await;
    let port = url::Url::parse(&chromium.http_url().expect("a DevTools port"))
        .unwrap()
        .port()
        .unwrap();
    let (grid, seen) = grid_proxy(port).await;
    let bearer = format!("Bearer {TOKEN}");

    // With the header: discovery and the handshake both carry it.
    let session = AgentSession::new(
        Registry::new(),
        "grid-ok",
        grid_config(&format!("http://{grid}"), &[("Authorization", &bearer)]),
    );
    let r = session
        .call(
            "browser_navigate",
            json!({"url": site.url("a.test", "/demo")}),
        )
        .await
        .expect("navigate through the grid");
    assert_eq!(r["status"], "loaded");
    let snap = session.call("browser_snapshot", json!({})).await.unwrap();
    assert_no_secret("the snapshot", &snap.to_string());
    {
        let seen = seen.lock().unwrap();
        assert!(
            seen.iter().any(|(p, ok)| p == "/json/version" && *ok),
            "{seen:?}"
        );
        assert!(
            seen.iter()
                .any(|(p, ok)| p.starts_with("/devtools/browser/") && *ok),
            "{seen:?}"
        );
        assert!(seen.iter().all(|(_, ok)| *ok), "{seen:?}");
    }
    // A browser_connect to another host never gets the grid's header.
    let (other, other_seen) = grid_proxy(port).await;
    let e = session
        .call(
            "browser_connect",
            json!({"cdp_url": format!("http://{other}")}),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("401"), "{e}");
    assert!(other_seen.lock().unwrap().iter().all(|(_, ok)| !ok));
    session.close().await;

    // Without it: a clear error naming what to set, at discovery…
    let session = AgentSession::new(
        Registry::new(),
        "grid-refused",
        grid_config(&format!("http://{grid}"), &[]),
    );
    let e = session
        .call(
            "browser_navigate",
            json!({"url": site.url("a.test", "/demo")}),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("HTTP 401") && e.contains("browser.cdp_headers"),
        "{e}"
    );
    // …and at the handshake of a ws:// URL used as is.
    let ws_path = url::Url::parse(chromium.ws_url())
        .unwrap()
        .path()
        .to_owned();
    let ws = format!("ws://{grid}{ws_path}");
    let e = Supervisor::start(&ws, SupervisorOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("401") && e.contains("browser.cdp_headers"),
        "{e}"
    );
    // A wrong header is refused too, and its value is never shown.
    let wrong = SupervisorOptions {
        cdp_headers: CdpHeaders::new([("Authorization".into(), format!("Bearer {TOKEN}-wrong"))]),
        ..Default::default()
    };
    let e = Supervisor::start(&ws, wrong).await.unwrap_err().to_string();
    assert!(e.contains("401"), "{e}");
    assert_no_secret("the error", &e);

    // Credentials in the URL: userinfo (Basic) and a query token, used as
    // is, or carried from discovery over to the handshake.
    for url in [
        format!("ws://{USER}:{PASS}@{grid}{ws_path}"),
        format!("ws://{grid}{ws_path}?token={TOKEN}"),
        format!("http://{USER}:{PASS}@{grid}"),
        format!("http://{grid}/?token={TOKEN}"),
    ] {
        let sup = Supervisor::start(&url, SupervisorOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_no_secret("the endpoint", sup.endpoint());
        common::goto(&sup, &site.url("a.test", "/demo")).await;
        sup.stop().await;
    }
    let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        logged.contains("CDP connection open"),
        "trace logs were captured"
    );
    assert_no_secret("a log line", &logged);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_level_endpoint_is_supervised_as_that_one_tab_and_says_what_it_cannot_do() {
    let (site, chromium) = common::site_and_chromium().await;
    // A second tab: the page endpoint must mean that one, not the first page.
    let (tab_id, page_ws) = common::open_tab(&chromium.http_url().expect("a DevTools port")).await;

    let session = AgentSession::new(Registry::new(), "page-level", Config::default());
    let c = session
        .call("browser_connect", json!({ "cdp_url": page_ws }))
        .await
        .expect("a page-level endpoint attaches");
    let note = c["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("page-level") && note.contains("new tabs"),
        "{c}"
    );
    let sup = session.current_supervisor().unwrap();
    assert!(sup.is_page_level());
    let r = session
        .call(
            "browser_navigate",
            json!({"url": site.url("a.test", "/demo")}),
        )
        .await
        .unwrap();
    assert_eq!(r["status"], "loaded", "{r}");
    let live = sup.live_page(common::WAIT).await.expect("live page");
    assert_eq!(
        live.target_id, tab_id,
        "the tab of the URL is the one supervised"
    );
    // Its cross-site iframe is still an OOPIF we can reach.
    let snap = common::wait_children(&sup, &["demo-oopif"]).await;
    assert!(
        snap.frame_tree.children.iter().any(|f| f.is_oopif),
        "{:?}",
        snap.frame_tree
    );
    session.close().await;

    // A target_id that names no tab is said as such, not blamed on the
    // endpoint.
    let err = Supervisor::start(
        &page_ws,
        SupervisorOptions {
            target_id: Some("NO-SUCH-TARGET".into()),
            ..Default::default()
        },
    )
    .await
    .expect_err("no such tab");
    let text = err.to_string();
    assert!(
        text.starts_with("no target \"NO-SUCH-TARGET\"") && !text.contains("browser-level"),
        "{text}"
    );

    // The same through a grid that wants a header (Selenoid-like).
    let port = url::Url::parse(&chromium.http_url().expect("a DevTools port"))
        .unwrap()
        .port()
        .unwrap();
    let (grid, _) = grid_proxy(port).await;
    let path = url::Url::parse(&page_ws).unwrap().path().to_owned();
    let opts = SupervisorOptions {
        cdp_headers: CdpHeaders::new([("Authorization".into(), format!("Bearer {TOKEN}"))]),
        ..Default::default()
    };
    let sup = Supervisor::start(&format!("ws://{grid}{path}"), opts)
        .await
        .expect("through the grid");
    assert!(sup.is_page_level());
    common::goto(&sup, &site.url("a.test", "/demo")).await;
    sup.stop().await;
}
