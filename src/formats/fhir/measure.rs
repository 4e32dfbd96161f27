//! A MeasureReport against what it reports on: its `type`, and the Measure it names (FHIR R4
//! MeasureReport; each rule checked by the reference validator too).
//!
//! - `subjectResults` (of a group's or a stratum's population) "refers to a List of subject
//!   level MeasureReport resources, one for each subject in this population": only a report of
//!   type `subject-list` ("a listing of subjects that satisfied each population criteria") lists
//!   subjects; in any other report it is `MEASUREREPORT_SUBJECTS_UNEXPECTED` (on the population);
//! - `subjectResults` is a `Reference(List)`: a literal reference naming another resource type
//!   (`Patient/123`, or a contained or same-document resource of another type) is
//!   `MEASUREREPORT_SUBJECTS_NOT_LIST` (on the `subjectResults`); a List it resolves to in the
//!   document (contained `#id`, or a `List` with that id) holds "one for each subject in this
//!   population", so its number of `entry` is the population's `count` ("the number of members
//!   of the population"): otherwise `MEASUREREPORT_COUNT_MISMATCH` (on the population);
//! - when the Measure of `MeasureReport.measure` can be found (contained, in the same document,
//!   or through the validation's resolver, by `url` or `url|version`), each `group` reports a
//!   group of the Measure ("the meaning of the population group as defined in the measure
//!   definition"): a group with a `code` is the Measure's group with a code that shares a Coding
//!   (system and code), a group without one is the Measure's only group when both have exactly
//!   one; otherwise `MEASUREREPORT_GROUP_UNMATCHED` (on the group). Each population of a matched
//!   group is "the type of the population" of that Measure group: a population whose `code`
//!   shares no Coding with a population of the Measure group is
//!   `MEASUREREPORT_POPULATION_UNMATCHED` (on the population);
//! - a Measure whose `scoring` is `cohort` (measure-scoring: "the measure is a cohort
//!   definition", whose result is the population, with no score) has reports without a
//!   `measureScore`: one is `MEASUREREPORT_SCORE_UNEXPECTED` (on it).
//!
//! What it does not do: evaluate the Measure's criteria (CQL, FHIRPath), compare counts with
//! subject lists outside the document (a List on a server), scores of other scorings, or
//! stratifiers.

use crate::diag::{Code, Location};

use super::model::Document;
use super::questionnaire::{self, Resolve};
use super::validate::Findings;

/// Runs the checks on every MeasureReport of the document.
pub(super) fn check(doc: &Document, resolve: Resolve<'_>, f: &mut Findings) {
    let reports: Vec<u32> = questionnaire::resources_of(doc, "MeasureReport").collect();
    if reports.is_empty() {
        return;
    }
    for r in reports {
        let subject_list = questionnaire::child_text(doc, r, "type") == Some(b"subject-list".as_slice());
        if !subject_list {
            for n in r + 1..doc.node(r).end {
                let node = doc.node(n);
                if node.name == "subjectResults" && !node.is_unknown() && doc.resource_of(n) == r {
                    f.push(Code::MEASUREREPORT_SUBJECTS_UNEXPECTED, Location::Fhir(doc.path(node.parent)));
                }
            }
        }
        subject_results(doc, r, f);
        let Some(canonical) = questionnaire::child_text(doc, r, "measure") else { continue };
        match find_measure(doc, r, canonical, resolve) {
            Some(Found::Here(m)) => groups(doc, r, doc, m, f),
            Some(Found::Outside(md)) => groups(doc, r, &md, 0, f),
            None => {}
        }
    }
}

/// The `subjectResults` of report `r`'s populations: a reference to a List whose entries are
/// the population's `count` subjects.
fn subject_results(doc: &Document, r: u32, f: &mut Findings) {
    for n in r + 1..doc.node(r).end {
        let node = doc.node(n);
        if node.name != "subjectResults" || node.is_unknown() || doc.resource_of(n) != r {
            continue;
        }
        let Some(reference) = questionnaire::child_text(doc, n, "reference") else { continue };
        let target = match reference.strip_prefix(b"#") {
            Some(id) => questionnaire::contained(doc, r, id),
            None => super::checks::type_and_id(reference).and_then(|(ty, id)| {
                if ty != "List" {
                    return None;
                }
                questionnaire::resources_of(doc, "List").find(|&l| questionnaire::child_text(doc, l, "id") == Some(id))
            }),
        };
        let named_type = match target {
            Some(t) => doc.node(t).ty.map(super::definitions::type_name),
            None => super::checks::type_and_id(reference).map(|(ty, _)| ty),
        };
        if named_type.is_some_and(|t| t != "List") {
            f.push(Code::MEASUREREPORT_SUBJECTS_NOT_LIST, Location::Fhir(doc.path(n)));
            continue;
        }
        let Some(list) = target else { continue };
        let population = node.parent;
        let count = questionnaire::child_text(doc, population, "count")
            .and_then(|c| std::str::from_utf8(c).ok())
            .and_then(|c| c.parse::<usize>().ok());
        if count.is_some_and(|c| c != doc.named(list, "entry").count()) {
            f.push(Code::MEASUREREPORT_COUNT_MISMATCH, Location::Fhir(doc.path(population)));
        }
    }
}

