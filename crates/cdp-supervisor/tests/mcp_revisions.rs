//! rmcp's own client (3.11) against the server, speaking MCP 2026-07-28
//! (`server/discover`, per-request `_meta`) with the tasks extension
//! declared, over an in-memory pipe (the stdio path): `browser_navigate`
//! and `browser_wait` come back as MCP tasks polled with `tasks/get`, a
//! dialog is answered (what the page got is read back), a push arrives
//! through `subscriptions/listen`, and `ask_user` is answered by the
//! client's elicitation handler through `input_required`. Then the bad
//! input of the extension: a poll after the outcome was delivered, a
//! forged id. Real headless Chromium; fails (never skips) without it.

mod mcp_support;

use cdp_supervisor::demo_site::SiteServer;
use cdp_supervisor::mcp::serve_io;
use cdp_supervisor::supervisor::registry::Registry;
use mcp_support::{local_config, require_chromium};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams, Implementation,
    ProtocolVersion, ServerNotification, SubscriptionFilter, TaskPayload,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Any single wait of this test (a dialog showing, a push, a task ending).
const DEADLINE: Duration = Duration::from_secs(20);
const HUMAN_TEXT: &str = "typed by rmcp's human";

/// The client: declares elicitation and the tasks extension, and answers
/// every form question as a human who accepts with `HUMAN_TEXT`.
#[derive(Clone, Default)]
struct Human {
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Human {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().unwrap().push(message);
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"action": "accept", "text": HUMAN_TEXT})))
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_elicitation()
                .enable_tasks()
                .build(),
            Implementation::new("mcp_revisions", "0"),
        )
    }
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(o) = args else {
        unreachable!("arguments are objects")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(o)
}

fn structured(r: CallToolResult, what: &str) -> Value {
    assert_ne!(r.is_error, Some(true), "{what}: {:?}", r.content);
    r.structured_content
        .unwrap_or_else(|| panic!("{what}: no structuredContent"))
}

async fn call(c: &RunningService<RoleClient, Human>, name: &str, args: Value) -> Value {
    let r = c
        .call_tool(params(name, args.clone()))
        .await
        .unwrap_or_else(|e| panic!("{name}({args}): {e}"));
    structured(r, name)
}

