//! The agent surface as plain functions, JSON in and JSON out. The MCP
//! server and the CLI are thin shells over [`AgentSession`].
//!
//! Each tool is declared once, in `tools/catalog.rs`: its name, gating,
//! arguments (with their JSON Schema), description, output schema and the
//! checks its arguments pass ([`TOOLS`]; [`ToolCall::parse`] runs them).
//! Names and arguments are a contract, see DESIGN.md.
//!
//! A failure the agent can act on is a [`ToolError`] whose text says what was
//! wrong and what to do (an MCP tool result with `isError`).

use crate::browser::provider::BrowserProvider;
use crate::cdp::endpoint::CdpHeaders;
use crate::cdp::protocol::DialogType;
use crate::changes::{Seen, Told};
use crate::config::{CloudProvider, Config, Isolation};
use crate::supervisor::act::{
    ACTION_TIMEOUT, ActError, FillOutcome, FillStop, OutlineMode, Page, PageOutline, READ_TIMEOUT,
};
use crate::supervisor::calls::CompletedCall;
use crate::supervisor::driver::{
    CallOutcome, CdpCallError, ContextOptions, LivePage, NavigateOutcome, Supervisor,
    SupervisorOptions,
};
use crate::supervisor::events::EventKind;
use crate::supervisor::origins::NavigationPolicy;
use crate::supervisor::registry::{Endpoint, Lease, Registry};
use crate::supervisor::snapshot::{
    ClosedBy, ConnectionStatus, List, PendingDialog, Snapshot, TabView,
};
use crate::supervisor::state::{self, DialogAction, DialogError, DialogRequest, Login};
use crate::supervisor::wording;
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Mutex as AsyncMutex;

mod catalog;
mod handoff;
pub use handoff::{HANDOFF_DEFAULT_TIMEOUT_S, HANDOFF_MAX_TIMEOUT_S, HandoffEnd, handoff_result};
pub mod text;

/// A flat JSON Schema of an arguments type, as tools are listed (for the
/// MCP layer's own tools, `browser_open` and `browser_close`).
pub(crate) use catalog::input_schema as args_schema;
pub use catalog::{ALL_TOOLS, Definition, Hints, TOOLS, ToolSpec, tool};

/// `browser_tabs`' actions.
pub const TAB_ACTIONS: [&str; 4] = ["list", "new", "select", "close"];
/// `browser_wait`'s default `timeout_s`.
pub const WAIT_DEFAULT_TIMEOUT_S: f64 = 30.0;
/// `browser_wait`'s largest `timeout_s`.
pub const WAIT_MAX_TIMEOUT_S: f64 = 300.0;
/// `browser_wait`'s events, each with the kinds of [`EventKind`] it counts.
/// A page found blocked by a dialog opened before we attached counts as a
/// dialog opening.
pub const WAIT_EVENTS: [(&str, &[EventKind]); 7] = [
    (
        "dialog_opened",
        &[EventKind::DialogOpened, EventKind::PageBlocked],
    ),
    ("dialog_closed", &[EventKind::DialogClosed]),
    ("page_loaded", &[EventKind::PageLoaded]),
    ("tab_opened", &[EventKind::TabOpened]),
    ("download_done", &[EventKind::DownloadDone]),
    // A person handed the task back (`browser_handoff`): not a browser event.
    ("handed_back", &[]),
    (
        "any",
        &[
            EventKind::DialogOpened,
            EventKind::PageBlocked,
            EventKind::DialogClosed,
            EventKind::PageLoaded,
            EventKind::TabOpened,
            EventKind::DownloadStarted,
            EventKind::DownloadDone,
        ],
    ),
];
/// `browser_tabs`' deadline for creating or closing a tab.
pub const TABS_TIMEOUT: Duration = Duration::from_secs(10);
/// `browser_navigate`'s deadline for the load event.
pub const NAVIGATE_TIMEOUT: Duration = Duration::from_secs(30);
/// `browser_cdp`'s default `timeout_s`.
pub const CDP_DEFAULT_TIMEOUT_S: f64 = 10.0;
/// `browser_cdp`'s largest `timeout_s`.
pub const CDP_MAX_TIMEOUT_S: f64 = 300.0;
/// The CDP method `browser_cdp` runs through the supervisor
/// ([`Supervisor::create_target`]): a tab it opens is supervised first.
const CREATE_TARGET: &str = "Target.createTarget";

/// An action's `note` when the navigation it started had no outcome
/// within [`ACTION_TIMEOUT`] (a slow page): the result came anyway.
const NAVIGATION_UNSETTLED_NOTE: &str = "the navigation this started had not finished after 10 s; browser_snapshot or browser_wait(page_loaded) shows where the page is";

/// The most lines of the outline an action returns with `snapshot: true`
/// (its first part; `page_cursor` gives the rest). The pages of a whole task
/// (S11: a sign-in, a list of 60 products, a product, a cart, an 8-field
/// form) are 15–200 lines and come whole; a long document (the Rust `Vec`
/// page, thousands of lines) costs a seventh of a browser_snapshot part,
/// and the agent narrows with find or continues with the cursor.
pub const NEW_PAGE_MAX_LINES: usize = 300;

/// How long a tool waits for Chromium to tell the page's URL and title now
/// (`Target.getTargetInfo`) before it falls back to the last known ones.
pub const LIVE_READ_TIMEOUT: Duration = Duration::from_secs(1);
/// How long `browser_dialog` waits, after its answer, for the calls the
/// dialog interrupted to complete (DESIGN: "Calls a dialog interrupts").
pub const COMPLETED_CALLS_WAIT: Duration = Duration::from_secs(1);
/// The longest string a page wrote (a URL, a title, a dialog's URL) that
/// a tool result carries whole, in chars; a longer one is cut, saying so.
/// A page can set a 1.5 MB URL (`history.replaceState`), and the MCP SDKs
/// over HTTP fail on a server-sent event past 1 MiB: the agent would see
/// nothing at all. The outline (`page`) is bounded by its lines.
pub const PAGE_STRING_MAX: usize = 8 * 1024;

/// Cuts every string in `v` longer than [`PAGE_STRING_MAX`] chars, but the
/// outline (`page`), the agent's own CDP replies (`browser_cdp`'s raw
/// `result`, and `completed_calls`: the late outcomes of its calls).
pub fn cap_page_strings(v: &mut Value, cdp_reply: bool) {
    match v {
        Value::String(s) if s.len() > PAGE_STRING_MAX => {
            let chars = s.chars().count();
            if chars > PAGE_STRING_MAX {
                let kept: String = s.chars().take(PAGE_STRING_MAX).collect();
                *s = format!("{kept}… (cut: {chars} chars in all)");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| cap_page_strings(i, false)),
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                if k == "page" || k == "completed_calls" || (cdp_reply && k == "result") {
                    continue;
                }
                cap_page_strings(item, false);
            }
        }
        _ => {}
    }
}

/// `browser_snapshot`'s outline of a current tab whose renderer crashed
/// (`Inspector.targetCrashed`): there is no document to read.
const CRASHED_LINE: &str = "- this tab's renderer crashed: its page is gone (nothing to read or act on); browser_navigate reloads it, browser_tabs close closes it";

/// `browser_snapshot`'s note before any browser exists (local launch).
pub const NO_BROWSER_NOTE: &str =
    "no browser is running yet: browser_navigate starts one (or browser_connect attaches to one)";
/// What a call says when the session's browser connection ended by itself.
pub const ENDED_NOTE: &str = "the connection to the browser ended (the browser closed or crashed, or its endpoint did not come back); the snapshot shows its last state. Call browser_navigate to start a browser again, or browser_connect to attach to one";
/// `browser_snapshot`'s note while the supervisor is being started.
pub const CONNECTING_NOTE: &str =
    "the supervisor is attaching to the browser; call browser_snapshot again in a moment";

/// A tool failure the agent can act on; `Display` is the text it reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// One line for the agent: what failed and what to do about it.
    pub message: String,
    /// Structured details for the agent (the MCP result's
    /// `structuredContent`), e.g. `{interrupted_by_dialog: true, call_id, …}`.
    pub structured: Option<Value>,
}

impl ToolError {
    /// An error whose every quoted part is capped ([`wording::capped_quotes`]):
    /// whatever of the agent's arguments it quotes, at most 200 characters
    /// of each (DESIGN "Security").
    fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: wording::capped_quotes(&message.into()),
            structured: None,
        }
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<CdpCallError> for ToolError {
    fn from(e: CdpCallError) -> Self {
        ToolError::new(e.to_string())
    }
}

/// One agent task's view of the browser: its task id in a [`Registry`], the
/// config, and the endpoint `browser_connect` chose (if any).
pub struct AgentSession {
    registry: Registry,
    task_id: String,
    config: Config,
    connected: Mutex<Option<(String, Option<String>)>>,
    /// Set by `browser_disconnect`: nothing attaches again until the next
    /// `browser_navigate` or `browser_connect`.
    detached: AtomicBool,
    /// The supervisor this session used last (see `ended`).
    last: Mutex<Option<Supervisor>>,
    /// Bumped whenever this task's supervisor may have changed (started,
    /// replaced, stopped): what the snapshot resource's watcher follows.
    supervisor_changes: tokio::sync::watch::Sender<u64>,
    /// The cloud provider (`browser.cloud_provider`), when it has sessions.
    provider: Option<Arc<dyn BrowserProvider>>,
    /// Held while a provider session is created and attached, so that two
    /// first calls at once make one session. The session itself is the
    /// registry's lease for this task (released with the task).
    provider_lock: AsyncMutex<()>,
    /// Set while a provider session is being created: the API call comes
    /// before the registry's start, and readers must not wait on it either.
    provider_creating: AtomicBool,
    /// What this session's previous tool result covered, with the
    /// supervisor generation it was of ([`crate::changes`]).
    seen: Mutex<Option<(u64, Seen)>>,
    /// The live view's base URL when a server shares its listener
    /// (`mcp --http`); else one is opened on `browser.live.addr`.
    live_base: Option<String>,
}

/// Longest `find` text `browser_snapshot` takes.
pub const FIND_MAX_CHARS: usize = 200;

/// What `browser_snapshot` gives of the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageRequest {
    /// No outline (`page: false`).
    Omit,
    /// A fresh outline in this mode (new refs).
    Read(OutlineMode),
    /// The next part of the last outline (`page_cursor`).
    Continue(String),
}

/// `browser_click`'s buttons.
pub const CLICK_BUTTONS: [&str; 3] = ["left", "middle", "right"];
/// `browser_click`'s largest `click_count` (a triple click selects a paragraph).
pub const CLICK_COUNT_MAX: u32 = 3;

/// An action on the page (DESIGN "Acting on the page"), its arguments
/// checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `browser_click`.
    Click {
        /// The element's ref.
        r: String,
        /// One of [`CLICK_BUTTONS`].
        button: String,
        /// 1 to [`CLICK_COUNT_MAX`].
        count: u32,
    },
    /// `browser_type`.
    Type {
        /// The element's ref.
        r: String,
        /// The text to type.
        text: String,
        /// Press Enter after it.
        submit: bool,
    },
    /// `browser_press_key`: the DOM key name.
    Key(String),
    /// `browser_select_option`.
    Select {
        /// The element's ref.
        r: String,
        /// Not empty.
        values: Vec<String>,
    },
    /// `browser_fill_form`: (ref, value) in order, 1 to
    /// [`crate::supervisor::act::FILL_MAX_FIELDS`].
    FillForm {
        /// Each field's ref and value (`"true"`/`"false"` for a checkbox).
        fields: Vec<(String, String)>,
    },
}

impl Action {
    fn tool(&self) -> &'static str {
        match self {
            Action::Click { .. } => "browser_click",
            Action::Type { .. } => "browser_type",
            Action::Key(_) => "browser_press_key",
            Action::Select { .. } => "browser_select_option",
            Action::FillForm { .. } => "browser_fill_form",
        }
    }
}

