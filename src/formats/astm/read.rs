//! The ASTM reader: a message (H .. L) read into a [`Document`] whose records are spans of one
//! zeroizing buffer, with the delimiters its H record defines (E1394 section 7.1.2: the four
//! bytes after `H` are the field, repeat, component and escape delimiters, `|\^&` by default).
//!
//! A record the splitter makes carries a header before the message text: flags (framed, not in
//! canonical form), the number of E1381 frames the message came in, and the frame findings (code,
//! frame, offset: no value). A record without the header (what a redaction wrote) is read as
//! plain text.
//!
//! What it does not do: check anything but the delimiters and the limits (see `validate`), or
//! decode escape sequences (the model writer does).

use crate::diag::{AstmPosition, Code, Diagnostic, Location};
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

/// The record header's first four bytes (SOH never occurs in ASTM text).
pub const HEADER_MAGIC: [u8; 4] = [0x01, b'A', b'S', b'M'];
/// Length of the header before the text: magic, flags, frames, findings, text length.
pub const HEADER_LEN: usize = 15;
/// Length of one frame finding after the text: code, frame, offset.
pub const FINDING_LEN: usize = 13;
/// Header flag: the message came in E1381 frames.
pub const FLAG_FRAMED: u8 = 1;
/// Header flag: the message was not in canonical form (LF line ends, blank lines, no final CR).
pub const FLAG_NONCANONICAL: u8 = 2;

/// The codes a frame finding may carry, by index.
pub const FRAME_CODES: [Code; 7] = [
    Code::E1381_CHECKSUM_MISMATCH,
    Code::E1381_FRAME_NUMBER_INVALID,
    Code::E1381_FRAME_END_MISSING,
    Code::E1381_FRAME_TRAILER_INVALID,
    Code::E1381_FRAME_TOO_LONG,
    Code::E1381_DATA_OUTSIDE_FRAME,
    Code::E1381_RECORD_END_MISSING,
];

/// The record types of E1394 (and LIS2-A2), in hierarchy order.
pub const RECORD_TYPES: [&str; 9] = ["H", "P", "O", "R", "C", "Q", "M", "S", "L"];

/// The delimiters of a message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Delimiters {
    /// Field delimiter (`|`).
    pub field: u8,
    /// Repeat delimiter (`\`).
    pub repeat: u8,
    /// Component delimiter (`^`).
    pub component: u8,
    /// Escape character (`&`).
    pub escape: u8,
}

impl Default for Delimiters {
    fn default() -> Self {
        Delimiters { field: b'|', repeat: b'\\', component: b'^', escape: b'&' }
    }
}

impl Delimiters {
    /// The delimiters an H record defines (`H|\^&`), when they can be used: four distinct bytes,
    /// none a letter, digit, space, CR or LF, and the definition ends at a field delimiter.
    pub fn of_header(rec: &[u8]) -> Option<Delimiters> {
        let [f, r, c, e]: [u8; 4] = rec.get(1..5)?.try_into().ok()?;
        let rest = &rec[5..];
        let ok = |b: u8| !b.is_ascii_alphanumeric() && !matches!(b, b' ' | b'\r' | b'\n');
        let all = [f, r, c, e];
        let distinct = (0..4).all(|i| (i + 1..4).all(|j| all[i] != all[j]));
        (all.iter().all(|&b| ok(b)) && distinct && rest.first().is_none_or(|&b| b == f || b == b'\r' || b == b'\n'))
            .then_some(Delimiters { field: f, repeat: r, component: c, escape: e })
    }
}

/// A record type, by its index in [`RECORD_TYPES`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Type {
    /// Header.
    H,
    /// Patient information.
    P,
    /// Test order.
    O,
    /// Result.
    R,
    /// Comment.
    C,
    /// Request information (query).
    Q,
    /// Manufacturer information.
    M,
    /// Scientific.
    S,
    /// Message terminator.
    L,
}

impl Type {
    const ALL: [Type; 9] = [Type::H, Type::P, Type::O, Type::R, Type::C, Type::Q, Type::M, Type::S, Type::L];

    /// The type's letter.
    pub fn as_str(self) -> &'static str {
        RECORD_TYPES[self as usize]
    }

    /// The type a record id names.
    pub fn of(id: &[u8]) -> Option<Type> {
        match id {
            [b] => Type::ALL.iter().copied().find(|t| t.as_str().as_bytes()[0] == *b),
            _ => None,
        }
    }

    /// The type a letter of [`RECORD_TYPES`] names (policy selectors).
    pub fn from_name(name: &str) -> Option<Type> {
        Type::of(name.as_bytes())
    }
}

/// A record: its bytes in the buffer (without the terminator), its type, its occurrence.
#[derive(Copy, Clone, Debug)]
pub struct Rec {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
    /// The type; `None` for an id that is not one.
    pub kind: Option<Type>,
    /// 1-based occurrence of the type in the message (for `None`: the record's position).
    pub index: u32,
}

