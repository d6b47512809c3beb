//! The screen of a task's current tab, cast only while someone watches
//! (`Page.startScreencast` when the first viewer comes, `stopScreencast`
//! when the last goes). Each frame is acknowledged once it is the newest
//! one every viewer will get (`Page.screencastFrameAck`): Chromium sends
//! the next one only then, so the cast runs no faster than it is taken,
//! and a viewer that does not read holds one frame, never a queue.

use super::{TaskLive, lock};
use crate::cdp::protocol::SessionId;
use crate::supervisor::driver::{ScreencastFrame, ScreencastMetadata};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the cast asks Chromium for: JPEG at this quality, at most this size.
pub const JPEG_QUALITY: u32 = 70;
/// Largest side of a frame, in device pixels.
pub const FRAME_MAX_SIDE: u32 = 1280;
/// Deadline of each cast command.
const CAST_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the cast looks again when there is no page to cast yet.
const RETRY: Duration = Duration::from_millis(300);

/// One frame as viewers get it.
#[derive(Debug)]
pub struct Frame {
    /// The JPEG, base64.
    pub data: String,
    /// Where it sits on the page (for mapping input).
    pub metadata: ScreencastMetadata,
    /// The tab it shows.
    pub target_id: Option<String>,
    /// Its number in this task (grows).
    pub seq: u64,
}

/// Who watches a task, and its cast while anyone does.
#[derive(Default)]
pub struct Viewers {
    count: usize,
    cast: Option<CancellationToken>,
}

/// A viewer's place: the cast stops when the last one is dropped.
pub struct Watching {
    task: Arc<TaskLive>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut v = lock(&self.task.viewers);
        v.count = v.count.saturating_sub(1);
        if v.count == 0
            && let Some(c) = v.cast.take()
        {
            c.cancel();
        }
    }
}

impl TaskLive {
    /// A viewer comes: the cast starts with the first. `None` when
    /// [`super::VIEWERS_MAX`] already watch.
    pub fn watch(self: &Arc<Self>) -> Option<Watching> {
        let mut v = lock(&self.viewers);
        if v.count >= super::VIEWERS_MAX {
            return None;
        }
        v.count += 1;
        if v.cast.is_none() {
            let stop = CancellationToken::new();
            v.cast = Some(stop.clone());
            tokio::spawn(run_cast(self.clone(), stop));
        }
        Some(Watching { task: self.clone() })
    }

    /// How many viewers watch now.
    pub fn viewer_count(&self) -> usize {
        lock(&self.viewers).count
    }

    /// Whether the screen is being cast.
    pub fn casting(&self) -> bool {
        lock(&self.viewers).cast.is_some()
    }

    /// The newest frame, and a receiver for the next ones.
    pub fn frames(&self) -> tokio::sync::watch::Receiver<Option<Arc<Frame>>> {
        self.frames.subscribe()
    }
}

/// Casts the current tab until `stop`: follows the current tab (and a new
/// supervisor, after a reconnect or a restart), acknowledging each frame
/// once it is published.
async fn run_cast(task: Arc<TaskLive>, stop: CancellationToken) {
    let mut seq = 0u64;
    while !stop.is_cancelled() && !task.is_ended() {
        let Some(sup) = task.supervisor() else {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(RETRY) => continue,
            }
        };
        let (Some(conn), Ok((_, session))) =
            (sup.live_connection(), sup.route(None, None, true).await)
        else {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(RETRY) => continue,
            }
        };
        let target_id = sup
            .snapshot()
            .tabs
            .iter()
            .find(|t| t.current)
            .map(|t| t.target_id.clone());
        let (tx, mut rx) = mpsc::channel::<ScreencastFrame>(4);
        sup.set_screencast_tap(Some(tx));
        let started = conn
            .send(
                Some(&session),
                "Page.startScreencast",
                serde_json::json!({"format": "jpeg", "quality": JPEG_QUALITY,
                                   "maxWidth": FRAME_MAX_SIDE, "maxHeight": FRAME_MAX_SIDE}),
                CAST_COMMAND_TIMEOUT,
            )
            .await;
        if let Err(e) = started {
            tracing::debug!("live view: Page.startScreencast failed: {e}");
        }
        let mut snaps = sup.subscribe();
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = sup.exited() => break,
                f = rx.recv() => {
                    let Some(f) = f else { break };
                    // Acknowledged first: the next frame is being made
                    // while this one goes out.
                    // Queued as it is called; nobody waits for the reply.
                    drop(conn.send(Some(&f.session), "Page.screencastFrameAck",
                        serde_json::json!({"sessionId": f.cast_id}), CAST_COMMAND_TIMEOUT));
                    if f.session != session {
                        continue;
                    }
                    seq += 1;
                    task.frames.send_replace(Some(Arc::new(Frame {
                        data: f.data,
                        metadata: f.metadata,
                        target_id: target_id.clone(),
                        seq,
                    })));
                }
                r = snaps.changed() => {
                    if r.is_err() { break; }
                    let now = sup.snapshot().tabs.iter().find(|t| t.current).map(|t| t.target_id.clone());
                    if now != target_id || !conn.is_open() {
                        break;
                    }
                }
            }
        }
        sup.set_screencast_tap(None);
        stop_cast(&conn, &session);
    }
    if let Some(sup) = task.supervisor() {
        sup.set_screencast_tap(None);
    }
}

fn stop_cast(conn: &crate::cdp::connection::Connection, session: &SessionId) {
    // Queued as it is called; nobody waits for the reply.
    drop(conn.send(
        Some(session),
        "Page.stopScreencast",
        serde_json::json!({}),
        CAST_COMMAND_TIMEOUT,
    ));
}
