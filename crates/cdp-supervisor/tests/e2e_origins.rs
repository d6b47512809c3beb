//! The navigation policy on real headless Chromium (`allowed_origins`,
//! `blocked_origins`, `allow_file_urls`): documents are refused in the
//! browser, whoever asks for them, and each refusal shows in the snapshot's
//! `blocked_navigations`. Each test has its own site, Chromium and
//! supervisor. The site's request log proves what reached the network.

mod common;

use cdp_supervisor::supervisor::driver::{CallOutcome, SupervisorOptions};
use cdp_supervisor::supervisor::origins::NavigationPolicy;
use cdp_supervisor::supervisor::snapshot::Snapshot;
use common::*;
use serde_json::{Value, json};

fn policy(allowed: &[&str], blocked: &[&str], file: bool) -> SupervisorOptions {
    SupervisorOptions {
        navigation: NavigationPolicy::new(allowed, blocked, file).unwrap(),
        ..Default::default()
    }
}

/// A page on a.test with an iframe from `frame_host` (an OOPIF when it is
/// another site).
fn add_pages(h: &Harness) {
    h.site.add_page(
        "/top-b",
        "<!doctype html><title>top</title><p>top</p>\
         <iframe id=b src=\"http://b.test:{port}/inner\"></iframe>",
    );
    h.site.add_page(
        "/top-c",
        "<!doctype html><title>top</title><p>top</p>\
         <iframe id=c src=\"http://c.test:{port}/inner\"></iframe>",
    );
    h.site
        .add_page("/inner", "<!doctype html><title>inner</title><p>inner</p>");
}

/// The documents (and subresources) `host` served, in order; the
/// favicon Chromium asks for once a page has loaded, whenever it gets to
/// it, left out (a full run on a loaded machine saw it in time once).
fn requested(h: &Harness, host: &str) -> Vec<String> {
    h.site
        .requests()
        .into_iter()
        .filter(|r| r.starts_with(&format!("{host} ")) && !r.ends_with(" /favicon.ico"))
        .collect()
}

/// Waits until `blocked_navigations` has an entry whose URL contains `url_part`.
async fn wait_blocked(h: &Harness, url_part: &str) -> Snapshot {
    h.wait_snapshot(&format!("a blocked navigation to {url_part}"), |s| {
        s.blocked_navigations
            .iter()
            .any(|b| b.url.contains(url_part))
    })
    .await
}

fn rule_of(s: &Snapshot, url_part: &str) -> String {
    s.blocked_navigations
        .iter()
        .rev()
        .find(|b| b.url.contains(url_part))
        .map(|b| b.rule.clone())
        .unwrap_or_default()
}

