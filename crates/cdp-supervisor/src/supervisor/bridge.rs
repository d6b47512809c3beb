//! The dialog bridge, for CDP proxies that answer native dialogs themselves
//! (spec: "Browserbase quirk": its proxy auto-dismisses within ~10 ms, so
//! `Page.handleJavaScriptDialog` cannot keep up).
//!
//! A script added with `Page.addScriptToEvaluateOnNewDocument` replaces
//! `window.alert` / `confirm` / `prompt` with a synchronous XHR to a path of
//! the page's **own origin** ([`BridgeKey::path`]). `Fetch.enable` with
//! [`fetch_patterns`] on every page and OOPIF session (an OOPIF's request is
//! seen only on its own session) pauses that request before it touches the
//! network: the dialog becomes a `Fetch.requestPaused` event
//! ([`parse_paused`]), and the answer is a `Fetch.fulfillRequest` with a JSON
//! body the script decodes ([`fulfill_params`]). The page sees the same
//! return values as from a native dialog; the agent uses the same
//! `browser_dialog`.
//!
//! Why a same-origin path (the trade-off): a fixed foreign host
//! (`http://….invalid`) is refused by a `connect-src 'self'` CSP before
//! `Fetch` sees it, and from an https page it is mixed content; a path of
//! the page's own origin passes both, at the price of being visible in the
//! page's resource timing (the path, never the secret) and of not working
//! where the origin is opaque (`data:` documents, sandboxed frames), where
//! the script falls back to the native dialog.
//!
//! Unforgeable: each supervisor has its own [`BridgeKey`]; the script keeps
//! the secret in its closure and sends it with builtins captured when it
//! is injected (before any page script of a new document runs), so a page
//! that later hooks `XMLHttpRequest`, `JSON.stringify` or
//! `Function.prototype.call` never sees it. A request to the bridge path
//! without the secret is failed ([`PausedKind::Forged`]) and never becomes
//! a dialog. No global tells the page it is supervised. A bridge request
//! that fails (no interception, an opaque origin) falls back to the native
//! dialog, which the supervisor catches as usual and logs.
//!
//! Pure helpers only: the state machine decides, the driver sends.

use crate::cdp::protocol::DialogType;
use serde::Deserialize;
use serde_json::{Value, json};

/// One supervisor's bridge identity: the path its requests go to and the
/// secret they must carry.
#[derive(Clone, PartialEq, Eq)]
pub struct BridgeKey {
    /// The same-origin path, `/__cdp_supervisor_<hex>` (random per supervisor).
    pub path: String,
    secret: String,
}

impl std::fmt::Debug for BridgeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeKey")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Default for BridgeKey {
    fn default() -> Self {
        BridgeKey::random()
    }
}

impl BridgeKey {
    /// A fresh path and secret.
    pub fn random() -> BridgeKey {
        BridgeKey {
            path: format!("/__cdp_supervisor_{}", crate::random::random_hex(8)),
            secret: crate::random::random_hex(16),
        }
    }

    /// A fixed key (tests).
    pub fn fixed(path_suffix: &str, secret: &str) -> BridgeKey {
        BridgeKey {
            path: format!("/__cdp_supervisor_{path_suffix}"),
            secret: secret.to_owned(),
        }
    }
}

