//! A person at the wheel (DESIGN "A person at the wheel: live view and
//! handoff"): a live view of a task's browser, and a handoff that gives
//! the task to a person and back.
//!
//! - [`Hub`] (one per process, [`hub`]) holds each task's live state
//!   ([`TaskLive`]) and the tokens ([`tokens`]); the live view's HTTP
//!   routes ([`http`]) find a task by token.
//! - A handoff ([`TaskLive::begin_handoff`]) mints a control token, tells
//!   the task's core that a person has it (auto policies and the watchdog
//!   wait: [`crate::supervisor::driver::Supervisor::set_person_in_control`]),
//!   and follows what the person does (URLs, dialogs answered, tabs) from
//!   the supervisor's notices. It ends when the person presses Done, at its
//!   deadline, when the agent's call is cancelled, or with the task; its
//!   [`HandoffReport`] goes in the handoff's result and the next `changes`.
//!   Nothing the person types is kept or logged.
//! - The screen ([`cast`]) is cast only while someone watches:
//!   `Page.startScreencast` on the current tab when the first viewer
//!   connects, `Page.stopScreencast` when the last leaves; each viewer
//!   holds at most the newest frame.

pub mod cast;
pub mod http;
pub mod input;
pub mod tokens;

use crate::supervisor::driver::Supervisor;
use crate::supervisor::registry::Registry;
use crate::supervisor::state::Notice;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};
pub use tokens::Access;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// `browser_handoff`'s default `timeout_s`: ten minutes.
pub const HANDOFF_TIMEOUT_DEFAULT: Duration = Duration::from_secs(600);
/// `browser_handoff`'s largest `timeout_s`: an hour.
pub const HANDOFF_TIMEOUT_MAX: Duration = Duration::from_secs(3600);
/// Most URLs a handoff report lists (the first ones, then a count).
pub const REPORT_URLS_MAX: usize = 50;
/// Viewers one task serves at once; one more is refused.
pub const VIEWERS_MAX: usize = 32;

/// How a handoff ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EndedBy {
    /// The person pressed Done.
    Person,
    /// Its `timeout_s` passed.
    Timeout,
    /// The agent's side ended it: its call was cancelled, or the task ended.
    Agent,
}

/// What a handoff did, as its result and the next `changes` say: never
/// what the person typed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HandoffReport {
    /// Why the agent handed over.
    pub reason: String,
    /// Unix seconds.
    pub started_at: f64,
    /// Unix seconds.
    pub ended_at: f64,
    /// Who ended it.
    pub ended_by: EndedBy,
    /// The documents the task's tabs committed meanwhile, in order
    /// (at most [`REPORT_URLS_MAX`]).
    pub urls: Vec<String>,
    /// Prompts the person answered.
    pub dialogs_answered: u32,
    /// Tabs opened meanwhile.
    pub tabs_opened: u32,
    /// Tabs closed meanwhile.
    pub tabs_closed: u32,
}

/// A handoff under way.
struct Active {
    id: u64,
    reason: String,
    started_at: f64,
    /// Unix seconds when it ends by itself (its `timeout_s`).
    ends_at: f64,
    urls: Vec<String>,
    dialogs_answered: u32,
    tabs_opened: u32,
    tabs_closed: u32,
    /// Ends its follower task.
    follow: CancellationToken,
}

#[derive(Default)]
struct Control {
    active: Option<Active>,
    /// The last handoff's report, once ended.
    last: Option<(u64, HandoffReport)>,
    /// A report not yet in any `changes`.
    unreported: Option<HandoffReport>,
    next_id: u64,
}

/// Who has the task now, as `/state` and `person_in_control` say.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InControl {
    /// Unix seconds when the person took it.
    pub since: f64,
    /// The agent's reason.
    pub reason: String,
    /// Unix seconds when it ends by itself.
    pub until: f64,
}

/// A handoff just begun: where the person goes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Started {
    /// The handoff's number in its task.
    #[serde(skip)]
    pub id: u64,
    /// The control URL (`…/live/<token>`): for the person, nobody else.
    pub url: String,
    /// A watch-only URL of the same task.
    pub view_url: String,
    /// Unix seconds when the control token expires.
    pub expires_at: f64,
}

