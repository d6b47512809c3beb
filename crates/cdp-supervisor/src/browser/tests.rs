//! Launch tests. The ones marked "needs Chromium" fail (never skip) when it
//! is missing, naming how to install it.

use super::*;

fn require_chromium() -> PathBuf {
    find_chromium(None).unwrap_or_else(|e| panic!("these tests need Chromium: {e}"))
}

/// Processes still alive (not zombies) in process group `pgid`.
fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut alive = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may contain spaces.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            alive.push(pid);
        }
    }
    alive
}

async fn wait_group_gone(pgid: u32) {
    for _ in 0..100 {
        if live_group_members(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "Chromium process group {pgid} still has live members: {:?}",
        live_group_members(pgid)
    );
}

fn script(body: &str) -> (tempfile::TempDir, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake-chromium");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

async fn launch_real(debugging: Debugging) -> LocalChromium {
    let path = require_chromium();
    LocalChromium::launch(&LaunchOptions {
        chromium_path: Some(path),
        debugging,
        ..LaunchOptions::default()
    })
    .await
    .expect("Chromium launches")
}

#[tokio::test]
async fn launch_reports_endpoint_and_shutdown_kills_group_and_removes_dir() {
    let chromium = launch_real(Debugging::Port).await;
    let ws = chromium.ws_url().to_owned();
    assert!(ws.starts_with("ws://127.0.0.1:"), "{ws}");
    assert!(ws.contains("/devtools/browser/"), "{ws}");
    let http = chromium.http_url().expect("a port");
    assert!(
        ws.starts_with(&http.replace("http://", "ws://")),
        "{http} vs {ws}"
    );

    // The HTTP endpoint agrees with the URL we read.
    let version: serde_json::Value = reqwest::get(format!("{http}/json/version"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(version["webSocketDebuggerUrl"], ws.as_str());

    let pid = chromium.pid().expect("running");
    let dir = chromium.user_data_dir().to_path_buf();
    assert!(dir.is_dir());
    assert!(!live_group_members(pid).is_empty());

    chromium.shutdown().await;
    wait_group_gone(pid).await;
    assert!(!dir.exists(), "user-data-dir {} left behind", dir.display());
}

/// The default launch opens no port: CDP goes over the pipe, each
/// connection on it a browser session of its own (a context one makes
/// with `disposeOnDetach` goes with it, the others see it go), and the
/// browser's exit ends every connection and refuses new ones.
#[tokio::test]
async fn a_pipe_launch_listens_on_no_port_and_serves_many_connections() {
    use crate::cdp::Connection;
    use serde_json::json;
    let t = Duration::from_secs(10);
    let chromium = launch_real(Debugging::Pipe).await;
    let url = chromium.ws_url().to_owned();
    assert!(url.starts_with("pipe://"), "{url}");
    assert_eq!(chromium.http_url(), None);
    assert!(
        !chromium.user_data_dir().join("DevToolsActivePort").exists(),
        "a pipe launch writes no DevToolsActivePort"
    );
    let pid = chromium.pid().expect("running");
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(cmdline.contains("--remote-debugging-pipe"), "{cmdline:?}");
    assert!(!cmdline.contains("--remote-debugging-port"), "{cmdline:?}");

    let (a, _a_events) = Connection::connect(&url).await.expect("a link");
    let (b, mut b_events) = Connection::connect(&url).await.expect("another link");
    let version = a
        .send(None, "Browser.getVersion", json!({}), t)
        .await
        .unwrap();
    assert!(
        version["product"].as_str().unwrap_or("").contains("Chrome"),
        "{version}"
    );
    let ctx = a
        .send(
            None,
            "Target.createBrowserContext",
            json!({"disposeOnDetach": true}),
            t,
        )
        .await
        .unwrap()["browserContextId"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = a
        .send(
            None,
            "Target.createTarget",
            json!({"url": "about:blank", "browserContextId": ctx}),
            t,
        )
        .await
        .unwrap()["targetId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Sessions a link attaches are its own: b's evaluate runs in the page a made.
    let session = b
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
            t,
        )
        .await
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let session = crate::cdp::SessionId::from(session);
    let two = b
        .send(
            Some(&session),
            "Runtime.evaluate",
            json!({"expression": "1 + 1"}),
            t,
        )
        .await
        .unwrap();
    assert_eq!(two["result"]["value"], 2);
    let contexts = |c: &Connection| c.send(None, "Target.getBrowserContexts", json!({}), t);
    let listed = contexts(&b).await.unwrap();
    assert!(listed.to_string().contains(&ctx), "{listed}");
    drop(a);
    let mut gone = false;
    for _ in 0..100 {
        if !contexts(&b).await.unwrap().to_string().contains(&ctx) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the context of a dropped link is disposed");

    drop(chromium);
    let closed = tokio::time::timeout(t, async {
        while let Some(item) = b_events.recv().await {
            if matches!(item, crate::cdp::Incoming::Closed { .. }) {
                return true;
            }
        }
        true
    })
    .await;
    assert_eq!(closed, Ok(true), "the browser's exit ends the connection");
    let again = Connection::connect(&url).await.unwrap_err().to_string();
    assert!(again.contains("pipe is closed"), "{again}");
}

#[tokio::test]
async fn drop_kills_group_and_removes_dir() {
    let chromium = launch_real(Debugging::Pipe).await;
    let pid = chromium.pid().expect("running");
    let dir = chromium.user_data_dir().to_path_buf();
    drop(chromium);
    wait_group_gone(pid).await;
    // The clean-up runs on a thread of its own, off the runtime.
    for _ in 0..100 {
        if !dir.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!dir.exists(), "user-data-dir {} left behind", dir.display());
}

#[tokio::test]
async fn extra_args_come_after_base_args_and_before_the_url() {
    // A fake Chromium that prints its argv and exits: the launch error quotes it.
    let (_dir, path) = script(r#"echo "argv: $*" >&2; exit 3"#);
    let err = LocalChromium::launch(&LaunchOptions {
        chromium_path: Some(path),
        extra_args: vec!["--proxy-server=http://p:1".into()],
        timeout: Duration::from_secs(10),
        debugging: Debugging::Port,
    })
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LaunchError::Exited { .. }), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    let argv = msg.split("argv: ").nth(1).expect("argv quoted");
    let pos = |flag: &str| {
        argv.find(flag)
            .unwrap_or_else(|| panic!("{flag} missing: {argv}"))
    };
    for flag in BASE_ARGS {
        assert!(pos(flag) < pos("--user-data-dir="), "{argv}");
    }
    assert!(pos("--user-data-dir=") < pos("--proxy-server=http://p:1"));
    assert!(
        argv.trim_end()
            .ends_with("--proxy-server=http://p:1 about:blank"),
        "{argv}"
    );
}

#[tokio::test]
async fn early_exit_quotes_last_stderr_lines() {
    let (_dir, path) = script(r#"echo "line one" >&2; echo "fatal: no display" >&2; exit 1"#);
    let err = LocalChromium::launch(&LaunchOptions {
        chromium_path: Some(path),
        ..LaunchOptions::default()
    })
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("Chromium exited during launch"), "{msg}");
    assert!(msg.contains("line one | fatal: no display"), "{msg}");
}

#[tokio::test]
async fn silent_browser_times_out_and_is_killed() {
    let (dir, path) = script(r#"echo "$$" > "$(dirname "$0")/pid"; exec sleep 60"#);
    let started = std::time::Instant::now();
    let err = LocalChromium::launch(&LaunchOptions {
        chromium_path: Some(path),
        timeout: Duration::from_millis(500),
        ..LaunchOptions::default()
    })
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(err, LaunchError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("within 0.5 s"), "{err}");
    let pid: u32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_group_gone(pid).await;
}

#[test]
fn missing_configured_path_is_named() {
    let err = find_chromium(Some(Path::new("/nonexistent/chrome"))).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LaunchError::ConfiguredPathMissing { .. }));
    assert!(msg.contains("/nonexistent/chrome"), "{msg}");
    assert!(msg.contains("apt-get install -y chromium"), "{msg}");
    assert!(!msg.contains('\n'));
}

#[tokio::test]
async fn launch_with_missing_path_fails_before_spawning() {
    let err = LocalChromium::launch(&LaunchOptions {
        chromium_path: Some("/nonexistent/chrome".into()),
        ..LaunchOptions::default()
    })
    .await
    .unwrap_err();
    assert!(
        matches!(err, LaunchError::ConfiguredPathMissing { .. }),
        "{err}"
    );
}

#[test]
fn not_found_is_one_line_with_install_hint() {
    let msg = LaunchError::NotFound.to_string();
    assert!(!msg.contains('\n'));
    assert!(msg.starts_with("Chromium not found"), "{msg}");
    assert!(
        msg.contains("chromium, chromium-browser, google-chrome"),
        "{msg}"
    );
    assert!(msg.ends_with("install it with: apt-get update && apt-get install -y chromium"));
}

#[test]
fn finds_chromium_on_path_and_by_bare_name() {
    let found = require_chromium();
    assert!(found.is_absolute(), "{}", found.display());
    let by_name = find_chromium(Some(Path::new(found.file_name().unwrap()))).unwrap();
    assert!(by_name.is_absolute());
    assert_eq!(find_chromium(Some(&found)).unwrap(), found);
    // An empty configured path means "search".
    assert_eq!(find_chromium(Some(Path::new(""))).unwrap(), found);
}

#[test]
fn active_port_file_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read_active_port(dir.path()), None);
    std::fs::write(
        dir.path().join("DevToolsActivePort"),
        "4321\n/devtools/browser/abc\n",
    )
    .unwrap();
    assert_eq!(
        read_active_port(dir.path()).as_deref(),
        Some("ws://127.0.0.1:4321/devtools/browser/abc")
    );
    std::fs::write(dir.path().join("DevToolsActivePort"), "43").unwrap();
    assert_eq!(read_active_port(dir.path()), None);
}
