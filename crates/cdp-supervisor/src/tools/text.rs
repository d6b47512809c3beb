//! What the model reads (DESIGN "Acting on the page", "What the model
//! reads"): a tool result's text content, the cheapest faithful rendering of
//! its `structuredContent` for an LLM reader.
//!
//! Most MCP clients hand the model only the text (see the README's MCP
//! section); typed clients, the Python module and the tests read
//! `structuredContent`, which keeps every field DESIGN names. The text is
//! - one line of compact JSON: the result without what is empty (`null`,
//!   `""`, `[]`, `{}`, a flag at its default, `connection: "connected"`) and
//!   without what this session's text already showed and that has not
//!   changed since (the frame tree, the tabs, `frame_refs`; each entry of
//!   the snapshot's lists: console errors, recent dialogs, downloads,
//!   blocked navigations, completed calls);
//! - then the page outline, when the result has one, as its plain lines
//!   (not a JSON string: no escaped quotes and newlines).
//!
//! Never left out: a pending dialog, `page_blocked`, `changes`, an error,
//! a cut outline's `page_cursor`. Nothing twice: a change that the same
//! text shows in full elsewhere (a dialog listed as pending, the dialog just
//! answered, the URL the result names) is given once.
//!
//! A tool error's text is its message, then its structured details (the
//! interrupted call's pending dialogs) as one JSON line.

