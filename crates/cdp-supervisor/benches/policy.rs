//! The cost on page load of pausing every document (HTTP authentication,
//! the navigation policy), on real headless Chromium (a bench command that
//! prints figures, not a timed test): run with
//! `cargo bench -p cdp-supervisor --bench policy`.
//!
//! A page with 20 iframes (10 same-site, 10 cross-site OOPIFs) is loaded
//! `LOADS` times per mode, the modes interleaved in rounds so that drift
//! on a shared machine hits them alike; each load is timed from
//! `navigate` to its load event (`NavigateOutcome::Loaded`). Modes:
//! - `default`: every document request (the page's, its 20 iframes') is
//!   paused at its request stage and continued, on the page's and each
//!   OOPIF's session: Chromium raises HTTP authentication challenges only
//!   for such requests;
//! - `credentials`: the same, with `browser.credentials` for the page's
//!   origin (no challenge comes: what stored credentials cost by themselves);
//! - `policy`: `blocked_origins: [http://blocked.test]` too (each paused
//!   document is also checked against the policy);
//! - `page unpaused`: the default with `Fetch.disable` sent on the page
//!   session after attach, so only the OOPIFs' documents pause — close to
//!   what a page cost before HTTP authentication was handled (then nothing
//!   was paused by default), an upper bound on that baseline.

use cdp_supervisor::browser::{Debugging, LaunchOptions, LocalChromium, find_chromium};
use cdp_supervisor::demo_site::{SiteServer, host_resolver_arg};
use cdp_supervisor::supervisor::credentials::{Credential, Credentials, Secret};
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
        // Attached by URL, as to a browser someone else runs.
        debugging: Debugging::Port,
        ..Default::default()
    })
    .await
    .expect("launch");
    let none: &[&str] = &[];
    let url = site.url("a.test", "/twenty");
    let origin = url.split("/twenty").next().unwrap_or_default().to_owned();
    let stored = Credentials::new(vec![Credential {
        origin,
        username: "bench".into(),
        password: Secret::new("bench"),
        password_env: "UNUSED".into(),
    }]);
    // (label, policy, credentials, Fetch off on the page session)
    let modes = [
        (
            "default (every document paused)",
            NavigationPolicy::default(),
            Credentials::default(),
            false,
        ),
        (
            "credentials (for the page's origin)",
            NavigationPolicy::default(),
            stored,
            false,
        ),
        (
            "policy (blocked_origins too)",
            NavigationPolicy::new(none, &["http://blocked.test"], false).unwrap(),
            Credentials::default(),
            false,
        ),
        (
            "page unpaused (Fetch.disable on the page)",
            NavigationPolicy::default(),
            Credentials::default(),
            true,
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for round in 0..ROUNDS {
        for (m, (_, policy, credentials, unpaused)) in modes.iter().enumerate() {
            let sup = Supervisor::start(
                chromium.ws_url(),
                SupervisorOptions {
                    navigation: policy.clone(),
                    credentials: credentials.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("attach");
            if *unpaused {
                sup.cdp("Fetch.disable", serde_json::json!({}), None, None, WAIT)
                    .await
                    .expect("Fetch.disable");
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
        .map(|((label, ..), t)| stats(&format!("load, 20 iframes, {label}"), t))
        .collect();
    for (m, label) in [(1, "credentials"), (2, "policy"), (3, "page unpaused")] {
        println!(
            "{label} vs default: {:+.2} ms on the median load ({:+.1} %)",
            medians[m] - medians[0],
            (medians[m] / medians[0] - 1.0) * 100.0
        );
    }
    chromium.shutdown().await;
}
