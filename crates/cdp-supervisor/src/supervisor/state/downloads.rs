//! Downloads of every supervised tab (`Browser.downloadWillBegin`,
//! `Browser.downloadProgress`, on the browser session): the snapshot's
//! `downloads`, the bound `downloads.max_bytes` watched on the bytes
//! received, and the file renamed from Chromium's guid to its suggested
//! name once complete (by the driver: [`Output::SaveDownload`]).
//!
//! Chromium's facts (verified on Chromium 156): `setDownloadBehavior` is
//! browser-wide; with `allowAndName` the file is written as
//! `<downloadPath>/<guid>`; `totalBytes` is `0` without `Content-Length`; a
//! canceled download reports `0` bytes received (the last figure is kept).
//! Never `behavior:"default"`: under it Chromium holds a click-started
//! download from a non-secure origin as "insecure", every byte received and
//! no event after, waiting for a person; a download whose bytes are all in
//! and that has not completed [`HELD_AFTER`] later says so in its `note`.

use super::{Notice, Output, Purpose, Target};
use crate::cdp::protocol::{DownloadProgress, DownloadWillBegin};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A download whose bytes are all in and that has not completed this long
/// after is held by Chromium (DESIGN "Downloads": it says so in a `note`).
/// Chromium completes one within milliseconds of its last byte otherwise.
pub const HELD_AFTER: Duration = Duration::from_secs(2);

/// How the `note` of a download Chromium holds starts.
const HELD_NOTE_START: &str = "every byte is in";

/// The `note` of every download into a remote browser's directory.
pub const REMOTE_NOTE: &str = "saved on the browser's machine (a remote browser: path is on its disk, not this one, under Chromium's name for the file)";

/// The snapshot's `downloads` keeps the last 20.
pub const DOWNLOADS_KEPT: usize = 20;
/// `browser.downloads.max_bytes`' default: 100 MiB.
pub const DOWNLOAD_MAX_BYTES_DEFAULT: u64 = 100 * 1024 * 1024;

/// Where downloads go (`Browser.setDownloadBehavior`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DownloadOptions {
    /// The directory files are written to (`allowAndName`). The driver
    /// always names one; `None` (a core built by hand) sends nothing.
    pub dir: Option<String>,
    /// `dir` is on the browser's machine, not this one (a remote browser):
    /// files keep Chromium's name and each entry says where it is.
    pub remote: bool,
    /// A download past this many bytes received is canceled.
    pub max_bytes: u64,
}

impl DownloadOptions {
    /// Downloads into `dir`, bounded by the default `max_bytes`.
    pub fn into_dir(dir: impl Into<String>) -> Self {
        DownloadOptions {
            dir: Some(dir.into()),
            remote: false,
            max_bytes: DOWNLOAD_MAX_BYTES_DEFAULT,
        }
    }

    /// The `Browser.setDownloadBehavior` params, when there is a directory.
    /// Always `allowAndName`, never `default` (see the module).
    pub fn behavior(&self) -> Option<serde_json::Value> {
        let dir = self.dir.as_ref()?;
        Some(json!({
            "behavior": "allowAndName",
            "downloadPath": dir,
            "eventsEnabled": true,
        }))
    }
}

pub use crate::supervisor::snapshot::{DownloadState, DownloadView};

/// The last [`DOWNLOADS_KEPT`] downloads of a task.
#[derive(Clone, Debug, Default)]
pub struct Downloads {
    list: VecDeque<Arc<DownloadView>>,
    next: u64,
}

impl Downloads {
    /// Oldest first.
    pub fn views(&self) -> impl ExactSizeIterator<Item = &Arc<DownloadView>> + Clone {
        self.list.iter()
    }

    fn by_guid(&mut self, guid: &str) -> Option<&mut Arc<DownloadView>> {
        self.list.iter_mut().find(|d| d.guid == guid)
    }

