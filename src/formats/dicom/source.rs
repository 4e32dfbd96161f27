//! Where the lexer's bytes come from, and the record the splitter hands the reader.
//!
//! A DICOM input is one record. The splitter ([`split`]) runs the lexer over the input stream
//! ([`Stream`]) and copies what it reads into the record, except the bulk values (pixel data,
//! fragments, OB/OD/OF/OL/OV/OW/UN values of [`BULK_MIN`] bytes or more) that come after the
//! first one that would take the bulk bytes kept past [`BULK_KEPT`]: those are skipped, never
//! held, and the record's header says from which input offset on they are left out. The reader
//! runs the same lexer over the record ([`Slice`]) and knows which values are absent by the same
//! rule, so offsets in findings are offsets in the input. Memory is then bounded by the header
//! elements and [`BULK_KEPT`], not by the file (a 2 GB multi-frame file is read in a few MB).
//! A command that reads structure only (`parse`, `validate`, `inspect`: `Settings::bulk_values`
//! false) keeps no bulk value: the budget counts as passed at the first one, and every bulk
//! value from there on is skipped as it streams by (a CT slice's pixel data is never copied).
//! Nothing they write depends on it: `write` makes a descriptor of every bulk value and
//! `validate` checks none (see `lex::is_bulk`). From a regular file ([`split_file`]) a skipped
//! value is sought past instead of read: the header read of a CT slice reads its header (within
//! the 64 KiB detection prefix), not its pixel data. The lexer goes on after the value as it
//! does for a stream (elements after the pixel data, trailing padding), and a value cut short
//! by the file's end is the same finding at the same offset: the record is the same bytes.
//!
//! A deflated dataset (Deflated Explicit VR Little Endian, PS3.5 Section A.5): when the lexer
//! reaches the end of the file meta and the transfer syntax is deflated, it asks the source to
//! [`Source::inflate`]; the splitter then reads the rest of the input through a raw deflate
//! (RFC 1951) decoder ([`Inflater`]) and the record holds the *inflated* dataset. Offsets after
//! the file meta are then offsets in the inflated stream, counted on from the meta's end (the
//! file as it would be with its dataset inflated). The inflated bytes, kept or skipped, count
//! against `max_input_bytes` (a zip bomb is `CLI_INPUT_TOO_LARGE`, found while inflating); a
//! corrupt stream, or one that ends before its final block, is `DICOM_DEFLATE_INVALID`, recorded
//! in the record's header so the reader stops at the same place with the same code. Bytes after
//! the stream's final block (the pad byte of an odd-length stream) are not read.
//!
//! The record: [`MAGIC`], the input offset from which bulk values are left out (`u64::MAX`:
//! none), the input offset where the splitter stopped, one flag byte (1: the input had a
//! preamble), one byte for how the inflater ended (0: fine or not deflated, 1: invalid), then
//! the input's bytes from the file meta on (the 128-byte preamble and `DICM` are not kept; a
//! deflated dataset inflated).
//!
//! What it does not do: interpret bytes (see `lex`).

use std::io::{BufRead, Read as _};

use flate2::{Decompress, FlushDecompress, Status};

use super::lex::{self, Lexed};
use crate::diag::Code;
use crate::formats::file_input::FileInput;
use crate::limits::Limits;

/// The record's first bytes.
pub const MAGIC: &[u8; 8] = b"\0phwDCM2";
/// The record header's length.
pub const HEADER: usize = 8 + 8 + 8 + 1 + 1;
/// A value of a bulk VR this long or longer is a bulk value (written as a descriptor, and left
/// out of the record once [`BULK_KEPT`] is passed).
pub const BULK_MIN: u32 = 1024;
/// Most bytes of bulk values a record holds; the bulk values after are left out.
pub const BULK_KEPT: u64 = 32 * 1024 * 1024;

