//! What wakes the core: one named [`Timer`] per kind of wakeup, polled like
//! str0m's `poll_timeout`. Adding a wakeup is adding a variant here and its
//! arm in [`super::State::handle_timeout`].

use crate::cdp::protocol::SessionId;
use std::collections::BTreeMap;
use std::time::Instant;

/// One kind of wakeup.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// The must_respond watchdog of a dialog (`d-N`), or the retry of an
    /// answer or a release whose command was lost with the connection.
    Dialog(String),
    /// `Page.enable` on the page session has gone unanswered this long: the
    /// page is blocked by a dialog we never saw.
    PageEnableGrace,
    /// `Page.enable` on the session of an OOPIF that was there when we
    /// attached has gone unanswered this long: a dialog we never saw blocks
    /// its renderer.
    OopifEnableGrace(SessionId),
    /// Release a page blocked by a dialog we never saw (navigate it).
    PageBlockedRelease,
    /// A navigation the agent asked for stopped loading with no new
    /// document this long ago, and no download came of it: it has its
    /// outcome ([`super::navigations::DOWNLOAD_AFTER_STOP`]).
    DownloadAfterStop,
}

/// The armed timers, each with its deadline.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    at: BTreeMap<Timer, Instant>,
}

impl Timers {
    /// Arms `timer` at `at` (re-arms it if armed); `None` disarms it (a
    /// deadline too far for the clock is no deadline at all).
    pub fn set(&mut self, timer: Timer, at: Option<Instant>) {
        match at {
            Some(t) => {
                self.at.insert(timer, t);
            }
            None => self.cancel(&timer),
        }
    }

    /// Disarms `timer`.
    pub fn cancel(&mut self, timer: &Timer) {
        self.at.remove(timer);
        if self.at.is_empty() {
            // An emptied map keeps its root node (~0.5 KiB) otherwise.
            self.at = BTreeMap::new();
        }
    }

    /// Disarms every timer `which` accepts.
    pub fn cancel_where(&mut self, which: impl Fn(&Timer) -> bool) {
        self.at.retain(|t, _| !which(t));
        if self.at.is_empty() {
            self.at = BTreeMap::new();
        }
    }

    /// Whether any armed timer is one `which` accepts.
    pub fn any(&self, which: impl Fn(&Timer) -> bool) -> bool {
        self.at.keys().any(which)
    }

    /// The earliest deadline among the timers `live` accepts.
    pub fn earliest(&self, live: impl Fn(&Timer) -> bool) -> Option<Instant> {
        self.at
            .iter()
            .filter(|(t, _)| live(t))
            .map(|(_, at)| *at)
            .min()
    }

    /// Disarms and returns every timer due at `now` that `live` accepts.
    pub fn take_due(&mut self, now: Instant, live: impl Fn(&Timer) -> bool) -> Vec<Timer> {
        let due: Vec<Timer> = self
            .at
            .iter()
            .filter(|(t, at)| **at <= now && live(t))
            .map(|(t, _)| t.clone())
            .collect();
        for t in &due {
            self.at.remove(t);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn earliest_skips_what_is_not_live_and_take_due_disarms() {
        let t0 = Instant::now();
        let mut t = Timers::default();
        t.set(Timer::Dialog("d-1".into()), Some(t0));
        t.set(Timer::PageEnableGrace, Some(t0 + Duration::from_secs(1)));
        assert_eq!(t.earliest(|_| true), Some(t0));
        assert_eq!(
            t.earliest(|x| *x != Timer::Dialog("d-1".into())),
            Some(t0 + Duration::from_secs(1))
        );
        assert_eq!(t.take_due(t0, |_| true), vec![Timer::Dialog("d-1".into())]);
        assert_eq!(t.earliest(|_| true), Some(t0 + Duration::from_secs(1)));
    }
}
