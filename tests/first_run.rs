//! The first ten minutes (issue 35): what a new user meets before reading any documentation.
//!
//! - usage mistakes: each names the argument, option or command (and clap's suggestion), on the
//!   one `CLI_USAGE` line, exit 2, and never echoes a positional value;
//! - option files that cannot be read: their own code, never the input's, never the path;
//! - a failure at any stage of any command writes nothing on stdout;
//! - help: each command lists only its options, `--format` only the formats built in;
//! - `fmt`/`redact` line ends, `fmt --check` wording, `terminology list` ConceptMaps;
//! - locations over every fixture: never shortened, FHIR findings with a line and column, HL7 v2
//!   findings with their segment's line, fingerprints distinct, failed records with an offset.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{assert_failure_line, code, files_under, fixture, root, run, run_stdin};

/// A value typed on the command line that must never come back (a file named after a patient).
const SECRET: &str = "SMITHJOHN19840312";

fn example() -> String {
    root().join("examples/lab-result.hl7").to_string_lossy().into_owned()
}

/// 24 usage mistakes: the arguments, and what the one stderr line must name.
#[test]
fn usage_mistakes_name_the_argument_and_exit_2() {
    let ex = example();
    let ex = ex.as_str();
    let formats =
        format!("invalid value for --format; possible values: {}", phiward::formats::built_names().join(", "));
    let table: &[(&[&str], &str)] = &[
        (&["valdate", SECRET], "did you mean `validate`?"),
        (&["frobnicate", SECRET], "unknown command"),
        (&["inspect", "--strict", ex], "unknown option --strict"),
        (&["validate"], "missing FILE|-"),
        (&["validate", "--formt", "hl7", ex], "unknown option --formt, did you mean --format?"),
        // validate and inspect take many paths (batch mode); a command of one input does not.
        (&["parse", ex, SECRET], "unexpected argument"),
        (&["validate", "--bogus", ex], "unknown option --bogus"),
        (&["validate", "--format", "edifact", ex], formats.as_str()),
        (&["validate", "--format", SECRET, ex], "invalid value for --format"),
        (&["validate", ex, "--format"], "missing value for --format"),
        (&["parse", "--strict", ex], "unknown option --strict"),
        (&["redact", "--json", ex], "unknown option --json, did you mean --ndjson?"),
        (&["fmt", "--quiet", ex], "missing --check"),
        (&["fmt", "--to", "yaml", ex], "invalid value for --to; possible values: json, xml"),
        (&["fmt", "--line-ending", "crlf", ex], "invalid value for --line-ending; possible values: auto, cr, lf"),
        (&["convert", "--bundle-type", "document", ex], "invalid value for --bundle-type"),
        (&["convert", "--default-timezone", "CET", ex], "invalid value for --default-timezone"),
        (&["validate", "--max-input-bytes", "lots", ex], "invalid value for --max-input-bytes"),
        (&["find-equivalent", "--limit", "99", SECRET], "invalid value for --limit"),
        (&["map-codes", "--code", "x"], "missing --map"),
        (&["map-codes", "--map", "u", "--code", "c", "--batch", "f"], "--code cannot be used with --batch"),
        (&["policy", "test", "policy/agent.toml"], "missing --samples"),
        (&["policy", "lint", ex], "unknown command"),
        (&["terminology", "import", "snomed", SECRET], "invalid value for SYSTEM"),
        (&["validate", "--SMITH_JOHN", ex], "unknown option"),
    ];
    assert!(table.len() >= 20);
    for (args, named) in table {
        let o = run(args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert_failure_line(&o, "CLI_USAGE");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(named), "{args:?}: {err:?} does not name {named:?}");
        assert!(!err.contains(SECRET) && !err.contains("SMITH"), "{args:?} echoed a value: {err:?}");
        assert!(err.contains("--help"), "{args:?}: no pointer to the help: {err:?}");
    }
}

