//! The driver: one tokio task per supervisor that owns the connection and the
//! [`State`], feeds it events, replies and time, sends what it asks for, and
//! publishes an immutable snapshot after every change.
//!
//! The event loop never awaits a command's reply: replies are futures polled
//! beside the event stream, so a command Chromium never answers cannot delay
//! event handling, dialog answers or the watchdog.
//!
//! It keeps the core's contract ([`crate::supervisor::state`]): every
//! command the core emits gets exactly one reply back — Chromium's (in wire
//! order with the events, [`Connection::send_in_order`]), or
//! [`ReplyError::Lost`] fed in at once when there is no connection to send
//! it on, and for every command still in flight when the connection drops.
//! The agent's own commands (`Supervisor::send_agent`) take the same path,
//! so the core sees them in order with the events they cause.
//!
//! [`Supervisor`] is the handle the rest of the crate holds; its operations
//! live beside it:
//! - `run`: the loop (`Driver`), the only owner of the core;
//! - `attach`: the start (connect, pick the tab, wait for the attach) and
//!   the endpoint resolution a reconnect repeats;
//! - `calls`: the agent's calls — dialog answers, raw CDP routed to a tab or
//!   an OOPIF, and the race between a call and the dialogs that interrupt it;
//! - `tabs`: select, open, close, list tabs, and navigate with its outcome.

use crate::browser::LocalChromium;
use crate::cdp::connection::{
    CommandError, ConnectError, Connection, DEFAULT_COMMAND_TIMEOUT, EventStream, Incoming,
    StreamMark,
};
use crate::cdp::endpoint::{
    CdpHeaders, EndpointError, PAGE_LEVEL_NOTE, is_page_level_path, pages_in_front_order,
    redact_url, resolve_ws_url_with,
};
use crate::cdp::message::RawEvent;
use crate::cdp::protocol::{Event, SessionId, TargetId, TargetInfo};
use crate::supervisor::calls::{CompletedCall, InterruptedCalls};
use crate::supervisor::events::{EventKind, EventLog};
use crate::supervisor::origins::NavigationPolicy;
use crate::supervisor::policy::{DialogPolicies, DialogPolicy};
use crate::supervisor::snapshot::{
    ClosedBy, ClosedDialog, ConnectionStatus, List, PendingDialog, Snapshot,
};
use crate::supervisor::state::{
    self, DialogError, DialogRequest, Notice, Now, Output, Purpose, ReplyError, RouteError, Tabs,
    Target,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

mod attach;
mod calls;
mod connect;
mod run;
mod tabs;

use connect::is_page_level;

/// spec ("Lifecycle"): consecutive failed reconnects after which a supervisor gives up.
pub const MAX_POST_ATTACH_RECONNECT_FAILURES: u32 = 5;
/// The first reconnect waits this long; each failure doubles it.
pub const RECONNECT_BACKOFF_START: Duration = Duration::from_millis(500);
/// spec: reconnect backoff is capped at 10 s.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(10);
/// The deadline of the whole attach (connect, pick the page, frame tree).
pub const DEFAULT_ATTACH_TIMEOUT: Duration = Duration::from_secs(15);
pub use crate::supervisor::state::calls::BLOCKED_CALL_GRACE;
/// While reconnecting to a Chromium we launched, how often we check that
/// it is still alive.
const LOCAL_EXIT_CHECK: Duration = Duration::from_millis(200);

/// The longest [`Supervisor::caught_up`] waits for the driver to take the
/// events before a reply (a flood it works through).
const CAUGHT_UP_MAX: Duration = Duration::from_secs(5);

/// Chromium's `Page.close` error for a page between documents (Chromium 156).
const NOT_ATTACHED: &str = "Not attached to an active page";
/// Events handled before the snapshot is republished, when they arrive in a burst.
const EVENT_BURST: usize = 256;
/// Capacity of the notice channel for live watchers (a slow watcher skips, never blocks).
const NOTICE_CAPACITY: usize = 1024;

/// How a supervisor behaves.
#[derive(Clone, Debug)]
pub struct SupervisorOptions {
    /// `browser.dialog_policy`, per dialog type.
    pub policy: DialogPolicies,
    /// `browser.dialog_timeout_s`: the must_respond watchdog.
    pub dialog_timeout: Duration,
    /// `browser.target_id`: the page to supervise; `None` → the tab in front (`/json/list` order: the page most recently created or activated), else a new one.
    pub target_id: Option<String>,
    /// The default deadline of one CDP command.
    pub command_timeout: Duration,
    /// The deadline of the whole attach.
    pub attach_timeout: Duration,
    /// Consecutive failed reconnects before giving up.
    pub max_reconnect_failures: u32,
    /// Catch dialogs through the dialog bridge too ([`crate::supervisor::bridge`]):
    /// for CDP proxies that answer native dialogs before we can (Browserbase).
    pub dialog_bridge: bool,
    /// The wait before the first reconnect; each failure doubles it, up to
    /// [`RECONNECT_BACKOFF_MAX`]. Tests shorten it.
    pub reconnect_backoff_start: Duration,
    /// `browser.max_tabs`: tabs supervised per task, the first one included.
    pub max_tabs: usize,
    /// `browser.cdp_headers`: sent on `/json/version` and on every
    /// WebSocket handshake (reconnects too).
    pub cdp_headers: CdpHeaders,
    /// Which documents may load (`browser.allowed_origins`,
    /// `blocked_origins`, `allow_file_urls`), enforced in the browser on
    /// every supervised session ([`crate::supervisor::origins`]).
    pub navigation: NavigationPolicy,
    /// `browser.credentials`: HTTP authentication answered per origin.
    pub credentials: crate::supervisor::credentials::Credentials,
    /// `browser.downloads`: the directory (`None`: a temporary one of this
    /// supervisor's for a Chromium it launched, removed when it stops;
    /// the browser's own choice for another) and `max_bytes`.
    pub downloads: state::downloads::DownloadOptions,
    /// `browser.isolation: context`: the task lives in a browser context
    /// of its own in a shared browser ([`ContextOptions`]); `None`: the
    /// browser's default context, as before.
    pub context: Option<ContextOptions>,
    /// The number the first dialog's id (`d-N`) gets: 1 for a new task; a
    /// supervisor that takes over a task from another (a rebind, a
    /// disconnect, one that gave up) goes on from the last one's, so that
    /// an id never names two dialogs of a task
    /// ([`crate::supervisor::registry::Registry`] keeps count).
    pub first_dialog_number: u64,
}

/// A task in a browser context of its own (DESIGN "Many tasks, one
/// browser"): the supervisor creates it on its own connection
/// (`Target.createBrowserContext{disposeOnDetach:true}`, so it goes with
/// the connection), opens its tabs in it, attaches to its targets only,
/// and after a reconnect creates a new one.
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// `browser.proxy`: the context's `proxyServer`.
    pub proxy: Option<String>,
    /// The shared local browser to (re)connect to, with this task's hold
    /// on it; `None`: the `cdp_url`'s browser.
    pub browser: Option<Arc<crate::browser::shared::BrowserLease>>,
}

