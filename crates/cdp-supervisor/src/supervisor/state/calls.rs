//! What an agent's call is told when a dialog is in its way (DESIGN "Calls
//! a dialog interrupts"): which dialog interrupts which call, what its
//! deadline means (interrupted, or timed out while still queued), and which
//! dialog keeps `browser_navigate` from navigating. Pure functions of the
//! published [`Snapshot`] and of what the call saw when it started: the
//! driver only waits (on snapshots, a reply, a timer) and asks these.

use crate::supervisor::policy::{DialogPolicies, DialogPolicy};
use crate::supervisor::snapshot::{PendingDialog, Snapshot};
use std::time::Duration;

/// How long a call on a page that a dialog already blocks waits before it
/// returns with the pending dialog instead of its reply: a dialog that is
/// about to close (an answer in flight) lets the call through meanwhile.
pub const BLOCKED_CALL_GRACE: Duration = Duration::from_millis(500);

/// What a call saw when it was about to be sent: the dialogs pending then
/// (any other is new to it), the tab it goes to, whether something already
/// blocked that tab, and whether it loads a document (`browser_navigate`).
/// Take it **before** sending: a dialog the command opens at once can be
/// published before the call first looks, and counted as already there it
/// would be missed.
#[derive(Clone, Debug)]
pub struct CallStart {
    before: Vec<String>,
    tab: Option<String>,
    blocked: bool,
    loads: bool,
}

/// What a call's own deadline means ([`CallStart::at_deadline`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtDeadline {
    /// A dialog blocks its tab: it is interrupted, and runs once the
    /// dialog is answered.
    Interrupted,
    /// Nothing blocks it: it is still queued (kept, and its outcome
    /// delivered once, like an interrupted call's).
    TimedOut,
}

impl CallStart {
    /// The start of a call on tab `target_id` (`None`: the current tab,
    /// pinned now: the current tab may change while the call runs), as
    /// `snap` shows the page. `loads`: the call loads a document, which an
    /// HTTP challenge in its tab holds though it blocks no renderer.
    pub fn new(snap: &Snapshot, target_id: Option<&str>, loads: bool) -> CallStart {
        let tab = target_id.map(str::to_owned).or_else(|| {
            snap.tabs
                .iter()
                .find(|t| t.current)
                .map(|t| t.target_id.clone())
        });
        CallStart {
            before: snap.pending_dialogs.iter().map(|d| d.id.clone()).collect(),
            blocked: snap.call_blocked_on(target_id),
            tab,
            loads,
        }
    }

    /// The tab the call goes to (its target id), when known.
    pub fn tab(&self) -> Option<&str> {
        self.tab.as_deref()
    }

    /// Something (a dialog, or one we never saw) blocked the call's tab
    /// when it started.
    pub fn blocked_at_start(&self) -> bool {
        self.blocked
    }

    /// Counts `loads` from now on (see [`CallStart::new`]).
    pub fn loading(mut self) -> CallStart {
        self.loads = true;
        self
    }

    /// Whether `snap` shows a dialog that interrupts the call: one that
    /// was not pending at its start, that blocks its tab's renderer (or,
    /// for a call that loads, holds the load), and that nobody answers at
    /// once — a must_respond one, or one the auto policy could not answer.
    pub fn interrupted_by_new(&self, snap: &Snapshot, policy: &DialogPolicies) -> bool {
        let tab = self.tab();
        snap.pending_dialogs.iter().any(|d| {
            !self.before.contains(&d.id)
                && (snap.blocks_call_on(d, tab) || (self.loads && snap.holds_load_on(d, tab)))
                && (!answered_at_once(d, policy) || !d.answerable)
        })
    }

    /// How long to wait before [`CallStart::still_blocked`] decides, when
    /// the call asked to be told of a dialog that was in its way from the
    /// start (`existing_block`); `None`: only new dialogs interrupt it.
    pub fn grace(&self, existing_block: bool) -> Option<Duration> {
        (self.blocked && existing_block).then_some(BLOCKED_CALL_GRACE)
    }

    /// Whether the call's tab is still blocked (after the grace: a dialog
    /// released meanwhile lets it through).
    pub fn still_blocked(&self, snap: &Snapshot) -> bool {
        snap.call_blocked_on(self.tab())
    }

    /// What the call's deadline passing with no reply means, as `snap`
    /// shows the page then.
    pub fn at_deadline(&self, snap: &Snapshot) -> AtDeadline {
        if self.still_blocked(snap) {
            AtDeadline::Interrupted
        } else {
            AtDeadline::TimedOut
        }
    }

    /// A call whose command failed with Chromium's "Inspected target
    /// navigated or closed" (`lost_to_navigation`): sent while a dialog
    /// blocked the page, it ran once a navigation closed that dialog
    /// (CDP facts), so it is an interrupted call with that late outcome,
    /// not a failure to resend.
    pub fn ran_before_navigation(&self, lost_to_navigation: bool) -> bool {
        self.blocked && lost_to_navigation
    }
}

/// Whether the policy answers `d` the moment it opens (so it interrupts no
/// call, unless Chromium refused that answer).
fn answered_at_once(d: &PendingDialog, policy: &DialogPolicies) -> bool {
    d.answered_at_once || policy.for_type(d.dialog_type.as_str()) != DialogPolicy::MustRespond
}

/// Whether the navigation an action asked for in tab `target_id` — the
/// tab's action navigation numbered past `after`, if any — has its
/// outcome (a new document parsed, the same one, a download, nothing:
/// [`super::ActionNavigation`]), or the tab has a pending dialog, crashed
/// or closed: the action's result can be given.
pub fn action_settled(snap: &Snapshot, target_id: &str, after: u64) -> bool {
    snap.tabs
        .iter()
        .find(|t| t.target_id == target_id)
        .is_none_or(|t| {
            t.crashed
                || t.pending_dialogs > 0
                || t.action_navigation
                    .is_none_or(|a| a.seq <= after || a.settled)
        })
}

/// Whether a beforeunload in tab `tab` (or in no tab) holds the top frame
/// and Chromium will not answer it (a newer dialog of the page took the
/// answers, or it showed before a reconnect): the frame then answers no
/// navigation of its own, so `browser_navigate` releases it first.
pub fn stuck_beforeunload(snap: &Snapshot, tab: Option<&str>) -> bool {
    snap.pending_dialogs
        .iter()
        .any(|d| in_tab(d, tab) && !d.answerable && d.dialog_type.as_str() == "beforeunload")
}

/// Whether a pending dialog keeps a navigation of tab `tab` from
/// happening. A beforeunload that can be answered is the page asking
/// whether it may be left: a navigation does not release it but queues
/// behind it. A dialog in another tab sharing this renderer (a same-site
/// popup's) blocks the navigation too, and navigating does not release it.
/// Any other dialog of the tab is released by the navigation.
pub fn blocks_navigation(snap: &Snapshot, tab: Option<&str>) -> bool {
    snap.pending_dialogs.iter().any(|d| {
        (in_tab(d, tab) && d.dialog_type.as_str() == "beforeunload")
            || (!in_tab(d, tab) && snap.blocks_call_on(d, tab))
    })
}

/// Whether dialog `d` is in tab `tab` (a dialog of no known tab counts as its).
fn in_tab(d: &PendingDialog, tab: Option<&str>) -> bool {
    d.target_id.is_none() || d.target_id.as_deref() == tab
}
