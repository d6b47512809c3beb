//! Typed parameters for the CDP events the supervisor reads, and the ids it
//! keeps (`sessionId`, `targetId`, `frameId`).
//!
//! Parsing is tolerant on purpose: unknown fields are ignored, unknown enum
//! strings are kept (`DialogType::Other`), and an event whose params do not
//! parse is reported as [`Event::Unparsed`] instead of failing the
//! connection. Chromium adds fields every release; a supervisor must not die
//! on a new one.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as CDP spells it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }
    };
}

id_type!(
    /// A flatten-mode CDP session (`Target.attachedToTarget.sessionId`).
    SessionId
);
id_type!(
    /// A CDP target (`Target.TargetInfo.targetId`). An OOPIF's target id equals its frame id.
    TargetId
);
id_type!(
    /// A frame (`Page.Frame.id`).
    FrameId
);

/// The kind of a native JS dialog (`Page.DialogType`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DialogType {
    Alert,
    Confirm,
    Prompt,
    Beforeunload,
    /// A type this build does not know, kept verbatim.
    Other(String),
}

impl DialogType {
    /// The CDP spelling (`"alert"`, `"confirm"`, `"prompt"`, `"beforeunload"`).
    pub fn as_str(&self) -> &str {
        match self {
            DialogType::Alert => "alert",
            DialogType::Confirm => "confirm",
            DialogType::Prompt => "prompt",
            DialogType::Beforeunload => "beforeunload",
            DialogType::Other(s) => s,
        }
    }
}

impl From<&str> for DialogType {
    fn from(s: &str) -> Self {
        match s {
            "alert" => DialogType::Alert,
            "confirm" => DialogType::Confirm,
            "prompt" => DialogType::Prompt,
            "beforeunload" => DialogType::Beforeunload,
            other => DialogType::Other(other.to_owned()),
        }
    }
}

impl Serialize for DialogType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DialogType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(DialogType::from(s.as_str()))
    }
}

/// `Page.javascriptDialogOpening`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogOpening {
    #[serde(default)]
    pub url: String,
    /// The frame that opened the dialog (Chromium ≥ 127; older builds omit it).
    #[serde(default)]
    pub frame_id: Option<FrameId>,
    #[serde(default)]
    pub message: String,
    #[serde(rename = "type")]
    pub dialog_type: DialogType,
    #[serde(default)]
    pub default_prompt: Option<String>,
}

/// `Page.javascriptDialogClosed`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogClosed {
    #[serde(default)]
    pub frame_id: Option<FrameId>,
    #[serde(default)]
    pub result: bool,
    #[serde(default)]
    pub user_input: String,
}

/// `Page.Frame`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameInfo {
    pub id: FrameId,
    #[serde(default)]
    pub parent_id: Option<FrameId>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub url_fragment: Option<String>,
    #[serde(default)]
    pub security_origin: Option<String>,
}

/// `Page.FrameTree` (the result of `Page.getFrameTree` is `{frameTree: FrameTree}`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameTree {
    pub frame: FrameInfo,
    #[serde(default)]
    pub child_frames: Vec<FrameTree>,
}

/// `Page.frameAttached`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameAttached {
    pub frame_id: FrameId,
    pub parent_frame_id: FrameId,
}

/// `Page.frameNavigated`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameNavigated {
    pub frame: FrameInfo,
}

/// `Page.frameDetached`. `reason` is `"remove"` or `"swap"` (the frame moved
/// to another process: an OOPIF target takes it over).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameDetached {
    pub frame_id: FrameId,
    #[serde(default)]
    pub reason: Option<String>,
}

/// `Target.TargetInfo`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfo {
    pub target_id: TargetId,
    #[serde(rename = "type")]
    pub target_type: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub attached: bool,
}

/// `Target.attachedToTarget`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedToTarget {
    pub session_id: SessionId,
    pub target_info: TargetInfo,
    #[serde(default)]
    pub waiting_for_debugger: bool,
}

/// `Target.detachedFromTarget`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetachedFromTarget {
    pub session_id: SessionId,
    #[serde(default)]
    pub target_id: Option<TargetId>,
}

/// `Target.targetInfoChanged`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfoChanged {
    pub target_info: TargetInfo,
}

/// `Target.targetDestroyed` / `Target.targetCrashed`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetGone {
    pub target_id: TargetId,
}

/// `Runtime.CallFrame`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFrame {
    #[serde(default)]
    pub url: String,
}

/// `Runtime.StackTrace`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackTrace {
    #[serde(default)]
    pub call_frames: Vec<CallFrame>,
}

/// `Runtime.RemoteObject`, the fields needed to print it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteObject {
    #[serde(rename = "type", default)]
    pub object_type: String,
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(default)]
    pub unserializable_value: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

impl RemoteObject {
    /// How the console would print it: strings bare, other values as JSON,
    /// objects by their description.
    pub fn to_text(&self) -> String {
        match (&self.value, &self.unserializable_value, &self.description) {
            (Some(Value::String(s)), _, _) => s.clone(),
            (Some(v), _, _) => v.to_string(),
            (None, Some(u), _) => u.clone(),
            (None, None, Some(d)) => d.clone(),
            (None, None, None) => self.object_type.clone(),
        }
    }
}

