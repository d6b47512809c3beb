//! The snapshot: what the agent reads (`browser_snapshot`) and what `watch`
//! prints. Plain data, serialized with the spec's field names.
//!
//! Times are Unix seconds as `f64` (`opened_at`, `closed_at`, `at`).
//!
//! A snapshot shares its entries with the supervisor's state and with the
//! snapshot published before it: dialogs, console errors and blocked
//! navigations are `Arc`s made once when they happen, a tab's entry is
//! made again only when something it shows changed, and the frame tree is
//! one `Arc` rebuilt only when a frame changes. URLs, origins and titles are
//! [`ArcStr`]s held by the state and replaced only when they change, so an
//! unchanged one is shared too, and compared by address. Publishing one
//! costs a few reference counts, not a copy of every string; `Arc<T>`
//! serializes as `T`, `ArcStr` as a string.

use crate::cdp::protocol::DialogType;
pub use crate::supervisor::origins::BlockedNavigation;
/// The shared string of a URL or a title: one allocation held by the
/// supervisor's state and every snapshot that shows it; reads as a `&str`
/// and compares with `&str` and `String`; two that are one allocation
/// compare equal without reading their bytes.
pub use arcstr::ArcStr;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who closed a dialog (`closed_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedBy {
    /// The agent answered it (`browser_dialog`), or its own navigation released it.
    Agent,
    /// The `auto_dismiss` / `auto_accept` policy answered it.
    AutoPolicy,
    /// The must_respond watchdog dismissed it, or released its page by navigating.
    Watchdog,
    /// Someone else: the page navigated, another CDP client or a proxy answered it.
    Remote,
    /// A human answered it, asked through the agent's client (`browser_dialog`
    /// with `ask_user`: MCP elicitation).
    User,
}

impl ClosedBy {
    /// The `closed_by` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ClosedBy::Agent => "agent",
            ClosedBy::AutoPolicy => "auto_policy",
            ClosedBy::Watchdog => "watchdog",
            ClosedBy::Remote => "remote",
            ClosedBy::User => "user",
        }
    }
}

/// One dialog that blocks its frame now (`pending_dialogs[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingDialog {
    /// `d-1`, `d-2`, … per supervisor.
    pub id: String,
    /// `alert`, `confirm`, `prompt`, `beforeunload` (or an unknown type verbatim).
    #[serde(rename = "type")]
    pub dialog_type: DialogType,
    /// The text, cut at 10 240 chars as Chromium does.
    pub message: String,
    /// The prompt's default text (`""` for other types).
    pub default_prompt: String,
    /// When it opened, Unix seconds.
    pub opened_at: f64,
    /// The frame that opened it (`Page.javascriptDialogOpening.frameId`).
    pub frame_id: Option<String>,
    /// The URL of the document that opened it.
    pub url: String,
    /// `false` when Chromium refuses to answer it (`-32602 "No dialog is
    /// showing"`) although its frame stays blocked: only navigating the page
    /// releases it.
    pub answerable: bool,
    /// For a `file_chooser`: `selectSingle` or `selectMultiple`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The tab that shows it (its page's target id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    /// The policy (or a stored credential) answered it the moment it
    /// opened: a call racing dialogs need not stop for it. Not shown.
    #[serde(skip)]
    pub answered_at_once: bool,
    /// Chromium will not answer it and its page answers no navigation: a
    /// `beforeunload` of the top document left from before a reconnect,
    /// which only closing its tab releases. Not shown (`answerable` is).
    #[serde(skip)]
    pub only_closing_releases: bool,
    /// For an `http_auth`: the challenge (its fields are inlined in the JSON).
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub http_auth: Option<HttpAuthChallenge>,
}

impl PendingDialog {
    /// Whether it was opened for its tab's top document (Chromium's top
    /// frame id is its target id).
    pub fn is_top_document(&self) -> bool {
        self.frame_id.is_some() && self.frame_id == self.target_id
    }

    /// Whether its renderer answers nothing while it is pending: a JS
    /// dialog's does not. A file chooser waits on the page, which runs
    /// on; so does a page whose iframe's login is asked for, but while
    /// the top document's login is, Chromium holds the tab's commands
    /// (verified on Chromium 156: `Runtime.evaluate` on the page being
    /// left got no reply).
    pub fn holds_renderer(&self) -> bool {
        match self.dialog_type {
            DialogType::FileChooser => false,
            DialogType::HttpAuth => self.is_top_document(),
            _ => true,
        }
    }
}

/// What an `http_auth` dialog asks for (`Fetch.authRequired.authChallenge`).
/// Never a password: what was answered is not kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpAuthChallenge {
    /// Who asks: `http://host:port` (the proxy's for a `407`).
    pub origin: String,
    /// The realm the server named (may be empty).
    pub realm: String,
    /// `basic`, `digest`, … as Chromium spells it.
    pub scheme: String,
}

/// One dialog that has closed (`recent_dialogs[]`, the last 20).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedDialog {
    /// The dialog as it was pending (its fields are inlined in the JSON).
    #[serde(flatten)]
    pub dialog: PendingDialog,
    /// When it closed, Unix seconds.
    pub closed_at: f64,
    /// Who closed it.
    pub closed_by: ClosedBy,
    /// Whether it was accepted (`Page.javascriptDialogClosed.result`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    /// The text a prompt returned to the page, when known: its first
    /// [`USER_INPUT_KEPT_CHARS`] characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_input: Option<String>,
    /// `user_input` was cut (the page got it whole).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_input_truncated: bool,
}

