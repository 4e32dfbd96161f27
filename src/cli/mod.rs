//! The command-line front door: parse arguments (two layers: clap syntax, then a resolved
//! `ops::Request`), run the request, print through [`output`], return the exit code.
//!
//! What it does not do: any format work (ops and formats do), or print anywhere but through
//! [`output`].

pub mod args;
mod audit;
mod baseline;
mod batch;
mod config;
mod ig;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod ordered;
pub mod output;
mod redact_tree;
mod report;
mod stream;
mod terminology;
pub mod usage;

use std::ffi::OsString;

use clap::Parser;

use crate::call::Tool;
use crate::diag::Code;
use crate::error::{exit, exit_code_for};
use crate::formats::Format;
use crate::keys::Key;
use crate::ops::{self, Command, Request, Source};
use crate::policy::Policy;
use std::sync::Arc;

use args::{Cli, Cmd, InputArgs, SyntaxArg};
use output::Style;

/// Runs the command line; returns the process exit code.
pub fn run(argv: Vec<OsString>) -> u8 {
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e, &argv),
    };
    init_logging();
    run_parsed(cli)
}

/// Runs a parsed command line (also the `phiward-mcp` binary's, as `mcp`): the audit log
/// opened first when asked for, the command, its audit line.
fn run_parsed(cli: Cli) -> u8 {
    let log = match &cli.audit.audit_log {
        Some(path) => match audit::open(path, cli.audit.audit_key_file.as_deref()) {
            Ok(log) => Some(log),
            Err(code) => {
                output::failure(code, None);
                return exit_code_for(code);
            }
        },
        None => None,
    };
    let Some(log) = log.map(Arc::new) else {
        return dispatch(cli.command, None, &mut audit::Record::default());
    };
    let op = op_name(&cli.command);
    let policy = policy_identity(&cli.command);
    let mut record = audit::Record::default();
    if let Some(path) = single_input(&cli.command) {
        if let Some(d) = std::fs::read(path).ok().and_then(|b| log.digest(&b)) {
            record.inputs.push(d);
        }
    }
    let exit = dispatch(cli.command, Some(&log), &mut record);
    let policy = policy.as_ref().map(|(n, d)| (n.as_str(), d.clone()));
    if let Err(code) = log.append(op, policy, exit, &record) {
        output::failure(code, None);
        return exit_code_for(code);
    }
    exit
}

/// The command's name in the audit log (`policy check`, `validate`...).
fn op_name(cmd: &Cmd) -> &'static str {
    match cmd {
        Cmd::Parse(_) => "parse",
        Cmd::Validate(_) => "validate",
        Cmd::Inspect(_) => "inspect",
        Cmd::Fmt(_) => "fmt",
        Cmd::Convert(_) => "convert",
        Cmd::Redact(_) => "redact",
        Cmd::Ack(_) => "ack",
        Cmd::Policy(args::PolicyCmd::Check(_)) => "policy check",
        Cmd::Policy(args::PolicyCmd::Test(_)) => "policy test",
        Cmd::Mcp(_) => "mcp",
        Cmd::Ig(args::IgCmd::List(_)) => "ig list",
        Cmd::Ig(args::IgCmd::Info(_)) => "ig info",
        Cmd::FindEquivalent(_) => "find-equivalent",
        Cmd::MapCodes(_) => "map-codes",
        Cmd::Terminology(args::TerminologyCmd::List(_)) => "terminology list",
        Cmd::Terminology(args::TerminologyCmd::Import(_)) => "terminology import",
        Cmd::Audit(_) => "audit verify",
        Cmd::Completions(_) => "completions",
        Cmd::Man => "man",
    }
}

/// The one input file of a single-input command (for its keyed digest), when it is a file.
fn single_input(cmd: &Cmd) -> Option<&std::path::Path> {
    let read = match cmd {
        Cmd::Parse(a) => &a.read,
        Cmd::Fmt(a) => &a.read,
        Cmd::Convert(a) => &a.read,
        Cmd::Redact(a) => &a.read,
        Cmd::Ack(a) => &a.read,
        _ => return None,
    };
    (read.input.as_os_str() != "-" && read.input.is_file()).then_some(read.input.as_path())
}

