//! Fuzz target `hl7v2`: the harness body is `phiward::internal::fuzzing::hl7v2`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::hl7v2(data));
