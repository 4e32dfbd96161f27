//! DICOM as a registered format: [`Dicom`] implements the [`Codec`] trait over the modules of
//! this folder. An input is one record (one Part 10 file).
//!
//! What it does not do: anything of its own; it maps the trait onto `source`, `read`,
//! `validate` and `write`.

use std::io::BufRead;

use super::read::{self, Document};
use super::{source, validate, write};
use crate::diag::{Code, Diagnostic};
use crate::formats::Operation;
use crate::formats::codec::{Check, Codec, Fatal, Kind, Piece, Pieces, Settings};
use crate::formats::file_input::FileInput;
use crate::phi::Disclosure;

/// DICOM Part 10 files.
#[derive(Debug)]
pub struct Dicom;

/// A DICOM input has no envelope records.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Envelope {}

/// True when the bytes start like a DICOM dataset without a preamble: a group 0002 or 0008
/// tag (little endian) followed by an explicit VR, or by an implicit length under 1024; or a
/// group 0008 tag in big endian followed by an explicit VR (explicit VR big endian, retired).
fn bare_dataset(raw: &[u8]) -> bool {
    let [g0, g1, _, _, a, b, ..] = *raw else { return false };
    if (g0, g1) == (0x00, 0x08) {
        return super::dict::Vr::from_bytes([a, b]).is_some();
    }
    if !matches!((g0, g1), (0x02, 0x00) | (0x08, 0x00)) {
        return false;
    }
    if super::dict::Vr::from_bytes([a, b]).is_some() {
        return true;
    }
    raw.get(4..8).is_some_and(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) < 1024)
}

impl Codec for Dicom {
    const NAME: &'static str = "dicom";
    const OPERATIONS: &'static [Operation] =
        &[Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt, Operation::Redact];
    const TEXT: bool = false;
    const MAX_FINDINGS: usize = validate::MAX_FINDINGS;

    type Envelope = Envelope;
    type Document = Document;
    type Stream = ();

    /// `DICM` at offset 128 (after the preamble), or a dataset without preamble that starts
    /// with a group 0002 or 0008 element.
    fn sniff(_body: &[u8], raw: &[u8]) -> bool {
        raw.get(128..132) == Some(b"DICM") || bare_dataset(raw)
    }

    fn split<'a>(
        input: Box<dyn BufRead + 'a>,
        _first: Option<u8>,
        settings: &Settings,
    ) -> (bool, Pieces<'a, Envelope>) {
        let bytes = source::split(input, &settings.limits, settings.bulk_values);
        let piece = Piece::Record { kind: Kind::Message, offset: 0, bytes };
        (false, Box::new(std::iter::once(Ok(piece))))
    }

    /// The bulk values the record leaves out are sought past, not read.
    fn split_file<'a>(input: FileInput, _first: Option<u8>, settings: &Settings) -> (bool, Pieces<'a, Envelope>) {
        let bytes = source::split_file(input, &settings.limits, settings.bulk_values);
        let piece = Piece::Record { kind: Kind::Message, offset: 0, bytes };
        (false, Box::new(std::iter::once(Ok(piece))))
    }

    fn read(
        bytes: Vec<u8>,
        _offset: u64,
        _kind: Kind<Envelope>,
        _stream: &(),
        settings: &Settings,
        _keep: bool,
    ) -> Result<Document, Fatal> {
        // The commands that write the record's bytes back (`fmt`, `redact`: `bulk_values`)
        // refuse a file broken mid-way (a part is not written as if it were whole); `parse`,
        // `validate` and `inspect` read the elements before the break and report it.
        read::read_partial(bytes, &settings.limits, !settings.bulk_values)
    }

    fn findings(doc: &Document, _kind: Kind<Envelope>, check: Check, settings: &Settings) -> Vec<Diagnostic> {
        validate::validate(doc, validate::Options { syntax_only: check == Check::Syntax, strict: settings.strict })
    }

    fn partial(doc: &Document) -> bool {
        doc.broken().is_some()
    }

    fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::model_json(doc, disclosure, out);
    }

    fn summary(doc: &Document, findings: &[Diagnostic], out: &mut Vec<u8>) -> Result<(), Code> {
        serde_json::to_writer(out, &write::summarize(doc, findings)).map_err(|_| Code::CLI_INTERNAL)
    }

    /// Part 10 with a zero preamble, the meta group length computed, every sequence and item
    /// of undefined length; nothing when a bulk value was left out of the record.
    fn canonical(doc: &Document, _settings: &Settings, disclosure: &Disclosure, out: &mut Vec<u8>) {
        write::part10(doc, disclosure, &|_, _| write::Keep::As, &[], out);
    }

    fn is_canonical(doc: &Document, canonical: &[u8], _settings: &Settings, disclosure: &Disclosure) -> bool {
        // The record holds the input from the meta on; the canonical form is the same bytes
        // when the input was canonical (compared without the preamble, which is not kept). A
        // deflated dataset is compared inflated (the record holds it inflated): the input is
        // canonical when its dataset is, whichever encoder deflated it.
        if canonical.is_empty() || !doc.preamble {
            return false;
        }
        if doc.lexed.syntax.is_some_and(|t| t.deflated) {
            let mut plain = Vec::new();
            let same = write::part10_inflated(doc, disclosure, &mut plain)
                && doc.same_as_record(plain.get(132..).unwrap_or_default());
            crate::phi::wipe(&mut plain);
            return same;
        }
        doc.same_as_record(canonical.get(132..).unwrap_or_default())
    }
}