/// The script injected on every new document (and run at once in the
/// current one). Builtins are captured first; the secret lives only in
/// this closure; the body is built by string concatenation of primitives
/// (no `toJSON`, no setter, no page code runs with the secret in reach).
pub fn script(key: &BridgeKey) -> String {
    let path = serde_json::to_string(&key.path).expect("a string");
    let secret = &key.secret; // hex: needs no escaping
    format!(
        r#"(() => {{
  const XHR = XMLHttpRequest, P = XHR.prototype;
  const open = P.open, send = P.send, setHeader = P.setRequestHeader;
  const getText = Object.getOwnPropertyDescriptor(P, "responseText").get;
  const getStatus = Object.getOwnPropertyDescriptor(P, "status").get;
  const apply = Reflect.apply, stringify = JSON.stringify, parse = JSON.parse;
  const Str = String, slice = String.prototype.slice, isObject = (v) => typeof v === "object" && v !== null;
  const loc = location, win = window;
  const nativeAlert = win.alert, nativeConfirm = win.confirm, nativePrompt = win.prompt;
  const path = {path};
  const ask = (type, message, defaultPrompt) => {{
    try {{
      const origin = loc.origin;
      if (!origin || origin === "null") return undefined;
      const x = new XHR();
      apply(open, x, ["POST", origin + path, false]);
      apply(setHeader, x, ["Content-Type", "text/plain"]);
      const text = apply(slice, Str(message === undefined ? "" : message), [0, 10240]);
      const dflt = defaultPrompt === undefined || defaultPrompt === null ? "" : Str(defaultPrompt);
      apply(send, x, ['{{"secret":"{secret}","type":"' + type + '","message":' + stringify(text) +
        ',"default_prompt":' + stringify(dflt) + ',"url":' + stringify(loc.href) + '}}']);
      if (apply(getStatus, x, []) !== 200) return undefined;
      const r = parse(apply(getText, x, []));
      return isObject(r) ? r : undefined;
    }} catch (e) {{
      return undefined;
    }}
  }};
  win.alert = function alert(message) {{
    if (ask("alert", message) === undefined) apply(nativeAlert, win, arguments);
  }};
  win.confirm = function confirm(message) {{
    const r = ask("confirm", message);
    return r === undefined ? apply(nativeConfirm, win, arguments) : !!r.accept;
  }};
  win.prompt = function prompt(message, defaultPrompt) {{
    const r = ask("prompt", message, defaultPrompt);
    if (r === undefined) return apply(nativePrompt, win, arguments);
    return r.accept ? (r.prompt_text === null || r.prompt_text === undefined ? "" : Str(r.prompt_text)) : null;
  }};
}})();"#
    )
}

/// `Fetch.enable` params: pause only requests to the bridge path, at the request stage.
pub fn fetch_patterns(key: &BridgeKey) -> Value {
    json!({"patterns": [{"urlPattern": format!("*{}*", key.path), "requestStage": "Request"}]})
}

