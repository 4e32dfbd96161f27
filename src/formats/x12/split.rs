//! Splits a byte stream of X12 interchanges into records, in bounded memory: each ISA, GS, GE,
//! IEA and TA1 is an envelope record, each transaction set (ST .. SE) a message record. Every
//! record but the ISA carries its envelope (see `read`): the record header, a copy of its ISA
//! and, for a set, of its GS, so that a record is read alone (on any thread).
//!
//! Segments are found with `memchr` on the terminator the current ISA declares; white space
//! after a terminator is dropped. Bytes outside an interchange, and segments outside a set, are
//! framing problems (failed records).
//!
//! What it does not do: read elements, or check counts (the stream tracker does).

use std::collections::VecDeque;
use std::io::{self, BufRead};

use super::read::{self, Delimiters, ISA_LEN, is_separator};
use crate::diag::Code;
use crate::formats::codec::{Kind, Piece};
use crate::limits::Limits;

/// The envelope records of X12.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Envelope {
    /// Interchange header.
    Isa,
    /// Functional group header.
    Gs,
    /// Functional group trailer.
    Ge,
    /// Interchange trailer.
    Iea,
    /// Interchange acknowledgment.
    Ta1,
}

impl Envelope {
    /// The record kind of the reader.
    pub fn record_kind(self) -> read::RecordKind {
        match self {
            Envelope::Isa => read::RecordKind::Isa,
            Envelope::Gs => read::RecordKind::Gs,
            Envelope::Ge => read::RecordKind::Ge,
            Envelope::Iea => read::RecordKind::Iea,
            Envelope::Ta1 => read::RecordKind::Ta1,
        }
    }
}

fn cap_all(limits: Limits) -> u64 {
    limits.max_input_bytes
}

/// Bytes read from the input at a time.
const CHUNK: usize = 256 * 1024;
/// Farthest an ISA is looked at.
const ISA_LOOK: usize = 512;

/// The splitter.
pub struct Splitter<'a> {
    input: Box<dyn BufRead + 'a>,
    limits: Limits,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    /// Input offset of `buf[pos]`.
    offset: u64,
    queue: VecDeque<Piece<Envelope>>,
    done: bool,
    /// Inside an interchange (an ISA was read, no IEA yet).
    inside: bool,
    delimiters: Delimiters,
    isa: Vec<u8>,
    gs: Vec<u8>,
    group: u32,
    set: u32,
    /// The set being read.
    cur: Vec<u8>,
    cur_offset: u64,
    cur_over: bool,
    in_set: bool,
    /// An envelope segment being read.
    seg: Vec<u8>,
}

crate::debug_placeholder!(Splitter<'a>);

impl Drop for Splitter<'_> {
    fn drop(&mut self) {
        for b in [&mut self.buf, &mut self.isa, &mut self.gs, &mut self.cur, &mut self.seg] {
            crate::phi::wipe(b);
        }
    }
}

/// What a segment is, by its first bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Head {
    Isa,
    Gs,
    Ge,
    Iea,
    Ta1,
    St,
    Se,
    Other,
}

impl<'a> Splitter<'a> {
    /// Splits `input`; `limits.max_input_bytes` bounds each record.
    pub fn new(input: Box<dyn BufRead + 'a>, limits: Limits) -> Self {
        Splitter {
            input,
            limits,
            buf: Vec::new(),
            pos: 0,
            len: 0,
            eof: false,
            offset: 0,
            queue: VecDeque::new(),
            done: false,
            inside: false,
            delimiters: Delimiters::default(),
            isa: Vec::new(),
            gs: Vec::new(),
            group: 0,
            set: 0,
            cur: Vec::new(),
            cur_offset: 0,
            cur_over: false,
            in_set: false,
            seg: Vec::new(),
        }
    }

