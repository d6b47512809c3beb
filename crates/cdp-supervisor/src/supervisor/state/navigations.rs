//! Who is navigating which frame: the agent (its `Page.navigate`, `reload`,
//! `navigateToHistoryEntry`, or any command in flight on a session when that
//! session reports a navigation request, e.g. `Runtime.evaluate("location =
//! …")`), or our own release of a blocked page. Attribution is per
//! navigation — its frame and loader — never a time window: an entry ends
//! when its frame commits, or when the command that started it says it
//! failed or stayed in the document.
//!
//! It also follows the last navigation the agent's script or input asked
//! for in the tab ([`ActionNavigation`]) to its end — a new document
//! parsed, the same document (a fragment), a download, or nothing — so that an action
//! returns once what it started has an outcome, and not after a fixed wait.

use super::Target;
use crate::cdp::protocol::{FrameId, SessionId};
use crate::supervisor::snapshot::ClosedBy;
use serde_json::Value;
use std::time::Duration;
// foldhash, not SipHash: see `targets.rs`.
use foldhash::HashMap;

/// The agent's CDP methods that navigate the frame they are sent to.
const NAVIGATING_METHODS: [&str; 3] = [
    "Page.navigate",
    "Page.reload",
    "Page.navigateToHistoryEntry",
];

/// The agent's CDP methods that run page script or input, and so can make
/// the page request a navigation (`location = …`, a click on a link). Any
/// other command in flight (a `DOM.getDocument`, a screenshot) cannot: a
/// navigation the page requests meanwhile is the page's own.
const SCRIPT_OR_INPUT_METHODS: [&str; 7] = [
    "Runtime.evaluate",
    "Runtime.callFunctionOn",
    "Runtime.runScript",
    "Input.dispatchMouseEvent",
    "Input.dispatchKeyEvent",
    "Input.dispatchTouchEvent",
    "Input.insertText",
];

#[derive(Clone, Debug)]
struct Navigation {
    by: ClosedBy,
    /// The agent's call that started it, when it was one.
    call: Option<u64>,
    /// Its loader, once known.
    loader: Option<String>,
}

#[derive(Clone, Debug)]
struct AgentCall {
    session: Option<SessionId>,
    /// It runs page script or input ([`SCRIPT_OR_INPUT_METHODS`]).
    scripted: bool,
    /// It is input (`Input.*`): sent to the page session, it lands in
    /// whichever frame is under it, an OOPIF's included.
    input: bool,
    /// The frame a navigating method navigates.
    navigates: Option<FrameId>,
}

/// How long after its frame stopped loading with no new document a
/// navigation the agent asked for may still turn out a download: Chromium
/// sends `Page.frameStoppedLoading` first and `Browser.downloadWillBegin`
/// once the download's file exists (4–8 ms later, measured).
pub const DOWNLOAD_AFTER_STOP: Duration = Duration::from_millis(500);

pub use crate::supervisor::snapshot::ActionNavigation;

#[derive(Clone, Debug)]
struct Asked {
    seq: u64,
    frame: FrameId,
    stage: Stage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Requested,
    /// Its frame stopped loading with no new document; a download may follow.
    Stopped,
    /// Its document committed and is not parsed yet.
    Committed,
    Settled,
}

/// Navigations in progress that we (the agent, the watchdog, the policy) caused.
#[derive(Clone, Debug, Default)]
pub struct Navigations {
    by_frame: HashMap<FrameId, Navigation>,
    calls: HashMap<u64, AgentCall>,
    /// The last navigation the agent's script or input asked for (boxed:
    /// most tabs never have one, and every byte of an idle state counts).
    asked: Option<Box<Asked>>,
}

impl Navigations {
    /// No navigation of ours is in progress: no commit needs its lineage.
    pub fn is_empty(&self) -> bool {
        self.by_frame.is_empty()
    }

