//! Scenario tests on the mock CDP endpoint for what the agent reads being
//! true (issue 7) in orderings real Chromium will not produce on demand:
//! a load told only by its loader's lifecycle event, a navigation away from
//! a dialog whose commit is slow, a command a dialog interrupts and that
//! completes later, the live title, and a rebind that fails or stalls.

mod mock_support;

use cdp_mock::{MockCdp, Reply};
use cdp_supervisor::config::Config;
use cdp_supervisor::supervisor::driver::{
    CallOutcome, NavigateOutcome, Supervisor, SupervisorOptions,
};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::registry::{Endpoint, Registry};
use cdp_supervisor::supervisor::state::DialogAction;
use cdp_supervisor::tools::AgentSession;
use mock_support::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const NAVIGATE: Duration = Duration::from_secs(4);

async fn open_alert(mock: &MockCdp, sup: &Supervisor) {
    mock.emit(
        Some("S1"),
        "Page.javascriptDialogOpening",
        json!({"url": "http://a.test/", "frameId": "T1", "message": "hi", "type": "alert"}),
    )
    .await;
    wait_snapshot(sup, "the alert is pending", |s| {
        s.pending_dialogs.len() == 1
    })
    .await;
}

/// DESIGN (CDP facts): a `lifecycleEvent{name:"load"}` for the navigation's
/// `loaderId` proves its document loaded, with no `frameNavigated` and no
/// `loadEventFired` at all (a new tab's first navigation can look like this).
#[tokio::test]
async fn navigate_ends_on_its_loaders_lifecycle_load_without_frame_navigated() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    mock.on(
        "Page.navigate",
        Reply::result(json!({"frameId": "T1", "loaderId": "L2"})),
    );
    let nav = spawn_navigate(&sup, "http://a.test/next", NAVIGATE);
    nth_command(&mock, "Page.navigate", Some("S1"), 1).await;
    // Another document's load first: it must not end the wait.
    emit_top_load(&mock, "L-OLD").await;
    emit_top_load(&mock, "L2").await;
    let out = nav.await.expect("join").expect("navigate");
    assert!(matches!(out, NavigateOutcome::Loaded), "{out:?}");
    sup.stop().await;
}

/// Issue 8, defect 5: navigating away from an unanswerable dialog (the
/// remedy) does not come back with `dialog_pending` for that very dialog
/// when the commit takes longer than the blocked-call grace.
#[tokio::test]
async fn navigating_away_from_a_pending_dialog_does_not_report_it_when_the_commit_is_slow() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    open_alert(&mock, &sup).await;
    mock.on(
        "Page.navigate",
        Reply::result(json!({"frameId": "T1", "loaderId": "L2"}))
            .after(Duration::from_millis(1_200))
            .emit_first(
                Some("S1"),
                "Page.javascriptDialogClosed",
                json!({"frameId": "T1", "result": false, "userInput": ""}),
            ),
    );
    let nav = spawn_navigate(&sup, "http://a.test/next", NAVIGATE);
    nth_command(&mock, "Page.navigate", Some("S1"), 1).await;
    wait_snapshot(&sup, "the alert closed", |s| s.pending_dialogs.is_empty()).await;
    emit_top_load(&mock, "L2").await;
    let out = nav.await.expect("join").expect("navigate");
    assert!(matches!(out, NavigateOutcome::Loaded), "{out:?}");
    sup.stop().await;
}

/// DESIGN ("Calls a dialog interrupts"): a command a dialog blocks returns
/// as interrupted, the supervisor keeps waiting, and the reply that comes
/// once the dialog closes is handed out exactly once.
#[tokio::test]
async fn an_interrupted_command_completes_later_and_is_handed_out_once() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    open_alert(&mock, &sup).await;
    mock.on(
        "Runtime.evaluate",
        Reply::result(json!({"result": {"type": "number", "value": 1}}))
            .after(Duration::from_millis(1_500)),
    );
    let out = sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "++window.counter"}),
            None,
            None,
            Duration::from_secs(10),
        )
        .await
        .expect("cdp");
    let CallOutcome::Interrupted {
        call_id,
        pending_dialogs,
    } = out
    else {
        panic!("expected an interrupted call, got {out:?}");
    };
    assert_eq!(pending_dialogs.len(), 1);
    assert!(sup.take_completed_calls().is_empty(), "not completed yet");
    sup.interrupted_calls_settled(Duration::from_secs(5)).await;
    let done = sup.take_completed_calls();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0].call_id, call_id);
    assert_eq!(done[0].method, "Runtime.evaluate");
    assert_eq!(
        done[0].result,
        Some(json!({"result": {"type": "number", "value": 1}}))
    );
    assert!(sup.take_completed_calls().is_empty(), "handed out once");
    assert_eq!(sup.completed_calls(), done, "still listed for the snapshot");
    assert_eq!(
        mock.commands_named("Runtime.evaluate")
            .iter()
            .filter(|c| c.params["expression"] == "++window.counter")
            .count(),
        1,
        "sent once"
    );
    sup.stop().await;
}

