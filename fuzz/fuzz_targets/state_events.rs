//! Arbitrary sequences of CDP events, replies, agent calls and dialog
//! answers, reconnects and time, fed to the whole pure core: the tab
//! coordinator [`Tabs`], by a driver that answers, refuses, times out or
//! loses any command in any order (every command gets exactly one reply; a
//! reconnect loses every one in flight).
//!
//! After every step: no panic; the snapshot's caps hold; no frame, dialog
//! or tab listed twice; no route or listed session that is dead; every
//! pending dialog with no answer in flight has a deadline; no dialog is
//! "being answered" with no command in flight for it; no agent call and no
//! dialog answer gets a second outcome. At the end, once every command has
//! had its reply: every agent call got exactly one outcome
//! ([`Output::AgentReply`]) and no dialog is left being answered.

#![no_main]

use cdp_supervisor::cdp::protocol::{Event, SessionId, TargetId};
use cdp_supervisor::supervisor::bridge::BridgeKey;
use cdp_supervisor::supervisor::credentials::{Credential, Credentials, Secret};
use cdp_supervisor::supervisor::origins::NavigationPolicy;
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::snapshot::{ClosedBy, PendingDialog};
use cdp_supervisor::supervisor::state::{
    BLOCKED_NAVIGATIONS_MAX, CONSOLE_ERRORS_MAX, CONSOLE_TEXT_MAX_CHARS, Command,
    DIALOG_MESSAGE_MAX_CHARS, DialogAction, DialogRequest, FRAME_TREE_MAX_ENTRIES, Login, Now,
    Options, Output, Purpose, RECENT_DIALOGS_MAX, ReplyError, SESSIONS_TRACKED_MAX, Tabs, Target,
};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Tabs T0…T3 (T0 attached first; also `max_tabs`), tab `Tn`'s page
/// session `Sn` of the connection.
const TABS: u8 = 4;
/// Frame ids: the tabs' top frames T0…T3, then F4…F15 (an OOPIF's target
/// id is its frame's).
const FRAMES: u8 = 16;
/// Session ids per connection: the tabs' pages' S0…S3, then S4…S7.
const SESSIONS: u8 = 8;
/// At most this many steps of an input are played.
const STEPS_MAX: usize = 400;
/// The driver's rounds of replies at the end: each reply may send more.
const SETTLE_ROUNDS: usize = 20;
/// The dialog bridge's path (`/__cdp_supervisor_fuzz`) and secret.
const BRIDGE_PATH: &str = "fuzz";
const BRIDGE_SECRET: &str = "5ec2e7";

#[derive(Arbitrary, Debug)]
enum Params {
    /// Well-formed params for the method, from small pools of ids.
    Shaped {
        s: u8,
        f: u8,
        p: u8,
        kind: u8,
        flag: bool,
        text: u8,
    },
    /// Anything at all (goes through `Event::parse`).
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// Any event on session `session` (`None`: the browser's).
    Event {
        session: Option<u8>,
        method: u8,
        params: Params,
    },
    /// Page T<t> attaches at browser level: a popup of T0 (`opener`), or a
    /// page nobody opened; after a reconnect, a tab coming back.
    PageAttach {
        t: u8,
        opener: bool,
        waiting: bool,
    },
    /// Page T<t>'s target is destroyed.
    PageGone {
        t: u8,
    },
    /// `n` popups of T0 open and close (fresh target ids): the closed-tabs
    /// list turns over.
    Churn {
        n: u8,
    },
    /// The agent's call to session `session` (`None`: the browser).
    Agent {
        session: Option<u8>,
        method: u8,
    },
    /// A dialog opens in tab T<t>'s top frame.
    Dialog {
        t: u8,
        kind: u8,
        text: u8,
    },
    /// Tab T<t>'s dialog closes.
    DialogClosed {
        t: u8,
        accepted: bool,
    },
    /// The agent (or a human it asked) answers a dialog of any tab.
    Answer {
        pick: u8,
        accept: bool,
        user: bool,
        text: Option<String>,
        extra: u8,
    },
    /// The driver replies to the `idx`th command in flight.
    Reply {
        idx: u16,
        kind: u8,
    },
    Advance {
        ms: u32,
    },
    /// The driver fires the timers, when due.
    HandleTimeout,
    /// The socket drops: every command in flight is lost; then the current
    /// tab (else T<to>) is attached on the new connection.
    Reconnect {
        to: u8,
    },
    /// The agent makes tab T<t> current.
    Select {
        t: u8,
    },
    /// The agent releases the current tab from dialogs Chromium will not answer.
    ReleaseUnanswerable,
}

