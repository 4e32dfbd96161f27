//! Splits a byte stream of ASTM E1394 messages into message records, in bounded memory: a
//! message starts at an H record and ends at its L record (or at the next H, or the end). The
//! stream is E1381-framed when its first byte (after white space) is STX or a session byte.
//!
//! E1381 (LIS1-A section 6): a frame is `STX FN text ETB|ETX C1 C2 CR LF`; FN is the frame
//! number, 1 for the first frame after ENQ, then counting modulo 8; C1 C2 the checksum, the
//! modulo-256 sum of the bytes from FN through ETB or ETX as two hexadecimal characters. The
//! texts of a session's frames, ETB (intermediate) and ETX (last of a record) alike, are joined
//! and split into records at CR. ENQ, ACK, NAK and EOT are session bytes and skipped (ENQ and EOT
//! restart the frame numbers); a frame that repeats the previous one (same number, same bytes:
//! a retransmission after NAK) is read once. A bad checksum, a frame number out of sequence, a
//! frame without ETB/ETX, a malformed trailer, more than 240 characters of text and bytes
//! between frames are findings at the frame (its count in the input and its offset), carried by
//! the message the frame's text belongs to (see `read`); the text is kept, so one bad frame
//! loses nothing of the others. Findings after the last message are failed records.
//!
//! Memory: one message (bounded by `max_input_bytes`; a message over it is a failed record
//! without bytes), one frame, and the reader's buffer.
//!
//! What it does not do: read fields or check the hierarchy (see `read`, `validate`).

use std::collections::VecDeque;
use std::io::{self, BufRead};

use super::read::{self, FLAG_FRAMED, FLAG_NONCANONICAL, FrameFinding, HEADER_LEN};
use crate::diag::Code;
use crate::formats::codec::{Kind, Piece};
use crate::limits::Limits;

/// Start of text.
pub const STX: u8 = 0x02;
/// End of text (last frame of a record).
pub const ETX: u8 = 0x03;
/// End of transmission (session end).
pub const EOT: u8 = 0x04;
/// Enquiry (session start).
pub const ENQ: u8 = 0x05;
/// Acknowledge.
pub const ACK: u8 = 0x06;
/// Negative acknowledge.
pub const NAK: u8 = 0x15;
/// End of transmission block (intermediate frame).
pub const ETB: u8 = 0x17;
/// Most characters of text in one frame (LIS1-A 6.3.1.2).
pub const MAX_FRAME_TEXT: usize = 240;

/// ASTM has no envelope records (a message is H .. L).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Envelope {}

/// True for the bytes that start an E1381 stream: STX and the session bytes.
pub fn starts_framed(b: u8) -> bool {
    matches!(b, STX | ENQ | EOT | ACK | NAK)
}

/// The modulo-256 sum of a frame's bytes from FN through ETB/ETX.
pub fn checksum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// The first byte that ends a frame's text: ETX or ETB (its end), or LF, STX, EOT, ENQ (no end).
/// ETX, ETB and LF are found with `memchr`, then the text before is checked for the others.
fn stop(buf: &[u8]) -> Option<usize> {
    let end = memchr::memchr3(ETX, ETB, b'\n', buf);
    let hay = &buf[..end.unwrap_or(buf.len())];
    match memchr::memchr3(STX, EOT, ENQ, hay) {
        Some(i) => Some(i),
        None => end,
    }
}

/// Zeroizes `buf` from `len` on and truncates it there.
fn cut(buf: &mut Vec<u8>, len: usize) {
    if let Some(tail) = buf.get_mut(len..) {
        zeroize::Zeroize::zeroize(tail);
    }
    buf.truncate(len);
}

/// The splitter.
pub struct Splitter<'a> {
    input: Box<dyn BufRead + 'a>,
    /// Largest message text.
    cap: usize,
    framed: bool,
    /// Input offset of the next unread byte.
    offset: u64,
    queue: VecDeque<Piece<Envelope>>,
    done: bool,
    // ---- the message being assembled ----
    /// Header placeholder and text.
    cur: Vec<u8>,
    cur_offset: u64,
    /// Records in the message so far.
    cur_records: u32,
    /// The message is over the cap (its records are dropped as they end).
    cur_over: bool,
    /// The record being read is over the cap.
    rec_over: bool,
    /// Start of the record being read in `cur`.
    rec_start: usize,
    /// Its offset in the input.
    rec_offset: u64,
    /// Its first two bytes and length so far.
    rec_head: [u8; 2],
    rec_len: usize,
    noncanonical: bool,
    frames: u32,
    findings: Vec<FrameFinding>,
    // ---- frames ----
    /// Frames read so far.
    frame_count: u32,
    /// The frame number expected next.
    expected: u8,
    /// The previous frame, when it ended (FN through ETB/ETX; empty: none), to recognise a
    /// retransmission.
    previous: Vec<u8>,
    frame: Vec<u8>,
}