impl Default for SupervisorOptions {
    fn default() -> Self {
        SupervisorOptions {
            policy: DialogPolicies::uniform(DialogPolicy::MustRespond),
            dialog_timeout: state::DEFAULT_DIALOG_TIMEOUT,
            target_id: None,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            attach_timeout: DEFAULT_ATTACH_TIMEOUT,
            max_reconnect_failures: MAX_POST_ATTACH_RECONNECT_FAILURES,
            dialog_bridge: false,
            reconnect_backoff_start: RECONNECT_BACKOFF_START,
            max_tabs: state::MAX_TABS_DEFAULT,
            cdp_headers: CdpHeaders::default(),
            navigation: NavigationPolicy::default(),
            credentials: Default::default(),
            downloads: Default::default(),
            context: None,
            first_dialog_number: 1,
        }
    }
}

/// Why a supervisor could not start. Returned at once, before any retry.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The CDP URL could not be resolved to a WebSocket URL.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The WebSocket could not be opened.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// [`SupervisorOptions::target_id`] names no target (`Target.getTargets`).
    #[error("no target {target_id:?} in the browser; page targets: {}", if pages.is_empty() { "none".to_owned() } else { pages.join(", ") })]
    NoSuchTarget {
        /// The target id asked for.
        target_id: String,
        /// The browser's page targets, each as `<target_id> (<url>)`.
        pages: Vec<String>,
    },
    /// [`SupervisorOptions::target_id`] names a target that is not a tab
    /// (an OOPIF's `iframe`, a worker, the browser's own UI): a dialog in it
    /// would be reported to a page session the supervisor does not hold.
    #[error("target {target_id:?} is {target_type:?}, not a tab (page); page targets: {}", if pages.is_empty() { "none".to_owned() } else { pages.join(", ") })]
    NotAPage {
        /// The target id asked for.
        target_id: String,
        /// Its `targetInfo.type` (`iframe`, `service_worker`, `browser_ui`…).
        target_type: String,
        /// The browser's page targets, each as `<target_id> (<url>)`.
        pages: Vec<String>,
    },
    /// A CDP command of the attach failed (`Target.getTargets`,
    /// `Target.createTarget`, `Target.attachToTarget`, …).
    #[error("attach failed: {0}")]
    Command(#[from] CommandError),
    /// The attach did not finish within [`SupervisorOptions::attach_timeout`].
    #[error("attach to {url} did not finish within {}ms", after.as_millis())]
    Timeout {
        /// The CDP URL, redacted.
        url: String,
        /// The attach deadline.
        after: Duration,
    },
    /// A page-level endpoint that does not let us find or attach to its own
    /// tab (`Target.getTargetInfo`, `Target.attachToTarget`): a grid proxy
    /// that filters the Target domain.
    #[error(
        "{url} is a page-level CDP endpoint (one tab's socket) and it refused what supervising needs ({reason}); give the browser-level URL instead: http://host:port, ws://host:port/devtools/browser/<id>, or Selenoid's …/devtools/<session>/browser"
    )]
    PageLevel {
        /// The CDP URL, redacted.
        url: String,
        /// The command that failed and why.
        reason: String,
    },
    /// Local Chromium could not be launched ([`Supervisor::start_local`]).
    #[error(transparent)]
    Launch(#[from] crate::browser::LaunchError),
}