    /// The agent sent `method` to `target`; `own_frame` is that session's
    /// main frame (the frame a `Page.navigate` without `frameId` navigates).
    pub fn agent_sent(
        &mut self,
        call: u64,
        target: &Target,
        method: &str,
        params: &Value,
        own_frame: Option<FrameId>,
    ) {
        let navigates = NAVIGATING_METHODS
            .contains(&method)
            .then(|| {
                params
                    .get("frameId")
                    .and_then(Value::as_str)
                    .map(|f| FrameId(f.to_owned()))
                    .or(own_frame)
            })
            .flatten();
        if let Some(f) = &navigates {
            self.by_frame.insert(
                f.clone(),
                Navigation {
                    by: ClosedBy::Agent,
                    call: Some(call),
                    loader: None,
                },
            );
        }
        self.calls.insert(
            call,
            AgentCall {
                session: target.session().cloned(),
                scripted: SCRIPT_OR_INPUT_METHODS.contains(&method),
                input: method.starts_with("Input."),
                navigates,
            },
        );
    }

    /// The agent's call `call` replied: a navigation that failed
    /// (`errorText`) or stayed in its document (no `loaderId`) ends here;
    /// one that started a new document learns its loader.
    pub fn agent_replied(&mut self, call: u64, result: Result<&Value, ()>) {
        let Some(c) = self.calls.remove(&call) else {
            return;
        };
        let Some(frame) = c.navigates else { return };
        let Some(nav) = self
            .by_frame
            .get_mut(&frame)
            .filter(|n| n.call == Some(call))
        else {
            return;
        };
        let loader = result.ok().and_then(|v| {
            let failed = v
                .get("errorText")
                .and_then(Value::as_str)
                .is_some_and(|e| !e.is_empty());
            (!failed)
                .then(|| v.get("loaderId").and_then(Value::as_str).map(str::to_owned))
                .flatten()
        });
        match loader {
            Some(l) => nav.loader = Some(l),
            None => {
                self.by_frame.remove(&frame);
            }
        }
    }

    /// `session` reports that `frame` is about to navigate: while an
    /// agent's command that runs script is in flight on that session, or
    /// its input on any session of the page (input lands in an OOPIF too),
    /// the agent caused it. The caller leaves out a session whose
    /// renderer a dialog blocks: a command queued there cannot run, so
    /// cannot have asked for it.
    /// `in_frame` is false for a request whose document goes elsewhere (a
    /// new tab, a download: `disposition` other than `currentTab`), which
    /// [`Navigations::action`] does not follow.
    pub fn requested(
        &mut self,
        session: Option<&SessionId>,
        frame: &FrameId,
        loader: Option<String>,
        in_frame: bool,
    ) {
        let Some(session) = session else { return };
        let call = self
            .calls
            .iter()
            .filter(|(_, c)| c.scripted && (c.input || c.session.as_ref() == Some(session)))
            .map(|(id, _)| *id)
            .min();
        if let Some(call) = call {
            if in_frame {
                self.follow(frame);
            }
            let nav = self.by_frame.entry(frame.clone()).or_insert(Navigation {
                by: ClosedBy::Agent,
                call: Some(call),
                loader: None,
            });
            if loader.is_some() {
                nav.loader = loader;
            }
        }
    }

    /// Whether a navigation of `frame` that the agent's call started is in
    /// progress (sent, and neither committed nor failed).
    pub fn agent_navigating(&self, frame: &FrameId) -> bool {
        self.by_frame
            .get(frame)
            .is_some_and(|n| n.by == ClosedBy::Agent && n.call.is_some())
    }

    /// We navigate `frame` ourselves to release a blocked page.
    pub fn release(&mut self, frame: FrameId, by: ClosedBy) {
        self.by_frame.insert(
            frame,
            Navigation {
                by,
                call: None,
                loader: None,
            },
        );
    }

