//! What goes in and out of the core: time ([`Now`]), settings
//! ([`Options`]), the commands it asks for ([`Command`], [`Target`],
//! [`Purpose`]), their replies ([`ReplyError`]) and what it yields
//! ([`Output`], [`Notice`]). No I/O type of the connection appears here: the
//! driver converts.

use crate::cdp::protocol::SessionId;
use crate::supervisor::origins::{BlockedNavigation, NavigationPolicy};
use crate::supervisor::policy::{DialogPolicies, DialogPolicy};
use crate::supervisor::snapshot::{ClosedDialog, ConsoleError, PendingDialog};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::dialogs::CloseCause;
use super::{DEFAULT_DIALOG_TIMEOUT, DialogError, PAGE_ENABLE_GRACE};

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
    /// What to do when a dialog opens, per type (config `browser.dialog_policy`).
    pub policy: DialogPolicies,
    /// The must_respond watchdog (config `browser.dialog_timeout_s`).
    pub dialog_timeout: Duration,
    /// See [`PAGE_ENABLE_GRACE`].
    pub page_enable_grace: Duration,
    /// Inject the dialog bridge ([`crate::supervisor::bridge`]) on every
    /// session, for CDP proxies that answer native dialogs themselves.
    pub dialog_bridge: bool,
    /// Tabs supervised per task, the first one included (config
    /// `browser.max_tabs`): pages opened past it are resumed and let go.
    pub max_tabs: usize,
    /// The bridge's path and secret (random per supervisor).
    pub bridge_key: crate::supervisor::bridge::BridgeKey,
    /// Which documents may load (config `browser.allowed_origins`,
    /// `blocked_origins`, `allow_file_urls`), enforced on every session.
    pub navigation: NavigationPolicy,
    /// Answers to HTTP authentication challenges, per origin (config
    /// `browser.credentials`): given once per challenged request, whatever
    /// the policy.
    pub credentials: crate::supervisor::credentials::Credentials,
    /// Where downloads go and their bound (config `browser.downloads`).
    pub downloads: super::downloads::DownloadOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: DialogPolicies::uniform(DialogPolicy::MustRespond),
            dialog_timeout: DEFAULT_DIALOG_TIMEOUT,
            page_enable_grace: PAGE_ENABLE_GRACE,
            dialog_bridge: false,
            max_tabs: super::MAX_TABS_DEFAULT,
            bridge_key: crate::supervisor::bridge::BridgeKey::random(),
            navigation: NavigationPolicy::default(),
            credentials: Default::default(),
            downloads: Default::default(),
        }
    }
}

/// Where a command goes: the browser-level session or a flatten session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The browser itself (no `sessionId` on the wire).
    Browser,
    /// A page's or an OOPIF's session.
    Session(SessionId),
}

impl Target {
    /// The session, `None` for [`Target::Browser`].
    pub fn session(&self) -> Option<&SessionId> {
        match self {
            Target::Browser => None,
            Target::Session(s) => Some(s),
        }
    }
}

impl From<Option<SessionId>> for Target {
    fn from(s: Option<SessionId>) -> Target {
        s.map_or(Target::Browser, Target::Session)
    }
}

impl From<Option<&SessionId>> for Target {
    fn from(s: Option<&SessionId>) -> Target {
        s.cloned().into()
    }
}

/// Why a command the core asked for has no result. The driver converts the
/// connection's errors into these; see the contract in [`super`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ReplyError {
    /// Chromium answered with a CDP error object.
    #[error("{message} (CDP error {code})")]
    Protocol {
        /// The CDP error code (`-32602` when no dialog is showing).
        code: i64,
        /// Chromium's message.
        message: String,
        /// The error's `data`, when Chromium gave one.
        data: Option<String>,
    },
    /// No reply came within the command's deadline.
    #[error("no reply within {}ms", after.as_millis())]
    Timeout {
        /// The deadline.
        after: Duration,
    },
    /// The reply was larger than the command may return (an agent's,
    /// [`crate::supervisor::state::AGENT_REPLY_MAX_BYTES`]): dropped unread.
    #[error("the reply is {bytes} bytes, over the {max} bytes this command may return")]
    TooLarge {
        /// The reply's size, in bytes.
        bytes: usize,
        /// The bound it passed.
        max: usize,
    },
    /// The command never reached Chromium (no connection when it was due),
    /// or the connection dropped before its reply.
    #[error("the CDP connection dropped before the reply ({reason})")]
    Lost {
        /// Why, in words.
        reason: String,
    },
}

