//! Human-readable rendering of snapshots and notices for the CLI.
//!
//! Page text (dialog messages, titles, console text, URLs) is written by
//! whatever page is open: every piece of it goes through [`escape_controls`],
//! so a dialog message cannot move the cursor, clear the screen or fake a
//! line of ours.

use crate::supervisor::snapshot::{ClosedDialog, ConsoleError, FrameTreeView, PendingDialog};
use crate::supervisor::state::Notice;
use crate::supervisor::state::downloads::{DownloadState, DownloadView};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Page text made safe for a terminal: control characters (C0 such as ESC,
/// CR, LF, BS; DEL; C1) become visible escapes (`\x1b`, `\r`, `\n`, `\x7f`,
/// `\u{9b}`), and so do the Unicode controls that reorder or hide text
/// (bidi overrides and isolates, zero-width joiners): `\u{202e}`. A
/// backslash stays as it is. Text with none of these is borrowed as is.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    }
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && unsafe_char(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`escape_controls`] for text of several lines we composed: the line
/// breaks stay, every other control is escaped.
pub fn terminal_safe(s: &str) -> String {
    s.split('\n')
        .map(escape_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The frame tree drawn as a tree, OOPIFs marked:
///
/// ```text
/// main  http://a.test:8000/demo
/// ├─ frame  http://a.test:8000/demo-same
/// └─ OOPIF  http://b.test:8000/demo-oopif  (session 3F2…)
/// ```
pub fn frame_tree(tree: &FrameTreeView) -> String {
    let Some(top) = &tree.top else {
        return "(no frame tree yet)\n".into();
    };
    let mut kids: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, c) in tree.children.iter().enumerate() {
        kids.entry(c.parent_frame_id.as_str()).or_default().push(i);
    }
    let mut out = format!(
        "top    {}  [{}]\n",
        escape_controls(&top.url),
        short(&top.frame_id)
    );
    fn walk(
        tree: &FrameTreeView,
        kids: &HashMap<&str, Vec<usize>>,
        parent: &str,
        prefix: &str,
        out: &mut String,
    ) {
        let Some(list) = kids.get(parent) else { return };
        for (n, &i) in list.iter().enumerate() {
            let c = &tree.children[i];
            let last = n + 1 == list.len();
            let kind = if c.is_oopif { "OOPIF" } else { "frame" };
            let session = c
                .session_id
                .as_deref()
                .map(|s| format!("  session {}", short(s)))
                .unwrap_or_default();
            out.push_str(&format!(
                "{prefix}{} {kind}  {}  [{}]{session}\n",
                if last { "└─" } else { "├─" },
                escape_controls(&c.url),
                short(&c.frame_id)
            ));
            let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
            walk(tree, kids, &c.frame_id, &deeper, out);
        }
    }
    walk(tree, &kids, &top.frame_id, "", &mut out);
    if tree.truncated {
        out.push_str("… (truncated: more frames than the snapshot shows)\n");
    }
    out
}

/// The first 8 characters of a CDP id, enough to tell frames apart.
pub fn short(id: &str) -> String {
    let s: String = escape_controls(id).chars().take(8).collect();
    if id.chars().count() > 8 {
        format!("{s}…")
    } else {
        s
    }
}

/// `d-1 confirm "Proceed?"`: the message's first 60 characters, escaped.
pub fn dialog_line(d: &PendingDialog) -> String {
    let msg: String = d.message.chars().take(60).collect();
    format!(
        "{} {} \"{}\"",
        escape_controls(&d.id),
        escape_controls(d.dialog_type.as_str()),
        escape_controls(&msg)
    )
}

/// How a dialog closed: `accepted by agent`, `dismissed by watchdog`…
pub fn closed_line(c: &ClosedDialog) -> String {
    let how = match c.accepted {
        Some(true) => "accepted",
        Some(false) => "dismissed",
        None => "closed",
    };
    let input = c
        .user_input
        .as_deref()
        .map(|t| format!(" with \"{}\"", escape_controls(t)))
        .unwrap_or_default();
    format!("{how}{input} by {}", c.closed_by.as_str())
}

/// One notice as a line for people.
/// `f` of `v` when there is one, else nothing.
fn beside(v: Option<&str>, f: impl Fn(&str) -> String) -> String {
    v.map(f).unwrap_or_default()
}

/// A console error's line: its level, text and source.
fn console_line(error: &ConsoleError) -> String {
    format!(
        "console {:<9} {}{}",
        escape_controls(&error.level),
        escape_controls(&error.text),
        beside(error.url.as_deref(), |u| format!(
            "  ({})",
            escape_controls(u)
        ))
    )
}

/// A download's last line: how it ended, its name and size, and the note
/// (why it failed, where it was saved).
fn download_done_line(download: &DownloadView) -> String {
    format!(
        "download {:<6} {} {}  {} bytes{}",
        match download.state {
            DownloadState::Completed => "done",
            DownloadState::Canceled => "cancel",
            DownloadState::InProgress => "update",
        },
        download.id,
        escape_controls(&download.suggested_filename),
        download.received_bytes,
        beside(download.note.as_deref(), |n| format!(
            "  ({})",
            escape_controls(n)
        ))
    )
}

/// A new tab: its id, who opened it, its URL.
fn tab_opened_line(target_id: &str, url: &str, opener: Option<&str>) -> String {
    format!(
        "tab opened      [{}]{} {}",
        short(target_id),
        beside(opener, |o| format!(" by [{}]", short(o))),
        escape_controls(url)
    )
}

/// A tab gone, and the tab current after it.
fn tab_closed_line(target_id: &str, current: Option<&str>) -> String {
    format!(
        "tab closed      [{}]{}",
        short(target_id),
        beside(current, |c| format!("  current now [{}]", short(c)))
    )
}

pub fn notice_line(n: &Notice) -> String {
    match n {
        Notice::DialogOpened { dialog } => format!(
            "dialog opened   {}  in frame {}  ({})",
            dialog_line(dialog),
            short(dialog.frame_id.as_deref().unwrap_or("?")),
            escape_controls(&dialog.url)
        ),
        Notice::DialogClosed { dialog, .. } => format!(
            "dialog closed   {}  {}",
            dialog_line(&dialog.dialog),
            closed_line(dialog)
        ),
        Notice::FrameAttached {
            frame_id,
            parent_frame_id,
            ..
        } => format!(
            "frame attached  [{}] under [{}]",
            short(frame_id),
            short(parent_frame_id.as_deref().unwrap_or("?"))
        ),
        Notice::FrameNavigated {
            frame_id,
            url,
            is_oopif,
        } => format!(
            "frame navigated [{}]{} {}",
            short(frame_id),
            if *is_oopif { " OOPIF" } else { "" },
            escape_controls(url)
        ),
        Notice::FrameDetached { frame_id } => format!("frame detached  [{}]", short(frame_id)),
        Notice::ConsoleError { error } => console_line(error),
        Notice::PageBlocked => {
            "page blocked    by a dialog opened before we attached; navigate to release it".into()
        }
        Notice::PageLoaded { url, .. } => format!("page loaded     {}", escape_controls(url)),
        Notice::Connection { status } => format!(
            "connection      {}",
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        Notice::PageGone { reason } => format!("page gone       {}", escape_controls(reason)),
        Notice::DownloadStarted { download } => format!(
            "download began  {} {}  {}",
            download.id,
            escape_controls(&download.suggested_filename),
            escape_controls(&download.url)
        ),
        Notice::DownloadDone { download } => download_done_line(download),
        Notice::TabOpened {
            target_id,
            url,
            opener_target_id,
        } => tab_opened_line(target_id, url, opener_target_id.as_deref()),
        Notice::TabClosed {
            target_id,
            current_target_id,
        } => tab_closed_line(target_id, current_target_id.as_deref()),
        Notice::TabCrashed { target_id } => format!(
            "tab crashed     [{}]  browser_navigate reloads it",
            short(target_id)
        ),
        Notice::NavigationBlocked { navigation } => format!(
            "blocked         {}  ({})",
            escape_controls(&navigation.url),
            escape_controls(&navigation.rule)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdp::protocol::DialogType;

    #[test]
    fn control_characters_in_page_text_are_shown_not_obeyed() {
        assert_eq!(
            escape_controls("plain ünïcode \\ text"),
            "plain ünïcode \\ text"
        );
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("a\u{1b}[2J\rb\nc\td\u{7f}\u{9b}e\u{202e}f\u{0}"),
            "a\\x1b[2J\\rb\\nc\\td\\x7f\\u{9b}e\\u{202e}f\\x00"
        );
        assert_eq!(
            terminal_safe("one\u{1b}]0;x\u{7}\ntwo"),
            "one\\x1b]0;x\\x07\ntwo"
        );
    }

    #[test]
    fn a_dialog_message_cannot_rewrite_the_terminal() {
        let d = PendingDialog {
            id: "d-1".into(),
            dialog_type: DialogType::Alert,
            message: "\u{1b}[1A\u{1b}[2K\rdialog closed   d-1 accepted by agent".into(),
            default_prompt: String::new(),
            opened_at: 0.0,
            frame_id: Some("F".into()),
            url: "http://a.test/\u{1b}[31m".into(),
            answerable: true,
            mode: None,
            target_id: None,
            http_auth: None,
            answered_at_once: false,
            only_closing_releases: false,
        };
        let line = notice_line(&Notice::DialogOpened { dialog: d.into() });
        assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
        assert!(line.contains("\\x1b[1A\\x1b[2K\\rdialog closed"), "{line}");
        assert!(line.contains("http://a.test/\\x1b[31m"), "{line}");
    }
}
