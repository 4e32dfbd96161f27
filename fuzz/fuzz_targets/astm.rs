//! Fuzz target `astm`: the harness body is `phiward::internal::fuzzing::astm`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::astm(data));
