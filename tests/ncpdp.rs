//! NCPDP Telecommunication D.0: every fixture under fixtures/ncpdp through every command,
//! against fixtures/ncpdp/manifest.json (codes and exact locations); transaction and segment
//! counts of parse and inspect; fmt a fixed point that keeps the model; Safe Harbor over
//! marker-filled transmissions (no marker left, the output validates, redaction idempotent); no
//! marker in validate or inspect output; SCRIPT XML the format `ncpdp-script`; the
//! mutation test (each kind of damage, at many places, detected at its location).

use std::collections::BTreeSet;

use phiward::formats::ncpdp::{read, validate};
use phiward::limits::Limits;
use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

const SS: u8 = 0x1E;
const GS: u8 = 0x1D;
const FS: u8 = 0x1C;

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("ncpdp/manifest.json")).expect("manifest");
    serde_json::from_str::<Vec<Value>>(&text).expect("manifest JSON")
}

/// The JSON lines of an output.
fn lines(out: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|_| panic!("not JSON lines: {}", String::from_utf8_lossy(out)))
}

/// Every `CODE location` of a validate --json output (failed records: their cause).
fn findings(o: &std::process::Output) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in lines(&o.stdout) {
        for f in v.get("findings").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            out.insert(format!("{} {}", s("code"), s("location")));
        }
        for k in ["error", "cause"] {
            if let Some(e) = v.get(k).and_then(Value::as_str) {
                out.insert(e.to_owned());
            }
        }
    }
    out
}

fn path_of(file: &str) -> String {
    fixture(&format!("ncpdp/{file}")).to_string_lossy().into_owned()
}

#[test]
fn fixtures_against_the_manifest() {
    let m = manifest();
    assert!(m.len() >= 30, "{}", m.len());
    let mut codes_seen = BTreeSet::new();
    for e in &m {
        let file = e["file"].as_str().expect("file");
        let o = run(&["validate", "--json", &path_of(file)]);
        let got = findings(&o);
        for c in e["codes"].as_array().expect("codes") {
            let c = c.as_str().expect("code");
            assert!(got.iter().any(|g| g.split(' ').next() == Some(c)), "{file}: {c} not found in {got:?}");
            codes_seen.insert(c.to_owned());
        }
        for l in e["locations"].as_array().expect("locations") {
            let l = l.as_str().expect("location");
            assert!(got.contains(l), "{file}: {l} not found in {got:?}");
        }
        match e["expect"].as_str().expect("expect") {
            "valid" => {
                assert_eq!(code(&o), 0, "{file}: {got:?}");
                let listed: Vec<&str> =
                    e["codes"].as_array().expect("codes").iter().filter_map(Value::as_str).collect();
                assert!(got.iter().all(|g| listed.iter().any(|c| g.starts_with(c))), "{file}: {got:?}");
            }
            _ => assert_eq!(code(&o), 1, "{file}: exit {}", code(&o)),
        }
        // Findings are codes and locations of the grammar only: no byte of a value.
        for g in &got {
            for word in ["TESTPERSON", "ALICE", "ELM", "SPRINGTOWN", "CARD998", "RX004", "PAT000", "555", "GRP4471"] {
                assert!(!g.contains(word), "{file}: {g}");
            }
        }
    }
    // Every NCPDP code but those a detected input cannot carry is triggered by a fixture.
    let undetectable = ["NCPDP_HEADER_INVALID", "NCPDP_VERSION_UNSUPPORTED"];
    for c in phiward::diag::Code::ALL.iter().map(|c| c.as_str()).filter(|c| c.starts_with("NCPDP_")) {
        assert!(codes_seen.contains(c) || undetectable.contains(&c), "no fixture triggers {c}");
    }
}

