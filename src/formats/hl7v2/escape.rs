//! HL7 v2 escape sequences (chapter 2, "Use of escape sequences in text fields").
//!
//! Recognises the delimiter escapes `\F\ \S\ \T\ \R\ \E\`, the v2.7 truncation escape `\P\`,
//! hexadecimal data `\Xhh..\`, the formatting commands of FT (`\.br\`, `\.sp n\`, `\.fi\`, `\.nf\`,
//! `\.in n\`, `\.ti n\`, `\.sk n\`, `\.ce\`), highlighting `\H\ \N\`, character-set escapes
//! `\Cxxyy\ \Mxxyyzz\`, and locally defined `\Z..\`. Anything else is unknown: it is kept as
//! written and reported with a warning.
//!
//! What it does not do: interpret formatting commands (they are kept verbatim when decoding), or
//! decode character sets (see `charset`).

use crate::diag::Code;

use super::parse::Delimiters;

/// What an escape sequence is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `\F\ \S\ \T\ \R\ \E\` (and `\P\`): stands for a delimiter.
    Delimiter(u8),
    /// `\Xhh..\`: hexadecimal data, well formed.
    Hex,
    /// Formatting, highlighting, character-set or local escapes: valid, kept verbatim.
    Verbatim,
    /// Not defined by the standard: kept verbatim, reported.
    Unknown,
    /// `\X..\` with an odd count of digits or a non-hex digit.
    BadHex,
}

/// One escape sequence found in a part: `start` is the offset of the opening escape character,
/// `end` the offset just past the closing one.
#[derive(Copy, Clone, Debug)]
pub struct Sequence {
    /// Offset of the opening escape character.
    pub start: usize,
    /// Offset just past the closing escape character (or the end of the part when unterminated).
    pub end: usize,
    /// The kind, or `None` when unterminated.
    pub kind: Option<Kind>,
}

/// Iterates the escape sequences of a part's bytes (a field, component or subcomponent).
///
/// A sequence cannot cross a delimiter: an escape character followed by a delimiter or by the end
/// of the bytes before its closing escape is unterminated.
pub fn sequences<'a>(bytes: &'a [u8], d: &'a Delimiters) -> impl Iterator<Item = Sequence> + 'a {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let rel = memchr::memchr(d.escape, &bytes[pos.min(bytes.len())..])?;
        let start = pos + rel;
        let body_start = start + 1;
        let mut i = body_start;
        while i < bytes.len() && bytes[i] != d.escape && !is_structural(bytes[i], d) {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] != d.escape {
            pos = i;
            return Some(Sequence { start, end: i, kind: None });
        }
        pos = i + 1;
        Some(Sequence { start, end: i + 1, kind: Some(classify(&bytes[body_start..i], d)) })
    })
}

fn is_structural(b: u8, d: &Delimiters) -> bool {
    b == d.field || b == d.component || b == d.repetition || b == d.subcomponent || b == b'\r' || b == b'\n'
}

fn is_hex(b: &[u8]) -> bool {
    b.iter().all(u8::is_ascii_hexdigit)
}

fn classify(body: &[u8], d: &Delimiters) -> Kind {
    match body {
        b"F" => Kind::Delimiter(d.field),
        b"S" => Kind::Delimiter(d.component),
        b"T" => Kind::Delimiter(d.subcomponent),
        b"R" => Kind::Delimiter(d.repetition),
        b"E" => Kind::Delimiter(d.escape),
        b"P" => match d.truncation {
            Some(t) => Kind::Delimiter(t),
            None => Kind::Unknown,
        },
        b"H" | b"N" | b".br" | b".fi" | b".nf" | b".ce" => Kind::Verbatim,
        [b'X', hex @ ..] => {
            if !hex.is_empty() && hex.len() % 2 == 0 && is_hex(hex) {
                Kind::Hex
            } else {
                Kind::BadHex
            }
        }
        [b'.', b's', b'p', rest @ ..]
        | [b'.', b's', b'k', rest @ ..]
        | [b'.', b'i', b'n', rest @ ..]
        | [b'.', b't', b'i', rest @ ..] => {
            let n = rest.strip_prefix(b" ").unwrap_or(rest);
            let n = n.strip_prefix(b"+").or_else(|| n.strip_prefix(b"-")).unwrap_or(n);
            if n.iter().all(u8::is_ascii_digit) { Kind::Verbatim } else { Kind::Unknown }
        }
        [b'C', hex @ ..] if hex.len() == 4 && is_hex(hex) => Kind::Verbatim,
        [b'M', hex @ ..] if (hex.len() == 4 || hex.len() == 6) && is_hex(hex) => Kind::Verbatim,
        [b'Z', ..] => Kind::Verbatim,
        _ => Kind::Unknown,
    }
}

