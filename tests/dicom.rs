//! DICOM: every fixture under fixtures/dicom through validate, against
//! fixtures/dicom/manifest.json, each code at its tag path; parse and inspect (element counts,
//! tags and VRs, the same model in every transfer syntax, sequences, private blocks,
//! encapsulated pixel data); fmt a fixed point; the marker file (every text value a marker),
//! plain and deflated, never leaks through validate, inspect or stderr; deflated in, deflated
//! out; a deflate bomb stops at the input limit; bounded memory on a large multi-frame file.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{code, fixture, run, run_stdin};

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("dicom/manifest.json")).expect("manifest");
    serde_json::from_str::<Vec<Value>>(&text).expect("manifest JSON")
}

fn path(rel: &str) -> String {
    fixture(&format!("dicom/{rel}")).to_string_lossy().into_owned()
}

/// `(code, location)` of a validate --json output, and a fatal cause from stderr.
fn findings(o: &std::process::Output) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for line in o.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).expect("JSON line");
        for f in v["findings"].as_array().into_iter().flatten() {
            out.insert((f["code"].as_str().unwrap_or("").to_owned(), f["location"].as_str().unwrap_or("").to_owned()));
        }
    }
    // `phiward: CLI_PARSE_FAILED: ... (DICOM_TRUNCATED at (7FE0,0010)/offset:984)`
    let err = String::from_utf8_lossy(&o.stderr);
    if let Some((_, cause)) = err.split_once('(') {
        if let Some((c, loc)) = cause.trim_end().trim_end_matches(')').split_once(" at ") {
            out.insert((c.to_owned(), loc.to_owned()));
        }
    }
    out
}

fn model(rel: &str) -> Value {
    let o = run(&["parse", "--json", &path(rel)]);
    assert_eq!(code(&o), 0, "{rel}: {}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("parse JSON");
    v["model"].clone()
}

fn inspect(rel: &str) -> Value {
    let o = run(&["inspect", "--json", &path(rel)]);
    serde_json::from_slice(&o.stdout).expect("inspect JSON")
}

/// Every (path, tag, VR) of a model, depth first.
fn tags(model: &Value, prefix: &str, out: &mut Vec<(String, String, String)>) {
    for (tag, e) in model.as_object().expect("object") {
        let vr = e["vr"].as_str().expect("vr").to_owned();
        out.push((prefix.to_owned(), tag.clone(), vr.clone()));
        if vr == "SQ" {
            for (n, item) in e["Value"].as_array().into_iter().flatten().enumerate() {
                tags(item, &format!("{prefix}{tag}[{n}]."), out);
            }
        }
    }
}

#[test]
fn fixtures_against_the_manifest() {
    let m = manifest();
    assert!(m.len() >= 30, "{}", m.len());
    for e in &m {
        let file = e["file"].as_str().expect("file");
        let o = run(&["validate", "--json", &path(file)]);
        let got = findings(&o);
        for c in e["codes"].as_array().expect("codes") {
            let c = c.as_str().expect("code");
            assert!(got.iter().any(|(g, _)| g == c), "{file}: {c} not found in {got:?}");
        }
        match e["expect"].as_str().expect("expect") {
            "valid" => assert_eq!(code(&o), 0, "{file}: {got:?}"),
            "invalid" => assert_eq!(code(&o), 1, "{file}: {got:?}"),
            // Broken mid-way: read up to the break, whose fatal finding is listed (exit 1).
            "broken" => {
                assert_eq!(code(&o), 1, "{file}: {got:?}");
                let v: Value = serde_json::from_slice(&o.stdout).expect("validate JSON");
                let fatal = v["findings"].as_array().into_iter().flatten().filter(|f| f["severity"] == "fatal").count();
                assert_eq!(fatal, 1, "{file}: {got:?}");
            }
            _ => assert_eq!(code(&o), 65, "{file}: {got:?}"),
        }
        for (c, _) in &got {
            assert!(c.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'), "{file}: {c}");
        }
    }
}

/// Each validation code at the tag path and byte offset of the element it is about.
#[test]
fn codes_at_their_tag_paths() {
    let cases = [
        ("invalid/truncated.dcm", "DICOM_TRUNCATED", "(7FE0,0010)/offset:"),
        ("invalid/lying_length.dcm", "DICOM_LENGTH_INVALID", "(0008,1140).(FFFE,E000)/offset:"),
        ("invalid/delimiter_unexpected.dcm", "DICOM_DELIMITER_UNEXPECTED", "(FFFE,E00D)/offset:"),
        ("invalid/vr_invalid.dcm", "DICOM_VR_INVALID", "(0020,4000)/offset:"),
        ("invalid/deflate_invalid.dcm", "DICOM_DEFLATE_INVALID", "offset:"),
        ("invalid/deflate_truncated.dcm", "DICOM_DEFLATE_INVALID", "(0008,1140)[2].(0008,1155)/offset:"),
        ("invalid/date_invalid.dcm", "DICOM_VALUE_INVALID", "(0008,0020)/offset:"),
        ("invalid/time_invalid.dcm", "DICOM_VALUE_INVALID", "(0008,0030)/offset:"),
        ("invalid/uid_invalid.dcm", "DICOM_VALUE_INVALID", "(0020,000E)/offset:"),
        ("invalid/cs_invalid.dcm", "DICOM_VALUE_INVALID", "(0010,0040)/offset:"),
        ("invalid/is_invalid.dcm", "DICOM_VALUE_INVALID", "(0020,0013)/offset:"),
        ("invalid/ds_invalid.dcm", "DICOM_VALUE_INVALID", "(0018,0050)/offset:"),
        ("invalid/us_size_invalid.dcm", "DICOM_VALUE_INVALID", "(0028,0010)/offset:"),
        ("invalid/sh_too_long.dcm", "DICOM_VALUE_TOO_LONG", "(0008,0050)/offset:"),
        ("invalid/vm_invalid.dcm", "DICOM_VM_INVALID", "(0008,0060)/offset:"),
        ("invalid/odd_length.dcm", "DICOM_ODD_LENGTH", "(0020,0010)/offset:"),
        ("invalid/vr_mismatch.dcm", "DICOM_VR_MISMATCH", "(0020,0010)/offset:"),
        ("invalid/attribute_missing.dcm", "DICOM_ATTRIBUTE_MISSING", "(0008,0060)"),
        ("invalid/attribute_empty.dcm", "DICOM_ATTRIBUTE_EMPTY", "(0020,000E)/offset:"),
        ("invalid/sop_class_unknown.dcm", "DICOM_SOP_CLASS_UNKNOWN", "(0008,0016)"),
        ("invalid/meta_mismatch.dcm", "DICOM_META_MISMATCH", "(0008,0018)/offset:"),
        ("invalid/tag_order.dcm", "DICOM_TAG_ORDER", "(0008,0005)/offset:"),
        ("invalid/private_creator_missing.dcm", "DICOM_PRIVATE_CREATOR_MISSING", "(0009,1001)/offset:"),
        ("invalid/meta_group_length.dcm", "DICOM_META_GROUP_LENGTH", "(0002,0000)/offset:132"),
        ("invalid/meta_element_missing.dcm", "DICOM_META_ELEMENT_MISSING", "(0002,0002)"),
        ("invalid/meta_missing.dcm", "DICOM_META_MISSING", "-"),
        ("invalid/transfer_syntax_unknown.dcm", "DICOM_TRANSFER_SYNTAX_UNKNOWN", "(0002,0010)/offset:"),
        ("valid/no_preamble.dcm", "DICOM_PREAMBLE_MISSING", "offset:0"),
        ("valid/ct_explicit_le.dcm", "DICOM_CONDITION_UNCHECKED", "-"),
    ];
    for (file, c, loc) in cases {
        let got = findings(&run(&["validate", "--json", &path(file)]));
        let hit = got.iter().any(|(g, l)| {
            g == c
                && if loc.ends_with(':') {
                    l.starts_with(loc) && l[loc.len()..].parse::<u64>().is_ok()
                } else {
                    l == loc
                }
        });
        assert!(hit, "{file}: {c} at {loc} not in {got:?}");
    }
    // The truncated file's offset is the pixel data's header: the bytes before it were read.
    let got = findings(&run(&["validate", "--json", &path("invalid/truncated.dcm")]));
    let size = std::fs::metadata(fixture("dicom/invalid/truncated.dcm")).expect("size").len();
    let at: u64 = got
        .iter()
        .find(|(c, _)| c == "DICOM_TRUNCATED")
        .and_then(|(_, l)| l.rsplit(':').next()?.parse().ok())
        .expect("offset");
    assert!(at + 12 <= size, "{at} {size}");
}

#[test]
fn the_same_model_in_every_transfer_syntax() {
    let le = model("valid/ct_explicit_le.dcm");
    for other in ["valid/ct_implicit_le.dcm", "valid/ct_explicit_be.dcm", "valid/ct_deflated.dcm"] {
        let mut m = model(other);
        let mut want = le.clone();
        // Only the transfer syntax UID differs; the meta group length is that of the UID.
        for k in ["00020000", "00020010"] {
            m.as_object_mut().expect("object").remove(k);
            want.as_object_mut().expect("object").remove(k);
        }
        // Pixel data is OW in implicit VR and as written in explicit VR.
        assert_eq!(m, want, "{other}");
    }
}

#[test]
fn element_counts_tags_and_vrs() {
    // (file, elements of parse's model counted depth first, elements inspect counts, items)
    let cases = [
        ("valid/ct_explicit_le.dcm", 50, 50, 2),
        ("valid/ct_implicit_le.dcm", 50, 50, 2),
        ("valid/ct_explicit_be.dcm", 50, 50, 2),
        ("valid/ct_deflated.dcm", 50, 50, 2),
        ("valid/sequences_undefined_length.dcm", 50, 50, 2),
        ("valid/sequences_nested.dcm", 51, 51, 2),
        ("valid/private_blocks.dcm", 48, 48, 0),
        ("valid/encapsulated_jpeg.dcm", 46, 46, 0),
        ("valid/no_preamble.dcm", 45, 45, 0),
    ];
    for (file, model_count, inspect_count, items) in cases {
        let mut all = Vec::new();
        tags(&model(file), "", &mut all);
        assert_eq!(all.len(), model_count, "{file}");
        let s = inspect(file);
        assert_eq!(s["elements"], inspect_count, "{file}");
        assert_eq!(s["items"], items, "{file}");
        // Meta first, then the dataset in ascending order.
        let top: Vec<&String> = all.iter().filter(|t| t.0.is_empty()).map(|t| &t.1).collect();
        assert!(top.windows(2).all(|w| w[0] < w[1]), "{file}");
        assert!(all.iter().any(|t| t.1 == "00100010" && t.2 == "PN"), "{file}");
        assert!(all.iter().any(|t| t.1 == "00280010" && t.2 == "US"), "{file}");
    }
    let mut all = Vec::new();
    tags(&model("valid/sequences_nested.dcm"), "", &mut all);
    assert!(all.contains(&("00400275[0].00400008[0].".into(), "00080100".into(), "SH".into())), "{all:?}");
    let mut all = Vec::new();
    tags(&model("valid/private_blocks_implicit.dcm"), "", &mut all);
    assert!(all.contains(&(String::new(), "00090010".into(), "LO".into())));
    assert!(all.contains(&(String::new(), "00091001".into(), "UN".into())));
    let s = inspect("valid/private_blocks.dcm");
    assert_eq!((s["private_groups"].as_u64(), s["private_creators"].as_u64()), (Some(1), Some(1)));
    let s = inspect("valid/encapsulated_jpeg.dcm");
    assert_eq!(s["pixel_data"]["encapsulated"], true);
    assert_eq!(s["pixel_data"]["fragments"], 2);
    assert_eq!(s["frames"], 1);
    assert_eq!(s["transfer_syntax"]["name"], "JPEG Lossless, Non-Hierarchical, First-Order Prediction");
    assert_eq!(s["sop_class"]["name"], "CT Image Storage");
    let m = model("valid/encapsulated_jpeg.dcm");
    assert_eq!(m["7FE00010"]["Fragments"], 2);
    assert!(m["7FE00010"].get("Value").is_none() && m["7FE00010"].get("InlineBinary").is_none());
    let m = model("valid/ct_explicit_le.dcm");
    assert_eq!(m["00100010"]["Value"][0]["Alphabetic"], "Testperson^Jordan^Q");
    assert_eq!(m["00200032"]["Value"], serde_json::json!([-125.0, -125.0, 30.5]));
    assert_eq!(m["00280010"]["Value"], serde_json::json!([4]));
    assert_eq!(m["00081140"]["Value"][1]["00081155"]["Value"][0], "2.25.5002");
    assert_eq!(m["7FE00010"]["BulkDataLength"], 32);
}

#[test]
fn fmt_is_a_fixed_point_that_validates() {
    for e in manifest().iter().filter(|e| e["expect"] == "valid") {
        let file = e["file"].as_str().expect("file");
        let o = run(&["fmt", &path(file)]);
        assert_eq!(code(&o), 0, "{file}");
        assert_eq!(&o.stdout[128..132], b"DICM", "{file}");
        let again = run_stdin(&["fmt", "-"], &o.stdout);
        assert_eq!(again.stdout, o.stdout, "{file}: fmt is not a fixed point");
        assert_eq!(code(&run_stdin(&["fmt", "--check", "-"], &o.stdout)), 0, "{file}");
        let v = run_stdin(&["validate", "--json", "-"], &o.stdout);
        let before = findings(&run(&["validate", "--json", &path(file)]));
        let after = findings(&v);
        let codes = |s: &BTreeSet<(String, String)>| s.iter().map(|(c, _)| c.clone()).collect::<BTreeSet<_>>();
        let mut expected = codes(&before);
        // What the canonical form repairs: the preamble, and a file meta that names an
        // encoding the dataset is not in (fmt names the one it writes).
        expected.remove("DICOM_PREAMBLE_MISSING");
        expected.remove("DICOM_ENCODING_MISMATCH");
        assert_eq!(codes(&after), expected, "{file}");
    }
}

#[test]
fn markers_never_leave_the_data_channel() {
    let file = path("markers/markers.dcm");
    let bytes = std::fs::read(&file).expect("markers");
    assert!(bytes.windows(4).filter(|w| w == b"MKR1").count() >= 1);
    markers_stay_in(&file, &bytes);
    // The same markers deflated: in the file only once inflated.
    let file = path("markers/markers_deflated.dcm");
    let bytes = std::fs::read(&file).expect("markers deflated");
    assert!(!after_meta(&bytes).windows(3).any(|w| w == b"MKR"));
    markers_stay_in(&file, &bytes);
}

fn markers_stay_in(file: &str, bytes: &[u8]) {
    let file = file.to_owned();
    for args in [
        vec!["validate", "--json", file.as_str()],
        vec!["validate", file.as_str()],
        vec!["inspect", "--json", file.as_str()],
        vec!["inspect", file.as_str()],
        vec!["validate", "--strict", "--json", file.as_str()],
    ] {
        let o = crate::common::run_with(&args, None, &[("RUST_LOG", "trace")]);
        for (name, out) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            assert!(!out.windows(3).any(|w| w == b"MKR"), "{args:?}: marker on {name}");
        }
    }
    // The data channel carries them (parse), and nothing else: stderr stays clean.
    let o = crate::common::run_with(&["parse", "--json", file.as_str()], None, &[("RUST_LOG", "trace")]);
    assert!(o.stdout.windows(3).filter(|w| w == b"MKR").count() > 10, "{file}");
    assert!(!o.stderr.windows(3).any(|w| w == b"MKR"));
    // A truncated marker file is read up to the break: a code, and no marker (validate,
    // inspect) or only the markers of the elements before the break (parse, on stdout).
    for args in [["validate", "--json", "-"], ["inspect", "--json", "-"]] {
        let o = run_stdin(&args, &bytes[..bytes.len() - 40]);
        assert_eq!(code(&o), 1, "{file}");
        assert!(!o.stderr.windows(3).any(|w| w == b"MKR") && !o.stdout.windows(3).any(|w| w == b"MKR"));
    }
    let o = run_stdin(&["parse", "--json", "-"], &bytes[..bytes.len() - 40]);
    assert_eq!(code(&o), 1, "{file}");
    assert!(!o.stderr.windows(3).any(|w| w == b"MKR"));
    // fmt and redact write no part of it.
    let o = run_stdin(&["fmt", "-"], &bytes[..bytes.len() - 40]);
    assert_eq!(code(&o), 65, "{file}");
    assert!(o.stdout.is_empty() && !o.stderr.windows(3).any(|w| w == b"MKR"));
}

/// The bytes after the file meta of a Part 10 file (group 0002 explicit VR LE, read by its
/// group length).
fn after_meta(file: &[u8]) -> &[u8] {
    let len = u32::from_le_bytes(file[140..144].try_into().expect("group length")) as usize;
    &file[144 + len..]
}

fn inflate(raw: &[u8]) -> Vec<u8> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(raw).read_to_end(&mut out).expect("a raw deflate stream");
    out
}

