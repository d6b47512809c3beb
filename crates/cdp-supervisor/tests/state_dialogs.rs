//! Dialog rules of the pure state machine, driven by CDP event sequences.
//! No sockets, no Chromium.

mod state_support;

use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::{
    DEFAULT_DIALOG_TIMEOUT, DIALOG_MESSAGE_MAX_CHARS, DialogAction, DialogError, DialogRequest,
    Notice, Options, Output, PAGE_ENABLE_GRACE, Purpose, RECENT_DIALOGS_MAX, RELEASE_REPLY_TIMEOUT,
    Target,
};
use serde_json::json;
use state_support::*;
use std::time::Duration;

use DialogAction::{Accept, Dismiss};
use DialogPolicy::{AutoAccept, AutoDismiss, MustRespond};

#[test]
fn dialog_ids_count_up_from_d_1() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "one");
    h.frame_attached("S1", "F2", "T1");
    h.alert("S1", "F2", "two");
    assert_eq!(h.pending_ids(), ["d-1", "d-2"]);
}

#[test]
fn pending_entry_has_the_spec_fields() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "prompt", "Your name?", "Ada");
    let d = &h.snap().pending_dialogs[0];
    assert_eq!(d.id, "d-1");
    assert_eq!(d.dialog_type, "prompt");
    assert_eq!(d.message, "Your name?");
    assert_eq!(d.default_prompt, "Ada");
    assert_eq!(d.opened_at, h.now.unix_s);
    assert_eq!(d.frame_id.as_deref(), Some("T1"));
    assert!(d.answerable);
    let v = serde_json::to_value(h.snap()).unwrap();
    let p = &v["pending_dialogs"][0];
    for key in [
        "id",
        "type",
        "message",
        "default_prompt",
        "opened_at",
        "frame_id",
    ] {
        assert!(p.get(key).is_some(), "pending dialog lacks {key}: {p}");
    }
    assert_eq!(p["opened_at"], json!(1_700_000_000.0));
}

#[test]
fn dialog_message_is_cut_at_10240_chars() {
    let mut h = H::attached(MustRespond);
    let long: String = "é".repeat(DIALOG_MESSAGE_MAX_CHARS + 500);
    h.alert("S1", "T1", &long);
    let m = &h.snap().pending_dialogs[0].message;
    assert_eq!(m.chars().count(), 10_240);
    let exact = "x".repeat(10_240);
    h.closed("S1", "T1", true, "");
    h.alert("S1", "T1", &exact);
    assert_eq!(h.snap().pending_dialogs[0].message, exact);
}

#[test]
fn regression_1_snapshot_shows_a_confirm_opened_by_a_click_at_once() {
    // The click's own reply never comes while the dialog is open; the snapshot needs none.
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "confirm", "Delete?", "");
    let s = h.snap();
    assert_eq!(s.pending_dialogs.len(), 1);
    assert_eq!(s.pending_dialogs[0].dialog_type, "confirm");
}

#[test]
fn regression_2_alert_while_loading_is_pending_before_the_load_ends() {
    let mut h = H::attached(MustRespond);
    h.frame_navigated("S1", "T1", None, "https://a.test/loading");
    h.alert("S1", "T1", "during load");
    assert_eq!(h.pending_ids(), ["d-1"]);
    assert_eq!(h.snap().url, "https://a.test/loading");
}

// ---- must_respond watchdog -------------------------------------------------

#[test]
fn watchdog_dismisses_at_the_deadline_on_the_reporting_session() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "hi");
    h.drain();
    let deadline = h.st.poll_timeout().expect("watchdog armed");
    assert_eq!(deadline, h.t0.instant + DEFAULT_DIALOG_TIMEOUT);
    // Not a moment early.
    h.advance(DEFAULT_DIALOG_TIMEOUT - Duration::from_millis(1));
    h.st.handle_timeout(h.now);
    assert!(answers(&h.sends()).is_empty());
    h.fire_after(Duration::from_millis(1));
    let cmds = h.sends();
    let a = answers(&cmds);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].target, on("S1"));
    assert_eq!(a[0].params, json!({"accept": false}));
    h.closed("S1", "T1", false, "");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let r = h.recent();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].closed_by, ClosedBy::Watchdog);
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.st.poll_timeout(), None);
}

#[test]
fn watchdog_timeout_is_configurable() {
    let mut h = H::with(Options {
        dialog_timeout: Duration::from_secs(7),
        ..Options::default()
    });
    h.attach_page(&top_tree(&[]));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    h.drain();
    h.alert("S1", "T1", "hi");
    assert_eq!(
        h.st.poll_timeout(),
        Some(h.now.instant + Duration::from_secs(7))
    );
    h.advance(Duration::from_secs(7));
    h.st.handle_timeout(h.now);
    assert_eq!(answers(&h.sends()).len(), 1);
}

#[test]
fn watchdog_dismiss_refused_releases_the_page_by_navigating_to_its_url() {
    let mut h = H::attached(MustRespond);
    h.frame_navigated("S1", "T1", None, "https://a.test/form");
    h.alert("S1", "T1", "stuck");
    h.drain();
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    let cmds = h.sends();
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "{cmds:?}");
    assert_eq!(nav[0].target, on("S1"));
    assert_eq!(nav[0].params, json!({"url": "https://a.test/form"}));
    assert_eq!(nav[0].purpose, Purpose::Release);
    // Free only once Chromium confirms the navigation.
    assert_eq!(h.pending_ids(), ["d-1"]);
    h.reply_ok(
        "S1",
        Purpose::Release,
        json!({"frameId": "T1", "loaderId": "L9"}),
    );
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Watchdog);
}

// ---- auto policies ---------------------------------------------------------

#[test]
fn auto_dismiss_answers_first_and_records_auto_policy() {
    let mut h = H::attached(AutoDismiss);
    h.open("S1", "T1", "confirm", "Sure?", "");
    let outs = h.drain();
    match &outs[0] {
        Output::Send(c) => {
            assert_eq!(c.method, "Page.handleJavaScriptDialog");
            assert_eq!(c.params, json!({"accept": false}));
            assert_eq!(c.target, on("S1"));
        }
        other => panic!("first output is not the answer: {other:?}"),
    }
    h.closed("S1", "T1", false, "");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::AutoPolicy);
    assert_eq!(h.recent()[0].accepted, Some(false));
}

/// DESIGN (config `dialog_policy` per type): each type gets its own policy;
/// the watchdog covers the must_respond types only.
#[test]
fn a_policy_per_type_answers_the_auto_types_and_leaves_the_others_to_the_agent() {
    let mut h = H::with(Options {
        policy: "{alert: auto_accept, confirm: must_respond}"
            .parse()
            .unwrap(),
        dialog_timeout: Duration::from_secs(300),
        ..Options::default()
    });
    h.attach_page(&top_tree(&[]));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    h.drain();
    h.alert("S1", "T1", "auto");
    let cmds = h.sends();
    assert_eq!(answers(&cmds).len(), 1, "the alert is answered at once");
    assert_eq!(answers(&cmds)[0].params, json!({"accept": true}));
    h.closed("S1", "T1", true, "");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    assert_eq!(h.recent()[0].closed_by, ClosedBy::AutoPolicy);
    h.open("S1", "T1", "confirm", "Delete your account?", "");
    assert!(
        answers(&h.sends()).is_empty(),
        "the confirm waits for the agent"
    );
    assert_eq!(h.pending_ids(), ["d-2"]);
    assert_eq!(
        h.st.poll_timeout(),
        Some(h.now.instant + Duration::from_secs(300)),
        "its watchdog is armed"
    );
}

#[test]
fn auto_accept_of_a_prompt_sends_its_default_text() {
    let mut h = H::attached(AutoAccept);
    h.open("S1", "T1", "prompt", "Name?", "Grace");
    let cmds = h.sends();
    assert_eq!(
        answers(&cmds)[0].params,
        json!({"accept": true, "promptText": "Grace"})
    );
}

