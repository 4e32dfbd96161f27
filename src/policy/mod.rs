//! The policy language: declared, fail-closed de-identification (`policy/README.md`).
//!
//! A policy is a TOML file: a `[policy]` table (name, disclosure over MCP, allowed tools, whether
//! `--unsafe-show-values` is allowed), optional `[limits]`, and two ordered rule lists,
//! `[[hl7v2]]` and `[[fhir]]`, each rule a `select`or and an `action` (with its parameters). For
//! every value the first rule that matches decides; a value no rule matches is removed.
//!
//! Loading never shows the file's text nor `toml`'s messages (they quote it): a policy that does
//! not load is a [`LoadError`], a code and the 1-based line and column of the offending key or
//! value (computed from `toml`'s byte spans).
//!
//! What it does not do: read the values of a message (the engines in [`hl7v2`] and [`fhir`] do,
//! as data-channel writers), or read key files (see `keys`).

pub mod action;
pub mod astm;
pub mod audit;
pub mod ccda;
pub mod dicom;
mod dicom_clean;
pub mod dicom_deid;
mod dicom_keep;
mod engine;
pub mod fhir;
mod fhir_keep;
pub mod hl7v2;
mod hl7v2_keep;
pub mod lint;
pub mod manifest;
pub mod ncpdp;
pub mod ncpdp_script;
pub mod proof;
pub mod select;
pub mod x12;

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::diag::{Code, Diagnostic, Location};
use crate::limits::Limits;

pub use action::Action;
pub use engine::Redacts;

/// Largest policy file read.
pub const MAX_POLICY_BYTES: usize = 1024 * 1024;
/// Most rules in one list.
pub const MAX_RULES: usize = 10_000;

/// The Safe Harbor policy shipped with phiward (the default of `redact`).
pub const SAFE_HARBOR: &str = include_str!("../../policy/safe-harbor.toml");
/// The limited data set policy shipped with phiward.
pub const LIMITED_DATA_SET: &str = include_str!("../../policy/limited-data-set.toml");
/// The MCP starting point shipped with phiward.
pub const AGENT: &str = include_str!("../../policy/agent.toml");

/// What the MCP server (and the CLI's data commands run under `--policy`) hand out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Disclosure {
    /// Data is redacted by the policy before it leaves the process.
    Redacted,
    /// Data is passed as asked.
    Full,
}

/// A policy that loaded.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The policy's declared name (from the policy file, not from any message).
    pub name: String,
    /// SHA-256 of the policy file's bytes (hex).
    pub digest: String,
    /// Disclosure over MCP and under `--policy`.
    pub disclosure: Disclosure,
    /// Tools an agent may call (`None`: all).
    pub tools: Option<Vec<String>>,
    /// Whether `--unsafe-show-values` may be used.
    pub allow_unsafe_show_values: bool,
    /// Input limits (each tightens the caller's).
    pub limits: PolicyLimits,
    /// HL7 v2 rules, in order.
    pub hl7v2: Vec<hl7v2::Rule>,
    /// FHIR rules, in order.
    pub fhir: Vec<fhir::Rule>,
    /// X12 rules, in order.
    pub x12: Vec<x12::Rule>,
    /// ASTM rules, in order.
    pub astm: Vec<astm::Rule>,
    /// DICOM rules, in order.
    pub dicom: Vec<dicom::Rule>,
    /// `dicom_burned_in_annotation`: what `redact` does with a DICOM file whose pixel data may
    /// show burned-in text.
    pub dicom_burned_in: dicom_deid::BurnedIn,
    /// `dicom_deidentification_method`: the PS3.15 profile and options the policy declares it
    /// applies (indexes of [`dicom_deid::METHODS`], ascending), written as (0012,0064).
    pub dicom_methods: Vec<usize>,
    /// NCPDP Telecommunication D.0 rules, in order.
    pub ncpdp: Vec<ncpdp::Rule>,
    /// C-CDA rules, in order.
    pub ccda: Vec<ccda::Rule>,
    /// NCPDP SCRIPT rules (`[[ncpdp-script]]`), in order.
    pub ncpdp_script: Vec<ncpdp_script::Rule>,
}

/// Limits a policy sets.
#[derive(Copy, Clone, Debug, Default)]
pub struct PolicyLimits {
    max_input_bytes: Option<u64>,
    max_segments: Option<u32>,
    max_field_bytes: Option<u32>,
    max_depth: Option<u32>,
    max_records: Option<u64>,
}

