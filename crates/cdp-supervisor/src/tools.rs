//! The agent surface as plain functions, JSON in and JSON out. The MCP
//! server and the CLI are thin shells over [`AgentSession`].
//!
//! Tools (names and parameters are a contract, see DESIGN.md):
//! - `browser_navigate {url}`
//! - `browser_snapshot {}`
//! - `browser_dialog {action, prompt_text?, dialog_id?}`
//! - `browser_cdp {method, params?, frame_id?, timeout_s?}`
//! - `browser_connect {cdp_url, target_id?}`
//! - `browser_disconnect {}`
//!
//! A failure the agent can act on is a [`ToolError`] whose text says what was
//! wrong and what to do (an MCP tool result with `isError`).

use crate::browser::provider::{BrowserProvider, Browserbase, ProviderSession};
use crate::config::{CloudProvider, Config};
use crate::supervisor::driver::{
    CallOutcome, CdpCallError, NavigateOutcome, Supervisor, SupervisorOptions,
};
use crate::supervisor::registry::{Endpoint, Registry};
use crate::supervisor::snapshot::{ClosedBy, PendingDialog};
use crate::supervisor::state::{self, DialogAction, DialogError, DialogRequest};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Mutex as AsyncMutex;

/// The tools that need a CDP endpoint (hidden when the backend has none).
pub const CDP_ONLY_TOOLS: [&str; 2] = ["browser_dialog", "browser_cdp"];
/// Every tool, in the order they are listed.
pub const ALL_TOOLS: [&str; 6] = [
    "browser_navigate",
    "browser_snapshot",
    "browser_dialog",
    "browser_cdp",
    "browser_connect",
    "browser_disconnect",
];
/// `browser_navigate`'s deadline for the load event.
pub const NAVIGATE_TIMEOUT: Duration = Duration::from_secs(30);
/// `browser_cdp`'s default `timeout_s`.
pub const CDP_DEFAULT_TIMEOUT_S: f64 = 10.0;
/// `browser_cdp`'s largest `timeout_s`.
pub const CDP_MAX_TIMEOUT_S: f64 = 300.0;

/// A tool failure the agent can act on; `Display` is the text it reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// One line for the agent: what failed and what to do about it.
    pub message: String,
}

impl ToolError {
    fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
        }
    }
}

impl From<CdpCallError> for ToolError {
    fn from(e: CdpCallError) -> Self {
        ToolError::new(e.to_string())
    }
}

