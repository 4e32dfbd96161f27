//! The PS3.15 Annex E options as shipped policies (policy/dicom-retain-*.toml,
//! dicom-clean-*.toml, dicom-research.toml): a synthetic file with a unique marker in every
//! attribute of Table E.1-1 whose VR takes one (text `MKR0001X`, a date, a time, a UID or a
//! number no other attribute holds), redacted under each policy. What the policy's option
//! retains is retained (as the input's value; a date under Modified Dates moved by one keyed
//! number of days for the whole file), every other attribute of the table holds none of the
//! input's values anywhere in the output, and (0012,0063)/(0012,0064) name the profile and the
//! options (PS3.16 CID 7050 codes, written here apart from the policies). Hand-picked
//! attributes each option is known to retain (PS3.15 Table E.1-1) are checked apart from the
//! policies' own comments. The Modified Dates shift is the same for every file of a patient,
//! differs between patients, falls back to the study, and reads no time zone. Retain Safe
//! Private keeps the private attributes of PS3.15 Table E.3.10-1 by their block's creator,
//! wherever the block sits, byte for byte, with their creators, and nothing else private.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{code, root, run_stdin, run_with};
use crate::dicom::{le, le_item};

/// The shipped option policies, their (0012,0064) codes (PS3.16 CID 7050, in that order) and
/// tags each must retain, by the standard's Table E.1-1 (K in the option's column).
const POLICIES: &[(&str, &[&str], &[u32])] = &[
    ("dicom-retain-uids", &["113100", "113110"], &[0x0020_000D, 0x0020_000E, 0x0008_0018, 0x0020_0052]),
    ("dicom-retain-device-identity", &["113100", "113109"], &[0x0018_1000, 0x0008_1010, 0x0018_1002]),
    ("dicom-retain-institution-identity", &["113100", "113112"], &[0x0008_0080, 0x0008_0081, 0x0008_1040]),
    (
        "dicom-retain-patient-characteristics",
        &["113100", "113108"],
        &[0x0010_1010, 0x0010_0040, 0x0010_1020, 0x0010_1030, 0x0010_2160, 0x0010_21A0],
    ),
    ("dicom-retain-longitudinal-full-dates", &["113100", "113106"], &[0x0008_0020, 0x0008_0030, 0x0008_0021]),
    ("dicom-retain-longitudinal-modified-dates", &["113100", "113107"], &[0x0008_0030]),
    ("dicom-clean-descriptors", &["113100", "113105"], &[]),
    ("dicom-clean-structured-content", &["113100", "113104"], &[]),
    ("dicom-research", &["113100", "113105", "113107", "113108"], &[0x0010_1010, 0x0010_0040, 0x0008_0030]),
    // Retain Safe Private: no column of Table E.1-1 (its private attributes: the test below).
    ("dicom-retain-safe-private", &["113100", "113111"], &[]),
];

/// Tags no option retains: the patient's name and ID, the descriptions the Clean Descriptors
/// option would clean, the accession number.
const NEVER: &[u32] = &[0x0010_0010, 0x0010_0020, 0x0008_1030, 0x0008_103E, 0x0008_0050, 0x0010_0030];

/// A Part 10 file (explicit VR little endian) of a CT image's SOP class with `dataset`.
fn part10(dataset: &[u8]) -> Vec<u8> {
    part10_in(b"1.2.840.10008.1.2.1", dataset)
}

/// A Part 10 file of a CT image's SOP class with `dataset` in the transfer syntax `ts`.
fn part10_in(ts: &[u8], dataset: &[u8]) -> Vec<u8> {
    let mut meta = le(0x0002_0001, b"OB", b"\x00\x01");
    meta.extend(le(0x0002_0002, b"UI", b"1.2.840.10008.5.1.4.1.1.2"));
    meta.extend(le(0x0002_0010, b"UI", ts));
    let mut out = vec![0u8; 128];
    out.extend_from_slice(b"DICM");
    out.extend(le(0x0002_0000, b"UL", &(meta.len() as u32).to_le_bytes()));
    out.extend(meta);
    out.extend_from_slice(dataset);
    out
}

/// Days since 1970-01-01 of a proleptic Gregorian date, and back.
fn days(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

fn date(n: i64) -> String {
    let z = n + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}")
}

fn parse_date(s: &str) -> Option<i64> {
    let n = |r: std::ops::Range<usize>| s.get(r).and_then(|t| t.parse::<i64>().ok());
    Some(days(n(0..4)?, n(4..6)?, n(6..8)?))
}

/// The tag of a rule's `select = "(gggg,eeee)"` line.
fn select_tag(line: &str) -> Option<u32> {
    let t = line.strip_prefix("select = \"(")?.strip_suffix(")\"")?;
    let (g, e) = t.split_once(',')?;
    Some((u32::from_str_radix(g, 16).ok()? << 16) | u32::from_str_radix(e, 16).ok()?)
}