/// Why a routed CDP call (`browser_cdp`) failed.
#[derive(Debug, thiserror::Error)]
pub enum CdpCallError {
    /// The `frame_id` cannot take a CDP call (unknown, same-process, or no page).
    #[error(transparent)]
    Route(#[from] RouteError),
    /// The command itself failed: CDP error, deadline, or disconnect.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// No CDP connection now (reconnecting, or the supervisor stopped); why, in words.
    #[error("the supervisor is not connected ({0})")]
    NotConnected(String),
}

/// The outcome of a call that a dialog may interrupt.
#[derive(Clone, Debug)]
pub enum CallOutcome {
    /// Chromium replied.
    Reply(Value),
    /// A dialog blocks the command: it has not completed, but Chromium
    /// queued it and runs it once the dialog closes. The supervisor keeps
    /// waiting for its reply ([`Supervisor::take_completed_calls`],
    /// [`Supervisor::completed_calls`]); resending it would run it twice.
    Interrupted {
        /// The id its completion will carry (`c-N`).
        call_id: String,
        /// The dialogs pending when the call returned.
        pending_dialogs: List<PendingDialog>,
    },
    /// The call's own timeout passed with no dialog in the way while its
    /// command is still queued (an `awaitPromise` not yet settled, a busy
    /// renderer): it may still run. Its outcome, if it comes before the
    /// command's own deadline, is delivered once like an interrupted
    /// call's ([`Supervisor::take_completed_calls`]); resending it could
    /// run it twice.
    TimedOut {
        /// The id its completion will carry (`c-N`).
        call_id: String,
        /// The call's timeout that passed.
        after: Duration,
    },
}

/// The supervised page as Chromium has it at this moment (`Target.getTargetInfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct LivePage {
    /// The page's target id.
    pub target_id: String,
    /// Its URL now; the last known one while Chromium reports none (`""`,
    /// a tab between two documents).
    pub url: String,
    /// Its `document.title` now.
    pub title: String,
}

/// How `navigate` ended.
#[derive(Clone, Debug)]
pub enum NavigateOutcome {
    /// The page loaded (`Page.loadEventFired`).
    Loaded,
    /// A dialog opened first (during load, or a `beforeunload` on the page being left).
    DialogPending(List<PendingDialog>),
    /// The navigation committed but the load event did not come by the deadline.
    LoadTimeout,
    /// The URL was a download (Chromium ends such a navigation with
    /// `net::ERR_ABORTED` and starts the download): the page did not
    /// change. Holds the download's `suggested_filename`; the snapshot's
    /// `downloads` lists it.
    Download(String),
    /// The page left answers nothing (its script never yields), so
    /// Chromium neither leaves nor loads it ([`Supervisor::page_is_busy`]).
    Busy,
}

