//! Endpoint resolution: from what a user types to the browser's WebSocket URL.
//!
//! Accepted forms:
//! - `http(s)://host:port` or `http(s)://host:port/json/version` → `GET /json/version`
//!   and use its `webSocketDebuggerUrl`;
//! - `ws(s)://host:port/<path>` (e.g. `/devtools/browser/<id>`) or a
//!   `ws(s)://` URL with a query (a grid's token: browserless `?token=`,
//!   Steel `?apiKey=`, Browserbase `?signingKey=`) → used as is;
//! - a bare `ws(s)://host:port` → resolved through `http(s)://host:port/json/version`.
//!
//! A page-level endpoint (`…/devtools/page/<id>`, Selenoid's
//! `…/devtools/<sid>/page`, [`is_page_level_path`]) is used as is too: the
//! supervisor then watches that one tab ([`PAGE_LEVEL_NOTE`]).
//!
//! CDP URLs of cloud providers carry credentials (`user:pass@`, `?apiKey=…`,
//! `?token=…`), and grids want headers ([`CdpHeaders`], sent on discovery and
//! on the WebSocket handshake). Every error and log line here goes through
//! [`redact_url`], and header values are never shown, so none of them ever
//! shows a secret.

use std::time::Duration;

/// Deadline of the whole `GET /json/version` exchange (connect, request, body).
pub const VERSION_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The forms [`resolve_ws_url`] accepts, quoted in its errors.
const ALLOWED_FORMS: &str = "use http://host:port, http://host:port/json/version, ws://host:port or ws://host:port/devtools/browser/<id> (or their https/wss forms)";

/// Extra HTTP headers for a CDP endpoint (`browser.cdp_headers`: a grid's
/// `Authorization`…), sent on `/json/version` discovery and on the
/// WebSocket handshake. Their values are secrets: `Debug` shows names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CdpHeaders(Vec<(String, String)>);

impl CdpHeaders {
    /// Headers from `(name, value)` pairs, in order.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> CdpHeaders {
        CdpHeaders(pairs.into_iter().collect())
    }

    /// The `(name, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a header of this name (any case) is set.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// `text` with every header value replaced by `***` (for messages that
    /// might echo one, e.g. a server's error body).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (_, v) in &self.0 {
            // A very short value would blank out ordinary words; such a value is no secret.
            if v.len() >= 4 {
                out = out.replace(v.as_str(), "***");
            }
        }
        out
    }
}

impl std::fmt::Debug for CdpHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(n, _)| (n, "***")))
            .finish()
    }
}

/// Why an endpoint could not be resolved. Every `url` field is already redacted ([`redact_url`]).
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The text is not a URL, or has no host.
    #[error("bad CDP URL {url:?}: {reason}; {ALLOWED_FORMS}")]
    BadUrl {
        /// The text given (trimmed), redacted.
        url: String,
        /// The URL parser's complaint, or "it has no host".
        reason: String,
    },
    /// The scheme is not one of `http`, `https`, `ws`, `wss`.
    #[error("bad CDP URL {url:?}: scheme {scheme:?} is not supported; {ALLOWED_FORMS}")]
    UnsupportedScheme {
        /// The URL given, redacted.
        url: String,
        /// The scheme found, e.g. `ftp`.
        scheme: String,
    },
    /// An `http(s)` URL with a path other than `/` or `/json/version`.
    #[error(
        "bad CDP URL {url:?}: an http(s) URL must have no path or the path /json/version; {ALLOWED_FORMS}"
    )]
    UnsupportedPath {
        /// The URL given, redacted.
        url: String,
    },
    /// Nothing answered at the address (connection refused, DNS failure…).
    #[error("cannot reach the CDP endpoint {url}: {reason}")]
    Unreachable {
        /// The `/json/version` URL asked, redacted.
        url: String,
        /// The HTTP client's cause chain (never the URL itself).
        reason: String,
    },
    /// The endpoint did not answer within [`VERSION_REQUEST_TIMEOUT`].
    #[error("the CDP endpoint {url} did not answer within {}s", after.as_secs())]
    Timeout {
        /// The `/json/version` URL asked, redacted.
        url: String,
        /// How long we waited (always [`VERSION_REQUEST_TIMEOUT`]).
        after: Duration,
    },
    /// `/json/version` answered with a non-success HTTP status.
    #[error("the CDP endpoint {url} answered HTTP {status}{}", auth_hint(*status))]
    HttpStatus {
        /// The `/json/version` URL asked, redacted.
        url: String,
        /// The HTTP status code, e.g. `404`.
        status: u16,
    },
    /// The body is not JSON, or has no string `webSocketDebuggerUrl`.
    #[error("the CDP endpoint {url} gave no webSocketDebuggerUrl: {reason}")]
    NoWebSocketUrl {
        /// The `/json/version` URL asked, redacted.
        url: String,
        /// What was wrong with the body: not JSON, no field, or not a non-empty string.
        reason: String,
    },
}

