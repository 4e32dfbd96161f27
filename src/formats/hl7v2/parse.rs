//! The HL7 v2 ER7 lexer: one message's bytes into an index of segments and fields.
//!
//! Implements the encoding rules of HL7 v2 chapter 2 (2.5 "Message construction rules"):
//! MSH-1/MSH-2 delimiters of any legal choice, including the v2.7 truncation character;
//! segment terminators CR, LF and CR LF; a leading UTF-8 BOM. The message keeps its bytes in one
//! zeroizing buffer ([`Phi<Vec<u8>>`]); segments and fields are offsets into it, so parsing
//! allocates two vectors per message, not one string per field. Repetitions, components and
//! subcomponents are split lazily, on access.
//!
//! What it does not do: decode escapes or character sets (see `escape`, `charset`), or check
//! anything beyond what is needed to find the structure (see `validate`).

use crate::diag::{Code, Diagnostic, Hl7Position, Location, SchemaName};
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

use super::segment_ids;

/// The delimiters declared by MSH-1 and MSH-2.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Delimiters {
    /// MSH-1, usually `|`.
    pub field: u8,
    /// Usually `^`.
    pub component: u8,
    /// Usually `~`.
    pub repetition: u8,
    /// Usually `\`.
    pub escape: u8,
    /// Usually `&`.
    pub subcomponent: u8,
    /// v2.7 and later, usually `#`.
    pub truncation: Option<u8>,
}

impl Default for Delimiters {
    fn default() -> Self {
        Delimiters {
            field: b'|',
            component: b'^',
            repetition: b'~',
            escape: b'\\',
            subcomponent: b'&',
            truncation: None,
        }
    }
}

impl Delimiters {
    /// True when `b` is one of the delimiters (field, component, repetition, escape, subcomponent).
    pub fn is_delimiter(&self, b: u8) -> bool {
        b == self.field || b == self.component || b == self.repetition || b == self.escape || b == self.subcomponent
    }
}

/// A byte range into the message buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The range of the span in the message buffer.
    pub(crate) fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// How the segments of a message were terminated.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Terminators {
    /// Segments ended by a bare CR (the standard).
    pub cr: u32,
    /// Segments ended by a bare LF.
    pub lf: u32,
    /// Segments ended by CR LF.
    pub crlf: u32,
    /// Empty lines between segments (not counting trailing ones).
    pub empty_lines: u32,
    /// The last segment had no terminator.
    pub unterminated_last: bool,
    /// The message started with a UTF-8 BOM.
    pub bom: bool,
}

#[derive(Copy, Clone, Debug)]
pub(crate) struct Segment {
    /// The whole segment line, without terminator.
    pub span: Span,
    /// The id bytes span (up to the first field separator).
    pub id: Span,
    /// Schema name of the id, when it is a standard or Z id.
    pub name: SchemaName,
    /// Index of the first field in `Message::fields`.
    pub first_field: u32,
    /// Number of fields (for MSH, counting MSH-1 and MSH-2).
    pub field_count: u32,
    /// 1-based position in the message.
    pub position: u32,
    /// 1-based occurrence among segments with the same id (or position when `name` is None).
    pub occurrence: u32,
}

/// One parsed HL7 v2 message.
#[derive(Debug)]
pub struct Message {
    buf: Phi<Vec<u8>>,
    delimiters: Delimiters,
    segments: Vec<Segment>,
    fields: Vec<Span>,
    terminators: Terminators,
    /// What the lexer saw of high bytes and control characters.
    facts: ByteFacts,
    /// Byte offset of this message in the whole input (for stream-level positions).
    base_offset: u64,
}

/// A fatal parse failure: the code and where the parser stopped.
pub type Fatal = Diagnostic;

/// Parses one message. `bytes` is moved into the message's zeroizing buffer.
///
/// Fails with a fatal diagnostic (`NO_MSH_SEGMENT`, `MSH_TOO_SHORT`,
/// `INVALID_ENCODING_CHARACTERS`, or `CLI_INPUT_TOO_LARGE` when a limit is exceeded).
pub fn parse(bytes: Vec<u8>, limits: &Limits) -> Result<Message, Fatal> {
    parse_at(bytes, 0, limits)
}

/// As [`parse`], for a message found at `base_offset` in a larger input.
pub fn parse_at(bytes: Vec<u8>, base_offset: u64, limits: &Limits) -> Result<Message, Fatal> {
    parse_with(bytes, base_offset, limits, None)
}

