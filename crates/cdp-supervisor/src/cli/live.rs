//! `cdp-supervisor live [URL]`: a browser with no agent, handed to a person
//! through the live view (DESIGN "A person at the wheel"). The person's
//! control link is printed; when they press Done (or it expires) a new one
//! is printed, until Ctrl-C.

use super::CliError;
use crate::config::Config;
use crate::supervisor::registry::Registry;
use crate::tools::AgentSession;

/// How long each printed control link works, at most: an hour (the
/// handoff's own bound); then a new one is printed.
const LINK_S: f64 = 3600.0;

pub(super) async fn run(config: Config, url: Option<String>) -> Result<(), CliError> {
    super::init_logging();
    let agent = AgentSession::new(
        Registry::new(),
        format!("live-{}", std::process::id()),
        config,
    );
    let served = async {
        match &url {
            Some(u) => {
                agent
                    .call("browser_navigate", serde_json::json!({"url": u}))
                    .await?;
            }
            None => {
                agent
                    .call("browser_snapshot", serde_json::json!({"page": false}))
                    .await?;
            }
        }
        let ttl = agent.config().browser.live_ttl_s as f64;
        loop {
            let (task, started) = agent
                .begin_handoff("No agent: this browser is yours.", LINK_S.min(ttl))
                .await?;
            eprintln!(
                "cdp-supervisor live: control (yours alone): {}",
                started.url
            );
            eprintln!(
                "cdp-supervisor live: watch only:            {}",
                started.view_url
            );
            if task.handed_back(started.id).await.is_none() {
                return Ok::<(), crate::tools::ToolError>(());
            }
            eprintln!("cdp-supervisor live: handed back; a new link follows");
        }
    };
    let r = tokio::select! {
        r = served => r.map_err(|e| CliError(e.message)),
        () = crate::mcp::shutdown_signal() => Ok(()),
    };
    agent.close().await;
    r
}
