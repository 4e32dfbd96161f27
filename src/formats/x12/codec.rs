//! X12 as a registered format: [`X12`] implements the [`Codec`] trait over the modules of this
//! folder, and [`Stream`] tracks the envelope across records: IEA01 (groups), GE01 (sets),
//! IEA02 = ISA13, GE02 = GS06, and headers without trailers.
//!
//! What it does not do: anything of its own; it maps the trait onto `split`, `read`,
//! `validate` and `write`.

use std::io::BufRead;

use super::read::{self, Document, Inherited, RecordKind};
use super::split::{Envelope, Splitter};
use super::{validate, write};
use crate::diag::{Code, Diagnostic, Location, X12Position, X12Scope};
use crate::formats::Operation;
use crate::formats::codec::{AckType, Acknowledge, Check, Codec, Fatal, Kind, Pieces, Settings};
use crate::phi::Disclosure;

/// ASC X12 interchanges.
#[derive(Debug)]
pub struct X12;

/// What X12 tracks across the records of a stream (value-free: control numbers are kept as
/// digests).
#[derive(Debug, Default)]
pub struct Stream {
    inherited: Inherited,
    isa_open: bool,
    isa13: Option<u64>,
    groups: u32,
    gs_open: bool,
    gs06: Option<u64>,
    sets: u32,
}

/// A digest of a control number (compared, never shown).
fn digest(v: &[u8]) -> u64 {
    // FNV-1a.
    v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A number of up to nine digits.
fn count(v: &[u8]) -> Option<u32> {
    if v.is_empty() || v.len() > 9 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u32, |n, &d| n.checked_mul(10)?.checked_add(u32::from(d - b'0')))
}

fn at(scope: X12Scope, id: &'static str, element: u8) -> Diagnostic {
    Diagnostic::new(Code::X12_TRAILER_MISSING, Location::X12(X12Position::envelope(scope, id).element(element, 0)))
}

fn finding(code: Code, scope: X12Scope, id: &'static str, element: u8) -> Diagnostic {
    Diagnostic::new(code, Location::X12(X12Position::envelope(scope, id).element(element, 0)))
}

/// Two elements of the record's own first segment, as a digest and a count.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn control(doc: &Document, element: usize) -> (Option<u64>, Option<u32>) {
    let Some(s) = doc.own_segs().first() else { return (None, None) };
    let v = doc.element(s, element).raw();
    ((!v.is_empty()).then(|| digest(v)), count(v))
}

impl Stream {
    fn close_group(&mut self, out: &mut Vec<Diagnostic>) {
        if self.gs_open {
            out.push(at(X12Scope::Group(self.groups), "GE", 0));
            self.gs_open = false;
        }
    }

    fn close_interchange(&mut self, out: &mut Vec<Diagnostic>) {
        self.close_group(out);
        if self.isa_open {
            out.push(at(X12Scope::Interchange, "IEA", 0));
            self.isa_open = false;
        }
    }
}

impl Codec for X12 {
    const NAME: &'static str = "x12";
    const OPERATIONS: &'static [Operation] =
        &[Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt, Operation::Redact, Operation::Ack];
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = Envelope;
    type Document = Document;
    type Stream = Stream;

    /// `ISA`, a separator, and the separators at the ISA's fixed positions (as far as the bytes
    /// go), or 16 separators before a terminator.
    fn sniff(body: &[u8], _raw: &[u8]) -> bool {
        if !body.starts_with(b"ISA") {
            return false;
        }
        let Some(&e) = body.get(3) else { return false };
        if !read::is_separator(e) || matches!(e, b'\r' | b'\n' | b'\t') {
            return false;
        }
        let fixed = read::ISA_SEPARATORS.iter().take_while(|&&p| p < body.len()).all(|&p| body[p] == e);
        fixed || read::isa(body).is_some()
    }

    fn split<'a>(
        input: Box<dyn BufRead + 'a>,
        _first: Option<u8>,
        settings: &Settings,
    ) -> (bool, Pieces<'a, Envelope>) {
        (false, Box::new(Splitter::new(input, settings.limits)))
    }

    fn read(
        bytes: Vec<u8>,
        offset: u64,
        kind: Kind<Envelope>,
        stream: &Stream,
        settings: &Settings,
        _keep: bool,
    ) -> Result<Document, Fatal> {
        let kind = match kind {
            Kind::Message => RecordKind::Set,
            Kind::Envelope(e) => e.record_kind(),
        };
        let inherited = Inherited { group: stream.groups, set: stream.sets, ..stream.inherited };
        read::read(bytes, offset, kind, inherited, &settings.limits)
            .map_err(|(cause, bytes)| Fatal { cause, bytes: Some(bytes) })
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
        stream.sets = stream.sets.saturating_add(1);
    }

    fn on_envelope(stream: &mut Stream, kind: Envelope, doc: Option<&Document>) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        match kind {
            Envelope::Isa => {
                stream.close_interchange(&mut out);
                stream.isa_open = true;
                stream.groups = 0;
                stream.sets = 0;
                stream.isa13 = doc.and_then(|d| control(d, 13).0);
                if let Some(d) = doc {
                    stream.inherited =
                        Inherited { delimiters: Some(d.delimiters), fixed: d.isa_fixed, group: 0, set: 0 };
                }
            }
            Envelope::Gs => {
                stream.close_group(&mut out);
                stream.groups = stream.groups.saturating_add(1);
                stream.gs_open = true;
                stream.sets = 0;
                stream.gs06 = doc.and_then(|d| control(d, 6).0);
            }
            Envelope::Ge => {
                let scope = X12Scope::Group(stream.groups);
                if !stream.gs_open {
                    out.push(finding(Code::X12_HEADER_MISSING, scope, "GE", 0));
                } else if let Some(d) = doc {
                    let n = control(d, 1).1;
                    if n.is_some_and(|n| n != stream.sets) {
                        out.push(finding(Code::X12_COUNT_MISMATCH, scope, "GE", 1));
                    }
                    let c = control(d, 2).0;
                    if c.is_some() && stream.gs06.is_some() && c != stream.gs06 {
                        out.push(finding(Code::X12_CONTROL_NUMBER_MISMATCH, scope, "GE", 2));
                    }
                }
                stream.gs_open = false;
            }
            Envelope::Iea => {
                stream.close_group(&mut out);
                let scope = X12Scope::Interchange;
                if !stream.isa_open {
                    out.push(finding(Code::X12_HEADER_MISSING, scope, "IEA", 0));
                } else if let Some(d) = doc {
                    let n = control(d, 1).1;
                    if n.is_some_and(|n| n != stream.groups) {
                        out.push(finding(Code::X12_COUNT_MISMATCH, scope, "IEA", 1));
                    }
                    let c = control(d, 2).0;
                    if c.is_some() && stream.isa13.is_some() && c != stream.isa13 {
                        out.push(finding(Code::X12_CONTROL_NUMBER_MISMATCH, scope, "IEA", 2));
                    }
                }
                stream.isa_open = false;
            }
            Envelope::Ta1 => {}
        }
        out
    }

    fn acknowledger(ack: AckType) -> Option<Box<dyn Acknowledge<X12>>> {
        Some(super::ack::acknowledger(ack))
    }

    fn finish(stream: &mut Stream) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        stream.close_interchange(&mut out);
        out
    }
}
