//! Agent calls: answering dialogs, raw CDP commands routed to a tab or an
//! OOPIF, and the race between a call and the dialogs that interrupt it.

use super::run::command_error;
use super::*;
use crate::supervisor::state::calls::{AtDeadline, CallStart, action_settled};

impl Supervisor {
    /// Answers a pending dialog (`Page.handleJavaScriptDialog` on the session
    /// that reported it). Waits for Chromium's reply, at most the command
    /// deadline.
    pub async fn answer_dialog(&self, req: DialogRequest) -> Result<ClosedDialog, DialogError> {
        self.answer_dialog_as(req, ClosedBy::Agent).await
    }

    /// [`Supervisor::answer_dialog`] on behalf of `by` (the agent, or a
    /// human it asked: [`ClosedBy::User`]), which its record's `closed_by` says.
    pub async fn answer_dialog_as(
        &self,
        req: DialogRequest,
        by: ClosedBy,
    ) -> Result<ClosedDialog, DialogError> {
        let (tx, rx) = oneshot::channel();
        let stopped = || DialogError::Cdp {
            id: req.dialog_id.clone().unwrap_or_default(),
            error: "the supervisor has stopped".into(),
        };
        self.request(Request::Answer {
            req: req.clone(),
            by,
            reply: tx,
        })
        .map_err(|_| stopped())?;
        // The answer's command has the configured deadline; its reply (or
        // its error) always comes back, and the second is for the hand-off.
        let wait = self.shared.command_timeout + Duration::from_secs(1);
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(stopped()),
            Err(_) => Err(DialogError::Cdp {
                id: req.dialog_id.unwrap_or_default(),
                error: "no reply from Chromium in time".into(),
            }),
        }
    }

    /// Sends an agent's CDP command through the driver and the core
    /// ([`State::send_agent`]): in wire order with the core's own commands
    /// and events, so the core knows which navigations (and so which closed
    /// dialogs) the agent caused. Resolves with Chromium's result or why
    /// there is none — within `timeout` (plus a second for the hand-off),
    /// also when the supervisor stops or the connection drops.
    pub(crate) fn send_agent(
        &self,
        target: Target,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> impl Future<Output = Result<Value, AgentCallError>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let method = method.to_owned();
        let sent = self.shared.requests.send(Request::Agent {
            target,
            method: method.clone(),
            params,
            timeout,
            reply: tx,
        });
        async move {
            if !sent {
                return Err(AgentCallError::Stopped);
            }
            match tokio::time::timeout(timeout + Duration::from_secs(1), rx).await {
                Ok(Ok(r)) => r.map_err(|e| AgentCallError::Command(command_error(&method, e))),
                Ok(Err(_)) => Err(AgentCallError::Stopped),
                Err(_) => Err(AgentCallError::Command(CommandError::Timeout {
                    method,
                    after: timeout,
                })),
            }
        }
    }

    /// Waits, at most `within`, until the script that a just-answered dialog
    /// of `frame_id` held up has run on: its renderer answers a
    /// `Runtime.evaluate("0")` only once that script's task is over, so what
    /// the script did (a new `document.title`, a queued command) is visible
    /// to the next read. The OOPIF's own session for a dialog in an OOPIF,
    /// else the page's. Gives up early when a new dialog opens (the script
    /// is blocked again) or the call cannot be routed.
    pub async fn settle_after_dialog(
        &self,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        within: Duration,
    ) {
        let routed = match frame_id {
            Some(f) => match self.route(Some(f), target_id, false).await {
                Ok(r) => Ok(r),
                // A same-process frame runs on the page's renderer.
                Err(CdpCallError::Route(RouteError::SameProcess { .. })) => {
                    self.route(None, target_id, false).await
                }
                Err(e) => Err(e),
            },
            None => self.route(None, target_id, false).await,
        };
        let Ok((conn, session)) = routed else { return };
        let before = self.dialogs_before();
        let probe = conn.send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "0"}),
            within,
        );
        let _ = self.race_dialogs_since(before, probe, false).await;
        // The probe's reply came straight to us: what the script did before
        // it (a tab it opened) must be in the snapshot the caller reads next.
        self.caught_up().await;
    }

    /// After an input's reply, in tab `target_id`: Chromium acknowledges
    /// input on one channel and sends the page's events on another, so a
    /// navigation the input scheduled can be announced after that reply
    /// (seen on a loaded machine). A `Runtime.evaluate("0")` on the tab's
    /// page session, sent through the core as an agent call, is answered
    /// only after every event its renderer sent before: a navigation
    /// announced meanwhile is tied to the agent, and so followed by
    /// [`Supervisor::action_settled`]. Skipped while a dialog of the tab is
    /// pending (its renderer answers nothing); gives up when one opens, or
    /// after `within`.
    pub(crate) async fn input_settled(&self, target_id: &str, within: Duration) {
        let pending = self
            .snapshot()
            .tabs
            .iter()
            .any(|t| t.target_id == target_id && t.pending_dialogs > 0);
        if pending {
            return;
        }
        let Ok((_conn, session)) = self.route(None, Some(target_id), false).await else {
            return;
        };
        let before = self.dialogs_before();
        let probe = self.send_agent(
            Target::Session(session),
            "Runtime.evaluate",
            json!({"expression": "0"}),
            within,
        );
        let _ = self.race_dialogs_since(before, probe, false).await;
    }

    /// The number of the last navigation the agent's script or input
    /// asked for in the current tab (0: none yet), with the tab's target
    /// id: what [`Supervisor::action_settled`] compares with after an action.
    pub(crate) fn action_navigation_mark(&self) -> Option<(String, u64)> {
        let snap = self.snapshot();
        let tab = snap.tabs.iter().find(|t| t.current)?;
        let seq = tab.action_navigation.map_or(0, |a| a.seq);
        Some((tab.target_id.clone(), seq))
    }

    /// After an action in tab `target_id` (with [`Supervisor::caught_up`]
    /// first): waits until the navigation it asked for — one numbered past
    /// `after` — has its outcome (a new document, the same one, a download,
    /// nothing: [`crate::supervisor::state::ActionNavigation`]), or the tab
    /// has a pending dialog, crashed or closed; at most `within`. Returns at
    /// once when the action asked for no navigation. Chromium sends
    /// `Page.frameRequestedNavigation` before the reply of the input that
    /// caused it (CDP facts), so no fixed wait is needed to know. Returns
    /// false when `within` passed first.
    pub(crate) async fn action_settled(
        &self,
        target_id: &str,
        after: u64,
        within: Duration,
    ) -> bool {
        let mut snaps = self.subscribe();
        let settled = async {
            while !action_settled(&snaps.borrow_and_update(), target_id, after) {
                if snaps.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(within, settled).await.is_ok()
    }

    /// Returns once the published snapshot shows every event Chromium sent
    /// before a reply the caller just had straight from the connection
    /// ([`Connection::send`], not through the driver): the connection queues
    /// those events before it hands the reply over, and the driver takes a
    /// request only once no event is queued, publishing after each turn.
    pub(crate) async fn caught_up(&self) {
        let Some(conn) = self.connection() else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        let mark = conn.mark();
        if self.request(Request::CaughtUp { mark, reply: tx }).is_ok() {
            let _ = tokio::time::timeout(CAUGHT_UP_MAX, rx).await;
        }
    }

    /// The connection and the session for a call: the frame `frame_id`'s
    /// (in tab `target_id`, else any tab, the current one first), else the
    /// page session of tab `target_id` or the current tab.
    pub(crate) async fn route(
        &self,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        allow_crashed: bool,
    ) -> Result<(Connection, SessionId), CdpCallError> {
        self.route_to_tab(frame_id, target_id, allow_crashed)
            .await
            .map(|(conn, session, _)| (conn, session))
    }

    /// [`Supervisor::route`], with the target id of the tab the session
    /// belongs to (the tab whose dialogs can block the call).
    pub(super) async fn route_to_tab(
        &self,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        allow_crashed: bool,
    ) -> Result<Routed, CdpCallError> {
        let (tx, rx) = oneshot::channel();
        self.request(Request::Route {
            frame_id: frame_id.map(str::to_owned),
            target_id: target_id.map(str::to_owned),
            allow_crashed,
            reply: tx,
        })?;
        rx.await
            .map_err(|_| CdpCallError::NotConnected("the supervisor has stopped".into()))?
    }

    /// The current tab's CDP session id; `None` while not connected. For
    /// embedders that address sessions themselves (the Python module's
    /// `hermes` layer: its callers read `_page_session_id`).
    pub async fn page_session_id(&self) -> Option<String> {
        self.route(None, None, true).await.ok().map(|(_, s)| s.0)
    }

    /// Sends one raw CDP command on `session_id` (`None`: the browser
    /// itself) through the driver, in wire order with the events: Chromium's
    /// result or its error. No routing by frame or tab and no dialog
    /// interruption (a blocked page makes it wait until `timeout`): the
    /// session-addressed call of the spec's `_cdp`, for embedders.
    ///
    /// # Errors
    /// A CDP error, the deadline, the connection dropping, or the
    /// supervisor stopped.
    pub async fn cdp_on_session(
        &self,
        session_id: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpCallError> {
        let target = match session_id {
            Some(s) => Target::Session(SessionId::from(s)),
            None => Target::Browser,
        };
        self.send_agent(target, method, params, timeout)
            .await
            .map_err(CdpCallError::from)
    }

    /// Sends a raw CDP command over the supervisor's own connection: to the
    /// page session of the current tab (or of the supervised tab
    /// `target_id`), or with `frame_id` of an OOPIF to its child session.
    ///
    /// Returns [`CallOutcome::Interrupted`] — within `timeout`, and at most
    /// [`crate::supervisor::state::calls::BLOCKED_CALL_GRACE`] after the dialog opened — when a dialog blocks
    /// the command: one opens during the call, or one already blocked the
    /// page and no reply came within the grace. The command is then still
    /// queued in the page: the supervisor keeps waiting for its reply (at
    /// most `dialog_timeout` + `timeout`) and records the outcome once
    /// ([`Supervisor::take_completed_calls`]).
    ///
    /// # Errors
    /// [`CdpCallError::Route`] for a `frame_id` that cannot take the call;
    /// [`CdpCallError::Command`] for a CDP error, the `timeout` passing
    /// with no dialog in the way, or the connection dropping.
    pub async fn cdp(
        &self,
        method: &str,
        params: Value,
        frame_id: Option<&str>,
        target_id: Option<&str>,
        timeout: Duration,
    ) -> Result<CallOutcome, CdpCallError> {
        let (_conn, session, tab) = self.route_to_tab(frame_id, target_id, false).await?;
        // The command's own deadline outlives the call: an interrupted
        // command runs once its dialog is answered, and its outcome is kept.
        let keep = timeout.saturating_add(self.shared.dialog_timeout);
        // Through the driver and the core: in wire order with the events, so
        // the core knows which navigations (and closed dialogs) it causes.
        let before = self.dialogs_before_on(tab.as_deref());
        let reply = self.send_agent(Target::Session(session), method, params, keep);
        self.interruptible_since(
            before,
            method,
            async move { reply.await.map_err(CdpCallError::from) },
            timeout,
        )
        .await
    }

    /// Runs `work` — an agent's call that a dialog can block (a CDP
    /// command, or an action's dispatch ending in the action's result) — as
    /// a call a dialog interrupts (DESIGN "Calls a dialog interrupts"):
    /// its outcome within `timeout`, or [`CallOutcome::Interrupted`] when a
    /// dialog blocks it. An interrupted `work` runs on (it is queued in the
    /// page) and its outcome is recorded once under `method`; `work`'s own
    /// commands carry the deadline that bounds that wait.
    ///
    /// # Errors
    /// `work`'s own error, or [`CommandError::Timeout`] when `timeout`
    /// passes with no dialog in the way.
    pub(crate) async fn interruptible<F>(
        &self,
        method: &str,
        work: F,
        timeout: Duration,
    ) -> Result<CallOutcome, CdpCallError>
    where
        F: Future<Output = Result<Value, CdpCallError>> + Send + 'static,
    {
        self.interruptible_since(self.dialogs_before(), method, work, timeout)
            .await
    }

    /// [`Supervisor::interruptible`] for `work` whose command went out
    /// after `since` ([`Supervisor::dialogs_before`]) was taken.
    pub(crate) async fn interruptible_since<F>(
        &self,
        since: DialogsBefore,
        method: &str,
        work: F,
        timeout: Duration,
    ) -> Result<CallOutcome, CdpCallError>
    where
        F: Future<Output = Result<Value, CdpCallError>> + Send + 'static,
    {
        let start = since.start.clone();
        let mut reply = Box::pin(work);
        let own_deadline = async {
            tokio::select! {
                r = &mut reply => Some(r),
                () = tokio::time::sleep(timeout) => None,
            }
        };
        let pending_dialogs = match self.race_dialogs_since(since, own_deadline, true).await {
            // Sent while a dialog blocked the page, which a navigation then
            // closed: Chromium ran the queued command but says only that
            // the page navigated (CDP facts). Not a failure to resend.
            Ok(Some(Err(e))) if start.ran_before_navigation(lost_to_navigation(&e)) => {
                let call_id = self.shared.calls.begin(method);
                self.shared.calls.complete(&call_id, Err(describe_late(&e)));
                return Ok(CallOutcome::Interrupted {
                    call_id,
                    pending_dialogs: self.snapshot().pending_dialogs.clone(),
                });
            }
            Ok(Some(r)) => return Ok(CallOutcome::Reply(r?)),
            Ok(None) => {
                let s = self.snapshot();
                if start.at_deadline(&s) == AtDeadline::TimedOut {
                    // Still queued: kept like an interrupted call, and an
                    // action's dispatch runs to its end (a mousePressed is
                    // followed by its mouseReleased).
                    return Ok(CallOutcome::TimedOut {
                        call_id: self.keep_waiting(method, reply),
                        after: timeout,
                    });
                }
                s.pending_dialogs.clone()
            }
            Err(d) => d,
        };
        Ok(CallOutcome::Interrupted {
            call_id: self.keep_waiting(method, reply),
            pending_dialogs,
        })
    }

    /// Records the call `method` as outstanding and waits on for `reply`
    /// in a task of its own, recording its outcome once. Returns its
    /// `call_id`.
    pub(super) fn keep_waiting(
        &self,
        method: &str,
        reply: Pin<Box<impl Future<Output = Result<Value, CdpCallError>> + Send + 'static>>,
    ) -> String {
        let call_id = self.shared.calls.begin(method);
        let calls = self.shared.calls.clone();
        let id = call_id.clone();
        // Ends with the reply, the deadline, or the connection: never lingers.
        tokio::spawn(async move {
            let outcome = reply.await.map_err(|e| describe_late(&e));
            calls.complete(&id, outcome);
        });
        call_id
    }

    /// Waits until every interrupted call has completed, at most `within`.
    pub async fn interrupted_calls_settled(&self, within: Duration) {
        self.shared
            .calls
            .settled(crate::cdp::connection::deadline_after(within))
            .await
    }

    /// The dialogs pending now, for [`Supervisor::race_dialogs_since`]:
    /// take it **before** sending the command a dialog may block. A
    /// dialog the command opens at once can be published before the race
    /// first looks; counted as already there, it was missed, and a
    /// navigation to a page that asks `beforeunload` waited out its 30 s
    /// (seen in CI under load).
    pub(crate) fn dialogs_before(&self) -> DialogsBefore {
        self.dialogs_before_on(None)
    }

    /// [`Supervisor::dialogs_before`] for a call on tab `target_id`
    /// (`None`: the current tab): only dialogs that block that tab's
    /// renderer count ([`CallStart`]).
    pub(crate) fn dialogs_before_on(&self, target_id: Option<&str>) -> DialogsBefore {
        let mut snaps = self.subscribe();
        let start = CallStart::new(&snaps.borrow_and_update(), target_id, false);
        DialogsBefore { snaps, start }
    }

    /// Runs `fut` unless a dialog blocks the page first: a new pending
    /// dialog (under an auto policy, only one the policy could not answer),
    /// or — when `existing_block` and one already blocked the page at the
    /// start — no result within [`crate::supervisor::state::calls::BLOCKED_CALL_GRACE`]. `Err` carries the
    /// pending dialogs. For a `fut` whose command is already sent, use
    /// [`Supervisor::race_dialogs_since`].
    pub(crate) async fn race_dialogs<F, T>(
        &self,
        fut: F,
        existing_block: bool,
    ) -> Result<T, List<PendingDialog>>
    where
        F: Future<Output = T>,
    {
        self.race_dialogs_since(self.dialogs_before(), fut, existing_block)
            .await
    }

    /// [`Supervisor::race_dialogs`], "new" and "at the start" meaning
    /// since `since` ([`Supervisor::dialogs_before`]).
    pub(crate) async fn race_dialogs_since<F, T>(
        &self,
        since: DialogsBefore,
        fut: F,
        existing_block: bool,
    ) -> Result<T, List<PendingDialog>>
    where
        F: Future<Output = T>,
    {
        let DialogsBefore { mut snaps, start } = since;
        let policy = self.shared.policy;
        let new_dialog = async {
            loop {
                if snaps.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
                let s = snaps.borrow_and_update().clone();
                if start.interrupted_by_new(&s, &policy) {
                    return s.pending_dialogs.clone();
                }
            }
        };
        let grace = async {
            if let Some(grace) = start.grace(existing_block) {
                tokio::time::sleep(grace).await;
                let s = self.snapshot();
                // Released meanwhile: nothing blocks the call any more.
                if start.still_blocked(&s) {
                    return s.pending_dialogs.clone();
                }
            }
            std::future::pending().await
        };
        tokio::select! {
            // A result already there wins over a dialog that opened after it.
            biased;
            r = fut => Ok(r),
            d = new_dialog => Err(d),
            d = grace => Err(d),
        }
    }
}

/// The dialogs pending when a call was about to be sent
/// ([`Supervisor::dialogs_before`]); its race counts any other as new.
#[derive(Clone)]
pub(crate) struct DialogsBefore {
    /// Marked seen at that moment: a later snapshot wakes the race at once.
    pub(super) snaps: watch::Receiver<Arc<Snapshot>>,
    /// What the call saw then; the core's rules decide from it.
    pub(super) start: CallStart,
}

/// Whether Chromium failed a command with `-32000 "Inspected target
/// navigated or closed"`: what a command queued behind a dialog gets when a
/// navigation closes that dialog — after the command ran (CDP facts).
pub(super) fn lost_to_navigation(e: &CdpCallError) -> bool {
    matches!(e, CdpCallError::Command(CommandError::Protocol { code: -32000, message, .. })
        if message.contains("Inspected target navigated or closed"))
}

/// What `completed_calls` says of a call that ended in `e` after it
/// returned to the agent (interrupted or timed out).
pub(super) fn describe_late(e: &CdpCallError) -> String {
    match e {
        CdpCallError::Command(CommandError::Disconnected { .. }) => {
            format!("{e}; the command may or may not have run before the connection dropped")
        }
        e if lost_to_navigation(e) => format!(
            "{e}: the command ran, but the page navigated before it replied, so its result is lost; do not resend it"
        ),
        e => e.to_string(),
    }
}