/// The policy's name and the SHA-256 of its file (Safe Harbor's text for `redact` without one).
fn policy_identity(cmd: &Cmd) -> Option<(String, String)> {
    let path = match cmd {
        Cmd::Parse(a) => a.policy.policy.as_ref(),
        Cmd::Fmt(a) => a.policy.policy.as_ref(),
        Cmd::Convert(a) => a.policy.policy.as_ref(),
        Cmd::Ack(a) => a.policy.policy.as_ref(),
        Cmd::Redact(a) => match &a.policy.policy {
            Some(p) => Some(p),
            None => {
                let text = crate::policy::SAFE_HARBOR.as_bytes();
                let name = crate::policy::load(text).ok()?.name;
                return Some((name, audit::sha256_hex(text)));
            }
        },
        Cmd::Validate(a) => a.policy.as_ref(),
        Cmd::Inspect(a) => a.policy.as_ref(),
        Cmd::Mcp(a) => a.policy.as_ref(),
        Cmd::Policy(args::PolicyCmd::Check(c)) => Some(&c.file),
        Cmd::Policy(args::PolicyCmd::Test(t)) => Some(&t.file),
        _ => None,
    }?;
    let bytes = std::fs::read(path).ok()?;
    let name = crate::policy::load(&bytes).map(|p| p.name).unwrap_or_default();
    Some((name, audit::sha256_hex(&bytes)))
}