/// A tool call whose arguments passed every check that needs no browser:
/// the JSON shape, URL scheme and navigation policy, CDP method name and
/// params, timeouts, `browser_wait` event, dialog action. What
/// [`AgentSession::call`] runs; pure, so it is fuzzed on its own.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolCall {
    /// `browser_navigate`.
    Navigate {
        /// An absolute URL of an allowed scheme that the policy allows.
        url: String,
        /// Return the loaded page's outline too.
        snapshot: bool,
    },
    /// `browser_snapshot`.
    Snapshot {
        /// What it gives of the page.
        page: PageRequest,
    },
    /// `browser_click`, `browser_type`, `browser_press_key`,
    /// `browser_select_option` or `browser_fill_form`.
    Act {
        /// The action.
        action: Action,
        /// Return the page's outline once it is done.
        snapshot: bool,
    },
    /// `browser_dialog`.
    Dialog {
        /// `accept`, `dismiss` or `ask_user`.
        action: DialogChoice,
        /// For a prompt.
        prompt_text: Option<String>,
        /// Which dialog.
        dialog_id: Option<String>,
        /// For a file chooser accepted: the paths to set.
        files: Option<Vec<String>>,
        /// For an `http_auth` accepted: the username and password.
        login: Option<Login>,
    },
    /// `browser_cdp`.
    Cdp {
        /// `Domain.method`.
        method: String,
        /// A JSON object.
        params: Value,
        /// An OOPIF to run it in.
        frame_id: Option<String>,
        /// A supervised tab to run it on (default: the current tab).
        target_id: Option<String>,
        /// Within (0, [`CDP_MAX_TIMEOUT_S`]].
        timeout_s: f64,
    },
    /// `browser_tabs`.
    Tabs {
        /// `list`, `new`, `select` or `close` (checked by the tool).
        action: String,
        /// The tab, for `select` and `close`.
        target_id: Option<String>,
        /// For `new`: a URL the navigation policy allows.
        url: Option<String>,
    },
    /// `browser_wait`.
    Wait {
        /// One of [`WAIT_EVENTS`].
        event: &'static str,
        /// Within (0, [`WAIT_MAX_TIMEOUT_S`]].
        timeout_s: f64,
        /// An `event_seq` read earlier.
        since: Option<u64>,
    },
    /// `browser_connect`.
    Connect {
        /// Not empty.
        cdp_url: String,
        /// Empty is `None`.
        target_id: Option<String>,
    },
    /// `browser_disconnect`.
    Disconnect,
    /// `browser_handoff`.
    Handoff {
        /// Why, for the person (at most [`handoff::REASON_MAX_CHARS`]).
        reason: String,
        /// Within (0, [`HANDOFF_MAX_TIMEOUT_S`]].
        timeout_s: f64,
        /// Wait for the hand-back.
        wait: bool,
    },
}

/// `browser_dialog`'s `action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialogChoice {
    /// Answer it.
    Answer(DialogAction),
    /// Hand it to the human ([`ASK_USER`]).
    AskUser,
}

impl DialogChoice {
    /// The spelling `browser_dialog` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            DialogChoice::Answer(DialogAction::Accept) => "accept",
            DialogChoice::Answer(DialogAction::Dismiss) => "dismiss",
            DialogChoice::AskUser => ASK_USER,
        }
    }
}

impl ToolCall {
    /// Checks tool `name`'s JSON `args` (an object, or null for none).
    ///
    /// # Errors
    /// An unknown tool, or arguments the tool refuses (the message says
    /// what is wrong and what is allowed).
    pub fn parse(
        name: &str,
        args: Value,
        policy: &NavigationPolicy,
    ) -> Result<ToolCall, ToolError> {
        let Some(tool) = catalog::tool(name) else {
            return Err(ToolError::new(format!(
                "unknown tool {name:?}; tools: {}",
                ALL_TOOLS.join(", ")
            )));
        };
        tool.parse(args, policy)
    }
}

/// `browser_navigate`'s URL: absolute, an allowed scheme, and allowed by
/// the navigation policy — checked before anything is sent.
fn check_navigation(url: &str, policy: &NavigationPolicy) -> Result<(), ToolError> {
    check_url(url)?;
    policy.check(url).map_err(|r| {
        ToolError::new(format!(
            "{} is not allowed by the navigation policy (rule {}); the browser refuses this document, whoever asks for it. Navigate to an allowed URL instead",
            wording::cut(url),
            r.rule
        ))
    })
}

/// The `url` of a `browser_cdp` `Target.createTarget` (CDP: empty for
/// `about:blank`) or `Page.navigate`, checked before anything is sent: an
/// absolute URL of an allowed scheme ([`check_url`]: not `view-source:`,
/// `chrome:`, `devtools:` or a relative one, which the policy's
/// interception of documents never sees). A new tab's URL must also be
/// allowed by the navigation policy, as `browser_tabs new`'s; a
/// `Page.navigate` the policy refuses is stopped by the browser's
/// interception, and lands in `blocked_navigations`.
fn check_cdp_navigation(
    method: &str,
    params: &Value,
    policy: &NavigationPolicy,
) -> Result<(), ToolError> {
    let url = params.get("url").and_then(Value::as_str);
    match (method, url) {
        (CREATE_TARGET, Some(url)) if !url.is_empty() => check_navigation(url, policy),
        ("Page.navigate", Some(url)) => check_url(url),
        _ => Ok(()),
    }
}

/// `browser_cdp`'s `params`: an object (none: `{}`).
fn cdp_params(params: Option<Value>) -> Result<Value, ToolError> {
    match params {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Object(o)) => Ok(Value::Object(o)),
        Some(other) => Err(ToolError::new(format!(
            "params must be a JSON object (the CDP method's parameters), not {}",
            wording::cut(&other.to_string())
        ))),
    }
}

/// A `timeout_s`: `default` when absent, else finite, > 0 and ≤ `max`.
fn seconds(timeout_s: Option<f64>, default: f64, max: f64) -> Result<f64, ToolError> {
    let timeout_s = timeout_s.unwrap_or(default);
    if timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= max {
        Ok(timeout_s)
    } else {
        Err(ToolError::new(format!(
            "timeout_s {} is not allowed; give seconds > 0 and ≤ {max}",
            wording::number(timeout_s)
        )))
    }
}

/// `browser_wait`'s event, with the kinds it counts.
fn wait_event(event: &str) -> Result<(&'static str, &'static [EventKind]), ToolError> {
    WAIT_EVENTS
        .iter()
        .find(|(name, _)| *name == event)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = WAIT_EVENTS.iter().map(|(n, _)| *n).collect();
            ToolError::new(format!(
                "event {event:?} is not one browser_wait knows; allowed: {}",
                names.join(", ")
            ))
        })
}

fn check_cdp_url(cdp_url: &str) -> Result<(), ToolError> {
    if cdp_url.trim().is_empty() {
        return Err(ToolError::new(
            "cdp_url is empty; give http://host:port, ws://host:port or a ws://…/devtools/browser/… URL",
        ));
    }
    Ok(())
}

impl AgentSession {
    /// A session for `task_id`, whose supervisors live in `registry`.
    pub fn new(registry: Registry, task_id: impl Into<String>, config: Config) -> AgentSession {
        let provider = config.browser.provider();
        AgentSession {
            registry,
            task_id: task_id.into(),
            config,
            connected: Mutex::new(None),
            detached: AtomicBool::new(false),
            last: Mutex::new(None),
            supervisor_changes: tokio::sync::watch::Sender::new(0),
            seen: Mutex::new(None),
            provider,
            provider_lock: AsyncMutex::new(()),
            provider_creating: AtomicBool::new(false),
            live_base: None,
        }
    }

    /// The same, with the live view served under `base` (`http://host:port`
    /// of a server that shares its listener).
    pub fn with_live_base(mut self, base: impl Into<String>) -> AgentSession {
        self.live_base = Some(base.into());
        self
    }

    /// The same, with this provider serving `browser.cloud_provider` (for
    /// embedding another backend, and for tests).
    pub fn with_provider(mut self, provider: Arc<dyn BrowserProvider>) -> AgentSession {
        self.provider = Some(provider);
        self
    }

    /// The same, with this isolation (DESIGN "Many tasks, one browser"):
    /// `Context` puts the task in a browser context of its own in the
    /// registry's shared browser (or the `cdp_url`'s); `Browser` gives it a
    /// browser of its own. The entry point of `browser_open(isolation)`.
    pub fn with_isolation(mut self, isolation: Isolation) -> AgentSession {
        self.config.browser.isolation = Some(isolation);
        self
    }

    /// Whether this task lives in a browser context of its own.
    fn in_context(&self) -> bool {
        self.config.browser.isolation == Some(Isolation::Context)
    }

    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tool names this session offers: without a CDP endpoint (a
    /// REST-only backend) the tools that need one are hidden.
    pub fn tool_names(&self) -> Vec<&'static str> {
        TOOLS
            .iter()
            .filter(|t| self.config.has_cdp() || !t.needs_cdp)
            .map(|t| t.name)
            .collect()
    }

