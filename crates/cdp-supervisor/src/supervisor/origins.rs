//! The navigation policy (config `browser.allowed_origins`,
//! `browser.blocked_origins`, `browser.allow_file_urls`): which documents
//! may load. Pure: the state machine asks it about every paused `Document`
//! request and every committed frame, `browser_navigate` before it sends
//! anything.
//!
//! Rules, in the order they are applied to a URL:
//! 1. URLs that carry no network origin are always allowed: `about:`
//!    (`about:blank` must stay loadable: it is where a released page goes),
//!    `data:`, `blob:`, `javascript:` and `chrome-error:` (what Chromium
//!    commits for a request we failed — refusing it would loop). What such a
//!    document then loads is a request of its own, checked in its own right.
//! 2. `file:` is allowed only with `allow_file_urls: true`
//!    (rule `allow_file_urls: false`).
//! 3. A URL matching an entry of `blocked_origins` is refused (rule
//!    `blocked_origins: <entry>`); blocked wins over allowed.
//! 4. With `allowed_origins` non-empty, a URL matching none of its entries
//!    is refused (rule `allowed_origins`).
//!
//! An entry is `scheme://host[:port]`: with a port it matches that port only
//! (the scheme's default port counts: `https://x.test:443` matches
//! `https://x.test/`), without one any port. `*.example.com` as the host
//! matches every subdomain of `example.com` (not `example.com` itself: list
//! it too). The scheme may be left out (`example.com`, `*.example.com:8080`):
//! the entry then matches any scheme. Hosts compare case-insensitively, in
//! their ASCII (punycode) form.
//!
//! ```
//! use cdp_supervisor::supervisor::origins::NavigationPolicy;
//!
//! let p = NavigationPolicy::new(&["https://*.example.com"], &["http://b.test"], false).unwrap();
//! assert!(p.check("https://www.example.com/x").is_ok());
//! assert_eq!(p.check("http://b.test:8080/").unwrap_err().rule, "blocked_origins: http://b.test");
//! assert_eq!(p.check("https://other.test/").unwrap_err().rule, "allowed_origins");
//! assert_eq!(p.check("file:///etc/passwd").unwrap_err().rule, "allow_file_urls: false");
//! assert!(p.check("about:blank").is_ok());
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;

/// What an origin entry may look like, for error messages.
pub const ORIGIN_ALLOWED: &str = "a list of origins scheme://host[:port] (port optional: without one any port matches; host may be *.example.com for its subdomains; scheme optional: any scheme), e.g. [\"https://example.com\", \"http://*.corp.test:8080\"]";

/// The rule that refuses `file:` URLs.
pub const FILE_RULE: &str = "allow_file_urls: false";
/// The rule that refuses what `allowed_origins` does not list.
pub const ALLOWED_RULE: &str = "allowed_origins";

/// Schemes that never name a network origin (rule 1 of the module doc).
const ORIGINLESS_SCHEMES: [&str; 5] = ["about", "data", "blob", "javascript", "chrome-error"];

/// The scheme that wraps another URL (`view-source:file:///etc/passwd`).
const VIEW_SOURCE: &str = "view-source";

/// How many `view-source:` wrappers [`NavigationPolicy::check`] looks
/// through (Chromium itself shows one; the rest is a URL built to recurse).
const VIEW_SOURCE_DEPTH_MAX: usize = 4;

/// One `allowed_origins` / `blocked_origins` entry, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPattern {
    /// As written (trimmed), for the rule's name.
    text: String,
    /// Lower-case scheme; `None`: any.
    scheme: Option<String>,
    /// Lower-case ASCII host; for a wildcard, the suffix after `*.`.
    host: String,
    /// `*.host`: subdomains of `host`.
    wildcard: bool,
    /// `None`: any port.
    port: Option<u16>,
}

/// Why an origin entry was refused: the sentence says what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{entry:?} is not an origin: {why}")]
pub struct OriginError {
    /// The entry as given.
    pub entry: String,
    /// What is wrong with it.
    pub why: String,
}

