//! The actions on a ref (click, type, select an option) and on the page
//! (press a key): the element found again and checked, then the input
//! dispatched through [`Supervisor::interruptible`] so that a dialog it
//! opens interrupts the call instead of hanging it.
//!
//! [`Supervisor::interruptible`]: crate::supervisor::driver::Supervisor::interruptible

use super::frames::{UNSEEN_REMEDY, known_remedy};
use super::keys::{key_of, press, unknown_key};
use super::refs::NodeRef;
use super::{ACTION_TIMEOUT, ActError, Page, act_read, call_on};
use crate::cdp::connection::{CommandError, Connection};
use crate::cdp::protocol::{DialogType, SessionId};
use crate::supervisor::driver::{CallOutcome, CdpCallError};
use crate::supervisor::state::Target;
use serde_json::{Value, json};

impl Page {
    /// Chromium drops input events (keys and clicks alike) sent while a
    /// dialog shows: they reply at once and are not queued (CDP facts).
    /// Refuses, saying `lost` and the remedy, rather than report input that
    /// never happened. Returns the current tab's page session.
    async fn refuse_input_while_blocked(&self, lost: &str) -> Result<SessionId, ActError> {
        let snap = self.supervisor.snapshot();
        let current = snap
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.clone());
        // Not connected: said as such, not as a dialog we last knew of.
        let (_, page) = self.supervisor.route(None, None, false).await?;
        let known = snap
            .pending_dialogs
            .iter()
            .filter(|d| d.target_id == current && d.dialog_type != DialogType::FileChooser);
        let remedy = known_remedy(known).or(snap.page_blocked.then_some(UNSEEN_REMEDY));
        match remedy {
            Some(remedy) => Err(ActError::Element(format!(
                "a JavaScript dialog blocks the page, so {lost}: {remedy}"
            ))),
            None => Ok(page),
        }
    }

    /// `browser_click`: scrolls the element into view, hit-tests its
    /// centre, and clicks there with real mouse events on the top-level page
    /// session. Returns `{clicked, x, y}` (top-level CSS pixels).
    ///
    /// Chromium's browser process routes a click to a cross-origin iframe
    /// (OOPIF) by its compositor's hit-test data, which lags a scroll or a
    /// frame that has just loaded: such a click reaches the iframe element
    /// in the parent instead. For an element in an OOPIF the click waits
    /// until the frames holding it have painted twice, checks where its
    /// `pointerdown`/`mousedown` arrived, and clicks once more when the
    /// parent got it and the frame did not; a second miss is an error, not
    /// a `clicked` that did not happen. Something the top page lays over
    /// the frame at that point is refused before anything is dispatched,
    /// as a covered element is.
    ///
    /// # Errors
    /// A stale or unknown ref; an element covered (in its frame, or its
    /// frame in the top page), zero-sized or detached (nothing
    /// dispatched); a click that twice reached the page around its OOPIF
    /// instead, or twice was released elsewhere, or that reached another
    /// element of its frame (the page moved under it); the dispatch's own
    /// failure.
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
        scroll_into_view(&conn, &node).await;
        let (_, page) = self.supervisor.route(None, None, false).await?;
        if self.supervisor.snapshot().tabs.len() > 1 {
            // Chromium answers mouse input to a tab in the background only
            // when its wait for a frame gives up (5 s), and a popup the page
            // opened is in front: the tab clicked in comes to the front.
            let _ = act_read(&conn, &page, "Page.bringToFront", json!({})).await;
        }
        let Some(parent) = node.owners.first() else {
            let (x, y) = self.aim(&conn, &node, &object, r).await?;
            return self
                .dispatch_click(page, (x, y), button, click_count, r)
                .await;
        };
        painted_twice(&conn, &node, &object).await;
        for attempt in 1..=2 {
            let (x, y) = self.aim(&conn, &node, &object, r).await?;
            let inside = arm_probe(&conn, &node.session, &object).await;
            let around = match act_read(
                &conn,
                &parent.session,
                "DOM.resolveNode",
                json!({"backendNodeId": parent.backend_node_id}),
            )
            .await
            {
                Ok(v) => match v.pointer("/object/objectId").and_then(Value::as_str) {
                    Some(iframe) => arm_probe(&conn, &parent.session, iframe).await,
                    None => None,
                },
                Err(_) => None,
            };
            let outcome = self
                .dispatch_click(page.clone(), (x, y), button, click_count, r)
                .await?;
            let (Some(inside), Some(around), CallOutcome::Reply(_)) = (inside, around, &outcome)
            else {
                return Ok(outcome);
            };
            // A probe that cannot be read (the frame navigated, a dialog
            // came up) counts as a click that arrived: only a miss seen on
            // both sides is clicked again.
            let pressed = probe_hit(&conn, &node.session, &inside).await;
            let around = probe_hit(&conn, &parent.session, &around).await;
            match (pressed, around) {
                (Some(Press::Elsewhere), _) => {
                    return Err(ActError::Element(format!(
                        "the click on {r} reached its frame but not {r}: the frame's page moved under it (it was still laying out), so the press went to another element there; browser_snapshot to see where things are now, then click again"
                    )));
                }
                // No click event fired anywhere: once the frames have
                // painted again, the click is tried once more.
                (Some(Press::Split), _) if attempt == 1 => {
                    tracing::debug!(r, "a click's release went elsewhere; trying once more");
                }
                (Some(Press::Split), _) => {
                    return Err(ActError::Element(format!(
                        "the click on {r} did not happen: twice {r} got the press, but the page moved before the release, which went elsewhere (no click event); browser_snapshot to see where things are now, then click again"
                    )));
                }
                (Some(Press::None), Some(Press::On | Press::Split | Press::Elsewhere)) => {
                    tracing::debug!(
                        r,
                        attempt,
                        "a click for an OOPIF reached the page around it; waiting for its frames to paint"
                    );
                }
                _ => return Ok(outcome),
            }
            if attempt == 1 {
                painted_twice(&conn, &node, &object).await;
            }
        }
        Err(ActError::Element(format!(
            "the click on {r} did not reach it: twice Chromium gave it to the <iframe> holding {r} in the page around it (it does so while a cross-origin frame is not yet ready for input), so nothing in that frame was clicked; browser_click again, or browser_snapshot to see the page"
        )))
    }

    /// Where to click `node`: its centre in top-level CSS pixels, once no
    /// other element covers it there.
    async fn aim(
        &self,
        conn: &Connection,
        node: &NodeRef,
        object: &str,
        r: &str,
    ) -> Result<(f64, f64), ActError> {
        let (cx, cy) = self.centre(conn, node, r).await?;
        not_covered(conn, node, object, (cx, cy), r).await?;
        let (x, y) = self.offset_to_top(conn, node, (cx, cy), r).await?;
        if let Some(outer) = node.owners.last() {
            frame_not_covered(conn, outer, (x, y), r).await?;
        }
        Ok((x, y))
    }

    /// Moves the mouse to (`x`, `y`) on the page session and clicks there
    /// `click_count` times with `button`; a dialog it opens interrupts it.
    async fn dispatch_click(
        &self,
        page: SessionId,
        (x, y): (f64, f64),
        button: &str,
        click_count: u32,
        r: &str,
    ) -> Result<CallOutcome, ActError> {
        let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
        let me = self.supervisor.clone();
        let button = button.to_owned();
        // A tenth of a CSS pixel says where; more digits say nothing more.
        let tenth = |v: f64| (v * 10.0).round() / 10.0;
        let result = json!({"clicked": r, "x": tenth(x), "y": tenth(y)});
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
            .supervisor
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
        // A date, a colour, a range… take no typed text: set as a picker would.
        if let Some(done) = self.pick((&conn, &node, &object), r, text, submit).await? {
            return Ok(done);
        }
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
        let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
        let me = self.supervisor.clone();
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
            .supervisor
            .interruptible("browser_type", work, ACTION_TIMEOUT)
            .await?)
    }

    /// `browser_press_key`: the key by its DOM name, down then up, on the
    /// page (its focused element). Returns `{pressed}`.
    ///
    /// # Errors
    /// An unknown key name; the dispatch's failure.
    pub async fn press_key(&self, key: &str) -> Result<CallOutcome, ActError> {
        let k = key_of(key).ok_or_else(|| ActError::Element(unknown_key(key)))?;
        let page = self
            .refuse_input_while_blocked(&format!(
                "the key {key:?} would be lost (nothing was pressed)"
            ))
            .await?;
        let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
        let me = self.supervisor.clone();
        let result = json!({"pressed": key});
        let work = async move {
            press(&me, &page, &k, keep).await?;
            Ok(result)
        };
        Ok(self
            .supervisor
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
        let keep = ACTION_TIMEOUT.saturating_add(self.supervisor.dialog_timeout());
        let me = self.supervisor.clone();
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
            .supervisor
            .interruptible("browser_select_option", work, ACTION_TIMEOUT)
            .await?)
    }
}

