//! How cheap a supervisor is: start `N` supervisors (each its own CDP
//! connection and task) on the scripted mock endpoint, **in another
//! process**, and print what they add to this process — resident memory
//! ((RSS(N) − RSS(0)) / N), live heap (a counting allocator: bytes
//! allocated and not freed), file descriptors — and the time to start and
//! to stop them. A bench command that prints figures:
//!
//! ```sh
//! cargo bench -p cdp-supervisor --bench many                 # N = 1000
//! MANY_N=10000 cargo bench -p cdp-supervisor --bench many    # needs ulimit -n ≥ 10100
//! ```
//!
//! The mock runs as this same executable re-run with `MANY_MOCK=1` (it
//! prints its WebSocket URL and serves until its stdin closes), so its
//! sockets and buffers are not counted. Each supervisor attaches to the
//! mock's page `T1` (one frame, settled) and then sits idle.
//!
//! With `MANY_LISTENERS=1` each supervisor also gets a live-notice
//! receiver (`Supervisor::notices`, what `watch` holds): the cost of a
//! watched supervisor.

use cdp_mock::MockCdp;
use cdp_supervisor::supervisor::driver::{Supervisor, SupervisorOptions};
use futures_util::StreamExt;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Supervisors started when `MANY_N` is not set.
const DEFAULT_N: usize = 1000;

/// Attaches in flight at once, as a server taking many tasks would.
const STARTING_AT_ONCE: usize = 64;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static A: counting_alloc::Counting = counting_alloc::Counting;

fn rss_kib() -> i64 {
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

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// The mock's side: serve until stdin closes (the bench ended or died).
async fn serve_mock() {
    let mock = MockCdp::start().await;
    println!("{}", mock.ws_url());
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
    })
    .await
    .expect("stdin reader");
}

#[tokio::main]
async fn main() {
    if std::env::var_os("MANY_MOCK").is_some() {
        return serve_mock().await;
    }
    let n: usize = std::env::var("MANY_N")
        .ok()
        .map(|v| v.parse().expect("MANY_N: a number of supervisors"))
        .unwrap_or(DEFAULT_N);
    let mut mock = Command::new(std::env::current_exe().expect("own path"))
        .env("MANY_MOCK", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the mock process");
    let mut ws_url = String::new();
    BufReader::new(mock.stdout.take().expect("mock stdout"))
        .read_line(&mut ws_url)
        .expect("the mock's URL");
    let ws_url = ws_url.trim().to_owned();

    // Warm up: the first supervisor pays for one-time allocations.
    let warm = Supervisor::start(&ws_url, SupervisorOptions::default())
        .await
        .expect("attach");
    let listeners = std::env::var_os("MANY_LISTENERS").is_some();
    let (rss0, heap0, fds0) = (rss_kib(), counting_alloc::live(), open_fds());
    let started = Instant::now();
    let all: Vec<Supervisor> = futures_util::stream::iter(0..n)
        .map(|_| Supervisor::start(&ws_url, SupervisorOptions::default()))
        .buffer_unordered(STARTING_AT_ONCE)
        .map(|s| s.expect("attach (raise ulimit -n for a large MANY_N)"))
        .collect()
        .await;
    let took = started.elapsed();
    // Held until the supervisors stop: a receiver is what a watcher costs.
    let _receivers: Vec<_> = if listeners {
        all.iter().map(Supervisor::notices).collect()
    } else {
        Vec::new()
    };
    // Let every driver finish what attaching queued.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (rss, heap, fds) = (rss_kib(), counting_alloc::live(), open_fds());
    let per = |d: f64| d / n as f64;
    println!(
        "{n} supervisors, mock endpoint in another process{}:",
        if listeners {
            ", each with a notice receiver"
        } else {
            ""
        }
    );
    println!(
        "  start  {:.1} s in all, {:.2} ms each",
        took.as_secs_f64(),
        took.as_secs_f64() * 1000.0 / n as f64
    );
    println!(
        "  RSS    {:.1} KiB each ({} KiB in all)",
        per((rss - rss0) as f64),
        rss - rss0
    );
    println!(
        "  heap   {:.1} KiB each live (counting allocator)",
        per((heap - heap0) as f64) / 1024.0
    );
    println!("  fds    {:.2} each", per(fds.saturating_sub(fds0) as f64));
    assert!(all.iter().all(Supervisor::is_running));
    let stopping = Instant::now();
    for s in &all {
        s.stop().await;
    }
    let stopped = stopping.elapsed();
    println!(
        "  stop   {:.2} s in all, {:.3} ms each",
        stopped.as_secs_f64(),
        stopped.as_secs_f64() * 1000.0 / n as f64
    );
    warm.stop().await;
    drop(mock.stdin.take());
    let _ = mock.wait();
}
