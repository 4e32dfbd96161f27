//! The trait a format implements, and the value-free types its methods exchange with the
//! pipeline.
//!
//! A format is a type that implements [`Codec`]: how its inputs are recognised (`sniff`), how a
//! stream of them is cut into records (`split`, with framings such as MLLP handled there), how a
//! record is read into a document whose values are `Phi`, how a document is validated, summed up
//! without values, written as the JSON model and in canonical form, and what it tracks across
//! the records of a stream (batch envelopes). The registry (`formats/mod.rs`) lists the types;
//! the pipeline (`ops`) is generic over the trait and never names a format.
//!
//! Architecture Invariant: a codec knows nothing of `policy`, `convert`, `ops`, `cli` or `mcp`.
//! Redaction and conversion of a format are traits of their own modules, implemented there for
//! the same type.
//!
//! What it does not do: decide exit codes, write to the sink, or redact (see `ops`, `policy`).

use std::io::BufRead;

use crate::diag::{Code, Diagnostic};
use crate::limits::Limits;
use crate::phi::{Disclosure, Phi};

use super::Operation;
use super::file_input::FileInput;

/// The read buffer of an input.
pub const INPUT_BUFFER: usize = 64 * 1024;

/// What a record is in its stream: a message, or an envelope record of the format's batch
/// protocol (`E`: the format's envelope kinds).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind<E> {
    /// A message (a unit of content).
    Message,
    /// An envelope record (batch and file headers and trailers).
    Envelope(E),
}

/// One piece of an input, in input order.
#[derive(Debug)]
pub enum Piece<E> {
    /// A record.
    Record {
        /// Message or envelope.
        kind: Kind<E>,
        /// Byte offset of the record in the input.
        offset: u64,
        /// Its bytes; `None` when it is over `max_input_bytes` and was skipped.
        bytes: Option<Vec<u8>>,
    },
    /// A problem of the framing outside any record: it counts as a failed record.
    Problem {
        /// The problem's code.
        code: Code,
        /// Where it starts.
        offset: u64,
        /// The name written as the failed record's `format` (the framing's, e.g. `mllp`).
        label: &'static str,
    },
    /// A frame opens: the records up to [`Piece::FrameEnd`] are its content.
    FrameStart(Framing),
    /// The input cannot be read further: the operation fails with this code (the records
    /// before are written).
    Fail(Code),
    /// The open frame closes; `clean` is false when its end was malformed (which makes
    /// `fmt --check` negative).
    FrameEnd {
        /// The frame ended as the framing requires.
        clean: bool,
    },
}

/// A framing: bytes around records on the wire, not a format (`--format mllp` names HL7 v2 in
/// MLLP frames).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Framing {
    /// HL7 v2 Minimal Lower Layer Protocol: `0x0B` content `0x1C 0x0D`.
    Mllp,
}

impl Framing {
    /// The bytes `fmt` writes before a frame's content, and after it.
    pub fn wrap(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Framing::Mllp => (&[super::mllp::START], &[super::mllp::END, b'\r']),
        }
    }
}

/// A syntax, for formats with more than one (FHIR JSON and XML).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// JSON.
    Json,
    /// XML.
    Xml,
}

/// Which model `parse` writes. HL7 v2 has two; every other format has one model, written for
/// either value (the argument is accepted and has no effect there).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ModelShape {
    /// Fields as arrays by position (`"fields": [["|"], ["^~\\&"], ...]`): the CLI's default,
    /// for programs.
    #[default]
    Positional,
    /// Fields and components keyed by position and name from the version's tables
    /// (`"5 patient_name"`): the MCP default, for readers (see docs/hl7v2-model.md).
    Named,
}

impl ModelShape {
    /// The name the CLI (`--model`) and MCP (`model`) take.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelShape::Positional => "positional",
            ModelShape::Named => "named",
        }
    }

    /// The shape of a name (exact match).
    pub fn from_name(name: &str) -> Option<ModelShape> {
        [ModelShape::Positional, ModelShape::Named].into_iter().find(|m| m.as_str() == name)
    }
}

