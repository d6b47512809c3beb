//! Waiting on a supervisor's snapshot, shared by the end-to-end and the
//! mock-endpoint test support.

use cdp_supervisor::supervisor::driver::Supervisor;
use cdp_supervisor::supervisor::snapshot::Snapshot;
use std::time::Duration;

/// Waits until `f` holds for the latest snapshot; panics with the snapshot
/// after `limit`, or when the supervisor ends first.
pub async fn wait_snapshot_for(
    sup: &Supervisor,
    what: &str,
    limit: Duration,
    f: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let mut rx = sup.subscribe();
    let r = tokio::time::timeout(limit, async {
        loop {
            let s = rx.borrow_and_update().clone();
            if f(&s) {
                return (*s).clone();
            }
            if rx.changed().await.is_err() {
                let s = rx.borrow().clone();
                return if f(&s) {
                    (*s).clone()
                } else {
                    panic!("supervisor ended while waiting for {what}")
                };
            }
        }
    })
    .await;
    match r {
        Ok(s) => s,
        Err(_) => panic!(
            "timed out waiting for {what}; snapshot: {}",
            serde_json::to_string_pretty(&*sup.snapshot()).unwrap()
        ),
    }
}
