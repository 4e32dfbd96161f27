//! Validation of one HL7 v2 message at the syntax level: delimiters, MSH required fields and code
//! patterns, segment ids, escapes, character set and control characters.
//!
//! Collects every finding (up to [`MAX_FINDINGS`] per message); never stops at the first.
//! Findings are value-free by construction: a code, a severity and a structural position.
//!
//! Then appends the findings of `conformance` (the message against its version's structures,
//! field definitions, data types and tables), within the same cap.
//!
//! What it does not do: batch counts (see `batch`).

use crate::diag::{Code, Diagnostic, Hl7Position, Location, Severity};

use super::charset::Charset;
use super::escape;
use super::parse::{FieldRef, Message, SegmentRef, is_control};
use super::segment_ids;
use crate::phi::PhiBytes;

/// Findings beyond this count are dropped (the verdict is kept).
pub const MAX_FINDINGS: usize = 1000;

/// Validation options.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// Every deviation is an error: warnings are raised to errors.
    pub strict: bool,
    /// Syntax only: skip conformance to the version's structures, fields, types and tables
    /// (`parse` reports syntax warnings only, and stays at lexer speed).
    pub syntax_only: bool,
}

struct Findings {
    list: Vec<Diagnostic>,
    strict: bool,
}

impl Findings {
    fn push(&mut self, code: Code, location: Location) {
        if self.list.len() >= MAX_FINDINGS {
            return;
        }
        let mut d = Diagnostic::new(code, location);
        if self.strict && d.severity == Severity::Warning {
            d = d.with_severity(Severity::Error);
        }
        self.list.push(d);
    }

    fn at(&mut self, code: Code, p: Hl7Position) {
        self.push(code, Location::Hl7(p));
    }
}

/// Validates one message at the syntax level.
pub fn validate(msg: &Message, options: Options) -> Vec<Diagnostic> {
    let mut f = Findings { list: Vec::new(), strict: options.strict };
    let t = msg.terminators();
    if t.bom {
        f.push(Code::BOM_PRESENT, Location::Input);
    }
    if t.lf > 0 || t.crlf > 0 {
        f.push(Code::SEGMENT_TERMINATOR_NONSTANDARD, Location::Input);
    }
    if t.empty_lines > 0 {
        f.push(Code::SEGMENT_EMPTY, Location::Input);
    }
    let msh = msh_checks(msg, &mut f);
    for seg in msg.segments() {
        segment_id_checks(seg, &mut f);
    }
    byte_checks(msg, msh, &mut f);
    if !options.syntax_only {
        super::conformance::append(msg, options, &mut f.list);
    }
    f.list
}

/// Validates a batch envelope record (FHS, BHS, BTS, FTS): segment id, escapes, bytes.
/// The batch counts are the tracker's job.
pub fn validate_envelope(msg: &Message, options: Options) -> Vec<Diagnostic> {
    let mut f = Findings { list: Vec::new(), strict: options.strict };
    if msg.terminators().bom {
        f.push(Code::BOM_PRESENT, Location::Input);
    }
    for seg in msg.segments() {
        segment_id_checks(seg, &mut f);
    }
    byte_checks(msg, MshFacts { charset: Charset::Default }, &mut f);
    f.list
}

/// What the MSH checks learnt that later checks need.
#[derive(Copy, Clone)]
struct MshFacts {
    charset: Charset,
}

