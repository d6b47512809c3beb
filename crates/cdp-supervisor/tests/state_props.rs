//! Property test: random CDP event sequences, with a driver that may lose
//! any command (not sent, or dropped with the connection), never break the
//! state machine's invariants (no panic, a live watchdog for every
//! unanswered dialog, no dialog "being answered" once every command has its
//! reply, caps, no duplicate frames, no route to a dead session).

mod state_support;

use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::state::{
    CONSOLE_ERRORS_MAX, Command, DialogAction, FRAME_TREE_MAX_ENTRIES, Output, Purpose,
    RECENT_DIALOGS_MAX, Target,
};
use proptest::prelude::*;
use serde_json::json;
use state_support::*;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const SESSIONS: usize = 5;
const FRAMES: usize = 12;

#[derive(Clone, Debug)]
enum ReplyKind {
    Ok,
    Refused,
    Timeout,
    /// The driver could not send it, or the connection dropped before its reply.
    Lost,
}

#[derive(Clone, Debug)]
enum Op {
    Open {
        s: usize,
        f: usize,
        kind: u8,
    },
    Close {
        s: usize,
        f: usize,
        result: bool,
    },
    FrameAttach {
        s: usize,
        f: usize,
        parent: usize,
    },
    FrameNavigate {
        s: usize,
        f: usize,
    },
    FrameDetach {
        s: usize,
        f: usize,
        swap: bool,
    },
    TargetAttach {
        parent: usize,
        child: usize,
        f: usize,
    },
    TargetDetach {
        s: usize,
    },
    Answer {
        accept: bool,
        id: Option<u8>,
        text: bool,
    },
    Reply {
        idx: usize,
        kind: ReplyKind,
    },
    Advance {
        secs: u16,
    },
    HandleTimeout,
    Console,
    /// The agent's `Page.navigate` of the top frame, through the core.
    AgentNavigate,
    Reconnect,
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0..SESSIONS;
    let f = 0..=FRAMES;
    prop_oneof![
        3 => (s.clone(), f.clone(), 0u8..4).prop_map(|(s, f, kind)| Op::Open { s, f, kind }),
        2 => (s.clone(), f.clone(), any::<bool>()).prop_map(|(s, f, result)| Op::Close { s, f, result }),
        3 => (s.clone(), 1..=FRAMES, f.clone()).prop_map(|(s, f, parent)| Op::FrameAttach { s, f, parent }),
        2 => (s.clone(), f.clone()).prop_map(|(s, f)| Op::FrameNavigate { s, f }),
        2 => (s.clone(), 1..=FRAMES, any::<bool>()).prop_map(|(s, f, swap)| Op::FrameDetach { s, f, swap }),
        2 => (s.clone(), 1..SESSIONS, 1..=FRAMES).prop_map(|(parent, child, f)| Op::TargetAttach { parent, child, f }),
        1 => (1..SESSIONS).prop_map(|s| Op::TargetDetach { s }),
        3 => (any::<bool>(), proptest::option::of(1u8..6), any::<bool>()).prop_map(|(accept, id, text)| Op::Answer { accept, id, text }),
        4 => (any::<usize>(), prop_oneof![Just(ReplyKind::Ok), Just(ReplyKind::Refused), Just(ReplyKind::Timeout), Just(ReplyKind::Lost)])
            .prop_map(|(idx, kind)| Op::Reply { idx, kind }),
        2 => (0u16..400).prop_map(|secs| Op::Advance { secs }),
        2 => Just(Op::HandleTimeout),
        1 => Just(Op::Console),
        1 => Just(Op::AgentNavigate),
        1 => Just(Op::Reconnect),
    ]
}

fn session(i: usize) -> String {
    if i == 0 {
        "S1".into()
    } else {
        format!("S{}", i + 1)
    }
}

fn frame_id(i: usize) -> String {
    if i == 0 { "T1".into() } else { format!("F{i}") }
}

struct Model {
    h: H,
    /// Commands sent and not yet answered.
    in_flight: Vec<Command>,
    /// The frame each live child session reports as its own (target id == frame id).
    session_frame: HashMap<String, String>,
    page_session: String,
    /// The agent's calls so far.
    calls: u64,
}