/// Parses a batch envelope segment (`FHS`, `BHS`, `BTS`, `FTS`) as a one-segment message.
/// `FHS`/`BHS` declare their own delimiters; `BTS`/`FTS` use `inherited` (or the defaults).
pub fn parse_envelope(
    bytes: Vec<u8>,
    base_offset: u64,
    limits: &Limits,
    inherited: Option<Delimiters>,
) -> Result<Message, Fatal> {
    parse_with(bytes, base_offset, limits, Some(inherited.unwrap_or_default()))
}

fn is_header_id(id: &[u8]) -> bool {
    matches!(id, b"MSH" | b"FHS" | b"BHS")
}

/// Parses one record, giving the buffer back on failure (so a caller can pass the record
/// through unchanged, or show an excerpt under the operator's explicit request).
/// `envelope` is `None` for a message, `Some(inherited)` for a batch envelope segment.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn parse_record(
    bytes: Vec<u8>,
    base_offset: u64,
    limits: &Limits,
    envelope: Option<Option<Delimiters>>,
) -> Result<Message, (Fatal, Phi<Vec<u8>>)> {
    let buf = Phi::new(bytes);
    let indexed = index(buf.span().raw(), base_offset, limits, envelope.map(Option::unwrap_or_default));
    match indexed {
        Ok((delimiters, segments, fields, terminators, facts)) => {
            Ok(Message { buf, delimiters, segments, fields, terminators, facts, base_offset })
        }
        Err(fatal) => Err((fatal, buf)),
    }
}

fn parse_with(
    bytes: Vec<u8>,
    base_offset: u64,
    limits: &Limits,
    envelope: Option<Delimiters>,
) -> Result<Message, Fatal> {
    parse_record(bytes, base_offset, limits, envelope.map(Some)).map_err(|(fatal, _)| fatal)
}

type Index = (Delimiters, Vec<Segment>, Vec<Span>, Terminators, ByteFacts);

fn index(bytes: &[u8], base_offset: u64, limits: &Limits, envelope: Option<Delimiters>) -> Result<Index, Fatal> {
    let at = |offset: usize| Location::Offset(base_offset + offset as u64);
    let fatal = |code: Code, offset: usize| Diagnostic::new(code, at(offset));
    let len = bytes.len();
    if len as u64 > limits.max_input_bytes || len > u32::MAX as usize {
        return Err(fatal(Code::CLI_INPUT_TOO_LARGE, 0));
    }
    let mut terminators = Terminators::default();
    let mut pos = 0;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        pos = 3;
        terminators.bom = true;
    }
    let mut seen = Seen::default();
    // Skip leading blank lines and white space before the header (form feed is a control
    // character for validation).
    while pos < len && bytes[pos].is_ascii_whitespace() {
        seen.byte(bytes[pos]);
        pos += 1;
    }
    let head_start = pos;
    let rest = &bytes[head_start..];
    let line_end = memchr::memchr2(b'\r', b'\n', rest).unwrap_or(rest.len());
    let line = &rest[..line_end];
    let delimiters = match envelope {
        None if !rest.starts_with(b"MSH") => return Err(fatal(Code::NO_MSH_SEGMENT, head_start)),
        Some(inherited) if !line.get(..3).is_some_and(is_header_id) => inherited,
        _ => read_delimiters(line).map_err(|(code, off)| fatal(code, head_start + off))?,
    };

    // About one field per eight bytes and at most one segment per sixty-four, reserved once: a
    // big message does not grow the vectors by doubling (a copy of each at every step).
    let body = len - head_start;
    let mut segments: Vec<Segment> = Vec::with_capacity((body / 64).clamp(16, 1 << 16));
    let mut fields: Vec<Span> = Vec::with_capacity((body / 8).clamp(128, 1 << 20));
    let mut counts = segment_ids::Counter::default();
    let sep = delimiters.field;
    let max_field = limits.max_field_bytes as usize;
    let mut pending_empty = 0;
    while pos < len {
        let first_field = fields.len();
        let line = lex_line(bytes, pos, sep, &mut fields, &mut seen);
        let end = line.span.end as usize;
        let next = match bytes.get(end) {
            Some(b'\r') if bytes.get(end + 1) == Some(&b'\n') => end + 2,
            Some(_) => end + 1,
            None => end,
        };
        let blank = match bytes.get(pos) {
            Some(b' ' | b'\t') => bytes[pos..end].iter().all(|b| *b == b' ' || *b == b'\t'),
            _ => pos == end,
        };
        if blank {
            // Blank line: counted when another segment follows.
            pending_empty += 1;
            fields.truncate(first_field);
            pos = next;
            continue;
        }
        match next - end {
            2 => terminators.crlf += 1,
            1 if bytes[end] == b'\r' => terminators.cr += 1,
            1 => terminators.lf += 1,
            _ => terminators.unterminated_last = true,
        }
        terminators.empty_lines += pending_empty;
        pending_empty = 0;
        if segments.len() as u64 >= u64::from(limits.max_segments) {
            return Err(fatal(Code::CLI_INPUT_TOO_LARGE, pos));
        }
        if end - pos > max_field {
            // A field can be longer than the limit only on a line that is (MSH-1 never is).
            let split_from = first_field + usize::from(line.header && line.has_fields);
            let spans = fields.get(split_from..).unwrap_or_default();
            if let Some(long) = spans.iter().find(|s| (s.end - s.start) as usize > max_field) {
                return Err(fatal(Code::CLI_INPUT_TOO_LARGE, long.start as usize));
            }
        }
        let position = segments.len() as u32 + 1;
        let name = segment_ids::schema_name(&bytes[line.id.range()]);
        let occurrence = match name {
            Some(name) => counts.bump(name),
            None => position,
        };
        segments.push(Segment {
            span: line.span,
            id: line.id,
            name,
            first_field: first_field as u32,
            field_count: (fields.len() - first_field) as u32,
            position,
            occurrence,
        });
        pos = next;
    }
    if segments.is_empty() {
        return Err(fatal(Code::NO_MSH_SEGMENT, head_start));
    }
    Ok((delimiters, segments, fields, terminators, seen.facts()))
}

