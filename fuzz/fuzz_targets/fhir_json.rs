//! Fuzz target `fhir_json` (FHIR JSON): the harness body is `phiward::internal::fuzzing::fhir_json`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::fhir_json(data));
