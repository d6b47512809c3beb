//! Connecting and attaching: the start of a supervisor, the page it picks,
//! and the endpoint checks a reconnect repeats.

use super::connect::{Want, connect_and_pick};
use super::run::Driver;
use super::run::spawn_owned;
use super::*;

impl Supervisor {
    /// Starts a supervisor: attaches under the attach deadline
    /// ([`connect_and_pick`]), builds the driver around the core
    /// ([`new_driver`]), spawns its task, and waits — within what is left of
    /// the deadline — for the tab's frame tree before handing out the handle.
    ///
    /// `launched`: `cdp_url` is of a browser this process launched (its
    /// own `local`, or the shared one), never a user's input.
    pub(super) async fn start_inner(
        cdp_url: &str,
        opts: SupervisorOptions,
        local: Option<LocalChromium>,
        launched: bool,
    ) -> Result<Supervisor, StartError> {
        let started = Instant::now();
        let shown_url = redact_url(cdp_url);
        let policy = opts.policy;
        let command_timeout = opts.command_timeout;
        let deadline = opts.attach_timeout;
        let want = Want {
            target_id: opts.target_id.as_deref(),
            ours: &[],
            again: false,
            launched,
        };
        let attached =
            tokio::time::timeout(deadline, connect_and_pick(cdp_url, &opts, want, &shown_url))
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

/// The ends of the driver's channels that the [`Supervisor`] handle keeps
/// (and the frame tree's, which the start waits on).
struct HandleEnds {
    requests: Arc<Inbox>,
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
    state.continue_dialog_numbers(opts.first_dialog_number);
    state.set_browser_context(context.clone());
    state.attach_page(
        target.target_id,
        session,
        &target.url,
        &target.title,
        Now::system(),
    );
    let (snap_tx, snap_rx) = watch::channel(Arc::new(state.snapshot()));
    let inbox = Arc::new(Inbox::default());
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
        requests: InboxRx(inbox.clone()),
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
        requests: inbox,
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
