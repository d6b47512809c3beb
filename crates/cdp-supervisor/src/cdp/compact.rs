//! Reading compact JSON in place: the fast paths of event params.
//!
//! Chromium sends params as compact JSON (no whitespace between tokens,
//! keys without escapes). A [`Compact`] cursor reads that shape straight
//! from the frame's text, borrowing its strings, and checks every value it
//! skips as strictly as serde_json would. Anything else — whitespace, an
//! escape where a plain string is wanted, nesting deeper than
//! [`DEPTH_MAX`] — makes it give `None`, and the caller parses the params
//! with serde instead: a fast path never decides what an unusual input
//! means, so it cannot mean something else than it did.

/// Nesting a [`Compact`] cursor follows before it gives up (serde_json's
/// own limit is 128).
pub const DEPTH_MAX: usize = 64;

/// A cursor over compact JSON text; see the module doc.
pub struct Compact<'a> {
    text: &'a str,
    i: usize,
    depth: usize,
}

impl<'a> Compact<'a> {
    /// A cursor at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Compact {
            text,
            i: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// Where the cursor is (a byte offset into the text).
    pub fn pos(&self) -> usize {
        self.i
    }

    /// The text between two positions.
    pub fn slice(&self, start: usize, end: usize) -> &'a str {
        &self.text[start..end]
    }

    /// Whether the whole text has been read.
    pub fn at_end(&self) -> bool {
        self.i == self.text.len()
    }

    /// The next byte, taken.
    pub fn byte(&mut self) -> Option<u8> {
        let c = *self.bytes().get(self.i)?;
        self.i += 1;
        Some(c)
    }

    /// Takes `c` if it comes next.
    pub fn eat(&mut self, c: u8) -> bool {
        let here = self.bytes().get(self.i) == Some(&c);
        if here {
            self.i += 1;
        }
        here
    }

    /// `c` must come next.
    pub fn expect(&mut self, c: u8) -> Option<()> {
        self.eat(c).then_some(())
    }

    /// Whether `null` comes next (taken if so).
    pub fn eat_null(&mut self) -> bool {
        let here = self.bytes()[self.i..].starts_with(b"null");
        if here {
            self.i += 4;
        }
        here
    }

    /// Opens an object or array (`{` or `[`, already taken): one level deeper.
    pub fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= DEPTH_MAX).then_some(())
    }

    /// Closes what [`Compact::enter`] opened.
    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// A string without escapes or control characters, its inside borrowed.
    pub fn plain_str(&mut self) -> Option<&'a str> {
        let b = self.bytes();
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let end = start + memchr::memchr2(b'"', b'\\', &b[start..])?;
        // serde_json refuses raw control characters in strings.
        if b[end] != b'"' || b[start..end].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i = end + 1;
        Some(&self.text[start..end])
    }

    /// Skips a string (escapes allowed), checked as serde_json checks one
    /// it ignores: valid escapes, no raw control characters.
    fn skip_str(&mut self) -> Option<()> {
        let b = self.bytes();
        let mut j = self.i + 1;
        loop {
            let k = j + memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
            if b[j..k].iter().any(|&c| c < 0x20) {
                return None;
            }
            if b[k] == b'"' {
                self.i = k + 1;
                return Some(());
            }
            j = match *b.get(k + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => k + 2,
                b'u' => {
                    let hex = b.get(k + 2..k + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    k + 6
                }
                _ => return None,
            };
        }
    }

    /// Skips a number, checked against JSON's grammar.
    fn skip_number(&mut self) -> Option<()> {
        let b = self.bytes();
        let digits = |j: usize| b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        let mut j = self.i;
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        match b.get(j)? {
            b'0' => j += 1,
            b'1'..=b'9' => j += digits(j),
            _ => return None,
        }
        if b.get(j) == Some(&b'.') {
            let n = digits(j + 1);
            if n == 0 {
                return None;
            }
            j += 1 + n;
        }
        if matches!(b.get(j), Some(b'e' | b'E')) {
            j += 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let n = digits(j);
            if n == 0 {
                return None;
            }
            j += n;
        }
        self.i = j;
        Some(())
    }

    /// Skips any JSON value, checked as serde_json checks one it ignores.
    pub fn skip_value(&mut self) -> Option<()> {
        let b = self.bytes();
        match *b.get(self.i)? {
            b'"' => self.skip_str(),
            b'{' => {
                self.i += 1;
                self.enter()?;
                if !self.eat(b'}') {
                    loop {
                        self.skip_str_key()?;
                        self.expect(b':')?;
                        self.skip_value()?;
                        match self.byte()? {
                            b',' => {}
                            b'}' => break,
                            _ => return None,
                        }
                    }
                }
                self.leave();
                Some(())
            }
            b'[' => {
                self.i += 1;
                self.enter()?;
                if !self.eat(b']') {
                    loop {
                        self.skip_value()?;
                        match self.byte()? {
                            b',' => {}
                            b']' => break,
                            _ => return None,
                        }
                    }
                }
                self.leave();
                Some(())
            }
            b't' | b'f' | b'n' => {
                let rest = &b[self.i..];
                let len = [&b"true"[..], b"false", b"null"]
                    .into_iter()
                    .find(|lit| rest.starts_with(lit))?
                    .len();
                self.i += len;
                Some(())
            }
            _ => self.skip_number(),
        }
    }

    fn skip_str_key(&mut self) -> Option<()> {
        if self.bytes().get(self.i) != Some(&b'"') {
            return None;
        }
        self.skip_str()
    }

    /// Skips a value and gives its text.
    pub fn raw_value(&mut self) -> Option<&'a str> {
        let start = self.i;
        self.skip_value()?;
        Some(&self.text[start..self.i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the cursor skips all of `text` as one value.
    fn skips(text: &str) -> bool {
        let mut c = Compact::new(text);
        c.skip_value().is_some() && c.at_end()
    }

    #[test]
    fn skips_what_serde_json_accepts_and_nothing_it_refuses() {
        for ok in [
            r#"{"a":[1,-2.5e+3,0,0.5,1E9,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9"],"b":{}}"#,
            "[]",
            "{}",
            r#""é ✓""#,
            "-0",
        ] {
            assert!(skips(ok), "{ok}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(ok).is_ok());
        }
        for bad in [
            "01",
            "1.",
            ".5",
            "1e",
            "-",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "{,}",
            r#"{"a"}"#,
            r#"{"a":1,}"#,
            r#""\x""#,
            r#""\u12g4""#,
            "\"a\u{1}b\"",
            "[1 ]",
            "[",
            r#"{"a":1"#,
            r#""open"#,
            "{1:2}",
        ] {
            assert!(!skips(bad), "{bad}");
        }
        // Too deep for the fast path: the caller's serde parse decides.
        let deep = format!("{}{}", "[".repeat(DEPTH_MAX + 1), "]".repeat(DEPTH_MAX + 1));
        assert!(!skips(&deep));
        let fine = format!("{}{}", "[".repeat(DEPTH_MAX), "]".repeat(DEPTH_MAX));
        assert!(skips(&fine));
    }

    #[test]
    fn plain_strings_are_borrowed_and_others_refused() {
        let mut c = Compact::new(r#""abc","a\"b""#);
        assert_eq!(c.plain_str(), Some("abc"));
        assert!(c.eat(b','));
        assert_eq!(c.plain_str(), None, "an escape");
        assert_eq!(Compact::new("\"a\u{1f}\"").plain_str(), None);
        assert_eq!(Compact::new("\"open").plain_str(), None);
        assert_eq!(Compact::new("7").plain_str(), None);
    }
}