/// The rows of Table E.1-1 as policy/dicom-basic.toml states them (a tag rule whose comment
/// is `# Keyword (VR): ACTION`): tag and VR.
fn table_rows() -> Vec<(u32, String)> {
    let text = std::fs::read_to_string(root().join("policy/dicom-basic.toml")).expect("basic policy");
    let mut rows = Vec::new();
    let mut tag = None;
    for line in text.lines() {
        if line.starts_with("select = \"(") {
            tag = select_tag(line);
        } else if line.starts_with("[[dicom]]") {
            tag = None;
        } else if let (Some(t), Some(c)) = (tag, line.strip_prefix("# ")) {
            let vr = c.split_once(" (").and_then(|(_, r)| r.split_once("): ")).map(|(vr, _)| vr.to_owned());
            if let Some(vr) = vr.filter(|v| v.len() == 2) {
                rows.push((t, vr));
            }
        }
    }
    rows
}

/// What a policy's comment says an applied option does to each tag (`; <Option>: K`).
fn option_actions(policy: &str) -> BTreeMap<u32, String> {
    let text = std::fs::read_to_string(root().join(format!("policy/{policy}.toml"))).expect("policy");
    let mut out = BTreeMap::new();
    let mut tag = None;
    for line in text.lines() {
        if line.starts_with("select = \"(") {
            tag = select_tag(line);
        } else if let (Some(t), true) = (tag, line.starts_with("# ")) {
            if let Some((_, opt)) = line.split_once(" Option: ") {
                out.insert(t, opt.chars().take(1).collect());
            }
        }
    }
    out
}

/// The marker file: every row of the table whose VR takes a marker, each with its own value.
/// Values: (tag, VR, value).
fn marker_rows(patient: &str, date_base: i64) -> Vec<(u32, String, String)> {
    let mut out = Vec::new();
    let mut n = 0;
    for (tag, vr) in table_rows() {
        if tag >> 16 <= 0x0002 || matches!(tag, 0x0012_0062..=0x0012_0064) {
            continue;
        }
        n += 1;
        let value = match vr.as_str() {
            _ if tag == 0x0010_0020 => patient.to_owned(),
            "AE" | "LO" | "SH" | "ST" | "LT" | "UT" | "UC" | "UR" | "PN" | "CS" => format!("MKR{n:04}X"),
            "DA" => date(date_base + 800 * n),
            "DT" => format!("{}1230", date(date_base + 800 * n)),
            "TM" => format!("{:02}{:02}{:02}", 10 + n / 3600, (n / 60) % 60, n % 60),
            "UI" => format!("1.2.826.0.1.3680043.99.{n:04}"),
            "DS" => format!("7{n:04}.25"),
            "IS" => format!("9{n:04}"),
            "AS" => "047Y".to_owned(),
            _ => continue,
        };
        out.push((tag, vr, value));
    }
    out.push((0x0008_0016, "UI".into(), "1.2.840.10008.5.1.4.1.1.2".into()));
    out.sort_by_key(|r| r.0);
    out
}

fn file(rows: &[(u32, String, String)]) -> Vec<u8> {
    let mut ds = Vec::new();
    for (tag, vr, value) in rows {
        let vr: [u8; 2] = vr.as_bytes().try_into().expect("two-letter VR");
        ds.extend(le(*tag, &vr, value.as_bytes()));
    }
    part10(&ds)
}

fn key() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("phiward-dicom-options-{}-{n}.key", std::process::id()));
    std::fs::write(&p, b"0123456789abcdef0123456789abcdef").expect("key");
    p.to_string_lossy().into_owned()
}

