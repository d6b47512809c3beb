//! Connecting and attaching: the start of a supervisor, the page it picks,
//! and the endpoint checks a reconnect repeats.

use super::run::Driver;
use super::run::spawn_owned;
use super::*;

impl Supervisor {
    /// Starts a supervisor: attaches under the attach deadline
    /// ([`connect_and_pick`]), builds the driver around the core
    /// ([`new_driver`]), spawns its task, and waits — within what is left of
    /// the deadline — for the tab's frame tree before handing out the handle.
    pub(super) async fn start_inner(
        cdp_url: &str,
        opts: SupervisorOptions,
        local: Option<LocalChromium>,
    ) -> Result<Supervisor, StartError> {
        let started = Instant::now();
        let shown_url = redact_url(cdp_url);
        let policy = opts.policy;
        let command_timeout = opts.command_timeout;
        let deadline = opts.attach_timeout;
        let attached = tokio::time::timeout(deadline, connect_and_pick(cdp_url, &opts, &shown_url))
            .await
            .map_err(|_| StartError::Timeout {
                url: shown_url.clone(),
                after: deadline,
            })??;
        let dialog_timeout = opts.dialog_timeout;
        let max_tabs = opts.max_tabs;
        let checks_documents = opts.navigation.document_pattern().is_some();
        let owns_browser = local.is_some();
        let cancel = CancellationToken::new();
        let exited = CancellationToken::new();
        let (mut driver, ends) = new_driver(attached, opts, shown_url.clone(), local);
        let notices = driver.notices.clone();
        let live = driver.live.clone();
        let happened = driver.happened.clone();
        let screencast = driver.screencast.clone();
        let context = driver.browser_context.clone();
        driver.flush();
        let task_cancel = cancel.clone();
        let task_exited = exited.clone();
        // Each line the loop logs names its endpoint: one server runs many.
        let span = tracing::debug_span!("supervisor", endpoint = %shown_url);
        let task = spawn_owned(
            tracing::Instrument::instrument(driver.run(task_cancel), span),
            task_exited,
        );
        // Until the handle exists, dropping this future (a caller's timeout)
        // must stop the task too: nothing runs on after its owner is gone.
        let guard = cancel.clone().drop_guard();
        // The frame tree is complete when every getFrameTree / setAutoAttach
        // sent so far has replied; a blocked page may never answer, so the
        // rest of the attach deadline bounds the wait.
        let left = deadline.saturating_sub(started.elapsed());
        let _ = tokio::time::timeout(left, ends.tree_done).await;
        guard.disarm();
        Ok(Supervisor {
            shared: Arc::new(Shared {
                requests: ends.requests,
                snapshot: ends.snapshot,
                notices,
                cancel,
                exited,
                task: Mutex::new(Some(task)),
                endpoint: shown_url,
                attach_time: started.elapsed(),
                id: NEXT_SUPERVISOR_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                policy,
                command_timeout,
                live,
                happened,
                screencast,
                calls: Arc::new(InterruptedCalls::default()),
                dialog_timeout,
                max_tabs,
                checks_documents,
                owns_browser,
                context,
            }),
        })
    }
}

/// Resolves `cdp_url` to a WebSocket URL, connects, and attaches to the
/// tab to supervise: a page-level socket's own tab ([`attach_own_tab`]),
/// else [`pick_and_attach`]'s choice. Returns the WebSocket URL, the
/// connection and its events, the tab and our session on it. The caller
/// bounds the whole with the attach deadline.
async fn connect_and_pick(
    cdp_url: &str,
    opts: &SupervisorOptions,
    shown_url: &str,
) -> Result<Attached, StartError> {
    let ws = resolve_ws_url_with(cdp_url, &opts.cdp_headers).await?;
    let (conn, events) = Connection::connect_with(&ws, &opts.cdp_headers).await?;
    conn.set_event_filter(Event::handled);
    if let Some(ctx) = &opts.context {
        let (target, session, id) = attach_in_context(&conn, ctx, opts.command_timeout).await?;
        return Ok((ws, conn, events, target, session, Some(id)));
    }
    let (target, session) = if is_page_level(&ws) {
        attach_own_tab(&conn, opts, shown_url).await?
    } else {
        let http = http_of(&ws);
        pick_and_attach(
            &conn,
            opts.target_id.as_deref(),
            &[],
            http.as_deref().map(|h| (h, &opts.cdp_headers)),
            opts.command_timeout,
        )
        .await?
    };
    Ok((ws, conn, events, target, session, None))
}

