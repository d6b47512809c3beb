//! Task handles: how an MCP 2026-07-28 request, which has no session,
//! names its task.
//!
//! `browser_open` mints a handle (128 random bits, hex), `browser_close`
//! ends it, and every other tool takes it as its `task` argument. The
//! handle *is* the task id: the registry, the live view and the Python
//! module see the same string, so there is one notion of a task. A handle
//! minted under an HTTP bearer token works only with that token (only its
//! SHA-256 is kept); one nobody used for `--idle-timeout-s` is closed with
//! its browser; at most `--max-sessions` are open at once. A handle that is
//! unknown, closed, expired or another token's gets the same error, so a
//! caller learns nothing about handles that are not its own. Log lines show
//! a handle by its first characters only ([`shown`]).
//!
//! The table is pure: the caller gives the time.

use crate::config::Config;
use crate::supervisor::registry::Registry;
use crate::tools::AgentSession;
use crate::tools::text::Shown;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use crate::config::Isolation;

/// Opens a task for MCP 2026-07-28 requests, which have no session, and
/// returns its handle {task}: pass it as the task argument of every other
/// tool, and end it with browser_close. isolation: "browser" (a browser of
/// its own) or "context" (a browser context in a shared browser); absent:
/// the server's default. An unused task is closed after the server's idle
/// timeout.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenArgs {
    /// "browser" or "context".
    pub isolation: Option<Isolation>,
}

/// Closes the task a browser_open returned, with its browser (its
/// beforeunload handlers do not run); its handle stops working.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseArgs {
    /// The handle browser_open returned.
    pub task: String,
}

/// `browser_open`'s result.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Opened {
    /// The task's handle: pass it as task to every other tool.
    pub task: String,
}

/// `browser_close`'s result.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Closed {
    /// The handle, now closed.
    pub task: String,
    /// Always true.
    pub closed: bool,
}

/// The `task` argument every tool takes from a 2026-07-28 client.
pub const TASK_ARG_DESCRIPTION: &str = "The task handle browser_open returned. Over HTTP it is required; over stdio, absent means the process's one task.";

/// Builds the task of a new handle: the one place an [`AgentSession`] is
/// made for a handle.
pub fn build_task(
    registry: Registry,
    task_id: String,
    config: Config,
    live_base: Option<String>,
    isolation: Option<Isolation>,
) -> AgentSession {
    // Absent: `browser.isolation` as configured (`mcp --http` on a local
    // browser: a context; stdio: a browser of its own).
    let agent = AgentSession::new(registry, task_id, config);
    let agent = match isolation {
        Some(i) => agent.with_isolation(i),
        None => agent,
    };
    match live_base {
        Some(base) => agent.with_live_base(base),
        None => agent,
    }
}

/// A handle as a log line may show it.
pub fn shown(handle: &str) -> String {
    crate::live::tokens::shown(handle)
}

/// A task id as a log line may show it: a handle (what `browser_open`
/// mints) by its first characters, any other id (`mcp-<pid>-<n>`, a
/// Python task's) whole. Every log line that names a task goes through this.
pub fn logged(task_id: &str) -> std::borrow::Cow<'_, str> {
    let is_handle = task_id.len() == 2 * crate::live::tokens::TOKEN_BYTES
        && task_id.bytes().all(|b| b.is_ascii_hexdigit());
    if is_handle {
        std::borrow::Cow::Owned(shown(task_id))
    } else {
        std::borrow::Cow::Borrowed(task_id)
    }
}

/// Why a handle cannot be used or made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    /// Unknown, closed, expired, or minted under another token: the same
    /// answer for all four, so nothing is learnt about others' handles.
    #[error(
        "no open task has the handle {shown} (it was never opened, was closed with browser_close, expired after {idle_s} s unused, or belongs to another client); open one with browser_open"
    )]
    Unknown {
        /// The handle as given, cut ([`shown`]).
        shown: String,
        /// The idle bound in seconds.
        idle_s: u64,
    },
    /// `--max-sessions` tasks are open.
    #[error(
        "{open} tasks are open, the most this server allows (--max-sessions {max}); close one with browser_close(task) or wait for an unused one to expire"
    )]
    Full {
        /// How many are open.
        open: usize,
        /// The cap.
        max: usize,
    },
    /// No randomness for a new handle.
    #[error("cannot make a task handle: {0}")]
    Random(String),
}

struct Entry {
    agent: Arc<AgentSession>,
    /// SHA-256 of the bearer token that minted it (`None`: no token).
    token: Option<[u8; 32]>,
    /// What this task's text content has shown (see [`Shown`]).
    shown: Arc<Mutex<Shown>>,
    last: Instant,
    in_flight: usize,
}

