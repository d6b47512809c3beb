//! The supervisor's rules as a pure state machine: no I/O, no clock.
//!
//! Inputs: CDP events ([`State::on_event`]), replies to the commands it asked
//! for ([`State::on_reply`]), agent requests ([`State::answer_dialog`],
//! [`State::navigation_started`]) and time ([`State::handle_timeout`]). Every
//! call that moves time takes `now`.
//!
//! Outputs, drained with [`State::poll_output`]: CDP commands to send
//! ([`Output::Send`]), notices for live watchers ([`Output::Notice`]) and
//! finished agent answers ([`Output::AnswerDone`]). [`State::poll_timeout`]
//! says when to call [`State::handle_timeout`] next; [`State::snapshot`]
//! builds what the agent reads.
//!
//! A driver loop looks like:
//!
//! ```no_run
//! # use cdp_supervisor::supervisor::state::*;
//! # fn send(_: Command) {}
//! # let mut state = State::new(Options::default());
//! # let now = Now::system();
//! while let Some(out) = state.poll_output() {
//!     match out {
//!         Output::Send(cmd) => send(cmd),      // never wait for the reply here
//!         Output::Notice(_) | Output::AnswerDone { .. } => {}
//!     }
//! }
//! if let Some(t) = state.poll_timeout() { /* sleep until t, then */ state.handle_timeout(now); }
//! ```

use crate::cdp::connection::CommandError;
use crate::cdp::protocol::{
    AttachedToTarget, DialogClosed, DialogOpening, DialogType, ERROR_INVALID_PARAMS, Event,
    FrameId, FrameInfo, FrameTree, SessionId, TargetId,
};
use crate::supervisor::bridge::{self, PausedKind};
use crate::supervisor::policy::DialogPolicy;
use crate::supervisor::snapshot::{
    ChildFrame, ClosedBy, ClosedDialog, ConsoleError, FrameTreeView, PendingDialog, Snapshot,
    TopFrame,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// spec: `frame_tree` is capped at 30 entries (children; `top` not counted).
pub const FRAME_TREE_MAX_ENTRIES: usize = 30;
/// spec: `frame_tree` is capped at OOPIF depth 2 (OOPIF boundaries from the top).
pub const FRAME_TREE_MAX_OOPIF_DEPTH: usize = 2;
/// spec: `recent_dialogs` keeps the last 20.
pub const RECENT_DIALOGS_MAX: usize = 20;
/// spec: the console ring keeps the last 50.
pub const CONSOLE_ERRORS_MAX: usize = 50;
/// Chromium cuts `javascriptDialogOpening.message` at 10 240 chars; we hold
/// anything else (a proxy, a mock) to the same bound.
pub const DIALOG_MESSAGE_MAX_CHARS: usize = 10_240;
/// One console entry's text is cut here so 50 entries stay small.
pub const CONSOLE_TEXT_MAX_CHARS: usize = 4_096;
/// The frame map's own bound: a page creating frames forever must not grow
/// memory forever. Frames past it are not tracked and the tree says `truncated`.
pub const FRAMES_TRACKED_MAX: usize = 1_000;
/// Child sessions (OOPIFs) past this bound are resumed and detached at once.
pub const SESSIONS_TRACKED_MAX: usize = 256;
/// Dialogs that closed (by their `javascriptDialogClosed`, a navigation or a
/// detach) while our `Page.handleJavaScriptDialog` was in flight, kept until
/// its reply says who won. A reply always comes (every command has a
/// deadline); the bound only guards against a driver that drops one.
pub const ANSWERS_AFTER_CLOSE_MAX: usize = 64;
/// spec: the must_respond watchdog's default.
pub const DEFAULT_DIALOG_TIMEOUT: Duration = Duration::from_secs(300);
/// How long `Page.enable` may go unanswered on the page session before we
/// call the page blocked by a dialog we never saw (an idle page answers in
/// milliseconds; a blocked one never does).
pub const PAGE_ENABLE_GRACE: Duration = Duration::from_millis(1_500);
/// How long after an agent's or the watchdog's navigation starts a dialog
/// closed by a navigation is attributed to it (not `remote`).
pub const NAVIGATION_ATTRIBUTION_WINDOW: Duration = Duration::from_secs(30);

/// A point in time, given by the caller: `instant` for deadlines, `unix_s`
/// for the times shown to the agent (Unix seconds).
#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// The monotonic clock, for deadlines (watchdog, `Page.enable` grace).
    pub instant: Instant,
    /// Wall-clock time in Unix seconds, for `opened_at` / `closed_at` / `at`.
    pub unix_s: f64,
}

impl Now {
    /// The system clocks. Only drivers call this; the state machine never does.
    pub fn system() -> Now {
        Now {
            instant: Instant::now(),
            unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
        }
    }

    /// `self` moved forward by `d` on both clocks (for tests and simulations).
    pub fn after(self, d: Duration) -> Now {
        Now {
            instant: self.instant + d,
            unix_s: self.unix_s + d.as_secs_f64(),
        }
    }
}

/// The state machine's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// What to do when a dialog opens (config `browser.dialog_policy`).
    pub policy: DialogPolicy,
    /// The must_respond watchdog (config `browser.dialog_timeout_s`).
    pub dialog_timeout: Duration,
    /// See [`PAGE_ENABLE_GRACE`].
    pub page_enable_grace: Duration,
    /// Inject the dialog bridge ([`crate::supervisor::bridge`]) on every
    /// session, for CDP proxies that answer native dialogs themselves.
    pub dialog_bridge: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: DialogPolicy::MustRespond,
            dialog_timeout: DEFAULT_DIALOG_TIMEOUT,
            page_enable_grace: PAGE_ENABLE_GRACE,
            dialog_bridge: false,
        }
    }
}

/// Why the state machine asked for a command: tells [`State::on_reply`] what
/// the reply means.
#[derive(Clone, Debug, PartialEq)]
pub enum Purpose {
    /// Domain enables, auto-attach, resume: only a failure is worth a log line.
    Setup,
    /// `Page.enable` on the page session: its reply proves the page is not blocked.
    PageEnable,
    /// `Page.getFrameTree` on a session.
    FrameTree,
    /// `Page.handleJavaScriptDialog` for dialog `dialog_id`.
    Answer {
        /// The dialog answered (`d-N`).
        dialog_id: String,
    },
    /// `Page.navigate` of the top frame to release a page a dialog keeps blocked.
    Release,
    /// `Target.getTargetInfo` of the page after its load event: the title,
    /// then [`Notice::PageLoaded`] for the document of `loader_id`.
    PageLoaded {
        /// The loader of the document whose load event fired, when known.
        loader_id: Option<String>,
    },
}

/// A CDP command the driver must send (and never wait for in its event loop).
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// `None`: the browser-level session.
    pub session_id: Option<SessionId>,
    /// The CDP method, e.g. `Page.handleJavaScriptDialog`.
    pub method: &'static str,
    /// The command's `params` object.
    pub params: Value,
    /// What the reply means; hand it back to [`State::on_reply`].
    pub purpose: Purpose,
}

