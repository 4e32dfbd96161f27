//! C-CDA: every fixture under fixtures/ccda through validate against its manifest (codes and
//! exact locations); detection; inspect (document type, sections, entries per template); fmt a
//! fixed point whose parse model and findings are the original's; the mutation test (required
//! section removed, templateId removed, fixed code changed, wrong moodCode, required element
//! missing, bad TS; each at every place it applies, detected at its location); no value in any
//! finding, summary or stderr line; redaction (Safe Harbor over the marker-filled CCD and Discharge
//! Summary: no marker, well-formed, no new error; every valid fixture still valid; keyed hashes
//! deterministic; values no rule names removed).

use std::collections::BTreeSet;

use phiward::formats::ccda::base::{Assert, AssertKind, Op, R21Template, Rule, Step, X};
use phiward::formats::ccda::r21_tables::R21_TEMPLATES;
use phiward::formats::ccda::tables::TEMPLATES;
use phiward::formats::xml;
use phiward::limits::Limits;
use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("ccda/manifest.json")).expect("manifest");
    serde_json::from_str::<Vec<Value>>(&text).expect("manifest JSON")
}

fn path_of(file: &str) -> String {
    fixture(&format!("ccda/{file}")).to_string_lossy().into_owned()
}

/// Every `CODE location` of a validate --json output, and the failure's cause code.
fn findings(out: &[u8], stderr: &[u8]) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    if let Ok(v) = serde_json::from_slice::<Value>(out) {
        for f in v.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            set.insert(format!("{} {}", s("code"), s("location")));
        }
    }
    let err = String::from_utf8_lossy(stderr);
    if let Some(p) = err.find('(') {
        set.insert(err[p + 1..].split_whitespace().next().unwrap_or_default().to_owned());
    }
    set
}

#[test]
fn fixtures_against_the_manifest() {
    let m = manifest();
    assert!(m.len() >= 25, "{}", m.len());
    for e in &m {
        let file = e["file"].as_str().expect("file");
        let o = run(&["validate", "--json", &path_of(file)]);
        let got = findings(&o.stdout, &o.stderr);
        let want: BTreeSet<String> =
            e["codes"].as_array().expect("codes").iter().map(|c| c.as_str().expect("code").to_owned()).collect();
        // Information on value sets not bundled is every document's (its languageCode, its
        // VSAC-bound statusCodes): compared only where the manifest names it.
        let codes: BTreeSet<String> = got
            .iter()
            .map(|f| f.split(' ').next().unwrap_or_default().to_owned())
            .filter(|c| c != "CCDA_BINDING_UNCHECKED" || want.contains(c))
            .collect();
        if e["expect"] == "valid" {
            // Valid: no error; the warnings the manifest names (a fragment's), at their
            // locations, and information on other template versions.
            assert_eq!(code(&o), 0, "{file}: {got:?}");
            let warnings: BTreeSet<String> =
                codes.iter().filter(|c| *c != "CCDA_TEMPLATE_VERSION_OTHER").cloned().collect();
            assert_eq!(warnings, want, "{file}: {got:?}");
            for l in e["locations"].as_array().expect("locations") {
                let l = l.as_str().expect("location");
                assert!(got.contains(l), "{file}: {l} not in {got:?}");
            }
        } else {
            assert_ne!(code(&o), 0, "{file}");
            assert_eq!(codes, want, "{file}");
            for l in e["locations"].as_array().expect("locations") {
                let l = l.as_str().expect("location");
                assert!(got.contains(l), "{file}: {l} not in {got:?}");
            }
        }
    }
}

