//! The outline given in parts of [`PAGE_MAX_LINES`] lines: the lines not
//! yet given are kept with the tab's refs, and `page_cursor` continues them.

use super::render::quote;
use super::{PAGE_MAX_LINES, Page, PageOutline};
use std::collections::BTreeMap;

/// The part of the last outline not yet given (`page_cursor`).
#[derive(Default)]
pub(super) struct Rest {
    /// The outline's number; a cursor names it.
    pub(super) outline: u64,
    /// Every line of it, and how many were given so far.
    pub(super) lines: Vec<String>,
    pub(super) given: usize,
    pub(super) frame_refs: BTreeMap<String, String>,
    pub(super) blocked_frames: Vec<String>,
    /// The top document's URL when it was read: a cursor does not
    /// continue an outline of a page the tab has left.
    pub(super) url: String,
}

/// The part of `rest` from the line it has given up to, at most
/// `max_lines` lines ([`PAGE_MAX_LINES`], or a shorter first part); when more follow, its last line says how many
/// and the call that continues (the `page_cursor` it also carries).
pub(super) fn next_part(tab: &str, rest: &mut Rest, max_lines: usize) -> PageOutline {
    let max_lines = max_lines.max(2);
    let from = rest.given.min(rest.lines.len());
    let left = rest.lines.len() - from;
    let more = left > max_lines;
    let take = if more { max_lines - 1 } else { left };
    let mut text = rest.lines[from..from + take].join("\n");
    rest.given = from + take;
    let cursor = more.then(|| format!("{tab}/{}/{}", rest.outline, rest.given));
    if let Some(c) = &cursor {
        text.push_str(&format!(
            "\n- [{} more lines follow: call browser_snapshot with page_cursor {}]",
            left - take,
            quote(c)
        ));
    }
    PageOutline {
        text,
        truncated: more,
        cursor,
        frame_refs: rest.frame_refs.clone(),
        lines: take + usize::from(more),
        blocked_frames: rest.blocked_frames.clone(),
    }
}

/// `<tab>/<outline>/<line>` → its parts.
pub(super) fn parse_cursor(cursor: &str) -> Option<(String, u64, usize)> {
    let mut it = cursor.rsplitn(3, '/');
    let given = it.next()?.parse().ok()?;
    let outline = it.next()?.parse().ok()?;
    let tab = it.next().filter(|t| !t.is_empty())?;
    Some((tab.to_owned(), outline, given))
}

/// Why a `page_cursor` cannot be continued; its text is the agent's.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CursorError(pub String);

impl Page {
    /// The next part of the outline `cursor` names (`browser_snapshot`'s
    /// `page_cursor`): the same refs, read no more from the page.
    ///
    /// # Errors
    /// A cursor that is malformed, of another tab, or of an outline older
    /// than the tab's last one (whose refs are gone), or one already
    /// given in full; each says to call `browser_snapshot` for a fresh one.
    pub fn outline_more(&self, cursor: &str) -> Result<PageOutline, CursorError> {
        let fresh = "call browser_snapshot (without page_cursor) for a fresh outline";
        let (tab, outline, given) = parse_cursor(cursor).ok_or_else(|| {
            CursorError(format!(
                "page_cursor {cursor:?} is not one browser_snapshot gave (they look like \"<tab>/<outline>/<line>\"): {fresh}"
            ))
        })?;
        let snap = self.supervisor.snapshot();
        let (current, url) = snap
            .frame_tree
            .top
            .as_ref()
            .map(|t| (t.frame_id.clone(), t.url.to_string()))
            .unwrap_or_default();
        if tab != current {
            return Err(CursorError(format!(
                "page_cursor {cursor:?} is of tab {tab}, not the current tab {current}: select that tab with browser_tabs, or {fresh}"
            )));
        }
        let mut tables = self.refs();
        let t = tables.tabs.get_mut(&tab).ok_or_else(|| {
            CursorError(format!(
                "page_cursor {cursor:?}: this tab has no outline any more; {fresh}"
            ))
        })?;
        if t.rest.outline != outline {
            return Err(CursorError(format!(
                "page_cursor {cursor:?} is of an older outline of this tab (a browser_snapshot since then replaced it and its refs); {fresh}"
            )));
        }
        if t.rest.url != url {
            return Err(CursorError(format!(
                "page_cursor {cursor:?} is of the page this tab has left ({}; it shows {url} now), and so are its refs; {fresh}",
                t.rest.url
            )));
        }
        // A part asked again (a retried call) is given again.
        if given == 0 || given >= t.rest.lines.len() || given > t.rest.given {
            return Err(CursorError(format!(
                "page_cursor {cursor:?} does not continue this outline (it has {} lines); {fresh}",
                t.rest.lines.len()
            )));
        }
        t.rest.given = given;
        Ok(next_part(&tab, &mut t.rest, PAGE_MAX_LINES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::act::render::render;
    use crate::supervisor::act::render::tests::{doc, walk};
    use serde_json::json;

    #[test]
    fn a_long_outline_is_given_in_parts_each_saying_how_to_continue() {
        let mut nodes = vec![json!([-1, "RootWebArea", "Big", "", 0, -1])];
        nodes.extend((0..4500).map(|i| json!([0, "button", format!("b{i}"), "", 0, i])));
        let docs = vec![doc("T", Ok(walk(json!(nodes))), None)];
        // (A large page's default outline adds a line saying it is large.)
        let (lines, _, refs) = render(&docs, &mut 0, true);
        assert_eq!((lines.len(), refs.len()), (4501, 4500));
        let mut rest = Rest {
            outline: 7,
            lines,
            ..Rest::default()
        };
        let first = next_part("TAB", &mut rest, PAGE_MAX_LINES);
        assert!(first.truncated);
        assert_eq!(first.text.lines().count(), PAGE_MAX_LINES);
        assert_eq!(first.cursor.as_deref(), Some("TAB/7/1999"));
        assert!(
            first.text.ends_with(
                "- [2502 more lines follow: call browser_snapshot with page_cursor \"TAB/7/1999\"]"
            ),
            "{}",
            first.text.lines().last().unwrap_or_default()
        );
        assert_eq!(parse_cursor("TAB/7/1999"), Some(("TAB".into(), 7, 1999)));
        let second = next_part("TAB", &mut rest, PAGE_MAX_LINES);
        assert!(second.text.starts_with("  - button \"b1998\""));
        let third = next_part("TAB", &mut rest, PAGE_MAX_LINES);
        assert!(!third.truncated && third.cursor.is_none());
        assert_eq!(third.text.lines().count(), 4501 - 2 * 1999);
        assert!(third.text.ends_with("button \"b4499\" [ref=e4500]"));
        assert_eq!(parse_cursor("nonsense"), None);
    }
}
