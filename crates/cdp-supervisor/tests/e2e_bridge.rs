//! End to end: the dialog bridge (spec, "Browserbase quirk") on real
//! Chromium. With `dialog_bridge`, `alert`/`confirm`/`prompt` become a
//! synchronous XHR that `Fetch` pauses; the answer fulfills it. The page must
//! see exactly what a native dialog would have returned, in every frame.

mod common;

use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::DialogAction;
use common::*;
use std::time::Duration;

fn bridge(
    policy: DialogPolicy,
    timeout: Duration,
) -> cdp_supervisor::supervisor::driver::SupervisorOptions {
    let mut o = options(policy, timeout);
    o.dialog_bridge = true;
    o
}

#[tokio::test(flavor = "multi_thread")]
async fn bridge_dialogs_in_main_same_origin_and_oopif_are_answered_by_the_agent() {
    let h = Harness::start_with(bridge(DialogPolicy::MustRespond, Duration::from_secs(300))).await;
    h.goto("a.test", "/demo").await;
    let snap = wait_children(&h.sup, &["/demo-same", "/demo-oopif"]).await;
    // The bridge is in every frame, and no global tells the page so.
    let no_flag = "Object.keys(window).some(k => /cdp|supervisor|bridge/i.test(k))";
    assert_eq!(h.eval(no_flag).await, false);
    let oopif = snap
        .frame_tree
        .children
        .iter()
        .find(|c| c.is_oopif)
        .expect("oopif");
    assert_eq!(h.eval_in(Some(&oopif.frame_id), no_flag).await, false);

    h.eval("fireLater('confirm', 'bridge confirm')").await;
    let d = h.pending(1).await.remove(0);
    assert_eq!(
        (d.dialog_type.as_str(), d.message.as_str()),
        ("confirm", "bridge confirm")
    );
    let closed = h
        .answer(DialogAction::Accept, None, Some(&d.id))
        .await
        .expect("answered");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    assert_eq!(closed.accepted, Some(true));

    h.eval("fireIn('oopif', 'prompt', 'bridge name?', 'Bob')")
        .await;
    let d = h.pending(1).await.remove(0);
    assert_eq!(d.default_prompt, "Bob");
    assert!(
        h.oopif_ids()
            .contains(d.frame_id.as_ref().expect("frame id")),
        "{d:?}"
    );
    h.answer(DialogAction::Accept, Some("Ada"), None)
        .await
        .expect("answered");

    h.eval("fireIn('same', 'prompt', 'bridge default?', 'Zed')")
        .await;
    h.pending(1).await;
    h.answer(DialogAction::Accept, None, None)
        .await
        .expect("answered");

    h.eval("fireIn('same', 'confirm', 'bridge no?')").await;
    h.pending(1).await;
    h.answer(DialogAction::Dismiss, None, None)
        .await
        .expect("answered");

    let results = h.results_len(4).await;
    // Iframes post their results to the top asynchronously (across
    // processes for the OOPIF): compare as a set, not in arrival order.
    let mut got: Vec<(String, String, String)> = results
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or("").to_owned(),
                r["frame"].as_str().unwrap_or("").to_owned(),
                r["value"].to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = vec![
        ("confirm".into(), "main".into(), "true".into()),
        ("prompt".into(), "oopif".into(), "\"Ada\"".into()),
        ("prompt".into(), "same".into(), "\"Zed\"".into()),
        ("confirm".into(), "same".into(), "false".into()),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(h.sup.snapshot().pending_dialogs.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn bridge_dialogs_follow_the_auto_policy_and_the_watchdog() {
    let h = Harness::start_with(bridge(DialogPolicy::AutoAccept, Duration::from_secs(300))).await;
    h.goto("a.test", "/demo").await;
    wait_children(&h.sup, &["/demo-oopif"]).await;
    h.eval("fireIn('oopif', 'prompt', 'auto?', 'Lisbon')").await;
    let r = h.results_len(1).await;
    assert_eq!(r[0]["value"], "Lisbon", "{r:?}");
    let s = h
        .wait_snapshot("closed by policy", |s| s.recent_dialogs.len() == 1)
        .await;
    assert_eq!(s.recent_dialogs[0].closed_by, ClosedBy::AutoPolicy);

    let w = Harness::start_with(bridge(
        DialogPolicy::MustRespond,
        Duration::from_millis(800),
    ))
    .await;
    w.goto("a.test", "/demo").await;
    w.eval("fireLater('confirm', 'nobody answers')").await;
    let d = w.pending(1).await.remove(0);
    let closed = w.closed(&d.id).await;
    assert_eq!(closed.closed_by, ClosedBy::Watchdog);
    let r = w.results_len(1).await;
    assert_eq!(r[0]["value"], false, "{r:?}");
}