    /// Calls tool `name` with JSON `args` (an object, or null for none).
    /// A successful result carries `changes` when something happened since
    /// this session's previous result ([`crate::changes`]).
    pub async fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.decorated(name, args.clone(), self.call_tool(name, args))
            .await
    }

    /// Runs `call`, the body of tool `name` called with `args`, as every
    /// tool runs: refused at once while a person has the task (unless it
    /// only reads), and its successful result given `changes`.
    async fn decorated(
        &self,
        name: &str,
        args: Value,
        call: impl std::future::Future<Output = Result<Value, ToolError>>,
    ) -> Result<Value, ToolError> {
        if let Some(refused) = self.refusal(name, &args) {
            return Err(refused);
        }
        let handoff = self.handoff_change(name, &args);
        let person = self.person_in_control().is_some();
        let mut result = call.await;
        if let Ok(v) = &mut result {
            self.add_changes(name, v);
            if let (Some(r), Some(obj)) = (handoff, v.as_object_mut()) {
                let changes = obj.entry("changes").or_insert_with(|| json!({}));
                changes["handoff"] = json!(r);
            }
            if person || self.person_in_control().is_some() {
                handoff::without_queries(v);
            }
            // What a CDP reply holds is the agent's to ask for (capped at
            // 8 MiB where it is read); the rest is the page's words.
            cap_page_strings(v, name == "browser_cdp");
        }
        result
    }

    /// Adds `changes` to the result `v` of tool `name`: what this session's
    /// supervisor shows now against what its previous result covered. A
    /// session's first result (or the first with a new supervisor) only
    /// counts what is there.
    fn add_changes(&self, name: &str, v: &mut Value) {
        let Some(s) = self.registry.get(&self.task_id) else {
            return;
        };
        let snap = s.snapshot();
        let generation = *self.supervisor_changes.borrow();
        let told = Told {
            tabs_opened: v
                .get("tabs_opened")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|x| x.get("target_id")?.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            navigated: name == "browser_navigate",
            downloads_started: v
                .get("downloads_started")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|x| x.get("id")?.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        };
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let (changes, now) = match seen.take() {
            Some((g, before)) if g == generation => before.diff(&snap, &told),
            _ => (None, Seen::of(&snap)),
        };
        *seen = Some((generation, now));
        if let (Some(c), Some(obj)) = (changes, v.as_object_mut()) {
            obj.insert("changes".into(), c);
        }
    }

    async fn call_tool(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        let Some(tool) = catalog::tool(name) else {
            return Err(ToolError::new(format!(
                "unknown tool {name:?}; tools: {}",
                self.tool_names().join(", ")
            )));
        };
        if tool.needs_cdp && !self.config.has_cdp() {
            return Err(ToolError::new(format!(
                "{name} is not available: the configured backend ({}) exposes no CDP endpoint",
                self.config.browser.cloud_provider.as_str()
            )));
        }
        match tool.parse(args, &self.navigation_policy()?)? {
            ToolCall::Navigate { url, snapshot } => {
                let mut v = self.browser_navigate(&url).await?;
                if snapshot && v["status"] == "loaded" {
                    self.add_page(&mut v, None).await;
                }
                Ok(v)
            }
            ToolCall::Snapshot { page } => self.browser_snapshot(page).await,
            ToolCall::Act { action, snapshot } => {
                let before = self
                    .registry
                    .get(&self.task_id)
                    .map(|s| s.events().latest());
                let mut v = self.act(action).await?;
                if snapshot {
                    self.add_page(&mut v, before).await;
                }
                Ok(v)
            }
            ToolCall::Dialog {
                action,
                prompt_text,
                dialog_id,
                files,
                login,
            } => {
                self.browser_dialog(action.as_str(), prompt_text, dialog_id, files, login)
                    .await
            }
            ToolCall::Cdp {
                method,
                params,
                frame_id,
                target_id,
                timeout_s,
            } => {
                self.browser_cdp(
                    &method,
                    Some(params),
                    frame_id.as_deref(),
                    target_id.as_deref(),
                    Some(timeout_s),
                )
                .await
            }
            ToolCall::Tabs {
                action,
                target_id,
                url,
            } => {
                self.browser_tabs(&action, target_id.as_deref(), url.as_deref())
                    .await
            }
            ToolCall::Wait {
                event,
                timeout_s,
                since,
            } => self.browser_wait(event, Some(timeout_s), since).await,
            ToolCall::Connect { cdp_url, target_id } => {
                self.browser_connect(&cdp_url, target_id).await
            }
            ToolCall::Disconnect => Ok(self.browser_disconnect().await),
            ToolCall::Handoff {
                reason,
                timeout_s,
                wait,
            } => self.browser_handoff(&reason, timeout_s, wait).await,
        }
    }

    fn options(
        &self,
        target_id: Option<String>,
        url: Option<&str>,
    ) -> Result<SupervisorOptions, ToolError> {
        let b = &self.config.browser;
        Ok(SupervisorOptions {
            cdp_headers: url.map(|u| self.headers_for(u)).unwrap_or_default(),
            policy: b.dialog_policy,
            // Config bounds it; a library caller's struct may not be.
            dialog_timeout: Duration::try_from_secs_f64(b.dialog_timeout_s)
                .unwrap_or(state::DEFAULT_DIALOG_TIMEOUT),
            target_id,
            // Browserbase's proxy answers native dialogs within ~10 ms (spec).
            dialog_bridge: b.cloud_provider == CloudProvider::Browserbase,
            max_tabs: b.max_tabs,
            navigation: self.navigation_policy()?,
            credentials: b.credentials.clone(),
            downloads: state::downloads::DownloadOptions {
                dir: (!b.downloads_dir.is_empty()).then(|| b.downloads_dir.clone()),
                max_bytes: b.downloads_max_bytes,
                remote: false,
            },
            ..Default::default()
        })
    }

    /// The configured navigation policy ([`crate::supervisor::origins`]).
    fn navigation_policy(&self) -> Result<NavigationPolicy, ToolError> {
        self.config.browser.navigation_policy().map_err(|e| {
            ToolError::new(format!(
                "the navigation policy in the config is invalid: {e}"
            ))
        })
    }

    /// `browser.cdp_headers` for `url`: only for the configured `cdp_url`'s
    /// host and port (its http and ws forms alike), so an agent's
    /// `browser_connect` to another host never receives the grid's credentials.
    fn headers_for(&self, url: &str) -> CdpHeaders {
        let b = &self.config.browser;
        let place = |u: &str| {
            url::Url::parse(u.trim())
                .ok()
                .map(|u| (u.host_str().map(str::to_owned), u.port_or_known_default()))
        };
        match (place(&b.cdp_url), place(url)) {
            (Some(configured), Some(this)) if configured == this => b.cdp_headers.clone(),
            _ => CdpHeaders::default(),
        }
    }

    /// Whether this task's browser comes from the cloud provider's sessions:
    /// one is configured and neither `cdp_url` nor `browser_connect` chose
    /// an endpoint instead.
    fn uses_provider(&self) -> bool {
        self.provider.is_some()
            && self.config.browser.cdp_url.is_empty()
            && self
                .connected
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_none()
    }

    /// Whether the first call of any kind attaches: a CDP endpoint is
    /// configured (`cdp_url`, a cloud provider) or chosen (`browser_connect`),
    /// and no `browser_disconnect` came since.
    fn attaches_on_any_call(&self) -> bool {
        let b = &self.config.browser;
        let endpoint = self
            .connected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
            || !b.cdp_url.is_empty()
            || b.cloud_provider != CloudProvider::Local;
        endpoint && self.config.has_cdp() && !self.detached.load(Ordering::SeqCst)
    }

    /// The running supervisor, or `None` where this call must not start
    /// one: a local browser is launched only by the calls that act on the
    /// page, and after `browser_disconnect` nothing attaches until the next
    /// navigate or connect.
    async fn supervisor_for_reading(&self) -> Result<Option<Supervisor>, ToolError> {
        if let Some(s) = self.registry.get(&self.task_id) {
            return Ok(Some(s));
        }
        if self.ended().is_some() {
            return Err(ToolError::new(ENDED_NOTE));
        }
        if !self.attaches_on_any_call() {
            return Ok(None);
        }
        self.supervisor().await.map(Some)
    }

    /// The page layer of `s`, this task's supervisor: the registry's, so
    /// that a ref of one call's outline is found by the next call (of this
    /// session or another session of the task).
    fn page(&self, s: &Supervisor) -> Page {
        self.registry.page(&self.task_id, s)
    }

    /// The running supervisor, if any. Never waits, never starts one.
    pub fn current_supervisor(&self) -> Option<Supervisor> {
        self.registry.get(&self.task_id)
    }

    /// A receiver that wakes whenever this task's supervisor may have
    /// changed (started, replaced by `browser_connect`, stopped).
    pub fn supervisor_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.supervisor_changes.subscribe()
    }

    fn supervisor_changed(&self) {
        self.supervisor_changes.send_modify(|g| *g += 1);
    }

    /// The running supervisor, started on the connected or configured
    /// browser if there is none.
    pub async fn supervisor(&self) -> Result<Supervisor, ToolError> {
        if let Some(s) = self.registry.get(&self.task_id) {
            return Ok(s);
        }
        let started = self.start_supervisor().await;
        if let Ok(s) = &started {
            *self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(s.clone());
        }
        self.supervisor_changed();
        started
    }

    /// The last supervisor this session used, when it ended by itself (its
    /// browser closed or crashed, or its endpoint never came back) and
    /// nothing replaced it: calls then say so instead of silently starting
    /// a new browser. `browser_navigate` and `browser_connect` start anew.
    fn ended(&self) -> Option<Supervisor> {
        if self.uses_provider() {
            // An expired provider session: the next call makes a fresh one.
            return None;
        }
        let last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()?;
        let replaced = self
            .registry
            .get(&self.task_id)
            .is_some_and(|now| now.id() != last.id());
        (!last.is_running() && !replaced).then_some(last)
    }

    async fn start_supervisor(&self) -> Result<Supervisor, ToolError> {
        let connected = self
            .connected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let connected_url = connected.as_ref().map(|(u, _)| u.clone());
        let b = &self.config.browser;
        let (endpoint, target) = match connected {
            Some((url, target)) => (Endpoint::Url(url), target),
            None if !b.cdp_url.is_empty() => (
                Endpoint::Url(b.cdp_url.clone()),
                (!b.target_id.is_empty() && !self.in_context()).then(|| b.target_id.clone()),
            ),
            None if b.cloud_provider == CloudProvider::Local && self.in_context() => (
                Endpoint::Context(self.registry.shared_browser(&b.launch_options())),
                None,
            ),
            None if b.cloud_provider == CloudProvider::Local => {
                (Endpoint::Local(b.launch_options()), None)
            }
            None => return self.start_on_provider_session().await,
        };
        let desc = endpoint.describe();
        let chosen = connected_url.is_some();
        let url = match &endpoint {
            Endpoint::Url(u) => Some(u.clone()),
            Endpoint::Local(_) | Endpoint::Context(_) => None,
        };
        let mut options = self.options(target, url.as_deref())?;
        if self.in_context() && !chosen {
            options.context = Some(ContextOptions {
                proxy: (!b.proxy.is_empty()).then(|| b.proxy.clone()),
                browser: None,
            });
        }
        self.registry
            .get_or_start(&self.task_id, endpoint, options)
            .await
            .map_err(|e| {
                let hint = if chosen {
                    "; browser_connect to another browser, or browser_disconnect to go back to the configured one"
                } else {
                    ""
                };
                ToolError::new(format!("cannot attach to {desc}: {e}{hint}"))
            })
    }

    /// A supervisor on a fresh provider session. A session this task still
    /// holds belongs to a supervisor that gave up (an expired session) or
    /// never attached: it is released first. A session that cannot be
    /// attached is released at once (it would bill for nothing).
    async fn start_on_provider_session(&self) -> Result<Supervisor, ToolError> {
        let name = self.config.browser.cloud_provider.as_str();
        let Some(provider) = self.provider.clone() else {
            return Err(ToolError::new(format!(
                "browser.cloud_provider {name} has no session support; set browser.cdp_url to the provider's CDP URL"
            )));
        };
        let _creating = self.provider_lock.lock().await;
        if let Some(s) = self.registry.get(&self.task_id) {
            return Ok(s);
        }
        /// Clears `provider_creating` however the creation ends.
        struct Creating<'a>(&'a AtomicBool);
        impl Drop for Creating<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        self.provider_creating.store(true, Ordering::SeqCst);
        let _flag = Creating(&self.provider_creating);
        if self.registry.release_lease(&self.task_id).await {
            tracing::info!(
                task_id = %crate::handles::logged(&self.task_id),
                "the {name} session had no live supervisor (it expired or never attached): released it; creating a fresh one"
            );
        }
        let created = provider
            .create_session(&self.task_id)
            .await
            .map_err(|e| ToolError::new(format!("cannot create a {name} browser session: {e}")))?;
        tracing::info!(
            task_id = %crate::handles::logged(&self.task_id),
            "created {name} session {} ({})",
            created.provider_session_id,
            created.session_name
        );
        self.registry.lease(
            &self.task_id,
            Lease {
                provider: provider.clone(),
                session_id: created.provider_session_id.clone(),
            },
        );
        let endpoint = Endpoint::Url(created.cdp_url.clone());
        let desc = endpoint.describe();
        // With a provider, `cdp_headers` are the provider's (a protected
        // Selenium Grid's `Authorization`): its session's handshake gets them.
        let options = SupervisorOptions {
            cdp_headers: self.config.browser.cdp_headers.clone(),
            ..self.options(None, None)?
        };
        match self
            .registry
            .get_or_start(&self.task_id, endpoint, options)
            .await
        {
            Ok(s) => Ok(s),
            Err(e) => {
                self.end_provider_session().await;
                Err(ToolError::new(format!(
                    "cannot attach to the {name} session {} at {desc}: {e}; the session was released, the next call creates a new one",
                    created.provider_session_id
                )))
            }
        }
    }

    /// Releases this task's provider session, if it still holds one (a
    /// signal's emergency cleanup may have taken it already).
    async fn end_provider_session(&self) {
        self.registry.release_lease(&self.task_id).await;
    }

    /// `browser_snapshot`: `{url, title, pending_dialogs, recent_dialogs,
    /// frame_tree, console_errors, page_blocked, connection,
    /// completed_calls}`. `url` and `title` are read from Chromium now
    /// ([`Supervisor::live_page`], at most [`LIVE_READ_TIMEOUT`], else the
    /// last known ones).
    ///
    /// With a CDP endpoint configured the first call attaches (so an agent
    /// attaching to a running browser sees its dialogs or `page_blocked` at
    /// once). Without a supervisor — local launch before the first
    /// `browser_navigate`, or after `browser_disconnect` — it is `{url: "",
    /// title: "", note}`; while another call is starting one, `{url: "",
    /// title: "", connection: "connecting", note}`. Never waits on a start,
    /// stop or rebind in progress. Gated (no CDP backend): `{url, title}` only.
    ///
    /// `page` asks for the outline ([`PageRequest`]): with it come `page`,
    /// `page_truncated`, `page_cursor` (when cut) and `frame_refs`
    /// ([`Page::outline`], [`Page::outline_more`]).
    ///
    /// # Errors
    /// Attaching to the configured endpoint failed; a `page_cursor` that
    /// does not continue the tab's last outline (the error says why).
    pub async fn browser_snapshot(&self, page: PageRequest) -> Result<Value, ToolError> {
        let starting = self.registry.is_starting(&self.task_id)
            || self.provider_creating.load(Ordering::SeqCst);
        if starting && self.registry.get(&self.task_id).is_none() {
            return Ok(json!({
                "url": "",
                "title": "",
                "connection": ConnectionStatus::Connecting,
                "note": CONNECTING_NOTE,
            }));
        }
        if let Some(dead) = self.ended() {
            // Its last state, as it was when the connection ended (a dead
            // supervisor has no connection to read the title live from).
            let mut r = snapshot_result(&dead).await;
            r.snapshot.connection = ConnectionStatus::Closed;
            r.note = Some(ENDED_NOTE);
            return Ok(r.to_json());
        }
        let Some(s) = self.supervisor_for_reading().await? else {
            return Ok(if self.config.has_cdp() {
                json!({"url": "", "title": "", "note": NO_BROWSER_NOTE})
            } else {
                json!({"url": "", "title": ""})
            });
        };
        let crashed = s.snapshot().tabs.iter().any(|t| t.current && t.crashed);
        // The outline first: it may take a while (a big page), and the
        // dialogs and tabs read after it are the fresher for it.
        let outline = match &page {
            PageRequest::Omit => None,
            // No renderer, no document to read: the outline says so.
            _ if crashed => Some(PageOutline {
                text: CRASHED_LINE.to_owned(),
                ..PageOutline::default()
            }),
            PageRequest::Continue(cursor) => Some(
                self.page(&s)
                    .outline_more(cursor)
                    .map_err(|e| ToolError::new(format!("browser_snapshot: {e}")))?,
            ),
            PageRequest::Read(mode) => {
                let p = self.page(&s);
                let mut outline = p.outline(mode).await;
                if let Some(o) = &outline
                    && !p.outline_agrees(o).await
                {
                    // A dialog opened or closed while it was read: once
                    // more, so that it agrees with the dialogs shown beside it.
                    outline = p.outline(mode).await;
                }
                outline
            }
        };
        let mut r = snapshot_result(&s).await;
        r.page = outline.map(PageView::from);
        let person = self.person_in_control().is_some();
        if person && let Some(p) = &mut r.page {
            // What the person types in fields is theirs.
            p.page = crate::supervisor::act::without_values(&p.page);
        }
        let mut v = r.to_json();
        if person {
            // And so is what a form they sent by GET put in a URL's query.
            handoff::without_queries(&mut v);
        }
        Ok(v)
    }

    /// `browser_click`, `browser_type`, `browser_press_key`,
    /// `browser_select_option` (DESIGN "Acting on the page"): the action's
    /// small result, plus `tabs_opened` when a tab opened during it or
    /// by the time Chromium answered its input (no fixed wait).
    ///
    /// # Errors
    /// A stale or unknown ref (naming `browser_snapshot`), an element that
    /// cannot take the action, no browser; a dialog interrupting the
    /// dispatch is the interrupted tool error of "Calls a dialog interrupts".
    async fn act(&self, action: Action) -> Result<Value, ToolError> {
        if self.detached.load(Ordering::SeqCst) {
            return Err(ToolError::new(
                "no browser is attached since browser_disconnect; call browser_navigate (starts the configured browser) or browser_connect first",
            ));
        }
        if self.ended().is_some() {
            return Err(ToolError::new(ENDED_NOTE));
        }
        let Some(s) = self.supervisor_for_reading().await? else {
            return Err(ToolError::new(
                "no browser is running yet: browser_navigate starts one, then browser_snapshot lists the page's refs",
            ));
        };
        let tool = action.tool();
        let before = tab_ids(&s);
        let navigation = s.action_navigation_mark();
        let snap = s.snapshot();
        let tab = snap
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.clone());
        let dialogs_before = last_dialog_number(&snap);
        let page = self.page(&s);
        let act_error = |e: ActError| ToolError::new(format!("{tool}: {e}"));
        let outcome = match action {
            Action::Click { r, button, count } => page.click(&r, &button, count).await,
            Action::Type { r, text, submit } => page.type_text(&r, &text, submit).await,
            Action::Key(k) => page.press_key(&k).await,
            Action::Select { r, values } => page.select_option(&r, values).await,
            Action::FillForm { fields } => match page.fill_form(fields).await.map_err(act_error)? {
                FillOutcome::Done(v) => Ok(CallOutcome::Reply(v)),
                FillOutcome::Stopped(stop) => return Err(fill_stopped(stop)),
            },
        }
        .map_err(act_error)?;
        match outcome {
            CallOutcome::Reply(mut v) => {
                // Chromium sends a popup's `Target.targetCreated` before the
                // reply of the input that opened it (CDP facts): once the
                // snapshot shows every event sent before that reply, the
                // tabs this action opened are in it. No fixed wait: a tab
                // opened later reaches the agent in the next result's changes.
                // A navigation it started (a link, a form) is followed to its
                // outcome: the result's `changes` has the new page, and a
                // navigation that became a download is in `downloads_started`.
                if let Some((tab, seq)) = &navigation {
                    s.input_settled(tab, READ_TIMEOUT).await;
                    s.caught_up().await;
                    if !s.action_settled(tab, *seq, ACTION_TIMEOUT).await {
                        add_note(&mut v, NAVIGATION_UNSETTLED_NOTE);
                    }
                } else {
                    s.caught_up().await;
                }
                new_tabs_heading_somewhere(&s, &before).await;
                add_tabs_opened(&mut v, &s, &before);
                if let Some(d) = dialog_opened_during(&s.snapshot(), tab.as_deref(), dialogs_before)
                {
                    // Chromium answers input sent while a dialog shows in
                    // the tab, and may drop it: the agent must look first.
                    add_note(
                        &mut v,
                        &format!(
                            "dialog {d} opened in this tab while the input was being sent: the page may not have received all of it; look (browser_snapshot) before sending it again"
                        ),
                    );
                }
                Ok(v)
            }
            CallOutcome::Interrupted {
                call_id,
                pending_dialogs,
            } => Err(interrupted(tool, &call_id, pending_dialogs)),
            CallOutcome::TimedOut { call_id, after } => Err(timed_out(tool, &call_id, after)),
        }
    }

    /// Adds the page's outline to an action's result `v`, when the agent
    /// asked for it (`snapshot: true`): its first [`NEW_PAGE_MAX_LINES`]
    /// lines, with `url`, `title`, `page`, `page_truncated`, `page_cursor`
    /// and `frame_refs` as `browser_snapshot` gives them (its refs replace
    /// the tab's earlier ones, as a snapshot's do), so the next step needs
    /// no snapshot call. Not while a dialog holds the tab (the result's
    /// pending dialogs say so first: the page cannot be read) or it crashed.
    ///
    /// `since` is the event before the action (`None`: a navigation that
    /// waited for its load): when no document committed during the
    /// action, one its script or input scheduled may be announced late
    /// (seen under load 16–23 on 2 cores: Enter in a search form, the old
    /// page's outline returned, its refs gone a moment later), so a commit
    /// within [`LATE_COMMIT`] after the read makes it read again.
    async fn add_page(&self, v: &mut Value, since: Option<u64>) {
        let Some(s) = self.registry.get(&self.task_id) else {
            return;
        };
        let held = s
            .snapshot()
            .tabs
            .iter()
            .any(|t| t.current && (t.pending_dialogs > 0 || t.crashed));
        if !v.is_object() {
            return;
        }
        if held {
            add_note(
                v,
                "no outline: a dialog holds the page (or it crashed); browser_snapshot reads it once the dialog is answered",
            );
            return;
        }
        let committed = |after: u64| {
            s.events()
                .after(after, &[EventKind::PageCommitted])
                .is_some()
        };
        let settled = since.is_none_or(committed);
        parsed(&s).await;
        let read_from = s.events().latest();
        let mut outline = self
            .page(&s)
            .outline_first(&OutlineMode::Default, NEW_PAGE_MAX_LINES)
            .await;
        let late = tokio::time::Instant::now() + LATE_COMMIT;
        if !settled
            && s.events()
                .wait_after(read_from, &[EventKind::PageCommitted], late)
                .await
                .is_some()
        {
            parsed(&s).await;
            outline = self
                .page(&s)
                .outline_first(&OutlineMode::Default, NEW_PAGE_MAX_LINES)
                .await;
        }
        let Some(outline) = outline else {
            return;
        };
        let (url, title) = live_url_title(&s, &s.snapshot()).await;
        v["url"] = json!(url);
        v["title"] = json!(title);
        if let Ok(Value::Object(page)) = serde_json::to_value(PageView::from(outline)) {
            for (k, x) in page {
                v[k] = x;
            }
        }
    }

    /// `browser_navigate`: navigates and waits for the load event (30 s);
    /// returns `{status: "loaded" | "dialog_pending" | "load_timeout", url,
    /// title, pending_dialogs}` — promptly with the dialog when one opens
    /// first (during load, or a `beforeunload` of the page being left).
    pub async fn browser_navigate(&self, url: &str) -> Result<Value, ToolError> {
        // Before anything is sent (the browser would refuse it too).
        check_navigation(url, &self.navigation_policy()?)?;
        self.detached.store(false, Ordering::SeqCst);
        let s = self.supervisor().await?;
        let before = tab_ids(&s);
        let outcome = s.navigate(url, NAVIGATE_TIMEOUT).await?;
        let snap = s.snapshot();
        let (live_url, title) = live_url_title(&s, &snap).await;
        let (status, note) = match &outcome {
            NavigateOutcome::Loaded => ("loaded", None),
            NavigateOutcome::Download(name) => (
                "loaded",
                Some(format!(
                    "the URL is a download ({}): the page did not change; browser_wait(event:\"download_done\") waits for the file",
                    crate::supervisor::wording::cut(name)
                )),
            ),
            NavigateOutcome::DialogPending(_) => (
                "dialog_pending",
                Some("a dialog blocks the page: answer it with browser_dialog".to_owned()),
            ),
            NavigateOutcome::Busy => ("load_timeout", Some(BUSY_PAGE_NOTE.to_owned())),
            NavigateOutcome::LoadTimeout => (
                "load_timeout",
                Some("the page did not finish loading within 30 s".to_owned()),
            ),
        };
        let pending: List<PendingDialog> = match outcome {
            NavigateOutcome::DialogPending(d) => d,
            _ => snap.pending_dialogs.clone(),
        };
        let mut v = json!({
            "status": status,
            "url": live_url,
            "title": title,
            "pending_dialogs": pending,
        });
        if let Some(n) = note {
            v["note"] = json!(n);
        }
        add_tabs_opened(&mut v, &s, &before);
        Ok(v)
    }

    /// `browser_tabs`: `list` the supervised tabs; `new` opens `url` (or
    /// about:blank) in a new tab, supervised from its first script, and
    /// makes it current; `select` makes the supervised tab `target_id`
    /// current; `close` closes it with `Page.close`, running its
    /// `beforeunload` (which then shows as a pending dialog: accepting it
    /// lets the close finish, dismissing keeps the tab). Returns `{tabs,
    /// tabs_truncated, current_target_id, pending_dialogs}` (and `note`
    /// when a dialog holds the close).
    ///
    /// # Errors
    /// A bad action, a missing or unknown `target_id`, a bad `url`, no
    /// browser, or Chromium refusing.
    pub async fn browser_tabs(
        &self,
        action: &str,
        target_id: Option<&str>,
        url: Option<&str>,
    ) -> Result<Value, ToolError> {
        check_tabs_args(action, target_id, url)?;
        let need_target = || {
            target_id.ok_or_else(|| {
                ToolError::new(format!(
                    "browser_tabs {action} needs target_id (a tab's target_id from browser_tabs list)"
                ))
            })
        };
        if self.detached.load(Ordering::SeqCst) && action != "new" {
            return Err(ToolError::new(
                "no browser is attached since browser_disconnect; call browser_navigate (starts the configured browser) or browser_connect first",
            ));
        }
        if self.ended().is_some() {
            return Err(ToolError::new(ENDED_NOTE));
        }
        self.detached.store(false, Ordering::SeqCst);
        let s = self.supervisor().await?;
        let before = tab_ids(&s);
        let mut note = None;
        match action {
            "new" => {
                s.new_tab(url.unwrap_or("about:blank"), TABS_TIMEOUT)
                    .await?;
            }
            "select" => s.select_tab(need_target()?).await?,
            "close" => {
                let t = need_target()?;
                s.close_tab(t, TABS_TIMEOUT).await?;
                let snap = s.snapshot();
                let held = snap.pending_dialogs.iter().any(|d| {
                    d.target_id.as_deref() == Some(t) && d.dialog_type.as_str() == "beforeunload"
                });
                if held {
                    note = Some(
                        "the tab is still open: a dialog (its beforeunload) holds the close; accept it with browser_dialog to close the tab, dismiss it to keep the tab",
                    );
                }
            }
            _ => {}
        }
        let snap = s.snapshot();
        let live = s.live_tabs(LIVE_READ_TIMEOUT).await.unwrap_or_default();
        let mut v = json!({
            "tabs": live_tab_views(&snap.tabs, &live),
            "tabs_truncated": snap.tabs_truncated,
            "current_target_id": snap.tabs.iter().find(|t| t.current).map(|t| t.target_id.clone()),
            "pending_dialogs": snap.pending_dialogs,
        });
        if let Some(n) = note {
            v["note"] = json!(n);
        }
        add_tabs_opened(&mut v, &s, &before);
        Ok(v)
    }

    /// `browser_dialog`: answers the named or sole pending dialog. Returns
    /// `{answered: {…closed dialog…}, pending_dialogs, completed_calls}`:
    /// `completed_calls` are the interrupted calls that completed (waiting up
    /// to [`COMPLETED_CALLS_WAIT`] for those this answer released when no
    /// other dialog is pending), each handed out once. Errors: bad action,
    /// no dialog, several without `dialog_id`, unknown `dialog_id`, a dialog
    /// Chromium will not answer (navigate to release it). `files` answers a
    /// `file_chooser` (`DOM.setFileInputFiles`): each path must name a
    /// readable file, by its absolute path (Chromium accepts a missing one
    /// silently). `login` answers an `http_auth` (`Fetch.continueWithAuth`):
    /// accepting one needs it, unless `browser.credentials` has its origin.
    pub async fn browser_dialog(
        &self,
        action: &str,
        prompt_text: Option<String>,
        dialog_id: Option<String>,
        files: Option<Vec<String>>,
        login: Option<Login>,
    ) -> Result<Value, ToolError> {
        if action == ASK_USER {
            return Err(ToolError::new(
                "ask_user needs an MCP client that can ask its human (elicitation); this caller cannot: answer with accept or dismiss",
            ));
        }
        let action = DialogAction::parse(action).map_err(|e| ToolError::new(e.to_string()))?;
        let files = files.map(|f| readable_files(&f)).transpose()?;
        let Some(s) = self.supervisor_for_reading().await? else {
            return Err(ToolError::new(DialogError::NoDialog.to_string()));
        };
        let req = DialogRequest {
            action,
            prompt_text,
            dialog_id,
            files,
            login,
        };
        answer_and_report(&s, req, ClosedBy::Agent).await
    }

    /// `browser_dialog(action: "ask_user")`: hands the named or sole pending
    /// dialog to the human behind the agent. `ask` puts a [`HumanQuestion`]
    /// to them (the MCP server: a form elicitation) and returns their
    /// [`HumanReply`], or why it could not ask. The human's choice answers
    /// the dialog as `closed_by: "user"`; the result is `browser_dialog`'s.
    /// The watchdog keeps running meanwhile.
    ///
    /// # Errors
    /// As `browser_dialog`'s (no dialog, several without `dialog_id`, …);
    /// the human declined or cancelled (the dialog stays pending); the
    /// dialog closed while the human was deciding (says by whom); `ask`
    /// failed.
    pub async fn browser_dialog_ask_user<F, Fut>(
        &self,
        dialog_id: Option<String>,
        ask: F,
    ) -> Result<Value, ToolError>
    where
        F: FnOnce(HumanQuestion) -> Fut,
        Fut: std::future::Future<Output = Result<HumanReply, String>>,
    {
        let Some(s) = self.supervisor_for_reading().await? else {
            return Err(ToolError::new(DialogError::NoDialog.to_string()));
        };
        let snap = s.snapshot();
        let d = askable_dialog(&s, &snap, dialog_id.as_deref())?;
        let question = HumanQuestion::about(&d, &snap);
        let id = d.id.clone();
        let reply = tokio::select! {
            r = ask(question) => r.map_err(|e| ToolError::new(format!(
                "could not ask the user about dialog {id}: {e}; it is still pending: answer it with accept or dismiss"
            )))?,
            () = closed_meanwhile(&s, &id) => {
                let by = s
                    .snapshot()
                    .recent_dialogs
                    .iter()
                    .rev()
                    .find(|c| c.dialog.id == id)
                    .map(|c| c.closed_by.as_str())
                    .unwrap_or("remote");
                return Err(ToolError::new(format!(
                    "dialog {id} closed (closed_by: {by}) while the user was deciding; their answer, if any, was not used; see recent_dialogs"
                )));
            }
        };
        let (action, prompt_text) = match reply {
            HumanReply::Answer { action, text } => (action, text),
            HumanReply::Declined => {
                return Err(ToolError::new(format!(
                    "the user declined to answer dialog {id}; it is still pending: answer it with accept or dismiss, or leave it to the watchdog"
                )));
            }
            HumanReply::Cancelled => {
                return Err(ToolError::new(format!(
                    "the user cancelled the question about dialog {id}; it is still pending: answer it with accept or dismiss, or leave it to the watchdog"
                )));
            }
        };
        let req = DialogRequest {
            action,
            prompt_text,
            dialog_id: Some(id),
            files: None,
            login: None,
        };
        answer_and_report(&s, req, ClosedBy::User).await
    }

    /// `browser_cdp`: a raw CDP command over the supervisor's connection; with
    /// `frame_id` of an OOPIF, on its child session. Returns `{result}` (the
    /// CDP reply). `timeout_s` in seconds (default 10, at most 300).
    ///
    /// # Errors
    /// A dialog that blocks the command makes it an error whose
    /// [`ToolError::structured`] is `{interrupted_by_dialog: true, call_id,
    /// method, pending_dialogs}`: not completed, still queued in the page,
    /// delivered later in `completed_calls`; it must not be resent. Also: bad
    /// arguments, a `frame_id` that cannot take the call, a CDP error.
    pub async fn browser_cdp(
        &self,
        method: &str,
        params: Option<Value>,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        timeout_s: Option<f64>,
    ) -> Result<Value, ToolError> {
        check_method(method)?;
        let params = cdp_params(params)?;
        check_cdp_navigation(method, &params, &self.navigation_policy()?)?;
        let timeout_s = seconds(timeout_s, CDP_DEFAULT_TIMEOUT_S, CDP_MAX_TIMEOUT_S)?;
        if self.detached.load(Ordering::SeqCst) {
            return Err(ToolError::new(
                "no browser is attached since browser_disconnect; call browser_navigate (starts the configured browser) or browser_connect first",
            ));
        }
        if self.ended().is_some() {
            return Err(ToolError::new(ENDED_NOTE));
        }
        let s = self.supervisor().await?;
        let context = s.browser_context();
        let targets = if context.is_some() {
            task_targets(&s)
        } else {
            Vec::new()
        };
        check_refused(
            method,
            CdpScope {
                owns_browser: s.owns_browser(),
                context: context.as_deref(),
                targets: &targets,
                params: &params,
            },
        )?;
        let before = tab_ids(&s);
        if method == CREATE_TARGET {
            // A browser-level command whatever frame_id or target_id say:
            // the supervisor opens the tab, so it is supervised (and under
            // the navigation policy) before its first document loads.
            let v = s
                .create_target(params, Duration::from_secs_f64(timeout_s))
                .await?;
            let mut out = json!({"result": v});
            add_tabs_opened(&mut out, &s, &before);
            return Ok(out);
        }
        match s
            .cdp(
                method,
                params,
                frame_id,
                target_id,
                Duration::from_secs_f64(timeout_s),
            )
            .await?
        {
            CallOutcome::Reply(mut v) => {
                if let Some(own) = context.as_deref() {
                    only_own_targets(method, &mut v, own);
                }
                let mut out = json!({"result": v});
                add_tabs_opened(&mut out, &s, &before);
                Ok(out)
            }
            CallOutcome::Interrupted {
                call_id,
                pending_dialogs,
            } => Err(interrupted(method, &call_id, pending_dialogs)),
            CallOutcome::TimedOut { call_id, after } => Err(timed_out(method, &call_id, after)),
        }
    }

    /// `browser_wait`: waits until `event` (one of [`WAIT_EVENTS`]) happens
    /// after this call started — or, with `since` (an `event_seq` from an
    /// earlier snapshot), after that point, so an event between the agent's
    /// last read and this call counts — at most `timeout_s` (default 30,
    /// at most 300). Returns `{event, happened, snapshot}`. Ends early with
    /// `happened: false` when the supervisor stops.
    ///
    /// # Errors
    /// An unknown event or a bad timeout; no browser is running (with a
    /// local browser, before the first `browser_navigate`).
    pub async fn browser_wait(
        &self,
        event: &str,
        timeout_s: Option<f64>,
        since: Option<u64>,
    ) -> Result<Value, ToolError> {
        let (_, kinds) = wait_event(event)?;
        let timeout_s = seconds(timeout_s, WAIT_DEFAULT_TIMEOUT_S, WAIT_MAX_TIMEOUT_S)?;
        if event == "handed_back" {
            return self.wait_handed_back(timeout_s).await;
        }
        let Some(s) = self.supervisor_for_reading().await? else {
            return Err(ToolError::new(
                "no browser is running, so nothing can happen yet: browser_navigate starts one (or browser_connect attaches to one)",
            ));
        };
        let events = s.events();
        let since = since.unwrap_or_else(|| events.latest());
        let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(timeout_s);
        let happened = tokio::select! {
            found = events.wait_after(since, kinds, deadline) => found.is_some(),
            () = s.exited() => false,
        };
        Ok(json!({
            "event": event,
            "happened": happened,
            "snapshot": snapshot_result(&s).await.to_json(),
        }))
    }

    /// `browser_connect`: supervises the browser at `cdp_url` (the tab
    /// `target_id`, else the tab in front) instead. The new supervisor is
    /// started first; only once it has attached is the old one stopped (its
    /// state is not carried over). Returns `{connected, url, title,
    /// pending_dialogs, frame_tree, page_blocked, note?}` (`url`, `title` live;
    /// `note` for a page-level endpoint: what it cannot do).
    ///
    /// # Errors
    /// An empty URL, or the new browser could not be attached: then the
    /// old supervisor (if any) keeps running, and the error says so.
    pub async fn browser_connect(
        &self,
        cdp_url: &str,
        target_id: Option<String>,
    ) -> Result<Value, ToolError> {
        check_cdp_url(cdp_url)?;
        if self.registry.is_shared_browser(cdp_url) {
            return Err(ToolError::new(format!(
                "browser_connect: {} is this server's shared browser, which holds every task's browser context (isolation: context): a task may not attach to it as a whole. This task's own tabs are supervised already (browser_tabs list); connect to another browser, or browser_disconnect to go back to the configured one",
                Endpoint::Url(cdp_url.to_owned()).describe()
            )));
        }
        let target_id = target_id.filter(|t| !t.is_empty());
        let endpoint = Endpoint::Url(cdp_url.to_owned());
        let desc = endpoint.describe();
        let options = self.options(target_id.clone(), Some(cdp_url))?;
        let started = self
            .registry
            .get_or_start(&self.task_id, endpoint, options)
            .await;
        let s = match started {
            Ok(s) => s,
            Err(e) => {
                let kept = match self.registry.get(&self.task_id) {
                    Some(old) => format!(
                        "; the previous browser ({}) is still supervised, unchanged",
                        old.endpoint()
                    ),
                    None => "; no browser is supervised now".to_owned(),
                };
                return Err(ToolError::new(format!(
                    "cannot attach to {desc}: {e}{kept}"
                )));
            }
        };
        *self
            .connected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((cdp_url.to_owned(), target_id));
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(s.clone());
        self.detached.store(false, Ordering::SeqCst);
        self.supervisor_changed();
        // The task left its provider session for another browser: end it.
        self.end_provider_session().await;
        let snap = s.snapshot();
        let (url, title) = live_url_title(&s, &snap).await;
        let mut v = json!({
            "connected": s.endpoint(),
            "url": url,
            "title": title,
            "pending_dialogs": snap.pending_dialogs,
            "frame_tree": snap.frame_tree,
            "page_blocked": snap.page_blocked,
        });
        if s.is_page_level() {
            v["note"] = json!(crate::cdp::endpoint::PAGE_LEVEL_NOTE);
        }
        Ok(v)
    }

    /// `browser_disconnect`: stops the supervisor (and a Chromium it
    /// launched). The next `browser_navigate` starts the configured default
    /// browser again. Returns `{disconnected: bool}` (false: nothing was attached).
    pub async fn browser_disconnect(&self) -> Value {
        *self
            .connected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.detached.store(true, Ordering::SeqCst);
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let (was, ()) = tokio::join!(
            self.registry.stop(&self.task_id),
            self.end_provider_session()
        );
        self.supervisor_changed();
        json!({"disconnected": was})
    }

    /// Ends the session: stops its supervisor and browser and releases its
    /// provider session, both at once (on stdio the client kills us soon
    /// after stdin closes).
    pub async fn close(&self) {
        crate::live::hub().task_ended(&self.task_id);
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        tokio::join!(
            self.registry.stop(&self.task_id),
            self.end_provider_session()
        );
        self.registry.forget(&self.task_id);
        self.supervisor_changed();
    }
}

