//! Shared set-up for end-to-end tests on real headless Chromium: a loopback
//! site serving a.test / b.test / c.test, a fresh Chromium (own
//! user-data-dir and port) and helpers to fire and wait for dialogs.
//!
//! A test that needs Chromium fails with a clear message when it is missing.

#![allow(dead_code)]

use cdp_supervisor::browser::{Debugging, LaunchOptions, LocalChromium, find_chromium};
use cdp_supervisor::demo_site::{SiteServer, host_resolver_arg};
use cdp_supervisor::supervisor::driver::{
    CallOutcome, NavigateOutcome, Supervisor, SupervisorOptions,
};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::{ClosedDialog, PendingDialog, Snapshot};
use cdp_supervisor::supervisor::state::{DialogAction, DialogError, DialogRequest};
use serde_json::{Value, json};

#[path = "../snapshot_wait/mod.rs"]
mod snapshot_wait;
pub use snapshot_wait::wait_snapshot_for;
use std::sync::Arc;
use std::time::Duration;

/// How long a test waits for something Chromium does in milliseconds.
pub const WAIT: Duration = Duration::from_secs(10);

/// How long [`goto`] lets a page load: a hang guard, not a speed check. A
/// page of 40 iframes took longer than [`WAIT`] with the machine at load 15.
pub const LOAD_WAIT: Duration = Duration::from_secs(30);

/// Panics (never skips) when Chromium is missing. Also turns on logs when
/// `TEST_LOG` is set (an `EnvFilter`, e.g. `cdp_supervisor=trace`).
pub fn require_chromium() {
    if let Ok(filter) = std::env::var("TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .with_ansi(false)
            .try_init();
    }
    if let Err(e) = find_chromium(None) {
        panic!("this end-to-end test needs Chromium and none was found: {e}");
    }
}

/// The launch options every E2E test uses: *.test → loopback, and a
/// DevTools port: these tests attach by URL, as to a browser someone else
/// runs (the product's own launches use the pipe; `browser::tests` and the
/// MCP scripts cover it).
pub fn launch_options() -> LaunchOptions {
    require_chromium();
    LaunchOptions {
        extra_args: vec![host_resolver_arg().to_owned()],
        debugging: Debugging::Port,
        ..LaunchOptions::default()
    }
}

pub fn options(policy: DialogPolicy, dialog_timeout: Duration) -> SupervisorOptions {
    SupervisorOptions {
        policy: policy.into(),
        dialog_timeout,
        ..Default::default()
    }
}

/// A site, a Chromium of its own and a supervisor on it.
pub struct Harness {
    pub site: SiteServer,
    pub chromium: LocalChromium,
    pub sup: Supervisor,
}

impl Harness {
    pub async fn start(policy: DialogPolicy) -> Harness {
        Harness::start_with(options(policy, Duration::from_secs(300))).await
    }

    pub async fn start_with(opts: SupervisorOptions) -> Harness {
        let site = SiteServer::start().await.expect("site server");
        let chromium = LocalChromium::launch(&launch_options())
            .await
            .expect("launch Chromium");
        let sup = Supervisor::start(chromium.ws_url(), opts)
            .await
            .expect("supervisor attaches");
        Harness {
            site,
            chromium,
            sup,
        }
    }

    pub fn url(&self, host: &str, path: &str) -> String {
        self.site.url(host, path)
    }

    /// Runs `expression` in the top frame and returns its value; panics on
    /// an exception or when a dialog interrupts it.
    pub async fn eval(&self, expression: &str) -> Value {
        self.eval_in(None, expression).await
    }

    pub async fn eval_in(&self, frame_id: Option<&str>, expression: &str) -> Value {
        match self
            .sup
            .cdp(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
                frame_id,
                None,
                WAIT,
            )
            .await
            .expect("Runtime.evaluate")
        {
            CallOutcome::Reply(v) => {
                assert!(v.get("exceptionDetails").is_none(), "{expression}: {v}");
                v["result"]["value"].clone()
            }
            CallOutcome::Interrupted {
                pending_dialogs, ..
            } => {
                panic!("{expression}: interrupted by dialogs {pending_dialogs:?}")
            }
            CallOutcome::TimedOut { after, .. } => {
                panic!("{expression}: no reply within {after:?}")
            }
        }
    }

    /// The page's `window.results` (every frame's dialog results, see demo_site).
    pub async fn results(&self) -> Vec<Value> {
        let v = self.eval("JSON.stringify(window.results || [])").await;
        serde_json::from_str(v.as_str().unwrap_or("[]")).unwrap_or_default()
    }

