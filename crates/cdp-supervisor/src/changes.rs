//! What changed since an agent's previous tool result (DESIGN "Every prompt
//! the browser raises, every change the agent missed"): every tool result
//! carries `changes` when something happened since that MCP session's
//! previous result, so an agent whose host drops resource notifications
//! still learns, in its next call, that a policy dismissed a `confirm()` or
//! a popup opened.
//!
//! Pure: [`Seen`] is what a session was last shown, [`Seen::diff`] compares
//! it with a snapshot. Each change is reported once per session.

use crate::supervisor::snapshot::Snapshot;
use crate::supervisor::state::downloads::DownloadState;
use crate::supervisor::state::ellipsize;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

/// Longest dialog message a change repeats (the snapshot has it whole).
const MESSAGE_MAX_CHARS: usize = 80;

/// What one session's previous tool result covered.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Dialogs reported as opened (pending or closed since).
    dialogs: HashSet<String>,
    /// Dialogs reported as closed.
    closed: HashSet<String>,
    /// The supervised tabs, and the current one's id and url.
    tabs: HashMap<String, String>,
    current: Option<(String, String)>,
    /// The newest blocked navigation reported (its time, Unix seconds).
    blocked_at: f64,
    /// Downloads reported, with the state they were reported in.
    downloads: HashMap<String, DownloadState>,
    /// The supervisor's reconnects as last reported.
    reconnects: u64,
}

/// What the result itself already tells (not repeated in `changes`).
#[derive(Debug, Default)]
pub struct Told {
    /// Tab ids in the result's own `tabs_opened`.
    pub tabs_opened: Vec<String>,
    /// The result is `browser_navigate`'s, whose `url` says where the tab went.
    pub navigated: bool,
    /// Download ids in the result's own `downloads_started`.
    pub downloads_started: Vec<String>,
}

impl Seen {
    /// What `snap` shows, all of it counted as seen (a session's first result).
    pub fn of(snap: &Snapshot) -> Seen {
        Seen::default().diff(snap, &Told::default()).1
    }

    /// The changes between what was seen and `snap` — `{dialogs_opened,
    /// dialogs_closed, tabs_opened, tabs_closed, navigated,
    /// downloads, blocked_navigations}`, each key only when non-empty; `None` when
    /// nothing changed — and what is seen after it.
    pub fn diff(&self, snap: &Snapshot, told: &Told) -> (Option<Value>, Seen) {
        let mut seen = Seen {
            blocked_at: self.blocked_at,
            reconnects: snap.reconnects,
            ..Seen::default()
        };
        let (opened, closed) = self.dialog_changes(snap, &mut seen);
        let (tabs_opened, tabs_closed) = self.tab_changes(snap, told, &mut seen);
        let blocked = self.blocked_since(snap, &mut seen);
        let downloads = self.download_changes(snap, told, &mut seen);
        let navigated = self.navigated_to(&seen, told);
        let mut out = Map::new();
        let mut put = |k: &str, v: Vec<Value>| {
            if !v.is_empty() {
                out.insert(k.into(), Value::Array(v));
            }
        };
        put("dialogs_opened", opened);
        put("dialogs_closed", closed);
        put("tabs_opened", tabs_opened);
        put("tabs_closed", tabs_closed);
        put("downloads", downloads);
        put("blocked_navigations", blocked);
        if let Some(url) = navigated {
            out.insert("navigated".into(), json!(url));
        }
        if snap.reconnects > self.reconnects {
            // The connection dropped and came back (with `isolation:
            // context`, in a new context: the tabs before it are gone).
            out.insert(
                "reconnected".into(),
                json!(snap.reconnects - self.reconnects),
            );
        }
        ((!out.is_empty()).then_some(Value::Object(out)), seen)
    }

    /// Dialogs opened and closed since: every dialog the snapshot lists,
    /// pending or recent, is seen. A dialog both pending before and now gone
    /// from every list (past the last 20) is not reported: the snapshot
    /// keeps no trace of it.
    fn dialog_changes(&self, snap: &Snapshot, seen: &mut Seen) -> (Vec<Value>, Vec<Value>) {
        let mut opened = Vec::new();
        for d in &snap.pending_dialogs {
            seen.dialogs.insert(d.id.clone());
            if !self.dialogs.contains(&d.id) {
                opened.push(dialog_summary(d));
            }
        }
        let mut closed = Vec::new();
        for c in &snap.recent_dialogs {
            let d = &c.dialog;
            seen.dialogs.insert(d.id.clone());
            seen.closed.insert(d.id.clone());
            if !self.dialogs.contains(&d.id) {
                // Opened and closed between two results (a policy's answer).
                opened.push(dialog_summary(d));
            }
            if !self.closed.contains(&d.id) {
                let mut v = json!({"id": d.id, "type": d.dialog_type, "closed_by": c.closed_by});
                if let Some(a) = c.accepted {
                    v["accepted"] = json!(a);
                }
                closed.push(v);
            }
        }
        (opened, closed)
    }

    /// Tabs opened (unless the result itself says so) and closed since; the
    /// tabs and the current one are seen.
    fn tab_changes(
        &self,
        snap: &Snapshot,
        told: &Told,
        seen: &mut Seen,
    ) -> (Vec<Value>, Vec<Value>) {
        let mut opened = Vec::new();
        for t in &snap.tabs {
            seen.tabs.insert(t.target_id.clone(), t.url.to_string());
            if t.current {
                seen.current = Some((t.target_id.clone(), t.url.to_string()));
            }
            if !self.tabs.contains_key(&t.target_id) && !told.tabs_opened.contains(&t.target_id) {
                let mut v = json!({"target_id": t.target_id, "url": t.url.as_str()});
                if let Some(o) = &t.opener_target_id {
                    v["opener_target_id"] = json!(o);
                }
                opened.push(v);
            }
        }
        let closed = self
            .tabs
            .iter()
            .filter(|(id, _)| !seen.tabs.contains_key(*id))
            .map(|(id, url)| json!({"target_id": id, "url": url}))
            .collect();
        (opened, closed)
    }

