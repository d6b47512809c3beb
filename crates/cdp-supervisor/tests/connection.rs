//! The CDP connection against the scripted mock endpoint.

use cdp_mock::{Disconnect, MockCdp, Reply};
use cdp_supervisor::cdp::{
    CommandError, Connection, EventStream, Incoming, SessionId, resolve_ws_url,
};
use serde_json::json;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(5);
const LONG: Duration = Duration::from_secs(30);

async fn open(mock: &MockCdp) -> (Connection, EventStream) {
    Connection::connect(&mock.ws_url())
        .await
        .expect("connect to the mock")
}

async fn next(events: &mut EventStream) -> Option<Incoming> {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("an event within 5 s")
}

async fn next_event(events: &mut EventStream) -> (Option<SessionId>, String, serde_json::Value) {
    match next(events).await {
        Some(Incoming::Event(e)) => (
            e.session_id().map(|s| SessionId(s.to_owned())),
            e.method().to_owned(),
            serde_json::from_str(e.params()).unwrap(),
        ),
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Asserts the stream yields `Closed` (skipping earlier events) and then ends.
async fn expect_closed_then_end(events: &mut EventStream) -> String {
    loop {
        match next(events).await {
            Some(Incoming::Closed { reason }) => {
                assert!(
                    next(events).await.is_none(),
                    "the stream must end after Closed"
                );
                return reason;
            }
            Some(Incoming::Event { .. } | Incoming::Reply { .. }) => continue,
            None => panic!("the stream ended without Closed"),
        }
    }
}

#[tokio::test]
async fn concurrent_commands_get_their_own_replies() {
    let mock = MockCdp::start().await;
    mock.handle(|cmd| {
        let n = cmd.params["n"].as_u64()?;
        // Answer in reverse order of arrival: later commands reply sooner.
        Some(Reply::result(json!({"n": n})).after(Duration::from_millis(100 - n * 4)))
    });
    let (conn, _events) = open(&mock).await;
    let replies: Vec<_> = (0..20)
        .map(|n| conn.send(None, "Echo", json!({"n": n}), WAIT))
        .collect();
    let results = futures_util::future::join_all(replies).await;
    for (n, result) in results.into_iter().enumerate() {
        assert_eq!(result.unwrap(), json!({"n": n}));
    }
    let ids: Vec<u64> = mock.commands().iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        (1..=20).collect::<Vec<u64>>(),
        "ids count from 1, wire order == call order"
    );
}

#[tokio::test]
async fn command_on_a_session_carries_its_session_id() {
    let mock = MockCdp::start().await;
    let (conn, _events) = open(&mock).await;
    let s1 = SessionId::from("S1");
    conn.send(Some(&s1), "Page.enable", json!({}), WAIT)
        .await
        .unwrap();
    conn.send(
        None,
        "Target.setDiscoverTargets",
        serde_json::Value::Null,
        WAIT,
    )
    .await
    .unwrap();
    let commands = mock.commands();
    assert_eq!(commands[0].session_id.as_deref(), Some("S1"));
    assert_eq!(commands[1].session_id, None);
    assert_eq!(commands[1].params, json!({}));
}

#[tokio::test]
async fn protocol_error_reply_is_a_protocol_error() {
    let mock = MockCdp::start().await;
    mock.on_session(
        "S1",
        "Page.handleJavaScriptDialog",
        Reply::error(-32602, "No dialog is showing"),
    );
    mock.on(
        "Bad",
        Reply::error_with_data(-32000, "bad", json!("detail")),
    );
    let (conn, _events) = open(&mock).await;
    let err = conn
        .send(
            Some(&"S1".into()),
            "Page.handleJavaScriptDialog",
            json!({"accept": true}),
            WAIT,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CommandError::Protocol {
            method: "Page.handleJavaScriptDialog".into(),
            code: -32602,
            message: "No dialog is showing".into(),
            data: None
        }
    );
    let err = conn.send(None, "Bad", json!({}), WAIT).await.unwrap_err();
    assert!(
        matches!(err, CommandError::Protocol { code: -32000, data: Some(ref d), .. } if d == "detail"),
        "{err:?}"
    );
}

#[tokio::test]
async fn unanswered_command_times_out_and_is_forgotten() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::never());
    let (conn, _events) = open(&mock).await;
    let start = Instant::now();
    let err = conn
        .send(
            None,
            "Runtime.evaluate",
            json!({}),
            Duration::from_millis(150),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err,
        CommandError::Timeout {
            method: "Runtime.evaluate".into(),
            after: Duration::from_millis(150)
        }
    );
    assert!(
        start.elapsed() >= Duration::from_millis(150) && start.elapsed() < Duration::from_secs(2)
    );
    assert_eq!(
        conn.in_flight(),
        0,
        "a timed-out command leaves no pending entry"
    );
    // A dropped (cancelled) reply future leaves none either.
    drop(conn.send(None, "Runtime.evaluate", json!({}), LONG));
    assert_eq!(conn.in_flight(), 0);
    assert!(conn.is_open());
}