/// `isolation: context`: creates the task's browser context on `conn`
/// (`disposeOnDetach`: it goes when this connection does; `proxyServer`
/// from `browser.proxy`), turns on target discovery, opens a blank tab in
/// the context and attaches to it. Returns the tab, our session on it and
/// the context id.
pub(super) async fn attach_in_context(
    conn: &Connection,
    ctx: &ContextOptions,
    timeout: Duration,
) -> Result<(TargetInfo, SessionId, String), StartError> {
    let mut params = json!({"disposeOnDetach": true});
    if let Some(proxy) = ctx.proxy.as_deref().filter(|p| !p.is_empty()) {
        params["proxyServer"] = json!(proxy);
    }
    let created = conn
        .send(None, "Target.createBrowserContext", params, timeout)
        .await?;
    let id = created
        .get("browserContextId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CommandError::Protocol {
            method: "Target.createBrowserContext".into(),
            code: 0,
            message: "the reply has no browserContextId".into(),
            data: None,
        })?;
    conn.send(
        None,
        "Target.setDiscoverTargets",
        json!({"discover": true}),
        timeout,
    )
    .await?;
    let mut target = new_blank_page_in(conn, Some(&id), timeout).await?;
    target.browser_context_id = Some(id.clone());
    let session = attach_flatten(conn, &target.target_id, timeout).await?;
    Ok((target, session, id))
}

/// On a page-level socket (one tab's, [`PAGE_LEVEL_NOTE`]): attaches to its
/// own tab, whatever else the browser has — `opts.target_id` if given, else
/// the socket's target. What the endpoint refuses becomes
/// [`StartError::PageLevel`] (use the browser-level URL); a `target_id`
/// that names no tab is the caller's mistake, said as it is.
async fn attach_own_tab(
    conn: &Connection,
    opts: &SupervisorOptions,
    shown_url: &str,
) -> Result<(TargetInfo, SessionId), StartError> {
    let page_level = |e: StartError| match e {
        StartError::NoSuchTarget { .. } | StartError::NotAPage { .. } => e,
        e => StartError::PageLevel {
            url: shown_url.to_owned(),
            reason: e.to_string(),
        },
    };
    tracing::warn!(url = %shown_url, "{PAGE_LEVEL_NOTE}");
    let own = match &opts.target_id {
        Some(t) => t.clone(),
        None => own_target(conn, opts.command_timeout)
            .await
            .map_err(page_level)?,
    };
    pick_and_attach(conn, Some(&own), &[], None, opts.command_timeout)
        .await
        .map_err(page_level)
}

/// The ends of the driver's channels that the [`Supervisor`] handle keeps
/// (and the frame tree's, which the start waits on).
struct HandleEnds {
    requests: mpsc::UnboundedSender<Box<Request>>,
    snapshot: watch::Receiver<Arc<Snapshot>>,
    tree_done: oneshot::Receiver<()>,
}

