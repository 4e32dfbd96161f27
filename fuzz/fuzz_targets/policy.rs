//! Fuzz target `policy`: the harness body is `phiward::internal::fuzzing::policy`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::policy(data));