    /// Our release did not happen (its command failed).
    pub fn release_failed(&mut self, frame: &FrameId) {
        if self.by_frame.get(frame).is_some_and(|n| n.call.is_none()) {
            self.by_frame.remove(frame);
        }
    }

    /// Whether a navigation we caused is in progress: without one,
    /// [`Navigations::closer`] is `None` whatever the lineage.
    pub fn in_progress(&self) -> bool {
        !self.by_frame.is_empty()
    }

    /// Who is navigating the first frame of `lineage` (a frame, then its
    /// ancestors) that one of ours navigates, if any.
    pub fn closer(&self, lineage: &[FrameId]) -> Option<ClosedBy> {
        lineage
            .iter()
            .find_map(|f| self.by_frame.get(f))
            .map(|n| n.by)
    }

    /// `frame` committed the document of `loader`: its navigation ends.
    /// Returns who caused it, when it was one of ours (a navigation whose
    /// loader is known must match).
    pub fn committed(&mut self, frame: &FrameId, loader: Option<&String>) -> Option<ClosedBy> {
        let nav = self.by_frame.remove(frame)?;
        match (&nav.loader, loader) {
            (Some(ours), Some(theirs)) if ours != theirs => None,
            _ => Some(nav.by),
        }
    }

    /// A fresh page (attach): no navigation of the old one counts. Agent
    /// calls still in flight keep their entry until their reply. The
    /// navigation the agent asked for last ends too: the page it was
    /// leaving is gone.
    pub fn reset(&mut self) {
        self.by_frame.clear();
        self.settle_all();
    }

    /// Follows a new navigation of `frame` the agent asked for, unless one
    /// of that frame is followed and has no outcome yet (Chromium announces
    /// one navigation up to three times: scheduled, requested, started).
    fn follow(&mut self, frame: &FrameId) {
        let seq = match &self.asked {
            Some(a) if a.frame == *frame && a.stage == Stage::Requested => return,
            Some(a) => a.seq + 1,
            None => 1,
        };
        self.asked = Some(Box::new(Asked {
            seq,
            frame: frame.clone(),
            stage: Stage::Requested,
        }));
    }

    /// The last navigation the agent's script or input asked for, if any.
    pub fn action(&self) -> Option<ActionNavigation> {
        self.asked.as_ref().map(|a| ActionNavigation {
            seq: a.seq,
            settled: a.stage == Stage::Settled,
        })
    }

    /// `frame` committed a new document: a followed navigation of it has
    /// its outcome once that document is parsed ([`Navigations::lifecycle`]),
    /// so that what the agent reads next has its title and its elements.
    pub fn frame_committed(&mut self, frame: &FrameId) {
        if let Some(a) = &mut self.asked
            && a.frame == *frame
            && a.stage != Stage::Settled
        {
            a.stage = Stage::Committed;
        }
    }

    /// `frame` moved within its document (a fragment, `pushState`): a
    /// followed navigation of it has its outcome.
    pub fn frame_moved(&mut self, frame: &FrameId) {
        if let Some(a) = &mut self.asked
            && a.frame == *frame
        {
            a.stage = Stage::Settled;
        }
    }

    /// `Page.lifecycleEvent` `name` of `frame`: the document a followed
    /// navigation committed is parsed (`DOMContentLoaded`, or anything
    /// after it).
    pub fn lifecycle(&mut self, frame: &FrameId, name: &str) {
        if let Some(a) = &mut self.asked
            && a.frame == *frame
            && a.stage == Stage::Committed
            && matches!(
                name,
                "DOMContentLoaded" | "load" | "networkAlmostIdle" | "networkIdle"
            )
        {
            a.stage = Stage::Settled;
        }
    }

    /// These frames are gone: a followed navigation of one of them ends.
    pub fn frames_gone(&mut self, gone: &[FrameId]) {
        if let Some(a) = &mut self.asked
            && gone.contains(&a.frame)
        {
            a.stage = Stage::Settled;
        }
    }

