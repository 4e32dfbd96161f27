//! Fuzz target `ncpdp_script`: the harness body is `phiward::internal::fuzzing::ncpdp_script`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::ncpdp_script(data));