impl Policy {
    /// Each limit is the smaller of `limits` and the policy's.
    pub fn apply_limits(&self, limits: Limits) -> Limits {
        let p = &self.limits;
        Limits {
            max_input_bytes: p.max_input_bytes.map_or(limits.max_input_bytes, |v| v.min(limits.max_input_bytes)),
            max_segments: p.max_segments.map_or(limits.max_segments, |v| v.min(limits.max_segments)),
            max_field_bytes: p.max_field_bytes.map_or(limits.max_field_bytes, |v| v.min(limits.max_field_bytes)),
            max_depth: p.max_depth.map_or(limits.max_depth, |v| v.min(limits.max_depth)),
            max_records: p.max_records.map_or(limits.max_records, |v| v.min(limits.max_records)),
        }
    }

    /// True when a tool may be called.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|t| t.iter().any(|x| x == tool))
    }

    /// True when some rule needs a key (hash, pseudonym, date_shift).
    pub fn needs_key(&self) -> bool {
        self.hl7v2.iter().any(|r| r.action.needs_key())
            || self.fhir.iter().any(|r| r.action.needs_key())
            || self.x12.iter().any(|r| r.action.needs_key())
            || self.astm.iter().any(|r| r.action.needs_key())
            || self.dicom.iter().any(|r| r.action.needs_key())
            || self.ncpdp.iter().any(|r| r.action.needs_key())
            || self.ccda.iter().any(|r| r.action.needs_key())
            || self.ncpdp_script.iter().any(|r| r.action.needs_key())
    }

    /// The first rule that needs a key, as a location.
    fn first_keyed(&self) -> Option<(u32, u32)> {
        let h = self.hl7v2.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let f = self.fhir.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let x = self.x12.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let a = self.astm.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let d = self.dicom.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let n = self.ncpdp.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let c = self.ccda.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        let s = self.ncpdp_script.iter().find(|r| r.action.needs_key()).map(|r| r.at);
        [h, f, x, a, d, n, c, s].into_iter().flatten().min()
    }

    /// Fails with `POLICY_KEY_REQUIRED` (at the first keyed rule) when a key is needed and none
    /// was given.
    pub fn check_key(&self, have_key: bool) -> Result<(), LoadError> {
        match self.first_keyed() {
            Some((line, column)) if !have_key => Err(LoadError { code: Code::POLICY_KEY_REQUIRED, line, column }),
            _ => Ok(()),
        }
    }

    /// Any rule keeps free text (a residual risk the manifest names).
    pub fn keeps_free_text(&self) -> bool {
        self.hl7v2.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.fhir.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.x12.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.astm.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.dicom.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.ncpdp.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.ccda.iter().any(|r| r.action == Action::Keep && r.free_text)
            || self.ncpdp_script.iter().any(|r| r.action == Action::Keep && r.free_text)
    }
}

/// A policy that does not load: a code and where (1-based line and column; 0 when unknown).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The code.
    pub code: Code,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl LoadError {
    /// The value-free diagnostic.
    pub fn diagnostic(self) -> Diagnostic {
        Diagnostic::new(self.code, Location::Policy { line: self.line, column: self.column })
    }
}

/// Line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or("");
    let line = before.bytes().filter(|b| *b == b'\n').count() as u32 + 1;
    let col_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(col_start..).map_or(0, |s| s.chars().count()) as u32 + 1;
    (line, column)
}

/// Where keys and values are, for errors.
pub(crate) struct Ctx<'t> {
    text: &'t str,
    /// The byte offset of each line's start: a rule's line and column are found without
    /// counting from the start of the file (a policy of hundreds of rules loaded in one pass).
    starts: Vec<usize>,
}

impl<'t> Ctx<'t> {
    fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Ctx { text, starts }
    }

    pub(crate) fn err(&self, code: Code, span: Range<usize>) -> LoadError {
        let (line, column) = self.at(span);
        LoadError { code, line, column }
    }

    /// [`line_col`] of the span's start.
    pub(crate) fn at(&self, span: Range<usize>) -> (u32, u32) {
        let offset = span.start.min(self.text.len());
        if !self.text.is_char_boundary(offset) {
            return line_col(self.text, offset);
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts.get(line.wrapping_sub(1)).copied().unwrap_or(0);
        let column = self.text.get(start..offset).map_or(0, |s| s.chars().count()) as u32 + 1;
        (line as u32, column)
    }
}