/// The driver of a supervisor just attached: the core with its first tab
/// ([`Tabs::attach_page`]) and the first snapshot published, the
/// connection, and the channels to the handle, whose ends it returns.
fn new_driver(
    attached: Attached,
    opts: SupervisorOptions,
    shown_url: String,
    local: Option<LocalChromium>,
) -> (Driver, HandleEnds) {
    let (ws, conn, events, target, session, context) = attached;
    let (downloads_dir, downloads) = download_dir(&opts.downloads, local.is_some(), &ws);
    let mut state = Tabs::new(state::Options {
        policy: opts.policy,
        dialog_timeout: opts.dialog_timeout,
        dialog_bridge: opts.dialog_bridge,
        max_tabs: opts.max_tabs,
        navigation: opts.navigation.clone(),
        credentials: opts.credentials.clone(),
        downloads,
        ..Default::default()
    });
    state.set_browser_context(context.clone());
    state.attach_page(
        target.target_id,
        session,
        &target.url,
        &target.title,
        Now::system(),
    );
    let (snap_tx, snap_rx) = watch::channel(Arc::new(state.snapshot()));
    let (req_tx, req_rx) = mpsc::unbounded_channel();
    let (tree_tx, tree_rx) = oneshot::channel();
    let driver = Driver {
        live: Arc::new(Mutex::new(Some(conn.clone()))),
        happened: Arc::new(EventLog::default()),
        screencast: ScreencastTap::default(),
        state,
        opts: Box::new(opts),
        ws_url: ws,
        conn: Some(conn),
        events: Some(events),
        inflight: HashMap::new(),
        tickets: HashMap::new(),
        calls: HashMap::new(),
        loads: HashMap::new(),
        next_ticket: 1,
        snapshot: snap_tx,
        notices: Arc::new(NoticeHub::default()),
        requests: req_rx,
        connection_owed: None,
        tree_pending: 0,
        tree_done: Some(tree_tx),
        catching_up: Vec::new(),
        reconnect: None,
        failures: 0,
        shown_url,
        local: local.map(Box::new),
        event_session: SessionId(String::new()),
        browser_context: Arc::new(Mutex::new(context)),
        reconnects: 0,
        _downloads_dir: downloads_dir,
    };
    let ends = HandleEnds {
        requests: req_tx,
        snapshot: snap_rx,
        tree_done: tree_rx,
    };
    (driver, ends)
}

/// Where downloads go, and the temporary directory that must live as long
/// as the driver when it is one of ours (DESIGN "Downloads"). A browser on
/// this machine — we `launched` it, or `ws` is loopback — downloads into
/// the configured directory, else a temporary one of ours gone with this
/// supervisor (created if missing; a warning if it cannot be). A remote
/// one downloads into a directory on its own disk: the configured one, or
/// a fresh name under its `/tmp` (Chromium creates it), reported as such.
/// Never Chromium's `default` behaviour, which holds a download from a
/// non-secure origin for a person to confirm.
fn download_dir(
    configured: &state::downloads::DownloadOptions,
    launched: bool,
    ws: &str,
) -> (Option<tempfile::TempDir>, state::downloads::DownloadOptions) {
    let here = launched || url::Url::parse(ws).is_ok_and(|u| crate::cdp::endpoint::is_loopback(&u));
    let mut downloads = configured.clone();
    if !here {
        downloads.remote = true;
        downloads.dir.get_or_insert_with(remote_download_dir);
        return (None, downloads);
    }
    if let Some(dir) = &configured.dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!("cannot create the download directory {dir}: {e}");
        }
        return (None, downloads);
    }
    match tempfile::Builder::new()
        .prefix("cdp-supervisor-downloads-")
        .tempdir()
    {
        Ok(d) => {
            downloads.dir = Some(d.path().to_string_lossy().into_owned());
            (Some(d), downloads)
        }
        Err(e) => {
            // Still a directory of its own, never Chromium's default.
            let dir = std::env::temp_dir().join(unique_name());
            tracing::warn!(
                "no temporary download directory: {e}; downloads go to {} (not removed)",
                dir.display()
            );
            downloads.dir = Some(dir.to_string_lossy().into_owned());
            (None, downloads)
        }
    }
}

/// A download directory on a remote browser's disk: a name of its own
/// under `/tmp`, which Chromium creates with the first download.
fn remote_download_dir() -> String {
    format!("/tmp/{}", unique_name())
}

/// `cdp-supervisor-downloads-<16 hex digits>`, unlikely to be anyone else's.
fn unique_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("cdp-supervisor-downloads-{:016x}", h.finish())
}

