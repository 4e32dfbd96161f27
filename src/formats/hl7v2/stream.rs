//! Splits an HL7 v2 ER7 byte stream into records, incrementally.
//!
//! A record is one message (from an `MSH` line up to the next `MSH` or envelope line) or one batch
//! envelope line (`FHS`, `BHS`, `BTS`, `FTS`). Plain concatenations of messages and FHS/BHS
//! batches are both handled; memory is bounded by the largest record, not by the stream. Lines
//! before the first header form a record of their own (which then fails with `NO_MSH_SEGMENT`).
//!
//! A record over `max_input_bytes` is given up as soon as the limit is crossed: what it held is
//! wiped and its memory given back, once, and the rest of it is read without being kept: each
//! following line is looked at only for the header that starts the next record, and skipped to
//! its end in the reader's own buffer (no copy), so an over-limit record costs a scan, at the
//! speed of `memchr`, whatever its size.
//!
//! What it does not do: parse the records (see `parse`) or check batch counts (see `batch`).

use std::io::{self, BufRead};

use zeroize::Zeroize;

use crate::limits::Limits;

/// What a record is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A message (starts with MSH), or stray lines before the first header.
    Message,
    /// One of FHS, BHS, BTS, FTS.
    Envelope(Envelope),
}

/// The batch envelope segments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Envelope {
    /// File header.
    Fhs,
    /// Batch header.
    Bhs,
    /// Batch trailer.
    Bts,
    /// File trailer.
    Fts,
}

/// One record's raw bytes and where it started in the stream.
#[derive(Debug)]
pub struct Raw {
    /// Message or envelope.
    pub kind: Kind,
    /// Byte offset of the record in the stream.
    pub offset: u64,
    /// The bytes (moved into the parsed message's zeroizing buffer), or `None` when the record
    /// exceeded `max_input_bytes` and was skipped.
    pub bytes: Option<Vec<u8>>,
}

/// How many first bytes of a line [`line_kind`] needs, a byte order mark included.
const KIND_BYTES: usize = 7;

/// Classifies the start of a line.
fn line_kind(line: &[u8]) -> Option<Kind> {
    let sep_ok = line.get(3).is_some_and(|&b| crate::detect::is_delimiter_byte(b));
    let id = line.get(..3)?;
    let kind = match id {
        b"MSH" if sep_ok => Kind::Message,
        b"FHS" if sep_ok => Kind::Envelope(Envelope::Fhs),
        b"BHS" if sep_ok => Kind::Envelope(Envelope::Bhs),
        b"BTS" if sep_ok || line.len() == 3 || matches!(line.get(3), Some(b'\r' | b'\n')) => {
            Kind::Envelope(Envelope::Bts)
        }
        b"FTS" if sep_ok || line.len() == 3 || matches!(line.get(3), Some(b'\r' | b'\n')) => {
            Kind::Envelope(Envelope::Fts)
        }
        _ => return None,
    };
    Some(kind)
}

/// An iterator of records over a buffered reader.
#[derive(Debug)]
pub struct Splitter<R> {
    reader: R,
    limits: Limits,
    offset: u64,
    /// The record being accumulated.
    current: Vec<u8>,
    current_kind: Kind,
    current_offset: u64,
    current_overflow: bool,
    /// A line read ahead that starts the next record.
    line: Vec<u8>,
    line_overflow: bool,
    first_line: bool,
    done: bool,
    /// An envelope record found while closing the previous record.
    pending: Option<Raw>,
}

impl<R: BufRead> Splitter<R> {
    /// Splits `reader`; `limits.max_input_bytes` bounds each record.
    pub fn new(reader: R, limits: Limits) -> Self {
        Splitter {
            reader,
            limits,
            offset: 0,
            current: Vec::new(),
            current_kind: Kind::Message,
            current_offset: 0,
            current_overflow: false,
            line: Vec::new(),
            line_overflow: false,
            first_line: true,
            done: false,
            pending: None,
        }
    }

