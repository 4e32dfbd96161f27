//! Fuzz target `x12`: the harness body is `phiward::internal::fuzzing::x12`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::x12(data));
