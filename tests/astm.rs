//! ASTM: every fixture under fixtures/astm through every command, against
//! fixtures/astm/manifest.json (codes and exact locations); message and record counts of parse;
//! fmt a fixed point; Safe Harbor over marker-filled messages (no marker left, the output
//! validates, redaction idempotent); no marker in validate or inspect output; the mutation test
//! (each kind of damage, at many places, detected at its location); findings never carry a value.

use std::collections::BTreeSet;

use phiward::diag::Code;
use phiward::formats::astm::{read, split, validate};
use phiward::formats::codec::Piece;
use phiward::limits::Limits;
use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("astm/manifest.json")).expect("manifest");
    serde_json::from_str::<Vec<Value>>(&text).expect("manifest JSON")
}

/// The JSON lines of an output.
fn lines(out: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|_| panic!("not JSON lines: {}", String::from_utf8_lossy(out)))
}

/// Every `CODE location` of a validate --json output (failed records: `CODE` and their cause).
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
    fixture(&format!("astm/{file}")).to_string_lossy().into_owned()
}

/// The warnings a valid fixture may carry.
const WARNINGS: [&str; 3] = ["E1381_FRAME_TOO_LONG", "E1381_RECORD_END_MISSING", "ASTM_FIELD_EMPTY_EXTRA"];

#[test]
fn fixtures_against_the_manifest() {
    let m = manifest();
    assert!(m.len() >= 25, "{}", m.len());
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
                assert!(got.iter().all(|g| WARNINGS.iter().any(|w| g.starts_with(w))), "{file}: {got:?}");
            }
            "invalid" => assert_eq!(code(&o), 1, "{file}: exit {}", code(&o)),
            _ => assert_eq!(code(&o), 65, "{file}"),
        }
        // Findings are codes and locations of the grammar only: no byte of a value.
        for g in &got {
            for word in ["TESTPERSON", "ALICE", "ELM", "SPRINGTOWN", "PRAC", "SPEC0", "DRSMITH", "555"] {
                assert!(!g.contains(word), "{file}: {g}");
            }
        }
    }
    // Every ASTM and E1381 code is triggered by a fixture.
    for c in Code::ALL.iter().map(|c| c.as_str()).filter(|c| c.starts_with("ASTM_") || c.starts_with("E1381_")) {
        assert!(codes_seen.contains(c), "no fixture triggers {c}");
    }
}

/// Messages and records of a file, counted from its text (records: lines that start with a
/// record type letter and a delimiter).
fn count(file: &str) -> (usize, usize) {
    let data = std::fs::read(fixture(&format!("astm/{file}"))).expect("fixture");
    let mut text = Vec::new();
    // Frame texts only (after STX and FN, up to ETB/ETX).
    if data.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|&b| split::starts_framed(b)) {
        let mut i = 0;
        let mut previous: &[u8] = &[];
        while i < data.len() {
            if data[i] == split::STX {
                let end =
                    data[i..].iter().position(|&b| b == split::ETX || b == split::ETB).map_or(data.len(), |j| i + j);
                // A frame sent again (after NAK) counts once.
                if data[i + 1..end] != *previous {
                    text.extend_from_slice(&data[i + 2..end]);
                    // ETX ends a record even without its CR (E1381_RECORD_END_MISSING).
                    if data.get(end) == Some(&split::ETX) {
                        text.push(b'\r');
                    }
                }
                previous = &data[i + 1..end];
                i = end;
            }
            i += 1;
        }
    } else {
        text = data;
    }
    let recs: Vec<&[u8]> = text.split(|&b| b == b'\r' || b == b'\n').filter(|r| !r.is_empty()).collect();
    (recs.iter().filter(|r| r.first() == Some(&b'H')).count(), recs.len())
}

