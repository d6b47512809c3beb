//! The native half of `cdp_supervisor.hermes` (the spec's own API): a
//! supervisor handle and a registry over the library's
//! [`Supervisor`](cdp_supervisor::supervisor::driver::Supervisor) and
//! [`Registry`](cdp_supervisor::supervisor::registry::Registry). What the spec
//! module's callers read (dicts, error strings) is worded here, at the
//! border; the Python side builds its dataclasses from the JSON.

use crate::{CallHandle, block_on, spawn_with_callback};
use cdp_supervisor::supervisor::driver::{
    CallOutcome, StartError, Supervisor as CoreSupervisor, SupervisorOptions,
};
use cdp_supervisor::supervisor::policy::DialogPolicies;
use cdp_supervisor::supervisor::registry::{Endpoint, Registry as CoreRegistry};
use cdp_supervisor::supervisor::state::{DialogAction, DialogError, DialogRequest};
use pyo3::exceptions::{PyRuntimeError, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

/// The spec's wording when no dialog is pending (`respond_to_dialog`).
pub const NO_DIALOG: &str = "no dialog is currently open";
/// The spec's wording for a call on a stopped supervisor.
pub const NOT_ACTIVE: &str = "supervisor is not active";
/// How long `_page_session_id` waits for the driver to name the session.
const SESSION_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Supervisors started outside a registry (`CDPSupervisor.start()`), kept
/// until stopped so that `shutdown` stops them at exit.
static STANDALONE: Mutex<Vec<CoreSupervisor>> = Mutex::new(Vec::new());
/// Every registry made (one per `SupervisorRegistry`), for `shutdown`.
static REGISTRIES: Mutex<Vec<CoreRegistry>> = Mutex::new(Vec::new());

/// Stops every supervisor of every registry and every standalone one.
pub(crate) async fn stop_everything() {
    let registries: Vec<CoreRegistry> = REGISTRIES.lock().map(|r| r.clone()).unwrap_or_default();
    let standalone: Vec<CoreSupervisor> = STANDALONE
        .lock()
        .map(|mut s| std::mem::take(&mut *s))
        .unwrap_or_default();
    let stops = registries
        .into_iter()
        .map(|r| Box::pin(async move { r.stop_all().await }) as BoxedStop)
        .chain(
            standalone
                .into_iter()
                .map(|s| Box::pin(async move { s.stop().await }) as BoxedStop),
        );
    futures_join_all(stops).await;
}

type BoxedStop = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs every future at once and waits for all (a join_all without a crate).
async fn futures_join_all<I>(futs: I)
where
    I: IntoIterator<Item = BoxedStop>,
{
    let mut set = tokio::task::JoinSet::new();
    for f in futs {
        set.spawn(f);
    }
    while set.join_next().await.is_some() {}
}

/// A duration in seconds from Python: finite and > 0.
pub(crate) fn seconds(name: &str, s: f64) -> PyResult<Duration> {
    if s.is_finite() && s > 0.0 {
        Duration::try_from_secs_f64(s)
            .map_err(|e| PyValueError::new_err(format!("{name} {s} is not a duration: {e}")))
    } else {
        Err(PyValueError::new_err(format!(
            "{name} must be a number of seconds > 0, not {s}"
        )))
    }
}

/// The options of a spec supervisor: its policy, watchdog and attach deadline.
fn options(
    dialog_policy: &str,
    dialog_timeout_s: f64,
    start_timeout: f64,
) -> PyResult<SupervisorOptions> {
    let policy: DialogPolicies = dialog_policy.parse().map_err(|e| {
        PyValueError::new_err(format!("Invalid dialog_policy {dialog_policy:?}: {e}"))
    })?;
    Ok(SupervisorOptions {
        policy,
        dialog_timeout: seconds("dialog_timeout_s", dialog_timeout_s)?,
        attach_timeout: seconds("start_timeout", start_timeout)?,
        ..Default::default()
    })
}

/// The spec's `start()` errors: `TimeoutError` for the attach deadline,
/// else `RuntimeError("CDP supervisor failed to start: …")`; the library
/// redacts credentials from the URL in both.
fn start_error(e: StartError) -> PyErr {
    match e {
        StartError::Timeout { .. } => {
            PyTimeoutError::new_err(format!("CDP supervisor did not attach: {e}"))
        }
        e => PyRuntimeError::new_err(format!("CDP supervisor failed to start: {e}")),
    }
}

fn parse_params(params_json: Option<&str>) -> PyResult<Value> {
    match params_json {
        None => Ok(json!({})),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Null) => Ok(json!({})),
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(other) => Err(PyValueError::new_err(format!(
                "params must be a dict (the CDP method's parameters), not {other}"
            ))),
            Err(e) => Err(PyValueError::new_err(format!(
                "params must be JSON-serializable: {e}"
            ))),
        },
    }
}

