//! The supervisor's rules as a pure state machine: no I/O, no clock.
//!
//! Like str0m's `Rtc`, [`State`] is a small coordinator over one
//! sub-machine per rule family, each in its own file:
//!
//! | family | file | where a rule changes |
//! |---|---|---|
//! | targets and sessions | `targets.rs` | `Targets::adopt` (which auto-attached targets we keep), `Targets::setup` (what each session is sent) |
//! | frames | `frames.rs` | `Frames::committed` (a new document), `Frames::on_tree` (a tree reply), `Frames::upsert` (a frame becomes known) |
//! | dialogs (and the bridge) | `dialogs.rs` | [`closed_by`] (who closed it), `State::answer_replied` (what an answer's reply means), `State::dialog_due` (the watchdog) |
//! | who navigates | `navigations.rs` | `Navigations` (attribution per navigation: frame and loader) |
//! | console | `console.rs` | `Console` |
//! | timers | `timers.rs` | [`Timer`] and [`State::handle_timeout`] |
//! | an agent's call | `calls.rs` | `CallStart::interrupted_by_new` (which dialog interrupts it), `CallStart::at_deadline` (interrupted or timed out), `blocks_navigation` (what holds `browser_navigate`) |
//! | loads a caller waits for | `loads.rs` | `Loads` (its load event, or asking the page), driven by `Tabs::await_load` |
//! | tabs | `tabs.rs` | `Tabs` (which pages are tabs, the current one, every tab's dialogs in one list) |
//!
//! Inputs: CDP events ([`State::on_event`]), replies to the commands it asked
//! for ([`State::on_reply`]), agent requests ([`State::answer_dialog`],
//! [`State::send_agent`]) and time ([`State::handle_timeout`]). Every call
//! that moves time takes `now`.
//!
//! Outputs, drained with [`State::poll_output`]: CDP commands to send
//! ([`Output::Send`]), notices for live watchers ([`Output::Notice`]), and
//! finished agent answers and calls ([`Output::AnswerDone`],
//! [`Output::AgentReply`]), and loads a caller waited for
//! ([`Output::Loaded`], from [`Tabs`]). [`State::poll_timeout`] says when to call
//! [`State::handle_timeout`] next; [`State::snapshot`] builds what the agent reads.
//!
//! # The contract with the driver
//!
//! **Every [`Output::Send`] gets exactly one [`State::on_reply`]**: Chromium's
//! reply, or an error the driver feeds in — [`ReplyError::Lost`] when it
//! could not send the command (no connection when it drained it) or the
//! connection dropped before the reply, [`ReplyError::Timeout`] at the
//! command's deadline. The core never relies on the driver to remember a
//! command: an answer whose command was lost is retried, a release whose
//! `Page.navigate` was lost is sent again, and no dialog stays "being
//! answered" once every command has its reply.
//!
//! A driver loop looks like:
//!
//! ```no_run
//! # use cdp_supervisor::supervisor::state::*;
//! # fn send(_: &Command) -> bool { true }
//! # let mut state = State::new(Options::default());
//! # let now = Now::system();
//! while let Some(out) = state.poll_output() {
//!     match out {
//!         // Never wait for the reply here; it comes back through on_reply.
//!         Output::Send(cmd) => {
//!             if !send(&cmd) {
//!                 let lost = ReplyError::Lost { reason: "not connected".into() };
//!                 state.on_reply(&cmd.target, cmd.purpose, Err(lost), now);
//!             }
//!         }
//!         // A finished download's file gets its name: Tabs::download_saved then.
//!         Output::SaveDownload { .. } => {}
//!         Output::Notice(_)
//!         | Output::AnswerDone { .. }
//!         | Output::AgentReply { .. }
//!         | Output::Loaded { .. } => {}
//!     }
//! }
//! if let Some(t) = state.poll_timeout() { /* sleep until t, then */ state.handle_timeout(now); }
//! ```

mod blocking;
pub mod calls;
mod console;
mod dialogs;
pub mod downloads;
mod errors;
mod frames;
mod io;
pub mod loads;
mod navigations;
mod tabs;
mod targets;
mod timers;

pub use blocking::BLOCKED_NAVIGATIONS_MAX;
pub use dialogs::{CloseCause, closed_by};
pub use errors::{
    DialogAction, DialogError, DialogRequest, Login, RouteError, not_answerable, not_pending,
};
pub use io::{Command, Notice, Now, Options, Output, Purpose, ReplyError, Target};
pub use navigations::ActionNavigation;
pub use tabs::{CLOSED_TABS_KEPT, CLOSING_GRACE, Tabs};
pub use timers::Timer;

use crate::cdp::protocol::{
    Event, FrameAttached, FrameDetached, FrameId, FrameStoppedLoading, FrameTree, LifecycleEvent,
    NavigatedWithinDocument, NavigationRequested, SessionId, TargetGone, TargetId,
};
use crate::supervisor::policy::DialogPolicy;
use crate::supervisor::snapshot::{ArcStr, ClosedBy, PendingDialog, Snapshot};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use targets::{Adopted, Intercept, SessionKind};

