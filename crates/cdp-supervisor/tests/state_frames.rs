//! Frame, session, routing, console and page_blocked rules of the pure state
//! machine, driven by CDP event sequences. No sockets, no Chromium.

mod state_support;

use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::{
    CONSOLE_ERRORS_MAX, DEFAULT_DIALOG_TIMEOUT, FRAME_TREE_MAX_ENTRIES, FRAMES_TRACKED_MAX, Notice,
    OOPIF_RELEASE_MIN, Options, Output, PAGE_ENABLE_GRACE, Purpose, RouteError,
};
use serde_json::json;
use state_support::*;
use std::collections::HashSet;
use std::time::Duration;

use DialogPolicy::{AutoAccept, AutoDismiss, MustRespond};

// ---- attach and the frame tree --------------------------------------------

#[test]
fn attach_enables_domains_auto_attaches_and_asks_for_the_tree() {
    let mut h = H::new(MustRespond);
    let cmds = h.attach_page(&top_tree(&[]));
    let methods: Vec<_> = cmds.iter().map(|c| c.method.as_str()).collect();
    for m in [
        "Page.getFrameTree",
        "Runtime.enable",
        "Target.setAutoAttach",
        "Page.enable",
    ] {
        assert!(methods.contains(&m), "{methods:?}");
    }
    assert!(cmds.iter().all(|c| c.target == on("S1")));
    let aa = cmds
        .iter()
        .find(|c| c.method == "Target.setAutoAttach")
        .unwrap();
    assert_eq!(aa.params["flatten"], json!(true));
    assert_eq!(aa.params["autoAttach"], json!(true));
    // The page session is not waiting for a debugger.
    assert!(!methods.contains(&"Runtime.runIfWaitingForDebugger"));
    let pe = cmds.iter().find(|c| c.method == "Page.enable").unwrap();
    assert_eq!(pe.purpose, Purpose::PageEnable);
}

#[test]
fn regression_15_tree_is_complete_right_after_attach_and_top_is_the_main_frame() {
    let mut h = H::new(MustRespond);
    // Page.enable never answers (not needed); only the tree reply came.
    h.attach_page(&top_tree(&[
        ("F2", "about:srcdoc"),
        ("F3", "https://a.test/same"),
    ]));
    let t = h.snap().frame_tree;
    let top = t.top.clone().expect("top known without a navigation");
    assert_eq!(top.frame_id, "T1");
    assert_eq!(top.url, PAGE_URL);
    assert_eq!(top.origin, "https://a.test");
    assert_eq!(h.child_ids(), ["F2", "F3"]);
    assert!(!t.truncated);
    assert_eq!(h.snap().url, PAGE_URL);
}

#[test]
fn regression_15_child_events_before_the_tree_reply_never_make_an_iframe_the_top() {
    let mut h = H::new(MustRespond);
    h.st.attach_page("T1".into(), sid("S1"), PAGE_URL, "", h.now);
    h.drain();
    h.frame_attached("S1", "F2", "T1");
    h.frame_navigated("S1", "F2", Some("T1"), "https://a.test/ad");
    h.reply_ok(
        "S1",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[("F2", "https://a.test/ad")])}),
    );
    let t = h.snap().frame_tree;
    assert_eq!(t.top.as_ref().unwrap().frame_id, "T1");
    assert_eq!(h.child_ids(), ["F2"]);
}

#[test]
fn same_process_children_are_not_oopifs_and_have_no_session() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.frame_navigated("S1", "F2", Some("T1"), "about:srcdoc");
    let c = &h.snap().frame_tree.children[0];
    assert_eq!(c.frame_id, "F2");
    assert!(!c.is_oopif);
    assert_eq!(c.session_id, None);
    assert_eq!(c.parent_frame_id, "T1");
    assert_eq!(c.url, "about:srcdoc");
    let v = serde_json::to_value(c).unwrap();
    assert!(v.get("session_id").is_none(), "{v}");
}

#[test]
fn oopif_target_is_an_oopif_child_with_its_session() {
    let mut h = H::attached(MustRespond);
    let cmds = h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    let c = &h.snap().frame_tree.children[0];
    assert_eq!(c.frame_id, "F2");
    assert!(c.is_oopif);
    assert_eq!(c.session_id.as_deref(), Some("S2"));
    assert_eq!(c.parent_frame_id, "T1");
    assert_eq!(c.origin, "https://b.test");
    assert!(h.st.has_session(&sid("S2")));
    // The child session: auto-attach (flatten, paused) and then resumed.
    let on_child: Vec<_> = cmds.iter().filter(|c| c.target == on("S2")).collect();
    let aa = on_child
        .iter()
        .find(|c| c.method == "Target.setAutoAttach")
        .expect("auto-attach on the child");
    assert_eq!(aa.params["flatten"], json!(true));
    assert_eq!(aa.params["waitForDebuggerOnStart"], json!(true));
    // Nothing pauses an OOPIF's documents by default (Chromium raises no
    // HTTP auth challenge in one; no bridge, no navigation policy): no
    // Fetch.enable, and it is resumed at once, after its auto-attach.
    let methods: Vec<_> = on_child.iter().map(|c| c.method.as_str()).collect();
    assert!(!methods.contains(&"Fetch.enable"), "{methods:?}");
    let auto = methods
        .iter()
        .position(|m| *m == "Target.setAutoAttach")
        .unwrap();
    let resume = methods
        .iter()
        .position(|m| *m == "Runtime.runIfWaitingForDebugger")
        .expect("resumed at once");
    assert!(auto < resume, "auto-attach before resuming: {methods:?}");
}

