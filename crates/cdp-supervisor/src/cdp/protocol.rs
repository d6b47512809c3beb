//! Typed parameters for the CDP events the supervisor reads, and the ids it
//! keeps (`sessionId`, `targetId`, `frameId`).
//!
//! Parsing is tolerant on purpose: unknown fields are ignored, unknown enum
//! strings are kept (`DialogType::Other`), and an event whose params do not
//! parse is reported as [`Event::Unparsed`] instead of failing the
//! connection. Chromium adds fields every release; a supervisor must not die
//! on a new one.

use crate::cdp::compact::Compact;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
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
    /// `alert()`: OK only.
    Alert,
    /// `confirm()`: OK (true) or Cancel (false).
    Confirm,
    /// `prompt()`: text (OK) or null (Cancel).
    Prompt,
    /// `beforeunload`: leave (accept) or stay (dismiss).
    Beforeunload,
    /// A file input's chooser (`Page.fileChooserOpened`, with interception
    /// on): choose files (accept) or leave the input unchanged (dismiss).
    FileChooser,
    /// An HTTP authentication challenge (`Fetch.authRequired`): credentials
    /// (accept, `Fetch.continueWithAuth` `ProvideCredentials`) or cancel
    /// (dismiss, `CancelAuth`: the page shows the server's 401 body).
    HttpAuth,
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
            DialogType::FileChooser => "file_chooser",
            DialogType::HttpAuth => "http_auth",
            DialogType::Other(s) => s,
        }
    }
}

impl fmt::Display for DialogType {
    /// The CDP spelling, honouring width and alignment (`{:<12}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl PartialEq<str> for DialogType {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for DialogType {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<&str> for DialogType {
    fn from(s: &str) -> Self {
        match s {
            "alert" => DialogType::Alert,
            "confirm" => DialogType::Confirm,
            "prompt" => DialogType::Prompt,
            "beforeunload" => DialogType::Beforeunload,
            "file_chooser" => DialogType::FileChooser,
            "http_auth" => DialogType::HttpAuth,
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
    /// The URL of the document that opened it.
    pub url: String,
    /// The frame that opened the dialog (Chromium ≥ 127; older builds omit it).
    #[serde(default)]
    pub frame_id: Option<FrameId>,
    #[serde(default)]
    /// The text shown (Chromium cuts it at 10 240 chars).
    pub message: String,
    #[serde(rename = "type")]
    /// Which kind of dialog (`type`).
    pub dialog_type: DialogType,
    #[serde(default)]
    /// The prompt's default text (`""` for other types).
    pub default_prompt: Option<String>,
}

/// `Fetch.authRequired` (with `Fetch.enable{handleAuthRequests:true}`): a
/// document request paused on a `401`/`407` challenge until
/// `Fetch.continueWithAuth` answers it. A wrong answer brings the same
/// `request_id` back with a new challenge.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthRequired {
    /// The paused request (`Fetch.RequestId`): what the answer names.
    pub request_id: String,
    /// The request; only its URL is read.
    pub request: AuthRequest,
    /// The frame whose document it is.
    #[serde(default)]
    pub frame_id: Option<FrameId>,
    /// The challenge.
    pub auth_challenge: AuthChallenge,
}

/// `Fetch.authRequired.request`, the part we read.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AuthRequest {
    /// The URL requested.
    #[serde(default)]
    pub url: String,
}

/// `Fetch.AuthChallenge`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AuthChallenge {
    /// `Server` (401) or `Proxy` (407).
    #[serde(default)]
    pub source: Option<String>,
    /// The origin of the challenger (`http://host:port`).
    #[serde(default)]
    pub origin: String,
    /// `basic`, `digest`, … as Chromium spells it.
    #[serde(default)]
    pub scheme: String,
    /// The realm (may be empty).
    #[serde(default)]
    pub realm: String,
}

/// `Page.fileChooserOpened` (sent while `Page.setInterceptFileChooserDialog`
/// is on: the chooser is not shown, the input waits for `DOM.setFileInputFiles`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChooserOpened {
    /// The frame of the file input.
    pub frame_id: FrameId,
    /// `selectSingle` or `selectMultiple`.
    pub mode: String,
    /// The file input (`DOM.BackendNodeId`); absent for a chooser opened
    /// without an input (`showOpenFilePicker`).
    #[serde(default)]
    pub backend_node_id: Option<i64>,
}

/// `Page.javascriptDialogClosed`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogClosed {
    #[serde(default)]
    /// The frame whose dialog closed (Chromium ≥ 127).
    pub frame_id: Option<FrameId>,
    #[serde(default)]
    /// Whether it was accepted.
    pub result: bool,
    #[serde(default)]
    /// The text a prompt returned (`""` when dismissed or not a prompt).
    pub user_input: String,
}

/// `Page.Frame`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameInfo {
    /// The frame id.
    pub id: FrameId,
    #[serde(default)]
    /// The parent frame; `None` for a target's main frame.
    pub parent_id: Option<FrameId>,
    #[serde(default)]
    /// The document URL, without the fragment.
    pub url: String,
    #[serde(default)]
    /// The fragment (`#…`), when any.
    pub url_fragment: Option<String>,
    #[serde(default)]
    /// The security origin (`scheme://host:port`, `"null"` for opaque ones).
    pub security_origin: Option<String>,
    /// The document's loader (`Page.navigate` answers the same id for the
    /// navigation it started).
    #[serde(default)]
    pub loader_id: Option<String>,
    /// Set when the frame shows an error page: the URL that failed to load
    /// (`url` is then the error page's).
    #[serde(default)]
    pub unreachable_url: Option<String>,
}

impl FrameInfo {
    /// The URL with its fragment (`url` + `urlFragment`), as the page shows it.
    pub fn full_url(&self) -> String {
        match &self.url_fragment {
            Some(frag) if !frag.is_empty() => format!("{}{}", self.url, frag),
            _ => self.url.clone(),
        }
    }
}