/// spec: `frame_tree` is capped at 30 entries (children; `top` not counted).
pub const FRAME_TREE_MAX_ENTRIES: usize = 30;
/// spec: `frame_tree` is capped at OOPIF depth 2 (OOPIF boundaries from the top).
pub const FRAME_TREE_MAX_OOPIF_DEPTH: usize = 2;
/// The largest reply an agent's command (`browser_cdp`, an action's
/// dispatch) may have: past it the call is an error and the reply is
/// dropped unread (DESIGN "Security": a 20 MB reply took 15 s to reach the
/// agent, whose context it would flood anyway).
pub const AGENT_REPLY_MAX_BYTES: usize = 8 << 20;

/// spec: `recent_dialogs` keeps the last 20.
pub const RECENT_DIALOGS_MAX: usize = 20;
/// spec: the console ring keeps the last 50.
pub const CONSOLE_ERRORS_MAX: usize = 50;
/// Chromium cuts `javascriptDialogOpening.message` at 10 240 chars; we hold
/// anything else (a proxy, a mock) to the same bound.
pub const DIALOG_MESSAGE_MAX_CHARS: usize = 10_240;
/// One console entry's text is one line of at most this many characters:
/// an agent reads every snapshot's 50 entries, and a stack trace or a
/// dump in each would be most of what it reads ([`console::one_line`]).
pub const CONSOLE_TEXT_MAX_CHARS: usize = 300;
/// The frame map's own bound: a page creating frames forever must not grow
/// memory forever. Frames past it are not tracked and the tree says `truncated`.
pub const FRAMES_TRACKED_MAX: usize = 1_000;
/// Child sessions (OOPIFs) past this bound are resumed and detached at once.
pub const SESSIONS_TRACKED_MAX: usize = 256;
/// Dialogs that closed (by their `javascriptDialogClosed`, a navigation or a
/// detach) while our `Page.handleJavaScriptDialog` was in flight, kept until
/// its reply says who won. A reply always comes (the driver contract); the
/// bound only caps memory.
pub const ANSWERS_AFTER_CLOSE_MAX: usize = 64;
/// DESIGN: `browser.max_tabs`' default: tabs supervised per task.
pub const MAX_TABS_DEFAULT: usize = 20;
/// spec: the must_respond watchdog's default.
pub const DEFAULT_DIALOG_TIMEOUT: Duration = Duration::from_secs(300);
/// How long `Page.enable` may go unanswered on the page session before we
/// call the page blocked by a dialog we never saw (an idle page answers in
/// milliseconds; a blocked one never does).
pub const PAGE_ENABLE_GRACE: Duration = Duration::from_millis(1_500);
/// The soonest a page is navigated to release an OOPIF found blocked by a
/// dialog we never saw, whatever the policy: a frame busy running a script
/// for seconds when we attach answers nothing either, and releasing it
/// would reload the user's page for nothing (a helper's 6 s loop was
/// taken for a dialog, and auto_dismiss reloaded the page at once). A
/// blocked OOPIF leaves the top usable meanwhile.
pub const OOPIF_RELEASE_MIN: Duration = Duration::from_secs(10);

/// How long the watchdog's releasing `Page.navigate` waits for its reply.
/// Chromium answers one at once when it frees the page (CDP facts); one
/// that does not answer meets a frame held by a dialog Chromium will not
/// answer, and the release closes the tab next, so that the page is free
/// within `dialog_timeout_s` + 5 s. A slow page does not get its tab
/// closed by it: its dialogs close (their closed events) as its navigation
/// starts, and with none left pending there is nothing more to release.
pub const RELEASE_REPLY_TIMEOUT: Duration = Duration::from_secs(3);

/// What each session's one `Fetch.enable` pauses under `opts`.
fn intercept(opts: &Options) -> Intercept<'_> {
    Intercept {
        bridge: opts.dialog_bridge.then_some(&opts.bridge_key),
        documents: opts.navigation.document_pattern(),
        auth: true,
    }
}

/// The outputs queued for [`State::poll_output`]; sub-machines write here.
#[derive(Clone, Debug)]
pub(crate) struct Out {
    queue: VecDeque<Output>,
    /// A watcher listens: notices only it reads are built
    /// ([`Notice::is_for_watchers`]).
    watched: bool,
}

impl Default for Out {
    fn default() -> Self {
        Out {
            queue: VecDeque::new(),
            watched: true,
        }
    }
}

/// Whether timer `t` may fire: a dialog's only while nothing is in flight
/// for it, and neither the watchdog nor a policy's release while a person
/// has the task.
fn timer_live(t: &Timer, dialogs: &dialogs::Dialogs, person: bool) -> bool {
    match t {
        Timer::Dialog(id) => !person && dialogs.idle(id),
        Timer::PageBlockedRelease => !person,
        Timer::PageEnableGrace | Timer::OopifEnableGrace(_) | Timer::DownloadAfterStop => true,
    }
}

/// Output slots a drained queue keeps: an attach queues a dozen commands at
/// once, and an idle supervisor should not keep the room for them (2 KiB).
const OUT_CAPACITY_KEPT: usize = 4;

/// The next output of `queue`; a drained queue gives back what it grew.
pub(crate) fn pop_output(queue: &mut VecDeque<Output>) -> Option<Output> {
    let o = queue.pop_front();
    if o.is_none() && queue.capacity() > OUT_CAPACITY_KEPT {
        *queue = VecDeque::new();
    }
    o
}

