//! Arbitrary bytes off the wire: decoding never panics; the connection's
//! lazy decoder (events read in place) routes every frame the full decoder
//! accepts the same way, with the same method, session and params; and
//! whatever decodes as an event parses (or is reported unparsed) without
//! panicking.

#![no_main]

use cdp_supervisor::cdp::message::{Decoded, Routed, decode_bytes, decode_routed};
use cdp_supervisor::cdp::protocol::{Event, SessionId};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let full = decode_bytes(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let routed = decode_routed(text.to_owned().into(), |_| true);
    let params = match (&full, &routed) {
        (
            Ok(Decoded::Event {
                session_id,
                method,
                params,
            }),
            Ok(Some(Routed::Event(e))),
        ) => {
            assert_eq!(e.method(), method);
            assert_eq!(e.session_id(), session_id.as_ref().map(SessionId::as_str));
            assert_eq!(e.params(), params.get());
            e.params()
        }
        (Ok(Decoded::Reply { id, .. }), Ok(Some(Routed::Reply { id: routed_id, .. }))) => {
            assert_eq!(id, routed_id);
            return;
        }
        // Read in place, an event's params are not validated: the full
        // decoder may refuse what the lazy one passes on.
        (Err(_), Ok(Some(Routed::Event(e)))) => e.params(),
        (Err(_), Err(_)) => return,
        (full, routed) => panic!("the decoders disagree: {full:?} / {routed:?}"),
    };
    if let Some(Routed::Event(e)) = routed.as_ref().ok().and_then(Option::as_ref) {
        let _ = Event::parse(e.method(), params);
    }
    // The same params under every method we act on: the payload of one
    // event must not break the parser of another.
    for m in [
        "Page.javascriptDialogOpening",
        "Page.javascriptDialogClosed",
        "Page.frameAttached",
        "Page.frameNavigated",
        "Page.frameDetached",
        "Target.attachedToTarget",
        "Target.detachedFromTarget",
        "Target.targetInfoChanged",
        "Target.targetDestroyed",
        "Runtime.consoleAPICalled",
        "Runtime.exceptionThrown",
    ] {
        let _ = Event::parse(m, params);
    }
});
