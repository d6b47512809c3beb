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

/// Bytes [`string_stop`] looks at a word at a time before it hands the
/// rest to memchr: most CDP strings (keys, ids, types, short messages) end
/// within them, and for those memchr's setup costs more than the search
/// (134 instructions a call for an 8-byte string, callgrind).
const SHORT_STRING: usize = 32;

/// The index of the first byte at or after `from` that ends or interrupts
/// a string's plain run: `"`, `\` or a control character (< 0x20, which
/// serde_json refuses in strings). `None` when there is none.
pub fn string_stop(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    // Each mask flags the first byte below `n` exactly (bytes after it
    // may be flagged too, by the borrow), so its lowest flag is the answer.
    let below = |v: u64, n: u8| v.wrapping_sub(ONES * u64::from(n)) & !v & HIGH;
    let mut j = from;
    while j + 8 <= b.len().min(from + SHORT_STRING) {
        let v = u64::from_le_bytes(b[j..j + 8].try_into().expect("8 bytes"));
        let m = below(v ^ (ONES * u64::from(b'"')), 1)
            | below(v ^ (ONES * u64::from(b'\\')), 1)
            | below(v, 0x20);
        if m != 0 {
            return Some(j + (m.trailing_zeros() / 8) as usize);
        }
        j += 8;
    }
    let rest = b.get(j..)?;
    let k = j + memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let stop = match b[j..k].iter().position(|&c| c < 0x20) {
        Some(c) => j + c,
        None => k,
    };
    (stop < b.len()).then_some(stop)
}

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

    /// Reads all of `text` with `read`; `None` unless it reads it to the end.
    pub fn whole<T>(text: &'a str, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let mut r = Compact::new(text);
        let value = read(&mut r)?;
        r.at_end().then_some(value)
    }

    /// Reads the object at the cursor: `field` gets each key (plain) with
    /// the cursor on its value, and must read or skip that value.
    pub fn fields(
        &mut self,
        mut field: impl FnMut(&'a str, &mut Self) -> Option<()>,
    ) -> Option<()> {
        self.members(b'{', b'}', |r| {
            let key = r.plain_str()?;
            r.expect(b':')?;
            field(key, r)
        })
    }

    /// Reads the array at the cursor: `item` reads each element, the
    /// cursor on it.
    pub fn items(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.members(b'[', b']', item)
    }

    /// Reads the object or array at the cursor (`open` … `close`, members
    /// separated by commas): `member` reads each.
    fn members(
        &mut self,
        open: u8,
        close: u8,
        mut member: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.expect(open)?;
        self.enter()?;
        if !self.eat(close) {
            loop {
                member(self)?;
                match self.byte()? {
                    b',' => {}
                    b if b == close => break,
                    _ => return None,
                }
            }
        }
        self.leave();
        Some(())
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

    /// A value that may be `null`: `Some(None)` for `null` (taken), else
    /// what `read` reads, `None` when it fails.
    pub fn or_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.eat_null() {
            Some(None)
        } else {
            read(self).map(Some)
        }
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
        // serde_json refuses raw control characters in strings.
        let end = string_stop(b, start)?;
        if b[end] != b'"' {
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
            let k = string_stop(b, j)?;
            if b[k] < 0x20 {
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
            b'{' => self.members(b'{', b'}', |r| {
                r.skip_str_key()?;
                r.expect(b':')?;
                r.skip_value()
            }),
            b'[' => self.items(Self::skip_value),
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
    fn string_stop_finds_the_first_quote_escape_or_control() {
        // Every length around the word and the short run, every stop
        // byte at every place, after plain ASCII and multi-byte text.
        for filler in ["a", "é"] {
            for len in 0..48 {
                let head = filler.repeat(len);
                for stop in ["\"", "\\", "\u{1f}", "\n", "\u{0}"] {
                    let text = format!("{head}{stop}zz\"");
                    assert_eq!(
                        string_stop(text.as_bytes(), 0),
                        Some(head.len()),
                        "{text:?}"
                    );
                }
                assert_eq!(string_stop(head.as_bytes(), 0), None);
            }
        }
        assert_eq!(string_stop(b"ab", 9), None);
        assert_eq!(string_stop(b"ab\"", 1), Some(2));
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