#[test]
fn detected_and_inspected_by_template() {
    for (file, title, sections) in [
        ("valid/ccd.xml", "Continuity of Care Document (CCD)", 6),
        ("valid/discharge_summary.xml", "Discharge Summary", 8),
        ("valid/referral_note.xml", "Referral Note", 5),
        ("valid/progress_note.xml", "Progress Note", 4),
    ] {
        let o = run(&["inspect", "--json", &path_of(file)]);
        assert_eq!(code(&o), 0, "{file}");
        let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(v["format"], "ccda");
        assert_eq!(v["documentType"], title, "{file}");
        assert_eq!(v["sections"].as_array().map(Vec::len), Some(sections), "{file}");
        assert_eq!(v["templates"][0], "2.16.840.1.113883.10.20.22.1.1:2024-05-01");
    }
    let o = run(&["inspect", "--json", &path_of("valid/ccd.xml")]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let allergies = &v["sections"][0];
    assert_eq!(allergies["code"], "48765-2");
    assert_eq!(allergies["entries"]["2.16.840.1.113883.10.20.22.4.30:2015-08-01"], 2);
    assert_eq!(allergies["entryCount"], 2);
    assert_eq!(v["sections"][5]["entries"]["2.16.840.1.113883.10.20.22.4.26:2015-08-01"], 1);
}

#[test]
fn fmt_is_a_fixed_point_keeping_model_and_findings() {
    for file in ["valid/ccd.xml", "valid/discharge_summary.xml", "valid/referral_note.xml", "valid/progress_note.xml"] {
        let input = std::fs::read(fixture(&format!("ccda/{file}"))).expect("fixture");
        let once = run_stdin(&["fmt", "-"], &input);
        assert_eq!(code(&once), 0, "{file}");
        assert!(
            once.stdout
                .starts_with(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ClinicalDocument xmlns=\"urn:hl7-org:v3\"")
        );
        let twice = run_stdin(&["fmt", "-"], &once.stdout);
        assert_eq!(once.stdout, twice.stdout, "{file}: fmt is not a fixed point");
        let check = run_stdin(&["fmt", "--check", "-"], &once.stdout);
        assert_eq!(code(&check), 0, "{file}: canonical output is not canonical");
        let a = run_stdin(&["parse", "--json", "-"], &input);
        let b = run_stdin(&["parse", "--json", "-"], &once.stdout);
        assert_eq!(a.stdout, b.stdout, "{file}: the model changed");
        let v: Value = serde_json::from_slice(&a.stdout).expect("JSON");
        assert_eq!(v["model"]["document"]["name"], "ClinicalDocument");
        let va = run_stdin(&["validate", "--json", "-"], &input);
        let vb = run_stdin(&["validate", "--json", "-"], &once.stdout);
        assert_eq!(findings(&va.stdout, b""), findings(&vb.stdout, b""), "{file}");
    }
    // The narrative is kept as one value, and sdtc: and xsi:type survive.
    let o = run(&["parse", "--json", &path_of("valid/ccd.xml")]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("\"narrative\":\"<table><thead><tr><th>Item</th>"), "{text}");
    assert!(text.contains("\"sdtc:deceasedInd\"") || text.contains("\"namespace\":\"urn:hl7-org:sdtc\""));
    assert!(text.contains("\"xsi:type\":\"CD\""));
    // A prefix for the CDA namespace, comments and `<x></x>` give the same canonical form.
    let input = std::fs::read_to_string(fixture("ccda/valid/ccd.xml")).expect("fixture");
    let prefixed = input
        .replace(
            "<ClinicalDocument xmlns=\"urn:hl7-org:v3\"",
            "<v3:ClinicalDocument xmlns=\"urn:hl7-org:v3\" xmlns:v3=\"urn:hl7-org:v3\"",
        )
        .replace("</ClinicalDocument>", "</v3:ClinicalDocument>")
        .replacen("<realmCode code=\"US\"/>", "<!-- c --><v3:realmCode code=\"US\"></v3:realmCode>", 1);
    let a = run_stdin(&["fmt", "-"], input.as_bytes());
    let b = run_stdin(&["fmt", "-"], prefixed.as_bytes());
    assert_eq!(code(&b), 0, "{}", String::from_utf8_lossy(&b.stderr));
    assert!(a.stdout == b.stdout, "prefix, comment and empty element not normalized");
    // An element in no namespace keeps it: `xmlns=""`.
    let bare = input.replacen("<realmCode code=\"US\"/>", "<realmCode xmlns=\"\" code=\"US\"/>", 1);
    let c = run_stdin(&["fmt", "-"], bare.as_bytes());
    assert!(String::from_utf8_lossy(&c.stdout).contains("<realmCode xmlns=\"\" code=\"US\"/>\n  <typeId root="));
}

/// The path of each element of a tree, as the findings write it: names, and an index where a
/// name repeats among its siblings.
fn paths(input: &str) -> (xml::Tree, Vec<String>, Vec<u32>) {
    let tree = xml::parse(input.as_bytes(), &Limits::default()).expect("well-formed");
    let n = tree.elements().len();
    let mut path = vec![String::new(); n];
    let mut parent = vec![u32::MAX; n];
    path[0] = "ClinicalDocument".into();
    let name = |i: u32| {
        let e = tree.elements()[i as usize];
        input[e.local.start as usize..e.local.end as usize].to_owned()
    };
    for p in 0..n as u32 {
        let kids: Vec<u32> = tree.children(p).collect();
        for &c in &kids {
            let nm = name(c);
            let same: Vec<u32> = kids.iter().copied().filter(|&k| name(k) == nm).collect();
            let step = if same.len() > 1 {
                format!("{nm}[{}]", same.iter().position(|&k| k == c).unwrap_or(0) + 1)
            } else {
                nm
            };
            path[c as usize] = format!("{}/{step}", path[p as usize]);
            parent[c as usize] = p;
        }
    }
    (tree, path, parent)
}

/// `(root, extension)` of the templateId children of element `e`.
fn declared(input: &str, tree: &xml::Tree, e: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in tree.children(e) {
        let el = tree.elements()[c as usize];
        let tag = &input[el.offset as usize..el.end_offset as usize];
        if tag.starts_with("<templateId") {
            let attr = |n: &str| {
                tag.split(&format!(" {n}=\"")).nth(1).and_then(|r| r.split('"').next()).unwrap_or_default().to_owned()
            };
            out.push((attr("root"), attr("extension")));
        }
    }
    out
}

fn template(root: &str, ext: &str) -> Option<&'static phiward::formats::ccda::base::Template> {
    TEMPLATES.iter().find(|t| t.root == root && t.extension == ext)
}

fn validate_text(text: &str) -> BTreeSet<String> {
    let o = run_stdin(&["validate", "--json", "--format", "ccda", "-"], text.as_bytes());
    findings(&o.stdout, &o.stderr)
}

/// Validates a mutated document and counts, per kind, whether a finding lies at `want_prefix`.
fn tally(
    tried: &mut std::collections::BTreeMap<&'static str, (usize, usize)>,
    misses: &mut Vec<String>,
    file: &str,
    kind: &'static str,
    mutated: &str,
    want_prefix: &str,
) {
    let got = validate_text(mutated);
    let hit = got.iter().any(|f| f.split_once(' ').is_some_and(|(_, loc)| loc.starts_with(want_prefix)));
    let slot = tried.entry(kind).or_default();
    slot.0 += 1;
    if hit {
        slot.1 += 1;
    } else {
        misses.push(format!("{file} {kind} {want_prefix}: {got:?}"));
    }
}

