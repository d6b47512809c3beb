//! Acting on the page (DESIGN "Acting on the page"): the current tab's
//! outline with element refs, and the actions on those refs through real
//! input.
//!
//! Both are read at call time (I/O, like [`Supervisor::live_page`]), not in
//! the pure core. The outline is read in each frame's document by a walker
//! (`outline.js`) run in an isolated world of that frame
//! (`Page.createIsolatedWorld`, then `Runtime.callFunctionOn`): it sees what
//! a person sees (nothing `display:none`, `visibility:hidden`,
//! `aria-hidden`, off-canvas or collapsed) and gives Chromium's role names.
//! On a page of 60,000 accessibility nodes it answers in well under a
//! second, where `Accessibility.getFullAXTree` takes about three and sends
//! 20 MB. Each frame is read with its own deadline directly on the
//! connection (a frame a dialog blocks never answers) and stitched under its
//! owner `Iframe` line (`DOM.getFrameOwner` on the parent's session, handed
//! to the parent's walker). An action finds its element again in that
//! world, then hands its dispatch (the only part a dialog can block) to
//! [`Supervisor::interruptible`], so a click that opens `confirm()` is an
//! interrupted call delivered once.
//!
//! Refs are kept per tab until that tab's next outline ([`RefTables`]);
//! their numbers grow across outlines, so a ref from an older one is never
//! silently taken for a node of the new one. The whole outline is rendered
//! at once and given in parts of [`PAGE_MAX_LINES`]; the parts not yet
//! given are kept with the refs for `page_cursor`.

use crate::cdp::connection::{CommandError, Connection};
use crate::cdp::protocol::{DialogType, SessionId};
use crate::supervisor::driver::{CallOutcome, CdpCallError, Supervisor};
use crate::supervisor::snapshot::{FrameTreeView, PendingDialog, Snapshot};
use crate::supervisor::state::Target;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// DESIGN: each part of the outline has at most 2,000 lines
/// (`page_truncated`, `page_cursor`), its last one saying how to continue.
pub const PAGE_MAX_LINES: usize = 2_000;
/// The most nodes one frame's walker returns: a page of millions of
/// elements is cut there (said in the outline) rather than read for minutes.
const WALK_MAX_NODES: usize = 100_000;
/// The longest one frame's walker walks: a page of hundreds of thousands of
/// elements is cut there (said in the outline), well within
/// [`TREE_READ_TIMEOUT`] so that what was read is still given.
const WALK_BUDGET: Duration = Duration::from_millis(2_500);
/// Each read of the outline or of an action (one frame's owner, a box): a
/// frame a dialog blocks never answers, and the snapshot must not wait on it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(1);
/// Each read of an action (the element, its box, the hit test): longer
/// than [`READ_TIMEOUT`], because a busy renderer on a loaded machine
/// answers late and a click that fails for it is one the agent must redo;
/// an action on a frame a known dialog blocks is refused before any read.
pub const ACT_READ_TIMEOUT: Duration = Duration::from_secs(3);
/// Reading one frame's document: a page of tens of thousands of elements
/// takes a good part of a second on a loaded machine, so this read gets
/// longer; a frame a known dialog blocks is not asked at all
/// ([`blocked_frames`]).
pub const TREE_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Reads of the outline: a dialog opening during one starts it again
/// (without the frame it blocks); the last one is not raced.
const OUTLINE_ATTEMPTS: u32 = 3;
/// An action's dispatch, before it counts as interrupted or timed out.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(10);
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
/// The walker, run in each frame's isolated world.
const WALKER: &str = include_str!("outline.js");
/// The isolated world the walker and the actions' lookups run in.
const WORLD_NAME: &str = "cdp-supervisor";

/// Chromium's roles an agent acts on: each gets a ref (and the walker
/// lists them wherever they are, see `outline.js`).
const ACTIONABLE_ROLES: &[&str] = &[
    "button",
    "checkbox",
    "combobox",
    "link",
    "listbox",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "radio",
    "searchbox",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "textbox",
    "ToggleButton",
    "treeitem",
    "DisclosureTriangle",
    "ColorWell",
];
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

/// One iframe element between a node's frame and the top frame that is an
/// OOPIF boundary: its box offsets the node's coordinates.
#[derive(Clone, Debug)]
struct Owner {
    /// The session of the document holding the iframe element.
    session: SessionId,
    /// The iframe element there.
    backend_node_id: i64,
}

/// What a ref points at: an element the walker kept in its frame's world.
#[derive(Clone, Debug)]
struct NodeRef {
    /// The frame whose document holds the node.
    frame_id: String,
    /// The session that reaches that document (the page's, or an OOPIF's).
    session: SessionId,
    /// The isolated world's execution context there.
    world: i64,
    /// The outline's number there (`__cdpSupervisor.walk_no`) and the element's
    /// index in it.
    walk_no: u64,
    key: i64,
    /// Filled in when the ref is resolved for an action (`DOM.describeNode`).
    backend_node_id: i64,
    /// The OOPIF iframe elements above it, innermost first.
    owners: Vec<Owner>,
}

/// The part of the last outline not yet given (`page_cursor`).
#[derive(Default)]
struct Rest {
    /// The outline's number; a cursor names it.
    outline: u64,
    /// Every line of it, and how many were given so far.
    lines: Vec<String>,
    given: usize,
    frame_refs: BTreeMap<String, String>,
    blocked_frames: Vec<String>,
    /// The top document's URL when it was read: a cursor does not
    /// continue an outline of a page the tab has left.
    url: String,
}

#[derive(Default)]
struct TabRefs {
    /// The next ref number: numbers never repeat within a tab.
    next: u64,
    /// The first number of the last outline: smaller ones are from older outlines.
    first_of_last: u64,
    nodes: HashMap<String, NodeRef>,
    /// Each frame's isolated world: (session, execution context id).
    worlds: HashMap<String, (SessionId, i64)>,
    /// Frames whose last walk got no answer in time (still running there).
    busy: HashSet<String>,
    /// Outlines read of this tab, for `walk_no` and cursors.
    outlines: u64,
    rest: Rest,
}

/// Per tab (target id), the refs of its last outline.
#[derive(Default)]
pub struct RefTables {
    tabs: HashMap<String, TabRefs>,
}

impl RefTables {
    /// Forgets the refs of every tab not in `live` (closed tabs): the
    /// tables hold no more than the tabs that are open.
    fn keep_only<'a>(&mut self, live: impl Iterator<Item = &'a str> + Clone) {
        self.tabs
            .retain(|id, _| live.clone().any(|l| l == id.as_str()));
    }
}

/// The outline as `browser_snapshot` gives it: one part of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageOutline {
    /// One node a line (`- role "name" [state…] [ref=eN]`), two spaces of indent per level.
    pub text: String,
    /// More lines follow (`cursor` continues).
    pub truncated: bool,
    /// The `page_cursor` that gives the next part, when `truncated`.
    pub cursor: Option<String>,
    /// `f<K>` → frame id, for the frames whose nodes have refs.
    pub frame_refs: BTreeMap<String, String>,
    /// How many lines the text has.
    pub lines: usize,
    /// The frames it could not read because a dialog blocks them (or one
    /// we never saw: `page_blocked`), sorted; see
    /// [`Supervisor::outline_agrees`].
    pub blocked_frames: Vec<String>,
}

/// What the outline shows of a page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OutlineMode {
    /// What a person acts on or navigates by, with short text beside it.
    #[default]
    Default,
    /// Every visible text too (a reading mode).
    FullText,
    /// Only the nodes whose role or name holds this text (case-insensitive),
    /// each under the headings it sits in.
    Find(String),
}

/// Why an action was not done; its text is the agent's.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    /// The ref is not in the tab's last outline.
    #[error("{0}")]
    Stale(String),
    /// The element cannot take the action (covered, zero-sized, detached, not a select…).
    #[error("{0}")]
    Element(String),
    /// The call itself failed.
    #[error(transparent)]
    Call(#[from] CdpCallError),
}

/// One node as the walker read it.
#[derive(Clone, Debug, Default)]
struct AxNode {
    role: String,
    name: String,
    value: String,
    props: Vec<(String, Value)>,
    children: Vec<usize>,
    /// Its element's index in the walker's world (`None` for text).
    key: Option<i64>,
}

/// A frame's walk: its nodes (index 0 the root) and, for each iframe
/// element it was given, that element's key (`None` when not shown).
#[derive(Debug, Default)]
struct Walk {
    nodes: Vec<AxNode>,
    owners: Vec<Option<i64>>,
    /// The walker stopped at its node limit.
    cut: bool,
}

