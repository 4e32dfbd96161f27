//! Crate internals published for the project's own tooling, not for users: no stability promise.
//!
//! - [`fuzzing`]: the fuzz harness bodies. Each `fuzz/fuzz_targets/*.rs` is one line calling
//!   one of them, and `tests/fuzz_replay.rs` replays the committed corpus through the same
//!   functions on the stable toolchain.
//! - `model_oracle` (tests only): the former HL7 v2 model writer, the oracle of a differential
//!   test of the current one.
//!
//! What it does not do: anything the CLI or the MCP server calls, but the marker walkers of
//! `fuzzing::values` and `fuzzing::fhir_values`, which `policy test` (`policy::audit`) shares with
//! the no-leak oracle so that both mark values the same way. It is `#[doc(hidden)]`.

pub mod fuzzing;
#[cfg(test)]
mod model_oracle;
