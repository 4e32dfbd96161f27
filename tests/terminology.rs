//! Terminology: the published score's reference values, exact-name concepts ranked first for
//! common clinical terms, the `find-equivalent` contract on the CLI (and its equality with the
//! MCP tool), `terminology list` licences, the importers on tiny synthetic files in the real
//! formats, and `map-codes` (one code, batch, scan) with value-free findings and exit codes.

use std::path::PathBuf;

use phiward::terminology::find::{Query, find_equivalent};
use phiward::terminology::score::score;
use phiward::terminology::{Catalog, System};
use serde_json::{Value, json};

use crate::common::{code, fixture, run, run_stdin};

const GENDER_V2: &str = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2";
const GENDER: &str = "http://hl7.org/fhir/administrative-gender";

fn query(term: &str) -> Query {
    Query { term: term.to_owned(), limit: 5, source: None, targets: Vec::new(), include_deprecated: false }
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// A fresh data folder under the target directory (never /tmp).
fn data_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("terminology").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("data dir");
    dir
}

#[test]
fn reference_values() {
    assert_eq!(score("diabetes", "Diabetes mellitus"), 0.833);
    assert_eq!(score("aspirin", "aspirin / caffeine oral product"), 0.7);
    assert_eq!(score("metformin", "Metformin hydrochloride"), 0.833);
    assert_eq!(score("hipertensão", "hipertensao"), 1.0);
}

/// (term, [(code system, the exact-name concept)]) for the bundled data.
const COMMON: &[(&str, &[(&str, &str)])] = &[
    ("diabetes mellitus", &[("mesh", "D003920")]),
    ("type 2 diabetes mellitus", &[("icd10cm", "E11")]),
    ("hypertension", &[("mesh", "D006973")]),
    ("asthma", &[("icd10cm", "J45"), ("mesh", "D001249")]),
    ("pneumonia", &[("mesh", "D011014")]),
    ("cholera", &[("icd10cm", "A00"), ("mesh", "D002771")]),
    ("migraine", &[("icd10cm", "G43")]),
    ("tuberculosis", &[("mesh", "D014376")]),
    ("gout", &[("icd10cm", "M10"), ("mesh", "D006073")]),
    ("psoriasis", &[("icd10cm", "L40"), ("mesh", "D011565")]),
    ("schizophrenia", &[("icd10cm", "F20"), ("mesh", "D012559")]),
    ("measles", &[("icd10cm", "B05"), ("mesh", "D008457")]),
    ("heart failure", &[("icd10cm", "I50"), ("mesh", "D006333")]),
    ("epilepsy", &[("mesh", "D004827")]),
    ("sepsis", &[("mesh", "D018805")]),
    ("aspirin", &[("mesh", "D001241")]),
    ("metformin", &[("mesh", "D008687")]),
    ("insulin", &[("mesh", "D007328")]),
    ("ibuprofen", &[("mesh", "D007052")]),
    ("acetaminophen", &[("mesh", "D000082")]),
    ("warfarin", &[("mesh", "D014859")]),
    ("amoxicillin", &[("mesh", "D000658")]),
    ("lisinopril", &[("mesh", "D017706")]),
    ("atorvastatin", &[("mesh", "D000069059")]),
    ("glucose", &[("mesh", "D005947")]),
    ("creatinine", &[("mesh", "D003404")]),
    ("cholesterol", &[("mesh", "D002784")]),
    ("potassium", &[("mesh", "D011188")]),
    ("bilirubin", &[("mesh", "D001663")]),
    ("heart rate", &[("mesh", "D006339")]),
    ("body weight", &[("mesh", "D001835")]),
    ("discharge summary", &[("loinc", "18842-5")]),
    ("history and physical note", &[("loinc", "34117-2")]),
    ("consult note", &[("loinc", "11488-4")]),
    ("asthma action plan", &[("loinc", "69981-9")]),
];

