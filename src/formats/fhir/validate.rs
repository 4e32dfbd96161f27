//! Validation of one FHIR resource against the R4 core definitions.
//!
//! Checks, in one walk over the element tree: the findings of reading (unknown elements,
//! JSON/XML shape), cardinality of every defined child (`CARDINALITY_MIN`/`MAX`; two types of
//! one choice element count as two occurrences), primitive syntax (`PRIMITIVE_INVALID`),
//! bindings to the bundled value sets (`CODE_INVALID` for required, `CODE_NOT_IN_VALUESET` as a
//! warning for extensible and information for preferred), references between the entries of a
//! Bundle and `fullUrl`/`id` agreement ([`super::bundle`]), and the invariants of the core
//! definitions through the FHIRPath engine ([`super::fhirpath`]).
//!
//! Findings are value-free by construction. At most [`MAX_FINDINGS`] are kept.
//!
//! Profiles: with packages loaded, those of [`super::profile`]; with none, only the vital signs
//! profile an Observation's code implies ([`super::vital_signs`]; not with
//! [`Options::core_only`]).
//!
//! What it does not do: follow `meta.profile` without packages, terminology beyond the
//! bundled expansions, reference target types, or resolution outside the input.

use std::sync::OnceLock;

use crate::diag::{Code, Diagnostic, Location, Severity};

use super::definitions::{self as defs, Kind, Strength};
use super::model::{Document, ValueKind};
use super::primitive;
use super::read_json::json_kind_of;
use super::{bundle, fhirpath, questionnaire, rules};

/// Findings beyond this count are dropped (the verdict is kept).
pub const MAX_FINDINGS: usize = 1000;

/// The capacity of the findings list at its first finding.
const FIRST_CAPACITY: usize = 64;

/// Validation options.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// Warnings are raised to errors.
    pub strict: bool,
    /// The core definitions alone: not even the vital signs profiles R4 holds an Observation to
    /// by its code ([`super::vital_signs`]). The converter checks the Bundles it writes so: what
    /// those profiles require beyond the core (an effective time, UCUM units, the vital-signs
    /// category) is the source message's content, which `validate` of the Bundle reports.
    pub core_only: bool,
}

/// Collects findings, applying `strict` and the cap.
#[derive(Debug)]
pub(super) struct Findings {
    list: Vec<Diagnostic>,
    strict: bool,
    /// True once a finding of severity error or fatal is kept.
    has_failure: bool,
}

impl Findings {
    pub(super) fn new(strict: bool) -> Self {
        Findings { list: Vec::new(), strict, has_failure: false }
    }

    /// Adds a finding with the code's default severity.
    pub(super) fn push(&mut self, code: Code, location: Location) {
        self.push_with(code, code.default_severity(), location);
    }

    /// Adds a finding with an explicit severity.
    pub(super) fn push_with(&mut self, code: Code, severity: Severity, location: Location) {
        self.push_profiled(code, severity, location, None);
    }

    /// Drops the findings of `code` at `location` (a finding a later, better informed check
    /// withdraws: an extension a loaded package defines).
    pub(super) fn retract(&mut self, code: Code, location: Location) {
        let before = self.list.len();
        self.list.retain(|d| !(d.code == code && d.location == location));
        if self.list.len() != before {
            self.has_failure = self.list.iter().any(|d| d.severity.is_failure());
        }
    }

    /// True once a finding of severity error or fatal is kept.
    pub(super) fn has_failure(&self) -> bool {
        self.has_failure
    }

    /// The findings.
    pub(super) fn into_list(self) -> Vec<Diagnostic> {
        self.list
    }

    /// Adds a finding made against a profile.
    pub(super) fn push_profiled(
        &mut self,
        code: Code,
        severity: Severity,
        location: Location,
        profile: Option<crate::diag::ProfileId>,
    ) {
        let severity = if self.strict && severity == Severity::Warning { Severity::Error } else { severity };
        let d = Diagnostic::new(code, location).with_severity(severity).with_profile(profile);
        if self.list.len() >= MAX_FINDINGS {
            // The cap never hides the verdict: a first failure replaces the last finding.
            if severity.is_failure() && !self.has_failure {
                self.list.pop();
                self.list.push(d);
                self.has_failure = true;
            }
            return;
        }
        self.has_failure |= severity.is_failure();
        if self.list.capacity() == 0 {
            // Room for a typical document's findings at once (growing one by one reallocates
            // and copies several times); none is allocated for a document without findings.
            self.list.reserve(FIRST_CAPACITY);
        }
        self.list.push(d);
    }
}

/// Validates a document, with the conformance resources it holds (a QuestionnaireResponse's
/// Questionnaire contained or in the same Bundle).
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    validate_with(doc, options, &super::checks::Checks::default(), None, &|_: &str| None)
}