crate::debug_placeholder!(Splitter<'a>);

impl Drop for Splitter<'_> {
    fn drop(&mut self) {
        crate::phi::wipe(&mut self.cur);
        crate::phi::wipe(&mut self.frame);
        crate::phi::wipe(&mut self.previous);
    }
}

impl<'a> Splitter<'a> {
    /// Splits `input`; `framed` when it starts with STX or a session byte; `limits.max_input_bytes`
    /// bounds each message.
    pub fn new(input: Box<dyn BufRead + 'a>, framed: bool, limits: Limits) -> Self {
        let cap = usize::try_from(limits.max_input_bytes).unwrap_or(usize::MAX).min(u32::MAX as usize / 2);
        let mut s = Splitter {
            input,
            cap,
            framed,
            offset: 0,
            queue: VecDeque::new(),
            done: false,
            cur: Vec::new(),
            cur_offset: 0,
            cur_records: 0,
            cur_over: false,
            rec_over: false,
            rec_start: HEADER_LEN,
            rec_offset: 0,
            rec_head: [0; 2],
            rec_len: 0,
            noncanonical: false,
            frames: 0,
            findings: Vec::new(),
            frame_count: 0,
            expected: 1,
            previous: Vec::new(),
            frame: Vec::new(),
        };
        read::header_placeholder(&mut s.cur);
        s
    }

    fn text_len(&self) -> usize {
        self.cur.len() - HEADER_LEN
    }

    /// Appends bytes of the record being read.
    fn append(&mut self, b: &[u8]) {
        if self.rec_len < 2 {
            for (i, &c) in b.iter().take(2 - self.rec_len).enumerate() {
                self.rec_head[self.rec_len + i] = c;
            }
        }
        self.rec_len = self.rec_len.saturating_add(b.len());
        if self.rec_over {
            return;
        }
        if self.text_len() + b.len() > self.cap {
            // The message is too large: drop its complete records, keep the one being read.
            self.cur_over = true;
            let keep = self.cur.len() - self.rec_start;
            self.cur.copy_within(self.rec_start.., HEADER_LEN);
            cut(&mut self.cur, HEADER_LEN + keep);
            self.rec_start = HEADER_LEN;
            if self.text_len() + b.len() > self.cap {
                self.rec_over = true;
                cut(&mut self.cur, HEADER_LEN);
                return;
            }
        }
        self.cur.extend_from_slice(b);
    }

    /// The record being read ends (its terminator is not yet written).
    fn end_record(&mut self) {
        let head = |c: u8| self.rec_head[0] == c && (self.rec_len == 1 || !self.rec_head[1].is_ascii_alphanumeric());
        let (is_h, is_l) = (head(b'H'), head(b'L'));
        if !self.rec_over {
            self.cur.push(b'\r');
        }
        if is_h && self.cur_records > 0 {
            // A new message: what came before is the previous one.
            let tail = self.cur[self.rec_start..].to_vec();
            cut(&mut self.cur, self.rec_start);
            let rec_offset = self.rec_offset;
            self.emit();
            self.cur.extend_from_slice(&tail);
            let mut tail = tail;
            crate::phi::wipe(&mut tail);
            self.cur_offset = rec_offset;
        } else if self.cur_records == 0 {
            self.cur_offset = self.rec_offset;
        }
        if self.rec_over {
            self.rec_over = false;
            self.cur_over = true;
        }
        self.cur_records += 1;
        self.rec_start = self.cur.len();
        self.rec_len = 0;
        if is_l {
            self.emit();
        }
    }

    /// The message assembled so far, as a record.
    fn emit(&mut self) {
        if self.cur_records == 0 && self.rec_len == 0 {
            return;
        }
        let flags = if self.framed { FLAG_FRAMED } else { 0 } | if self.noncanonical { FLAG_NONCANONICAL } else { 0 };
        let frames = self.frames.max(u32::from(self.framed));
        let findings = std::mem::take(&mut self.findings);
        let mut bytes = std::mem::take(&mut self.cur);
        let bytes = if self.cur_over {
            crate::phi::wipe(&mut bytes);
            None
        } else {
            read::finish_header(&mut bytes, flags, frames, &findings);
            Some(bytes)
        };
        self.queue.push_back(Piece::Record { kind: Kind::Message, offset: self.cur_offset, bytes });
        read::header_placeholder(&mut self.cur);
        self.cur_records = 0;
        self.cur_over = false;
        self.rec_start = HEADER_LEN;
        self.noncanonical = false;
        self.frames = 0;
    }