/// The most of a prompt's answer `recent_dialogs[].user_input` keeps
/// (DESIGN "Security": what the agent sends is capped where it is echoed;
/// the page gets all of it).
pub const USER_INPUT_KEPT_CHARS: usize = 4096;

impl ClosedDialog {
    /// `user_input` as kept: at most [`USER_INPUT_KEPT_CHARS`] characters,
    /// and whether it was cut.
    pub fn kept_input(user_input: Option<String>) -> (Option<String>, bool) {
        match user_input {
            Some(mut s) => match s.char_indices().nth(USER_INPUT_KEPT_CHARS) {
                Some((cut, _)) => {
                    s.truncate(cut);
                    (Some(s), true)
                }
                None => (Some(s), false),
            },
            None => (None, false),
        }
    }
}

/// The top frame (`frame_tree.top`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopFrame {
    /// The main frame's id (the page target's id).
    pub frame_id: String,
    /// Its URL, fragment included.
    pub url: ArcStr,
    /// `scheme://host[:port]` (`Page.Frame.securityOrigin`, else from the
    /// URL); `"null"` for opaque origins, `""` when unknown.
    pub origin: ArcStr,
}

/// A frame below the top (`frame_tree.children[]`, flat, parents first).
///
/// `Eq`, so that comparing two trees skips entries they share (`Arc`'s
/// `PartialEq` compares addresses first only for `Eq` types).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildFrame {
    /// The frame's id (for an OOPIF, also its target id).
    pub frame_id: String,
    /// Its URL, fragment included; `""` before its first commit.
    pub url: ArcStr,
    /// As [`TopFrame::origin`].
    pub origin: ArcStr,
    /// Its parent; the top frame's id when the parent is unknown.
    pub parent_frame_id: String,
    /// A cross-origin iframe in its own process, with its own CDP session.
    pub is_oopif: bool,
    /// The OOPIF's child session (only for OOPIFs): what `browser_cdp(frame_id)` routes to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `frame_tree`: at most 30 children and OOPIF depth 2; `truncated` when a cap cut.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameTreeView {
    /// The main frame; `None` before the page is attached. Shared between
    /// trees while it is unchanged.
    pub top: Option<Arc<TopFrame>>,
    /// Every other frame, depth-first, parents before children.
    pub children: Vec<Arc<ChildFrame>>,
    /// Some frames are left out (a cap, or more frames than the supervisor tracks).
    pub truncated: bool,
}

