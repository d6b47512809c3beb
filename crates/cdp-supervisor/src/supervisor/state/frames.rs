//! Frames: where each frame belongs (its parent), which session reports it,
//! whether it is an OOPIF, and the capped tree the snapshot shows.
//!
//! The rules a newcomer changes live in [`Frames::upsert`] (a frame becomes
//! known), [`Frames::committed`] (a frame shows a new document) and
//! [`Frames::on_tree`] (a session's `Page.getFrameTree` reply).
//!
//! Frames sit in a slab. Each keeps the slot of the parent it hangs under and
//! its children's slots, oldest first, updated as frames come, go and learn
//! their parent: the tree the snapshot shows is one walk over slots, with no
//! id hashed.

use super::targets::Targets;
use super::{FRAME_TREE_MAX_ENTRIES, FRAME_TREE_MAX_OOPIF_DEPTH, FRAMES_TRACKED_MAX, Out};
use super::{Notice, RouteError, origin_of};
use crate::cdp::protocol::{FrameId, FrameInfo, FrameTree, SessionId};
use crate::supervisor::snapshot::{ArcStr, ChildFrame, FrameTreeView, TopFrame};
use std::borrow::Cow;
// foldhash, not SipHash: see `targets.rs`.
use foldhash::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug)]
struct Frame {
    id: FrameId,
    /// The parent the frame was reported with (`None` for the top, or when
    /// never reported).
    parent: Option<FrameId>,
    /// The slot of the parent it hangs under: `None` when it hangs under the
    /// top (its parent is the top, unknown, or was never reported).
    up: Option<usize>,
    /// The slots of the frames that hang under it, oldest (`seq`) first.
    kids: Vec<usize>,
    /// Shared with the entries and snapshots that show it; replaced only
    /// when it changes.
    url: ArcStr,
    /// As `url`.
    origin: ArcStr,
    /// The session that reports this frame.
    session: SessionId,
    /// The root of an OOPIF: its own target (target id == frame id) and session.
    is_oopif: bool,
    /// Insertion order, for a stable tree.
    seq: u64,
    /// The entry the snapshot last showed for it, while still true: dropped
    /// when its URL, origin, parent, OOPIF flag or session changes. With the
    /// [`Targets::generation`] whose sessions decided its `session_id`: while
    /// that is current, the entry is true without looking the session up.
    entry: Option<(u64, Arc<ChildFrame>)>,
}

/// The frames of the supervised page, merged from every session.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    top: Option<FrameId>,
    /// The slot of the top frame, while it is known: kept by `insert`,
    /// `remove`, `remove_all_but_top` and `clear` (the only places a slot
    /// changes hands), so that every snapshot finds the top without
    /// comparing or hashing its id.
    top_at: Option<usize>,
    /// Every frame known, by slot; a free slot is `None` (see `free`).
    slots: Vec<Option<Frame>>,
    /// The slot of each known frame.
    index: HashMap<FrameId, usize>,
    free: Vec<usize>,
    /// The slots that hang under the top, oldest first.
    roots: Vec<usize>,
    /// The slots of the frames that are OOPIFs, in no order.
    oopifs: Vec<usize>,
    /// How many frames name a parent that is not known (not the top): they
    /// hang under the top until it comes.
    orphans: usize,
    seq: u64,
    /// Frames were not tracked ([`FRAMES_TRACKED_MAX`], or sessions past their bound).
    dropped: bool,
    /// The top document's loader (`Page.Frame.loaderId`), as the latest
    /// event says (lifecycle events included).
    top_loader: Option<String>,
    /// The loader of the top document whose frames the slab holds: set only
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
    /// The slots of `view`'s children, in order (valid while the view is
    /// kept: a slot is freed or reused only by a change that reshapes).
    view_slots: Vec<usize>,
    /// The slots of shown frames whose URL or origin changed since `view`
    /// was built, and nothing else: their entries are patched in, the tree
    /// is not rebuilt. (A frame the capped tree leaves out can change its
    /// URL freely.)
    url_changed: Vec<usize>,
    /// The working lists of [`Frames::build_view`], kept so that a rebuild
    /// allocates nothing but the tree.
    scratch: Scratch,
}

