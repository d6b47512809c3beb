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
                "unknown dialog_id {}; pending dialogs: {}",
                quoted(id),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
            DialogError::AlreadyClosed {
                id,
                closed_by,
                closed_at,
                before_s,
            } => write!(
                f,
                "dialog {id} is no longer pending: it closed {before_s:.1} s before this answer (closed_at {closed_at:.3}, closed_by: {}); nothing was answered; see recent_dialogs",
                closed_by.as_str()
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
            DialogError::OnlyClosingReleases { id, target_id } => write!(
                f,
                "dialog {id} cannot be answered: Chromium says no dialog is showing, yet this beforeunload keeps its tab's page blocked, and that page answers no navigation of its own; only closing the tab releases it (browser_tabs close{}; the watchdog does that after dialog_timeout_s)",
                target_id
                    .as_ref()
                    .map(|t| format!(" with target_id {t}"))
                    .unwrap_or_default()
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
                "dialog {id} closed before this answer reached it (closed_by: {}: another CDP client answered it, a navigation left it, its renderer crashed, or Chromium closed it for a newer dialog); nothing was answered; see recent_dialogs",
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

/// The most of one argument an error quotes back (DESIGN "Security": what
/// the agent sends is capped where it is echoed; a 2 MB URL in an error
/// costs the agent's context and says nothing more than its start).
pub const ECHO_MAX_CHARS: usize = 200;

/// `s` as an error quotes it: in double quotes, escaped, its first
/// [`ECHO_MAX_CHARS`] characters, and when cut, how long it was.
///
/// ```
/// use cdp_supervisor::supervisor::wording::quoted;
/// assert_eq!(quoted("a\"b"), r#""a\"b""#);
/// let long = quoted(&"x".repeat(2_000_000));
/// assert!(long.len() < 260 && long.ends_with("… (2000000 chars)"), "{long}");
/// ```
pub fn quoted(s: &str) -> String {
    match s.char_indices().nth(ECHO_MAX_CHARS) {
        None => format!("{s:?}"),
        Some((cut, _)) => format!("{:?}… ({} chars)", &s[..cut], s.chars().count()),
    }
}

/// `s` as an error shows it unquoted (a URL, a ref): its first
/// [`ECHO_MAX_CHARS`] characters, and when cut, how long it was.
///
/// ```
/// use cdp_supervisor::supervisor::wording::cut;
/// assert_eq!(cut("e12"), "e12");
/// assert!(cut(&"u".repeat(10_000)).ends_with("… (10000 chars)"));
/// ```
pub fn cut(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(ECHO_MAX_CHARS) {
        None => s.into(),
        Some((at, _)) => format!("{}… ({} chars)", &s[..at], s.chars().count()).into(),
    }
}

/// A number as an error prints it back: as given when short, else in
/// exponent form (`1e308`, which `{}` would print as 309 digits).
///
/// ```
/// use cdp_supervisor::supervisor::wording::number;
/// assert_eq!(number(2.5), "2.5");
/// assert_eq!(number(1e308), "1e308");
/// assert_eq!(number(-1e-300), "-1e-300");
/// ```
pub fn number(x: f64) -> String {
    /// Longer than this, the plain form is mostly zeros.
    const PLAIN_MAX_CHARS: usize = 24;
    let plain = x.to_string();
    if plain.len() <= PLAIN_MAX_CHARS {
        plain
    } else {
        format!("{x:e}")
    }
}

/// An error text from a parser that quotes what it read (serde's
/// `invalid type: string "…"`, `unknown field \`…\``, `floating point
/// \`1000…0.0\``): every quoted part cut to [`ECHO_MAX_CHARS`], every
/// long number in exponent form.
///
/// ```
/// use cdp_supervisor::supervisor::wording::capped_quotes;
/// let long = format!("invalid type: string \"{}\", expected a boolean", "y".repeat(5000));
/// let short = capped_quotes(&long);
/// assert!(short.len() < 300 && short.ends_with(", expected a boolean"), "{short}");
/// let num = format!("invalid type: floating point `{}.0`, expected u32", "1".to_owned() + &"0".repeat(308));
/// assert_eq!(capped_quotes(&num), "invalid type: floating point `1e308`, expected u32");
/// ```
pub fn capped_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * ECHO_MAX_CHARS));
    let mut rest = text;
    while let Some(open) = rest.find(['"', '`']) {
        out.push_str(&rest[..open]);
        let q = rest.as_bytes()[open] as char;
        let body_start = open + 1;
        // The closing quote: the next one not escaped by a backslash.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in rest[body_start..].char_indices() {
            match c {
                '\\' if q == '"' && !escaped => escaped = true,
                c if c == q && !escaped => {
                    end = Some(body_start + i);
                    break;
                }
                _ => escaped = false,
            }
        }
        let Some(end) = end else {
            // Unbalanced (an apostrophe-like use): left as it is.
            out.push_str(&rest[open..]);
            return out;
        };
        out.push(q);
        out.push_str(&cut_part(&rest[body_start..end]));
        out.push(q);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// One quoted part of [`capped_quotes`]: a long number in exponent form,
/// else at most [`ECHO_MAX_CHARS`] characters.
fn cut_part(part: &str) -> String {
    if let Ok(x) = part.parse::<f64>()
        && part.len() > ECHO_MAX_CHARS / 8
    {
        return number(x);
    }
    cut(part).into_owned()
}