impl OriginPattern {
    /// Parses `scheme://host[:port]` (scheme optional, host may be `*.suffix`).
    ///
    /// # Errors
    /// An empty entry, a path, query or user info, a bad port or host.
    pub fn parse(entry: &str) -> Result<OriginPattern, OriginError> {
        let err = |why: &str| OriginError {
            entry: entry.to_owned(),
            why: why.to_owned(),
        };
        let text = entry.trim();
        if text.is_empty() {
            return Err(err("it is empty"));
        }
        let (scheme, rest) = match text.split_once("://") {
            Some((s, rest)) => {
                let ok = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
                if !ok {
                    return Err(err("the scheme is not a URL scheme"));
                }
                (Some(s.to_ascii_lowercase()), rest)
            }
            None => (None, text),
        };
        // A trailing slash is harmless (`https://example.com/`); a path is not.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(err(
                "an origin has no path, query, fragment or user info (scheme://host[:port])",
            ));
        }
        let (host, port) = if rest.starts_with('[') {
            // [v6] or [v6]:port
            let end = rest
                .find(']')
                .ok_or_else(|| err("an IPv6 host needs its closing ]"))?;
            let (h, after) = rest.split_at(end + 1);
            match after.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None if after.is_empty() => (h, None),
                None => return Err(err("unexpected text after the IPv6 host")),
            }
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| err("the port is not a number from 1 to 65535"))?,
            ),
        };
        let (wildcard, bare) = match host.strip_prefix("*.") {
            Some(h) => (true, h),
            None => (false, host),
        };
        if bare.is_empty() || bare.contains('*') {
            return Err(err(
                "the host is missing, or has a * other than a leading *. (e.g. *.example.com)",
            ));
        }
        let parsed = url::Host::parse(bare).map_err(|e| err(&format!("bad host ({e})")))?;
        if wildcard && !matches!(parsed, url::Host::Domain(_)) {
            return Err(err("*. goes only before a domain name, not an IP address"));
        }
        Ok(OriginPattern {
            text: text.to_owned(),
            scheme,
            host: canonical_host(&parsed),
            wildcard,
            port,
        })
    }

    /// Whether a parsed URL's origin matches this entry.
    fn matches(&self, url: &url::Url) -> bool {
        if self.scheme.as_deref().is_some_and(|s| s != url.scheme()) {
            return false;
        }
        if let Some(p) = self.port
            && url.port_or_known_default() != Some(p)
        {
            return false;
        }
        let Some(host) = url.host() else {
            return false;
        };
        let host = canonical_host(&host);
        if self.wildcard {
            host.len() > self.host.len()
                && host.ends_with(&self.host)
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
        } else {
            host == self.host
        }
    }
}

/// A host as the network reaches it, for comparing: a domain without its
/// trailing dot (`b.test.` resolves as `b.test` does), an IPv4-mapped IPv6
/// address as the IPv4 address it reaches (`[::ffff:127.0.0.1]` is
/// `127.0.0.1`). `url` has already lower-cased domains and normalized IPv4
/// forms (`127.1`, `0x7f.0.0.1`).
fn canonical_host<S: AsRef<str>>(host: &url::Host<S>) -> String {
    match host {
        url::Host::Domain(d) => {
            let d = d.as_ref();
            d.strip_suffix('.').unwrap_or(d).to_owned()
        }
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{a}]"),
        },
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A URL the policy refuses, and the rule that refuses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// `blocked_origins: <entry>`, [`ALLOWED_RULE`] or [`FILE_RULE`].
    pub rule: String,
}

/// The navigation policy of one supervisor. The default allows everything
/// but `file:`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NavigationPolicy {
    allowed: Vec<OriginPattern>,
    blocked: Vec<OriginPattern>,
    allow_file_urls: bool,
}

impl NavigationPolicy {
    /// A policy from the config's lists.
    ///
    /// # Errors
    /// The first entry that is not an origin.
    pub fn new<S: AsRef<str>>(
        allowed: &[S],
        blocked: &[S],
        allow_file_urls: bool,
    ) -> Result<NavigationPolicy, OriginError> {
        let parse = |list: &[S]| -> Result<Vec<OriginPattern>, OriginError> {
            list.iter()
                .map(|e| OriginPattern::parse(e.as_ref()))
                .collect()
        };
        Ok(NavigationPolicy {
            allowed: parse(allowed)?,
            blocked: parse(blocked)?,
            allow_file_urls,
        })
    }