/// Why an agent's command sent through the driver (`Supervisor::send_agent`) has no result.
#[derive(Debug, thiserror::Error)]
pub enum AgentCallError {
    /// The command failed: CDP error, deadline, or the connection dropped
    /// (or was not there) before its reply.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The supervisor has stopped.
    #[error("the supervisor has stopped")]
    Stopped,
}

impl From<AgentCallError> for CdpCallError {
    fn from(e: AgentCallError) -> CdpCallError {
        match e {
            AgentCallError::Command(c) => CdpCallError::Command(c),
            AgentCallError::Stopped => {
                CdpCallError::NotConnected("the supervisor has stopped".into())
            }
        }
    }
}

enum Request {
    /// A person takes the task or hands it back ([`Tabs::set_person_in_control`]).
    PersonInControl { on: bool },
    /// Release the current tab from the dialogs Chromium will not answer
    /// ([`Tabs::release_unanswerable`]); the reply says how many.
    ReleaseUnanswerable { reply: oneshot::Sender<usize> },
    /// Reply once the event stream has been taken up to `mark` and what it
    /// held is published ([`Supervisor::caught_up`]).
    CaughtUp {
        mark: StreamMark,
        reply: oneshot::Sender<()>,
    },
    Answer {
        req: DialogRequest,
        by: ClosedBy,
        reply: oneshot::Sender<Result<ClosedDialog, DialogError>>,
    },
    Route {
        frame_id: Option<String>,
        /// The tab (its target id); `None`: the current tab.
        target_id: Option<String>,
        /// A navigation may go to a crashed tab: it reloads it.
        allow_crashed: bool,
        reply: oneshot::Sender<Result<Routed, CdpCallError>>,
    },
    SelectTab {
        target_id: String,
        reply: oneshot::Sender<Result<(), RouteError>>,
    },
    Agent {
        target: Target,
        method: String,
        params: Value,
        timeout: Duration,
        reply: oneshot::Sender<Result<Value, ReplyError>>,
    },
    /// Reply once the document of `loader` in `session` is fully loaded
    /// ([`Tabs::await_load`]); dropping `reply` gives the wait up.
    AwaitLoad {
        session: SessionId,
        loader: String,
        reply: oneshot::Sender<()>,
    },
}

/// The live notices of one supervisor: a broadcast channel that exists only
/// while someone listens. Its buffer ([`NOTICE_CAPACITY`] notices, a few
/// hundred KiB) is allocated on the first [`NoticeHub::subscribe`] and freed
/// at the first notice sent after the last receiver is gone — an idle
/// supervisor nobody watches carries none of it.
///
/// Sending while no channel exists (nobody ever watched, or the last
/// watcher left and a notice has seen it) takes no lock: a flood of
/// console errors nobody watches costs one atomic load per notice.
#[derive(Default)]
struct NoticeHub {
    tx: Mutex<Option<broadcast::Sender<Notice>>>,
    /// Whether `tx` holds a channel; written only under its lock.
    open: AtomicBool,
}

impl NoticeHub {
    fn subscribe(&self) -> broadcast::Receiver<Notice> {
        let mut tx = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let rx = tx
            .get_or_insert_with(|| broadcast::channel(NOTICE_CAPACITY).0)
            .subscribe();
        self.open.store(true, Ordering::Release);
        rx
    }

    /// Whether a channel is open (someone listens, or did until the last
    /// notice sent).
    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    fn send(&self, notice: Notice) {
        // A notice racing a first `subscribe` is one sent just before it.
        if !self.open.load(Ordering::Acquire) {
            return;
        }
        let mut tx = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sender) = tx.as_ref() {
            if sender.receiver_count() == 0 {
                *tx = None;
                self.open.store(false, Ordering::Release);
            } else {
                let _ = sender.send(notice);
            }
        }
    }
}

/// The driver's requests from the handles: a queue under a lock and a
/// wakeup, not a channel. An idle supervisor holds no room for requests
/// (an unbounded channel allocates a cache-padded header and its first 32
/// slots up front: 0.75 KiB per supervisor, `benches/many.rs`), and a
/// queue that empties gives its room back.
#[derive(Default)]
struct Inbox {
    queue: Mutex<InboxQueue>,
    ready: tokio::sync::Notify,
}

#[derive(Default)]
struct InboxQueue {
    requests: std::collections::VecDeque<Request>,
    /// The driver is gone: nothing more is taken.
    closed: bool,
}

