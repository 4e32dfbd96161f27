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

/// Architecture Invariant: only `ops` grants the disclosure capability (and the fuzz harnesses,
/// which stand in for ops).
#[test]
fn only_ops_grants_disclosure() {
    let bad = offenders("Disclosure::grant(", &["src/ops/", "src/phi.rs", "src/internal/"]);
    assert!(bad.is_empty(), "Disclosure granted outside ops: {bad:?}");
}

/// Architecture Invariant: the only way from a `Phi` to output bytes is a data-channel writer:
/// `expose_value` is called only by the format writers (`write.rs`, `fmt.rs`), ops (comparing
/// canonical bytes), the operator door in the CLI, the MCP result builder, and the converter's
/// one reader (`convert/hl7v2_fhir/read.rs`, whose output is the Bundle on the data channel).
#[test]
fn only_data_channel_writers_expose_values() {
    let allowed = [
        "src/phi.rs",
        "src/ops/",
        "src/cli/mod.rs",
        // `map-codes --scan` writes the message's codings (the caller's own) on the data channel.
        "src/terminology/scan.rs",
        "src/internal/",
        "src/mcp/",
        // The redaction engines are data-channel writers: they write a message under a policy.
        "src/policy/hl7v2.rs",
        "src/policy/fhir.rs",
        // The converter writes the Bundle (the data channel) from the message's values.
        "src/convert/hl7v2_fhir/read.rs",
    ];
    let mut bad = Vec::new();
    for (path, text) in sources() {
        let is_writer = path.starts_with("src/formats/") && (path.ends_with("/write.rs") || path.ends_with("/fmt.rs"));
        if is_writer || allowed.iter().any(|a| path == *a || (a.ends_with('/') && path.starts_with(a))) {
            continue;
        }
        for (n, line) in code_lines(&text) {
            if line.contains(".expose_value(") {
                bad.push(format!("{path}:{}", n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "values exposed outside the data-channel writers: {bad:?}");
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

/// Architecture Invariant: raw access to a value's bytes (`PhiBytes::raw`) stays inside the
/// parsers (`formats/`), `phi`, and `ops` (reading in-memory input).
#[test]
fn raw_bytes_stay_in_parsers() {
    let mut bad = Vec::new();
    for (path, text) in sources() {
        if path.starts_with("src/formats/")
            || path == "src/phi.rs"
            || path.starts_with("src/ops/")
            || path.starts_with("src/internal/")
        {
            continue;
        }
        for (n, line) in code_lines(&text) {
            if line.contains(".raw()") {
                bad.push(format!("{path}:{}", n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "raw value access outside parsers: {bad:?}");
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
