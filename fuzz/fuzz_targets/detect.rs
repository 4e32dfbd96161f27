//! Fuzz target `detect`: the harness body is `phiward::internal::fuzzing::detect`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::detect(data));
