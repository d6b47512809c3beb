//! Figures of the live view (DESIGN "A person at the wheel"; a bench that
//! prints figures, not a timed test): `cargo bench -p cdp-supervisor --bench live`.
//!
//! The server is the real binary, `cdp-supervisor live URL --cdp-url …`,
//! attached to a headless Chromium this bench launches; viewers are
//! WebSocket clients in this process; the page is reached by this bench's
//! own supervisor (a second CDP client) to change it and to hear its events.
//! - frame latency: a page change (`Runtime.evaluate` sent) → the next
//!   frame at a viewer;
//! - input latency: a click sent on the viewer's socket → the page's
//!   `mousedown` (the time the page records, on the same machine's clock);
//! - with 0, 1, 5 and 20 viewers of an animated page: the server's CPU (its
//!   process's user+system time over the window) and RSS, and the bytes a
//!   second each viewer receives.

use cdp_supervisor::browser::{Debugging, LaunchOptions, LocalChromium};
use cdp_supervisor::supervisor::driver::{Supervisor, SupervisorOptions};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

const TRIALS: usize = 40;
const WINDOW: Duration = Duration::from_secs(10);
/// The page, as a data URL (`#` written `%23`: a raw one starts the fragment).
const PAGE: &str = "data:text/html,<!doctype html><title>bench</title><style>body{margin:0}\
%23b{position:absolute;left:80px;top:80px;width:160px;height:60px}\
%23s{position:absolute;left:300px;top:80px;width:80px;height:80px;background:%23c33}\
.spin %23s{animation:r 1s linear infinite}@keyframes r{to{transform:rotate(360deg)}}</style>\
<button id=b>Press</button><div id=s></div>";

fn stats(label: &str, unit: &str, mut v: Vec<f64>) {
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{label:<34} n={:<3} median {:>7.1} {unit}  p95 {:>7.1} {unit}  max {:>7.1} {unit}",
        v.len(),
        pct(0.5),
        pct(0.95),
        v[v.len() - 1]
    );
}

/// A viewer: reads every message, counts bytes, keeps each frame's arrival.
struct Viewer {
    bytes: Arc<AtomicU64>,
    frames: Arc<Mutex<Vec<(u64, Instant)>>>,
    width: Arc<Mutex<(f64, f64)>>,
    send: tokio::sync::mpsc::Sender<String>,
    task: tokio::task::JoinHandle<()>,
}

async fn viewer(ws: &str) -> Viewer {
    let (socket, _) = tokio_tungstenite::connect_async(ws)
        .await
        .expect("viewer connects");
    let (mut sink, mut stream) = socket.split();
    let bytes = Arc::new(AtomicU64::new(0));
    let frames = Arc::new(Mutex::new(Vec::new()));
    let width = Arc::new(Mutex::new((0.0, 0.0)));
    let (send, mut outgoing) = tokio::sync::mpsc::channel::<String>(16);
    let (b, f, w) = (bytes.clone(), frames.clone(), width.clone());
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                m = stream.next() => match m {
                    Some(Ok(Message::Text(t))) => {
                        let at = Instant::now();
                        b.fetch_add(t.len() as u64, Ordering::Relaxed);
                        if t.starts_with("{\"type\":\"frame\"") {
                            let v: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                            *w.lock().unwrap() = (v["width"].as_f64().unwrap_or(0.0), v["height"].as_f64().unwrap_or(0.0));
                            f.lock().unwrap().push((v["seq"].as_u64().unwrap_or(0), at));
                        }
                    }
                    Some(Ok(_)) => {}
                    _ => return,
                },
                o = outgoing.recv() => match o {
                    Some(text) => if sink.send(Message::text(text)).await.is_err() { return },
                    None => return,
                },
            }
        }
    });
    Viewer {
        bytes,
        frames,
        width,
        send,
        task,
    }
}

fn proc_cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (11 and 12 after the name).
    (ticks(11) + ticks(12)) / 100.0
}

fn proc_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

async fn eval(sup: &Supervisor, expression: &str, await_promise: bool) -> Value {
    sup.cdp(
        "Runtime.evaluate",
        json!({"expression": expression, "returnByValue": true, "awaitPromise": await_promise}),
        None,
        None,
        Duration::from_secs(30),
    )
    .await
    .map(|o| match o {
        cdp_supervisor::supervisor::driver::CallOutcome::Reply(v) => v,
        other => panic!("evaluate {expression}: {other:?}"),
    })
    .expect("evaluate")
}