/// `Page.FrameTree` (the result of `Page.getFrameTree` is `{frameTree: FrameTree}`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameTree {
    /// This frame.
    pub frame: FrameInfo,
    #[serde(default)]
    /// Its child frames (same-process only: OOPIF subtrees live in their own sessions).
    pub child_frames: Vec<FrameTree>,
}

/// `Page.frameAttached`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameAttached {
    /// The new frame.
    pub frame_id: FrameId,
    /// Its parent.
    pub parent_frame_id: FrameId,
}

/// `Page.frameNavigated`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameNavigated {
    /// The frame and its new document's URL.
    pub frame: FrameInfo,
    /// `"Navigation"`, or `"BackForwardCacheRestore"` when the document
    /// came back from the back-forward cache: its subframes are then not
    /// reported again (no `frameAttached`).
    #[serde(default, rename = "type")]
    pub navigation_type: Option<String>,
}

/// `Page.frameDetached`. `reason` is `"remove"` or `"swap"` (the frame moved
/// to another process: an OOPIF target takes it over).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameDetached {
    /// The detached frame.
    pub frame_id: FrameId,
    #[serde(default)]
    /// `"remove"` or `"swap"` (static when read in place: a detach flood
    /// allocates no reason).
    pub reason: Option<Cow<'static, str>>,
}

impl FrameAttached {
    /// The params read in place when compact; `None` for anything else,
    /// which [`Event::parse`] then reads with serde (as
    /// [`ConsoleApiCalled`]'s fast path).
    fn read_compact(params: &str) -> Option<FrameAttached> {
        let (mut frame_id, mut parent) = (None, None);
        Compact::whole(params, |r| {
            r.fields(|key, r| {
                let slot = match key {
                    "frameId" => &mut frame_id,
                    "parentFrameId" => &mut parent,
                    _ => return r.skip_value(),
                };
                // A field twice is serde's error.
                slot.is_none().then_some(())?;
                *slot = Some(r.plain_str()?);
                Some(())
            })
        })?;
        Some(FrameAttached {
            frame_id: FrameId::from(frame_id?),
            parent_frame_id: FrameId::from(parent?),
        })
    }
}

impl FrameDetached {
    /// The params read in place when compact (see [`FrameAttached::read_compact`]).
    fn read_compact(params: &str) -> Option<FrameDetached> {
        let (mut frame_id, mut reason) = (None, None);
        Compact::whole(params, |r| {
            r.fields(|key, r| {
                match key {
                    "frameId" if frame_id.is_none() => frame_id = Some(r.plain_str()?),
                    "reason" if reason.is_none() => reason = Some(r.or_null(|r| r.plain_str())?),
                    "frameId" | "reason" => return None,
                    _ => r.skip_value()?,
                }
                Some(())
            })
        })?;
        Some(FrameDetached {
            frame_id: FrameId::from(frame_id?),
            reason: reason.flatten().map(|r| match r {
                "remove" => Cow::Borrowed("remove"),
                "swap" => Cow::Borrowed("swap"),
                other => Cow::Owned(other.to_owned()),
            }),
        })
    }
}

/// `Page.lifecycleEvent` (after `Page.setLifecycleEventsEnabled`): `name` is
/// `init`, `DOMContentLoaded`, `load`… for the document of `loader_id`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleEvent {
    /// The frame.
    pub frame_id: FrameId,
    /// The document the event is about.
    pub loader_id: String,
    /// Which moment of its life.
    pub name: String,
}

/// `Target.TargetInfo`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfo {
    /// The target id (for a page or OOPIF also its main frame id).
    pub target_id: TargetId,
    #[serde(rename = "type")]
    /// `page`, `iframe`, `worker`, `browser_ui`…
    pub target_type: String,
    #[serde(default)]
    /// The page title (the URL until the document sets one).
    pub title: String,
    #[serde(default)]
    /// The current URL.
    pub url: String,
    #[serde(default)]
    /// Whether some client is attached.
    pub attached: bool,
    #[serde(default)]
    /// For an OOPIF: the frame that holds it (`targetInfo.parentFrameId`);
    /// the only word on its parent for a client attaching after load, when
    /// no `frameAttached` comes for an OOPIF nested in a same-process iframe.
    pub parent_frame_id: Option<FrameId>,
    #[serde(default)]
    /// For a page opened by another (`window.open`, `target=_blank`): the
    /// opener's target id (`targetInfo.openerId`).
    pub opener_id: Option<TargetId>,
    #[serde(default)]
    /// The browser context the target lives in (`targetInfo.browserContextId`).
    pub browser_context_id: Option<String>,
}

/// `Target.attachedToTarget`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedToTarget {
    /// The new flatten-mode session.
    pub session_id: SessionId,
    /// What it is attached to.
    pub target_info: TargetInfo,
    #[serde(default)]
    /// Whether the target waits for `Runtime.runIfWaitingForDebugger`.
    pub waiting_for_debugger: bool,
}

/// `Target.detachedFromTarget`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetachedFromTarget {
    /// The session that ended.
    pub session_id: SessionId,
    #[serde(default)]
    /// Its target, when given.
    pub target_id: Option<TargetId>,
}

/// `Target.targetInfoChanged`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInfoChanged {
    /// The target's new info.
    pub target_info: TargetInfo,
}

/// `Target.targetDestroyed` / `Target.targetCrashed`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetGone {
    /// The target that went away.
    pub target_id: TargetId,
}

/// `Browser.downloadWillBegin` (on the browser session that sent
/// `Browser.setDownloadBehavior{eventsEnabled:true}`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadWillBegin {
    /// The frame whose navigation (or `download` link) started it.
    #[serde(default)]
    pub frame_id: Option<FrameId>,
    /// Chromium's id of the download; with `allowAndName` also its file name.
    pub guid: String,
    /// The URL downloaded.
    #[serde(default)]
    pub url: String,
    /// The file name the server or the page suggests.
    #[serde(default)]
    pub suggested_filename: String,
}

/// `Browser.downloadProgress`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadProgress {
    /// Which download (`downloadWillBegin.guid`).
    pub guid: String,
    /// Bytes expected; `0` when the server sent no length.
    #[serde(default)]
    pub total_bytes: f64,
    /// Bytes received so far (`0` once canceled).
    #[serde(default)]
    pub received_bytes: f64,
    /// `inProgress`, `completed` or `canceled`.
    #[serde(default)]
    pub state: String,
}