/// `history.pushState`, `replaceState`, a fragment, back or forward within
/// a document: no new document, no frameNavigated, only
/// `Page.navigatedWithinDocument`. The URL the snapshot shows (`url`, the
/// top entry, an OOPIF's entry) follows it; the origin stays.
#[test]
fn a_same_document_navigation_moves_the_urls_the_snapshot_shows() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    let before = h.snap();
    let within = |h: &mut H, session: &str, frame: &str, url: &str| {
        let p = json!({"frameId": frame, "url": url, "navigationType": "historyApi"});
        h.ev(
            Some(session),
            "Page.navigatedWithinDocument",
            &p.to_string(),
        );
    };
    within(&mut h, "S1", "T1", "https://a.test/pushed");
    within(&mut h, "S2", "F2", "https://b.test/#part");
    let s = h.snap();
    assert_eq!(s.url, "https://a.test/pushed");
    let top = s.frame_tree.top.clone().unwrap();
    assert_eq!(
        (top.url.as_str(), top.origin.as_str()),
        ("https://a.test/pushed", "https://a.test")
    );
    let c = &s.frame_tree.children[0];
    assert_eq!(
        (c.url.as_str(), c.origin.as_str()),
        ("https://b.test/#part", "https://b.test")
    );
    assert_eq!(c.session_id.as_deref(), Some("S2"), "still routable");
    // Back to where it was: shown again.
    within(&mut h, "S1", "T1", PAGE_URL);
    assert_eq!(h.snap().url, PAGE_URL);
    assert_eq!(h.snap().frame_tree.top.as_ref().unwrap().url, before.url);
    // From a session we do not supervise: nothing moves.
    within(&mut h, "S9", "T1", "https://a.test/forged");
    assert_eq!(h.snap().url, PAGE_URL);
}

#[test]
fn oopif_frame_attached_notice_says_oopif() {
    let mut h = H::attached(MustRespond);
    let p = json!({"sessionId": "S2", "targetInfo": {"targetId": "F2", "type": "iframe", "url": "https://b.test/"},
                   "waitingForDebugger": true});
    h.ev(Some("S1"), "Target.attachedToTarget", &p.to_string());
    let n = notices(&h.drain());
    assert!(
        n.iter().any(|n| matches!(n, Notice::FrameAttached { frame_id, is_oopif: true, .. } if frame_id == "F2")),
        "{n:?}"
    );
}

/// Back from the back-forward cache, the top document shows its frames
/// again, but Chromium announces none of them (the review of stop 20 saw
/// `frame_tree` lose them, and `browser_cdp(frame_id)` lose the OOPIFs).
#[test]
fn top_back_from_the_bfcache_asks_every_session_for_its_tree() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.frame_navigated("S1", "F2", Some("T1"), "https://a.test/same");
    h.attach_oopif("S1", "F3", "S3", "https://b.test/");
    assert_eq!(h.child_ids(), ["F2", "F3"]);
    // The page leaves: a new document, every frame goes.
    let mut away = frame("T1", None, "https://a.test/other");
    away["loaderId"] = json!("L-other");
    let p = json!({"frame": away, "type": "Navigation"});
    h.ev(Some("S1"), "Page.frameNavigated", &p.to_string());
    assert!(h.child_ids().is_empty());
    h.drain();
    // It comes back from the cache: its old loader, no frameAttached.
    let p = json!({"frame": frame("T1", None, PAGE_URL), "type": "BackForwardCacheRestore"});
    h.ev(Some("S1"), "Page.frameNavigated", &p.to_string());
    let asked: Vec<_> = h
        .sends()
        .into_iter()
        .filter(|c| c.method == "Page.getFrameTree")
        .map(|c| (c.target, c.purpose))
        .collect();
    assert!(asked.contains(&(on("S1"), Purpose::FrameTree)), "{asked:?}");
    assert!(asked.contains(&(on("S3"), Purpose::FrameTree)), "{asked:?}");
    // The page's tree lists both (the OOPIF too); the OOPIF's own names its parent.
    let tree = json!({"frameTree": {"frame": frame("T1", None, PAGE_URL), "childFrames": [
        {"frame": frame("F2", Some("T1"), "https://a.test/same")},
        {"frame": frame("F3", Some("T1"), "https://b.test/")}]}});
    h.reply_ok("S1", Purpose::FrameTree, tree);
    let own = json!({"frameTree": {"frame": frame("F3", Some("T1"), "https://b.test/")}});
    h.reply_ok("S3", Purpose::FrameTree, own);
    assert_eq!(h.child_ids(), ["F2", "F3"]);
    let kids = h.snap().frame_tree.children.clone();
    assert!(!kids[0].is_oopif);
    assert!(kids[1].is_oopif);
    assert_eq!(kids[1].session_id.as_deref(), Some("S3"));
    assert_eq!(h.st.route_frame("F3"), Ok(sid("S3")));
    // A plain navigation asks for no tree.
    h.frame_navigated("S1", "T1", None, "https://a.test/again");
    assert!(h.sends().iter().all(|c| c.method != "Page.getFrameTree"));
}

