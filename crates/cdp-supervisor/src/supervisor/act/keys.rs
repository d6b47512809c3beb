//! Keys by their DOM names, as `Input.dispatchKeyEvent` takes them.

use crate::cdp::protocol::SessionId;
use crate::supervisor::driver::{CdpCallError, Supervisor};
use crate::supervisor::state::Target;
use serde_json::json;
use std::time::Duration;

/// A key as `Input.dispatchKeyEvent` needs it.
pub(crate) struct Key {
    pub(crate) key: String,
    pub(crate) code: String,
    pub(crate) vk: u32,
    /// What it types (`\r` for Enter: forms submit only with it).
    pub(crate) text: Option<String>,
}

/// The named DOM keys: (key, code, windowsVirtualKeyCode, text).
pub(super) const NAMED_KEYS: &[(&str, &str, u32, Option<&str>)] = &[
    ("Enter", "Enter", 13, Some("\r")),
    ("Escape", "Escape", 27, None),
    ("Tab", "Tab", 9, None),
    ("Backspace", "Backspace", 8, None),
    ("Delete", "Delete", 46, None),
    ("ArrowUp", "ArrowUp", 38, None),
    ("ArrowDown", "ArrowDown", 40, None),
    ("ArrowLeft", "ArrowLeft", 37, None),
    ("ArrowRight", "ArrowRight", 39, None),
    ("Home", "Home", 36, None),
    ("End", "End", 35, None),
    ("PageUp", "PageUp", 33, None),
    ("PageDown", "PageDown", 34, None),
    (" ", "Space", 32, Some(" ")),
    ("Space", "Space", 32, Some(" ")),
];

/// The error for a key name [`key_of`] does not know: the names it does,
/// each quoted (the space key is `" "` or `Space`, never a blank in a list).
pub(super) fn unknown_key(name: &str) -> String {
    let named: Vec<String> = NAMED_KEYS
        .iter()
        .map(|k| match k.0 {
            " " => "\" \" (the space key)".to_owned(),
            key => format!("{key:?}"),
        })
        .collect();
    format!(
        "key {} is not one browser_press_key knows; give a DOM key name: one printable character (\"a\", \"A\", \"1\", \"/\"), or one of {}",
        crate::supervisor::wording::quoted(name),
        named.join(", ")
    )
}

pub(crate) fn key_of(name: &str) -> Option<Key> {
    if let Some((key, code, vk, text)) = NAMED_KEYS.iter().find(|k| k.0 == name) {
        let key = if *key == "Space" { " " } else { key };
        return Some(Key {
            key: key.to_string(),
            code: code.to_string(),
            vk: *vk,
            text: text.map(str::to_owned),
        });
    }
    let mut chars = name.chars();
    let c = chars.next()?;
    if chars.next().is_some() || c.is_control() {
        return None;
    }
    let (code, vk) = if c.is_ascii_alphabetic() {
        (
            format!("Key{}", c.to_ascii_uppercase()),
            c.to_ascii_uppercase() as u32,
        )
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), c as u32)
    } else {
        (String::new(), 0)
    };
    Some(Key {
        key: c.to_string(),
        code,
        vk,
        text: Some(c.to_string()),
    })
}

/// keyDown (with its text, if it types) then keyUp.
pub(super) async fn press(
    me: &Supervisor,
    session: &SessionId,
    k: &Key,
    keep: Duration,
) -> Result<(), CdpCallError> {
    let mut down = json!({"type": if k.text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk});
    if let Some(t) = &k.text {
        down["text"] = json!(t);
        down["unmodifiedText"] = json!(t);
    }
    me.send_agent(
        Target::Session(session.clone()),
        "Input.dispatchKeyEvent",
        down,
        keep,
    )
    .await?;
    me.send_agent(
        Target::Session(session.clone()),
        "Input.dispatchKeyEvent",
        json!({"type": "keyUp", "key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk}),
        keep,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_their_dom_names_and_enter_types_a_carriage_return() {
        assert_eq!(key_of("Enter").unwrap().text.as_deref(), Some("\r"));
        assert_eq!(key_of("a").unwrap().code, "KeyA");
        assert!(key_of("Hyper").is_none());
    }

    /// Issue 44: the list in the error showed the space key as a blank
    /// (`PageDown,  , Space`).
    #[test]
    fn regression_44_the_key_list_names_the_space_key() {
        let e = unknown_key("Hyper");
        assert!(
            e.contains(r#""PageDown", " " (the space key), "Space""#),
            "{e}"
        );
        assert!(!e.contains(",  ,") && !e.contains(", ,"), "{e}");
        // Every name listed is one key_of takes.
        for k in NAMED_KEYS {
            assert!(key_of(k.0).is_some(), "{}", k.0);
        }
        let long = unknown_key(&"k".repeat(100_000));
        assert!(
            long.len() < 1_000,
            "the name given is quoted capped: {long}"
        );
    }
}
