//! Rust `tracing` to Python's `logging`, under the logger `cdp_supervisor`
//! (a record's Rust target, e.g. `cdp_supervisor::supervisor::driver`,
//! becomes the logger `cdp_supervisor.supervisor.driver`).
//!
//! Which records are made is chosen on the Rust side, where it is cheap
//! (`CDP_SUPERVISOR_LOG`, an `EnvFilter` directive; default `info`); Python's
//! own levels and handlers then decide what is shown. Records cross to
//! Python on one thread of their own, so that a runtime thread never waits
//! for the GIL to log: a full queue drops records rather than stalling
//! the supervisors.

use pyo3::prelude::*;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The environment variable that picks which records are made (the
/// binary's log switch too).
use cdp_supervisor::config::LOG_ENV;
/// Records waiting for the logging thread; more are dropped.
const QUEUE: usize = 4096;

struct Record {
    logger: String,
    level: u8,
    message: String,
}

struct ToPython {
    queue: SyncSender<Record>,
}

/// Collects a record's message and fields as one line: `message k=v …`.
#[derive(Default)]
struct Line(String, String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.1, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.1, " {}={value}", field.name());
        }
    }
}

/// Python's level number for a tracing level.
fn python_level(level: &tracing::Level) -> u8 {
    match *level {
        tracing::Level::ERROR => 40,
        tracing::Level::WARN => 30,
        tracing::Level::INFO => 20,
        _ => 10,
    }
}

impl<S: tracing::Subscriber> Layer<S> for ToPython {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if crate::SHUTTING_DOWN.load(Ordering::Relaxed) {
            return;
        }
        let mut line = Line::default();
        event.record(&mut line);
        let meta = event.metadata();
        let logger = meta.target().replace("::", ".");
        let record = Record {
            logger: if logger.starts_with("cdp_supervisor") {
                logger
            } else {
                format!("cdp_supervisor.{logger}")
            },
            level: python_level(meta.level()),
            message: line.0 + &line.1,
        };
        match self.queue.try_send(record) {
            Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// Installs the bridge as the process's tracing subscriber (once; a
/// subscriber set already, by an embedding program, is kept).
pub(crate) fn install(_py: Python<'_>) -> PyResult<()> {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    let (tx, rx) = sync_channel::<Record>(QUEUE);
    let installed = tracing_subscriber::registry()
        .with(ToPython { queue: tx }.with_filter(filter))
        .try_init()
        .is_ok();
    if !installed {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("cdp-supervisor-log".into())
        .spawn(move || {
            for r in rx {
                if crate::SHUTTING_DOWN.load(Ordering::Relaxed) {
                    break;
                }
                let delivered = Python::try_attach(|py| {
                    let logged = py
                        .import("logging")
                        .and_then(|l| l.call_method1("getLogger", (r.logger.as_str(),)))
                        .and_then(|l| l.call_method1("log", (r.level, "%s", r.message.as_str())));
                    if let Err(e) = logged {
                        e.write_unraisable(py, None);
                    }
                });
                if delivered.is_none() {
                    break;
                }
            }
        })
        .map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "cdp_supervisor: cannot start its logging thread: {e}"
            ))
        })?;
    Ok(())
}
