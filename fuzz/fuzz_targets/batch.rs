//! Fuzz target `batch`: the harness body is `phiward::internal::fuzzing::batch`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::batch(data));
