//! The `cdp-supervisor` command line: `demo`, `watch`, `snapshot`, `mcp`, `live`.
//!
//! A user error (bad flag, bad URL, unreachable endpoint, bad config) ends
//! with one line on stderr and a non-zero exit; never a panic or a backtrace.

mod demo;
mod live;
mod render;
mod watch;

use crate::config::Config;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// A browser supervisor for AI agents: catches native JS dialogs, maps the
/// frame tree (OOPIFs included) and routes CDP calls into cross-origin iframes.
#[derive(Parser, Debug)]
#[command(name = "cdp-supervisor", version, about, long_about = None)]
pub struct Cli {
    /// A YAML config file (default: $CDP_SUPERVISOR_CONFIG, else none).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Launch local headless Chromium on a bundled two-site demo, fire dialogs
    /// in the main frame, a same-origin iframe and a cross-origin OOPIF, and
    /// show how each is caught and answered. Ends by itself.
    Demo(DemoArgs),
    /// Attach (or launch), optionally navigate, and stream dialogs, frames and
    /// console errors live until Ctrl-C.
    Watch(WatchArgs),
    /// Navigate to URL and print the snapshot JSON once.
    Snapshot(SnapshotArgs),
    /// Serve the agent tools over the Model Context Protocol (stdio by default).
    Mcp(McpArgs),
    /// A live view of a browser with no agent: prints a link where a person
    /// sees its tab and uses it (mouse, keys, its dialogs) until Ctrl-C.
    Live(LiveArgs),
}

#[derive(Args, Debug)]
struct LiveArgs {
    /// A URL to open first (else the page as it is).
    url: Option<String>,
    #[command(flatten)]
    browser: BrowserFlags,
    /// Where the live view listens (browser.live.addr; default 127.0.0.1:0, a free port).
    #[arg(long, value_name = "ADDR")]
    addr: Option<String>,
}

#[derive(Args, Debug, Clone, Default)]
struct BrowserFlags {
    /// Attach to this browser (http://host:port, ws://host:port or a
    /// ws://…/devtools/browser/… URL) instead of launching local Chromium.
    #[arg(long, value_name = "URL")]
    cdp_url: Option<String>,
    /// With --cdp-url: the target (tab) to supervise; default the tab in front (the first page /json/list shows).
    #[arg(long, value_name = "ID")]
    target_id: Option<String>,
    /// Dialog policy: must_respond, auto_dismiss or auto_accept; or one per
    /// dialog type, e.g. alert=auto_accept,confirm=must_respond (types left
    /// out: must_respond).
    #[arg(long, value_name = "POLICY")]
    policy: Option<String>,
    /// Seconds the must_respond watchdog waits before dismissing a dialog.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    dialog_timeout_s: Option<String>,
    /// Documents may load only from these origins, comma-separated
    /// (scheme://host[:port]; *.example.com for subdomains); enforced in
    /// the browser.
    #[arg(long, value_name = "ORIGINS")]
    allowed_origins: Option<String>,
    /// Documents never load from these origins, comma-separated (wins over
    /// --allowed-origins).
    #[arg(long, value_name = "ORIGINS")]
    blocked_origins: Option<String>,
    /// Let file: documents load (refused by default).
    #[arg(long)]
    allow_file_urls: bool,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Also write every notice as one JSON object per line.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct WatchArgs {
    /// A URL to navigate to first (else watch the page as it is).
    url: Option<String>,
    #[command(flatten)]
    browser: BrowserFlags,
    /// Write one JSON object per line, each with an `event` field.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct SnapshotArgs {
    /// The URL to navigate to.
    url: String,
    #[command(flatten)]
    browser: BrowserFlags,
    /// Milliseconds to wait after the load before taking the snapshot.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 500,
        allow_negative_numbers = true
    )]
    settle_ms: u64,
}

#[derive(Args, Debug)]
struct McpArgs {
    #[command(flatten)]
    browser: BrowserFlags,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8931) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Bearer token HTTP clients must send (env CDP_MCP_TOKEN); required for a
    /// non-loopback --http bind (generated and printed once when missing).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "CDP_MCP_TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// With --http: the most MCP sessions open at once (each may run a
    /// Chromium); one more gets HTTP 503.
    #[arg(long, value_name = "N", default_value_t = crate::mcp::DEFAULT_MAX_SESSIONS, allow_negative_numbers = true,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    max_sessions: usize,
    /// With --http: a session that sends no request for this many seconds is
    /// closed, and its browser stopped (a client that vanished without
    /// DELETE); its id then gets HTTP 404.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::mcp::DEFAULT_IDLE_TIMEOUT.as_secs(), allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    idle_timeout_s: u64,
}