/// Reads the walker's reply (`{nodes, owners, cut}`, see `outline.js`).
/// Nodes whose parent is not an earlier node are dropped: the tree is a
/// tree whatever the reply says.
fn parse_walk(v: &Value) -> Walk {
    let mut nodes: Vec<AxNode> = Vec::new();
    for n in v
        .get("nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(a) = n.as_array() else { continue };
        let parent = a.first().and_then(Value::as_i64).unwrap_or(-1);
        if !nodes.is_empty() && !(0..nodes.len() as i64).contains(&parent) {
            continue;
        }
        let text = |i: usize| {
            a.get(i)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_default()
        };
        let states = a.get(4).and_then(Value::as_object);
        let node = AxNode {
            role: text(1),
            name: text(2),
            value: text(3),
            props: states
                .map(|s| s.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
            key: a.get(5).and_then(Value::as_i64).filter(|k| *k >= 0),
            children: Vec::new(),
        };
        let me = nodes.len();
        if me > 0 {
            nodes[parent as usize].children.push(me);
        }
        nodes.push(node);
    }
    Walk {
        nodes,
        owners: v
            .get("owners")
            .and_then(Value::as_array)
            .map(|o| o.iter().map(|k| k.as_i64().filter(|k| *k >= 0)).collect())
            .unwrap_or_default(),
        cut: v.get("cut").and_then(Value::as_bool).unwrap_or(false),
    }
}

/// One frame's document, as read for the outline.
struct Doc {
    frame_id: String,
    url: String,
    /// Its nodes, or the one line said in its place.
    tree: Result<Vec<AxNode>, String>,
    /// Its owner: the parent document's index and the iframe element's key there.
    owner: Option<(usize, i64)>,
    /// That iframe element's backend node id (`DOM.getFrameOwner`).
    owner_backend: Option<i64>,
    /// Under a frame that could not be read: nowhere to show it.
    skipped: bool,
    /// Its walker stopped at [`WALK_MAX_NODES`].
    cut: bool,
}

/// A line of the outline that holds a ref.
struct RefAt {
    doc: usize,
    key: i64,
}

/// What [`render`] gives: every line, `f<K>` → frame id, and each ref's node.
type Rendered = (Vec<String>, BTreeMap<String, String>, Vec<(String, RefAt)>);

/// Renders the documents (index 0 the top one) into every line of the
/// outline; `next` is the tab's next ref number. Pure: the unit of the line
/// format and of what the default outline leaves out.
fn render(docs: &[Doc], next: &mut u64, full_text: bool) -> Rendered {
    enum Item {
        Doc(usize, usize),
        Node(usize, usize, usize, usize),
    }
    let mut under: HashMap<(usize, i64), Vec<usize>> = HashMap::new();
    for (i, d) in docs.iter().enumerate() {
        if let Some(o) = d.owner {
            under.entry(o).or_default().push(i);
        }
    }
    let mut frame_refs = BTreeMap::new();
    let mut refs = Vec::new();
    let mut prefixes: HashMap<usize, String> = HashMap::new();
    let mut placed: HashSet<usize> = HashSet::new();
    // Names of the rendered nodes, for name-repeating text: each stack
    // item holds the index of the node it is shown under.
    let mut names: Vec<String> = vec![String::new()];
    let mut stack = vec![Item::Doc(0, 0)];
    let mut pending_unplaced: Vec<usize> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    // Whether each line is a StaticText one, and its form on a large page
    // when that differs.
    let mut is_text: Vec<bool> = Vec::new();
    let mut compact: Vec<Option<String>> = Vec::new();
    // Text lines left out as prose.
    let mut prose = 0;
    // Each node is walked once, whatever the documents say.
    let mut walked: Vec<Vec<bool>> = docs
        .iter()
        .map(|d| vec![false; d.tree.as_ref().map_or(0, Vec::len)])
        .collect();
    loop {
        let Some(item) = stack.pop() else {
            // Frames whose owner was not found (or not shown) come last,
            // unless their parent could not be read.
            if pending_unplaced.is_empty() {
                pending_unplaced = (1..docs.len())
                    .filter(|i| !placed.contains(i) && !docs[*i].skipped)
                    .filter(|i| {
                        docs[*i]
                            .owner
                            .is_none_or(|(p, _)| placed.contains(&p) && docs[p].tree.is_ok())
                    })
                    .rev()
                    .collect();
                if pending_unplaced.is_empty() {
                    break;
                }
            }
            let i = pending_unplaced.pop().expect("not empty");
            is_text.push(false);
            compact.push(None);
            lines.push(format!(
                "- Iframe {} [its iframe element was not found]",
                quote(&docs[i].url)
            ));
            stack.push(Item::Doc(i, 1));
            continue;
        };
        match item {
            Item::Doc(d, depth) => {
                if !placed.insert(d) {
                    continue;
                }
                match &docs[d].tree {
                    Err(line) => {
                        is_text.push(false);
                        compact.push(None);
                        lines.push(format!("{}- {line}", indent(depth)));
                    }
                    Ok(nodes) if !nodes.is_empty() => {
                        if docs[d].cut {
                            // Said first: the end of a cut page is missing.
                            is_text.push(false);
                            compact.push(None);
                            lines.push(format!(
                                "{}- [this document is too large to outline whole: the outline stops after {WALK_MAX_NODES} nodes or {} s of reading]",
                                indent(depth),
                                WALK_BUDGET.as_secs_f64()
                            ));
                        }
                        stack.push(Item::Node(d, 0, depth, 0));
                    }
                    Ok(_) => {}
                }
            }
            Item::Node(d, i, depth, ctx) => {
                let Ok(nodes) = &docs[d].tree else { continue };
                if std::mem::replace(&mut walked[d][i], true) {
                    continue;
                }
                let n = &nodes[i];
                let push_children = |stack: &mut Vec<Item>, depth: usize, ctx: usize| {
                    for &c in n.children.iter().rev() {
                        if c < nodes.len() {
                            stack.push(Item::Node(d, c, depth, ctx));
                        }
                    }
                };
                let wrapper = (WRAPPER_ROLES.contains(&n.role.as_str()) && n.name.is_empty())
                    || CONTENT_ROLES.contains(&n.role.as_str());
                if wrapper || n.role.is_empty() {
                    push_children(&mut stack, depth, ctx);
                    continue;
                }
                if n.role == "heading" && names[ctx] == n.name {
                    // A closed disclosure's heading, said on its line.
                    push_children(&mut stack, depth, ctx);
                    continue;
                }
                if n.role == "StaticText" || n.role == "image" {
                    // Text (or an image's alt) that only repeats the name
                    // of the node it is shown under (a button's label)
                    // says nothing new.
                    let t = n.name.trim();
                    if t.is_empty() || names[ctx].contains(t) {
                        continue;
                    }
                    // Prose, and text inside it, only in the reading mode.
                    let short = t.chars().count() <= SHORT_TEXT_CHARS;
                    if n.role == "StaticText" && !full_text && !short {
                        prose += 1;
                        continue;
                    }
                }
                let mut line = format!("{}- {}", indent(depth), n.role);
                if !n.name.is_empty() {
                    line.push(' ');
                    // The reading mode gives whole paragraphs.
                    let max = if full_text && n.role == "StaticText" {
                        TEXT_MAX_CHARS
                    } else {
                        NAME_MAX_CHARS
                    };
                    line.push_str(&quote_within(&n.name, max));
                }
                states(n, &mut line, false);
                // On a large page a heading says less (see below).
                let mut short = (n.role == "heading").then(|| {
                    let mut l = format!(
                        "{}- heading {}",
                        indent(depth),
                        quote_within(&n.name, LARGE_PAGE_HEADING_CHARS)
                    );
                    states(n, &mut l, true);
                    l
                });
                if let Some(key) = n
                    .key
                    .filter(|_| ACTIONABLE_ROLES.contains(&n.role.as_str()))
                {
                    let k = prefixes.keys().filter(|&&p| p != 0).count() + 1;
                    let prefix = prefixes
                        .entry(d)
                        .or_insert_with(|| {
                            if d == 0 {
                                String::new()
                            } else {
                                format!("f{k}")
                            }
                        })
                        .clone();
                    if d != 0 && !frame_refs.contains_key(&prefix) {
                        frame_refs.insert(prefix.clone(), docs[d].frame_id.clone());
                    }
                    *next += 1;
                    let r = format!("{prefix}e{}", *next);
                    line.push_str(&format!(" [ref={r}]"));
                    if let Some(l) = &mut short {
                        l.push_str(&format!(" [ref={r}]"));
                    }
                    refs.push((r, RefAt { doc: d, key }));
                }
                is_text.push(n.role == "StaticText");
                compact.push(short);
                lines.push(line);
                // A document's name is its title: text under it is content.
                let shown_name = if n.role == "RootWebArea" {
                    String::new()
                } else {
                    n.name.clone()
                };
                names.push(shown_name);
                let me = names.len() - 1;
                if let Some(frames) = n
                    .key
                    .filter(|_| n.role == "Iframe")
                    .and_then(|k| under.get(&(d, k)))
                {
                    for f in frames.iter().rev() {
                        stack.push(Item::Doc(*f, depth + 1));
                    }
                }
                push_children(&mut stack, depth + 1, me);
            }
        }
    }
    let texts = is_text.iter().filter(|t| **t).count();
    if !full_text && lines.len() - texts > TEXT_PAGE_MAX_LINES {
        let texts = texts + prose;
        // A large page: what to act on and navigate by, headings without
        // their level and cut shorter, and a line saying how to read the rest.
        let mut kept = vec![format!(
            "- [a large page: {texts} lines of text left out and headings shortened; browser_snapshot with full_text: true gives them whole, find: \"…\" searches them]"
        )];
        kept.extend(
            lines
                .into_iter()
                .zip(is_text.into_iter().zip(compact))
                .filter(|(_, (t, _))| !t)
                .map(|(l, (_, c))| c.unwrap_or(l)),
        );
        lines = kept;
    }
    (lines, frame_refs, refs)
}

/// The lines of `lines` whose role or name holds `needle`
/// (case-insensitive), each after the headings it sits under (the last
/// heading of each lower level before it), unindented. Pure.
fn find_lines(lines: &[String], needle: &str) -> Vec<String> {
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
fn quote(s: &str) -> String {
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

/// A frame of the current tab as the outline needs it.
struct FrameInfo {
    frame_id: String,
    url: String,
    parent: Option<String>,
    /// The session that reaches its document.
    host: SessionId,
    is_oopif: bool,
}

/// The current tab's frames, each with the session reaching its document
/// (an OOPIF's own; a same-process frame's is its nearest OOPIF's, else the page's).
fn frames_of(tree: &FrameTreeView, page: &SessionId) -> Vec<FrameInfo> {
    let Some(top) = &tree.top else { return vec![] };
    let mut out = vec![FrameInfo {
        frame_id: top.frame_id.clone(),
        url: top.url.to_string(),
        parent: None,
        host: page.clone(),
        is_oopif: false,
    }];
    let by_id: HashMap<&str, &crate::supervisor::snapshot::ChildFrame> = tree
        .children
        .iter()
        .map(|c| (c.frame_id.as_str(), &**c))
        .collect();
    for c in tree.children.iter().map(|c| &**c) {
        // The nearest frame (itself included) with a session of its own.
        let mut at = Some(c);
        let mut host = page.clone();
        let mut hops = 0;
        while let Some(f) = at {
            if let Some(s) = f.session_id.as_deref().filter(|_| f.is_oopif) {
                host = SessionId::from(s);
                break;
            }
            at = by_id.get(f.parent_frame_id.as_str()).copied();
            hops += 1;
            if hops > tree.children.len() {
                break;
            }
        }
        out.push(FrameInfo {
            frame_id: c.frame_id.clone(),
            url: c.url.to_string(),
            parent: Some(c.parent_frame_id.clone()),
            host,
            is_oopif: c.is_oopif,
        });
    }
    out
}

/// The frames whose renderer a pending dialog of this tab blocks (or one we
/// never saw: [`Snapshot::blocked_frame_ids`]): the dialog's frame and every
/// frame reached through the same session.
fn blocked_frames(snap: &Snapshot, frames: &[FrameInfo]) -> HashSet<String> {
    let tab = frames
        .first()
        .map(|f| f.frame_id.clone())
        .unwrap_or_default();
    let mut blocked_hosts: HashSet<&SessionId> = HashSet::new();
    // A dialog we never saw blocks the renderer of each of these frames.
    for blocked in &snap.blocked_frame_ids {
        let frame = frames.iter().find(|f| &f.frame_id == blocked);
        blocked_hosts.extend(frame.map(|f| &f.host));
    }
    for d in &snap.pending_dialogs {
        if d.dialog_type == DialogType::FileChooser {
            continue;
        }
        if let Some(other) = d.target_id.as_deref().filter(|t| *t != tab) {
            // A dialog in a related tab (opener or popup, any depth) holds
            // the renderer it shares with this tab's frames of its site
            // (a same-site popup's dialog freezes its opener).
            if related(snap, other, &tab) {
                let site = site_of(&d.url);
                blocked_hosts.extend(
                    frames
                        .iter()
                        .filter(|f| site.is_some() && site_of(&f.url) == site)
                        .map(|f| &f.host),
                );
            }
            continue;
        }
        let frame = d.frame_id.as_deref().unwrap_or(&tab);
        let host = frames
            .iter()
            .find(|f| f.frame_id == frame)
            .or(frames.first())
            .map(|f| &f.host);
        blocked_hosts.extend(host);
    }
    frames
        .iter()
        .filter(|f| blocked_hosts.contains(&f.host))
        .map(|f| f.frame_id.clone())
        .collect()
}

/// What frees a renderer a dialog blocks, said to the agent: answering it.
const ANSWER_REMEDY: &str = "answer the dialog with browser_dialog first";
/// … when Chromium refuses to answer it (`answerable: false`).
const REFUSED_REMEDY: &str = "Chromium refuses to answer that dialog (answerable: false): only navigating releases it (browser_navigate, e.g. to the current URL)";
/// … when it is one we never saw (`page_blocked`). A script running for
/// seconds at attach looks the same to Chromium's protocol, so the text
/// says so: an agent should not reload a page on our guess alone.
const UNSEEN_REMEDY: &str = "it answered nothing for 1.5 s after the supervisor attached: a dialog that opened before the supervisor attached blocks it and cannot be answered (page_blocked: true), unless a long script is running there (then page_blocked clears by itself); only navigating releases it (browser_navigate, e.g. to the current URL)";

/// What frees the renderer of `frame_id`, one of [`blocked_frames`]:
/// answering its dialog; navigating, when Chromium refuses to answer it or
/// it is one we never saw.
fn remedy(snap: &Snapshot, frames: &[FrameInfo], frame_id: &str) -> &'static str {
    let host = |id: &str| frames.iter().find(|f| f.frame_id == id).map(|f| &f.host);
    let Some(h) = host(frame_id) else {
        return ANSWER_REMEDY;
    };
    let known = snap.pending_dialogs.iter().filter(|d| {
        d.dialog_type != DialogType::FileChooser && d.frame_id.as_deref().and_then(host) == Some(h)
    });
    known_remedy(known).unwrap_or(
        if snap.blocked_frame_ids.iter().any(|b| host(b) == Some(h)) {
            UNSEEN_REMEDY
        } else {
            // A dialog of a related tab (a same-site popup's).
            ANSWER_REMEDY
        },
    )
}

/// What frees a renderer the `known` dialogs block: answering one, or
/// navigating when Chromium refuses to answer every one of them. `None`
/// when there is none.
fn known_remedy<'a>(known: impl Iterator<Item = &'a Arc<PendingDialog>>) -> Option<&'static str> {
    let mut any = false;
    for d in known {
        if d.answerable {
            return Some(ANSWER_REMEDY);
        }
        any = true;
    }
    any.then_some(REFUSED_REMEDY)
}

