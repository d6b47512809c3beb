//! End to end: the frame tree (OOPIFs, same-process frames, caps), routing
//! `Runtime.evaluate` into an OOPIF, which tab is watched, and attaching to a
//! page that is already loaded.

mod common;

use cdp_supervisor::cdp::connection::Connection;
use cdp_supervisor::supervisor::driver::{
    CallOutcome, CdpCallError, Supervisor, SupervisorOptions,
};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::Snapshot;
use cdp_supervisor::supervisor::state::{DialogAction, DialogRequest, RouteError};
use common::*;
use serde_json::json;
use std::time::Duration;

/// The OOPIF depth of a child: OOPIF boundaries between the top and it.
fn oopif_depth(s: &Snapshot, frame_id: &str) -> usize {
    let mut depth = 0;
    let mut id = frame_id.to_owned();
    while let Some(c) = s.frame_tree.children.iter().find(|c| c.frame_id == id) {
        if c.is_oopif {
            depth += 1;
        }
        id = c.parent_frame_id.clone();
    }
    depth
}

/// Bug class 9: `/demo` lists its same-origin frame (not routable) and its
/// cross-site frame as an OOPIF with a session of its own.
#[tokio::test(flavor = "multi_thread")]
async fn demo_frame_tree_lists_same_origin_frame_and_oopif() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let s = wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let top = s.frame_tree.top.as_ref().expect("top");
    assert_eq!(top.url, h.url("a.test", "/demo"));
    assert!(!s.frame_tree.truncated);
    assert_eq!(s.frame_tree.children.len(), 2, "{:#?}", s.frame_tree);
    let same = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.url.ends_with("/demo-same"))
        .unwrap();
    assert!(!same.is_oopif);
    assert!(same.session_id.is_none());
    assert_eq!(same.parent_frame_id, top.frame_id);
    assert_eq!(same.origin, top.origin);
    let oopif = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.url.ends_with("/demo-oopif"))
        .unwrap();
    assert!(oopif.is_oopif);
    assert!(oopif.session_id.is_some());
    assert_eq!(oopif.parent_frame_id, top.frame_id);
    assert_eq!(oopif.url, h.url("b.test", "/demo-oopif"));
    assert_eq!(oopif.origin, format!("http://b.test:{}", h.site.port()));
}

