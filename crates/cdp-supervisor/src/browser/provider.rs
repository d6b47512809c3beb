//! Cloud browser providers: session lifecycle behind one trait
//! (spec: `browser-provider-plugin.md`). A provider does not browse: it
//! creates a remote browser session, hands back its CDP URL, and tears the
//! session down. The supervisor attaches to that URL like to any other.
//!
//! Built in (`browser.cloud_provider`):
//! - [`Browserbase`] (`browserbase`): `BROWSERBASE_API_KEY`,
//!   `BROWSERBASE_PROJECT_ID`, `BROWSERBASE_BASE_URL`; keep-alive, proxies,
//!   advanced stealth and the session timeout from the environment, with a
//!   fallback when the plan does not pay for them (HTTP 402).
//! - [`BrowserUse`] (`browser-use`): `BROWSER_USE_API_KEY`, `BROWSER_USE_BASE_URL`.
//! - [`Firecrawl`] (`firecrawl`): `FIRECRAWL_API_KEY`, `FIRECRAWL_API_URL`,
//!   `FIRECRAWL_BROWSER_TTL`.
//! - [`Selenium`] (`selenium`): a Selenium Grid 4, `SELENIUM_GRID_URL` and
//!   `browser.selenium_capabilities`; supervised through `se:cdp`.
//! - [`Exec`] (`exec`): any program, `browser.provider_command`, for plugins
//!   without recompiling.
//!
//! Base URLs are `scheme://host[:port]` with no path: we add `/v1`,
//! `/api/v3`, `/v2`. Each has the provider's public API as its default and
//! an environment variable that overrides it (how tests reach a local fake).
//!
//! What a provider never does: touch the network in
//! [`BrowserProvider::is_available`]; fail the caller in
//! [`BrowserProvider::close_session`] or
//! [`BrowserProvider::emergency_cleanup`] (they log and go on, so a cleanup
//! loop keeps moving); show its API key in an error or a log line.

use crate::cdp::endpoint::{CdpHeaders, redact_url, resolve_ws_url};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every provider HTTP call has this deadline.
pub const PROVIDER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The deadline of a Selenium Grid's `POST /session`: its default
/// `--session-request-timeout` (300 s) and a margin. A Grid queues a request
/// while its slots are busy (measured: 14 of 32 requests at once on a
/// 2-core machine waited past 30 s) and answers it itself when its queue
/// gives up; a client that gives up first leaves the session the Grid then
/// creates to nobody, holding a browser until the Grid's session timeout.
pub const SELENIUM_NEW_SESSION_TIMEOUT: Duration = Duration::from_secs(310);
/// DESIGN ("exec"): a provider program that has not finished by then is killed.
pub const EXEC_DEADLINE: Duration = Duration::from_secs(30);
/// How much of a failed program's stderr (or an API's error body) an error quotes.
pub const ERROR_SNIPPET_BYTES: usize = 200;
/// Firecrawl's session lifetime when `FIRECRAWL_BROWSER_TTL` is not set (seconds).
pub const FIRECRAWL_DEFAULT_TTL_S: u64 = 300;

/// A remote browser session (the spec's session-metadata contract).
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderSession {
    /// A unique name for the session (`<provider>-<task_id>`).
    pub session_name: String,
    /// The provider's own session id (the spec's `bb_session_id`), for cleanup.
    pub provider_session_id: String,
    /// The CDP WebSocket URL to attach to. May hold credentials: redact it
    /// ([`redact_url`]) before showing it anywhere.
    pub cdp_url: String,
    /// The feature flags the session was created with (e.g. Browserbase's
    /// `keepAlive`, `proxies`, `advancedStealth` as finally granted).
    pub features: Map<String, Value>,
}

/// Why a provider could not create a session.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Credentials are missing (the spec's `ValueError`).
    #[error("{provider}: {what} is not set")]
    MissingCredentials {
        /// The provider's name, e.g. `browserbase`.
        provider: String,
        /// The missing setting, e.g. `BROWSERBASE_API_KEY`.
        what: String,
    },
    /// A setting has a value the provider cannot use (a base URL with a path…).
    #[error("{provider}: {what} {value:?} {reason}")]
    BadSetting {
        /// The provider's name.
        provider: String,
        /// The setting, e.g. `BROWSERBASE_BASE_URL`.
        what: String,
        /// The value given, redacted.
        value: String,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// The provider's API (or program) failed or answered something unusable
    /// (the spec's `RuntimeError`).
    #[error("{provider}: {reason}")]
    Api {
        /// The provider's name, e.g. `browserbase`.
        provider: String,
        /// What failed: the request error or HTTP status (with the start of
        /// the body), the program's exit and stderr, or an unusable answer;
        /// URLs redacted, API keys never included.
        reason: String,
    },
}

/// A boxed future, so the trait stays object safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A cloud browser backend.
pub trait BrowserProvider: Send + Sync {
    /// The `browser.cloud_provider` value (`browserbase`…).
    fn name(&self) -> &str;
    /// A cheap check (credentials present); never a network call.
    fn is_available(&self) -> bool;
    /// Creates a remote browser session for `task_id`.
    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>>;
    /// Ends the session; logs and returns `false` on failure, never errors.
    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool>;
    /// Best-effort teardown when the server is going down (a signal); never
    /// fails. The caller bounds how long it may take.
    fn emergency_cleanup<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.close_session(provider_session_id).await;
        })
    }
}