#[test]
fn regression_6_auto_answered_dialogs_are_cleared() {
    for policy in [AutoDismiss, AutoAccept] {
        let mut h = H::attached(policy);
        for i in 0..3 {
            h.alert("S1", "T1", &format!("n{i}"));
            h.drain();
            // Reply first this time: the closed event may never come (a proxy).
            h.answer_reply("S1", &format!("d-{}", i + 1), Ok(json!({})));
        }
        assert!(h.pending_ids().is_empty(), "{policy:?}");
        assert_eq!(h.answer(Dismiss, None, None, 1), Err(DialogError::NoDialog));
        assert!(
            h.recent()
                .iter()
                .all(|c| c.closed_by == ClosedBy::AutoPolicy)
        );
    }
}

#[test]
fn regression_5_16_an_auto_answer_never_waits_behind_other_output() {
    let mut h = H::attached(AutoDismiss);
    // Lots of unrelated traffic is in flight (frames, console) and not yet drained by the driver.
    h.frame_attached("S1", "F2", "T1");
    h.drain();
    h.alert("S1", "T1", "x");
    let outs = h.drain();
    assert!(
        matches!(&outs[0], Output::Send(c) if c.method == "Page.handleJavaScriptDialog"),
        "{outs:?}"
    );
}

/// Defect 3 (issue 8): an auto answer Chromium refuses left the page frozen
/// for `dialog_timeout_s` (300 s); the old test jumped to "whatever the
/// deadline is" and could not see it.
#[test]
fn regression_auto_answer_refused_releases_the_page_at_once() {
    for policy in [AutoDismiss, AutoAccept] {
        let mut h = H::attached(policy);
        h.alert("S1", "T1", "x");
        h.drain();
        h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
        // No time passes: the release goes out with the refusal.
        let cmds = h.sends();
        let nav = navigations(&cmds);
        assert_eq!(nav.len(), 1, "{policy:?}: {cmds:?}");
        assert_eq!(nav[0].purpose, Purpose::Release);
        h.reply_ok(
            "S1",
            Purpose::Release,
            json!({"frameId": "T1", "loaderId": "L9"}),
        );
        assert!(h.pending_ids().is_empty(), "{policy:?}");
        assert_eq!(h.recent()[0].closed_by, ClosedBy::AutoPolicy, "{policy:?}");
    }
}

// ---- agent answers ---------------------------------------------------------

#[test]
fn agent_accepts_and_dismisses() {
    for (action, accept) in [(Accept, true), (Dismiss, false)] {
        let mut h = H::attached(MustRespond);
        h.open("S1", "T1", "confirm", "Go?", "");
        h.drain();
        h.answer(action, None, None, 9).unwrap();
        let cmds = h.sends();
        assert_eq!(answers(&cmds)[0].params, json!({"accept": accept}));
        // The watchdog does not fire while the agent's answer is in flight.
        h.advance(DEFAULT_DIALOG_TIMEOUT * 2);
        h.st.handle_timeout(h.now);
        assert!(answers(&h.sends()).is_empty());
        h.closed("S1", "T1", accept, "");
        h.answer_reply("S1", "d-1", Ok(json!({})));
        let done = answer_done(&h.drain());
        assert_eq!(done.len(), 1);
        let closed = done[0].1.clone().unwrap();
        assert_eq!(closed.closed_by, ClosedBy::Agent);
        assert_eq!(closed.accepted, Some(accept));
        assert_eq!(h.recent(), vec![closed]);
    }
}

#[test]
fn agent_prompt_text_round_trips() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "prompt", "Name?", "Ada");
    h.answer(Accept, Some("Linus"), None, 1).unwrap();
    let cmds = h.sends();
    assert_eq!(
        answers(&cmds)[0].params,
        json!({"accept": true, "promptText": "Linus"})
    );
    h.closed("S1", "T1", true, "Linus");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let done = answer_done(&h.drain());
    assert_eq!(
        done[0].1.as_ref().unwrap().user_input.as_deref(),
        Some("Linus")
    );
}

#[test]
fn agent_accepting_a_prompt_without_text_sends_the_default() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "prompt", "Name?", "Ada");
    h.answer(Accept, None, None, 1).unwrap();
    assert_eq!(
        answers(&h.sends())[0].params,
        json!({"accept": true, "promptText": "Ada"})
    );
}

#[test]
fn closed_event_before_the_reply_is_still_agent_and_the_answer_finishes() {
    // Chromium's order: javascriptDialogClosed, then the reply.
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "hi");
    h.answer(Accept, None, None, 42).unwrap();
    h.drain();
    h.closed("S1", "T1", true, "");
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Agent);
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let done = answer_done(&h.drain());
    assert_eq!(done.len(), 1, "the agent's answer must finish");
    assert_eq!(done[0].0, 42);
    let closed = done[0].1.clone().unwrap();
    assert_eq!(closed.dialog.id, "d-1");
    assert_eq!(closed.closed_by, ClosedBy::Agent);
    assert_eq!(h.recent().len(), 1);
}

#[test]
fn reply_before_the_closed_event_also_works() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "hi");
    h.answer(Dismiss, None, None, 7).unwrap();
    h.drain();
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let done = answer_done(&h.drain());
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].1.as_ref().unwrap().closed_by, ClosedBy::Agent);
    h.closed("S1", "T1", false, "");
    assert_eq!(h.recent().len(), 1, "recorded once");
    assert!(answer_done(&h.drain()).is_empty());
}

// ---- errors ----------------------------------------------------------------

#[test]
fn answering_with_no_dialog_is_no_dialog() {
    let mut h = H::attached(MustRespond);
    let e = h.answer(Accept, None, None, 1).unwrap_err();
    assert_eq!(e, DialogError::NoDialog);
    assert!(e.to_string().contains("no dialog"));
}

#[test]
fn several_open_without_dialog_id_lists_the_candidates() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "first");
    h.frame_attached("S1", "F2", "T1");
    h.open("S1", "F2", "confirm", "second", "");
    let e = h.answer(Accept, None, None, 1).unwrap_err();
    assert!(matches!(&e, DialogError::Ambiguous { candidates } if candidates.len() == 2));
    let text = e.to_string();
    assert!(text.contains("d-1") && text.contains("d-2"), "{text}");
    assert!(text.contains("dialog_id"), "{text}");
    // With the id it works.
    h.answer(Accept, None, Some("d-2"), 1).unwrap();
}

#[test]
fn unknown_dialog_id_lists_the_known_ones() {
    let mut h = H::attached(MustRespond);
    let e = h.answer(Accept, None, Some("d-9"), 1).unwrap_err();
    assert!(e.to_string().contains("none"), "{e}");
    h.alert("S1", "T1", "x");
    let e = h.answer(Accept, None, Some("d-9"), 1).unwrap_err();
    assert_eq!(
        e,
        DialogError::UnknownId {
            id: "d-9".into(),
            known: vec!["d-1".into()]
        }
    );
    assert!(e.to_string().contains("d-1"));
}

#[test]
fn bad_action_names_the_allowed_ones() {
    let e = DialogAction::parse("ok").unwrap_err();
    assert_eq!(e, DialogError::BadAction("ok".into()));
    assert!(e.to_string().contains("accept, dismiss"));
    assert_eq!(DialogAction::parse("accept"), Ok(Accept));
    assert_eq!(DialogAction::parse("dismiss"), Ok(Dismiss));
}

#[test]
fn answering_twice_is_already_answering() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.answer(Accept, None, None, 1).unwrap();
    assert_eq!(
        h.answer(Dismiss, None, None, 2),
        Err(DialogError::AlreadyAnswering { id: "d-1".into() })
    );
    assert_eq!(answers(&h.sends()).len(), 1);
}

#[test]
fn refused_answer_keeps_the_dialog_pending_and_unanswerable() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.answer(Accept, None, None, 5).unwrap();
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    let done = answer_done(&h.drain());
    let err = done[0].1.clone().unwrap_err();
    assert_eq!(err, DialogError::NotAnswerable { id: "d-1".into() });
    assert!(err.to_string().contains("navigat"), "{err}");
    let p = &h.snap().pending_dialogs;
    assert_eq!(p.len(), 1);
    assert!(!p[0].answerable);
    let v = serde_json::to_value(h.snap()).unwrap();
    assert_eq!(v["pending_dialogs"][0]["answerable"], json!(false));
    assert_eq!(
        h.answer(Dismiss, None, None, 6),
        Err(DialogError::NotAnswerable { id: "d-1".into() })
    );
    // The watchdog still frees the page: it navigates rather than answering again.
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    let cmds = h.sends();
    assert!(answers(&cmds).is_empty());
    assert!(cmds.iter().any(|c| c.method == "Page.navigate"));
}