/// Runs the command.
fn dispatch(command: Cmd, log: Option<&Arc<audit::Log>>, record: &mut audit::Record) -> u8 {
    match command {
        Cmd::Parse(a) if a.stream.json_lines() => {
            let mut base = a.select.arguments().unwrap_or_default();
            let model = if a.model == args::ModelArg::Named { "named" } else { "positional" };
            base.insert("model".into(), model.into());
            run_stream(Tool::Parse, a.into(), base, Stream::default(), record)
        }
        Cmd::Parse(a) => run_input(Command::Parse, a.into(), false),
        Cmd::Validate(mut v) => {
            let strict = v.strict;
            let fhir = match v.checks() {
                Ok(c) => c,
                Err(flag) => {
                    let takes = if flag == "--now" {
                        "an RFC 3339 instant with an offset (2026-01-31T12:00:00Z)"
                    } else {
                        "RULE=URL: RULE is Type, Type:N or N"
                    };
                    output::failure_hint(Code::CLI_USAGE, &format!("{flag} takes {takes}"));
                    return exit::USAGE;
                }
            };
            let structures = match ig::structures(&v.packages, &v.profiles, v.must_support) {
                Ok(s) => s,
                Err(exit) => return exit,
            };
            // The process ends with the command: the conformance store (thousands of indexed
            // definitions, the used ones parsed) is left to the operating system instead of
            // being freed piece by piece at exit, as compilers do. Here only: the MCP server
            // and the library drop theirs.
            if let Some(s) = &structures {
                std::mem::forget(Arc::clone(s));
            }
            let loaded =
                |url: &str| structures.as_ref().is_some_and(|c| c.conformance.structure_definition(url).is_some());
            if fhir.bundle_profiles.iter().any(|b| !loaded(&b.profile)) {
                output::failure_hint(
                    Code::CLI_USAGE,
                    "--bundle-profile names no StructureDefinition of the packages --ig loads",
                );
                return exit::USAGE;
            }
            if v.stream.json_lines() {
                let conflict = (v.batch.any() || v.quiet).then_some("batch options and --quiet");
                let stream = Stream { strict, structures, conflict, ..Stream::default() };
                let base = crate::call::checks_arguments(&fhir);
                return run_stream(Tool::Validate, v.into(), base, stream, record);
            }
            let batch = std::mem::take(&mut v.batch);
            if batch.any() || v.read.input.is_dir() {
                let a = InputArgs { structures, fhir, ..v.into() };
                return batch::run(Command::Validate, a, batch, strict, log.map(|l| &**l), record);
            }
            run_input(Command::Validate, InputArgs { structures, fhir, ..v.into() }, strict)
        }
        Cmd::Inspect(a) if a.stream.json_lines() => {
            let conflict = (a.batch.any() || a.quiet).then_some("batch options and --quiet");
            let mut base = serde_json::Map::new();
            let detail = if a.detail == args::DetailArg::Inventory { "inventory" } else { "summary" };
            base.insert("detail".into(), detail.into());
            run_stream(Tool::Inspect, a.into(), base, Stream { conflict, ..Stream::default() }, record)
        }
        Cmd::Inspect(mut a) => {
            let batch = std::mem::take(&mut a.batch);
            let command = Command::Inspect { detail: a.detail.into() };
            if batch.any() || a.read.input.is_dir() {
                return batch::run(command, a.into(), batch, false, log.map(|l| &**l), record);
            }
            run_input(command, a.into(), false)
        }
        Cmd::Fmt(f) => {
            let to = f.to.map(|t| match t {
                SyntaxArg::Json => ops::Syntax::Json,
                SyntaxArg::Xml => ops::Syntax::Xml,
            });
            let check = f.check;
            run_input_to(Command::Fmt { check }, f.into(), false, to)
        }
        Cmd::Convert(c) if c.stream.json_lines() => {
            let convert = match convert_options(&c) {
                Ok(o) => o,
                Err(exit) => return exit,
            };
            let mut base = c.select.arguments().unwrap_or_default();
            let bundle_type = match c.bundle_type {
                args::BundleTypeArg::Message => "message",
                args::BundleTypeArg::Collection => "collection",
                args::BundleTypeArg::Transaction => "transaction",
            };
            base.insert("bundle_type".into(), bundle_type.into());
            if let Some(minutes) = c.default_timezone {
                base.insert("default_timezone".into(), offset_text(minutes).into());
            }
            let input = InputArgs { policy: c.policy.policy, key_file: c.policy.key_file, ..InputArgs::new(c.read) };
            run_stream(Tool::Convert, input, base, Stream { convert, ..Stream::default() }, record)
        }
        Cmd::Convert(c) => run_convert(c),
        Cmd::Ack(a) => {
            let ack = match a.ack_type {
                args::AckTypeArg::Ack999 => ops::AckType::Functional,
                args::AckTypeArg::Ta1 => ops::AckType::Interchange,
            };
            run_input(Command::Ack(ack), a.into(), false)
        }
        Cmd::Redact(mut r) if r.stream.json_lines() => {
            let tree = r.take_tree();
            let lf = r.line_ending.line_ending != args::LineEnding::Auto;
            let conflict =
                (tree.any() || r.manifest.is_some() || lf).then_some("--out-dir, --manifest and --line-ending");
            run_stream(Tool::Redact, r.into(), serde_json::Map::new(), Stream { conflict, ..Stream::default() }, record)
        }
        Cmd::Redact(mut r) => {
            let tree = r.take_tree();
            if tree.any() || r.read.input.is_dir() {
                let line_ending = matches!(r.line_ending.line_ending, args::LineEnding::Lf);
                let manifest = r.manifest.is_some();
                return redact_tree::run(r.into(), tree, line_ending, manifest, record);
            }
            run_redact(r)
        }
        Cmd::Policy(args::PolicyCmd::Check(c)) => policy_check(&c),
        Cmd::Policy(args::PolicyCmd::Test(t)) => policy_test(&t),
        Cmd::Mcp(m) => run_mcp(m, log.cloned()),
        Cmd::Ig(args::IgCmd::List(l)) => ig::list(&l),
        Cmd::Ig(args::IgCmd::Info(i)) => ig::info(&i),
        Cmd::FindEquivalent(f) => terminology::find(f),
        Cmd::MapCodes(m) => terminology::map_codes(m),
        Cmd::Terminology(args::TerminologyCmd::List(l)) => terminology::list(l),
        Cmd::Terminology(args::TerminologyCmd::Import(i)) => terminology::import(i),
        Cmd::Audit(args::AuditCmd::Verify(v)) => audit::verify_cli(&v.file, v.head.as_deref()),
        Cmd::Completions(c) => generated(|cmd, out| {
            clap_complete::generate(c.shell, cmd, "phiward", out);
            Ok(())
        }),
        Cmd::Man => generated(|cmd, out| clap_mangen::Man::new(cmd.clone()).render(out)),
    }
}