/// The first `max` bytes of `bytes` as text (cut at a character boundary).
/// What an error reply says, for the error text: a W3C WebDriver error's
/// `value.error` and `value.message` (a Selenium Grid's comes after a long stack trace that
/// a plain cut would keep instead), else the body's start.
fn error_detail(body: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
        let message = v.pointer("/value/message").and_then(Value::as_str)?;
        Some(match v.pointer("/value/error").and_then(Value::as_str) {
            Some(error) => format!("{error}: {message}"),
            None => message.to_owned(),
        })
    });
    match message {
        Some(m) => snippet(m.as_bytes(), ERROR_SNIPPET_BYTES),
        None => snippet(body, ERROR_SNIPPET_BYTES),
    }
}

fn snippet(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]);
    text.trim_end_matches('\u{FFFD}').trim().to_owned()
}

fn missing(provider: &str, what: &str) -> ProviderError {
    ProviderError::MissingCredentials {
        provider: provider.into(),
        what: what.into(),
    }
}

/// One provider's REST API: its base URL, its auth header, the calls.
#[derive(Clone)]
struct RestApi {
    provider: &'static str,
    /// The environment variable that sets `base`, for messages.
    base_var: &'static str,
    base: String,
    /// The headers that authenticate us (an API key, `Authorization`…);
    /// empty when no credentials are set. Their values are never shown.
    auth: CdpHeaders,
    /// The `Content-Type` of a request body.
    content_type: &'static str,
    /// Other secrets an answer may echo (a password from a URL's userinfo).
    secrets: Vec<String>,
}

/// The `Content-Type` of a JSON body.
const JSON: &str = "application/json";
/// A Selenium Grid refuses a body whose type does not name its charset
/// (HTTP 500, "Content-Type header does not indicate utf-8 encoded json").
const JSON_UTF8: &str = "application/json; charset=utf-8";

/// One secret header, or none when `value` is empty.
fn auth_header(name: &str, value: String) -> CdpHeaders {
    CdpHeaders::new((!value.is_empty()).then(|| (name.to_owned(), value)))
}

impl std::fmt::Debug for RestApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestApi")
            .field("provider", &self.provider)
            .field("base", &redact_url(&self.base))
            .finish_non_exhaustive()
    }
}

/// A failed API call: its HTTP status when the API answered.
struct CallError {
    status: Option<u16>,
    reason: String,
}

impl RestApi {
    fn error(&self, reason: impl Into<String>) -> ProviderError {
        ProviderError::Api {
            provider: self.provider.into(),
            reason: reason.into(),
        }
    }

    /// DESIGN: a base URL is `scheme://host[:port]` with no path.
    fn check_base(&self) -> Result<(), ProviderError> {
        let bad = |reason: &str| ProviderError::BadSetting {
            provider: self.provider.into(),
            what: self.base_var.into(),
            value: redact_url(&self.base),
            reason: reason.into(),
        };
        let url = url::Url::parse(&self.base)
            .map_err(|e| bad(&format!("is not a URL ({e}); give scheme://host[:port]")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad("must be http(s)://host[:port]"));
        }
        if !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(bad(
                "must be scheme://host[:port] with no path or query (the API path is added)",
            ));
        }
        Ok(())
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, CallError> {
        self.call_within(method, path, body, PROVIDER_REQUEST_TIMEOUT)
            .await
    }

    /// [`RestApi::call`] with another deadline.
    async fn call_within(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let url = format!("{}{path}", self.base);
        let shown = format!("{method} {}", redact_url(&url));
        let scrub = |text: String| {
            self.secrets
                .iter()
                .filter(|s| s.len() >= 4)
                .fold(self.auth.scrub(&text), |t, s| t.replace(s.as_str(), "***"))
        };
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| CallError {
                status: None,
                reason: e.without_url().to_string(),
            })?;
        let mut req = client.request(method, &url);
        for (name, value) in self.auth.iter() {
            req = req.header(name, value);
        }
        if let Some(body) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, self.content_type)
                .body(body.to_string());
        }
        let resp = req.send().await.map_err(|e| CallError {
            status: None,
            // reqwest's text names the URL; ours is redacted.
            reason: scrub(format!("{shown} failed: {}", with_causes(&e.without_url()))),
        })?;
        let status = resp.status();
        let text = resp.bytes().await.unwrap_or_default();
        if !status.is_success() {
            return Err(CallError {
                status: Some(status.as_u16()),
                reason: scrub(format!(
                    "{shown} answered HTTP {status}: {}",
                    error_detail(&text)
                )),
            });
        }
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&text).map_err(|e| CallError {
            status: Some(status.as_u16()),
            reason: format!("{shown} answered no JSON ({e})"),
        })
    }

    /// A call whose failure is logged, for releases.
    async fn release(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> bool {
        match self.call(method, path, body).await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(
                    "{}: releasing a session failed: {}",
                    self.provider,
                    e.reason
                );
                false
            }
        }
    }
}

/// An error and its causes on one line (reqwest's own text is only
/// "error sending request": the timeout or the reset is in its sources).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = cause.source();
    }
    text
}

/// A string field of an API answer, under any of `keys`.
fn field(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn env_bool(get: &impl Fn(&str) -> Option<String>, name: &str, default: bool) -> bool {
    match get(name).map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if matches!(v.as_str(), "true" | "1" | "yes" | "on") => true,
        Some(v) if matches!(v.as_str(), "false" | "0" | "no" | "off") => false,
        _ => default,
    }
}