/// An interrupted command whose connection drops is completed with an
/// error that says it may or may not have run: never "lost" silently.
#[tokio::test]
async fn an_interrupted_command_cut_by_a_drop_completes_with_an_error() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    open_alert(&mock, &sup).await;
    mock.on("Runtime.evaluate", Reply::never());
    let out = sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "1"}),
            None,
            None,
            Duration::from_secs(10),
        )
        .await
        .expect("cdp");
    assert!(matches!(out, CallOutcome::Interrupted { .. }), "{out:?}");
    mock.drop_connections(cdp_mock::Disconnect::Reset).await;
    sup.interrupted_calls_settled(Duration::from_secs(5)).await;
    let done = sup.take_completed_calls();
    assert_eq!(done.len(), 1, "{done:?}");
    let error = done[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("may or may not have run"), "{error}");
    sup.stop().await;
}

/// The live title comes from `Target.getTargetInfo` at read time; the
/// library's instant snapshot keeps the last title events told.
#[tokio::test]
async fn live_page_reads_the_title_chromium_has_now() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    mock.on(
        "Target.getTargetInfo",
        Reply::result(json!({"targetInfo": {"targetId": "T1", "type": "page", "title": "confirm:true", "url": "http://a.test/page", "attached": true, "canAccessOpener": false}})),
    );
    let live = sup
        .live_page(Duration::from_secs(1))
        .await
        .expect("live page");
    assert_eq!(live.title, "confirm:true");
    assert_eq!(live.url, "http://a.test/page");
    let asked = mock.commands_named("Target.getTargetInfo");
    let last = asked.last().expect("asked");
    assert_eq!(
        last.session_id, None,
        "browser level: answered while a dialog blocks the page"
    );
    assert_eq!(last.params["targetId"], "T1");
    sup.stop().await;
}

/// A registry whose task `task` runs a supervisor on `mock`.
async fn registered_on(mock: &MockCdp) -> (Registry, Supervisor) {
    let registry = Registry::new();
    let sup = registry
        .get_or_start(
            "task",
            Endpoint::Url(mock.ws_url()),
            opts(DialogPolicy::MustRespond),
        )
        .await
        .expect("start");
    (registry, sup)
}

/// Issue 7, item 5: a rebind that fails leaves the working supervisor
/// registered and running.
#[tokio::test]
async fn a_failed_rebind_keeps_the_old_supervisor() {
    let mock = MockCdp::start().await;
    let (registry, old) = registered_on(&mock).await;
    let dead = MockCdp::start().await;
    dead.refuse_connections(true);
    let err = registry
        .get_or_start(
            "task",
            Endpoint::Url(dead.ws_url()),
            opts(DialogPolicy::MustRespond),
        )
        .await
        .expect_err("the dead endpoint fails");
    drop(err);
    let now = registry.get("task").expect("still registered");
    assert_eq!(now.id(), old.id());
    assert!(old.is_running());
    open_alert(&mock, &old).await;
    registry.stop_all().await;
}

