//! A JSON (RFC 8259) parser for FHIR input, written for the boundary: values stay spans in
//! zeroizing buffers, errors are a code and a byte offset, never text.
//!
//! The result is a flat tree in pre-order ([`Tree`]): each node records its kind, its byte
//! offset in the input, the decoded key of an object member and the decoded text of a string
//! (or the exact source text of a number: decimals are never converted to binary floating
//! point), and the index just past its last descendant. Decoded keys and strings are appended
//! to one zeroizing buffer.
//!
//! Limits: nesting depth (`Limits::max_depth`), node count (`Limits::max_segments`), string
//! length (`Limits::max_field_bytes`); exceeding one is `CLI_INPUT_TOO_LARGE` at the offset where
//! it happened. Duplicate keys are reported (`JSON_DUPLICATE_KEY`, by offset) and kept in the
//! tree. Invalid UTF-8 is `CHARSET_INVALID_BYTES`. Parsing stops at the first syntax error.
//!
//! What it does not do: accept comments, trailing commas, `NaN` or single quotes (FHIR JSON is
//! strict JSON), or display any input byte.

use zeroize::Zeroizing;

use crate::diag::Code;
use crate::limits::Limits;

/// The kind of a JSON value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// `-1.50e3`
    Number,
    /// `true`
    True,
    /// `false`
    False,
    /// `null`
    Null,
}

/// A span of the decoded-text buffer.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Start (bytes).
    pub start: u32,
    /// Length (bytes).
    pub len: u32,
}

impl Span {
    /// The bytes of the span in `buf` (empty when out of range).
    pub fn of(self, buf: &[u8]) -> &[u8] {
        let s = self.start as usize;
        buf.get(s..s + self.len as usize).unwrap_or_default()
    }
}

/// One JSON value.
#[derive(Copy, Clone, Debug)]
pub struct Node {
    /// The kind.
    pub kind: Kind,
    /// Byte offset of the value in the input.
    pub offset: u32,
    /// Byte offset just past the value in the input.
    pub end_offset: u32,
    /// For an object member: the decoded key.
    pub key: Option<Span>,
    /// For an object member: the byte offset of its key.
    pub key_offset: u32,
    /// For strings: the decoded text; for numbers and booleans: the source text.
    pub text: Span,
    /// Index just past the last descendant.
    pub end: u32,
}

/// A parsed JSON text.
#[derive(Debug)]
pub struct Tree {
    /// Values in pre-order; `nodes[0]` is the top-level value.
    pub nodes: Vec<Node>,
    /// Decoded keys and strings, number texts.
    pub text: Zeroizing<Vec<u8>>,
    /// Byte offsets of keys repeated within one object (the later occurrences).
    pub duplicate_keys: Vec<u32>,
}

impl Tree {
    /// The direct children of node `i` (members of an object, items of an array).
    pub fn children(&self, i: u32) -> Children<'_> {
        let end = self.nodes.get(i as usize).map_or(i, |n| n.end);
        Children { tree: self, next: i + 1, end }
    }

    /// The node at `i`.
    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[(i as usize).min(self.nodes.len().saturating_sub(1))]
    }

    /// The decoded key of member `i`.
    pub fn key(&self, i: u32) -> &[u8] {
        self.node(i).key.map_or(&[][..], |k| k.of(&self.text))
    }

    /// The decoded text of string or number `i`.
    pub fn text(&self, i: u32) -> &[u8] {
        self.node(i).text.of(&self.text)
    }
}

/// Iterator over the direct children of a node.
#[derive(Debug)]
pub struct Children<'t> {
    tree: &'t Tree,
    next: u32,
    end: u32,
}

impl Iterator for Children<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.next >= self.end {
            return None;
        }
        let i = self.next;
        self.next = self.tree.nodes.get(i as usize).map_or(self.end, |n| n.end.max(i + 1));
        Some(i)
    }
}

/// A fatal parse error: a code and a byte offset.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// `MALFORMED_JSON`, `CHARSET_INVALID_BYTES` or `CLI_INPUT_TOO_LARGE`.
    pub code: Code,
    /// Byte offset in the input.
    pub offset: u64,
}

/// Parses one JSON text (surrounding white space allowed, nothing else after the value).
pub fn parse(input: &[u8], limits: &Limits) -> Result<Tree, Error> {
    parse_with(input, limits, false)
}

