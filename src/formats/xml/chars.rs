//! The character-level rules of XML 1.0 (Fifth Edition) that the reader enforces itself: names
//! (production 5, restricted as below), the `Char` production (2), end-of-line handling (2.11),
//! attribute-value normalization for CDATA-typed attributes (3.3.3), and references (4.1): the
//! five predefined entities and numeric character references.
//!
//! Every function works on bytes of input that the reader has already checked to be UTF-8, and
//! reports a failure as a [`Kind`] with the offset (inside the bytes given) where it was seen:
//! never the bytes themselves.
//!
//! What it does not do: entity references other than the five predefined ones (there is no DTD
//! to declare them: `&name;` for any other name is an error), or the full Unicode name classes
//! (a byte at or above 0x80 is accepted as a name character, as the reader never interprets a
//! name beyond comparing it).

use super::error::Kind;

/// Byte classes, one table lookup per byte on the hot paths.
const NAME_START: u8 = 1;
const NAME: u8 = 2;
/// Ends a run of ordinary bytes in an attribute value: `<`, `&`, white space other than the
/// space, C0 controls, and 0xEF (the lead byte of U+FFFE and U+FFFF).
const VALUE_STOP: u8 = 4;
/// Not ordinary in character data: C0 controls other than tab, LF and CR, and 0xEF.
const TEXT_STOP: u8 = 8;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0usize;
    while c < 256 {
        let b = c as u8;
        let start = b.is_ascii_alphabetic() || b == b'_' || b >= 0x80;
        let mut class = 0;
        if start {
            class |= NAME_START | NAME;
        }
        if b.is_ascii_digit() || b == b'-' || b == b'.' || b == b':' {
            class |= NAME;
        }
        let control = b < 0x20 && b != b'\t' && b != b'\n' && b != b'\r';
        if control || b == 0xEF {
            class |= TEXT_STOP | VALUE_STOP;
        }
        if b == b'<' || b == b'&' || b == b'\t' || b == b'\n' || b == b'\r' {
            class |= VALUE_STOP;
        }
        t[c] = class;
        c += 1;
    }
    t
};

/// A byte that may start a name: ASCII letters, `_`, and any byte of a multi-byte character.
pub(super) fn is_name_start(c: u8) -> bool {
    CLASS[usize::from(c)] & NAME_START != 0
}

/// A byte that may continue a name (`:` included: a qualified name is split by the reader).
pub(super) fn is_name(c: u8) -> bool {
    CLASS[usize::from(c)] & NAME != 0
}

/// XML white space (production 3).
pub(super) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// The index of the first byte of `name` that is not allowed where it stands, if any (an empty
/// name fails at 0).
pub(super) fn invalid_name_at(name: &[u8]) -> Option<usize> {
    match name.first() {
        None => Some(0),
        Some(&c) if !is_name_start(c) => Some(0),
        Some(_) => name.iter().position(|&c| !is_name(c)),
    }
}

/// A qualified name (Namespaces in XML 1.0, production 7) split at its colon: `(prefix, local)`
/// as index ranges of `name`, the prefix empty when there is none. `None` when the name has
/// more than one colon, or an empty part around its colon.
pub(super) fn split_qname(name: &[u8]) -> Option<((usize, usize), (usize, usize))> {
    // Names are short: a plain scan beats a vectorized search's set-up.
    match name.iter().position(|&c| c == b':') {
        None => Some(((0, 0), (0, name.len()))),
        Some(p) => {
            let local = &name[p + 1..];
            if p == 0 || local.is_empty() || local.contains(&b':') || !is_name_start(local[0]) {
                None
            } else {
                Some(((0, p), (p + 1, name.len())))
            }
        }
    }
}

/// True for a code point of the `Char` production.
pub(super) fn is_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// True when the three bytes at `i` are U+FFFE or U+FFFF (`EF BF BE`, `EF BF BF`).
fn noncharacter_at(raw: &[u8], i: usize) -> bool {
    raw.get(i + 1) == Some(&0xBF) && matches!(raw.get(i + 2), Some(0xBE | 0xBF))
}

