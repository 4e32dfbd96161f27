//! The NCPDP Telecommunication D.0 reader: one transmission read into a [`Document`] whose
//! header fields, segments and fields are spans of one zeroizing buffer.
//!
//! A transmission is a fixed-width transaction header (a request's 56 characters: BIN 6,
//! version/release 2, transaction code 2, processor control number 10, transaction count 1,
//! service provider id qualifier 2 and id 15, date of service 8, software vendor/certification id
//! 10; a response's 31: version 2, transaction code 2, count 1, header response status 1, service
//! provider id qualifier 2 and id 15, date of service 8), then segments, each the segment
//! separator 0x1E, then fields, each the field separator 0x1C, a two-character field id and the
//! value. The first field of a segment is the segment identification `AM` and a two-digit id.
//! The segments before the first group separator 0x1D are the transmission level; each group
//! separator opens a transaction (group).
//!
//! The header is told by where the first separator is: at 56 (a request) or at 31 (a response);
//! a transmission of the header alone, by its width.
//!
//! What it does not do: check values (see `validate`), or decode anything (the standard's values
//! are printable characters).

use super::tables;
use crate::diag::{Code, Diagnostic, Location, NcpdpPosition, NcpdpSegment};
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

/// The segment separator.
pub const SEGMENT_SEPARATOR: u8 = 0x1E;
/// The group (transaction) separator.
pub const GROUP_SEPARATOR: u8 = 0x1D;
/// The field separator.
pub const FIELD_SEPARATOR: u8 = 0x1C;

/// A request or a response.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A request (from a pharmacy).
    Request,
    /// A response (from a processor).
    Response,
}

impl Kind {
    /// The kind's name, as in the JSON model and `inspect`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Response => "response",
        }
    }

    /// The header's fields: id, name, width.
    pub fn header(self) -> &'static [(&'static str, &'static str, usize)] {
        match self {
            Kind::Request => tables::REQUEST_HEADER,
            Kind::Response => tables::RESPONSE_HEADER,
        }
    }

    /// The header's width.
    pub fn header_len(self) -> usize {
        match self {
            Kind::Request => tables::REQUEST_HEADER_LEN,
            Kind::Response => tables::RESPONSE_HEADER_LEN,
        }
    }
}

/// A field of a segment.
#[derive(Copy, Clone, Debug)]
pub struct Field {
    /// First byte (of the id) in the buffer.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
    /// The field's index in [`tables::FIELDS`]; `None` for an id that is not one (or a field
    /// shorter than an id).
    pub def: Option<u16>,
    /// 1-based occurrence of the id in its segment.
    pub occurrence: u16,
    /// 1-based position in its segment (the segment identification is 1).
    pub position: u16,
}

impl Field {
    /// The field's id, when it is one of the dictionary.
    pub fn id(&self) -> Option<&'static str> {
        self.def.and_then(|i| tables::FIELDS.get(usize::from(i))).map(|f| f.0)
    }

    /// The field's place, for findings (an id with its occurrence, or the position).
    pub fn place(&self) -> crate::diag::NcpdpField {
        match self.id() {
            Some(id) => crate::diag::NcpdpField::Id(id, if self.occurrence > 1 { self.occurrence } else { 0 }),
            None => crate::diag::NcpdpField::Index(self.position),
        }
    }

    /// The span of the value (after the id).
    pub fn value_span(&self) -> (u32, u32) {
        ((self.start + 2).min(self.end), self.end)
    }
}

/// A segment.
#[derive(Copy, Clone, Debug)]
pub struct Segment {
    /// 1-based transaction (group); 0: the transmission level.
    pub transaction: u32,
    /// 1-based position among the segments of its transaction (or of the transmission level).
    pub position: u32,
    /// Its index in [`tables::SEGMENTS`], from its segment identification field; `None` when it
    /// has none or the id is not one.
    pub def: Option<u8>,
    /// It starts with a segment identification field (`AM` and two characters).
    pub has_id: bool,
    /// Its fields: a range of [`Document::fields`].
    pub fields: (u32, u32),
    /// Bytes between the segment separator and the first field separator (a gap).
    pub lead: (u32, u32),
}

impl Segment {
    /// The segment's id (`AM07`), when it is one of D.0.
    pub fn id(&self) -> Option<&'static str> {
        self.def.and_then(|i| tables::SEGMENTS.get(usize::from(i))).map(|s| s.0)
    }

    /// The segment's name, when it is one of D.0.
    pub fn name(&self) -> Option<&'static str> {
        self.def.and_then(|i| tables::SEGMENTS.get(usize::from(i))).map(|s| s.1)
    }

    /// The segment's place, for findings.
    pub fn position(&self) -> NcpdpPosition {
        let segment = match self.id() {
            Some(id) => NcpdpSegment::Id(id),
            None => NcpdpSegment::Index(self.position),
        };
        NcpdpPosition::segment(self.transaction, segment)
    }
}