/// One supervisor of the library: the native handle behind a
/// `cdp_supervisor.hermes.CDPSupervisor`.
#[pyclass(name = "Supervisor", module = "cdp_supervisor._native", frozen)]
pub(crate) struct PySupervisor {
    inner: CoreSupervisor,
}

#[pymethods]
impl PySupervisor {
    /// Attaches to `cdp_url` (its first page) within `timeout` seconds.
    #[staticmethod]
    fn start(
        py: Python<'_>,
        cdp_url: String,
        dialog_policy: &str,
        dialog_timeout_s: f64,
        timeout: f64,
    ) -> PyResult<PySupervisor> {
        let opts = options(dialog_policy, dialog_timeout_s, timeout)?;
        let s = block_on(
            py,
            async move { CoreSupervisor::start(&cdp_url, opts).await },
        )?
        .map_err(start_error)?;
        if let Ok(mut all) = STANDALONE.lock() {
            all.push(s.clone());
        }
        Ok(PySupervisor { inner: s })
    }

    /// A number unique to this supervisor in the process.
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id()
    }

    /// Whether it still serves (not stopped, not given up).
    fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    /// The endpoint, credentials redacted.
    #[getter]
    fn endpoint(&self) -> String {
        self.inner.endpoint().to_owned()
    }

    /// The library's snapshot as JSON (never waits for the event loop).
    fn snapshot_json(&self) -> String {
        serde_json::to_string(&*self.inner.snapshot()).unwrap_or_else(|_| "{}".to_owned())
    }

    /// Stops it (and a Chromium it launched), waiting at most `timeout` s.
    fn stop(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let within = seconds("timeout", timeout)?;
        let s = self.inner.clone();
        let id = s.id();
        block_on(py, async move {
            let _ = tokio::time::timeout(within, s.stop()).await;
        })?;
        if let Ok(mut all) = STANDALONE.lock() {
            all.retain(|s| s.id() != id);
        }
        Ok(())
    }

    /// `respond_to_dialog`: `{"ok": true, "dialog": <closed dialog>}` or
    /// `{"ok": false, "error": "…"}`, as JSON. Never raises for an agent's
    /// mistake.
    #[pyo3(signature = (action, prompt_text, dialog_id, timeout))]
    fn respond_to_dialog(
        &self,
        py: Python<'_>,
        action: &str,
        prompt_text: Option<String>,
        dialog_id: Option<String>,
        timeout: f64,
    ) -> PyResult<String> {
        let failed = |error: String| json!({"ok": false, "error": error}).to_string();
        let action = match action {
            "accept" => DialogAction::Accept,
            "dismiss" => DialogAction::Dismiss,
            other => {
                return Ok(failed(format!(
                    "action must be 'accept' or 'dismiss', got {other:?}"
                )));
            }
        };
        if !self.inner.is_running() {
            return Ok(failed(NOT_ACTIVE.to_owned()));
        }
        let within = seconds("timeout", timeout)?;
        let s = self.inner.clone();
        let req = DialogRequest {
            action,
            prompt_text,
            dialog_id,
            files: None,
            login: None,
        };
        let answered = block_on(py, async move {
            tokio::time::timeout(within, s.answer_dialog(req)).await
        })?;
        Ok(match answered {
            Ok(Ok(closed)) => json!({"ok": true, "dialog": closed}).to_string(),
            Ok(Err(DialogError::NoDialog)) => failed(NO_DIALOG.to_owned()),
            Ok(Err(e)) => failed(e.to_string()),
            Err(_) => failed(format!(
                "TimeoutError: the answer got no reply from the browser within {timeout}s"
            )),
        })
    }

    /// `Runtime.evaluate` on the current tab: `{"ok": true, "reply": <CDP
    /// result>}` or `{"ok": false, "error": "…"}`, as JSON.
    fn evaluate(
        &self,
        py: Python<'_>,
        expression: String,
        return_by_value: bool,
        await_promise: bool,
        timeout: f64,
    ) -> PyResult<String> {
        if !self.inner.is_running() {
            return Ok(json!({"ok": false, "error": NOT_ACTIVE}).to_string());
        }
        let within = seconds("timeout", timeout)?;
        let s = self.inner.clone();
        let params = json!({
            "expression": expression,
            "returnByValue": return_by_value,
            "awaitPromise": await_promise,
            // As the spec's: user activation for clipboard / fullscreen APIs.
            "userGesture": true,
        });
        let out = block_on(py, async move {
            s.cdp("Runtime.evaluate", params, None, None, within).await
        })?;
        Ok(match out {
            Ok(CallOutcome::Reply(v)) => json!({"ok": true, "reply": v}),
            Ok(CallOutcome::Interrupted {
                call_id,
                pending_dialogs,
            }) => {
                let ids: Vec<&str> = pending_dialogs.iter().map(|d| d.id.as_str()).collect();
                json!({"ok": false, "error": format!(
                    "Runtime.evaluate has not completed: a JavaScript dialog blocks the page (pending: {}); it runs once the dialog is answered (call_id {call_id}); do not resend it",
                    if ids.is_empty() { "one opened before the supervisor attached".to_owned() } else { ids.join(", ") }
                )})
            }
            Ok(CallOutcome::TimedOut { call_id, after }) => json!({"ok": false, "error": format!(
                "Runtime.evaluate got no reply within {:.1} s and is still queued in the page: it may still run (call_id {call_id}); do not resend it",
                after.as_secs_f64()
            )}),
            Err(e) => json!({"ok": false, "error": e.to_string()}),
        }
        .to_string())
    }

    /// The current tab's CDP session id, or `None`.
    fn page_session_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let s = self.inner.clone();
        Ok(block_on(py, async move {
            tokio::time::timeout(SESSION_READ_TIMEOUT, s.page_session_id()).await
        })?
        .ok()
        .flatten())
    }

    /// `_cdp`, blocking: Chromium's result as JSON; a CDP error raises
    /// `RuntimeError`.
    #[pyo3(signature = (method, params_json, session_id, timeout))]
    fn cdp_on_session(
        &self,
        py: Python<'_>,
        method: String,
        params_json: Option<&str>,
        session_id: Option<String>,
        timeout: f64,
    ) -> PyResult<String> {
        let params = parse_params(params_json)?;
        let within = seconds("timeout", timeout)?;
        let s = self.inner.clone();
        block_on(py, async move {
            s.cdp_on_session(session_id.as_deref(), &method, params, within)
                .await
        })?
        .map(|v| v.to_string())
        .map_err(|e| PyRuntimeError::new_err(format!("CDP error: {e}")))
    }

    /// `_cdp` for asyncio: calls `callback(True, result_json)` or
    /// `callback(False, RuntimeError)` from the runtime.
    #[pyo3(signature = (method, params_json, session_id, timeout, callback))]
    fn cdp_on_session_async(
        &self,
        method: String,
        params_json: Option<&str>,
        session_id: Option<String>,
        timeout: f64,
        callback: Py<PyAny>,
    ) -> PyResult<CallHandle> {
        let params = parse_params(params_json)?;
        let within = seconds("timeout", timeout)?;
        let s = self.inner.clone();
        Ok(spawn_with_callback(
            callback,
            async move {
                s.cdp_on_session(session_id.as_deref(), &method, params, within)
                    .await
            },
            |py, out| match out {
                Ok(v) => Ok(v.to_string().into_pyobject(py)?.into_any().unbind()),
                Err(e) => Err(PyRuntimeError::new_err(format!("CDP error: {e}"))),
            },
        ))
    }
}