/// Reads MSH-1 and MSH-2 from the MSH line. Errors carry an offset within the line.
fn read_delimiters(line: &[u8]) -> Result<Delimiters, (Code, usize)> {
    let Some(&field) = line.get(3) else {
        return Err((Code::MSH_TOO_SHORT, line.len()));
    };
    if !crate::detect::is_delimiter_byte(field) {
        return Err((Code::INVALID_ENCODING_CHARACTERS, 3));
    }
    let enc_area = &line[4..];
    let enc_len = memchr::memchr(field, enc_area).unwrap_or(enc_area.len());
    let enc = &enc_area[..enc_len];
    if enc.len() < 4 {
        // The segment ends inside MSH-2: too short. A field separator after fewer than four
        // encoding characters: the declared set is incomplete.
        let code = if enc_len == enc_area.len() { Code::MSH_TOO_SHORT } else { Code::INVALID_ENCODING_CHARACTERS };
        return Err((code, 4 + enc.len()));
    }
    if enc.len() > 5 {
        return Err((Code::INVALID_ENCODING_CHARACTERS, 4 + 5));
    }
    let enc = match doubled_escape(field, enc) {
        Some(four) => four,
        None => {
            for (i, &b) in enc.iter().enumerate() {
                let distinct = b != field && !enc[..i].contains(&b);
                if !crate::detect::is_delimiter_byte(b) || !distinct {
                    return Err((Code::INVALID_ENCODING_CHARACTERS, 4 + i));
                }
            }
            [enc[0], enc[1], enc[2], enc[3], enc.get(4).copied().unwrap_or(0)]
        }
    };
    Ok(Delimiters {
        field,
        component: enc[0],
        repetition: enc[1],
        escape: enc[2],
        subcomponent: enc[3],
        truncation: (enc[4] != 0).then_some(enc[4]),
    })
}

/// MSH-2 with its escape character written twice (`^~\\&`: a slip of text escaping, as in
/// samples copied out of source code), read as the four characters without the repeat; `None`
/// for any other MSH-2. The five bytes are otherwise valid and distinct. The syntax validator
/// reports it (`ENCODING_CHARACTERS_DOUBLED_ESCAPE`). python-hl7 reads such messages too, taking
/// the repeat for the subcomponent separator; the intended set is the four characters.
pub(crate) fn doubled_escape(field: u8, enc: &[u8]) -> Option<[u8; 5]> {
    let &[component, repetition, escape, again, subcomponent] = enc else { return None };
    let four = [component, repetition, escape, subcomponent];
    let distinct = four.iter().enumerate().all(|(i, &b)| b != field && !four[..i].contains(&b));
    (again == escape && distinct && four.iter().all(|&b| crate::detect::is_delimiter_byte(b))).then_some([
        component,
        repetition,
        escape,
        subcomponent,
        0,
    ])
}

/// What the lexer saw in the message bytes, so that validation can skip its scans of a clean
/// message. Both flags may be set when the bytes hold neither (they are conservative); a byte
/// of either kind anywhere in the message always sets its flag.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ByteFacts {
    /// Some byte may be above 0x7F.
    pub high: bool,
    /// Some byte may be a control character other than CR, LF and TAB.
    pub control: bool,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// 0x80 in every byte of `v` that is zero, and nowhere else (no borrow between bytes).
fn zero_bytes(v: u64) -> u64 {
    !(((v & LOW7) + LOW7) | v | LOW7)
}