#[derive(Arbitrary, Debug)]
struct Input {
    policy: u8,
    dialog_timeout_ms: u16,
    ops: Vec<Op>,
}

const METHODS: &[&str] = &[
    "Page.javascriptDialogOpening",
    "Page.javascriptDialogClosed",
    "Page.frameAttached",
    "Page.frameNavigated",
    "Page.frameDetached",
    "Page.loadEventFired",
    "Page.lifecycleEvent",
    "Page.frameRequestedNavigation",
    "Page.frameStartedNavigating",
    "Page.frameStoppedLoading",
    "Page.navigatedWithinDocument",
    "Page.fileChooserOpened",
    "Target.attachedToTarget",
    "Target.detachedFromTarget",
    "Target.targetInfoChanged",
    "Target.targetDestroyed",
    "Target.targetCrashed",
    "Inspector.detached",
    "Inspector.targetCrashed",
    "Runtime.consoleAPICalled",
    "Runtime.exceptionThrown",
    "Fetch.authRequired",
    "Fetch.requestPaused",
    "Browser.downloadWillBegin",
    "Browser.downloadProgress",
    "Network.requestWillBeSent",
];

/// The agent's methods: script, navigations, input, a read, a new tab.
const AGENT_METHODS: &[&str] = &[
    "Runtime.evaluate",
    "Page.navigate",
    "Page.reload",
    "Input.dispatchMouseEvent",
    "DOM.getDocument",
    "Target.createTarget",
];

const DIALOG_TYPES: [&str; 5] = ["alert", "confirm", "prompt", "beforeunload", "weird"];

fn frame(i: u8) -> String {
    match i % FRAMES {
        n if n < TABS => format!("T{n}"),
        n => format!("F{n}"),
    }
}

fn tab(t: u8) -> String {
    format!("T{}", t % TABS)
}

fn loader(i: u8) -> String {
    format!("L{}", i % 4)
}

/// Mostly short; now and then (4 values in 256) just past the caps, with
/// multi-byte characters so a cut by bytes would be caught. The text used
/// to grow to 24 KiB at every event, which the snapshot then cloned and
/// serialized at every step: a third of the harness's time.
fn long_text(n: u8) -> String {
    match n {
        252.. => "é".repeat(DIALOG_MESSAGE_MAX_CHARS + usize::from(n - 251)),
        _ => "x".repeat(usize::from(n % 32)),
    }
}

