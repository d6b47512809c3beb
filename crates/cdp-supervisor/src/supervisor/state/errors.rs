//! The agent's requests to the core and why they fail, as data. The words
//! the agent reads for them live outside the core, in
//! [`crate::supervisor::wording`].

/// `accept` or `dismiss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialogAction {
    /// OK / leave the page (`Page.handleJavaScriptDialog` with `accept: true`).
    Accept,
    /// Cancel / stay on the page (`accept: false`).
    Dismiss,
}

impl DialogAction {
    /// Parses `"accept"` / `"dismiss"`.
    pub fn parse(s: &str) -> Result<DialogAction, DialogError> {
        match s {
            "accept" => Ok(DialogAction::Accept),
            "dismiss" => Ok(DialogAction::Dismiss),
            other => Err(DialogError::BadAction(other.to_owned())),
        }
    }
}

/// An agent's answer to a dialog (`browser_dialog`).
#[derive(Clone, Debug, PartialEq)]
pub struct DialogRequest {
    /// Accept or dismiss.
    pub action: DialogAction,
    /// The text for a `prompt()`; accepting without it answers with the default text.
    pub prompt_text: Option<String>,
    /// Which dialog; may be left out when exactly one is pending.
    pub dialog_id: Option<String>,
    /// For a `file_chooser` accepted: the files to set on its input
    /// (checked by the caller: Chromium accepts missing paths silently).
    pub files: Option<Vec<String>>,
    /// For an `http_auth` accepted: the username and password sent
    /// (`Fetch.continueWithAuth` `ProvideCredentials`).
    pub login: Option<Login>,
}

/// A username and password an agent answers an `http_auth` dialog with.
#[derive(Clone, Debug, PartialEq)]
pub struct Login {
    /// The username.
    pub username: String,
    /// The password; `Debug` does not show it.
    pub password: crate::supervisor::credentials::Secret,
}

/// Why an answer to a dialog failed.
#[derive(Clone, Debug, PartialEq)]
pub enum DialogError {
    /// No dialog is pending.
    NoDialog,
    /// Several dialogs are pending and no `dialog_id` was given.
    Ambiguous {
        /// The pending dialogs, each as `d-N (type "first 40 chars")`.
        candidates: Vec<String>,
    },
    /// `dialog_id` names no pending dialog.
    UnknownId {
        /// The `dialog_id` given.
        id: String,
        /// The ids of the pending dialogs.
        known: Vec<String>,
    },
    /// `dialog_id` names a dialog that is no longer pending: it is in
    /// `recent_dialogs`, closed before this answer was asked for.
    AlreadyClosed {
        /// The `dialog_id` given.
        id: String,
        /// Who closed it.
        closed_by: crate::supervisor::snapshot::ClosedBy,
        /// When, Unix seconds.
        closed_at: f64,
        /// How long before this answer, in seconds.
        before_s: f64,
    },
    /// The action is neither `accept` nor `dismiss` (the text given).
    BadAction(String),
    /// Chromium refuses to answer this dialog (`-32602 "No dialog is
    /// showing"`) while its frame stays blocked: see
    /// [`crate::supervisor::snapshot::PendingDialog::answerable`].
    NotAnswerable {
        /// The dialog's id.
        id: String,
    },
    /// Like [`DialogError::NotAnswerable`], for a `beforeunload` of the
    /// tab's top document that Chromium showed before a reconnect: that
    /// frame answers no navigation, so only closing the tab releases it
    /// (what the watchdog's release does).
    OnlyClosingReleases {
        /// The dialog's id.
        id: String,
        /// Its tab.
        target_id: Option<String>,
    },
    /// A newer dialog shows on the same page: Chromium answers a page's
    /// most recent dialog whichever one a `Page.handleJavaScriptDialog`
    /// names, so this answer would go to `newer`.
    NotMostRecent {
        /// The dialog's id.
        id: String,
        /// The page's most recent dialog, which must be answered first.
        newer: String,
    },
    /// An answer to this dialog (the agent's, the policy's or the watchdog's) is in flight.
    AlreadyAnswering {
        /// The dialog's id.
        id: String,
    },
    /// `files` was given for a dialog that is not a file chooser.
    FilesNotAllowed {
        /// The dialog's id.
        id: String,
    },
    /// `username`/`password` were given for a dialog that is not an `http_auth`.
    LoginNotAllowed {
        /// The dialog's id.
        id: String,
    },
    /// An `http_auth` was accepted without both `username` and `password`
    /// (and no stored credential applies).
    LoginNeeded {
        /// The dialog's id.
        id: String,
    },
    /// A file chooser was accepted without `files`.
    FilesNeeded {
        /// The dialog's id.
        id: String,
        /// `selectSingle` (one file) or `selectMultiple`.
        mode: String,
    },
    /// The dialog closed before the answer reached it (a navigation, or
    /// Chromium for a newer dialog), and the answer landed nowhere.
    ClosedBefore {
        /// The dialog's id.
        id: String,
        /// Who closed it.
        closed_by: crate::supervisor::snapshot::ClosedBy,
    },
    /// `Page.handleJavaScriptDialog` failed for another reason.
    Cdp {
        /// The dialog's id.
        id: String,
        /// The [`super::ReplyError`], as text.
        error: String,
    },
}

