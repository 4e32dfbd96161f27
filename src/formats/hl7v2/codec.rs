//! HL7 v2 as a registered format: [`Hl7`] implements the [`Codec`] trait over the modules of
//! this folder. An input is ER7 (split by [`stream`]: messages, concatenations, FHS/BHS
//! batches) or MLLP frames (the framing, [`crate::formats::mllp`]), each frame's content split
//! the same way; the batch protocol is tracked across records by [`batch::Tracker`].
//!
//! What it does not do: anything of its own; it maps the trait onto `parse`, `validate`,
//! `inspect`, `write` and `fmt`.

use std::collections::VecDeque;
use std::io::{self, BufRead};

use super::parse::{Delimiters, Message};
use super::stream::{self, Envelope};
use super::{batch, fmt, inspect, validate, write};
use crate::diag::{Code, Diagnostic};
use crate::formats::Operation;
use crate::formats::codec::{
    Check, Codec, Fatal, Framing, INPUT_BUFFER, Kind, Piece, Pieces, Position, Settings, Spill,
};
use crate::formats::file_input::FileInput;
use crate::formats::mllp::{self, Deframer, Frame};
use crate::phi::{Disclosure, Phi};

/// HL7 v2 (ER7), single messages, concatenations and FHS/BHS batches, plain or in MLLP frames.
#[derive(Debug)]
pub struct Hl7;

/// What HL7 v2 tracks across the records of a stream: the batch protocol, and the delimiters
/// the envelope records inherit from the last file or batch header.
#[derive(Debug, Default)]
pub struct Stream {
    tracker: batch::Tracker,
    delimiters: Option<Delimiters>,
}

fn kind_of(kind: stream::Kind) -> Kind<Envelope> {
    match kind {
        stream::Kind::Message => Kind::Message,
        stream::Kind::Envelope(e) => Kind::Envelope(e),
    }
}

/// The largest file read whole before it is cut into records (see `Hl7::split_file`); a larger
/// one is read as a stream, whose memory does not grow with the input.
const WHOLE_FILE_AT: u64 = 16 * 1024 * 1024;

/// True for `MSH`, `FHS` or `BHS` followed by a field separator.
fn is_header(body: &[u8]) -> bool {
    matches!(body.get(..3), Some(b"MSH" | b"FHS" | b"BHS"))
        && body.get(3).is_some_and(|&b| crate::detect::is_delimiter_byte(b))
}

