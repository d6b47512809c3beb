//! The built-in cloud providers against local fake APIs (one per provider,
//! asserting paths, headers and bodies) whose "remote" browser is a local
//! Chromium: created on the task's first call, attached, released when the
//! task ends — at `browser_disconnect`, at the session's close, at
//! `browser_connect` elsewhere, and by the server's signal cleanup; the
//! Browserbase 402 fallback; an expired session replaced; `exec` plugins.
//! Every base URL points at a fake on loopback: no test can reach a public API.

mod common;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use cdp_supervisor::browser::provider::{
    BrowserProvider, BrowserUse, Browserbase, Exec, Firecrawl, ProviderError, ProviderSession,
};
use cdp_supervisor::config::{CloudProvider, Config};
use cdp_supervisor::supervisor::registry::Registry;
use cdp_supervisor::tools::AgentSession;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the fake API saw.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Value,
}

type Responder = dyn Fn(&Seen, usize) -> (u16, Value) + Send + Sync;

#[derive(Clone)]
struct Fake {
    seen: Arc<Mutex<Vec<Seen>>>,
    respond: Arc<Responder>,
}

/// A fake provider API on loopback; `respond(request, n)` answers the n-th
/// request (0-based). Returns its base URL and what it saw.
async fn fake_api(
    respond: impl Fn(&Seen, usize) -> (u16, Value) + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    async fn handle(State(fake): State<Fake>, req: Request) -> impl IntoResponse {
        let method = req.method().to_string();
        let path = req.uri().path().to_owned();
        let headers = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let bytes = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap_or_default();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let seen = Seen {
            method,
            path,
            headers,
            body,
        };
        let n = {
            let mut log = fake.seen.lock().unwrap();
            log.push(seen.clone());
            log.len() - 1
        };
        let (status, body) = (fake.respond)(&seen, n);
        (StatusCode::from_u16(status).unwrap(), axum::Json(body))
    }
    let fake = Fake {
        seen: Arc::default(),
        respond: Arc::new(respond),
    };
    let seen = fake.seen.clone();
    let app = Router::new().fallback(handle).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn requests(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<Seen> {
    seen.lock().unwrap().clone()
}

fn lines(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<String> {
    requests(seen)
        .iter()
        .map(|s| format!("{} {}", s.method, s.path))
        .collect()
}

fn config(provider: CloudProvider) -> Config {
    let mut c = Config::default();
    c.browser.cloud_provider = provider;
    c
}

async fn navigate(session: &AgentSession, url: &str) {
    let r = session
        .call("browser_navigate", json!({ "url": url }))
        .await
        .unwrap_or_else(|e| panic!("navigate {url}: {e}"));
    assert_eq!(r["status"], "loaded", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn browserbase_session_is_created_on_first_use_and_released_at_disconnect_and_close() {
    let (site, chromium) = common::site_and_chromium().await;
    let ws = chromium.ws_url().to_owned();
    let (api, seen) = fake_api(move |s, n| match (s.method.as_str(), s.path.as_str()) {
        ("POST", "/v1/sessions") => (200, json!({"id": format!("bb-{n}"), "connectUrl": ws})),
        _ => (200, json!({})),
    })
    .await;
    let bb = Browserbase::new("bb-key".into(), "proj-1".into(), api);
    let session = AgentSession::new(
        Registry::new(),
        "task-bb",
        config(CloudProvider::Browserbase),
    )
    .with_provider(Arc::new(bb));
    assert!(lines(&seen).is_empty(), "nothing before the first call");
    navigate(&session, &site.url("a.test", "/demo")).await;
    let create = &requests(&seen)[0];
    assert_eq!(
        (create.method.as_str(), create.path.as_str()),
        ("POST", "/v1/sessions")
    );
    assert_eq!(create.headers["x-bb-api-key"], "bb-key");
    assert_eq!(
        create.body,
        json!({"projectId": "proj-1", "keepAlive": true, "proxies": true,
               "browserSettings": {"advancedStealth": false}})
    );
    let d = session.call("browser_disconnect", json!({})).await.unwrap();
    assert_eq!(d["disconnected"], true);
    let release = &requests(&seen)[1];
    assert_eq!(
        (release.method.as_str(), release.path.as_str()),
        ("POST", "/v1/sessions/bb-0")
    );
    assert_eq!(release.headers["x-bb-api-key"], "bb-key");
    assert_eq!(
        release.body,
        json!({"projectId": "proj-1", "status": "REQUEST_RELEASE"})
    );
    // The next navigate makes a new session; the task's end releases it.
    navigate(&session, &site.url("a.test", "/demo")).await;
    session.close().await;
    assert_eq!(
        lines(&seen),
        [
            "POST /v1/sessions",
            "POST /v1/sessions/bb-0",
            "POST /v1/sessions",
            "POST /v1/sessions/bb-2"
        ]
    );
}

#[tokio::test]
async fn browserbase_402_retries_without_keep_alive_then_without_proxies() {
    let (api, seen) = fake_api(|s, _| {
        let paid = s.body["keepAlive"] == true || s.body["proxies"] == true;
        if paid {
            (402, json!({"message": "upgrade your plan"}))
        } else {
            (
                200,
                json!({"id": "bb-free", "connectUrl": "wss://127.0.0.1:1/?signingKey=k"}),
            )
        }
    })
    .await;
    let mut bb = Browserbase::new("bb-key".into(), "proj-1".into(), api);
    bb.advanced_stealth = true;
    bb.session_timeout = Some(600);
    let s = bb
        .create_session("t")
        .await
        .expect("a session without paid features");
    assert_eq!(s.provider_session_id, "bb-free");
    assert_eq!(s.features["keepAlive"], false);
    assert_eq!(s.features["proxies"], false);
    let bodies: Vec<(Value, Value)> = requests(&seen)
        .iter()
        .map(|r| (r.body["keepAlive"].clone(), r.body["proxies"].clone()))
        .collect();
    assert_eq!(
        bodies,
        [
            (json!(true), json!(true)),
            (json!(false), json!(true)),
            (json!(false), json!(false))
        ]
    );
    let first = &requests(&seen)[0].body;
    assert_eq!(first["browserSettings"]["advancedStealth"], true);
    assert_eq!(first["timeout"], 600);
    // Another status is not retried.
    let (api, seen) = fake_api(|_, _| (500, json!({"error": "down"}))).await;
    let bb = Browserbase::new("bb-key".into(), "p".into(), api);
    let e = bb.create_session("t").await.unwrap_err().to_string();
    assert!(e.contains("HTTP 500") && !e.contains("bb-key"), "{e}");
    assert_eq!(lines(&seen).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn browser_use_http_cdp_url_is_resolved_and_the_browser_stopped_when_the_task_ends() {
    let (site, chromium) = common::site_and_chromium().await;
    let http = chromium.http_url().expect("a DevTools port");
    let (api, seen) = fake_api(move |s, _| match (s.method.as_str(), s.path.as_str()) {
        ("POST", "/api/v3/browsers") => (200, json!({"id": "bu-1", "cdpUrl": http})),
        _ => (200, json!({"id": "bu-1", "status": "stopped"})),
    })
    .await;
    let session = AgentSession::new(
        Registry::new(),
        "task-bu",
        config(CloudProvider::BrowserUse),
    )
    .with_provider(Arc::new(BrowserUse::new("bu-key".into(), api)));
    // The first call of any kind attaches (DESIGN), the snapshot included.
    let snap = session.call("browser_snapshot", json!({})).await.unwrap();
    assert_eq!(snap["connection"], "connected", "{snap}");
    navigate(&session, &site.url("a.test", "/demo")).await;
    session.close().await;
    let r = requests(&seen);
    assert_eq!(
        lines(&seen),
        ["POST /api/v3/browsers", "PATCH /api/v3/browsers/bu-1"]
    );
    assert_eq!(r[0].headers["x-browser-use-api-key"], "bu-key");
    assert_eq!(r[1].headers["x-browser-use-api-key"], "bu-key");
    assert_eq!(r[1].body, json!({"action": "stop"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn firecrawl_session_is_released_when_the_agent_connects_elsewhere() {
    let (site, chromium) = common::site_and_chromium().await;
    let ws = chromium.ws_url().to_owned();
    let (api, seen) = fake_api(move |s, _| match (s.method.as_str(), s.path.as_str()) {
        ("POST", "/v2/browser") => (200, json!({"success": true, "id": "fc-1", "cdpUrl": ws})),
        _ => (200, json!({"success": true})),
    })
    .await;
    let session = AgentSession::new(Registry::new(), "task-fc", config(CloudProvider::Firecrawl))
        .with_provider(Arc::new(Firecrawl::new("fc-key".into(), api)));
    navigate(&session, &site.url("a.test", "/demo")).await;
    let other = common::site_and_chromium().await.1;
    let c = session
        .call(
            "browser_connect",
            json!({"cdp_url": other.http_url().expect("a DevTools port")}),
        )
        .await
        .expect("connect elsewhere");
    assert!(c["connected"].is_string(), "{c}");
    let r = requests(&seen);
    assert_eq!(
        lines(&seen),
        ["POST /v2/browser", "DELETE /v2/browser/fc-1"]
    );
    assert_eq!(r[0].headers["authorization"], "Bearer fc-key");
    assert_eq!(r[0].body, json!({"ttl": 300}));
    assert_eq!(r[1].headers["authorization"], "Bearer fc-key");
    session.close().await;
    assert_eq!(lines(&seen).len(), 2, "released once");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_session_is_released_and_replaced_on_the_next_call() {
    let (site, first) = common::site_and_chromium().await;
    let second = common::site_and_chromium().await.1;
    let urls = [first.ws_url().to_owned(), second.ws_url().to_owned()];
    let creates = Arc::new(Mutex::new(0usize));
    let (api, seen) = fake_api(move |s, _| {
        if s.path == "/v1/sessions" {
            let mut n = creates.lock().unwrap();
            *n += 1;
            (
                200,
                json!({"id": format!("bb-{n}"), "connectUrl": urls[(*n - 1).min(1)]}),
            )
        } else {
            (200, json!({}))
        }
    })
    .await;
    let session = AgentSession::new(
        Registry::new(),
        "task-exp",
        config(CloudProvider::Browserbase),
    )
    .with_provider(Arc::new(Browserbase::new("k".into(), "p".into(), api)));
    navigate(&session, &site.url("a.test", "/demo")).await;
    let sup = session.current_supervisor().expect("a supervisor");
    // The provider ends the session: its browser goes away for good.
    first.shutdown().await;
    tokio::time::timeout(Duration::from_secs(120), sup.exited())
        .await
        .expect("the supervisor gives up reconnecting");
    navigate(&session, &site.url("a.test", "/demo")).await;
    assert_eq!(
        lines(&seen),
        [
            "POST /v1/sessions",
            "POST /v1/sessions/bb-1",
            "POST /v1/sessions"
        ]
    );
    assert_eq!(requests(&seen)[1].body["status"], "REQUEST_RELEASE");
    session.close().await;
    assert_eq!(lines(&seen).last().unwrap(), "POST /v1/sessions/bb-2");
}

#[tokio::test(flavor = "multi_thread")]
async fn signal_cleanup_releases_every_live_session_once() {
    let (_site, chromium) = common::site_and_chromium().await;
    let ws = chromium.ws_url().to_owned();
    let (api, seen) = fake_api(move |s, n| match s.path.as_str() {
        "/v2/browser" => (200, json!({"id": format!("fc-{n}"), "cdpUrl": ws})),
        _ => (200, json!({})),
    })
    .await;
    let registry = Registry::new();
    let provider = Arc::new(Firecrawl::new("fc-key".into(), api));
    let a = AgentSession::new(registry.clone(), "a", config(CloudProvider::Firecrawl))
        .with_provider(provider.clone());
    let b = AgentSession::new(registry.clone(), "b", config(CloudProvider::Firecrawl))
        .with_provider(provider);
    a.call("browser_snapshot", json!({})).await.unwrap();
    b.call("browser_snapshot", json!({})).await.unwrap();
    assert_eq!(registry.lease_count(), 2);
    registry
        .release_all_leases(cdp_supervisor::supervisor::registry::EMERGENCY_CLEANUP_BOUND)
        .await;
    assert_eq!(registry.lease_count(), 0);
    // The sessions' own close afterwards releases nothing twice.
    a.close().await;
    b.close().await;
    let mut deletes: Vec<String> = lines(&seen)
        .into_iter()
        .filter(|l| l.starts_with("DELETE"))
        .collect();
    deletes.sort();
    assert_eq!(
        deletes,
        ["DELETE /v2/browser/fc-0", "DELETE /v2/browser/fc-1"]
    );
}

/// A shell script in a temp dir; returns its path (the dir lives as long as the guard).
fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_plugin_creates_and_closes_sessions_with_a_shell_script() {
    let (site, chromium) = common::site_and_chromium().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let plugin = script(
        &dir,
        "plugin.sh",
        &format!(
            r#"echo "$@" >> '{log}'
case "$1" in
  create) printf '{{"cdp_url": "%s", "session_id": "ex-%s", "features": {{"stealth": true}}}}\n' '{ws}' "$2" ;;
  close) echo "closing $2" >&2 ;;
  *) exit 2 ;;
esac"#,
            log = log.display(),
            ws = chromium.ws_url()
        ),
    );
    let exec = Exec::new(vec![plugin.clone()]);
    let s = exec.create_session("t0").await.expect("create");
    assert_eq!(s.provider_session_id, "ex-t0");
    assert_eq!(s.features["stealth"], true);
    assert!(exec.close_session("ex-t0").await);
    let mut config = config(CloudProvider::Exec);
    config.browser.provider_command = vec![plugin];
    // Built from the config, as the server builds it.
    let session = AgentSession::new(Registry::new(), "task-ex", config);
    navigate(&session, &site.url("a.test", "/demo")).await;
    let d = session.call("browser_disconnect", json!({})).await.unwrap();
    assert_eq!(d["disconnected"], true);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        [
            "create t0",
            "close ex-t0",
            "create task-ex",
            "close ex-task-ex"
        ]
    );
}

#[tokio::test]
async fn exec_plugin_that_fails_hangs_or_prints_garbage_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let create = |body: &str, name: &str| Exec::new(vec![script(&dir, name, body)]);
    let e = create("echo 'no credentials for the grid' >&2; exit 3", "fail.sh")
        .create_session("t")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exit status: 3") && e.contains("no credentials for the grid"),
        "{e}"
    );
    let e = create("echo hello; echo 'warming up' >&2", "garbage.sh")
        .create_session("t")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("printed no JSON object") && e.contains("warming up"),
        "{e}"
    );
    let e = create(
        r#"echo '{"cdp_url": "ws://x/devtools/browser/1"}'"#,
        "noid.sh",
    )
    .create_session("t")
    .await
    .unwrap_err()
    .to_string();
    assert!(e.contains("session_id"), "{e}");
    let long = create("printf 'x%.0s' $(seq 1 500) >&2; exit 1", "long.sh")
        .create_session("t")
        .await
        .unwrap_err()
        .to_string();
    let xs = long.chars().filter(|c| *c == 'x').count();
    assert!(
        (200..210).contains(&xs),
        "the first 200 bytes of stderr: {long}"
    );
    // A hang: killed at the deadline, with what it started (its process group).
    let pidfile = dir.path().join("sleep.pid");
    let hang = Exec::new(vec![script(
        &dir,
        "hang.sh",
        &format!(
            "echo 'started' >&2; sleep 600 & echo $! > '{}'; wait",
            pidfile.display()
        ),
    )])
    .with_deadline(Duration::from_secs(1));
    let e = hang.create_session("t").await.unwrap_err().to_string();
    assert!(
        e.contains("did not finish within 1s") && e.contains("started"),
        "{e}"
    );
    let sleep_pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = tokio::time::Instant::now() + common::WAIT;
    while common::alive(sleep_pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the plugin's sleep lives on"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // close never fails the caller.
    let closer = create("exit 1", "close-fails.sh");
    assert!(!closer.close_session("s").await);
}

/// `cdp-supervisor mcp` over stdio with Firecrawl pointed at the fake API
/// (and nothing else of our environment: no real key, no public base URL).
struct StdioServer {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl StdioServer {
    fn start(api: &str) -> StdioServer {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_cdp-supervisor"))
            .arg("mcp")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("CDP_SUPERVISOR_BROWSER__CLOUD_PROVIDER", "firecrawl")
            .env("FIRECRAWL_API_KEY", "fc-key")
            .env("FIRECRAWL_API_URL", api)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start cdp-supervisor mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        use tokio::io::AsyncBufReadExt;
        StdioServer {
            child,
            stdin,
            stdout: tokio::io::BufReader::new(stdout).lines(),
        }
    }

    async fn send(&mut self, msg: Value) {
        use tokio::io::AsyncWriteExt;
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    async fn reply(&mut self, id: u64) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), self.stdout.next_line())
                .await
                .expect("a reply within 60 s")
                .unwrap()
                .expect("the server is still talking");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Initializes, then navigates to `url` (the first call: creates the session).
    async fn navigate(&mut self, url: &str) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "providers test", "version": "0"}}}),
        )
        .await;
        self.reply(1).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        self.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "browser_navigate", "arguments": {"url": url}}}))
            .await;
        let r = self.reply(2).await;
        assert_eq!(r["result"]["structuredContent"]["status"], "loaded", "{r}");
    }

    async fn exited(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the server exits")
            .unwrap()
    }
}

