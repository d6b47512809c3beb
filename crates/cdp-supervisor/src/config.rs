//! Configuration: a YAML file, then `CDP_SUPERVISOR_…` environment variables,
//! then command-line flags, each layer overriding the one before.
//!
//! ```yaml
//! browser:
//!   cdp_url: ""                 # empty: launch local Chromium
//!   cdp_headers: {}             # extra HTTP headers for the CDP endpoint (e.g. Authorization)
//!   cloud_provider: local       # local | browserbase | browser-use | firecrawl | selenium | camofox | exec
//!   provider_command: []        # for exec: argv of a program that creates/closes sessions
//!   selenium_capabilities: {}   # for selenium: W3C capabilities merged over a Chromium request
//!   dialog_policy: must_respond # must_respond | auto_dismiss | auto_accept, or one per type:
//!                               # {alert: auto_accept, confirm: must_respond} (left out: must_respond)
//!   dialog_timeout_s: 300       # must_respond watchdog, seconds, > 0
//!   chromium_path: ""           # empty: find it on PATH
//!   chromium_args: []           # extra flags for a launched Chromium
//!   target_id: ""               # with cdp_url: the tab to supervise; empty: first page
//!   max_tabs: 20                # tabs supervised per task (popups past it: tabs_truncated)
//!   isolation: ""               # browser | context; empty: context for `mcp --http` on a local browser, else browser
//!   proxy: ""                   # with isolation context: each task's context uses this proxy server
//!   allowed_origins: []         # documents may load only from these origins (empty: any)
//!   blocked_origins: []         # never from these (wins over allowed_origins)
//!   allow_file_urls: false      # file: documents
//!   credentials: {}             # per origin: {username, password_env} answers HTTP auth
//!   downloads:
//!     dir: ""                   # empty: a temporary directory per task, removed with it
//!     max_bytes: 104857600      # a larger download is canceled
//!   live:
//!     addr: 127.0.0.1:0         # the live view's listener when no HTTP server is shared
//!     ttl_s: 1800               # how long a live-view token lives
//! ```
//!
//! The three navigation keys are enforced in the browser; see
//! [`crate::supervisor::origins`] for what an origin entry matches.
//!
//! Every value, whatever layer it comes from, goes through [`Config::set`], so
//! one key is validated one way and every error reads the same: one line
//! naming the key path, the rejected value and what is allowed. An unknown
//! key is an error too — a typo never silently falls back to a default.
//!
//! ```
//! use cdp_supervisor::config::Config;
//!
//! let env = [(
//!     "CDP_SUPERVISOR_BROWSER__DIALOG_POLICY".to_owned(),
//!     "auto_dismiss".to_owned(),
//! )];
//! let mut config = Config::load(None, env).unwrap();
//! config.set("browser.dialog_timeout_s", "5").unwrap(); // a flag
//! assert_eq!(config.browser.dialog_timeout_s, 5.0);
//! ```

use crate::browser::LaunchOptions;
use crate::browser::provider::{
    BrowserProvider, BrowserUse, Browserbase, Exec, Firecrawl, Selenium,
};
use crate::cdp::endpoint::CdpHeaders;
use crate::supervisor::credentials::{self, Credential, Credentials, Secret};
use crate::supervisor::origins::{NavigationPolicy, ORIGIN_ALLOWED, OriginError, OriginPattern};
use crate::supervisor::policy::{DIALOG_TYPES, DialogPolicies, DialogPolicy, PolicyError};
use crate::supervisor::state::downloads::DOWNLOAD_MAX_BYTES_DEFAULT;
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

/// Environment variable naming the YAML config file (used when no `--config`).
pub const CONFIG_PATH_ENV: &str = "CDP_SUPERVISOR_CONFIG";

/// Environment variable that picks what is logged: an `EnvFilter`
/// directive (`debug`, `cdp_supervisor=trace,warn`…), the same switch for
/// the binary and the Python module (one name, one meaning). Not a config
/// key; for the binary it wins over `RUST_LOG`.
pub const LOG_ENV: &str = "CDP_SUPERVISOR_LOG";

/// What to log, by [`LOG_ENV`], else `RUST_LOG` (`""`: the caller's default).
pub fn log_directives() -> String {
    [LOG_ENV, "RUST_LOG"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_default()
}

/// Prefix of the per-key environment variables: `CDP_SUPERVISOR_` + the key
/// path upper-cased with `__` between levels.
pub const ENV_PREFIX: &str = "CDP_SUPERVISOR_";

/// The largest `browser.dialog_timeout_s`: a year. Beyond it a deadline
/// stops being a deadline (and very large values overflow a `Duration`).
pub const DIALOG_TIMEOUT_MAX_S: f64 = 31_536_000.0;

/// Default `browser.dialog_timeout_s`. DESIGN.md: the must_respond watchdog
/// waits five minutes for the agent before dismissing.
pub const DEFAULT_DIALOG_TIMEOUT_S: f64 = 300.0;

/// The largest `browser.max_tabs`: a bound on what one task may hold.
const MAX_TABS_MAX: usize = 1_000;
const MAX_TABS_ALLOWED: &str = "a whole number of tabs from 1 to 1000";

/// Every key path the config accepts, in documentation order.
pub const KEYS: &[&str] = &[
    "browser.cdp_url",
    "browser.cdp_headers",
    "browser.cloud_provider",
    "browser.provider_command",
    "browser.selenium_capabilities",
    "browser.dialog_policy",
    "browser.dialog_timeout_s",
    "browser.chromium_path",
    "browser.chromium_args",
    "browser.target_id",
    "browser.max_tabs",
    "browser.isolation",
    "browser.proxy",
    "browser.allowed_origins",
    "browser.blocked_origins",
    "browser.allow_file_urls",
    "browser.credentials",
    "browser.downloads.dir",
    "browser.downloads.max_bytes",
    "browser.live.addr",
    "browser.live.ttl_s",
];

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The `browser:` section.
    pub browser: BrowserConfig,
}

/// The `browser:` section: which browser to supervise and how.
#[derive(Clone, Debug, PartialEq)]
pub struct BrowserConfig {
    /// CDP endpoint to attach to (`ws://…` browser URL or `http://host:port`);
    /// empty: launch local Chromium.
    pub cdp_url: String,
    /// Extra HTTP headers for `cdp_url` (a grid's `Authorization`…), sent on
    /// `/json/version` and on the WebSocket handshake; never shown.
    pub cdp_headers: CdpHeaders,
    /// The backend that provides the browser.
    pub cloud_provider: CloudProvider,
    /// For `cloud_provider: exec`: the argv of the program that creates and
    /// closes sessions ([`crate::browser::provider::Exec`]).
    pub provider_command: Vec<String>,
    /// For `cloud_provider: selenium`: W3C capabilities merged over the
    /// default Chromium request ([`crate::browser::provider::Selenium`]).
    pub selenium_capabilities: serde_json::Map<String, Value>,
    /// What happens when a dialog opens, per dialog type.
    pub dialog_policy: DialogPolicies,
    /// Seconds the `must_respond` watchdog waits before dismissing a dialog;
    /// finite and > 0.
    pub dialog_timeout_s: f64,
    /// Chromium executable to launch; empty: search `PATH`
    /// (see [`crate::browser::find_chromium`]).
    pub chromium_path: String,
    /// Extra flags for a launched Chromium (proxy, host rules…).
    pub chromium_args: Vec<String>,
    /// With `cdp_url`: the target (tab) to supervise; empty: the tab in front (the first page `/json/list` shows).
    pub target_id: String,
    /// Tabs supervised per task, the first one included; popups past it
    /// are not supervised (the snapshot says `tabs_truncated`). 1 to 1000.
    pub max_tabs: usize,
    /// `browser.isolation`: a browser per task, or a browser context per
    /// task in one shared browser (DESIGN "Many tasks, one browser");
    /// `None`: the surface's default ([`Isolation::default_for`]).
    pub isolation: Option<Isolation>,
    /// `browser.proxy`: with `isolation: context`, the proxy server of every
    /// task's context (`Target.createBrowserContext{proxyServer}`); empty: none.
    pub proxy: String,
    /// Documents may load only from these origins (empty: any). Each entry
    /// is valid ([`OriginPattern::parse`]).
    pub allowed_origins: Vec<String>,
    /// Documents never load from these origins (wins over `allowed_origins`).
    pub blocked_origins: Vec<String>,
    /// Whether `file:` documents may load.
    pub allow_file_urls: bool,
    /// HTTP authentication answered by itself, per origin (`{origin:
    /// {username, password_env}}`); each password was read from its
    /// environment variable when the key was set.
    pub credentials: Credentials,
    /// Where downloads go; empty: a temporary directory per task (local
    /// Chromium), removed with it.
    pub downloads_dir: String,
    /// A download past this many bytes received is canceled (1 B to 1 TiB).
    pub downloads_max_bytes: u64,
    /// Where the live view listens when no HTTP server is there to share
    /// (stdio, the Python module): opened on first use.
    pub live_addr: std::net::SocketAddr,
    /// Seconds a live-view token lives (1 to 86400).
    pub live_ttl_s: u64,
}

