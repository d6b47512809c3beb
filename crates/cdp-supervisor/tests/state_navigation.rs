//! The navigation policy in the pure core: what each session is sent (one
//! merged `Fetch.enable`, or none), what a paused request gets (exactly one
//! continue or fail), what a refused commit gets, and `blocked_navigations`.

mod state_support;

use cdp_supervisor::supervisor::origins::NavigationPolicy;
use cdp_supervisor::supervisor::state::{
    BLOCKED_NAVIGATIONS_MAX, Command, Notice, Options, Output, Purpose,
};
use serde_json::{Value, json};
use state_support::*;

fn opts(blocked: &[&str], bridge: bool) -> Options {
    Options {
        navigation: NavigationPolicy::new(&[] as &[&str], blocked, false).unwrap(),
        dialog_bridge: bridge,
        ..Options::default()
    }
}

fn fetch_enables(cmds: &[Command]) -> Vec<&Command> {
    cmds.iter().filter(|c| c.method == "Fetch.enable").collect()
}

fn paused(request_id: &str, resource_type: &str, url: &str) -> String {
    json!({"requestId": request_id, "frameId": "T1", "resourceType": resource_type,
           "request": {"url": url, "method": "GET", "headers": {}}})
    .to_string()
}

/// The commands answering paused requests, as (method, requestId).
fn releases(cmds: &[Command]) -> Vec<(String, String)> {
    cmds.iter()
        .filter(|c| c.method.starts_with("Fetch.") && c.method != "Fetch.enable")
        .map(|c| {
            (
                c.method.clone(),
                c.params["requestId"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn no_policy_and_no_bridge_still_pause_documents_for_http_auth() {
    // Chromium raises an HTTP challenge only for a request paused at its
    // request stage: a tab's session pauses documents, whatever the policy.
    let mut h = H::with(Options::default());
    let page = h.attach_page(&top_tree(&[]));
    let enables = fetch_enables(&page);
    assert_eq!(enables.len(), 1, "one Fetch.enable on S1: {page:?}");
    assert_eq!(
        enables[0].params,
        json!({"patterns": [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}], "handleAuthRequests": true})
    );
    // None is ever raised inside an OOPIF: with nothing else to pause, its
    // session gets no Fetch.enable and is resumed at once.
    let oopif = h.attach_oopif("S1", "F1", "S2", "https://b.test/");
    assert!(fetch_enables(&oopif).is_empty(), "{oopif:?}");
    assert!(
        oopif
            .iter()
            .any(|c| c.method == "Runtime.runIfWaitingForDebugger" && c.target == on("S2")),
        "{oopif:?}"
    );
}

#[test]
fn each_session_gets_one_fetch_enable_merging_the_bridge_and_the_document_pattern() {
    let mut h = H::with(opts(&["http://b.test"], true));
    let bridge_path = h.st.options().bridge_key.path.clone();
    let page = h.attach_page(&top_tree(&[]));
    let oopif = h.attach_oopif("S1", "F1", "S2", "https://c.test/");
    for (cmds, session) in [(&page, "S1"), (&oopif, "S2")] {
        let enables = fetch_enables(cmds);
        assert_eq!(enables.len(), 1, "one Fetch.enable on {session}: {cmds:?}");
        assert_eq!(enables[0].target, on(session));
        assert_eq!(
            enables[0].params["handleAuthRequests"],
            json!(session == "S1"),
            "auth challenges are the page session's only"
        );
        let patterns = enables[0].params["patterns"].as_array().unwrap();
        assert_eq!(patterns.len(), 2, "{patterns:?}");
        assert_eq!(
            patterns[0]["urlPattern"].as_str().unwrap(),
            format!("*{bridge_path}*"),
            "the bridge's own (keyed) pattern"
        );
        assert_eq!(
            patterns[1],
            json!({"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"})
        );
    }
    // The OOPIF waits for the debugger: it is resumed once its Fetch.enable
    // has replied (Chromium sets interception up asynchronously), so its
    // first document is already checked.
    assert!(
        !oopif
            .iter()
            .any(|c| c.method == "Runtime.runIfWaitingForDebugger"),
        "resumed before Fetch.enable replied: {oopif:?}"
    );
    h.reply_ok("S2", Purpose::ResumeWhenIntercepted, json!({}));
    let after = h.sends();
    assert!(
        after
            .iter()
            .any(|c| c.method == "Runtime.runIfWaitingForDebugger" && c.target == on("S2")),
        "{after:?}"
    );

    // Policy only: one pattern.
    let mut h = H::with(opts(&["http://b.test"], false));
    let cmds = h.attach_page(&top_tree(&[]));
    let enables = fetch_enables(&cmds);
    assert_eq!(enables.len(), 1);
    assert_eq!(enables[0].params["patterns"].as_array().unwrap().len(), 1);
}

#[test]
fn every_paused_request_gets_exactly_one_continue_or_fail() {
    let mut h = H::with(opts(&["http://b.test"], false));
    h.attach_page(&top_tree(&[]));
    h.drain();
    h.ev(
        Some("S1"),
        "Fetch.requestPaused",
        &paused("r1", "Document", "http://b.test:8080/x"),
    );
    h.ev(
        Some("S1"),
        "Fetch.requestPaused",
        &paused("r2", "Document", "http://a.test/ok"),
    );
    // Not a document: never refused here (the pattern is Document-only).
    h.ev(
        Some("S1"),
        "Fetch.requestPaused",
        &paused("r3", "Script", "http://b.test/x.js"),
    );
    let outs = h.drain();
    let cmds: Vec<Command> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Send(c) => Some((**c).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        releases(&cmds),
        [
            ("Fetch.failRequest".to_owned(), "r1".to_owned()),
            ("Fetch.continueRequest".to_owned(), "r2".to_owned()),
            ("Fetch.continueRequest".to_owned(), "r3".to_owned()),
        ]
    );
    let fail = cmds
        .iter()
        .find(|c| c.method == "Fetch.failRequest")
        .unwrap();
    assert_eq!(fail.params["errorReason"], "BlockedByClient");
    assert_eq!(fail.target, on("S1"));
    assert!(cmds.iter().all(|c| c.purpose == Purpose::Setup));
    assert!(outs.iter().any(|o| matches!(
        o,
        Output::Notice(Notice::NavigationBlocked { navigation }) if navigation.url == "http://b.test:8080/x"
    )));
    let snap = h.st.snapshot();
    assert_eq!(snap.blocked_navigations.len(), 1);
    let b = &snap.blocked_navigations[0];
    assert_eq!(b.rule, "blocked_origins: http://b.test");
    assert_eq!(b.at, h.now.unix_s);
    let v: Value = serde_json::to_value(&snap).unwrap();
    assert_eq!(
        v["blocked_navigations"][0],
        json!({"url": "http://b.test:8080/x", "rule": "blocked_origins: http://b.test", "at": h.now.unix_s})
    );
}

#[test]
fn blocked_navigations_keep_the_last_ten() {
    let mut h = H::with(opts(&["http://b.test"], false));
    h.attach_page(&top_tree(&[]));
    for i in 0..BLOCKED_NAVIGATIONS_MAX + 3 {
        h.ev(
            Some("S1"),
            "Fetch.requestPaused",
            &paused(&format!("r{i}"), "Document", &format!("http://b.test/{i}")),
        );
    }
    let snap = h.st.snapshot();
    assert_eq!(snap.blocked_navigations.len(), BLOCKED_NAVIGATIONS_MAX);
    assert_eq!(snap.blocked_navigations[0].url, "http://b.test/3");
    assert_eq!(snap.blocked_navigations[9].url, "http://b.test/12");
    assert!(
        serde_json::to_value(H::with(Options::default()).st.snapshot()).unwrap()["blocked_navigations"]
            == json!([]),
        "an empty list when none"
    );
}

#[test]
fn a_refused_document_that_commits_is_released_to_about_blank_but_an_error_page_is_not() {
    // The default policy intercepts nothing; a file: commit is released.
    let mut h = H::with(Options::default());
    h.attach_page(&top_tree(&[]));
    h.drain();
    let mut f = frame("T1", None, "file:///etc/passwd");
    f["loaderId"] = json!("L2");
    h.ev(
        Some("S1"),
        "Page.frameNavigated",
        &json!({"frame": f, "type": "Navigation"}).to_string(),
    );
    let cmds = h.sends();
    let release = navigations(&cmds);
    assert_eq!(release.len(), 1, "{cmds:?}");
    assert_eq!(
        release[0].params,
        json!({"url": "about:blank", "frameId": "T1"})
    );
    assert_eq!(release[0].target, on("S1"));
    assert_eq!(
        h.st.snapshot().blocked_navigations[0].rule,
        "allow_file_urls: false"
    );

    // An error page (what a failed request commits) is not a document of
    // the refused origin: nothing more is sent or listed.
    let mut h = H::with(opts(&["http://b.test"], false));
    h.attach_page(&top_tree(&[]));
    h.drain();
    let mut f = frame("T1", None, "http://b.test/");
    f["loaderId"] = json!("L3");
    f["unreachableUrl"] = json!("http://b.test/");
    h.ev(
        Some("S1"),
        "Page.frameNavigated",
        &json!({"frame": f, "type": "Navigation"}).to_string(),
    );
    assert!(
        h.sends().iter().all(|c| c.method != "Page.navigate"),
        "no release of an error page"
    );
    assert!(h.st.snapshot().blocked_navigations.is_empty());
}