fn deflate(plain: &[u8], level: u32) -> Vec<u8> {
    use std::io::Write as _;
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
    z.write_all(plain).expect("deflate");
    z.finish().expect("deflate")
}

/// A deflated dataset is written deflated again by fmt and redact: the output's dataset is a
/// raw deflate stream of even length whose inflated bytes are the dataset the twin in explicit
/// VR LE gives, and the output reads back to the same model.
#[test]
fn deflated_in_deflated_out() {
    let o = run(&["fmt", &path("valid/ct_deflated.dcm")]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let twin = run(&["fmt", &path("valid/ct_explicit_le.dcm")]);
    let squeezed = after_meta(&o.stdout);
    assert_eq!(squeezed.len() % 2, 0);
    assert_eq!(inflate(squeezed), after_meta(&twin.stdout), "the inflated dataset differs from the twin's");
    assert!(!squeezed.windows(10).any(|w| w == b"Testperson"), "the dataset is not deflated");
    let back: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("parse");
    assert_eq!(back["model"], model("valid/ct_deflated.dcm"));
    assert_eq!(back["model"]["00020010"]["Value"][0], "1.2.840.10008.1.2.1.99");
    // Another encoder's stream of the same dataset is canonical (compared inflated), and fmt
    // writes the same bytes whatever deflated the input.
    let mut other = o.stdout[..o.stdout.len() - squeezed.len()].to_vec();
    // (Stored blocks, level 0: other bytes than phiward's level 6.)
    let mut re = deflate(&inflate(squeezed), 0);
    re.resize(re.len() + re.len() % 2, 0);
    assert_ne!(re, squeezed);
    other.extend_from_slice(&re);
    assert_eq!(code(&run_stdin(&["fmt", "--check", "-"], &other)), 0);
    assert_eq!(run_stdin(&["fmt", "-"], &other).stdout, o.stdout);
    // redact keeps the transfer syntax: deflated out, the markers gone once inflated.
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let r = run(&["redact", "--policy", &basic, "--key-file", &key, &path("markers/markers_deflated.dcm")]);
    assert_eq!(code(&r), 0, "{}", String::from_utf8_lossy(&r.stderr));
    let plain = inflate(after_meta(&r.stdout));
    assert!(plain.windows(4).any(|w| w == b"\x10\x00\x20\x00"), "no (0010,0020) in the inflated dataset");
    let m: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &r.stdout).stdout).expect("parse");
    assert_eq!(m["model"]["00020010"]["Value"][0], "1.2.840.10008.1.2.1.99");
    let mut left = Vec::new();
    holding(&m["model"], "MKR", &mut left);
    assert!(left.iter().all(|(_, vr)| vr == "CS"), "{left:?}");
    let again = run(&["redact", "--policy", &basic, "--key-file", &key, &path("markers/markers_deflated.dcm")]);
    assert_eq!(again.stdout, r.stdout, "not deterministic");
}

