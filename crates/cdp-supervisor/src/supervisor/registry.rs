//! One supervisor per task id, with its page layer ([`Page`]: the refs of
//! its outlines, shared by every session of the task).
//!
//! [`Registry::get_or_start`] is idempotent and safe under concurrent calls:
//! calls for the same task wait for one start and share its supervisor;
//! calls for different tasks run in parallel. A new endpoint for a task
//! starts a fresh supervisor *beside* the old one and swaps only when it
//! attached: a rebind that fails leaves the old supervisor registered and
//! working (no state is ever reused across endpoints). A supervisor that
//! gives up (its endpoint never came back) removes its own entry — only if
//! it is still the registered one.
//!
//! It also holds every task's cloud provider session (a *lease*), so that
//! whoever ends the task — the task itself, or [`Registry::release_all_leases`]
//! when the server is signalled — releases it exactly once: taking the
//! lease is the claim (DESIGN bug class 22: a session outliving its agent
//! keeps billing).
//!
//! Readers never wait: [`Registry::get`] and [`Registry::is_starting`]
//! answer at once, also while a start, a rebind or a stop of the same task
//! is in progress.

use crate::browser::LaunchOptions;
use crate::browser::provider::BrowserProvider;
use crate::browser::shared::SharedBrowser;
use crate::cdp::endpoint::redact_url;
use crate::supervisor::act::Page;
use crate::supervisor::driver::{StartError, Supervisor, SupervisorOptions};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Mutex as AsyncMutex;

/// Where a task's browser is.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// An existing browser's CDP URL (`http://host:port`, `ws://…`).
    Url(String),
    /// Launch local headless Chromium; it dies with the supervisor.
    Local(LaunchOptions),
    /// A browser context of the task's own in the process's shared local
    /// browser ([`Registry::shared_browser`]; `isolation: context`).
    Context(Arc<SharedBrowser>),
}

impl Endpoint {
    /// What decides a rebind: the URL (or "local").
    fn key(&self) -> String {
        match self {
            Endpoint::Url(u) => u.clone(),
            Endpoint::Local(_) => "local".into(),
            Endpoint::Context(_) => "context".into(),
        }
    }

    /// For messages: the URL with credentials redacted, or `local Chromium`.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Url(u) => redact_url(u),
            Endpoint::Local(_) => "local Chromium".into(),
            Endpoint::Context(_) => "a context of the shared local Chromium".into(),
        }
    }
}

#[derive(Clone)]
struct Entry {
    key: String,
    target: Option<String>,
    /// The supervisor, and the refs of its outlines.
    page: Page,
}

impl Entry {
    fn supervisor(&self) -> &Supervisor {
        self.page.supervisor()
    }
}

/// One task's place in the registry. `changing` serializes starts, rebinds
/// and stops of the task; `current` is what readers see, swapped in one
/// step under a plain lock that is never held across an await.
#[derive(Default)]
struct SlotInner {
    changing: AsyncMutex<()>,
    current: Mutex<Option<Entry>>,
    starting: AtomicBool,
}

impl SlotInner {
    fn current(&self) -> Option<Entry> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn replace(&self, entry: Option<Entry>) -> Option<Entry> {
        std::mem::replace(
            &mut *self
                .current
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            entry,
        )
    }
}

type Slot = Arc<SlotInner>;

/// A task's provider session: who made it and its id there.
#[derive(Clone)]
pub struct Lease {
    /// The provider that created the session.
    pub provider: Arc<dyn BrowserProvider>,
    /// The provider's session id.
    pub session_id: String,
}

/// DESIGN ("Cloud providers"): on SIGINT/SIGTERM, the emergency cleanup of
/// every live provider session is bounded to 5 s.
pub const EMERGENCY_CLEANUP_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// Supervisors by task id. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Registry {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
    leases: Arc<Mutex<HashMap<String, Lease>>>,
    /// Releases in flight: each runs as its own task, so that a caller
    /// dropped mid-release (a session torn down at exit) does not cut it
    /// short, and the shutdown's cleanup waits for it.
    releasing: tokio_util::task::TaskTracker,
    /// The local browser the tasks of `isolation: context` share, made on
    /// first need.
    shared: Arc<Mutex<Option<Arc<SharedBrowser>>>>,
    /// Per task, the number its next dialog id gets: a supervisor that
    /// takes over a task (a rebind, after a disconnect, after one gave up)
    /// goes on from it ([`SupervisorOptions::first_dialog_number`]).
    /// Forgotten when the task ends ([`Registry::forget`]).
    dialog_numbers: Arc<Mutex<HashMap<String, u64>>>,
}

