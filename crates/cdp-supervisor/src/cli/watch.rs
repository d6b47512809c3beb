//! `watch` and `snapshot`: the supervisor on any page.

use super::CliError;
use super::render;
use crate::config::Config;
use crate::supervisor::act::OutlineMode;
use crate::supervisor::registry::Registry;
use crate::supervisor::state::Notice;
use crate::tools::{AgentSession, PageRequest};
use serde_json::json;
use std::io::Write;
use tokio::sync::broadcast::error::RecvError;

fn gave_up() -> CliError {
    CliError("the CDP endpoint went away and did not come back; the supervisor gave up".into())
}

fn emit(json_mode: bool, value: serde_json::Value, human: String) {
    let mut out = std::io::stdout().lock();
    let _ = if json_mode {
        writeln!(out, "{value}")
    } else {
        // Page text is escaped where it is rendered; this catches the rest.
        writeln!(out, "{}", render::terminal_safe(&human))
    };
    let _ = out.flush();
}

/// `watch [URL]`: attach or launch, navigate if asked, print notices until
/// Ctrl-C (or SIGTERM); then its browser stops (a provider session is released).
pub async fn watch(config: Config, url: Option<String>, json_mode: bool) -> Result<(), CliError> {
    if let Some(u) = &url {
        crate::tools::check_url(u).map_err(|e| CliError(e.message))?;
    }
    let session = AgentSession::new(Registry::new(), "watch", config);
    // SIGTERM too: a cloud provider's session must not outlive us.
    let result = tokio::select! {
        r = watch_inner(&session, url, json_mode) => r,
        () = crate::mcp::shutdown_signal() => Ok(()),
    };
    session.close().await;
    result
}

async fn watch_inner(
    session: &AgentSession,
    url: Option<String>,
    json_mode: bool,
) -> Result<(), CliError> {
    let sup = session
        .supervisor()
        .await
        .map_err(|e| CliError(e.message))?;
    let mut notices = sup.notices();
    let snap = sup.snapshot();
    // Said in the attached event: not again if its notice comes after.
    let mut shown = Shown {
        dialogs: snap.pending_dialogs.iter().map(|d| d.id.clone()).collect(),
        page_blocked: snap.page_blocked,
    };
    emit(
        json_mode,
        json!({"event": "attached", "endpoint": sup.endpoint(), "url": snap.url,
               "frame_tree": snap.frame_tree, "pending_dialogs": snap.pending_dialogs,
               "page_blocked": snap.page_blocked}),
        attached_text(&sup, &snap),
    );
    if let Some(url) = url {
        // Navigate in the background: the notices below show what happens.
        let nav = session.browser_navigate(&url);
        tokio::pin!(nav);
        let mut nav_done = false;
        loop {
            tokio::select! {
                r = &mut nav, if !nav_done => {
                    nav_done = true;
                    let v = r.map_err(|e| CliError(e.message))?;
                    emit(json_mode, json!({"event": "navigated", "result": v}),
                        format!("navigated       {} ({})", v["url"].as_str().unwrap_or(""), v["status"].as_str().unwrap_or("")));
                }
                stop = next_notice(&mut notices, json_mode, &mut shown) => if stop { return Err(gave_up()) },
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
        }
    }
    loop {
        tokio::select! {
            stop = next_notice(&mut notices, json_mode, &mut shown) => if stop { return Err(gave_up()) },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

/// The human `attached` lines: the frame tree, then what already blocks
/// the page. Its notices may have gone out before we subscribed (a page
/// blocked before we attached is found during the attach): a helper saw
/// the blocked line missing in 6 of 8 first attaches.
fn attached_text(
    sup: &crate::supervisor::driver::Supervisor,
    snap: &crate::supervisor::snapshot::Snapshot,
) -> String {
    let mut text = format!(
        "attached to {} ({} ms)\n{}",
        sup.endpoint(),
        sup.attach_time().as_millis(),
        render::frame_tree(&snap.frame_tree).trim_end()
    );
    let already = snap
        .pending_dialogs
        .iter()
        .map(|d| Notice::DialogOpened { dialog: d.clone() })
        .chain(snap.page_blocked.then_some(Notice::PageBlocked));
    for n in already {
        text.push('\n');
        text.push_str(&render::notice_line(&n));
    }
    text
}

/// What the attached event already said; each is skipped once if its
/// notice still comes.
struct Shown {
    dialogs: Vec<String>,
    page_blocked: bool,
}

impl Shown {
    /// Whether `n` only repeats the attached event (forgotten once seen).
    fn repeats(&mut self, n: &Notice) -> bool {
        match n {
            Notice::PageBlocked => std::mem::take(&mut self.page_blocked),
            Notice::DialogOpened { dialog } => {
                let before = self.dialogs.len();
                self.dialogs.retain(|id| *id != dialog.id);
                self.dialogs.len() != before
            }
            _ => false,
        }
    }
}

/// Prints the next notice; `true` when the supervisor has ended.
async fn next_notice(
    notices: &mut tokio::sync::broadcast::Receiver<Notice>,
    json_mode: bool,
    shown: &mut Shown,
) -> bool {
    match notices.recv().await {
        Ok(n) if shown.repeats(&n) => false,
        Ok(n) => {
            let value = serde_json::to_value(&n).unwrap_or_default();
            emit(json_mode, value, render::notice_line(&n));
            matches!(
                n,
                Notice::Connection {
                    status: crate::supervisor::snapshot::ConnectionStatus::Closed
                }
            )
        }
        Err(RecvError::Lagged(n)) => {
            emit(
                json_mode,
                json!({"event": "lagged", "skipped": n}),
                format!("({n} notices skipped: the terminal is slower than the page)"),
            );
            false
        }
        Err(RecvError::Closed) => {
            emit(
                json_mode,
                json!({"event": "connection", "status": "closed"}),
                "connection      closed".into(),
            );
            true
        }
    }
}

/// `snapshot URL`: navigate, wait `settle_ms`, print the snapshot JSON.
pub async fn snapshot(config: Config, url: &str, settle_ms: u64) -> Result<(), CliError> {
    let session = AgentSession::new(Registry::new(), "snapshot", config);
    let result = async {
        let nav = session
            .browser_navigate(url)
            .await
            .map_err(|e| CliError(e.message))?;
        if nav["status"] != "loaded" {
            // Printed all the same: what the page shows may be what the
            // user came for; stderr says it is not a loaded page (in the
            // CLI's terms: browser_dialog is the agent's tool).
            let why = match nav["status"].as_str() {
                Some("dialog_pending") => "a dialog opened before it loaded",
                Some("load_timeout") => "it did not finish loading within 30 s",
                _ => "it did not load",
            };
            eprintln!(
                "cdp-supervisor: {url}: {} ({why}); the snapshot is of the page as it is",
                nav["status"].as_str().unwrap_or("not loaded")
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(settle_ms)).await;
        let snap = session
            .browser_snapshot(PageRequest::Read(OutlineMode::Default))
            .await
            .map_err(|e| CliError(e.message))?;
        println!(
            "{}",
            serde_json::to_string_pretty(&snap).unwrap_or_default()
        );
        Ok(())
    }
    .await;
    session.close().await;
    result
}
