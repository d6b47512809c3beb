//! `demo`: the supervisor on real headless Chromium and a bundled two-site
//! page, start to finish, in well under two minutes.
//!
//! Two tabs of one local Chromium, each its own supervised task:
//! - "agent" (`must_respond`, watchdog 3 s): dialogs in the main frame, a
//!   same-origin iframe and a cross-origin OOPIF are answered through
//!   `browser_dialog` as an agent would; one is left to the watchdog;
//!   `browser_cdp(frame_id)` reads `document.title` inside the OOPIF; an
//!   evaluate a dialog interrupts is delivered once, in `browser_dialog`'s
//!   `completed_calls`; a `beforeunload` (after a real click) is answered.
//! - "auto" (`auto_accept`): the same kinds of dialogs answered by the policy.

use super::CliError;
use super::render;
use crate::browser::LocalChromium;
use crate::cdp::connection::{Connection, DEFAULT_COMMAND_TIMEOUT};
use crate::config::Config;
use crate::demo_site::{self, SiteServer, host_resolver_arg};
use crate::supervisor::policy::DialogPolicy;
use crate::supervisor::registry::Registry;
use crate::supervisor::snapshot::{ClosedDialog, FrameTreeView, PendingDialog};
use crate::tools::AgentSession;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The whole demo's deadline (the contract: it ends by itself within two minutes).
const DEMO_DEADLINE: Duration = Duration::from_secs(100);
/// The agent tab's watchdog, short so the demo shows it firing.
const DEMO_WATCHDOG_S: f64 = 3.0;
/// How long to wait for a fired dialog to reach the supervisor.
const DIALOG_WAIT: Duration = Duration::from_secs(10);

/// Runs the demo.
pub async fn run(config: Config, json_mode: bool) -> Result<(), CliError> {
    let site = SiteServer::start()
        .await
        .map_err(|e| CliError(format!("cannot serve the demo site on loopback: {e}")))?;
    let mut launch = config.browser.launch_options();
    launch.extra_args.push(host_resolver_arg().to_owned());
    // The demo's agents attach by URL (`browser_connect`), as to a browser
    // someone else runs: this one listens on a loopback port for its two
    // minutes.
    launch.debugging = crate::browser::Debugging::Port;
    let chromium = LocalChromium::launch(&launch).await?;
    // Downloads go to a directory of the demo's, removed when it ends.
    let downloads = tempfile::Builder::new()
        .prefix("cdp-supervisor-demo-downloads-")
        .tempdir()
        .map_err(|e| CliError(format!("cannot create a download directory: {e}")))?;
    let mut config = config;
    config.browser.downloads_dir = downloads.path().to_string_lossy().into_owned();
    let registry = Registry::new();
    let result = tokio::time::timeout(
        DEMO_DEADLINE,
        play(&config, &site, &chromium, &registry, json_mode),
    )
    .await;
    registry.stop_all().await;
    chromium.shutdown().await;
    match result {
        Ok(r) => r,
        Err(_) => Err(CliError(format!(
            "the demo did not finish within {} s",
            DEMO_DEADLINE.as_secs()
        ))),
    }
}

struct Printer {
    json: bool,
}

impl Printer {
    fn say(&self, text: impl AsRef<str>) {
        if !self.json {
            println!("{}", text.as_ref());
        }
    }

    fn heading(&self, text: &str) {
        self.say(format!("\n== {text} =="));
    }
}

