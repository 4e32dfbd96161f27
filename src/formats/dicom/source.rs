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
//!
//! The record: [`MAGIC`], the input offset from which bulk values are left out (`u64::MAX`:
//! none), the input offset where the splitter stopped, one flag byte (1: the input had a
//! preamble), then the input's bytes from the file meta on (the 128-byte preamble and `DICM`
//! are not kept).
//!
//! What it does not do: interpret bytes (see `lex`).

use std::io::BufRead;

use super::lex::{self, Lexed};
use crate::limits::Limits;

/// The record's first bytes.
pub const MAGIC: &[u8; 8] = b"\0phwDCM1";
/// The record header's length.
pub const HEADER: usize = 8 + 8 + 8 + 1;
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
}

/// The input stream, copied into the record as it is read (bulk values past the budget
/// skipped).
pub struct Stream<'a> {
    input: Box<dyn BufRead + 'a>,
    /// The bytes read ahead to look for the preamble, not yet given out.
    ahead: Vec<u8>,
    ahead_pos: usize,
    /// The record being written.
    pub out: Vec<u8>,
    offset: u64,
    kept_bulk: u64,
    /// Bulk values at or after this input offset are left out.
    pub elide_from: u64,
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
        match self.input.fill_buf() {
            Ok(b) if !b.is_empty() => Some(b),
            _ => None,
        }
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
            let chunk: &[u8] = if self.ahead_pos < self.ahead.len() {
                &self.ahead[self.ahead_pos..]
            } else {
                match self.input.fill_buf() {
                    Ok(b) if !b.is_empty() => b,
                    _ => return false,
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

impl Source for Stream<'_> {
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
        if bulk && self.elide_from == u64::MAX && self.kept_bulk + u64::from(len) > BULK_KEPT {
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
        self.too_large
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
        Some(Slice { buf, pos: HEADER, skew, elide_from: word(8), end: word(16) })
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
}

/// The result of splitting: the record, or `None` when it grew past `max_input_bytes`.
pub fn split(input: Box<dyn BufRead + '_>, limits: &Limits) -> Option<Vec<u8>> {
    let mut s = Stream {
        input,
        ahead: Vec::new(),
        ahead_pos: 0,
        out: Vec::with_capacity(64 * 1024),
        offset: 0,
        kept_bulk: 0,
        elide_from: u64::MAX,
        cap: limits.max_input_bytes.saturating_add(HEADER as u64),
        too_large: false,
    };
    s.out.extend_from_slice(MAGIC);
    s.out.extend_from_slice(&[0; 17]);
    // The preamble: 128 bytes and `DICM`, read ahead.
    while s.ahead.len() < 132 {
        let Ok(b) = s.input.fill_buf() else { break };
        if b.is_empty() {
            break;
        }
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
    if s.too_large {
        return None;
    }
    let elide = s.elide_from.to_le_bytes();
    let end = s.offset.to_le_bytes();
    s.out[8..16].copy_from_slice(&elide);
    s.out[16..24].copy_from_slice(&end);
    Some(std::mem::take(&mut s.out))
}