/// Something a live watcher (`watch`) wants to see. Serialized with an `event` tag.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Notice {
    /// A dialog opened (`Page.javascriptDialogOpening`, or the dialog bridge).
    DialogOpened {
        /// The dialog, as `pending_dialogs[]` shows it.
        dialog: PendingDialog,
    },
    /// A dialog closed, by whoever: see its `closed_by`.
    DialogClosed {
        /// The dialog, as `recent_dialogs[]` shows it.
        dialog: ClosedDialog,
    },
    /// A frame below the top became known (`Page.frameAttached`,
    /// `Page.frameNavigated`, a `Page.getFrameTree` reply, or an OOPIF's
    /// `Target.attachedToTarget`).
    FrameAttached {
        /// The new frame's id.
        frame_id: String,
        /// Its parent, when known.
        parent_frame_id: Option<String>,
        /// Whether it is an OOPIF (its own target and session).
        is_oopif: bool,
    },
    /// A frame committed a new document (`Page.frameNavigated`).
    FrameNavigated {
        /// The frame's id (the top frame's too).
        frame_id: String,
        /// The new URL, fragment included.
        url: String,
        /// Whether it is an OOPIF.
        is_oopif: bool,
    },
    /// A frame went away (`Page.frameDetached`, its OOPIF session detached,
    /// or the page's session went).
    FrameDetached {
        /// The frame's id.
        frame_id: String,
    },
    /// A `console.error` / `console.assert` call (`Runtime.consoleAPICalled`)
    /// or an uncaught exception (`Runtime.exceptionThrown`).
    ConsoleError {
        /// The entry, as `console_errors[]` shows it.
        error: ConsoleError,
    },
    /// The page was blocked by a dialog opened before we attached.
    PageBlocked,
    /// The top frame finished loading (`Page.loadEventFired` on the page session).
    PageLoaded {
        /// The top frame's URL once loaded (as `Target.getTargetInfo` has it).
        url: String,
        /// The loader of the document that loaded (`Page.Frame.loaderId`),
        /// when known: `browser_navigate` waits for its own navigation's.
        #[serde(skip_serializing_if = "Option::is_none")]
        loader_id: Option<String>,
    },
    /// The supervisor's CDP connection changed state (sent by the driver).
    Connection {
        /// The new state.
        status: crate::supervisor::snapshot::ConnectionStatus,
    },
    /// The supervised page's session is gone (tab closed or crashed).
    PageGone {
        /// Which target detached, in words.
        reason: String,
    },
}

/// What [`State::poll_output`] yields.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A CDP command to send now; feed its reply to [`State::on_reply`].
    Send(Command),
    /// Something for live watchers.
    Notice(Notice),
    /// The agent's answer `ticket` (from [`State::answer_dialog`]) finished.
    AnswerDone {
        /// The ticket given to [`State::answer_dialog`].
        ticket: u64,
        /// The closed dialog, or why the answer failed.
        result: Result<ClosedDialog, DialogError>,
    },
}

/// `accept` or `dismiss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialogAction {
    /// OK / leave the page (`Page.handleJavaScriptDialog` with `accept: true`).
    Accept,
    /// Cancel / stay on the page (`accept: false`).
    Dismiss,
}

impl DialogAction {
    /// Parses `"accept"` / `"dismiss"`.
    pub fn parse(s: &str) -> Result<DialogAction, DialogError> {
        match s {
            "accept" => Ok(DialogAction::Accept),
            "dismiss" => Ok(DialogAction::Dismiss),
            other => Err(DialogError::BadAction(other.to_owned())),
        }
    }
}

/// An agent's answer to a dialog (`browser_dialog`).
#[derive(Clone, Debug, PartialEq)]
pub struct DialogRequest {
    /// Accept or dismiss.
    pub action: DialogAction,
    /// The text for a `prompt()`; accepting without it answers with the default text.
    pub prompt_text: Option<String>,
    /// Which dialog; may be left out when exactly one is pending.
    pub dialog_id: Option<String>,
}

/// Why an answer to a dialog failed. The texts are what the agent reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DialogError {
    /// No dialog is pending.
    #[error("no dialog is open; read pending_dialogs in browser_snapshot before answering")]
    NoDialog,
    /// Several dialogs are pending and no `dialog_id` was given.
    #[error("{} dialogs are open; pass dialog_id, one of: {}", candidates.len(), candidates.join(", "))]
    Ambiguous {
        /// The pending dialogs, each as `d-N (type "first 40 chars")`.
        candidates: Vec<String>,
    },
    /// `dialog_id` names no pending dialog.
    #[error("unknown dialog_id {id:?}; pending dialogs: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownId {
        /// The `dialog_id` given.
        id: String,
        /// The ids of the pending dialogs.
        known: Vec<String>,
    },
    /// The action is neither `accept` nor `dismiss` (the text given).
    #[error("action {0:?} is not allowed; allowed: accept, dismiss")]
    BadAction(String),
    /// Chromium refuses to answer this dialog (`-32602 "No dialog is
    /// showing"`) while its frame stays blocked: see [`PendingDialog::answerable`].
    #[error(
        "dialog {id} cannot be answered: Chromium says no dialog is showing, yet its frame stays blocked; only navigating the page releases it (call browser_navigate, e.g. to the current URL)"
    )]
    NotAnswerable {
        /// The dialog's id.
        id: String,
    },
    /// An answer to this dialog (the agent's, the policy's or the watchdog's) is in flight.
    #[error("dialog {id} is already being answered")]
    AlreadyAnswering {
        /// The dialog's id.
        id: String,
    },
    /// `Page.handleJavaScriptDialog` failed for another reason.
    #[error("answering dialog {id} failed: {error}")]
    Cdp {
        /// The dialog's id.
        id: String,
        /// The [`CommandError`], as text.
        error: String,
    },
}

/// Why a frame cannot take a routed CDP call.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RouteError {
    /// No frame has this id.
    #[error("unknown frame_id {frame_id:?}; known frames: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    UnknownFrame {
        /// The `frame_id` given.
        frame_id: String,
        /// The known frame ids, oldest first, at most [`FRAME_TREE_MAX_ENTRIES`].
        known: Vec<String>,
    },
    /// The frame lives in its parent's process and has no session of its own.
    #[error("frame {frame_id} is a same-process iframe with no CDP session of its own; run Runtime.evaluate without frame_id{} and reach it through the iframe element's contentWindow / contentDocument", host.as_ref().map(|h| format!(" (or with frame_id {h}, the OOPIF that hosts it)")).unwrap_or_default())]
    SameProcess {
        /// The `frame_id` given.
        frame_id: String,
        /// The OOPIF whose session holds it, when not the page's.
        host: Option<String>,
    },
    /// No page session is attached (not yet, or the tab went).
    #[error("no page is attached")]
    NoPage,
}

#[derive(Clone, Debug)]
struct Answering {
    by: ClosedBy,
    ticket: Option<u64>,
    /// What we answered, recorded when no closed event tells (the bridge).
    accept: bool,
    prompt_text: Option<String>,
}

#[derive(Clone, Debug)]
struct Dialog {
    view: PendingDialog,
    frame_id: Option<FrameId>,
    session_id: Option<SessionId>,
    deadline: Option<Instant>,
    answering: Option<Answering>,
    /// A dialog reported by the bridge: its paused request (`Fetch.requestPaused.requestId`).
    bridge_request: Option<String>,
}

#[derive(Clone, Debug)]
struct Frame {
    parent: Option<FrameId>,
    url: String,
    origin: String,
    /// The session that reports this frame.
    session: SessionId,
    /// The root of an OOPIF: its own target (target id == frame id) and session.
    is_oopif: bool,
    /// Insertion order, for a stable tree.
    seq: u64,
}

#[derive(Clone, Debug)]
struct Session {
    target_id: TargetId,
}