/// A value, as the lexer sees it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Val {
    /// No value (sequence, item, delimiter).
    None,
    /// Bytes `start..start+len` of the record.
    Span {
        /// Start in the record.
        start: u32,
        /// Length.
        len: u32,
    },
    /// A bulk value left out of the record (its length is the element's).
    Elided,
}

/// The input ended early.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Short;

/// What the lexer reads from.
pub trait Source {
    /// The input offset of the next byte.
    fn offset(&self) -> u64;
    /// Fills `buf` with the next bytes; `Err` when the input ends first.
    fn header(&mut self, buf: &mut [u8]) -> Result<(), Short>;
    /// A value of `len` bytes of the element whose header is at input offset `at`.
    fn value(&mut self, at: u64, len: u32, bulk: bool) -> Result<Val, Short>;
    /// True when no byte is left.
    fn at_end(&mut self) -> bool;
    /// The record's bytes of a kept value.
    fn kept(&self, start: u32, len: u32) -> &[u8];
    /// The record grew past the limit (the lexer stops).
    fn over(&self) -> bool {
        false
    }
    /// The dataset from here on is deflated: the last `back` bytes read (the first bytes of the
    /// deflated stream, read as a tag) are given back, and what follows is read inflated.
    fn inflate(&mut self, back: usize);
    /// Why the input cannot be read on (a broken deflate stream), once it ended.
    fn broken(&self) -> Option<Code> {
        None
    }
}

/// How an [`Inflater`] stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Inflating {
    /// More may come.
    Running,
    /// The final block was read.
    Ended,
    /// The stream is not valid deflate, or the input ended before its final block.
    Invalid,
    /// The inflated bytes passed the limit.
    TooLarge,
}

/// A raw deflate (RFC 1951, no zlib header) decoder over a [`BufRead`], itself read as one:
/// it stops (and says why) at the end of the stream, at corrupt data, at input that ends early,
/// and when the inflated bytes pass `limit`.
pub struct Inflater<'a> {
    inner: Box<dyn BufRead + 'a>,
    z: Decompress,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    state: Inflating,
    limit: u64,
}

crate::debug_placeholder!(Inflater<'a>);

impl Drop for Inflater<'_> {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.buf);
    }
}

impl<'a> Inflater<'a> {
    /// A decoder of `inner` that inflates at most `limit` bytes.
    pub fn new(inner: Box<dyn BufRead + 'a>, limit: u64) -> Self {
        Inflater {
            inner,
            z: Decompress::new(false),
            buf: vec![0; 64 * 1024],
            pos: 0,
            len: 0,
            state: Inflating::Running,
            limit,
        }
    }

    /// The next inflated bytes; `None` at the end (see [`Inflater::invalid`]).
    fn fill(&mut self) -> Option<&[u8]> {
        while self.pos == self.len {
            if self.state != Inflating::Running {
                return None;
            }
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let (status, eof) = match self.inner.fill_buf() {
                Ok(input) => (self.z.decompress(input, &mut self.buf, FlushDecompress::None), input.is_empty()),
                Err(_) => (Ok(Status::BufError), true),
            };
            let used = usize::try_from(self.z.total_in() - in0).unwrap_or(0);
            let made = usize::try_from(self.z.total_out() - out0).unwrap_or(0).min(self.buf.len());
            self.inner.consume(used);
            (self.pos, self.len) = (0, made);
            self.state = match status {
                Err(_) => Inflating::Invalid,
                Ok(Status::StreamEnd) => Inflating::Ended,
                // No progress: the input ended (or stalls) before the final block.
                Ok(_) if used == 0 && made == 0 => Inflating::Invalid,
                Ok(_) if eof && made == 0 => Inflating::Invalid,
                Ok(_) => Inflating::Running,
            };
            if self.z.total_out() > self.limit {
                self.state = Inflating::TooLarge;
                self.len = 0;
            }
        }
        Some(&self.buf[self.pos..self.len])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }

    /// True when the stream turned out not to be valid deflate, or ended early.
    pub fn invalid(&self) -> bool {
        self.state == Inflating::Invalid
    }

