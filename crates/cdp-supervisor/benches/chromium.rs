//! Figures on real headless Chromium (a bench command that prints figures,
//! not a timed test): run with `cargo bench -p cdp-supervisor --bench chromium`.
//!
//! - attach time: connect → frame tree complete, on a loaded page with a
//!   same-origin iframe and one OOPIF, and on one with two OOPIFs (issue
//!   11's goal: ≤ 15 ms p50), `Supervisor::attach_time`, over `ATTACHES`
//!   fresh supervisors each: back to back (each right after the last one
//!   stopped) and settled (`SETTLE` after);
//! - how long `alert()` freezes page JavaScript under `auto_dismiss`,
//!   measured by the page itself with `performance.now()` around each of
//!   `ALERTS` calls;
//! - an agent's answer: `answer_dialog` from call to return, over `ANSWERS` alerts.

use cdp_supervisor::browser::{Debugging, LaunchOptions, LocalChromium, find_chromium};
use cdp_supervisor::demo_site::{SiteServer, host_resolver_arg};
use cdp_supervisor::supervisor::driver::{CallOutcome, Supervisor, SupervisorOptions};
use cdp_supervisor::supervisor::policy::DialogPolicy;
use cdp_supervisor::supervisor::state::{DialogAction, DialogRequest};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const ATTACHES: usize = 20;
const ALERTS: usize = 200;
const ANSWERS: usize = 50;
const WAIT: Duration = Duration::from_secs(30);
/// How long a settled attach waits after the supervisor before it stopped.
const SETTLE: Duration = Duration::from_millis(250);

fn stats(label: &str, unit: &str, mut v: Vec<f64>) {
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label:<44} n={:<4} median {:>8.3} {unit}  p99 {:>8.3} {unit}  max {:>8.3} {unit}",
        v.len(),
        pct(0.5),
        pct(0.99),
        v[v.len() - 1]
    );
}

async fn eval(sup: &Supervisor, expression: &str) -> Value {
    match eval_unless_blocked(sup, expression).await {
        Some(v) => v,
        None => panic!(
            "interrupted by a dialog: {:?}",
            sup.snapshot().pending_dialogs
        ),
    }
}

/// The value of `expression`, or `None` when a dialog interrupted it or no
/// reply came in time (it may then still run: only for expressions that
/// change nothing).
async fn eval_unless_blocked(sup: &Supervisor, expression: &str) -> Option<Value> {
    match sup
        .cdp(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
            None,
            None,
            WAIT,
        )
        .await
        .expect("evaluate")
    {
        CallOutcome::Reply(v) => Some(v["result"]["value"].clone()),
        CallOutcome::Interrupted { .. } | CallOutcome::TimedOut { .. } => None,
    }
}

/// Attach times (ms) of `ATTACHES` fresh supervisors on the page the
/// browser shows, each checked to hold `oopifs` OOPIFs at attach, each
/// started `settle` after the one before it stopped.
async fn attach_times(ws_url: &str, oopifs: usize, settle: Duration) -> Vec<f64> {
    let mut attach = Vec::new();
    for _ in 0..ATTACHES {
        let s = Supervisor::start(ws_url, SupervisorOptions::default())
            .await
            .expect("attach");
        let snap = s.snapshot();
        assert_eq!(
            snap.frame_tree
                .children
                .iter()
                .filter(|c| c.is_oopif)
                .count(),
            oopifs,
            "frame tree complete at attach: {snap:?}"
        );
        attach.push(s.attach_time().as_secs_f64() * 1000.0);
        s.stop().await;
        tokio::time::sleep(settle).await;
    }
    attach
}