fn base_or(get: &impl Fn(&str) -> Option<String>, var: &str, default: &str) -> String {
    get(var)
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_owned())
        .trim()
        .trim_end_matches('/')
        .to_owned()
}

/// Browserbase: `POST /v1/sessions` with `X-BB-API-Key` creates a session
/// (`{id, connectUrl}`); `POST /v1/sessions/{id}` with `status:
/// REQUEST_RELEASE` ends it. Paid features the plan lacks (HTTP 402) are
/// dropped one at a time: first `keepAlive`, then `proxies`.
#[derive(Clone, Debug)]
pub struct Browserbase {
    api: RestApi,
    project_id: String,
    /// `BROWSERBASE_KEEP_ALIVE` (default true).
    pub keep_alive: bool,
    /// `BROWSERBASE_PROXIES` (default true).
    pub proxies: bool,
    /// `BROWSERBASE_ADVANCED_STEALTH` (default false).
    pub advanced_stealth: bool,
    /// `BROWSERBASE_SESSION_TIMEOUT`: the API's `timeout` (seconds), when set.
    pub session_timeout: Option<u64>,
}

impl Browserbase {
    /// The public API.
    pub const BASE_URL: &'static str = "https://api.browserbase.com";

    /// From the process environment (see [`Browserbase::from_vars`]).
    pub fn from_env() -> Browserbase {
        Browserbase::from_vars(|k| std::env::var(k).ok())
    }

    /// From `BROWSERBASE_API_KEY`, `BROWSERBASE_PROJECT_ID`,
    /// `BROWSERBASE_BASE_URL`, `BROWSERBASE_KEEP_ALIVE`,
    /// `BROWSERBASE_PROXIES`, `BROWSERBASE_ADVANCED_STEALTH` and
    /// `BROWSERBASE_SESSION_TIMEOUT` as `get` gives them.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Browserbase {
        if get("BROWSERBASE_API_URL").is_some() && get("BROWSERBASE_BASE_URL").is_none() {
            tracing::warn!(
                "BROWSERBASE_API_URL is no longer read: set BROWSERBASE_BASE_URL (scheme://host[:port]) instead"
            );
        }
        let mut bb = Browserbase::new(
            get("BROWSERBASE_API_KEY").unwrap_or_default(),
            get("BROWSERBASE_PROJECT_ID").unwrap_or_default(),
            base_or(&get, "BROWSERBASE_BASE_URL", Self::BASE_URL),
        );
        bb.keep_alive = env_bool(&get, "BROWSERBASE_KEEP_ALIVE", true);
        bb.proxies = env_bool(&get, "BROWSERBASE_PROXIES", true);
        bb.advanced_stealth = env_bool(&get, "BROWSERBASE_ADVANCED_STEALTH", false);
        bb.session_timeout = get("BROWSERBASE_SESSION_TIMEOUT").and_then(|v| v.trim().parse().ok());
        bb
    }

    /// With explicit credentials and base URL, and the default features.
    pub fn new(api_key: String, project_id: String, base_url: String) -> Browserbase {
        Browserbase {
            api: RestApi {
                provider: "browserbase",
                base_var: "BROWSERBASE_BASE_URL",
                base: base_url.trim_end_matches('/').to_owned(),
                auth: auth_header("X-BB-API-Key", api_key),
                content_type: JSON,
                secrets: Vec::new(),
            },
            project_id,
            keep_alive: true,
            proxies: true,
            advanced_stealth: false,
            session_timeout: None,
        }
    }

    fn body(&self, keep_alive: bool, proxies: bool) -> Value {
        let mut body = json!({
            "projectId": self.project_id,
            "keepAlive": keep_alive,
            "proxies": proxies,
            "browserSettings": {"advancedStealth": self.advanced_stealth},
        });
        if let Some(t) = self.session_timeout {
            body["timeout"] = json!(t);
        }
        body
    }
}

impl BrowserProvider for Browserbase {
    fn name(&self) -> &str {
        "browserbase"
    }

    fn is_available(&self) -> bool {
        !self.api.auth.is_empty() && !self.project_id.is_empty()
    }

    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>> {
        Box::pin(async move {
            if self.api.auth.is_empty() {
                return Err(missing("browserbase", "BROWSERBASE_API_KEY"));
            }
            if self.project_id.is_empty() {
                return Err(missing("browserbase", "BROWSERBASE_PROJECT_ID"));
            }
            self.api.check_base()?;
            let (mut keep_alive, mut proxies) = (self.keep_alive, self.proxies);
            let answer = loop {
                let body = self.body(keep_alive, proxies);
                match self
                    .api
                    .call(reqwest::Method::POST, "/v1/sessions", Some(&body))
                    .await
                {
                    Ok(v) => break v,
                    // 402 Payment Required: the plan lacks a paid feature.
                    Err(CallError {
                        status: Some(402),
                        reason,
                    }) if keep_alive || proxies => {
                        let dropped = if keep_alive { "keepAlive" } else { "proxies" };
                        tracing::warn!(
                            "browserbase: {reason}; retrying without {dropped} (not in this plan)"
                        );
                        if keep_alive {
                            keep_alive = false;
                        } else {
                            proxies = false;
                        }
                    }
                    Err(e) => return Err(self.api.error(e.reason)),
                }
            };
            match (field(&answer, &["id"]), field(&answer, &["connectUrl"])) {
                (Some(id), Some(cdp_url)) => {
                    let mut features = Map::new();
                    features.insert("keepAlive".into(), json!(keep_alive));
                    features.insert("proxies".into(), json!(proxies));
                    features.insert("advancedStealth".into(), json!(self.advanced_stealth));
                    Ok(ProviderSession {
                        session_name: format!("browserbase-{task_id}"),
                        provider_session_id: id,
                        cdp_url,
                        features,
                    })
                }
                _ => Err(self.api.error("the session answer has no id or connectUrl")),
            }
        })
    }

    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let body = json!({"projectId": self.project_id, "status": "REQUEST_RELEASE"});
            self.api
                .release(
                    reqwest::Method::POST,
                    &format!("/v1/sessions/{provider_session_id}"),
                    Some(&body),
                )
                .await
        })
    }
}

