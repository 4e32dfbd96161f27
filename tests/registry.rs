//! DIAGNOSTICS.md is the registry of codes: every code in `Code::ALL` has a row (code, severity,
//! meaning, fixture), every row names a real code with its real default severity, and every
//! fixture named exists.

use std::collections::BTreeMap;

use phiward::diag::Code;

use crate::common::root;

fn rows() -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(root().join("DIAGNOSTICS.md")).expect("DIAGNOSTICS.md");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `CODE` | severity | meaning | fixture |
        if cells.len() < 6 || !cells[1].starts_with('`') {
            continue;
        }
        let code = cells[1].trim_matches('`').to_owned();
        if code.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
            let prev = out.insert(code.clone(), (cells[2].to_owned(), cells[4].to_owned()));
            assert!(prev.is_none(), "{code} registered twice");
        }
    }
    out
}

#[test]
fn every_code_is_registered_with_its_severity() {
    let rows = rows();
    for code in Code::ALL {
        let Some((sev, _)) = rows.get(code.as_str()) else {
            panic!("{} is not registered in DIAGNOSTICS.md", code.as_str());
        };
        assert_eq!(sev, code.default_severity().as_str(), "{}: severity differs", code.as_str());
    }
}

#[test]
fn every_registered_code_exists_and_fixtures_exist() {
    for (name, (_, fixture)) in rows() {
        assert!(Code::from_name(&name).is_some(), "DIAGNOSTICS.md registers unknown code {name}");
        for f in fixture.split(',').map(|f| f.trim().trim_matches('`')).filter(|f| !f.is_empty() && *f != "-") {
            if f.starts_with("fixtures/") {
                assert!(root().join(f).exists(), "{name}: fixture {f} does not exist");
            }
        }
    }
}

#[test]
fn every_fixture_triggers_its_code() {
    let mut checked = 0;
    for (name, (_, fixture)) in rows() {
        let f = fixture.trim().trim_matches('`');
        if !f.starts_with("fixtures/") {
            continue;
        }
        let path = root().join(f);
        let mut args = vec!["validate", "--json"];
        // Fixtures without a detectable signature are run as what their folder says.
        if f.contains("/hl7v2/") && f.contains("no_msh") {
            args.extend(["--format", "hl7"]);
        }
        let p = path.to_string_lossy().into_owned();
        args.push(&p);
        let o = crate::common::run(&args);
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(
            all.contains(&format!("\"{name}\""))
                || all.contains(&format!("{name}:"))
                || all.contains(&format!("({name} ")),
            "{f} does not trigger {name}: {all}"
        );
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} fixtures checked");
}
