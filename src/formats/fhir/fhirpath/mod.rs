//! A FHIRPath engine of our own, for the invariants of the FHIR R4 core definitions.
//!
//! [`parse`] compiles an expression, [`eval`] evaluates it over the element tree; [`value`] holds
//! the non-element values, [`html`] the narrative checks behind `htmlChecks()`.
//! [`check_invariants`] runs every invariant that applies to each element of a document
//! (those of its element definition and of its type) and reports `INVARIANT_VIOLATED` when one
//! evaluates to `false`, with the invariant's severity (warning for best practices).
//!
//! An invariant the engine cannot evaluate (a function outside the subset, or an evaluation that
//! leaves the subset) is reported once per key and document as `INVARIANT_UNCHECKED`
//! (information); an invariant whose result is empty (unknown) passes, except `per-1`: a start and
//! an end of different precisions that agree as far as both go cannot be shown in order, and
//! FHIRPath's comparison of them is empty, not true. [`coverage`] says how many core invariants compile.
//!
//! What it does not do: expressions from anywhere but the core definitions (profiles, user
//! input), terminology functions, `conformsTo`.

pub mod eval;
pub mod html;
mod index;
pub mod parse;
pub mod value;

use std::sync::{Mutex, OnceLock};

use crate::diag::{Code, Location, Severity};

use super::definitions::{self as defs, ElemRef};
use super::model::{Document, NONE};
use super::validate::Findings;

/// Published R4 expressions that contradict the rule their own human-readable text states, as
/// `(key, published expression, expression evaluated)`: the published one is replaced only when
/// it is exactly the one here. `que-12` reads "If there are more than one enableWhen,
/// enableBehavior must be specified", and its R4 expression tests more than two (the reference
/// validator evaluates the corrected one too). `app-4` reads "Cancelation reason is only used
/// for appointments that have been cancelled, or no-show", and its R4 expression compares the
/// status with `'no-show'`, which is not a code of `appointmentstatus` (the code is `noshow`, which
/// later versions' expression compares with).
const CORRECTED: &[(&str, &str, &str)] = &[
    (
        "que-12",
        "enableWhen.count() > 2 implies enableBehavior.exists()",
        "enableWhen.count() >= 2 implies enableBehavior.exists()",
    ),
    (
        "app-4",
        "Appointment.cancelationReason.exists() implies (Appointment.status='no-show' or Appointment.status='cancelled')",
        "Appointment.cancelationReason.exists() implies (Appointment.status='noshow' or Appointment.status='cancelled')",
    ),
];

/// The expression evaluated for an invariant: the published one, or its correction.
fn expression(c: &defs::Constraint) -> &'static str {
    CORRECTED
        .iter()
        .find(|(key, published, _)| *key == c.key && *published == c.expression)
        .map_or(c.expression, |&(_, _, corrected)| corrected)
}

/// Compiled invariants, by constraint number (compiled on first use).
fn compiled(n: u16) -> Option<&'static Result<parse::Expr, parse::CompileError>> {
    static CACHE: OnceLock<Vec<OnceLock<Result<parse::Expr, parse::CompileError>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| defs::constraints().iter().map(|_| OnceLock::new()).collect());
    let slot = cache.get(usize::from(n))?;
    let c = defs::constraint(n)?;
    Some(slot.get_or_init(|| parse::compile(expression(&c))))
}

/// A compiled regular expression of an invariant: anchored (for `matches`) and not (for
/// `replaceMatches`).
#[derive(Debug)]
pub struct Regex {
    anchored: regex_lite::Regex,
    search: regex_lite::Regex,
}

/// The compiled form of a pattern from the definitions (cached; the set is finite).
fn regex(pattern: &str) -> Option<&'static Regex> {
    static CACHE: Mutex<Vec<(String, &'static Regex)>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().ok()?;
    if let Some((_, r)) = cache.iter().find(|(p, _)| p == pattern) {
        return Some(r);
    }
    if cache.len() >= 256 {
        return None;
    }
    let anchored = regex_lite::Regex::new(&format!("^(?:{pattern})$")).ok()?;
    let search = regex_lite::Regex::new(pattern).ok()?;
    let r: &'static Regex = Box::leak(Box::new(Regex { anchored, search }));
    cache.push((pattern.to_string(), r));
    Some(r)
}