/// Browser Use: `POST /api/v3/browsers` with `X-Browser-Use-API-Key`
/// creates a browser (`{id, cdpUrl}`; an http `cdpUrl` is resolved through
/// `/json/version`); `PATCH /api/v3/browsers/{id} {action: "stop"}` ends it.
#[derive(Clone, Debug)]
pub struct BrowserUse {
    api: RestApi,
}

impl BrowserUse {
    /// The public API.
    pub const BASE_URL: &'static str = "https://api.browser-use.com";

    /// From `BROWSER_USE_API_KEY` and `BROWSER_USE_BASE_URL` as `get` gives them.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> BrowserUse {
        BrowserUse::new(
            get("BROWSER_USE_API_KEY").unwrap_or_default(),
            base_or(&get, "BROWSER_USE_BASE_URL", Self::BASE_URL),
        )
    }

    /// With an explicit key and base URL.
    pub fn new(api_key: String, base_url: String) -> BrowserUse {
        BrowserUse {
            api: RestApi {
                provider: "browser-use",
                base_var: "BROWSER_USE_BASE_URL",
                base: base_url.trim_end_matches('/').to_owned(),
                auth: auth_header("X-Browser-Use-API-Key", api_key),
                content_type: JSON,
                secrets: Vec::new(),
            },
        }
    }
}

impl BrowserProvider for BrowserUse {
    fn name(&self) -> &str {
        "browser-use"
    }

    fn is_available(&self) -> bool {
        !self.api.auth.is_empty()
    }

    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>> {
        Box::pin(async move {
            if self.api.auth.is_empty() {
                return Err(missing("browser-use", "BROWSER_USE_API_KEY"));
            }
            self.api.check_base()?;
            let answer = self
                .api
                .call(reqwest::Method::POST, "/api/v3/browsers", Some(&json!({})))
                .await
                .map_err(|e| self.api.error(e.reason))?;
            let (Some(id), Some(cdp_url)) = (field(&answer, &["id"]), field(&answer, &["cdpUrl"]))
            else {
                return Err(self.api.error("the browser answer has no id or cdpUrl"));
            };
            let release = || async {
                self.close_session(&id).await;
            };
            // An http(s) cdpUrl is a DevTools HTTP endpoint: ask it for the WebSocket.
            let cdp_url = if cdp_url.starts_with("http://") || cdp_url.starts_with("https://") {
                match resolve_ws_url(&cdp_url).await {
                    Ok(ws) => ws,
                    Err(e) => {
                        // Unusable: do not leave it running (and billing).
                        release().await;
                        return Err(self.api.error(format!("its cdpUrl: {e}")));
                    }
                }
            } else {
                cdp_url
            };
            Ok(ProviderSession {
                session_name: format!("browser-use-{task_id}"),
                provider_session_id: id,
                cdp_url,
                features: Map::new(),
            })
        })
    }

    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.api
                .release(
                    reqwest::Method::PATCH,
                    &format!("/api/v3/browsers/{provider_session_id}"),
                    Some(&json!({"action": "stop"})),
                )
                .await
        })
    }
}

/// Firecrawl: `POST /v2/browser {ttl}` with `Authorization: Bearer` creates
/// a browser (`{id, cdpUrl}`); `DELETE /v2/browser/{id}` ends it.
#[derive(Clone, Debug)]
pub struct Firecrawl {
    api: RestApi,
    /// `FIRECRAWL_BROWSER_TTL`: the session's lifetime in seconds.
    pub ttl_s: u64,
}

impl Firecrawl {
    /// The public API.
    pub const BASE_URL: &'static str = "https://api.firecrawl.dev";

    /// From `FIRECRAWL_API_KEY`, `FIRECRAWL_API_URL` and
    /// `FIRECRAWL_BROWSER_TTL` (default 300) as `get` gives them.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Firecrawl {
        let mut f = Firecrawl::new(
            get("FIRECRAWL_API_KEY").unwrap_or_default(),
            base_or(&get, "FIRECRAWL_API_URL", Self::BASE_URL),
        );
        if let Some(ttl) = get("FIRECRAWL_BROWSER_TTL").and_then(|v| v.trim().parse().ok()) {
            f.ttl_s = ttl;
        }
        f
    }

    /// With an explicit key and base URL, and the default TTL.
    pub fn new(api_key: String, base_url: String) -> Firecrawl {
        Firecrawl {
            api: RestApi {
                provider: "firecrawl",
                base_var: "FIRECRAWL_API_URL",
                base: base_url.trim_end_matches('/').to_owned(),
                auth: if api_key.is_empty() {
                    CdpHeaders::default()
                } else {
                    auth_header("Authorization", format!("Bearer {api_key}"))
                },
                content_type: JSON,
                secrets: Vec::new(),
            },
            ttl_s: FIRECRAWL_DEFAULT_TTL_S,
        }
    }
}