/// The supervisor's state: dialogs, frames, sessions and console errors of one page.
#[derive(Debug)]
pub struct State {
    opts: Options,
    out: VecDeque<Output>,
    top_session: Option<SessionId>,
    top_target: Option<TargetId>,
    top_frame: Option<FrameId>,
    title: String,
    sessions: HashMap<SessionId, Session>,
    frames: HashMap<FrameId, Frame>,
    frame_seq: u64,
    frames_dropped: bool,
    dialogs: Vec<Dialog>,
    /// See [`ANSWERS_AFTER_CLOSE_MAX`].
    answers_after_close: VecDeque<(ClosedDialog, Answering)>,
    next_dialog: u64,
    recent: VecDeque<ClosedDialog>,
    console: VecDeque<ConsoleError>,
    page_enable_deadline: Option<Instant>,
    page_blocked: bool,
    page_blocked_release: Option<Instant>,
    navigation_by: Option<(ClosedBy, Instant)>,
    /// The top document's loader (`Page.Frame.loaderId`).
    top_loader: Option<String>,
    /// The last loader announced with [`Notice::PageLoaded`]: the lifecycle
    /// event and the load event both announce a load, once.
    loaded_loader: Option<String>,
}

impl State {
    /// A state with nothing attached.
    pub fn new(opts: Options) -> State {
        State {
            opts,
            out: VecDeque::new(),
            top_session: None,
            top_target: None,
            top_frame: None,
            title: String::new(),
            sessions: HashMap::new(),
            frames: HashMap::new(),
            frame_seq: 0,
            frames_dropped: false,
            dialogs: Vec::new(),
            answers_after_close: VecDeque::new(),
            next_dialog: 1,
            recent: VecDeque::new(),
            console: VecDeque::new(),
            page_enable_deadline: None,
            page_blocked: false,
            page_blocked_release: None,
            navigation_by: None,
            top_loader: None,
            loaded_loader: None,
        }
    }

    /// The settings.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The next output, if any. Drain after every input.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// The page session, once attached.
    pub fn top_session(&self) -> Option<&SessionId> {
        self.top_session.as_ref()
    }

    /// The page's target id, once attached.
    pub fn top_target(&self) -> Option<&TargetId> {
        self.top_target.as_ref()
    }

    /// The top frame's URL (empty before the frame tree is known).
    pub fn top_url(&self) -> &str {
        self.top_frame
            .as_ref()
            .and_then(|f| self.frames.get(f))
            .map(|f| f.url.as_str())
            .unwrap_or("")
    }

    /// Whether every attached session is a known, live one (for routing checks).
    pub fn has_session(&self, session_id: &SessionId) -> bool {
        self.sessions.contains_key(session_id)
    }

    /// The live child sessions (OOPIFs and other auto-attached targets).
    pub fn session_ids(&self) -> impl Iterator<Item = &SessionId> {
        self.sessions.keys()
    }

    /// Pending dialogs, oldest first.
    pub fn pending_dialogs(&self) -> impl Iterator<Item = &PendingDialog> {
        self.dialogs.iter().map(|d| &d.view)
    }

    /// Starts supervising the page `target_id` attached as `session_id`
    /// (`Target.attachToTarget{flatten:true}`): enables the domains, turns on
    /// auto-attach and asks for the frame tree. `Page.enable` is asked last
    /// and never waited for: a page blocked by a dialog does not answer it.
    ///
    /// `url` and `title` come from the target's `Target.TargetInfo`: they
    /// seed the top frame, so the snapshot has a top even when a dialog
    /// blocks the page and `Page.getFrameTree` gets no answer.
    pub fn attach_page(
        &mut self,
        target_id: TargetId,
        session_id: SessionId,
        url: &str,
        title: &str,
        now: Now,
    ) {
        self.top_target = Some(target_id.clone());
        self.top_session = Some(session_id.clone());
        let top = FrameId(target_id.0.clone());
        self.top_frame = Some(top.clone());
        self.top_loader = None;
        // A fresh tree (after a reconnect, the last one seen was kept until now).
        self.frames.clear();
        self.sessions
            .insert(session_id.clone(), Session { target_id });
        self.upsert_frame(&top, None, Some(url), &session_id, true);
        if !title.is_empty() {
            self.title = title.to_owned();
        }
        self.page_enable_deadline = now.instant.checked_add(self.opts.page_enable_grace);
        self.setup_session(&session_id, false);
    }

    /// Forgets every session (the connection dropped), keeping dialogs,
    /// their watchdogs, recent dialogs, console errors and the last frame
    /// tree (none of it routable) for the snapshot. Call
    /// [`State::attach_page`] again once re-attached: it starts a fresh tree.
    pub fn connection_lost(&mut self) {
        // Frames stay as last seen, for the snapshot while reconnecting;
        // with no live session none of them is routable.
        self.sessions.clear();
        self.top_session = None;
        self.page_enable_deadline = None;
        for d in &mut self.dialogs {
            // Their sessions are dead; answers go to the new page session.
            d.session_id = None;
        }
    }

    fn setup_session(&mut self, session: &SessionId, resume: bool) {
        let s = Some(session.clone());
        self.send(
            s.clone(),
            "Page.getFrameTree",
            json!({}),
            Purpose::FrameTree,
        );
        self.send(s.clone(), "Runtime.enable", json!({}), Purpose::Setup);
        self.send(
            s.clone(),
            "Target.setAutoAttach",
            json!({
                "autoAttach": true,
                "waitForDebuggerOnStart": true,
                "flatten": true,
                "filter": [{"type": "iframe", "exclude": false}, {"type": "page", "exclude": false}],
            }),
            Purpose::Setup,
        );
        let enable_purpose = if resume {
            Purpose::Setup
        } else {
            Purpose::PageEnable
        };
        self.send(s.clone(), "Page.enable", json!({}), enable_purpose);
        if !resume {
            // Lifecycle events name their document's loader: which document
            // a load event is about, even when Chromium skips frameNavigated
            // (a new tab's first navigation can).
            self.send(
                s.clone(),
                "Page.setLifecycleEventsEnabled",
                json!({"enabled": true}),
                Purpose::Setup,
            );
        }
        if self.opts.dialog_bridge {
            // After Page.enable: the script takes effect only while the Page
            // domain is enabled; before the resume: the first document gets it.
            self.send(
                s.clone(),
                "Page.addScriptToEvaluateOnNewDocument",
                json!({"source": bridge::script(), "runImmediately": true}),
                Purpose::Setup,
            );
            self.send(
                s.clone(),
                "Fetch.enable",
                bridge::fetch_patterns(),
                Purpose::Setup,
            );
        }
        if resume {
            self.send(
                s,
                "Runtime.runIfWaitingForDebugger",
                json!({}),
                Purpose::Setup,
            );
        }
    }

    fn send(
        &mut self,
        session_id: Option<SessionId>,
        method: &'static str,
        params: Value,
        purpose: Purpose,
    ) {
        self.out.push_back(Output::Send(Command {
            session_id,
            method,
            params,
            purpose,
        }));
    }

    fn notice(&mut self, n: Notice) {
        self.out.push_back(Output::Notice(n));
    }