/// What a json-lines run takes beside its input arguments.
#[derive(Default)]
struct Stream {
    /// `validate --strict`.
    strict: bool,
    /// `validate --ig/--profile`.
    structures: Option<Arc<crate::structure::Context>>,
    /// Options given that a record stream does not take, named for the usage error.
    conflict: Option<&'static str>,
    /// `convert`: the naming systems and the id key, read once, shared by every record.
    convert: crate::convert::Options,
}

/// `--input-format json-lines` (`stream`): the policy, key and limits resolved once, the
/// command's options as the tool arguments of every record, then one result line per input
/// line. Options the stream does not take are a usage error, as is a directory.
fn run_stream(
    tool: Tool,
    a: InputArgs,
    mut base: serde_json::Map<String, serde_json::Value>,
    stream: Stream,
    record: &mut audit::Record,
) -> u8 {
    if let Some(flags) = stream.conflict {
        output::failure_hint(Code::CLI_USAGE, &format!("{flags} are not valid with --input-format json-lines"));
        return exit::USAGE;
    }
    if a.unsafe_show_values {
        return usage_argument("unsafe_show_values");
    }
    if a.input.is_dir() {
        output::failure(Code::CLI_NO_INPUT, None);
        return exit_code_for(Code::CLI_NO_INPUT);
    }
    let command = match tool {
        Tool::Parse => Command::Parse,
        Tool::Validate => Command::Validate,
        Tool::Inspect => Command::Inspect { detail: crate::formats::codec::Detail::Summary },
        Tool::Convert => Command::Convert,
        Tool::Redact => Command::Redact,
    };
    let (policy, key) = match policy_and_key(command, &a) {
        Ok(pk) => pk,
        Err(exit) => return exit,
    };
    let limits = match &policy {
        Some(p) => p.apply_limits(a.limits.limits()),
        None => a.limits.limits(),
    };
    if let Some(format) = &a.format {
        base.insert("format".into(), format.clone().into());
    }
    if a.ndjson {
        base.insert("ndjson".into(), true.into());
    }
    // A record's data is whole, as the single-record CLI prints it: no paging (an MCP reply's
    // default size limit is for an agent's context, not for a data pipeline).
    base.insert("max_bytes".into(), 0.into());
    let config = crate::call::Config {
        limits,
        policy,
        key,
        strict: stream.strict,
        structures: stream.structures,
        every_tool: true,
        convert: stream.convert,
        ..crate::call::Config::default()
    };
    let mut counts = stream::Counts::default();
    let exit = stream::run(tool, &a.input, &config, &base, &mut counts);
    record.counts = Some(serde_json::json!({
        "lines": counts.lines,
        "success": counts.success,
        "verdict": counts.verdict,
        "failed": counts.failed,
    }));
    record.codes.extend(counts.codes.iter().map(|c| c.as_str().to_owned()));
    exit
}

/// `±HH:MM` of an offset in minutes (what `--default-timezone` read).
fn offset_text(minutes: i16) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let m = minutes.unsigned_abs();
    format!("{sign}{:02}:{:02}", m / 60, m % 60)
}

/// Prints what `write` generates from the command-line definition (completions, man page).
fn generated(write: impl FnOnce(&mut clap::Command, &mut Vec<u8>) -> std::io::Result<()>) -> u8 {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    if write(&mut cmd, &mut out).is_err() || output::text(&String::from_utf8_lossy(&out)).is_err() {
        output::failure(Code::CLI_OUTPUT_FAILED, None);
        return exit::IOERR;
    }
    exit::OK
}

fn run_convert(c: args::ConvertArgs) -> u8 {
    let options = match convert_options(&c) {
        Ok(o) => o,
        Err(exit) => return exit,
    };
    let input = InputArgs { json: c.json, select: c.select.arguments(), ..InputArgs::new(c.read) };
    let input = InputArgs { policy: c.policy.policy, key_file: c.policy.key_file, ..input };
    run_request(Command::Convert, input, false, None, options, None)
}