async fn play(
    config: &Config,
    site: &SiteServer,
    chromium: &LocalChromium,
    registry: &Registry,
    json_mode: bool,
) -> Result<(), CliError> {
    let p = Printer { json: json_mode };
    let http = chromium.http_url().unwrap_or_default();
    p.say(format!(
        "cdp-supervisor demo: local headless Chromium at {http}, demo site on 127.0.0.1:{} as a.test and b.test",
        site.port()
    ));

    let (first_page, second_page) = two_tabs(chromium).await?;

    let mut agent_cfg = config.clone();
    agent_cfg.browser.dialog_policy = DialogPolicy::MustRespond.into();
    agent_cfg.browser.dialog_timeout_s = DEMO_WATCHDOG_S;
    let agent = AgentSession::new(registry.clone(), "demo-agent", agent_cfg);
    let mut auto_cfg = config.clone();
    auto_cfg.browser.dialog_policy = DialogPolicy::AutoAccept.into();
    let auto = AgentSession::new(registry.clone(), "demo-auto", auto_cfg);

    tool(
        &agent,
        "browser_connect",
        json!({"cdp_url": http, "target_id": first_page}),
    )
    .await?;
    tool(
        &auto,
        "browser_connect",
        json!({"cdp_url": http, "target_id": second_page}),
    )
    .await?;
    let agent_sup = agent.supervisor().await.map_err(|e| CliError(e.message))?;
    let auto_sup = auto.supervisor().await.map_err(|e| CliError(e.message))?;
    spawn_live_printer("agent", agent_sup.notices(), json_mode);
    spawn_live_printer("auto ", auto_sup.notices(), json_mode);

    // ---- The agent's tab: must_respond ----
    p.heading("tab 1, policy must_respond: the agent answers through browser_dialog");
    let demo_url = site.url("a.test", "/demo");
    let nav = tool(&agent, "browser_navigate", json!({"url": demo_url})).await?;
    p.say(format!("browser_navigate {demo_url} -> {}", nav["status"]));
    let tree = agent_sup.snapshot().frame_tree.clone();
    p.say("frame tree (browser_snapshot.frame_tree):");
    p.say(indent(&render::frame_tree(&tree)));

    let mut seen = HashSet::new();
    agent_answers(&p, &agent, &tree, &mut seen).await?;

    cdp_into_frames(&p, &agent, &tree).await?;

    watchdog(&p, &agent, &mut seen).await?;
    interrupted_call(&p, &agent, &mut seen).await?;
    // The page is left next: keep what it received, and its frames, for the table.
    let earlier = page_results(&agent).await?;
    let tree = agent_sup.snapshot().frame_tree.clone();
    beforeunload(&p, &agent, site, &mut seen).await?;
    summarize(&p, &agent, &tree, earlier).await?;
    popup(&p, &agent, site, &mut seen).await?;
    login_and_download(&p, &agent, site).await?;

    auto_tab(&p, &auto, &demo_url).await?;
    p.say("\ndone: every dialog was caught and closed; Chromium is shut down.");
    Ok(())
}

/// The demo's two tabs: the first page Chromium opened, and a new one
/// (their target ids).
async fn two_tabs(chromium: &LocalChromium) -> Result<(Option<String>, Option<String>), CliError> {
    let (conn, _events) = Connection::connect(chromium.ws_url()).await?;
    let targets = conn
        .send(
            None,
            "Target.getTargets",
            json!({}),
            DEFAULT_COMMAND_TIMEOUT,
        )
        .await?;
    let first_page = targets["targetInfos"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["type"] == "page"))
        .and_then(|t| t["targetId"].as_str())
        .map(str::to_owned);
    let second = conn
        .send(
            None,
            "Target.createTarget",
            json!({"url": "about:blank"}),
            DEFAULT_COMMAND_TIMEOUT,
        )
        .await?;
    let second_page = second["targetId"].as_str().map(str::to_owned);
    conn.close();

    Ok((first_page, second_page))
}

/// Tab 1's dialogs, in each kind of frame, each answered by the agent
/// through `browser_dialog`.
async fn agent_answers(
    p: &Printer,
    agent: &AgentSession,
    tree: &FrameTreeView,
    seen: &mut HashSet<String>,
) -> Result<(), CliError> {
    let steps: [(&str, &str, Value); 4] = [
        (
            "fireLater('confirm', 'Delete the draft?')",
            "accept",
            json!({"action": "accept"}),
        ),
        (
            "fireIn('same', 'prompt', 'Your name?')",
            "accept with \"Ada\"",
            json!({"action": "accept", "prompt_text": "Ada"}),
        ),
        (
            "fireIn('oopif', 'alert', 'Hello from b.test')",
            "accept",
            json!({"action": "accept"}),
        ),
        (
            "fireIn('oopif', 'confirm', 'Allow cookies?')",
            "dismiss",
            json!({"action": "dismiss"}),
        ),
    ];
    for (script, what, args) in steps {
        p.say(format!("\npage runs {script}"));
        eval_top(agent, script).await?;
        let d = wait_dialog(agent, seen).await?;
        p.say(format!(
            "  snapshot shows pending {} in {}",
            render::dialog_line(&d),
            frame_label(tree, d.frame_id.as_deref())
        ));
        let mut args = args;
        args["dialog_id"] = json!(d.id);
        let r = tool(agent, "browser_dialog", args).await?;
        let closed: ClosedDialog = serde_json::from_value(r["answered"].clone())
            .map_err(|e| CliError(format!("unexpected browser_dialog result: {e}")))?;
        p.say(format!(
            "  agent: browser_dialog {what} -> {}",
            render::closed_line(&closed)
        ));
    }

    Ok(())
}