    /// `Browser.downloadWillBegin`: a new entry, `in_progress`.
    pub fn began(
        &mut self,
        d: DownloadWillBegin,
        target_id: Option<String>,
        opts: &DownloadOptions,
        out: &mut VecDeque<Output>,
    ) {
        if self.by_guid(&d.guid).is_some() {
            return;
        }
        self.next += 1;
        let path = opts.dir.as_ref().map(|dir| join(dir, &d.guid, opts.remote));
        let view = Arc::new(DownloadView {
            id: format!("dl-{}", self.next),
            url: d.url,
            suggested_filename: safe_file_name(&d.suggested_filename),
            path,
            state: DownloadState::InProgress,
            received_bytes: 0,
            total_bytes: 0,
            target_id,
            note: opts.remote.then(|| REMOTE_NOTE.to_owned()),
            guid: d.guid,
            all_in_at: None,
        });
        if self.list.len() == DOWNLOADS_KEPT {
            self.list.pop_front();
        }
        self.list.push_back(view.clone());
        out.push_back(Output::Notice(Notice::DownloadStarted { download: view }));
    }

    /// `Browser.downloadProgress`: the figures; past `max_bytes` it is
    /// canceled (`Browser.cancelDownload`); once complete, the driver is
    /// asked to give the file its name.
    pub fn progressed(
        &mut self,
        p: DownloadProgress,
        opts: &DownloadOptions,
        now: Instant,
        out: &mut VecDeque<Output>,
    ) {
        let Some(d) = self.by_guid(&p.guid) else {
            return;
        };
        if d.state != DownloadState::InProgress {
            return;
        }
        let received = bytes(p.received_bytes);
        let total = bytes(p.total_bytes);
        let view = Arc::make_mut(d);
        match p.state.as_str() {
            "completed" => {
                view.state = DownloadState::Completed;
                view.received_bytes = received.max(view.received_bytes);
                view.total_bytes = total.max(view.total_bytes);
                view.all_in_at = None;
                if view
                    .note
                    .as_deref()
                    .is_some_and(|n| n.starts_with(HELD_NOTE_START))
                {
                    // Held, then let through (a person in the browser): no longer true.
                    view.note = opts.remote.then(|| REMOTE_NOTE.to_owned());
                }
                if let Some(from) = view.path.clone().filter(|_| !opts.remote) {
                    out.push_back(Output::SaveDownload {
                        id: view.id.clone(),
                        from,
                        name: view.suggested_filename.clone(),
                    });
                }
                let done = d.clone();
                out.push_back(Output::Notice(Notice::DownloadDone { download: done }));
            }
            "canceled" => {
                // Chromium reports 0 bytes once canceled: the last figure stays.
                view.state = DownloadState::Canceled;
                let done = d.clone();
                out.push_back(Output::Notice(Notice::DownloadDone { download: done }));
            }
            _ => {
                view.received_bytes = received;
                view.total_bytes = total;
                if total > 0 && received >= total {
                    view.all_in_at.get_or_insert(now);
                }
                if received > opts.max_bytes || total > opts.max_bytes {
                    view.note = Some(format!(
                        "canceled: larger than downloads.max_bytes ({} bytes)",
                        opts.max_bytes
                    ));
                    out.push_back(super::Command::output(
                        Target::Browser,
                        "Browser.cancelDownload",
                        json!({ "guid": view.guid }),
                        Purpose::Setup,
                        None,
                        0,
                    ));
                }
            }
        }
    }

    /// When [`Downloads::handle_timeout`] should next be called: the
    /// first download all in and not completed whose [`HELD_AFTER`] is
    /// not over, nor said.
    pub fn next_check(&self) -> Option<Instant> {
        self.list
            .iter()
            .filter(|d| d.state == DownloadState::InProgress)
            .filter_map(|d| d.all_in_at)
            .map(|at| at + HELD_AFTER)
            .min()
    }