/// One task's live state.
pub struct TaskLive {
    task_id: String,
    registry: Registry,
    control: Mutex<Control>,
    /// Bumped whenever who has the task changes, or the task ends.
    changed: watch::Sender<u64>,
    /// The newest frame of the screen (while someone watches).
    frames: watch::Sender<Option<Arc<cast::Frame>>>,
    viewers: Mutex<cast::Viewers>,
    /// Cancelled when the task ends.
    ended: CancellationToken,
}

/// The live state of every task of the process, and the tokens.
#[derive(Default)]
pub struct Hub {
    tasks: Mutex<HashMap<String, Arc<TaskLive>>>,
    tokens: Mutex<tokens::Tokens>,
    /// The base URL of the listener opened when none is shared.
    listener: tokio::sync::Mutex<Option<String>>,
}

/// The process's hub.
pub fn hub() -> &'static Hub {
    static HUB: OnceLock<Hub> = OnceLock::new();
    HUB.get_or_init(Hub::default)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Unix seconds now.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Hub {
    /// `task_id`'s live state (made on first use), its supervisors in `registry`.
    pub fn task(&self, registry: &Registry, task_id: &str) -> Arc<TaskLive> {
        lock(&self.tasks)
            .entry(task_id.to_owned())
            .or_insert_with(|| {
                Arc::new(TaskLive {
                    task_id: task_id.to_owned(),
                    registry: registry.clone(),
                    control: Mutex::default(),
                    changed: watch::Sender::new(0),
                    frames: watch::Sender::new(None),
                    viewers: Mutex::default(),
                    ended: CancellationToken::new(),
                })
            })
            .clone()
    }

    /// `task_id`'s live state if it has any.
    pub fn existing(&self, task_id: &str) -> Option<Arc<TaskLive>> {
        lock(&self.tasks).get(task_id).cloned()
    }

    /// The task ended: a handoff under way ends (`agent`), every token of
    /// it stops working, and its viewers are told and let go.
    pub fn task_ended(&self, task_id: &str) {
        let task = lock(&self.tasks).remove(task_id);
        lock(&self.tokens).end_task(task_id);
        if let Some(t) = task {
            t.end_handoff(None, EndedBy::Agent);
            t.ended.cancel();
            t.changed.send_modify(|n| *n += 1);
        }
    }

    /// Mints a token for `task` with `access`, valid for `ttl` (a control
    /// token also only while handoff `handoff` lasts). Returns the token.
    fn mint(
        &self,
        task: &TaskLive,
        access: Access,
        ttl: Duration,
        handoff: Option<u64>,
    ) -> Result<String, String> {
        let token = tokens::fresh().map_err(|e| format!("cannot make a live-view token: {e}"))?;
        let now = Instant::now();
        let grant = tokens::Grant {
            task_id: task.task_id.clone(),
            access,
            expires: now + ttl,
            handoff,
        };
        lock(&self.tokens).insert(&token, grant, now);
        tracing::debug!(task_id = %crate::handles::logged(&task.task_id), token = %tokens::shown(&token), ?access, "live-view token minted");
        Ok(token)
    }

    /// What `token` opens: its task and access; `None` for a wrong, expired
    /// or ended one (the HTTP layer answers a bare 404).
    pub fn open(&self, token: &str) -> Option<(Arc<TaskLive>, Access)> {
        self.open_until(token)
            .map(|(task, access, _)| (task, access))
    }

    /// [`Hub::open`], with when the token stops working (Unix seconds).
    pub fn open_until(&self, token: &str) -> Option<(Arc<TaskLive>, Access, f64)> {
        let now = Instant::now();
        let grant = lock(&self.tokens).check(token, now)?;
        let expires_at = unix_now() + grant.expires.saturating_duration_since(now).as_secs_f64();
        let task = self.existing(&grant.task_id)?;
        if grant.access == Access::Control {
            // A control token is good only while its handoff lasts.
            let live = lock(&task.control)
                .active
                .as_ref()
                .is_some_and(|a| Some(a.id) == grant.handoff);
            if !live {
                return None;
            }
        }
        Some((task, grant.access, expires_at))
    }

    /// The base URL (`http://host:port`) of the live view's own listener on
    /// `addr`, opened on first use (for stdio and the Python module; the
    /// HTTP server shares its own).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn own_listener(&self, addr: std::net::SocketAddr) -> Result<String, String> {
        let mut base = self.listener.lock().await;
        if let Some(b) = base.as_ref() {
            return Ok(b.clone());
        }
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            format!("the live view cannot listen on {addr} (browser.live.addr): {e}")
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("the live view's listener has no address: {e}"))?;
        let router = http::router(http::HostCheck::for_bound(bound));
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::warn!("the live view's listener stopped: {e}");
            }
        });
        let url = http::base_url(bound);
        tracing::info!(%url, "live view listening");
        *base = Some(url.clone());
        Ok(url)
    }
}