/// Issue 7, item 4: readers never wait on a rebind in progress: while the
/// new endpoint stalls, `get` answers (it takes no async lock) with the old
/// supervisor and `is_starting` says a start is under way.
#[tokio::test]
async fn readers_see_the_old_supervisor_while_a_rebind_stalls() {
    let mock = MockCdp::start().await;
    let (registry, old) = registered_on(&mock).await;
    let stalled = MockCdp::start().await;
    stalled.stall_connections(true);
    let rebind = {
        let registry = registry.clone();
        let url = stalled.ws_url();
        tokio::spawn(async move {
            registry
                .get_or_start("task", Endpoint::Url(url), opts(DialogPolicy::MustRespond))
                .await
        })
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    while !registry.is_starting("task") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rebind never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(registry.get("task").map(|s| s.id()), Some(old.id()));
    assert!(
        rebind.await.expect("join").is_err(),
        "the stalled endpoint fails by its deadline"
    );
    assert!(!registry.is_starting("task"));
    assert_eq!(registry.get("task").map(|s| s.id()), Some(old.id()));
    registry.stop_all().await;
}

/// A navigation does not release a pending `beforeunload` (it queues behind
/// it): a second navigate returns at once with it, sending nothing.
#[tokio::test]
async fn navigate_over_a_pending_beforeunload_returns_it_at_once() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    mock.emit(
        Some("S1"),
        "Page.javascriptDialogOpening",
        json!({"url": "http://a.test/", "frameId": "T1", "message": "", "type": "beforeunload"}),
    )
    .await;
    wait_snapshot(&sup, "the beforeunload is pending", |s| {
        s.pending_dialogs.len() == 1
    })
    .await;
    let out = sup
        .navigate("http://a.test/next", NAVIGATE)
        .await
        .expect("navigate");
    let NavigateOutcome::DialogPending(d) = out else {
        panic!("expected the pending beforeunload, got {out:?}");
    };
    assert_eq!(d[0].dialog_type.as_str(), "beforeunload");
    assert!(
        mock.commands_named("Page.navigate").is_empty(),
        "nothing was sent"
    );
    sup.stop().await;
}

/// The reply contract when a session goes: Chromium answers no command
/// still in flight on a detached session (an OOPIF whose iframe the page
/// removed), so the supervisor ends them at once — never at their deadline.
#[tokio::test]
async fn a_command_on_a_session_that_detaches_ends_at_once() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    emit_oopif(&mock, "S1", "S7", "F3", "https://b.test/ad").await;
    wait_snapshot(&sup, "the OOPIF is routable", |s| {
        s.frame_tree
            .children
            .iter()
            .any(|c| c.frame_id == "F3" && c.session_id.is_some())
    })
    .await;
    mock.on_session("S7", "Runtime.evaluate", Reply::never());
    let call = {
        let sup = sup.clone();
        tokio::spawn(async move {
            sup.cdp(
                "Runtime.evaluate",
                json!({"expression": "1"}),
                Some("F3"),
                None,
                Duration::from_secs(60),
            )
            .await
        })
    };
    nth_command(&mock, "Runtime.evaluate", Some("S7"), 1).await;
    mock.emit(
        Some("S1"),
        "Target.detachedFromTarget",
        json!({"sessionId": "S7", "targetId": "F3"}),
    )
    .await;
    let out = tokio::time::timeout(WAIT, call)
        .await
        .expect("the call ends well before its 60 s deadline")
        .expect("join");
    let err = out.expect_err("no reply can come").to_string();
    assert!(err.contains("detached"), "{err}");
    sup.stop().await;
}

/// Bug class 15: `Supervisor::start` returns once the frame tree is
/// complete, and the first snapshot the caller reads already shows it.
/// Here the page's `Page.getFrameTree` is the last reply the attach waits
/// for, so the flush that completes the tree is the one that ends the
/// attach. (The driver once ended the attach before publishing that
/// flush's snapshot: the caller, woken on another thread, could read the
/// snapshot from before the tree. A CI run under load saw an attach to a
/// loaded page list its OOPIF but not its same-process iframe.) The race
/// is between two threads, so each attach here can only catch it, not
/// force it: 20 attaches to a page of 300 frames, whose snapshot takes the
/// longest to build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_returns_with_a_snapshot_that_shows_the_tree_its_last_reply_completed() {
    let mock = MockCdp::start().await;
    let ids: Vec<(String, String)> = (0..300)
        .map(|i| (format!("F{i}"), format!("http://a.test/f{i}")))
        .collect();
    let kids: Vec<(&str, &str)> = ids.iter().map(|(f, u)| (f.as_str(), u.as_str())).collect();
    mock.on(
        "Page.getFrameTree",
        Reply::result(frame_tree("http://a.test/", &kids)).after(Duration::from_millis(50)),
    );
    for i in 0..20 {
        let sup = Supervisor::start(&mock.ws_url(), opts(DialogPolicy::MustRespond))
            .await
            .expect("attach");
        let s = sup.snapshot();
        assert_eq!(
            s.frame_tree.children.len(),
            30,
            "attach {i}: {:#?}",
            s.frame_tree
        );
        assert!(s.frame_tree.truncated, "attach {i}");
        sup.stop().await;
    }
}