/// `ws://host:port/devtools/…` → `http://host:port`.
pub(super) fn http_of(ws: &str) -> Option<String> {
    let u = url::Url::parse(ws).ok()?;
    // Only a plain DevTools browser socket is re-resolved; a grid's or a
    // provider's URL (a token in the query, another path) is its own endpoint.
    if !u.path().starts_with("/devtools/browser/") || u.query().is_some() {
        return None;
    }
    let scheme = match u.scheme() {
        "ws" => "http",
        "wss" => "https",
        _ => return None,
    };
    Some(format!(
        "{scheme}://{}:{}",
        u.host_str()?,
        u.port_or_known_default()?
    ))
}

/// Whether `ws` is a page-level DevTools socket ([`is_page_level_path`]).
pub(super) fn is_page_level(ws: &str) -> bool {
    url::Url::parse(ws).is_ok_and(|u| is_page_level_path(u.path()))
}

/// The target a page-level socket belongs to (`Target.getTargetInfo`
/// without a `targetId` answers for the connection's own target).
pub(super) async fn own_target(conn: &Connection, timeout: Duration) -> Result<String, StartError> {
    let info = conn
        .send(None, "Target.getTargetInfo", json!({}), timeout)
        .await?;
    info.pointer("/targetInfo/targetId")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            StartError::Command(CommandError::Protocol {
                method: "Target.getTargetInfo".into(),
                code: 0,
                message: "the reply names no targetId".into(),
                data: None,
            })
        })
}

/// Picks the page to supervise and attaches to it with a flatten session:
/// `target_id` when given (an error when it names no page); else the first
/// page of `prefer` that exists (the tabs we supervised); else the only
/// page; else, among several, the tab in front (the first page of `front`'s
/// `/json/list`, asked only then: an HTTP request per attach cost 7 ms);
/// else a new blank one.
pub(super) async fn pick_and_attach(
    conn: &Connection,
    target_id: Option<&str>,
    prefer: &[String],
    front: Option<(&str, &CdpHeaders)>,
    timeout: Duration,
) -> Result<(TargetInfo, SessionId), StartError> {
    let infos = discover_targets(conn, timeout).await?;
    let pages: Vec<&TargetInfo> = infos.iter().filter(|t| t.target_type == "page").collect();
    let target = match target_id {
        Some(want) => named_page(want, &infos, &pages)?,
        None => match default_page(prefer, &pages, front).await {
            Some(t) => t.clone(),
            None => new_blank_page(conn, timeout).await?,
        },
    };
    let session = attach_flatten(conn, &target.target_id, timeout).await?;
    Ok((target, session))
}

/// Turns on target discovery (`Target.targetInfoChanged` carries the page
/// title) and lists the browser's targets. Both go out at once: one round
/// trip to the browser, not two, before the attach.
async fn discover_targets(
    conn: &Connection,
    timeout: Duration,
) -> Result<Vec<TargetInfo>, StartError> {
    let discover = conn.send(
        None,
        "Target.setDiscoverTargets",
        json!({"discover": true}),
        timeout,
    );
    let targets = conn.send(None, "Target.getTargets", json!({}), timeout);
    discover.await?;
    let targets = targets.await?;
    Ok(targets
        .get("targetInfos")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default())
}

/// The target `want` names, when it is a page; else why not, listing the
/// page targets there are so the caller can pick one.
fn named_page(
    want: &str,
    infos: &[TargetInfo],
    pages: &[&TargetInfo],
) -> Result<TargetInfo, StartError> {
    let listed = || {
        pages
            .iter()
            .map(|t| format!("{} ({})", t.target_id, t.url))
            .collect()
    };
    match infos.iter().find(|t| t.target_id.0 == want) {
        Some(t) if t.target_type == "page" => Ok(t.clone()),
        Some(t) => Err(StartError::NotAPage {
            target_id: want.to_owned(),
            target_type: t.target_type.clone(),
            pages: listed(),
        }),
        None => Err(StartError::NoSuchTarget {
            target_id: want.to_owned(),
            pages: listed(),
        }),
    }
}

/// Opens a new `about:blank` tab (the browser has no page to supervise).
async fn new_blank_page(conn: &Connection, timeout: Duration) -> Result<TargetInfo, StartError> {
    new_blank_page_in(conn, None, timeout).await
}

