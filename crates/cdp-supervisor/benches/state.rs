//! Throughput of the pure state machine: events applied per second for a
//! console-error flood and for frame churn, and snapshots built and
//! serialized per second, and what one publish of the snapshot costs on a
//! busy page (`publish/…`). Run with
//! `cargo bench -p cdp-supervisor --bench state`.

use cdp_supervisor::cdp::protocol::{Event, SessionId, TargetId};
use cdp_supervisor::supervisor::snapshot::Snapshot;
use cdp_supervisor::supervisor::state::{Now, Options, Output, Purpose, State, Tabs, Target};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

fn attached() -> (State, Now, SessionId) {
    let now = Now::system();
    let mut st = State::new(Options::default());
    let s1 = SessionId::from("S1");
    st.attach_page(TargetId::from("T1"), s1.clone(), "https://a.test/", "", now);
    let tree = json!({"frameTree": {"frame": {"id": "T1", "url": "https://a.test/", "securityOrigin": "https://a.test"}}});
    st.on_reply(
        &Target::Session(s1.clone()),
        Purpose::FrameTree,
        Ok(tree),
        now,
    );
    st.on_reply(
        &Target::Session(s1.clone()),
        Purpose::PageEnable,
        Ok(json!({})),
        now,
    );
    while st.poll_output().is_some() {}
    (st, now, s1)
}

fn console_flood(c: &mut Criterion) {
    const N: usize = 1_000;
    // Parsed up front: this measures the rules, not serde on the wire.
    let events: Vec<Event> = (0..N)
        .map(|i| {
            let p = json!({"type": "error", "args": [{"type": "string", "value": format!("boom {i}")}],
                "executionContextId": 1, "timestamp": 1.7e12 + i as f64,
                "stackTrace": {"callFrames": [{"url": "https://a.test/app.js", "lineNumber": 1, "columnNumber": 1}]}});
            Event::parse("Runtime.consoleAPICalled", &p.to_string())
        })
        .collect();
    let mut g = c.benchmark_group("state");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("console_error_flood", |b| {
        let (mut st, now, s1) = attached();
        b.iter(|| {
            for e in &events {
                st.on_event(Some(&s1), e.clone(), now);
                while let Some(o) = st.poll_output() {
                    black_box(o);
                }
            }
        })
    });
    g.finish();
}

