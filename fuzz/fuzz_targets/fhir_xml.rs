//! Fuzz target `fhir_xml` (FHIR XML): the harness body is `phiward::internal::fuzzing::fhir_xml`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::fhir_xml(data));
