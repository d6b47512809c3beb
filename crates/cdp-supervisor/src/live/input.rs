//! A person's input on the live view, mapped to CDP `Input.*` commands on
//! the shown tab's page session. Pure: a message and the shown frame's
//! metadata in, commands out (or why not).
//!
//! Positions come as fractions of the shown image (0 to 1, so the page's
//! own layout and zoom of the image do not matter) and are mapped to the
//! page's CSS pixels with the frame's metadata, as DevTools' screencast view
//! does: the image covers `deviceWidth` × `deviceHeight` DIP below
//! `offsetTop`, scaled by `pageScaleFactor`. A click there lands where the
//! image shows the element, in an OOPIF too (input goes to the top-level
//! page, which routes it).

use crate::supervisor::driver::ScreencastMetadata;
use serde::Deserialize;
use serde_json::{Value, json};

/// Longest text one message may insert (a paste), in characters.
pub const TEXT_MAX_CHARS: usize = 10_000;
/// Most touch points one touch event carries.
pub const TOUCH_POINTS_MAX: usize = 10;
/// Largest wheel delta one event may carry, in CSS pixels.
pub const WHEEL_DELTA_MAX: f64 = 10_000.0;

/// One input message from a viewer (`{"type": …}` JSON).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum InputMessage {
    /// A mouse event at a fraction of the image.
    Mouse {
        /// `move`, `down`, `up` or `wheel`.
        event: String,
        /// Across the image, 0 (left) to 1 (right).
        x: f64,
        /// Down the image, 0 (top) to 1 (bottom).
        y: f64,
        /// `left` (the default), `middle`, `right` or `none`.
        #[serde(default)]
        button: Option<String>,
        #[serde(default)]
        /// 1 for a click, 2 for a double click (default 1).
        click_count: Option<u32>,
        #[serde(default)]
        /// A wheel's horizontal delta, in CSS pixels.
        delta_x: Option<f64>,
        #[serde(default)]
        /// A wheel's vertical delta, in CSS pixels.
        delta_y: Option<f64>,
        /// Alt 1, Ctrl 2, Meta 4, Shift 8, added.
        #[serde(default)]
        modifiers: Option<u32>,
    },
    /// A key (`down` or `up`) by its DOM `key` and `code`.
    Key {
        /// `down` or `up`.
        event: String,
        /// The DOM `key` (`a`, `Enter`…).
        key: String,
        /// The DOM `code` (`KeyA`…), when known.
        #[serde(default)]
        code: Option<String>,
        /// Alt 1, Ctrl 2, Meta 4, Shift 8, added.
        #[serde(default)]
        modifiers: Option<u32>,
    },
    /// Text to insert where the focus is (typed, or a paste).
    Text {
        /// What to insert.
        text: String,
    },
    /// A touch event with its points, each a fraction of the image.
    Touch {
        /// `start`, `move`, `end` or `cancel`.
        event: String,
        /// The points touching the screen.
        #[serde(default)]
        points: Vec<TouchPoint>,
    },
}

/// One touch point.
#[derive(Debug, Deserialize)]
pub struct TouchPoint {
    /// Across the image, 0 to 1.
    x: f64,
    /// Down the image, 0 to 1.
    y: f64,
}

/// A CDP command to send on the page session.
#[derive(Debug, PartialEq)]
pub struct Command {
    /// The method (`Input.dispatchMouseEvent`…).
    pub method: &'static str,
    /// Its params.
    pub params: Value,
}

fn command(method: &'static str, params: Value) -> Command {
    Command { method, params }
}

/// A fraction of the image as the page's CSS pixels. `None` for a point
/// off the image or not a number (a wild coordinate is refused, not
/// clamped onto some other element).
pub fn to_css(x: f64, y: f64, m: &ScreencastMetadata) -> Option<(f64, f64)> {
    let inside = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
    if !inside(x) || !inside(y) || m.device_width <= 0.0 || m.device_height <= 0.0 {
        return None;
    }
    let scale = if m.page_scale_factor > 0.0 {
        m.page_scale_factor
    } else {
        1.0
    };
    let css_x = x * m.device_width / scale;
    let css_y = (y * m.device_height - m.offset_top).max(0.0) / scale;
    Some((css_x, css_y))
}