/// A file an option names that cannot be read is the option's own code (exit 66), not the
/// input's `CLI_NO_INPUT`, and its path is never shown.
#[test]
fn unreadable_option_files_name_the_option() {
    let ex = example();
    let ex = ex.as_str();
    let missing = "/nonexistent-phiward-SMITHJOHN/file";
    let lds = root().join("policy/limited-data-set.toml").to_string_lossy().into_owned();
    let table: &[(&[&str], &str)] = &[
        (&["redact", ex, "--policy", &lds, "--key-file", missing], "CLI_KEY_FILE_UNREADABLE"),
        (&["parse", ex, "--policy", missing], "CLI_POLICY_UNREADABLE"),
        (&["validate", ex, "--policy", missing], "CLI_POLICY_UNREADABLE"),
        (&["convert", "--id-key-file", missing, ex], "CLI_ID_KEY_FILE_UNREADABLE"),
        (&["convert", "--naming-systems", missing, ex], "CLI_NAMING_SYSTEMS_UNREADABLE"),
        (&["policy", "check", missing], "CLI_POLICY_UNREADABLE"),
        (&["policy", "test", missing, "--samples", ex], "CLI_POLICY_UNREADABLE"),
        (&["policy", "test", &lds, "--samples", missing], "CLI_SAMPLES_UNREADABLE"),
    ];
    for (args, expected) in table {
        let o = run(args);
        assert_eq!(code(&o), 66, "{args:?}");
        assert_failure_line(&o, expected);
        assert!(!String::from_utf8_lossy(&o.stderr).contains("SMITHJOHN"), "{args:?} named the path");
    }
    let o = run(&["mcp", "--key-file", missing]);
    if code(&o) != 69 {
        assert_eq!(code(&o), 66);
        assert_failure_line(&o, "CLI_KEY_FILE_UNREADABLE");
    }
}