/// Loads a policy file (at most [`MAX_POLICY_BYTES`]). A file that cannot be read is
/// `CLI_NO_INPUT` (line and column 0).
pub fn load_file(path: &std::path::Path) -> Result<Policy, LoadError> {
    use std::io::Read;
    let none = |code| LoadError { code, line: 0, column: 0 };
    let file = std::fs::File::open(path).map_err(|e| none(crate::error::from_read_io(&e).code()))?;
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|_| none(Code::CLI_NO_INPUT))?;
    load(&bytes)
}

/// Loads a policy from the bytes of a policy file.
pub fn load(bytes: &[u8]) -> Result<Policy, LoadError> {
    if bytes.len() > MAX_POLICY_BYTES {
        return Err(LoadError { code: Code::CLI_INPUT_TOO_LARGE, line: 0, column: 0 });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let (line, column) =
                line_col(std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""), e.valid_up_to());
            return Err(LoadError { code: Code::POLICY_SYNTAX, line, column });
        }
    };
    let ctx = Ctx::new(text);
    let root = DeTable::parse(text).map_err(|e| ctx.err(Code::POLICY_SYNTAX, e.span().unwrap_or(0..0)))?;
    let root = root.get_ref();
    let mut policy = Policy {
        name: String::new(),
        digest: crate::keys::sha256_hex(bytes),
        disclosure: Disclosure::Redacted,
        tools: None,
        allow_unsafe_show_values: false,
        limits: PolicyLimits::default(),
        hl7v2: Vec::new(),
        fhir: Vec::new(),
        x12: Vec::new(),
        astm: Vec::new(),
        dicom: Vec::new(),
        dicom_burned_in: dicom_deid::BurnedIn::Refuse,
        dicom_methods: Vec::new(),
        ncpdp: Vec::new(),
        ccda: Vec::new(),
        ncpdp_script: Vec::new(),
    };
    let mut have_head = false;
    for (key, value) in root.iter() {
        match key.get_ref().as_ref() {
            "policy" => {
                have_head = true;
                head(&ctx, value, &mut policy)?;
            }
            "limits" => policy.limits = limits(&ctx, value)?,
            "hl7v2" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.hl7v2.push(hl7v2::Rule::build(&ctx, rule, at)?);
                }
            }
            "fhir" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.fhir.push(fhir::Rule::build(&ctx, rule, at)?);
                }
            }
            "x12" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.x12.push(x12::Rule::build(&ctx, rule, at)?);
                }
            }
            "astm" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.astm.push(astm::Rule::build(&ctx, rule, at)?);
                }
            }
            "dicom" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.dicom.push(dicom::Rule::build(&ctx, rule, at)?);
                }
            }
            "ncpdp" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.ncpdp.push(ncpdp::Rule::build(&ctx, rule, at)?);
                }
            }
            "ccda" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.ccda.push(ccda::Rule::build(&ctx, rule, at)?);
                }
            }
            "ncpdp-script" => {
                for (rule, at) in rules(&ctx, value)? {
                    policy.ncpdp_script.push(ncpdp_script::Rule::build(&ctx, rule, at)?);
                }
            }
            _ => return Err(ctx.err(Code::POLICY_UNKNOWN_KEY, key.span())),
        }
    }
    if !have_head || policy.name.is_empty() {
        return Err(LoadError { code: Code::POLICY_INVALID_VALUE, line: 1, column: 1 });
    }
    Ok(policy)
}

fn table<'a, 'i>(ctx: &Ctx<'_>, v: &'a toml::Spanned<DeValue<'i>>) -> Result<&'a DeTable<'i>, LoadError> {
    v.get_ref().as_table().ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, v.span()))
}

pub(crate) fn string<'a>(ctx: &Ctx<'_>, v: &'a toml::Spanned<DeValue<'_>>) -> Result<&'a str, LoadError> {
    v.get_ref().as_str().ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, v.span()))
}

pub(crate) fn boolean(ctx: &Ctx<'_>, v: &toml::Spanned<DeValue<'_>>) -> Result<bool, LoadError> {
    v.get_ref().as_bool().ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, v.span()))
}

