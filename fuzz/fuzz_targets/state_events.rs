//! Arbitrary sequences of CDP events, replies, agent requests, reconnects and
//! time fed to the pure state machine. Checks: no panic, the caps hold, no
//! frame listed twice, no route or listed session that is dead, every pending
//! dialog with no answer in flight has a deadline.

#![no_main]

use cdp_supervisor::cdp::protocol::{Event, SessionId};
use cdp_supervisor::supervisor::origins::NavigationPolicy;
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::state::{
    BLOCKED_NAVIGATIONS_MAX, CONSOLE_ERRORS_MAX, CONSOLE_TEXT_MAX_CHARS, Command,
    DIALOG_MESSAGE_MAX_CHARS, DialogAction, DialogRequest, FRAME_TREE_MAX_ENTRIES, Now, Options,
    Output, Purpose, RECENT_DIALOGS_MAX, ReplyError, SESSIONS_TRACKED_MAX, State, Target,
};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const FRAMES: u8 = 16;
const SESSIONS: u8 = 8;

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
    Event {
        session: Option<u8>,
        method: u8,
        params: Params,
    },
    Reply {
        idx: u16,
        kind: u8,
    },
    Answer {
        accept: bool,
        id: Option<u8>,
        text: Option<String>,
    },
    Advance {
        ms: u32,
    },
    HandleTimeout,
    NavigationStarted {
        watchdog: bool,
    },
    Reconnect {
        session: u8,
    },
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
    "Target.attachedToTarget",
    "Target.detachedFromTarget",
    "Target.targetInfoChanged",
    "Target.targetDestroyed",
    "Target.targetCrashed",
    "Inspector.detached",
    "Runtime.consoleAPICalled",
    "Runtime.exceptionThrown",
    "Network.requestWillBeSent",
];

fn session(i: u8) -> String {
    format!("S{}", i % SESSIONS + 1)
}

fn frame(i: u8) -> String {
    match i % FRAMES {
        0 => "T1".into(),
        n => format!("F{n}"),
    }
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

fn shaped(method: &str, s: u8, f: u8, p: u8, kind: u8, flag: bool, text: u8) -> Value {
    let kinds = ["alert", "confirm", "prompt", "beforeunload", "weird"];
    let url = format!("https://h{}.test/p", f % 5);
    match method {
        "Page.javascriptDialogOpening" => json!({
            "url": url, "message": long_text(text), "type": kinds[usize::from(kind) % kinds.len()],
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
            "id": frame(f), "parentId": if f.is_multiple_of(FRAMES) { Value::Null } else { json!(frame(p)) },
            "url": url, "securityOrigin": "https://h.test", "loaderId": "L", "mimeType": "text/html",
            "urlFragment": if flag { "#x" } else { "" },
        }}),
        "Page.frameDetached" => {
            json!({"frameId": frame(f), "reason": if flag { "swap" } else { "remove" }})
        }
        "Target.attachedToTarget" => json!({
            "sessionId": session(s),
            "targetInfo": {"targetId": frame(f), "type": (["iframe", "page", "worker", "service_worker"][usize::from(kind) % 4]),
                           "url": url, "title": "t", "attached": true},
            "waitingForDebugger": flag,
        }),
        "Target.detachedFromTarget" => json!({"sessionId": session(s), "targetId": frame(f)}),
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
        _ => json!({}),
    }
}

#[derive(Clone)]
struct Run {
    st: State,
    now: Now,
    in_flight: Vec<Command>,
    calls: u64,
}