/// Arguments, standard input, the code of the one stderr line.
type Case<'a> = (&'a [&'a str], Option<&'a [u8]>, &'a str);

/// A failure at any stage (the input, an option's file, the policy, the data, the manifest)
/// writes nothing on standard output, for every command.
#[test]
fn a_failure_writes_nothing_on_stdout_in_any_command() {
    let ex = example();
    let ex = ex.as_str();
    let bad_policy = std::env::temp_dir().join(format!("phiward-bad-policy-{}.toml", std::process::id()));
    std::fs::write(&bad_policy, "[policy]\nname = \"x\"\nbogus = 1\n").expect("write");
    let bad_policy = bad_policy.to_string_lossy().into_owned();
    let pseudonym = root().join("examples/pseudonym.toml").to_string_lossy().into_owned();
    let nothing = "/nonexistent-phiward-dir/x";
    let manifest = "/nonexistent-phiward-dir/m.json";
    let unparseable: &[u8] = b"MSH|^~";
    let cases: &[Case<'_>] = &[
        (&["parse", nothing], None, "CLI_NO_INPUT"),
        (&["parse", "-"], Some(unparseable), "CLI_PARSE_FAILED"),
        (&["parse", "--policy", &bad_policy, ex], None, "POLICY_UNKNOWN_KEY"),
        (&["validate", nothing], None, "CLI_NO_INPUT"),
        (&["validate", "-"], Some(b"\x00\x01binary"), "CLI_FORMAT_UNDETECTED"),
        (&["convert", "-"], Some(b"<Message xmlns=\"http://www.ncpdp.org/schema/SCRIPT\"/>"), "CLI_FORMAT_UNSUPPORTED"),
        (&["inspect", "-"], Some(unparseable), "CLI_PARSE_FAILED"),
        (&["inspect", "--max-input-bytes", "20", ex], None, "CLI_INPUT_TOO_LARGE"),
        (&["fmt", "-"], Some(unparseable), "CLI_PARSE_FAILED"),
        (&["fmt", "--check", "-"], Some(b""), "CLI_EMPTY_INPUT"),
        (&["redact", "--policy", &pseudonym, ex], None, "POLICY_KEY_REQUIRED"),
        (&["fmt", "--policy", &bad_policy, ex], None, "POLICY_UNKNOWN_KEY"),
        (&["redact", ex, "--manifest", manifest], None, "CLI_OUTPUT_FAILED"),
        (&["redact", "-", "--manifest", manifest], Some(unparseable), "CLI_OUTPUT_FAILED"),
        (&["redact", "-"], Some(unparseable), "CLI_PARSE_FAILED"),
        (&["redact", ex, "--policy", &bad_policy], None, "POLICY_UNKNOWN_KEY"),
        (&["convert", "-"], Some(unparseable), "CLI_PARSE_FAILED"),
        (&["convert", ex, "--policy", &bad_policy], None, "POLICY_UNKNOWN_KEY"),
        (&["policy", "check", nothing], None, "CLI_POLICY_UNREADABLE"),
        (&["policy", "test", &bad_policy, "--samples", ex], None, "POLICY_UNKNOWN_KEY"),
        (
            &["map-codes", "--map", "http://example.org/none", "--code", "c", "--system", "s"],
            None,
            "CONCEPTMAP_INVALID",
        ),
        (&["map-codes", "--map", "http://hl7.org/fhir/ConceptMap/101", "--scan", nothing], None, "CLI_NO_INPUT"),
        (&["terminology", "import", "loinc", nothing, "--data-dir", nothing], None, "CLI_NO_INPUT"),
    ];
    for (args, stdin, expected) in cases {
        let o = match stdin {
            Some(bytes) => run_stdin(args, bytes),
            None => run(args),
        };
        assert_ne!(code(&o), 0, "{args:?}");
        assert_failure_line(&o, expected);
    }
    let _ = std::fs::remove_file(&bad_policy);
}

/// Each command's help lists only its options; `--format` offers the formats built in (read
/// from the registry), not the ones only recognised.
#[test]
fn help_lists_only_what_a_command_takes() {
    let built = phiward::formats::built_names();
    let not_built: Vec<&str> = phiward::formats::accepted_names().into_iter().filter(|n| !built.contains(n)).collect();
    let takes: &[(&str, &[&str], &[&str])] = &[
        (
            "parse",
            &["--format", "--json", "--ndjson", "--policy", "--key-file"],
            &["--strict", "--quiet", "--check", "--manifest", "--line-ending"],
        ),
        (
            "validate",
            &["--format", "--json", "--quiet", "--strict", "--policy"],
            &["--key-file", "--manifest", "--check", "--line-ending", "--to"],
        ),
        ("inspect", &["--format", "--json", "--quiet"], &["--strict", "--key-file", "--manifest", "--check"]),
        ("fmt", &["--check", "--quiet", "--to", "--line-ending", "--policy"], &["--strict", "--manifest"]),
        (
            "redact",
            &["--policy", "--key-file", "--manifest", "--line-ending"],
            &["--json", "--quiet", "--strict", "--check"],
        ),
        (
            "convert",
            &["--json", "--bundle-type", "--naming-systems", "--id-key-file"],
            &["--quiet", "--strict", "--ndjson", "--manifest", "--check"],
        ),
    ];
    for (command, has, lacks) in takes {
        let o = run(&[command, "--help"]);
        assert_eq!(code(&o), 0);
        let help = String::from_utf8_lossy(&o.stdout);
        let words: BTreeSet<&str> = help.split_whitespace().collect();
        for opt in *has {
            assert!(words.contains(opt), "{command} --help lacks {opt}");
        }
        for opt in *lacks {
            assert!(!words.contains(opt), "{command} --help lists {opt}");
        }
        let values = format!("[possible values: {}]", built.join(", "));
        assert!(help.contains(&values), "{command} --help: --format does not offer {values}: {help}");
        for name in &not_built {
            assert!(
                !help.contains(&format!(" {name},")) && !help.contains(&format!(" {name}]")),
                "{command} offers {name}"
            );
        }
    }
}

/// HL7 v2 line ends: CR when piped (the default here: the test's stdout is a pipe), LF with
/// `--line-ending lf`; an MLLP frame's end block keeps its CR.
#[test]
fn fmt_and_redact_line_ends() {
    let ex = example();
    for command in ["fmt", "redact"] {
        let cr = run(&[command, ex.as_str()]);
        assert_eq!(code(&cr), 0);
        assert!(cr.stdout.contains(&b'\r') && !cr.stdout.contains(&b'\n'), "{command}: not CR when piped");
        let lf = run(&[command, "--line-ending", "lf", ex.as_str()]);
        assert!(lf.stdout.contains(&b'\n') && !lf.stdout.contains(&b'\r'), "{command}: not LF");
        assert_eq!(
            lf.stdout.iter().filter(|&&b| b == b'\n').count(),
            cr.stdout.iter().filter(|&&b| b == b'\r').count()
        );
        let auto = run(&[command, "--line-ending", "auto", ex.as_str()]);
        assert_eq!(auto.stdout, cr.stdout);
    }
    let mllp = files_under(&fixture("hl7v2/valid")).into_iter().find(|p| p.extension().is_some_and(|e| e == "mllp"));
    if let Some(mllp) = mllp {
        let o = run(&["fmt", "--line-ending", "lf", mllp.to_str().unwrap_or_default()]);
        assert_eq!(code(&o), 0);
        assert!(o.stdout.windows(2).any(|w| w == [0x1C, b'\r']), "the MLLP end block lost its CR");
        assert!(!o.stdout.windows(2).any(|w| w[0] != 0x1C && w[1] == b'\r'), "a segment kept its CR");
    }
}

/// `fmt --check` says `not canonical` (nothing when canonical), and `--quiet` nothing at all.
#[test]
fn fmt_check_says_not_canonical() {
    let ex = example();
    let o = run(&["fmt", "--check", ex.as_str()]);
    assert_eq!((code(&o), o.stdout.as_slice()), (0, &b""[..]));
    let lf = b"MSH|^~\\&|A|B|C|D|20200101||ADT^A01|1|P|2.5\nPID|1||123\n";
    let o = run_stdin(&["fmt", "--check", "-"], lf);
    assert_eq!(code(&o), 1);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "not canonical\n");
    let o = run_stdin(&["fmt", "--check", "--quiet", "-"], lf);
    assert_eq!((code(&o), o.stdout.as_slice()), (1, &b""[..]));
}

