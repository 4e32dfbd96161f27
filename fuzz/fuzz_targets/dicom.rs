//! Fuzz target `dicom`: the harness body is `phiward::internal::fuzzing::dicom`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| phiward::internal::fuzzing::dicom(data));
