//! Dialogs: opening (native or through the bridge), answering (the agent,
//! the policy, the watchdog), releasing a page Chromium will not answer for,
//! and closing — with one function, [`closed_by`], deciding who closed one.
//!
//! The rules a newcomer changes live in [`State::dialog_opened`] (what
//! happens when a dialog opens), [`State::answer_replied`] (what an
//! answer's reply means), [`State::dialog_due`] (what the watchdog does)
//! and [`closed_by`].

use super::errors::Login;
use super::{
    ANSWERS_AFTER_CLOSE_MAX, Command, DIALOG_MESSAGE_MAX_CHARS, DialogAction, DialogError,
    DialogRequest, Notice, Now, OOPIF_RELEASE_MIN, Output, Purpose, RECENT_DIALOGS_MAX,
    RELEASE_REPLY_TIMEOUT, ReplyError, State, Target, Timer, cut,
};
use crate::cdp::protocol::{
    AuthRequired, DialogClosed, DialogOpening, DialogType, ERROR_INVALID_PARAMS, FileChooserOpened,
    FrameId, SessionId, TargetId,
};
use crate::supervisor::bridge::{self, PausedKind};
use crate::supervisor::credentials::Credential;
use crate::supervisor::policy::DialogPolicy;
use crate::supervisor::snapshot::{ClosedBy, ClosedDialog, HttpAuthChallenge, PendingDialog};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Arc;

/// Why a dialog stopped being pending: the only input of [`closed_by`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CloseCause {
    /// Our answer (`by` whom) went through.
    Answered(ClosedBy),
    /// Our navigation (`by` whom) released its page.
    Released(ClosedBy),
    /// Chromium's `javascriptDialogClosed` for its frame: with our answer
    /// in flight (by whom), or a navigation of ours of its frame or an
    /// ancestor (by whom), or neither.
    ClosedEvent {
        /// Who answers it now, if we do.
        answering: Option<ClosedBy>,
        /// Who navigates its frame (or an ancestor), if we do.
        navigation: Option<ClosedBy>,
    },
    /// Its frame (or an ancestor) committed a new document or was detached:
    /// by our navigation (whose), or not.
    Navigation(Option<ClosedBy>),
    /// Our answer was refused because another client answered first.
    LostRace,
    /// A newer dialog opened in its frame: it closed unseen.
    Replaced,
    /// Its page's target went away.
    PageGone,
}

/// Who closed a dialog (`closed_by`), from why it closed.
pub fn closed_by(cause: CloseCause) -> ClosedBy {
    match cause {
        CloseCause::Answered(by) | CloseCause::Released(by) => by,
        CloseCause::ClosedEvent {
            answering,
            navigation,
        } => answering.or(navigation).unwrap_or(ClosedBy::Remote),
        CloseCause::Navigation(by) => by.unwrap_or(ClosedBy::Remote),
        CloseCause::LostRace | CloseCause::Replaced | CloseCause::PageGone => ClosedBy::Remote,
    }
}

#[derive(Clone, Debug)]
struct Answering {
    by: ClosedBy,
    /// Chromium closed another dialog (the most recent) with it.
    landed_elsewhere: bool,
    /// It closed its own dialog: it closes no other.
    spent: bool,
    /// A navigation of ours (by whom) was releasing its dialog too when the
    /// dialog closed: if Chromium then says the answer found no dialog,
    /// that navigation closed it, not another client.
    navigating_too: Option<ClosedBy>,
    ticket: Option<u64>,
    /// What we answered, recorded when no closed event tells (the bridge).
    accept: bool,
    prompt_text: Option<String>,
}

impl Answering {
    /// An answer that carries no text and opens no race with a newer
    /// dialog: a login's, a file chooser's.
    fn without_text(by: ClosedBy, ticket: Option<u64>, accept: bool) -> Answering {
        Answering {
            by,
            landed_elsewhere: false,
            spent: false,
            navigating_too: None,
            ticket,
            accept,
            prompt_text: None,
        }
    }
}

impl Dialog {
    /// A JS dialog the renderer shows (`javascriptDialogOpening`): answered
    /// with `Page.handleJavaScriptDialog`, which Chromium applies to the
    /// page's most recent one.
    fn is_native(&self) -> bool {
        self.bridge_request.is_none()
            && self.auth_request.is_none()
            && self.view.dialog_type != DialogType::FileChooser
    }
}

#[derive(Clone, Debug)]
struct Dialog {
    /// Shared with the snapshots and the notice that show it.
    view: Arc<PendingDialog>,
    frame_id: Option<FrameId>,
    session_id: Option<SessionId>,
    answering: Option<Answering>,
    /// Our `Page.navigate` releasing its page is in flight, by whom.
    releasing: Option<ClosedBy>,
    /// A dialog reported by the bridge: its paused request (`Fetch.requestPaused.requestId`).
    bridge_request: Option<String>,
    /// An HTTP authentication challenge: its paused request
    /// (`Fetch.authRequired.requestId`), answered with `Fetch.continueWithAuth`.
    auth_request: Option<String>,
    /// A file chooser's input (`Page.fileChooserOpened.backendNodeId`).
    file_input: Option<i64>,
    /// Its number (`d-N`): a higher one opened later.
    number: u64,
    /// Kept across a reconnect and not yet re-checked: open only if its
    /// renderer's new `Page.enable` stays unanswered
    /// ([`State::recheck_carried`]). Neither the watchdog nor a policy acts
    /// on it meanwhile.
    carried: bool,
    /// Our answer was lost with the connection (in flight when it
    /// dropped): Chromium may have applied it. When the re-check finds the dialog closed, that
    /// answer closed it (what the page received); when it finds it open,
    /// the answer never arrived and this is forgotten.
    answer_at_drop: Option<Answering>,
    /// Still open after a reconnect: shown to a client that is gone. For a
    /// beforeunload nothing but closing its tab frees the page (CDP facts:
    /// the navigation of an OOPIF that frees one otherwise gets no reply).
    orphaned: bool,
    /// A prompt's default text, whole, when the view shows it cut: an
    /// accept without text answers with all of it, as OK would.
    default_prompt_whole: Option<String>,
}

/// The pending dialogs, the recently closed ones, and answers whose dialog
/// closed while they were in flight.
#[derive(Clone, Debug)]
pub struct Dialogs {
    pending: Vec<Dialog>,
    /// See [`ANSWERS_AFTER_CLOSE_MAX`].
    answers_after_close: VecDeque<(ClosedDialog, Answering)>,
    next: u64,
    recent: VecDeque<Arc<ClosedDialog>>,
    /// Realms ([`realm_key`]) given stored credentials: a challenge of one
    /// again had the wrong ones (a right login is cached by Chromium per
    /// realm), and is a prompt like any other.
    auth_given: VecDeque<String>,
    /// A releasing navigation got no reply by its deadline: the top frame
    /// answers no navigation (a beforeunload we cannot answer, or one shown
    /// before we attached, whose type nobody told us), so the next release
    /// closes the tab ([`State::release`]). Cleared by a new top document.
    unnavigable: bool,
}

/// The realms [`Dialogs::auth_given`] remembers.
const AUTH_GIVEN_MAX: usize = 64;

/// A challenge's realm as one key: its origin and realm name.
fn realm_key(c: &HttpAuthChallenge) -> String {
    format!("{} {}", c.origin, c.realm)
}

impl Default for Dialogs {
    fn default() -> Self {
        Dialogs {
            pending: Vec::new(),
            answers_after_close: VecDeque::new(),
            next: 1,
            recent: VecDeque::new(),
            auth_given: VecDeque::new(),
            unnavigable: false,
        }
    }
}

impl Dialogs {
    /// Whether any dialog is pending.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Pending dialogs, oldest first.
    pub fn views(&self) -> impl ExactSizeIterator<Item = &Arc<PendingDialog>> + Clone {
        self.pending.iter().map(|d| &d.view)
    }