/// Whether tabs `a` and `b` are one's opener (or popup) of the other, at any depth.
fn related(snap: &Snapshot, a: &str, b: &str) -> bool {
    let opener = |t: &str| {
        snap.tabs
            .iter()
            .find(|x| x.target_id == t)
            .and_then(|x| x.opener_target_id.clone())
    };
    let reaches = |from: &str, to: &str| {
        let mut at = opener(from);
        let mut hops = 0;
        while let Some(t) = at.filter(|_| hops <= snap.tabs.len()) {
            if t == to {
                return true;
            }
            hops += 1;
            at = opener(&t);
        }
        false
    };
    reaches(a, b) || reaches(b, a)
}

/// A URL's site as far as processes go: scheme and host (Chromium groups
/// by registrable domain; a host is the same or narrower).
fn site_of(url: &str) -> Option<(String, String)> {
    let u = url::Url::parse(url).ok()?;
    Some((u.scheme().to_owned(), u.host_str()?.to_owned()))
}

async fn read(
    conn: &Connection,
    session: &SessionId,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    read_within(conn, session, method, params, READ_TIMEOUT).await
}

/// [`read`] for an action: within [`ACT_READ_TIMEOUT`].
async fn act_read(
    conn: &Connection,
    session: &SessionId,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    read_within(conn, session, method, params, ACT_READ_TIMEOUT).await
}

/// Whether a [`read_within`] error is its deadline passing (the renderer
/// did not answer), not an error Chromium sent.
fn no_answer(e: &str) -> bool {
    e.starts_with(NO_ANSWER)
}

const NO_ANSWER: &str = "no answer within";

async fn read_within(
    conn: &Connection,
    session: &SessionId,
    method: &str,
    params: Value,
    within: Duration,
) -> Result<Value, String> {
    conn.send(Some(session), method, params, within)
        .await
        .map_err(|e| match e {
            CommandError::Timeout { .. } => {
                format!("{NO_ANSWER} {} ms", within.as_millis())
            }
            e => e.to_string(),
        })
}

