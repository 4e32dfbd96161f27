//! The FHIR branch of the orchestrator: reads the whole input (bounded by
//! `Limits::max_input_bytes`), or, when it is NDJSON (`--ndjson`: one resource per non-blank
//! line), one line at a time, and runs each record through the FHIR pipeline, emitting items
//! the same way as the HL7 v2 path (`hold`/`emit`, one JSON object per record when the input is
//! multi-record).
//!
//! Byte offsets in the findings of an NDJSON record are relative to the start of its line.
//!
//! NDJSON is read one line at a time (memory bounded by the longest line, the whole input still
//! by `max_input_bytes`).
//!
//! What it does not do: stream a single resource (a FHIR document is read whole).

use std::io::{BufRead, BufReader, Read};

use zeroize::Zeroizing;

use super::{Command, Failure, Pending, Runner, Syntax, verdict_json};
use crate::diag::Code;
use crate::formats::fhir;
use crate::phi::Phi;

impl Runner<'_> {
    /// Runs every record of a FHIR input.
    pub(super) fn run_fhir(&mut self, input: impl Read) -> Result<(), Failure> {
        let max = self.request.limits.max_input_bytes;
        if self.request.ndjson {
            let result = self.run_ndjson(BufReader::with_capacity(64 * 1024, input.take(max.saturating_add(1))), max);
            // What was read before the end (or a failure) is written; a failure among those
            // records comes first.
            let flushed = self.flush_pending();
            return flushed.and(result);
        }
        let mut all = Zeroizing::new(Vec::new());
        input
            .take(max.saturating_add(1))
            .read_to_end(&mut all)
            .map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
        if all.len() as u64 > max {
            return Err(Failure::code(Code::CLI_INPUT_TOO_LARGE));
        }
        let bytes = std::mem::take(&mut *all);
        self.fhir_record(bytes)
    }

    /// NDJSON, one line at a time: memory is bounded by the longest line. The whole input is
    /// still bounded by `max` (`CLI_INPUT_TOO_LARGE` when the total goes over it; the records
    /// before are already out, as for a stream over `max_records`).
    fn run_ndjson(&mut self, mut input: impl BufRead, max: u64) -> Result<(), Failure> {
        let mut line = Zeroizing::new(Vec::new());
        let mut total = 0u64;
        loop {
            line.clear();
            let n = input.read_until(b'\n', &mut line).map_err(|e| Failure::from(crate::error::from_read_io(&e)))?;
            if n == 0 {
                return Ok(());
            }
            total += n as u64;
            if total > max {
                return Err(Failure::code(Code::CLI_INPUT_TOO_LARGE));
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.fhir_record(text.to_vec())?;
        }
    }

    fn fhir_record(&mut self, bytes: Vec<u8>) -> Result<(), Failure> {
        self.records += 1;
        if self.records > self.request.limits.max_records {
            return Err(Failure::code(Code::CLI_INPUT_TOO_LARGE));
        }
        if self.par.is_some() && self.multi {
            return self.queue(super::par::Job::Fhir { bytes, record: self.records });
        }
        // A copy for the operator's excerpt, or for `fmt` to pass a failed record through.
        let keep_copy =
            self.request.unsafe_show_values || (self.multi && self.fmt_mode() == Some(false) && !self.redacting());
        let keep = keep_copy.then(|| Phi::new(bytes.clone()));
        let mut doc = match fhir::read(bytes, &self.request.limits) {
            Ok(doc) => doc,
            Err(fatal) => {
                let code = if fatal.code == Code::CLI_INPUT_TOO_LARGE { fatal.code } else { Code::CLI_PARSE_FAILED };
                let mut out = Zeroizing::new(Vec::new());
                self.failed_record(code, fatal, keep, "fhir", &mut out)?;
                if !out.is_empty() {
                    out.push(b'\n');
                    self.emit_bytes(&out);
                }
                return Ok(());
            }
        };
        if let Some(r) = self.fhir_redactor.as_mut() {
            let mut red = Zeroizing::new(Vec::new());
            crate::policy::fhir::redact(r, &doc, self.disclosure, self.request.ndjson, &mut red);
            if self.request.command == Command::Redact {
                self.emit_bytes(&red);
                return Ok(());
            }
            doc = match fhir::read(std::mem::take(&mut *red), &self.request.limits) {
                Ok(d) => d,
                Err(fatal) => {
                    let mut out = Zeroizing::new(Vec::new());
                    return self.failed_record(Code::CLI_PARSE_FAILED, fatal, None, "fhir", &mut out);
                }
            };
        }
        let options = fhir::validate::Options { strict: self.request.strict };
        let mut json = Vec::with_capacity(256);
        match self.request.command {
            Command::Parse => {
                json.extend_from_slice(b"{\"format\":\"fhir\",\"model\":");
                fhir::write::resource_json(&doc, self.disclosure, false, &mut json);
                json.extend_from_slice(b",\"warnings\":");
                super::findings_json(doc.findings(), &mut json);
                json.push(b'}');
                let findings = doc.findings().to_vec();
                self.emit(Pending { json, findings, valid: None, error: None });
                Ok(())
            }
            Command::Validate => {
                let findings = fhir::validate::validate(&doc, options);
                let valid = fhir::validate::is_valid(&findings);
                self.any_invalid |= !valid;
                verdict_json("fhir", valid, &findings, &mut json);
                self.emit(Pending { json, findings, valid: Some(valid), error: None });
                Ok(())
            }
            Command::Inspect => {
                let findings = fhir::validate::validate(&doc, options);
                let summary = fhir::inspect::summarize(&doc, &findings);
                serde_json::to_writer(&mut json, &summary).map_err(|_| Failure::code(Code::CLI_INTERNAL))?;
                self.emit(Pending { json, findings: Vec::new(), valid: None, error: None });
                Ok(())
            }
            // Not reached: FHIR does not declare Convert in its OPERATIONS.
            Command::Convert => Err(Failure::code(Code::CLI_FORMAT_UNSUPPORTED)),
            Command::Redact => Ok(()),
            Command::Fmt { check } => {
                let mut out = Zeroizing::new(Vec::new());
                let syntax = match self.request.to {
                    None => doc.syntax(),
                    Some(Syntax::Json) => fhir::model::Syntax::Json,
                    Some(Syntax::Xml) => fhir::model::Syntax::Xml,
                };
                fhir::fmt::canonical_as(&doc, syntax, self.disclosure, self.request.ndjson, &mut out);
                if check {
                    if fhir::fmt::is_canonical(&doc, self.disclosure, self.request.ndjson, &out) {
                        return Ok(());
                    }
                    self.any_invalid = true;
                    json.extend_from_slice(b"{\"format\":\"fhir\",\"canonical\":false}");
                    self.emit(Pending { json, findings: Vec::new(), valid: Some(false), error: None });
                    return Ok(());
                }
                self.emit_bytes(&out);
                Ok(())
            }
        }
    }
}
