//! What happened, by kind and sequence number: the source of
//! `browser_wait`, the snapshot's `event_seq` and the snapshot resource's
//! `notifications/resources/updated`.
//!
//! Sequence numbers come from one process-wide counter, so they only grow,
//! also across a rebind to a new supervisor: an agent's `since` (an
//! `event_seq` it read earlier) stays meaningful. The log keeps the last
//! sequence number of each kind — a fixed, tiny footprint per supervisor —
//! which is all a waiter needs: "did a `dialog_opened` happen after N?".

use crate::supervisor::state::Notice;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// The kinds of events recorded (a notice maps to at most one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A dialog opened (`Page.javascriptDialogOpening`, the bridge).
    DialogOpened,
    /// A dialog closed, by whoever.
    DialogClosed,
    /// The page committed a new document (`Page.frameNavigated` of its top frame).
    PageCommitted,
    /// The page's document loaded.
    PageLoaded,
    /// A tab opened.
    TabOpened,
    /// A supervised tab closed or crashed.
    TabClosed,
    /// The page turned out blocked by a dialog opened before we attached.
    PageBlocked,
    /// The CDP connection changed state.
    Connection,
    /// Another tab became current (`browser_tabs select`): the snapshot's
    /// page, `frame_tree` and `tabs` changed.
    CurrentTab,
    /// A download began.
    DownloadStarted,
    /// A download completed or was canceled.
    DownloadDone,
}

impl EventKind {
    const ALL: [EventKind; 11] = [
        EventKind::DialogOpened,
        EventKind::DialogClosed,
        EventKind::PageCommitted,
        EventKind::PageLoaded,
        EventKind::TabOpened,
        EventKind::TabClosed,
        EventKind::PageBlocked,
        EventKind::Connection,
        EventKind::CurrentTab,
        EventKind::DownloadStarted,
        EventKind::DownloadDone,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The kind a notice counts as; `None` for what nobody waits on
    /// (frames below the top, console errors). A notice built only while a
    /// watcher listens ([`Notice::is_for_watchers`]) is never a kind.
    pub fn of(notice: &Notice, top_frame_id: Option<&str>) -> Option<EventKind> {
        Some(match notice {
            Notice::DialogOpened { .. } => EventKind::DialogOpened,
            Notice::DialogClosed { .. } => EventKind::DialogClosed,
            Notice::FrameNavigated { frame_id, .. } if Some(frame_id.as_str()) == top_frame_id => {
                EventKind::PageCommitted
            }
            // Another tab's load is not the page's.
            Notice::PageLoaded { target_id, .. }
                if target_id.is_some() && target_id.as_deref() != top_frame_id =>
            {
                return None;
            }
            Notice::PageLoaded { .. } => EventKind::PageLoaded,
            Notice::TabOpened { .. } => EventKind::TabOpened,
            Notice::TabClosed { .. } | Notice::TabCrashed { .. } => EventKind::TabClosed,
            Notice::PageBlocked => EventKind::PageBlocked,
            Notice::PageGone { .. } => EventKind::TabClosed,
            Notice::Connection { .. } => EventKind::Connection,
            Notice::DownloadStarted { .. } => EventKind::DownloadStarted,
            Notice::DownloadDone { .. } => EventKind::DownloadDone,
            Notice::FrameNavigated { .. }
            | Notice::FrameAttached { .. }
            | Notice::FrameDetached { .. }
            | Notice::ConsoleError { .. }
            | Notice::NavigationBlocked { .. } => return None,
        })
    }
}

/// The last sequence number of each [`EventKind`] of one supervisor.
#[derive(Default)]
pub struct EventLog {
    last: Mutex<[u64; EventKind::ALL.len()]>,
    changed: Notify,
}

impl EventLog {
    /// Records that `kind` happened now; returns its sequence number.
    pub fn record(&self, kind: EventKind) -> u64 {
        let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)[kind.index()] = seq;
        self.changed.notify_waiters();
        seq
    }

    /// The sequence number of the latest event of any kind (0: none yet).
    pub fn latest(&self) -> u64 {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// The latest event of one of `kinds` after `since`, if any.
    pub fn after(&self, since: u64, kinds: &[EventKind]) -> Option<(u64, EventKind)> {
        let last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kinds
            .iter()
            .map(|k| (last[k.index()], *k))
            .filter(|(seq, _)| *seq > since)
            .max_by_key(|(seq, _)| *seq)
    }

    /// Waits until an event of one of `kinds` happened after `since`, at
    /// most until `deadline` (`None` then).
    pub async fn wait_after(
        &self,
        since: u64,
        kinds: &[EventKind],
        deadline: tokio::time::Instant,
    ) -> Option<(u64, EventKind)> {
        loop {
            // Registered before the check, so an event in between is not missed.
            let changed = self.changed.notified();
            if let Some(found) = self.after(since, kinds) {
                return Some(found);
            }
            tokio::time::timeout_at(deadline, changed).await.ok()?;
        }
    }

    /// Waits until any event happened after `since` (no deadline: the
    /// caller races it against its own end).
    pub async fn changed_after(&self, since: u64) -> u64 {
        loop {
            let changed = self.changed.notified();
            let latest = self.latest();
            if latest > since {
                return latest;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn after_tells_the_latest_event_of_the_kinds_asked_since_a_point() {
        let log = EventLog::default();
        assert_eq!(log.latest(), 0);
        let opened = log.record(EventKind::DialogOpened);
        let loaded = log.record(EventKind::PageLoaded);
        assert!(loaded > opened);
        assert_eq!(log.latest(), loaded);
        assert_eq!(
            log.after(0, &[EventKind::DialogOpened]),
            Some((opened, EventKind::DialogOpened))
        );
        assert_eq!(log.after(opened, &[EventKind::DialogOpened]), None);
        assert_eq!(
            log.after(opened, &[EventKind::DialogOpened, EventKind::PageLoaded]),
            Some((loaded, EventKind::PageLoaded))
        );
    }

    #[tokio::test]
    async fn wait_after_wakes_on_a_matching_event_and_ends_at_its_deadline() {
        let log = std::sync::Arc::new(EventLog::default());
        let since = log.latest();
        let waiter = {
            let log = log.clone();
            tokio::spawn(async move {
                let far = tokio::time::Instant::now() + Duration::from_secs(30);
                log.wait_after(since, &[EventKind::DialogClosed], far).await
            })
        };
        tokio::task::yield_now().await;
        log.record(EventKind::PageLoaded);
        let closed = log.record(EventKind::DialogClosed);
        assert_eq!(
            waiter.await.unwrap(),
            Some((closed, EventKind::DialogClosed))
        );
        let now = tokio::time::Instant::now();
        assert_eq!(
            log.wait_after(closed, &[EventKind::TabOpened], now).await,
            None
        );
    }
}