    /// Every download all in for [`HELD_AFTER`] and still not completed
    /// says Chromium holds it.
    pub fn handle_timeout(&mut self, now: Instant) {
        for d in &mut self.list {
            let held = d.state == DownloadState::InProgress
                && d.all_in_at.is_some_and(|at| now >= at + HELD_AFTER);
            if held {
                let view = Arc::make_mut(d);
                view.all_in_at = None;
                view.note = Some(format!(
                    "{HELD_NOTE_START} ({} bytes) but Chromium has not completed it {} s later: it holds it (an insecure download waiting for a person in the browser, or a scan); browser_wait(download_done) or the next snapshot shows when it completes",
                    view.received_bytes,
                    HELD_AFTER.as_secs()
                ));
            }
        }
    }

    /// The driver renamed download `id`'s file to `path`, or could not
    /// (`Err`: why; the file stays where it is).
    pub fn saved(&mut self, id: &str, result: Result<String, String>) {
        let Some(d) = self.list.iter_mut().find(|d| d.id == id) else {
            return;
        };
        let view = Arc::make_mut(d);
        match result {
            Ok(path) => view.path = Some(path),
            Err(e) => view.note = Some(format!("kept under Chromium's name: {e}")),
        }
    }
}

/// A byte count CDP sends as a number.
fn bytes(n: f64) -> u64 {
    if n.is_finite() && n > 0.0 {
        n as u64
    } else {
        0
    }
}

/// `dir/name`; on a `remote` machine with its own separator (`\\` when
/// `dir` has one and no `/`: a Windows browser), never this one's.
fn join(dir: &str, name: &str, remote: bool) -> String {
    if remote {
        let sep = if dir.contains('\\') && !dir.contains('/') {
            '\\'
        } else {
            '/'
        };
        return format!("{}{sep}{name}", dir.trim_end_matches(sep));
    }
    std::path::Path::new(dir)
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `suggested` as a file name of its own: no directory part, no control or
/// reserved characters (`/ \ : * ? " < > |`), no leading dot (a hidden
/// file, `..`), at most 200 bytes; `download` when nothing is left.
pub fn safe_file_name(suggested: &str) -> String {
    let last = suggested.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut name: String = last
        .chars()
        .map(|c| {
            if c.is_control() || "/\\:*?\"<>|".contains(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    name = name.trim().trim_start_matches('.').to_owned();
    if name.len() > 200 {
        // Cut the stem, keep a short extension: `.pdf` still says what it is.
        let ext = match split_extension(&name).1 {
            e if e.len() <= 16 => e.to_owned(),
            _ => String::new(),
        };
        let mut stem = name[..name.len() - ext.len()].to_owned();
        while stem.len() + ext.len() > 200 {
            stem.pop();
        }
        name = stem + &ext;
    }
    if name.is_empty() {
        "download".to_owned()
    } else {
        name
    }
}

/// `name` as its stem and its extension with the dot (`("a.tar", ".gz")`),
/// or the whole name and `""` when it has none (a leading dot starts no
/// extension).
pub fn split_extension(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if i > 0 => name.split_at(i),
        _ => (name, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suggested_name_becomes_a_safe_file_name() {
        assert_eq!(safe_file_name("report.pdf"), "report.pdf");
        assert_eq!(safe_file_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("..\\..\\boot.ini"), "boot.ini");
        assert_eq!(safe_file_name(".bashrc"), "bashrc");
        assert_eq!(safe_file_name("a:b*c?.txt"), "a_b_c_.txt");
        assert_eq!(safe_file_name("line\nbreak"), "line_break");
        assert_eq!(safe_file_name(""), "download");
        assert_eq!(safe_file_name(".."), "download");
        assert!(safe_file_name(&"é".repeat(300)).len() <= 200);
        let long = safe_file_name(&format!("{}.pdf", "x".repeat(300)));
        assert!(long.len() <= 200 && long.ends_with(".pdf"), "{long}");
    }
}