/// The diagnostic code for a sequence, if it deserves one.
pub fn finding(seq: &Sequence) -> Option<Code> {
    match seq.kind {
        None => Some(Code::ESCAPE_UNTERMINATED),
        Some(Kind::BadHex) => Some(Code::ESCAPE_HEX_INVALID),
        Some(Kind::Unknown) => Some(Code::ESCAPE_UNKNOWN),
        Some(_) => None,
    }
}

fn hex_value(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        b'A'..=b'F' => b - b'A' + 10,
        _ => 0,
    }
}

/// Decodes a part: delimiter escapes become the delimiter, hex escapes become their bytes,
/// everything else (formatting, unknown, unterminated) is kept as written.
pub fn decode(bytes: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    decode_with(bytes, d, out, false);
}

/// Decodes a part into plain text (the converter's strings): as [`decode`], and the formatting
/// commands of TX/FT/CF rendered as plain text: `\.br\` and `\.ce\` a line break, `\.sp n\`
/// n line breaks (one without n), `\.sk n\` n spaces, highlighting `\H\ \N\` and the fill and
/// indent commands (`\.fi\ \.nf\ \.in n\ \.ti n\`) nothing. Line breaks and spaces from one
/// command are at most [`MAX_RENDERED`]. Character-set, local and unknown escapes are kept as
/// written. Works on the escaped bytes, so a literal escape character (`\E\`) followed by
/// letters is never taken for a command.
pub fn decode_plain(bytes: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    decode_with(bytes, d, out, true);
}

/// [`decode`], and with `plain` [`decode_plain`].
fn decode_with(bytes: &[u8], d: &Delimiters, out: &mut Vec<u8>, plain: bool) {
    let mut last = 0;
    for seq in sequences(bytes, d) {
        out.extend_from_slice(&bytes[last..seq.start]);
        match seq.kind {
            Some(Kind::Delimiter(b)) => out.push(b),
            Some(Kind::Hex) => {
                let hex = &bytes[seq.start + 2..seq.end - 1];
                out.extend(hex.chunks_exact(2).map(|p| hex_value(p[0]) << 4 | hex_value(p[1])));
            }
            Some(Kind::Verbatim) if plain => {
                let body = &bytes[seq.start + 1..seq.end - 1];
                match body {
                    b".br" | b".ce" => out.push(b'\n'),
                    b"H" | b"N" | b".fi" | b".nf" => {}
                    [b'.', b's', b'p', rest @ ..] => out.extend(std::iter::repeat_n(b'\n', count(rest, 1))),
                    [b'.', b's', b'k', rest @ ..] => out.extend(std::iter::repeat_n(b' ', count(rest, 0))),
                    [b'.', b'i', b'n', ..] | [b'.', b't', b'i', ..] => {}
                    _ => out.extend_from_slice(&bytes[seq.start..seq.end]),
                }
            }
            _ => out.extend_from_slice(&bytes[seq.start..seq.end]),
        }
        last = seq.end;
    }
    out.extend_from_slice(&bytes[last..]);
}

/// The most line breaks or spaces one formatting command renders to (`\.sp 99999\` is not a
/// way to grow a string).
pub const MAX_RENDERED: usize = 16;