/// The byte facts gathered while lexing, as bit masks (bit 7 of a byte).
#[derive(Default)]
struct Seen {
    high: u64,
    control: u64,
}

impl Seen {
    fn byte(&mut self, b: u8) {
        self.high |= u64::from(b & 0x80);
        self.control |= u64::from(is_control(b));
    }

    /// Records the high bytes and control characters of a word (the rare path: some byte is
    /// below 0x20 or above 0x7F). Returns the CR and LF bytes of the word.
    fn word(&mut self, w: u64) -> u64 {
        let ends = zero_bytes(w ^ (ONES * u64::from(b'\r'))) | zero_bytes(w ^ (ONES * u64::from(b'\n')));
        let tabs = zero_bytes(w ^ (ONES * u64::from(b'\t')));
        // Exactly the bytes below 0x20: bit 7 is clear in `(b & 0x7F) + 0x60` and in `b`.
        let below = !(((w & LOW7) + ONES * 0x60) | w) & HIGH;
        self.high |= w & HIGH;
        self.control |= below & !ends & !tabs;
        ends
    }

    fn facts(&self) -> ByteFacts {
        ByteFacts { high: self.high != 0, control: self.control != 0 }
    }
}

/// A control character that may not occur in a message (CR and LF end segments; TAB is
/// tolerated in text).
pub(crate) fn is_control(b: u8) -> bool {
    b < 0x20 && b != b'\r' && b != b'\n' && b != b'\t'
}

/// One line as lexed.
struct Line {
    /// The whole line, without terminator.
    span: Span,
    /// The id bytes (up to the first field separator).
    id: Span,
    /// The id is MSH, FHS or BHS.
    header: bool,
    /// A field separator follows the id.
    has_fields: bool,
}

/// Lexes the line at `start` (up to the next CR or LF, or the end): pushes the span of each of
/// its fields (for MSH, FHS and BHS, field 1 is the separator itself) and records the byte
/// facts of all its bytes.
fn lex_line(bytes: &[u8], start: usize, sep: u8, fields: &mut Vec<Span>, seen: &mut Seen) -> Line {
    // The id: three bytes and a separator, nearly always.
    let three = match bytes.get(start..start + 4) {
        Some(&[a, b, c, s]) if s == sep && [a, b, c].iter().all(|&x| x != sep && x != b'\r' && x != b'\n') => {
            seen.byte(a);
            seen.byte(b);
            seen.byte(c);
            Some(start + 3)
        }
        _ => None,
    };
    let id_end = match three {
        Some(end) => end,
        None => {
            let mut at = start;
            while let Some(&b) = bytes.get(at) {
                if b == sep || b == b'\r' || b == b'\n' {
                    break;
                }
                seen.byte(b);
                at += 1;
            }
            at
        }
    };
    let id = Span { start: start as u32, end: id_end as u32 };
    let header = is_header_id(&bytes[id.range()]);
    if bytes.get(id_end) != Some(&sep) {
        return Line { span: id, id, header, has_fields: false };
    }
    if header {
        // MSH-1 is the separator itself; MSH-2 runs to the next separator and is not split.
        fields.push(Span { start: id_end as u32, end: id_end as u32 + 1 });
    }
    let (end, last) = split_fields(bytes, id_end + 1, sep, fields, seen);
    fields.push(Span { start: last, end: end as u32 });
    Line { span: Span { start: start as u32, end: end as u32 }, id, header, has_fields: true }
}

/// Pushes the span of every field from `from` to the end of its line (the next CR or LF, or the
/// end of `bytes`) that a `sep` ends. Returns the end of the line and the start of its last
/// field (which no separator ends).
///
/// Eight bytes at a time: a word compared with the separator repeated (zero bytes found
/// exactly), and one test for a byte below 0x20 or above 0x7F, true about once per line (at its
/// end) in a clean message; only then is the word searched for CR and LF and its bytes recorded.
/// Fields are a few bytes long on average, too short for a vectorised search to pay for its
/// set-up at each one; and one pass finds both the fields and the end of the line.
fn split_fields(bytes: &[u8], from: usize, sep: u8, fields: &mut Vec<Span>, seen: &mut Seen) -> (usize, u32) {
    let pattern = ONES * u64::from(sep);
    // Offsets in the message buffer (they fit in `u32`: checked against the input size).
    let mut start = from as u32;
    let mut at = from as u32;
    let mut words = bytes.get(from..).unwrap_or_default().chunks_exact(8);
    for word in &mut words {
        // Invariant: `chunks_exact(8)` gives 8-byte chunks, so the conversion cannot fail.
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let mut seps = zero_bytes(w ^ pattern);
        // Bit 7 set in some byte when a byte is below 0x20 (the borrow) or above 0x7F.
        if (w.wrapping_sub(ONES * 0x20) | w) & HIGH != 0 {
            let ends = seen.word(w);
            if ends != 0 {
                let cut = ends.trailing_zeros() / 8;
                seps &= (1u64 << (cut * 8)) - 1;
                while seps != 0 {
                    let end = at + seps.trailing_zeros() / 8;
                    fields.push(Span { start, end });
                    start = end + 1;
                    seps &= seps - 1;
                }
                return ((at + cut) as usize, start);
            }
        }
        while seps != 0 {
            let end = at + seps.trailing_zeros() / 8;
            fields.push(Span { start, end });
            start = end + 1;
            seps &= seps - 1;
        }
        at += 8;
    }
    for &b in words.remainder() {
        if b == b'\r' || b == b'\n' {
            break;
        }
        seen.byte(b);
        if b == sep {
            fields.push(Span { start, end: at });
            start = at + 1;
        }
        at += 1;
    }
    (at as usize, start)
}