impl Codec for Hl7 {
    const NAME: &'static str = "hl7";
    const OPERATIONS: &'static [Operation] = &[
        Operation::Parse,
        Operation::Validate,
        Operation::Inspect,
        Operation::Fmt,
        Operation::Convert,
        Operation::Redact,
    ];
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = Envelope;
    type Document = Message;
    type Stream = Stream;

    fn sniff(body: &[u8], _raw: &[u8]) -> bool {
        is_header(body) || body.first() == Some(&mllp::START)
    }

    fn split<'a>(input: Box<dyn BufRead + 'a>, first: Option<u8>, settings: &Settings) -> (bool, Pieces<'a, Envelope>) {
        let framed = settings.framing == Some(Framing::Mllp) || first == Some(mllp::START);
        if framed {
            let frames = Framed { frames: Deframer::new(input, settings.limits), queue: VecDeque::new() };
            return (true, Box::new(frames));
        }
        let records = stream::Splitter::new(input, settings.limits)
            .map(|raw| raw.map(|raw| Piece::Record { kind: kind_of(raw.kind), offset: raw.offset, bytes: raw.bytes }));
        (false, Box::new(records))
    }

    /// A file of at most [`WHOLE_FILE_AT`] bytes (and `max_input_bytes`), not framed, is read
    /// into one buffer and cut into records in place ([`stream::split_slice`], the rules of
    /// [`stream::Splitter`]), instead of line by line through a buffer into a growing record:
    /// the last record (the only one, for a single message) keeps the file's buffer. Larger
    /// files and framed ones are read as streams.
    fn split_file<'a>(input: FileInput, first: Option<u8>, settings: &Settings) -> (bool, Pieces<'a, Envelope>) {
        let framed = settings.framing == Some(Framing::Mllp) || first == Some(mllp::START);
        let limit = settings.limits.max_input_bytes.min(WHOLE_FILE_AT);
        if framed || input.file_len() > limit {
            return Self::split(input.into_stream(INPUT_BUFFER), first, settings);
        }
        let bytes = match input.read_whole() {
            Ok(b) => b,
            Err(e) => return (false, Box::new(std::iter::once(Err(e)))),
        };
        if bytes.len() as u64 > limit {
            // It grew since it was opened: read as the stream it now is.
            return Self::split(Box::new(io::Cursor::new(bytes)), first, settings);
        }
        let records = stream::split_slice(&bytes);
        let count = records.len();
        let mut bytes = Some(crate::phi::Scratch::from(bytes));
        let mut records = records.into_iter().enumerate();
        let pieces = std::iter::from_fn(move || {
            let (i, (kind, range)) = records.next()?;
            let all = bytes.as_mut()?;
            let record = if i + 1 == count {
                // The last record takes the buffer, cut to its range (what is cut is white
                // space; the allocation is wiped with the record's).
                let mut own = std::mem::take(&mut **all);
                own.truncate(range.end);
                own.drain(..range.start);
                own
            } else {
                all.get(range.clone()).unwrap_or_default().to_vec()
            };
            Some(Ok(Piece::Record { kind: kind_of(kind), offset: range.start as u64, bytes: Some(record) }))
        });
        (false, Box::new(pieces))
    }

    fn read(
        bytes: Vec<u8>,
        offset: u64,
        kind: Kind<Envelope>,
        stream: &Stream,
        settings: &Settings,
        _keep: bool,
    ) -> Result<Message, Fatal> {
        let inherited = match kind {
            Kind::Message => None,
            Kind::Envelope(_) => Some(stream.delimiters),
        };
        super::parse::parse_record(bytes, offset, &settings.limits, inherited)
            .map_err(|(cause, bytes)| Fatal { cause, bytes: Some(bytes) })
    }

    fn findings(msg: &Message, kind: Kind<Envelope>, check: Check, settings: &Settings) -> Vec<Diagnostic> {
        let options = validate::Options { strict: settings.strict, syntax_only: check == Check::Syntax };
        let mut findings = match kind {
            Kind::Message => validate::validate(msg, options),
            Kind::Envelope(_) => validate::validate_envelope(msg, options),
        };
        findings.truncate(validate::MAX_FINDINGS);
        findings
    }

    fn model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::model_json(msg, disclosure, out);
    }

    fn model_json_spilled(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>, spill: Spill<'_>) {
        write::model_json_spilled(msg, disclosure, out, spill);
    }

    fn named_model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::named_model_json(msg, disclosure, out);
    }

    fn summary(msg: &Message, findings: &[Diagnostic], out: &mut Vec<u8>) -> Result<(), Code> {
        let summary = inspect::summarize(msg, findings);
        serde_json::to_writer(out, &summary).map_err(|_| Code::CLI_INTERNAL)
    }

    fn inventory(msg: &Message, findings: &[Diagnostic], codes: bool, out: &mut Vec<u8>) -> Result<(), Code> {
        let inventory = inspect::inventory(msg, findings, codes);
        serde_json::to_writer(out, &inventory).map_err(|_| Code::CLI_INTERNAL)
    }

    fn canonical(msg: &Message, _settings: &Settings, disclosure: &Disclosure, out: &mut Vec<u8>) {
        fmt::canonical(msg, disclosure, out);
    }

    fn is_canonical(msg: &Message, canonical: &[u8], _settings: &Settings, disclosure: &Disclosure) -> bool {
        fmt::is_canonical(msg, canonical, disclosure)
    }

    fn positions(msg: &Message, findings: &[Diagnostic]) -> Vec<Position> {
        super::locate::positions(msg, findings)
    }

    fn on_message(stream: &mut Stream) {
        stream.tracker.message();
    }

    fn on_envelope(stream: &mut Stream, kind: Envelope, doc: Option<&Message>) -> Vec<Diagnostic> {
        if let (Envelope::Fhs | Envelope::Bhs, Some(msg)) = (kind, doc) {
            stream.delimiters = Some(msg.delimiters());
        }
        stream.tracker.envelope(kind, doc)
    }

    fn finish(stream: &mut Stream) -> Vec<Diagnostic> {
        stream.tracker.finish()
    }
}