#[test]
fn every_command_on_every_valid_fixture() {
    for e in manifest().iter().filter(|e| e["expect"] == "valid") {
        let file = e["file"].as_str().expect("file");
        let path = path_of(file);
        // parse: one record per message, the records of the standard.
        let o = run(&["parse", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let msgs = lines(&o.stdout);
        let (messages, records) = count(file);
        assert_eq!(msgs.len(), messages, "{file}: messages");
        let parsed: usize = msgs.iter().map(|m| m["model"]["records"].as_array().map_or(0, Vec::len)).sum();
        assert_eq!(parsed, records, "{file}: records");
        for m in &msgs {
            let recs = m["model"]["records"].as_array().expect("records");
            assert_eq!(recs.first().and_then(|r| r["type"].as_str()), Some("H"), "{file}");
            assert_eq!(recs.last().and_then(|r| r["type"].as_str()), Some("L"), "{file}");
        }
        // inspect: value-free summaries whose counts add up.
        let o = run(&["inspect", "--json", &path]);
        assert_eq!(code(&o), 0, "{file}");
        let mut total = 0;
        for r in lines(&o.stdout) {
            assert_eq!(r["format"], "astm");
            assert_eq!(r["records"]["H"], 1, "{file}");
            total += r["recordCount"].as_u64().expect("recordCount") as usize;
            assert_eq!(r["framed"], Value::Bool(file.contains("frame")), "{file}");
        }
        assert_eq!(total, records, "{file}: inspect record count");
        // fmt: unframed, CR; a fixed point; the same verdict.
        let o = run(&["fmt", &path]);
        assert_eq!(code(&o), 0, "{file}");
        assert!(!o.stdout.contains(&split::STX) && !o.stdout.contains(&b'\n'), "{file}: fmt output is not plain");
        let again = run_stdin(&["fmt", "-"], &o.stdout);
        assert_eq!(again.stdout, o.stdout, "{file}: fmt is not a fixed point");
        let check = run_stdin(&["fmt", "--check", "-"], &o.stdout);
        assert_eq!(code(&check), 0, "{file}: fmt --check of fmt output");
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        assert_eq!(code(&v), 0, "{file}: fmt output does not validate: {:?}", findings(&v));
        let p = run_stdin(&["parse", "--json", "-"], &o.stdout);
        let records_of =
            |out: &[u8]| -> Vec<Value> { lines(out).iter().map(|m| m["model"]["records"].clone()).collect() };
        assert_eq!(
            records_of(&p.stdout),
            records_of(&run(&["parse", "--json", &path]).stdout),
            "{file}: fmt changed the model"
        );
        // redact (Safe Harbor): still valid; idempotent.
        let o = run(&["redact", &path]);
        assert_eq!(code(&o), 0, "{file}: {}", String::from_utf8_lossy(&o.stderr));
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        assert_eq!(code(&v), 0, "{file}: redacted output does not validate: {:?}", findings(&v));
        let twice = run_stdin(&["redact", "-"], &o.stdout);
        assert_eq!(twice.stdout, o.stdout, "{file}: redact is not idempotent");
    }
}

#[test]
fn framed_and_unframed_parse_alike() {
    let plain = run(&["parse", "--json", &path_of("valid/result.astm")]);
    let framed = run(&["parse", "--json", &path_of("valid/framed.astm")]);
    let records = |o: &std::process::Output| lines(&o.stdout)[0]["model"]["records"].clone();
    assert_eq!(records(&plain), records(&framed));
    let framed = lines(&framed.stdout);
    assert_eq!(framed[0]["model"]["framed"], true);
    assert_eq!(framed[0]["model"]["frames"], 7);
    // A comment over 240 characters, in three frames, is one record again.
    let multi = run(&["parse", "--json", &path_of("valid/framed_multiframe.astm")]);
    let m = lines(&multi.stdout);
    let recs = m[0]["model"]["records"].as_array().expect("records");
    let long = recs.iter().find(|r| r["type"] == "C" && r["sequence"] == 2).expect("the long comment");
    assert!(long["fields"][3].as_str().is_some_and(|t| t.len() > 400));
    // Custom delimiters: the same model as the default ones (but the delimiter definition).
    let custom = run(&["parse", "--json", &path_of("valid/custom_delimiters.astm")]);
    let c = lines(&custom.stdout);
    let p = lines(&plain.stdout);
    assert_eq!(c[0]["model"]["records"][1], p[0]["model"]["records"][1]);
    assert_eq!(c[0]["model"]["delimiters"]["component"], "#");
}

/// A message with every field from field 3 on holding a marker, in every record type.
fn marked_message(n: &mut u32, framed: bool) -> Vec<u8> {
    let mut mark = |fields: usize, first: &str| -> String {
        let mut parts = vec![first.to_owned()];
        for _ in 0..fields {
            *n += 1;
            parts.push(format!("MKR{n}X^MKR{n}Y\\MKR{n}Z"));
        }
        parts.join("|")
    };
    let recs = vec![
        format!("H|\\^&|{}", mark(11, "MKR0A")).replacen("H|\\^&|MKR0A", "H|\\^&", 1),
        mark(33, "P|1"),
        mark(29, "O|1"),
        mark(12, "R|1"),
        mark(3, "C|1"),
        mark(6, "M|1"),
        mark(19, "S|1"),
        mark(1, "L|1"),
    ];
    if !framed {
        return recs.iter().flat_map(|r| format!("{r}\r").into_bytes()).collect();
    }
    let mut out = vec![split::ENQ];
    let mut fnum = 0u8;
    for r in &recs {
        let data = format!("{r}\r").into_bytes();
        for (k, chunk) in data.chunks(240).enumerate() {
            fnum = (fnum + 1) % 8;
            let last = (k + 1) * 240 >= data.len();
            let mut body = vec![b'0' + fnum];
            body.extend_from_slice(chunk);
            body.push(if last { split::ETX } else { split::ETB });
            let sum = split::checksum(&body);
            out.push(split::STX);
            out.extend_from_slice(&body);
            out.extend_from_slice(format!("{sum:02X}\r\n").as_bytes());
        }
    }
    out.push(split::EOT);
    out
}

#[test]
fn markers_stay_in_the_data_channel_and_safe_harbor_removes_them() {
    let mut n = 0;
    for framed in [false, true] {
        let mut input = marked_message(&mut n, framed);
        input.extend(marked_message(&mut n, framed));
        for args in
            [&["validate", "--json", "-"][..], &["validate", "-"], &["inspect", "--json", "-"], &["inspect", "-"]]
        {
            let o = run_stdin(args, &input);
            let all = [o.stdout.as_slice(), o.stderr.as_slice()].concat();
            assert!(!String::from_utf8_lossy(&all).contains("MKR"), "{args:?}: a marker in value-free output");
        }
        // The markers are there: parse shows them (data channel).
        let o = run_stdin(&["parse", "--json", "-"], &input);
        assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("MKR{n}Z")), "parse lost a marker");
        let o = run_stdin(&["redact", "-"], &input);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains("MKR"), "a marker survived Safe Harbor:\n{out}");
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        assert_eq!(code(&v), 0, "redacted output: {:?}", findings(&v));
        // Structure survives: every record type, the sequence numbers.
        for rec in ["H|\\^&", "P|1", "O|1", "R|1", "C|1", "M|1", "S|1", "L|1"] {
            assert!(out.contains(rec), "{rec} lost:\n{out}");
        }
    }
}

