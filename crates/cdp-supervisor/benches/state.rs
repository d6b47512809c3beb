//! Throughput of the pure state machine: events applied per second for a
//! console-error flood and for frame churn, and snapshots built and
//! serialized per second. Run with
//! `cargo bench -p cdp-supervisor --bench state`.

use cdp_supervisor::cdp::protocol::{Event, SessionId, TargetId};
use cdp_supervisor::supervisor::state::{Now, Options, Purpose, State, Target};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
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

fn snapshot_serialize(c: &mut Criterion) {
    let (mut st, mut now, s1) = attached();
    for i in 0..30 {
        let e = Event::parse(
            "Page.frameAttached",
            &json!({"frameId": format!("F{i}"), "parentFrameId": "T1"}).to_string(),
        );
        st.on_event(Some(&s1), e, now);
        let e = Event::parse("Page.frameNavigated", &json!({"frame": {"id": format!("F{i}"), "parentId": "T1", "url": format!("https://a.test/f{i}")}}).to_string());
        st.on_event(Some(&s1), e, now);
    }
    for i in 0..20 {
        let o = json!({"url": "https://a.test/", "frameId": "T1", "message": format!("dialog number {i} with a message"), "type": "confirm"});
        st.on_event(
            Some(&s1),
            Event::parse("Page.javascriptDialogOpening", &o.to_string()),
            now,
        );
        now = now.after(Duration::from_millis(10));
        let c = json!({"frameId": "T1", "result": true, "userInput": ""});
        st.on_event(
            Some(&s1),
            Event::parse("Page.javascriptDialogClosed", &c.to_string()),
            now,
        );
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

criterion_group!(benches, console_flood, frame_churn, snapshot_serialize);
criterion_main!(benches);