impl TaskLive {
    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The task's supervisor, when one runs.
    pub fn supervisor(&self) -> Option<Supervisor> {
        self.registry.get(&self.task_id)
    }

    /// The registry the task's supervisors live in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Who has the task: `Some` while a person does.
    pub fn person_in_control(&self) -> Option<InControl> {
        lock(&self.control).active.as_ref().map(|a| InControl {
            since: a.started_at,
            reason: a.reason.clone(),
            until: a.ends_at,
        })
    }

    /// A receiver that changes whenever who has the task changes.
    pub fn control_changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Whether the task has ended.
    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// A watch-only URL of this task under `base`, valid for `ttl`.
    ///
    /// # Errors
    /// No token could be made.
    pub fn view_url(&self, base: &str, ttl: Duration) -> Result<String, String> {
        let token = hub().mint(self, Access::View, ttl, None)?;
        Ok(format!("{base}/live/{token}"))
    }

    /// Hands the task to a person until `timeout` passes (or Done, or an
    /// end): mints the control token (and a view one), tells the core a
    /// person has the task, follows what happens meanwhile.
    ///
    /// # Errors
    /// A handoff is already under way (it says since when and why), or no
    /// token could be made.
    pub fn begin_handoff(
        self: &Arc<Self>,
        reason: &str,
        timeout: Duration,
        base: &str,
        ttl: Duration,
    ) -> Result<Started, String> {
        let mut c = lock(&self.control);
        if let Some(a) = &c.active {
            return Err(format!(
                "a handoff is already under way (since {:.0}, reason {:?}); wait for it with browser_wait(event: \"handed_back\")",
                a.started_at,
                crate::supervisor::wording::cut(&a.reason)
            ));
        }
        c.next_id += 1;
        let id = c.next_id;
        let lasts = timeout.min(ttl);
        let control = hub().mint(self, Access::Control, lasts, Some(id))?;
        let view = hub().mint(self, Access::View, ttl, None)?;
        let follow = CancellationToken::new();
        let started_at = unix_now();
        c.active = Some(Active {
            id,
            reason: reason.to_owned(),
            started_at,
            ends_at: started_at + lasts.as_secs_f64(),
            urls: Vec::new(),
            dialogs_answered: 0,
            tabs_opened: 0,
            tabs_closed: 0,
            follow: follow.clone(),
        });
        drop(c);
        if let Some(s) = self.supervisor() {
            let _ = s.set_person_in_control(true);
        }
        tokio::spawn(follow_handoff(self.clone(), id, lasts, follow));
        self.changed.send_modify(|n| *n += 1);
        tracing::info!(task_id = %crate::handles::logged(&self.task_id), handoff = id, "handed to a person");
        Ok(Started {
            id,
            url: format!("{base}/live/{control}"),
            view_url: format!("{base}/live/{view}"),
            expires_at: started_at + lasts.as_secs_f64(),
        })
    }

    /// Ends the handoff under way (`id`, or whichever when `None`): the
    /// control token stops working, the core's policies and watchdog
    /// restart, and the report is kept for the next `changes`. `None` when
    /// no such handoff was under way (ended already).
    pub fn end_handoff(&self, id: Option<u64>, by: EndedBy) -> Option<HandoffReport> {
        let mut c = lock(&self.control);
        if c.active
            .as_ref()
            .is_none_or(|a| id.is_some_and(|i| i != a.id))
        {
            return None;
        }
        let a = c.active.take()?;
        a.follow.cancel();
        let report = HandoffReport {
            reason: a.reason,
            started_at: a.started_at,
            ended_at: unix_now(),
            ended_by: by,
            urls: a.urls,
            dialogs_answered: a.dialogs_answered,
            tabs_opened: a.tabs_opened,
            tabs_closed: a.tabs_closed,
        };
        c.last = Some((a.id, report.clone()));
        c.unreported = Some(report.clone());
        drop(c);
        lock(&hub().tokens).end_handoff(&self.task_id, a.id);
        if let Some(s) = self.supervisor() {
            let _ = s.set_person_in_control(false);
        }
        self.changed.send_modify(|n| *n += 1);
        tracing::info!(task_id = %crate::handles::logged(&self.task_id), handoff = a.id, ended_by = ?by, "handed back");
        Some(report)
    }