/// The constraint number of `ele-1`, which [`check_invariants`] evaluates natively.
fn ele_1() -> Option<u16> {
    static N: OnceLock<Option<u16>> = OnceLock::new();
    *N.get_or_init(|| defs::constraints().iter().position(|c| c.key == "ele-1").and_then(|n| u16::try_from(n).ok()))
}

/// The native evaluation of each constraint, by constraint number ([`eval::Native`]).
fn natives() -> &'static [eval::Native] {
    static N: OnceLock<Vec<eval::Native>> = OnceLock::new();
    N.get_or_init(|| defs::constraints().iter().map(|c| eval::Native::of_key(c.key)).collect())
}

/// `(compiled, total)`: how many invariants of the core definitions the engine compiles.
pub fn coverage() -> (usize, usize) {
    let all = defs::constraints();
    let ok = (0..all.len() as u16).filter(|&n| compiled(n).is_some_and(|c| c.is_ok())).count();
    (ok, all.len())
}

/// The invariants that apply to node `i`: its element definition's and its type's, each once,
/// in that order.
#[cfg(test)]
fn applicable(doc: &Document, i: u32) -> impl Iterator<Item = u16> + use<> {
    let node = doc.node(i);
    let own: &'static [u16] = node.elem.and_then(defs::element).map_or(&[], |d| &d.constraints);
    let of_type: &'static [u16] =
        node.ty.and_then(|t| defs::element(ElemRef { ty: t, idx: 0 })).map_or(&[], |d| &d.constraints);
    let first = own.iter().enumerate().filter(move |&(k, c)| !own[..k].contains(c));
    let then = of_type.iter().enumerate().filter(move |&(k, c)| !own.contains(c) && !of_type[..k].contains(c));
    first.chain(then).map(|(_, &c)| c)
}

/// The environment of the invariants of node `i`.
pub(in crate::formats::fhir) fn env_for<'d>(doc: &'d Document, i: u32, cache: &'d eval::NavCache<'d>) -> eval::Env<'d> {
    let resource = doc.resource_of(i);
    let res_node = doc.node(resource);
    let root_resource = if res_node.name == "contained" && res_node.parent != NONE {
        doc.resource_of(res_node.parent)
    } else {
        resource
    };
    eval::Env::new(doc, resource, root_resource, i, cache)
}

/// Evaluates every applicable invariant of every element of the document.
pub(super) fn check_invariants(doc: &Document, f: &mut Findings) {
    let cache = eval::NavCache::default();
    let mut run = Run {
        doc,
        unchecked: Vec::new(),
        cache: &cache,
        // `ele-1` (which applies to nearly every element) is evaluated natively when it
        // compiles (it does; a test says so), without building the environment.
        ele_1: ele_1().filter(|&n| matches!(compiled(n), Some(Ok(_)))),
        natives: natives(),
    };
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.is_unknown() {
            continue;
        }
        // The element definition's invariants, then the type's, each once (as [`applicable`]).
        let own: &'static [u16] = node.elem.and_then(defs::element).map_or(&[], |d| &d.constraints);
        let of_type: &'static [u16] =
            node.ty.and_then(|t| defs::element(ElemRef { ty: t, idx: 0 })).map_or(&[], |d| &d.constraints);
        let mut env: Option<eval::Env<'_>> = None;
        // Most elements have at most one invariant of their own and one of their type (`ele-1`
        // from both): no search for repeats.
        if own.len() <= 1 && of_type.len() <= 1 {
            let a = own.first().copied();
            let b = of_type.first().copied().filter(|&b| Some(b) != a);
            for c in a.into_iter().chain(b) {
                run.check(i, c, &mut env, f);
            }
            continue;
        }
        for (k, &c) in own.iter().chain(of_type).enumerate() {
            let repeated = match k.checked_sub(own.len()) {
                None => own[..k].contains(&c),
                Some(j) => own.contains(&c) || of_type[..j].contains(&c),
            };
            if repeated {
                continue;
            }
            run.check(i, c, &mut env, f);
        }
    }
}

/// The state of [`check_invariants`] over one document.
struct Run<'d> {
    doc: &'d Document,
    /// Keys already reported `INVARIANT_UNCHECKED`.
    unchecked: Vec<&'static str>,
    cache: &'d eval::NavCache<'d>,
    ele_1: Option<u16>,
    natives: &'static [eval::Native],
}

