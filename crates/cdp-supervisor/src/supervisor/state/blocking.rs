//! The navigation policy in the browser: document requests paused by the
//! session's `Fetch.enable` (see `Targets::setup`; `file:` navigations are
//! paused too, verified on Chromium 156) are continued or failed with
//! `BlockedByClient`. A refused document that committed anyway is released
//! to `about:blank`: a `file:` document under the default policy (which
//! intercepts nothing, see `NavigationPolicy::document_pattern`), or one on
//! a session whose `Fetch.enable` had not taken effect yet. Each stop is
//! kept in the snapshot's `blocked_navigations`.

use super::{Notice, Now, Out, Purpose, State, Target};
use crate::cdp::protocol::{FrameId, SessionId};
use crate::supervisor::origins::{BlockedNavigation, NavigationPolicy};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Arc;

/// spec: `blocked_navigations` keeps the last 10.
pub const BLOCKED_NAVIGATIONS_MAX: usize = 10;

/// The last stopped navigations, oldest first.
#[derive(Clone, Debug, Default)]
pub(super) struct Blocked(VecDeque<Arc<BlockedNavigation>>);

impl Blocked {
    fn record(&mut self, url: &str, rule: String, now: Now, out: &mut Out) {
        let navigation = Arc::new(BlockedNavigation {
            url: url.to_owned(),
            rule,
            at: now.unix_s,
        });
        if self.0.len() == BLOCKED_NAVIGATIONS_MAX {
            self.0.pop_front();
        }
        self.0.push_back(navigation.clone());
        out.watch_notice(|| Notice::NavigationBlocked { navigation });
    }

    /// For the snapshot, oldest first.
    pub(super) fn entries(&self) -> impl ExactSizeIterator<Item = &Arc<BlockedNavigation>> + Clone {
        self.0.iter()
    }
}

impl State {
    fn navigation(&self) -> &NavigationPolicy {
        &self.opts.navigation
    }

    /// A paused request that is not the bridge's: a document the policy
    /// refuses fails with `BlockedByClient`, anything else continues.
    /// Exactly one of the two, always.
    pub(super) fn let_go_or_block(
        &mut self,
        session: SessionId,
        request_id: String,
        document: Option<String>,
        now: Now,
    ) {
        let refused = document
            .as_deref()
            .and_then(|url| Some((url, self.navigation().check(url).err()?)));
        match refused {
            Some((url, r)) => {
                tracing::info!(url, rule = r.rule, "navigation blocked by the policy");
                self.blocked.record(url, r.rule, now, &mut self.out);
                self.out.send(
                    Target::Session(session),
                    "Fetch.failRequest",
                    json!({"requestId": request_id, "errorReason": "BlockedByClient"}),
                    Purpose::Setup,
                );
            }
            None => self.out.send(
                Target::Session(session),
                "Fetch.continueRequest",
                json!({ "requestId": request_id }),
                Purpose::Setup,
            ),
        }
    }

    /// A frame committed a real document (not an error page) at `url`: if
    /// the policy refuses it, the frame is navigated to `about:blank` on
    /// `session` (the session that reported the commit owns the frame).
    pub(super) fn check_commit(
        &mut self,
        session: &SessionId,
        frame: &FrameId,
        url: &str,
        now: Now,
    ) {
        let Err(r) = self.navigation().check(url) else {
            return;
        };
        tracing::info!(
            url,
            rule = r.rule,
            "a refused document committed: releasing its frame"
        );
        self.blocked.record(url, r.rule, now, &mut self.out);
        self.out.send(
            Target::Session(session.clone()),
            "Page.navigate",
            json!({"url": "about:blank", "frameId": frame.0}),
            Purpose::Setup,
        );
    }
}