    /// Reads one line including its terminator (CR, LF or CR LF) into `self.line`.
    /// Returns false at end of input. A line over the limit is dropped but for its first
    /// [`KIND_BYTES`] (what tells a header), flagged by `line_overflow`.
    fn read_line(&mut self) -> io::Result<bool> {
        // Cleared, not zeroized, per line: the bytes are overwritten by the next line and the
        // whole buffer is zeroized when the splitter is dropped.
        self.line.clear();
        self.line_overflow = false;
        let max = self.limits.max_input_bytes;
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(!self.line.is_empty() || self.line_overflow);
            }
            let (take, ended, cr) = match memchr::memchr2(b'\r', b'\n', buf) {
                Some(i) => (i + 1, true, buf[i] == b'\r'),
                None => (buf.len(), false, false),
            };
            if !self.line_overflow && (self.line.len() + take) as u64 <= max {
                self.line.extend_from_slice(&buf[..take]);
            } else if !self.line_overflow {
                // Once per line: the rest of it is read and dropped; its first bytes stay, to
                // tell whether it starts a record.
                self.line_overflow = true;
                let mut head = Vec::with_capacity(KIND_BYTES);
                let from_line = self.line.len().min(KIND_BYTES);
                head.extend_from_slice(&self.line[..from_line]);
                head.extend_from_slice(&buf[..take.min(KIND_BYTES - from_line)]);
                wipe(&mut self.line);
                self.line = head;
            }
            self.reader.consume(take);
            self.offset += take as u64;
            if ended {
                if cr {
                    let next = self.reader.fill_buf()?;
                    if next.first() == Some(&b'\n') {
                        if !self.line_overflow {
                            self.line.push(b'\n');
                        }
                        self.reader.consume(1);
                        self.offset += 1;
                    }
                }
                return Ok(true);
            }
        }
    }

    /// While the current record is over the limit: skips the next line without copying it when
    /// it does not start a record (its first bytes are not a header), and returns true; returns
    /// false, having read nothing, when the line must be read whole ([`Splitter::read_line`]): it
    /// may start a record, or its first bytes are not in the buffer yet, or the input has ended.
    fn skip_line_in_overflow(&mut self) -> io::Result<bool> {
        let buf = loop {
            match self.reader.fill_buf() {
                Ok(b) => break b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        // `line_kind` looks at four bytes at most (the fourth: a delimiter or a line end); on
        // the buffer it decides as on the line when those are in it.
        let decided = buf.len() >= 4 || memchr::memchr2(b'\r', b'\n', buf).is_some();
        if buf.is_empty() || !decided || line_kind(buf).is_some() {
            return Ok(false);
        }
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(true);
            }
            match memchr::memchr2(b'\r', b'\n', buf) {
                Some(i) => {
                    let cr = buf[i] == b'\r';
                    self.reader.consume(i + 1);
                    self.offset += i as u64 + 1;
                    if cr && self.reader.fill_buf()?.first() == Some(&b'\n') {
                        self.reader.consume(1);
                        self.offset += 1;
                    }
                    return Ok(true);
                }
                None => {
                    let n = buf.len();
                    self.reader.consume(n);
                    self.offset += n as u64;
                }
            }
        }
    }

    fn take_current(&mut self) -> Option<Raw> {
        let has_content = self.current_overflow || self.current.iter().any(|b| !b.is_ascii_whitespace());
        let bytes = std::mem::take(&mut self.current);
        let raw = Raw {
            kind: self.current_kind,
            offset: self.current_offset,
            bytes: if self.current_overflow { None } else { Some(bytes) },
        };
        self.current_overflow = false;
        has_content.then_some(raw)
    }

    fn next_record(&mut self) -> io::Result<Option<Raw>> {
        if let Some(p) = self.pending.take() {
            return Ok(Some(p));
        }
        if self.done {
            return Ok(None);
        }
        loop {
            if self.current_overflow && !self.first_line && self.skip_line_in_overflow()? {
                continue;
            }
            let line_start = self.offset;
            if !self.read_line()? {
                self.done = true;
                return Ok(self.take_current());
            }
            let mut line: &[u8] = &self.line;
            if self.first_line {
                self.first_line = false;
                line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            }
            let kind = line_kind(line);
            if kind.is_some() {
                let finished = self.take_current();
                self.current_kind = kind.unwrap_or(Kind::Message);
                self.current_offset = line_start;
                self.append_line();
                // An envelope line is a record by itself.
                if let Some(Kind::Envelope(_)) = kind {
                    let env = self.take_current();
                    return Ok(match (finished, env) {
                        (Some(f), Some(e)) => {
                            self.pending = Some(e);
                            Some(f)
                        }
                        (Some(f), None) => Some(f),
                        (None, e) => e,
                    });
                }
                if finished.is_some() {
                    return Ok(finished);
                }
            } else {
                if self.current.is_empty() && !self.current_overflow {
                    self.current_offset = line_start;
                    self.current_kind = Kind::Message;
                }
                self.append_line();
            }
        }
    }

    fn append_line(&mut self) {
        if self.current_overflow {
            return;
        }
        if self.line_overflow || (self.current.len() + self.line.len()) as u64 > self.limits.max_input_bytes {
            // Once per record: the rest of it is not kept.
            self.current_overflow = true;
            wipe(&mut self.current);
        } else {
            self.current.extend_from_slice(&self.line);
        }
    }
}