/// [`parse`], with JSON5's comments allowed where white space is when `comments`: `//` to the
/// end of the line and `/* ... */` (an unterminated one is `MALFORMED_JSON` at its start). The
/// reference validator's `allow-comments`; JSON itself (RFC 8259) has no comments.
pub fn parse_with(input: &[u8], limits: &Limits, comments: bool) -> Result<Tree, Error> {
    if input.len() > u32::MAX as usize - 1 {
        return Err(Error { code: Code::CLI_INPUT_TOO_LARGE, offset: 0 });
    }
    // Two parsers, so that JSON without comments (the common case) is read by code in which the
    // comment check is compiled out.
    if comments { run::<true>(input, limits) } else { run::<false>(input, limits) }
}

fn run<const COMMENTS: bool>(input: &[u8], limits: &Limits) -> Result<Tree, Error> {
    let mut p = Parser::<COMMENTS> {
        b: input,
        i: 0,
        nodes: Vec::new(),
        text: Zeroizing::new(Vec::with_capacity(input.len() / 2)),
        dups: Vec::new(),
        limits,
        // One check of the whole text instead of one per string (107,500 calls for a 3 MB
        // Bundle, 4% of its validation).
        utf8: std::str::from_utf8(input).is_ok(),
    };
    p.ws_or_comments()?;
    p.value(None, 0)?;
    p.ws_or_comments()?;
    if p.i < p.b.len() {
        return Err(p.err(Code::MALFORMED_JSON));
    }
    Ok(Tree { nodes: p.nodes, text: p.text, duplicate_keys: p.dups })
}

/// `COMMENTS`: JSON5 comments are white space ([`parse_with`]).
struct Parser<'a, const COMMENTS: bool> {
    b: &'a [u8],
    i: usize,
    nodes: Vec<Node>,
    text: Zeroizing<Vec<u8>>,
    dups: Vec<u32>,
    limits: &'a Limits,
    /// The whole text is UTF-8: so is every run of a string (a run is cut at ASCII bytes).
    utf8: bool,
}