enum Found {
    Here(u32),
    Outside(Box<Document>),
}

fn find_measure(doc: &Document, r: u32, canonical: &[u8], resolve: Resolve<'_>) -> Option<Found> {
    let is_measure = |d: &Document, m: u32| d.node(m).ty.is_some_and(|t| super::definitions::type_name(t) == "Measure");
    if let Some(id) = canonical.strip_prefix(b"#") {
        return questionnaire::contained(doc, r, id).filter(|&c| is_measure(doc, c)).map(Found::Here);
    }
    let (url, version) = questionnaire::split_canonical(canonical);
    if let Some(m) =
        questionnaire::resources_of(doc, "Measure").find(|&m| questionnaire::has_canonical(doc, m, url, version))
    {
        return Some(Found::Here(m));
    }
    let v = resolve(std::str::from_utf8(canonical).ok()?)?;
    if v.get("resourceType").and_then(|t| t.as_str()) != Some("Measure") {
        return None;
    }
    let md = questionnaire::document_of(v)?;
    is_measure(&md, 0).then(|| Found::Outside(Box::new(md)))
}

/// The (system, code) pairs of the Codings of CodeableConcept `cc` (a child `code` of `i`).
fn codings(doc: &Document, i: u32) -> Vec<(Option<&[u8]>, &[u8])> {
    doc.named(i, "code")
        .flat_map(|cc| doc.named(cc, "coding"))
        .filter_map(|c| {
            let code = questionnaire::child_text(doc, c, "code")?;
            Some((questionnaire::child_text(doc, c, "system"), code))
        })
        .collect()
}

fn share(a: &[(Option<&[u8]>, &[u8])], b: &[(Option<&[u8]>, &[u8])]) -> bool {
    a.iter().any(|x| b.contains(x))
}

/// The code system of `Measure.scoring`.
const MEASURE_SCORING: &[u8] = b"http://terminology.hl7.org/CodeSystem/measure-scoring";

/// Matches the report's groups with the Measure's (`m` in `md`) and their populations.
fn groups(doc: &Document, r: u32, md: &Document, m: u32, f: &mut Findings) {
    let measure_groups: Vec<u32> = md.named(m, "group").collect();
    let report_groups: Vec<u32> = doc.named(r, "group").collect();
    // A cohort measure selects a population and scores nothing.
    let cohort = md.named(m, "scoring").flat_map(|s| md.named(s, "coding")).any(|c| {
        questionnaire::child_text(md, c, "system") == Some(MEASURE_SCORING)
            && questionnaire::child_text(md, c, "code") == Some(b"cohort".as_slice())
    });
    if cohort {
        for s in report_groups.iter().flat_map(|&g| doc.named(g, "measureScore")) {
            f.push(Code::MEASUREREPORT_SCORE_UNEXPECTED, Location::Fhir(doc.path(s)));
        }
    }
    for &g in &report_groups {
        let code = codings(doc, g);
        let has_code = doc.named(g, "code").next().is_some();
        let matched = if has_code {
            measure_groups.iter().copied().find(|&mg| share(&code, &codings(md, mg)))
        } else if measure_groups.len() == 1 && report_groups.len() == 1 {
            measure_groups.first().copied()
        } else {
            None
        };
        let Some(mg) = matched else {
            f.push(Code::MEASUREREPORT_GROUP_UNMATCHED, Location::Fhir(doc.path(g)));
            continue;
        };
        let defined: Vec<_> = md.named(mg, "population").flat_map(|p| codings(md, p)).collect();
        for p in doc.named(g, "population") {
            let code = codings(doc, p);
            if !code.is_empty() && !share(&code, &defined) {
                f.push(Code::MEASUREREPORT_POPULATION_UNMATCHED, Location::Fhir(doc.path(p)));
            }
        }
    }
}
