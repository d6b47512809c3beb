//! Human-readable rendering of snapshots and notices for the CLI.

use crate::supervisor::snapshot::{ClosedDialog, FrameTreeView, PendingDialog};
use crate::supervisor::state::Notice;
use std::collections::HashMap;

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
    let mut out = format!("top    {}  [{}]\n", top.url, short(&top.frame_id));
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
                c.url,
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
    let s: String = id.chars().take(8).collect();
    if id.chars().count() > 8 {
        format!("{s}…")
    } else {
        s
    }
}

/// `confirm "Proceed?"`.
pub fn dialog_line(d: &PendingDialog) -> String {
    let msg: String = d.message.chars().take(60).collect();
    format!("{} {} {:?}", d.id, d.dialog_type, msg)
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
        .map(|t| format!(" with {t:?}"))
        .unwrap_or_default();
    format!("{how}{input} by {}", c.closed_by.as_str())
}

/// One notice as a line for people.
pub fn notice_line(n: &Notice) -> String {
    match n {
        Notice::DialogOpened { dialog } => format!(
            "dialog opened   {}  in frame {}  ({})",
            dialog_line(dialog),
            short(dialog.frame_id.as_deref().unwrap_or("?")),
            dialog.url
        ),
        Notice::DialogClosed { dialog } => format!(
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
            "frame navigated [{}]{} {url}",
            short(frame_id),
            if *is_oopif { " OOPIF" } else { "" }
        ),
        Notice::FrameDetached { frame_id } => format!("frame detached  [{}]", short(frame_id)),
        Notice::ConsoleError { error } => format!(
            "console {:<9} {}{}",
            error.level,
            error.text,
            error
                .url
                .as_deref()
                .map(|u| format!("  ({u})"))
                .unwrap_or_default()
        ),
        Notice::PageBlocked => {
            "page blocked    by a dialog opened before we attached; navigate to release it".into()
        }
        Notice::PageLoaded { url, .. } => format!("page loaded     {url}"),
        Notice::Connection { status } => format!(
            "connection      {}",
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        Notice::PageGone { reason } => format!("page gone       {reason}"),
        Notice::TabOpened {
            target_id,
            url,
            opener_target_id,
        } => format!(
            "tab opened      [{}]{} {url}",
            short(target_id),
            opener_target_id
                .as_deref()
                .map(|o| format!(" by [{}]", short(o)))
                .unwrap_or_default()
        ),
        Notice::TabClosed {
            target_id,
            current_target_id,
        } => format!(
            "tab closed      [{}]{}",
            short(target_id),
            current_target_id
                .as_deref()
                .map(|c| format!("  current now [{}]", short(c)))
                .unwrap_or_default()
        ),
        Notice::TabCrashed { target_id } => format!(
            "tab crashed     [{}]  browser_navigate reloads it",
            short(target_id)
        ),
    }
}
