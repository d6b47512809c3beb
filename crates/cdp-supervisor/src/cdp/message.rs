//! The CDP message envelope: what goes on the wire and what comes back.
//!
//! A command is `{"id": u64, "method": "...", "params": {...}, "sessionId"?: "..."}`.
//! Everything the browser sends is either a reply (it carries the `id` of a
//! command, and `result` or `error`) or an event (a `method`, no `id`).
//! `params` and `result` stay raw JSON ([`RawValue`]) until someone needs them:
//! the connection only routes, it does not interpret.
//!
//! [`decode`] never panics, whatever bytes it is fed: a malformed frame is a
//! [`DecodeError`] the connection logs and skips.

use crate::cdp::protocol::{Event, SessionId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use tokio_tungstenite::tungstenite::Utf8Bytes;

/// An error object a reply carries instead of `result`: `{code, message, data?}`.
#[derive(Clone, Debug, Deserialize)]
pub struct ErrorObject {
    /// CDP error code, e.g. `-32602` (invalid params), `-32000` (server error), `-32001` (session not found).
    pub code: i64,
    /// Human-readable message from the browser, e.g. `"No dialog is showing"`.
    #[serde(default)]
    pub message: String,
    /// Optional extra detail, kept as raw JSON (Chromium sends a string when it sends anything).
    #[serde(default)]
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// `data` as text: a JSON string is unquoted, anything else is its JSON text.
    pub fn data_text(&self) -> Option<String> {
        let raw = self.data.as_ref()?;
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::String(s)) => Some(s),
            Ok(Value::Null) => None,
            _ => Some(raw.get().to_owned()),
        }
    }
}

/// One decoded frame from the browser.
#[derive(Debug)]
pub enum Decoded {
    /// The reply to the command with this `id`.
    Reply {
        /// The command's id, as we sent it.
        id: u64,
        /// The session the command ran on, when the browser echoes it.
        session_id: Option<SessionId>,
        /// `result` (raw JSON; `{}` when absent) or the error object.
        outcome: Result<Box<RawValue>, ErrorObject>,
    },
    /// An event; `session_id` is the flatten-mode session it belongs to (`None`: the browser session).
    Event {
        /// The session the event belongs to; `None` for browser-level events.
        session_id: Option<SessionId>,
        /// e.g. `"Page.javascriptDialogOpening"`.
        method: String,
        /// The event's params as raw JSON (`{}` when absent).
        params: Box<RawValue>,
    },
}

/// Why a frame is not a CDP message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not UTF-8 (only from [`decode_bytes`]).
    #[error("frame is not UTF-8")]
    NotUtf8,
    /// The text is not a JSON object of the envelope's shape (bad JSON, wrong field types…).
    #[error("frame is not a CDP message: {0}")]
    Malformed(String),
    /// A JSON object with neither `id` (reply) nor `method` (event).
    #[error("frame has neither \"id\" nor \"method\"")]
    NeitherReplyNorEvent,
}

/// The envelope read in place: strings are borrowed unless they carry
/// escapes, `params` and `result` are spans of the text.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default, borrow)]
    method: Option<Borrowed<'a>>,
    #[serde(default, borrow, rename = "sessionId")]
    session_id: Option<Borrowed<'a>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

/// A string borrowed from the text unless it carries escapes. serde
/// borrows a `Cow<str>` field marked `borrow`, but copies one inside an
/// `Option` every time: a dropped event's method and session would each
/// cost an allocation (`tests/allocations.rs`).
#[derive(Deserialize)]
struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("`{}` is valid JSON")
}

/// Decodes one text frame into a reply or an event. Never panics.
///
/// A frame with both `id` and `method` is a reply (CDP never sends such a
/// thing, but the `id` is what a waiting caller needs).
pub fn decode(text: &str) -> Result<Decoded, DecodeError> {
    decode_with(text, |_| true).map(|d| d.expect("every event is wanted"))
}

/// [`decode`], except that an event whose method `wanted` refuses is
/// skipped (`Ok(None)`) before anything of it is copied: its method,
/// session and params are only read in place (lazy decoding). serde_json
/// skips params nested deeper than one level with a stack it allocates,
/// so such an event costs one allocation here; [`decode_routed`], which
/// reads Chromium's frames in place before falling back to this, costs none.
pub fn decode_with(
    text: &str,
    wanted: impl Fn(&str) -> bool,
) -> Result<Option<Decoded>, DecodeError> {
    // A page can put lone UTF-16 surrogates in strings (`'\udc00'`), which
    // Chromium sends as `\udc00` escapes and serde_json refuses: the frame
    // (a console error, an evaluate's result) would be lost. They become
    // U+FFFD, as a browser shows them.
    let repaired = repair_lone_surrogates(text);
    let text = repaired.as_deref().unwrap_or(text);
    let envelope: Envelope<'_> =
        serde_json::from_str(text).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    if envelope.id.is_none()
        && let Some(Borrowed(m)) = &envelope.method
        && !wanted(m)
    {
        return Ok(None);
    }
    let session_id = envelope.session_id.map(|s| SessionId(s.0.into_owned()));
    if let Some(id) = envelope.id {
        let outcome = match envelope.error {
            Some(error) => Err(error),
            None => Ok(envelope
                .result
                .map_or_else(empty_object, RawValue::to_owned)),
        };
        return Ok(Some(Decoded::Reply {
            id,
            session_id,
            outcome,
        }));
    }
    match envelope.method {
        Some(Borrowed(method)) => Ok(Some(Decoded::Event {
            session_id,
            method: method.into_owned(),
            params: envelope
                .params
                .map_or_else(empty_object, RawValue::to_owned),
        })),
        None => Err(DecodeError::NeitherReplyNorEvent),
    }
}

