//! Shared set-up for scenario tests on the mock CDP endpoint (`cdp-mock`):
//! fast options, waiting on snapshots and commands with deadlines, and the
//! params of the events the scenarios play.

#![allow(dead_code)]

use cdp_mock::{Command, MockCdp};
use cdp_supervisor::supervisor::driver::{
    CallOutcome, CdpCallError, NavigateOutcome, Supervisor, SupervisorOptions,
};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::Snapshot;
use cdp_supervisor::supervisor::state::{DialogAction, DialogRequest};
use serde_json::{Value, json};

#[path = "../snapshot_wait/mod.rs"]
mod snapshot_wait;
pub use snapshot_wait::wait_snapshot_for;
use std::time::Duration;

/// The agent's answer `action` to the sole pending dialog, with no prompt
/// text and no files.
pub fn answer(action: DialogAction) -> DialogRequest {
    DialogRequest {
        action,
        prompt_text: None,
        dialog_id: None,
        files: None,
        login: None,
    }
}

/// How long a scenario waits for something the supervisor does at once.
pub const WAIT: Duration = Duration::from_secs(5);

/// Options that keep the scenarios fast: short reconnect backoff and deadlines.
pub fn opts(policy: DialogPolicy) -> SupervisorOptions {
    SupervisorOptions {
        policy: policy.into(),
        command_timeout: Duration::from_secs(2),
        attach_timeout: Duration::from_secs(2),
        reconnect_backoff_start: Duration::from_millis(50),
        ..Default::default()
    }
}

/// A mock with the built-in page `T1` and a supervisor attached to it (session `S1`).
pub async fn attached(policy: DialogPolicy) -> (MockCdp, Supervisor) {
    attached_with(opts(policy)).await
}

pub async fn attached_with(options: SupervisorOptions) -> (MockCdp, Supervisor) {
    let mock = MockCdp::start().await;
    let sup = Supervisor::start(&mock.ws_url(), options)
        .await
        .expect("supervisor attaches to the mock");
    (mock, sup)
}

/// Waits until `f` holds for the latest snapshot; panics with the snapshot after [`WAIT`].
pub async fn wait_snapshot(
    sup: &Supervisor,
    what: &str,
    f: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    wait_snapshot_for(sup, what, WAIT, f).await
}

/// Waits for the `n`-th command (1-based) named `method` on `session`; panics after [`WAIT`].
pub async fn nth_command(mock: &MockCdp, method: &str, session: Option<&str>, n: usize) -> Command {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let found: Vec<Command> = mock
            .commands_named(method)
            .into_iter()
            .filter(|c| c.session_id.as_deref() == session)
            .collect();
        if found.len() >= n {
            return found[n - 1].clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {method} #{n} on {session:?}; commands: {:?}",
            mock.commands()
                .iter()
                .map(|c| (c.connection_index, c.session_id.clone(), c.method.clone()))
                .collect::<Vec<_>>()
        );
        mock.wait_for_commands(
            method,
            mock.commands_named(method).len() + 1,
            Duration::from_millis(50),
        )
        .await;
    }
}

/// The commands named `method` sent on `session`.
pub fn sent(mock: &MockCdp, method: &str, session: Option<&str>) -> Vec<Command> {
    mock.commands_named(method)
        .into_iter()
        .filter(|c| c.session_id.as_deref() == session)
        .collect()
}

/// `Page.javascriptDialogOpening` params, as Chromium sends them.
pub fn dialog_opening(frame_id: &str, kind: &str, message: &str) -> Value {
    json!({
        "url": "https://a.test/", "frameId": frame_id, "message": message, "type": kind,
        "hasBrowserHandler": false, "defaultPrompt": "",
    })
}

/// `Page.javascriptDialogClosed` params.
pub fn dialog_closed(frame_id: &str, result: bool) -> Value {
    json!({"frameId": frame_id, "result": result, "userInput": ""})
}