/// The commands for `msg` on a page shown with metadata `m`, or why none.
pub fn commands(msg: InputMessage, m: &ScreencastMetadata) -> Result<Vec<Command>, String> {
    const OFF_IMAGE: &str =
        "the position is off the screen image (x and y are fractions from 0 to 1 of the image)";
    match msg {
        InputMessage::Mouse {
            event,
            x,
            y,
            button,
            click_count,
            delta_x,
            delta_y,
            modifiers,
        } => {
            let (x, y) = to_css(x, y, m).ok_or(OFF_IMAGE)?;
            let button = match button.as_deref().unwrap_or("left") {
                b @ ("left" | "middle" | "right" | "none") => b,
                other => {
                    return Err(format!(
                        "unknown mouse button {:?}; one of left, middle, right, none",
                        cut(other)
                    ));
                }
            };
            let modifiers = modifiers.unwrap_or(0) & 0xf;
            let params = match event.as_str() {
                "move" => json!({"type": "mouseMoved", "x": x, "y": y, "modifiers": modifiers}),
                "down" | "up" => json!({
                    "type": if event == "down" { "mousePressed" } else { "mouseReleased" },
                    "x": x, "y": y, "button": button,
                    "clickCount": click_count.unwrap_or(1).clamp(1, 3),
                    "modifiers": modifiers,
                }),
                "wheel" => {
                    let d = |v: Option<f64>| {
                        v.filter(|d| d.is_finite())
                            .unwrap_or(0.0)
                            .clamp(-WHEEL_DELTA_MAX, WHEEL_DELTA_MAX)
                    };
                    json!({"type": "mouseWheel", "x": x, "y": y,
                           "deltaX": d(delta_x), "deltaY": d(delta_y), "modifiers": modifiers})
                }
                other => {
                    return Err(format!(
                        "unknown mouse event {:?}; one of move, down, up, wheel",
                        cut(other)
                    ));
                }
            };
            Ok(vec![command("Input.dispatchMouseEvent", params)])
        }
        InputMessage::Key {
            event,
            key,
            code,
            modifiers,
        } => {
            let down = match event.as_str() {
                "down" => true,
                "up" => false,
                other => {
                    return Err(format!(
                        "unknown key event {:?}; one of down, up",
                        cut(other)
                    ));
                }
            };
            let modifiers = modifiers.unwrap_or(0) & 0xf;
            let k = crate::supervisor::act::keys::key_of(&key).ok_or_else(|| {
                format!(
                    "unknown key {:?}: a single character or a named key (Enter, Tab, Backspace, Escape, arrows…)",
                    cut(&key)
                )
            })?;
            let code = code
                .filter(|c| c.len() <= 32 && c.chars().all(|c| c.is_ascii_alphanumeric()))
                .unwrap_or_else(|| k.code.clone());
            // A character typed with Ctrl or Meta is a shortcut, not text;
            // Ctrl and Alt together are AltGr (`@`, `€` on many layouts).
            let (alt, ctrl, meta) = (modifiers & 1 != 0, modifiers & 2 != 0, modifiers & 4 != 0);
            let shortcut = meta || (ctrl && !alt);
            let text = k.text.clone().filter(|_| !shortcut);
            let mut params = json!({
                "type": if !down { "keyUp" } else if text.is_some() { "keyDown" } else { "rawKeyDown" },
                "key": k.key, "code": code,
                "windowsVirtualKeyCode": k.vk, "modifiers": modifiers,
            });
            if let (true, Some(t)) = (down, text) {
                params["text"] = json!(t);
                params["unmodifiedText"] = json!(t);
            }
            Ok(vec![command("Input.dispatchKeyEvent", params)])
        }
        InputMessage::Text { text } => {
            if text.chars().count() > TEXT_MAX_CHARS {
                return Err(format!(
                    "the text has more than {TEXT_MAX_CHARS} characters; paste it in parts"
                ));
            }
            Ok(vec![command("Input.insertText", json!({"text": text}))])
        }
        InputMessage::Touch { event, points } => {
            let kind = match event.as_str() {
                "start" => "touchStart",
                "move" => "touchMove",
                "end" => "touchEnd",
                "cancel" => "touchCancel",
                other => {
                    return Err(format!(
                        "unknown touch event {:?}; one of start, move, end, cancel",
                        cut(other)
                    ));
                }
            };
            if points.len() > TOUCH_POINTS_MAX {
                return Err(format!("at most {TOUCH_POINTS_MAX} touch points"));
            }
            let points = points
                .iter()
                .map(|p| to_css(p.x, p.y, m).map(|(x, y)| json!({"x": x, "y": y})))
                .collect::<Option<Vec<_>>>()
                .ok_or(OFF_IMAGE)?;
            Ok(vec![command(
                "Input.dispatchTouchEvent",
                json!({"type": kind, "touchPoints": points}),
            )])
        }
    }
}

