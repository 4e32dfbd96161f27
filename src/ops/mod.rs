//! The single orchestrator: one request in, one [`Outcome`] out, data through a [`Sink`].
//!
//! The CLI and the MCP server both call [`run`]. The exit code and status are computed here,
//! once, so the two front doors cannot disagree. `ops` is also the only place that grants a
//! [`Disclosure`]: for the operations whose purpose is to return data, and for the operator's
//! `--unsafe-show-values` door.
//!
//! - [`request`]: the request, outcome, item and sink types;
//! - [`run`] (here): open the input, detect its format, check the request against the support
//!   matrix, and dispatch to the format's pipeline: the one `match` on [`Format`], generated
//!   from the registry;
//! - `runner`: the one record path, generic over the format; `par`: records on all cores;
//!   `json`: the value-free JSON envelopes and the findings writer.
//!
//! What it does not do: write to stdout or stderr (the sink and the CLI's output module do), or
//! parse command lines.

use std::io::{self, BufReader, Read};

mod fhir_paths;
mod json;
mod par;
mod request;
mod runner;
pub mod shape;

pub use crate::formats::codec::{AckType, Syntax};
pub use json::{failure_fingerprint, failure_kind, findings_json};
pub use request::{Command, Item, Outcome, Records, Request, Sink, Source, Status};

use crate::detect;
use crate::diag::{Code, Diagnostic};
use crate::error::Error;
use crate::formats::Format;
use crate::phi::{Disclosure, Phi};

use crate::formats::codec::INPUT_BUFFER;
use crate::formats::file_input::FileInput;

/// Runs a request.
#[expect(
    clippy::disallowed_methods,
    reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
)]
pub fn run(mut request: Request, sink: &mut dyn Sink) -> Outcome {
    // Under a policy that redacts, the inventory shows no code: which codes a caller may see is
    // the policy's to say, and `inspect` does not apply it.
    if request.command == (Command::Inspect { detail: crate::formats::codec::Detail::Inventory })
        && request.policy.as_ref().is_some_and(|p| p.disclosure == crate::policy::Disclosure::Redacted)
    {
        request.command = Command::Inspect { detail: crate::formats::codec::Detail::Counts };
    }
    // Only the commands that return data are granted a disclosure: `validate` and `inspect`
    // run without one (`validate_and_inspect_are_never_granted`).
    let disclosure = request.command.discloses().then(Disclosure::grant);
    let show = request.unsafe_show_values;
    let result = (|| -> Result<Outcome, Failure> {
        let mut reader = open(&request.source)?;
        // In-memory input (an MCP call, a record of a json-lines stream) is often far smaller
        // than the detection prefix: the prefix buffer is not zeroed past its length.
        let prefix_len = match &request.source {
            Source::Bytes(b) => b.span().raw().len().min(detect::PREFIX_LEN),
            _ => detect::PREFIX_LEN,
        };
        let prefix = match &mut reader {
            // A regular file: its first bytes, and the rest of the prefix only when they do not
            // decide the detection (see `detect::decided`); the codec reads on from the file.
            Opened::File(file, _) => {
                let mut first = fill_prefix(file, prefix_len.min(detect::FIRST_LEN))?;
                if first.len() < detect::FIRST_LEN || detect::decided(&first) {
                    first
                } else {
                    // Sized once (no copy left behind by a growing buffer), the first bytes
                    // moved in and wiped.
                    let mut prefix = vec![0u8; prefix_len];
                    prefix[..first.len()].copy_from_slice(&first);
                    crate::phi::wipe(&mut first);
                    fill_from(file, &mut prefix, detect::FIRST_LEN)?;
                    prefix
                }
            }
            Opened::Stream(r) => fill_prefix(r, prefix_len)?,
        };
        if prefix.is_empty() {
            return Err(Failure::code(Code::CLI_EMPTY_INPUT));
        }
        let format = match request.format {
            Some(f) => f,
            // JSON5 comments before a FHIR resource (`--allow-comments`).
            None if request.fhir.allow_comments => {
                detect::detect(crate::formats::fhir::checks::skip_leading_comments(&prefix))
                    .map_err(|code| Failure { excerpt: excerpt_of(show, &prefix, 0), ..Failure::code(code) })?
            }
            None => detect::detect(&prefix)
                .map_err(|code| Failure { excerpt: excerpt_of(show, &prefix, 0), ..Failure::code(code) })?,
        };
        let first = detect::skip_bom_and_space(&prefix).first().copied();
        if first.is_none() && format.is_text() {
            return Err(Failure::code(Code::CLI_EMPTY_INPUT));
        }
        if request.command == Command::Redact && request.policy.is_none() {
            return Err(Failure::code(Code::CLI_USAGE));
        }
        if let Some(p) = request.redaction() {
            p.check_key(request.key.is_some()).map_err(|e| Failure::code(e.code))?;
        }
        if !format.supports(request.command.operation()) {
            return Err(Failure::unsupported(format));
        }
        // Fail closed: a format without a redaction engine returns no data under a redacting
        // policy.
        if request.redaction().is_some() && !format.supports(crate::formats::Operation::Redact) {
            return Err(Failure::unsupported(format));
        }
        let whole = batchable_source(&request.source);
        // A buffer no larger than an in-memory input (a record of a json-lines stream is a few
        // hundred bytes): each read returns the same bytes as with the full buffer, without a
        // 64 KiB allocation per record.
        let capacity = match &request.source {
            Source::Bytes(b) => b.span().raw().len().clamp(1, INPUT_BUFFER),
            _ => INPUT_BUFFER,
        };
        let input = match reader {
            Opened::File(file, len) => runner::Input::File(FileInput::new(prefix, file, len)),
            Opened::Stream(r) => {
                runner::Input::Stream(Box::new(BufReader::with_capacity(capacity, io::Cursor::new(prefix).chain(r))))
            }
        };
        dispatch(format, &request, sink, disclosure.as_ref(), input, first, whole)
    })();
    match result {
        Ok(outcome) => outcome,
        Err(f) => {
            let mut o = Outcome::failed(f.code);
            o.cause = f.cause;
            o.excerpt = f.excerpt.map(|e| (e, Disclosure::grant()));
            o.detected = f.detected;
            o
        }
    }
}