impl BrowserProvider for Firecrawl {
    fn name(&self) -> &str {
        "firecrawl"
    }

    fn is_available(&self) -> bool {
        !self.api.auth.is_empty()
    }

    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>> {
        Box::pin(async move {
            if self.api.auth.is_empty() {
                return Err(missing("firecrawl", "FIRECRAWL_API_KEY"));
            }
            self.api.check_base()?;
            let answer = self
                .api
                .call(
                    reqwest::Method::POST,
                    "/v2/browser",
                    Some(&json!({"ttl": self.ttl_s})),
                )
                .await
                .map_err(|e| self.api.error(e.reason))?;
            match (
                field(&answer, &["id", "sessionId"]),
                field(&answer, &["cdpUrl"]),
            ) {
                (Some(id), Some(cdp_url)) => Ok(ProviderSession {
                    session_name: format!("firecrawl-{task_id}"),
                    provider_session_id: id,
                    cdp_url,
                    features: Map::new(),
                }),
                _ => Err(self.api.error("the browser answer has no id or cdpUrl")),
            }
        })
    }

    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.api
                .release(
                    reqwest::Method::DELETE,
                    &format!("/v2/browser/{provider_session_id}"),
                    None,
                )
                .await
        })
    }
}

/// Selenium Grid 4 (`selenium`): `POST /session` (W3C new session) creates a
/// browser; its `se:cdp` capability is the browser-level CDP endpoint we
/// supervise; `DELETE /session/{id}` ends it.
///
/// - `SELENIUM_GRID_URL` is the Grid's base URL, a sub-path included
///   (`http://grid:4444`, `https://grid.example/selenium`); credentials in
///   its userinfo go as `Authorization: Basic` on every WebDriver call and on
///   the `se:cdp` handshake, as do `browser.cdp_headers` (an `Authorization`
///   there wins).
/// - The request is `{browserName: "chrome", unhandledPromptBehavior:
///   "ignore", "se:name": "cdp-supervisor <task>"}` with
///   `browser.selenium_capabilities` merged over it (objects key by key,
///   anything else replaced). `ignore`: a WebDriver command that reaches
///   the session while a dialog is open (chromedriver's default `dismiss
///   and notify`) would answer the dialog behind the agent's back.
/// - The Grid names itself in `se:cdp` with the address it sees (its
///   `--external-url`, or the host's IP): the URL we attach to is moved onto
///   `SELENIUM_GRID_URL`'s scheme, host, port and sub-path — the address the
///   user gave, which a proxy, a port forward or an ingress may be.
/// - After the delete, the Grid leaves an open `se:cdp` socket open and
///   silent: nothing here waits for it to close (DESIGN, Grid facts).
#[derive(Clone)]
pub struct Selenium {
    api: RestApi,
    /// `user[:password]` of `SELENIUM_GRID_URL` as given (percent-encoded),
    /// carried over to the `se:cdp` URL. A secret.
    userinfo: Option<String>,
    capabilities: Map<String, Value>,
}