impl Model {
    fn collect(&mut self) {
        for o in self.h.drain() {
            if let Output::Send(c) = o {
                self.in_flight.push(*c);
            }
        }
    }

    fn step(&mut self, op: &Op) {
        let h = &mut self.h;
        let ps = self.page_session.clone();
        let sess = |i: usize| if i == 0 { ps.clone() } else { session(i) };
        match op {
            Op::Open { s, f, kind } => {
                let kind = ["alert", "confirm", "prompt", "beforeunload"][*kind as usize];
                h.open(&sess(*s), &frame_id(*f), kind, "m", "def");
            }
            Op::Close { s, f, result } => h.closed(&sess(*s), &frame_id(*f), *result, "x"),
            Op::FrameAttach { s, f, parent } => {
                h.frame_attached(&sess(*s), &frame_id(*f), &frame_id(*parent))
            }
            Op::FrameNavigate { s, f } => {
                let parent = (*f != 0).then_some("T1");
                h.frame_navigated(
                    &sess(*s),
                    &frame_id(*f),
                    parent,
                    &format!("https://n{f}.test/"),
                );
            }
            Op::FrameDetach { s, f, swap } => h.frame_detached(
                &sess(*s),
                &frame_id(*f),
                if *swap { "swap" } else { "remove" },
            ),
            Op::TargetAttach { parent, child, f } => {
                let child_s = session(*child);
                let p = json!({
                    "sessionId": child_s,
                    "targetInfo": {"targetId": frame_id(*f), "type": "iframe", "url": format!("https://o{f}.test/")},
                    "waitingForDebugger": true
                });
                h.ev(
                    Some(&sess(*parent)),
                    "Target.attachedToTarget",
                    &p.to_string(),
                );
                if h.st.has_session(&sid(&child_s)) {
                    self.session_frame.insert(child_s, frame_id(*f));
                }
            }
            Op::TargetDetach { s } => {
                let child_s = session(*s);
                let target = self.session_frame.remove(&child_s).unwrap_or_default();
                h.detach_target(Some(&ps), &child_s, &target);
            }
            Op::Answer { accept, id, text } => {
                let action = if *accept {
                    DialogAction::Accept
                } else {
                    DialogAction::Dismiss
                };
                let id = id.map(|n| format!("d-{n}"));
                let _ = h.answer(action, text.then_some("typed"), id.as_deref(), 1);
            }
            Op::Reply { idx, kind } => {
                if self.in_flight.is_empty() {
                    return;
                }
                let c = self.in_flight.remove(idx % self.in_flight.len());
                let r = match kind {
                    ReplyKind::Ok => Ok(match (&c.purpose, c.target.session()) {
                        (Purpose::FrameTree, Some(s)) => {
                            let own = self
                                .session_frame
                                .get(s.as_str())
                                .cloned()
                                .unwrap_or_else(|| "T1".into());
                            if own == "T1" {
                                json!({"frameTree": top_tree(&[("F1", "about:srcdoc")])})
                            } else {
                                json!({"frameTree": {"frame": frame(&own, Some("T1"), "https://o.test/")}})
                            }
                        }
                        _ => json!({}),
                    }),
                    ReplyKind::Refused => Err(no_dialog_showing()),
                    ReplyKind::Timeout => Err(timeout_err(&c.method)),
                    ReplyKind::Lost => Err(lost()),
                };
                h.st.on_reply(&c.target, c.purpose, r, h.now);
            }
            Op::Advance { secs } => h.advance(Duration::from_secs(u64::from(*secs))),
            Op::HandleTimeout => h.st.handle_timeout(h.now),
            Op::Console => {
                let p = json!({"type": "error", "args": [{"type": "string", "value": "e"}], "timestamp": 1.7e12});
                h.ev(Some(&ps), "Runtime.consoleAPICalled", &p.to_string());
            }
            Op::AgentNavigate => {
                self.calls += 1;
                h.st.send_agent(
                    self.calls,
                    Target::Session(sid(&ps)),
                    "Page.navigate",
                    json!({"url": "https://a.test/next"}),
                    Duration::from_secs(30),
                );
            }
            Op::Reconnect => {
                h.st.connection_lost();
                // The driver contract: every command in flight gets its one
                // reply, an error, on a disconnect.
                for c in std::mem::take(&mut self.in_flight) {
                    h.st.on_reply(&c.target, c.purpose, Err(lost()), h.now);
                }
                self.session_frame.clear();
                self.page_session = if self.page_session == "S1" {
                    "S1b".into()
                } else {
                    "S1".into()
                };
                let ps = self.page_session.clone();
                h.st.attach_page("T1".into(), sid(&ps), PAGE_URL, "", h.now);
            }
        }
        self.collect();
        // Keep the model honest: sessions the state dropped are not ours any more.
        let st = &self.h.st;
        self.session_frame.retain(|s, _| st.has_session(&sid(s)));
    }