#[test]
fn answer_timing_out_reports_a_cdp_error_and_keeps_the_dialog_answerable() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.answer(Accept, None, None, 5).unwrap();
    h.drain();
    h.answer_reply("S1", "d-1", Err(timeout_err("Page.handleJavaScriptDialog")));
    let done = answer_done(&h.drain());
    assert!(matches!(done[0].1, Err(DialogError::Cdp { .. })));
    assert!(h.snap().pending_dialogs[0].answerable);
    h.answer(Accept, None, None, 6).unwrap();
}

// ---- who closed it ---------------------------------------------------------

#[test]
fn regression_3_dialog_closed_by_someone_else_is_remote() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.closed("S1", "T1", true, "");
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    assert_eq!(h.st.poll_timeout(), None, "no watchdog left behind");
}

#[test]
fn closed_events_match_by_frame_id_not_first_pending() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.alert("S1", "T1", "main");
    h.alert("S1", "F2", "child");
    h.closed("S1", "F2", false, "");
    assert_eq!(h.pending_ids(), ["d-1"]);
    assert_eq!(h.recent()[0].dialog.id, "d-2");
}

#[test]
fn regression_4_another_client_answers_first() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.answer(Accept, None, None, 3).unwrap();
    h.drain();
    // The other client dismissed it; our accept then finds nothing.
    h.closed("S1", "T1", false, "");
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    let outs = h.drain();
    let done = answer_done(&outs);
    assert_eq!(done.len(), 1, "the agent hears back: {outs:?}");
    // The dismissal contradicts our accept: our answer did not close it.
    assert!(
        matches!(
            done[0].1,
            Err(DialogError::ClosedBefore {
                closed_by: ClosedBy::Remote,
                ..
            })
        ),
        "{done:?}"
    );
    let r = h.recent();
    assert_eq!(r.len(), 1, "recorded once");
    assert_eq!(r[0].closed_by, ClosedBy::Remote);
    assert_eq!(r[0].accepted, Some(false));
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.st.poll_timeout(), None);
}

#[test]
fn regression_4_other_client_closes_before_we_answer() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.closed("S1", "T1", true, "");
    assert_eq!(h.answer(Accept, None, None, 1), Err(DialogError::NoDialog));
    // A late duplicate closed event changes nothing.
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent().len(), 1);
}

// ---- OOPIF dialogs ---------------------------------------------------------

#[test]
fn oopif_dialog_is_answered_on_the_session_that_reported_it() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    // Chromium reports it on the top session, with the OOPIF's frameId.
    h.alert("S1", "F2", "from b.test");
    assert_eq!(h.snap().pending_dialogs[0].frame_id.as_deref(), Some("F2"));
    h.answer(Accept, None, None, 1).unwrap();
    assert_eq!(answers(&h.sends())[0].target, on("S1"));
}

#[test]
fn regression_8_one_dialog_reported_by_top_and_child_is_listed_once() {
    for order in [["S1", "S2"], ["S2", "S1"]] {
        let mut h = H::attached(MustRespond);
        h.attach_oopif("S1", "F2", "S2", "https://b.test/");
        h.drain();
        for s in order {
            h.alert(s, "F2", "once");
        }
        assert_eq!(h.pending_ids(), ["d-1"], "{order:?}");
        h.answer(Accept, None, None, 1).unwrap();
        assert_eq!(answers(&h.sends())[0].target, on("S1"), "{order:?}");
    }
}

// ---- navigation and detach -------------------------------------------------

#[test]
fn frame_navigating_away_ends_its_dialog_as_remote() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.alert("S1", "F2", "child");
    h.alert("S1", "T1", "main");
    h.frame_navigated("S1", "F2", Some("T1"), "https://a.test/other");
    assert_eq!(h.pending_ids(), ["d-2"]);
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

#[test]
fn frame_detached_ends_its_dialog() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.alert("S1", "F2", "child");
    h.frame_detached("S1", "F2", "remove");
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.st.poll_timeout(), None);
}

#[test]
fn agent_navigation_attributes_the_closed_dialog_to_the_agent() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "main");
    h.agent(
        1,
        "S1",
        "Page.navigate",
        json!({"url": "https://a.test/next"}),
    );
    h.frame_navigated("S1", "T1", None, "https://a.test/next");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Agent);
    // The attribution ends with that navigation: a later close is remote.
    h.alert("S1", "T1", "again");
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent()[1].closed_by, ClosedBy::Remote);
}

#[test]
fn agent_navigation_closing_a_dialog_by_its_closed_event_is_agent() {
    // beforeunload: Chromium answers nothing until it is closed; the navigation closes it.
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "beforeunload", "", "");
    h.agent(
        1,
        "S1",
        "Page.navigate",
        json!({"url": "https://a.test/next"}),
    );
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Agent);
}

#[test]
fn page_session_detaching_closes_its_dialogs_remote_and_clears_frames() {
    let mut h = H::attached(MustRespond);
    h.frame_attached("S1", "F2", "T1");
    h.alert("S1", "T1", "x");
    h.drain();
    h.detach_target(None, "S1", "T1");
    let outs = h.drain();
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    assert!(h.snap().frame_tree.top.is_none());
    assert!(h.child_ids().is_empty());
    assert!(
        notices(&outs)
            .iter()
            .any(|n| matches!(n, Notice::PageGone { .. }))
    );
    assert_eq!(h.st.poll_timeout(), None);
}

#[test]
fn events_for_unknown_sessions_are_ignored() {
    let mut h = H::attached(MustRespond);
    h.alert("S-OTHER", "X1", "not ours");
    h.frame_attached("S-OTHER", "X2", "X1");
    h.frame_navigated("S-OTHER", "X1", None, "https://evil.test/");
    let d = json!({"url": "", "frameId": "X1", "message": "m", "type": "alert"});
    h.ev(None, "Page.javascriptDialogOpening", &d.to_string());
    assert!(h.pending_ids().is_empty());
    assert!(h.child_ids().is_empty());
    assert_eq!(h.snap().url, PAGE_URL);
}

#[test]
fn regression_14_only_the_attached_tab_is_watched() {
    let mut h = H::attached(MustRespond);
    let info = |id: &str, title: &str| {
        json!({"targetInfo": {"targetId": id, "type": "page", "title": title, "url": "https://x.test/", "attached": false}})
            .to_string()
    };
    h.ev(None, "Target.targetInfoChanged", &info("T9", "Other tab"));
    assert_eq!(h.snap().title, "");
    h.ev(None, "Target.targetInfoChanged", &info("T1", "Ours"));
    assert_eq!(h.snap().title, "Ours");
    // Another tab being destroyed does not touch ours.
    h.alert("S1", "T1", "x");
    h.ev(None, "Target.targetDestroyed", r#"{"targetId":"T9"}"#);
    assert_eq!(h.pending_ids(), ["d-1"]);
}

// ---- rings -----------------------------------------------------------------

#[test]
fn recent_dialogs_ring_keeps_20() {
    let mut h = H::attached(MustRespond);
    for i in 0..25 {
        h.alert("S1", "T1", &format!("m{i}"));
        h.closed("S1", "T1", true, "");
    }
    let r = h.recent();
    assert_eq!(r.len(), RECENT_DIALOGS_MAX);
    assert_eq!(r[0].dialog.id, "d-6");
    assert_eq!(r[19].dialog.id, "d-25");
}

// ---- reconnects ------------------------------------------------------------

#[test]
fn regression_13_connection_lost_keeps_dialogs_and_their_watchdogs() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    let before = h.st.poll_timeout();
    h.advance(Duration::from_secs(10));
    h.st.connection_lost();
    assert_eq!(h.pending_ids(), ["d-1"]);
    // Its deadline is kept; it waits for the re-check after the reconnect.
    assert_eq!(h.st.poll_timeout(), None);
    assert!(before.is_some());
    // Re-attached under a new session; Page.enable hangs (the page is blocked) —
    // the known dialog is shown, not an unknown "page_blocked".
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.advance(Duration::from_secs(2));
    h.st.handle_timeout(h.now);
    assert!(!h.snap().page_blocked);
    h.fire_after(Duration::from_secs(288));
    let cmds = h.sends();
    // Still open after the re-check: Chromium will not answer it, so the
    // watchdog releases the page, on the new session.
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "{cmds:?}");
    assert_eq!(nav[0].target, on("S1b"), "released on the new session");
}