/// `browser_dialog`'s `action` that hands the dialog to the human.
pub const ASK_USER: &str = "ask_user";

/// What the human behind the agent is asked about a dialog (`ask_user`).
#[derive(Clone, Debug, PartialEq)]
pub struct HumanQuestion {
    /// The dialog asked about.
    pub dialog_id: String,
    /// What the human reads: the dialog's type, message, frame origin and
    /// tab. The message is the page's own text, quoted as such.
    pub message: String,
    /// The JSON Schema of the answer: `{action: "accept" | "dismiss", text?:
    /// string}` (`text` only for a `prompt`, defaulting to its default text).
    pub schema: Value,
}

impl HumanQuestion {
    fn about(d: &PendingDialog, snap: &Snapshot) -> HumanQuestion {
        let tree = &snap.frame_tree;
        let origin = tree
            .children
            .iter()
            .find(|c| Some(&c.frame_id) == d.frame_id.as_ref())
            .map(|c| c.origin.clone())
            .or_else(|| {
                tree.top
                    .as_ref()
                    .filter(|t| Some(&t.frame_id) == d.frame_id.as_ref())
                    .map(|t| t.origin.clone())
            })
            .filter(|o| !o.is_empty())
            .unwrap_or_else(|| crate::supervisor::state::origin_of(&d.url).into());
        let tab = tree
            .top
            .as_ref()
            .map(|t| format!("{} ({})", t.url, t.frame_id))
            .unwrap_or_else(|| "the supervised tab".to_owned());
        let is_prompt = d.dialog_type.as_str() == "prompt";
        let mut message = format!(
            "The browser tab {tab} shows a {} dialog ({}) from {origin}. Its text, written by the web page:\n\n{}\n\nAccept (OK) or dismiss (Cancel) it?",
            d.dialog_type, d.id, d.message
        );
        if is_prompt {
            message.push_str(" For accept, text is what the page receives.");
        }
        let mut properties = json!({
            "action": {
                "type": "string",
                "title": "Answer",
                "enum": ["accept", "dismiss"],
                "description": "accept presses OK (or leaves the page, for beforeunload); dismiss presses Cancel"
            }
        });
        if is_prompt {
            properties["text"] = json!({
                "type": "string",
                "title": "Text for the page",
                "default": d.default_prompt,
            });
        }
        HumanQuestion {
            dialog_id: d.id.clone(),
            message,
            schema: json!({"type": "object", "properties": properties, "required": ["action"]}),
        }
    }
}

