//! Finding and launching local Chromium.
//!
//! [`LocalChromium::launch`] starts a headless Chromium with a fresh
//! user-data-dir and returns once its DevTools answers. By default CDP goes
//! over a pipe (`--remote-debugging-pipe`, [`crate::cdp::pipe`]): no TCP
//! port, so no other process on the machine can take the browser over
//! (DESIGN "Security"); [`Debugging::Port`] opens an OS-chosen port
//! instead, for tools that attach by URL. The handle owns everything it started:
//! [`LocalChromium::shutdown`] (or dropping the handle) kills Chromium's whole
//! process group — renderers and zygotes included — and deletes the
//! user-data-dir.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cdp_supervisor::browser::LaunchError> {
//! use cdp_supervisor::browser::{LaunchOptions, LocalChromium};
//!
//! let chromium = LocalChromium::launch(&LaunchOptions::default()).await?;
//! println!("attach to {}", chromium.ws_url());
//! chromium.shutdown().await;
//! # Ok(()) }
//! ```

pub mod provider;
pub mod shared;

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Executable names searched on `PATH`, in order, when no path is configured.
pub const CHROMIUM_NAMES: &[&str] = &["chromium", "chromium-browser", "google-chrome"];

/// Flags every launched Chromium gets (DESIGN.md, "CDP facts"): headless, no
/// sandbox (we often run as root), nothing phoning home (the DevTools
/// flag comes from [`Debugging`]). `/dev/shm` is tiny in containers, hence
/// `--disable-dev-shm-usage`. `--disable-popup-blocking`, as Playwright's
/// launch has: an agent's click opens what a person's would.
/// `--disable-features=WebUIOmnibox…Popup`: headless Chromium 156 opens an
/// omnibox-popup WebUI page (`chrome://omnibox-popup.top-chrome/…`, a
/// renderer of ~43 MiB) for every window — for every browser context, with
/// `isolation: context` — that no one ever sees. (A `--disable-features` in
/// `browser.chromium_args` replaces this one: Chromium keeps the last.)
pub const BASE_ARGS: &[&str] = &[
    "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-popup-blocking",
];

/// Default [`LaunchOptions::timeout`]: a cold Chromium start in a loaded
/// container takes a few seconds; 30 s leaves room without hanging forever.
pub const DEFAULT_LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);

/// How many of Chromium's last stderr lines a launch error quotes.
const STDERR_TAIL_LINES: usize = 20;

/// How often launch polls for `DevToolsActivePort` and an early exit.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The stderr line prefix Chromium prints once DevTools is listening.
const DEVTOOLS_LINE: &str = "DevTools listening on ";

/// Why Chromium could not be found or started. Display is one line.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No configured path and none of [`CHROMIUM_NAMES`] on `PATH`.
    #[error(
        "Chromium not found (looked for browser.chromium_path, then chromium, chromium-browser, google-chrome on PATH); install it with: apt-get update && apt-get install -y chromium"
    )]
    NotFound,
    /// `browser.chromium_path` names a file that does not exist (or, for a
    /// bare name, is not on `PATH`).
    #[error(
        "browser.chromium_path {} does not exist; fix the path, or leave it empty to search PATH (install Chromium with: apt-get update && apt-get install -y chromium)",
        path.display()
    )]
    ConfiguredPathMissing {
        /// The configured path.
        path: PathBuf,
    },
    /// The temporary user-data-dir could not be created.
    #[error("cannot create a user-data-dir for Chromium: {0}")]
    UserDataDir(#[source] io::Error),
    /// The executable could not be started.
    #[error("cannot start Chromium {}: {source}", path.display())]
    Spawn {
        /// The executable.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Chromium exited before reporting its DevTools endpoint.
    #[error("Chromium exited during launch ({status}); last stderr: {stderr}")]
    Exited {
        /// The exit status, as text.
        status: String,
        /// Its last stderr lines, joined with ` | `.
        stderr: String,
    },
    /// Chromium did not report its DevTools endpoint before the deadline.
    #[error(
        "Chromium did not report its DevTools endpoint within {} s; last stderr: {stderr}",
        timeout.as_secs_f64()
    )]
    Timeout {
        /// The deadline that passed.
        timeout: Duration,
        /// Its last stderr lines, joined with ` | `.
        stderr: String,
    },
}

