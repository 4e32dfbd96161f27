//! The Architecture Invariants of ARCHITECTURE.md, checked on the source text.
//!
//! Each test names the invariant it enforces. They read `src/` as text: cheap, and they fail the
//! moment a change crosses a boundary.

use std::path::{Path, PathBuf};

use crate::common::{files_under, root};

fn sources() -> Vec<(String, String)> {
    files_under(&root().join("src"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| (rel(&p), std::fs::read_to_string(&p).unwrap_or_default()))
        .collect()
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).map(PathBuf::from).unwrap_or_default().to_string_lossy().replace('\\', "/")
}

/// Lines of code, without comments and doc comments.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| {
        let t = l.trim_start();
        !t.starts_with("//")
    })
}

fn offenders(pattern: &str, allowed: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in sources() {
        if allowed.iter().any(|a| path == *a || (a.ends_with('/') && path.starts_with(a))) {
            continue;
        }
        for (n, line) in code_lines(&text) {
            if line.contains(pattern) {
                out.push(format!("{path}:{}", n + 1));
            }
        }
    }
    out
}

/// The access points that read a message value or grant the capability to: clippy's
/// `disallowed-methods` (clippy.toml) refuses them everywhere but at call sites marked
/// `#[expect(clippy::disallowed_methods, reason = ...)]`, and CI runs clippy with `-D warnings`.
const ACCESS_POINTS: [&str; 5] = [
    "phiward::phi::Disclosure::grant",
    "phiward::phi::Phi::expose_value",
    "phiward::phi::PhiBytes::expose_value",
    "phiward::phi::PhiBytes::raw",
    "phiward::formats::fhir::model::Document::value",
];

/// Architecture Invariant: every access point to a value is in clippy's `disallowed-methods`.
#[test]
fn access_points_are_disallowed_methods() {
    let config = std::fs::read_to_string(root().join("clippy.toml")).expect("clippy.toml");
    for path in ACCESS_POINTS {
        assert!(config.contains(&format!("path = \"{path}\"")), "{path} is not a disallowed method in clippy.toml");
    }
    let phi = std::fs::read_to_string(root().join("src/phi.rs")).expect("phi.rs");
    for method in ["fn grant(", "fn expose_value(", "fn raw("] {
        assert!(phi.contains(method), "phi.rs no longer has {method}: update clippy.toml and this test");
    }
}

/// Architecture Invariant: the call sites allowed to read a value (marked with an `expect` of
/// `clippy::disallowed_methods`) are where the boundary says: the formats' parsers, validators
/// and data-channel writers, `ops` (which grants the disclosure), the redaction engines, the
/// converter's one reader, the `map-codes` scan, the operator's door in the CLI, and the fuzz
/// harnesses, which stand in for ops. Nothing in `mcp`, `diag`, `error`, logging or the CLI's
/// output module.
#[test]
fn value_access_is_marked_only_where_allowed() {
    let allowed = [
        "src/formats/",
        "src/ops/",
        "src/policy/hl7v2.rs",
        "src/policy/fhir.rs",
        "src/policy/x12.rs",
        "src/policy/astm.rs",
        "src/policy/dicom.rs",
        "src/policy/ncpdp.rs",
        "src/policy/ccda.rs",
        "src/policy/ncpdp_script.rs",
        "src/convert/hl7v2_fhir/read.rs",
        "src/terminology/scan.rs",
        "src/cli/mod.rs",
        "src/internal/",
    ];
    let mut marked = 0;
    let mut bad = Vec::new();
    for (path, text) in sources() {
        for (n, line) in code_lines(&text) {
            if line.contains("clippy::disallowed_methods") {
                marked += 1;
                if !allowed.iter().any(|a| path == *a || (a.ends_with('/') && path.starts_with(a))) {
                    bad.push(format!("{path}:{}", n + 1));
                }
            }
        }
        let squeezed: String = text.split_whitespace().collect();
        assert!(
            !squeezed.contains("allow(clippy::disallowed_methods"),
            "{path}: an `allow` hides a site; use `expect`"
        );
    }
    assert!(bad.is_empty(), "value access marked outside the allowed places: {bad:?}");
    assert!(marked > 20, "{marked} marked sites: the marks were removed?");
}

