//! phiward's one integration-test binary.
//!
//! Table of contents (one module per concern; CLI tests run the real binary):
//! - `common`: helpers (run the binary, fixtures, marker scanning).
//! - `cli_contract`: exit-code matrix, stderr line grammar, --help/--version, limits.
//! - `hl7v2_fixtures`: every fixture under fixtures/hl7v2 through every command, against the manifest.
//! - `no_leak`: marker fixtures, broken in many ways, through every command with RUST_LOG=trace.
//! - `registry`: DIAGNOSTICS.md against `Code::ALL`.
//! - `architecture`: the Architecture Invariants of ARCHITECTURE.md.

mod common;

mod architecture;
mod cli_contract;
mod hl7v2_fixtures;
mod no_leak;
mod registry;
