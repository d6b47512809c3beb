//! The MCP server driven from outside the project: the official MCP Python
//! SDK runs scripts of `tests/mcp_client/` against the real binary (see
//! `tests/mcp_client/run.sh`): `client.py` over stdio and streamable HTTP,
//! `truth.py` for what the agent reads being true (live titles, attach on
//! the first call, interrupted calls delivered once, readers that never
//! wait, a failed connect that keeps the old browser), `push.py` for what the
//! server pushes and waits on (the `browser://snapshot` resource and its
//! update notifications, `browser_wait`, `ask_user` through elicitation, a
//! dialog policy per type, output schemas), `tabs.py` for every tab the
//! agent opens (popups caught from their first script, `browser_tabs`,
//! `max_tabs`, crashed tabs), `providers.py` for a cloud
//! provider's session through the binary (created on the first call against
//! a fake Browser Use API, stopped at `browser_disconnect` and when the MCP
//! session ends, over stdio and HTTP),
//! `security.py` for the
//! navigation policy (blocked and allowed origins, `file:`) and the HTTP
//! bounds (413, `--max-sessions`, `--idle-timeout-s`).,
//! `act.py` for acting on the page (the outline
//! with refs across OOPIFs, clicks, typing, keys and selects through real
//! input, a click a dialog interrupts delivered once), `core.py` for calls
//! and reconnects (a dialog closed during a socket drop, a tab gone during
//! one, a timed-out call kept, another tab's dialog claiming no call),
//! `cost.py` for what an agent pays per step (issue 33: every link of a
//! 60,000-element page reachable through `page_cursor`, none of its hidden
//! menus, `find`, a continuation's ref that clicks through, tabs in a
//! click's result and in the next result's `changes`, twenty clicks that
//! count twenty, console errors one short line each), `prompts.py` for
//! every prompt the browser raises (HTTP authentication as an `http_auth`
//! dialog: answered, wrong, dismissed, stored credentials, iframes, no
//! password in any output or at `RUST_LOG=trace`), `revisions.py` for both
//! MCP revisions (2026-07-28 with task handles, listen and input_required;
//! 2025-11-25 as before) and their bad input, `sdk1_revisions.py` for the
//! SDK's 1.x and `ts_revisions.cjs` for the TypeScript SDK 1.x (through
//! npm; both negotiate 2025-11-25), `contexts.py` for many tasks in one
//! browser, a context each (issue 41). Fails — never skips —
//! when python3 or Chromium is missing. The first run needs network access
//! for `pip install mcp` (the virtualenv is reused afterwards).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// One script at a time: each starts several Chromiums, and `truth.py` and
/// `push.py` measure response times that a parallel run would skew.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `tests/mcp_client/run.sh BINARY SCRIPT` and fails unless it exits 0.
fn run_script(script_name: &str) {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let python = Command::new("python3").arg("--version").output();
    assert!(
        python.is_ok_and(|o| o.status.success()),
        "python3 is missing: this test drives the server with the MCP Python SDK; install python3 (with venv)"
    );
    let chromium = match cdp_supervisor::browser::find_chromium(None) {
        Ok(path) => path,
        Err(e) => panic!("this test needs a real Chromium (install chromium): {e}"),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/run.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_cdp-supervisor"))
        .arg(script_name)
        .env("CHROMIUM", &chromium)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tests/mcp_client/run.sh");
    let out = echo_lines(child.stdout.take().expect("piped stdout"));
    let err = echo_lines(child.stderr.take().expect("piped stderr"));
    let status = child.wait().expect("wait for tests/mcp_client/run.sh");
    let mut lines = out.join().unwrap_or_default();
    lines.extend(err.join().unwrap_or_default());
    assert!(
        status.success(),
        "{} {script_name} failed: {status}\n{}",
        script.display(),
        what_failed(&lines)
    );
}

/// Echoes a child's output as it comes (the harness shows it live) and
/// keeps its lines for the failure message.
fn echo_lines(from: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            eprintln!("{line}");
            kept.push(line);
        }
        kept
    })
}

/// The part of a script's output that says what failed: its summary (from
/// the line ending in `summary:`) and every line naming a failure before
/// it, at most 80 lines, so a CI log that keeps only the end of the run
/// still shows which scenario failed and why.
fn what_failed(lines: &[String]) -> String {
    let summary = lines
        .iter()
        .rposition(|l| l.ends_with("summary:"))
        .unwrap_or(lines.len());
    let mut picked: Vec<&str> = lines[..summary]
        .iter()
        .filter(|l| {
            l.contains("FAIL")
                || l.contains("stopped at")
                || l.contains("Error")
                || l.contains("error:")
        })
        .map(String::as_str)
        .collect();
    picked.extend(lines[summary..].iter().map(String::as_str));
    let start = picked.len().saturating_sub(80);
    picked[start..].join("\n")
}

#[test]
fn the_official_python_sdk_drives_the_binary_over_stdio_and_http() {
    run_script("client.py");
}

#[test]
fn what_the_agent_reads_through_the_python_sdk_is_true() {
    run_script("truth.py");
}

#[test]
fn the_server_pushes_waits_and_asks_the_human_through_the_python_sdk() {
    run_script("push.py");
}

#[test]
fn every_tab_the_agent_opens_is_supervised_through_the_python_sdk() {
    run_script("tabs.py");
}

#[test]
fn cloud_provider_sessions_live_and_end_with_the_mcp_session_through_the_python_sdk() {
    run_script("providers.py");
}

#[test]
fn the_navigation_policy_and_http_bounds_hold_through_the_python_sdk() {
    run_script("security.py");
}

#[test]
fn calls_and_reconnects_stay_true_through_the_python_sdk() {
    run_script("core.py");
}

#[test]
fn the_agent_acts_on_the_page_across_oopifs_through_the_python_sdk() {
    run_script("act.py");
}

/// Issue 43 (browser_fill_form, in the top document and an OOPIF, a dialog
/// midway; what the model reads) and issue 44 (typing into a date set nothing).
#[test]
fn forms_fill_in_one_call_and_the_text_keeps_what_the_agent_needs_through_the_python_sdk() {
    run_script("form.py");
}

#[test]
fn what_an_agent_pays_per_step_through_the_python_sdk() {
    run_script("cost.py");
}

#[test]
fn every_prompt_the_browser_raises_through_the_python_sdk() {
    run_script("prompts.py");
}

#[test]
fn a_person_takes_the_browser_through_the_live_view_and_hands_it_back() {
    run_script("handoff.py");
}

#[test]
fn both_mcp_revisions_with_task_handles_through_the_python_sdk() {
    run_script("revisions.py");
}

#[test]
fn the_python_sdk_1x_gets_2025_11_25_from_a_server_that_offers_both() {
    run_script("sdk1_revisions.py");
}

#[test]
fn the_typescript_sdk_1x_gets_2025_11_25_from_a_server_that_offers_both() {
    run_script("ts_revisions.cjs");
}

/// Issue 41: many tasks, one browser — a browser context per MCP session
/// of `mcp --http` (cookies, storage, dialogs, popups isolated; one
/// session's end, browser-wide `browser_cdp` refused, the shared browser
/// killed and every task back).
#[test]
fn many_tasks_share_one_browser_a_context_each_through_the_python_sdk() {
    run_script("contexts.py");
}