/// Finds the Chromium executable.
///
/// With `configured` (config `browser.chromium_path`): that file; a bare name
/// such as `chromium` is looked up on `PATH`. Without: the first of
/// [`CHROMIUM_NAMES`] found on `PATH`.
///
/// # Errors
/// [`LaunchError::ConfiguredPathMissing`] when the configured file does not
/// exist; [`LaunchError::NotFound`] when nothing is on `PATH`.
pub fn find_chromium(configured: Option<&Path>) -> Result<PathBuf, LaunchError> {
    if let Some(path) = configured.filter(|p| !p.as_os_str().is_empty()) {
        let bare_name = path.components().count() == 1 && !path.is_absolute();
        let found = if bare_name && !path.exists() {
            search_path(path.as_os_str())
        } else {
            path.is_file().then(|| path.to_path_buf())
        };
        return found.ok_or_else(|| LaunchError::ConfiguredPathMissing {
            path: path.to_path_buf(),
        });
    }
    CHROMIUM_NAMES
        .iter()
        .find_map(|name| search_path(name.as_ref()))
        .ok_or(LaunchError::NotFound)
}

fn search_path(name: &std::ffi::OsStr) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// How to launch local Chromium.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchOptions {
    /// The executable; `None`: search `PATH` (see [`find_chromium`]).
    pub chromium_path: Option<PathBuf>,
    /// Extra flags, appended after [`BASE_ARGS`] (so they can override them)
    /// and before the start URL.
    pub extra_args: Vec<String>,
    /// How long to wait for the DevTools endpoint.
    pub timeout: Duration,
    /// How CDP reaches it: a pipe (the default) or a port.
    pub debugging: Debugging,
}

/// How a launched Chromium's DevTools is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Debugging {
    /// `--remote-debugging-pipe`: CDP over file descriptors 3 and 4, no TCP
    /// port; [`LocalChromium::ws_url`] is a `pipe://…` URL that only this
    /// process can open ([`crate::cdp::pipe`]).
    #[default]
    Pipe,
    /// `--remote-debugging-port=0`: an OS-chosen port on loopback that any
    /// local process can reach (`ws://127.0.0.1:PORT/devtools/browser/…`).
    Port,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            chromium_path: None,
            extra_args: Vec::new(),
            timeout: DEFAULT_LAUNCH_TIMEOUT,
            debugging: Debugging::Pipe,
        }
    }
}

/// A running headless Chromium that we launched and own.
///
/// Dropping it kills Chromium's process group and deletes its user-data-dir;
/// [`LocalChromium::shutdown`] does the same and also waits for the exit.
#[derive(Debug)]
pub struct LocalChromium {
    child: Option<Child>,
    pid: Option<u32>,
    ws_url: String,
    port: u16,
    /// The pipe's hub, with [`Debugging::Pipe`].
    hub: Option<Arc<crate::cdp::pipe::Hub>>,
    user_data_dir: Option<tempfile::TempDir>,
    user_data_path: PathBuf,
    stderr_task: JoinHandle<()>,
}

type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// The ends of a launch's CDP pipe that Chromium gets, as its file
/// descriptors 3 (it reads commands) and 4 (it writes replies and events).
struct ChildPipe {
    reads: std::os::fd::OwnedFd,
    writes: std::os::fd::OwnedFd,
}