/// Params of the real shape for `method`; sessions of connection `generation`.
#[allow(clippy::too_many_arguments)]
fn shaped(
    method: &str,
    generation: u32,
    s: u8,
    f: u8,
    p: u8,
    kind: u8,
    flag: bool,
    text: u8,
) -> Value {
    let url = format!("https://h{}.test/p", f % 5);
    match method {
        "Page.javascriptDialogOpening" => json!({
            "url": url, "message": long_text(text), "type": DIALOG_TYPES[usize::from(kind) % DIALOG_TYPES.len()],
            "hasBrowserHandler": false, "defaultPrompt": "d",
            "frameId": if flag { Value::String(frame(f)) } else { Value::Null },
        }),
        "Page.javascriptDialogClosed" => {
            let mut v = json!({"result": flag, "userInput": "u"});
            if kind.is_multiple_of(2) {
                v["frameId"] = json!(frame(f));
            }
            v
        }
        "Page.frameAttached" => json!({"frameId": frame(f), "parentFrameId": frame(p)}),
        "Page.frameNavigated" => json!({"frame": {
            "id": frame(f), "parentId": if f % FRAMES < TABS { Value::Null } else { json!(frame(p)) },
            "url": url, "securityOrigin": "https://h.test", "loaderId": loader(kind), "mimeType": "text/html",
            "urlFragment": if flag { "#x" } else { "" },
        }, "type": if kind & 8 != 0 { "BackForwardCacheRestore" } else { "Navigation" }}),
        "Page.frameDetached" => {
            json!({"frameId": frame(f), "reason": if flag { "swap" } else { "remove" }})
        }
        "Page.lifecycleEvent" => json!({
            "frameId": frame(f), "loaderId": loader(p),
            "name": (["init", "DOMContentLoaded", "load", "networkIdle"][usize::from(kind % 4)]),
            "timestamp": 1.0,
        }),
        "Page.frameRequestedNavigation" => json!({
            "frameId": frame(f), "reason": "scriptInitiated", "url": url,
            "disposition": if flag { "currentTab" } else { "newTab" },
        }),
        "Page.frameStartedNavigating" => json!({
            "frameId": frame(f), "url": url, "loaderId": loader(p), "navigationType": "differentDocument",
        }),
        "Page.frameStoppedLoading" => json!({"frameId": frame(f)}),
        "Page.navigatedWithinDocument" => json!({"frameId": frame(f), "url": url}),
        "Page.fileChooserOpened" => json!({
            "frameId": frame(f), "mode": if flag { "selectSingle" } else { "selectMultiple" },
            "backendNodeId": p,
        }),
        "Target.attachedToTarget" => {
            let mut info = json!({"targetId": frame(f),
                "type": (["iframe", "page", "worker", "service_worker"][usize::from(kind) % 4]),
                "url": url, "title": "t", "attached": true});
            if p & 16 != 0 {
                info["openerId"] = json!(frame(p));
            }
            json!({"sessionId": session_name(s, generation), "targetInfo": info, "waitingForDebugger": flag})
        }
        "Target.detachedFromTarget" => {
            json!({"sessionId": session_name(s, generation), "targetId": frame(f)})
        }
        "Target.targetInfoChanged" => {
            json!({"targetInfo": {"targetId": frame(f), "type": "page", "url": url, "title": long_text(text)}})
        }
        "Target.targetDestroyed" | "Target.targetCrashed" => json!({"targetId": frame(f)}),
        "Runtime.consoleAPICalled" => json!({
            "type": if flag { "error" } else { "assert" },
            "args": [{"type": "string", "value": long_text(text)}, {"type": "number", "value": 1}],
            "timestamp": 1.7e12,
        }),
        "Runtime.exceptionThrown" => json!({"timestamp": 1.7e12, "exceptionDetails": {
            "exceptionId": 1, "text": long_text(text), "lineNumber": 0, "columnNumber": 0, "url": url,
        }}),
        "Fetch.authRequired" => json!({
            "requestId": format!("R{}", p % 4), "request": {"url": url}, "frameId": frame(f),
            "authChallenge": {"source": if flag { "Server" } else { "Proxy" },
                              "origin": format!("https://h{}.test", f % 5), "scheme": "basic", "realm": "r"},
        }),
        // The dialog bridge's request (with the secret, or forged), or a
        // document or image request (with the policy: h3.test is refused).
        "Fetch.requestPaused" if flag => {
            let secret = if kind & 1 == 0 {
                BRIDGE_SECRET
            } else {
                "guess"
            };
            let body = json!({"secret": secret, "type": DIALOG_TYPES[usize::from(kind >> 1) % DIALOG_TYPES.len()],
                              "message": long_text(text), "default_prompt": "d", "url": url});
            json!({"requestId": format!("R{}", p % 4), "frameId": frame(f), "resourceType": "XHR",
                   "request": {"url": format!("https://h{}.test/__cdp_supervisor_{BRIDGE_PATH}", f % 5),
                               "method": "POST", "postData": body.to_string()}})
        }
        "Fetch.requestPaused" => json!({
            "requestId": format!("R{}", p % 4), "frameId": frame(f),
            "resourceType": if kind & 1 == 0 { "Document" } else { "Image" },
            "request": {"url": url, "method": "GET"},
        }),
        "Browser.downloadWillBegin" => json!({
            "frameId": frame(f), "guid": format!("g{}", p % 4), "url": url,
            "suggestedFilename": if flag { "../r.csv" } else { "r.csv" },
        }),
        "Browser.downloadProgress" => json!({
            "guid": format!("g{}", p % 4), "totalBytes": 10, "receivedBytes": if flag { 10 } else { 5 },
            "state": (["inProgress", "completed", "canceled"][usize::from(kind % 3)]),
        }),
        _ => json!({}),
    }
}