fn msh_checks(msg: &Message, f: &mut Findings) -> MshFacts {
    let msh = msg.msh();
    let pos = msh.position();
    for n in [9u32, 10, 11, 12] {
        if msh.field(n).is_none_or(|fr| fr.is_empty()) {
            f.at(Code::MSH_FIELD_MISSING, pos.field(n, 0));
        }
    }
    if let Some(fr) = msh.field(9).filter(|fr| !fr.is_empty()) {
        let d = fr.delimiters();
        let ok = fr.bytes().classify(|b| message_type_ok(b, d.component, d.subcomponent));
        if !ok {
            f.at(Code::MESSAGE_TYPE_INVALID, pos.field(9, 0));
        }
    }
    if let Some(fr) = msh.field(11).filter(|fr| !fr.is_empty()) {
        let [id] = first_components(fr);
        let ok = id.is_some_and(|b| b.classify(|v| matches!(v, b"P" | b"T" | b"D")));
        if !ok {
            f.at(Code::PROCESSING_ID_INVALID, pos.field(11, 1).component(1, 0));
        }
    }
    if let Some(fr) = msh.field(12).filter(|fr| !fr.is_empty()) {
        let [id] = first_components(fr);
        let ok = id.is_some_and(|b| b.classify(version_ok));
        if !ok {
            f.at(Code::VERSION_INVALID, pos.field(12, 1).component(1, 0));
        }
        let before_2_7 = id.is_some_and(|b| b.classify(|v| v.starts_with(b"2.") && version_minor(v) < Some(7)));
        if msg.delimiters().truncation.is_some() && before_2_7 {
            f.at(Code::TRUNCATION_CHARACTER, pos.field(2, 0));
        }
    }
    // MSH-2 with its escape character written twice: the parser read it as the four characters.
    if msh.field(2).is_some_and(|fr| fr.bytes().classify(|v| v.len() == 5 && v[2] == v[3])) {
        f.at(Code::ENCODING_CHARACTERS_DOUBLED_ESCAPE, pos.field(2, 0));
    }
    let charset =
        msh.field(18).and_then(|fr| fr.at(1, 1, 1)).map_or(Charset::Default, |b| b.classify(Charset::from_msh18));
    if charset == Charset::Unknown {
        f.at(Code::CHARSET_UNKNOWN, pos.field(18, 1));
    }
    MshFacts { charset }
}

/// Offsets of parts of a field (positions, not values).
#[derive(Copy, Clone, Debug)]
struct Offsets<const N: usize>([Option<(usize, usize)>; N]);

impl<const N: usize> crate::phi::sealed::Sealed for Offsets<N> {}
impl<const N: usize> crate::phi::ValueFree for Offsets<N> {}

/// The first subcomponent of components `1..=N` of the first repetition of `field`: what
/// `field.at(1, c, 1)` gives for each `c`, found in one pass over the (short) field instead of
/// three splits per component.
pub(crate) fn first_components<const N: usize>(field: FieldRef<'_>) -> [Option<PhiBytes<'_>>; N] {
    if !field.is_splittable() {
        return std::array::from_fn(|i| field.at(1, i + 1, 1));
    }
    let d = field.delimiters();
    let bytes = field.bytes();
    let Offsets(spans) = bytes.classify(|v| Offsets(component_offsets(v, d.repetition, d.component, d.subcomponent)));
    spans.map(|span| span.map(|(start, end)| bytes.slice(start, end)))
}

/// The spans of [`first_components`] in `v`.
fn component_offsets<const N: usize>(v: &[u8], rep: u8, comp: u8, sub: u8) -> [Option<(usize, usize)>; N] {
    let mut out = [None; N];
    let end = v.iter().position(|&b| b == rep).unwrap_or(v.len());
    let mut start = 0;
    for slot in out.iter_mut() {
        let rest = v.get(start..end).unwrap_or_default();
        let comp_end = rest.iter().position(|&b| b == comp).map_or(end, |i| start + i);
        let part = v.get(start..comp_end).unwrap_or_default();
        let sub_end = part.iter().position(|&b| b == sub).map_or(comp_end, |i| start + i);
        *slot = Some((start, sub_end));
        if comp_end >= end {
            break;
        }
        start = comp_end + 1;
    }
    out
}

/// `ADT^A01^ADT_A01`, `ACK^A01`, `ACK`, `ADT^A01^ADT_A01^...` with code-shaped components.
pub fn message_type_ok(v: &[u8], comp: u8, sub: u8) -> bool {
    if v.contains(&sub) {
        return false;
    }
    let mut parts = v.split(|b| *b == comp);
    let code_ok = |p: &[u8]| {
        p.len() == 3 && p[0].is_ascii_uppercase() && p.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let Some(first) = parts.next() else { return false };
    if !code_ok(first) {
        return false;
    }
    if let Some(trigger) = parts.next() {
        let ok = trigger.is_empty()
            || (trigger.len() == 3 && trigger.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()));
        if !ok {
            return false;
        }
    }
    if let Some(structure) = parts.next() {
        let ok = structure.is_empty()
            || (structure.len() <= 7
                && structure.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_'));
        if !ok {
            return false;
        }
    }
    parts.next().is_none()
}

/// `2.1` ... `2.8.2`, `2.9`, and other `2.x[.y]` shapes.
pub fn version_ok(v: &[u8]) -> bool {
    let mut parts = v.split(|b| *b == b'.');
    let all_digits = |p: &[u8]| !p.is_empty() && p.len() <= 2 && p.iter().all(u8::is_ascii_digit);
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(b"2"), Some(minor), None, None) => all_digits(minor),
        (Some(b"2"), Some(minor), Some(patch), None) => all_digits(minor) && all_digits(patch),
        _ => false,
    }
}

