//! The navigation policy's cost on page load, on real headless Chromium (a
//! bench command that prints figures, not a timed test): run with
//! `cargo bench -p cdp-supervisor --bench policy`.
//!
//! A page with 20 iframes (10 same-site, 10 cross-site OOPIFs) is loaded
//! `LOADS` times per mode, the modes interleaved in rounds so that drift
//! on a shared machine hits them alike; each load is timed from
//! `navigate` to its load event (`NavigateOutcome::Loaded`). Modes:
//! - `off`: the default config — no `Fetch.enable` at all;
//! - `file-only`: `Fetch.enable` with a `file:*` document pattern only (no
//!   `http` request is paused): what refusing `file:` in the browser by
//!   default would cost — the figure behind the default's choice (sent
//!   on the page session only, so a lower bound);
//! - `on`: `blocked_origins: [http://blocked.test]` — every document
//!   request (the page's, its 20 iframes') is paused, checked by the
//!   supervisor and continued, on the page's and each OOPIF's session.

use cdp_supervisor::browser::{LaunchOptions, LocalChromium, find_chromium};
use cdp_supervisor::demo_site::{SiteServer, host_resolver_arg};
use cdp_supervisor::supervisor::driver::{NavigateOutcome, Supervisor, SupervisorOptions};
use cdp_supervisor::supervisor::origins::NavigationPolicy;
use std::time::{Duration, Instant};

const LOADS: usize = 60;
const ROUNDS: usize = 6;
const FRAMES: usize = 20;
const WAIT: Duration = Duration::from_secs(30);

fn stats(label: &str, mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label:<48} n={:<4} median {:>7.2} ms  p90 {:>7.2} ms  max {:>7.2} ms",
        v.len(),
        pct(0.5),
        pct(0.9),
        v[v.len() - 1]
    );
    pct(0.5)
}

#[tokio::main]
async fn main() {
    if let Err(e) = find_chromium(None) {
        panic!("this benchmark needs Chromium: {e}");
    }
    let site = SiteServer::start().await.expect("site");
    let frames: String = (0..FRAMES)
        .map(|i| {
            let host = if i % 2 == 0 { "a.test" } else { "b.test" };
            format!(
                "<iframe src=\"http://{host}:{{port}}/blank?i={i}\" width=40 height=30></iframe>"
            )
        })
        .collect();
    site.add_page(
        "/twenty",
        &format!("<!doctype html><title>twenty</title><p>20 iframes</p>{frames}"),
    );
    let chromium = LocalChromium::launch(&LaunchOptions {
        extra_args: vec![host_resolver_arg().to_owned()],
        ..Default::default()
    })
    .await
    .expect("launch");
    let none: &[&str] = &[];
    let modes = [
        (
            "off (default: no Fetch.enable)",
            NavigationPolicy::default(),
            false,
        ),
        (
            "file-only (Fetch.enable, file:* pattern)",
            NavigationPolicy::default(),
            true,
        ),
        (
            "on (blocked_origins, every document paused)",
            NavigationPolicy::new(none, &["http://blocked.test"], false).unwrap(),
            false,
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let url = site.url("a.test", "/twenty");
    for round in 0..ROUNDS {
        for (m, (_, policy, file_only)) in modes.iter().enumerate() {
            let sup = Supervisor::start(
                chromium.ws_url(),
                SupervisorOptions {
                    navigation: policy.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("attach");
            if *file_only {
                // What the default would send on every session.
                sup.cdp(
                    "Fetch.enable",
                    serde_json::json!({"patterns": [{"urlPattern": "file:*", "resourceType": "Document", "requestStage": "Request"}]}),
                    None,
                    None,
                    WAIT,
                )
                .await
                .expect("Fetch.enable");
            }
            // One unmeasured load: caches and processes warm for this mode.
            sup.navigate(&url, WAIT).await.expect("navigate");
            for _ in 0..LOADS / ROUNDS {
                let t = Instant::now();
                match sup.navigate(&url, WAIT).await.expect("navigate") {
                    NavigateOutcome::Loaded => {}
                    other => panic!("round {round}: {other:?}"),
                }
                times[m].push(t.elapsed().as_secs_f64() * 1000.0);
            }
            assert!(sup.snapshot().blocked_navigations.is_empty());
            sup.stop().await;
        }
    }
    let medians: Vec<f64> = modes
        .iter()
        .zip(times)
        .map(|((label, _, _), t)| stats(&format!("load, 20 iframes, policy {label}"), t))
        .collect();
    for (m, label) in [(1, "file-only"), (2, "on")] {
        println!(
            "{label} vs off: {:+.2} ms on the median load ({:+.1} %)",
            medians[m] - medians[0],
            (medians[m] / medians[0] - 1.0) * 100.0
        );
    }
    chromium.shutdown().await;
}