/// Issue 28, defect 1: a dialog that closed while the socket was down (the
/// tab navigated by another client) stayed pending; the watchdog then got
/// `-32602` and navigated the user's page to its own URL. The renderer's
/// new `Page.enable` answering proves nothing blocks it.
#[test]
fn regression_28_1_a_dialog_closed_during_a_drop_is_closed_remote_not_released() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.drain();
    h.st.connection_lost();
    // The outage outlasts the watchdog's deadline.
    h.advance(DEFAULT_DIALOG_TIMEOUT + Duration::from_secs(5));
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.st.handle_timeout(h.now);
    let cmds = h.sends();
    assert!(answers(&cmds).is_empty(), "no answer yet: {cmds:?}");
    assert!(navigations(&cmds).is_empty(), "no release yet: {cmds:?}");
    assert_eq!(h.pending_ids(), ["d-1"], "listed until re-checked");
    h.reply_ok(
        "S1b",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[])}),
    );
    h.reply_ok("S1b", Purpose::PageEnable, json!({}));
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    h.advance(Duration::from_secs(60));
    h.st.handle_timeout(h.now);
    let cmds = h.sends();
    assert!(
        answers(&cmds).is_empty() && navigations(&cmds).is_empty(),
        "{cmds:?}"
    );
    assert!(!h.snap().page_blocked);
}

/// Soak (seed 4242): the agent accepted a popup's confirm, the socket was cut
/// before Chromium's reply, and the page received `true`; after the
/// reconnect the re-check found the dialog closed and recorded it
/// `remote`, with no answer. The answer in flight at the drop closed it:
/// `recent_dialogs` says what the page received.
#[test]
fn regression_soak_an_answer_in_flight_at_a_drop_is_what_closed_the_dialog() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "prompt", "name?", "def");
    h.drain();
    h.answer(DialogAction::Accept, Some("typed"), Some("d-1"), 7)
        .unwrap();
    assert_eq!(answers(&h.sends()).len(), 1);
    h.st.connection_lost();
    h.answer_reply("S1", "d-1", Err(lost()));
    let done = answer_done(&h.drain());
    assert!(
        matches!(done.as_slice(), [(7, Err(_))]),
        "the agent is told it may or may not have landed: {done:?}"
    );
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.reply_ok(
        "S1b",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[])}),
    );
    h.reply_ok("S1b", Purpose::PageEnable, json!({}));
    assert!(h.pending_ids().is_empty());
    let r = &h.recent()[0];
    assert_eq!(r.closed_by, ClosedBy::Agent);
    assert_eq!(r.accepted, Some(true));
    assert_eq!(r.user_input.as_deref(), Some("typed"));
}

/// The same, when the connection's own failure of the command reaches the
/// core before the driver has told it the connection dropped (the soak's
/// order: the reply future fails first).
#[test]
fn regression_soak_an_answer_lost_before_the_drop_is_told_is_what_closed_the_dialog() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "prompt", "name?", "def");
    h.drain();
    h.answer(DialogAction::Accept, Some("typed"), Some("d-1"), 7)
        .unwrap();
    h.answer_reply("S1", "d-1", Err(lost()));
    h.st.connection_lost();
    h.drain();
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.reply_ok(
        "S1b",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[])}),
    );
    h.reply_ok("S1b", Purpose::PageEnable, json!({}));
    assert!(h.pending_ids().is_empty());
    let r = &h.recent()[0];
    assert_eq!(r.closed_by, ClosedBy::Agent);
    assert_eq!(r.user_input.as_deref(), Some("typed"));
}

/// The other half: the answer in flight at the drop never arrived (the
/// renderer stays silent after the reconnect), so the dialog stays pending
/// and a later close says nothing of that answer.
#[test]
fn regression_soak_an_answer_lost_at_a_drop_is_forgotten_when_the_dialog_is_still_open() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.drain();
    h.answer(DialogAction::Accept, None, Some("d-1"), 7)
        .unwrap();
    h.st.connection_lost();
    h.answer_reply("S1", "d-1", Err(lost()));
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.fire_after(PAGE_ENABLE_GRACE);
    assert_eq!(h.pending_ids(), ["d-1"], "still open");
    h.closed("S1b", "T1", false, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    assert_eq!(h.recent()[0].accepted, Some(false));
}

/// Issue 28, defect 1, the other half: a dialog still open after the drop
/// (its renderer stays silent) keeps its watchdog, which acts once the
/// re-check has said so.
#[test]
fn regression_28_1_a_dialog_still_open_after_a_drop_keeps_its_watchdog() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.drain();
    h.st.connection_lost();
    h.advance(DEFAULT_DIALOG_TIMEOUT + Duration::from_secs(5));
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(
        !h.snap().pending_dialogs[0].answerable,
        "Chromium answers -32602 for a dialog shown before this session"
    );
    let cmds = h.sends();
    assert!(answers(&cmds).is_empty(), "{cmds:?}");
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "the overdue watchdog releases it: {cmds:?}");
    assert_eq!(nav[0].target, on("S1b"));
}

/// Issue 28, defect 1, in an OOPIF: the OOPIF's own `Page.enable` decides
/// for its dialog; the top's answer says nothing about it.
#[test]
fn regression_28_1_an_oopif_dialog_is_rechecked_by_the_oopif_session() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.alert("S1", "F2", "in the oopif");
    h.drain();
    h.st.connection_lost();
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.reply_ok(
        "S1b",
        Purpose::FrameTree,
        json!({"frameTree": top_tree(&[])}),
    );
    let p = json!({
        "sessionId": "S2b",
        "targetInfo": {"targetId": "F2", "type": "iframe", "title": "", "url": "https://b.test/",
                       "attached": true, "canAccessOpener": false, "browserContextId": "B1"},
        "waitingForDebugger": true
    });
    h.ev(Some("S1b"), "Target.attachedToTarget", &p.to_string());
    h.drain();
    h.reply_ok("S1b", Purpose::PageEnable, json!({}));
    assert_eq!(
        h.pending_ids(),
        ["d-1"],
        "the top being free says nothing of the OOPIF"
    );
    h.reply_ok("S2b", Purpose::PageEnable, json!({}));
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

/// Soak (issue 28, defect 12 after a drop): a beforeunload in the top frame
/// when the socket dropped is orphaned by Chromium. The new session's
/// `Page.enable` never answers, `handleJavaScriptDialog` answers `-32602`,
/// and `Page.navigate` (also `reload`, `stopLoading`, `Page.close`) frees
/// nothing: the navigation waits on the beforeunload forever. The watchdog
/// sent that navigate anyway, waited for its deadline, and the page stayed
/// frozen ~30 s past `dialog_timeout_s`. With no OOPIF to navigate, only
/// closing the tab (`Target.closeTarget`) frees it, at the watchdog's time.
#[test]
fn regression_soak_a_beforeunload_kept_across_a_drop_is_released_by_closing_its_tab() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "beforeunload", "", "");
    h.drain();
    h.st.connection_lost();
    let outage = Duration::from_secs(3);
    h.advance(outage);
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    // Page.enable stays unanswered: still open, and Chromium will not answer it.
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(!h.snap().pending_dialogs[0].answerable);
    assert!(h.sends().is_empty(), "the watchdog's time has not come");
    h.fire_after(DEFAULT_DIALOG_TIMEOUT - outage - PAGE_ENABLE_GRACE);
    let cmds = h.sends();
    assert!(answers(&cmds).is_empty(), "Chromium refuses it: {cmds:?}");
    assert!(
        navigations(&cmds).is_empty(),
        "a navigation of a frame held by a beforeunload never answers: {cmds:?}"
    );
    let close = tab_closes(&cmds);
    assert_eq!(close.len(), 1, "{cmds:?}");
    assert_eq!(close[0].target, Target::Browser);
    assert_eq!(close[0].params["targetId"], "T1");
    assert_eq!(close[0].purpose, Purpose::Release);
    // Chromium detaches the page's session before its reply.
    h.ev(
        None,
        "Target.detachedFromTarget",
        r#"{"sessionId": "S1b", "targetId": "T1"}"#,
    );
    assert!(h.pending_ids().is_empty());
    assert_eq!(
        h.recent()[0].closed_by,
        ClosedBy::Watchdog,
        "our close released it, not someone else"
    );
    h.reply(None, Purpose::Release, Ok(json!({"success": true})));
    assert_eq!(h.recent().len(), 1);
    assert_eq!(h.st.poll_timeout(), None, "nothing left to do");
}