fn version_minor(v: &[u8]) -> Option<u8> {
    let minor = v.split(|b| *b == b'.').nth(1)?;
    std::str::from_utf8(minor).ok()?.parse().ok()
}

fn segment_id_checks(seg: SegmentRef<'_>, f: &mut Findings) {
    match seg.name() {
        Some(name) if segment_ids::is_z(name) => f.at(Code::Z_SEGMENT, seg.position()),
        Some(_) => {}
        None => {
            let well_formed = seg.id().classify(segment_ids::is_well_formed);
            let code = if well_formed { Code::UNKNOWN_SEGMENT } else { Code::SEGMENT_ID_INVALID };
            f.at(code, seg.position());
        }
    }
}

/// Escapes, character set and control characters, in one pass over the message bytes.
///
/// The scan records byte offsets only (inside this function); each becomes a structural position
/// before it is reported.
fn byte_checks(msg: &Message, facts: MshFacts, f: &mut Findings) {
    let d = msg.delimiters();
    // MSH-1 and MSH-2 (FHS/BHS too) hold the delimiters themselves: look past them.
    let header = msg.msh();
    let msh2_end =
        if header.is_header() { header.field(2).map_or(header.offset(), |f| f.end_offset()) } else { header.offset() };
    let skip_bom = if msg.terminators().bom { 3 } else { 0 };
    let mut problems: Vec<(Code, usize)> = Vec::new();
    let mut first_high: Option<usize> = None;
    // The lexer saw every byte: when it found no high byte and no control character, there is
    // nothing for this scan to find.
    let seen = msg.byte_facts();
    if seen.high || seen.control {
        msg.bytes().classify(|all| {
            let all = all.get(skip_bom..).unwrap_or_default();
            let (has_control, has_high) = scan_flags(all);
            if has_control || has_high {
                for (i, &b) in all.iter().enumerate() {
                    if b >= 0x80 {
                        first_high.get_or_insert(i + skip_bom);
                    } else if is_control(b) && problems.len() < MAX_FINDINGS {
                        problems.push((Code::CONTROL_CHARACTER, i + skip_bom));
                    }
                }
            }
        });
    }
    msg.bytes().classify(|all| {
        let body = all.get(msh2_end..).unwrap_or_default();
        if memchr::memchr(d.escape, body).is_some() {
            for seq in escape::sequences(body, &d) {
                if problems.len() >= MAX_FINDINGS {
                    break;
                }
                if let Some(code) = escape::finding(&seq) {
                    problems.push((code, msh2_end + seq.start));
                }
            }
        }
    });
    problems.sort_by_key(|p| p.1);
    for (code, offset) in problems {
        f.at(code, msg.position_of(offset));
    }
    if let Some(first) = first_high {
        charset_checks(msg, facts.charset, first, f);
    }
}

/// Whether the bytes hold a control character, and a byte above 0x7F. Branch-free, so the
/// compiler vectorizes it: this is the hot path of validation.
fn scan_flags(bytes: &[u8]) -> (bool, bool) {
    let mut control = 0u8;
    let mut high = 0u8;
    for chunk in bytes.chunks(4096) {
        for &b in chunk {
            high |= b & 0x80;
            control |= u8::from(b < 0x20) & u8::from(b != b'\r') & u8::from(b != b'\n') & u8::from(b != b'\t');
        }
        if control != 0 && high != 0 {
            break;
        }
    }
    (control != 0, high != 0)
}

fn charset_checks(msg: &Message, charset: Charset, first_high: usize, f: &mut Findings) {
    let mut offsets: Vec<usize> = Vec::new();
    match charset {
        Charset::Iso8859(_) | Charset::Unknown => {}
        Charset::Default => f.at(Code::CHARSET_NON_ASCII, msg.position_of(first_high)),
        Charset::Ascii => f.at(Code::CHARSET_INVALID_BYTES, msg.position_of(first_high)),
        Charset::Utf8 => {
            msg.bytes().classify(|b| {
                let mut rest = b;
                let mut base = 0usize;
                while let Err(e) = std::str::from_utf8(rest) {
                    let bad = base + e.valid_up_to();
                    offsets.push(bad);
                    if offsets.len() >= 100 {
                        break;
                    }
                    let skip = e.valid_up_to() + e.error_len().unwrap_or(rest.len() - e.valid_up_to()).max(1);
                    base += skip;
                    rest = &rest[skip.min(rest.len())..];
                }
            });
        }
        Charset::Multibyte(_) => {
            // Each piece the lexer separates is decoded alone: a character whose second byte is
            // a delimiter (possible in GB 18030 and BIG-5) was split, and is reported here.
            let d = msg.delimiters();
            let mut seps = vec![d.field, d.component, d.repetition, d.escape, d.subcomponent, b'\r', b'\n'];
            seps.extend(d.truncation);
            msg.bytes().classify(|b| {
                let mut start = 0usize;
                for piece in b.split(|c| seps.contains(c)) {
                    if offsets.len() >= 100 {
                        break;
                    }
                    if !piece.is_ascii() {
                        let room = 100 - offsets.len();
                        offsets.extend(charset.invalid_offsets(piece, room).into_iter().map(|o| start + o));
                    }
                    start += piece.len() + 1;
                }
            });
        }
    }
    let mut last = None;
    for off in offsets {
        let p = msg.position_of(off);
        if last != Some(p) {
            f.at(Code::CHARSET_INVALID_BYTES, p);
            last = Some(p);
        }
    }
}

