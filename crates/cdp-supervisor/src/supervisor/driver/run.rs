//! The loop: one tokio task per supervisor that owns the connection and the
//! core, feeds it events, replies and time, and sends what it asks for.

use super::connect::{Want, connect_and_pick};
use super::*;

/// Renames a completed download from Chromium's guid name (`from`) to
/// `name` in the same directory, or `name (2)`, `name (3)`, … when taken:
/// a hard link then an unlink, so an existing file is never replaced.
/// Returns the new path, or why it could not (the file stays at `from`).
pub(super) fn save_download(from: &str, name: &str) -> Result<String, String> {
    let from = Path::new(from);
    let dir = from.parent().ok_or("no directory")?;
    let (stem, ext) = state::downloads::split_extension(name);
    for n in 1..=1000 {
        let candidate = if n == 1 {
            dir.join(name)
        } else {
            dir.join(format!("{stem} ({n}){ext}"))
        };
        match std::fs::hard_link(from, &candidate) {
            Ok(()) => {
                std::fs::remove_file(from).map_err(|e| e.to_string())?;
                return Ok(candidate.to_string_lossy().into_owned());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!("1000 files named like {name} already exist"))
}

/// A command sent and not replied to yet (see [`super::state::Command`]).
pub(super) struct Inflight {
    pub(super) target: Target,
    pub(super) purpose: Purpose,
    pub(super) method: String,
    pub(super) tab: u32,
}

pub(super) struct Driver {
    /// The temporary download directory, removed when the driver ends.
    pub(super) _downloads_dir: Option<tempfile::TempDir>,
    /// Mirrors `conn` for [`Supervisor::live_page`].
    pub(super) live: LiveConnection,
    /// Where screencast frames go while the live view casts.
    pub(super) screencast: ScreencastTap,
    /// What happened, by kind ([`Driver::announce`]).
    pub(super) happened: Arc<EventLog>,
    pub(super) state: Tabs,
    /// Boxed, as `local` is: read rarely, and every idle supervisor's task
    /// would hold them inline (0.5 KiB).
    pub(super) opts: Box<SupervisorOptions>,
    pub(super) ws_url: String,
    pub(super) conn: Option<Connection>,
    pub(super) events: Option<EventStream>,
    /// Commands sent with `send_in_order`, by request id: their replies
    /// come on the event stream, in wire order with the events.
    /// Commands sent and not replied to: where, why, the method, the tab.
    pub(super) inflight: HashMap<u64, Inflight>,
    pub(super) tickets: HashMap<u64, oneshot::Sender<Result<ClosedDialog, DialogError>>>,
    /// The agent's commands (`Supervisor::send_agent`) by call number.
    pub(super) calls: HashMap<u64, oneshot::Sender<Result<Value, ReplyError>>>,
    /// Callers waiting for a document's load ([`Tabs::await_load`]), by load id.
    pub(super) loads: HashMap<u64, oneshot::Sender<()>>,
    pub(super) next_ticket: u64,
    pub(super) snapshot: watch::Sender<Arc<Snapshot>>,
    pub(super) notices: Arc<NoticeHub>,
    pub(super) requests: InboxRx,
    /// The connection's new status, announced after the publish that shows
    /// it: whoever the notice wakes reads a snapshot that already says it.
    pub(super) connection_owed: Option<ConnectionStatus>,
    /// getFrameTree / setAutoAttach commands not yet answered.
    pub(super) tree_pending: usize,
    pub(super) tree_done: Option<oneshot::Sender<()>>,
    /// Callers of [`Supervisor::caught_up`] waiting for the stream to reach their mark.
    pub(super) catching_up: Vec<(StreamMark, oneshot::Sender<()>)>,
    pub(super) reconnect: Option<Reconnect>,
    /// Attaching to another page after ours closed (same connection).
    pub(super) failures: u32,
    pub(super) shown_url: String,
    /// A Chromium we launched: dropped (killed) with the driver.
    pub(super) local: Option<Box<LocalChromium>>,
    /// The session id of the event being handled: one buffer for every
    /// event, since the core only borrows it (a flood allocates none).
    pub(super) event_session: SessionId,
    /// The task's browser context (`isolation: context`), shared with the handle.
    pub(super) browser_context: super::BrowserContext,
    /// Reconnects that succeeded (the snapshot's `reconnects`).
    pub(super) reconnects: u64,
}

pub(super) async fn next_event(events: &mut Option<EventStream>) -> Option<Incoming> {
    match events {
        Some(e) => e.recv().await,
        None => std::future::pending().await,
    }
}

pub(super) async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

/// Awaits the future in `slot`, or never when there is none.
pub(super) async fn poll_slot<T>(slot: &mut Option<BoxFuture<T>>) -> T {
    match slot {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

impl Driver {
    /// Records `notice` in the event log (what `browser_wait` and the
    /// snapshot resource watch) and sends it to live watchers.
    pub(super) fn announce(&self, notice: Notice) {
        if let Notice::DialogClosed { dialog, cause } = &notice {
            tracing::debug!(
                id = %dialog.dialog.id,
                closed_by = ?dialog.closed_by,
                ?cause,
                "dialog closed"
            );
        }
        let top = self.state.current_target().map(|t| t.0.as_str());
        if let Some(kind) = EventKind::of(&notice, top) {
            self.happened.record(kind);
        }
        self.notices.send(notice);
    }

    pub(super) fn set_conn(&mut self, conn: Option<Connection>) {
        *self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = conn.clone();
        self.conn = conn;
    }

    /// The loop: until cancelled or given up, waits for the next input —
    /// a request, a timer, a burst of events, a reconnect's outcome — hands
    /// it to the core, then flushes what the core asked for. On the way out
    /// ([`Driver::wind_down`]) everyone still waiting gets an answer.
    pub(super) async fn run(mut self, cancel: CancellationToken) {
        loop {
            let timeout = self.next_deadline();
            // Requests and timers before events: a flood of events must not
            // starve an answer or a watchdog (bug class 16). Each turn takes
            // at most EVENT_BURST events, then looks at the rest again.
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                req = self.requests.recv() => self.on_request(req),
                // The Chromium we launched is dead: its endpoint will never
                // come back, so there is nothing to wait for.
                _ = tokio::time::sleep(LOCAL_EXIT_CHECK), if self.reconnect.is_some() && self.local.is_some() => {
                    if self.local_exited() {
                        break;
                    }
                }
                _ = sleep_until(timeout) => {
                    self.sync_watched();
                    self.forget_abandoned_loads();
                    self.state.handle_timeout(Now::system());
                }
                ev = next_event(&mut self.events) => self.on_burst(ev),
                r = poll_slot(&mut self.reconnect) => {
                    if !self.on_reconnected(r) {
                        break;
                    }
                }
            }
            self.flush();
            self.release_caught_up();
        }
        self.wind_down().await;
    }

    /// When the core's next timer fires. Without a connection nothing can
    /// be answered: deadlines keep their time and fire as soon as we are back.
    fn next_deadline(&self) -> Option<Instant> {
        if self.conn.is_some() {
            self.state.poll_timeout()
        } else {
            None
        }
    }

    /// Whether the Chromium we launched has exited (while reconnecting to
    /// it): then its endpoint will never come back, and the loop gives up.
    fn local_exited(&mut self) -> bool {
        if !self.local.as_mut().is_some_and(|l| l.has_exited()) {
            return false;
        }
        tracing::warn!(endpoint = %self.shown_url, "giving up: the Chromium we launched has exited");
        self.connection_owed = Some(ConnectionStatus::Closed);
        true
    }

    /// Handles `first` and then every message the stream already holds, up
    /// to [`EVENT_BURST`], so that a burst is published once.
    fn on_burst(&mut self, first: Option<Incoming>) {
        let mut next = first;
        // One clock read per burst (a burst takes well under a
        // millisecond); drain it before publishing once.
        let now = Now::system();
        for handled in 1..=EVENT_BURST {
            if !self.on_incoming(next, now) || handled == EVENT_BURST {
                // (Taking one more here would lose it: the
                // rest waits on the stream for the next turn.)
                break;
            }
            match self.events.as_mut().map(|e| e.try_recv()) {
                Some(Ok(inc)) => next = Some(inc),
                _ => break,
            }
        }
    }

    /// Takes a reconnect's outcome: back on the new connection with the
    /// tab re-attached, or one more failure — another try after its
    /// backoff, or `false` (give up) after `max_reconnect_failures`.
    fn on_reconnected(&mut self, r: Result<Attached, StartError>) -> bool {
        self.reconnect = None;
        match r {
            Ok((ws, conn, events, target, session, context)) => {
                tracing::info!(endpoint = %self.shown_url, "reconnected and re-attached");
                self.reconnects += 1;
                self.ws_url = ws;
                self.failures = 0;
                self.set_conn(Some(conn));
                self.events = Some(events);
                self.state.set_browser_context(context.clone());
                *self
                    .browser_context
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = context;
                self.state.attach_page(
                    target.target_id,
                    session,
                    &target.url,
                    &target.title,
                    Now::system(),
                );
                self.connection_owed = Some(ConnectionStatus::Connected);
                true
            }
            Err(e) => {
                self.failures += 1;
                if self.failures >= self.opts.max_reconnect_failures {
                    tracing::warn!(
                        endpoint = %self.shown_url,
                        failures = self.failures,
                        "giving up: the CDP endpoint did not come back ({e})"
                    );
                    self.connection_owed = Some(ConnectionStatus::Closed);
                    return false;
                }
                self.schedule_reconnect();
                true
            }
        }
    }

    /// The end of the loop: the last snapshot says closed, and every call
    /// and dialog answer still waiting hears that the supervisor stopped.
    async fn wind_down(&mut self) {
        self.set_conn(None);
        self.events = None;
        self.publish(ConnectionStatus::Closed);
        if let Some(status) = self.connection_owed.take() {
            self.announce(connection_notice(status));
        }
        for (_, tx) in self.calls.drain() {
            let _ = tx.send(Err(ReplyError::Lost {
                reason: "the supervisor stopped".into(),
            }));
        }
        for (_, tx) in self.tickets.drain() {
            let _ = tx.send(Err(DialogError::Cdp {
                id: String::new(),
                error: "the supervisor stopped".into(),
            }));
        }
        // A Chromium we launched goes with us, its user-data-dir too, before
        // the task ends: `stop()` (and a server exiting after it) waits for
        // it, so nothing is left behind in the temp directory.
        // Boxed: inline, its 1.1 KiB would be part of every idle driver's task.
        if let Some(local) = self.local.take() {
            Box::pin(local.shutdown()).await;
        }
        // A shared browser: this task's hold given back, and the browser
        // closed (and waited for) when it was the last. (A reconnect under
        // way holds a copy of the hold: gone with it.)
        self.reconnect = None;
        if let Some(lease) = self
            .opts
            .context
            .as_mut()
            .and_then(|c| c.browser.take())
            .and_then(|l| Arc::try_unwrap(l).ok())
        {
            lease.release().await;
        }
    }

    /// Handles one message from the stream; `false` once the connection is gone.
    pub(super) fn on_incoming(&mut self, incoming: Option<Incoming>, now: Now) -> bool {
        self.sync_watched();
        match incoming {
            Some(Incoming::Event(event)) => {
                let mut buf = std::mem::replace(&mut self.event_session, SessionId(String::new()));
                let session = event.session_id().map(|s| {
                    buf.0.clear();
                    buf.0.push_str(s);
                    &buf
                });
                self.on_event(session, &event, now);
                self.event_session = buf;
            }
            Some(Incoming::Reply { id, result }) => {
                let cmd = self.inflight.remove(&id);
                crate::cdp::connection::give_back(&mut self.inflight);
                if let Some(cmd) = cmd {
                    let agent = matches!(cmd.purpose, Purpose::Agent { .. });
                    self.on_reply(cmd, result.map_err(reply_error));
                    if agent {
                        // The agent hears its reply before any later event of
                        // the burst is published (a dialog that opened just
                        // after it must not pass for one that interrupted it).
                        self.flush();
                    }
                }
            }
            Some(Incoming::Closed { reason }) => {
                self.on_disconnect(&reason);
                return false;
            }
            None => {
                self.on_disconnect("the event stream ended");
                return false;
            }
        }
        true
    }

    pub(super) fn on_event(&mut self, session: Option<&SessionId>, raw: &RawEvent, now: Now) {
        let (method, params) = (raw.method(), raw.params());
        if method == "Page.screencastFrame" {
            // The live view's, not the core's: a picture, never logged.
            self.on_screencast_frame(session, params);
            return;
        }
        if method == "Page.javascriptDialogClosed" {
            // What a prompt was answered with may be a person's: not logged.
            if tracing::enabled!(tracing::Level::DEBUG) {
                tracing::debug!(%method, session = ?session, params = %without_user_input(params), "event");
            }
        } else if method.starts_with("Fetch.") || self.state.person_in_control() {
            // A paused request's body may be the dialog bridge's, secret
            // and all; a challenged one's headers may carry credentials;
            // while a person has the browser, what they type may ride in
            // any event (a URL's query, a title): methods only.
            if DEBUG_EVENTS.contains(&method) {
                tracing::debug!(%method, session = ?session, "event");
            } else {
                tracing::trace!(%method, session = ?session, "event");
            }
        } else if tracing::enabled!(tracing::Level::DEBUG) && DEBUG_EVENTS.contains(&method) {
            // What decides who closed a dialog, at a level a long run can keep.
            tracing::debug!(%method, session = ?session, %params, "event");
        } else {
            tracing::trace!(%method, session = ?session, %params, "event");
        }
        if self.opts.dialog_bridge
            && method == "Page.javascriptDialogOpening"
            && !params.contains("\"beforeunload\"")
        {
            // The bridge replaces alert/confirm/prompt: a native one means
            // its request failed there (an opaque origin, no interception).
            tracing::warn!(
                endpoint = %self.shown_url,
                "a native dialog opened although the dialog bridge is on: the bridge did not reach us from that frame (opaque origin, or its request failed); a proxy that answers dialogs itself may close it first"
            );
        }
        let event = raw.parse();
        if let Event::Unparsed { method, error } = &event {
            tracing::debug!(%method, %error, "event params did not parse");
        }
        let detached = match &event {
            Event::DetachedFromTarget(d) => Some(d.session_id.clone()),
            _ => None,
        };
        self.state.on_event(session, event, now);
        if let Some(gone) = detached {
            self.session_gone(&gone);
        }
    }

    /// A session detached (its frame or tab went): Chromium answers none of
    /// the commands still in flight on it, so each gets its one reply now —
    /// "lost" — instead of at its deadline (an interrupted call on a removed
    /// iframe would otherwise wait `dialog_timeout_s` for its outcome).
    pub(super) fn session_gone(&mut self, gone: &SessionId) {
        let reason = format!("its session {gone} detached (its frame or tab is gone)");
        self.fail_inflight(std::slice::from_ref(gone), &reason);
    }

    /// Every command in flight on `sessions` gets its one reply now: "lost",
    /// for `reason` (Chromium will never answer it).
    pub(super) fn fail_inflight(&mut self, sessions: &[SessionId], reason: &str) {
        let mut lost: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, cmd)| matches!(&cmd.target, Target::Session(s) if sessions.contains(s)))
            .map(|(id, _)| *id)
            .collect();
        lost.sort_unstable();
        for id in lost {
            if let Some(cmd) = self.inflight.remove(&id) {
                let e = ReplyError::Lost {
                    reason: reason.to_owned(),
                };
                self.on_reply(cmd, Err(e));
            }
        }
    }

    pub(super) fn on_reply(&mut self, cmd: Inflight, result: Result<Value, ReplyError>) {
        if let Err(e) = &result {
            tracing::debug!(method = %cmd.method, "command failed: {e}");
        }
        if counts_for_tree(&cmd.method, &cmd.purpose) {
            self.tree_pending = self.tree_pending.saturating_sub(1);
        }
        self.state
            .on_reply(&cmd.target, cmd.tab, cmd.purpose, result, Now::system());
    }

    /// Tells the state whether a watcher listens, before each input: read
    /// then, not once per turn, a watcher that subscribed while the loop
    /// waited sees what came after.
    pub(super) fn sync_watched(&mut self) {
        self.state.set_watched(self.notices.is_open());
    }

    pub(super) fn on_request(&mut self, req: Request) {
        self.sync_watched();
        match req {
            Request::PersonInControl { on } => {
                self.state.set_person_in_control(on, Now::system());
            }
            Request::ReleaseUnanswerable { reply } => {
                let _ = reply.send(self.state.release_unanswerable());
            }
            Request::CaughtUp { mark, reply } => {
                self.catching_up.push((mark, reply));
                self.release_caught_up();
            }
            Request::AwaitLoad {
                session,
                loader,
                reply,
            } => {
                let load = self.state.await_load(session, loader, Now::system());
                self.loads.insert(load, reply);
            }
            Request::Answer { req, by, reply } => self.on_answer(req, by, reply),
            Request::SelectTab { target_id, reply } => {
                let r = self.state.select(&target_id);
                // The caller reads the snapshot at once, on another thread:
                // it must already name the new current tab.
                self.flush();
                let _ = reply.send(r);
            }
            Request::Route {
                frame_id,
                target_id,
                allow_crashed,
                reply,
            } => {
                let r = self.route(frame_id, target_id.as_deref(), allow_crashed);
                let _ = reply.send(r);
            }
            Request::Agent {
                target,
                method,
                params,
                timeout,
                reply,
            } => {
                let call = self.next_ticket;
                self.next_ticket += 1;
                self.calls.insert(call, reply);
                // Without a connection the flush feeds the core its error at once.
                self.state
                    .send_agent(call, target, &method, params, timeout);
            }
        }
    }

    /// The agent (or a human) answers a dialog: refused at once without a
    /// connection, else handed to the core, whose [`Output::AnswerDone`]
    /// for the ticket replies.
    fn on_answer(
        &mut self,
        req: DialogRequest,
        by: ClosedBy,
        reply: oneshot::Sender<Result<ClosedDialog, DialogError>>,
    ) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        if self.conn.is_none() {
            let _ = reply.send(Err(DialogError::Cdp {
                id: req.dialog_id.unwrap_or_default(),
                error: "the CDP connection dropped; reconnecting".into(),
            }));
            return;
        }
        match self.state.answer_dialog_as(req, ticket, by, Now::system()) {
            Ok(()) => {
                self.tickets.insert(ticket, reply);
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Where a call for `frame_id` (`None`: the page) of tab `target_id`
    /// (`None`: the current tab) goes: the connection, the session, and
    /// the session's tab.
    fn route(
        &self,
        frame_id: Option<String>,
        target_id: Option<&str>,
        allow_crashed: bool,
    ) -> Result<Routed, CdpCallError> {
        let Some(conn) = &self.conn else {
            return Err(CdpCallError::NotConnected(
                "the CDP connection dropped; reconnecting".into(),
            ));
        };
        let session = match frame_id {
            Some(f) => self.state.route_frame(&f, target_id),
            None => self.state.page_session(target_id, allow_crashed),
        };
        session
            .map(|s| {
                let tab = self.state.target_of_session(&s).map(|t| t.0.clone());
                (conn.clone(), s, tab)
            })
            .map_err(CdpCallError::Route)
    }

    /// Answers the [`Supervisor::caught_up`] callers whose mark the stream
    /// has reached (all of them once there is no stream: nothing more of
    /// that connection will come). Called after a publish.
    pub(super) fn release_caught_up(&mut self) {
        let events = self.events.as_ref();
        self.catching_up
            .retain_mut(|(mark, _)| events.is_some_and(|e| !mark.reached_by(e)));
        // (retain_mut drops the released senders: their receivers wake.)
    }

    pub(super) fn on_disconnect(&mut self, reason: &str) {
        if self.conn.is_none() {
            return;
        }
        tracing::warn!(endpoint = %self.shown_url, "CDP connection dropped ({reason}); reconnecting");
        self.set_conn(None);
        self.events = None;
        // The state forgets dead sessions but keeps dialogs and their
        // deadlines; every command still in flight gets its one reply now
        // (the driver contract): their stream is gone with the connection.
        self.state.connection_lost();
        let mut lost: Vec<(u64, Inflight)> = self.inflight.drain().collect();
        lost.sort_by_key(|(id, _)| *id);
        for (_, cmd) in lost {
            let e = ReplyError::Lost {
                reason: reason.to_owned(),
            };
            self.on_reply(cmd, Err(e));
        }
        self.tree_pending = 0;
        self.connection_owed = Some(ConnectionStatus::Reconnecting);
        self.failures = 0;
        self.schedule_reconnect();
    }

    pub(super) fn schedule_reconnect(&mut self) {
        let delay = backoff(self.opts.reconnect_backoff_start, self.failures);
        let url = self.ws_url.clone();
        // The tab we were on, else another we supervised, else the tab in
        // front: a tab that closed meanwhile, or a browser restarted behind
        // the URL (every id new), is no reason to fail.
        let ours = self.state.target_ids_current_first();
        let opts = self.opts.clone();
        self.reconnect = Some(Box::pin(async move {
            tokio::time::sleep(delay).await;
            let shown = redact_url(&url);
            let want = Want {
                target_id: None,
                ours: &ours,
                again: true,
                launched: false,
            };
            tokio::time::timeout(
                opts.attach_timeout,
                connect_and_pick(&url, &opts, want, &shown),
            )
            .await
            .map_err(|_| StartError::Timeout {
                url: shown,
                after: opts.attach_timeout,
            })?
        }));
    }

    /// Performs every output of the state machine and republishes the snapshot.
    pub(super) fn flush(&mut self) {
        // Notices and answers go out after the snapshot is published, so
        // whoever they wake reads a snapshot that already shows them.
        // Sized once: a burst's notices would grow it seven times.
        let mut deliver = Vec::with_capacity(self.state.outputs_waiting());
        while let Some(out) = self.state.poll_output() {
            match out {
                Output::Send(cmd) => self.send_command(*cmd),
                // Before the publish: the snapshot that says completed
                // shows the file under its own name.
                Output::SaveDownload { id, from, name } => {
                    let saved = save_download(&from, &name);
                    self.state.download_saved(&id, saved);
                }
                out @ (Output::Notice(_)
                | Output::AnswerDone { .. }
                | Output::AgentReply { .. }
                | Output::Loaded { .. }) => deliver.push(out),
            }
        }
        let status = if self.conn.is_some() {
            ConnectionStatus::Connected
        } else {
            ConnectionStatus::Reconnecting
        };
        self.publish(status);
        self.end_attach_wait();
        if let Some(status) = self.connection_owed.take() {
            self.announce(connection_notice(status));
        }
        let crashed = self.deliver(deliver);
        // A crashed renderer answers nothing: the calls in flight on its tab
        // end now, not at their deadlines.
        for target_id in &crashed {
            let sessions = self.state.sessions_of(target_id);
            let reason = RouteError::Crashed {
                target_id: target_id.clone(),
            }
            .to_string();
            self.fail_inflight(&sessions, &reason);
        }
        if !crashed.is_empty() {
            self.flush();
        }
    }

    /// Sends a command of the core, in wire order with the events, and
    /// keeps it in flight for its reply. Without a connection it is not
    /// sent: its one reply is "lost" (the driver contract), and the core
    /// decides what to do again.
    fn send_command(&mut self, mut cmd: state::Command) {
        if let Some(context) = self
            .browser_context
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_deref()
        {
            in_context(&cmd.method, &mut cmd.params, context);
        }
        let Some(conn) = &self.conn else {
            let e = ReplyError::Lost {
                reason: "not connected; reconnecting".into(),
            };
            self.state
                .on_reply(&cmd.target, cmd.tab, cmd.purpose, Err(e), Now::system());
            return;
        };
        if counts_for_tree(&cmd.method, &cmd.purpose) {
            self.tree_pending += 1;
        }
        tracing::debug!(method = %cmd.method, target = ?cmd.target, purpose = ?cmd.purpose, "send");
        // An agent's reply is echoed whole into its result: bounded
        // (DESIGN "Security"), and dropped unread when past the bound.
        let max_reply = match cmd.purpose {
            Purpose::Agent { .. } => state::AGENT_REPLY_MAX_BYTES,
            _ => usize::MAX,
        };
        let id = conn.send_in_order_capped(
            cmd.target.session(),
            &cmd.method,
            cmd.params,
            cmd.timeout.unwrap_or(self.opts.command_timeout),
            max_reply,
        );
        self.inflight.insert(
            id,
            Inflight {
                target: cmd.target,
                purpose: cmd.purpose,
                method: cmd.method,
                tab: cmd.tab,
            },
        );
    }

    /// Ends the start's wait for the frame tree once every command it
    /// waits for replied ([`counts_for_tree`]). After the publish, like the
    /// notices: the attach it ends returns to a caller who reads the
    /// snapshot at once, on another thread. A page blocked by a dialog
    /// answers no getFrameTree: attach is done with what the target info
    /// and auto-attach told us.
    fn end_attach_wait(&mut self) {
        if (self.tree_pending == 0 || self.state.page_blocked())
            && let Some(tx) = self.tree_done.take()
        {
            let _ = tx.send(());
        }
    }

    /// Hands out what the core left for after the publish: notices to
    /// watchers, dialog answers and agent replies to their callers. Returns
    /// the tabs a notice said crashed.
    fn deliver(&mut self, outputs: Vec<Output>) -> Vec<String> {
        let mut crashed = Vec::new();
        for out in outputs {
            match out {
                Output::Notice(n) => {
                    if let Notice::TabCrashed { target_id } = &n {
                        crashed.push(target_id.clone());
                    }
                    self.announce(n)
                }
                Output::AnswerDone { ticket, result } => {
                    if let Some(tx) = self.tickets.remove(&ticket) {
                        let _ = tx.send(*result);
                    }
                }
                Output::AgentReply { call, result } => {
                    if let Some(tx) = self.calls.remove(&call) {
                        let _ = tx.send(result);
                    }
                }
                Output::Loaded { load } => {
                    if let Some(tx) = self.loads.remove(&load) {
                        let _ = tx.send(());
                    }
                }
                Output::Send(_) | Output::SaveDownload { .. } => {}
            }
        }
        crashed
    }

    /// The loads whose caller stopped waiting (its deadline, a dialog)
    /// are no longer asked about.
    fn forget_abandoned_loads(&mut self) {
        let gone: Vec<u64> = self
            .loads
            .iter()
            .filter(|(_, tx)| tx.is_closed())
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.loads.remove(&id);
            self.state.cancel_load(id);
        }
    }

    pub(super) fn publish(&mut self, status: ConnectionStatus) {
        let mut snap = self.state.snapshot();
        snap.connection = status;
        snap.reconnects = self.reconnects;
        self.snapshot.send_if_modified(|old| {
            if **old == snap {
                false
            } else {
                *old = Arc::new(snap);
                true
            }
        });
    }
}

/// Spawns the driver's task; `exited` is cancelled however it ends — a
/// panic included, so a dead supervisor never reports itself running (the
/// registry would keep serving it).
///
/// The guard rides in the `map` closure, dropped with the future however
/// it ends. (An `async move { run.await }` wrapper would hold `run` twice —
/// the captured value and the awaited one — and wrapping `driver.run()` in
/// one more block held the driver twice too: 5.3 KiB per supervisor's task
/// instead of 1.4.)
pub(super) fn spawn_owned(
    run: impl Future<Output = ()> + Send + 'static,
    exited: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    use futures_util::FutureExt;
    let guard = exited.drop_guard();
    tokio::spawn(run.map(move |()| drop(guard)))
}

/// The connection's error in the core's terms.
pub(super) fn reply_error(e: CommandError) -> ReplyError {
    match e {
        CommandError::Protocol {
            code,
            message,
            data,
            ..
        } => ReplyError::Protocol {
            code,
            message,
            data,
        },
        CommandError::Timeout { after, .. } => ReplyError::Timeout { after },
        CommandError::TooLarge { bytes, max, .. } => ReplyError::TooLarge { bytes, max },
        CommandError::Disconnected { reason, .. } => ReplyError::Lost { reason },
    }
}

/// The core's reply error as the connection's, for the agent's `method`.
pub(super) fn command_error(method: &str, e: ReplyError) -> CommandError {
    let method = method.to_owned();
    match e {
        ReplyError::Protocol {
            code,
            message,
            data,
        } => CommandError::Protocol {
            method,
            code,
            message,
            data,
        },
        ReplyError::Timeout { after } => CommandError::Timeout { method, after },
        ReplyError::TooLarge { bytes, max } => CommandError::TooLarge { method, bytes, max },
        ReplyError::Lost { reason } => CommandError::Disconnected { method, reason },
    }
}

/// The commands an attach waits for (a blocked page's `Page.enable` ends
/// the wait through `page_blocked` instead): once they replied, the frame
/// tree is complete and the page's events flow.
pub(super) fn counts_for_tree(method: &str, purpose: &Purpose) -> bool {
    matches!(
        method,
        "Page.getFrameTree" | "Target.setAutoAttach" | "Page.enable"
    ) && !matches!(purpose, Purpose::LoadTree { .. })
}

/// A dialog closed event's params with its `userInput` left out (the text
/// a person or the agent answered a prompt with).
fn without_user_input(params: &str) -> String {
    match serde_json::from_str::<Value>(params) {
        Ok(Value::Object(mut o)) => {
            if o.get("userInput").is_some_and(|u| u != "") {
                o.insert("userInput".into(), Value::String("(not logged)".into()));
            }
            Value::Object(o).to_string()
        }
        _ => "(unreadable)".into(),
    }
}

impl Driver {
    /// A screencast frame: to the live view's cast when one listens, else
    /// acknowledged here (Chromium sends the next frame only after the
    /// last one's ack, so a frame nobody takes must not stall the cast).
    fn on_screencast_frame(&mut self, session: Option<&SessionId>, params: &str) {
        let Some(session) = session else { return };
        let Ok(frame) = serde_json::from_str::<ScreencastParams>(params) else {
            return;
        };
        let frame = ScreencastFrame {
            session: session.clone(),
            cast_id: frame.session_id,
            data: frame.data,
            metadata: frame.metadata,
        };
        let rejected = {
            let tap = self
                .screencast
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match tap.as_ref() {
                Some(tx) => tx.try_send(frame).err().map(|e| match e {
                    mpsc::error::TrySendError::Full(f) | mpsc::error::TrySendError::Closed(f) => f,
                }),
                None => Some(frame),
            }
        };
        if let (Some(f), Some(conn)) = (rejected, &self.conn) {
            // Queued as it is called; nobody waits for the reply.
            drop(conn.send(
                Some(&f.session),
                "Page.screencastFrameAck",
                serde_json::json!({"sessionId": f.cast_id}),
                Duration::from_secs(2),
            ));
        }
    }
}

/// `Page.screencastFrame`'s params.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScreencastParams {
    data: String,
    metadata: ScreencastMetadata,
    session_id: i64,
}

/// Events logged at `debug` with their params: the dialog and navigation
/// events that decide a dialog's `closed_by`. The rest are `trace`.
const DEBUG_EVENTS: [&str; 8] = [
    "Page.javascriptDialogOpening",
    "Page.javascriptDialogClosed",
    "Page.frameRequestedNavigation",
    "Page.frameNavigated",
    "Page.frameDetached",
    "Target.detachedFromTarget",
    "Target.targetDestroyed",
    "Inspector.targetCrashed",
];

/// `isolation: context`: the browser-level commands that name a context
/// name the task's own when they name none — a tab opens in it
/// (`Target.createTarget`), downloads go where the task says for its
/// context only (`Browser.setDownloadBehavior`). Pure, so it is tested.
pub(crate) fn in_context(method: &str, params: &mut Value, context: &str) {
    if matches!(
        method,
        "Target.createTarget" | "Browser.setDownloadBehavior"
    ) && let Value::Object(map) = params
    {
        map.entry("browserContextId")
            .or_insert_with(|| Value::String(context.to_owned()));
    }
}

pub(super) fn connection_notice(status: ConnectionStatus) -> Notice {
    Notice::Connection { status }
}

pub(super) fn backoff(start: Duration, failures: u32) -> Duration {
    start
        .saturating_mul(1u32 << failures.min(10))
        .min(RECONNECT_BACKOFF_MAX)
}