/// What the human answered (`ask_user`).
#[derive(Clone, Debug, PartialEq)]
pub enum HumanReply {
    /// They chose; `text` is the prompt's answer (accept only).
    Answer {
        /// Accept or dismiss.
        action: DialogAction,
        /// For a `prompt`: the text the page receives.
        text: Option<String>,
    },
    /// They declined to answer.
    Declined,
    /// They dismissed the question itself.
    Cancelled,
}

/// An answer error as the agent reads it.
fn dialog_error(s: &Supervisor, e: DialogError) -> ToolError {
    match e {
        // Blocked by a dialog we never saw (opened before we attached).
        DialogError::NoDialog if s.snapshot().page_blocked => ToolError::new(
            "no dialog is known, but the page is blocked by one that opened before the supervisor attached (page_blocked: true); Chromium will not answer it: only navigating releases the page (call browser_navigate, e.g. to the current URL)",
        ),
        e => ToolError::new(e.to_string()),
    }
}

/// Answers a dialog on behalf of `by` and reports it as `browser_dialog`
/// does: `{answered, pending_dialogs, completed_calls}`.
async fn answer_and_report(
    s: &Supervisor,
    req: DialogRequest,
    by: ClosedBy,
) -> Result<Value, ToolError> {
    let before = tab_ids(s);
    let closed = s
        .answer_dialog_as(req, by)
        .await
        .map_err(|e| dialog_error(s, e))?;
    if closed.closed_by != by {
        // Someone else (another client, a proxy) answered it first: our
        // answer did not count, and the agent must not think it did.
        return Err(ToolError::new(format!(
            "dialog {} was closed by someone else (closed_by: {}) before this answer reached it; see recent_dialogs",
            closed.dialog.id,
            closed.closed_by.as_str()
        )));
    }
    // The script the dialog held up runs on now: let it finish (bounded),
    // so the agent's next read sees what it did (a new title, say), and
    // the calls the dialog held up deliver their outcomes with this answer.
    s.settle_after_dialog(
        closed.dialog.frame_id.as_deref(),
        closed.dialog.target_id.as_deref(),
        COMPLETED_CALLS_WAIT,
    )
    .await;
    if s.snapshot().pending_dialogs.is_empty() {
        s.interrupted_calls_settled(COMPLETED_CALLS_WAIT).await;
    }
    let mut out = json!({
        "answered": closed,
        "pending_dialogs": s.snapshot().pending_dialogs,
        "completed_calls": s.take_completed_calls(),
    });
    // A script the dialog held up may open a tab once released.
    add_tabs_opened(&mut out, s, &before);
    Ok(out)
}

