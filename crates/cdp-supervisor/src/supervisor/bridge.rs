//! The dialog bridge, for CDP proxies that answer native dialogs themselves
//! (spec: "Browserbase quirk": its proxy auto-dismisses within ~10 ms, so
//! `Page.handleJavaScriptDialog` cannot keep up).
//!
//! A script added with `Page.addScriptToEvaluateOnNewDocument` replaces
//! `window.alert` / `confirm` / `prompt` with a synchronous XHR to a magic
//! host ([`BRIDGE_HOST`]). `Fetch.enable` with [`fetch_patterns`] pauses
//! that request before it touches the network: the dialog becomes a
//! `Fetch.requestPaused` event ([`parse_paused`]), and the answer is a
//! `Fetch.fulfillRequest` with a JSON body the script decodes
//! ([`fulfill_params`]). The page sees the same return values as from a
//! native dialog; the agent uses the same `browser_dialog`.
//!
//! Pure helpers only: the state machine decides, the driver sends.

use crate::cdp::protocol::DialogType;
use serde::Deserialize;
use serde_json::{Value, json};

/// The magic host the bridge's XHR goes to. `.invalid` never resolves
/// (RFC 2606), so a request that escapes interception fails instead of
/// leaking anywhere.
pub const BRIDGE_HOST: &str = "cdp-supervisor-dialog-bridge.invalid";

/// The script injected on every new document (and run at once in the current one).
pub fn script() -> String {
    format!(
        r#"(() => {{
  if (window.__cdpSupervisorDialogBridge) return;
  window.__cdpSupervisorDialogBridge = true;
  const url = (location.protocol === "https:" ? "https://" : "http://") + "{BRIDGE_HOST}/dialog";
  const ask = (type, message, defaultPrompt) => {{
    const x = new XMLHttpRequest();
    x.open("POST", url, false);
    x.setRequestHeader("Content-Type", "text/plain");
    x.send(JSON.stringify({{
      type: type,
      message: String(message === undefined ? "" : message).slice(0, 10240),
      default_prompt: defaultPrompt === undefined || defaultPrompt === null ? "" : String(defaultPrompt),
      url: location.href
    }}));
    return JSON.parse(x.responseText);
  }};
  window.alert = function (message) {{ ask("alert", message); }};
  window.confirm = function (message) {{ return !!ask("confirm", message).accept; }};
  window.prompt = function (message, defaultPrompt) {{
    const r = ask("prompt", message, defaultPrompt);
    return r.accept ? (r.prompt_text === null || r.prompt_text === undefined ? "" : String(r.prompt_text)) : null;
  }};
}})();"#
    )
}

/// `Fetch.enable` params: pause only the bridge's requests, at the request stage.
pub fn fetch_patterns() -> Value {
    json!({"patterns": [{"urlPattern": format!("*://{BRIDGE_HOST}/*"), "requestStage": "Request"}]})
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

/// Reads `Fetch.requestPaused` params.
pub fn parse_paused(params: &str) -> PausedKind {
    let Ok(p) = serde_json::from_str::<Paused>(params) else {
        return PausedKind::Unreadable;
    };
    let is_bridge = url::Url::parse(&p.request.url)
        .ok()
        .is_some_and(|u| u.host_str() == Some(BRIDGE_HOST));
    let body = p
        .request
        .post_data
        .as_deref()
        .and_then(|b| serde_json::from_str::<Body>(b).ok());
    match (is_bridge, body) {
        (true, Some(b)) => PausedKind::Dialog(BridgeDialog {
            request_id: p.request_id,
            frame_id: p.frame_id,
            dialog_type: b.dialog_type,
            message: b.message,
            default_prompt: b.default_prompt,
            url: b.url,
        }),
        _ => PausedKind::Other {
            request_id: p.request_id,
            document: (p.resource_type.as_deref() == Some("Document")).then_some(p.request.url),
        },
    }
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

    #[test]
    fn a_bridge_request_parses_as_a_dialog() {
        let params = json!({
            "requestId": "interception-1",
            "frameId": "F1",
            "resourceType": "XHR",
            "request": {
                "url": format!("http://{BRIDGE_HOST}/dialog"),
                "method": "POST",
                "postData": "{\"type\":\"prompt\",\"message\":\"name?\",\"default_prompt\":\"Ada\",\"url\":\"http://a.test/\"}"
            }
        })
        .to_string();
        match parse_paused(&params) {
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
    fn other_requests_are_let_go_and_garbage_is_harmless() {
        let params =
            json!({"requestId": "r2", "request": {"url": "http://a.test/x.js"}}).to_string();
        assert_eq!(
            parse_paused(&params),
            PausedKind::Other {
                request_id: "r2".into(),
                document: None,
            }
        );
        let params = json!({"requestId": "r3", "resourceType": "Document", "request": {"url": "http://b.test/"}})
            .to_string();
        assert_eq!(
            parse_paused(&params),
            PausedKind::Other {
                request_id: "r3".into(),
                document: Some("http://b.test/".into()),
            }
        );
        assert_eq!(parse_paused("nope"), PausedKind::Unreadable);
    }
}