async fn firecrawl_fake(ws: String) -> (String, Arc<Mutex<Vec<Seen>>>) {
    fake_api(move |s, n| match s.path.as_str() {
        "/v2/browser" => (200, json!({"id": format!("fc-{n}"), "cdpUrl": ws})),
        _ => (200, json!({})),
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_releases_the_session_on_sigterm_before_it_exits() {
    let (site, chromium) = common::site_and_chromium().await;
    let (api, seen) = firecrawl_fake(chromium.ws_url().to_owned()).await;
    let mut server = StdioServer::start(&api);
    server.navigate(&site.url("a.test", "/demo")).await;
    assert_eq!(lines(&seen), ["POST /v2/browser"]);
    // SIGTERM with the session open (stdin still open): no session close runs.
    let pid = server.child.id().unwrap() as i32;
    // SAFETY: signals the child we started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    server.exited().await;
    assert_eq!(
        lines(&seen),
        ["POST /v2/browser", "DELETE /v2/browser/fc-0"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_releases_the_session_when_stdin_closes_before_it_exits() {
    let (site, chromium) = common::site_and_chromium().await;
    let (api, seen) = firecrawl_fake(chromium.ws_url().to_owned()).await;
    let mut server = StdioServer::start(&api);
    server.navigate(&site.url("a.test", "/demo")).await;
    let closed = std::time::Instant::now();
    server.stdin = None;
    let status = server.exited().await;
    assert!(status.success(), "{status}");
    // Released before the server exited (a client SIGKILLs 2 s after closing stdin).
    assert_eq!(
        lines(&seen),
        ["POST /v2/browser", "DELETE /v2/browser/fc-0"]
    );
    eprintln!("stdin closed → server exited in {:?}", closed.elapsed());
}

/// A provider whose "remote" browser is a local Chromium.
struct LocalAsRemote {
    ws_url: String,
    log: Mutex<Vec<String>>,
}

impl BrowserProvider for LocalAsRemote {
    fn name(&self) -> &str {
        "browserbase"
    }
    fn is_available(&self) -> bool {
        true
    }
    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<ProviderSession, ProviderError>> + Send + 'a>> {
        Box::pin(async move {
            self.log.lock().unwrap().push(format!("create {task_id}"));
            Ok(ProviderSession {
                session_name: format!("test-{task_id}"),
                provider_session_id: "remote-1".into(),
                cdp_url: self.ws_url.clone(),
                features: Default::default(),
            })
        })
    }
    fn close_session<'a>(&'a self, id: &'a str) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            self.log.lock().unwrap().push(format!("close {id}"));
            true
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_session_starts_on_first_use_and_ends_with_the_task() {
    let (site, chromium) = common::site_and_chromium().await;
    let provider = Arc::new(LocalAsRemote {
        ws_url: chromium.ws_url().to_owned(),
        log: Mutex::default(),
    });
    let mut config = Config::default();
    config.browser.cloud_provider = CloudProvider::Browserbase;
    let session =
        AgentSession::new(Registry::new(), "task-p", config).with_provider(provider.clone());
    assert!(
        provider.log.lock().unwrap().is_empty(),
        "nothing before first use"
    );
    let r = session
        .call(
            "browser_navigate",
            json!({"url": site.url("a.test", "/demo")}),
        )
        .await
        .expect("navigate");
    assert_eq!(r["status"], "loaded", "{r}");
    // The bridge is on for Browserbase: dialogs come through Fetch, answered the same way.
    session
        .call("browser_cdp", json!({"method": "Runtime.evaluate", "params": {"expression": "fireLater('confirm', 'via bridge')"}}))
        .await
        .expect("fire");
    let sup = session.supervisor().await.unwrap();
    common::wait_snapshot(&sup, "dialog", |s| !s.pending_dialogs.is_empty()).await;
    let a = session
        .call("browser_dialog", json!({"action": "accept"}))
        .await
        .expect("answer");
    assert_eq!(a["answered"]["closed_by"], "agent");
    session.close().await;
    assert_eq!(
        *provider.log.lock().unwrap(),
        vec!["create task-p".to_owned(), "close remote-1".to_owned()]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_while_the_session_is_being_created_does_not_wait_for_it() {
    let (_site, chromium) = common::site_and_chromium().await;
    // A create that answers only when the test lets it.
    let go = Arc::new(tokio::sync::Notify::new());
    let arrived = Arc::new(tokio::sync::Notify::new());
    let ws = chromium.ws_url().to_owned();
    let gate = go.clone();
    let here = arrived.clone();
    let app = Router::new()
        .route(
            "/v2/browser",
            axum::routing::post(move || {
                let gate = gate.clone();
                let ws = ws.clone();
                let here = here.clone();
                async move {
                    here.notify_one();
                    gate.notified().await;
                    axum::Json(json!({"id": "fc-slow", "cdpUrl": ws}))
                }
            }),
        )
        .fallback(|| async { axum::Json(json!({})) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let session = Arc::new(
        AgentSession::new(Registry::new(), "slow", config(CloudProvider::Firecrawl))
            .with_provider(Arc::new(Firecrawl::new("k".into(), api))),
    );
    let first = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .call("browser_navigate", json!({"url": "about:blank"}))
                .await
        }
    });
    tokio::time::timeout(common::WAIT, arrived.notified())
        .await
        .expect("the create request reaches the API");
    let snap = tokio::time::timeout(common::WAIT, session.call("browser_snapshot", json!({})))
        .await
        .expect("a snapshot never waits on the provider's API")
        .unwrap();
    assert_eq!(snap["connection"], "connecting", "{snap}");
    assert!(
        snap["note"].as_str().unwrap().contains("attaching"),
        "{snap}"
    );
    go.notify_one();
    let r = first
        .await
        .unwrap()
        .expect("navigate once the session exists");
    assert_eq!(r["status"], "loaded");
    session.close().await;
}

/// A fake Selenium Grid: `POST …/session` answers a W3C new session whose
/// `se:cdp` is `cdp` with `{id}` replaced; `DELETE` answers `{value: null}`.
async fn fake_grid(cdp: &'static str, ws: String) -> (String, Arc<Mutex<Vec<Seen>>>) {
    fake_api(move |s, n| match s.method.as_str() {
        "POST" if s.path.ends_with("/session") => {
            let id = format!("se-{n}");
            let cdp = cdp.replace("{id}", &id).replace("{ws}", &ws);
            (
                200,
                json!({"value": {"sessionId": id, "capabilities": {
                    "browserName": "chrome", "browserVersion": "156.0", "se:cdp": cdp}}}),
            )
        }
        "DELETE" => (200, json!({"value": null})),
        _ => (404, json!({"value": {"error": "unknown command"}})),
    })
    .await
}

#[tokio::test]
async fn selenium_posts_a_merged_chromium_request_with_the_grids_credentials_and_deletes_the_session()
 {
    let (api, seen) = fake_grid("ws://10.1.2.3:4444/sub/session/{id}/se/cdp", String::new()).await;
    // Through a sub-path, with Basic credentials in the URL and a header of its own.
    let grid = api.replace("http://", "http://grid-user:grid%2Fpa55@") + "/sub/";
    let caps = json!({"goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": ["--headless=new"]},
                      "browserName": "chrome", "se:name": "mine"});
    let provider = cdp_supervisor::browser::provider::Selenium::new(
        &grid,
        caps.as_object().unwrap().clone(),
        cdp_supervisor::cdp::endpoint::CdpHeaders::new([(
            "X-Grid-Team".into(),
            "qa-s3cret".into(),
        )]),
    );
    assert!(provider.is_available());
    assert!(!format!("{provider:?}").contains("pa55"), "{provider:?}");
    let s = provider.create_session("t1").await.expect("a Grid session");
    assert_eq!(s.provider_session_id, "se-0");
    assert_eq!(s.features["browserVersion"], "156.0");
    // se:cdp names the Grid's own address; we go where we were told to.
    let host = api.trim_start_matches("http://");
    assert_eq!(
        s.cdp_url,
        format!("ws://grid-user:grid%2Fpa55@{host}/sub/session/se-0/se/cdp")
    );
    let create = &requests(&seen)[0];
    assert_eq!(
        (create.method.as_str(), create.path.as_str()),
        ("POST", "/sub/session")
    );
    assert_eq!(
        create.headers["content-type"],
        "application/json; charset=utf-8"
    );
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode("grid-user:grid/pa55");
    assert_eq!(create.headers["authorization"], format!("Basic {basic}"));
    assert_eq!(create.headers["x-grid-team"], "qa-s3cret");
    assert_eq!(
        create.body,
        json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "se:name": "mine",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": ["--headless=new"]}},
            "firstMatch": [{}]}})
    );
    assert!(provider.close_session("se-0").await);
    let delete = &requests(&seen)[1];
    assert_eq!(
        (delete.method.as_str(), delete.path.as_str()),
        ("DELETE", "/sub/session/se-0")
    );
    assert_eq!(delete.headers["authorization"], format!("Basic {basic}"));
    assert_eq!(delete.headers["x-grid-team"], "qa-s3cret");

    // An Authorization in cdp_headers wins over the URL's userinfo.
    let bearer = cdp_supervisor::browser::provider::Selenium::new(
        &api,
        Default::default(),
        cdp_supervisor::cdp::endpoint::CdpHeaders::new([(
            "Authorization".into(),
            "Bearer grid-tok3n".into(),
        )]),
    );
    bearer.create_session("t2").await.unwrap();
    let r = requests(&seen);
    assert_eq!(r[2].headers["authorization"], "Bearer grid-tok3n");
    assert_eq!(
        r[2].body["capabilities"]["alwaysMatch"]["se:name"],
        "cdp-supervisor t2"
    );
}

#[tokio::test]
async fn selenium_failures_are_clear_errors_without_secrets_and_a_session_without_se_cdp_is_deleted()
 {
    use cdp_supervisor::browser::provider::Selenium;
    let none = cdp_supervisor::cdp::endpoint::CdpHeaders::default();
    let e = Selenium::from_vars(|_| None, Default::default(), none.clone())
        .create_session("t")
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "selenium: SELENIUM_GRID_URL is not set");
    let e = Selenium::new(
        "http://127.0.0.1:1/?token=x",
        Default::default(),
        none.clone(),
    )
    .create_session("t")
    .await
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("SELENIUM_GRID_URL") && e.contains("query"),
        "{e}"
    );
    // A Grid with no Chromium: no se:cdp; the session is not left holding a slot.
    let (api, seen) = fake_api(|s, _| match s.method.as_str() {
        "POST" => (
            200,
            json!({"value": {"sessionId": "ff-1", "capabilities": {"browserName": "firefox"}}}),
        ),
        _ => (200, json!({"value": null})),
    })
    .await;
    let e = Selenium::new(&api, Default::default(), none.clone())
        .create_session("t")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("se:cdp") && e.contains("deleted"), "{e}");
    assert_eq!(lines(&seen), ["POST /session", "DELETE /session/ff-1"]);
    // The Grid's own error, quoted without the credentials.
    let (api, _) = fake_api(|_, _| {
        (
            500,
            json!({"value": {"error": "session not created", "message": "no slot for grid-s3cret"}}),
        )
    })
    .await;
    let grid = api.replace("http://", "http://u:grid-s3cret@");
    let provider = Selenium::new(&grid, Default::default(), none);
    let e = provider.create_session("t").await.unwrap_err().to_string();
    assert!(
        e.contains("HTTP 500") && e.contains("session not created"),
        "{e}"
    );
    assert!(!e.contains("grid-s3cret"), "{e}");
    // A failed delete never fails the caller.
    assert!(!provider.close_session("gone").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn selenium_session_is_supervised_and_deleted_at_disconnect_at_rebind_and_at_close() {
    let (site, chromium) = common::site_and_chromium().await;
    // se:cdp with no /session/ path (here: Chromium's own socket) is used as given.
    let (api, seen) = fake_grid("{ws}", chromium.ws_url().to_owned()).await;
    let mut config = config(CloudProvider::Selenium);
    config.browser.selenium_capabilities = json!({"se:recordVideo": false})
        .as_object()
        .unwrap()
        .clone();
    // As the server builds it: from the config and SELENIUM_GRID_URL.
    let provider = cdp_supervisor::browser::provider::Selenium::from_vars(
        |k| (k == "SELENIUM_GRID_URL").then(|| api.clone()),
        config.browser.selenium_capabilities.clone(),
        config.browser.cdp_headers.clone(),
    );
    let session =
        AgentSession::new(Registry::new(), "task-se", config).with_provider(Arc::new(provider));
    assert!(lines(&seen).is_empty(), "nothing before the first call");
    navigate(&session, &site.url("a.test", "/demo")).await;
    assert_eq!(
        requests(&seen)[0].body["capabilities"]["alwaysMatch"]["se:recordVideo"],
        false
    );
    let d = session.call("browser_disconnect", json!({})).await.unwrap();
    assert_eq!(d["disconnected"], true);
    assert_eq!(lines(&seen), ["POST /session", "DELETE /session/se-0"]);
    navigate(&session, &site.url("a.test", "/demo")).await;
    let other = common::site_and_chromium().await.1;
    session
        .call(
            "browser_connect",
            json!({"cdp_url": other.http_url().expect("a DevTools port")}),
        )
        .await
        .expect("connect elsewhere");
    assert_eq!(lines(&seen).last().unwrap(), "DELETE /session/se-2");
    session.call("browser_disconnect", json!({})).await.unwrap();
    navigate(&session, &site.url("a.test", "/demo")).await;
    session.close().await;
    assert_eq!(
        lines(&seen),
        [
            "POST /session",
            "DELETE /session/se-0",
            "POST /session",
            "DELETE /session/se-2",
            "POST /session",
            "DELETE /session/se-4"
        ]
    );
}
