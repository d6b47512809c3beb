//! The MCP server end to end, in-process: rmcp's client talks to
//! `mcp::serve_io` over an in-memory pipe. Tool failures must be tool results
//! with `isError` (the model reads them), never protocol errors.

mod mcp_support;

use cdp_supervisor::config::Config;
use cdp_supervisor::demo_site::SiteServer;
use cdp_supervisor::tools::ALL_TOOLS;
use mcp_support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test]
async fn tools_list_offers_every_tool_with_an_object_schema_and_a_description() {
    let c = Client::connect(Config::default()).await;
    let tools = c.service.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ALL_TOOLS);
    for t in &tools {
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        assert!(
            t.description.as_ref().is_some_and(|d| d.len() > 80),
            "{}",
            t.name
        );
    }
    let dialog = tools.iter().find(|t| t.name == "browser_dialog").unwrap();
    assert_eq!(
        dialog.input_schema["properties"]["action"]["enum"],
        json!(["accept", "dismiss", "ask_user"])
    );
    let snapshot = tools.iter().find(|t| t.name == "browser_snapshot").unwrap();
    let d = snapshot.description.as_deref().unwrap();
    assert!(d.contains("browser_dialog") && d.contains("freezes"), "{d}");
    let cdp = tools.iter().find(|t| t.name == "browser_cdp").unwrap();
    let d = cdp.description.as_deref().unwrap();
    assert!(d.contains("is_oopif") && d.contains("contentWindow"), "{d}");
    assert_eq!(
        cdp.input_schema["properties"]["timeout_s"]["type"],
        "number"
    );
    c.close().await;
}

#[tokio::test]
async fn camofox_lists_neither_browser_dialog_nor_browser_cdp_and_calling_them_is_an_error() {
    let c = Client::connect(camofox_config()).await;
    let names = c.tool_names().await;
    assert_eq!(
        names,
        [
            "browser_navigate",
            "browser_snapshot",
            "browser_connect",
            "browser_disconnect"
        ]
    );
    for tool in ["browser_dialog", "browser_cdp"] {
        let text = c
            .err(tool, json!({"action": "accept", "method": "A.b"}))
            .await;
        assert!(
            text.contains("not available") && text.contains("camofox"),
            "{text}"
        );
    }
    // A snapshot on a REST-only backend carries no supervisor fields.
    assert_eq!(
        c.ok("browser_snapshot", json!({})).await,
        json!({"url": "", "title": ""})
    );
    c.close().await;
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let c = Client::connect(Config::default()).await;
    let e = c
        .try_call("browser_hover", json!({}))
        .await
        .expect_err("unknown tool");
    assert!(e.to_string().contains("browser_hover"), "{e}");
    c.close().await;
}

#[tokio::test]
async fn bad_arguments_are_error_results_the_model_can_act_on() {
    let c = Client::connect(Config::default()).await;
    let cases: [(&str, Value, &[&str]); 12] = [
        (
            "browser_dialog",
            json!({"action": "maybe"}),
            &["accept", "dismiss"],
        ),
        ("browser_dialog", json!({}), &["action"]),
        (
            "browser_dialog",
            json!({"action": "accept"}),
            &["no dialog"],
        ),
        (
            "browser_navigate",
            json!({"url": "example.com"}),
            &["absolute"],
        ),
        (
            "browser_navigate",
            json!({"url": "javascript:alert(1)"}),
            &["not allowed"],
        ),
        (
            "browser_cdp",
            json!({"method": "evaluate"}),
            &["Domain.method"],
        ),
        (
            "browser_cdp",
            json!({"method": "Runtime.evaluate", "params": [1]}),
            &["object"],
        ),
        (
            "browser_cdp",
            json!({"method": "Runtime.evaluate", "timeout_s": 0}),
            &["timeout_s"],
        ),
        ("browser_snapshot", json!({"extra": 1}), &["extra"]),
        (
            "browser_wait",
            json!({"event": "popup"}),
            &[
                "popup",
                "dialog_opened, dialog_closed, page_loaded, tab_opened, download_done, handed_back, any",
            ],
        ),
        (
            "browser_wait",
            json!({"event": "any", "timeout_s": 301}),
            &["timeout_s", "300"],
        ),
        // Local launch: nothing runs before browser_navigate, so nothing can happen.
        (
            "browser_wait",
            json!({"event": "any", "timeout_s": 1}),
            &["browser_navigate"],
        ),
    ];
    for (tool, args, wants) in cases {
        let text = c.err(tool, args.clone()).await.to_lowercase();
        for want in wants {
            assert!(
                text.contains(&want.to_lowercase()),
                "{tool}({args}): {text:?} lacks {want:?}"
            );
        }
    }
    // None of these started a browser.
    assert!(c.registry.task_ids().is_empty());
    let registry = c.close().await;
    assert!(registry.task_ids().is_empty());
}

#[tokio::test]
async fn browser_connect_errors_never_show_url_credentials() {
    // A port nobody listens on: bound, then released.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = Client::connect(Config::default()).await;
    for url in [
        format!("http://user:pass@127.0.0.1:{port}/?token=secret"),
        format!("ws://user:pass@127.0.0.1:{port}/devtools/browser/x?token=secret"),
    ] {
        let text = c.err("browser_connect", json!({"cdp_url": url})).await;
        for leaked in ["user:", "pass", "secret"] {
            assert!(!text.contains(leaked), "{leaked:?} leaked in {text:?}");
        }
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    }
    c.close().await;
}