impl Rec {
    /// The record's position, for findings.
    pub fn position(&self) -> AstmPosition {
        AstmPosition::record(self.kind.map(Type::as_str), self.index)
    }
}

/// A frame finding carried by the record header.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FrameFinding {
    /// The code (one of [`FRAME_CODES`]).
    pub code: Code,
    /// 1-based frame count in the input.
    pub frame: u32,
    /// Byte offset of the frame's STX.
    pub offset: u64,
}

impl FrameFinding {
    /// The diagnostic.
    pub fn diagnostic(self) -> Diagnostic {
        Diagnostic::new(self.code, Location::Astm(AstmPosition::Frame { frame: self.frame, offset: self.offset }))
    }
}

/// A message read.
pub struct Document {
    buf: Phi<Vec<u8>>,
    /// The records, in order.
    pub records: Vec<Rec>,
    /// The delimiters (the defaults when the message has no H record).
    pub delimiters: Delimiters,
    /// The first record is an H record whose delimiters were read.
    pub has_header: bool,
    /// The message came in E1381 frames.
    pub framed: bool,
    /// The message was not in canonical form as it came.
    pub noncanonical: bool,
    /// How many frames the message came in.
    pub frames: u32,
    /// The frame findings.
    pub frame_findings: Vec<FrameFinding>,
    /// Start of the message text in the buffer.
    text_start: u32,
    /// End of the message text in the buffer.
    text_end: u32,
}

crate::debug_placeholder!(Document);

/// The header of a record made by the splitter (the text length and findings are written when
/// the message ends: see [`finish_header`]).
pub fn header_placeholder(out: &mut Vec<u8>) {
    out.extend_from_slice(&HEADER_MAGIC);
    out.extend_from_slice(&[0u8; HEADER_LEN - 4]);
}

