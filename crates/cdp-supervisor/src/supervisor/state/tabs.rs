//! Tabs: every page a task supervises, each with its own [`State`].
//!
//! [`Tabs`] is the coordinator the driver feeds. It keeps one [`State`]
//! per supervised tab — the *current* tab (the one the agent drives), every
//! page opened from a supervised tab (`window.open`, `target=_blank`: its
//! `Target.attachedToTarget.targetInfo.openerId`), and pages the agent
//! creates (`Target.createTarget`, `browser_tabs new`) — never unrelated
//! tabs of other clients. It routes each event and reply to its tab, shares
//! one dialog-id sequence between the tabs (ids stay unique per task), and
//! builds one snapshot: the current tab's page, frames and console, every
//! tab's pending dialogs, and the `tabs` list.
//!
//! How new pages reach us (verified on Chromium 156): page-session
//! auto-attach never reports popups; browser-level `Target.setAutoAttach
//! {autoAttach, waitForDebuggerOnStart, flatten, filter:[page]}` does, each
//! new page paused. A paused page freezes its opener, so every paused page
//! is resumed at once: a supervised one after its setup commands are
//! *sent* (their replies do not come while it is paused), any other one
//! resumed and let go. Browser-level auto-attach also attaches every
//! existing page (not paused): a tab we already hold is let go of again,
//! and after a reconnect that is how every supervised tab is re-attached.
//! `Target.createTarget` reports the new page's attach *before* its reply,
//! so a page with no opener that attaches while one of our creates is in
//! flight is held (paused) until the reply names it.

use super::loads::{Ask, LOAD_CHECK_TIMEOUT, Loads};
use super::{
    DialogError, DialogRequest, Notice, Now, Options, Output, Purpose, RECENT_DIALOGS_MAX,
    ReplyError, RouteError, SessionKind, State, Target,
};
use crate::cdp::protocol::{AttachedToTarget, Event, SessionId, TargetId};
use crate::supervisor::origins::BlockedNavigation;
use crate::supervisor::snapshot::{
    ClosedBy, ClosedDialog, List, PendingDialog, Snapshot, TabView, share,
};
use arcstr::ArcStr;
use serde_json::{Value, json};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Closed tabs whose machines are kept: replies still owed to them find
/// them, and their closed dialogs stay in `recent_dialogs`. One an agent's
/// dialog answer still waits on is kept past it until the reply comes.
pub const CLOSED_TABS_KEPT: usize = 8;

/// How long a page past `max_tabs` under a navigation policy may go without
/// a document request before it is closed anyway: a popup's first request
/// comes within milliseconds of its resume; one that asks for none (an
/// `about:blank` `window.open`) would otherwise stay open and tracked forever.
pub const CLOSING_GRACE: Duration = Duration::from_secs(5);
/// Created targets whose attach has not come yet, at most (a bound only).
const EXPECTED_MAX: usize = 32;

/// The key of [`Tabs`]' own commands ([`super::Command::tab`]).
const OWN: u32 = 0;

#[derive(Clone, Debug)]
struct Tab {
    key: u32,
    target_id: TargetId,
    opener: Option<TargetId>,
    state: State,
    crashed: bool,
    /// The entry the snapshot last showed for it, shared while still true.
    view: Option<Arc<TabView>>,
    /// Where its first document is going, until it commits (a popup's,
    /// from its opener's request): its URL meanwhile.
    pending_url: Option<ArcStr>,
}

/// Every supervised tab of one task; see the module doc.
///
/// `Clone` forks it, as [`State`]'s does: a fuzz harness attaches once and
/// plays each input on a copy.
#[derive(Clone, Debug)]
pub struct Tabs {
    opts: Options,
    /// Live tabs, oldest first.
    tabs: Vec<Tab>,
    /// Closed tabs, newest last, at most [`CLOSED_TABS_KEPT`] (see there).
    closed: VecDeque<Tab>,
    next_key: u32,
    current: Option<u32>,
    /// Keys in the order they were last current (most recent last).
    recency: Vec<u32>,
    /// A page opened past `max_tabs` was let go.
    truncated: bool,
    /// Paused pages with no opener, held until a create in flight names them.
    held: Vec<AttachedToTarget>,
    /// Pages past `max_tabs` under a policy that checks documents: closed
    /// at their first document request, which is failed, or at the
    /// deadline when they ask for none (an `about:blank` popup):
    /// (session, target, deadline).
    closing: Vec<(SessionId, TargetId, Instant)>,
    /// The agent's `Target.createTarget` calls in flight.
    creating: HashSet<u64>,
    /// Our own `Target.createTarget` (the last tab closed) is in flight.
    creating_own: bool,
    /// Created targets whose attach has not come yet.
    expected: VecDeque<TargetId>,
    next_dialog: u64,
    /// A watcher listens ([`Tabs::set_watched`]).
    watched: bool,
    /// A person has the task ([`Tabs::set_person_in_control`]).
    person: bool,
    out: VecDeque<Output>,
    /// The lists the last snapshot showed, shared by the next while unchanged.
    shown: Shown,
    /// Every tab's downloads (they come on the browser session).
    downloads: super::downloads::Downloads,
    /// The document loads callers wait for.
    loads: Loads,
    /// `isolation: context`: the task's browser context; a page of
    /// another context is never adopted, whatever its opener.
    browser_context: Option<String>,
}

/// The lists [`Tabs`] gathers from every tab, as the last snapshot showed them.
#[derive(Clone, Debug, Default)]
struct Shown {
    pending_dialogs: List<PendingDialog>,
    recent_dialogs: List<ClosedDialog>,
    blocked_navigations: List<BlockedNavigation>,
    tabs: List<TabView>,
    downloads: List<super::downloads::DownloadView>,
}