/// `browser_cdp` into the OOPIF (its own session), and the error for a
/// same-origin iframe's frame_id.
async fn cdp_into_frames(
    p: &Printer,
    agent: &AgentSession,
    tree: &FrameTreeView,
) -> Result<(), CliError> {
    p.say("\nbrowser_cdp into the OOPIF (Runtime.evaluate document.title, frame_id of the b.test iframe):");
    let oopif = tree.children.iter().find(|c| c.is_oopif).ok_or_else(|| {
        CliError("the demo page has no OOPIF: Chromium did not isolate b.test".into())
    })?;
    let r = tool(
        agent,
        "browser_cdp",
        json!({"method": "Runtime.evaluate", "params": {"expression": "document.title", "returnByValue": true}, "frame_id": oopif.frame_id}),
    )
    .await?;
    p.say(format!(
        "  frame {} -> {}",
        render::short(&oopif.frame_id),
        r["result"]["result"]["value"]
    ));
    if let Some(same) = tree.children.iter().find(|c| !c.is_oopif) {
        p.say("browser_cdp with the same-origin iframe's frame_id:");
        match agent
            .call(
                "browser_cdp",
                json!({"method": "Runtime.evaluate", "params": {"expression": "1"}, "frame_id": same.frame_id}),
            )
            .await
        {
            Ok(v) => p.say(format!("  unexpected success: {v}")),
            Err(e) => p.say(format!("  error (as designed): {}", e.message)),
        }
    }

    Ok(())
}

