//! phiward's one integration-test binary.
//!
//! Table of contents (one module per concern; CLI tests run the real binary):
//! - `common`: helpers (run the binary, fixtures, marker scanning).
//! - `cli_contract`: exit-code matrix, stderr line grammar, --help/--version, limits.
//! - `fhir`: every fixture under fixtures/fhir through every command, against its manifest;
//!   round trips, XML/JSON agreement, exact decimals, NDJSON, markers.
//! - `fhir_options`: validate's optional FHIR checks (the reference validator's options), each
//!   off by default and changing a verdict both ways.
//! - `fhir_profiles`: `validate --ig --profile --must-support` over the synthetic IG of
//!   fixtures/fhir/ig: each profile rule at its element, the profile named, no value out.
//! - `hl7v2_fixtures`: every fixture under fixtures/hl7v2 through every command, against the manifest.
//! - `hl7v2_conformance`: fixtures/hl7v2/conformance, one rule each, against their expected
//!   findings in the default and `--strict` modes; findings of every HL7 v2 fixture are value-free.
//! - `no_leak`: marker fixtures, broken in many ways, through every command with RUST_LOG=trace.
//! - `convert`: HL7 v2 to FHIR R4 Bundles: validity, references, ids, determinism, golden
//!   outputs, options (keys, naming systems, time zones), markers.
//! - `registry`: DIAGNOSTICS.md against `Code::ALL`.
//! - `readme`: the README followed literally: its console blocks run and print what it shows;
//!   its install and test commands (the one `.ci/run` runs); `--quiet` means one thing.
//! - `first_run`: the first ten minutes (issue 35): usage mistakes name the argument, option
//!   files their option, nothing on stdout on failure per command, per-command help, line
//!   ends, `fmt --check` wording, ConceptMaps listed, locations and fingerprints over fixtures.
//! - `architecture`: the Architecture Invariants of ARCHITECTURE.md.
//! - `fuzz_replay`: the committed fuzz corpus and every minimised crash, through the library's
//!   fuzz harnesses (`phiward::internal::fuzzing`), plus one regression test per bug found.
//! - `terminology`: find-equivalent (score reference values, exact names first), terminology list
//!   licences, the importers on synthetic files, map-codes, MCP against the CLI.
//! - `mcp`: the MCP server: tool definitions, dispatch against the CLI's --json, argument
//!   errors, markers, a hand-written JSON-RPC exchange over stdio, limits and --policy.
//! - `named_model`: the named HL7 v2 model (`parse --model named`, the MCP default): keys from
//!   the version's tables, Z-segments by position, repetitions, escapes, the fallback version,
//!   the same values as the positional model with and without a redacting policy.
//! - `parallel`: multi-record inputs processed in batches on several threads (a file) give
//!   exactly what record-by-record processing (a pipe) gives, in input order: MLLP, ER7, NDJSON.
//! - `redact`: `redact` (Safe Harbor over marker fixtures, every valid fixture, golden triples per
//!   action, manifest), `policy check` (shipped policies, policies that do not load), and
//!   enforcement of `--policy` on parse/fmt and over MCP.
//! - `dicom`: every fixture under fixtures/dicom through validate against its manifest, each code
//!   at its tag path; element counts, tags and VRs; the same model in every transfer syntax;
//!   fmt a fixed point; the marker file through validate, inspect and stderr.
//! - `dicom_options`: the PS3.15 Annex E option policies over a file with a marker in every
//!   attribute of Table E.1-1: each option's column retained, the rest removed, (0012,0063) and
//!   (0012,0064) naming the profile and options; Modified Dates shifts per patient, keyed.
//! - `x12`: every fixture under fixtures/x12 through every command, against its manifest; the
//!   mutation test (required segment removed, loop out of order, element too long, code not in
//!   list, SE01 wrong, control numbers) located exactly; Safe Harbor over marker-filled sets.
//! - `astm`: every fixture under fixtures/astm through every command, against its manifest
//!   (codes and exact locations); message and record counts; framed and unframed alike; Safe
//!   Harbor over marker-filled messages; the mutation test (checksum, frame number, ETX, sequence,
//!   record type, termination code, missing L, date) located exactly.
//! - `ccda`: every fixture under fixtures/ccda through validate against its manifest; inspect by
//!   template; fmt a fixed point; the mutation test (section, templateId, fixed code, moodCode,
//!   required element, TS) located exactly; no value out; Safe Harbor redaction over the
//!   marker-filled CCD and Discharge Summary (no marker, well-formed, no new error), fail closed.
//! - `redact_fail_closed`: keep means keep what the rule proves safe (issue 36): one regression
//!   test per red-team finding on fixtures/redact/red_team, and `policy test` (shipped policies
//!   pass it on the fixtures, a planted unsafe keep is found).
//! - `ncpdp`: every fixture under fixtures/ncpdp (Telecommunication D.0) through every command,
//!   against its manifest (codes and exact locations); transaction and segment counts; fmt a
//!   fixed point; Safe Harbor over marker-filled transmissions; SCRIPT XML is `ncpdp-script`; the
//!   mutation test (header date, count, segment id, segment and field copies, field formats).
//! - `ncpdp_script`: every fixture under fixtures/ncpdp-script (SCRIPT 10.6 and 2017071 XML)
//!   against its manifest (codes and exact element paths); every command on the valid ones;
//!   detection; Safe Harbor over marker-filled messages and every shipped policy over the valid
//!   ones; keyed actions; the mutation test (dates, ids, codes, numbers, required elements).
//! - `scale_out`: `--input-format json-lines`, the record stream of a pipe stage: one answer
//!   per line in order, bad lines answered, results equal to the single-record CLI's for every
//!   command, keyed redaction independent of order and split, markers only in `data` and `id`.
//! - `questionnaire`: QuestionnaireResponses against their Questionnaires over the suite's
//!   `questionnaire` cases (supporting files through the resolver hook of `validate_with`),
//!   agreement with the reference as a floor; skipped without `../shared/fhir-test-cases`.

mod common;

mod architecture;
mod astm;
mod audit;
mod batch;
mod ccda;
mod cli_contract;
mod convert;
mod dicom;
mod dicom_options;
mod fhir;
mod fhir_options;
mod fhir_profiles;
mod first_run;
mod fuzz_replay;
mod hl7v2_conformance;
mod hl7v2_fixtures;
mod mcp;
mod named_model;
mod ncpdp;
mod ncpdp_script;
mod no_leak;
mod parallel;
mod questionnaire;
mod readme;
mod redact;
mod redact_fail_closed;
mod registry;
mod scale_out;
mod terminology;
mod x12;