#[tokio::test]
async fn late_reply_after_timeout_is_ignored() {
    let mock = MockCdp::start().await;
    mock.on(
        "Slow",
        Reply::result(json!({})).after(Duration::from_millis(200)),
    );
    let (conn, _events) = open(&mock).await;
    let err = conn
        .send(None, "Slow", json!({}), Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(err, CommandError::Timeout { .. }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        conn.send(None, "Page.enable", json!({}), WAIT)
            .await
            .unwrap(),
        json!({})
    );
}

#[tokio::test]
async fn never_answered_command_does_not_delay_events() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::never());
    let (conn, mut events) = open(&mock).await;
    let blocked = conn.send(
        Some(&"S1".into()),
        "Runtime.evaluate",
        json!({"expression": "alert(1)"}),
        LONG,
    );
    mock.wait_for_command("Runtime.evaluate", WAIT)
        .await
        .unwrap();
    let start = Instant::now();
    mock.emit(
        Some("S1"),
        "Page.javascriptDialogOpening",
        json!({"message": "1", "type": "alert"}),
    )
    .await;
    let (session, method, params) = next_event(&mut events).await;
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(
        (session, method.as_str()),
        (Some("S1".into()), "Page.javascriptDialogOpening")
    );
    assert_eq!(params["type"], "alert");
    // Other commands still get their replies while that one waits.
    assert_eq!(
        conn.send(None, "Page.enable", json!({}), WAIT)
            .await
            .unwrap(),
        json!({})
    );
    drop(blocked);
}

