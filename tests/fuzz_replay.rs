//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and every minimised crash
//! (`fuzz/regressions/<target>/`) through the library's harness bodies
//! (`phiward::internal::fuzzing`), on the stable toolchain, without cargo-fuzz.
//!
//! Each harness runs over its own corpus and over every regression input of every target (a
//! crash found by one target is a fine input for another); then one test per bug the fuzzers
//! found, named after it, replays its minimised input.

use std::path::{Path, PathBuf};

use phiward::internal::fuzzing;

use crate::common::{files_under, root};

/// A harness body: the input bytes in, a panic on a failed oracle.
type Harness = fn(&[u8]);

/// The harnesses, by target name (the `mcp` target needs the `mcp` feature).
fn targets() -> Vec<(&'static str, Harness)> {
    #[allow(unused_mut)] // pushed to with the `mcp` feature
    let mut t: Vec<(&'static str, Harness)> = vec![
        ("hl7v2", fuzzing::hl7v2),
        ("mllp", fuzzing::mllp),
        ("batch", fuzzing::batch),
        ("detect", fuzzing::detect),
        ("pipeline", fuzzing::pipeline),
        ("fhir_json", fuzzing::fhir_json),
        ("fhir_xml", fuzzing::fhir_xml),
        ("policy", fuzzing::policy),
        ("x12", fuzzing::x12),
        ("astm", fuzzing::astm),
        ("dicom", fuzzing::dicom),
        ("ncpdp", fuzzing::ncpdp),
        ("ccda", fuzzing::ccda),
        ("ncpdp_script", fuzzing::ncpdp_script),
    ];
    #[cfg(feature = "mcp")]
    t.push(("mcp", fuzzing::mcp));
    t
}

fn harness(name: &str) -> Harness {
    targets().into_iter().find(|(n, _)| *n == name).map(|(_, h)| h).unwrap_or_else(|| panic!("no target {name}"))
}

fn fuzz_dir() -> PathBuf {
    root().join("fuzz")
}

/// The corpus of `target` and every regression input, of every target.
fn inputs_for(target: &str) -> Vec<PathBuf> {
    let mut out = files_under(&fuzz_dir().join("corpus").join(target));
    out.extend(files_under(&fuzz_dir().join("regressions")));
    out.retain(|p| !is_hidden(p));
    out
}

fn is_hidden(p: &Path) -> bool {
    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.') || n == "README.md")
}

fn replay(harness: Harness, inputs: &[PathBuf]) {
    let mut failed = Vec::new();
    for path in inputs {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        if std::panic::catch_unwind(|| harness(&data)).is_err() {
            failed.push(path.strip_prefix(fuzz_dir()).unwrap_or(path).display().to_string());
        }
    }
    assert!(failed.is_empty(), "fuzz oracles failed on: {failed:#?}");
}

fn replay_target(name: &str) {
    let inputs = inputs_for(name);
    assert!(inputs.len() > 5, "the committed fuzz corpus of {name} is missing");
    replay(harness(name), &inputs);
}

#[test]
fn corpus_hl7v2() {
    replay_target("hl7v2");
}

#[test]
fn corpus_mllp() {
    replay_target("mllp");
}

#[test]
fn corpus_batch() {
    replay_target("batch");
}

#[test]
fn corpus_detect() {
    replay_target("detect");
}

#[test]
fn corpus_pipeline() {
    replay_target("pipeline");
}

#[test]
fn corpus_fhir_json() {
    replay_target("fhir_json");
}

#[test]
fn corpus_fhir_xml() {
    replay_target("fhir_xml");
}

#[test]
fn corpus_x12() {
    replay_target("x12");
}

#[test]
fn corpus_astm() {
    replay_target("astm");
}

#[test]
fn corpus_dicom() {
    replay_target("dicom");
}

#[test]
fn corpus_ccda() {
    replay_target("ccda");
}

#[test]
fn corpus_ncpdp_script() {
    replay_target("ncpdp_script");
}

#[test]
fn corpus_policy() {
    replay_target("policy");
}

#[cfg(feature = "mcp")]
#[test]
fn corpus_mcp() {
    replay_target("mcp");
}