#[test]
fn regression_9_swap_before_attach_keeps_the_oopif_once() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.frame_navigated("S1", "F2", Some("T1"), "https://a.test/x");
    h.frame_detached("S1", "F2", "swap");
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    let kids = h.snap().frame_tree.children.clone();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(kids[0].is_oopif);
    assert_eq!(kids[0].session_id.as_deref(), Some("S2"));
    assert_eq!(kids[0].url, "https://b.test/");
    assert_eq!(h.st.route_frame("F2"), Ok(sid("S2")));
}

#[test]
fn regression_9_swap_after_attach_keeps_the_oopif_once() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.frame_detached("S1", "F2", "swap");
    // The child session reports its own navigation too.
    h.frame_navigated("S2", "F2", Some("T1"), "https://b.test/page");
    let kids = h.snap().frame_tree.children.clone();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(kids[0].is_oopif);
    assert_eq!(kids[0].url, "https://b.test/page");
    assert_eq!(h.st.route_frame("F2"), Ok(sid("S2")));
}

#[test]
fn nested_oopifs_past_depth_2_are_cut() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.attach_oopif("S2", "F3", "S3", "https://c.test/");
    // A same-process child of the depth-2 OOPIF keeps depth 2.
    h.frame_attached("S3", "F3a", "F3");
    assert!(!h.snap().frame_tree.truncated);
    h.attach_oopif("S3", "F4", "S4", "https://d.test/");
    let t = h.snap().frame_tree;
    let ids: Vec<_> = t.children.iter().map(|c| c.frame_id.as_str()).collect();
    assert_eq!(ids, ["F2", "F3", "F3a"]);
    assert!(t.truncated);
    assert_eq!(t.children[1].parent_frame_id, "F2");
}

#[test]
fn forty_frames_are_cut_at_thirty_children() {
    let mut h = H::attached(MustRespond);
    for i in 0..FRAME_TREE_MAX_ENTRIES {
        h.frame_attached("S1", &format!("F{i}"), "T1");
    }
    let t = h.snap().frame_tree;
    assert_eq!(t.children.len(), 30);
    assert!(!t.truncated, "exactly 30 children fit (top not counted)");
    for i in FRAME_TREE_MAX_ENTRIES..40 {
        h.frame_attached("S1", &format!("F{i}"), "T1");
    }
    let t = h.snap().frame_tree;
    assert_eq!(t.children.len(), 30);
    assert!(t.truncated);
    assert_eq!(t.children[0].frame_id, "F0", "document order kept");
}

#[test]
fn detached_frames_are_removed_with_their_subtree() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.frame_attached("S1", "F3", "F2");
    h.frame_attached("S1", "F4", "T1");
    h.frame_detached("S1", "F2", "remove");
    assert_eq!(h.child_ids(), ["F4"]);
    assert!(matches!(
        h.st.route_frame("F3"),
        Err(RouteError::UnknownFrame { .. })
    ));
}

#[test]
fn oopif_session_detaching_drops_its_frames_and_route() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.frame_attached("S2", "F2a", "F2");
    h.alert("S1", "F2", "inside");
    h.detach_target(Some("S1"), "S2", "F2");
    assert!(!h.st.has_session(&sid("S2")));
    assert!(h.child_ids().is_empty());
    assert!(h.st.route_frame("F2").is_err());
    assert!(h.st.route_frame("F2a").is_err());
    assert!(
        h.pending_ids().is_empty(),
        "its frame is gone, so is its dialog"
    );
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

#[test]
fn regression_11_frame_map_is_bounded_under_endless_frames() {
    let mut h = H::attached(MustRespond);
    for i in 0..FRAMES_TRACKED_MAX + 500 {
        h.frame_attached("S1", &format!("F{i}"), "T1");
    }
    h.drain();
    let s = h.snap();
    assert_eq!(s.frame_tree.children.len(), 30);
    assert!(s.frame_tree.truncated);
    // Tracked: the first FRAMES_TRACKED_MAX - 1 (the top counts); beyond: not kept.
    assert!(matches!(
        h.st.route_frame(&format!("F{}", FRAMES_TRACKED_MAX - 2)),
        Err(RouteError::SameProcess { .. })
    ));
    assert!(matches!(
        h.st.route_frame(&format!("F{}", FRAMES_TRACKED_MAX + 100)),
        Err(RouteError::UnknownFrame { .. })
    ));
    let json = serde_json::to_vec(&s).unwrap();
    assert!(
        json.len() < 16 * 1024,
        "snapshot stays small: {}",
        json.len()
    );
    // The UnknownFrame error lists a bounded number of ids.
    let Err(RouteError::UnknownFrame { known, .. }) = h.st.route_frame("nope") else {
        panic!("an unknown frame is UnknownFrame");
    };
    assert!(known.len() <= FRAME_TREE_MAX_ENTRIES);
}