/// Issue 44: an agent answering the orphaned beforeunload above was told
/// "only navigating the page releases it", but its page answers no
/// navigation: the release closes the tab, and the error says so.
#[test]
fn regression_44_an_orphaned_beforeunload_says_only_closing_its_tab_releases_it() {
    let mut h = H::attached(MustRespond);
    h.open("S1", "T1", "beforeunload", "", "");
    h.drain();
    h.st.connection_lost();
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(!h.snap().pending_dialogs[0].answerable);
    let err = h.answer(Accept, None, None, 1).unwrap_err();
    assert_eq!(
        err,
        DialogError::OnlyClosingReleases {
            id: "d-1".into(),
            target_id: Some("T1".into()),
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("only closing the tab releases it")
            && text.contains("browser_tabs close with target_id T1")
            && !text.contains("only navigating"),
        "{text}"
    );
    // An alert Chromium refuses is still released by navigating.
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.answer(Accept, None, None, 5).unwrap();
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    let done = answer_done(&h.drain());
    assert_eq!(
        done[0].1.clone().unwrap_err(),
        DialogError::NotAnswerable { id: "d-1".into() }
    );
}

/// The orphaned beforeunload of a page with an OOPIF: navigating the OOPIF
/// frees a beforeunload Chromium will not answer otherwise (defect 13's
/// release), but not one orphaned by a reconnect — measured: that
/// `Page.navigate` on the OOPIF's new session gets no reply either. The tab
/// is closed at the watchdog's time, not after a navigation's deadline.
#[test]
fn regression_soak_an_orphaned_beforeunload_is_not_released_through_an_oopif() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.open("S1", "T1", "beforeunload", "", "");
    h.drain();
    h.st.connection_lost();
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    let p = json!({
        "sessionId": "S2b",
        "targetInfo": {"targetId": "F2", "type": "iframe", "title": "", "url": "https://b.test/",
                       "attached": true, "canAccessOpener": false, "browserContextId": "B1"},
        "waitingForDebugger": false
    });
    h.ev(Some("S1b"), "Target.attachedToTarget", &p.to_string());
    h.reply_ok("S2b", Purpose::PageEnable, json!({}));
    h.drain();
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(!h.snap().pending_dialogs[0].answerable);
    h.fire_after(DEFAULT_DIALOG_TIMEOUT - PAGE_ENABLE_GRACE);
    let cmds = h.sends();
    assert!(navigations(&cmds).is_empty(), "{cmds:?}");
    let close = tab_closes(&cmds);
    assert_eq!(close.len(), 1, "{cmds:?}");
    assert_eq!(close[0].params["targetId"], "T1");
}

/// Issue 28, defect 12: a releasing `Page.navigate` that gets no reply
/// (the top frame is held by a beforeunload we cannot answer — here one
/// shown before we attached, whose type nobody told us) was sent again
/// after every further watchdog period, and the page never came free. The
/// next release closes the tab, at once: the deadline was waited already.
#[test]
fn regression_28_12_a_release_navigation_that_never_answers_closes_the_tab_next() {
    let mut h = H::new(MustRespond);
    h.attach_page(&top_tree(&[]));
    h.drain();
    // Page.enable stays unanswered: blocked by a dialog we never saw.
    h.fire_after(PAGE_ENABLE_GRACE);
    assert!(h.snap().page_blocked);
    h.drain();
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    let cmds = h.sends();
    assert_eq!(navigations(&cmds).len(), 1, "{cmds:?}");
    h.reply(
        Some("S1"),
        Purpose::Release,
        Err(timeout_err("Page.navigate")),
    );
    h.st.handle_timeout(h.now);
    let cmds = h.sends();
    assert!(
        navigations(&cmds).is_empty(),
        "not the same again: {cmds:?}"
    );
    let close = tab_closes(&cmds);
    assert_eq!(close.len(), 1, "{cmds:?}");
    assert_eq!(close[0].params["targetId"], "T1");
    assert_eq!(close[0].purpose, Purpose::Release);
    h.reply(None, Purpose::Release, Ok(json!({"success": true})));
    assert!(!h.snap().page_blocked);
}

/// A page whose releasing navigation went unanswered, and that then
/// committed a new document (the beforeunload was answered elsewhere),
/// navigates again: its next release is a navigation, not a close.
#[test]
fn a_new_top_document_makes_a_release_navigate_again() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    assert_eq!(navigations(&h.sends()).len(), 1);
    h.reply(
        Some("S1"),
        Purpose::Release,
        Err(timeout_err("Page.navigate")),
    );
    h.frame_navigated("S1", "T1", None, "https://a.test/next");
    assert!(h.pending_ids().is_empty());
    h.alert("S1", "T1", "y");
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-2", Err(no_dialog_showing()));
    let cmds = h.sends();
    assert_eq!(navigations(&cmds).len(), 1, "{cmds:?}");
    assert!(tab_closes(&cmds).is_empty());
}

// ---- issue 8: the reply contract and per-navigation attribution ------------

/// Defect 1 (issue 8), the release half: the watchdog's `Page.navigate` was
/// lost with the socket while the dialog was already recorded as closed by
/// the watchdog — the page stayed frozen and the snapshot said it was free.
#[test]
fn regression_20_a_release_lost_with_the_socket_is_sent_again_after_reconnect() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "stuck");
    h.drain();
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    assert!(h.sends().iter().any(|c| c.method == "Page.navigate"));
    h.st.connection_lost();
    h.reply(Some("S1"), Purpose::Release, Err(lost()));
    assert_eq!(h.pending_ids(), ["d-1"], "not released: still pending");
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    // Page.enable stays unanswered: the page is still blocked.
    h.fire_after(PAGE_ENABLE_GRACE);
    let cmds = h.sends();
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "released again on the new session: {cmds:?}");
    assert_eq!(nav[0].target, on("S1b"));
    h.reply_ok(
        "S1b",
        Purpose::Release,
        json!({"frameId": "T1", "loaderId": "L9"}),
    );
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Watchdog);
}

/// Defect 1 (issue 8), the answer half: an auto answer whose command was
/// never sent stayed "being answered" forever.
#[test]
fn regression_20_an_auto_answer_never_sent_is_sent_once_reconnected() {
    let mut h = H::attached(AutoDismiss);
    h.alert("S1", "T1", "x");
    h.drain();
    h.st.connection_lost();
    h.answer_reply("S1", "d-1", Err(lost()));
    assert_eq!(
        h.st.dialogs_in_flight().count(),
        0,
        "nothing awaits a reply"
    );
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    h.drain();
    h.st.handle_timeout(h.now);
    assert!(
        answers(&h.sends()).is_empty(),
        "not before its renderer is re-checked"
    );
    // Page.enable stays unanswered: the dialog is still open, and after a
    // reconnect Chromium refuses to answer it; the policy releases the page
    // at once (no answer it would refuse is sent first).
    h.fire_after(PAGE_ENABLE_GRACE);
    let cmds = h.sends();
    assert!(answers(&cmds).is_empty(), "{cmds:?}");
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "{cmds:?}");
    assert_eq!(nav[0].target, on("S1b"));
    h.reply_ok(
        "S1b",
        Purpose::Release,
        json!({"frameId": "T1", "loaderId": "L9"}),
    );
    assert_eq!(h.recent()[0].closed_by, ClosedBy::AutoPolicy);
}

/// Defect 2 (issue 8): an agent navigation of an OOPIF labelled every dialog
/// closed by someone else for 30 s as `agent`.
#[test]
fn regression_agent_navigating_an_oopif_does_not_claim_a_top_dialog() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.alert("S1", "T1", "top");
    h.agent(
        1,
        "S2",
        "Page.navigate",
        json!({"url": "https://b.test/next"}),
    );
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