    /// Waits until `window.results` has `n` entries (iframes post theirs asynchronously).
    pub async fn results_len(&self, n: usize) -> Vec<Value> {
        let until = tokio::time::Instant::now() + WAIT;
        loop {
            let r = self.results().await;
            if r.len() >= n || tokio::time::Instant::now() > until {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_snapshot(&self, what: &str, f: impl Fn(&Snapshot) -> bool) -> Snapshot {
        wait_snapshot(&self.sup, what, f).await
    }

    /// Waits for `n` pending dialogs.
    pub async fn pending(&self, n: usize) -> Vec<Arc<PendingDialog>> {
        self.wait_snapshot(&format!("{n} pending dialogs"), |s| {
            s.pending_dialogs.len() >= n
        })
        .await
        .pending_dialogs
        .to_vec()
    }

    /// Waits until dialog `id` is in recent_dialogs.
    pub async fn closed(&self, id: &str) -> Arc<ClosedDialog> {
        let s = self
            .wait_snapshot(&format!("dialog {id} closed"), |s| {
                s.recent_dialogs.iter().any(|c| c.dialog.id == id)
            })
            .await;
        s.recent_dialogs
            .iter()
            .find(|c| c.dialog.id == id)
            .expect("found")
            .clone()
    }

    pub fn oopif_ids(&self) -> Vec<String> {
        self.sup
            .snapshot()
            .frame_tree
            .children
            .iter()
            .filter(|c| c.is_oopif)
            .map(|c| c.frame_id.clone())
            .collect()
    }
}

pub async fn wait_snapshot(
    sup: &Supervisor,
    what: &str,
    f: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    wait_snapshot_for(sup, what, WAIT, f).await
}

/// Whether a process with this pid is still alive (not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// A site and a Chromium of its own, with no supervisor (for registry tests
/// and for attaching several supervisors).
pub async fn site_and_chromium() -> (SiteServer, LocalChromium) {
    let site = SiteServer::start().await.expect("site server");
    let chromium = LocalChromium::launch(&launch_options())
        .await
        .expect("launch Chromium");
    (site, chromium)
}

/// Navigates `sup` and asserts the page loaded.
pub async fn goto(sup: &Supervisor, url: &str) {
    match sup.navigate(url, LOAD_WAIT).await.expect("navigate") {
        NavigateOutcome::Loaded => {}
        other => panic!("navigate {url}: expected Loaded, got {other:?}"),
    }
}

/// Waits until the frame tree lists a child whose URL contains each of `parts`.
pub async fn wait_children(sup: &Supervisor, parts: &[&str]) -> Snapshot {
    wait_snapshot(sup, &format!("frames {parts:?}"), |s| {
        parts
            .iter()
            .all(|p| s.frame_tree.children.iter().any(|c| c.url.contains(p)))
    })
    .await
}

impl Harness {
    /// Navigates to `path` on `host` and asserts the page loaded.
    pub async fn goto(&self, host: &str, path: &str) {
        goto(&self.sup, &self.url(host, path)).await
    }

    /// Answers a dialog as the agent would (`browser_dialog`).
    pub async fn answer(
        &self,
        action: DialogAction,
        prompt_text: Option<&str>,
        dialog_id: Option<&str>,
    ) -> Result<ClosedDialog, DialogError> {
        self.sup
            .answer_dialog(DialogRequest {
                action,
                prompt_text: prompt_text.map(str::to_owned),
                dialog_id: dialog_id.map(str::to_owned),
                files: None,
                login: None,
            })
            .await
    }
}

/// Pids of live processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
                && alive(*pid)
        })
        .collect()
}

/// The `--user-data-dir` of the live Chromium whose DevTools port is `port`.
pub fn user_data_dir_of_port(port: u16) -> Option<String> {
    let dir = std::fs::read_dir("/proc").ok()?;
    for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        for arg in cmdline.split(|b| *b == 0) {
            let arg = String::from_utf8_lossy(arg);
            if let Some(d) = arg.strip_prefix("--user-data-dir=") {
                let active = std::fs::read_to_string(format!("{d}/DevToolsActivePort"));
                if active.is_ok_and(|a| a.lines().next() == Some(&port.to_string())) {
                    return Some(d.to_owned());
                }
            }
        }
    }
    None
}

/// Opens another tab in the Chromium at `http_url` (`PUT /json/new`):
/// its target id and its page-level WebSocket URL.
pub async fn open_tab(http_url: &str) -> (String, String) {
    let tab: serde_json::Value = reqwest::Client::new()
        .put(format!("{http_url}/json/new?about:blank"))
        .send()
        .await
        .expect("PUT /json/new")
        .json()
        .await
        .expect("a target's JSON");
    let id = tab["id"].as_str().expect("an id").to_owned();
    let ws = tab["webSocketDebuggerUrl"]
        .as_str()
        .expect("a page-level socket")
        .to_owned();
    assert!(ws.contains("/devtools/page/"), "{ws}");
    (id, ws)
}