impl std::fmt::Debug for Selenium {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selenium")
            .field("api", &self.api)
            .field(
                "capabilities",
                &self.capabilities.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Selenium {
    /// From `SELENIUM_GRID_URL` as `get` gives it, the config's
    /// `browser.selenium_capabilities` and `browser.cdp_headers`.
    pub fn from_vars(
        get: impl Fn(&str) -> Option<String>,
        capabilities: Map<String, Value>,
        headers: CdpHeaders,
    ) -> Selenium {
        Selenium::new(
            &get("SELENIUM_GRID_URL").unwrap_or_default(),
            capabilities,
            headers,
        )
    }

    /// With an explicit Grid URL (userinfo allowed), capabilities and headers.
    pub fn new(grid_url: &str, capabilities: Map<String, Value>, headers: CdpHeaders) -> Selenium {
        let given = grid_url.trim().trim_end_matches('/');
        let mut base = given.to_owned();
        let mut userinfo = None;
        let mut secrets = Vec::new();
        let mut auth: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        if let Ok(mut url) = url::Url::parse(given)
            && !url.username().is_empty()
        {
            let user = url.username().to_owned();
            let pass = url.password().map(str::to_owned);
            let decode = crate::cdp::connection::percent_decode;
            if !headers.has("authorization") {
                use base64::Engine;
                let pair = format!(
                    "{}:{}",
                    decode(&user),
                    decode(pass.as_deref().unwrap_or(""))
                );
                auth.push((
                    "Authorization".into(),
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode(pair)
                    ),
                ));
            }
            secrets.extend(pass.iter().flat_map(|p| [decode(p), p.clone()]));
            userinfo = Some(match &pass {
                Some(p) => format!("{user}:{p}"),
                None => user,
            });
            let _ = url.set_username("");
            let _ = url.set_password(None);
            base = url.as_str().trim_end_matches('/').to_owned();
        }
        Selenium {
            api: RestApi {
                provider: "selenium",
                base_var: "SELENIUM_GRID_URL",
                base,
                auth: CdpHeaders::new(auth),
                content_type: JSON_UTF8,
                secrets,
            },
            userinfo,
            capabilities,
        }
    }

    /// The new-session request for `task_id`.
    pub fn request(&self, task_id: &str) -> Value {
        let mut always = json!({
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "se:name": format!("cdp-supervisor {task_id}"),
        });
        merge(&mut always, &Value::Object(self.capabilities.clone()));
        json!({"capabilities": {"alwaysMatch": always, "firstMatch": [{}]}})
    }

    /// A Grid base URL: `http(s)://host[:port][/sub-path]`, no query.
    fn check_base(&self) -> Result<(), ProviderError> {
        let bad = |reason: &str| ProviderError::BadSetting {
            provider: "selenium".into(),
            what: "SELENIUM_GRID_URL".into(),
            value: redact_url(&self.api.base),
            reason: reason.into(),
        };
        let url = url::Url::parse(&self.api.base)
            .map_err(|e| bad(&format!("is not a URL ({e}); give http(s)://host[:port]")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad("must be http(s)://host[:port][/sub-path]"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("must have no query or fragment"));
        }
        Ok(())
    }

    /// `se:cdp` moved onto the Grid URL we were given (scheme, userinfo,
    /// host, port, sub-path); the Grid's own URL when it has no
    /// `/session/` path to keep.
    pub fn cdp_url_via_grid(&self, se_cdp: &str) -> String {
        let (Ok(grid), Ok(cdp)) = (url::Url::parse(&self.api.base), url::Url::parse(se_cdp)) else {
            return se_cdp.to_owned();
        };
        let Some(at) = cdp.path().find("/session/") else {
            return se_cdp.to_owned();
        };
        let scheme = if grid.scheme() == "https" {
            "wss"
        } else {
            "ws"
        };
        let Some(host) = grid.host_str() else {
            return se_cdp.to_owned();
        };
        let port = grid.port().map(|p| format!(":{p}")).unwrap_or_default();
        let userinfo = self
            .userinfo
            .as_ref()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        let query = cdp.query().map(|q| format!("?{q}")).unwrap_or_default();
        format!(
            "{scheme}://{userinfo}{host}{port}{}{}{query}",
            grid.path().trim_end_matches('/'),
            &cdp.path()[at..]
        )
    }
}

/// `patch` merged into `base`: objects key by key, anything else replaced.
fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

impl BrowserProvider for Selenium {
    fn name(&self) -> &str {
        "selenium"
    }

    fn is_available(&self) -> bool {
        !self.api.base.is_empty()
    }

    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>> {
        Box::pin(async move {
            if self.api.base.is_empty() {
                return Err(missing("selenium", "SELENIUM_GRID_URL"));
            }
            self.check_base()?;
            let answer = self
                .api
                .call_within(
                    reqwest::Method::POST,
                    "/session",
                    Some(&self.request(task_id)),
                    SELENIUM_NEW_SESSION_TIMEOUT,
                )
                .await
                .map_err(|e| self.api.error(e.reason))?;
            let value = answer.get("value").unwrap_or(&Value::Null);
            let Some(id) = field(value, &["sessionId"]) else {
                return Err(self
                    .api
                    .error("the new-session answer has no value.sessionId"));
            };
            let caps = value.get("capabilities").unwrap_or(&Value::Null);
            let Some(se_cdp) = field(caps, &["se:cdp"]) else {
                // Unusable: do not leave it holding a slot.
                self.close_session(&id).await;
                return Err(self.api.error(format!(
                    "the session's capabilities have no se:cdp (browserName {}): a Chromium-based browser on Selenium Grid 4 is needed; the session was deleted",
                    caps.get("browserName").unwrap_or(&Value::Null)
                )));
            };
            let mut features = Map::new();
            for k in ["browserName", "browserVersion"] {
                if let Some(v) = caps.get(k) {
                    features.insert(k.into(), v.clone());
                }
            }
            Ok(ProviderSession {
                session_name: format!("selenium-{task_id}"),
                provider_session_id: id,
                cdp_url: self.cdp_url_via_grid(&se_cdp),
                features,
            })
        })
    }

    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.api
                .release(
                    reqwest::Method::DELETE,
                    &format!("/session/{provider_session_id}"),
                    None,
                )
                .await
        })
    }
}

/// A user's program as the provider (`cloud_provider: exec`,
/// `provider_command: [argv…]`): `ARGV… create TASK_ID` prints one JSON
/// object `{cdp_url, session_id, features?}`; `ARGV… close SESSION_ID`
/// ends the session. A program that fails, prints something else, or has
/// not finished within the deadline (then it and its process group are
/// killed) is an error quoting the first [`ERROR_SNIPPET_BYTES`] of its stderr.
#[derive(Clone, Debug)]
pub struct Exec {
    argv: Vec<String>,
    deadline: Duration,
}