/// Bytes between a group separator (or the header) and the first segment separator.
#[derive(Copy, Clone, Debug)]
pub struct Gap {
    /// 1-based transaction (0: after the header).
    pub transaction: u32,
    /// The bytes.
    pub span: (u32, u32),
}

/// A transmission read.
pub struct Document {
    buf: Phi<Vec<u8>>,
    /// Request or response.
    pub kind: Kind,
    /// The segments, in order.
    pub segments: Vec<Segment>,
    /// The fields of all segments, in order.
    pub fields: Vec<Field>,
    /// The number of group separators (transactions).
    pub groups: u32,
    /// Bytes outside any segment.
    pub gaps: Vec<Gap>,
    /// End of the transmission (before its line end).
    text_end: u32,
    /// The transmission ended with exactly one LF (canonical).
    pub lf_terminated: bool,
}

crate::debug_placeholder!(Document);

/// A fatal finding and the record's bytes (for `fmt` to pass it through).
pub type ReadError = Box<(Diagnostic, Vec<u8>)>;

/// True when `b` holds none of the three separators.
fn plain(b: &[u8]) -> bool {
    !b.iter().any(|&c| matches!(c, SEGMENT_SEPARATOR | GROUP_SEPARATOR | FIELD_SEPARATOR | b'\r' | b'\n'))
}

/// The kind of a transmission, from where its header ends.
pub fn kind_of(text: &[u8]) -> Option<Kind> {
    let fits = |len: usize| {
        text.get(..len).is_some_and(plain)
            && (text.len() == len || text[len] == SEGMENT_SEPARATOR || text[len] == GROUP_SEPARATOR)
    };
    if fits(tables::REQUEST_HEADER_LEN) {
        Some(Kind::Request)
    } else if fits(tables::RESPONSE_HEADER_LEN) {
        Some(Kind::Response)
    } else {
        None
    }
}

/// Reads a transmission (its bytes, with or without a line end).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read(bytes: Vec<u8>, limits: &Limits) -> Result<Document, ReadError> {
    let buf = Phi::new(bytes);
    let raw = buf.span().raw();
    let fail = |code: Code, at: NcpdpPosition, buf: Phi<Vec<u8>>| -> ReadError {
        Box::new((Diagnostic::new(code, Location::Ncpdp(at)), take(buf)))
    };
    if raw.len() > u32::MAX as usize - 1 {
        return Err(fail(Code::CLI_INPUT_TOO_LARGE, NcpdpPosition::segment(0, NcpdpSegment::None), buf));
    }
    let mut text_end = raw.len();
    let lf_terminated = raw.ends_with(b"\n") && !raw.ends_with(b"\r\n");
    while text_end > 0 && matches!(raw[text_end - 1], b'\r' | b'\n') {
        text_end -= 1;
    }
    let lf_terminated = lf_terminated && text_end + 1 == raw.len();
    let text = &raw[..text_end];
    let Some(kind) = kind_of(text) else {
        return Err(fail(Code::NCPDP_HEADER_INVALID, NcpdpPosition::segment(0, NcpdpSegment::Header), buf));
    };
    let mut segments = Vec::new();
    let mut fields = Vec::new();
    // Occurrences of each dictionary id in the segment being read, and the ids to reset.
    let mut seen = vec![0u16; tables::FIELDS.len()];
    let mut touched: Vec<usize> = Vec::new();
    let mut gaps = Vec::new();
    let mut transaction = 0u32;
    let mut at = kind.header_len();
    for part in text[at..].split(|&b| b == GROUP_SEPARATOR) {
        let part_start = at;
        at += part.len() + 1;
        let mut position = 0u32;
        let mut seg_at = part_start;
        for (k, seg) in part.split(|&b| b == SEGMENT_SEPARATOR).enumerate() {
            let seg_start = seg_at;
            seg_at += seg.len() + 1;
            if k == 0 {
                if !seg.is_empty() {
                    gaps.push(Gap { transaction, span: (seg_start as u32, (seg_start + seg.len()) as u32) });
                }
                continue;
            }
            position += 1;
            let first = fields.len() as u32;
            let mut lead = (seg_start as u32, seg_start as u32);
            let mut field_at = seg_start;
            let mut field_no = 0u16;
            for (j, f) in seg.split(|&b| b == FIELD_SEPARATOR).enumerate() {
                let f_start = field_at;
                field_at += f.len() + 1;
                if j == 0 {
                    lead = (f_start as u32, (f_start + f.len()) as u32);
                    continue;
                }
                field_no = field_no.saturating_add(1);
                let def = f.get(..2).and_then(tables::field).map(|i| i as u16);
                let occurrence = match def {
                    Some(d) => {
                        let n = &mut seen[usize::from(d)];
                        if *n == 0 {
                            touched.push(usize::from(d));
                        }
                        *n = n.saturating_add(1);
                        *n
                    }
                    None => 1,
                };
                let field = Field {
                    start: f_start as u32,
                    end: (f_start + f.len()) as u32,
                    def,
                    occurrence,
                    position: field_no,
                };
                if f.len() as u64 > u64::from(limits.max_field_bytes) || field_no == u16::MAX {
                    let s = Segment { transaction, position, def: None, has_id: false, fields: (first, first), lead };
                    return Err(fail(Code::CLI_INPUT_TOO_LARGE, s.position().field(field.place()), buf));
                }
                fields.push(field);
            }
            for d in touched.drain(..) {
                seen[d] = 0;
            }
            let id_field = fields.get(first as usize).filter(|f| f.def == tables::field(b"AM").map(|i| i as u16));
            let has_id = id_field.is_some_and(|f| f.end - f.start == 4);
            let def = id_field
                .filter(|_| has_id)
                .and_then(|f| tables::segment(&raw[f.start as usize + 2..f.end as usize]))
                .map(|i| i as u8);
            let s = Segment { transaction, position, def, has_id, fields: (first, fields.len() as u32), lead };
            if segments.len() as u64 >= u64::from(limits.max_segments) {
                return Err(fail(Code::CLI_INPUT_TOO_LARGE, s.position(), buf));
            }
            segments.push(s);
        }
        transaction += 1;
    }
    let groups = transaction.saturating_sub(1);
    Ok(Document { buf, kind, segments, fields, groups, gaps, text_end: text_end as u32, lf_terminated })
}

