//! The mock, driven by a bare tokio-tungstenite client.

use cdp_mock::{Disconnect, MockCdp, Reply};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

const WAIT: Duration = Duration::from_secs(5);

async fn connect(mock: &MockCdp) -> Client {
    tokio_tungstenite::connect_async(mock.ws_url())
        .await
        .expect("connect to the mock")
        .0
}

async fn send(client: &mut Client, id: u64, session: Option<&str>, method: &str, params: Value) {
    let mut command = json!({"id": id, "method": method, "params": params});
    if let Some(session) = session {
        command["sessionId"] = json!(session);
    }
    client
        .send(Message::text(command.to_string()))
        .await
        .unwrap();
}

/// The next text frame as JSON (`None`: the stream ended, errored or closed).
async fn recv(client: &mut Client) -> Option<Value> {
    loop {
        match tokio::time::timeout(WAIT, client.next())
            .await
            .expect("a frame within 5 s")
        {
            Some(Ok(Message::Text(text))) => {
                return Some(serde_json::from_str(text.as_str()).unwrap());
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            _ => return None,
        }
    }
}

async fn http_get(mock: &MockCdp, path: &str) -> String {
    let mut stream = TcpStream::connect(mock.addr()).await.unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", mock.addr()).as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn serves_json_version_with_the_websocket_url() {
    let mock = MockCdp::start().await;
    let response = http_get(&mock, "/json/version").await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let body: Value = serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["webSocketDebuggerUrl"], json!(mock.ws_url()));
    assert!(mock.http_url().starts_with("http://127.0.0.1:"));
}

#[tokio::test]
async fn unscripted_command_gets_an_empty_result_and_is_recorded() {
    let mock = MockCdp::start().await;
    let mut client = connect(&mock).await;
    send(&mut client, 1, Some("S1"), "Page.enable", json!({"x": 1})).await;
    assert_eq!(
        recv(&mut client).await.unwrap(),
        json!({"id": 1, "result": {}, "sessionId": "S1"})
    );
    let command = mock.wait_for_command("Page.enable", WAIT).await.unwrap();
    assert_eq!(command.id, 1);
    assert_eq!(command.params, json!({"x": 1}));
    assert_eq!(command.session_id.as_deref(), Some("S1"));
    assert_eq!(command.connection_index, 0);
    assert_eq!(mock.commands().len(), 1);
}

#[tokio::test]
async fn default_browser_serves_the_attach_sequence() {
    let mock = MockCdp::start().await;
    let mut client = connect(&mock).await;
    send(&mut client, 1, None, "Target.getTargets", json!({})).await;
    let targets = recv(&mut client).await.unwrap();
    assert_eq!(targets["result"]["targetInfos"][0]["targetId"], "T1");
    assert_eq!(targets["result"]["targetInfos"][0]["type"], "page");
    assert_eq!(targets["result"]["targetInfos"][0]["attached"], false);

    send(
        &mut client,
        2,
        None,
        "Target.attachToTarget",
        json!({"targetId": "T1", "flatten": true}),
    )
    .await;
    let attached = recv(&mut client).await.unwrap();
    assert_eq!(attached["method"], "Target.attachedToTarget");
    assert_eq!(attached["params"]["sessionId"], "S1");
    assert_eq!(
        recv(&mut client).await.unwrap(),
        json!({"id": 2, "result": {"sessionId": "S1"}})
    );

    send(&mut client, 3, Some("S1"), "Page.getFrameTree", json!({})).await;
    let tree = recv(&mut client).await.unwrap();
    assert_eq!(tree["result"]["frameTree"]["frame"]["id"], "T1");
    assert_eq!(tree["result"]["frameTree"]["childFrames"], json!([]));

    send(
        &mut client,
        4,
        None,
        "Target.createTarget",
        json!({"url": "about:blank"}),
    )
    .await;
    assert_eq!(recv(&mut client).await.unwrap()["result"]["targetId"], "T2");
    send(
        &mut client,
        5,
        None,
        "Target.attachToTarget",
        json!({"targetId": "T2", "flatten": true}),
    )
    .await;
    let _event = recv(&mut client).await.unwrap();
    assert_eq!(
        recv(&mut client).await.unwrap()["result"]["sessionId"],
        "S2"
    );
    send(
        &mut client,
        6,
        None,
        "Target.attachToTarget",
        json!({"targetId": "nope"}),
    )
    .await;
    assert_eq!(recv(&mut client).await.unwrap()["error"]["code"], -32602);
}