/// A deflate bomb: the inflated bytes count against --max-input-bytes, skipped bulk values
/// too; past it the input is refused with a code while inflating, not read to the end.
#[test]
fn deflate_bomb_is_refused_at_the_input_limit() {
    let file = std::fs::read(fixture("dicom/valid/ct_deflated.dcm")).expect("fixture");
    let meta = &file[..file.len() - after_meta(&file).len()];
    // (0009,0010) LO creator, (0009,1001) OB of 64 MiB of zeros: about 64 KiB deflated.
    let mut plain = Vec::new();
    plain.extend_from_slice(b"\x09\x00\x10\x00LO\x04\x00ACME");
    plain.extend_from_slice(b"\x09\x00\x01\x10OB\x00\x00");
    plain.extend_from_slice(&(64u32 << 20).to_le_bytes());
    plain.resize(plain.len() + (64 << 20), 0);
    let mut bomb = meta.to_vec();
    let squeezed = deflate(&plain, 9);
    assert!(squeezed.len() < 1 << 20);
    bomb.extend_from_slice(&squeezed);
    bomb.resize(bomb.len() + bomb.len() % 2, 0);
    let o = run_stdin(&["inspect", "--json", "--max-input-bytes", "8388608", "-"], &bomb);
    assert_eq!(code(&o), 65, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("CLI_INPUT_TOO_LARGE"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Under the default limit (256 MiB) it reads: the bulk value is skipped, its length kept.
    let o = run_stdin(&["inspect", "--json", "-"], &bomb);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("inspect");
    assert_eq!(v["private_creators"], 1);
    // A stream cut anywhere ends in a code, never a panic or a silent short dataset.
    let whole = std::fs::read(fixture("dicom/valid/ct_deflated.dcm")).expect("fixture");
    let start = whole.len() - after_meta(&whole).len();
    for cut in (start + 1..whole.len() - 2).step_by(37) {
        let o = run_stdin(&["validate", "--json", "-"], &whole[..cut]);
        assert_eq!(code(&o), 1, "cut at {cut}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("DICOM_DEFLATE_INVALID") || out.contains("DICOM_TRUNCATED"), "cut at {cut}: {out}");
        assert!(run_stdin(&["fmt", "-"], &whole[..cut]).stdout.is_empty(), "cut at {cut}: fmt wrote a part");
    }
}

/// A key file of its own for each call: the tests run in parallel, and a file another test is
/// rewriting can be read empty (`CLI_KEY_INVALID`).
fn key_file() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("phiward-dicom-test-{}-{n}.key", std::process::id()));
    std::fs::write(&p, b"0123456789abcdef0123456789abcdef").expect("key");
    p.to_string_lossy().into_owned()
}

/// The (tag, VR) of every element of a model whose text holds `needle`.
fn holding(model: &Value, needle: &str, out: &mut Vec<(String, String)>) {
    for (tag, e) in model.as_object().expect("object") {
        let vr = e["vr"].as_str().unwrap_or("").to_owned();
        if vr == "SQ" {
            for item in e["Value"].as_array().into_iter().flatten() {
                holding(item, needle, out);
            }
        } else if e.to_string().contains(needle) {
            out.push((tag.clone(), vr));
        }
    }
}

#[test]
fn basic_profile_redacts_every_marker_it_names() {
    let key = key_file();
    let file = path("markers/markers.dcm");
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let sh = crate::common::root().join("policy/safe-harbor.toml").to_string_lossy().into_owned();
    for policy in [&basic, &sh] {
        let o = run(&["redact", "--policy", policy, "--key-file", &key, &file]);
        assert_eq!(code(&o), 0, "{policy}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(&o.stdout[128..132], b"DICM");
        assert!(!o.stderr.windows(3).any(|w| w == b"MKR"));
        let v: Value =
            serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("redacted parses");
        let m = &v["model"];
        // The only markers left are in coded strings (CS: defined terms the profile keeps).
        let mut left = Vec::new();
        holding(m, "MKR", &mut left);
        assert!(left.iter().all(|(_, vr)| vr == "CS"), "{policy}: {left:?}");
        assert_eq!(m["00120062"]["Value"][0], "YES");
        assert!(m.get("00091001").is_none() && m.get("00090010").is_none(), "{policy}: private kept");
        assert!(m["00100010"].get("Value").is_none(), "{policy}: name kept");
    }
    // Keyed UIDs: 2.25.<decimal>, the same for the same UID across files of a study.
    let a = run(&["redact", "--policy", &basic, "--key-file", &key, &path("valid/ct_explicit_le.dcm")]);
    let b = run(&["redact", "--policy", &basic, "--key-file", &key, &path("valid/ct_implicit_le.dcm")]);
    let again = run(&["redact", "--policy", &basic, "--key-file", &key, &path("valid/ct_explicit_le.dcm")]);
    assert_eq!(a.stdout, again.stdout, "not deterministic");
    let ma =
        &serde_json::from_slice::<Value>(&run_stdin(&["parse", "--json", "-"], &a.stdout).stdout).expect("a")["model"];
    let mb =
        &serde_json::from_slice::<Value>(&run_stdin(&["parse", "--json", "-"], &b.stdout).stdout).expect("b")["model"];
    let study = ma["0020000D"]["Value"][0].as_str().expect("study uid");
    assert!(study.starts_with("2.25.") && study != "2.25.2001");
    assert_eq!(ma["0020000D"], mb["0020000D"]);
    assert_eq!(ma["00080018"]["Value"], ma["00020003"]["Value"]);
    assert_eq!(ma["00080016"]["Value"][0], "1.2.840.10008.5.1.4.1.1.2");
    // The output is a Part 10 file that reads without a fatal finding.
    let v = run_stdin(&["validate", "--json", "-"], &a.stdout);
    assert!(matches!(code(&v), 0 | 1), "{}", String::from_utf8_lossy(&v.stderr));
    let fatal = findings(&v).into_iter().filter(|(c, _)| c.contains("TRUNCATED") || c.contains("LENGTH")).count();
    assert_eq!(fatal, 0);
    // dicom-basic needs a key (its UIDs are keyed).
    let o = run(&["redact", "--policy", &basic, &path("valid/ct_explicit_le.dcm")]);
    assert_ne!(code(&o), 0);
    assert!(o.stdout.is_empty());
}

/// Regression: a file without SOP Instance UID (0008,0018) (a DICOMDIR) lost its Media Storage
/// SOP Instance UID (0002,0003) in redact (a type 1 file meta element); it is now decided by its
/// own rule (the profile's U: a keyed hash).
#[test]
fn redact_keeps_the_meta_instance_uid_of_a_file_without_sop_instance_uid() {
    let bytes = std::fs::read(fixture("dicom/valid/ct_explicit_le.dcm")).expect("fixture");
    let start = bytes.len() - after_meta(&bytes).len();
    let at =
        start + bytes[start..].windows(6).position(|w| w == b"\x08\x00\x18\x00UI").expect("(0008,0018) in the dataset");
    let len = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
    let mut cut = bytes[..at].to_vec();
    cut.extend_from_slice(&bytes[at + 8 + len..]);
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let r = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &cut);
    assert_eq!(code(&r), 0, "{}", String::from_utf8_lossy(&r.stderr));
    let m: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &r.stdout).stdout).expect("parse");
    let uid = m["model"]["00020003"]["Value"][0].as_str().expect("(0002,0003) written");
    assert!(uid.starts_with("2.25.") && uid != "2.25.1001", "not the keyed hash");
    assert!(m["model"].get("00080018").is_none());
}

/// A file broken mid-way is read up to the break (as dcmdump reads it): `parse` writes the
/// elements read completely before it and the fatal finding, `inspect` counts them, the result
/// is negative (exit 1); `fmt` and `redact` write nothing (a part is never written as a whole
/// file) and fail with the cause.
#[test]
fn broken_file_is_read_up_to_the_break() {
    let file = path("invalid/truncated.dcm");
    let o = run(&["parse", "--json", &file]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("parse JSON");
    let mut all = Vec::new();
    tags(&v["model"], "", &mut all);
    assert!(all.len() > 40, "{}", all.len());
    assert!(v["model"].get("7FE00010").is_none(), "the element cut by the break is not in the model");
    let warnings = v["warnings"].as_array().expect("warnings");
    let fatal: Vec<&Value> = warnings.iter().filter(|f| f["severity"] == "fatal").collect();
    assert_eq!(fatal.len(), 1, "{warnings:?}");
    assert_eq!(fatal[0]["code"], "DICOM_TRUNCATED");
    assert!(fatal[0]["location"].as_str().expect("location").starts_with("(7FE0,0010)/offset:"));
    let i = run(&["inspect", "--json", &file]);
    assert_eq!(code(&i), 1);
    let s: Value = serde_json::from_slice(&i.stdout).expect("inspect JSON");
    assert_eq!(s["elements"].as_u64(), Some(all.len() as u64), "{s}");
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    for args in [vec!["fmt", file.as_str()], vec!["redact", "--policy", &basic, "--key-file", &key, file.as_str()]] {
        let o = run(&args);
        assert_eq!(code(&o), 65, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?} wrote a part");
        assert!(String::from_utf8_lossy(&o.stderr).contains("DICOM_TRUNCATED"), "{args:?}");
    }
}

/// An explicit VR little endian element (value padded to an even length).
pub(crate) fn le(tag: u32, vr: &[u8; 2], value: &[u8]) -> Vec<u8> {
    let mut v = value.to_vec();
    if v.len() % 2 == 1 {
        v.push(if vr == b"UI" { 0 } else { b' ' });
    }
    let mut out = Vec::new();
    out.extend_from_slice(&((tag >> 16) as u16).to_le_bytes());
    out.extend_from_slice(&((tag & 0xFFFF) as u16).to_le_bytes());
    out.extend_from_slice(vr);
    if matches!(vr, b"SQ" | b"OB" | b"UT" | b"UC" | b"UR") {
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    } else {
        out.extend_from_slice(&(v.len() as u16).to_le_bytes());
    }
    out.extend_from_slice(&v);
    out
}

/// An item of defined length.
pub(crate) fn le_item(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0xFE, 0xFF, 0x00, 0xE0];
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// A Part 10 file (explicit VR little endian) of `sop` with `dataset`.
fn le_file(sop: &[u8], inst: &[u8], dataset: &[u8]) -> Vec<u8> {
    le_file_in(sop, inst, b"1.2.840.10008.1.2.1", dataset)
}

/// A Part 10 file of `sop` whose meta names transfer syntax `ts` (explicit VR little endian or an
/// encapsulated syntax over it) with `dataset`.
fn le_file_in(sop: &[u8], inst: &[u8], ts: &[u8], dataset: &[u8]) -> Vec<u8> {
    let mut meta = le(0x0002_0001, b"OB", b"\x00\x01");
    meta.extend(le(0x0002_0002, b"UI", sop));
    meta.extend(le(0x0002_0003, b"UI", inst));
    meta.extend(le(0x0002_0010, b"UI", ts));
    let mut out = vec![0u8; 128];
    out.extend_from_slice(b"DICM");
    out.extend(le(0x0002_0000, b"UL", &(meta.len() as u32).to_le_bytes()));
    out.extend(meta);
    out.extend_from_slice(dataset);
    out
}

/// The code items of a code sequence: a code of a registered scheme that PS3.16 lists keeps its
/// value and designator and gets PS3.16's meaning; a SNOMED CT code with its check digit is kept;
/// a code of a local scheme, or one its scheme does not prove, becomes a dummy item of a local
/// scheme. No marker (free text) is left.
#[test]
fn basic_profile_keeps_code_items_only_when_proven() {
    let code_item = |value: &[u8], scheme: &[u8], meaning: &[u8]| {
        let mut b = le(0x0008_0100, b"SH", value);
        b.extend(le(0x0008_0102, b"SH", scheme));
        b.extend(le(0x0008_0104, b"LO", meaning));
        le_item(&b)
    };
    let mut items = code_item(b"121001", b"DCM", b"MKR quoted meaning");
    items.extend(code_item(b"41549009", b"SCT", b"MKR sct meaning"));
    items.extend(code_item(b"MKRLOCAL", b"99LOCAL", b"MKR local meaning"));
    items.extend(code_item(b"MKR1", b"DCM", b"MKR not a DCM code"));
    let mut ds = le(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.7");
    ds.extend(le(0x0008_0018, b"UI", b"2.25.77"));
    ds.extend(le(0x0008_1032, b"SQ", &items));
    let file = le_file(b"1.2.840.10008.5.1.4.1.1.7", b"2.25.77", &ds);
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &file);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!o.stdout.windows(3).any(|w| w == b"MKR"), "a marker left in the output");
    let v: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("parse");
    let items = v["model"]["00081032"]["Value"].as_array().expect("the code sequence kept");
    let at = |n: usize, tag: &str| items[n][tag]["Value"][0].as_str().expect("valued").to_owned();
    assert_eq!((at(0, "00080100"), at(0, "00080102")), ("121001".into(), "DCM".into()));
    assert!(!at(0, "00080104").is_empty(), "PS3.16's meaning");
    assert_eq!(
        (at(1, "00080100"), at(1, "00080102"), at(1, "00080104")),
        ("41549009".into(), "SCT".into(), "REDACTED".into())
    );
    for n in [2, 3] {
        assert_eq!(
            (at(n, "00080100"), at(n, "00080102"), at(n, "00080104")),
            ("REDACTED".into(), "99PHIWARD".into(), "REDACTED".into()),
            "item {n}"
        );
    }
}

