//! The tabs coordinator ([`Tabs`]) as event sequences: which pages become
//! supervised tabs, in which order Chromium reports them, one dialog list
//! for all tabs, the current tab, crashes and reconnects. No Chromium, no
//! sockets: every command the coordinator emits is answered here, as the
//! driver would.

use cdp_supervisor::cdp::protocol::{Event, SessionId, TargetId};
use cdp_supervisor::supervisor::origins::NavigationPolicy;
use cdp_supervisor::supervisor::policy::{DialogPolicies, DialogPolicy};
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::calls::{self, AtDeadline, BLOCKED_CALL_GRACE, CallStart};
use cdp_supervisor::supervisor::state::loads::{LOAD_CHECK_INTERVAL, LOAD_CHECK_TIMEOUT};
use cdp_supervisor::supervisor::state::{
    CLOSING_GRACE, Command, DialogAction, DialogError, DialogRequest, Notice, Now, Options, Output,
    Purpose, ReplyError, RouteError, Tabs, Target,
};
use serde_json::{Value, json};
use std::time::Instant;

struct H {
    tabs: Tabs,
    now: Now,
    /// Commands sent and not answered yet.
    sent: Vec<Command>,
    notices: Vec<Notice>,
    /// `Output::SaveDownload`s: (id, from, name).
    saves: Vec<(String, String, String)>,
    /// `Output::Loaded`s not looked at yet.
    loads: Vec<u64>,
}

fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

impl H {
    /// Tab T0 attached as S0 (`Target.attachToTarget`), its setup answered.
    fn attached(opts: Options) -> H {
        let now = Now {
            instant: Instant::now(),
            unix_s: 1_700_000_000.0,
        };
        let mut h = H {
            tabs: Tabs::new(opts),
            now,
            sent: Vec::new(),
            notices: Vec::new(),
            saves: Vec::new(),
            loads: Vec::new(),
        };
        h.tabs
            .attach_page(TargetId::from("T0"), sid("S0"), "https://a.test/", "", now);
        h.pump();
        h.answer_all();
        h
    }

    fn pump(&mut self) {
        while let Some(o) = self.tabs.poll_output() {
            match o {
                Output::Send(c) => self.sent.push(*c),
                Output::Notice(n) => self.notices.push(n),
                Output::SaveDownload { id, from, name } => self.saves.push((id, from, name)),
                Output::Loaded { load } => self.loads.push(load),
                _ => {}
            }
        }
    }

    /// Answers every command sent so far with `{}` (a frame tree for
    /// getFrameTree), as an idle browser would.
    fn answer_all(&mut self) {
        while !self.sent.is_empty() {
            let c = self.sent.remove(0);
            let reply = match (&c.purpose, &c.target) {
                (Purpose::FrameTree, Target::Session(s)) => {
                    let id = s.0.replace('S', "T");
                    json!({"frameTree": {"frame": {"id": id, "url": format!("https://a.test/{id}"), "securityOrigin": "https://a.test"}}})
                }
                _ => json!({}),
            };
            self.reply(&c, Ok(reply));
        }
    }

    fn reply(
        &mut self,
        c: &Command,
        r: Result<Value, cdp_supervisor::supervisor::state::ReplyError>,
    ) {
        self.tabs
            .on_reply(&c.target, c.tab, c.purpose.clone(), r, self.now);
        self.pump();
    }

    /// Takes the first command sent with `method` (panics when none was).
    fn take(&mut self, method: &str) -> Command {
        let i = self
            .sent
            .iter()
            .position(|c| c.method == method)
            .unwrap_or_else(|| panic!("no {method} sent; sent: {:?}", self.methods()));
        self.sent.remove(i)
    }

    fn methods(&self) -> Vec<String> {
        self.sent.iter().map(|c| c.method.clone()).collect()
    }

    fn ev(&mut self, session: Option<&str>, method: &str, params: Value) {
        let e = Event::parse(method, &params.to_string());
        assert!(!matches!(e, Event::Unparsed { .. }), "{e:?}");
        let s = session.map(sid);
        self.tabs.on_event(s.as_ref(), e, self.now);
        self.pump();
    }

    fn page_attached(&mut self, session: &str, target: &str, opener: Option<&str>, waiting: bool) {
        let mut info =
            json!({"targetId": target, "type": "page", "title": "", "url": "", "attached": true});
        if let Some(o) = opener {
            info["openerId"] = json!(o);
        }
        self.ev(
            None,
            "Target.attachedToTarget",
            json!({"sessionId": session, "targetInfo": info, "waitingForDebugger": waiting}),
        );
    }

    fn dialog(&mut self, session: &str, frame: &str, message: &str) {
        self.ev(
            Some(session),
            "Page.javascriptDialogOpening",
            json!({"url": "https://a.test/", "frameId": frame, "message": message, "type": "confirm"}),
        );
    }

    fn tab_ids(&mut self) -> Vec<String> {
        self.tabs
            .snapshot()
            .tabs
            .iter()
            .map(|t| t.target_id.clone())
            .collect()
    }

    fn current(&self) -> Option<String> {
        self.tabs.current_target().map(|t| t.0.clone())
    }
}

fn accept(dialog_id: Option<&str>) -> DialogRequest {
    DialogRequest {
        action: DialogAction::Accept,
        prompt_text: None,
        dialog_id: dialog_id.map(str::to_owned),
        files: None,
        login: None,
    }
}

#[test]
fn a_popup_of_a_supervised_tab_is_set_up_then_resumed_and_stays_not_current() {
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    // Setup first, the resume last: its replies do not come while it is paused.
    let on_popup: Vec<&str> = h
        .sent
        .iter()
        .filter(|c| c.target == Target::Session(sid("S1")))
        .map(|c| c.method.as_str())
        .collect();
    assert!(on_popup.contains(&"Page.enable"), "{on_popup:?}");
    // Resumed once its documents are paused (HTTP auth): its first one too.
    assert_eq!(on_popup.last(), Some(&"Fetch.enable"), "{on_popup:?}");
    let fetch = h.take("Fetch.enable");
    h.reply(&fetch, Ok(json!({})));
    assert_eq!(
        h.sent.last().map(|c| c.method.as_str()),
        Some("Runtime.runIfWaitingForDebugger")
    );
    assert_eq!(h.tab_ids(), ["T0", "T1"]);
    assert_eq!(h.current().as_deref(), Some("T0"));
    let s = h.tabs.snapshot();
    assert_eq!(s.tabs[1].opener_target_id.as_deref(), Some("T0"));
    assert!(
        h.notices
            .iter()
            .any(|n| matches!(n, Notice::TabOpened { target_id, .. } if target_id == "T1"))
    );
}

#[test]
fn a_page_nobody_supervised_opened_is_resumed_and_let_go() {
    let mut h = H::attached(Options::default());
    h.page_attached("S9", "T9", None, true);
    let resume = h.take("Runtime.runIfWaitingForDebugger");
    assert_eq!(resume.target, Target::Session(sid("S9")));
    let detach = h.take("Target.detachFromTarget");
    assert_eq!(detach.params["sessionId"], "S9");
    assert_eq!(h.tab_ids(), ["T0"]);
}