impl<'d> Run<'d> {
    /// Evaluates invariant `c` on node `i` and reports its result (`env`: the node's
    /// environment, built on first need).
    #[inline]
    fn check(&mut self, i: u32, c: u16, env: &mut Option<eval::Env<'d>>, f: &mut Findings) {
        let doc = self.doc;
        let result = if Some(c) == self.ele_1 {
            Some(Some(eval::ele_1(doc, i)))
        } else {
            match compiled(c) {
                Some(Ok(expr)) => {
                    let env = env.get_or_insert_with(|| env_for(doc, i, self.cache));
                    let native = self.natives.get(usize::from(c)).copied().unwrap_or(eval::Native::None);
                    let result = match env.native(native, expr) {
                        Some(decided) => decided.ok(),
                        None => env.run(expr).ok(),
                    };
                    // per-1 (`start <= end`) on a start and an end of different precisions that
                    // agree as far as both go (`2023-06-21`, `2023-06-21T06:20:00Z`): FHIRPath's
                    // comparison is empty, and an invariant holds only when it is true: the
                    // period's order is not shown. (The reference validator reports it too.)
                    if native == eval::Native::Per1 && result == Some(None) {
                        Some(Some(false))
                    } else if native == eval::Native::Dom3
                        && result == Some(Some(false))
                        && matches!(env.dom_3_with_narrative(), Some(Ok(Some(true))))
                    {
                        // dom-3's text counts the narrative's references to contained
                        // resources (an image's `#id`), which its expression cannot see
                        // ([`eval::Env::dom_3_with_narrative`]).
                        Some(Some(true))
                    } else {
                        result
                    }
                }
                _ => None,
            }
        };
        if matches!(result, Some(Some(true) | None)) {
            return;
        }
        let Some(constraint) = defs::constraint(c) else { return };
        match result {
            Some(Some(false)) => {
                let mut path = doc.path(i);
                path.invariant = defs::constraint_key(c);
                let severity = if constraint.error { Severity::Error } else { Severity::Warning };
                f.push_with(Code::INVARIANT_VIOLATED, severity, Location::Fhir(path));
            }
            Some(_) => {}
            None => {
                if !self.unchecked.contains(&constraint.key) {
                    self.unchecked.push(constraint.key);
                    let mut path = doc.path(i);
                    path.invariant = defs::constraint_key(c);
                    f.push(Code::INVARIANT_UNCHECKED, Location::Fhir(path));
                }
            }
        }
    }
}