/// `browser.live.addr`'s default: loopback, a free port.
pub const LIVE_ADDR_DEFAULT: std::net::SocketAddr = std::net::SocketAddr::V4(
    std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0),
);
/// `browser.live.ttl_s`'s default: half an hour.
pub const LIVE_TTL_S_DEFAULT: u64 = 1800;
const LIVE_TTL_S_MAX: u64 = 86_400;

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            cdp_url: String::new(),
            cdp_headers: CdpHeaders::default(),
            cloud_provider: CloudProvider::Local,
            provider_command: Vec::new(),
            selenium_capabilities: serde_json::Map::new(),
            dialog_policy: DialogPolicies::uniform(DialogPolicy::MustRespond),
            dialog_timeout_s: DEFAULT_DIALOG_TIMEOUT_S,
            chromium_path: String::new(),
            chromium_args: Vec::new(),
            target_id: String::new(),
            max_tabs: crate::supervisor::state::MAX_TABS_DEFAULT,
            isolation: None,
            proxy: String::new(),
            allowed_origins: Vec::new(),
            blocked_origins: Vec::new(),
            allow_file_urls: false,
            credentials: Credentials::default(),
            downloads_dir: String::new(),
            downloads_max_bytes: DOWNLOAD_MAX_BYTES_DEFAULT,
            live_addr: LIVE_ADDR_DEFAULT,
            live_ttl_s: LIVE_TTL_S_DEFAULT,
        }
    }
}

impl BrowserConfig {
    /// Options for launching local Chromium from this section
    /// (`chromium_path`, `chromium_args`; the default launch timeout).
    pub fn launch_options(&self) -> LaunchOptions {
        LaunchOptions {
            chromium_path: (!self.chromium_path.is_empty())
                .then(|| PathBuf::from(&self.chromium_path)),
            extra_args: self.chromium_args.clone(),
            ..LaunchOptions::default()
        }
    }

    /// The provider `cloud_provider` names, configured from the process
    /// environment (`provider_command` for `exec`); `None` for `local` and
    /// `camofox`, which have no sessions.
    pub fn provider(&self) -> Option<Arc<dyn BrowserProvider>> {
        let env = |k: &str| std::env::var(k).ok();
        match self.cloud_provider {
            CloudProvider::Local | CloudProvider::Camofox => None,
            CloudProvider::Browserbase => Some(Arc::new(Browserbase::from_vars(env))),
            CloudProvider::BrowserUse => Some(Arc::new(BrowserUse::from_vars(env))),
            CloudProvider::Firecrawl => Some(Arc::new(Firecrawl::from_vars(env))),
            CloudProvider::Exec => Some(Arc::new(Exec::new(self.provider_command.clone()))),
            CloudProvider::Selenium => Some(Arc::new(Selenium::from_vars(
                env,
                self.selenium_capabilities.clone(),
                self.cdp_headers.clone(),
            ))),
        }
    }

    /// The navigation policy of this section (`allowed_origins`,
    /// `blocked_origins`, `allow_file_urls`).
    ///
    /// # Errors
    /// An entry that is not an origin: [`Config::set`] never stores one,
    /// but a library caller may fill the struct itself.
    pub fn navigation_policy(&self) -> Result<NavigationPolicy, OriginError> {
        NavigationPolicy::new(
            &self.allowed_origins,
            &self.blocked_origins,
            self.allow_file_urls,
        )
    }
}

/// How tasks share browsers (`browser.isolation`, DESIGN "Many tasks, one
/// browser"; also `browser_open`'s `isolation` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A browser per task (launched, or the configured one attached).
    Browser,
    /// One browser for the process, a browser context per task.
    Context,
}

impl Isolation {
    /// The values `browser.isolation` takes, for errors.
    pub const ALLOWED: &'static str = "browser, context (or empty: the surface's default)";

    /// Parses `browser_open`'s `isolation` argument (absent or null: the
    /// configured default, `None`).
    ///
    /// # Errors
    /// Anything but `"browser"` or `"context"`, with the allowed values.
    pub fn parse(value: Option<&serde_json::Value>) -> Result<Option<Isolation>, String> {
        match value {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) if s == "browser" => Ok(Some(Isolation::Browser)),
            Some(serde_json::Value::String(s)) if s == "context" => Ok(Some(Isolation::Context)),
            Some(other) => Err(format!(
                "browser_open: isolation must be \"browser\" or \"context\", not {other}"
            )),
        }
    }

    /// The name in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::Browser => "browser",
            Isolation::Context => "context",
        }
    }

    /// What `configured` means on a surface: unset, `context` for a
    /// server of many tasks (`mcp --http`) on a local browser, else
    /// `browser` (stdio: one task per process; `cdp_url` and providers:
    /// the endpoint's own browser).
    pub fn default_for(
        configured: Option<Isolation>,
        many_tasks: bool,
        b: &BrowserConfig,
    ) -> Isolation {
        configured.unwrap_or(
            if many_tasks && b.cdp_url.is_empty() && b.cloud_provider == CloudProvider::Local {
                Isolation::Context
            } else {
                Isolation::Browser
            },
        )
    }
}

impl std::str::FromStr for Isolation {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s.trim() {
            "browser" => Ok(Isolation::Browser),
            "context" => Ok(Isolation::Context),
            _ => Err(()),
        }
    }
}

/// The backend that provides the browser (`browser.cloud_provider`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CloudProvider {
    /// Local Chromium, launched by us or reached at `cdp_url`.
    #[default]
    Local,
    /// Browserbase (CDP).
    Browserbase,
    /// Browser Use (CDP).
    BrowserUse,
    /// Firecrawl (CDP).
    Firecrawl,
    /// Camofox: a REST-only backend with no CDP endpoint.
    Camofox,
    /// A user's program (`browser.provider_command`) creates and closes sessions.
    Exec,
    /// A Selenium Grid 4 (`SELENIUM_GRID_URL`): a WebDriver session per
    /// task, supervised through its `se:cdp` endpoint.
    Selenium,
}

impl CloudProvider {
    /// The allowed spellings, for error messages.
    pub const ALLOWED: &'static str =
        "local, browserbase, browser-use, firecrawl, selenium, camofox, exec";

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CloudProvider::Local => "local",
            CloudProvider::Browserbase => "browserbase",
            CloudProvider::BrowserUse => "browser-use",
            CloudProvider::Firecrawl => "firecrawl",
            CloudProvider::Camofox => "camofox",
            CloudProvider::Exec => "exec",
            CloudProvider::Selenium => "selenium",
        }
    }

    /// Whether this backend exposes a CDP endpoint (everything but `camofox`).
    pub fn has_cdp(self) -> bool {
        self != CloudProvider::Camofox
    }
}

impl fmt::Display for CloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CloudProvider {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "local" => Ok(CloudProvider::Local),
            "browserbase" => Ok(CloudProvider::Browserbase),
            "browser-use" => Ok(CloudProvider::BrowserUse),
            "firecrawl" => Ok(CloudProvider::Firecrawl),
            "camofox" => Ok(CloudProvider::Camofox),
            "exec" => Ok(CloudProvider::Exec),
            "selenium" => Ok(CloudProvider::Selenium),
            _ => Err(()),
        }
    }
}