/// Scrolls the element into view, and each OOPIF iframe holding it in its
/// parent: best effort (a box read after says whether it worked).
async fn scroll_into_view(conn: &Connection, node: &NodeRef) {
    let _ = act_read(
        conn,
        &node.session,
        "DOM.scrollIntoViewIfNeeded",
        json!({"backendNodeId": node.backend_node_id}),
    )
    .await;
    for o in &node.owners {
        let _ = act_read(
            conn,
            &o.session,
            "DOM.scrollIntoViewIfNeeded",
            json!({"backendNodeId": o.backend_node_id}),
        )
        .await;
    }
}

/// Waits (at most [`ACT_READ_TIMEOUT`] each) until the OOPIF holding
/// `node` and each document above it have run two animation frames: by then
/// the compositor frames that place the OOPIF where it now is were
/// submitted, and with them the hit-test data input is routed by. Best
/// effort: a frame that does not paint (throttled, busy) only delays.
async fn painted_twice(conn: &Connection, node: &NodeRef, object: &str) {
    const TWO_FRAMES: &str =
        "new Promise(r=>requestAnimationFrame(()=>requestAnimationFrame(()=>r(true))))";
    let inside = act_read(
        conn,
        &node.session,
        "Runtime.callFunctionOn",
        json!({"objectId": object, "functionDeclaration": format!("function(){{return {TWO_FRAMES}}}"), "awaitPromise": true}),
    );
    let around = futures_util::future::join_all(node.owners.iter().map(|o| {
        act_read(
            conn,
            &o.session,
            "Runtime.evaluate",
            json!({"expression": TWO_FRAMES, "awaitPromise": true}),
        )
    }));
    let _ = tokio::join!(inside, around);
}