impl Message {
    /// The delimiters declared by MSH-1 and MSH-2.
    pub fn delimiters(&self) -> Delimiters {
        self.delimiters
    }

    /// How segments were terminated.
    pub fn terminators(&self) -> Terminators {
        self.terminators
    }

    /// Whether the message may hold high bytes or control characters (see [`ByteFacts`]).
    pub(crate) fn byte_facts(&self) -> ByteFacts {
        self.facts
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Byte offset of the message in its input.
    pub fn base_offset(&self) -> u64 {
        self.base_offset
    }

    /// The message bytes exactly as received (for canonical comparison and the data channel).
    pub fn bytes(&self) -> PhiBytes<'_> {
        self.buf.span()
    }

    /// Segments in order.
    pub fn segments(&self) -> impl ExactSizeIterator<Item = SegmentRef<'_>> + '_ {
        self.segments.iter().map(move |seg| SegmentRef { msg: self, seg })
    }

    /// The first segment with this standard id (`MSH`, `PID`, ...).
    pub fn segment(&self, id: &str) -> Option<SegmentRef<'_>> {
        self.segments().find(|s| s.name() == Some(id))
    }

    /// The first segment: MSH for a message (one without it does not parse), the envelope
    /// segment for a batch envelope record.
    pub fn msh(&self) -> SegmentRef<'_> {
        // Invariant: parse() fails unless the first segment starts with MSH.
        SegmentRef { msg: self, seg: &self.segments[0] }
    }

    /// Finds the segment, field, repetition, component and subcomponent that hold a byte offset
    /// of the buffer. Used to place findings found by scanning.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub(crate) fn position_of(&self, offset: usize) -> Hl7Position {
        let off = offset as u32;
        let idx = self.segments.partition_point(|s| s.span.start <= off).saturating_sub(1);
        let Some(seg) = self.segments.get(idx) else {
            return Hl7Position::default();
        };
        let sref = SegmentRef { msg: self, seg };
        let base = sref.position();
        let fields = &self.fields[seg.first_field as usize..(seg.first_field + seg.field_count) as usize];
        let fidx = fields.partition_point(|f| f.start <= off);
        if fidx == 0 {
            return base;
        }
        let field_no = fidx as u32;
        let span = fields[fidx - 1];
        let d = &self.delimiters;
        let raw = self.buf.span().raw();
        let (mut rep, mut comp, mut sub) = (1u32, 1u32, 1u32);
        let is_msh_enc = sref.is_header() && field_no <= 2;
        if !is_msh_enc {
            for &b in &raw[span.start as usize..offset.min(span.end as usize)] {
                if b == d.repetition {
                    rep += 1;
                    comp = 1;
                    sub = 1;
                } else if b == d.component {
                    comp += 1;
                    sub = 1;
                } else if b == d.subcomponent {
                    sub += 1;
                }
            }
        }
        base.field(field_no, rep).component(comp, sub)
    }
}

/// A segment of a message.
#[derive(Copy, Clone, Debug)]
pub struct SegmentRef<'a> {
    msg: &'a Message,
    seg: &'a Segment,
}

impl<'a> SegmentRef<'a> {
    /// The segment id as a schema name, when it is a standard or Z id.
    pub fn name(self) -> SchemaName {
        self.seg.name
    }