    /// The report of handoff `id` once it has ended.
    pub fn report_of(&self, id: u64) -> Option<HandoffReport> {
        lock(&self.control)
            .last
            .as_ref()
            .filter(|(i, _)| *i == id)
            .map(|(_, r)| r.clone())
    }

    /// The last handoff's report, once ended.
    pub fn last_report(&self) -> Option<HandoffReport> {
        lock(&self.control).last.as_ref().map(|(_, r)| r.clone())
    }

    /// The id of the handoff under way.
    pub fn active_handoff(&self) -> Option<u64> {
        lock(&self.control).active.as_ref().map(|a| a.id)
    }

    /// Waits until handoff `id` has ended, and gives its report (`None`
    /// when the task ended without one).
    pub async fn handed_back(&self, id: u64) -> Option<HandoffReport> {
        let mut changes = self.changed.subscribe();
        loop {
            if let Some(r) = self.report_of(id) {
                return Some(r);
            }
            if self.active_handoff() != Some(id) {
                return self.report_of(id);
            }
            if changes.changed().await.is_err() {
                return None;
            }
        }
    }

    /// The report no result has carried in its `changes` yet (taken).
    pub fn take_unreported(&self) -> Option<HandoffReport> {
        lock(&self.control).unreported.take()
    }

    fn follow<F: FnOnce(&mut Active)>(&self, id: u64, f: F) {
        if let Some(a) = lock(&self.control).active.as_mut().filter(|a| a.id == id) {
            f(a);
        }
    }
}

/// Follows handoff `id` until it ends: counts what the person does from the
/// supervisor's notices, keeps whichever supervisor the task runs told that
/// a person has it, and ends the handoff at its deadline.
async fn follow_handoff(task: Arc<TaskLive>, id: u64, lasts: Duration, stop: CancellationToken) {
    let deadline = tokio::time::sleep(lasts);
    tokio::pin!(deadline);
    loop {
        let Some(sup) = task.supervisor() else {
            tokio::select! {
                () = stop.cancelled() => return,
                () = task.ended.cancelled() => return,
                () = &mut deadline => { task.end_handoff(Some(id), EndedBy::Timeout); return; }
                () = tokio::time::sleep(Duration::from_millis(250)) => continue,
            }
        };
        let _ = sup.set_person_in_control(true);
        let mut notices = sup.notices();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = task.ended.cancelled() => return,
                () = &mut deadline => { task.end_handoff(Some(id), EndedBy::Timeout); return; }
                () = sup.exited() => break,
                n = notices.recv() => match n {
                    Ok(n) => count(&task, id, &sup, n),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            }
        }
    }
}

fn count(task: &TaskLive, id: u64, sup: &Supervisor, n: Notice) {
    use crate::supervisor::snapshot::ClosedBy;
    match n {
        Notice::FrameNavigated { frame_id, url, .. } => {
            // A tab's top frame has its target's id.
            let snap = sup.snapshot();
            let top = snap.tabs.iter().any(|t| t.target_id == frame_id)
                || snap
                    .frame_tree
                    .top
                    .as_ref()
                    .is_some_and(|t| t.frame_id == frame_id);
            if top {
                // Where, not what: a form the person sent by GET carries
                // what they typed in its query.
                let url = without_query(&url);
                task.follow(id, |a| {
                    if a.urls.last() != Some(&url) && a.urls.len() < REPORT_URLS_MAX {
                        a.urls.push(url);
                    }
                });
            }
        }
        Notice::DialogClosed { dialog, .. } if dialog.closed_by == ClosedBy::User => {
            task.follow(id, |a| a.dialogs_answered += 1);
        }
        Notice::TabOpened { .. } => task.follow(id, |a| a.tabs_opened += 1),
        Notice::TabClosed { .. } => task.follow(id, |a| a.tabs_closed += 1),
        _ => {}
    }
}

/// `url` without its query and fragment (what a person typed into a form
/// sent by GET rides in the query).
pub fn without_query(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if !u.cannot_be_a_base() => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        _ => url.split(['?', '#']).next().unwrap_or("").to_owned(),
    }
}