/// `select_tab` returns once the snapshot names the tab it selected as
/// current: `browser_tabs` reads the snapshot right after it, on another
/// thread. (The driver once replied before publishing.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_tab_returns_with_a_snapshot_whose_current_tab_is_the_selected_one() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    mock.emit(
        None,
        "Target.attachedToTarget",
        json!({"sessionId": "S2", "waitingForDebugger": true, "targetInfo": {
            "targetId": "T2", "type": "page", "title": "", "url": "http://a.test/popup",
            "attached": true, "openerId": "T1", "canAccessOpener": true, "browserContextId": "B1"}}),
    )
    .await;
    wait_snapshot(&sup, "the popup is a tab", |s| s.tabs.len() == 2).await;
    for i in 0..50 {
        let want = if i % 2 == 0 { "T2" } else { "T1" };
        sup.select_tab(want).await.expect("select");
        let s = sup.snapshot();
        let current = s
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.as_str());
        assert_eq!(current, Some(want), "select {i}: {:#?}", s.tabs);
    }
    sup.stop().await;
}

/// `settle_after_dialog` returns once the snapshot shows what the script
/// the answer released did before it ended: `browser_dialog` reads it at
/// once for `tabs_opened` and `pending_dialogs`. Its probe's reply comes
/// straight to the caller, not through the driver, so the events Chromium
/// sent before that reply (here the attach of the popup the script opened)
/// may not be published yet. (The same race `navigate` closes after its
/// own direct check.) 40 answers, each releasing a script that opens a tab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_after_dialog_returns_with_a_snapshot_that_shows_what_the_released_script_did() {
    const ROUNDS: usize = 40;
    let (mock, sup) = attached_with(SupervisorOptions {
        max_tabs: ROUNDS + 1,
        ..opts(DialogPolicy::MustRespond)
    })
    .await;
    mock.on(
        "Page.handleJavaScriptDialog",
        Reply::result(json!({})).emit_first(
            Some("S1"),
            "Page.javascriptDialogClosed",
            dialog_closed("T1", true),
        ),
    );
    let popups = std::sync::atomic::AtomicUsize::new(0);
    mock.handle(move |c| {
        let probe = c.method == "Runtime.evaluate"
            && c.session_id.as_deref() == Some("S1")
            && c.params["expression"] == "0";
        if !probe {
            return None;
        }
        let n = popups.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Some(Reply::result(json!({"result": {"type": "number", "value": 0}})).emit_first(
            None,
            "Target.attachedToTarget",
            json!({"sessionId": format!("SP{n}"), "waitingForDebugger": true, "targetInfo": {
                "targetId": format!("P{n}"), "type": "page", "title": "", "url": "http://a.test/popup",
                "attached": true, "openerId": "T1", "canAccessOpener": true, "browserContextId": "B1"}}),
        ))
    });
    for i in 0..ROUNDS {
        open_alert(&mock, &sup).await;
        let closed = sup
            .answer_dialog(answer(DialogAction::Accept))
            .await
            .expect("answered");
        sup.settle_after_dialog(
            closed.dialog.frame_id.as_deref(),
            closed.dialog.target_id.as_deref(),
            WAIT,
        )
        .await;
        let s = sup.snapshot();
        let popup = format!("P{i}");
        assert!(
            s.tabs.iter().any(|t| t.target_id == popup),
            "answer {i}: no {popup} in {:#?}",
            s.tabs
        );
    }
    sup.stop().await;
}

/// `browser_snapshot`'s `event_seq` is the point its snapshot shows, so an
/// event the snapshot does not show counts for a `browser_wait` since it.
/// (It was read after the round trip for the live titles, which can take
/// up to a second: a dialog that opened meanwhile was missing from the
/// snapshot and yet not after its `event_seq`, and the wait never saw it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_snapshot_does_not_show_happened_after_its_event_seq() {
    let mock = MockCdp::start().await;
    let mut config = Config::default();
    config.browser.cdp_url = mock.http_url();
    let session = Arc::new(AgentSession::new(Registry::new(), "task", config));
    session
        .call("browser_snapshot", json!({}))
        .await
        .expect("attaches");
    // Chromium answers the live read late; a dialog opens meanwhile.
    mock.on(
        "Target.getTargets",
        Reply::result(json!({"targetInfos": [{"targetId": "T1", "type": "page", "title": "",
            "url": "about:blank", "attached": true, "canAccessOpener": false, "browserContextId": "B1"}]}))
        .after(Duration::from_millis(300)),
    );
    let reads = sent(&mock, "Target.getTargets", None).len();
    let read = {
        let session = session.clone();
        tokio::spawn(async move { session.call("browser_snapshot", json!({})).await })
    };
    nth_command(&mock, "Target.getTargets", None, reads + 1).await;
    mock.emit(
        Some("S1"),
        "Page.javascriptDialogOpening",
        dialog_opening("T1", "alert", "hi"),
    )
    .await;
    let sup = session.current_supervisor().expect("running");
    wait_snapshot(&sup, "the alert is pending", |s| {
        s.pending_dialogs.len() == 1
    })
    .await;
    let v = read.await.expect("join").expect("snapshot");
    assert_eq!(
        v["pending_dialogs"],
        json!([]),
        "read before the alert: {v}"
    );
    let w = session
        .call(
            "browser_wait",
            json!({"event": "dialog_opened", "timeout_s": 1, "since": v["event_seq"]}),
        )
        .await
        .expect("wait");
    assert_eq!(w["happened"], true, "event_seq {}: {w}", v["event_seq"]);
    session.close().await;
}