/// How much `inspect` says. Every level is value-free. HL7 v2 and FHIR have an inventory; the
/// summaries of the other formats already count their structure (X12 loops, DICOM modules,
/// C-CDA sections and entries, NCPDP segments, ASTM records), so both levels give the summary
/// there (the argument is accepted and has no effect, as `model` for formats with one model).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Type, version, counts by segment or resource type, finding counts.
    #[default]
    Summary,
    /// The summary and an `inventory`: per segment (HL7 v2) or resource type (FHIR), the
    /// fields or elements present with their counts, and the codes of coded fields that are
    /// entries of the standard's own tables or value sets (as those tables spell them; any
    /// other code is counted, never shown).
    Inventory,
    /// The inventory without the codes: what `inventory` gives under a policy that redacts
    /// (the policy decides which codes a caller may see; `inspect` does not apply it, so it
    /// shows none). Not a name the CLI or MCP take.
    Counts,
}

impl Detail {
    /// The name the CLI (`--detail`) and MCP (`detail`) take.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::Summary => "summary",
            Detail::Inventory | Detail::Counts => "inventory",
        }
    }

    /// The level of a name (exact match).
    pub fn from_name(name: &str) -> Option<Detail> {
        [Detail::Summary, Detail::Inventory].into_iter().find(|d| d.as_str() == name)
    }
}

/// The request's settings a codec reads (value-free).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Limits.
    pub limits: Limits,
    /// Warnings become errors.
    pub strict: bool,
    /// The input is NDJSON: one record per line.
    pub ndjson: bool,
    /// `fmt`: the syntax to write; `None` keeps the input's.
    pub to: Option<Syntax>,
    /// A framing the caller declared (`--format mllp`); `None`: the codec detects it.
    pub framing: Option<Framing>,
    /// `parse`: the model to write.
    pub model: ModelShape,
    /// FHIR: the loaded conformance resources and profiles to validate against (`--ig`,
    /// `--profile`); `None`: the core only.
    pub structures: Option<std::sync::Arc<crate::structure::Context>>,
    /// FHIR: the reference validator's optional checks (`--security-checks`, ...); none by
    /// default.
    pub fhir: crate::formats::fhir::checks::Checks,
    /// The command writes the bytes of bulk values back out (`fmt`, `redact`, `convert`,
    /// `ack`). False for `parse`, `validate` and `inspect`, which read structure and write a
    /// bulk value as a value-free descriptor: a codec may then leave bulk values out of its
    /// records (DICOM keeps only their lengths, see `dicom::source`).
    pub bulk_values: bool,
}

#[cfg(test)]
impl Settings {
    /// The settings of a plain request (default limits, the positional model, nothing
    /// declared), for tests; `bulk_values` as a command that writes bulk values back sets it.
    pub(crate) fn plain(bulk_values: bool) -> Settings {
        Settings {
            limits: Limits::default(),
            strict: false,
            ndjson: false,
            to: None,
            framing: None,
            model: ModelShape::Positional,
            structures: None,
            fhir: crate::formats::fhir::checks::Checks::default(),
            bulk_values,
        }
    }
}

/// Which findings a caller wants.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// What reading found (the warnings of `parse` and `fmt`).
    Syntax,
    /// Full validation (`validate`, `inspect`).
    Full,
}

/// A record that could not be read: the fatal diagnostic, and the record's bytes when the
/// codec could give them back (for `fmt` to pass the record through, or for the operator's
/// `--unsafe-show-values` excerpt).
#[derive(Debug)]
pub struct Fatal {
    /// Why (value-free).
    pub cause: Diagnostic,
    /// The record's bytes.
    pub bytes: Option<Phi<Vec<u8>>>,
}

/// Where a finding is in its record, for output: 1-based line and column (0: not known; an HL7
/// v2 finding has the line of its segment and no column). Positions are numbers, not values;
/// they are computed when findings are written ([`Codec::positions`]), not stored in them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// 1-based line (0: none).
    pub line: u32,
    /// 1-based column in characters (0: none).
    pub column: u32,
}

