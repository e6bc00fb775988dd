//! A small JSON reader for tokenizer files: one value tree whose strings
//! borrow the file's text where they hold no escape, and whose numbers
//! stay as written until one is read as a whole number. The component
//! carries every line of code a download pays for: this reader, with no
//! generic code and no float parsing, is a fraction of the size of a
//! general one. The tests hold it to `serde_json` on every escape and
//! error, and the tokenizer tests on the files users have.

use std::borrow::Cow;

/// A JSON value; a number is kept as written.
#[derive(Debug, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number(&'a str),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// The value a missing field reads as.
static NULL: Json<'static> = Json::Null;

/// Arrays and objects nested deeper than this are refused, so a hostile
/// file cannot exhaust the stack.
const DEEPEST: usize = 128;

impl<'a> Json<'a> {
    /// Reads `text`, which must be one JSON value (with whitespace around).
    pub(crate) fn read(text: &'a str) -> Result<Json<'a>, String> {
        let mut r = Reader { text, at: 0 };
        let value = r.value(0)?;
        r.space();
        if r.at < text.len() {
            return Err(r.error("more after the JSON value"));
        }
        Ok(value)
    }

    /// The field `key` of an object (the first, if it is there twice), or
    /// null.
    pub(crate) fn get(&self, key: &str) -> &Json<'a> {
        match self {
            Json::Object(fields) => fields
                .iter()
                .find(|(k, _)| k == key)
                .map_or(&NULL, |(_, v)| v),
            _ => &NULL,
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub(crate) fn is_true(&self) -> bool {
        matches!(self, Json::Bool(true))
    }

    /// Whether this is a number other than zero.
    pub(crate) fn is_nonzero(&self) -> bool {
        matches!(self, Json::Number(n) if n.bytes().take_while(|&b| b != b'e' && b != b'E').any(|b| b.is_ascii_digit() && b != b'0'))
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// A whole number written without a sign, a fraction or an exponent.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.parse().ok(),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn as_object(&self) -> Option<&[(Cow<'a, str>, Json<'a>)]> {
        match self {
            Json::Object(fields) => Some(fields),
            _ => None,
        }
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, what: &str) -> String {
        format!("not JSON at byte {}: {what}", self.at)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Takes `word` if the text goes on with it.
    fn word(&mut self, word: &str) -> bool {
        let found = self.text.as_bytes()[self.at..].starts_with(word.as_bytes());
        if found {
            self.at += word.len();
        }
        found
    }

    fn value(&mut self, depth: usize) -> Result<Json<'a>, String> {
        self.space();
        let Some(c) = self.peek() else {
            return Err(self.error("a value was expected"));
        };
        match c {
            b'{' | b'[' if depth >= DEEPEST => Err(self.error("nested too deeply")),
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => Ok(Json::String(self.string()?)),
            b'-' | b'0'..=b'9' => self.number(),
            _ if self.word("null") => Ok(Json::Null),
            _ if self.word("true") => Ok(Json::Bool(true)),
            _ if self.word("false") => Ok(Json::Bool(false)),
            _ => Err(self.error("a value was expected")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json<'a>, String> {
        self.at += 1;
        let mut fields = Vec::new();
        self.space();
        if self.word("}") {
            return Ok(Json::Object(fields));
        }
        loop {
            self.space();
            if self.peek() != Some(b'"') {
                return Err(self.error("a field name was expected"));
            }
            let key = self.string()?;
            self.space();
            if !self.word(":") {
                return Err(self.error("`:` was expected"));
            }
            fields.push((key, self.value(depth)?));
            self.space();
            if self.word("}") {
                return Ok(Json::Object(fields));
            }
            if !self.word(",") {
                return Err(self.error("`,` or `}` was expected"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json<'a>, String> {
        self.at += 1;
        let mut items = Vec::new();
        self.space();
        if self.word("]") {
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.space();
            if self.word("]") {
                return Ok(Json::Array(items));
            }
            if !self.word(",") {
                return Err(self.error("`,` or `]` was expected"));
            }
        }
    }

    /// Digits from here: whether there was one.
    fn digits(&mut self) -> bool {
        let from = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at > from
    }

    /// A number as JSON writes it: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<Json<'a>, String> {
        let start = self.at;
        self.word("-");
        let leading_zero = self.peek() == Some(b'0');
        let whole_from = self.at;
        if !self.digits() || (leading_zero && self.at - whole_from > 1) {
            return Err(self.error("a number was expected"));
        }
        if self.word(".") && !self.digits() {
            return Err(self.error("digits were expected after `.`"));
        }
        if self.word("e") || self.word("E") {
            let _ = self.word("+") || self.word("-");
            if !self.digits() {
                return Err(self.error("digits were expected in the exponent"));
            }
        }
        Ok(Json::Number(crate::text::cut(self.text, start..self.at)))
    }

    /// A string, borrowed from the text unless it holds an escape.
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        self.at += 1;
        let mut owned: Option<String> = None;
        loop {
            // Up to the next quote, escape or control character.
            let from = self.at;
            let bytes = self.text.as_bytes();
            while bytes
                .get(self.at)
                .is_some_and(|&b| b != b'"' && b != b'\\' && b >= 0x20)
            {
                self.at += 1;
            }
            let run = crate::text::cut(self.text, from..self.at);
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(match owned {
                        None => Cow::Borrowed(run),
                        Some(mut s) => {
                            s.push_str(run);
                            Cow::Owned(s)
                        }
                    });
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = self.escape()?;
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(run);
                    s.push(c);
                }
                Some(_) => return Err(self.error("a control character in a string")),
                None => return Err(self.error("the string is not closed")),
            }
        }
    }

    /// The character an escape (after its `\`) stands for.
    fn escape(&mut self) -> Result<char, String> {
        let Some(c) = self.peek() else {
            return Err(self.error("the string is not closed"));
        };
        self.at += 1;
        let simple = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode(),
            _ => return Err(self.error("a bad escape")),
        };
        Ok(simple)
    }

    /// A `\u` escape's character (after the `u`), with the low surrogate
    /// that must follow a high one.
    fn unicode(&mut self) -> Result<char, String> {
        let high = self.hex4()?;
        let c = match high {
            0xD800..=0xDBFF => {
                if !self.word("\\u") {
                    return Err(self.error("a lone surrogate"));
                }
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.error("a lone surrogate"));
                }
                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            }
            c => c,
        };
        char::from_u32(c).ok_or_else(|| self.error("a lone surrogate"))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut n = 0;
        for _ in 0..4 {
            let digit = self.peek().and_then(|b| char::from(b).to_digit(16));
            let Some(d) = digit else {
                return Err(self.error("four hex digits were expected"));
            };
            n = n * 16 + d;
            self.at += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` read by both readers: the same tree, or refused by both.
    fn same(text: &str) {
        let ours = Json::read(text);
        let theirs: Result<serde_json::Value, _> = serde_json::from_str(text);
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => assert!(equal(&ours, &theirs), "{text:?}"),
            (Err(_), Err(_)) => {}
            (ours, theirs) => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
        }
    }

    /// Whether the two trees hold the same values.
    fn equal(ours: &Json, theirs: &serde_json::Value) -> bool {
        use serde_json::Value as V;
        match (ours, theirs) {
            (Json::Null, V::Null) => true,
            (Json::Bool(a), V::Bool(b)) => a == b,
            (Json::Number(_), V::Number(m)) => {
                ours.as_u64() == m.as_u64() && ours.is_nonzero() == (m.as_f64() != Some(0.0))
            }
            (Json::String(a), V::String(b)) => a == b,
            (Json::Array(a), V::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
            }
            (Json::Object(a), V::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k.as_ref()).is_some_and(|w| equal(v, w)))
            }
            _ => false,
        }
    }

    #[test]
    fn it_reads_as_serde_json_does() {
        for text in [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "12",
            "-3.5e-2",
            "1E+9",
            "1.0",
            "0.0",
            "0.001",
            "18446744073709551616",
            "\"\"",
            "\"plain\"",
            r#""\"\\\/\b\f\n\r\t""#,
            r#""\u0041\u00e9\u4e2d\u0000""#,
            r#""\ud83d\ude00""#,
            r#""a\nb""#,
            r#""ĠĊ naïve 東京""#,
            "[]",
            "[1, [2, [3]], {}]",
            r#"{"a": 1, "b": [true, null], "c": {"d": "e"}}"#,
            r#"{"Ġthe": 279, "\u0120a": 264, "": 0}"#,
            // Each refused by both.
            "",
            "nul",
            "[1,]",
            "{\"a\" 1}",
            "{\"a\": 1,}",
            "01",
            "1.",
            "-",
            "1e",
            "\"abc",
            r#""\x""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            "\"a\u{1}b\"",
            "[1] 2",
            "{1: 2}",
            r#""\u12""#,
            r#""\u12G4""#,
            "tru",
            "[",
            "{",
        ] {
            same(text);
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = "[".repeat(100_000);
        assert!(Json::read(&deep).unwrap_err().contains("nested too deeply"));
        let fine = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(Json::read(&fine).is_ok());
    }

    #[test]
    fn strings_without_escapes_borrow_the_text() {
        let Json::Array(items) = Json::read(r#"["abc", "a\nb"]"#).unwrap() else {
            panic!("not an array")
        };
        assert!(matches!(&items[0], Json::String(Cow::Borrowed("abc"))));
        assert!(matches!(&items[1], Json::String(Cow::Owned(s)) if s == "a\nb"));
    }
}
