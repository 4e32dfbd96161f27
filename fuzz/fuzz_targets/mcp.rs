//! Fuzz target `mcp`: the harness body is `phiward::internal::fuzzing::mcp`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::mcp(data));
