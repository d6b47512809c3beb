//! Loads a caller waits for (`browser_navigate`): the document of one
//! loader, in one page session, fully loaded. Heard from the page's own
//! load ([`super::Notice::PageLoaded`] naming that loader), or found by
//! asking the page — `Page.getFrameTree` shows that loader on the top
//! frame and `document.readyState` is `complete` — every
//! [`LOAD_CHECK_INTERVAL`], and at once after any other document of the
//! tab loaded. Asking finds a load whose events we missed (a new tab's
//! first navigation, a page attached while blocked). The driver only
//! waits for [`super::Output::Loaded`]; it never decides.

use crate::cdp::protocol::SessionId;
use serde_json::Value;
use std::time::{Duration, Instant};

/// How often a load not heard of yet is asked for.
pub const LOAD_CHECK_INTERVAL: Duration = Duration::from_millis(500);
/// The deadline of each question ([`LOAD_CHECK_INTERVAL`]'s two commands).
pub const LOAD_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Waiting for its load notice, or for `check_at` to ask.
    Listening,
    /// `Page.getFrameTree` in flight.
    AskingTree,
    /// `Runtime.evaluate("document.readyState")` in flight.
    AskingState,
}

#[derive(Clone, Debug)]
struct Load {
    id: u64,
    session: SessionId,
    loader: String,
    stage: Stage,
    /// When it was asked for.
    since: Instant,
    /// When to ask next, while listening.
    check_at: Instant,
}

/// A question [`Loads`] wants sent: on `session`, for load `id`.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// `Page.getFrameTree`.
    Tree {
        /// The load asked about.
        id: u64,
        /// Its page session.
        session: SessionId,
    },
    /// `Runtime.evaluate("document.readyState")`.
    ReadyState {
        /// The load asked about.
        id: u64,
        /// Its page session.
        session: SessionId,
    },
}

/// The loads being waited for, in the order they were asked for.
#[derive(Clone, Debug, Default)]
pub struct Loads {
    waiting: Vec<Load>,
    next: u64,
}

impl Loads {
    /// Waits for the document of `loader` in `session`; the first question
    /// goes [`LOAD_CHECK_INTERVAL`] after `now`. Returns the load's id.
    pub fn wait(&mut self, session: SessionId, loader: String, now: Instant) -> u64 {
        self.next += 1;
        self.waiting.push(Load {
            id: self.next,
            session,
            loader,
            stage: Stage::Listening,
            since: now,
            check_at: now + LOAD_CHECK_INTERVAL,
        });
        self.next
    }

    /// Nobody waits for load `id` any more.
    pub fn cancel(&mut self, id: u64) {
        self.waiting.retain(|l| l.id != id);
    }

    /// A document of the tab of `session` loaded (`loader`, when known).
    /// Returns the loads that are now done (its loader's); any other load
    /// of that tab is asked about at once: the page it waited on may have
    /// been replaced by ours unheard (`in_tab`: whether a session is the
    /// notice's tab's).
    pub fn page_loaded(
        &mut self,
        loader: Option<&str>,
        in_tab: impl Fn(&SessionId) -> bool,
    ) -> Vec<u64> {
        let (done, rest): (Vec<Load>, Vec<Load>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|l| loader == Some(l.loader.as_str()));
        self.waiting = rest;
        for l in &mut self.waiting {
            if l.stage == Stage::Listening && in_tab(&l.session) {
                // Due at once (an instant already past).
                l.check_at = l.since;
            }
        }
        done.into_iter().map(|l| l.id).collect()
    }

    /// When the next question is due, if any load is listening.
    pub fn next_check(&self) -> Option<Instant> {
        self.waiting
            .iter()
            .filter(|l| l.stage == Stage::Listening)
            .map(|l| l.check_at)
            .min()
    }

    /// The questions due at `now` (each load asks one at a time).
    pub fn due(&mut self, now: Instant) -> Vec<Ask> {
        let mut asks = Vec::new();
        for l in &mut self.waiting {
            if l.stage == Stage::Listening && l.check_at <= now {
                l.stage = Stage::AskingTree;
                asks.push(Ask::Tree {
                    id: l.id,
                    session: l.session.clone(),
                });
            }
        }
        asks
    }

    /// The reply to [`Ask::Tree`] for load `id` (`None`: it failed).
    /// Returns the next question: the ready state, when the top frame
    /// shows our loader's document.
    pub fn tree_replied(&mut self, id: u64, tree: Option<&Value>, now: Instant) -> Option<Ask> {
        let l = self.waiting.iter_mut().find(|l| l.id == id)?;
        let ours = tree
            .and_then(|t| t.pointer("/frameTree/frame/loaderId"))
            .and_then(Value::as_str)
            == Some(l.loader.as_str());
        if ours {
            l.stage = Stage::AskingState;
            Some(Ask::ReadyState {
                id,
                session: l.session.clone(),
            })
        } else {
            l.stage = Stage::Listening;
            l.check_at = now + LOAD_CHECK_INTERVAL;
            None
        }
    }

    /// The reply to [`Ask::ReadyState`] for load `id` (`None`: it failed).
    /// Returns true when the load is done (`complete`).
    pub fn state_replied(&mut self, id: u64, result: Option<&Value>, now: Instant) -> bool {
        let Some(pos) = self.waiting.iter().position(|l| l.id == id) else {
            return false;
        };
        let complete = result
            .and_then(|v| v.pointer("/result/value"))
            .and_then(Value::as_str)
            == Some("complete");
        if complete {
            self.waiting.remove(pos);
        } else {
            let l = &mut self.waiting[pos];
            l.stage = Stage::Listening;
            l.check_at = now + LOAD_CHECK_INTERVAL;
        }
        complete
    }

    /// No load is waited for.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}
