//! Targets and sessions: the page we supervise, the child sessions
//! (OOPIFs) auto-attached under it, and the commands that set a session up.
//!
//! The rules a newcomer changes live in [`Targets::setup`] (what every
//! session is sent) and [`Targets::adopt`] (which auto-attached targets we keep).

use super::{Out, Purpose, SESSIONS_TRACKED_MAX, Target};
use crate::cdp::protocol::{AttachedToTarget, FrameId, SessionId, TargetId};
use crate::supervisor::bridge;
use crate::supervisor::snapshot::ArcStr;
use serde_json::{Value, json};
// Keys are ids Chromium makes (or counters of ours), never page content:
// foldhash (serde_json's own) instead of SipHash, which cost about 260
// instructions per lookup of a session id (callgrind).
use foldhash::HashMap;

/// What a session's one `Fetch.enable` pauses (a second `Fetch.enable`
/// would replace the first, so the patterns are merged into one).
#[derive(Clone, Copy, Debug, Default)]
pub struct Intercept<'a> {
    /// The dialog bridge's requests ([`bridge::fetch_patterns`]), with this
    /// supervisor's key; `None`: no bridge.
    pub bridge: Option<&'a bridge::BridgeKey>,
    /// The document requests the navigation policy checks (a `urlPattern`,
    /// see [`crate::supervisor::origins::NavigationPolicy::document_pattern`]).
    pub documents: Option<&'static str>,
    /// HTTP authentication challenges become `Fetch.authRequired`
    /// (`handleAuthRequests`). Chromium raises one only for a request some
    /// pattern pauses at its request stage, so every document is paused: a
    /// document no pattern pauses, with `Fetch` on, fails at once with
    /// `net::ERR_INVALID_AUTH_CREDENTIALS` (verified on Chromium 156).
    pub auth: bool,
}

impl Intercept<'_> {
    /// What an OOPIF's session pauses: no auth challenges. Chromium raises
    /// none in an OOPIF or in anything inside it (its own navigations, a
    /// same-site iframe in it, a further OOPIF): with or without `Fetch` on
    /// the OOPIF's session, such a document shows the server's 401 body and
    /// loads (verified on Chromium 156). Its session then pauses only what
    /// the bridge and the navigation policy ask for — by default nothing, and
    /// no `Fetch.enable` is sent (it costs about 1.2 ms of an OOPIF's setup).
    pub fn in_oopif(self) -> Self {
        Intercept {
            auth: false,
            ..self
        }
    }

    /// `Fetch.enable` params, or `None`: no interception at all.
    pub fn fetch_params(self) -> Option<Value> {
        let mut patterns = Vec::new();
        if let Some(key) = self.bridge {
            let bridge = bridge::fetch_patterns(key);
            patterns.extend(bridge["patterns"].as_array().cloned().unwrap_or_default());
        }
        if let Some(url_pattern) = self.documents.or(self.auth.then_some("*")) {
            patterns.push(json!({
                "urlPattern": url_pattern,
                "resourceType": "Document",
                "requestStage": "Request",
            }));
        }
        (!patterns.is_empty())
            .then(|| json!({ "patterns": patterns, "handleAuthRequests": self.auth }))
    }
}

/// The supervised page's target and session, and the live child sessions.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    top_session: Option<SessionId>,
    top_target: Option<TargetId>,
    /// Shared with every snapshot that shows it; replaced only when it
    /// changes, so that an unchanged title compares by address.
    title: ArcStr,
    /// Every live session we supervise (the page's too), with its target.
    sessions: HashMap<SessionId, TargetId>,
    /// Counts the changes of `sessions` (see [`Targets::generation`]).
    generation: u64,
}

/// Which supervised session an event came on ([`Targets::kind_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// The page's own session.
    Page,
    /// A live child session (an OOPIF's).
    Child,
    /// None we supervise (the browser's, a gone one, another tab's).
    Unknown,
}