    /// Feeds one CDP event that arrived on `session_id` (`None`: browser level).
    pub fn on_event(&mut self, session_id: Option<&SessionId>, event: Event, now: Now) {
        self.expire_navigation(now);
        match event {
            Event::DialogOpening(d) => self.on_dialog_opening(session_id, d, None, now),
            Event::FetchRequestPaused { params } => {
                self.on_request_paused(session_id, &params, now)
            }
            Event::DialogClosed(c) => self.on_dialog_closed(session_id, c, now),
            Event::FrameAttached(a) => {
                let Some(s) = session_id else { return };
                if !self.sessions.contains_key(s) {
                    return;
                }
                self.upsert_frame(&a.frame_id, Some(&a.parent_frame_id), None, s, false);
            }
            Event::FrameNavigated(n) => {
                let Some(s) = session_id else { return };
                if !self.sessions.contains_key(s) {
                    return;
                }
                self.on_frame_navigated(s, n.frame, now);
            }
            Event::FrameDetached(d) => {
                if d.reason.as_deref() == Some("swap") {
                    // The frame moved to another process; its OOPIF target takes it over.
                    return;
                }
                let Some(s) = session_id else { return };
                if !self.sessions.contains_key(s) {
                    return;
                }
                self.remove_frame_subtree(&d.frame_id, now);
            }
            Event::LoadEventFired => {
                if session_id.is_some() && session_id == self.top_session.as_ref() {
                    // Chromium sends no targetInfoChanged for a new document
                    // title: ask for it, and announce the load with it.
                    let target = self.top_target.as_ref().map(|t| t.0.clone());
                    self.send(
                        None,
                        "Target.getTargetInfo",
                        json!({ "targetId": target }),
                        Purpose::PageLoaded {
                            loader_id: self.top_loader.clone(),
                        },
                    );
                }
            }
            Event::Lifecycle(l) => {
                if session_id.is_some()
                    && session_id == self.top_session.as_ref()
                    && Some(&l.frame_id) == self.top_frame.as_ref()
                {
                    // A load event for a loader is proof that its document
                    // loaded, whatever frameNavigated said (or did not say).
                    if l.name == "load" && self.loaded_loader.as_ref() != Some(&l.loader_id) {
                        self.loaded_loader = Some(l.loader_id.clone());
                        self.notice(Notice::PageLoaded {
                            url: self.top_url().to_owned(),
                            loader_id: Some(l.loader_id.clone()),
                        });
                    }
                    self.top_loader = Some(l.loader_id);
                }
            }
            Event::AttachedToTarget(a) => self.on_attached(session_id, a),
            Event::DetachedFromTarget(d) => self.on_session_gone(&d.session_id, now),
            Event::TargetInfoChanged(t) => {
                if Some(&t.target_info.target_id) == self.top_target.as_ref() {
                    self.title = t.target_info.title;
                }
            }
            Event::TargetDestroyed(t) | Event::TargetCrashed(t) => {
                if Some(&t.target_id) == self.top_target.as_ref()
                    && let Some(s) = self.top_session.clone()
                {
                    self.on_session_gone(&s, now);
                }
            }
            Event::InspectorDetached => {
                if let Some(s) = session_id.cloned() {
                    self.on_session_gone(&s, now);
                }
            }
            Event::ConsoleApiCalled(c) => {
                if c.call_type != "error" && c.call_type != "assert" {
                    return;
                }
                let text = c
                    .args
                    .iter()
                    .map(|a| a.to_text())
                    .collect::<Vec<_>>()
                    .join(" ");
                let url = c
                    .stack_trace
                    .and_then(|s| s.call_frames.into_iter().next())
                    .map(|f| f.url)
                    .filter(|u| !u.is_empty());
                let at = c.timestamp.map(|ms| ms / 1000.0).unwrap_or(now.unix_s);
                self.push_console(c.call_type, text, url, at);
            }
            Event::ExceptionThrown(e) => {
                let d = e.exception_details;
                let text = d
                    .exception
                    .as_ref()
                    .and_then(|x| x.description.clone())
                    .unwrap_or(d.text);
                let at = e.timestamp.map(|ms| ms / 1000.0).unwrap_or(now.unix_s);
                self.push_console(
                    "exception".into(),
                    text,
                    d.url.filter(|u| !u.is_empty()),
                    at,
                );
            }
            Event::Unparsed { .. } | Event::Other { .. } => {}
        }
    }

    fn push_console(&mut self, level: String, text: String, url: Option<String>, at: f64) {
        let error = ConsoleError {
            level,
            text: cut(text, CONSOLE_TEXT_MAX_CHARS),
            url,
            at,
        };
        if self.console.len() == CONSOLE_ERRORS_MAX {
            self.console.pop_front();
        }
        self.console.push_back(error.clone());
        self.notice(Notice::ConsoleError { error });
    }

    fn on_attached(&mut self, parent: Option<&SessionId>, a: AttachedToTarget) {
        let child = a.session_id.clone();
        let kind = a.target_info.target_type.as_str();
        let Some(parent) = parent.filter(|p| self.sessions.contains_key(*p)) else {
            // Not auto-attached under a session we supervise (another client's, or browser level).
            return;
        };
        if self.sessions.contains_key(&child) {
            return;
        }
        let is_frame = kind == "iframe" || kind == "page";
        if !is_frame || self.sessions.len() >= SESSIONS_TRACKED_MAX {
            if is_frame {
                self.frames_dropped = true;
            }
            // Resume it (it waits for a debugger) and let it go.
            let s = Some(child.clone());
            self.send(
                s.clone(),
                "Runtime.runIfWaitingForDebugger",
                json!({}),
                Purpose::Setup,
            );
            self.send(
                None,
                "Target.detachFromTarget",
                json!({"sessionId": child.0}),
                Purpose::Setup,
            );
            return;
        }
        let target_id = a.target_info.target_id.clone();
        self.sessions.insert(
            child.clone(),
            Session {
                target_id: target_id.clone(),
            },
        );
        if kind == "iframe" {
            let frame_id = FrameId(target_id.0.clone());
            let parent_main = self
                .sessions
                .get(parent)
                .map(|s| FrameId(s.target_id.0.clone()));
            let known_parent = self.frames.get(&frame_id).and_then(|f| f.parent.clone());
            let parent_frame = known_parent.or(parent_main);
            let url = a.target_info.url.clone();
            self.upsert_frame(&frame_id, parent_frame.as_ref(), Some(&url), &child, false);
            if let Some(f) = self.frames.get_mut(&frame_id) {
                f.is_oopif = true;
                f.session = child.clone();
            }
            // upsert_frame announced a new frame before we knew it is an OOPIF.
            if let Some(Output::Notice(Notice::FrameAttached {
                frame_id: announced,
                is_oopif,
                ..
            })) = self.out.back_mut()
                && *announced == frame_id.0
            {
                *is_oopif = true;
            }
        }
        self.setup_session(&child, true);
    }

    fn on_session_gone(&mut self, session: &SessionId, now: Now) {
        let Some(gone) = self.sessions.remove(session) else {
            return;
        };
        if Some(session) == self.top_session.as_ref() {
            self.top_session = None;
            self.page_enable_deadline = None;
            self.page_blocked = false;
            self.page_blocked_release = None;
            let all: Vec<FrameId> = self.frames.keys().cloned().collect();
            self.frames.clear();
            self.sessions.clear();
            for f in all {
                self.notice(Notice::FrameDetached { frame_id: f.0 });
            }
            let ids: Vec<String> = self.dialogs.iter().map(|d| d.view.id.clone()).collect();
            for id in ids {
                self.close_dialog(&id, ClosedBy::Remote, None, None, now);
            }
            self.notice(Notice::PageGone {
                reason: format!("the page's target {} detached", gone.target_id),
            });
            return;
        }
        // An OOPIF's session: its frames (those it still reports) go with it.
        let owned: Vec<FrameId> = self
            .frames
            .iter()
            .filter(|(_, f)| &f.session == session)
            .map(|(id, _)| id.clone())
            .collect();
        for f in owned {
            self.remove_frame_subtree(&f, now);
        }
    }

