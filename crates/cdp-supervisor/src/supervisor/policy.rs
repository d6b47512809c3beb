//! The dialog policy (config key `browser.dialog_policy`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What the supervisor does when a dialog opens. Per task; no per-dialog overrides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogPolicy {
    /// Capture it, show it in the snapshot, wait for the agent's
    /// `browser_dialog`; the watchdog dismisses it after `dialog_timeout_s`.
    #[default]
    MustRespond,
    /// Dismiss it at once (`closed_by: "auto_policy"`).
    AutoDismiss,
    /// Accept it at once (a prompt gets its default text).
    AutoAccept,
}

impl DialogPolicy {
    /// The allowed spellings, for error messages.
    pub const ALLOWED: &'static str = "must_respond, auto_dismiss, auto_accept";

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DialogPolicy::MustRespond => "must_respond",
            DialogPolicy::AutoDismiss => "auto_dismiss",
            DialogPolicy::AutoAccept => "auto_accept",
        }
    }
}

impl fmt::Display for DialogPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy name that is not one of [`DialogPolicy::ALLOWED`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialog policy {0:?}; allowed: must_respond, auto_dismiss, auto_accept")]
pub struct UnknownPolicy(pub String);

impl FromStr for DialogPolicy {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "must_respond" => Ok(DialogPolicy::MustRespond),
            "auto_dismiss" => Ok(DialogPolicy::AutoDismiss),
            "auto_accept" => Ok(DialogPolicy::AutoAccept),
            other => Err(UnknownPolicy(other.to_owned())),
        }
    }
}