/// The count of a `\.sp n\` or `\.sk n\` command (`rest` after the command's letters):
/// `default` without one, at most [`MAX_RENDERED`].
fn count(rest: &[u8], default: usize) -> usize {
    let n = rest.strip_prefix(b" ").unwrap_or(rest);
    let n = n.strip_prefix(b"+").unwrap_or(n);
    if n.is_empty() {
        return default;
    }
    n.iter()
        .try_fold(0usize, |acc, &b| b.is_ascii_digit().then(|| (acc * 10 + usize::from(b - b'0')).min(MAX_RENDERED)))
        .unwrap_or(0)
}

/// Writes a part in canonical form: hexadecimal digits in upper case, everything else as written.
pub fn canonicalize(bytes: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    let mut last = 0;
    for seq in sequences(bytes, d) {
        out.extend_from_slice(&bytes[last..seq.start]);
        if seq.kind == Some(Kind::Hex) {
            out.extend(bytes[seq.start..seq.end].iter().map(u8::to_ascii_uppercase));
        } else {
            out.extend_from_slice(&bytes[seq.start..seq.end]);
        }
        last = seq.end;
    }
    out.extend_from_slice(&bytes[last..]);
}

/// Escapes raw data for a part: delimiters become their escape sequences.
pub fn encode(data: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    for &b in data {
        let code = if b == d.field {
            Some(b'F')
        } else if b == d.component {
            Some(b'S')
        } else if b == d.subcomponent {
            Some(b'T')
        } else if b == d.repetition {
            Some(b'R')
        } else if b == d.escape {
            Some(b'E')
        } else {
            None
        };
        match code {
            Some(c) => out.extend_from_slice(&[d.escape, c, d.escape]),
            None => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> String {
        let mut out = Vec::new();
        decode(s.as_bytes(), &Delimiters::default(), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn kinds(s: &str) -> Vec<Option<Code>> {
        let d = Delimiters::default();
        sequences(s.as_bytes(), &d).map(|q| finding(&q)).collect()
    }

    #[test]
    fn plain_text_renders_formatting_commands() {
        let plain = |s: &str| {
            let mut out = Vec::new();
            decode_plain(s.as_bytes(), &Delimiters::default(), &mut out);
            String::from_utf8_lossy(&out).into_owned()
        };
        assert_eq!(plain(r"IMPRESSION:\.br\\H\Lung-RADS 2\N\: benign"), "IMPRESSION:\nLung-RADS 2: benign");
        assert_eq!(plain(r"a\.sp 2\b\.sp\c\.sk 3\d\.in +4\\.ti -2\e\.fi\\.nf\\.ce\f"), "a\n\nb\nc   de\nf");
        assert_eq!(plain(r"\.sp 99999\x"), format!("{}x", "\n".repeat(MAX_RENDERED)));
        // A literal escape character followed by letters is not a command.
        assert_eq!(plain(r"\E\H\E\ \F\ \X41\ \Zlocal\ \Q\"), r"\H\ | A \Zlocal\ \Q\");
    }

    #[test]
    fn decodes_delimiters_and_hex() {
        assert_eq!(dec("A\\F\\B\\S\\C\\T\\D\\R\\E\\E\\"), "A|B^C&D~E\\");
        assert_eq!(dec("x\\X0D0A\\y"), "x\r\ny");
        assert_eq!(dec("line\\.br\\next"), "line\\.br\\next");
    }

    #[test]
    fn findings() {
        assert_eq!(kinds("\\F\\ \\.sp 2\\ \\H\\x\\N\\"), vec![None, None, None, None]);
        assert_eq!(kinds("\\Q\\"), vec![Some(Code::ESCAPE_UNKNOWN)]);
        assert_eq!(kinds("\\X0\\"), vec![Some(Code::ESCAPE_HEX_INVALID)]);
        assert_eq!(kinds("abc\\F"), vec![Some(Code::ESCAPE_UNTERMINATED)]);
        assert_eq!(kinds("\\"), vec![Some(Code::ESCAPE_UNTERMINATED)]);
    }

    #[test]
    fn encode_round_trips() {
        let d = Delimiters::default();
        let mut enc = Vec::new();
        encode(b"a|b^c&d~e\\f", &d, &mut enc);
        let mut back = Vec::new();
        decode(&enc, &d, &mut back);
        assert_eq!(back, b"a|b^c&d~e\\f");
    }
}