    /// The id bytes as received (a value: a broken message can put anything there).
    pub fn id(self) -> PhiBytes<'a> {
        let s = self.seg.id;
        self.msg.buf.span().slice(s.start as usize, s.end as usize)
    }

    /// The whole segment line, without terminator.
    pub fn bytes(self) -> PhiBytes<'a> {
        let s = self.seg.span;
        self.msg.buf.span().slice(s.start as usize, s.end as usize)
    }

    /// True for MSH, FHS and BHS, whose fields 1 and 2 hold the delimiters.
    pub fn is_header(self) -> bool {
        matches!(self.seg.name, Some("MSH" | "FHS" | "BHS"))
    }

    /// 1-based position in the message.
    pub fn index(self) -> u32 {
        self.seg.position
    }

    /// Byte offset of the segment in the message buffer.
    pub fn offset(self) -> usize {
        self.seg.span.start as usize
    }

    /// The structural position of the segment (`PID[1]`, or `segment[7]`).
    pub fn position(self) -> Hl7Position {
        Hl7Position::segment(self.seg.name, self.seg.occurrence)
    }

    /// Number of fields (for MSH, MSH-1 and MSH-2 count).
    pub fn field_count(self) -> u32 {
        self.seg.field_count
    }

    /// Field `n` (1-based, so `PID-5` is `field(5)`), when present.
    pub fn field(self, n: u32) -> Option<FieldRef<'a>> {
        if n == 0 || n > self.seg.field_count {
            return None;
        }
        let span = self.msg.fields[(self.seg.first_field + n - 1) as usize];
        let split = !(self.is_header() && n <= 2);
        Some(FieldRef {
            bytes: self.msg.buf.span().slice(span.start as usize, span.end as usize),
            offset: span.start as usize,
            delimiters: self.msg.delimiters,
            split,
            position: self.position().field(n, 0),
        })
    }

    /// The byte ranges of the fields in the message buffer, in order (field `n` at `n - 1`).
    pub(crate) fn field_spans(self) -> &'a [Span] {
        let first = self.seg.first_field as usize;
        self.msg.fields.get(first..first + self.seg.field_count as usize).unwrap_or_default()
    }

    /// Every field, in order, with its number.
    pub fn fields(self) -> impl Iterator<Item = FieldRef<'a>> + 'a {
        (1..=self.seg.field_count).filter_map(move |n| self.field(n))
    }
}

/// A field of a segment.
#[derive(Copy, Clone, Debug)]
pub struct FieldRef<'a> {
    bytes: PhiBytes<'a>,
    offset: usize,
    delimiters: Delimiters,
    split: bool,
    position: Hl7Position,
}

impl<'a> FieldRef<'a> {
    /// The field's raw (escaped) bytes.
    pub fn bytes(self) -> PhiBytes<'a> {
        self.bytes
    }

    /// Byte offset of the field in the message buffer.
    pub fn offset(self) -> usize {
        self.offset
    }

    /// Byte offset just past the field in the message buffer.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub fn end_offset(self) -> usize {
        self.offset + self.bytes.raw().len()
    }

    /// Structural position (`PID[1]-5`).
    pub fn position(self) -> Hl7Position {
        self.position
    }

    /// True when the field is empty.
    pub fn is_empty(self) -> bool {
        self.bytes.is_empty()
    }

    /// False for MSH-1 and MSH-2, which hold delimiters and are never split.
    pub fn is_splittable(self) -> bool {
        self.split
    }

    /// The delimiters of the message.
    pub fn delimiters(self) -> Delimiters {
        self.delimiters
    }

    /// Repetitions in order (an empty field has one empty repetition).
    pub fn repetitions(self) -> impl Iterator<Item = Part<'a>> {
        let sep = if self.split { Some(self.delimiters.repetition) } else { None };
        split_parts(self.bytes, sep)
    }

    /// Repetition `r`, component `c`, subcomponent `s` (all 1-based), when present.
    pub fn at(self, r: usize, c: usize, s: usize) -> Option<PhiBytes<'a>> {
        let rep = self.repetitions().nth(r.checked_sub(1)?)?;
        let comp = rep.split(self.split.then_some(self.delimiters.component)).nth(c.checked_sub(1)?)?;
        let sub = comp.split(self.split.then_some(self.delimiters.subcomponent)).nth(s.checked_sub(1)?)?;
        Some(sub.bytes)
    }
}

/// A part of a field (a repetition, component or subcomponent).
#[derive(Copy, Clone, Debug)]
pub struct Part<'a> {
    /// The part's raw bytes.
    pub bytes: PhiBytes<'a>,
}