#[tokio::main]
async fn main() {
    let chromium = LocalChromium::launch(&LaunchOptions {
        // Attached by URL, as to a browser someone else runs.
        debugging: Debugging::Port,
        ..LaunchOptions::default()
    })
    .await
    .expect("launch Chromium");
    let mut server = Command::new(env!("CARGO_BIN_EXE_cdp-supervisor"))
        .args([
            "live",
            PAGE,
            "--cdp-url",
            &chromium.http_url().expect("a DevTools port"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn cdp-supervisor live");
    let pid = server.id();
    // A bench that fails midway (a panic) must not leave the server running.
    struct KillOnDrop(u32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            // SAFETY: a plain syscall on our own child's pid.
            unsafe { libc::kill(self.0 as i32, libc::SIGINT) };
        }
    }
    let _server_guard = KillOnDrop(pid);
    let stderr = BufReader::new(server.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    // Read to the end: a closed pipe would end the server at its next line.
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut control = String::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        if let Some(at) = line.find("control (yours alone): ") {
            control = line[at + 23..].trim().to_owned();
            break;
        }
    }
    assert!(!control.is_empty(), "live printed no control link");
    let ws = format!("{}/ws", control.replacen("http://", "ws://", 1));
    let sup = Supervisor::start(
        &chromium.http_url().expect("a DevTools port"),
        SupervisorOptions::default(),
    )
    .await
    .expect("the bench's own supervisor");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_cpu = proc_cpu_s(pid);
    tokio::time::sleep(WINDOW).await;
    println!(
        "no viewer: server CPU {:.1} %, RSS {:.1} MiB",
        (proc_cpu_s(pid) - idle_cpu) / WINDOW.as_secs_f64() * 100.0,
        proc_rss_mib(pid)
    );

    // Frame latency: a change → the next frame at the viewer.
    let v = viewer(&ws).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut frame_ms = Vec::new();
    for i in 0..TRIALS {
        let seen = v.frames.lock().unwrap().len();
        let t0 = Instant::now();
        eval(
            &sup,
            &format!(
                "document.body.style.background = '#{:06x}'",
                (i * 40_503) % 0xffffff
            ),
            false,
        )
        .await;
        let deadline = t0 + Duration::from_secs(5);
        loop {
            if let Some((_, at)) = v.frames.lock().unwrap().get(seen).copied() {
                frame_ms.push(at.duration_since(t0).as_secs_f64() * 1e3);
                break;
            }
            assert!(Instant::now() < deadline, "no frame within 5 s of a change");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stats("frame latency (change → viewer)", "ms", frame_ms);

    // Input latency: a click on the viewer's socket → the page's mousedown.
    let (w, h) = *v.width.lock().unwrap();
    let (fx, fy) = (160.0 / w, 110.0 / h);
    let mut input_ms = Vec::new();
    eval(
        &sup,
        "document.getElementById('b').addEventListener('mousedown', () => { window.downAt = performance.timeOrigin + performance.now(); }); 1",
        false,
    )
    .await;
    let epoch_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            * 1e3
    };
    for _ in 0..TRIALS {
        eval(&sup, "window.downAt = 0", false).await;
        // The page's clock and ours are the same machine's wall clock.
        let sent = epoch_ms();
        for event in ["down", "up"] {
            let m = json!({"type": "mouse", "event": event, "x": fx, "y": fy, "button": "left", "click_count": 1});
            v.send.send(m.to_string()).await.unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let at = eval(&sup, "window.downAt", false).await;
            let at = at["result"]["value"].as_f64().unwrap_or(0.0);
            if at > 0.0 {
                input_ms.push(at - sent);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no mousedown within 5 s of a click"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stats("input latency (click → mousedown)", "ms", input_ms);
    v.task.abort();
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Load: an animated page, 0/1/5/20 viewers.
    eval(&sup, "document.body.classList.add('spin')", false).await;
    println!("animated page (a rotating square: frames all the time):");
    for n in [0usize, 1, 5, 20] {
        let viewers = futures_util::future::join_all((0..n).map(|_| viewer(&ws))).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (cpu0, t0) = (proc_cpu_s(pid), Instant::now());
        let bytes0: Vec<u64> = viewers
            .iter()
            .map(|v| v.bytes.load(Ordering::Relaxed))
            .collect();
        tokio::time::sleep(WINDOW).await;
        let secs = t0.elapsed().as_secs_f64();
        let cpu = (proc_cpu_s(pid) - cpu0) / secs * 100.0;
        let per_viewer: Vec<f64> = viewers
            .iter()
            .zip(&bytes0)
            .map(|(v, b)| (v.bytes.load(Ordering::Relaxed) - b) as f64 / secs / 1024.0)
            .collect();
        let avg = if n == 0 {
            0.0
        } else {
            per_viewer.iter().sum::<f64>() / n as f64
        };
        println!(
            "  {n:>2} viewer(s): server CPU {cpu:5.1} %, RSS {:5.1} MiB, {avg:7.1} KiB/s per viewer",
            proc_rss_mib(pid)
        );
        for v in viewers {
            v.task.abort();
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    sup.stop().await;
    // SAFETY: a plain syscall on our own child's pid.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let _ = server.wait();
    chromium.shutdown().await;
}
