//! Value positions of an input, found independently of the parser under test, for the no-leak
//! oracle: the byte runs a leak would show, and the marker-injecting rewrite.
//!
//! The walker reads any bytes as HL7 v2 ER7: lines end at CR, LF, and the MLLP block bytes
//! 0x0B/0x1C; a line starting `MSH`, `FHS` or `BHS` plus a delimiter declares the delimiters for
//! the lines after it (the defaults `|^~\&` before any). In each line it keeps as structure: the
//! segment id when it is a schema name, MSH-1/MSH-2 (and FHS/BHS), the code fields MSH-9, MSH-11,
//! MSH-12, MSH-18 and the counts BTS-1/FTS-1, delimiters, control bytes, and escape sequences
//! (their bodies are still reported as value runs). Everything else, maximal runs of bytes between
//! those, is a value.
//!
//! It is deliberately simpler than `formats::hl7v2::parse`: an oracle that shared the parser's
//! code would share its bugs. Non-HL7 inputs are walked the same way; their "values" are then
//! approximate, which only makes the plain-mode check broader.
//!
//! What it does not do: decide what a leak is (see `oracle`).

use crate::formats::hl7v2::segment_ids;

/// What the walker hands to its visitor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Piece {
    /// A value run: the marker mode replaces it.
    Value,
    /// The body of an escape sequence: kept by the marker mode, but still a value for the check.
    EscapeBody,
}

#[derive(Copy, Clone)]
struct Delims {
    field: u8,
    component: u8,
    repetition: u8,
    escape: u8,
    subcomponent: u8,
}

const DEFAULT: Delims = Delims { field: b'|', component: b'^', repetition: b'~', escape: b'\\', subcomponent: b'&' };

/// The visitor of [`walk`]: a value piece in, its replacement written to the output.
type Visit<'v> = dyn FnMut(Piece, &[u8], &mut Vec<u8>) + 'v;

fn is_line_end(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | 0x0B | 0x1C)
}

fn is_delimiter_byte(b: u8) -> bool {
    b.is_ascii_graphic() && !b.is_ascii_alphanumeric()
}

/// Walks `data`, copying structure to `out` and calling `visit(piece, bytes, out)` for each value
/// piece; the visitor writes whatever should stand in its place.
pub(super) fn walk(data: &[u8], out: &mut Vec<u8>, mut visit: impl FnMut(Piece, &[u8], &mut Vec<u8>)) {
    let mut d = DEFAULT;
    let mut i = 0;
    while i < data.len() {
        let end = data[i..].iter().position(|&b| is_line_end(b)).map_or(data.len(), |p| i + p);
        line(&data[i..end], &mut d, out, &mut visit);
        if end < data.len() {
            out.push(data[end]);
        }
        i = end + 1;
    }
}

fn line(text: &[u8], d: &mut Delims, out: &mut Vec<u8>, visit: &mut impl FnMut(Piece, &[u8], &mut Vec<u8>)) {
    // A BOM and leading white space are structure.
    let mut start = 0;
    if text.starts_with(b"\xEF\xBB\xBF") {
        start = 3;
    }
    while start < text.len() && matches!(text[start], b' ' | b'\t' | 0x0C) {
        start += 1;
    }
    out.extend_from_slice(&text[..start]);
    let body = &text[start..];
    let id3 = body.get(..3).unwrap_or_default();
    let header = matches!(id3, b"MSH" | b"FHS" | b"BHS") && body.get(3).is_some_and(|&b| is_delimiter_byte(b));
    let (mut rest, mut field_no) = if header {
        let field = body[3];
        let enc_area = &body[4..];
        let enc_len = enc_area.iter().position(|&b| b == field).unwrap_or(enc_area.len());
        let enc = &enc_area[..enc_len];
        let distinct = enc.iter().enumerate().all(|(k, &b)| b != field && !enc[..k].contains(&b));
        if let Some(e) = crate::formats::hl7v2::parse::doubled_escape(field, enc) {
            // As the parser reads it: the escape character written twice.
            *d = Delims { field, component: e[0], repetition: e[1], escape: e[2], subcomponent: e[3] };
        } else if (4..=5).contains(&enc.len()) && enc.iter().all(|&b| is_delimiter_byte(b)) && distinct {
            *d = Delims { field, component: enc[0], repetition: enc[1], escape: enc[2], subcomponent: enc[3] };
        } else {
            d.field = field;
        }
        out.extend_from_slice(&body[..4 + enc_len]);
        (&body[4 + enc_len..], 2u32)
    } else {
        let id_len = body.iter().position(|&b| b == d.field).unwrap_or(body.len());
        let id = &body[..id_len];
        if id.is_empty() || segment_ids::schema_name(id).is_some() {
            out.extend_from_slice(id);
        } else {
            visit(Piece::Value, id, out);
        }
        (&body[id_len..], 0u32)
    };
    let keep = |n: u32| match id3 {
        b"MSH" if header => matches!(n, 9 | 11 | 12 | 18),
        b"BTS" | b"FTS" => n == 1,
        _ => false,
    };
    // `rest` is empty or starts with a field separator.
    while let Some((&sep, after)) = rest.split_first() {
        out.push(sep);
        field_no += 1;
        let len = after.iter().position(|&b| b == d.field).unwrap_or(after.len());
        let field = &after[..len];
        if keep(field_no) {
            out.extend_from_slice(field);
        } else {
            value_field(field, d, out, visit);
        }
        rest = &after[len..];
    }
}

