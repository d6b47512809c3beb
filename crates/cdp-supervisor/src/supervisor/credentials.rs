//! Stored answers to HTTP authentication challenges (config
//! `browser.credentials`): a username and a password per origin, the
//! password read from an environment variable and never shown.

use std::fmt;
use std::sync::Arc;

/// A password: shown by `Debug` as `(not shown)`, so that no log, error or
/// config dump carries it. [`Secret::expose`] is the one way to read it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `text`.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The text, for the one command that sends it (`Fetch.continueWithAuth`).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(not shown)")
    }
}

/// A username and password for one origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// The origin they answer, serialized as `scheme://host[:port]`
    /// ([`origin_of`]): a challenge's `authChallenge.origin` compares equal.
    pub origin: String,
    /// The username sent.
    pub username: String,
    /// The password sent.
    pub password: Secret,
    /// The environment variable the password came from (for messages).
    pub password_env: String,
}

/// Every stored credential (config `browser.credentials`), cheap to clone
/// into each tab's core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials(Arc<[Credential]>);

impl Credentials {
    /// Wraps `list` (origins already normalized by [`origin_of`]).
    pub fn new(list: Vec<Credential>) -> Credentials {
        Credentials(list.into())
    }

    /// The credential for a challenge from `origin` (`authChallenge.origin`).
    pub fn for_origin(&self, origin: &str) -> Option<&Credential> {
        let origin = origin_of(origin)?;
        self.0.iter().find(|c| c.origin == origin)
    }

    /// Whether none is stored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The stored ones, in config order.
    pub fn iter(&self) -> impl Iterator<Item = &Credential> {
        self.0.iter()
    }
}

/// `text` as an origin `scheme://host[:port]` (lower case, default port
/// left out), or `None` when it is not an http(s) origin: a path, query or
/// fragment makes it a URL, not an origin.
pub fn origin_of(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    let bare = matches!(url.path(), "" | "/") && url.query().is_none() && url.fragment().is_none();
    (matches!(url.scheme(), "http" | "https") && bare && url.username().is_empty())
        .then(|| url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_in_one_form_and_the_password_is_never_debug_printed() {
        assert_eq!(
            origin_of("HTTPS://Intranet.Example:443/").as_deref(),
            Some("https://intranet.example")
        );
        assert_eq!(
            origin_of("http://127.0.0.1:8080").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(origin_of("http://a.test/path"), None);
        assert_eq!(origin_of("ftp://a.test"), None);
        let c = Credentials::new(vec![Credential {
            origin: "http://a.test:81".into(),
            username: "u".into(),
            password: Secret::new("hunter2"),
            password_env: "PW".into(),
        }]);
        assert_eq!(
            c.for_origin("http://A.test:81")
                .map(|c| c.username.as_str()),
            Some("u")
        );
        assert!(c.for_origin("http://a.test:82").is_none());
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
