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
#[inline]
pub fn string_stop(b: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    // Each mask flags the first byte below `n` exactly (bytes after it
    // may be flagged too, by the borrow), so its lowest flag is the answer.
    let below = |v: u64, n: u8| v.wrapping_sub(ONES * u64::from(n)) & !v & HIGH;
    let mut j = from;
    let short_end = b.len().min(from + SHORT_STRING);
    while j + 8 <= short_end {
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

    /// A number, as serde_json reads it into an `f64`; `None` when the
    /// text is not a number.
    ///
    /// Read here when its digits and exponent are few enough that the
    /// value is one correctly rounded operation on exact operands
    /// (mantissa up to 2^53, power of ten up to 10^22) — the operation
    /// serde_json itself does for them (`f64_from_parts`), so the result is
    /// the same bit for bit. Any other number goes to serde_json (a
    /// `timestamp` of the console flood cost a fifth of its parse there).
    pub fn number_f64(&mut self) -> Option<f64> {
        let start = self.i;
        let (end, exact) = scan_number(self.bytes(), start)?;
        self.i = end;
        exact.or_else(|| serde_json::from_slice(&self.bytes()[start..end]).ok())
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

/// Digits a `u64` mantissa holds without overflow (10^19 < 2^64).
const MANTISSA_DIGITS: usize = 19;
/// The largest mantissa exact in an `f64` (2^53): a Chromium timestamp
/// in milliseconds to three decimals (16 digits) fits; longer ones go to
/// serde_json.
const EXACT_MANTISSA: u64 = 1 << 53;
/// The powers of ten exact in an `f64` (10^22 < 2^53 · 2^22 fits its
/// mantissa times a power of two).
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The end of the JSON number at `start` (checked against the grammar),
/// and its value when one exact operation gives it
/// ([`Compact::number_f64`]); `None` when no number starts there.
fn scan_number(b: &[u8], start: usize) -> Option<(usize, Option<f64>)> {
    let mut j = start;
    let negative = b.get(j) == Some(&b'-');
    j += usize::from(negative);
    // The digits of the mantissa (integer and fraction); past
    // MANTISSA_DIGITS the sum wraps, and is not used.
    let mut mantissa = 0u64;
    let mut digits = 0usize;
    let mut take_digit = |c: u8| {
        mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        digits += 1;
    };
    match *b.get(j)? {
        b'0' => {
            take_digit(b'0');
            j += 1;
        }
        b'1'..=b'9' => {
            while let Some(&c) = b.get(j).filter(|c| c.is_ascii_digit()) {
                take_digit(c);
                j += 1;
            }
        }
        _ => return None,
    }
    let mut exponent: i64 = 0;
    if b.get(j) == Some(&b'.') {
        j += 1;
        let from = j;
        while let Some(&c) = b.get(j).filter(|c| c.is_ascii_digit()) {
            take_digit(c);
            j += 1;
        }
        if j == from {
            return None;
        }
        exponent = -((j - from) as i64);
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        let sign = match b.get(j) {
            Some(b'-') => -1,
            _ => 1,
        };
        j += usize::from(matches!(b.get(j), Some(b'+' | b'-')));
        let from = j;
        let mut e: i64 = 0;
        while let Some(&c) = b.get(j).filter(|c| c.is_ascii_digit()) {
            e = (e * 10 + i64::from(c - b'0')).min(1 << 20);
            j += 1;
        }
        if j == from {
            return None;
        }
        exponent += sign * e;
    }
    let exact = Some(mantissa)
        .filter(|&m| digits <= MANTISSA_DIGITS && m <= EXACT_MANTISSA)
        .zip(EXACT_POW10.get(exponent.unsigned_abs() as usize));
    let Some((m, &pow)) = exact else {
        return Some((j, None));
    };
    let value = if exponent >= 0 {
        m as f64 * pow
    } else {
        m as f64 / pow
    };
    Some((j, Some(if negative { -value } else { value })))
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
        for bad in MALFORMED_NUMBERS.into_iter().chain([
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
        ]) {
            assert!(!skips(bad), "{bad}");
        }
        // Too deep for the fast path: the caller's serde parse decides.
        let deep = format!("{}{}", "[".repeat(DEPTH_MAX + 1), "]".repeat(DEPTH_MAX + 1));
        assert!(!skips(&deep));
        let fine = format!("{}{}", "[".repeat(DEPTH_MAX), "]".repeat(DEPTH_MAX));
        assert!(skips(&fine));
    }

    /// Numbers JSON's grammar refuses: a reader must refuse them as
    /// serde_json does.
    const MALFORMED_NUMBERS: [&str; 6] = ["01", "1.", ".5", "1e", "-", "+1"];

    /// `number_f64` of `text` (the whole of it), and serde_json's `f64`.
    fn both_f64(text: &str) -> (Option<f64>, Option<f64>) {
        let fast = Compact::whole(text, Compact::number_f64);
        (fast, serde_json::from_str::<f64>(text).ok())
    }

    #[test]
    fn numbers_read_in_place_are_serde_jsons_bit_for_bit() {
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "-0.0",
            "5",
            "1.5",
            "1.7e12",
            "1733080000123.456",
            "1E9",
            "1e+3",
            "1e-3",
            "0.1",
            "0.30000000000000004",
            "123456789012345",
            "1234567890123456",
            "12345678901234567890",
            "1e22",
            "1e23",
            "1e-22",
            "1e-23",
            "9007199254740993",
            "4.9e-324",
            "1.7976931348623157e308",
            "2.2250738585072014e-308",
            "0.000001",
            "1e400",
            "-1e400",
        ]
        .into_iter()
        .chain(MALFORMED_NUMBERS)
        .map(str::to_string)
        .collect();
        // Timestamps as Chromium prints them (milliseconds, up to three
        // decimals), and a spread of mantissas and exponents.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mantissa = x % 10_000_000_000_000_000;
            let digits = mantissa.to_string();
            let point = (x >> 56) as usize % (digits.len() + 1);
            let exp = ((x >> 40) % 61) as i64 - 30;
            let int = if point == 0 { "0" } else { &digits[..point] };
            cases.push(match &digits[point..] {
                "" => int.to_owned(),
                frac => format!("{int}.{frac}"),
            });
            cases.push(format!("{digits}e{exp}"));
            cases.push(format!("-{}.{:03}", x % 2_000_000_000_000, x % 1000));
        }
        for chromium in ["1733080000123.456", "1.7e12", "5", "-0"] {
            let exact = scan_number(chromium.as_bytes(), 0).and_then(|(_, v)| v);
            assert!(exact.is_some(), "{chromium} is read without serde_json");
        }
        for text in &cases {
            let (fast, serde) = both_f64(text);
            assert_eq!(fast.map(f64::to_bits), serde.map(f64::to_bits), "{text}");
        }
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