#[test]
fn regression_our_own_attach_reported_as_an_event_is_not_let_go() {
    let mut h = H::attached(Options::default());
    // Chromium reports Target.attachToTarget's session as an event too.
    h.page_attached("S0", "T0", None, false);
    assert!(
        !h.methods().contains(&"Target.detachFromTarget".to_owned()),
        "{:?}",
        h.methods()
    );
    // Browser-level auto-attach reports the tab again with another session: that one goes.
    h.page_attached("S0b", "T0", None, false);
    assert_eq!(h.take("Target.detachFromTarget").params["sessionId"], "S0b");
    assert_eq!(
        h.tabs.page_session(None, false).unwrap(),
        sid("S0"),
        "still on our own session"
    );
}

#[test]
fn a_created_tab_attached_before_the_create_replies_is_held_then_adopted() {
    let mut h = H::attached(Options::default());
    h.tabs.send_agent(
        7,
        Target::Browser,
        "Target.createTarget",
        json!({"url": "about:blank"}),
        std::time::Duration::from_secs(5),
    );
    h.pump();
    let create = h.take("Target.createTarget");
    // Chromium: the new page's attach comes before the reply.
    h.page_attached("S2", "T2", None, true);
    assert!(
        h.sent.is_empty(),
        "held, neither set up nor let go: {:?}",
        h.methods()
    );
    h.reply(&create, Ok(json!({"targetId": "T2"})));
    assert_eq!(h.tab_ids(), ["T0", "T2"]);
    assert!(h.methods().contains(&"Page.enable".to_owned()));
}

/// Found by the `state_events` fuzz target: a page with no opener attached
/// while the agent's create was in flight (held), then was reported again
/// as a popup of a supervised tab (adopted). When the create's reply named
/// it, its held report was adopted too: one page, two tabs.
#[test]
fn regression_fuzz_a_held_page_adopted_meanwhile_is_not_adopted_twice() {
    let mut h = H::attached(Options::default());
    h.tabs.send_agent(
        7,
        Target::Browser,
        "Target.createTarget",
        json!({"url": "about:blank"}),
        std::time::Duration::from_secs(5),
    );
    h.pump();
    let create = h.take("Target.createTarget");
    h.page_attached("S1", "T1", None, true);
    h.page_attached("S1", "T1", Some("T0"), false);
    assert_eq!(h.tab_ids(), ["T0", "T1"]);
    h.reply(&create, Ok(json!({"targetId": "T1"})));
    assert_eq!(h.tab_ids(), ["T0", "T1"], "one page, one tab");
    assert!(
        !h.methods().contains(&"Target.detachFromTarget".to_owned()),
        "the tab's own session is kept: {:?}",
        h.methods()
    );
}

#[test]
fn a_created_tab_attached_after_the_create_replies_is_adopted() {
    let mut h = H::attached(Options::default());
    h.tabs.send_agent(
        7,
        Target::Browser,
        "Target.createTarget",
        json!({}),
        std::time::Duration::from_secs(5),
    );
    h.pump();
    let create = h.take("Target.createTarget");
    h.reply(&create, Ok(json!({"targetId": "T2"})));
    h.page_attached("S2", "T2", None, true);
    assert_eq!(h.tab_ids(), ["T0", "T2"]);
}