/// One `console.error` / `console.assert` call or uncaught exception (`console_errors[]`, the last 50).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConsoleError {
    /// `error`, `assert` or `exception` (static: a flood allocates no level).
    pub level: std::borrow::Cow<'static, str>,
    /// The call's arguments joined by spaces, or the exception's
    /// description; cut at 4 096 chars.
    pub text: String,
    /// The script URL (top of the stack, or the exception's), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When, Unix seconds.
    pub at: f64,
}

/// The state of the supervisor's CDP connection (`connection`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// The CDP connection is up.
    #[default]
    Connected,
    /// The connection dropped; the supervisor is reconnecting (fields show the last known state).
    Reconnecting,
    /// The supervisor stopped (gave up, or was stopped).
    Closed,
    /// No supervisor yet: one is being started (attaching, or launching
    /// Chromium). Only the tools layer says this; a running supervisor never does.
    Connecting,
}

/// Everything the supervisor knows, as `browser_snapshot` shows it.
/// Equality compares values; entries shared with the other snapshot (the
/// same `Arc`) are equal without reading them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// The top frame's URL.
    pub url: ArcStr,
    /// The page's title (`Target.targetInfoChanged`, `Target.getTargetInfo`).
    pub title: ArcStr,
    /// The dialogs open now, oldest first.
    pub pending_dialogs: List<PendingDialog>,
    /// The last 20 closed dialogs, oldest first.
    pub recent_dialogs: List<ClosedDialog>,
    /// The frames, capped at 30 children and OOPIF depth 2.
    pub frame_tree: Arc<FrameTreeView>,
    /// The last 50 console errors and uncaught exceptions, oldest first.
    pub console_errors: List<ConsoleError>,
    /// The page was already blocked by a dialog we never saw (it opened
    /// before we attached): only navigating the page releases it.
    pub page_blocked: bool,
    /// Which frames `page_blocked` is about: the top frame, or an OOPIF that
    /// was there when we attached, whose session answered no `Page.enable`.
    /// Not serialized (the agent's remedy is the same either way); the
    /// page outline skips the renderer they are in.
    #[serde(skip)]
    pub blocked_frame_ids: Vec<String>,
    /// The state of the CDP connection (set by the driver).
    pub connection: ConnectionStatus,
    /// How many times the supervisor reconnected (set by the driver): what
    /// `changes.reconnected` counts since a session's previous result.
    #[serde(skip)]
    pub reconnects: u64,
    /// The last 10 documents the navigation policy stopped, oldest first.
    pub blocked_navigations: List<BlockedNavigation>,
    /// The supervised tabs, oldest first.
    pub tabs: List<TabView>,
    /// More pages were opened than `max_tabs`: the extra ones are not supervised.
    pub tabs_truncated: bool,
    /// The last 20 downloads of every tab, oldest first.
    pub downloads: List<DownloadView>,
}

impl Snapshot {
    /// One past the highest dialog number (`d-N`) this snapshot names,
    /// pending or recent: where a supervisor taking over the task numbers
    /// its first dialog. 1 when it names none.
    pub fn next_dialog_number(&self) -> u64 {
        let pending = self.pending_dialogs.iter().map(|d| d.id.as_str());
        let recent = self.recent_dialogs.iter().map(|d| d.dialog.id.as_str());
        pending
            .chain(recent)
            .filter_map(|id| id.strip_prefix("d-")?.parse::<u64>().ok())
            .max()
            .map_or(1, |n| n + 1)
    }

    /// The tab a call goes to: `target_id`, else the current tab.
    fn call_tab<'a>(&'a self, target_id: Option<&'a str>) -> Option<&'a str> {
        target_id.or_else(|| {
            self.tabs
                .iter()
                .find(|t| t.current)
                .map(|t| t.target_id.as_str())
        })
    }