fn session_name(i: u8, generation: u32) -> String {
    format!("S{}g{generation}", i % SESSIONS)
}

#[derive(Clone)]
struct Run {
    tabs: Tabs,
    now: Now,
    /// Commands sent and not replied to yet.
    in_flight: Vec<Command>,
    /// Agent call `n` (numbered from 1) → the outcomes it got.
    calls: Vec<u8>,
    /// Dialog answer ticket `n` (numbered from 1) → the outcomes it got
    /// (`None`: the answer was refused at once).
    answers: Vec<Option<u8>>,
    /// The connection (a reconnect's sessions are new ones).
    generation: u32,
    /// The next fresh target number for [`Op::Churn`].
    fresh: u32,
}

impl Run {
    /// Drains the outputs as the driver would; counts each outcome, which
    /// must be its call's (or answer's) first.
    fn collect(&mut self) {
        while let Some(o) = self.tabs.poll_output() {
            match o {
                Output::Send(c) => self.in_flight.push(*c),
                Output::AgentReply { call, .. } => {
                    let n = usize::try_from(call - 1)
                        .ok()
                        .and_then(|i| self.calls.get_mut(i))
                        .unwrap_or_else(|| panic!("an outcome for agent call {call}, never made"));
                    *n += 1;
                    assert_eq!(*n, 1, "agent call {call} got a second outcome");
                }
                Output::AnswerDone { ticket, .. } => {
                    let n = usize::try_from(ticket - 1)
                        .ok()
                        .and_then(|i| self.answers.get_mut(i))
                        .and_then(Option::as_mut)
                        .unwrap_or_else(|| {
                            panic!("an outcome for answer {ticket}, never accepted")
                        });
                    *n += 1;
                    assert_eq!(*n, 1, "dialog answer {ticket} got a second outcome");
                }
                Output::SaveDownload { id, name, .. } => {
                    let saved = if name.len() % 2 == 0 {
                        Ok(format!("/downloads/{name}"))
                    } else {
                        Err("fuzz: no room".into())
                    };
                    self.tabs.download_saved(&id, saved);
                }
                Output::Notice(_) | Output::Loaded { .. } => {}
            }
        }
    }

    fn event(&mut self, session: Option<String>, method: &str, params: &str) {
        let sid = session.map(SessionId);
        let event = Event::parse(method, params);
        self.tabs.on_event(sid.as_ref(), event, self.now);
    }

    /// Tab `target`'s page session on this connection (`T7` → `S7g<n>`;
    /// raw params may have named the target anything).
    fn page_session(&self, target: &str) -> SessionId {
        let n = target.get(1..).unwrap_or_default();
        SessionId(format!("S{n}g{}", self.generation))
    }

    fn page_attached(&mut self, target: &str, opener: bool, waiting: bool) {
        let mut info = json!({"targetId": target, "type": "page", "title": "",
                              "url": "https://a.test/", "attached": true});
        if opener {
            info["openerId"] = json!("T0");
        }
        let s = self.page_session(target);
        let params = json!({"sessionId": s.0, "targetInfo": info, "waitingForDebugger": waiting});
        self.event(None, "Target.attachedToTarget", &params.to_string());
    }