/// Generates [`dispatch`] from the registry: the one `match` on [`Format`] of the crate.
macro_rules! define_dispatch {
    (
        codecs { $($codec:ident: $ty:path,)* }
        planned { $($planned:ident: $pname:literal, text = $text:literal, $psniff:path;)* }
    ) => {
        /// Runs the request through the pipeline of `format`'s codec.
        fn dispatch(
            format: Format,
            request: &Request,
            sink: &mut dyn Sink,
            disclosure: Option<&Disclosure>,
            input: runner::Input<'_>,
            first: Option<u8>,
            whole: bool,
        ) -> Result<Outcome, Failure> {
            match format {
                $(Format::$codec => {
                    if !<$ty as crate::formats::Codec>::accepts(&runner::settings(request)) {
                        return Err(Failure::unsupported(format));
                    }
                    runner::run::<$ty>(request, sink, disclosure, input, first, whole)
                })*
                $(Format::$planned => Err(Failure::unsupported(format)),)*
            }
        }

        /// Every registered codec declares exactly the operations it implements: a declared
        /// `convert` has a converter, an undeclared one has none; the same for `redact`.
        #[cfg(test)]
        #[test]
        fn declared_operations_are_implemented() {
            use crate::formats::Operation;
            $(
                let ops = <$ty as crate::formats::Codec>::OPERATIONS;
                assert_eq!(
                    ops.contains(&Operation::Convert),
                    <$ty as crate::convert::Converts>::CONVERTS,
                    "{}: convert declared and implemented differ",
                    <$ty as crate::formats::Codec>::NAME,
                );
                assert_eq!(
                    ops.contains(&Operation::Redact),
                    <$ty as crate::policy::Redacts>::REDACTS,
                    "{}: redact declared and implemented differ",
                    <$ty as crate::formats::Codec>::NAME,
                );
                assert_eq!(
                    ops.contains(&Operation::Ack),
                    <$ty as crate::formats::Codec>::acknowledger(crate::formats::codec::AckType::Functional).is_some(),
                    "{}: ack declared and implemented differ",
                    <$ty as crate::formats::Codec>::NAME,
                );
                for op in [Operation::Parse, Operation::Validate, Operation::Inspect, Operation::Fmt] {
                    // The codec's required methods implement these four; a codec that leaves one
                    // out must say so by not declaring it, and then nothing may call it.
                    assert!(ops.contains(&op), "{}: {} not declared", <$ty as crate::formats::Codec>::NAME, op.as_str());
                }
            )*
            $( assert!(Format::$planned.operations().is_empty(), "{} is planned", $pname); )*
        }
    };
}
crate::formats::with_registry!(define_dispatch);