/// `convert`'s options, its files read (an unreadable one printed as its option's failure).
fn convert_options(c: &args::ConvertArgs) -> Result<crate::convert::Options, u8> {
    let args::TargetArg::Fhir = c.to;
    let mut options = crate::convert::Options {
        bundle_type: match c.bundle_type {
            args::BundleTypeArg::Message => crate::convert::BundleType::Message,
            args::BundleTypeArg::Collection => crate::convert::BundleType::Collection,
            args::BundleTypeArg::Transaction => crate::convert::BundleType::Transaction,
        },
        default_offset_minutes: c.default_timezone,
        ..crate::convert::Options::default()
    };
    if let Some(path) = &c.naming_systems {
        match crate::convert::naming::NamingSystems::from_file(path) {
            Ok(n) => options.naming = Arc::new(n),
            Err(e) => return Err(option_file_failure(e.code(), Code::CLI_NAMING_SYSTEMS_UNREADABLE)),
        }
    }
    if let Some(path) = &c.id_key_file {
        match crate::keys::Key::from_file(path) {
            Ok(k) => options.key = Some(Arc::new(k)),
            Err(e) => return Err(option_file_failure(e.code(), Code::CLI_ID_KEY_FILE_UNREADABLE)),
        }
    }
    Ok(options)
}

/// A selection flag that is not valid, or applies to nothing in the input (`--paths` on an HL7
/// v2 message): `CLI_USAGE` naming the flag, exit 2, nothing on stdout.
fn usage_argument(argument: &str) -> u8 {
    let flag = argument.replace('_', "-");
    output::failure_hint(Code::CLI_USAGE, &format!("--{flag} is not valid here or applies to nothing in the input"));
    exit::USAGE
}

/// The failure of an option's file: a file that cannot be read is the option's own code
/// (`CLI_KEY_FILE_UNREADABLE`...), never `CLI_NO_INPUT` (which is about the input) and never
/// its path; any other failure (a key too short) keeps its code.
fn option_file_failure(code: Code, unreadable: Code) -> u8 {
    let code = if code == Code::CLI_NO_INPUT { unreadable } else { code };
    output::failure(code, None);
    exit_code_for(code)
}

/// `policy check`: load, then lint; findings on stdout.
fn policy_check(c: &args::PolicyCheckArgs) -> u8 {
    let findings = match crate::policy::load_file(&c.file) {
        Ok(p) => crate::policy::lint::lint(&p),
        Err(e) if e.line == 0 => return option_file_failure(e.code, Code::CLI_POLICY_UNREADABLE),
        Err(e) => vec![e.diagnostic()],
    };
    if output::findings(&findings, c.json).is_err() {
        return exit::IOERR;
    }
    if findings.is_empty() { exit::OK } else { exit::INVALID }
}

/// `policy test`: the marker audit (`policy::audit`); the report on stdout.
fn policy_test(t: &args::PolicyTestArgs) -> u8 {
    let fail = |code: Code, cause| {
        output::failure(code, cause);
        exit_code_for(code)
    };
    let policy = match crate::policy::load_file(&t.file) {
        Ok(p) => p,
        Err(e) if e.line == 0 => return option_file_failure(e.code, Code::CLI_POLICY_UNREADABLE),
        Err(e) => return fail(e.code, Some(e.diagnostic())),
    };
    let key = match t.key_file.as_deref().map(Key::from_file).transpose() {
        Ok(k) => k.map(Arc::new),
        Err(e) => return option_file_failure(e.code(), Code::CLI_KEY_FILE_UNREADABLE),
    };
    let report = match crate::policy::audit::run(&policy, key, &t.samples, &crate::limits::Limits::default()) {
        Ok(r) => r,
        Err(code) => return option_file_failure(code, Code::CLI_SAMPLES_UNREADABLE),
    };
    let written = if t.json { output::json_value(&report.json(), true) } else { output::text(&report.text()) };
    if written.is_err() {
        return exit::IOERR;
    }
    if report.passed() { exit::OK } else { exit::INVALID }
}

fn run_redact(r: args::RedactArgs) -> u8 {
    let manifest = r.manifest.clone();
    run_request(Command::Redact, r.into(), false, None, crate::convert::Options::default(), manifest)
}

/// clap errors: help and version go to stdout; anything else is one `CLI_USAGE` line that
/// names the argument and the fix ([`usage::hint`]), with clap's own text dropped (it quotes
/// what was typed).
pub(crate) fn usage_error(e: &clap::Error, argv: &[OsString]) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { exit::USAGE } else { exit::OK }
        }
        _ => {
            output::failure_hint(Code::CLI_USAGE, &usage::hint(e, argv));
            exit::USAGE
        }
    }
}