    /// Text of the stream (unframed input, or a frame's text): records end at CR (or LF); an LF
    /// after CR and blank lines are dropped (and make the message not canonical). `base` is the
    /// input offset of `text[0]`; `per_byte` false gives every record the offset `base` (the
    /// frame's).
    fn push_text(&mut self, text: &[u8], base: u64, per_byte: bool) {
        let mut i = 0;
        while i < text.len() {
            if self.rec_len == 0 {
                let b = text[i];
                if b == b'\r' || b == b'\n' {
                    // An LF after CR, or a blank line.
                    self.noncanonical = true;
                    i += 1;
                    continue;
                }
                self.rec_offset = if per_byte { base + i as u64 } else { base };
            }
            match memchr::memchr2(b'\r', b'\n', &text[i..]) {
                Some(j) => {
                    self.append(&text[i..i + j]);
                    if text[i + j] == b'\n' {
                        self.noncanonical = true;
                    }
                    i += j + 1;
                    self.end_record();
                }
                None => {
                    self.append(&text[i..]);
                    break;
                }
            }
        }
    }

    /// Ends the input: a record without terminator ends, the message is given out.
    fn end_input(&mut self) {
        if self.rec_len > 0 {
            self.noncanonical = true;
            self.end_record();
        }
        self.emit();
        // Frame findings after the last message: failed records.
        for f in std::mem::take(&mut self.findings) {
            self.queue.push_back(Piece::Problem { code: f.code, offset: f.offset, label: "astm" });
        }
        self.done = true;
    }

    /// Reads until at least one piece is queued or the input ends.
    fn step(&mut self) -> io::Result<()> {
        if self.framed {
            return self.step_framed();
        }
        // The input is moved out while its buffer is read (no copy of the bytes).
        let mut input = std::mem::replace(&mut self.input, Box::new(io::empty()));
        let result = match input.fill_buf() {
            Ok([]) => {
                self.end_input();
                Ok(0)
            }
            Ok(buf) => {
                let base = self.offset;
                self.offset += buf.len() as u64;
                self.push_text(buf, base, true);
                Ok(buf.len())
            }
            Err(e) => Err(e),
        };
        if let Ok(n) = result {
            input.consume(n);
        }
        self.input = input;
        result.map(|_| ())
    }

    fn finding(&mut self, code: Code, frame: u32, offset: u64) {
        if self.findings.len() < usize::from(u16::MAX) {
            self.findings.push(FrameFinding { code, frame, offset });
        }
    }

