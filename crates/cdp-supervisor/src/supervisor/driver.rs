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

/// spec ("Lifecycle"): consecutive failed reconnects after which a supervisor gives up.
pub const MAX_POST_ATTACH_RECONNECT_FAILURES: u32 = 5;
/// The first reconnect waits this long; each failure doubles it.
pub const RECONNECT_BACKOFF_START: Duration = Duration::from_millis(500);
/// spec: reconnect backoff is capped at 10 s.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(10);
/// The deadline of the whole attach (connect, pick the page, frame tree).
pub const DEFAULT_ATTACH_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a call on a page that a dialog already blocks waits before it
/// returns with the pending dialog instead of its reply.
pub const BLOCKED_CALL_GRACE: Duration = Duration::from_millis(500);
/// While reconnecting to a Chromium we launched, how often we check that
/// it is still alive.
const LOCAL_EXIT_CHECK: Duration = Duration::from_millis(200);

/// The longest [`Supervisor::caught_up`] waits for the driver to take the
/// events before a reply (a flood it works through).
const CAUGHT_UP_MAX: Duration = Duration::from_secs(5);

/// What `navigate` heard while waiting for its load.
enum Heard {
    /// The load event of our navigation's document.
    Ours,
    /// A load event of some document, or time passed: ask the page.
    Check,
    /// Something else.
    Nothing,
}

/// While `navigate` waits for its load event, how often it also asks the
/// page directly (in case the event's document could not be told).
const LOAD_CHECK_INTERVAL: Duration = Duration::from_millis(500);
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

struct Shared {
    /// Boxed: an unbounded channel allocates its first 32 slots up front,
    /// and a `Request` is 144 bytes (4.6 KiB per idle supervisor).
    requests: mpsc::UnboundedSender<Box<Request>>,
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
    calls: Arc<InterruptedCalls>,
    dialog_timeout: Duration,
    max_tabs: usize,
    /// The navigation policy checks documents in the browser (`Fetch`).
    checks_documents: bool,
    /// Per tab, the refs of its last page outline ([`crate::supervisor::page`]).
    refs: Mutex<crate::supervisor::page::RefTables>,
}