/// Logs go to stderr, value-free by construction (they carry codes and counts). `RUST_LOG`
/// selects the level; dependencies are capped at `warn` whatever it says (rmcp logs whole
/// requests at debug).
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let base = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned());
    let directives = format!("{base},rmcp=off,tokio=warn,clap=warn,clap_builder=warn");
    let filter = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new("warn"));
    // The directives above can be outdone by a more specific one (`RUST_LOG=rmcp::service=trace`):
    // this second filter caps the dependencies whatever `RUST_LOG` says. rmcp is off: at every
    // level it can log what the client sent (a request id, a method name, a panic's text).
    let cap = tracing_subscriber::filter::filter_fn(|meta| {
        if meta.target().starts_with("rmcp") {
            return false;
        }
        let dependency = ["tokio", "clap"].iter().any(|d| meta.target().starts_with(d));
        !dependency || *meta.level() <= tracing::Level::WARN
    });
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .without_time()
        .finish()
        .with(cap);
    let _ = subscriber.try_init();
}

/// The format and framing `--format` names (clap accepted only the registry's names).
pub(super) fn format_of(name: &str) -> (Option<Format>, Option<crate::formats::codec::Framing>) {
    match crate::formats::resolve(name) {
        Some((format, framing)) => (Some(format), framing),
        None => (None, None),
    }
}

fn run_input(command: Command, a: InputArgs, strict: bool) -> u8 {
    run_input_to(command, a, strict, None)
}

fn run_input_to(command: Command, a: InputArgs, strict: bool, to: Option<ops::Syntax>) -> u8 {
    run_request(command, a, strict, to, crate::convert::Options::default(), None)
}

/// The policy and key of a request: `--policy` (Safe Harbor for `redact` without one) and
/// `--key-file`. Errors are printed here.
/// A resolved policy and key.
type PolicyAndKey = (Option<Arc<Policy>>, Option<Arc<Key>>);

pub(super) fn policy_and_key(command: Command, a: &InputArgs) -> Result<PolicyAndKey, u8> {
    let key = match &a.key_file {
        Some(path) => match Key::from_file(path) {
            Ok(k) => Some(Arc::new(k)),
            Err(e) => return Err(option_file_failure(e.code(), Code::CLI_KEY_FILE_UNREADABLE)),
        },
        None => None,
    };
    let loaded = match (&a.policy, command) {
        (Some(path), _) => Some(crate::policy::load_file(path)),
        (None, Command::Redact) => Some(crate::policy::load(crate::policy::SAFE_HARBOR.as_bytes())),
        (None, _) => None,
    };
    let policy = match loaded {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) if e.line == 0 => return Err(option_file_failure(e.code, Code::CLI_POLICY_UNREADABLE)),
        Some(Err(e)) => {
            output::failure(e.code, Some(e.diagnostic()));
            return Err(exit_code_for(e.code));
        }
    };
    if let Some(p) = &policy {
        let redacting = command == Command::Redact || p.disclosure == crate::policy::Disclosure::Redacted;
        if redacting && matches!(command, Command::Parse | Command::Fmt { .. } | Command::Redact) {
            if let Err(e) = p.check_key(key.is_some()) {
                output::failure(e.code, Some(e.diagnostic()));
                return Err(exit_code_for(e.code));
            }
        }
        if a.unsafe_show_values && !p.allow_unsafe_show_values {
            output::failure(Code::POLICY_SHOW_VALUES_FORBIDDEN, None);
            return Err(exit_code_for(Code::POLICY_SHOW_VALUES_FORBIDDEN));
        }
    }
    Ok((policy.map(Arc::new), key))
}