/// Validates a document, against the profiles of `structures` when given (see
/// [`super::profile`]); `resolve` supplies, by canonical URL (`url` or `url|version`), the
/// conformance resources the document refers to and does not hold (a QuestionnaireResponse's
/// Questionnaire, the value sets of its answers): see [`questionnaire::Resolve`]. `checks`: the
/// optional checks of the reference validator ([`super::checks`]; none by default).
pub fn validate_with(
    doc: &Document,
    options: Options,
    checks: &super::checks::Checks,
    structures: Option<&crate::structure::Context>,
    resolve: questionnaire::Resolve<'_>,
) -> Vec<Diagnostic> {
    let mut f = Findings::new(options.strict);
    for d in doc.findings() {
        f.push_with(d.code, d.severity, d.location);
    }
    let mut counts = Counts::default();
    let rules = rules::rules();
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.is_unknown() {
            continue;
        }
        if let Some(ctx) = node.ctx {
            cardinality(doc, i, ctx, &mut counts, &mut f);
        }
        if let (Some(ty), true) = (node.ty, node.has_value()) {
            primitive_check(doc, i, ty, &mut f);
        }
        if let Some((strength, vs)) = node.elem.and_then(defs::element).and_then(|d| d.binding) {
            binding(doc, i, strength, vs, &mut f);
        }
        if let Some(r) = rules {
            r.check(doc, i, node, &mut f);
        }
    }
    bundle::check(doc, &mut f);
    super::conformance::check(doc, &mut f);
    super::valueset::check(doc, &mut f);
    questionnaire::check(doc, resolve, &mut f);
    super::measure::check(doc, resolve, &mut f);
    super::codings::check(doc, resolve, &mut f);
    super::narrative::check(doc, &mut f);
    fhirpath::check_invariants(doc, &mut f);
    super::checks::check(doc, checks, structures, &mut f);
    match structures {
        Some(ctx) => super::profile::check_into(doc, ctx, options, checks, &mut f),
        None => {
            super::extensions::report_unknown(doc, checks, &mut f);
            if !options.core_only {
                super::profile::check_implied(doc, &mut f);
            }
        }
    }
    // The room given at the first finding is not kept when most of it is unused (the findings
    // of a record may wait in the output queue).
    if f.list.capacity() > 2 * f.list.len() {
        f.list.shrink_to_fit();
    }
    f.list
}

/// True when no finding is an error or fatal.
pub fn is_valid(findings: &[Diagnostic]) -> bool {
    !findings.iter().any(|d| d.severity.is_failure())
}

/// Scratch space of [`cardinality`], reused over the nodes of a document: per element index of
/// the parent's type, `(count, first node beyond the maximum)`, and the indexes counted.
#[derive(Default)]
struct Counts {
    by_idx: Vec<(u32, u32)>,
    touched: Vec<u16>,
}

fn cardinality(doc: &Document, i: u32, ctx: defs::ElemRef, counts: &mut Counts, f: &mut Findings) {
    if doc.node(i).end <= i.saturating_add(1) && defs::required_children(ctx).is_empty() {
        // No child (a leaf, the common case) and none required: nothing to count or report.
        return;
    }
    let defs_of = defs::type_def(ctx.ty);
    if counts.by_idx.len() < defs_of.elements.len() {
        counts.by_idx.resize(defs_of.elements.len(), (0, u32::MAX));
    }
    for c in doc.children(i) {
        let child = doc.node(c);
        let Some(elem) = child.elem else { continue };
        if elem.ty != ctx.ty {
            continue;
        }
        // `elem.ty == ctx.ty`: the definition is in `defs_of` (and its slot in `by_idx`).
        let k = usize::from(elem.idx);
        let Some(def) = defs_of.elements.get(k) else { continue };
        let Some(entry) = counts.by_idx.get_mut(k) else { continue };
        if entry.0 == 0 {
            counts.touched.push(elem.idx);
            *entry = (1, if def.max == 0 { c } else { u32::MAX });
        } else {
            entry.0 += 1;
            if entry.0 == def.max.saturating_add(1) {
                entry.1 = c;
            }
        }
    }
    let count_of = |idx: u16| counts.by_idx.get(usize::from(idx)).map_or((0, u32::MAX), |&e| e);
    // Nothing to report (the common case): no count above its maximum and every required child
    // present. Otherwise the walk below finds what, in definition order.
    let within_max = counts
        .touched
        .iter()
        .all(|&idx| defs_of.elements.get(usize::from(idx)).is_none_or(|d| count_of(idx).0 <= d.max));
    let fine = within_max
        && defs::required_children(ctx).iter().all(|&r| {
            let min = defs_of.elements.get(usize::from(r)).map_or(0, |d| d.min);
            let n = count_of(r).0;
            n > 0 && n >= min
        });
    if !fine {
        report_cardinality(doc, i, ctx, defs_of, &count_of, f);
    }
    for &idx in &counts.touched {
        if let Some(e) = counts.by_idx.get_mut(usize::from(idx)) {
            *e = (0, u32::MAX);
        }
    }
    counts.touched.clear();
}