/// What [`Targets::adopt`] decided about an auto-attached target.
pub enum Adopted {
    /// Not ours (another client's, or not under a session we supervise).
    Ignored,
    /// Resumed and let go (not a frame, or past [`SESSIONS_TRACKED_MAX`]);
    /// `frame` says whether it was a frame we will not show.
    Released {
        /// Whether it was a page or iframe target.
        frame: bool,
    },
    /// Supervised: set up and resumed.
    Kept {
        /// Whether it is an OOPIF (`iframe` target; target id == frame id).
        oopif: bool,
    },
}

impl Targets {
    /// The page session, once attached.
    pub fn top_session(&self) -> Option<&SessionId> {
        self.top_session.as_ref()
    }

    /// The page's target id, once attached.
    pub fn top_target(&self) -> Option<&TargetId> {
        self.top_target.as_ref()
    }

    /// The page's title.
    pub fn title(&self) -> &ArcStr {
        &self.title
    }

    /// Sets the page's title (`targetInfoChanged`, `getTargetInfo`). The
    /// same title again keeps the string the snapshots share.
    pub fn set_title(&mut self, title: &str) {
        if self.title != title {
            self.title = title.into();
        }
    }

    /// A number that changes whenever a session comes or goes: what was
    /// built from the sessions (the frame tree's routable `session_id`s)
    /// is stale once it differs.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether `session` is a live one we supervise.
    pub fn has_session(&self, session: &SessionId) -> bool {
        self.kind_of(Some(session)) != SessionKind::Unknown
    }

    /// The live sessions.
    pub fn session_ids(&self) -> impl Iterator<Item = &SessionId> {
        self.sessions.keys()
    }

    /// The target a session is attached to.
    pub fn target_of(&self, session: &SessionId) -> Option<&TargetId> {
        self.sessions.get(session)
    }

    /// The main frame of a session's target (target id == frame id).
    pub fn frame_of(&self, session: &SessionId) -> Option<FrameId> {
        self.sessions.get(session).map(|t| FrameId(t.0.clone()))
    }

    /// Whether `frame` is the main frame of `session`'s own target (an
    /// OOPIF's target id is its frame id).
    pub fn is_frame_of(&self, session: &SessionId, frame: &FrameId) -> bool {
        self.sessions.get(session).is_some_and(|t| t.0 == frame.0)
    }

    /// Which of our sessions `session` is: looked up once per event, so
    /// that its rules need not compare the id again.
    pub fn kind_of(&self, session: Option<&SessionId>) -> SessionKind {
        // Most events come on the page's own session (always in `sessions`
        // while set): one compare instead of hashing it.
        match session {
            Some(s) if self.top_session.as_ref() == Some(s) => SessionKind::Page,
            Some(s) if self.sessions.contains_key(s) => SessionKind::Child,
            _ => SessionKind::Unknown,
        }
    }

    /// Whether `session` is the page's.
    pub fn is_top(&self, session: Option<&SessionId>) -> bool {
        session.is_some() && session == self.top_session.as_ref()
    }

    /// The page `target_id` is attached as `session`: a fresh set of
    /// sessions. `paused`: it waits for the debugger, and is resumed once
    /// set up.
    pub fn attach_page(
        &mut self,
        target_id: TargetId,
        session: SessionId,
        title: &str,
        paused: bool,
        out: &mut Out,
        intercept: Intercept<'_>,
    ) {
        self.top_target = Some(target_id.clone());
        self.top_session = Some(session.clone());
        self.generation += 1;
        self.sessions.clear();
        self.sessions.insert(session.clone(), target_id);
        if !title.is_empty() {
            self.set_title(title);
        }
        Self::setup(&session, false, paused, intercept, out);
    }

    /// The connection dropped: every session is dead.
    pub fn connection_lost(&mut self) {
        self.generation += 1;
        self.sessions.clear();
        self.top_session = None;
    }

    /// A session detached. `Some(true)` when it was the page's (every
    /// session goes with it), `Some(false)` for a child, `None` if unknown.
    pub fn remove(&mut self, session: &SessionId) -> Option<(bool, TargetId)> {
        let target = self.sessions.remove(session)?;
        self.generation += 1;
        if Some(session) == self.top_session.as_ref() {
            self.top_session = None;
            self.sessions.clear();
            return Some((true, target));
        }
        Some((false, target))
    }

