//! The MCP front door (cargo feature `mcp`, on by default): a stdio server built on `rmcp` with
//! message tools, `parse`, `validate`, `inspect`, `convert` and `redact`, the terminology tools,
//! resources and resource templates of the terminology catalog, prompts, and completions for
//! the templates' and prompts' arguments. Tool calls run concurrently, report progress (records
//! done) when asked, and stop when cancelled (see [`server`]).
//!
//! Usable as a library: [`tools::definitions`] (what `tools/list` shows), [`dispatch()`] (a tool
//! name and raw JSON arguments to the structured reply, synchronously, without a transport) and
//! [`serve_stdio`] (serves this process's stdin/stdout). `phiward mcp` and the `phiward-mcp`
//! binary both start it through the CLI (`cli::mcp`), which resolves their options.
//!
//! The boundary: a reply's `data` is the only place a message value can appear, and it is
//! exactly what `phiward <tool> --json` prints for the same input (both come from `ops::run`).
//! Failed replies carry a code and an exit code only. Arguments are read from the raw JSON by
//! our own code, so nothing the caller sent is echoed in an error; rmcp's logging is off
//! at every level (it logs whole requests at `debug`, request ids and error texts at `warn`);
//! JSON-RPC errors carry fixed texts; there is no `--unsafe-show-values` over MCP.
//!
//! What it does not do: open files or the network (the message comes in the arguments), keep
//! state between calls (but the data of replies asked for as resources, in memory, see
//! [`results`]), or read command lines (the CLI does; `mcp` knows nothing of `cli`).

pub mod dispatch;
pub mod prompts;
pub mod results;
pub mod server;
pub use crate::ops::shape;
pub mod terminology;
pub mod tools;
pub mod transport;

pub use dispatch::{Config, Reply, Watch, dispatch, dispatch_watched};
pub use server::{Server, serve_stdio};
pub use tools::{INSPECT_SUMMARIES, Tool, definitions};