/// `Runtime.RemoteObject`, the fields needed to print it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteObject {
    #[serde(rename = "type", default)]
    /// `string`, `number`, `object`…
    pub object_type: String,
    #[serde(default)]
    /// The value, for primitives and `returnByValue`.
    pub value: Option<Value>,
    #[serde(default)]
    /// `NaN`, `Infinity`, `-0`, bigints.
    pub unserializable_value: Option<String>,
    #[serde(default)]
    /// How DevTools prints it (objects, errors).
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

/// `Runtime.consoleAPICalled`, what a console of errors keeps of it. The
/// params are read in place (strings borrowed from the frame), and the
/// arguments are printed only for the calls such a console keeps
/// ([`ConsoleApiCalled::is_error`]): a flood of `console.log` allocates
/// nothing for its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsoleApiCalled {
    /// `log`, `error`, `assert`, `warning`… (borrowed from a static list
    /// for the types Chromium sends: a flood allocates no name).
    pub call_type: Cow<'static, str>,
    /// For `error` and `assert`: the arguments as the console prints them
    /// ([`RemoteObject::to_text`]), separated by spaces. Empty for other calls.
    pub text: String,
    /// When, in milliseconds since the Unix epoch.
    pub timestamp: Option<f64>,
    /// For `error` and `assert`: the script URL of the innermost stack
    /// frame, `None` when there is none or it is empty (inline evaluation).
    pub url: Option<String>,
}

/// `Runtime.consoleAPICalled.type`'s values (CDP 1.3, Chromium 156).
const CONSOLE_CALL_TYPES: [&str; 18] = [
    "log",
    "debug",
    "info",
    "error",
    "warning",
    "dir",
    "dirxml",
    "table",
    "trace",
    "clear",
    "startGroup",
    "startGroupCollapsed",
    "endGroup",
    "assert",
    "profile",
    "profileEnd",
    "count",
    "timeEnd",
];

impl ConsoleApiCalled {
    /// Whether a call of this type is an error: `error` and `assert`.
    pub fn is_error(call_type: &str) -> bool {
        matches!(call_type, "error" | "assert")
    }

    /// `call_type` as kept: a known type borrowed, any other copied.
    fn call_type_of(call_type: &str) -> Cow<'static, str> {
        match CONSOLE_CALL_TYPES.iter().find(|t| **t == call_type) {
            Some(t) => Cow::Borrowed(t),
            None => Cow::Owned(call_type.to_owned()),
        }
    }

    /// The params read in place when they have the compact shape Chromium
    /// sends (`type` before `args`, no escapes in the strings it keeps);
    /// `None` for anything else, which [`Event::parse`] then reads with
    /// serde. Where it gives `Some`, it is what serde gives.
    fn read_compact(params: &str) -> Option<ConsoleApiCalled> {
        let mut call_type: Option<&str> = None;
        let mut text: Option<String> = None;
        let mut timestamp: Option<Option<f64>> = None;
        // The stack's innermost URL: absent, `null`, or given (maybe none).
        let mut stack: Option<Option<Option<&str>>> = None;
        Compact::whole(params, |r| {
            r.fields(|key, r| {
                match key {
                    "type" if call_type.is_none() => call_type = Some(r.plain_str()?),
                    "args" if text.is_none() => {
                        text = Some(read_args(r, ConsoleApiCalled::is_error(call_type?))?)
                    }
                    "timestamp" if timestamp.is_none() => {
                        timestamp = Some(r.or_null(Compact::number_f64)?)
                    }
                    "stackTrace" if stack.is_none() => stack = Some(r.or_null(read_stack_url)?),
                    // A field twice: serde's error.
                    "type" | "args" | "timestamp" | "stackTrace" => return None,
                    _ => r.skip_value()?,
                }
                Some(())
            })
        })?;
        let call_type = call_type?;
        let error = ConsoleApiCalled::is_error(call_type);
        Some(ConsoleApiCalled {
            call_type: ConsoleApiCalled::call_type_of(call_type),
            text: text.unwrap_or_default(),
            timestamp: timestamp.flatten(),
            url: stack
                .flatten()
                .flatten()
                .filter(|u| error && !u.is_empty())
                .map(str::to_owned),
        })
    }
}

/// [`Args`] read in place: the arguments printed (when `print`) as
/// [`RemoteObjectWire::print`] prints them, else only checked.
fn read_args(r: &mut Compact<'_>, print: bool) -> Option<String> {
    let mut text = String::new();
    let mut first = true;
    r.items(|r| {
        let arg = read_remote_object(r)?;
        if print {
            if !first {
                text.push(' ');
            }
            first = false;
            arg.print(&mut text).ok()?;
        }
        Some(())
    })?;
    Some(text)
}

/// A [`RemoteObjectWire`] read in place (its strings plain).
fn read_remote_object<'a>(r: &mut Compact<'a>) -> Option<RemoteParts<'a>> {
    let (mut object_type, mut value, mut unserializable_value, mut description) =
        (None, None, None, None);
    // `Option<_>` fields: `null` is none; each may come once.
    fn optional<'a>(r: &mut Compact<'a>, slot: &mut Option<Option<&'a str>>) -> Option<()> {
        if slot.is_some() {
            return None;
        }
        *slot = Some(r.or_null(|r| r.plain_str())?);
        Some(())
    }
    r.fields(|key, r| {
        match key {
            "type" if object_type.is_none() => object_type = Some(r.plain_str()?),
            "value" if value.is_none() => value = Some(r.or_null(|r| r.raw_value())?),
            "unserializableValue" => optional(r, &mut unserializable_value)?,
            "description" => optional(r, &mut description)?,
            "type" | "value" => return None,
            _ => r.skip_value()?,
        }
        Some(())
    })?;
    Some(RemoteParts {
        object_type: object_type.unwrap_or_default(),
        value: value.flatten(),
        unserializable_value: unserializable_value.flatten(),
        description: description.flatten(),
    })
}