impl Inbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, InboxQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `r` for the driver; `false` (and `r` dropped) when the
    /// driver is gone.
    fn send(&self, r: Request) -> bool {
        let mut queue = self.lock();
        if queue.closed {
            return false;
        }
        queue.requests.push_back(r);
        drop(queue);
        self.ready.notify_one();
        true
    }

    /// The next request, oldest first. Cancel-safe: a request is taken
    /// only when this returns it, and a wakeup missed by a dropped wait
    /// is kept as `Notify`'s permit.
    async fn recv(&self) -> Request {
        loop {
            if let Some(r) = self.pop() {
                return r;
            }
            self.ready.notified().await;
        }
    }

    fn pop(&self) -> Option<Request> {
        let mut queue = self.lock();
        let r = queue.requests.pop_front();
        if queue.requests.is_empty() && queue.requests.capacity() > 0 {
            queue.requests = Default::default();
        }
        r
    }
}

/// The driver's end of the [`Inbox`]: dropped with the driver, it closes
/// the inbox and drops what waits there, so that every caller still
/// waiting on a reply hears that the supervisor stopped.
struct InboxRx(Arc<Inbox>);

impl InboxRx {
    async fn recv(&self) -> Request {
        self.0.recv().await
    }
}

impl Drop for InboxRx {
    fn drop(&mut self) {
        let left = {
            let mut queue = self.0.lock();
            queue.closed = true;
            std::mem::take(&mut queue.requests)
        };
        // Outside the lock: dropping a request's reply sender wakes its caller.
        drop(left);
    }
}

struct Shared {
    requests: Arc<Inbox>,
    snapshot: watch::Receiver<Arc<Snapshot>>,
    notices: Arc<NoticeHub>,
    cancel: CancellationToken,
    exited: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    endpoint: String,
    attach_time: Duration,
    id: u64,
    policy: DialogPolicies,
    command_timeout: Duration,
    /// The current connection, for reads that must not wait on the event
    /// loop (the live title); set by the driver.
    live: LiveConnection,
    happened: Arc<EventLog>,
    screencast: ScreencastTap,
    calls: Arc<InterruptedCalls>,
    dialog_timeout: Duration,
    max_tabs: usize,
    /// The navigation policy checks documents in the browser (`Fetch`).
    checks_documents: bool,
    /// We launched the browser: it is this supervisor's, and ends with it.
    owns_browser: bool,
    /// The task's browser context (`isolation: context`); set by the driver.
    context: BrowserContext,
}

/// The task's browser context id, shared by the driver (which sets it at
/// each attach) and the handle.
pub(crate) type BrowserContext = Arc<Mutex<Option<String>>>;

type LiveConnection = Arc<Mutex<Option<Connection>>>;

/// Where the driver hands `Page.screencastFrame`s while the live view casts.
type ScreencastTap = Arc<Mutex<Option<mpsc::Sender<ScreencastFrame>>>>;

/// One frame of a tab's screen (`Page.screencastFrame`), for the live view
/// ([`crate::live`]), which acknowledges it (`Page.screencastFrameAck`).
#[derive(Debug)]
pub struct ScreencastFrame {
    /// The page session it came on.
    pub session: SessionId,
    /// The frame's number, for `Page.screencastFrameAck{sessionId}`.
    pub cast_id: i64,
    /// The image, base64 (JPEG as the cast asked).
    pub data: String,
    /// Where the image sits on the page.
    pub metadata: ScreencastMetadata,
}

/// `Page.ScreencastFrameMetadata`: the image covers `device_width` ×
/// `device_height` DIP of the viewport, below `offset_top` DIP of browser
/// chrome; scroll offsets in CSS pixels.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScreencastMetadata {
    /// Top offset in DIP.
    #[serde(default)]
    pub offset_top: f64,
    /// Page scale factor.
    #[serde(default = "one")]
    pub page_scale_factor: f64,
    /// Device screen width in DIP.
    #[serde(default)]
    pub device_width: f64,
    /// Device screen height in DIP.
    #[serde(default)]
    pub device_height: f64,
    /// Position of the horizontal scroll in CSS pixels.
    #[serde(default)]
    pub scroll_offset_x: f64,
    /// Position of the vertical scroll in CSS pixels.
    #[serde(default)]
    pub scroll_offset_y: f64,
}

fn one() -> f64 {
    1.0
}