    fn reply(&mut self, c: Command, result: Result<Value, ReplyError>) {
        self.tabs
            .on_reply(&c.target, c.tab, c.purpose, result, self.now);
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Event {
                session,
                method,
                params,
            } => {
                let method = METHODS[usize::from(method) % METHODS.len()];
                let params = match params {
                    Params::Shaped {
                        s,
                        f,
                        p,
                        kind,
                        flag,
                        text,
                    } => shaped(method, self.generation, s, f, p, kind, flag, text).to_string(),
                    Params::Raw(r) => r,
                };
                let session = session.map(|s| session_name(s, self.generation));
                self.event(session, method, &params);
            }
            Op::PageAttach { t, opener, waiting } => self.page_attached(&tab(t), opener, waiting),
            Op::PageGone { t } => {
                let params = json!({"targetId": tab(t)}).to_string();
                self.event(None, "Target.targetDestroyed", &params);
            }
            Op::Churn { n } => {
                for _ in 0..=n % 12 {
                    self.fresh += 1;
                    let target = format!("T{}", self.fresh);
                    self.page_attached(&target, true, true);
                    self.collect();
                    let params = json!({"targetId": target}).to_string();
                    self.event(None, "Target.targetDestroyed", &params);
                    self.collect();
                }
            }
            Op::Agent { session, method } => {
                self.calls.push(0);
                let call = self.calls.len() as u64;
                let method = AGENT_METHODS[usize::from(method) % AGENT_METHODS.len()];
                let params = match method {
                    "Page.navigate" => json!({"url": "https://a.test/next"}),
                    "Target.createTarget" => json!({"url": "about:blank"}),
                    "Runtime.evaluate" => json!({"expression": "location.href = '/next'"}),
                    _ => json!({}),
                };
                let target = match session {
                    Some(s) => Target::Session(SessionId(session_name(s, self.generation))),
                    None => Target::Browser,
                };
                self.tabs
                    .send_agent(call, target, method, params, Duration::from_secs(30));
            }
            Op::Dialog { t, kind, text } => {
                let params = json!({"url": "https://a.test/", "frameId": tab(t), "message": long_text(text),
                                    "type": DIALOG_TYPES[usize::from(kind) % DIALOG_TYPES.len()],
                                    "hasBrowserHandler": false, "defaultPrompt": "d"});
                let s = self.page_session(&tab(t)).0;
                self.event(Some(s), "Page.javascriptDialogOpening", &params.to_string());
            }
            Op::DialogClosed { t, accepted } => {
                let params = json!({"frameId": tab(t), "result": accepted, "userInput": ""});
                let s = self.page_session(&tab(t)).0;
                self.event(Some(s), "Page.javascriptDialogClosed", &params.to_string());
            }
            Op::Answer {
                pick,
                accept,
                user,
                text,
                extra,
            } => {
                let pending: Vec<String> =
                    self.tabs.pending_dialogs().map(|d| d.id.clone()).collect();
                let dialog_id = match pick {
                    255 => None,
                    128.. => Some(format!("d-{}", pick % 16)),
                    _ if pending.is_empty() => None,
                    _ => Some(pending[usize::from(pick) % pending.len()].clone()),
                };
                let req = DialogRequest {
                    action: if accept {
                        DialogAction::Accept
                    } else {
                        DialogAction::Dismiss
                    },
                    prompt_text: text,
                    dialog_id,
                    files: (extra & 1 != 0).then(|| vec!["/tmp/a".into(); usize::from(extra >> 6)]),
                    login: (extra & 2 != 0).then(|| Login {
                        username: "u".into(),
                        password: Secret::new("p"),
                    }),
                };
                let by = if user {
                    ClosedBy::User
                } else {
                    ClosedBy::Agent
                };
                let ticket = self.answers.len() as u64 + 1;
                let accepted = self
                    .tabs
                    .answer_dialog_as(req, ticket, by, self.now)
                    .is_ok();
                self.answers.push(accepted.then_some(0));
            }
            Op::Reply { idx, kind } => {
                if self.in_flight.is_empty() {
                    return;
                }
                let c = self
                    .in_flight
                    .remove(usize::from(idx) % self.in_flight.len());
                let result = match kind % 8 {
                    0..4 => Ok(ok_result(&c, kind >> 3)),
                    4 => Err(ReplyError::Protocol {
                        code: -32602,
                        message: "No dialog is showing".into(),
                        data: None,
                    }),
                    5 => Err(ReplyError::Timeout {
                        after: Duration::from_secs(10),
                    }),
                    6 => Err(ReplyError::Lost {
                        reason: "fuzz: not sent".into(),
                    }),
                    _ => Ok(json!({"weird": [1, 2, 3]})),
                };
                self.reply(c, result);
            }
            Op::Advance { ms } => self.now = self.now.after(Duration::from_millis(u64::from(ms))),
            Op::HandleTimeout => {
                if self
                    .tabs
                    .poll_timeout()
                    .is_some_and(|t| t <= self.now.instant)
                {
                    self.tabs.handle_timeout(self.now);
                }
            }
            Op::Reconnect { to } => {
                self.tabs.connection_lost();
                self.collect();
                for c in std::mem::take(&mut self.in_flight) {
                    let lost = ReplyError::Lost {
                        reason: "fuzz: the socket dropped".into(),
                    };
                    self.reply(c, Err(lost));
                    self.collect();
                }
                self.generation += 1;
                let target = self
                    .tabs
                    .current_target()
                    .cloned()
                    .unwrap_or_else(|| TargetId(tab(to)));
                let s = self.page_session(&target.0);
                self.tabs
                    .attach_page(target, s, "https://a.test/", "", self.now);
            }
            Op::Select { t } => {
                let _ = self.tabs.select(&tab(t));
            }
            Op::ReleaseUnanswerable => {
                self.tabs.release_unanswerable();
            }
        }
        self.collect();
    }

    /// The invariants after one step. Routes are checked for the frames the
    /// snapshot lists (a dead route elsewhere shows at the end of the input,
    /// where [`Run::check_end`] tries every frame id), and the snapshot is
    /// serialized only at the end: both cost more than the step itself.
    fn check(&mut self) {
        let snap = self.tabs.snapshot();
        assert!(snap.frame_tree.children.len() <= FRAME_TREE_MAX_ENTRIES);
        assert!(snap.recent_dialogs.len() <= RECENT_DIALOGS_MAX);
        assert!(snap.console_errors.len() <= CONSOLE_ERRORS_MAX);
        for e in &snap.console_errors {
            assert!(e.text.chars().count() <= CONSOLE_TEXT_MAX_CHARS);
        }
        assert!(snap.blocked_navigations.len() <= BLOCKED_NAVIGATIONS_MAX);
        let mut targets = HashSet::new();
        for t in &snap.tabs {
            assert!(
                targets.insert(&t.target_id),
                "tab {} listed twice",
                t.target_id
            );
            assert!(self.tabs.sessions_of(&t.target_id).len() <= SESSIONS_TRACKED_MAX + 1);
        }
        assert!(
            snap.tabs.len() <= usize::from(TABS),
            "more tabs than max_tabs"
        );
        let current = snap.tabs.iter().filter(|t| t.current).count();
        assert_eq!(
            current,
            usize::from(!snap.tabs.is_empty()),
            "while a tab is open, one is current"
        );
        let mut dialogs = HashSet::new();
        for d in snap
            .pending_dialogs
            .iter()
            .map(|d| &**d)
            .chain(snap.recent_dialogs.iter().map(|c| &c.dialog))
        {
            assert!(d.message.chars().count() <= DIALOG_MESSAGE_MAX_CHARS);
            assert!(dialogs.insert(&d.id), "dialog {} listed twice", d.id);
        }
        let answering: HashSet<&str> = self
            .in_flight
            .iter()
            .filter_map(|c| match &c.purpose {
                Purpose::Answer { dialog_id } => Some(dialog_id.as_str()),
                _ => None,
            })
            .collect();
        let releasing = self.in_flight.iter().any(|c| c.purpose == Purpose::Release);
        for id in self.tabs.dialogs_in_flight() {
            assert!(
                answering.contains(id.as_str()) || releasing,
                "dialog {id} is being answered with no command in flight for it"
            );
        }
        // A tab not re-attached since a reconnect keeps its dialogs with no
        // deadline until it is (their timers count again once its renderer
        // is heard from) or the re-attach says it is gone.
        let reattached = |d: &PendingDialog| {
            d.target_id
                .as_deref()
                .is_none_or(|t| self.tabs.page_session(Some(t), true).is_ok())
        };
        if !releasing
            && snap
                .pending_dialogs
                .iter()
                .any(|d| !answering.contains(d.id.as_str()) && reattached(d))
        {
            assert!(
                self.tabs.poll_timeout().is_some(),
                "a pending dialog with no answer in flight has no deadline"
            );
        }
        let mut frames = HashSet::new();
        if let Some(top) = &snap.frame_tree.top {
            frames.insert(top.frame_id.clone());
        }
        for c in &snap.frame_tree.children {
            assert!(
                frames.insert(c.frame_id.clone()),
                "frame {} listed twice",
                c.frame_id
            );
            if let Some(s) = &c.session_id {
                assert!(
                    self.tabs.has_session(&SessionId(s.clone())),
                    "lists dead session {s}"
                );
                assert!(c.is_oopif);
            }
        }
        for id in &frames {
            self.check_route(id, None);
        }
    }

    /// Once the input is played: the driver replies to every command still
    /// in flight (losing each, as a dropped socket would), then every agent
    /// call has had exactly one outcome and no dialog is being answered.
    /// Then the checks too costly for every step.
    fn check_end(&mut self) {
        for _ in 0..SETTLE_ROUNDS {
            if self.in_flight.is_empty() {
                break;
            }
            for c in std::mem::take(&mut self.in_flight) {
                let lost = ReplyError::Lost {
                    reason: "fuzz: settled".into(),
                };
                self.reply(c, Err(lost));
                self.collect();
            }
        }
        self.check();
        assert!(
            self.in_flight.is_empty(),
            "commands still sent after {SETTLE_ROUNDS} rounds of replies: {:?}",
            self.in_flight.iter().map(|c| &c.method).collect::<Vec<_>>()
        );
        for (i, n) in self.calls.iter().enumerate() {
            assert_eq!(*n, 1, "agent call {} got {n} outcomes", i + 1);
        }
        for (i, n) in self.answers.iter().enumerate() {
            if let Some(n) = n {
                assert_eq!(*n, 1, "dialog answer {} got {n} outcomes", i + 1);
            }
        }
        assert!(
            self.tabs.dialogs_in_flight().is_empty(),
            "a dialog is still being answered though every command has its reply: {:?}",
            self.tabs.dialogs_in_flight()
        );
        let tabs: Vec<String> = self
            .tabs
            .snapshot()
            .tabs
            .iter()
            .map(|t| t.target_id.clone())
            .collect();
        for f in 0..FRAMES {
            self.check_route(&frame(f), None);
            for t in &tabs {
                self.check_route(&frame(f), Some(t));
            }
        }
        serde_json::to_vec(&self.tabs.snapshot()).expect("snapshot serializes");
    }

    fn check_route(&self, frame_id: &str, target_id: Option<&str>) {
        if let Ok(s) = self.tabs.route_frame(frame_id, target_id) {
            assert!(self.tabs.has_session(&s), "route to dead session {s}");
        }
    }
}