/// Checks `browser_dialog`'s `files`: each must be the absolute path of a
/// readable file (Chromium does not check: a missing path would be set
/// silently; a relative one would resolve against the server's directory,
/// which the agent cannot know).
fn readable_files(files: &[String]) -> Result<Vec<String>, ToolError> {
    if files.is_empty() {
        return Err(ToolError::new(
            "files is empty; give one or more paths of readable files (dismiss leaves the input unchanged)",
        ));
    }
    files
        .iter()
        .map(|f| {
            let path = std::path::Path::new(f);
            if !path.is_absolute() {
                return Err(ToolError::new(format!(
                    "file {f:?} is not an absolute path; give absolute paths (the server's working directory is not the agent's)"
                )));
            }
            let meta = std::fs::metadata(path)
                .map_err(|e| ToolError::new(format!("file {f:?} cannot be used: {e}")))?;
            if !meta.is_file() {
                return Err(ToolError::new(format!(
                    "file {f:?} is not a regular file (a directory or a device); give files only"
                )));
            }
            std::fs::File::open(path)
                .map_err(|e| ToolError::new(format!("file {f:?} is not readable: {e}")))?;
            Ok(f.clone())
        })
        .collect()
}

/// The target ids of the supervised tabs now.
/// The ids of the supervised tabs and of the downloads, before a call:
/// what [`add_tabs_opened`] counts as already there (a tab's target id and
/// a download's `dl-N` never collide).
/// `browser_tabs`' arguments as given: a known action, `target_id` only
/// for select and close, `url` only for new (and a URL we open).
fn check_tabs_args(
    action: &str,
    target_id: Option<&str>,
    url: Option<&str>,
) -> Result<(), ToolError> {
    if !TAB_ACTIONS.contains(&action) {
        return Err(ToolError::new(format!(
            "action {action:?} is not one browser_tabs knows; allowed: {}",
            TAB_ACTIONS.join(", ")
        )));
    }
    if target_id.is_some() && matches!(action, "list" | "new") {
        return Err(ToolError::new(format!(
            "target_id is only for browser_tabs select and close, not {action}"
        )));
    }
    if url.is_some() && action != "new" {
        return Err(ToolError::new(format!(
            "url is only for browser_tabs new, not {action}"
        )));
    }
    if let Some(u) = url {
        check_url(u)?;
    }
    Ok(())
}

/// Adds `text` to a result's `note` (after the one it has, if any).
fn add_note(v: &mut Value, text: &str) {
    let note = match v.get("note").and_then(Value::as_str) {
        Some(n) => format!("{n}; {text}"),
        None => text.to_owned(),
    };
    v["note"] = json!(note);
}

/// The number of the newest dialog `snap` knows (pending or recently
/// closed): dialogs are numbered `d-N` in the order they opened.
fn last_dialog_number(snap: &Snapshot) -> u64 {
    snap.pending_dialogs
        .iter()
        .map(|d| d.id.as_str())
        .chain(snap.recent_dialogs.iter().map(|c| c.dialog.id.as_str()))
        .filter_map(|id| id.strip_prefix("d-")?.parse().ok())
        .max()
        .unwrap_or(0)
}

/// A dialog newer than number `after` that opened in tab `tab` (pending
/// or already closed), if any: its id.
fn dialog_opened_during(snap: &Snapshot, tab: Option<&str>, after: u64) -> Option<String> {
    snap.pending_dialogs
        .iter()
        .map(|d| &**d)
        .chain(snap.recent_dialogs.iter().map(|c| &c.dialog))
        .filter(|d| d.target_id.is_none() || d.target_id.as_deref() == tab)
        .filter(|d| d.holds_renderer())
        .find(|d| {
            d.id.strip_prefix("d-")
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n > after)
        })
        .map(|d| d.id.clone())
}

fn tab_ids(s: &Supervisor) -> Vec<String> {
    let snap = s.snapshot();
    let tabs = snap.tabs.iter().map(|t| t.target_id.clone());
    tabs.chain(snap.downloads.iter().map(|d| d.id.clone()))
        .collect()
}

/// `browser_navigate`'s note when the page it leaves answers nothing.
pub const BUSY_PAGE_NOTE: &str = "the page's script has not yielded for seconds (a busy loop): its renderer answers nothing, so Chromium neither leaves nor loads it. browser_tabs close closes the tab anyway; then browser_tabs new opens a fresh one";

/// Adds `tabs_opened: [{target_id, url, opener_target_id}]` to a tool's
/// result when tabs opened during the call (not in `before`), and
/// `downloads_started: [{id, url, suggested_filename, path}]` when
/// downloads began.
/// How long an action's result waits for the tabs it opened to say where
/// they are going: a popup's first navigation starts about 70 ms after
/// Chromium reports it (its URL is `""` until then); one that loads nothing
/// (`window.open()`) costs the whole wait.
pub const NEW_TAB_URL_WAIT: Duration = Duration::from_millis(500);