    fn upsert_frame(
        &mut self,
        frame_id: &FrameId,
        parent: Option<&FrameId>,
        url: Option<&str>,
        session: &SessionId,
        claim: bool,
    ) {
        let own_target = frame_id.0 == self.session_target(session);
        if let Some(f) = self.frames.get_mut(frame_id) {
            if f.parent.is_none() && Some(frame_id) != self.top_frame.as_ref() {
                f.parent = parent.cloned();
            }
            if let Some(u) = url {
                f.url = u.to_owned();
                f.origin = origin_of(u);
            }
            // A frame that an OOPIF target reported, now reported by another
            // session, moved back into that session's process.
            if claim && &f.session != session && f.is_oopif && !own_target {
                f.is_oopif = false;
                f.session = session.clone();
            }
            return;
        }
        if self.frames.len() >= FRAMES_TRACKED_MAX {
            self.frames_dropped = true;
            return;
        }
        let is_top = Some(frame_id) == self.top_frame.as_ref();
        self.frame_seq += 1;
        let url = url.unwrap_or("").to_owned();
        self.frames.insert(
            frame_id.clone(),
            Frame {
                parent: if is_top { None } else { parent.cloned() },
                origin: origin_of(&url),
                url,
                session: session.clone(),
                is_oopif: false,
                seq: self.frame_seq,
            },
        );
        if !is_top {
            self.notice(Notice::FrameAttached {
                frame_id: frame_id.0.clone(),
                parent_frame_id: parent.map(|p| p.0.clone()),
                is_oopif: false,
            });
        }
    }

    fn session_target(&self, session: &SessionId) -> String {
        self.sessions
            .get(session)
            .map(|s| s.target_id.0.clone())
            .unwrap_or_default()
    }

    fn on_frame_navigated(&mut self, session: &SessionId, frame: FrameInfo, now: Now) {
        let url = frame.full_url();
        let is_top = Some(&frame.id) == self.top_frame.as_ref();
        if is_top && frame.loader_id.is_some() {
            self.top_loader = frame.loader_id.clone();
        }
        self.upsert_frame(
            &frame.id,
            frame.parent_id.as_ref(),
            Some(&url),
            session,
            true,
        );
        if let Some(f) = self.frames.get_mut(&frame.id)
            && let Some(origin) = frame.security_origin.filter(|o| is_origin(o))
        {
            f.origin = origin;
        }
        // A new document in a frame ends any dialog its old document showed.
        let closing: Vec<String> = self
            .dialogs
            .iter()
            .filter(|d| d.frame_id.as_ref() == Some(&frame.id) && d.answering.is_none())
            .map(|d| d.view.id.clone())
            .collect();
        let by = self.navigation_closer();
        for id in closing {
            self.close_dialog(&id, by, None, None, now);
        }
        if is_top {
            if self.page_blocked {
                self.page_blocked = false;
                self.page_blocked_release = None;
            }
            self.frames_dropped = false;
            self.navigation_by = None;
        }
        let is_oopif = self.frames.get(&frame.id).is_some_and(|f| f.is_oopif);
        self.notice(Notice::FrameNavigated {
            frame_id: frame.id.0,
            url,
            is_oopif,
        });
    }

    fn remove_frame_subtree(&mut self, root: &FrameId, now: Now) {
        if Some(root) == self.top_frame.as_ref() {
            return;
        }
        let mut doomed = vec![root.clone()];
        // `seen` ends the walk on a parent cycle (a frame naming itself or a
        // descendant as its parent: never Chromium, but a proxy or mock may).
        let mut seen: HashSet<FrameId> = HashSet::from([root.clone()]);
        let mut i = 0;
        while i < doomed.len() {
            let p = doomed[i].clone();
            let kids: Vec<FrameId> = self
                .frames
                .iter()
                .filter(|(id, f)| f.parent.as_ref() == Some(&p) && !seen.contains(*id))
                .map(|(id, _)| id.clone())
                .collect();
            seen.extend(kids.iter().cloned());
            doomed.extend(kids);
            i += 1;
        }
        let by = self.navigation_closer();
        for f in &doomed {
            if self.frames.remove(f).is_some() {
                self.notice(Notice::FrameDetached {
                    frame_id: f.0.clone(),
                });
            }
            let closing: Vec<String> = self
                .dialogs
                .iter()
                .filter(|d| d.frame_id.as_ref() == Some(f))
                .map(|d| d.view.id.clone())
                .collect();
            for id in closing {
                self.close_dialog(&id, by, None, None, now);
            }
        }
    }

    fn on_frame_tree(&mut self, session: &SessionId, tree: FrameTree) {
        if !self.sessions.contains_key(session) {
            return;
        }
        let mut stack = vec![(tree, None::<FrameId>)];
        while let Some((node, parent)) = stack.pop() {
            let FrameTree {
                frame,
                child_frames,
            } = node;
            let id = frame.id.clone();
            // Replies come in wire order with events: this is the current document.
            if Some(&id) == self.top_frame.as_ref() && frame.loader_id.is_some() {
                self.top_loader = frame.loader_id.clone();
            }
            let parent = frame.parent_id.clone().or(parent);
            let url = frame.full_url();
            // An OOPIF not yet committed answers an empty URL: it never
            // blanks one that frame events reported, nor its origin.
            let url = Some(url.as_str()).filter(|u| !u.is_empty());
            self.upsert_frame(&id, parent.as_ref(), url, session, true);
            if let Some(f) = self.frames.get_mut(&id)
                && url.is_some()
                && let Some(origin) = frame.security_origin.filter(|o| is_origin(o))
            {
                f.origin = origin;
            }
            // Children in reverse so they pop (and are numbered) in document order.
            for c in child_frames.into_iter().rev() {
                stack.push((c, Some(id.clone())));
            }
        }
    }

    fn navigation_closer(&self) -> ClosedBy {
        self.navigation_by
            .map(|(by, _)| by)
            .unwrap_or(ClosedBy::Remote)
    }

    fn expire_navigation(&mut self, now: Now) {
        if let Some((_, until)) = self.navigation_by
            && now.instant >= until
        {
            self.navigation_by = None;
        }
    }

    /// The agent (or the watchdog) starts navigating the page: dialogs that a
    /// navigation closes in the next moments are attributed to `by`.
    pub fn navigation_started(&mut self, by: ClosedBy, now: Now) {
        self.navigation_by = Some((by, now.instant + NAVIGATION_ATTRIBUTION_WINDOW));
    }

    fn on_request_paused(&mut self, session: Option<&SessionId>, params: &str, now: Now) {
        let Some(session) = session.filter(|s| self.sessions.contains_key(*s)).cloned() else {
            return;
        };
        match bridge::parse_paused(params) {
            PausedKind::Dialog(b) => {
                let opening = DialogOpening {
                    url: b.url,
                    frame_id: b.frame_id.map(FrameId),
                    message: b.message,
                    dialog_type: b.dialog_type,
                    default_prompt: Some(b.default_prompt),
                };
                self.on_dialog_opening(Some(&session), opening, Some(b.request_id), now);
            }
            // Never leave a request paused.
            PausedKind::Other { request_id } => self.send(
                Some(session),
                "Fetch.continueRequest",
                json!({ "requestId": request_id }),
                Purpose::Setup,
            ),
            PausedKind::Unreadable => {}
        }
    }