    /// Whether the pending dialog `d` blocks a call on tab `target_id`
    /// (`None`: the current tab) — DESIGN "Calls a dialog interrupts": a
    /// JS dialog (not a file chooser) in that tab, any of its frames, or in
    /// a tab that shares its renderer: one linked to it by `opener` (either
    /// way, transitively) on the same site (a same-site popup freezes its
    /// opener). A dialog in an unrelated tab is listed but claims no call.
    pub fn blocks_call_on(&self, d: &PendingDialog, target_id: Option<&str>) -> bool {
        if !d.holds_renderer() {
            return false;
        }
        let Some(tab) = self.call_tab(target_id) else {
            return true;
        };
        match d.target_id.as_deref() {
            None => true,
            Some(t) if t == tab => true,
            Some(t) => self.renderer_group(tab).contains(&t),
        }
    }

    /// Whether `d` is an HTTP challenge in tab `target_id` (`None`: the
    /// current tab): it holds a navigation there, not the renderer.
    pub fn holds_load_on(&self, d: &PendingDialog, target_id: Option<&str>) -> bool {
        d.dialog_type == DialogType::HttpAuth
            && match (d.target_id.as_deref(), self.call_tab(target_id)) {
                (Some(t), Some(tab)) => t == tab,
                _ => true,
            }
    }

    /// Whether anything blocks a call on tab `target_id` (`None`: the
    /// current tab): a dialog [`Snapshot::blocks_call_on`] says so of, or —
    /// for the current tab — a dialog we never saw (`page_blocked`).
    pub fn call_blocked_on(&self, target_id: Option<&str>) -> bool {
        let current = self.call_tab(None);
        (self.page_blocked && (target_id.is_none() || target_id == current))
            || self
                .pending_dialogs
                .iter()
                .any(|d| self.blocks_call_on(d, target_id))
    }

    /// The tabs that share `tab`'s renderer as far as the tab list tells:
    /// `tab` and the same-site tabs linked to it by `opener`, transitively.
    fn renderer_group<'a>(&'a self, tab: &'a str) -> Vec<&'a str> {
        let view = |id: &str| self.tabs.iter().find(|t| t.target_id == id);
        let mut group = vec![tab];
        let mut i = 0;
        while i < group.len() {
            let me = group[i];
            let my_opener = view(me).and_then(|t| t.opener_target_id.as_deref());
            let my_site = view(me).and_then(|t| site(&t.url));
            for t in self.tabs.iter() {
                let linked = t.opener_target_id.as_deref() == Some(me)
                    || my_opener == Some(t.target_id.as_str());
                // A tab with no site yet (`about:blank`, a popup before its
                // first commit) runs in its opener's renderer.
                let same_site = match (&my_site, site(&t.url)) {
                    (Some(a), Some(b)) => *a == b,
                    _ => true,
                };
                if linked && !group.contains(&t.target_id.as_str()) && same_site {
                    group.push(&t.target_id);
                }
            }
            i += 1;
        }
        group
    }
}

/// A URL's site as Chromium groups renderers by: scheme and the host's
/// last two labels (`pay.a.test` → `https://a.test`); an IP address or a
/// one-label host is its own site. (Without the Public Suffix List a
/// `co.uk`-style host counts as one site: a stricter grouping.)
fn site(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let host = match u.host()? {
        url::Host::Domain(d) => {
            let labels: Vec<&str> = d.split('.').collect();
            labels[labels.len().saturating_sub(2)..].join(".")
        }
        ip => ip.to_string(),
    };
    Some(format!("{}://{host}", u.scheme()))
}

impl PartialEq for Snapshot {
    fn eq(&self, other: &Snapshot) -> bool {
        // Destructured so that a new field cannot be left out.
        let Snapshot {
            url,
            title,
            pending_dialogs,
            recent_dialogs,
            frame_tree,
            console_errors,
            page_blocked,
            blocked_frame_ids,
            connection,
            reconnects,
            blocked_navigations,
            tabs,
            tabs_truncated,
            downloads,
        } = self;
        *url == other.url
            && *title == other.title
            && *page_blocked == other.page_blocked
            && *blocked_frame_ids == other.blocked_frame_ids
            && *connection == other.connection
            && *reconnects == other.reconnects
            && *tabs_truncated == other.tabs_truncated
            && same(pending_dialogs, &other.pending_dialogs)
            && same(recent_dialogs, &other.recent_dialogs)
            && same(console_errors, &other.console_errors)
            && same(blocked_navigations, &other.blocked_navigations)
            && (Arc::ptr_eq(frame_tree, &other.frame_tree) || *frame_tree == other.frame_tree)
            && same(tabs, &other.tabs)
            && same(downloads, &other.downloads)
    }
}