/// Listens, on the window of the document holding `object`, for the next
/// `pointerdown` or `mousedown`; returns the listener's record (an object
/// id no page script can reach) for [`probe_hit`], or `None` when it could
/// not be set.
async fn arm_probe(conn: &Connection, session: &SessionId, object: &str) -> Option<String> {
    const ARM_FN: &str = "function(){const el=this;const w=el.ownerDocument.defaultView;const s={hit:false,on:false,up:false};const f=(e)=>{s.hit=true;if(e.composedPath().includes(el))s.on=true};const u=(e)=>{if(e.composedPath().includes(el))s.up=true};const o={capture:true};w.addEventListener('pointerdown',f,o);w.addEventListener('mousedown',f,o);w.addEventListener('pointerup',u,o);w.addEventListener('mouseup',u,o);s.off=()=>{w.removeEventListener('pointerdown',f,o);w.removeEventListener('mousedown',f,o);w.removeEventListener('pointerup',u,o);w.removeEventListener('mouseup',u,o)};return s}";
    let v = act_read(
        conn,
        session,
        "Runtime.callFunctionOn",
        json!({"objectId": object, "functionDeclaration": ARM_FN}),
    )
    .await
    .ok()?;
    v.pointer("/result/objectId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Where a press went, as a probe ([`arm_probe`]) saw it in its document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Press {
    /// No press reached the document.
    None,
    /// On the probed element (or inside it), released there too.
    On,
    /// Pressed on the probed element, released elsewhere: no click.
    Split,
    /// On another element of the document.
    Elsewhere,
}

/// What the probe [`arm_probe`] set saw; removes its listeners. `None`
/// when it cannot be read (its document is gone).
async fn probe_hit(conn: &Connection, session: &SessionId, probe: &str) -> Option<Press> {
    let seen = call_on(
        conn,
        session,
        probe,
        "function(){this.off();return this.on?(this.up?'on':'split'):this.hit?'elsewhere':'none'}",
        json!([]),
    )
    .await
    .ok();
    let _ = act_read(
        conn,
        session,
        "Runtime.releaseObject",
        json!({"objectId": probe}),
    )
    .await;
    match seen?.as_str()? {
        "on" => Some(Press::On),
        "split" => Some(Press::Split),
        "elsewhere" => Some(Press::Elsewhere),
        _ => Some(Press::None),
    }
}

/// The node (`backendNodeId`) at a viewport point of `session`'s document
/// (`x`, `y` in CSS pixels; `DOM.getNodeForLocation` takes document
/// coordinates, so the scroll offset is added). `Ok(None)`: no node there.
async fn node_at(
    conn: &Connection,
    session: &SessionId,
    (x, y): (f64, f64),
) -> Result<Option<i64>, String> {
    let metrics = act_read(conn, session, "Page.getLayoutMetrics", json!({}))
        .await
        .ok();
    let scroll = |k: &str| {
        metrics
            .as_ref()
            .and_then(|m| m.pointer(&format!("/cssLayoutViewport/{k}")))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    let hit = act_read(
        conn,
        session,
        "DOM.getNodeForLocation",
        json!({"x": (x + scroll("pageX")).round() as i64, "y": (y + scroll("pageY")).round() as i64, "includeUserAgentShadowDOM": true, "ignorePointerEventsNone": false}),
    )
    .await?;
    Ok(hit.get("backendNodeId").and_then(Value::as_i64))
}

/// Checks that the top document's point (`x`, `y`, viewport CSS pixels)
/// hits the iframe element holding the OOPIF (`outer`, the outermost of a
/// ref's owners): something the page lays over the frame there would take
/// the click instead, and a click there is refused, naming it.
async fn frame_not_covered(
    conn: &Connection,
    outer: &super::refs::Owner,
    (x, y): (f64, f64),
    r: &str,
) -> Result<(), ActError> {
    // Not hit-tested: the frame's own check stands.
    let Ok(Some(hit_id)) = node_at(conn, &outer.session, (x, y)).await else {
        return Ok(());
    };
    if hit_id == outer.backend_node_id {
        return Ok(());
    }
    let what = act_read(
        conn,
        &outer.session,
        "DOM.describeNode",
        json!({"backendNodeId": hit_id}),
    )
    .await
    .ok()
    .and_then(|v| {
        let n = v.get("node")?;
        let name = n.get("localName").and_then(Value::as_str)?.to_owned();
        let id = n
            .get("attributes")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.chunks(2)
                    .find(|kv| kv[0] == "id")
                    .and_then(|kv| kv.get(1))
                    .and_then(Value::as_str)
                    .map(|v| format!("#{v}"))
            })
            .unwrap_or_default();
        Some(format!("{name}{id}"))
    })
    .unwrap_or_else(|| "another element".to_owned());
    Err(ActError::Element(format!(
        "ref {r} is covered by <{what}> of the page around its frame at ({x:.0}, {y:.0}): a click there would hit that instead; nothing was clicked (close or scroll away what covers it, then browser_snapshot again)"
    )))
}

/// Checks that a click at the element's centre (`cx`, `cy`, in its
/// frame's viewport) hits it (or something inside it), hit-testing in
/// document coordinates on the element's own session; an element covered
/// there is refused, naming what covers it.
async fn not_covered(
    conn: &Connection,
    node: &NodeRef,
    object: &str,
    (cx, cy): (f64, f64),
    r: &str,
) -> Result<(), ActError> {
    let hit = node_at(conn, &node.session, (cx, cy)).await.map_err(|e| {
        ActError::Element(format!(
            "ref {r}: the point to click could not be hit-tested ({e}); nothing was clicked"
        ))
    })?;
    if let Some(hit_id) = hit.filter(|h| *h != node.backend_node_id) {
        let hit_obj = act_read(
            conn,
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
                conn,
                &node.session,
                object,
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
    Ok(())
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
