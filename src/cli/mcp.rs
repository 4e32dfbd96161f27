//! The CLI's wiring of the MCP server (cargo feature `mcp`): `phiward mcp` and the
//! `phiward-mcp` binary read their options here (limits, `--policy`, `--key-file`, the
//! terminology data folder) and start [`crate::mcp::serve_stdio`].
//!
//! What it does not do: serve (see `mcp`); this is the only place that ties the two together,
//! so `mcp` does not depend on `cli`.

use super::args::McpArgs;
use super::output;
use crate::diag::Code;
use crate::error::{exit, exit_code_for};
use crate::mcp::{Config, serve_stdio};

/// Resolves the start-up options (limits, `--policy`) and serves stdio; returns the exit code.
pub fn serve_cli(args: McpArgs, on_call: Option<crate::mcp::dispatch::CallHook>) -> u8 {
    let catalog = crate::terminology::Catalog::new(crate::terminology::data_dir(args.data_dir.as_deref()));
    let mut config = Config {
        limits: args.limits.limits(),
        policy: None,
        key: None,
        catalog: std::sync::Arc::new(catalog),
        on_call,
        strict: false,
        structures: None,
        every_tool: false,
        convert: crate::convert::Options::default(),
    };
    if let Some(path) = &args.key_file {
        match crate::keys::Key::from_file(path) {
            Ok(k) => config.key = Some(std::sync::Arc::new(k)),
            Err(e) => return super::option_file_failure(e.code(), Code::CLI_KEY_FILE_UNREADABLE),
        }
    }
    if let Some(path) = &args.policy {
        let loaded = crate::policy::load_file(path).and_then(|p| p.check_key(config.key.is_some()).map(|()| p));
        match loaded {
            Ok(p) => {
                config.limits = p.apply_limits(config.limits);
                config.policy = Some(std::sync::Arc::new(p));
            }
            Err(e) if e.line == 0 => return super::option_file_failure(e.code, Code::CLI_POLICY_UNREADABLE),
            Err(e) => {
                output::failure(e.code, Some(e.diagnostic()));
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

/// The `phiward-mcp` binary: the same server as `phiward mcp`, with the same options (its own
/// and the global ones, `--audit-log` and `--audit-key-file`), run by the same code.
pub fn main_entry() -> u8 {
    use clap::Parser;

    /// phiward-mcp: serve phiward's tools over the Model Context Protocol on stdio.
    #[derive(Debug, Parser)]
    #[command(name = "phiward-mcp", version, about, long_about = None)]
    struct Cli {
        #[command(flatten)]
        args: McpArgs,
        #[command(flatten)]
        audit: super::args::AuditArgs,
    }

    std::panic::set_hook(Box::new(|_| {}));
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let run = move || match Cli::try_parse_from(&argv) {
        Ok(cli) => {
            super::init_logging();
            super::run_parsed(super::args::Cli { command: super::args::Cmd::Mcp(cli.args), audit: cli.audit })
        }
        Err(e) => super::usage_error(&e, &argv),
    };
    match std::panic::catch_unwind(run) {
        Ok(code) => code,
        Err(_) => {
            output::failure(Code::CLI_INTERNAL, None);
            exit::SOFTWARE
        }
    }
}