/// A plausible successful result for the command; `v` picks among them.
fn ok_result(c: &Command, v: u8) -> Value {
    match (&c.purpose, c.method.as_str()) {
        (Purpose::FrameTree, _) => {
            // The session's own frame: `S2g0` is T2's page, `S5g0` F5's OOPIF.
            let n: u8 = c
                .target
                .session()
                .and_then(|s| s.as_str().get(1..)?.split('g').next()?.parse().ok())
                .unwrap_or(0);
            let own = frame(n);
            json!({"frameTree": {
                "frame": {"id": own, "url": "https://a.test/", "securityOrigin": "https://a.test", "loaderId": "L0", "mimeType": "text/html"},
                "childFrames": [
                    {"frame": {"id": "F9", "parentId": own, "url": "about:srcdoc", "loaderId": "L1", "mimeType": "text/html"}},
                    {"frame": {"id": "F10", "url": "", "loaderId": "L2", "mimeType": "text/html"},
                     "childFrames": [{"frame": {"id": "F11", "url": "https://c.test/", "loaderId": "L3", "mimeType": "text/html"}}]},
                ],
            }})
        }
        (Purpose::PageLoaded { .. }, _) => {
            json!({"targetInfo": {"targetId": tab(v), "type": "page", "title": "t", "url": "https://a.test/"}})
        }
        (Purpose::NewTab, _) | (_, "Target.createTarget") => json!({"targetId": tab(v)}),
        (_, "Page.navigate" | "Page.reload") if v.is_multiple_of(2) => {
            json!({"frameId": frame(v >> 1), "loaderId": loader(v >> 1)})
        }
        (_, "Page.navigate") => json!({"frameId": frame(v >> 1), "errorText": "net::ERR_ABORTED"}),
        _ => json!({}),
    }
}

