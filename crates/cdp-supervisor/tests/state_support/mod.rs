//! Shared helpers for the state-machine tests: a harness that owns a
//! [`State`] and a fake clock, and builds events from real CDP JSON.
#![allow(dead_code)]

use cdp_supervisor::cdp::protocol::{ERROR_INVALID_PARAMS, Event, SessionId, TargetId};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::{ClosedDialog, Snapshot};
use cdp_supervisor::supervisor::state::{
    Command, DialogAction, DialogRequest, Notice, Now, Options, Output, Purpose, ReplyError, State,
    Target,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The page every test attaches: target `T1` (its main frame is `T1` too, as
/// in Chromium), session `S1`, at `https://a.test/`.
pub const PAGE_URL: &str = "https://a.test/";

pub fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

/// A CDP error reply, as the driver feeds it in.
pub fn cdp_err(_method: &str, code: i64, message: &str) -> ReplyError {
    ReplyError::Protocol {
        code,
        message: message.to_owned(),
        data: None,
    }
}

/// The session `s` as a command's target.
pub fn on(s: &str) -> Target {
    Target::Session(sid(s))
}

/// What the driver feeds in for a command it could not send or lost with the connection.
pub fn lost() -> ReplyError {
    ReplyError::Lost {
        reason: "test".into(),
    }
}

/// Chromium's answer to `Page.handleJavaScriptDialog` when it will not answer.
pub fn no_dialog_showing() -> ReplyError {
    cdp_err(
        "Page.handleJavaScriptDialog",
        ERROR_INVALID_PARAMS,
        "No dialog is showing",
    )
}

pub fn timeout_err(_method: &str) -> ReplyError {
    ReplyError::Timeout {
        after: Duration::from_secs(10),
    }
}

pub struct H {
    pub st: State,
    pub now: Now,
    pub t0: Now,
}

impl H {
    pub fn new(policy: DialogPolicy) -> H {
        H::with(Options {
            policy: policy.into(),
            ..Options::default()
        })
    }

    pub fn with(opts: Options) -> H {
        let t0 = Now {
            instant: Instant::now(),
            unix_s: 1_700_000_000.0,
        };
        H {
            st: State::new(opts),
            now: t0,
            t0,
        }
    }

    /// A must_respond harness with page T1/S1 attached and its frame tree
    /// (top only) answered; outputs drained.
    pub fn attached(policy: DialogPolicy) -> H {
        let mut h = H::new(policy);
        h.attach_page(&top_tree(&[]));
        h.reply_ok("S1", Purpose::PageEnable, json!({}));
        h.drain();
        h
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self.now.after(d);
    }

    /// Feeds `method` with `params` (CDP JSON) on `session` (`None`: browser level).
    pub fn ev(&mut self, session: Option<&str>, method: &str, params: &str) {
        let e = Event::parse(method, params);
        assert!(
            !matches!(e, Event::Unparsed { .. }),
            "test JSON did not parse: {e:?}"
        );
        let s = session.map(sid);
        self.st.on_event(s.as_ref(), e, self.now);
    }

    pub fn drain(&mut self) -> Vec<Output> {
        std::iter::from_fn(|| self.st.poll_output()).collect()
    }

    pub fn sends(&mut self) -> Vec<Command> {
        self.drain()
            .into_iter()
            .filter_map(|o| match o {
                Output::Send(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    pub fn reply(&mut self, session: Option<&str>, purpose: Purpose, r: Result<Value, ReplyError>) {
        let t: Target = session.map(sid).into();
        self.st.on_reply(&t, purpose, r, self.now);
    }

    pub fn reply_ok(&mut self, session: &str, purpose: Purpose, v: Value) {
        self.reply(Some(session), purpose, Ok(v));
    }

    pub fn answer_reply(&mut self, session: &str, dialog_id: &str, r: Result<Value, ReplyError>) {
        self.reply(
            Some(session),
            Purpose::Answer {
                dialog_id: dialog_id.to_owned(),
            },
            r,
        );
    }

    /// The agent sends `method` on `session` through the core as call
    /// `call` (its command is drained, not replied).
    pub fn agent(&mut self, call: u64, session: &str, method: &str, params: Value) {
        self.st
            .send_agent(call, on(session), method, params, Duration::from_secs(30));
        self.drain();
    }

    /// The reply to the agent's call `call` on `session`.
    pub fn agent_reply(&mut self, call: u64, session: &str, v: Value) {
        self.reply(Some(session), Purpose::Agent { call }, Ok(v));
        self.drain();
    }

    /// `attach_page(T1, S1)` and the `Page.getFrameTree` reply `tree`.
    /// Returns the commands the attach queued.
    pub fn attach_page(&mut self, tree: &Value) -> Vec<Command> {
        self.st
            .attach_page(TargetId::from("T1"), sid("S1"), PAGE_URL, "", self.now);
        let cmds = self.sends();
        self.reply_ok("S1", Purpose::FrameTree, json!({ "frameTree": tree }));
        cmds
    }

    /// An OOPIF target `frame_id` (target id == frame id) auto-attached as
    /// `session` under `parent_session`; its own frame tree and its
    /// `Page.enable` answered, as an OOPIF no dialog blocks answers them.
    pub fn attach_oopif(
        &mut self,
        parent_session: &str,
        frame_id: &str,
        session: &str,
        url: &str,
    ) -> Vec<Command> {
        let p = json!({
            "sessionId": session,
            "targetInfo": {"targetId": frame_id, "type": "iframe", "title": "", "url": url,
                           "attached": true, "canAccessOpener": false, "browserContextId": "B1"},
            "waitingForDebugger": true
        });
        self.ev(
            Some(parent_session),
            "Target.attachedToTarget",
            &p.to_string(),
        );
        let cmds = self.sends();
        self.reply_ok(
            session,
            Purpose::FrameTree,
            json!({"frameTree": {"frame": frame(frame_id, None, url)}}),
        );
        self.reply_ok(session, Purpose::PageEnable, json!({}));
        cmds
    }

    /// As [`H::attach_oopif`], but the OOPIF's renderer answers nothing:
    /// a dialog opened before we attached blocks it.
    pub fn attach_blocked_oopif(&mut self, parent_session: &str, frame_id: &str, session: &str) {
        let p = json!({
            "sessionId": session,
            "targetInfo": {"targetId": frame_id, "type": "iframe", "title": "",
                           "url": "https://b.test/frame", "attached": true,
                           "canAccessOpener": false, "browserContextId": "B1"},
            "waitingForDebugger": false
        });
        self.ev(
            Some(parent_session),
            "Target.attachedToTarget",
            &p.to_string(),
        );
        self.drain();
    }

    pub fn detach_target(&mut self, parent_session: Option<&str>, session: &str, target: &str) {
        let p = json!({"sessionId": session, "targetId": target});
        self.ev(parent_session, "Target.detachedFromTarget", &p.to_string());
    }

    pub fn frame_attached(&mut self, session: &str, frame_id: &str, parent: &str) {
        let p = json!({"frameId": frame_id, "parentFrameId": parent, "stack": {"callFrames": []}});
        self.ev(Some(session), "Page.frameAttached", &p.to_string());
    }

    pub fn frame_navigated(
        &mut self,
        session: &str,
        frame_id: &str,
        parent: Option<&str>,
        url: &str,
    ) {
        let p = json!({"frame": frame(frame_id, parent, url), "type": "Navigation"});
        self.ev(Some(session), "Page.frameNavigated", &p.to_string());
    }

    pub fn frame_detached(&mut self, session: &str, frame_id: &str, reason: &str) {
        let p = json!({"frameId": frame_id, "reason": reason});
        self.ev(Some(session), "Page.frameDetached", &p.to_string());
    }

    /// `Page.javascriptDialogOpening` on `session` for `frame_id`.
    pub fn open(
        &mut self,
        session: &str,
        frame_id: &str,
        kind: &str,
        message: &str,
        default_prompt: &str,
    ) {
        let p = json!({"url": PAGE_URL, "frameId": frame_id, "message": message, "type": kind,
                       "hasBrowserHandler": false, "defaultPrompt": default_prompt});
        self.ev(
            Some(session),
            "Page.javascriptDialogOpening",
            &p.to_string(),
        );
    }

    pub fn alert(&mut self, session: &str, frame_id: &str, message: &str) {
        self.open(session, frame_id, "alert", message, "");
    }

    /// `Page.javascriptDialogClosed` on `session` for `frame_id`.
    pub fn closed(&mut self, session: &str, frame_id: &str, result: bool, user_input: &str) {
        let p = json!({"frameId": frame_id, "result": result, "userInput": user_input});
        self.ev(Some(session), "Page.javascriptDialogClosed", &p.to_string());
    }

    pub fn answer(
        &mut self,
        action: DialogAction,
        prompt_text: Option<&str>,
        dialog_id: Option<&str>,
        ticket: u64,
    ) -> Result<(), cdp_supervisor::supervisor::state::DialogError> {
        self.st.answer_dialog(
            DialogRequest {
                action,
                prompt_text: prompt_text.map(str::to_owned),
                dialog_id: dialog_id.map(str::to_owned),
                files: None,
                login: None,
            },
            ticket,
            self.now,
        )
    }

    pub fn snap(&mut self) -> Snapshot {
        self.st.snapshot()
    }

    pub fn pending_ids(&mut self) -> Vec<String> {
        self.snap()
            .pending_dialogs
            .iter()
            .map(|d| d.id.clone())
            .collect()
    }

    pub fn recent(&mut self) -> Vec<ClosedDialog> {
        self.snap()
            .recent_dialogs
            .iter()
            .map(|c| ClosedDialog::clone(c))
            .collect()
    }

    pub fn child_ids(&mut self) -> Vec<String> {
        self.snap()
            .frame_tree
            .children
            .iter()
            .map(|c| c.frame_id.clone())
            .collect()
    }

    /// Checks that the next wakeup is exactly `d` from now, then moves there
    /// and fires it. Tests name the delay they expect: a helper that jumped
    /// to "whatever the deadline is" hid a 300 s freeze (issue 8, defect 3).
    pub fn fire_after(&mut self, d: Duration) {
        assert_eq!(
            self.st.poll_timeout(),
            Some(self.now.instant + d),
            "the next wakeup is not {d:?} from now"
        );
        self.advance(d);
        self.st.handle_timeout(self.now);
    }
}

/// A `Page.Frame` as Chromium sends it.
pub fn frame(id: &str, parent: Option<&str>, url: &str) -> Value {
    let origin = cdp_supervisor::supervisor::state::origin_of(url);
    let mut f = json!({"id": id, "loaderId": format!("L-{id}"), "url": url, "domainAndRegistry": "",
                       "securityOrigin": origin, "mimeType": "text/html", "adFrameStatus": {"adFrameType": "none"},
                       "secureContextType": "Secure", "crossOriginIsolatedContextType": "NotIsolated",
                       "gatedAPIFeatures": []});
    if let Some(p) = parent {
        f["parentId"] = json!(p);
    }
    f
}

/// The frame tree of page T1 at [`PAGE_URL`] with same-process children `(id, url)`.
pub fn top_tree(children: &[(&str, &str)]) -> Value {
    json!({
        "frame": frame("T1", None, PAGE_URL),
        "childFrames": children.iter().map(|(id, url)| json!({"frame": frame(id, Some("T1"), url)})).collect::<Vec<_>>()
    })
}

/// The `Page.handleJavaScriptDialog` commands among `cmds`.
pub fn answers(cmds: &[Command]) -> Vec<&Command> {
    cmds.iter()
        .filter(|c| c.method == "Page.handleJavaScriptDialog")
        .collect()
}

/// The `Page.navigate` commands among `cmds` (a release navigates the page).
pub fn navigations(cmds: &[Command]) -> Vec<&Command> {
    cmds.iter()
        .filter(|c| c.method == "Page.navigate")
        .collect()
}

/// The `Target.closeTarget` commands among `cmds` (a release that closes
/// the tab: an orphaned beforeunload answers nothing else).
pub fn tab_closes(cmds: &[Command]) -> Vec<&Command> {
    cmds.iter()
        .filter(|c| c.method == "Target.closeTarget")
        .collect()
}

pub fn answer_done(
    outs: &[Output],
) -> Vec<(
    u64,
    Result<ClosedDialog, cdp_supervisor::supervisor::state::DialogError>,
)> {
    outs.iter()
        .filter_map(|o| match o {
            Output::AnswerDone { ticket, result } => Some((*ticket, (**result).clone())),
            _ => None,
        })
        .collect()
}

pub fn notices(outs: &[Output]) -> Vec<Notice> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Notice(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}
