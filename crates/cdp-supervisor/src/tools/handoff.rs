//! `browser_handoff` and what a person at the wheel changes for the agent
//! (DESIGN "A person at the wheel"): the page-changing tools answer
//! `person_in_control` at once, snapshots show no field values, and the
//! handoff's report reaches the agent in its result and the next `changes`.

use super::{AgentSession, ToolError};
use crate::live::{self, EndedBy, HandoffReport, InControl, Started, TaskLive};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// `browser_handoff`'s default `timeout_s`.
pub const HANDOFF_DEFAULT_TIMEOUT_S: f64 = 600.0;
/// `browser_handoff`'s largest `timeout_s`.
pub const HANDOFF_MAX_TIMEOUT_S: f64 = 3600.0;
/// Longest `reason`, in characters (it is shown to the person and echoed).
pub const REASON_MAX_CHARS: usize = 500;

/// Whether tool `name` with `args` changes the page, and so waits for the
/// person to hand back: every tool but reading ones (`browser_snapshot`,
/// `browser_wait`, `browser_tabs list`).
pub fn refused_while_person(name: &str, args: &Value) -> bool {
    match name {
        "browser_snapshot" | "browser_wait" => false,
        "browser_tabs" => args.get("action").and_then(Value::as_str) != Some("list"),
        _ => true,
    }
}

/// The tool error a page-changing call gets while a person has the task:
/// `{error: "person_in_control", since, reason, until}`.
pub fn person_in_control_error(name: &str, c: &InControl) -> ToolError {
    let structured = json!({
        "error": "person_in_control",
        "since": c.since,
        "reason": c.reason,
        "until": c.until,
    });
    ToolError {
        message: format!(
            "{name} was not run: a person has the browser (handed over for {:?}); wait with browser_wait(event: \"handed_back\"), read with browser_snapshot",
            crate::supervisor::wording::cut(&c.reason)
        ),
        structured: Some(structured),
    }
}