/// A `stackTrace` object read in place: its innermost frame's URL
/// (`None` when it has no frame); every frame is checked.
fn read_stack_url<'a>(r: &mut Compact<'a>) -> Option<Option<&'a str>> {
    let mut first_url: Option<Option<&'a str>> = None;
    r.fields(|key, r| {
        match key {
            "callFrames" if first_url.is_none() => {
                let mut first = None;
                r.items(|r| {
                    let url = read_call_frame_url(r)?;
                    // A frame without one has `""` (serde's default).
                    first.get_or_insert(url.unwrap_or_default());
                    Some(())
                })?;
                first_url = Some(first);
            }
            "callFrames" => return None,
            _ => r.skip_value()?,
        }
        Some(())
    })?;
    Some(first_url.flatten())
}

/// One `Runtime.CallFrame` read in place: its `url`, if it has one.
fn read_call_frame_url<'a>(r: &mut Compact<'a>) -> Option<Option<&'a str>> {
    let mut url = None;
    r.fields(|key, r| {
        match key {
            "url" if url.is_none() => url = Some(r.plain_str()?),
            "url" => return None,
            _ => r.skip_value()?,
        }
        Some(())
    })?;
    Some(url)
}

/// The fields of `Runtime.consoleAPICalled` that [`ConsoleApiCalled`] reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ConsoleField {
    Type,
    Args,
    Timestamp,
    StackTrace,
    #[serde(other)]
    Other,
}

/// [`RemoteObject`] borrowed from the frame; `value` left as JSON text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteObjectWire<'a> {
    #[serde(rename = "type", default, borrow)]
    object_type: Cow<'a, str>,
    #[serde(default, borrow)]
    value: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow)]
    unserializable_value: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
}

impl RemoteObjectWire<'_> {
    /// Appends what [`RemoteObject::to_text`] gives for it.
    fn print(&self, out: &mut String) -> Result<(), serde_json::Error> {
        RemoteParts {
            object_type: &self.object_type,
            value: self.value.map(serde_json::value::RawValue::get),
            unserializable_value: self.unserializable_value.as_deref(),
            description: self.description.as_deref(),
        }
        .print(out)
    }
}

/// A `Runtime.RemoteObject`'s printed fields, borrowed (`value` as JSON text).
struct RemoteParts<'a> {
    object_type: &'a str,
    value: Option<&'a str>,
    unserializable_value: Option<&'a str>,
    description: Option<&'a str>,
}

impl RemoteParts<'_> {
    /// Appends what [`RemoteObject::to_text`] gives for it.
    fn print(&self, out: &mut String) -> Result<(), serde_json::Error> {
        match (self.value, self.unserializable_value, self.description) {
            // A string without escapes is its text between the quotes (the
            // raw value is valid JSON): nothing to decode.
            (Some(v), _, _) if v.starts_with('"') && !v.contains('\\') => {
                out.push_str(&v[1..v.len() - 1])
            }
            (Some(v), _, _) if v.starts_with('"') => {
                out.push_str(&serde_json::from_str::<String>(v)?)
            }
            (Some(v), _, _) => out.push_str(&serde_json::from_str::<Value>(v)?.to_string()),
            (None, Some(u), _) => out.push_str(u),
            (None, None, Some(d)) => out.push_str(d),
            (None, None, None) => out.push_str(self.object_type),
        }
        Ok(())
    }
}

/// A console call's `args` (each a [`RemoteObjectWire`]), read one by one
/// in place: printed into one text, separated by spaces, when `print`,
/// else only checked. No list of them is kept.
struct Args {
    print: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for Args {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Args {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of Runtime.RemoteObject")
    }

    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<String, S::Error> {
        let mut text = String::new();
        let mut first = true;
        while let Some(arg) = seq.next_element::<RemoteObjectWire<'de>>()? {
            if self.print {
                if !first {
                    text.push(' ');
                }
                first = false;
                arg.print(&mut text).map_err(serde::de::Error::custom)?;
            }
        }
        Ok(text)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StackTraceWire<'a> {
    #[serde(default, borrow)]
    call_frames: FirstFrameUrl<'a>,
}

/// The URL of a stack's innermost frame (`callFrames[0].url`); the other
/// frames are checked, not kept.
#[derive(Default)]
struct FirstFrameUrl<'a>(Option<Cow<'a, str>>);

#[derive(Deserialize)]
struct CallFrameWire<'a> {
    #[serde(default, borrow)]
    url: Cow<'a, str>,
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstFrameUrl<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Frames<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Frames<'a> {
            type Value = FirstFrameUrl<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of Runtime.CallFrame")
            }

            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<FirstFrameUrl<'a>, S::Error> {
                let first = seq.next_element::<CallFrameWire<'a>>()?.map(|f| f.url);
                while seq.next_element::<CallFrameWire<'a>>()?.is_some() {}
                Ok(FirstFrameUrl(first))
            }
        }
        d.deserialize_seq(Frames(std::marker::PhantomData))
    }
}

/// Read field by field: when `type` comes before `args` (as Chromium
/// sends it) the arguments are printed as they are read, else they are
/// kept as raw JSON until the type is known.
impl<'de> Deserialize<'de> for ConsoleApiCalled {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{DeserializeSeed, Error, IgnoredAny, MapAccess, Visitor};
        use serde_json::value::RawValue;

