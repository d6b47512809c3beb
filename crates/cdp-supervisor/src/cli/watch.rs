//! `watch` and `snapshot`: the supervisor on any page.

use super::CliError;
use super::render;
use crate::config::Config;
use crate::supervisor::registry::Registry;
use crate::supervisor::state::Notice;
use crate::tools::AgentSession;
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
    emit(
        json_mode,
        json!({"event": "attached", "endpoint": sup.endpoint(), "url": snap.url,
               "frame_tree": snap.frame_tree, "pending_dialogs": snap.pending_dialogs,
               "page_blocked": snap.page_blocked}),
        format!(
            "attached to {} ({} ms)\n{}",
            sup.endpoint(),
            sup.attach_time().as_millis(),
            render::frame_tree(&snap.frame_tree)
        ),
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
                stop = next_notice(&mut notices, json_mode) => if stop { return Err(gave_up()) },
                _ = tokio::signal::ctrl_c() => return Ok(()),
            }
        }
    }
    loop {
        tokio::select! {
            stop = next_notice(&mut notices, json_mode) => if stop { return Err(gave_up()) },
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

/// Prints the next notice; `true` when the supervisor has ended.
async fn next_notice(
    notices: &mut tokio::sync::broadcast::Receiver<Notice>,
    json_mode: bool,
) -> bool {
    match notices.recv().await {
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
        session
            .browser_navigate(url)
            .await
            .map_err(|e| CliError(e.message))?;
        tokio::time::sleep(std::time::Duration::from_millis(settle_ms)).await;
        let snap = session
            .browser_snapshot(true)
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