/// An acknowledgment of what was received (`ack --type`), written on the data channel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AckType {
    /// The functional acknowledgment of each group's transaction sets (X12 999).
    Functional,
    /// The interchange acknowledgment (X12 TA1).
    Interchange,
}

/// Writes an acknowledgment as the records of a stream go by, in input order. It holds what
/// the acknowledgment must copy (control numbers, the envelope's addresses) until it is
/// written: values, on the data channel only.
pub trait Acknowledge<C: Codec> {
    /// One record. `doc` is `None` when it could not be read; `findings` are its findings
    /// (with the stream's for an envelope record), or the cause of the failure.
    fn record(
        &mut self,
        kind: Kind<C::Envelope>,
        doc: Option<&C::Document>,
        findings: &[Diagnostic],
        disclosure: &Disclosure,
        out: &mut Vec<u8>,
    );

    /// The end of the input; `end` holds the stream's findings there (an unclosed envelope).
    fn finish(&mut self, end: &[Diagnostic], disclosure: &Disclosure, out: &mut Vec<u8>);
}

/// The pieces of an input (an I/O error ends the operation).
/// Where a record's output goes in parts as it is written (see [`Codec::model_json_spilled`]).
pub type Spill<'a> = &'a mut dyn FnMut(&[u8]);

pub type Pieces<'a, E> = Box<dyn Iterator<Item = std::io::Result<Piece<E>>> + 'a>;