/// Defect 2 (issue 8): a navigation that failed (`errorText`) kept the
/// 30 s window open.
#[test]
fn regression_a_failed_agent_navigation_claims_no_later_close() {
    let mut h = H::attached(MustRespond);
    h.agent(
        1,
        "S1",
        "Page.navigate",
        json!({"url": "https://nope.test/"}),
    );
    h.agent_reply(
        1,
        "S1",
        json!({"frameId": "T1", "errorText": "net::ERR_NAME_NOT_RESOLVED"}),
    );
    h.alert("S1", "T1", "later");
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

/// Issue 28, defect 7: any agent command in flight on a session made a
/// navigation the page requested meanwhile the agent's, so the OOPIF dialog
/// it closed said `closed_by:"agent"`. A command that runs no script or
/// input cannot ask for a navigation.
#[test]
fn regression_28_7_a_command_that_runs_no_script_claims_no_navigation() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.alert("S1", "F2", "in the oopif");
    h.agent(1, "S1", "DOM.getDocument", json!({}));
    h.ev(
        Some("S1"),
        "Page.frameRequestedNavigation",
        r#"{"frameId": "T1", "reason": "scriptInitiated", "url": "https://a.test/own", "disposition": "currentTab"}"#,
    );
    // Chromium closes the OOPIF's dialog as its frame goes with the top's document.
    h.closed("S1", "F2", false, "");
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

/// Issue 28, defect 7: an evaluate queued behind a dialog (interrupted)
/// stayed "in flight" for its whole deadline, and a navigation requested
/// on its session meanwhile was blamed on the agent. A renderer a dialog
/// blocks runs no queued command.
#[test]
fn regression_28_7_a_command_queued_behind_a_dialog_claims_no_navigation() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "blocks the page");
    h.agent(1, "S1", "Runtime.evaluate", json!({"expression": "1"}));
    h.ev(
        Some("S1"),
        "Page.frameRequestedNavigation",
        r#"{"frameId": "T1", "reason": "scriptInitiated", "url": "https://a.test/own", "disposition": "currentTab"}"#,
    );
    h.frame_navigated("S1", "T1", None, "https://a.test/own");
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

/// Defect 2 (issue 8): `browser_cdp Runtime.evaluate("location = …")` that
/// navigates away from a beforeunload was labelled `remote`.
#[test]
fn regression_agent_evaluate_that_navigates_is_agent() {
    let mut h = H::attached(MustRespond);
    h.agent(
        1,
        "S1",
        "Runtime.evaluate",
        json!({"expression": "location = 'https://a.test/x'"}),
    );
    h.ev(
        Some("S1"),
        "Page.frameRequestedNavigation",
        r#"{"frameId": "T1", "reason": "scriptInitiated", "url": "https://a.test/x", "disposition": "currentTab"}"#,
    );
    h.open("S1", "T1", "beforeunload", "", "");
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Agent);
}

// ---- issue 28: Chromium answers the most recent dialog --------------------

/// A page whose top shows a beforeunload (d-1) and whose OOPIF then shows an
/// alert (d-2): Chromium sends no closed event for the beforeunload.
fn beforeunload_then_an_oopif_alert(policy: DialogPolicy) -> H {
    let mut h = H::attached(policy);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.attach_oopif("S1", "F3", "S3", "https://c.test/");
    h.drain();
    h.open("S1", "T1", "beforeunload", "", "");
    h.advance(Duration::from_millis(100));
    h.alert("S1", "F2", "in the oopif");
    h.drain();
    h
}

/// Issue 28, defect 13 (and 12): the watchdog's answer to the beforeunload
/// was taken by Chromium for the most recent dialog (the OOPIF's alert):
/// the alert's close was recorded `remote`, the reply then closed the
/// beforeunload as `watchdog` though it still blocked the page, and the
/// release navigated the top frame, which a beforeunload never lets go.
/// Now the alert is closed by the answer that closed it, the beforeunload
/// stays pending (not answerable), and the page is released by navigating
/// an OOPIF that no dialog blocks.
#[test]
fn regression_28_13_an_answer_chromium_gave_the_most_recent_dialog_is_recorded_there() {
    let mut h = beforeunload_then_an_oopif_alert(MustRespond);
    h.fire_after(DEFAULT_DIALOG_TIMEOUT - Duration::from_millis(100));
    let cmds = h.sends();
    let a = answers(&cmds);
    assert_eq!(a.len(), 1, "the watchdog answers d-1 first: {cmds:?}");
    assert_eq!(
        a[0].purpose,
        Purpose::Answer {
            dialog_id: "d-1".into()
        }
    );
    // Chromium closes the alert with it, then replies.
    h.closed("S1", "F2", false, "");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let recent = h.recent();
    assert_eq!(recent.len(), 1, "{recent:?}");
    assert_eq!(recent[0].dialog.id, "d-2");
    assert_eq!(
        recent[0].closed_by,
        ClosedBy::Watchdog,
        "our answer closed it"
    );
    assert_eq!(
        h.pending_ids(),
        ["d-1"],
        "the beforeunload still blocks the page"
    );
    assert!(!h.snap().pending_dialogs[0].answerable);
    let cmds = h.sends();
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "released at once: {cmds:?}");
    // (The OOPIF whose alert just closed is free again too.)
    assert_eq!(nav[0].target, on("S2"), "through an OOPIF no dialog blocks");
    assert_eq!(nav[0].params["url"], "https://b.test/", "to its own URL");
    h.reply_ok(
        "S2",
        Purpose::Release,
        json!({"frameId": "F2", "loaderId": "L9"}),
    );
    assert!(h.pending_ids().is_empty());
    assert_eq!(h.recent().last().unwrap().closed_by, ClosedBy::Watchdog);
}

/// Issue 28, defect 13: an answer of the agent's in flight when a newer
/// dialog opens lands on the newer one; Chromium closed the first for the
/// newer one, so the first is `remote`, the newer one the agent's.
#[test]
fn regression_28_13_a_dialog_chromium_closed_for_a_newer_one_is_remote() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.alert("S1", "T1", "first");
    h.answer(Dismiss, None, Some("d-1"), 7).unwrap();
    h.drain();
    h.alert("S1", "F2", "second");
    h.closed("S1", "T1", false, "");
    h.closed("S1", "F2", false, "");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let recent = h.recent();
    let by: Vec<(&str, ClosedBy)> = recent
        .iter()
        .map(|c| (c.dialog.id.as_str(), c.closed_by))
        .collect();
    assert_eq!(by, [("d-1", ClosedBy::Remote), ("d-2", ClosedBy::Agent)]);
    assert!(h.pending_ids().is_empty());
}

/// Issue 28 (found attacking defect 13's fix): the agent accepted the
/// beforeunload while an OOPIF's confirm showed; Chromium answered the
/// confirm with it (a payment confirmed the agent never saw) and the agent
/// was told its answer failed. An answer to a dialog older than the page's
/// most recent one is refused before anything is sent.
#[test]
fn regression_28_13_an_answer_to_an_older_dialog_is_refused_not_given_to_the_newest() {
    let mut h = beforeunload_then_an_oopif_alert(MustRespond);
    let r = h.answer(Accept, None, Some("d-1"), 7);
    assert_eq!(
        r,
        Err(DialogError::NotMostRecent {
            id: "d-1".into(),
            newer: "d-2".into()
        })
    );
    assert!(answers(&h.sends()).is_empty(), "nothing was sent");
    assert!(
        r.unwrap_err().to_string().contains("answer d-2 first"),
        "the text names the remedy"
    );
    // The most recent one is answered as asked.
    h.answer(Accept, None, Some("d-2"), 8).unwrap();
    let cmds = h.sends();
    assert_eq!(answers(&cmds).len(), 1);
}

