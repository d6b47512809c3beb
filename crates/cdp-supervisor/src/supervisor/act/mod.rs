//! Acting on the page (DESIGN "Acting on the page"): the current tab's
//! outline with element refs, and the actions on those refs through real
//! input.
//!
//! [`Page`] is the handle: a [`Supervisor`] and the refs of each tab's last
//! outline ([`refs::RefTables`]). The driver knows nothing of refs; whoever
//! holds a task's supervisor holds its `Page` beside it (the
//! [`registry`](crate::supervisor::registry) does, so every session of one
//! task shares its refs), and a new supervisor starts with none.
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
//! Refs are kept per tab until that tab's next outline, and only for open
//! tabs; their numbers grow across outlines, so a ref from an older one is
//! never silently taken for a node of the new one. The whole outline is
//! rendered at once and given in parts of [`PAGE_MAX_LINES`]; the parts
//! not yet given are kept with the refs for `page_cursor`.
//!
//! The files, in the order a reading takes:
//! - `frames`: the tab's frames, the session reaching each, and which ones
//!   a dialog blocks (with what frees them);
//! - `walk`: one frame read by the walker in its isolated world;
//! - `outline`: every frame read and stitched into documents, refs kept;
//! - `render`: documents → the outline's lines (pure);
//! - `parts`: the lines given in parts (`page_cursor`);
//! - `refs`: the ref tables, and a ref found again for an action;
//! - `actions` and `keys`: click, type, press a key, select an option;
//! - `fill`: a whole form (`browser_fill_form`), and the inputs that take
//!   no typed text (date, time, colour, range…).

use crate::cdp::connection::{CommandError, Connection};
use crate::cdp::protocol::SessionId;
use crate::supervisor::driver::{CdpCallError, Supervisor};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

mod actions;
mod fill;
mod frames;
pub(crate) mod keys;
mod outline;
mod parts;
mod refs;
mod render;
mod walk;

pub use fill::{FILL_MAX_FIELDS, FillOutcome, FillStop};
pub use parts::CursorError;
pub use render::without_values;

/// DESIGN: each part of the outline has at most 2,000 lines
/// (`page_truncated`, `page_cursor`), its last one saying how to continue.
pub const PAGE_MAX_LINES: usize = 2_000;
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
/// longer; a frame a known dialog blocks is not asked at all.
pub const TREE_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// An action's dispatch, before it counts as interrupted or timed out.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(10);

/// A supervisor's page layer: the outline of its current tab and the
/// actions on it, with the refs of each tab's last outline. Cheap to clone
/// (clones share the refs).
///
/// ```no_run
/// # async fn demo(sup: cdp_supervisor::supervisor::driver::Supervisor) {
/// use cdp_supervisor::supervisor::act::{OutlineMode, Page};
/// let page = Page::new(sup);
/// let outline = page.outline(&OutlineMode::Default).await;
/// // A ref of that outline, e.g. `e3`, until the tab's next outline:
/// let _ = page.click("e3", "left", 1).await;
/// # }
/// ```
#[derive(Clone)]
pub struct Page {
    supervisor: Supervisor,
    refs: Arc<Mutex<refs::RefTables>>,
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page")
            .field("supervisor", &self.supervisor)
            .finish()
    }
}

impl Page {
    /// The page layer of `supervisor`, with no refs yet.
    pub fn new(supervisor: Supervisor) -> Page {
        Page {
            supervisor,
            refs: Arc::default(),
        }
    }

    /// The supervisor it reads and acts through.
    pub fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }

    /// Per tab, the refs of its last outline.
    fn refs(&self) -> MutexGuard<'_, refs::RefTables> {
        self.refs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    /// we never saw: `page_blocked`), sorted; see [`Page::outline_agrees`].
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

/// A read of the outline: within [`READ_TIMEOUT`].
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

/// Whether a [`read_within`] error is its deadline passing (the renderer
/// did not answer), not an error Chromium sent.
fn no_answer(e: &str) -> bool {
    e.starts_with(NO_ANSWER)
}

const NO_ANSWER: &str = "no answer within";

/// One command sent straight on the connection (not through the driver's
/// loop) with its own deadline; its error as the agent reads it.
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
