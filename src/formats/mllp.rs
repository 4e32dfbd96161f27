//! MLLP framing (HL7 v2 Minimal Lower Layer Protocol, release 2): `0x0B` message `0x1C 0x0D`.
//!
//! A [`Deframer`] reads frames from a byte stream incrementally, with memory bounded by the
//! largest frame. White space between frames is allowed; other bytes outside frames, a frame
//! that never ends, a frame interrupted by a new start block, and a frame over the size limit are
//! reported as items of their own, so one bad frame never loses the others.
//!
//! What it does not do: acknowledgements or any network transport; it reads bytes.

use std::io::{self, BufRead};

use zeroize::Zeroize;

use crate::diag::Code;
use crate::limits::Limits;

/// Start block.
pub const START: u8 = 0x0B;
/// End block (followed by CR).
pub const END: u8 = 0x1C;

/// One item of a stream.
#[derive(Debug)]
pub enum Frame {
    /// A complete frame's content, and the offset of its first content byte.
    Content {
        /// The content, without the framing bytes.
        bytes: Vec<u8>,
        /// Offset of the first content byte in the stream.
        offset: u64,
        /// The end block was not followed by CR.
        end_without_cr: bool,
    },
    /// A problem, at a stream offset: truncated frame, data outside frames, oversized frame.
    Problem {
        /// `MLLP_FRAME_TRUNCATED`, `MLLP_DATA_OUTSIDE_FRAME` or `CLI_INPUT_TOO_LARGE`.
        code: Code,
        /// Where it starts.
        offset: u64,
    },
}

/// Reads MLLP frames from a buffered reader.
#[derive(Debug)]
pub struct Deframer<R> {
    reader: R,
    limits: Limits,
    offset: u64,
    done: bool,
    /// A frame read while reporting the junk before it.
    pending: Option<Frame>,
}

impl<R: BufRead> Deframer<R> {
    /// Deframes `reader`; `limits.max_input_bytes` bounds each frame.
    pub fn new(reader: R, limits: Limits) -> Self {
        Deframer { reader, limits, offset: 0, done: false, pending: None }
    }

    fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        if let Some(f) = self.pending.take() {
            return Ok(Some(f));
        }
        // Outside a frame: skip white space; anything else up to the next start block is junk.
        let mut junk_at: Option<u64> = None;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(junk_at.map(|offset| Frame::Problem { code: Code::MLLP_DATA_OUTSIDE_FRAME, offset }));
            }
            match buf.iter().position(|&b| b == START || !b.is_ascii_whitespace()) {
                Some(i) if buf[i] == START => {
                    self.reader.consume(i + 1);
                    self.offset += i as u64 + 1;
                    if let Some(offset) = junk_at {
                        // Report the junk now; the frame is read on the next call. Put the start
                        // block "back" by remembering we are inside a frame.
                        return Ok(Some(self.read_frame_after_junk(offset)?));
                    }
                    return self.read_frame().map(Some);
                }
                Some(i) => {
                    junk_at.get_or_insert(self.offset + i as u64);
                    let skip = memchr::memchr(START, &buf[i..]).map_or(buf.len(), |j| i + j);
                    self.reader.consume(skip);
                    self.offset += skip as u64;
                }
                None => {
                    let n = buf.len();
                    self.reader.consume(n);
                    self.offset += n as u64;
                }
            }
        }
    }

    fn read_frame_after_junk(&mut self, junk: u64) -> io::Result<Frame> {
        self.pending = Some(self.read_frame()?);
        Ok(Frame::Problem { code: Code::MLLP_DATA_OUTSIDE_FRAME, offset: junk })
    }

    /// Reads a frame's content after its start block.
    fn read_frame(&mut self) -> io::Result<Frame> {
        let start = self.offset;
        let mut content: Vec<u8> = Vec::new();
        let mut overflow = false;
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                content.zeroize();
                return Ok(Frame::Problem { code: Code::MLLP_FRAME_TRUNCATED, offset: start.saturating_sub(1) });
            }
            match memchr::memchr2(END, START, buf) {
                Some(i) => {
                    let is_end = buf[i] == END;
                    if !overflow && (content.len() + i) as u64 <= self.limits.max_input_bytes {
                        content.extend_from_slice(&buf[..i]);
                    } else {
                        overflow = true;
                    }
                    if !is_end {
                        // A new start block inside a frame: this frame was truncated. Leave the
                        // start block for the next call.
                        self.reader.consume(i);
                        self.offset += i as u64;
                        content.zeroize();
                        return Ok(Frame::Problem {
                            code: Code::MLLP_FRAME_TRUNCATED,
                            offset: start.saturating_sub(1),
                        });
                    }
                    self.reader.consume(i + 1);
                    self.offset += i as u64 + 1;
                    let next = self.reader.fill_buf()?;
                    let end_without_cr = next.first() != Some(&b'\r');
                    if !end_without_cr {
                        self.reader.consume(1);
                        self.offset += 1;
                    }
                    if overflow {
                        content.zeroize();
                        return Ok(Frame::Problem { code: Code::CLI_INPUT_TOO_LARGE, offset: start.saturating_sub(1) });
                    }
                    return Ok(Frame::Content { bytes: content, offset: start, end_without_cr });
                }
                None => {
                    let n = buf.len();
                    if !overflow && (content.len() + n) as u64 <= self.limits.max_input_bytes {
                        content.extend_from_slice(buf);
                    } else {
                        overflow = true;
                        content.zeroize();
                        content = Vec::new();
                    }
                    self.reader.consume(n);
                    self.offset += n as u64;
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for Deframer<R> {
    type Item = io::Result<Frame>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_frame() {
            Ok(Some(f)) => Some(Ok(f)),
            Ok(None) => {
                self.done = true;
                None
            }
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

    fn frames(input: &[u8]) -> Vec<Result<usize, Code>> {
        Deframer::new(input, Limits::default())
            .filter_map(Result::ok)
            .map(|f| match f {
                Frame::Content { bytes, .. } => Ok(bytes.len()),
                Frame::Problem { code, .. } => Err(code),
            })
            .collect()
    }

    #[test]
    fn deframes() {
        assert_eq!(frames(b"\x0bAB\x1c\r\n\x0bCDE\x1c\r"), vec![Ok(2), Ok(3)]);
        assert_eq!(frames(b"\x0bAB\x1c\rjunk\x0bC\x1c\r"), vec![Ok(2), Err(Code::MLLP_DATA_OUTSIDE_FRAME), Ok(1)]);
        assert_eq!(frames(b"\x0bAB\x1c\r\x0bCD"), vec![Ok(2), Err(Code::MLLP_FRAME_TRUNCATED)]);
        assert_eq!(frames(b"\x0bAB\x0bCD\x1c\r"), vec![Err(Code::MLLP_FRAME_TRUNCATED), Ok(2)]);
    }
}