/// `Runtime.consoleAPICalled`. `timestamp` is milliseconds since the Unix epoch.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleApiCalled {
    #[serde(rename = "type")]
    pub call_type: String,
    #[serde(default)]
    pub args: Vec<RemoteObject>,
    #[serde(default)]
    pub timestamp: Option<f64>,
    #[serde(default)]
    pub stack_trace: Option<StackTrace>,
}

/// `Runtime.ExceptionDetails`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionDetails {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub exception: Option<RemoteObject>,
}

/// `Runtime.exceptionThrown`. `timestamp` is milliseconds since the Unix epoch.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionThrown {
    #[serde(default)]
    pub timestamp: Option<f64>,
    pub exception_details: ExceptionDetails,
}

/// A CDP event the supervisor understands, parsed from its method name and
/// params. Everything else is [`Event::Other`].
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    DialogOpening(DialogOpening),
    DialogClosed(DialogClosed),
    FrameAttached(FrameAttached),
    FrameNavigated(FrameNavigated),
    FrameDetached(FrameDetached),
    /// `Page.loadEventFired` (on the session it arrives on).
    LoadEventFired,
    AttachedToTarget(AttachedToTarget),
    DetachedFromTarget(DetachedFromTarget),
    TargetInfoChanged(TargetInfoChanged),
    TargetDestroyed(TargetGone),
    TargetCrashed(TargetGone),
    /// `Inspector.detached`: the session's target is gone or taken over.
    InspectorDetached,
    ConsoleApiCalled(ConsoleApiCalled),
    ExceptionThrown(ExceptionThrown),
    /// `Fetch.requestPaused`, params kept raw (only the dialog bridge reads them).
    FetchRequestPaused {
        params: String,
    },
    /// A method we know whose params did not parse; kept for the log.
    Unparsed {
        method: String,
        error: String,
    },
    /// A method we do not act on.
    Other {
        method: String,
    },
}

impl Event {
    /// Parses an event from its `method` and `params` (absent params count as `{}`).
    pub fn parse(method: &str, params: &str) -> Event {
        fn p<T: for<'de> Deserialize<'de>>(
            method: &str,
            params: &str,
            f: impl FnOnce(T) -> Event,
        ) -> Event {
            match serde_json::from_str::<T>(params) {
                Ok(v) => f(v),
                Err(e) => Event::Unparsed {
                    method: method.to_owned(),
                    error: e.to_string(),
                },
            }
        }
        let params = if params.trim().is_empty() {
            "{}"
        } else {
            params
        };
        match method {
            "Page.javascriptDialogOpening" => p(method, params, Event::DialogOpening),
            "Page.javascriptDialogClosed" => p(method, params, Event::DialogClosed),
            "Page.frameAttached" => p(method, params, Event::FrameAttached),
            "Page.frameNavigated" => p(method, params, Event::FrameNavigated),
            "Page.frameDetached" => p(method, params, Event::FrameDetached),
            "Page.loadEventFired" => Event::LoadEventFired,
            "Target.attachedToTarget" => p(method, params, Event::AttachedToTarget),
            "Target.detachedFromTarget" => p(method, params, Event::DetachedFromTarget),
            "Target.targetInfoChanged" => p(method, params, Event::TargetInfoChanged),
            "Target.targetDestroyed" => p(method, params, Event::TargetDestroyed),
            "Target.targetCrashed" => p(method, params, Event::TargetCrashed),
            "Inspector.detached" => Event::InspectorDetached,
            "Runtime.consoleAPICalled" => p(method, params, Event::ConsoleApiCalled),
            "Runtime.exceptionThrown" => p(method, params, Event::ExceptionThrown),
            "Fetch.requestPaused" => Event::FetchRequestPaused {
                params: params.to_owned(),
            },
            other => Event::Other {
                method: other.to_owned(),
            },
        }
    }
}

/// The error code Chromium answers `Page.handleJavaScriptDialog` with when it
/// has no dialog to answer on that session (`-32602 "No dialog is showing"`).
pub const ERROR_INVALID_PARAMS: i64 = -32602;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialog_opening_parses_with_unknown_fields_and_types() {
        let e = Event::parse(
            "Page.javascriptDialogOpening",
            r#"{"url":"http://a.test/","frameId":"F1","message":"hi","type":"print","hasBrowserHandler":false,"defaultPrompt":"","newField":1}"#,
        );
        match e {
            Event::DialogOpening(d) => {
                assert_eq!(d.dialog_type, DialogType::Other("print".into()));
                assert_eq!(d.frame_id, Some(FrameId::from("F1")));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn bad_params_are_unparsed_not_a_panic() {
        let e = Event::parse("Page.frameAttached", r#"{"frameId":3}"#);
        assert!(matches!(e, Event::Unparsed { .. }));
        let e = Event::parse("Page.frameAttached", "not json");
        assert!(matches!(e, Event::Unparsed { .. }));
    }
}
