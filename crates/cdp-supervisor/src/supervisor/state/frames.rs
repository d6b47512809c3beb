//! Frames: where each frame belongs (its parent), which session reports it,
//! whether it is an OOPIF, and the capped tree the snapshot shows.
//!
//! The rules a newcomer changes live in [`Frames::upsert`] (a frame becomes
//! known), [`Frames::committed`] (a frame shows a new document) and
//! [`Frames::on_tree`] (a session's `Page.getFrameTree` reply).

use super::targets::Targets;
use super::{FRAME_TREE_MAX_ENTRIES, FRAME_TREE_MAX_OOPIF_DEPTH, FRAMES_TRACKED_MAX, Out};
use super::{Notice, RouteError, origin_of};
use crate::cdp::protocol::{FrameId, FrameInfo, FrameTree, SessionId};
use crate::supervisor::snapshot::{ChildFrame, FrameTreeView, TopFrame};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

#[derive(Clone, Debug)]
struct Frame {
    parent: Option<FrameId>,
    url: String,
    origin: String,
    /// The session that reports this frame.
    session: SessionId,
    /// The root of an OOPIF: its own target (target id == frame id) and session.
    is_oopif: bool,
    /// Insertion order, for a stable tree.
    seq: u64,
}

/// The frames of the supervised page, merged from every session.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    top: Option<FrameId>,
    frames: HashMap<FrameId, Frame>,
    seq: u64,
    /// Frames were not tracked ([`FRAMES_TRACKED_MAX`], or sessions past their bound).
    dropped: bool,
    /// The top document's loader (`Page.Frame.loaderId`), as the latest
    /// event says (lifecycle events included).
    top_loader: Option<String>,
    /// The loader of the top document whose frames `frames` holds: set only
    /// by a commit or a tree reply, so a lifecycle event of a new document
    /// arriving before its commit cannot pass the old frames off as its own.
    doc_loader: Option<String>,
    /// The last loader announced with [`super::Notice::PageLoaded`]: the
    /// lifecycle event and the load event both announce a load, once.
    loaded_loader: Option<String>,
    /// The tree the snapshot shows, with the [`Targets::generation`] it was
    /// built against: built at most once per change, shared by every
    /// snapshot until the next.
    view: Option<(u64, Arc<FrameTreeView>)>,
    /// The tree's shape changed since `view` was built (a frame came or
    /// went, a parent, OOPIF flag or session changed, a cap): it is rebuilt,
    /// reusing the entries of frames that did not change. See
    /// [`Frames::reshape`].
    reshaped: bool,
    /// Shown frames whose URL or origin changed since `view` was built, and
    /// nothing else: their entries are patched in, the tree is not rebuilt.
    /// (A frame the capped tree leaves out can change its URL freely.)
    url_changed: Vec<FrameId>,
}

impl Frames {
    /// A fresh tree with only the top frame (an attach or a re-attach): what
    /// the last connection saw, `truncated` included, is forgotten.
    pub fn reset(&mut self, top: FrameId, url: &str, session: &SessionId) {
        *self = Frames {
            seq: self.seq,
            ..Frames::default()
        };
        self.top = Some(top.clone());
        self.insert(&top, None, url, session);
    }

    /// The page is gone: every frame goes. Returns them.
    pub fn clear(&mut self) -> Vec<FrameId> {
        self.reshape();
        self.top_loader = None;
        self.doc_loader = None;
        self.frames.drain().map(|(id, _)| id).collect()
    }

    /// The top frame's id, once attached.
    pub fn top(&self) -> Option<&FrameId> {
        self.top.as_ref()
    }

    /// The top document's loader, when known.
    pub fn top_loader(&self) -> Option<&String> {
        self.top_loader.as_ref()
    }

    /// A lifecycle event of the top frame names its document's loader.
    pub fn set_top_loader(&mut self, frame: &FrameId, loader: String) {
        if Some(frame) == self.top.as_ref() {
            self.top_loader = Some(loader);
        }
    }