/// Zeroizes a buffer and gives its memory back (zeroizing an emptied vector again would write
/// its whole capacity each time).
fn wipe(buf: &mut Vec<u8>) {
    buf.zeroize();
    *buf = Vec::new();
}

impl<R> Drop for Splitter<R> {
    fn drop(&mut self) {
        self.line.zeroize();
        self.current.zeroize();
    }
}

/// Splits bytes already in memory (an MLLP frame's content) into record ranges, without
/// copying. Same rules as [`Splitter`]; white-space-only stretches are not records.
pub fn split_slice(bytes: &[u8]) -> Vec<(Kind, std::ops::Range<usize>)> {
    let mut out: Vec<(Kind, std::ops::Range<usize>)> = Vec::new();
    let mut current: Option<(Kind, usize)> = None;
    let mut pos = 0usize;
    let close = |out: &mut Vec<(Kind, std::ops::Range<usize>)>, cur: Option<(Kind, usize)>, end: usize| {
        if let Some((kind, start)) = cur {
            if bytes[start..end].iter().any(|b| !b.is_ascii_whitespace()) {
                out.push((kind, start..end));
            }
        }
    };
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let line_start = pos;
        let probe = if pos == 0 { rest.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(rest) } else { rest };
        let kind = line_kind(probe);
        let end = match memchr::memchr2(b'\r', b'\n', rest) {
            Some(i) if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') => pos + i + 2,
            Some(i) => pos + i + 1,
            None => bytes.len(),
        };
        match kind {
            Some(Kind::Envelope(e)) => {
                close(&mut out, current.take(), line_start);
                out.push((Kind::Envelope(e), line_start..end));
            }
            Some(Kind::Message) => {
                close(&mut out, current.take(), line_start);
                current = Some((Kind::Message, line_start));
            }
            None => {
                if current.is_none() {
                    current = Some((Kind::Message, line_start));
                }
            }
        }
        pos = end;
    }
    close(&mut out, current, bytes.len());
    out
}