#[tokio::test]
async fn reply_for_unknown_id_is_ignored() {
    let mock = MockCdp::start().await;
    let (conn, mut events) = open(&mock).await;
    assert!(mock.wait_for_connections(1, WAIT).await);
    mock.send_raw_text(r#"{"id":9999,"result":{"stray":true}}"#)
        .await;
    mock.emit(None, "Target.targetCreated", json!({})).await;
    let (_, method, _) = next_event(&mut events).await;
    assert_eq!(
        method, "Target.targetCreated",
        "the stray reply is not an event"
    );
    assert_eq!(
        conn.send(None, "Page.enable", json!({}), WAIT)
            .await
            .unwrap(),
        json!({})
    );
    assert!(conn.is_open());
}

#[tokio::test]
async fn malformed_json_and_binary_frames_are_skipped() {
    let mock = MockCdp::start().await;
    let (conn, mut events) = open(&mock).await;
    assert!(mock.wait_for_connections(1, WAIT).await);
    mock.send_raw_text("{not json").await;
    mock.send_raw_text(r#"{"neither":"id nor method"}"#).await;
    mock.send_binary(vec![0, 159, 146, 150]).await;
    mock.emit(Some("S1"), "Page.loadEventFired", json!({"timestamp": 1.0}))
        .await;
    let (session, method, _) = next_event(&mut events).await;
    assert_eq!(
        (session, method.as_str()),
        (Some("S1".into()), "Page.loadEventFired")
    );
    assert_eq!(
        conn.send(None, "Page.enable", json!({}), WAIT)
            .await
            .unwrap(),
        json!({})
    );
    assert!(conn.is_open());
}

#[tokio::test]
async fn fifty_mib_message_is_received() {
    let mock = MockCdp::start().await;
    let data = "x".repeat(50 << 20);
    let big = data.clone();
    mock.handle(move |cmd| {
        (cmd.method == "Page.captureScreenshot").then(|| Reply::result(json!({"data": big})))
    });
    let (conn, mut events) = open(&mock).await;
    let reply = conn
        .send(None, "Page.captureScreenshot", json!({}), LONG)
        .await
        .unwrap();
    assert_eq!(reply["data"].as_str().map(str::len), Some(data.len()));
    mock.send_raw_text(format!(
        r#"{{"method":"Big.event","params":{{"data":"{data}"}}}}"#
    ))
    .await;
    match tokio::time::timeout(LONG, events.recv()).await.unwrap() {
        Some(Incoming::Event(e)) => {
            assert_eq!(e.method(), "Big.event");
            assert!(e.params().len() > 50 << 20);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn close_frame_fails_in_flight_commands_at_once_and_ends_the_stream() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::never());
    let (conn, mut events) = open(&mock).await;
    let in_flight = conn.send(None, "Runtime.evaluate", json!({}), LONG);
    mock.wait_for_command("Runtime.evaluate", WAIT)
        .await
        .unwrap();
    let start = Instant::now();
    mock.drop_connections(Disconnect::CloseFrame).await;
    let err = tokio::time::timeout(WAIT, in_flight)
        .await
        .expect("fails at once")
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(2));
    match &err {
        CommandError::Disconnected { method, reason } => {
            assert_eq!(method, "Runtime.evaluate");
            assert!(reason.contains("dropped"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let reason = expect_closed_then_end(&mut events).await;
    assert!(reason.contains("dropped"), "{reason}");
    assert!(!conn.is_open());
    let later = conn
        .send(None, "Page.enable", json!({}), LONG)
        .await
        .unwrap_err();
    assert!(
        matches!(later, CommandError::Disconnected { .. }),
        "{later:?}"
    );
}

#[tokio::test]
async fn tcp_reset_fails_in_flight_commands_at_once_and_ends_the_stream() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::never());
    let (conn, mut events) = open(&mock).await;
    let first = conn.send(None, "Runtime.evaluate", json!({}), LONG);
    let second = conn.send(Some(&"S1".into()), "Runtime.evaluate", json!({}), LONG);
    mock.wait_for_commands("Runtime.evaluate", 2, WAIT).await;
    let start = Instant::now();
    mock.drop_connections(Disconnect::Reset).await;
    let (first, second) = tokio::time::timeout(WAIT, async { tokio::join!(first, second) })
        .await
        .expect("fail at once");
    assert!(start.elapsed() < Duration::from_secs(2));
    for err in [first.unwrap_err(), second.unwrap_err()] {
        assert!(
            matches!(err, CommandError::Disconnected { ref reason, .. } if reason.contains("dropped")),
            "{err:?}"
        );
    }
    expect_closed_then_end(&mut events).await;
    assert!(!conn.is_open());
    assert!(matches!(
        conn.send(None, "X", json!({}), LONG).await,
        Err(CommandError::Disconnected { .. })
    ));
}

#[tokio::test]
async fn close_fails_in_flight_commands_and_ends_the_stream() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::never());
    let (conn, mut events) = open(&mock).await;
    let in_flight = conn.send(None, "Runtime.evaluate", json!({}), LONG);
    conn.close();
    assert!(!conn.is_open());
    let err = tokio::time::timeout(WAIT, in_flight)
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, CommandError::Disconnected { .. }), "{err:?}");
    expect_closed_then_end(&mut events).await;
    conn.close(); // idempotent
}

#[tokio::test]
async fn dropping_every_handle_closes_the_socket() {
    let mock = MockCdp::start().await;
    let (conn, mut events) = open(&mock).await;
    let clone = conn.clone();
    assert!(mock.wait_for_connections(1, WAIT).await);
    drop(conn);
    assert!(clone.is_open(), "one clone still holds it open");
    drop(clone);
    expect_closed_then_end(&mut events).await;
    wait_socket_closed(&mock, "every handle dropped").await;
}

