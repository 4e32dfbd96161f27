//! The `phiward` binary: thin. Everything is in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(phiward::main_entry())
}