pub(crate) fn integer(ctx: &Ctx<'_>, v: &toml::Spanned<DeValue<'_>>, max: u64) -> Result<u64, LoadError> {
    let bad = || ctx.err(Code::POLICY_INVALID_VALUE, v.span());
    let i = v.get_ref().as_integer().ok_or_else(bad)?;
    let digits: String = i.as_str().chars().filter(|c| *c != '_').collect();
    let digits = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0o"))
        .or_else(|| digits.strip_prefix("0b"))
        .unwrap_or(&digits);
    let n = u64::from_str_radix(digits.trim_start_matches('+'), i.radix()).map_err(|_| bad())?;
    if n > max {
        return Err(bad());
    }
    Ok(n)
}

fn head(ctx: &Ctx<'_>, v: &toml::Spanned<DeValue<'_>>, p: &mut Policy) -> Result<(), LoadError> {
    for (key, value) in table(ctx, v)?.iter() {
        match key.get_ref().as_ref() {
            "name" => {
                let name = string(ctx, value)?;
                let ok = !name.is_empty()
                    && name.len() <= 64
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
                if !ok {
                    return Err(ctx.err(Code::POLICY_INVALID_VALUE, value.span()));
                }
                p.name = name.to_owned();
            }
            "disclosure" => {
                p.disclosure = match string(ctx, value)? {
                    "redacted" => Disclosure::Redacted,
                    "full" => Disclosure::Full,
                    _ => return Err(ctx.err(Code::POLICY_INVALID_VALUE, value.span())),
                }
            }
            "allow_unsafe_show_values" => p.allow_unsafe_show_values = boolean(ctx, value)?,
            "tools" => {
                let arr =
                    value.get_ref().as_array().ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, value.span()))?;
                let mut tools = Vec::new();
                for t in arr.iter() {
                    let name = string(ctx, t)?;
                    if !KNOWN_TOOLS.contains(&name) {
                        return Err(ctx.err(Code::POLICY_INVALID_VALUE, t.span()));
                    }
                    tools.push(name.to_owned());
                }
                p.tools = Some(tools);
            }
            "description" => {
                string(ctx, value)?;
            }
            "dicom_burned_in_annotation" => {
                p.dicom_burned_in = dicom_deid::BurnedIn::parse(string(ctx, value)?)
                    .ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, value.span()))?;
            }
            "dicom_deidentification_method" => p.dicom_methods = methods(ctx, value)?,
            _ => return Err(ctx.err(Code::POLICY_UNKNOWN_KEY, key.span())),
        }
    }
    Ok(())
}

/// `dicom_deidentification_method`: names of [`dicom_deid::METHODS`]; an option needs the
/// profile (`basic`) listed too, and the two longitudinal options exclude each other (PS3.15
/// E.3.6). A name listed twice counts once.
fn methods(ctx: &Ctx<'_>, v: &toml::Spanned<DeValue<'_>>) -> Result<Vec<usize>, LoadError> {
    let bad = || ctx.err(Code::POLICY_INVALID_VALUE, v.span());
    let arr = v.get_ref().as_array().ok_or_else(bad)?;
    let mut out = Vec::new();
    for m in arr.iter() {
        let i = dicom_deid::method(string(ctx, m)?).ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, m.span()))?;
        out.push(i);
    }
    out.sort_unstable();
    out.dedup();
    let full = dicom_deid::method("retain-longitudinal-full-dates");
    let modified = dicom_deid::method("retain-longitudinal-modified-dates");
    let both = out.iter().any(|i| Some(*i) == full) && out.iter().any(|i| Some(*i) == modified);
    if !out.is_empty() && out.first() != Some(&0) || both {
        return Err(bad());
    }
    Ok(out)
}

/// Tool names a policy may list (today's and the ones being built: `convert`, `redact`).
pub const KNOWN_TOOLS: &[&str] = &["parse", "validate", "inspect", "fmt", "convert", "redact"];