#[test]
fn exact_name_concepts_rank_first_in_each_code_system_that_has_them() {
    let catalog = Catalog::new(None);
    for (term, expected) in COMMON {
        // limit 1: the live tools' short window would miss several of these.
        let mut q = query(term);
        q.limit = 1;
        let (v, any) = find_equivalent(&q, &catalog);
        assert!(any, "{term}");
        for (system, concept) in *expected {
            let first = &v["results"][*system]["items"][0];
            assert_eq!(first["code"], *concept, "{term} in {system}: {first}");
            assert_eq!(first["match_score"], 1.0, "{term} in {system}");
        }
        // Global rank: the exact concepts come first, in code-system order.
        let mut ranks: Vec<(u64, &str)> =
            expected.iter().map(|(s, _)| (v["results"][*s]["items"][0]["rank"].as_u64().expect("rank"), *s)).collect();
        ranks.sort_unstable();
        let order: Vec<usize> =
            ranks.iter().map(|(_, s)| System::ALL.iter().position(|x| x.as_str() == *s).expect("system")).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{term}: ties broken by code-system order");
        assert_eq!(ranks[0].0, 1, "{term}");
    }
}

#[test]
fn synonyms_match_and_are_reported() {
    let catalog = Catalog::new(None);
    let mut q = query("diabetes NOS");
    q.targets = vec![System::Icd10cm];
    let (v, _) = find_equivalent(&q, &catalog);
    let first = &v["results"]["icd10cm"]["items"][0];
    assert_eq!(first["code"], "E11");
    assert_eq!(first["title"], "Type 2 diabetes mellitus");
    assert_eq!(first["matched_label"], "diabetes NOS");
    assert_eq!(first["match_score"], 1.0);
}