/// a → b → c → a: the OOPIF at depth 3 is cut, with `truncated: true`.
#[tokio::test(flavor = "multi_thread")]
async fn nested_oopifs_cut_at_depth_two_and_truncated() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/nested?depth=3&hosts=a,b,c").await;
    // Depth 1 (b) and 2 (c) are listed; depth 3 (a again) exists in
    // Chromium but is cut.
    let s = h
        .wait_snapshot("nested OOPIFs, cut", |s| {
            s.frame_tree.truncated
                && s.frame_tree
                    .children
                    .iter()
                    .any(|c| c.url.contains("b.test") && c.url.contains("depth=2"))
                && s.frame_tree
                    .children
                    .iter()
                    .any(|c| c.url.contains("c.test") && c.url.contains("depth=1"))
        })
        .await;
    assert_eq!(s.frame_tree.children.len(), 2, "{:#?}", s.frame_tree);
    for c in &s.frame_tree.children {
        assert!(c.is_oopif, "{c:?}");
        let d = oopif_depth(&s, &c.frame_id);
        assert!((1..=2).contains(&d), "depth {d}: {c:?}");
        assert!(!c.url.contains("depth=0"), "depth-3 frame listed: {c:?}");
    }
    // Chromium really has the third OOPIF.
    let (conn, _events) = Connection::connect(h.chromium.ws_url())
        .await
        .expect("connect");
    let until = tokio::time::Instant::now() + WAIT;
    loop {
        let t = conn
            .send(None, "Target.getTargets", json!({}), WAIT)
            .await
            .expect("targets");
        let iframes = t["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "iframe")
            .count();
        if iframes == 3 {
            break;
        }
        assert!(tokio::time::Instant::now() < until, "{t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Bug class 11: 40 iframes are cut at 30 children with `truncated: true`.
#[tokio::test(flavor = "multi_thread")]
async fn forty_frames_cut_at_thirty_children_and_truncated() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/many?n=40").await;
    let s = h
        .wait_snapshot("30 children, truncated", |s| {
            s.frame_tree.truncated && s.frame_tree.children.len() == 30
        })
        .await;
    assert!(s.frame_tree.top.is_some());
    assert_eq!(
        h.eval("document.querySelectorAll('iframe').length").await,
        json!(40)
    );
    // The first 30 in document order.
    for (i, c) in s.frame_tree.children.iter().enumerate() {
        assert!(c.url.ends_with(&format!("/blank?i={i}")), "{i}: {c:?}");
        assert!(!c.is_oopif);
    }
    let s = h.sup.snapshot();
    assert_eq!(s.frame_tree.children.len(), 30);
    assert!(s.frame_tree.truncated);
}

/// Bug class 10: evaluating with the OOPIF's frame_id runs in the OOPIF,
/// not in the top document.
#[tokio::test(flavor = "multi_thread")]
async fn evaluate_with_oopif_frame_id_runs_in_the_oopif() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let oopif = h.oopif_ids();
    assert_eq!(oopif.len(), 1);
    assert_eq!(
        h.eval_in(Some(&oopif[0]), "document.title").await,
        json!("OOPIF b.test")
    );
    assert_eq!(
        h.eval_in(Some(&oopif[0]), "window.FRAME").await,
        json!("oopif")
    );
    assert_eq!(
        h.eval_in(Some(&oopif[0]), "location.href").await,
        json!(h.url("b.test", "/demo-oopif"))
    );
    assert_eq!(h.eval("document.title").await, json!("cdp-supervisor demo"));
}

/// A same-process frame has no session: the error says how to reach it.
#[tokio::test(flavor = "multi_thread")]
async fn evaluate_with_same_process_frame_id_errors_naming_content_window() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let s = wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let same = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.url.ends_with("/demo-same"))
        .unwrap();
    let err = h
        .sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "document.title", "returnByValue": true}),
            Some(&same.frame_id),
            None,
            WAIT,
        )
        .await
        .expect_err("a same-process frame is not routable");
    assert!(
        matches!(&err, CdpCallError::Route(RouteError::SameProcess { frame_id, .. }) if *frame_id == same.frame_id),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("contentWindow") && text.contains("contentDocument"),
        "{text}"
    );
    // And the fallback it names works.
    assert_eq!(
        h.eval("document.getElementById('same').contentDocument.title")
            .await,
        json!("same-origin frame")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn evaluate_with_unknown_frame_id_errors_clearly() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let err = h
        .sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "1"}),
            Some("NO-SUCH-FRAME"),
            None,
            WAIT,
        )
        .await
        .expect_err("unknown frame");
    assert!(
        matches!(&err, CdpCallError::Route(RouteError::UnknownFrame { frame_id, .. }) if frame_id == "NO-SUCH-FRAME"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("unknown frame_id") && text.contains("NO-SUCH-FRAME"),
        "{text}"
    );
    // It lists the frames that are known.
    for id in h.oopif_ids() {
        assert!(text.contains(&id), "{text}");
    }
}