/// Waits, at most [`NEW_TAB_URL_WAIT`], until every tab not in `before`
/// has a URL (the one it is loading, before its commit).
async fn new_tabs_heading_somewhere(s: &Supervisor, before: &[String]) {
    let mut snaps = s.subscribe();
    let all_named = |snap: &Snapshot| {
        snap.tabs
            .iter()
            .filter(|t| !before.contains(&t.target_id))
            .all(|t| !t.url.is_empty())
    };
    let _ = tokio::time::timeout(NEW_TAB_URL_WAIT, async {
        while !all_named(&snaps.borrow_and_update()) {
            if snaps.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
}

fn add_tabs_opened(out: &mut Value, s: &Supervisor, before: &[String]) {
    let snap = s.snapshot();
    let opened: Vec<Value> = snap
        .tabs
        .iter()
        .filter(|t| !before.contains(&t.target_id))
        .map(|t| json!({"target_id": t.target_id, "url": t.url, "opener_target_id": t.opener_target_id}))
        .collect();
    if !opened.is_empty() {
        out["tabs_opened"] = json!(opened);
    }
    let started: Vec<Value> = snap
        .downloads
        .iter()
        .filter(|d| !before.contains(&d.id))
        .map(|d| json!({"id": d.id, "url": d.url, "suggested_filename": d.suggested_filename, "path": d.path}))
        .collect();
    if !started.is_empty() {
        out["downloads_started"] = json!(started);
    }
}

/// What `browser_snapshot` returns (and `browser_wait` as its
/// `snapshot`): one typed view, serialized once. The supervisor's snapshot
/// with each tab's URL and title as Chromium has them now (the current
/// tab's at the top), the interrupted calls that completed, the event
/// sequence it shows, and, when asked for, one part of the page outline.
#[derive(Serialize)]
struct SnapshotResult {
    #[serde(flatten)]
    snapshot: Snapshot,
    completed_calls: Vec<CompletedCall>,
    event_seq: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    page: Option<PageView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'static str>,
}

/// The outline's part of [`SnapshotResult`].
#[derive(Serialize)]
struct PageView {
    page: String,
    page_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    page_cursor: Option<String>,
    frame_refs: std::collections::BTreeMap<String, String>,
}

impl From<PageOutline> for PageView {
    fn from(o: PageOutline) -> PageView {
        PageView {
            page: o.text,
            page_truncated: o.truncated,
            page_cursor: o.cursor,
            frame_refs: o.frame_refs,
        }
    }
}

impl SnapshotResult {
    fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("snapshot serializes")
    }
}

/// The snapshot as the agent reads it ([`SnapshotResult`], no outline).
async fn snapshot_result(s: &Supervisor) -> SnapshotResult {
    // Before the snapshot: an event is recorded only once a snapshot showing
    // it is published, so this one shows every event up to `event_seq`, and
    // one it does not show counts for a `browser_wait` since it.
    let event_seq = s.events().latest();
    let mut snapshot = Snapshot::clone(&s.snapshot());
    let live = s.live_tabs(LIVE_READ_TIMEOUT).await.unwrap_or_default();
    if let Some(p) = snapshot
        .tabs
        .iter()
        .find(|t| t.current)
        .and_then(|t| live.iter().find(|p| p.target_id == t.target_id))
    {
        snapshot.url = p.url.as_str().into();
        snapshot.title = p.title.as_str().into();
    }
    snapshot.tabs = live_tab_views(&snapshot.tabs, &live);
    SnapshotResult {
        snapshot,
        completed_calls: s.completed_calls(),
        event_seq,
        page: None,
        note: None,
    }
}

/// `tabs` with each entry's URL and title as Chromium has them now
/// (`live`, [`Supervisor::live_tabs`]): no event tells when a script sets
/// `document.title`, so the last heard ones can be stale. Every tool that
/// returns `tabs` shows them through here.
fn live_tab_views(tabs: &List<TabView>, live: &[LivePage]) -> List<TabView> {
    tabs.iter()
        .map(|t| match live.iter().find(|p| p.target_id == t.target_id) {
            Some(p) => Arc::new(TabView {
                url: p.url.as_str().into(),
                title: p.title.as_str().into(),
                ..TabView::clone(t)
            }),
            None => t.clone(),
        })
        .collect()
}

/// Waits, at most [`PARSE_WAIT`], until the current tab's document is no
/// longer `loading`: a navigation the action's script started late (a
/// submit handler's `location.href`) may have committed a document whose
/// elements are not parsed yet, and its outline would be empty.
async fn parsed(s: &Supervisor) {
    let deadline = tokio::time::Instant::now() + PARSE_WAIT;
    // Straight to the page session, not as an agent call: a dialog opening
    // meanwhile makes it time out (bounded), never an interrupted call.
    let Some(session) = s.page_session_id().await else {
        return;
    };
    while tokio::time::Instant::now() < deadline {
        let state = s
            .cdp_on_session(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": "document.readyState", "returnByValue": true}),
                READ_TIMEOUT,
            )
            .await;
        match state {
            Ok(v) if v.pointer("/result/value") == Some(&json!("loading")) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            _ => return,
        }
    }
}

/// How long an action asked for the page's outline, during which no
/// document committed, watches for a late commit (see `add_page`).
const LATE_COMMIT: Duration = Duration::from_millis(500);

/// The longest an action's outline waits for its document to be parsed.
const PARSE_WAIT: Duration = Duration::from_secs(5);

/// The page's URL and title now ([`Supervisor::live_page`]), else the last
/// known ones from `snap`.
async fn live_url_title(s: &Supervisor, snap: &Snapshot) -> (String, String) {
    match s.live_page(LIVE_READ_TIMEOUT).await {
        Some(p) => (p.url, p.title),
        None => (snap.url.to_string(), snap.title.to_string()),
    }
}

/// The tool error of a call a dialog interrupted (DESIGN: "Calls a dialog
/// interrupts"): it must say that the command is queued, not lost, and
/// must not be resent.
fn interrupted(method: &str, call_id: &str, pending_dialogs: List<PendingDialog>) -> ToolError {
    // No dialog known: one that opened before the supervisor attached
    // blocks the page (page_blocked), and browser_dialog cannot answer it;
    // nor can it answer one Chromium refuses (answerable: false).
    let unseen = pending_dialogs.is_empty();
    let refused = !unseen && pending_dialogs.iter().all(|d| !d.answerable);
    let structured = json!({
        "interrupted_by_dialog": true,
        "call_id": call_id,
        "method": method,
        "pending_dialogs": pending_dialogs,
    });
    // A top document's beforeunload answers no navigation: only closing
    // its tab releases it.
    let closing = refused
        && pending_dialogs.iter().all(|d| {
            matches!(
                state::not_answerable(d),
                DialogError::OnlyClosingReleases { .. }
            )
        });
    let remedy = if closing {
        format!(
            "Chromium refuses to answer the beforeunload blocking it (answerable: false), and its page answers no navigation: only closing its tab releases it (browser_tabs close; the watchdog does that after dialog_timeout_s); browser_snapshot's completed_calls then lists call_id {call_id} with this command's outcome."
        )
    } else if refused {
        format!(
            "Chromium refuses to answer the dialog blocking it (answerable: false): only navigating releases the page (browser_navigate, e.g. to the current URL); browser_snapshot's completed_calls then lists call_id {call_id} with this command's outcome."
        )
    } else if unseen {
        format!(
            "That dialog opened before the supervisor attached, so browser_dialog cannot answer it (page_blocked: true): only navigating releases the page (browser_navigate, e.g. to the current URL); browser_snapshot's completed_calls then lists call_id {call_id} with this command's outcome."
        )
    } else {
        format!(
            "Answer the dialog with browser_dialog: its completed_calls (or browser_snapshot's, if the dialog closes another way) will carry call_id {call_id} with this call's result."
        )
    };
    ToolError {
        message: format!(
            "{method} has not completed: a dialog (a JavaScript dialog, or a login prompt) blocks the page. It is still queued there and runs once the dialog is answered: do not resend it (it would run twice). {remedy}"
        ),
        structured: Some(structured),
    }
}

/// The tool error of a `browser_fill_form` a dialog (or its deadline)
/// stopped at a field: the interrupted call's error for that field's
/// input, saying which fields were filled and which were not.
fn fill_stopped(stop: FillStop) -> ToolError {
    const TOOL: &str = "browser_fill_form";
    let mut e = match stop.outcome {
        CallOutcome::TimedOut { call_id, after } => timed_out(TOOL, &call_id, after),
        CallOutcome::Interrupted {
            call_id,
            pending_dialogs,
        } => interrupted(TOOL, &call_id, pending_dialogs),
        CallOutcome::Reply(_) => {
            unreachable!("a form stops only when a field's input did not reply")
        }
    };
    let names = |refs: Vec<&String>| {
        if refs.is_empty() {
            "none".to_owned()
        } else {
            refs.iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    e.message = format!(
        "browser_fill_form stopped at field {q}: filled before it: {}; the input of {q} is queued in the page (never fill it again); not filled: {} (after answering, call browser_fill_form with only those). {}",
        names(stop.filled.keys().collect()),
        names(stop.not_filled.iter().collect()),
        e.message,
        q = stop.queued,
    );
    if let Some(Value::Object(details)) = &mut e.structured {
        details.insert("filled".into(), Value::Object(stop.filled));
        details.insert("queued".into(), json!(stop.queued));
        details.insert("not_filled".into(), json!(stop.not_filled));
    }
    e
}

/// The tool error of a call whose timeout passed while its command is
/// still queued in the page (DESIGN: "Calls a dialog interrupts", timed-out
/// calls): it may still run, so it must not be resent; its outcome comes
/// through `completed_calls`.
fn timed_out(method: &str, call_id: &str, after: Duration) -> ToolError {
    ToolError {
        message: format!(
            "{method} got no reply within {:.1} s and is still queued in the page: it may still run (a promise not yet settled, a busy page). Do not resend it (it could run twice); if it completes, browser_snapshot's completed_calls lists call_id {call_id} with its outcome.",
            after.as_secs_f64()
        ),
        structured: Some(json!({
            "timed_out": true,
            "call_id": call_id,
            "method": method,
        })),
    }
}

/// Checks a URL `browser_navigate` accepts: absolute, with scheme http,
/// https, file, about or data.
pub fn check_url(url: &str) -> Result<(), ToolError> {
    const ALLOWED: &str = "http, https, file, about, data";
    let parsed = url::Url::parse(url).map_err(|e| {
        ToolError::new(format!(
            "url {:?} is not an absolute URL ({e}); give e.g. https://example.com/ (schemes: {ALLOWED})",
            wording::cut(url)
        ))
    })?;
    match parsed.scheme() {
        "http" | "https" | "file" | "about" | "data" => Ok(()),
        other => Err(ToolError::new(format!(
            "url scheme {other:?} is not allowed; allowed: {ALLOWED}"
        ))),
    }
}

/// What a `browser_cdp` call would reach, as [`CDP_REFUSALS`] judge it.
#[derive(Clone, Copy, Debug)]
pub struct CdpScope<'a> {
    /// The browser is the task's own (we launched it): ending it ends no
    /// one else's tabs.
    pub owns_browser: bool,
    /// `isolation: context`: the task's browser context; every other
    /// context in the browser is another task's.
    pub context: Option<&'a str>,
    /// The targets the task supervises: its tabs and their OOPIFs.
    pub targets: &'a [String],
    /// The call's params.
    pub params: &'a Value,
}

impl CdpScope<'_> {
    /// `params[key]` as text, if it is there.
    fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).and_then(Value::as_str)
    }

    /// In a context of its own, `params.browserContextId` names another
    /// context (given and not the task's).
    fn names_other_context(&self) -> bool {
        self.context
            .is_some_and(|own| self.param("browserContextId").is_some_and(|c| c != own))
    }

    /// In a context of its own, `params.browserContextId` is not the
    /// task's (absent: the browser's default context, not the task's).
    fn not_own_context(&self) -> bool {
        self.context
            .is_some_and(|own| self.param("browserContextId") != Some(own))
    }

    /// In a context of its own, `params.targetId` is not one of the task's.
    fn names_other_target(&self) -> bool {
        self.context.is_some()
            && self
                .param("targetId")
                .is_some_and(|t| !self.targets.iter().any(|o| o == t))
    }
}

/// A `browser_cdp` method refused where it would reach past the task.
pub struct CdpRefusal {
    /// The CDP method, e.g. `Browser.close`.
    pub method: &'static str,
    /// Whether it is refused in this scope.
    pub refused: fn(&CdpScope) -> bool,
    /// Why, for the agent, with what to do instead.
    pub why: &'static str,
}

/// Every `browser_cdp` refusal, in one place: a method is refused when it
/// would end or change what is not the task's own — the whole browser when
/// it is shared, or, with `isolation: context` (DESIGN "Many tasks, one
/// browser"), another task's context or targets.
pub const CDP_REFUSALS: &[CdpRefusal] = &[
    CdpRefusal {
        method: "Browser.close",
        refused: |s| !s.owns_browser,
        why: "the browser is not this task's own (attached through cdp_url, a cloud provider or a Grid, or shared by other tasks' contexts): closing it would end every other client's tabs. browser_disconnect detaches this task; browser_tabs close closes one of its tabs",
    },
    CdpRefusal {
        method: "Browser.crash",
        refused: |s| !s.owns_browser,
        why: "the browser is not this task's own (attached through cdp_url, a cloud provider or a Grid, or shared by other tasks' contexts): crashing it would end every other client's tabs. Page.crash on this task's tab tests a crash without that",
    },
    CdpRefusal {
        method: "Target.disposeBrowserContext",
        refused: |s| s.not_own_context() || (s.context.is_none() && !s.owns_browser),
        why: "that browser context is not this task's: disposing it would close another task's tabs and delete its cookies. This task's own context ends with the task",
    },
    CdpRefusal {
        method: "Target.createTarget",
        refused: |s| s.names_other_context(),
        why: "browserContextId names another task's context: the tab would open among its cookies and storage. Leave browserContextId out (the tab opens in this task's context) or use browser_tabs new",
    },
    CdpRefusal {
        method: "Target.closeTarget",
        refused: |s| s.names_other_target(),
        why: "targetId is not one of this task's tabs: it belongs to another task sharing the browser. browser_tabs list shows this task's tabs",
    },
    CdpRefusal {
        method: "Target.attachToTarget",
        refused: |s| s.names_other_target(),
        why: "targetId is not one of this task's tabs or frames: it belongs to another task sharing the browser. browser_tabs list shows this task's tabs",
    },
    CdpRefusal {
        method: "Target.activateTarget",
        refused: |s| s.names_other_target(),
        why: "targetId is not one of this task's tabs: it belongs to another task sharing the browser. browser_tabs select makes one of this task's tabs current",
    },
    CdpRefusal {
        method: "Target.setDiscoverTargets",
        refused: |s| s.context.is_some(),
        why: "target discovery is the supervisor's own wiring, shared with the other tasks of this browser: turned off, this task would stop seeing its popups. browser_tabs list shows this task's tabs",
    },
    CdpRefusal {
        method: "Target.setAutoAttach",
        refused: |s| s.context.is_some(),
        why: "auto-attach is the supervisor's own wiring: rewired, this task would miss its popups and frames. The supervisor already attaches to every tab and OOPIF of this task",
    },
    CdpRefusal {
        method: "Storage.clearCookies",
        refused: |s| s.not_own_context(),
        why: "without this task's browserContextId it clears another context's cookies (the browser's default one, or another task's). Pass browserContextId (below), or Network.clearBrowserCookies, which clears this task's context only",
    },
    CdpRefusal {
        method: "Browser.setDownloadBehavior",
        refused: |s| s.names_other_context(),
        why: "browserContextId names another task's context: its downloads are its own. Leave browserContextId out: this task's context is used",
    },
    CdpRefusal {
        method: "Target.getTargetInfo",
        refused: |s| s.names_other_target(),
        why: "targetId is not one of this task's tabs or frames: it belongs to another task sharing the browser. Leave targetId out (this tab), or browser_tabs list",
    },
    CdpRefusal {
        method: "Browser.setWindowBounds",
        refused: |s| s.context.is_some(),
        why: "windowId may be another task's window (ids are counted across the shared browser): minimized or resized, its page is throttled or clipped. Emulation.setDeviceMetricsOverride sizes this task's viewport",
    },
    CdpRefusal {
        method: "Browser.grantPermissions",
        refused: |s| s.not_own_context(),
        why: "without this task's browserContextId it grants permissions in another context (the browser's default one, or another task's). Pass browserContextId (below)",
    },
    CdpRefusal {
        method: "Browser.setPermission",
        refused: |s| s.not_own_context(),
        why: "without this task's browserContextId it sets a permission in another context (the browser's default one, or another task's). Pass browserContextId (below)",
    },
    CdpRefusal {
        method: "Browser.resetPermissions",
        refused: |s| s.not_own_context(),
        why: "without this task's browserContextId it resets another context's permissions (the browser's default one, or another task's). Pass browserContextId (below)",
    },
    CdpRefusal {
        method: "Browser.crashGpuProcess",
        refused: |s| !s.owns_browser,
        why: "the GPU process serves the whole browser, which is not this task's own (attached through cdp_url, a cloud provider or a Grid, or shared by other tasks' contexts): every other client's pages would lose it",
    },
];

/// `method` against [`CDP_REFUSALS`] in `scope`: refused, nothing sent.
fn check_refused(method: &str, scope: CdpScope) -> Result<(), ToolError> {
    match CDP_REFUSALS
        .iter()
        .find(|r| r.method == method && (r.refused)(&scope))
    {
        Some(r) => {
            let own = scope
                .context
                .map(|c| format!(" (this task's browserContextId is {c})"))
                .unwrap_or_default();
            Err(ToolError::new(format!(
                "browser_cdp {method} is refused (nothing was sent): {}{own}",
                r.why
            )))
        }
        None => Ok(()),
    }
}

/// In a context of its own, a task lists only its own context's targets
/// (`Target.getTargets`): another task's URLs and titles are not its to read.
fn only_own_targets(method: &str, reply: &mut Value, own: &str) {
    if method != "Target.getTargets" {
        return;
    }
    if let Some(Value::Array(infos)) = reply.get_mut("targetInfos") {
        infos.retain(|t| t.get("browserContextId").and_then(Value::as_str) == Some(own));
    }
}

/// The targets `s`'s task supervises, for [`CdpScope::targets`]: its tabs
/// and the frames of its current tab (an OOPIF's target id is its frame id).
fn task_targets(s: &Supervisor) -> Vec<String> {
    let snap = s.snapshot();
    let tabs = snap.tabs.iter().map(|t| t.target_id.clone());
    tabs.chain(snap.frame_tree.children.iter().map(|f| f.frame_id.clone()))
        .collect()
}

/// The longest CDP method name `browser_cdp` takes: Chromium's longest is
/// under 60 characters; a longer one would only be echoed back (by
/// Chromium's "wasn't found" too).
pub const CDP_METHOD_MAX_CHARS: usize = 100;