/// A result's JSON with the query and fragment of every URL in it (any
/// `url` field: the tab's, its frames', a tab opened, a navigation) left
/// out, while a person has the browser: a form they send by GET carries
/// what they typed in its query.
pub fn without_queries(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                match x {
                    Value::String(u) if k == "url" || k.ends_with("_url") => {
                        *u = live::without_query(u);
                    }
                    _ => without_queries(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(without_queries),
        _ => {}
    }
}

/// How a handoff call ended.
pub enum HandoffEnd {
    /// The person pressed Done, or the deadline passed.
    Ended(HandoffReport),
    /// The caller stopped waiting (the call was cancelled).
    Cancelled,
}

impl AgentSession {
    /// This task's live state, when it has any.
    pub(super) fn live_task(&self) -> Option<Arc<TaskLive>> {
        live::hub().existing(&self.task_id)
    }

    /// Who has the task: `Some` while a person does.
    pub fn person_in_control(&self) -> Option<InControl> {
        self.live_task()?.person_in_control()
    }

    /// The `person_in_control` error tool `name` with `args` gets now, if
    /// a person has the browser and the call would change the page.
    pub fn refusal(&self, name: &str, args: &Value) -> Option<ToolError> {
        let c = self.person_in_control()?;
        refused_while_person(name, args).then(|| person_in_control_error(name, &c))
    }

    /// The base URL of the live view for this session: the HTTP server's
    /// own, else the listener on `browser.live.addr` (opened now).
    async fn live_base(&self) -> Result<String, ToolError> {
        match &self.live_base {
            Some(b) => Ok(b.clone()),
            None => live::hub()
                .own_listener(self.config.browser.live_addr)
                .await
                .map_err(ToolError::new),
        }
    }

    /// Starts a handoff: the browser (started if none runs), the control
    /// URL, the core told that a person has the task.
    ///
    /// # Errors
    /// A bad `reason`, no browser, a handoff already under way, no listener.
    pub async fn begin_handoff(
        &self,
        reason: &str,
        timeout_s: f64,
    ) -> Result<(Arc<TaskLive>, Started), ToolError> {
        self.supervisor().await?;
        let base = self.live_base().await?;
        let task = live::hub().task(&self.registry, &self.task_id);
        let ttl = Duration::from_secs(self.config.browser.live_ttl_s);
        let started = task
            .begin_handoff(reason, Duration::from_secs_f64(timeout_s), &base, ttl)
            .map_err(ToolError::new)?;
        Ok((task, started))
    }

    /// `browser_handoff` without an MCP client's extras (URL elicitation,
    /// progress): hands over, then with `wait` returns when the person
    /// presses Done or `timeout_s` passes.
    ///
    /// # Errors
    /// As [`AgentSession::begin_handoff`].
    pub async fn browser_handoff(
        &self,
        reason: &str,
        timeout_s: f64,
        wait: bool,
    ) -> Result<Value, ToolError> {
        let (task, started) = self.begin_handoff(reason, timeout_s).await?;
        if !wait {
            return Ok(handoff_result(&started, None));
        }
        let end = match task.handed_back(started.id).await {
            Some(r) => HandoffEnd::Ended(r),
            None => HandoffEnd::Cancelled,
        };
        Ok(handoff_result(&started, Some(end)))
    }

    /// `browser_handoff(args)` as [`AgentSession::call`] runs it, with the
    /// wait for the hand-back done by `waiter` (an MCP server adds its URL
    /// elicitation and progress there); not called with `wait: false`.
    ///
    /// # Errors
    /// Bad arguments, or as [`AgentSession::begin_handoff`].
    pub async fn browser_handoff_with<W, Fut>(
        &self,
        args: Value,
        waiter: W,
    ) -> Result<Value, ToolError>
    where
        W: FnOnce(Arc<TaskLive>, Started, String) -> Fut,
        Fut: std::future::Future<Output = HandoffEnd>,
    {
        let name = "browser_handoff";
        let policy = self.navigation_policy()?;
        let call = async {
            let spec = super::catalog::tool(name).expect("browser_handoff is declared");
            let super::ToolCall::Handoff {
                reason,
                timeout_s,
                wait,
            } = spec.parse(args.clone(), &policy)?
            else {
                unreachable!("browser_handoff parses to a handoff")
            };
            let (task, started) = self.begin_handoff(&reason, timeout_s).await?;
            if !wait {
                return Ok(handoff_result(&started, None));
            }
            let end = waiter(task, started.clone(), reason).await;
            Ok(handoff_result(&started, Some(end)))
        };
        self.decorated(name, args.clone(), call).await
    }

    /// Ends this task's handoff from the agent's side (its call was
    /// cancelled): the person's control link stops working.
    pub fn cancel_handoff(&self, id: u64) -> Option<HandoffReport> {
        self.live_task()?.end_handoff(Some(id), EndedBy::Agent)
    }

    /// `browser_wait(event: "handed_back")`: until the handoff under way
    /// ends, or `timeout_s`. With none under way it says how the last one
    /// ended, or that there was none.
    pub(super) async fn wait_handed_back(&self, timeout_s: f64) -> Result<Value, ToolError> {
        let task = self.live_task();
        let active = task.as_ref().and_then(|t| t.active_handoff());
        let (happened, report) = match (&task, active) {
            (Some(t), Some(id)) => {
                let wait =
                    tokio::time::timeout(Duration::from_secs_f64(timeout_s), t.handed_back(id));
                match wait.await {
                    Ok(r) => (r.is_some(), r),
                    Err(_) => (false, None),
                }
            }
            (Some(t), None) => {
                let last = t.last_report();
                (last.is_some(), last)
            }
            (None, _) => (false, None),
        };
        let mut v = json!({"event": "handed_back", "happened": happened});
        match report {
            Some(r) => v["handoff"] = json!(r),
            None if active.is_none() => {
                v["note"] = json!("no handoff is under way: browser_handoff starts one");
            }
            None => {}
        }
        v["snapshot"] = match self.current_supervisor() {
            Some(s) => super::snapshot_result(&s).await.to_json(),
            // The browser went meanwhile (closed, crashed): the next
            // browser_navigate starts one again.
            None => json!({"url": "", "title": "", "note": super::NO_BROWSER_NOTE}),
        };
        Ok(v)
    }

    /// The report of a handoff that ended since this session's last
    /// result, for its `changes`; none for the result that carries it.
    pub(super) fn handoff_change(&self, name: &str, args: &Value) -> Option<HandoffReport> {
        let carries = name == "browser_handoff"
            || (name == "browser_wait"
                && args.get("event").and_then(Value::as_str) == Some("handed_back"));
        if carries {
            return None;
        }
        self.live_task()?.take_unreported()
    }
}

/// `browser_handoff`'s result: `{status, url, view_url, expires_at,
/// handoff?}`, `status` one of `in_progress` (not waited for),
/// `handed_back`, `timed_out`, `cancelled`.
pub fn handoff_result(started: &Started, end: Option<HandoffEnd>) -> Value {
    let mut v = json!({
        "url": started.url,
        "view_url": started.view_url,
        "expires_at": started.expires_at,
    });
    let status = match end {
        None => "in_progress",
        Some(HandoffEnd::Cancelled) => "cancelled",
        Some(HandoffEnd::Ended(r)) => {
            let s = match r.ended_by {
                EndedBy::Person => "handed_back",
                EndedBy::Timeout => "timed_out",
                EndedBy::Agent => "cancelled",
            };
            v["handoff"] = json!(r);
            s
        }
    };
    v["status"] = json!(status);
    v
}