    /// Whether a load of the top document of `loader` is news (not yet
    /// announced); records it. A load with no loader is always news.
    pub fn load_is_news(&mut self, loader: Option<&String>) -> bool {
        if loader.is_some() && loader == self.loaded_loader.as_ref() {
            return false;
        }
        self.loaded_loader = loader.cloned();
        true
    }

    /// Marks the tree as missing frames (a session past its bound).
    pub fn mark_dropped(&mut self) {
        self.reshape();
        self.dropped = true;
    }

    /// The top frame's URL (empty before it is known).
    pub fn top_url(&self) -> &str {
        self.top
            .as_ref()
            .and_then(|f| self.frames.get(f))
            .map(|f| f.url.as_str())
            .unwrap_or("")
    }

    /// Sets the top frame's URL (as the browser reports it after a load).
    pub fn set_top_url(&mut self, url: String) {
        if let Some(top) = self.top.clone()
            && let Some(f) = self.frames.get_mut(&top)
            && f.url != url
            && !url.is_empty()
        {
            f.origin = origin_of(&url);
            f.url = url;
            self.patch_url(&top);
        }
    }

    /// The tree's shape changed: the kept view is stale.
    fn reshape(&mut self) {
        self.reshaped = true;
        self.url_changed.clear();
    }

    /// Frame `id`'s URL or origin changed, nothing else: if the kept view
    /// shows it, its entry is patched at the next [`Frames::view`].
    fn patch_url(&mut self, id: &FrameId) {
        let Some((_, view)) = self.view.as_ref().filter(|_| !self.reshaped) else {
            return;
        };
        let shown = view.top.as_ref().is_some_and(|t| t.frame_id == id.0)
            || view.children.iter().any(|c| c.frame_id == id.0);
        if shown && !self.url_changed.contains(id) {
            self.url_changed.push(id.clone());
        }
    }

    /// A known frame's URL.
    pub fn url_of(&self, frame: &FrameId) -> Option<String> {
        self.frames.get(frame).map(|f| f.url.clone())
    }

    /// `frame` and its ancestors, nearest first.
    pub fn lineage(&self, frame: &FrameId) -> Vec<FrameId> {
        let mut out = vec![frame.clone()];
        let mut cur = self.frames.get(frame).and_then(|f| f.parent.clone());
        while let Some(p) = cur {
            if out.contains(&p) {
                break;
            }
            cur = self.frames.get(&p).and_then(|f| f.parent.clone());
            out.push(p);
        }
        out
    }