/// Supervisors by task id: the library's registry behind
/// `cdp_supervisor.hermes.SupervisorRegistry`.
#[pyclass(name = "Registry", module = "cdp_supervisor._native", frozen)]
pub(crate) struct PyRegistry {
    inner: CoreRegistry,
}

#[pymethods]
impl PyRegistry {
    #[new]
    fn new() -> PyRegistry {
        let inner = CoreRegistry::new();
        if let Ok(mut all) = REGISTRIES.lock() {
            all.push(inner.clone());
        }
        PyRegistry { inner }
    }

    /// The running supervisor of `task_id` on `cdp_url`, started if there
    /// is none (a new URL starts a fresh one, then stops the old one).
    fn get_or_start(
        &self,
        py: Python<'_>,
        task_id: String,
        cdp_url: String,
        dialog_policy: &str,
        dialog_timeout_s: f64,
        start_timeout: f64,
    ) -> PyResult<PySupervisor> {
        let opts = options(dialog_policy, dialog_timeout_s, start_timeout)?;
        let r = self.inner.clone();
        let s = block_on(py, async move {
            r.get_or_start(&task_id, Endpoint::Url(cdp_url), opts).await
        })?
        .map_err(start_error)?;
        Ok(PySupervisor { inner: s })
    }

    /// The running supervisor of `task_id`, or `None`. Never waits.
    fn get(&self, task_id: &str) -> Option<PySupervisor> {
        self.inner.get(task_id).map(|s| PySupervisor { inner: s })
    }

    /// Stops `task_id`'s supervisor; whether there was one.
    fn stop(&self, py: Python<'_>, task_id: String) -> PyResult<bool> {
        let r = self.inner.clone();
        block_on(py, async move { r.stop(&task_id).await })
    }

    /// Stops every supervisor of this registry.
    fn stop_all(&self, py: Python<'_>) -> PyResult<()> {
        let r = self.inner.clone();
        block_on(py, async move { r.stop_all().await })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySupervisor>()?;
    m.add_class::<PyRegistry>()?;
    m.add("NO_DIALOG", NO_DIALOG)?;
    m.add("NOT_ACTIVE", NOT_ACTIVE)?;
    Ok(())
}