impl<R: BufRead> Iterator for Splitter<R> {
    type Item = io::Result<Raw>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_record() {
            Ok(Some(raw)) => Some(Ok(raw)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Vec<(Kind, u64)> {
        Splitter::new(input.as_bytes(), Limits::default())
            .map(|r| r.map(|r| (r.kind, r.offset)))
            .collect::<io::Result<Vec<_>>>()
            .unwrap_or_default()
    }

    #[test]
    fn splits_concatenated_messages() {
        let k = kinds("MSH|^~\\&|A\rPID|1\rMSH|^~\\&|B\rPID|2\r");
        assert_eq!(k, vec![(Kind::Message, 0), (Kind::Message, 17)]);
    }

    #[test]
    fn splits_batches() {
        let k = kinds("FHS|^~\\&\nBHS|^~\\&\nMSH|^~\\&|A\nPID|1\nBTS|1\nFTS|1\n");
        let only: Vec<Kind> = k.iter().map(|x| x.0).collect();
        assert_eq!(
            only,
            vec![
                Kind::Envelope(Envelope::Fhs),
                Kind::Envelope(Envelope::Bhs),
                Kind::Message,
                Kind::Envelope(Envelope::Bts),
                Kind::Envelope(Envelope::Fts)
            ]
        );
    }

    #[test]
    fn slice_splitting_agrees_with_the_reader() {
        for input in [
            "MSH|^~\\&|A\rPID|1\rMSH|^~\\&|B\rPID|2\r",
            "FHS|^~\\&\nBHS|^~\\&\nMSH|^~\\&|A\nPID|1\nBTS|1\nFTS|1\n",
            "\r\nPID|0\rMSH|^~\\&|A\r\n\r\n",
        ] {
            let a: Vec<(Kind, u64)> = kinds(input);
            let b: Vec<(Kind, u64)> =
                split_slice(input.as_bytes()).into_iter().map(|(k, r)| (k, r.start as u64)).collect();
            assert_eq!(a, b, "{input:?}");
        }
    }

    /// Records, offsets and kinds do not depend on the limit (only which records are kept
    /// does), whatever the reader's buffer size: the lines of an over-limit record skipped in
    /// the buffer end where the lines read whole end.
    #[test]
    fn skipping_an_over_limit_record_keeps_every_boundary() {
        let inputs = [
            "MSH|^~\\&|A\rPID|1\rOBX|1|ST|x||AAAAAAAAAAAAAAAAAAAA\rMSH|^~\\&|B\rPID|2\r".to_owned(),
            "MSH|^~\\&|A\r\nOBX|1\r\nOBX|2\r\nBT\r\nBTS\r\nMSH|^~\\&|B\r\nFTS\n".to_owned(),
            "FHS|^~\\&\nBHS|^~\\&\nMSH|^~\\&|A\nOBX|1|ST|x||AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nZ\nMS\nMSH\nBTS|1\nFTS|1"
                .to_owned(),
            format!("MSH|^~\\&|A\r{}\rMSH|^~\\&|B\rBTS", "OBX|1|ST|x||Q".repeat(50)),
        ];
        for input in &inputs {
            let all = |max: u64, cap: usize| -> Vec<(Kind, u64, bool)> {
                let limits = Limits { max_input_bytes: max, ..Limits::default() };
                let reader = io::BufReader::with_capacity(cap, input.as_bytes());
                Splitter::new(reader, limits)
                    .map(|r| r.map(|r| (r.kind, r.offset, r.bytes.is_some())))
                    .collect::<io::Result<Vec<_>>>()
                    .expect("reads")
            };
            let whole = all(u64::MAX, 8192);
            assert!(whole.iter().all(|r| r.2));
            for cap in [1, 2, 3, 4, 5, 7, 64, 8192] {
                for max in [8, 20] {
                    let split = all(max, cap);
                    let bounds: Vec<(Kind, u64)> = split.iter().map(|r| (r.0, r.1)).collect();
                    let expected: Vec<(Kind, u64)> = whole.iter().map(|r| (r.0, r.1)).collect();
                    assert_eq!(bounds, expected, "{input:?} cap {cap} max {max}");
                    assert!(split.iter().any(|r| !r.2), "{input:?} cap {cap} max {max}: one record over the limit");
                }
            }
        }
    }

    /// A record of 64 MiB against a limit of 1 MiB: refused, the next record read whole, and
    /// the splitter's buffers given back once the limit was crossed.
    #[test]
    fn an_over_limit_record_is_not_kept() {
        let line = b"OBX|1|ST|1234-5^Test^LN||AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA|||||F\r";
        let mut input = b"MSH|^~\\&|A\r".to_vec();
        while input.len() < 64 * 1024 * 1024 {
            input.extend_from_slice(line);
        }
        let second = input.len() as u64;
        input.extend_from_slice(b"MSH|^~\\&|B\rPID|2\r");
        let limits = Limits { max_input_bytes: 1024 * 1024, ..Limits::default() };
        let mut splitter = Splitter::new(&input[..], limits);
        let first = splitter.next().expect("a record").expect("reads");
        assert!(first.bytes.is_none());
        // It holds the next record's first line: the over-limit record's megabyte was given back.
        assert!(splitter.current.capacity() < 64, "{}", splitter.current.capacity());
        let next = splitter.next().expect("a record").expect("reads");
        assert_eq!((next.offset, next.bytes.map(|b| b.len())), (second, Some(17)));
        assert!(splitter.next().is_none());
    }

    #[test]
    fn oversized_record_is_skipped_not_fatal() {
        let limits = Limits { max_input_bytes: 16, ..Limits::default() };
        let input = "MSH|^~\\&|AAAAAAAAAAAAAAAAAAAAAAAAA\rMSH|^~\\&|B\r";
        let recs: Vec<Raw> = Splitter::new(input.as_bytes(), limits).filter_map(Result::ok).collect();
        assert_eq!(recs.len(), 2);
        assert!(recs[0].bytes.is_none());
        assert!(recs[1].bytes.is_some());
    }
}
