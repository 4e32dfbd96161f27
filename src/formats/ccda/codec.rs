//! C-CDA as a registered format: [`Ccda`] implements the [`Codec`] trait over the modules of
//! this folder. A document is one record (the whole input).
//!
//! What it does not do: anything of its own; it maps the trait onto `read`, `validate` and
//! `write`.

use std::io::{BufRead, Read};

use super::read::{self, Document};
use super::{validate, write};
use crate::diag::{Code, Diagnostic, Location};
use crate::formats::Operation;
use crate::formats::codec::{Check, Codec, Fatal, Kind, Piece, Pieces, Position, Settings};
use crate::formats::sniff::xml_root;
use crate::phi::Disclosure;

/// C-CDA documents (CDA R2.0, `ClinicalDocument` in `urn:hl7-org:v3`).
#[derive(Debug)]
pub struct Ccda;

/// The signature: a `ClinicalDocument` root (its namespace is checked by the reader, and a
/// `ClinicalDocument` in the FHIR namespace matches FHIR too: ambiguous), or a fragment's root:
/// an element name of the CDA classes (`section`, `component`, `observation`...) in the CDA
/// namespace or in none (HL7 publishes its examples' fragments without declarations).
pub fn is_ccda(body: &[u8], _raw: &[u8]) -> bool {
    xml_root(body).is_some_and(|r| {
        r.local == b"ClinicalDocument"
            || (r.namespace.is_none_or(|ns| ns == read::V3_NS) && validate::root_class(r.local).is_some())
    })
}

impl Codec for Ccda {
    const NAME: &'static str = "ccda";
    const OPERATIONS: &'static [Operation] =
        &[Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt, Operation::Redact];
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = ();
    type Document = Document;
    type Stream = ();

    fn sniff(body: &[u8], raw: &[u8]) -> bool {
        is_ccda(body, raw)
    }

    fn split<'a>(input: Box<dyn BufRead + 'a>, _first: Option<u8>, settings: &Settings) -> (bool, Pieces<'a, ()>) {
        let limit = settings.limits.max_input_bytes;
        let mut input = input;
        let mut once = false;
        let it = std::iter::from_fn(move || {
            if std::mem::replace(&mut once, true) {
                return None;
            }
            let mut bytes = Vec::new();
            let read = (&mut input).take(limit.saturating_add(1)).read_to_end(&mut bytes);
            Some(read.map(|_| {
                if bytes.len() as u64 > limit {
                    crate::phi::wipe(&mut bytes);
                    Piece::Record { kind: Kind::Message, offset: 0, bytes: None }
                } else {
                    Piece::Record { kind: Kind::Message, offset: 0, bytes: Some(bytes) }
                }
            }))
        });
        (false, Box::new(it))
    }

    fn read(
        bytes: Vec<u8>,
        _offset: u64,
        _kind: Kind<()>,
        _stream: &(),
        settings: &Settings,
        _keep: bool,
    ) -> Result<Document, Fatal> {
        read::read(bytes, &settings.limits).map_err(|e| {
            let (cause, bytes) = *e;
            Fatal { cause, bytes: Some(bytes) }
        })
    }

    fn findings(doc: &Document, _kind: Kind<()>, check: Check, settings: &Settings) -> Vec<Diagnostic> {
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

    fn positions(doc: &Document, findings: &[Diagnostic]) -> Vec<Position> {
        #[expect(
            clippy::disallowed_methods,
            reason = "line and column of an element: numbers computed from the record's bytes"
        )]
        let raw = doc.input().raw();
        if findings.is_empty() {
            return Vec::new();
        }
        let lines = crate::formats::lines::Lines::new(raw);
        findings
            .iter()
            .map(|f| match f.location {
                Location::Ccda(p) if p.node != u32::MAX => {
                    let offset = doc.tree().elements().get(p.node as usize).map_or(0, |e| e.offset);
                    lines.position(raw, u64::from(offset))
                }
                _ => Position::default(),
            })
            .collect()
    }

    fn full_location(doc: &Document, finding: &Diagnostic, out: &mut Vec<u8>) -> bool {
        let Location::Ccda(p) = finding.location else { return false };
        if p.node == u32::MAX || !p.shortened() {
            return false;
        }
        let mut s = String::new();
        doc.write_path(p.node, &mut s);
        if p.child
            && let Some((name, index)) = p.last()
        {
            s.push('/');
            let _ = crate::diag::CcdaPosition::write_step(&mut s, name, index);
        }
        let _ = p.write_tail(&mut s);
        out.extend_from_slice(s.as_bytes());
        true
    }
}