static NEXT_SUPERVISOR_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Drop for Shared {
    fn drop(&mut self) {
        // The last handle is gone: nothing runs on after its owner.
        self.cancel.cancel();
    }
}

/// A running supervisor: a handle to its task. Cheap to clone; the task
/// stops when [`Supervisor::stop`] is called or the last handle is dropped.
#[derive(Clone)]
pub struct Supervisor {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("endpoint", &self.shared.endpoint)
            .finish()
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl Supervisor {
    /// Connects to `cdp_url` (`http://host:port`, `…/json/version`, `ws://host:port`
    /// or a full `ws://…/devtools/browser/…` URL), attaches to the page
    /// ([`SupervisorOptions::target_id`], else the tab in front, else a new
    /// one) and returns once the frame tree is complete, or at the attach
    /// deadline. A failure before the first attach is returned at once.
    pub async fn start(cdp_url: &str, opts: SupervisorOptions) -> Result<Supervisor, StartError> {
        Self::start_inner(cdp_url, opts, None, false).await
    }

    /// Launches local headless Chromium (see [`crate::browser`]) and
    /// supervises it; Chromium dies with the supervisor.
    pub async fn start_local(
        launch: &crate::browser::LaunchOptions,
        opts: SupervisorOptions,
    ) -> Result<Supervisor, StartError> {
        let chromium = LocalChromium::launch(launch).await?;
        let url = chromium.ws_url().to_owned();
        Self::start_inner(&url, opts, Some(chromium), true).await
    }

    /// Whether the browser is this supervisor's own: launched by it
    /// ([`Supervisor::start_local`]), not one it attached to (`cdp_url`,
    /// a cloud provider's, a Grid's), whose other clients it must not end.
    pub fn owns_browser(&self) -> bool {
        self.shared.owns_browser
    }

    /// Starts a supervisor for a task in a browser context of its own in
    /// `browser` (launched now if it is not running): it takes a hold on
    /// the browser for as long as it runs (DESIGN "Many tasks, one browser").
    pub async fn start_in_context(
        browser: &Arc<crate::browser::shared::SharedBrowser>,
        mut opts: SupervisorOptions,
    ) -> Result<Supervisor, StartError> {
        let lease = Arc::new(browser.lease());
        let url = browser.ws_url().await?;
        let mut ctx = opts.context.take().unwrap_or_default();
        ctx.browser = Some(lease);
        opts.context = Some(ctx);
        Self::start_inner(&url, opts, None, true).await
    }

    /// The task's browser context id, with `isolation: context` (it
    /// changes when a reconnect creates a new one).
    pub fn browser_context(&self) -> Option<String> {
        self.shared
            .context
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The latest snapshot. Never waits for the event loop.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.snapshot.borrow().clone()
    }

    /// A receiver that sees every new snapshot.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.shared.snapshot.clone()
    }