impl Out {
    fn push(&mut self, o: Output) {
        self.queue.push_back(o);
    }

    fn send(&mut self, target: Target, method: &str, params: Value, purpose: Purpose) {
        self.push(Command::output(target, method, params, purpose, None, 0));
    }

    fn notice(&mut self, n: Notice) {
        self.push(Output::Notice(n));
    }

    /// A notice only a watcher reads, built only while one listens.
    fn watch_notice(&mut self, n: impl FnOnce() -> Notice) {
        if self.watched {
            let n = n();
            debug_assert!(n.is_for_watchers(), "{n:?} is not for watchers only");
            self.notice(n);
        }
    }
}

/// The supervisor's state: dialogs, frames, sessions and console errors of one page.
///
/// `Clone` forks it: a test or a fuzz harness sets a page up once and plays
/// each sequence on a copy.
#[derive(Clone, Debug)]
pub struct State {
    opts: Options,
    out: Out,
    targets: targets::Targets,
    frames: frames::Frames,
    dialogs: dialogs::Dialogs,
    navs: navigations::Navigations,
    console: console::Console,
    timers: timers::Timers,
    /// The navigations the policy stopped.
    blocked: blocking::Blocked,
    /// The frames a dialog opened before we attached blocks: their
    /// session's `Page.enable` went unanswered past the grace (the top
    /// frame's, or an OOPIF's that existed when we attached).
    /// `page_blocked` is "any".
    unseen_blocks: Vec<FrameId>,
    /// When the page was last attached: an OOPIF adopted within the grace
    /// after it existed before us, and may be blocked by a dialog we never saw.
    attached_at: Option<Instant>,
    /// A person has the task (DESIGN "A person at the wheel"): no auto
    /// policy answers, no watchdog fires, and a prompt's text is not kept.
    person: bool,
}

impl State {
    /// A state with nothing attached.
    pub fn new(opts: Options) -> State {
        State {
            opts,
            out: Out::default(),
            targets: Default::default(),
            frames: Default::default(),
            dialogs: Default::default(),
            navs: Default::default(),
            console: Default::default(),
            timers: Default::default(),
            blocked: Default::default(),
            unseen_blocks: Vec::new(),
            attached_at: None,
            person: false,
        }
    }

    /// The settings.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The next output, if any. Drain after every input.
    pub fn poll_output(&mut self) -> Option<Output> {
        pop_output(&mut self.out.queue)
    }

    /// The page session, once attached.
    pub fn top_session(&self) -> Option<&SessionId> {
        self.targets.top_session()
    }

    /// The page's target id, once attached.
    pub fn top_target(&self) -> Option<&TargetId> {
        self.targets.top_target()
    }

    /// The top frame's URL as the browser told it otherwise than by a
    /// commit event (a load question's tree reply).
    pub(super) fn learn_top_url(&mut self, url: &str) {
        self.frames.set_top_url(url);
    }

    /// The loader of the last top document whose load was announced
    /// ([`Notice::PageLoaded`]).
    pub fn loaded_loader(&self) -> Option<&str> {
        self.frames.loaded_loader()
    }

    /// The top frame's URL (empty before the frame tree is known).
    pub fn top_url(&self) -> &ArcStr {
        self.frames.top_url()
    }

    /// Whether `session_id` is a live session we supervise (for routing checks).
    pub fn has_session(&self, session_id: &SessionId) -> bool {
        self.targets.has_session(session_id)
    }

    /// Which of this tab's sessions `session_id` is.
    pub(super) fn session_kind(&self, session_id: &SessionId) -> SessionKind {
        self.targets.kind_of(Some(session_id))
    }

    /// The live sessions (the page's, OOPIFs).
    pub fn session_ids(&self) -> impl Iterator<Item = &SessionId> {
        self.targets.session_ids()
    }

    /// Pending dialogs, oldest first.
    pub fn pending_dialogs(&self) -> impl ExactSizeIterator<Item = &Arc<PendingDialog>> + Clone {
        self.dialogs.views()
    }

    /// The pending dialogs whose answer or release awaits its reply. Once
    /// every command has been replied to, there is none.
    pub fn dialogs_in_flight(&self) -> impl Iterator<Item = &str> {
        self.dialogs.in_flight()
    }

    /// Whether the page is blocked by a dialog opened before we attached
    /// (in its top frame or in an OOPIF that was there when we attached).
    pub fn page_blocked(&self) -> bool {
        !self.unseen_blocks.is_empty()
    }

    /// The last navigation the agent's script or input asked for in this
    /// page, and whether it has its outcome.
    pub fn action_navigation(&self) -> Option<ActionNavigation> {
        self.navs.action()
    }

    /// A download began from `frame` (`Browser.downloadWillBegin`, which
    /// the tabs' coordinator hears): a navigation the agent asked for there
    /// became it.
    pub fn download_began(&mut self, frame: &FrameId) {
        self.navs.download_began(frame);
        if self.navs.action().is_some_and(|a| a.settled) {
            self.timers.cancel(&Timer::DownloadAfterStop);
        }
    }

    /// Whether `frame` is one of this page's known frames.
    pub fn has_frame(&self, frame: &FrameId) -> bool {
        self.frames.session_of(frame).is_some()
    }