/// A config that cannot be used. Display is one line a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid YAML, or its top level is not a mapping.
    #[error("config file {}: {message}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The parser's message, on one line.
        message: String,
    },
    /// A key the config does not have (a typo, or a stray variable).
    #[error("unknown config key `{}`{}; known keys: {}", one_line(key), origin_suffix(origin), KEYS.join(", "))]
    UnknownKey {
        /// The key path, e.g. `browser.dialog_polcy`.
        key: String,
        /// Where it came from (file path or environment variable), if known.
        origin: Option<String>,
    },
    /// A known key with a value it cannot take.
    #[error(
        "{}: {value} is not allowed{}; allowed: {allowed}",
        one_line(key),
        origin_suffix(origin)
    )]
    BadValue {
        /// The key path, e.g. `browser.dialog_policy`.
        key: String,
        /// The rejected value, quoted as given.
        value: String,
        /// The allowed values or type.
        allowed: String,
        /// Where it came from (file path or environment variable), if known.
        origin: Option<String>,
    },
}

/// Text from the input, made safe for a one-line message: control
/// characters (a line break in a YAML key or scalar) are escaped.
fn one_line(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.escape_debug().to_string()
    } else {
        s.to_owned()
    }
}

fn origin_suffix(origin: &Option<String>) -> String {
    origin
        .as_ref()
        .map(|o| format!(" (from {o})"))
        .unwrap_or_default()
}

impl ConfigError {
    /// Records where the offending key or value came from (a file path, an
    /// environment variable, a flag), for the message.
    pub fn with_origin(mut self, from: impl Into<String>) -> Self {
        if let ConfigError::UnknownKey { origin, .. } | ConfigError::BadValue { origin, .. } =
            &mut self
        {
            *origin = Some(from.into());
        }
        self
    }
}

fn bad_value(key: &str, value: &str, allowed: &str) -> ConfigError {
    ConfigError::BadValue {
        key: key.to_owned(),
        value: format!("{value:?}"),
        allowed: allowed.to_owned(),
        origin: None,
    }
}

/// A `browser.dialog_policy` value refused: names the type or the policy
/// that was wrong, and what is allowed.
fn policy_error(value: &str, e: PolicyError) -> ConfigError {
    const KEY: &str = "browser.dialog_policy";
    match e {
        PolicyError::UnknownType(t) => ConfigError::BadValue {
            key: KEY.to_owned(),
            value: format!("type {t:?}"),
            allowed: format!("types {}", DIALOG_TYPES.join(", ")),
            origin: None,
        },
        PolicyError::UnknownPolicy {
            r#type: Some(t),
            value,
        } => bad_value(&format!("{KEY}.{t}"), &value, DialogPolicy::ALLOWED),
        PolicyError::UnknownPolicy { r#type: None, .. } => {
            bad_value(KEY, value, DialogPolicy::ALLOWED)
        }
        PolicyError::Duplicate(t) => ConfigError::BadValue {
            key: KEY.to_owned(),
            value: format!("type {t:?} given twice"),
            allowed: "each dialog type once".to_owned(),
            origin: None,
        },
        PolicyError::Unreadable(_) => bad_value(
            KEY,
            value,
            "must_respond, auto_dismiss, auto_accept, or a map of dialog type to one of them, e.g. {alert: auto_accept, confirm: must_respond}",
        ),
    }
}

fn unknown_key(key: &str) -> ConfigError {
    ConfigError::UnknownKey {
        key: key.to_owned(),
        origin: None,
    }
}

const CDP_URL_ALLOWED: &str =
    "a ws://, wss://, http:// or https:// URL, or empty to launch local Chromium";
const TIMEOUT_ALLOWED: &str = "a number of seconds > 0 and ≤ 31536000 (a year)";
const ARGS_ALLOWED: &str = "a YAML/JSON list of strings, or whitespace-separated flags";
const HEADERS_ALLOWED: &str =
    "a YAML/JSON map of header name to string value, e.g. {Authorization: \"Bearer …\"}";
const COMMAND_ALLOWED: &str = "a YAML/JSON list of strings (the program and its arguments)";
const CAPABILITIES_ALLOWED: &str = "a YAML/JSON mapping of W3C capabilities (e.g. {\"goog:chromeOptions\": {\"args\": [\"--headless=new\"]}})";
const BOOL_ALLOWED: &str = "true or false";

impl Config {
    /// Builds the config from defaults, then the YAML file at `path` (or, when
    /// `path` is `None`, at `$CDP_SUPERVISOR_CONFIG` if `env` has it), then
    /// every `CDP_SUPERVISOR_<SECTION>__<KEY>` variable in `env`.
    ///
    /// `env` is passed in (usually `std::env::vars()`) so that tests never
    /// touch the process environment. Variables without the prefix are
    /// ignored. Flags come last: the CLI applies them with [`Config::set`].
    ///
    /// # Errors
    /// An unreadable file, invalid YAML, an unknown key or a bad value, in the
    /// file or the environment.
    pub fn load(
        path: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut vars: Vec<(String, String)> = env
            .into_iter()
            .filter(|(name, _)| name.starts_with(ENV_PREFIX))
            .collect();
        // Sorted so that, with several bad variables, the error is deterministic.
        vars.sort();

        let file = match path {
            Some(p) => Some(p.to_path_buf()),
            None => vars
                .iter()
                .find(|(name, value)| name == CONFIG_PATH_ENV && !value.is_empty())
                .map(|(_, value)| PathBuf::from(value)),
        };

        let mut config = Config::default();
        if let Some(file) = file {
            let text = std::fs::read_to_string(&file).map_err(|source| ConfigError::Read {
                path: file.clone(),
                source,
            })?;
            config.merge_yaml(&text).map_err(|e| match e {
                ConfigError::Yaml { message, .. } => ConfigError::Yaml {
                    path: file.clone(),
                    message,
                },
                other => other.with_origin(file.display().to_string()),
            })?;
        }
        for (name, value) in &vars {
            if name == CONFIG_PATH_ENV || name == LOG_ENV {
                continue;
            }
            let key = env_var_to_key(name);
            config
                .set(&key, value)
                .map_err(|e| e.with_origin(name.clone()))?;
        }
        Ok(config)
    }

    /// Merges a YAML document over this config. An empty document changes
    /// nothing; a `null` value resets its key to the default.
    ///
    /// # Errors
    /// [`ConfigError::Yaml`] (with an empty `path`) for a parse error or a
    /// non-mapping document; otherwise as [`Config::set`].
    pub fn merge_yaml(&mut self, text: &str) -> Result<(), ConfigError> {
        let Some(top) = yaml_mapping(text)? else {
            return Ok(());
        };
        for (section, body) in top {
            if section != "browser" {
                return Err(unknown_key(&section));
            }
            let body = match body {
                Value::Null => continue,
                Value::Object(body) => body,
                other => return Err(bad_value("browser", &compact(&other), "a mapping of keys")),
            };
            for (name, value) in body {
                self.merge_key(&format!("browser.{name}"), value)?;
            }
        }
        Ok(())
    }

    /// One key of the `browser:` section as YAML gave it: `null` resets it;
    /// the keys that take a mapping or a list take them here; any other
    /// scalar goes through [`Config::set`], as the environment's text would.
    fn merge_key(&mut self, key: &str, value: Value) -> Result<(), ConfigError> {
        if key == "browser.downloads" {
            return self.merge_section("browser.downloads", "dir and max_bytes", value);
        }
        if key == "browser.live" {
            return self.merge_section("browser.live", "addr and ttl_s", value);
        }
        if !KEYS.contains(&key) {
            return Err(unknown_key(key));
        }
        match value {
            Value::Null => self.reset(key),
            Value::Object(map) if key == "browser.dialog_policy" => {
                self.browser.dialog_policy = policy_from_map(key, &map)?;
            }
            Value::Object(map) if key == "browser.credentials" => {
                self.browser.credentials = credentials_from_map(&map)?;
            }
            Value::Object(map) if key == "browser.cdp_headers" => {
                self.browser.cdp_headers = headers_from_map(&map)?;
            }
            Value::Object(map) if key == "browser.selenium_capabilities" => {
                self.browser.selenium_capabilities = map;
            }
            Value::Array(items) if key == "browser.provider_command" => {
                self.browser.provider_command = scalar_list(key, &items, COMMAND_ALLOWED)?;
            }
            Value::Array(items) if key == "browser.chromium_args" => {
                self.browser.chromium_args = scalar_list(key, &items, ARGS_ALLOWED)?;
            }
            Value::Array(items) if is_origin_list(key) => {
                let list = scalar_list(key, &items, ORIGIN_ALLOWED)?;
                self.set_origins(key, list)?;
            }
            other => match scalar_text(&other) {
                Some(text) => self.set(key, &text)?,
                None => return Err(not_a_single_value(key, &other)),
            },
        }
        Ok(())
    }

