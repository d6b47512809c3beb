//! The real binary, as a user runs it: `demo`, `snapshot`, `watch --json`,
//! and one-line errors for bad input.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cdp-supervisor");

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("CDP_SUPERVISOR_CONFIG")
        .output()
        .expect("run the binary");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn demo_runs_to_the_end_and_shows_every_kind_of_answer() {
    common::require_chromium();
    let started = Instant::now();
    let (code, out, err) = run(&["demo"], &[]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(started.elapsed() < Duration::from_secs(120));
    for needle in [
        "OOPIF",
        "closed by",
        "agent",
        "auto_policy",
        "watchdog",
        "\"OOPIF b.test\"",
        "contentWindow",
        "\"Ada\"",
    ] {
        assert!(out.contains(needle), "demo output lacks {needle:?}:\n{out}");
    }
}

/// Issue 44: `CDP_SUPERVISOR_LOG=debug` is the Python module's log switch;
/// the binary refused it as an unknown config key and exited. It means the
/// same here: what is logged.
#[test]
fn regression_44_cdp_supervisor_log_is_the_log_switch_not_a_config_key() {
    let dead = "http://127.0.0.1:9";
    let args = ["snapshot", "http://127.0.0.1:9/", "--cdp-url", dead];
    let (code, _, err) = run(&args, &[("CDP_SUPERVISOR_LOG", "debug")]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("unknown config key"), "{err}");
    assert!(err.contains("cannot attach to"), "it ran: {err}");
    assert!(
        err.contains("DEBUG") && err.contains("resolving the CDP WebSocket URL"),
        "at debug level: {err}"
    );
    let (_, _, quiet) = run(
        &args,
        &[("CDP_SUPERVISOR_LOG", "warn"), ("RUST_LOG", "debug")],
    );
    assert!(!quiet.contains("DEBUG"), "it wins over RUST_LOG: {quiet}");
}

#[test]
fn user_errors_are_one_line_on_stderr_with_a_nonzero_exit() {
    // (arguments, environment, what the error must name)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 12] = [
        (
            &["watch", "--blocked-origins", "http://b.test/admin"],
            &[],
            "browser.blocked_origins: \"http://b.test/admin\" (an origin has no path",
        ),
        (
            &["snapshot", "file:///etc/passwd"],
            &[],
            "rule allow_file_urls: false",
        ),
        (&["mcp", "--max-sessions", "0"], &[], "--max-sessions"),
        (&["watch", "--bogus"], &[], "--bogus"),
        // A launched Chromium's own tab is supervised: an id names another's.
        (
            &["snapshot", "http://a.test/", "--target-id", "T1"],
            &[],
            "--cdp-url",
        ),
        // A negative number is a bad value, not an unknown flag.
        (
            &["watch", "--dialog-timeout-s", "-3"],
            &[],
            "browser.dialog_timeout_s: \"-3\" is not allowed; allowed: a number of seconds > 0",
        ),
        (
            &["snapshot", "http://x/", "--settle-ms", "-3"],
            &[],
            "invalid value '-3' for '--settle-ms",
        ),
        (&["snapshot"], &[], "<URL>"),
        (&["watch", "--policy", "sometimes"], &[], "must_respond"),
        (
            &[
                "snapshot",
                "http://127.0.0.1:9/",
                "--cdp-url",
                "http://127.0.0.1:1",
            ],
            &[],
            "127.0.0.1:1",
        ),
        (
            &["snapshot", "not a url", "--cdp-url", "http://127.0.0.1:1"],
            &[],
            "absolute URL",
        ),
        (
            &["snapshot", "http://x/"],
            &[("CDP_SUPERVISOR_BROWSER__DIALOG_POLCY", "auto_dismiss")],
            "unknown config key",
        ),
    ];
    for (args, env, needle) in cases {
        let (code, out, err) = run(args, env);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(out.is_empty(), "{args:?} printed to stdout: {out}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: not one line:\n{err}"
        );
        assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn credentials_in_a_cdp_url_never_reach_the_error() {
    let (code, _, err) = run(
        &[
            "snapshot",
            "http://x/",
            "--cdp-url",
            "http://alice:hunter2@127.0.0.1:1/?token=s3cret",
        ],
        &[],
    );
    assert_ne!(code, 0);
    assert!(!err.contains("hunter2") && !err.contains("s3cret"), "{err}");
}

#[test]
fn snapshot_prints_the_snapshot_json_of_a_page() {
    let (_rt, site) = demo_site();
    let url = site.url("a.test", "/console-error");
    let (code, out, err) = snapshot_of(&url, "300");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(v["url"], url);
    for key in [
        "title",
        "pending_dialogs",
        "recent_dialogs",
        "frame_tree",
        "console_errors",
    ] {
        assert!(v.get(key).is_some(), "{key} missing: {v}");
    }
    assert!(
        v["console_errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["text"] == "boom"),
        "{v}"
    );
}

/// A helper (stop 27): `snapshot` of a page that did not load printed its
/// JSON and exited 0 with nothing said. A page showing a dialog as it
/// loads is still printed (the dialog is what the user may want to see),
/// and stderr says it did not load.
#[test]
fn snapshot_of_a_page_that_did_not_load_says_so_on_stderr() {
    let (_rt, site) = demo_site();
    let (code, out, err) = snapshot_of(&site.url("a.test", "/alert-on-load"), "100");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(v["pending_dialogs"][0]["type"], "alert", "{v}");
    assert!(
        err.contains("dialog_pending") && err.lines().count() == 1,
        "one line on stderr: {err:?}"
    );
}

/// `snapshot URL --settle-ms SETTLE` on a launched Chromium that resolves
/// the demo site's hosts: exit code, stdout, stderr.
fn snapshot_of(url: &str, settle: &str) -> (i32, String, String) {
    let args = format!("[\"{}\"]", cdp_supervisor::demo_site::host_resolver_arg());
    run(
        &["snapshot", url, "--settle-ms", settle],
        &[("CDP_SUPERVISOR_BROWSER__CHROMIUM_ARGS", &args)],
    )
}

/// The bundled demo site on loopback, served by the runtime returned with
/// it (keep it alive); fails loudly when Chromium is missing.
fn demo_site() -> (
    tokio::runtime::Runtime,
    cdp_supervisor::demo_site::SiteServer,
) {
    common::require_chromium();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let site = rt
        .block_on(cdp_supervisor::demo_site::SiteServer::start())
        .unwrap();
    (rt, site)
}

/// `watch URL --json --policy auto_accept` on a launched Chromium that
/// resolves the demo site's hosts, and its stdout, line by line.
fn watch_json(url: &str) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let args = format!("[\"{}\"]", cdp_supervisor::demo_site::host_resolver_arg());
    spawn_lines(
        Command::new(BIN)
            .args(["watch", url, "--json", "--policy", "auto_accept"])
            .env("CDP_SUPERVISOR_BROWSER__CHROMIUM_ARGS", &args),
    )
}

/// Spawns `command` and hands its stdout over line by line (stderr dropped).
fn spawn_lines(command: &mut Command) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cdp-supervisor");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The JSON lines `watch_json(url)` writes until `done` holds for them or
/// `secs` pass; then `watch` is stopped with Ctrl-C. Each line must be JSON.
fn watch_events(
    url: &str,
    secs: u64,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let (child, rx) = watch_json(url);
    let mut events: Vec<serde_json::Value> = Vec::new();
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until && !done(&events) {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            events.push(
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
            );
        }
    }
    interrupt(child);
    events
}

/// Stops `watch` as a person does (Ctrl-C), so that it removes its
/// Chromium's user-data-dir; SIGKILL, which leaves the directory behind,
/// only if it has not ended 10 s later.
fn interrupt(mut child: std::process::Child) {
    // SAFETY: a plain syscall on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn watch_json_writes_one_object_per_line_with_an_event_field() {
    let (_rt, site) = demo_site();
    let lines = watch_events(&site.url("a.test", "/alert-on-load"), 20, |events| {
        events.iter().any(|e| e["event"] == "dialog_closed")
    });
    let events: Vec<&str> = lines
        .iter()
        .map(|v| v["event"].as_str().expect("event field"))
        .collect();
    for e in ["attached", "dialog_opened", "dialog_closed"] {
        assert!(events.contains(&e), "no {e} in {events:?}");
    }
}

/// Issue 9: `watch --json` shows tabs opening and closing: a checkout opens
/// its payment popup on load, the popup's confirm is answered by the
/// policy, and the popup closes itself.
#[test]
fn watch_json_shows_a_popup_open_its_dialog_and_close() {
    let (_rt, site) = demo_site();
    let events = watch_events(&site.url("a.test", "/checkout?open=1"), 30, |events| {
        events.iter().any(|e| e["event"] == "tab_closed")
    });
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    let opened = events
        .iter()
        .find(|e| e["event"] == "tab_opened")
        .unwrap_or_else(|| panic!("no tab_opened in {names:?}"));
    let popup = opened["target_id"].as_str().unwrap();
    assert!(opened["opener_target_id"].is_string(), "{opened}");
    let dialog = events
        .iter()
        .find(|e| e["event"] == "dialog_closed")
        .unwrap_or_else(|| panic!("no dialog_closed in {names:?}"));
    assert_eq!(dialog["dialog"]["message"], "Pay 12 EUR?");
    assert_eq!(dialog["dialog"]["target_id"], popup);
    assert_eq!(dialog["dialog"]["closed_by"], "auto_policy");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "tab_closed" && e["target_id"] == popup),
        "no tab_closed for the popup in {names:?}"
    );
}

