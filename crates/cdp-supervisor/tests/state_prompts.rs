//! HTTP authentication challenges in the pure state machine
//! (`Fetch.authRequired` as an `http_auth` dialog), driven by CDP event
//! sequences. No sockets, no Chromium; the MCP-level checks on real
//! Chromium are `tests/mcp_client/prompts.py`.

mod state_support;

use cdp_supervisor::supervisor::credentials::{Credential, Credentials, Secret};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::ClosedBy;
use cdp_supervisor::supervisor::state::{
    Command, DEFAULT_DIALOG_TIMEOUT, DialogAction, DialogError, DialogRequest, Login, Options,
    Purpose,
};
use serde_json::{Value, json};
use state_support::*;

use DialogPolicy::{AutoAccept, AutoDismiss, MustRespond};

const ORIGIN: &str = "http://intranet.test:8080";

fn challenge(request_id: &str, frame_id: &str) -> String {
    json!({
        "requestId": request_id,
        "request": {"url": format!("{ORIGIN}/secret"), "method": "GET", "headers": {}},
        "frameId": frame_id,
        "resourceType": "Document",
        "authChallenge": {"source": "Server", "origin": ORIGIN, "scheme": "basic", "realm": "Staff"}
    })
    .to_string()
}

fn stored() -> Credentials {
    Credentials::new(vec![Credential {
        origin: ORIGIN.into(),
        username: "staff".into(),
        password: Secret::new("from-env"),
        password_env: "STAFF_PASSWORD".into(),
    }])
}

fn attached(policy: DialogPolicy, credentials: Credentials) -> H {
    let mut h = H::with(Options {
        policy: policy.into(),
        credentials,
        ..Options::default()
    });
    h.attach_page(&top_tree(&[]));
    h.reply_ok("S1", Purpose::PageEnable, json!({}));
    h.drain();
    h
}

fn auth_answers(cmds: &[Command]) -> Vec<Value> {
    cmds.iter()
        .filter(|c| c.method == "Fetch.continueWithAuth")
        .map(|c| c.params.clone())
        .collect()
}

fn login(username: &str, password: &str) -> Option<Login> {
    Some(Login {
        username: username.into(),
        password: Secret::new(password),
    })
}

fn req(action: DialogAction, login: Option<Login>) -> DialogRequest {
    DialogRequest {
        action,
        prompt_text: None,
        dialog_id: None,
        files: None,
        login,
    }
}

#[test]
fn every_session_pauses_documents_with_auth_handled() {
    let mut h = H::new(MustRespond);
    let cmds = h.attach_page(&top_tree(&[]));
    let fetch = cmds
        .iter()
        .find(|c| c.method == "Fetch.enable")
        .expect("Fetch.enable on the page session");
    assert_eq!(fetch.params["handleAuthRequests"], json!(true));
    assert!(
        fetch.params["patterns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["resourceType"] == "Document" && p["requestStage"] == "Request"),
        "Chromium raises a challenge only for a request paused at its request stage: {}",
        fetch.params
    );
}

#[test]
fn a_challenge_is_a_pending_http_auth_answered_with_the_agents_login() {
    let mut h = attached(MustRespond, Credentials::default());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    let d = h.snap().pending_dialogs[0].clone();
    assert_eq!(d.dialog_type, "http_auth");
    let c = d.http_auth.as_ref().expect("its challenge");
    assert_eq!(
        (c.origin.as_str(), c.realm.as_str(), c.scheme.as_str()),
        (ORIGIN, "Staff", "basic")
    );
    assert_eq!(d.url, format!("{ORIGIN}/secret"));
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["origin"], ORIGIN, "inlined in the JSON: {v}");
    assert_eq!(v["realm"], "Staff");
    // Accepting needs a login; a login is for http_auth only.
    assert!(matches!(
        h.st.answer_dialog(req(DialogAction::Accept, None), 1, h.now),
        Err(DialogError::LoginNeeded { .. })
    ));
    h.st.answer_dialog(req(DialogAction::Accept, login("ada", "pw1")), 2, h.now)
        .unwrap();
    let cmds = h.sends();
    let sent = auth_answers(&cmds);
    assert_eq!(
        sent,
        [
            json!({"requestId": "R1", "authChallengeResponse": {"response": "ProvideCredentials", "username": "ada", "password": "pw1"}})
        ]
    );
    assert_eq!(cmds[0].target, on("S1"), "on the session that paused it");
    h.answer_reply("S1", "d-1", Ok(json!({})));
    let done = h.drain();
    assert!(h.snap().pending_dialogs.is_empty());
    let closed = &h.recent()[0];
    assert_eq!(
        (closed.closed_by, closed.accepted),
        (ClosedBy::Agent, Some(true))
    );
    assert!(
        answer_done(&done).iter().any(|(t, r)| *t == 2 && r.is_ok()),
        "the agent hears its outcome"
    );
    assert!(
        !format!("{:?}", h.snap()).contains("pw1"),
        "no password kept"
    );
}

#[test]
fn a_wrong_login_brings_the_same_request_back_as_a_new_dialog() {
    let mut h = attached(MustRespond, Credentials::default());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    h.st.answer_dialog(req(DialogAction::Accept, login("ada", "wrong")), 1, h.now)
        .unwrap();
    h.drain();
    // Chromium may report the repeat before its reply to our answer.
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    h.answer_reply("S1", "d-1", Ok(json!({})));
    assert_eq!(
        h.pending_ids(),
        ["d-2"],
        "the repeat is a prompt of its own"
    );
    assert_eq!(h.recent()[0].dialog.id, "d-1");
}