/// A click on a link to a 204 (or a download) asks for a navigation that
/// never commits: Chromium sends `frameRequestedNavigation`, then
/// `frameStoppedLoading` and no `frameNavigated` (Chromium 156, measured).
/// The agent's navigation ends there; a dialog Chromium closes later
/// (another client answered it) is `remote`, not the agent's.
#[test]
fn an_agent_navigation_that_stopped_without_a_document_claims_no_later_close() {
    let mut h = H::attached(MustRespond);
    h.agent(
        1,
        "S1",
        "Input.dispatchMouseEvent",
        json!({"type": "mousePressed"}),
    );
    h.ev(
        Some("S1"),
        "Page.frameRequestedNavigation",
        r#"{"frameId": "T1", "reason": "anchorClick", "url": "https://a.test/204", "disposition": "currentTab"}"#,
    );
    h.agent_reply(1, "S1", json!({}));
    h.ev(
        Some("S1"),
        "Page.frameStoppedLoading",
        r#"{"frameId": "T1"}"#,
    );
    h.alert("S1", "T1", "later");
    h.closed("S1", "T1", false, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

/// A navigation the agent's script asked for that a `beforeunload` held
/// and the dismissal cancelled never commits either, and Chromium sends no
/// `frameStoppedLoading` for it (only `frameClearedScheduledNavigation`,
/// which it also sends for a navigation that goes on). The dismissal ends
/// it: a dialog closed later is not the agent's.
#[test]
fn an_agent_navigation_a_dismissed_beforeunload_cancelled_claims_no_later_close() {
    let mut h = H::attached(MustRespond);
    h.agent(
        1,
        "S1",
        "Runtime.evaluate",
        json!({"expression": "location = '/x'"}),
    );
    h.ev(
        Some("S1"),
        "Page.frameRequestedNavigation",
        r#"{"frameId": "T1", "reason": "scriptInitiated", "url": "https://a.test/x", "disposition": "currentTab"}"#,
    );
    h.agent_reply(
        1,
        "S1",
        json!({"result": {"type": "string", "value": "/x"}}),
    );
    h.open("S1", "T1", "beforeunload", "", "");
    h.closed("S1", "T1", false, "");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    h.alert("S1", "T1", "later");
    h.closed("S1", "T1", true, "");
    assert_eq!(h.recent()[1].closed_by, ClosedBy::Remote);
}

/// The soak (seed 4242): a prompt Chromium would not answer (`-32602`, it
/// opened as an OOPIF's alert closed) kept its page blocked, and the
/// watchdog's releasing `Page.navigate` got no reply. It had the driver's
/// default deadline (10 s) before the tab was closed, so the page stayed
/// frozen past `dialog_timeout_s` + 5 s. The release's navigation has a
/// deadline of its own, short enough for the close to follow within that
/// bound.
#[test]
fn regression_soak_a_release_navigation_waits_at_most_its_own_short_deadline() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    let cmds = h.sends();
    let nav = navigations(&cmds);
    assert_eq!(nav.len(), 1, "{cmds:?}");
    assert!(
        nav[0].timeout.is_some_and(|t| t <= RELEASE_REPLY_TIMEOUT),
        "{:?}",
        nav[0].timeout
    );
    assert!(RELEASE_REPLY_TIMEOUT <= Duration::from_secs(3));
}

/// A release whose navigation only missed its short deadline (a slow
/// page), after its dialog had closed as the navigation started, leaves
/// nothing held: the next release navigates again instead of closing the
/// user's tab.
#[test]
fn a_slow_release_with_nothing_left_to_release_does_not_mark_the_frame() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "x");
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    assert_eq!(navigations(&h.sends()).len(), 1);
    // The navigation starts: Chromium closes the dialog; the reply is late.
    h.closed("S1", "T1", false, "");
    assert!(h.pending_ids().is_empty());
    h.reply(
        Some("S1"),
        Purpose::Release,
        Err(timeout_err("Page.navigate")),
    );
    h.alert("S1", "T1", "another");
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    h.drain();
    h.answer_reply("S1", "d-2", Err(no_dialog_showing()));
    let cmds = h.sends();
    assert_eq!(navigations(&cmds).len(), 1, "navigated again: {cmds:?}");
    assert!(
        tab_closes(&cmds).is_empty(),
        "the tab is not closed: {cmds:?}"
    );
}

/// The soak (seed 4242): an OOPIF's confirm was pending when the agent's
/// `browser_navigate` met the page's beforeunload; the human accepted the
/// beforeunload through ask_user, the navigation went on and tore the
/// OOPIF down. The confirm's closed event came while the human's answer
/// was still in flight, and was taken for that answer (`user`), though the
/// answer had already closed its own dialog. An answer that closed its own
/// dialog closes no other: the confirm is the agent's navigation's.
#[test]
fn regression_soak_an_answer_that_closed_its_own_dialog_closes_no_other() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.open("S1", "F2", "confirm", "in the oopif", "");
    h.agent(
        1,
        "S1",
        "Page.navigate",
        json!({"url": "https://a.test/next"}),
    );
    h.open("S1", "T1", "beforeunload", "", "");
    h.drain();
    let req = DialogRequest {
        action: DialogAction::Accept,
        prompt_text: None,
        dialog_id: Some("d-2".into()),
        files: None,
        login: None,
    };
    h.st.answer_dialog_as(req, 7, ClosedBy::User, h.now)
        .unwrap();
    h.drain();
    h.closed("S1", "T1", true, "");
    h.closed("S1", "F2", false, "");
    h.answer_reply("S1", "d-2", Ok(json!({})));
    let by: Vec<(String, ClosedBy)> = h
        .recent()
        .iter()
        .map(|c| (c.dialog.id.clone(), c.closed_by))
        .collect();
    assert_eq!(
        by,
        [
            ("d-2".to_owned(), ClosedBy::User),
            ("d-1".to_owned(), ClosedBy::Agent)
        ]
    );
}

/// The soak (seed 4242): a confirm opened while the agent's
/// `browser_navigate` was under way; the agent accepted it, an OOPIF's
/// alert opened before the answer landed, and Chromium closed the confirm
/// (for the newer dialog, as the navigation went on); the answer itself
/// failed (`Not attached to an active page`). `browser_dialog` said it
/// succeeded (`answered` with `accepted: false`). The answer reached
/// nothing: the agent is told so.
#[test]
fn regression_soak_an_answer_whose_dialog_closed_without_it_is_not_a_success() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.agent(
        1,
        "S1",
        "Page.navigate",
        json!({"url": "https://a.test/next"}),
    );
    h.open("S1", "T1", "confirm", "during the navigation", "");
    h.answer(Accept, None, Some("d-1"), 7).unwrap();
    h.drain();
    h.alert("S1", "F2", "newer");
    h.closed("S1", "T1", false, "");
    h.answer_reply(
        "S1",
        "d-1",
        Err(cdp_err(
            "Page.handleJavaScriptDialog",
            -32000,
            "Not attached to an active page",
        )),
    );
    let done = answer_done(&h.drain());
    assert_eq!(
        done,
        [(
            7,
            Err(DialogError::ClosedBefore {
                id: "d-1".into(),
                closed_by: ClosedBy::Agent
            })
        )]
    );
    assert!(
        DialogError::ClosedBefore {
            id: "d-1".into(),
            closed_by: ClosedBy::Agent
        }
        .to_string()
        .contains("nothing was answered")
    );
}

// ---- a person at the wheel -------------------------------------------------

/// While a person has the task the watchdog waits, however long; at the
/// hand-back it gets a whole deadline again (DESIGN "A person at the wheel").
#[test]
fn a_person_in_control_pauses_the_watchdog_and_the_hand_back_restarts_its_deadline() {
    let mut h = H::attached(MustRespond);
    h.st.set_person_in_control(true, h.now);
    h.alert("S1", "T1", "hi");
    h.drain();
    assert_eq!(h.st.poll_timeout(), None, "no wakeup while a person has it");
    h.advance(DEFAULT_DIALOG_TIMEOUT * 3);
    h.st.handle_timeout(h.now);
    assert!(answers(&h.sends()).is_empty(), "the watchdog did not act");
    assert_eq!(h.pending_ids(), ["d-1"]);
    h.st.set_person_in_control(false, h.now);
    assert_eq!(
        h.st.poll_timeout(),
        Some(h.now.instant + DEFAULT_DIALOG_TIMEOUT),
        "a whole deadline from the hand-back"
    );
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    assert_eq!(
        answers(&h.sends()).len(),
        1,
        "then the watchdog dismisses it"
    );
}