use super::ToolError;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Parts shown once and again only when they change: the frame tree (only
/// when it has frames below the top: the top is the page itself), the frame
/// refs, and the tabs (only when there are several: one tab is the page).
const SHOWN_WHEN_CHANGED: [&str; 3] = ["frame_tree", "frame_refs", "tabs"];
/// The snapshot's lists, of which only the entries not shown yet are given.
const NEW_ENTRIES: [&str; 5] = [
    "console_errors",
    "recent_dialogs",
    "downloads",
    "blocked_navigations",
    "completed_calls",
];
/// Flags whose `false` is the normal case, left out (`submitted`: no
/// Enter was asked for).
const DEFAULT_FALSE: [&str; 5] = [
    "page_blocked",
    "page_truncated",
    "tabs_truncated",
    "truncated",
    "submitted",
];
/// Entries remembered per list at most: the lists are capped (50 console
/// errors, 20 dialogs…), so past this the memory keeps only the last result's.
const ENTRIES_REMEMBERED: usize = 256;

/// What one MCP session's text has shown, so that its next text can leave
/// out what did not change. Holds digests only (a few KiB at most).
#[derive(Debug, Default)]
pub struct Shown {
    parts: HashMap<&'static str, u64>,
    entries: HashMap<&'static str, HashSet<u64>>,
    /// The page URL the last text gave (its `url`, or `changes.navigated`):
    /// the snapshot that follows a click's navigation need not repeat it.
    url: Option<Value>,
}

impl Shown {
    /// The text content of tool `tool`'s result, and what it showed
    /// remembered for the next one.
    pub fn render(&mut self, tool: &str, result: &Result<Value, ToolError>) -> String {
        match result {
            Ok(v) => self.render_ok(tool, v),
            Err(e) => match &e.structured {
                Some(details) => {
                    let mut d = details.clone();
                    strip_empty(&mut d);
                    slim_dialogs(&mut d);
                    format!("{}\n{}", e.message, d)
                }
                None => e.message.clone(),
            },
        }
    }

    fn render_ok(&mut self, tool: &str, v: &Value) -> String {
        let mut v = v.clone();
        let page = match v.as_object_mut().and_then(|o| o.shift_remove("page")) {
            Some(Value::String(p)) => Some(p),
            _ => None,
        };
        self.leave_out_shown(tool, &mut v);
        if let Some(s) = v.get_mut("snapshot") {
            self.leave_out_shown(tool, s);
            strip_empty(s);
            slim_dialogs(s);
        }
        strip_empty(&mut v);
        slim_dialogs(&mut v);
        // A navigation is a change, always said: once `url` stands for
        // `changes.navigated`, it stays even when the last text gave it.
        let navigated = v
            .get("changes")
            .is_some_and(|c| c.get("navigated").is_some());
        once(&mut v);
        if !navigated {
            self.same_url(&mut v);
        } else if let Some(u) = v.get("url").cloned() {
            self.url = Some(u);
        }
        // The outline's first line names the document by its title.
        if let (Some(p), Some(Value::String(title))) = (&page, v.get("title"))
            && names_title(p, title)
            && let Some(o) = v.as_object_mut()
        {
            o.shift_remove("title");
        }
        let mut text = v.to_string();
        if let Some(p) = page.filter(|p| !p.is_empty()) {
            text.push('\n');
            text.push_str(&p);
        }
        text
    }

    /// Leaves out `url` when the last text gave this same URL (a snapshot
    /// after the click whose `changes.navigated` named it); remembers the
    /// URL this text gives.
    fn same_url(&mut self, v: &mut Value) {
        let Some(obj) = v.as_object_mut() else {
            return;
        };
        let now = obj
            .get("url")
            .or_else(|| obj.get("changes").and_then(|c| c.get("navigated")))
            .cloned();
        if now.is_some() && now == self.url && obj.get("changes").is_none() {
            obj.shift_remove("url");
        }
        if now.is_some() {
            self.url = now;
        }
    }

    /// Leaves out of `v` the parts and list entries this session's text
    /// showed already, unchanged; remembers what `v` shows.
    fn leave_out_shown(&mut self, tool: &str, v: &mut Value) {
        let Some(obj) = v.as_object_mut() else {
            return;
        };
        for key in SHOWN_WHEN_CHANGED {
            // browser_tabs is asked for its tabs: they are its answer.
            if key == "tabs" && tool == "browser_tabs" {
                continue;
            }
            let Some(part) = obj.get(key) else { continue };
            let d = digest(part);
            let says_nothing = match key {
                "frame_tree" => part
                    .get("children")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty),
                "tabs" => part.as_array().is_none_or(|t| t.len() <= 1),
                _ => is_empty(part),
            };
            if says_nothing || self.parts.get(key) == Some(&d) {
                obj.shift_remove(key);
            }
            self.parts.insert(key, d);
        }
        // The dialog just answered is shown whole here: not again in the
        // next snapshot's recent_dialogs.
        if let Some(d) = obj.get("answered") {
            let d = entry_digest("recent_dialogs", d);
            self.entries.entry("recent_dialogs").or_default().insert(d);
        }
        for key in NEW_ENTRIES {
            let Some(Value::Array(items)) = obj.get_mut(key) else {
                continue;
            };
            let seen = self.entries.entry(key).or_default();
            let now: Vec<u64> = items.iter().map(|i| entry_digest(key, i)).collect();
            let mut k = now.iter();
            items.retain(|_| !seen.contains(k.next().expect("one digest per entry")));
            if seen.len() + now.len() > ENTRIES_REMEMBERED {
                seen.clear();
            }
            seen.extend(now);
        }
    }
}

/// A list entry's identity: a completed call's id (a snapshot lists it
/// again after `browser_dialog` handed it out), a closed dialog's id (the
/// dialog `browser_dialog` answered is the one `recent_dialogs` lists next),
/// else all of it (a download whose state moved is shown again).
fn entry_digest(key: &str, entry: &Value) -> u64 {
    match (key, entry.get("call_id"), entry.get("id")) {
        ("completed_calls", Some(id), _) | ("recent_dialogs", _, Some(id)) => digest(id),
        _ => digest(entry),
    }
}

/// Whether the outline's first line is its document named `title`.
fn names_title(page: &str, title: &str) -> bool {
    page.lines()
        .next()
        .and_then(|l| l.strip_prefix("- RootWebArea \""))
        .and_then(|l| l.strip_suffix('"'))
        == Some(title)
}