const STALE_HINT: &str = "call browser_snapshot and use a ref from its page";

/// One frame's part of an outline read: what to walk and with what.
struct FrameRead {
    conn: Connection,
    frame_id: String,
    url: String,
    host: SessionId,
    /// Its world, if one is known from an earlier outline.
    world: Option<i64>,
    /// The frames whose iframe element is in this document: (index, frame id).
    children: Vec<(usize, String)>,
    /// Its last walk got no answer in time ([`FrameWalk::busy`]).
    busy: bool,
    walk_no: u64,
}

/// What reading one frame gave: its walk (or the line said in its place),
/// its world, and for each child frame the iframe element's backend id.
struct FrameWalk {
    walk: Result<Walk, String>,
    world: Option<i64>,
    owners: Vec<(usize, i64)>,
    /// Its walk got no answer in time: it is still running in the page.
    busy: bool,
}

/// The isolated world of `frame_id` on `host`, made now
/// (`Page.createIsolatedWorld`).
async fn new_world(conn: &Connection, host: &SessionId, frame_id: &str) -> Result<i64, String> {
    // Made on the renderer's main thread: a page still building its
    // document keeps it busy for a while, as the walk itself would.
    read_within(
        conn,
        host,
        "Page.createIsolatedWorld",
        json!({"frameId": frame_id, "worldName": WORLD_NAME}),
        TREE_READ_TIMEOUT,
    )
    .await?
    .get("executionContextId")
    .and_then(Value::as_i64)
    .ok_or_else(|| "Page.createIsolatedWorld gave no executionContextId".to_owned())
}

/// Whether a failed call says the execution context is gone (its document
/// navigated since the world was made).
fn context_gone(e: &str) -> bool {
    e.contains("Cannot find context") || e.contains("context with specified id")
}

/// Reads one frame: its world (the one known, else a new one; a gone one
/// is made again), its child frames' iframe elements resolved into that
/// world, then the walker over its document.
async fn walk_frame(r: FrameRead) -> FrameWalk {
    let mut owners = Vec::new();
    for (i, child) in &r.children {
        let backend = read(
            &r.conn,
            &r.host,
            "DOM.getFrameOwner",
            json!({"frameId": child}),
        )
        .await
        .ok()
        .and_then(|v| v.get("backendNodeId").and_then(Value::as_i64));
        if let Some(b) = backend {
            owners.push((*i, b));
        }
    }
    if let Some(ctx) = r.world.filter(|_| r.busy) {
        // Its last walk is still running (a page whose first layout takes
        // long): one more would only queue behind it, so ask first.
        let probe = read(
            &r.conn,
            &r.host,
            "Runtime.evaluate",
            json!({"expression": "0", "contextId": ctx, "returnByValue": true}),
        )
        .await;
        if let Err(e) = probe
            && no_answer(&e)
        {
            return FrameWalk {
                walk: Err(format!(
                    "the page is still busy with the previous read ({e}); call browser_snapshot again in a while"
                )),
                world: Some(ctx),
                owners,
                busy: true,
            };
        }
    }
    let mut world = r.world;
    for attempt in 0..2 {
        let ctx = match world {
            Some(c) => c,
            None => match new_world(&r.conn, &r.host, &r.frame_id).await {
                Ok(c) => c,
                Err(e) => {
                    return FrameWalk {
                        walk: Err(e),
                        world: None,
                        owners,
                        busy: false,
                    };
                }
            },
        };
        // The iframe elements as objects of this world: the walker tells
        // which of its lines each one is.
        let mut args = vec![
            json!({"value": r.walk_no}),
            json!({"value": WALK_MAX_NODES}),
            json!({"value": WALK_BUDGET.as_millis() as u64}),
            json!({"value": ACTIONABLE_ROLES}),
        ];
        let mut gone = false;
        for (_, b) in &owners {
            match read(
                &r.conn,
                &r.host,
                "DOM.resolveNode",
                json!({"backendNodeId": b, "executionContextId": ctx}),
            )
            .await
            {
                Ok(v) => match v.pointer("/object/objectId").and_then(Value::as_str) {
                    Some(o) => args.push(json!({"objectId": o})),
                    None => args.push(json!({"value": null})),
                },
                Err(e) if context_gone(&e) => {
                    gone = true;
                    break;
                }
                Err(_) => args.push(json!({"value": null})),
            }
        }
        let reply = if gone {
            Err("Cannot find context".to_owned())
        } else {
            read_within(
                &r.conn,
                &r.host,
                "Runtime.callFunctionOn",
                json!({"functionDeclaration": WALKER, "executionContextId": ctx,
                       "arguments": args, "returnByValue": true}),
                TREE_READ_TIMEOUT,
            )
            .await
        };
        match reply {
            Err(e) if context_gone(&e) && attempt == 0 => world = None,
            Err(e) => {
                return FrameWalk {
                    busy: no_answer(&e),
                    walk: Err(e),
                    world: Some(ctx),
                    owners,
                };
            }
            Ok(v) => {
                let walk = match v.get("exceptionDetails") {
                    Some(ex) => Err(format!(
                        "the page's document threw: {}",
                        ex.pointer("/exception/description")
                            .and_then(Value::as_str)
                            .unwrap_or("an exception")
                    )),
                    None => Ok(parse_walk(
                        v.pointer("/result/value").unwrap_or(&Value::Null),
                    )),
                };
                return FrameWalk {
                    walk,
                    world: Some(ctx),
                    owners,
                    busy: false,
                };
            }
        }
    }
    FrameWalk {
        walk: Err("its document navigated while it was read".to_owned()),
        world: None,
        owners,
        busy: false,
    }
}