/// Clears [`SlotInner::starting`] however the start ends (also when the
/// caller's future is dropped mid-start).
struct Starting<'a>(&'a AtomicBool);

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The local browser shared by this registry's `isolation: context`
    /// tasks, made (not launched: that is on first need) with `launch` by
    /// the first caller.
    pub fn shared_browser(&self, launch: &LaunchOptions) -> Arc<SharedBrowser> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert_with(|| SharedBrowser::new(launch.clone()))
            .clone()
    }

    /// Whether `cdp_url` names the shared browser's DevTools endpoint
    /// while it runs (a loopback host on its port): that browser holds
    /// every `isolation: context` task's context, so no task may attach to
    /// it as a whole (`browser_connect`).
    pub fn is_shared_browser(&self, cdp_url: &str) -> bool {
        let Some(port) = self
            .shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .and_then(|b| b.devtools_port())
        else {
            return false;
        };
        let Ok(u) = url::Url::parse(cdp_url) else {
            return false;
        };
        let loopback = match u.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unspecified(),
            None => false,
        };
        loopback && u.port_or_known_default() == Some(port)
    }

    fn slot(&self, task_id: &str) -> Slot {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(task_id.to_owned())
            .or_default()
            .clone()
    }

    fn existing_slot(&self, task_id: &str) -> Option<Slot> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(task_id)
            .cloned()
    }

    fn is_current(&self, task_id: &str, slot: &Slot) -> bool {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(task_id)
            .is_some_and(|s| Arc::ptr_eq(s, slot))
    }

    /// The running supervisor of `task_id`, started on `endpoint` if there
    /// is none. The same endpoint (and target) returns the same supervisor.
    /// Another endpoint starts a new supervisor first and, once it has
    /// attached, stops the old one; if the new one fails, the old one stays
    /// registered and running ([`Registry::get`] still returns it).
    ///
    /// # Errors
    /// The new supervisor's [`StartError`], returned at once; a task that
    /// had no supervisor is left with no entry.
    pub async fn get_or_start(
        &self,
        task_id: &str,
        endpoint: Endpoint,
        mut opts: SupervisorOptions,
    ) -> Result<Supervisor, StartError> {
        loop {
            let slot = self.slot(task_id);
            let changing = slot.changing.lock().await;
            if !self.is_current(task_id, &slot) {
                // Removed while we waited: take the fresh slot.
                continue;
            }
            let old = slot.current();
            if let Some(e) = &old
                && e.key == endpoint.key()
                && e.target == opts.target_id
                && e.supervisor().is_running()
            {
                return Ok(e.supervisor().clone());
            }
            if let Some(e) = &old {
                tracing::info!(task_id = %crate::handles::logged(task_id), "rebinding to {}", endpoint.describe());
                self.count_dialogs(task_id, e.supervisor());
            }
            opts.first_dialog_number = self.next_dialog_number(task_id);
            let target = opts.target_id.clone();
            slot.starting.store(true, Ordering::SeqCst);
            let started = {
                let _starting = Starting(&slot.starting);
                match &endpoint {
                    Endpoint::Url(u) => Supervisor::start(u, opts).await,
                    Endpoint::Local(launch) => Supervisor::start_local(launch, opts).await,
                    Endpoint::Context(b) => Supervisor::start_in_context(b, opts).await,
                }
            };
            let supervisor = match started {
                Ok(s) => s,
                Err(e) => {
                    drop(changing);
                    self.remove_if_empty(task_id, &slot);
                    return Err(e);
                }
            };
            let replaced = slot.replace(Some(Entry {
                key: endpoint.key(),
                target,
                page: Page::new(supervisor.clone()),
            }));
            self.watch_exit(task_id, &slot, &supervisor);
            if let Some(old) = replaced {
                old.supervisor().stop().await;
            }
            return Ok(supervisor);
        }
    }

    /// Keeps where `supervisor`'s dialog numbers reached, for the task's next supervisor.
    fn count_dialogs(&self, task_id: &str, supervisor: &Supervisor) {
        let next = supervisor.snapshot().next_dialog_number();
        let mut numbers = self
            .dialog_numbers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = numbers.entry(task_id.to_owned()).or_insert(1);
        *n = (*n).max(next);
    }

    /// The number the task's next supervisor gives its first dialog.
    fn next_dialog_number(&self, task_id: &str) -> u64 {
        self.dialog_numbers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(task_id)
            .copied()
            .unwrap_or(1)
    }

    /// Forgets what the registry kept of an ended task (its dialog count);
    /// call after [`Registry::stop`] when the task itself ends.
    pub fn forget(&self, task_id: &str) {
        self.dialog_numbers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(task_id);
    }

    /// When the supervisor ends by itself, drop its entry if it is still the registered one.
    fn watch_exit(&self, task_id: &str, slot: &Slot, supervisor: &Supervisor) {
        let exited = supervisor.exited_token();
        let id = supervisor.id();
        let registry = self.clone();
        let slot = Arc::downgrade(slot);
        let task_id = task_id.to_owned();
        tokio::spawn(async move {
            exited.cancelled().await;
            let Some(slot) = slot.upgrade() else { return };
            let _changing = slot.changing.lock().await;
            let mine = slot.current().filter(|e| e.supervisor().id() == id);
            if let Some(e) = mine {
                registry.count_dialogs(&task_id, e.supervisor());
                slot.replace(None);
                registry.remove_if_empty(&task_id, &slot);
            }
        });
    }

    /// Forgets the task's slot when it holds no supervisor and no start is
    /// under way. Call with the slot's `changing` lock released or held.
    fn remove_if_empty(&self, task_id: &str, slot: &Slot) {
        if slot.current().is_some() || slot.starting.load(Ordering::SeqCst) {
            return;
        }
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slots.get(task_id).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(task_id);
        }
    }

    /// The running supervisor of `task_id`, if any. Never waits: during a
    /// rebind it is the old supervisor until the new one has attached;
    /// during a first start it is `None` ([`Registry::is_starting`] says so).
    pub fn get(&self, task_id: &str) -> Option<Supervisor> {
        self.existing_slot(task_id)?
            .current()
            .map(|e| e.supervisor().clone())
            .filter(Supervisor::is_running)
    }

    /// The page layer of `task_id`'s running supervisor `supervisor`: the
    /// one registered with it, so that its refs are those of every session
    /// of the task; a fresh one (no refs) for a supervisor no longer
    /// registered (replaced or stopped meanwhile). Never waits.
    pub fn page(&self, task_id: &str, supervisor: &Supervisor) -> Page {
        self.existing_slot(task_id)
            .and_then(|s| s.current())
            .map(|e| e.page)
            .filter(|p| p.supervisor().id() == supervisor.id())
            .unwrap_or_else(|| Page::new(supervisor.clone()))
    }

    /// Whether a supervisor for `task_id` is being started (or rebound) now.
    pub fn is_starting(&self, task_id: &str) -> bool {
        self.existing_slot(task_id)
            .is_some_and(|s| s.starting.load(Ordering::SeqCst))
    }

    /// Stops `task_id`'s supervisor (and its local Chromium) and forgets it.
    /// A start in progress for the task finishes first (bounded by its
    /// attach deadline) and is then stopped too. Returns whether there was one.
    pub async fn stop(&self, task_id: &str) -> bool {
        let Some(slot) = self.existing_slot(task_id) else {
            return false;
        };
        let changing = slot.changing.lock().await;
        let old = slot.replace(None);
        if let Some(e) = &old {
            self.count_dialogs(task_id, e.supervisor());
            e.supervisor().stop().await;
        }
        drop(changing);
        self.remove_if_empty(task_id, &slot);
        old.is_some()
    }

    /// Stops every supervisor.
    pub async fn stop_all(&self) {
        for task in self.task_ids() {
            self.stop(&task).await;
        }
    }

    /// Records `task_id`'s provider session; a lease it held already is
    /// returned (the caller releases it).
    pub fn lease(&self, task_id: &str, lease: Lease) -> Option<Lease> {
        self.leases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(task_id.to_owned(), lease)
    }

    /// Releases `task_id`'s provider session, if it still holds one
    /// ([`BrowserProvider::close_session`]), and waits for it. Taking the
    /// lease is the claim: a session is released once, whoever asks. The
    /// release runs on in its own task if this future is dropped, and
    /// [`Registry::release_all_leases`] waits for it.
    pub async fn release_lease(&self, task_id: &str) -> bool {
        // Taken and spawned under the lock: a shutdown's cleanup sees
        // either the lease or its release task, never neither.
        let release = {
            let mut leases = self
                .leases
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(lease) = leases.remove(task_id) else {
                return false;
            };
            self.releasing
                .spawn(async move { lease.provider.close_session(&lease.session_id).await })
        };
        release.await.unwrap_or(false)
    }

    /// The number of live provider sessions.
    pub fn lease_count(&self) -> usize {
        self.leases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Emergency cleanup (a signal): every live provider session gets
    /// [`BrowserProvider::emergency_cleanup`], all at once, bounded by
    /// `within`. Never fails; what did not finish in time is logged.
    pub async fn release_all_leases(&self, within: std::time::Duration) {
        {
            let mut leases = self
                .leases
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !leases.is_empty() {
                tracing::info!(
                    "releasing {} cloud browser session(s) before exit",
                    leases.len()
                );
            }
            for (task, l) in leases.drain() {
                self.releasing.spawn(async move {
                    l.provider.emergency_cleanup(&l.session_id).await;
                    tracing::debug!(task_id = %crate::handles::logged(&task), "{} session released", l.provider.name());
                });
            }
        }
        // Also waits for the releases the tasks started themselves (a
        // session closing as the server goes down).
        self.releasing.close();
        let done = tokio::time::timeout(within, self.releasing.wait()).await;
        self.releasing.reopen();
        if done.is_err() {
            tracing::warn!(
                "releasing cloud browser sessions did not finish within {}s; some may live on until the provider's own timeout",
                within.as_secs()
            );
        }
    }

    /// The task ids with an entry (running or starting).
    pub fn task_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        ids.sort();
        ids
    }
}