    /// Recently closed dialogs, oldest first.
    pub fn recent(&self) -> impl ExactSizeIterator<Item = &Arc<ClosedDialog>> + Clone {
        self.recent.iter()
    }

    /// The number the next dialog's id gets.
    pub fn next_number(&self) -> u64 {
        self.next
    }

    /// Sets the number the next dialog's id gets.
    pub fn set_next_number(&mut self, n: u64) {
        self.next = n;
    }

    /// Whether the dialog `id` waits on no command of ours (so its timer counts).
    pub fn idle(&self, id: &str) -> bool {
        self.pending.iter().any(|d| {
            d.view.id == id && d.answering.is_none() && d.releasing.is_none() && !d.carried
        })
    }

    /// The dialogs whose answer or release awaits its reply.
    pub fn in_flight(&self) -> impl Iterator<Item = &str> {
        self.pending
            .iter()
            .filter(|d| d.answering.is_some() || d.releasing.is_some())
            .map(|d| d.view.id.as_str())
    }

    /// The connection dropped: answers go to the new page session, and a
    /// dialog of the renderer's own is re-checked once re-attached (it may
    /// close while we are away; a bridge dialog's request is ours to answer).
    pub fn connection_lost(&mut self) {
        for d in &mut self.pending {
            d.session_id = None;
            d.carried = d.bridge_request.is_none() && d.auth_request.is_none();
        }
    }

    /// The top frame committed a new document: it navigates again.
    pub fn top_navigated(&mut self) {
        self.unnavigable = false;
    }

    fn get(&self, id: &str) -> Option<&Dialog> {
        self.pending.iter().find(|d| d.view.id == id)
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Dialog> {
        self.pending.iter_mut().find(|d| d.view.id == id)
    }
}

impl State {
    /// Whether an agent's answer to a dialog that closed meanwhile (its
    /// page gone, say) still waits for its reply: its
    /// [`Output::AnswerDone`] comes with that reply.
    pub(super) fn answer_awaits_reply(&self) -> bool {
        self.dialogs
            .answers_after_close
            .iter()
            .any(|(_, a)| a.ticket.is_some())
    }

    /// Who the policy and the watchdog act as for a dialog of this type.
    fn closer(&self, dialog_type: &DialogType) -> ClosedBy {
        match self.opts.policy.for_type(dialog_type.as_str()) {
            DialogPolicy::MustRespond => ClosedBy::Watchdog,
            DialogPolicy::AutoDismiss | DialogPolicy::AutoAccept => ClosedBy::AutoPolicy,
        }
    }

    /// What the policy answers a dialog of this type with at once, if anything.
    fn auto_action(&self, dialog_type: &DialogType) -> Option<DialogAction> {
        match self.opts.policy.for_type(dialog_type.as_str()) {
            DialogPolicy::MustRespond => None,
            DialogPolicy::AutoDismiss => Some(DialogAction::Dismiss),
            DialogPolicy::AutoAccept => Some(DialogAction::Accept),
        }
    }

    pub(super) fn on_request_paused(
        &mut self,
        session: Option<&SessionId>,
        params: &str,
        now: Now,
    ) {
        let Some(session) = session.filter(|s| self.targets.has_session(s)).cloned() else {
            return;
        };
        match bridge::parse_paused(params, &self.opts.bridge_key) {
            PausedKind::Dialog(b) => {
                let opening = DialogOpening {
                    url: b.url,
                    frame_id: b.frame_id.map(FrameId),
                    message: b.message,
                    dialog_type: b.dialog_type,
                    default_prompt: Some(b.default_prompt),
                };
                self.dialog_opened(Some(&session), opening, Some(b.request_id), None, None, now);
            }
            // A page's own request to the bridge path: refused, never a dialog.
            PausedKind::Forged { request_id } => self.out.send(
                Target::Session(session),
                "Fetch.failRequest",
                bridge::fail_params(&request_id),
                Purpose::Setup,
            ),
            // Never leave a request paused: continued, or failed by the policy.
            PausedKind::Other {
                request_id,
                document,
            } => self.let_go_or_block(session, request_id, document, now),
            PausedKind::Unreadable => {}
        }
    }

    /// A dialog opened (`javascriptDialogOpening`, or the bridge). Under an
    /// auto policy it is answered before anything else is announced; under
    /// must_respond its watchdog is armed.
    pub(super) fn dialog_opened(
        &mut self,
        session: Option<&SessionId>,
        d: DialogOpening,
        bridge_request: Option<String>,
        chooser: Option<FileChooserOpened>,
        auth: Option<(String, HttpAuthChallenge)>,
        now: Now,
    ) {
        let Some(session) = session.filter(|s| self.targets.has_session(s)) else {
            return;
        };
        let frame_id = d
            .frame_id
            .clone()
            .or_else(|| self.targets.frame_of(session));
        let message = cut(d.message, DIALOG_MESSAGE_MAX_CHARS);
        // A page's default text goes into every snapshot: cut as the
        // message is (an SDK over HTTP fails on an event past 1 MiB).
        let default_prompt = d.default_prompt.unwrap_or_default();
        let default_prompt_whole = (default_prompt.chars().count() > DIALOG_MESSAGE_MAX_CHARS)
            .then(|| default_prompt.clone());
        let default_prompt = cut(default_prompt, DIALOG_MESSAGE_MAX_CHARS);
        let native = bridge_request.is_none() && auth.is_none();
        if native && self.reported_again(session, &frame_id, &d.dialog_type, &message, now) {
            return;
        }
        let (auth_request, http_auth) = auth.unzip();
        if let Some(request) = &auth_request {
            self.drop_superseded_challenges(&frame_id, request, now);
        }
        // A person at the wheel answers it; nothing else does meanwhile.
        let action = (!self.person)
            .then(|| self.answer_at_once(&d.dialog_type, http_auth.as_ref()))
            .flatten();
        let id = format!("d-{}", self.dialogs.next);
        self.dialogs.next += 1;
        let view = Arc::new(PendingDialog {
            id: id.clone(),
            dialog_type: d.dialog_type,
            message,
            default_prompt,
            opened_at: now.unix_s,
            frame_id: frame_id.as_ref().map(|f| f.0.clone()),
            url: d.url,
            answerable: true,
            mode: chooser.as_ref().map(|c| c.mode.clone()),
            target_id: self.targets.top_target().map(|t| t.0.clone()),
            http_auth,
            answered_at_once: action.is_some(),
            only_closing_releases: false,
        });
        self.dialogs.pending.push(Dialog {
            view: view.clone(),
            frame_id,
            session_id: Some(session.clone()),
            answering: None,
            releasing: None,
            bridge_request,
            auth_request,
            file_input: chooser.and_then(|c| c.backend_node_id),
            number: self.dialogs.next - 1,
            carried: false,
            answer_at_drop: None,
            orphaned: false,
            default_prompt_whole,
        });
        self.answer_or_arm(id, action, now);
        self.out.notice(Notice::DialogOpened { dialog: view });
    }

    /// What answers a new dialog at once, if anything: stored credentials
    /// answer their realm's challenge once, whatever the policy (a page
    /// that reloads itself must not replay a wrong password); else the
    /// auto policy.
    fn answer_at_once(
        &self,
        dialog_type: &DialogType,
        http_auth: Option<&HttpAuthChallenge>,
    ) -> Option<DialogAction> {
        if http_auth.is_some_and(|c| self.stored_credential(c).is_some()) {
            Some(DialogAction::Accept)
        } else {
            self.auto_action(dialog_type)
        }
    }

