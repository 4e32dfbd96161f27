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
pub fn parse_record(
    bytes: Vec<u8>,
    base_offset: u64,
    limits: &Limits,
    envelope: Option<Option<Delimiters>>,
) -> Result<Message, (Fatal, Phi<Vec<u8>>)> {
    let buf = Phi::new(bytes);
    let indexed = index(buf.span().raw(), base_offset, limits, envelope.map(Option::unwrap_or_default));
    match indexed {
        Ok((delimiters, segments, fields, terminators)) => {
            Ok(Message { buf, delimiters, segments, fields, terminators, base_offset })
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

type Index = (Delimiters, Vec<Segment>, Vec<Span>, Terminators);

fn index(bytes: &[u8], base_offset: u64, limits: &Limits, envelope: Option<Delimiters>) -> Result<Index, Fatal> {
    let at = |offset: usize| Location::Offset(base_offset + offset as u64);
    let fatal = |code: Code, offset: usize| Diagnostic::new(code, at(offset));
    let len = bytes.len();
    if len as u64 > limits.max_input_bytes || len > u32::MAX as usize {
        return Err(fatal(Code::CLI_INPUT_TOO_LARGE, 0));
    }
    let mut lexer = Lexer { bytes, pos: 0, terminators: Terminators::default() };
    if lexer.bytes.starts_with(b"\xEF\xBB\xBF") {
        lexer.pos = 3;
        lexer.terminators.bom = true;
    }
    // Skip leading blank lines and white space before the header.
    while lexer.pos < len && lexer.bytes[lexer.pos].is_ascii_whitespace() {
        lexer.pos += 1;
    }
    let head_start = lexer.pos;
    let rest = &lexer.bytes[head_start..];
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
    while let Some(line) = lexer.next_line() {
        if segments.len() as u64 >= u64::from(limits.max_segments) {
            return Err(fatal(Code::CLI_INPUT_TOO_LARGE, line.start as usize));
        }
        let position = segments.len() as u32 + 1;
        let seg = split_segment(lexer.bytes, line, &delimiters, &mut fields, position, limits)
            .map_err(|off| fatal(Code::CLI_INPUT_TOO_LARGE, off))?;
        let occurrence = match seg.name {
            Some(name) => counts.bump(name),
            None => position,
        };
        segments.push(Segment { occurrence, ..seg });
    }
    if segments.is_empty() {
        return Err(fatal(Code::NO_MSH_SEGMENT, head_start));
    }
    Ok((delimiters, segments, fields, lexer.terminators))
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
    for (i, &b) in enc.iter().enumerate() {
        let distinct = b != field && !enc[..i].contains(&b);
        if !crate::detect::is_delimiter_byte(b) || !distinct {
            return Err((Code::INVALID_ENCODING_CHARACTERS, 4 + i));
        }
    }
    Ok(Delimiters {
        field,
        component: enc[0],
        repetition: enc[1],
        escape: enc[2],
        subcomponent: enc[3],
        truncation: enc.get(4).copied(),
    })
}

struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
    terminators: Terminators,
}

impl Lexer<'_> {
    /// The next non-empty line, tallying terminators.
    fn next_line(&mut self) -> Option<Span> {
        let mut pending_empty = 0;
        loop {
            if self.pos >= self.bytes.len() {
                return None;
            }
            let rest = &self.bytes[self.pos..];
            let start = self.pos;
            let (end, next) = match memchr::memchr2(b'\r', b'\n', rest) {
                Some(i) if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') => {
                    self.terminators.crlf += 1;
                    (start + i, start + i + 2)
                }
                Some(i) if rest[i] == b'\r' => {
                    self.terminators.cr += 1;
                    (start + i, start + i + 1)
                }
                Some(i) => {
                    self.terminators.lf += 1;
                    (start + i, start + i + 1)
                }
                None => {
                    self.terminators.unterminated_last = true;
                    (self.bytes.len(), self.bytes.len())
                }
            };
            self.pos = next;
            let line = &self.bytes[start..end];
            if line.iter().all(|b| *b == b' ' || *b == b'\t') {
                // Blank line: counted when another segment follows.
                pending_empty += 1;
                undo_terminator(&mut self.terminators, &self.bytes[end..next]);
                continue;
            }
            self.terminators.empty_lines += pending_empty;
            return Some(Span { start: start as u32, end: end as u32 });
        }
    }
}

fn undo_terminator(t: &mut Terminators, term: &[u8]) {
    match term {
        b"\r\n" => t.crlf -= 1,
        b"\r" => t.cr -= 1,
        b"\n" => t.lf -= 1,
        _ => t.unterminated_last = false,
    }
}