/// Mutations of the valid documents, each where it applies, each detected at its location.
#[test]
fn mutations_are_detected_at_their_location() {
    let mut tried = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    let mut misses = Vec::new();
    for file in ["valid/ccd.xml", "valid/discharge_summary.xml", "valid/referral_note.xml", "valid/progress_note.xml"] {
        let input = std::fs::read_to_string(fixture(&format!("ccda/{file}"))).expect("fixture");
        let (tree, path, parent) = paths(&input);
        let mut check = |kind: &'static str, mutated: String, want_prefix: String| {
            tally(&mut tried, &mut misses, file, kind, &mutated, &want_prefix);
        };
        let span = |i: u32| {
            let e = tree.elements()[i as usize];
            (e.offset as usize, e.end_offset as usize)
        };
        let doc_templates = declared(&input, &tree, 0);
        let required_sections: Vec<&str> = doc_templates
            .iter()
            .filter_map(|(r, x)| template(r, x))
            .flat_map(|t| t.rules.iter())
            .filter_map(|r| match r {
                Rule::Contains { path: "component/structuredBody/component", value, .. } => Some(*value),
                _ => None,
            })
            .collect();
        for i in 0..tree.elements().len() as u32 {
            let e = tree.elements()[i as usize];
            let (start, end) = span(i);
            let tag_end = start + input[start..].find('>').unwrap_or(0);
            let start_tag = &input[start..tag_end];
            let name = path[i as usize]
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .split('[')
                .next()
                .unwrap_or_default()
                .to_owned();
            // A required section removed (its component), and its templateId removed.
            if name == "section" {
                let ids = declared(&input, &tree, i);
                if let Some((root, _)) = ids.first()
                    && required_sections.contains(&root.as_str())
                {
                    let comp = parent[i as usize];
                    let (cs, ce) = span(comp);
                    let want = format!("ClinicalDocument/component/structuredBody/template:{root}");
                    check("required section removed", format!("{}{}", &input[..cs], &input[ce..]), want.clone());
                    let t = tree.children(i).next().expect("templateId");
                    let (ts, te) = span(t);
                    check("templateId removed", format!("{}{}", &input[..ts], &input[te..]), want);
                }
            }
            let templates: Vec<&'static phiward::formats::ccda::base::Template> =
                declared(&input, &tree, i).iter().filter_map(|(r, x)| template(r, x)).collect();
            for t in &templates {
                for rule in t.rules {
                    match rule {
                        // A fixed code changed.
                        Rule::Attr { path: "code", name: "code", value } => {
                            if let Some(c) = tree.children(i).find(|&c| path[c as usize].ends_with("/code")) {
                                let (s, ce) = span(c);
                                // 5.0's value (R2.1's, when it differs, follows a `|`).
                                let value = value.split('|').next().unwrap_or(value);
                                let old = format!("code=\"{value}\"");
                                if let Some(p) = input[s..ce].find(&old) {
                                    let at = s + p;
                                    let mutated =
                                        format!("{}code=\"{value}9\"{}", &input[..at], &input[at + old.len()..]);
                                    check(
                                        "fixed code changed",
                                        mutated,
                                        format!("{}/@code/template:", path[c as usize]),
                                    );
                                }
                            }
                        }
                        // A wrong moodCode.
                        Rule::Attr { path: "", name: "moodCode", value } if start_tag.contains("moodCode=") => {
                            let old = format!("moodCode=\"{value}\"");
                            if let Some(p) = start_tag.find(&old) {
                                let at = start + p;
                                let mutated = format!("{}moodCode=\"INT\"{}", &input[..at], &input[at + old.len()..]);
                                check("wrong moodCode", mutated, format!("{}/@moodCode/template:", path[i as usize]));
                            }
                        }
                        // A required element missing (each id a template requires).
                        Rule::Required { path: "id", .. } => {
                            if let Some(c) = tree.children(i).find(|&c| path[c as usize].ends_with("/id")) {
                                let (s, ce) = span(c);
                                check(
                                    "required element missing",
                                    format!("{}{}", &input[..s], &input[ce..]),
                                    format!("{}/id/template:", path[i as usize]),
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
            // A bad TS: month 13 in every time value.
            if matches!(name.as_str(), "effectiveTime" | "birthTime" | "time" | "low" | "high")
                && let Some(p) = start_tag.find(" value=\"")
            {
                let vs = start + p + 8;
                let ve = vs + input[vs..].find('"').unwrap_or(0);
                let v = &input[vs..ve];
                if v.len() >= 6 {
                    let mutated = format!("{}{}13{}{}", &input[..vs], &v[..4], &v[6..], &input[ve..]);
                    check("bad TS", mutated, format!("{}/@value", path[i as usize]));
                }
            }
            let _ = (e, end);
        }
    }
    r21_mutations(&mut tried, &mut misses);
    for kind in [
        "required section removed",
        "templateId removed",
        "fixed code changed",
        "wrong moodCode",
        "required element missing",
        "bad TS",
        "R2.1 required section removed",
        "R2.1 fixed code changed",
        "R2.1 fixed attribute changed",
        "R2.1 required element removed",
    ] {
        let (n, hit) = tried.get(kind).copied().unwrap_or_default();
        assert!(n >= 5, "{kind}: only {n} mutations");
        assert!(hit * 100 >= n * 99, "{kind}: {hit} of {n} detected: {misses:?}");
    }
}

/// The R2.1 templates' assertions on the R2.1 CCD, where each applies: a section its document
/// template requires removed; a fixed `code/@code` changed; a fixed classCode or moodCode
/// changed; a required child (`count(cda:x)=1`, `count(cda:x) > 0`) removed. Each detected at
/// its location with the template (5.0's finding where both define the constraint at the same
/// place, R2.1's with its CONF number otherwise).
fn r21_mutations(tried: &mut std::collections::BTreeMap<&'static str, (usize, usize)>, misses: &mut Vec<String>) {
    let file = "valid/ccd_r21.xml";
    let input = std::fs::read_to_string(fixture(&format!("ccda/{file}"))).expect("fixture");
    let (tree, path, parent) = paths(&input);
    let mut check = |kind: &'static str, mutated: String, want_prefix: String| {
        tally(tried, misses, file, kind, &mutated, &want_prefix);
    };
    let span = |i: u32| {
        let e = tree.elements()[i as usize];
        (e.offset as usize, e.end_offset as usize)
    };
    let local = |i: u32| {
        path[i as usize].rsplit('/').next().unwrap_or_default().split('[').next().unwrap_or_default().to_owned()
    };
    let r21 = |i: u32| -> Vec<&'static R21Template> {
        let name = local(i);
        declared(&input, &tree, i)
            .into_iter()
            .flat_map(|(r, x)| {
                let name = name.clone();
                R21_TEMPLATES.iter().filter(move |t| t.root == r && t.extension == x && t.element == name)
            })
            .collect()
    };
    let doc_asserts: Vec<&'static Assert> = r21(0).iter().flat_map(|t| t.asserts.iter()).collect();
    for i in 0..tree.elements().len() as u32 {
        let (start, end) = span(i);
        let start_tag = &input[start..start + input[start..].find('>').unwrap_or(0)];
        // A section the document's R2.1 template requires, removed with its component.
        if local(i) == "section"
            && let Some((root, ext)) = declared(&input, &tree, i).first()
            && doc_asserts.iter().any(|a| {
                a.kind == AssertKind::Content
                    && format!("{:?}", a.test).contains(&format!("{root:?}"))
                    && !ext.is_empty()
            })
        {
            let (cs, ce) = span(parent[i as usize]);
            check(
                "R2.1 required section removed",
                format!("{}{}", &input[..cs], &input[ce..]),
                "ClinicalDocument/component/structuredBody/template:".to_owned(),
            );
        }
        for t in r21(i) {
            for a in t.asserts.iter().filter(|a| a.context.is_empty()) {
                match &a.test {
                    // A fixed code: `cda:code[@code='X']`.
                    X::Count {
                        path: [Step { name: "code", preds: [X::Attr { name: "code", value: Some(v), .. }], .. }],
                        ..
                    } => {
                        if let Some(c) = tree.children(i).find(|&c| local(c) == "code") {
                            let (s, ce) = span(c);
                            let old = format!("code=\"{v}\"");
                            if let Some(p) = input[s..ce].find(&old) {
                                let at = s + p;
                                let mutated = format!("{}code=\"{v}9\"{}", &input[..at], &input[at + old.len()..]);
                                check(
                                    "R2.1 fixed code changed",
                                    mutated,
                                    format!("{}/@code/template:", path[c as usize]),
                                );
                            }
                        }
                    }
                    // A fixed classCode or moodCode of the template's element.
                    X::Attr { name: name @ ("classCode" | "moodCode"), value: Some(v), .. } => {
                        let old = format!(" {name}=\"{v}\"");
                        if let Some(p) = start_tag.find(&old) {
                            let at = start + p;
                            let mutated = format!("{} {name}=\"{v}X\"{}", &input[..at], &input[at + old.len()..]);
                            check(
                                "R2.1 fixed attribute changed",
                                mutated,
                                format!("{}/@{name}/template:", path[i as usize]),
                            );
                        }
                    }
                    // A required child: every occurrence removed.
                    X::Count { path: [Step { name, preds: [], sdtc: false }], op: Op::Eq | Op::Gt, n: 0 | 1 }
                        if a.kind == AssertKind::Element =>
                    {
                        let kids: Vec<u32> = tree.children(i).filter(|&c| local(c) == *name).collect();
                        if kids.is_empty() {
                            continue;
                        }
                        let mut mutated = String::new();
                        let mut at = 0;
                        for c in kids {
                            let (s, ce) = span(c);
                            mutated.push_str(&input[at..s]);
                            at = ce;
                        }
                        mutated.push_str(&input[at..]);
                        check(
                            "R2.1 required element removed",
                            mutated,
                            format!("{}/{name}/template:", path[i as usize]),
                        );
                    }
                    _ => {}
                }
            }
        }
        let _ = end;
    }
}

/// Values of the fixtures never reach a finding, a summary or stderr.
#[test]
fn no_value_in_findings_summaries_or_stderr() {
    const VALUES: &[&str] = &[
        "Marisol",
        "Testwright",
        "MRN-0042",
        "Daisy",
        "555-555",
        "Quill",
        "19700412",
        "19701304",
        "not an oid",
        "beats per minute",
        "favouriteColour",
        "colour",
        "blue",
        "USA",
        "XYZ",
        "Springfield",
    ];
    for e in manifest() {
        let file = e["file"].as_str().expect("file");
        for cmd in ["validate", "inspect"] {
            let o = run(&[cmd, "--json", &path_of(file)]);
            let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            for v in VALUES {
                assert!(!all.contains(v), "{cmd} {file} shows {v}: {all}");
            }
        }
    }
}

/// Error-severity findings (code and location) of a validate --json output.
fn errors(out: &[u8]) -> BTreeSet<String> {
    let v: Value = serde_json::from_slice(out).expect("validate JSON");
    v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| matches!(f["severity"].as_str(), Some("error" | "fatal")))
        .map(|f| format!("{} {}", f["code"].as_str().unwrap_or_default(), f["location"].as_str().unwrap_or_default()))
        .collect()
}

fn safe_harbor() -> String {
    crate::common::root().join("policy/safe-harbor.toml").to_string_lossy().into_owned()
}

/// Safe Harbor over the marker-filled CCD and Discharge Summary (fixtures/ccda/markers): no
/// marker left on any channel, the output well-formed, no error finding the original did not
/// have (the original's one bad TS is a marker: it is removed), every point in time a year,
/// the patient's guardian and birthplace gone, the names, addresses and telecoms masked, the
/// narrative blocks empty, the codes kept; the manifest counts fail-closed removals.
#[test]
fn safe_harbor_leaves_no_marker_and_stays_valid() {
    for file in ["markers/ccd.xml", "markers/discharge_summary.xml"] {
        let path = path_of(file);
        let original = std::fs::read(&path).expect("fixture");
        assert!(crate::no_leak::has_marker(&original), "{file} has no marker");
        let before = run(&["validate", "--json", &path]);
        let dir = std::env::temp_dir().join(format!("phiward-ccda-redact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let manifest = dir.join(format!("{}.manifest.json", file.replace('/', "_")));
        let manifest_s = manifest.to_string_lossy().into_owned();
        let o = run(&["redact", "--manifest", &manifest_s, &path]);
        assert_eq!(code(&o), 0, "{file}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!crate::no_leak::has_marker(&o.stdout), "{file}: marker in the output");
        assert!(!crate::no_leak::has_marker(&o.stderr), "{file}: marker on stderr");
        let m = std::fs::read(&manifest).expect("manifest");
        assert!(!crate::no_leak::has_marker(&m), "{file}: marker in the manifest");
        let m: Value = serde_json::from_slice(&m).expect("manifest JSON");
        assert!(m["failClosedRemovals"].as_u64().unwrap_or(0) > 0, "{file}: {m}");
        let _ = std::fs::remove_dir_all(&dir);
        // Well-formed, and no new error.
        let text = String::from_utf8(o.stdout.clone()).expect("UTF-8");
        xml::parse(text.as_bytes(), &Limits::default()).expect("well-formed output");
        let after = run_stdin(&["validate", "--json", "--format", "ccda", "-"], &o.stdout);
        let new: Vec<String> = errors(&after.stdout).difference(&errors(&before.stdout)).cloned().collect();
        assert!(new.is_empty(), "{file}: new error findings {new:?}");
        // What the rules say.
        for gone in ["<guardian", "<birthplace", "<originalText", "<given", "<streetAddressLine", "displayName="] {
            assert!(!text.contains(gone), "{file}: {gone} left");
        }
        assert!(text.contains("<name nullFlavor=\"MSK\"/>") && text.contains("<addr nullFlavor=\"MSK\"/>"));
        assert!(text.contains("<telecom nullFlavor=\"MSK\"/>") && text.contains("<id nullFlavor=\"MSK\"/>"));
        assert!(text.contains("<text/>") && !text.contains("<paragraph"), "{file}: narrative left");
        assert!(text.contains("<languageCode code=\"en\"/>"), "{file}: language not kept");
        assert!(text.contains("codeSystem=\"2.16.840.1.113883.6.1\""), "{file}: codes not kept");
        let mut times = 0;
        for name in ["effectiveTime", "birthTime", "time", "low", "high", "center"] {
            for rest in text.split(&format!("<{name} value=\"")).skip(1) {
                let v = rest.split('"').next().unwrap_or_default();
                times += 1;
                assert!(v.len() == 4 && v.bytes().all(|b| b.is_ascii_digit()), "{file}: {name} not a year");
            }
        }
        assert!(times > 5, "{file}: {times} times");
        // Determinism and a fixed point.
        let again = run(&["redact", &path]);
        assert!(again.stdout == o.stdout, "{file}: not deterministic");
        let twice = run_stdin(&["redact", "--format", "ccda", "-"], &o.stdout);
        assert!(twice.stdout == o.stdout, "{file}: redact is not idempotent");
    }
}

/// Every valid fixture redacts to a document with no error finding; parse and fmt under the
/// policy write the redacted document's model and XML.
#[test]
fn safe_harbor_keeps_valid_fixtures_valid() {
    let policy = safe_harbor();
    for entry in manifest() {
        let file = entry["file"].as_str().unwrap_or_default();
        if entry["expect"].as_str() != Some("valid") {
            continue;
        }
        let o = run(&["redact", &path_of(file)]);
        assert_eq!(code(&o), 0, "{file}");
        let v = run_stdin(&["validate", "--json", "--format", "ccda", "-"], &o.stdout);
        assert!(errors(&v.stdout).is_empty(), "{file}: {:?}", errors(&v.stdout));
        let f = run(&["fmt", "--policy", &policy, &path_of(file)]);
        assert_eq!(code(&f), 0, "{file}: fmt under the policy");
        assert!(f.stdout == o.stdout, "{file}: fmt under the policy is the redacted document");
    }
}

/// Keyed hashes of id extensions: the same input and key give the same bytes, another key other
/// bytes; no key, no output (the policy needs one).
#[test]
fn keyed_hash_is_deterministic() {
    let dir = std::env::temp_dir().join(format!("phiward-ccda-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let policy = dir.join("p.toml");
    std::fs::write(&policy, "[policy]\nname = \"t\"\n[[ccda]]\nselect = \"id@extension\"\naction = \"hash\"\n")
        .expect("policy");
    let (k1, k2) = (dir.join("k1"), dir.join("k2"));
    std::fs::write(&k1, b"first-key-0123456789abcdefghijkl").expect("key");
    std::fs::write(&k2, b"other-key-0123456789abcdefghijkl").expect("key");
    let p = policy.to_string_lossy().into_owned();
    let input = path_of("markers/ccd.xml");
    let r = |k: &std::path::Path| run(&["redact", "--policy", &p, "--key-file", &k.to_string_lossy(), &input]);
    let (a, b, c) = (r(&k1), r(&k1), r(&k2));
    assert_eq!(code(&a), 0, "{}", String::from_utf8_lossy(&a.stderr));
    assert!(a.stdout == b.stdout, "same key, other bytes");
    assert!(a.stdout != c.stdout, "other key, same bytes");
    assert!(!crate::no_leak::has_marker(&a.stdout));
    assert!(String::from_utf8_lossy(&a.stdout).contains(" extension=\""), "no hashed extension");
    let none = run(&["redact", "--policy", &p, &input]);
    assert_ne!(code(&none), 0);
    assert!(none.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fail closed: under a policy that names only the codes, every other value is gone (names,
/// classes, dates, narrative), and the document still parses.
#[test]
fn values_no_rule_names_are_removed() {
    let dir = std::env::temp_dir().join(format!("phiward-ccda-min-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let policy = dir.join("p.toml");
    std::fs::write(&policy, "[policy]\nname = \"t\"\n[[ccda]]\nselect = \"*@code\"\naction = \"keep\"\n")
        .expect("policy");
    let p = policy.to_string_lossy().into_owned();
    let o = run(&["redact", "--policy", &p, &path_of("valid/discharge_summary.xml")]);
    assert_eq!(code(&o), 0);
    let text = String::from_utf8(o.stdout).expect("UTF-8");
    xml::parse(text.as_bytes(), &Limits::default()).expect("well-formed");
    assert!(text.contains("code=\"18842-5\""), "the rule's values kept");
    for gone in
        ["codeSystem=", "classCode=", "root=", "value=", "Marisol", "Testwright", "Reviewed", "Discharge Summary"]
    {
        assert!(!text.contains(gone), "{gone} passed through");
    }
    assert!(text.contains("<birthTime nullFlavor=\"MSK\"/>"), "an emptied data type has its null flavor");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The error findings (`CODE location`) of a text validated as C-CDA, and the failure's cause.
fn errors_of(text: &str) -> BTreeSet<String> {
    let o = run_stdin(&["validate", "--json", "--format", "ccda", "-"], text.as_bytes());
    let mut set = BTreeSet::new();
    if let Ok(v) = serde_json::from_slice::<Value>(&o.stdout) {
        for f in v.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            if s("severity") == "error" || s("severity") == "fatal" {
                set.insert(format!("{} {}", s("code"), s("location")));
            }
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some(p) = err.find('(') {
        set.insert(err[p + 1..].split_whitespace().next().unwrap_or_default().to_owned());
    }
    set
}

const V3: &str = r#"xmlns="urn:hl7-org:v3" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance""#;

const ALLERGY_ACT: &str = r#"<act classCode="ACT" moodCode="EVN">
  <templateId root="2.16.840.1.113883.10.20.22.4.30" extension="2015-08-01"/>
  <id root="2.16.840.1.113883.19.5" extension="ALG-1"/>
  <code code="CONC" codeSystem="2.16.840.1.113883.5.6"/>
  <statusCode code="active"/>
  <effectiveTime><low value="20200101"/></effectiveTime>
  <entryRelationship typeCode="SUBJ">
    <observation classCode="OBS" moodCode="EVN">
      <templateId root="2.16.840.1.113883.10.20.22.4.7" extension="2014-06-09"/>
      <id root="2.16.840.1.113883.19.5" extension="ALO-1"/>
      <code code="ASSERTION" codeSystem="2.16.840.1.113883.5.4"/>
      <statusCode code="completed"/>
      <effectiveTime><low value="20200101"/></effectiveTime>
      <value xsi:type="CD" code="419511003" codeSystem="2.16.840.1.113883.6.96"/>
    </observation>
  </entryRelationship>
</act>"#;

/// What public C-CDA documents do and the schema allows: a fragment (an entry alone) validated
/// against its class and templates; an address of several street lines, a name of several
/// givens; a medication's time without `xsi:type` (the declared SXCM_TS) beside IVL_TS and
/// PIVL_TS; an R1.1 templateId (no extension) with R1.1's codes; R2.1's fixed codes beside
/// 5.0's. And what stays an error there.
#[test]
fn public_document_shapes() {
    let act = ALLERGY_ACT.replacen("<act ", &format!("<act {V3} "), 1);
    assert_eq!(errors_of(&act), BTreeSet::new(), "an entry alone");
    let wrong = act.replacen(r#"moodCode="EVN""#, r#"moodCode="INT""#, 1);
    assert_eq!(
        errors_of(&wrong),
        BTreeSet::from([
            "CCDA_TEMPLATE_VALUE_MISMATCH act/@moodCode/template:2.16.840.1.113883.10.20.22.4.30:2015-08-01".to_owned()
        ]),
    );
    // R1.1: the templateId without extension, the act's code LOINC 48765-2; its moodCode is
    // still checked.
    let r11 = act.replace(r#" extension="2015-08-01""#, "").replace(
        r#"code="CONC" codeSystem="2.16.840.1.113883.5.6""#,
        r#"code="48765-2" codeSystem="2.16.840.1.113883.6.1""#,
    );
    assert_eq!(errors_of(&r11), BTreeSet::new(), "an R1.1 allergy problem act");
    let r11_wrong = r11.replacen(r#"moodCode="EVN""#, r#"moodCode="INT""#, 1);
    assert_eq!(errors_of(&r11_wrong).len(), 1, "{:?}", errors_of(&r11_wrong));
    // A root that is no CDA element, or outside the CDA namespace: not read.
    assert!(errors_of(&format!("<notCda {V3}/>")).contains("CCDA_NAMESPACE_INVALID"));
    assert!(errors_of(r#"<act xmlns="urn:example"/>"#).contains("CCDA_NAMESPACE_INVALID"));

    let med = format!(
        r#"<substanceAdministration {V3} classCode="SBADM" moodCode="EVN">
  <id root="2.16.840.1.113883.19.5" extension="M-1"/>
  <statusCode code="completed"/>
  <effectiveTime xsi:type="IVL_TS"><low value="20200101"/></effectiveTime>
  <effectiveTime value="20200102"/>
  <effectiveTime xsi:type="PIVL_TS" institutionSpecified="true" operator="A"><period value="12" unit="h"/></effectiveTime>
  <consumable><manufacturedProduct><manufacturedMaterial><code code="197380" codeSystem="2.16.840.1.113883.6.88"/></manufacturedMaterial></manufacturedProduct></consumable>
  <performer><assignedEntity><id root="2.16.840.1.113883.4.6" extension="1"/><addr><streetAddressLine>1 A St</streetAddressLine><streetAddressLine>Suite 2</streetAddressLine><city>X</city></addr><assignedPerson><name><given>A</given><given>B</given><family>C</family></name></assignedPerson></assignedEntity></performer>
</substanceAdministration>"#
    );
    assert_eq!(errors_of(&med), BTreeSet::new(), "time sets, address and name parts");
    // observation/value has no default type: without xsi:type it is an error.
    let obs = format!(
        r#"<observation {V3} classCode="OBS" moodCode="EVN"><code code="8302-2" codeSystem="2.16.840.1.113883.6.1"/><value value="1"/></observation>"#
    );
    assert!(errors_of(&obs).contains("CCDA_DATATYPE_INVALID observation/value"), "{:?}", errors_of(&obs));
    // An R1.1 document (no templateId with an extension): its templates are R1.1's, checked
    // for classCode and moodCode only.
    let ccd = std::fs::read_to_string(fixture("ccda/valid/ccd.xml")).expect("ccd");
    let mut r11_doc = String::new();
    let mut rest = ccd.as_str();
    while let Some(p) = rest.find(" extension=\"20") {
        r11_doc.push_str(&rest[..p]);
        rest = &rest[p + " extension=\"2024-05-01\"".len()..];
    }
    r11_doc.push_str(rest);
    let r11_doc = r11_doc.replace("code=\"CONC\"", "code=\"48765-2\"");
    assert_eq!(errors_of(&r11_doc), BTreeSet::new(), "an R1.1 CCD");
    // R2.1's vital signs organizer code (SNOMED CT 46680005) is accepted beside 5.0's.
    let vs = template("2.16.840.1.113883.10.20.22.4.26", "2015-08-01").expect("vital signs organizer");
    assert!(
        vs.rules.iter().any(|r| matches!(r, Rule::Attr { path: "code", name: "code", value } if value.split('|').any(|v| v == "46680005"))),
        "R2.1's code accepted"
    );
}

/// Every finding (`CODE severity location`) of a text validated as C-CDA, and the failure's
/// cause.
fn all_of(text: &str) -> (i32, BTreeSet<String>) {
    let o = run_stdin(&["validate", "--json", "--format", "ccda", "-"], text.as_bytes());
    let mut set = BTreeSet::new();
    if let Ok(v) = serde_json::from_slice::<Value>(&o.stdout) {
        for f in v.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            if s("severity") != "information" {
                set.insert(format!("{} {} {}", s("code"), s("severity"), s("location")));
            }
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some(p) = err.find('(') {
        set.insert(err[p + 1..].split_whitespace().next().unwrap_or_default().to_owned());
    }
    (code(&o), set)
}

/// Regression (HL7 C-CDA-Examples, cause A): a fragment published without namespace
/// declarations that uses `xsi:type` was refused as malformed XML. It is read with the CDA,
/// `xsi` and `sdtc` namespaces, said once as a warning, and validated; a whole document without
/// them stays refused as a document reader refuses it; several top-level elements are each a
/// root.
#[test]
fn fragment_without_namespace_declarations_is_read_with_them() {
    let text = std::fs::read_to_string(fixture("ccda/valid/fragment_no_namespaces.xml")).expect("fixture");
    assert!(!text.contains("xmlns"), "the fixture declares no namespace");
    let (exit, got) = all_of(&text);
    assert_eq!((exit, got), (0, BTreeSet::from(["CCDA_FRAGMENT_NAMESPACES_IMPLIED warning section".to_owned()])));
    // The same section with a template's fixed value broken: validated, so found.
    let broken = text.replacen(r#"code="11450-4""#, r#"code="11450-5""#, 1);
    let (exit, got) = all_of(&broken);
    assert_eq!(exit, 1);
    assert!(got.iter().any(|f| f.starts_with("CCDA_TEMPLATE_VALUE_MISMATCH error section/code/@code/")), "{got:?}");
    // A prefix other than xsi and sdtc stays undeclared.
    let (exit, got) = all_of(&text.replacen("<title>", "<title><p:x/>", 1));
    assert_eq!((exit, got.contains("MALFORMED_XML")), (65, true));
    // A whole document without declarations: refused, as before.
    let doc = std::fs::read_to_string(fixture("ccda/valid/ccd.xml")).expect("fixture");
    let start = doc.find("<ClinicalDocument").expect("root");
    let end = start + doc[start..].find('>').expect("tag end");
    let bare = format!("{}<ClinicalDocument>{}", &doc[..start], &doc[end + 1..]);
    let (exit, got) = all_of(&bare);
    assert_eq!((exit, got), (65, BTreeSet::from(["MALFORMED_XML".to_owned()])), "xsi: undeclared in a document");
    let no_xsi = bare.replace(r#" xsi:type="CD""#, "").replace(r#" xsi:type="PQ""#, "").replace("sdtc:", "");
    assert!(!no_xsi.contains("xsi:"), "no prefix left");
    let (exit, got) = all_of(&no_xsi);
    assert_eq!((exit, got), (65, BTreeSet::from(["CCDA_NAMESPACE_INVALID".to_owned()])), "a document in no namespace");
    // A document beside a fragment: one root only.
    let (exit, got) = all_of(&format!("{doc}{text}"));
    assert_eq!((exit, got), (65, BTreeSet::from(["MALFORMED_XML".to_owned()])));
    // Several top-level components: each validated as a root, located by its index.
    let two = std::fs::read_to_string(fixture("ccda/valid/fragment_components.xml")).expect("fixture");
    let (exit, got) = all_of(&two.replacen(r#"moodCode="EVN""#, r#"moodCode="INT""#, 1));
    assert_eq!(exit, 1);
    assert!(
        got.iter()
            .any(|f| f.starts_with("CCDA_TEMPLATE_VALUE_MISMATCH error component[1]/section/entry[1]/act/@moodCode")),
        "{got:?}"
    );
    // fmt writes each with the declarations; the canonical form is read without the warning.
    let o = run_stdin(&["fmt", "--format", "ccda", "-"], two.as_bytes());
    assert_eq!(code(&o), 0);
    let canonical = String::from_utf8(o.stdout).expect("UTF-8");
    assert_eq!(canonical.matches(r#"<component xmlns="urn:hl7-org:v3""#).count(), 2, "{canonical}");
    assert_eq!(all_of(&canonical), (0, BTreeSet::new()));
    let o = run_stdin(&["parse", "--json", "--format", "ccda", "-"], two.as_bytes());
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["model"]["fragments"].as_array().map(Vec::len), Some(2));
    // Detected as C-CDA without --format.
    let o = run_stdin(&["validate", "-"], text.as_bytes());
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
}

/// Regression (HL7 C-CDA-Examples, cause B): a fragment rooted at `component` was read as the
/// document's body component (Component2), so its `section` was unknown. The class is the one
/// whose `component` holds the child: a structured body's (Component3) for a section, an
/// organizer's (Component4) for an observation.
#[test]
fn component_root_is_resolved_by_its_child() {
    let text = std::fs::read_to_string(fixture("ccda/valid/fragment_component.xml")).expect("fixture");
    assert_eq!(all_of(&text), (0, BTreeSet::new()));
    let obs = format!(
        r#"<component {V3}><observation classCode="OBS" moodCode="EVN"><code code="8480-6" codeSystem="2.16.840.1.113883.6.1"/><statusCode code="completed"/></observation></component>"#
    );
    assert_eq!(all_of(&obs), (0, BTreeSet::new()));
    // What no class's component holds stays unknown.
    let (exit, got) = all_of(&format!(r#"<component {V3}><recordTarget/></component>"#));
    assert_eq!(exit, 1);
    assert!(got.contains("CCDA_ELEMENT_UNKNOWN error component/recordTarget"), "{got:?}");
}

/// Regression (HL7 C-CDA-Examples, cause C): an unversioned templateId (Progress Toward Goal
/// Observation) got 5.0's effectiveTime minimum in documents that are not of C-CDA 3.0 or
/// later; R2.1's template, which has none, applies there, 5.0's in a 5.0 document. A fragment
/// follows its own templateIds: R2.1's where one is of an R2.1 version 5.0 replaced, 5.0's
/// where one is of C-CDA 3.0 or later or none tells.
#[test]
fn unversioned_template_follows_the_document_version() {
    let text = std::fs::read_to_string(fixture("ccda/valid/fragment_progress_toward_goal.xml")).expect("fixture");
    assert_eq!(all_of(&text), (0, BTreeSet::new()), "an R2.1 fragment");
    let start = text[1..].find("<observation").expect("the inner observation") + 1;
    let end = text.find("</observation>").expect("its end") + "</observation>".len();
    let inner = &text[start..end];
    let missing = "observation/effectiveTime/template:2.16.840.1.113883.10.20.22.4.110:";
    let has_missing = |got: &BTreeSet<String>| {
        got.iter().any(|f| f.starts_with("CCDA_TEMPLATE_ELEMENT_MISSING error") && f.ends_with(missing))
    };
    let entry = format!(r#"<entryRelationship typeCode="REFR">{inner}</entryRelationship>"#);
    for (file, v50) in [("ccd.xml", true), ("ccd_r21.xml", false)] {
        let doc = std::fs::read_to_string(fixture(&format!("ccda/valid/{file}"))).expect("fixture");
        let at = doc.find("<entryRelationship").expect("an entryRelationship");
        let (exit, got) = all_of(&format!("{}{entry}{}", &doc[..at], &doc[at..]));
        assert_eq!((has_missing(&got), exit == 1), (v50, v50), "{file}: {got:?}");
    }
    // The observation alone: nothing tells its version; the package's (5.0) applies.
    let alone = inner.replacen("<observation ", &format!("<observation {V3} "), 1);
    let (exit, got) = all_of(&alone);
    assert_eq!((exit, has_missing(&got)), (1, true), "{got:?}");
    // With a templateId of C-CDA 3.0 or later: 5.0's.
    let later = text.replacen(r#"extension="2015-08-01""#, r#"extension="2024-05-01""#, 1);
    let (exit, got) = all_of(&later);
    assert_eq!((exit, has_missing(&got)), (1, true), "{got:?}");
}

/// Regression (HL7 C-CDA-Examples, cause D): IHE Pharm elements (`urn:ihe:pharm:medication`)
/// in a manufactured material were unknown elements. An element of another namespace in a CDA
/// class is an extension (CDA R2 extensibility): a warning, its content not checked; in the CDA
/// namespace, in no namespace, or inside a data type it stays an error.
#[test]
fn extension_elements_of_another_namespace_are_a_warning() {
    let text = std::fs::read_to_string(fixture("ccda/valid/fragment_extension_element.xml")).expect("fixture");
    let warning = "CCDA_EXTENSION_ELEMENT warning manufacturedProduct/manufacturedMaterial/*";
    assert_eq!(all_of(&text), (0, BTreeSet::from([warning.to_owned()])));
    let unknown = |t: &str, at: &str| {
        let (exit, got) = all_of(t);
        assert_eq!(exit, 1, "{got:?}");
        assert!(got.contains(&format!("CCDA_ELEMENT_UNKNOWN error {at}")), "{got:?}");
    };
    unknown(&text.replace("pharm:formCode", "formCode"), "manufacturedProduct/manufacturedMaterial/*");
    unknown(
        &text.replace("<pharm:formCode", r#"<formCode xmlns="""#).replace("pharm:", ""),
        "manufacturedProduct/manufacturedMaterial/*",
    );
    let in_data_type = text.replacen(r#"displayName="Amlodipine 5 MG Oral Tablet"/>"#, r#"><pharm:x/></code>"#, 1);
    unknown(&in_data_type, "manufacturedProduct/manufacturedMaterial/code/*");
}

/// A value set not bundled is reported once per document, at the first element bound to it
/// that holds a code, never per element: the CCD's two allergy concern acts both have a
/// statusCode the 5.0 template binds to a VSAC value set; every finding names a value set of
/// the tables; no value set is reported twice in any fixture.
#[test]
fn unbundled_value_set_is_reported_once_per_document() {
    use phiward::formats::ccda::vs_tables::VALUE_SETS;
    let vsac = "http://cts.nlm.nih.gov/fhir/ValueSet/2.16.840.1.113883.11.20.9.19";
    for e in manifest() {
        let file = e["file"].as_str().expect("file");
        let o = run(&["validate", "--json", &path_of(file)]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        let mut seen = BTreeSet::new();
        for f in v["findings"].as_array().into_iter().flatten() {
            if !matches!(f["code"].as_str(), Some("CCDA_BINDING" | "CCDA_BINDING_UNCHECKED")) {
                continue;
            }
            let loc = f["location"].as_str().expect("location");
            let (_, url) = loc.split_once("/valueSet:").expect("a binding finding names its value set");
            let set = VALUE_SETS.iter().find(|s| s.url == url).expect("a value set of the tables");
            if f["code"] == "CCDA_BINDING_UNCHECKED" {
                assert_eq!(f["severity"], "information", "{file}");
                assert!(!set.bundled, "{file}: {url}");
                assert!(seen.insert(url.to_owned()), "{file}: {url} reported twice");
            } else {
                assert!(set.bundled, "{file}: {url}");
            }
        }
        if file == "valid/ccd.xml" {
            assert!(seen.contains(vsac), "{seen:?}");
            let text = std::fs::read_to_string(fixture("ccda/valid/ccd.xml")).expect("fixture");
            assert!(text.matches("4.30\" extension=\"2015-08-01\"").count() >= 2, "two allergy concern acts");
        }
    }
}

/// A template binding an element to the value set the base binds it to (Result Observation
/// `2023-05-01`'s interpretationCode, `CDAObservationInterpretation`) gives one finding, the
/// base's, not two.
#[test]
fn binding_of_base_and_template_is_reported_once() {
    let text = r#"<observation xmlns="urn:hl7-org:v3" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" classCode="OBS" moodCode="EVN">
  <templateId root="2.16.840.1.113883.10.20.22.4.2" extension="2023-05-01"/>
  <id root="2.16.840.1.113883.19.5" extension="R1"/>
  <code code="2345-7" codeSystem="2.16.840.1.113883.6.1"/>
  <statusCode code="completed"/>
  <effectiveTime value="20240101"/>
  <value xsi:type="PQ" value="1" unit="mg/dL"/>
  <interpretationCode code="LX" codeSystem="2.16.840.1.113883.5.83"/>
</observation>
"#;
    assert!(
        template("2.16.840.1.113883.10.20.22.4.2", "2023-05-01")
            .is_some_and(|t| t.rules.iter().any(|r| matches!(r, Rule::Bind { path: "interpretationCode", .. }))),
        "the template binds interpretationCode"
    );
    let got: Vec<String> = validate_text(text).into_iter().filter(|f| f.starts_with("CCDA_BINDING ")).collect();
    assert_eq!(
        got,
        [
            "CCDA_BINDING observation/interpretationCode/@code/valueSet:http://hl7.org/cda/stds/core/ValueSet/CDAObservationInterpretation"
        ]
    );
}