    /// Live notices (dialogs, frames, console errors, connection), for `watch`.
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.shared.notices.subscribe()
    }

    /// The endpoint, with credentials redacted.
    pub fn endpoint(&self) -> &str {
        &self.shared.endpoint
    }

    /// Whether the endpoint is one tab's socket, not the browser's
    /// (see [`PAGE_LEVEL_NOTE`] for what that means).
    pub fn is_page_level(&self) -> bool {
        is_page_level(&self.shared.endpoint)
    }

    /// How long the attach took: connect → frame tree complete.
    pub fn attach_time(&self) -> Duration {
        self.shared.attach_time
    }

    /// Whether the supervisor still serves: its task runs and has not begun
    /// to end (it publishes `connection: closed` first, then shuts down a
    /// Chromium it launched, then exits).
    pub fn is_running(&self) -> bool {
        !self.shared.exited.is_cancelled()
            && self.shared.snapshot.borrow().connection != ConnectionStatus::Closed
    }

    /// A number unique to this supervisor in the process.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// A token cancelled when the task ends; holding it keeps nothing alive.
    pub fn exited_token(&self) -> CancellationToken {
        self.shared.exited.clone()
    }

    /// Resolves when the supervisor's task has ended (stopped or gave up).
    pub async fn exited(&self) {
        self.shared.exited.cancelled().await
    }

    /// Stops the task, closes the connection and (for a local launch) ends
    /// Chromium. Waits for all of it, at most 10 s.
    pub async fn stop(&self) {
        self.shared.cancel.cancel();
        let task = self
            .shared
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
    }

    fn request(&self, r: Request) -> Result<(), CdpCallError> {
        if self.shared.requests.send(r) {
            Ok(())
        } else {
            Err(CdpCallError::NotConnected(
                "the supervisor has stopped".into(),
            ))
        }
    }

    /// The current connection, for reads that must not wait on the event
    /// loop (each with its own short deadline). `None` while not connected.
    pub(crate) fn connection(&self) -> Option<Connection> {
        self.shared
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// How long an interrupted command may wait for its dialog to be answered.
    pub(crate) fn dialog_timeout(&self) -> Duration {
        self.shared.dialog_timeout
    }

    /// A person takes the task (`true`) or hands it back: the auto
    /// policies and watchdogs wait meanwhile, and restart at hand-back
    /// ([`Tabs::set_person_in_control`]). An error only when the
    /// supervisor has stopped.
    pub fn set_person_in_control(&self, on: bool) -> Result<(), CdpCallError> {
        self.request(Request::PersonInControl { on })
    }

    /// Sends the screencast frames of every tab to `tap` from now on
    /// (`None`: nobody casts; frames are acknowledged and dropped). The
    /// receiver must acknowledge each frame it takes.
    pub fn set_screencast_tap(&self, tap: Option<mpsc::Sender<ScreencastFrame>>) {
        *self
            .shared
            .screencast
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tap;
    }

    /// The connection, while connected, for the live view's own commands
    /// (screencast, a person's input), which the core does not track.
    pub fn live_connection(&self) -> Option<Connection> {
        self.connection()
    }

    /// What happened, by kind and sequence number (`browser_wait`,
    /// `event_seq`, the snapshot resource's updates).
    pub fn events(&self) -> &EventLog {
        &self.shared.happened
    }

    /// Interrupted calls that completed and were not handed out yet, oldest
    /// first; each is handed out once (`browser_dialog`'s `completed_calls`).
    pub fn take_completed_calls(&self) -> Vec<CompletedCall> {
        self.shared.calls.take_undelivered()
    }

    /// The last 10 interrupted calls that completed, delivered or not
    /// (the snapshot's `completed_calls`).
    pub fn completed_calls(&self) -> Vec<CompletedCall> {
        self.shared.calls.recent()
    }
}

/// The ws URL, the connection and its events, the tab and our session on
/// it, and the task's browser context (with `isolation: context`).
type Attached = (
    String,
    Connection,
    EventStream,
    TargetInfo,
    SessionId,
    Option<String>,
);
/// Where a call goes: the connection, the session, and its tab's target id.
type Routed = (Connection, SessionId, Option<String>);
type Reconnect = BoxFuture<Result<Attached, StartError>>;

#[cfg(test)]
mod tests {
    use super::run::spawn_owned;
    use super::tabs::{Known, live_or_known, live_pages};
    use super::*;

    #[test]
    fn a_live_url_chromium_reports_empty_keeps_the_last_known_one() {
        let info = |id: &str, url: &str, title: &str| TargetInfo {
            target_id: TargetId(id.into()),
            target_type: "page".into(),
            title: title.into(),
            url: url.into(),
            attached: true,
            parent_frame_id: None,
            opener_id: None,
            browser_context_id: None,
        };
        let known = |id: &str, url: &str| Known {
            target_id: id.into(),
            url: url.into(),
            held: false,
        };
        let ours = || {
            vec![
                known("T1", "http://a.test/1"),
                known("T2", "http://a.test/2"),
            ]
        };
        // Between two documents: the URL is the last known, the title live;
        // a tab Chromium does not list is left out.
        let live = live_pages(ours(), &[info("T1", "", "loading")]);
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(live[0].target_id, "T1");
        assert_eq!(live[0].url, "http://a.test/1");
        assert_eq!(live[0].title, "loading");
        let live = live_pages(
            ours(),
            &[info("T2", "http://a.test/3", "three"), info("T1", "", "")],
        );
        assert_eq!(live[0].url, "http://a.test/1");
        assert_eq!(live[1].url, "http://a.test/3", "{live:?}");
        assert_eq!(live[1].title, "three");
        assert_eq!(
            live_or_known("", "http://a.test/1", false),
            "http://a.test/1"
        );
        assert_eq!(
            live_or_known("about:blank", "http://a.test/1", false),
            "about:blank"
        );
        // A beforeunload holds the navigation Chromium already reports.
        assert_eq!(
            live_or_known("http://a.test/next", "http://a.test/1", true),
            "http://a.test/1"
        );
    }