impl Tabs {
    /// Numbers the next dialog `next` at least (`d-next`): a task's ids go
    /// on from the supervisor it had before.
    pub fn continue_dialog_numbers(&mut self, next: u64) {
        self.next_dialog = self.next_dialog.max(next);
    }

    /// No tab yet.
    pub fn new(opts: Options) -> Tabs {
        Tabs {
            opts,
            tabs: Vec::new(),
            closed: VecDeque::new(),
            next_key: OWN + 1,
            current: None,
            recency: Vec::new(),
            truncated: false,
            held: Vec::new(),
            closing: Vec::new(),
            creating: HashSet::new(),
            creating_own: false,
            expected: VecDeque::new(),
            next_dialog: 1,
            watched: true,
            person: false,
            out: VecDeque::new(),
            shown: Shown::default(),
            downloads: Default::default(),
            loads: Loads::default(),
            browser_context: None,
        }
    }

    /// The task's browser context (`isolation: context`; `None`: the
    /// browser's default context, every page may be ours). Set at each
    /// attach: a reconnect makes a new context.
    pub fn set_browser_context(&mut self, context: Option<String>) {
        self.browser_context = context;
    }

    /// Whether a page of `context` may be one of this task's: any, unless
    /// the task has a context of its own and the page is of another.
    pub fn in_our_context(&self, context: Option<&str>) -> bool {
        match (&self.browser_context, context) {
            (Some(ours), Some(theirs)) => ours == theirs,
            // A context of ours, a page that names none: the default
            // context's (Chromium names every other).
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    /// Whether a watcher listens (the driver's live notices): without one,
    /// no tab builds the notices only a watcher reads
    /// ([`Notice::is_for_watchers`]: frames below the top, console errors,
    /// blocked navigations), and a flood of them queues nothing. On by
    /// default. Handed to a tab's machine with each input (`drive`).
    pub fn set_watched(&mut self, watched: bool) {
        self.watched = watched;
    }

    /// The next output, if any. Drain after every input.
    pub fn poll_output(&mut self) -> Option<Output> {
        super::pop_output(&mut self.out)
    }

    /// A person takes the whole task (`true`: every tab, and every tab
    /// opened meanwhile) or hands it back ([`State::set_person_in_control`]).
    pub fn set_person_in_control(&mut self, on: bool, now: Now) {
        self.person = on;
        let keys: Vec<u32> = self.tabs.iter().map(|t| t.key).collect();
        for k in keys {
            self.drive(k, |s| s.set_person_in_control(on, now));
        }
    }

    /// Whether a person has the task.
    pub fn person_in_control(&self) -> bool {
        self.person
    }

    /// How many outputs wait for [`Tabs::poll_output`].
    pub fn outputs_waiting(&self) -> usize {
        self.out.len()
    }

    fn tab(&self, key: u32) -> Option<&Tab> {
        self.tabs.iter().find(|t| t.key == key)
    }

    fn tab_mut(&mut self, key: u32) -> Option<&mut Tab> {
        self.tabs.iter_mut().find(|t| t.key == key)
    }

    fn current_tab(&self) -> Option<&Tab> {
        self.current.and_then(|k| self.tab(k))
    }

    fn key_of_target(&self, target: &TargetId) -> Option<u32> {
        self.tabs
            .iter()
            .find(|t| &t.target_id == target)
            .map(|t| t.key)
    }

    fn key_of_session(&self, session: &SessionId) -> Option<u32> {
        self.tabs
            .iter()
            .find(|t| t.state.has_session(session))
            .map(|t| t.key)
    }

    /// The target id of the tab `session` belongs to (its page's or one of
    /// its OOPIFs' session).
    pub fn target_of_session(&self, session: &SessionId) -> Option<&TargetId> {
        let key = self.key_of_session(session)?;
        self.tab(key).map(|t| &t.target_id)
    }

    /// The current tab's target id.
    pub fn current_target(&self) -> Option<&TargetId> {
        self.current_tab().map(|t| &t.target_id)
    }

    /// Every supervised tab's target id, the current tab's first, then the
    /// others oldest first: whom a reconnect re-attaches as the page.
    pub fn target_ids_current_first(&self) -> Vec<String> {
        let current = self.current_tab().map(|t| t.key);
        let mut ids: Vec<(bool, String)> = self
            .tabs
            .iter()
            .map(|t| (Some(t.key) != current, t.target_id.0.clone()))
            .collect();
        ids.sort_by_key(|(other, _)| *other);
        ids.into_iter().map(|(_, id)| id).collect()
    }

    /// The agent releases the current tab from the dialogs Chromium will
    /// not answer; see [`State::release_unanswerable`].
    pub fn release_unanswerable(&mut self) -> usize {
        let mut n = 0;
        if let Some(k) = self.current {
            self.drive(k, |s| n = s.release_unanswerable());
        }
        n
    }

    /// The current tab's page session, once attached.
    pub fn current_session(&self) -> Option<&SessionId> {
        self.current_tab().and_then(|t| t.state.top_session())
    }

    /// Whether the current tab is blocked by a dialog opened before we attached.
    pub fn page_blocked(&self) -> bool {
        self.current_tab().is_some_and(|t| t.state.page_blocked())
    }

    /// Whether `session` is a live session of a supervised tab.
    pub fn has_session(&self, session: &SessionId) -> bool {
        self.key_of_session(session).is_some()
    }

    /// The live sessions of the supervised tab `target_id` (its page's and
    /// its OOPIFs'); empty for an unknown tab.
    pub fn sessions_of(&self, target_id: &str) -> Vec<SessionId> {
        self.tabs
            .iter()
            .find(|t| t.target_id.0 == target_id)
            .map(|t| t.state.session_ids().cloned().collect())
            .unwrap_or_default()
    }

    /// The current tab's machine (for reads: its top URL, frames…).
    pub fn current_state(&self) -> Option<&State> {
        self.current_tab().map(|t| &t.state)
    }

    /// Runs `f` on tab `key`'s machine (live or closed), then moves its
    /// outputs to ours: commands tagged with the tab, a gone page turned
    /// into the tab closing.
    fn drive(&mut self, key: u32, f: impl FnOnce(&mut State)) {
        let next = self.next_dialog;
        let Some(tab) = self
            .tabs
            .iter_mut()
            .chain(self.closed.iter_mut())
            .find(|t| t.key == key)
        else {
            return;
        };
        tab.state.set_next_dialog_number(next);
        tab.state.set_watched(self.watched);
        // The tab's machine writes straight into our queue (an output is
        // 256 bytes: moving each from its queue to ours cost a flood ~5% of
        // the driver). Every input goes through here, so none of its own
        // waits; were one to, it would go first, in order.
        let start = self.out.len();
        self.out.extend(tab.state.out.queue.drain(..));
        std::mem::swap(&mut tab.state.out.queue, &mut self.out);
        f(&mut tab.state);
        std::mem::swap(&mut tab.state.out.queue, &mut self.out);
        self.next_dialog = tab.state.next_dialog_number();
        let mut gone = false;
        let mut loaded: Vec<Option<String>> = Vec::new();
        for o in self.out.range_mut(start..) {
            match o {
                Output::Send(cmd) => cmd.tab = key,
                Output::Notice(Notice::PageGone { .. }) => gone = true,
                Output::Notice(Notice::PageLoaded { loader_id, .. }) if !self.loads.is_empty() => {
                    loaded.push(loader_id.clone());
                }
                _ => {}
            }
        }
        for loader in loaded {
            let state = &tab.state;
            for load in self
                .loads
                .page_loaded(loader.as_deref(), |s| state.has_session(s))
            {
                self.out.push_back(Output::Loaded { load });
            }
        }
        if gone {
            // The tab closing says it (only a tab's machine gives PageGone).
            self.out
                .retain(|o| !matches!(o, Output::Notice(Notice::PageGone { .. })));
            self.tab_closed(key);
        }
    }

    fn send(&mut self, target: Target, method: &str, params: Value, purpose: Purpose) {
        self.out.push_back(super::Command::output(
            target, method, params, purpose, None, OWN,
        ));
    }

    fn notice(&mut self, n: Notice) {
        self.out.push_back(Output::Notice(n));
    }

    /// The driver attached the page `target_id` as `session_id`
    /// (`Target.attachToTarget`): at the start it becomes the first,
    /// current tab; after a reconnect it re-attaches that tab and makes it
    /// current. Then browser-level auto-attach is (re)started: it reports
    /// new pages and re-attaches the other supervised tabs.
    pub fn attach_page(
        &mut self,
        target_id: TargetId,
        session_id: SessionId,
        url: &str,
        title: &str,
        now: Now,
    ) {
        let key = match self.key_of_target(&target_id) {
            Some(k) => k,
            None => self.add_tab(target_id.clone(), None),
        };
        self.make_current(key);
        self.drive(key, |s| {
            s.attach_page(target_id, session_id, url, title, now)
        });
        // Browser-wide, and forgotten with the connection: sent at each attach.
        if let Some(behavior) = self.opts.downloads.behavior() {
            self.send(
                Target::Browser,
                "Browser.setDownloadBehavior",
                behavior,
                Purpose::Setup,
            );
        }
        self.send(
            Target::Browser,
            "Target.setAutoAttach",
            json!({
                "autoAttach": true,
                "waitForDebuggerOnStart": true,
                "flatten": true,
                "filter": [{"type": "page", "exclude": false}],
            }),
            Purpose::TabsAutoAttach,
        );
    }

    fn add_tab(&mut self, target_id: TargetId, opener: Option<TargetId>) -> u32 {
        let key = self.next_key;
        self.next_key += 1;
        let mut state = State::new(self.opts.clone());
        state.person = self.person;
        // Room for this one only: a `Tab` is ~800 bytes, and a first push
        // would make room for four (most tasks never open a second tab).
        self.tabs.reserve_exact(1);
        self.tabs.push(Tab {
            key,
            target_id,
            opener,
            state,
            crashed: false,
            view: None,
            pending_url: None,
        });
        key
    }

    fn make_current(&mut self, key: u32) {
        self.current = Some(key);
        self.recency.retain(|k| *k != key);
        self.recency.push(key);
    }

    /// Makes the supervised tab `target_id` current (`browser_tabs select`).
    ///
    /// # Errors
    /// [`RouteError::UnknownTab`] when no supervised tab has that id.
    pub fn select(&mut self, target_id: &str) -> Result<(), RouteError> {
        let key = self.key_for(target_id)?;
        self.make_current(key);
        Ok(())
    }

    fn key_for(&self, target_id: &str) -> Result<u32, RouteError> {
        self.tabs
            .iter()
            .find(|t| t.target_id.0 == target_id)
            .map(|t| t.key)
            .ok_or_else(|| RouteError::UnknownTab {
                target_id: target_id.to_owned(),
                known: self.tabs.iter().map(|t| t.target_id.0.clone()).collect(),
            })
    }

    /// The page session of tab `target_id` (the current tab when `None`).
    ///
    /// # Errors
    /// [`RouteError::UnknownTab`], [`RouteError::NoPage`] (not attached,
    /// or reconnecting), and [`RouteError::Crashed`] unless `allow_crashed`
    /// (a navigation reloads a crashed tab).
    pub fn page_session(
        &self,
        target_id: Option<&str>,
        allow_crashed: bool,
    ) -> Result<SessionId, RouteError> {
        let tab = match target_id {
            Some(t) => self.tab(self.key_for(t)?),
            None => self.current_tab(),
        }
        .ok_or(RouteError::NoPage)?;
        if tab.crashed && !allow_crashed {
            return Err(RouteError::Crashed {
                target_id: tab.target_id.0.clone(),
            });
        }
        tab.state
            .top_session()
            .cloned()
            .ok_or_else(|| RouteError::Reattaching {
                target_id: tab.target_id.0.clone(),
            })
    }

    /// Where a CDP call for `frame_id` must go: the frame is looked up in
    /// the tab `target_id` (else the current tab, then every other tab).
    ///
    /// # Errors
    /// As [`State::route_frame`], plus [`RouteError::Crashed`] for a frame
    /// of a crashed tab and [`RouteError::UnknownTab`].
    pub fn route_frame(
        &self,
        frame_id: &str,
        target_id: Option<&str>,
    ) -> Result<SessionId, RouteError> {
        let order: Vec<&Tab> = match target_id {
            Some(t) => vec![self.tab(self.key_for(t)?).ok_or(RouteError::NoPage)?],
            None => self
                .current_tab()
                .into_iter()
                .chain(self.tabs.iter().filter(|t| Some(t.key) != self.current))
                .collect(),
        };
        let mut first_error = None;
        for tab in order {
            match tab.state.route_frame(frame_id) {
                Ok(_) if tab.crashed => {
                    return Err(RouteError::Crashed {
                        target_id: tab.target_id.0.clone(),
                    });
                }
                Ok(s) => return Ok(s),
                Err(e @ RouteError::UnknownFrame { .. }) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(first_error.unwrap_or(RouteError::NoPage))
    }

    /// Forgets every session (the connection dropped); see [`State::connection_lost`].
    pub fn connection_lost(&mut self) {
        let keys: Vec<u32> = self.tabs.iter().map(|t| t.key).collect();
        for k in keys {
            self.drive(k, State::connection_lost);
        }
        self.held.clear();
        self.expected.clear();
        self.closing.clear();
    }

    /// The agent's CDP command, through the machine of the tab it goes to
    /// (the current tab's for a browser-level one); see [`State::send_agent`].
    pub fn send_agent(
        &mut self,
        call: u64,
        target: Target,
        method: &str,
        params: Value,
        timeout: Duration,
    ) {
        if method == "Target.createTarget" {
            self.creating.insert(call);
        }
        let key = target
            .session()
            .and_then(|s| self.key_of_session(s))
            .or(self.current);
        match key {
            Some(k) => self.drive(k, |s| s.send_agent(call, target, method, params, timeout)),
            None => self.out.push_back(super::Command::output(
                target,
                method,
                params,
                Purpose::Agent { call },
                Some(timeout),
                OWN,
            )),
        }
    }

    /// Feeds one CDP event that arrived on `session_id` (`None`: browser level).
    pub fn on_event(&mut self, session_id: Option<&SessionId>, event: Event, now: Now) {
        let Some(session) = session_id else {
            return self.on_browser_event(event, now);
        };
        if let Some(i) = self.closing.iter().position(|(s, ..)| s == session) {
            if let Event::FetchRequestPaused { params } = &event {
                let request_id = serde_json::from_str::<Value>(params)
                    .ok()
                    .and_then(|v| v.get("requestId")?.as_str().map(str::to_owned));
                if let Some(id) = request_id {
                    self.send(
                        Target::Session(session.clone()),
                        "Fetch.failRequest",
                        json!({"requestId": id, "errorReason": "BlockedByClient"}),
                        Purpose::Setup,
                    );
                }
                let (_, target, _) = self.closing.remove(i);
                self.close_target(&target);
            }
            return;
        }
        // One lookup says the tab and which of its sessions this is.
        let found = self.tabs.iter().find_map(|t| {
            let kind = t.state.session_kind(session);
            (kind != SessionKind::Unknown).then_some((t.key, kind))
        });
        let Some((key, kind)) = found else {
            // A session we let go of, or one of a page we hold paused.
            return;
        };
        let top = kind == SessionKind::Page;
        match &event {
            // `frameStartedNavigating` (the one with a loader).
            Event::NavigationRequested(r) if top && r.loader_id.is_some() => {
                self.top_started_navigating(key, r)
            }
            Event::InspectorTargetCrashed if top => return self.crashed(key, now),
            Event::FrameNavigated(n) if top && n.frame.parent_id.is_none() => self.revived(key),
            // A page re-attached after a reconnect may hear no
            // frameNavigated of the document that replaced the crashed one
            // (CDP facts); its load, or any lifecycle step, is a live renderer.
            Event::LoadEventFired | Event::Lifecycle(_) if top => self.revived(key),
            _ => {}
        }
        self.drive(key, |s| s.on_event_of(session_id, kind, event, now));
    }

    /// Tab `key`'s top frame started navigating: before its first commit
    /// (a popup just opened, whose URL Chromium gives as `""` until then)
    /// the tab shows where it is going.
    fn top_started_navigating(&mut self, key: u32, r: &crate::cdp::protocol::NavigationRequested) {
        let Some(t) = self.tab_mut(key) else {
            return;
        };
        if r.frame_id.0 != t.target_id.0 || !t.state.top_url().is_empty() {
            return;
        }
        if let Some(url) = r.url.as_deref().filter(|u| !u.is_empty()) {
            t.pending_url = Some(url.into());
        }
    }

    fn on_browser_event(&mut self, event: Event, now: Now) {
        match event {
            Event::DownloadWillBegin(d) => {
                // Download events are browser-wide: one started in a tab
                // another client supervises is its to list and rename (two
                // supervisors renaming one file race for it).
                let target = match &d.frame_id {
                    Some(f) => match self
                        .tabs
                        .iter_mut()
                        .chain(self.closed.iter_mut())
                        .find(|t| t.target_id.0 == f.0 || t.state.has_frame(f))
                    {
                        Some(t) => {
                            t.state.download_began(f);
                            Some(t.target_id.0.clone())
                        }
                        None => return,
                    },
                    None => None,
                };
                self.downloads
                    .began(d, target, &self.opts.downloads, &mut self.out);
            }
            Event::DownloadProgress(p) => {
                self.downloads
                    .progressed(p, &self.opts.downloads, now.instant, &mut self.out)
            }
            Event::AttachedToTarget(a) if a.target_info.target_type == "page" => {
                self.on_page_attached(a, now)
            }
            Event::TargetCrashed(t) => {
                if let Some(k) = self.key_of_target(&t.target_id) {
                    self.crashed(k, now);
                }
            }
            Event::DetachedFromTarget(d) => {
                self.held.retain(|h| h.session_id != d.session_id);
                self.closing.retain(|(s, ..)| *s != d.session_id);
                if let Some(k) = self.key_of_session(&d.session_id) {
                    self.drive(k, |s| s.on_event(None, Event::DetachedFromTarget(d), now));
                }
            }
            event => {
                let target = match &event {
                    Event::TargetDestroyed(t) => Some(t.target_id.clone()),
                    Event::TargetInfoChanged(t) => Some(t.target_info.target_id.clone()),
                    _ => None,
                };
                if let Some(t) = &target {
                    self.held.retain(|h| &h.target_info.target_id != t);
                }
                match target {
                    Some(t) => {
                        if let Some(k) = self.key_of_target(&t) {
                            self.drive(k, |s| s.on_event(None, event, now));
                        }
                    }
                    None => {
                        let keys: Vec<u32> = self.tabs.iter().map(|t| t.key).collect();
                        for k in keys {
                            let e = event.clone();
                            self.drive(k, |s| s.on_event(None, e, now));
                        }
                    }
                }
            }
        }
    }

    fn on_page_attached(&mut self, a: AttachedToTarget, now: Now) {
        if !self.in_our_context(a.target_info.browser_context_id.as_deref()) {
            // Another task's page (browser-level auto-attach reports every
            // context's): resumed and let go at once, never held.
            return self.let_go(&a.session_id);
        }
        let target = a.target_info.target_id.clone();
        if let Some(key) = self.key_of_target(&target) {
            let top = self.tab(key).and_then(|t| t.state.top_session());
            if top == Some(&a.session_id) {
                // Our own `Target.attachToTarget`, reported as an event too.
                return;
            }
            if top.is_some() {
                // Browser-level auto-attach reports a tab we hold again.
                return self.let_go(&a.session_id);
            }
            // After a reconnect: the tab comes back.
            return self.attach_existing(key, a, now);
        }
        let from_supervised = a
            .target_info
            .opener_id
            .as_ref()
            .is_some_and(|o| self.key_of_target(o).is_some());
        let expected = match self.expected.iter().position(|t| t == &target) {
            Some(i) => {
                self.expected.remove(i);
                true
            }
            None => false,
        };
        if from_supervised || expected {
            self.adopt(a, now);
        } else if a.target_info.opener_id.is_none()
            && a.waiting_for_debugger
            && (!self.creating.is_empty() || self.creating_own)
        {
            self.held.push(a);
        } else {
            self.let_go(&a.session_id);
        }
    }

    /// Resumes a page (it may wait for a debugger) and detaches from it.
    fn let_go(&mut self, session: &SessionId) {
        self.send(
            Target::Session(session.clone()),
            "Runtime.runIfWaitingForDebugger",
            json!({}),
            Purpose::Setup,
        );
        self.send(
            Target::Browser,
            "Target.detachFromTarget",
            json!({"sessionId": session.0}),
            Purpose::Setup,
        );
    }

    fn attach_existing(&mut self, key: u32, a: AttachedToTarget, now: Now) {
        let info = a.target_info;
        let session = a.session_id;
        self.drive(key, |s| {
            let paused = a.waiting_for_debugger;
            s.attach(info.target_id, session, &info.url, &info.title, paused, now)
        });
    }

    /// A new page becomes a supervised tab, or is let go past `max_tabs`.
    fn adopt(&mut self, a: AttachedToTarget, now: Now) {
        // An earlier report of this page, held, is this one now: left held,
        // a create's reply naming the page would adopt it a second time.
        let target = &a.target_info.target_id;
        while let Some(i) = self
            .held
            .iter()
            .position(|h| &h.target_info.target_id == target)
        {
            let h = self.held.remove(i);
            if h.session_id != a.session_id {
                self.let_go(&h.session_id);
            }
        }
        if self.tabs.len() >= self.opts.max_tabs {
            self.truncated = true;
            if let Some(fetch) = (super::Intercept {
                bridge: None,
                documents: self.opts.navigation.document_pattern(),
                auth: false,
            })
            .fetch_params()
            {
                // Let go, it would load whatever the policy refuses (a page
                // could open max_tabs popups, then the one it wants). Its
                // document requests are paused, then it is resumed (a popup
                // sharing its opener's renderer holds the opener paused
                // too), and its first document request is failed and the
                // page closed. (Closed while a request of it was paused,
                // Chromium let the request go on: the CI run saw it.)
                let s = a.session_id;
                self.send(
                    Target::Session(s.clone()),
                    "Fetch.enable",
                    fetch,
                    Purpose::Setup,
                );
                self.send(
                    Target::Session(s.clone()),
                    "Runtime.runIfWaitingForDebugger",
                    json!({}),
                    Purpose::Setup,
                );
                let deadline = now
                    .instant
                    .checked_add(CLOSING_GRACE)
                    .unwrap_or(now.instant);
                self.closing.push((s, a.target_info.target_id, deadline));
                return;
            }
            return self.let_go(&a.session_id);
        }
        let target = a.target_info.target_id.clone();
        let opener = a
            .target_info
            .opener_id
            .clone()
            .filter(|o| self.key_of_target(o).is_some());
        let url = a.target_info.url.clone();
        let key = self.add_tab(target.clone(), opener.clone());
        if self.current.is_none() {
            // Our own blank tab after the last one closed.
            self.make_current(key);
            self.creating_own = false;
        }
        self.attach_existing(key, a, now);
        self.notice(Notice::TabOpened {
            target_id: target.0,
            url,
            opener_target_id: opener.map(|o| o.0),
        });
    }

    /// A create of ours (or the agent's) replied: adopt the page it made,
    /// held or still to attach, and let go of held pages nobody creates.
    fn created(&mut self, result: &Result<Value, ReplyError>, now: Now) {
        if let Some(t) = result
            .as_ref()
            .ok()
            .and_then(|v| v.get("targetId"))
            .and_then(Value::as_str)
        {
            let target = TargetId(t.to_owned());
            match self
                .held
                .iter()
                .position(|h| h.target_info.target_id == target)
            {
                Some(i) => {
                    let a = self.held.remove(i);
                    self.adopt(a, now);
                }
                None if self.key_of_target(&target).is_none() => {
                    if self.expected.len() >= EXPECTED_MAX {
                        self.expected.pop_front();
                    }
                    self.expected.push_back(target);
                }
                None => {}
            }
        }
        if self.creating.is_empty() && !self.creating_own {
            for h in std::mem::take(&mut self.held) {
                self.let_go(&h.session_id);
            }
        }
    }

    fn crashed(&mut self, key: u32, now: Now) {
        let Some(tab) = self.tab_mut(key) else {
            return;
        };
        if tab.crashed {
            return;
        }
        tab.crashed = true;
        let target_id = tab.target_id.0.clone();
        self.drive(key, |s| s.renderer_crashed(now));
        self.notice(Notice::TabCrashed { target_id });
    }

    fn revived(&mut self, key: u32) {
        if let Some(tab) = self.tab_mut(key) {
            tab.crashed = false;
        }
    }

    /// Tab `key`'s page is gone: it moves to the closed tabs; when it was
    /// current, its opener (if supervised) or the most recently current
    /// tab becomes current, or — the last one — a new blank tab is opened.
    fn tab_closed(&mut self, key: u32) {
        let Some(i) = self.tabs.iter().position(|t| t.key == key) else {
            return;
        };
        let tab = self.tabs.remove(i);
        self.recency.retain(|k| *k != key);
        if self.current == Some(key) {
            // Its opener, else the most recently current tab, else the
            // newest one: while a tab is open, one is current.
            let opener = tab.opener.as_ref().and_then(|o| self.key_of_target(o));
            self.current = opener
                .or_else(|| self.recency.last().copied())
                .or_else(|| self.tabs.last().map(|t| t.key));
            if let Some(k) = self.current {
                self.make_current(k);
            }
        }
        let target_id = tab.target_id.0.clone();
        // The oldest go, but not one an agent's dialog answer waits on: its
        // reply must find it, or the answer never has its outcome (the
        // driver's deadline on that command bounds how long it stays).
        while self.closed.len() >= CLOSED_TABS_KEPT {
            let Some(i) = self
                .closed
                .iter()
                .position(|t| !t.state.answer_awaits_reply())
            else {
                break;
            };
            self.closed.remove(i);
        }
        self.closed.push_back(tab);
        if self.tabs.is_empty() && !self.creating_own {
            self.creating_own = true;
            self.send(
                Target::Browser,
                "Target.createTarget",
                json!({"url": "about:blank"}),
                Purpose::NewTab,
            );
        }
        let current_target_id = self.current_target().map(|t| t.0.clone());
        self.notice(Notice::TabClosed {
            target_id,
            current_target_id,
        });
    }

    /// Feeds the reply to a command from [`Tabs::poll_output`]: `tab` is its
    /// [`super::Command::tab`].
    pub fn on_reply(
        &mut self,
        target: &Target,
        tab: u32,
        purpose: Purpose,
        result: Result<Value, ReplyError>,
        now: Now,
    ) {
        if let Purpose::Agent { call } = &purpose
            && self.creating.remove(call)
        {
            self.created(&result, now);
        }
        if tab == OWN {
            match purpose {
                Purpose::NewTab => {
                    if result.is_err() {
                        self.creating_own = false;
                    }
                    self.created(&result, now);
                }
                // Every page that exists was reported before this reply: a
                // tab that did not come back (after a reconnect) is gone.
                Purpose::TabsAutoAttach if result.is_ok() => {
                    let stale: Vec<u32> = self
                        .tabs
                        .iter()
                        .filter(|t| t.state.top_session().is_none())
                        .map(|t| t.key)
                        .collect();
                    for k in stale {
                        // Its dialogs closed with it (`remote`), then the tab.
                        let reason = "the tab was not there after the reconnect".to_owned();
                        self.drive(k, |s| s.page_gone(reason, now));
                    }
                }
                Purpose::Agent { call } => self.out.push_back(Output::AgentReply { call, result }),
                Purpose::LoadTree { load } => {
                    let tree = result.ok();
                    if let Some(ask) = self.loads.tree_replied(load, tree.as_ref(), now.instant) {
                        self.learn_top_url(&ask, tree.as_ref());
                        self.ask_load(ask);
                    }
                }
                Purpose::LoadState { load }
                    if self
                        .loads
                        .state_replied(load, result.ok().as_ref(), now.instant) =>
                {
                    self.out.push_back(Output::Loaded { load });
                }
                _ => {}
            }
            return;
        }
        let known = self
            .tabs
            .iter()
            .chain(self.closed.iter())
            .any(|t| t.key == tab);
        if !known {
            // Its tab closed long ago: nothing of the tab's waits on it, but
            // the agent's call still gets its one outcome.
            if let Purpose::Agent { call } = purpose {
                self.out.push_back(Output::AgentReply { call, result });
            }
            return;
        }
        self.drive(tab, |s| s.on_reply(target, purpose, result, now));
    }

    /// The agent (or a human it asked) answers a dialog of any tab; see
    /// [`State::answer_dialog_as`].
    pub fn answer_dialog_as(
        &mut self,
        req: DialogRequest,
        ticket: u64,
        by: ClosedBy,
        now: Now,
    ) -> Result<(), DialogError> {
        let with_pending: Vec<u32> = self
            .tabs
            .iter()
            .filter(|t| t.state.pending_dialogs().next().is_some())
            .map(|t| t.key)
            .collect();
        let key = match &req.dialog_id {
            Some(id) => self
                .tabs
                .iter()
                .find(|t| t.state.pending_dialogs().any(|d| &d.id == id))
                .map(|t| t.key)
                .ok_or_else(|| {
                    super::not_pending(
                        id,
                        self.tabs
                            .iter()
                            .chain(self.closed.iter())
                            .flat_map(|t| t.state.recent_dialogs())
                            .map(|c| &**c),
                        self.pending_dialogs().map(|d| d.id.clone()),
                        now.unix_s,
                    )
                })?,
            None => match with_pending.as_slice() {
                [] => return Err(DialogError::NoDialog),
                [one] => *one,
                _ => {
                    return Err(DialogError::Ambiguous {
                        candidates: self
                            .pending_dialogs()
                            .map(|d| super::dialogs::describe_view(d))
                            .collect(),
                    });
                }
            },
        };
        let mut r = Ok(());
        self.drive(key, |s| r = s.answer_dialog_as(req, ticket, by, now));
        r
    }

    /// Every tab's pending dialogs, oldest first.
    pub fn pending_dialogs(
        &self,
    ) -> impl Iterator<Item = &Arc<crate::supervisor::snapshot::PendingDialog>> {
        let mut all: Vec<_> = self
            .tabs
            .iter()
            .flat_map(|t| t.state.pending_dialogs())
            .collect();
        all.sort_by(|a, b| a.opened_at.total_cmp(&b.opened_at));
        all.into_iter()
    }

    /// The dialogs (of any tab) whose answer or release awaits its reply.
    pub fn dialogs_in_flight(&self) -> Vec<String> {
        self.tabs
            .iter()
            .flat_map(|t| t.state.dialogs_in_flight().map(str::to_owned))
            .collect()
    }

    /// When [`Tabs::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.tabs
            .iter()
            .filter_map(|t| t.state.poll_timeout())
            .chain(self.closing.iter().map(|(.., at)| *at))
            .chain(self.loads.next_check())
            .chain(self.downloads.next_check())
            .min()
    }

    /// Waits for the document of `loader` (a `Page.navigate` reply's
    /// `loaderId`) in page session `session` to be fully loaded:
    /// [`Output::Loaded`] with the returned id says it is ([`super::loads`]
    /// says how it is found). Nothing else ends the wait: the caller
    /// bounds it, then [`Tabs::cancel_load`]s it.
    pub fn await_load(&mut self, session: SessionId, loader: String, now: Now) -> u64 {
        // Its load may have been announced before the caller asked (the
        // `Page.navigate` reply and the load event cross on the way).
        let done = self
            .key_of_session(&session)
            .and_then(|k| self.tab(k))
            .is_some_and(|t| t.state.loaded_loader() == Some(loader.as_str()));
        let id = self.loads.wait(session, loader, now.instant);
        if done {
            self.loads.cancel(id);
            self.out.push_back(Output::Loaded { load: id });
        }
        id
    }

    /// Nobody waits for load `id` any more.
    pub fn cancel_load(&mut self, id: u64) {
        self.loads.cancel(id);
    }

    /// The top frame's URL as a load question's tree reply shows it, once
    /// it shows the waited loader: the commit event may not have reached
    /// us (a page slow to answer `Page.enable` sends no Page events yet),
    /// and a release must not navigate to a URL it does not know.
    fn learn_top_url(&mut self, ask: &Ask, tree: Option<&Value>) {
        let (Ask::ReadyState { session, .. }, Some(url)) = (
            ask,
            tree.and_then(|t| t.pointer("/frameTree/frame/url"))
                .and_then(Value::as_str),
        ) else {
            return;
        };
        if let Some(k) = self.key_of_session(session) {
            let url = url.to_owned();
            self.drive(k, |s| s.learn_top_url(&url));
        }
    }

    fn ask_load(&mut self, ask: Ask) {
        let (session, method, params, purpose) = match ask {
            Ask::Tree { id, session } => (
                session,
                "Page.getFrameTree",
                json!({}),
                Purpose::LoadTree { load: id },
            ),
            Ask::ReadyState { id, session } => (
                session,
                "Runtime.evaluate",
                json!({"expression": "document.readyState", "returnByValue": true}),
                Purpose::LoadState { load: id },
            ),
        };
        self.out.push_back(super::Command::output(
            Target::Session(session),
            method,
            params,
            purpose,
            Some(LOAD_CHECK_TIMEOUT),
            OWN,
        ));
    }

    fn close_target(&mut self, target: &TargetId) {
        self.send(
            Target::Browser,
            "Target.closeTarget",
            json!({"targetId": target.0}),
            Purpose::Setup,
        );
    }

    /// Fires every tab's timers due at `now`, and closes the pages past
    /// `max_tabs` that asked for no document in time.
    pub fn handle_timeout(&mut self, now: Now) {
        let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.closing)
            .into_iter()
            .partition(|(.., at)| *at <= now.instant);
        self.closing = kept;
        for (_, target, _) in due {
            self.close_target(&target);
        }
        for ask in self.loads.due(now.instant) {
            self.ask_load(ask);
        }
        self.downloads.handle_timeout(now.instant);
        let keys: Vec<u32> = self.tabs.iter().map(|t| t.key).collect();
        for k in keys {
            self.drive(k, |s| s.handle_timeout(now));
        }
    }

    /// The supervised tabs, oldest first, as the snapshot's `tabs` shows
    /// them: a tab's entry, and the list, are shared with the last snapshot
    /// while still true.
    pub fn views(&mut self) -> List<TabView> {
        let current = self.current;
        for t in &mut self.tabs {
            let url = match (t.state.top_url(), &t.pending_url) {
                (u, Some(pending)) if u.is_empty() => pending,
                (u, _) => u,
            };
            let title = t.state.title();
            let is_current = Some(t.key) == current;
            let pending = t.state.pending_dialogs().count();
            let action_navigation = t.state.action_navigation();
            let still = |v: &Arc<TabView>| {
                v.url == *url
                    && v.title == *title
                    && v.current == is_current
                    && v.pending_dialogs == pending
                    && v.crashed == t.crashed
                    && v.action_navigation == action_navigation
            };
            if t.view.as_ref().is_some_and(still) {
                continue;
            }
            t.view = Some(Arc::new(TabView {
                target_id: t.target_id.0.clone(),
                url: url.clone(),
                title: title.clone(),
                opener_target_id: t.opener.as_ref().map(|o| o.0.clone()),
                current: is_current,
                pending_dialogs: pending,
                crashed: t.crashed,
                action_navigation,
            }));
        }
        let views = self.tabs.iter().filter_map(|t| t.view.as_ref());
        share(&mut self.shown.tabs, views)
    }

    /// Builds the snapshot the agent reads: the current tab's page, frames
    /// and console; every tab's dialogs; the tabs. Shares its entries with
    /// the tabs' states, and each list with the last snapshot while it is
    /// unchanged (see [`State::snapshot`]).
    pub fn snapshot(&mut self) -> Snapshot {
        let mut snap = self
            .current
            .and_then(|k| self.tab_mut(k))
            .map(|t| t.state.page_snapshot())
            .unwrap_or_default();
        snap.pending_dialogs = merged(
            &mut self.shown.pending_dialogs,
            self.tabs.iter().map(|t| t.state.pending_dialogs()),
            |d| d.opened_at,
            usize::MAX,
        );
        let all = self.tabs.iter().chain(self.closed.iter());
        snap.recent_dialogs = merged(
            &mut self.shown.recent_dialogs,
            all.clone().map(|t| t.state.recent_dialogs()),
            |d| d.closed_at,
            RECENT_DIALOGS_MAX,
        );
        // The policy holds in every tab: a popup's blocked document shows too.
        snap.blocked_navigations = merged(
            &mut self.shown.blocked_navigations,
            all.map(|t| t.state.blocked_navigations()),
            |b| b.at,
            super::BLOCKED_NAVIGATIONS_MAX,
        );
        snap.tabs = self.views();
        snap.tabs_truncated = self.truncated;
        snap.downloads = share(&mut self.shown.downloads, self.downloads.views());
        snap
    }

    /// The driver gave download `id`'s file its name ([`Output::SaveDownload`]):
    /// `Ok` with its path, or why it could not.
    pub fn download_saved(&mut self, id: &str, result: Result<String, String>) {
        self.downloads.saved(id, result);
    }
}
/// The last `max` entries of every tab's list (each oldest first), ordered
/// by `at`, oldest first: shared with `kept` while they are the same. The
/// usual case, one tab's list already in order, is read where it is,
/// without gathering or sorting.
fn merged<'a, T: 'a, L>(
    kept: &mut List<T>,
    lists: impl Iterator<Item = L> + Clone,
    at: impl Fn(&T) -> f64,
    max: usize,
) -> List<T>
where
    L: ExactSizeIterator<Item = &'a Arc<T>> + Clone,
{
    let mut filled = lists.clone().filter(|l| l.len() > 0);
    match (filled.next(), filled.next()) {
        (None, _) => return share(kept, std::iter::empty()),
        (Some(one), None) if one.clone().is_sorted_by(|a, b| at(a) <= at(b)) => {
            let old = one.len().saturating_sub(max);
            return share(kept, one.skip(old));
        }
        _ => {}
    }
    let mut all: Vec<&Arc<T>> = lists.flatten().collect();
    all.sort_by(|a, b| at(a).total_cmp(&at(b)));
    let old = all.len().saturating_sub(max);
    share(kept, all[old..].iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(at: &[f64]) -> Vec<Arc<f64>> {
        at.iter().map(|&a| Arc::new(a)).collect()
    }

    fn values(l: &List<f64>) -> Vec<f64> {
        l.iter().map(|a| **a).collect()
    }

    #[test]
    fn merged_orders_every_tabs_entries_and_keeps_the_last() {
        let (a, b) = (list(&[1.0, 4.0, 6.0]), list(&[2.0, 3.0, 5.0]));
        let mut kept = List::default();
        let lists = [a.iter(), b.iter()];
        let m = merged(&mut kept, lists.iter().cloned(), |x| *x, 4);
        assert_eq!(values(&m), [3.0, 4.0, 5.0, 6.0]);
        let again = merged(&mut kept, lists.iter().cloned(), |x| *x, 4);
        assert!(List::ptr_eq(&m, &again), "the same entries: the same list");
    }

    #[test]
    fn merged_reads_one_tabs_list_in_place_unless_it_is_out_of_order() {
        let (empty, one) = (list(&[]), list(&[1.0, 2.0, 3.0]));
        let mut kept = List::default();
        let lists = [empty.iter(), one.iter(), empty.iter()];
        let m = merged(&mut kept, lists.iter().cloned(), |x| *x, 2);
        assert_eq!(values(&m), [2.0, 3.0]);
        assert!(Arc::ptr_eq(&m[0], &one[1]), "its own entries");
        // A clock that went back: sorted as before.
        let back = list(&[2.0, 1.0]);
        let m = merged(&mut kept, [back.iter()].into_iter(), |x| *x, 20);
        assert_eq!(values(&m), [1.0, 2.0]);
        let none = merged(&mut kept, [empty.iter()].into_iter(), |x| *x, 20);
        assert!(none.is_empty());
    }
}
