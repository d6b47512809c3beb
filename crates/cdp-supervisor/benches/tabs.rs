//! What a supervised tab costs in the pure core: the live heap a [`Tabs`]
//! holds per tab (a counting allocator: bytes allocated and not freed), and
//! the time to build the published snapshot with 1 and 20 tabs. Prints
//! figures; run with `cargo bench -p cdp-supervisor --bench tabs`.

use cdp_supervisor::cdp::protocol::{Event, SessionId, TargetId};
use cdp_supervisor::supervisor::state::{Now, Options, Output, Purpose, Tabs, Target};
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static A: counting_alloc::Counting = counting_alloc::Counting;

/// Feeds every command its reply `{}` (a frame tree for getFrameTree), as
/// an idle page would, so the tab settles.
fn settle(tabs: &mut Tabs, now: Now) {
    while let Some(o) = tabs.poll_output() {
        if let Output::Send(c) = o {
            let reply = match (&c.purpose, &c.target) {
                (Purpose::FrameTree, Target::Session(s)) => {
                    let id = s.0.replace('S', "T");
                    json!({"frameTree": {"frame": {"id": id, "url": format!("https://a.test/{id}"), "securityOrigin": "https://a.test"}}})
                }
                _ => json!({}),
            };
            tabs.on_reply(&c.target, c.tab, c.purpose, Ok(reply), now);
        }
    }
}

fn popup(tabs: &mut Tabs, i: usize, now: Now) {
    let p = json!({"sessionId": format!("S{i}"), "waitingForDebugger": true,
        "targetInfo": {"targetId": format!("T{i}"), "type": "page", "title": "", "url": "",
                       "attached": true, "openerId": "T0"}});
    tabs.on_event(
        None,
        Event::parse("Target.attachedToTarget", &p.to_string()),
        now,
    );
    let nav = json!({"frame": {"id": format!("T{i}"), "loaderId": format!("L{i}"),
        "url": format!("https://a.test/popup/{i}"), "securityOrigin": "https://a.test", "mimeType": "text/html"}});
    let s = SessionId::from(format!("S{i}").as_str());
    tabs.on_event(
        Some(&s),
        Event::parse("Page.frameNavigated", &nav.to_string()),
        now,
    );
    settle(tabs, now);
}

fn snapshot_time(tabs: &mut Tabs) -> f64 {
    const N: u32 = 2_000;
    let t = Instant::now();
    for _ in 0..N {
        black_box(tabs.snapshot());
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(N)
}

fn main() {
    let now = Now::system();
    let mut tabs = Tabs::new(Options::default());
    tabs.attach_page(
        TargetId::from("T0"),
        SessionId::from("S0"),
        "https://a.test/",
        "",
        now,
    );
    settle(&mut tabs, now);
    let one = snapshot_time(&mut tabs);
    const ADDED: usize = 19;
    let before = counting_alloc::live();
    for i in 1..=ADDED {
        popup(&mut tabs, i, now);
    }
    let after = counting_alloc::live();
    assert_eq!(tabs.snapshot().tabs.len(), ADDED + 1);
    let twenty = snapshot_time(&mut tabs);
    println!(
        "tabs: live heap per supervised tab {:.1} KiB ({} tabs added, {} bytes)",
        (after - before) as f64 / ADDED as f64 / 1024.0,
        ADDED,
        after - before
    );
    println!(
        "tabs: snapshot build {one:.1} µs with 1 tab, {twenty:.1} µs with {} tabs",
        ADDED + 1
    );
}