/// Opens a new `about:blank` tab, in the browser context `context` if given.
async fn new_blank_page_in(
    conn: &Connection,
    context: Option<&str>,
    timeout: Duration,
) -> Result<TargetInfo, StartError> {
    let mut params = json!({"url": "about:blank"});
    if let Some(c) = context {
        params["browserContextId"] = json!(c);
    }
    let created = conn
        .send(None, "Target.createTarget", params, timeout)
        .await?;
    Ok(TargetInfo {
        target_id: TargetId(
            created
                .get("targetId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        target_type: "page".into(),
        title: String::new(),
        url: "about:blank".into(),
        attached: false,
        parent_frame_id: None,
        opener_id: None,
        browser_context_id: context.map(str::to_owned),
    })
}

/// Attaches to `target_id` with a flatten session (its commands and events
/// share the browser's socket) and returns the session id.
async fn attach_flatten(
    conn: &Connection,
    target_id: &TargetId,
    timeout: Duration,
) -> Result<SessionId, StartError> {
    let attached = conn
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id.0, "flatten": true}),
            timeout,
        )
        .await?;
    let session = attached
        .get("sessionId")
        .and_then(Value::as_str)
        .map(SessionId::from)
        .ok_or_else(|| CommandError::Protocol {
            method: "Target.attachToTarget".into(),
            code: 0,
            message: "the reply has no sessionId".into(),
            data: None,
        })?;
    Ok(session)
}

/// With no `target_id`: the first of `prefer` that exists, else the only
/// page, else among several the tab in front (`front`'s `/json/list`).
pub(super) async fn default_page<'a>(
    prefer: &[String],
    pages: &[&'a TargetInfo],
    front: Option<(&str, &CdpHeaders)>,
) -> Option<&'a TargetInfo> {
    if let Some(t) = first_of(prefer, pages) {
        return Some(t);
    }
    match (pages, front) {
        ([_, _, ..], Some((http, headers))) => {
            let order = pages_in_front_order(http, headers).await;
            first_of(&order, pages).or(pages.first().copied())
        }
        _ => pages.first().copied(),
    }
}

/// The first of `wanted` (target ids) that `pages` has.
pub(super) fn first_of<'a>(wanted: &[String], pages: &[&'a TargetInfo]) -> Option<&'a TargetInfo> {
    wanted
        .iter()
        .find_map(|want| pages.iter().find(|t| t.target_id.0 == *want).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use state::downloads::DownloadOptions;

    /// Issue 44 (DESIGN "Downloads"): a browser on this machine downloads
    /// into a directory here (ours when none is configured); a remote one
    /// into a directory on its own disk, marked remote. Never none at all.
    #[test]
    fn regression_44_downloads_go_here_for_a_local_browser_and_to_its_disk_for_a_remote_one() {
        let none = DownloadOptions::default();
        for (launched, ws) in [
            (true, "ws://127.0.0.1:9/devtools/browser/x"),
            (false, "ws://127.0.0.1:9/devtools/browser/x"),
            (false, "ws://localhost:9/devtools/browser/x"),
            (false, "ws://[::1]:9/devtools/browser/x"),
        ] {
            let (tmp, d) = download_dir(&none, launched, ws);
            let tmp = tmp.expect("a directory of ours");
            assert_eq!(d.dir.as_deref(), tmp.path().to_str(), "{ws}");
            assert!(!d.remote && tmp.path().is_dir(), "{ws}");
        }
        let (tmp, d) = download_dir(&none, false, "wss://connect.example.com/?token=x");
        assert!(tmp.is_none() && d.remote);
        let dir = d.dir.unwrap();
        assert!(dir.starts_with("/tmp/cdp-supervisor-downloads-"), "{dir}");
        assert!(!std::path::Path::new(&dir).exists(), "nothing made here");
        let configured = DownloadOptions::into_dir("/srv/downloads");
        let (tmp, d) = download_dir(&configured, false, "ws://10.0.0.7:9222/devtools/browser/x");
        assert!(tmp.is_none() && d.remote);
        assert_eq!(d.dir.as_deref(), Some("/srv/downloads"));
    }
}
