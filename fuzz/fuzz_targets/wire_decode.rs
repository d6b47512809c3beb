//! Arbitrary bytes off the wire: decoding never panics, and whatever decodes
//! as an event parses (or is reported unparsed) without panicking.

#![no_main]

use cdp_supervisor::cdp::message::{Decoded, decode_bytes};
use cdp_supervisor::cdp::protocol::Event;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Decoded::Event { method, params, .. }) = decode_bytes(data) {
        let _ = Event::parse(&method, params.get());
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
            let _ = Event::parse(m, params.get());
        }
    }
});
