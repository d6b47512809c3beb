//! The outline's lines from the documents read (pure): the line format,
//! what the default outline leaves out, where each frame is stitched in,
//! which lines get refs, and `find`'s lines under their headings.

use super::walk::{ACTIONABLE_ROLES, AxNode, WALK_BUDGET, WALK_MAX_NODES};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Names longer than this are cut (with `…`): a page's text is data, and
/// one paragraph must not eat the outline.
const NAME_MAX_CHARS: usize = 200;
/// Text a person reads beside what they act on (a label, a status, a
/// price) is at most this long (the walker gives a paragraph's text as
/// one); prose is left out of the default outline (`full_text` shows it).
const SHORT_TEXT_CHARS: usize = 60;
/// Past this many lines of elements, a page is large: its short text is
/// left out of the default outline too and its headings are shorter (one
/// line says so), leaving what an agent acts on and navigates by in the
/// fewest tokens; `find` and `full_text` reach the rest.
const TEXT_PAGE_MAX_LINES: usize = 500;
/// On a large page a heading's name is cut at this many characters.
const LARGE_PAGE_HEADING_CHARS: usize = 60;
/// The reading mode (`full_text`) cuts a paragraph only past this many characters.
const TEXT_MAX_CHARS: usize = 4_000;

/// Roles whose line says nothing an agent needs when they have no name:
/// their children take their place.
const WRAPPER_ROLES: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "group",
    "table",
    "list",
    "figure",
    "blockquote",
    "article",
    "tablist",
    "menu",
    "menubar",
    "tree",
    "grid",
    "toolbar",
];
/// Roles whose line is left out even with a name (the name is their
/// content, said by the text and controls inside): their children take
/// their place.
const CONTENT_ROLES: &[&str] = &[
    "paragraph",
    "listitem",
    "LabelText",
    "row",
    "rowgroup",
    "cell",
    "gridcell",
    "columnheader",
    "rowheader",
    "caption",
    "legend",
    "separator",
];

/// One frame's document, as read for the outline.
pub(super) struct Doc {
    pub(super) frame_id: String,
    pub(super) url: String,
    /// Its nodes, or the one line said in its place.
    pub(super) tree: Result<Vec<AxNode>, String>,
    /// Its owner: the parent document's index and the iframe element's key there.
    pub(super) owner: Option<(usize, i64)>,
    /// That iframe element's backend node id (`DOM.getFrameOwner`).
    pub(super) owner_backend: Option<i64>,
    /// Under a frame that could not be read: nowhere to show it.
    pub(super) skipped: bool,
    /// Its walker stopped at [`WALK_MAX_NODES`].
    pub(super) cut: bool,
}

/// A line of the outline that holds a ref.
pub(super) struct RefAt {
    pub(super) doc: usize,
    pub(super) key: i64,
}

/// What [`render`] gives: every line, `f<K>` → frame id, and each ref's node.
pub(super) type Rendered = (Vec<String>, BTreeMap<String, String>, Vec<(String, RefAt)>);

/// Renders the documents (index 0 the top one) into every line of the
/// outline; `next` is the tab's next ref number. Pure: the unit of the line
/// format and of what the default outline leaves out.
pub(super) fn render(docs: &[Doc], next: &mut u64, full_text: bool) -> Rendered {
    let mut r = Renderer::new(docs, next, full_text);
    while let Some(item) = r.next_item() {
        match item {
            Item::Doc { doc, depth } => r.doc(doc, depth),
            Item::Node {
                doc,
                node,
                depth,
                ctx,
            } => r.node(doc, node, depth, ctx),
        }
    }
    r.finish()
}

/// What is left to render, depth first.
enum Item {
    /// A document, at this depth.
    Doc { doc: usize, depth: usize },
    /// One node of a document, at this depth, shown under the node `ctx`
    /// (its index in [`Renderer::names`]).
    Node {
        doc: usize,
        node: usize,
        depth: usize,
        ctx: usize,
    },
}