/// A task found by its handle, in use until dropped (a task in use does
/// not expire, however long its call runs).
pub struct Lease {
    /// The task.
    pub agent: Arc<AgentSession>,
    /// Its text-rendering state.
    pub shown: Arc<Mutex<Shown>>,
    table: Arc<Handles>,
    handle: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.table.end_use(&self.handle, Instant::now());
    }
}

/// The handles of one server.
pub struct Handles {
    entries: Mutex<HashMap<String, Entry>>,
    max: usize,
    idle: Duration,
}

fn token_hash(token: Option<&str>) -> Option<[u8; 32]> {
    token.map(|t| Sha256::digest(t.as_bytes()).into())
}

impl Handles {
    /// An empty table: at most `max` handles, each closed after `idle`
    /// unused.
    pub fn new(max: usize, idle: Duration) -> Arc<Handles> {
        Arc::new(Handles {
            entries: Mutex::new(HashMap::new()),
            max,
            idle,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Mints a handle under `token` and makes its task with `build` (given
    /// the handle, which is the task id). `others`: tasks open besides the
    /// handles (2025-11-25 sessions), counted against the same cap.
    ///
    /// # Errors
    /// [`HandleError::Full`] at the cap; [`HandleError::Random`].
    pub fn open(
        &self,
        token: Option<&str>,
        now: Instant,
        others: usize,
        build: impl FnOnce(String) -> AgentSession,
    ) -> Result<String, HandleError> {
        let mut entries = self.lock();
        if entries.len() + others >= self.max {
            return Err(HandleError::Full {
                open: entries.len() + others,
                max: self.max,
            });
        }
        let handle =
            crate::live::tokens::fresh().map_err(|e| HandleError::Random(e.to_string()))?;
        let agent = Arc::new(build(handle.clone()));
        entries.insert(
            handle.clone(),
            Entry {
                agent,
                token: token_hash(token),
                shown: Arc::new(Mutex::new(Shown::default())),
                last: now,
                in_flight: 0,
            },
        );
        tracing::debug!(task = shown(&handle), "task handle opened");
        Ok(handle)
    }

    /// Whether `handle` is open (whoever minted it): a listen for one that
    /// is not is refused before it is acknowledged.
    pub fn knows(&self, handle: &str) -> bool {
        self.lock().contains_key(handle)
    }

    fn unknown(&self, handle: &str) -> HandleError {
        HandleError::Unknown {
            shown: shown(handle),
            idle_s: self.idle.as_secs(),
        }
    }

    /// The task of `handle`, for a request under `token`, in use until the
    /// lease is dropped.
    ///
    /// # Errors
    /// [`HandleError::Unknown`].
    pub fn lease(
        self: &Arc<Self>,
        handle: &str,
        token: Option<&str>,
        now: Instant,
    ) -> Result<Lease, HandleError> {
        let mut entries = self.lock();
        let Some(e) = entries
            .get_mut(handle)
            .filter(|e| e.token == token_hash(token))
            .filter(|e| e.in_flight > 0 || now.saturating_duration_since(e.last) < self.idle)
        else {
            return Err(self.unknown(handle));
        };
        e.in_flight += 1;
        e.last = now;
        Ok(Lease {
            agent: e.agent.clone(),
            shown: e.shown.clone(),
            table: self.clone(),
            handle: handle.to_owned(),
        })
    }

    fn end_use(&self, handle: &str, now: Instant) {
        if let Some(e) = self.lock().get_mut(handle) {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.last = now;
        }
    }

    /// Forgets `handle` and gives back its task, for the caller to close.
    ///
    /// # Errors
    /// [`HandleError::Unknown`].
    pub fn close(
        &self,
        handle: &str,
        token: Option<&str>,
        now: Instant,
    ) -> Result<Arc<AgentSession>, HandleError> {
        let mut entries = self.lock();
        let ok = entries.get(handle).is_some_and(|e| {
            e.token == token_hash(token)
                && (e.in_flight > 0 || now.saturating_duration_since(e.last) < self.idle)
        });
        if !ok {
            return Err(self.unknown(handle));
        }
        let e = entries.remove(handle).unwrap_or_else(|| unreachable!());
        tracing::debug!(task = shown(handle), "task handle closed");
        Ok(e.agent)
    }

    /// Forgets every handle unused for the idle bound at `now` and gives
    /// back their tasks, for the caller to close.
    pub fn take_idle(&self, now: Instant) -> Vec<Arc<AgentSession>> {
        let mut entries = self.lock();
        let idle: Vec<String> = entries
            .iter()
            .filter(|(_, e)| e.in_flight == 0 && now.saturating_duration_since(e.last) >= self.idle)
            .map(|(h, _)| h.clone())
            .collect();
        idle.iter()
            .filter_map(|h| {
                tracing::info!(
                    task = shown(h),
                    "closing a task handle unused for {:?} (and its browser)",
                    self.idle
                );
                entries.remove(h).map(|e| e.agent)
            })
            .collect()
    }

    /// Forgets every handle and gives back their tasks (server shutdown).
    pub fn take_all(&self) -> Vec<Arc<AgentSession>> {
        self.lock().drain().map(|(_, e)| e.agent).collect()
    }

    /// The idle bound.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// How many handles are open.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: String) -> AgentSession {
        AgentSession::new(Registry::new(), id, Config::default())
    }

    const IDLE: Duration = Duration::from_secs(60);

    #[test]
    fn a_handle_is_128_random_bits_and_the_task_id() {
        let t = Handles::new(4, IDLE);
        let now = Instant::now();
        let a = t.open(None, now, 0, task).unwrap();
        let b = t.open(None, now, 0, task).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(t.lease(&a, None, now).unwrap().agent.task_id(), a);
    }

    #[test]
    fn forged_closed_expired_and_foreign_handles_get_the_same_error() {
        let t = Handles::new(4, IDLE);
        let now = Instant::now();
        let mine = t.open(Some("token-a"), now, 0, task).unwrap();
        let forged = "0123456789abcdef0123456789abcdef";
        let err = |h: &str, tok: Option<&str>, at: Instant| match t.lease(h, tok, at) {
            Err(e) => e,
            Ok(_) => panic!("handle {h} accepted"),
        };
        let unknown = |h: &str| HandleError::Unknown {
            shown: shown(h),
            idle_s: 60,
        };
        assert_eq!(err(forged, Some("token-a"), now), unknown(forged));
        // Another token, or none: as if it did not exist.
        assert_eq!(err(&mine, Some("token-b"), now), unknown(&mine));
        assert_eq!(err(&mine, None, now), unknown(&mine));
        assert!(t.close(&mine, Some("token-b"), now).is_err());
        // Expired: unused for the bound.
        assert_eq!(err(&mine, Some("token-a"), now + IDLE), unknown(&mine));
        assert_eq!(t.take_idle(now + IDLE).len(), 1);
        assert!(t.is_empty());
        // Closed.
        let again = t.open(Some("token-a"), now, 0, task).unwrap();
        assert!(t.close(&again, Some("token-a"), now).is_ok());
        assert_eq!(err(&again, Some("token-a"), now), unknown(&again));
        // The message shows only the handle's first characters.
        let text = unknown(&again).to_string();
        assert!(!text.contains(&again), "{text}");
        assert!(text.contains("browser_open"), "{text}");
    }

    #[test]
    fn a_task_in_use_does_not_expire_and_the_cap_holds() {
        let t = Handles::new(1, IDLE);
        let now = Instant::now();
        let h = t.open(None, now, 0, task).unwrap();
        assert!(matches!(
            t.open(None, now, 0, task),
            Err(HandleError::Full { open: 1, max: 1 })
        ));
        // Sessions count against the same cap.
        let two = Handles::new(2, IDLE);
        assert!(matches!(
            two.open(None, now, 2, task),
            Err(HandleError::Full { open: 2, max: 2 })
        ));
        assert!(two.open(None, now, 1, task).is_ok());
        let lease = t.lease(&h, None, now).unwrap();
        assert!(t.take_idle(now + IDLE * 10).is_empty());
        drop(lease);
        assert!(t.take_idle(Instant::now() + IDLE).len() == 1);
    }

    #[test]
    fn logs_show_a_handle_cut_and_other_task_ids_whole() {
        let t = Handles::new(1, IDLE);
        let h = t.open(None, Instant::now(), 0, task).unwrap();
        assert!(!logged(&h).contains(&h[..10]), "{}", logged(&h));
        assert_eq!(logged("mcp-12-3"), "mcp-12-3");
    }

    #[test]
    fn isolation_is_browser_or_context() {
        use serde_json::json;
        assert_eq!(Isolation::parse(None), Ok(None));
        assert_eq!(Isolation::parse(Some(&json!(null))), Ok(None));
        assert_eq!(
            Isolation::parse(Some(&json!("context"))),
            Ok(Some(Isolation::Context))
        );
        let e = Isolation::parse(Some(&json!("process"))).unwrap_err();
        assert!(e.contains("\"browser\" or \"context\""), "{e}");
    }
}
