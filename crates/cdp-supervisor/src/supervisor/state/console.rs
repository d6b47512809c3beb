//! Console errors: `console.error` / `console.assert` calls and uncaught
//! exceptions, the last [`CONSOLE_ERRORS_MAX`], each cut at
//! [`CONSOLE_TEXT_MAX_CHARS`].

use super::{CONSOLE_ERRORS_MAX, CONSOLE_TEXT_MAX_CHARS, Now, cut};
use crate::cdp::protocol::{ConsoleApiCalled, ExceptionThrown};
use crate::supervisor::snapshot::{ConsoleError, List, share};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

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
        let error = Arc::new(ConsoleError {
            level,
            text: cut(text, CONSOLE_TEXT_MAX_CHARS),
            url,
            at,
        });
        if self.ring.len() == CONSOLE_ERRORS_MAX {
            self.ring.pop_front();
        }
        self.ring.push_back(error.clone());
        error
    }

    /// The entries, oldest first: the list the last call returned while
    /// no error came since.
    pub fn entries(&mut self) -> List<ConsoleError> {
        share(&mut self.shown, self.ring.iter())
    }
}