/// The part of `rest` from the line it has given up to, at most
/// [`PAGE_MAX_LINES`] lines; when more follow, its last line says how many
/// and the call that continues (the `page_cursor` it also carries).
fn next_part(tab: &str, rest: &mut Rest) -> PageOutline {
    let from = rest.given.min(rest.lines.len());
    let left = rest.lines.len() - from;
    let more = left > PAGE_MAX_LINES;
    let take = if more { PAGE_MAX_LINES - 1 } else { left };
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
fn parse_cursor(cursor: &str) -> Option<(String, u64, usize)> {
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

impl Supervisor {
    /// The current tab's outline in `mode`, read now; its refs are kept as
    /// the tab's ([`RefTables`]) and the lines past the first part for
    /// [`Supervisor::page_outline_more`]. `None` when there is no
    /// connection or page.
    pub async fn page_outline(&self, mode: &OutlineMode) -> Option<PageOutline> {
        let conn = self.connection()?;
        let (_, page) = self.route(None, None, false).await.ok()?;
        let tab = self.snapshot().frame_tree.top.as_ref()?.frame_id.clone();
        let (walk_no, known_worlds, busy) = {
            let mut tables = self.ref_tables();
            let t = tables.tabs.entry(tab.clone()).or_default();
            t.outlines += 1;
            (t.outlines, t.worlds.clone(), t.busy.clone())
        };
        let mut attempt = 0;
        let (frames, docs, blocked, worlds, still_busy) = loop {
            attempt += 1;
            let snap = self.snapshot();
            let frames = frames_of(&snap.frame_tree, &page);
            let blocked = blocked_frames(&snap, &frames);
            let pos: HashMap<&str, usize> = frames
                .iter()
                .enumerate()
                .map(|(i, f)| (f.frame_id.as_str(), i))
                .collect();
            // A frame under a blocked one has nowhere to be shown (and its
            // owner could only be asked of the blocked renderer): not read.
            let under_blocked = |f: &FrameInfo| {
                let mut at = f.parent.as_deref();
                let mut hops = 0;
                while let Some(p) = at.filter(|_| hops <= frames.len()) {
                    if blocked.contains(p) {
                        return true;
                    }
                    hops += 1;
                    at = pos.get(p).and_then(|&i| frames[i].parent.as_deref());
                }
                false
            };
            let skipped: Vec<bool> = frames.iter().map(under_blocked).collect();
            let reads = frames.iter().enumerate().map(|(i, f)| {
                let blocked_line = blocked.contains(&f.frame_id).then(|| {
                    format!(
                        "frame {} ({}): a JavaScript dialog blocks this frame, so its content cannot be read: {}, then call browser_snapshot again",
                        f.frame_id,
                        f.url,
                        remedy(&snap, &frames, &f.frame_id)
                    )
                });
                let read = FrameRead {
                    conn: conn.clone(),
                    frame_id: f.frame_id.clone(),
                    url: f.url.clone(),
                    host: f.host.clone(),
                    world: known_worlds
                        .get(&f.frame_id)
                        .filter(|(s, _)| *s == f.host)
                        .map(|(_, c)| *c),
                    children: frames
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.parent.as_deref() == Some(f.frame_id.as_str()))
                        .map(|(j, c)| (j, c.frame_id.clone()))
                        .collect(),
                    busy: busy.contains(&f.frame_id),
                    walk_no,
                };
                let skip = skipped[i];
                async move {
                    if skip {
                        return FrameWalk {
                            walk: Err("not read: under a frame that could not be read".to_owned()),
                            world: read.world,
                            owners: Vec::new(),
                            busy: read.busy,
                        };
                    }
                    if let Some(line) = blocked_line {
                        return FrameWalk {
                            walk: Err(line),
                            world: read.world,
                            owners: Vec::new(),
                            busy: read.busy,
                        };
                    }
                    let (frame_id, url) = (read.frame_id.clone(), read.url.clone());
                    let mut w = walk_frame(read).await;
                    w.walk = w.walk.map_err(|e| {
                        format!("frame {frame_id} ({url}): its content could not be read ({e})")
                    });
                    w
                }
            });
            let all = futures_util::future::join_all(reads);
            // A dialog opening meanwhile blocks a renderer being read: read
            // again without it rather than wait out its deadline.
            let results = if attempt < OUTLINE_ATTEMPTS {
                match self.race_dialogs(all, false).await {
                    Ok(r) => r,
                    Err(_) => continue,
                }
            } else {
                all.await
            };
            // Each child frame's owner: its iframe element's key in the
            // parent's walk, and its backend id (for the OOPIF offsets).
            let mut owner_of: HashMap<usize, (usize, Option<i64>, i64)> = HashMap::new();
            for (p, r) in results.iter().enumerate() {
                let keys = r.walk.as_ref().map(|w| w.owners.as_slice()).unwrap_or(&[]);
                for (k, (child, backend)) in r.owners.iter().enumerate() {
                    owner_of.insert(*child, (p, keys.get(k).copied().flatten(), *backend));
                }
            }
            let mut worlds = HashMap::new();
            let mut still_busy = HashSet::new();
            let mut docs = Vec::with_capacity(frames.len());
            for ((i, f), r) in frames.iter().enumerate().zip(results) {
                if let Some(w) = r.world {
                    worlds.insert(f.frame_id.clone(), (f.host.clone(), w));
                }
                if r.busy {
                    still_busy.insert(f.frame_id.clone());
                }
                let (cut, tree) = match r.walk {
                    Ok(w) => (w.cut, Ok(w.nodes)),
                    Err(e) => (false, Err(e)),
                };
                let owner = owner_of.get(&i).copied();
                docs.push(Doc {
                    skipped: skipped[i],
                    frame_id: f.frame_id.clone(),
                    url: f.url.clone(),
                    tree,
                    owner: owner.and_then(|(p, key, _)| key.map(|k| (p, k))),
                    owner_backend: owner.map(|(_, _, b)| b),
                    cut,
                });
            }
            break (frames, docs, blocked, worlds, still_busy);
        };
        let snap = self.snapshot();
        let mut tables = self.ref_tables();
        tables.keep_only(snap.tabs.iter().map(|t| t.target_id.as_str()));
        let t = tables.tabs.entry(tab.clone()).or_default();
        t.worlds = worlds;
        t.busy = still_busy;
        t.first_of_last = t.next + 1;
        // `find` searches every text too.
        let full = *mode != OutlineMode::Default;
        let (mut lines, frame_refs, refs) = render(&docs, &mut t.next, full);
        if let OutlineMode::Find(needle) = mode {
            lines = find_lines(&lines, needle);
            if lines.is_empty() {
                lines.push(format!(
                    "- [nothing on the page has a role or name holding {}]",
                    quote(needle)
                ));
            }
        }
        let pos: HashMap<&str, usize> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| (f.frame_id.as_str(), i))
            .collect();
        t.nodes = refs
            .into_iter()
            .map(|(r, at)| {
                let (session, world) = t
                    .worlds
                    .get(&frames[at.doc].frame_id)
                    .cloned()
                    .unwrap_or((frames[at.doc].host.clone(), 0));
                let node = NodeRef {
                    frame_id: frames[at.doc].frame_id.clone(),
                    session,
                    world,
                    walk_no,
                    key: at.key,
                    backend_node_id: 0,
                    owners: owners_of(at.doc, &frames, &docs, &pos),
                };
                (r, node)
            })
            .collect();
        let mut blocked_frames: Vec<String> = blocked.into_iter().collect();
        blocked_frames.sort_unstable();
        t.rest = Rest {
            outline: walk_no,
            lines,
            given: 0,
            frame_refs,
            blocked_frames,
            url: frames[0].url.clone(),
        };
        Some(next_part(&tab, &mut t.rest))
    }

    /// The next part of the outline `cursor` names (`browser_snapshot`'s
    /// `page_cursor`): the same refs, read no more from the page.
    ///
    /// # Errors
    /// A cursor that is malformed, of another tab, or of an outline older
    /// than the tab's last one (whose refs are gone), or one already
    /// given in full; each says to call `browser_snapshot` for a fresh one.
    pub fn page_outline_more(&self, cursor: &str) -> Result<PageOutline, CursorError> {
        let fresh = "call browser_snapshot (without page_cursor) for a fresh outline";
        let (tab, outline, given) = parse_cursor(cursor).ok_or_else(|| {
            CursorError(format!(
                "page_cursor {cursor:?} is not one browser_snapshot gave (they look like \"<tab>/<outline>/<line>\"): {fresh}"
            ))
        })?;
        let snap = self.snapshot();
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
        let mut tables = self.ref_tables();
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
        Ok(next_part(&tab, &mut t.rest))
    }

    /// Whether the frames a dialog blocks now are the ones `outline` was
    /// read with. When they are not, its text says a frame is blocked that
    /// is not, or read one that now is: shown beside the dialogs of now,
    /// a snapshot would contradict itself (a helper saw it for ~60 ms after
    /// each dialog opened or closed).
    pub async fn outline_agrees(&self, outline: &PageOutline) -> bool {
        let Ok((_, page)) = self.route(None, None, false).await else {
            return true;
        };
        let snap = self.snapshot();
        let mut now: Vec<String> = blocked_frames(&snap, &frames_of(&snap.frame_tree, &page))
            .into_iter()
            .collect();
        now.sort_unstable();
        now == outline.blocked_frames
    }

    /// The node `r` names in the current tab's last outline, checked to be
    /// still there (its frame attached, its document not navigated, the
    /// node connected). Returns the connection, the node and its `objectId`.
    /// Chromium drops input events (keys and clicks alike) sent while a
    /// dialog shows: they reply at once and are not queued (CDP facts).
    /// Refuses, saying `lost` and the remedy, rather than report input that
    /// never happened. Returns the current tab's page session.
    async fn refuse_input_while_blocked(&self, lost: &str) -> Result<SessionId, ActError> {
        let snap = self.snapshot();
        let current = snap
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.clone());
        // Not connected: said as such, not as a dialog we last knew of.
        let (_, page) = self.route(None, None, false).await?;
        let known = snap.pending_dialogs.iter().filter(|d| {
            d.target_id == current && d.dialog_type != crate::cdp::protocol::DialogType::FileChooser
        });
        let remedy = known_remedy(known).or(snap.page_blocked.then_some(UNSEEN_REMEDY));
        match remedy {
            Some(remedy) => Err(ActError::Element(format!(
                "a JavaScript dialog blocks the page, so {lost}: {remedy}"
            ))),
            None => Ok(page),
        }
    }

    async fn resolve_ref(&self, r: &str) -> Result<(Connection, NodeRef, String), ActError> {
        let snap = self.snapshot();
        let tab = snap
            .frame_tree
            .top
            .as_ref()
            .map(|t| t.frame_id.clone())
            .unwrap_or_default();
        let node = {
            let tables = self.ref_tables();
            let t = tables.tabs.get(&tab);
            match t.and_then(|t| t.nodes.get(r)) {
                Some(n) => n.clone(),
                None => {
                    let number = r
                        .rsplit_once('e')
                        .and_then(|(p, n)| (p.is_empty() || p.starts_with('f')).then_some(n))
                        .and_then(|n| n.parse::<u64>().ok());
                    let older = match (t, number) {
                        (Some(t), Some(n)) => n < t.first_of_last,
                        _ => false,
                    };
                    return Err(ActError::Stale(if older {
                        format!(
                            "ref {r} is from an older browser_snapshot of this tab (refs last until the next snapshot): {STALE_HINT}"
                        )
                    } else if t.is_none() {
                        format!(
                            "ref {r} is unknown: no browser_snapshot has listed this tab's page yet; {STALE_HINT}"
                        )
                    } else {
                        format!("ref {r} is unknown (refs look like e12 or f1e34): {STALE_HINT}")
                    }));
                }
            }
        };
        let attached = snap
            .frame_tree
            .top
            .as_ref()
            .is_some_and(|t| t.frame_id == node.frame_id)
            || snap
                .frame_tree
                .children
                .iter()
                .any(|c| c.frame_id == node.frame_id);
        if !attached {
            return Err(ActError::Stale(format!(
                "ref {r} is in frame {} which is gone (detached) since the snapshot: {STALE_HINT}",
                node.frame_id
            )));
        }
        let conn = self
            .connection()
            .ok_or_else(|| CdpCallError::NotConnected("reconnecting".into()))?;
        // Its renderer cannot be read while a dialog blocks it: say so
        // rather than wait (nothing is dispatched).
        let (_, page) = self.route(None, None, false).await?;
        let frames = frames_of(&snap.frame_tree, &page);
        if blocked_frames(&snap, &frames).contains(&node.frame_id) {
            return Err(ActError::Element(format!(
                "a JavaScript dialog blocks the frame of ref {r}, so the element cannot be reached (nothing was done): {}",
                remedy(&snap, &frames, &node.frame_id)
            )));
        }
        // The element the walker kept in its world: gone with its document.
        let found = act_read(
            &conn,
            &node.session,
            "Runtime.callFunctionOn",
            json!({"functionDeclaration": "function(g,k){const s=globalThis.__cdpSupervisor;return s&&s.gen===g?s.els[k]||null:null}",
                   "executionContextId": node.world,
                   "arguments": [{"value": node.walk_no}, {"value": node.key}]}),
        )
        .await;
        let object = match found {
            Ok(v) => v
                .pointer("/result/objectId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            Err(e) if no_answer(&e) => {
                return Err(ActError::Element(format!(
                    "the frame of ref {r} does not answer ({e}): a dialog may block it (see pending_dialogs); nothing was done"
                )));
            }
            Err(_) => None,
        };
        let backend = match &object {
            Some(o) => act_read(
                &conn,
                &node.session,
                "DOM.describeNode",
                json!({"objectId": o}),
            )
            .await
            .ok()
            .and_then(|v| v.pointer("/node/backendNodeId").and_then(Value::as_i64)),
            None => None,
        };
        let (Some(object), Some(backend)) = (object, backend) else {
            return Err(ActError::Stale(format!(
                "ref {r} no longer exists: its document navigated or the element was removed since the snapshot: {STALE_HINT}"
            )));
        };
        let mut node = node;
        node.backend_node_id = backend;
        let connected = call_on(
            &conn,
            &node.session,
            &object,
            "function(){return this.isConnected}",
            json!([]),
        )
        .await;
        if connected == Ok(json!(false)) {
            return Err(ActError::Stale(format!(
                "ref {r}'s element is detached from its document since the snapshot: {STALE_HINT}"
            )));
        }
        Ok((conn, node, object))
    }

    /// `browser_click`: scrolls the element into view, hit-tests its
    /// centre, and clicks there with real mouse events on the top-level page
    /// session. Returns `{clicked, x, y}` (top-level CSS pixels).
    ///
    /// # Errors
    /// A stale or unknown ref; an element covered, zero-sized or detached
    /// (nothing dispatched); the dispatch's own failure.
    pub async fn click(
        &self,
        r: &str,
        button: &str,
        click_count: u32,
    ) -> Result<CallOutcome, ActError> {
        let (conn, node, object) = self.resolve_ref(r).await?;
        self.refuse_input_while_blocked(&format!(
            "the click on {r} would be lost (nothing was clicked)"
        ))
        .await?;
        let _ = act_read(
            &conn,
            &node.session,
            "DOM.scrollIntoViewIfNeeded",
            json!({"backendNodeId": node.backend_node_id}),
        )
        .await;
        for o in &node.owners {
            let _ = act_read(
                &conn,
                &o.session,
                "DOM.scrollIntoViewIfNeeded",
                json!({"backendNodeId": o.backend_node_id}),
            )
            .await;
        }
        let (cx, cy) = self.centre(&conn, &node, r).await?;
        // Hit-test in document coordinates on the element's own session.
        let scroll = act_read(&conn, &node.session, "Page.getLayoutMetrics", json!({}))
            .await
            .ok();
        let sx = scroll
            .as_ref()
            .and_then(|m| m.pointer("/cssLayoutViewport/pageX"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let sy = scroll
            .as_ref()
            .and_then(|m| m.pointer("/cssLayoutViewport/pageY"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let hit = act_read(
            &conn,
            &node.session,
            "DOM.getNodeForLocation",
            json!({"x": (cx + sx).round() as i64, "y": (cy + sy).round() as i64, "includeUserAgentShadowDOM": true, "ignorePointerEventsNone": false}),
        )
        .await
        .map_err(|e| ActError::Element(format!("ref {r}: the point to click could not be hit-tested ({e}); nothing was clicked")))?;
        if let Some(hit_id) = hit
            .get("backendNodeId")
            .and_then(Value::as_i64)
            .filter(|h| *h != node.backend_node_id)
        {
            let hit_obj = act_read(
                &conn,
                &node.session,
                "DOM.resolveNode",
                // In the world `object` lives in: objects of two worlds
                // cannot meet in one call.
                json!({"backendNodeId": hit_id, "executionContextId": node.world}),
            )
            .await
            .ok()
            .and_then(|v| {
                v.pointer("/object/objectId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            let verdict = match hit_obj {
                Some(h) => call_on(
                    &conn,
                    &node.session,
                    &object,
                    "function(h){const e=h.nodeType===1?h:h.parentElement;const host=h.getRootNode&&h.getRootNode().host;const inside=this===h||this.contains(h)||(!!host&&this.contains(host));const what=e?(e.getAttribute('role')||e.tagName.toLowerCase())+(e.id?'#'+e.id:''):'#text';return {inside, what}}",
                    json!([{"objectId": h}]),
                )
                .await
                .unwrap_or(Value::Null),
                None => Value::Null,
            };
            if verdict.get("inside") != Some(&json!(true)) {
                let what = verdict
                    .get("what")
                    .and_then(Value::as_str)
                    .unwrap_or("another element");
                return Err(ActError::Element(format!(
                    "ref {r} is covered by <{what}> at its centre ({cx:.0}, {cy:.0} in its frame): a click there would hit that instead; nothing was clicked (close or scroll away what covers it, then browser_snapshot again)"
                )));
            }
        }
        let (x, y) = self.offset_to_top(&conn, &node, (cx, cy), r).await?;
        let (_, page) = self.route(None, None, false).await?;
        if self.snapshot().tabs.len() > 1 {
            // Chromium answers mouse input to a tab in the background only
            // when its wait for a frame gives up (5 s), and a popup the page
            // opened is in front: the tab clicked in comes to the front.
            let _ = act_read(&conn, &page, "Page.bringToFront", json!({})).await;
        }
        let keep = ACTION_TIMEOUT.saturating_add(self.dialog_timeout());
        let me = self.clone();
        let button = button.to_owned();
        let result = json!({"clicked": r, "x": x, "y": y});
        let work = async move {
            let ev = |kind: &str, count: u32| json!({"type": kind, "x": x, "y": y, "button": button, "clickCount": count, "buttons": 0});
            me.send_agent(
                Target::Session(page.clone()),
                "Input.dispatchMouseEvent",
                json!({"type": "mouseMoved", "x": x, "y": y}),
                keep,
            )
            .await?;
            for count in 1..=click_count {
                me.send_agent(
                    Target::Session(page.clone()),
                    "Input.dispatchMouseEvent",
                    ev("mousePressed", count),
                    keep,
                )
                .await?;
                me.send_agent(
                    Target::Session(page.clone()),
                    "Input.dispatchMouseEvent",
                    ev("mouseReleased", count),
                    keep,
                )
                .await?;
            }
            Ok(result)
        };
        Ok(self
            .interruptible("browser_click", work, ACTION_TIMEOUT)
            .await?)
    }

    /// The centre of the node's content box in its frame's viewport.
    async fn centre(
        &self,
        conn: &Connection,
        node: &NodeRef,
        r: &str,
    ) -> Result<(f64, f64), ActError> {
        let model = act_read(conn, &node.session, "DOM.getBoxModel", json!({"backendNodeId": node.backend_node_id}))
            .await
            .map_err(|e| ActError::Element(format!("ref {r} has no box to click: it is not rendered (display:none, or detached) ({e}); nothing was done")))?;
        let w = model
            .pointer("/model/width")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let h = model
            .pointer("/model/height")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let quad = quad(&model, "/model/content");
        if w == 0.0 || h == 0.0 || quad.is_none() {
            return Err(ActError::Element(format!(
                "ref {r} is zero-sized ({w}×{h}): there is nothing to click; nothing was done"
            )));
        }
        let q = quad.expect("checked");
        Ok((
            (q[0] + q[2] + q[4] + q[6]) / 4.0,
            (q[1] + q[3] + q[5] + q[7]) / 4.0,
        ))
    }

    /// Adds each ancestor OOPIF's iframe content-box origin: top-level coordinates.
    async fn offset_to_top(
        &self,
        conn: &Connection,
        node: &NodeRef,
        (mut x, mut y): (f64, f64),
        r: &str,
    ) -> Result<(f64, f64), ActError> {
        for o in &node.owners {
            let model = act_read(conn, &o.session, "DOM.getBoxModel", json!({"backendNodeId": o.backend_node_id}))
                .await
                .map_err(|e| ActError::Element(format!("ref {r}: the box of the iframe holding it could not be read ({e}); nothing was done")))?;
            let q = quad(&model, "/model/content").ok_or_else(|| {
                ActError::Element(format!(
                    "ref {r}: the iframe holding it has no box; nothing was done"
                ))
            })?;
            x += q[0];
            y += q[1];
        }
        Ok((x, y))
    }

    /// `browser_type`: focuses the element and inserts `text`
    /// (`Input.insertText`), then presses Enter when `submit`. Returns
    /// `{typed, chars, submitted}`.
    ///
    /// # Errors
    /// A stale or unknown ref, an element that cannot take focus, the dispatch's failure.
    pub async fn type_text(
        &self,
        r: &str,
        text: &str,
        submit: bool,
    ) -> Result<CallOutcome, ActError> {
        let (conn, node, object) = self.resolve_ref(r).await?;
        self.refuse_input_while_blocked(&format!(
            "the text for {r} would be lost (nothing was typed)"
        ))
        .await?;
        // Only into an element that takes text: a <select>, a button or a
        // read-only field takes the focus (or not) but no text, and the
        // keystrokes would land in whatever had the focus before.
        let editable = call_on(&conn, &node.session, &object, EDITABLE_FN, json!([]))
            .await
            .map_err(ActError::Element)?;
        if let Some(why) = editable.get("error").and_then(Value::as_str) {
            return Err(ActError::Element(format!(
                "ref {r} takes no text: {why}; nothing was typed (browser_select_option picks options, browser_click presses buttons)"
            )));
        }
        let _ = act_read(
            &conn,
            &node.session,
            "DOM.scrollIntoViewIfNeeded",
            json!({"backendNodeId": node.backend_node_id}),
        )
        .await;
        act_read(
            &conn,
            &node.session,
            "DOM.focus",
            json!({"backendNodeId": node.backend_node_id}),
        )
        .await
        .map_err(|e| {
            ActError::Element(format!(
                "ref {r} cannot take the keyboard focus ({e}); nothing was typed"
            ))
        })?;
        let focused = call_on(&conn, &node.session, &object, FOCUSED_FN, json!([]))
            .await
            .map_err(ActError::Element)?;
        if focused != Value::Bool(true) {
            return Err(ActError::Element(format!(
                "ref {r} did not keep the keyboard focus (the page moved it); nothing was typed"
            )));
        }
        let keep = ACTION_TIMEOUT.saturating_add(self.dialog_timeout());
        let me = self.clone();
        let session = node.session.clone();
        let text = text.to_owned();
        let result = json!({"typed": r, "chars": text.chars().count(), "submitted": submit});
        let work = async move {
            if !text.is_empty() {
                me.send_agent(
                    Target::Session(session.clone()),
                    "Input.insertText",
                    json!({"text": text}),
                    keep,
                )
                .await?;
            }
            if submit {
                let key = key_of("Enter").expect("Enter is known");
                press(&me, &session, &key, keep).await?;
            }
            Ok(result)
        };
        Ok(self
            .interruptible("browser_type", work, ACTION_TIMEOUT)
            .await?)
    }

    /// `browser_press_key`: the key by its DOM name, down then up, on the
    /// page (its focused element). Returns `{pressed}`.
    ///
    /// # Errors
    /// An unknown key name; the dispatch's failure.
    pub async fn press_key(&self, key: &str) -> Result<CallOutcome, ActError> {
        let k = key_of(key).ok_or_else(|| {
            ActError::Element(format!(
                "key {key:?} is not one browser_press_key knows; give a DOM key name: one printable character (a, A, 1, /), or {}",
                NAMED_KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ))
        })?;
        let page = self
            .refuse_input_while_blocked(&format!(
                "the key {key:?} would be lost (nothing was pressed)"
            ))
            .await?;
        let keep = ACTION_TIMEOUT.saturating_add(self.dialog_timeout());
        let me = self.clone();
        let result = json!({"pressed": key});
        let work = async move {
            press(&me, &page, &k, keep).await?;
            Ok(result)
        };
        Ok(self
            .interruptible("browser_press_key", work, ACTION_TIMEOUT)
            .await?)
    }

    /// `browser_select_option`: selects the options whose value or label is
    /// in `values` and fires `input` and `change`. Returns `{selected: [values]}`.
    ///
    /// # Errors
    /// A stale or unknown ref, not a `<select>`, no option matching, the dispatch's failure.
    pub async fn select_option(
        &self,
        r: &str,
        values: Vec<String>,
    ) -> Result<CallOutcome, ActError> {
        let (conn, node, object) = self.resolve_ref(r).await?;
        let check = call_on(
            &conn,
            &node.session,
            &object,
            SELECT_FN_CHECK,
            json!([{"value": values}]),
        )
        .await
        .map_err(|e| {
            ActError::Element(format!(
                "ref {r}: its options could not be read ({e}); nothing was selected"
            ))
        })?;
        if let Some(e) = check.get("error").and_then(Value::as_str) {
            return Err(ActError::Element(format!(
                "ref {r}: {e}; nothing was selected"
            )));
        }
        let keep = ACTION_TIMEOUT.saturating_add(self.dialog_timeout());
        let me = self.clone();
        let session = node.session.clone();
        let work = async move {
            let v = me
                .send_agent(
                    Target::Session(session),
                    "Runtime.callFunctionOn",
                    json!({"objectId": object, "functionDeclaration": SELECT_FN, "arguments": [{"value": values}], "returnByValue": true, "userGesture": true}),
                    keep,
                )
                .await?;
            let value = v.pointer("/result/value").cloned().unwrap_or(Value::Null);
            match value.get("error").and_then(Value::as_str) {
                Some(e) => Err(CdpCallError::Command(CommandError::Protocol {
                    method: "browser_select_option".into(),
                    code: 0,
                    message: e.to_owned(),
                    data: None,
                })),
                None => Ok(value),
            }
        };
        Ok(self
            .interruptible("browser_select_option", work, ACTION_TIMEOUT)
            .await?)
    }
}

/// The OOPIF iframe elements above document `doc`, innermost first.
fn owners_of(
    doc: usize,
    frames: &[FrameInfo],
    docs: &[Doc],
    pos: &HashMap<&str, usize>,
) -> Vec<Owner> {
    let mut out = Vec::new();
    let mut at = doc;
    let mut hops = 0;
    while at != 0 && hops <= frames.len() {
        hops += 1;
        let Some(parent) = frames[at]
            .parent
            .as_deref()
            .and_then(|p| pos.get(p).copied())
        else {
            break;
        };
        if let Some(backend) = docs[at].owner_backend.filter(|_| frames[at].is_oopif) {
            out.push(Owner {
                session: frames[parent].host.clone(),
                backend_node_id: backend,
            });
        }
        at = parent;
    }
    out
}

fn quad(model: &Value, at: &str) -> Option<Vec<f64>> {
    let q: Vec<f64> = model
        .pointer(at)?
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    (q.len() == 8).then_some(q)
}

/// `Runtime.callFunctionOn` with `this` = `object`, by value, short deadline.
async fn call_on(
    conn: &Connection,
    session: &SessionId,
    object: &str,
    f: &str,
    args: Value,
) -> Result<Value, String> {
    let v = act_read(
        conn,
        session,
        "Runtime.callFunctionOn",
        json!({"objectId": object, "functionDeclaration": f, "arguments": args, "returnByValue": true}),
    )
    .await?;
    if let Some(ex) = v.get("exceptionDetails") {
        return Err(format!(
            "the page threw: {}",
            ex.pointer("/exception/description")
                .and_then(Value::as_str)
                .unwrap_or("an exception")
        ));
    }
    Ok(v.pointer("/result/value").cloned().unwrap_or(Value::Null))
}

/// Whether `this` takes typed text: a text-like `<input>` or a `<textarea>`
/// that is neither disabled nor read-only, or an editable element.
const EDITABLE_FN: &str = "function(){const t=this.tagName?this.tagName.toLowerCase():'';const textual=['text','search','email','url','tel','password','number','date','datetime-local','month','week','time',''];if(t==='input'){if(!textual.includes((this.getAttribute('type')||'').toLowerCase()))return {error:'it is an <input type='+this.type+'>'};}else if(t!=='textarea'&&!this.isContentEditable){return {error:'it is a <'+t+'>, not a text field'}}if(this.disabled)return {error:'it is disabled'};if(this.readOnly)return {error:'it is read-only'};return {}}";
/// Whether `this` (or something inside it) has the keyboard focus.
const FOCUSED_FN: &str =
    "function(){const a=this.ownerDocument.activeElement;return a===this||this.contains(a)}";

/// Checks a `<select>` and the values asked for, changing nothing.
const SELECT_FN_CHECK: &str = "function(values){if(!(this instanceof HTMLSelectElement))return {error:'it is not a <select> element (it is <'+this.tagName.toLowerCase()+'>)'};const opts=Array.from(this.options);for(const v of values){if(!opts.some(o=>o.value===v||o.label===v||o.text.trim()===v))return {error:'no option has value or label '+JSON.stringify(v)+'; options: '+JSON.stringify(opts.map(o=>o.value))}}if(!this.multiple&&values.length!==1)return {error:'this <select> takes exactly one value, not '+values.length};if(this.disabled)return {error:'the <select> is disabled'};return {}}";
/// Selects by value or label and fires `input` and `change`, as a user's choice would.
const SELECT_FN: &str = "function(values){const opts=Array.from(this.options);const chosen=[];for(const v of values){const o=opts.find(o=>o.value===v)||opts.find(o=>o.label===v||o.text.trim()===v);if(!o)return {error:'no option has value or label '+JSON.stringify(v)};chosen.push(o)}for(const o of opts)o.selected=chosen.includes(o);this.dispatchEvent(new Event('input',{bubbles:true}));this.dispatchEvent(new Event('change',{bubbles:true}));return {selected:chosen.map(o=>o.value)}}";

/// A key as `Input.dispatchKeyEvent` needs it.
struct Key {
    key: String,
    code: String,
    vk: u32,
    /// What it types (`\r` for Enter: forms submit only with it).
    text: Option<String>,
}

/// The named DOM keys: (key, code, windowsVirtualKeyCode, text).
const NAMED_KEYS: &[(&str, &str, u32, Option<&str>)] = &[
    ("Enter", "Enter", 13, Some("\r")),
    ("Escape", "Escape", 27, None),
    ("Tab", "Tab", 9, None),
    ("Backspace", "Backspace", 8, None),
    ("Delete", "Delete", 46, None),
    ("ArrowUp", "ArrowUp", 38, None),
    ("ArrowDown", "ArrowDown", 40, None),
    ("ArrowLeft", "ArrowLeft", 37, None),
    ("ArrowRight", "ArrowRight", 39, None),
    ("Home", "Home", 36, None),
    ("End", "End", 35, None),
    ("PageUp", "PageUp", 33, None),
    ("PageDown", "PageDown", 34, None),
    (" ", "Space", 32, Some(" ")),
    ("Space", "Space", 32, Some(" ")),
];

fn key_of(name: &str) -> Option<Key> {
    if let Some((key, code, vk, text)) = NAMED_KEYS.iter().find(|k| k.0 == name) {
        let key = if *key == "Space" { " " } else { key };
        return Some(Key {
            key: key.to_string(),
            code: code.to_string(),
            vk: *vk,
            text: text.map(str::to_owned),
        });
    }
    let mut chars = name.chars();
    let c = chars.next()?;
    if chars.next().is_some() || c.is_control() {
        return None;
    }
    let (code, vk) = if c.is_ascii_alphabetic() {
        (
            format!("Key{}", c.to_ascii_uppercase()),
            c.to_ascii_uppercase() as u32,
        )
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), c as u32)
    } else {
        (String::new(), 0)
    };
    Some(Key {
        key: c.to_string(),
        code,
        vk,
        text: Some(c.to_string()),
    })
}

/// keyDown (with its text, if it types) then keyUp.
async fn press(
    me: &Supervisor,
    session: &SessionId,
    k: &Key,
    keep: Duration,
) -> Result<(), CdpCallError> {
    let mut down = json!({"type": if k.text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk});
    if let Some(t) = &k.text {
        down["text"] = json!(t);
        down["unmodifiedText"] = json!(t);
    }
    me.send_agent(
        Target::Session(session.clone()),
        "Input.dispatchKeyEvent",
        down,
        keep,
    )
    .await?;
    me.send_agent(
        Target::Session(session.clone()),
        "Input.dispatchKeyEvent",
        json!({"type": "keyUp", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk}),
        keep,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walker reply (`outline.js`): `[parent, role, name, value, states, key]`.
    fn walk(nodes: Value) -> Vec<AxNode> {
        parse_walk(&json!({"nodes": nodes, "owners": [], "cut": false})).nodes
    }

    fn doc(frame_id: &str, tree: Result<Vec<AxNode>, String>, owner: Option<(usize, i64)>) -> Doc {
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

    fn text(lines: &[String]) -> String {
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

    /// Issue 28, defect 5: ref tables were kept for every tab ever outlined.
    #[test]
    fn regression_28_5_ref_tables_keep_only_open_tabs() {
        let mut t = RefTables::default();
        for id in ["T0", "T1", "T2"] {
            t.tabs.insert(id.into(), TabRefs::default());
        }
        t.keep_only(["T1", "T9"].into_iter());
        assert_eq!(t.tabs.keys().collect::<Vec<_>>(), ["T1"]);
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
        let first = next_part("TAB", &mut rest);
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
        let second = next_part("TAB", &mut rest);
        assert!(second.text.starts_with("  - button \"b1998\""));
        let third = next_part("TAB", &mut rest);
        assert!(!third.truncated && third.cursor.is_none());
        assert_eq!(third.text.lines().count(), 4501 - 2 * 1999);
        assert!(third.text.ends_with("button \"b4499\" [ref=e4500]"));
        assert_eq!(parse_cursor("nonsense"), None);
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

    /// A helper saw the outline tell the agent to answer with browser_dialog
    /// a dialog Chromium refuses (`answerable: false`), and, for one we
    /// never saw, a remedy browser_dialog cannot give.
    #[test]
    fn each_blocked_frame_is_given_the_remedy_that_frees_it() {
        use crate::supervisor::snapshot::{ChildFrame, TopFrame};
        let tree = FrameTreeView {
            top: Some(Arc::new(TopFrame {
                frame_id: "T".into(),
                url: "http://a.test/".into(),
                origin: "http://a.test".into(),
            })),
            children: vec![Arc::new(ChildFrame {
                frame_id: "F".into(),
                url: "http://b.test/".into(),
                origin: "http://b.test".into(),
                parent_frame_id: "T".into(),
                is_oopif: true,
                session_id: Some("S9".into()),
            })],
            truncated: false,
        };
        let dialog = |frame: &str, answerable: bool| {
            Arc::new(PendingDialog {
                id: "d-1".into(),
                dialog_type: DialogType::Alert,
                message: String::new(),
                default_prompt: String::new(),
                opened_at: 0.0,
                frame_id: Some(frame.into()),
                url: String::new(),
                answerable,
                mode: None,
                target_id: Some("T".into()),
                http_auth: None,
                answered_at_once: false,
            })
        };
        let snap = |dialogs: Vec<Arc<PendingDialog>>, unseen: &[&str]| Snapshot {
            frame_tree: Arc::new(tree.clone()),
            pending_dialogs: dialogs.into_iter().collect(),
            page_blocked: !unseen.is_empty(),
            blocked_frame_ids: unseen.iter().map(|f| f.to_string()).collect(),
            ..Snapshot::default()
        };
        let frames = frames_of(&tree, &SessionId::from("S1"));
        let blocked = |s: &Snapshot| {
            let mut b: Vec<String> = blocked_frames(s, &frames).into_iter().collect();
            b.sort();
            b
        };
        // A dialog in the OOPIF: that frame only, answered with browser_dialog.
        let s = snap(vec![dialog("F", true)], &[]);
        assert_eq!(blocked(&s), ["F"]);
        assert_eq!(remedy(&s, &frames, "F"), ANSWER_REMEDY);
        // One Chromium refuses: only navigating frees it.
        let s = snap(vec![dialog("T", false)], &[]);
        assert_eq!(blocked(&s), ["T"]);
        assert_eq!(remedy(&s, &frames, "T"), REFUSED_REMEDY);
        // One we never saw in the OOPIF: the top is read, the OOPIF is not.
        let s = snap(vec![], &["F"]);
        assert_eq!(blocked(&s), ["F"]);
        assert_eq!(remedy(&s, &frames, "F"), UNSEEN_REMEDY);
        // Both: each frame its own remedy.
        let s = snap(vec![dialog("T", true)], &["F"]);
        assert_eq!(blocked(&s), ["F", "T"]);
        assert_eq!(remedy(&s, &frames, "T"), ANSWER_REMEDY);
        assert_eq!(remedy(&s, &frames, "F"), UNSEEN_REMEDY);
    }

    #[test]
    fn keys_have_their_dom_names_and_enter_types_a_carriage_return() {
        assert_eq!(key_of("Enter").unwrap().text.as_deref(), Some("\r"));
        assert_eq!(key_of("a").unwrap().code, "KeyA");
        assert!(key_of("Hyper").is_none());
    }
}