/// A DICOMDIR (Basic Directory, PS3.3 F.3) is redacted consistently: its directory records'
/// keys are replaced by the profile's rules (type 1 keys by dummies) and the record offsets of
/// (0004,1200), (0004,1202), (0004,1400) and (0004,1420) point at the same records in the file
/// written (whose items have other lengths and positions than the input's).
#[test]
fn redacted_dicomdir_offsets_point_at_the_same_records() {
    let record = |next: u32, kind: &[u8], keys: &[Vec<u8>]| {
        let mut b = le(0x0004_1400, b"UL", &next.to_le_bytes());
        b.extend(le(0x0004_1410, b"US", &0xFFFFu16.to_le_bytes()));
        b.extend(le(0x0004_1420, b"UL", &0u32.to_le_bytes()));
        b.extend(le(0x0004_1430, b"CS", kind));
        for k in keys {
            b.extend_from_slice(k);
        }
        le_item(&b)
    };
    let sop = b"1.2.840.10008.1.3.10";
    // Offsets are from the file's first byte: lay the file out once to learn where the
    // records start, then write it again with those offsets (same lengths).
    let build = |first: u32, second: u32| {
        let r1 = record(second, b"PATIENT", &[le(0x0010_0010, b"PN", b"MKR^ONE"), le(0x0010_0020, b"LO", b"MKR-ID-1")]);
        let r2 = record(0, b"PATIENT", &[le(0x0010_0010, b"PN", b"MKR^TWO"), le(0x0010_0020, b"LO", b"MKR-ID-2")]);
        let mut ds = le(0x0004_1130, b"CS", b"FILESET");
        ds.extend(le(0x0004_1200, b"UL", &first.to_le_bytes()));
        ds.extend(le(0x0004_1202, b"UL", &second.to_le_bytes()));
        ds.extend(le(0x0004_1212, b"US", &0u16.to_le_bytes()));
        let mut records = r1.clone();
        records.extend(r2);
        ds.extend(le(0x0004_1220, b"SQ", &records));
        let file = le_file(sop, b"2.25.88", &ds);
        let first_at = file.len() - records.len();
        (file, first_at as u32, (first_at + r1.len()) as u32)
    };
    let (_, first, second) = build(0, 0);
    let (file, f2, s2) = build(first, second);
    assert_eq!((f2, s2), (first, second));
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &file);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let out = &o.stdout;
    assert!(!out.windows(3).any(|w| w == b"MKR"), "a directory record key left in the output");
    // The records in the output: the item tags after the Directory Record Sequence's header.
    let seq = out.windows(4).position(|w| w == [0x04, 0x00, 0x20, 0x12]).expect("(0004,1220) written");
    // Up to the De-identification Method Code Sequence (0012,0064) written after it.
    let end = out.windows(4).position(|w| w == [0x12, 0x00, 0x64, 0x00]).expect("(0012,0064) written");
    let items: Vec<u32> =
        (seq..end - 8).filter(|&i| out[i..i + 4] == [0xFE, 0xFF, 0x00, 0xE0]).map(|i| i as u32).collect();
    assert_eq!(items.len(), 2, "two records");
    assert_ne!(items[0], first, "the records moved (so the offsets had to be rewritten)");
    let ul = |tag: [u8; 4], from: usize| {
        let at = from + out[from..].windows(4).position(|w| w == tag).expect("offset written");
        u32::from_le_bytes([out[at + 8], out[at + 9], out[at + 10], out[at + 11]])
    };
    assert_eq!(ul([0x04, 0x00, 0x00, 0x12], 132), items[0], "root's first record");
    assert_eq!(ul([0x04, 0x00, 0x02, 0x12], 132), items[1], "root's last record");
    assert_eq!(ul([0x04, 0x00, 0x00, 0x14], items[0] as usize), items[1], "next record of the first");
    assert_eq!(ul([0x04, 0x00, 0x00, 0x14], items[1] as usize), 0, "no next record of the last");
}

/// Regression: a UID the profile's table does not name that is not the standard's (an SR image
/// reference's Referenced SOP Class UID (0008,1150) holding `0`, as pydicom's `reportsi.dcm`
/// has; a private SOP Class UID) was removed, and a type 1 attribute went missing. It is now
/// replaced as the table's U replaces a UID: the keyed `2.25.<decimal>` UID, the same for the same
/// UID and key in every file (so references still match), a standard UID beside it kept, and
/// the file meta's class UID decided as (0008,0016) is. Without a key (safe-harbor.toml) it is
/// removed. The input value is in no output.
#[test]
fn basic_profile_replaces_a_uid_that_is_not_the_standards_with_the_keyed_uid() {
    let private_class: &[u8] = b"1.3.6.1.4.1.55555.1.1";
    let reference = |class: &[u8], instance: &[u8]| {
        let mut b = le(0x0008_1150, b"UI", class);
        b.extend(le(0x0008_1155, b"UI", instance));
        le_item(&b)
    };
    let build = |instance: &[u8]| {
        let mut ds = le(0x0008_0016, b"UI", private_class);
        ds.extend(le(0x0008_0018, b"UI", instance));
        let mut refs = reference(b"0", b"0");
        refs.extend(reference(b"1.2.840.10008.5.1.4.1.1.2", b"2.25.4242"));
        ds.extend(le(0x0008_1140, b"SQ", &refs));
        // A multi-valued UI the table does not name: Related General SOP Class UID (0008,001A);
        // the third value is under the root but no UID (a name after it).
        ds.extend(le(0x0008_001A, b"UI", b"1.2.840.10008.5.1.4.1.1.88.22\\1.3.6.1.4.1.55555.2\\1.2.840.10008.MKR"));
        le_file(private_class, instance, &ds)
    };
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let redacted = |file: &[u8]| {
        let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], file);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            !o.stdout.windows(private_class.len()).any(|w| w == private_class),
            "the private class UID left in the output"
        );
        assert!(!o.stdout.windows(15).any(|w| w == b"1.3.6.1.4.1.555"), "a private UID left in the output");
        assert!(!o.stdout.windows(3).any(|w| w == b"MKR"), "a name under the root left in the output");
        let v: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("parse");
        v["model"].clone()
    };
    let (a, b) = (redacted(&build(b"2.25.1")), redacted(&build(b"2.25.2")));
    let uid = |m: &Value, tag: &str| m[tag]["Value"][0].as_str().expect("valued").to_owned();
    let item = |m: &Value, n: usize, tag: &str| m["00081140"]["Value"][n][tag]["Value"][0].as_str().map(str::to_owned);
    let zero = item(&a, 0, "00081150").expect("the type 1 Referenced SOP Class UID stays valued");
    assert!(zero.starts_with("2.25.") && zero.len() > 10 && zero.bytes().all(|c| c.is_ascii_digit() || c == b'.'));
    assert_eq!(item(&b, 0, "00081150"), Some(zero.clone()), "the same UID for `0` in every file");
    assert_eq!(item(&a, 0, "00081155"), Some(zero.clone()), "the same UID for `0` whatever attribute holds it");
    assert_eq!(item(&a, 1, "00081150").as_deref(), Some("1.2.840.10008.5.1.4.1.1.2"), "a standard class UID kept");
    let class = uid(&a, "00080016");
    assert!(class.starts_with("2.25."), "{class}");
    assert_eq!(class, uid(&b, "00080016"));
    assert_eq!(uid(&a, "00020002"), class, "the file meta's class UID is the dataset's (PS3.10 7.1)");
    let related: Vec<&str> =
        a["0008001A"]["Value"].as_array().expect("multi-valued").iter().filter_map(Value::as_str).collect();
    assert_eq!(related.len(), 3);
    assert_eq!(related[0], "1.2.840.10008.5.1.4.1.1.88.22", "a standard UID of a multi-valued UI kept");
    assert!(related[1].starts_with("2.25.") && related[2].starts_with("2.25."), "{related:?}");
    // Keyless: removed (fail closed), never kept.
    let sh = crate::common::root().join("policy/safe-harbor.toml").to_string_lossy().into_owned();
    let o = run_stdin(&["redact", "--policy", &sh, "-"], &build(b"2.25.1"));
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!o.stdout.windows(15).any(|w| w == b"1.3.6.1.4.1.555"), "a private UID left without a key");
    assert!(!o.stdout.windows(3).any(|w| w == b"MKR"), "a name under the root left without a key");
    let v: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("parse");
    assert!(v["model"]["00081140"]["Value"][0].get("00081150").is_none(), "`0` kept without a key");
}

/// An implicit VR little endian element of defined length (value padded to an even length).
fn implicit(tag: u32, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((tag >> 16) as u16).to_le_bytes());
    out.extend_from_slice(&((tag & 0xFFFF) as u16).to_le_bytes());
    out.extend_from_slice(&((value.len() + value.len() % 2) as u32).to_le_bytes());
    out.extend_from_slice(value);
    if value.len() % 2 == 1 {
        out.push(b' ');
    }
    out
}