/// Waits (up to `WAIT`) until the mock sees no socket open.
async fn wait_socket_closed(mock: &MockCdp, after: &str) {
    let deadline = Instant::now() + WAIT;
    while mock.open_connection_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "the mock still sees the socket open ({after})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Regression: with the writer idle (its last frame written), closing
/// queued the close frame without waking it, so the socket stayed open —
/// and Chromium held every new OOPIF of the page paused for that dead
/// client (`waitForDebuggerOnStart`).
#[tokio::test]
async fn closing_an_idle_connection_closes_the_socket() {
    for close in [true, false] {
        let mock = MockCdp::start().await;
        mock.on("Browser.getVersion", Reply::result(json!({})));
        let (conn, _events) = open(&mock).await;
        conn.send(None, "Browser.getVersion", json!({}), WAIT)
            .await
            .expect("a reply");
        // The writer has written its frame and gone idle.
        tokio::time::sleep(Duration::from_millis(50)).await;
        if close {
            conn.close();
            wait_socket_closed(&mock, "close()").await;
        } else {
            drop(conn);
            wait_socket_closed(&mock, "the last handle dropped").await;
        }
    }
}

#[tokio::test]
async fn events_keep_their_session_id_and_arrival_order() {
    let mock = MockCdp::start().await;
    let (_conn, mut events) = open(&mock).await;
    assert!(mock.wait_for_connections(1, WAIT).await);
    mock.emit(None, "Target.attachedToTarget", json!({"sessionId": "S2"}))
        .await;
    mock.emit(Some("S1"), "Page.frameNavigated", json!({"n": 1}))
        .await;
    mock.emit(Some("S2"), "Page.frameNavigated", json!({"n": 2}))
        .await;
    mock.emit(Some("S1"), "Page.javascriptDialogOpening", json!({"n": 3}))
        .await;
    let got = [
        next_event(&mut events).await,
        next_event(&mut events).await,
        next_event(&mut events).await,
        next_event(&mut events).await,
    ];
    let summary: Vec<(Option<&str>, &str)> = got
        .iter()
        .map(|(s, m, _)| (s.as_ref().map(SessionId::as_str), m.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (None, "Target.attachedToTarget"),
            (Some("S1"), "Page.frameNavigated"),
            (Some("S2"), "Page.frameNavigated"),
            (Some("S1"), "Page.javascriptDialogOpening"),
        ]
    );
}

#[tokio::test]
async fn connect_through_http_endpoint_resolution() {
    let mock = MockCdp::start().await;
    let ws = resolve_ws_url(&mock.http_url()).await.unwrap();
    assert_eq!(ws, mock.ws_url());
    let (conn, _events) = Connection::connect(&ws).await.unwrap();
    let targets = conn
        .send(None, "Target.getTargets", json!({}), WAIT)
        .await
        .unwrap();
    assert_eq!(targets["targetInfos"][0]["targetId"], "T1");
}

#[tokio::test]
async fn connect_to_a_refused_endpoint_is_an_error() {
    let mock = MockCdp::start().await;
    mock.refuse_connections(true);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let err = Connection::connect(&mock.ws_url()).await.unwrap_err();
    assert!(err.to_string().contains("cannot connect"), "{err}");
}

#[tokio::test]
async fn in_order_replies_come_on_the_stream_between_the_events_around_them() {
    let mock = MockCdp::start().await;
    mock.on(
        "Page.getFrameTree",
        Reply::result(json!({"frameTree": {}})).emit_first(
            Some("S1"),
            "Page.frameAttached",
            json!({"n": 1}),
        ),
    );
    let (conn, mut events) = Connection::connect(&mock.ws_url()).await.unwrap();
    let id = conn.send_in_order(
        Some(&SessionId::from("S1")),
        "Page.getFrameTree",
        json!({}),
        Duration::from_secs(5),
    );
    // Chromium's order: the event it sent first, then the reply; then a later event.
    match next(&mut events).await {
        Some(Incoming::Event(e)) => assert_eq!(e.method(), "Page.frameAttached"),
        other => panic!("expected the event first, got {other:?}"),
    }
    match next(&mut events).await {
        Some(Incoming::Reply { id: got, result }) => {
            assert_eq!(got, id);
            assert_eq!(result.unwrap(), json!({"frameTree": {}}));
        }
        other => panic!("expected the reply second, got {other:?}"),
    }
    mock.emit(Some("S1"), "Page.frameNavigated", json!({}))
        .await;
    match next(&mut events).await {
        Some(Incoming::Event(e)) => assert_eq!(e.method(), "Page.frameNavigated"),
        other => panic!("expected the later event, got {other:?}"),
    }
}

#[tokio::test]
async fn in_order_commands_time_out_and_fail_on_disconnect_before_closed() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::never());
    let (conn, mut events) = Connection::connect(&mock.ws_url()).await.unwrap();
    let late = conn.send_in_order(
        None,
        "Runtime.evaluate",
        json!({}),
        Duration::from_millis(100),
    );
    match next(&mut events).await {
        Some(Incoming::Reply {
            id,
            result: Err(CommandError::Timeout { .. }),
        }) => assert_eq!(id, late),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(conn.in_flight(), 0, "a timed-out command is forgotten");
    let dropped = conn.send_in_order(None, "Runtime.evaluate", json!({}), Duration::from_secs(30));
    mock.drop_connections(Disconnect::Reset).await;
    match next(&mut events).await {
        Some(Incoming::Reply {
            id,
            result: Err(CommandError::Disconnected { .. }),
        }) => assert_eq!(id, dropped),
        other => panic!("expected Disconnected before Closed, got {other:?}"),
    }
    expect_closed_then_end(&mut events).await;
}

