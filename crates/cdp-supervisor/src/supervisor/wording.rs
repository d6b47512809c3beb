//! The words an agent reads for the core's errors. The core
//! ([`crate::supervisor::state`]) says what happened as data; how to say it
//! to an agent, and which tool to call next, is decided here.

use crate::supervisor::state::{DialogError, RouteError};
use std::fmt;

impl fmt::Display for DialogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DialogError::NoDialog => f.write_str(
                "no dialog is open; read pending_dialogs in browser_snapshot before answering",
            ),
            DialogError::Ambiguous { candidates } => write!(
                f,
                "{} dialogs are open; pass dialog_id, one of: {}",
                candidates.len(),
                candidates.join(", ")
            ),
            DialogError::UnknownId { id, known } => write!(
                f,
                "unknown dialog_id {id:?}; pending dialogs: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
            DialogError::BadAction(a) => {
                write!(
                    f,
                    "action {a:?} is not allowed; allowed: accept, dismiss, ask_user"
                )
            }
            DialogError::NotAnswerable { id } => write!(
                f,
                "dialog {id} cannot be answered: Chromium says no dialog is showing, yet its frame stays blocked; only navigating the page releases it (call browser_navigate, e.g. to the current URL)"
            ),
            DialogError::NotMostRecent { id, newer } => write!(
                f,
                "dialog {id} cannot be answered while {newer} shows on the same page: Chromium answers a page's most recent dialog, so this answer would answer {newer} instead (nothing was sent); answer {newer} first"
            ),
            DialogError::AlreadyAnswering { id } => {
                write!(f, "dialog {id} is already being answered")
            }
            DialogError::FilesNotAllowed { id } => write!(
                f,
                "files is only for a file_chooser dialog; dialog {id} is not one (answer it with accept or dismiss alone)"
            ),
            DialogError::LoginNotAllowed { id } => write!(
                f,
                "username and password are only for an http_auth dialog; dialog {id} is not one (answer it without them)"
            ),
            DialogError::LoginNeeded { id } => write!(
                f,
                "accepting http_auth {id} needs username and password; dismiss cancels the login (the page then shows the server's 401 response)"
            ),
            DialogError::FilesNeeded { id, mode } => write!(
                f,
                "accepting file_chooser {id} needs files: a list of paths ({}); dismiss leaves the input unchanged",
                if mode == "selectMultiple" {
                    "one or more"
                } else {
                    "exactly one: its mode is selectSingle"
                }
            ),
            DialogError::ClosedBefore { id, closed_by } => write!(
                f,
                "dialog {id} closed before this answer reached it (closed_by: {}: a navigation left it, or Chromium closed it for a newer dialog); nothing was answered; see recent_dialogs",
                closed_by.as_str()
            ),
            DialogError::Cdp { id, error } if id.is_empty() => {
                write!(f, "answering the dialog failed: {error}")
            }
            DialogError::Cdp { id, error } => write!(f, "answering dialog {id} failed: {error}"),
        }
    }
}

impl std::error::Error for DialogError {}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::UnknownFrame { frame_id, known } => write!(
                f,
                "unknown frame_id {frame_id:?}; known frames: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
            RouteError::SameProcess { frame_id, host } => write!(
                f,
                "frame {frame_id} is a same-process iframe with no CDP session of its own; run Runtime.evaluate without frame_id{} and reach it through the iframe element's contentWindow / contentDocument",
                host.as_ref()
                    .map(|h| format!(" (or with frame_id {h}, the OOPIF that hosts it)"))
                    .unwrap_or_default()
            ),
            RouteError::NoPage => f.write_str("no page is attached"),
            RouteError::Reattaching { target_id } => write!(
                f,
                "tab {target_id} is being re-attached after the CDP connection came back; retry in a moment (browser_snapshot's connection and tabs show when it is back)"
            ),
            RouteError::UnknownTab { target_id, known } => write!(
                f,
                "no supervised tab has target_id {target_id:?}; supervised tabs: [{}] (browser_tabs list shows them)",
                known.join(", ")
            ),
            RouteError::MaxTabs { max_tabs } => write!(
                f,
                "{max_tabs} tabs are supervised already (config browser.max_tabs): close one with browser_tabs close first"
            ),
            RouteError::Crashed { target_id } => write!(
                f,
                "the tab {target_id} has crashed (its renderer is gone): browser_navigate reloads it when it is the current tab (browser_tabs select it first), or browser_tabs close closes it"
            ),
        }
    }
}

impl std::error::Error for RouteError {}