    /// True when the inflated bytes passed the limit.
    pub fn too_large(&self) -> bool {
        self.state == Inflating::TooLarge
    }
}

/// Where a [`Stream`] reads from: the input, a regular file (skipped bytes are sought past, not
/// read), or the input inflated.
enum Input<'a> {
    Raw(Box<dyn BufRead + 'a>),
    File(FileInput),
    Deflated(Inflater<'a>),
}

impl Input<'_> {
    fn fill(&mut self) -> Option<&[u8]> {
        match self {
            Input::Raw(r) => match r.fill_buf() {
                Ok(b) if !b.is_empty() => Some(b),
                _ => None,
            },
            Input::File(f) => match f.fill_buf() {
                Ok(b) if !b.is_empty() => Some(b),
                _ => None,
            },
            Input::Deflated(d) => d.fill(),
        }
    }

    fn consume(&mut self, n: usize) {
        match self {
            Input::Raw(r) => r.consume(n),
            Input::File(f) => f.consume(n),
            Input::Deflated(d) => d.consume(n),
        }
    }
}

/// The input stream, copied into the record as it is read (bulk values past the budget
/// skipped).
pub struct Stream<'a> {
    input: Input<'a>,
    /// The bytes read ahead to look for the preamble, not yet given out.
    ahead: Vec<u8>,
    ahead_pos: usize,
    /// The record being written.
    pub out: Vec<u8>,
    offset: u64,
    kept_bulk: u64,
    /// Bulk values at or after this input offset are left out.
    pub elide_from: u64,
    /// Bulk values are kept up to [`BULK_KEPT`] (false: none is, see [`split`]).
    keep_bulk: bool,
    cap: u64,
    too_large: bool,
}

crate::debug_placeholder!(Stream<'a>);

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.out);
        crate::phi::wipe(&mut self.ahead);
    }
}

impl<'a> Stream<'a> {
    fn next_chunk(&mut self) -> Option<&[u8]> {
        if self.ahead_pos < self.ahead.len() {
            return Some(&self.ahead[self.ahead_pos..]);
        }
        self.input.fill()
    }

    fn consume(&mut self, n: usize) {
        if self.ahead_pos < self.ahead.len() {
            self.ahead_pos += n;
        } else {
            self.input.consume(n);
        }
        self.offset += n as u64;
    }

    /// Copies (or, `keep` false, skips) `n` bytes; false when the input ends first (what was
    /// there is copied).
    fn pass(&mut self, mut n: u64, keep: bool) -> bool {
        while n > 0 {
            // Skipped bytes of a regular file are sought past: the same bytes, not read.
            if !keep
                && self.ahead_pos >= self.ahead.len()
                && let Input::File(f) = &mut self.input
            {
                let skipped = f.skip(n);
                self.offset += skipped;
                return skipped == n;
            }
            let chunk: &[u8] = if self.ahead_pos < self.ahead.len() {
                &self.ahead[self.ahead_pos..]
            } else {
                match self.input.fill() {
                    Some(b) => b,
                    None => return false,
                }
            };
            let take = chunk.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            if keep {
                if (self.out.len() + take) as u64 > self.cap {
                    self.too_large = true;
                    return false;
                }
                self.out.extend_from_slice(&chunk[..take]);
            }
            self.consume(take);
            n -= take as u64;
        }
        true
    }
}

impl<'a> Source for Stream<'a> {
    fn offset(&self) -> u64 {
        self.offset
    }

    fn header(&mut self, buf: &mut [u8]) -> Result<(), Short> {
        let start = self.out.len();
        if !self.pass(buf.len() as u64, true) {
            return Err(Short);
        }
        buf.copy_from_slice(&self.out[start..]);
        Ok(())
    }

