//! The current tab's frames as the outline and the actions need them: the
//! session reaching each frame's document, and the frames a dialog blocks
//! (a blocked renderer answers nothing), with what frees each.

use crate::cdp::protocol::{DialogType, SessionId};
use crate::supervisor::snapshot::{ChildFrame, FrameTreeView, PendingDialog, Snapshot};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A frame of the current tab as the outline needs it.
pub(super) struct FrameInfo {
    pub(super) frame_id: String,
    pub(super) url: String,
    pub(super) parent: Option<String>,
    /// The session that reaches its document.
    pub(super) host: SessionId,
    pub(super) is_oopif: bool,
}

/// The current tab's frames, each with the session reaching its document
/// (an OOPIF's own; a same-process frame's is its nearest OOPIF's, else the page's).
pub(super) fn frames_of(tree: &FrameTreeView, page: &SessionId) -> Vec<FrameInfo> {
    let Some(top) = &tree.top else { return vec![] };
    let mut out = vec![FrameInfo {
        frame_id: top.frame_id.clone(),
        url: top.url.to_string(),
        parent: None,
        host: page.clone(),
        is_oopif: false,
    }];
    let by_id: HashMap<&str, &ChildFrame> = tree
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
pub(super) fn blocked_frames(snap: &Snapshot, frames: &[FrameInfo]) -> HashSet<String> {
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
pub(super) const ANSWER_REMEDY: &str = "answer the dialog with browser_dialog first";
/// … when Chromium refuses to answer it (`answerable: false`).
pub(super) const REFUSED_REMEDY: &str = "Chromium refuses to answer that dialog (answerable: false): only navigating releases it (browser_navigate, e.g. to the current URL)";
/// … when it is one we never saw (`page_blocked`). A script running for
/// seconds at attach looks the same to Chromium's protocol, so the text
/// says so: an agent should not reload a page on our guess alone.
pub(super) const UNSEEN_REMEDY: &str = "it answered nothing for 1.5 s after the supervisor attached: a dialog that opened before the supervisor attached blocks it and cannot be answered (page_blocked: true), unless a long script is running there (then page_blocked clears by itself); only navigating releases it (browser_navigate, e.g. to the current URL)";

/// What frees the renderer of `frame_id`, one of [`blocked_frames`]:
/// answering its dialog; navigating, when Chromium refuses to answer it or
/// it is one we never saw.
pub(super) fn remedy(snap: &Snapshot, frames: &[FrameInfo], frame_id: &str) -> &'static str {
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
pub(super) fn known_remedy<'a>(
    known: impl Iterator<Item = &'a Arc<PendingDialog>>,
) -> Option<&'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
                only_closing_releases: false,
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
}