/// For a 401/403: what the endpoint most likely wants.
pub(crate) fn auth_hint(status: u16) -> &'static str {
    if matches!(status, 401 | 403) {
        " (it wants credentials: set browser.cdp_headers, e.g. {Authorization: \"Bearer …\"}, or put the grid's token in the URL, e.g. ?token=…)"
    } else {
        ""
    }
}

/// What a page-level endpoint cannot do, for logs and tool results.
pub const PAGE_LEVEL_NOTE: &str = "this is a page-level CDP endpoint (one tab's socket): the supervisor watches that tab and its frames; whether it also sees popups and new tabs depends on the endpoint letting it discover targets (Chromium's own does; many grid proxies do not). For every tab, give the browser-level URL (http://host:port, …/devtools/browser/<id>, Selenoid's …/devtools/<session>/browser)";

/// Whether `path` is a page-level DevTools path: `/devtools/page/<id>`, or
/// Selenoid's (and Moon's) `/devtools/<session>/page[/<id>]`.
pub fn is_page_level_path(path: &str) -> bool {
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        ["", "devtools", "page", id] => !id.is_empty(),
        ["", "devtools", sid, "page", ..] => !sid.is_empty() && *sid != "browser",
        _ => false,
    }
}

/// Query parameter names (lower-cased, matched as substrings) whose values are secrets.
const SECRET_PARAM_PARTS: &[&str] = &[
    "token",
    "key",
    "secret",
    "signature",
    "password",
    "passwd",
    "auth",
    "credential",
    "session",
];
/// Query parameter names (lower-cased, matched exactly) whose values are secrets.
const SECRET_PARAM_NAMES: &[&str] = &["sig", "pwd", "pass", "code", "jwt"];

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAM_PARTS.iter().any(|part| name.contains(part))
        || SECRET_PARAM_NAMES.contains(&name.as_str())
}

/// Returns `url` with credentials replaced by `***`: the userinfo
/// (`ws://user:pass@host` → `ws://***@host`) and the values of query
/// parameters that look secret (`token`, `apiKey`, `key`, `secret`,
/// `signature`, `password`, `auth`…). Works on any text, URL or not; never panics.
///
/// ```
/// use cdp_supervisor::cdp::endpoint::redact_url;
/// assert_eq!(redact_url("wss://u:p@cloud.example/cdp?apiKey=abc&x=1"), "wss://***@cloud.example/cdp?apiKey=***&x=1");
/// ```
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    // Userinfo ends at the last `@`: a password may hold `/`, `?` or `#`
    // unencoded (a URL that then does not parse is still shown in an
    // error), so everything before that `@` goes, even if it looked like
    // a path.
    let (hidden, rest) = match rest.rfind('@') {
        Some(at) => (true, &rest[at + 1..]),
        None => (false, rest),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = if hidden {
        format!("***@{authority}")
    } else {
        authority.to_owned()
    };
    let (before_fragment, fragment) = match tail.find('#') {
        Some(i) => tail.split_at(i),
        None => (tail, ""),
    };
    let tail = match before_fragment.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if is_secret_param(name) => format!("{name}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => before_fragment.to_owned(),
    };
    // A fragment can carry a token too (OAuth implicit flow); drop its content.
    let fragment = if fragment.len() > 1 { "#***" } else { fragment };
    format!("{scheme}{authority}{tail}{fragment}")
}