fn value_field(field: &[u8], d: &Delims, out: &mut Vec<u8>, visit: &mut impl FnMut(Piece, &[u8], &mut Vec<u8>)) {
    let structural = |b: u8| b == d.component || b == d.repetition || b == d.subcomponent;
    let mut run_start = 0;
    let mut i = 0;
    let flush = |from: usize, to: usize, out: &mut Vec<u8>, visit: &mut Visit<'_>| {
        if to > from {
            visit(Piece::Value, &field[from..to], out);
        }
    };
    while i < field.len() {
        let b = field[i];
        if structural(b) || b < 0x20 {
            flush(run_start, i, out, visit);
            out.push(b);
            i += 1;
            run_start = i;
        } else if b == d.escape {
            flush(run_start, i, out, visit);
            out.push(b);
            let body_start = i + 1;
            let mut j = body_start;
            while j < field.len() && field[j] != d.escape && !structural(field[j]) {
                j += 1;
            }
            if j > body_start {
                visit(Piece::EscapeBody, &field[body_start..j], out);
            }
            if j < field.len() && field[j] == d.escape {
                out.push(field[j]);
                j += 1;
            }
            i = j;
            run_start = i;
        } else {
            i += 1;
        }
    }
    flush(run_start, field.len(), out, visit);
}

/// The value runs of `data` (value pieces and escape bodies), in order.
pub(super) fn runs(data: &[u8]) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    let mut sink = Vec::with_capacity(data.len());
    walk(data, &mut sink, |_, run, _| found.push(run.to_vec()));
    found
}

/// The marker prefix; a marker is `MKR` + decimal number + `X`.
pub(crate) const MARKER_PREFIX: &[u8] = b"MKR";

/// Rewrites every value run of `data` into a unique marker token (`MKR1X`, `MKR2X`, ...).
/// Escape sequences are kept as written, so the rewritten input still exercises them.
pub(super) fn inject_markers(data: &[u8]) -> Vec<u8> {
    inject_markers_keeping(data, &|_| false)
}

/// [`inject_markers`], but value runs for which `keep` is true stay as written (`policy test`
/// keeps declarations, a data type or a coding system name, so that what they declare is
/// exercised).
pub(crate) fn inject_markers_keeping(data: &[u8], keep: &dyn Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 64);
    let mut n = 0u32;
    walk(data, &mut out, |piece, run, out| match piece {
        Piece::Value if keep(run) => out.extend_from_slice(run),
        Piece::Value => {
            n += 1;
            out.extend_from_slice(MARKER_PREFIX);
            out.extend_from_slice(n.to_string().as_bytes());
            out.push(b'X');
        }
        Piece::EscapeBody => out.extend_from_slice(run),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_replace_values_and_keep_structure() {
        let input = b"MSH|^~\\&|APP^FAC|X|||||ADT^A01|C1|P|2.5\rPID|1||DOE^JANE~SMITH&J\\F\\x\rBOGUS|a\r";
        let out = inject_markers(input);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(
            text,
            "MSH|^~\\&|MKR1X^MKR2X|MKR3X|||||ADT^A01|MKR4X|P|2.5\rPID|MKR5X||MKR6X^MKR7X~MKR8X&MKR9X\\F\\MKR10X\rMKR11X|MKR12X\r"
        );
        let r = runs(b"PID|1||DOE^JANE\\Zsecret\\");
        assert_eq!(r, vec![b"1".to_vec(), b"DOE".to_vec(), b"JANE".to_vec(), b"Zsecret".to_vec()]);
    }
}