        struct Wire;
        impl<'de> Visitor<'de> for Wire {
            type Value = ConsoleApiCalled;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Runtime.consoleAPICalled params")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ConsoleApiCalled, A::Error> {
                let mut call_type: Option<Cow<'de, str>> = None;
                let mut text: Option<String> = None;
                let mut raw_args: Option<&'de RawValue> = None;
                let mut timestamp: Option<Option<f64>> = None;
                let mut stack: Option<Option<StackTraceWire<'de>>> = None;
                while let Some(field) = map.next_key::<ConsoleField>()? {
                    match field {
                        ConsoleField::Type if call_type.is_some() => {
                            return Err(A::Error::duplicate_field("type"));
                        }
                        ConsoleField::Type => call_type = Some(map.next_value()?),
                        ConsoleField::Args if text.is_some() || raw_args.is_some() => {
                            return Err(A::Error::duplicate_field("args"));
                        }
                        ConsoleField::Args => match &call_type {
                            Some(t) => {
                                let print = ConsoleApiCalled::is_error(t);
                                text = Some(map.next_value_seed(Args { print })?);
                            }
                            None => raw_args = Some(map.next_value()?),
                        },
                        ConsoleField::Timestamp if timestamp.is_some() => {
                            return Err(A::Error::duplicate_field("timestamp"));
                        }
                        ConsoleField::Timestamp => timestamp = Some(map.next_value()?),
                        ConsoleField::StackTrace if stack.is_some() => {
                            return Err(A::Error::duplicate_field("stackTrace"));
                        }
                        ConsoleField::StackTrace => stack = Some(map.next_value()?),
                        ConsoleField::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let call_type = call_type.ok_or_else(|| A::Error::missing_field("type"))?;
                let error = ConsoleApiCalled::is_error(&call_type);
                if let Some(raw) = raw_args {
                    let mut de = serde_json::Deserializer::from_str(raw.get());
                    text = Some(
                        Args { print: error }
                            .deserialize(&mut de)
                            .map_err(A::Error::custom)?,
                    );
                }
                let url = stack
                    .flatten()
                    .and_then(|s| s.call_frames.0)
                    .filter(|u| error && !u.is_empty())
                    .map(Cow::into_owned);
                Ok(ConsoleApiCalled {
                    call_type: ConsoleApiCalled::call_type_of(&call_type),
                    text: text.unwrap_or_default(),
                    timestamp: timestamp.flatten(),
                    url,
                })
            }
        }
        d.deserialize_struct(
            "ConsoleApiCalled",
            &["type", "args", "timestamp", "stackTrace"],
            Wire,
        )
    }
}

/// `Runtime.ExceptionDetails`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionDetails {
    #[serde(default)]
    /// The message (`"Uncaught"` …).
    pub text: String,
    #[serde(default)]
    /// The script URL.
    pub url: Option<String>,
    #[serde(default)]
    /// The thrown value.
    pub exception: Option<RemoteObject>,
}

/// `Runtime.exceptionThrown`. `timestamp` is milliseconds since the Unix epoch.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionThrown {
    #[serde(default)]
    /// When, in milliseconds since the Unix epoch.
    pub timestamp: Option<f64>,
    /// What was thrown, and where.
    pub exception_details: ExceptionDetails,
}

/// `Page.frameRequestedNavigation` / `frameStartedNavigating` /
/// `frameScheduledNavigation`, the fields we keep.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigationRequested {
    /// The frame that will navigate.
    pub frame_id: FrameId,
    #[serde(default)]
    /// The navigation's loader (`frameStartedNavigating` only).
    pub loader_id: Option<String>,
    /// Where the document goes (`frameRequestedNavigation` only):
    /// `currentTab`, or `newTab`/`newWindow`/`download` for one that leaves
    /// the frame as it is.
    #[serde(default)]
    pub disposition: Option<String>,
    /// Where it goes (absent from some Chromium versions' events).
    #[serde(default)]
    pub url: Option<String>,
}

/// `Page.frameStoppedLoading`: a frame's loading ended — after its new
/// document's load, or with no new document at all (a `204`, a navigation
/// that became a download).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameStoppedLoading {
    /// The frame.
    pub frame_id: FrameId,
}

/// `Page.navigatedWithinDocument`: a frame's URL changed without a new
/// document (`history.pushState` / `replaceState`, a fragment, back or
/// forward between such entries). Its origin and document stay.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavigatedWithinDocument {
    /// The frame whose URL changed.
    pub frame_id: FrameId,
    /// Its URL now, fragment included.
    pub url: String,
}

/// A CDP event the supervisor understands, parsed from its method name and
/// params. Everything else is [`Event::Other`].
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `Page.javascriptDialogOpening`.
    DialogOpening(DialogOpening),
    /// `Page.javascriptDialogClosed`.
    DialogClosed(DialogClosed),
    /// `Page.frameAttached`.
    FrameAttached(FrameAttached),
    /// `Page.frameNavigated`.
    FrameNavigated(FrameNavigated),
    /// `Page.frameDetached`.
    FrameDetached(FrameDetached),
    /// `Page.navigatedWithinDocument`.
    NavigatedWithinDocument(NavigatedWithinDocument),
    /// `Page.loadEventFired` (on the session it arrives on).
    LoadEventFired,
    /// `Page.lifecycleEvent`.
    Lifecycle(LifecycleEvent),
    /// `Target.attachedToTarget` (auto-attach or our own attach).
    AttachedToTarget(AttachedToTarget),
    /// `Target.detachedFromTarget`.
    DetachedFromTarget(DetachedFromTarget),
    /// `Target.targetInfoChanged`.
    TargetInfoChanged(TargetInfoChanged),
    /// `Target.targetDestroyed`.
    TargetDestroyed(TargetGone),
    /// `Target.targetCrashed`.
    TargetCrashed(TargetGone),
    /// `Inspector.detached`: the session's target is gone or taken over.
    InspectorDetached,
    /// `Page.fileChooserOpened`.
    FileChooserOpened(FileChooserOpened),
    /// `Inspector.targetCrashed`: the session's renderer crashed (sent on
    /// every session of that renderer process).
    InspectorTargetCrashed,
    /// `Runtime.consoleAPICalled`.
    ConsoleApiCalled(ConsoleApiCalled),
    /// `Runtime.exceptionThrown`.
    ExceptionThrown(ExceptionThrown),
    /// A frame is about to navigate (`Page.frameRequestedNavigation`,
    /// `Page.frameStartedNavigating`, `Page.frameScheduledNavigation`): lets
    /// the core tie a navigation to the command in flight that caused it.
    NavigationRequested(NavigationRequested),
    /// `Page.frameStoppedLoading`.
    FrameStoppedLoading(FrameStoppedLoading),
    /// `Fetch.authRequired`: an HTTP authentication challenge.
    FetchAuthRequired(AuthRequired),
    /// `Browser.downloadWillBegin`.
    DownloadWillBegin(DownloadWillBegin),
    /// `Browser.downloadProgress`.
    DownloadProgress(DownloadProgress),
    /// `Fetch.requestPaused`, params kept raw (only the dialog bridge reads them).
    FetchRequestPaused {
        /// The raw params JSON.
        params: String,
    },
    /// A method we know whose params did not parse; kept for the log.
    Unparsed {
        /// The CDP method.
        method: String,
        /// Why its params did not parse.
        error: String,
    },
    /// A method we do not act on.
    Other {
        /// The CDP method.
        method: String,
    },
}