/// How a provider program ran.
struct ProgramRun {
    status: Option<std::process::ExitStatus>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Exec {
    /// `argv` is `browser.provider_command`; the deadline is [`EXEC_DEADLINE`].
    pub fn new(argv: Vec<String>) -> Exec {
        Exec {
            argv,
            deadline: EXEC_DEADLINE,
        }
    }

    /// The same with another deadline (tests).
    pub fn with_deadline(mut self, deadline: Duration) -> Exec {
        self.deadline = deadline;
        self
    }

    fn error(&self, reason: impl Into<String>) -> ProviderError {
        ProviderError::Api {
            provider: "exec".into(),
            reason: reason.into(),
        }
    }

    fn shown(&self, verb: &str, arg: &str) -> String {
        format!("`{} {verb} {arg}`", self.argv.join(" "))
    }

    /// Runs `ARGV… verb arg`; `Err` when it could not be started.
    async fn run(&self, verb: &str, arg: &str) -> Result<ProgramRun, String> {
        use tokio::io::AsyncReadExt;
        let (program, args) = self
            .argv
            .split_first()
            .ok_or("browser.provider_command is empty")?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .arg(verb)
            .arg(arg)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.shown(verb, arg)))?;
        // Read both pipes while it runs (a full pipe would stall it); what
        // was read so far stays readable when the deadline kills it.
        let collect = |pipe: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>>| {
            let buf = Arc::new(Mutex::new(Vec::new()));
            let out = buf.clone();
            let task = tokio::spawn(async move {
                let Some(mut pipe) = pipe else { return };
                let mut chunk = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    out.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .extend_from_slice(&chunk[..n]);
                }
            });
            (buf, task)
        };
        let (stdout, out_task) = collect(child.stdout.take().map(|p| Box::new(p) as _));
        let (stderr, err_task) = collect(child.stderr.take().map(|p| Box::new(p) as _));
        let status = match tokio::time::timeout(self.deadline, child.wait()).await {
            Ok(Ok(status)) => {
                // Its output is complete once the pipes close (bounded: a
                // grandchild may hold them open).
                let _ = tokio::time::timeout(Duration::from_secs(1), async {
                    let _ = out_task.await;
                    let _ = err_task.await;
                })
                .await;
                Some(status)
            }
            Ok(Err(e)) => return Err(format!("waiting for {}: {e}", self.shown(verb, arg))),
            Err(_) => {
                #[cfg(unix)]
                if let Some(pid) = child.id() {
                    // Its process group: a shell's `sleep` goes too.
                    // SAFETY: kill(2) with a negative pid signals the group we created.
                    unsafe {
                        libc::kill(-(pid as i32), libc::SIGKILL);
                    }
                }
                let _ = child.start_kill();
                let _ = child.wait().await;
                None
            }
        };
        let take = |b: &Arc<Mutex<Vec<u8>>>| {
            b.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        };
        Ok(ProgramRun {
            status,
            stdout: take(&stdout),
            stderr: take(&stderr),
        })
    }

    /// Why a run is a failure, or `None` when it exited 0.
    fn failure(&self, verb: &str, arg: &str, run: &ProgramRun) -> Option<String> {
        let stderr = match snippet(&run.stderr, ERROR_SNIPPET_BYTES) {
            s if s.is_empty() => "(stderr empty)".to_owned(),
            s => format!("stderr: {s}"),
        };
        match run.status {
            None => Some(format!(
                "{} did not finish within {}s and was killed; {stderr}",
                self.shown(verb, arg),
                self.deadline.as_secs_f64()
            )),
            Some(s) if !s.success() => {
                Some(format!("{} failed ({s}); {stderr}", self.shown(verb, arg)))
            }
            Some(_) => None,
        }
    }
}

impl BrowserProvider for Exec {
    fn name(&self) -> &str {
        "exec"
    }

    fn is_available(&self) -> bool {
        !self.argv.is_empty()
    }

    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>> {
        Box::pin(async move {
            if self.argv.is_empty() {
                return Err(missing("exec", "browser.provider_command"));
            }
            let run = self
                .run("create", task_id)
                .await
                .map_err(|e| self.error(e))?;
            if let Some(why) = self.failure("create", task_id, &run) {
                return Err(self.error(why));
            }
            let bad = |why: String| {
                self.error(format!(
                    "{} printed no JSON object {{cdp_url, session_id, features?}} on stdout ({why}); stderr: {}",
                    self.shown("create", task_id),
                    snippet(&run.stderr, ERROR_SNIPPET_BYTES)
                ))
            };
            let v: Value = serde_json::from_slice(&run.stdout).map_err(|e| bad(e.to_string()))?;
            let (Some(cdp_url), Some(id)) = (field(&v, &["cdp_url"]), field(&v, &["session_id"]))
            else {
                return Err(bad("no string cdp_url and session_id".into()));
            };
            let features = match v.get("features") {
                Some(Value::Object(m)) => m.clone(),
                None | Some(Value::Null) => Map::new(),
                Some(_) => return Err(bad("features is not an object".into())),
            };
            Ok(ProviderSession {
                session_name: format!("exec-{task_id}"),
                provider_session_id: id,
                cdp_url,
                features,
            })
        })
    }

    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let why = match self.run("close", provider_session_id).await {
                Err(e) => Some(e),
                Ok(run) => self.failure("close", provider_session_id, &run),
            };
            if let Some(why) = &why {
                tracing::warn!("exec: releasing a session failed: {why}");
            }
            why.is_none()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Grid's queue timeout answered 500 with its message after a long
    /// stack trace; the cut kept the trace and dropped the message.
    #[test]
    fn a_webdriver_errors_message_is_shown_not_its_stack_trace() {
        let trace: Vec<_> = (0..50)
            .map(|i| json!({"fileName": "LocalNewSessionQueue.java", "lineNumber": i}))
            .collect();
        let body = json!({"value": {"stacktrace": trace, "error": "session not created",
                                    "message": "Could not start a new session. New session request timed out"}});
        let shown = error_detail(body.to_string().as_bytes());
        assert!(
            shown.starts_with("session not created: Could not start a new session"),
            "{shown}"
        );
        assert_eq!(error_detail(b"plain text"), "plain text");
    }