/// An auto policy answers nothing while a person has the task (the person
/// sees the prompt and answers it); at the hand-back it answers what is
/// still pending at once, as `auto_policy`.
#[test]
fn an_auto_policy_waits_for_the_hand_back_then_answers_at_once() {
    let mut h = H::attached(AutoAccept);
    h.st.set_person_in_control(true, h.now);
    h.open("S1", "T1", "confirm", "ok?", "");
    assert!(
        answers(&h.sends()).is_empty(),
        "nothing answers for the person"
    );
    h.advance(Duration::from_secs(30));
    h.st.handle_timeout(h.now);
    assert!(answers(&h.sends()).is_empty());
    h.st.set_person_in_control(false, h.now);
    h.st.handle_timeout(h.now);
    let cmds = h.sends();
    let a = answers(&cmds);
    assert_eq!(a.len(), 1, "{cmds:?}");
    assert_eq!(a[0].params, json!({"accept": true}));
    h.closed("S1", "T1", true, "");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    assert_eq!(h.recent()[0].closed_by, ClosedBy::AutoPolicy);
}

/// What a person typed into a prompt stays with the page: a prompt they
/// answered is recorded with `user_input: null`; the agent's own answer
/// after the hand-back is recorded as ever.
#[test]
fn a_prompt_the_person_answered_keeps_no_user_input() {
    let mut h = H::attached(MustRespond);
    h.st.set_person_in_control(true, h.now);
    h.open("S1", "T1", "prompt", "Your code?", "");
    h.drain();
    h.answer(DialogAction::Accept, Some("424242"), Some("d-1"), 1)
        .expect("the person's answer is taken");
    h.closed("S1", "T1", true, "424242");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let r = h.recent();
    assert_eq!(r[0].accepted, Some(true));
    assert_eq!(r[0].user_input, None, "{r:?}");
    h.st.set_person_in_control(false, h.now);
    h.open("S1", "T1", "prompt", "Name?", "");
    h.drain();
    h.answer(DialogAction::Accept, Some("Ada"), Some("d-2"), 2)
        .expect("the agent's answer");
    h.closed("S1", "T1", true, "Ada");
    h.answer_reply("S1", "d-2", Ok(json!({})));
    let r = h.recent();
    let agents = r.iter().find(|c| c.dialog.id == "d-2").expect("d-2 closed");
    assert_eq!(agents.user_input.as_deref(), Some("Ada"));
}

/// Issue 44 (a soak found it): a dialog opened in an OOPIF of the tab
/// 20 ms before the first one's watchdog fired, and Chromium reported the
/// first one's closing only after that: the first was recorded
/// `closed_by: "watchdog"`, though Chromium had closed it for the newer
/// one (a tab shows one JS dialog at a time).
#[test]
fn a_dialog_closed_for_a_newer_one_in_another_frame_is_remote_though_its_watchdog_fired() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.drain();
    h.alert("S1", "T1", "first");
    h.drain();
    h.advance(DEFAULT_DIALOG_TIMEOUT - Duration::from_millis(20));
    h.alert("S2", "F2", "second");
    h.fire_after(Duration::from_millis(20));
    h.drain();
    h.closed("S1", "T1", false, "");
    let recent = h.recent();
    assert_eq!(recent.len(), 1, "{recent:?}");
    assert_eq!(recent[0].dialog.id, "d-1");
    assert_eq!(recent[0].closed_by, ClosedBy::Remote);
    assert_eq!(h.pending_ids(), ["d-2"]);
}

/// Issue 44 (a soak found a `confirm` pending and unanswerable 10.6 s
/// after it opened, `dialog_timeout_s` 5, after a renderer crash): an
/// OOPIF's renderer crashing takes its dialog with it, and Chromium sends
/// no closed event. The dialog closes `remote` at once; another OOPIF's
/// crash leaves it be.
#[test]
fn an_oopif_renderer_crash_closes_its_dialogs_and_no_other() {
    let mut h = H::attached(MustRespond);
    h.attach_oopif("S1", "F2", "S2", "https://b.test/");
    h.attach_oopif("S1", "F3", "S3", "https://c.test/");
    h.drain();
    h.alert("S2", "F2", "in the crashing frame");
    h.ev(Some("S3"), "Inspector.targetCrashed", "{}");
    assert_eq!(h.pending_ids(), ["d-1"], "another renderer's crash");
    h.ev(Some("S2"), "Inspector.targetCrashed", "{}");
    let recent = h.recent();
    assert_eq!(recent.len(), 1, "{recent:?}");
    assert_eq!(recent[0].closed_by, ClosedBy::Remote);
    assert!(h.pending_ids().is_empty());
    assert!(
        answers(&h.sends()).is_empty(),
        "no answer goes to a renderer that is gone"
    );
}

/// Issue 44, F1 (seen on Chromium 156: `browser_navigate`, then
/// `browser_dialog` 5 ms later): the agent's navigation closed its alert
/// while the agent's answer was in flight; the answer then found no dialog
/// (`-32602`). That is the agent's own navigation, not another client: the
/// record stays `agent`, and the answer says it closed before it arrived.
#[test]
fn an_answer_refused_after_the_agents_own_navigation_closed_its_dialog_leaves_it_agent() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "hi");
    h.drain();
    h.agent(
        1,
        "S1",
        "Page.navigate",
        json!({"url": "https://a.test/two"}),
    );
    h.answer(Accept, None, Some("d-1"), 7).unwrap();
    h.drain();
    h.closed("S1", "T1", false, "");
    h.answer_reply("S1", "d-1", Err(no_dialog_showing()));
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Agent);
    let done = answer_done(&h.drain());
    assert!(
        matches!(
            done.as_slice(),
            [(
                7,
                Err(DialogError::ClosedBefore {
                    closed_by: ClosedBy::Agent,
                    ..
                })
            )]
        ),
        "{done:?}"
    );
}

/// Issue 44 (the CI soak, seed 31): a `Page.crash` took a popup's
/// renderer while the person's accept of its alert was in flight; Chromium
/// reported the alert closed with `result: false`, and the core credited
/// the answer: `closed_by: "user"` for an accept that never landed. A
/// closed event that contradicts the answer in flight was not that answer.
#[test]
fn a_close_that_contradicts_the_answer_in_flight_is_not_that_answer() {
    let mut h = H::attached(MustRespond);
    h.alert("S1", "T1", "hi");
    h.drain();
    h.answer(Accept, None, Some("d-1"), 7).unwrap();
    h.drain();
    h.closed("S1", "T1", false, "");
    h.ev(Some("S1"), "Inspector.targetCrashed", "{}");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    h.answer_reply("S1", "d-1", Err(lost()));
    let done = answer_done(&h.drain());
    assert!(
        matches!(
            done.as_slice(),
            [(
                7,
                Err(DialogError::ClosedBefore {
                    closed_by: ClosedBy::Remote,
                    ..
                })
            )]
        ),
        "{done:?}"
    );
}

/// Issue 44 ("Left" list): past `ANSWERS_AFTER_CLOSE_MAX` answers waiting
/// for their reply after their dialog closed, the oldest was dropped and
/// its caller never heard back. Now it hears what the record says.
#[test]
fn the_oldest_answer_past_the_cap_hears_back_instead_of_being_dropped() {
    use cdp_supervisor::supervisor::state::ANSWERS_AFTER_CLOSE_MAX;
    let mut h = H::attached(MustRespond);
    for n in 0..=ANSWERS_AFTER_CLOSE_MAX as u64 {
        h.alert("S1", "T1", "x");
        h.answer(Accept, None, None, 100 + n).unwrap();
        h.drain();
        h.closed("S1", "T1", true, "");
        let done = answer_done(&h.drain());
        if (n as usize) < ANSWERS_AFTER_CLOSE_MAX {
            assert!(done.is_empty(), "{n}: the reply is waited for: {done:?}");
        } else {
            assert_eq!(done.len(), 1, "{done:?}");
            assert_eq!(done[0].0, 100, "the oldest one");
            let closed = done[0].1.clone().unwrap();
            assert_eq!(closed.dialog.id, "d-1");
            assert_eq!(closed.closed_by, ClosedBy::Agent);
        }
    }
}
