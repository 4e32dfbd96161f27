//! ASTM as a registered format: [`Astm`] implements the [`Codec`] trait over the modules of this
//! folder. E1381 framing is detected here (STX or a session byte first), as MLLP is for HL7 v2,
//! and handled by the splitter; `--format astm` reads either.
//!
//! What it does not do: anything of its own; it maps the trait onto `split`, `read`, `validate`
//! and `write`.

use std::io::BufRead;

use super::read::{self, Document};
use super::split::{self, Envelope, Splitter};
use super::{validate, write};
use crate::diag::{Code, Diagnostic};
use crate::formats::Operation;
use crate::formats::codec::{Check, Codec, Fatal, Kind, Pieces, Settings};
use crate::phi::{Disclosure, Phi};

/// ASTM E1394 / LIS2-A2 messages, with or without E1381 / LIS1-A frames.
#[derive(Debug)]
pub struct Astm;

/// What ASTM tracks across the messages of a stream: nothing but their count (each message
/// carries its own delimiters).
#[derive(Debug, Default)]
pub struct Stream {
    /// Messages seen.
    pub messages: u64,
}

/// The signature: an H record `H|\^&` (any four delimiters), optionally after E1381 session
/// bytes and a frame start with its frame number. After session bytes the H record must be in
/// a frame: such a stream is read framed, and a record outside a frame is not read (it would
/// make the input ASTM without giving its messages their header).
pub fn is_astm(body: &[u8]) -> bool {
    let mut b = body;
    let mut session = false;
    while let [first, rest @ ..] = b {
        if matches!(*first, split::ENQ | split::ACK | split::NAK | split::EOT) {
            session = true;
            b = rest;
        } else if matches!(*first, b'\r' | b'\n') {
            b = rest;
        } else {
            break;
        }
    }
    let rec = match b {
        [split::STX, d, rest @ ..] if d.is_ascii_digit() => rest,
        _ if session => return false,
        _ => b,
    };
    rec.first() == Some(&b'H') && read::Delimiters::of_header(rec.get(..rec.len().min(6)).unwrap_or_default()).is_some()
}

impl Codec for Astm {
    const NAME: &'static str = "astm";
    const OPERATIONS: &'static [Operation] =
        &[Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt, Operation::Redact];
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = Envelope;
    type Document = Document;
    type Stream = Stream;

    fn sniff(body: &[u8], _raw: &[u8]) -> bool {
        is_astm(body)
    }

    fn split<'a>(input: Box<dyn BufRead + 'a>, first: Option<u8>, settings: &Settings) -> (bool, Pieces<'a, Envelope>) {
        let framed = first.is_some_and(split::starts_framed);
        (framed, Box::new(Splitter::new(input, framed, settings.limits)))
    }

    fn read(
        bytes: Vec<u8>,
        _offset: u64,
        _kind: Kind<Envelope>,
        _stream: &Stream,
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

    fn on_message(stream: &mut Stream) {
        stream.messages = stream.messages.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature() {
        assert!(is_astm(b"H|\\^&|||"));
        assert!(is_astm(b"\x021H|\\^&|||"));
        assert!(is_astm(b"\x05\x021H|\\^&"));
        assert!(!is_astm(b"\x05H|\\^&|||"), "an H record outside a frame after ENQ is not read");
        assert!(is_astm(b"H|\\^&"));
        assert!(!is_astm(b"H|\\^"));
        assert!(!is_astm(b"HELLO"));
        assert!(!is_astm(b"MSH|^~\\&"));
    }
}