/// A format.
pub trait Codec: 'static {
    /// The stable lower-case name (`--format`, output JSON).
    const NAME: &'static str;
    /// The operations implemented for this format (the support matrix reads it).
    const OPERATIONS: &'static [Operation];
    /// False for binary formats, whose input may start with white space (the pipeline's
    /// empty-input check looks past it only for text).
    const TEXT: bool = true;
    /// What `fmt` writes after a record it passes through unchanged (a failed record of a
    /// stream): the separator the splitter removed, if any.
    const PASS_THROUGH_END: &'static [u8] = b"";

    /// Most findings kept for one record.
    const MAX_FINDINGS: usize = 1000;

    /// The format's envelope record kinds.
    type Envelope: Copy + Send + std::fmt::Debug + 'static;
    /// A record read: values are `Phi`.
    type Document: Send + Sync + 'static;
    /// What is tracked across the records of a stream (envelopes, counts, inherited
    /// delimiters); value-free.
    type Stream: Default;

    /// True when the input looks like this format. `body` is the first bytes after a UTF-8 BOM
    /// and white space; `raw` the first bytes as they are.
    fn sniff(body: &[u8], raw: &[u8]) -> bool;

    /// Cuts an input into pieces. `first` is its first byte after a BOM and white space.
    /// Returns whether the input is known to hold several records (a framed or NDJSON stream)
    /// before any is read.
    fn split<'a>(
        input: Box<dyn BufRead + 'a>,
        first: Option<u8>,
        settings: &Settings,
    ) -> (bool, Pieces<'a, Self::Envelope>);

    /// [`Codec::split`] of a regular file, an input that can skip bytes without reading them.
    /// The default reads it as any stream (through a buffer of [`INPUT_BUFFER`] bytes).
    fn split_file<'a>(input: FileInput, first: Option<u8>, settings: &Settings) -> (bool, Pieces<'a, Self::Envelope>) {
        Self::split(input.into_stream(INPUT_BUFFER), first, settings)
    }

    /// Reads one record. `keep` asks for the bytes back on failure. `stream` is read for what
    /// envelope records inherit.
    fn read(
        bytes: Vec<u8>,
        offset: u64,
        kind: Kind<Self::Envelope>,
        stream: &Self::Stream,
        settings: &Settings,
        keep: bool,
    ) -> Result<Self::Document, Fatal>;

    /// The findings on a record, capped.
    fn findings(doc: &Self::Document, kind: Kind<Self::Envelope>, check: Check, settings: &Settings)
    -> Vec<Diagnostic>;

    /// True when the record was read in part: the input broke before its end and the document
    /// holds what was read completely before the break, its findings the break (a fatal
    /// finding). `parse` and `inspect` then write what was read and end with a negative result
    /// (exit 1), as `validate` does. The default: never (a format that cannot read a record
    /// whole refuses it).
    fn partial(_doc: &Self::Document) -> bool {
        false
    }

    /// Writes the JSON model of a record (data channel).
    fn model_json(doc: &Self::Document, disclosure: &Disclosure, out: &mut Vec<u8>);

    /// [`Codec::model_json`] of a large record, handed on in parts as it is written: `spill`
    /// takes the bytes in `out` from time to time (at points where nothing written will be
    /// taken back), after which `out` is emptied and wiped. The bytes are those of
    /// `model_json`. The default writes the model whole.
    fn model_json_spilled(doc: &Self::Document, disclosure: &Disclosure, out: &mut Vec<u8>, spill: Spill<'_>) {
        let _ = spill;
        Self::model_json(doc, disclosure, out);
    }

    /// Writes the named model of a record (data channel): keyed by the names of the format's
    /// definitions. A format with one model (all but HL7 v2) writes that model.
    fn named_model_json(doc: &Self::Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        Self::model_json(doc, disclosure, out);
    }

    /// Writes the value-free summary of a record (a JSON object).
    fn summary(doc: &Self::Document, findings: &[Diagnostic], out: &mut Vec<u8>) -> Result<(), Code>;

    /// Writes the value-free inventory of a record ([`Detail::Inventory`]): the summary with
    /// an `inventory` object, with the table codes when `codes`. By default the summary alone
    /// (see [`Detail`]).
    fn inventory(doc: &Self::Document, findings: &[Diagnostic], codes: bool, out: &mut Vec<u8>) -> Result<(), Code> {
        let _ = codes;
        Self::summary(doc, findings, out)
    }

    /// Writes the canonical form of a record (data channel).
    fn canonical(doc: &Self::Document, settings: &Settings, disclosure: &Disclosure, out: &mut Vec<u8>);

    /// True when `canonical` (what [`Codec::canonical`] wrote) is the record as it came.
    fn is_canonical(doc: &Self::Document, canonical: &[u8], settings: &Settings, disclosure: &Disclosure) -> bool;

    /// A message record was seen (whether or not it could be read).
    fn on_message(_stream: &mut Self::Stream) {}

    /// An envelope record was seen (`doc`: `None` when it could not be read); returns its
    /// findings from the stream's point of view (counts, placement).
    fn on_envelope(
        _stream: &mut Self::Stream,
        _kind: Self::Envelope,
        _doc: Option<&Self::Document>,
    ) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// True when the settings make sense for this format (`--to`, `--ndjson`); otherwise the
    /// operation is `CLI_FORMAT_UNSUPPORTED`.
    fn accepts(settings: &Settings) -> bool {
        settings.to.is_none()
    }

    /// The findings of the end of the stream (an unclosed batch).
    fn finish(_stream: &mut Self::Stream) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// The positions of `findings` in the record (one per finding, in order; empty when the
    /// format places none), computed from the record when its findings are written. The
    /// default places none.
    fn positions(_doc: &Self::Document, _findings: &[Diagnostic]) -> Vec<Position> {
        Vec::new()
    }

    /// The writer of an acknowledgment of this type, when the format has one (and declares
    /// [`Operation::Ack`]). The default: none.
    fn acknowledger(_ack: AckType) -> Option<Box<dyn Acknowledge<Self>>>
    where
        Self: Sized,
    {
        None
    }

    /// Writes the whole location of `finding` (its text, unescaped) when the diagnostic's own
    /// is shortened (a FHIR path deeper than a diagnostic holds) and returns true; false, and
    /// nothing written, when the diagnostic's own location is whole. The default: always whole.
    fn full_location(_doc: &Self::Document, _finding: &Diagnostic, _out: &mut Vec<u8>) -> bool {
        false
    }
}
