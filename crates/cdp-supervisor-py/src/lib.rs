//! # cdp-supervisor-py
//!
//! The `cdp_supervisor._native` extension module: the cdp-supervisor
//! library in Python, in-process. A thin shell (STYLE.md, pydantic-core and
//! polars): every rule stays in the `cdp-supervisor` crate; this crate
//! converts at the border (JSON text both ways, parsed by Python's `json`)
//! and nothing else. The Python package around it (`python/cdp_supervisor`)
//! gives the spec's own API (`cdp_supervisor.hermes`) and the agent tools
//! (`cdp_supervisor.Task`).
//!
//! Python manners, all here:
//! - One tokio runtime per process serves every supervisor and session
//!   ([`runtime`]): starting a supervisor adds no thread.
//! - A blocking call releases the GIL and wakes every [`SIGNAL_CHECK`] to
//!   let Python run its signal handlers, so Ctrl-C interrupts it (the
//!   Rust work is aborted) ([`block_on`]).
//! - An asyncio twin hands its result to a Python callback from the
//!   runtime ([`spawn_with_callback`]); Python resolves its future with it.
//! - Nothing panics across the border: a panic in a spawned task becomes a
//!   Python `RuntimeError`, one in a method PyO3's `PanicException`.
//! - Rust `tracing` goes to Python's `logging` ([`logging`]).

mod hermes;
mod logging;
mod session;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::Duration;

/// How often a blocking call lets Python look at its signals (DESIGN:
/// Ctrl-C interrupts a blocking call within 100 ms).
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Worker threads of the one runtime: enough for CDP I/O of many
/// supervisors (it is I/O, not computation), few enough that a process
/// with 1,000 supervisors has the same handful of threads as one with one.
const WORKER_THREADS: usize = 2;

/// Set at interpreter exit (`shutdown`): callbacks and log records are
/// no longer handed to Python.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// The process's tokio runtime, made on first use.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("cdp-supervisor")
            .enable_all()
            .build()
            .expect("the cdp-supervisor tokio runtime starts")
    })
}

/// Runs `fut` on the runtime and waits for it with the GIL released,
/// checking Python's signals every [`SIGNAL_CHECK`]: a `KeyboardInterrupt`
/// (or any exception a signal handler raises) aborts `fut` and is returned.
pub(crate) fn block_on<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (tx, rx) = sync_channel(1);
    let task = runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    // A Receiver is Send but not Sync: the GIL-free closure borrows it
    // through a lock only this thread takes.
    let rx = std::sync::Mutex::new(rx);
    loop {
        let got = py.detach(|| match rx.lock() {
            Ok(rx) => rx.recv_timeout(SIGNAL_CHECK),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        });
        match got {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "cdp_supervisor: the call ended without a result (a bug: its task panicked; see the log)",
                ));
            }
        }
    }
}

/// A call running for an asyncio twin: `cancel()` aborts it (the asyncio
/// future was cancelled).
#[pyclass(module = "cdp_supervisor._native", frozen)]
pub(crate) struct CallHandle {
    task: tokio::task::AbortHandle,
}

#[pymethods]
impl CallHandle {
    /// Aborts the call; its callback is not called.
    fn cancel(&self) {
        self.task.abort();
    }
}

/// The outcome handed to an asyncio twin's callback: `(True, value)` or
/// `(False, exception)`.
pub(crate) type Outcome = Result<Py<PyAny>, PyErr>;

/// Spawns `fut` on the runtime; when it ends, calls `callback(ok, value)`
/// with the GIL (`ok` false: `value` is the exception). Python's side
/// resolves its asyncio future from there (`loop.call_soon_threadsafe`).
pub(crate) fn spawn_with_callback<F, C>(callback: Py<PyAny>, fut: F, convert: C) -> CallHandle
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    C: for<'py> FnOnce(Python<'py>, F::Output) -> Outcome + Send + 'static,
{
    let task = runtime().spawn(async move {
        let out = fut.await;
        if SHUTTING_DOWN.load(Ordering::SeqCst) {
            return;
        }
        Python::try_attach(|py| {
            let args = match convert(py, out) {
                Ok(v) => (true, v),
                Err(e) => (false, e.into_value(py).into_any()),
            };
            if let Err(e) = callback.call1(py, args) {
                e.write_unraisable(py, None);
            }
        });
    });
    CallHandle {
        task: task.abort_handle(),
    }
}

/// Stops every supervisor this process started (the hermes registry's, the
/// standalone ones, every `Task`'s) and the Chromiums they launched, each
/// bounded; later callbacks and log records are dropped. Registered with
/// `atexit` by the package, so that an exit with live supervisors leaves
/// no Chromium and no profile directory behind.
#[pyfunction]
fn shutdown(py: Python<'_>) -> PyResult<()> {
    let stopping = async {
        tokio::join!(hermes::stop_everything(), session::close_every_session());
    };
    let stopped = block_on(py, async move {
        tokio::time::timeout(Duration::from_secs(15), stopping).await
    });
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    stopped.map(|_| ())
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::install(m.py())?;
    m.add_class::<CallHandle>()?;
    m.add_function(wrap_pyfunction!(shutdown, m)?)?;
    hermes::register(m)?;
    session::register(m)?;
    Ok(())
}