fn digest(v: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Leaves out a result's empty top-level fields and its flags at their
/// default. Not deeper: a CDP reply (`result`) is given as Chromium sent it.
fn strip_empty(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    obj.retain(|k, x| {
        let default = (DEFAULT_FALSE.contains(&k.as_str()) && *x == Value::Bool(false))
            || (k == "connection" && x == "connected");
        k == "result" || !(is_empty(x) || default)
    });
    if let Some(Value::Object(tree)) = obj.get_mut("frame_tree") {
        tree.retain(|k, x| !(k == "truncated" && *x == Value::Bool(false)));
    }
}

/// A dialog's fields at their usual value (no default text, answerable),
/// unknown ones (`null`), its frame id when it is its tab's (a top
/// document's) and its Unix times left out, wherever dialogs are listed.
fn slim_dialogs(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    let slim = |d: &mut Value| {
        if let Some(d) = d.as_object_mut() {
            // A dialog of its tab's top document: its frame id is the tab's.
            let top = d.get("frame_id").is_some() && d.get("frame_id") == d.get("target_id");
            // Unix times say when to a program, nothing to a reader (the
            // structured result keeps them).
            d.retain(|k, x| {
                !(x.is_null()
                    || (k == "default_prompt" && x == "")
                    || (k == "answerable" && *x == Value::Bool(true))
                    || (k == "frame_id" && top)
                    || k == "opened_at"
                    || k == "closed_at")
            });
        }
    };
    for key in ["pending_dialogs", "recent_dialogs"] {
        if let Some(Value::Array(ds)) = obj.get_mut(key) {
            ds.iter_mut().for_each(slim);
        }
    }
    if let Some(d) = obj.get_mut("answered") {
        slim(d);
    }
}

/// Nothing twice: `changes` entries that the same result shows in full
/// elsewhere are left out of `changes` (and `changes` when nothing is left).
fn once(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    let ids = |key: &str| -> Vec<Value> {
        match obj.get(key) {
            Some(Value::Array(ds)) => ds.iter().filter_map(|d| d.get("id").cloned()).collect(),
            Some(d @ Value::Object(_)) => d.get("id").cloned().into_iter().collect(),
            _ => Vec::new(),
        }
    };
    let pending = ids("pending_dialogs");
    let closed: Vec<Value> = ids("recent_dialogs")
        .into_iter()
        .chain(ids("answered"))
        .collect();
    let url = obj.get("url").cloned();
    let blocked = obj.get("blocked_navigations").cloned();
    let Some(Value::Object(changes)) = obj.get_mut("changes") else {
        return;
    };
    let drop_ids = |changes: &mut Map<String, Value>, key: &str, known: &[Value]| {
        if let Some(Value::Array(list)) = changes.get_mut(key) {
            list.retain(|c| !c.get("id").is_some_and(|id| known.contains(id)));
        }
    };
    let shown: Vec<Value> = pending.iter().chain(&closed).cloned().collect();
    drop_ids(changes, "dialogs_opened", &shown);
    drop_ids(changes, "dialogs_closed", &closed);
    if url.is_some() && changes.get("navigated") == url.as_ref() {
        changes.shift_remove("navigated");
    }
    if let (Some(Value::Array(shown)), Some(Value::Array(list))) =
        (blocked, changes.get_mut("blocked_navigations"))
    {
        list.retain(|b| !shown.contains(b));
    }
    changes.retain(|_, x| !is_empty(x));
    if changes.is_empty() {
        obj.shift_remove("changes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot() -> Value {
        json!({
            "url": "http://a.test/", "title": "A", "event_seq": 7,
            "pending_dialogs": [], "recent_dialogs": [], "console_errors": [],
            "frame_tree": {"top": {"frame_id": "T", "url": "http://a.test/", "origin": "http://a.test"},
                           "children": [], "truncated": false},
            "page_blocked": false, "connection": "connected",
            "tabs": [{"target_id": "T", "url": "http://a.test/", "title": "A", "current": true,
                      "pending_dialogs": 0, "crashed": false}],
            "tabs_truncated": false, "completed_calls": [], "blocked_navigations": [], "downloads": [],
            "page": "- RootWebArea \"A\"\n  - button \"Go\" [ref=e1]",
            "page_truncated": false, "frame_refs": {}
        })
    }

    #[test]
    fn a_plain_snapshot_is_its_url_and_outline_lines_whose_root_names_the_title() {
        let mut shown = Shown::default();
        let text = shown.render("browser_snapshot", &Ok(snapshot()));
        assert_eq!(
            text,
            "{\"url\":\"http://a.test/\",\"event_seq\":7}\n- RootWebArea \"A\"\n  - button \"Go\" [ref=e1]"
        );
    }

    #[test]
    fn a_pending_dialog_page_blocked_changes_and_the_cursor_are_always_there() {
        let mut shown = Shown::default();
        let mut s = snapshot();
        s["pending_dialogs"] = json!([{"id": "d-2", "type": "confirm", "message": "Pay?",
            "default_prompt": "", "opened_at": 1.5, "frame_id": "T", "url": "http://a.test/",
            "answerable": true, "target_id": "T"}]);
        s["page_blocked"] = json!(true);
        s["page_truncated"] = json!(true);
        s["page_cursor"] = json!("c1.2000");
        s["changes"] = json!({"dialogs_opened": [{"id": "d-2", "type": "confirm", "message": "Pay?"}],
                              "navigated": "http://a.test/", "tabs_opened": [{"target_id": "U"}]});
        for _ in 0..2 {
            let text = shown.render("browser_snapshot", &Ok(s.clone()));
            let line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            assert_eq!(line["pending_dialogs"][0]["message"], "Pay?", "{text}");
            assert!(line["pending_dialogs"][0].get("default_prompt").is_none());
            assert_eq!(line["page_blocked"], true);
            assert_eq!(line["page_truncated"], true);
            assert_eq!(line["page_cursor"], "c1.2000");
            // The opened dialog is the pending one, the URL is the result's own: once.
            assert_eq!(
                line["changes"],
                json!({"tabs_opened": [{"target_id": "U"}]})
            );
        }
    }

    #[test]
    fn unchanged_parts_and_entries_already_shown_are_left_out() {
        let mut shown = Shown::default();
        let mut s = snapshot();
        s["frame_tree"]["children"] = json!([{"frame_id": "F", "url": "http://b.test/",
            "origin": "http://b.test", "parent_frame_id": "T", "is_oopif": true}]);
        s["frame_refs"] = json!({"f1": "F"});
        s["console_errors"] = json!([{"level": "error", "text": "boom"}]);
        let first = shown.render("browser_snapshot", &Ok(s.clone()));
        assert!(
            first.contains("\"frame_tree\"") && first.contains("boom"),
            "{first}"
        );
        assert!(first.contains("\"frame_refs\""), "{first}");
        let second = shown.render("browser_snapshot", &Ok(s.clone()));
        assert!(
            !second.contains("frame_tree") && !second.contains("boom"),
            "{second}"
        );
        assert!(!second.contains("\"url\""), "the same url again: {second}");
        assert!(!second.contains("frame_refs"), "{second}");
        s["console_errors"] =
            json!([{"level": "error", "text": "boom"}, {"level": "error", "text": "bang"}]);
        let third = shown.render("browser_snapshot", &Ok(s));
        assert!(third.contains("bang") && !third.contains("boom"), "{third}");
    }

    #[test]
    fn browser_tabs_always_shows_its_tabs_and_errors_keep_their_details() {
        let mut shown = Shown::default();
        let tabs = json!({"tabs": [{"target_id": "T"}, {"target_id": "U"}], "tabs_truncated": false,
                          "current_target_id": "T", "pending_dialogs": []});
        for _ in 0..2 {
            let text = shown.render("browser_tabs", &Ok(tabs.clone()));
            assert!(text.contains("\"U\""), "{text}");
        }
        let e = ToolError {
            message: "browser_click has not completed".into(),
            structured: Some(json!({"interrupted_by_dialog": true, "call_id": "c-1",
                "method": "browser_click", "pending_dialogs": [{"id": "d-1", "type": "alert",
                "message": "Hi", "default_prompt": "", "answerable": true}]})),
        };
        let text = shown.render("browser_click", &Err(e));
        assert!(
            text.starts_with("browser_click has not completed\n{"),
            "{text}"
        );
        assert!(
            text.contains("\"message\":\"Hi\"") && text.contains("c-1"),
            "{text}"
        );
        // A CDP reply is given as Chromium sent it, empty fields included.
        let text = shown.render("browser_cdp", &Ok(json!({"result": {"value": ""}})));
        assert_eq!(text, "{\"result\":{\"value\":\"\"}}");
    }
}
