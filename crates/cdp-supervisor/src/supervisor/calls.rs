//! Calls a dialog interrupted: CDP commands that a dialog blocks are not
//! lost — Chromium queues them and runs them once the dialog closes — so the
//! supervisor keeps waiting for their replies after the caller has been told
//! it was interrupted, and hands each outcome out exactly once.
//!
//! Lifecycle of one call: [`InterruptedCalls::begin`] gives it a `call_id`
//! (`c-N`, unique in the process); the reply (or the error that ends the
//! wait: its deadline, the connection dropping) is recorded with
//! [`InterruptedCalls::complete`]; [`InterruptedCalls::take_undelivered`]
//! hands completed calls out once (`browser_dialog`'s `completed_calls`),
//! and [`InterruptedCalls::recent`] lists the last
//! [`COMPLETED_CALLS_SHOWN`], delivered or not (the snapshot's
//! `completed_calls`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// DESIGN ("Calls a dialog interrupts"): the snapshot lists the last 10.
pub const COMPLETED_CALLS_SHOWN: usize = 10;
/// Completed calls kept for delivery until someone takes them; past it the
/// oldest undelivered is dropped (it stays in [`InterruptedCalls::recent`]
/// while it is among the last 10).
pub const UNDELIVERED_MAX: usize = 256;

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// One interrupted call that finished: `{call_id, method, result}` or
/// `{call_id, method, error}` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompletedCall {
    /// The id the interrupted call was given (`c-N`).
    pub call_id: String,
    /// What was called: the CDP method for `browser_cdp`, the tool's name
    /// for an action tool.
    pub method: String,
    /// The reply (for `browser_cdp`, the CDP reply: what `result` would
    /// have been had the call not been interrupted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed: a CDP error, the wait's deadline
    /// (`dialog_timeout_s` + the call's own timeout), or the connection dropping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Default)]
struct Inner {
    /// Calls still waiting for their reply: `(call_id, method)`.
    outstanding: Vec<(String, String)>,
    undelivered: VecDeque<CompletedCall>,
    recent: VecDeque<CompletedCall>,
}

/// The interrupted calls of one supervisor. Shared by the call sites (which
/// begin calls and wait), the tasks that wait for the replies, and readers.
#[derive(Default)]
pub struct InterruptedCalls {
    inner: Mutex<Inner>,
    changed: Notify,
}

impl InterruptedCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that a call to `method` was interrupted and is still waiting
    /// for its reply. Returns its `call_id`.
    pub fn begin(&self, method: &str) -> String {
        let call_id = format!("c-{}", NEXT_CALL.fetch_add(1, Ordering::Relaxed));
        self.lock()
            .outstanding
            .push((call_id.clone(), method.to_owned()));
        call_id
    }

    /// The reply of `call_id` came (`Ok`), or the wait for it ended (`Err`,
    /// in words). A call completes once; a second completion is ignored.
    pub fn complete(&self, call_id: &str, outcome: Result<Value, String>) {
        let mut inner = self.lock();
        let Some(pos) = inner.outstanding.iter().position(|(id, _)| id == call_id) else {
            return;
        };
        let (call_id, method) = inner.outstanding.remove(pos);
        let (result, error) = match outcome {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        let done = CompletedCall {
            call_id,
            method,
            result,
            error,
        };
        if inner.undelivered.len() == UNDELIVERED_MAX {
            inner.undelivered.pop_front();
        }
        inner.undelivered.push_back(done.clone());
        if inner.recent.len() == COMPLETED_CALLS_SHOWN {
            inner.recent.pop_front();
        }
        inner.recent.push_back(done);
        drop(inner);
        self.changed.notify_waiters();
    }

    /// How many interrupted calls still wait for their reply.
    pub fn outstanding(&self) -> usize {
        self.lock().outstanding.len()
    }

    /// The completed calls not handed out yet, oldest first; each is handed
    /// out once.
    pub fn take_undelivered(&self) -> Vec<CompletedCall> {
        self.lock().undelivered.drain(..).collect()
    }

    /// The last [`COMPLETED_CALLS_SHOWN`] completed calls, delivered or not, oldest first.
    pub fn recent(&self) -> Vec<CompletedCall> {
        self.lock().recent.iter().cloned().collect()
    }

    /// Waits until no interrupted call is outstanding, at most until `deadline`.
    pub async fn settled(&self, deadline: tokio::time::Instant) {
        loop {
            // Register before checking, so a completion in between is not missed.
            let notified = self.changed.notified();
            if self.outstanding() == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_completed_call_is_handed_out_once_and_stays_in_recent() {
        let calls = InterruptedCalls::default();
        let a = calls.begin("Runtime.evaluate");
        assert_eq!(calls.outstanding(), 1);
        assert!(calls.take_undelivered().is_empty());
        calls.complete(&a, Ok(json!({"result": {"value": 1}})));
        calls.complete(&a, Err("late duplicate".into()));
        assert_eq!(calls.outstanding(), 0);
        let taken = calls.take_undelivered();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].call_id, a);
        assert_eq!(taken[0].result, Some(json!({"result": {"value": 1}})));
        assert!(calls.take_undelivered().is_empty(), "delivered once");
        assert_eq!(
            calls.recent(),
            taken,
            "still listed for an agent that missed it"
        );
    }

    #[test]
    fn recent_keeps_the_last_ten_and_serializes_result_or_error() {
        let calls = InterruptedCalls::default();
        let ids: Vec<String> = (0..12)
            .map(|_| calls.begin("Input.dispatchMouseEvent"))
            .collect();
        for id in &ids {
            calls.complete(id, Err("the CDP connection dropped".into()));
        }
        let recent = calls.recent();
        assert_eq!(recent.len(), COMPLETED_CALLS_SHOWN);
        assert_eq!(recent[0].call_id, ids[2]);
        let v = serde_json::to_value(&recent[0]).unwrap();
        assert_eq!(v["error"], "the CDP connection dropped");
        assert!(v.get("result").is_none(), "{v}");
    }

    #[tokio::test]
    async fn settled_returns_when_the_last_call_completes() {
        let calls = std::sync::Arc::new(InterruptedCalls::default());
        let id = calls.begin("Runtime.evaluate");
        let waiter = {
            let calls = calls.clone();
            tokio::spawn(async move {
                calls
                    .settled(tokio::time::Instant::now() + std::time::Duration::from_secs(30))
                    .await;
                calls.outstanding()
            })
        };
        tokio::task::yield_now().await;
        calls.complete(&id, Ok(json!(null)));
        assert_eq!(waiter.await.unwrap(), 0);
    }
}