/// One line as rendered, before a large page is made shorter.
struct Line {
    text: String,
    /// A StaticText line (left out of a large page's default outline).
    is_text: bool,
    /// Its form on a large page, when that differs (a heading).
    compact: Option<String>,
}

/// [`render`]'s state while it walks the documents.
struct Renderer<'a> {
    docs: &'a [Doc],
    next: &'a mut u64,
    full_text: bool,
    /// The documents shown under each iframe element: (document, key) → documents.
    under: HashMap<(usize, i64), Vec<usize>>,
    stack: Vec<Item>,
    /// Documents already shown (each once, whatever the owners say).
    placed: HashSet<usize>,
    /// Frames whose iframe element was not found, still to be shown last.
    unplaced: Vec<usize>,
    /// Each node is walked once, whatever the documents say.
    walked: Vec<Vec<bool>>,
    /// Names of the rendered nodes, for name-repeating text.
    names: Vec<String>,
    /// Each frame's ref prefix (`f<K>`; the top document's is empty).
    prefixes: HashMap<usize, String>,
    frame_refs: BTreeMap<String, String>,
    refs: Vec<(String, RefAt)>,
    lines: Vec<Line>,
    /// Text lines left out as prose.
    prose: usize,
}

impl<'a> Renderer<'a> {
    fn new(docs: &'a [Doc], next: &'a mut u64, full_text: bool) -> Renderer<'a> {
        let mut under: HashMap<(usize, i64), Vec<usize>> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            if let Some(o) = d.owner {
                under.entry(o).or_default().push(i);
            }
        }
        Renderer {
            docs,
            next,
            full_text,
            under,
            stack: vec![Item::Doc { doc: 0, depth: 0 }],
            placed: HashSet::new(),
            unplaced: Vec::new(),
            walked: docs
                .iter()
                .map(|d| vec![false; d.tree.as_ref().map_or(0, Vec::len)])
                .collect(),
            names: vec![String::new()],
            prefixes: HashMap::new(),
            frame_refs: BTreeMap::new(),
            refs: Vec::new(),
            lines: Vec::new(),
            prose: 0,
        }
    }

    /// The next item; when the tree is done, the frames whose owner was
    /// not found (or not shown) come last, each under a line saying so,
    /// unless their parent could not be read.
    fn next_item(&mut self) -> Option<Item> {
        if let Some(item) = self.stack.pop() {
            return Some(item);
        }
        let docs = self.docs;
        if self.unplaced.is_empty() {
            let placed = &self.placed;
            self.unplaced = (1..docs.len())
                .filter(|i| !placed.contains(i) && !docs[*i].skipped)
                .filter(|i| {
                    docs[*i]
                        .owner
                        .is_none_or(|(p, _)| placed.contains(&p) && docs[p].tree.is_ok())
                })
                .rev()
                .collect();
        }
        let i = self.unplaced.pop()?;
        self.push_plain(format!(
            "- Iframe {} [its iframe element was not found]",
            quote(&docs[i].url)
        ));
        Some(Item::Doc { doc: i, depth: 1 })
    }

    fn push_plain(&mut self, text: String) {
        self.lines.push(Line {
            text,
            is_text: false,
            compact: None,
        });
    }

    /// A document: its root node, or the line said in its place.
    fn doc(&mut self, d: usize, depth: usize) {
        if !self.placed.insert(d) {
            return;
        }
        let doc = &self.docs[d];
        match &doc.tree {
            Err(line) => self.push_plain(format!("{}- {line}", indent(depth))),
            Ok(nodes) if !nodes.is_empty() => {
                if doc.cut {
                    // Said first: the end of a cut page is missing.
                    self.push_plain(format!(
                        "{}- [this document is too large to outline whole: the outline stops after {WALK_MAX_NODES} nodes or {} s of reading]",
                        indent(depth),
                        WALK_BUDGET.as_secs_f64()
                    ));
                }
                self.stack.push(Item::Node {
                    doc: d,
                    node: 0,
                    depth,
                    ctx: 0,
                });
            }
            Ok(_) => {}
        }
    }

    /// One node: its line (unless it is left out or passed through to its
    /// children), then the frames under it if it is an iframe, then its children.
    fn node(&mut self, d: usize, i: usize, depth: usize, ctx: usize) {
        let docs = self.docs;
        let Ok(nodes) = &docs[d].tree else { return };
        if std::mem::replace(&mut self.walked[d][i], true) {
            return;
        }
        let n = &nodes[i];
        if self.passes_through(n, ctx) {
            self.push_children(d, n, depth, ctx);
            return;
        }
        if self.left_out(n, ctx) {
            return;
        }
        let (mut text, mut compact) = self.line_of(n, depth);
        if let Some(key) = n
            .key
            .filter(|_| ACTIONABLE_ROLES.contains(&n.role.as_str()))
        {
            let r = format!(" [ref={}]", self.new_ref(d, key));
            text.push_str(&r);
            if let Some(l) = &mut compact {
                l.push_str(&r);
            }
        }
        self.lines.push(Line {
            text,
            is_text: n.role == "StaticText",
            compact,
        });
        // A document's name is its title: text under it is content.
        let shown_name = if n.role == "RootWebArea" {
            String::new()
        } else {
            n.name.clone()
        };
        self.names.push(shown_name);
        let me = self.names.len() - 1;
        if let Some(frames) = n
            .key
            .filter(|_| n.role == "Iframe")
            .and_then(|k| self.under.get(&(d, k)))
        {
            for f in frames.iter().rev() {
                self.stack.push(Item::Doc {
                    doc: *f,
                    depth: depth + 1,
                });
            }
        }
        self.push_children(d, n, depth + 1, me);
    }

    fn push_children(&mut self, d: usize, n: &AxNode, depth: usize, ctx: usize) {
        let len = self.docs[d].tree.as_ref().map_or(0, Vec::len);
        for &c in n.children.iter().rev() {
            if c < len {
                self.stack.push(Item::Node {
                    doc: d,
                    node: c,
                    depth,
                    ctx,
                });
            }
        }
    }

    /// Whether the node's line says nothing its children do not: a wrapper,
    /// a content role, no role, or a closed disclosure's heading (said on
    /// the line it is shown under).
    fn passes_through(&self, n: &AxNode, ctx: usize) -> bool {
        let wrapper = (WRAPPER_ROLES.contains(&n.role.as_str()) && n.name.is_empty())
            || CONTENT_ROLES.contains(&n.role.as_str());
        wrapper || n.role.is_empty() || (n.role == "heading" && self.names[ctx] == n.name)
    }

    /// Whether a text (or an image's alt) is left out with what is under
    /// it: it only repeats the name of the node it is shown under (a
    /// button's label) so says nothing new, or it is prose outside the
    /// reading mode (counted).
    fn left_out(&mut self, n: &AxNode, ctx: usize) -> bool {
        if n.role != "StaticText" && n.role != "image" {
            return false;
        }
        let t = n.name.trim();
        if t.is_empty() || self.names[ctx].contains(t) {
            return true;
        }
        let short = t.chars().count() <= SHORT_TEXT_CHARS;
        if n.role == "StaticText" && !self.full_text && !short {
            self.prose += 1;
            return true;
        }
        false
    }

    /// The node's line, and a heading's shorter form for a large page.
    fn line_of(&self, n: &AxNode, depth: usize) -> (String, Option<String>) {
        let mut line = format!("{}- {}", indent(depth), n.role);
        if !n.name.is_empty() {
            line.push(' ');
            // The reading mode gives whole paragraphs.
            let max = if self.full_text && n.role == "StaticText" {
                TEXT_MAX_CHARS
            } else {
                NAME_MAX_CHARS
            };
            line.push_str(&quote_within(&n.name, max));
        }
        states(n, &mut line, false);
        let compact = (n.role == "heading").then(|| {
            let mut l = format!(
                "{}- heading {}",
                indent(depth),
                quote_within(&n.name, LARGE_PAGE_HEADING_CHARS)
            );
            states(n, &mut l, true);
            l
        });
        (line, compact)
    }

    /// A new ref for the element `key` of document `d`: the tab's next
    /// number, after its frame's prefix (`f<K>`, numbered in the order
    /// frames get their first ref; none for the top document).
    fn new_ref(&mut self, d: usize, key: i64) -> String {
        let k = self.prefixes.keys().filter(|&&p| p != 0).count() + 1;
        let prefix = self
            .prefixes
            .entry(d)
            .or_insert_with(|| {
                if d == 0 {
                    String::new()
                } else {
                    format!("f{k}")
                }
            })
            .clone();
        if d != 0 && !self.frame_refs.contains_key(&prefix) {
            self.frame_refs
                .insert(prefix.clone(), self.docs[d].frame_id.clone());
        }
        *self.next += 1;
        let r = format!("{prefix}e{}", *self.next);
        self.refs.push((r.clone(), RefAt { doc: d, key }));
        r
    }

    /// The lines; on a large page (default outline), what to act on and
    /// navigate by only, headings without their level and cut shorter,
    /// after a line saying how to read the rest.
    fn finish(self) -> Rendered {
        let texts = self.lines.iter().filter(|l| l.is_text).count();
        let large = !self.full_text && self.lines.len() - texts > TEXT_PAGE_MAX_LINES;
        let lines = if large {
            let left_out = texts + self.prose;
            std::iter::once(format!(
                "- [a large page: {left_out} lines of text left out and headings shortened; browser_snapshot with full_text: true gives them whole, find: \"…\" searches them]"
            ))
            .chain(
                self.lines
                    .into_iter()
                    .filter(|l| !l.is_text)
                    .map(|l| l.compact.unwrap_or(l.text)),
            )
            .collect()
        } else {
            self.lines.into_iter().map(|l| l.text).collect()
        };
        (lines, self.frame_refs, self.refs)
    }
}