/// An implicit VR sequence of undefined length with undefined-length items (PS3.5 7.5.2).
fn implicit_sequence(tag: u32, items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((tag >> 16) as u16).to_le_bytes());
    out.extend_from_slice(&((tag & 0xFFFF) as u16).to_le_bytes());
    out.extend_from_slice(&[0xFF; 4]);
    for body in items {
        out.extend_from_slice(&[0xFE, 0xFF, 0x00, 0xE0, 0xFF, 0xFF, 0xFF, 0xFF]);
        out.extend_from_slice(body);
        out.extend_from_slice(&[0xFE, 0xFF, 0x0D, 0xE0, 0, 0, 0, 0]);
    }
    out.extend_from_slice(&[0xFE, 0xFF, 0xDD, 0xE0, 0, 0, 0, 0]);
    out
}

/// Regression (pydicom's nested_priv_SQ.dcm, meta_missing_tsyntax.dcm, as a synthetic file): a
/// dataset whose first element is a sequence of unknown VR and undefined length in implicit VR
/// in group 0001 (which PS3.5 7.8.1 forbids; dciodvfy stops reading there), nested, then 2
/// bytes of pixel data in a file without Rows or Columns. It is read as a sequence (PS3.5 7.5:
/// implicit VR, undefined length), written back as read when a policy keeps it, and the basic
/// profile removes it (no rule names it: group 0001 is neither standard nor private, so it is
/// removed, fail closed) and writes the pixel data as read, so the output holds
/// exactly the input's dataset without that sequence, plus the profile's two attributes. With
/// no transfer syntax in the meta, the dataset is read as implicit VR little endian all the same.
#[test]
fn private_sequence_of_unknown_vr_in_implicit_vr_is_read_written_and_removed_as_read() {
    let inner = implicit_sequence(0x0001_0001, &[implicit(0x0001_0001, b"MKR inner")]);
    let private = implicit_sequence(0x0001_0001, &[[inner, implicit(0x0001_0002, b"MKR outer")].concat()]);
    let pixels = implicit(0x7FE0_0010, &[0, 0]);
    let build = |syntax: Option<&[u8]>| {
        let mut meta = le(0x0002_0001, b"OB", b"\x00\x01");
        meta.extend(le(0x0002_0002, b"UI", b""));
        meta.extend(le(0x0002_0003, b"UI", b""));
        if let Some(s) = syntax {
            meta.extend(le(0x0002_0010, b"UI", s));
        }
        let mut out = vec![0u8; 128];
        out.extend_from_slice(b"DICM");
        out.extend(le(0x0002_0000, b"UL", &(meta.len() as u32).to_le_bytes()));
        out.extend(meta);
        out.extend_from_slice(&private);
        out.extend_from_slice(&pixels);
        out
    };
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let keeping = std::env::temp_dir().join(format!("phiward-dicom-test-{}-group-1.toml", std::process::id()));
    std::fs::write(
        &keeping,
        "[policy]\nname = \"keep-group-1\"\n[[dicom]]\nselect = \"(0001,xxxx)\"\naction = \"keep\"\nfree_text = true\n\
         [[dicom]]\nselect = \"(7FE0,0010)\"\naction = \"keep\"\n",
    )
    .expect("policy");
    let keeping = keeping.to_string_lossy().into_owned();
    for syntax in [Some(&b"1.2.840.10008.1.2"[..]), None] {
        let file = build(syntax);
        let v: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &file).stdout).expect("parse");
        let m = &v["model"];
        assert_eq!(m["00010001"]["vr"], "SQ", "{syntax:?}: read as a sequence");
        assert_eq!(m["00010001"]["Value"][0]["00010001"]["vr"], "SQ", "{syntax:?}: the nested one too");
        // Kept: written as read (implicit VR, undefined lengths), before the profile's elements.
        let o = run_stdin(&["redact", "--policy", &keeping, "-"], &file);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            o.stdout.windows(private.len()).any(|w| w == &private[..]),
            "{syntax:?}: the private sequence not written as read"
        );
        assert!(o.stdout.ends_with(&pixels), "{syntax:?}: pixel data not written as read");
        // The basic profile: removed; the rest as read.
        let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &file);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!o.stdout.windows(3).any(|w| w == b"MKR"), "{syntax:?}: a private value left");
        assert!(o.stdout.ends_with(&pixels), "{syntax:?}: pixel data not written as read");
        let v: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("parse");
        let tags: Vec<&String> =
            v["model"].as_object().expect("model").keys().filter(|t| !t.starts_with("0002")).collect();
        assert_eq!(tags, ["00120062", "00120063", "00120064", "7FE00010"], "{syntax:?}");
    }
    std::fs::remove_file(&keeping).expect("policy removed");
}

/// The file meta group of a Part 10 file written by phiward: (tag, value) of each element after
/// the group length, which must count exactly their bytes (the next element is not group 0002).
fn meta_elements(file: &[u8]) -> Vec<(u32, Vec<u8>)> {
    assert_eq!(&file[128..132], b"DICM");
    assert_eq!(&file[132..140], b"\x02\x00\x00\x00UL\x04\x00", "the group length first");
    let len = u32::from_le_bytes(file[140..144].try_into().expect("4 bytes")) as usize;
    let end = 144 + len;
    let mut at = 144;
    let mut out = Vec::new();
    while at < end {
        let tag = (u32::from(u16::from_le_bytes([file[at], file[at + 1]])) << 16)
            | u32::from(u16::from_le_bytes([file[at + 2], file[at + 3]]));
        assert_eq!(tag >> 16, 2, "a meta element");
        let vr = &file[at + 4..at + 6];
        let (head, n) = if matches!(vr, b"OB" | b"UN" | b"SQ" | b"UT") {
            (12, u32::from_le_bytes(file[at + 8..at + 12].try_into().expect("4 bytes")) as usize)
        } else {
            (8, usize::from(u16::from_le_bytes([file[at + 6], file[at + 7]])))
        };
        out.push((tag, file[at + head..at + head + n].to_vec()));
        at += head + n;
    }
    assert_eq!(at, end, "the group length counts the group's bytes");
    assert_ne!(&file[end..end + 2], b"\x02\x00", "no group 0002 element past the group length");
    out
}

fn meta_value(meta: &[(u32, Vec<u8>)], tag: u32) -> Option<&[u8]> {
    meta.iter().find(|m| m.0 == tag).map(|m| {
        let v = &m.1[..];
        v.strip_suffix(b"\0").or_else(|| v.strip_suffix(b" ")).unwrap_or(v)
    })
}

/// phiward's Implementation Class UID (docs/dicom.md).
const PHIWARD_CLASS_UID: &[u8] = b"2.25.33855971498493271503042817076323841679";

/// A synthetic Part 10 file whose meta lacks the group length, the File Meta Information
/// Version and the Transfer Syntax UID, and holds the input's implementation names, AE titles
/// and private information (markers where the VR allows text).
fn meta_gaps_file(dataset: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 128];
    out.extend_from_slice(b"DICM");
    out.extend(le(0x0002_0002, b"UI", b"1.2.840.10008.5.1.4.1.1.2"));
    out.extend(le(0x0002_0003, b"UI", b"2.25.1001"));
    out.extend(le(0x0002_0012, b"UI", b"9.9.9"));
    out.extend(le(0x0002_0013, b"SH", b"MKRVERSION"));
    out.extend(le(0x0002_0016, b"AE", b"MKRSOURCE"));
    out.extend(le(0x0002_0017, b"AE", b"MKRSENDING"));
    out.extend(le(0x0002_0018, b"AE", b"MKRRECEIVE"));
    out.extend(le(0x0002_0100, b"UI", b"9.9.9.1"));
    out.extend(le(0x0002_0102, b"OB", b"MKRPRIVATE"));
    out.extend_from_slice(dataset);
    out
}

fn ct_dataset() -> Vec<u8> {
    let mut d = le(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.2");
    d.extend(le(0x0008_0018, b"UI", b"2.25.1001"));
    d.extend(le(0x0010_0010, b"PN", b"MKRNAME"));
    d
}

/// Regression (pydicom's meta_missing_tsyntax.dcm and the like): redact wrote the input's file
/// meta as read, so a meta without Transfer Syntax UID (or File Meta Information Version, or
/// group length) gave an output without it. The output's meta is now rebuilt per PS3.10 Table
/// 7.1-1: group length computed, version 00\01, the SOP Class and Instance UIDs as the dataset's
/// (after de-identification), the transfer syntax the dataset is written in, phiward's
/// implementation class UID and version name; AE titles and private information removed unless
/// a rule naming that tag keeps them (the private information only with its creator).
#[test]
fn redact_writes_a_valid_file_meta() {
    let file = meta_gaps_file(&ct_dataset());
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let r = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &file);
    assert_eq!(code(&r), 0, "{}", String::from_utf8_lossy(&r.stderr));
    assert!(!r.stdout.windows(3).any(|w| w == b"MKR"), "a marker left");
    let meta = meta_elements(&r.stdout);
    let tags: Vec<u32> = meta.iter().map(|m| m.0).collect();
    assert_eq!(tags, [0x0002_0001, 0x0002_0002, 0x0002_0003, 0x0002_0010, 0x0002_0012, 0x0002_0013]);
    assert_eq!(meta_value(&meta, 0x0002_0001), Some(&b"\x00\x01"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0002), Some(&b"1.2.840.10008.5.1.4.1.1.2"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0010), Some(&b"1.2.840.10008.1.2.1"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0012), Some(PHIWARD_CLASS_UID));
    assert!(meta_value(&meta, 0x0002_0013).is_some_and(|v| v.starts_with(b"PHIWARD_") && v.len() <= 16));
    let m: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &r.stdout).stdout).expect("parse");
    let instance = m["model"]["00080018"]["Value"][0].as_str().expect("(0008,0018) written");
    assert_ne!(instance, "2.25.1001", "the keyed hash");
    assert_eq!(meta_value(&meta, 0x0002_0003), Some(instance.as_bytes()), "(0002,0003) as (0008,0018) is written");
    let v = findings(&run_stdin(&["validate", "--json", "-"], &r.stdout));
    assert!(!v.iter().any(|(c, _)| c.starts_with("DICOM_META")), "{v:?}");

    // A rule naming the tag keeps an AE title (free text: `free_text`); a VR rule does not; the
    // private information creator without its information (required with it) is removed.
    let policy = std::env::temp_dir().join(format!("phiward-dicom-test-{}-meta.toml", std::process::id()));
    let rules = |extra: &str| {
        format!(
            "[policy]\nname = \"meta\"\n\
             [[dicom]]\nselect = \"(0002,0016)\"\naction = \"keep\"\nfree_text = true\n\
             [[dicom]]\nselect = \"(0002,0017)\"\naction = \"replace\"\nvalue = \"SENDER\"\n\
             [[dicom]]\nselect = \"(0002,0100)\"\naction = \"replace\"\nvalue = \"2.25.7\"\n{extra}\
             [[dicom]]\nselect = \"@AE\"\naction = \"keep\"\nfree_text = true\n\
             [[dicom]]\nselect = \"@UI\"\naction = \"keep\"\n"
        )
    };
    std::fs::write(&policy, rules("")).expect("policy");
    let p = policy.to_string_lossy().into_owned();
    let r = run_stdin(&["redact", "--policy", &p, "-"], &file);
    assert_eq!(code(&r), 0, "{}", String::from_utf8_lossy(&r.stderr));
    let meta = meta_elements(&r.stdout);
    assert_eq!(meta_value(&meta, 0x0002_0016), Some(&b"MKRSOURCE"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0017), Some(&b"SENDER"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0018), None, "only a rule naming the tag keeps it");
    assert_eq!(meta_value(&meta, 0x0002_0100), None, "the creator without its information");
    assert_eq!(meta_value(&meta, 0x0002_0102), None);
    // With the information kept too: both written, in tag order.
    std::fs::write(&policy, rules("[[dicom]]\nselect = \"(0002,0102)\"\naction = \"keep\"\n")).expect("policy");
    let r = run_stdin(&["redact", "--policy", &p, "-"], &file);
    assert_eq!(code(&r), 0, "{}", String::from_utf8_lossy(&r.stderr));
    let meta = meta_elements(&r.stdout);
    assert_eq!(meta_value(&meta, 0x0002_0100), Some(&b"2.25.7"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0102), Some(&b"MKRPRIVATE"[..]));
    assert!(meta.windows(2).all(|w| w[0].0 < w[1].0), "ascending tags");
    std::fs::remove_file(&policy).expect("policy removed");
}