#[test]
fn stored_credentials_answer_once_then_the_repeat_is_a_prompt_under_the_policy() {
    let mut h = attached(MustRespond, stored());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    let sent = auth_answers(&h.sends());
    assert_eq!(sent[0]["authChallengeResponse"]["username"], "staff");
    assert_eq!(sent[0]["authChallengeResponse"]["password"], "from-env");
    assert!(
        h.snap().pending_dialogs[0].answered_at_once,
        "a racing call need not stop for it"
    );
    h.answer_reply("S1", "d-1", Ok(json!({})));
    assert_eq!(h.recent()[0].closed_by, ClosedBy::AutoPolicy);
    // Wrong stored credentials: the same request comes back, and is the agent's.
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    assert!(auth_answers(&h.sends()).is_empty(), "not given twice");
    assert_eq!(h.pending_ids(), ["d-2"]);
    assert!(matches!(
        h.st.answer_dialog(req(DialogAction::Accept, None), 1, h.now),
        Err(DialogError::LoginNeeded { .. })
    ));
    // The watchdog cancels it.
    h.fire_after(DEFAULT_DIALOG_TIMEOUT);
    let sent = auth_answers(&h.sends());
    assert_eq!(
        sent,
        [json!({"requestId": "R1", "authChallengeResponse": {"response": "CancelAuth"}})]
    );
    h.answer_reply("S1", "d-2", Ok(json!({})));
    let closed = &h.recent()[1];
    assert_eq!(
        (closed.closed_by, closed.accepted),
        (ClosedBy::Watchdog, Some(false))
    );
}

#[test]
fn auto_policies_cancel_without_stored_credentials() {
    for policy in [AutoAccept, AutoDismiss] {
        let mut h = attached(policy, Credentials::default());
        h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
        let sent = auth_answers(&h.sends());
        assert_eq!(
            sent[0]["authChallengeResponse"]["response"], "CancelAuth",
            "{policy:?}"
        );
    }
}

#[test]
fn a_challenge_whose_request_is_gone_closes_remote_and_the_agent_hears_ok() {
    let mut h = attached(MustRespond, Credentials::default());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    h.st.answer_dialog(req(DialogAction::Dismiss, None), 7, h.now)
        .unwrap();
    h.drain();
    h.answer_reply(
        "S1",
        "d-1",
        Err(cdp_err(
            "Fetch.continueWithAuth",
            -32602,
            "Invalid InterceptionId.",
        )),
    );
    let outs = h.drain();
    assert!(h.snap().pending_dialogs.is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
    assert!(answer_done(&outs).iter().any(|(t, r)| *t == 7 && r.is_ok()));
    assert!(
        navigations(&h.sends()).is_empty(),
        "no page is released for it"
    );
}

#[test]
fn a_challenge_goes_with_the_connection() {
    let mut h = attached(MustRespond, Credentials::default());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    h.st.connection_lost();
    // Re-attached: Chromium went on with the request without us.
    h.st.attach_page("T1".into(), sid("S1b"), PAGE_URL, "", h.now);
    assert!(h.snap().pending_dialogs.is_empty());
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

#[test]
fn only_the_top_documents_challenge_holds_the_tabs_calls() {
    let mut h = attached(MustRespond, Credentials::default());
    h.frame_attached("S1", "F2", "T1");
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "F2"));
    let snap = h.snap();
    let d = &snap.pending_dialogs[0];
    assert!(
        !snap.blocks_call_on(d, None),
        "an iframe's login leaves the page running"
    );
    assert!(snap.holds_load_on(d, None), "but holds the tab's load");
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R2", "T1"));
    let snap = h.snap();
    let top = snap
        .pending_dialogs
        .iter()
        .find(|d| d.frame_id.as_deref() == Some("T1"))
        .unwrap();
    assert!(
        snap.blocks_call_on(top, None),
        "Chromium holds the tab's commands meanwhile"
    );
    // A JS dialog of the same frame does not replace a challenge.
    h.alert("S1", "F2", "hi");
    assert_eq!(h.pending_ids(), ["d-1", "d-2", "d-3"]);
}

#[test]
fn a_new_challenge_in_the_frame_closes_the_one_whose_request_was_dropped() {
    let mut h = attached(MustRespond, Credentials::default());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    // The agent navigates to another page behind a login: Chromium drops
    // R1 without a word and challenges R2.
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R2", "T1"));
    assert_eq!(h.pending_ids(), ["d-2"], "one prompt per frame");
    assert_eq!(h.recent()[0].dialog.id, "d-1");
    assert_eq!(h.recent()[0].closed_by, ClosedBy::Remote);
}

#[test]
fn a_page_that_reloads_itself_does_not_replay_a_wrong_stored_password() {
    let mut h = attached(AutoDismiss, stored());
    h.ev(Some("S1"), "Fetch.authRequired", &challenge("R1", "T1"));
    assert_eq!(auth_answers(&h.sends()).len(), 1);
    h.answer_reply("S1", "d-1", Ok(json!({})));
    // Wrong: the 401 page reloads itself, a new request of the same realm.
    for (i, r) in ["R2", "R3", "R4"].iter().enumerate() {
        h.ev(Some("S1"), "Fetch.authRequired", &challenge(r, "T1"));
        let sent = auth_answers(&h.sends());
        assert_eq!(
            sent[0]["authChallengeResponse"]["response"], "CancelAuth",
            "reload {i}: the policy cancels, the password is not sent again"
        );
        h.answer_reply("S1", &format!("d-{}", i + 2), Ok(json!({})));
    }
}