/// `text` with every `\uXXXX` escape of a lone UTF-16 surrogate (one not
/// part of a high-low pair) replaced by `\ufffd`; `None` when there is none
/// (the common case: one scan for `\ud`, no copy).
fn repair_lone_surrogates(text: &str) -> Option<String> {
    if !text.contains("\\ud") && !text.contains("\\uD") {
        return None;
    }
    let b = text.as_bytes();
    // The code unit of the `\uXXXX` escape at `i`, if there is one.
    let unit = |i: usize| -> Option<u16> {
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        let hex = text.get(i + 2..i + 6)?;
        u16::from_str_radix(hex, 16).ok()
    };
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(u) if is_high(u) && unit(i + 6).is_some_and(is_low) => i += 12,
            Some(u) if is_high(u) || is_low(u) => {
                out.push_str(&text[last..i]);
                out.push_str("\\ufffd");
                i += 6;
                last = i;
                changed = true;
            }
            Some(_) => i += 6,
            // Any other escape: skip the escaped character (it may be a backslash).
            None => i += 2,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// A CDP event as it came off the wire: the frame's own text, with where its
/// `method`, `sessionId` and `params` lie in it. Taking one out of a frame
/// copies nothing (the text is shared with the WebSocket's read buffer), and
/// its `params` are not parsed until someone reads them.
#[derive(Clone)]
pub struct RawEvent {
    text: Utf8Bytes,
    method: (u32, u32),
    session: Option<(u32, u32)>,
    params: Option<(u32, u32)>,
    /// Read from its two ends ([`scan_ends`]): `params` is all that lies
    /// between the method and the session, not delimited by a scan.
    from_ends: bool,
}

impl RawEvent {
    /// An event from its parts (copied into one text).
    pub fn new(session_id: Option<&str>, method: &str, params: &str) -> RawEvent {
        let mut text =
            String::with_capacity(method.len() + params.len() + session_id.map_or(0, str::len));
        let mut span = |part: &str| {
            let start = text.len() as u32;
            text.push_str(part);
            (start, text.len() as u32)
        };
        let method = span(method);
        let params = Some(span(params));
        let session = session_id.map(&mut span);
        RawEvent {
            text: text.into(),
            method,
            session,
            params,
            from_ends: false,
        }
    }

    fn from_spans(text: Utf8Bytes, spans: Spans) -> RawEvent {
        RawEvent {
            text,
            method: spans.method,
            session: spans.session,
            params: spans.params,
            from_ends: spans.from_ends,
        }
    }

    fn part(&self, (start, end): (u32, u32)) -> &str {
        &self.text[start as usize..end as usize]
    }

    /// The CDP event name, e.g. `"Page.javascriptDialogOpening"`.
    pub fn method(&self) -> &str {
        self.part(self.method)
    }

    /// The flatten-mode session the event belongs to; `None` for
    /// browser-level events.
    pub fn session_id(&self) -> Option<&str> {
        self.session.map(|s| self.part(s))
    }

    /// Reads the event as one of the browser session's (no `sessionId`):
    /// a pipe link's own browser session ([`crate::cdp::pipe`]) stands for
    /// the browser.
    pub fn clear_session(&mut self) {
        self.session = None;
    }

    /// The event's `params` as JSON text, unparsed and (for a frame read in
    /// place) unvalidated: `"{}"` when the frame has none. For a frame read
    /// from its ends they may run on into keys that follow them (Chromium
    /// sends none): [`RawEvent::parse`] reads such a frame again.
    pub fn params(&self) -> &str {
        self.params.map_or("{}", |p| self.part(p))
    }

    /// The event, parsed ([`Event::parse`]). A frame read from its ends
    /// whose params do not parse, or whose params the event keeps as text
    /// (`Fetch.requestPaused`), is read again key by key first, as the full
    /// decoder reads it: its params are then exactly the `params` value.
    pub fn parse(&self) -> Event {
        let event = Event::parse(self.method(), self.params());
        if !self.from_ends
            || !matches!(
                event,
                Event::Unparsed { .. } | Event::FetchRequestPaused { .. }
            )
        {
            return event;
        }
        if let Some(spans) = scan_event(&self.text) {
            return Event::parse(
                self.method(),
                RawEvent::from_spans(self.text.clone(), spans).params(),
            );
        }
        match decode(&self.text) {
            Ok(Decoded::Event { method, params, .. }) => Event::parse(&method, params.get()),
            Ok(Decoded::Reply { .. }) => Event::Unparsed {
                method: self.method().to_owned(),
                error: "a reply (it has an `id`), not an event".to_owned(),
            },
            Err(e) => Event::Unparsed {
                method: self.method().to_owned(),
                error: e.to_string(),
            },
        }
    }
}

impl std::fmt::Debug for RawEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawEvent")
            .field("session_id", &self.session_id())
            .field("method", &self.method())
            .field("params_len", &self.params().len())
            .finish()
    }
}

