//! Syntax and range of the FHIR R4 primitive types (the lexical space of section 2.24.0.1).
//!
//! Each check is written by hand to run in linear time with no allocation, and agrees with the
//! regular expression the core definitions give for the type (a unit test compares them on a
//! corpus); where the definitions' regex is looser than the prose of the specification, the
//! prose wins: calendar dates must exist (no 30 February), integers fit 32 bits, no value is
//! empty, strings hold no control character other than TAB, CR and LF and at most 1 MB, and a
//! `uri` that starts with `urn:uuid:` or `urn:oid:` is a UUID or an OID.
//!
//! What it does not do: check `xhtml` content beyond its outer `div` (see the FHIRPath
//! `htmlChecks()`), resolve URIs, or decode base64.

/// True when `v` is a valid lexical value of the primitive type `ty` (unknown types pass).
pub fn is_valid(ty: &str, v: &[u8]) -> bool {
    Check::of(ty).is_valid(v)
}

/// The check of one primitive type, resolved once from the type's name ([`Check::of`]) so that
/// checking a value does not match names.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// `boolean`
    Boolean,
    /// `integer`
    Integer,
    /// `unsignedInt`
    UnsignedInt,
    /// `positiveInt`
    PositiveInt,
    /// `decimal`
    Decimal,
    /// `string`, `markdown`
    String,
    /// `code`
    Code,
    /// `id`
    Id,
    /// `uri`, `url`, `canonical`
    Uri,
    /// `oid`
    Oid,
    /// `uuid`
    Uuid,
    /// `base64Binary`
    Base64Binary,
    /// `instant`
    Instant,
    /// `dateTime`
    DateTime,
    /// `date`
    Date,
    /// `time`
    Time,
    /// `xhtml`
    Xhtml,
    /// Any other type: every non-empty value passes.
    Other,
}

impl Check {
    /// The check of the primitive type named `ty`.
    pub fn of(ty: &str) -> Check {
        match ty {
            "boolean" => Check::Boolean,
            "integer" => Check::Integer,
            "unsignedInt" => Check::UnsignedInt,
            "positiveInt" => Check::PositiveInt,
            "decimal" => Check::Decimal,
            "string" | "markdown" => Check::String,
            "code" => Check::Code,
            "id" => Check::Id,
            "uri" | "url" | "canonical" => Check::Uri,
            "oid" => Check::Oid,
            "uuid" => Check::Uuid,
            "base64Binary" => Check::Base64Binary,
            "instant" => Check::Instant,
            "dateTime" => Check::DateTime,
            "date" => Check::Date,
            "time" => Check::Time,
            "xhtml" => Check::Xhtml,
            _ => Check::Other,
        }
    }

    /// True when `v` is a valid lexical value of the type.
    #[inline(always)]
    pub fn is_valid(self, v: &[u8]) -> bool {
        if v.is_empty() {
            return false;
        }
        match self {
            Check::Boolean => v == b"true" || v == b"false",
            Check::Integer => integer(v).is_some_and(|n| i32::try_from(n).is_ok()),
            Check::UnsignedInt => {
                !v.starts_with(b"-") && integer(v).is_some_and(|n| (0..=i64::from(i32::MAX)).contains(&n))
            }
            Check::PositiveInt => {
                v[0] != b'-' && v[0] != b'0' && integer(v).is_some_and(|n| (1..=i64::from(i32::MAX)).contains(&n))
            }
            Check::Decimal => decimal(v),
            // Printable ASCII (the common case) is valid as it is.
            Check::String => (v.len() <= MAX_STRING && all_at_least(v, 0x20)) || string(v),
            // Without white space at all, a code is one word.
            Check::Code => all_at_least(v, 0x21) || code(v),
            Check::Id => v.len() <= 64 && v.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.'),
            Check::Uri => {
                let no_space = if all_at_least(v, 0x21) {
                    true
                } else if v.is_ascii() {
                    !v.iter().any(|&b| ascii_white_space(b))
                } else {
                    std::str::from_utf8(v).is_ok_and(|s| !s.chars().any(char::is_whitespace))
                };
                no_space && urn_well_formed(v)
            }
            Check::Oid => oid(v),
            Check::Uuid => uuid(v),
            Check::Base64Binary => base64(v),
            Check::Instant => date_time(v, true),
            Check::DateTime => date_time(v, false),
            Check::Date => date(v).is_some_and(|rest| rest.is_empty()),
            Check::Time => time(v).is_some_and(|rest| rest.is_empty()),
            Check::Xhtml => xhtml(v),
            Check::Other => true,
        }
    }
}