/// `terminology list` gives every bundled ConceptMap's URL with its source and target systems.
#[test]
fn terminology_list_shows_every_conceptmap() {
    let urls = phiward::terminology::conceptmap::bundled_urls();
    assert!(urls.len() > 10);
    let text = String::from_utf8_lossy(&run(&["terminology", "list"]).stdout).into_owned();
    let o = run(&["terminology", "list", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let maps = v["conceptmaps"].as_array().expect("conceptmaps");
    assert_eq!(maps.len(), urls.len());
    for (url, m) in urls.iter().zip(maps) {
        assert!(text.contains(&format!("  {url}\n")), "{url} not listed");
        assert_eq!(m["url"], *url);
        let groups = m["groups"].as_array().expect("groups");
        assert!(!groups.is_empty(), "{url} has no systems");
        for g in groups {
            let (s, t) = (g["source"].as_str().unwrap_or(""), g["target"].as_str().unwrap_or(""));
            assert!(!s.is_empty() && !t.is_empty());
            assert!(text.contains(&format!("{s} -> {t}")), "{url}: {s} -> {t} not listed");
        }
    }
}

/// Every fixture, validated: no location is shortened (`...`), every FHIR finding has a line and
/// a column, every HL7 v2 finding on a segment has a line, no two findings of an input share a
/// fingerprint, and every failed record of a stream has its offset and kind.
#[test]
fn locations_over_every_fixture() {
    let mut files = files_under(&fixture("fhir"));
    files.extend(files_under(&fixture("hl7v2")));
    let mut checked = (0, 0);
    for file in files {
        let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
        let fhir = matches!(ext, "json" | "xml" | "ndjson");
        if !(fhir || matches!(ext, "hl7" | "mllp" | "txt")) || file.ends_with("manifest.json") {
            continue;
        }
        let mut args = vec!["validate", "--json"];
        if ext == "ndjson" {
            args.push("--ndjson");
        }
        let path = file.to_string_lossy().into_owned();
        args.push(&path);
        let o = run(&args);
        let mut fingerprints = BTreeSet::new();
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            if v.get("error").is_some() {
                assert!(v.get("offset").and_then(Value::as_u64).is_some(), "{path}: failed record without offset: {v}");
                assert!(v.get("kind").and_then(Value::as_str).is_some(), "{path}: failed record without kind: {v}");
                continue;
            }
            for f in v["findings"].as_array().into_iter().flatten() {
                let location = f["location"].as_str().unwrap_or("");
                assert!(!location.contains("..."), "{path}: shortened location {location}");
                let fp = f["fingerprint"].as_str().unwrap_or("");
                assert_eq!(fp.len(), 16, "{path}: {f}");
                assert!(fingerprints.insert(fp.to_owned()), "{path}: two findings share the fingerprint {fp}");
                if v["format"] == "fhir" {
                    checked.0 += 1;
                    assert!(f["line"].as_u64().is_some_and(|n| n >= 1), "{path}: FHIR finding without a line: {f}");
                    assert!(f["column"].as_u64().is_some_and(|n| n >= 1), "{path}: FHIR finding without a column: {f}");
                } else if location.contains('[')
                    && !location.contains('/')
                    && !f["code"].as_str().unwrap_or("").starts_with("BATCH_")
                {
                    // (The end-of-stream verdict of a batch, e.g. an unclosed one, has no
                    // record to place its findings in.)
                    checked.1 += 1;
                    assert!(f["line"].as_u64().is_some_and(|n| n >= 1), "{path}: HL7 v2 finding without a line: {f}");
                }
            }
        }
    }
    assert!(checked.0 > 100 && checked.1 > 100, "only {checked:?} findings checked");
}

/// Line and column point at the element: the unknown element of a fixture, in JSON and in XML.
#[test]
fn fhir_positions_point_at_the_element() {
    // A JSON element starts at its key (`"`), the root at `{`; an XML one at its start tag.
    for (file, needles) in
        [("fhir/invalid/unknown_element.json", ["\"", "{"]), ("fhir/invalid/xml_out_of_order.xml", ["<", "<"])]
    {
        let path = fixture(file);
        let text = std::fs::read_to_string(&path).expect("fixture");
        let o = run(&["validate", "--json", path.to_str().unwrap_or_default()]);
        let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        for f in v["findings"].as_array().into_iter().flatten() {
            let (line, column) = (f["line"].as_u64().unwrap_or(0) as usize, f["column"].as_u64().unwrap_or(0) as usize);
            let at: String = text.lines().nth(line - 1).unwrap_or("").chars().skip(column - 1).take(1).collect();
            assert!(needles.contains(&at.as_str()), "{file}: {f} does not point at an element ({at:?})");
        }
    }
}

/// Every record of a stream carries its byte offset in the input: where its message starts.
#[test]
fn stream_records_carry_their_offset() {
    for file in ["hl7v2/valid/multi_3msgs_cr.hl7", "hl7v2/valid/batch_fhs_bhs_3msgs.hl7"] {
        let path = fixture(file);
        let bytes = std::fs::read(&path).expect("fixture");
        for args in [&["validate", "--json"][..], &["inspect", "--json"], &["parse", "--json"]] {
            let mut args = args.to_vec();
            let p = path.to_string_lossy().into_owned();
            args.push(&p);
            let o = run(&args);
            let mut last = None;
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                let v: Value = serde_json::from_str(line).expect("JSON line");
                let offset = v["offset"].as_u64().unwrap_or_else(|| panic!("{file} {args:?}: no offset in {line}"));
                assert!(last.is_none_or(|l| offset > l), "{file}: offsets not increasing");
                let at = bytes.get(offset as usize..offset as usize + 3).unwrap_or_default();
                assert!(
                    matches!(at, b"MSH" | b"FHS" | b"BHS" | b"BTS" | b"FTS"),
                    "{file}: offset {offset} is no segment start"
                );
                last = Some(offset);
            }
            assert!(last.is_some(), "{file} {args:?}: no record");
        }
    }
}

/// `fmt` on a real terminal (a pseudo-terminal from util-linux `script`): LF line ends, so the
/// terminal's own CR LF shows one segment per line, never a bare CR that overwrites the line;
/// piped, CR (the standard).
#[test]
fn fmt_on_a_terminal_prints_one_segment_per_line() {
    let file = fixture("hl7v2/valid/v2.2_adt_a08.hl7");
    let piped = run(&["fmt", file.to_str().expect("utf-8 path")]);
    let segments = piped.stdout.iter().filter(|&&b| b == b'\r').count();
    assert!(segments > 1 && !piped.stdout.contains(&b'\n'), "piped: CR only");
    let command = format!("{} fmt {}", crate::common::bin().display(), file.display());
    // `script` is in util-linux (Debian: bsdutils, an essential package).
    let o = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("util-linux `script` runs fmt under a pseudo-terminal");
    assert!(o.status.success(), "fmt under a terminal exits 0");
    let out = &o.stdout;
    let bare_cr =
        out.windows(2).filter(|w| w[0] == b'\r' && w[1] != b'\n').count() + usize::from(out.last() == Some(&b'\r'));
    assert_eq!(bare_cr, 0, "no bare CR on a terminal");
    assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), segments, "one line per segment");
}