    /// The `urlPattern` of the document requests the browser must pause
    /// for this policy (`Fetch.enable`, `resourceType: Document`): every
    /// document (`*`, `file:` ones included) when origins are listed,
    /// `None` otherwise.
    ///
    /// The default policy (no origins, `file:` refused) intercepts nothing:
    /// `Fetch.enable` itself costs — a `file:*`-only pattern, which pauses
    /// no `http` request, made a page with 20 iframes load 8.5 % and 14 %
    /// slower in two runs (`benches/policy.rs`; pausing every document:
    /// 16.5 % and 14 %). Its `file:` rule is kept by `browser_navigate` before
    /// sending and, for a `file:` document that commits anyway (only
    /// browser-initiated navigations can reach one: Chromium refuses them
    /// from web pages), by releasing the frame to `about:blank` at commit.
    pub fn document_pattern(&self) -> Option<&'static str> {
        (!self.allowed.is_empty() || !self.blocked.is_empty()).then_some("*")
    }

    /// Whether `file:` documents may load.
    pub fn allows_file_urls(&self) -> bool {
        self.allow_file_urls
    }

    /// Whether a document may load from `url` (see the module doc for the
    /// rules). A URL that does not parse is refused only when some rule
    /// could have applied to it (an allow-list).
    ///
    /// # Errors
    /// [`Refused`] naming the rule.
    pub fn check(&self, url: &str) -> Result<(), Refused> {
        self.check_within(url, VIEW_SOURCE_DEPTH_MAX)
    }

    /// [`NavigationPolicy::check`] with at most `depth` more `view-source:`
    /// wrappers to look through: a URL nesting more is refused, not
    /// followed down a stack that an endpoint controls.
    fn check_within(&self, url: &str, depth: usize) -> Result<(), Refused> {
        let refuse = |rule: String| Err(Refused { rule });
        // No origin rules: a web URL passes whether it parses or not, and
        // every frame's commit asks.
        if self.blocked.is_empty()
            && self.allowed.is_empty()
            && (url.starts_with("https://") || url.starts_with("http://"))
        {
            return Ok(());
        }
        let Ok(parsed) = url::Url::parse(url) else {
            return if self.allowed.is_empty() {
                Ok(())
            } else {
                refuse(ALLOWED_RULE.to_owned())
            };
        };
        let scheme = parsed.scheme();
        if scheme == VIEW_SOURCE {
            // `view-source:` shows the document it wraps: that one's rules.
            let Some(depth) = depth.checked_sub(1) else {
                return refuse(format!(
                    "view-source nested more than {VIEW_SOURCE_DEPTH_MAX} times"
                ));
            };
            let inner = url
                .trim_start()
                .get(VIEW_SOURCE.len() + 1..)
                .unwrap_or_default();
            return self.check_within(inner, depth);
        }
        if ORIGINLESS_SCHEMES.contains(&scheme) {
            return Ok(());
        }
        if scheme == "file" {
            return if self.allow_file_urls {
                Ok(())
            } else {
                refuse(FILE_RULE.to_owned())
            };
        }
        if let Some(b) = self.blocked.iter().find(|b| b.matches(&parsed)) {
            return refuse(format!("blocked_origins: {b}"));
        }
        if !self.allowed.is_empty() && !self.allowed.iter().any(|a| a.matches(&parsed)) {
            return refuse(ALLOWED_RULE.to_owned());
        }
        Ok(())
    }
}