#[test]
fn regression_11_churn_keeps_tracking_new_frames() {
    let mut h = H::attached(MustRespond);
    for i in 0..5 * FRAMES_TRACKED_MAX {
        let id = format!("F{i}");
        h.frame_attached("S1", &id, "T1");
        h.frame_detached("S1", &id, "remove");
    }
    h.frame_attached("S1", "LAST", "T1");
    h.drain();
    assert_eq!(h.child_ids(), ["LAST"]);
    assert!(!h.snap().frame_tree.truncated);
}

#[test]
fn regression_12_oopifs_come_back_after_a_reconnect() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.st.connection_lost();
    assert!(!h.st.has_session(&sid("S2")));
    assert!(h.st.route_frame("F2").is_err());
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.reply_ok(
        "S1b",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[])}),
    );
    h.attach_oopif("S1b", "F2", "S2b", "https://b.test/");
    assert_eq!(h.st.route_frame("F2"), Ok(sid("S2b")));
    assert_eq!(h.st.route_frame("T1"), Ok(sid("S1b")));
}

// ---- routing ---------------------------------------------------------------

#[test]
fn route_top_frame_goes_to_the_page_session() {
    let h = H::attached(MustRespond);
    assert_eq!(h.st.route_frame("T1"), Ok(sid("S1")));
}

#[test]
fn route_before_attach_is_no_page() {
    let h = H::new(MustRespond);
    assert_eq!(h.st.route_frame("T1"), Err(RouteError::NoPage));
}

#[test]
fn regression_10_same_process_frame_route_names_content_window() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    let e = h.st.route_frame("F2").unwrap_err();
    assert!(matches!(&e, RouteError::SameProcess { frame_id, host: None } if frame_id == "F2"));
    let text = e.to_string();
    assert!(
        text.contains("contentWindow") && text.contains("contentDocument"),
        "{text}"
    );
}

#[test]
fn regression_10_same_process_frame_inside_an_oopif_names_its_host() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.frame_attached("S2", "F2a", "F2");
    let e = h.st.route_frame("F2a").unwrap_err();
    assert_eq!(
        e,
        RouteError::SameProcess {
            frame_id: "F2a".into(),
            host: Some("F2".into())
        }
    );
    assert!(e.to_string().contains("F2"));
}

#[test]
fn unknown_frame_route_lists_known_ids() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    let e = h.st.route_frame("F9").unwrap_err();
    let RouteError::UnknownFrame { frame_id, known } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(frame_id, "F9");
    assert!(
        known.contains(&"T1".to_owned()) && known.contains(&"F2".to_owned()),
        "{known:?}"
    );
    assert!(e.to_string().contains("F2"));
}

// ---- page_blocked ----------------------------------------------------------

#[test]
fn regression_7_attach_to_a_blocked_page_completes_and_says_page_blocked() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[]));
    // Page.enable never answers.
    assert!(!h.snap().page_blocked);
    assert_eq!(h.st.poll_timeout(), Some(h.t0.instant + PAGE_ENABLE_GRACE));
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    assert!(notices(&h.drain()).contains(&Notice::PageBlocked));
    let v = serde_json::to_value(h.snap()).unwrap();
    assert_eq!(v["page_blocked"], json!(true));
}

#[test]
fn page_enable_reply_clears_page_blocked() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[]));
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    assert!(!h.snap().page_blocked);
    assert_eq!(h.st.poll_timeout(), None, "no release left armed");
}

#[test]
fn page_enable_in_time_never_marks_blocked() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[]));
    h.advance(Duration::from_millis(20));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    assert_eq!(h.st.poll_timeout(), None);
    h.advance(PAGE_ENABLE_GRACE * 2);
    h.st.handle_timeout(h.now);
    assert!(!h.snap().page_blocked);
}

#[test]
fn page_blocked_is_released_by_the_watchdog_after_dialog_timeout() {
    let mut h = H::with(Options {
        dialog_timeout: Duration::from_secs(60),
        ..Options::default()
    });
    h.attach_page(&top_tree(&[]));
    h.fire_after(PAGE_ENABLE_GRACE);
    h.drain();
    let release_at = h.st.poll_timeout().expect("release armed");
    assert_eq!(release_at, h.now.instant + Duration::from_secs(60));
    h.fire_after(Duration::from_secs(60));
    let cmds = h.sends();
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1);
    assert_eq!(nav[0].params, json!({"url": PAGE_URL}));
    assert_eq!(nav[0].target, on("S1"));
    h.frame_navigated("S1", "T1", None, PAGE_URL);
    assert!(!h.snap().page_blocked);
}

