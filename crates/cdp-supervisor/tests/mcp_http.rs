//! The streamable HTTP transport, as raw JSON-RPC over HTTP: the request
//! guard (bearer token, `Host`, `Origin`) and one browser per HTTP session,
//! stopped when the session is deleted or the server shuts down.

mod mcp_support;

use cdp_supervisor::demo_site::SiteServer;
use cdp_supervisor::mcp::{
    DEFAULT_MAX_SESSIONS, HttpOptions, HttpServer, MAX_BODY_BYTES, start_http, start_http_with,
};
use cdp_supervisor::tools::ALL_TOOLS;
use mcp_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const TOKEN: &str = "s3cret-token";
const PROTOCOL: &str = "2025-06-18";

fn initialize_body() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "mcp_http test", "version": "0"}
        }
    })
}

struct Reply {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    /// JSON-RPC messages, from a JSON body or SSE `data:` lines.
    messages: Vec<Value>,
}

impl Reply {
    fn session_id(&self) -> String {
        self.headers
            .get("mcp-session-id")
            .expect("mcp-session-id header")
            .to_str()
            .unwrap()
            .to_owned()
    }

    fn result(&self) -> &Value {
        self.messages
            .iter()
            .find_map(|m| m.get("result"))
            .unwrap_or_else(|| panic!("no result in {:?}", self.messages))
    }
}