fn frame_churn(c: &mut Criterion) {
    // One loop: 20 same-process frames attached, navigated and detached, and
    // 5 OOPIF targets attached (tree reply) and detached: 85 events + 5 replies.
    const FRAMES: usize = 20;
    const OOPIFS: usize = 5;
    let mut events: Vec<(Option<&'static str>, Event)> = Vec::new();
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    for i in 0..FRAMES {
        let f = format!("F{i}");
        events.push((
            Some("S1"),
            Event::parse(
                "Page.frameAttached",
                &json!({"frameId": f, "parentFrameId": "T1"}).to_string(),
            ),
        ));
        events.push((Some("S1"), Event::parse("Page.frameNavigated", &json!({"frame": {"id": f, "parentId": "T1", "url": format!("https://a.test/ad{i}"), "securityOrigin": "https://a.test"}}).to_string())));
    }
    let mut oopif_steps = Vec::new();
    for i in 0..OOPIFS {
        let f = format!("O{i}");
        let s = leak(format!("SO{i}"));
        let attach = Event::parse("Target.attachedToTarget", &json!({"sessionId": s, "targetInfo": {"targetId": f, "type": "iframe", "url": "https://b.test/"}, "waitingForDebugger": true}).to_string());
        let tree =
            json!({"frameTree": {"frame": {"id": f, "parentId": "T1", "url": "https://b.test/"}}});
        let detach = Event::parse(
            "Target.detachedFromTarget",
            &json!({"sessionId": s, "targetId": f}).to_string(),
        );
        oopif_steps.push((s, attach, tree, detach));
    }
    let detaches: Vec<Event> = (0..FRAMES)
        .map(|i| {
            Event::parse(
                "Page.frameDetached",
                &json!({"frameId": format!("F{i}"), "reason": "remove"}).to_string(),
            )
        })
        .collect();
    let per_loop = (events.len() + detaches.len() + 3 * oopif_steps.len()) as u64;
    let mut g = c.benchmark_group("state");
    g.throughput(Throughput::Elements(per_loop));
    g.bench_function("frame_churn", |b| {
        let (mut st, now, _) = attached();
        b.iter(|| {
            for (s, e) in &events {
                let s = s.map(SessionId::from);
                st.on_event(s.as_ref(), e.clone(), now);
            }
            for (s, attach, tree, _) in &oopif_steps {
                st.on_event(Some(&SessionId::from("S1")), attach.clone(), now);
                st.on_reply(
                    &Target::Session(SessionId::from(*s)),
                    Purpose::FrameTree,
                    Ok(tree.clone()),
                    now,
                );
            }
            for (_, _, _, detach) in &oopif_steps {
                st.on_event(Some(&SessionId::from("S1")), detach.clone(), now);
            }
            for e in &detaches {
                st.on_event(Some(&SessionId::from("S1")), e.clone(), now);
            }
            while let Some(o) = st.poll_output() {
                black_box(o);
            }
        })
    });
    g.finish();
}

/// Frame `F<i>` attached below `T1`, then committing `https://a.test/f<i>`.
fn frame_events(i: usize) -> [Event; 2] {
    let f = format!("F{i}");
    [
        Event::parse(
            "Page.frameAttached",
            &json!({"frameId": f, "parentFrameId": "T1"}).to_string(),
        ),
        Event::parse("Page.frameNavigated", &json!({"frame": {"id": f, "parentId": "T1", "url": format!("https://a.test/f{i}"), "securityOrigin": "https://a.test"}}).to_string()),
    ]
}

/// Dialog number `i` opening in `T1`, then closing accepted.
fn dialog_events(i: usize) -> [Event; 2] {
    let o = json!({"url": "https://a.test/", "frameId": "T1", "message": format!("dialog number {i} with a message"), "type": "confirm"});
    let c = json!({"frameId": "T1", "result": true, "userInput": ""});
    [
        Event::parse("Page.javascriptDialogOpening", &o.to_string()),
        Event::parse("Page.javascriptDialogClosed", &c.to_string()),
    ]
}

fn snapshot_serialize(c: &mut Criterion) {
    let (mut st, mut now, s1) = attached();
    for i in 0..30 {
        for e in frame_events(i) {
            st.on_event(Some(&s1), e, now);
        }
    }
    for i in 0..20 {
        let [open, close] = dialog_events(i);
        st.on_event(Some(&s1), open, now);
        now = now.after(Duration::from_millis(10));
        st.on_event(Some(&s1), close, now);
    }
    while st.poll_output().is_some() {}
    let snap = st.snapshot();
    assert_eq!(snap.frame_tree.children.len(), 30);
    assert_eq!(snap.recent_dialogs.len(), 20);
    let bytes = serde_json::to_vec(&snap).unwrap().len();
    eprintln!("snapshot with 30 frames and 20 recent dialogs: {bytes} bytes of JSON");
    let mut g = c.benchmark_group("state");
    g.throughput(Throughput::Elements(1));
    g.bench_function("snapshot_30_frames_20_recent_to_json", |b| {
        b.iter(|| {
            let s = st.snapshot();
            black_box(serde_json::to_vec(&s).unwrap())
        })
    });
    g.finish();
}

/// Answers every command the core sent, as an idle page would: a frame
/// tree for `Page.getFrameTree` (an OOPIF's session `SO<i>` reports frame
/// `O<i>` below `T1`), `{}` otherwise.
fn settle(tabs: &mut Tabs, now: Now) {
    while let Some(o) = tabs.poll_output() {
        if let Output::Send(c) = o {
            let reply = match (&c.purpose, &c.target) {
                (Purpose::FrameTree, Target::Session(s)) if s.0.starts_with("SO") => {
                    let id = s.0.trim_start_matches('S');
                    json!({"frameTree": {"frame": {"id": id, "parentId": "T1", "url": "https://b.test/", "securityOrigin": "https://b.test"}}})
                }
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

/// A busy page, as the driver holds it: the current tab holds `frames`
/// same-process frames below its top and two OOPIFs with their own
/// sessions, 50 console errors and 20 recent dialogs; two popups are
/// supervised beside it.
fn busy(frames: usize) -> (Tabs, Now, SessionId) {
    let mut now = Now::system();
    let mut st = Tabs::new(Options::default());
    let s1 = SessionId::from("S1");
    st.attach_page(TargetId::from("T1"), s1.clone(), "https://a.test/", "", now);
    settle(&mut st, now);
    for i in 0..frames {
        for e in frame_events(i) {
            st.on_event(Some(&s1), e, now);
        }
    }
    for i in 0..2 {
        let attach = Event::parse("Target.attachedToTarget", &json!({"sessionId": format!("SO{i}"), "targetInfo": {"targetId": format!("O{i}"), "type": "iframe", "url": "https://b.test/"}, "waitingForDebugger": true}).to_string());
        st.on_event(Some(&s1), attach, now);
        settle(&mut st, now);
    }
    for i in 2..4 {
        let p = json!({"sessionId": format!("S{i}"), "waitingForDebugger": true,
            "targetInfo": {"targetId": format!("T{i}"), "type": "page", "title": "", "url": "",
                           "attached": true, "openerId": "T1"}});
        st.on_event(
            None,
            Event::parse("Target.attachedToTarget", &p.to_string()),
            now,
        );
        settle(&mut st, now);
    }
    for i in 0..20 {
        let [open, close] = dialog_events(i);
        st.on_event(Some(&s1), open, now);
        now = now.after(Duration::from_millis(10));
        st.on_event(Some(&s1), close, now);
    }
    for i in 0..60 {
        st.on_event(Some(&s1), console_error(i), now);
    }
    settle(&mut st, now);
    (st, now, s1)
}

fn console_error(i: usize) -> Event {
    let p = json!({"type": "error", "args": [{"type": "string", "value": format!("boom {i}")}],
        "executionContextId": 1, "timestamp": 1.7e12 + i as f64,
        "stackTrace": {"callFrames": [{"url": "https://a.test/app.js", "lineNumber": 1, "columnNumber": 1}]}});
    Event::parse("Runtime.consoleAPICalled", &p.to_string())
}

/// What the driver does once per burst: build the snapshot and publish it
/// if it differs from the last one published.
fn publish(st: &mut Tabs, published: &tokio::sync::watch::Sender<Arc<Snapshot>>) -> bool {
    let snap = st.snapshot();
    published.send_if_modified(|old| {
        if **old == snap {
            false
        } else {
            *old = Arc::new(snap);
            true
        }
    })
}

/// The cost of one publish on a busy page (30 or 300 frames held), after
/// an event that changed the console, one that changed the frame tree, and
/// one that changed nothing the snapshot shows. The event's own cost is
/// measured alone beside it (`…/event_only`), to subtract.
fn snapshot_publish(c: &mut Criterion) {
    let mut g = c.benchmark_group("publish");
    g.throughput(Throughput::Elements(1));
    for frames in [30usize, 300] {
        let (mut st, now, s1) = busy(frames);
        let snap = st.snapshot();
        assert_eq!(snap.console_errors.len(), 50);
        assert_eq!(snap.recent_dialogs.len(), 20);
        assert_eq!(snap.frame_tree.children.len(), 30);
        assert_eq!(snap.tabs.len(), 3);
        let (tx, _rx) = tokio::sync::watch::channel(Arc::new(snap));
        let errors: Vec<Event> = (0..1_000).map(console_error).collect();
        let navs: Vec<Event> = (0..2)
            .map(|i| Event::parse("Page.frameNavigated", &json!({"frame": {"id": "F3", "parentId": "T1", "url": format!("https://a.test/nav{i}"), "securityOrigin": "https://a.test"}}).to_string()))
            .collect();
        let log = Event::parse(
            "Runtime.consoleAPICalled",
            &json!({"type": "log", "args": [{"type": "string", "value": "hi"}], "executionContextId": 1}).to_string(),
        );
        let mut i = 0usize;
        g.bench_function(format!("{frames}_frames/console_error"), |b| {
            b.iter(|| {
                i += 1;
                st.on_event(Some(&s1), errors[i % errors.len()].clone(), now);
                while st.poll_output().is_some() {}
                assert!(publish(&mut st, &tx));
            })
        });
        g.bench_function(format!("{frames}_frames/console_error/event_only"), |b| {
            b.iter(|| {
                i += 1;
                st.on_event(Some(&s1), errors[i % errors.len()].clone(), now);
                while st.poll_output().is_some() {}
            })
        });
        g.bench_function(format!("{frames}_frames/frame_navigated"), |b| {
            b.iter(|| {
                i += 1;
                st.on_event(Some(&s1), navs[i % 2].clone(), now);
                while st.poll_output().is_some() {}
                assert!(publish(&mut st, &tx));
            })
        });
        g.bench_function(format!("{frames}_frames/frame_navigated/event_only"), |b| {
            b.iter(|| {
                i += 1;
                st.on_event(Some(&s1), navs[i % 2].clone(), now);
                while st.poll_output().is_some() {}
            })
        });
        // A change of the tree's shape: a frame comes, then goes (each
        // followed by a publish).
        let shape: Vec<Event> = vec![
            Event::parse(
                "Page.frameAttached",
                &json!({"frameId": "FX", "parentFrameId": "F1"}).to_string(),
            ),
            Event::parse(
                "Page.frameDetached",
                &json!({"frameId": "FX", "reason": "remove"}).to_string(),
            ),
        ];
        g.bench_function(format!("{frames}_frames/frame_attached_or_detached"), |b| {
            b.iter(|| {
                i += 1;
                st.on_event(Some(&s1), shape[i % 2].clone(), now);
                while st.poll_output().is_some() {}
                black_box(publish(&mut st, &tx));
            })
        });
        g.bench_function(
            format!("{frames}_frames/frame_attached_or_detached/event_only"),
            |b| {
                b.iter(|| {
                    i += 1;
                    st.on_event(Some(&s1), shape[i % 2].clone(), now);
                    while st.poll_output().is_some() {}
                })
            },
        );
        // The `event_only` runs changed the page without publishing.
        publish(&mut st, &tx);
        g.bench_function(format!("{frames}_frames/nothing_shown_changed"), |b| {
            b.iter(|| {
                st.on_event(Some(&s1), log.clone(), now);
                while st.poll_output().is_some() {}
                assert!(!publish(&mut st, &tx));
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    console_flood,
    frame_churn,
    snapshot_serialize,
    snapshot_publish
);
criterion_main!(benches);
