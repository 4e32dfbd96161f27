//! The terminology commands: `find-equivalent`, `map-codes`, `terminology list` and
//! `terminology import`. Resolves their arguments, runs them through [`crate::terminology`], and
//! prints through [`super::output`] (JSON with `--json`, else a short text rendering).
//!
//! What it does not do: log or print a term, a code or a file name anywhere but stdout (the data
//! channel, for what the caller asked for); failures are `phiward: CODE: fixed message`.

use std::io::Read;

use serde_json::Value;

use crate::diag::Code;
use crate::error::{exit, exit_code_for};
use crate::terminology::find::{self, Query};
use crate::terminology::{self as term, Catalog};

use super::args::{FindArgs, ImportArgs, ListArgs, MapArgs};
use super::output;

fn fail(code: Code) -> u8 {
    output::failure(code, None);
    exit_code_for(code)
}

fn emit(value: &Value, json: bool, human: impl FnOnce(&Value) -> String) -> Result<(), u8> {
    let r = if json { output::json_value(value, true) } else { output::text(&human(value)) };
    r.map_err(|_| fail(Code::CLI_OUTPUT_FAILED))
}

/// Reads the term from standard input (`-`), bounded; a trailing line break is dropped.
fn term_from_stdin() -> Result<String, Code> {
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(find::MAX_TERM_BYTES as u64 + 2)
        .read_to_end(&mut buf)
        .map_err(|_| Code::CLI_NO_INPUT)?;
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    if buf.len() > find::MAX_TERM_BYTES {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    String::from_utf8(buf).map_err(|_| Code::CLI_USAGE)
}

/// `phiward find-equivalent`.
pub fn find(a: FindArgs) -> u8 {
    let term = if a.term == "-" {
        match term_from_stdin() {
            Ok(t) => t,
            Err(code) => return fail(code),
        }
    } else {
        a.term
    };
    if term.len() > find::MAX_TERM_BYTES {
        return fail(Code::CLI_INPUT_TOO_LARGE);
    }
    let query = Query {
        term,
        limit: usize::from(a.limit),
        source: a.source.map(|s| s.system()),
        targets: a.target.iter().map(|s| s.system()).collect(),
        include_deprecated: a.include_deprecated,
    };
    let catalog = Catalog::new(term::data_dir(a.data_dir.as_deref()));
    let (value, any) = find::find_equivalent(&query, &catalog);
    if let Err(e) = emit(&value, a.json, human_find) {
        return e;
    }
    if any { exit::OK } else { exit::INVALID }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn human_find(v: &Value) -> String {
    let mut out = String::new();
    let empty = serde_json::Map::new();
    let results = v.get("results").and_then(Value::as_object).unwrap_or(&empty);
    for name in v.get("searched_terminologies").and_then(Value::as_array).into_iter().flatten() {
        let name = name.as_str().unwrap_or("");
        let Some(r) = results.get(name) else { continue };
        if let Some(e) = r.get("error").and_then(Value::as_str) {
            out.push_str(&format!("{name}: {e}\n")); // value-free: our fixed "not available offline" text
            continue;
        }
        let items = r.get("items").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if items.is_empty() {
            out.push_str(&format!("{name}: no match\n"));
            continue;
        }
        out.push_str(&format!("{name}:\n"));
        for it in items {
            let score = it.get("match_score").and_then(Value::as_f64).unwrap_or(0.0);
            let rank = it.get("rank").and_then(Value::as_u64).unwrap_or(0);
            out.push_str(&format!("  #{rank:<3} {score:.3}  {:<12} {}", s(it, "code"), s(it, "title")));
            if let Some(l) = it.get("matched_label").and_then(Value::as_str) {
                out.push_str(&format!("  (matched: {l})"));
            }
            out.push('\n');
        }
    }
    for g in v.get("groups").and_then(Value::as_array).into_iter().flatten() {
        let members: Vec<String> = g
            .get("members")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|m| format!("{}:{}", s(m, "terminology"), s(m, "code")))
            .collect();
        out.push_str(&format!("same name: {}\n", members.join(" = ")));
    }
    out.push_str("Lexical ranking only (docs/terminology.md); licences: `phiward terminology list`.\n");
    out
}

/// `phiward terminology list`.
pub fn list(a: ListArgs) -> u8 {
    let catalog = Catalog::new(term::data_dir(a.data_dir.as_deref()));
    let value = term::listing(&catalog);
    match emit(&value, a.json, human_list) {
        Ok(()) => exit::OK,
        Err(e) => e,
    }
}

fn human_list(v: &Value) -> String {
    let mut out = String::from("find-equivalent code systems:\n");
    for t in v.get("terminologies").and_then(Value::as_array).into_iter().flatten() {
        out.push_str(&format!("  {:<8} {}\n", s(t, "terminology"), s(t, "origin")));
    }
    out.push_str(&format!("data folder: {}\n", v.get("data_dir").and_then(Value::as_str).unwrap_or("(none)")));
    for d in v.get("datasets").and_then(Value::as_array).into_iter().flatten() {
        let concepts = d.get("concepts").and_then(Value::as_u64).unwrap_or(0);
        out.push_str(&format!(
            "\n{} ({}): {}\n  vintage: {}\n  entries: {concepts}\n  source: {}\n  licence: {}\n  citation: {}\n",
            s(d, "dataset"),
            s(d, "origin"),
            s(d, "title"),
            s(d, "vintage"),
            s(d, "source_url"),
            s(d, "license"),
            s(d, "citation"),
        ));
        if let Some(n) = d.get("notice").and_then(Value::as_str) {
            out.push_str(&format!("  notice: {n}\n"));
        }
    }
    let maps = v.get("conceptmaps").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    out.push_str(&format!("\nbundled ConceptMaps ({}; `map-codes --map URL`):\n", maps.len()));
    for m in maps {
        out.push_str(&format!("  {}\n", s(m, "url")));
        for g in m.get("groups").and_then(Value::as_array).into_iter().flatten() {
            out.push_str(&format!("    {} -> {}\n", s(g, "source"), s(g, "target")));
        }
    }
    out
}

/// `phiward terminology import`.
pub fn import(a: ImportArgs) -> u8 {
    let Some(dir) = term::data_dir(a.data_dir.as_deref()) else {
        return fail(Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE);
    };
    match term::import::import(a.system.system(), &a.file, &dir, a.vintage.as_deref()) {
        Ok(summary) => match output::text(&format!(
            "imported {}: {} concepts ({} deprecated)\n",
            s(&summary, "dataset"),
            summary.get("concepts").and_then(Value::as_u64).unwrap_or(0),
            summary.get("deprecated").and_then(Value::as_u64).unwrap_or(0),
        )) {
            Ok(()) => exit::OK,
            Err(_) => fail(Code::CLI_OUTPUT_FAILED),
        },
        Err(code) => fail(code),
    }
}

/// `phiward map-codes`.
pub fn map_codes(a: MapArgs) -> u8 {
    use crate::terminology::conceptmap::{self, Coding, ConceptMap};
    let map = match ConceptMap::load(&a.map) {
        Ok(m) => m,
        Err(code) => return fail(code),
    };
    let max = usize::try_from(a.limits.max_input_bytes).unwrap_or(usize::MAX);
    let codings = match (&a.code, &a.system, &a.batch, &a.scan) {
        (Some(code), Some(system), None, None) => {
            vec![Coding { location: "-".to_owned(), system: system.clone(), code: code.clone() }]
        }
        (None, None, Some(batch), None) => {
            let bytes = if batch.as_os_str() == "-" {
                let mut buf = Vec::new();
                match std::io::stdin().lock().take(max as u64 + 1).read_to_end(&mut buf) {
                    Ok(_) if buf.len() <= max => buf,
                    Ok(_) => return fail(Code::CLI_INPUT_TOO_LARGE),
                    Err(_) => return fail(Code::CLI_NO_INPUT),
                }
            } else {
                match term::import::read_bounded_bytes(batch, max) {
                    Ok(b) => b,
                    Err(code) => return fail(code),
                }
            };
            match conceptmap::codings_from_ndjson(&bytes) {
                Ok(c) => c,
                Err(code) => return fail(code),
            }
        }
        (None, None, None, Some(scan)) => match crate::ops::scan_codings(scan, &a.limits.limits()) {
            Ok(c) => c,
            Err(code) => return fail(code),
        },
        _ => return fail(Code::CLI_USAGE),
    };
    let (value, all_mapped) = conceptmap::map_codes(&map, &codings);
    if let Err(e) = emit(&value, a.json, human_map) {
        return e;
    }
    if all_mapped { exit::OK } else { exit::INVALID }
}

fn human_map(v: &Value) -> String {
    let mut out = String::new();
    for r in v.get("results").and_then(Value::as_array).into_iter().flatten() {
        let targets: Vec<String> = r
            .get("targets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| format!("{}|{} ({})", s(t, "system"), s(t, "code"), s(t, "equivalence")))
            .collect();
        let to = if targets.is_empty() { "UNMAPPED".to_owned() } else { targets.join(", ") };
        out.push_str(&format!("{}  {}|{} -> {to}\n", s(r, "location"), s(r, "system"), s(r, "code")));
    }
    out.push_str(&format!(
        "{} mapped, {} unmapped\n",
        v.get("mapped").and_then(Value::as_u64).unwrap_or(0),
        v.get("unmapped").and_then(Value::as_u64).unwrap_or(0)
    ));
    out
}