/// True when every byte of `v` is ASCII and at least `lo` (`lo` at most 0x80): eight bytes at a
/// time. For bytes below 0x80, adding `0x80 - lo` sets the high bit exactly when the byte is at
/// least `lo`, and never carries into the next byte.
fn all_at_least(v: &[u8], lo: u8) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let add = ONES * u64::from(0x80u8.saturating_sub(lo));
    let mut chunks = v.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        if w & HIGH != 0 || (w + add) & HIGH != HIGH {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| b >= lo && b < 0x80)
}

/// Narrative: one well-formed XML element, a `div` in the XHTML namespace (what the XML syntax
/// requires of `Narrative.div`; the JSON syntax carries the same element as a string). What may
/// appear inside it is the business of the invariants txt-1 and txt-2.
fn xhtml(v: &[u8]) -> bool {
    let limits = crate::limits::Limits { max_input_bytes: v.len() as u64 + 1, ..crate::limits::Limits::default() };
    match crate::formats::xml::parse(v, &limits) {
        Ok(tree) => {
            let root = tree.root();
            tree.namespace_is(root.ns, super::read_xml::XHTML_NS) && root.local.of(v) == b"div"
        }
        Err(_) => false,
    }
}

/// `-?(0|[1-9][0-9]*)` as a number (None when malformed or beyond i64).
pub fn integer(v: &[u8]) -> Option<i64> {
    let (neg, digits) = match v.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, v),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    let mut n: i64 = 0;
    for d in digits {
        n = n * 10 + i64::from(d - b'0');
    }
    Some(if neg { -n } else { n })
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
pub fn decimal(v: &[u8]) -> bool {
    let mut i = usize::from(v.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let s = *i;
        while v.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - s
    };
    let start = i;
    let n = digits(&mut i);
    if n == 0 || (n > 1 && v[start] == b'0') {
        return false;
    }
    if v.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if let Some(b'e' | b'E') = v.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = v.get(i) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == v.len()
}

/// The longest `string` value, in characters: "strings SHALL NOT exceed 1MB (1024*1024
/// characters) in size" (R4 datatypes). A value of at most that many bytes has at most that
/// many characters; a longer one is counted.
const MAX_STRING: usize = 1024 * 1024;

fn string(v: &[u8]) -> bool {
    std::str::from_utf8(v).is_ok_and(|s| v.len() <= MAX_STRING || s.chars().count() <= MAX_STRING)
        && v.iter().all(|&b| b >= 0x20 || b == b'\t' || b == b'\r' || b == b'\n')
}

/// `char::is_whitespace` for an ASCII byte: TAB, LF, VT, FF, CR and space.
fn ascii_white_space(b: u8) -> bool {
    b == b' ' || (0x09..=0x0D).contains(&b)
}

/// `[^\s]+(\s[^\s]+)*`: no leading, trailing or doubled white space.
fn code(v: &[u8]) -> bool {
    if v.is_ascii() {
        return single_spaced(v.iter().map(|&b| ascii_white_space(b)));
    }
    std::str::from_utf8(v).is_ok_and(|s| single_spaced(s.chars().map(char::is_whitespace)))
}

/// Given whether each character is white space: none leading, trailing or doubled, and at
/// least one that is not.
fn single_spaced(spaces: impl Iterator<Item = bool>) -> bool {
    let mut prev_space = true;
    for space in spaces {
        if space && prev_space {
            return false;
        }
        prev_space = space;
    }
    !prev_space
}

fn oid(v: &[u8]) -> bool {
    let Some(rest) = v.strip_prefix(b"urn:oid:") else { return false };
    let mut arcs = rest.split(|b| *b == b'.');
    let first_ok = matches!(arcs.next(), Some([b'0'..=b'2']));
    let mut n = 0;
    for arc in arcs {
        n += 1;
        if arc.is_empty() || !arc.iter().all(u8::is_ascii_digit) || (arc.len() > 1 && arc[0] == b'0') {
            return false;
        }
    }
    first_ok && n > 0
}

/// A `urn:uuid:` or `urn:oid:` URI is a UUID or an OID, as the `uuid` and `oid` types and the
/// URI section of the R4 data types write them ("UUIDs (urn:uuid:53fefa32-...) and OIDs
/// (urn:oid:...)"); the UUID's hex digits in either case (RFC 4122 reads them so). What
/// follows a `|` (a canonical's version) or a `#` (a fragment) is not part of it. Any other URI
/// passes.
fn urn_well_formed(v: &[u8]) -> bool {
    if !v.starts_with(b"urn:") {
        return true;
    }
    if let Some(rest) = v.strip_prefix(b"urn:uuid:") {
        let (id, tail) = rest.split_at(rest.len().min(36));
        return id.len() == 36
            && tail.first().is_none_or(|&b| b == b'|' || b == b'#')
            && id
                .iter()
                .enumerate()
                .all(|(i, &b)| if matches!(i, 8 | 13 | 18 | 23) { b == b'-' } else { b.is_ascii_hexdigit() });
    }
    if v.starts_with(b"urn:oid:") {
        let end = v.iter().position(|&b| b == b'|' || b == b'#').unwrap_or(v.len());
        return oid(&v[..end]);
    }
    true
}