    /// The page's title as last heard (`Target.targetInfoChanged`, or
    /// `Target.getTargetInfo` after a load).
    pub fn title(&self) -> &ArcStr {
        self.targets.title()
    }

    /// The last documents the navigation policy stopped in this tab, oldest first.
    pub fn blocked_navigations(
        &self,
    ) -> impl ExactSizeIterator<Item = &Arc<crate::supervisor::origins::BlockedNavigation>> + Clone
    {
        self.blocked.entries()
    }

    /// The last closed dialogs, oldest first.
    pub fn recent_dialogs(
        &self,
    ) -> impl ExactSizeIterator<Item = &Arc<crate::supervisor::snapshot::ClosedDialog>> + Clone
    {
        self.dialogs.recent()
    }

    /// The number the next dialog's id (`d-N`) gets. [`Tabs`] shares one
    /// sequence between its tabs, so ids stay unique per task.
    pub fn next_dialog_number(&self) -> u64 {
        self.dialogs.next_number()
    }

    /// Whether a watcher listens: without one, the notices only a watcher
    /// reads ([`Notice::is_for_watchers`]) are not built. On by default.
    pub fn set_watched(&mut self, watched: bool) {
        self.out.watched = watched;
    }

    /// A person takes the task (`true`) or hands it back (`false`). While
    /// a person has it, the auto policies and the watchdog wait (the person
    /// sees and answers the prompts), a new dialog is answered by nothing
    /// else, and what a person typed into a prompt is not recorded
    /// (`user_input: null`). At hand-back every pending dialog starts over
    /// as if it had just opened: an auto policy answers it now, a
    /// must_respond one gets a full `dialog_timeout` again.
    pub fn set_person_in_control(&mut self, on: bool, now: Now) {
        if self.person == on {
            return;
        }
        self.person = on;
        if !on {
            self.restart_policies(now);
        }
    }

    /// Whether a person has the task ([`State::set_person_in_control`]).
    pub fn person_in_control(&self) -> bool {
        self.person
    }

    /// Sets the number the next dialog's id gets (see [`State::next_dialog_number`]).
    pub fn set_next_dialog_number(&mut self, n: u64) {
        self.dialogs.set_next_number(n);
    }

    /// The page's renderer crashed: its dialogs are gone with it
    /// (`closed_by: "remote"`), and it blocks nothing any more. The
    /// sessions stay: Chromium keeps them, and a navigation reloads the tab.
    pub fn renderer_crashed(&mut self, now: Now) {
        self.unblock_page();
        self.cancel_enable_graces();
        self.close_all_dialogs(now);
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
        self.attach(target_id, session_id, url, title, false, now);
    }

    /// [`State::attach_page`]; `paused`: the page waits for the debugger
    /// (auto-attached paused), and is resumed once set up — with
    /// interception, once its `Fetch.enable` has replied, so its first
    /// document request is paused for the policy.
    fn attach(
        &mut self,
        target_id: TargetId,
        session_id: SessionId,
        url: &str,
        title: &str,
        paused: bool,
        now: Now,
    ) {
        let top = FrameId(target_id.0.clone());
        self.close_detached_challenges(now);
        // A top frame found blocked stays so until its new Page.enable
        // answers; an OOPIF's block is found again by its own grace.
        self.unseen_blocks.retain(|f| *f == top);
        if self.unseen_blocks.is_empty() {
            self.timers.cancel(&Timer::PageBlockedRelease);
        }
        self.attached_at = Some(now.instant);
        // A fresh tree (after a reconnect, the last one seen was kept until now).
        self.frames.reset(top, url, &session_id);
        self.navs.reset();
        let intercept = intercept(&self.opts);
        self.targets.attach_page(
            target_id,
            session_id,
            title,
            paused,
            &mut self.out,
            intercept,
        );
        self.timers.set(
            Timer::PageEnableGrace,
            now.instant.checked_add(self.opts.page_enable_grace),
        );
    }

    /// Forgets every session (the connection dropped), keeping dialogs,
    /// their watchdogs, recent dialogs, console errors and the last frame
    /// tree (none of it routable) for the snapshot. Call
    /// [`State::attach_page`] again once re-attached: it starts a fresh tree.
    /// The driver still owes a reply for every command in flight.
    pub fn connection_lost(&mut self) {
        self.targets.connection_lost();
        self.cancel_enable_graces();
        self.dialogs.connection_lost();
    }

    /// The agent sends a CDP command through the core, so that it goes out in
    /// wire order with the core's own commands and the core knows which
    /// navigations it causes. [`Output::AgentReply`] with `call` follows
    /// once its reply (or its error) is fed to [`State::on_reply`].
    pub fn send_agent(
        &mut self,
        call: u64,
        target: Target,
        method: &str,
        params: Value,
        timeout: Duration,
    ) {
        let own_frame = target.session().and_then(|s| self.targets.frame_of(s));
        self.navs
            .agent_sent(call, &target, method, &params, own_frame);
        self.out.push(Command::output(
            target,
            method,
            params,
            Purpose::Agent { call },
            Some(timeout),
            0,
        ));
    }

    /// Feeds one CDP event that arrived on `session_id` (`None`: browser level).
    pub fn on_event(&mut self, session_id: Option<&SessionId>, event: Event, now: Now) {
        let kind = self.targets.kind_of(session_id);
        self.on_event_of(session_id, kind, event, now);
    }