/// One frame from the browser, as the connection routes it ([`decode_routed`]).
#[derive(Debug)]
pub enum Routed {
    /// The reply to the command with this `id`: `result` (raw JSON; `{}`
    /// when absent) or the error object.
    Reply {
        /// The command's id, as we sent it.
        id: u64,
        /// `result` or the error object.
        outcome: Result<Box<RawValue>, ErrorObject>,
    },
    /// An event, read in place.
    Event(RawEvent),
}

/// Decodes a frame for routing, lazily: an event of the usual shape
/// (`{"method":…,"params":…,"sessionId":…}`, compact, no escapes in its
/// method or session) is read in place — its `params` are neither parsed
/// nor copied, and an event `wanted` refuses is dropped (`Ok(None)`)
/// without any allocation. A session's event in exactly Chromium's order
/// ([`scan_ends`]) does not even have its params scanned: the method is
/// read from the front, the session from the back. Everything else
/// (replies, other shapes, lone surrogate escapes) goes through
/// [`decode_with`]. Never panics.
///
/// # Errors
/// [`DecodeError`] when the frame is not a CDP message. An event read in
/// place whose `params` are not valid JSON is not an error here: it fails
/// when its params are parsed.
pub fn decode_routed(
    text: Utf8Bytes,
    wanted: impl Fn(&str) -> bool,
) -> Result<Option<Routed>, DecodeError> {
    if let Some(spans) = scan_ends(&text).or_else(|| scan_event(&text)) {
        let event = RawEvent::from_spans(text, spans);
        return Ok(wanted(event.method()).then_some(Routed::Event(event)));
    }
    Ok(match decode_with(&text, wanted)? {
        None => None,
        Some(Decoded::Reply { id, outcome, .. }) => Some(Routed::Reply { id, outcome }),
        Some(Decoded::Event {
            session_id,
            method,
            params,
        }) => Some(Routed::Event(RawEvent::new(
            session_id.as_ref().map(SessionId::as_str),
            &method,
            params.get(),
        ))),
    })
}

/// Where an event's parts lie in its frame ([`scan_ends`], [`scan_event`]).
#[derive(Debug, PartialEq)]
struct Spans {
    method: (u32, u32),
    session: Option<(u32, u32)>,
    params: Option<(u32, u32)>,
    /// Found by [`scan_ends`].
    from_ends: bool,
}

/// Reads a session's event from its two ends when it is exactly what
/// Chromium writes — `{"method":M,"params":{…},"sessionId":S}`, compact,
/// `M` and `S` plain strings — without scanning its params: the method from
/// the front, the session from the back, the params whatever lies between.
/// `None` for anything else (the caller then scans the frame key by key),
/// and when the params hold a backslash before `ud`/`uD` (perhaps a UTF-16
/// surrogate escape, the full decoder's to repair).
///
/// Why the back is the envelope's: in valid JSON a `"` that no backslash
/// precedes delimits a string, so the tail `,"sessionId":"S"}` (its quotes
/// preceded by `,`, `d`, `:` and `S`'s plain bytes) is a member of the
/// object the final `}` closes — the envelope. Params followed by another
/// key would run on into it: [`RawEvent::parse`] finds that out, as they
/// then do not parse, and reads the frame again.
///
/// A frame that does not end in a session is never read this way: its
/// `sessionId` may still be earlier, before a key that follows it (`…,
/// "sessionId":"S1","x":{}}`), and only a scan finds it. Chromium's
/// browser-level events (no session) are few: the target events.
fn scan_ends(text: &str) -> Option<Spans> {
    const HEAD: &[u8] = br#"{"method":""#;
    const PARAMS: &[u8] = br#","params":"#;
    const SESSION: &[u8] = br#","sessionId":""#;
    let b = text.as_bytes();
    if b.len() > u32::MAX as usize || !b.starts_with(HEAD) {
        return None;
    }
    let m0 = HEAD.len();
    let m1 = m0 + memchr::memchr2(b'"', b'\\', &b[m0..])?;
    if b[m1] != b'"' || !b[m1 + 1..].starts_with(PARAMS) {
        return None;
    }
    let p0 = m1 + 1 + PARAMS.len();
    if !b.ends_with(br#""}"#) {
        return None;
    }
    let s1 = b.len() - 2;
    let s0 = p0 + memchr::memrchr2(b'"', b'\\', b.get(p0..s1)?)? + 1;
    if b[s0 - 1] != b'"' || !b[..s0].ends_with(SESSION) {
        return None;
    }
    let p1 = s0 - SESSION.len();
    let params = b.get(p0..p1)?;
    if params.first() != Some(&b'{') || params.last() != Some(&b'}') {
        return None;
    }
    if memchr::memchr_iter(b'\\', params).any(|k| escapes_surrogate(params, k)) {
        return None;
    }
    Some(Spans {
        method: (m0 as u32, m1 as u32),
        session: Some((s0 as u32, s1 as u32)),
        params: Some((p0 as u32, p1 as u32)),
        from_ends: true,
    })
}

