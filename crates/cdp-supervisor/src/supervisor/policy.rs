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

/// The dialog types a policy can be set for, in their config spelling.
pub const DIALOG_TYPES: [&str; 6] = [
    "alert",
    "confirm",
    "prompt",
    "beforeunload",
    "file_chooser",
    "http_auth",
];

/// The dialog policy per dialog type (config `browser.dialog_policy`: one
/// policy for every type, or a map such as `{alert: auto_accept, confirm:
/// must_respond}` where a type left out is `must_respond`). The watchdog
/// (`dialog_timeout_s`) applies to the `must_respond` types only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DialogPolicies {
    /// `alert()`.
    pub alert: DialogPolicy,
    /// `confirm()`.
    pub confirm: DialogPolicy,
    /// `prompt()`.
    pub prompt: DialogPolicy,
    /// `beforeunload`.
    pub beforeunload: DialogPolicy,
    /// A file input's chooser.
    pub file_chooser: DialogPolicy,
    /// An HTTP authentication challenge (`Fetch.authRequired`). Both auto
    /// policies answer from `credentials` when the origin has some, and
    /// cancel otherwise.
    pub http_auth: DialogPolicy,
}

/// Why a `dialog_policy` value was refused: the sentence names what was
/// wrong and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A type that is not one of [`DIALOG_TYPES`].
    #[error(
        "unknown dialog type {0:?}; allowed types: alert, confirm, prompt, beforeunload, file_chooser, http_auth"
    )]
    UnknownType(String),
    /// A policy that is not one of [`DialogPolicy::ALLOWED`] (for `type`, when in a map).
    #[error("{}{:?} is not a dialog policy; allowed: must_respond, auto_dismiss, auto_accept", .r#type.as_ref().map(|t| format!("{t}: ")).unwrap_or_default(), .value)]
    UnknownPolicy {
        /// The dialog type it was given for (`None`: one policy for all).
        r#type: Option<String>,
        /// The value given.
        value: String,
    },
    /// A type given twice (`alert=auto_accept,alert=auto_dismiss`).
    #[error("dialog type {0:?} is given twice; give each type once")]
    Duplicate(String),
    /// Text that is neither a policy, a `{type: policy}` map nor `type=policy,…`.
    #[error(
        "{0:?} is neither a policy nor a map of dialog type to policy (e.g. {{alert: auto_accept, confirm: must_respond}} or alert=auto_accept,confirm=must_respond)"
    )]
    Unreadable(String),
}

impl From<DialogPolicy> for DialogPolicies {
    fn from(p: DialogPolicy) -> Self {
        DialogPolicies::uniform(p)
    }
}

impl DialogPolicies {
    /// The same policy for every type.
    pub fn uniform(p: DialogPolicy) -> DialogPolicies {
        DialogPolicies {
            alert: p,
            confirm: p,
            prompt: p,
            beforeunload: p,
            file_chooser: p,
            http_auth: p,
        }
    }

    fn all(&self) -> [DialogPolicy; 6] {
        [
            self.alert,
            self.confirm,
            self.prompt,
            self.beforeunload,
            self.file_chooser,
            self.http_auth,
        ]
    }

    /// The policy for a dialog of this type (its CDP or config spelling);
    /// a type this build does not know is `must_respond`.
    pub fn for_type(&self, dialog_type: &str) -> DialogPolicy {
        match dialog_type {
            "alert" => self.alert,
            "confirm" => self.confirm,
            "prompt" => self.prompt,
            "beforeunload" => self.beforeunload,
            "file_chooser" => self.file_chooser,
            "http_auth" => self.http_auth,
            _ => DialogPolicy::MustRespond,
        }
    }

    /// The one policy every type has, if they agree.
    pub fn as_uniform(&self) -> Option<DialogPolicy> {
        let all = self.all();
        all.iter().all(|p| *p == all[0]).then_some(all[0])
    }

    /// Whether some type is answered at once (`auto_dismiss`/`auto_accept`).
    pub fn any_auto(&self) -> bool {
        self.all().iter().any(|p| *p != DialogPolicy::MustRespond)
    }

    /// Sets the policy of one type (config spelling).
    ///
    /// # Errors
    /// [`PolicyError::UnknownType`].
    pub fn set(&mut self, dialog_type: &str, p: DialogPolicy) -> Result<(), PolicyError> {
        let slot = match dialog_type {
            "alert" => &mut self.alert,
            "confirm" => &mut self.confirm,
            "prompt" => &mut self.prompt,
            "beforeunload" => &mut self.beforeunload,
            "file_chooser" => &mut self.file_chooser,
            "http_auth" => &mut self.http_auth,
            other => return Err(PolicyError::UnknownType(other.to_owned())),
        };
        *slot = p;
        Ok(())
    }