async fn cdp(h: &Harness, method: &str, params: Value) -> Value {
    match h
        .sup
        .cdp(method, params, None, None, WAIT)
        .await
        .expect(method)
    {
        CallOutcome::Reply(v) => v,
        other => panic!("{method}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_origins_stop_an_oopif_a_cdp_navigate_and_a_page_script_while_the_page_loads() {
    let h = Harness::start_with(policy(&[], &["http://b.test"], false)).await;
    add_pages(&h);

    // The OOPIF's document: refused before the network, the top still loads.
    h.goto("a.test", "/top-b").await;
    let s = wait_blocked(&h, "b.test").await;
    assert_eq!(rule_of(&s, "b.test"), "blocked_origins: http://b.test");
    assert!(
        requested(&h, "b.test").is_empty(),
        "{:?}",
        h.site.requests()
    );
    assert_eq!(requested(&h, "a.test"), ["a.test /top-b"]);
    assert_eq!(h.eval("document.title").await, "top");
    let b = s.blocked_navigations.last().unwrap();
    assert!(b.at > 1.0e9, "Unix seconds: {}", b.at);

    // browser_cdp Page.navigate: Chromium's own answer says blocked.
    let reply = cdp(
        &h,
        "Page.navigate",
        json!({"url": h.url("b.test", "/inner?via=cdp")}),
    )
    .await;
    assert_eq!(reply["errorText"], "net::ERR_BLOCKED_BY_CLIENT", "{reply}");
    wait_blocked(&h, "via=cdp").await;

    // The page's own script, and window.open into the page itself.
    h.goto("a.test", "/top-c").await;
    h.eval(&format!(
        "location = {:?}; 1",
        h.url("b.test", "/inner?via=script")
    ))
    .await;
    wait_blocked(&h, "via=script").await;
    h.goto("a.test", "/top-c").await;
    h.eval(&format!(
        "window.open({:?}, '_self'); 1",
        h.url("b.test", "/inner?via=open")
    ))
    .await;
    let s = wait_blocked(&h, "via=open").await;
    assert!(
        requested(&h, "b.test").is_empty(),
        "{:?}",
        h.site.requests()
    );
    assert!(requested(&h, "c.test").len() >= 2, "c.test is allowed");
    assert!(s.blocked_navigations.len() <= 10);
    assert!(
        s.blocked_navigations
            .iter()
            .all(|b| b.rule == "blocked_origins: http://b.test")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_navigation_inside_an_oopif_is_checked_on_the_oopifs_own_session() {
    let h = Harness::start_with(policy(&[], &["c.test"], false)).await;
    add_pages(&h);
    h.goto("a.test", "/top-b").await;
    let s = wait_children(&h.sup, &["b.test"]).await;
    let oopif = s
        .frame_tree
        .children
        .iter()
        .find(|c| c.is_oopif)
        .map(|c| c.frame_id.clone())
        .expect("the b.test iframe is an OOPIF");
    h.eval_in(
        Some(&oopif),
        &format!("location = {:?}; 1", h.url("c.test", "/inner?in=oopif")),
    )
    .await;
    let s = wait_blocked(&h, "in=oopif").await;
    assert_eq!(rule_of(&s, "in=oopif"), "blocked_origins: c.test");
    assert!(
        requested(&h, "c.test").is_empty(),
        "{:?}",
        h.site.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_origins_let_only_the_listed_origins_load() {
    let h = Harness::start_with(policy(&["http://a.test"], &[], false)).await;
    add_pages(&h);
    h.goto("a.test", "/top-b").await;
    let s = wait_blocked(&h, "b.test").await;
    assert_eq!(rule_of(&s, "b.test"), "allowed_origins");
    let err = h
        .sup
        .navigate(&h.url("c.test", "/inner"), WAIT)
        .await
        .expect_err("c.test is not listed");
    assert!(err.to_string().contains("BLOCKED_BY_CLIENT"), "{err}");
    let s = wait_blocked(&h, "c.test").await;
    assert_eq!(rule_of(&s, "c.test"), "allowed_origins");
    assert!(requested(&h, "b.test").is_empty() && requested(&h, "c.test").is_empty());
    // about:blank stays loadable under the strictest list.
    goto(&h.sup, "about:blank").await;
}

/// A readable file to point `file:` at.
fn a_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.html");
    std::fs::write(&path, "<!doctype html><title>secret file</title><p>secret").unwrap();
    (dir, format!("file://{}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_urls_are_refused_by_default() {
    let h = Harness::start_with(SupervisorOptions::default()).await;
    let (_dir, url) = a_file();
    cdp(&h, "Page.navigate", json!({ "url": url })).await;
    let s = wait_blocked(&h, "secret.html").await;
    assert_eq!(rule_of(&s, "secret.html"), "allow_file_urls: false");
    // Refused in the browser (the default pauses file: documents only).
    h.wait_snapshot("no file document", |s| !s.url.starts_with("file:"))
        .await;
    let title = h.eval("document.title").await;
    assert_ne!(title, "secret file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_urls_are_refused_with_a_policy_and_load_with_allow_file_urls() {
    let h = Harness::start_with(policy(&[], &["http://b.test"], false)).await;
    let (_dir, url) = a_file();
    cdp(&h, "Page.navigate", json!({ "url": url })).await;
    let s = wait_blocked(&h, "secret.html").await;
    assert_eq!(rule_of(&s, "secret.html"), "allow_file_urls: false");
    h.wait_snapshot("no file document left", |s| !s.url.starts_with("file:"))
        .await;
    drop(h);

    let h = Harness::start_with(policy(&[], &["http://b.test"], true)).await;
    goto(&h.sup, &url).await;
    assert_eq!(h.eval("document.title").await, "secret file");
    assert!(h.sup.snapshot().blocked_navigations.is_empty());
}