/// The command line of a headless Chromium on `about:blank` with its own
/// user-data-dir, stderr piped (where it says its DevTools URL), killed
/// when dropped, and tied to us so that it never outlives the supervisor.
/// With `pipe`, its ends become the child's fds 3 and 4 and CDP goes over
/// them (`--remote-debugging-pipe`); without, over an OS-chosen port.
fn chromium_command(
    exe: &Path,
    user_data_path: &Path,
    extra_args: &[String],
    pipe: Option<&ChildPipe>,
) -> Command {
    use std::os::fd::AsRawFd;
    let mut cmd = Command::new(exe);
    cmd.args(BASE_ARGS)
        .arg(if pipe.is_some() {
            "--remote-debugging-pipe"
        } else {
            "--remote-debugging-port=0"
        })
        .arg(format!("--user-data-dir={}", user_data_path.display()))
        .args(extra_args)
        .arg("about:blank")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so that one signal reaches the renderers,
    // zygotes and utilities Chromium forks, not just the browser process.
    #[cfg(unix)]
    cmd.process_group(0);
    // If we die without a chance to clean up (SIGKILL), Chromium dies
    // too: no browser outlives its supervisor. (The signal is tied to
    // the spawning thread; tokio's worker threads live as long as the
    // runtime that owns the supervisor.)
    let fds = pipe.map(|p| (p.reads.as_raw_fd(), p.writes.as_raw_fd()));
    // SAFETY: prctl, fcntl and dup2 are async-signal-safe; they touch no
    // memory of ours, and nothing else runs between fork and exec here.
    unsafe {
        cmd.pre_exec(move || {
            #[cfg(target_os = "linux")]
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((reads, writes)) = fds {
                // Copied above 4 first (either may be 3 or 4 already), then
                // onto 3 and 4; dup2's copies are not close-on-exec.
                for (from, to) in [(reads, 3), (writes, 4)] {
                    let high = libc::fcntl(from, libc::F_DUPFD, 10);
                    if high < 0 || libc::dup2(high, to) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        });
    }
    cmd
}

impl LocalChromium {
    /// Launches headless Chromium with a fresh user-data-dir on `about:blank`
    /// and waits (up to `opts.timeout`) for its browser WebSocket URL, read
    /// from stderr or `<user-data-dir>/DevToolsActivePort`, whichever comes
    /// first.
    ///
    /// # Errors
    /// [`LaunchError::NotFound`]/[`LaunchError::ConfiguredPathMissing`] if
    /// there is no Chromium; [`LaunchError::Exited`] (with the last stderr
    /// lines) if it dies during start-up; [`LaunchError::Timeout`] if it never
    /// reports an endpoint (it is killed then).
    pub async fn launch(opts: &LaunchOptions) -> Result<LocalChromium, LaunchError> {
        let exe = find_chromium(opts.chromium_path.as_deref())?;
        let dir = tempfile::Builder::new()
            .prefix("cdp-supervisor-chromium-")
            .tempdir()
            .map_err(LaunchError::UserDataDir)?;
        let user_data_path = dir.path().to_path_buf();

        let pipe = match opts.debugging {
            Debugging::Pipe => Some(launch_pipe().map_err(|source| LaunchError::Spawn {
                path: exe.clone(),
                source,
            })?),
            Debugging::Port => None,
        };
        let mut cmd = chromium_command(
            &exe,
            &user_data_path,
            &opts.extra_args,
            pipe.as_ref().map(|(child, _)| child),
        );
        let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
            path: exe.clone(),
            source,
        })?;
        let pid = child.id();
        tracing::debug!(?exe, ?pid, dir = %user_data_path.display(), "launched Chromium");
        // Our copies of the child's ends go, so that its exit ends the pipe.
        let hub = match pipe {
            Some((child_ends, (from_browser, to_browser))) => {
                drop(child_ends);
                Some(
                    crate::cdp::pipe::Hub::start(from_browser, to_browser).map_err(|source| {
                        LaunchError::Spawn {
                            path: exe.clone(),
                            source,
                        }
                    })?,
                )
            }
            None => None,
        };

        let tail: StderrTail = Arc::default();
        let (url_tx, url_rx) = oneshot::channel();
        let stderr = child.stderr.take().expect("stderr is piped");
        let stderr_task = tokio::spawn(drain_stderr(stderr, tail.clone(), url_tx));

        let mut chromium = LocalChromium {
            child: Some(child),
            pid,
            ws_url: String::new(),
            port: 0,
            hub: hub.clone(),
            user_data_dir: Some(dir),
            user_data_path,
            stderr_task,
        };
        // On an error `chromium` drops here: group killed, dir removed.
        let ws_url = match hub {
            // The pipe answers once DevTools runs.
            Some(hub) => {
                let ready = async move {
                    let version = hub
                        .call("Browser.getVersion", serde_json::json!({}), opts.timeout)
                        .await;
                    version.ok().map(|_| hub.url())
                };
                chromium
                    .wait_for_endpoint(ready, &tail, opts.timeout)
                    .await?
            }
            None => {
                let ready = listening_at(chromium.user_data_path.clone(), url_rx);
                let url = chromium
                    .wait_for_endpoint(ready, &tail, opts.timeout)
                    .await?;
                chromium.port = url::Url::parse(&url)
                    .ok()
                    .and_then(|u| u.port())
                    .unwrap_or_default();
                url
            }
        };
        chromium.ws_url = ws_url;
        tracing::debug!(ws_url = %crate::cdp::redact_url(&chromium.ws_url), "Chromium DevTools ready");
        Ok(chromium)
    }

    /// Waits up to `timeout` for `ready` (the DevTools URL once DevTools
    /// answers; `None` when it never will) while watching the Chromium just
    /// spawned. Fails with the last stderr lines (`tail`) when it exits
    /// first or the time runs out.
    async fn wait_for_endpoint(
        &mut self,
        ready: impl Future<Output = Option<String>>,
        tail: &StderrTail,
        timeout: Duration,
    ) -> Result<String, LaunchError> {
        let deadline = crate::cdp::connection::deadline_after(timeout);
        tokio::pin!(ready);
        let mut waiting = true;
        loop {
            let child = self.child.as_mut().expect("child is set until shutdown");
            if let Ok(Some(status)) = child.try_wait() {
                // Let the reader reach EOF so the error quotes the last lines.
                let task = std::mem::replace(&mut self.stderr_task, tokio::spawn(async {}));
                let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
                return Err(LaunchError::Exited {
                    status: status.to_string(),
                    stderr: tail_text(tail),
                });
            }
            tokio::select! {
                url = &mut ready, if waiting => match url {
                    Some(url) => return Ok(url),
                    // It never will: watch for the exit until the deadline.
                    None => waiting = false,
                },
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(LaunchError::Timeout {
                    timeout,
                    stderr: tail_text(tail),
                });
            }
        }
    }

    /// The browser-level endpoint: with [`Debugging::Port`],
    /// `ws://127.0.0.1:PORT/devtools/browser/<id>`; with the pipe, a
    /// `pipe://…` URL that [`crate::cdp::Connection::connect`] (and a
    /// supervisor this process starts on this browser) opens, and nothing
    /// outside this process can.
    pub fn ws_url(&self) -> &str {
        &self.ws_url
    }

    /// The DevTools HTTP endpoint, `http://127.0.0.1:PORT` (serves
    /// `/json/version`, `/json/list`); `None` on a pipe, which has none.
    pub fn http_url(&self) -> Option<String> {
        (self.hub.is_none()).then(|| format!("http://127.0.0.1:{}", self.port))
    }

    /// The TCP port its DevTools listens on, if any: with
    /// [`Debugging::Port`], or on a pipe when `--remote-debugging-port` was
    /// asked for in the extra args (read from `DevToolsActivePort`).
    pub fn devtools_port(&self) -> Option<u16> {
        if self.port != 0 {
            return Some(self.port);
        }
        let url = read_active_port(&self.user_data_path)?;
        url::Url::parse(&url).ok()?.port()
    }

    /// The browser process id (also its process group id); `None` once it
    /// has been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Whether the browser process has exited (it crashed, or was killed):
    /// then its endpoint will never come back.
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// The temporary user-data-dir; deleted on shutdown or drop.
    pub fn user_data_dir(&self) -> &Path {
        &self.user_data_path
    }

    /// Kills Chromium's process group, waits for the browser process to exit
    /// and deletes the user-data-dir. Never fails: what cannot be cleaned up
    /// is logged.
    pub async fn shutdown(mut self) {
        self.kill_group();
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
                Ok(Ok(status)) => tracing::debug!(%status, "Chromium exited"),
                Ok(Err(e)) => tracing::warn!("waiting for Chromium: {e}"),
                Err(_) => tracing::warn!("Chromium did not exit within 5 s of SIGKILL"),
            }
        }
        self.stderr_task.abort();
        if let Some(dir) = self.user_data_dir.take() {
            // Its retries sleep: not on a tokio worker.
            let _ = tokio::task::spawn_blocking(move || remove_dir(dir)).await;
        }
    }

    fn kill_group(&self) {
        #[cfg(unix)]
        if let (Some(pid), Some(_)) = (self.pid, &self.child) {
            // A negative pid signals the whole group (POSIX): the renderers
            // and helpers Chromium started die with it.
            let Ok(group) = libc::pid_t::try_from(pid) else {
                return;
            };
            // SAFETY: kill(2) takes plain integers and touches no memory of ours.
            if unsafe { libc::kill(-group, libc::SIGKILL) } != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ESRCH) {
                    tracing::warn!("cannot kill Chromium's process group {pid}: {e}");
                }
            }
        }
    }
}