/// The lines of `lines` whose role or name holds `needle`
/// (case-insensitive), each after the headings it sits under (the last
/// heading of each lower level before it), unindented. Pure.
pub(super) fn find_lines(lines: &[String], needle: &str) -> Vec<String> {
    let needle = needle.to_lowercase();
    // The current heading of each level (1–6), and whether it was shown.
    let mut headings: [Option<(String, bool)>; 6] = Default::default();
    let mut out = Vec::new();
    for line in lines {
        let body = line.trim_start().trim_start_matches("- ");
        let (role, rest) = body.split_once(' ').unwrap_or((body, ""));
        let name = rest
            .strip_prefix('"')
            .and_then(|_| {
                serde_json::Deserializer::from_str(rest)
                    .into_iter::<String>()
                    .next()
            })
            .and_then(Result::ok)
            .unwrap_or_default();
        let level = (role == "heading")
            .then(|| {
                rest.split("[level=")
                    .nth(1)
                    .and_then(|l| l.split(']').next())
                    .and_then(|l| l.parse::<usize>().ok())
            })
            .flatten()
            .map(|l| l.clamp(1, 6));
        // A frame that could not be read, a note of a cut: said whatever
        // is looked for (nothing found there is not "nothing on the page").
        let about_reading = role == "frame" || role.starts_with('[');
        let hit = about_reading
            || role.to_lowercase().contains(&needle)
            || name.to_lowercase().contains(&needle);
        if let Some(l) = level {
            for h in headings.iter_mut().skip(l - 1) {
                *h = None;
            }
            headings[l - 1] = Some((body.to_owned(), hit));
            if hit {
                // Its own headings above it first.
                for h in headings.iter_mut().take(l - 1).flatten() {
                    if !std::mem::replace(&mut h.1, true) {
                        out.push(format!("- {}", h.0));
                    }
                }
                out.push(format!("- {body}"));
            }
            continue;
        }
        if hit {
            for h in headings.iter_mut().flatten() {
                if !std::mem::replace(&mut h.1, true) {
                    out.push(format!("- {}", h.0));
                }
            }
            out.push(format!("- {body}"));
        }
    }
    out
}