/// Splits one segment line into fields. Errors carry the offset of an over-long field.
fn split_segment(
    bytes: &[u8],
    line: Span,
    d: &Delimiters,
    fields: &mut Vec<Span>,
    position: u32,
    limits: &Limits,
) -> Result<Segment, usize> {
    let text = &bytes[line.range()];
    let id_len = text.iter().position(|&b| b == d.field).unwrap_or(text.len());
    let id = Span { start: line.start, end: line.start + id_len as u32 };
    let name = segment_ids::schema_name(&text[..id_len]);
    let first_field = fields.len() as u32;
    let is_header = is_header_id(&text[..id_len]);
    let max_field = limits.max_field_bytes as usize;
    if id_len < text.len() {
        let first = id_len + 1; // just after the first field separator
        if is_header {
            // MSH-1 is the separator itself; MSH-2 runs to the next separator and is not split.
            fields.push(Span { start: line.start + id_len as u32, end: line.start + id_len as u32 + 1 });
        }
        let base = line.start as usize;
        let split_from = fields.len();
        let (start, longest) = split_fields(d.field, text, first, base, fields);
        if longest as usize > max_field {
            let spans = fields.get(split_from..).unwrap_or_default();
            if let Some(long) = spans.iter().find(|s| (s.end - s.start) as usize > max_field) {
                return Err(long.start as usize);
            }
        }
        if text.len() - start > max_field {
            return Err(base + start);
        }
        fields.push(Span { start: (base + start) as u32, end: (base + text.len()) as u32 });
    }
    let field_count = fields.len() as u32 - first_field;
    Ok(Segment { span: line, id, name, first_field, field_count, position, occurrence: position })
}

/// Pushes the span of every field of `text` (a segment line at `base` in the message) that
/// ends at a `sep` at or after `first`. Returns the start of the last field (which no
/// separator ends) and the length of the longest field pushed.
///
/// Eight bytes at a time (a word compared with the separator repeated, zero bytes found
/// exactly), with the field start kept in a register: fields are a few bytes long on average,
/// too short for a vectorised search to pay for its set-up at each one.
fn split_fields(sep: u8, text: &[u8], first: usize, base: usize, fields: &mut Vec<Span>) -> (usize, u32) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let pattern = ONES * u64::from(sep);
    let rest = text.get(first..).unwrap_or_default();
    // Offsets in the message buffer (they fit in `u32`: checked against the input size).
    let mut start = (base + first) as u32;
    let mut at = start;
    let mut longest = 0;
    let mut words = rest.chunks_exact(8);
    for word in &mut words {
        // Invariant: `chunks_exact(8)` gives 8-byte chunks, so the conversion cannot fail.
        let v = u64::from_le_bytes(word.try_into().unwrap_or([0; 8])) ^ pattern;
        // 0x80 in every byte of `v` that is zero, and nowhere else (no borrow between bytes).
        let mut zeros = !(((v & LOW7) + LOW7) | v | LOW7);
        while zeros != 0 {
            let end = at + zeros.trailing_zeros() / 8;
            longest = longest.max(end - start);
            fields.push(Span { start, end });
            start = end + 1;
            zeros &= zeros - 1;
        }
        at += 8;
    }
    for &b in words.remainder() {
        if b == sep {
            longest = longest.max(at - start);
            fields.push(Span { start, end: at });
            start = at + 1;
        }
        at += 1;
    }
    (start as usize - base, longest)
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

    fn code(s: &[u8]) -> Code {
        match parse(s.to_vec(), &Limits::default()) {
            Ok(_) => panic!("expected failure"),
            Err(d) => d.code,
        }
    }

    #[test]
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
    }

    #[test]
    fn word_search_finds_every_offset() {
        // Every byte value next to the searched one (a borrow between bytes would show here).
        let bytes: Vec<u8> = (0..=255u8).flat_map(|b| [b, b'|', b.wrapping_add(1), 0x7C ^ 1, 0x80 | b]).collect();
        for len in [0, 1, 7, 8, 9, 15, 16, 17, bytes.len()] {
            let hay = &bytes[..len];
            for needle in [b'|', 0, 0x80, 0xFF, 0x7D] {
                for (first, base) in [(0, 0), (1, 100)] {
                    let first = first.min(len);
                    let mut fields = Vec::new();
                    let (last, longest) = split_fields(needle, hay, first, base, &mut fields);
                    let seps: Vec<usize> = (first..hay.len()).filter(|&i| hay[i] == needle).collect();
                    let mut start = first;
                    let mut expected = Vec::new();
                    for &sep in &seps {
                        expected.push(Span { start: (base + start) as u32, end: (base + sep) as u32 });
                        start = sep + 1;
                    }
                    assert_eq!(fields, expected, "{needle} in {len} bytes");
                    assert_eq!(last, start);
                    assert_eq!(longest, expected.iter().map(|s| s.end - s.start).max().unwrap_or(0));
                }
            }
        }
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
