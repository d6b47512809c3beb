//! One frame read by the walker (`outline.js`) in that frame's isolated
//! world: its visible nodes with Chromium's role names, and which of its
//! lines holds each child frame's iframe element.

use super::{TREE_READ_TIMEOUT, no_answer, read, read_within};
use crate::cdp::connection::Connection;
use crate::cdp::protocol::SessionId;
use serde_json::{Value, json};
use std::time::Duration;

/// The most nodes one frame's walker returns: a page of millions of
/// elements is cut there (said in the outline) rather than read for minutes.
pub(super) const WALK_MAX_NODES: usize = 100_000;
/// The longest one frame's walker walks: a page of hundreds of thousands of
/// elements is cut there (said in the outline), well within
/// [`TREE_READ_TIMEOUT`] so that what was read is still given.
pub(super) const WALK_BUDGET: Duration = Duration::from_millis(2_500);

/// The walker, run in each frame's isolated world.
const WALKER: &str = include_str!("outline.js");
/// The isolated world the walker and the actions' lookups run in.
const WORLD_NAME: &str = "cdp-supervisor";

/// Chromium's roles an agent acts on: each gets a ref (and the walker
/// lists them wherever they are, see `outline.js`).
pub(super) const ACTIONABLE_ROLES: &[&str] = &[
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

/// One node as the walker read it.
#[derive(Clone, Debug, Default)]
pub(super) struct AxNode {
    pub(super) role: String,
    pub(super) name: String,
    pub(super) value: String,
    pub(super) props: Vec<(String, Value)>,
    pub(super) children: Vec<usize>,
    /// Its element's index in the walker's world (`None` for text).
    pub(super) key: Option<i64>,
}

/// A frame's walk: its nodes (index 0 the root) and, for each iframe
/// element it was given, that element's key (`None` when not shown).
#[derive(Debug, Default)]
pub(super) struct Walk {
    pub(super) nodes: Vec<AxNode>,
    pub(super) owners: Vec<Option<i64>>,
    /// The walker stopped at its node limit.
    pub(super) cut: bool,
}

/// Reads the walker's reply (`{nodes, owners, cut}`, see `outline.js`).
/// Nodes whose parent is not an earlier node are dropped: the tree is a
/// tree whatever the reply says.
pub(super) fn parse_walk(v: &Value) -> Walk {
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

/// One frame's part of an outline read: what to walk and with what.
pub(super) struct FrameRead {
    pub(super) conn: Connection,
    pub(super) frame_id: String,
    pub(super) url: String,
    pub(super) host: SessionId,
    /// Its world, if one is known from an earlier outline.
    pub(super) world: Option<i64>,
    /// The frames whose iframe element is in this document: (index, frame id).
    pub(super) children: Vec<(usize, String)>,
    /// Its last walk got no answer in time ([`FrameWalk::busy`]).
    pub(super) busy: bool,
    pub(super) walk_no: u64,
}

/// What reading one frame gave: its walk (or the line said in its place),
/// its world, and for each child frame the iframe element's backend id.
pub(super) struct FrameWalk {
    pub(super) walk: Result<Walk, String>,
    pub(super) world: Option<i64>,
    pub(super) owners: Vec<(usize, i64)>,
    /// Its walk got no answer in time: it is still running in the page.
    pub(super) busy: bool,
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
pub(super) async fn walk_frame(r: FrameRead) -> FrameWalk {
    let owners = frame_owners(&r).await;
    if let Some(ctx) = r.world.filter(|_| r.busy)
        && let Err(e) = answers(&r, ctx).await
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
        match run_walker(&r, ctx, &owners).await {
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
                return FrameWalk {
                    walk: walk_of(&v),
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

/// Each child frame's iframe element in this document (`DOM.getFrameOwner`):
/// (the child's index, its backend node id), for those found.
async fn frame_owners(r: &FrameRead) -> Vec<(usize, i64)> {
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
    owners
}

/// Whether world `ctx` answers at once. Asked when the frame's last walk is
/// still running (a page whose first layout takes long): one more walk
/// would only queue behind it. The error when it did not answer in time.
async fn answers(r: &FrameRead, ctx: i64) -> Result<(), String> {
    let probe = read(
        &r.conn,
        &r.host,
        "Runtime.evaluate",
        json!({"expression": "0", "contextId": ctx, "returnByValue": true}),
    )
    .await;
    match probe {
        Err(e) if no_answer(&e) => Err(e),
        _ => Ok(()),
    }
}

/// The walker run in world `ctx`; its reply.
async fn run_walker(r: &FrameRead, ctx: i64, owners: &[(usize, i64)]) -> Result<Value, String> {
    let mut args = vec![
        json!({"value": r.walk_no}),
        json!({"value": WALK_MAX_NODES}),
        json!({"value": WALK_BUDGET.as_millis() as u64}),
        json!({"value": ACTIONABLE_ROLES}),
    ];
    args.extend(owner_objects(r, ctx, owners).await?);
    read_within(
        &r.conn,
        &r.host,
        "Runtime.callFunctionOn",
        json!({"functionDeclaration": WALKER, "executionContextId": ctx,
               "arguments": args, "returnByValue": true}),
        TREE_READ_TIMEOUT,
    )
    .await
}

/// The iframe elements as objects of world `ctx` (null for one that
/// cannot be resolved): the walker tells which of its lines each one is.
/// An error saying the context is gone when it is.
async fn owner_objects(
    r: &FrameRead,
    ctx: i64,
    owners: &[(usize, i64)],
) -> Result<Vec<Value>, String> {
    let mut objects = Vec::with_capacity(owners.len());
    for (_, b) in owners {
        let resolved = read(
            &r.conn,
            &r.host,
            "DOM.resolveNode",
            json!({"backendNodeId": b, "executionContextId": ctx}),
        )
        .await;
        let object = match resolved {
            Ok(v) => v
                .pointer("/object/objectId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            Err(e) if context_gone(&e) => return Err("Cannot find context".to_owned()),
            Err(_) => None,
        };
        objects.push(match object {
            Some(o) => json!({"objectId": o}),
            None => json!({"value": null}),
        });
    }
    Ok(objects)
}

/// The walker's reply as a walk, or what the page threw.
fn walk_of(v: &Value) -> Result<Walk, String> {
    match v.get("exceptionDetails") {
        Some(ex) => Err(format!(
            "the page's document threw: {}",
            ex.pointer("/exception/description")
                .and_then(Value::as_str)
                .unwrap_or("an exception")
        )),
        None => Ok(parse_walk(
            v.pointer("/result/value").unwrap_or(&Value::Null),
        )),
    }
}
