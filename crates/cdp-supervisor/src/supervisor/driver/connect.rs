//! Resolve → connect → pick: the one path from an endpoint to the tab a
//! supervisor attaches to, taken by its start ([`Supervisor::start_inner`])
//! and by every reconnect (the driver's `schedule_reconnect`).

use super::*;

/// What a connection attaches to.
pub(super) struct Want<'a> {
    /// The tab asked for (`target_id`; at start only).
    pub(super) target_id: Option<&'a str>,
    /// The tabs we supervised, current first (at a reconnect): the first
    /// that still exists.
    pub(super) ours: &'a [String],
    /// A reconnect: the URL is the last WebSocket URL, re-resolved from its
    /// HTTP endpoint (a browser restarted behind the same port has a new
    /// path), or the shared browser's current one; a failed resolve falls
    /// back to the URL itself.
    pub(super) again: bool,
    /// The URL is of a browser this process launched (its own, or the
    /// shared one): used as it is. Only such a URL may be a pipe's
    /// (`pipe://…`), which endpoint resolution refuses as a user's input.
    pub(super) launched: bool,
}

/// The one path from an endpoint to a supervised tab, for a start and for
/// every reconnect: resolves `url` to a WebSocket URL, connects, and
/// attaches — in the task's own browser context (`isolation: context`,
/// [`attach_in_context`]), to a page-level socket's own tab
/// ([`attach_own_tab`]), or to [`pick_and_attach`]'s choice. Returns the
/// WebSocket URL, the connection and its events, the tab, our session on
/// it and the context. The caller bounds the whole with the attach deadline.
pub(super) async fn connect_and_pick(
    url: &str,
    opts: &SupervisorOptions,
    want: Want<'_>,
    shown_url: &str,
) -> Result<Attached, StartError> {
    let headers = &opts.cdp_headers;
    let ws = if want.launched && !want.again {
        url.to_owned()
    } else if !want.again {
        resolve_ws_url_with(url, headers).await?
    } else if let Some(lease) = opts.context.as_ref().and_then(|c| c.browser.as_ref()) {
        // Relaunched here once for every task that shares it.
        lease.browser().ws_url().await?
    } else {
        match http_of(url) {
            Some(http) => resolve_ws_url_with(&http, headers)
                .await
                .unwrap_or_else(|_| url.to_owned()),
            None => url.to_owned(),
        }
    };
    let (conn, events) = Connection::connect_with(&ws, headers).await?;
    conn.set_event_filter(Event::handled);
    if let Some(ctx) = &opts.context {
        // A context of our own (again: the old one went with the
        // connection, or with the browser).
        let (target, session, id) = attach_in_context(&conn, ctx, opts.command_timeout).await?;
        return Ok((ws, conn, events, target, session, Some(id)));
    }
    let (target, session) = if is_page_level(&ws) {
        attach_own_tab(&conn, want.target_id, opts.command_timeout, shown_url).await?
    } else {
        let http = http_of(&ws);
        pick_and_attach(
            &conn,
            want.target_id,
            want.ours,
            http.as_deref().map(|h| (h, headers)),
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
/// own tab, whatever else the browser has — `target_id` if given, else
/// the socket's target. What the endpoint refuses becomes
/// [`StartError::PageLevel`] (use the browser-level URL); a `target_id`
/// that names no tab is the caller's mistake, said as it is.
async fn attach_own_tab(
    conn: &Connection,
    target_id: Option<&str>,
    timeout: Duration,
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
    let own = match target_id {
        Some(t) => t.to_owned(),
        None => own_target(conn, timeout).await.map_err(page_level)?,
    };
    pick_and_attach(conn, Some(&own), &[], None, timeout)
        .await
        .map_err(page_level)
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