/// Whether two lists of shared entries are equal, reading only the entries
/// that are not the same `Arc` (and nothing when the lists are one).
fn same<T: PartialEq>(a: &List<T>, b: &List<T>) -> bool {
    List::ptr_eq(a, b)
        || a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| Arc::ptr_eq(x, y) || **x == **y)
}

/// A list the snapshot shows (`console_errors`, `pending_dialogs`, `tabs`…),
/// oldest first: a slice of shared entries, itself shared whole by every
/// snapshot while it is unchanged, so that building, comparing or dropping
/// a snapshot costs nothing per entry of an unchanged list. Reads as a
/// slice (`&list[0]`, `list.iter()`, `for e in &list`); serialized as a
/// JSON array.
#[derive(Debug, Serialize, Deserialize)]
#[serde(
    transparent,
    bound(serialize = "T: Serialize", deserialize = "T: Deserialize<'de>")
)]
pub struct List<T>(Arc<[Arc<T>]>);

impl<T> List<T> {
    /// Whether `a` and `b` are one list (the same allocation). A list is
    /// shared with the next snapshot while it is unchanged, so this says
    /// "unchanged" without reading an entry.
    pub fn ptr_eq(a: &List<T>, b: &List<T>) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> Clone for List<T> {
    fn clone(&self) -> Self {
        List(self.0.clone())
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Arc::default())
    }
}

impl<T> std::ops::Deref for List<T> {
    type Target = [Arc<T>];
    fn deref(&self) -> &[Arc<T>] {
        &self.0
    }
}

impl<'a, T> IntoIterator for &'a List<T> {
    type Item = &'a Arc<T>;
    type IntoIter = std::slice::Iter<'a, Arc<T>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<T> FromIterator<Arc<T>> for List<T> {
    fn from_iter<I: IntoIterator<Item = Arc<T>>>(items: I) -> Self {
        List(items.into_iter().collect())
    }
}

impl<T: PartialEq> PartialEq for List<T> {
    fn eq(&self, other: &List<T>) -> bool {
        same(self, other)
    }
}

/// The list of `items`: `kept` itself when it holds exactly these entries
/// (the same `Arc`s, in order), else a new list, kept for next time.
/// Comparing addresses costs no reference count.
pub(crate) fn share<'a, T: 'a>(
    kept: &mut List<T>,
    items: impl Iterator<Item = &'a Arc<T>> + Clone,
) -> List<T> {
    let mut old = kept.iter();
    let unchanged = items
        .clone()
        .all(|i| old.next().is_some_and(|o| Arc::ptr_eq(i, o)));
    if !unchanged || old.next().is_some() {
        *kept = items.cloned().collect();
    }
    kept.clone()
}