/// Reads an event's envelope in place when it has the shape Chromium sends:
/// one compact object whose keys carry no escapes, `method` and `sessionId`
/// plain strings, no `id` (`result`, `error`: a reply). Values are skipped
/// over by their strings and brackets, not validated. `None` for anything
/// else — the caller then decodes the frame fully — and for a string
/// escape of a UTF-16 surrogate (its repair is the full decoder's).
fn scan_event(text: &str) -> Option<Spans> {
    let b = text.as_bytes();
    if b.len() > u32::MAX as usize || b.first() != Some(&b'{') {
        return None;
    }
    let (mut method, mut session, mut params) = (None, None, None);
    let mut i = 1;
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = i + 1 + memchr::memchr2(b'"', b'\\', &b[i + 1..])?;
        if b[key_end] != b'"' || b.get(key_end + 1) != Some(&b':') {
            return None;
        }
        let key = &b[i + 1..key_end];
        let start = key_end + 2;
        let end = skip_value(b, start)?;
        let span = (start as u32, end as u32);
        // The inside of a plain string value (no escapes).
        let plain = || {
            let inner = b.get(start + 1..end - 1)?;
            (end - start >= 2 && b[start] == b'"' && !inner.contains(&b'\\'))
                .then_some((start as u32 + 1, end as u32 - 1))
        };
        let slot = match key {
            b"method" => Some((&mut method, plain()?)),
            b"sessionId" => Some((&mut session, plain()?)),
            // `null` params mean none: the full decoder says `{}`.
            b"params" if &b[start..end] == b"null" => return None,
            b"params" => Some((&mut params, span)),
            b"id" | b"result" | b"error" => return None,
            _ => None,
        };
        if let Some((slot, value)) = slot {
            if slot.is_some() {
                // A duplicate key: the full decoder says what is wrong.
                return None;
            }
            *slot = Some(value);
        }
        match b.get(end)? {
            b',' => i = end + 1,
            b'}' if end + 1 == b.len() => break,
            _ => return None,
        }
    }
    Some(Spans {
        method: method?,
        session,
        params,
        from_ends: false,
    })
}

/// The index just past the JSON value at `start`, found by its strings
/// and brackets only; `None` when it does not end inside `b`, when it is
/// empty, or when a string in it escapes a UTF-16 surrogate.
fn skip_value(b: &[u8], start: usize) -> Option<usize> {
    match *b.get(start)? {
        b'"' => skip_string(b, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match *b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        // A number or a literal: up to what ends it, and nothing in it
        // that would start or end another value (`1"id":7` is broken, not
        // one long number).
        _ => {
            let len = b[start..].iter().position(|c| {
                matches!(
                    c,
                    b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b'"' | b':' | b'{' | b'['
                )
            })?;
            (len > 0 && !matches!(b[start + len], b'"' | b':' | b'{' | b'[')).then_some(start + len)
        }
    }
}

/// The index just past the string whose opening quote is at `i`; `None`
/// when it does not end inside `b` or escapes a UTF-16 surrogate.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[j] == b'"' {
            return Some(j + 1);
        }
        if escapes_surrogate(b, j) {
            return None;
        }
        j += 2;
    }
}

/// Whether the backslash at `k` may start the escape of a UTF-16 surrogate
/// (`\ud…`/`\uD…`): its repair is the full decoder's
/// ([`repair_lone_surrogates`]).
fn escapes_surrogate(b: &[u8], k: usize) -> bool {
    b.get(k + 1) == Some(&b'u') && matches!(b.get(k + 2), Some(b'd' | b'D'))
}

/// [`decode`] for raw bytes (a fuzz entry point; the connection itself only sees text frames).
pub fn decode_bytes(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::NotUtf8)?;
    decode(text)
}

#[derive(Serialize)]
struct CommandEnvelope<'a> {
    id: u64,
    method: &'a str,
    params: &'a Value,
    #[serde(rename = "sessionId", skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
}

