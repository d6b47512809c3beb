//! What reading events allocates, counted (issue 11: "no per-event
//! allocation for events we drop"). A counting allocator, per thread so
//! that tests running beside each other do not count each other, checks the
//! promises the wire's docs make: an event nobody handles is dropped before
//! anything of it is copied (through the full decoder, only serde_json's
//! own stack for nested params), and a console call that is not an error
//! prints nothing, so allocates nothing.
//! Counts of allocations, not times: these cannot flake on a loaded machine.

use cdp_supervisor::cdp::Event;
use cdp_supervisor::cdp::message::{Routed, decode_routed, decode_with};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tokio_tungstenite::tungstenite::Utf8Bytes;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts, in a
// thread-local `Cell` (no allocation, no lock).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Allocations (and reallocations) `f` made on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATIONS.with(Cell::get);
    let out = f();
    (out, ALLOCATIONS.with(Cell::get) - before)
}

/// A frame as Chromium writes it: compact, `method`, `params`, `sessionId`.
fn frame(method: &str, params: serde_json::Value) -> String {
    format!(
        r#"{{"method":"{method}","params":{params},"sessionId":"5A1B2C3D4E5F60718293A4B5C6D7E8F9"}}"#
    )
}

/// What a busy page sends that the supervisor does not handle.
fn unhandled_frames() -> Vec<String> {
    let mut frames = Vec::new();
    for i in 0..50 {
        frames.push(frame(
            "Network.dataReceived",
            json!({"requestId": format!("R{i}"), "timestamp": 1.5, "dataLength": 512, "encodedDataLength": 0}),
        ));
        frames.push(frame(
            "Runtime.executionContextCreated",
            json!({"context": {"id": i, "origin": "https://a.test", "name": "", "uniqueId": "u", "auxData": {"isDefault": false, "frameId": "T1", "type": "isolated"}}}),
        ));
        frames.push(frame(
            "Network.requestWillBeSent",
            json!({"requestId": format!("R{i}"), "request": {"url": format!("https://a.test/{i}?q=\"x\""), "method": "GET", "headers": {"Accept": "*/*"}}, "timestamp": 2.0, "type": "XHR"}),
        ));
        frames.push(frame(
            "DOM.attributeModified",
            json!({"nodeId": i, "name": "class", "value": "a b \u{e9}"}),
        ));
    }
    // Browser-level (no session) and a session id first: the shapes that
    // are not read from their ends.
    frames.push(r#"{"method":"Target.somethingElse","params":{"a":1}}"#.to_owned());
    frames.push(
        r#"{"sessionId":"S1","method":"Network.loadingFinished","params":{"requestId":"R1","timestamp":3.0}}"#
            .to_owned(),
    );
    frames
}

#[test]
fn events_nobody_handles_are_dropped_without_an_allocation() {
    // Every frame goes through `decode_routed`, by value, as the reader hands it over.
    let frames: Vec<Utf8Bytes> = unhandled_frames()
        .into_iter()
        .map(Utf8Bytes::from)
        .collect();
    let n = frames.len();
    let (dropped, count) = allocations(|| {
        frames
            .into_iter()
            .map(|text| decode_routed(text, Event::handled))
            .filter(|routed| matches!(routed, Ok(None)))
            .count()
    });
    assert_eq!(dropped, n, "every one of them is dropped");
    assert_eq!(count, 0, "{count} allocations for {n} dropped events");
}

#[test]
fn the_full_decoder_copies_no_method_or_session_of_a_dropped_event() {
    // The decoder behind the in-place readers (replies, other shapes). It
    // borrows the method and the session; serde_json, skipping params
    // nested deeper than one level, may allocate once for its stack.
    for text in unhandled_frames() {
        let (routed, count) = allocations(|| decode_with(&text, Event::handled));
        assert!(matches!(routed, Ok(None)), "dropped: {text}");
        let nested = text.matches('{').count() > 2;
        assert!(
            count <= usize::from(nested),
            "{count} allocations for a dropped event: {text}"
        );
    }
}

#[test]
fn a_handled_event_is_routed_without_copying_its_text() {
    let text = Utf8Bytes::from(frame(
        "Runtime.consoleAPICalled",
        json!({"type": "error", "args": [{"type": "string", "value": "boom"}], "executionContextId": 1, "timestamp": 1.7e12}),
    ));
    let (routed, count) = allocations(|| decode_routed(text, Event::handled));
    let Ok(Some(Routed::Event(event))) = routed else {
        panic!("routed as an event: {routed:?}");
    };
    assert_eq!(event.method(), "Runtime.consoleAPICalled");
    assert_eq!(count, 0, "routing read the frame in place");
}

#[test]
fn a_console_call_that_is_not_an_error_allocates_nothing() {
    let params = json!({
        "type": "log",
        "args": [
            {"type": "string", "value": "user 42 logged in"},
            {"type": "number", "value": 42, "description": "42"},
            {"type": "object", "className": "Object", "description": "Object", "objectId": "1.2.3", "preview": {"type": "object", "overflow": false, "properties": []}}
        ],
        "executionContextId": 3,
        "timestamp": 1733150000000.125,
        "stackTrace": {"callFrames": [{"functionName": "f", "scriptId": "7", "url": "https://a.test/app.js", "lineNumber": 10, "columnNumber": 4}]}
    })
    .to_string();
    let (event, count) = allocations(|| Event::parse("Runtime.consoleAPICalled", &params));
    let Event::ConsoleApiCalled(call) = event else {
        panic!("parsed: {event:?}");
    };
    assert_eq!(call.call_type, "log");
    assert_eq!(call.text, "", "not an error: nothing printed");
    assert_eq!(count, 0, "{count} allocations for a console.log");
}