    /// Issue 41: a tab the task opens, and its downloads, are in its own
    /// context when the command names none; one that names a context is
    /// left as it is (the refusals judged it already).
    #[test]
    fn browser_level_commands_name_the_tasks_context() {
        let mut create = json!({"url": "about:blank"});
        run::in_context("Target.createTarget", &mut create, "C1");
        assert_eq!(create["browserContextId"], "C1");
        let mut downloads = json!({"behavior": "allow", "downloadPath": "/tmp/x"});
        run::in_context("Browser.setDownloadBehavior", &mut downloads, "C1");
        assert_eq!(downloads["browserContextId"], "C1");
        let mut named = json!({"url": "about:blank", "browserContextId": "C9"});
        run::in_context("Target.createTarget", &mut named, "C1");
        assert_eq!(named["browserContextId"], "C9");
        let mut other = json!({"expression": "1"});
        run::in_context("Runtime.evaluate", &mut other, "C1");
        assert!(other.get("browserContextId").is_none());
    }

    #[test]
    fn the_notice_hub_holds_a_channel_only_while_someone_listens() {
        let hub = NoticeHub::default();
        let notice = || Notice::PageBlocked;
        // Nobody listens: nothing is kept, and sending takes no lock.
        hub.send(notice());
        assert!(hub.tx.lock().unwrap().is_none());
        let mut rx = hub.subscribe();
        hub.send(notice());
        assert_eq!(rx.try_recv().ok(), Some(notice()));
        // The last listener gone, the next notice frees the channel.
        drop(rx);
        hub.send(notice());
        assert!(hub.tx.lock().unwrap().is_none());
        assert!(!hub.open.load(Ordering::Acquire));
        // And a new listener gets a new one.
        let mut rx = hub.subscribe();
        hub.send(notice());
        assert_eq!(rx.try_recv().ok(), Some(notice()));
    }

    /// Seen in CI under load: `browser_navigate` to a page that asks
    /// `beforeunload` returned `load_timeout` after 30 s. The command went
    /// out before the race took its baseline; when the dialog it opened was
    /// published first, the race counted it as already there and waited on
    /// a reply Chromium holds until the dialog is answered.
    #[tokio::test]
    async fn regression_a_dialog_shown_before_the_race_first_looks_still_ends_it() {
        let mock = cdp_mock::MockCdp::start().await;
        let opts = SupervisorOptions {
            attach_timeout: Duration::from_secs(2),
            command_timeout: Duration::from_secs(2),
            ..Default::default()
        };
        let sup = Supervisor::start(&mock.ws_url(), opts)
            .await
            .expect("attached to the mock");
        // Taken before the command is sent…
        let before = sup.dialogs_before();
        // …whose dialog is published before the race first looks (the
        // caller's thread was descheduled in between).
        let params = json!({"url": "https://a.test/", "frameId": "T1", "message": "leave?",
                            "type": "beforeunload", "hasBrowserHandler": false, "defaultPrompt": ""});
        mock.emit(Some("S1"), "Page.javascriptDialogOpening", params)
            .await;
        let mut snaps = sup.subscribe();
        let shown = snaps.wait_for(|s| !s.pending_dialogs.is_empty());
        tokio::time::timeout(Duration::from_secs(5), shown)
            .await
            .expect("the dialog is published")
            .expect("the supervisor runs");
        let reply_held = std::future::pending::<()>();
        let raced = sup.race_dialogs_since(before.clone(), reply_held, false);
        match tokio::time::timeout(Duration::from_secs(5), raced).await {
            Ok(Err(d)) => assert_eq!(d.len(), 1, "{d:?}"),
            other => panic!("the race did not end on the dialog: {:?}", other.is_ok()),
        }
        // A baseline taken after the dialog showed cannot see it as new:
        // that race waits on, which is why the baseline comes first.
        let late = sup.race_dialogs(std::future::pending::<()>(), false);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), late)
                .await
                .is_err()
        );
        sup.stop().await;
    }

    /// Review (issue 8): a panic in the driver task left `is_running()` true.
    #[tokio::test]
    async fn regression_a_panicking_driver_task_reports_itself_exited() {
        let exited = CancellationToken::new();
        let task = spawn_owned(async { panic!("a bug in the driver") }, exited.clone());
        assert!(task.await.is_err_and(|e| e.is_panic()));
        assert!(exited.is_cancelled());
    }
}