impl Run {
    fn collect(&mut self) {
        while let Some(o) = self.st.poll_output() {
            if let Output::Send(c) = o {
                self.in_flight.push(c);
            }
        }
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
                    } => shaped(method, s, f, p, kind, flag, text).to_string(),
                    Params::Raw(r) => r,
                };
                let sid = session.map(|s| SessionId(session_name(s)));
                let event = Event::parse(method, &params);
                self.st.on_event(sid.as_ref(), event, self.now);
            }
            Op::Reply { idx, kind } => {
                if self.in_flight.is_empty() {
                    return;
                }
                let c = self
                    .in_flight
                    .remove(usize::from(idx) % self.in_flight.len());
                let result = match kind % 4 {
                    0 => Ok(ok_result(&c)),
                    1 => Err(ReplyError::Protocol {
                        code: -32602,
                        message: "No dialog is showing".into(),
                        data: None,
                    }),
                    2 => Err(ReplyError::Timeout {
                        after: Duration::from_secs(10),
                    }),
                    3 if idx % 2 == 0 => Err(ReplyError::Lost {
                        reason: "fuzz: not sent".into(),
                    }),
                    _ => Ok(json!({"weird": [1, 2, 3]})),
                };
                self.st.on_reply(&c.target, c.purpose, result, self.now);
            }
            Op::Answer { accept, id, text } => {
                let req = DialogRequest {
                    action: if accept {
                        DialogAction::Accept
                    } else {
                        DialogAction::Dismiss
                    },
                    prompt_text: text,
                    dialog_id: id.map(|n| format!("d-{}", n % 16)),
                    files: None,
                };
                let _ = self.st.answer_dialog(req, 1, self.now);
            }
            Op::Advance { ms } => self.now = self.now.after(Duration::from_millis(u64::from(ms))),
            Op::HandleTimeout => {
                if self
                    .st
                    .poll_timeout()
                    .is_some_and(|t| t <= self.now.instant)
                {
                    self.st.handle_timeout(self.now);
                }
            }
            Op::NavigationStarted { watchdog } => {
                let method = if watchdog {
                    "Runtime.evaluate"
                } else {
                    "Page.navigate"
                };
                self.calls += 1;
                let target = Target::Session(SessionId(session_name(0)));
                self.st.send_agent(
                    self.calls,
                    target,
                    method,
                    json!({"url": "https://a.test/next"}),
                    Duration::from_secs(30),
                );
            }
            Op::Reconnect { session } => {
                self.st.connection_lost();
                for c in std::mem::take(&mut self.in_flight) {
                    let e = ReplyError::Lost {
                        reason: "fuzz".into(),
                    };
                    self.st.on_reply(&c.target, c.purpose, Err(e), self.now);
                }
                self.st.attach_page(
                    "T1".into(),
                    SessionId(session_name(session)),
                    "https://a.test/",
                    "",
                    self.now,
                );
            }
        }
        self.collect();
    }

    /// The invariants after one step. Routes are checked for the frames the
    /// snapshot lists (a dead route elsewhere shows at the end of the input,
    /// where [`Run::check_end`] tries every frame id), and the snapshot is
    /// serialized only at the end: both cost more than the step itself.
    fn check(&self) {
        let snap = self.st.snapshot();
        assert!(snap.frame_tree.children.len() <= FRAME_TREE_MAX_ENTRIES);
        assert!(snap.recent_dialogs.len() <= RECENT_DIALOGS_MAX);
        assert!(snap.console_errors.len() <= CONSOLE_ERRORS_MAX);
        for e in &snap.console_errors {
            assert!(e.text.chars().count() <= CONSOLE_TEXT_MAX_CHARS);
        }
        assert!(snap.blocked_navigations.len() <= BLOCKED_NAVIGATIONS_MAX);
        assert!(self.st.session_ids().count() <= SESSIONS_TRACKED_MAX + 1);
        for d in snap
            .pending_dialogs
            .iter()
            .chain(snap.recent_dialogs.iter().map(|c| &c.dialog))
        {
            assert!(d.message.chars().count() <= DIALOG_MESSAGE_MAX_CHARS);
        }
        let ids: HashSet<_> = snap.pending_dialogs.iter().map(|d| &d.id).collect();
        assert_eq!(ids.len(), snap.pending_dialogs.len(), "dialog listed twice");
        let answering: HashSet<String> = self
            .in_flight
            .iter()
            .filter_map(|c| match &c.purpose {
                Purpose::Answer { dialog_id } => Some(dialog_id.clone()),
                _ => None,
            })
            .collect();
        let releasing = self.in_flight.iter().any(|c| c.purpose == Purpose::Release);
        for id in self.st.dialogs_in_flight() {
            assert!(
                answering.contains(id) || releasing,
                "dialog {id} is being answered with no command in flight for it"
            );
        }
        if !releasing
            && snap
                .pending_dialogs
                .iter()
                .any(|d| !answering.contains(&d.id))
        {
            assert!(
                self.st.poll_timeout().is_some(),
                "a pending dialog with no answer in flight has no deadline"
            );
        }
        let mut seen = HashSet::new();
        if let Some(top) = &snap.frame_tree.top {
            seen.insert(top.frame_id.clone());
        }
        for c in &snap.frame_tree.children {
            assert!(
                seen.insert(c.frame_id.clone()),
                "frame {} listed twice",
                c.frame_id
            );
            if let Some(s) = &c.session_id {
                assert!(
                    self.st.has_session(&SessionId(s.clone())),
                    "lists dead session {s}"
                );
                assert!(c.is_oopif);
            }
        }
        for id in &seen {
            self.check_route(id);
        }
    }

    /// The checks too costly for every step, once the input is played.
    fn check_end(&self) {
        for f in 0..FRAMES {
            self.check_route(&frame(f));
        }
        serde_json::to_vec(&self.st.snapshot()).expect("snapshot serializes");
    }

    fn check_route(&self, frame_id: &str) {
        if let Ok(s) = self.st.route_frame(frame_id) {
            assert!(self.st.has_session(&s), "route to dead session {s}");
        }
    }
}