/// Found by the 60-minute soak (16 Chromiums starting at once on 2 cores):
/// a page's `Page.enable` went unanswered past the grace because its
/// renderer was slow, not blocked; the watchdog's release then navigated
/// it and aborted the agent's own `browser_navigate` (`net::ERR_ABORTED`).
/// The agent's navigation releases a blocked page as ours would: while one
/// is in progress, ours waits; if it fails, ours goes.
#[test]
fn a_release_waits_while_the_agents_own_navigation_is_in_progress() {
    let mut h = H::with(Options {
        dialog_timeout: Duration::from_secs(4),
        ..Options::default()
    });
    h.attach_page(&top_tree(&[]));
    h.agent(
        5,
        "S1",
        "Page.navigate",
        json!({"url": "https://a.test/next"}),
    );
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.drain();
    h.fire_after(Duration::from_secs(4));
    assert!(
        navigations(&h.sends()).is_empty(),
        "no release while the agent's navigation runs"
    );
    for _ in 0..8 {
        let at = h.st.poll_timeout().expect("it looks again");
        h.now.instant = at;
        h.st.handle_timeout(h.now);
        assert!(
            navigations(&h.sends()).is_empty(),
            "nor later, while it runs"
        );
    }
    // Its navigation failed: nothing else will free the page.
    h.reply(
        Some("S1"),
        Purpose::Agent { call: 5 },
        Err(cdp_err("Page.navigate", -32000, "Navigation timed out")),
    );
    h.drain();
    let at = h.st.poll_timeout().expect("the release is armed again");
    h.now.instant = at;
    h.st.handle_timeout(h.now);
    let cmds = h.sends();
    assert_eq!(navigations(&cmds).len(), 1, "released: {cmds:?}");
}

#[test]
fn page_blocked_under_auto_policy_is_released_at_once() {
    let mut h = H::new(AutoDismiss);
    h.attach_page(&top_tree(&[]));
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.sends().iter().any(|c| c.method == "Page.navigate"));
}

/// Found by a helper (stop 26): an OOPIF already showing an `alert()` when
/// we attached. The page's own session answered, so nothing said the page
/// was blocked: the attach waited out its whole deadline, the snapshot said
/// `page_blocked: false`, and `browser_dialog` found no dialog.
#[test]
fn regression_7_an_oopif_blocked_before_attach_says_page_blocked() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[]));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    h.advance(Duration::from_millis(5));
    h.attach_blocked_oopif("S1", "F9", "S9");
    assert!(!h.snap().page_blocked, "not before the grace");
    h.fire_after(PAGE_ENABLE_GRACE);
    let snap = h.snap();
    assert!(snap.page_blocked);
    assert_eq!(snap.blocked_frame_ids, ["F9"], "the OOPIF, not the top");
    assert!(notices(&h.drain()).contains(&Notice::PageBlocked));
    // The remedy is the top's: the release navigates the page.
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    let cmds = h.sends();
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "{cmds:?}");
    assert_eq!(nav[0].target, on("S1"));
    h.frame_navigated("S1", "T1", None, PAGE_URL);
    assert!(!h.snap().page_blocked);
    assert!(h.snap().blocked_frame_ids.is_empty());
}

#[test]
fn an_oopif_that_answers_or_goes_away_is_not_blocked() {
    // It answers late: the block it showed ends, and the armed release too.
    let mut h = H::attached(MustRespond);
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.reply_ok("S9", Purpose::PageEnable, json!({}));
    assert!(!h.snap().page_blocked);
    assert_eq!(h.st.poll_timeout(), None, "no release left armed");
    // Its session detaches before the grace: nothing to wait for.
    let mut h = H::attached(MustRespond);
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.detach_target(Some("S1"), "S9", "F9");
    assert_eq!(h.st.poll_timeout(), None);
    // Two blocked, one answers: still blocked by the other.
    let mut h = H::attached(MustRespond);
    h.attach_blocked_oopif("S1", "F8", "S8");
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.fire_after(PAGE_ENABLE_GRACE);
    h.reply_ok("S8", Purpose::PageEnable, json!({}));
    assert!(h.snap().page_blocked);
    assert_eq!(h.snap().blocked_frame_ids, ["F9"]);
}

#[test]
fn an_oopif_with_a_known_dialog_or_attached_later_is_not_taken_for_blocked() {
    // Its own dialog, seen, explains the silence.
    let mut h = H::attached(MustRespond);
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.alert("S1", "F9", "seen");
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(!h.snap().page_blocked);
    assert_eq!(h.pending_ids(), ["d-1"]);
    // One that appears after the attach opens its dialogs in front of us:
    // a busy renderer under an auto policy must not navigate the page.
    let mut h = H::attached(AutoDismiss);
    h.advance(PAGE_ENABLE_GRACE);
    h.attach_blocked_oopif("S1", "F9", "S9");
    assert_eq!(h.st.poll_timeout(), None);
    assert!(!h.snap().page_blocked);
}