/// The findings of [`cardinality`] for node `i`, in definition order.
fn report_cardinality(
    doc: &Document,
    i: u32,
    ctx: defs::ElemRef,
    defs_of: &defs::TypeDef,
    count_of: &dyn Fn(u16) -> (u32, u32),
    f: &mut Findings,
) {
    let primitive = defs_of.kind == Kind::Primitive;
    for &child in defs::children(ctx) {
        let Some(def) = defs_of.elements.get(usize::from(child)) else { continue };
        if primitive && def.name == "value" {
            // The value of a primitive is not a child element (checked as the value itself).
            continue;
        }
        let (count, first_extra) = count_of(child);
        if count < def.min {
            let path = doc.path_of_missing(i, defs::ElemRef { ty: ctx.ty, idx: child });
            f.push(Code::CARDINALITY_MIN, Location::Fhir(path));
        }
        if count > def.max {
            let at = if first_extra == u32::MAX { i } else { first_extra };
            f.push(Code::CARDINALITY_MAX, Location::Fhir(doc.path(at)));
        }
    }
}

/// The check of a primitive type and the JSON kind of its values; `None` for a type that is
/// not primitive (one table for every type, built on first use).
fn primitive_of(ty: defs::TypeId) -> Option<(primitive::Check, ValueKind)> {
    static TABLE: OnceLock<Vec<Option<(primitive::Check, ValueKind)>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        defs::all_types()
            .map(|t| {
                let name = defs::type_name(t);
                (defs::kind(t) == Kind::Primitive).then(|| (primitive::Check::of(name), json_kind_of(name)))
            })
            .collect()
    });
    table.get(usize::from(ty.0)).copied().flatten()
}

fn primitive_check(doc: &Document, i: u32, ty: defs::TypeId, f: &mut Findings) {
    let Some((check, json_kind)) = primitive_of(ty) else { return };
    let node = doc.node(i);
    // A JSON value of the wrong kind was reported when reading.
    if node.value_kind == ValueKind::Number || node.value_kind == ValueKind::Bool {
        if json_kind != node.value_kind {
            return;
        }
    } else if node.value_kind == ValueKind::String
        && doc.syntax() == super::Syntax::Json
        && json_kind != ValueKind::String
    {
        return;
    }
    let ok = doc.value_span(i).classify(|v| check.is_valid(v));
    if !ok {
        f.push(Code::PRIMITIVE_INVALID, Location::Fhir(doc.path(i)));
    }
}

fn binding(doc: &Document, i: u32, strength: Strength, vs: u16, f: &mut Findings) {
    let node = doc.node(i);
    let Some(ty) = node.ty else { return };
    if no_code(doc, i, ty, strength, f) {
        return;
    }
    let Some(set) = defs::value_set(vs) else { return };
    let in_set = match defs::type_name(ty) {
        "code" | "string" | "uri" => {
            if !node.has_value() {
                return;
            }
            doc.value_span(i).classify(|v| set.contains(None, v))
        }
        "Coding" => match coding_in(doc, i, set) {
            Some(ok) => ok,
            None => return,
        },
        "CodeableConcept" => {
            let mut any = false;
            let mut ok = false;
            for c in doc.named(i, "coding") {
                if let Some(hit) = coding_in(doc, c, set) {
                    any = true;
                    ok |= hit;
                }
            }
            if !any {
                return;
            }
            ok
        }
        "Quantity" => {
            // Bound on the unit code (`Quantity.code` with `system`).
            match coding_in(doc, i, set) {
                Some(ok) => ok,
                None => return,
            }
        }
        _ => return,
    };
    if in_set {
        return;
    }
    let location = Location::Fhir(doc.path(i));
    match strength {
        Strength::Required => f.push(Code::CODE_INVALID, location),
        Strength::Extensible => f.push_with(Code::CODE_NOT_IN_VALUESET, Severity::Warning, location),
        Strength::Preferred => f.push_with(Code::CODE_NOT_IN_VALUESET, Severity::Information, location),
    }
}