/// Deeper levels are shown at this one: a page nesting thousands of
/// levels must not make each line kilobytes of spaces.
const INDENT_MAX_LEVELS: usize = 40;

fn indent(depth: usize) -> String {
    "  ".repeat(depth.min(INDENT_MAX_LEVELS))
}

/// A name or value as the outline quotes it: JSON string syntax (so page
/// text cannot break the line format), cut at [`NAME_MAX_CHARS`].
pub(super) fn quote(s: &str) -> String {
    quote_within(s, NAME_MAX_CHARS)
}

/// [`quote`], cut at `max` characters.
fn quote_within(s: &str, max: usize) -> String {
    let s = s.trim();
    let cut: String = if s.chars().count() > max {
        let mut c: String = s.chars().take(max).collect();
        c.push('…');
        c
    } else {
        s.to_owned()
    };
    serde_json::to_string(&cut).expect("a string serializes")
}

/// `text` (outline lines) with every `[value="…"]` left out: what a
/// person typed into fields while they had the task is theirs (DESIGN "A
/// person at the wheel"). Values are quoted in JSON string syntax, so the
/// closing quote is the first one not escaped.
pub fn without_values(text: &str) -> String {
    const MARK: &str = " [value=\"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let body = &rest[at + MARK.len()..];
        let mut escaped = false;
        let mut end = None;
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        match end {
            Some(i) if body[i + 1..].starts_with(']') => rest = &body[i + 2..],
            // Not a value we wrote: kept as it is.
            _ => {
                out.push_str(MARK);
                rest = body;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Appends the node's value and states: `[checked]`, `[disabled]`,
/// `[expanded]`/`[expanded=false]`, `[selected]`, `[value="…"]`…
fn states(n: &AxNode, line: &mut String, without_level: bool) {
    let truthy = |v: &Value| v == &json!(true) || v == &json!("true");
    for (name, v) in &n.props {
        let s = match name.as_str() {
            "checked" | "pressed" => {
                match v.as_str().unwrap_or(if truthy(v) { "true" } else { "" }) {
                    "true" => format!(" [{name}]"),
                    "mixed" => format!(" [{name}=mixed]"),
                    _ => continue,
                }
            }
            "expanded" => {
                if truthy(v) {
                    " [expanded]".to_owned()
                } else {
                    " [expanded=false]".to_owned()
                }
            }
            "disabled" | "selected" | "required" | "focused" | "readonly" | "multiselectable"
                if truthy(v) =>
            {
                format!(" [{name}]")
            }
            "invalid" if truthy(v) || v.as_str().is_some_and(|s| s != "false") => {
                " [invalid]".to_owned()
            }
            "level" if !v.is_null() && !without_level => format!(" [level={v}]"),
            _ => continue,
        };
        line.push_str(&s);
    }
    if !n.value.is_empty() && n.value != n.name {
        line.push_str(&format!(" [value={}]", quote(&n.value)));
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn values_are_left_out_and_nothing_else() {
        let text = "- textbox \"Name\" [value=\"Ada \\\"the\\\" ]\"] [ref=e1]\n- textbox \"Code\" [focused] [value=\"123\"] [ref=e2]\n- button \"[value=\\\"x\\\"]\" [ref=e3]";
        assert_eq!(
            without_values(text),
            "- textbox \"Name\" [ref=e1]\n- textbox \"Code\" [focused] [ref=e2]\n- button \"[value=\\\"x\\\"]\" [ref=e3]"
        );
        assert_eq!(without_values("- heading \"x\""), "- heading \"x\"");
    }
    use crate::supervisor::act::walk::parse_walk;

    /// A walker reply (`outline.js`): `[parent, role, name, value, states, key]`.
    pub(in crate::supervisor::act) fn walk(nodes: Value) -> Vec<AxNode> {
        parse_walk(&json!({"nodes": nodes, "owners": [], "cut": false})).nodes
    }

    pub(in crate::supervisor::act) fn doc(
        frame_id: &str,
        tree: Result<Vec<AxNode>, String>,
        owner: Option<(usize, i64)>,
    ) -> Doc {
        Doc {
            frame_id: frame_id.into(),
            url: format!("http://{frame_id}/"),
            tree,
            owner,
            owner_backend: None,
            skipped: false,
            cut: false,
        }
    }

    pub(in crate::supervisor::act) fn text(lines: &[String]) -> String {
        lines.join("\n")
    }

    #[test]
    fn the_outline_collapses_wrappers_drops_repeated_text_and_stitches_frames() {
        let top = walk(json!([
            [-1, "RootWebArea", "Shop", "", 0, -1],
            [0, "paragraph", "", "", 0, 0],
            [1, "button", "Pay now", "", 0, 1],
            [2, "StaticText", "Pay now", "", 0, -1],
            [1, "Iframe", "", "", 0, 2],
            [1, "textbox", "Card", "", {"required": true}, 3],
            [1, "StaticText", "Shop", "", 0, -1],
        ]));
        let inner = walk(json!([
            [-1, "RootWebArea", "Pay", "", 0, -1],
            [0, "button", "Confirm", "", 0, 0],
        ]));
        let docs = vec![doc("T", Ok(top), None), doc("F", Ok(inner), Some((0, 2)))];
        let mut next = 0;
        let (lines, frame_refs, refs) = render(&docs, &mut next, false);
        assert_eq!(
            text(&lines),
            "- RootWebArea \"Shop\"\n  - button \"Pay now\" [ref=e1]\n  - Iframe\n    - RootWebArea \"Pay\"\n      - button \"Confirm\" [ref=f1e2]\n  - textbox \"Card\" [required] [ref=e3]\n  - StaticText \"Shop\""
        );
        assert_eq!(frame_refs.get("f1").map(String::as_str), Some("F"));
        assert_eq!(refs.len(), 3);
        assert_eq!((refs[1].1.doc, refs[1].1.key), (1, 0));
    }

    #[test]
    fn prose_is_left_out_unless_the_full_text_is_asked_for() {
        let nodes = walk(json!([
            [-1, "RootWebArea", "Doc", "", 0, -1],
            [0, "link", "vec!", "", 0, 0],
            [
                0,
                "StaticText",
                "The macro is provided for convenient initialization of a vector",
                "",
                0,
                -1
            ],
            [0, "StaticText", "Status: ready", "", 0, -1],
            [0, "StaticText", "x".repeat(300), "", 0, -1],
        ]));
        let docs = vec![doc("T", Ok(nodes), None)];
        let (lean, _, _) = render(&docs, &mut 0, false);
        assert_eq!(
            text(&lean),
            "- RootWebArea \"Doc\"\n  - link \"vec!\" [ref=e1]\n  - StaticText \"Status: ready\""
        );
        let (full, _, _) = render(&docs, &mut 0, true);
        assert_eq!(full.len(), 5, "{}", text(&full));
        assert!(text(&full).contains(&"x".repeat(300)), "not cut at 200");
    }

    #[test]
    fn a_large_page_keeps_what_to_act_on_and_says_what_it_left_out() {
        let mut nodes = vec![
            json!([-1, "RootWebArea", "Docs", "", 0, -1]),
            json!([0, "heading", format!("pub fn push(&mut self, value: T) {}", "x".repeat(80)), "", {"level": 4}, 0]),
            json!([0, "StaticText", "Status: ready", "", 0, -1]),
        ];
        nodes.extend(
            (0..TEXT_PAGE_MAX_LINES).map(|i| json!([0, "link", format!("l{i}"), "", 0, 1 + i])),
        );
        let docs = vec![doc("T", Ok(walk(json!(nodes))), None)];
        let (lines, _, refs) = render(&docs, &mut 0, false);
        assert!(
            lines[0].starts_with("- [a large page: 1 lines of text left out"),
            "{}",
            lines[0]
        );
        assert!(!text(&lines).contains("Status: ready"));
        let heading = lines.iter().find(|l| l.contains("heading")).expect("kept");
        assert!(
            !heading.contains("level") && heading.contains('…'),
            "{heading}"
        );
        assert_eq!(refs.len(), TEXT_PAGE_MAX_LINES);
        // The reading mode keeps all of it.
        let (full, _, _) = render(&docs, &mut 0, true);
        assert!(text(&full).contains("Status: ready") && text(&full).contains("[level=4]"));
        // A small page keeps its short text and levels.
        let small = vec![doc("T", Ok(walk(json!(nodes[..3]))), None)];
        let (lines, _, _) = render(&small, &mut 0, false);
        assert!(text(&lines).contains("Status: ready") && text(&lines).contains("[level=4]"));
    }

    /// Issue 28, defect 6 (and issue 33): a reply naming a node as its own
    /// ancestor, or a parent after itself, is outlined once per node, and a
    /// document owned by itself is not walked forever.
    #[test]
    fn regression_28_6_a_cyclic_tree_is_walked_once() {
        let top = walk(json!([
            [-1, "RootWebArea", "Loop", "", 0, -1],
            [0, "generic", "", "", 0, 0],
            [1, "button", "Go", "", 0, 1],
            [5, "button", "Orphan", "", 0, 2],
            [3, "button", "Under the orphan", "", 0, 3],
        ]));
        let mut a = top.clone();
        // A child list that leads back to the root and to itself.
        a[1].children.push(0);
        a[2].children.push(2);
        let docs = vec![
            doc("T", Ok(a), None),
            doc("F", Err("unreadable".into()), Some((1, 9))),
        ];
        let mut next = 0;
        let (lines, _, refs) = render(&docs, &mut next, false);
        assert_eq!(
            text(&lines).matches("button \"Go\"").count(),
            1,
            "{}",
            text(&lines)
        );
        assert!(!text(&lines).contains("Orphan"), "{}", text(&lines));
        assert_eq!(refs.len(), 1);
    }

    #[test]
    fn find_gives_the_matching_lines_under_their_headings() {
        let lines: Vec<String> = [
            "- RootWebArea \"Doc\"",
            "  - heading \"Methods\" [level=2]",
            "    - heading \"pub fn push\" [level=3]",
            "      - link \"push\" [ref=e1]",
            "    - heading \"pub fn pop\" [level=3]",
            "      - link \"pop\" [ref=e2]",
            "  - heading \"Traits\" [level=2]",
            "    - link \"Push\" [ref=e3]",
            "    - button \"Close\" [ref=e4]",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            find_lines(&lines, "PUSH").join("\n"),
            "- heading \"Methods\" [level=2]\n- heading \"pub fn push\" [level=3]\n- link \"push\" [ref=e1]\n- heading \"Traits\" [level=2]\n- link \"Push\" [ref=e3]"
        );
        assert_eq!(
            find_lines(&lines, "button"),
            [
                "- heading \"Traits\" [level=2]",
                "- button \"Close\" [ref=e4]"
            ]
        );
        assert!(find_lines(&lines, "absent").is_empty());
    }

    #[test]
    fn a_blocked_frame_keeps_its_place_and_hides_the_frames_under_it() {
        let top = walk(json!([
            [-1, "RootWebArea", "Top", "", 0, -1],
            [0, "Iframe", "", "", 0, 5],
        ]));
        let mut g = doc("G", Err("not read".into()), None);
        g.skipped = true;
        let docs = vec![
            doc("T", Ok(top), None),
            doc("F", Err("frame F: a dialog blocks it".into()), Some((0, 5))),
            g,
        ];
        let (lines, frame_refs, refs) = render(&docs, &mut 0, false);
        assert_eq!(
            text(&lines),
            "- RootWebArea \"Top\"\n  - Iframe\n    - frame F: a dialog blocks it"
        );
        assert!(refs.is_empty() && frame_refs.is_empty());
    }
}
