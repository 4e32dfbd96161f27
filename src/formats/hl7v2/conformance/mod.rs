//! HL7 v2 conformance: one message against the standard's definitions for its declared version
//! (MSH-12) and message structure (MSH-9), layered on the syntax checks of `validate`.
//!
//! - the version: MSH-12.1, or the nearest known version with `VERSION_UNKNOWN`;
//! - the structure: MSH-9.3, or the trigger-event table when MSH-9.3 is absent
//!   (`STRUCTURE_UNKNOWN`, `STRUCTURE_MISMATCH`);
//! - [`structure`]: segment order, groups, required and repeating segments;
//! - [`fields`]: required fields, repetition, lengths, tables, components, with the primitive
//!   syntax of [`datatypes`];
//! - [`plan`]: the definitions, resolved once per version.
//!
//! Values are read only through `PhiBytes::classify` with value-free results (flags, verdicts,
//! indices into the embedded tables); every finding is a code, a severity and a position or a
//! schema path. Default mode is tolerant of common practice; `--strict` (`Options::strict`)
//! raises warnings and tolerated deviations to errors and adds the strict-only checks. The
//! policy is documented in docs/hl7v2-conformance.md.
//!
//! What it does not do: conformance profiles (site or implementation-guide constraints),
//! conditional usage rules, user-defined tables, Z segments (allowed anywhere), batch envelopes,
//! or messages whose MSH-12 is missing or not a version (the syntax layer reports those).

pub(crate) mod datatypes;
pub(crate) mod fields;
pub(crate) mod plan;
pub(crate) mod structure;

use crate::diag::{Code, Diagnostic, Location, Severity};
use crate::formats::hl7v2::parse::{Message, SegmentRef};
use crate::formats::hl7v2::schema::Version;
use crate::formats::hl7v2::segment_ids;
use crate::formats::hl7v2::validate::{MAX_FINDINGS, Options, first_components};

use plan::{Plan, SegmentPlan};
use structure::{Matcher, StructurePlan};

/// Checks one message against its version and structure. At most [`MAX_FINDINGS`] findings.
pub fn check(msg: &Message, options: Options) -> Vec<Diagnostic> {
    let mut list = Vec::new();
    append(msg, options, &mut list);
    list
}

/// Appends the conformance findings of `msg` to `list` (the syntax findings), keeping the
/// whole list within [`MAX_FINDINGS`]. When the cap drops an error and no finding kept is one,
/// the last finding gives way to it, so that the verdict never depends on the cap.
pub fn append(msg: &Message, options: Options, list: &mut Vec<Diagnostic>) {
    let room = MAX_FINDINGS.saturating_sub(list.len());
    let settled = list.iter().any(|d| d.severity.is_failure());
    let mut report = Report::new(options.strict, room);
    report.has_failure = settled;
    run(msg, &mut report);
    let (found, dropped) = report.finish();
    list.extend(found);
    if let Some(d) = dropped.filter(|_| !settled && !list.iter().any(|d| d.severity.is_failure())) {
        list.pop();
        list.push(d);
    }
}

fn run(msg: &Message, report: &mut Report) {
    let msh = msg.msh();
    if msh.name() != Some("MSH") {
        return;
    }
    let Some(version) = version(msh, report) else { return };
    let Some(plan) = plan::plan(version) else { return };
    let structure = structure_of(msh, plan, report);
    // The segment plans of the ids the structure names, by the matcher's code.
    let by_code = structure.map_or(&[][..], |s| s.segment_plans(plan));
    let mut matcher = structure.map(Matcher::new);
    let delimiters = msg.delimiters();
    let scratch = fields::Scratch::new(delimiters);
    let mut cached: Option<(&'static str, Option<&'static SegmentPlan>)> = None;
    for seg in msg.segments() {
        if report.saturated() {
            return;
        }
        let Some(name) = seg.name() else { continue };
        if segment_ids::is_z(name) {
            continue;
        }
        let code = matcher.as_mut().and_then(|m| m.segment(name, || seg.position(), report));
        // Names come from the static id tables, one string per id: the same pointer is the same
        // id (and a different pointer only costs a look-up).
        let segment = match (code.and_then(|c| by_code.get(c)), cached) {
            (Some(segment), _) => *segment,
            (None, Some((id, segment))) if std::ptr::eq(id, name) => segment,
            (None, _) => {
                let segment = plan.segment(name);
                cached = Some((name, segment));
                segment
            }
        };
        if let Some(segment) = segment {
            fields::check_segment(seg, segment, plan, &scratch, report);
        }
    }
    if let Some(m) = matcher {
        m.finish(report);
    }
}

/// MSH-12.1 as a known version.
#[derive(Copy, Clone, Debug)]
enum VersionFact {
    Exact(Version),
    Nearest(Version),
    Unusable,
}

impl crate::phi::sealed::Sealed for VersionFact {}
impl crate::phi::ValueFree for VersionFact {}

fn version(msh: SegmentRef<'_>, report: &mut Report) -> Option<Version> {
    let [id] = first_components(msh.field(12)?);
    let id = id?;
    let fact = id.classify(|v| match (Version::parse(v), Version::nearest(v)) {
        (Some(v), _) => VersionFact::Exact(v),
        (None, Some(v)) => VersionFact::Nearest(v),
        (None, None) => VersionFact::Unusable,
    });
    match fact {
        VersionFact::Exact(v) => Some(v),
        VersionFact::Nearest(v) => {
            report.push(Code::VERSION_UNKNOWN, Location::Hl7(msh.position().field(12, 1).component(1, 0)));
            Some(v)
        }
        VersionFact::Unusable => None,
    }
}