    /// Answers new dialog `id` with `action` before anything else is even
    /// announced (the page is frozen until then), or with none arms its
    /// watchdog.
    fn answer_or_arm(&mut self, id: String, action: Option<DialogAction>, now: Now) {
        match action {
            Some(action) => self.start_answer(
                &id,
                action,
                None,
                None,
                None,
                ClosedBy::AutoPolicy,
                None,
                now,
            ),
            None => self.timers.set(
                Timer::Dialog(id),
                now.instant.checked_add(self.opts.dialog_timeout),
            ),
        }
    }

    /// A person handed the task back: every pending dialog nothing is in
    /// flight for starts over, as at its opening (an auto policy or stored
    /// credentials answer it now, a watchdog gets a full deadline), and a
    /// blocked page's release waits its whole deadline again.
    pub(super) fn restart_policies(&mut self, now: Now) {
        let restart: Vec<(String, Option<DialogAction>)> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| self.dialogs.idle(&d.view.id))
            .map(|d| {
                let action = self.answer_at_once(&d.view.dialog_type, d.view.http_auth.as_ref());
                (d.view.id.clone(), action)
            })
            .collect();
        for (id, action) in restart {
            self.answer_or_arm(id, action, now);
        }
        if self.timers.any(|t| *t == Timer::PageBlockedRelease) {
            let at = match self.opts.policy.as_uniform() {
                Some(DialogPolicy::AutoDismiss | DialogPolicy::AutoAccept) => Some(now.instant),
                _ => now.instant.checked_add(self.opts.dialog_timeout),
            };
            self.timers.set(Timer::PageBlockedRelease, at);
        }
    }

    /// A renderer's dialog opening in a frame that already shows one: the
    /// same dialog reported again (by another session, or after a
    /// reconnect) is listed once, and `true` says so; another one means the
    /// old one closed unseen (a frame shows one dialog at a time).
    fn reported_again(
        &mut self,
        session: &SessionId,
        frame_id: &Option<FrameId>,
        dialog_type: &DialogType,
        message: &str,
        now: Now,
    ) -> bool {
        let is_top = self.targets.is_top(Some(session));
        let Some(existing) =
            self.dialogs.pending.iter_mut().find(|x| {
                x.frame_id.is_some() && x.frame_id == *frame_id && x.auth_request.is_none()
            })
        else {
            return false;
        };
        if existing.view.dialog_type == *dialog_type && existing.view.message == message {
            // Prefer the page session to answer on.
            if is_top {
                existing.session_id = Some(session.clone());
            }
            // Reported after a reconnect: still open, no re-check needed.
            existing.carried = false;
            return true;
        }
        let old = existing.view.id.clone();
        self.close_dialog(&old, CloseCause::Replaced, None, None, now);
        false
    }

    /// A challenge for `request` in `frame_id`: a frame waits on one
    /// document, so a challenge for another request of it means the
    /// earlier request was dropped (a new navigation), and Chromium says
    /// nothing of that. Those challenges close, unless being answered.
    fn drop_superseded_challenges(&mut self, frame_id: &Option<FrameId>, request: &str, now: Now) {
        let dropped: Vec<String> = self
            .dialogs
            .pending
            .iter()
            .filter(|x| {
                x.frame_id == *frame_id
                    && x.auth_request.as_deref().is_some_and(|r| r != request)
                    && x.answering.is_none()
            })
            .map(|x| x.view.id.clone())
            .collect();
        for old in dropped {
            self.close_dialog(&old, CloseCause::Replaced, None, None, now);
        }
    }

    /// A file input opened its chooser (`Page.fileChooserOpened`, with
    /// interception on): a pending dialog of type `file_chooser` under the
    /// same policy rules as any other.
    pub(super) fn file_chooser_opened(
        &mut self,
        session: Option<&SessionId>,
        c: FileChooserOpened,
        now: Now,
    ) {
        let url = self.frames.url_of(&c.frame_id).unwrap_or_default();
        let opening = DialogOpening {
            url,
            frame_id: Some(c.frame_id.clone()),
            message: String::new(),
            dialog_type: DialogType::FileChooser,
            default_prompt: None,
        };
        self.dialog_opened(session, opening, None, Some(c), None, now);
    }

    /// An HTTP authentication challenge (`Fetch.authRequired`): a pending
    /// dialog of type `http_auth` under the same rules as any other;
    /// stored credentials for its origin answer it at once
    /// (`closed_by: auto_policy`), once per realm.
    pub(super) fn auth_required(&mut self, session: Option<&SessionId>, a: AuthRequired, now: Now) {
        let c = a.auth_challenge;
        let proxy = c.source.as_deref() == Some("Proxy");
        let realm = if c.realm.is_empty() {
            String::new()
        } else {
            format!(" for realm {:?}", c.realm)
        };
        let message = format!(
            "{} {} asks for a username and password{realm} ({} authentication)",
            if proxy { "the proxy" } else { "the server" },
            c.origin,
            c.scheme
        );
        let opening = DialogOpening {
            url: a.request.url,
            frame_id: a.frame_id,
            message,
            dialog_type: DialogType::HttpAuth,
            default_prompt: None,
        };
        let challenge = HttpAuthChallenge {
            origin: c.origin,
            realm: c.realm,
            scheme: c.scheme,
        };
        self.dialog_opened(
            session,
            opening,
            None,
            None,
            Some((a.request_id, challenge)),
            now,
        );
    }

    /// The stored credential for challenge `c`, unless its realm was
    /// given it already (it came back: they were wrong).
    fn stored_credential(&self, c: &HttpAuthChallenge) -> Option<&Credential> {
        if self.dialogs.auth_given.contains(&realm_key(c)) {
            return None;
        }
        self.opts.credentials.for_origin(&c.origin)
    }

    /// [`State::stored_credential`] for dialog `d`, as a login to send.
    fn stored_login(&self, d: &Dialog) -> Option<Login> {
        let c = self.stored_credential(d.view.http_auth.as_ref()?)?;
        Some(Login {
            username: c.username.clone(),
            password: c.password.clone(),
        })
    }

    /// Answers challenge `id` (`Fetch.continueWithAuth` on the session
    /// that paused it): accepted with `login`, or the stored credential,
    /// else cancelled (the page shows the server's 401 body).
    fn start_auth_answer(
        &mut self,
        id: &str,
        request_id: String,
        action: DialogAction,
        login: Option<Login>,
        by: ClosedBy,
        ticket: Option<u64>,
    ) {
        let Some(d) = self.dialogs.pending.iter().find(|d| d.view.id == id) else {
            return;
        };
        let stored = (action == DialogAction::Accept && login.is_none())
            .then(|| self.stored_login(d))
            .flatten();
        if stored.is_some()
            && let Some(c) = d.view.http_auth.as_ref()
        {
            let key = realm_key(c);
            if self.dialogs.auth_given.len() == AUTH_GIVEN_MAX {
                self.dialogs.auth_given.pop_front();
            }
            self.dialogs.auth_given.push_back(key);
        }
        let login = login.or(stored).filter(|_| action == DialogAction::Accept);
        let response = match &login {
            Some(l) => json!({
                "response": "ProvideCredentials",
                "username": l.username,
                "password": l.password.expose(),
            }),
            None => json!({ "response": "CancelAuth" }),
        };
        let Some(d) = self.dialogs.get_mut(id) else {
            return;
        };
        d.answering = Some(Answering::without_text(by, ticket, login.is_some()));
        let dialog_id = d.view.id.clone();
        let session = d.session_id.clone();
        self.out.send(
            session.into(),
            "Fetch.continueWithAuth",
            json!({ "requestId": request_id, "authChallengeResponse": response }),
            Purpose::Answer { dialog_id },
        );
    }