/// The pieces of an MLLP stream: a frame problem, or a frame with the records of its content.
struct Framed<'a> {
    frames: Deframer<Box<dyn BufRead + 'a>>,
    /// The pieces of the frame being given out.
    queue: VecDeque<Piece<Envelope>>,
}

impl Iterator for Framed<'_> {
    type Item = io::Result<Piece<Envelope>>;

    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(p) = self.queue.pop_front() {
            return Some(Ok(p));
        }
        let frame = match self.frames.next()? {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        match frame {
            Frame::Problem { code, offset } => return Some(Ok(Piece::Problem { code, offset, label: "mllp" })),
            Frame::Content { bytes, offset, end_without_cr } => {
                let ranges = stream::split_slice(&bytes);
                if let [(kind, _)] = ranges.as_slice() {
                    // The common case, one message per frame: no copy.
                    let kind = kind_of(*kind);
                    self.queue.push_back(Piece::Record { kind, offset, bytes: Some(bytes) });
                } else {
                    let content = Phi::new(bytes);
                    for (kind, range) in ranges {
                        let piece = content.span().slice(range.start, range.end).raw().to_vec();
                        let at = offset + range.start as u64;
                        self.queue.push_back(Piece::Record { kind: kind_of(kind), offset: at, bytes: Some(piece) });
                    }
                }
                self.queue.push_back(Piece::FrameEnd { clean: !end_without_cr });
            }
        }
        Some(Ok(Piece::FrameStart(Framing::Mllp)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::plain(false)
    }

    /// A piece as `(kind, offset, bytes)`, or the error kind.
    type Record = Result<(Kind<Envelope>, u64, Option<Vec<u8>>), io::ErrorKind>;

    /// Every piece.
    fn pieces(pieces: Pieces<'_, Envelope>) -> Vec<Record> {
        pieces
            .map(|p| match p {
                Ok(Piece::Record { kind, offset, bytes }) => Ok((kind, offset, bytes)),
                Ok(_) => Err(io::ErrorKind::Other),
                Err(e) => Err(e.kind()),
            })
            .collect()
    }

    /// A file read whole is cut into the records the stream splitter gives (kinds, offsets,
    /// bytes): every HL7 v2 fixture as it is, with a BOM, with CR LF and LF line ends, with white
    /// space around it, and two of them concatenated.
    #[test]
    fn a_file_read_whole_gives_the_records_of_the_stream() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hl7v2");
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(root)];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).expect("fixture folder") {
                let p = e.expect("entry").path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "hl7") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 20, "fixtures found: {}", files.len());
        let s = settings();
        let mut checked = 0;
        for (n, f) in files.iter().enumerate() {
            let text = std::fs::read(f).expect("fixture");
            let next = std::fs::read(&files[(n + 1) % files.len()]).expect("fixture");
            let crlf: Vec<u8> =
                text.iter().flat_map(|&b| if b == b'\r' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
            let lf: Vec<u8> = text.iter().map(|&b| if b == b'\r' { b'\n' } else { b }).collect();
            let variants = [
                text.clone(),
                [b"\xEF\xBB\xBF".as_slice(), &text].concat(),
                crlf,
                lf,
                [b"\r\n  \n".as_slice(), &text, b"\n\n \r"].concat(),
                [text.as_slice(), &next].concat(),
            ];
            for bytes in variants {
                let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace() && *b != 0xEF);
                if first == Some(mllp::START) {
                    continue;
                }
                let prefix = bytes.get(..bytes.len().min(7)).expect("prefix").to_vec();
                let mut rest = io::Cursor::new(bytes.clone());
                rest.set_position(prefix.len() as u64);
                let input = FileInput::new(prefix, rest, bytes.len() as u64);
                let (multi_whole, whole) = Hl7::split_file(input, first, &s);
                let (multi_stream, stream) = Hl7::split(Box::new(io::Cursor::new(bytes.clone())), first, &s);
                assert_eq!(multi_whole, multi_stream);
                assert!(pieces(whole) == pieces(stream), "{}: records differ", f.display());
                checked += 1;
            }
        }
        assert!(checked > 100);
    }
}
