//! Console errors: `console.error` / `console.assert` calls and uncaught
//! exceptions, the last [`CONSOLE_ERRORS_MAX`], each one line of at most
//! [`CONSOLE_TEXT_MAX_CHARS`] ([`one_line`]).

use super::{CONSOLE_ERRORS_MAX, CONSOLE_TEXT_MAX_CHARS, Now, ellipsize};
use crate::cdp::protocol::{ConsoleApiCalled, ExceptionThrown};
use crate::supervisor::snapshot::{ConsoleError, List, share};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

/// A console text as an entry shows it: its first non-blank line (an
/// error's `Error: message`, not the stack under it), cut at
/// [`CONSOLE_TEXT_MAX_CHARS`], with `…` where anything was left out. A
/// short one-line text is kept as it is, without a copy.
pub fn one_line(text: String) -> String {
    if text.len() <= CONSOLE_TEXT_MAX_CHARS && !text.contains(['\n', '\r']) {
        return text;
    }
    let first = text
        .lines()
        .map(str::trim_end)
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if first.len() == text.trim_end().len() {
        return ellipsize(first, CONSOLE_TEXT_MAX_CHARS);
    }
    // Lines were left out: marked even when the first one is short.
    ellipsize(&format!("{first}…"), CONSOLE_TEXT_MAX_CHARS)
}

/// The console ring. Its entries are shared with the snapshots and the
/// notices that show them.
#[derive(Clone, Debug, Default)]
pub struct Console {
    ring: VecDeque<Arc<ConsoleError>>,
    /// The ring as the last snapshot showed it.
    shown: List<ConsoleError>,
}

impl Console {
    /// A `Runtime.consoleAPICalled`: the entry to announce, if it is an error.
    pub fn on_api_called(&mut self, c: ConsoleApiCalled, now: Now) -> Option<Arc<ConsoleError>> {
        if !ConsoleApiCalled::is_error(&c.call_type) {
            return None;
        }
        let at = c.timestamp.map(|ms| ms / 1000.0).unwrap_or(now.unix_s);
        Some(self.push(c.call_type, c.text, c.url, at))
    }

    /// A `Runtime.exceptionThrown`: the entry to announce.
    pub fn on_exception(&mut self, e: ExceptionThrown, now: Now) -> Arc<ConsoleError> {
        let d = e.exception_details;
        let text = d
            .exception
            .as_ref()
            .and_then(|x| x.description.clone())
            .unwrap_or(d.text);
        let at = e.timestamp.map(|ms| ms / 1000.0).unwrap_or(now.unix_s);
        self.push(
            "exception".into(),
            text,
            d.url.filter(|u| !u.is_empty()),
            at,
        )
    }

    fn push(
        &mut self,
        level: Cow<'static, str>,
        text: String,
        url: Option<String>,
        at: f64,
    ) -> Arc<ConsoleError> {
        let entry = ConsoleError {
            level,
            text: one_line(text),
            url,
            at,
        };
        // A full ring drops its oldest entry. When nothing else holds that
        // one (no snapshot showed it, no notice carries it), its allocation
        // takes the new entry: a flood of errors allocates no entry.
        let mut oldest = (self.ring.len() == CONSOLE_ERRORS_MAX)
            .then(|| self.ring.pop_front())
            .flatten();
        let error = match oldest.as_mut().and_then(Arc::get_mut) {
            Some(slot) => {
                *slot = entry;
                oldest.expect("the entry just reused")
            }
            None => Arc::new(entry),
        };
        self.ring.push_back(error.clone());
        error
    }

    /// The entries, oldest first: the list the last call returned while
    /// no error came since.
    pub fn entries(&mut self) -> List<ConsoleError> {
        share(&mut self.shown, self.ring.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(c: &mut Console, i: usize) -> Arc<ConsoleError> {
        c.push("error".into(), format!("e{i}"), None, i as f64)
    }

    #[test]
    fn a_full_ring_reuses_its_oldest_entry_only_when_nothing_else_holds_it() {
        let mut c = Console::default();
        for i in 0..CONSOLE_ERRORS_MAX {
            push(&mut c, i);
        }
        // A snapshot shows them: the entries it holds never change under it.
        let shown = c.entries();
        let oldest = Arc::as_ptr(&c.ring[0]);
        let new = push(&mut c, 100);
        assert_ne!(Arc::as_ptr(&new), oldest, "a shown entry is not reused");
        assert_eq!(shown[0].text, "e0");
        assert_eq!(shown.len(), CONSOLE_ERRORS_MAX);
        // An entry no snapshot showed and no notice holds is reused.
        drop(new);
        for i in 0..CONSOLE_ERRORS_MAX {
            push(&mut c, 200 + i);
        }
        let oldest = Arc::as_ptr(&c.ring[0]);
        assert_eq!(c.ring[0].text, "e200");
        let new = push(&mut c, 300);
        assert_eq!(
            Arc::as_ptr(&new),
            oldest,
            "its allocation carries the new one"
        );
        assert_eq!(new.text, "e300");
        assert_eq!(new.at, 300.0);
        // A notice that still holds an entry keeps it too.
        let held = c.ring[0].clone();
        let next = push(&mut c, 301);
        assert_ne!(Arc::as_ptr(&next), Arc::as_ptr(&held));
        assert_eq!(held.text, "e201");
        // The ring is the last CONSOLE_ERRORS_MAX, oldest first, whatever was reused.
        let texts: Vec<String> = c.entries().iter().map(|e| e.text.clone()).collect();
        let want: Vec<String> = (202..250)
            .chain([300, 301])
            .map(|i| format!("e{i}"))
            .collect();
        assert_eq!(texts, want);
    }

    #[test]
    fn an_entry_is_one_short_line() {
        assert_eq!(one_line("boom".into()), "boom");
        assert_eq!(
            one_line("Error: boom\n    at f (http://a/x.js:1:2)\n    at g".into()),
            "Error: boom…"
        );
        assert_eq!(one_line("\n\nsecond\r\nthird".into()), "second…");
        let long = one_line("x".repeat(5_000));
        assert_eq!(long.chars().count(), CONSOLE_TEXT_MAX_CHARS);
        assert!(long.ends_with('…'));
        assert_eq!(one_line("".into()), "");
    }
}