    /// Navigations blocked after the newest one reported.
    fn blocked_since(&self, snap: &Snapshot, seen: &mut Seen) -> Vec<Value> {
        let mut blocked = Vec::new();
        for b in &snap.blocked_navigations {
            if b.at > self.blocked_at {
                blocked.push(json!({"url": b.url, "rule": b.rule}));
                seen.blocked_at = seen.blocked_at.max(b.at);
            }
        }
        blocked
    }

    /// Downloads not reported in their present state. A download is told
    /// when it begins and again when it ends (its start may be the result's
    /// own `downloads_started`).
    fn download_changes(&self, snap: &Snapshot, told: &Told, seen: &mut Seen) -> Vec<Value> {
        let mut downloads = Vec::new();
        for d in &snap.downloads {
            seen.downloads.insert(d.id.clone(), d.state);
            let told_already = self.downloads.get(&d.id) == Some(&d.state)
                || (d.state == DownloadState::InProgress && told.downloads_started.contains(&d.id));
            if !told_already {
                let mut v = json!({"id": d.id, "suggested_filename": d.suggested_filename, "state": d.state, "received_bytes": d.received_bytes});
                if let Some(p) = &d.path {
                    v["path"] = json!(p);
                }
                if let Some(n) = &d.note {
                    v["note"] = json!(n);
                }
                downloads.push(v);
            }
        }
        downloads
    }

    /// Where the current tab went, when it is the same tab at a new,
    /// non-empty URL and the result does not say so itself.
    fn navigated_to(&self, seen: &Seen, told: &Told) -> Option<String> {
        match (&self.current, &seen.current) {
            (Some((was_tab, was)), Some((tab, now)))
                if was_tab == tab && was != now && !now.is_empty() && !told.navigated =>
            {
                Some(now.clone())
            }
            _ => None,
        }
    }
}

/// A dialog as a change names it: id, type, its message cut to
/// [`MESSAGE_MAX_CHARS`], and its tab when known.
fn dialog_summary(d: &crate::supervisor::snapshot::PendingDialog) -> Value {
    let mut v = json!({"id": d.id, "type": d.dialog_type, "message": ellipsize(&d.message, MESSAGE_MAX_CHARS)});
    if let Some(t) = &d.target_id {
        v["target_id"] = json!(t);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdp::protocol::DialogType;
    use crate::supervisor::snapshot::{ClosedBy, ClosedDialog, PendingDialog, TabView};
    use std::sync::Arc;

    fn dialog(id: &str) -> PendingDialog {
        PendingDialog {
            id: id.into(),
            dialog_type: DialogType::Confirm,
            message: "Pay?".into(),
            default_prompt: String::new(),
            opened_at: 0.0,
            frame_id: None,
            url: String::new(),
            answerable: true,
            mode: None,
            target_id: Some("T".into()),
            http_auth: None,
            answered_at_once: false,
            only_closing_releases: false,
        }
    }

    fn tab(id: &str, url: &str, current: bool) -> Arc<TabView> {
        Arc::new(TabView {
            target_id: id.into(),
            url: url.into(),
            title: "".into(),
            opener_target_id: None,
            current,
            pending_dialogs: 0,
            crashed: false,
            action_navigation: None,
        })
    }

    #[test]
    fn each_change_is_told_once_and_what_the_result_says_is_not_repeated() {
        let mut snap = Snapshot {
            tabs: vec![tab("T", "http://a/", true)].into_iter().collect(),
            ..Snapshot::default()
        };
        let seen = Seen::of(&snap);
        assert_eq!(seen.diff(&snap, &Told::default()).0, None);
        // A confirm a policy answered between two calls, a popup, a navigation.
        snap.recent_dialogs = vec![Arc::new(ClosedDialog {
            dialog: dialog("d-1"),
            closed_at: 1.0,
            closed_by: ClosedBy::AutoPolicy,
            accepted: Some(false),
            user_input: None,
            user_input_truncated: false,
        })]
        .into_iter()
        .collect();
        snap.tabs = vec![tab("T", "http://a/next", true), tab("P", "", false)]
            .into_iter()
            .collect();
        let (c, seen) = seen.diff(&snap, &Told::default());
        let c = c.expect("changes");
        assert_eq!(c["dialogs_opened"][0]["id"], "d-1");
        assert_eq!(c["dialogs_closed"][0]["closed_by"], "auto_policy");
        assert_eq!(c["tabs_opened"][0]["target_id"], "P");
        assert_eq!(c["navigated"], "http://a/next");
        assert_eq!(seen.diff(&snap, &Told::default()).0, None, "told once");
        // A tab the result lists itself; a closed tab.
        snap.tabs = vec![tab("T", "http://a/next", true), tab("Q", "", false)]
            .into_iter()
            .collect();
        let told = Told {
            tabs_opened: vec!["Q".into()],
            ..Told::default()
        };
        let c = seen.diff(&snap, &told).0.expect("P closed");
        assert!(c.get("tabs_opened").is_none(), "{c}");
        assert_eq!(c["tabs_closed"][0]["target_id"], "P");
    }
}