fn uuid(v: &[u8]) -> bool {
    let Some(rest) = v.strip_prefix(b"urn:uuid:") else { return false };
    rest.len() == 36
        && rest.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

/// `(\s*([0-9a-zA-Z\+/=]){4}\s*)+`: groups of four, white space only between groups. This is the
/// specification's regex for `base64Binary`, kept as written rather than replaced by a decoder:
/// it accepts what a base64 decoder refuses (`=` inside a group, `A===`), and the verdict must
/// stay the regex's. Decoding (the `Attachment.size` rule) is the `base64` crate's, in `rules`.
fn base64(v: &[u8]) -> bool {
    let mut n = 0usize;
    for &b in v {
        if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=' {
            n += 1;
        } else if b.is_ascii_whitespace() {
            if n % 4 != 0 {
                return false;
            }
        } else {
            return false;
        }
    }
    n > 0 && n % 4 == 0
}

fn two(v: &[u8], i: usize) -> Option<u32> {
    match (v.get(i), v.get(i + 1)) {
        (Some(a @ b'0'..=b'9'), Some(b @ b'0'..=b'9')) => Some(u32::from(a - b'0') * 10 + u32::from(b - b'0')),
        _ => None,
    }
}

/// Reads `YYYY(-MM(-DD)?)?`; returns the rest of the input.
fn date(v: &[u8]) -> Option<&[u8]> {
    let year = v.get(..4)?;
    if !year.iter().all(u8::is_ascii_digit) || year == b"0000" {
        return None;
    }
    let y: u32 = year.iter().fold(0, |a, d| a * 10 + u32::from(d - b'0'));
    let rest = &v[4..];
    if rest.first() != Some(&b'-') {
        return Some(rest);
    }
    let m = two(rest, 1)?;
    if !(1..=12).contains(&m) {
        return None;
    }
    let rest = &rest[3..];
    if rest.first() != Some(&b'-') {
        return Some(rest);
    }
    let d = two(rest, 1)?;
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if d == 0 || d > days {
        return None;
    }
    Some(&rest[3..])
}

/// Reads `hh:mm:ss(.s+)?`; returns the rest.
fn time(v: &[u8]) -> Option<&[u8]> {
    let h = two(v, 0)?;
    let m = two(v, 3)?;
    let s = two(v, 6)?;
    if v.get(2) != Some(&b':') || v.get(5) != Some(&b':') || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let mut i = 8;
    if v.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while v.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    Some(&v[i..])
}

/// `Z` or `(+|-)hh:mm` with hh 00..13 (or 14:00).
fn zone(v: &[u8]) -> bool {
    if v == b"Z" {
        return true;
    }
    if v.len() != 6 || !matches!(v[0], b'+' | b'-') || v[3] != b':' {
        return false;
    }
    match (two(v, 1), two(v, 4)) {
        (Some(14), Some(0)) => true,
        (Some(h), Some(m)) => h <= 13 && m <= 59,
        _ => false,
    }
}