    /// Outside frames: session bytes and white space are skipped; STX starts a frame; anything
    /// else is data outside a frame (one finding per run).
    fn step_framed(&mut self) -> io::Result<()> {
        let mut junk: Option<u64> = None;
        loop {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                if let Some(at) = junk {
                    self.finding(Code::E1381_DATA_OUTSIDE_FRAME, self.frame_count + 1, at);
                }
                self.end_input();
                return Ok(());
            }
            let mut i = 0;
            while i < buf.len() {
                match buf[i] {
                    STX => break,
                    ENQ | EOT => self.expected = 1,
                    ACK | NAK | b'\r' | b'\n' | b' ' | b'\t' => {}
                    _ => {
                        junk.get_or_insert(self.offset + i as u64);
                    }
                }
                i += 1;
            }
            let found = i < buf.len();
            self.input.consume(i);
            self.offset += i as u64;
            if found {
                if let Some(at) = junk {
                    self.finding(Code::E1381_DATA_OUTSIDE_FRAME, self.frame_count + 1, at);
                }
                return self.read_frame();
            }
        }
    }

    /// Reads a frame from its STX.
    fn read_frame(&mut self) -> io::Result<()> {
        let start = self.offset;
        self.input.consume(1);
        self.offset += 1;
        self.frame_count = self.frame_count.saturating_add(1);
        let n = self.frame_count;
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        // FN, text and the end byte.
        let mut end: Option<u8> = None;
        let mut over = false;
        loop {
            let buf = self.input.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            match stop(buf) {
                Some(i) => {
                    let b = buf[i];
                    let is_end = b == ETX || b == ETB;
                    let take = if is_end || b == b'\n' { i + 1 } else { i };
                    let room = self.cap.saturating_sub(frame.len());
                    frame.extend_from_slice(&buf[..take.min(room)]);
                    over |= take > room;
                    self.input.consume(take);
                    self.offset += take as u64;
                    if is_end {
                        end = Some(b);
                    }
                    break;
                }
                None => {
                    let k = buf.len();
                    let room = self.cap.saturating_sub(frame.len());
                    frame.extend_from_slice(&buf[..k.min(room)]);
                    over |= k > room;
                    self.input.consume(k);
                    self.offset += k as u64;
                }
            }
        }
        let fn_byte = frame.first().copied().unwrap_or(0);
        let number = match fn_byte {
            b'0'..=b'7' => Some(fn_byte - b'0'),
            _ => None,
        };
        // The text: without FN and the end byte (or, without an end, a trailing `C1 C2 CR LF`).
        let text_end = match end {
            Some(_) => frame.len().saturating_sub(1),
            None => {
                let mut e = frame.len();
                if frame.last() == Some(&b'\n') {
                    e -= 1;
                    if e >= 4 && frame[e - 1] == b'\r' && hex(frame[e - 2]).is_some() && hex(frame[e - 3]).is_some() {
                        e -= 3;
                    }
                }
                e
            }
        };
        let text_start = 1.min(text_end);
        let retransmission = end.is_some() && number.is_some() && frame == self.previous;
        if retransmission {
            self.skip_trailer()?;
            self.frame = frame;
            crate::phi::wipe_keep(&mut self.frame);
            return Ok(());
        }
        match number {
            Some(d) if d == self.expected => {}
            _ => self.finding(Code::E1381_FRAME_NUMBER_INVALID, n, start),
        }
        if let Some(d) = number {
            self.expected = (d + 1) % 8;
        }
        if over {
            self.finding(Code::E1381_FRAME_END_MISSING, n, start);
        }
        match end {
            Some(_) => {
                let sum = checksum(&frame);
                match self.trailer()? {
                    Some(c) if c == sum => {}
                    Some(_) => self.finding(Code::E1381_CHECKSUM_MISMATCH, n, start),
                    None => self.finding(Code::E1381_FRAME_TRAILER_INVALID, n, start),
                }
            }
            None => {
                self.finding(Code::E1381_FRAME_END_MISSING, n, start);
            }
        }
        if text_end - text_start > MAX_FRAME_TEXT {
            self.finding(Code::E1381_FRAME_TOO_LONG, n, start);
        }
        self.frames = self.frames.saturating_add(1);
        if !over {
            self.push_text(&frame[text_start..text_end], start, false);
            if end == Some(ETX) && self.rec_len > 0 {
                // ETX ends the last frame of a record (LIS1-A 6.3.1): some instruments leave out
                // the record's CR before it. The record ends here, reported, not glued to the
                // next frame's.
                self.finding(Code::E1381_RECORD_END_MISSING, n, start);
                self.noncanonical = true;
                self.end_record();
            }
        }
        if end.is_some() && number.is_some() {
            // This frame is the one a retransmission repeats; the buffers swap (no copy).
            std::mem::swap(&mut self.previous, &mut frame);
        }
        self.frame = frame;
        crate::phi::wipe_keep(&mut self.frame);
        if end.is_none() || number.is_none() {
            crate::phi::wipe_keep(&mut self.previous);
        }
        Ok(())
    }

    /// Consumes one byte if it is `want` (a predicate).
    fn take_if(&mut self, want: impl Fn(u8) -> bool) -> io::Result<Option<u8>> {
        let b = self.input.fill_buf()?.first().copied();
        match b {
            Some(b) if want(b) => {
                self.input.consume(1);
                self.offset += 1;
                Ok(Some(b))
            }
            _ => Ok(None),
        }
    }

    /// The trailer after ETB/ETX: the checksum's value when it is two hexadecimal characters
    /// followed by CR LF; `None` otherwise (what matches is consumed).
    fn trailer(&mut self) -> io::Result<Option<u8>> {
        let hi = self.take_if(|b| hex(b).is_some())?;
        let lo = match hi {
            Some(_) => self.take_if(|b| hex(b).is_some())?,
            None => None,
        };
        let cr = self.take_if(|b| b == b'\r')?;
        let lf = match cr {
            Some(_) => self.take_if(|b| b == b'\n')?,
            None => None,
        };
        if let (Some(h), Some(l), Some(_)) = (hi.and_then(hex), lo.and_then(hex), lf) {
            return Ok(Some(h * 16 + l));
        }
        // A malformed trailer: the rest of its four bytes, through LF, belongs to it.
        let mut used = [hi, lo, cr, lf].iter().filter(|b| b.is_some()).count();
        while used < 4 && lf.is_none() {
            match self.take_if(|b| !matches!(b, STX | ETX | EOT | ENQ | ACK | NAK | ETB))? {
                Some(b'\n') | None => break,
                Some(_) => used += 1,
            }
        }
        Ok(None)
    }

    fn skip_trailer(&mut self) -> io::Result<()> {
        self.trailer().map(|_| ())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame with its checksum.
    pub(crate) fn frame(n: u8, text: &[u8], end: u8) -> Vec<u8> {
        let mut body = vec![b'0' + n];
        body.extend_from_slice(text);
        body.push(end);
        let sum = checksum(&body);
        let mut out = vec![STX];
        out.extend_from_slice(&body);
        out.extend_from_slice(format!("{sum:02X}\r\n").as_bytes());
        out
    }

    fn pieces(input: &[u8], framed: bool) -> Vec<(Option<usize>, Vec<Code>)> {
        let split = Splitter::new(Box::new(input), framed, Limits::default());
        split
            .filter_map(Result::ok)
            .map(|p| match p {
                Piece::Record { bytes, .. } => {
                    let doc = bytes.map(|b| read::read(b, &Limits::default()).unwrap_or_else(|_| panic!("reads")));
                    let codes =
                        doc.as_ref().map(|d| d.frame_findings.iter().map(|f| f.code).collect()).unwrap_or_default();
                    (doc.map(|d| d.records.len()), codes)
                }
                Piece::Problem { code, .. } => (None, vec![code]),
                _ => (None, Vec::new()),
            })
            .collect()
    }

    /// Regression: instruments that leave out the CR before ETX (seen in public Sysmex CS-series
    /// client code) had all of a session's records glued into one.
    #[test]
    fn record_end_at_etx_without_cr() {
        let mut s = vec![ENQ];
        s.extend(frame(1, b"H|\\^&", ETX));
        s.extend(frame(2, b"P|1|AB", ETB));
        s.extend(frame(3, b"C", ETX));
        s.extend(frame(4, b"O|1\r", ETX));
        s.extend(frame(5, b"L|1|N", ETX));
        s.push(EOT);
        let missing = Code::E1381_RECORD_END_MISSING;
        assert_eq!(pieces(&s, true), vec![(Some(4), vec![missing, missing, missing])]);
    }

    #[test]
    fn splits_messages() {
        let text = b"H|\\^&\rP|1\rL|1|N\rH|\\^&\r\nP|1\r\nO|1\r\nL|1\r\n";
        assert_eq!(pieces(text, false), vec![(Some(3), vec![]), (Some(4), vec![])]);
        // Without L: the next H starts a message.
        assert_eq!(pieces(b"H|\\^&\rP|1\rH|\\^&\rL|1\r", false), vec![(Some(2), vec![]), (Some(2), vec![])]);
    }

    #[test]
    fn deframes_and_checks() {
        let mut s = vec![ENQ];
        s.extend(frame(1, b"H|\\^&\r", ETX));
        s.push(ACK);
        s.extend(frame(2, b"P|1|", ETB));
        s.extend(frame(3, b"X\r", ETX));
        s.extend(frame(4, b"L|1|N\r", ETX));
        s.push(EOT);
        assert_eq!(pieces(&s, true), vec![(Some(3), vec![])]);
        // A retransmitted frame is read once.
        let mut r = frame(1, b"H|\\^&\r", ETX);
        r.push(NAK);
        r.extend(frame(1, b"H|\\^&\r", ETX));
        r.extend(frame(2, b"L|1|N\r", ETX));
        assert_eq!(pieces(&r, true), vec![(Some(2), vec![])]);
        // A bad checksum, a skipped number.
        let mut b = frame(1, b"H|\\^&\r", ETX);
        let at = b.len() - 4;
        b[at] = if b[at] == b'0' { b'1' } else { b'0' };
        b.extend(frame(3, b"L|1|N\r", ETX));
        assert_eq!(
            pieces(&b, true),
            vec![(Some(2), vec![Code::E1381_CHECKSUM_MISMATCH, Code::E1381_FRAME_NUMBER_INVALID])]
        );
        // No ETX: the text is kept, the trailer dropped.
        let mut m = frame(1, b"H|\\^&\r", ETX);
        let mut l = frame(2, b"L|1|N\r", ETX);
        let etx = l.len() - 5;
        l.remove(etx);
        m.extend(l);
        assert_eq!(pieces(&m, true), vec![(Some(2), vec![Code::E1381_FRAME_END_MISSING])]);
    }
}