/// Review: every in-order command spawned a deadline task that slept its
/// whole timeout (10 s by default) even after the reply came; a busy
/// supervisor held thousands of them.
#[tokio::test]
async fn regression_in_order_reply_ends_its_deadline_task() {
    let mock = MockCdp::start().await;
    let (conn, mut events) = Connection::connect(&mock.ws_url()).await.unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    for _ in 0..20 {
        let id = conn.send_in_order(
            None,
            "Browser.getVersion",
            json!({}),
            Duration::from_secs(30),
        );
        match next(&mut events).await {
            Some(Incoming::Reply { id: got, .. }) => assert_eq!(got, id),
            other => panic!("expected the reply, got {other:?}"),
        }
    }
    // An aborted task is gone once the runtime has run its cancellation.
    let mut alive = metrics.num_alive_tasks();
    for _ in 0..100 {
        if alive <= before {
            break;
        }
        tokio::task::yield_now().await;
        alive = metrics.num_alive_tasks();
    }
    assert!(
        alive <= before,
        "{} deadline tasks outlive their replies",
        alive - before
    );
}

/// A WebSocket server written by hand for one test: answers the first
/// command with `reply(id)` and, in the same write, `after` more frames.
async fn one_write_server(after: Vec<String>) -> (String, tokio::task::JoinHandle<()>) {
    use futures_util::StreamExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::{Message, protocol::Role};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/devtools/browser/x", listener.local_addr().unwrap());
    let after = std::sync::Arc::new(after);
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let after = after.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if socket.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let Some(key) = head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("sec-websocket-key")
                        .then(|| v.trim().to_owned())
                }) else {
                    return;
                };
                let accept =
                    tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
                let response = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                );
                if socket.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
                let mut ws =
                    tokio_tungstenite::WebSocketStream::from_raw_socket(socket, Role::Server, None)
                        .await;
                let id = loop {
                    match ws.next().await {
                        Some(Ok(Message::Text(t))) => {
                            let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                            break v["id"].as_u64().unwrap();
                        }
                        Some(Ok(_)) => continue,
                        _ => return,
                    }
                };
                let reply = format!(r#"{{"id":{id},"result":{{}}}}"#);
                let texts = std::iter::once(reply.as_str()).chain(after.iter().map(String::as_str));
                let _ = ws
                    .get_mut()
                    .write_all(&cdp_mock::encode_text_frames(texts))
                    .await;
                let _ = tokio::time::timeout(WAIT, ws.next()).await;
            });
        }
    });
    (url, server)
}