    /// Reads more input; false at its end.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.buf.len() < CHUNK {
            self.buf.resize(CHUNK, 0);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.len == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// At least `n` bytes unread, unless the input ends first.
    fn ensure(&mut self, n: usize) -> io::Result<()> {
        while self.len - self.pos < n && self.fill()? {}
        Ok(())
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// Skips white space; false at the end of the input.
    fn skip_space(&mut self) -> io::Result<bool> {
        loop {
            while self.pos < self.len {
                let b = self.buf[self.pos];
                let d = &self.delimiters;
                if matches!(b, b'\r' | b'\n' | b' ' | b'\t') && b != d.segment && b != d.element {
                    self.advance(1);
                } else {
                    return Ok(true);
                }
            }
            if !self.fill()? {
                return Ok(false);
            }
        }
    }

    fn head(&self) -> Head {
        let b = &self.buf[self.pos..self.len];
        let e = self.delimiters.element;
        let t = self.delimiters.segment;
        let ends = |i: usize| b.get(i).is_none_or(|&c| c == e || c == t);
        if b.starts_with(b"ISA") && b.get(3).is_some_and(|&c| is_separator(c)) {
            return Head::Isa;
        }
        match b.get(..2) {
            Some(b"GS") if ends(2) => Head::Gs,
            Some(b"GE") if ends(2) => Head::Ge,
            Some(b"ST") if ends(2) => Head::St,
            Some(b"SE") if ends(2) => Head::Se,
            _ => match b.get(..3) {
                Some(b"IEA") if ends(3) => Head::Iea,
                Some(b"TA1") if ends(3) => Head::Ta1,
                _ => Head::Other,
            },
        }
    }

    /// Reads one segment (through its terminator) onto `into`, up to `cap` bytes in all
    /// (false: the segment did not fit and `into` holds what did).
    fn segment(&mut self, into: &mut Vec<u8>, cap: u64) -> io::Result<bool> {
        let t = self.delimiters.segment;
        let mut fits = true;
        loop {
            let hay = &self.buf[self.pos..self.len];
            let (take, done) = match memchr::memchr(t, hay) {
                Some(i) => (i + 1, true),
                None => (hay.len(), false),
            };
            if fits && (into.len() + take) as u64 <= cap {
                into.extend_from_slice(&hay[..take]);
            } else {
                fits = false;
            }
            self.advance(take);
            if done {
                // White space after the terminator belongs to the segment (canonical form is
                // one segment per line: `fmt --check` compares it).
                return Ok(self.trailing_space(into, cap, fits)? && fits);
            }
            if !self.fill()? {
                return Ok(fits);
            }
        }
    }

    /// Moves the white space after a terminator onto `into` (when it fits).
    fn trailing_space(&mut self, into: &mut Vec<u8>, cap: u64, fits: bool) -> io::Result<bool> {
        let d = self.delimiters;
        loop {
            while self.pos < self.len {
                let b = self.buf[self.pos];
                if !(matches!(b, b'\r' | b'\n' | b' ' | b'\t') && b != d.segment && b != d.element && b != d.component)
                {
                    return Ok(true);
                }
                if fits && (into.len() + 1) as u64 <= cap {
                    into.push(b);
                }
                self.advance(1);
            }
            if !self.fill()? {
                return Ok(true);
            }
        }
    }

    fn record(&mut self, kind: Kind<Envelope>, offset: u64, bytes: Option<Vec<u8>>) {
        self.queue.push_back(Piece::Record { kind, offset, bytes });
    }

    /// The transaction set being read, as a record.
    fn close_set(&mut self) {
        if !self.in_set {
            return;
        }
        self.in_set = false;
        let bytes = std::mem::take(&mut self.cur);
        let bytes = if self.cur_over {
            let mut b = bytes;
            crate::phi::wipe(&mut b);
            None
        } else {
            Some(bytes)
        };
        self.record(Kind::Message, self.cur_offset, bytes);
    }

    /// An envelope record: the header, the ISA and the segment just read.
    fn envelope(&mut self, kind: Envelope, offset: u64, fits: bool) {
        if !fits {
            self.record(Kind::Envelope(kind), offset, None);
            return;
        }
        let mut bytes = Vec::with_capacity(read::HEADER_LEN + self.isa.len() + self.seg.len());
        bytes.extend_from_slice(&read::header(self.group, self.set, self.isa.len()));
        bytes.extend_from_slice(&self.isa);
        bytes.extend_from_slice(&self.seg);
        self.record(Kind::Envelope(kind), offset, Some(bytes));
    }

    /// Reads until at least one piece is queued or the input ends.
    fn step(&mut self) -> io::Result<()> {
        if !self.skip_space()? {
            self.close_set();
            self.done = true;
            return Ok(());
        }
        self.ensure(4)?;
        let offset = self.offset;
        let head = self.head();
        if head == Head::Isa {
            self.close_set();
            self.ensure(ISA_LOOK)?;
            match read::isa(&self.buf[self.pos..self.len]) {
                Some(i) => {
                    self.delimiters = i.delimiters;
                    self.isa.clear();
                    self.isa.extend_from_slice(&self.buf[self.pos..self.pos + i.len]);
                    self.advance(i.len);
                    self.inside = true;
                    self.group = 0;
                    self.set = 0;
                    self.gs.clear();
                    let mut bytes = self.isa.clone();
                    self.trailing_space(&mut bytes, cap_all(self.limits), true)?;
                    self.record(Kind::Envelope(Envelope::Isa), offset, Some(bytes));
                }
                None => {
                    // An ISA that cannot be read: the reader says why; nothing after it can
                    // be read without its separators.
                    let n = (self.len - self.pos).min(ISA_LEN);
                    let bytes = self.buf[self.pos..self.pos + n].to_vec();
                    self.record(Kind::Message, offset, Some(bytes));
                    self.done = true;
                }
            }
            return Ok(());
        }
        if !self.inside {
            self.queue.push_back(Piece::Problem { code: Code::X12_DATA_OUTSIDE_INTERCHANGE, offset, label: "x12" });
            self.skip_to_isa()?;
            return Ok(());
        }
        let cap = self.limits.max_input_bytes;
        match head {
            Head::St | Head::Other | Head::Se if self.in_set || head == Head::St => {
                if head == Head::St {
                    self.close_set();
                    self.set = self.set.saturating_add(1);
                    let mut cur = std::mem::take(&mut self.cur);
                    cur.clear();
                    cur.extend_from_slice(&read::header(self.group, self.set, self.isa.len() + self.gs.len()));
                    cur.extend_from_slice(&self.isa);
                    cur.extend_from_slice(&self.gs);
                    self.cur = cur;
                    self.cur_offset = offset;
                    self.cur_over = false;
                    self.in_set = true;
                }
                let mut cur = std::mem::take(&mut self.cur);
                let fits = self.segment(&mut cur, if self.cur_over { 0 } else { cap })?;
                self.cur = cur;
                if !fits {
                    self.cur_over = true;
                    crate::phi::wipe_keep(&mut self.cur);
                }
                if head == Head::Se {
                    self.close_set();
                }
            }
            Head::Other | Head::Se => {
                self.queue.push_back(Piece::Problem { code: Code::X12_SEGMENT_OUTSIDE_SET, offset, label: "x12" });
                let mut sink = Vec::new();
                self.segment(&mut sink, 0)?;
            }
            _ => {
                self.close_set();
                let mut seg = std::mem::take(&mut self.seg);
                seg.clear();
                let fits = self.segment(&mut seg, cap)?;
                if head == Head::Gs {
                    self.group = self.group.saturating_add(1);
                    self.set = 0;
                    self.gs.clear();
                    self.gs.extend_from_slice(&seg);
                }
                self.seg = seg;
                let kind = match head {
                    Head::Gs => Envelope::Gs,
                    Head::Ge => Envelope::Ge,
                    Head::Iea => Envelope::Iea,
                    _ => Envelope::Ta1,
                };
                self.envelope(kind, offset, fits);
                if head == Head::Iea {
                    self.inside = false;
                }
            }
        }
        Ok(())
    }

    /// Skips to the next `ISA` followed by a separator, or to the end.
    fn skip_to_isa(&mut self) -> io::Result<()> {
        // The bytes at `pos` are not an ISA.
        self.advance(1);
        loop {
            self.ensure(4)?;
            let hay = &self.buf[self.pos..self.len];
            match memchr::memchr(b'I', hay) {
                Some(i) => {
                    self.advance(i);
                    self.ensure(4)?;
                    if self.head() == Head::Isa {
                        return Ok(());
                    }
                    if self.len - self.pos < 4 {
                        let n = self.len - self.pos;
                        self.advance(n);
                        return Ok(());
                    }
                    self.advance(1);
                }
                None => {
                    let n = hay.len();
                    self.advance(n);
                    if !self.fill()? {
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl Iterator for Splitter<'_> {
    type Item = io::Result<Piece<Envelope>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(p) = self.queue.pop_front() {
                return Some(Ok(p));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.step() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}