    /// `frame` stopped loading. Returns true when a followed navigation of
    /// it had no document yet: it may still become a download, so the
    /// caller arms [`DOWNLOAD_AFTER_STOP`] and then calls
    /// [`Navigations::no_download`]. A committed one has its outcome.
    ///
    /// A navigation of the agent's that has not committed when its frame
    /// stops loading ends with no document (a 204, a download): it closes
    /// nothing later.
    pub fn frame_stopped(&mut self, frame: &FrameId) -> bool {
        self.end_agents(frame);
        match &mut self.asked {
            Some(a) if a.frame == *frame && a.stage == Stage::Requested => {
                a.stage = Stage::Stopped;
                true
            }
            Some(a) if a.frame == *frame && a.stage == Stage::Committed => {
                a.stage = Stage::Settled;
                false
            }
            _ => false,
        }
    }

    /// A `beforeunload` of `frame` was dismissed: the navigation it held,
    /// if the agent's, is cancelled. Chromium sends no
    /// `frameStoppedLoading` for one its script asked for, only
    /// `frameClearedScheduledNavigation`, which it also sends for one that
    /// goes on.
    pub fn cancelled(&mut self, frame: &FrameId) {
        self.end_agents(frame);
    }

    /// The agent's navigation of `frame`, if one is in progress, ended with
    /// no new document.
    fn end_agents(&mut self, frame: &FrameId) {
        if self.agent_navigating(frame) {
            self.by_frame.remove(frame);
        }
    }

    /// A download began from `frame`: a followed navigation of it became one.
    pub fn download_began(&mut self, frame: &FrameId) {
        // The same outcome as a move within the page: nothing more comes.
        self.frame_moved(frame);
    }

    /// [`DOWNLOAD_AFTER_STOP`] passed with no download: the navigation
    /// ended with no new document.
    pub fn no_download(&mut self) {
        if let Some(a) = &mut self.asked
            && a.stage == Stage::Stopped
        {
            a.stage = Stage::Settled;
        }
    }

