//! End to end: the registry — one supervisor per task, idempotent and race
//! free, rebinding to a new endpoint, and a local Chromium that dies with
//! its supervisor.

mod common;

use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::registry::{Endpoint, Registry};
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::{DialogAction, DialogRequest};
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};

fn opts() -> cdp_supervisor::supervisor::driver::SupervisorOptions {
    options(DialogPolicy::MustRespond, Duration::from_secs(300))
}

#[tokio::test(flavor = "multi_thread")]
async fn get_or_start_twice_returns_the_same_supervisor() {
    let (_site, chromium) = site_and_chromium().await;
    let registry = Registry::new();
    let url = Endpoint::Url(chromium.ws_url().to_owned());
    let a = registry
        .get_or_start("task", url.clone(), opts())
        .await
        .expect("start");
    let b = registry
        .get_or_start("task", url, opts())
        .await
        .expect("again");
    assert_eq!(a.id(), b.id());
    assert!(a.is_running());
    assert_eq!(registry.task_ids(), vec!["task".to_owned()]);
    assert_eq!(registry.get("task").map(|s| s.id()), Some(a.id()));
    assert!(registry.stop("task").await);
    assert!(!a.is_running());
    assert!(registry.task_ids().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_get_or_start_for_one_task_starts_one_supervisor() {
    let (_site, chromium) = site_and_chromium().await;
    let registry = Registry::new();
    let url = Endpoint::Url(chromium.ws_url().to_owned());
    let call = || registry.get_or_start("task", url.clone(), opts());
    let (a, b, c, d, e) = tokio::join!(call(), call(), call(), call(), call());
    let ids: Vec<u64> = [a, b, c, d, e]
        .into_iter()
        .map(|r| r.expect("start").id())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(registry.task_ids(), vec!["task".to_owned()]);
    registry.stop_all().await;
    assert!(registry.task_ids().is_empty());
}

/// A new endpoint for the task stops the old supervisor first; the new one
/// carries none of the old state.
#[tokio::test(flavor = "multi_thread")]
async fn new_endpoint_stops_the_old_supervisor_and_starts_fresh() {
    let (site, first) = site_and_chromium().await;
    let second = cdp_supervisor::browser::LocalChromium::launch(&launch_options())
        .await
        .expect("second Chromium");
    let registry = Registry::new();
    let old = registry
        .get_or_start("task", Endpoint::Url(first.ws_url().to_owned()), opts())
        .await
        .expect("start on the first");
    goto(&old, &site.url("a.test", "/demo")).await;
    old.cdp(
        "Runtime.evaluate",
        json!({"expression": "fireLater('alert', 'old state')"}),
        None,
        None,
        WAIT,
    )
    .await
    .expect("fire");
    wait_snapshot(&old, "old dialog", |s| s.pending_dialogs.len() == 1).await;
    let closed = old
        .answer_dialog(DialogRequest {
            action: DialogAction::Accept,
            prompt_text: None,
            dialog_id: None,
            files: None,
            login: None,
        })
        .await
        .expect("answer");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    wait_snapshot(&old, "old dialog closed", |s| s.recent_dialogs.len() == 1).await;

    let new = registry
        .get_or_start("task", Endpoint::Url(second.ws_url().to_owned()), opts())
        .await
        .expect("rebind to the second");
    assert!(!old.is_running(), "the old supervisor still runs");
    assert_ne!(new.id(), old.id());
    assert!(new.is_running());
    assert_eq!(registry.get("task").map(|s| s.id()), Some(new.id()));
    let s = new.snapshot();
    assert!(s.recent_dialogs.is_empty(), "old state leaked: {s:#?}");
    assert!(s.pending_dialogs.is_empty(), "{s:#?}");
    assert!(
        !s.url.contains("/demo"),
        "watching the old browser's page? {s:#?}"
    );
    registry.stop("task").await;
    assert!(!new.is_running());
    assert!(registry.task_ids().is_empty());
}

/// Stopping a task whose supervisor launched its own Chromium leaves no
/// Chromium process behind and no entry.
#[tokio::test(flavor = "multi_thread")]
async fn stop_with_local_endpoint_leaves_no_chromium_process() {
    let registry = Registry::new();
    let sup = registry
        .get_or_start("local-task", Endpoint::Local(launch_options()), opts())
        .await
        .expect("start local");
    assert!(sup.is_running());
    let port: u16 = sup
        .endpoint()
        .trim_start_matches("ws://")
        .split(['/', ':'])
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", sup.endpoint()));
    let dir = user_data_dir_of_port(port)
        .unwrap_or_else(|| panic!("no Chromium with DevTools port {port} in /proc"));
    let procs = processes_with(&dir);
    assert!(!procs.is_empty(), "no process with {dir}");
    // It works: a page, a snapshot.
    let r = sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": "1 + 1", "returnByValue": true}),
            None,
            None,
            WAIT,
        )
        .await
        .expect("evaluate");
    assert!(matches!(
        r,
        cdp_supervisor::supervisor::driver::CallOutcome::Reply(_)
    ));

    assert!(registry.stop("local-task").await);
    assert!(!sup.is_running());
    assert!(registry.task_ids().is_empty());
    // Every process of that Chromium is gone (reaped or at least dead).
    let until = Instant::now() + WAIT;
    loop {
        let left: Vec<u32> = procs.iter().copied().filter(|p| alive(*p)).collect();
        let by_dir = processes_with(&dir);
        // The user-data-dir is removed off the runtime, just after the processes die.
        if left.is_empty() && by_dir.is_empty() && !std::path::Path::new(&dir).exists() {
            break;
        }
        assert!(
            Instant::now() < until,
            "Chromium processes left after stop: {left:?} / {by_dir:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !std::path::Path::new(&dir).exists(),
        "user-data-dir {dir} left behind"
    );
}
