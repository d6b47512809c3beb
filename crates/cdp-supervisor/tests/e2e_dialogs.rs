//! End to end: native dialogs on real headless Chromium — answered by the
//! agent, by a policy, by the watchdog, by another CDP client; during load,
//! on `beforeunload`, from iframes, and two at once.

mod common;

use cdp_supervisor::cdp::connection::Connection;
use cdp_supervisor::cdp::protocol::SessionId;
use cdp_supervisor::supervisor::driver::{CallOutcome, NavigateOutcome};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::{ClosedBy, Snapshot};
use cdp_supervisor::supervisor::state::{DialogAction, DialogError};
use common::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Opens `kind` in the main frame of `/demo`, answers it as the agent and
/// checks the record, the snapshot and what the page received.
async fn agent_answers(
    kind: &str,
    action: DialogAction,
    prompt_text: Option<&str>,
    expected_value: Value,
) {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    h.eval(&format!("fireLater('{kind}', 'the {kind}')")).await;
    let d = h.pending(1).await.remove(0);
    assert_eq!(d.dialog_type, kind);
    assert_eq!(d.message, format!("the {kind}"));
    assert!(d.answerable);
    if kind == "prompt" {
        assert_eq!(d.default_prompt, "default text");
    }
    let closed = h
        .answer(action, prompt_text, Some(&d.id))
        .await
        .expect("answer");
    assert_eq!(closed.dialog.id, d.id);
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    let s = h
        .wait_snapshot("no dialog pending", |s| s.pending_dialogs.is_empty())
        .await;
    let recent: Vec<_> = s
        .recent_dialogs
        .iter()
        .filter(|c| c.dialog.id == d.id)
        .collect();
    assert_eq!(recent.len(), 1, "{s:?}");
    assert_eq!(recent[0].closed_by, ClosedBy::Agent);
    let results = h.results_len(1).await;
    assert_eq!(
        results,
        vec![json!({"kind": kind, "frame": "main", "value": expected_value})]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn alert_accepted_by_agent() {
    agent_answers("alert", DialogAction::Accept, None, Value::Null).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn alert_dismissed_by_agent() {
    agent_answers("alert", DialogAction::Dismiss, None, Value::Null).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn confirm_accepted_by_agent_page_gets_true() {
    agent_answers("confirm", DialogAction::Accept, None, json!(true)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn confirm_dismissed_by_agent_page_gets_false() {
    agent_answers("confirm", DialogAction::Dismiss, None, json!(false)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_accepted_with_text_round_trips() {
    agent_answers(
        "prompt",
        DialogAction::Accept,
        Some("zoë ✓"),
        json!("zoë ✓"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_accepted_without_text_gives_default_text() {
    agent_answers("prompt", DialogAction::Accept, None, json!("default text")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_dismissed_by_agent_page_gets_null() {
    agent_answers(
        "prompt",
        DialogAction::Dismiss,
        Some("ignored"),
        Value::Null,
    )
    .await;
}

/// Bug class 2: an alert while loading must not make navigate wait for its deadline.
#[tokio::test(flavor = "multi_thread")]
async fn alert_during_load_navigate_returns_promptly_then_load_finishes() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    let started = Instant::now();
    let outcome = h
        .sup
        .navigate(&h.url("a.test", "/alert-on-load"), Duration::from_secs(60))
        .await
        .expect("navigate");
    let took = started.elapsed();
    let d = match outcome {
        NavigateOutcome::DialogPending(d) => d,
        other => panic!("expected DialogPending, got {other:?}"),
    };
    assert!(took < WAIT, "navigate took {took:?} (deadline 60 s)");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].dialog_type, "alert");
    assert_eq!(d[0].message, "alert during load");
    let closed = h
        .answer(DialogAction::Accept, None, None)
        .await
        .expect("answer");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    // The load finishes: the rest of the document and the load event run.
    let until = Instant::now() + WAIT;
    while h.eval("window.loaded === true").await != json!(true) {
        assert!(Instant::now() < until, "the page never finished loading");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        h.eval("!!document.getElementById('after')").await,
        json!(true)
    );
    assert_eq!(
        h.results().await,
        vec![json!({"kind": "alert", "frame": "main", "value": null})]
    );
    assert!(h.sup.snapshot().pending_dialogs.is_empty());
}

/// Records every snapshot and checks that none lies: a dialog never is
/// both pending and closed, a closed one never comes back as pending, and
/// none disappears.
fn watch_invariants(h: &Harness) -> tokio::task::JoinHandle<Vec<String>> {
    let mut rx = h.sup.subscribe();
    tokio::spawn(async move {
        let mut violations = Vec::new();
        let mut seen: BTreeMap<String, &'static str> = BTreeMap::new();
        loop {
            let s = rx.borrow_and_update().clone();
            check_snapshot(&s, &mut seen, &mut violations);
            if rx.changed().await.is_err() {
                return violations;
            }
        }
    })
}

fn check_snapshot(
    s: &Snapshot,
    seen: &mut BTreeMap<String, &'static str>,
    violations: &mut Vec<String>,
) {
    let pending: BTreeSet<_> = s.pending_dialogs.iter().map(|d| d.id.clone()).collect();
    let closed: BTreeSet<_> = s
        .recent_dialogs
        .iter()
        .map(|d| d.dialog.id.clone())
        .collect();
    for id in pending.intersection(&closed) {
        violations.push(format!("{id} both pending and closed"));
    }
    for (id, was) in seen.iter() {
        let now_pending = pending.contains(id);
        let now_closed = closed.contains(id);
        if !now_pending && !now_closed {
            violations.push(format!("{id} ({was}) disappeared"));
        }
        if *was == "closed" && now_pending {
            violations.push(format!("{id} pending again after it closed"));
        }
    }
    for id in pending {
        seen.entry(id).or_insert("pending");
    }
    for id in closed {
        seen.insert(id, "closed");
    }
}

/// Two dialogs at once (main frame, then an OOPIF). Chromium closes the
/// first at once and leaves the second blocking its frame while refusing to
/// answer it: the snapshot shows exactly that, the answer either succeeds or
/// says to navigate, and navigating releases it.
#[tokio::test(flavor = "multi_thread")]
async fn two_dialogs_at_once_main_and_oopif_snapshot_tells_the_truth() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/two-dialogs").await;
    wait_children(&h.sup, &["/demo-oopif"]).await;
    let oopif = h.oopif_ids();
    assert_eq!(oopif.len(), 1, "{:?}", h.sup.snapshot().frame_tree);
    let monitor = watch_invariants(&h);
    assert_eq!(h.eval("fireBoth()").await, json!("scheduled"));
    // Both dialogs are accounted for: one closed by Chromium, one pending.
    let s = h
        .wait_snapshot("two dialogs seen", |s| {
            s.pending_dialogs.len() + s.recent_dialogs.len() >= 2 && !s.pending_dialogs.is_empty()
        })
        .await;
    let s = if s.pending_dialogs.len() == 2 {
        // Chromium's close of the first may still be on its way.
        h.wait_snapshot("first closed", |s| s.recent_dialogs.len() == 1)
            .await
    } else {
        s
    };
    assert_eq!(s.recent_dialogs.len(), 1, "{s:#?}");
    assert_eq!(s.pending_dialogs.len(), 1, "{s:#?}");
    let first = &s.recent_dialogs[0];
    let second = s.pending_dialogs[0].clone();
    let main = s.frame_tree.top.as_ref().expect("top").frame_id.clone();
    let mut frames = [
        first.dialog.frame_id.clone().unwrap_or_default(),
        second.frame_id.clone().unwrap_or_default(),
    ];
    frames.sort();
    let mut expected = [main.clone(), oopif[0].clone()];
    expected.sort();
    assert_eq!(frames, expected, "one dialog per frame: {s:#?}");
    assert_eq!(first.closed_by, ClosedBy::Remote, "{first:?}");

    match h.answer(DialogAction::Accept, None, Some(&second.id)).await {
        Ok(closed) => {
            eprintln!("two dialogs: the second was answerable");
            assert_eq!(closed.closed_by, ClosedBy::Agent);
            h.wait_snapshot("nothing pending", |s| s.pending_dialogs.is_empty())
                .await;
        }
        Err(e) => {
            eprintln!("two dialogs: the second was not answerable: {e}");
            assert_eq!(
                e,
                DialogError::NotAnswerable {
                    id: second.id.clone()
                }
            );
            assert!(e.to_string().contains("navigat"), "{e}");
            let s = h.sup.snapshot();
            assert_eq!(s.pending_dialogs.len(), 1, "{s:#?}");
            assert!(!s.pending_dialogs[0].answerable, "{s:#?}");
            // Navigating releases the page.
            let outcome = h
                .sup
                .navigate(&h.url("a.test", "/blank"), WAIT)
                .await
                .expect("navigate");
            assert!(
                !matches!(outcome, NavigateOutcome::LoadTimeout),
                "{outcome:?}"
            );
            let s = h
                .wait_snapshot("released by navigation", |s| {
                    s.pending_dialogs.is_empty() && s.url.ends_with("/blank")
                })
                .await;
            let c = s
                .recent_dialogs
                .iter()
                .find(|c| c.dialog.id == second.id)
                .expect("second dialog recorded as closed");
            assert_eq!(c.closed_by, ClosedBy::Agent, "{c:?}");
        }
    }
    let s = h.sup.snapshot();
    assert_eq!(s.recent_dialogs.len(), 2, "{s:#?}");
    assert!(s.pending_dialogs.is_empty());
    h.sup.stop().await;
    let violations = monitor.await.expect("monitor");
    assert!(violations.is_empty(), "{violations:?}");
}

/// A same-origin iframe's alert is reported once, with its frame, and answered.
#[tokio::test(flavor = "multi_thread")]
async fn same_origin_iframe_alert_answered() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let s = wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let same = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.url.contains("/demo-same"))
        .expect("same-origin frame")
        .clone();
    assert!(!same.is_oopif);
    h.eval("fireIn('same', 'confirm', 'same says')").await;
    let d = h.pending(1).await;
    assert_eq!(d.len(), 1, "reported once: {d:?}");
    assert_eq!(d[0].message, "same says");
    assert_eq!(d[0].frame_id.as_deref(), Some(same.frame_id.as_str()));
    assert!(d[0].url.contains("/demo-same"), "{:?}", d[0]);
    let closed = h
        .answer(DialogAction::Accept, None, None)
        .await
        .expect("answer");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    assert_eq!(
        h.results_len(1).await,
        vec![json!({"kind": "confirm", "frame": "same", "value": true})]
    );
    assert!(h.sup.snapshot().pending_dialogs.is_empty());
}

/// Bug class 8/9: an OOPIF's prompt is reported once with the OOPIF's frame id and answered.
#[tokio::test(flavor = "multi_thread")]
async fn oopif_alert_answered_with_oopif_frame_id() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let oopif = h.oopif_ids();
    assert_eq!(oopif.len(), 1);
    h.eval("fireIn('oopif', 'alert', 'oopif says')").await;
    let d = h.pending(1).await;
    assert_eq!(d.len(), 1, "reported once: {d:?}");
    assert_eq!(d[0].dialog_type, "alert");
    assert_eq!(d[0].message, "oopif says");
    assert_eq!(d[0].frame_id.as_deref(), Some(oopif[0].as_str()));
    assert!(d[0].url.starts_with("http://b.test:"), "{:?}", d[0]);
    let closed = h
        .answer(DialogAction::Accept, None, Some(&d[0].id))
        .await
        .expect("answer");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    assert_eq!(closed.dialog.frame_id.as_deref(), Some(oopif[0].as_str()));
    assert_eq!(
        h.results_len(1).await,
        vec![json!({"kind": "alert", "frame": "oopif", "value": null})]
    );
    assert!(h.sup.snapshot().pending_dialogs.is_empty());
}

/// must_respond: nothing answers the dialog but the agent (the watchdog is far off).
#[tokio::test(flavor = "multi_thread")]
async fn must_respond_policy_waits_for_the_agent() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    h.eval("fireLater('confirm', 'wait for me')").await;
    let d = h.pending(1).await.remove(0);
    // Give a wrong auto-answer time to show; the dialog must still be there.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = h.sup.snapshot();
    assert_eq!(s.pending_dialogs.len(), 1, "{s:#?}");
    assert!(s.recent_dialogs.is_empty(), "{s:#?}");
    let closed = h
        .answer(DialogAction::Accept, None, None)
        .await
        .expect("answer");
    assert_eq!(closed.dialog.id, d.id);
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    assert_eq!(
        h.results_len(1).await,
        vec![json!({"kind": "confirm", "frame": "main", "value": true})]
    );
}

/// Runs a confirm and a prompt under an auto policy; both close by
/// `auto_policy`, nothing stays pending (bug class 6), and the page gets
/// `expected`.
async fn auto_policy(policy: DialogPolicy, expected: [Value; 2]) {
    let h = Harness::start(policy).await;
    h.goto("a.test", "/demo").await;
    h.eval("fireLater('confirm', 'c?')").await;
    h.results_len(1).await;
    h.eval("fireLater('prompt', 'p?')").await;
    let results = h.results_len(2).await;
    assert_eq!(
        results,
        vec![
            json!({"kind": "confirm", "frame": "main", "value": expected[0]}),
            json!({"kind": "prompt", "frame": "main", "value": expected[1]}),
        ]
    );
    let s = h
        .wait_snapshot("two auto-answered dialogs", |s| {
            s.recent_dialogs.len() == 2 && s.pending_dialogs.is_empty()
        })
        .await;
    for c in &s.recent_dialogs {
        assert_eq!(c.closed_by, ClosedBy::AutoPolicy, "{c:?}");
    }
    // And no later call is told a dialog is open.
    let r = h
        .sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "1 + 1", "returnByValue": true}),
            None,
            None,
            WAIT,
        )
        .await
        .expect("evaluate");
    assert!(matches!(r, CallOutcome::Reply(_)), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_dismiss_policy_page_gets_false_and_null() {
    auto_policy(DialogPolicy::AutoDismiss, [json!(false), Value::Null]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_accept_policy_page_gets_true_and_default_text() {
    auto_policy(
        DialogPolicy::AutoAccept,
        [json!(true), json!("default text")],
    )
    .await;
}

/// The must_respond watchdog dismisses a dialog nobody answers.
#[tokio::test(flavor = "multi_thread")]
async fn watchdog_dismisses_an_unanswered_dialog() {
    let h = Harness::start_with(options(DialogPolicy::MustRespond, Duration::from_secs(1))).await;
    h.goto("a.test", "/demo").await;
    h.eval("fireLater('confirm', 'anyone?')").await;
    let d = h.pending(1).await.remove(0);
    let c = h.closed(&d.id).await;
    assert_eq!(c.closed_by, ClosedBy::Watchdog, "{c:?}");
    assert!(
        c.closed_at - c.dialog.opened_at >= 0.9,
        "closed too early: {c:?}"
    );
    assert_eq!(
        h.results_len(1).await,
        vec![json!({"kind": "confirm", "frame": "main", "value": false})]
    );
    assert!(h.sup.snapshot().pending_dialogs.is_empty());
}

/// Bug classes 3/4: another CDP client answers the dialog; the supervisor
/// records `remote`, keeps nothing pending, and its own late answer is a
/// clean error (it does not die).
#[tokio::test(flavor = "multi_thread")]
async fn dialog_answered_by_another_cdp_client_is_closed_by_remote() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let (other, _events) = Connection::connect(h.chromium.ws_url())
        .await
        .expect("second client");
    let targets = other
        .send(None, "Target.getTargets", json!({}), WAIT)
        .await
        .expect("getTargets");
    let page = targets["targetInfos"]
        .as_array()
        .expect("targetInfos")
        .iter()
        .find(|t| t["type"] == "page" && t["url"].as_str().is_some_and(|u| u.contains("/demo")))
        .unwrap_or_else(|| panic!("no /demo page: {targets}"))["targetId"]
        .clone();
    let attached = other
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
            WAIT,
        )
        .await
        .expect("attach");
    let session = SessionId(
        attached["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned(),
    );
    other
        .send(Some(&session), "Page.enable", json!({}), WAIT)
        .await
        .expect("Page.enable");

    h.eval("fireLater('confirm', 'who answers?')").await;
    let d = h.pending(1).await.remove(0);
    other
        .send(
            Some(&session),
            "Page.handleJavaScriptDialog",
            json!({"accept": true}),
            WAIT,
        )
        .await
        .expect("the other client answers");
    let c = h.closed(&d.id).await;
    assert_eq!(c.closed_by, ClosedBy::Remote, "{c:?}");
    assert_eq!(c.accepted, Some(true), "{c:?}");
    let s = h.sup.snapshot();
    assert!(s.pending_dialogs.is_empty(), "{s:#?}");
    assert_eq!(
        h.results_len(1).await,
        vec![json!({"kind": "confirm", "frame": "main", "value": true})]
    );
    // The supervisor's own (late) answer fails cleanly and it keeps running.
    let late = h.answer(DialogAction::Dismiss, None, Some(&d.id)).await;
    assert!(late.is_err(), "{late:?}");
    assert!(h.sup.is_running());
    assert_eq!(h.eval("1 + 1").await, json!(2));
}

/// `beforeunload` after a real click: navigate returns promptly with it
/// pending; accepting lets the navigation proceed.
#[tokio::test(flavor = "multi_thread")]
async fn beforeunload_after_click_navigate_returns_pending_then_accept_proceeds() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/beforeunload").await;
    for kind in ["mousePressed", "mouseReleased"] {
        let r = h
            .sup
            .cdp(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": 100, "y": 100, "button": "left", "clickCount": 1}),
                None,
                None,
                WAIT,
            )
            .await
            .expect("click");
        assert!(matches!(r, CallOutcome::Reply(_)), "{r:?}");
    }
    assert_eq!(h.eval("window.clicked").await, json!(true));
    let target = h.url("b.test", "/blank");
    let started = Instant::now();
    let outcome = h
        .sup
        .navigate(&target, Duration::from_secs(60))
        .await
        .expect("navigate");
    let took = started.elapsed();
    let d = match outcome {
        NavigateOutcome::DialogPending(d) => d,
        other => panic!("expected a pending beforeunload, got {other:?}"),
    };
    assert!(took < WAIT, "navigate took {took:?}");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].dialog_type, "beforeunload");
    let closed = h
        .answer(DialogAction::Accept, None, None)
        .await
        .expect("answer");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    let s = h.wait_snapshot("navigated away", |s| s.url == target).await;
    assert!(s.pending_dialogs.is_empty(), "{s:#?}");
}

/// Console errors and uncaught exceptions reach the snapshot.
#[tokio::test(flavor = "multi_thread")]
async fn console_error_and_uncaught_exception_in_snapshot() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/console-error").await;
    let s = h
        .wait_snapshot("both console errors", |s| {
            s.console_errors
                .iter()
                .any(|e| e.level == "error" && e.text == "boom")
                && s.console_errors
                    .iter()
                    .any(|e| e.level == "exception" && e.text.contains("uncaught boom"))
        })
        .await;
    assert_eq!(s.console_errors.len(), 2, "{:#?}", s.console_errors);
}

/// A page's lone UTF-16 surrogates (which Chromium sends as `\udc00`
/// escapes) neither hide its console errors nor lose an evaluate's result:
/// they read as U+FFFD.
#[tokio::test(flavor = "multi_thread")]
async fn lone_surrogates_hide_no_console_error_and_lose_no_result() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/blank").await;
    let v = h
        .eval("console.error('low\\udc00'); console.error('hi\\ud800'); 'x\\udc00y'")
        .await;
    assert_eq!(v, json!("x\u{fffd}y"));
    let s = h
        .wait_snapshot("both console errors", |s| s.console_errors.len() == 2)
        .await;
    assert_eq!(s.console_errors[0].text, "low\u{fffd}");
    assert_eq!(s.console_errors[1].text, "hi\u{fffd}");
}