/// A CLI failure: its `Display` is the one line printed on stderr.
#[derive(Debug)]
pub struct CliError(pub String);

impl<E: std::fmt::Display> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError(e.to_string())
    }
}

/// Loads the config (file, then environment) and applies the flags on top.
fn load_config(path: Option<&std::path::Path>, flags: &BrowserFlags) -> Result<Config, CliError> {
    let mut config = Config::load(path, std::env::vars())?;
    let mut set = |key: &str, value: &Option<String>, flag: &str| -> Result<(), CliError> {
        if let Some(v) = value {
            config
                .set(key, v)
                .map_err(|e| CliError(format!("{e} (from {flag})")))?;
        }
        Ok(())
    };
    set("browser.cdp_url", &flags.cdp_url, "--cdp-url")?;
    set("browser.target_id", &flags.target_id, "--target-id")?;
    set("browser.dialog_policy", &flags.policy, "--policy")?;
    set(
        "browser.dialog_timeout_s",
        &flags.dialog_timeout_s,
        "--dialog-timeout-s",
    )?;
    set(
        "browser.allowed_origins",
        &flags.allowed_origins,
        "--allowed-origins",
    )?;
    set(
        "browser.blocked_origins",
        &flags.blocked_origins,
        "--blocked-origins",
    )?;
    let allow_file = flags.allow_file_urls.then(|| "true".to_owned());
    set("browser.allow_file_urls", &allow_file, "--allow-file-urls")?;
    if !config.browser.target_id.is_empty()
        && config.browser.cdp_url.is_empty()
        && config.browser.cloud_provider == crate::config::CloudProvider::Local
    {
        // A launched Chromium's one tab is the one supervised: the id
        // could only name a tab of some other browser (it was ignored).
        return Err(CliError(format!(
            "browser.target_id {:?} names a tab of the browser at browser.cdp_url (--cdp-url), and none is given; without one a local Chromium is launched and its own tab supervised",
            config.browser.target_id
        )));
    }
    Ok(config)
}

fn init_logging() {
    let filter = crate::cdp::connection::log_filter(&crate::config::log_directives(), "warn");
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Parses the arguments, runs the command, and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            // clap's message, up to its usage block, on one line.
            let text = e.to_string();
            let first = text
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            let first = first.trim_start_matches("error: ");
            eprintln!("cdp-supervisor: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cdp-supervisor: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // Stop anything still running (supervisors, Chromium) before exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError(msg)) => {
            let one_line = msg.replace('\n', " ");
            eprintln!("cdp-supervisor: {one_line}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let path = cli.config.as_deref();
    match cli.command {
        Command::Demo(a) => {
            let config = load_config(path, &BrowserFlags::default())?;
            demo::run(config, a.json).await
        }
        Command::Watch(a) => {
            let config = load_config(path, &a.browser)?;
            watch::watch(config, a.url, a.json).await
        }
        Command::Snapshot(a) => {
            let config = load_config(path, &a.browser)?;
            watch::snapshot(config, &a.url, a.settle_ms).await
        }
        Command::Live(a) => {
            let mut config = load_config(path, &a.browser)?;
            if let Some(addr) = &a.addr {
                config
                    .set("browser.live.addr", addr)
                    .map_err(|e| CliError(format!("{e} (from --addr)")))?;
            }
            live::run(config, a.url).await
        }
        Command::Mcp(a) => {
            let config = load_config(path, &a.browser)?;
            match a.http {
                None => crate::mcp::serve_stdio(config)
                    .await
                    .map_err(CliError::from),
                Some(addr) => {
                    let addr: std::net::SocketAddr = addr.parse().map_err(|_| {
                        CliError(format!(
                            "--http {addr:?} is not an address; give HOST:PORT, e.g. 127.0.0.1:8931"
                        ))
                    })?;
                    let options = crate::mcp::HttpOptions {
                        token: a.token,
                        max_sessions: a.max_sessions,
                        idle_timeout: std::time::Duration::from_secs(a.idle_timeout_s),
                    };
                    crate::mcp::serve_http_with(config, addr, options)
                        .await
                        .map_err(CliError::from)
                }
            }
        }
    }
}