    fn on_dialog_opening(
        &mut self,
        session: Option<&SessionId>,
        d: DialogOpening,
        bridge_request: Option<String>,
        now: Now,
    ) {
        let Some(session) = session.filter(|s| self.sessions.contains_key(*s)) else {
            return;
        };
        let frame_id = d.frame_id.clone().or_else(|| {
            self.sessions
                .get(session)
                .map(|s| FrameId(s.target_id.0.clone()))
        });
        let message = cut(d.message, DIALOG_MESSAGE_MAX_CHARS);
        if let Some(existing) = self
            .dialogs
            .iter_mut()
            .find(|x| x.frame_id.is_some() && x.frame_id == frame_id)
            .filter(|_| bridge_request.is_none())
        {
            if existing.view.dialog_type == d.dialog_type.as_str()
                && existing.view.message == message
            {
                // The same dialog reported again (by another session): one
                // dialog is listed once. Prefer the page session to answer on.
                if Some(session) == self.top_session.as_ref() {
                    existing.session_id = Some(session.clone());
                }
                return;
            }
            // A frame shows one dialog at a time: the old one closed unseen.
            let old = existing.view.id.clone();
            self.close_dialog(&old, ClosedBy::Remote, None, None, now);
        }
        let id = format!("d-{}", self.next_dialog);
        self.next_dialog += 1;
        let view = PendingDialog {
            id: id.clone(),
            dialog_type: d.dialog_type.as_str().to_owned(),
            message,
            default_prompt: d.default_prompt.clone().unwrap_or_default(),
            opened_at: now.unix_s,
            frame_id: frame_id.as_ref().map(|f| f.0.clone()),
            url: d.url,
            answerable: true,
        };
        let auto = match self.opts.policy {
            DialogPolicy::MustRespond => None,
            DialogPolicy::AutoDismiss => Some(DialogAction::Dismiss),
            DialogPolicy::AutoAccept => Some(DialogAction::Accept),
        };
        self.dialogs.push(Dialog {
            view: view.clone(),
            frame_id,
            session_id: Some(session.clone()),
            deadline: match auto {
                // A timeout too large for the clock is no deadline at all.
                None => now.instant.checked_add(self.opts.dialog_timeout),
                Some(_) => None,
            },
            answering: None,
            bridge_request,
        });
        if let Some(action) = auto {
            // Answer before anything else is even announced: the page is frozen until then.
            self.start_answer(&id, action, None, ClosedBy::AutoPolicy, None);
        }
        self.notice(Notice::DialogOpened { dialog: view });
    }

    fn start_answer(
        &mut self,
        id: &str,
        action: DialogAction,
        prompt_text: Option<String>,
        by: ClosedBy,
        ticket: Option<u64>,
    ) {
        let top = self.top_session.clone();
        let Some(d) = self.dialogs.iter_mut().find(|d| d.view.id == id) else {
            return;
        };
        let accept = action == DialogAction::Accept;
        // Accepting a prompt without text answers with the default, as a person pressing OK would.
        let text = (accept && d.view.dialog_type == DialogType::Prompt.as_str())
            .then(|| prompt_text.unwrap_or_else(|| d.view.default_prompt.clone()));
        let (method, params) = match &d.bridge_request {
            Some(request_id) => (
                "Fetch.fulfillRequest",
                bridge::fulfill_params(request_id, accept, text.as_deref()),
            ),
            None => {
                let mut params = json!({ "accept": accept });
                if let Some(t) = &text {
                    params["promptText"] = Value::String(t.clone());
                }
                ("Page.handleJavaScriptDialog", params)
            }
        };
        // Record that we are answering before sending: Chromium sends
        // javascriptDialogClosed before its reply.
        d.answering = Some(Answering {
            by,
            ticket,
            accept,
            prompt_text: text,
        });
        // A bridge request is fulfilled on the session that paused it.
        let session = if d.bridge_request.is_some() {
            d.session_id.clone()
        } else {
            d.session_id.clone().or(top)
        };
        let dialog_id = d.view.id.clone();
        self.send(session, method, params, Purpose::Answer { dialog_id });
    }

    /// The agent answers a dialog (`browser_dialog`). On `Ok`, a command is
    /// queued and [`Output::AnswerDone`] with `ticket` follows once Chromium
    /// replies. Errors are the spec's: no dialog, several without
    /// `dialog_id` (listing them), unknown id (listing the known ones), a
    /// dialog Chromium will not answer, one already being answered.
    pub fn answer_dialog(&mut self, req: DialogRequest, ticket: u64) -> Result<(), DialogError> {
        let id = match &req.dialog_id {
            Some(id) => {
                if !self.dialogs.iter().any(|d| &d.view.id == id) {
                    return Err(DialogError::UnknownId {
                        id: id.clone(),
                        known: self.dialogs.iter().map(|d| d.view.id.clone()).collect(),
                    });
                }
                id.clone()
            }
            None => match self.dialogs.as_slice() {
                [] => return Err(DialogError::NoDialog),
                [one] => one.view.id.clone(),
                many => {
                    return Err(DialogError::Ambiguous {
                        candidates: many.iter().map(describe_dialog).collect(),
                    });
                }
            },
        };
        let d = self
            .dialogs
            .iter()
            .find(|d| d.view.id == id)
            .expect("found above");
        if d.answering.is_some() {
            return Err(DialogError::AlreadyAnswering { id });
        }
        if !d.view.answerable {
            return Err(DialogError::NotAnswerable { id });
        }
        self.start_answer(
            &id,
            req.action,
            req.prompt_text,
            ClosedBy::Agent,
            Some(ticket),
        );
        Ok(())
    }

    fn on_dialog_closed(&mut self, session: Option<&SessionId>, c: DialogClosed, now: Now) {
        let found = match &c.frame_id {
            Some(f) => self
                .dialogs
                .iter()
                .find(|d| d.frame_id.as_ref() == Some(f) && d.bridge_request.is_none())
                .map(|d| d.view.id.clone()),
            // Older builds say no frame: only an unambiguous match on the session counts.
            None => {
                let on_session: Vec<&Dialog> = self
                    .dialogs
                    .iter()
                    .filter(|d| d.session_id.as_ref() == session && d.bridge_request.is_none())
                    .collect();
                match on_session.as_slice() {
                    [one] => Some(one.view.id.clone()),
                    _ => None,
                }
            }
        };
        let Some(id) = found else {
            if self.page_blocked && session == self.top_session.as_ref() {
                self.page_blocked = false;
                self.page_blocked_release = None;
            }
            return;
        };
        let d = self
            .dialogs
            .iter()
            .find(|d| d.view.id == id)
            .expect("found");
        let by = match &d.answering {
            Some(a) => a.by,
            None => self.navigation_closer(),
        };
        let user_input = (d.view.dialog_type == DialogType::Prompt.as_str() && c.result)
            .then(|| c.user_input.clone());
        self.close_dialog(&id, by, Some(c.result), user_input, now);
    }

    fn close_dialog(
        &mut self,
        id: &str,
        by: ClosedBy,
        accepted: Option<bool>,
        user_input: Option<String>,
        now: Now,
    ) {
        let Some(pos) = self.dialogs.iter().position(|d| d.view.id == id) else {
            return;
        };
        let d = self.dialogs.remove(pos);
        let closed = ClosedDialog {
            dialog: d.view,
            closed_at: now.unix_s,
            closed_by: by,
            accepted,
            user_input,
        };
        if self.recent.len() == RECENT_DIALOGS_MAX {
            self.recent.pop_front();
        }
        self.recent.push_back(closed.clone());
        // An agent waiting on this dialog hears the outcome when its reply comes.
        if let Some(a) = d.answering {
            if self.answers_after_close.len() == ANSWERS_AFTER_CLOSE_MAX {
                self.answers_after_close.pop_front();
            }
            self.answers_after_close.push_back((closed.clone(), a));
        }
        self.notice(Notice::DialogClosed { dialog: closed });
    }