impl ReplyError {
    /// Whether Chromium itself refused with `code`.
    pub fn is_code(&self, want: i64) -> bool {
        matches!(self, ReplyError::Protocol { code, .. } if *code == want)
    }

    /// Whether the command may never have reached Chromium.
    pub fn is_lost(&self) -> bool {
        matches!(self, ReplyError::Lost { .. })
    }
}

/// Why the state machine asked for a command: tells [`super::State::on_reply`]
/// what the reply means.
#[derive(Clone, Debug, PartialEq)]
pub enum Purpose {
    /// Domain enables, auto-attach, resume: only a failure is worth a log line.
    Setup,
    /// `Page.enable` on a page or OOPIF session: its reply proves that no
    /// dialog blocks the session's renderer.
    PageEnable,
    /// `Page.getFrameTree` on a session.
    FrameTree,
    /// `Page.handleJavaScriptDialog` (or the bridge's fulfil) for dialog `dialog_id`.
    Answer {
        /// The dialog answered (`d-N`).
        dialog_id: String,
    },
    /// `Page.navigate` of the top frame to release a page a dialog (or an
    /// unseen one: `page_blocked`) keeps blocked.
    Release,
    /// `Target.getTargetInfo` of the page after its load event: the title,
    /// then [`Notice::PageLoaded`] for the document of `loader_id`.
    PageLoaded {
        /// The loader of the document whose load event fired, when known.
        loader_id: Option<String>,
    },
    /// Browser-level `Target.setAutoAttach` of [`super::Tabs`]: every page
    /// that exists is reported before its reply.
    TabsAutoAttach,
    /// [`super::Tabs`]' own `Target.createTarget` (the last tab closed).
    NewTab,
    /// `Fetch.enable` on a paused target being set up: it is resumed once
    /// interception is in effect (failed too: a page must not stay paused).
    ResumeWhenIntercepted,

    /// `Page.getFrameTree` asking whether the top frame shows the
    /// document a caller waits for ([`super::Tabs::await_load`]).
    LoadTree {
        /// The load asked about.
        load: u64,
    },
    /// `Runtime.evaluate("document.readyState")` asking whether that
    /// document is fully loaded.
    LoadState {
        /// The load asked about.
        load: u64,
    },

    /// A command of the agent's ([`super::State::send_agent`]): its reply
    /// goes back as [`Output::AgentReply`] with this `call`.
    Agent {
        /// The number the driver gave the call.
        call: u64,
    },
}

/// A CDP command the driver must send (and never wait for in its event loop).
/// Every one gets exactly one [`super::State::on_reply`].
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// Where it goes.
    pub target: Target,
    /// The CDP method, e.g. `Page.handleJavaScriptDialog`.
    pub method: String,
    /// The command's `params` object.
    pub params: Value,
    /// What the reply means; hand it back to [`super::State::on_reply`].
    pub purpose: Purpose,
    /// Its own deadline (an agent's call); `None`: the driver's default.
    pub timeout: Option<Duration>,
    /// Which tab's machine asked for it (set by [`super::Tabs`]); hand it
    /// back with the reply.
    pub tab: u32,
}

impl Command {
    /// The output that sends it: from tab machine `tab`, with `timeout`
    /// (`None`: the driver's default deadline; an agent's call has its own).
    pub(super) fn output(
        target: Target,
        method: &str,
        params: Value,
        purpose: Purpose,
        timeout: Option<Duration>,
        tab: u32,
    ) -> Output {
        Output::Send(Box::new(Command {
            target,
            method: method.to_owned(),
            params,
            purpose,
            timeout,
            tab,
        }))
    }
}