/// A failure before or instead of data.
#[derive(Debug)]
struct Failure {
    code: Code,
    cause: Option<Diagnostic>,
    excerpt: Option<Phi<Vec<u8>>>,
    /// The format read or named, when the failure is that the operation does not take it.
    detected: Option<Format>,
}

impl Failure {
    fn code(code: Code) -> Failure {
        Failure { code, cause: None, excerpt: None, detected: None }
    }

    /// `CLI_FORMAT_UNSUPPORTED` for an input of `format`.
    fn unsupported(format: Format) -> Failure {
        Failure { detected: Some(format), ..Failure::code(Code::CLI_FORMAT_UNSUPPORTED) }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::code(e.code())
    }
}

/// Up to 200 bytes around `offset`, when the operator asked for them.
fn excerpt_of(show: bool, bytes: &[u8], offset: usize) -> Option<Phi<Vec<u8>>> {
    if !show {
        return None;
    }
    let start = offset.saturating_sub(100).min(bytes.len());
    let end = (start + 200).min(bytes.len());
    Some(Phi::new(bytes[start..end].to_vec()))
}

#[expect(
    clippy::disallowed_methods,
    reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
)]
fn open(source: &Source) -> Result<Opened<'_>, Failure> {
    match source {
        Source::Path(p) => {
            let file = std::fs::File::open(p).map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
            match file.metadata() {
                Ok(m) if m.is_dir() => Err(Failure::code(Code::CLI_NO_INPUT)),
                Ok(m) if m.is_file() => Ok(Opened::File(file, m.len())),
                Ok(_) => Ok(Opened::Stream(Box::new(file))),
                Err(e) => Err(Failure::from(crate::error::from_read_io(&e))),
            }
        }
        Source::Stdin => Ok(Opened::Stream(Box::new(io::stdin().lock()))),
        Source::Bytes(b) => Ok(Opened::Stream(Box::new(b.span().raw()))),
    }
}

/// An input opened: a regular file (and its length), which a codec may skip through by
/// seeking, or any other stream.
enum Opened<'s> {
    File(std::fs::File, u64),
    Stream(Box<dyn Read + 's>),
}

/// Reads up to [`detect::PREFIX_LEN`] bytes (less at end of input).
fn fill_prefix(reader: &mut dyn Read, len: usize) -> Result<Vec<u8>, Failure> {
    let mut prefix = vec![0u8; len];
    fill_from(reader, &mut prefix, 0)?;
    Ok(prefix)
}

/// Reads into `prefix` from `filled` to its length, and cuts it to what was read (less at end
/// of input).
fn fill_from(reader: &mut dyn Read, prefix: &mut Vec<u8>, mut filled: usize) -> Result<(), Failure> {
    while filled < prefix.len() {
        match reader.read(&mut prefix[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Failure::from(crate::error::from_read_io(&e))),
        }
    }
    prefix.truncate(filled);
    Ok(())
}

/// True when the input is read whole, not a live stream: a file, bytes in memory, or standard
/// input redirected from a regular file. Only such inputs are processed in batches on several
/// threads; a pipe or a terminal gets each record's output as the record arrives.
fn batchable_source(source: &Source) -> bool {
    match source {
        Source::Path(_) | Source::Bytes(_) => true,
        Source::Stdin => stdin_is_file(),
    }
}

#[cfg(unix)]
fn stdin_is_file() -> bool {
    use std::os::fd::AsFd;
    let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else { return false };
    std::fs::File::from(fd).metadata().is_ok_and(|m| m.is_file())
}

#[cfg(not(unix))]
fn stdin_is_file() -> bool {
    false
}

/// Lends a worker thread the disclosure of the operation it works for.
#[expect(
    clippy::disallowed_methods,
    reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
)]
fn grant_worker() -> Disclosure {
    Disclosure::grant()
}

