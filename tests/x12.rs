//! X12: every fixture under fixtures/x12 through every command, against fixtures/x12/manifest.json;
//! the mutation test (from valid 837P, 835 and 270: required segment removed, loop out of order,
//! element too long, code not in list, SE01 wrong, control number mismatch), each detected at its
//! location; Safe Harbor over marker-filled 837P, 837I, 835 and 834 (no marker left, the output
//! validates); findings never carry a value.

use std::collections::BTreeSet;

use phiward::formats::x12::guide::{Type, Usage};
use phiward::formats::x12::read::{self, Delimiters, Inherited, RecordKind};
use phiward::formats::x12::validate;
use phiward::limits::Limits;
use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("x12/manifest.json")).expect("manifest");
    serde_json::from_str::<Vec<Value>>(&text).expect("manifest JSON")
}

/// The JSON lines of an output.
fn lines(out: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|_| panic!("not JSON lines: {}", String::from_utf8_lossy(out)))
}

/// Every `(code, location)` of a validate --json output (and the failure's cause).
fn findings(o: &std::process::Output) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for v in lines(&o.stdout) {
        for f in v.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            out.insert((s("code"), s("location")));
        }
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            out.insert((e.to_owned(), String::new()));
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some(cause) = err.split('(').nth(1) {
        if let Some((c, _)) = cause.split_once(' ') {
            out.insert((c.to_owned(), String::new()));
        }
    }
    out
}