fn redact(policy: &str, key: &str, input: &[u8], env: &[(&str, &str)]) -> Vec<u8> {
    let p = root().join(format!("policy/{policy}.toml")).to_string_lossy().into_owned();
    let o = run_with(&["redact", "--policy", &p, "--key-file", key, "-"], Some(input), env);
    assert_eq!(code(&o), 0, "{policy}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(!o.stderr.windows(3).any(|w| w == b"MKR"), "{policy}: a marker on stderr");
    assert_eq!(&o.stdout[128..132], b"DICM", "{policy}: a Part 10 file");
    o.stdout
}

fn model(bytes: &[u8]) -> Value {
    let o = run_stdin(&["parse", "--json", "-"], bytes);
    assert_eq!(code(&o), 0, "the output parses");
    serde_json::from_slice::<Value>(&o.stdout).expect("json")["model"].clone()
}

/// A top-level value of the model as text (PN: its alphabetic group).
fn text(m: &Value, tag: u32) -> Option<String> {
    let v = &m[format!("{tag:08X}")]["Value"][0];
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Object(o) => o.get("Alphabetic").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The same number as text ("70012.25" and 70012.25 read back as "70012.25").
fn same(input: &str, vr: &str, out: &str) -> bool {
    match vr {
        "DS" | "IS" => input.parse::<f64>().ok() == out.parse::<f64>().ok(),
        _ => input == out,
    }
}

#[test]
fn every_option_policy_retains_its_column_and_removes_the_rest() {
    let key = key();
    let rows = marker_rows("MKR9990X", days(1901, 1, 1));
    let input = file(&rows);
    assert!(rows.len() > 250, "{} marked rows", rows.len());
    for (policy, codes, must_keep) in POLICIES {
        let out = redact(policy, &key, &input, &[]);
        let m = model(&out);
        let actions = option_actions(policy);
        let modified = codes.contains(&"113107");
        let mut shifts = BTreeMap::new();
        let (mut kept, mut removed) = (0, 0);
        for (tag, vr, value) in &rows {
            if *tag == 0x0008_0016 {
                continue;
            }
            let act = actions.get(tag).map(String::as_str);
            let got = text(&m, *tag);
            let retained = act == Some("K") || modified && act == Some("C") && vr == "TM";
            if retained {
                assert!(
                    got.as_deref().is_some_and(|g| same(value, vr, g)),
                    "{policy}: ({:04X},{:04X}) {vr} not retained",
                    tag >> 16,
                    tag & 0xFFFF
                );
                kept += 1;
            } else if modified && act == Some("C") && matches!(vr.as_str(), "DA" | "DT") {
                let g = got.unwrap_or_else(|| panic!("{policy}: ({tag:08X}) not shifted"));
                assert_ne!(&g, value, "{policy}: ({tag:08X}) unchanged");
                assert!(!contains(&out, &value[..8]), "{policy}: ({tag:08X})'s date left");
                let moved = parse_date(&g).expect("a date") - parse_date(value).expect("a date");
                assert_eq!(&g[8..], &value[8..], "{policy}: ({tag:08X}) time kept");
                shifts.insert(*tag, moved);
            } else {
                assert!(!contains(&out, value), "{policy}: ({:04X},{:04X}) {vr} left", tag >> 16, tag & 0xFFFF);
                removed += 1;
            }
        }
        for tag in *must_keep {
            let (_, vr, value) = rows.iter().find(|r| r.0 == *tag).expect("a marked row");
            let got = text(&m, *tag);
            assert!(got.as_deref().is_some_and(|g| same(value, vr, g)), "{policy}: {tag:08X} not retained");
        }
        for tag in NEVER {
            let (_, _, value) = rows.iter().find(|r| r.0 == *tag).expect("a marked row");
            assert!(!contains(&out, value), "{policy}: {tag:08X} left");
        }
        if modified {
            let all: Vec<i64> = shifts.values().copied().collect();
            assert!(all.len() > 20, "{policy}: {} dates shifted", all.len());
            assert!(all.iter().all(|d| *d == all[0] && *d != 0 && d.abs() <= 365), "{policy}: {all:?}");
        } else {
            assert!(shifts.is_empty());
        }
        assert!(kept >= must_keep.len() && removed > 100, "{policy}: {kept} kept, {removed} removed");
        // (0012,0062) YES; (0012,0063) the policy, the profile and the options; (0012,0064)
        // one DCM code item per method.
        assert_eq!(m["00120062"]["Value"][0], "YES");
        let method: Vec<&str> =
            m["00120063"]["Value"].as_array().expect("(0012,0063)").iter().filter_map(Value::as_str).collect();
        assert_eq!(method[0], format!("phiward {policy}"));
        assert_eq!(method[1], "Basic Application Confidentiality Profile");
        assert_eq!(method.len(), codes.len() + 1, "{method:?}");
        let items = m["00120064"]["Value"].as_array().expect("(0012,0064)");
        let got: Vec<&str> = items.iter().filter_map(|i| i["00080100"]["Value"][0].as_str()).collect();
        assert_eq!(&got, codes, "{policy}");
        for (i, item) in items.iter().enumerate() {
            assert_eq!(item["00080102"]["Value"][0], "DCM");
            assert_eq!(item["00080104"]["Value"][0].as_str(), Some(method[i + 1]), "{policy}: meaning");
        }
        // The same input, policy and key: the same bytes.
        assert_eq!(redact(policy, &key, &input, &[]), out, "{policy}: not deterministic");
    }
}

/// Modified Dates: one shift per patient across files (keyed on Patient ID), another for
/// another patient, the study's UID when there is no Patient ID, the Basic Profile's dummy when
/// the file has neither; no host time zone is read; another key, another shift.
#[test]
fn modified_dates_shift_per_patient_across_files() {
    let key = key();
    let policy = "dicom-retain-longitudinal-modified-dates";
    let study_date = |bytes: &[u8]| {
        let m = model(bytes);
        text(&m, 0x0008_0020).and_then(|d| parse_date(&d))
    };
    let one = |patient: Option<&str>, study: Option<&str>, day: &str| {
        let mut rows = vec![(0x0008_0016, "UI".to_owned(), "1.2.840.10008.5.1.4.1.1.2".to_owned())];
        rows.push((0x0008_0020, "DA".into(), day.into()));
        rows.push((0x0008_0021, "DA".into(), day.into()));
        if let Some(p) = patient {
            rows.push((0x0010_0020, "LO".into(), p.into()));
        }
        if let Some(s) = study {
            rows.push((0x0020_000D, "UI".into(), s.into()));
        }
        file(&rows)
    };
    let moved = |input: &[u8], day: &str, env: &[(&str, &str)], k: &str| -> (Vec<u8>, Option<i64>) {
        let out = redact(policy, k, input, env);
        let d = study_date(&out).map(|d| d - parse_date(day).expect("date"));
        (out, d)
    };
    let (a, da) = moved(&one(Some("PAT-A"), Some("1.2.3.1"), "20240115"), "20240115", &[], &key);
    let (_, da2) = moved(&one(Some("PAT-A"), Some("1.2.3.2"), "20190630"), "20190630", &[], &key);
    assert!(da.is_some_and(|d| d != 0 && d.abs() <= 365), "{da:?}");
    assert_eq!(da, da2, "one patient, two studies: one shift");
    let others: Vec<Option<i64>> = ["PAT-B", "PAT-C", "PAT-D"]
        .iter()
        .map(|p| moved(&one(Some(p), Some("1.2.3.1"), "20240115"), "20240115", &[], &key).1)
        .collect();
    assert!(others.iter().any(|d| *d != da), "other patients, other shifts: {others:?}");
    // No Patient ID: the study's UID keys it; the files of the study move together.
    let (_, s1) = moved(&one(None, Some("1.2.3.9"), "20240115"), "20240115", &[], &key);
    let (_, s2) = moved(&one(Some(""), Some("1.2.3.9"), "20200101"), "20200101", &[], &key);
    assert!(s1.is_some() && s1 == s2, "{s1:?} {s2:?}");
    // Neither: not shifted (fail closed): Study Date gets the Basic Profile's dummy (type 1
    // in a DICOMDIR's study record), Series Date (a dummy too in the Basic Profile) the same.
    let none = redact(policy, &key, &one(None, None, "20240115"), &[]);
    let m = model(&none);
    assert_eq!(text(&m, 0x0008_0020).as_deref(), Some("19000101"));
    assert_eq!(text(&m, 0x0008_0021).as_deref(), Some("19000101"));
    assert!(!contains(&none, "20240115"));
    // A value that is not YYYYMMDD is not shifted: Acquisition Date (X/Z) written empty.
    let mut rows = vec![(0x0008_0016, "UI".to_owned(), "1.2.840.10008.5.1.4.1.1.2".to_owned())];
    rows.push((0x0008_0022, "DA".into(), "2024011".into()));
    rows.push((0x0010_0020, "LO".into(), "PAT-A".into()));
    let odd = redact(policy, &key, &file(&rows), &[]);
    let m = model(&odd);
    assert!(m["00080022"].is_object() && m["00080022"].get("Value").is_none(), "{}", m["00080022"]);
    assert!(!contains(&odd, "2024011"));
    // No host time zone: the same bytes under any TZ.
    let (a_tz, _) =
        moved(&one(Some("PAT-A"), Some("1.2.3.1"), "20240115"), "20240115", &[("TZ", "Pacific/Kiritimati")], &key);
    assert_eq!(a, a_tz, "the host time zone changed the output");
    // Another key, (almost surely) another shift: over a few patients at least one differs.
    let other_key = std::env::temp_dir().join(format!("phiward-dicom-options-other-{}.key", std::process::id()));
    std::fs::write(&other_key, b"another key, another shift, 32b!").expect("key");
    let k2 = other_key.to_string_lossy().into_owned();
    let differ = ["PAT-A", "PAT-B", "PAT-C"].iter().any(|p| {
        let input = one(Some(p), Some("1.2.3.1"), "20240115");
        moved(&input, "20240115", &[], &key).1 != moved(&input, "20240115", &[], &k2).1
    });
    assert!(differ, "the key does not change the shift");
    let _ = std::fs::remove_file(other_key);
}

/// An explicit VR little endian element of VR UN (4-byte length), as a writer that does not
/// know a private element's VR writes it.
fn le_un(tag: u32, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((tag >> 16) as u16).to_le_bytes());
    out.extend_from_slice(&((tag & 0xFFFF) as u16).to_le_bytes());
    out.extend_from_slice(b"UN\0\0");
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// FD values, little endian.
fn fd(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Retain Safe Private (PS3.15 E.3.10): the attributes of Table E.3.10-1 are found by their
/// block's private creator and their offset in it, in a block at an unusual offset ((0019,0013)
/// reserving (0019,13xx)), and kept byte for byte (a DS, an LO the table lists, an FD of VM 3, a
/// DS read as UN checked as DS, an IS of VM 4) with their creators; everything else private
/// goes: the same offsets under another creator, offsets the table does not list in a safe
/// block, an element of another explicit VR, a value that is not its VR's (text in a DS) or not its VM (an FD of 5 values where the
/// table says 6, one DS where it says 3-4), a creator that reserves two blocks of its group, an
/// element whose creator is missing, and the creators of the blocks that keep nothing. The output
/// reads back, holds no marker, and (0012,0064) names 113111.
#[test]
fn retain_safe_private_keeps_the_tables_attributes_by_creator() {
    type El = (u32, Vec<u8>);
    let el = |tag: u32, vr: &[u8; 2], v: &[u8]| -> El { (tag, le(tag, vr, v)) };
    // Retained: (tag, the element's encoded bytes).
    let safe: Vec<El> = vec![
        el(0x0019_0011, b"LO", b"SIEMENS MR HEADER"),
        el(0x0019_0013, b"LO", b"GEMS_ACQU_01"),
        el(0x0019_110E, b"FD", &fd(&[0.25, -0.5, 0.75])),
        el(0x0019_1323, b"DS", b"72222.25"),
        el(0x0019_1324, b"DS", b"-3.5E2"),
        el(0x0019_139E, b"LO", b"MKRSAFELO1X"),
        el(0x0043_0010, b"LO", b"GEMS_PARM_01"),
        el(0x0043_1039, b"IS", b"1000\\0\\0\\7"),
        el(0x7053_0010, b"LO", b"Philips PET Private Group"),
        (0x7053_1009, le_un(0x7053_1009, b"76666.5 ")),
    ];
    // Removed: (tag, the element's bytes, a marker its value holds, if text).
    let gone: Vec<(u32, Vec<u8>, Option<&str>)> = vec![
        (0x0010_0010, le(0x0010_0010, b"PN", b"MKRPN0001X"), Some("MKRPN0001X")),
        // Another creator at (0019,0010): the same offsets are not safe there.
        (0x0019_0010, le(0x0019_0010, b"LO", b"MKRCREATOR1X"), Some("MKRCREATOR1X")),
        (0x0019_1023, le(0x0019_1023, b"DS", b"71111.5"), Some("71111.5")),
        (0x0019_109E, le(0x0019_109E, b"LO", b"MKRUNSAFE1X"), Some("MKRUNSAFE1X")),
        // SIEMENS MR HEADER's B Value is IS: an element the file says is LO is not it.
        (0x0019_110C, le(0x0019_110C, b"LO", b"1000"), None),
        // SIEMENS MR HEADER's B Matrix is FD of VM 6: 5 values are not it.
        (0x0019_1127, le(0x0019_1127, b"FD", &fd(&[1.5, 2.5, 3.5, 4.5, 5.5])), None),
        // Safe block, offsets the table does not list, or a value that is not a DS.
        (0x0019_1327, le(0x0019_1327, b"DS", b"MKRDS01X"), Some("MKRDS01X")),
        (0x0019_1350, le(0x0019_1350, b"DS", b"74444.5"), Some("74444.5")),
        (0x0019_13A0, le(0x0019_13A0, b"LO", b"MKRSAFEBLOCK1X"), Some("MKRSAFEBLOCK1X")),
        (0x0029_0010, le(0x0029_0010, b"LO", b"SIEMENS CSA HEADER"), Some("SIEMENS CSA HEADER")),
        (0x0029_1010, le(0x0029_1010, b"OB", b"MKRCSAHEADER01X "), Some("MKRCSAHEADER01X")),
        // GEMS_PARM_01's (0043,xx6F) is DS of VM 3-4: one value is not it.
        (0x0043_106F, le(0x0043_106F, b"DS", b"75555.5"), Some("75555.5")),
        // GEMS_HELIOS_01 reserving two blocks of (0045): which one is meant is not known.
        (0x0045_0010, le(0x0045_0010, b"LO", b"GEMS_HELIOS_01"), None),
        (0x0045_0011, le(0x0045_0011, b"LO", b"GEMS_HELIOS_01"), None),
        (0x0045_1001, le(0x0045_1001, b"SS", &7u16.to_le_bytes()), None),
        (0x0045_1101, le(0x0045_1101, b"SS", &9u16.to_le_bytes()), None),
        // GEIIS PACS's Reject Image Flag without its creator.
        (0x0903_1010, le(0x0903_1010, b"US", &1u16.to_le_bytes()), None),
    ];
    let mut all: Vec<El> = safe.clone();
    all.extend(gone.iter().map(|(t, b, _)| (*t, b.clone())));
    all.push(el(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.2"));
    all.sort_by_key(|e| e.0);
    let input = part10(&all.iter().flat_map(|e| e.1.clone()).collect::<Vec<u8>>());
    let key = key();
    let policy = "dicom-retain-safe-private";
    let out = redact(policy, &key, &input, &[]);
    let m = model(&out);
    for (tag, bytes) in &safe {
        assert!(out.windows(bytes.len()).any(|w| w == bytes.as_slice()), "{tag:08X} not retained byte for byte");
        assert!(m.get(format!("{tag:08X}")).is_some(), "{tag:08X} not in the output's model");
    }
    for (tag, _, marker) in &gone {
        // The patient's name stays with the profile's dummy.
        assert!(*tag == 0x0010_0010 || m.get(format!("{tag:08X}")).is_none(), "{tag:08X} left");
        if let Some(marker) = marker {
            assert!(!contains(&out, marker), "{tag:08X}'s value left");
        }
    }
    // No private element but the retained ones.
    let private: Vec<&String> = m
        .as_object()
        .expect("model")
        .keys()
        .filter(|k| u32::from_str_radix(&k[..4], 16).is_ok_and(|g| g % 2 == 1))
        .collect();
    assert_eq!(private.len(), safe.len(), "{private:?}");
    let items = m["00120064"]["Value"].as_array().expect("(0012,0064)");
    let codes: Vec<&str> = items.iter().filter_map(|i| i["00080100"]["Value"][0].as_str()).collect();
    assert_eq!(codes, ["113100", "113111"]);
    // The Basic Profile alone keeps nothing private.
    let basic = redact("dicom-basic", &key, &input, &[]);
    let b = model(&basic);
    assert!(b.as_object().expect("model").keys().all(|k| u32::from_str_radix(&k[..4], 16).is_ok_and(|g| g % 2 == 0)));
    // validate: the output is a file it reads without a new error.
    let o = run_stdin(&["validate", "--json", "-"], &out);
    assert!(code(&o) <= 1, "validate ran: {}", String::from_utf8_lossy(&o.stderr));
}

/// An implicit VR little endian element (even length, space-padded).
fn implicit(tag: u32, value: &[u8]) -> Vec<u8> {
    let mut v = value.to_vec();
    if v.len() % 2 == 1 {
        v.push(b' ');
    }
    let mut out = Vec::new();
    out.extend_from_slice(&((tag >> 16) as u16).to_le_bytes());
    out.extend_from_slice(&((tag & 0xFFFF) as u16).to_le_bytes());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    out.extend_from_slice(&v);
    out
}

/// Retain Safe Private in an implicit VR file, where every private element reads as UN: each is
/// checked as the table's VR (a DS that is not one goes), kept byte for byte; a private sequence
/// of undefined length the table lists (Hologic's High Resolution Data Sequence) is kept with its
/// item, in which the item's own creator defines the block: a row kept with that creator, an
/// offset the table does not list removed.
#[test]
fn retain_safe_private_in_implicit_vr_and_inside_a_private_sequence() {
    let undefined = |tag: u32| {
        let mut h = Vec::new();
        h.extend_from_slice(&((tag >> 16) as u16).to_le_bytes());
        h.extend_from_slice(&((tag & 0xFFFF) as u16).to_le_bytes());
        h.extend_from_slice(&u32::MAX.to_le_bytes());
        h
    };
    let nested_creator = implicit(0x7E01_0011, b"HOLOGIC, Inc.");
    let nested_safe = implicit(0x7E01_1101, b"MKRCODEC1X");
    let nested_unsafe = implicit(0x7E01_1150, b"MKRNESTED1X");
    let mut seq = undefined(0x7E01_1010);
    seq.extend(undefined(0xFFFE_E000));
    seq.extend(&nested_creator);
    seq.extend(&nested_safe);
    seq.extend(&nested_unsafe);
    seq.extend(implicit(0xFFFE_E00D, b""));
    seq.extend(implicit(0xFFFE_E0DD, b""));
    let safe = [
        implicit(0x0019_0010, b"GEMS_ACQU_01"),
        implicit(0x0019_1023, b"72222.25"),
        implicit(0x0019_109E, b"MKRSAFELO2X"),
    ];
    let mut ds = implicit(0x0008_0016, b"1.2.840.10008.5.1.4.1.1.2\0");
    ds.extend(implicit(0x0010_0020, b"MKRPID0002X"));
    ds.extend(safe.concat());
    ds.extend(implicit(0x0019_1024, b"MKRDS02X"));
    ds.extend(implicit(0x7E01_0010, b"HOLOGIC, Inc."));
    ds.extend(&seq);
    let input = part10_in(b"1.2.840.10008.1.2", &ds);
    let key = key();
    let out = redact("dicom-retain-safe-private", &key, &input, &[]);
    for bytes in safe.iter().chain([&nested_creator, &nested_safe]) {
        assert!(out.windows(bytes.len()).any(|w| w == bytes.as_slice()), "not retained byte for byte");
    }
    for marker in ["MKRPID0002X", "MKRDS02X", "MKRNESTED1X"] {
        assert!(!contains(&out, marker), "{marker} left");
    }
    let m = model(&out);
    let item = &m["7E011010"]["Value"][0];
    assert!(
        item.get("7E011101").is_some() && item.get("7E010011").is_some(),
        "the item's safe element and its creator"
    );
    assert!(item.get("7E011150").is_none());
    assert!(m.get("7E010010").is_some(), "the sequence's creator");
    assert!(m.get("00191024").is_none());
}

/// A dataset of a CT image's SOP class (no pixel data) of the patient FIELD^ANN ("field" is a
/// word of the vocabulary: only the dataset's own names keep it out), with `more` elements
/// (ascending tags after (0010,0020)).
fn clean_file(more: &[Vec<u8>]) -> Vec<u8> {
    let mut ds = le(0x0008_0016, b"UI", b"1.2.840.10008.5.1.4.1.1.2");
    ds.extend(le(0x0008_0018, b"UI", b"2.25.4242"));
    ds.extend(le(0x0008_0050, b"SH", b"ACC77"));
    for e in more.iter().filter(|e| u16::from_le_bytes([e[0], e[1]]) == 0x0008) {
        ds.extend_from_slice(e);
    }
    ds.extend(le(0x0010_0010, b"PN", b"FIELD^ANN"));
    ds.extend(le(0x0010_0020, b"LO", b"PID555"));
    for e in more.iter().filter(|e| u16::from_le_bytes([e[0], e[1]]) > 0x0010) {
        ds.extend_from_slice(e);
    }
    part10(&ds)
}

/// `redact` under `policy` with a manifest: the output and the manifest.
fn redact_manifest(policy: &str, input: &[u8]) -> (Vec<u8>, Value) {
    // One folder per call: the tests of this file run in parallel threads of one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("phiward-dicom-clean-{}-{n}-{policy}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("folder");
    let (file, m) = (dir.join("in.dcm"), dir.join("m.json"));
    std::fs::write(&file, input).expect("write");
    let p = root().join(format!("policy/{policy}.toml")).to_string_lossy().into_owned();
    let key = key();
    let args =
        ["redact", "--policy", &p, "--key-file", &key, "--manifest", &m.to_string_lossy(), &file.to_string_lossy()];
    let o = run_with(&args, None, &[]);
    assert_eq!(code(&o), 0, "{policy}: {}", String::from_utf8_lossy(&o.stderr));
    let manifest: Value = serde_json::from_slice(&std::fs::read(&m).expect("manifest")).expect("manifest JSON");
    for v in ["FIELD", "ANN", "PID555", "ACC77", "1234567", "2024", "ZQXWV"] {
        assert!(!contains(&o.stderr, v) && !manifest.to_string().contains(v), "{policy}: {v} in a diagnostic");
    }
    let _ = std::fs::remove_dir_all(&dir);
    (o.stdout, manifest)
}

/// Clean Descriptors (PS3.15 E.1's C): a description whose every word is the standard's (or a
/// short number, a number with a unit) is kept as it is; one holding the patient's own family
/// name, a long number, a date or an unknown word gets the Basic Profile's action (Study
/// Description written empty, the others removed); the manifest counts both, value-free. Under
/// dicom-basic.toml none is kept.
#[test]
fn clean_descriptors_keep_known_words_and_fall_back() {
    let more = [
        le(0x0008_1030, b"LO", b"CT CHEST W CONTRAST 5.0mm AXIAL"),
        le(0x0008_103E, b"LO", b"CT CHEST FIELD"),
        le(0x0018_1030, b"LO", b"CHEST 1234567"),
        le(0x0020_4000, b"LT", b"CHEST 2024-01-05"),
        le(0x0040_0254, b"LO", b"CHEST ZQXWV"),
    ];
    let input = clean_file(&more);
    let (basic_out, basic_manifest) = redact_manifest("dicom-basic", &input);
    assert!(!contains(&basic_out, "CONTRAST"), "the Basic Profile cleans nothing");
    assert!(basic_manifest.get("dicomClean").is_none(), "no clean rule: no clean counts");
    let basic = model(&basic_out);
    for policy in ["dicom-clean-descriptors", "dicom-research"] {
        let (out, manifest) = redact_manifest(policy, &input);
        let m = model(&out);
        assert_eq!(text(&m, 0x0008_1030).as_deref(), Some("CT CHEST W CONTRAST 5.0mm AXIAL"), "{policy}: kept");
        // The fallback is what the Basic Profile writes: removed, a dummy (Protocol Name's D).
        for (tag, what) in
            [(0x0008_103E, "FIELD"), (0x0018_1030, "1234567"), (0x0020_4000, "2024"), (0x0040_0254, "ZQXWV")]
        {
            let key = format!("{tag:08X}");
            assert_eq!(m.get(&key), basic.get(&key), "{policy}: {tag:08X} fell back");
            assert!(!contains(&out, what), "{policy}: {what} left");
        }
        assert_eq!(text(&m, 0x0018_1030).as_deref(), Some("ANONYMOUS"), "{policy}: D's dummy");
        assert_eq!(manifest["dicomClean"]["kept"], 1, "{policy}: {manifest}");
        assert_eq!(manifest["dicomClean"]["fellBack"], 4, "{policy}: {manifest}");
        assert!(manifest["actions"]["clean"].as_u64().is_some_and(|n| n == 5), "{policy}: {manifest}");
        assert!(manifest["residualRisks"].to_string().contains("(clean)"), "{policy}: {manifest}");
    }
    // The Study Description falls back to the Basic Profile's empty value (type 2).
    let bad = clean_file(&[le(0x0008_1030, b"LO", b"CT CHEST FIELD")]);
    let m = model(&redact_manifest("dicom-clean-descriptors", &bad).0);
    assert!(m.get("00081030").is_some() && text(&m, 0x0008_1030).is_none(), "written empty");
}

/// The few hand-listed imaging terms that are also common names (`head`, a surname of rank 962
/// in the Census list the generator takes out of the standard's words) are words: "CT HEAD WO"
/// is kept, and falls back as soon as one of the file's person names holds the word (a
/// Referring Physician HEAD^JOHN).
#[test]
fn clean_descriptors_listed_terms_that_are_names_yield_to_the_files_names() {
    let series = le(0x0008_103E, b"LO", b"CT HEAD WO");
    let (out, manifest) = redact_manifest("dicom-clean-descriptors", &clean_file(std::slice::from_ref(&series)));
    assert_eq!(text(&model(&out), 0x0008_103E).as_deref(), Some("CT HEAD WO"), "kept");
    assert_eq!(manifest["dicomClean"]["kept"], 1, "{manifest}");
    let named = clean_file(&[le(0x0008_0090, b"PN", b"HEAD^JOHN"), series]);
    let (out, manifest) = redact_manifest("dicom-clean-descriptors", &named);
    assert!(!contains(&out, "HEAD") && !contains(&out, "JOHN"), "a name left");
    assert_eq!(manifest["dicomClean"]["fellBack"], 1, "{manifest}");
}

/// Clean Structured Content: the Acquisition Context Sequence (X/Z in the Basic Profile) is
/// kept as structure under the option and the Content Sequence's items too; a TEXT content
/// item's Text Value of known words is kept, one naming the patient becomes the dummy; code
/// items are kept only when proven (a DCM concept kept, a local one made a dummy item). Under
/// dicom-basic.toml the acquisition context is written empty and every Text Value a dummy.
#[test]
fn clean_structured_content_cleans_content_items() {
    let concept = |code: &[u8], scheme: &[u8], meaning: &[u8]| {
        let mut b = le(0x0008_0100, b"SH", code);
        b.extend(le(0x0008_0102, b"SH", scheme));
        b.extend(le(0x0008_0104, b"LO", meaning));
        le(0x0040_A043, b"SQ", &le_item(&b))
    };
    let text_item = |code: &[u8], scheme: &[u8], value: &[u8]| {
        let mut b = le(0x0040_A040, b"CS", b"TEXT");
        b.extend(concept(code, scheme, b"MKR meaning"));
        b.extend(le(0x0040_A160, b"UT", value));
        le_item(&b)
    };
    let acquisition = text_item(b"121071", b"DCM", b"AXIAL CONTRAST");
    let mut content = text_item(b"121071", b"DCM", b"CHEST CONTRAST 5mm");
    content.extend(text_item(b"MKRLOCAL", b"99LOCAL", b"FIELD 12345"));
    let more = [le(0x0040_0555, b"SQ", &acquisition), le(0x0040_A730, b"SQ", &content)];
    let input = clean_file(&more);
    let (out, manifest) = redact_manifest("dicom-clean-structured-content", &input);
    assert!(!contains(&out, "MKR") && !contains(&out, "FIELD") && !contains(&out, "12345"), "a value left");
    let m = model(&out);
    let item = |seq: &str, n: usize| m[seq]["Value"][n].clone();
    let value = |i: &Value| i["0040A160"]["Value"][0].as_str().map(str::to_owned);
    assert_eq!(value(&item("00400555", 0)).as_deref(), Some("AXIAL CONTRAST"), "acquisition context cleaned");
    assert_eq!(value(&item("0040A730", 0)).as_deref(), Some("CHEST CONTRAST 5mm"));
    assert_eq!(value(&item("0040A730", 1)).as_deref(), Some("ANONYMOUS"), "the patient's name: the dummy");
    let code_of = |i: &Value| i["0040A043"]["Value"][0]["00080102"]["Value"][0].as_str().map(str::to_owned);
    assert_eq!(code_of(&item("0040A730", 0)).as_deref(), Some("DCM"), "a proven concept kept");
    assert_eq!(code_of(&item("0040A730", 1)).as_deref(), Some("99PHIWARD"), "an unproven one a dummy item");
    assert_eq!(manifest["dicomClean"]["kept"], 2, "{manifest}");
    assert_eq!(manifest["dicomClean"]["fellBack"], 1, "{manifest}");
    let m = model(&redact_manifest("dicom-basic", &input).0);
    assert!(m["00400555"]["Value"].as_array().is_none_or(Vec::is_empty), "the Basic Profile empties it");
    assert_eq!(m["0040A730"]["Value"][0]["0040A160"]["Value"][0], "ANONYMOUS");
}