impl Event {
    /// Whether [`Event::parse`] gives `method` a meaning (anything else is
    /// [`Event::Other`], which the supervisor ignores): what the supervisor's
    /// connection keeps ([`crate::cdp::connection::Connection::set_event_filter`]).
    pub fn handled(method: &str) -> bool {
        matches!(
            method,
            "Page.javascriptDialogOpening"
                | "Page.javascriptDialogClosed"
                | "Page.frameAttached"
                | "Page.frameNavigated"
                | "Page.frameDetached"
                | "Page.navigatedWithinDocument"
                | "Page.loadEventFired"
                | "Page.lifecycleEvent"
                | "Target.attachedToTarget"
                | "Target.detachedFromTarget"
                | "Target.targetInfoChanged"
                | "Target.targetDestroyed"
                | "Target.targetCrashed"
                | "Inspector.detached"
                | "Page.fileChooserOpened"
                | "Inspector.targetCrashed"
                | "Runtime.consoleAPICalled"
                | "Runtime.exceptionThrown"
                | "Page.frameRequestedNavigation"
                | "Page.frameStartedNavigating"
                | "Page.frameScheduledNavigation"
                | "Page.frameStoppedLoading"
                | "Fetch.requestPaused"
                | "Fetch.authRequired"
                | "Browser.downloadWillBegin"
                | "Browser.downloadProgress"
                // The live view's screen (handed over by the driver, not parsed here).
                | "Page.screencastFrame"
        )
    }

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
            "Page.frameAttached" => match FrameAttached::read_compact(params) {
                Some(a) => Event::FrameAttached(a),
                None => p(method, params, Event::FrameAttached),
            },
            "Page.frameNavigated" => p(method, params, Event::FrameNavigated),
            "Page.frameDetached" => match FrameDetached::read_compact(params) {
                Some(d) => Event::FrameDetached(d),
                None => p(method, params, Event::FrameDetached),
            },
            "Page.navigatedWithinDocument" => p(method, params, Event::NavigatedWithinDocument),
            "Page.loadEventFired" => Event::LoadEventFired,
            "Page.lifecycleEvent" => p(method, params, Event::Lifecycle),
            "Target.attachedToTarget" => p(method, params, Event::AttachedToTarget),
            "Target.detachedFromTarget" => p(method, params, Event::DetachedFromTarget),
            "Target.targetInfoChanged" => p(method, params, Event::TargetInfoChanged),
            "Target.targetDestroyed" => p(method, params, Event::TargetDestroyed),
            "Target.targetCrashed" => p(method, params, Event::TargetCrashed),
            "Inspector.detached" => Event::InspectorDetached,
            "Page.fileChooserOpened" => p(method, params, Event::FileChooserOpened),
            "Inspector.targetCrashed" => Event::InspectorTargetCrashed,
            "Runtime.consoleAPICalled" => match ConsoleApiCalled::read_compact(params) {
                Some(c) => Event::ConsoleApiCalled(c),
                None => p(method, params, Event::ConsoleApiCalled),
            },
            "Runtime.exceptionThrown" => p(method, params, Event::ExceptionThrown),
            "Page.frameRequestedNavigation"
            | "Page.frameStartedNavigating"
            | "Page.frameScheduledNavigation" => p(method, params, Event::NavigationRequested),
            "Page.frameStoppedLoading" => p(method, params, Event::FrameStoppedLoading),
            "Fetch.authRequired" => p(method, params, Event::FetchAuthRequired),
            "Browser.downloadWillBegin" => p(method, params, Event::DownloadWillBegin),
            "Browser.downloadProgress" => p(method, params, Event::DownloadProgress),
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

    #[test]
    fn console_errors_print_their_arguments_as_remote_objects_do() {
        let args = serde_json::json!([
            {"type": "string", "value": "plain"},
            {"type": "string", "value": "esc \"q\" \u{e9}\n"},
            {"type": "number", "value": 1.5},
            {"type": "boolean", "value": true},
            {"type": "object", "value": {"b": [1, null]}},
            {"type": "number", "unserializableValue": "-0", "description": "-0"},
            {"type": "object", "className": "Error", "description": "Error: x\n    at f"},
            {"type": "undefined"},
        ]);
        let expected = serde_json::from_value::<Vec<RemoteObject>>(args.clone())
            .unwrap()
            .iter()
            .map(RemoteObject::to_text)
            .collect::<Vec<_>>()
            .join(" ");
        for call_type in ["error", "assert", "log"] {
            let params = serde_json::json!({
                "type": call_type, "args": args, "executionContextId": 1, "timestamp": 1.5e12,
                "stackTrace": {"callFrames": [{"url": "http://a.test/app.js", "lineNumber": 1}, {"url": "x"}]},
            });
            let Event::ConsoleApiCalled(c) =
                Event::parse("Runtime.consoleAPICalled", &params.to_string())
            else {
                panic!("parses");
            };
            assert_eq!(c.call_type, call_type);
            assert_eq!(c.timestamp, Some(1.5e12));
            if call_type == "log" {
                // Not an error: its arguments are not printed.
                assert_eq!((c.text.as_str(), c.url), ("", None));
            } else {
                assert_eq!(c.text, expected);
                assert_eq!(c.url.as_deref(), Some("http://a.test/app.js"));
            }
        }
        // An inline call has an empty URL: none is kept.
        let e = Event::parse(
            "Runtime.consoleAPICalled",
            r#"{"type":"error","args":[],"stackTrace":{"callFrames":[{"url":""}]}}"#,
        );
        assert!(matches!(
            e,
            Event::ConsoleApiCalled(ConsoleApiCalled { url: None, .. })
        ));
        // The type is required, as before.
        let e = Event::parse("Runtime.consoleAPICalled", r#"{"args":[]}"#);
        assert!(matches!(e, Event::Unparsed { .. }));
    }

    /// A fast path against serde on `params`: where it reads them, it reads
    /// what serde reads. Whether it read them.
    fn fast_agrees<T>(fast: fn(&str) -> Option<T>, params: &str) -> bool
    where
        T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let got = fast(params);
        if let Some(f) = &got {
            assert_eq!(
                Some(f),
                serde_json::from_str::<T>(params).ok().as_ref(),
                "{params}"
            );
        }
        got.is_some()
    }

