//! An outline read: every frame of the current tab walked at once (each
//! with its own deadline; a frame a dialog blocks said, not asked), the
//! walks stitched into documents under their iframe lines, rendered, and
//! the refs kept as the tab's.

use super::frames::{FrameInfo, blocked_frames, frames_of, remedy};
use super::parts::{Rest, next_part};
use super::refs::{NodeRef, Owner};
use super::render::{Doc, RefAt, Rendered, find_lines, quote, render};
use super::walk::{FrameRead, FrameWalk, walk_frame};
use super::{OutlineMode, PAGE_MAX_LINES, Page, PageOutline};
use crate::cdp::connection::Connection;
use crate::cdp::protocol::SessionId;
use crate::supervisor::snapshot::Snapshot;
use std::collections::{HashMap, HashSet};

/// Reads of the outline: a dialog opening during one starts it again
/// (without the frame it blocks); the last one is not raced.
const OUTLINE_ATTEMPTS: u32 = 3;

/// Each frame's isolated world: frame id → (session, execution context id).
type Worlds = HashMap<String, (SessionId, i64)>;

/// What the tab's earlier outlines leave to this one.
struct Known {
    /// This outline's number (`__cdpSupervisor.walk_no`, cursors).
    walk_no: u64,
    worlds: Worlds,
    /// Frames whose last walk got no answer in time.
    busy: HashSet<String>,
}

/// One read of every frame of the tab.
struct Read {
    frames: Vec<FrameInfo>,
    /// One a frame, in the order of `frames`.
    docs: Vec<Doc>,
    /// The frames a dialog blocks (not read).
    blocked: HashSet<String>,
    worlds: Worlds,
    /// Frames whose walk got no answer in time (still running there).
    still_busy: HashSet<String>,
}

impl Page {
    /// The current tab's outline in `mode`, read now; its refs are kept as
    /// the tab's and the lines past the first part for
    /// [`Page::outline_more`]. `None` when there is no
    /// connection or page.
    pub async fn outline(&self, mode: &OutlineMode) -> Option<PageOutline> {
        self.outline_first(mode, PAGE_MAX_LINES).await
    }

    /// [`Page::outline`] whose first part has at most `max_lines` lines
    /// (`page_cursor` gives the rest in parts of [`PAGE_MAX_LINES`]): the
    /// outline an action returns of the page it loaded.
    pub async fn outline_first(&self, mode: &OutlineMode, max_lines: usize) -> Option<PageOutline> {
        let conn = self.supervisor.connection()?;
        let (_, page) = self.supervisor.route(None, None, false).await.ok()?;
        let tab = self
            .supervisor
            .snapshot()
            .frame_tree
            .top
            .as_ref()?
            .frame_id
            .clone();
        let known = self.begin_outline(&tab);
        let mut attempt = 0;
        let read = loop {
            attempt += 1;
            let raced = attempt < OUTLINE_ATTEMPTS;
            if let Some(read) = self.read_frames(&conn, &page, &known, raced).await {
                break read;
            }
        };
        Some(self.keep_outline(&tab, known.walk_no, mode, read, max_lines))
    }

    /// Numbers the tab's new outline and takes what its last read left.
    fn begin_outline(&self, tab: &str) -> Known {
        let mut tables = self.refs();
        let t = tables.tabs.entry(tab.to_owned()).or_default();
        t.outlines += 1;
        Known {
            walk_no: t.outlines,
            worlds: t.worlds.clone(),
            busy: t.busy.clone(),
        }
    }