    /// Sets one key from its text form, as the environment and the flags give
    /// it: `set("browser.dialog_policy", "auto_dismiss")`.
    ///
    /// `browser.chromium_args` takes a YAML/JSON list (`["--a", "--b"]`) or
    /// whitespace-separated flags (`--a --b`).
    ///
    /// # Errors
    /// [`ConfigError::UnknownKey`] for a key not in [`KEYS`];
    /// [`ConfigError::BadValue`] for a value the key cannot take. The config
    /// is unchanged on error.
    pub fn set(&mut self, key_path: &str, value: &str) -> Result<(), ConfigError> {
        let b = &mut self.browser;
        let bad = |allowed: &str| bad_value(key_path, value, allowed);
        match key_path {
            "browser.cdp_url" => b.cdp_url = cdp_url(value).ok_or_else(|| bad(CDP_URL_ALLOWED))?,
            "browser.cdp_headers" => {
                let map = text_mapping(value)
                    .ok_or_else(|| bad_value(key_path, "(not shown)", HEADERS_ALLOWED))?;
                b.cdp_headers = headers_from_map(&map)?;
            }
            "browser.downloads.dir" => b.downloads_dir = downloads_dir(key_path, value)?,
            "browser.live.addr" => {
                b.live_addr = value.trim().parse().map_err(|_| {
                    bad("an IP address and port, e.g. 127.0.0.1:0 (0: any free port)")
                })?;
            }
            "browser.live.ttl_s" => {
                b.live_ttl_s = number_in(value, 1..=LIVE_TTL_S_MAX)
                    .ok_or_else(|| bad("a whole number of seconds from 1 to 86400"))?;
            }
            "browser.downloads.max_bytes" => {
                b.downloads_max_bytes = number_in(value, 1..=DOWNLOAD_MAX_BYTES_MAX)
                    .ok_or_else(|| bad(MAX_BYTES_ALLOWED))?;
            }
            "browser.credentials" => {
                let map = text_mapping(value).ok_or_else(|| bad(CREDENTIALS_ALLOWED))?;
                b.credentials = credentials_from_map(&map)?;
            }
            "browser.provider_command" => {
                b.provider_command = parse_args(value).ok_or_else(|| bad(COMMAND_ALLOWED))?;
            }
            "browser.selenium_capabilities" => {
                b.selenium_capabilities =
                    text_mapping(value).ok_or_else(|| bad(CAPABILITIES_ALLOWED))?;
            }
            "browser.cloud_provider" => {
                b.cloud_provider = value.parse().map_err(|()| bad(CloudProvider::ALLOWED))?;
            }
            "browser.dialog_policy" => {
                b.dialog_policy = value.parse().map_err(|e| policy_error(value, e))?;
            }
            "browser.dialog_timeout_s" => {
                b.dialog_timeout_s = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s <= DIALOG_TIMEOUT_MAX_S)
                    .ok_or_else(|| bad(TIMEOUT_ALLOWED))?;
            }
            "browser.chromium_path" => b.chromium_path = value.to_owned(),
            "browser.chromium_args" => {
                b.chromium_args = parse_args(value).ok_or_else(|| bad(ARGS_ALLOWED))?;
            }
            "browser.target_id" => b.target_id = value.to_owned(),
            "browser.isolation" => {
                b.isolation = match value.trim() {
                    "" => None,
                    v => Some(v.parse().map_err(|()| bad(Isolation::ALLOWED))?),
                };
            }
            "browser.proxy" => b.proxy = value.trim().to_owned(),
            "browser.max_tabs" => {
                b.max_tabs =
                    number_in(value, 1..=MAX_TABS_MAX).ok_or_else(|| bad(MAX_TABS_ALLOWED))?;
            }
            "browser.allowed_origins" | "browser.blocked_origins" => {
                let list = parse_list(value).ok_or_else(|| bad(ORIGIN_ALLOWED))?;
                self.set_origins(key_path, list)?;
            }
            "browser.allow_file_urls" => {
                b.allow_file_urls = flag(value).ok_or_else(|| bad(BOOL_ALLOWED))?;
            }
            _ => return Err(unknown_key(key_path)),
        }
        Ok(())
    }

    /// A nested mapping (`downloads:` with `dir` and `max_bytes`, `live:`
    /// with `addr` and `ttl_s`), each key through [`Config::set`].
    fn merge_section(
        &mut self,
        section: &str,
        keys: &str,
        value: Value,
    ) -> Result<(), ConfigError> {
        let map = match value {
            Value::Null => return Ok(()),
            Value::Object(map) => map,
            other => {
                return Err(bad_value(
                    section,
                    &compact(&other),
                    &format!("a mapping with {keys}"),
                ));
            }
        };
        for (name, value) in map {
            let key = format!("{section}.{name}");
            if !KEYS.contains(&key.as_str()) {
                return Err(unknown_key(&key));
            }
            match value {
                Value::Null => self.reset(&key),
                other => match scalar_text(&other) {
                    Some(text) => self.set(&key, &text)?,
                    None => return Err(bad_value(&key, &compact(&other), "a single value")),
                },
            }
        }
        Ok(())
    }

    /// Sets `allowed_origins` or `blocked_origins` once every entry parses.
    fn set_origins(&mut self, key_path: &str, list: Vec<String>) -> Result<(), ConfigError> {
        if let Some(e) = list.iter().find_map(|e| OriginPattern::parse(e).err()) {
            return Err(ConfigError::BadValue {
                key: key_path.to_owned(),
                value: format!("{:?} ({})", e.entry, e.why),
                allowed: ORIGIN_ALLOWED.to_owned(),
                origin: None,
            });
        }
        let list = list.into_iter().map(|e| e.trim().to_owned()).collect();
        match key_path {
            "browser.allowed_origins" => self.browser.allowed_origins = list,
            _ => self.browser.blocked_origins = list,
        }
        Ok(())
    }

    /// Whether the configured backend speaks CDP. `false` for `camofox` (a
    /// REST-only backend): no dialog or raw-CDP tools, no supervisor fields.
    pub fn has_cdp(&self) -> bool {
        self.browser.cloud_provider.has_cdp()
    }

    fn reset(&mut self, key_path: &str) {
        let d = BrowserConfig::default();
        let b = &mut self.browser;
        match key_path {
            "browser.cdp_url" => b.cdp_url = d.cdp_url,
            "browser.cdp_headers" => b.cdp_headers = d.cdp_headers,
            "browser.cloud_provider" => b.cloud_provider = d.cloud_provider,
            "browser.provider_command" => b.provider_command = d.provider_command,
            "browser.selenium_capabilities" => b.selenium_capabilities = d.selenium_capabilities,
            "browser.dialog_policy" => b.dialog_policy = d.dialog_policy,
            "browser.dialog_timeout_s" => b.dialog_timeout_s = d.dialog_timeout_s,
            "browser.chromium_path" => b.chromium_path = d.chromium_path,
            "browser.chromium_args" => b.chromium_args = d.chromium_args,
            "browser.target_id" => b.target_id = d.target_id,
            "browser.max_tabs" => b.max_tabs = d.max_tabs,
            "browser.isolation" => b.isolation = d.isolation,
            "browser.proxy" => b.proxy = d.proxy,
            "browser.allowed_origins" => b.allowed_origins = d.allowed_origins,
            "browser.blocked_origins" => b.blocked_origins = d.blocked_origins,
            "browser.allow_file_urls" => b.allow_file_urls = d.allow_file_urls,
            "browser.credentials" => b.credentials = d.credentials,
            "browser.downloads.dir" => b.downloads_dir = d.downloads_dir,
            "browser.downloads.max_bytes" => b.downloads_max_bytes = d.downloads_max_bytes,
            "browser.live.addr" => b.live_addr = d.live_addr,
            "browser.live.ttl_s" => b.live_ttl_s = d.live_ttl_s,
            _ => {}
        }
    }
}

/// The largest `browser.downloads.max_bytes`: 1 TiB.
const DOWNLOAD_MAX_BYTES_MAX: u64 = 1 << 40;
const MAX_BYTES_ALLOWED: &str = "a whole number of bytes from 1 to 1099511627776 (1 TiB)";

const CREDENTIALS_ALLOWED: &str = "a map of origin to {username, password_env}, e.g. {\"https://intranet.example\": {username: alice, password_env: INTRANET_PASSWORD}}";