    #[tokio::test]
    async fn missing_credentials_name_the_variable_without_a_request() {
        // Port 1: nothing listens; a request would be a different error.
        let none = |_: &str| None;
        let bb = Browserbase::from_vars(none);
        assert!(!bb.is_available());
        let e = bb.create_session("t").await.unwrap_err().to_string();
        assert_eq!(e, "browserbase: BROWSERBASE_API_KEY is not set");
        let bb = Browserbase::new("k".into(), String::new(), "http://127.0.0.1:1".into());
        let e = bb.create_session("t").await.unwrap_err().to_string();
        assert_eq!(e, "browserbase: BROWSERBASE_PROJECT_ID is not set");
        let e = BrowserUse::from_vars(none)
            .create_session("t")
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "browser-use: BROWSER_USE_API_KEY is not set");
        let e = Firecrawl::from_vars(none)
            .create_session("t")
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "firecrawl: FIRECRAWL_API_KEY is not set");
        let e = Exec::new(vec![]).create_session("t").await.unwrap_err();
        assert_eq!(e.to_string(), "exec: browser.provider_command is not set");
    }

    #[test]
    fn settings_come_from_the_environment_with_the_documented_defaults() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let bb = Browserbase::from_vars(vars(&[]));
        assert!((bb.keep_alive, bb.proxies, bb.advanced_stealth) == (true, true, false));
        assert_eq!(bb.api.base, Browserbase::BASE_URL);
        let bb = Browserbase::from_vars(vars(&[
            ("BROWSERBASE_KEEP_ALIVE", "false"),
            ("BROWSERBASE_PROXIES", "0"),
            ("BROWSERBASE_ADVANCED_STEALTH", "true"),
            ("BROWSERBASE_SESSION_TIMEOUT", "600"),
            ("BROWSERBASE_BASE_URL", "http://127.0.0.1:9/"),
        ]));
        assert!((bb.keep_alive, bb.proxies, bb.advanced_stealth) == (false, false, true));
        assert_eq!(bb.session_timeout, Some(600));
        assert_eq!(bb.api.base, "http://127.0.0.1:9");
        assert_eq!(Firecrawl::from_vars(vars(&[])).ttl_s, 300);
        assert_eq!(
            Firecrawl::from_vars(vars(&[("FIRECRAWL_BROWSER_TTL", "60")])).ttl_s,
            60
        );
        assert_eq!(
            BrowserUse::from_vars(vars(&[])).api.base,
            BrowserUse::BASE_URL
        );
    }

    #[tokio::test]
    async fn a_base_url_with_a_path_is_refused_before_any_request() {
        let bu = BrowserUse::new("k".into(), "http://127.0.0.1:1/api/v3".into());
        let e = bu.create_session("t").await.unwrap_err().to_string();
        assert!(
            e.contains("BROWSER_USE_BASE_URL") && e.contains("no path"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn api_failures_are_errors_without_the_key_and_close_never_errors() {
        let bb = Browserbase::new("sekrit-key".into(), "p".into(), "http://127.0.0.1:1".into());
        let e = bb.create_session("t").await.unwrap_err().to_string();
        assert!(!e.contains("sekrit-key"), "{e}");
        assert!(!bb.close_session("x").await);
        bb.emergency_cleanup("x").await;
    }

    #[test]
    fn se_cdp_is_moved_onto_the_grid_url_the_user_gave() {
        let none = CdpHeaders::default;
        let grid = |url: &str| Selenium::new(url, Map::new(), none());
        // The Grid's own address (its host IP) → the address we were given.
        assert_eq!(
            grid("https://u:p%40ss@grid.example/selenium/")
                .cdp_url_via_grid("ws://10.0.0.7:4444/selenium/session/abc/se/cdp"),
            "wss://u:p%40ss@grid.example/selenium/session/abc/se/cdp"
        );
        assert_eq!(
            grid("http://[::1]:4444").cdp_url_via_grid("ws://172.17.0.2:4444/session/abc/se/cdp"),
            "ws://[::1]:4444/session/abc/se/cdp"
        );
        // Not a Grid session path: used as given.
        let other = "ws://127.0.0.1:9222/devtools/browser/x";
        assert_eq!(grid("http://grid:4444").cdp_url_via_grid(other), other);
        assert!(crate::cdp::connection::is_grid_session_path(
            "/selenium/session/abc/se/cdp"
        ));
        assert!(!crate::cdp::connection::is_grid_session_path(
            "/devtools/browser/x"
        ));
    }

    #[test]
    fn capabilities_merge_key_by_key_over_the_default_request() {
        let caps =
            json!({"goog:chromeOptions": {"args": ["--a"]}, "unhandledPromptBehavior": "accept"});
        let s = Selenium::new(
            "http://grid:4444",
            caps.as_object().unwrap().clone(),
            CdpHeaders::default(),
        );
        assert_eq!(
            s.request("t")["capabilities"]["alwaysMatch"],
            json!({"browserName": "chrome", "unhandledPromptBehavior": "accept",
                   "se:name": "cdp-supervisor t", "goog:chromeOptions": {"args": ["--a"]}})
        );
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let f = Firecrawl::new("fc-sekrit".into(), "http://127.0.0.1:1".into());
        assert!(!format!("{f:?}").contains("sekrit"));
    }
}