/// The buffer's bytes, moved out of the `Phi` (for a failed record's pass-through).
#[expect(clippy::disallowed_methods, reason = "a parser: the failed record's bytes go back to the pipeline, in Phi")]
fn take(buf: Phi<Vec<u8>>) -> Vec<u8> {
    buf.span().raw().to_vec()
}

impl Document {
    /// The whole buffer.
    pub(crate) fn bytes(&self) -> PhiBytes<'_> {
        self.buf.span()
    }

    /// The transmission without its line end.
    pub fn text(&self) -> PhiBytes<'_> {
        self.buf.span().slice(0, self.text_end as usize)
    }

    /// A span of the buffer.
    pub fn span(&self, (a, b): (u32, u32)) -> PhiBytes<'_> {
        self.buf.span().slice(a as usize, b as usize)
    }

    /// The header's fields as `(id, name, span)`, in order.
    pub fn header(&self) -> impl Iterator<Item = (&'static str, &'static str, (u32, u32))> + '_ {
        let mut at = 0u32;
        self.kind.header().iter().map(move |&(id, name, width)| {
            let span = (at, at + width as u32);
            at += width as u32;
            (id, name, span)
        })
    }

    /// The span of a header field by id.
    pub fn header_field(&self, id: &str) -> Option<(u32, u32)> {
        self.header().find(|h| h.0 == id).map(|h| h.2)
    }

    /// The fields of a segment.
    pub fn fields_of(&self, s: &Segment) -> &[Field] {
        self.fields.get(s.fields.0 as usize..s.fields.1 as usize).unwrap_or_default()
    }

    /// The segments of a transaction (0: the transmission level): a slice found by binary
    /// search (segments are in transaction order), so a pass over every transaction is linear.
    pub fn segments_of(&self, transaction: u32) -> &[Segment] {
        let a = self.segments.partition_point(|s| s.transaction < transaction);
        let b = self.segments.partition_point(|s| s.transaction <= transaction);
        &self.segments[a..b]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn header(code: &str, count: u8) -> Vec<u8> {
        let mut h = format!("610014D0{code}PCN1234567{count}01123456789012345202403150VENDOR001").into_bytes();
        h.truncate(56);
        h
    }

    #[test]
    fn reads_a_request() {
        let mut b = header("B1", 1);
        b.extend_from_slice(b"\x1e\x1cAM04\x1cC2ID123\x1d\x1e\x1cAM07\x1cEM1\x1cD2123\x1e\x1cAM11\x1cDU100{");
        let doc = read(b, &Limits::default()).unwrap_or_else(|_| panic!("reads"));
        assert_eq!(doc.kind, Kind::Request);
        assert_eq!(doc.groups, 1);
        assert_eq!(doc.segments.len(), 3);
        assert_eq!(doc.segments[0].id(), Some("AM04"));
        assert_eq!(doc.segments[1].transaction, 1);
        assert_eq!(doc.fields_of(&doc.segments[1]).len(), 3);
        assert!(doc.gaps.is_empty());
    }

    #[test]
    fn tells_request_from_response() {
        assert_eq!(kind_of(&header("B1", 1)), Some(Kind::Request));
        let mut r = b"D0B11A011234567890123452024031".to_vec();
        r.push(b'5');
        assert_eq!(kind_of(&r), Some(Kind::Response));
        r.push(SEGMENT_SEPARATOR);
        assert_eq!(kind_of(&r), Some(Kind::Response));
        assert_eq!(kind_of(b"D0B1"), None);
        assert!(read(b"MSH|^~\\&".to_vec(), &Limits::default()).is_err());
    }
}