/// True when no finding is an error or fatal.
pub fn is_valid(findings: &[Diagnostic]) -> bool {
    !findings.iter().any(|d| d.severity.is_failure())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::hl7v2::parse::parse;
    use crate::limits::Limits;

    /// The charset findings (code, location) of a message declaring `msh18`, with `pid5` in
    /// PID-5.
    fn charset_findings(msh18: &str, pid5: &[u8]) -> Vec<String> {
        let mut bytes =
            format!("MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1||||||{msh18}\rPID|1||1||").into_bytes();
        bytes.extend_from_slice(pid5);
        bytes.extend_from_slice(b"\r");
        let Ok(m) = parse(bytes, &Limits::default()) else { panic!("parse") };
        validate(&m, Options { strict: false, syntax_only: true })
            .iter()
            .filter(|d| d.code.as_str().starts_with("CHARSET"))
            .map(|d| format!("{} {}", d.code.as_str(), d.location))
            .collect()
    }

    #[test]
    fn multibyte_sets_are_decoded_and_checked() {
        // 中文^文 in GB 18030, 한국 in KS X 1001, 中文 in BIG-5: no finding.
        assert!(charset_findings("GB 18030", b"\xd6\xd0\xce\xc4^\xce\xc4").is_empty());
        assert!(charset_findings("KS X 1001", b"\xc7\xd1\xb1\xb9").is_empty());
        assert!(charset_findings("BIG-5", b"\xa4\xa4\xa4\xe5").is_empty());
        // A lead byte cut off by a delimiter: reported where the broken character starts.
        assert_eq!(charset_findings("BIG-5", b"\xa4\xa4\xa4^x"), vec!["CHARSET_INVALID_BYTES PID[1]-5[1].1.1"]);
        assert_eq!(charset_findings("KS X 1001", b"a\xff"), vec!["CHARSET_INVALID_BYTES PID[1]-5[1].1.1"]);
        // Sets not decoded are still named.
        assert_eq!(charset_findings("ISO IR87", b"x"), vec!["CHARSET_UNKNOWN MSH[1]-18[1]"]);
    }

    /// `first_components` gives what `FieldRef::at(1, c, 1)` gives, on awkward shapes.
    #[test]
    fn first_components_match_at() {
        let fields = [
            "",
            "A",
            "ADT",
            "ADT^A01^ADT_A01",
            "^A01",
            "ADT^^ADT_A01",
            "ADT^A01^",
            "A&B^C&D^E&F",
            "&^&^&",
            "A~B^C",
            "~",
            "^~^",
            "ADT^A01^ADT_A01^X",
            "^^",
            "P&x",
            "2.5.1^x~2.4",
            "ADT^A01&q~Z^Y^X",
        ];
        for text in fields {
            let m = match parse(format!("MSH|^~\\&|x|y|{text}|{text}\r").into_bytes(), &Limits::default()) {
                Ok(m) => m,
                Err(_) => panic!("parse"),
            };
            for n in [1u32, 2, 3, 5, 6] {
                let Some(field) = m.msh().field(n) else { continue };
                let ours: [Option<PhiBytes<'_>>; 4] = first_components(field);
                for (c, got) in ours.iter().enumerate() {
                    let want = field.at(1, c + 1, 1);
                    let same = match (got, want) {
                        (None, None) => true,
                        (Some(a), Some(b)) => a.classify(|x| b.classify(|y| x == y)),
                        _ => false,
                    };
                    assert!(same, "field {n} component {} of {text:?}", c + 1);
                }
            }
        }
    }
}
