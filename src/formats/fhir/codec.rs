//! FHIR R4 as a registered format: [`Fhir`] implements the [`Codec`] trait over the modules of
//! this folder. An input is one resource (JSON or XML, read whole, bounded by
//! `max_input_bytes`) or, with `--ndjson`, one resource per non-blank line (read one line at a
//! time: memory bounded by the longest line, the whole input still by `max_input_bytes`).
//!
//! Byte offsets in the findings of an NDJSON record are relative to the start of its line.
//!
//! What it does not do: stream a single resource (a FHIR document is read whole).

use std::io::{BufRead, Read};

use zeroize::Zeroizing;

use super::model::Document;
use super::{fmt, inspect, validate, write};
use crate::diag::{Code, Diagnostic};
use crate::formats::Operation;
use crate::formats::codec::{Check, Codec, Fatal, Kind, Piece, Pieces, Position, Settings, Syntax};
use crate::phi::{Disclosure, Phi};

/// FHIR R4, JSON or XML, one resource or NDJSON.
#[derive(Debug)]
pub struct Fhir;

/// FHIR has no envelope records (a Bundle is one resource).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NoEnvelope {}

const FHIR_NS: &[u8] = b"http://hl7.org/fhir";

impl Codec for Fhir {
    const NAME: &'static str = "fhir";
    const OPERATIONS: &'static [Operation] =
        &[Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt, Operation::Redact];
    const PASS_THROUGH_END: &'static [u8] = b"\n";
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = NoEnvelope;
    type Document = Document;
    type Stream = ();

    fn sniff(body: &[u8], _raw: &[u8]) -> bool {
        is_json_resource(body) || crate::formats::sniff::xml_root(body).is_some_and(|r| r.namespace == Some(FHIR_NS))
    }

    fn split<'a>(
        input: Box<dyn BufRead + 'a>,
        _first: Option<u8>,
        settings: &Settings,
    ) -> (bool, Pieces<'a, NoEnvelope>) {
        let max = settings.limits.max_input_bytes;
        let input = input.take(max.saturating_add(1));
        if settings.ndjson {
            return (true, Box::new(Lines { input, max, total: 0, line: Zeroizing::new(Vec::new()) }));
        }
        let mut input = Some(input);
        let whole = std::iter::from_fn(move || {
            let mut all = Zeroizing::new(Vec::new());
            if let Err(e) = input.take()?.read_to_end(&mut all) {
                return Some(Err(e));
            }
            if all.len() as u64 > max {
                return Some(Ok(Piece::Fail(Code::CLI_INPUT_TOO_LARGE)));
            }
            Some(Ok(Piece::Record { kind: Kind::Message, offset: 0, bytes: Some(std::mem::take(&mut *all)) }))
        });
        (false, Box::new(whole))
    }

    fn positions(doc: &Document, findings: &[Diagnostic]) -> Vec<Position> {
        super::locate::positions(doc, findings)
    }

    fn full_location(doc: &Document, finding: &Diagnostic, out: &mut Vec<u8>) -> bool {
        super::locate::full_location(doc, finding, out)
    }

    fn read(
        bytes: Vec<u8>,
        _offset: u64,
        _kind: Kind<NoEnvelope>,
        _stream: &(),
        settings: &Settings,
        keep: bool,
    ) -> Result<Document, Fatal> {
        let kept = keep.then(|| Phi::new(bytes.clone()));
        super::read_with(bytes, &settings.limits, settings.fhir.allow_comments)
            .map_err(|cause| Fatal { cause, bytes: kept })
    }

    fn findings(doc: &Document, _kind: Kind<NoEnvelope>, check: Check, settings: &Settings) -> Vec<Diagnostic> {
        match check {
            Check::Syntax => doc.findings().to_vec(),
            Check::Full => {
                let structures = settings.structures.as_deref();
                // Questionnaires and value sets the document refers to, from the loaded packages.
                let resolve = |canonical: &str| structures.and_then(|c| c.conformance.resolve("", canonical));
                validate::validate_with(
                    doc,
                    validate::Options { strict: settings.strict, core_only: false },
                    &settings.fhir,
                    structures,
                    &resolve,
                )
            }
        }
    }

    fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::resource_json(doc, disclosure, false, out);
    }

    fn summary(doc: &Document, findings: &[Diagnostic], out: &mut Vec<u8>) -> Result<(), Code> {
        let summary = inspect::summarize(doc, findings);
        serde_json::to_writer(out, &summary).map_err(|_| Code::CLI_INTERNAL)
    }

    fn inventory(doc: &Document, findings: &[Diagnostic], codes: bool, out: &mut Vec<u8>) -> Result<(), Code> {
        let inventory = inspect::inventory(doc, findings, codes);
        serde_json::to_writer(out, &inventory).map_err(|_| Code::CLI_INTERNAL)
    }

    fn canonical(doc: &Document, settings: &Settings, disclosure: &Disclosure, out: &mut Vec<u8>) {
        let syntax = match settings.to {
            None => doc.syntax(),
            Some(Syntax::Json) => super::model::Syntax::Json,
            Some(Syntax::Xml) => super::model::Syntax::Xml,
        };
        fmt::canonical_as(doc, syntax, disclosure, settings.ndjson, out);
    }

    fn is_canonical(doc: &Document, canonical: &[u8], settings: &Settings, disclosure: &Disclosure) -> bool {
        fmt::is_canonical(doc, disclosure, settings.ndjson, canonical)
    }

    fn accepts(settings: &Settings) -> bool {
        // An NDJSON record is one line of JSON.
        !(settings.ndjson && settings.to == Some(Syntax::Xml))
    }
}

/// NDJSON, one line at a time.
struct Lines<R> {
    input: R,
    max: u64,
    total: u64,
    line: Zeroizing<Vec<u8>>,
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = std::io::Result<Piece<NoEnvelope>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.line.clear();
            let start = self.total;
            let n = match self.input.read_until(b'\n', &mut self.line) {
                Ok(n) => n,
                Err(e) => return Some(Err(e)),
            };
            if n == 0 {
                return None;
            }
            self.total += n as u64;
            if self.total > self.max {
                // The records before are already out, as for a stream over `max_records`.
                return Some(Ok(Piece::Fail(Code::CLI_INPUT_TOO_LARGE)));
            }
            let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(Piece::Record { kind: Kind::Message, offset: start, bytes: Some(text.to_vec()) }));
        }
    }
}

/// True when the first JSON value is an object with a top-level `"resourceType"` key.
fn is_json_resource(body: &[u8]) -> bool {
    if body.first() != Some(&b'{') {
        return false;
    }
    let mut depth = 0u32;
    let mut i = 0usize;
    let mut expect_key = false;
    while i < body.len() {
        match body[i] {
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return false;
                }
            }
            b',' => expect_key = depth == 1,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < body.len() && body[j] != b'"' {
                    j += if body[j] == b'\\' { 2 } else { 1 };
                }
                if j >= body.len() {
                    return false;
                }
                if expect_key && depth == 1 && &body[start..j] == b"resourceType" {
                    return true;
                }
                expect_key = false;
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    false
}