/// A bound element that holds no code, as the reference validator judges it whatever the value
/// set (`CODE_MISSING`): a primitive with no value (or a blank one: extensions only, such as a
/// `data-absent-reason`) under a `required` binding is an error (R4 gives no exception, and a
/// required binding leaves no room for another code), a warning when a cross-version extension
/// (`http://hl7.org/fhir/<version>/StructureDefinition/extension-...`) carries the code of
/// another FHIR version instead; a
/// CodeableConcept with no `coding` (text or extensions only) is an error under a `required`
/// binding and a warning under an `extensible` one ("a code should be provided"). A Coding
/// without a code, and a `preferred` binding, are not reported. True when the element holds no
/// code (nothing else of the binding to check).
fn no_code(doc: &Document, i: u32, ty: defs::TypeId, strength: Strength, f: &mut Findings) -> bool {
    let node = doc.node(i);
    if defs::kind(ty) == defs::Kind::Primitive {
        if node.has_value() && !doc.value_span(i).classify(|v| v.iter().all(u8::is_ascii_whitespace)) {
            return false;
        }
        if strength == Strength::Required {
            let severity = if has_cross_version_extension(doc, i) { Severity::Warning } else { Severity::Error };
            f.push_with(Code::CODE_MISSING, severity, Location::Fhir(doc.path(i)));
        }
        return true;
    }
    if defs::type_name(ty) != "CodeableConcept" || doc.named(i, "coding").next().is_some() {
        return false;
    }
    let location = Location::Fhir(doc.path(i));
    match strength {
        Strength::Required => f.push(Code::CODE_MISSING, location),
        Strength::Extensible => f.push_with(Code::CODE_MISSING, Severity::Warning, location),
        Strength::Preferred => {}
    }
    true
}

/// True when node `i` has an extension whose url is a cross-version extension's
/// (`http://hl7.org/fhir/<version>/StructureDefinition/extension-<path>`, the version digits and
/// dots).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn has_cross_version_extension(doc: &Document, i: u32) -> bool {
    doc.named(i, "extension").any(|e| {
        let Some(url) = doc.named(e, "url").find(|&u| doc.node(u).has_value()) else { return false };
        let Some(rest) = doc.value(url).strip_prefix(b"http://hl7.org/fhir/".as_slice()) else { return false };
        let Some(slash) = rest.iter().position(|&b| b == b'/') else { return false };
        let (version, tail) = rest.split_at(slash);
        !version.is_empty()
            && version.contains(&b'.')
            && version.iter().all(|&b| b.is_ascii_digit() || b == b'.')
            && tail.starts_with(b"/StructureDefinition/extension-")
    })
}

/// Whether a Coding-like node (`system` + `code` children) is in the set; `None` without a code.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn coding_in(doc: &Document, i: u32, set: &defs::ValueSet) -> Option<bool> {
    let code = doc.named(i, "code").find(|&c| doc.node(c).has_value())?;
    let system = doc.named(i, "system").find(|&c| doc.node(c).has_value());
    let code_bytes = doc.value(code);
    Some(match system {
        Some(s) => set.contains(Some(doc.value(s)), code_bytes),
        None => set.contains(None, code_bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn findings(input: &str) -> Vec<String> {
        let doc = crate::formats::fhir::read(input.as_bytes().to_vec(), &Limits::default()).expect("reads");
        validate(&doc, Options::default()).iter().map(|d| format!("{} {}", d.code.as_str(), d.location)).collect()
    }

    #[test]
    fn structure_and_invariants() {
        let f = findings(
            r#"{"resourceType":"Patient","text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">x</div>"},"gender":"f","contact":[{}],"name":[{"given":["A"],"_given":[{"id":"g"}]}]}"#,
        );
        assert_eq!(
            f,
            [
                "CODE_INVALID Patient.gender",
                "INVARIANT_VIOLATED Patient.contact[0]/invariant:ele-1",
                "INVARIANT_VIOLATED Patient.contact[0]/invariant:pat-1",
            ]
        );
    }

    #[test]
    fn xml_reads_like_json() {
        let xml = r#"<Patient xmlns="http://hl7.org/fhir"><text><status value="generated"/><div xmlns="http://www.w3.org/1999/xhtml">x</div></text><birthDate value="1970-02-30"/><deceasedBoolean value="true"/><deceasedDateTime value="2020"/></Patient>"#;
        assert_eq!(findings(xml), ["CARDINALITY_MAX Patient.deceasedDateTime", "PRIMITIVE_INVALID Patient.birthDate"]);
    }

    #[test]
    fn strict_raises_warnings() {
        let doc =
            crate::formats::fhir::read(br#"{"resourceType":"Patient"}"#.to_vec(), &Limits::default()).expect("reads");
        assert!(is_valid(&validate(&doc, Options::default())));
        assert!(!is_valid(&validate(&doc, Options { strict: true, ..Options::default() })));
    }
}
