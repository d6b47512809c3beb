//! Cloud browser providers: session lifecycle behind one trait
//! (spec: `browser-provider-plugin.md`). A provider does not browse: it
//! creates a remote browser session, hands back its CDP URL, and tears the
//! session down. The supervisor attaches to that URL like to any other.
//!
//! Built in: [`Browserbase`] (`browser.cloud_provider: browserbase`), reading
//! `BROWSERBASE_API_KEY` and `BROWSERBASE_PROJECT_ID`. Other providers named
//! in the config (`browser-use`, `firecrawl`) have no session support in
//! this build: give their CDP URL as `browser.cdp_url`.

use crate::cdp::endpoint::redact_url;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Every provider HTTP call has this deadline.
pub const PROVIDER_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

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
    /// The provider's API failed or answered something unusable (the spec's `RuntimeError`).
    #[error("{provider}: {reason}")]
    Api {
        /// The provider's name, e.g. `browserbase`.
        provider: String,
        /// What failed: the request error or HTTP status (with the start of the body), or an unusable answer; URLs redacted.
        reason: String,
    },
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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
}

/// Browserbase: `POST {api}/v1/sessions` with `X-BB-API-Key` creates a
/// session (`{id, connectUrl}`); `POST {api}/v1/sessions/{id}` with
/// `status: REQUEST_RELEASE` ends it.
#[derive(Clone, Debug)]
pub struct Browserbase {
    api_key: String,
    project_id: String,
    api_url: String,
}

impl Browserbase {
    /// The public API.
    pub const API_URL: &'static str = "https://api.browserbase.com";

    /// From `BROWSERBASE_API_KEY`, `BROWSERBASE_PROJECT_ID` and, to point it
    /// elsewhere (a proxy, a test server), `BROWSERBASE_API_URL`.
    pub fn from_env() -> Browserbase {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        let api_url = var("BROWSERBASE_API_URL");
        Browserbase::new(
            var("BROWSERBASE_API_KEY"),
            var("BROWSERBASE_PROJECT_ID"),
            if api_url.is_empty() {
                Self::API_URL.to_owned()
            } else {
                api_url
            },
        )
    }

    /// With explicit credentials and API base URL.
    pub fn new(api_key: String, project_id: String, api_url: String) -> Browserbase {
        Browserbase {
            api_key,
            project_id,
            api_url: api_url.trim_end_matches('/').to_owned(),
        }
    }

    fn error(&self, reason: impl Into<String>) -> ProviderError {
        ProviderError::Api {
            provider: "browserbase".into(),
            reason: reason.into(),
        }
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, ProviderError> {
        let url = format!("{}{path}", self.api_url);
        let client = reqwest::Client::builder()
            .timeout(PROVIDER_REQUEST_TIMEOUT)
            .build()
            .map_err(|e| self.error(e.to_string()))?;
        let resp = client
            .post(&url)
            .header("X-BB-API-Key", &self.api_key)
            .json(&body)
            .send()
            .await
            // reqwest's text names the URL; ours is redacted.
            .map_err(|e| {
                self.error(format!(
                    "POST {} failed: {}",
                    redact_url(&url),
                    e.without_url()
                ))
            })?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            let snippet: String = text.chars().take(200).collect();
            return Err(self.error(format!(
                "POST {} answered HTTP {status}: {snippet}",
                redact_url(&url)
            )));
        }
        serde_json::from_str(&text).map_err(|e| self.error(format!("unreadable answer: {e}")))
    }
}

impl BrowserProvider for Browserbase {
    fn name(&self) -> &str {
        "browserbase"
    }

    fn is_available(&self) -> bool {
        !self.api_key.is_empty() && !self.project_id.is_empty()
    }

    fn create_session<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<ProviderSession, ProviderError>> {
        Box::pin(async move {
            for (value, what) in [
                (&self.api_key, "BROWSERBASE_API_KEY"),
                (&self.project_id, "BROWSERBASE_PROJECT_ID"),
            ] {
                if value.is_empty() {
                    return Err(ProviderError::MissingCredentials {
                        provider: "browserbase".into(),
                        what: what.into(),
                    });
                }
            }
            let v = self
                .post("/v1/sessions", json!({"projectId": self.project_id}))
                .await?;
            let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            match (field("id"), field("connectUrl")) {
                (Some(id), Some(cdp_url)) => Ok(ProviderSession {
                    session_name: format!("browserbase-{task_id}"),
                    provider_session_id: id,
                    cdp_url,
                }),
                _ => Err(self.error("the session answer has no id or connectUrl")),
            }
        })
    }

    fn close_session<'a>(&'a self, provider_session_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let body = json!({"projectId": self.project_id, "status": "REQUEST_RELEASE"});
            match self
                .post(&format!("/v1/sessions/{provider_session_id}"), body)
                .await
            {
                Ok(_) => true,
                Err(e) => {
                    tracing::warn!("closing Browserbase session {provider_session_id}: {e}");
                    false
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::extract::{Path, State};
    use axum::http::HeaderMap;
    use axum::routing::post;
    use std::sync::{Arc, Mutex};

    type Log = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

    async fn fake_api() -> (String, Log) {
        let log: Log = Arc::default();
        async fn create(
            State(log): State<Log>,
            headers: HeaderMap,
            body: axum::Json<Value>,
        ) -> axum::Json<Value> {
            let key = headers
                .get("x-bb-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            log.lock().unwrap().push(("create".into(), key, body.0));
            axum::Json(
                json!({"id": "sess-1", "connectUrl": "wss://connect.example/?signingKey=abc"}),
            )
        }
        async fn release(
            State(log): State<Log>,
            Path(id): Path<String>,
            body: axum::Json<Value>,
        ) -> axum::Json<Value> {
            log.lock()
                .unwrap()
                .push((format!("release {id}"), None, body.0));
            axum::Json(json!({"id": id}))
        }
        let app = Router::new()
            .route("/v1/sessions", post(create))
            .route("/v1/sessions/{id}", post(release))
            .with_state(log.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}"), log)
    }

    #[tokio::test]
    async fn browserbase_creates_and_releases_a_session() {
        let (api, log) = fake_api().await;
        let bb = Browserbase::new("key-1".into(), "proj-1".into(), api);
        assert!(bb.is_available());
        let s = bb.create_session("t1").await.expect("session");
        assert_eq!(s.provider_session_id, "sess-1");
        assert_eq!(s.session_name, "browserbase-t1");
        assert!(s.cdp_url.starts_with("wss://connect.example/"));
        assert!(bb.close_session("sess-1").await);
        let log = log.lock().unwrap();
        assert_eq!(log[0].1.as_deref(), Some("key-1"));
        assert_eq!(log[0].2, json!({"projectId": "proj-1"}));
        assert_eq!(log[1].0, "release sess-1");
        assert_eq!(log[1].2["status"], "REQUEST_RELEASE");
    }

    #[tokio::test]
    async fn browserbase_without_credentials_says_which_is_missing() {
        let bb = Browserbase::new(String::new(), "p".into(), "http://127.0.0.1:1".into());
        assert!(!bb.is_available());
        let e = bb.create_session("t").await.unwrap_err().to_string();
        assert!(e.contains("BROWSERBASE_API_KEY"), "{e}");
    }

    #[tokio::test]
    async fn browserbase_api_failures_are_errors_and_close_never_errors() {
        let bb = Browserbase::new("k".into(), "p".into(), "http://127.0.0.1:1".into());
        assert!(bb.create_session("t").await.is_err());
        assert!(!bb.close_session("x").await);
    }
}