impl<const COMMENTS: bool> Parser<'_, COMMENTS> {
    fn err(&self, code: Code) -> Error {
        Error { code, offset: self.i as u64 }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// White space, and the comments between when they are allowed.
    fn ws_or_comments(&mut self) -> Result<(), Error> {
        self.ws();
        while COMMENTS && self.b.get(self.i) == Some(&b'/') {
            let start = self.i;
            match self.b.get(self.i + 1) {
                Some(b'/') => {
                    let rest = self.b.get(self.i..).unwrap_or_default();
                    self.i += memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
                }
                Some(b'*') => {
                    let rest = self.b.get(self.i + 2..).unwrap_or_default();
                    match memchr::memmem::find(rest, b"*/") {
                        Some(k) => self.i += 2 + k + 2,
                        None => return Err(Error { code: Code::MALFORMED_JSON, offset: start as u64 }),
                    }
                }
                _ => return Ok(()),
            }
            self.ws();
        }
        Ok(())
    }

    fn push(&mut self, kind: Kind, key: Option<(Span, u32)>) -> Result<usize, Error> {
        if self.nodes.len() as u64 >= u64::from(self.limits.max_segments) {
            return Err(self.err(Code::CLI_INPUT_TOO_LARGE));
        }
        let n = self.nodes.len();
        self.nodes.push(Node {
            kind,
            offset: self.i as u32,
            end_offset: self.i as u32,
            key: key.map(|k| k.0),
            key_offset: key.map_or(0, |k| k.1),
            text: Span::default(),
            end: n as u32 + 1,
        });
        Ok(n)
    }

    fn value(&mut self, key: Option<(Span, u32)>, depth: u32) -> Result<(), Error> {
        let Some(&c) = self.b.get(self.i) else { return Err(self.err(Code::MALFORMED_JSON)) };
        match c {
            b'{' | b'[' => {
                if depth >= self.limits.max_depth {
                    return Err(self.err(Code::CLI_INPUT_TOO_LARGE));
                }
                let n = self.push(if c == b'{' { Kind::Object } else { Kind::Array }, key)?;
                self.i += 1;
                if c == b'{' {
                    self.object(depth)?
                } else {
                    self.array(depth)?
                }
                self.nodes[n].end = self.nodes.len() as u32;
                self.nodes[n].end_offset = self.i as u32;
            }
            b'"' => {
                let n = self.push(Kind::String, key)?;
                let span = self.string()?;
                self.nodes[n].text = span;
                self.nodes[n].end_offset = self.i as u32;
            }
            b't' | b'f' | b'n' => {
                let (word, kind): (&[u8], Kind) = match c {
                    b't' => (b"true", Kind::True),
                    b'f' => (b"false", Kind::False),
                    _ => (b"null", Kind::Null),
                };
                if !self.b[self.i..].starts_with(word) {
                    return Err(self.err(Code::MALFORMED_JSON));
                }
                let n = self.push(kind, key)?;
                self.i += word.len();
                self.nodes[n].end_offset = self.i as u32;
                if kind != Kind::Null {
                    let start = self.text.len();
                    self.text.extend_from_slice(word);
                    self.nodes[n].text = Span { start: start as u32, len: word.len() as u32 };
                }
            }
            b'-' | b'0'..=b'9' => {
                let n = self.push(Kind::Number, key)?;
                let start = self.i;
                self.number()?;
                let text_start = self.text.len();
                self.text.extend_from_slice(&self.b[start..self.i]);
                self.nodes[n].text = Span { start: text_start as u32, len: (self.i - start) as u32 };
                self.nodes[n].end_offset = self.i as u32;
            }
            _ => return Err(self.err(Code::MALFORMED_JSON)),
        }
        Ok(())
    }

    fn object(&mut self, depth: u32) -> Result<(), Error> {
        self.ws_or_comments()?;
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(());
        }
        let mut keys: Vec<(Span, u32)> = Vec::new();
        loop {
            self.ws_or_comments()?;
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err(Code::MALFORMED_JSON));
            }
            let key_offset = self.i as u32;
            let key = self.string()?;
            keys.push((key, key_offset));
            self.ws_or_comments()?;
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err(Code::MALFORMED_JSON));
            }
            self.i += 1;
            self.ws_or_comments()?;
            self.value(Some((key, key_offset)), depth + 1)?;
            self.ws_or_comments()?;
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.err(Code::MALFORMED_JSON)),
            }
        }
        if keys.len() > 1 {
            let text: &[u8] = &self.text;
            keys.sort_by(|a, b| a.0.of(text).cmp(b.0.of(text)).then(a.1.cmp(&b.1)));
            for w in keys.windows(2) {
                if w[0].0.of(text) == w[1].0.of(text) {
                    self.dups.push(w[1].1);
                }
            }
        }
        Ok(())
    }

    fn array(&mut self, depth: u32) -> Result<(), Error> {
        self.ws_or_comments()?;
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws_or_comments()?;
            self.value(None, depth + 1)?;
            self.ws_or_comments()?;
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err(Code::MALFORMED_JSON)),
            }
        }
    }

    fn number(&mut self) -> Result<(), Error> {
        let b = self.b;
        if b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
            }
            _ => return Err(self.err(Code::MALFORMED_JSON)),
        }
        if b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !b.get(self.i).is_some_and(u8::is_ascii_digit) {
                return Err(self.err(Code::MALFORMED_JSON));
            }
            while b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
        }
        if let Some(b'e' | b'E') = b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = b.get(self.i) {
                self.i += 1;
            }
            if !b.get(self.i).is_some_and(u8::is_ascii_digit) {
                return Err(self.err(Code::MALFORMED_JSON));
            }
            while b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
        }
        Ok(())
    }

    /// Reads a string starting at the opening quote; appends its decoded bytes to `text`.
    fn string(&mut self) -> Result<Span, Error> {
        self.i += 1; // opening quote
        let start = self.text.len();
        let max = self.limits.max_field_bytes as usize;
        loop {
            // Copy the run of plain bytes.
            let run_start = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            let run = &self.b[run_start..self.i];
            if !self.utf8 && std::str::from_utf8(run).is_err() {
                // Report the first bad byte.
                let bad = match std::str::from_utf8(run) {
                    Err(e) => run_start + e.valid_up_to(),
                    Ok(_) => run_start,
                };
                return Err(Error { code: Code::CHARSET_INVALID_BYTES, offset: bad as u64 });
            }
            self.text.extend_from_slice(run);
            if self.text.len() - start > max {
                return Err(self.err(Code::CLI_INPUT_TOO_LARGE));
            }
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(Span { start: start as u32, len: (self.text.len() - start) as u32 });
                }
                Some(b'\\') => {
                    self.i += 1;
                    let Some(&e) = self.b.get(self.i) else { return Err(self.err(Code::MALFORMED_JSON)) };
                    self.i += 1;
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0C),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => {
                            self.i -= 1;
                            return Err(self.err(Code::MALFORMED_JSON));
                        }
                    };
                    if let Some(s) = simple {
                        self.text.push(s);
                        continue;
                    }
                    let at = self.i;
                    let hi = self.hex4()?;
                    let cp = if (0xD800..0xDC00).contains(&hi) {
                        if self.b.get(self.i) != Some(&b'\\') || self.b.get(self.i + 1) != Some(&b'u') {
                            return Err(Error { code: Code::MALFORMED_JSON, offset: at as u64 });
                        }
                        self.i += 2;
                        let lo = self.hex4()?;
                        if !(0xDC00..0xE000).contains(&lo) {
                            return Err(Error { code: Code::MALFORMED_JSON, offset: at as u64 });
                        }
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    } else if (0xDC00..0xE000).contains(&hi) {
                        return Err(Error { code: Code::MALFORMED_JSON, offset: at as u64 });
                    } else {
                        hi
                    };
                    let ch = char::from_u32(cp).ok_or(Error { code: Code::MALFORMED_JSON, offset: at as u64 })?;
                    let mut buf = [0u8; 4];
                    self.text.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => return Err(self.err(Code::MALFORMED_JSON)),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let mut v = 0u32;
        for _ in 0..4 {
            let Some(&c) = self.b.get(self.i) else { return Err(self.err(Code::MALFORMED_JSON)) };
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.err(Code::MALFORMED_JSON)),
            };
            v = v * 16 + u32::from(d);
            self.i += 1;
        }
        Ok(v)
    }
}