/// `browser.credentials` from a map of origin to `{username,
/// password_env}`, each password read from its environment variable now
/// (a variable that is not set is an error here, not a failed login later).
/// Errors name the origin and the key, never a password.
fn credentials_from_map(map: &serde_json::Map<String, Value>) -> Result<Credentials, ConfigError> {
    const KEY: &str = "browser.credentials";
    let mut list = Vec::new();
    for (origin, entry) in map {
        let Some(normalized) = credentials::origin_of(origin) else {
            // A key with a user name may hold a password: never quoted.
            let shown = if origin.contains('@') {
                "(not shown)"
            } else {
                origin
            };
            return Err(bad_value(
                KEY,
                shown,
                "origins such as https://intranet.example or http://127.0.0.1:8080 (scheme, host, optional port; no path), each mapped to {username, password_env}",
            ));
        };
        let at = format!("{KEY}.{origin}");
        let Value::Object(fields) = entry else {
            return Err(bad_value(&at, &compact(entry), CREDENTIALS_ALLOWED));
        };
        if let Some(other) = fields
            .keys()
            .find(|k| !["username", "password_env"].contains(&k.as_str()))
        {
            let allowed = if other == "password" {
                "username and password_env: the password itself is never written in the config; put it in an environment variable and name that variable in password_env"
            } else {
                "username and password_env"
            };
            return Err(ConfigError::BadValue {
                key: format!("{at}.{other}"),
                value: "(not shown)".into(),
                allowed: allowed.into(),
                origin: None,
            });
        }
        let text = |name: &str| {
            fields
                .get(name)
                .and_then(scalar_text)
                .filter(|t| !t.is_empty())
        };
        let username = text("username")
            .ok_or_else(|| bad_value(&format!("{at}.username"), "", "a non-empty username"))?;
        let password_env = text("password_env").ok_or_else(|| {
            bad_value(
                &format!("{at}.password_env"),
                "",
                "the name of an environment variable that holds the password",
            )
        })?;
        let Ok(password) = std::env::var(&password_env) else {
            return Err(bad_value(
                &format!("{at}.password_env"),
                &password_env,
                "the name of an environment variable that is set (this one is not set, or not UTF-8)",
            ));
        };
        if let Some(same) = list.iter().find(|c: &&Credential| c.origin == normalized) {
            return Err(bad_value(
                KEY,
                origin,
                &format!(
                    "each origin once: this is {} again, given already (a default port is the same origin)",
                    same.origin
                ),
            ));
        }
        list.push(Credential {
            origin: normalized,
            username,
            password: Secret::new(password),
            password_env,
        });
    }
    Ok(Credentials::new(list))
}

/// `browser.cdp_headers` from a map of header name to scalar value. A bad
/// entry is named by its header, never by its value (a secret).
fn headers_from_map(map: &serde_json::Map<String, Value>) -> Result<CdpHeaders, ConfigError> {
    const KEY: &str = "browser.cdp_headers";
    let mut pairs = Vec::new();
    for (name, value) in map {
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c));
        let value = scalar_text(value).filter(|v| !v.contains(['\r', '\n']));
        match value {
            Some(v) if valid_name => pairs.push((name.clone(), v)),
            _ => {
                return Err(ConfigError::BadValue {
                    key: format!("{KEY}.{name}"),
                    value: "(not shown)".into(),
                    allowed: "a header name (letters, digits, -) with a one-line string value"
                        .into(),
                    origin: None,
                });
            }
        }
    }
    Ok(CdpHeaders::new(pairs))
}

/// `CDP_SUPERVISOR_BROWSER__DIALOG_POLICY` → `browser.dialog_policy`.
fn env_var_to_key(name: &str) -> String {
    name[ENV_PREFIX.len()..]
        .split("__")
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join(".")
}

/// `["--a", "--b"]` (YAML or JSON) or `--a --b`; `None` for a malformed list.
fn parse_args(value: &str) -> Option<Vec<String>> {
    let trimmed = value.trim();
    if trimmed.starts_with('[') {
        let list: Value = serde_saphyr::from_str(trimmed).ok()?;
        match list {
            Value::Array(items) => items.iter().map(scalar_text).collect(),
            _ => None,
        }
    } else {
        Some(trimmed.split_whitespace().map(str::to_owned).collect())
    }
}

fn is_origin_list(key: &str) -> bool {
    matches!(key, "browser.allowed_origins" | "browser.blocked_origins")
}

