//! One supervisor per task id.
//!
//! [`Registry::get_or_start`] is idempotent and safe under concurrent calls:
//! calls for the same task wait for one start and share its supervisor;
//! calls for different tasks run in parallel. A new endpoint for a task
//! stops the old supervisor first and starts a fresh one (no state is
//! reused across endpoints). A supervisor that gives up (its endpoint never
//! came back) removes its own entry — only if it is still the registered one.

use crate::browser::LaunchOptions;
use crate::cdp::endpoint::redact_url;
use crate::supervisor::driver::{StartError, Supervisor, SupervisorOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Mutex as AsyncMutex;

/// Where a task's browser is.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// An existing browser's CDP URL (`http://host:port`, `ws://…`).
    Url(String),
    /// Launch local headless Chromium; it dies with the supervisor.
    Local(LaunchOptions),
}

impl Endpoint {
    /// What decides a rebind: the URL (or "local").
    fn key(&self) -> String {
        match self {
            Endpoint::Url(u) => u.clone(),
            Endpoint::Local(_) => "local".into(),
        }
    }

    /// For messages: the URL with credentials redacted, or `local Chromium`.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Url(u) => redact_url(u),
            Endpoint::Local(_) => "local Chromium".into(),
        }
    }
}

struct Entry {
    key: String,
    target: Option<String>,
    supervisor: Supervisor,
}

type Slot = Arc<AsyncMutex<Option<Entry>>>;

/// Supervisors by task id. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Registry {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    fn slot(&self, task_id: &str) -> Slot {
        self.slots
            .lock()
            .expect("registry lock")
            .entry(task_id.to_owned())
            .or_default()
            .clone()
    }

    fn is_current(&self, task_id: &str, slot: &Slot) -> bool {
        self.slots
            .lock()
            .expect("registry lock")
            .get(task_id)
            .is_some_and(|s| Arc::ptr_eq(s, slot))
    }

    /// The running supervisor of `task_id`, started on `endpoint` if there
    /// is none. The same endpoint (and target) returns the same supervisor;
    /// another endpoint stops the old one first. A start failure is returned
    /// at once and leaves no entry.
    pub async fn get_or_start(
        &self,
        task_id: &str,
        endpoint: Endpoint,
        opts: SupervisorOptions,
    ) -> Result<Supervisor, StartError> {
        loop {
            let slot = self.slot(task_id);
            let mut entry = slot.lock().await;
            if !self.is_current(task_id, &slot) {
                // Removed while we waited: take the fresh slot.
                continue;
            }
            if let Some(e) = entry.as_ref() {
                if e.key == endpoint.key()
                    && e.target == opts.target_id
                    && e.supervisor.is_running()
                {
                    return Ok(e.supervisor.clone());
                }
                tracing::info!(task_id, "rebinding to {}", endpoint.describe());
                let old = entry.take().expect("checked");
                old.supervisor.stop().await;
            }
            let target = opts.target_id.clone();
            let started = match &endpoint {
                Endpoint::Url(u) => Supervisor::start(u, opts).await,
                Endpoint::Local(launch) => Supervisor::start_local(launch, opts).await,
            };
            let supervisor = match started {
                Ok(s) => s,
                Err(e) => {
                    drop(entry);
                    self.remove_if_empty(task_id, &slot).await;
                    return Err(e);
                }
            };
            *entry = Some(Entry {
                key: endpoint.key(),
                target,
                supervisor: supervisor.clone(),
            });
            self.watch_exit(task_id, &slot, &supervisor);
            return Ok(supervisor);
        }
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
            let mut entry = slot.lock().await;
            if entry.as_ref().is_some_and(|e| e.supervisor.id() == id) {
                *entry = None;
                drop(entry);
                registry.remove_if_empty(&task_id, &slot).await;
            }
        });
    }

    async fn remove_if_empty(&self, task_id: &str, slot: &Slot) {
        let guard = slot.lock().await;
        if guard.is_none() {
            let mut slots = self.slots.lock().expect("registry lock");
            if slots.get(task_id).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                slots.remove(task_id);
            }
        }
    }

    /// The running supervisor of `task_id`, if any (waits for a start in progress).
    pub async fn get(&self, task_id: &str) -> Option<Supervisor> {
        let slot = self
            .slots
            .lock()
            .expect("registry lock")
            .get(task_id)
            .cloned()?;
        let entry = slot.lock().await;
        entry
            .as_ref()
            .map(|e| e.supervisor.clone())
            .filter(Supervisor::is_running)
    }

    /// Stops `task_id`'s supervisor (and its local Chromium) and forgets it.
    /// Returns whether there was one.
    pub async fn stop(&self, task_id: &str) -> bool {
        let Some(slot) = self
            .slots
            .lock()
            .expect("registry lock")
            .get(task_id)
            .cloned()
        else {
            return false;
        };
        let mut entry = slot.lock().await;
        let old = entry.take();
        drop(entry);
        if let Some(e) = &old {
            e.supervisor.stop().await;
        }
        self.remove_if_empty(task_id, &slot).await;
        old.is_some()
    }

    /// Stops every supervisor.
    pub async fn stop_all(&self) {
        for task in self.task_ids() {
            self.stop(&task).await;
        }
    }

    /// The task ids with an entry (running or starting).
    pub fn task_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .slots
            .lock()
            .expect("registry lock")
            .keys()
            .cloned()
            .collect();
        ids.sort();
        ids
    }
}
