//! Fuzz target `pipeline`: the harness body is `phiward::internal::fuzzing::pipeline`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::pipeline(data));