#[test]
fn a_blocked_oopif_under_an_auto_policy_is_released_at_once() {
    let mut h = H::new(AutoAccept);
    h.attach_page(&top_tree(&[]));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    // Not at once: a frame busy running a script looks the same.
    let cmds = h.sends();
    assert!(
        !cmds.iter().any(|c| c.method == "Page.navigate"),
        "{cmds:?}"
    );
    h.fire_after(OOPIF_RELEASE_MIN);
    let cmds = h.sends();
    assert!(
        cmds.iter()
            .any(|c| c.method == "Page.navigate" && c.target == on("S1")),
        "{cmds:?}"
    );
}

/// Found by a helper: an OOPIF busy in a 6 s loop when we attached was
/// taken for one a dialog blocks, and under auto_dismiss the page was
/// reloaded at once (the user's state lost). Its late answer now clears
/// the block before any release.
#[test]
fn a_busy_oopif_at_attach_answers_late_and_nothing_is_navigated() {
    let mut h = H::new(AutoDismiss);
    h.attach_page(&top_tree(&[]));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.advance(Duration::from_secs(5));
    h.reply_ok("S9", Purpose::PageEnable, json!({}));
    assert!(!h.snap().page_blocked);
    assert_eq!(h.st.poll_timeout(), None, "no release left armed");
    assert!(!h.sends().iter().any(|c| c.method == "Page.navigate"));
}

#[test]
fn after_a_reconnect_an_oopif_block_is_found_again_not_kept() {
    let mut h = H::attached(MustRespond);
    h.attach_blocked_oopif("S1", "F9", "S9");
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.st.connection_lost();
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.reply_ok("S1b", Purpose::PageEnable, json!({}));
    // The OOPIF is gone: nothing blocks the page any more.
    assert!(!h.snap().page_blocked);
    assert_eq!(h.st.poll_timeout(), None);
}

// ---- console ---------------------------------------------------------------

fn console(h: &mut H, kind: &str, text: &str, ts_ms: f64) {
    let p = json!({"type": kind, "args": [{"type": "string", "value": text}], "executionContextId": 1,
                   "timestamp": ts_ms, "stackTrace": {"callFrames": [{"functionName": "", "scriptId": "3",
                   "url": "https://a.test/app.js", "lineNumber": 1, "columnNumber": 2}]}});
    h.ev(Some("S1"), "Runtime.consoleAPICalled", &p.to_string());
}

#[test]
fn console_errors_asserts_and_exceptions_are_kept_logs_ignored() {
    let mut h = H::attached(MustRespond);
    console(&mut h, "log", "chatter", 1_700_000_000_000.0);
    console(&mut h, "error", "boom", 1_700_000_001_500.0);
    console(&mut h, "assert", "Assertion failed", 1_700_000_002_000.0);
    let ex = json!({"timestamp": 1_700_000_003_250.0, "exceptionDetails": {"exceptionId": 1,
        "text": "Uncaught", "lineNumber": 0, "columnNumber": 0, "url": "https://a.test/x.js",
        "exception": {"type": "object", "subtype": "error", "className": "TypeError",
                      "description": "TypeError: x is not a function"}}});
    h.ev(Some("S1"), "Runtime.exceptionThrown", &ex.to_string());
    let c = h.snap().console_errors;
    assert_eq!(c.len(), 3, "{c:?}");
    assert_eq!(c[0].level, "error");
    assert_eq!(c[0].text, "boom");
    assert_eq!(c[0].at, 1_700_000_001.5);
    assert_eq!(c[0].url.as_deref(), Some("https://a.test/app.js"));
    assert_eq!(c[1].level, "assert");
    assert_eq!(c[2].level, "exception");
    assert_eq!(c[2].text, "TypeError: x is not a function");
    assert_eq!(c[2].at, 1_700_000_003.25);
}

#[test]
fn console_ring_keeps_50() {
    let mut h = H::attached(MustRespond);
    for i in 0..70 {
        console(
            &mut h,
            "error",
            &format!("e{i}"),
            1_700_000_000_000.0 + i as f64,
        );
    }
    let c = h.snap().console_errors;
    assert_eq!(c.len(), CONSOLE_ERRORS_MAX);
    assert_eq!(c[0].text, "e20");
    assert_eq!(c[49].text, "e69");
}

#[test]
fn snapshot_serializes_with_the_spec_field_names() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.alert("S1", "T1", "x");
    h.closed("S1", "T1", true, "");
    let v = serde_json::to_value(h.snap()).unwrap();
    for key in [
        "url",
        "title",
        "pending_dialogs",
        "recent_dialogs",
        "frame_tree",
        "console_errors",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["recent_dialogs"][0]["closed_by"], json!("remote"));
    assert!(v["recent_dialogs"][0]["closed_at"].is_f64());
    assert_eq!(v["frame_tree"]["children"][0]["session_id"], json!("S2"));
    assert_eq!(v["frame_tree"]["top"]["frame_id"], json!("T1"));
}

#[test]
fn no_frame_is_listed_twice_after_mixed_reports() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.reply_ok(
        "S1",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[("F2", "about:blank")])}),
    );
    h.frame_navigated("S1", "F2", Some("T1"), "about:blank");
    let ids = h.child_ids();
    let set: HashSet<_> = ids.iter().collect();
    assert_eq!(ids.len(), set.len());
    let _ = Output::Notice(Notice::PageBlocked);
}