    /// Closes the challenges whose session went with the connection (no
    /// session since [`Dialogs::connection_lost`]; one always has one until
    /// then), `remote`: Chromium went on with their requests without us.
    pub(super) fn close_detached_challenges(&mut self, now: Now) {
        let gone: Vec<String> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| d.auth_request.is_some() && d.session_id.is_none() && d.answering.is_none())
            .map(|d| d.view.id.clone())
            .collect();
        for id in gone {
            self.close_dialog(&id, CloseCause::PageGone, None, None, now);
        }
    }

    #[allow(clippy::too_many_arguments)] // one answer: what, with which text, files or login, by whom, for whom, when
    fn start_answer(
        &mut self,
        id: &str,
        action: DialogAction,
        prompt_text: Option<String>,
        files: Option<Vec<String>>,
        login: Option<Login>,
        by: ClosedBy,
        ticket: Option<u64>,
        now: Now,
    ) {
        let top = self.targets.top_session().cloned();
        let Some(d) = self.dialogs.get_mut(id) else {
            return;
        };
        if d.view.dialog_type == DialogType::FileChooser {
            let files = files.filter(|f| !f.is_empty() && action == DialogAction::Accept);
            self.start_chooser_answer(id, files, by, ticket, now);
            return;
        }
        if let Some(request_id) = d.auth_request.clone() {
            self.start_auth_answer(id, request_id, action, login, by, ticket);
            return;
        }
        let accept = action == DialogAction::Accept;
        // Accepting a prompt without text answers with the default, as a person pressing OK would.
        let text = (accept && d.view.dialog_type == DialogType::Prompt).then(|| {
            prompt_text.unwrap_or_else(|| {
                d.default_prompt_whole
                    .clone()
                    .unwrap_or_else(|| d.view.default_prompt.clone())
            })
        });
        let Some(d) = self.dialogs.get_mut(id) else {
            return;
        };
        let (method, params) = match &d.bridge_request {
            Some(request_id) => (
                "Fetch.fulfillRequest",
                bridge::fulfill_params(request_id, accept, text.as_deref()),
            ),
            None => {
                let mut params = json!({ "accept": accept });
                if let Some(t) = &text {
                    params["promptText"] = Value::String(t.clone());
                }
                ("Page.handleJavaScriptDialog", params)
            }
        };
        // Record that we are answering before sending: Chromium sends
        // javascriptDialogClosed before its reply.
        d.answering = Some(Answering {
            by,
            landed_elsewhere: false,
            spent: false,
            navigating_too: None,
            ticket,
            accept,
            prompt_text: text,
        });
        // A bridge request is fulfilled on the session that paused it.
        let session = if d.bridge_request.is_some() {
            d.session_id.clone()
        } else {
            d.session_id.clone().or(top)
        };
        let dialog_id = d.view.id.clone();
        self.out.send(
            session.into(),
            method,
            params,
            Purpose::Answer { dialog_id },
        );
    }

    /// Answers a file chooser: sets `files` on its input, or (no files: a
    /// dismiss, or a policy or watchdog with none to give) closes it at
    /// once, since Chromium has no cancel and the input stays unchanged.
    fn start_chooser_answer(
        &mut self,
        id: &str,
        files: Option<Vec<String>>,
        by: ClosedBy,
        ticket: Option<u64>,
        now: Now,
    ) {
        let Some(d) = self.dialogs.get_mut(id) else {
            return;
        };
        d.answering = Some(Answering::without_text(by, ticket, files.is_some()));
        match (files, d.file_input, d.session_id.clone()) {
            (Some(files), Some(node), Some(session)) => {
                let dialog_id = d.view.id.clone();
                self.out.send(
                    Target::Session(session),
                    "DOM.setFileInputFiles",
                    json!({"files": files, "backendNodeId": node}),
                    Purpose::Answer { dialog_id },
                );
            }
            _ => self.answer_replied(id, Ok(Value::Null), now),
        }
    }

    /// The agent answers a dialog (`browser_dialog`). On `Ok`, a command is
    /// queued and [`Output::AnswerDone`] with `ticket` follows once Chromium
    /// replies. Errors: no dialog, several without `dialog_id` (listing
    /// them), unknown id (listing the known ones), a dialog Chromium will not
    /// answer, one already being answered.
    pub fn answer_dialog(
        &mut self,
        req: DialogRequest,
        ticket: u64,
        now: Now,
    ) -> Result<(), DialogError> {
        self.answer_dialog_as(req, ticket, ClosedBy::Agent, now)
    }

    /// [`State::answer_dialog`] on behalf of `by`: the agent, or a human it
    /// asked ([`ClosedBy::User`]).
    pub fn answer_dialog_as(
        &mut self,
        req: DialogRequest,
        ticket: u64,
        by: ClosedBy,
        now: Now,
    ) -> Result<(), DialogError> {
        let id = self.dialog_to_answer(req.dialog_id.as_deref())?;
        self.check_answer(&id, &req)?;
        self.start_answer(
            &id,
            req.action,
            req.prompt_text,
            req.files,
            req.login,
            by,
            Some(ticket),
            now,
        );
        Ok(())
    }

    /// The pending dialog an answer names (`dialog_id`), or the only one.
    fn dialog_to_answer(&self, dialog_id: Option<&str>) -> Result<String, DialogError> {
        let pending = &self.dialogs.pending;
        match dialog_id {
            Some(id) if pending.iter().any(|d| d.view.id == id) => Ok(id.to_owned()),
            Some(id) => Err(DialogError::UnknownId {
                id: id.to_owned(),
                known: pending.iter().map(|d| d.view.id.clone()).collect(),
            }),
            None => match pending.as_slice() {
                [] => Err(DialogError::NoDialog),
                [one] => Ok(one.view.id.clone()),
                many => Err(DialogError::Ambiguous {
                    candidates: many.iter().map(describe).collect(),
                }),
            },
        }
    }

    /// Whether `req` can answer pending dialog `id` now: not already being
    /// answered, the most recent native one of its page (Chromium answers
    /// only that), files only for a file chooser (as many as its mode
    /// takes), a login only for a challenge (and one when accepting with
    /// none stored), and a dialog Chromium will answer.
    fn check_answer(&self, id: &str, req: &DialogRequest) -> Result<(), DialogError> {
        let pending = &self.dialogs.pending;
        let d = pending
            .iter()
            .find(|d| d.view.id == id)
            .expect("dialog_to_answer found it");
        let id = id.to_owned();
        if d.answering.is_some() || d.releasing.is_some() {
            return Err(DialogError::AlreadyAnswering { id });
        }
        if d.is_native()
            && let Some(newer) = pending
                .iter()
                .filter(|x| x.is_native() && x.number > d.number)
                .max_by_key(|x| x.number)
        {
            return Err(DialogError::NotMostRecent {
                id,
                newer: newer.view.id.clone(),
            });
        }
        if d.view.dialog_type == DialogType::FileChooser {
            let mode = d.view.mode.clone().unwrap_or_default();
            let n = req.files.as_ref().map_or(0, Vec::len);
            let fits = n == 1 || (n > 1 && mode == "selectMultiple");
            if req.action == DialogAction::Accept && !fits {
                return Err(DialogError::FilesNeeded { id, mode });
            }
        } else if req.files.is_some() {
            return Err(DialogError::FilesNotAllowed { id });
        }
        if d.auth_request.is_none() && req.login.is_some() {
            return Err(DialogError::LoginNotAllowed { id });
        }
        if d.auth_request.is_some()
            && req.action == DialogAction::Accept
            && req.login.is_none()
            && self.stored_login(d).is_none()
        {
            return Err(DialogError::LoginNeeded { id });
        }
        if !d.view.answerable {
            return Err(super::not_answerable(&d.view));
        }
        Ok(())
    }

    pub(super) fn on_dialog_closed(
        &mut self,
        session: Option<&SessionId>,
        c: DialogClosed,
        now: Now,
    ) {
        let pending = &self.dialogs.pending;
        let found = match &c.frame_id {
            Some(f) => pending.iter().find(|d| {
                d.frame_id.as_ref() == Some(f)
                    && d.bridge_request.is_none()
                    && d.auth_request.is_none()
            }),
            // Older builds say no frame: only an unambiguous match on the session counts.
            None => {
                let on_session: Vec<&Dialog> = pending
                    .iter()
                    .filter(|d| {
                        d.session_id.as_ref() == session
                            && d.bridge_request.is_none()
                            && d.auth_request.is_none()
                    })
                    .collect();
                match on_session.as_slice() {
                    [one] => Some(*one),
                    _ => None,
                }
            }
        };
        let Some(d) = found else {
            if self.page_blocked() && self.targets.is_top(session) {
                self.unblock_page();
            }
            return;
        };
        let id = d.view.id.clone();
        let lineage = d
            .frame_id
            .as_ref()
            .map(|f| self.frames.lineage(f))
            .unwrap_or_default();
        let (answering, other) = self.answer_that_closed(d);
        // Chromium reports what closed the dialog: our own answer to it
        // would have said what we asked (a crash or a navigation closing
        // it under an accept in flight says `false`).
        let answering =
            answering.filter(|_| d.answering.as_ref().is_none_or(|a| a.accept == c.result));
        // A navigation leaves a beforeunload accepted; one dismissed was
        // not closed by the navigation it held (which it cancels).
        let navigation = if d.view.dialog_type == DialogType::Beforeunload && !c.result {
            None
        } else {
            d.releasing.or_else(|| self.navs.closer(&lineage))
        };
        let cause = CloseCause::ClosedEvent {
            answering,
            navigation,
        };
        let user_input =
            (d.view.dialog_type == DialogType::Prompt && c.result).then(|| c.user_input.clone());
        let from_closed = answering.is_some() && other.is_none() && d.answering.is_none();
        if let Some(a) = other
            .and_then(|o| self.dialogs.get_mut(&o))
            .and_then(|o| o.answering.as_mut())
        {
            a.landed_elsewhere = true;
        }
        if from_closed && let Some((_, a)) = self.dialogs.answers_after_close.back_mut() {
            // The answer of a dialog Chromium closed for this newer one
            // landed here: it is spent.
            a.spent = true;
        }
        self.close_dialog(&id, cause, Some(c.result), user_input, now);
    }

    /// Whose answer closed native dialog `d` (its `javascriptDialogClosed`
    /// came), if ours did. Chromium answers `handleJavaScriptDialog` for the
    /// page's most recent dialog, whichever one the command meant (CDP facts):
    /// - with a newer dialog pending in `d`'s tab, `d` was closed by
    ///   Chromium for it (a tab shows one at a time), and an answer of ours
    ///   to `d` lands on the newer one;
    /// - with no answer of ours to `d`, an answer of ours to another dialog
    ///   in flight closed `d` when `d` is the most recent one (that other
    ///   dialog's id is returned too: it is still open).
    fn answer_that_closed(&self, d: &Dialog) -> (Option<ClosedBy>, Option<String>) {
        if !d.is_native() {
            return (d.answering.as_ref().map(|a| a.by), None);
        }
        // A tab shows one JS dialog at a time: a newer one, in any frame of
        // it, closes the one showing.
        let natives = || {
            self.dialogs
                .pending
                .iter()
                .filter(|x| x.is_native() && x.view.target_id == d.view.target_id)
        };
        if d.answering.is_some() {
            // A newer one already pending closed `d` when it opened
            // (Chromium may report that closing after the newer one's
            // opening), whether our answer to `d` went out before it (the
            // answer lands on the newer one) or after.
            let replaced = natives().any(|x| x.number > d.number);
            return (
                (!replaced)
                    .then(|| d.answering.as_ref().map(|a| a.by))
                    .flatten(),
                None,
            );
        }
        let newest = natives().map(|x| x.number).max() == Some(d.number);
        if !newest {
            return (None, None);
        }
        let other = natives()
            .filter(|x| x.number != d.number)
            .find_map(|x| x.answering.as_ref().map(|a| (a.by, x.view.id.clone())));
        match other {
            Some((by, id)) => (Some(by), Some(id)),
            // An answer whose dialog Chromium closed for a newer one lands
            // on the newer one; one that closed its own dialog is spent.
            None => (
                self.dialogs
                    .answers_after_close
                    .back()
                    .filter(|(_, a)| !a.spent)
                    .map(|(_, a)| a.by),
                None,
            ),
        }
    }

    /// Closes the dialogs shown in `frames` (navigated away or detached),
    /// except those whose answer is in flight (its reply settles them).
    pub(super) fn close_dialogs_in(&mut self, frames: &[FrameId], by: Option<ClosedBy>, now: Now) {
        let closing: Vec<String> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| {
                d.answering.is_none() && d.frame_id.as_ref().is_some_and(|f| frames.contains(f))
            })
            .map(|d| d.view.id.clone())
            .collect();
        for id in closing {
            let by = self
                .dialogs
                .pending
                .iter()
                .find(|d| d.view.id == id)
                .and_then(|d| d.releasing)
                .or(by);
            self.close_dialog(&id, CloseCause::Navigation(by), None, None, now);
        }
    }

    /// The page's target went: every dialog with it, released by whoever
    /// closed the tab to release it ([`State::release`]), else `remote`.
    pub(super) fn close_all_dialogs(&mut self, now: Now) {
        self.close_gone(|_| true, now);
    }

    /// Closes the dialogs `which` picks, whose page or renderer is gone:
    /// released by whoever was releasing them, else `remote`.
    fn close_gone(&mut self, which: impl Fn(&Dialog) -> bool, now: Now) {
        let closing: Vec<(String, CloseCause)> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| which(d))
            .map(|d| {
                let cause = d
                    .releasing
                    .map_or(CloseCause::PageGone, CloseCause::Released);
                (d.view.id.clone(), cause)
            })
            .collect();
        for (id, cause) in closing {
            self.close_dialog(&id, cause, None, None, now);
        }
    }

    /// The renderer behind `session` (an OOPIF's) is gone: the JS dialogs
    /// its frames showed closed with it (`remote`, or the release in
    /// flight's). A frame is that renderer's when the nearest target root
    /// at or above it is the session's own frame (a nested OOPIF has its
    /// own renderer).
    pub(super) fn close_dialogs_of_renderer(&mut self, session: &SessionId, now: Now) {
        let Some(root) = self.targets.frame_of(session) else {
            return;
        };
        let roots: Vec<FrameId> = self
            .targets
            .session_ids()
            .filter_map(|s| self.targets.frame_of(s))
            .collect();
        let gone: Vec<String> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| {
                d.is_native()
                    && d.frame_id.as_ref().is_some_and(|f| {
                        self.frames
                            .lineage(f)
                            .into_iter()
                            .find(|x| roots.contains(x))
                            .is_some_and(|x| x == root)
                    })
            })
            .map(|d| d.view.id.clone())
            .collect();
        self.close_gone(|d| gone.contains(&d.view.id), now);
    }

    fn close_dialog(
        &mut self,
        id: &str,
        cause: CloseCause,
        accepted: Option<bool>,
        user_input: Option<String>,
        now: Now,
    ) {
        let Some(pos) = self.dialogs.pending.iter().position(|d| d.view.id == id) else {
            return;
        };
        let d = self.dialogs.pending.remove(pos);
        self.timers.cancel(&Timer::Dialog(id.to_owned()));
        // What a person typed stays with the page (DESIGN "A person at
        // the wheel"): their prompt answers are not recorded.
        let user_input = user_input.filter(|_| !self.person);
        if d.view.dialog_type == DialogType::Beforeunload
            && accepted == Some(false)
            && let Some(frame) = &d.frame_id
        {
            self.navs.cancelled(frame);
        }
        let (user_input, user_input_truncated) = ClosedDialog::kept_input(user_input);
        let closed = Arc::new(ClosedDialog {
            dialog: Arc::unwrap_or_clone(d.view),
            closed_at: now.unix_s,
            closed_by: closed_by(cause),
            accepted,
            user_input,
            user_input_truncated,
        });
        let dialogs = &mut self.dialogs;
        if dialogs.recent.len() == RECENT_DIALOGS_MAX {
            dialogs.recent.pop_front();
        }
        dialogs.recent.push_back(closed.clone());
        // An agent waiting on this dialog hears the outcome when its reply comes.
        if let Some(mut a) = d.answering {
            a.spent = matches!(
                cause,
                CloseCause::Answered(_)
                    | CloseCause::ClosedEvent {
                        answering: Some(_),
                        ..
                    }
            );
            if let CloseCause::ClosedEvent { navigation, .. } = cause {
                a.navigating_too = navigation;
            }
            if dialogs.answers_after_close.len() == ANSWERS_AFTER_CLOSE_MAX
                && let Some((oldest, waiting)) = dialogs.answers_after_close.pop_front()
                && let Some(ticket) = waiting.ticket
            {
                // Its reply is not waited for any longer: the agent hears
                // now what the record says, rather than nothing.
                self.out.push(Output::AnswerDone {
                    ticket,
                    result: Box::new(if waiting.spent {
                        Ok(oldest)
                    } else {
                        Err(DialogError::ClosedBefore {
                            id: oldest.dialog.id.clone(),
                            closed_by: oldest.closed_by,
                        })
                    }),
                });
            }
            dialogs
                .answers_after_close
                .push_back((ClosedDialog::clone(&closed), a));
        }
        self.out.notice(Notice::DialogClosed {
            dialog: closed,
            cause,
        });
    }

    /// The reply to an answer (`Purpose::Answer`).
    pub(super) fn answer_replied(&mut self, id: &str, result: Result<Value, ReplyError>, now: Now) {
        let Some(d) = self.dialogs.get_mut(id) else {
            // Closed already (javascriptDialogClosed comes before the reply).
            self.answer_replied_after_close(id, &result);
            return;
        };
        let Some(answering) = d.answering.take() else {
            return;
        };
        if result.as_ref().is_err_and(ReplyError::is_lost) {
            // Lost with the connection, whether the driver has told us of
            // the drop yet or not (a command's own failure can come first):
            // it may have landed, which the re-check after the reconnect tells.
            d.answer_at_drop = Some(answering.clone());
        }
        if d.auth_request.is_some() && result.is_err() {
            // The challenged request is gone (its frame navigated, or the
            // connection went with it): nothing is left to answer.
            self.close_dialog(id, CloseCause::LostRace, None, None, now);
            self.answer_done_closed(id, answering.ticket);
            return;
        }
        let e = match result {
            // Chromium closed another dialog (the most recent one) with
            // this answer: this one still blocks its frame, and Chromium
            // will not answer it (CDP facts).
            Ok(_) if answering.landed_elsewhere => ReplyError::Protocol {
                code: ERROR_INVALID_PARAMS,
                message: "the answer closed the most recent dialog instead; this one stays open"
                    .into(),
                data: None,
            },
            Ok(_) => {
                // No closed event told us (the bridge, a file chooser, or
                // the reply first): we know what we answered.
                let accept = answering.accept;
                let user_input = if accept { answering.prompt_text } else { None };
                let cause = CloseCause::Answered(answering.by);
                self.close_dialog(id, cause, Some(accept), user_input, now);
                self.answer_done_closed(id, answering.ticket);
                return;
            }
            Err(e) => e,
        };
        self.answer_failed(id, answering.by, answering.ticket, e, now);
    }

    /// Tells the caller waiting on `ticket` (if any) that dialog `id` closed,
    /// with its record.
    fn answer_done_closed(&mut self, id: &str, ticket: Option<u64>) {
        let Some(ticket) = ticket else {
            return;
        };
        let closed = self.dialogs.recent.iter().rev().find(|c| c.dialog.id == id);
        if let Some(closed) = closed.map(|c| ClosedDialog::clone(c)) {
            self.out.push(Output::AnswerDone {
                ticket,
                result: Box::new(Ok(closed)),
            });
        }
    }

    /// Our answer to dialog `id` (still pending) failed with `e`: the
    /// watchdog or the policy tries again or releases the page; an agent's
    /// or a human's answer is told why.
    fn answer_failed(
        &mut self,
        id: &str,
        by: ClosedBy,
        ticket: Option<u64>,
        e: ReplyError,
        now: Now,
    ) {
        let refused = e.is_code(ERROR_INVALID_PARAMS);
        let Some(d) = self.dialogs.get_mut(id) else {
            return;
        };
        if refused {
            Arc::make_mut(&mut d.view).answerable = false;
        }
        let dialog_type = d.view.dialog_type.clone();
        match by {
            // Never reached Chromium: the policy or the watchdog tries again
            // as soon as we are connected (a timer the driver fires once it is).
            ClosedBy::Watchdog | ClosedBy::AutoPolicy if e.is_lost() => {
                self.timers
                    .set(Timer::Dialog(id.to_owned()), Some(now.instant));
            }
            // Chromium will not (or did not) answer it: only a navigation
            // frees its page, and neither the policy nor the watchdog waits.
            ClosedBy::Watchdog | ClosedBy::AutoPolicy => self.release(&[id.to_owned()], by),
            _ => {
                if let Some(ticket) = ticket {
                    let error = match self.dialogs.get(id) {
                        Some(d) if refused => super::not_answerable(&d.view),
                        _ => answer_error(id, refused, &e),
                    };
                    self.out.push(Output::AnswerDone {
                        ticket,
                        result: Box::new(Err(error)),
                    });
                }
                // An agent's answer failed under an auto policy (no watchdog
                // armed): the policy releases a page Chromium will not answer for.
                if refused && self.auto_action(&dialog_type).is_some() {
                    self.release(&[id.to_owned()], ClosedBy::AutoPolicy);
                }
            }
        }
    }

    /// The reply to an answer whose dialog closed while it was in flight. A
    /// `-32602` means someone else (another CDP client, a proxy) answered
    /// first: the record says `remote`. Either way the dialog is gone, which
    /// is what the agent asked for, so its answer finishes `Ok`.
    fn answer_replied_after_close(&mut self, id: &str, result: &Result<Value, ReplyError>) {
        let dialogs = &mut self.dialogs;
        let Some(pos) = dialogs
            .answers_after_close
            .iter()
            .position(|(c, _)| c.dialog.id == id)
        else {
            return;
        };
        let Some((mut closed, answering)) = dialogs.answers_after_close.remove(pos) else {
            return;
        };
        if !answering.spent {
            // Its dialog closed some other way (a navigation, Chromium for a
            // newer dialog) and the answer landed nowhere: not the agent's.
            if let Some(ticket) = answering.ticket {
                self.out.push(Output::AnswerDone {
                    ticket,
                    result: Box::new(Err(DialogError::ClosedBefore {
                        id: id.to_owned(),
                        closed_by: closed.closed_by,
                    })),
                });
            }
            return;
        }
        let lost = matches!(result, Err(e) if e.is_code(ERROR_INVALID_PARAMS));
        if lost && closed.closed_by == answering.by {
            // No dialog for the answer: our own navigation closed it, if one
            // was releasing it (the answer counted for nothing), else
            // another client did.
            closed.closed_by = answering
                .navigating_too
                .unwrap_or_else(|| closed_by(CloseCause::LostRace));
            if let Some(r) = dialogs.recent.iter_mut().rev().find(|c| c.dialog.id == id) {
                Arc::make_mut(r).closed_by = closed.closed_by;
            }
            if let (Some(by), Some(ticket)) = (answering.navigating_too, answering.ticket) {
                self.out.push(Output::AnswerDone {
                    ticket,
                    result: Box::new(Err(DialogError::ClosedBefore {
                        id: id.to_owned(),
                        closed_by: by,
                    })),
                });
                return;
            }
        }
        if let Some(ticket) = answering.ticket {
            self.out.push(Output::AnswerDone {
                ticket,
                result: Box::new(Ok(closed)),
            });
        }
    }

    /// A dialog's timer fired: the watchdog (or the policy retrying an
    /// answer lost with the connection) answers it, or releases its page
    /// when Chromium will not answer it.
    pub(super) fn dialog_due(&mut self, id: &str, now: Now) {
        let Some(d) = self.dialogs.pending.iter().find(|d| d.view.id == id) else {
            return;
        };
        let by = self.closer(&d.view.dialog_type);
        if d.view.answerable {
            let action = self
                .auto_action(&d.view.dialog_type)
                .unwrap_or(DialogAction::Dismiss);
            self.start_answer(id, action, None, None, None, by, None, now);
        } else {
            self.release(&[id.to_owned()], by);
        }
    }

    /// Releases a page a dialog keeps blocked: navigates the top frame to
    /// its current URL (Chromium answers `Page.navigate` at once and the
    /// frame is free). A top frame a beforeunload holds answers no
    /// navigation of its own: an OOPIF of it is navigated instead, or, with
    /// none (or once a releasing navigation went unanswered), its tab is
    /// closed ([`State::release_by_closing`]). The dialogs close when the
    /// release is confirmed, not before: one lost with the connection is
    /// tried again.
    pub(super) fn release(&mut self, ids: &[String], by: ClosedBy) {
        for id in ids {
            if let Some(d) = self.dialogs.get_mut(id) {
                d.releasing = Some(by);
            }
        }
        // A top frame held by a beforeunload answers no navigation of its
        // own; navigating one of its OOPIFs frees it (CDP facts), unless
        // the beforeunload was orphaned by a reconnect: then only closing
        // the tab does.
        let beforeunload = self.dialogs.pending.iter().find(|d| {
            d.view.dialog_type == DialogType::Beforeunload
                && d.frame_id.as_ref() == self.frames.top()
        });
        let held_by_beforeunload = beforeunload.is_some();
        let orphaned = beforeunload.is_some_and(|d| d.orphaned);
        let oopif = (held_by_beforeunload && !orphaned)
            .then(|| self.oopif_free_of_dialogs())
            .flatten();
        if ((held_by_beforeunload && oopif.is_none()) || self.dialogs.unnavigable)
            && let Some(target) = self.targets.top_target().cloned()
        {
            self.release_by_closing(target, by);
            return;
        }
        let (frame, session) = match oopif {
            Some((frame, session)) => (Some(frame), Some(session)),
            None => (
                self.frames.top().cloned(),
                self.targets.top_session().cloned(),
            ),
        };
        let url = match frame.as_ref().and_then(|f| self.frames.url_of(f)) {
            Some(u) if !u.is_empty() => u,
            _ => match self.frames.top_url().as_str() {
                "" => "about:blank".to_owned(),
                u => u.to_owned(),
            },
        };
        if let Some(f) = frame {
            self.navs.release(f, by);
        }
        self.out.push(Command::output(
            session.into(),
            "Page.navigate",
            json!({"url": url}),
            Purpose::Release,
            Some(RELEASE_REPLY_TIMEOUT),
            0,
        ));
    }

    /// Releases a page whose top frame a beforeunload holds and that has
    /// no OOPIF to navigate: closes its tab (`Target.closeTarget`), the one
    /// command that frees it. Chromium never answers a navigation of that
    /// frame (`Page.navigate`, `reload`) until the beforeunload is answered,
    /// and after a reconnect it will not answer the beforeunload either
    /// (CDP facts: an orphaned beforeunload). Every dialog of the page goes
    /// with the tab, released by `by` ([`State::close_all_dialogs`]); the
    /// tab coordinator makes another tab current, or opens one.
    fn release_by_closing(&mut self, target: TargetId, by: ClosedBy) {
        for d in &mut self.dialogs.pending {
            d.releasing.get_or_insert(by);
        }
        self.out.send(
            Target::Browser,
            "Target.closeTarget",
            json!({ "targetId": target.0 }),
            Purpose::Release,
        );
    }

    /// An OOPIF's frame and session whose renderer no pending dialog
    /// blocks (one a dialog blocks answers no navigation either).
    fn oopif_free_of_dialogs(&self) -> Option<(FrameId, SessionId)> {
        self.targets
            .session_ids()
            .filter(|s| !self.targets.is_top(Some(s)))
            .filter(|s| !self.renderer_blocked(s))
            .filter_map(|s| Some((self.targets.frame_of(s)?, s.clone())))
            .min_by(|a, b| a.1.0.cmp(&b.1.0))
    }

    /// The reply to our releasing `Page.navigate`.
    pub(super) fn release_replied(&mut self, result: Result<Value, ReplyError>, now: Now) {
        let releasing: Vec<(String, ClosedBy)> = self
            .dialogs
            .pending
            .iter()
            .filter_map(|d| d.releasing.map(|by| (d.view.id.clone(), by)))
            .collect();
        match result {
            Ok(_) => {
                for (id, by) in releasing {
                    self.close_dialog(&id, CloseCause::Released(by), None, None, now);
                }
                self.unblock_page();
            }
            Err(e) => {
                if let Some(top) = self.frames.top().cloned() {
                    self.navs.release_failed(&top);
                }
                // Lost with the connection: again once connected. No reply
                // by the deadline: the frame answers no navigation, and we
                // have waited already; again at once, by closing the tab.
                // Refused: again after another watchdog period.
                // A slow page's navigation also misses the deadline, but
                // its dialogs closed as it started: with nothing left to
                // release, the frame is not marked.
                let unanswered = matches!(e, ReplyError::Timeout { .. })
                    && (!releasing.is_empty() || self.page_blocked());
                self.dialogs.unnavigable |= unanswered;
                let at = if e.is_lost() || unanswered {
                    Some(now.instant)
                } else {
                    now.instant.checked_add(self.opts.dialog_timeout)
                };
                for (id, _) in releasing {
                    if let Some(d) = self.dialogs.get_mut(&id) {
                        d.releasing = None;
                    }
                    self.timers.set(Timer::Dialog(id), at);
                }
                if self.page_blocked() {
                    self.timers.set(Timer::PageBlockedRelease, at);
                }
            }
        }
    }

    /// After a reconnect, the renderer of `session` was heard from: its
    /// `Page.enable` answered (`free`: no dialog blocks it) or is overdue.
    /// The dialogs kept across the drop on that renderer closed while we
    /// were away (`closed_by:"remote"`) or are still open; either way the
    /// watchdog and the policy may act again. A dialog whose frame no
    /// session reports any more waits until every session re-attached at
    /// that time has been heard from: its frame is gone, and so is it.
    pub(super) fn recheck_carried(&mut self, session: &SessionId, free: bool, now: Now) {
        let top = self.targets.is_top(Some(session));
        let mine: Vec<String> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| d.carried)
            .filter(|d| {
                match d.frame_id.as_ref().and_then(|f| self.frames.session_of(f)) {
                    Some(s) => s == session,
                    // A blocked top answers no frame tree: unknown is not gone.
                    None => top && !free,
                }
            })
            .map(|d| d.view.id.clone())
            .collect();
        for id in &mine {
            self.settle_carried(id, free, now);
        }
        let waiting = self
            .timers
            .any(|t| matches!(t, Timer::PageEnableGrace | Timer::OopifEnableGrace(_)));
        if waiting {
            return;
        }
        let rest: Vec<(String, bool)> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| d.carried)
            .map(|d| {
                let gone = d
                    .frame_id
                    .as_ref()
                    .and_then(|f| self.frames.session_of(f))
                    .is_none();
                (d.view.id.clone(), gone)
            })
            .collect();
        for (id, gone) in rest {
            self.settle_carried(&id, gone, now);
        }
    }

    /// Whether a JS dialog we know blocks the renderer of `session`: one in
    /// a frame that session reports (or, for the page's session, in a frame
    /// no session reports). A file chooser blocks nothing, nor does an
    /// iframe's HTTP challenge; the top document's holds the tab's commands
    /// (see [`crate::supervisor::snapshot::Snapshot::blocks_call_on`]).
    pub(super) fn renderer_blocked(&self, session: &SessionId) -> bool {
        let top = self.targets.is_top(Some(session));
        self.dialogs.pending.iter().any(|d| {
            d.view.holds_renderer()
                && match d.frame_id.as_ref().and_then(|f| self.frames.session_of(f)) {
                    Some(s) => s == session,
                    None => top,
                }
        })
    }

    /// The agent asks to release the page from the dialogs Chromium will not
    /// answer (`answerable: false`): navigates as [`State::release`] does,
    /// on the agent's behalf. Returns how many dialogs that releases.
    pub fn release_unanswerable(&mut self) -> usize {
        let ids: Vec<String> = self
            .dialogs
            .pending
            .iter()
            .filter(|d| !d.view.answerable && d.answering.is_none() && d.releasing.is_none())
            .map(|d| d.view.id.clone())
            .collect();
        if !ids.is_empty() {
            self.release(&ids, ClosedBy::Agent);
        }
        ids.len()
    }

    /// Ends a carried dialog's re-check: `closed` while we were away, or
    /// still open (its timers count again).
    fn settle_carried(&mut self, id: &str, closed: bool, now: Now) {
        let top = self.frames.top().cloned();
        let Some(d) = self.dialogs.get_mut(id) else {
            return;
        };
        d.carried = false;
        let at_drop = d.answer_at_drop.take();
        if !closed && d.view.dialog_type != DialogType::FileChooser {
            // Still open, but Chromium answers `-32602` for a dialog it
            // showed before this session existed (CDP facts): only
            // navigating releases it, and the snapshot says so now.
            let view = Arc::make_mut(&mut d.view);
            view.answerable = false;
            // A top frame's beforeunload: its release closes the tab (see
            // [`State::release`]), and the agent is told so.
            view.only_closing_releases =
                view.dialog_type == DialogType::Beforeunload && d.frame_id.as_ref() == top.as_ref();
            d.orphaned = true;
        }
        if let (true, Some(a)) = (closed, at_drop) {
            // Closed while we were away, and our answer was on the wire at
            // the drop: it reached Chromium (an answer that did not would
            // have left the renderer blocked and this re-check silent).
            let user_input = if a.accept { a.prompt_text } else { None };
            self.close_dialog(
                id,
                CloseCause::Answered(a.by),
                Some(a.accept),
                user_input,
                now,
            );
        } else if closed {
            let answering = d.answering.as_ref().map(|a| a.by);
            let cause = CloseCause::ClosedEvent {
                answering,
                navigation: None,
            };
            self.close_dialog(id, cause, None, None, now);
        }
    }

    /// `Page.enable` on `session` (the page's, or an OOPIF's that was there
    /// when we attached) went unanswered: with no dialog known in its
    /// frames, a dialog opened before we attached blocks it. Navigating the
    /// top frame releases it either way (an OOPIF's document goes with its
    /// parent's).
    pub(super) fn page_enable_overdue(&mut self, session: &SessionId, now: Now) {
        self.recheck_carried(session, false, now);
        let Some(own) = self.targets.frame_of(session) else {
            return;
        };
        let frames = if self.targets.is_top(Some(session)) {
            // Its renderer is the page's: any dialog known there explains it.
            None
        } else {
            Some(self.frames.of_session(session))
        };
        let explained = self.dialogs.views().any(|d| match &frames {
            None => true,
            Some(mine) => d
                .frame_id
                .as_deref()
                .is_some_and(|f| f == own.0 || mine.iter().any(|m| m.0 == f)),
        });
        if explained || self.unseen_blocks.contains(&own) {
            return;
        }
        let first = self.unseen_blocks.is_empty();
        self.unseen_blocks.push(own);
        if !first {
            // Already blocked: the release armed then releases this one too.
            return;
        }
        // The blocking dialog's type is unknown: released at once only when
        // no type waits for an answer.
        let mut wait = match self.opts.policy.as_uniform() {
            Some(DialogPolicy::AutoDismiss | DialogPolicy::AutoAccept) => std::time::Duration::ZERO,
            _ => self.opts.dialog_timeout,
        };
        if frames.is_some() {
            // An OOPIF: the top is usable meanwhile, and a renderer busy
            // for seconds looks the same as a blocked one.
            wait = wait.max(OOPIF_RELEASE_MIN);
        }
        self.timers
            .set(Timer::PageBlockedRelease, now.instant.checked_add(wait));
        self.out.notice(Notice::PageBlocked);
    }

    /// The page is free again (a closed event, a new top document, our
    /// release went through).
    pub(super) fn unblock_page(&mut self) {
        self.unseen_blocks.clear();
        self.timers.cancel(&Timer::PageBlockedRelease);
    }

    /// `frame` is free again (its session answered `Page.enable`, or went
    /// away); the page is, once no other frame is blocked.
    pub(super) fn unblock_frame(&mut self, frame: &FrameId) {
        self.unseen_blocks.retain(|f| f != frame);
        if self.unseen_blocks.is_empty() {
            self.timers.cancel(&Timer::PageBlockedRelease);
        }
    }

    /// No session is waited on for its `Page.enable` any more (the
    /// connection or the page went away).
    pub(super) fn cancel_enable_graces(&mut self) {
        self.timers.cancel(&Timer::PageEnableGrace);
        self.timers
            .cancel_where(|t| matches!(t, Timer::OopifEnableGrace(_)));
    }
}

