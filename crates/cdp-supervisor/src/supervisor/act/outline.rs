//! An outline read: every frame of the current tab walked at once (each
//! with its own deadline; a frame a dialog blocks said, not asked), the
//! walks stitched into documents under their iframe lines, rendered, and
//! the refs kept as the tab's.

use super::frames::{FrameInfo, blocked_frames, frames_of, remedy};
use super::parts::{Rest, next_part};
use super::refs::{NodeRef, Owner};
use super::render::{Doc, find_lines, quote, render};
use super::walk::{FrameRead, FrameWalk, walk_frame};
use super::{OutlineMode, Page, PageOutline};
use std::collections::{HashMap, HashSet};

/// Reads of the outline: a dialog opening during one starts it again
/// (without the frame it blocks); the last one is not raced.
const OUTLINE_ATTEMPTS: u32 = 3;

impl Page {
    /// The current tab's outline in `mode`, read now; its refs are kept as
    /// the tab's and the lines past the first part for
    /// [`Page::outline_more`]. `None` when there is no
    /// connection or page.
    pub async fn outline(&self, mode: &OutlineMode) -> Option<PageOutline> {
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
        let (walk_no, known_worlds, busy) = {
            let mut tables = self.refs();
            let t = tables.tabs.entry(tab.clone()).or_default();
            t.outlines += 1;
            (t.outlines, t.worlds.clone(), t.busy.clone())
        };
        let mut attempt = 0;
        let (frames, docs, blocked, worlds, still_busy) = loop {
            attempt += 1;
            let snap = self.supervisor.snapshot();
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
                match self.supervisor.race_dialogs(all, false).await {
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
        let snap = self.supervisor.snapshot();
        let mut tables = self.refs();
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