/// Checks every native decision ([`eval::Env::native`]) against the engine on every element
/// of `docs` (panics on a disagreement); returns how many decisions each invariant key had.
#[cfg(test)]
pub(crate) fn natives_agree(docs: &[(String, Document)]) -> std::collections::BTreeMap<&'static str, usize> {
    let natives = natives();
    let mut decided = std::collections::BTreeMap::new();
    for (name, doc) in docs {
        let cache = eval::NavCache::default();
        for i in 0..doc.nodes().len() as u32 {
            if doc.node(i).is_unknown() {
                continue;
            }
            let env = env_for(doc, i, &cache);
            for c in applicable(doc, i) {
                let Some(Ok(expr)) = compiled(c) else { panic!("compiles") };
                let Some(result) = env.native(natives[usize::from(c)], expr) else { continue };
                let key = defs::constraint(c).map_or("", |d| d.key);
                assert_eq!(env.run(expr), result, "{name} node {i} {key}");
                *decided.entry(key).or_insert(0) += 1;
            }
        }
    }
    decided
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every core invariant compiles; the share is stated in docs/fhir.md.
    #[test]
    fn coverage_of_the_core_invariants() {
        let (ok, total) = coverage();
        let failing: Vec<&str> = (0..total as u16)
            .filter(|&n| compiled(n).is_some_and(|c| c.is_err()))
            .filter_map(|n| defs::constraint(n).map(|c| c.key))
            .collect();
        // 239 in R4 (4.0.1): a shrinking count means lost definitions.
        assert!(total >= 239, "{total}");
        assert!(ok == total, "{ok}/{total}: {failing:?}");
    }

    /// The native evaluations agree with the engine wherever they decide, on every element of
    /// the FHIR fixtures (the converter's Bundles: `ops`' tests, which may run the converter).
    #[test]
    fn natives_agree_with_the_engine() {
        let limits = crate::limits::Limits::default();
        let mut docs = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/fhir"))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "json" || e == "xml") {
                    if let Ok(doc) = crate::formats::fhir::read(std::fs::read(&path).expect("read"), &limits) {
                        docs.push((path.display().to_string(), doc));
                    }
                }
            }
        }
        let decided = natives_agree(&docs);
        for key in [
            "dom-2", "dom-3", "dom-4", "dom-5", "dom-6", "ext-1", "bdl-3", "bdl-7", "bdl-8", "ref-1", "bdl-12",
            "org-1", "per-1",
        ] {
            assert!(decided.get(key).copied().unwrap_or(0) > 0, "{key} never decided natively");
        }
    }

    fn read(json: &str) -> Document {
        crate::formats::fhir::read(json.as_bytes().to_vec(), &crate::limits::Limits::default()).expect("reads")
    }

    /// The invariant keys violated in a document, in order.
    fn violated(doc: &Document) -> Vec<String> {
        super::super::validate::validate(doc, super::super::validate::Options::default())
            .iter()
            .filter(|d| d.code == Code::INVARIANT_VIOLATED || d.code == Code::INVARIANT_UNCHECKED)
            .map(|d| format!("{} {}", d.code.as_str(), d.location))
            .collect()
    }

    /// `dom-3` and `ref-1`, decided from the indexes of the document, agree with the engine on
    /// every case their expressions distinguish: a contained resource referenced by a
    /// `reference`, a `canonical`, a `uri` or a `url`, one that refers to its container (`#`),
    /// one without an id or whose id has no value, two ids (the engine stops: unchecked), a
    /// local reference to a missing id and `#` alone.
    #[test]
    fn contained_resources_indexed_once_agree_with_the_engine() {
        let cases = [
            r##"{"resourceType":"MedicationRequest","contained":[{"resourceType":"Medication","id":"a"},{"resourceType":"Medication","id":"b"},{"resourceType":"Medication","id":"c"}],"status":"active","intent":"order","subject":{"reference":"Patient/x"},"medicationReference":{"reference":"#a"},"supportingInformation":[{"reference":"#zz"},{"reference":"#"}]}"##,
            r##"{"resourceType":"Questionnaire","status":"draft","contained":[{"resourceType":"ValueSet","id":"vs","status":"draft"},{"resourceType":"ValueSet","id":"u","status":"draft","compose":{"include":[{"valueSet":["#"]}]}},{"resourceType":"Patient"},{"resourceType":"Patient","_id":{"extension":[{"url":"http://x.org/e","valueString":"s"}]}}],"item":[{"linkId":"1","type":"choice","answerValueSet":"#vs"}]}"##,
            r##"{"resourceType":"Patient","contained":[{"resourceType":"Patient","id":"p","link":[{"other":{"reference":"#"},"type":"seealso"}]},{"resourceType":"Organization","id":"o","name":"n"}],"managingOrganization":{"reference":"#o"}}"##,
            r##"{"resourceType":"Patient","contained":[{"resourceType":"Organization","id":"o","name":"n"}],"implicitRules":"#o"}"##,
            r##"{"resourceType":"Patient","contained":[{"resourceType":"Organization","id":"o","name":"n"},{"resourceType":"Organization","id":"q","name":"n"}],"managingOrganization":{"reference":"#o"}}"##,
        ];
        let docs: Vec<(String, Document)> =
            cases.iter().enumerate().map(|(k, c)| (format!("case {k}"), read(c))).collect();
        let decided = natives_agree(&docs);
        for key in ["dom-3", "ref-1"] {
            assert!(decided.get(key).copied().unwrap_or(0) >= 3, "{key} decided {decided:?}");
        }
        let verdicts: Vec<Vec<String>> = docs.iter().map(|(_, d)| violated(d)).collect();
        assert!(verdicts[0].iter().any(|v| v.ends_with("MedicationRequest/invariant:dom-3")), "{:?}", verdicts[0]);
        assert!(
            verdicts[0].iter().any(|v| v.contains("supportingInformation[0]/invariant:ref-1")),
            "{:?}",
            verdicts[0]
        );
        assert!(!verdicts[0].iter().any(|v| v.contains("supportingInformation[1]")), "{:?}", verdicts[0]);
        assert!(!verdicts[1].iter().any(|v| v.contains("dom-3")), "{:?}", verdicts[1]);
        assert!(!verdicts[2].iter().any(|v| v.contains("dom-3")), "{:?}", verdicts[2]);
        assert!(!verdicts[3].iter().any(|v| v.contains("dom-3")), "{:?}", verdicts[3]);
        assert!(verdicts[4].iter().any(|v| v.ends_with("Patient/invariant:dom-3")), "{:?}", verdicts[4]);
    }

    /// Regression (binary-ref-internal of the reference suite): a contained resource that the
    /// narrative shows as an image (`img src="#id"`, in the resource's or a section's narrative)
    /// is referred to from elsewhere in the resource, as dom-3's text says; one that no image
    /// and no reference names is still reported, and so is one named by a link (`a href`) only.
    #[test]
    fn dom_3_counts_the_images_of_the_narrative() {
        let composition = |src: &str| {
            format!(
                r##"{{"resourceType":"Composition","contained":[{{"resourceType":"Binary","id":"img","contentType":"image/png"}}],"status":"final","type":{{"text":"x"}},"date":"2021-02-01","author":[{{"display":"y"}}],"title":"z","section":[{{"text":{{"status":"additional","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">{src}</div>"}}}}]}}"##
            )
        };
        let dom_3 = |json: &str| violated(&read(json)).iter().any(|v| v.ends_with("Composition/invariant:dom-3"));
        assert!(!dom_3(&composition(r##"<img src=\"#img\" alt=\"an image\"/>"##)));
        assert!(dom_3(&composition(r##"<img src=\"#other\" alt=\"an image\"/>"##)));
        assert!(dom_3(&composition(r##"<a href=\"#img\">the image</a>"##)));
        let patient = r##"{"resourceType":"Patient","text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\"><img src=\"#p\"/></div>"},"contained":[{"resourceType":"Binary","id":"p","contentType":"image/png"},{"resourceType":"Binary","id":"q","contentType":"image/png"}]}"##;
        let v = violated(&read(patient));
        assert!(v.iter().any(|v| v.ends_with("Patient/invariant:dom-3")), "q is named nowhere: {v:?}");
    }

    /// `obs-7` decided with the resource codings hashed once, and `sdf-8` with the path from
    /// `%resource` evaluated once, agree with the engine: a component coding equal to one of the
    /// code (also with the same extension), one that differs only in an extension or a display,
    /// no value.
    #[test]
    fn one_pass_invariants_agree_with_the_engine() {
        let cases = [
            r##"{"resourceType":"Observation","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"1-1"},{"system":"http://loinc.org","code":"2-2","display":"d"}]},"valueString":"x","component":[{"code":{"coding":[{"system":"http://loinc.org","code":"3-3"}]}},{"code":{"coding":[{"system":"http://loinc.org","code":"2-2","display":"d"}]}}]}"##,
            r##"{"resourceType":"Observation","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"2-2","display":"d"}]},"valueString":"x","component":[{"code":{"coding":[{"system":"http://loinc.org","code":"2-2","display":"e"}]}},{"code":{"coding":[{"extension":[{"url":"http://x.org/e","valueString":"s"}],"system":"http://loinc.org","code":"2-2","display":"d"}]}}]}"##,
            r##"{"resourceType":"Observation","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"2-2"}]},"component":[{"code":{"coding":[{"system":"http://loinc.org","code":"2-2"}]}}]}"##,
            r##"{"resourceType":"Observation","status":"final","code":{"text":"t"},"valueString":"x","component":[{"code":{"coding":[{"system":"http://loinc.org","code":"2-2"}]}}]}"##,
            r##"{"resourceType":"StructureDefinition","url":"http://x.org/sd","name":"X","status":"draft","kind":"resource","abstract":false,"type":"Patient","snapshot":{"element":[{"id":"Patient","path":"Patient"},{"id":"Patient.a","path":"Patient.a"},{"id":"Other.b","path":"Other.b"}]},"differential":{"element":[{"id":"Patient","path":"Patient"},{"id":"Patient.a","path":"Patient.a"}]}}"##,
        ];
        let docs: Vec<(String, Document)> =
            cases.iter().enumerate().map(|(k, c)| (format!("case {k}"), read(c))).collect();
        let decided = natives_agree(&docs);
        assert!(decided.get("obs-7").copied().unwrap_or(0) >= 4, "{decided:?}");
        let verdicts: Vec<Vec<String>> = docs.iter().map(|(_, d)| violated(d)).collect();
        assert!(verdicts[0].iter().any(|v| v.ends_with("Observation/invariant:obs-7")), "{:?}", verdicts[0]);
        for (k, v) in verdicts.iter().enumerate().take(4).skip(1) {
            assert!(!v.iter().any(|v| v.contains("obs-7")), "{k} {v:?}");
        }
        assert!(verdicts[4].iter().any(|v| v.ends_with("snapshot/invariant:sdf-8")), "{:?}", verdicts[4]);
    }

    /// `resolve()` (in `ctm-1`) through the indexes: a local reference to the first contained
    /// resource with the id; in a Bundle, the first entry by `fullUrl` or by type and id.
    #[test]
    fn resolve_by_index() {
        let contained = read(
            r##"{"resourceType":"CareTeam","contained":[{"resourceType":"Practitioner","id":"a"},{"resourceType":"Patient","id":"b"},{"resourceType":"Patient","id":"a"}],"participant":[{"member":{"reference":"#a"},"onBehalfOf":{"reference":"Organization/o"}},{"member":{"reference":"#b"},"onBehalfOf":{"reference":"Organization/o"}},{"member":{"reference":"#none"},"onBehalfOf":{"reference":"Organization/o"}}]}"##,
        );
        let v = violated(&contained);
        let ctm: Vec<&String> = v.iter().filter(|s| s.contains("ctm-1")).collect();
        assert_eq!(ctm, ["INVARIANT_VIOLATED CareTeam.participant[1]/invariant:ctm-1"], "{v:?}");

        let bundle = read(
            r##"{"resourceType":"Bundle","type":"collection","entry":[
              {"fullUrl":"http://x.org/fhir/Patient/p","resource":{"resourceType":"Patient","id":"p"}},
              {"fullUrl":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0","resource":{"resourceType":"Practitioner","id":"p"}},
              {"fullUrl":"Practitioner/p","resource":{"resourceType":"Patient","id":"q"}},
              {"resource":{"resourceType":"CareTeam","participant":[
                {"member":{"reference":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0"},"onBehalfOf":{"reference":"Organization/o"}},
                {"member":{"reference":"Practitioner/p"},"onBehalfOf":{"reference":"Organization/o"}},
                {"member":{"reference":"http://x.org/fhir/Patient/p"},"onBehalfOf":{"reference":"Organization/o"}},
                {"member":{"reference":"Patient/q"},"onBehalfOf":{"reference":"Organization/o"}}]}}]}"##,
        );
        let v = violated(&bundle);
        let ctm: Vec<&String> = v.iter().filter(|s| s.contains("ctm-1")).collect();
        assert_eq!(
            ctm,
            [
                "INVARIANT_VIOLATED Bundle.entry[3].resource.participant[2]/invariant:ctm-1",
                "INVARIANT_VIOLATED Bundle.entry[3].resource.participant[3]/invariant:ctm-1",
            ],
            "{v:?}"
        );
    }

    /// The native `ele-1` agrees with the engine on every element of the FHIR fixtures.
    #[test]
    fn ele_1_native_agrees_with_the_engine() {
        let n = ele_1().expect("ele-1 is a core invariant");
        let Some(Ok(expr)) = compiled(n) else { panic!("ele-1 compiles") };
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/fhir"))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "json" || e == "xml") {
                    files.push(path);
                }
            }
        }
        let limits = crate::limits::Limits::default();
        let (mut checked, mut false_seen) = (0usize, 0usize);
        for path in files {
            let Ok(doc) = crate::formats::fhir::read(std::fs::read(&path).expect("read"), &limits) else { continue };
            let cache = eval::NavCache::default();
            for i in 0..doc.nodes().len() as u32 {
                if doc.node(i).is_unknown() {
                    continue;
                }
                let resource = doc.resource_of(i);
                let env = eval::Env::new(&doc, resource, resource, i, &cache);
                let engine = env.run(expr);
                assert_eq!(engine, Ok(Some(env.ele_1())), "{} node {i}", path.display());
                checked += 1;
                false_seen += usize::from(!env.ele_1());
            }
        }
        assert!(checked > 1000 && false_seen > 0, "{checked} {false_seen}");
    }
}