    fn value(&mut self, at: u64, len: u32, bulk: bool) -> Result<Val, Short> {
        if bulk && self.elide_from == u64::MAX && (!self.keep_bulk || self.kept_bulk + u64::from(len) > BULK_KEPT) {
            self.elide_from = at;
        }
        if bulk && at >= self.elide_from {
            return if self.pass(u64::from(len), false) { Ok(Val::Elided) } else { Err(Short) };
        }
        if bulk {
            self.kept_bulk += u64::from(len);
        }
        let start = u32::try_from(self.out.len()).map_err(|_| Short)?;
        if !self.pass(u64::from(len), true) {
            return Err(Short);
        }
        Ok(Val::Span { start, len })
    }

    fn at_end(&mut self) -> bool {
        self.next_chunk().is_none()
    }

    fn kept(&self, start: u32, len: u32) -> &[u8] {
        let s = start as usize;
        self.out.get(s..s + len as usize).unwrap_or_default()
    }

    fn over(&self) -> bool {
        self.too_large || matches!(&self.input, Input::Deflated(d) if d.too_large())
    }

    fn inflate(&mut self, back: usize) {
        // The lexer asks once, at the end of the file meta.
        if let Input::Deflated(_) = self.input {
            return;
        }
        let back = back.min(self.out.len().saturating_sub(HEADER));
        // The given-back bytes, then what is left of the read-ahead, then the rest of the input.
        let mut head = self.out.split_off(self.out.len() - back);
        head.extend_from_slice(self.ahead.get(self.ahead_pos..).unwrap_or_default());
        crate::phi::wipe(&mut self.ahead);
        self.ahead_pos = 0;
        self.offset -= back as u64;
        let rest: Box<dyn BufRead + 'a> =
            match std::mem::replace(&mut self.input, Input::Raw(Box::new(std::io::empty()))) {
                Input::Raw(rest) => rest,
                Input::File(file) => Box::new(file),
                Input::Deflated(_) => return,
            };
        let raw = Box::new(std::io::Cursor::new(head).chain(rest));
        // The inflated dataset with the meta before it stays within `max_input_bytes`.
        let limit = self.cap.saturating_sub(HEADER as u64).saturating_sub(self.offset);
        self.input = Input::Deflated(Inflater::new(raw, limit));
    }

    fn broken(&self) -> Option<Code> {
        matches!(&self.input, Input::Deflated(d) if d.invalid()).then_some(Code::DICOM_DEFLATE_INVALID)
    }
}

/// A record being read.
#[derive(Debug)]
pub struct Slice<'b> {
    buf: &'b [u8],
    pos: usize,
    /// Input offset minus record position.
    skew: u64,
    elide_from: u64,
    end: u64,
    broken: Option<Code>,
}

impl<'b> Slice<'b> {
    /// A reader over a record made by [`split`]; `None` when `buf` is not one.
    pub fn new(buf: &'b [u8]) -> Option<Self> {
        if buf.len() < HEADER || &buf[..8] != MAGIC {
            return None;
        }
        let word = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap_or([0xFF; 8]));
        let preamble = if buf[24] == 1 { 132u64 } else { 0 };
        let skew = preamble.wrapping_sub(HEADER as u64);
        let broken = (buf[25] == 1).then_some(Code::DICOM_DEFLATE_INVALID);
        Some(Slice { buf, pos: HEADER, skew, elide_from: word(8), end: word(16), broken })
    }

    /// True when the input had a preamble and `DICM`.
    pub fn had_preamble(buf: &[u8]) -> bool {
        buf.get(24) == Some(&1)
    }
}