/// Resolves what a user gave as a CDP endpoint to the browser's WebSocket URL.
///
/// - `http(s)://host:port[/json/version]` → `webSocketDebuggerUrl` from `GET /json/version`;
/// - `ws(s)://host:port/<path>` → returned unchanged (no request);
/// - `ws(s)://host:port` → resolved through `http(s)://host:port/json/version`.
///
/// The request has a [`VERSION_REQUEST_TIMEOUT`] deadline and bypasses proxies
/// for loopback hosts.
///
/// # Errors
/// One [`EndpointError`] variant per cause (bad URL, scheme, path,
/// unreachable, timeout, HTTP status, missing `webSocketDebuggerUrl`); every
/// URL in them is redacted.
pub async fn resolve_ws_url(url: &str) -> Result<String, EndpointError> {
    resolve_ws_url_with(url, &CdpHeaders::default()).await
}

/// [`resolve_ws_url`] sending `headers` on the `/json/version` request.
///
/// # Errors
/// As [`resolve_ws_url`].
pub async fn resolve_ws_url_with(url: &str, headers: &CdpHeaders) -> Result<String, EndpointError> {
    let trimmed = url.trim();
    let redacted = redact_url(trimmed);
    let parsed = url::Url::parse(trimmed).map_err(|e| EndpointError::BadUrl {
        url: redacted.clone(),
        reason: e.to_string(),
    })?;
    let scheme = parsed.scheme().to_owned();
    if !matches!(scheme.as_str(), "http" | "https" | "ws" | "wss") {
        return Err(EndpointError::UnsupportedScheme {
            url: redacted,
            scheme,
        });
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(EndpointError::BadUrl {
            url: redacted,
            reason: "it has no host".into(),
        });
    }
    let bare = matches!(parsed.path(), "" | "/");
    let mut version_url = parsed.clone();
    match scheme.as_str() {
        // A CDP path, or a grid's token in the query: the endpoint itself.
        "ws" | "wss" if !bare || parsed.query().is_some() => return Ok(trimmed.to_owned()),
        "ws" | "wss" => {
            let http_scheme = if scheme == "wss" { "https" } else { "http" };
            // `Url::set_scheme` refuses ws → http; rebuild from text instead.
            let text = format!("{http_scheme}{}", &trimmed[scheme.len()..]);
            version_url = url::Url::parse(&text).map_err(|e| EndpointError::BadUrl {
                url: redacted.clone(),
                reason: e.to_string(),
            })?;
            version_url.set_path("/json/version");
        }
        _ if bare => version_url.set_path("/json/version"),
        _ if matches!(parsed.path(), "/json/version" | "/json/version/") => {}
        _ => return Err(EndpointError::UnsupportedPath { url: redacted }),
    }
    let ws = fetch_ws_url(&version_url, headers).await?;
    Ok(carry_credentials(&parsed, &ws))
}

/// The discovered WebSocket URL with the credentials the user's URL
/// carried (userinfo, a query token), when it points at the same host
/// without its own: a grid that wants `?token=` or Basic auth on discovery
/// wants it on the handshake too, and its `/json/version` may not repeat it.
fn carry_credentials(given: &url::Url, ws: &str) -> String {
    let Ok(mut out) = url::Url::parse(ws) else {
        return ws.to_owned();
    };
    let add_userinfo = out.username().is_empty() && !given.username().is_empty();
    let add_query = out.query().is_none() && given.query().is_some();
    if out.host_str() != given.host_str() || !(add_userinfo || add_query) {
        return ws.to_owned();
    }
    if add_userinfo {
        let _ = out.set_username(given.username());
        let _ = out.set_password(given.password());
    }
    if add_query {
        out.set_query(given.query());
    }
    out.to_string()
}