impl Drop for LocalChromium {
    fn drop(&mut self) {
        self.kill_group();
        self.stderr_task.abort();
        let child = self.child.take();
        // One quick try here (milliseconds: the group is killed, so nothing
        // writes there any more but a syscall already under way): when the
        // process exits right after this drop (a test binary after its last
        // test), the clean-up thread below never runs, and its user-data-dir
        // was left in the temp directory.
        let dir = self.user_data_dir.take().and_then(|dir| {
            remove_singleton_dir(dir.path());
            std::fs::remove_dir_all(dir.path()).is_err().then_some(dir)
        });
        if child.is_none() && dir.is_none() {
            return;
        }
        // Reaping the killed Chromium and removing its user-data-dir can
        // take up to a second of waiting: never on a tokio worker (this drop
        // runs inside a supervisor's task), so on a thread of its own.
        let cleanup = move || {
            if let Some(mut child) = child {
                let _ = child.start_kill();
                reap(&mut child);
            }
            if let Some(dir) = dir {
                remove_dir(dir);
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("chromium-cleanup".into())
            .spawn(cleanup)
        {
            tracing::warn!(
                "cannot start the Chromium clean-up thread ({e}); Chromium was killed, its user-data-dir is left behind"
            );
        }
    }
}

/// How long the clean-up thread waits for a killed Chromium to be reapable.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// Waits (on the clean-up thread, never a tokio worker) until the killed
/// child can be reaped, so no zombie outlives the handle.
fn reap(child: &mut tokio::process::Child) {
    let until = std::time::Instant::now() + REAP_WAIT;
    while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Deletes the user-data-dir. Dying renderers may still be flushing files into
/// it, so a failed removal is retried briefly (on the clean-up thread).
fn remove_dir(dir: tempfile::TempDir) {
    let path = dir.keep();
    remove_singleton_dir(&path);
    for attempt in 0..10 {
        match std::fs::remove_dir_all(&path) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) if attempt == 9 => {
                tracing::warn!(
                    "cannot remove Chromium user-data-dir {}: {e}",
                    path.display()
                );
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Removes the directory Chromium made in the temp directory for its
/// singleton socket (`$TMPDIR/org.chromium.Chromium.XXXXXX`), which
/// `<user-data-dir>/SingletonSocket` links to; it would outlive the
/// user-data-dir otherwise. (It cannot live inside the user-data-dir: a
/// socket path over 108 bytes makes Chromium abort.)
fn remove_singleton_dir(user_data_dir: &Path) {
    let Ok(socket) = std::fs::read_link(user_data_dir.join("SingletonSocket")) else {
        return;
    };
    let Some(dir) = socket.parent() else { return };
    let ours = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("org.chromium.Chromium."));
    if ours
        && let Err(e) = std::fs::remove_dir_all(dir)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove Chromium's socket dir {}: {e}", dir.display());
    }
}

/// Reads Chromium's stderr to the end: the first `DevTools listening on`
/// URL goes to `url_tx`, every line to `tracing::debug!` and the tail buffer.
/// Draining to EOF keeps the pipe from filling and blocking Chromium.
async fn drain_stderr(stderr: ChildStderr, tail: StderrTail, url_tx: oneshot::Sender<String>) {
    let mut url_tx = Some(url_tx);
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "chromium", "{line}");
        if let Some(rest) = line
            .find(DEVTOOLS_LINE)
            .map(|i| &line[i + DEVTOOLS_LINE.len()..])
            && let Some(tx) = url_tx.take()
        {
            let _ = tx.send(rest.trim().to_owned());
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

fn tail_text(tail: &StderrTail) -> String {
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
    if tail.is_empty() {
        "(empty)".to_owned()
    } else {
        tail.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// With [`Debugging::Port`]: the browser WebSocket URL once Chromium has
/// said it (its stderr line, `url_rx`, or its `DevToolsActivePort` file,
/// whichever comes first).
async fn listening_at(
    user_data_path: PathBuf,
    mut url_rx: oneshot::Receiver<String>,
) -> Option<String> {
    let mut stderr_open = true;
    loop {
        if let Some(url) = read_active_port(&user_data_path) {
            return Some(url);
        }
        tokio::select! {
            url = &mut url_rx, if stderr_open => match url {
                Ok(url) => return Some(url),
                // Stderr closed without the line: keep polling the file.
                Err(_) => stderr_open = false,
            },
            _ = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}

/// A launch's CDP pipe: the ends the child gets, and ours (we read what it
/// writes, and write what it reads). Close-on-exec, so no other child
/// inherits them.
fn launch_pipe() -> io::Result<(ChildPipe, (std::os::fd::OwnedFd, std::os::fd::OwnedFd))> {
    let (child_reads, we_write) = io::pipe()?;
    let (we_read, child_writes) = io::pipe()?;
    Ok((
        ChildPipe {
            reads: child_reads.into(),
            writes: child_writes.into(),
        },
        (we_read.into(), we_write.into()),
    ))
}

/// `DevToolsActivePort` holds the port and the browser target path on two
/// lines; Chromium writes it once DevTools listens.
fn read_active_port(user_data_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(user_data_dir.join("DevToolsActivePort")).ok()?;
    let mut lines = text.lines();
    let port: u16 = lines.next()?.trim().parse().ok()?;
    let path = lines.next()?.trim();
    path.starts_with("/devtools/browser/")
        .then(|| format!("ws://127.0.0.1:{port}{path}"))
}

#[cfg(test)]
mod tests;