#[test]
fn find_equivalent_cli_contract() {
    let o = run(&[
        "find-equivalent",
        "--json",
        "--limit",
        "2",
        "--source",
        "mesh",
        "--target",
        "mesh",
        "--target",
        "icd10cm",
        "--target",
        "rxnorm",
        "cholera",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_of(&o);
    assert_eq!(v["term"], "cholera");
    assert_eq!(v["source_terminology"], "mesh");
    assert_eq!(v["searched_terminologies"], json!(["icd10cm", "rxnorm"]));
    assert_eq!(v["results"]["rxnorm"]["found"], false);
    assert!(v["results"]["rxnorm"]["error"].as_str().is_some_and(|e| e.contains("not available offline")));
    assert_eq!(v["results"]["icd10cm"]["items"].as_array().map(Vec::len), Some(2));
    assert!(v["results"].get("mesh").is_none());
    assert_eq!(v["ranking"]["method"], "lexical");
    let prov = v["provenance"].as_array().expect("provenance");
    assert!(prov.iter().any(|p| p["derived"] == true && p["derivation"].is_string()));
    assert!(prov.iter().all(|p| p["retrieval"].is_null() && p.get("license").is_some() && p.get("citation").is_some()));
    assert!(v["attribution"].as_str().is_some_and(|a| a.contains("ICD-10-CM")));
    // Groups: the same normalized title in two code systems.
    let v = json_of(&run(&["find-equivalent", "--json", "Cholera"]));
    let g = &v["groups"][0];
    assert_eq!(g["normalized_title"], "cholera");
    assert_eq!(g["terminologies"], json!(["icd10cm", "mesh"]));
    // Nothing found anywhere: exit 1 with data; the term from stdin keeps it off argv.
    let o = run_stdin(&["find-equivalent", "--json", "-"], b"zzqxv\n");
    assert_eq!(code(&o), 1);
    assert_eq!(json_of(&o)["term"], "zzqxv");
    assert!(o.stderr.is_empty());
    // Fail closed.
    for args in [
        &["find-equivalent", "--limit", "11", "x"][..],
        &["find-equivalent", "--target", "snomed", "x"],
        &["find-equivalent", "--nope", "x"],
    ] {
        let o = run(args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(!String::from_utf8_lossy(&o.stderr).contains("snomed"));
    }
    let o = run_stdin(&["find-equivalent", "-"], &vec![b'a'; 5000]);
    assert_eq!(code(&o), 65);
}

#[test]
fn deterministic_output() {
    let a = run(&["find-equivalent", "--json", "--limit", "10", "heart"]);
    let b = run(&["find-equivalent", "--json", "--limit", "10", "heart"]);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn terminology_list_shows_licence_and_citation_of_every_dataset() {
    let o = run(&["terminology", "list", "--json", "--data-dir", "/nonexistent/phiward"]);
    assert_eq!(code(&o), 0);
    let v = json_of(&o);
    let names: Vec<&str> =
        v["datasets"].as_array().expect("datasets").iter().filter_map(|d| d["dataset"].as_str()).collect();
    assert_eq!(names, ["icd10cm", "loinc", "mesh", "conceptmaps", "ucum"]);
    for d in v["datasets"].as_array().expect("datasets") {
        assert!(d["license"].as_str().is_some_and(|s| s.len() > 20), "{d}");
        assert!(d["citation"].as_str().is_some_and(|s| s.len() > 20), "{d}");
        assert!(d["vintage"].as_str().is_some_and(|s| !s.is_empty()), "{d}");
    }
    let loinc = &v["datasets"][1];
    assert!(loinc["notice"].as_str().is_some_and(|n| n.contains("Regenstrief")));
    let text = String::from_utf8(run(&["terminology", "list"]).stdout).expect("utf-8");
    assert!(text.contains("licence:") && text.contains("citation:") && text.contains("notice:"));
    assert!(!text.to_lowercase().contains("snomed ct content"));
}

#[test]
fn importers_read_the_real_formats() {
    let dir = data_dir("importers");
    let d = dir.to_str().expect("utf-8 path");
    let files = [
        ("rxnorm", "RXNCONSO.RRF"),
        ("loinc", "Loinc.csv"),
        ("icd11", "LinearizationMiniOutput-MMS-en.txt"),
        ("mesh", "desc_sample.xml"),
    ];
    for (system, file) in files {
        let f = fixture(&format!("terminology/{file}"));
        let o =
            run(&["terminology", "import", system, f.to_str().expect("path"), "--data-dir", d, "--vintage", "2026-01"]);
        assert_eq!(code(&o), 0, "{system}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let list = json_of(&run(&["terminology", "list", "--json", "--data-dir", d]));
    let origins: Vec<&str> =
        list["terminologies"].as_array().expect("list").iter().filter_map(|t| t["origin"].as_str()).collect();
    assert_eq!(origins, ["bundled", "imported", "imported", "imported", "imported"]);
    let catalog = Catalog::new(Some(dir.clone()));
    let (v, _) = find_equivalent(&query("metformin"), &catalog);
    assert_eq!(v["results"]["rxnorm"]["items"][0]["code"], "6809");
    assert_eq!(v["results"]["rxnorm"]["items"][0]["match_score"], 1.0);
    assert_eq!(v["results"]["rxnorm"]["items"][1]["match_score"], 0.833);
    // The imported MeSH replaces the bundled one; entry terms are synonyms.
    let (v, _) = find_equivalent(&query("NIDDM"), &catalog);
    assert_eq!(v["results"]["mesh"]["items"][0]["code"], "D003924");
    assert_eq!(v["results"]["mesh"]["items"][0]["matched_label"], "NIDDM");
    let (v, _) = find_equivalent(&query("essential hypertension"), &catalog);
    assert_eq!(v["results"]["icd11"]["items"][0]["code"], "BA00");
    assert_eq!(v["results"]["icd11"]["items"][0]["title"], "Essential hypertension");
    let (v, _) = find_equivalent(&query("hemoglobin a1c"), &catalog);
    assert_eq!(v["results"]["loinc"]["items"][0]["code"], "4548-4");
    assert!(v["attribution"].as_str().is_some_and(|a| a.contains("LOINC")));
    // Deprecated concepts are left out unless asked for; French atoms are not imported.
    let (v, _) = find_equivalent(&query("obsoletamine"), &catalog);
    assert_eq!(v["results"]["rxnorm"]["found"], false);
    let mut q = query("obsoletamine");
    q.include_deprecated = true;
    let (v, _) = find_equivalent(&q, &catalog);
    assert_eq!(v["results"]["rxnorm"]["items"][0]["deprecated"], true);
    let (v, _) = find_equivalent(&query("aspirine"), &catalog);
    assert!(v["results"]["rxnorm"]["items"].as_array().expect("items").iter().all(|i| i["code"] != "999002"));
    // The MeSH ASCII format too.
    let ascii = data_dir("mesh-ascii");
    let f = fixture("terminology/d_sample.bin");
    let o =
        run(&["terminology", "import", "mesh", f.to_str().expect("path"), "--data-dir", ascii.to_str().expect("path")]);
    assert_eq!(code(&o), 0);
    let (v, _) = find_equivalent(&query("high blood pressure"), &Catalog::new(Some(ascii)));
    assert_eq!(v["results"]["mesh"]["items"][0]["code"], "D006973");
    // The licence of an import is shown.
    let text = String::from_utf8(run(&["terminology", "list", "--data-dir", d]).stdout).expect("utf-8");
    assert!(text.contains("World Health Organization") && text.contains("UMLS"));
}

#[test]
fn importers_fail_closed() {
    let dir = data_dir("bad");
    let d = dir.to_str().expect("path");
    let wrong = fixture("terminology/RXNCONSO.RRF");
    let o = run(&["terminology", "import", "loinc", wrong.to_str().expect("path"), "--data-dir", d]);
    assert_eq!(code(&o), 65);
    crate::common::assert_failure_line(&o, "TERMINOLOGY_FILE_INVALID");
    let o = run(&["terminology", "import", "rxnorm", "/nonexistent/smith_john.rrf", "--data-dir", d]);
    assert_eq!(code(&o), 66);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("smith"));
    let file_as_dir = fixture("terminology/Loinc.csv");
    let o = run(&[
        "terminology",
        "import",
        "loinc",
        file_as_dir.to_str().expect("path"),
        "--data-dir",
        file_as_dir.to_str().expect("path"),
    ]);
    assert_eq!(code(&o), 73);
    crate::common::assert_failure_line(&o, "TERMINOLOGY_DATA_DIR_UNAVAILABLE");
}

#[test]
fn map_codes_one_batch_and_scan() {
    let o = run(&["map-codes", "--json", "--map", GENDER_V2, "--system", GENDER, "--code", "female"]);
    assert_eq!(code(&o), 0);
    let v = json_of(&o);
    assert_eq!(v["results"][0]["targets"][0]["code"], "F");
    let o = run(&["map-codes", "--json", "--map", GENDER_V2, "--system", GENDER, "--code", "MKR00001X"]);
    assert_eq!(code(&o), 1);
    let v = json_of(&o);
    assert_eq!(v["findings"], json!([{"code": "CODE_UNMAPPED", "severity": "error", "location": "-"}]));
    assert!(o.stderr.is_empty());
    let batch =
        format!("{{\"system\":\"{GENDER}\",\"code\":\"male\"}}\n{{\"system\":\"http://other\",\"code\":\"male\"}}\n");
    let o = run_stdin(&["map-codes", "--json", "--map", GENDER_V2, "--batch", "-"], batch.as_bytes());
    assert_eq!(code(&o), 1);
    assert_eq!(json_of(&o)["findings"][0]["location"], "record:2");
    // A user map, and a scan of an HL7 v2 message.
    let map = fixture("terminology/conceptmap_loinc_local.json");
    let msg = fixture("terminology/oru_r01.hl7");
    let o = run(&["map-codes", "--json", "--map", map.to_str().expect("path"), "--scan", msg.to_str().expect("path")]);
    let v = json_of(&o);
    assert_eq!(code(&o), 1, "{v}");
    let at = |loc: &str| v["results"].as_array().and_then(|r| r.iter().find(|x| x["location"] == loc)).cloned();
    let glucose = at("OBX[1]-3[1].1").expect("OBX-3 is CE");
    assert_eq!(glucose["system"], "http://loinc.org", "LN is LOINC");
    assert_eq!(glucose["targets"][0]["code"], "GLU");
    assert!(at("OBR[1]-4[1].1").is_some(), "OBR-4 is CE");
    assert_eq!(at("OBX[2]-3[1].1").expect("OBX[2]-3")["mapped"], false, "unmatched is unmapped");
    let findings = v["findings"].as_array().expect("findings");
    assert!(findings.iter().any(|f| f["location"] == "OBX[2]-3[1].1" && f["code"] == "CODE_UNMAPPED"));
    assert!(!serde_json::to_string(findings).expect("json").contains("718-7"), "findings are value-free");
    // Fail closed.
    let o = run(&["map-codes", "--map", "http://example.org/none", "--system", "s", "--code", "c"]);
    assert_eq!(code(&o), 65);
    crate::common::assert_failure_line(&o, "CONCEPTMAP_INVALID");
    let o = run(&["map-codes", "--map", GENDER_V2, "--code", "c"]);
    assert_eq!(code(&o), 2);
}

#[cfg(feature = "mcp")]
#[test]
fn mcp_find_equivalent_equals_the_cli() {
    use phiward::mcp::{Config, dispatch};
    for term in ["asthma", "hipertensão", "zzqxv"] {
        let args = json!({"term": term, "limit": 3});
        let reply = dispatch("find_equivalent", args.as_object().cloned(), &Config::default()).into_value();
        let o = run(&["find-equivalent", "--json", "--limit", "3", term]);
        assert_eq!(reply["exit"], json!(code(&o)), "{term}");
        assert_eq!(reply["data"], json_of(&o), "{term}");
    }
    let bad = dispatch("find_equivalent", json!({"term": "x", "limit": 0}).as_object().cloned(), &Config::default());
    let meaning = phiward::diag::Code::CLI_USAGE.meaning();
    let usage = json!({"ok": false, "status": "failed", "exit": 2, "code": "CLI_USAGE", "message": meaning, "argument": "limit"});
    assert_eq!(bad.into_value(), usage);
    // map_codes over MCP: a message in `content` is scanned as `--scan` does.
    let msg = std::fs::read_to_string(fixture("terminology/oru_r01.hl7")).expect("fixture");
    let map = std::fs::read_to_string(fixture("terminology/conceptmap_loinc_local.json")).expect("fixture");
    let args = json!({"conceptmap": map, "content": msg});
    let reply = dispatch("map_codes", args.as_object().cloned(), &Config::default()).into_value();
    let cli = run(&[
        "map-codes",
        "--json",
        "--map",
        fixture("terminology/conceptmap_loinc_local.json").to_str().expect("path"),
        "--scan",
        fixture("terminology/oru_r01.hl7").to_str().expect("path"),
    ]);
    assert_eq!(reply["status"], "verdict");
    assert_eq!(reply["data"]["results"], json_of(&cli)["results"]);
}

/// Marker terms and codes go to stdout (the caller's own data) and never to stderr, even with
/// every log on; findings never carry them.
#[test]
fn markers_never_reach_stderr_or_findings() {
    use crate::common::run_with;
    use crate::no_leak::has_marker;
    let env = [("RUST_LOG", "trace")];
    let o = run_with(&["find-equivalent", "--json", "MKR00101X diabetes"], None, &env);
    assert_eq!(code(&o), 0);
    assert!(!has_marker(&o.stderr));
    let o = run_with(&["find-equivalent", "-"], Some(b"MKR00102X".as_slice()), &env);
    assert_eq!(code(&o), 1);
    assert!(!has_marker(&o.stderr));
    let o = run_with(
        &["map-codes", "--json", "--map", GENDER_V2, "--system", "MKR00103X", "--code", "MKR00104X"],
        None,
        &env,
    );
    assert_eq!(code(&o), 1);
    assert!(!has_marker(&o.stderr));
    assert!(!has_marker(json_of(&o)["findings"].to_string().as_bytes()));
    for f in crate::common::files_under(&fixture("hl7v2/markers")) {
        let p = f.to_str().expect("path");
        let o = run_with(&["map-codes", "--json", "--map", GENDER_V2, "--scan", p], None, &env);
        assert!(!has_marker(&o.stderr), "{p}");
        if let Ok(v) = serde_json::from_slice::<Value>(&o.stdout) {
            assert!(!has_marker(v["findings"].to_string().as_bytes()), "{p}");
        }
    }
}

/// A deterministic generator (xorshift), so the garbage tests need no dependency.
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Garbage never panics the index builder, the search or the importers.
#[test]
fn garbage_never_panics() {
    use phiward::terminology::index::Index;
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    let alphabet: Vec<char> = "ab\t\n\r#d é|,\"<>=DescriptorUI*NEWRECORD UI = MH = ".chars().collect();
    let dir = data_dir("garbage");
    for i in 0..300 {
        let len = (next() % 300) as usize;
        let text: String = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
        if let Ok(index) = Index::build(text.clone()) {
            for q in ["a", "b d", "", "é"] {
                let _ = index.search(&phiward::terminology::score::normalize(q), i % 2 == 0);
            }
        }
        let file = dir.join("input");
        std::fs::write(&file, &text).expect("write");
        for system in [System::Rxnorm, System::Loinc, System::Icd11, System::Mesh] {
            let _ = phiward::terminology::import::import(system, &file, &dir.join("out"), None);
        }
    }
}

/// `terminology import` writes the compact form beside the text; a search loads it, and falls
/// back to the text when the form is missing, damaged or another text's.
#[test]
fn imported_indexes_load_their_compact_form_and_fall_back_on_a_stale_one() {
    use phiward::terminology::index::Index;
    let dir = data_dir("compact");
    let f = fixture("terminology/desc_sample.xml");
    let o =
        run(&["terminology", "import", "mesh", f.to_str().expect("path"), "--data-dir", dir.to_str().expect("path")]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("mesh/index.tsv")).expect("index.tsv");
    let blob = std::fs::read(dir.join("mesh/index.bin")).expect("index.bin written by the import");
    assert!(Index::matches(&text, &blob), "the compact form is the one of the text");
    let expected = find_equivalent(&query("NIDDM"), &Catalog::new(Some(dir.clone()))).0;
    assert_eq!(expected["results"]["mesh"]["items"][0]["code"], "D003924");
    // Damaged (one byte changed, cut short), missing, or built from another text: the same results.
    let mut flipped = blob.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x55;
    let other = Index::build("X1\ta\tsomething else\n".to_owned()).expect("index");
    for damaged in [Some(flipped), Some(blob[..blob.len() / 2].to_vec()), Some(other.compact().to_vec()), None] {
        match &damaged {
            Some(bytes) => {
                assert!(!Index::matches(&text, bytes));
                std::fs::write(dir.join("mesh/index.bin"), bytes).expect("write");
            }
            None => std::fs::remove_file(dir.join("mesh/index.bin")).expect("remove"),
        }
        let got = find_equivalent(&query("NIDDM"), &Catalog::new(Some(dir.clone()))).0;
        assert_eq!(got, expected);
    }
}

/// A compact form with any byte changed never panics the reader: it is refused or it answers.
#[test]
fn damaged_compact_forms_never_panic() {
    use phiward::terminology::index::Index;
    let text = "E11\ta\tType 2 diabetes mellitus\tdiabetes NOS\nE10\td\tType 1 diabetes mellitus\n\
                I10\ta\tEssential (primary) hypertension\thypertension (arterial)\n";
    let blob = Index::build(text.to_owned()).expect("index").compact().to_vec();
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let (mut refused, mut answered) = (0, 0);
    for _ in 0..5000 {
        let mut b = blob.clone();
        for _ in 0..1 + next() % 3 {
            let at = (next() % b.len() as u64) as usize;
            b[at] = next() as u8;
        }
        match Index::from_parts(text.into(), b.into()) {
            None => refused += 1,
            Some(index) => {
                answered += 1;
                for q in ["diabetes", "type 2 diabetes mellitus", "hypertension arterial", "zzz"] {
                    for h in index.search(q, true) {
                        let _ = (index.code(h.concept), index.label(h.concept, h.label), index.deprecated(h.concept));
                    }
                }
                let _ = index.find_code("I10");
            }
        }
    }
    assert!(refused > 0 && answered > 0, "both paths are exercised: {refused} refused, {answered} answered");
}
