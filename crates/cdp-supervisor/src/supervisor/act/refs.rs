//! The ref tables: per tab, the nodes its last outline gave refs to, the
//! isolated world of each frame, and the parts not yet given; and a ref
//! found again in its frame's world for an action.

use super::call_on;
use super::frames::{blocked_frames, frames_of, remedy};
use super::parts::Rest;
use super::{ActError, Page, act_read, no_answer};
use crate::cdp::connection::Connection;
use crate::cdp::protocol::SessionId;
use crate::supervisor::driver::CdpCallError;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// One iframe element between a node's frame and the top frame that is an
/// OOPIF boundary: its box offsets the node's coordinates.
#[derive(Clone, Debug)]
pub(super) struct Owner {
    /// The session of the document holding the iframe element.
    pub(super) session: SessionId,
    /// The iframe element there.
    pub(super) backend_node_id: i64,
}

/// What a ref points at: an element the walker kept in its frame's world.
#[derive(Clone, Debug)]
pub(super) struct NodeRef {
    /// The frame whose document holds the node.
    pub(super) frame_id: String,
    /// The session that reaches that document (the page's, or an OOPIF's).
    pub(super) session: SessionId,
    /// The isolated world's execution context there.
    pub(super) world: i64,
    /// The outline's number there (`__cdpSupervisor.walk_no`) and the element's
    /// index in it.
    pub(super) walk_no: u64,
    pub(super) key: i64,
    /// Filled in when the ref is resolved for an action (`DOM.describeNode`).
    pub(super) backend_node_id: i64,
    /// The OOPIF iframe elements above it, innermost first.
    pub(super) owners: Vec<Owner>,
}

#[derive(Default)]
pub(super) struct TabRefs {
    /// The next ref number: numbers never repeat within a tab.
    pub(super) next: u64,
    /// The first number of the last outline: smaller ones are from older outlines.
    pub(super) first_of_last: u64,
    pub(super) nodes: HashMap<String, NodeRef>,
    /// Each frame's isolated world: (session, execution context id).
    pub(super) worlds: HashMap<String, (SessionId, i64)>,
    /// Frames whose last walk got no answer in time (still running there).
    pub(super) busy: HashSet<String>,
    /// Outlines read of this tab, for `walk_no` and cursors.
    pub(super) outlines: u64,
    pub(super) rest: Rest,
}

/// Per tab (target id), the refs of its last outline.
#[derive(Default)]
pub(super) struct RefTables {
    pub(super) tabs: HashMap<String, TabRefs>,
}

impl RefTables {
    /// Forgets the refs of every tab not in `live` (closed tabs): the
    /// tables hold no more than the tabs that are open.
    pub(super) fn keep_only<'a>(&mut self, live: impl Iterator<Item = &'a str> + Clone) {
        self.tabs
            .retain(|id, _| live.clone().any(|l| l == id.as_str()));
    }
}

pub(super) const STALE_HINT: &str = "call browser_snapshot and use a ref from its page";

impl Page {
    /// The node `r` names in the current tab's last outline, checked to be
    /// still there (its frame attached, its document not navigated, the
    /// node connected). Returns the connection, the node and its `objectId`.
    pub(super) async fn resolve_ref(
        &self,
        r: &str,
    ) -> Result<(Connection, NodeRef, String), ActError> {
        let snap = self.supervisor.snapshot();
        let tab = snap
            .frame_tree
            .top
            .as_ref()
            .map(|t| t.frame_id.clone())
            .unwrap_or_default();
        let node = self.node_of(&tab, r)?;
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
            .supervisor
            .connection()
            .ok_or_else(|| CdpCallError::NotConnected("reconnecting".into()))?;
        // Its renderer cannot be read while a dialog blocks it: say so
        // rather than wait (nothing is dispatched).
        let (_, page) = self.supervisor.route(None, None, false).await?;
        let frames = frames_of(&snap.frame_tree, &page);
        if blocked_frames(&snap, &frames).contains(&node.frame_id) {
            return Err(ActError::Element(format!(
                "a JavaScript dialog blocks the frame of ref {r}, so the element cannot be reached (nothing was done): {}",
                remedy(&snap, &frames, &node.frame_id)
            )));
        }
        let (object, backend) = find_element(&conn, &node, r).await?;
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

    /// The node `r` names in tab `tab`'s last outline; a ref of an older
    /// outline, of none, or malformed is refused, saying which.
    fn node_of(&self, tab: &str, r: &str) -> Result<NodeRef, ActError> {
        let tables = self.refs();
        let t = tables.tabs.get(tab);
        if let Some(n) = t.and_then(|t| t.nodes.get(r)) {
            return Ok(n.clone());
        }
        let number = r
            .rsplit_once('e')
            .and_then(|(p, n)| (p.is_empty() || p.starts_with('f')).then_some(n))
            .and_then(|n| n.parse::<u64>().ok());
        let older = match (t, number) {
            (Some(t), Some(n)) => n < t.first_of_last,
            _ => false,
        };
        // The agent's own text, echoed: capped (DESIGN "Security").
        let r = crate::supervisor::wording::cut(r);
        Err(ActError::Stale(if older {
            format!(
                "ref {r} is from an older browser_snapshot of this tab (refs last until the next snapshot): {STALE_HINT}"
            )
        } else if t.is_none() {
            format!(
                "ref {r} is unknown: no browser_snapshot has listed this tab's page yet; {STALE_HINT}"
            )
        } else {
            format!("ref {r} is unknown (refs look like e12 or f1e34): {STALE_HINT}")
        }))
    }
}

/// The element the walker kept in its world for `node` (gone with its
/// document): its `objectId` there and its backend node id.
async fn find_element(
    conn: &Connection,
    node: &NodeRef,
    r: &str,
) -> Result<(String, i64), ActError> {
    let found = act_read(
        conn,
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
            conn,
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
    Ok((object, backend))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