/// Issue 33: a page whose outline reply lies — a node named as its own
/// parent, a parent that comes after its child, a node list far past what
/// a page holds — is outlined once per node that has a place, and the call
/// returns. (The walker runs in the page: a page can make it say anything.)
#[tokio::test]
async fn a_lying_outline_reply_is_outlined_once_per_node_and_returns() {
    let (mock, sup) = attached(DialogPolicy::MustRespond).await;
    mock.on(
        "Page.createIsolatedWorld",
        Reply::result(json!({"executionContextId": 7})),
    );
    let mut nodes = vec![
        json!([-1, "RootWebArea", "Liar", "", 0, -1]),
        json!([0, "button", "Go", "", 0, 0]),
        json!([2, "button", "Own parent", "", 0, 1]),
        json!([9, "button", "Parent after it", "", 0, 2]),
        json!([1, "StaticText", "ok", "", 0, -1]),
    ];
    nodes.extend((0..50_000).map(|i| json!([0, "link", format!("l{i}"), "", 0, 3 + i])));
    mock.on(
        "Runtime.callFunctionOn",
        Reply::result(json!({"result": {"type": "object", "value": {"nodes": nodes, "owners": [], "cut": false}}})),
    );
    let page = cdp_supervisor::supervisor::act::Page::new(sup.clone());
    let outline = tokio::time::timeout(
        Duration::from_secs(20),
        page.outline(&cdp_supervisor::supervisor::act::OutlineMode::Default),
    )
    .await
    .expect("the outline returns")
    .expect("an outline");
    let mut all = outline.text.clone();
    let mut cursor = outline.cursor.clone();
    while let Some(c) = cursor {
        let part = page.outline_more(&c).expect("the next part");
        all.push('\n');
        all.push_str(&part.text);
        cursor = part.cursor;
    }
    assert_eq!(all.matches("button \"Go\"").count(), 1, "{}", &all[..500]);
    assert!(!all.contains("Own parent") && !all.contains("Parent after it"));
    assert_eq!(all.matches("- link \"l").count(), 50_000);
    sup.stop().await;
}

/// Issue 28 (the act module): the refs of an outline, and the parts of it
/// not yet given, are the supervisor's, not one session's: another
/// session of the same task continues it (the registry keeps one page
/// layer per supervisor), and a page layer of its own does not.
#[tokio::test]
async fn sessions_of_one_task_share_the_outline_and_its_refs() {
    use cdp_supervisor::supervisor::act::{OutlineMode, Page};
    let mock = MockCdp::start().await;
    let (registry, sup) = registered_on(&mock).await;
    mock.on(
        "Page.createIsolatedWorld",
        Reply::result(json!({"executionContextId": 7})),
    );
    let mut nodes = vec![json!([-1, "RootWebArea", "Big", "", 0, -1])];
    nodes.extend((0..3_000).map(|i| json!([0, "button", format!("b{i}"), "", 0, i])));
    mock.on(
        "Runtime.callFunctionOn",
        Reply::result(json!({"result": {"type": "object", "value": {"nodes": nodes, "owners": [], "cut": false}}})),
    );
    let one = registry.page("task", &sup);
    let outline =
        tokio::time::timeout(Duration::from_secs(20), one.outline(&OutlineMode::FullText))
            .await
            .expect("the outline returns")
            .expect("an outline");
    let cursor = outline.cursor.expect("given in parts");
    let two = registry.page("task", &sup);
    let part = two
        .outline_more(&cursor)
        .expect("the other session continues it");
    assert!(part.text.contains("[ref=e3000]"), "{}", part.text);
    assert!(Page::new(sup.clone()).outline_more(&cursor).is_err());
    sup.stop().await;
}