/// `watch --json` sees what the page does after it starts: the two iframes
/// of the page it navigates to, under that page's top frame, and the
/// console errors its scripts log. (The supervisor builds these notices
/// only while a watcher listens.)
#[test]
fn watch_json_shows_the_frames_and_console_errors_that_come_after_it() {
    let (_rt, site) = demo_site();
    for (path, done) in [
        ("/demo", "frame_attached"),
        ("/console-error", "console_error"),
    ] {
        let events = watch_events(&site.url("a.test", path), 30, |events| {
            events.iter().filter(|e| e["event"] == done).count() >= 2
        });
        let seen: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == done).collect();
        if path == "/demo" {
            let top = events
                .iter()
                .find(|e| e["event"] == "frame_navigated")
                .map(|e| e["frame_id"].clone());
            assert!(
                top.is_some()
                    && seen
                        .iter()
                        .all(|e| Some(&e["parent_frame_id"]) == top.as_ref()),
                "both iframes under the page's top frame: {events:?}"
            );
        } else {
            let texts: Vec<&str> = seen
                .iter()
                .filter_map(|e| e["error"]["text"].as_str())
                .collect();
            assert!(texts.first() == Some(&"boom"), "{events:?}");
            assert!(
                texts.iter().any(|t| t.contains("uncaught boom")),
                "{events:?}"
            );
        }
    }
}