#[test]
fn pages_past_max_tabs_are_let_go_and_the_snapshot_says_truncated() {
    let mut h = H::attached(Options {
        max_tabs: 3,
        ..Options::default()
    });
    for i in 1..=5 {
        h.page_attached(&format!("S{i}"), &format!("T{i}"), Some("T0"), true);
    }
    assert_eq!(h.tab_ids(), ["T0", "T1", "T2"]);
    assert!(h.tabs.snapshot().tabs_truncated);
    let let_go: Vec<String> = h
        .sent
        .iter()
        .filter(|c| c.method == "Target.detachFromTarget")
        .map(|c| c.params["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(let_go, ["S3", "S4", "S5"]);
}

/// CI (issue 13): resumed right after its Fetch.enable was sent, a popup's
/// first document was fetched under load before interception took effect.
#[test]
fn under_a_navigation_policy_a_popup_is_resumed_once_its_fetch_enable_replied() {
    let mut h = H::attached(Options {
        navigation: NavigationPolicy::new(&[] as &[&str], &["http://b.test"], false).unwrap(),
        ..Options::default()
    });
    h.page_attached("S1", "T1", Some("T0"), true);
    assert_eq!(h.tab_ids(), ["T0", "T1"]);
    let resumed = |h: &H| {
        h.sent.iter().any(|c| {
            c.method == "Runtime.runIfWaitingForDebugger" && c.target == Target::Session(sid("S1"))
        })
    };
    assert!(!resumed(&h), "{:?}", h.methods());
    let fetch = h.take("Fetch.enable");
    h.reply(&fetch, Ok(json!({})));
    assert!(resumed(&h), "{:?}", h.methods());
}

/// Review (issue 13): a page let go loads what the policy refuses.
#[test]
fn regression_under_a_navigation_policy_pages_past_max_tabs_are_closed_not_let_go() {
    let mut h = H::attached(Options {
        max_tabs: 1,
        navigation: NavigationPolicy::new(&[] as &[&str], &["http://b.test"], false).unwrap(),
        ..Options::default()
    });
    h.page_attached("S1", "T1", Some("T0"), true);
    assert_eq!(h.tab_ids(), ["T0"]);
    assert!(h.tabs.snapshot().tabs_truncated);
    let on_s1 = |h: &H| -> Vec<String> {
        h.sent
            .iter()
            .filter(|c| c.target == Target::Session(sid("S1")))
            .map(|c| c.method.clone())
            .collect()
    };
    // Its document requests paused, then resumed; not supervised.
    assert_eq!(
        on_s1(&h),
        ["Fetch.enable", "Runtime.runIfWaitingForDebugger"]
    );
    assert!(!h.methods().iter().any(|m| m == "Target.closeTarget"));
    // Its first document request is failed, then it is closed.
    h.ev(
        Some("S1"),
        "Fetch.requestPaused",
        json!({"requestId": "r1", "resourceType": "Document",
               "request": {"url": "http://b.test/x", "method": "GET", "headers": {}}}),
    );
    let failed = h.take("Fetch.failRequest");
    assert_eq!(
        failed.params,
        json!({"requestId": "r1", "errorReason": "BlockedByClient"})
    );
    let closed = h.take("Target.closeTarget");
    assert_eq!(closed.params, json!({"targetId": "T1"}));
}

/// Issue 28, defect 5: a popup past `max_tabs` under a navigation policy
/// that asks for no document (an `about:blank` `window.open`) stayed open
/// and in the closing list forever. It is closed once the grace passes.
#[test]
fn regression_28_5_a_page_past_max_tabs_that_asks_for_no_document_is_closed_anyway() {
    let mut h = H::attached(Options {
        max_tabs: 1,
        navigation: NavigationPolicy::new(&[] as &[&str], &["http://b.test"], false).unwrap(),
        ..Options::default()
    });
    h.page_attached("S1", "T1", Some("T0"), true);
    assert!(!h.methods().iter().any(|m| m == "Target.closeTarget"));
    let at = h
        .tabs
        .poll_timeout()
        .expect("a wakeup for the page to close");
    assert!(at <= h.now.instant + CLOSING_GRACE, "{at:?}");
    h.now = h.now.after(CLOSING_GRACE);
    h.tabs.handle_timeout(h.now);
    h.pump();
    let closed = h.take("Target.closeTarget");
    assert_eq!(closed.params, json!({"targetId": "T1"}));
    assert_eq!(h.tabs.poll_timeout(), None, "nothing else waits");
}

#[test]
fn dialogs_of_all_tabs_share_one_list_with_unique_ids_and_answer_on_their_own_session() {
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    h.answer_all();
    h.dialog("S0", "T0", "in the opener");
    h.dialog("S1", "T1", "in the popup");
    let s = h.tabs.snapshot();
    let ids: Vec<(&str, Option<&str>)> = s
        .pending_dialogs
        .iter()
        .map(|d| (d.id.as_str(), d.target_id.as_deref()))
        .collect();
    assert_eq!(ids, [("d-1", Some("T0")), ("d-2", Some("T1"))]);
    assert_eq!(s.tabs[1].pending_dialogs, 1);
    assert!(matches!(
        h.tabs.answer_dialog_as(accept(None), 1, ClosedBy::Agent, h.now),
        Err(DialogError::Ambiguous { candidates }) if candidates.len() == 2
    ));
    h.tabs
        .answer_dialog_as(accept(Some("d-2")), 1, ClosedBy::Agent, h.now)
        .unwrap();
    h.pump();
    let answer = h.take("Page.handleJavaScriptDialog");
    assert_eq!(
        answer.target,
        Target::Session(sid("S1")),
        "on the popup's page session"
    );
    assert!(matches!(
        h.tabs.answer_dialog_as(accept(Some("d-9")), 2, ClosedBy::Agent, h.now),
        Err(DialogError::UnknownId { known, .. }) if known == ["d-1", "d-2"]
    ));
}

/// Issue 44 (F2): an answer to a dialog that closed moments before said
/// "unknown dialog_id"; it says how and when it closed.
#[test]
fn regression_44_an_answer_to_a_dialog_just_closed_says_how_it_closed() {
    let mut h = H::attached(Options::default());
    h.dialog("S0", "T0", "sure?");
    h.ev(
        Some("S0"),
        "Page.javascriptDialogClosed",
        json!({"frameId": "T0", "result": false, "userInput": ""}),
    );
    h.now.unix_s += 0.5;
    let e = h
        .tabs
        .answer_dialog_as(accept(Some("d-1")), 1, ClosedBy::Agent, h.now)
        .unwrap_err();
    assert_eq!(
        e,
        DialogError::AlreadyClosed {
            id: "d-1".into(),
            closed_by: ClosedBy::Remote,
            closed_at: 1_700_000_000.0,
            before_s: 0.5,
        }
    );
    let text = e.to_string();
    assert!(
        text.contains("closed_by: remote")
            && text.contains("0.5 s before")
            && !text.contains("unknown"),
        "{text}"
    );
    h.pump();
    assert!(
        !h.methods()
            .iter()
            .any(|m| m == "Page.handleJavaScriptDialog"),
        "nothing is sent"
    );
    // An id never given is still unknown.
    assert!(matches!(
        h.tabs
            .answer_dialog_as(accept(Some("d-7")), 2, ClosedBy::Agent, h.now),
        Err(DialogError::UnknownId { .. })
    ));
}

/// Issue 44: a popup is `""` until its first commit; once its first
/// navigation starts, its tab says where it is going.
#[test]
fn regression_44_a_popup_shows_the_url_it_is_loading_before_it_commits() {
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    // Nothing committed yet: its frame tree says "".
    while !h.sent.is_empty() {
        let c = h.sent.remove(0);
        let reply = match c.purpose {
            Purpose::FrameTree => {
                json!({"frameTree": {"frame": {"id": "T1", "url": "", "securityOrigin": "://"}}})
            }
            _ => json!({}),
        };
        h.reply(&c, Ok(reply));
    }
    let url = |h: &mut H| h.tabs.snapshot().tabs[1].url.to_string();
    assert_eq!(url(&mut h), "");
    h.ev(
        Some("S1"),
        "Page.frameStartedNavigating",
        json!({"frameId": "T1", "url": "https://a.test/late", "loaderId": "L1", "navigationType": "differentDocument"}),
    );
    assert_eq!(url(&mut h), "https://a.test/late");
    h.ev(
        Some("S1"),
        "Page.frameNavigated",
        json!({"frame": {"id": "T1", "loaderId": "L1", "url": "https://a.test/landed", "securityOrigin": "https://a.test", "mimeType": "text/html"}, "type": "Navigation"}),
    );
    assert_eq!(url(&mut h), "https://a.test/landed", "the commit wins");
}

#[test]
fn the_current_tab_closing_makes_its_opener_current_and_the_last_one_opens_a_blank_tab() {
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    h.page_attached("S2", "T2", None, true); // not ours: let go
    h.answer_all();
    h.tabs.select("T1").unwrap();
    h.ev(None, "Target.targetDestroyed", json!({"targetId": "T1"}));
    assert_eq!(h.current().as_deref(), Some("T0"));
    assert!(h.notices.iter().any(|n| matches!(n,
        Notice::TabClosed { target_id, current_target_id } if target_id == "T1" && current_target_id.as_deref() == Some("T0"))));
    h.ev(None, "Target.targetDestroyed", json!({"targetId": "T0"}));
    assert!(h.tab_ids().is_empty());
    let create = h.take("Target.createTarget");
    assert_eq!(create.purpose, Purpose::NewTab);
    h.page_attached("S3", "T3", None, true);
    h.reply(&create, Ok(json!({"targetId": "T3"})));
    assert_eq!(h.tab_ids(), ["T3"]);
    assert_eq!(h.current().as_deref(), Some("T3"));
    assert!(matches!(
        h.tabs.select("T1"),
        Err(RouteError::UnknownTab { .. })
    ));
}

#[test]
fn review_closing_the_only_ever_current_tab_makes_its_popup_current() {
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    h.answer_all();
    h.ev(None, "Target.targetDestroyed", json!({"targetId": "T0"}));
    assert_eq!(
        h.current().as_deref(),
        Some("T1"),
        "while a tab is open, one is current"
    );
    assert_eq!(h.tabs.page_session(None, false).unwrap(), sid("S1"));
}

#[test]
fn a_crashed_tab_closes_its_dialogs_refuses_calls_and_a_navigation_revives_it() {
    let mut h = H::attached(Options::default());
    h.dialog("S0", "T0", "before the crash");
    h.ev(Some("S0"), "Inspector.targetCrashed", json!({}));
    let s = h.tabs.snapshot();
    assert!(s.tabs[0].crashed);
    assert!(s.pending_dialogs.is_empty());
    assert_eq!(s.recent_dialogs[0].closed_by, ClosedBy::Remote);
    assert!(matches!(
        h.tabs.page_session(None, false),
        Err(RouteError::Crashed { target_id }) if target_id == "T0"
    ));
    assert_eq!(
        h.tabs.page_session(None, true).unwrap(),
        sid("S0"),
        "a navigation may go"
    );
    h.ev(
        Some("S0"),
        "Page.frameNavigated",
        json!({"frame": {"id": "T0", "loaderId": "L2", "url": "https://a.test/", "securityOrigin": "https://a.test", "mimeType": "text/html"}}),
    );
    assert!(!h.tabs.snapshot().tabs[0].crashed);
    assert!(h.tabs.page_session(None, false).is_ok());
    // The soak's case: crashed, then its reload heard only as a load (a
    // page re-attached after a reconnect hears no frameNavigated of it).
    h.ev(Some("S0"), "Inspector.targetCrashed", json!({}));
    assert!(h.tabs.snapshot().tabs[0].crashed);
    h.ev(Some("S0"), "Page.loadEventFired", json!({"timestamp": 1.0}));
    assert!(
        !h.tabs.snapshot().tabs[0].crashed,
        "a load is a live renderer"
    );
}

#[test]
fn after_a_reconnect_auto_attach_brings_back_every_tab_and_drops_the_ones_gone() {
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    h.page_attached("S2", "T2", Some("T0"), true);
    h.answer_all();
    h.dialog("S1", "T1", "kept across the reconnect");
    h.tabs.connection_lost();
    h.pump();
    // The driver re-attaches the current tab, then auto-attach reports the rest.
    h.tabs.attach_page(
        TargetId::from("T0"),
        sid("N0"),
        "https://a.test/",
        "",
        h.now,
    );
    h.pump();
    let i = h
        .sent
        .iter()
        .position(|c| c.method == "Target.setAutoAttach" && c.target == Target::Browser)
        .expect("browser-level auto-attach again");
    let auto = h.sent.remove(i);
    assert_eq!(auto.purpose, Purpose::TabsAutoAttach);
    h.page_attached("N1", "T1", Some("T0"), false); // T2 closed meanwhile
    h.reply(&auto, Ok(json!({})));
    assert_eq!(h.tab_ids(), ["T0", "T1"]);
    assert_eq!(h.tabs.page_session(Some("T1"), false).unwrap(), sid("N1"));
    let s = h.tabs.snapshot();
    assert_eq!(
        s.pending_dialogs.len(),
        1,
        "the popup's dialog is still pending"
    );
    h.tabs
        .answer_dialog_as(accept(None), 3, ClosedBy::Agent, h.now)
        .unwrap();
    h.pump();
    assert_eq!(
        h.take("Page.handleJavaScriptDialog").target,
        Target::Session(sid("N1")),
        "answered on the popup's new session"
    );
}

/// The `title` bug class, against the shared strings: a snapshot shares an
/// unchanged URL or title with the one before (and the supervisor compares
/// them by address), so a change must still show at once, in `url`/`title`
/// and in every tab's entry, also when it goes back to an earlier value.
#[test]
fn a_title_or_url_that_changes_shows_in_the_next_snapshot_even_back_to_an_old_value() {
    use cdp_supervisor::supervisor::snapshot::ArcStr;
    let mut h = H::attached(Options::default());
    h.page_attached("S1", "T1", Some("T0"), true);
    h.answer_all();
    let title = |h: &mut H, target: &str, title: &str| {
        h.ev(
            None,
            "Target.targetInfoChanged",
            json!({"targetInfo": {"targetId": target, "type": "page", "title": title, "url": "https://a.test/", "attached": true}}),
        );
    };
    let navigated = |h: &mut H, url: &str| {
        h.ev(
            Some("S0"),
            "Page.frameNavigated",
            json!({"frame": {"id": "T0", "loaderId": url, "url": url, "securityOrigin": "https://a.test", "mimeType": "text/html"}}),
        );
    };
    let shown = |h: &mut H| {
        let s = h.tabs.snapshot();
        let tabs: Vec<(String, String)> = s
            .tabs
            .iter()
            .map(|t| (t.url.to_string(), t.title.to_string()))
            .collect();
        (s.url.to_string(), s.title.to_string(), tabs)
    };
    let a_test = |path: &str| format!("https://a.test/{path}");

    title(&mut h, "T0", "A");
    let first = h.tabs.snapshot();
    assert_eq!(
        (first.title.as_str(), first.tabs[0].title.as_str()),
        ("A", "A")
    );
    // Unchanged, and the same title heard again: the very same strings.
    title(&mut h, "T0", "A");
    let again = h.tabs.snapshot();
    assert!(ArcStr::ptr_eq(&first.title, &again.title));
    assert!(ArcStr::ptr_eq(&first.url, &again.url));
    assert!(std::sync::Arc::ptr_eq(&first.tabs[0], &again.tabs[0]));

    title(&mut h, "T0", "B");
    assert_eq!(shown(&mut h).1, "B");
    assert_eq!(shown(&mut h).2[0].1, "B");
    title(&mut h, "T0", "A");
    let (_, t, tabs) = shown(&mut h);
    assert_eq!(
        (t.as_str(), tabs[0].1.as_str()),
        ("A", "A"),
        "back to an old title"
    );

    navigated(&mut h, &a_test("one"));
    navigated(&mut h, &a_test("two"));
    let (url, _, tabs) = shown(&mut h);
    assert_eq!(
        (url.as_str(), tabs[0].0.as_str()),
        (&*a_test("two"), &*a_test("two"))
    );
    navigated(&mut h, &a_test("one"));
    let (url, _, tabs) = shown(&mut h);
    assert_eq!(
        (url.as_str(), tabs[0].0.as_str()),
        (&*a_test("one"), &*a_test("one")),
        "back to an old URL"
    );

    // A tab that is not current: its own entry follows it.
    title(&mut h, "T1", "popup");
    let (_, t, tabs) = shown(&mut h);
    assert_eq!((t.as_str(), tabs[1].1.as_str()), ("A", "popup"));
    title(&mut h, "T1", "popup 2");
    assert_eq!(shown(&mut h).2[1].1, "popup 2");
}

/// Issue 28, defect 8: the reply to an agent's command on a tab that had
/// already left the closed-tabs list was dropped: no outcome, a driver
/// entry leaked, and the caller got a false timeout. Every command the
/// coordinator emits gets its one outcome, whatever happened to its tab.
#[test]
fn regression_28_8_a_reply_for_a_tab_long_closed_still_reaches_the_agent() {
    let mut h = H::attached(Options {
        max_tabs: 20,
        ..Options::default()
    });
    let n = cdp_supervisor::supervisor::state::CLOSED_TABS_KEPT + 1;
    for i in 1..=n {
        h.page_attached(&format!("S{i}"), &format!("T{i}"), Some("T0"), true);
    }
    h.answer_all();
    h.tabs.send_agent(
        7,
        Target::Session(sid("S1")),
        "Runtime.evaluate",
        json!({"expression": "1"}),
        std::time::Duration::from_secs(30),
    );
    let mut call = None;
    while let Some(o) = h.tabs.poll_output() {
        if let Output::Send(c) = o
            && c.purpose == (Purpose::Agent { call: 7 })
        {
            call = Some(*c);
        }
    }
    let call = call.expect("the agent's command is sent");
    for i in 1..=n {
        h.ev(
            None,
            "Target.targetDestroyed",
            json!({"targetId": format!("T{i}")}),
        );
    }
    h.tabs.on_reply(
        &call.target,
        call.tab,
        call.purpose.clone(),
        Ok(json!({"result": {"type": "number", "value": 1}})),
        h.now,
    );
    let mut replies = 0;
    while let Some(o) = h.tabs.poll_output() {
        if matches!(o, Output::AgentReply { call: 7, .. }) {
            replies += 1;
        }
    }
    assert_eq!(replies, 1, "the agent's reply was dropped");
}

/// Found by the `state_events` fuzz target: as defect 8 for a command,
/// for a dialog answer. The agent answered a popup's dialog, the popup
/// closed, and more tabs closed before the answer's reply came: its tab
/// had left the closed-tabs list, the reply was dropped, and the answer
/// never had its outcome (the caller waited out its deadline).
#[test]
fn regression_fuzz_an_answer_for_a_tab_long_closed_still_gets_its_outcome() {
    let mut h = H::attached(Options {
        max_tabs: 20,
        ..Options::default()
    });
    h.page_attached("S1", "T1", Some("T0"), true);
    h.answer_all();
    h.dialog("S1", "T1", "Pay 12 EUR?");
    h.tabs
        .answer_dialog_as(accept(None), 9, ClosedBy::Agent, h.now)
        .expect("the popup's dialog is answered");
    h.pump();
    let answer = h.take("Page.handleJavaScriptDialog");
    h.ev(None, "Target.targetDestroyed", json!({"targetId": "T1"}));
    for i in 2..=cdp_supervisor::supervisor::state::CLOSED_TABS_KEPT + 1 {
        h.page_attached(&format!("S{i}"), &format!("T{i}"), Some("T0"), true);
        h.ev(
            None,
            "Target.targetDestroyed",
            json!({"targetId": format!("T{i}")}),
        );
    }
    h.tabs.on_reply(
        &answer.target,
        answer.tab,
        answer.purpose.clone(),
        Ok(json!({})),
        h.now,
    );
    let mut done = Vec::new();
    while let Some(o) = h.tabs.poll_output() {
        if let Output::AnswerDone { ticket: 9, result } = o {
            done.push(*result);
        }
    }
    assert_eq!(done.len(), 1, "the answer's outcome was dropped");
    // Its tab closed it before the answer landed: the answer reached nothing.
    assert!(
        matches!(
            &done[0],
            Err(DialogError::ClosedBefore {
                closed_by: ClosedBy::Remote,
                ..
            })
        ),
        "{:?}",
        done[0]
    );
}

/// Issue 28, defect 10: while a tab is re-attached after a reconnect, a
/// call on it answered "no page is attached", as if the tab were gone.
#[test]
fn regression_28_10_a_tab_being_reattached_says_so() {
    let mut h = H::attached(Options::default());
    h.tabs.connection_lost();
    assert_eq!(
        h.tabs.page_session(None, false),
        Err(RouteError::Reattaching {
            target_id: "T0".into()
        })
    );
    let text = RouteError::Reattaching {
        target_id: "T0".into(),
    }
    .to_string();
    assert!(
        text.contains("re-attached") && text.contains("retry"),
        "{text}"
    );
}

#[test]
fn downloads_are_listed_bounded_and_renamed_once_complete() {
    use cdp_supervisor::supervisor::state::downloads::{DownloadOptions, DownloadState};
    let mut h = H::attached(Options {
        downloads: DownloadOptions {
            dir: Some("/dl".into()),
            max_bytes: 1_000,
            remote: false,
        },
        ..Options::default()
    });
    // Browser-wide, at attach (and again at each re-attach).
    h.tabs.attach_page(
        TargetId::from("T0"),
        sid("S0"),
        "https://a.test/",
        "",
        h.now,
    );
    h.pump();
    let set = h.take("Browser.setDownloadBehavior");
    assert_eq!(set.target, Target::Browser);
    assert_eq!(
        set.params,
        json!({"behavior": "allowAndName", "downloadPath": "/dl", "eventsEnabled": true})
    );
    h.answer_all();
    h.ev(None, "Browser.downloadWillBegin", json!({"frameId": "T0", "guid": "G1", "url": "https://a.test/r.pdf", "suggestedFilename": "../r.pdf"}));
    h.ev(
        None,
        "Browser.downloadProgress",
        json!({"guid": "G1", "totalBytes": 0, "receivedBytes": 600, "state": "inProgress"}),
    );
    let d = (*h.tabs.snapshot().downloads[0]).clone();
    assert_eq!(
        (d.id.as_str(), d.suggested_filename.as_str()),
        ("dl-1", "r.pdf")
    );
    assert_eq!(d.target_id.as_deref(), Some("T0"));
    assert_eq!(d.path.as_deref(), Some("/dl/G1"));
    assert_eq!(d.received_bytes, 600);
    h.ev(
        None,
        "Browser.downloadProgress",
        json!({"guid": "G1", "totalBytes": 900, "receivedBytes": 900, "state": "completed"}),
    );
    assert_eq!(
        h.saves,
        [("dl-1".to_owned(), "/dl/G1".to_owned(), "r.pdf".to_owned())]
    );
    h.tabs.download_saved("dl-1", Ok("/dl/r.pdf".into()));
    let d = (*h.tabs.snapshot().downloads[0]).clone();
    assert_eq!(
        (d.state, d.path.as_deref()),
        (DownloadState::Completed, Some("/dl/r.pdf"))
    );
    // Past max_bytes with no length: canceled, the last figure kept.
    h.ev(None, "Browser.downloadWillBegin", json!({"frameId": "T0", "guid": "G2", "url": "https://a.test/big", "suggestedFilename": "big"}));
    h.ev(
        None,
        "Browser.downloadProgress",
        json!({"guid": "G2", "totalBytes": 0, "receivedBytes": 1_500, "state": "inProgress"}),
    );
    let cancel = h.take("Browser.cancelDownload");
    assert_eq!(
        (cancel.target, cancel.params),
        (Target::Browser, json!({"guid": "G2"}))
    );
    h.ev(
        None,
        "Browser.downloadProgress",
        json!({"guid": "G2", "totalBytes": 0, "receivedBytes": 0, "state": "canceled"}),
    );
    let d = (*h.tabs.snapshot().downloads[1]).clone();
    assert_eq!(
        (d.state, d.received_bytes),
        (DownloadState::Canceled, 1_500)
    );
    assert!(d.note.unwrap().contains("max_bytes"));
    assert_eq!(h.saves.len(), 1, "a canceled file is not renamed");
    // Another client's tab: not ours to list or rename.
    h.ev(
        None,
        "Browser.downloadWillBegin",
        json!({"frameId": "OTHER", "guid": "G9", "url": "u", "suggestedFilename": "theirs"}),
    );
    assert_eq!(h.tabs.snapshot().downloads.len(), 2);
    // The list keeps the last 20.
    for i in 0..25 {
        h.ev(
            None,
            "Browser.downloadWillBegin",
            json!({"guid": format!("N{i}"), "url": "u", "suggestedFilename": "f"}),
        );
    }
    let all = h.tabs.snapshot().downloads;
    assert_eq!(all.len(), 20);
    assert_eq!(all[19].id, "dl-27");
}

/// Issue 44: a download whose bytes are all in and that Chromium has not
/// completed 2 s later (it holds it, e.g. as insecure) says so in a note;
/// one into a remote browser's directory keeps Chromium's name and says
/// where it is.
#[test]
fn regression_44_a_download_all_in_but_not_completed_says_chromium_holds_it() {
    use cdp_supervisor::supervisor::state::downloads::{DownloadOptions, HELD_AFTER};
    let mut h = H::attached(Options {
        downloads: DownloadOptions {
            dir: Some("/tmp/on-the-browser".into()),
            remote: true,
            max_bytes: 1 << 30,
        },
        ..Options::default()
    });
    h.ev(None, "Browser.downloadWillBegin", json!({"frameId": "T0", "guid": "G1", "url": "http://a.test/f", "suggestedFilename": "f.bin"}));
    let d = (*h.tabs.snapshot().downloads[0]).clone();
    assert_eq!(d.path.as_deref(), Some("/tmp/on-the-browser/G1"));
    assert!(
        d.note.as_deref().unwrap().contains("browser's machine"),
        "{d:?}"
    );
    h.ev(
        None,
        "Browser.downloadProgress",
        json!({"guid": "G1", "totalBytes": 900, "receivedBytes": 900, "state": "inProgress"}),
    );
    let at = h.tabs.poll_timeout().expect("a check is due");
    assert_eq!(at, h.now.instant + HELD_AFTER);
    h.now.instant += HELD_AFTER - std::time::Duration::from_millis(1);
    h.tabs.handle_timeout(h.now);
    assert!(
        h.tabs.snapshot().downloads[0]
            .note
            .as_deref()
            .unwrap()
            .contains("browser's machine")
    );
    h.now.instant = at;
    h.tabs.handle_timeout(h.now);
    h.pump();
    let note = h.tabs.snapshot().downloads[0].note.clone().unwrap();
    assert!(
        note.contains("every byte is in (900 bytes)") && note.contains("holds it"),
        "{note}"
    );
    assert_eq!(h.tabs.poll_timeout(), None, "said once");
    // Let through at last: completed, the note no longer says held, and
    // the file is not renamed here (it is not on this machine).
    h.ev(
        None,
        "Browser.downloadProgress",
        json!({"guid": "G1", "totalBytes": 900, "receivedBytes": 900, "state": "completed"}),
    );
    let d = (*h.tabs.snapshot().downloads[0]).clone();
    assert!(
        d.note.as_deref().unwrap().contains("browser's machine"),
        "{d:?}"
    );
    assert!(h.saves.is_empty(), "{:?}", h.saves);
}

/// Issue 44: never `Browser.setDownloadBehavior{behavior:"default"}` (it
/// holds a non-secure origin's download for a person); a core with no
/// directory sends nothing at all.
#[test]
fn regression_44_no_default_download_behavior_is_ever_sent() {
    let mut h = H::attached(Options::default());
    h.tabs.attach_page(
        TargetId::from("T0"),
        sid("S0"),
        "https://a.test/",
        "",
        h.now,
    );
    h.pump();
    assert!(
        !h.methods()
            .iter()
            .any(|m| m == "Browser.setDownloadBehavior"),
        "{:?}",
        h.methods()
    );
}

/// What an action waits for (DESIGN "Tabs": no fixed wait): the navigation
/// the agent's input asked for in a tab is followed to its outcome — a
/// download (Chromium reports `frameStoppedLoading` before
/// `downloadWillBegin`), a parsed document, or nothing (0.5 s after its
/// frame stopped loading with no document). A navigation the page asked
/// for on its own, or one whose document goes to a new tab, is not.
#[test]
fn the_navigation_an_input_asked_for_is_followed_to_its_outcome() {
    use cdp_supervisor::supervisor::state::ActionNavigation;
    let mut h = H::attached(Options::default());
    let action = |h: &mut H| {
        let snap = h.tabs.snapshot();
        snap.tabs[0].action_navigation
    };
    let requested = |h: &mut H, disposition: &str| {
        h.ev(
            Some("S0"),
            "Page.frameRequestedNavigation",
            json!({"frameId": "T0", "reason": "anchorClick", "url": "https://a.test/x", "disposition": disposition}),
        );
    };
    // The agent's input (call `call`), its command taken as sent.
    let input = |h: &mut H, call: u64| {
        h.tabs.send_agent(
            call,
            Target::Session(sid("S0")),
            "Input.dispatchMouseEvent",
            json!({"type": "mouseReleased"}),
            std::time::Duration::from_secs(10),
        );
        h.pump();
        h.take("Input.dispatchMouseEvent")
    };
    // A click on a link: the input, its navigation asked for, its reply.
    let link_clicked = |h: &mut H, call: u64| {
        let c = input(h, call);
        requested(h, "currentTab");
        h.reply(&c, Ok(json!({})));
    };

    requested(&mut h, "currentTab");
    assert_eq!(action(&mut h), None, "the page's own navigation");

    // A link to an attachment: stopped with no document, then the download.
    let c = input(&mut h, 101);
    requested(&mut h, "newTab");
    assert_eq!(action(&mut h), None, "its document goes to a new tab");
    requested(&mut h, "currentTab");
    h.reply(&c, Ok(json!({})));
    let first = ActionNavigation {
        seq: 1,
        settled: false,
    };
    assert_eq!(action(&mut h), Some(first));
    h.ev(
        Some("S0"),
        "Page.frameStoppedLoading",
        json!({"frameId": "T0"}),
    );
    assert_eq!(action(&mut h), Some(first), "a download may follow");
    h.ev(None, "Browser.downloadWillBegin", json!({"frameId": "T0", "guid": "G1", "url": "https://a.test/x", "suggestedFilename": "x.bin"}));
    assert_eq!(
        action(&mut h),
        Some(ActionNavigation {
            seq: 1,
            settled: true
        })
    );
    assert_eq!(h.tabs.snapshot().downloads.len(), 1);

    // A link to a page: committed, then parsed.
    link_clicked(&mut h, 102);
    h.ev(
        Some("S0"),
        "Page.frameNavigated",
        json!({"frame": {"id": "T0", "loaderId": "L2", "url": "https://a.test/next", "securityOrigin": "https://a.test", "mimeType": "text/html"}, "type": "Navigation"}),
    );
    assert_eq!(
        action(&mut h),
        Some(ActionNavigation {
            seq: 2,
            settled: false
        }),
        "committed, not parsed"
    );
    h.ev(
        Some("S0"),
        "Page.lifecycleEvent",
        json!({"frameId": "T0", "loaderId": "L2", "name": "DOMContentLoaded", "timestamp": 1.0}),
    );
    assert_eq!(
        action(&mut h),
        Some(ActionNavigation {
            seq: 2,
            settled: true
        })
    );

    // A link answered 204: stopped with no document and no download.
    link_clicked(&mut h, 103);
    h.ev(
        Some("S0"),
        "Page.frameStoppedLoading",
        json!({"frameId": "T0"}),
    );
    let deadline = h.tabs.poll_timeout().expect("a timer waits for a download");
    assert!(deadline <= h.now.instant + std::time::Duration::from_millis(500));
    h.now.instant = deadline;
    h.tabs.handle_timeout(h.now);
    h.pump();
    assert_eq!(
        action(&mut h),
        Some(ActionNavigation {
            seq: 3,
            settled: true
        })
    );
}

// ---- which dialog interrupts which call (state::calls) -------------------

fn opened(h: &mut H, session: &str, frame: &str, kind: &str) {
    h.ev(
        Some(session),
        "Page.javascriptDialogOpening",
        json!({"url": "https://a.test/", "frameId": frame, "message": "m", "type": kind}),
    );
}

/// Tab T0 current, and T1 a tab the agent opened (no opener): another
/// renderer.
fn two_unrelated_tabs() -> H {
    let mut h = H::attached(Options::default());
    h.tabs.send_agent(
        7,
        Target::Browser,
        "Target.createTarget",
        json!({}),
        std::time::Duration::from_secs(5),
    );
    h.pump();
    let create = h.take("Target.createTarget");
    h.reply(&create, Ok(json!({"targetId": "T1"})));
    h.page_attached("S1", "T1", None, true);
    h.answer_all();
    assert_eq!(h.tab_ids(), ["T0", "T1"]);
    assert_eq!(h.current().as_deref(), Some("T0"));
    h
}

/// Issue 28, defect 4, as the core's rule: a dialog in an unrelated tab
/// neither interrupts a call on the current tab nor keeps its navigation
/// from happening; one in the call's own tab does.
#[test]
fn a_dialog_in_another_tab_interrupts_no_call_and_blocks_no_navigation() {
    let mut h = two_unrelated_tabs();
    let policy = Options::default().policy;
    let start = CallStart::new(&h.tabs.snapshot(), None, false);
    assert!(!start.blocked_at_start());
    assert_eq!(start.tab(), Some("T0"), "pinned at the start");
    opened(&mut h, "S1", "T1", "beforeunload");
    let s = h.tabs.snapshot();
    assert!(!start.interrupted_by_new(&s, &policy));
    assert_eq!(start.at_deadline(&s), AtDeadline::TimedOut);
    assert!(!calls::blocks_navigation(&s, Some("T0")));
    assert!(
        calls::blocks_navigation(&s, Some("T1")),
        "{:?}",
        s.pending_dialogs
    );
    opened(&mut h, "S0", "T0", "alert");
    let s = h.tabs.snapshot();
    assert!(start.interrupted_by_new(&s, &policy));
    assert_eq!(start.at_deadline(&s), AtDeadline::Interrupted);
    // A navigation releases an alert of its own tab: it does not wait on it.
    assert!(!calls::blocks_navigation(&s, Some("T0")));
}

/// A dialog pending when the call starts is not new to it: the call is
/// told of it only after the grace, and only if it still blocks the tab;
/// once it closed, the deadline means "timed out, still queued".
#[test]
fn a_dialog_already_pending_waits_out_the_grace_and_a_closed_one_blocks_nothing() {
    let mut h = two_unrelated_tabs();
    let policy = Options::default().policy;
    opened(&mut h, "S0", "T0", "confirm");
    let start = CallStart::new(&h.tabs.snapshot(), None, false);
    assert!(start.blocked_at_start());
    assert_eq!(start.grace(true), Some(BLOCKED_CALL_GRACE));
    assert_eq!(start.grace(false), None, "only new dialogs count");
    let s = h.tabs.snapshot();
    assert!(!start.interrupted_by_new(&s, &policy));
    assert!(start.still_blocked(&s));
    assert!(start.ran_before_navigation(true));
    assert!(!start.ran_before_navigation(false));
    h.ev(
        Some("S0"),
        "Page.javascriptDialogClosed",
        json!({"frameId": "T0", "result": false, "userInput": ""}),
    );
    let s = h.tabs.snapshot();
    assert!(!start.still_blocked(&s));
    assert_eq!(start.at_deadline(&s), AtDeadline::TimedOut);
}

/// Under an auto policy a dialog is answered the moment it opens: it
/// interrupts no call, unless Chromium would not take the answer.
#[test]
fn a_dialog_the_policy_answers_at_once_interrupts_nothing() {
    let opts = Options {
        policy: DialogPolicies::uniform(DialogPolicy::AutoDismiss),
        ..Options::default()
    };
    let mut h = H::attached(opts.clone());
    let start = CallStart::new(&h.tabs.snapshot(), None, false);
    opened(&mut h, "S0", "T0", "alert");
    let s = h.tabs.snapshot();
    assert!(!start.interrupted_by_new(&s, &opts.policy));
}

/// A call that loads a document (`browser_navigate`) is held by an HTTP
/// challenge of its tab; an iframe's challenge blocks no renderer, and so
/// no other call (the top document's holds the tab's commands too).
#[test]
fn only_a_call_that_loads_is_held_by_an_iframes_http_challenge() {
    let mut h = H::attached(Options::default());
    let policy = Options::default().policy;
    h.ev(
        Some("S0"),
        "Page.frameAttached",
        json!({"frameId": "F1", "parentFrameId": "T0"}),
    );
    let snap = h.tabs.snapshot();
    let evaluate = CallStart::new(&snap, None, false);
    let navigate = CallStart::new(&snap, None, false).loading();
    h.ev(
        Some("S0"),
        "Fetch.authRequired",
        json!({"requestId": "r1", "request": {"url": "https://a.test/login", "method": "GET", "headers": {}},
               "frameId": "F1", "resourceType": "Document",
               "authChallenge": {"source": "Server", "origin": "https://a.test", "scheme": "basic", "realm": "r"}}),
    );
    let s = h.tabs.snapshot();
    assert_eq!(s.pending_dialogs.len(), 1, "{:?}", s.pending_dialogs);
    assert!(navigate.interrupted_by_new(&s, &policy));
    assert!(!evaluate.interrupted_by_new(&s, &policy));
}

/// A beforeunload Chromium will not answer (here one a reconnect
/// orphaned) is released before `browser_navigate` navigates; one it
/// answers is the page asking, and holds the navigation.
#[test]
fn only_an_unanswerable_beforeunload_is_released_before_navigating() {
    let mut h = H::attached(Options::default());
    opened(&mut h, "S0", "T0", "beforeunload");
    let s = h.tabs.snapshot();
    assert!(calls::blocks_navigation(&s, Some("T0")));
    assert!(!calls::stuck_beforeunload(&s, Some("T0")));
    h.tabs
        .answer_dialog_as(accept(None), 1, ClosedBy::Agent, h.now)
        .unwrap();
    h.pump();
    let answer = h.take("Page.handleJavaScriptDialog");
    h.reply(
        &answer,
        Err(ReplyError::Protocol {
            code: -32602,
            message: "No dialog is showing".into(),
            data: None,
        }),
    );
    let s = h.tabs.snapshot();
    assert!(!s.pending_dialogs[0].answerable, "{:?}", s.pending_dialogs);
    assert!(calls::stuck_beforeunload(&s, Some("T0")));
}

// ---- loads a caller waits for (state::loads) ------------------------------

fn lifecycle(h: &mut H, name: &str, loader: &str) {
    h.ev(
        Some("S0"),
        "Page.lifecycleEvent",
        json!({"frameId": "T0", "loaderId": loader, "name": name, "timestamp": 1.0}),
    );
}

fn loaded(h: &mut H) -> Vec<u64> {
    h.pump();
    std::mem::take(&mut h.loads)
}

/// `browser_navigate` waits for its document's load: the load event of
/// that loader ends the wait, and the load of another document does not.
#[test]
fn a_load_waited_for_ends_with_its_own_loaders_load_event() {
    let mut h = H::attached(Options::default());
    let id = h.tabs.await_load(sid("S0"), "L2".into(), h.now);
    assert!(loaded(&mut h).is_empty());
    lifecycle(&mut h, "load", "L1");
    assert!(loaded(&mut h).is_empty(), "another document's load");
    lifecycle(&mut h, "DOMContentLoaded", "L2");
    assert!(loaded(&mut h).is_empty(), "parsed is not loaded");
    lifecycle(&mut h, "load", "L2");
    assert_eq!(loaded(&mut h), [id]);
}

/// The load event and the `Page.navigate` reply cross on the way: a load
/// announced before the caller asks ends the wait at once.
#[test]
fn a_load_announced_before_the_wait_ends_it_at_once() {
    let mut h = H::attached(Options::default());
    lifecycle(&mut h, "load", "L2");
    let id = h.tabs.await_load(sid("S0"), "L2".into(), h.now);
    assert_eq!(loaded(&mut h), [id]);
    assert_eq!(h.tabs.poll_timeout(), None, "nothing left to ask");
}

/// A load whose events we missed is found by asking the page every
/// interval: the top frame shows our loader, then its ready state is
/// `complete`. Until then it is asked again; given up, it is asked no more.
#[test]
fn a_load_whose_events_were_missed_is_found_by_asking_the_page() {
    let mut h = H::attached(Options::default());
    let id = h.tabs.await_load(sid("S0"), "L2".into(), h.now);
    let due = h.tabs.poll_timeout().expect("a question is due");
    assert_eq!(due, h.now.instant + LOAD_CHECK_INTERVAL);
    h.now = h.now.after(LOAD_CHECK_INTERVAL);
    h.tabs.handle_timeout(h.now);
    h.pump();
    let tree = h.take("Page.getFrameTree");
    assert_eq!(tree.purpose, Purpose::LoadTree { load: id });
    assert_eq!(tree.timeout, Some(LOAD_CHECK_TIMEOUT));
    // Still the old document: asked again an interval later.
    h.reply(
        &tree,
        Ok(json!({"frameTree": {"frame": {"id": "T0", "loaderId": "L1"}}})),
    );
    assert!(h.methods().iter().all(|m| m != "Runtime.evaluate"));
    h.now = h.now.after(LOAD_CHECK_INTERVAL);
    h.tabs.handle_timeout(h.now);
    h.pump();
    let tree = h.take("Page.getFrameTree");
    h.reply(
        &tree,
        Ok(json!({"frameTree": {"frame": {"id": "T0", "loaderId": "L2", "url": "https://a.test/quiet"}}})),
    );
    // No commit event came (a page slow to answer Page.enable sends none):
    // the URL is the tree's, so a release would not go to a blank page.
    assert_eq!(h.tabs.snapshot().url.as_str(), "https://a.test/quiet");
    let state = h.take("Runtime.evaluate");
    assert_eq!(state.purpose, Purpose::LoadState { load: id });
    assert!(loaded(&mut h).is_empty(), "not before its ready state");
    h.reply(
        &state,
        Ok(json!({"result": {"type": "string", "value": "complete"}})),
    );
    assert_eq!(loaded(&mut h), [id]);
    let id2 = h.tabs.await_load(sid("S0"), "L3".into(), h.now);
    h.tabs.cancel_load(id2);
    assert_eq!(
        h.tabs.poll_timeout(),
        None,
        "a wait given up is asked no more"
    );
}

/// Issue 41: with a browser context per task, browser-level auto-attach
/// reports every context's pages; another task's — even one whose opener
/// id matched a tab of ours, or one that attaches while a create of ours is
/// in flight — is resumed and let go at once, never adopted or held.
#[test]
fn in_a_context_of_its_own_another_contexts_pages_are_let_go_and_its_own_popups_adopted() {
    let mut h = H::attached(Options::default());
    h.tabs.set_browser_context(Some("C1".into()));
    assert!(h.tabs.in_our_context(Some("C1")));
    assert!(!h.tabs.in_our_context(Some("C2")));
    assert!(
        !h.tabs.in_our_context(None),
        "the default context is not the task's"
    );
    let in_context = |h: &mut H, session: &str, target: &str, opener: Option<&str>, ctx: &str| {
        let mut info = json!({"targetId": target, "type": "page", "title": "", "url": "",
                              "attached": true, "browserContextId": ctx});
        if let Some(o) = opener {
            info["openerId"] = json!(o);
        }
        h.ev(
            None,
            "Target.attachedToTarget",
            json!({"sessionId": session, "targetInfo": info, "waitingForDebugger": true}),
        );
    };
    // Another task's page, even one naming our tab as its opener.
    in_context(&mut h, "S8", "T8", Some("T0"), "C2");
    let resume = h.take("Runtime.runIfWaitingForDebugger");
    assert_eq!(resume.target, Target::Session(sid("S8")));
    let detach = h.take("Target.detachFromTarget");
    assert_eq!(detach.params["sessionId"], "S8");
    assert_eq!(h.tab_ids(), ["T0"]);
    // Our own popup is adopted as before.
    in_context(&mut h, "S1", "T1", Some("T0"), "C1");
    assert_eq!(h.tab_ids(), ["T0", "T1"]);
    // Without a context of its own (isolation: browser) a task adopts by opener.
    h.tabs.set_browser_context(None);
    in_context(&mut h, "S2", "T2", Some("T0"), "C2");
    assert_eq!(h.tab_ids(), ["T0", "T1", "T2"]);
}