/// One agent task's view of the browser: its task id in a [`Registry`], the
/// config, and the endpoint `browser_connect` chose (if any).
pub struct AgentSession {
    registry: Registry,
    task_id: String,
    config: Config,
    connected: Mutex<Option<(String, Option<String>)>>,
    /// The cloud provider (`browser.cloud_provider`), when it has session support.
    provider: Option<Arc<dyn BrowserProvider>>,
    /// The provider session this task runs on, ended with the task.
    provider_session: AsyncMutex<Option<ProviderSession>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NavigateArgs {
    url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DialogArgs {
    action: String,
    #[serde(default)]
    prompt_text: Option<String>,
    #[serde(default)]
    dialog_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CdpArgs {
    method: String,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    frame_id: Option<String>,
    #[serde(default)]
    timeout_s: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConnectArgs {
    cdp_url: String,
    #[serde(default)]
    target_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: Value) -> Result<T, ToolError> {
    let args = if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    };
    serde_json::from_value(args).map_err(|e| ToolError::new(format!("{tool}: bad arguments: {e}")))
}

impl AgentSession {
    /// A session for `task_id`, whose supervisors live in `registry`.
    pub fn new(registry: Registry, task_id: impl Into<String>, config: Config) -> AgentSession {
        let provider: Option<Arc<dyn BrowserProvider>> = match config.browser.cloud_provider {
            CloudProvider::Browserbase => Some(Arc::new(Browserbase::from_env())),
            _ => None,
        };
        AgentSession {
            registry,
            task_id: task_id.into(),
            config,
            connected: Mutex::new(None),
            provider,
            provider_session: AsyncMutex::new(None),
        }
    }

    /// The same, with this provider serving `browser.cloud_provider` (for
    /// embedding another backend, and for tests).
    pub fn with_provider(mut self, provider: Arc<dyn BrowserProvider>) -> AgentSession {
        self.provider = Some(provider);
        self
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tool names this session offers: without a CDP endpoint (a
    /// REST-only backend) `browser_dialog` and `browser_cdp` are hidden.
    pub fn tool_names(&self) -> Vec<&'static str> {
        ALL_TOOLS
            .into_iter()
            .filter(|t| self.config.has_cdp() || !CDP_ONLY_TOOLS.contains(t))
            .collect()
    }

    /// Calls tool `name` with JSON `args` (an object, or null for none).
    pub async fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let hidden = !self.tool_names().contains(&name);
        if hidden && ALL_TOOLS.contains(&name) {
            return Err(ToolError::new(format!(
                "{name} is not available: the configured backend ({}) exposes no CDP endpoint",
                self.config.browser.cloud_provider.as_str()
            )));
        }
        match name {
            "browser_navigate" => {
                let a: NavigateArgs = parse(name, args)?;
                self.browser_navigate(&a.url).await
            }
            "browser_snapshot" => {
                let _: NoArgs = parse(name, args)?;
                Ok(self.browser_snapshot().await)
            }
            "browser_dialog" => {
                let a: DialogArgs = parse(name, args)?;
                self.browser_dialog(&a.action, a.prompt_text, a.dialog_id)
                    .await
            }
            "browser_cdp" => {
                let a: CdpArgs = parse(name, args)?;
                self.browser_cdp(&a.method, a.params, a.frame_id.as_deref(), a.timeout_s)
                    .await
            }
            "browser_connect" => {
                let a: ConnectArgs = parse(name, args)?;
                self.browser_connect(&a.cdp_url, a.target_id).await
            }
            "browser_disconnect" => {
                let _: NoArgs = parse(name, args)?;
                Ok(self.browser_disconnect().await)
            }
            other => Err(ToolError::new(format!(
                "unknown tool {other:?}; tools: {}",
                self.tool_names().join(", ")
            ))),
        }
    }

    fn options(&self, target_id: Option<String>) -> SupervisorOptions {
        let b = &self.config.browser;
        SupervisorOptions {
            policy: b.dialog_policy,
            // Config bounds it; a library caller's struct may not be.
            dialog_timeout: Duration::try_from_secs_f64(b.dialog_timeout_s)
                .unwrap_or(state::DEFAULT_DIALOG_TIMEOUT),
            target_id,
            // Browserbase's proxy answers native dialogs within ~10 ms (spec).
            dialog_bridge: b.cloud_provider == CloudProvider::Browserbase,
            ..Default::default()
        }
    }

    /// The running supervisor, started on the connected or configured
    /// browser if there is none.
    pub async fn supervisor(&self) -> Result<Supervisor, ToolError> {
        if let Some(s) = self.registry.get(&self.task_id).await {
            return Ok(s);
        }
        let connected = self.connected.lock().expect("session lock").clone();
        let connected_url = connected.as_ref().map(|(u, _)| u.clone());
        let b = &self.config.browser;
        let (endpoint, target) = match connected {
            Some((url, target)) => (Endpoint::Url(url), target),
            None if !b.cdp_url.is_empty() => (
                Endpoint::Url(b.cdp_url.clone()),
                (!b.target_id.is_empty()).then(|| b.target_id.clone()),
            ),
            None if b.cloud_provider == CloudProvider::Local => {
                (Endpoint::Local(b.launch_options()), None)
            }
            None => (Endpoint::Url(self.provider_cdp_url().await?), None),
        };
        let desc = endpoint.describe();
        let chosen = connected_url.is_some();
        self.registry
            .get_or_start(&self.task_id, endpoint, self.options(target))
            .await
            .map_err(|e| {
                let hint = if chosen {
                    "; browser_connect to another browser, or browser_disconnect to go back to the configured one"
                } else {
                    ""
                };
                ToolError::new(format!("cannot attach to {desc}: {e}{hint}"))
            })
    }

    /// The CDP URL of this task's provider session, created on first use.
    async fn provider_cdp_url(&self) -> Result<String, ToolError> {
        let name = self.config.browser.cloud_provider.as_str();
        let Some(provider) = &self.provider else {
            return Err(ToolError::new(format!(
                "browser.cloud_provider {name} has no session support in this build; set browser.cdp_url to the provider's CDP URL"
            )));
        };
        let mut session = self.provider_session.lock().await;
        if let Some(s) = session.as_ref() {
            return Ok(s.cdp_url.clone());
        }
        let created = provider
            .create_session(&self.task_id)
            .await
            .map_err(|e| ToolError::new(format!("cannot create a {name} browser session: {e}")))?;
        let url = created.cdp_url.clone();
        *session = Some(created);
        Ok(url)
    }

    /// Ends this task's provider session, if any.
    async fn end_provider_session(&self) {
        let ended = self.provider_session.lock().await.take();
        if let (Some(provider), Some(s)) = (&self.provider, ended) {
            provider.close_session(&s.provider_session_id).await;
        }
    }

    /// `browser_snapshot`: `{url, title, pending_dialogs, recent_dialogs,
    /// frame_tree, console_errors, page_blocked, connection}`; without a
    /// supervisor (none started yet, disconnected, or no CDP backend) only
    /// `{url: "", title: ""}`. Never starts a browser, never waits.
    pub async fn browser_snapshot(&self) -> Value {
        match self.registry.get(&self.task_id).await {
            Some(s) if self.config.has_cdp() => {
                serde_json::to_value(&*s.snapshot()).expect("snapshot serializes")
            }
            // Gated (no CDP backend): the page, without the supervisor's fields.
            Some(s) => {
                let snap = s.snapshot();
                json!({"url": snap.url, "title": snap.title})
            }
            None => json!({"url": "", "title": ""}),
        }
    }

    /// `browser_navigate`: navigates and waits for the load event (30 s);
    /// returns `{status: "loaded" | "dialog_pending" | "load_timeout", url,
    /// title, pending_dialogs}` — promptly with the dialog when one opens
    /// first (during load, or a `beforeunload` of the page being left).
    pub async fn browser_navigate(&self, url: &str) -> Result<Value, ToolError> {
        check_url(url)?;
        let s = self.supervisor().await?;
        let outcome = s.navigate(url, NAVIGATE_TIMEOUT).await?;
        let snap = s.snapshot();
        let (status, note) = match &outcome {
            NavigateOutcome::Loaded => ("loaded", None),
            NavigateOutcome::DialogPending(_) => (
                "dialog_pending",
                Some("a dialog blocks the page: answer it with browser_dialog"),
            ),
            NavigateOutcome::LoadTimeout => (
                "load_timeout",
                Some("the page did not finish loading within 30 s"),
            ),
        };
        let pending: Vec<PendingDialog> = match outcome {
            NavigateOutcome::DialogPending(d) => d,
            _ => snap.pending_dialogs.clone(),
        };
        let mut v = json!({
            "status": status,
            "url": snap.url,
            "title": snap.title,
            "pending_dialogs": pending,
        });
        if let Some(n) = note {
            v["note"] = json!(n);
        }
        Ok(v)
    }

    /// `browser_dialog`: answers the named or sole pending dialog. Returns
    /// `{answered: {…closed dialog…}, pending_dialogs}`. Errors: bad action,
    /// no dialog, several without `dialog_id`, unknown `dialog_id`, a dialog
    /// Chromium will not answer (navigate to release it).
    pub async fn browser_dialog(
        &self,
        action: &str,
        prompt_text: Option<String>,
        dialog_id: Option<String>,
    ) -> Result<Value, ToolError> {
        let action = DialogAction::parse(action).map_err(|e| ToolError::new(e.to_string()))?;
        let Some(s) = self.registry.get(&self.task_id).await else {
            return Err(ToolError::new(
                crate::supervisor::state::DialogError::NoDialog.to_string(),
            ));
        };
        let closed = s
            .answer_dialog(DialogRequest {
                action,
                prompt_text,
                dialog_id,
            })
            .await
            .map_err(|e| match e {
                // Blocked by a dialog we never saw (opened before we attached).
                DialogError::NoDialog if s.snapshot().page_blocked => ToolError::new(
                    "no dialog is known, but the page is blocked by one that opened before the supervisor attached (page_blocked: true); Chromium will not answer it: only navigating releases the page (call browser_navigate, e.g. to the current URL)",
                ),
                e => ToolError::new(e.to_string()),
            })?;
        if closed.closed_by != ClosedBy::Agent {
            // Someone else (another client, a proxy) answered it first: our
            // answer did not count, and the agent must not think it did.
            return Err(ToolError::new(format!(
                "dialog {} was closed by someone else (closed_by: {}) before this answer reached it; see recent_dialogs",
                closed.dialog.id,
                closed.closed_by.as_str()
            )));
        }
        Ok(json!({
            "answered": closed,
            "pending_dialogs": s.snapshot().pending_dialogs,
        }))
    }

    /// `browser_cdp`: a raw CDP command over the supervisor's connection; with
    /// `frame_id` of an OOPIF, on its child session. Returns `{result}`, or
    /// `{dialog_pending: true, pending_dialogs, note}` when a dialog blocks
    /// the call. `timeout_s` in seconds (default 10, at most 300).
    pub async fn browser_cdp(
        &self,
        method: &str,
        params: Option<Value>,
        frame_id: Option<&str>,
        timeout_s: Option<f64>,
    ) -> Result<Value, ToolError> {
        check_method(method)?;
        let params = match params {
            None | Some(Value::Null) => json!({}),
            Some(Value::Object(o)) => Value::Object(o),
            Some(other) => {
                return Err(ToolError::new(format!(
                    "params must be a JSON object (the CDP method's parameters), not {other}"
                )));
            }
        };
        let timeout_s = timeout_s.unwrap_or(CDP_DEFAULT_TIMEOUT_S);
        if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= CDP_MAX_TIMEOUT_S) {
            return Err(ToolError::new(format!(
                "timeout_s {timeout_s} is not allowed; give seconds > 0 and ≤ {CDP_MAX_TIMEOUT_S}"
            )));
        }
        let s = self.supervisor().await?;
        match s
            .cdp(method, params, frame_id, Duration::from_secs_f64(timeout_s))
            .await?
        {
            CallOutcome::Reply(v) => Ok(json!({"result": v})),
            CallOutcome::DialogPending(d) => Ok(json!({
                "dialog_pending": true,
                "pending_dialogs": d,
                "note": format!("{method} got no reply: a dialog blocks the page; answer it with browser_dialog, then retry"),
            })),
        }
    }

    /// `browser_connect`: supervises the browser at `cdp_url` (the tab
    /// `target_id`, else the first page) instead; the old supervisor stops
    /// and nothing of its state is kept. Returns `{connected, url, title, frame_tree}`.
    pub async fn browser_connect(
        &self,
        cdp_url: &str,
        target_id: Option<String>,
    ) -> Result<Value, ToolError> {
        if cdp_url.trim().is_empty() {
            return Err(ToolError::new(
                "cdp_url is empty; give http://host:port, ws://host:port or a ws://…/devtools/browser/… URL",
            ));
        }
        let target_id = target_id.filter(|t| !t.is_empty());
        let endpoint = Endpoint::Url(cdp_url.to_owned());
        let desc = endpoint.describe();
        let s = self
            .registry
            .get_or_start(&self.task_id, endpoint, self.options(target_id.clone()))
            .await
            .map_err(|e| ToolError::new(format!("cannot attach to {desc}: {e}")))?;
        *self.connected.lock().expect("session lock") = Some((cdp_url.to_owned(), target_id));
        let snap = s.snapshot();
        Ok(json!({
            "connected": s.endpoint(),
            "url": snap.url,
            "title": snap.title,
            "pending_dialogs": snap.pending_dialogs,
            "frame_tree": snap.frame_tree,
            "page_blocked": snap.page_blocked,
        }))
    }

    /// `browser_disconnect`: stops the supervisor (and a Chromium it
    /// launched). The next `browser_navigate` starts the configured default
    /// browser again. Returns `{disconnected: bool}` (false: nothing was attached).
    pub async fn browser_disconnect(&self) -> Value {
        *self.connected.lock().expect("session lock") = None;
        let was = self.registry.stop(&self.task_id).await;
        self.end_provider_session().await;
        json!({"disconnected": was})
    }

    /// Ends the session: stops its supervisor and browser (a provider session too).
    pub async fn close(&self) {
        self.registry.stop(&self.task_id).await;
        self.end_provider_session().await;
    }
}

/// Checks a URL `browser_navigate` accepts: absolute, with scheme http,
/// https, file, about or data.
pub fn check_url(url: &str) -> Result<(), ToolError> {
    const ALLOWED: &str = "http, https, file, about, data";
    let parsed = url::Url::parse(url).map_err(|e| {
        ToolError::new(format!(
            "url {url:?} is not an absolute URL ({e}); give e.g. https://example.com/ (schemes: {ALLOWED})"
        ))
    })?;
    match parsed.scheme() {
        "http" | "https" | "file" | "about" | "data" => Ok(()),
        other => Err(ToolError::new(format!(
            "url scheme {other:?} is not allowed; allowed: {ALLOWED}"
        ))),
    }
}

fn check_method(method: &str) -> Result<(), ToolError> {
    let ok = method
        .split_once('.')
        .is_some_and(|(d, m)| !d.is_empty() && !m.is_empty() && !m.contains('.'));
    if ok {
        Ok(())
    } else {
        Err(ToolError::new(format!(
            "method {method:?} is not a CDP method; give Domain.method, e.g. Runtime.evaluate"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_and_methods_are_clear_errors() {
        assert!(
            check_url("example.com")
                .unwrap_err()
                .message
                .contains("absolute")
        );
        assert!(
            check_url("javascript:alert(1)")
                .unwrap_err()
                .message
                .contains("allowed")
        );
        assert!(check_url("http://a.test/").is_ok());
        assert!(check_method("Runtime.evaluate").is_ok());
        assert!(
            check_method("evaluate")
                .unwrap_err()
                .message
                .contains("Domain.method")
        );
        assert!(check_method("A.b.c").is_err());
    }
}