impl Source for Slice<'_> {
    fn offset(&self) -> u64 {
        (self.pos as u64).wrapping_add(self.skew)
    }

    fn header(&mut self, buf: &mut [u8]) -> Result<(), Short> {
        let b = self.buf.get(self.pos..self.pos + buf.len()).ok_or(Short)?;
        buf.copy_from_slice(b);
        self.pos += buf.len();
        Ok(())
    }

    fn value(&mut self, at: u64, len: u32, bulk: bool) -> Result<Val, Short> {
        if bulk && at >= self.elide_from {
            if self.offset().saturating_add(u64::from(len)) > self.end {
                return Err(Short);
            }
            self.skew = self.skew.wrapping_add(u64::from(len));
            return Ok(Val::Elided);
        }
        let start = u32::try_from(self.pos).map_err(|_| Short)?;
        let end = self.pos.checked_add(len as usize).ok_or(Short)?;
        if end > self.buf.len() {
            self.pos = self.buf.len();
            return Err(Short);
        }
        self.pos = end;
        Ok(Val::Span { start, len })
    }

    fn at_end(&mut self) -> bool {
        self.pos >= self.buf.len()
    }

    fn kept(&self, start: u32, len: u32) -> &[u8] {
        let s = start as usize;
        self.buf.get(s..s + len as usize).unwrap_or_default()
    }

    /// The record holds the dataset inflated already: the bytes read as a tag are read again.
    fn inflate(&mut self, back: usize) {
        self.pos = self.pos.saturating_sub(back).max(HEADER);
    }

    fn broken(&self) -> Option<Code> {
        self.broken
    }
}

/// The result of splitting: the record, or `None` when it grew past `max_input_bytes`. With
/// `keep_bulk` false (a command that reads structure only: `parse`, `validate`, `inspect`) no
/// bulk value is kept: the budget is taken as passed at the first one, so the record leaves out
/// every bulk value from there on, by the rule the reader already follows.
pub fn split(input: Box<dyn BufRead + '_>, limits: &Limits, keep_bulk: bool) -> Option<Vec<u8>> {
    split_input(Input::Raw(input), limits, keep_bulk, 64 * 1024)
}

/// [`split`] of a regular file: the bulk values it skips are sought past, not read (the same
/// record).
/// The record is sized from the file's length: the whole file when it keeps bulk values and the
/// file is small enough to be kept whole (no copy as the record grows), its header when not.
pub fn split_file(input: FileInput, limits: &Limits, keep_bulk: bool) -> Option<Vec<u8>> {
    let whole = usize::try_from(input.file_len()).unwrap_or(usize::MAX).saturating_add(HEADER);
    let reserve = if keep_bulk && whole <= RESERVE_WHOLE { whole } else { whole.min(16 * 1024) };
    split_input(Input::File(input), limits, keep_bulk, reserve)
}

/// The largest record [`split_file`] reserves at once.
const RESERVE_WHOLE: usize = 8 * 1024 * 1024;

fn split_input(input: Input<'_>, limits: &Limits, keep_bulk: bool, reserve: usize) -> Option<Vec<u8>> {
    let mut s = Stream {
        input,
        ahead: Vec::new(),
        ahead_pos: 0,
        out: Vec::with_capacity(reserve.max(HEADER)),
        offset: 0,
        kept_bulk: 0,
        elide_from: u64::MAX,
        keep_bulk,
        cap: limits.max_input_bytes.saturating_add(HEADER as u64),
        too_large: false,
    };
    s.out.extend_from_slice(MAGIC);
    s.out.extend_from_slice(&[0; 18]);
    // The preamble: 128 bytes and `DICM`, read ahead.
    while s.ahead.len() < 132 {
        let Some(b) = s.input.fill() else { break };
        let take = b.len().min(132 - s.ahead.len());
        s.ahead.extend_from_slice(&b[..take]);
        s.input.consume(take);
    }
    if s.ahead.get(128..132) == Some(b"DICM") {
        s.ahead.clear();
        s.offset = 132;
        s.out[24] = 1;
    }
    let _: Lexed = lex::lex(&mut s, limits);
    if s.over() {
        return None;
    }
    s.out[25] = u8::from(s.broken().is_some());
    let elide = s.elide_from.to_le_bytes();
    let end = s.offset.to_le_bytes();
    s.out[8..16].copy_from_slice(&elide);
    s.out[16..24].copy_from_slice(&end);
    Some(std::mem::take(&mut s.out))
}
