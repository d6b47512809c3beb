//! Events per second through a real WebSocket: the scripted mock endpoint
//! (on its own thread) writes pre-encoded frames in one write
//! ([`cdp_mock::MockCdp::flood`]); one supervisor (on its own
//! single-threaded runtime, so that thread's CPU time is the supervisor's:
//! socket read, decode, core, publish) takes them in. Prints, per flood,
//! events/s and CPU µs per event, and the sender's own ceiling (the same
//! bytes to a client that only reads frames). Run with
//! `cargo bench -p cdp-supervisor --bench flood` (`FLOOD_N` events per
//! flood, default 200000; `FLOOD_ONLY=churn` runs only the floods whose name
//! contains it, `FLOOD_REPEAT=k` runs each k times: under `perf record`,
//! the floods then outweigh building them).

use cdp_mock::{MockCdp, encode_text_frames, event_text};
use cdp_supervisor::supervisor::driver::{Supervisor, SupervisorOptions};
use futures_util::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

/// This thread's CPU time (`/proc/thread-self/schedstat`, nanoseconds).
fn thread_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = s
        .split_whitespace()
        .next()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

fn console(i: usize) -> String {
    event_text(
        Some("S1"),
        "Runtime.consoleAPICalled",
        &json!({"type": "error", "args": [{"type": "string", "value": format!("boom {i}")}],
                "executionContextId": 1, "timestamp": 1.7e12}),
    )
}

const SENTINEL: &str = "flood done";

fn sentinel() -> String {
    event_text(
        Some("S1"),
        "Runtime.consoleAPICalled",
        &json!({"type": "error", "args": [{"type": "string", "value": SENTINEL}],
                "executionContextId": 1, "timestamp": 1.7e12}),
    )
}

/// What builds a flood's `n` event texts.
type Build = fn(usize) -> Vec<String>;

/// The floods: name, and what builds its `n` event texts (the sentinel is
/// appended to each). Only the floods that run are built: under `perf
/// record`, building the others would outweigh them.
const FLOODS: [(&str, Build); 3] = [
    ("console-error flood", console_flood),
    ("frame churn (attach/detach)", churn),
    ("mixed (¾ dropped events)", mixed),
];

fn console_flood(n: usize) -> Vec<String> {
    (0..n).map(console).collect()
}

fn churn(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let f = format!("F{}", i / 2);
            if i % 2 == 0 {
                event_text(
                    Some("S1"),
                    "Page.frameAttached",
                    &json!({"frameId": f, "parentFrameId": "T1"}),
                )
            } else {
                event_text(
                    Some("S1"),
                    "Page.frameDetached",
                    &json!({"frameId": f, "reason": "remove"}),
                )
            }
        })
        .collect()
}

/// What a busy page sends: mostly events the supervisor drops.
fn mixed(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 4 {
            0 => console(i),
            1 => event_text(
                Some("S1"),
                "Network.dataReceived",
                &json!({"requestId": format!("R{i}"), "timestamp": 1.0, "dataLength": 512, "encodedDataLength": 0}),
            ),
            2 => event_text(
                Some("S1"),
                "Page.lifecycleEvent",
                &json!({"frameId": "T1", "loaderId": "L1", "name": "networkAlmostIdle", "timestamp": 1.0}),
            ),
            _ => event_text(
                Some("S1"),
                "Runtime.executionContextCreated",
                &json!({"context": {"id": i, "origin": "https://a.test", "name": "", "uniqueId": "u", "auxData": {"isDefault": false, "frameId": "T1"}}}),
            ),
        })
        .collect()
}

fn main() {
    let n: usize = std::env::var("FLOOD_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    // The mock on its own thread and runtime.
    let (url_tx, url_rx) = std_mpsc::channel();
    let (flood_tx, flood_rx) = std_mpsc::channel::<(Arc<Vec<u8>>, std_mpsc::Sender<()>)>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mock = MockCdp::start().await;
            url_tx.send(mock.ws_url()).unwrap();
            let flood_rx = Arc::new(std::sync::Mutex::new(flood_rx));
            loop {
                let rx = flood_rx.clone();
                let Ok(Ok((bytes, done))) =
                    tokio::task::spawn_blocking(move || rx.lock().unwrap().recv()).await
                else {
                    return;
                };
                mock.flood(bytes).await;
                let _ = done.send(());
            }
        });
    });
    let ws_url = url_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("flood: {n} events per flood, one supervisor on one thread, mock endpoint on another");
    let only = std::env::var("FLOOD_ONLY").unwrap_or_default();
    let repeat: usize = std::env::var("FLOOD_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let runs = FLOODS
        .into_iter()
        .filter(|(name, _)| name.contains(only.as_str()))
        .map(|(name, build)| (name, build(n)))
        .flat_map(|flood| std::iter::repeat_n(flood, repeat));
    for (name, texts) in runs {
        let mut all: Vec<&str> = texts.iter().map(String::as_str).collect();
        let end = sentinel();
        all.push(&end);
        let bytes = Arc::new(encode_text_frames(all.iter().copied()));
        // The sender's ceiling: a client that only reads the frames.
        let ceiling = rt.block_on(async {
            let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();
            let (done_tx, _done_rx) = std_mpsc::channel();
            let t = Instant::now();
            flood_tx.send((bytes.clone(), done_tx)).unwrap();
            let mut got = 0;
            while got < all.len() {
                match ws.next().await {
                    Some(Ok(m)) if m.is_text() => got += 1,
                    Some(Ok(_)) => {}
                    _ => panic!("the reader's socket ended after {got} frames"),
                }
            }
            let took = t.elapsed();
            drop(ws);
            got as f64 / took.as_secs_f64()
        });
        let (rate, cpu_us, seen) = rt.block_on(async {
            let sup = Supervisor::start(&ws_url, SupervisorOptions::default())
                .await
                .expect("attach to the mock");
            let mut snaps = sup.subscribe();
            let (done_tx, _done_rx) = std_mpsc::channel();
            let cpu0 = thread_cpu();
            let t = Instant::now();
            flood_tx.send((bytes.clone(), done_tx)).unwrap();
            let mut seen = 0usize;
            loop {
                seen += 1;
                if snaps
                    .borrow_and_update()
                    .console_errors
                    .last()
                    .is_some_and(|e| e.text == SENTINEL)
                {
                    break;
                }
                tokio::time::timeout(Duration::from_secs(120), snaps.changed())
                    .await
                    .expect("the flood reached the snapshot within 120 s")
                    .expect("the supervisor runs");
            }
            let took = t.elapsed();
            let cpu = thread_cpu() - cpu0;
            sup.stop().await;
            (
                all.len() as f64 / took.as_secs_f64(),
                cpu.as_secs_f64() * 1e6 / all.len() as f64,
                seen,
            )
        });
        println!(
            "flood: {name:<30} {:>7.0} k events/s, {cpu_us:.2} µs CPU/event (sender ceiling {:.0} k events/s; {:.0} events per snapshot seen)",
            rate / 1e3,
            ceiling / 1e3,
            all.len() as f64 / seen as f64
        );
    }
}