/// A dialog the bridge reported (`Fetch.requestPaused` on the bridge URL).
#[derive(Clone, Debug, PartialEq)]
pub struct BridgeDialog {
    /// `Fetch.requestPaused.requestId`: what the answer fulfills.
    pub request_id: String,
    /// The frame that made the request (`Fetch.requestPaused.frameId`).
    pub frame_id: Option<String>,
    /// `alert`, `confirm` or `prompt` (the script does not bridge `beforeunload`).
    pub dialog_type: DialogType,
    /// The dialog's text, cut by the script at 10 240 UTF-16 units.
    pub message: String,
    /// The prompt's default text (`""` when none).
    pub default_prompt: String,
    /// The calling document's `location.href`.
    pub url: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Paused {
    request_id: String,
    #[serde(default)]
    frame_id: Option<String>,
    #[serde(default)]
    resource_type: Option<String>,
    request: PausedRequest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PausedRequest {
    url: String,
    #[serde(default)]
    post_data: Option<String>,
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    secret: String,
    #[serde(rename = "type")]
    dialog_type: DialogType,
    #[serde(default)]
    message: String,
    #[serde(default)]
    default_prompt: String,
    #[serde(default)]
    url: String,
}

/// What a `Fetch.requestPaused` means.
#[derive(Clone, Debug, PartialEq)]
pub enum PausedKind {
    /// A dialog from the bridge.
    Dialog(BridgeDialog),
    /// A request to the bridge path without the secret (a page forging
    /// one): fail it with `Fetch.failRequest` ([`fail_params`]); never a dialog.
    Forged {
        /// `Fetch.requestPaused.requestId`.
        request_id: String,
    },
    /// Some other request (or a bridge request we cannot read): let it go
    /// with `Fetch.continueRequest{requestId}`, or fail it when it is a
    /// document the navigation policy refuses — never leave a request paused.
    Other {
        /// `Fetch.requestPaused.requestId`.
        request_id: String,
        /// The URL, when the request is for a document (`resourceType: Document`).
        document: Option<String>,
    },
    /// Not even a request id: nothing to do.
    Unreadable,
}

/// Reads `Fetch.requestPaused` params against this supervisor's `key`.
pub fn parse_paused(params: &str, key: &BridgeKey) -> PausedKind {
    let Ok(p) = serde_json::from_str::<Paused>(params) else {
        return PausedKind::Unreadable;
    };
    let is_bridge = url::Url::parse(&p.request.url)
        .ok()
        .is_some_and(|u| u.path() == key.path);
    if !is_bridge {
        let document = (p.resource_type.as_deref() == Some("Document")).then_some(p.request.url);
        return PausedKind::Other {
            request_id: p.request_id,
            document,
        };
    }
    let body = p
        .request
        .post_data
        .as_deref()
        .and_then(|b| serde_json::from_str::<Body>(b).ok());
    match body {
        Some(b) if constant_time_eq(b.secret.as_bytes(), key.secret.as_bytes()) => {
            PausedKind::Dialog(BridgeDialog {
                request_id: p.request_id,
                frame_id: p.frame_id,
                dialog_type: b.dialog_type,
                message: b.message,
                default_prompt: b.default_prompt,
                url: b.url,
            })
        }
        _ => PausedKind::Forged {
            request_id: p.request_id,
        },
    }
}

/// Compares without an early exit (the secret is never guessed byte by byte).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `Fetch.failRequest` params for a forged bridge request.
pub fn fail_params(request_id: &str) -> Value {
    json!({"requestId": request_id, "errorReason": "BlockedByClient"})
}

/// `Fetch.fulfillRequest` params answering bridge request `request_id`.
pub fn fulfill_params(request_id: &str, accept: bool, prompt_text: Option<&str>) -> Value {
    use base64::Engine;
    let body = json!({"accept": accept, "prompt_text": prompt_text}).to_string();
    json!({
        "requestId": request_id,
        "responseCode": 200,
        "responseHeaders": [
            {"name": "Content-Type", "value": "application/json"},
            {"name": "Access-Control-Allow-Origin", "value": "*"},
            {"name": "Cache-Control", "value": "no-store"}
        ],
        // `Fetch.fulfillRequest.body` is base64.
        "body": base64::engine::general_purpose::STANDARD.encode(body.as_bytes()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fulfill_body_is_base64_json() {
        use base64::Engine;
        let p = fulfill_params("r1", true, Some("Ada"));
        let body = base64::engine::general_purpose::STANDARD
            .decode(p["body"].as_str().unwrap())
            .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v, json!({"accept": true, "prompt_text": "Ada"}));
    }

    fn key() -> BridgeKey {
        BridgeKey::fixed("k1", "0123456789abcdef")
    }

    fn paused(url: &str, body: &str) -> String {
        json!({
            "requestId": "interception-1",
            "frameId": "F1",
            "resourceType": "XHR",
            "request": {"url": url, "method": "POST", "postData": body}
        })
        .to_string()
    }

    #[test]
    fn a_bridge_request_with_the_secret_parses_as_a_dialog() {
        let params = paused(
            "https://a.test/__cdp_supervisor_k1",
            "{\"secret\":\"0123456789abcdef\",\"type\":\"prompt\",\"message\":\"name?\",\"default_prompt\":\"Ada\",\"url\":\"http://a.test/\"}",
        );
        match parse_paused(&params, &key()) {
            PausedKind::Dialog(d) => {
                assert_eq!(d.request_id, "interception-1");
                assert_eq!(d.dialog_type, DialogType::Prompt);
                assert_eq!(d.default_prompt, "Ada");
                assert_eq!(d.frame_id.as_deref(), Some("F1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bridge_request_without_the_secret_is_forged() {
        for body in [
            "{\"type\":\"alert\",\"message\":\"x\"}",
            "{\"secret\":\"0123456789abcdee\",\"type\":\"alert\",\"message\":\"x\"}",
            "garbage",
        ] {
            let params = paused("http://a.test/__cdp_supervisor_k1", body);
            assert_eq!(
                parse_paused(&params, &key()),
                PausedKind::Forged {
                    request_id: "interception-1".into()
                },
                "{body}"
            );
        }
    }

    #[test]
    fn other_requests_are_let_go_and_garbage_is_harmless() {
        let params =
            json!({"requestId": "r2", "request": {"url": "http://a.test/x.js"}}).to_string();
        assert_eq!(
            parse_paused(&params, &key()),
            PausedKind::Other {
                request_id: "r2".into(),
                document: None,
            }
        );
        let params = json!({"requestId": "r3", "resourceType": "Document", "request": {"url": "http://b.test/"}})
            .to_string();
        assert_eq!(
            parse_paused(&params, &key()),
            PausedKind::Other {
                request_id: "r3".into(),
                document: Some("http://b.test/".into()),
            }
        );
        assert_eq!(parse_paused("nope", &key()), PausedKind::Unreadable);
    }

    #[test]
    fn the_script_holds_the_secret_in_its_closure_and_sets_no_global() {
        let k = key();
        let s = script(&k);
        assert!(s.contains("0123456789abcdef") && s.contains("/__cdp_supervisor_k1"));
        assert!(!s.contains("window.__"), "no global flag");
        assert_ne!(BridgeKey::random(), BridgeKey::random());
        assert!(!format!("{k:?}").contains("0123456789abcdef"));
    }
}
