//! Helpers of the MCP tests: an in-process MCP client (rmcp's) talking to
//! [`serve_io`] over an in-memory pipe, and the real-Chromium config.

#![allow(dead_code)]

use cdp_supervisor::config::Config;
use cdp_supervisor::demo_site::host_resolver_arg;
use cdp_supervisor::mcp::{McpError, serve_io};
use cdp_supervisor::supervisor::registry::Registry;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long a session may take to stop its browser after it ends.
pub const CLOSE_DEADLINE: Duration = Duration::from_secs(15);

/// Fails (never skips) when there is no Chromium to launch.
pub fn require_chromium() {
    if let Err(e) = cdp_supervisor::browser::find_chromium(None) {
        panic!("these tests need a real Chromium (install chromium): {e}");
    }
}

/// The default local config, with `*.test` mapped to loopback.
pub fn local_config() -> Config {
    let mut config = Config::default();
    config.browser.chromium_args = vec![host_resolver_arg().to_owned()];
    config
}

/// A config whose backend has no CDP endpoint.
pub fn camofox_config() -> Config {
    let mut config = Config::default();
    config
        .set("browser.cloud_provider", "camofox")
        .expect("camofox is a provider");
    config
}

/// One MCP session served in-process, with rmcp's client on the other end.
pub struct Client {
    pub service: RunningService<RoleClient, ()>,
    pub server: JoinHandle<Result<(), McpError>>,
    pub registry: Registry,
}

impl Client {
    pub async fn connect(config: Config) -> Client {
        let registry = Registry::new();
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (reader, writer) = tokio::io::split(theirs);
        let server = tokio::spawn(serve_io(registry.clone(), config, reader, writer));
        let service = ().serve(ours).await.expect("MCP handshake");
        Client {
            service,
            server,
            registry,
        }
    }

    pub async fn tool_names(&self) -> Vec<String> {
        self.service
            .list_all_tools()
            .await
            .expect("tools/list")
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect()
    }

    pub async fn try_call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(o) = args {
            params = params.with_arguments(o);
        }
        self.service.call_tool(params).await
    }

    /// Calls a tool that must succeed; returns its structured result (and
    /// checks that the text content renders it: a JSON line whose fields
    /// are the result's, then the outline's lines).
    pub async fn ok(&self, name: &str, args: Value) -> Value {
        let r = self
            .try_call(name, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{name}({args}): protocol error {e}"));
        let text = text_of(&r);
        assert_ne!(r.is_error, Some(true), "{name}({args}) failed: {text}");
        let structured = r
            .structured_content
            .unwrap_or_else(|| panic!("{name}: no structuredContent"));
        assert_renders(name, &text, &structured);
        structured
    }

    /// Calls a tool that must fail as a tool result (`isError`); returns the text.
    pub async fn err(&self, name: &str, args: Value) -> String {
        let r = self
            .try_call(name, args.clone())
            .await
            .unwrap_or_else(|e| panic!("{name}({args}): protocol error {e}, want isError"));
        let text = text_of(&r);
        assert_eq!(r.is_error, Some(true), "{name}({args}) should fail: {text}");
        assert!(!text.is_empty(), "{name}: empty error text");
        text
    }

    /// Ends the session as a client does (closing its end of the pipe) and
    /// waits for the server to return; the browser is stopped by then.
    pub async fn close(self) -> Registry {
        self.service.cancel().await.expect("client cancel");
        tokio::time::timeout(CLOSE_DEADLINE, self.server)
            .await
            .expect("server returns after the client leaves")
            .expect("server task")
            .expect("server result");
        self.registry
    }
}

/// Checks that `text` (a result's text content) renders `structured`: its
/// first line is a JSON object whose fields are the result's (lists may
/// keep fewer entries), then the outline's lines when the result has one.
pub fn assert_renders(name: &str, text: &str, structured: &Value) {
    let (head, rest) = text.split_once('\n').unwrap_or((text, ""));
    let line: Value = serde_json::from_str(head)
        .unwrap_or_else(|e| panic!("{name}: the text's first line is not JSON ({e}): {text}"));
    for (k, v) in line.as_object().expect("a JSON object") {
        let full = &structured[k];
        assert!(!full.is_null(), "{name}: {k} is in the text only: {text}");
        if !(v.is_object() || v.is_array()) {
            assert_eq!(
                v, full,
                "{name}: {k} differs between text and structuredContent"
            );
        }
    }
    if let Some(page) = structured["page"].as_str().filter(|p| !p.is_empty()) {
        assert_eq!(
            rest, page,
            "{name}: the outline's lines follow the JSON line"
        );
    }
    for d in structured["pending_dialogs"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let id = d["id"].as_str().unwrap_or_default();
        assert!(
            text.contains(id),
            "{name}: pending dialog {id} missing from the text: {text}"
        );
    }
}

pub fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn process_gone(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}