#[expect(clippy::disallowed_methods, reason = "the operator's --unsafe-show-values door")]
fn run_request(
    command: Command,
    a: InputArgs,
    strict: bool,
    to: Option<ops::Syntax>,
    convert: crate::convert::Options,
    manifest: Option<std::path::PathBuf>,
) -> u8 {
    let controls = match a.select.clone().map(|mut m| ops::shape::Controls::read(&mut m)).transpose() {
        Ok(c) => c,
        Err(argument) => return usage_argument(argument),
    };
    let (policy, key) = match policy_and_key(command, &a) {
        Ok(pk) => pk,
        Err(exit) => return exit,
    };
    // The manifest file is created before anything is written on stdout: a failure writes
    // nothing there.
    let mut manifest_file = match &manifest {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some((f, path.clone())),
            Err(_) => {
                output::failure(Code::CLI_OUTPUT_FAILED, None);
                return exit::IOERR;
            }
        },
        None => None,
    };
    let limits = match &policy {
        Some(p) => p.apply_limits(a.limits.limits()),
        None => a.limits.limits(),
    };
    let source = if a.input.as_os_str() == "-" { Source::Stdin } else { Source::Path(a.input.clone()) };
    let style = if a.quiet
        && !matches!(command, Command::Parse | Command::Convert | Command::Fmt { check: false } | Command::Redact)
    {
        Style::Quiet
    } else if a.json {
        Style::Json
    } else if matches!(command, Command::Parse | Command::Convert) {
        Style::Pretty
    } else {
        Style::Human
    };
    let (format, framing) = a.format.as_deref().map_or((None, None), format_of);
    let request = Request {
        command,
        source,
        format,
        framing,
        limits,
        strict,
        unsafe_show_values: a.unsafe_show_values,
        // A file named `*.ndjson` is NDJSON, as in a directory walk (`--ndjson` for any other
        // name and for stdin).
        ndjson: a.ndjson || batch::is_ndjson_name(&a.input),
        to,
        convert,
        policy,
        key,
        model: a.model,
        structures: a.structures.clone(),
        fhir: a.fhir.clone(),
    };
    let lf = match a.line_ending {
        args::LineEnding::Lf => true,
        args::LineEnding::Cr => false,
        args::LineEnding::Auto => std::io::IsTerminal::is_terminal(&std::io::stdout()),
    };
    let words = if matches!(command, Command::Fmt { check: true }) {
        ("canonical", "not canonical")
    } else {
        ("valid", "invalid")
    };
    let mut sink = output::Stdout::new(style).with_words(words).with_lf(lf && command.discloses());
    let outcome = match &controls {
        Some(controls) => {
            let mut shaping = output::Shaping::new(&mut sink, controls);
            let outcome = ops::run(request, &mut shaping);
            if let Some(argument) = shaping.rejected() {
                return usage_argument(argument);
            }
            outcome
        }
        None => ops::run(request, &mut sink),
    };
    tracing::debug!(exit = outcome.exit, multi = outcome.multi, "request finished");
    let flushed = sink.human_summary(&outcome).and_then(|()| sink.flush());
    if outcome.code.is_some() || flushed.is_err() {
        // No manifest for a run that failed.
        if let Some((file, path)) = manifest_file.take() {
            drop(file);
            let _ = std::fs::remove_file(path);
        }
    }
    if let Some(code) = outcome.code {
        output::failure(code, outcome.cause);
        if let Some((excerpt, disclosure)) = &outcome.excerpt {
            output::unsafe_excerpt(excerpt.expose_value(disclosure));
        }
        return outcome.exit;
    }
    if flushed.is_err() {
        output::failure(Code::CLI_OUTPUT_FAILED, None);
        return exit::IOERR;
    }
    if let (Some((mut file, _)), Some(m)) = (manifest_file, &outcome.manifest) {
        if std::io::Write::write_all(&mut file, m).and_then(|()| file.sync_all()).is_err() {
            output::failure(Code::CLI_OUTPUT_FAILED, None);
            return exit::IOERR;
        }
    }
    if outcome.records.failed > 0 {
        output::records_failed(&outcome.records);
    }
    outcome.exit
}

#[cfg(feature = "mcp")]
fn run_mcp(m: args::McpArgs, log: Option<Arc<audit::Log>>) -> u8 {
    let hook = log.map(|log| {
        crate::mcp::dispatch::CallHook(Arc::new(move |r: &crate::mcp::dispatch::CallRecord<'_>| log.append_call(r)))
    });
    mcp::serve_cli(m, hook)
}

#[cfg(not(feature = "mcp"))]
fn run_mcp(_m: args::McpArgs, _log: Option<Arc<audit::Log>>) -> u8 {
    output::failure_with(Code::CLI_PARSER_UNAVAILABLE, "the MCP server needs the cargo feature `mcp`");
    exit::UNAVAILABLE
}