/// Bug class 14: with two tabs, `target_id` picks the tab that is watched.
#[tokio::test(flavor = "multi_thread")]
async fn target_id_supervises_the_given_tab_not_the_first() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let (conn, _events) = Connection::connect(h.chromium.ws_url())
        .await
        .expect("connect");
    let second_url = h.url("b.test", "/demo");
    let created = conn
        .send(
            None,
            "Target.createTarget",
            json!({"url": second_url}),
            WAIT,
        )
        .await
        .expect("createTarget");
    let second_id = created["targetId"].as_str().expect("targetId").to_owned();
    let second = Supervisor::start(
        h.chromium.ws_url(),
        SupervisorOptions {
            target_id: Some(second_id.clone()),
            ..options(DialogPolicy::MustRespond, Duration::from_secs(300))
        },
    )
    .await
    .expect("attach to the second tab");
    let s = wait_snapshot(&second, "second tab loaded", |s| {
        s.url == second_url && s.frame_tree.children.len() == 2
    })
    .await;
    assert_eq!(s.frame_tree.top.as_ref().unwrap().frame_id, second_id);

    // A dialog in the first tab is not the second supervisor's.
    h.eval("fireLater('alert', 'first tab')").await;
    h.pending(1).await;
    h.answer(DialogAction::Accept, None, None)
        .await
        .expect("answer");
    // A dialog in the second tab is.
    let r = second
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "fireLater('confirm', 'second tab')", "returnByValue": true}),
            None,
            None,
            WAIT,
        )
        .await
        .expect("evaluate");
    assert!(
        matches!(r, CallOutcome::Reply(ref v) if v["result"]["value"] == "scheduled"),
        "{r:?}"
    );
    let s = wait_snapshot(&second, "dialog in the second tab", |s| {
        !s.pending_dialogs.is_empty()
    })
    .await;
    assert_eq!(s.pending_dialogs.len(), 1, "{s:#?}");
    assert_eq!(s.pending_dialogs[0].message, "second tab");
    assert!(
        s.recent_dialogs.is_empty(),
        "saw the first tab's dialog: {s:#?}"
    );
    second
        .answer_dialog(DialogRequest {
            action: DialogAction::Accept,
            prompt_text: None,
            dialog_id: None,
            files: None,
            login: None,
        })
        .await
        .expect("answer");
    // The first supervisor never saw the second tab's dialog.
    let first = h.sup.snapshot();
    assert_eq!(first.recent_dialogs.len(), 1, "{first:#?}");
    assert_eq!(first.recent_dialogs[0].dialog.message, "first tab");
    second.stop().await;

    // An OOPIF's target is not a tab: supervising it would hide its
    // dialogs (Chromium reports them on its page's session). Refused, with
    // the tabs there are; an unknown id too.
    let oopif = h.oopif_ids().pop().expect("the first tab's OOPIF");
    for (id, says) in [
        (
            oopif.as_str(),
            format!("target {oopif:?} is \"iframe\", not a tab (page)"),
        ),
        (
            "NO-SUCH-TARGET",
            "no target \"NO-SUCH-TARGET\" in the browser".to_owned(),
        ),
    ] {
        let err = Supervisor::start(
            h.chromium.ws_url(),
            SupervisorOptions {
                target_id: Some(id.to_owned()),
                ..options(DialogPolicy::MustRespond, Duration::from_secs(300))
            },
        )
        .await
        .expect_err("not a tab to supervise");
        let text = err.to_string();
        assert!(text.starts_with(&says), "{text}");
        assert!(text.contains(&second_id), "lists the tabs: {text}");
        assert!(!text.contains('\n'), "one line: {text}");
    }
}

/// Bug class 15: attaching to a page that is already loaded gives the full
/// frame tree at once — the page's main frame as top, both iframes — with
/// no navigation.
#[tokio::test(flavor = "multi_thread")]
async fn attach_to_loaded_page_has_complete_frame_tree_at_once() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let before = wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    let main = before.frame_tree.top.clone().expect("top");
    h.sup.stop().await;

    let late = Supervisor::start(
        h.chromium.ws_url(),
        options(DialogPolicy::MustRespond, Duration::from_secs(300)),
    )
    .await
    .expect("attach");
    let s = late.snapshot();
    let top = s.frame_tree.top.as_ref().expect("top known at once");
    assert_eq!(top.frame_id, main.frame_id, "{:#?}", s.frame_tree);
    assert_eq!(top.url, h.url("a.test", "/demo"));
    assert_eq!(s.url, h.url("a.test", "/demo"));
    assert_eq!(s.title, "cdp-supervisor demo");
    assert_eq!(
        s.frame_tree.children.len(),
        2,
        "page_blocked: {}, {:#?}",
        s.page_blocked,
        s.frame_tree
    );
    let same = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.url.ends_with("/demo-same"));
    assert!(
        same.is_some_and(|c| !c.is_oopif && c.parent_frame_id == main.frame_id),
        "{:#?}",
        s.frame_tree
    );
    let oopif = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.url.ends_with("/demo-oopif"));
    assert!(
        oopif.is_some_and(|c| c.is_oopif
            && c.session_id.is_some()
            && c.parent_frame_id == main.frame_id),
        "{:#?}",
        s.frame_tree
    );
    // And it is routable at once.
    let id = oopif.unwrap().frame_id.clone();
    let r = late
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "document.title", "returnByValue": true}),
            Some(&id),
            None,
            WAIT,
        )
        .await
        .expect("evaluate in the OOPIF");
    assert!(
        matches!(r, CallOutcome::Reply(ref v) if v["result"]["value"] == "OOPIF b.test"),
        "{r:?}"
    );
    late.stop().await;
}