/// A confirm nobody answers: the watchdog dismisses it after its timeout.
async fn watchdog(
    p: &Printer,
    agent: &AgentSession,
    seen: &mut HashSet<String>,
) -> Result<(), CliError> {
    p.say(format!(
        "\npage runs fireLater('confirm', 'Nobody answers this one'); the agent stays silent, the watchdog has {DEMO_WATCHDOG_S} s"
    ));
    eval_top(agent, "fireLater('confirm', 'Nobody answers this one')").await?;
    let d = wait_dialog(agent, seen).await?;
    let started = Instant::now();
    let closed = wait_closed(
        agent,
        &d.id,
        Duration::from_secs_f64(DEMO_WATCHDOG_S) + DIALOG_WAIT,
    )
    .await?;
    p.say(format!(
        "  {} {} after {:.1} s",
        d.id,
        render::closed_line(&closed),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// Tab 2, under auto_accept: the supervisor answers every dialog at once.
async fn auto_tab(p: &Printer, auto: &AgentSession, demo_url: &str) -> Result<(), CliError> {
    let auto_sup = auto.supervisor().await.map_err(|e| CliError(e.message))?;
    p.heading("tab 2, policy auto_accept: the supervisor answers at once");
    let nav = tool(auto, "browser_navigate", json!({"url": demo_url})).await?;
    p.say(format!("browser_navigate {demo_url} -> {}", nav["status"]));
    for script in [
        "fireLater('confirm', 'Auto: continue?')",
        "fireIn('same', 'alert', 'Auto: hello')",
        "fireIn('oopif', 'prompt', 'Auto: your city?', 'Lisbon')",
    ] {
        p.say(format!("page runs {script}"));
        let before = auto_sup.snapshot().recent_dialogs.len();
        eval_top(auto, script).await?;
        wait_recent(auto, before + 1).await?;
    }
    // The tree as it is now: an OOPIF's URL may have arrived after the navigate.
    let auto_tree = auto_sup.snapshot().frame_tree.clone();
    summarize(p, auto, &auto_tree, Vec::new()).await?;
    Ok(())
}

/// A call a dialog interrupts: the agent's evaluate returns at once as
/// interrupted, runs once the dialog is answered, and its result comes in
/// `browser_dialog`'s `completed_calls` — exactly once.
async fn interrupted_call(
    p: &Printer,
    agent: &AgentSession,
    seen: &mut HashSet<String>,
) -> Result<(), CliError> {
    p.say("\npage runs fireLater('confirm', 'Pay 12 EUR?'); while it is open the agent evaluates window.payments += 1");
    eval_top(
        agent,
        "window.payments = 0; fireLater('confirm', 'Pay 12 EUR?')",
    )
    .await?;
    let d = wait_dialog(agent, seen).await?;
    let pay = json!({"method": "Runtime.evaluate", "params": {"expression": "window.payments += 1", "returnByValue": true}});
    let call_id = match agent.call("browser_cdp", pay).await {
        Err(e)
            if e.structured
                .as_ref()
                .is_some_and(|s| s["interrupted_by_dialog"] == true) =>
        {
            let call_id = e
                .structured
                .as_ref()
                .map(|s| s["call_id"].clone())
                .unwrap_or_default();
            p.say(format!(
                "  browser_cdp -> error interrupted_by_dialog, call_id {call_id}: not completed, queued in the page, not to be resent"
            ));
            call_id
        }
        other => {
            return Err(CliError(format!(
                "expected the evaluate to be interrupted by {}, got {other:?}",
                d.id
            )));
        }
    };
    let r = tool(
        agent,
        "browser_dialog",
        json!({"action": "accept", "dialog_id": d.id}),
    )
    .await?;
    let done = r["completed_calls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["call_id"] == call_id))
        .ok_or_else(|| CliError(format!("browser_dialog did not deliver {call_id}: {r}")))?;
    p.say(format!(
        "  agent: browser_dialog accept {} -> completed_calls: {call_id} {} = {}",
        d.id, done["method"], done["result"]["result"]["value"]
    ));
    let payments = eval_top(agent, "window.payments").await?;
    p.say(format!(
        "  page: window.payments = {} (the evaluate ran exactly once)",
        payments["result"]["result"]["value"]
    ));
    Ok(())
}

/// A `beforeunload`: shown only after a real user gesture, so the agent
/// clicks (`Input.dispatchMouseEvent`), then navigates away; the navigation
/// returns with the dialog pending and the agent accepts it.
async fn beforeunload(
    p: &Printer,
    agent: &AgentSession,
    site: &SiteServer,
    seen: &mut HashSet<String>,
) -> Result<(), CliError> {
    let page = site.url("a.test", "/beforeunload");
    let away = site.url("a.test", "/demo");
    tool(agent, "browser_navigate", json!({"url": page})).await?;
    p.say(format!(
        "
browser_navigate {page}; the agent clicks the page (Input.dispatchMouseEvent), then navigates away"
    ));
    for kind in ["mousePressed", "mouseReleased"] {
        tool(
            agent,
            "browser_cdp",
            json!({"method": "Input.dispatchMouseEvent", "params": {"type": kind, "x": 100, "y": 100, "button": "left", "clickCount": 1}}),
        )
        .await?;
    }
    let nav = tool(agent, "browser_navigate", json!({"url": away})).await?;
    p.say(format!("  browser_navigate {away} -> {}", nav["status"]));
    let d = wait_dialog(agent, seen).await?;
    p.say(format!(
        "  snapshot shows pending {}",
        render::dialog_line(&d)
    ));
    accept(p, agent, &d.id).await?;
    let deadline = Instant::now() + DIALOG_WAIT;
    loop {
        let snap = tool(agent, "browser_snapshot", json!({})).await?;
        // The title is read live: it is the new page's once it has parsed its <title>.
        if snap["url"] == away.as_str() && snap["title"] == "cdp-supervisor demo" {
            p.say(format!(
                "  the page left: browser_snapshot url {} title {}",
                snap["url"], snap["title"]
            ));
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(CliError(format!(
                "the page did not leave for {away}: {snap}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A checkout opens its payment in a popup whose first script asks
/// `confirm()`: the dialog is caught in the popup the agent never selected,
/// answered there, and the popup receives the answer.
async fn popup(
    p: &Printer,
    agent: &AgentSession,
    site: &SiteServer,
    seen: &mut HashSet<String>,
) -> Result<(), CliError> {
    let checkout = site.url("a.test", "/checkout");
    tool(agent, "browser_navigate", json!({"url": checkout})).await?;
    p.say(format!(
        "\nbrowser_navigate {checkout}; the agent clicks \"Pay 12 EUR\": the payment opens in a popup"
    ));
    for kind in ["mousePressed", "mouseReleased"] {
        // The popup's confirm can freeze its opener (same site, one
        // renderer): then the click comes back interrupted, and is not resent.
        let _ = agent
            .call(
                "browser_cdp",
                json!({"method": "Input.dispatchMouseEvent", "params": {"type": kind, "x": 100, "y": 100, "button": "left", "clickCount": 1}}),
            )
            .await;
    }
    let d = wait_dialog(agent, seen).await?;
    let snap = tool(agent, "browser_snapshot", json!({})).await?;
    let popup_id = d.target_id.clone().unwrap_or_default();
    p.say(format!(
        "  snapshot shows pending {} in tab [{}] (the current tab is still {})",
        render::dialog_line(&d),
        render::short(&popup_id),
        snap["url"]
    ));
    accept(p, agent, &d.id).await?;
    let deadline = Instant::now() + DIALOG_WAIT;
    loop {
        let title = tool(
            agent,
            "browser_cdp",
            json!({"method": "Runtime.evaluate", "params": {"expression": "document.title", "returnByValue": true}, "target_id": popup_id}),
        )
        .await?["result"]["result"]["value"]
            .clone();
        if title == "paid" {
            p.say(format!(
                "  the popup received the answer: its title is {title}"
            ));
            break;
        }
        if Instant::now() > deadline {
            return Err(CliError(format!("the popup's title is {title}, not paid")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tabs = tool(
        agent,
        "browser_tabs",
        json!({"action": "close", "target_id": popup_id}),
    )
    .await?;
    p.say(format!(
        "  browser_tabs close [{}] -> {} tab(s) left",
        render::short(&popup_id),
        tabs["tabs"].as_array().map_or(0, Vec::len)
    ));
    Ok(())
}

/// A page behind HTTP Basic auth: the login prompt is a pending
/// `http_auth` dialog, answered with a username and password; then a click
/// on a link starts a download, which lands in the task's directory under
/// its suggested name.
async fn login_and_download(
    p: &Printer,
    agent: &AgentSession,
    site: &SiteServer,
) -> Result<(), CliError> {
    let staff = site.url("a.test", "/staff");
    let nav = tool(agent, "browser_navigate", json!({"url": staff})).await?;
    let pending: Vec<PendingDialog> =
        serde_json::from_value(nav["pending_dialogs"].clone()).unwrap_or_default();
    let Some(d) = pending.iter().find(|d| d.dialog_type == "http_auth") else {
        return Err(CliError(format!(
            "browser_navigate {staff} gave no http_auth: {nav}"
        )));
    };
    p.say(format!(
        "\nbrowser_navigate {staff} -> {}: the server asks for a login\n  pending {}",
        nav["status"],
        render::dialog_line(d)
    ));
    let (user, password) = demo_site::STAFF_LOGIN;
    tool(
        agent,
        "browser_dialog",
        json!({"action": "accept", "dialog_id": d.id, "username": user, "password": password}),
    )
    .await?;
    let deadline = Instant::now() + DIALOG_WAIT;
    loop {
        let title = eval_top(agent, "document.title").await?["result"]["result"]["value"].clone();
        if title == "Staff area" {
            p.say(format!(
                "  agent: browser_dialog accept {} with username {user:?} and a password -> the page loads: {title}",
                d.id
            ));
            break;
        }
        if Instant::now() > deadline {
            return Err(CliError(format!(
                "the staff page did not load: title {title}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let found = tool(agent, "browser_snapshot", json!({"find": "report.csv"})).await?;
    let page = found["page"].as_str().unwrap_or_default();
    let Some(r) = page
        .split("[ref=")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
    else {
        return Err(CliError(format!("no ref for the report link in {page:?}")));
    };
    tool(agent, "browser_click", json!({"ref": r})).await?;
    let waited = tool(
        agent,
        "browser_wait",
        json!({"event": "download_done", "timeout_s": DIALOG_WAIT.as_secs_f64()}),
    )
    .await?;
    let download = &waited["snapshot"]["downloads"][0];
    if download["state"] != "completed" {
        return Err(CliError(format!("the download did not complete: {waited}")));
    }
    p.say(format!(
        "  agent clicks \"report.csv\": browser_wait(download_done) -> {} bytes saved as {}",
        download["received_bytes"],
        download["path"].as_str().unwrap_or("?")
    ));
    Ok(())
}

/// The agent accepts dialog `id` (`browser_dialog`) and says how it closed.
async fn accept(p: &Printer, agent: &AgentSession, id: &str) -> Result<ClosedDialog, CliError> {
    let r = tool(
        agent,
        "browser_dialog",
        json!({"action": "accept", "dialog_id": id}),
    )
    .await?;
    let closed: ClosedDialog = serde_json::from_value(r["answered"].clone())
        .map_err(|e| CliError(format!("unexpected browser_dialog result: {e}")))?;
    p.say(format!(
        "  agent: browser_dialog accept -> {}",
        render::closed_line(&closed)
    ));
    Ok(closed)
}

/// What the current page's dialogs returned (`window.results`).
async fn page_results(session: &AgentSession) -> Result<Vec<Value>, CliError> {
    // Results from iframes reach the top by postMessage; give them a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = eval_top(session, "JSON.stringify(window.results)").await?;
    Ok(r["result"]["result"]["value"]
        .as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default())
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("  {l}\n"))
        .collect::<String>()
        .trim_end()
        .to_owned()
}

async fn tool(session: &AgentSession, name: &str, args: Value) -> Result<Value, CliError> {
    session
        .call(name, args)
        .await
        .map_err(|e| CliError(format!("{name} failed: {}", e.message)))
}

async fn eval_top(session: &AgentSession, expression: &str) -> Result<Value, CliError> {
    tool(
        session,
        "browser_cdp",
        json!({"method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": true}}),
    )
    .await
}

async fn wait_dialog(
    session: &AgentSession,
    seen: &mut HashSet<String>,
) -> Result<Arc<PendingDialog>, CliError> {
    let sup = session
        .supervisor()
        .await
        .map_err(|e| CliError(e.message))?;
    let mut rx = sup.subscribe();
    let found = tokio::time::timeout(DIALOG_WAIT, async {
        loop {
            if let Some(d) = rx
                .borrow_and_update()
                .pending_dialogs
                .iter()
                .find(|d| !seen.contains(&d.id))
            {
                return Some(d.clone());
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    })
    .await;
    match found {
        Ok(Some(d)) => {
            seen.insert(d.id.clone());
            Ok(d)
        }
        _ => Err(CliError(format!(
            "no dialog reached the supervisor within {} s",
            DIALOG_WAIT.as_secs()
        ))),
    }
}

async fn wait_closed(
    session: &AgentSession,
    id: &str,
    within: Duration,
) -> Result<Arc<ClosedDialog>, CliError> {
    let sup = session
        .supervisor()
        .await
        .map_err(|e| CliError(e.message))?;
    let mut rx = sup.subscribe();
    tokio::time::timeout(within, async {
        loop {
            if let Some(c) = rx
                .borrow_and_update()
                .recent_dialogs
                .iter()
                .find(|c| c.dialog.id == id)
            {
                return Some(c.clone());
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    })
    .await
    .ok()
    .flatten()
    .ok_or_else(|| {
        CliError(format!(
            "dialog {id} did not close within {} s",
            within.as_secs()
        ))
    })
}

async fn wait_recent(session: &AgentSession, count: usize) -> Result<(), CliError> {
    let sup = session
        .supervisor()
        .await
        .map_err(|e| CliError(e.message))?;
    let mut rx = sup.subscribe();
    tokio::time::timeout(DIALOG_WAIT, async {
        while rx.borrow_and_update().recent_dialogs.len() < count {
            if rx.changed().await.is_err() {
                break;
            }
        }
    })
    .await
    .map_err(|_| CliError("the auto policy did not close the dialog in time".into()))
}

/// Names a frame for people: `main frame`, `iframe a.test`, `OOPIF b.test`.
fn frame_label(tree: &FrameTreeView, frame_id: Option<&str>) -> String {
    let host = |u: &str| {
        url::Url::parse(u)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let Some(id) = frame_id else {
        return "an unknown frame".into();
    };
    if let Some(top) = tree.top.as_ref().filter(|t| t.frame_id == id) {
        return format!("main frame ({})", host(&top.url));
    }
    match tree.children.iter().find(|c| c.frame_id == id) {
        Some(c) if c.is_oopif => format!("OOPIF ({})", host(&c.url)),
        Some(c) => format!("same-origin iframe ({})", host(&c.url)),
        None => format!("frame {}", render::short(id)),
    }
}

/// The frame name the demo pages record results under (`main`, `same`, `oopif`).
fn page_frame_name(tree: &FrameTreeView, frame_id: Option<&str>) -> &'static str {
    match tree
        .children
        .iter()
        .find(|c| Some(c.frame_id.as_str()) == frame_id)
    {
        Some(c) if c.is_oopif => "oopif",
        Some(_) => "same",
        None => "main",
    }
}

/// A table of every dialog of the tab: type, frame, who closed it, what the
/// page received (`earlier`: what pages the tab has left received).
async fn summarize(
    p: &Printer,
    session: &AgentSession,
    tree: &FrameTreeView,
    earlier: Vec<Value>,
) -> Result<(), CliError> {
    let sup = session
        .supervisor()
        .await
        .map_err(|e| CliError(e.message))?;
    let mut results = earlier;
    results.extend(page_results(session).await?);
    let mut used = vec![false; results.len()];
    p.say(format!(
        "\n{:<5} {:<12} {:<28} {:<12} {:<22} {}",
        "id", "type", "frame", "closed by", "answer", "page received"
    ));
    let snap = sup.snapshot();
    for c in &snap.recent_dialogs {
        let name = page_frame_name(tree, c.dialog.frame_id.as_deref());
        let received = results
            .iter()
            .enumerate()
            .find(|(i, r)| {
                !used[*i] && r["kind"] == c.dialog.dialog_type.as_str() && r["frame"] == name
            })
            .map(|(i, r)| {
                used[i] = true;
                r["value"].to_string()
            })
            .unwrap_or_else(|| match (c.dialog.dialog_type.as_str(), c.accepted) {
                // Its page is gone: leaving it is what the page received.
                ("beforeunload", Some(true)) => "left the page".into(),
                _ => "?".into(),
            });
        let answer = match (c.accepted, &c.user_input) {
            (Some(true), Some(t)) => format!("accepted {t:?}"),
            (Some(true), None) => "accepted".into(),
            (Some(false), _) => "dismissed".into(),
            (None, _) => "closed".into(),
        };
        p.say(format!(
            "{:<5} {:<12} {:<28} {:<12} {:<22} {}",
            c.dialog.id,
            c.dialog.dialog_type,
            frame_label(tree, c.dialog.frame_id.as_deref()),
            c.closed_by.as_str(),
            answer,
            received
        ));
    }
    Ok(())
}

fn spawn_live_printer(
    label: &'static str,
    mut notices: tokio::sync::broadcast::Receiver<crate::supervisor::state::Notice>,
    json_mode: bool,
) {
    use crate::supervisor::state::Notice;
    tokio::spawn(async move {
        loop {
            match notices.recv().await {
                Ok(n) => {
                    if json_mode {
                        let mut v = serde_json::to_value(&n).unwrap_or_default();
                        v["task"] = json!(label.trim());
                        println!("{v}");
                    } else if matches!(n, Notice::DialogOpened { .. } | Notice::DialogClosed { .. })
                    {
                        println!("  [{label} live] {}", render::notice_line(&n));
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
    });
}