/// Regression (found by a review): the reader took an in-order reply out
/// of the commands in flight and held it in its burst while filtered events
/// followed; a `close()` then failed only what was still in flight, and the
/// burst was dropped with the stream: the command got no `Reply` before
/// `Closed`. Closing at moments spread around the reply's arrival, every
/// round gets exactly one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_order_reply_comes_once_however_close_races_it() {
    let noise = cdp_mock::event_text(
        Some("S1"),
        "Network.dataReceived",
        &json!({"requestId": "R1", "dataLength": 1}),
    );
    let (url, server) = one_write_server(vec![noise; 5_000]).await;
    let mut lost = Vec::new();
    for round in 0..100u64 {
        let (conn, mut events) = Connection::connect(&url).await.expect("connect");
        conn.set_event_filter(|m| m != "Network.dataReceived");
        let id = conn.send_in_order(None, "X.y", json!({}), WAIT);
        let close_at = Instant::now() + Duration::from_micros((round % 50) * 40);
        while Instant::now() < close_at {
            std::hint::spin_loop();
        }
        conn.close();
        let mut replies = 0;
        loop {
            match next(&mut events).await {
                Some(Incoming::Reply { id: got, .. }) if got == id => replies += 1,
                Some(Incoming::Closed { .. }) | None => break,
                Some(other) => panic!("{other:?}"),
            }
        }
        if replies != 1 {
            lost.push((round, replies));
        }
    }
    server.abort();
    assert!(
        lost.is_empty(),
        "(round, replies) without exactly one reply: {lost:?}"
    );
}

/// Issue 28, defect 5: the event stream was an unbounded channel with no
/// back-pressure: a consumer that fell behind let a flood grow in memory
/// without limit. The reader now stops reading the socket while
/// `MAX_QUEUED_BURSTS` bursts wait, and nothing is lost: every event comes,
/// in order, once the consumer reads on.
#[tokio::test]
async fn regression_28_5_a_consumer_that_falls_behind_slows_the_reader_and_loses_nothing() {
    use cdp_supervisor::cdp::connection::{Incoming, MAX_QUEUED_BURSTS};
    let mock = cdp_mock::MockCdp::start().await;
    let (_conn, mut events) = Connection::connect(&mock.ws_url()).await.expect("connect");
    assert!(mock.wait_for_connections(1, WAIT).await);
    let n = 100_000usize;
    let texts: Vec<String> = (0..n)
        .map(|i| cdp_mock::event_text(Some("S1"), "Runtime.consoleAPICalled", &json!({"i": i})))
        .collect();
    let bytes = std::sync::Arc::new(cdp_mock::encode_text_frames(
        texts.iter().map(String::as_str),
    ));
    let flood = tokio::spawn({
        let mock_bytes = bytes.clone();
        async move { mock.flood(mock_bytes).await }
    });
    // Nobody reads: the backlog stops at its bound (a burst or two past it
    // while the reader notices), however long we wait.
    let mut last = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        last = events.backlog();
    }
    assert!(last > 0, "the reader queued nothing");
    assert!(
        last <= MAX_QUEUED_BURSTS + 1,
        "{last} bursts queued, more than the bound {MAX_QUEUED_BURSTS}"
    );
    assert!(!flood.is_finished(), "the whole flood was taken in");
    let mut seen = 0usize;
    while seen < n {
        match tokio::time::timeout(WAIT, events.recv()).await {
            Ok(Some(Incoming::Event(e))) => {
                let v: serde_json::Value = serde_json::from_str(e.params()).unwrap();
                assert_eq!(v["i"], seen, "in order, nothing lost");
                seen += 1;
            }
            other => panic!("after {seen} events: {other:?}"),
        }
    }
    tokio::time::timeout(WAIT, flood)
        .await
        .expect("the flood ends")
        .unwrap();
}