type LiveConnection = Arc<Mutex<Option<Connection>>>;

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
        Self::start_inner(cdp_url, opts, None).await
    }

    /// Launches local headless Chromium (see [`crate::browser`]) and
    /// supervises it; Chromium dies with the supervisor.
    pub async fn start_local(
        launch: &crate::browser::LaunchOptions,
        opts: SupervisorOptions,
    ) -> Result<Supervisor, StartError> {
        let chromium = LocalChromium::launch(launch).await?;
        let url = chromium.ws_url().to_owned();
        Self::start_inner(&url, opts, Some(chromium)).await
    }

    async fn start_inner(
        cdp_url: &str,
        opts: SupervisorOptions,
        local: Option<LocalChromium>,
    ) -> Result<Supervisor, StartError> {
        let started = Instant::now();
        let shown_url = redact_url(cdp_url);
        let policy = opts.policy;
        let command_timeout = opts.command_timeout;
        let deadline = opts.attach_timeout;
        let attach = async {
            let ws = resolve_ws_url_with(cdp_url, &opts.cdp_headers).await?;
            let (conn, events) = Connection::connect_with(&ws, &opts.cdp_headers).await?;
            conn.set_event_filter(Event::handled);
            let (target, session) = if is_page_level(&ws) {
                // What the endpoint refused; a target_id that names no
                // tab is the caller's mistake, said as it is.
                let page_level = |e: StartError| match e {
                    StartError::NoSuchTarget { .. } | StartError::NotAPage { .. } => e,
                    e => StartError::PageLevel {
                        url: shown_url.clone(),
                        reason: e.to_string(),
                    },
                };
                tracing::warn!(url = %shown_url, "{PAGE_LEVEL_NOTE}");
                // Its own tab, whatever else the browser has.
                let own = match &opts.target_id {
                    Some(t) => t.clone(),
                    None => own_target(&conn, opts.command_timeout)
                        .await
                        .map_err(page_level)?,
                };
                pick_and_attach(&conn, Some(&own), &[], None, opts.command_timeout)
                    .await
                    .map_err(page_level)?
            } else {
                let http = http_of(&ws);
                pick_and_attach(
                    &conn,
                    opts.target_id.as_deref(),
                    &[],
                    http.as_deref().map(|h| (h, &opts.cdp_headers)),
                    opts.command_timeout,
                )
                .await?
            };
            Ok::<_, StartError>((ws, conn, events, target, session))
        };
        let (ws, conn, events, target, session) = tokio::time::timeout(deadline, attach)
            .await
            .map_err(|_| StartError::Timeout {
            url: shown_url.clone(),
            after: deadline,
        })??;

        // A Chromium we launched downloads into a directory of ours, gone
        // with this supervisor; a remote one's disk is not ours to name.
        let downloads_dir = (local.is_some() && opts.downloads.dir.is_none())
            .then(|| {
                tempfile::Builder::new()
                    .prefix("cdp-supervisor-downloads-")
                    .tempdir()
                    .inspect_err(|e| {
                        tracing::warn!(
                            "no download directory: {e}; downloads go where Chromium puts them"
                        )
                    })
                    .ok()
            })
            .flatten();
        if let Some(dir) = &opts.downloads.dir
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            tracing::warn!("cannot create the download directory {dir}: {e}");
        }
        let mut downloads = opts.downloads.clone();
        if let Some(d) = &downloads_dir {
            downloads.dir = Some(d.path().to_string_lossy().into_owned());
        }
        let mut state = Tabs::new(state::Options {
            policy: opts.policy,
            dialog_timeout: opts.dialog_timeout,
            dialog_bridge: opts.dialog_bridge,
            max_tabs: opts.max_tabs,
            navigation: opts.navigation.clone(),
            credentials: opts.credentials.clone(),
            downloads,
            ..Default::default()
        });
        state.attach_page(
            target.target_id,
            session,
            &target.url,
            &target.title,
            Now::system(),
        );
        let (snap_tx, snap_rx) = watch::channel(Arc::new(state.snapshot()));
        let notice_tx = Arc::new(NoticeHub::default());
        let (req_tx, req_rx) = mpsc::unbounded_channel();
        let (tree_tx, tree_rx) = oneshot::channel();
        let cancel = CancellationToken::new();
        let exited = CancellationToken::new();
        let live: LiveConnection = Arc::new(Mutex::new(Some(conn.clone())));
        let dialog_timeout = opts.dialog_timeout;
        let max_tabs = opts.max_tabs;
        let checks_documents = opts.navigation.document_pattern().is_some();
        let happened = Arc::new(EventLog::default());
        let mut driver = Driver {
            live: live.clone(),
            happened: happened.clone(),
            state,
            opts: Box::new(opts),
            ws_url: ws,
            conn: Some(conn),
            events: Some(events),
            inflight: HashMap::new(),
            tickets: HashMap::new(),
            calls: HashMap::new(),
            next_ticket: 1,
            snapshot: snap_tx,
            notices: notice_tx.clone(),
            requests: req_rx,
            connection_owed: None,
            tree_pending: 0,
            tree_done: Some(tree_tx),
            catching_up: Vec::new(),
            reconnect: None,
            failures: 0,
            shown_url: shown_url.clone(),
            local: local.map(Box::new),
            event_session: SessionId(String::new()),
            _downloads_dir: downloads_dir,
        };
        driver.flush();
        let task_cancel = cancel.clone();
        let task_exited = exited.clone();
        let task = spawn_owned(driver.run(task_cancel), task_exited);
        // Until the handle exists, dropping this future (a caller's timeout)
        // must stop the task too: nothing runs on after its owner is gone.
        let guard = cancel.clone().drop_guard();
        // The frame tree is complete when every getFrameTree / setAutoAttach
        // sent so far has replied; a blocked page may never answer, so the
        // rest of the attach deadline bounds the wait.
        let left = deadline.saturating_sub(started.elapsed());
        let _ = tokio::time::timeout(left, tree_rx).await;
        guard.disarm();
        Ok(Supervisor {
            shared: Arc::new(Shared {
                requests: req_tx,
                snapshot: snap_rx,
                notices: notice_tx,
                cancel,
                exited,
                task: Mutex::new(Some(task)),
                endpoint: shown_url,
                attach_time: started.elapsed(),
                id: NEXT_SUPERVISOR_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                policy,
                command_timeout,
                live,
                happened,
                calls: Arc::new(InterruptedCalls::default()),
                dialog_timeout,
                max_tabs,
                checks_documents,
                refs: Mutex::new(Default::default()),
            }),
        })
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
        self.shared
            .requests
            .send(Box::new(r))
            .map_err(|_| CdpCallError::NotConnected("the supervisor has stopped".into()))
    }

    /// Answers a pending dialog (`Page.handleJavaScriptDialog` on the session
    /// that reported it). Waits for Chromium's reply, at most the command
    /// deadline.
    pub async fn answer_dialog(&self, req: DialogRequest) -> Result<ClosedDialog, DialogError> {
        self.answer_dialog_as(req, ClosedBy::Agent).await
    }

    /// [`Supervisor::answer_dialog`] on behalf of `by` (the agent, or a
    /// human it asked: [`ClosedBy::User`]), which its record's `closed_by` says.
    pub async fn answer_dialog_as(
        &self,
        req: DialogRequest,
        by: ClosedBy,
    ) -> Result<ClosedDialog, DialogError> {
        let (tx, rx) = oneshot::channel();
        let stopped = || DialogError::Cdp {
            id: req.dialog_id.clone().unwrap_or_default(),
            error: "the supervisor has stopped".into(),
        };
        self.request(Request::Answer {
            req: req.clone(),
            by,
            reply: tx,
        })
        .map_err(|_| stopped())?;
        // The answer's command has the configured deadline; its reply (or
        // its error) always comes back, and the second is for the hand-off.
        let wait = self.shared.command_timeout + Duration::from_secs(1);
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(stopped()),
            Err(_) => Err(DialogError::Cdp {
                id: req.dialog_id.unwrap_or_default(),
                error: "no reply from Chromium in time".into(),
            }),
        }
    }

    /// Sends an agent's CDP command through the driver and the core
    /// ([`State::send_agent`]): in wire order with the core's own commands
    /// and events, so the core knows which navigations (and so which closed
    /// dialogs) the agent caused. Resolves with Chromium's result or why
    /// there is none — within `timeout` (plus a second for the hand-off),
    /// also when the supervisor stops or the connection drops.
    pub(crate) fn send_agent(
        &self,
        target: Target,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> impl Future<Output = Result<Value, AgentCallError>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let method = method.to_owned();
        let sent = self
            .shared
            .requests
            .send(Box::new(Request::Agent {
                target,
                method: method.clone(),
                params,
                timeout,
                reply: tx,
            }))
            .is_ok();
        async move {
            if !sent {
                return Err(AgentCallError::Stopped);
            }
            match tokio::time::timeout(timeout + Duration::from_secs(1), rx).await {
                Ok(Ok(r)) => r.map_err(|e| AgentCallError::Command(command_error(&method, e))),
                Ok(Err(_)) => Err(AgentCallError::Stopped),
                Err(_) => Err(AgentCallError::Command(CommandError::Timeout {
                    method,
                    after: timeout,
                })),
            }
        }
    }

    /// Waits, at most `within`, until the script that a just-answered dialog
    /// of `frame_id` held up has run on: its renderer answers a
    /// `Runtime.evaluate("0")` only once that script's task is over, so what
    /// the script did (a new `document.title`, a queued command) is visible
    /// to the next read. The OOPIF's own session for a dialog in an OOPIF,
    /// else the page's. Gives up early when a new dialog opens (the script
    /// is blocked again) or the call cannot be routed.
    pub async fn settle_after_dialog(
        &self,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        within: Duration,
    ) {
        let routed = match frame_id {
            Some(f) => match self.route(Some(f), target_id, false).await {
                Ok(r) => Ok(r),
                // A same-process frame runs on the page's renderer.
                Err(CdpCallError::Route(RouteError::SameProcess { .. })) => {
                    self.route(None, target_id, false).await
                }
                Err(e) => Err(e),
            },
            None => self.route(None, target_id, false).await,
        };
        let Ok((conn, session)) = routed else { return };
        let before = self.dialogs_before();
        let probe = conn.send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "0"}),
            within,
        );
        let _ = self.race_dialogs_since(before, probe, false).await;
        // The probe's reply came straight to us: what the script did before
        // it (a tab it opened) must be in the snapshot the caller reads next.
        self.caught_up().await;
    }

    /// After an input's reply, in tab `target_id`: Chromium acknowledges
    /// input on one channel and sends the page's events on another, so a
    /// navigation the input scheduled can be announced after that reply
    /// (seen on a loaded machine). A `Runtime.evaluate("0")` on the tab's
    /// page session, sent through the core as an agent call, is answered
    /// only after every event its renderer sent before: a navigation
    /// announced meanwhile is tied to the agent, and so followed by
    /// [`Supervisor::action_settled`]. Skipped while a dialog of the tab is
    /// pending (its renderer answers nothing); gives up when one opens, or
    /// after `within`.
    pub(crate) async fn input_settled(&self, target_id: &str, within: Duration) {
        let pending = self
            .snapshot()
            .tabs
            .iter()
            .any(|t| t.target_id == target_id && t.pending_dialogs > 0);
        if pending {
            return;
        }
        let Ok((_conn, session)) = self.route(None, Some(target_id), false).await else {
            return;
        };
        let before = self.dialogs_before();
        let probe = self.send_agent(
            Target::Session(session),
            "Runtime.evaluate",
            json!({"expression": "0"}),
            within,
        );
        let _ = self.race_dialogs_since(before, probe, false).await;
    }

    /// The number of the last navigation the agent's script or input
    /// asked for in the current tab (0: none yet), with the tab's target
    /// id: what [`Supervisor::action_settled`] compares with after an action.
    pub(crate) fn action_navigation_mark(&self) -> Option<(String, u64)> {
        let snap = self.snapshot();
        let tab = snap.tabs.iter().find(|t| t.current)?;
        let seq = tab.action_navigation.map_or(0, |a| a.seq);
        Some((tab.target_id.clone(), seq))
    }

    /// After an action in tab `target_id` (with [`Supervisor::caught_up`]
    /// first): waits until the navigation it asked for — one numbered past
    /// `after` — has its outcome (a new document, the same one, a download,
    /// nothing: [`crate::supervisor::state::ActionNavigation`]), or the tab
    /// has a pending dialog, crashed or closed; at most `within`. Returns at
    /// once when the action asked for no navigation. Chromium sends
    /// `Page.frameRequestedNavigation` before the reply of the input that
    /// caused it (CDP facts), so no fixed wait is needed to know.
    pub(crate) async fn action_settled(&self, target_id: &str, after: u64, within: Duration) {
        let done = |s: &Snapshot| {
            s.tabs
                .iter()
                .find(|t| t.target_id == target_id)
                .is_none_or(|t| {
                    t.crashed
                        || t.pending_dialogs > 0
                        || t.action_navigation
                            .is_none_or(|a| a.seq <= after || a.settled)
                })
        };
        let mut snaps = self.subscribe();
        let settled = async {
            while !done(&snaps.borrow_and_update()) {
                if snaps.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(within, settled).await;
    }

    /// Returns once the published snapshot shows every event Chromium sent
    /// before a reply the caller just had straight from the connection
    /// ([`Connection::send`], not through the driver): the connection queues
    /// those events before it hands the reply over, and the driver takes a
    /// request only once no event is queued, publishing after each turn.
    pub(crate) async fn caught_up(&self) {
        let Some(conn) = self.connection() else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        let mark = conn.mark();
        if self.request(Request::CaughtUp { mark, reply: tx }).is_ok() {
            let _ = tokio::time::timeout(CAUGHT_UP_MAX, rx).await;
        }
    }

    /// The connection and the session for a call: the frame `frame_id`'s
    /// (in tab `target_id`, else any tab, the current one first), else the
    /// page session of tab `target_id` or the current tab.
    pub(crate) async fn route(
        &self,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        allow_crashed: bool,
    ) -> Result<(Connection, SessionId), CdpCallError> {
        self.route_to_tab(frame_id, target_id, allow_crashed)
            .await
            .map(|(conn, session, _)| (conn, session))
    }

    /// [`Supervisor::route`], with the target id of the tab the session
    /// belongs to (the tab whose dialogs can block the call).
    async fn route_to_tab(
        &self,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        allow_crashed: bool,
    ) -> Result<Routed, CdpCallError> {
        let (tx, rx) = oneshot::channel();
        self.request(Request::Route {
            frame_id: frame_id.map(str::to_owned),
            target_id: target_id.map(str::to_owned),
            allow_crashed,
            reply: tx,
        })?;
        rx.await
            .map_err(|_| CdpCallError::NotConnected("the supervisor has stopped".into()))?
    }

    /// The current tab's CDP session id; `None` while not connected. For
    /// embedders that address sessions themselves (the Python module's
    /// `hermes` layer: its callers read `_page_session_id`).
    pub async fn page_session_id(&self) -> Option<String> {
        self.route(None, None, true).await.ok().map(|(_, s)| s.0)
    }

    /// Sends one raw CDP command on `session_id` (`None`: the browser
    /// itself) through the driver, in wire order with the events: Chromium's
    /// result or its error. No routing by frame or tab and no dialog
    /// interruption (a blocked page makes it wait until `timeout`): the
    /// session-addressed call of the spec's `_cdp`, for embedders.
    ///
    /// # Errors
    /// A CDP error, the deadline, the connection dropping, or the
    /// supervisor stopped.
    pub async fn cdp_on_session(
        &self,
        session_id: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpCallError> {
        let target = match session_id {
            Some(s) => Target::Session(SessionId::from(s)),
            None => Target::Browser,
        };
        self.send_agent(target, method, params, timeout)
            .await
            .map_err(CdpCallError::from)
    }

    /// Sends a raw CDP command over the supervisor's own connection: to the
    /// page session of the current tab (or of the supervised tab
    /// `target_id`), or with `frame_id` of an OOPIF to its child session.
    ///
    /// Returns [`CallOutcome::Interrupted`] — within `timeout`, and at most
    /// [`BLOCKED_CALL_GRACE`] after the dialog opened — when a dialog blocks
    /// the command: one opens during the call, or one already blocked the
    /// page and no reply came within the grace. The command is then still
    /// queued in the page: the supervisor keeps waiting for its reply (at
    /// most `dialog_timeout` + `timeout`) and records the outcome once
    /// ([`Supervisor::take_completed_calls`]).
    ///
    /// # Errors
    /// [`CdpCallError::Route`] for a `frame_id` that cannot take the call;
    /// [`CdpCallError::Command`] for a CDP error, the `timeout` passing
    /// with no dialog in the way, or the connection dropping.
    pub async fn cdp(
        &self,
        method: &str,
        params: Value,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        timeout: Duration,
    ) -> Result<CallOutcome, CdpCallError> {
        let (_conn, session, tab) = self.route_to_tab(frame_id, target_id, false).await?;
        // The command's own deadline outlives the call: an interrupted
        // command runs once its dialog is answered, and its outcome is kept.
        let keep = timeout.saturating_add(self.shared.dialog_timeout);
        // Through the driver and the core: in wire order with the events, so
        // the core knows which navigations (and closed dialogs) it causes.
        let before = self.dialogs_before_on(tab.as_deref());
        let reply = self.send_agent(Target::Session(session), method, params, keep);
        self.interruptible_since(
            before,
            method,
            async move { reply.await.map_err(CdpCallError::from) },
            timeout,
        )
        .await
    }

    /// Runs `work` — an agent's call that a dialog can block (a CDP
    /// command, or an action's dispatch ending in the action's result) — as
    /// a call a dialog interrupts (DESIGN "Calls a dialog interrupts"):
    /// its outcome within `timeout`, or [`CallOutcome::Interrupted`] when a
    /// dialog blocks it. An interrupted `work` runs on (it is queued in the
    /// page) and its outcome is recorded once under `method`; `work`'s own
    /// commands carry the deadline that bounds that wait.
    ///
    /// # Errors
    /// `work`'s own error, or [`CommandError::Timeout`] when `timeout`
    /// passes with no dialog in the way.
    pub(crate) async fn interruptible<F>(
        &self,
        method: &str,
        work: F,
        timeout: Duration,
    ) -> Result<CallOutcome, CdpCallError>
    where
        F: Future<Output = Result<Value, CdpCallError>> + Send + 'static,
    {
        self.interruptible_since(self.dialogs_before(), method, work, timeout)
            .await
    }

    /// [`Supervisor::interruptible`] for `work` whose command went out
    /// after `since` ([`Supervisor::dialogs_before`]) was taken.
    pub(crate) async fn interruptible_since<F>(
        &self,
        since: DialogsBefore,
        method: &str,
        work: F,
        timeout: Duration,
    ) -> Result<CallOutcome, CdpCallError>
    where
        F: Future<Output = Result<Value, CdpCallError>> + Send + 'static,
    {
        let tab = since.tab.clone();
        let blocked_at_start = since.blocked;
        let mut reply = Box::pin(work);
        let own_deadline = async {
            tokio::select! {
                r = &mut reply => Some(r),
                () = tokio::time::sleep(timeout) => None,
            }
        };
        let pending_dialogs = match self.race_dialogs_since(since, own_deadline, true).await {
            // Sent while a dialog blocked the page, which a navigation then
            // closed: Chromium ran the queued command but says only that
            // the page navigated (CDP facts). Not a failure to resend.
            Ok(Some(Err(e))) if blocked_at_start && lost_to_navigation(&e) => {
                let call_id = self.shared.calls.begin(method);
                self.shared.calls.complete(&call_id, Err(describe_late(&e)));
                return Ok(CallOutcome::Interrupted {
                    call_id,
                    pending_dialogs: self.snapshot().pending_dialogs.clone(),
                });
            }
            Ok(Some(r)) => return Ok(CallOutcome::Reply(r?)),
            Ok(None) => {
                let s = self.snapshot();
                if !s.call_blocked_on(tab.as_deref()) {
                    // Still queued: kept like an interrupted call, and an
                    // action's dispatch runs to its end (a mousePressed is
                    // followed by its mouseReleased).
                    return Ok(CallOutcome::TimedOut {
                        call_id: self.keep_waiting(method, reply),
                        after: timeout,
                    });
                }
                s.pending_dialogs.clone()
            }
            Err(d) => d,
        };
        Ok(CallOutcome::Interrupted {
            call_id: self.keep_waiting(method, reply),
            pending_dialogs,
        })
    }

    /// Records the call `method` as outstanding and waits on for `reply`
    /// in a task of its own, recording its outcome once. Returns its
    /// `call_id`.
    fn keep_waiting(
        &self,
        method: &str,
        reply: Pin<Box<impl Future<Output = Result<Value, CdpCallError>> + Send + 'static>>,
    ) -> String {
        let call_id = self.shared.calls.begin(method);
        let calls = self.shared.calls.clone();
        let id = call_id.clone();
        // Ends with the reply, the deadline, or the connection: never lingers.
        tokio::spawn(async move {
            let outcome = reply.await.map_err(|e| describe_late(&e));
            calls.complete(&id, outcome);
        });
        call_id
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

    /// Per tab, the refs of its last page outline.
    pub(crate) fn ref_tables(
        &self,
    ) -> std::sync::MutexGuard<'_, crate::supervisor::page::RefTables> {
        self.shared
            .refs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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

    /// Waits until every interrupted call has completed, at most `within`.
    pub async fn interrupted_calls_settled(&self, within: Duration) {
        self.shared
            .calls
            .settled(crate::cdp::connection::deadline_after(within))
            .await
    }

    /// Makes the supervised tab `target_id` current: `browser_navigate`,
    /// `browser_cdp` and the snapshot's page and `frame_tree` act on it.
    ///
    /// # Errors
    /// [`RouteError::UnknownTab`] naming the supervised tabs.
    pub async fn select_tab(&self, target_id: &str) -> Result<(), CdpCallError> {
        let (tx, rx) = oneshot::channel();
        self.request(Request::SelectTab {
            target_id: target_id.to_owned(),
            reply: tx,
        })?;
        rx.await
            .map_err(|_| CdpCallError::NotConnected("the supervisor has stopped".into()))?
            .map_err(CdpCallError::Route)?;
        // The snapshot's page changed: the resource's subscribers hear it.
        self.shared.happened.record(EventKind::CurrentTab);
        Ok(())
    }

    /// Opens a new tab on `url` (`Target.createTarget`), supervised from its
    /// first script, and makes it current. Returns its target id.
    ///
    /// # Errors
    /// As [`Supervisor::create_target`].
    pub async fn new_tab(&self, url: &str, timeout: Duration) -> Result<String, CdpCallError> {
        let v = self.create_target(json!({ "url": url }), timeout).await?;
        let target_id = v
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.select_tab(&target_id).await?;
        Ok(target_id)
    }

    /// Opens a tab with `Target.createTarget` and the agent's `params`
    /// (`{url, …}`), and returns Chromium's reply (`{targetId}`) once the
    /// tab is supervised (within `timeout`). It does not become current.
    ///
    /// Under a navigation policy that checks documents in the browser, a
    /// tab asked for with a `url` is created on `about:blank` and sent to
    /// `url` (`Page.navigate`, not waited for) once it is supervised:
    /// Chromium fetches a created tab's first document before the tab can be
    /// paused, so that document, or a redirect from it, would load
    /// unchecked.
    ///
    /// # Errors
    /// [`CdpCallError::Command`] when Chromium refuses or does not answer
    /// within `timeout`; [`CdpCallError::Route`] when the new page could not
    /// be supervised (past `max_tabs`).
    pub async fn create_target(
        &self,
        mut params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpCallError> {
        let max_tabs = self.shared.max_tabs;
        if self.snapshot().tabs.len() >= max_tabs {
            return Err(CdpCallError::Route(RouteError::MaxTabs { max_tabs }));
        }
        let deferred = params
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| self.shared.checks_documents && !u.is_empty() && *u != "about:blank")
            .map(str::to_owned);
        if deferred.is_some() {
            params["url"] = json!("about:blank");
        }
        let v = self
            .send_agent(Target::Browser, "Target.createTarget", params, timeout)
            .await
            .map_err(|e| match e {
                AgentCallError::Command(c) => CdpCallError::Command(c),
                AgentCallError::Stopped => {
                    CdpCallError::NotConnected("the supervisor has stopped".into())
                }
            })?;
        let target_id = v
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        // The page attached (and was adopted) before Chromium's reply, or
        // attaches right after it.
        let mut snaps = self.subscribe();
        let adopted = async {
            loop {
                if snaps
                    .borrow_and_update()
                    .tabs
                    .iter()
                    .any(|t| t.target_id == target_id)
                {
                    return;
                }
                if snaps.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        if tokio::time::timeout(timeout, adopted).await.is_err() {
            return Err(CdpCallError::Route(RouteError::UnknownTab {
                target_id,
                known: self
                    .snapshot()
                    .tabs
                    .iter()
                    .map(|t| t.target_id.clone())
                    .collect(),
            }));
        }
        if let Some(url) = deferred {
            let (_conn, session) = self.route(None, Some(&target_id), false).await?;
            // Queued now, in order with what the agent sends next; its reply
            // (at commit) is the core's to track, like any navigation's.
            drop(self.send_agent(
                Target::Session(session),
                "Page.navigate",
                json!({ "url": url }),
                timeout,
            ));
        }
        Ok(v)
    }

    /// Closes the supervised tab `target_id` with `Page.close`, which runs
    /// its `beforeunload` (`Target.closeTarget` would skip it): the close
    /// then waits for that dialog, which shows as pending.
    ///
    /// # Errors
    /// [`RouteError::UnknownTab`]; [`CdpCallError::Command`] when Chromium refuses.
    pub async fn close_tab(&self, target_id: &str, timeout: Duration) -> Result<(), CdpCallError> {
        let (_conn, session) = self.route(None, Some(target_id), true).await?;
        let mut snaps = self.subscribe();
        let before = self.dialogs_before();
        let reply = self.send_agent(Target::Session(session), "Page.close", json!({}), timeout);
        match self.race_dialogs_since(before, reply, false).await {
            // Between documents (a tab just created on about:blank and sent
            // to its URL) Chromium's page answers "Not attached to an active
            // page"; there is no beforeunload to run then: close the target.
            Ok(Err(AgentCallError::Command(CommandError::Protocol {
                code: -32000,
                message,
                ..
            }))) if message.contains(NOT_ATTACHED) => {
                let reply = self.send_agent(
                    Target::Browser,
                    "Target.closeTarget",
                    json!({ "targetId": target_id }),
                    timeout,
                );
                if let Err(AgentCallError::Command(c)) = reply.await {
                    return Err(CdpCallError::Command(c));
                }
            }
            Ok(Err(AgentCallError::Command(c))) => return Err(CdpCallError::Command(c)),
            Ok(Err(AgentCallError::Stopped)) => {
                return Err(CdpCallError::NotConnected(
                    "the supervisor has stopped".into(),
                ));
            }
            Ok(Ok(_)) | Err(_) => {}
        }
        // Chromium replies before the tab is gone: wait (bounded) until it
        // is, or until one of its dialogs (its beforeunload) holds the close.
        let state = |s: &Snapshot| {
            let open = s.tabs.iter().any(|t| t.target_id == target_id);
            let held = s.pending_dialogs.iter().any(|d| {
                d.target_id.as_deref() == Some(target_id)
                    && d.dialog_type == crate::cdp::protocol::DialogType::Beforeunload
            });
            (open, held)
        };
        let settled = async {
            loop {
                if let (false, _) | (_, true) = state(&snaps.borrow_and_update()) {
                    return;
                }
                if snaps.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, settled).await;
        if state(&self.snapshot()) == (true, false) {
            // Page.close answered and did nothing (seen under load on a tab
            // between documents): close the target, which nothing can hold.
            let _ = self
                .send_agent(
                    Target::Browser,
                    "Target.closeTarget",
                    json!({ "targetId": target_id }),
                    timeout,
                )
                .await;
            let gone = async {
                while state(&snaps.borrow_and_update()).0 {
                    if snaps.changed().await.is_err() {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(timeout, gone).await;
        }
        Ok(())
    }

    /// Every supervised tab's URL and title as Chromium has them now, oldest
    /// first (one `Target.getTargets` on the browser session: answered by
    /// the browser process, also while dialogs block pages). `None` when not
    /// connected or no answer came `within`; a tab Chromium no longer lists
    /// is left out.
    pub async fn live_tabs(&self, within: Duration) -> Option<Vec<LivePage>> {
        let conn = self.connection()?;
        let ours: Vec<(String, String)> = self
            .snapshot()
            .tabs
            .iter()
            .map(|t| (t.target_id.clone(), t.url.to_string()))
            .collect();
        let all = conn
            .send(None, "Target.getTargets", json!({}), within)
            .await
            .ok()?;
        let infos: Vec<TargetInfo> = all
            .get("targetInfos")
            .and_then(|v| serde_json::from_value(v.clone()).ok())?;
        Some(live_pages(ours, &infos))
    }

    /// The page's URL and title as Chromium has them now
    /// (`Target.getTargetInfo` on the browser session: answered by the
    /// browser process, also while a dialog blocks the page). `None` when
    /// not connected, no page is attached, or no answer came `within`.
    /// Never waits on the event loop. [`Supervisor::snapshot`]'s `url` and
    /// `title` are the last ones events told (the title is refreshed after
    /// each load; Chromium sends no event when a script changes it).
    pub async fn live_page(&self, within: Duration) -> Option<LivePage> {
        let conn = self.connection()?;
        let snap = self.snapshot();
        let target_id = snap.frame_tree.top.as_ref()?.frame_id.clone();
        let info = conn
            .send(
                None,
                "Target.getTargetInfo",
                json!({ "targetId": target_id }),
                within,
            )
            .await
            .ok()?;
        let field = |k: &str| {
            info.pointer(&format!("/targetInfo/{k}"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Some(LivePage {
            target_id,
            url: live_or_known(&field("url")?, &snap.url).to_owned(),
            title: field("title").unwrap_or_default(),
        })
    }

    /// The dialogs pending now, for [`Supervisor::race_dialogs_since`]:
    /// take it **before** sending the command a dialog may block. A
    /// dialog the command opens at once can be published before the race
    /// first looks; counted as already there, it was missed, and a
    /// navigation to a page that asks `beforeunload` waited out its 30 s
    /// (seen in CI under load).
    pub(crate) fn dialogs_before(&self) -> DialogsBefore {
        self.dialogs_before_on(None)
    }

    /// [`Supervisor::dialogs_before`] for a call on tab `target_id`
    /// (`None`: the current tab): only dialogs that block that tab's
    /// renderer count ([`Snapshot::blocks_call_on`]).
    pub(crate) fn dialogs_before_on(&self, target_id: Option<&str>) -> DialogsBefore {
        let mut snaps = self.subscribe();
        let (ids, blocked, tab) = {
            let s = snaps.borrow_and_update();
            let ids: Vec<String> = s.pending_dialogs.iter().map(|d| d.id.clone()).collect();
            // Pinned now: the current tab may change while the call runs.
            let tab = target_id.map(str::to_owned).or_else(|| {
                s.tabs
                    .iter()
                    .find(|t| t.current)
                    .map(|t| t.target_id.clone())
            });
            (ids, s.call_blocked_on(target_id), tab)
        };
        DialogsBefore {
            snaps,
            ids,
            blocked,
            tab,
            loads: false,
        }
    }

    /// Runs `fut` unless a dialog blocks the page first: a new pending
    /// dialog (under an auto policy, only one the policy could not answer),
    /// or — when `existing_block` and one already blocked the page at the
    /// start — no result within [`BLOCKED_CALL_GRACE`]. `Err` carries the
    /// pending dialogs. For a `fut` whose command is already sent, use
    /// [`Supervisor::race_dialogs_since`].
    pub(crate) async fn race_dialogs<F, T>(
        &self,
        fut: F,
        existing_block: bool,
    ) -> Result<T, List<PendingDialog>>
    where
        F: Future<Output = T>,
    {
        self.race_dialogs_since(self.dialogs_before(), fut, existing_block)
            .await
    }

    /// [`Supervisor::race_dialogs`], "new" and "at the start" meaning
    /// since `since` ([`Supervisor::dialogs_before`]).
    pub(crate) async fn race_dialogs_since<F, T>(
        &self,
        since: DialogsBefore,
        fut: F,
        existing_block: bool,
    ) -> Result<T, List<PendingDialog>>
    where
        F: Future<Output = T>,
    {
        let DialogsBefore {
            mut snaps,
            ids: before,
            blocked: blocked_at_start,
            tab,
            loads,
        } = since;
        let tab = tab.as_deref();
        let policy = self.shared.policy;
        let auto = |d: &Arc<PendingDialog>| {
            d.answered_at_once
                || policy.for_type(d.dialog_type.as_str()) != DialogPolicy::MustRespond
        };
        let new_dialog = async {
            loop {
                if snaps.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
                let s = snaps.borrow_and_update().clone();
                if s.pending_dialogs.iter().any(|d| {
                    !before.contains(&d.id)
                        && (s.blocks_call_on(d, tab) || (loads && s.holds_load_on(d, tab)))
                        && (!auto(d) || !d.answerable)
                }) {
                    return s.pending_dialogs.clone();
                }
            }
        };
        let grace = async {
            if blocked_at_start && existing_block {
                tokio::time::sleep(BLOCKED_CALL_GRACE).await;
                let s = self.snapshot();
                // Released meanwhile: nothing blocks the call any more.
                if s.call_blocked_on(tab) {
                    return s.pending_dialogs.clone();
                }
            }
            std::future::pending().await
        };
        tokio::select! {
            // A result already there wins over a dialog that opened after it.
            biased;
            r = fut => Ok(r),
            d = new_dialog => Err(d),
            d = grace => Err(d),
        }
    }

    /// Whether the top frame shows the document of `loader`, fully loaded
    /// (`Page.getFrameTree` and `document.readyState`; a short deadline).
    async fn loaded(&self, conn: &Connection, session: &SessionId, loader: &str) -> bool {
        let quick = Duration::from_secs(2);
        let tree = conn
            .send(Some(session), "Page.getFrameTree", json!({}), quick)
            .await;
        let ours = tree
            .ok()
            .and_then(|t| t.pointer("/frameTree/frame/loaderId").cloned())
            .is_some_and(|l| l.as_str() == Some(loader));
        if !ours {
            return false;
        }
        let state = conn
            .send(
                Some(session),
                "Runtime.evaluate",
                json!({"expression": "document.readyState", "returnByValue": true}),
                quick,
            )
            .await;
        state
            .ok()
            .and_then(|v| v.pointer("/result/value").cloned())
            .is_some_and(|v| v == "complete")
    }

    /// Navigates the page (`Page.navigate`) and waits for its document's
    /// load (`Page.lifecycleEvent{name:"load"}` with the navigation's
    /// `loaderId`, or the page found loaded when asked), at most `timeout`.
    /// Returns promptly with the pending dialogs when a new one opens first
    /// (during load, or a `beforeunload` of the page being left); dialogs
    /// already pending when it starts do not count — this navigation
    /// releases them. A navigation error (`errorText`) is a
    /// [`CommandError::Protocol`] with code 0.
    pub async fn navigate(
        &self,
        url: &str,
        timeout: Duration,
    ) -> Result<NavigateOutcome, CdpCallError> {
        let deadline = crate::cdp::connection::deadline_after(timeout);
        let current: Option<String> = self
            .snapshot()
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.clone());
        let here = |d: &PendingDialog| d.target_id.is_none() || d.target_id == current;
        // A beforeunload Chromium will not answer (a newer dialog of the
        // page took the answers, or it showed before a reconnect) holds the
        // top frame, which then answers no navigation of its own: release
        // the page through the core (it navigates an OOPIF, or closes the
        // tab when there is none), then navigate the tab current by then.
        let stuck = |s: &Snapshot| {
            s.pending_dialogs
                .iter()
                .any(|d| here(d) && !d.answerable && d.dialog_type.as_str() == "beforeunload")
        };
        let released = stuck(&self.snapshot());
        if released {
            let (tx, rx) = oneshot::channel();
            self.request(Request::ReleaseUnanswerable { reply: tx })?;
            let _ = rx.await;
            let mut snaps = self.subscribe();
            let no_tab = |s: &Snapshot| !s.tabs.iter().any(|t| t.current);
            let released = async {
                loop {
                    let free = {
                        let s = snaps.borrow_and_update();
                        !stuck(&s) && !no_tab(&s)
                    };
                    if free || snaps.changed().await.is_err() {
                        return;
                    }
                }
            };
            if tokio::time::timeout_at(deadline, released).await.is_err() {
                return Ok(NavigateOutcome::DialogPending(
                    self.snapshot().pending_dialogs.clone(),
                ));
            }
        }
        let snap = self.snapshot();
        // A beforeunload that can be answered is the page asking whether it
        // may be left: a navigation does not release it but queues behind
        // it. A dialog in another tab sharing this renderer (a same-site
        // popup's) blocks the navigation too, and navigating does not
        // release it.
        if snap.pending_dialogs.iter().any(|d| {
            (here(d) && d.dialog_type.as_str() == "beforeunload")
                || (!here(d) && snap.blocks_call_on(d, None))
        }) {
            return Ok(NavigateOutcome::DialogPending(snap.pending_dialogs.clone()));
        }
        let mut notices = self.notices();
        // A navigation is how a crashed tab is reloaded.
        let (conn, session) = self.route(None, None, true).await?;
        // Before sending: a dialog it opens (a beforeunload, an alert while
        // loading, an HTTP challenge) is new to both races below, however
        // soon it shows. Chromium does not answer `Page.navigate` while a
        // challenge of its document waits.
        let mut before = self.dialogs_before();
        before.loads = true;
        let mut tries = if released { 2 } else { 1 };
        let v = loop {
            tries -= 1;
            let reply = self.send_agent(
                Target::Session(session.clone()),
                "Page.navigate",
                json!({"url": url}),
                timeout,
            );
            let sent = self.race_dialogs_since(before.clone(), reply, false);
            let v = match tokio::time::timeout_at(deadline, sent).await {
                Err(_) => return Ok(NavigateOutcome::LoadTimeout),
                Ok(Err(d)) => return Ok(NavigateOutcome::DialogPending(d)),
                Ok(Ok(r)) => r?,
            };
            // Right after a release, the navigation the beforeunload held
            // is cancelled and can take ours with it (net::ERR_ABORTED,
            // seen on Chromium 156): once more.
            let aborted = v.get("errorText").and_then(Value::as_str) == Some("net::ERR_ABORTED");
            if !(aborted && tries > 0) {
                break v;
            }
        };
        if let Some(err) = v
            .get("errorText")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty())
        {
            return Err(CdpCallError::Command(CommandError::Protocol {
                method: "Page.navigate".into(),
                code: 0,
                message: format!("navigation to {url} failed: {err}"),
                data: None,
            }));
        }
        // A same-document navigation has no load event.
        let Some(loader) = v.get("loaderId").and_then(Value::as_str).map(str::to_owned) else {
            return Ok(NavigateOutcome::Loaded);
        };
        tracing::debug!(%loader, url = %redact_url(url), "Page.navigate committed a navigation; waiting for its load");
        let load = async {
            loop {
                // The load event names our document's loader; the page being
                // left may still finish loading (once its dialog is
                // released), and a load whose commit our events missed (a
                // new tab's first navigation, a page attached while
                // blocked) is found by asking every LOAD_CHECK_INTERVAL.
                let heard = tokio::select! {
                    n = notices.recv() => match n {
                        Ok(Notice::PageLoaded { loader_id, .. })
                            if loader_id.as_deref() == Some(loader.as_str()) => Heard::Ours,
                        Ok(Notice::PageLoaded { .. }) => Heard::Check,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => Heard::Nothing,
                        Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
                    },
                    _ = tokio::time::sleep(LOAD_CHECK_INTERVAL) => Heard::Check,
                };
                match heard {
                    Heard::Ours => return,
                    Heard::Check if self.loaded(&conn, &session, &loader).await => {
                        // Chromium said so directly, and its events of the
                        // commit came before that reply. Under load the
                        // snapshot lagged: loaded, with the old url in it.
                        self.caught_up().await;
                        return;
                    }
                    Heard::Check | Heard::Nothing => {}
                }
            }
        };
        Ok(
            match tokio::time::timeout_at(deadline, self.race_dialogs_since(before, load, false))
                .await
            {
                Err(_) => NavigateOutcome::LoadTimeout,
                Ok(Err(d)) => NavigateOutcome::DialogPending(d),
                Ok(Ok(())) => NavigateOutcome::Loaded,
            },
        )
    }
}

/// Renames a completed download from Chromium's guid name (`from`) to
/// `name` in the same directory, or `name (2)`, `name (3)`, … when taken:
/// a hard link then an unlink, so an existing file is never replaced.
/// Returns the new path, or why it could not (the file stays at `from`).
fn save_download(from: &str, name: &str) -> Result<String, String> {
    let from = Path::new(from);
    let dir = from.parent().ok_or("no directory")?;
    let (stem, ext) = state::downloads::split_extension(name);
    for n in 1..=1000 {
        let candidate = if n == 1 {
            dir.join(name)
        } else {
            dir.join(format!("{stem} ({n}){ext}"))
        };
        match std::fs::hard_link(from, &candidate) {
            Ok(()) => {
                std::fs::remove_file(from).map_err(|e| e.to_string())?;
                return Ok(candidate.to_string_lossy().into_owned());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!("1000 files named like {name} already exist"))
}

/// Whether Chromium failed a command with `-32000 "Inspected target
/// navigated or closed"`: what a command queued behind a dialog gets when a
/// navigation closes that dialog — after the command ran (CDP facts).
fn lost_to_navigation(e: &CdpCallError) -> bool {
    matches!(e, CdpCallError::Command(CommandError::Protocol { code: -32000, message, .. })
        if message.contains("Inspected target navigated or closed"))
}

/// What `completed_calls` says of a call that ended in `e` after it
/// returned to the agent (interrupted or timed out).
fn describe_late(e: &CdpCallError) -> String {
    match e {
        CdpCallError::Command(CommandError::Disconnected { .. }) => {
            format!("{e}; the command may or may not have run before the connection dropped")
        }
        e if lost_to_navigation(e) => format!(
            "{e}: the command ran, but the page navigated before it replied, so its result is lost; do not resend it"
        ),
        e => e.to_string(),
    }
}

/// A command sent and not replied to yet (see [`super::state::Command`]).
struct Inflight {
    target: Target,
    purpose: Purpose,
    method: String,
    tab: u32,
}

type Attached = (String, Connection, EventStream, TargetInfo, SessionId);
/// Where a call goes: the connection, the session, and its tab's target id.
type Routed = (Connection, SessionId, Option<String>);
type Reconnect = BoxFuture<Result<Attached, StartError>>;

struct Driver {
    /// The temporary download directory, removed when the driver ends.
    _downloads_dir: Option<tempfile::TempDir>,
    /// Mirrors `conn` for [`Supervisor::live_page`].
    live: LiveConnection,
    /// What happened, by kind ([`Driver::announce`]).
    happened: Arc<EventLog>,
    state: Tabs,
    /// Boxed, as `local` is: read rarely, and every idle supervisor's task
    /// would hold them inline (0.5 KiB).
    opts: Box<SupervisorOptions>,
    ws_url: String,
    conn: Option<Connection>,
    events: Option<EventStream>,
    /// Commands sent with `send_in_order`, by request id: their replies
    /// come on the event stream, in wire order with the events.
    /// Commands sent and not replied to: where, why, the method, the tab.
    inflight: HashMap<u64, Inflight>,
    tickets: HashMap<u64, oneshot::Sender<Result<ClosedDialog, DialogError>>>,
    /// The agent's commands (`Supervisor::send_agent`) by call number.
    calls: HashMap<u64, oneshot::Sender<Result<Value, ReplyError>>>,
    next_ticket: u64,
    snapshot: watch::Sender<Arc<Snapshot>>,
    notices: Arc<NoticeHub>,
    requests: mpsc::UnboundedReceiver<Box<Request>>,
    /// The connection's new status, announced after the publish that shows
    /// it: whoever the notice wakes reads a snapshot that already says it.
    connection_owed: Option<ConnectionStatus>,
    /// getFrameTree / setAutoAttach commands not yet answered.
    tree_pending: usize,
    tree_done: Option<oneshot::Sender<()>>,
    /// Callers of [`Supervisor::caught_up`] waiting for the stream to reach their mark.
    catching_up: Vec<(StreamMark, oneshot::Sender<()>)>,
    reconnect: Option<Reconnect>,
    /// Attaching to another page after ours closed (same connection).
    failures: u32,
    shown_url: String,
    /// A Chromium we launched: dropped (killed) with the driver.
    local: Option<Box<LocalChromium>>,
    /// The session id of the event being handled: one buffer for every
    /// event, since the core only borrows it (a flood allocates none).
    event_session: SessionId,
}

async fn next_event(events: &mut Option<EventStream>) -> Option<Incoming> {
    match events {
        Some(e) => e.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

/// Awaits the future in `slot`, or never when there is none.
async fn poll_slot<T>(slot: &mut Option<BoxFuture<T>>) -> T {
    match slot {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

impl Driver {
    /// Records `notice` in the event log (what `browser_wait` and the
    /// snapshot resource watch) and sends it to live watchers.
    fn announce(&self, notice: Notice) {
        let top = self.state.current_target().map(|t| t.0.as_str());
        if let Some(kind) = EventKind::of(&notice, top) {
            self.happened.record(kind);
        }
        self.notices.send(notice);
    }

    fn set_conn(&mut self, conn: Option<Connection>) {
        *self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = conn.clone();
        self.conn = conn;
    }

    async fn run(mut self, cancel: CancellationToken) {
        loop {
            let timeout = if self.conn.is_some() {
                self.state.poll_timeout()
            } else {
                // Without a connection nothing can be answered: deadlines
                // keep their time and fire as soon as we are back.
                None
            };
            // Requests and timers before events: a flood of events must not
            // starve an answer or a watchdog (bug class 16). Each turn takes
            // at most EVENT_BURST events, then looks at the rest again.
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                Some(req) = self.requests.recv() => self.on_request(*req),
                // The Chromium we launched is dead: its endpoint will never
                // come back, so there is nothing to wait for.
                _ = tokio::time::sleep(LOCAL_EXIT_CHECK), if self.reconnect.is_some() && self.local.is_some() => {
                    if self.local.as_mut().is_some_and(|l| l.has_exited()) {
                        tracing::warn!(endpoint = %self.shown_url, "giving up: the Chromium we launched has exited");
                        self.connection_owed = Some(ConnectionStatus::Closed);
                        break;
                    }
                }
                _ = sleep_until(timeout) => {
                    self.sync_watched();
                    self.state.handle_timeout(Now::system());
                }
                ev = next_event(&mut self.events) => {
                    let mut next = ev;
                    // One clock read per burst (a burst takes well under a
                    // millisecond); drain it before publishing once.
                    let now = Now::system();
                    for handled in 1..=EVENT_BURST {
                        if !self.on_incoming(next, now) || handled == EVENT_BURST {
                            // (Taking one more here would lose it: the
                            // rest waits on the stream for the next turn.)
                            break;
                        }
                        match self.events.as_mut().map(|e| e.try_recv()) {
                            Some(Ok(inc)) => next = Some(inc),
                            _ => break,
                        }
                    }
                }
                r = poll_slot(&mut self.reconnect) => {
                    self.reconnect = None;
                    match r {
                        Ok((ws, conn, events, target, session)) => {
                            tracing::info!(endpoint = %self.shown_url, "reconnected and re-attached");
                            self.ws_url = ws;
                            self.failures = 0;
                            self.set_conn(Some(conn));
                            self.events = Some(events);
                            self.state.attach_page(target.target_id, session, &target.url, &target.title, Now::system());
                            self.connection_owed = Some(ConnectionStatus::Connected);
                        }
                        Err(e) => {
                            self.failures += 1;
                            if self.failures >= self.opts.max_reconnect_failures {
                                tracing::warn!(
                                    endpoint = %self.shown_url,
                                    failures = self.failures,
                                    "giving up: the CDP endpoint did not come back ({e})"
                                );
                                self.connection_owed = Some(ConnectionStatus::Closed);
                                break;
                            }
                            self.schedule_reconnect();
                        }
                    }
                }
            }
            self.flush();
            self.release_caught_up();
        }
        self.set_conn(None);
        self.events = None;
        self.publish(ConnectionStatus::Closed);
        if let Some(status) = self.connection_owed.take() {
            self.announce(connection_notice(status));
        }
        for (_, tx) in self.calls.drain() {
            let _ = tx.send(Err(ReplyError::Lost {
                reason: "the supervisor stopped".into(),
            }));
        }
        for (_, tx) in self.tickets.drain() {
            let _ = tx.send(Err(DialogError::Cdp {
                id: String::new(),
                error: "the supervisor stopped".into(),
            }));
        }
        // A Chromium we launched goes with us, its user-data-dir too, before
        // the task ends: `stop()` (and a server exiting after it) waits for
        // it, so nothing is left behind in the temp directory.
        // Boxed: inline, its 1.1 KiB would be part of every idle driver's task.
        if let Some(local) = self.local.take() {
            Box::pin(local.shutdown()).await;
        }
    }

    /// Handles one message from the stream; `false` once the connection is gone.
    fn on_incoming(&mut self, incoming: Option<Incoming>, now: Now) -> bool {
        self.sync_watched();
        match incoming {
            Some(Incoming::Event(event)) => {
                let mut buf = std::mem::replace(&mut self.event_session, SessionId(String::new()));
                let session = event.session_id().map(|s| {
                    buf.0.clear();
                    buf.0.push_str(s);
                    &buf
                });
                self.on_event(session, &event, now);
                self.event_session = buf;
            }
            Some(Incoming::Reply { id, result }) => {
                let cmd = self.inflight.remove(&id);
                crate::cdp::connection::give_back(&mut self.inflight);
                if let Some(cmd) = cmd {
                    let agent = matches!(cmd.purpose, Purpose::Agent { .. });
                    self.on_reply(cmd, result.map_err(reply_error));
                    if agent {
                        // The agent hears its reply before any later event of
                        // the burst is published (a dialog that opened just
                        // after it must not pass for one that interrupted it).
                        self.flush();
                    }
                }
            }
            Some(Incoming::Closed { reason }) => {
                self.on_disconnect(&reason);
                return false;
            }
            None => {
                self.on_disconnect("the event stream ended");
                return false;
            }
        }
        true
    }

    fn on_event(&mut self, session: Option<&SessionId>, raw: &RawEvent, now: Now) {
        let (method, params) = (raw.method(), raw.params());
        if method.starts_with("Fetch.") {
            // A paused request's body may be the dialog bridge's, secret
            // and all; a challenged one's headers may carry credentials.
            tracing::trace!(%method, session = ?session, "event");
        } else {
            tracing::trace!(%method, session = ?session, %params, "event");
        }
        if self.opts.dialog_bridge
            && method == "Page.javascriptDialogOpening"
            && !params.contains("\"beforeunload\"")
        {
            // The bridge replaces alert/confirm/prompt: a native one means
            // its request failed there (an opaque origin, no interception).
            tracing::warn!(
                endpoint = %self.shown_url,
                "a native dialog opened although the dialog bridge is on: the bridge did not reach us from that frame (opaque origin, or its request failed); a proxy that answers dialogs itself may close it first"
            );
        }
        let event = raw.parse();
        if let Event::Unparsed { method, error } = &event {
            tracing::debug!(%method, %error, "event params did not parse");
        }
        let detached = match &event {
            Event::DetachedFromTarget(d) => Some(d.session_id.clone()),
            _ => None,
        };
        self.state.on_event(session, event, now);
        if let Some(gone) = detached {
            self.session_gone(&gone);
        }
    }

    /// A session detached (its frame or tab went): Chromium answers none of
    /// the commands still in flight on it, so each gets its one reply now —
    /// "lost" — instead of at its deadline (an interrupted call on a removed
    /// iframe would otherwise wait `dialog_timeout_s` for its outcome).
    fn session_gone(&mut self, gone: &SessionId) {
        let reason = format!("its session {gone} detached (its frame or tab is gone)");
        self.fail_inflight(std::slice::from_ref(gone), &reason);
    }

    /// Every command in flight on `sessions` gets its one reply now: "lost",
    /// for `reason` (Chromium will never answer it).
    fn fail_inflight(&mut self, sessions: &[SessionId], reason: &str) {
        let mut lost: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, cmd)| matches!(&cmd.target, Target::Session(s) if sessions.contains(s)))
            .map(|(id, _)| *id)
            .collect();
        lost.sort_unstable();
        for id in lost {
            if let Some(cmd) = self.inflight.remove(&id) {
                let e = ReplyError::Lost {
                    reason: reason.to_owned(),
                };
                self.on_reply(cmd, Err(e));
            }
        }
    }

    fn on_reply(&mut self, cmd: Inflight, result: Result<Value, ReplyError>) {
        if let Err(e) = &result {
            tracing::debug!(method = %cmd.method, "command failed: {e}");
        }
        if counts_for_tree(&cmd.method) {
            self.tree_pending = self.tree_pending.saturating_sub(1);
        }
        self.state
            .on_reply(&cmd.target, cmd.tab, cmd.purpose, result, Now::system());
    }

    /// Tells the state whether a watcher listens, before each input: read
    /// then, not once per turn, a watcher that subscribed while the loop
    /// waited sees what came after.
    fn sync_watched(&mut self) {
        self.state.set_watched(self.notices.is_open());
    }

    fn on_request(&mut self, req: Request) {
        self.sync_watched();
        match req {
            Request::ReleaseUnanswerable { reply } => {
                let _ = reply.send(self.state.release_unanswerable());
            }
            Request::CaughtUp { mark, reply } => {
                self.catching_up.push((mark, reply));
                self.release_caught_up();
            }
            Request::Answer { req, by, reply } => {
                let ticket = self.next_ticket;
                self.next_ticket += 1;
                if self.conn.is_none() {
                    let _ = reply.send(Err(DialogError::Cdp {
                        id: req.dialog_id.unwrap_or_default(),
                        error: "the CDP connection dropped; reconnecting".into(),
                    }));
                    return;
                }
                match self.state.answer_dialog_as(req, ticket, by, Now::system()) {
                    Ok(()) => {
                        self.tickets.insert(ticket, reply);
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            Request::SelectTab { target_id, reply } => {
                let r = self.state.select(&target_id);
                // The caller reads the snapshot at once, on another thread:
                // it must already name the new current tab.
                self.flush();
                let _ = reply.send(r);
            }
            Request::Route {
                frame_id,
                target_id,
                allow_crashed,
                reply,
            } => {
                let r = match &self.conn {
                    None => Err(CdpCallError::NotConnected(
                        "the CDP connection dropped; reconnecting".into(),
                    )),
                    Some(conn) => {
                        let session = match frame_id {
                            Some(f) => self.state.route_frame(&f, target_id.as_deref()),
                            None => self.state.page_session(target_id.as_deref(), allow_crashed),
                        };
                        session
                            .map(|s| {
                                let tab = self.state.target_of_session(&s).map(|t| t.0.clone());
                                (conn.clone(), s, tab)
                            })
                            .map_err(CdpCallError::Route)
                    }
                };
                let _ = reply.send(r);
            }
            Request::Agent {
                target,
                method,
                params,
                timeout,
                reply,
            } => {
                let call = self.next_ticket;
                self.next_ticket += 1;
                self.calls.insert(call, reply);
                // Without a connection the flush feeds the core its error at once.
                self.state
                    .send_agent(call, target, &method, params, timeout);
            }
        }
    }

    /// Answers the [`Supervisor::caught_up`] callers whose mark the stream
    /// has reached (all of them once there is no stream: nothing more of
    /// that connection will come). Called after a publish.
    fn release_caught_up(&mut self) {
        let events = self.events.as_ref();
        self.catching_up
            .retain_mut(|(mark, _)| events.is_some_and(|e| !mark.reached_by(e)));
        // (retain_mut drops the released senders: their receivers wake.)
    }

    fn on_disconnect(&mut self, reason: &str) {
        if self.conn.is_none() {
            return;
        }
        tracing::warn!(endpoint = %self.shown_url, "CDP connection dropped ({reason}); reconnecting");
        self.set_conn(None);
        self.events = None;
        // The state forgets dead sessions but keeps dialogs and their
        // deadlines; every command still in flight gets its one reply now
        // (the driver contract): their stream is gone with the connection.
        self.state.connection_lost();
        let mut lost: Vec<(u64, Inflight)> = self.inflight.drain().collect();
        lost.sort_by_key(|(id, _)| *id);
        for (_, cmd) in lost {
            let e = ReplyError::Lost {
                reason: reason.to_owned(),
            };
            self.on_reply(cmd, Err(e));
        }
        self.tree_pending = 0;
        self.connection_owed = Some(ConnectionStatus::Reconnecting);
        self.failures = 0;
        self.schedule_reconnect();
    }

    fn schedule_reconnect(&mut self) {
        let delay = backoff(self.opts.reconnect_backoff_start, self.failures);
        let url = self.ws_url.clone();
        // The tab we were on, else another we supervised, else the tab in
        // front: a tab that closed meanwhile, or a browser restarted behind
        // the URL (every id new), is no reason to fail.
        let ours = self.state.target_ids_current_first();
        let timeout = self.opts.command_timeout;
        let attach_timeout = self.opts.attach_timeout;
        let headers = self.opts.cdp_headers.clone();
        self.reconnect = Some(Box::pin(async move {
            tokio::time::sleep(delay).await;
            let attempt = async {
                // A browser restarted on the same port has a new ws path: re-resolve from http.
                let ws = match http_of(&url) {
                    Some(http) => resolve_ws_url_with(&http, &headers)
                        .await
                        .unwrap_or(url.clone()),
                    None => url.clone(),
                };
                let (conn, events) = Connection::connect_with(&ws, &headers).await?;
                conn.set_event_filter(Event::handled);
                let http = http_of(&ws);
                let front = http.as_deref().map(|h| (h, &headers));
                let (t, s) = pick_and_attach(&conn, None, &ours, front, timeout).await?;
                Ok((ws, conn, events, t, s))
            };
            tokio::time::timeout(attach_timeout, attempt)
                .await
                .map_err(|_| StartError::Timeout {
                    url: redact_url(&url),
                    after: attach_timeout,
                })?
        }));
    }

    /// Performs every output of the state machine and republishes the snapshot.
    fn flush(&mut self) {
        // Notices and answers go out after the snapshot is published, so
        // whoever they wake reads a snapshot that already shows them.
        // Sized once: a burst's notices would grow it seven times.
        let mut deliver = Vec::with_capacity(self.state.outputs_waiting());
        while let Some(out) = self.state.poll_output() {
            match out {
                Output::Send(cmd) => {
                    let Some(conn) = &self.conn else {
                        // Not sent: its one reply is this error (the driver
                        // contract); the core decides what to do again.
                        let e = ReplyError::Lost {
                            reason: "not connected; reconnecting".into(),
                        };
                        self.state.on_reply(
                            &cmd.target,
                            cmd.tab,
                            cmd.purpose,
                            Err(e),
                            Now::system(),
                        );
                        continue;
                    };
                    if counts_for_tree(&cmd.method) {
                        self.tree_pending += 1;
                    }
                    let id = conn.send_in_order(
                        cmd.target.session(),
                        &cmd.method,
                        cmd.params,
                        cmd.timeout.unwrap_or(self.opts.command_timeout),
                    );
                    self.inflight.insert(
                        id,
                        Inflight {
                            target: cmd.target,
                            purpose: cmd.purpose,
                            method: cmd.method,
                            tab: cmd.tab,
                        },
                    );
                }
                // Before the publish: the snapshot that says completed
                // shows the file under its own name.
                Output::SaveDownload { id, from, name } => {
                    let saved = save_download(&from, &name);
                    self.state.download_saved(&id, saved);
                }
                out @ (Output::Notice(_)
                | Output::AnswerDone { .. }
                | Output::AgentReply { .. }) => deliver.push(out),
            }
        }
        let status = if self.conn.is_some() {
            ConnectionStatus::Connected
        } else {
            ConnectionStatus::Reconnecting
        };
        self.publish(status);
        // After the publish, like the notices: the attach it ends returns to
        // a caller who reads the snapshot at once, on another thread. A page
        // blocked by a dialog answers no getFrameTree: attach is done with
        // what the target info and auto-attach told us.
        if (self.tree_pending == 0 || self.state.page_blocked())
            && let Some(tx) = self.tree_done.take()
        {
            let _ = tx.send(());
        }
        if let Some(status) = self.connection_owed.take() {
            self.announce(connection_notice(status));
        }
        let mut crashed = Vec::new();
        for out in deliver {
            match out {
                Output::Notice(n) => {
                    if let Notice::TabCrashed { target_id } = &n {
                        crashed.push(target_id.clone());
                    }
                    self.announce(n)
                }
                Output::AnswerDone { ticket, result } => {
                    if let Some(tx) = self.tickets.remove(&ticket) {
                        let _ = tx.send(*result);
                    }
                }
                Output::AgentReply { call, result } => {
                    if let Some(tx) = self.calls.remove(&call) {
                        let _ = tx.send(result);
                    }
                }
                Output::Send(_) | Output::SaveDownload { .. } => {}
            }
        }
        // A crashed renderer answers nothing: the calls in flight on its tab
        // end now, not at their deadlines.
        for target_id in &crashed {
            let sessions = self.state.sessions_of(target_id);
            let reason = RouteError::Crashed {
                target_id: target_id.clone(),
            }
            .to_string();
            self.fail_inflight(&sessions, &reason);
        }
        if !crashed.is_empty() {
            self.flush();
        }
    }

    fn publish(&mut self, status: ConnectionStatus) {
        let mut snap = self.state.snapshot();
        snap.connection = status;
        self.snapshot.send_if_modified(|old| {
            if **old == snap {
                false
            } else {
                *old = Arc::new(snap);
                true
            }
        });
    }
}

/// Spawns the driver's task; `exited` is cancelled however it ends — a
/// panic included, so a dead supervisor never reports itself running (the
/// registry would keep serving it).
///
/// The guard rides in the `map` closure, dropped with the future however
/// it ends. (An `async move { run.await }` wrapper would hold `run` twice —
/// the captured value and the awaited one — and wrapping `driver.run()` in
/// one more block held the driver twice too: 5.3 KiB per supervisor's task
/// instead of 1.4.)
fn spawn_owned(
    run: impl Future<Output = ()> + Send + 'static,
    exited: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    use futures_util::FutureExt;
    let guard = exited.drop_guard();
    tokio::spawn(run.map(move |()| drop(guard)))
}

/// The connection's error in the core's terms.
fn reply_error(e: CommandError) -> ReplyError {
    match e {
        CommandError::Protocol {
            code,
            message,
            data,
            ..
        } => ReplyError::Protocol {
            code,
            message,
            data,
        },
        CommandError::Timeout { after, .. } => ReplyError::Timeout { after },
        CommandError::Disconnected { reason, .. } => ReplyError::Lost { reason },
    }
}

/// The core's reply error as the connection's, for the agent's `method`.
fn command_error(method: &str, e: ReplyError) -> CommandError {
    let method = method.to_owned();
    match e {
        ReplyError::Protocol {
            code,
            message,
            data,
        } => CommandError::Protocol {
            method,
            code,
            message,
            data,
        },
        ReplyError::Timeout { after } => CommandError::Timeout { method, after },
        ReplyError::Lost { reason } => CommandError::Disconnected { method, reason },
    }
}

/// The commands an attach waits for (a blocked page's `Page.enable` ends
/// the wait through `page_blocked` instead): once they replied, the frame
/// tree is complete and the page's events flow.
fn counts_for_tree(method: &str) -> bool {
    matches!(
        method,
        "Page.getFrameTree" | "Target.setAutoAttach" | "Page.enable"
    )
}

fn connection_notice(status: ConnectionStatus) -> Notice {
    Notice::Connection { status }
}

fn backoff(start: Duration, failures: u32) -> Duration {
    start
        .saturating_mul(1u32 << failures.min(10))
        .min(RECONNECT_BACKOFF_MAX)
}

/// `ws://host:port/devtools/…` → `http://host:port`.
fn http_of(ws: &str) -> Option<String> {
    let u = url::Url::parse(ws).ok()?;
    // Only a plain DevTools browser socket is re-resolved; a grid's or a
    // provider's URL (a token in the query, another path) is its own endpoint.
    if !u.path().starts_with("/devtools/browser/") || u.query().is_some() {
        return None;
    }
    let scheme = match u.scheme() {
        "ws" => "http",
        "wss" => "https",
        _ => return None,
    };
    Some(format!(
        "{scheme}://{}:{}",
        u.host_str()?,
        u.port_or_known_default()?
    ))
}

/// Whether `ws` is a page-level DevTools socket ([`is_page_level_path`]).
fn is_page_level(ws: &str) -> bool {
    url::Url::parse(ws).is_ok_and(|u| is_page_level_path(u.path()))
}

/// The target a page-level socket belongs to (`Target.getTargetInfo`
/// without a `targetId` answers for the connection's own target).
async fn own_target(conn: &Connection, timeout: Duration) -> Result<String, StartError> {
    let info = conn
        .send(None, "Target.getTargetInfo", json!({}), timeout)
        .await?;
    info.pointer("/targetInfo/targetId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            StartError::Command(CommandError::Protocol {
                method: "Target.getTargetInfo".into(),
                code: 0,
                message: "the reply names no targetId".into(),
                data: None,
            })
        })
}

/// Picks the page to supervise and attaches to it with a flatten session:
/// `target_id` when given (an error when it names no page); else the first
/// page of `prefer` that exists (the tabs we supervised); else the only
/// page; else, among several, the tab in front (the first page of `front`'s
/// `/json/list`, asked only then: an HTTP request per attach cost 7 ms);
/// else a new blank one.
async fn pick_and_attach(
    conn: &Connection,
    target_id: Option<&str>,
    prefer: &[String],
    front: Option<(&str, &CdpHeaders)>,
    timeout: Duration,
) -> Result<(TargetInfo, SessionId), StartError> {
    // Target.targetInfoChanged carries the page title. Both go out at
    // once: one round trip to the browser, not two, before the attach.
    let discover = conn.send(
        None,
        "Target.setDiscoverTargets",
        json!({"discover": true}),
        timeout,
    );
    let targets = conn.send(None, "Target.getTargets", json!({}), timeout);
    discover.await?;
    let targets = targets.await?;
    let infos: Vec<TargetInfo> = targets
        .get("targetInfos")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let pages: Vec<&TargetInfo> = infos.iter().filter(|t| t.target_type == "page").collect();
    let target = match target_id {
        Some(want) => {
            let listed = || {
                pages
                    .iter()
                    .map(|t| format!("{} ({})", t.target_id, t.url))
                    .collect()
            };
            match infos.iter().find(|t| t.target_id.0 == want) {
                Some(t) if t.target_type == "page" => t.clone(),
                Some(t) => {
                    return Err(StartError::NotAPage {
                        target_id: want.to_owned(),
                        target_type: t.target_type.clone(),
                        pages: listed(),
                    });
                }
                None => {
                    return Err(StartError::NoSuchTarget {
                        target_id: want.to_owned(),
                        pages: listed(),
                    });
                }
            }
        }
        None => match default_page(prefer, &pages, front).await {
            Some(t) => t.clone(),
            None => {
                let created = conn
                    .send(
                        None,
                        "Target.createTarget",
                        json!({"url": "about:blank"}),
                        timeout,
                    )
                    .await?;
                TargetInfo {
                    target_id: TargetId(
                        created
                            .get("targetId")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    ),
                    target_type: "page".into(),
                    title: String::new(),
                    url: "about:blank".into(),
                    attached: false,
                    parent_frame_id: None,
                    opener_id: None,
                }
            }
        },
    };
    let attached = conn
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target.target_id.0, "flatten": true}),
            timeout,
        )
        .await?;
    let session = attached
        .get("sessionId")
        .and_then(Value::as_str)
        .map(SessionId::from)
        .ok_or_else(|| CommandError::Protocol {
            method: "Target.attachToTarget".into(),
            code: 0,
            message: "the reply has no sessionId".into(),
            data: None,
        })?;
    Ok((target, session))
}

/// With no `target_id`: the first of `prefer` that exists, else the only
/// page, else among several the tab in front (`front`'s `/json/list`).
async fn default_page<'a>(
    prefer: &[String],
    pages: &[&'a TargetInfo],
    front: Option<(&str, &CdpHeaders)>,
) -> Option<&'a TargetInfo> {
    if let Some(t) = first_of(prefer, pages) {
        return Some(t);
    }
    match (pages, front) {
        ([_, _, ..], Some((http, headers))) => {
            let order = pages_in_front_order(http, headers).await;
            first_of(&order, pages).or(pages.first().copied())
        }
        _ => pages.first().copied(),
    }
}

/// The first of `wanted` (target ids) that `pages` has.
fn first_of<'a>(wanted: &[String], pages: &[&'a TargetInfo]) -> Option<&'a TargetInfo> {
    wanted
        .iter()
        .find_map(|want| pages.iter().find(|t| t.target_id.0 == *want).copied())
}

/// The dialogs pending when a call was about to be sent
/// ([`Supervisor::dialogs_before`]); its race counts any other as new.
#[derive(Clone)]
pub(crate) struct DialogsBefore {
    /// Marked seen at that moment: a later snapshot wakes the race at once.
    snaps: watch::Receiver<Arc<Snapshot>>,
    ids: Vec<String>,
    /// The tab the call goes to (its target id), when known.
    tab: Option<String>,
    /// A dialog (or one we never saw) already blocked the page.
    blocked: bool,
    /// The call loads a document (`browser_navigate`): an HTTP challenge
    /// in its tab holds it too, though it blocks no renderer.
    loads: bool,
}

/// Each of `ours` (target id, URL as last known) that Chromium lists in
/// `infos`, with its URL and title there ([`Supervisor::live_tabs`]).
fn live_pages(ours: Vec<(String, String)>, infos: &[TargetInfo]) -> Vec<LivePage> {
    ours.into_iter()
        .filter_map(|(id, known)| {
            let t = infos.iter().find(|t| t.target_id.0 == id)?;
            Some(LivePage {
                url: live_or_known(&t.url, &known).to_owned(),
                title: t.title.clone(),
                target_id: id,
            })
        })
        .collect()
}

/// The URL Chromium reports now, or the last known one while it reports
/// none: a tab between two documents can answer `""` (seen on a page
/// navigating every 20 ms: 3 snapshots in 60 said `url: ""`).
fn live_or_known<'a>(live: &'a str, known: &'a str) -> &'a str {
    if live.is_empty() { known } else { live }
}

#[cfg(test)]
mod tests {
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
        };
        let ours = || {
            vec![
                ("T1".to_owned(), "http://a.test/1".to_owned()),
                ("T2".to_owned(), "http://a.test/2".to_owned()),
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
        assert_eq!(live_or_known("", "http://a.test/1"), "http://a.test/1");
        assert_eq!(
            live_or_known("about:blank", "http://a.test/1"),
            "about:blank"
        );
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