async fn post(url: &str, body: &Value, extra: &[(&str, &str)], session: Option<&str>) -> Reply {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", PROTOCOL);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("HTTP request");
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    let messages = if let Ok(v) = serde_json::from_str::<Value>(&text) {
        vec![v]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    Reply {
        status,
        headers,
        messages,
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn server(token: Option<&str>) -> HttpServer {
    start_http(
        local_config(),
        "127.0.0.1:0".parse().unwrap(),
        token.map(str::to_owned),
    )
    .await
    .expect("bind loopback")
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_refused_with_401() {
    let s = server(Some(TOKEN)).await;
    let url = s.url();
    let r = post(&url, &initialize_body(), &[], None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers["www-authenticate"], "Bearer");
    let wrong = bearer("not-the-token");
    let r = post(&url, &initialize_body(), &[("authorization", &wrong)], None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = post(&url, &initialize_body(), &[("authorization", TOKEN)], None).await;
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "the Bearer scheme is required"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn a_foreign_host_is_refused_with_403_even_with_the_token() {
    let s = server(Some(TOKEN)).await;
    let auth = bearer(TOKEN);
    let port = s.local_addr().port();
    for host in [
        format!("evil.example:{port}"),
        "attacker.test".to_owned(),
        format!("127.0.0.1.evil.example:{port}"),
    ] {
        let r = post(
            &s.url(),
            &initialize_body(),
            &[("authorization", &auth), ("host", &host)],
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "Host {host}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn a_non_loopback_origin_is_refused_with_403_even_with_the_token() {
    let s = server(Some(TOKEN)).await;
    let auth = bearer(TOKEN);
    for origin in [
        "https://evil.example",
        "http://127.0.0.1.evil.example",
        "null",
    ] {
        let r = post(
            &s.url(),
            &initialize_body(),
            &[("authorization", &auth), ("origin", origin)],
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "Origin {origin}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn the_right_token_host_and_origin_pass() {
    let s = server(Some(TOKEN)).await;
    let auth = bearer(TOKEN);
    let port = s.local_addr().port();
    let localhost = format!("localhost:{port}");
    for extra in [
        vec![("authorization", auth.as_str())],
        vec![
            ("authorization", auth.as_str()),
            ("host", localhost.as_str()),
            ("origin", "http://localhost:3000"),
        ],
    ] {
        let r = post(&s.url(), &initialize_body(), &extra, None).await;
        assert_eq!(r.status, StatusCode::OK, "{extra:?}: {:?}", r.messages);
        assert_eq!(r.result()["serverInfo"]["name"], "cdp-supervisor");
        assert!(!r.session_id().is_empty());
    }
    s.shutdown().await;
}

#[tokio::test]
async fn without_a_token_loopback_needs_none_but_the_host_is_still_checked() {
    let s = server(None).await;
    let r = post(&s.url(), &initialize_body(), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.messages);
    let r = post(
        &s.url(),
        &initialize_body(),
        &[("host", "evil.example")],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    s.shutdown().await;
}

/// Opens an MCP session over HTTP (initialize + initialized); its session id.
async fn open_session(url: &str, auth: &str) -> String {
    let r = post(url, &initialize_body(), &[("authorization", auth)], None).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.messages);
    let sid = r.session_id();
    let r = post(
        url,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[("authorization", auth)],
        Some(&sid),
    )
    .await;
    assert!(r.status.is_success(), "initialized: {}", r.status);
    sid
}

async fn call(url: &str, auth: &str, sid: &str, id: u64, name: &str, args: Value) -> Value {
    let r = post(
        url,
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args}}),
        &[("authorization", auth)],
        Some(sid),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.messages);
    r.result().clone()
}

async fn wait_tasks(s: &HttpServer, n: usize) {
    let started = Instant::now();
    while s.registry().task_ids().len() != n {
        assert!(
            started.elapsed() < CLOSE_DEADLINE,
            "want {n} running tasks, have {:?}",
            s.registry().task_ids()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Each HTTP session supervises its own browser; deleting the session (or
/// shutting the server down) stops it. Real headless Chromium.
#[tokio::test(flavor = "multi_thread")]
async fn each_http_session_has_its_own_browser_stopped_when_the_session_ends() {
    require_chromium();
    let site = SiteServer::start().await.expect("fixture site");
    let s = server(Some(TOKEN)).await;
    let (url, auth) = (s.url(), bearer(TOKEN));

    let first = open_session(&url, &auth).await;
    let second = open_session(&url, &auth).await;
    assert_ne!(first, second);
    let r = post(
        &url,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        &[("authorization", &auth)],
        Some(&first),
    )
    .await;
    assert_eq!(
        r.result()["tools"].as_array().unwrap().len(),
        ALL_TOOLS.len()
    );

    // No browser until first use.
    assert!(s.registry().task_ids().is_empty());
    for (sid, title_page) in [(&first, "/blank"), (&second, "/demo")] {
        let r = call(
            &url,
            &auth,
            sid,
            3,
            "browser_navigate",
            json!({"url": site.url("a.test", title_page)}),
        )
        .await;
        assert_eq!(r["isError"], false, "{r}");
        assert_eq!(r["structuredContent"]["status"], "loaded", "{r}");
        assert_renders(
            "browser_navigate",
            r["content"][0]["text"].as_str().unwrap(),
            &r["structuredContent"],
        );
    }
    wait_tasks(&s, 2).await;
    // The sessions are separate tasks: each sees its own page.
    let a = call(&url, &auth, &first, 4, "browser_snapshot", json!({})).await;
    let b = call(&url, &auth, &second, 4, "browser_snapshot", json!({})).await;
    let url_of = |r: &Value| {
        r["structuredContent"]["url"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(url_of(&a).ends_with("/blank"), "{a}");
    assert!(url_of(&b).ends_with("/demo"), "{b}");
    // A tool error over HTTP is an isError result too.
    let e = call(
        &url,
        &auth,
        &first,
        5,
        "browser_dialog",
        json!({"action": "accept"}),
    )
    .await;
    assert_eq!(e["isError"], true, "{e}");

    // DELETE ends the first session: its browser stops, the other runs on.
    let resp = reqwest::Client::new()
        .delete(&url)
        .header("authorization", &auth)
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        reqwest::StatusCode::NO_CONTENT,
        "DELETE (the MCP Python SDK logs anything but 200 or 204 as a failure)"
    );
    wait_tasks(&s, 1).await;

    // Shutdown stops the rest.
    let registry = s.registry().clone();
    s.shutdown().await;
    assert!(registry.task_ids().is_empty(), "{:?}", registry.task_ids());
}

async fn server_with(options: HttpOptions) -> HttpServer {
    start_http_with(local_config(), "127.0.0.1:0".parse().unwrap(), options)
        .await
        .expect("bind loopback")
}

async fn delete(url: &str, sid: &str) -> StatusCode {
    reqwest::Client::new()
        .delete(url)
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_body_over_one_mib_is_refused_with_413() {
    let s = server(None).await;
    let sid = open_session(&s.url(), "").await;
    // A tools/call whose JSON is 2 MiB (a huge expression).
    let big = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "browser_cdp", "arguments": {"method": "Runtime.evaluate",
            "params": {"expression": "x".repeat(2 * 1024 * 1024)}}}});
    let r = post(&s.url(), &big, &[], Some(&sid)).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    let r = post(&s.url(), &big, &[], None).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "an initialize too");
    // Just under the bound is not refused for its size.
    let ok = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list",
        "params": {"_meta": {"pad": "x".repeat(MAX_BODY_BYTES - 200)}}});
    assert!(ok.to_string().len() <= MAX_BODY_BYTES);
    let r = post(&s.url(), &ok, &[], Some(&sid)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.messages);
    s.shutdown().await;
}

#[tokio::test]
async fn one_session_past_max_sessions_gets_503_with_a_message() {
    assert_eq!(DEFAULT_MAX_SESSIONS, 16);
    assert_eq!(HttpOptions::default().max_sessions, 16);
    let s = server(None).await; // the default bound
    let url = s.url();
    let mut sids = Vec::new();
    for _ in 0..16 {
        sids.push(open_session(&url, "").await);
    }
    let r = post(&url, &initialize_body(), &[], None).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    let text = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize_body().to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("--max-sessions 16"), "{text}");
    // The open sessions still work; closing one makes room for one.
    let r = post(
        &url,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        &[],
        Some(&sids[0]),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(delete(&url, &sids.pop().unwrap()).await.is_success());
    let deadline = Instant::now() + CLOSE_DEADLINE;
    loop {
        let r = post(&url, &initialize_body(), &[], None).await;
        if r.status == StatusCode::OK {
            break;
        }
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(Instant::now() < deadline, "no room after a DELETE");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.shutdown().await;
}

/// A session that sends nothing for the idle bound is closed with its
/// browser; its id then gets 404. Real headless Chromium.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_is_closed_with_its_browser_and_then_gets_404() {
    require_chromium();
    let s = server_with(HttpOptions {
        idle_timeout: Duration::from_secs(2),
        ..Default::default()
    })
    .await;
    let url = s.url();
    let sid = open_session(&url, "").await;
    let r = call(
        &url,
        "",
        &sid,
        3,
        "browser_navigate",
        json!({"url": "about:blank"}),
    )
    .await;
    assert_eq!(r["structuredContent"]["status"], "loaded", "{r}");
    wait_tasks(&s, 1).await;
    // A call that runs longer than the bound is not idleness.
    let r = call(
        &url,
        "",
        &sid,
        4,
        "browser_wait",
        json!({"event": "dialog_opened", "timeout_s": 3}),
    )
    .await;
    assert_eq!(r["structuredContent"]["happened"], false, "{r}");
    assert_eq!(s.registry().task_ids().len(), 1, "still running");
    // Idle: no request from here on. The browser goes within the bound
    // (2 s) plus the time to stop it; polled, never a fixed sleep.
    wait_tasks(&s, 0).await;
    let r = post(
        &url,
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        &[],
        Some(&sid),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    s.shutdown().await;
}