    /// Whatever was followed has its outcome (the page went with its
    /// session, or was replaced).
    pub fn settle_all(&mut self) {
        if let Some(a) = &mut self.asked {
            a.stage = Stage::Settled;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(id: &str) -> FrameId {
        FrameId(id.to_owned())
    }

    #[test]
    fn an_agent_navigation_is_the_agents_until_its_frame_commits() {
        let mut n = Navigations::default();
        let s1 = Target::Session(SessionId::from("S1"));
        n.agent_sent(1, &s1, "Page.navigate", &json!({"url": "u"}), Some(f("T1")));
        assert_eq!(
            n.closer(&[f("F2"), f("T1")]),
            Some(ClosedBy::Agent),
            "an ancestor's"
        );
        n.agent_replied(1, Ok(&json!({"frameId": "T1", "loaderId": "L2"})));
        assert_eq!(
            n.committed(&f("T1"), Some(&"L2".to_owned())),
            Some(ClosedBy::Agent)
        );
        assert_eq!(n.closer(&[f("T1")]), None, "ended with its commit");
    }

    #[test]
    fn a_failed_or_same_document_navigation_ends_at_its_reply() {
        let mut n = Navigations::default();
        let s1 = Target::Session(SessionId::from("S1"));
        n.agent_sent(1, &s1, "Page.navigate", &json!({}), Some(f("T1")));
        n.agent_replied(1, Ok(&json!({"frameId": "T1", "errorText": "net::ERR"})));
        assert_eq!(n.closer(&[f("T1")]), None);
        n.agent_sent(2, &s1, "Page.navigate", &json!({}), Some(f("T1")));
        n.agent_replied(2, Ok(&json!({"frameId": "T1"})));
        assert_eq!(n.closer(&[f("T1")]), None);
    }

    #[test]
    fn a_navigation_requested_while_an_agent_call_is_in_flight_is_the_agents() {
        let mut n = Navigations::default();
        let s1 = Target::Session(SessionId::from("S1"));
        n.requested(Some(&SessionId::from("S1")), &f("T1"), None, true);
        assert_eq!(n.closer(&[f("T1")]), None, "no agent call in flight");
        n.agent_sent(1, &s1, "Runtime.evaluate", &json!({}), Some(f("T1")));
        n.requested(Some(&SessionId::from("S2")), &f("F2"), None, true);
        assert_eq!(n.closer(&[f("F2")]), None, "another session");
        n.requested(Some(&SessionId::from("S1")), &f("T1"), None, true);
        assert_eq!(n.closer(&[f("T1")]), Some(ClosedBy::Agent));
        n.agent_sent(
            2,
            &s1,
            "Input.dispatchMouseEvent",
            &json!({}),
            Some(f("T1")),
        );
        n.requested(Some(&SessionId::from("S3")), &f("F3"), None, true);
        assert_eq!(
            n.closer(&[f("F3")]),
            Some(ClosedBy::Agent),
            "input lands in an OOPIF too"
        );
    }

    #[test]
    fn the_navigation_an_action_asked_for_is_followed_to_its_outcome() {
        let mut n = Navigations::default();
        let s1 = Target::Session(SessionId::from("S1"));
        let on = |n: &mut Navigations, frame: &str, in_frame: bool| {
            n.requested(Some(&SessionId::from("S1")), &f(frame), None, in_frame)
        };
        on(&mut n, "T1", true);
        assert_eq!(n.action(), None, "no agent call in flight: the page's own");
        n.agent_sent(
            1,
            &s1,
            "Input.dispatchMouseEvent",
            &json!({}),
            Some(f("T1")),
        );
        on(&mut n, "T1", false);
        assert_eq!(n.action(), None, "a new tab's or a download's document");
        on(&mut n, "T1", true);
        on(&mut n, "T1", true);
        let first = ActionNavigation {
            seq: 1,
            settled: false,
        };
        assert_eq!(
            n.action(),
            Some(first),
            "scheduled, requested, started: one"
        );
        n.frame_committed(&f("F9"));
        assert_eq!(n.action(), Some(first), "another frame committed");
        n.frame_committed(&f("T1"));
        n.lifecycle(&f("T1"), "init");
        assert_eq!(n.action(), Some(first), "committed, not parsed yet");
        n.lifecycle(&f("T1"), "DOMContentLoaded");
        assert_eq!(
            n.action(),
            Some(ActionNavigation {
                seq: 1,
                settled: true
            })
        );

        on(&mut n, "T1", true);
        n.frame_moved(&f("T1"));
        assert_eq!(
            n.action(),
            Some(ActionNavigation {
                seq: 2,
                settled: true
            }),
            "a fragment"
        );

        on(&mut n, "T1", true);
        assert!(n.frame_stopped(&f("T1")), "stopped with no document");
        assert!(!n.frame_stopped(&f("T1")), "once");
        assert!(!n.action().unwrap().settled, "a download may follow");
        n.download_began(&f("T1"));
        assert_eq!(
            n.action(),
            Some(ActionNavigation {
                seq: 3,
                settled: true
            })
        );

        on(&mut n, "T1", true);
        assert!(n.frame_stopped(&f("T1")));
        n.no_download();
        assert_eq!(
            n.action(),
            Some(ActionNavigation {
                seq: 4,
                settled: true
            })
        );

        on(&mut n, "F2", true);
        n.frames_gone(&[f("F2"), f("F3")]);
        assert_eq!(
            n.action(),
            Some(ActionNavigation {
                seq: 5,
                settled: true
            }),
            "its frame went"
        );

        on(&mut n, "T1", true);
        n.reset();
        assert_eq!(
            n.action(),
            Some(ActionNavigation {
                seq: 6,
                settled: true
            }),
            "the page went"
        );
    }
}