#[test]
fn attach_seeds_the_top_from_target_info_when_the_page_is_blocked() {
    // A blocked page answers neither Page.enable nor Page.getFrameTree.
    let mut h = H::new(MustRespond);
    h.st.attach_page("T1".into(), sid("S1"), "https://a.test/held", "Held", h.now);
    let s = h.snap();
    assert_eq!(s.frame_tree.top.as_ref().unwrap().frame_id, "T1");
    assert_eq!(s.url, "https://a.test/held");
    assert_eq!(s.title, "Held");
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.drain();
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    let cmds = h.sends();
    let nav = cmds.iter().find(|c| c.method == "Page.navigate").unwrap();
    assert_eq!(nav.params, json!({"url": "https://a.test/held"}));
}

#[test]
fn a_frame_parent_cycle_does_not_hang_detach() {
    // Chromium never sends this; a proxy or a buggy mock might. No hang, no panic.
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F3", "F3");
    h.frame_attached("S1", "F4", "F5");
    h.frame_attached("S1", "F5", "F4");
    h.frame_detached("S1", "F3", "remove");
    h.frame_detached("S1", "F4", "remove");
    assert!(h.st.route_frame("F3").is_err());
    assert!(h.st.route_frame("F5").is_err());
}

/// A capped tree keeps the frames `browser_cdp(frame_id)` can reach: 40
/// same-process frames first in the document, then two OOPIFs (one nested
/// in a same-process frame) — both OOPIFs and the nested one's parent are
/// listed, parents before children, 30 in all.
#[test]
fn a_capped_tree_keeps_the_oopifs_and_their_parents() {
    let mut h = H::attached(MustRespond);
    for i in 0..40 {
        h.frame_attached("S1", &format!("F{i}"), "T1");
    }
    h.frame_attached("S1", "HOST", "T1");
    h.frame_attached("S1", "O1", "T1");
    h.attach_oopif("S1", "O1", "S-O1", "https://b.test/1");
    h.frame_attached("S1", "O2", "HOST");
    h.attach_oopif("S1", "O2", "S-O2", "https://c.test/2");
    let t = h.snap().frame_tree;
    assert_eq!(t.children.len(), FRAME_TREE_MAX_ENTRIES);
    assert!(t.truncated);
    let ids: Vec<&str> = t.children.iter().map(|c| c.frame_id.as_str()).collect();
    for must in ["O1", "O2", "HOST"] {
        assert!(ids.contains(&must), "{must} missing from {ids:?}");
    }
    let pos = |id: &str| ids.iter().position(|x| *x == id).unwrap();
    assert!(pos("HOST") < pos("O2"), "parents first: {ids:?}");
    assert!(
        t.children
            .iter()
            .filter(|c| c.is_oopif)
            .all(|c| c.session_id.is_some())
    );
    assert_eq!(ids[0], "F0", "then the rest in document order");
}

// ---- issue 8: frame parents, stale frames, OOPIFs at attach ------------------

/// `Target.attachedToTarget` for OOPIF `frame_id` under `parent_session`,
/// its target info naming `parent_frame` (as Chromium does).
fn oopif_attached_under(
    h: &mut H,
    parent_session: &str,
    frame_id: &str,
    session: &str,
    parent_frame: Option<&str>,
) {
    let mut info = json!({"targetId": frame_id, "type": "iframe", "title": "", "url": "https://c.test/",
                          "attached": true, "canAccessOpener": false, "browserContextId": "B1"});
    if let Some(p) = parent_frame {
        info["parentFrameId"] = json!(p);
    }
    let p = json!({"sessionId": session, "targetInfo": info, "waitingForDebugger": true});
    h.ev(
        Some(parent_session),
        "Target.attachedToTarget",
        &p.to_string(),
    );
    h.drain();
}

fn parent_of(h: &mut H, frame_id: &str) -> String {
    let found = h
        .snap()
        .frame_tree
        .children
        .iter()
        .find(|c| c.frame_id == frame_id)
        .map(|c| c.parent_frame_id.clone());
    found.unwrap_or_else(|| panic!("no frame {frame_id}: {:?}", h.child_ids()))
}

/// Defect 4 (issue 8): an OOPIF nested in a same-process iframe, attached
/// late (no `frameAttached`), was filed under the top frame.
#[test]
fn regression_15_oopif_in_a_same_process_iframe_takes_its_parent_from_target_info() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[("F1", "about:srcdoc")]));
    oopif_attached_under(&mut h, "S1", "F2", "S2", Some("F1"));
    assert_eq!(parent_of(&mut h, "F2"), "F1");
}

