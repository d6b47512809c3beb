//! Live-view tokens: 128 random bits each, for one task, `view` (watch
//! only) or `control` (a handoff's), expiring. Only their SHA-256 is
//! kept, so a memory dump or a log of this table gives nobody a way in;
//! a token is shown in logs by its first [`SHOWN_CHARS`] characters only.
//! Pure: the caller gives the time.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Instant;

/// Random bytes per token (128 bits).
pub const TOKEN_BYTES: usize = 16;
/// How much of a token a log line shows.
pub const SHOWN_CHARS: usize = 6;
/// Tokens one process keeps at most: past it the oldest expiring goes
/// first (20 viewers of 64 tasks, with room to spare).
pub const MAX_TOKENS: usize = 4096;

/// What a token lets its holder do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Watch the screen and the state.
    View,
    /// Also answer prompts, drive the page and press Done: a person's
    /// handoff.
    Control,
}

/// One token's grant.
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    /// The task it is for.
    pub task_id: String,
    /// What it allows.
    pub access: Access,
    /// When it stops working.
    pub expires: Instant,
    /// The handoff a control token belongs to (it ends with it).
    pub handoff: Option<u64>,
}

/// The tokens of a process, by hash.
#[derive(Default)]
pub struct Tokens {
    by_hash: HashMap<[u8; 32], Grant>,
}

fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A token as a log line may show it: its first characters and an ellipsis.
pub fn shown(token: &str) -> String {
    let head: String = token.chars().take(SHOWN_CHARS).collect();
    format!("{head}…")
}

/// A fresh token: [`TOKEN_BYTES`] from the OS's random source, in hex.
///
/// # Errors
/// The random source cannot be read.
pub fn fresh() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; TOKEN_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Tokens {
    /// Keeps `token` (hashed) with its grant.
    pub fn insert(&mut self, token: &str, grant: Grant, now: Instant) {
        self.by_hash.retain(|_, g| g.expires > now);
        if self.by_hash.len() >= MAX_TOKENS
            && let Some(oldest) = self
                .by_hash
                .iter()
                .min_by_key(|(_, g)| g.expires)
                .map(|(h, _)| *h)
        {
            self.by_hash.remove(&oldest);
        }
        self.by_hash.insert(hash(token), grant);
    }

    /// The grant of `token` at `now`; an expired one is forgotten.
    pub fn check(&mut self, token: &str, now: Instant) -> Option<Grant> {
        // A token is hex of a fixed length: anything else is not one, and
        // costs no hash.
        if token.len() != TOKEN_BYTES * 2 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let h = hash(token);
        match self.by_hash.get(&h) {
            Some(g) if g.expires > now => Some(g.clone()),
            Some(_) => {
                self.by_hash.remove(&h);
                None
            }
            None => None,
        }
    }

    /// Forgets the control tokens of `task_id`'s handoff `id` (handoffs are
    /// numbered per task).
    pub fn end_handoff(&mut self, task_id: &str, id: u64) {
        self.by_hash
            .retain(|_, g| g.handoff != Some(id) || g.task_id != task_id);
    }

    /// Forgets every token of `task_id`.
    pub fn end_task(&mut self, task_id: &str) {
        self.by_hash.retain(|_, g| g.task_id != task_id);
    }

    /// How many tokens are kept.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn grant(access: Access, expires: Instant, handoff: Option<u64>) -> Grant {
        Grant {
            task_id: "t1".into(),
            access,
            expires,
            handoff,
        }
    }

    #[test]
    fn a_token_works_until_it_expires_and_only_its_hash_is_kept() {
        let t0 = Instant::now();
        let mut tokens = Tokens::default();
        let token = fresh().unwrap();
        assert_eq!(token.len(), 32);
        tokens.insert(
            &token,
            grant(Access::View, t0 + Duration::from_secs(10), None),
            t0,
        );
        assert_eq!(tokens.check(&token, t0).unwrap().access, Access::View);
        // Not kept as text anywhere in the table.
        assert!(
            tokens
                .by_hash
                .keys()
                .all(|k| k.to_vec() != token.as_bytes())
        );
        assert!(tokens.check(&token, t0 + Duration::from_secs(10)).is_none());
        assert!(tokens.is_empty(), "an expired token is forgotten");
    }

    #[test]
    fn wrong_and_malformed_tokens_are_nothing() {
        let t0 = Instant::now();
        let mut tokens = Tokens::default();
        let token = fresh().unwrap();
        tokens.insert(
            &token,
            grant(Access::Control, t0 + Duration::from_secs(9), Some(1)),
            t0,
        );
        let mut other = token.clone().into_bytes();
        other[0] = if other[0] == b'a' { b'b' } else { b'a' };
        assert!(
            tokens
                .check(std::str::from_utf8(&other).unwrap(), t0)
                .is_none()
        );
        assert!(tokens.check("", t0).is_none());
        assert!(tokens.check(&"z".repeat(32), t0).is_none());
        assert!(tokens.check(&format!("{token}0"), t0).is_none());
        assert_eq!(shown(&token).chars().count(), SHOWN_CHARS + 1);
    }

    #[test]
    fn a_control_token_ends_with_its_handoff_and_all_with_the_task() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(60);
        let mut tokens = Tokens::default();
        let (view, control) = (fresh().unwrap(), fresh().unwrap());
        tokens.insert(&view, grant(Access::View, later, None), t0);
        tokens.insert(&control, grant(Access::Control, later, Some(7)), t0);
        let elsewhere = fresh().unwrap();
        let other_task = Grant {
            task_id: "t2".into(),
            ..grant(Access::Control, later, Some(7))
        };
        tokens.insert(&elsewhere, other_task, t0);
        tokens.end_handoff("t1", 7);
        assert!(tokens.check(&control, t0).is_none());
        assert!(
            tokens.check(&elsewhere, t0).is_some(),
            "another task's handoff 7 is not this one"
        );
        assert!(tokens.check(&view, t0).is_some());
        tokens.end_task("t1");
        assert!(tokens.check(&view, t0).is_none());
    }
}