/// The watchdog bounds an input picks from (`dialog_timeout_ms % 8`): none,
/// shorter than a step, and the ones people configure.
const DIALOG_TIMEOUTS_MS: [u64; 8] = [0, 1, 10, 100, 1_000, 5_000, 30_000, 65_535];

/// A setup: dialog policy (0–2), navigation policy, dialog bridge, watchdog
/// (`DIALOG_TIMEOUTS_MS[_]`).
type Setup = (u8, bool, bool, u8);

thread_local! {
    /// Each setup's coordinator, its first tab attached once; every input
    /// plays on a clone. Building the options per input drew a bridge key
    /// from the OS and attaching built a dozen commands: a fifth of the
    /// run's time.
    static ATTACHED: RefCell<HashMap<Setup, Run>> = RefCell::new(HashMap::new());
}

/// Tab T0 attached as S0 under `setup`, its setup commands in flight.
fn attached((policy, navigation, bridge, timeout): Setup) -> Run {
    let policy = match policy {
        0 => DialogPolicy::MustRespond,
        1 => DialogPolicy::AutoDismiss,
        _ => DialogPolicy::AutoAccept,
    };
    let mut run = Run {
        tabs: Tabs::new(Options {
            policy: policy.into(),
            dialog_timeout: Duration::from_millis(DIALOG_TIMEOUTS_MS[usize::from(timeout)]),
            max_tabs: usize::from(TABS),
            dialog_bridge: bridge,
            bridge_key: BridgeKey::fixed(BRIDGE_PATH, BRIDGE_SECRET),
            // With a navigation policy, h3.test is refused: commits to it
            // are released (and Fetch is enabled on sessions).
            navigation: if navigation {
                NavigationPolicy::new(&[] as &[&str], &["https://h3.test"], false).unwrap()
            } else {
                NavigationPolicy::default()
            },
            // h2.test's login is stored; any other challenge needs the agent's.
            credentials: Credentials::new(vec![Credential {
                origin: "https://h2.test".into(),
                username: "stored".into(),
                password: Secret::new("pw"),
                password_env: String::new(),
            }]),
            ..Default::default()
        }),
        now: Now::system(),
        in_flight: Vec::new(),
        calls: Vec::new(),
        answers: Vec::new(),
        generation: 0,
        fresh: 100,
    };
    let s = run.page_session("T0");
    run.tabs
        .attach_page(TargetId("T0".into()), s, "https://a.test/", "", run.now);
    run.collect();
    run.check();
    run
}

fuzz_target!(|input: Input| {
    let setup = (
        input.policy % 3,
        input.policy & 4 != 0,
        input.policy & 8 != 0,
        (input.dialog_timeout_ms % 8) as u8,
    );
    let mut run =
        ATTACHED.with_borrow_mut(|m| m.entry(setup).or_insert_with(|| attached(setup)).clone());
    for op in input.ops.into_iter().take(STEPS_MAX) {
        run.step(op);
        run.check();
    }
    run.check_end();
});