#[test]
fn header_and_version_findings_under_format_ncpdp() {
    // A header cut short is fatal; a version that is not D0 is found (detection needs D0, so
    // both are given --format ncpdp).
    let o = run_stdin(&["validate", "--json", "--format", "ncpdp", "-"], b"610014D0B1SHORT");
    assert_eq!(code(&o), 65, "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stderr).contains("NCPDP_HEADER_INVALID at header"));
    let text = std::fs::read(fixture("ncpdp/valid/b1_claim.ncpdp")).expect("fixture");
    let mut v51 = text.clone();
    v51[6..8].copy_from_slice(b"51");
    let o = run_stdin(&["validate", "--json", "--format", "ncpdp", "-"], &v51);
    assert_eq!(code(&o), 1);
    assert!(findings(&o).contains("NCPDP_VERSION_UNSUPPORTED header/A2"), "{:?}", findings(&o));
    // Without --format, it is not NCPDP D.0 at all.
    let o = run_stdin(&["validate", "-"], &v51);
    assert_eq!(code(&o), 65);
}

#[test]
fn script_xml_is_the_format_ncpdp_script() {
    let script: &[u8] = b"<Message xmlns=\"http://www.ncpdp.org/schema/SCRIPT\"><Header/></Message>";
    let o = run_stdin(&["inspect", "--json", "-"], script);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"format\":\"ncpdp-script\""));
    // `--format ncpdp` is Telecom D.0: SCRIPT XML is not read as it.
    let o = run_stdin(&["validate", "--format", "ncpdp", "-"], script);
    assert_eq!(code(&o), 65);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("CLI_FORMAT_UNSUPPORTED"));
}

/// The transmissions of a file: each line, split into the transmission-level part and the
/// transactions, each a list of segments (their bytes after the segment separator).
fn structure(text: &[u8]) -> Vec<Vec<Vec<Vec<u8>>>> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|line| {
            let header = if line.starts_with(b"D0") { 31 } else { 56 };
            line[header..]
                .split(|&b| b == GS)
                .map(|part| part.split(|&b| b == SS).skip(1).map(<[u8]>::to_vec).collect())
                .collect()
        })
        .collect()
}