/// Whether `url`'s host is this machine's loopback (`localhost`,
/// `127.0.0.0/8`, `::1`).
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The page targets of the browser whose DevTools HTTP endpoint is `http`
/// (`http(s)://host:port`), in `/json/list` order. Chromium lists pages
/// most recently created or activated first, so the first is the tab in
/// front (DESIGN's CDP facts). Empty when the endpoint has no such list
/// (a grid's or a provider's socket) or does not answer within
/// [`VERSION_REQUEST_TIMEOUT`]: the caller then picks among
/// `Target.getTargets` itself.
pub async fn pages_in_front_order(http: &str, headers: &CdpHeaders) -> Vec<String> {
    let Ok(mut list_url) = url::Url::parse(http) else {
        return Vec::new();
    };
    list_url.set_path("/json/list");
    let Ok(json) = fetch_json(&list_url, headers).await else {
        return Vec::new();
    };
    json.as_array()
        .into_iter()
        .flatten()
        .filter(|t| t.get("type").and_then(serde_json::Value::as_str) == Some("page"))
        .filter_map(|t| t.get("id").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect()
}

async fn fetch_ws_url(
    version_url: &url::Url,
    headers: &CdpHeaders,
) -> Result<String, EndpointError> {
    let redacted = redact_url(version_url.as_str());
    tracing::debug!(url = %redacted, "resolving the CDP WebSocket URL");
    let json = fetch_json(version_url, headers).await?;
    match json.get("webSocketDebuggerUrl") {
        Some(serde_json::Value::String(ws)) if !ws.is_empty() => {
            tracing::debug!(url = %redacted, ws_url = %redact_url(ws), "resolved the CDP WebSocket URL");
            Ok(ws.clone())
        }
        Some(_) => Err(EndpointError::NoWebSocketUrl {
            url: redacted,
            reason: "webSocketDebuggerUrl is not a non-empty string".into(),
        }),
        None => Err(EndpointError::NoWebSocketUrl {
            url: redacted,
            reason:
                "the JSON has no webSocketDebuggerUrl field (is this a Chrome DevTools endpoint?)"
                    .into(),
        }),
    }
}

/// GETs `url` (with `headers`, bypassing proxies for loopback, within
/// [`VERSION_REQUEST_TIMEOUT`]) and parses its body as JSON.
async fn fetch_json(
    url: &url::Url,
    headers: &CdpHeaders,
) -> Result<serde_json::Value, EndpointError> {
    let redacted = redact_url(url.as_str());
    let mut builder = reqwest::Client::builder().timeout(VERSION_REQUEST_TIMEOUT);
    if is_loopback(url) {
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(|e| EndpointError::Unreachable {
        url: redacted.clone(),
        reason: describe_reqwest_error(&e),
    })?;
    let classify = |e: reqwest::Error| {
        if e.is_timeout() {
            EndpointError::Timeout {
                url: redacted.clone(),
                after: VERSION_REQUEST_TIMEOUT,
            }
        } else {
            EndpointError::Unreachable {
                url: redacted.clone(),
                reason: describe_reqwest_error(&e),
            }
        }
    };
    let mut request = client.get(url.clone());
    for (name, value) in headers.iter() {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(classify)?;
    let status = response.status();
    if !status.is_success() {
        return Err(EndpointError::HttpStatus {
            url: redacted,
            status: status.as_u16(),
        });
    }
    let body = response.bytes().await.map_err(classify)?;
    serde_json::from_slice(&body).map_err(|e| EndpointError::NoWebSocketUrl {
        url: redacted,
        reason: format!("the body is not JSON ({e})"),
    })
}

/// A reqwest error's cause chain without the URL (reqwest's own Display
/// includes the full URL, credentials and all).
fn describe_reqwest_error(e: &reqwest::Error) -> String {
    let mut parts = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    let kind = if e.is_connect() {
        "connection failed"
    } else if e.is_request() {
        "request failed"
    } else if e.is_body() || e.is_decode() {
        "bad response body"
    } else {
        "HTTP error"
    };
    if parts.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {}", parts.join(": "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn redact_url_hides_userinfo() {
        assert_eq!(
            redact_url("ws://user:pa%40ss@host:9222/devtools/browser/x"),
            "ws://***@host:9222/devtools/browser/x"
        );
        assert_eq!(redact_url("http://user@host"), "http://***@host");
        assert_eq!(redact_url("user:pass@host:9222"), "***@host:9222");
    }

    #[test]
    fn redact_url_hides_secret_query_values() {
        assert_eq!(
            redact_url(
                "wss://connect.example.com?apiKey=abc123&sessionId=s&foo=bar&token=t&X-Amz-Signature=z"
            ),
            "wss://connect.example.com?apiKey=***&sessionId=***&foo=bar&token=***&X-Amz-Signature=***"
        );
        assert_eq!(
            redact_url("https://h/p?key=1&secret=2&sig=3&a=4"),
            "https://h/p?key=***&secret=***&sig=***&a=4"
        );
        assert_eq!(
            redact_url("https://h/p?x=1#access_token=abc"),
            "https://h/p?x=1#***"
        );
    }

    #[test]
    fn redact_url_leaves_plain_urls_alone() {
        for url in [
            "http://127.0.0.1:9222",
            "ws://127.0.0.1:9222/devtools/browser/abc",
            "",
            "not a url",
            "?",
            "@",
            "://@",
        ] {
            let redacted = redact_url(url);
            if !url.contains('@') {
                assert_eq!(redacted, url);
            }
        }
    }

    /// One-shot HTTP server answering every request with `status` and `body`.
    async fn http_server(status: &'static str, body: String) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut seen = Vec::new();
                    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                    let request = String::from_utf8_lossy(&seen);
                    let (status, body) = if request.starts_with("GET /json/version ") {
                        (status, body)
                    } else {
                        ("404 Not Found", String::new())
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        format!("127.0.0.1:{}", addr.port())
    }

    const WS: &str = "ws://127.0.0.1:1/devtools/browser/abc";

    fn version_body() -> String {
        format!(r#"{{"Browser":"Chrome/156","webSocketDebuggerUrl":"{WS}"}}"#)
    }

    #[tokio::test]
    async fn resolves_http_host_port_through_json_version() {
        let host = http_server("200 OK", version_body()).await;
        assert_eq!(resolve_ws_url(&format!("http://{host}")).await.unwrap(), WS);
        assert_eq!(
            resolve_ws_url(&format!("http://{host}/")).await.unwrap(),
            WS
        );
        assert_eq!(
            resolve_ws_url(&format!("http://{host}/json/version"))
                .await
                .unwrap(),
            WS
        );
    }

    #[tokio::test]
    async fn resolves_bare_ws_host_port_through_json_version() {
        let host = http_server("200 OK", version_body()).await;
        assert_eq!(resolve_ws_url(&format!("ws://{host}")).await.unwrap(), WS);
    }

    #[tokio::test]
    async fn ws_url_with_path_is_used_as_is_without_a_request() {
        let url = "ws://127.0.0.1:1/devtools/browser/xyz?token=t";
        assert_eq!(resolve_ws_url(url).await.unwrap(), url);
    }

    #[tokio::test]
    async fn a_ws_url_with_a_token_in_its_query_is_used_as_is() {
        // browserless, Steel: a bare host with the token in the query.
        for url in ["wss://127.0.0.1:1?token=t", "ws://127.0.0.1:1/?apiKey=k"] {
            assert_eq!(resolve_ws_url(url).await.unwrap(), url);
        }
    }

    #[tokio::test]
    async fn a_page_level_endpoint_is_used_as_is_and_recognised() {
        for url in [
            "ws://127.0.0.1:1/devtools/page/ABC?token=s3cret",
            "ws://127.0.0.1:1/devtools/0123abc/page",
            "wss://127.0.0.1:1/devtools/0123abc/page/XYZ",
        ] {
            assert_eq!(resolve_ws_url(url).await.unwrap(), url);
            let path = url::Url::parse(url).unwrap().path().to_owned();
            assert!(is_page_level_path(&path), "{url}");
        }
        assert!(!is_page_level_path("/devtools/browser/abc"));
        assert!(!is_page_level_path("/devtools/0123abc/browser"));
        assert!(!is_page_level_path("/session/1/se/cdp"));
    }

    #[tokio::test]
    async fn missing_web_socket_debugger_url_is_a_clear_error() {
        let host = http_server("200 OK", r#"{"Browser":"x"}"#.into()).await;
        let err = resolve_ws_url(&format!("http://{host}")).await.unwrap_err();
        assert!(matches!(err, EndpointError::NoWebSocketUrl { .. }), "{err}");
        assert!(err.to_string().contains("webSocketDebuggerUrl"), "{err}");
        let host = http_server("200 OK", "<html>".into()).await;
        let err = resolve_ws_url(&format!("http://{host}")).await.unwrap_err();
        assert!(matches!(err, EndpointError::NoWebSocketUrl { .. }), "{err}");
    }

    #[tokio::test]
    async fn http_error_status_is_reported() {
        let host = http_server("500 Internal Server Error", String::new()).await;
        let err = resolve_ws_url(&format!("http://{host}")).await.unwrap_err();
        assert!(
            matches!(err, EndpointError::HttpStatus { status: 500, .. }),
            "{err}"
        );
    }

    #[tokio::test]
    async fn bad_scheme_and_bad_url_name_the_allowed_forms() {
        let err = resolve_ws_url("ftp://127.0.0.1:9222").await.unwrap_err();
        assert!(
            matches!(err, EndpointError::UnsupportedScheme { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("http://host:port"), "{err}");
        let err = resolve_ws_url("not a url").await.unwrap_err();
        assert!(matches!(err, EndpointError::BadUrl { .. }), "{err}");
        let err = resolve_ws_url("http://127.0.0.1:9222/other")
            .await
            .unwrap_err();
        assert!(
            matches!(err, EndpointError::UnsupportedPath { .. }),
            "{err}"
        );
    }

    /// A password with an unencoded `/`, `?` or `#` (a base64 token) made
    /// the URL unparseable, and its error showed everything after that
    /// character (found attacking the selenium provider).
    #[test]
    fn redaction_hides_userinfo_up_to_the_last_at_even_when_the_url_does_not_parse() {
        for (given, shown) in [
            (
                "http://user:ab/s3cretPW@127.0.0.1:1",
                "http://***@127.0.0.1:1",
            ),
            (
                "http://user:ab?s3cretPW@127.0.0.1:1/x",
                "http://***@127.0.0.1:1/x",
            ),
            (
                "http://user:ab#s3cretPW@127.0.0.1:1",
                "http://***@127.0.0.1:1",
            ),
            ("http//user:s3cretPW@::grid", "***@::grid"),
            ("http://grid.test:4444/wd", "http://grid.test:4444/wd"),
        ] {
            let r = redact_url(given);
            assert_eq!(r, shown, "{given}");
            assert!(!r.contains("s3cret"), "{r}");
        }
    }

    #[tokio::test]
    async fn unreachable_endpoint_error_never_shows_credentials() {
        // Bind then drop: the port is (almost certainly) closed.
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = resolve_ws_url(&format!(
            "http://admin:hunter2@127.0.0.1:{port}/?token=s3cret"
        ))
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, EndpointError::Unreachable { .. }), "{text}");
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret") && !text.contains("admin"),
            "{text}"
        );
        assert!(text.contains("***"), "{text}");
    }

    #[tokio::test]
    async fn bad_scheme_error_never_shows_credentials() {
        let err = resolve_ws_url("ftp://u:secretpw@h/?apiKey=k3y")
            .await
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secretpw") && !err.contains("k3y"), "{err}");
    }
}