/// A long tool through the tasks extension: a task at once, then polled
/// until it ends; its result.
async fn call_as_task(c: &RunningService<RoleClient, Human>, name: &str, args: Value) -> Value {
    let response = c
        .call_tool_once(params(name, args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let CallToolResponse::Task(created) = response else {
        panic!("{name}: not an MCP task for a client that declared the extension: {response:?}")
    };
    let id = created.task.task_id.clone();
    let poll = Duration::from_millis(created.task.poll_interval_ms.unwrap_or(250));
    let ended = tokio::time::timeout(DEADLINE, async {
        loop {
            let got = c
                .peer()
                .get_task(GetTaskParams::new(id.clone()))
                .await
                .expect("tasks/get");
            if got.task.status().is_terminal() {
                return got.task;
            }
            tokio::time::sleep(poll).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{name}: its task did not end within {DEADLINE:?}"));
    // Delivered: a second poll is the same error as an id never issued.
    let again = c.peer().get_task(GetTaskParams::new(id.clone())).await;
    let e = again.expect_err("a poll after the outcome was delivered is an error");
    assert!(e.to_string().contains("no MCP task"), "{e}");
    let TaskPayload::Completed { result } = ended.payload else {
        panic!("{name}: the task ended {:?}", ended.payload)
    };
    let r: CallToolResult = serde_json::from_value(Value::Object(result)).expect("a tool result");
    structured(r, name)
}

async fn pending(c: &RunningService<RoleClient, Human>, dialog_type: &str) -> Value {
    tokio::time::timeout(DEADLINE, async {
        loop {
            let snap = call(c, "browser_snapshot", json!({})).await;
            if let Some(d) = snap["pending_dialogs"]
                .as_array()
                .and_then(|p| p.iter().find(|d| d["type"] == dialog_type))
            {
                return d.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no pending {dialog_type} within {DEADLINE:?}"))
}

async fn evaluate(c: &RunningService<RoleClient, Human>, expression: &str) -> Value {
    let r = call(
        c,
        "browser_cdp",
        json!({"method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": true}}),
    )
    .await;
    r["result"]["result"]["value"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_client_on_2026_07_28_with_the_tasks_extension() {
    require_chromium();
    let site = SiteServer::start().await.expect("fixture site");
    site.add_page(
        "/revisions",
        "<!doctype html><title>rmcp revisions</title><p>hello</p><script>\
         function ask() { window.confirmed = confirm('Proceed?'); }\
         function name() { window.named = prompt('Your name?', 'nobody'); }</script>",
    );
    let registry = Registry::new();
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (reader, writer) = tokio::io::split(theirs);
    let server = tokio::spawn(serve_io(registry.clone(), local_config(), reader, writer));
    let human = Human::default();
    let c = human
        .clone()
        .serve_with_lifecycle(
            ours,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover");

    let names: Vec<String> = c
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "browser_open"),
        "a 2026-07-28 client is offered handles: {names:?}"
    );

    // Navigate as an MCP task (no `task` argument: the stdio process's task).
    let url = site.url("a.test", "/revisions");
    let nav = call_as_task(&c, "browser_navigate", json!({"url": url})).await;
    assert_eq!(nav["status"], "loaded", "{nav}");
    assert_eq!(nav["title"], "rmcp revisions", "{nav}");
    let snap = call(&c, "browser_snapshot", json!({})).await;
    assert_eq!(snap["url"], url.as_str(), "{snap}");

    // A push through subscriptions/listen when the confirm opens.
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec!["browser://snapshot".to_owned()]);
    let mut sub = c.peer().listen(filter).await.expect("subscriptions/listen");
    assert_eq!(
        sub.acknowledged().resource_subscriptions.as_deref(),
        Some(&["browser://snapshot".to_owned()][..])
    );
    evaluate(&c, "setTimeout(() => ask(), 0); 'scheduled'").await;
    let pushed = tokio::time::timeout(DEADLINE, sub.next())
        .await
        .expect("a push within the deadline")
        .expect("the listen stream")
        .expect("a notification");
    assert!(
        matches!(pushed, ServerNotification::ResourceUpdatedNotification(ref n) if n.params.uri == "browser://snapshot"),
        "{pushed:?}"
    );
    drop(sub);
    let d = pending(&c, "confirm").await;
    let ans = call(&c, "browser_dialog", json!({"action": "accept"})).await;
    assert_eq!(ans["answered"]["id"], d["id"], "{ans}");
    assert_eq!(evaluate(&c, "window.confirmed").await, json!(true));

    // browser_wait as an MCP task: the prompt opening ends it.
    evaluate(&c, "setTimeout(() => name(), 300); 'scheduled'").await;
    let waited = call_as_task(
        &c,
        "browser_wait",
        json!({"event": "dialog_opened", "timeout_s": 15}),
    )
    .await;
    assert_eq!(waited["happened"], json!(true), "{waited}");

    // ask_user through input_required, answered by the handler.
    let d = pending(&c, "prompt").await;
    let ans = call(&c, "browser_dialog", json!({"action": "ask_user"})).await;
    assert_eq!(ans["answered"]["id"], d["id"], "{ans}");
    assert_eq!(ans["answered"]["closed_by"], "user", "{ans}");
    assert_eq!(human.asked.lock().unwrap().len(), 1);
    assert_eq!(evaluate(&c, "window.named").await, json!(HUMAN_TEXT));

    // A forged task id.
    let e = c
        .peer()
        .get_task(GetTaskParams::new("0123456789abcdef".to_owned()))
        .await
        .expect_err("a forged MCP task id");
    assert!(e.to_string().contains("no MCP task"), "{e}");
    assert!(!e.to_string().contains("0123456789abcdef"), "{e}");

    c.cancel().await.expect("client cancel");
    tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("server returns after the client leaves")
        .expect("server task")
        .expect("server result");
}
