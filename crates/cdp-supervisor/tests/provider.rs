//! A cloud provider's session lifecycle through the tools: created on first
//! use, attached like any CDP URL, ended when the task ends.

mod common;

use cdp_supervisor::browser::provider::{BrowserProvider, ProviderError, ProviderSession};
use cdp_supervisor::config::{CloudProvider, Config};
use cdp_supervisor::supervisor::registry::Registry;
use cdp_supervisor::tools::AgentSession;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

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
