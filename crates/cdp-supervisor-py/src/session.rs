//! The native half of `cdp_supervisor.Task`: one agent task over the
//! library's [`AgentSession`] (the same surface the MCP server is a shell
//! over: tool name and JSON arguments in, the tool's JSON out).

use crate::{CallHandle, block_on, spawn_with_callback};
use cdp_supervisor::config::Config;
use cdp_supervisor::supervisor::registry::Registry as CoreRegistry;
use cdp_supervisor::tools::{AgentSession, ToolError};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

create_exception!(
    _native,
    NativeToolError,
    PyException,
    "A tool failed: args are (message, structured details as JSON or None)."
);
create_exception!(
    _native,
    ConfigError,
    PyValueError,
    "A config key or value the YAML would refuse too (the message names the key and the allowed values)."
);

/// What a call on a closed `Task` says.
const CLOSED: &str =
    "this Task is closed (close() was called): make a new Task to drive a browser again";

/// Every task's supervisors, in one registry for the process.
fn registry() -> &'static CoreRegistry {
    static REGISTRY: OnceLock<CoreRegistry> = OnceLock::new();
    REGISTRY.get_or_init(CoreRegistry::new)
}

/// Every session alive, for `shutdown`.
static SESSIONS: Mutex<Vec<Weak<AgentSession>>> = Mutex::new(Vec::new());

/// Closes every live session (its supervisor, its Chromium, its provider session).
pub(crate) async fn close_every_session() {
    let live: Vec<Arc<AgentSession>> = SESSIONS
        .lock()
        .map(|s| s.iter().filter_map(Weak::upgrade).collect())
        .unwrap_or_default();
    let mut set = tokio::task::JoinSet::new();
    for s in live {
        set.spawn(async move { s.close().await });
    }
    while set.join_next().await.is_some() {}
    registry().stop_all().await;
}

/// A tool's error as the Python side receives it: `(message, structured_json)`.
fn tool_error(e: ToolError) -> PyErr {
    let structured = e.structured.map(|v| v.to_string());
    NativeToolError::new_err((e.message, structured))
}

fn parse_args(args_json: &str) -> PyResult<Value> {
    serde_json::from_str(args_json)
        .map_err(|e| PyValueError::new_err(format!("arguments must be JSON-serializable: {e}")))
}

/// One agent task: its tools over one supervised browser.
#[pyclass(name = "Session", module = "cdp_supervisor._native", frozen)]
pub(crate) struct PySession {
    inner: Arc<AgentSession>,
    closed: AtomicBool,
}

#[pymethods]
impl PySession {
    /// A task `task_id` with the config: the YAML file `config_path` (if
    /// any), then `browser_json` (`{"browser": {…}}`, the keyword
    /// arguments) over it, validated as the YAML is.
    #[new]
    #[pyo3(signature = (task_id, browser_json, config_path=None))]
    fn new(task_id: String, browser_json: &str, config_path: Option<&str>) -> PyResult<PySession> {
        let mut config = Config::load(config_path.map(Path::new), std::iter::empty())
            .map_err(|e| ConfigError::new_err(e.to_string()))?;
        config
            .merge_yaml(browser_json)
            .map_err(|e| ConfigError::new_err(e.to_string()))?;
        let inner = Arc::new(AgentSession::new(registry().clone(), task_id, config));
        if let Ok(mut all) = SESSIONS.lock() {
            all.retain(|w| w.strong_count() > 0);
            all.push(Arc::downgrade(&inner));
        }
        Ok(PySession {
            inner,
            closed: AtomicBool::new(false),
        })
    }

    /// The task id.
    #[getter]
    fn task_id(&self) -> String {
        self.inner.task_id().to_owned()
    }

    /// The tools this task offers (a backend with no CDP hides some).
    fn tool_names(&self) -> Vec<&'static str> {
        self.inner.tool_names()
    }

    /// Calls tool `name` with `args_json`; the tool's result as JSON, or
    /// `NativeToolError(message, structured_json)`.
    fn call(&self, py: Python<'_>, name: String, args_json: &str) -> PyResult<String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(NativeToolError::new_err((CLOSED, None::<String>)));
        }
        let args = parse_args(args_json)?;
        let s = self.inner.clone();
        let out = block_on(py, async move { s.call(&name, args).await })?;
        out.map(|v| v.to_string()).map_err(tool_error)
    }

    /// [`PySession::call`] for asyncio: `callback(True, result_json)` or
    /// `callback(False, NativeToolError)` from the runtime.
    fn call_async(
        &self,
        name: String,
        args_json: &str,
        callback: Py<PyAny>,
    ) -> PyResult<CallHandle> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(NativeToolError::new_err((CLOSED, None::<String>)));
        }
        let args = parse_args(args_json)?;
        let s = self.inner.clone();
        Ok(spawn_with_callback(
            callback,
            async move { s.call(&name, args).await },
            |py, out| match out {
                Ok(v) => Ok(v.to_string().into_pyobject(py)?.into_any().unbind()),
                Err(e) => Err(tool_error(e)),
            },
        ))
    }

    /// Why the navigation policy refuses `url` (the rule), or `None` when
    /// it allows it: the library's own check, so that the Python side can
    /// tell a refused navigation from other tool errors.
    fn navigation_refusal(&self, url: &str) -> Option<String> {
        let policy = self.inner.config().browser.navigation_policy().ok()?;
        policy.check(url).err().map(|r| r.rule.to_string())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Stops the task's supervisor and browser; later calls raise.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let s = self.inner.clone();
        block_on(py, async move { s.close().await })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySession>()?;
    m.add("NativeToolError", m.py().get_type::<NativeToolError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    Ok(())
}