/// Appends `bytes` (valid UTF-8 text) as a JSON string literal.
pub fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => crate::json::string(out, s),
        Err(_) => crate::json::string(out, &String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Tree, Error> {
        parse(s.as_bytes(), &Limits::default())
    }

    #[test]
    fn parses_and_keeps_decimals_exact() {
        let t = p(r#"{"a": [1, 2.50, -0.1e-7], "b": "x\u00e9\ud83d\ude00\n", "c": {"d": null, "e": true}}"#)
            .expect("valid");
        assert_eq!(t.nodes[0].kind, Kind::Object);
        let members: Vec<u32> = t.children(0).collect();
        assert_eq!(members.len(), 3);
        assert_eq!(t.key(members[0]), b"a");
        let items: Vec<u32> = t.children(members[0]).collect();
        assert_eq!(t.text(items[1]), b"2.50");
        assert_eq!(t.text(items[2]), b"-0.1e-7");
        assert_eq!(t.text(members[1]), "xé😀\n".as_bytes());
        assert!(t.duplicate_keys.is_empty());
    }

    #[test]
    fn reports_duplicate_keys_by_offset() {
        let t = p(r#"{"a":1,"b":2,"a":3}"#).expect("valid");
        assert_eq!(t.duplicate_keys, vec![13]);
    }

    #[test]
    fn rejects_bad_syntax_with_offsets() {
        assert_eq!(p("{\"a\":1,}").map(|_| ()), Err(Error { code: Code::MALFORMED_JSON, offset: 7 }));
        assert_eq!(p("[01]").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_JSON));
        assert_eq!(p("\"\\ud800\"").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_JSON));
        assert_eq!(p("\"a\u{1}\"").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_JSON));
        assert_eq!(p("{} x").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_JSON));
        assert_eq!(
            parse(b"\"\xff\"", &Limits::default()).map(|_| ()).map_err(|e| e.code),
            Err(Code::CHARSET_INVALID_BYTES)
        );
    }

    #[test]
    fn limits_are_errors_not_panics() {
        let deep = "[".repeat(100_000);
        assert_eq!(p(&deep).map(|_| ()).map_err(|e| e.code), Err(Code::CLI_INPUT_TOO_LARGE));
        let limits = Limits { max_segments: 10, ..Limits::default() };
        let many = format!("[{}1]", "1,".repeat(20));
        assert_eq!(parse(many.as_bytes(), &limits).map(|_| ()).map_err(|e| e.code), Err(Code::CLI_INPUT_TOO_LARGE));
        let limits = Limits { max_field_bytes: 4, ..Limits::default() };
        assert_eq!(parse(b"\"abcdef\"", &limits).map(|_| ()).map_err(|e| e.code), Err(Code::CLI_INPUT_TOO_LARGE));
    }
}