    /// An auto-attached target under `parent`: kept (and set up) when it is
    /// a frame under a session we supervise, resumed and detached otherwise.
    pub fn adopt(
        &mut self,
        parent: Option<&SessionId>,
        a: &AttachedToTarget,
        intercept: Intercept<'_>,
        out: &mut Out,
    ) -> Adopted {
        let child = a.session_id.clone();
        let kind = a.target_info.target_type.as_str();
        if !parent.is_some_and(|p| self.sessions.contains_key(p))
            || self.sessions.contains_key(&child)
        {
            return Adopted::Ignored;
        }
        let is_frame = kind == "iframe" || kind == "page";
        if !is_frame || self.sessions.len() >= SESSIONS_TRACKED_MAX {
            // Resume it (it waits for a debugger) and let it go.
            out.send(
                Target::Session(child.clone()),
                "Runtime.runIfWaitingForDebugger",
                json!({}),
                Purpose::Setup,
            );
            out.send(
                Target::Browser,
                "Target.detachFromTarget",
                json!({"sessionId": child.0}),
                Purpose::Setup,
            );
            return Adopted::Released { frame: is_frame };
        }
        self.generation += 1;
        self.sessions
            .insert(child.clone(), a.target_info.target_id.clone());
        let intercept = if kind == "iframe" {
            intercept.in_oopif()
        } else {
            intercept
        };
        Self::setup(&child, true, true, intercept, out);
        Adopted::Kept {
            oopif: kind == "iframe",
        }
    }

    /// Enables the domains on a session, turns on auto-attach and asks for
    /// the frame tree. `Page.enable` is never waited for: a page blocked by
    /// a dialog does not answer it. `child`: an OOPIF's session. `paused`: a
    /// target that waits for the debugger; with interception it is resumed once its
    /// `Fetch.enable` has replied (Chromium sets interception up
    /// asynchronously: a resume sent right behind it could let the first
    /// document request through first), so its first document request is
    /// paused for the policy.
    fn setup(
        session: &SessionId,
        child: bool,
        paused: bool,
        intercept: Intercept<'_>,
        out: &mut Out,
    ) {
        let s = || Target::Session(session.clone());
        out.send(s(), "Page.getFrameTree", json!({}), Purpose::FrameTree);
        out.send(s(), "Runtime.enable", json!({}), Purpose::Setup);
        out.send(
            s(),
            "Target.setAutoAttach",
            json!({
                "autoAttach": true,
                "waitForDebuggerOnStart": true,
                "flatten": true,
                "filter": [{"type": "iframe", "exclude": false}, {"type": "page", "exclude": false}],
            }),
            Purpose::Setup,
        );
        out.send(s(), "Page.enable", json!({}), Purpose::PageEnable);
        // A file input's chooser becomes a pending dialog
        // (`Page.fileChooserOpened`) instead of a native window nobody sees.
        out.send(
            s(),
            "Page.setInterceptFileChooserDialog",
            json!({"enabled": true}),
            Purpose::Setup,
        );
        if !child {
            // Lifecycle events name their document's loader: which document
            // a load event is about, even when Chromium skips frameNavigated
            // (a new tab's first navigation can).
            out.send(
                s(),
                "Page.setLifecycleEventsEnabled",
                json!({"enabled": true}),
                Purpose::Setup,
            );
        }
        if let Some(key) = intercept.bridge {
            // After Page.enable: the script takes effect only while the Page
            // domain is enabled; before the resume: the first document gets it.
            out.send(
                s(),
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": bridge::script(key), "runImmediately": true}),
                Purpose::Setup,
            );
        }
        match (intercept.fetch_params(), paused) {
            (Some(params), true) => {
                out.send(s(), "Fetch.enable", params, Purpose::ResumeWhenIntercepted);
            }
            (Some(params), false) => out.send(s(), "Fetch.enable", params, Purpose::Setup),
            (None, true) => Self::resume(session, out),
            (None, false) => {}
        }
    }

    /// Lets a target that waits for the debugger run.
    pub(super) fn resume(session: &SessionId, out: &mut Out) {
        out.send(
            Target::Session(session.clone()),
            "Runtime.runIfWaitingForDebugger",
            json!({}),
            Purpose::Setup,
        );
    }
}