    /// The frames `session` reports.
    pub fn of_session(&self, session: &SessionId) -> Vec<FrameId> {
        self.frames
            .iter()
            .filter(|(_, f)| &f.session == session)
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn insert(&mut self, id: &FrameId, parent: Option<&FrameId>, url: &str, session: &SessionId) {
        self.reshape();
        self.seq += 1;
        let is_top = Some(id) == self.top.as_ref();
        self.frames.insert(
            id.clone(),
            Frame {
                parent: if is_top { None } else { parent.cloned() },
                origin: origin_of(url),
                url: url.to_owned(),
                session: session.clone(),
                is_oopif: false,
                seq: self.seq,
            },
        );
    }

    /// A frame becomes known (or is seen again): a parent is learned once
    /// (never changed by a later report, except by [`Frames::set_parent`]),
    /// a URL replaces the old one. Announces a new frame below the top.
    pub fn upsert(
        &mut self,
        id: &FrameId,
        parent: Option<&FrameId>,
        url: Option<&str>,
        session: &SessionId,
        is_oopif: bool,
        out: &mut Out,
    ) {
        if let Some(f) = self.frames.get_mut(id) {
            let mut reshaped = false;
            let mut url_changed = false;
            if f.parent.is_none() && Some(id) != self.top.as_ref() {
                reshaped |= parent.is_some();
                f.parent = parent.cloned();
            }
            if let Some(u) = url
                && f.url != u
            {
                f.url = u.to_owned();
                f.origin = origin_of(u);
                url_changed = true;
            }
            if is_oopif {
                reshaped |= !f.is_oopif || &f.session != session;
                f.is_oopif = true;
                f.session = session.clone();
            }
            if reshaped {
                self.reshape();
            } else if url_changed {
                self.patch_url(id);
            }
            return;
        }
        if self.frames.len() >= FRAMES_TRACKED_MAX {
            self.dropped = true;
            self.reshape();
            return;
        }
        self.insert(id, parent, url.unwrap_or(""), session);
        if let Some(f) = self.frames.get_mut(id) {
            f.is_oopif = is_oopif;
        }
        if Some(id) != self.top.as_ref() {
            out.notice(Notice::FrameAttached {
                frame_id: id.0.clone(),
                parent_frame_id: parent.map(|p| p.0.clone()),
                is_oopif,
            });
        }
    }

    /// What the frame's own OOPIF target says of its parent (its
    /// `targetInfo.parentFrameId`, or the root `parentId` of its own tree):
    /// truer than a guess made before.
    pub fn set_parent(&mut self, id: &FrameId, parent: &FrameId) {
        if Some(id) == self.top.as_ref() || id == parent {
            return;
        }
        if let Some(f) = self.frames.get_mut(id)
            && f.parent.as_ref() != Some(parent)
        {
            f.parent = Some(parent.clone());
            self.reshape();
        }
    }

    /// A frame committed a document (`Page.frameNavigated` on `session`).
    /// A frame an OOPIF target reported, now committed on another session,
    /// moved back into that session's process. A new top document drops
    /// every frame of the old one (Chromium may not send `frameDetached`
    /// for each): those are returned, already announced as detached.
    pub fn committed(
        &mut self,
        session: &SessionId,
        own_target: bool,
        frame: &FrameInfo,
        out: &mut Out,
    ) -> Vec<FrameId> {
        let url = frame.full_url();
        let is_top = Some(&frame.id) == self.top.as_ref();
        let mut dropped = Vec::new();
        if is_top {
            let same_document = frame.loader_id.is_some() && frame.loader_id == self.doc_loader;
            if !same_document {
                let old: Vec<FrameId> = self
                    .frames
                    .keys()
                    .filter(|id| Some(*id) != self.top.as_ref())
                    .cloned()
                    .collect();
                for id in old {
                    self.frames.remove(&id);
                    out.notice(Notice::FrameDetached {
                        frame_id: id.0.clone(),
                    });
                    dropped.push(id);
                }
                self.dropped = false;
                self.reshape();
            }
            if frame.loader_id.is_some() {
                self.top_loader = frame.loader_id.clone();
                self.doc_loader = frame.loader_id.clone();
            }
        }
        self.upsert(
            &frame.id,
            frame.parent_id.as_ref(),
            Some(&url),
            session,
            own_target && !is_top,
            out,
        );
        if let Some(f) = self.frames.get_mut(&frame.id) {
            let mut reshaped = false;
            let mut url_changed = false;
            if &f.session != session && f.is_oopif && !own_target {
                f.is_oopif = false;
                f.session = session.clone();
                reshaped = true;
            }
            if let Some(origin) = frame.security_origin.as_ref().filter(|o| is_origin(o))
                && f.origin != *origin
            {
                f.origin = origin.clone();
                url_changed = true;
            }
            if reshaped {
                self.reshape();
            } else if url_changed {
                self.patch_url(&frame.id);
            }
        }
        let is_oopif = self.frames.get(&frame.id).is_some_and(|f| f.is_oopif);
        out.notice(Notice::FrameNavigated {
            frame_id: frame.id.0.clone(),
            url,
            is_oopif,
        });
        dropped
    }

    /// Removes `root` and everything below it (never the top). Returns the
    /// frames removed, announced as detached.
    pub fn remove_subtree(&mut self, root: &FrameId, out: &mut Out) -> Vec<FrameId> {
        if Some(root) == self.top.as_ref() {
            return Vec::new();
        }
        let mut doomed = vec![root.clone()];
        // `seen` (with `root`, every frame in `doomed`) ends the walk on a
        // parent cycle (a frame naming itself or a descendant as its parent:
        // never Chromium, but a proxy or mock may). A leaf, the usual case,
        // allocates for neither.
        let mut seen: HashSet<FrameId> = HashSet::new();
        let mut i = 0;
        while i < doomed.len() {
            let p = &doomed[i];
            let kids: Vec<FrameId> = self
                .frames
                .iter()
                .filter(|(id, f)| {
                    f.parent.as_ref() == Some(p) && *id != root && !seen.contains(*id)
                })
                .map(|(id, _)| id.clone())
                .collect();
            seen.extend(kids.iter().cloned());
            doomed.extend(kids);
            i += 1;
        }
        for f in &doomed {
            if self.frames.remove(f).is_some() {
                self.reshape();
                out.notice(Notice::FrameDetached {
                    frame_id: f.0.clone(),
                });
            }
        }
        doomed
    }

    /// A session's `Page.getFrameTree` reply. Replies come in wire order
    /// with events, so this is the session's current documents. A tree
    /// reply never takes an OOPIF from its own session (an OOPIF's frame may
    /// be listed by its parent too); the root of an OOPIF's own tree names
    /// its parent (`parentId`), which corrects any guess.
    pub fn on_tree(
        &mut self,
        session: &SessionId,
        own_frame: &FrameId,
        tree: FrameTree,
        out: &mut Out,
    ) {
        let mut stack = vec![(tree, None::<FrameId>)];
        while let Some((node, parent)) = stack.pop() {
            let FrameTree {
                frame,
                child_frames,
            } = node;
            let id = frame.id.clone();
            if Some(&id) == self.top.as_ref() && frame.loader_id.is_some() {
                self.top_loader = frame.loader_id.clone();
                self.doc_loader = frame.loader_id.clone();
            }
            let is_own_root = parent.is_none() && &id == own_frame;
            let parent = frame.parent_id.clone().or(parent);
            let url = frame.full_url();
            // An OOPIF not yet committed answers an empty URL: it never
            // blanks one that frame events reported, nor its origin.
            let url = Some(url.as_str()).filter(|u| !u.is_empty());
            let oopif_root = is_own_root && Some(&id) != self.top.as_ref();
            self.upsert(&id, parent.as_ref(), url, session, oopif_root, out);
            if oopif_root && let Some(p) = &parent {
                self.set_parent(&id, p);
            }
            if let Some(f) = self.frames.get_mut(&id)
                && url.is_some()
                && let Some(origin) = frame.security_origin.filter(|o| is_origin(o))
                && f.origin != origin
            {
                f.origin = origin;
                self.patch_url(&id);
            }
            // Children in reverse so they pop (and are numbered) in document order.
            for c in child_frames.into_iter().rev() {
                stack.push((c, Some(id.clone())));
            }
        }
    }

    /// Where a CDP call for `frame_id` must go: the page session for the top
    /// frame, the OOPIF's own session for an OOPIF, an error otherwise.
    pub fn route(&self, frame_id: &str, targets: &Targets) -> Result<SessionId, RouteError> {
        let top = targets.top_session().cloned().ok_or(RouteError::NoPage)?;
        let fid = FrameId(frame_id.to_owned());
        if Some(&fid) == self.top.as_ref() {
            return Ok(top);
        }
        let Some(f) = self.frames.get(&fid) else {
            let mut known: Vec<(u64, String)> = self
                .frames
                .iter()
                .map(|(id, f)| (f.seq, id.0.clone()))
                .collect();
            known.sort();
            return Err(RouteError::UnknownFrame {
                frame_id: frame_id.to_owned(),
                known: known
                    .into_iter()
                    .map(|(_, id)| id)
                    .take(FRAME_TREE_MAX_ENTRIES)
                    .collect(),
            });
        };
        if f.is_oopif && targets.has_session(&f.session) {
            return Ok(f.session.clone());
        }
        let host = (f.session != top)
            .then(|| targets.target_of(&f.session).map(|t| t.0.clone()))
            .flatten();
        Err(RouteError::SameProcess {
            frame_id: frame_id.to_owned(),
            host,
        })
    }

    /// The tree the snapshot shows: depth-first, parents before children,
    /// capped at [`FRAME_TREE_MAX_ENTRIES`] children and OOPIF depth
    /// [`FRAME_TREE_MAX_OOPIF_DEPTH`]. Built once per change of the frames
    /// or of `targets`' sessions (which decide the routable `session_id`s),
    /// then shared.
    pub fn view(&mut self, targets: &Targets) -> Arc<FrameTreeView> {
        let generation = targets.generation();
        if let Some((built_for, view)) = &mut self.view
            && *built_for == generation
            && !self.reshaped
        {
            if !self.url_changed.is_empty() {
                let tree = Arc::make_mut(view);
                for id in self.url_changed.drain(..) {
                    let Some(f) = self.frames.get(&id) else {
                        continue;
                    };
                    if let Some(top) = tree.top.as_mut().filter(|t| t.frame_id == id.0) {
                        top.url.clone_from(&f.url);
                        top.origin.clone_from(&f.origin);
                    }
                    if let Some(c) = tree.children.iter_mut().find(|c| c.frame_id == id.0) {
                        let c = Arc::make_mut(c);
                        c.url.clone_from(&f.url);
                        c.origin.clone_from(&f.origin);
                    }
                }
            }
            let view = view.clone();
            // Every change of shape drops the kept tree, every other one is
            // patched in: a missed one shows here in any debug build (every
            // test).
            debug_assert_eq!(*view, self.build_view(targets, None), "a stale frame tree");
            return view;
        }
        self.url_changed.clear();
        self.reshaped = false;
        let old = self.view.take();
        let view = Arc::new(self.build_view(targets, old.as_ref().map(|(_, v)| &**v)));
        self.view = Some((generation, view.clone()));
        view
    }

    /// Builds the tree; an entry of `old` whose frame did not change is
    /// shared, not copied.
    fn build_view(&self, targets: &Targets, old: Option<&FrameTreeView>) -> FrameTreeView {
        let mut view = FrameTreeView {
            truncated: self.dropped,
            ..Default::default()
        };
        let Some(top_id) = self.top.as_ref() else {
            return view;
        };
        let Some(top) = self.frames.get(top_id) else {
            return view;
        };
        view.top = Some(TopFrame {
            frame_id: top_id.0.clone(),
            url: top.url.clone(),
            origin: top.origin.clone(),
        });
        // Every frame below the top, in the order they became known, and
        // its parent's place in that list: `None` for the top, and for a
        // parent we never learned (the frame hangs under the top). Then
        // only indices: ids are hashed once per frame, not per visit.
        let mut nodes: Vec<(&FrameId, &Frame)> =
            self.frames.iter().filter(|(id, _)| *id != top_id).collect();
        nodes.sort_unstable_by_key(|(_, f)| f.seq);
        let place: HashMap<&FrameId, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        let parent: Vec<Option<usize>> = nodes
            .iter()
            .map(|(_, f)| f.parent.as_ref().and_then(|p| place.get(p).copied()))
            .collect();
        // Children of each node (the top's at `n`), oldest first.
        let n = nodes.len();
        let slot = |p: Option<usize>| p.unwrap_or(n);
        let mut start = vec![0usize; n + 2];
        for p in &parent {
            start[slot(*p) + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut kids = vec![0usize; n];
        for (i, p) in parent.iter().enumerate() {
            let at = &mut next[slot(*p)];
            kids[*at] = i;
            *at += 1;
        }
        let children_of = |p: usize| &kids[start[p]..start[p + 1]];
        // Depth-first, parents before children, older siblings first.
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut visited = vec![false; n];
        let mut stack: Vec<(usize, usize)> = vec![(n, 0)];
        while let Some((at, depth)) = stack.pop() {
            for &c in children_of(at).iter().rev() {
                let d = depth + usize::from(nodes[c].1.is_oopif);
                if d > FRAME_TREE_MAX_OOPIF_DEPTH {
                    view.truncated = true;
                    continue;
                }
                if !visited[c] {
                    visited[c] = true;
                    stack.push((c, d));
                }
            }
            if at != n {
                order.push(at);
            }
        }
        let keep: Vec<bool> = if order.len() <= FRAME_TREE_MAX_ENTRIES {
            visited
        } else {
            view.truncated = true;
            to_show(&order, &parent, &visited, |i| nodes[i].1.is_oopif)
        };
        let old = old.map(|v| v.children.as_slice()).unwrap_or_default();
        view.children = order
            .into_iter()
            .filter(|i| keep[*i])
            .enumerate()
            .map(|(at, i)| {
                let (id, f) = nodes[i];
                let parent = parent[i].map(|p| nodes[p].0).unwrap_or(top_id);
                let routable = f.is_oopif && targets.has_session(&f.session);
                let session_id = routable.then_some(f.session.0.as_str());
                // Mostly in the same place as before.
                let same = |c: &&Arc<ChildFrame>| {
                    c.frame_id == id.0
                        && c.url == f.url
                        && c.origin == f.origin
                        && c.parent_frame_id == parent.0
                        && c.is_oopif == f.is_oopif
                        && c.session_id.as_deref() == session_id
                };
                match old.get(at).filter(same).or_else(|| old.iter().find(same)) {
                    Some(c) => c.clone(),
                    None => Arc::new(ChildFrame {
                        frame_id: id.0.clone(),
                        url: f.url.clone(),
                        origin: f.origin.clone(),
                        parent_frame_id: parent.0.clone(),
                        is_oopif: f.is_oopif,
                        session_id: session_id.map(str::to_owned),
                    }),
                }
            })
            .collect();
        view
    }
}

/// Which [`FRAME_TREE_MAX_ENTRIES`] of `order` (node indices, depth-first,
/// parents first) a capped tree shows: the OOPIFs first, with their
/// ancestors, since they are what `browser_cdp(frame_id)` can reach; then
/// the rest in document order. Every shown frame's parent is shown too.
/// `parent[i]` is `None` for the top; `listed[i]` says whether `i` is in
/// `order`.
fn to_show(
    order: &[usize],
    parent: &[Option<usize>],
    listed: &[bool],
    is_oopif: impl Fn(usize) -> bool,
) -> Vec<bool> {
    let mut keep = vec![false; parent.len()];
    let mut kept = 0;
    for &id in order.iter().filter(|i| is_oopif(**i)) {
        let mut chain = Vec::new();
        let mut cur = Some(id);
        while let Some(c) = cur.filter(|c| !keep[*c]) {
            chain.push(c);
            cur = parent[c].filter(|p| listed[*p]);
        }
        if kept + chain.len() <= FRAME_TREE_MAX_ENTRIES {
            kept += chain.len();
            for c in chain {
                keep[c] = true;
            }
        }
    }
    for &id in order {
        if kept == FRAME_TREE_MAX_ENTRIES {
            break;
        }
        if !keep[id] {
            keep[id] = true;
            kept += 1;
        }
    }
    keep
}

/// Whether Chromium's `securityOrigin` is a real one: it says `"://"` for
/// frames with no committed document (`about:blank`, `about:srcdoc` children).
fn is_origin(o: &str) -> bool {
    !o.is_empty() && o != "://"
}