/// The transfer syntax written is the one the dataset is in: a meta naming explicit VR over an
/// implicit VR dataset (written in implicit VR) names implicit VR little endian in redact's and
/// fmt's output, and a file without meta gets one naming the encoding found.
#[test]
fn the_written_transfer_syntax_is_the_datasets() {
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let mismatch = path("invalid/encoding_mismatch.dcm");
    for args in [vec!["redact", "--policy", &basic, "--key-file", &key, &mismatch], vec!["fmt", &mismatch]] {
        let o = run(&args);
        assert_eq!(code(&o), 0, "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let meta = meta_elements(&o.stdout);
        assert_eq!(meta_value(&meta, 0x0002_0010), Some(&b"1.2.840.10008.1.2"[..]), "{args:?}");
        let v = findings(&run_stdin(&["validate", "--json", "-"], &o.stdout));
        assert!(!v.iter().any(|(c, _)| c == "DICOM_ENCODING_MISMATCH"), "{args:?}: {v:?}");
    }
    let no_meta = path("invalid/meta_missing.dcm");
    let o = run(&["fmt", &no_meta]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let meta = meta_elements(&o.stdout);
    let tags: Vec<u32> = meta.iter().map(|m| m.0).collect();
    assert_eq!(tags, [0x0002_0001, 0x0002_0002, 0x0002_0003, 0x0002_0010, 0x0002_0012, 0x0002_0013]);
    assert_eq!(meta_value(&meta, 0x0002_0012), Some(PHIWARD_CLASS_UID));
}

/// fmt's canonical form has a valid file meta where the file gives one: the input's meta
/// elements as read, the group length computed, and the type 1 elements it lacks added (the
/// version, the transfer syntax the dataset is written in, the SOP UIDs from the dataset,
/// phiward's implementation class UID when the input names none); a fixed point, and
/// `fmt --check` says the input was not canonical.
#[test]
fn fmt_completes_the_file_meta_and_stays_a_fixed_point() {
    let file = meta_gaps_file(&ct_dataset());
    let o = run_stdin(&["fmt", "-"], &file);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let meta = meta_elements(&o.stdout);
    let tags: Vec<u32> = meta.iter().map(|m| m.0).collect();
    assert_eq!(
        tags,
        [
            0x0002_0001,
            0x0002_0002,
            0x0002_0003,
            0x0002_0010,
            0x0002_0012,
            0x0002_0013,
            0x0002_0016,
            0x0002_0017,
            0x0002_0018,
            0x0002_0100,
            0x0002_0102
        ]
    );
    assert_eq!(meta_value(&meta, 0x0002_0001), Some(&b"\x00\x01"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0010), Some(&b"1.2.840.10008.1.2.1"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0012), Some(&b"9.9.9"[..]), "the input's, as read");
    assert_eq!(meta_value(&meta, 0x0002_0013), Some(&b"MKRVERSION"[..]));
    assert_eq!(code(&run_stdin(&["fmt", "--check", "-"], &file)), 1);
    assert_eq!(code(&run_stdin(&["fmt", "--check", "-"], &o.stdout)), 0);
    assert_eq!(run_stdin(&["fmt", "-"], &o.stdout).stdout, o.stdout, "a fixed point");
    // Without the implementation class UID and the SOP UIDs in the meta: the dataset's, and
    // phiward's name.
    let mut bare = vec![0u8; 128];
    bare.extend_from_slice(b"DICM");
    bare.extend(le(0x0002_0010, b"UI", b"1.2.840.10008.1.2.1"));
    bare.extend(ct_dataset());
    let o = run_stdin(&["fmt", "-"], &bare);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let meta = meta_elements(&o.stdout);
    assert_eq!(meta_value(&meta, 0x0002_0002), Some(&b"1.2.840.10008.5.1.4.1.1.2"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0003), Some(&b"2.25.1001"[..]));
    assert_eq!(meta_value(&meta, 0x0002_0012), Some(PHIWARD_CLASS_UID));
    assert!(meta_value(&meta, 0x0002_0013).is_some_and(|v| v.starts_with(b"PHIWARD_")));
    assert_eq!(run_stdin(&["fmt", "-"], &o.stdout).stdout, o.stdout, "a fixed point");
    let v = findings(&run_stdin(&["validate", "--json", "-"], &o.stdout));
    assert!(!v.iter().any(|(c, _)| c.starts_with("DICOM_META")), "{v:?}");
}

/// `parse` decodes text with the Specific Character Set (PS3.5 6.1.2.5): ISO 2022 escapes
/// switch JIS X 0208 into G0 and KS X 1001 into G1 within a PN, the initial sets come back at
/// `^`, `=` and `\`; an item's own (0008,0005) holds for that item only; an unknown escape is a
/// replacement character, and the validator's findings carry no value. Invented names.
#[test]
fn iso_2022_text_is_decoded_per_dataset() {
    let mut item = le(0x0008_0005, b"CS", b"ISO 2022 IR 6\\ISO 2022 IR 149");
    item.extend(le(0x0010_0010, b"PN", b"Hong^Gildong=\x1b$)C\xc8\xab^\x1b$)C\xb1\xe6\xb5\xbf"));
    let mut ds = le(0x0008_0005, b"CS", b"\\ISO 2022 IR 87");
    ds.extend(le(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.7"));
    ds.extend(le(0x0008_0018, b"UI", b"2.25.78"));
    ds.extend(le(0x0008_1030, b"LO", b"A\x1b$)ZB\\\x1b$B;3\x1b(B"));
    ds.extend(le(0x0010_0010, b"PN", b"Yamada^Tarou=\x1b$B;3ED\x1b(B^\x1b$BB@O:\x1b(B"));
    ds.extend(le(0x0040_0275, b"SQ", &le_item(&item)));
    let file = le_file(b"1.2.840.10008.5.1.4.1.1.7", b"2.25.78", &ds);
    let o = run_stdin(&["parse", "--json", "-"], &file);
    let v: Value = serde_json::from_slice(&o.stdout).expect("parse JSON");
    let m = &v["model"];
    assert_eq!(m["00100010"]["Value"][0]["Alphabetic"], "Yamada^Tarou");
    assert_eq!(m["00100010"]["Value"][0]["Ideographic"], "山田^太郎");
    assert_eq!(m["00081030"]["Value"][0], "A\u{FFFD}B");
    assert_eq!(m["00081030"]["Value"][1], "山");
    let pn = &m["00400275"]["Value"][0]["00100010"]["Value"][0];
    assert_eq!(pn["Alphabetic"], "Hong^Gildong");
    assert_eq!(pn["Ideographic"], "홍^길동");
    let o = run_stdin(&["validate", "--json", "-"], &file);
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in ["Yamada", "Tarou", "Hong", "Gildong", "山", "홍"] {
        assert!(!out.contains(needle) && !String::from_utf8_lossy(&o.stderr).contains(needle), "a value in a finding");
    }
}

/// An image dataset of `sop` (explicit VR little endian): Modality and Burned In Annotation
/// (0028,0301) when given, a marker in Patient Name, a previous De-identification Method Code
/// Sequence (0012,0064) with a marker, and pixel data.
fn image_file(sop: &[u8], modality: Option<&[u8]>, burned_in: Option<&[u8]>) -> Vec<u8> {
    let mut ds = le(0x0008_0016, b"UI", sop);
    ds.extend(le(0x0008_0018, b"UI", b"2.25.88"));
    if let Some(m) = modality {
        ds.extend(le(0x0008_0060, b"CS", m));
    }
    ds.extend(le(0x0010_0010, b"PN", b"MKR1X^Burned"));
    let mut old = le(0x0008_0100, b"SH", b"113100");
    old.extend(le(0x0008_0102, b"SH", b"DCM"));
    old.extend(le(0x0008_0104, b"LO", b"MKR2X"));
    ds.extend(le(0x0012_0064, b"SQ", &le_item(&old)));
    for (tag, v) in [(0x0028_0002u32, 1u16), (0x0028_0010, 2), (0x0028_0011, 2), (0x0028_0100, 8)] {
        ds.extend(le(tag, b"US", &v.to_le_bytes()));
    }
    if let Some(b) = burned_in {
        ds.extend(le(0x0028_0301, b"CS", b));
    }
    ds.extend(le(0x7FE0_0010, b"OB", &[0, 1, 2, 3]));
    le_file(sop, b"2.25.88", &ds)
}

const US_IMAGE: &[u8] = b"1.2.840.10008.5.1.4.1.1.6.1";
const CT_IMAGE: &[u8] = b"1.2.840.10008.5.1.4.1.1.2";
const SC_IMAGE: &[u8] = b"1.2.840.10008.5.1.4.1.1.7";

/// Burned-in annotation fails closed (PS3.15 E.3.1: pixel data is not cleaned): (0028,0301)
/// YES is refused whatever the modality, absent or empty on a modality or SOP class that burns
/// text in (US, a secondary capture without Modality) is refused, NO is written, and absent on
/// CT is written. A refusal writes nothing, exits 65 with `DICOM_BURNED_IN_ANNOTATION` and no
/// value on stderr.
#[test]
fn burned_in_annotation_fails_closed() {
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let cases: [(&str, Vec<u8>, bool); 7] = [
        ("YES on CT", image_file(CT_IMAGE, Some(b"CT"), Some(b"YES")), false),
        ("absent on US", image_file(US_IMAGE, Some(b"US"), None), false),
        ("empty on US", image_file(US_IMAGE, Some(b"US"), Some(b"")), false),
        ("absent on a secondary capture without Modality", image_file(SC_IMAGE, None, None), false),
        ("absent on XA named by Modality only", image_file(CT_IMAGE, Some(b"XA"), None), false),
        ("NO on US", image_file(US_IMAGE, Some(b"US"), Some(b"NO")), true),
        ("absent on CT", image_file(CT_IMAGE, Some(b"CT"), None), true),
    ];
    for (what, file, written) in cases {
        let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &file);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("MKR"), "{what}: a value on stderr");
        if written {
            assert_eq!(code(&o), 0, "{what}: {err}");
            assert!(!o.stdout.windows(3).any(|w| w == b"MKR"), "{what}: a marker left in the output");
        } else {
            assert_eq!(code(&o), 65, "{what}: {err}");
            assert!(o.stdout.is_empty(), "{what}: something written");
            assert!(err.contains("DICOM_BURNED_IN_ANNOTATION"), "{what}: {err}");
        }
    }
}

/// In a directory, a refused file is listed with its code and the others are written.
#[test]
fn a_refused_file_never_loses_the_others() {
    let dir = std::env::temp_dir().join(format!("phiward-dicom-burned-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("in")).expect("input folder");
    std::fs::write(dir.join("in/a_us.dcm"), image_file(US_IMAGE, Some(b"US"), None)).expect("write");
    std::fs::write(dir.join("in/b_ct.dcm"), image_file(CT_IMAGE, Some(b"CT"), None)).expect("write");
    std::fs::write(dir.join("in/c_us.dcm"), image_file(US_IMAGE, Some(b"US"), Some(b"NO"))).expect("write");
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let (input, out) = (dir.join("in").to_string_lossy().into_owned(), dir.join("out").to_string_lossy().into_owned());
    let o = run(&["redact", "--policy", &basic, "--key-file", &key, "--out-dir", &out, &input]);
    let lines = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(code(&o), 65, "{lines}");
    assert!(lines.contains("a_us.dcm: not written: DICOM_BURNED_IN_ANNOTATION"), "{lines}");
    assert!(!dir.join("out/a_us.dcm").exists(), "the refused file was written");
    for name in ["b_ct.dcm", "c_us.dcm"] {
        assert!(lines.contains(&format!("{name}: redacted\n")), "{lines}");
        assert!(dir.join("out").join(name).is_file(), "{name} not written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A policy that accepts the residual risk writes the file, pixel data as it is, and the
/// manifest counts it and names the risk; an unknown value is a policy error.
#[test]
fn accepted_burned_in_risk_is_in_the_manifest() {
    let dir = std::env::temp_dir().join(format!("phiward-dicom-accept-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("folder");
    let text = std::fs::read_to_string(crate::common::root().join("policy/dicom-basic.toml")).expect("policy");
    assert!(text.contains("dicom_burned_in_annotation = \"refuse\""), "the shipped policy refuses");
    let accepting = dir.join("accept.toml");
    let setting = |v: &str| {
        text.replace("dicom_burned_in_annotation = \"refuse\"", &format!("dicom_burned_in_annotation = \"{v}\""))
    };
    std::fs::write(&accepting, setting("accept-residual-risk")).expect("policy");
    let (p, m) = (accepting.to_string_lossy().into_owned(), dir.join("m.json").to_string_lossy().into_owned());
    let key = key_file();
    let file = dir.join("us.dcm");
    std::fs::write(&file, image_file(US_IMAGE, Some(b"US"), None)).expect("write");
    let o = run(&["redact", "--policy", &p, "--key-file", &key, "--manifest", &m, &file.to_string_lossy()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!o.stdout.windows(3).any(|w| w == b"MKR"), "a marker left in the output");
    let manifest: Value = serde_json::from_slice(&std::fs::read(&m).expect("manifest")).expect("manifest JSON");
    assert_eq!(manifest["burnedInAnnotationAccepted"], 1, "{manifest}");
    let risks = manifest["residualRisks"].to_string();
    assert!(risks.contains("burned-in text"), "{risks}");
    // A file not at risk under the same policy: nothing accepted, no such risk named.
    let ct = dir.join("ct.dcm");
    std::fs::write(&ct, image_file(CT_IMAGE, Some(b"CT"), None)).expect("write");
    let o = run(&["redact", "--policy", &p, "--key-file", &key, "--manifest", &m, &ct.to_string_lossy()]);
    assert_eq!(code(&o), 0);
    let manifest: Value = serde_json::from_slice(&std::fs::read(&m).expect("manifest")).expect("manifest JSON");
    assert_eq!(manifest["burnedInAnnotationAccepted"], 0);
    assert!(!manifest["residualRisks"].to_string().contains("burned-in text"));
    // An unknown value does not load.
    std::fs::write(&accepting, setting("accept")).expect("policy");
    let o = run(&["redact", "--policy", &p, "--key-file", &key, &file.to_string_lossy()]);
    assert_ne!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("POLICY_INVALID_VALUE"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// (0012,0062) YES, (0012,0063) naming the policy, and (0012,0064) one valid code item (PS3.3
/// Table 8.8-1a) of PS3.16 CID 7050 for the Basic Profile, which the shipped policy declares
/// (no option): the input's own method sequence is not kept.
#[test]
fn deidentification_method_code_sequence_names_the_profile() {
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let o = run_stdin(
        &["redact", "--policy", &basic, "--key-file", &key, "-"],
        &image_file(US_IMAGE, Some(b"US"), Some(b"NO")),
    );
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&run_stdin(&["parse", "--json", "-"], &o.stdout).stdout).expect("parse");
    let model = &v["model"];
    assert_eq!(model["00120062"]["Value"][0], "YES");
    assert_eq!(model["00120063"]["Value"][0], "phiward dicom-basic");
    let items = model["00120064"]["Value"].as_array().expect("(0012,0064) written");
    assert_eq!(items.len(), 1, "{items:?}");
    let at = |tag: &str| items[0][tag]["Value"][0].as_str().expect("valued").to_owned();
    assert_eq!(
        (at("00080100"), at("00080102"), at("00080104")),
        ("113100".into(), "DCM".into(), "Basic Application Confidentiality Profile".into())
    );
    assert_eq!(items[0].as_object().map(|o| o.len()), Some(3), "only the code item's three attributes");
    let vrs: Vec<&str> =
        ["00080100", "00080102", "00080104"].iter().map(|t| items[0][t]["vr"].as_str().unwrap_or("")).collect();
    assert_eq!(vrs, ["SH", "SH", "LO"]);
    // validate finds nothing new of the sequence (a valid code item).
    let val = run_stdin(&["validate", "--json", "-"], &o.stdout);
    assert!(!String::from_utf8_lossy(&val.stdout).contains("(0012,0064)"), "{}", String::from_utf8_lossy(&val.stdout));
}

/// Encapsulated pixel data under a transfer syntax phiward does not know: the compression is
/// unknown, so no output could say how its pixel data is encoded. redact refuses it with its own
/// code (exit 65, nothing written), not a limit's; fmt and validate still read it (the dataset
/// is read as explicit VR little endian, with a warning).
#[test]
fn encapsulated_pixel_data_of_an_unknown_syntax_is_refused_with_its_code() {
    let mut file = std::fs::read(fixture("dicom/valid/encapsulated_jpeg.dcm")).expect("fixture");
    let known = b"1.2.840.10008.1.2.4.70";
    let at = file.windows(known.len()).position(|w| w == known).expect("the fixture's transfer syntax");
    // The same length: the meta's group length stays right.
    file[at..at + known.len()].copy_from_slice(b"1.2.840.99999.1.2.4.70");
    let key = key_file();
    let basic = crate::common::root().join("policy/dicom-basic.toml").to_string_lossy().into_owned();
    let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 65, "{err}");
    assert!(o.stdout.is_empty(), "something written");
    assert!(err.contains("DICOM_PIXEL_ENCODING_UNKNOWN"), "{err}");
    assert!(!err.contains("CLI_INPUT_TOO_LARGE"), "{err}");
    let v = run_stdin(&["validate", "--json", "-"], &file);
    let out = String::from_utf8_lossy(&v.stdout);
    assert!(out.contains("DICOM_TRANSFER_SYNTAX_UNKNOWN"), "{out}");
    // The known syntax is written as before.
    let original = std::fs::read(fixture("dicom/valid/encapsulated_jpeg.dcm")).expect("fixture");
    let o = run_stdin(&["redact", "--policy", &basic, "--key-file", &key, "-"], &original);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!o.stdout.is_empty());
}

/// An item's own Specific Character Set (PS3.5 7.5.3) counts the characters of its values: an
/// SH of 10 three-byte UTF-8 characters (30 bytes) in an item declaring ISO_IR 192, in a file
/// whose top level declares none, fits the 16 characters of an SH; 20 do not; and without the
/// item's declaration the bytes are characters of the default repertoire.
#[test]
fn an_items_own_character_set_counts_its_characters() {
    let file = |own: Option<&[u8]>, n: usize| {
        let mut item = Vec::new();
        if let Some(cs) = own {
            item.extend(le(0x0008_0005, b"CS", cs));
        }
        item.extend(le(0x0040_0009, b"SH", "\u{5C71}".repeat(n).as_bytes()));
        let mut ds = le(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.2");
        ds.extend(le(0x0008_0018, b"UI", b"1.2.3.4"));
        ds.extend(le(0x0040_0275, b"SQ", &le_item(&item)));
        le_file(b"1.2.840.10008.5.1.4.1.1.2", b"1.2.3.4", &ds)
    };
    let too_long = |bytes: Vec<u8>| {
        let o = run_stdin(&["validate", "--json", "-"], &bytes);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(out.contains("\"findings\"") || out.contains("\"code\""), "{out}");
        out.contains("DICOM_VALUE_TOO_LONG")
    };
    assert!(!too_long(file(Some(b"ISO_IR 192"), 10)), "10 characters fit an SH");
    assert!(too_long(file(Some(b"ISO_IR 192"), 20)), "20 characters do not");
    assert!(too_long(file(None, 10)), "30 bytes of the default repertoire are 30 characters");
}

/// `(code, location)` of `validate --json` on `file` (from standard input).
fn validate_bytes(file: &[u8]) -> BTreeSet<(String, String)> {
    let o = run_stdin(&["validate", "--json", "-"], file);
    assert!(matches!(code(&o), 0 | 1), "{}", String::from_utf8_lossy(&o.stderr));
    findings(&o)
}

/// The codes found at a location starting with `at`.
fn codes_at(found: &BTreeSet<(String, String)>, at: &str) -> Vec<String> {
    found.iter().filter(|(_, l)| l.starts_with(at)).map(|(c, _)| c.clone()).collect()
}

/// The attributes of a sequence's items (PS3.3 macros, as PyPI dicom-standard flattens them into
/// each module): General Image's Source Image Sequence (0008,2112) holds Image SOP Instance
/// Reference Macro items (PS3.3 Table 10-3), whose Referenced SOP Class and Instance UIDs are
/// type 1 (dciodvfy's "module" reason on pydicom's SC_rgb_small_odd). An item without one is
/// `DICOM_ATTRIBUTE_MISSING` at the item's path, an empty one `DICOM_ATTRIBUTE_EMPTY`, a whole
/// item nothing; a content item (Acquisition Context Sequence (0040,0555): its attributes depend
/// on its Value Type, which the package's rows do not say) is not checked.
#[test]
fn sequence_items_are_checked_against_their_macro() {
    let file = |items: &[Vec<u8>]| {
        let mut ds = le(0x0008_0016, b"UI", CT_IMAGE);
        ds.extend(le(0x0008_0018, b"UI", b"2.25.1001"));
        let body: Vec<u8> = items.iter().flat_map(|i| le_item(i)).collect();
        ds.extend(le(0x0008_2112, b"SQ", &body));
        ds.extend(le(0x0010_0010, b"PN", b"MKRNAME"));
        le_file(CT_IMAGE, b"2.25.1001", &ds)
    };
    let whole = {
        let mut i = le(0x0008_1150, b"UI", CT_IMAGE);
        i.extend(le(0x0008_1155, b"UI", b"2.25.7"));
        i
    };
    let found = validate_bytes(&file(std::slice::from_ref(&whole)));
    assert!(codes_at(&found, "(0008,2112)").is_empty(), "{found:?}");
    // The second item lacks the class UID; a third has it empty.
    let no_class = le(0x0008_1155, b"UI", b"2.25.8");
    let mut empty_class = le(0x0008_1150, b"UI", b"");
    empty_class.extend(le(0x0008_1155, b"UI", b"2.25.9"));
    let found = validate_bytes(&file(&[whole, no_class, empty_class]));
    assert_eq!(codes_at(&found, "(0008,2112)[1]."), Vec::<String>::new(), "{found:?}");
    assert_eq!(codes_at(&found, "(0008,2112)[2].(0008,1150)"), vec!["DICOM_ATTRIBUTE_MISSING"], "{found:?}");
    assert_eq!(codes_at(&found, "(0008,2112)[3].(0008,1150)"), vec!["DICOM_ATTRIBUTE_EMPTY"], "{found:?}");
    assert!(codes_at(&found, "(0008,2112)[2].(0008,1155)").is_empty(), "{found:?}");
    // A content item of Enhanced CT's Acquisition Context Sequence holding only a text value:
    // not checked (no finding inside it), though the package's rows list type 1 attributes of
    // every value type's macro in it.
    let mut ds = le(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.2.1");
    ds.extend(le(0x0008_0018, b"UI", b"2.25.1002"));
    ds.extend(le(0x0040_0555, b"SQ", &le_item(&le(0x0040_A160, b"UT", b"text"))));
    let found = validate_bytes(&le_file(b"1.2.840.10008.5.1.4.1.1.2.1", b"2.25.1002", &ds));
    assert!(found.iter().any(|(c, l)| c == "DICOM_ATTRIBUTE_MISSING" && !l.contains('[')), "{found:?}");
    assert!(codes_at(&found, "(0040,0555)").is_empty(), "{found:?}");
}

/// Encapsulated pixel data of `fragments` under the file's transfer syntax: an empty basic
/// offset table, then the fragments, then the sequence delimiter.
fn encapsulated(fragments: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0xE0, 0x7F, 0x10, 0x00, b'O', b'B', 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
    out.extend(le_item(&[]));
    for f in fragments {
        out.extend(le_item(f));
    }
    out.extend_from_slice(&[0xFE, 0xFF, 0xDD, 0xE0, 0, 0, 0, 0]);
    out
}

/// An SC image whose pixel data (native, or encapsulated under `ts`) has `samples` Samples per
/// Pixel and Photometric Interpretation `pi`.
fn photometric_file(ts: &[u8], samples: u16, pi: &[u8]) -> Vec<u8> {
    let mut ds = le(0x0008_0016, b"UI", SC_IMAGE);
    ds.extend(le(0x0008_0018, b"UI", b"2.25.91"));
    ds.extend(le(0x0028_0002, b"US", &samples.to_le_bytes()));
    ds.extend(le(0x0028_0004, b"CS", pi));
    for (tag, v) in [(0x0028_0010u32, 2u16), (0x0028_0011, 2), (0x0028_0100, 8)] {
        ds.extend(le(tag, b"US", &v.to_le_bytes()));
    }
    if ts == b"1.2.840.10008.1.2.1" {
        ds.extend(le(0x7FE0_0010, b"OB", &vec![0; 4 * usize::from(samples)]));
    } else {
        ds.extend(encapsulated(&[b"\xff\xd8\x00\x00\xff\xd9"]));
    }
    le_file_in(SC_IMAGE, b"2.25.91", ts, &ds)
}

/// Photometric Interpretation against the pixel data's encoding (PS3.5 Section 8.2 and its
/// Tables 8.2.1-1, 8.2.1-2, 8.2.2-1, 8.2.3-1, 8.2.4-1): JPEG Baseline's colour is YBR_FULL_422 or
/// RGB (YBR_FULL is dciodvfy's "JPEG transfer syntax is required to have ... YBR_FULL422" on
/// pydicom's SC_rgb_dcmtk files); RLE and JPEG lossless YBR_FULL or RGB; JPEG 2000 lossless
/// YBR_RCT, RGB or YBR_FULL (not YBR_ICT, the irreversible transform); native pixel data neither
/// YBR_RCT, YBR_ICT nor YBR_PARTIAL_420. A term that is not one of PS3.3 C.7.6.3.1.2's is not
/// constrained.
#[test]
fn photometric_interpretation_follows_the_transfer_syntax() {
    let baseline: &[u8] = b"1.2.840.10008.1.2.4.50";
    let rle: &[u8] = b"1.2.840.10008.1.2.5";
    let j2k_lossless: &[u8] = b"1.2.840.10008.1.2.4.90";
    let j2k: &[u8] = b"1.2.840.10008.1.2.4.91";
    let native: &[u8] = b"1.2.840.10008.1.2.1";
    let cases: &[(&[u8], u16, &[u8], bool)] = &[
        (baseline, 3, b"YBR_FULL_422", true),
        (baseline, 3, b"RGB ", true),
        (baseline, 3, b"YBR_FULL", false),
        (baseline, 1, b"MONOCHROME2 ", true),
        (baseline, 1, b"PALETTE COLOR ", false),
        (rle, 3, b"YBR_FULL", true),
        (rle, 3, b"YBR_FULL_422", false),
        (j2k_lossless, 3, b"YBR_RCT ", true),
        (j2k_lossless, 3, b"YBR_ICT ", false),
        (j2k, 3, b"YBR_ICT ", true),
        (native, 3, b"RGB ", true),
        (native, 3, b"YBR_FULL_422", true),
        (native, 3, b"YBR_RCT ", false),
        (native, 3, b"YBR_PARTIAL_420 ", false),
        (baseline, 3, b"LOCAL_TERM", true),
    ];
    for &(ts, samples, pi, ok) in cases {
        let found = validate_bytes(&photometric_file(ts, samples, pi));
        let at = codes_at(&found, "(0028,0004)");
        let name = String::from_utf8_lossy(pi);
        if ok {
            assert!(!at.contains(&"DICOM_PHOTOMETRIC_INVALID".to_owned()), "{name}: {found:?}");
        } else {
            assert_eq!(at, vec!["DICOM_PHOTOMETRIC_INVALID"], "{name}: {found:?}");
        }
    }
}

/// Number of Frames (0028,0008) over 1 in a single-frame IOD: no module of the CT Image or
/// Secondary Capture Image IOD (PS3.3 A.3, A.8.1) has the attribute, which the Multi-frame Module
/// (C.7.6.6) defines (dciodvfy's "CheckSingleFramePseudo" on pydicom's SC_rgb_rle_2frame files);
/// 1 is not reported, nor 2 in the Ultrasound Multi-frame Image IOD (A.7), which has that module.
#[test]
fn frames_beyond_one_need_a_multi_frame_iod() {
    let file = |sop: &[u8], frames: &[u8]| {
        let mut ds = le(0x0008_0016, b"UI", sop);
        ds.extend(le(0x0008_0018, b"UI", b"2.25.92"));
        ds.extend(le(0x0028_0008, b"IS", frames));
        le_file(sop, b"2.25.92", &ds)
    };
    let multi = |sop: &[u8], frames: &[u8]| codes_at(&validate_bytes(&file(sop, frames)), "(0028,0008)");
    assert_eq!(multi(CT_IMAGE, b"2"), vec!["DICOM_MULTI_FRAME_INVALID"]);
    assert_eq!(multi(SC_IMAGE, b"12"), vec!["DICOM_MULTI_FRAME_INVALID"]);
    assert!(multi(CT_IMAGE, b"1").is_empty());
    assert!(multi(b"1.2.840.10008.5.1.4.1.1.3.1", b"2").is_empty());
}

/// A DICOMDIR's Directory Record Type (0004,1430) against the Basic Directory IOD's enumerated
/// values (PS3.3 F.3.2.2, Table F.3-3; written in the generator): dciodvfy's "Unrecognized
/// enumerated value" on pydicom's DICOMDIR-nopatient.
#[test]
fn directory_record_types_are_enumerated() {
    let file = |kind: &[u8]| {
        let mut record = le(0x0004_1400, b"UL", &0u32.to_le_bytes());
        record.extend(le(0x0004_1410, b"US", &0xFFFFu16.to_le_bytes()));
        record.extend(le(0x0004_1420, b"UL", &0u32.to_le_bytes()));
        record.extend(le(0x0004_1430, b"CS", kind));
        let mut ds = le(0x0004_1130, b"CS", b"FILESET");
        ds.extend(le(0x0004_1220, b"SQ", &le_item(&record)));
        le_file(b"1.2.840.10008.1.3.10", b"2.25.93", &ds)
    };
    let at = "(0004,1220)[1].(0004,1430)";
    assert!(codes_at(&validate_bytes(&file(b"PATIENT")), at).is_empty());
    assert!(codes_at(&validate_bytes(&file(b"RT DOSE")), at).is_empty());
    assert_eq!(codes_at(&validate_bytes(&file(b"PATIENTS")), at), vec!["DICOM_ENUMERATED_VALUE"]);
}
