//! End to end: attaching to pages in unusual states.

mod common;

use cdp_supervisor::cdp::connection::Connection;
use cdp_supervisor::supervisor::driver::Supervisor;
use cdp_supervisor::supervisor::policy::DialogPolicy;
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// Bug class 7: attaching to a tab that already shows an alert must not hang.
#[tokio::test(flavor = "multi_thread")]
async fn regression_7_attach_to_a_tab_already_showing_an_alert_completes_and_says_page_blocked() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    // Another client opens an alert on the page before a second supervisor attaches.
    h.sup
        .navigate(&h.url("a.test", "/demo"), WAIT)
        .await
        .expect("navigate");
    h.eval("fireLater('alert', 'already open')").await;
    h.pending(1).await;
    let started = Instant::now();
    let second = Supervisor::start(
        h.chromium.ws_url(),
        options(DialogPolicy::MustRespond, Duration::from_secs(300)),
    )
    .await
    .expect("attach completes while the page is blocked");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(16), "attach took {took:?}");
    let s = wait_snapshot(&second, "page_blocked", |s| s.page_blocked).await;
    assert!(s.frame_tree.top.is_some(), "frame tree known: {s:?}");
    // Navigating releases it.
    let out = second
        .navigate(&h.url("a.test", "/blank"), WAIT)
        .await
        .expect("navigate");
    assert!(
        matches!(
            out,
            cdp_supervisor::supervisor::driver::NavigateOutcome::Loaded
        ),
        "{out:?}"
    );
    wait_snapshot(&second, "page released", |s| !s.page_blocked).await;
    second.stop().await;
}

/// When the supervised tab closes, the supervisor moves to another page (or
/// a new one) so the agent's next navigate works instead of failing forever.
#[tokio::test(flavor = "multi_thread")]
async fn closing_the_supervised_tab_moves_to_another_page() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.goto("a.test", "/demo").await;
    let old = h
        .sup
        .snapshot()
        .frame_tree
        .top
        .clone()
        .expect("top")
        .frame_id
        .clone();
    let (conn, _events) = Connection::connect(h.chromium.ws_url())
        .await
        .expect("connect");
    conn.send(None, "Target.closeTarget", json!({"targetId": old}), WAIT)
        .await
        .expect("close the tab");
    let s = wait_snapshot(&h.sup, "another page", |s| {
        s.frame_tree.top.as_ref().is_some_and(|t| t.frame_id != old)
    })
    .await;
    assert!(s.pending_dialogs.is_empty());
    h.goto("a.test", "/blank").await;
    assert!(h.sup.snapshot().url.ends_with("/blank"));
}

/// A navigation away from a page whose load a dialog held up returns when
/// the NEW page has loaded, never on the old page's late load event.
#[tokio::test(flavor = "multi_thread")]
async fn navigate_away_from_a_page_held_by_a_dialog_waits_for_the_new_load() {
    let h = Harness::start(DialogPolicy::MustRespond).await;
    h.site.add_page(
        "/held",
        r#"<!doctype html><title>held</title><iframe src="http://b.test:{port}/held-child"></iframe>"#,
    );
    h.site.add_page(
        "/held-child",
        r#"<!doctype html><title>child</title><script>confirm("hold the load");</script>"#,
    );
    for round in 0..3 {
        let url = h.url("a.test", "/held");
        let out = h.sup.navigate(&url, WAIT).await.expect("navigate");
        assert!(
            matches!(out, cdp_supervisor::supervisor::driver::NavigateOutcome::DialogPending(ref d) if !d.is_empty()),
            "round {round}: {out:?}"
        );
        let target = h.url("a.test", &format!("/blank?round={round}"));
        let out = h.sup.navigate(&target, WAIT).await.expect("navigate away");
        assert!(
            matches!(
                out,
                cdp_supervisor::supervisor::driver::NavigateOutcome::Loaded
            ),
            "round {round}: {out:?}"
        );
        let s = h.sup.snapshot();
        assert_eq!(
            s.url, target,
            "round {round}: returned before the new page loaded"
        );
        assert!(s.pending_dialogs.is_empty(), "round {round}: {s:?}");
    }
}