/// One supervised tab (`tabs[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TabView {
    /// The page's target id (also its top frame's id).
    pub target_id: String,
    /// Its top frame's URL as last heard (`""` before the first commit).
    pub url: ArcStr,
    /// Its title as last heard.
    pub title: ArcStr,
    /// The supervised tab that opened it (`targetInfo.openerId`), if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opener_target_id: Option<String>,
    /// Whether it is the current tab (the one `browser_navigate` drives).
    pub current: bool,
    /// How many of its dialogs are pending.
    pub pending_dialogs: usize,
    /// Its renderer crashed: `browser_navigate` reloads it, `browser_tabs close` closes it.
    pub crashed: bool,
    /// The last navigation the agent's script or input asked for in it,
    /// and whether it has its outcome: what an action waits for before it
    /// returns (not shown to the agent).
    #[serde(skip)]
    pub action_navigation: Option<ActionNavigation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tab(id: &str, url: &str, opener: Option<&str>, current: bool) -> Arc<TabView> {
        Arc::new(TabView {
            target_id: id.into(),
            url: url.into(),
            title: ArcStr::new(),
            opener_target_id: opener.map(str::to_owned),
            current,
            pending_dialogs: 0,
            crashed: false,
            action_navigation: None,
        })
    }

    fn dialog(tab: &str, dialog_type: DialogType) -> PendingDialog {
        PendingDialog {
            id: format!("d-{tab}"),
            dialog_type,
            message: String::new(),
            default_prompt: String::new(),
            opened_at: 0.0,
            frame_id: Some(tab.into()),
            url: String::new(),
            answerable: true,
            mode: None,
            target_id: Some(tab.into()),
            http_auth: None,
            answered_at_once: false,
            only_closing_releases: false,
        }
    }

    /// Issue 28, defect 4: a dialog in any tab counted as the call's.
    #[test]
    fn regression_28_4_only_a_dialog_sharing_the_calls_renderer_blocks_it() {
        let s = Snapshot {
            tabs: [
                tab("T0", "https://a.test/shop", None, true),
                tab("T1", "https://pay.a.test/", Some("T0"), false),
                tab("T2", "https://a.test/other", None, false),
                tab("T3", "https://b.test/", Some("T0"), false),
                tab("T4", "about:blank", Some("T1"), false),
            ]
            .into_iter()
            .collect(),
            ..Snapshot::default()
        };
        let on =
            |d: &str, call: Option<&str>| s.blocks_call_on(&dialog(d, DialogType::Confirm), call);
        // The current tab's own dialog, and a same-site popup's (transitively).
        assert!(on("T0", None));
        assert!(on("T1", None));
        assert!(on("T4", None));
        assert!(on("T0", Some("T1")), "a popup's opener shares its renderer");
        // An unrelated tab, or a cross-site popup: listed, but claims no call.
        assert!(!on("T2", None));
        assert!(!on("T3", None));
        assert!(!on("T0", Some("T2")));
        // A file chooser blocks nothing.
        assert!(!s.blocks_call_on(&dialog("T0", DialogType::FileChooser), None));
    }
}

/// Where a download stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DownloadState {
    /// Bytes are arriving.
    InProgress,
    /// The file is complete at `path`.
    Completed,
    /// Stopped: by the page, the browser, or `max_bytes` (`reason` says).
    Canceled,
}

/// One download (`downloads[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DownloadView {
    /// `dl-1`, `dl-2`, … per supervisor.
    pub id: String,
    /// The URL downloaded.
    pub url: String,
    /// The name the server or page suggested (the file's name, made safe).
    pub suggested_filename: String,
    /// Where the file is (or is being written), when known: `null` for a
    /// browser that chose its own directory.
    pub path: Option<String>,
    /// `in_progress`, `completed` or `canceled`.
    pub state: DownloadState,
    /// Bytes received (the last figure before a cancel).
    pub received_bytes: u64,
    /// Bytes expected; `0` when the server sent no length.
    pub total_bytes: u64,
    /// The tab whose page started it, when known.
    pub target_id: Option<String>,
    /// Why it was canceled by us (`max_bytes`), or why its file could not be renamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Chromium's id (`guid`). Not shown.
    #[serde(skip)]
    pub guid: String,
    /// When its last byte came while it was not complete. Not shown.
    #[serde(skip)]
    pub all_in_at: Option<std::time::Instant>,
}

/// The last navigation the agent's script or input asked for in a tab (a
/// click on a link, a form sent with Enter, `location = …` in an evaluate):
/// its number in the tab (from 1) and whether it has an outcome — its frame
/// committed a document that is now parsed (`DOMContentLoaded`) or moved
/// within its own, it became a download, or
/// it ended with no new document (the core's `DOWNLOAD_AFTER_STOP`, 500 ms, after its frame
/// stopped loading). Read from the snapshot's `tabs` (not serialized).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionNavigation {
    /// 1 for the tab's first, and so on.
    pub seq: u64,
    /// It has an outcome.
    pub settled: bool,
}