#[test]
fn every_command_on_every_valid_fixture() {
    for e in manifest().iter().filter(|e| e["expect"] == "valid") {
        let file = e["file"].as_str().expect("file");
        let path = path_of(file);
        let text = std::fs::read(fixture(&format!("ncpdp/{file}"))).expect("fixture");
        let shape = structure(&text);
        // parse: one record per transmission, its transactions and segments.
        let o = run(&["parse", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let records = lines(&o.stdout);
        assert_eq!(records.len(), shape.len(), "{file}: transmissions");
        for (r, s) in records.iter().zip(&shape) {
            let model = &r["model"];
            assert_eq!(model["segments"].as_array().map_or(0, Vec::len), s[0].len(), "{file}");
            let tx = model["transactions"].as_array().expect("transactions");
            assert_eq!(tx.len(), s.len() - 1, "{file}: transactions");
            for (t, part) in tx.iter().zip(&s[1..]) {
                assert_eq!(t["segments"].as_array().map_or(0, Vec::len), part.len(), "{file}");
            }
            assert_eq!(model["header"]["VersionReleaseNumber"], "D0");
        }
        // inspect: value-free summaries that agree.
        let o = run(&["inspect", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        for (r, s) in lines(&o.stdout).iter().zip(&shape) {
            assert_eq!(r["format"], "ncpdp");
            assert_eq!(r["version"], "D0");
            assert_eq!(r["groupCount"], (s.len() - 1) as u64, "{file}");
            assert_eq!(r["segmentCount"], s.iter().map(Vec::len).sum::<usize>() as u64, "{file}");
        }
        // fmt: a fixed point (the fixtures are canonical: one transmission per line).
        let o = run(&["fmt", &path]);
        assert_eq!(code(&o), 0, "{file}");
        assert_eq!(o.stdout, text, "{file}: fmt changed a canonical file");
        let check = run(&["fmt", "--check", &path]);
        assert_eq!(code(&check), 0, "{file}: fmt --check");
        let unterminated = &text[..text.len() - 1];
        let o = run_stdin(&["fmt", "-"], unterminated);
        assert_eq!(o.stdout, text, "{file}: fmt adds the line end");
        let o = run_stdin(&["fmt", "--check", "-"], unterminated);
        assert_eq!(code(&o), 1, "{file}: a transmission without its line end is not canonical");
        // redact (Safe Harbor): still valid; idempotent.
        let o = run(&["redact", &path]);
        assert_eq!(code(&o), 0, "{file}: {}", String::from_utf8_lossy(&o.stderr));
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        let warnings_only = findings(&v).iter().all(|g| g.contains("NCPDP_FIELD_"));
        assert_eq!(code(&v), 0, "{file}: redacted output does not validate: {:?}", findings(&v));
        assert!(warnings_only, "{file}: {:?}", findings(&v));
        let twice = run_stdin(&["redact", "-"], &o.stdout);
        assert_eq!(twice.stdout, o.stdout, "{file}: redact is not idempotent");
    }
}

/// A request and a response whose every field holds a marker (the segment ids and the
/// header's structure aside).
fn marked(n: &mut u32) -> Vec<u8> {
    let mut mark = |ids: &[&str]| -> String {
        ids.iter()
            .map(|id| {
                *n += 1;
                format!("\x1c{id}MKR{n}X")
            })
            .collect()
    };
    let seg = |id: &str, fields: String| format!("\x1e\x1cAM{id}{fields}");
    let mut req = String::from("610014D0B1MKRPCN0001101MKR00000000000120240315MKRSWV0001");
    assert_eq!(req.len(), 56);
    req += &seg("01", mark(&["CX", "CY", "C4", "C5", "CA", "CB", "CM", "CN", "CO", "CP", "CQ", "HN", "CZ", "4X"]));
    req += &seg("04", mark(&["C2", "CC", "CD", "C1", "C3", "C6", "N5", "NU", "MJ", "2A"]));
    req += "\x1d";
    req += &seg("02", mark(&["EY", "E9"]));
    req += &seg("03", mark(&["EZ", "DB", "DR", "2J", "PM", "2K", "2M", "2N", "2P"]));
    req += &seg("07", mark(&["EM", "D2", "E1", "D7", "EN", "CW", "EK", "EV", "EX", "K5", "DE"]));
    req += &seg("11", mark(&["D9", "DC", "DU"]));
    req += &seg("06", mark(&["DY", "CF", "CG", "CH", "CK", "CL", "CR", "DZ", "TU", "TV"]));
    req += &seg("14", mark(&["2Q", "2X", "4K"]));
    req += &seg("15", mark(&["8C", "3Q", "3U"]));
    req += &seg("16", mark(&["BM"]));
    req += "\n";
    let mut resp = String::from("D0B11A01MKR000000000002202403");
    resp += "15";
    assert_eq!(resp.len(), 31);
    resp += &seg("20", mark(&["F4"]));
    resp += &seg("25", mark(&["C1", "C2", "J8", "UB"]));
    resp += "\x1d";
    resp += &seg("21", mark(&["AN", "F3", "FQ", "8F", "MA", "K5"]));
    resp += &seg("22", mark(&["EM", "D2", "AU"]));
    resp += "\n";
    [req.into_bytes(), resp.into_bytes()].concat()
}

#[test]
fn markers_stay_in_the_data_channel_and_safe_harbor_removes_them() {
    let mut n = 0;
    let input = marked(&mut n);
    for args in [&["validate", "--json", "-"][..], &["validate", "-"], &["inspect", "--json", "-"], &["inspect", "-"]] {
        let o = run_stdin(args, &input);
        let all = [o.stdout.as_slice(), o.stderr.as_slice()].concat();
        assert!(!String::from_utf8_lossy(&all).contains("MKR"), "{args:?}: a marker in value-free output");
    }
    let o = run_stdin(&["parse", "--json", "-"], &input);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("MKR{n}X")), "parse lost a marker");
    let o = run_stdin(&["redact", "-"], &input);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("MKR"), "a marker survived Safe Harbor:\n{out:?}");
    // Structure survives: the header's code and count, every segment id, the transactions.
    for id in ["D0B1", "AM01", "AM04", "AM07", "AM11", "AM20", "AM21", "AM22", "\x1d"] {
        assert!(out.contains(id), "{id:?} lost:\n{out:?}");
    }
    assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 2);
}

