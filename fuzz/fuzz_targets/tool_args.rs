//! Every MCP tool's JSON arguments (the page tools' and browser_snapshot's
//! too: every tool in `ALL_TOOLS`) through the tools layer's checks
//! (`ToolCall::parse`, what `AgentSession::call` runs before it touches a
//! browser), under an open and a strict navigation policy. Never panics; an
//! accepted call honours what was checked (a navigate URL the policy
//! allows, timeouts in range, params an object); a refusal is one line.

#![no_main]

use cdp_supervisor::supervisor::origins::NavigationPolicy;
use cdp_supervisor::tools::{
    ALL_TOOLS, Action, CDP_MAX_TIMEOUT_S, CLICK_BUTTONS, CLICK_COUNT_MAX, PageRequest, ToolCall,
    WAIT_MAX_TIMEOUT_S, check_url,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::sync::OnceLock;

fn policies() -> &'static [NavigationPolicy; 3] {
    static P: OnceLock<[NavigationPolicy; 3]> = OnceLock::new();
    P.get_or_init(|| {
        [
            NavigationPolicy::default(),
            NavigationPolicy::new(
                &["https://*.example.com", "http://a.test:8080"],
                &["http://169.254.169.254", "*.internal"],
                false,
            )
            .unwrap(),
            NavigationPolicy::new(&[] as &[&str], &[] as &[&str], true).unwrap(),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let [tool, policy, mode, rest @ ..] = data else {
        return;
    };
    // One name past the list: an unknown tool.
    let name = ALL_TOOLS
        .get(*tool as usize % (ALL_TOOLS.len() + 1))
        .copied()
        .unwrap_or("browser_unknown");
    let policy = &policies()[*policy as usize % 3];
    let text = String::from_utf8_lossy(rest);
    // Raw JSON as the arguments, or the text in every string field a tool
    // takes (so URLs and method names get fuzzed even when not JSON).
    let args = match mode % 3 {
        0 => match serde_json::from_slice::<Value>(rest) {
            Ok(v) => v,
            Err(_) => return,
        },
        1 => json!({"url": text, "method": text, "action": text, "event": text, "cdp_url": text,
                    "ref": text, "text": text, "key": text, "button": text, "find": text}),
        _ => {
            let n = rest.first().copied().unwrap_or(0) as f64 * 1.7 - 20.0;
            // Half of them open a tab: its url is checked by the policy too.
            let method = if rest.len() % 2 == 0 {
                "Runtime.evaluate"
            } else {
                "Target.createTarget"
            };
            json!({"url": text, "method": method, "params": {"expression": text, "url": text},
                   "timeout_s": n, "event": "any", "action": "accept", "cdp_url": text,
                   "since": rest.len(), "prompt_text": text, "dialog_id": text,
                   "ref": text, "click_count": n, "values": [text], "page_cursor": text,
                   "reason": text, "wait": n > 1.0})
        }
    };
    match ToolCall::parse(name, args, policy) {
        Ok(ToolCall::Navigate { url, .. }) => {
            assert!(check_url(&url).is_ok(), "{url}");
            assert!(policy.check(&url).is_ok(), "{url}");
        }
        Ok(ToolCall::Cdp {
            params,
            timeout_s,
            method,
            ..
        }) => {
            assert!(params.is_object());
            assert!(timeout_s > 0.0 && timeout_s <= CDP_MAX_TIMEOUT_S);
            assert!(method.contains('.'));
            if method == "Target.createTarget" {
                if let Some(url) = params.get("url").and_then(Value::as_str) {
                    assert!(url.is_empty() || policy.check(url).is_ok(), "{url}");
                }
            }
        }
        Ok(ToolCall::Wait { timeout_s, .. }) => {
            assert!(timeout_s > 0.0 && timeout_s <= WAIT_MAX_TIMEOUT_S);
        }
        Ok(ToolCall::Handoff {
            reason, timeout_s, ..
        }) => {
            assert!(!reason.trim().is_empty() && reason.chars().count() <= 500);
            assert!(timeout_s > 0.0 && timeout_s <= cdp_supervisor::tools::HANDOFF_MAX_TIMEOUT_S);
        }
        Ok(ToolCall::Connect { cdp_url, target_id }) => {
            assert!(!cdp_url.trim().is_empty());
            assert!(target_id.is_none_or(|t| !t.is_empty()));
        }
        Ok(ToolCall::Act {
            action: Action::Click { button, count, .. },
            ..
        }) => {
            assert!(CLICK_BUTTONS.contains(&button.as_str()));
            assert!((1..=CLICK_COUNT_MAX).contains(&count));
        }
        Ok(ToolCall::Act {
            action: Action::Select { values, .. },
            ..
        }) => assert!(!values.is_empty()),
        Ok(ToolCall::Snapshot {
            page: PageRequest::Continue(cursor),
        }) => assert!(!cursor.trim().is_empty()),
        Ok(_) => {}
        Err(e) => assert!(!e.message.is_empty()),
    }
});