fn limits(ctx: &Ctx<'_>, v: &toml::Spanned<DeValue<'_>>) -> Result<PolicyLimits, LoadError> {
    let mut l = PolicyLimits::default();
    for (key, value) in table(ctx, v)?.iter() {
        match key.get_ref().as_ref() {
            "max_input_bytes" => l.max_input_bytes = Some(integer(ctx, value, u64::MAX)?),
            "max_segments" => l.max_segments = Some(integer(ctx, value, u32::MAX.into())? as u32),
            "max_field_bytes" => l.max_field_bytes = Some(integer(ctx, value, u32::MAX.into())? as u32),
            "max_depth" => l.max_depth = Some(integer(ctx, value, u32::MAX.into())? as u32),
            "max_records" => l.max_records = Some(integer(ctx, value, u64::MAX)?),
            _ => return Err(ctx.err(Code::POLICY_UNKNOWN_KEY, key.span())),
        }
    }
    Ok(l)
}

/// One rule's table and where it starts.
pub(crate) type RuleTable<'a, 'i> = &'a DeTable<'i>;

fn rules<'a, 'i>(
    ctx: &Ctx<'_>,
    v: &'a toml::Spanned<DeValue<'i>>,
) -> Result<Vec<(RuleTable<'a, 'i>, Range<usize>)>, LoadError> {
    let arr = v.get_ref().as_array().ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, v.span()))?;
    if arr.len() > MAX_RULES {
        return Err(ctx.err(Code::POLICY_INVALID_VALUE, v.span()));
    }
    let mut out = Vec::with_capacity(arr.len());
    for r in arr.iter() {
        out.push((table(ctx, r)?, r.span()));
    }
    Ok(out)
}

/// The common fields of a rule: `select` (text and span), `action` and its parameters.
pub(crate) struct RuleParts<'a> {
    pub select: &'a str,
    pub select_span: Range<usize>,
    pub action: Action,
    pub action_span: Range<usize>,
    pub free_text: bool,
    /// `types`: the variant types a `keep` keeps (OBX-5, `value[x]`), with their spans.
    pub types: Vec<(&'a str, Range<usize>)>,
    /// `reason` was given: the policy documents what this `keep` keeps as safe.
    pub documented: bool,
    /// `otherwise`: the dummy a `keep` writes for what it cannot prove (DICOM only).
    pub otherwise: Option<String>,
    /// `vr`: the VR a DICOM `keep` of a private element checks its value against (PS3.15
    /// Table E.3.10-1's column; DICOM only), with its span.
    pub vr: Option<(&'a str, Range<usize>)>,
    /// `vm`: the value multiplicity checked with `vr` (`1`, `3-4`, `1-n`), with its span.
    pub vm: Option<(&'a str, Range<usize>)>,
    /// DICOM `action = "clean"` (its `action` is [`Action::Keep`]).
    pub clean: bool,
}

impl RuleParts<'_> {
    /// The `types` a rule lists, each one of `allowed` (the non-identifying variant types of the
    /// rule's format); any other is `POLICY_ACTION_NOT_ALLOWED` at the type.
    pub(crate) fn variant_types(
        &self,
        ctx: &Ctx<'_>,
        allowed: &[&'static str],
    ) -> Result<Vec<&'static str>, LoadError> {
        self.types
            .iter()
            .map(|(name, span)| {
                allowed
                    .iter()
                    .find(|t| *t == name)
                    .copied()
                    .ok_or_else(|| ctx.err(Code::POLICY_ACTION_NOT_ALLOWED, span.clone()))
            })
            .collect()
    }
}

pub(crate) fn rule_parts<'a>(ctx: &Ctx<'_>, t: &'a DeTable<'_>, at: Range<usize>) -> Result<RuleParts<'a>, LoadError> {
    rule_parts_in(ctx, t, at, false)
}

