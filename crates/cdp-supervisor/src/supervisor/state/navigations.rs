//! Who is navigating which frame: the agent (its `Page.navigate`, `reload`,
//! `navigateToHistoryEntry`, or any command in flight on a session when that
//! session reports a navigation request, e.g. `Runtime.evaluate("location =
//! …")`), or our own release of a blocked page. Attribution is per
//! navigation — its frame and loader — never a time window: an entry ends
//! when its frame commits, or when the command that started it says it
//! failed or stayed in the document.

use super::Target;
use crate::cdp::protocol::{FrameId, SessionId};
use crate::supervisor::snapshot::ClosedBy;
use serde_json::Value;
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
    /// The frame a navigating method navigates.
    navigates: Option<FrameId>,
}

/// Navigations in progress that we (the agent, the watchdog, the policy) caused.
#[derive(Clone, Debug, Default)]
pub struct Navigations {
    by_frame: HashMap<FrameId, Navigation>,
    calls: HashMap<u64, AgentCall>,
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
    /// agent's command that runs script or input is in flight on that
    /// session, the agent caused it. The caller leaves out a session whose
    /// renderer a dialog blocks: a command queued there cannot run, so
    /// cannot have asked for it.
    pub fn requested(
        &mut self,
        session: Option<&SessionId>,
        frame: &FrameId,
        loader: Option<String>,
    ) {
        let Some(session) = session else { return };
        let call = self
            .calls
            .iter()
            .filter(|(_, c)| c.scripted && c.session.as_ref() == Some(session))
            .map(|(id, _)| *id)
            .min();
        if let Some(call) = call {
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
    /// calls still in flight keep their entry until their reply.
    pub fn reset(&mut self) {
        self.by_frame.clear();
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
        n.requested(Some(&SessionId::from("S1")), &f("T1"), None);
        assert_eq!(n.closer(&[f("T1")]), None, "no agent call in flight");
        n.agent_sent(1, &s1, "Runtime.evaluate", &json!({}), Some(f("T1")));
        n.requested(Some(&SessionId::from("S2")), &f("F2"), None);
        assert_eq!(n.closer(&[f("F2")]), None, "another session");
        n.requested(Some(&SessionId::from("S1")), &f("T1"), None);
        assert_eq!(n.closer(&[f("T1")]), Some(ClosedBy::Agent));
    }
}