#[tokio::main]
async fn main() {
    if let Err(e) = find_chromium(None) {
        panic!("this benchmark needs Chromium: {e}");
    }
    let site = SiteServer::start().await.expect("site");
    site.add_page(
        "/two-oopifs",
        r#"<!doctype html><title>two OOPIFs</title>
        <iframe src="/demo-same"></iframe>
        <iframe src="http://b.test:{port}/demo-oopif"></iframe>
        <iframe src="http://c.test:{port}/demo-oopif"></iframe>"#,
    );
    site.add_page(
        "/freeze",
        r#"<!doctype html><title>freeze</title><script>
        window.runFreeze = function (n) {
          window.__freeze = null;
          setTimeout(function () {
            var t = [];
            for (var i = 0; i < n; i++) { var a = performance.now(); alert("a" + i); t.push(performance.now() - a); }
            window.__freeze = t;
          }, 0);
          return "scheduled";
        };
        </script>"#,
    );
    let chromium = LocalChromium::launch(&LaunchOptions {
        extra_args: vec![host_resolver_arg().to_owned()],
        // Attached by URL, as to a browser someone else runs.
        debugging: Debugging::Port,
        ..Default::default()
    })
    .await
    .expect("launch");
    let opts = |policy: DialogPolicy| SupervisorOptions {
        policy: policy.into(),
        ..Default::default()
    };

    // Attach time on loaded pages: a same-origin iframe and an OOPIF; then
    // two OOPIFs. Back to back, the browser is still tearing down the
    // sessions of the supervisor that just stopped (its detach, four
    // renderer sessions); settled, it is idle, as when an agent attaches.
    for (path, oopifs) in [("/demo", 1), ("/two-oopifs", 2)] {
        let first = Supervisor::start(chromium.ws_url(), opts(DialogPolicy::MustRespond))
            .await
            .expect("attach");
        first
            .navigate(&site.url("a.test", path), WAIT)
            .await
            .expect("navigate");
        first.stop().await;
        for (settle, how) in [(Duration::ZERO, "back to back"), (SETTLE, "settled")] {
            let label = format!("attach, {oopifs} OOPIF(s), {how}");
            stats(
                &label,
                "ms",
                attach_times(chromium.ws_url(), oopifs, settle).await,
            );
        }
    }

    // alert() freeze under auto_dismiss, measured by the page.
    let auto = Supervisor::start(chromium.ws_url(), opts(DialogPolicy::AutoDismiss))
        .await
        .expect("attach");
    auto.navigate(&site.url("a.test", "/freeze"), WAIT)
        .await
        .expect("navigate");
    eval(&auto, &format!("runFreeze({ALERTS})")).await;
    let until = Instant::now() + WAIT;
    let times: Vec<f64> = loop {
        // An alert open at that moment interrupts the read (it runs, harmless,
        // once the alert is dismissed): look again.
        let v = eval_unless_blocked(&auto, "JSON.stringify(window.__freeze)").await;
        if let Some(t) = v
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Option<Vec<f64>>>(s).ok())
            .flatten()
        {
            break t;
        }
        assert!(Instant::now() < until, "the alerts did not finish");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    stats("alert() freeze under auto_dismiss (page-side)", "ms", times);
    auto.stop().await;

    // An agent's answer through the supervisor.
    let agent = Supervisor::start(chromium.ws_url(), opts(DialogPolicy::MustRespond))
        .await
        .expect("attach");
    agent
        .navigate(&site.url("a.test", "/demo"), WAIT)
        .await
        .expect("navigate");
    let mut answers = Vec::new();
    for i in 0..ANSWERS {
        eval(&agent, &format!("fireLater('alert', 'n{i}')")).await;
        let mut rx = agent.subscribe();
        tokio::time::timeout(WAIT, async {
            while rx.borrow_and_update().pending_dialogs.is_empty() {
                rx.changed().await.expect("supervisor running");
            }
        })
        .await
        .expect("dialog seen");
        let t = Instant::now();
        agent
            .answer_dialog(DialogRequest {
                action: DialogAction::Accept,
                prompt_text: None,
                dialog_id: None,
                files: None,
                login: None,
            })
            .await
            .expect("answered");
        answers.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    stats("answer_dialog (call → Chromium's reply)", "ms", answers);
    agent.stop().await;
    chromium.shutdown().await;
}