/// One navigation the policy stopped (`blocked_navigations[]`, the last 10).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockedNavigation {
    /// The URL the document would have come from.
    pub url: String,
    /// The rule that refused it: `blocked_origins: <entry>`,
    /// `allowed_origins` or `allow_file_urls: false`.
    pub rule: String,
    /// When, Unix seconds.
    pub at: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: &[&str], blocked: &[&str], file: bool) -> NavigationPolicy {
        NavigationPolicy::new(allowed, blocked, file).unwrap()
    }

    fn rule(p: &NavigationPolicy, url: &str) -> Option<String> {
        p.check(url).err().map(|r| r.rule)
    }

    #[test]
    fn an_origin_without_a_port_matches_any_port_and_with_one_only_that_port() {
        let p = policy(&[], &["http://b.test"], false);
        for url in ["http://b.test/", "http://b.test:8080/x", "http://B.TEST:1/"] {
            assert_eq!(
                rule(&p, url).as_deref(),
                Some("blocked_origins: http://b.test"),
                "{url}"
            );
        }
        assert_eq!(rule(&p, "https://b.test/"), None, "another scheme");
        assert_eq!(rule(&p, "http://a.test/"), None);
        assert_eq!(rule(&p, "http://sub.b.test/"), None, "not a subdomain rule");

        let p = policy(&[], &["http://b.test:8080"], false);
        assert!(rule(&p, "http://b.test:8080/").is_some());
        assert_eq!(rule(&p, "http://b.test:8081/"), None);
        assert_eq!(rule(&p, "http://b.test/"), None);
        let p = policy(&[], &["https://b.test:443"], false);
        assert!(rule(&p, "https://b.test/").is_some(), "the default port");
    }

    #[test]
    fn a_wildcard_matches_subdomains_only() {
        let p = policy(&["https://*.example.com"], &[], false);
        assert_eq!(rule(&p, "https://www.example.com/"), None);
        assert_eq!(rule(&p, "https://a.b.example.com:8443/"), None);
        assert_eq!(
            rule(&p, "https://example.com/").as_deref(),
            Some("allowed_origins")
        );
        assert_eq!(
            rule(&p, "https://badexample.com/").as_deref(),
            Some("allowed_origins")
        );
        assert_eq!(
            rule(&p, "http://www.example.com/").as_deref(),
            Some("allowed_origins")
        );
    }

    /// Review (issue 13): each of these loaded a blocked document.
    /// Issue 28, defect 10: a URL of nested `view-source:` wrappers
    /// recursed once per wrapper, without bound.
    #[test]
    fn regression_28_10_nested_view_source_is_refused_not_recursed() {
        let p = NavigationPolicy::new(&[] as &[&str], &["http://b.test"], false).unwrap();
        let deep = format!("{}http://a.test/", "view-source:".repeat(100_000));
        assert!(p.check(&deep).is_err());
        assert!(p.check("view-source:http://a.test/").is_ok());
        assert!(p.check("view-source:http://b.test/").is_err());
    }

    #[test]
    fn regression_a_trailing_dot_a_mapped_ipv6_address_or_view_source_does_not_get_past_a_rule() {
        let p = NavigationPolicy::new(
            &[] as &[&str],
            &["http://b.test", "http://127.0.0.1", "*.c.test"],
            false,
        )
        .unwrap();
        for url in [
            "http://b.test./x",
            "http://B.TEST.:8080/x",
            "http://[::ffff:127.0.0.1]:8080/",
            "http://[::ffff:7f00:1]/",
            "http://x.c.test./",
            "view-source:http://b.test/x",
            "view-source:file:///etc/passwd",
        ] {
            assert!(p.check(url).is_err(), "{url}");
        }
        assert!(p.check("http://a.test./").is_ok());
        assert!(p.check("http://[::1]/").is_ok());
        assert!(p.check("view-source:http://a.test/").is_ok());
        let dotted =
            NavigationPolicy::new(&["http://a.test."] as &[&str], &[] as &[&str], false).unwrap();
        assert!(dotted.check("http://a.test/").is_ok());
        assert!(dotted.check("http://b.test/").is_err());
        assert!(
            NavigationPolicy::default()
                .check("view-source:file:///etc/passwd")
                .is_err()
        );
    }

    #[test]
    fn blocked_wins_over_allowed_and_an_allow_list_refuses_the_rest() {
        let p = policy(
            &["*.corp.test", "http://a.test"],
            &["http://admin.corp.test"],
            false,
        );
        assert_eq!(rule(&p, "http://a.test:9/"), None);
        assert_eq!(rule(&p, "https://wiki.corp.test/"), None, "any scheme");
        assert_eq!(
            rule(&p, "http://admin.corp.test/").as_deref(),
            Some("blocked_origins: http://admin.corp.test")
        );
        assert_eq!(
            rule(&p, "http://169.254.169.254/").as_deref(),
            Some("allowed_origins")
        );
    }

    #[test]
    fn file_urls_need_the_key_and_originless_urls_always_load() {
        let closed = NavigationPolicy::default();
        assert_eq!(closed.document_pattern(), None, "the default costs nothing");
        assert_eq!(policy(&[], &[], true).document_pattern(), None);
        assert_eq!(
            policy(&[], &["http://b.test"], true).document_pattern(),
            Some("*")
        );
        assert_eq!(
            rule(&closed, "file:///etc/passwd").as_deref(),
            Some(FILE_RULE)
        );
        assert_eq!(
            rule(&closed, "FILE:///etc/passwd").as_deref(),
            Some(FILE_RULE)
        );
        assert_eq!(rule(&closed, "http://anything.test/"), None);
        let open = policy(&[], &[], true);
        assert_eq!(rule(&open, "file:///etc/passwd"), None);
        // Even the strictest allow-list keeps these.
        let strict = policy(&["https://only.test"], &[], false);
        for url in [
            "about:blank",
            "about:srcdoc",
            "data:text/html,<p>x",
            "blob:https://evil.test/1234",
            "javascript:void(0)",
            "chrome-error://chromewebdata/",
        ] {
            assert_eq!(rule(&strict, url), None, "{url}");
        }
        assert_eq!(
            rule(&strict, "not a url").as_deref(),
            Some("allowed_origins")
        );
        assert_eq!(rule(&closed, "not a url"), None);
    }

    #[test]
    fn ip_hosts_compare_as_addresses() {
        let p = policy(&[], &["http://[::1]", "169.254.169.254"], false);
        assert!(rule(&p, "http://[0:0::1]:8080/").is_some());
        assert!(rule(&p, "http://169.254.169.254/latest/meta-data").is_some());
        assert!(rule(&p, "https://169.254.169.254/").is_some());
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        for (bad, why) in [
            ("", "empty"),
            ("http://a.test/path", "no path"),
            ("http://user@a.test", "user info"),
            ("http://a.test:99999", "port"),
            ("http://a.test:0", "port"),
            ("http://*", "host"),
            ("http://a.*.test", "leading *."),
            ("http://*.1.2.3.4", "IP address"),
            ("1http://a.test", "scheme"),
            ("http://[::1", "closing ]"),
            ("http://a b.test", "bad host"),
        ] {
            let e = OriginPattern::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert_eq!(
            OriginPattern::parse(" https://Example.COM/ ")
                .unwrap()
                .to_string(),
            "https://Example.COM/"
        );
    }
}