/// Defect 4 (issue 8): the OOPIF's own tree reply names its parent and
/// corrects a guess made before it.
#[test]
fn regression_15_oopif_own_tree_reply_corrects_its_parent() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[("F1", "about:srcdoc")]));
    oopif_attached_under(&mut h, "S1", "F2", "S2", None);
    h.reply_ok(
        "S2",
        Purpose::FrameTree,
        json!({"frameTree": {"frame": frame("F2", Some("F1"), "https://c.test/")}}),
    );
    assert_eq!(parent_of(&mut h, "F2"), "F1");
}

/// Defect 4 (issue 8): `truncated: true` survived a reconnect.
#[test]
fn regression_12_truncated_does_not_survive_a_reconnect() {
    let mut h = H::attached(MustRespond);
    for i in 0..=cdp_supervisor::supervisor::state::FRAMES_TRACKED_MAX {
        h.frame_attached("S1", &format!("F{i}"), "T1");
    }
    assert!(h.snap().frame_tree.truncated);
    h.st.connection_lost();
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.reply_ok(
        "S1b",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[])}),
    );
    assert!(!h.snap().frame_tree.truncated);
}

/// Defect 6 (issue 8): navigating the page five times left every earlier
/// document's same-site iframe in `frame_tree` (Chromium need not send
/// `frameDetached` for each).
#[test]
fn regression_new_top_document_drops_the_old_documents_frames() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[("F1", "https://a.test/same")]));
    h.attach_oopif("S1", "O1", "S2", "https://b.test/");
    for n in 0..5 {
        let mut top = frame("T1", None, PAGE_URL);
        top["loaderId"] = json!(format!("L-new-{n}"));
        let p = json!({"frame": top, "type": "Navigation"});
        h.ev(Some("S1"), "Page.frameNavigated", &p.to_string());
        let kid = format!("N{n}");
        h.frame_attached("S1", &kid, "T1");
        h.frame_navigated("S1", &kid, Some("T1"), "https://a.test/same");
        assert_eq!(h.child_ids(), [kid.as_str()], "after navigation {n}");
    }
}

/// Defect 7 (issue 8): attaching to a loaded page, an existing OOPIF's
/// auto-attach came before the page's `getFrameTree` reply, which lists
/// that frame too; the reply took the frame back from its OOPIF session and
/// the tree lost the OOPIF for good.
#[test]
fn regression_9_oopif_attached_before_the_page_tree_reply_stays_an_oopif() {
    let mut h = H::new(MustRespond);
    h.st.attach_page("T1".into(), sid("S1"), PAGE_URL, "", h.now);
    h.drain();
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.reply_ok(
        "S1",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[("F2", "https://b.test/")])}),
    );
    let kids = h.snap().frame_tree.children.clone();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(kids[0].is_oopif, "{kids:?}");
    assert_eq!(kids[0].session_id.as_deref(), Some("S2"));
    assert_eq!(h.st.route_frame("F2"), Ok(sid("S2")));
}

/// Defect 6 (issue 8): a lifecycle event of the new document may come before
/// its commit; the old document's frames still go with the commit.
#[test]
fn new_top_document_drops_old_frames_even_after_its_lifecycle_event() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[("F1", "https://a.test/same")]));
    h.ev(
        Some("S1"),
        "Page.lifecycleEvent",
        r#"{"frameId": "T1", "loaderId": "L-next", "name": "init", "timestamp": 1.0}"#,
    );
    let mut top = frame("T1", None, PAGE_URL);
    top["loaderId"] = json!("L-next");
    let p = json!({"frame": top, "type": "Navigation"});
    h.ev(Some("S1"), "Page.frameNavigated", &p.to_string());
    assert!(h.child_ids().is_empty(), "{:?}", h.child_ids());
}

#[test]
fn unwatched_frame_and_console_floods_queue_no_notice_yet_the_snapshot_shows_them() {
    let mut h = H::attached(MustRespond);
    h.st.set_watched(false);
    let console = json!({"type": "error", "args": [{"type": "string", "value": "boom"}],
                         "executionContextId": 1, "timestamp": 1.7e12});
    for i in 0..20 {
        h.frame_attached("S1", &format!("F{i}"), "T1");
        h.ev(Some("S1"), "Runtime.consoleAPICalled", &console.to_string());
    }
    h.frame_detached("S1", "F0", "remove");
    let queued = h.drain();
    assert!(queued.is_empty(), "nothing for nobody: {queued:?}");
    let snap = h.snap();
    assert_eq!(snap.frame_tree.children.len(), 19);
    assert_eq!(snap.console_errors.len(), 20);
    // A dialog is still announced: `browser_wait` waits on it.
    h.alert("S1", "T1", "hi");
    let n = notices(&h.drain());
    assert!(
        matches!(n.as_slice(), [Notice::DialogOpened { .. }]),
        "{n:?}"
    );
    // Once a watcher listens, it sees the next frame and error.
    h.st.set_watched(true);
    h.frame_attached("S1", "FW", "T1");
    h.ev(Some("S1"), "Runtime.consoleAPICalled", &console.to_string());
    let n = notices(&h.drain());
    assert!(
        matches!(n.as_slice(), [Notice::FrameAttached { frame_id, .. }, Notice::ConsoleError { .. }] if frame_id == "FW"),
        "{n:?}"
    );
}