#[test]
fn safe_harbor_keeps_codes_and_generalizes_dates() {
    let o = run(&["redact", &path_of("valid/result.astm")]);
    let out = String::from_utf8_lossy(&o.stdout).replace('\r', "\n");
    for gone in [
        "TESTPERSON",
        "ALICE",
        "ELM",
        "SPRINGTOWN",
        "PRAC001",
        "LAB001",
        "SPEC0001",
        "DRSMITH",
        "555-0100",
        "fasting",
        "19800315",
        "20240315",
    ] {
        assert!(!out.contains(gone), "{gone} survived:\n{out}");
    }
    for kept in ["^^^GLU", "|5.6|", "19800101", "20240101", "^MA^021", "L|1|N"] {
        assert!(out.contains(kept), "{kept} lost:\n{out}");
    }
}

// ---- mutation test ------------------------------------------------------------------------

/// Every finding (and failed record's code) of an input, split and read in process.
fn verdict(input: &[u8]) -> Vec<String> {
    let framed = input.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|&b| split::starts_framed(b));
    let mut out = Vec::new();
    for p in split::Splitter::new(Box::new(input), framed, Limits::default()) {
        match p.expect("reads") {
            Piece::Record { bytes: Some(b), .. } => match read::read(b, &Limits::default()) {
                Ok(doc) => {
                    for d in validate::validate(&doc, validate::Options::default()) {
                        out.push(format!("{} {}", d.code.as_str(), d.location));
                    }
                }
                Err(e) => out.push(format!("{} {}", e.0.code.as_str(), e.0.location)),
            },
            Piece::Problem { code, .. } => out.push(code.as_str().to_owned()),
            _ => {}
        }
    }
    out
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