    /// As [`State::on_event`], with `session_id`'s [`Targets::kind_of`]
    /// already looked up (by [`tabs::Tabs`], which found the tab by it).
    pub(super) fn on_event_of(
        &mut self,
        session_id: Option<&SessionId>,
        kind: SessionKind,
        event: Event,
        now: Now,
    ) {
        debug_assert_eq!(kind, self.targets.kind_of(session_id));
        let known = session_id.filter(|_| kind != SessionKind::Unknown);
        let top = kind == SessionKind::Page;
        match event {
            // What asks the agent (or a policy) for an answer.
            Event::DialogOpening(d) => self.dialog_opened(session_id, d, None, None, None, now),
            Event::FileChooserOpened(c) => self.file_chooser_opened(session_id, c, now),
            Event::FetchAuthRequired(a) => self.auth_required(session_id, a, now),
            Event::FetchRequestPaused { params } => {
                self.on_request_paused(session_id, &params, now)
            }
            Event::DialogClosed(c) => self.on_dialog_closed(session_id, c, now),
            // The frame tree, from the sessions we know.
            Event::FrameAttached(a) => self.on_frame_attached(known, a),
            Event::FrameNavigated(n) => {
                if let Some(s) = known {
                    let top = Some(&n.frame.id) == self.frames.top();
                    self.on_frame_navigated(s, n.frame, now);
                    if top && n.navigation_type.as_deref() == Some("BackForwardCacheRestore") {
                        self.ask_every_frame_tree();
                    }
                }
            }
            Event::FrameDetached(d) => self.on_frame_detached(known, &d, now),
            Event::NavigatedWithinDocument(n) => self.on_navigated_within_document(known, &n),
            // Navigations and loads.
            Event::NavigationRequested(r) => self.on_navigation_requested(session_id, known, r),
            Event::FrameStoppedLoading(f) => self.on_frame_stopped_loading(known, &f, now),
            Event::LoadEventFired if top => self.ask_loaded_title(),
            Event::LoadEventFired => {}
            Event::Lifecycle(l) => self.on_lifecycle(known, top, l),
            // Targets and their sessions.
            Event::AttachedToTarget(a) => self.on_attached(session_id, a, now),
            Event::DetachedFromTarget(d) => self.on_session_gone(&d.session_id, now),
            Event::TargetInfoChanged(t) => {
                if Some(&t.target_info.target_id) == self.targets.top_target() {
                    self.targets.set_title(&t.target_info.title);
                }
            }
            Event::TargetDestroyed(t) | Event::TargetCrashed(t) => self.on_target_gone(&t, now),
            Event::InspectorDetached => {
                if let Some(s) = session_id.cloned() {
                    self.on_session_gone(&s, now);
                }
            }
            // A page's console speaks on its own session, never the browser's.
            Event::ConsoleApiCalled(c) if known.is_some() => {
                if let Some(error) = self.console.on_api_called(c, now) {
                    self.out.watch_notice(|| Notice::ConsoleError { error });
                }
            }
            Event::ExceptionThrown(e) if known.is_some() => {
                let error = self.console.on_exception(e, now);
                self.out.watch_notice(|| Notice::ConsoleError { error });
            }
            Event::ConsoleApiCalled(_) | Event::ExceptionThrown(_) => {}
            // A crash is the tabs' business (`Tabs`): the tab stays, marked.
            // Browser-level: the tabs' coordinator keeps the downloads.
            Event::DownloadWillBegin(_) | Event::DownloadProgress(_) => {}
            // An OOPIF's renderer crashed: its dialogs went with it (its
            // frame stays, a sad frame; no dialog-closed event comes). The
            // tab's own crash is the tabs' business (`Tabs`).
            Event::InspectorTargetCrashed if !top => {
                if let Some(session) = known {
                    self.close_dialogs_of_renderer(session, now);
                }
            }
            Event::InspectorTargetCrashed | Event::Unparsed { .. } | Event::Other { .. } => {}
        }
    }

    /// A top document back from the back-forward cache keeps its frames,
    /// but Chromium does not announce them again: every session is asked
    /// for its tree.
    fn ask_every_frame_tree(&mut self) {
        for s in self.targets.session_ids() {
            self.out.send(
                Target::Session(s.clone()),
                "Page.getFrameTree",
                serde_json::json!({}),
                Purpose::FrameTree,
            );
        }
    }

    /// A frame of a known session attached: it joins the tree under its parent.
    fn on_frame_attached(&mut self, known: Option<&SessionId>, a: FrameAttached) {
        if let Some(s) = known {
            self.frames.upsert(
                Cow::Owned(a.frame_id),
                Some(Cow::Owned(a.parent_frame_id)),
                None,
                s,
                false,
                &mut self.out,
            );
        }
    }

    /// A frame of a known session left the tree: its subtree goes, with the
    /// navigations and dialogs in it, the dialogs closed by whatever
    /// navigation took the frame away when one is in progress. "swap": the
    /// frame moved to another process; its OOPIF target takes it over.
    fn on_frame_detached(&mut self, known: Option<&SessionId>, d: &FrameDetached, now: Now) {
        if d.reason.as_deref() == Some("swap") || known.is_none() {
            return;
        }
        // The lineage only when it can matter: a detach flood walks none.
        let by = if self.navs.in_progress() {
            self.navs.closer(&self.frames.lineage(&d.frame_id))
        } else {
            None
        };
        let gone = self.frames.remove_subtree(&d.frame_id, &mut self.out);
        self.navs.frames_gone(&gone);
        self.close_dialogs_in(&gone, by, now);
    }

