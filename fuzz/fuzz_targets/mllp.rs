//! Fuzz target `mllp`: the harness body is `phiward::internal::fuzzing::mllp`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::mllp(data));