    fn recent_by_id(&self, id: &str) -> Option<&ClosedDialog> {
        self.recent.iter().rev().find(|c| c.dialog.id == id)
    }

    /// Feeds the reply to a command this state machine asked for.
    pub fn on_reply(
        &mut self,
        session_id: Option<&SessionId>,
        purpose: Purpose,
        result: Result<Value, CommandError>,
        now: Now,
    ) {
        self.expire_navigation(now);
        match purpose {
            Purpose::Setup | Purpose::Release => {}
            Purpose::PageEnable => {
                if result.is_ok() && session_id == self.top_session.as_ref() {
                    self.page_enable_deadline = None;
                    self.page_blocked = false;
                    self.page_blocked_release = None;
                }
            }
            Purpose::FrameTree => {
                if let (Some(s), Ok(v)) = (session_id, result)
                    && let Some(tree) = v
                        .get("frameTree")
                        .and_then(|t| serde_json::from_value::<FrameTree>(t.clone()).ok())
                {
                    self.on_frame_tree(s, tree);
                }
            }
            Purpose::Answer { dialog_id } => self.on_answer_reply(&dialog_id, result, now),
            Purpose::PageLoaded { loader_id } => {
                let info = result.ok();
                let field = |k: &str| {
                    info.as_ref()
                        .and_then(|v| v.pointer(&format!("/targetInfo/{k}")))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                if let Some(title) = field("title") {
                    self.title = title;
                }
                // The page's URL as the browser has it, in case its commit
                // event never reached us (a new tab's first navigation).
                if let (Some(url), Some(top)) = (field("url"), self.top_frame.clone())
                    && let Some(f) = self.frames.get_mut(&top)
                    && f.url != url
                    && !url.is_empty()
                {
                    f.origin = origin_of(&url);
                    f.url = url;
                }
                if loader_id.is_none() || loader_id != self.loaded_loader {
                    self.loaded_loader = loader_id.clone();
                    let url = self.top_url().to_owned();
                    self.notice(Notice::PageLoaded { url, loader_id });
                }
            }
        }
    }

    fn on_answer_reply(&mut self, id: &str, result: Result<Value, CommandError>, now: Now) {
        let Some(d) = self.dialogs.iter_mut().find(|d| d.view.id == id) else {
            // Closed already (javascriptDialogClosed comes before the reply).
            self.on_answer_reply_after_close(id, &result);
            return;
        };
        let Some(answering) = d.answering.take() else {
            return;
        };
        let Answering {
            by,
            ticket,
            accept,
            prompt_text,
        } = answering;
        match result {
            Ok(_) => {
                // No closed event told us (the bridge, or an event lost): we know what we answered.
                let user_input = if accept { prompt_text } else { None };
                self.close_dialog(id, by, Some(accept), user_input, now);
                if let Some(ticket) = ticket {
                    let closed = self.recent_by_id(id).cloned().expect("just closed");
                    self.out.push_back(Output::AnswerDone {
                        ticket,
                        result: Ok(closed),
                    });
                }
            }
            Err(e) => {
                let refused = matches!(&e, CommandError::Protocol { code, .. } if *code == ERROR_INVALID_PARAMS);
                if refused {
                    d.view.answerable = false;
                }
                let dropped = matches!(&e, CommandError::Disconnected { .. });
                match by {
                    // The answer never reached Chromium: the watchdog or the
                    // policy tries again as soon as we are re-attached.
                    ClosedBy::Watchdog | ClosedBy::AutoPolicy if dropped => {
                        d.deadline = Some(now.instant);
                    }
                    ClosedBy::Watchdog => self.release(id, now),
                    _ => {
                        if by == ClosedBy::AutoPolicy && d.deadline.is_none() {
                            // The policy could not answer it; the watchdog will release the page.
                            d.deadline = now.instant.checked_add(self.opts.dialog_timeout);
                        }
                        if let Some(ticket) = ticket {
                            let error = if refused {
                                DialogError::NotAnswerable { id: id.to_owned() }
                            } else {
                                DialogError::Cdp {
                                    id: id.to_owned(),
                                    error: e.to_string(),
                                }
                            };
                            self.out.push_back(Output::AnswerDone {
                                ticket,
                                result: Err(error),
                            });
                        }
                    }
                }
            }
        }
    }

    /// The reply to an answer whose dialog closed while it was in flight. A
    /// `-32602` means someone else (another CDP client, a proxy) answered
    /// first: the record says `remote`. Either way the dialog is gone, which
    /// is what the agent asked for, so its answer finishes `Ok`.
    fn on_answer_reply_after_close(&mut self, id: &str, result: &Result<Value, CommandError>) {
        let Some(pos) = self
            .answers_after_close
            .iter()
            .position(|(c, _)| c.dialog.id == id)
        else {
            return;
        };
        let Some((mut closed, answering)) = self.answers_after_close.remove(pos) else {
            return;
        };
        let lost = matches!(result, Err(CommandError::Protocol { code, .. }) if *code == ERROR_INVALID_PARAMS);
        if lost && closed.closed_by == answering.by {
            closed.closed_by = ClosedBy::Remote;
            if let Some(r) = self.recent.iter_mut().rev().find(|c| c.dialog.id == id) {
                r.closed_by = ClosedBy::Remote;
            }
        }
        if let Some(ticket) = answering.ticket {
            self.out.push_back(Output::AnswerDone {
                ticket,
                result: Ok(closed),
            });
        }
    }

    /// Releases a page a dialog keeps blocked: navigates the top frame to its
    /// current URL (Chromium answers `Page.navigate` at once and the frame is free).
    fn release(&mut self, id: &str, now: Now) {
        self.navigation_started(ClosedBy::Watchdog, now);
        self.close_dialog(id, ClosedBy::Watchdog, None, None, now);
        self.send_release();
    }

    fn send_release(&mut self) {
        let url = self.top_url().to_owned();
        let url = if url.is_empty() {
            "about:blank".into()
        } else {
            url
        };
        let top = self.top_session.clone();
        self.send(top, "Page.navigate", json!({"url": url}), Purpose::Release);
    }

    /// When [`State::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.dialogs
            .iter()
            .filter(|d| d.answering.is_none())
            .filter_map(|d| d.deadline)
            .chain(self.page_enable_deadline)
            .chain(self.page_blocked_release)
            .chain(self.navigation_by.map(|(_, t)| t))
            .min()
    }

    /// Fires what is due at `now`: the must_respond watchdog dismisses
    /// (or, for a dialog Chromium will not answer, releases the page);
    /// an unanswered `Page.enable` marks the page blocked.
    pub fn handle_timeout(&mut self, now: Now) {
        self.expire_navigation(now);
        let due: Vec<(String, bool)> = self
            .dialogs
            .iter()
            .filter(|d| d.answering.is_none() && d.deadline.is_some_and(|t| t <= now.instant))
            .map(|d| (d.view.id.clone(), d.view.answerable))
            .collect();
        for (id, answerable) in due {
            if let Some(d) = self.dialogs.iter_mut().find(|d| d.view.id == id) {
                d.deadline = None;
            }
            if answerable {
                self.start_answer(&id, DialogAction::Dismiss, None, ClosedBy::Watchdog, None);
            } else {
                self.release(&id, now);
            }
        }
        if self.page_enable_deadline.is_some_and(|t| t <= now.instant) {
            self.page_enable_deadline = None;
            if self.dialogs.is_empty() {
                self.page_blocked = true;
                let wait = match self.opts.policy {
                    DialogPolicy::MustRespond => self.opts.dialog_timeout,
                    _ => Duration::ZERO,
                };
                self.page_blocked_release = now.instant.checked_add(wait);
                self.notice(Notice::PageBlocked);
            }
        }
        if self.page_blocked_release.is_some_and(|t| t <= now.instant) {
            self.page_blocked_release = None;
            self.navigation_started(ClosedBy::Watchdog, now);
            self.send_release();
        }
    }