/// Something a live watcher (`watch`) wants to see. Serialized with an `event` tag.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Notice {
    /// A dialog opened (`Page.javascriptDialogOpening`, or the dialog bridge).
    DialogOpened {
        /// The dialog, as `pending_dialogs[]` shows it.
        dialog: Arc<PendingDialog>,
    },
    /// A dialog closed, by whoever: see its `closed_by`.
    DialogClosed {
        /// The dialog, as `recent_dialogs[]` shows it.
        dialog: Arc<ClosedDialog>,
        /// Why it closed, which decided its `closed_by` (for the log; not
        /// serialized).
        #[serde(skip)]
        cause: CloseCause,
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
    /// its document was replaced, or the page's session went).
    FrameDetached {
        /// The frame's id.
        frame_id: String,
    },
    /// A `console.error` / `console.assert` call (`Runtime.consoleAPICalled`)
    /// or an uncaught exception (`Runtime.exceptionThrown`).
    ConsoleError {
        /// The entry, as `console_errors[]` shows it.
        error: Arc<ConsoleError>,
    },
    /// The page was blocked by a dialog opened before we attached.
    PageBlocked,
    /// The top frame finished loading (`Page.loadEventFired` on the page session).
    PageLoaded {
        /// The tab (its target id) whose top frame loaded.
        #[serde(skip_serializing_if = "Option::is_none")]
        target_id: Option<String>,
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
    /// A download began (`Browser.downloadWillBegin`).
    DownloadStarted {
        /// As `downloads[]` shows it.
        download: Arc<super::downloads::DownloadView>,
    },
    /// A download completed or was canceled (`Browser.downloadProgress`).
    DownloadDone {
        /// As `downloads[]` shows it (before its file is renamed).
        download: Arc<super::downloads::DownloadView>,
    },
    /// The navigation policy stopped a document from loading (a failed
    /// `Fetch.requestPaused`, or a commit released to `about:blank`).
    NavigationBlocked {
        /// As `blocked_navigations[]` shows it.
        navigation: Arc<BlockedNavigation>,
    },
    /// The supervised page's session is gone (tab closed or crashed).
    /// [`super::Tabs`] turns it into [`Notice::TabClosed`].
    PageGone {
        /// Which target detached, in words.
        reason: String,
    },
    /// A tab became supervised: opened by a supervised tab (`window.open`,
    /// `target=_blank`; `Target.attachedToTarget` with `openerId`) or by the
    /// agent (`Target.createTarget`).
    TabOpened {
        /// The new tab's target id.
        target_id: String,
        /// Its URL when it opened (often `""`: not committed yet).
        url: String,
        /// The tab that opened it, when one did.
        #[serde(skip_serializing_if = "Option::is_none")]
        opener_target_id: Option<String>,
    },
    /// A supervised tab closed (`Target.targetDestroyed`, its session detached).
    TabClosed {
        /// The tab's target id.
        target_id: String,
        /// The tab that is current now, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        current_target_id: Option<String>,
    },
    /// A supervised tab's renderer crashed (`Inspector.targetCrashed`,
    /// `Target.targetCrashed`).
    TabCrashed {
        /// The tab's target id.
        target_id: String,
    },
}

impl Notice {
    /// Whether only a live watcher reads this notice: no event-log kind
    /// (`browser_wait`, resource updates) and nothing the driver acts on.
    /// The state machine builds these only while a watcher listens
    /// ([`super::Tabs::set_watched`]): a flood of frames or console errors
    /// nobody watches queues no notice.
    pub fn is_for_watchers(&self) -> bool {
        matches!(
            self,
            Notice::FrameAttached { .. }
                | Notice::FrameDetached { .. }
                | Notice::ConsoleError { .. }
                | Notice::NavigationBlocked { .. }
        )
    }
}

/// What [`super::State::poll_output`] yields.
///
/// The large, rare payloads (a command, a closed dialog) are boxed: every
/// output is moved several times on its way to the driver, and a flood of
/// notices should move 88 bytes each, not 256.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A CDP command to send now; feed its reply to [`super::State::on_reply`].
    Send(Box<Command>),
    /// Something for live watchers.
    Notice(Notice),
    /// The agent's answer `ticket` (from [`super::State::answer_dialog`]) finished.
    AnswerDone {
        /// The ticket given to [`super::State::answer_dialog`].
        ticket: u64,
        /// The closed dialog, or why the answer failed.
        result: Box<Result<ClosedDialog, DialogError>>,
    },
    /// The agent's command `call` (from [`super::State::send_agent`]) finished.
    AgentReply {
        /// The call given to [`super::State::send_agent`].
        call: u64,
        /// Chromium's result, or why there is none.
        result: Result<Value, ReplyError>,
    },
    /// The document load `load` waited for ([`super::Tabs::await_load`])
    /// is fully loaded.
    Loaded {
        /// The id [`super::Tabs::await_load`] gave.
        load: u64,
    },
    /// Download `id` completed at `from` (Chromium's guid name): give the
    /// file `name` (made unique in its directory), then report the new
    /// path with [`super::Tabs::download_saved`].
    SaveDownload {
        /// The download's id (`dl-N`).
        id: String,
        /// Where Chromium wrote it.
        from: String,
        /// The safe form of its suggested name.
        name: String,
    },
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_no_bigger_than_a_notice() {
        // Boxed commands and closed dialogs keep it so (256 bytes inline).
        assert!(size_of::<Output>() <= size_of::<Notice>() + 8);
    }
}