/// `Page.frameNavigated` params for a frame.
pub fn navigated(frame_id: &str, parent: Option<&str>, url: &str) -> Value {
    let mut frame = json!({
        "id": frame_id, "url": url, "loaderId": "L2", "securityOrigin": cdp_supervisor::supervisor::state::origin_of(url),
        "mimeType": "text/html",
    });
    if let Some(p) = parent {
        frame["parentId"] = json!(p);
    }
    json!({"frame": frame, "type": "Navigation"})
}

/// `Target.attachedToTarget` params for an auto-attached OOPIF (target id == frame id).
pub fn oopif_attached(session_id: &str, frame_id: &str, url: &str) -> Value {
    json!({
        "sessionId": session_id,
        "targetInfo": {"targetId": frame_id, "type": "iframe", "title": "", "url": url,
                       "attached": true, "canAccessOpener": false, "browserContextId": "B1"},
        "waitingForDebugger": true,
    })
}

/// A `Page.getFrameTree` result: the top `T1` at `url` with these `(frame_id, url)` children.
pub fn frame_tree(url: &str, children: &[(&str, &str)]) -> Value {
    let kids: Vec<Value> = children
        .iter()
        .map(|(id, u)| json!({"frame": {"id": id, "parentId": "T1", "url": u, "loaderId": "L", "securityOrigin": "null", "mimeType": "text/html"}}))
        .collect();
    json!({"frameTree": {
        "frame": {"id": "T1", "url": url, "loaderId": "L", "securityOrigin": cdp_supervisor::supervisor::state::origin_of(url), "mimeType": "text/html"},
        "childFrames": kids,
    }})
}

/// Plays `Page.frameAttached{frameId, parentFrameId}` on `session`.
pub async fn emit_frame_attached(mock: &MockCdp, session: &str, frame_id: &str, parent: &str) {
    mock.emit(
        Some(session),
        "Page.frameAttached",
        json!({"frameId": frame_id, "parentFrameId": parent}),
    )
    .await;
}

/// Plays `Page.frameDetached{frameId, reason}` on `session`.
pub async fn emit_frame_detached(mock: &MockCdp, session: &str, frame_id: &str, reason: &str) {
    mock.emit(
        Some(session),
        "Page.frameDetached",
        json!({"frameId": frame_id, "reason": reason}),
    )
    .await;
}

/// Plays the auto-attach of OOPIF `frame_id` as `session` under `parent`.
pub async fn emit_oopif(mock: &MockCdp, parent: &str, session: &str, frame_id: &str, url: &str) {
    mock.emit(
        Some(parent),
        "Target.attachedToTarget",
        oopif_attached(session, frame_id, url),
    )
    .await;
}

/// Starts `Runtime.evaluate("1")` through the supervisor in its own task
/// (the mock may never answer it).
pub fn spawn_evaluate(
    sup: &Supervisor,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<CallOutcome, CdpCallError>> {
    let sup = sup.clone();
    tokio::spawn(async move {
        sup.cdp(
            "Runtime.evaluate",
            json!({"expression": "1"}),
            None,
            None,
            timeout,
        )
        .await
    })
}

/// Starts `navigate(url)` through the supervisor in its own task (the
/// scenario then plays the navigation's events).
pub fn spawn_navigate(
    sup: &Supervisor,
    url: &str,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<NavigateOutcome, CdpCallError>> {
    let sup = sup.clone();
    let url = url.to_owned();
    tokio::spawn(async move { sup.navigate(&url, timeout).await })
}

/// Plays `Page.lifecycleEvent{name:"load"}` of the top frame `T1` for `loader` on `S1`.
pub async fn emit_top_load(mock: &MockCdp, loader: &str) {
    mock.emit(
        Some("S1"),
        "Page.lifecycleEvent",
        json!({"frameId": "T1", "loaderId": loader, "name": "load", "timestamp": 1.0}),
    )
    .await;
}