/// Enforcement for FHIR JSON that phiward produces itself (the hook for `convert`'s Bundle):
/// under a policy whose disclosure is `redacted` the JSON is redacted by the FHIR rules (ids,
/// fullUrls and references rewritten consistently); otherwise it is returned as is. On failure
/// nothing may be released (the caller fails the record with the code).
pub fn enforce_fhir_json(request: &Request, json: Vec<u8>, disclosure: &Disclosure) -> Result<Vec<u8>, Code> {
    match request.redaction() {
        None => Ok(json),
        Some(p) => {
            crate::policy::fhir::redact_fhir_json(p, request.key.as_deref(), json, &request.limits, disclosure, true)
        }
    }
}

/// `map-codes --scan`: every coding of the message in `path` (see
/// [`crate::terminology::scan::codings`]), under this operation's disclosure.
pub fn scan_codings(
    path: &std::path::Path,
    limits: &crate::limits::Limits,
) -> Result<Vec<crate::terminology::conceptmap::Coding>, Code> {
    let max = usize::try_from(limits.max_input_bytes).unwrap_or(usize::MAX);
    let bytes = crate::terminology::import::read_bounded_bytes(path, max)?;
    scan_codings_in(bytes, limits)
}

/// [`scan_codings`] of a message in memory (the MCP `map_codes` tool's `content`).
#[expect(
    clippy::disallowed_methods,
    reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
)]
pub fn scan_codings_in(
    bytes: Vec<u8>,
    limits: &crate::limits::Limits,
) -> Result<Vec<crate::terminology::conceptmap::Coding>, Code> {
    crate::terminology::scan::codings(bytes, limits, &Disclosure::grant())
}