    #[test]
    fn frame_attach_and_detach_params_read_in_place_are_what_serde_reads() {
        let attached = FrameAttached::read_compact;
        let detached = FrameDetached::read_compact;
        for ok in [
            r#"{"frameId":"F1","parentFrameId":"T1"}"#,
            r#"{"parentFrameId":"T1","frameId":"F1"}"#,
            r#"{"frameId":"F1","parentFrameId":"T1","stack":{"callFrames":[{"url":"a","lineNumber":1}]}}"#,
        ] {
            assert!(fast_agrees(attached, ok), "{ok}");
        }
        for ok in [
            r#"{"frameId":"F1","reason":"remove"}"#,
            r#"{"reason":"swap","frameId":"F1"}"#,
            r#"{"frameId":"F1"}"#,
            r#"{"frameId":"F1","reason":null}"#,
            r#"{"frameId":"F1","reason":"someday","x":[1,{"y":null}]}"#,
        ] {
            assert!(fast_agrees(detached, ok), "{ok}");
        }
        assert!(matches!(
            FrameDetached::read_compact(r#"{"frameId":"F1","reason":"remove"}"#),
            Some(FrameDetached {
                reason: Some(Cow::Borrowed("remove")),
                ..
            })
        ));
        // Left to serde: other shapes, escapes, a field twice or missing,
        // wrong types, broken JSON.
        for other in [
            r#"{"frameId":"F\u0031","parentFrameId":"T1"}"#,
            r#"{"frameId":"F1","frameId":"F2","parentFrameId":"T1"}"#,
            r#"{"frameId":"F1"}"#,
            r#"{"frameId":3,"parentFrameId":"T1"}"#,
            r#"{"frameId":null,"parentFrameId":"T1"}"#,
            r#"{"frameId":"F1", "parentFrameId":"T1"}"#,
            r#"["F1","T1"]"#,
            r#"{"frameId":"F1","parentFrameId":"T1","x":tru}"#,
            r#"{"frameId":"F1","parentFrameId":"T1"} "#,
        ] {
            assert!(!fast_agrees(attached, other), "{other}");
        }
        for other in [
            r#"{"frameId":"F1","reason":"remove","reason":"swap"}"#,
            r#"{"frameId":"F1","reason":5}"#,
            r#"{"reason":"remove"}"#,
            r#"{"frameId":"F1","reason":"re\"move"}"#,
        ] {
            assert!(!fast_agrees(detached, other), "{other}");
        }
        // Broken anywhere: never read otherwise than serde reads it.
        for base in [
            r#"{"frameId":"F1","parentFrameId":"T1","extra":{"a":[1,-2.5e3,true,null,"s\n"]}}"#,
            r#"{"frameId":"F1","reason":"remove","extra":{"a":[1,-2.5e3,true,null,"s\n"]}}"#,
        ] {
            for (i, _) in base.char_indices() {
                let rest: String = base[i..].chars().skip(1).collect();
                for text in [
                    base[..i].to_owned(),
                    format!("{}{rest}", &base[..i]),
                    format!("{}\"{}", &base[..i], &base[i..]),
                    format!("{},{}", &base[..i], &base[i..]),
                    format!("{}}}{}", &base[..i], &base[i..]),
                    format!("{}\\{}", &base[..i], &base[i..]),
                ] {
                    fast_agrees(attached, &text);
                    fast_agrees(detached, &text);
                }
            }
        }
    }

    /// `read_compact` against the serde reading of the same params: where
    /// the fast path reads them, it reads what serde reads.
    fn agrees_with_serde(params: &str) -> bool {
        let fast = ConsoleApiCalled::read_compact(params);
        let slow = serde_json::from_str::<ConsoleApiCalled>(params).ok();
        if let Some(f) = &fast {
            assert_eq!(Some(f), slow.as_ref(), "{params}");
        }
        fast.is_some()
    }

    #[test]
    fn console_params_read_in_place_are_what_serde_reads() {
        let args = r#"[{"type":"string","value":"boom 1"},{"type":"number","value":1.5e3,"description":"1500"},{"type":"object","className":"Error","description":"Error: x","objectId":"1.2","preview":{"type":"object","properties":[{"name":"a","type":"number","value":"1"}]}},{"type":"number","unserializableValue":"-0","description":"-0"},{"type":"undefined"},{"type":"object","subtype":"null","value":null},{"type":"string","value":"esc \"q\" \u00e9\n"},{"type":"boolean","value":false},{"type":"object","value":{"b":[1,null]}}]"#;
        let fields = [
            r#""type":"error""#.to_owned(),
            format!(r#""args":{args}"#),
            r#""executionContextId":1"#.to_owned(),
            r#""timestamp":1733080000123.456"#.to_owned(),
            r#""stackTrace":{"callFrames":[{"functionName":"f","scriptId":"9","url":"http://a.test/app.js","lineNumber":1,"columnNumber":2},{"url":"x"}],"parentId":{"id":"1"}}"#.to_owned(),
            r#""context":"top""#.to_owned(),
        ];
        // Every order of the fields: read in place whenever `type` comes
        // before `args` (as Chromium sends them), always as serde reads them.
        let mut order: Vec<usize> = (0..fields.len()).collect();
        let mut read = 0;
        loop {
            let parts: Vec<&str> = order.iter().map(|&i| fields[i].as_str()).collect();
            let params = format!("{{{}}}", parts.join(","));
            let at = |field| order.iter().position(|&i| i == field);
            let type_first = at(0) < at(1);
            assert_eq!(agrees_with_serde(&params), type_first, "{params}");
            read += usize::from(type_first);
            // The next permutation (lexicographic), until the last.
            let Some(i) = (1..order.len()).rev().find(|&i| order[i - 1] < order[i]) else {
                break;
            };
            let j = (i..order.len())
                .rev()
                .find(|&j| order[j] > order[i - 1])
                .expect("a larger one follows");
            order.swap(i - 1, j);
            order[i..].reverse();
        }
        assert_eq!(read, 360, "half of the 720 orders put type first");
        // Each kind of call type, a stack without frames or URL, null
        // stack and timestamp, no args, an integer timestamp.
        for ok in [
            r#"{"type":"log","args":[{"type":"string","value":"a"}],"stackTrace":{"callFrames":[]}}"#,
            r#"{"type":"assert","args":[],"stackTrace":{"callFrames":[{"lineNumber":3}]}}"#,
            r#"{"type":"error","args":[],"stackTrace":null,"timestamp":null}"#,
            r#"{"type":"error","stackTrace":{}}"#,
            r#"{"type":"warning","args":[{"type":"string","value":"w"}],"timestamp":5}"#,
            r#"{"type":"someday","args":[]}"#,
            r#"{"type":"error","args":[{"type":"string","value":"x","description":null,"unserializableValue":null}]}"#,
            r#"{"type":"error","args":[{"value":"no type"},{}]}"#,
        ] {
            assert!(agrees_with_serde(ok), "read in place: {ok}");
        }
        // Not the compact shape, or not valid: serde decides.
        for other in [
            r#" {"type":"error","args":[]}"#,
            r#"{"type":"error","args":[]} "#,
            r#"{"type": "error","args":[]}"#,
            r#"{"ty\u0070e":"error","args":[]}"#,
            r#"{"type":"err\u006fr","args":[]}"#,
            r#"{"type":"error","type":"log","args":[]}"#,
            r#"{"type":"error","args":[],"args":[]}"#,
            r#"{"type":"error","args":[{"type":"string","value":"a","value":"b"}]}"#,
            r#"{"type":"error","args":[{"type":3}]}"#,
            r#"{"type":"error","args":[{"type":"string","description":"d\"q"}]}"#,
            r#"{"type":"error","args":[{"type":"number","value":1e400}]}"#,
            r#"{"type":"error","args":[1]}"#,
            r#"{"type":"error","args":null}"#,
            r#"{"type":"error","timestamp":"5"}"#,
            r#"{"type":"error","stackTrace":{"callFrames":[{"url":"a","url":"b"}]}}"#,
            r#"{"type":"error","stackTrace":{"callFrames":[{"url":"a\/b"}]}}"#,
            r#"{"type":"error","stackTrace":{"callFrames":null}}"#,
            r#"{"type":"error","executionContextId":01}"#,
            r#"{"type":"error","x":tru}"#,
            r#"{"type":"error","x":"\q"}"#,
            "{\"type\":\"error\",\"x\":\"a\u{1}\"}",
            r#"{"args":[],"type":"error"}"#,
            r#"{"args":[]}"#,
            "{}",
            "",
            "[]",
        ] {
            assert!(!agrees_with_serde(other), "left to serde: {other}");
        }
        // Broken anywhere: never read otherwise than serde reads it.
        let base = format!(
            r#"{{"type":"error","args":{args},"executionContextId":1,"timestamp":1.7e12,"stackTrace":{{"callFrames":[{{"url":"http://a.test/a.js"}}]}}}}"#
        );
        assert!(agrees_with_serde(&base));
        for (i, _) in base.char_indices() {
            agrees_with_serde(&base[..i]);
            let rest: String = base[i..].chars().skip(1).collect();
            agrees_with_serde(&format!("{}{rest}", &base[..i]));
            for c in ['"', '\\', ',', '}', ']', '0', 'n', ' ', '\u{1}'] {
                agrees_with_serde(&format!("{}{c}{}", &base[..i], &base[i..]));
            }
        }
    }

    #[test]
    fn known_console_call_types_are_not_copied() {
        for t in CONSOLE_CALL_TYPES {
            assert!(matches!(
                ConsoleApiCalled::call_type_of(t),
                Cow::Borrowed(_)
            ));
        }
        assert_eq!(ConsoleApiCalled::call_type_of("someday"), "someday");
    }

    #[test]
    fn console_arguments_read_before_the_type_print_the_same() {
        let params = r#"{"args":[{"type":"string","value":"a\"b"},{"type":"number","value":2}],"stackTrace":{"callFrames":[{"url":"http://a.test/x.js"}]},"type":"error","timestamp":5}"#;
        let Event::ConsoleApiCalled(c) = Event::parse("Runtime.consoleAPICalled", params) else {
            panic!("parses");
        };
        assert_eq!(c.text, "a\"b 2");
        assert_eq!(c.url.as_deref(), Some("http://a.test/x.js"));
        assert_eq!(c.timestamp, Some(5.0));
        let log = params.replace(r#""type":"error""#, r#""type":"log""#);
        let Event::ConsoleApiCalled(c) = Event::parse("Runtime.consoleAPICalled", &log) else {
            panic!("parses");
        };
        assert_eq!((c.text.as_str(), c.url), ("", None));
        // Malformed arguments fail the event whichever order, as a field twice does.
        for bad in [
            r#"{"args":[{"type":3}],"type":"log"}"#,
            r#"{"type":"log","args":[{"type":3}]}"#,
            r#"{"type":"error","type":"log","args":[]}"#,
        ] {
            let e = Event::parse("Runtime.consoleAPICalled", bad);
            assert!(matches!(e, Event::Unparsed { .. }), "{bad}");
        }
    }
}