/// The index of the first character of `raw` outside the `Char` production, if any. `raw` is
/// valid UTF-8, so the only non-characters left to find are C0 controls and U+FFFE/U+FFFF.
pub(super) fn check_chars(raw: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = raw[i..].iter().position(|&c| CLASS[usize::from(c)] & TEXT_STOP != 0) {
        let at = i + p;
        if raw[at] != 0xEF || noncharacter_at(raw, at) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// The index of the first `]]>` in `raw`, if any.
pub(super) fn cdata_end(raw: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'>', raw).find(|&p| p >= 2 && &raw[p - 2..p] == b"]]").map(|p| p - 2)
}

/// Appends `raw` (character data or a CDATA section) to `out` with end-of-line handling:
/// `\r\n` and a lone `\r` become `\n`.
pub(super) fn push_text(raw: &[u8], out: &mut Vec<u8>) {
    let mut rest = raw;
    while let Some(p) = memchr::memchr(b'\r', rest) {
        out.extend_from_slice(&rest[..p]);
        out.push(b'\n');
        rest = &rest[p + 1..];
        if rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
    }
    out.extend_from_slice(rest);
}

/// Decodes the reference whose body (the bytes between `&` and `;`) is `body`.
pub(super) fn reference(body: &[u8]) -> Result<char, Kind> {
    let c = match body {
        b"lt" => '<',
        b"gt" => '>',
        b"amp" => '&',
        b"quot" => '"',
        b"apos" => '\'',
        _ => {
            let digits = match body {
                [b'#', b'x', hex @ ..] => radix(hex, 16),
                [b'#', dec @ ..] => radix(dec, 10),
                _ => return Err(Kind::UndefinedEntity),
            };
            match digits.and_then(char::from_u32) {
                Some(c) if is_char(c) => c,
                _ => return Err(Kind::InvalidCharacterReference),
            }
        }
    };
    Ok(c)
}

/// The number written in `digits` (at least one digit of `base`), or `None` when it is not one
/// or exceeds the last code point.
fn radix(digits: &[u8], base: u32) -> Option<u32> {
    if digits.is_empty() {
        return None;
    }
    let mut n: u32 = 0;
    for &d in digits {
        let v = char::from(d).to_digit(base)?;
        n = n.checked_mul(base)?.checked_add(v)?;
        if n > 0x10_FFFF {
            return None;
        }
    }
    Some(n)
}

/// Decodes a quoted attribute value (`raw` is what lies between the quotes) into `out`:
/// references are replaced, and each white-space character (a `\r\n` pair counting as one) becomes
/// a space, as XML 1.0 section 3.3.3 does for an attribute of type CDATA (the only type there is
/// without a DTD). A `<`, a malformed reference or a character outside `Char` is an error at its
/// index in `raw`. One pass: runs of ordinary bytes are copied whole.
pub(super) fn attribute_value(raw: &[u8], out: &mut Vec<u8>) -> Result<(), (Kind, usize)> {
    let mut i = 0;
    while i < raw.len() {
        let run = raw[i..].iter().position(|&b| CLASS[usize::from(b)] & VALUE_STOP != 0);
        let stop = run.map_or(raw.len(), |r| i + r);
        out.extend_from_slice(&raw[i..stop]);
        i = stop;
        let Some(&c) = raw.get(i) else { break };
        match c {
            b'<' => return Err((Kind::LessThanInAttribute, i)),
            b'&' => {
                let body_end = memchr::memchr(b';', &raw[i + 1..]).ok_or((Kind::UnclosedReference, i))?;
                let ch = reference(&raw[i + 1..i + 1 + body_end]).map_err(|k| (k, i))?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += body_end + 2;
            }
            b'\r' => {
                out.push(b' ');
                i += if raw.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
            }
            b'\t' | b'\n' => {
                out.push(b' ');
                i += 1;
            }
            0xEF if !noncharacter_at(raw, i) => {
                out.push(c);
                i += 1;
            }
            _ => return Err((Kind::InvalidCharacter, i)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_predefined_and_numeric_only() {
        assert_eq!(reference(b"amp"), Ok('&'));
        assert_eq!(reference(b"#x41"), Ok('A'));
        assert_eq!(reference(b"#0000065"), Ok('A'));
        assert_eq!(reference(b"#x1F600"), Ok('\u{1F600}'));
        assert_eq!(reference(b"nbsp"), Err(Kind::UndefinedEntity));
        assert_eq!(reference(b""), Err(Kind::UndefinedEntity));
        for bad in
            [&b"#"[..], b"#x", b"#0", b"#x1", b"#xD800", b"#xFFFE", b"#x110000", b"#99999999999", b"#12a", b"#X41"]
        {
            assert_eq!(reference(bad), Err(Kind::InvalidCharacterReference));
        }
    }

    #[test]
    fn attribute_values_are_normalized() {
        let mut out = Vec::new();
        attribute_value(b"a\r\nb\rc\td\ne&#xD;&lt;", &mut out).expect("valid");
        assert_eq!(out, b"a b c d e\r<");
        assert_eq!(attribute_value(b"x<y", &mut Vec::new()), Err((Kind::LessThanInAttribute, 1)));
        assert_eq!(attribute_value(b"ab&amp", &mut Vec::new()), Err((Kind::UnclosedReference, 2)));
        assert_eq!(attribute_value(b"&e;", &mut Vec::new()), Err((Kind::UndefinedEntity, 0)));
        assert_eq!(attribute_value(b"ab\x01", &mut Vec::new()), Err((Kind::InvalidCharacter, 2)));
        assert_eq!(attribute_value("a\u{FFFE}".as_bytes(), &mut Vec::new()), Err((Kind::InvalidCharacter, 1)));
        let mut out = Vec::new();
        attribute_value("\u{FFFD}\u{EFFF}".as_bytes(), &mut out).expect("characters");
        assert_eq!(out, "\u{FFFD}\u{EFFF}".as_bytes());
    }

    #[test]
    fn text_line_ends_and_characters() {
        let mut out = Vec::new();
        push_text(b"a\r\nb\rc\n", &mut out);
        assert_eq!(out, b"a\nb\nc\n");
        assert_eq!(check_chars(b"ok\tok\r\n"), None);
        assert_eq!(check_chars(b"ab\x01"), Some(2));
        assert_eq!(check_chars("a\u{FFFF}b\x02".as_bytes()), Some(1));
        assert_eq!(check_chars("\u{FFFD}\u{EFFF}".as_bytes()), None);
        assert_eq!(cdata_end(b"a]>]]]>"), Some(4));
        assert_eq!(cdata_end(b"a]] >"), None);
    }

    #[test]
    fn names_and_qualified_names() {
        assert_eq!(invalid_name_at(b"fhir:Patient"), None);
        assert_eq!(invalid_name_at(b""), Some(0));
        assert_eq!(invalid_name_at(b"1a"), Some(0));
        assert_eq!(invalid_name_at(b"a=b"), Some(1));
        assert_eq!(split_qname(b"a:b"), Some(((0, 1), (2, 3))));
        assert_eq!(split_qname(b"ab"), Some(((0, 0), (0, 2))));
        assert_eq!(split_qname(b"a:"), None);
        assert_eq!(split_qname(b"a:b:c"), None);
        assert_eq!(split_qname(b"a:-b"), None);
    }
}