fn check_method(method: &str) -> Result<(), ToolError> {
    let ok = method.len() <= CDP_METHOD_MAX_CHARS
        && method
            .split_once('.')
            .is_some_and(|(d, m)| !d.is_empty() && !m.is_empty() && !m.contains('.'));
    if ok {
        Ok(())
    } else {
        Err(ToolError::new(format!(
            "method {method:?} is not a CDP method; give Domain.method (at most {CDP_METHOD_MAX_CHARS} characters), e.g. Runtime.evaluate"
        )))
    }
}

/// The pending dialog `ask_user` is for: the one `dialog_id` names, or the
/// sole one. Errors as `browser_dialog`'s, and for a dialog Chromium will
/// not answer or an `http_auth` (MCP forbids passwords through form
/// elicitation: the error says how else to answer it).
fn askable_dialog(
    s: &Supervisor,
    snap: &Snapshot,
    dialog_id: Option<&str>,
) -> Result<Arc<PendingDialog>, ToolError> {
    let pending = &snap.pending_dialogs;
    let d = match dialog_id {
        Some(id) => pending.iter().find(|d| d.id == id).ok_or_else(|| {
            crate::supervisor::state::not_pending(
                id,
                snap.recent_dialogs.iter().map(|c| &**c),
                pending.iter().map(|d| d.id.clone()),
                crate::supervisor::state::Now::system().unix_s,
            )
        }),
        None => match &pending[..] {
            [] => Err(DialogError::NoDialog),
            [one] => Ok(one),
            many => Err(DialogError::Ambiguous {
                candidates: many.iter().map(|d| d.id.clone()).collect(),
            }),
        },
    }
    .map_err(|e| dialog_error(s, e))?
    .clone();
    if !d.answerable {
        return Err(dialog_error(s, state::not_answerable(&d)));
    }
    if d.dialog_type == DialogType::HttpAuth {
        return Err(ToolError::new(format!(
            "ask_user cannot answer http_auth {}: the MCP specification forbids asking for passwords through form elicitation; it is still pending: accept it with username and password, dismiss it, or store credentials for {} in the config (browser.credentials)",
            d.id,
            d.http_auth
                .as_ref()
                .map_or("its origin", |c| c.origin.as_str())
        )));
    }
    Ok(d)
}

/// Resolves once dialog `id` is no longer pending (or the supervisor is
/// gone): the human's answer would come too late.
async fn closed_meanwhile(s: &Supervisor, id: &str) {
    let mut snaps = s.subscribe();
    loop {
        if !snaps
            .borrow_and_update()
            .pending_dialogs
            .iter()
            .any(|p| p.id == id)
        {
            return;
        }
        if snaps.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The soak (seed 4242): an OOPIF's prompt opened while `browser_type`
    /// sent its text; Chromium replied to the input and the form got
    /// nothing, yet the result said typed. A dialog newer than the action's
    /// start in its tab (pending or already closed) is named in a note;
    /// one in another tab, or one older than the start, is not.
    #[test]
    fn a_dialog_opened_during_an_action_in_its_tab_is_found() {
        let dialog = |id: &str, tab: &str| -> Arc<PendingDialog> {
            Arc::new(
                serde_json::from_value(json!({"id": id, "type": "prompt", "message": "m",
                    "default_prompt": "", "opened_at": 1.0, "frame_id": "F2", "url": "u",
                    "answerable": true, "target_id": tab}))
                .unwrap(),
            )
        };
        let mut snap = Snapshot {
            pending_dialogs: vec![dialog("d-3", "T1")].into_iter().collect(),
            ..Snapshot::default()
        };
        let before = last_dialog_number(&snap);
        assert_eq!(before, 3);
        assert_eq!(dialog_opened_during(&snap, Some("T1"), before), None);
        snap.pending_dialogs = vec![dialog("d-3", "T1"), dialog("d-4", "T2")]
            .into_iter()
            .collect();
        assert_eq!(
            dialog_opened_during(&snap, Some("T1"), before),
            None,
            "another tab's"
        );
        snap.pending_dialogs = vec![dialog("d-3", "T1"), dialog("d-5", "T1")]
            .into_iter()
            .collect();
        assert_eq!(
            dialog_opened_during(&snap, Some("T1"), before).as_deref(),
            Some("d-5")
        );
        let mut v = json!({"typed": "e1"});
        add_note(&mut v, "one");
        add_note(&mut v, "two");
        assert_eq!(v["note"], "one; two");
    }

    #[test]
    fn every_tools_arguments_are_checked_without_a_browser() {
        let open = NavigationPolicy::default();
        let p = |name: &str, args: Value| ToolCall::parse(name, args, &open);
        assert_eq!(
            p("browser_navigate", json!({"url": "http://a.test/"})).unwrap(),
            ToolCall::Navigate {
                url: "http://a.test/".into(),
                snapshot: false
            }
        );
        let e = p("browser_navigate", json!({"url": "file:///etc/passwd"})).unwrap_err();
        assert!(e.message.contains("allow_file_urls: false"), "{e}");
        let blocked = NavigationPolicy::new(&[] as &[&str], &["http://b.test"], false).unwrap();
        let e = ToolCall::parse(
            "browser_navigate",
            json!({"url": "http://b.test:81/"}),
            &blocked,
        )
        .unwrap_err();
        assert!(
            e.message.contains("rule blocked_origins: http://b.test"),
            "{e}"
        );
        assert!(p("browser_navigate", json!({"url": 1})).is_err());
        assert!(p("browser_navigate", json!({"url": "http://a.test/", "x": 1})).is_err());
        assert_eq!(
            p("browser_snapshot", Value::Null).unwrap(),
            ToolCall::Snapshot {
                page: PageRequest::Read(OutlineMode::Default)
            }
        );
        assert_eq!(
            p("browser_dialog", json!({"action": "ask_user"})).unwrap(),
            ToolCall::Dialog {
                action: DialogChoice::AskUser,
                prompt_text: None,
                dialog_id: None,
                files: None,
                login: None,
            }
        );
        assert!(p("browser_dialog", json!({"action": "maybe"})).is_err());
        let e = p(
            "browser_dialog",
            json!({"action": "accept", "password": "hunter2"}),
        )
        .unwrap_err();
        assert!(
            e.message.contains("username and password go together")
                && !e.message.contains("hunter2"),
            "{e}"
        );
        match p(
            "browser_dialog",
            json!({"action": "accept", "username": "u", "password": "hunter2"}),
        )
        .unwrap()
        {
            ToolCall::Dialog { login: Some(l), .. } => {
                assert_eq!(l.username, "u");
                assert_eq!(l.password.expose(), "hunter2");
                assert!(!format!("{l:?}").contains("hunter2"), "Debug hides it");
            }
            other => panic!("{other:?}"),
        }
        match p("browser_cdp", json!({"method": "Page.navigate"})).unwrap() {
            ToolCall::Cdp {
                params, timeout_s, ..
            } => {
                assert_eq!(params, json!({}));
                assert_eq!(timeout_s, CDP_DEFAULT_TIMEOUT_S);
            }
            other => panic!("{other:?}"),
        }
        // A tab browser_cdp opens is checked as browser_tabs new's is.
        let e = ToolCall::parse(
            "browser_cdp",
            json!({"method": "Target.createTarget", "params": {"url": "http://b.test/x"}}),
            &blocked,
        )
        .unwrap_err();
        assert!(
            e.message.contains("rule blocked_origins: http://b.test"),
            "{e}"
        );
        let e = p(
            "browser_cdp",
            json!({"method": "Target.createTarget", "params": {"url": "file:///etc/passwd"}}),
        )
        .unwrap_err();
        assert!(e.message.contains("allow_file_urls: false"), "{e}");
        for bad in [
            "view-source:file:///etc/passwd",
            "chrome://version",
            "b-page?x",
            "//b.test/",
        ] {
            let args = json!({"method": "Target.createTarget", "params": {"url": bad}});
            assert!(p("browser_cdp", args).is_err(), "{bad}");
        }
        for ok in ["", "about:blank", "http://a.test/"] {
            let args = json!({"method": "Target.createTarget", "params": {"url": ok}});
            assert!(
                ToolCall::parse("browser_cdp", args, &blocked).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            json!({"method": "Page"}),
            json!({"method": "Page.navigate", "params": [1]}),
            json!({"method": "Page.navigate", "timeout_s": 0}),
            json!({"method": "Page.navigate", "timeout_s": 301}),
        ] {
            assert!(p("browser_cdp", bad.clone()).is_err(), "{bad}");
        }
        assert!(p("browser_wait", json!({"event": "any", "timeout_s": 1e300})).is_err());
        assert!(p("browser_wait", json!({"event": "never"})).is_err());
        assert!(p("browser_connect", json!({"cdp_url": "  "})).is_err());
        assert_eq!(
            p(
                "browser_connect",
                json!({"cdp_url": "http://h:1", "target_id": ""})
            )
            .unwrap(),
            ToolCall::Connect {
                cdp_url: "http://h:1".into(),
                target_id: None
            }
        );
        assert_eq!(
            p("browser_disconnect", json!({})).unwrap(),
            ToolCall::Disconnect
        );
        assert!(p("browser_teleport", json!({})).is_err());
    }

    /// Issue 44: `browser_cdp Browser.close` killed a shared browser.
    #[test]
    fn regression_44_browser_close_and_crash_are_refused_on_a_browser_not_the_tasks_own() {
        let none = json!({});
        let shared = CdpScope {
            owns_browser: false,
            context: None,
            targets: &[],
            params: &none,
        };
        let own = CdpScope {
            owns_browser: true,
            ..shared
        };
        for method in ["Browser.close", "Browser.crash"] {
            let e = check_refused(method, shared).unwrap_err();
            assert!(
                e.message.contains("not this task's own") && e.message.contains("nothing was sent"),
                "{e}"
            );
            assert!(
                check_refused(method, own).is_ok(),
                "{method} on our own browser"
            );
        }
        assert!(check_refused("Browser.getVersion", shared).is_ok());
        assert!(check_refused("Page.close", shared).is_ok());
        // A browser of the task's own: its wiring is its own business.
        assert!(check_refused("Target.setDiscoverTargets", own).is_ok());
        assert!(check_refused("Storage.clearCookies", own).is_ok());
    }

    /// Issue 41: with a context per task, what reaches another task's
    /// context or targets, or the whole browser, is refused.
    #[test]
    fn in_a_context_of_its_own_a_task_cannot_reach_another_tasks() {
        let targets = ["T1".to_owned(), "F1".to_owned()];
        let with = |params: Value| {
            let scope = CdpScope {
                owns_browser: false,
                context: Some("C1"),
                targets: &targets,
                params: &params,
            };
            (
                check_refused("Target.disposeBrowserContext", scope).is_err(),
                check_refused("Target.createTarget", scope).is_err(),
                check_refused("Target.closeTarget", scope).is_err(),
                check_refused("Target.attachToTarget", scope).is_err(),
                check_refused("Storage.clearCookies", scope).is_err(),
            )
        };
        assert_eq!(
            with(json!({"browserContextId": "C2", "targetId": "T2"})),
            (true, true, true, true, true)
        );
        assert_eq!(
            with(json!({"browserContextId": "C1", "targetId": "T1"})),
            (false, false, false, false, false)
        );
        // OOPIFs of the task's pages are its own; no context named: its own.
        assert_eq!(
            with(json!({"targetId": "F1"})),
            (true, false, false, false, true)
        );
        let params = json!({"discover": false});
        let scope = CdpScope {
            owns_browser: false,
            context: Some("C1"),
            targets: &targets,
            params: &params,
        };
        for method in [
            "Browser.close",
            "Browser.crash",
            "Target.setDiscoverTargets",
            "Target.setAutoAttach",
        ] {
            let e = check_refused(method, scope).unwrap_err();
            assert!(
                e.message.contains("nothing was sent") && e.message.contains("C1"),
                "{e}"
            );
        }
        assert!(check_refused("Runtime.evaluate", scope).is_ok());
        assert!(check_refused("Network.clearBrowserCookies", scope).is_ok());
        let mut listed = json!({"targetInfos": [
            {"targetId": "T1", "browserContextId": "C1"},
            {"targetId": "T2", "browserContextId": "C2"},
            {"targetId": "T3"},
        ]});
        only_own_targets("Target.getTargets", &mut listed, "C1");
        assert_eq!(
            listed["targetInfos"],
            json!([{"targetId": "T1", "browserContextId": "C1"}])
        );
    }

    #[test]
    fn bad_urls_and_methods_are_clear_errors() {
        assert!(
            check_url("example.com")
                .unwrap_err()
                .message
                .contains("absolute")
        );
        assert!(
            check_url("javascript:alert(1)")
                .unwrap_err()
                .message
                .contains("allowed")
        );
        assert!(check_url("http://a.test/").is_ok());
        assert!(check_method("Runtime.evaluate").is_ok());
        assert!(
            check_method("evaluate")
                .unwrap_err()
                .message
                .contains("Domain.method")
        );
        assert!(check_method("A.b.c").is_err());
    }
}
