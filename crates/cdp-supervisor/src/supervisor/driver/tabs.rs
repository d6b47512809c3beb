//! Tab operations: select, open, close, list, and navigate with its
//! load or its dialog.

use super::*;
use crate::supervisor::state::calls::{blocks_navigation, stuck_beforeunload};

impl Supervisor {
    /// Makes the supervised tab `target_id` current: `browser_navigate`,
    /// `browser_cdp` and the snapshot's page and `frame_tree` act on it.
    ///
    /// # Errors
    /// [`RouteError::UnknownTab`] naming the supervised tabs.
    pub async fn select_tab(&self, target_id: &str) -> Result<(), CdpCallError> {
        let (tx, rx) = oneshot::channel();
        self.request(Request::SelectTab {
            target_id: target_id.to_owned(),
            reply: tx,
        })?;
        rx.await
            .map_err(|_| CdpCallError::NotConnected("the supervisor has stopped".into()))?
            .map_err(CdpCallError::Route)?;
        // The snapshot's page changed: the resource's subscribers hear it.
        self.shared.happened.record(EventKind::CurrentTab);
        Ok(())
    }

    /// Opens a new tab on `url` (`Target.createTarget`), supervised from its
    /// first script, and makes it current. Returns its target id.
    ///
    /// # Errors
    /// As [`Supervisor::create_target`].
    pub async fn new_tab(&self, url: &str, timeout: Duration) -> Result<String, CdpCallError> {
        let v = self.create_target(json!({ "url": url }), timeout).await?;
        let target_id = v
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.select_tab(&target_id).await?;
        Ok(target_id)
    }