    fn check(&mut self) -> Result<(), TestCaseError> {
        let snap = self.h.st.snapshot();
        let st = &self.h.st;
        let answering: HashSet<String> = self
            .in_flight
            .iter()
            .filter_map(|c| match &c.purpose {
                Purpose::Answer { dialog_id } => Some(dialog_id.clone()),
                _ => None,
            })
            .collect();
        let releasing = self.in_flight.iter().any(|c| c.purpose == Purpose::Release);
        let unanswered = !releasing
            && snap
                .pending_dialogs
                .iter()
                .any(|d| !answering.contains(&d.id));
        if unanswered {
            prop_assert!(
                st.poll_timeout().is_some(),
                "a pending dialog with no answer in flight has no deadline: {:?}",
                snap.pending_dialogs
            );
        }
        // Defect 1's class: a dialog "being answered" with no command left
        // to answer for it would wait forever (no watchdog, no answer).
        for id in st.dialogs_in_flight() {
            prop_assert!(
                answering.contains(id) || releasing,
                "dialog {} is being answered, yet no command for it is in flight",
                id
            );
        }
        let ids: HashSet<_> = snap.pending_dialogs.iter().map(|d| &d.id).collect();
        prop_assert_eq!(ids.len(), snap.pending_dialogs.len(), "dialog listed twice");
        prop_assert!(snap.frame_tree.children.len() <= FRAME_TREE_MAX_ENTRIES);
        prop_assert!(snap.recent_dialogs.len() <= RECENT_DIALOGS_MAX);
        prop_assert!(snap.console_errors.len() <= CONSOLE_ERRORS_MAX);
        let mut seen = HashSet::new();
        if let Some(top) = &snap.frame_tree.top {
            seen.insert(top.frame_id.clone());
        }
        for c in &snap.frame_tree.children {
            prop_assert!(
                seen.insert(c.frame_id.clone()),
                "frame {} listed twice",
                c.frame_id
            );
            if let Some(s) = &c.session_id {
                prop_assert!(st.has_session(&sid(s)), "child lists dead session {}", s);
                prop_assert!(c.is_oopif);
            }
        }
        for f in 0..=FRAMES {
            if let Ok(s) = st.route_frame(&frame_id(f)) {
                prop_assert!(st.has_session(&s), "route to dead session {}", s);
            }
        }
        serde_json::to_vec(&snap).map_err(|e| TestCaseError::fail(e.to_string()))?;
        Ok(())
    }
}

fn run(policy: DialogPolicy, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = H::new(policy);
    h.st.attach_page("T1".into(), sid("S1"), PAGE_URL, "", h.now);
    let mut m = Model {
        h,
        in_flight: Vec::new(),
        session_frame: HashMap::new(),
        page_session: "S1".into(),
        calls: 0,
    };
    m.collect();
    m.check()?;
    for op in ops {
        m.step(op);
        m.check()?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_under_random_event_sequences(
        policy in prop_oneof![
            Just(DialogPolicy::MustRespond),
            Just(DialogPolicy::AutoDismiss),
            Just(DialogPolicy::AutoAccept)
        ],
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        run(policy, &ops)?;
    }
}
