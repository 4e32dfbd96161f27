//! Usage errors as one value-free hint: which argument, option or command is wrong, and the
//! fix clap suggests (`unknown option --formt; did you mean --format?`).
//!
//! clap's own message is never shown: it quotes what the user typed, and a positional value
//! (a file name, a term) can be patient data. The hint is built from clap's error *context*
//! instead, and only from parts that come from phiward's own definitions: argument names and
//! value names (`--format`, `FILE|-`), possible values, suggested options and commands, the
//! command path of the usage line. What the user typed is echoed in one case only, an unknown
//! option that is spelled like one (`--` and up to 40 letters, digits and hyphens, cut at `=`):
//! option names are not patient data, and naming it is what tells the user which one is wrong.
//!
//! What it does not do: print (see `output::failure_hint`), or decide the exit code (2).

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The hint for a usage error: `unknown option --formt; did you mean --format? (phiward
/// validate --help)`. Never empty, never a value the user typed (see the module doc).
pub fn hint(e: &clap::Error, argv: &[std::ffi::OsString]) -> String {
    let command = command_path(argv);
    let what = match e.kind() {
        ErrorKind::InvalidSubcommand => {
            let mut s = String::from("unknown command");
            if let Some(sub) = strings(e, ContextKind::SuggestedSubcommand).first() {
                s.push_str(&format!(", did you mean `{}`?", safe_name(sub)));
            }
            s
        }
        ErrorKind::UnknownArgument => unknown_argument(e),
        ErrorKind::InvalidValue => {
            let arg = arg_name(e).unwrap_or_else(|| "an option".to_owned());
            let valid = strings(e, ContextKind::ValidValue);
            let empty = strings(e, ContextKind::InvalidValue).first().is_none_or(String::is_empty);
            let mut s = if empty && arg.starts_with('-') {
                format!("missing value for {arg}")
            } else {
                format!("invalid value for {arg}")
            };
            if !valid.is_empty() {
                let list: Vec<String> = valid.iter().map(|v| safe_name(v)).collect();
                s.push_str(&format!("; possible values: {}", list.join(", ")));
            }
            s
        }
        ErrorKind::ValueValidation => match arg_name(e) {
            Some(arg) => format!("invalid value for {arg}"),
            None => "an invalid value".to_owned(),
        },
        ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> =
                strings(e, ContextKind::InvalidArg).iter().map(|a| strip_value_name(a)).collect();
            if missing.is_empty() {
                "a required argument is missing".to_owned()
            } else {
                format!("missing {}", missing.join(", "))
            }
        }
        ErrorKind::MissingSubcommand => "missing command".to_owned(),
        ErrorKind::ArgumentConflict => {
            let arg = arg_name(e).unwrap_or_else(|| "an option".to_owned());
            match strings(e, ContextKind::PriorArg).first() {
                Some(prior) => format!("{arg} cannot be used with {}", strip_value_name(prior)),
                None => format!("{arg} cannot be used with another option given"),
            }
        }
        ErrorKind::TooManyValues | ErrorKind::WrongNumberOfValues | ErrorKind::TooFewValues => match arg_name(e) {
            Some(arg) => format!("wrong number of values for {arg}"),
            None => "wrong number of values".to_owned(),
        },
        ErrorKind::NoEquals => match arg_name(e) {
            Some(arg) => format!("{arg} needs its value after `=`"),
            None => "an option needs its value after `=`".to_owned(),
        },
        ErrorKind::InvalidUtf8 => match arg_name(e) {
            Some(arg) => format!("{arg} is not valid UTF-8"),
            None => "an argument is not valid UTF-8".to_owned(),
        },
        _ => "the arguments do not match the command".to_owned(),
    };
    let sep = if what.ends_with('?') { " " } else { ". " };
    format!("{what}{sep}See `{command} --help`")
}

/// An unknown argument: an option (named when it is spelled like one), or a positional value
/// too many (never echoed).
fn unknown_argument(e: &clap::Error) -> String {
    let typed = strings(e, ContextKind::InvalidArg).first().cloned().unwrap_or_default();
    let suggested = strings(e, ContextKind::SuggestedArg).first().map(|s| strip_value_name(s));
    if !typed.starts_with('-') || typed == "-" {
        return match e.get(ContextKind::TrailingArg) {
            Some(ContextValue::Bool(true)) => {
                "unexpected argument (a value that starts with `-` goes after `--`)".to_owned()
            }
            _ => {
                "unexpected argument: one input per command (a second file, or a value without its option?)".to_owned()
            }
        };
    }
    let name = typed.split('=').next().unwrap_or_default();
    let spelled_like_an_option = name.len() <= 42
        && (name.starts_with("--") && name.len() > 2 || name.len() == 2)
        && name.trim_start_matches('-').bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let mut s = if spelled_like_an_option { format!("unknown option {name}") } else { "unknown option".to_owned() };
    match suggested {
        Some(arg) => s.push_str(&format!(", did you mean {arg}?")),
        None => s.push_str(" for this command"),
    }
    s
}

/// The argument a context names (`--format`, `FILE|-`), from the command's definition.
fn arg_name(e: &clap::Error) -> Option<String> {
    strings(e, ContextKind::InvalidArg).first().map(|a| strip_value_name(a))
}

/// `--format <FORMAT>` gives `--format`; `<FILE|->` gives `FILE|-`.
fn strip_value_name(arg: &str) -> String {
    let head = arg.split_whitespace().next().unwrap_or_default();
    let head = head.trim_start_matches('<').trim_end_matches("...").trim_end_matches('>');
    safe_name(head)
}

/// A name from phiward's own definitions, kept to the characters those use.
fn safe_name(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric() || "-_|.:+".contains(*c)).take(60).collect()
}

/// The strings of a context (one or several).
fn strings(e: &clap::Error, kind: ContextKind) -> Vec<String> {
    match e.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        Some(ContextValue::StyledStr(s)) => vec![s.to_string()],
        Some(ContextValue::StyledStrs(v)) => v.iter().map(ToString::to_string).collect(),
        _ => Vec::new(),
    }
}

/// `phiward validate` for an error in `phiward validate ...`: the command words the user typed
/// that name commands of phiward's definition (nothing else the user typed).
fn command_path(argv: &[std::ffi::OsString]) -> String {
    use clap::CommandFactory;
    // The `phiward-mcp` binary: its options are those of `phiward mcp`.
    let program = argv.first().and_then(|a| std::path::Path::new(a).file_name()).and_then(|n| n.to_str());
    if program == Some("phiward-mcp") {
        return "phiward-mcp".to_owned();
    }
    let mut cmd = super::args::Cli::command();
    let mut path = vec![cmd.get_name().to_owned()];
    for arg in argv.iter().skip(1) {
        let Some(arg) = arg.to_str() else { break };
        if arg.starts_with('-') {
            continue;
        }
        let Some(sub) = cmd.find_subcommand(arg).cloned() else { break };
        path.push(sub.get_name().to_owned());
        cmd = sub;
    }
    path.join(" ")
}
