//! Fuzz target `ncpdp`: the harness body is `phiward::internal::fuzzing::ncpdp`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::ncpdp(data));