impl<'a> Part<'a> {
    /// Splits the part at `sep` (no split when `None`).
    pub fn split(self, sep: Option<u8>) -> impl Iterator<Item = Part<'a>> {
        split_parts(self.bytes, sep)
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn split_parts(bytes: PhiBytes<'_>, sep: Option<u8>) -> impl Iterator<Item = Part<'_>> {
    let raw = bytes.raw();
    let mut start = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let end = match sep.and_then(|s| memchr::memchr(s, &raw[start..])) {
            Some(i) => start + i,
            None => {
                done = true;
                raw.len()
            }
        };
        let part = Part { bytes: bytes.slice(start, end) };
        start = end + 1;
        Some(part)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(s: &str) -> Message {
        match parse(s.as_bytes().to_vec(), &Limits::default()) {
            Ok(m) => m,
            Err(d) => panic!("parse failed: {}", d.code.as_str()),
        }
    }

    fn msg_bytes(s: &[u8]) -> Message {
        match parse(s.to_vec(), &Limits::default()) {
            Ok(m) => m,
            Err(d) => panic!("parse failed: {}", d.code.as_str()),
        }
    }

    fn code(s: &[u8]) -> Code {
        match parse(s.to_vec(), &Limits::default()) {
            Ok(_) => panic!("expected failure"),
            Err(d) => d.code,
        }
    }

    #[test]
    fn a_doubled_escape_in_msh_2_reads_as_the_four_characters() {
        let msg = parse(b"MSH|^~\\\\&|A|B|C|D|20240101||ADT^A01|1|P|2.6\rPID|1||X&Y\r".to_vec(), &Limits::default())
            .expect("reads");
        let d = msg.delimiters();
        assert_eq!(
            (d.component, d.repetition, d.escape, d.subcomponent, d.truncation),
            (b'^', b'~', b'\\', b'&', None)
        );
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn splits_segments_and_fields() {
        let m = msg("MSH|^~\\&|APP|FAC|||20240101||ADT^A01|1|P|2.5\rPID|1||123^^^H^MR~456||DOE^JANE\r");
        assert_eq!(m.segment_count(), 2);
        let pid = m.segment("PID").map(|s| s.field(3));
        let f = pid.flatten().map(|f| f.repetitions().count());
        assert_eq!(f, Some(2));
        let msh = m.msh();
        assert_eq!(msh.field(1).map(|f| f.bytes().raw()), Some(&b"|"[..]));
        assert_eq!(msh.field(2).map(|f| f.bytes().raw()), Some(&b"^~\\&"[..]));
        assert_eq!(msh.field(9).and_then(|f| f.at(1, 2, 1)).map(|b| b.raw()), Some(&b"A01"[..]));
        assert_eq!(m.terminators().cr, 2);
    }

    #[test]
    fn custom_delimiters_and_truncation() {
        let m = msg("MSH*:+!@#*APP\nPID*1**A:B+C\n");
        let d = m.delimiters();
        assert_eq!((d.field, d.component, d.repetition, d.escape, d.subcomponent), (b'*', b':', b'+', b'!', b'@'));
        assert_eq!(d.truncation, Some(b'#'));
        assert_eq!(m.terminators().lf, 2);
    }

    #[test]
    fn fatal_codes() {
        assert_eq!(code(b"PID|1"), Code::NO_MSH_SEGMENT);
        assert_eq!(code(b"MSH|^~"), Code::MSH_TOO_SHORT);
        assert_eq!(code(b"MSH|^^\\&|"), Code::INVALID_ENCODING_CHARACTERS);
        assert_eq!(code(b"MSH|^~\\A|"), Code::INVALID_ENCODING_CHARACTERS);
        assert_eq!(code(b"MSH|^~|"), Code::INVALID_ENCODING_CHARACTERS);
        assert_eq!(code(b"MSH|^~\\&#!|"), Code::INVALID_ENCODING_CHARACTERS);
        assert_eq!(code(b"MSH|^~\\\\\\|"), Code::INVALID_ENCODING_CHARACTERS);
        assert_eq!(code(b"MSH|^~\\^&|"), Code::INVALID_ENCODING_CHARACTERS);
    }

    /// The line, id and fields of the line at `start`, found byte by byte (the oracle of the
    /// word lexer).
    fn naive_line(bytes: &[u8], start: usize, sep: u8) -> (Span, Span, Vec<Span>) {
        let end = (start..bytes.len()).find(|&i| bytes[i] == b'\r' || bytes[i] == b'\n').unwrap_or(bytes.len());
        let text = &bytes[start..end];
        let id_len = text.iter().position(|&b| b == sep).unwrap_or(text.len());
        let span = Span { start: start as u32, end: end as u32 };
        let id = Span { start: start as u32, end: (start + id_len) as u32 };
        let mut fields = Vec::new();
        if id_len < text.len() {
            if is_header_id(&text[..id_len]) {
                fields.push(Span { start: id.end, end: id.end + 1 });
            }
            let first = start + id_len + 1;
            let mut from = first;
            for (i, &b) in bytes[first..end].iter().enumerate() {
                if b == sep {
                    fields.push(Span { start: from as u32, end: (first + i) as u32 });
                    from = first + i + 1;
                }
            }
            fields.push(Span { start: from as u32, end: end as u32 });
        }
        (span, id, fields)
    }

    #[test]
    fn word_lexer_matches_byte_lexer() {
        // Every byte class the lexer tells apart, at every offset of lines of many lengths.
        let alphabet =
            [b'|', b'|', b'A', b'Z', b'1', b'^', b' ', b'\r', b'\n', b'\t', 0, 0x0C, 0x1F, 0x20, 0x7F, 0x80, 0xFF];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let len = (next() % 48) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            if round % 3 == 0 && len >= 4 {
                bytes[..4].copy_from_slice(if round % 2 == 0 { b"MSH|" } else { b"PID|" });
            }
            let start = if len == 0 { 0 } else { (next() % len as u64) as usize };
            let mut fields = vec![Span::default()];
            let mut seen = Seen::default();
            let line = lex_line(&bytes, start, b'|', &mut fields, &mut seen);
            let (span, id, expected) = naive_line(&bytes, start, b'|');
            assert_eq!((line.span, line.id), (span, id), "{bytes:?} from {start}");
            assert_eq!(&fields[1..], &expected[..], "{bytes:?} from {start}");
            let text = &bytes[start..span.end as usize];
            let facts = seen.facts();
            assert!(facts.high || !text.iter().any(|&b| b >= 0x80), "{bytes:?} from {start}");
            assert!(facts.control || !text.iter().any(|&b| is_control(b)), "{bytes:?} from {start}");
            // Conservative only within the word that ends the line, whose bytes are all in the input.
            let window = &bytes[start..(span.end as usize + 8).min(bytes.len())];
            assert!(!facts.high || window.iter().any(|&b| b >= 0x80), "{bytes:?} from {start}");
            assert!(!facts.control || window.iter().any(|&b| is_control(b)), "{bytes:?} from {start}");
        }
    }

    #[test]
    fn byte_facts_cover_every_byte() {
        let cases: [&[u8]; 6] = [
            b"MSH|^~\\&|A\rPID|1\r",
            b"\x0C\nMSH|^~\\&|A\rPID|1\r",
            b"MSH|^~\\&|A\rPID|1|\x01\r",
            b"MSH|^~\\&|A\rP\xC3\xA9D|1\r",
            b"MSH|^~\\&|A\r  \t\r\nPID|1|caf\xE9\r",
            b"\xEF\xBB\xBFMSH|^~\\&|A|\t|\rPID|1\n",
        ];
        for (i, case) in cases.iter().enumerate() {
            let m = msg_bytes(case);
            let facts = m.byte_facts();
            let body = case.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(case);
            assert_eq!(facts.high, body.iter().any(|&b| b >= 0x80), "case {i}");
            assert_eq!(facts.control, body.iter().any(|&b| is_control(b)), "case {i}");
        }
    }

    #[test]
    fn limits_stop_at_the_first_long_field_or_extra_segment() {
        let fail_at = |text: &str, max_field_bytes: u32, max_segments: u32| {
            let limits = Limits { max_field_bytes, max_segments, ..Limits::default() };
            match parse(text.as_bytes().to_vec(), &limits) {
                Ok(_) => None,
                Err(d) => {
                    assert_eq!(d.code, Code::CLI_INPUT_TOO_LARGE);
                    match d.location {
                        Location::Offset(off) => Some(off as usize),
                        _ => panic!("not an offset"),
                    }
                }
            }
        };
        let text = "MSH|^~\\&|AB|ABCDEFG|X\rPID|1|ABCDEFGHIJKL\r";
        assert_eq!(fail_at(text, 5, 10), text.find("ABCDEFG"));
        assert_eq!(fail_at(text, 3, 10), Some(4)); // MSH-2 counts, MSH-1 does not
        assert_eq!(fail_at(text, 8, 10), text.find("ABCDEFGHIJKL"));
        assert_eq!(fail_at(text, 12, 10), None);
        assert_eq!(fail_at(text, 12, 1), text.find("PID"));
        let last = "MSH|^~\\&|A\r  \r\nPID|1|ABCDEFGHIJ";
        assert_eq!(fail_at(last, 5, 10), last.find("ABCDEFGHIJ"));
        assert_eq!(fail_at(last, 5, 1), last.find("PID"));
    }

    #[test]
    fn positions_of_offsets() {
        let m = msg("MSH|^~\\&|A\rPID|1||a~b^c&d\r");
        let text = "MSH|^~\\&|A\rPID|1||a~b^c&d\r";
        let off = text.find('d').unwrap_or(0);
        let p = m.position_of(off);
        assert_eq!(Location::Hl7(p).to_string(), "PID[1]-3[2].2.2");
    }
}