fn session_name(i: u8) -> String {
    session(i)
}

/// A plausible successful result for the command.
fn ok_result(c: &Command) -> Value {
    match c.purpose {
        Purpose::FrameTree => {
            let own = c
                .target
                .session()
                .map(|s| s.as_str().trim_start_matches('S').to_owned())
                .unwrap_or_default();
            json!({"frameTree": {
                "frame": {"id": if own == "1" { "T1".to_owned() } else { format!("F{own}") }, "url": "https://a.test/", "securityOrigin": "https://a.test", "loaderId": "L", "mimeType": "text/html"},
                "childFrames": [
                    {"frame": {"id": "F9", "parentId": "T1", "url": "about:srcdoc", "loaderId": "L", "mimeType": "text/html"}},
                    {"frame": {"id": "F10", "url": "", "loaderId": "L", "mimeType": "text/html"},
                     "childFrames": [{"frame": {"id": "F11", "url": "https://c.test/", "loaderId": "L", "mimeType": "text/html"}}]},
                ],
            }})
        }
        Purpose::PageLoaded { .. } => {
            json!({"targetInfo": {"targetId": "T1", "type": "page", "title": "t", "url": "https://a.test/"}})
        }
        _ => json!({}),
    }
}

/// The watchdog bounds an input picks from (`dialog_timeout_ms % 8`): none,
/// shorter than a step, and the ones people configure.
const DIALOG_TIMEOUTS_MS: [u64; 8] = [0, 1, 10, 100, 1_000, 5_000, 30_000, 65_535];

thread_local! {
    /// Each setup's page, attached once; every input plays on a clone.
    /// Building the options per input drew a bridge key from the OS and
    /// attaching built a dozen commands: a fifth of the run's time.
    static ATTACHED: RefCell<HashMap<(u8, bool, u8), Run>> = RefCell::new(HashMap::new());
}

/// A page attached under dialog policy `policy` (0–2), with or without a
/// navigation policy, and watchdog `DIALOG_TIMEOUTS_MS[timeout]`.
fn attached(policy: u8, navigation: bool, timeout: u8) -> Run {
    let policy = match policy {
        0 => DialogPolicy::MustRespond,
        1 => DialogPolicy::AutoDismiss,
        _ => DialogPolicy::AutoAccept,
    };
    let mut run = Run {
        st: State::new(Options {
            policy: policy.into(),
            dialog_timeout: Duration::from_millis(DIALOG_TIMEOUTS_MS[usize::from(timeout)]),
            // Half the runs with a navigation policy: h3.test is refused, so
            // commits to it are released (and Fetch is enabled on sessions).
            navigation: if navigation {
                NavigationPolicy::new(&[] as &[&str], &["https://h3.test"], false).unwrap()
            } else {
                NavigationPolicy::default()
            },
            ..Default::default()
        }),
        now: Now::system(),
        in_flight: Vec::new(),
        calls: 0,
    };
    run.st.attach_page(
        "T1".into(),
        SessionId("S1".into()),
        "https://a.test/",
        "",
        run.now,
    );
    run.collect();
    run.check();
    run
}

fuzz_target!(|input: Input| {
    let key = (
        input.policy % 3,
        input.policy & 4 != 0,
        (input.dialog_timeout_ms % 8) as u8,
    );
    let mut run = ATTACHED.with_borrow_mut(|m| {
        m.entry(key)
            .or_insert_with(|| attached(key.0, key.1, key.2))
            .clone()
    });
    for op in input.ops.into_iter().take(400) {
        run.step(op);
        run.check();
    }
    run.check_end();
});
