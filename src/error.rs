//! Operational errors: usage, missing input, limits, unsupported cells, internal faults.
//!
//! An [`Error`] is a [`Code`] and nothing else; its exit code and its fixed message derive from
//! the code. Foreign errors (io, serde_json, clap, rmcp) are mapped to a code where they occur and
//! their text is dropped: it can quote a value or name a file after a patient.

use std::fmt;

use crate::diag::Code;

/// Exit codes of the command-line contract (sysexits where one fits).
pub mod exit {
    /// Success, or a valid verdict.
    pub const OK: u8 = 0;
    /// A negative verdict (invalid message, non-canonical input under `fmt --check`).
    pub const INVALID: u8 = 1;
    /// Usage error.
    pub const USAGE: u8 = 2;
    /// Data error: unparseable, empty, undetected, ambiguous or unsupported input; a failed record.
    pub const DATAERR: u8 = 65;
    /// Input missing or unreadable.
    pub const NOINPUT: u8 = 66;
    /// A component is unavailable in this build.
    pub const UNAVAILABLE: u8 = 69;
    /// Internal error.
    pub const SOFTWARE: u8 = 70;
    /// The terminology data folder cannot be created or written (sysexits EX_CANTCREAT).
    pub const CANTCREAT: u8 = 73;
    /// Output could not be written (sysexits EX_IOERR).
    pub const IOERR: u8 = 74;
}

/// An operational error: one code, rendered as `phiward: CODE: fixed message`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: Code,
}

impl Error {
    /// An error with this code.
    pub fn new(code: Code) -> Self {
        Error { code }
    }

    /// The code.
    pub fn code(self) -> Code {
        self.code
    }

    /// The exit code of the command-line contract for this error.
    pub fn exit_code(self) -> u8 {
        exit_code_for(self.code)
    }
}

/// The exit code for a failure with this code.
pub fn exit_code_for(code: Code) -> u8 {
    match code {
        Code::CLI_USAGE
        | Code::CLI_KEY_INVALID
        | Code::POLICY_SYNTAX
        | Code::POLICY_UNKNOWN_KEY
        | Code::POLICY_INVALID_VALUE
        | Code::POLICY_UNKNOWN_SELECTOR
        | Code::POLICY_UNKNOWN_ACTION
        | Code::POLICY_ACTION_NOT_ALLOWED
        | Code::POLICY_KEY_REQUIRED
        | Code::POLICY_TOOL_NOT_ALLOWED
        | Code::POLICY_SHOW_VALUES_FORBIDDEN
        | Code::CLI_CONFIG_INVALID => exit::USAGE,
        Code::CLI_NO_INPUT
        | Code::CLI_KEY_FILE_UNREADABLE
        | Code::CLI_ID_KEY_FILE_UNREADABLE
        | Code::CLI_POLICY_UNREADABLE
        | Code::CLI_NAMING_SYSTEMS_UNREADABLE
        | Code::CLI_SAMPLES_UNREADABLE
        | Code::CLI_IG_UNREADABLE => exit::NOINPUT,
        Code::CLI_PARSER_UNAVAILABLE => exit::UNAVAILABLE,
        Code::CLI_INTERNAL => exit::SOFTWARE,
        Code::CLI_OUTPUT_FAILED | Code::CLI_AUDIT_LOG_FAILED => exit::IOERR,
        Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE => exit::CANTCREAT,
        _ => exit::DATAERR,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.code.meaning())
    }
}

impl std::error::Error for Error {}

impl From<Code> for Error {
    fn from(code: Code) -> Self {
        Error::new(code)
    }
}

/// Maps an io error on reading input to a code, by kind only.
pub fn from_read_io(err: &std::io::Error) -> Error {
    match err.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::IsADirectory => {
            Error::new(Code::CLI_NO_INPUT)
        }
        std::io::ErrorKind::InvalidData => Error::new(Code::CLI_PARSE_FAILED),
        _ => Error::new(Code::CLI_NO_INPUT),
    }
}