    /// Whether the page is blocked by a dialog opened before we attached.
    pub fn page_blocked(&self) -> bool {
        self.page_blocked
    }

    /// Where a CDP call for `frame_id` must go: the page session for the top
    /// frame, the OOPIF's own session for an OOPIF, an error otherwise.
    pub fn route_frame(&self, frame_id: &str) -> Result<SessionId, RouteError> {
        let top = self.top_session.clone().ok_or(RouteError::NoPage)?;
        let fid = FrameId(frame_id.to_owned());
        if Some(&fid) == self.top_frame.as_ref() {
            return Ok(top);
        }
        let Some(f) = self.frames.get(&fid) else {
            let mut known: Vec<(u64, String)> = self
                .frames
                .iter()
                .map(|(id, f)| (f.seq, id.0.clone()))
                .collect();
            known.sort();
            return Err(RouteError::UnknownFrame {
                frame_id: frame_id.to_owned(),
                known: known
                    .into_iter()
                    .map(|(_, id)| id)
                    .take(FRAME_TREE_MAX_ENTRIES)
                    .collect(),
            });
        };
        if f.is_oopif && self.sessions.contains_key(&f.session) {
            return Ok(f.session.clone());
        }
        let host = (f.session != top)
            .then(|| self.sessions.get(&f.session).map(|s| s.target_id.0.clone()))
            .flatten();
        Err(RouteError::SameProcess {
            frame_id: frame_id.to_owned(),
            host,
        })
    }

    /// Builds the snapshot the agent reads.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            url: self.top_url().to_owned(),
            title: self.title.clone(),
            pending_dialogs: self.dialogs.iter().map(|d| d.view.clone()).collect(),
            recent_dialogs: self.recent.iter().cloned().collect(),
            frame_tree: self.frame_tree(),
            console_errors: self.console.iter().cloned().collect(),
            page_blocked: self.page_blocked,
            connection: Default::default(),
        }
    }

    fn frame_tree(&self) -> FrameTreeView {
        let mut view = FrameTreeView {
            truncated: self.frames_dropped,
            ..Default::default()
        };
        let Some(top_id) = self.top_frame.as_ref() else {
            return view;
        };
        let Some(top) = self.frames.get(top_id) else {
            return view;
        };
        view.top = Some(TopFrame {
            frame_id: top_id.0.clone(),
            url: top.url.clone(),
            origin: top.origin.clone(),
        });
        let mut kids: HashMap<&FrameId, Vec<(&FrameId, &Frame)>> = HashMap::new();
        for (id, f) in &self.frames {
            if id == top_id {
                continue;
            }
            // A frame whose parent we never learned hangs under the top.
            let parent = f
                .parent
                .as_ref()
                .filter(|p| self.frames.contains_key(*p))
                .unwrap_or(top_id);
            kids.entry(parent).or_default().push((id, f));
        }
        for v in kids.values_mut() {
            v.sort_by_key(|(_, f)| f.seq);
        }
        // Depth-first from the top, parents before children.
        let mut order: Vec<&FrameId> = Vec::new();
        let mut visited: HashSet<&FrameId> = HashSet::new();
        let mut stack: Vec<(&FrameId, usize)> = vec![(top_id, 0)];
        visited.insert(top_id);
        while let Some((id, depth)) = stack.pop() {
            // A leaf has no entry in `kids` but is listed all the same.
            for (cid, c) in kids.get(id).into_iter().flatten().rev() {
                let d = depth + usize::from(c.is_oopif);
                if d > FRAME_TREE_MAX_OOPIF_DEPTH {
                    view.truncated = true;
                    continue;
                }
                if visited.insert(cid) {
                    stack.push((cid, d));
                }
            }
            if id != top_id {
                order.push(id);
            }
        }
        let keep: HashSet<&FrameId> = if order.len() <= FRAME_TREE_MAX_ENTRIES {
            order.iter().copied().collect()
        } else {
            view.truncated = true;
            self.frames_to_show(&order, top_id)
        };
        view.children = order
            .into_iter()
            .filter(|id| keep.contains(id))
            .map(|id| self.child_view(id, &self.frames[id], top_id))
            .collect();
        view
    }

    /// Which [`FRAME_TREE_MAX_ENTRIES`] of `order` (depth-first, parents
    /// first) a capped tree shows: the OOPIFs first, with their ancestors,
    /// since they are what `browser_cdp(frame_id)` can reach; then the rest
    /// in document order. Every shown frame's parent is shown too.
    fn frames_to_show<'a>(&self, order: &[&'a FrameId], top_id: &FrameId) -> HashSet<&'a FrameId> {
        let index: HashMap<&FrameId, &'a FrameId> = order.iter().map(|id| (*id, *id)).collect();
        let mut keep: HashSet<&'a FrameId> = HashSet::new();
        for id in order.iter().filter(|id| self.frames[**id].is_oopif) {
            let mut chain = Vec::new();
            let mut cur = Some(*id);
            while let Some(c) = cur.filter(|c| *c != top_id && !keep.contains(c)) {
                chain.push(c);
                cur = self.frames[c]
                    .parent
                    .as_ref()
                    .and_then(|p| index.get(p).copied());
            }
            if keep.len() + chain.len() <= FRAME_TREE_MAX_ENTRIES {
                keep.extend(chain);
            }
        }
        for id in order {
            if keep.len() == FRAME_TREE_MAX_ENTRIES {
                break;
            }
            keep.insert(id);
        }
        keep
    }

    fn child_view(&self, id: &FrameId, f: &Frame, top_id: &FrameId) -> ChildFrame {
        let parent = f
            .parent
            .as_ref()
            .filter(|p| self.frames.contains_key(*p))
            .unwrap_or(top_id);
        let routable = f.is_oopif && self.sessions.contains_key(&f.session);
        ChildFrame {
            frame_id: id.0.clone(),
            url: f.url.clone(),
            origin: f.origin.clone(),
            parent_frame_id: parent.0.clone(),
            is_oopif: f.is_oopif,
            session_id: routable.then(|| f.session.0.clone()),
        }
    }
}

fn describe_dialog(d: &Dialog) -> String {
    let msg: String = d.view.message.chars().take(40).collect();
    format!("{} ({} {:?})", d.view.id, d.view.dialog_type, msg)
}

fn cut(s: String, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => s[..i].to_owned(),
        None => s,
    }
}

/// Whether Chromium's `securityOrigin` is a real one: it says `"://"` for
/// frames with no committed document (`about:blank`, `about:srcdoc` children).
fn is_origin(o: &str) -> bool {
    !o.is_empty() && o != "://"
}

/// The origin of a URL as the web spells it (`scheme://host[:port]`), `"null"`
/// for opaque ones (`about:`, `data:`), `""` when unknown.
pub fn origin_of(url: &str) -> String {
    if url.is_empty() {
        return String::new();
    }
    match url::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => String::new(),
    }
}