/// At most 40 characters of what a viewer sent, for an error.
pub(crate) fn cut(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ScreencastMetadata {
        ScreencastMetadata {
            offset_top: 0.0,
            page_scale_factor: 1.0,
            device_width: 800.0,
            device_height: 600.0,
            scroll_offset_x: 0.0,
            scroll_offset_y: 120.0,
        }
    }

    fn parse(v: Value) -> InputMessage {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_middle_of_the_image_is_the_middle_of_the_viewport_whatever_the_scroll() {
        assert_eq!(to_css(0.5, 0.5, &meta()), Some((400.0, 300.0)));
        let zoomed = ScreencastMetadata {
            page_scale_factor: 2.0,
            ..meta()
        };
        assert_eq!(to_css(0.5, 0.5, &zoomed), Some((200.0, 150.0)));
        let chrome = ScreencastMetadata {
            offset_top: 60.0,
            ..meta()
        };
        assert_eq!(to_css(0.5, 0.5, &chrome), Some((400.0, 240.0)));
    }

    #[test]
    fn wild_positions_and_huge_text_are_refused() {
        for (x, y) in [
            (-0.1, 0.5),
            (0.5, 1.01),
            (f64::NAN, 0.0),
            (f64::INFINITY, 0.2),
            (1e308, 0.0),
        ] {
            assert_eq!(to_css(x, y, &meta()), None, "{x} {y}");
        }
        let m = json!({"type": "mouse", "event": "down", "x": 7e9, "y": 0.5});
        assert!(
            commands(parse(m), &meta())
                .unwrap_err()
                .contains("off the screen")
        );
        let t = json!({"type": "text", "text": "x".repeat(TEXT_MAX_CHARS + 1)});
        assert!(commands(parse(t), &meta()).unwrap_err().contains("parts"));
        let k = json!({"type": "key", "event": "down", "key": "Hyper"});
        assert!(
            commands(parse(k), &meta())
                .unwrap_err()
                .contains("unknown key")
        );
        // Nothing was lost blank: metadata with no size maps nothing.
        assert_eq!(to_css(0.5, 0.5, &ScreencastMetadata::default()), None);
    }

    #[test]
    fn a_click_a_key_a_paste_and_a_touch_become_real_input() {
        let down = commands(
            parse(json!({"type": "mouse", "event": "down", "x": 0.25, "y": 0.5, "click_count": 1})),
            &meta(),
        )
        .unwrap();
        assert_eq!(down[0].method, "Input.dispatchMouseEvent");
        assert_eq!(down[0].params["type"], "mousePressed");
        assert_eq!(down[0].params["x"], 200.0);
        assert_eq!(down[0].params["button"], "left");
        let key = commands(
            parse(json!({"type": "key", "event": "down", "key": "a"})),
            &meta(),
        )
        .unwrap();
        assert_eq!(key[0].params["text"], "a");
        let enter = commands(
            parse(json!({"type": "key", "event": "down", "key": "Enter"})),
            &meta(),
        )
        .unwrap();
        assert_eq!(enter[0].params["text"], "\r");
        let ctrl_a = commands(
            parse(json!({"type": "key", "event": "down", "key": "a", "modifiers": 2})),
            &meta(),
        )
        .unwrap();
        assert_eq!(ctrl_a[0].params["type"], "rawKeyDown");
        assert!(ctrl_a[0].params.get("text").is_none());
        // AltGr (Ctrl+Alt) types its character.
        let alt_gr = commands(
            parse(json!({"type": "key", "event": "down", "key": "@", "modifiers": 3})),
            &meta(),
        )
        .unwrap();
        assert_eq!(alt_gr[0].params["text"], "@");
        let paste = commands(parse(json!({"type": "text", "text": "héllo"})), &meta()).unwrap();
        assert_eq!(
            paste[0],
            command("Input.insertText", json!({"text": "héllo"}))
        );
        let touch = commands(
            parse(json!({"type": "touch", "event": "start", "points": [{"x": 0.5, "y": 0.5}]})),
            &meta(),
        )
        .unwrap();
        assert_eq!(touch[0].params["touchPoints"][0]["y"], 300.0);
    }
}