    /// Every frame of the tab read at once, each with its own deadline; a
    /// frame a dialog blocks (or one under it) is said, not asked. When
    /// `raced`, a dialog opening meanwhile blocks a renderer being read:
    /// `None`, to read again without it rather than wait out its deadline.
    async fn read_frames(
        &self,
        conn: &Connection,
        page: &SessionId,
        known: &Known,
        raced: bool,
    ) -> Option<Read> {
        let snap = self.supervisor.snapshot();
        let frames = frames_of(&snap.frame_tree, page);
        let blocked = blocked_frames(&snap, &frames);
        let skipped = under_blocked(&frames, &blocked);
        let reads = frames.iter().enumerate().map(|(i, f)| {
            let blocked_line = blocked
                .contains(&f.frame_id)
                .then(|| blocked_line(&snap, &frames, f));
            read_one(
                frame_read(conn, f, &frames, known),
                skipped[i],
                blocked_line,
            )
        });
        let all = futures_util::future::join_all(reads);
        let walks = if raced {
            self.supervisor.race_dialogs(all, false).await.ok()?
        } else {
            all.await
        };
        Some(stitch(frames, walks, &skipped, blocked))
    }

    /// Renders the read in `mode` and keeps it as the tab's last outline:
    /// its refs, its worlds, and its lines for `page_cursor`. Forgets the
    /// refs of tabs no longer open. Returns its first part.
    fn keep_outline(
        &self,
        tab: &str,
        walk_no: u64,
        mode: &OutlineMode,
        read: Read,
        max_lines: usize,
    ) -> PageOutline {
        let snap = self.supervisor.snapshot();
        let mut tables = self.refs();
        tables.keep_only(snap.tabs.iter().map(|t| t.target_id.as_str()));
        let t = tables.tabs.entry(tab.to_owned()).or_default();
        t.worlds = read.worlds.clone();
        t.busy = read.still_busy.clone();
        t.first_of_last = t.next + 1;
        let (lines, frame_refs, refs) = lines_in_mode(&read.docs, &mut t.next, mode);
        t.nodes = node_refs(refs, &read, walk_no);
        let mut blocked_frames: Vec<String> = read.blocked.into_iter().collect();
        blocked_frames.sort_unstable();
        t.rest = Rest {
            outline: walk_no,
            lines,
            given: 0,
            frame_refs,
            blocked_frames,
            url: read.frames[0].url.clone(),
        };
        next_part(tab, &mut t.rest, max_lines)
    }

    /// Whether the frames a dialog blocks now are the ones `outline` was
    /// read with. When they are not, its text says a frame is blocked that
    /// is not, or read one that now is: shown beside the dialogs of now,
    /// a snapshot would contradict itself (a helper saw it for ~60 ms after
    /// each dialog opened or closed).
    pub async fn outline_agrees(&self, outline: &PageOutline) -> bool {
        let Ok((_, page)) = self.supervisor.route(None, None, false).await else {
            return true;
        };
        let snap = self.supervisor.snapshot();
        let mut now: Vec<String> = blocked_frames(&snap, &frames_of(&snap.frame_tree, &page))
            .into_iter()
            .collect();
        now.sort_unstable();
        now == outline.blocked_frames
    }
}

/// Frame id → its index in `frames`.
fn positions(frames: &[FrameInfo]) -> HashMap<&str, usize> {
    frames
        .iter()
        .enumerate()
        .map(|(i, f)| (f.frame_id.as_str(), i))
        .collect()
}