/// Every target directory in fuzz/corpus and fuzz/regressions has a harness.
#[test]
fn every_corpus_directory_has_a_harness() {
    for dir in ["corpus", "regressions"] {
        let Ok(rd) = std::fs::read_dir(fuzz_dir().join(dir)) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                let known = targets().iter().any(|(n, _)| *n == name) || (name == "mcp" && cfg!(not(feature = "mcp")));
                assert!(known, "fuzz/{dir}/{name} has no harness");
            }
        }
    }
}

// ---- one test per bug found by the fuzzers, named after it ----------------------------------

/// Replays `fuzz/regressions/<target>/<file>` through the target's harness.
fn regression(target: &str, file: &str) {
    let path = fuzz_dir().join("regressions").join(target).join(file);
    assert!(path.is_file(), "missing regression input {}", path.display());
    replay(harness(target), &[path]);
}

/// The parse model kept the separators of a part whose subparts were all empty (`MSH-3` = `^`
/// came out as the text `"^"`), so a message and its canonical form had two models.
#[test]
fn model_empty_part_keeps_separator() {
    regression("hl7v2", "model_empty_part_keeps_separator");
}

/// fmt wrote a segment with an empty id and only empty fields as a blank line, which the parser
/// skips: fmt's output lost a segment and `fmt --check` rejected it.
#[test]
fn fmt_blank_segment_vanishes() {
    regression("pipeline", "fmt_blank_segment_vanishes");
    regression("hl7v2", "../pipeline/fmt_blank_segment_vanishes");
}

/// A trailer recognised by its first bytes (`BTS\`) but whose id under the inherited field
/// separator is not `BTS` had its count finding located at `BTS[1]-1`, a segment the record
/// does not have.
#[test]
fn batch_count_position_names_a_missing_segment() {
    regression("batch", "batch_count_position_names_a_missing_segment");
}

/// An oracle bug, kept so it stays fixed: the round trip parsed fmt's output under the tight
/// limits of the input, but canonical form adds a final CR, so a 48-byte message came back as
/// 49 bytes and was refused for its size.
#[test]
fn canonical_form_longer_than_tight_limit() {
    regression("hl7v2", "canonical_form_longer_than_tight_limit");
}

/// An oracle bug, kept so it stays fixed: the words of the MCP reply envelope (`ok`, `exit`,
/// `status`) were not in the oracle's vocabulary, so a value sharing a few bytes with them was
/// reported as a leak.
#[cfg(feature = "mcp")]
#[test]
fn mcp_reply_envelope_words() {
    regression("mcp", "mcp_reply_envelope_words");
}

/// A narrative `div` in the wrong namespace passed JSON validation (the check only looked for
/// `<div` and `</div>`), while the XML syntax cannot carry it: JSON to XML to JSON lost it. The
/// xhtml primitive is now parsed as XML and must be a `div` in the XHTML namespace.
#[test]
fn div_wrong_namespace_valid_in_json() {
    regression("fhir_json", "div_wrong_namespace_valid_in_json");
}

#[test]
fn corpus_ncpdp() {
    replay_target("ncpdp");
}

/// Safe Harbor's output of a request whose only segment had no id was its header alone; the
/// reader told a header-only transmission by its version, and this one's version was damaged, so
/// the redacted output could not be read again. A header alone is now told by its width.
#[test]
fn redacted_header_only_transmission() {
    regression("ncpdp", "redacted_header_only_transmission");
}

/// ASTM: a frame whose record holds a lone Latin-1 byte (0xA4) in a field, found by the CI fuzz run.
#[test]
fn astm_latin1_byte_in_a_frame() {
    regression("astm", "free_text_byte_a4_in_a_frame");
}

/// A DICOM tag in a location (`(FF36,FFFF)`) is structure, though its hex digits match four bytes
/// of a value (`CARFFFFD...`) by chance; found by the ncpdp fuzz run.
#[test]
fn ncpdp_ci_fuzz_crash_1() {
    regression("ncpdp", "ci_fuzz_crash_1");
}

/// The DICOM summary's nested keys (`fragments` of `pixel_data`) were not in the oracle's
/// vocabulary, so four bytes of an input word (`argument`) matched them; found by the dicom fuzz
/// run.
#[test]
fn summary_key_fragments_not_in_vocabulary() {
    regression("dicom", "summary_key_fragments_not_in_vocabulary");
}
