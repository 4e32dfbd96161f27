//! `phiward-mcp`: the MCP server on stdio, the same as `phiward mcp` (see `phiward::mcp`).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(phiward::cli::mcp::main_entry())
}