/// Architecture Invariant: only `ops` grants the disclosure capability (and the fuzz harnesses,
/// which stand in for ops).
#[test]
fn only_ops_grants_disclosure() {
    let bad = offenders("Disclosure::grant(", &["src/ops/", "src/phi.rs", "src/internal/"]);
    assert!(bad.is_empty(), "Disclosure granted outside ops: {bad:?}");
}

/// Architecture Invariant: diagnostics and operational errors cannot reach a value: `diag.rs`
/// and `error.rs` never name `Phi`, and `Diagnostic` is `Copy + 'static` (checked at compile time
/// in diag.rs).
#[test]
fn diagnostics_and_errors_never_touch_values() {
    for file in ["src/diag.rs", "src/error.rs"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        for (n, line) in code_lines(&text) {
            assert!(!line.contains("Phi"), "{file}:{} names Phi", n + 1);
            assert!(!line.contains("String"), "{file}:{} holds a String", n + 1);
        }
    }
}

/// Architecture Invariant: only the output module (and the MCP stdio transport) print.
#[test]
fn only_the_output_module_prints() {
    for mac in ["println!", "eprintln!", "print!(", "eprint!(", "dbg!("] {
        let bad = offenders(mac, &["src/cli/output.rs"]);
        assert!(bad.is_empty(), "{mac} outside the output module: {bad:?}");
    }
}

/// Architecture Invariant: `formats/` knows nothing of `ops`, `cli`, `mcp`, `policy`, `convert`.
#[test]
fn formats_do_not_depend_on_front_doors() {
    let mut bad = Vec::new();
    for (path, text) in sources() {
        if !path.starts_with("src/formats/") {
            continue;
        }
        for (n, line) in code_lines(&text) {
            for m in ["crate::ops", "crate::cli", "crate::mcp", "crate::policy", "crate::convert"] {
                if line.contains(m) {
                    bad.push(format!("{path}:{} uses {m}", n + 1));
                }
            }
        }
    }
    assert!(bad.is_empty(), "formats/ crosses a boundary: {bad:?}");
}

/// Architecture Invariant: `Phi` implements neither `Display` nor `Serialize` nor `Clone`
/// (also a compile-time assertion in phi.rs; this catches a derive or impl added elsewhere).
#[test]
fn phi_has_no_display_or_serialize() {
    for (path, text) in sources() {
        for (n, line) in code_lines(&text) {
            let l = line.replace(' ', "");
            for bad in ["DisplayforPhi", "SerializeforPhi", "CloneforPhi<"] {
                assert!(!l.contains(bad), "{path}:{} implements {bad}", n + 1);
            }
        }
    }
}

/// Architecture Invariant: every source file opens with a `//!` doc.
#[test]
fn every_file_has_a_module_doc() {
    for (path, text) in sources() {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
        assert!(first.starts_with("//!"), "{path} does not open with a //! doc");
    }
}

/// Architecture Invariant: phiward has no network code: terminology (and everything else) is
/// answered from data on this machine.
#[test]
fn no_network_code() {
    for pattern in ["std::net", "TcpStream", "UdpSocket", "reqwest", "hyper::", "ureq"] {
        let bad = offenders(pattern, &[]);
        assert!(bad.is_empty(), "{pattern} in {bad:?}");
    }
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap_or_default();
    for dep in ["reqwest", "hyper", "ureq", "curl"] {
        assert!(!manifest.contains(&format!("\n{dep} ")), "{dep} in Cargo.toml");
    }
}

/// Architecture Invariant: `mcp` knows nothing of `cli` (the CLI wires the server up in
/// `cli/mcp.rs`); the two front doors meet only in `ops`.
#[test]
fn mcp_does_not_depend_on_cli() {
    let mut bad = Vec::new();
    for (path, text) in sources() {
        if !path.starts_with("src/mcp/") {
            continue;
        }
        for (n, line) in code_lines(&text) {
            if line.contains("crate::cli") {
                bad.push(format!("{path}:{}", n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "mcp uses cli: {bad:?}");
}