#[tokio::test]
async fn rules_override_defaults_and_session_rules_come_first() {
    let mock = MockCdp::start().await;
    mock.on(
        "Target.getTargets",
        Reply::result(json!({"targetInfos": []})),
    );
    mock.on("Page.handleJavaScriptDialog", Reply::result(json!({})));
    mock.on_session(
        "S1",
        "Page.handleJavaScriptDialog",
        Reply::error(-32602, "No dialog is showing"),
    );
    let mut client = connect(&mock).await;
    send(&mut client, 1, None, "Target.getTargets", json!({})).await;
    assert_eq!(
        recv(&mut client).await.unwrap()["result"],
        json!({"targetInfos": []})
    );
    send(
        &mut client,
        2,
        Some("S1"),
        "Page.handleJavaScriptDialog",
        json!({"accept": true}),
    )
    .await;
    let reply = recv(&mut client).await.unwrap();
    assert_eq!(
        reply["error"],
        json!({"code": -32602, "message": "No dialog is showing"})
    );
    send(
        &mut client,
        3,
        Some("S2"),
        "Page.handleJavaScriptDialog",
        json!({"accept": true}),
    )
    .await;
    assert_eq!(recv(&mut client).await.unwrap()["result"], json!({}));
}

#[tokio::test]
async fn handler_runs_before_rules_and_none_passes_on() {
    let mock = MockCdp::start().await;
    mock.on("Runtime.evaluate", Reply::result(json!({"from": "rule"})));
    mock.handle(|cmd| {
        (cmd.params["expression"] == "1+1")
            .then(|| Reply::result(json!({"result": {"type": "number", "value": 2}})))
    });
    let mut client = connect(&mock).await;
    send(
        &mut client,
        1,
        None,
        "Runtime.evaluate",
        json!({"expression": "1+1"}),
    )
    .await;
    assert_eq!(
        recv(&mut client).await.unwrap()["result"]["result"]["value"],
        2
    );
    send(
        &mut client,
        2,
        None,
        "Runtime.evaluate",
        json!({"expression": "2"}),
    )
    .await;
    assert_eq!(
        recv(&mut client).await.unwrap()["result"],
        json!({"from": "rule"})
    );
}

#[tokio::test]
async fn delayed_reply_lets_later_replies_pass_and_never_reply_stays_silent() {
    let mock = MockCdp::start().await;
    mock.on(
        "Slow",
        Reply::result(json!({"slow": true})).after(Duration::from_millis(200)),
    );
    mock.on("Never", Reply::never());
    let mut client = connect(&mock).await;
    let start = Instant::now();
    send(&mut client, 1, None, "Never", json!({})).await;
    send(&mut client, 2, None, "Slow", json!({})).await;
    send(&mut client, 3, None, "Fast", json!({})).await;
    assert_eq!(recv(&mut client).await.unwrap()["id"], 3);
    let slow = recv(&mut client).await.unwrap();
    assert_eq!(slow["id"], 2);
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert!(
        tokio::time::timeout(Duration::from_millis(200), client.next())
            .await
            .is_err(),
        "Never must not answer"
    );
    assert_eq!(mock.commands_named("Never").len(), 1);
}

#[tokio::test]
async fn reply_can_be_preceded_by_events() {
    let mock = MockCdp::start().await;
    mock.on_session(
        "S1",
        "Page.handleJavaScriptDialog",
        Reply::result(json!({})).emit_first(
            Some("S1"),
            "Page.javascriptDialogClosed",
            json!({"frameId": "T1", "result": true}),
        ),
    );
    let mut client = connect(&mock).await;
    send(
        &mut client,
        7,
        Some("S1"),
        "Page.handleJavaScriptDialog",
        json!({"accept": true}),
    )
    .await;
    let event = recv(&mut client).await.unwrap();
    assert_eq!(event["method"], "Page.javascriptDialogClosed");
    assert_eq!(event["sessionId"], "S1");
    assert_eq!(recv(&mut client).await.unwrap()["id"], 7);
}

#[tokio::test]
async fn emit_reaches_all_connections_or_one() {
    let mock = MockCdp::start().await;
    let mut a = connect(&mock).await;
    let mut b = connect(&mock).await;
    assert!(mock.wait_for_connections(2, WAIT).await);
    mock.emit(
        Some("S1"),
        "Page.javascriptDialogOpening",
        json!({"message": "hi", "type": "alert"}),
    )
    .await;
    for client in [&mut a, &mut b] {
        let event = recv(client).await.unwrap();
        assert_eq!(
            event,
            json!({"method": "Page.javascriptDialogOpening", "params": {"message": "hi", "type": "alert"}, "sessionId": "S1"})
        );
    }
    mock.emit_to(1, None, "Target.targetCreated", json!({}))
        .await;
    assert_eq!(
        recv(&mut b).await.unwrap()["method"],
        "Target.targetCreated"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(100), a.next())
            .await
            .is_err(),
        "only connection 1 gets it"
    );
    send(&mut b, 1, None, "Page.enable", json!({})).await;
    assert_eq!(
        mock.wait_for_command("Page.enable", WAIT)
            .await
            .unwrap()
            .connection_index,
        1
    );
    assert_eq!(mock.connection_count(), 2);
}