/// Direct children of this process whose name says Chromium.
fn chromium_children() -> Vec<u64> {
    let me = std::process::id().to_string();
    let mut pids = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let name = head.split_once('(').map(|(_, n)| n).unwrap_or("");
        if fields.get(1) == Some(&me.as_str()) && name.contains("chrom") && fields[0] != "Z" {
            pids.push(pid);
        }
    }
    pids
}

async fn wait_no_chromium_children() {
    let started = Instant::now();
    while !chromium_children().is_empty() {
        assert!(
            started.elapsed() < CLOSE_DEADLINE,
            "Chromium outlived its session: {:?}",
            chromium_children()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn wait_for_oopif(c: &Client) -> Value {
    let started = Instant::now();
    loop {
        let snap = c.ok("browser_snapshot", json!({})).await;
        let children = snap["frame_tree"]["children"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let has = |oopif: bool| children.iter().any(|f| f["is_oopif"] == oopif);
        if has(true) && has(false) {
            return snap;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no OOPIF and same-process frame in {snap}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The whole agent workflow through MCP, on real headless Chromium. The only
/// test of this binary that launches a browser (the Chromium-children check
/// counts this process's children).
#[tokio::test(flavor = "multi_thread")]
async fn dialogs_and_oopifs_through_mcp_on_real_chromium() {
    require_chromium();
    let site = SiteServer::start().await.expect("fixture site");
    let c = Client::connect(local_config()).await;

    // An alert during load: navigate returns promptly with it pending.
    let nav = c
        .ok(
            "browser_navigate",
            json!({"url": site.url("a.test", "/alert-on-load")}),
        )
        .await;
    assert_eq!(nav["status"], "dialog_pending", "{nav}");
    let snap = c.ok("browser_snapshot", json!({})).await;
    let pending = snap["pending_dialogs"].as_array().expect("pending_dialogs");
    assert_eq!(pending.len(), 1, "{snap}");
    assert_eq!(pending[0]["type"], "alert");
    assert_eq!(pending[0]["message"], "alert during load");
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    assert!(
        !chromium_children().is_empty(),
        "the browser started on first use"
    );

    // Dialog errors, then the answer.
    let text = c
        .err(
            "browser_dialog",
            json!({"action": "accept", "dialog_id": "d-999"}),
        )
        .await;
    assert!(text.contains("d-999"), "{text}");
    let text = c.err("browser_dialog", json!({"action": "maybe"})).await;
    assert!(text.contains("accept"), "{text}");
    let answered = c
        .ok(
            "browser_dialog",
            json!({"action": "accept", "dialog_id": id}),
        )
        .await;
    assert_eq!(answered["answered"]["id"], id.as_str(), "{answered}");
    assert_eq!(answered["pending_dialogs"], json!([]), "{answered}");
    let text = c.err("browser_dialog", json!({"action": "dismiss"})).await;
    assert!(text.to_lowercase().contains("no dialog"), "{text}");

    // Frames: an OOPIF is routable, a same-process frame names the fallback.
    let nav = c
        .ok(
            "browser_navigate",
            json!({"url": site.url("a.test", "/demo")}),
        )
        .await;
    assert_eq!(nav["status"], "loaded", "{nav}");
    let snap = wait_for_oopif(&c).await;
    let children = snap["frame_tree"]["children"].as_array().unwrap();
    let frame = |oopif: bool| {
        children.iter().find(|f| f["is_oopif"] == oopif).unwrap()["frame_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (oopif, same) = (frame(true), frame(false));
    let eval = |frame_id: &str| {
        json!({
            "method": "Runtime.evaluate",
            "params": {"expression": "location.host + ' ' + document.title", "returnByValue": true},
            "frame_id": frame_id,
            "timeout_s": 10,
        })
    };
    let r = c.ok("browser_cdp", eval(&oopif)).await;
    let value = r["result"]["result"]["value"].as_str().unwrap_or_default();
    assert!(
        value.starts_with("b.test:") && value.ends_with("OOPIF b.test"),
        "{r}"
    );
    let text = c.err("browser_cdp", eval(&same)).await;
    assert!(text.contains("contentWindow"), "{text}");
    let text = c.err("browser_cdp", eval("NO-SUCH-FRAME")).await;
    assert!(text.contains("NO-SUCH-FRAME"), "{text}");
    let text = c
        .err("browser_cdp", json!({"method": "Nope.nothing"}))
        .await;
    assert!(text.contains("Nope.nothing"), "{text}");

    // Disconnect stops the browser; the next navigate starts a fresh one.
    let d = c.ok("browser_disconnect", json!({})).await;
    assert_eq!(d, json!({"disconnected": true}));
    let snap = c.ok("browser_snapshot", json!({})).await;
    assert_eq!((&snap["url"], &snap["title"]), (&json!(""), &json!("")));
    assert!(
        snap["note"]
            .as_str()
            .is_some_and(|n| n.contains("browser_navigate")),
        "{snap}"
    );
    wait_no_chromium_children().await;
    let nav = c
        .ok(
            "browser_navigate",
            json!({"url": site.url("a.test", "/blank")}),
        )
        .await;
    assert_eq!(nav["status"], "loaded", "{nav}");
    assert!(!chromium_children().is_empty());

    // The session ends (the client closes the pipe): no Chromium outlives it.
    let registry = c.close().await;
    assert!(registry.task_ids().is_empty(), "{:?}", registry.task_ids());
    wait_no_chromium_children().await;
}