    /// A frame of a known session moved within its document (a fragment,
    /// `history.pushState`): its URL changes, and a followed navigation of
    /// it has its outcome.
    fn on_navigated_within_document(
        &mut self,
        known: Option<&SessionId>,
        n: &NavigatedWithinDocument,
    ) {
        if known.is_some() {
            self.frames.navigated_within_document(&n.frame_id, &n.url);
            self.navs.frame_moved(&n.frame_id);
        }
    }

    /// A navigation a renderer asked for, tracked when its session is known
    /// and its renderer not blocked by a dialog. It is expected to load a
    /// document in its frame unless it is a `javascript:` URL (it runs
    /// script and loads nothing to wait for) or opens elsewhere (a new tab
    /// or window).
    fn on_navigation_requested(
        &mut self,
        session_id: Option<&SessionId>,
        known: Option<&SessionId>,
        r: NavigationRequested,
    ) {
        let blocked = session_id.is_some_and(|s| self.renderer_blocked(s));
        if known.is_none() || blocked {
            return;
        }
        let script = r.url.as_deref().is_some_and(|u| {
            u.get(..11)
                .is_some_and(|p| p.eq_ignore_ascii_case("javascript:"))
        });
        let in_frame = !script && r.disposition.as_deref().is_none_or(|d| d == "currentTab");
        self.navs
            .requested(session_id, &r.frame_id, r.loader_id, in_frame);
    }

    /// A frame of a known session stopped loading. A followed navigation of
    /// it with no document yet may still become a download:
    /// [`Timer::DownloadAfterStop`] waits [`navigations::DOWNLOAD_AFTER_STOP`]
    /// for it.
    fn on_frame_stopped_loading(
        &mut self,
        known: Option<&SessionId>,
        f: &FrameStoppedLoading,
        now: Now,
    ) {
        if known.is_some() && self.navs.frame_stopped(&f.frame_id) {
            let at = now.instant.checked_add(navigations::DOWNLOAD_AFTER_STOP);
            self.timers.set(Timer::DownloadAfterStop, at);
        }
    }

    /// The top document's load event: Chromium sends no targetInfoChanged
    /// for a new document title, so ask for it, and announce the load with
    /// it when the reply comes ([`Purpose::PageLoaded`]).
    fn ask_loaded_title(&mut self) {
        let target = self.targets.top_target().map(|t| t.0.clone());
        let loader_id = self.frames.top_loader().cloned();
        self.out.send(
            Target::Browser,
            "Target.getTargetInfo",
            serde_json::json!({ "targetId": target }),
            Purpose::PageLoaded { loader_id },
        );
    }

    /// A lifecycle event: the navigations of a known session hear it; on
    /// the top frame (`top`: on the page's own session), its loader becomes
    /// the top's, and a `load` of a loader not announced yet is announced —
    /// a load event for a loader is proof that its document loaded,
    /// whatever frameNavigated said (or did not say).
    fn on_lifecycle(&mut self, known: Option<&SessionId>, top: bool, l: LifecycleEvent) {
        if known.is_some() {
            self.navs.lifecycle(&l.frame_id, &l.name);
        }
        if !(top && Some(&l.frame_id) == self.frames.top()) {
            return;
        }
        if l.name == "load" && self.frames.load_is_news(Some(&l.loader_id)) {
            self.out.notice(Notice::PageLoaded {
                target_id: self.targets.top_target().map(|t| t.0.clone()),
                url: self.frames.top_url().to_string(),
                loader_id: Some(l.loader_id.clone()),
            });
        }
        self.frames.set_top_loader(&l.frame_id, l.loader_id);
    }

    /// The page's own target was destroyed or crashed: its session is gone.
    fn on_target_gone(&mut self, t: &TargetGone, now: Now) {
        if Some(&t.target_id) == self.targets.top_target()
            && let Some(s) = self.targets.top_session().cloned()
        {
            self.on_session_gone(&s, now);
        }
    }

    fn on_attached(
        &mut self,
        parent: Option<&SessionId>,
        a: crate::cdp::protocol::AttachedToTarget,
        now: Now,
    ) {
        let intercept = intercept(&self.opts);
        match self.targets.adopt(parent, &a, intercept, &mut self.out) {
            Adopted::Ignored => {}
            Adopted::Released { frame } => {
                if frame {
                    self.frames.mark_dropped();
                }
            }
            Adopted::Kept { oopif: false } => {}
            Adopted::Kept { oopif: true } => {
                let frame_id = FrameId(a.target_info.target_id.0.clone());
                // Its parent: what the target itself says (an OOPIF nested in a
                // same-process iframe gets no frameAttached for a client
                // attaching late), else what a frameAttached said, else the
                // parent session's main frame.
                let guess = parent.and_then(|p| self.targets.frame_of(p));
                let parent_frame = a.target_info.parent_frame_id.clone().or(guess);
                self.frames.upsert(
                    Cow::Borrowed(&frame_id),
                    parent_frame.map(Cow::Owned),
                    Some(&a.target_info.url),
                    &a.session_id,
                    true,
                    &mut self.out,
                );
                if let Some(p) = &a.target_info.parent_frame_id {
                    self.frames.set_parent(&frame_id, p);
                }
                // An OOPIF that was there when we attached may show a dialog
                // we never saw: Chromium replays none, and its session then
                // answers nothing. One that appears later opens its dialogs
                // in front of us; a busy renderer must not be taken for a
                // blocked one (an auto policy would navigate the page).
                let grace = self.opts.page_enable_grace;
                if self
                    .attached_at
                    .is_some_and(|at| now.instant.saturating_duration_since(at) < grace)
                {
                    self.timers.set(
                        Timer::OopifEnableGrace(a.session_id.clone()),
                        now.instant.checked_add(grace),
                    );
                }
            }
        }
    }