fn date_time(v: &[u8], instant: bool) -> bool {
    let Some(rest) = date(v) else { return false };
    if rest.is_empty() {
        return !instant;
    }
    // A time needs a full date.
    if v.len() - rest.len() != 10 {
        return false;
    }
    let Some(rest) = rest.strip_prefix(b"T") else { return false };
    let Some(rest) = time(rest) else { return false };
    zone(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::fhir::definitions as defs;

    const SAMPLES: &[&str] = &[
        "",
        "0",
        "-0",
        "00",
        "1",
        "+1",
        "-1",
        "2147483647",
        "2147483648",
        "-2147483648",
        "1.0",
        "1.",
        ".5",
        "1e5",
        "1E+05",
        "-0.0",
        "01.5",
        "true",
        "false",
        "True",
        "abc",
        "a b",
        " a",
        "a ",
        "a  b",
        "a\tb",
        "ab\u{1}",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "abc-1.2",
        "abc_1",
        "urn:oid:1.2.3",
        "urn:oid:3.1",
        "urn:oid:1.02",
        "urn:oid:1",
        "urn:uuid:c757873d-ec9a-4326-a141-556f43239520",
        "urn:uuid:C757873D-EC9A-4326-A141-556F43239520",
        "QUJD",
        "QUJDRA==",
        "QUJ",
        "QU JD",
        "QUJD RA==",
        "QUJD\nRA==",
        "1970",
        "0000",
        "1970-13",
        "1970-02-29",
        "2000-02-29",
        "1900-02-29",
        "1970-04-31",
        "1970-01-01",
        "1970-1-01",
        "1970-01-01T10:00:00Z",
        "1970-01-01T10:00:00",
        "1970-01-01T10:00Z",
        "1970-01-01T24:00:00Z",
        "1970-01-01T23:59:60.123+14:00",
        "1970-01-01T23:59:59+14:01",
        "1970-01-01T23:59:59-13:59",
        "1970-01T10:00:00Z",
        "10:00:00",
        "10:00",
        "23:59:60.5",
        "24:00:00",
        "http://x.org/a b",
        "http://x.org/a",
    ];

    /// The hand-written checks agree with the core definitions' regexes, except where the
    /// prose of the specification is stricter (documented in the module doc).
    #[test]
    fn agrees_with_the_definitions_regexes() {
        for ty in [
            "boolean",
            "integer",
            "unsignedInt",
            "positiveInt",
            "decimal",
            "string",
            "code",
            "id",
            "uri",
            "oid",
            "uuid",
            "base64Binary",
            "instant",
            "dateTime",
            "date",
            "time",
        ] {
            let id = defs::type_id(ty.as_bytes()).expect("type");
            let rx = defs::primitive_regex(id).expect("regex");
            let re = regex_lite::Regex::new(&format!("^(?:{rx})$")).expect("compiles");
            for s in SAMPLES {
                let ours = is_valid(ty, s.as_bytes());
                let theirs = re.is_match(s);
                let stricter = !ours
                    && theirs
                    && (s.is_empty()
                        || matches!(*s, "2147483648" | "1970-02-29" | "1900-02-29" | "1970-04-31")
                        || s.contains('\u{1}')
                        || (ty == "uri" && (s.starts_with("urn:oid:") || s.starts_with("urn:uuid:"))));
                assert!(ours == theirs || stricter, "{ty} {s:?}: ours {ours}, regex {theirs}");
            }
        }
    }

    #[test]
    fn examples() {
        assert!(is_valid("date", b"2024-02-29"));
        assert!(!is_valid("date", b"2023-02-29"));
        assert!(is_valid("instant", b"2015-02-07T13:28:17.239+02:00"));
        assert!(!is_valid("instant", b"2015-02-07"));
        assert!(is_valid("decimal", b"123456789012345678901234567890.000000000000000001"));
        assert!(!is_valid("integer", b"12345678901"));
        assert!(!is_valid("string", b""));
    }
}

#[cfg(test)]
mod ascii_paths {
    /// The ASCII paths of `code` and `uri` agree with the `char` paths on every short string of
    /// a mixed alphabet (ASCII white space of every kind, letters, non-ASCII white space).
    #[test]
    fn agree_with_the_char_paths() {
        let alphabet = ["a", " ", "\t", "\n", "\u{b}", "\u{c}", "\r", "\u{a0}", "\u{2003}", "\u{85}", "é"];
        let slow_code = |s: &str| super::single_spaced(s.chars().map(char::is_whitespace));
        let mut n = 0;
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    for len in 1..=3 {
                        let s: String = [a, b, c][..len].concat();
                        assert_eq!(super::code(s.as_bytes()), slow_code(&s), "{s:?}");
                        assert_eq!(super::is_valid("uri", s.as_bytes()), !s.chars().any(char::is_whitespace), "{s:?}");
                        n += 1;
                    }
                }
            }
        }
        assert!(n > 3000);
        // Longer strings (the eight-byte path of `all_at_least`), against the per-byte rules.
        let mut seed = 0x2545_f491_u32;
        let bytes = [b'a', b'Z', b' ', b'\t', b'\n', 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0xc3, 0xa9];
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let len = 1 + (seed >> 8) as usize % 24;
            let mut v = Vec::with_capacity(len);
            for _ in 0..len {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                // Mostly letters, so that whole words of printable ASCII occur.
                let k = (seed >> 16) as usize % (bytes.len() * 3);
                v.push(if k < bytes.len() { bytes[k] } else { b'a' + (k % 26) as u8 });
            }
            let lo20 = v.iter().all(|&b| (0x20..0x80).contains(&b));
            let lo21 = v.iter().all(|&b| (0x21..0x80).contains(&b));
            assert_eq!(super::all_at_least(&v, 0x20), lo20, "{v:?}");
            assert_eq!(super::all_at_least(&v, 0x21), lo21, "{v:?}");
            assert_eq!(super::Check::String.is_valid(&v), super::string(&v), "{v:?}");
            assert_eq!(super::Check::Code.is_valid(&v), super::code(&v), "{v:?}");
            let slow_uri = std::str::from_utf8(&v).is_ok_and(|s| !s.chars().any(char::is_whitespace));
            assert_eq!(super::Check::Uri.is_valid(&v), slow_uri, "{v:?}");
        }
        for b in 0u8..0x80 {
            assert_eq!(super::ascii_white_space(b), char::from(b).is_whitespace(), "{b}");
        }
    }
}