/// Why a frame cannot take a routed CDP call.
#[derive(Clone, Debug, PartialEq)]
pub enum RouteError {
    /// No frame has this id.
    UnknownFrame {
        /// The `frame_id` given.
        frame_id: String,
        /// The known frame ids, oldest first, at most [`super::FRAME_TREE_MAX_ENTRIES`].
        known: Vec<String>,
    },
    /// The frame lives in its parent's process and has no session of its own.
    SameProcess {
        /// The `frame_id` given.
        frame_id: String,
        /// The OOPIF whose session holds it, when not the page's.
        host: Option<String>,
    },
    /// No page session is attached (not yet, or the tab went).
    NoPage,
    /// The tab is known but not attached yet: the connection came back and
    /// it is being re-attached.
    Reattaching {
        /// The tab's target id.
        target_id: String,
    },
    /// No supervised tab has this target id.
    UnknownTab {
        /// The `target_id` given.
        target_id: String,
        /// The supervised tabs' target ids, oldest first.
        known: Vec<String>,
    },
    /// `max_tabs` tabs are supervised already: no new one is opened.
    MaxTabs {
        /// The bound (config `browser.max_tabs`).
        max_tabs: usize,
    },
    /// The tab's renderer crashed (`Inspector.targetCrashed`): a navigation
    /// reloads it, or it can be closed.
    Crashed {
        /// The crashed tab's target id.
        target_id: String,
    },
}

/// Why `id` cannot be answered when it is not pending: how it closed, when
/// it is among the `recent` closed dialogs (an answer that came moments
/// too late must say so, not "unknown"), else unknown among `pending`.
pub fn not_pending<'a>(
    id: &str,
    recent: impl IntoIterator<Item = &'a crate::supervisor::snapshot::ClosedDialog>,
    pending: impl IntoIterator<Item = String>,
    now_unix_s: f64,
) -> DialogError {
    match recent.into_iter().find(|c| c.dialog.id == id) {
        Some(c) => DialogError::AlreadyClosed {
            id: id.to_owned(),
            closed_by: c.closed_by,
            closed_at: c.closed_at,
            before_s: (now_unix_s - c.closed_at).max(0.0),
        },
        None => DialogError::UnknownId {
            id: id.to_owned(),
            known: pending.into_iter().collect(),
        },
    }
}

/// Why pending dialog `d`, which Chromium will not answer, cannot be
/// answered, with what releases its page: navigating, or for an orphaned
/// `beforeunload` of the top document (whose frame answers no navigation)
/// closing its tab.
pub fn not_answerable(d: &crate::supervisor::snapshot::PendingDialog) -> DialogError {
    if d.only_closing_releases {
        DialogError::OnlyClosingReleases {
            id: d.id.clone(),
            target_id: d.target_id.clone(),
        }
    } else {
        DialogError::NotAnswerable { id: d.id.clone() }
    }
}
