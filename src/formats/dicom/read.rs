//! A DICOM record read into a [`Document`]: the record's bytes in one `Phi` buffer and the
//! lexer's elements as spans into it.
//!
//! A record is what the splitter made (see `source`); bytes that are not one (a redacted file
//! read again, a fuzz input) are first cut the same way, from memory.
//!
//! What it does not do: check values (see `validate`) or write them (see `write`).

use super::lex::{self, Element, Kind, Lexed};
use super::source::{self, Slice, Val};
use crate::diag::{Code, Diagnostic, DicomPosition, Location};
use crate::formats::codec::Fatal;
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

/// A DICOM file read: values are spans of one zeroizing buffer.
#[derive(Debug)]
pub struct Document {
    buf: Phi<Vec<u8>>,
    /// What the lexer read (value-free: tags, VRs, lengths, spans, offsets).
    pub lexed: Lexed,
    /// The input had the 128-byte preamble and `DICM`.
    pub preamble: bool,
}

impl Document {
    /// The elements.
    pub fn elements(&self) -> &[Element] {
        &self.lexed.elements
    }

    /// The value of element `i` (empty when it has none or was left out of the record).
    pub fn value(&self, i: usize) -> PhiBytes<'_> {
        match self.lexed.elements.get(i).map(|e| e.value) {
            Some(Val::Span { start, len }) => self.buf.span().slice(start as usize, start as usize + len as usize),
            _ => self.buf.span().slice(0, 0),
        }
    }

    /// The tag path and offset of element `i`.
    pub fn position(&self, i: usize) -> DicomPosition {
        let at = self.lexed.elements.get(i).map_or(u64::MAX, |e| e.offset);
        self.lexed.position(i, at)
    }

    /// The first top-level dataset element with `tag`.
    pub fn top(&self, tag: u32) -> Option<usize> {
        self.lexed.elements.iter().position(|e| e.depth == 0 && e.tag == tag && e.kind != Kind::Fragment)
    }

    /// True when `bytes` are the record's bytes after its header (the input from the meta on).
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser: compares the record with bytes written from it; returns a flag"
    )]
    pub fn same_as_record(&self, bytes: &[u8]) -> bool {
        self.buf.span().raw().get(source::HEADER..) == Some(bytes)
    }

    /// The size of the record (the input's bytes from the meta on, bulk values left out
    /// excepted): what a writer reserves for the file it writes from it.
    #[expect(clippy::disallowed_methods, reason = "a buffer size for the writer, not a value's length")]
    pub fn record_len(&self) -> usize {
        self.buf.span().raw().len()
    }

    /// Why the reader stopped before the input's end (a truncated file, a lying length, a stray
    /// delimiter, a bad VR), when it was read in part ([`read_partial`]): the elements are
    /// those read completely before the break.
    pub fn broken(&self) -> Option<Diagnostic> {
        self.lexed.fatal
    }

    /// True when element `i`'s value was left out of the record (a bulk value past the
    /// budget, see `source`).
    pub fn elided(&self, i: usize) -> bool {
        self.lexed.elements.get(i).is_some_and(|e| e.value == Val::Elided)
    }
}

/// Reads a record (or raw Part 10 bytes, cut first). An input that breaks before its end is
/// refused (see [`read_partial`]).
pub fn read(bytes: Vec<u8>, limits: &Limits) -> Result<Document, Fatal> {
    read_partial(bytes, limits, false)
}

/// [`read`]; with `partial`, an input that breaks before its end (`DICOM_TRUNCATED`,
/// `DICOM_LENGTH_INVALID`, `DICOM_DELIMITER_UNEXPECTED`, `DICOM_VR_INVALID`,
/// `DICOM_DEFLATE_INVALID`) is a document of the elements read completely before the break,
/// with the break as [`Document::broken`] (what `parse`, `validate` and `inspect` report, as
/// dcmdump does). A limit (`CLI_INPUT_TOO_LARGE`) is always refused, and so is an input broken
/// before its first element was read whole. A writer of Part 10 bytes
/// writes nothing for a broken document: a part is never written as if it were whole.
pub fn read_partial(bytes: Vec<u8>, limits: &Limits, partial: bool) -> Result<Document, Fatal> {
    let bytes = if Slice::new(&bytes).is_some() {
        bytes
    } else {
        let mut raw = bytes;
        let cut = source::split(Box::new(std::io::Cursor::new(&raw[..])), limits, true);
        crate::phi::wipe(&mut raw);
        match cut {
            Some(b) => b,
            None => {
                let cause = Diagnostic::new(Code::CLI_INPUT_TOO_LARGE, Location::Dicom(DicomPosition::new(0)));
                return Err(Fatal { cause, bytes: None });
            }
        }
    };
    let preamble = Slice::had_preamble(&bytes);
    let lexed = match Slice::new(&bytes) {
        Some(mut s) => lex::lex(&mut s, limits),
        None => Lexed::default(),
    };
    let buf = Phi::new(bytes);
    if let Some(cause) = lexed.fatal {
        // Broken before a single element was read whole: nothing to report but the break, so
        // the input is refused as unreadable (exit 65), as it was before partial reads.
        if !partial || cause.code == Code::CLI_INPUT_TOO_LARGE || lexed.elements.is_empty() {
            return Err(Fatal { cause, bytes: Some(buf) });
        }
    }
    Ok(Document { buf, lexed, preamble })
}