/// [`Frames::build_view`]'s working lists (empty between builds).
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// By slot: the frame is shown (a capped tree).
    keep: Vec<bool>,
    /// The OOPIFs a capped tree may show.
    showable: Vec<usize>,
    /// The frames [`Frames::force_oopifs`] marked in `keep`.
    forced: Vec<usize>,
    /// The walk for the first frames: (frame, next child, OOPIF depth).
    stack: Vec<(Option<usize>, usize, usize)>,
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
        // Most pages never hold another frame: room for the top alone.
        self.slots.reserve_exact(1);
        self.insert(top, None, url, session, false);
    }

    /// The page is gone: every frame goes. Returns them, oldest first.
    pub fn clear(&mut self) -> Vec<FrameId> {
        self.reshape();
        self.top_loader = None;
        self.doc_loader = None;
        self.top_at = None;
        self.index.clear();
        self.free.clear();
        self.roots.clear();
        self.oopifs.clear();
        self.orphans = 0;
        let mut gone: Vec<Frame> = self.slots.drain(..).flatten().collect();
        gone.sort_unstable_by_key(|f| f.seq);
        gone.into_iter().map(|f| f.id).collect()
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

    /// The loader of the last top document whose load was announced.
    pub fn loaded_loader(&self) -> Option<&str> {
        self.loaded_loader.as_deref()
    }

    /// Marks the tree as missing frames (a session past its bound).
    pub fn mark_dropped(&mut self) {
        self.reshape();
        self.dropped = true;
    }

    /// The top frame's URL (empty before it is known).
    pub fn top_url(&self) -> &ArcStr {
        const NONE: &ArcStr = &arcstr::literal!("");
        self.top_frame().map_or(NONE, |f| &f.url)
    }

    /// Sets the top frame's URL (as the browser reports it after a load).
    pub fn set_top_url(&mut self, url: &str) {
        if let Some(top) = self.top.clone()
            && !url.is_empty()
        {
            self.move_url(&top, url, || Some(origin_of(url).into()));
        }
    }

    /// A same-document navigation of a known frame
    /// (`Page.navigatedWithinDocument`): its URL changes, its origin and
    /// everything else stay.
    pub fn navigated_within_document(&mut self, frame: &FrameId, url: &str) {
        if !url.is_empty() {
            self.move_url(frame, url, || None);
        }
    }

    /// Known frame `id` is at a new `url`, with the origin `origin` gives
    /// (`None`: it keeps its own), asked only when the URL changed. Its
    /// entry is made again, and patched into the kept tree if shown.
    /// Nothing for an unknown frame or the URL it has.
    fn move_url(&mut self, id: &FrameId, url: &str, origin: impl FnOnce() -> Option<ArcStr>) {
        if let Some(&i) = self.index.get(id)
            && let Some(f) = self.slots[i].as_mut()
            && f.url != url
        {
            f.url = url.into();
            if let Some(o) = origin() {
                f.origin = o;
            }
            f.entry = None;
            self.patch_url(i);
        }
    }

    /// The tree's shape changed: the kept view is stale.
    fn reshape(&mut self) {
        self.reshaped = true;
        self.url_changed.clear();
    }

    /// The frame in slot `i` changed its URL or origin, nothing else: if
    /// the kept view shows it, its entry is patched at the next
    /// [`Frames::view`].
    fn patch_url(&mut self, i: usize) {
        if self.reshaped || self.view.is_none() || self.url_changed.contains(&i) {
            return;
        }
        let is_top = self.at(i).is_some_and(|f| Some(&f.id) == self.top.as_ref());
        if is_top || self.view_slots.contains(&i) {
            self.url_changed.push(i);
        }
    }

    /// As [`Frames::patch_url`], for frame `id`.
    fn patch_url_of(&mut self, id: &FrameId) {
        if let Some(&i) = self.index.get(id) {
            self.patch_url(i);
        }
    }

    /// A known frame's URL.
    pub fn url_of(&self, frame: &FrameId) -> Option<String> {
        self.get(frame).map(|f| f.url.to_string())
    }

    /// `frame` and its ancestors, nearest first.
    pub fn lineage(&self, frame: &FrameId) -> Vec<FrameId> {
        let mut out = vec![frame.clone()];
        let mut cur = self.get(frame).and_then(|f| f.parent.clone());
        while let Some(p) = cur {
            if out.contains(&p) {
                break;
            }
            cur = self.get(&p).and_then(|f| f.parent.clone());
            out.push(p);
        }
        out
    }

    /// The session that reports `frame`, when the frame is known.
    pub fn session_of(&self, frame: &FrameId) -> Option<&SessionId> {
        self.get(frame).map(|f| &f.session)
    }

    /// The frames `session` reports.
    pub fn of_session(&self, session: &SessionId) -> Vec<FrameId> {
        self.slots
            .iter()
            .flatten()
            .filter(|f| &f.session == session)
            .map(|f| f.id.clone())
            .collect()
    }

    /// The top frame, when known.
    fn top_frame(&self) -> Option<&Frame> {
        self.top_slot().and_then(|i| self.at(i))
    }

    /// The top frame's slot, when known.
    fn top_slot(&self) -> Option<usize> {
        debug_assert_eq!(
            self.top_at,
            self.top.as_ref().and_then(|t| self.index.get(t).copied()),
            "top_at is the top frame's slot"
        );
        self.top_at
    }

    fn get(&self, id: &FrameId) -> Option<&Frame> {
        self.index.get(id).and_then(|&i| self.at(i))
    }

    fn get_mut(&mut self, id: &FrameId) -> Option<&mut Frame> {
        let i = *self.index.get(id)?;
        self.slots.get_mut(i)?.as_mut()
    }

    fn at(&self, i: usize) -> Option<&Frame> {
        self.slots.get(i)?.as_ref()
    }

    /// The slots that hang under `up`'s frame (the top's for `None`).
    fn kids(&self, up: Option<usize>) -> &[usize] {
        match up {
            None => &self.roots,
            Some(p) => self.at(p).map(|f| f.kids.as_slice()).unwrap_or_default(),
        }
    }

    fn kids_mut(&mut self, up: Option<usize>) -> Option<&mut Vec<usize>> {
        match up {
            None => Some(&mut self.roots),
            Some(p) => self.slots.get_mut(p)?.as_mut().map(|f| &mut f.kids),
        }
    }

    /// Whether `f` names a parent that is not known (nor the top).
    fn is_orphan(&self, f: &Frame) -> bool {
        f.up.is_none()
            && f.parent
                .as_ref()
                .is_some_and(|p| Some(p) != self.top.as_ref())
    }

    /// Hangs slot `i` under the parent it names (under the top when that is
    /// not known), among its siblings by age.
    fn hang(&mut self, i: usize) {
        let Some(f) = self.at(i) else {
            return;
        };
        let up = self.named_parent(f);
        let seq = f.seq;
        let at = self
            .kids(up)
            .partition_point(|&k| self.at(k).is_some_and(|k| k.seq < seq));
        if let Some(list) = self.kids_mut(up) {
            list.insert(at, i);
        }
        if let Some(f) = self.slots[i].as_mut() {
            f.up = up;
            f.entry = None;
        }
        if self.at(i).is_some_and(|f| self.is_orphan(f)) {
            self.orphans += 1;
        }
    }

    /// The slot of the parent `f` names, when known and not the top.
    fn named_parent(&self, f: &Frame) -> Option<usize> {
        f.parent
            .as_ref()
            .filter(|p| Some(*p) != self.top.as_ref())
            .and_then(|p| self.index.get(p).copied())
    }

    /// Takes slot `i` from under its parent.
    fn unhang(&mut self, i: usize) {
        let Some(f) = self.at(i) else {
            return;
        };
        let up = f.up;
        if self.is_orphan(f) {
            self.orphans = self.orphans.saturating_sub(1);
        }
        if let Some(list) = self.kids_mut(up)
            && let Some(at) = list.iter().position(|&k| k == i)
        {
            list.remove(at);
        }
        if let Some(f) = self.slots[i].as_mut() {
            f.up = None;
            f.entry = None;
        }
    }

    /// Slot `i`'s frame now names `parent` as its parent.
    fn reparent(&mut self, i: usize, parent: FrameId) {
        self.reshape();
        self.unhang(i);
        if let Some(f) = self.slots[i].as_mut() {
            f.parent = Some(parent);
        }
        self.hang(i);
    }

    /// Frames that named slot `i`'s frame as their parent before it was
    /// known (they hung under the top) now hang under it.
    fn adopt(&mut self, i: usize) {
        if self.orphans == 0 {
            return;
        }
        let Some(id) = self.at(i).map(|f| &f.id) else {
            return;
        };
        let waiting: Vec<usize> = self
            .roots
            .iter()
            .copied()
            .filter(|&k| self.at(k).is_some_and(|f| f.parent.as_ref() == Some(id)))
            .collect();
        for k in waiting {
            self.unhang(k);
            self.hang(k);
        }
    }

    fn insert(
        &mut self,
        id: FrameId,
        parent: Option<FrameId>,
        url: &str,
        session: &SessionId,
        is_oopif: bool,
    ) {
        self.reshape();
        self.seq += 1;
        let is_top = Some(&id) == self.top.as_ref();
        let key = id.clone();
        let frame = Frame {
            id,
            parent: if is_top { None } else { parent },
            up: None,
            kids: Vec::new(),
            origin: origin_of(url).into(),
            url: url.into(),
            session: session.clone(),
            is_oopif,
            seq: self.seq,
            entry: None,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(frame);
                i
            }
            None => {
                self.slots.push(Some(frame));
                self.slots.len() - 1
            }
        };
        self.index.insert(key, i);
        if is_top {
            self.top_at = Some(i);
        }
        self.track_oopif(i);
        if !is_top {
            self.hang(i);
            self.adopt(i);
        }
    }

    /// Forgets slot `i`'s frame. Its children keep pointing at the slot:
    /// callers remove whole subtrees.
    fn remove(&mut self, i: usize) -> Option<Frame> {
        self.reshape();
        self.unhang(i);
        let f = self.slots.get_mut(i)?.take()?;
        self.index.remove(&f.id);
        if self.top_at == Some(i) {
            self.top_at = None;
        }
        self.free.push(i);
        self.track_oopif(i);
        Some(f)
    }

    /// Keeps `oopifs` true to slot `i` (its frame is an OOPIF, or not, or gone).
    fn track_oopif(&mut self, i: usize) {
        let is_oopif = self.at(i).is_some_and(|f| f.is_oopif);
        match self.oopifs.iter().position(|&o| o == i) {
            None if is_oopif => self.oopifs.push(i),
            Some(at) if !is_oopif => {
                self.oopifs.swap_remove(at);
            }
            _ => {}
        }
    }

    /// A frame becomes known (or is seen again): a parent is learned once
    /// (never changed by a later report, except by [`Frames::set_parent`]),
    /// a URL replaces the old one. Announces a new frame below the top.
    /// Ids given owned are kept as they are (a frame flood copies fewer),
    /// borrowed ones are copied when kept.
    pub fn upsert(
        &mut self,
        id: Cow<'_, FrameId>,
        parent: Option<Cow<'_, FrameId>>,
        url: Option<&str>,
        session: &SessionId,
        is_oopif: bool,
        out: &mut Out,
    ) {
        if let Some(&i) = self.index.get(&*id) {
            let is_top = Some(&*id) == self.top.as_ref();
            if let Some(p) = parent
                && !is_top
                && self.at(i).is_some_and(|f| f.parent.is_none())
            {
                self.reparent(i, p.into_owned());
            }
            let Some(f) = self.slots[i].as_mut() else {
                return;
            };
            let mut reshaped = false;
            let mut url_changed = false;
            if let Some(u) = url
                && f.url != u
            {
                f.url = u.into();
                f.origin = origin_of(u).into();
                f.entry = None;
                url_changed = true;
            }
            if is_oopif && (!f.is_oopif || &f.session != session) {
                f.is_oopif = true;
                f.session = session.clone();
                f.entry = None;
                reshaped = true;
            }
            if reshaped {
                self.reshape();
                self.track_oopif(i);
            } else if url_changed {
                self.patch_url(i);
            }
            return;
        }
        if self.index.len() >= FRAMES_TRACKED_MAX {
            self.dropped = true;
            self.reshape();
            return;
        }
        if Some(&*id) != self.top.as_ref() {
            out.watch_notice(|| Notice::FrameAttached {
                frame_id: id.0.clone(),
                parent_frame_id: parent.as_ref().map(|p| p.0.clone()),
                is_oopif,
            });
        }
        let parent = parent.map(Cow::into_owned);
        self.insert(
            id.into_owned(),
            parent,
            url.unwrap_or(""),
            session,
            is_oopif,
        );
    }

    /// What the frame's own OOPIF target says of its parent (its
    /// `targetInfo.parentFrameId`, or the root `parentId` of its own tree):
    /// truer than a guess made before.
    pub fn set_parent(&mut self, id: &FrameId, parent: &FrameId) {
        if Some(id) == self.top.as_ref() || id == parent {
            return;
        }
        if let Some(&i) = self.index.get(id)
            && self
                .at(i)
                .is_some_and(|f| f.parent.as_ref() != Some(parent))
        {
            self.reparent(i, parent.clone());
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
        let origin = frame.security_origin.as_deref().filter(|o| is_origin(o));
        // A known frame's new URL, with the origin Chromium gives (`upsert`
        // would parse the URL for it).
        if let Some(origin) = origin {
            self.move_url(&frame.id, &url, || Some(origin.into()));
        }
        let mut dropped = Vec::new();
        if is_top {
            let same_document = frame.loader_id.is_some() && frame.loader_id == self.doc_loader;
            if !same_document {
                for id in self.remove_all_but_top() {
                    out.watch_notice(|| Notice::FrameDetached {
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
            Cow::Borrowed(&frame.id),
            frame.parent_id.as_ref().map(Cow::Borrowed),
            Some(&url),
            session,
            own_target && !is_top,
            out,
        );
        if let Some(f) = self.get_mut(&frame.id) {
            let mut reshaped = false;
            let mut url_changed = false;
            if &f.session != session && f.is_oopif && !own_target {
                f.is_oopif = false;
                f.session = session.clone();
                f.entry = None;
                reshaped = true;
            }
            if let Some(origin) = origin
                && f.origin != origin
            {
                f.origin = origin.into();
                f.entry = None;
                url_changed = true;
            }
            if reshaped {
                self.reshape();
                if let Some(&i) = self.index.get(&frame.id) {
                    self.track_oopif(i);
                }
            } else if url_changed {
                self.patch_url_of(&frame.id);
            }
        }
        let is_oopif = self.get(&frame.id).is_some_and(|f| f.is_oopif);
        out.notice(Notice::FrameNavigated {
            frame_id: frame.id.0.clone(),
            url,
            is_oopif,
        });
        dropped
    }

    /// Forgets every frame but the top. Returns them, oldest first.
    fn remove_all_but_top(&mut self) -> Vec<FrameId> {
        let mut top = None;
        let mut gone = Vec::new();
        for f in std::mem::take(&mut self.slots).into_iter().flatten() {
            if Some(&f.id) == self.top.as_ref() {
                top = Some(f);
            } else {
                gone.push(f);
            }
        }
        // The slab starts again with the top alone, in the first slot: a
        // page that held many frames keeps no room for them.
        self.index = HashMap::default();
        self.free = Vec::new();
        self.roots = Vec::new();
        self.oopifs = Vec::new();
        self.orphans = 0;
        self.view_slots = Vec::new();
        self.scratch = Scratch::default();
        self.top_at = None;
        if let Some(f) = top {
            self.top_at = Some(0);
            self.index.insert(f.id.clone(), 0);
            self.slots = vec![Some(f)];
            self.track_oopif(0);
        }
        gone.sort_unstable_by_key(|f| f.seq);
        gone.into_iter().map(|f| f.id).collect()
    }

    /// Removes `root` and everything below it (never the top). Returns the
    /// frames removed, announced as detached, `root` first (even when it was
    /// not known: frames that named it as their parent go).
    pub fn remove_subtree(&mut self, root: &FrameId, out: &mut Out) -> Vec<FrameId> {
        if Some(root) == self.top.as_ref() {
            return Vec::new();
        }
        let known = self.index.get(root).copied();
        let mut doomed: Vec<usize> = match known {
            Some(r) => vec![r],
            None => self
                .roots
                .iter()
                .copied()
                .filter(|&k| self.at(k).is_some_and(|f| f.parent.as_ref() == Some(root)))
                .collect(),
        };
        // Down the children's lists. `seen` ends the walk on a parent cycle
        // (a frame naming itself or a descendant as its parent: never
        // Chromium, but a proxy or mock may); a leaf, the usual case,
        // allocates none.
        let mut seen: Vec<bool> = Vec::new();
        let mut i = 0;
        while i < doomed.len() {
            let kids = self.kids(Some(doomed[i]));
            if !kids.is_empty() && seen.is_empty() {
                seen = vec![false; self.slots.len()];
                for &d in &doomed {
                    seen[d] = true;
                }
            }
            for &k in kids {
                if !seen[k] {
                    seen[k] = true;
                    doomed.push(k);
                }
            }
            i += 1;
        }
        let mut gone = Vec::with_capacity(doomed.len() + 1);
        if known.is_none() {
            gone.push(root.clone());
        }
        for d in doomed {
            if let Some(f) = self.remove(d) {
                out.watch_notice(|| Notice::FrameDetached {
                    frame_id: f.id.0.clone(),
                });
                gone.push(f.id);
            }
        }
        gone
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
            let kin = parent.as_ref().map(Cow::Borrowed);
            self.upsert(Cow::Borrowed(&id), kin, url, session, oopif_root, out);
            if oopif_root && let Some(p) = &parent {
                self.set_parent(&id, p);
            }
            if let Some(f) = self.get_mut(&id)
                && url.is_some()
                && let Some(origin) = frame.security_origin.filter(|o| is_origin(o))
                && f.origin != origin
            {
                f.origin = origin.into();
                f.entry = None;
                self.patch_url_of(&id);
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
        let Some(f) = self.get(&fid) else {
            let mut known: Vec<(u64, String)> = self
                .slots
                .iter()
                .flatten()
                .map(|f| (f.seq, f.id.0.clone()))
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
        let kept = !self.reshaped && self.view.as_ref().is_some_and(|(g, _)| *g == generation);
        if !kept {
            self.url_changed.clear();
            self.reshaped = false;
            let view = Arc::new(self.build_view(targets));
            self.view = Some((generation, view));
        } else if !self.url_changed.is_empty() {
            self.patch_urls();
        }
        let view = self
            .view
            .as_ref()
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        // The kept tree and its entries against a tree built from the ids
        // alone: a missed change shows here in any debug build (every test).
        #[cfg(debug_assertions)]
        assert_eq!(*view, self.reference_view(targets), "a stale frame tree");
        view
    }

    /// Patches the URLs and origins of `url_changed` into the kept tree.
    fn patch_urls(&mut self) {
        let Some((generation, view)) = self.view.as_mut() else {
            return;
        };
        let tree = Arc::make_mut(view);
        for i in self.url_changed.drain(..) {
            let Some(f) = self.slots.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            if let Some(top) = tree.top.as_mut().filter(|t| t.frame_id == f.id.0) {
                let top = Arc::make_mut(top);
                top.url.clone_from(&f.url);
                top.origin.clone_from(&f.origin);
            }
            let shown = self.view_slots.iter().position(|&s| s == i);
            if let Some(c) = shown
                .and_then(|p| tree.children.get_mut(p))
                .filter(|c| c.frame_id == f.id.0)
            {
                let mut patched = ChildFrame::clone(c);
                patched.url.clone_from(&f.url);
                patched.origin.clone_from(&f.origin);
                let patched = Arc::new(patched);
                f.entry = Some((*generation, patched.clone()));
                *c = patched;
            }
        }
    }

    /// Builds the tree: one walk down the children's lists. A frame whose
    /// entry is still true shares it. Its working lists are kept in
    /// `scratch` from one build to the next.
    fn build_view(&mut self, targets: &Targets) -> FrameTreeView {
        let mut view = FrameTreeView {
            truncated: self.dropped,
            ..Default::default()
        };
        let mut shown = std::mem::take(&mut self.view_slots);
        shown.clear();
        let Some(top) = self.top_frame() else {
            return view;
        };
        view.top = Some(self.top_entry(top));
        let mut s = std::mem::take(&mut self.scratch);
        self.first_in_document_order(&mut s, &mut shown);
        if shown.len() > FRAME_TREE_MAX_ENTRIES {
            view.truncated = true;
            self.cap_shown(&mut s, &mut shown, &mut view.truncated);
        } else if !view.truncated {
            // Every frame fits: an OOPIF too deep is the only cut.
            view.truncated = self
                .oopifs_under_top()
                .any(|(_, d)| d > FRAME_TREE_MAX_OOPIF_DEPTH);
        }
        self.scratch = s;
        view.children = Vec::with_capacity(shown.len());
        for &i in &shown {
            view.children.extend(self.entry(i, targets));
        }
        self.view_slots = shown;
        view
    }

    /// The top's entry, shared with the last tree while still true. Its
    /// id is the same: only `reset` sets the top, and it drops the tree.
    fn top_entry(&self, top: &Frame) -> Arc<TopFrame> {
        let shown_top = self.view.as_ref().and_then(|(_, v)| v.top.as_ref());
        debug_assert!(shown_top.is_none_or(|t| t.frame_id == top.id.0));
        match shown_top.filter(|t| t.url == top.url && t.origin == top.origin) {
            Some(t) => t.clone(),
            None => Arc::new(TopFrame {
                frame_id: top.id.0.clone(),
                url: top.url.clone(),
                origin: top.origin.clone(),
            }),
        }
    }

    /// Fills `shown` with the first frames in document order (depth-first,
    /// parents before children, older siblings first), one more than the
    /// cap: that many say the tree is capped, and the cap fills from these.
    /// OOPIFs too deep are left out (`force_oopifs` says so). A page of one
    /// frame (most of them) walks nothing and keeps no list.
    fn first_in_document_order(&self, s: &mut Scratch, shown: &mut Vec<usize>) {
        s.stack.clear();
        if !self.roots.is_empty() {
            s.stack.push((None, 0, 0));
        }
        while let Some((at, next, depth)) = s.stack.last_mut() {
            let Some(&c) = self.kids(*at).get(*next) else {
                s.stack.pop();
                continue;
            };
            *next += 1;
            let Some(f) = self.at(c) else {
                continue;
            };
            let d = *depth + usize::from(f.is_oopif);
            if d > FRAME_TREE_MAX_OOPIF_DEPTH {
                continue;
            }
            shown.push(c);
            if shown.len() > FRAME_TREE_MAX_ENTRIES {
                break;
            }
            s.stack.push((Some(c), 0, d));
        }
    }

    /// Cuts `shown` (one frame over the cap) to [`FRAME_TREE_MAX_ENTRIES`]:
    /// the OOPIFs first, then the first frames, listed in document order —
    /// the first frames lead, in order; the other OOPIFs (and ancestors)
    /// kept come after them all in document order.
    fn cap_shown(&self, s: &mut Scratch, shown: &mut Vec<usize>, truncated: &mut bool) {
        s.keep.clear();
        s.keep.resize(self.slots.len(), false);
        let mut kept = self.force_oopifs(s, truncated);
        let mut lead = 0;
        for &c in shown.iter() {
            if kept == FRAME_TREE_MAX_ENTRIES {
                break;
            }
            lead += 1;
            if !s.keep[c] {
                s.keep[c] = true;
                kept += 1;
            }
        }
        shown.truncate(lead);
        for &f in &s.forced {
            if !shown[..lead].contains(&f) {
                shown.push(f);
            }
        }
        shown[lead..].sort_unstable_by(|&a, &b| self.doc_order(a, b));
    }

    /// Marks the OOPIFs a capped tree shows first, with their ancestors,
    /// since they are what `browser_cdp(frame_id)` can reach: in document
    /// order, each whose chain still fits [`FRAME_TREE_MAX_ENTRIES`].
    /// Returns how many it marked (in `s.keep`, all false before); sets
    /// `truncated` when an OOPIF is deeper than
    /// [`FRAME_TREE_MAX_OOPIF_DEPTH`].
    fn force_oopifs(&self, s: &mut Scratch, truncated: &mut bool) -> usize {
        let keep = &mut s.keep;
        let forced = &mut s.forced;
        forced.clear();
        // The OOPIFs within the depth; one deeper cuts the tree.
        let showable = &mut s.showable;
        showable.clear();
        for (o, d) in self.oopifs_under_top() {
            if d > FRAME_TREE_MAX_OOPIF_DEPTH {
                *truncated = true;
            } else {
                showable.push(o);
            }
        }
        // Each with its ancestors: usually they all fit.
        let mut kept = 0;
        for &o in showable.iter() {
            let mut cur = Some(o);
            while let Some(c) = cur.filter(|c| !keep[*c]) {
                keep[c] = true;
                forced.push(c);
                kept += 1;
                cur = self.at(c).and_then(|f| f.up);
            }
        }
        if kept <= FRAME_TREE_MAX_ENTRIES {
            return kept;
        }
        // They do not all fit: first come, first kept, in document order
        // (the path of ages from the top).
        keep.fill(false);
        forced.clear();
        let mut chains: Vec<Vec<usize>> = showable
            .iter()
            .map(|&o| {
                let mut chain = vec![o];
                while let Some(up) = chain.last().and_then(|&c| self.at(c)).and_then(|f| f.up) {
                    chain.push(up);
                }
                chain
            })
            .collect();
        let path = |chain: &Vec<usize>| -> Vec<u64> {
            chain
                .iter()
                .rev()
                .filter_map(|&c| self.at(c))
                .map(|f| f.seq)
                .collect()
        };
        chains.sort_by_cached_key(path);
        kept = 0;
        for chain in &chains {
            let new = chain.iter().take_while(|c| !keep[**c]).count();
            if kept + new <= FRAME_TREE_MAX_ENTRIES {
                kept += new;
                for &c in &chain[..new] {
                    keep[c] = true;
                    forced.push(c);
                }
            }
        }
        kept
    }

    /// The OOPIFs that hang under the top (not the top itself, nor one in a
    /// parent cycle), each with its OOPIF depth.
    fn oopifs_under_top(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let top = self.top_slot();
        self.oopifs
            .iter()
            .filter(move |&&o| Some(o) != top)
            .filter_map(|&o| Some((o, self.oopif_depth(o)?)))
    }

    /// How many OOPIFs frame `o` and its ancestors count (`o` included);
    /// `None` when `o` does not hang under the top (a parent cycle).
    fn oopif_depth(&self, o: usize) -> Option<usize> {
        let mut depth = 0;
        let mut cur = Some(o);
        for _ in 0..=self.index.len() {
            let Some(c) = cur else {
                return Some(depth);
            };
            let f = self.at(c)?;
            depth += usize::from(f.is_oopif);
            cur = f.up;
        }
        None
    }

    /// The document order of two frames that hang under the top
    /// (depth-first, parents before children, older siblings first),
    /// found by walking up from both: no list is read.
    fn doc_order(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let up = |c: usize| self.at(c).and_then(|f| f.up);
        let depth = |c: usize| std::iter::successors(up(c), |&u| up(u)).count();
        let (mut a, mut b) = (a, b);
        let (da, db) = (depth(a), depth(b));
        for _ in db..da {
            a = up(a).unwrap_or(a);
        }
        for _ in da..db {
            b = up(b).unwrap_or(b);
        }
        if a == b {
            // One is the other's ancestor (or they are one frame).
            return da.cmp(&db);
        }
        while let (Some(pa), Some(pb)) = (up(a), up(b))
            && pa != pb
        {
            (a, b) = (pa, pb);
        }
        let seq = |c: usize| self.at(c).map(|f| f.seq);
        seq(a).cmp(&seq(b))
    }

    /// Slot `i`'s entry in the tree: the one shown before while still true,
    /// else a new one, kept for next time.
    fn entry(&mut self, i: usize, targets: &Targets) -> Option<Arc<ChildFrame>> {
        let f = self.at(i)?;
        let generation = targets.generation();
        if let Some((g, e)) = &f.entry
            && *g == generation
        {
            return Some(e.clone());
        }
        let routable = f.is_oopif && targets.has_session(&f.session);
        let session_id = routable.then_some(f.session.0.as_str());
        if let Some((_, e)) = &f.entry
            && e.session_id.as_deref() == session_id
        {
            let e = e.clone();
            self.slots[i].as_mut()?.entry = Some((generation, e.clone()));
            return Some(e);
        }
        let parent = match f.up {
            Some(p) => self.at(p).map(|p| &p.id),
            None => self.top.as_ref(),
        };
        let e = Arc::new(ChildFrame {
            frame_id: f.id.0.clone(),
            url: f.url.clone(),
            origin: f.origin.clone(),
            parent_frame_id: parent.map(|p| p.0.clone()).unwrap_or_default(),
            is_oopif: f.is_oopif,
            session_id: session_id.map(str::to_owned),
        });
        self.slots[i].as_mut()?.entry = Some((generation, e.clone()));
        Some(e)
    }

    /// The tree built from the frames' ids and parents alone, hashing ids,
    /// without the slab's lists or kept entries: what [`Frames::view`]
    /// must equal.
    #[cfg(debug_assertions)]
    fn reference_view(&self, targets: &Targets) -> FrameTreeView {
        let mut view = FrameTreeView {
            truncated: self.dropped,
            ..Default::default()
        };
        let Some(top_id) = self.top.as_ref() else {
            return view;
        };
        let Some(top) = self.get(top_id) else {
            return view;
        };
        view.top = Some(Arc::new(TopFrame {
            frame_id: top_id.0.clone(),
            url: top.url.clone(),
            origin: top.origin.clone(),
        }));
        let mut nodes: Vec<&Frame> = self
            .slots
            .iter()
            .flatten()
            .filter(|f| &f.id != top_id)
            .collect();
        nodes.sort_unstable_by_key(|f| f.seq);
        let place: HashMap<&FrameId, usize> =
            nodes.iter().enumerate().map(|(i, f)| (&f.id, i)).collect();
        let parent: Vec<Option<usize>> = nodes
            .iter()
            .map(|f| f.parent.as_ref().and_then(|p| place.get(p).copied()))
            .collect();
        let n = nodes.len();
        // Children of each node (the top's at `n`), oldest first.
        let mut kids: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        for (i, p) in parent.iter().enumerate() {
            kids[p.unwrap_or(n)].push(i);
        }
        let mut order = Vec::new();
        let mut listed = vec![false; n];
        let mut stack: Vec<(Option<usize>, usize)> = vec![(None, 0)];
        while let Some((at, depth)) = stack.pop() {
            for &c in kids[at.unwrap_or(n)].iter().rev() {
                let d = depth + usize::from(nodes[c].is_oopif);
                if d > FRAME_TREE_MAX_OOPIF_DEPTH {
                    view.truncated = true;
                } else if !listed[c] {
                    listed[c] = true;
                    stack.push((Some(c), d));
                }
            }
            order.extend(at);
        }
        let keep = if order.len() <= FRAME_TREE_MAX_ENTRIES {
            listed
        } else {
            view.truncated = true;
            to_show(&order, |i| parent[i], &listed, |i| nodes[i].is_oopif)
        };
        view.children = order
            .into_iter()
            .filter(|i| keep[*i])
            .map(|i| {
                let f = nodes[i];
                let routable = f.is_oopif && targets.has_session(&f.session);
                Arc::new(ChildFrame {
                    frame_id: f.id.0.clone(),
                    url: f.url.clone(),
                    origin: f.origin.clone(),
                    parent_frame_id: parent[i].map_or(top_id, |p| &nodes[p].id).0.clone(),
                    is_oopif: f.is_oopif,
                    session_id: routable.then(|| f.session.0.clone()),
                })
            })
            .collect();
        view
    }
}

/// Which [`FRAME_TREE_MAX_ENTRIES`] of `order` (node indices, depth-first,
/// parents first) a capped tree shows: the OOPIFs first, with their
/// ancestors, since they are what `browser_cdp(frame_id)` can reach; then
/// the rest in document order. Every shown frame's parent is shown too.
/// `up(i)` is `i`'s parent (`None` for the top); `listed[i]` says whether
/// `i` is in `order`. ([`Frames::reference_view`]'s; [`Frames::view`]
/// marks the same frames walking up from the OOPIFs.)
#[cfg(debug_assertions)]
fn to_show(
    order: &[usize],
    up: impl Fn(usize) -> Option<usize>,
    listed: &[bool],
    is_oopif: impl Fn(usize) -> bool,
) -> Vec<bool> {
    let mut keep = vec![false; listed.len()];
    let mut kept = 0;
    for &id in order.iter().filter(|i| is_oopif(**i)) {
        let mut chain = Vec::new();
        let mut cur = Some(id);
        while let Some(c) = cur.filter(|c| !keep[*c]) {
            chain.push(c);
            cur = up(c).filter(|p| listed[*p]);
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

#[cfg(test)]
mod tests {
    //! Random sequences of every change the core makes to [`Frames`], with
    //! enough frames for the caps: after each, [`Frames::view`] checks the
    //! kept tree against [`Frames::reference_view`] (a debug build), and
    //! [`links_hold`] checks the slab's lists against the parents named.
    use super::*;
    use crate::cdp::TargetId;
    use crate::supervisor::state::targets::Intercept;
    use proptest::prelude::*;

    /// Ids `F0`..`F79`; `F0` is the top.
    const IDS: usize = 80;

    #[derive(Clone, Debug)]
    enum Op {
        Upsert {
            f: usize,
            parent: Option<usize>,
            url: u8,
            session: u8,
            oopif: bool,
        },
        SetParent {
            f: usize,
            parent: usize,
        },
        Commit {
            f: usize,
            parent: Option<usize>,
            url: u8,
            session: u8,
            own: bool,
            loader: u8,
        },
        /// Many frames at once (frame, parent, OOPIF), past the caps.
        Burst(Vec<(usize, Option<usize>, bool)>),
        Remove {
            f: usize,
        },
        Tree {
            root: usize,
            kids: Vec<usize>,
            session: u8,
        },
        OfSession {
            session: u8,
        },
        Clear,
        Dropped,
        Sessions,
        View,
    }

    fn op() -> impl Strategy<Value = Op> {
        let f = 0..IDS;
        let parent = proptest::option::weighted(0.9, 0..IDS);
        prop_oneof![
            8 => (f.clone(), parent.clone(), 0u8..3, 0u8..3, proptest::bool::weighted(0.15))
                .prop_map(|(f, parent, url, session, oopif)| Op::Upsert { f, parent, url, session, oopif }),
            1 => (f.clone(), f.clone()).prop_map(|(f, parent)| Op::SetParent { f, parent }),
            3 => (f.clone(), parent.clone(), 0u8..3, 0u8..3, any::<bool>(), 0u8..3)
                .prop_map(|(f, parent, url, session, own, loader)| Op::Commit { f, parent, url, session, own, loader }),
            1 => proptest::collection::vec((f.clone(), parent.clone(), proptest::bool::weighted(0.1)), 10..40).prop_map(Op::Burst),
            2 => f.clone().prop_map(|f| Op::Remove { f }),
            1 => (f.clone(), proptest::collection::vec(0..IDS, 0..4), 0u8..3)
                .prop_map(|(root, kids, session)| Op::Tree { root, kids, session }),
            1 => (0u8..3).prop_map(|session| Op::OfSession { session }),
            1 => Just(Op::Clear),
            1 => Just(Op::Dropped),
            1 => Just(Op::Sessions),
            4 => Just(Op::View),
        ]
    }

    fn id(i: usize) -> FrameId {
        FrameId(format!("F{i}"))
    }

    fn session(i: u8) -> SessionId {
        SessionId(format!("S{i}"))
    }

    fn info(f: usize, parent: Option<usize>, url: u8, loader: Option<u8>) -> FrameInfo {
        FrameInfo {
            id: id(f),
            parent_id: parent.map(id),
            url: format!("https://{url}.test/"),
            url_fragment: None,
            security_origin: Some(format!("https://{url}.test")),
            loader_id: loader.map(|l| format!("L{l}")),
            unreachable_url: None,
        }
    }

    /// Every live frame hangs in exactly one list, the one its named parent
    /// gives, in age order; `orphans` counts those whose parent is unknown.
    fn links_hold(fr: &Frames) -> Result<(), TestCaseError> {
        let mut seen = vec![0usize; fr.slots.len()];
        let mut orphans = 0;
        for (i, f) in fr.slots.iter().enumerate() {
            let Some(f) = f else { continue };
            prop_assert_eq!(fr.index.get(&f.id), Some(&i));
            if Some(&f.id) == fr.top.as_ref() {
                prop_assert!(f.up.is_none());
                continue;
            }
            prop_assert_eq!(
                f.up,
                fr.named_parent(f),
                "frame {} hangs under the wrong parent",
                f.id.0
            );
            orphans += usize::from(fr.is_orphan(f));
            let list = fr.kids(f.up);
            prop_assert_eq!(list.iter().filter(|k| **k == i).count(), 1);
            seen[i] += 1;
        }
        for list in std::iter::once(&fr.roots).chain(fr.slots.iter().flatten().map(|f| &f.kids)) {
            let seqs: Vec<u64> = list
                .iter()
                .map(|&k| fr.at(k).map_or(0, |f| f.seq))
                .collect();
            prop_assert!(
                seqs.windows(2).all(|w| w[0] < w[1]),
                "a list out of age order"
            );
            prop_assert!(
                list.iter().all(|&k| fr.at(k).is_some()),
                "a list names a free slot"
            );
        }
        prop_assert_eq!(fr.orphans, orphans);
        let mut oopifs = fr.oopifs.clone();
        oopifs.sort_unstable();
        let live: Vec<usize> = (0..fr.slots.len())
            .filter(|&i| fr.at(i).is_some_and(|f| f.is_oopif))
            .collect();
        prop_assert_eq!(oopifs, live, "oopifs lists the OOPIFs");
        prop_assert_eq!(fr.index.len(), fr.slots.iter().flatten().count());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn kept_tree_is_the_tree(ops in proptest::collection::vec(op(), 1..250)) {
            let mut out = Out::default();
            let mut targets = Targets::default();
            let intercept = || Intercept {
                bridge: None,
                documents: None,
                auth: false,
            };
            targets.attach_page(TargetId::from("F0"), session(0), "", false, &mut out, intercept());
            let mut fr = Frames::default();
            fr.reset(id(0), "https://0.test/", &session(0));
            for op in &ops {
                match op.clone() {
                    Op::Upsert { f, parent, url, session: s, oopif } => {
                        let url = format!("https://{url}.test/");
                        fr.upsert(Cow::Owned(id(f)), parent.map(|p| Cow::Owned(id(p))), Some(&url), &session(s), oopif, &mut out);
                    }
                    Op::SetParent { f, parent } => fr.set_parent(&id(f), &id(parent)),
                    Op::Commit { f, parent, url, session: s, own, loader } => {
                        fr.committed(&session(s), own, &info(f, parent, url, Some(loader)), &mut out);
                    }
                    Op::Burst(frames) => {
                        for (f, parent, oopif) in frames {
                            fr.upsert(Cow::Borrowed(&id(f)), parent.map(|p| Cow::Owned(id(p))), None, &session(1), oopif, &mut out);
                        }
                    }
                    Op::Remove { f } => {
                        fr.remove_subtree(&id(f), &mut out);
                    }
                    Op::Tree { root, kids, session: s } => {
                        let tree = FrameTree {
                            frame: info(root, None, 1, None),
                            child_frames: kids
                                .into_iter()
                                .map(|k| FrameTree { frame: info(k, None, 2, None), child_frames: Vec::new() })
                                .collect(),
                        };
                        fr.on_tree(&session(s), &id(root), tree, &mut out);
                    }
                    Op::OfSession { session: s } => {
                        for f in fr.of_session(&session(s)) {
                            fr.remove_subtree(&f, &mut out);
                        }
                    }
                    Op::Clear => {
                        fr.clear();
                    }
                    Op::Dropped => fr.mark_dropped(),
                    Op::Sessions => {
                        targets.connection_lost();
                        targets.attach_page(TargetId::from("F0"), session(0), "", false, &mut out, intercept());
                    }
                    Op::View => {
                        fr.view(&targets);
                    }
                }
                links_hold(&fr)?;
                out = Out::default();
            }
            fr.view(&targets);
        }
    }
}