/// The STX offsets of a framed input.
fn frames(input: &[u8]) -> Vec<usize> {
    input.iter().enumerate().filter(|(_, b)| **b == split::STX).map(|(i, _)| i).collect()
}

#[test]
fn mutations_are_detected_at_their_place() {
    let framed = std::fs::read(fixture("astm/valid/framed_sessions.astm")).expect("fixture");
    let multi = std::fs::read(fixture("astm/valid/framed_multiframe.astm")).expect("fixture");
    let plain = std::fs::read(fixture("astm/valid/multi_message.astm")).expect("fixture");
    for f in [&framed, &multi, &plain] {
        assert!(verdict(f).is_empty(), "{:?}", verdict(f));
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
    for round in 0..200 {
        let src = if round % 2 == 0 { &framed } else { &multi };
        let stx = frames(src);
        let k = rng.below(stx.len());
        let at = stx[k];
        let label = format!("E1381_{{}} frame[{}]/offset:{at}", k + 1);
        let end = at + src[at..].iter().position(|&b| b == split::ETX || b == split::ETB).expect("end");
        // A checksum character changed.
        let mut m = src.clone();
        m[end + 1] = if m[end + 1] == b'0' { b'1' } else { b'0' };
        check("checksum", m, label.replace("{}", "CHECKSUM_MISMATCH"));
        // A frame number changed (to one that is not the next).
        let mut m = src.clone();
        m[at + 1] = b'0' + ((m[at + 1] - b'0' + 3) % 8);
        check("frame number", m, label.replace("{}", "FRAME_NUMBER_INVALID"));
        // The ETX or ETB removed.
        let mut m = src.clone();
        m.remove(end);
        check("end", m, label.replace("{}", "FRAME_END_MISSING"));
    }
    // Record damage in an unframed stream: located at the record.
    let text = String::from_utf8(plain.clone()).expect("text");
    let recs: Vec<&str> = text.split('\r').filter(|r| !r.is_empty()).collect();
    for _ in 0..200 {
        let i = rng.below(recs.len());
        let r = recs[i];
        let kind = r.as_bytes()[0];
        // The message the record is in, and the record's occurrence there.
        let start = recs[..=i].iter().rposition(|x| x.starts_with('H')).expect("H");
        let nth = recs[start..=i].iter().filter(|x| x.as_bytes()[0] == kind).count();
        let rebuild = |new: Option<String>| -> Vec<u8> {
            let mut out = String::new();
            for (j, x) in recs.iter().enumerate() {
                match (&new, j == i) {
                    (Some(n), true) => out.push_str(n),
                    (None, true) => continue,
                    _ => out.push_str(x),
                }
                out.push('\r');
            }
            out.into_bytes()
        };
        match kind {
            b'P' | b'O' | b'R' | b'C' => {
                let seq: u32 = r.split('|').nth(1).and_then(|s| s.parse().ok()).expect("sequence");
                let mut f: Vec<&str> = r.split('|').collect();
                let bumped = (seq + 5).to_string();
                f[1] = &bumped;
                check(
                    "sequence",
                    rebuild(Some(f.join("|"))),
                    format!("ASTM_SEQUENCE_INVALID {}[{nth}]-2", kind as char),
                );
                let unknown = format!("X{}", &r[1..]);
                let pos = i - start + 1;
                check("type", rebuild(Some(unknown)), format!("ASTM_RECORD_TYPE_UNKNOWN record[{pos}]"));
            }
            b'L' => {
                check("termination", rebuild(Some("L|1|W".into())), "ASTM_TERMINATION_CODE_INVALID L[1]-3".into());
                check("no L", rebuild(None), format!("ASTM_TERMINATOR_MISSING {}", last_position(&recs[start..i])));
            }
            b'H' => {
                let dated = r.rsplit_once('|').map(|(a, _)| format!("{a}|20241301000000")).expect("H-14");
                check("date", rebuild(Some(dated)), "ASTM_DATE_INVALID H[1]-14".into());
            }
            _ => {}
        }
    }
    assert!(tried >= 700, "{tried}");
    assert!(found * 100 >= tried * 99, "{found} of {tried}");
}

/// The position of the last record of a message's records (`R[2]`).
fn last_position(recs: &[&str]) -> String {
    let last = recs.last().expect("records");
    let k = last.as_bytes()[0];
    format!("{}[{}]", k as char, recs.iter().filter(|r| r.as_bytes()[0] == k).count())
}
