//! The MCP front door (cargo feature `mcp`, on by default): a stdio server built on `rmcp` with
//! message tools, `parse`, `validate`, `inspect`, `convert` and `redact`.
//!
//! Usable as a library: [`tools::definitions`] (what `tools/list` shows), [`dispatch()`] (a tool
//! name and raw JSON arguments to the structured reply, synchronously, without a transport) and
//! [`serve_stdio`] (serves this process's stdin/stdout). `phiward mcp` and the `phiward-mcp`
//! binary both end in [`serve_cli`].
//!
//! The boundary: a reply's `data` is the only place a message value can appear, and it is
//! exactly what `phiward <tool> --json` prints for the same input (both come from `ops::run`).
//! Failed replies carry a code and an exit code only. Arguments are read from the raw JSON by
//! our own code, so nothing the caller sent is echoed in an error; rmcp's logging is off
//! at every level (it logs whole requests at `debug`, request ids and error texts at `warn`);
//! JSON-RPC errors carry fixed texts; there is no `--unsafe-show-values` over MCP.
//!
//! What it does not do: open files or the network (the message comes in the arguments), or keep
//! state between calls.

pub mod dispatch;
pub mod server;
pub mod terminology;
pub mod tools;
pub mod transport;

pub use dispatch::{Config, Reply, dispatch};
pub use server::{Server, serve_stdio};
pub use tools::{Tool, definitions};

use crate::cli::args::McpArgs;
use crate::cli::output;
use crate::diag::Code;
use crate::error::{exit, exit_code_for};

/// Resolves the start-up options (limits, `--policy`) and serves stdio; returns the exit code.
pub fn serve_cli(args: McpArgs) -> u8 {
    let catalog = crate::terminology::Catalog::new(crate::terminology::data_dir(args.data_dir.as_deref()));
    let mut config =
        Config { limits: args.limits.limits(), policy: None, key: None, catalog: std::sync::Arc::new(catalog) };
    if let Some(path) = &args.key_file {
        match crate::keys::Key::from_file(path) {
            Ok(k) => config.key = Some(std::sync::Arc::new(k)),
            Err(e) => {
                output::failure(e.code(), None);
                return e.exit_code();
            }
        }
    }
    if let Some(path) = &args.policy {
        let loaded = crate::policy::load_file(path).and_then(|p| p.check_key(config.key.is_some()).map(|()| p));
        match loaded {
            Ok(p) => {
                config.limits = p.apply_limits(config.limits);
                config.policy = Some(std::sync::Arc::new(p));
            }
            Err(e) => {
                output::failure(e.code, (e.line > 0).then(|| e.diagnostic()));
                return exit_code_for(e.code);
            }
        }
    }
    tracing::debug!(max_input_bytes = config.limits.max_input_bytes, "serving MCP on stdio");
    match serve_stdio(config) {
        Ok(()) => exit::OK,
        Err(code) => {
            output::failure(code, None);
            exit_code_for(code)
        }
    }
}

/// The `phiward-mcp` binary: the same server as `phiward mcp`, with the same options.
pub fn main_entry() -> u8 {
    use clap::Parser;

    /// phiward-mcp: serve phiward's tools over the Model Context Protocol on stdio.
    #[derive(Debug, Parser)]
    #[command(name = "phiward-mcp", version, about, long_about = None)]
    struct Cli {
        #[command(flatten)]
        args: McpArgs,
    }

    std::panic::set_hook(Box::new(|_| {}));
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let run = move || match Cli::try_parse_from(argv) {
        Ok(cli) => {
            crate::cli::init_logging();
            serve_cli(cli.args)
        }
        Err(e) => crate::cli::usage_error(&e),
    };
    match std::panic::catch_unwind(run) {
        Ok(code) => code,
        Err(_) => {
            output::failure(Code::CLI_INTERNAL, None);
            exit::SOFTWARE
        }
    }
}