/// For each frame, whether it is under a blocked one: it has nowhere to
/// be shown (and its owner could only be asked of the blocked renderer),
/// so it is not read.
fn under_blocked(frames: &[FrameInfo], blocked: &HashSet<String>) -> Vec<bool> {
    let pos = positions(frames);
    let under = |f: &FrameInfo| {
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
    frames.iter().map(under).collect()
}

/// The line said in place of a frame a dialog blocks, with what frees it.
fn blocked_line(snap: &Snapshot, frames: &[FrameInfo], f: &FrameInfo) -> String {
    format!(
        "frame {} ({}): a JavaScript dialog blocks this frame, so its content cannot be read: {}, then call browser_snapshot again",
        f.frame_id,
        f.url,
        remedy(snap, frames, &f.frame_id)
    )
}

/// What walking frame `f` needs: its world if one is known (on the same
/// session), its child frames, whether its last walk is still running.
fn frame_read(conn: &Connection, f: &FrameInfo, frames: &[FrameInfo], known: &Known) -> FrameRead {
    FrameRead {
        conn: conn.clone(),
        frame_id: f.frame_id.clone(),
        url: f.url.clone(),
        host: f.host.clone(),
        world: known
            .worlds
            .get(&f.frame_id)
            .filter(|(s, _)| *s == f.host)
            .map(|(_, c)| *c),
        children: frames
            .iter()
            .enumerate()
            .filter(|(_, c)| c.parent.as_deref() == Some(f.frame_id.as_str()))
            .map(|(j, c)| (j, c.frame_id.clone()))
            .collect(),
        busy: known.busy.contains(&f.frame_id),
        walk_no: known.walk_no,
    }
}

/// One frame walked, or the line said in its place when it is `skipped`
/// (under a blocked frame) or blocked (`blocked_line`).
async fn read_one(read: FrameRead, skipped: bool, blocked_line: Option<String>) -> FrameWalk {
    let not_read = if skipped {
        Some("not read: under a frame that could not be read".to_owned())
    } else {
        blocked_line
    };
    if let Some(line) = not_read {
        return FrameWalk {
            walk: Err(line),
            world: read.world,
            owners: Vec::new(),
            busy: read.busy,
        };
    }
    let (frame_id, url) = (read.frame_id.clone(), read.url.clone());
    let mut w = walk_frame(read).await;
    w.walk = w
        .walk
        .map_err(|e| format!("frame {frame_id} ({url}): its content could not be read ({e})"));
    w
}

/// The walks stitched into documents: each child frame's owner is its
/// iframe element's key in the parent's walk, with its backend id (for
/// the OOPIF offsets); each frame's world and busy walk are kept.
fn stitch(
    frames: Vec<FrameInfo>,
    walks: Vec<FrameWalk>,
    skipped: &[bool],
    blocked: HashSet<String>,
) -> Read {
    let mut owner_of: HashMap<usize, (usize, Option<i64>, i64)> = HashMap::new();
    for (p, r) in walks.iter().enumerate() {
        let keys = r.walk.as_ref().map(|w| w.owners.as_slice()).unwrap_or(&[]);
        for (k, (child, backend)) in r.owners.iter().enumerate() {
            owner_of.insert(*child, (p, keys.get(k).copied().flatten(), *backend));
        }
    }
    let mut worlds = HashMap::new();
    let mut still_busy = HashSet::new();
    let mut docs = Vec::with_capacity(frames.len());
    for ((i, f), r) in frames.iter().enumerate().zip(walks) {
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
    Read {
        frames,
        docs,
        blocked,
        worlds,
        still_busy,
    }
}

/// The documents rendered in `mode`: `find` searches every text too, and
/// says when nothing matched.
fn lines_in_mode(docs: &[Doc], next: &mut u64, mode: &OutlineMode) -> Rendered {
    let full = *mode != OutlineMode::Default;
    let (mut lines, frame_refs, refs) = render(docs, next, full);
    if let OutlineMode::Find(needle) = mode {
        lines = find_lines(&lines, needle);
        if lines.is_empty() {
            lines.push(format!(
                "- [nothing on the page has a role or name holding {}]",
                quote(needle)
            ));
        }
    }
    (lines, frame_refs, refs)
}

/// Each ref's node: its frame, the world and session it was walked in,
/// and the OOPIF iframe elements above it.
fn node_refs(refs: Vec<(String, RefAt)>, read: &Read, walk_no: u64) -> HashMap<String, NodeRef> {
    let frames = &read.frames;
    let pos = positions(frames);
    refs.into_iter()
        .map(|(r, at)| {
            let frame = &frames[at.doc];
            let (session, world) = read
                .worlds
                .get(&frame.frame_id)
                .cloned()
                .unwrap_or((frame.host.clone(), 0));
            let node = NodeRef {
                frame_id: frame.frame_id.clone(),
                session,
                world,
                walk_no,
                key: at.key,
                backend_node_id: 0,
                owners: owners_of(at.doc, frames, &read.docs, &pos),
            };
            (r, node)
        })
        .collect()
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