    /// The page's target is gone (detached, or not there after a
    /// reconnect): its frames go, and its dialogs close `remote`.
    /// Ends with [`Notice::PageGone`] saying `reason`.
    pub fn page_gone(&mut self, reason: String, now: Now) {
        self.unblock_page();
        self.cancel_enable_graces();
        for f in self.frames.clear() {
            self.out
                .watch_notice(|| Notice::FrameDetached { frame_id: f.0 });
        }
        self.close_all_dialogs(now);
        self.out.notice(Notice::PageGone { reason });
    }

    fn on_session_gone(&mut self, session: &SessionId, now: Now) {
        let Some((was_top, target)) = self.targets.remove(session) else {
            return;
        };
        if was_top {
            self.page_gone(format!("the page's target {target} detached"), now);
            return;
        }
        // An OOPIF's session: its frames (those it still reports) go with
        // it, and a block we found in it.
        self.timers
            .cancel(&Timer::OopifEnableGrace(session.clone()));
        self.unblock_frame(&FrameId(target.0.clone()));
        for f in self.frames.of_session(session) {
            let gone = self.frames.remove_subtree(&f, &mut self.out);
            self.close_dialogs_in(&gone, None, now);
        }
    }

    fn on_frame_navigated(
        &mut self,
        session: &SessionId,
        frame: crate::cdp::protocol::FrameInfo,
        now: Now,
    ) {
        let own_target = self.targets.is_frame_of(session, &frame.id);
        // Who navigates it (or an ancestor), read before the commit ends it.
        let by = if self.navs.is_empty() {
            None
        } else {
            let lineage = self.frames.lineage(&frame.id);
            let ancestors_by = self.navs.closer(&lineage[1..]);
            let own_by = self.navs.committed(&frame.id, frame.loader_id.as_ref());
            own_by.or(ancestors_by)
        };
        let is_top = Some(&frame.id) == self.frames.top();
        if frame.unreachable_url.is_none() {
            self.check_commit(session, &frame.id, &frame.url, now);
        }
        let dropped = self
            .frames
            .committed(session, own_target, &frame, &mut self.out);
        self.navs.frame_committed(&frame.id);
        self.navs.frames_gone(&dropped);
        // A new document ends every dialog its old document (and the frames
        // that went with it) showed.
        if self.dialogs.has_pending() {
            let mut ended = dropped;
            ended.push(frame.id.clone());
            self.close_dialogs_in(&ended, by, now);
        }
        if is_top {
            self.dialogs.top_navigated();
            if self.page_blocked() {
                self.unblock_page();
            }
        }
    }

    /// Feeds the reply to a command this state machine asked for (see the
    /// driver contract in the module doc).
    pub fn on_reply(
        &mut self,
        target: &Target,
        purpose: Purpose,
        result: Result<Value, ReplyError>,
        now: Now,
    ) {
        match purpose {
            Purpose::Setup
            | Purpose::TabsAutoAttach
            | Purpose::NewTab
            | Purpose::LoadTree { .. }
            | Purpose::LoadState { .. } => {}
            Purpose::ResumeWhenIntercepted => {
                if let Some(session) = target.session() {
                    targets::Targets::resume(session, &mut self.out);
                }
            }
            Purpose::Release => self.release_replied(result, now),
            Purpose::PageEnable => {
                // The session answers: no dialog blocks its renderer.
                if let (Ok(_), Some(s)) = (&result, target.session())
                    && let Some(frame) = self.targets.frame_of(s)
                {
                    if self.targets.is_top(Some(s)) {
                        self.timers.cancel(&Timer::PageEnableGrace);
                    } else {
                        self.timers.cancel(&Timer::OopifEnableGrace(s.clone()));
                    }
                    self.unblock_frame(&frame);
                    self.recheck_carried(s, true, now);
                }
            }
            Purpose::FrameTree => {
                if let (Some(s), Ok(v)) = (target.session(), result)
                    && self.targets.has_session(s)
                    && let Some(own) = self.targets.frame_of(s)
                    && let Some(tree) = v
                        .get("frameTree")
                        .and_then(|t| serde_json::from_value::<FrameTree>(t.clone()).ok())
                {
                    self.frames.on_tree(s, &own, tree, &mut self.out);
                }
            }
            Purpose::Answer { dialog_id } => self.answer_replied(&dialog_id, result, now),
            Purpose::PageLoaded { loader_id } => {
                let info = result.ok();
                let field = |k: &str| {
                    info.as_ref()
                        .and_then(|v| v.pointer(&format!("/targetInfo/{k}")))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                if let Some(title) = field("title") {
                    self.targets.set_title(&title);
                }
                // The page's URL as the browser has it, in case its commit
                // event never reached us (a new tab's first navigation).
                if let Some(url) = field("url") {
                    self.frames.set_top_url(&url);
                }
                if self.frames.load_is_news(loader_id.as_ref()) {
                    let url = self.frames.top_url().to_string();
                    let target_id = self.targets.top_target().map(|t| t.0.clone());
                    self.out.notice(Notice::PageLoaded {
                        target_id,
                        url,
                        loader_id,
                    });
                }
            }
            Purpose::Agent { call } => {
                self.navs
                    .agent_replied(call, result.as_ref().map_err(|_| ()));
                self.out.push(Output::AgentReply { call, result });
            }
        }
    }

    /// When [`State::handle_timeout`] should next be called. A dialog whose
    /// answer or release is in flight waits for that reply instead.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.earliest(|t| self.live(t))
    }