/// An index into the version's structures, as a value-free classification result.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct StructureIndex(Option<u16>);

impl crate::phi::sealed::Sealed for StructureIndex {}
impl crate::phi::ValueFree for StructureIndex {}

/// The structure to match: MSH-9.3 when the version defines it, else the structure the
/// trigger-event table gives for MSH-9.1 and MSH-9.2.
fn structure_of(msh: SegmentRef<'_>, plan: &'static Plan, report: &mut Report) -> Option<&'static StructurePlan> {
    let msh9 = msh.field(9).filter(|f| !f.is_empty())?;
    let at = msh.position().field(9, 1);
    let schema = plan.schema;
    let [code, trigger, named] = first_components(msh9);
    let named = named.filter(|b| !b.is_empty()).map(|b| b.classify(|v| StructureIndex(plan.structure_index(v))));
    let event = code.map_or(StructureIndex(None), |code| {
        code.classify(|code| {
            let lookup = |trig: &[u8]| {
                StructureIndex(schema.structure_for(code, trig).and_then(|id| plan.structure_index(id.as_bytes())))
            };
            match trigger {
                Some(t) => t.classify(lookup),
                None => lookup(b""),
            }
        })
    });
    let chosen = match (named, event) {
        (Some(StructureIndex(Some(named))), StructureIndex(event)) => {
            let same_segments = event.is_none_or(|e| e == named || same_tree(plan, e, named));
            if !same_segments {
                report.push(Code::STRUCTURE_MISMATCH, Location::Hl7(at.component(3, 0)));
            }
            Some(named)
        }
        (Some(StructureIndex(None)), StructureIndex(event)) => {
            report.push(Code::STRUCTURE_UNKNOWN, Location::Hl7(at.component(3, 0)));
            event
        }
        (None, StructureIndex(None)) => {
            report.push(Code::STRUCTURE_UNKNOWN, Location::Hl7(msh.position().field(9, 0)));
            None
        }
        (None, StructureIndex(event)) => event,
    };
    plan.structure(chosen?)
}

/// Two structures with identical segment trees (2.1 and 2.2 name one structure per event, such
/// as `ADT_A04`, where later versions share `ADT_A01`).
fn same_tree(plan: &Plan, a: u16, b: u16) -> bool {
    let all = plan.schema.structures();
    match (all.get(usize::from(a)), all.get(usize::from(b))) {
        (Some(x), Some(y)) => same_nodes(x.children(), y.children()),
        _ => false,
    }
}

fn same_nodes(a: &[crate::formats::hl7v2::schema::Node], b: &[crate::formats::hl7v2::schema::Node]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.kind == y.kind
                && x.required == y.required
                && x.repeat == y.repeat
                && x.short_name == y.short_name
                && same_nodes(&x.children, &y.children)
        })
}

/// The findings of one message, with the severity policy of the two modes and the cap.
#[derive(Debug)]
pub(crate) struct Report {
    list: Vec<Diagnostic>,
    room: usize,
    strict: bool,
    has_failure: bool,
    dropped_failure: Option<Diagnostic>,
}

impl Report {
    pub(crate) fn new(strict: bool, room: usize) -> Report {
        Report { list: Vec::new(), room, strict, has_failure: false, dropped_failure: None }
    }

    /// True with `--strict`.
    pub(crate) fn strict(&self) -> bool {
        self.strict
    }

    /// Reports `code` with its registered severity.
    pub(crate) fn push(&mut self, code: Code, location: Location) {
        self.push_with(code, code.default_severity(), location);
    }

    /// Reports `code` with `severity` (before the strict policy applies).
    pub(crate) fn push_with(&mut self, code: Code, severity: Severity, location: Location) {
        let severity = self.policy(code, severity);
        let d = Diagnostic::new(code, location).with_severity(severity);
        if self.list.len() >= self.room {
            if severity.is_failure() && self.dropped_failure.is_none() {
                self.dropped_failure = Some(d);
            }
            return;
        }
        self.has_failure |= severity.is_failure();
        self.list.push(d);
    }

    /// With `--strict`, every deviation is an error: warnings, and the deviations the default
    /// mode reports as information (a field or component the version does not define, a
    /// withdrawn field). Information that is no deviation (an unknown structure) stays.
    fn policy(&self, code: Code, severity: Severity) -> Severity {
        if !self.strict {
            return severity;
        }
        match severity {
            Severity::Warning => Severity::Error,
            Severity::Information
                if matches!(code, Code::FIELD_NOT_DEFINED | Code::COMPONENT_NOT_DEFINED | Code::FIELD_WITHDRAWN) =>
            {
                Severity::Error
            }
            s => s,
        }
    }

    /// True when no further finding can change the output: the list is full and the verdict
    /// is settled.
    pub(crate) fn saturated(&self) -> bool {
        self.list.len() >= self.room && (self.has_failure || self.dropped_failure.is_some())
    }

    /// The findings, and the first error the cap dropped (when one was).
    pub(crate) fn finish(self) -> (Vec<Diagnostic>, Option<Diagnostic>) {
        (self.list, self.dropped_failure)
    }
}

#[cfg(test)]
mod mutation;
#[cfg(test)]
mod tests;