#[tokio::test]
async fn raw_text_binary_and_huge_frames_are_sent_as_is() {
    let mock = MockCdp::start().await;
    let mut client = connect(&mock).await;
    assert!(mock.wait_for_connections(1, WAIT).await);
    mock.send_raw_text("{not json").await;
    mock.send_binary(vec![1, 2, 3]).await;
    match client.next().await.unwrap().unwrap() {
        Message::Text(t) => assert_eq!(t.as_str(), "{not json"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client.next().await.unwrap().unwrap(),
        Message::binary(vec![1, 2, 3])
    );
    drop(client);
    // A 50 MiB frame needs a client with a raised limit.
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(cdp_mock::MAX_MESSAGE_SIZE))
        .max_frame_size(Some(cdp_mock::MAX_MESSAGE_SIZE));
    let (mut big_client, _) =
        tokio_tungstenite::connect_async_with_config(mock.ws_url(), Some(config), true)
            .await
            .unwrap();
    assert!(mock.wait_for_connections(2, WAIT).await);
    let huge = format!(
        r#"{{"method":"Big","params":{{"data":"{}"}}}}"#,
        "x".repeat(50 << 20)
    );
    let huge_len = huge.len();
    // Read while the mock writes: `send_raw_text` returns once the frame is written.
    let ((), received) = tokio::join!(mock.send_raw_text(huge), big_client.next());
    match received.unwrap().unwrap() {
        Message::Text(t) => assert_eq!(t.len(), huge_len),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn drop_with_close_frame_sends_a_close_frame() {
    let mock = MockCdp::start().await;
    let mut client = connect(&mock).await;
    assert!(mock.wait_for_connections(1, WAIT).await);
    let dropping = mock.drop_connections(Disconnect::CloseFrame);
    let reading = async {
        loop {
            match client.next().await {
                Some(Ok(Message::Close(_))) => return true,
                Some(Ok(_)) => continue,
                _ => return false,
            }
        }
    };
    let ((), saw_close) = tokio::join!(dropping, reading);
    assert!(saw_close, "the client must see a close frame");
    assert_eq!(mock.open_connection_count(), 0);
}

#[tokio::test]
async fn drop_with_reset_resets_the_tcp_connection() {
    let mock = MockCdp::start().await;
    let mut client = connect(&mock).await;
    assert!(mock.wait_for_connections(1, WAIT).await);
    mock.drop_connections(Disconnect::Reset).await;
    match tokio::time::timeout(WAIT, client.next()).await.unwrap() {
        Some(Err(e)) => {
            let text = e.to_string().to_lowercase();
            assert!(
                text.contains("reset") || text.contains("without closing handshake"),
                "{text}"
            );
        }
        None => {}
        Some(Ok(Message::Close(_))) => panic!("a reset must not send a close frame"),
        Some(Ok(other)) => panic!("unexpected {other:?}"),
    }
    assert_eq!(mock.open_connection_count(), 0);
}

#[tokio::test]
async fn refused_endpoint_comes_back_on_the_same_port() {
    let mock = MockCdp::start().await;
    let addr = mock.addr();
    mock.refuse_connections(true);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        tokio_tungstenite::connect_async(mock.ws_url())
            .await
            .is_err(),
        "refused while refusing"
    );
    mock.refuse_connections(false);
    assert_eq!(mock.addr(), addr);
    let mut client = None;
    for _ in 0..100 {
        if let Ok((c, _)) = tokio_tungstenite::connect_async(mock.ws_url()).await {
            client = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut client = client.expect("the mock listens again on the same port");
    send(&mut client, 1, None, "Page.enable", json!({})).await;
    assert_eq!(recv(&mut client).await.unwrap()["id"], 1);
}

#[tokio::test]
async fn stalled_endpoint_never_answers() {
    let mock = MockCdp::start().await;
    mock.stall_connections(true);
    let attempt = tokio::time::timeout(
        Duration::from_millis(300),
        tokio_tungstenite::connect_async(mock.ws_url()),
    )
    .await;
    assert!(attempt.is_err(), "the handshake must hang");
    mock.stall_connections(false);
    assert!(
        tokio_tungstenite::connect_async(mock.ws_url())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn wait_for_command_times_out_with_none() {
    let mock = MockCdp::start().await;
    assert!(
        mock.wait_for_command("Page.enable", Duration::from_millis(50))
            .await
            .is_none()
    );
}