    /// A map of type to policy; types left out are `must_respond`.
    ///
    /// # Errors
    /// An unknown type or policy.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<DialogPolicies, PolicyError> {
        let mut out = DialogPolicies::default();
        let mut seen: Vec<&str> = Vec::new();
        for (t, p) in pairs {
            let (t, p) = (t.trim(), p.trim());
            if seen.contains(&t) {
                return Err(PolicyError::Duplicate(t.to_owned()));
            }
            seen.push(t);
            let policy = p.parse().map_err(|_| PolicyError::UnknownPolicy {
                r#type: Some(t.to_owned()),
                value: p.to_owned(),
            })?;
            out.set(t, policy)?;
        }
        Ok(out)
    }
}

impl FromStr for DialogPolicies {
    type Err = PolicyError;

    /// One policy (`auto_accept`), a YAML/JSON map (`{alert: auto_accept,
    /// confirm: must_respond}`), or `alert=auto_accept,confirm=must_respond`
    /// (the `--policy` flag's short form).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if let Ok(p) = text.parse::<DialogPolicy>() {
            return Ok(DialogPolicies::uniform(p));
        }
        if text.starts_with('{') {
            let map: std::collections::BTreeMap<String, serde_json::Value> =
                serde_saphyr::from_str(text)
                    .map_err(|_| PolicyError::Unreadable(text.to_owned()))?;
            let mut pairs = Vec::new();
            for (t, v) in &map {
                let v = v.as_str().ok_or_else(|| PolicyError::UnknownPolicy {
                    r#type: Some(t.clone()),
                    value: v.to_string(),
                })?;
                pairs.push((t.as_str(), v));
            }
            return DialogPolicies::from_pairs(pairs);
        }
        if text.contains('=') {
            let pairs: Vec<(&str, &str)> = text
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| {
                    p.split_once('=')
                        .ok_or_else(|| PolicyError::Unreadable(text.to_owned()))
                })
                .collect::<Result<_, _>>()?;
            return DialogPolicies::from_pairs(pairs);
        }
        Err(PolicyError::UnknownPolicy {
            r#type: None,
            value: text.to_owned(),
        })
    }
}

impl fmt::Display for DialogPolicies {
    /// `auto_accept` when uniform, else `{alert: …, confirm: …, …}` (every type).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.as_uniform() {
            return write!(f, "{p}");
        }
        let parts: Vec<String> = DIALOG_TYPES
            .iter()
            .map(|t| format!("{t}: {}", self.for_type(t)))
            .collect();
        write!(f, "{{{}}}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_from_one_value_a_map_or_pairs() {
        let auto: DialogPolicies = "auto_accept".parse().unwrap();
        assert_eq!(auto.as_uniform(), Some(DialogPolicy::AutoAccept));
        let map: DialogPolicies = "{alert: auto_accept, confirm: must_respond}"
            .parse()
            .unwrap();
        assert_eq!(map.for_type("alert"), DialogPolicy::AutoAccept);
        assert_eq!(map.for_type("confirm"), DialogPolicy::MustRespond);
        assert_eq!(
            map.for_type("prompt"),
            DialogPolicy::MustRespond,
            "left out: must_respond"
        );
        assert_eq!(map.for_type("something-new"), DialogPolicy::MustRespond);
        let json: DialogPolicies = r#"{"beforeunload": "auto_dismiss"}"#.parse().unwrap();
        assert_eq!(json.for_type("beforeunload"), DialogPolicy::AutoDismiss);
        let pairs: DialogPolicies = "alert=auto_accept, prompt=auto_dismiss".parse().unwrap();
        assert_eq!(pairs.for_type("alert"), DialogPolicy::AutoAccept);
        assert_eq!(pairs.for_type("prompt"), DialogPolicy::AutoDismiss);
        assert!(pairs.any_auto());
        assert_eq!(pairs.as_uniform(), None);
        assert_eq!(
            pairs.to_string(),
            "{alert: auto_accept, confirm: must_respond, prompt: auto_dismiss, beforeunload: must_respond, file_chooser: must_respond, http_auth: must_respond}"
        );
    }

    #[test]
    fn a_bad_type_or_policy_names_it_and_the_allowed_values() {
        let e = "{popup: auto_accept}"
            .parse::<DialogPolicies>()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown dialog type \"popup\"; allowed types: alert, confirm, prompt, beforeunload, file_chooser, http_auth"
        );
        let e = "alert=sometimes".parse::<DialogPolicies>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "alert: \"sometimes\" is not a dialog policy; allowed: must_respond, auto_dismiss, auto_accept"
        );
        let e = "alert=auto_accept,alert=auto_dismiss"
            .parse::<DialogPolicies>()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "dialog type \"alert\" is given twice; give each type once"
        );
        let e = "sometimes".parse::<DialogPolicies>().unwrap_err();
        assert!(
            e.to_string()
                .contains("must_respond, auto_dismiss, auto_accept"),
            "{e}"
        );
    }
}