/// [`rule_parts`]; with `otherwise`, a `keep` may name the dummy it writes when it cannot
/// prove (`otherwise = "..."`, DICOM: a type 1 attribute stays valued), or `@hash` (the keyed
/// hash); elsewhere that key is unknown.
pub(crate) fn rule_parts_in<'a>(
    ctx: &Ctx<'_>,
    t: &'a DeTable<'_>,
    at: Range<usize>,
    otherwise_allowed: bool,
) -> Result<RuleParts<'a>, LoadError> {
    let mut select = None;
    let mut otherwise = None;
    let mut action_name = None;
    let mut params = action::Params::default();
    let mut free_text = false;
    let mut types = Vec::new();
    let mut documented = false;
    let (mut vr, mut vm) = (None, None);
    for (key, value) in t.iter() {
        match key.get_ref().as_ref() {
            "select" => select = Some((string(ctx, value)?, value.span())),
            "action" => action_name = Some((string(ctx, value)?, value.span())),
            "free_text" => free_text = boolean(ctx, value)?,
            "value" => {
                let s = string(ctx, value)?;
                if s.len() > 256 || s.bytes().any(|b| b.is_ascii_control()) {
                    return Err(ctx.err(Code::POLICY_INVALID_VALUE, value.span()));
                }
                params.value = Some(s.to_owned());
            }
            "otherwise" if otherwise_allowed => {
                let s = string(ctx, value)?;
                // `@hash`: the keyed hash, not a dummy; no other `@` name is one.
                if s.is_empty()
                    || s.len() > 64
                    || s.bytes().any(|b| !(b.is_ascii_graphic() || b == b' ') || b == b'\\')
                    || s.starts_with('@') && s != "@hash" && s != "@empty"
                {
                    return Err(ctx.err(Code::POLICY_INVALID_VALUE, value.span()));
                }
                otherwise = Some(s.to_owned());
            }
            // DICOM only, as `otherwise`.
            "vr" if otherwise_allowed => vr = Some((string(ctx, value)?, value.span())),
            "vm" if otherwise_allowed => vm = Some((string(ctx, value)?, value.span())),
            "keep_last" => params.keep_last = Some(integer(ctx, value, 8)? as u8),
            "days" => params.days = Some(integer(ctx, value, 3650)? as u32),
            "note" => {
                string(ctx, value)?;
            }
            "reason" => {
                let s = string(ctx, value)?;
                if s.trim().is_empty() || s.len() > 512 || s.bytes().any(|b| b.is_ascii_control()) {
                    return Err(ctx.err(Code::POLICY_INVALID_VALUE, value.span()));
                }
                documented = true;
            }
            "types" => {
                let arr =
                    value.get_ref().as_array().ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, value.span()))?;
                if arr.len() > 64 {
                    return Err(ctx.err(Code::POLICY_INVALID_VALUE, value.span()));
                }
                for t in arr.iter() {
                    types.push((string(ctx, t)?, t.span()));
                }
            }
            _ => return Err(ctx.err(Code::POLICY_UNKNOWN_KEY, key.span())),
        }
    }
    let (select, select_span) = select.ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, at.clone()))?;
    let (name, action_span) = action_name.ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, at.clone()))?;
    // DICOM's `clean` (PS3.15 E.1's C, `dicom_clean`): a `keep` of text proven word by word,
    // the rule's `otherwise` (a dummy, `@empty`, or nothing: removed) for the rest. It takes no
    // parameter but `otherwise` (and `reason`).
    let clean = otherwise_allowed && name == "clean";
    if clean && (params.value.is_some() || params.keep_last.is_some() || params.days.is_some()) {
        return Err(ctx.err(Code::POLICY_INVALID_VALUE, action_span));
    }
    let action = if clean {
        Action::Keep
    } else {
        Action::build(name, &params).map_err(|code| ctx.err(code, action_span.clone()))?
    };
    if (free_text || documented || !types.is_empty() || vr.is_some() || vm.is_some()) && action != Action::Keep
        || clean && (free_text || !types.is_empty() || vr.is_some() || vm.is_some())
    {
        return Err(ctx.err(Code::POLICY_INVALID_VALUE, at));
    }
    // `otherwise` on a `keep`, a DICOM `date_shift` (a dummy for a date it cannot shift), or a
    // `clean` (a dummy or `@empty`); `@empty` on nothing else.
    let otherwise_ok = match (&action, otherwise.as_deref()) {
        (_, None) => true,
        (_, Some("@empty")) => clean,
        (Action::Keep, Some(o)) => !clean || o != "@hash",
        (Action::DateShift(_), Some(o)) => o != "@hash",
        _ => false,
    };
    if !otherwise_ok {
        return Err(ctx.err(Code::POLICY_INVALID_VALUE, at));
    }
    Ok(RuleParts { select, select_span, action, action_span, free_text, types, documented, otherwise, vr, vm, clean })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line-start index gives what counting from the start gives, at every offset (past
    /// the end and inside a multi-byte character too).
    #[test]
    fn ctx_positions_are_line_col() {
        let text = "a = 1\n\n[[rule]]\nsel = \"é(0010,0010)\"\r\n  x\n\u{1F600}y\n";
        let ctx = Ctx::new(text);
        for offset in 0..text.len() + 3 {
            assert_eq!(ctx.at(offset..offset), line_col(text, offset), "offset {offset}");
        }
    }

    fn err(text: &str) -> (Code, u32, u32) {
        match load(text.as_bytes()) {
            Ok(_) => panic!("expected an error"),
            Err(e) => (e.code, e.line, e.column),
        }
    }

    #[test]
    fn shipped_policies_load() {
        for text in [SAFE_HARBOR, LIMITED_DATA_SET, AGENT] {
            match load(text.as_bytes()) {
                Ok(p) => assert!(!p.name.is_empty()),
                Err(e) => panic!("shipped policy fails: {} at {}:{}", e.code.as_str(), e.line, e.column),
            }
        }
    }

    /// `otherwise` (the dummy of a `keep` that cannot prove) is DICOM's, on `keep` only, one
    /// printable line without a value separator.
    #[test]
    fn otherwise_is_a_dicom_keep_key() {
        let head = "[policy]\nname = \"t\"\n";
        let ok = format!("{head}[[dicom]]\nselect = \"(0008,0100)\"\naction = \"keep\"\notherwise = \"REDACTED\"\n");
        assert!(load(ok.as_bytes()).is_ok());
        assert_eq!(
            err(&format!("{head}[[dicom]]\nselect = \"(0008,0100)\"\naction = \"remove\"\notherwise = \"X\"\n")).0,
            Code::POLICY_INVALID_VALUE
        );
        assert_eq!(
            err(&format!("{head}[[dicom]]\nselect = \"(0008,0100)\"\naction = \"keep\"\notherwise = \"a\\\\b\"\n")).0,
            Code::POLICY_INVALID_VALUE
        );
        assert_eq!(
            err(&format!("{head}[[hl7v2]]\nselect = \"PID-5\"\naction = \"keep\"\notherwise = \"X\"\n")).0,
            Code::POLICY_UNKNOWN_KEY
        );
        // `@hash` names the keyed hash; another `@` name is neither it nor a dummy.
        let hash = format!("{head}[[dicom]]\nselect = \"@UI\"\naction = \"keep\"\notherwise = \"@hash\"\n");
        let p = load(hash.as_bytes()).expect("@hash loads");
        assert_eq!(p.dicom[0].otherwise, Some(dicom::Otherwise::Hash));
        let (code, line, column) =
            err(&format!("{head}[[dicom]]\nselect = \"@UI\"\naction = \"keep\"\notherwise = \"@hmac\"\n"));
        assert_eq!((code, line, column), (Code::POLICY_INVALID_VALUE, 6, 13));
        // A DICOM `date_shift` may name the dummy of a date it cannot shift; not `@hash`.
        let shift =
            |o: &str| format!("{head}[[dicom]]\nselect = \"(0008,0020)\"\naction = \"date_shift\"\ndays = 30\n{o}");
        let p = load(shift("otherwise = \"19000101\"\n").as_bytes()).expect("a dummy loads");
        assert_eq!(p.dicom[0].otherwise, Some(dicom::Otherwise::Dummy("19000101".into())));
        assert!(load(shift("").as_bytes()).is_ok());
        assert_eq!(err(&shift("otherwise = \"@hash\"\n")).0, Code::POLICY_INVALID_VALUE);
    }

    #[test]
    fn errors_have_line_and_column() {
        let head = "[policy]\nname = \"t\"\n";
        assert_eq!(
            err(&format!("{head}[[hl7v2]]\nselect = \"PID-5\"\naction = \"shred\"\n")),
            (Code::POLICY_UNKNOWN_ACTION, 5, 10)
        );
        assert_eq!(
            err(&format!("{head}[[hl7v2]]\nselect = \"QQQ-5\"\naction = \"keep\"\n")).0,
            Code::POLICY_UNKNOWN_SELECTOR
        );
        assert_eq!(
            err(&format!("{head}[[hl7v2]]\nselect = \"@XPN\"\naction = \"generalize_date\"\n")).0,
            Code::POLICY_ACTION_NOT_ALLOWED
        );
        assert_eq!(err(&format!("{head}bogus = 1\n")), (Code::POLICY_UNKNOWN_KEY, 3, 1));
        assert_eq!(err("[policy\n").0, Code::POLICY_SYNTAX);
        assert_eq!(
            err(&format!("{head}[[fhir]]\nselect = \"Patient.name\"\naction = \"empty\"\n")).0,
            Code::POLICY_ACTION_NOT_ALLOWED
        );
    }

    /// The DICOM settings of `[policy]`: burned-in annotation (default refuse; unknown values
    /// are errors) and the declared de-identification methods (names of CID 7050; an option
    /// needs the profile; the two longitudinal options exclude each other).
    #[test]
    fn dicom_settings_load_or_fail_at_their_value() {
        let head = "[policy]\nname = \"t\"\n";
        let p = load(head.as_bytes()).expect("loads");
        assert_eq!(p.dicom_burned_in, dicom_deid::BurnedIn::Refuse);
        assert!(p.dicom_methods.is_empty());
        let ok = format!(
            "{head}dicom_burned_in_annotation = \"accept-residual-risk\"\ndicom_deidentification_method = [\"retain-uids\", \"basic\", \"basic\"]\n"
        );
        let p = load(ok.as_bytes()).expect("loads");
        assert_eq!(p.dicom_burned_in, dicom_deid::BurnedIn::AcceptResidualRisk);
        assert_eq!(p.dicom_methods, [0, dicom_deid::method("retain-uids").expect("known")]);
        assert_eq!(err(&format!("{head}dicom_burned_in_annotation = \"yes\"\n")), (Code::POLICY_INVALID_VALUE, 3, 30));
        assert_eq!(err(&format!("{head}dicom_burned_in_annotation = true\n")).0, Code::POLICY_INVALID_VALUE);
        assert_eq!(
            err(&format!("{head}dicom_deidentification_method = [\"basic\", \"bogus\"]\n")),
            (Code::POLICY_INVALID_VALUE, 3, 43)
        );
        assert_eq!(
            err(&format!("{head}dicom_deidentification_method = [\"retain-uids\"]\n")).0,
            Code::POLICY_INVALID_VALUE
        );
        let both = "[\"basic\", \"retain-longitudinal-full-dates\", \"retain-longitudinal-modified-dates\"]";
        assert_eq!(err(&format!("{head}dicom_deidentification_method = {both}\n")).0, Code::POLICY_INVALID_VALUE);
        // `vr` and `vm`: on a DICOM `keep` of a private element by its creator only, a VR the
        // engine checks, a multiplicity of the standard's form.
        let rule =
            |extra: &str| format!("{head}[[dicom]]\nselect = '(0019,\"GEMS_ACQU_01\",23)'\naction = \"keep\"\n{extra}");
        assert!(load(rule("vr = \"DS\"\nvm = \"1\"\n").as_bytes()).is_ok());
        assert!(load(rule("vr = \"SQ\"\n").as_bytes()).is_ok());
        for bad in [
            "vr = \"PN\"\n",
            "vr = \"D\"\n",
            "vm = \"1\"\n",
            "vr = \"DS\"\nvm = \"0\"\n",
            "vr = \"DS\"\nvm = \"n-1\"\n",
        ] {
            assert_eq!(err(&rule(bad)).0, Code::POLICY_INVALID_VALUE, "{bad}");
        }
        let tag_rule = format!("{head}[[dicom]]\nselect = \"(0019,1023)\"\naction = \"keep\"\nvr = \"DS\"\n");
        assert_eq!(err(&tag_rule).0, Code::POLICY_INVALID_VALUE, "vr on a tag selector");
        let remove =
            format!("{head}[[dicom]]\nselect = '(0019,\"GEMS_ACQU_01\",23)'\naction = \"remove\"\nvr = \"DS\"\n");
        assert_eq!(err(&remove).0, Code::POLICY_INVALID_VALUE, "vr on a remove");
        let hl7 = "[policy]\nname = \"t\"\n[[hl7v2]]\nselect = \"PID-3\"\naction = \"keep\"\nvr = \"DS\"\n";
        assert_eq!(err(hl7).0, Code::POLICY_UNKNOWN_KEY, "vr is DICOM's");
    }

    #[test]
    fn key_required() {
        let p = load(b"[policy]\nname = \"t\"\n[[hl7v2]]\nselect = \"PID-3\"\naction = \"pseudonym\"\n");
        let p = p.unwrap_or_else(|_| panic!("loads"));
        assert_eq!(p.check_key(false).map_err(|e| (e.code, e.line)), Err((Code::POLICY_KEY_REQUIRED, 4)));
        assert!(p.check_key(true).is_ok());
    }
}
