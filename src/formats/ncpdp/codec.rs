//! NCPDP Telecommunication D.0 as a registered format: [`Ncpdp`] implements the [`Codec`]
//! trait over the modules of this folder. An input holds one transmission, or several, one per
//! line (a transmission never holds a line end: its values are printable characters and its
//! separators are 0x1C-0x1E).
//!
//! The signature (strict, so that no other format's input is taken): a request header (six
//! digits of BIN, `D0`, then a transaction code of two letters or digits, and the segment or
//! group separator at offset 56) or a response header (`D0`, a transaction code, then the
//! segment or group separator at offset 31), printable characters only inside the header.
//!
//! What it does not do: anything of its own; it maps the trait onto `read`, `validate` and
//! `write`.

use std::io::{BufRead, Read};

use super::read::{self, Document, GROUP_SEPARATOR, SEGMENT_SEPARATOR};
use super::tables::{REQUEST_HEADER_LEN, RESPONSE_HEADER_LEN};
use super::{validate, write};
use crate::diag::{Code, Diagnostic};
use crate::formats::Operation;
use crate::formats::codec::{Check, Codec, Fatal, Kind, Piece, Pieces, Settings};
use crate::phi::{Disclosure, Phi};

/// NCPDP Telecommunication Standard D.0 transmissions.
#[derive(Debug)]
pub struct Ncpdp;

/// NCPDP has no envelope records (a transmission is one record).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Envelope {}

/// The signature: a D.0 request or response header followed by a segment or group separator.
pub fn is_ncpdp(body: &[u8]) -> bool {
    let header = |len: usize| {
        body.get(len).is_some_and(|&b| b == SEGMENT_SEPARATOR || b == GROUP_SEPARATOR)
            && body[..len].iter().all(|&b| (0x20..0x7F).contains(&b))
    };
    let code = |at: usize| body.get(at..at + 2).is_some_and(|c| c.iter().all(u8::is_ascii_alphanumeric));
    let request =
        header(REQUEST_HEADER_LEN) && body[..6].iter().all(u8::is_ascii_digit) && &body[6..8] == b"D0" && code(8);
    let response = header(RESPONSE_HEADER_LEN) && body.starts_with(b"D0") && code(2);
    request || response
}

/// The transmissions of an input, one per line, each with its line end; blank lines are
/// skipped. A line over `max` bytes is a record without bytes (its rest is read and dropped).
struct Lines<'a> {
    input: Box<dyn BufRead + 'a>,
    max: u64,
    offset: u64,
    done: bool,
}

impl Iterator for Lines<'_> {
    type Item = std::io::Result<Piece<Envelope>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let mut line = zeroize::Zeroizing::new(Vec::new());
            let start = self.offset;
            let n = match (&mut self.input).take(self.max.saturating_add(1)).read_until(b'\n', &mut line) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if n == 0 {
                self.done = true;
                return None;
            }
            self.offset += n as u64;
            if n as u64 > self.max && line.last() != Some(&b'\n') {
                // Over the limit: drop the rest of the line.
                loop {
                    let buf = match self.input.fill_buf() {
                        Ok(b) => b,
                        Err(e) => {
                            self.done = true;
                            return Some(Err(e));
                        }
                    };
                    if buf.is_empty() {
                        self.done = true;
                        break;
                    }
                    let (used, end) = match memchr::memchr(b'\n', buf) {
                        Some(i) => (i + 1, true),
                        None => (buf.len(), false),
                    };
                    self.input.consume(used);
                    self.offset += used as u64;
                    if end {
                        break;
                    }
                }
                return Some(Ok(Piece::Record { kind: Kind::Message, offset: start, bytes: None }));
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(Piece::Record {
                kind: Kind::Message,
                offset: start,
                bytes: Some(std::mem::take(&mut *line)),
            }));
        }
    }
}

impl Codec for Ncpdp {
    const NAME: &'static str = "ncpdp";
    const OPERATIONS: &'static [Operation] =
        &[Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt, Operation::Redact];
    const PASS_THROUGH_END: &'static [u8] = b"";
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = Envelope;
    type Document = Document;
    type Stream = ();

    fn sniff(body: &[u8], _raw: &[u8]) -> bool {
        is_ncpdp(body)
    }

    fn split<'a>(
        input: Box<dyn BufRead + 'a>,
        _first: Option<u8>,
        settings: &Settings,
    ) -> (bool, Pieces<'a, Envelope>) {
        let lines = Lines { input, max: settings.limits.max_input_bytes, offset: 0, done: false };
        (false, Box::new(lines))
    }

    fn read(
        bytes: Vec<u8>,
        _offset: u64,
        _kind: Kind<Envelope>,
        _stream: &(),
        settings: &Settings,
        _keep: bool,
    ) -> Result<Document, Fatal> {
        read::read(bytes, &settings.limits).map_err(|e| {
            let (cause, bytes) = *e;
            Fatal { cause, bytes: Some(Phi::new(bytes)) }
        })
    }

    fn findings(doc: &Document, _kind: Kind<Envelope>, check: Check, settings: &Settings) -> Vec<Diagnostic> {
        let options = validate::Options { syntax_only: check == Check::Syntax, strict: settings.strict };
        validate::validate(doc, options)
    }

    fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::model_json(doc, disclosure, out);
    }

    fn summary(doc: &Document, findings: &[Diagnostic], out: &mut Vec<u8>) -> Result<(), Code> {
        serde_json::to_writer(out, &write::summarize(doc, findings)).map_err(|_| Code::CLI_INTERNAL)
    }

    fn canonical(doc: &Document, _settings: &Settings, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::canonical(doc, disclosure, out);
    }

    fn is_canonical(doc: &Document, canonical: &[u8], _settings: &Settings, disclosure: &Disclosure) -> bool {
        write::is_canonical(doc, canonical, disclosure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature() {
        let mut req = b"610014D0B1PCN1234567101123456789012345202403150VENDOR001".to_vec();
        assert_eq!(req.len(), 56);
        assert!(!is_ncpdp(&req));
        req.push(SEGMENT_SEPARATOR);
        assert!(is_ncpdp(&req));
        req[6] = b'5';
        assert!(!is_ncpdp(&req));
        let mut resp = b"D0B11A01123456789012345202403155".to_vec();
        resp.truncate(31);
        resp.push(SEGMENT_SEPARATOR);
        assert!(is_ncpdp(&resp));
        assert!(!is_ncpdp(b"MSH|^~\\&|"));
        assert!(!is_ncpdp(b"D0B1\x1e"));
    }
}
