//! Fuzz target `ccda`: the harness body is `phiward::internal::fuzzing::ccda`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::ccda(data));