    /// Opens a tab with `Target.createTarget` and the agent's `params`
    /// (`{url, …}`), and returns Chromium's reply (`{targetId}`) once the
    /// tab is supervised (within `timeout`). It does not become current.
    ///
    /// Under a navigation policy that checks documents in the browser, a
    /// tab asked for with a `url` is created on `about:blank` and sent to
    /// `url` (`Page.navigate`, not waited for) once it is supervised:
    /// Chromium fetches a created tab's first document before the tab can be
    /// paused, so that document, or a redirect from it, would load
    /// unchecked.
    ///
    /// # Errors
    /// [`CdpCallError::Command`] when Chromium refuses or does not answer
    /// within `timeout`; [`CdpCallError::Route`] when the new page could not
    /// be supervised (past `max_tabs`).
    pub async fn create_target(
        &self,
        mut params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpCallError> {
        let max_tabs = self.shared.max_tabs;
        if self.snapshot().tabs.len() >= max_tabs {
            return Err(CdpCallError::Route(RouteError::MaxTabs { max_tabs }));
        }
        let deferred = params
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| self.shared.checks_documents && !u.is_empty() && *u != "about:blank")
            .map(str::to_owned);
        if deferred.is_some() {
            params["url"] = json!("about:blank");
        }
        let v = self
            .send_agent(Target::Browser, "Target.createTarget", params, timeout)
            .await
            .map_err(|e| match e {
                AgentCallError::Command(c) => CdpCallError::Command(c),
                AgentCallError::Stopped => {
                    CdpCallError::NotConnected("the supervisor has stopped".into())
                }
            })?;
        let target_id = v
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        // The page attached (and was adopted) before Chromium's reply, or
        // attaches right after it.
        let mut snaps = self.subscribe();
        let adopted = async {
            loop {
                if snaps
                    .borrow_and_update()
                    .tabs
                    .iter()
                    .any(|t| t.target_id == target_id)
                {
                    return;
                }
                if snaps.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        if tokio::time::timeout(timeout, adopted).await.is_err() {
            return Err(CdpCallError::Route(RouteError::UnknownTab {
                target_id,
                known: self
                    .snapshot()
                    .tabs
                    .iter()
                    .map(|t| t.target_id.clone())
                    .collect(),
            }));
        }
        if let Some(url) = deferred {
            let (_conn, session) = self.route(None, Some(&target_id), false).await?;
            // Queued now, in order with what the agent sends next; its reply
            // (at commit) is the core's to track, like any navigation's.
            drop(self.send_agent(
                Target::Session(session),
                "Page.navigate",
                json!({ "url": url }),
                timeout,
            ));
        }
        Ok(v)
    }

    /// Closes the supervised tab `target_id` with `Page.close`, which runs
    /// its `beforeunload` (`Target.closeTarget` would skip it): the close
    /// then waits for that dialog, which shows as pending.
    ///
    /// # Errors
    /// [`RouteError::UnknownTab`]; [`CdpCallError::Command`] when Chromium refuses.
    pub async fn close_tab(&self, target_id: &str, timeout: Duration) -> Result<(), CdpCallError> {
        let (_conn, session) = self.route(None, Some(target_id), true).await?;
        let mut snaps = self.subscribe();
        let before = self.dialogs_before();
        let reply = self.send_agent(Target::Session(session), "Page.close", json!({}), timeout);
        let closed = self.race_dialogs_since(before, reply, false).await;
        // Between documents (a tab just created on about:blank and sent to
        // its URL) Chromium's page answers "Not attached to an active page";
        // a page whose script never yields answers nothing. Neither runs a
        // beforeunload: close the target, as Chromium's "Exit page" would.
        let no_page = match &closed {
            Ok(Err(AgentCallError::Command(CommandError::Protocol {
                code: -32000,
                message,
                ..
            }))) => message.contains(NOT_ATTACHED),
            Ok(Err(AgentCallError::Command(CommandError::Timeout { .. }))) => true,
            _ => false,
        };
        if no_page {
            let reply = self.send_agent(
                Target::Browser,
                "Target.closeTarget",
                json!({ "targetId": target_id }),
                timeout,
            );
            if let Err(AgentCallError::Command(c)) = reply.await {
                return Err(CdpCallError::Command(c));
            }
        } else {
            match closed {
                Ok(Err(AgentCallError::Command(c))) => return Err(CdpCallError::Command(c)),
                Ok(Err(AgentCallError::Stopped)) => {
                    return Err(CdpCallError::NotConnected(
                        "the supervisor has stopped".into(),
                    ));
                }
                Ok(Ok(_)) | Err(_) => {}
            }
        }
        // Chromium replies before the tab is gone: wait (bounded) until it
        // is, or until one of its dialogs (its beforeunload) holds the close.
        let state = |s: &Snapshot| {
            let open = s.tabs.iter().any(|t| t.target_id == target_id);
            let held = s.pending_dialogs.iter().any(|d| {
                d.target_id.as_deref() == Some(target_id)
                    && d.dialog_type == crate::cdp::protocol::DialogType::Beforeunload
            });
            (open, held)
        };
        let settled = async {
            loop {
                if let (false, _) | (_, true) = state(&snaps.borrow_and_update()) {
                    return;
                }
                if snaps.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, settled).await;
        if state(&self.snapshot()) == (true, false) {
            // Page.close answered and did nothing (seen under load on a tab
            // between documents): close the target, which nothing can hold.
            let _ = self
                .send_agent(
                    Target::Browser,
                    "Target.closeTarget",
                    json!({ "targetId": target_id }),
                    timeout,
                )
                .await;
            let gone = async {
                while state(&snaps.borrow_and_update()).0 {
                    if snaps.changed().await.is_err() {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(timeout, gone).await;
        }
        Ok(())
    }

    /// Every supervised tab's URL and title as Chromium has them now, oldest
    /// first (one `Target.getTargets` on the browser session: answered by
    /// the browser process, also while dialogs block pages). `None` when not
    /// connected or no answer came `within`; a tab Chromium no longer lists
    /// is left out.
    pub async fn live_tabs(&self, within: Duration) -> Option<Vec<LivePage>> {
        let conn = self.connection()?;
        let ours: Vec<Known> = self
            .snapshot()
            .tabs
            .iter()
            .map(|t| Known {
                target_id: t.target_id.clone(),
                url: t.url.to_string(),
                held: t.pending_dialogs > 0,
            })
            .collect();
        let all = conn
            .send(None, "Target.getTargets", json!({}), within)
            .await
            .ok()?;
        let infos: Vec<TargetInfo> = all
            .get("targetInfos")
            .and_then(|v| serde_json::from_value(v.clone()).ok())?;
        Some(live_pages(ours, &infos))
    }

    /// The page's URL and title as Chromium has them now
    /// (`Target.getTargetInfo` on the browser session: answered by the
    /// browser process, also while a dialog blocks the page). `None` when
    /// not connected, no page is attached, or no answer came `within`.
    /// Never waits on the event loop. [`Supervisor::snapshot`]'s `url` and
    /// `title` are the last ones events told (the title is refreshed after
    /// each load; Chromium sends no event when a script changes it).
    pub async fn live_page(&self, within: Duration) -> Option<LivePage> {
        let conn = self.connection()?;
        let snap = self.snapshot();
        let target_id = snap.frame_tree.top.as_ref()?.frame_id.clone();
        let held = snap
            .pending_dialogs
            .iter()
            .any(|d| d.target_id.as_deref() == Some(target_id.as_str()));
        let info = conn
            .send(
                None,
                "Target.getTargetInfo",
                json!({ "targetId": target_id }),
                within,
            )
            .await
            .ok()?;
        let field = |k: &str| {
            info.pointer(&format!("/targetInfo/{k}"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Some(LivePage {
            target_id,
            url: live_or_known(&field("url")?, &snap.url, held).to_owned(),
            title: field("title").unwrap_or_default(),
        })
    }

    /// Navigates the page (`Page.navigate`) and waits for its document's
    /// load (`Page.lifecycleEvent{name:"load"}` with the navigation's
    /// `loaderId`, or the page found loaded when asked), at most `timeout`.
    /// Returns promptly with the pending dialogs when a new one opens first
    /// (during load, or a `beforeunload` of the page being left); dialogs
    /// already pending when it starts do not count — this navigation
    /// releases them. A navigation error (`errorText`) is a
    /// [`CommandError::Protocol`] with code 0. A page that stops answering
    /// ([`Supervisor::page_is_busy`], asked every [`BUSY_PROBE_EVERY`] and
    /// at the deadline) holds the navigation for good: the wait ends with
    /// [`NavigateOutcome::Busy`] (the navigation, not the page, goes on).
    pub async fn navigate(
        &self,
        url: &str,
        timeout: Duration,
    ) -> Result<NavigateOutcome, CdpCallError> {
        let until_busy = async {
            loop {
                tokio::time::sleep(BUSY_PROBE_EVERY).await;
                if self.page_is_busy().await {
                    return;
                }
            }
        };
        tokio::select! {
            outcome = self.navigate_and_load(url, timeout) => match outcome? {
                NavigateOutcome::LoadTimeout if self.page_is_busy().await => {
                    Ok(NavigateOutcome::Busy)
                }
                outcome => Ok(outcome),
            },
            () = until_busy => Ok(NavigateOutcome::Busy),
        }
    }

    /// [`Supervisor::navigate`] without the busy page's watch.
    async fn navigate_and_load(
        &self,
        url: &str,
        timeout: Duration,
    ) -> Result<NavigateOutcome, CdpCallError> {
        let deadline = crate::cdp::connection::deadline_after(timeout);
        let current: Option<String> = self
            .snapshot()
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.clone());
        let released = stuck_beforeunload(&self.snapshot(), current.as_deref());
        if released && !self.release_unanswerable(&current, deadline).await? {
            return Ok(NavigateOutcome::DialogPending(
                self.snapshot().pending_dialogs.clone(),
            ));
        }
        let snap = self.snapshot();
        if blocks_navigation(&snap, current.as_deref()) {
            return Ok(NavigateOutcome::DialogPending(snap.pending_dialogs.clone()));
        }
        // A navigation is how a crashed tab is reloaded.
        let (_, session) = self.route(None, None, true).await?;
        // Before sending: a dialog it opens (a beforeunload, an alert while
        // loading, an HTTP challenge) is new to both races below, however
        // soon it shows. Chromium does not answer `Page.navigate` while a
        // challenge of its document waits.
        let mut before = self.dialogs_before();
        before.start = before.start.loading();
        let downloads_before: Vec<String> = snap.downloads.iter().map(|d| d.id.clone()).collect();
        let v = match self
            .send_navigate(&session, url, timeout, deadline, &before, released)
            .await?
        {
            Ok(v) => v,
            Err(outcome) => return Ok(outcome),
        };
        if let Some(err) = v
            .get("errorText")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty())
        {
            if err == "net::ERR_ABORTED"
                && let Some(name) = self.download_of(url, &downloads_before, deadline).await
            {
                return Ok(NavigateOutcome::Download(name));
            }
            return Err(CdpCallError::Command(CommandError::Protocol {
                method: "Page.navigate".into(),
                code: 0,
                message: format!(
                    "navigation to {} failed: {err}",
                    crate::supervisor::wording::cut(url)
                ),
                data: None,
            }));
        }
        // A same-document navigation has no load event.
        let Some(loader) = v.get("loaderId").and_then(Value::as_str).map(str::to_owned) else {
            return Ok(NavigateOutcome::Loaded);
        };
        tracing::debug!(%loader, url = %redact_url(url), "Page.navigate committed a navigation; waiting for its load");
        let load = self.wait_for_load(&session, &loader);
        Ok(
            match tokio::time::timeout_at(deadline, self.race_dialogs_since(before, load, false))
                .await
            {
                Err(_) => NavigateOutcome::LoadTimeout,
                Ok(Err(d)) => NavigateOutcome::DialogPending(d),
                Ok(Ok(())) => NavigateOutcome::Loaded,
            },
        )
    }

    /// The `suggested_filename` of the download a navigation to `url`
    /// became (one not in `before`, of that URL), once the snapshot lists
    /// it: Chromium ends such a navigation with `net::ERR_ABORTED`, around
    /// when its download begins (`Browser.downloadWillBegin`). `None` when
    /// none shows within [`DOWNLOAD_BEGIN_WAIT`] (or by `deadline`): the
    /// navigation was aborted for another reason.
    async fn download_of(
        &self,
        url: &str,
        before: &[String],
        deadline: tokio::time::Instant,
    ) -> Option<String> {
        let mut snaps = self.subscribe();
        let until = deadline.min(tokio::time::Instant::now() + DOWNLOAD_BEGIN_WAIT);
        let found = async {
            loop {
                let name = snaps
                    .borrow_and_update()
                    .downloads
                    .iter()
                    .find(|d| d.url == url && !before.contains(&d.id))
                    .map(|d| d.suggested_filename.clone());
                if name.is_some() || snaps.changed().await.is_err() {
                    return name;
                }
            }
        };
        tokio::time::timeout_at(until, found).await.ok().flatten()
    }

    /// Whether the current tab's page answered none of two trivial
    /// `Runtime.evaluate`s in a row, [`PAGE_ANSWER_WAIT`] each. A page whose
    /// script never yields (a busy loop) answers nothing: Chromium then
    /// neither leaves nor loads it. Two, because a heavy page's script may
    /// hold its thread for a while as it loads.
    pub async fn page_is_busy(&self) -> bool {
        !self.page_answers(PAGE_ANSWER_WAIT).await && !self.page_answers(PAGE_ANSWER_WAIT).await
    }

    /// Whether the current tab's page answers a trivial `Runtime.evaluate`
    /// within `within`.
    async fn page_answers(&self, within: Duration) -> bool {
        let Ok((_, session)) = self.route(None, None, false).await else {
            return true; // no page to ask (crashed, closed): not a busy one
        };
        let probe = self.send_agent(
            Target::Session(session),
            "Runtime.evaluate",
            json!({"expression": "0"}),
            within,
        );
        !matches!(
            probe.await,
            Err(AgentCallError::Command(CommandError::Timeout { .. }))
        )
    }

    /// Has the core release a beforeunload Chromium will not answer
    /// ([`stuck_beforeunload`]): it navigates an OOPIF, or closes the tab
    /// when there is none. Then waits, until `deadline`, for the page to be
    /// free with a tab current again, which `navigate` then navigates.
    /// `false`: still held at the deadline.
    async fn release_unanswerable(
        &self,
        current: &Option<String>,
        deadline: tokio::time::Instant,
    ) -> Result<bool, CdpCallError> {
        let (tx, rx) = oneshot::channel();
        self.request(Request::ReleaseUnanswerable { reply: tx })?;
        let _ = rx.await;
        let mut snaps = self.subscribe();
        let no_tab = |s: &Snapshot| !s.tabs.iter().any(|t| t.current);
        let released = async {
            loop {
                let free = {
                    let s = snaps.borrow_and_update();
                    !stuck_beforeunload(&s, current.as_deref()) && !no_tab(&s)
                };
                if free || snaps.changed().await.is_err() {
                    return;
                }
            }
        };
        Ok(tokio::time::timeout_at(deadline, released).await.is_ok())
    }

    /// Sends `Page.navigate` on `session`, raced against new dialogs
    /// (`before`), and returns its reply; `Ok(Err(outcome))` when the
    /// deadline or a dialog ends the navigation first. Right after a
    /// release (`released`), the navigation the beforeunload held is
    /// cancelled and can take ours with it (net::ERR_ABORTED, seen on
    /// Chromium 156): then it is sent once more.
    async fn send_navigate(
        &self,
        session: &SessionId,
        url: &str,
        timeout: Duration,
        deadline: tokio::time::Instant,
        before: &super::calls::DialogsBefore,
        released: bool,
    ) -> Result<Result<Value, NavigateOutcome>, CdpCallError> {
        let mut tries = if released { 2 } else { 1 };
        loop {
            tries -= 1;
            let reply = self.send_agent(
                Target::Session(session.clone()),
                "Page.navigate",
                json!({"url": url}),
                timeout,
            );
            let sent = self.race_dialogs_since(before.clone(), reply, false);
            let v = match tokio::time::timeout_at(deadline, sent).await {
                // Its own deadline is the navigation's: no reply by then is
                // a navigation that did not finish (a page whose script
                // never yields holds it), not a failed command.
                Err(_) | Ok(Ok(Err(AgentCallError::Command(CommandError::Timeout { .. })))) => {
                    return Ok(Err(NavigateOutcome::LoadTimeout));
                }
                Ok(Err(d)) => return Ok(Err(NavigateOutcome::DialogPending(d))),
                Ok(Ok(r)) => r?,
            };
            let aborted = v.get("errorText").and_then(Value::as_str) == Some("net::ERR_ABORTED");
            if !(aborted && tries > 0) {
                return Ok(Ok(v));
            }
        }
    }

    /// Returns once the document of `loader` in `session` has loaded, as
    /// the core finds it ([`crate::supervisor::state::loads`]). Never
    /// returns otherwise: the caller bounds it (and dropping this future
    /// ends the core's wait).
    async fn wait_for_load(&self, session: &SessionId, loader: &str) {
        let (tx, rx) = oneshot::channel();
        let asked = self.request(Request::AwaitLoad {
            session: session.clone(),
            loader: loader.to_owned(),
            reply: tx,
        });
        if asked.is_err() || rx.await.is_err() {
            // The supervisor ended: nothing will load.
            std::future::pending::<()>().await;
        }
    }
}

/// How long [`Supervisor::page_is_busy`] waits for each answer.
pub const PAGE_ANSWER_WAIT: Duration = Duration::from_secs(3);

/// How often [`Supervisor::navigate`] asks whether the page answers while
/// the navigation has not loaded: a script may run this long and still be a
/// page that yields.
pub const BUSY_PROBE_EVERY: Duration = Duration::from_secs(8);

/// How long a navigation Chromium aborted waits for the download it may
/// have become to show in the snapshot.
pub const DOWNLOAD_BEGIN_WAIT: Duration = Duration::from_secs(2);

/// Each of `ours` (target id, URL as last known) that Chromium lists in
/// `infos`, with its URL and title there ([`Supervisor::live_tabs`]).
/// A supervised tab as the last snapshot knows it, for [`live_pages`].
pub(super) struct Known {
    pub(super) target_id: String,
    /// The URL of the document the events told (its commit).
    pub(super) url: String,
    /// A dialog holds the tab (see [`live_or_known`]).
    pub(super) held: bool,
}

pub(super) fn live_pages(ours: Vec<Known>, infos: &[TargetInfo]) -> Vec<LivePage> {
    ours.into_iter()
        .filter_map(|k| {
            let t = infos.iter().find(|t| t.target_id.0 == k.target_id)?;
            Some(LivePage {
                url: live_or_known(&t.url, &k.url, k.held).to_owned(),
                title: t.title.clone(),
                target_id: k.target_id,
            })
        })
        .collect()
}

/// The URL Chromium reports now, or the last known one (the document's
/// own) while it reports none — a tab between two documents can answer
/// `""` (seen on a page navigating every 20 ms: 3 snapshots in 60 said
/// `url: ""`) — or while a dialog holds the tab (`held`): Chromium reports
/// a navigation's URL from its start, and one a `beforeunload` holds has
/// not left the document the page, its title and its dialog are still on.
pub(super) fn live_or_known<'a>(live: &'a str, known: &'a str, held: bool) -> &'a str {
    if live.is_empty() || (held && !known.is_empty()) {
        known
    } else {
        live
    }
}