/// A helper (stop 27) ran human `watch --cdp-url` on a tab an alert already
/// blocked: 6 of 8 first attaches printed only the frame tree. The
/// page-blocked notice went out during the attach, before `watch` listened.
#[test]
fn watch_says_at_attach_what_already_blocks_the_page() {
    common::require_chromium();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (site, chromium) = rt.block_on(common::site_and_chromium());
    // Another client's alert, open before `watch` attaches.
    let first = rt.block_on(async {
        let sup = cdp_supervisor::supervisor::driver::Supervisor::start(
            chromium.ws_url(),
            common::options(
                cdp_supervisor::supervisor::policy::DialogPolicy::MustRespond,
                Duration::from_secs(300),
            ),
        )
        .await
        .expect("the first client attaches");
        let _ = sup
            .navigate(
                &site.url("a.test", "/alert-on-load"),
                Duration::from_secs(30),
            )
            .await;
        common::wait_snapshot(&sup, "the alert pending", |s| !s.pending_dialogs.is_empty()).await;
        sup
    });
    let (child, rx) = spawn_lines(Command::new(BIN).args([
        "watch",
        "--cdp-url",
        &chromium.http_url().expect("a DevTools port"),
    ]));
    let mut lines: Vec<String> = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    let blocked = |l: &String| l.starts_with("page blocked");
    while Instant::now() < until && !lines.iter().any(blocked) {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            lines.push(line);
        }
    }
    // A moment more: a notice that repeats the attach text would come now.
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
        lines.push(line);
    }
    interrupt(child);
    rt.block_on(first.stop());
    let attached = lines.iter().position(|l| l.starts_with("attached to"));
    let said = lines.iter().position(blocked);
    assert!(
        attached.is_some() && said.is_some(),
        "watch says the page is blocked: {lines:#?}"
    );
    assert_eq!(
        lines.iter().filter(|l| blocked(l)).count(),
        1,
        "said once: {lines:#?}"
    );
    drop(chromium);
}

/// `live URL`: a browser with no agent; the printed control link opens the
/// live view, whose state says a person has it and shows the page; a wrong
/// token is a 404; Ctrl-C ends it with exit 0.
#[test]
fn live_prints_a_control_link_to_a_browser_with_no_agent() {
    let mut child = Command::new(BIN)
        .args(["live", "data:text/html,<title>live-cli</title><p>hello"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cdp-supervisor live");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let until = Instant::now() + Duration::from_secs(60);
    let mut control = None;
    while control.is_none() && Instant::now() < until {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200))
            && let Some(at) = line.find("control (yours alone): ")
        {
            control = Some(
                line[at + "control (yours alone): ".len()..]
                    .trim()
                    .to_owned(),
            );
        }
    }
    let control = control.expect("live printed its control link within 60 s");
    let get = |url: &str| -> (u16, String) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let r = reqwest::get(url).await.expect("the live view answers");
            (r.status().as_u16(), r.text().await.unwrap_or_default())
        })
    };
    let (code, body) = get(&format!("{control}/state"));
    assert_eq!(code, 200, "{body}");
    let state: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["controller"], "person", "{state}");
    assert_eq!(state["title"], "live-cli", "{state}");
    let (page, html) = get(&control);
    assert!(
        page == 200 && html.contains("id=\"screen\""),
        "the page: {page}"
    );
    let wrong = format!("{}{}", &control[..control.len() - 32], "0".repeat(32));
    assert_eq!(get(&wrong).0, 404);
    // SAFETY: a plain syscall on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let until = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if Instant::now() > until {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.is_some_and(|s| s.success()),
        "Ctrl-C ends live with exit 0: {status:?}"
    );
}