    fn live(&self, t: &Timer) -> bool {
        timer_live(t, &self.dialogs, self.person)
    }

    /// Fires what is due at `now`, one [`Timer`] at a time; a timer armed
    /// for `now` by another (a blocked page under an auto policy is
    /// released at once) fires in the same call.
    pub fn handle_timeout(&mut self, now: Now) {
        // Each round disarms what it fires; a handler arms at most the next
        // kind of timer, so a few rounds reach a fixed point.
        for _ in 0..4 {
            let due = {
                let (dialogs, person) = (&self.dialogs, self.person);
                self.timers
                    .take_due(now.instant, |t| timer_live(t, dialogs, person))
            };
            if due.is_empty() {
                return;
            }
            for t in due {
                match t {
                    Timer::Dialog(id) => self.dialog_due(&id, now),
                    Timer::PageEnableGrace => {
                        if let Some(s) = self.targets.top_session().cloned() {
                            self.page_enable_overdue(&s, now);
                        }
                    }
                    Timer::OopifEnableGrace(s) => self.page_enable_overdue(&s, now),
                    Timer::DownloadAfterStop => self.navs.no_download(),
                    Timer::PageBlockedRelease => {
                        // The agent's own navigation of the page frees it as
                        // ours would, and ours would abort it (a renderer only
                        // slow to answer Page.enable looks blocked): look again
                        // once it has ended.
                        if self
                            .frames
                            .top()
                            .is_some_and(|t| self.navs.agent_navigating(t))
                        {
                            let again = now.instant.checked_add(PAGE_ENABLE_GRACE);
                            self.timers.set(Timer::PageBlockedRelease, again);
                            continue;
                        }
                        let by = match self.opts.policy.as_uniform() {
                            Some(DialogPolicy::AutoDismiss | DialogPolicy::AutoAccept) => {
                                ClosedBy::AutoPolicy
                            }
                            _ => ClosedBy::Watchdog,
                        };
                        self.release(&[], by);
                    }
                }
            }
        }
    }

    /// Where a CDP call for `frame_id` must go: the page session for the top
    /// frame, the OOPIF's own session for an OOPIF, an error otherwise.
    pub fn route_frame(&self, frame_id: &str) -> Result<SessionId, RouteError> {
        self.frames.route(frame_id, &self.targets)
    }

    /// Builds the snapshot the agent reads. It shares its entries with this
    /// state (see [`crate::supervisor::snapshot`]); `&mut` because the frame
    /// tree, built once per change, is kept for the next one.
    pub fn snapshot(&mut self) -> Snapshot {
        Snapshot {
            pending_dialogs: self.dialogs.views().cloned().collect(),
            recent_dialogs: self.dialogs.recent().cloned().collect(),
            blocked_navigations: self.blocked.entries().cloned().collect(),
            ..self.page_snapshot()
        }
    }

    /// The snapshot of this page alone: its URL, title, frames, console and
    /// `page_blocked`; the lists [`Tabs`] gathers from every tab (dialogs,
    /// blocked navigations) and the tabs are left empty.
    pub(super) fn page_snapshot(&mut self) -> Snapshot {
        Snapshot {
            url: self.frames.top_url().clone(),
            title: self.targets.title().clone(),
            frame_tree: self.frames.view(&self.targets),
            console_errors: self.console.entries(),
            page_blocked: self.page_blocked(),
            blocked_frame_ids: self.unseen_blocks.iter().map(|f| f.0.clone()).collect(),
            pending_dialogs: Default::default(),
            recent_dialogs: Default::default(),
            blocked_navigations: Default::default(),
            connection: Default::default(),
            reconnects: 0,
            tabs: Default::default(),
            tabs_truncated: false,
            downloads: Default::default(),
        }
    }
}

/// `s` in at most `max_chars` characters: cut, with `…` as the last one,
/// when it is longer.
pub(crate) fn ellipsize(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_owned();
    }
    let mut c: String = s.chars().take(max_chars.saturating_sub(1)).collect();
    c.push('…');
    c
}

fn cut(s: String, max_chars: usize) -> String {
    if s.len() <= max_chars {
        // No more characters than bytes: nothing to cut, nothing to count.
        return s;
    }
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => s[..i].to_owned(),
        None => s,
    }
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