/// Completes a record made by the splitter: `buf` holds [`header_placeholder`] and the text.
pub fn finish_header(buf: &mut Vec<u8>, flags: u8, frames: u32, findings: &[FrameFinding]) {
    let text_len = u32::try_from(buf.len().saturating_sub(HEADER_LEN)).unwrap_or(u32::MAX);
    let n = findings.len().min(usize::from(u16::MAX));
    if let Some(h) = buf.get_mut(4..HEADER_LEN) {
        h[0] = flags;
        h[1..5].copy_from_slice(&frames.to_le_bytes());
        h[5..7].copy_from_slice(&(n as u16).to_le_bytes());
        h[7..11].copy_from_slice(&text_len.to_le_bytes());
    }
    for f in &findings[..n] {
        let code = FRAME_CODES.iter().position(|c| *c == f.code).unwrap_or(0) as u8;
        buf.push(code);
        buf.extend_from_slice(&f.frame.to_le_bytes());
        buf.extend_from_slice(&f.offset.to_le_bytes());
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The header fields of a record: flags, frames, text range, findings.
type Header = (u8, u32, usize, usize, Vec<FrameFinding>);

fn header(b: &[u8]) -> Option<Header> {
    if !b.starts_with(&HEADER_MAGIC) || b.len() < HEADER_LEN {
        return None;
    }
    let flags = b[4];
    let frames = u32_at(b, 5)?;
    let n = usize::from(u16::from_le_bytes([b[9], b[10]]));
    let text_len = u32_at(b, 11)? as usize;
    let text_end = HEADER_LEN.checked_add(text_len)?;
    let mut findings = Vec::with_capacity(n);
    let mut at = text_end;
    for _ in 0..n {
        let f = b.get(at..at + FINDING_LEN)?;
        let code = *FRAME_CODES.get(usize::from(f[0]))?;
        let frame = u32_at(f, 1)?;
        let offset = u64::from_le_bytes(f[5..13].try_into().ok()?);
        findings.push(FrameFinding { code, frame, offset });
        at += FINDING_LEN;
    }
    (at == b.len()).then_some((flags, frames, HEADER_LEN, text_end, findings))
}

/// A fatal finding and the record's text (for `fmt` to pass it through).
pub type ReadError = Box<(Diagnostic, Vec<u8>)>;

/// The text of a record, without the splitter's header (what `fmt` passes through).
fn text_only(mut bytes: Vec<u8>) -> Vec<u8> {
    if let Some((_, _, start, end, _)) = header(&bytes) {
        bytes.truncate(end);
        bytes.drain(..start);
    }
    bytes
}

/// Reads a message.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read(bytes: Vec<u8>, limits: &Limits) -> Result<Document, ReadError> {
    let (flags, frames, text_start, text_end, frame_findings) = match header(&bytes) {
        Some(h) => h,
        None => (0, 0, 0, bytes.len(), Vec::new()),
    };
    let buf = Phi::new(bytes);
    let raw = buf.span().raw();
    let too_large = |at: AstmPosition, buf: Phi<Vec<u8>>| -> ReadError {
        let d = Diagnostic::new(Code::CLI_INPUT_TOO_LARGE, Location::Astm(at));
        Box::new((d, text_only(take(buf))))
    };
    if raw.len() > u32::MAX as usize {
        return Err(too_large(AstmPosition::record(None, 1), buf));
    }
    let text = &raw[text_start..text_end];
    let mut records = Vec::new();
    let mut delimiters = Delimiters::default();
    let mut has_header = false;
    let mut counts = [0u32; 9];
    let mut position = 0u32;
    let mut start = 0usize;
    while start < text.len() {
        let end = memchr::memchr2(b'\r', b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        let rec = &text[start..end];
        if !rec.is_empty() {
            position += 1;
            if position == 1 && rec.first() == Some(&b'H') && rec.get(1).is_none_or(|b| !b.is_ascii_alphanumeric()) {
                match Delimiters::of_header(rec) {
                    Some(d) => {
                        delimiters = d;
                        has_header = true;
                    }
                    None => {
                        let at = AstmPosition::record(Some("H"), 1).part(2, 0, 0);
                        let d = Diagnostic::new(Code::ASTM_DELIMITERS_INVALID, Location::Astm(at));
                        return Err(Box::new((d, text_only(take(buf)))));
                    }
                }
            }
            let id_end = memchr::memchr(delimiters.field, rec).unwrap_or(rec.len());
            let kind = Type::of(&rec[..id_end]);
            let index = match kind {
                Some(t) => {
                    counts[t as usize] += 1;
                    counts[t as usize]
                }
                None => position,
            };
            let r = Rec { start: (text_start + start) as u32, end: (text_start + end) as u32, kind, index };
            if records.len() as u64 >= u64::from(limits.max_segments)
                || rec.len() as u64 > u64::from(limits.max_field_bytes)
            {
                return Err(too_large(r.position(), buf));
            }
            records.push(r);
        }
        start = end + 1;
    }
    Ok(Document {
        buf,
        records,
        delimiters,
        has_header,
        framed: flags & FLAG_FRAMED != 0,
        noncanonical: flags & FLAG_NONCANONICAL != 0,
        frames,
        frame_findings,
        text_start: text_start as u32,
        text_end: text_end as u32,
    })
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

    /// The message text (its records with their terminators).
    pub fn text(&self) -> PhiBytes<'_> {
        self.buf.span().slice(self.text_start as usize, self.text_end as usize)
    }

    /// A record's bytes (without the terminator).
    pub fn record(&self, r: &Rec) -> PhiBytes<'_> {
        self.buf.span().slice(r.start as usize, r.end as usize)
    }

    /// The fields of a record as `(start, end)` spans of the buffer; field 1 (index 0) is the
    /// record type.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub fn fields(&self, r: &Rec, out: &mut Vec<(u32, u32)>) {
        out.clear();
        let raw = self.buf.span().raw();
        let rec = &raw[r.start as usize..r.end as usize];
        let mut at = r.start;
        for part in rec.split(|&b| b == self.delimiters.field) {
            let end = at + part.len() as u32;
            out.push((at, end));
            at = end + 1;
        }
    }

    /// A span of the buffer.
    pub fn span(&self, (a, b): (u32, u32)) -> PhiBytes<'_> {
        self.buf.span().slice(a as usize, b as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_of_the_header() {
        assert_eq!(Delimiters::of_header(b"H|\\^&"), Some(Delimiters::default()));
        assert_eq!(Delimiters::of_header(b"H|\\^&|||x"), Some(Delimiters::default()));
        assert_eq!(Delimiters::of_header(b"H|\\^&x"), None);
        assert_eq!(Delimiters::of_header(b"H||^&"), None);
        assert_eq!(Delimiters::of_header(b"H|A^&"), None);
        assert_eq!(Delimiters::of_header(b"H|\\^"), None);
        assert!(Delimiters::of_header(b"H!@#$!!").is_some());
    }

    #[test]
    fn header_round_trip() {
        let mut b = Vec::new();
        header_placeholder(&mut b);
        b.extend_from_slice(b"H|\\^&\rL|1|N\r");
        let f = FrameFinding { code: Code::E1381_CHECKSUM_MISMATCH, frame: 3, offset: 77 };
        finish_header(&mut b, FLAG_FRAMED, 2, &[f]);
        let doc = read(b, &Limits::default()).unwrap_or_else(|_| panic!("reads"));
        assert!(doc.framed && !doc.noncanonical && doc.has_header);
        assert_eq!(doc.frames, 2);
        assert_eq!(doc.frame_findings, vec![f]);
        assert_eq!(doc.records.len(), 2);
        assert_eq!(doc.records[1].kind, Some(Type::L));
    }
}