fn describe(d: &Dialog) -> String {
    describe_view(&d.view)
}

/// A pending dialog as [`DialogError::Ambiguous`] lists it: `d-N (type "first 40 chars")`.
pub(super) fn describe_view(d: &PendingDialog) -> String {
    let msg: String = d.message.chars().take(40).collect();
    format!("{} ({} {:?})", d.id, d.dialog_type, msg)
}

/// What an agent's (or a human's) failed answer to dialog `id` tells them:
/// Chromium's refusal (`refused`: only a navigation frees the page), or the
/// error, with what to check when the socket took the reply.
fn answer_error(id: &str, refused: bool, e: &ReplyError) -> DialogError {
    if refused {
        DialogError::NotAnswerable { id: id.to_owned() }
    } else if e.is_lost() {
        DialogError::Cdp {
            id: id.to_owned(),
            error: format!(
                "{e}; the answer may or may not have reached the page: once reconnected, browser_snapshot shows whether the dialog is still pending (recent_dialogs if it closed)"
            ),
        }
    } else {
        DialogError::Cdp {
            id: id.to_owned(),
            error: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_by_from_each_cause() {
        use ClosedBy::*;
        let cases = [
            (CloseCause::Answered(Agent), Agent),
            (CloseCause::Released(Watchdog), Watchdog),
            (CloseCause::Released(AutoPolicy), AutoPolicy),
            (
                CloseCause::ClosedEvent {
                    answering: Some(AutoPolicy),
                    navigation: Some(Agent),
                },
                AutoPolicy,
            ),
            (
                CloseCause::ClosedEvent {
                    answering: None,
                    navigation: Some(Agent),
                },
                Agent,
            ),
            (
                CloseCause::ClosedEvent {
                    answering: None,
                    navigation: None,
                },
                Remote,
            ),
            (CloseCause::Navigation(None), Remote),
            (CloseCause::Navigation(Some(Watchdog)), Watchdog),
            (CloseCause::LostRace, Remote),
            (CloseCause::Replaced, Remote),
            (CloseCause::PageGone, Remote),
        ];
        for (cause, want) in cases {
            assert_eq!(closed_by(cause), want, "{cause:?}");
        }
    }
}
