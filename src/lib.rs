//! phiward: parse, validate, inspect, re-format (and, as it grows, convert and redact)
//! healthcare messages, with a typed boundary that keeps patient data out of every channel but
//! the data channel.
//!
//! Map: [`phi`] (the boundary type), [`diag`] (value-free findings), [`error`] (operational
//! errors and exit codes), [`limits`], [`detect`] (format sniffing), [`formats`] (one module per
//! format), [`ops`] (the single orchestrator), [`cli`] (the command-line front door) and `mcp`
//! (the MCP front door, feature `mcp`). See ARCHITECTURE.md.

#![forbid(unsafe_code)]

pub mod call;
pub mod cli;
pub mod convert;
pub mod detect;
pub mod diag;
pub mod error;
pub mod formats;
#[doc(hidden)]
pub mod internal;
pub mod json;
pub mod keys;
pub mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod ops;
pub mod phi;
pub mod policy;
pub mod structure;
pub mod terminology;

/// The binary's entry point: runs the CLI, turning a panic into `CLI_INTERNAL` (exit 70) without
/// printing its payload (a panic message could quote a value).
pub fn main_entry() -> u8 {
    std::panic::set_hook(Box::new(|_| {}));
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match std::panic::catch_unwind(move || cli::run(argv)) {
        Ok(code) => code,
        Err(_) => {
            cli::output::failure(diag::Code::CLI_INTERNAL, None);
            error::exit::SOFTWARE
        }
    }
}
