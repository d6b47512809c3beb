//! How cheap a supervisor is: start `N` supervisors (each its own CDP
//! connection and task) on the scripted mock endpoint and print the
//! resident memory they add and the time to start them. A bench command
//! that prints figures: `cargo bench -p cdp-supervisor --bench many`.
//!
//! With `MANY_LISTENERS=1` each supervisor also gets a live-notice
//! receiver (`Supervisor::notices`, what `watch` holds): the cost of a
//! watched supervisor, and of every supervisor before notice channels were
//! made on demand.

use cdp_mock::MockCdp;
use cdp_supervisor::supervisor::driver::{Supervisor, SupervisorOptions};
use std::time::Instant;

const N: usize = 1000;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let mock = MockCdp::start().await;
    // Warm up: the first supervisor pays for one-time allocations.
    let warm = Supervisor::start(&mock.ws_url(), SupervisorOptions::default())
        .await
        .expect("attach");
    let before = rss_kib();
    let started = Instant::now();
    let listeners = std::env::var_os("MANY_LISTENERS").is_some();
    let mut all = Vec::with_capacity(N);
    let mut receivers = Vec::new();
    for _ in 0..N {
        let s = Supervisor::start(&mock.ws_url(), SupervisorOptions::default())
            .await
            .expect("attach");
        if listeners {
            receivers.push(s.notices());
        }
        all.push(s);
    }
    let took = started.elapsed();
    let after = rss_kib();
    println!(
        "{N} supervisors (mock endpoint, in this process with the mock{}): start {:.2} ms each, {:.1} KiB resident each ({} KiB in all)",
        if listeners {
            ", each with a notice receiver"
        } else {
            ""
        },
        took.as_secs_f64() * 1000.0 / N as f64,
        (after.saturating_sub(before)) as f64 / N as f64,
        after.saturating_sub(before)
    );
    assert!(all.iter().all(Supervisor::is_running));
    let stopping = Instant::now();
    for s in &all {
        s.stop().await;
    }
    warm.stop().await;
    println!(
        "stop: {:.2} ms each",
        stopping.elapsed().as_secs_f64() * 1000.0 / N as f64
    );
}