#[test]
fn fixtures_against_the_manifest() {
    let m = manifest();
    assert!(m.len() >= 30, "{}", m.len());
    for e in &m {
        let file = e["file"].as_str().expect("file");
        let path = fixture(&format!("x12/{file}")).to_string_lossy().into_owned();
        let expect = e["expect"].as_str().expect("expect");
        let o = run(&["validate", "--json", &path]);
        let got = findings(&o);
        for c in e["codes"].as_array().expect("codes") {
            let c = c.as_str().expect("code");
            assert!(got.iter().any(|(g, _)| g == c), "{file}: {c} not found in {got:?}");
        }
        match expect {
            "valid" => {
                assert_eq!(code(&o), 0, "{file}: {got:?}");
                assert!(
                    got.iter()
                        .all(|(c, _)| c.starts_with("X12_TRANSACTION_SET_UNKNOWN") || c == "X12_ELEMENT_NOT_USED")
                );
            }
            "invalid" => assert!(matches!(code(&o), 1 | 65), "{file}: exit {}", code(&o)),
            _ => assert_eq!(code(&o), 65, "{file}"),
        }
        // Findings are codes and locations of the grammar only: no byte of a value.
        for (c, loc) in &got {
            assert!(c.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'), "{file}: {c}");
            for word in ["DOE", "JOHN", "ELM", "SPRINGFIELD", "PATACCT", "MBR123", "900123456"] {
                assert!(!loc.contains(word), "{file}: {loc}");
            }
        }
    }
}

#[test]
fn every_command_on_every_valid_fixture() {
    for e in manifest().iter().filter(|e| e["expect"] == "valid") {
        let file = e["file"].as_str().expect("file");
        let path = fixture(&format!("x12/{file}")).to_string_lossy().into_owned();
        // parse: one record per envelope segment and transaction set; sets carry their envelope.
        let o = run(&["parse", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let recs = lines(&o.stdout);
        let sets: Vec<&Value> = recs.iter().filter(|r| r["model"]["recordType"] == "transactionSet").collect();
        assert!(!sets.is_empty(), "{file}");
        for s in &sets {
            assert!(s["model"]["envelope"]["ISA"].is_object() && s["model"]["envelope"]["GS"].is_object(), "{file}");
            assert!(s["model"]["loop"]["segments"].is_array(), "{file}");
        }
        // inspect: value-free summaries.
        let o = run(&["inspect", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        for r in lines(&o.stdout) {
            assert_eq!(r["format"], "x12");
        }
        // fmt: one segment per line; a fixed point; the same verdict.
        let o = run(&["fmt", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let again = run_stdin(&["fmt", "-"], &o.stdout);
        assert_eq!(again.stdout, o.stdout, "{file}: fmt is not a fixed point");
        let check = run_stdin(&["fmt", "--check", "-"], &o.stdout);
        assert_eq!(code(&check), 0, "{file}: fmt --check of fmt output");
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        assert_eq!(code(&v), 0, "{file}: fmt output does not validate");
        // redact (Safe Harbor): still a valid interchange.
        let o = run(&["redact", &path]);
        assert_eq!(code(&o), 0, "{file}: {}", String::from_utf8_lossy(&o.stderr));
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        assert_eq!(code(&v), 0, "{file}: redacted output does not validate: {:?}", findings(&v));
        // Redacting again changes nothing.
        let twice = run_stdin(&["redact", "-"], &o.stdout);
        assert_eq!(twice.stdout, o.stdout, "{file}: redact is not idempotent");
    }
}

/// The marker-filled variants of the fixtures: every person-level value replaced by a marker
/// token (names, ids, addresses, phones, account and claim numbers, free text).
fn marked(text: &str) -> (String, usize) {
    let mut n = 0;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '~']);
        let end = &line[body.len()..];
        let mut parts: Vec<String> = body.split('*').map(str::to_owned).collect();
        let mark = |i: usize, parts: &mut Vec<String>, n: &mut usize| {
            if parts.get(i).is_some_and(|p| !p.is_empty()) {
                *n += 1;
                parts[i] = format!("MKR{n}X");
            }
        };
        match parts[0].as_str() {
            "NM1" => {
                for i in [3, 4, 5, 7, 9] {
                    mark(i, &mut parts, &mut n);
                }
            }
            "N3" => {
                for i in [1, 2] {
                    mark(i, &mut parts, &mut n);
                }
            }
            "N4" => mark(1, &mut parts, &mut n),
            "N1" => {
                for i in [2, 4] {
                    mark(i, &mut parts, &mut n);
                }
            }
            "PER" => {
                for i in [2, 4, 6, 8] {
                    mark(i, &mut parts, &mut n);
                }
            }
            "REF" | "CLM" | "CLP" | "TRN" => {
                let fields: &[usize] = match parts[0].as_str() {
                    "REF" | "TRN" => &[2, 3],
                    "CLM" => &[1],
                    _ => &[1, 7],
                };
                for &i in fields {
                    mark(i, &mut parts, &mut n);
                }
            }
            "BPR" => {
                for i in [9, 15] {
                    mark(i, &mut parts, &mut n);
                }
            }
            "BHT" | "BGN" => mark(if parts[0] == "BHT" { 3 } else { 2 }, &mut parts, &mut n),
            "SBR" => mark(3, &mut parts, &mut n),
            _ => {}
        }
        out.push_str(&parts.join("*"));
        out.push_str(end);
    }
    (out, n)
}

#[test]
fn safe_harbor_leaves_no_marker_and_the_output_validates() {
    for name in ["837p", "837i", "835", "834"] {
        let text = std::fs::read_to_string(fixture(&format!("x12/valid/{name}.x12"))).expect("fixture");
        let (input, n) = marked(&text);
        assert!(n >= 8, "{name}: only {n} markers");
        let o = run_stdin(&["redact", "-"], input.as_bytes());
        assert_eq!(code(&o), 0, "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains("MKR"), "{name}: a marker survived Safe Harbor:\n{out}");
        // Dates to the year, ZIP to three digits.
        assert!(!out.contains("20240110") && !out.contains("19800315"), "{name}: a full date survived");
        assert!(!out.contains("62704"), "{name}: a full ZIP survived");
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        assert_eq!(code(&v), 0, "{name}: redacted output does not validate: {:?}", findings(&v));
        // The findings of the marked input never show a marker.
        let v = run_stdin(&["validate", "--json", "-"], input.as_bytes());
        assert!(!String::from_utf8_lossy(&v.stdout).contains("MKR"), "{name}");
        assert!(!String::from_utf8_lossy(&v.stderr).contains("MKR"), "{name}");
    }
}

// ---- mutations ----------------------------------------------------------------------------

/// A transaction set of a fixture: its envelope lines, its set lines and the trailer lines.
struct Sample {
    head: Vec<String>,
    set: Vec<String>,
    tail: Vec<String>,
}

fn sample(name: &str) -> Sample {
    let text = std::fs::read_to_string(fixture(&format!("x12/valid/{name}.x12"))).expect("fixture");
    let all: Vec<String> = text.lines().map(|l| l.trim_end_matches('~').to_owned()).collect();
    let st = all.iter().position(|l| l.starts_with("ST*")).expect("ST");
    let se = all.iter().position(|l| l.starts_with("SE*")).expect("SE");
    Sample { head: all[..st].to_vec(), set: all[st..=se].to_vec(), tail: all[se + 1..].to_vec() }
}

impl Sample {
    /// The interchange with `set` (SE01 recounted unless `keep_count`).
    fn with(&self, set: &[String], keep_count: bool) -> Vec<u8> {
        let mut set = set.to_vec();
        if !keep_count {
            let n = set.len();
            if let Some(se) = set.last_mut() {
                let ctl = se.split('*').nth(2).unwrap_or_default().to_owned();
                *se = format!("SE*{n}*{ctl}");
            }
        }
        let mut out = String::new();
        for l in self.head.iter().chain(&set).chain(&self.tail) {
            out.push_str(l);
            out.push_str("~\n");
        }
        out.into_bytes()
    }

    /// Where each segment of the set goes in its guide: (loop path, segment id, definition).
    fn placed(&self) -> Vec<Option<(&'static str, &'static phiward::formats::x12::guide::Segment)>> {
        let delimiters = Delimiters { element: b'*', component: b':', repetition: Some(b'^'), segment: b'~' };
        let inherited = Inherited { delimiters: Some(delimiters), fixed: true, group: 1, set: 1 };
        let set_only = {
            let mut b = Vec::new();
            for l in &self.set {
                b.extend_from_slice(l.as_bytes());
                b.push(b'~');
            }
            read::read(b, 0, RecordKind::Set, inherited, &Limits::default()).expect("read set")
        };
        // A bare set has no GS: its version comes from ST03.
        let (_, steps) = validate::structure(&set_only).expect("a guide for the sample");
        steps.iter().map(|s| s.def.map(|d| (s.within.map_or("", |w| w.path), d))).collect()
    }
}

fn validate_bytes(bytes: &[u8]) -> BTreeSet<(String, String)> {
    findings(&run_stdin(&["validate", "--json", "--format", "x12", "-"], bytes))
}

/// Tallies detections of one kind: (detected at the expected location, tried).
#[derive(Default, Debug)]
struct Tally {
    hit: usize,
    tried: usize,
    missed: Vec<String>,
}

impl Tally {
    fn check(&mut self, got: &BTreeSet<(String, String)>, code: &str, location: &dyn Fn(&str) -> bool, what: String) {
        self.tried += 1;
        if got.iter().any(|(c, l)| c == code && location(l)) {
            self.hit += 1;
        } else {
            self.missed.push(format!("{what}: {got:?}"));
        }
    }

    fn assert_rate(&self, kind: &str) {
        assert!(self.tried > 0, "{kind}: nothing tried");
        assert!(
            self.hit * 100 >= self.tried * 99,
            "{kind}: {} of {} detected; missed: {:#?}",
            self.hit,
            self.tried,
            self.missed
        );
    }
}

fn element_location(path: &str, id: &str, n: usize) -> impl Fn(&str) -> bool {
    let prefix = if path.is_empty() { format!("ST[1]/{id}[") } else { format!("ST[1]/{path}/{id}[") };
    let suffix = format!("]-{n:02}");
    move |l: &str| l.starts_with(&prefix) && l.ends_with(&suffix)
}

#[test]
fn mutations_are_detected_at_their_location() {
    let mut missing = Tally::default();
    let mut order = Tally::default();
    let mut long = Tally::default();
    let mut codes = Tally::default();
    let mut count = Tally::default();
    let mut control = Tally::default();
    for name in ["837p", "835", "270"] {
        let s = sample(name);
        // SE01 wrong, control numbers (every sample: the envelope needs no guide).
        let mut set = s.set.clone();
        let n = set.len();
        let ctl = set[0].split('*').nth(2).unwrap_or_default().to_owned();
        set[n - 1] = format!("SE*{}*{ctl}", n + 1);
        count.check(&validate_bytes(&s.with(&set, true)), "X12_COUNT_MISMATCH", &|l| l == "ST[1]/SE-01", name.into());
        set[n - 1] = format!("SE*{n}*9999");
        control.check(
            &validate_bytes(&s.with(&set, true)),
            "X12_CONTROL_NUMBER_MISMATCH",
            &|l| l == "ST[1]/SE-02",
            name.into(),
        );
        let mut t = s.with(&s.set, false);
        let text = String::from_utf8_lossy(&t).replace("GE*1*", "GE*1*77");
        t = text.into_bytes();
        control.check(&validate_bytes(&t), "X12_CONTROL_NUMBER_MISMATCH", &|l| l == "GS[1]/GE-02", name.into());
        if name == "270" {
            continue; // no 005010X279A1 map in pyx12 4.0.0: envelope mutations only
        }
        let placed = s.placed();
        // Required segment removed: a required segment (not a loop's first) of a loop instance.
        for (i, p) in placed.iter().enumerate().skip(1).take(s.set.len() - 2) {
            let Some((path, def)) = p else { continue };
            let path: &str = path;
            let def: &'static phiward::formats::x12::guide::Segment = def;
            let first_of_loop = !placed.iter().take(i).any(|q| q.is_some_and(|(qp, _)| qp == path));
            if def.usage != Usage::R || first_of_loop {
                continue;
            }
            // Only when it is the one occurrence of its definition in the set.
            let same = placed.iter().filter(|q| q.is_some_and(|(qp, d)| qp == path && std::ptr::eq(d, def))).count();
            if same != 1 {
                continue;
            }
            let mut set = s.set.clone();
            set.remove(i);
            let want = if path.is_empty() { format!("ST[1]/{}", def.id) } else { format!("ST[1]/{path}/{}", def.id) };
            missing.check(
                &validate_bytes(&s.with(&set, false)),
                "X12_SEGMENT_MISSING",
                &|l| l == want,
                format!("{name} {i}"),
            );
        }
        // Loop out of order: two sibling loop instances swapped (the later one first).
        let starts: Vec<(usize, &str)> = placed
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|(path, _)| (i, path)))
            .filter(|(i, path)| i > &0 && placed[i - 1].is_none_or(|(pp, _)| pp != *path) && !path.is_empty())
            .collect();
        for w in starts.windows(2) {
            let ((a, pa), (b, pb)) = (w[0], w[1]);
            let parent = |p: &str| p.rsplit_once('/').map_or("", |x| x.0).to_owned();
            let end_b = (b + 1..s.set.len())
                .find(|&k| placed[k].is_none_or(|(pk, _)| !pk.starts_with(pb)))
                .unwrap_or(s.set.len() - 1);
            if parent(pa) != parent(pb) || pa == pb || pa.starts_with(pb) || pb.starts_with(pa) || end_b <= b {
                continue;
            }
            // Loop A spans a..b (A and its inner loops), loop B spans b..end_b.
            if (a..b).any(|k| placed[k].is_none_or(|(pk, _)| !pk.starts_with(pa))) {
                continue;
            }
            let mut set = s.set[..a].to_vec();
            set.extend_from_slice(&s.set[b..end_b]);
            set.extend_from_slice(&s.set[a..b]);
            set.extend_from_slice(&s.set[end_b..]);
            let trigger = s.set[a].split('*').next().unwrap_or_default().to_owned();
            let want = format!("ST[1]/{pa}/{trigger}[1]");
            let got = validate_bytes(&s.with(&set, false));
            if got.is_empty() {
                // The guide reads the swapped loops another way (a claim-level provider after
                // the service lines is the line-level one, 2420A): not out of order.
                continue;
            }
            order.check(&got, "X12_SEGMENT_OUT_OF_ORDER", &|l| l == want, format!("{name} {pa}<->{pb}"));
        }
        // Element too long, code not in list: every populated simple element of every placed
        // segment that is not a loop's or a segment's key.
        for (i, p) in placed.iter().enumerate().skip(1).take(s.set.len() - 2) {
            let Some((path, def)) = p else { continue };
            let parts: Vec<&str> = s.set[i].split('*').collect();
            for (k, e) in def.elements().iter().enumerate() {
                let n = k + 1;
                let Some(v) = parts.get(n).filter(|v| !v.is_empty()) else { continue };
                let is_key = def.keys.iter().any(|key| usize::from(key.0) == n);
                if e.ty == Type::C || is_key || v.contains(':') || v.contains('^') {
                    continue;
                }
                let id = def.id;
                let location = element_location(path, id, n);
                let mutate = |value: String| {
                    let mut set = s.set.clone();
                    let mut q: Vec<String> = parts.iter().map(|x| (*x).to_owned()).collect();
                    q[n] = value;
                    set[i] = q.join("*");
                    s.with(&set, false)
                };
                if !e.codes().is_empty() {
                    let bad = (1..=4).map(|len| "Q".repeat(len)).find(|c| {
                        c.len() >= usize::from(e.min)
                            && c.len() <= usize::from(e.max)
                            && !e.codes().contains(&c.as_str())
                    });
                    if let Some(bad) = bad {
                        codes.check(
                            &validate_bytes(&mutate(bad)),
                            "X12_CODE_INVALID",
                            &location,
                            format!("{name} {id}-{n:02}"),
                        );
                    }
                } else if matches!(e.ty, Type::AN | Type::R | Type::N0 | Type::N2) && e.max < 200 {
                    let fill = if e.ty == Type::AN { "X" } else { "9" };
                    let value = fill.repeat(usize::from(e.max) + 1);
                    long.check(
                        &validate_bytes(&mutate(value)),
                        "X12_ELEMENT_TOO_LONG",
                        &location,
                        format!("{name} {id}-{n:02}"),
                    );
                }
            }
        }
    }
    for (kind, t) in [
        ("required segment removed", &missing),
        ("loop out of order", &order),
        ("element too long", &long),
        ("code not in list", &codes),
        ("SE01 wrong", &count),
        ("control number mismatch", &control),
    ] {
        t.assert_rate(kind);
    }
}

// ---- acknowledgments ------------------------------------------------------------------------

/// `ack` over every fixture: a 999 and a TA1 that phiward validates (the 999 against
/// 005010X231A1), the exit code the fixture's verdict, the same bytes on a second run.
#[test]
fn ack_of_every_fixture_validates() {
    for e in &manifest() {
        let file = e["file"].as_str().expect("file");
        let path = fixture(&format!("x12/{file}")).to_string_lossy().into_owned();
        let valid = run(&["validate", "--quiet", &path]);
        for t in ["999", "ta1"] {
            let o = run(&["ack", "--type", t, &path]);
            // The verdict of validate: 0, 1, or 65 (a record could not be read; a stream's
            // other records are still acknowledged).
            assert_eq!(code(&o), code(&valid), "{file} {t}: {}", String::from_utf8_lossy(&o.stderr));
            if o.stdout.is_empty() {
                // Nothing could be read: nothing is acknowledged.
                assert_eq!(code(&o), 65, "{file} {t}");
                continue;
            }
            assert!(o.stdout.starts_with(b"ISA"), "{file} {t}: {}", String::from_utf8_lossy(&o.stdout));
            let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
            assert_eq!(code(&v), 0, "{file} {t}: the acknowledgment does not validate: {:?}", findings(&v));
            let again = run(&["ack", "--type", t, &path]);
            assert_eq!(o.stdout, again.stdout, "{file} {t}: not deterministic");
        }
    }
}

fn ack(args: &[&str], name: &str) -> String {
    let path = fixture(&format!("x12/{name}")).to_string_lossy().into_owned();
    let mut a = vec!["ack"];
    a.extend_from_slice(args);
    a.push(&path);
    String::from_utf8(run(&a).stdout).expect("UTF-8")
}

/// Each kind of error lands in the 999 segment the standard gives it, at its place.
#[test]
fn ack_codes_and_positions() {
    let ok = ack(&[], "valid/837p.x12");
    for seg in [
        "GS*FA*RECEIVER01*SUBMITTER01*",
        "AK1*HC*1*005010X222A1~",
        "AK2*837*0001*005010X222A1~",
        "IK5*A~",
        "AK9*A*1*1*1~",
    ] {
        assert!(ok.contains(seg), "{seg} not in\n{ok}");
    }
    let bad = ack(&[], "invalid/code_invalid.x12");
    for seg in ["IK3*DMG*17*2010*8~", "IK4*3**7~", "IK5*R*5~", "AK9*R*1*1*0~"] {
        assert!(bad.contains(seg), "{seg} not in\n{bad}");
    }
    let cases = [
        ("invalid/se01_wrong.x12", "IK5*R*4~"),
        ("invalid/date_invalid.x12", "**8~"),
        ("invalid/time_invalid.x12", "**9~"),
        ("invalid/element_too_long.x12", "**5~"),
        ("invalid/element_too_short.x12", "**4~"),
        ("invalid/element_missing.x12", "**1~"),
        ("invalid/element_not_used.x12", "**I10~"),
        ("invalid/segment_missing.x12", "*3~"),
        ("invalid/segment_out_of_order.x12", "*7~"),
        ("invalid/segment_repeated.x12", "*5~"),
        ("invalid/segment_unexpected.x12", "*2~"),
        ("invalid/loop_repeated.x12", "*4~"),
    ];
    for (name, seg) in cases {
        let out = ack(&[], name);
        let found = out
            .lines()
            .any(|l| (l.starts_with("IK3") || l.starts_with("IK4") || l.starts_with("IK5")) && l.ends_with(seg));
        assert!(found, "{name}: no IK3/IK4/IK5 ending {seg} in\n{out}");
    }
    // A warning only: accepted, errors noted.
    assert!(ack(&[], "invalid/element_not_used.x12").contains("IK5*E*I5~"));
    // TA1: accepted, and the note code of a control number mismatch.
    assert!(ack(&["--type", "ta1"], "valid/837p.x12").contains("TA1*000000101*240115*1230*A*000~"));
    let ta1 = ack(&["--type", "ta1"], "invalid/iea_control_mismatch.x12");
    assert!(ta1.contains("*R*001~"), "{ta1}");
    assert!(ta1.contains("IEA*0*"), "{ta1}");
}

/// The 999 never copies an element of a set (IK4-04 is not written): markers in names, ids,
/// dates and codes, some of them errors, never reach it.
#[test]
fn ack_carries_no_value() {
    let text = std::fs::read_to_string(fixture("x12/valid/837p.x12")).expect("fixture");
    let (input, n) = marked(&text);
    assert!(n >= 8);
    // Errors at marked elements: a date, a code, a too-long id.
    let input = input.replace("DMG*D8*19800315*M~", "DMG*D8*MKRDATE*MKRSEX~").replace("SBR*P*18*", "SBR*MKRC*18*");
    for t in ["999", "ta1"] {
        let o = run_stdin(&["ack", "--type", t, "-"], input.as_bytes());
        assert_eq!(code(&o), 1, "{t}: {}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains("MKR"), "{t}: a value reached the acknowledgment:\n{out}");
        assert!(!String::from_utf8_lossy(&o.stderr).contains("MKR"));
        if t == "999" {
            assert!(out.contains("IK3*DMG*") && out.contains("IK3*SBR*") && out.contains("IK5*R*5~"), "{out}");
        }
    }
}