/// Bug class 1: a click that opens confirm() must not hang the snapshot or
/// the next CDP call.
#[tokio::test(flavor = "multi_thread")]
async fn click_opening_confirm_then_snapshot_and_cdp_return_promptly() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.site.add_page(
        "/confirm-button",
        "<!doctype html><title>confirm button</title>\
         <button id=\"b\" style=\"position:absolute;left:0;top:0;width:400px;height:300px\" \
         onclick=\"window.answer = confirm('sure?')\">go</button>",
    );
    h.goto("a.test", "/confirm-button").await;
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for kind in ["mousePressed", "mouseReleased"] {
        outcomes.push(
            h.sup
                .cdp(
                    "Input.dispatchMouseEvent",
                    json!({"type": kind, "x": 100, "y": 100, "button": "left", "clickCount": 1}),
                    None,
                    None,
                    Duration::from_secs(60),
                )
                .await
                .expect("click"),
        );
    }
    assert!(
        matches!(outcomes.last(), Some(CallOutcome::Interrupted { pending_dialogs: d, .. }) if d.len() == 1),
        "{outcomes:?}"
    );
    assert!(
        started.elapsed() < WAIT,
        "click took {:?}",
        started.elapsed()
    );
    // A snapshot is a borrow of the last published one: nothing to wait for.
    let s = h.sup.snapshot();
    assert_eq!(s.pending_dialogs.len(), 1, "{s:#?}");
    assert_eq!(s.pending_dialogs[0].dialog_type, "confirm");
    assert_eq!(s.pending_dialogs[0].message, "sure?");
    let t = Instant::now();
    let r = h
        .sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "1 + 1"}),
            None,
            None,
            Duration::from_secs(60),
        )
        .await
        .expect("evaluate");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(
        matches!(r, CallOutcome::Interrupted { pending_dialogs: ref d, .. } if d.len() == 1),
        "{r:?}"
    );
    h.answer(DialogAction::Accept, None, None)
        .await
        .expect("answer");
    assert_eq!(h.eval("window.answer").await, json!(true));
}