/// A conformance resource of a package or a supporting file as FHIR JSON: a JSON file is
/// returned as it is, an XML one is read by the FHIR reader and written as JSON. Definitions
/// (StructureDefinition, ValueSet, Questionnaire...) are not patient data, but they pass
/// through the same reader as messages: the writer needs the disclosure only ops grants. A file
/// that is neither, or that the reader refuses, gives the reader's code (no text of it).
#[expect(
    clippy::disallowed_methods,
    reason = "ops: a package's XML definitions are written as JSON for the conformance store, never to output"
)]
pub fn conformance_json(bytes: Vec<u8>, limits: &crate::limits::Limits) -> Result<Vec<u8>, Code> {
    if !crate::structure::package::looks_like_xml(&bytes) {
        return Ok(bytes);
    }
    let doc = crate::formats::fhir::read(bytes, limits).map_err(|d| d.code)?;
    let mut out = Vec::new();
    crate::formats::fhir::fmt::canonical_as(
        &doc,
        crate::formats::fhir::Syntax::Json,
        &Disclosure::grant(),
        false,
        &mut out,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_xml_definition_becomes_json_and_json_stays_as_it_is() {
        let limits = crate::limits::Limits::default();
        let xml = br#"<StructureDefinition xmlns="http://hl7.org/fhir"><url value="http://example.org/sd"/><status value="draft"/></StructureDefinition>"#;
        let json = super::conformance_json(xml.to_vec(), &limits).expect("test input");
        let v: serde_json::Value = serde_json::from_slice(&json).expect("test input");
        assert_eq!(v["resourceType"], "StructureDefinition");
        assert_eq!(v["url"], "http://example.org/sd");
        let same = br#"{"resourceType":"ValueSet"}"#;
        assert_eq!(super::conformance_json(same.to_vec(), &limits).expect("test input"), same);
        assert!(super::conformance_json(b"<not-fhir/>".to_vec(), &limits).is_err());
    }

    /// `validate` and `inspect` are never granted a disclosure, whatever the input (single
    /// messages, MLLP streams and batches processed on several threads, FHIR JSON, XML and
    /// NDJSON), and under a policy whose disclosure is `redacted` too; `parse` is (the control
    /// that shows the count works).
    #[test]
    fn validate_and_inspect_are_never_granted() {
        use super::{Command, Item, Request, Sink, Source};
        struct Null;
        impl Sink for Null {
            fn item(&mut self, _item: Item<'_>) -> std::io::Result<()> {
                Ok(())
            }
        }
        let policy = std::sync::Arc::new(crate::policy::load(crate::policy::AGENT.as_bytes()).expect("agent policy"));
        let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"));
        let mut files = Vec::new();
        for dir in ["hl7v2/valid", "hl7v2/invalid", "fhir/valid", "fhir/invalid"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("fixtures") {
                files.push(entry.expect("entry").path());
            }
        }
        files.sort();
        let run = |command: Command, path: &std::path::Path, ndjson: bool, with_policy: bool| {
            let request = Request {
                command,
                source: Source::Path(path.to_path_buf()),
                format: None,
                framing: None,
                limits: crate::limits::Limits::default(),
                strict: false,
                unsafe_show_values: false,
                ndjson,
                to: None,
                convert: crate::convert::Options::default(),
                policy: with_policy.then(|| std::sync::Arc::clone(&policy)),
                key: None,
                model: crate::formats::codec::ModelShape::Positional,
                structures: None,
                fhir: crate::formats::fhir::checks::Checks::default(),
            };
            let before = crate::phi::grants();
            super::run(request, &mut Null);
            crate::phi::grants() - before
        };
        let mut runs = 0;
        for path in &files {
            let ndjson = path.extension().is_some_and(|e| e == "ndjson");
            for with_policy in [false, true] {
                for command in [Command::Validate, Command::Inspect { detail: Default::default() }] {
                    assert_eq!(run(command, path, ndjson, with_policy), 0, "{command:?} granted on {}", path.display());
                    runs += 1;
                }
            }
            assert!(run(Command::Parse, path, ndjson, false) >= 1, "parse not granted on {}", path.display());
        }
        assert!(runs > 400, "{runs}");
    }

    /// The FHIR invariants decided natively agree with the FHIRPath engine on every element of
    /// the Bundles the converter makes of every HL7 v2 fixture (all three Bundle types).
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
    )]
    fn native_invariants_agree_on_converted_bundles() {
        use crate::convert::{BundleType, Options};
        use crate::formats::hl7v2::{parse, stream};
        let limits = crate::limits::Limits::default();
        let disclosure = crate::phi::Disclosure::grant();
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hl7v2"))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "hl7") {
                    files.push(path);
                }
            }
        }
        let mut docs = Vec::new();
        for path in files {
            let bytes = std::fs::read(&path).expect("read");
            for (kind, range) in stream::split_slice(&bytes) {
                if !matches!(kind, stream::Kind::Message) {
                    continue;
                }
                let Ok(msg) = parse::parse(bytes[range].to_vec(), &limits) else { continue };
                for bundle_type in [BundleType::Message, BundleType::Collection, BundleType::Transaction] {
                    let opts = Options { bundle_type, ..Options::default() };
                    let converted = crate::convert::hl7v2_fhir::convert(&msg, &opts, 1, &limits, &disclosure);
                    if let Ok(doc) = crate::formats::fhir::read(converted.bundle().to_vec(), &limits) {
                        docs.push((path.display().to_string(), doc));
                    }
                }
            }
        }
        assert!(docs.len() > 100, "{}", docs.len());
        let decided = crate::formats::fhir::fhirpath::natives_agree(&docs);
        for key in [
            "dom-2", "dom-3", "dom-4", "dom-5", "dom-6", "ext-1", "bdl-1", "bdl-2", "bdl-3", "bdl-4", "bdl-5", "bdl-7",
            "bdl-8", "bdl-9", "bdl-10", "bdl-11", "bdl-12", "ref-1", "obs-6", "obs-7", "qty-3", "cpt-2",
        ] {
            assert!(decided.get(key).copied().unwrap_or(0) > 0, "{key} never decided natively");
        }
    }

    /// A large ORU^R01 (the OBX of a fixture repeated, with NTE notes on some, past the size at
    /// which a Bundle is written in parts).
    fn large_oru(min_bytes: usize) -> Vec<u8> {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hl7v2/valid/v2.5.1_oru_r01_many_obx.hl7");
        let text = std::fs::read(fixture).expect("fixture");
        let segments: Vec<&[u8]> = text.split(|&b| b == b'\r' || b == b'\n').filter(|s| !s.is_empty()).collect();
        let first = segments.iter().position(|s| s.starts_with(b"OBX")).expect("an OBX");
        let last = segments.iter().rposition(|s| s.starts_with(b"OBX")).expect("an OBX");
        let mut out = Vec::new();
        for s in &segments[..first] {
            out.extend_from_slice(s);
            out.push(b'\r');
        }
        let mut n = 0usize;
        while out.len() < min_bytes {
            for s in &segments[first..=last] {
                n += 1;
                let rest = s.splitn(3, |&b| b == b'|').nth(2).unwrap_or_default();
                out.extend_from_slice(format!("OBX|{n}|").as_bytes());
                out.extend_from_slice(rest);
                out.push(b'\r');
                if n % 7 == 0 {
                    out.extend_from_slice(format!("NTE|1|L|Note {n}~second line\r").as_bytes());
                }
            }
        }
        for s in &segments[last + 1..] {
            out.extend_from_slice(s);
            out.push(b'\r');
        }
        out
    }

    /// A sink that keeps what it is given: the parts of an object, then the items.
    #[derive(Debug, Default)]
    struct Keep {
        parts: bool,
        received: Vec<Vec<u8>>,
        items: Vec<(Vec<u8>, Vec<crate::diag::Diagnostic>)>,
    }

    impl super::Sink for Keep {
        fn item(&mut self, item: super::Item<'_>) -> std::io::Result<()> {
            if let super::Item::Json { json, findings, .. } = item {
                self.items.push((json.to_vec(), findings.to_vec()));
            }
            Ok(())
        }

        fn takes_parts(&self) -> bool {
            self.parts
        }

        fn part(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            self.received.push(bytes.to_vec());
            Ok(())
        }
    }

    /// A record as a sink taking parts got it (its parts, then the rest) against the record a
    /// sink taking whole records got: the same exit, bytes and findings. Returns the record's
    /// length, the number of parts and the largest part's (or rest's) length.
    fn same_record_in_parts(whole: (u8, Keep), parted: (u8, Keep), what: &str) -> (usize, usize, usize) {
        let ((exit_whole, whole), (exit_parts, parted)) = (whole, parted);
        assert_eq!(exit_whole, exit_parts, "{what}");
        assert!(whole.received.is_empty(), "{what}");
        assert_eq!(whole.items.len(), 1, "{what}");
        assert_eq!(parted.items.len(), 1, "{what}");
        let (json, findings) = &whole.items[0];
        let mut joined: Vec<u8> = parted.received.concat();
        joined.extend_from_slice(&parted.items[0].0);
        assert!(joined == *json, "{what}: the parts are the record");
        assert_eq!(&parted.items[0].1, findings, "{what}");
        let largest = parted.received.iter().chain([&parted.items[0].0]).map(Vec::len).max().unwrap_or(0);
        (json.len(), parted.received.len(), largest)
    }

    /// `convert` of a large message gives the sink its record in parts, none larger than a
    /// bounded size (the Bundle is never held whole: memory does not grow with it), and the
    /// parts and the rest are exactly the record that a sink taking whole records gets (the
    /// three Bundle types; the node limit passed early, late, and not at all).
    #[test]
    fn a_large_bundle_reaches_the_sink_in_bounded_parts() {
        use super::{Command, Request, Source};
        use crate::convert::{BundleType, Options};
        let message = large_oru(super::runner::STREAM_CONVERT_AT + 1);
        let run = |parts: bool, bundle_type: BundleType, max_segments: u32| {
            let request = Request {
                command: Command::Convert,
                source: Source::Bytes(crate::phi::Phi::new(message.clone())),
                format: None,
                framing: None,
                limits: crate::limits::Limits { max_segments, ..crate::limits::Limits::default() },
                strict: false,
                unsafe_show_values: false,
                ndjson: false,
                to: None,
                convert: Options { bundle_type, ..Options::default() },
                policy: None,
                key: None,
                model: crate::formats::codec::ModelShape::Positional,
                structures: None,
                fhir: crate::formats::fhir::checks::Checks::default(),
            };
            let mut sink = Keep { parts, ..Keep::default() };
            let outcome = super::run(request, &mut sink);
            (outcome.exit, sink)
        };
        for bundle_type in [BundleType::Message, BundleType::Collection, BundleType::Transaction] {
            for max_segments in [20_000, 100_000, 1_000_000] {
                let what = format!("{bundle_type:?} {max_segments}");
                let (len, parts, largest) = same_record_in_parts(
                    run(false, bundle_type, max_segments),
                    run(true, bundle_type, max_segments),
                    &what,
                );
                if max_segments < 1_000_000 {
                    // The Bundle passes the node limit: it is written in parts.
                    assert!(parts > 4, "{what}: {parts}");
                    assert!(largest < len / 4, "{what}: a part holds most of it");
                } else {
                    // Held (and validated) whole below the limit.
                    assert_eq!(parts, 0, "{what}");
                }
            }
        }
    }

    /// `parse` of a large message gives the sink its record in parts of bounded size when the
    /// sink takes parts (the model is never held whole), and the parts and the rest are exactly
    /// the record a sink taking whole records gets, in both models (the named model is written
    /// whole); a message under the threshold is written whole either way.
    #[test]
    fn a_large_parse_model_reaches_the_sink_in_bounded_parts() {
        use super::{Command, Request, Source};
        use crate::formats::codec::ModelShape;
        let large = large_oru(super::runner::STREAM_CONVERT_AT + 1);
        let small = large_oru(super::runner::STREAM_CONVERT_AT / 8);
        let run = |message: &[u8], parts: bool, model: ModelShape| {
            let request = Request {
                command: Command::Parse,
                source: Source::Bytes(crate::phi::Phi::new(message.to_vec())),
                format: None,
                framing: None,
                limits: crate::limits::Limits::default(),
                strict: false,
                unsafe_show_values: false,
                ndjson: false,
                to: None,
                convert: crate::convert::Options::default(),
                policy: None,
                key: None,
                model,
                structures: None,
                fhir: crate::formats::fhir::checks::Checks::default(),
            };
            let mut sink = Keep { parts, ..Keep::default() };
            let outcome = super::run(request, &mut sink);
            (outcome.exit, sink)
        };
        for (message, spilled) in [(&large, true), (&small, false)] {
            for model in [ModelShape::Positional, ModelShape::Named] {
                let what = format!("{model:?}");
                let (len, parts, largest) =
                    same_record_in_parts(run(message, false, model), run(message, true, model), &what);
                if spilled && model == ModelShape::Positional {
                    assert!(parts > 4, "{parts}");
                    assert!(largest < len / 4, "a part holds most of it");
                } else {
                    assert_eq!(parts, 0, "{what}: written whole");
                }
            }
        }
    }

    /// Every HL7 v2 fixture converts to the same bytes and findings when its Observations are
    /// made again as the Bundle is written and the Bundle is spilled, as when it is held (three
    /// Bundle types; the FHIR reader's node limit passed or not).
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "ops: grants the disclosure, reads in-memory input, passes records through on the data channel"
    )]
    fn spilled_conversions_are_the_held_ones() {
        use crate::convert::{BundleType, Options};
        use crate::formats::hl7v2::{parse, stream};
        let disclosure = crate::phi::Disclosure::grant();
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hl7v2"))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "hl7") {
                    files.push(path);
                }
            }
        }
        let mut compared = 0;
        let mut spilled = 0;
        for path in files {
            let bytes = std::fs::read(&path).expect("read");
            for (kind, range) in stream::split_slice(&bytes) {
                if !matches!(kind, stream::Kind::Message) {
                    continue;
                }
                let Ok(msg) = parse::parse(bytes[range.clone()].to_vec(), &crate::limits::Limits::default()) else {
                    continue;
                };
                let default = crate::limits::Limits::default();
                for (max_segments, max_field_bytes) in [(60, 64), (400, 1 << 20), (1_000_000, 1 << 20), (1_000_000, 14)]
                {
                    let limits = crate::limits::Limits { max_segments, max_field_bytes, ..default };
                    for bundle_type in [BundleType::Message, BundleType::Collection, BundleType::Transaction] {
                        let opts = Options { bundle_type, ..Options::default() };
                        let convert = crate::convert::hl7v2_fhir::convert_after;
                        let held = convert(b"{", 7, &msg, &opts, 3, &limits, &disclosure, None);
                        let mut parts = Vec::new();
                        let mut spill = |b: &[u8]| parts.extend_from_slice(b);
                        let lazy = convert(b"{", 7, &msg, &opts, 3, &limits, &disclosure, Some(&mut spill));
                        spilled += usize::from(lazy.spilled);
                        parts.extend_from_slice(&lazy.out);
                        let name = path.display();
                        assert!(parts == held.out, "{name} {bundle_type:?} {max_segments}: bytes differ");
                        assert_eq!(lazy.findings, held.findings, "{name} {bundle_type:?} {max_segments}");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 300 && spilled > 50, "{compared} {spilled}");
    }
}