/// An origin list from text: a YAML/JSON list, or entries separated by
/// commas and/or whitespace; `None` for a malformed list.
fn parse_list(value: &str) -> Option<Vec<String>> {
    if value.trim().starts_with('[') {
        return parse_args(value);
    }
    Some(
        value
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

/// The text of a YAML scalar (`300`, `true`, `"x"`); `None` for a list or map.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The top-level mapping of a YAML config document; `None` for an empty
/// (or `null`) document, which changes nothing. A parse error is one line.
fn yaml_mapping(text: &str) -> Result<Option<serde_json::Map<String, Value>>, ConfigError> {
    let yaml_error = |message: String| ConfigError::Yaml {
        path: PathBuf::new(),
        message,
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let doc: Value = serde_saphyr::from_str(text).map_err(|e| {
        yaml_error(
            e.to_string()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        )
    })?;
    match doc {
        Value::Null => Ok(None),
        Value::Object(top) => Ok(Some(top)),
        other => Err(yaml_error(format!(
            "the document must be a mapping with a `browser:` section, not {}",
            one_line(&compact(&other))
        ))),
    }
}

/// `browser.dialog_policy` given as a mapping of dialog type to policy.
fn policy_from_map(
    key: &str,
    map: &serde_json::Map<String, Value>,
) -> Result<DialogPolicies, ConfigError> {
    let mut pairs = Vec::new();
    for (t, v) in map {
        let v = scalar_text(v)
            .ok_or_else(|| bad_value(&format!("{key}.{t}"), &compact(v), DialogPolicy::ALLOWED))?;
        pairs.push((t.clone(), v));
    }
    DialogPolicies::from_pairs(pairs.iter().map(|(t, v)| (t.as_str(), v.as_str())))
        .map_err(|e| policy_error(&compact(&Value::Object(map.clone())), e))
}

/// A YAML list of `key` as text, each item a scalar (`allowed` says what
/// the key takes when one is not).
fn scalar_list(key: &str, items: &[Value], allowed: &str) -> Result<Vec<String>, ConfigError> {
    items
        .iter()
        .map(|item| scalar_text(item).ok_or_else(|| bad_value(key, &compact(item), allowed)))
        .collect()
}

/// `browser.cdp_url`: empty (none), or a URL the CDP endpoint can have
/// (`ws`, `wss`, `http`, `https`).
fn cdp_url(value: &str) -> Option<String> {
    let ok = value.is_empty()
        || url::Url::parse(value)
            .is_ok_and(|u| matches!(u.scheme(), "ws" | "wss" | "http" | "https"));
    ok.then(|| value.to_owned())
}

/// A YAML/JSON mapping given as text (the environment's form of a mapping
/// key); `null` is an empty one. `None` for anything else.
fn text_mapping(value: &str) -> Option<serde_json::Map<String, Value>> {
    match serde_saphyr::from_str::<Value>(value.trim()) {
        Ok(Value::Object(map)) => Some(map),
        Ok(Value::Null) => Some(serde_json::Map::new()),
        _ => None,
    }
}

/// `browser.downloads.dir`: a directory (created when missing, at start), not
/// an existing file; empty for a temporary directory per task.
fn downloads_dir(key_path: &str, value: &str) -> Result<String, ConfigError> {
    let dir = value.trim();
    if std::path::Path::new(dir).is_file() {
        return Err(bad_value(
            key_path,
            dir,
            "a directory (created when missing), not a file; empty: a temporary directory per task",
        ));
    }
    Ok(dir.to_owned())
}

/// A whole number within `range`, surrounding whitespace allowed.
fn number_in<T>(value: &str, range: std::ops::RangeInclusive<T>) -> Option<T>
where
    T: std::str::FromStr + PartialOrd,
{
    value.trim().parse::<T>().ok().filter(|n| range.contains(n))
}

/// A boolean as the environment gives it: `true`/`1`, `false`/`0`/empty.
fn flag(value: &str) -> Option<bool> {
    match value.trim() {
        "true" | "1" => Some(true),
        "false" | "0" | "" => Some(false),
        _ => None,
    }
}

/// The error for a mapping or list given to `key`, which takes neither
/// (or not in that form): what it takes instead. Header values are
/// secrets: never quoted back.
fn not_a_single_value(key: &str, value: &Value) -> ConfigError {
    let allowed = match key {
        "browser.chromium_args" => ARGS_ALLOWED,
        "browser.cdp_headers" => HEADERS_ALLOWED,
        "browser.credentials" => CREDENTIALS_ALLOWED,
        "browser.provider_command" => COMMAND_ALLOWED,
        "browser.selenium_capabilities" => CAPABILITIES_ALLOWED,
        k if is_origin_list(k) => ORIGIN_ALLOWED,
        _ => "a single value",
    };
    let shown = if key == "browser.cdp_headers" {
        "(not shown)".to_owned()
    } else {
        compact(value)
    };
    bad_value(key, &shown, allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn yaml(text: &str) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        c.merge_yaml(text).map(|()| c)
    }

    fn write_file(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    #[test]
    fn defaults_match_design() {
        let c = Config::load(None, env(&[])).unwrap();
        let b = &c.browser;
        assert_eq!(b.cdp_url, "");
        assert_eq!(b.cloud_provider, CloudProvider::Local);
        assert_eq!(b.dialog_policy, DialogPolicy::MustRespond.into());
        assert_eq!(b.dialog_timeout_s, 300.0);
        assert_eq!(b.chromium_path, "");
        assert!(b.chromium_args.is_empty());
        assert_eq!(b.target_id, "");
        assert!(c.has_cdp());
    }

    #[test]
    fn full_yaml_file_is_read() {
        let c = yaml(
            "browser:\n  cdp_url: ws://127.0.0.1:9222/devtools/browser/x\n  cloud_provider: browser-use\n  dialog_policy: auto_accept\n  dialog_timeout_s: 2.5\n  chromium_path: /opt/chrome\n  chromium_args: [\"--proxy-server=http://p:1\", --lang=fr]\n  target_id: ABC\n",
        )
        .unwrap();
        let b = &c.browser;
        assert_eq!(b.cdp_url, "ws://127.0.0.1:9222/devtools/browser/x");
        assert_eq!(b.cloud_provider, CloudProvider::BrowserUse);
        assert_eq!(b.dialog_policy, DialogPolicy::AutoAccept.into());
        assert_eq!(b.dialog_timeout_s, 2.5);
        assert_eq!(b.chromium_path, "/opt/chrome");
        assert_eq!(b.chromium_args, ["--proxy-server=http://p:1", "--lang=fr"]);
        assert_eq!(b.target_id, "ABC");
    }

    #[test]
    fn integer_timeout_and_empty_documents_are_fine() {
        assert_eq!(
            yaml("browser:\n  dialog_timeout_s: 7\n")
                .unwrap()
                .browser
                .dialog_timeout_s,
            7.0
        );
        assert_eq!(yaml("").unwrap(), Config::default());
        assert_eq!(yaml("# only a comment\n").unwrap(), Config::default());
        assert_eq!(yaml("browser:\n").unwrap(), Config::default());
    }

    #[test]
    fn null_value_resets_to_default() {
        let mut c = Config::default();
        c.set("browser.dialog_policy", "auto_accept").unwrap();
        c.merge_yaml("browser:\n  dialog_policy: ~\n").unwrap();
        assert_eq!(c.browser.dialog_policy, DialogPolicy::MustRespond.into());
    }

    #[test]
    fn unknown_yaml_key_names_the_path() {
        let err = yaml("browser:\n  dialog_polcy: auto_dismiss\n").unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, ConfigError::UnknownKey { ref key, .. } if key == "browser.dialog_polcy")
        );
        assert!(msg.contains("`browser.dialog_polcy`"), "{msg}");
        assert!(
            msg.contains("browser.dialog_policy"),
            "lists known keys: {msg}"
        );
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn unknown_top_level_section_is_an_error() {
        let msg = yaml("browsr:\n  cdp_url: \"\"\n").unwrap_err().to_string();
        assert!(msg.starts_with("unknown config key `browsr`"), "{msg}");
    }

    #[test]
    fn bad_policy_lists_allowed_values() {
        let msg = yaml("browser:\n  dialog_policy: sometimes\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "browser.dialog_policy: \"sometimes\" is not allowed; allowed: must_respond, auto_dismiss, auto_accept"
        );
    }

    #[test]
    fn a_policy_per_type_comes_from_yaml_a_flag_or_the_environment_and_bad_ones_name_the_key() {
        let c = yaml("browser:\n  dialog_policy: {alert: auto_accept, confirm: must_respond}\n")
            .unwrap();
        let p = c.browser.dialog_policy;
        assert_eq!(p.for_type("alert"), DialogPolicy::AutoAccept);
        assert_eq!(p.for_type("confirm"), DialogPolicy::MustRespond);
        assert_eq!(p.for_type("prompt"), DialogPolicy::MustRespond, "left out");
        let mut c = Config::default();
        c.set("browser.dialog_policy", "prompt=auto_dismiss")
            .unwrap();
        assert_eq!(
            c.browser.dialog_policy.for_type("prompt"),
            DialogPolicy::AutoDismiss
        );
        c.set("browser.dialog_policy", "{beforeunload: auto_accept}")
            .unwrap();
        assert_eq!(
            c.browser.dialog_policy.for_type("beforeunload"),
            DialogPolicy::AutoAccept
        );
        assert_eq!(
            c.browser.dialog_policy.for_type("prompt"),
            DialogPolicy::MustRespond
        );
        let msg = yaml("browser:\n  dialog_policy: {popup: auto_accept}\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "browser.dialog_policy: type \"popup\" is not allowed; allowed: types alert, confirm, prompt, beforeunload, file_chooser, http_auth"
        );
        let msg = yaml("browser:\n  dialog_policy: {alert: sometimes}\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "browser.dialog_policy.alert: \"sometimes\" is not allowed; allowed: must_respond, auto_dismiss, auto_accept"
        );
        let msg = Config::default()
            .set(
                "browser.dialog_policy",
                "alert=auto_accept,popup=auto_accept",
            )
            .unwrap_err()
            .to_string();
        assert!(msg.contains("type \"popup\""), "{msg}");
    }

    #[test]
    fn selenium_capabilities_come_from_yaml_or_one_json_variable() {
        let c = yaml(
            "browser:\n  cloud_provider: selenium\n  selenium_capabilities:\n    goog:chromeOptions: {binary: /usr/bin/chromium, args: [--headless=new]}\n",
        )
        .unwrap();
        assert_eq!(c.browser.cloud_provider, CloudProvider::Selenium);
        assert_eq!(
            Value::Object(c.browser.selenium_capabilities.clone()),
            serde_json::json!({"goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": ["--headless=new"]}})
        );
        let mut c = Config::default();
        c.set(
            "browser.selenium_capabilities",
            r#"{"browserName": "chrome", "se:recordVideo": true}"#,
        )
        .unwrap();
        assert_eq!(c.browser.selenium_capabilities["se:recordVideo"], true);
        let e = c
            .set("browser.selenium_capabilities", "[chrome]")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("browser.selenium_capabilities: ") && e.contains("mapping"),
            "{e}"
        );
    }

    #[test]
    fn credentials_read_the_password_from_its_variable_and_never_show_it() {
        // SAFETY: a variable only this test reads, set before any thread reads it.
        unsafe { std::env::set_var("CDP_SUPERVISOR_TEST_STAFF_PW", "s3cret-pw") };
        let c = yaml(
            "browser:\n  credentials:\n    \"HTTP://Intranet.test:8080/\": {username: staff, password_env: CDP_SUPERVISOR_TEST_STAFF_PW}\n",
        )
        .unwrap();
        let found = c
            .browser
            .credentials
            .for_origin("http://intranet.test:8080")
            .expect("normalized origin");
        assert_eq!(found.username, "staff");
        assert_eq!(found.password.expose(), "s3cret-pw");
        assert!(!format!("{c:?}").contains("s3cret-pw"), "Debug hides it");
        let mut env = Config::default();
        env.set(
            "browser.credentials",
            "{\"http://a.test\": {username: u, password_env: CDP_SUPERVISOR_TEST_STAFF_PW}}",
        )
        .unwrap();
        assert!(
            env.browser
                .credentials
                .for_origin("http://a.test")
                .is_some()
        );
        for (text, names) in [
            (
                "browser:\n  credentials:\n    \"http://a.test\": {username: u, password: s3cret-pw}\n",
                "browser.credentials.http://a.test.password",
            ),
            (
                "browser:\n  credentials:\n    \"http://a.test\": {username: u, password_env: CDP_SUPERVISOR_TEST_UNSET_VAR}\n",
                "CDP_SUPERVISOR_TEST_UNSET_VAR",
            ),
            (
                "browser:\n  credentials:\n    \"http://a.test/login\": {username: u, password_env: X}\n",
                "origins such as",
            ),
            (
                "browser:\n  credentials:\n    \"http://a.test\": {password_env: CDP_SUPERVISOR_TEST_STAFF_PW}\n",
                "username",
            ),
            (
                "browser:\n  credentials:\n    \"http://bob:s3cret-pw@a.test\": {username: u, password_env: X}\n",
                "origins such as",
            ),
        ] {
            let e = yaml(text).unwrap_err().to_string();
            assert!(e.contains(names) && !e.contains("s3cret-pw"), "{e}");
        }
        let twice = "browser:\n  credentials:\n    \"http://a.test:80\": {username: u, password_env: CDP_SUPERVISOR_TEST_STAFF_PW}\n    \"http://a.test\": {username: v, password_env: CDP_SUPERVISOR_TEST_STAFF_PW}\n";
        let e = yaml(twice).unwrap_err().to_string();
        assert!(e.contains("each origin once"), "{e}");
        let file = write_file("not a directory");
        let e = Config::default()
            .set("browser.downloads.dir", &file.path().to_string_lossy())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("browser.downloads.dir") && e.contains("not a file"),
            "{e}"
        );
        for bad in ["0", "-1", "abc", "1.5e3"] {
            let e = Config::default()
                .set("browser.downloads.max_bytes", bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("browser.downloads.max_bytes"), "{e}");
        }
    }

    #[test]
    fn cdp_headers_and_provider_command_come_from_yaml_and_env_and_are_never_shown() {
        let c = yaml(
            "browser:\n  cdp_headers: {Authorization: \"Bearer s3cret-tok\", X-Grid: one}\n  cloud_provider: exec\n  provider_command: [/usr/bin/my-plugin, --flag]\n",
        )
        .unwrap();
        let b = &c.browser;
        assert_eq!(b.cloud_provider, CloudProvider::Exec);
        assert_eq!(b.provider_command, ["/usr/bin/my-plugin", "--flag"]);
        let pairs: Vec<(&str, &str)> = b.cdp_headers.iter().collect();
        assert_eq!(
            pairs,
            [("Authorization", "Bearer s3cret-tok"), ("X-Grid", "one")]
        );
        assert!(
            !format!("{c:?}").contains("s3cret"),
            "Debug shows a header value"
        );
        let c = Config::load(
            None,
            env(&[(
                "CDP_SUPERVISOR_BROWSER__CDP_HEADERS",
                "{\"Authorization\": \"Bearer env-tok\"}",
            )]),
        )
        .unwrap();
        assert!(c.browser.cdp_headers.has("authorization"));
        let e = yaml("browser:\n  cdp_headers: {\"Bad Name\": s3cret-tok}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("browser.cdp_headers") && !e.contains("s3cret"),
            "{e}"
        );
        let e = Config::default()
            .set("browser.cdp_headers", "Bearer s3cret-tok")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("browser.cdp_headers") && !e.contains("s3cret"),
            "{e}"
        );
    }

    #[test]
    fn bad_provider_lists_allowed_values() {
        let msg = Config::default()
            .set("browser.cloud_provider", "aws")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "browser.cloud_provider: \"aws\" is not allowed; allowed: local, browserbase, browser-use, firecrawl, selenium, camofox, exec"
        );
    }

    #[test]
    fn timeout_must_be_positive_finite_number() {
        for bad in ["0", "-1", "abc", "NaN", "inf", "", "1e300", "31536001"] {
            let err = Config::default()
                .set("browser.dialog_timeout_s", bad)
                .unwrap_err();
            let msg = err.to_string();
            assert!(msg.starts_with("browser.dialog_timeout_s: "), "{msg}");
            assert!(msg.contains("> 0"), "{msg}");
        }
        let msg = yaml("browser:\n  dialog_timeout_s: [1]\n")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("browser.dialog_timeout_s: "), "{msg}");
    }

    #[test]
    fn cdp_url_must_be_ws_or_http() {
        let mut c = Config::default();
        c.set("browser.cdp_url", "http://127.0.0.1:9222").unwrap();
        c.set("browser.cdp_url", "wss://cloud.example/session?k=1")
            .unwrap();
        c.set("browser.cdp_url", "").unwrap();
        let msg = c
            .set("browser.cdp_url", "localhost:9222")
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("browser.cdp_url: \"localhost:9222\" is not allowed"),
            "{msg}"
        );
    }

    #[test]
    fn env_overrides_file() {
        let file = write_file("browser:\n  dialog_policy: auto_accept\n  target_id: T1\n");
        let c = Config::load(
            Some(file.path()),
            env(&[
                ("CDP_SUPERVISOR_BROWSER__DIALOG_POLICY", "auto_dismiss"),
                ("PATH", "/usr/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(c.browser.dialog_policy, DialogPolicy::AutoDismiss.into());
        assert_eq!(c.browser.target_id, "T1");
    }

    /// Issue 44: `CDP_SUPERVISOR_LOG=debug` is the Python module's log
    /// switch; the binary refused it as an unknown config key and exited.
    #[test]
    fn regression_44_the_log_switch_is_not_a_config_key() {
        let c = Config::load(None, env(&[(LOG_ENV, "debug")])).unwrap();
        assert_eq!(c, Config::default());
        // A key that is not one is still refused.
        let e = Config::load(None, env(&[("CDP_SUPERVISOR_LOGS", "debug")])).unwrap_err();
        assert!(e.to_string().contains("unknown config key `logs`"), "{e}");
    }

    #[test]
    fn config_path_from_env_when_no_flag() {
        let file = write_file("browser:\n  cloud_provider: camofox\n");
        let c = Config::load(
            None,
            env(&[("CDP_SUPERVISOR_CONFIG", file.path().to_str().unwrap())]),
        )
        .unwrap();
        assert_eq!(c.browser.cloud_provider, CloudProvider::Camofox);

        // An explicit path wins over the variable.
        let other = write_file("browser:\n  cloud_provider: firecrawl\n");
        let c = Config::load(
            Some(other.path()),
            env(&[("CDP_SUPERVISOR_CONFIG", file.path().to_str().unwrap())]),
        )
        .unwrap();
        assert_eq!(c.browser.cloud_provider, CloudProvider::Firecrawl);
    }

    #[test]
    fn unknown_env_key_names_path_and_variable() {
        let msg = Config::load(None, env(&[("CDP_SUPERVISOR_BROWSER__FOO", "1")]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("unknown config key `browser.foo` (from CDP_SUPERVISOR_BROWSER__FOO)"),
            "{msg}"
        );
    }

    #[test]
    fn bad_env_value_names_variable() {
        let msg = Config::load(
            None,
            env(&[("CDP_SUPERVISOR_BROWSER__DIALOG_POLICY", "sometimes")]),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            msg,
            "browser.dialog_policy: \"sometimes\" is not allowed (from CDP_SUPERVISOR_BROWSER__DIALOG_POLICY); allowed: must_respond, auto_dismiss, auto_accept"
        );
    }

    #[test]
    fn bad_file_value_names_file() {
        let file = write_file("browser:\n  dialog_timeout_s: soon\n");
        let msg = Config::load(Some(file.path()), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(msg.contains(&file.path().display().to_string()), "{msg}");
        assert!(
            msg.starts_with("browser.dialog_timeout_s: \"soon\""),
            "{msg}"
        );
    }

    #[test]
    fn chromium_args_from_env_list_or_words() {
        let mut c = Config::default();
        c.set("browser.chromium_args", r#"["--a=1 2", "--b"]"#)
            .unwrap();
        assert_eq!(c.browser.chromium_args, ["--a=1 2", "--b"]);
        c.set("browser.chromium_args", "[--c, --d]").unwrap();
        assert_eq!(c.browser.chromium_args, ["--c", "--d"]);
        c.set("browser.chromium_args", "  --e   --f ").unwrap();
        assert_eq!(c.browser.chromium_args, ["--e", "--f"]);
        c.set("browser.chromium_args", "").unwrap();
        assert!(c.browser.chromium_args.is_empty());
        let msg = c
            .set("browser.chromium_args", "[--x, [nested]]")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("browser.chromium_args: "), "{msg}");
    }

    #[test]
    fn chromium_args_in_yaml_must_be_a_list_of_scalars() {
        let msg = yaml("browser:\n  chromium_args: {a: 1}\n")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("browser.chromium_args: "), "{msg}");
        assert!(msg.contains("list of strings"), "{msg}");
    }

    #[test]
    fn missing_file_and_bad_yaml_are_one_line_errors() {
        let msg = Config::load(Some(Path::new("/nonexistent/cdp.yaml")), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("cannot read config file /nonexistent/cdp.yaml"),
            "{msg}"
        );

        let file = write_file("browser: [unclosed\n");
        let msg = Config::load(Some(file.path()), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("config file "), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");

        let msg = yaml("- a\n- b\n").unwrap_err().to_string();
        assert!(msg.contains("must be a mapping"), "{msg}");
    }

    #[test]
    fn regression_fuzz_config_errors_stay_on_one_line_whatever_the_input() {
        // fuzz/config found it: a document that is a scalar with CRs in it
        // (bytes f7 0d 0d ff) printed them raw in the error.
        let text = String::from_utf8_lossy(b"\xf7\r\r\xff").into_owned();
        let msg = yaml(&text).unwrap_err().to_string();
        assert!(!msg.contains(['\r', '\n']), "{msg:?}");
        assert!(msg.contains("must be a mapping"), "{msg}");
        let msg = yaml("browser:\n  \"a\\nb\": 1\n").unwrap_err().to_string();
        assert!(!msg.contains('\n'), "{msg:?}");
        assert!(
            msg.starts_with("unknown config key `browser.a\\nb`"),
            "{msg}"
        );
        let msg = yaml("\"x\\ry\": 1\n").unwrap_err().to_string();
        assert!(!msg.contains('\r'), "{msg:?}");
        let msg = yaml("browser:\n  dialog_policy: {\"a\\nb\": [1]}\n")
            .unwrap_err()
            .to_string();
        assert!(!msg.contains('\n'), "{msg:?}");
    }

    #[test]
    fn set_is_atomic_on_error() {
        let mut c = Config::default();
        c.set("browser.dialog_timeout_s", "9").unwrap();
        let _ = c.set("browser.dialog_timeout_s", "-3");
        assert_eq!(c.browser.dialog_timeout_s, 9.0);
    }

    #[test]
    fn camofox_has_no_cdp() {
        let mut c = Config::default();
        for (name, cdp) in [
            ("local", true),
            ("browserbase", true),
            ("browser-use", true),
            ("firecrawl", true),
            ("camofox", false),
        ] {
            c.set("browser.cloud_provider", name).unwrap();
            assert_eq!(c.has_cdp(), cdp, "{name}");
            assert_eq!(c.browser.cloud_provider.as_str(), name);
        }
    }

    #[test]
    fn navigation_keys_come_from_yaml_env_and_flags() {
        let c = yaml(
            "browser:\n  allowed_origins: [\"https://*.example.com\", http://a.test:8080]\n  blocked_origins: [http://b.test]\n  allow_file_urls: true\n",
        )
        .unwrap();
        assert_eq!(
            c.browser.allowed_origins,
            ["https://*.example.com", "http://a.test:8080"]
        );
        assert_eq!(c.browser.blocked_origins, ["http://b.test"]);
        assert!(c.browser.allow_file_urls);
        let p = c.browser.navigation_policy().unwrap();
        assert_eq!(p.document_pattern(), Some("*"));
        assert!(p.check("file:///tmp/x").is_ok());

        let c = Config::load(
            None,
            env(&[
                (
                    "CDP_SUPERVISOR_BROWSER__BLOCKED_ORIGINS",
                    "http://b.test, http://169.254.169.254",
                ),
                ("CDP_SUPERVISOR_BROWSER__ALLOWED_ORIGINS", "[http://a.test]"),
                ("CDP_SUPERVISOR_BROWSER__ALLOW_FILE_URLS", "false"),
            ]),
        )
        .unwrap();
        assert_eq!(
            c.browser.blocked_origins,
            ["http://b.test", "http://169.254.169.254"]
        );
        assert_eq!(c.browser.allowed_origins, ["http://a.test"]);
        assert!(!c.browser.allow_file_urls);

        let d = Config::default();
        assert!(d.browser.allowed_origins.is_empty() && d.browser.blocked_origins.is_empty());
        assert!(!d.browser.allow_file_urls);
        assert_eq!(
            d.browser.navigation_policy().unwrap().document_pattern(),
            None
        );
    }

    #[test]
    fn bad_navigation_values_name_the_key_the_entry_and_what_is_allowed() {
        let msg = Config::load(
            None,
            env(&[(
                "CDP_SUPERVISOR_BROWSER__BLOCKED_ORIGINS",
                "http://b.test/admin",
            )]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.starts_with(
                "browser.blocked_origins: \"http://b.test/admin\" (an origin has no path"
            ),
            "{msg}"
        );
        assert!(
            msg.contains("CDP_SUPERVISOR_BROWSER__BLOCKED_ORIGINS"),
            "{msg}"
        );
        assert!(msg.contains("scheme://host[:port]"), "{msg}");
        let msg = yaml("browser:\n  allowed_origins: [{a: 1}]\n")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("browser.allowed_origins: "), "{msg}");
        let msg = yaml("browser:\n  allowed_origins: {a: 1}\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("list of origins"), "{msg}");
        let msg = Config::default()
            .set("browser.allow_file_urls", "sometimes")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "browser.allow_file_urls: \"sometimes\" is not allowed; allowed: true or false"
        );
        let mut c = Config::default();
        c.set("browser.blocked_origins", "http://b.test").unwrap();
        let _ = c.set("browser.blocked_origins", "http://ok.test ftp://x/y");
        assert_eq!(c.browser.blocked_origins, ["http://b.test"], "atomic");
        c.merge_yaml("browser:\n  blocked_origins: ~\n").unwrap();
        assert!(c.browser.blocked_origins.is_empty());
    }

    #[test]
    fn launch_options_follow_config() {
        let mut c = Config::default();
        assert_eq!(c.browser.launch_options().chromium_path, None);
        c.set("browser.chromium_path", "/x/chrome").unwrap();
        c.set("browser.chromium_args", "--a").unwrap();
        let o = c.browser.launch_options();
        assert_eq!(o.chromium_path.as_deref(), Some(Path::new("/x/chrome")));
        assert_eq!(o.extra_args, ["--a"]);
    }

    /// Issue 41: `browser.isolation` and `browser.proxy`, from YAML, the
    /// environment and flags; the surface's default when unset.
    #[test]
    fn isolation_is_browser_or_context_and_defaults_by_surface() {
        let mut c = Config::default();
        assert_eq!(c.browser.isolation, None);
        let local = Isolation::default_for(None, true, &c.browser);
        assert_eq!(local, Isolation::Context, "mcp --http on a local browser");
        assert_eq!(
            Isolation::default_for(None, false, &c.browser),
            Isolation::Browser
        );
        c.set("browser.isolation", "context").unwrap();
        assert_eq!(c.browser.isolation, Some(Isolation::Context));
        c.set("browser.isolation", "browser").unwrap();
        assert_eq!(
            Isolation::default_for(c.browser.isolation, true, &c.browser),
            Isolation::Browser
        );
        let e = c.set("browser.isolation", "tab").unwrap_err().to_string();
        assert!(
            e.contains("browser.isolation") && e.contains("context"),
            "{e}"
        );
        c.set("browser.cdp_url", "http://127.0.0.1:9222").unwrap();
        assert_eq!(
            Isolation::default_for(None, true, &c.browser),
            Isolation::Browser,
            "an endpoint's own browser"
        );
        let env = [
            (
                "CDP_SUPERVISOR_BROWSER__ISOLATION".to_owned(),
                "context".to_owned(),
            ),
            (
                "CDP_SUPERVISOR_BROWSER__PROXY".to_owned(),
                "http://p:3128".to_owned(),
            ),
        ];
        let c = Config::load(None, env).unwrap();
        assert_eq!(c.browser.isolation, Some(Isolation::Context));
        assert_eq!(c.browser.proxy, "http://p:3128");
    }
}