#[test]
fn safe_harbor_keeps_codes_and_generalizes_dates() {
    let o = run(&["redact", &path_of("valid/b1_claim.ncpdp")]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    for gone in [
        "TESTPERSON",
        "ALICE",
        "ELM",
        "SPRINGTOWN",
        "CARD99887766",
        "PAT00042",
        "RX0042001",
        "GRP4471",
        "MCD5550199",
        "DRSMITH",
        "6175550100",
        "EXAMPLE.INVALID",
        "19800315",
        "20240315",
        "20240310",
        "02139",
    ] {
        assert!(!out.contains(gone), "{gone} survived:\n{out:?}");
    }
    for kept in ["\x1cC419800101", "20240101", "\x1cD700071015523", "\x1cCOMA", "\x1cCP021", "\x1cDU002650{", "D0B1"] {
        assert!(out.contains(kept), "{kept:?} lost:\n{out:?}");
    }
    // The header keeps its width.
    assert_eq!(out.find('\x1e'), Some(56));
}

// ---- mutation test ------------------------------------------------------------------------

/// Every finding (and fatal cause) of one transmission, read in process.
fn verdict(input: &[u8]) -> Vec<String> {
    match read::read(input.to_vec(), &Limits::default()) {
        Ok(doc) => validate::validate(&doc, validate::Options::default())
            .iter()
            .map(|d| format!("{} {}", d.code.as_str(), d.location))
            .collect(),
        Err(e) => vec![format!("{} {}", e.0.code.as_str(), e.0.location)],
    }
}

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A transmission taken apart: header, then parts (0: transmission level), each a list of
/// segments, each a list of fields (their bytes after the field separator).
struct Shape {
    header: Vec<u8>,
    parts: Vec<Vec<Vec<Vec<u8>>>>,
}

impl Shape {
    fn of(line: &[u8]) -> Shape {
        let h = if line.starts_with(b"D0") { 31 } else { 56 };
        let parts = line[h..]
            .split(|&b| b == GS)
            .map(|part| {
                part.split(|&b| b == SS)
                    .skip(1)
                    .map(|s| s.split(|&b| b == FS).skip(1).map(<[u8]>::to_vec).collect())
                    .collect()
            })
            .collect();
        Shape { header: line[..h].to_vec(), parts }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = self.header.clone();
        for (t, part) in self.parts.iter().enumerate() {
            if t > 0 {
                out.push(GS);
            }
            for seg in part {
                out.push(SS);
                for f in seg {
                    out.push(FS);
                    out.extend_from_slice(f);
                }
            }
        }
        out
    }

    /// The location of segment `s` of part `t` (`AM07`, with `transaction[t]/` in front).
    fn segment_at(&self, t: usize, s: usize) -> String {
        let id = String::from_utf8_lossy(&self.parts[t][s][0]).into_owned();
        if t == 0 { id } else { format!("transaction[{t}]/{id}") }
    }

    /// The location of field `k` of a segment, with its occurrence.
    fn field_at(&self, t: usize, s: usize, k: usize) -> String {
        let seg = &self.parts[t][s];
        let id = &seg[k][..2];
        let nth = seg[..=k].iter().filter(|f| f.starts_with(id)).count();
        let id = String::from_utf8_lossy(id);
        let field = if nth > 1 { format!("{id}[{nth}]") } else { id.into_owned() };
        format!("{}/{field}", self.segment_at(t, s))
    }
}

#[test]
fn mutations_are_detected_at_their_place() {
    let sources: Vec<Vec<u8>> =
        ["valid/b1_claim.ncpdp", "valid/b1_two_claims.ncpdp", "valid/b1_cob.ncpdp", "valid/b1_response_paid.ncpdp"]
            .iter()
            .map(|f| {
                let mut b = std::fs::read(fixture(&format!("ncpdp/{f}"))).expect("fixture");
                b.pop();
                b
            })
            .collect();
    for s in &sources {
        assert!(verdict(s).is_empty(), "{:?}", verdict(s));
        assert_eq!(Shape::of(s).bytes(), *s);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut tried, mut found) = (0, 0);
    let mut check = |kind: &str, mutated: Vec<u8>, expect: String| {
        tried += 1;
        let v = verdict(&mutated);
        if v.contains(&expect) {
            found += 1;
        } else {
            panic!("{kind}: {expect} not in {v:?}");
        }
    };
    for round in 0..300 {
        let src = &sources[round % sources.len()];
        let shape = Shape::of(src);
        let response = src.starts_with(b"D0");
        // The header: date of service month 13; the count one more than the transactions.
        let mut m = src.clone();
        let date = if response { 23 } else { 38 };
        m[date + 4..date + 6].copy_from_slice(b"13");
        check("header date", m, "NCPDP_HEADER_FIELD_INVALID header/D1".into());
        let mut m = src.clone();
        let count = if response { 4 } else { 20 };
        m[count] = b'0' + ((shape.parts.len() as u8) % 4) + 1;
        if m[count] - b'0' != (shape.parts.len() - 1) as u8 {
            check("count", m, "NCPDP_TRANSACTION_COUNT_MISMATCH header/A9".into());
        }
        // A segment: its id made unknown; a copy of it in the same part.
        let t = rng.below(shape.parts.len());
        if shape.parts[t].is_empty() {
            continue;
        }
        let s = rng.below(shape.parts[t].len());
        let mut m = Shape::of(src);
        m.parts[t][s][0] = b"AM99".to_vec();
        let place = if t == 0 { format!("segment[{}]", s + 1) } else { format!("transaction[{t}]/segment[{}]", s + 1) };
        check("segment id", m.bytes(), format!("NCPDP_SEGMENT_UNKNOWN {place}"));
        let mut m = Shape::of(src);
        let copy = m.parts[t][s].clone();
        m.parts[t].push(copy);
        check("segment copy", m.bytes(), format!("NCPDP_SEGMENT_DUPLICATE {}", shape.segment_at(t, s)));
        // A field of that segment (not its id): a copy of a field that does not repeat; a
        // letter in a date, number or amount.
        let seg = &shape.parts[t][s];
        if seg.len() < 2 {
            continue;
        }
        let k = 1 + rng.below(seg.len() - 1);
        let id = String::from_utf8_lossy(&seg[k][..2]).into_owned();
        let repeating = phiward::formats::ncpdp::tables::REPEATING.contains(&id.as_str());
        if !repeating {
            let mut m = Shape::of(src);
            let copy = m.parts[t][s][k].clone();
            m.parts[t][s].push(copy);
            let nth = seg.iter().filter(|f| f.starts_with(id.as_bytes())).count() + 1;
            check("field copy", m.bytes(), format!("NCPDP_FIELD_DUPLICATE {}/{id}[{nth}]", shape.segment_at(t, s)));
        }
        use phiward::formats::ncpdp::tables::{AMOUNTS, DATES, NUMBERS};
        let code = if DATES.contains(&id.as_str()) {
            "NCPDP_DATE_INVALID"
        } else if NUMBERS.contains(&id.as_str()) {
            "NCPDP_NUMBER_INVALID"
        } else if AMOUNTS.contains(&id.as_str()) {
            "NCPDP_AMOUNT_INVALID"
        } else {
            continue;
        };
        let mut m = Shape::of(src);
        m.parts[t][s][k].splice(2..2, b"X.".iter().copied());
        check("value", m.bytes(), format!("{code} {}", shape.field_at(t, s, k)));
    }
    assert!(tried >= 1000, "{tried}");
    assert!(found * 100 >= tried * 99, "{found} of {tried}");
}