/// Encodes a command: `{"id", "method", "params", "sessionId"?}`. A `Null`
/// `params` is sent as `{}` (Chromium rejects `null` params).
pub fn encode_command(
    id: u64,
    session_id: Option<&SessionId>,
    method: &str,
    params: &Value,
) -> String {
    let empty = Value::Object(Default::default());
    let params = if params.is_null() { &empty } else { params };
    let envelope = CommandEnvelope {
        id,
        method,
        params,
        session_id: session_id.map(SessionId::as_str),
    };
    // Serializing a `Value` with string keys cannot fail.
    serde_json::to_string(&envelope).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let frame = r#"{"method":"Runtime.consoleAPICalled","params":{"type":"error","args":[{"type":"string","value":"low\udc00 hi\ud800 pair\ud83d\ude00 lit\\ud800"}]}}"#;
        let Ok(super::Decoded::Event { params, .. }) = super::decode(frame) else {
            panic!("the frame decodes");
        };
        let v: serde_json::Value = serde_json::from_str(params.get()).expect("params parse");
        assert_eq!(
            v["args"][0]["value"],
            "low\u{fffd} hi\u{fffd} pair\u{1f600} lit\\ud800"
        );
        assert!(super::repair_lone_surrogates(r#"{"a":"\ud83d\ude00 \\udc00"}"#).is_none());
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn encode_command_with_and_without_session() {
        let text = encode_command(7, None, "Page.enable", &json!({}));
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"id": 7, "method": "Page.enable", "params": {}})
        );
        let s = SessionId::from("S1");
        let text = encode_command(8, Some(&s), "Runtime.evaluate", &json!({"expression": "1"}));
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"id": 8, "method": "Runtime.evaluate", "params": {"expression": "1"}, "sessionId": "S1"})
        );
    }

    #[test]
    fn encode_null_params_as_empty_object() {
        let text = encode_command(1, None, "Browser.getVersion", &Value::Null);
        assert!(text.contains("\"params\":{}"), "{text}");
    }

    #[test]
    fn decode_reply_with_result_keeps_raw_json() {
        match decode(r#"{"id":3,"result":{"a": [1, 2]},"sessionId":"S1"}"#).unwrap() {
            Decoded::Reply {
                id,
                session_id,
                outcome,
            } => {
                assert_eq!(id, 3);
                assert_eq!(session_id, Some(SessionId::from("S1")));
                assert_eq!(outcome.unwrap().get(), r#"{"a": [1, 2]}"#);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decode_reply_with_error_object() {
        let text =
            r#"{"id":4,"error":{"code":-32602,"message":"No dialog is showing","data":"detail"}}"#;
        match decode(text).unwrap() {
            Decoded::Reply {
                id: 4,
                outcome: Err(e),
                ..
            } => {
                assert_eq!(e.code, -32602);
                assert_eq!(e.message, "No dialog is showing");
                assert_eq!(e.data_text().as_deref(), Some("detail"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decode_reply_without_result_is_empty_object() {
        match decode(r#"{"id":5}"#).unwrap() {
            Decoded::Reply {
                outcome: Ok(raw), ..
            } => assert_eq!(raw.get(), "{}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decode_event_with_session() {
        let text = r#"{"method":"Page.javascriptDialogOpening","params":{"message":"hi","type":"alert"},"sessionId":"S9","extra":1}"#;
        match decode(text).unwrap() {
            Decoded::Event {
                session_id,
                method,
                params,
            } => {
                assert_eq!(session_id, Some(SessionId::from("S9")));
                assert_eq!(method, "Page.javascriptDialogOpening");
                assert_eq!(params.get(), r#"{"message":"hi","type":"alert"}"#);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decode_event_without_params() {
        match decode(r#"{"method":"Target.detachedFromTarget"}"#).unwrap() {
            Decoded::Event {
                session_id: None,
                params,
                ..
            } => assert_eq!(params.get(), "{}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decode_garbage_is_an_error_not_a_panic() {
        let deep_array = "[".repeat(100_000);
        let deep_params = format!(
            r#"{{"method":"X","params":{}{}}}"#,
            "[".repeat(50_000),
            "]".repeat(50_000)
        );
        let cases: Vec<&str> = vec![
            "",
            "{not json",
            "null",
            "42",
            "\"text\"",
            "[]",
            "{}",
            r#"{"id":-1}"#,
            r#"{"id":1.5}"#,
            r#"{"id":"1"}"#,
            r#"{"id":18446744073709551616}"#,
            r#"{"method":5}"#,
            r#"{"id":1,"error":{"message":"no code"}}"#,
            r#"{"id":1,"error":"string"}"#,
            r#"{"id":1,"id":2}"#,
            r#"{"method":"X","sessionId":7}"#,
            "\u{0}\u{1}\u{ffff}",
            &deep_array,
        ];
        for case in cases {
            assert!(decode(case).is_err(), "{case:.40}");
        }
        // Deep nesting inside `params` is not parsed, only delimited: it decodes.
        assert!(decode(&deep_params).is_ok());
        assert_eq!(
            decode_bytes(&[0xff, 0xfe, b'{']).unwrap_err(),
            DecodeError::NotUtf8
        );
        assert_eq!(decode("{}").unwrap_err(), DecodeError::NeitherReplyNorEvent);
    }

    #[test]
    fn decode_every_prefix_of_a_valid_frame_without_panicking() {
        let text = r#"{"id":12,"result":{"frameTree":{"frame":{"id":"T1","url":"about:blank"}}},"sessionId":"S1"}"#;
        for end in 0..text.len() {
            let _ = decode(&text[..end]);
        }
    }

    /// `decode_routed` of `text`, every event wanted.
    fn routed(text: &str) -> Option<Routed> {
        decode_routed(text.to_owned().into(), |_| true).expect("the frame decodes")
    }

    #[test]
    fn events_read_in_place_agree_with_the_full_decoder() {
        let frames = [
            r#"{"method":"Runtime.consoleAPICalled","params":{"type":"error","args":[{"type":"string","value":"a \"quoted\" \\ [x] {y}"}],"executionContextId":1,"timestamp":1.7e12},"sessionId":"S1"}"#,
            r#"{"method":"Page.frameDetached","params":{"frameId":"F1","reason":"remove"}}"#,
            r#"{"method":"Inspector.detached","sessionId":"S2"}"#,
            r#"{"method":"X.y","params":[1,{"a":[true,null,-2.5e3]},"s"],"extra":{"z":[]},"sessionId":"S3"}"#,
            r#"{"method":"X.y","params":"just a string"}"#,
            r#"{"method":"X.y","params":42}"#,
            r#"{"method":"X.y","params":{"text":"é ✓ \n"}}"#,
        ];
        for frame in frames {
            assert!(scan_event(frame).is_some(), "read in place: {frame}");
            let Ok(Decoded::Event {
                session_id,
                method,
                params,
            }) = decode(frame)
            else {
                panic!("an event: {frame}");
            };
            let Some(Routed::Event(e)) = routed(frame) else {
                panic!("an event: {frame}");
            };
            assert_eq!(e.method(), method);
            assert_eq!(e.session_id(), session_id.as_ref().map(SessionId::as_str));
            assert_eq!(e.params(), params.get(), "{frame}");
        }
    }

    #[test]
    fn other_shapes_go_to_the_full_decoder() {
        for frame in [
            // Replies, whatever the order of their keys.
            r#"{"id":3,"result":{}}"#,
            r#"{"method":"X.y","id":3,"result":{}}"#,
            r#"{"method":"X.y","params":{},"error":{"code":1,"message":"m"}}"#,
            // Whitespace, escapes in keys or in method/session, duplicates.
            r#"{ "method":"X.y","params":{}}"#,
            r#"{"method":"X.y","params":{}} "#,
            r#"{"met\u0068od":"X.y","params":{}}"#,
            r#"{"method":"X\u002ey","params":{}}"#,
            r#"{"method":"X.y","sessionId":"S\u0031"}"#,
            r#"{"method":"X.y","method":"X.z"}"#,
            r#"{"method":null,"params":{}}"#,
            // `null` params (the full decoder says `{}`); a broken value
            // that would hide a key (found by a review).
            r#"{"method":"A.b","params":null}"#,
            r#"{"method":"A.b","x":1"id":7}"#,
            r#"{"method":"A.b","x":tru{"id":7}}"#,
            // A lone surrogate escape: the full decoder repairs it.
            r#"{"method":"X.y","params":{"v":"lone\udc00"}}"#,
        ] {
            assert_eq!(scan_event(frame), None, "{frame}");
        }
        let Some(Routed::Reply { id: 3, .. }) = routed(r#"{"method":"X.y","id":3,"result":{}}"#)
        else {
            panic!("a frame with an id is a reply");
        };
        let Some(Routed::Event(e)) =
            routed(r#"{"method":"X\u002ey","params":{"v":"lone\udc00"},"sessionId":"S\u0031"}"#)
        else {
            panic!("an event");
        };
        assert_eq!((e.method(), e.session_id()), ("X.y", Some("S1")));
        let Some(Routed::Event(n)) = routed(r#"{"method":"A.b","params":null}"#) else {
            panic!("an event");
        };
        assert_eq!(n.params(), "{}");
        assert_eq!(e.params(), r#"{"v":"lone\ufffd"}"#);
    }

    #[test]
    fn an_unwanted_event_is_dropped_and_a_broken_one_is_an_error() {
        let text =
            r#"{"method":"Network.dataReceived","params":{"requestId":"R1"},"sessionId":"S1"}"#;
        let got = decode_routed(text.to_owned().into(), |m| m != "Network.dataReceived");
        assert!(matches!(got, Ok(None)), "{got:?}");
        for broken in [
            r#"{"method":"X.y","params":{"#,
            "{",
            "",
            "[]",
            r#"{"params":{}}"#,
        ] {
            assert!(
                decode_routed(broken.to_owned().into(), |_| true).is_err(),
                "{broken}"
            );
        }
        // Read in place, its params are not validated: they fail when parsed.
        let Some(Routed::Event(e)) = routed(r#"{"method":"X.y","params":{"a":}}"#) else {
            panic!("an event");
        };
        assert!(serde_json::from_str::<Value>(e.params()).is_err());
    }

    /// `frame`'s spans as [`scan_ends`] reads them, beside [`scan_event`]'s.
    fn both_reads(frame: &str) -> (Option<Spans>, Option<Spans>) {
        let ends = scan_ends(frame).map(|s| Spans {
            from_ends: false,
            ..s
        });
        (ends, scan_event(frame))
    }

    #[test]
    fn chromium_order_is_read_from_its_ends_as_a_scan_by_keys_reads_it() {
        for frame in [
            r#"{"method":"Runtime.consoleAPICalled","params":{"type":"error","args":[{"type":"string","value":"a \"quoted\" \\ [x] {y}"}],"executionContextId":1},"sessionId":"S1"}"#,
            r#"{"method":"X.y","params":{},"sessionId":"S2"}"#,
            // What looks like the envelope's tail, inside the params.
            r#"{"method":"X.y","params":{"a":{"sessionId":"EVIL"}},"sessionId":"S3"}"#,
            r#"{"method":"X.y","params":{"v":"\",\"sessionId\":\"EVIL\"}"},"sessionId":"S5"}"#,
            r#"{"method":"X.y","params":{"v":"}\""},"sessionId":"S4"}"#,
            r#"{"method":"X.y","params":{"text":"é ✓ \n"},"sessionId":""}"#,
        ] {
            let (ends, keys) = both_reads(frame);
            assert!(ends.is_some(), "read from its ends: {frame}");
            assert_eq!(ends, keys, "{frame}");
        }
        for frame in [
            // No session at the end: it may be earlier (read by keys).
            r#"{"method":"Page.frameDetached","params":{"frameId":"F1","reason":"remove"}}"#,
            r#"{"method":"X.y","params":{}}"#,
            r#"{"method":"X.y","params":{"v":"\",\"sessionId\":\"EVIL\"}"}}"#,
            r#"{"method":"X.y","params":{},"sessionId":"S1","x":{}}"#,
            // Another order, other params, other keys, whitespace.
            r#"{"method":"X.y","sessionId":"S1","params":{}}"#,
            r#"{"params":{},"method":"X.y"}"#,
            r#"{"method":"X.y","params":[1]}"#,
            r#"{"method":"X.y","params":"s","sessionId":"S1"}"#,
            r#"{"method":"A.b","params":null}"#,
            r#"{"method":"X.y","params":{},"extra":"e"}"#,
            r#"{"method":"X.y","params":{},"sessionId":"S1","id":7}"#,
            r#"{"method":"X.y","params":{} }"#,
            r#"{"method":"X.y","params":{}} "#,
            // Escapes in the method or the session; a surrogate escape.
            r#"{"method":"X\u002ey","params":{}}"#,
            r#"{"method":"X.y","params":{},"sessionId":"S\u0031"}"#,
            r#"{"method":"X.y","params":{"v":"lone\udc00"},"sessionId":"S1"}"#,
            r#"{"id":3,"result":{}}"#,
        ] {
            assert_eq!(scan_ends(frame), None, "{frame}");
        }
    }

    #[test]
    fn params_that_run_on_into_another_key_are_read_again_by_keys() {
        let console =
            r#"{"type":"error","args":[{"type":"string","value":"boom"}],"executionContextId":1}"#;
        let paused = r#"{"requestId":"R1","request":{"url":"https://a.test/","method":"GET","headers":{}},"frameId":"T1","resourceType":"Document"}"#;
        for (method, params) in [
            ("Runtime.consoleAPICalled", console),
            ("Fetch.requestPaused", paused),
        ] {
            let frame = format!(
                r#"{{"method":"{method}","params":{params},"extra":{{"sessionId":"X"}},"sessionId":"S1"}}"#
            );
            assert!(scan_ends(&frame).is_some(), "{frame}");
            let Some(Routed::Event(e)) = routed(&frame) else {
                panic!("an event: {frame}");
            };
            assert_eq!(e.session_id(), Some("S1"));
            assert_ne!(e.params(), params, "read from its ends, they run on");
            assert_eq!(e.parse(), Event::parse(method, params), "{frame}");
        }
        // Read by keys, or by the full decoder: parsed as they are.
        for frame in [
            format!(r#"{{"method":"Runtime.consoleAPICalled","params":{console}}}"#),
            format!(
                r#"{{"method":"Runtime.consoleAPICalled","sessionId":"S","params":{console}}}"#
            ),
            format!(r#"{{ "method":"Runtime.consoleAPICalled","params":{console}}}"#),
        ] {
            let Some(Routed::Event(e)) = routed(&frame) else {
                panic!("an event: {frame}");
            };
            assert_eq!(e.parse(), Event::parse("Runtime.consoleAPICalled", console));
        }
    }

    /// A JSON value a property test puts in params: strings made of the
    /// characters that delimit the envelope, numbers, nested containers.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            r#"[a-z\\"{}\[\],:]{0,12}"#.prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            Just(Value::Null),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(r#"[a-zA-Z\\"]{0,6}"#, inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Any params, whatever their strings hold: read from the ends,
        /// the frame has the spans a scan by keys finds.
        #[test]
        fn any_params_read_from_the_ends_as_by_keys(
            params in proptest::collection::btree_map(r#"[a-zA-Z\\"{}\[\],:]{0,8}"#, json_value(), 0..6),
            session in proptest::option::of("[A-F0-9]{1,32}"),
        ) {
            let params = serde_json::to_string(&params).expect("a map serializes");
            let frame = match &session {
                Some(s) => format!(r#"{{"method":"X.y","params":{params},"sessionId":"{s}"}}"#),
                None => format!(r#"{{"method":"X.y","params":{params}}}"#),
            };
            let (ends, keys) = both_reads(&frame);
            // `\ud` may start a surrogate escape: left to the scan by keys.
            let maybe_surrogate = params.contains(r"\ud") || params.contains(r"\uD");
            proptest::prop_assert!(
                ends.is_some() == (session.is_some() && !maybe_surrogate),
                "{}", frame
            );
            if ends.is_some() {
                proptest::prop_assert_eq!(ends, keys, "{}", frame);
            }
        }

        /// Any envelope in Chromium's order, with or without a session, and
        /// an extra key anywhere after the params: routed, the event has
        /// the session, method and parsed params the full decoder reads.
        #[test]
        fn any_envelope_with_an_extra_key_routes_as_the_full_decoder_reads_it(
            params in proptest::collection::btree_map(r#"[a-z\\"{}\[\],:]{0,8}"#, json_value(), 0..4),
            session in proptest::option::of("[A-F0-9]{1,8}"),
            extra in proptest::option::of(json_value()),
            extra_last in proptest::bool::ANY,
        ) {
            let params = serde_json::to_string(&params).expect("a map serializes");
            let extra = extra.map(|v| format!(r#","x":{v}"#)).unwrap_or_default();
            let session = session.map(|s| format!(r#","sessionId":"{s}""#)).unwrap_or_default();
            let tail = if extra_last { format!("{session}{extra}") } else { format!("{extra}{session}") };
            let frame = format!(r#"{{"method":"Runtime.consoleAPICalled","params":{params}{tail}}}"#);
            let Ok(Decoded::Event { session_id, method, params }) = decode(&frame) else {
                return Err(proptest::test_runner::TestCaseError::fail(format!("an event: {frame}")));
            };
            let Some(Routed::Event(e)) = routed(&frame) else {
                return Err(proptest::test_runner::TestCaseError::fail(format!("routed: {frame}")));
            };
            proptest::prop_assert_eq!(e.session_id(), session_id.as_ref().map(SessionId::as_str), "{}", frame);
            proptest::prop_assert_eq!(e.method(), method);
            proptest::prop_assert_eq!(e.parse(), Event::parse("Runtime.consoleAPICalled", params.get()), "{}", frame);
        }
    }

    /// A key after the session (a proxy's, say) leaves the frame's session
    /// where it is: read by keys, the event is still the session's.
    #[test]
    fn a_key_after_the_session_keeps_the_event_on_its_session() {
        let opening = r#"{"frameId":"T1","url":"https://a.test/","message":"hi","type":"alert","hasBrowserHandler":false,"defaultPrompt":""}"#;
        for extra in [
            r#""x":{}"#,
            r#""x":{"sessionId":"S9"}"#,
            r#""x":[{}]"#,
            r#""x":1"#,
        ] {
            let frame = format!(
                r#"{{"method":"Page.javascriptDialogOpening","params":{opening},"sessionId":"S1",{extra}}}"#
            );
            let Some(Routed::Event(e)) = routed(&frame) else {
                panic!("an event: {frame}");
            };
            assert_eq!(e.session_id(), Some("S1"), "{frame}");
            assert_eq!(e.params(), opening, "{frame}");
        }
    }

    #[test]
    fn every_prefix_routes_without_panicking() {
        let text = r#"{"method":"Runtime.consoleAPICalled","params":{"type":"error","args":[{"type":"string","value":"x\"y"}]},"sessionId":"S1"}"#;
        for end in 0..=text.len() {
            let _ = decode_routed(text[..end].to_owned().into(), |_| true);
        }
    }
}
