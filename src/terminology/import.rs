//! Importers: files the user obtained under their own licence, converted into the index line
//! format ([`super::index`]) in the data folder, `<data dir>/<system>/index.tsv`, with a
//! `manifest.json` (licence, citation, vintage, sha256 of the source, counts).
//!
//! - `rxnorm`: `RXNCONSO.RRF` (pipe-delimited, 18 columns): atoms with `SAB=RXNORM`, `LAT=ENG`;
//!   one concept per RXCUI (numeric order), titled by its preferred term type (SCD, SBD, GPCK,
//!   BPCK, PSN, IN, PIN, MIN, BN, SCDC, SCDF, SCDG, DF, other), the other names as synonyms;
//!   deprecated when every atom is suppressed (`SUPPRESS` O, Y or E).
//! - `loinc`: `Loinc.csv` (quoted CSV with a header): `LOINC_NUM`, titled `LONG_COMMON_NAME`,
//!   synonyms `SHORTNAME`, `DisplayName`, `CONSUMER_NAME` when present; deprecated when `STATUS`
//!   is `DEPRECATED`.
//! - `icd11`: the WHO MMS linearization tab-separated file (`LinearizationMiniOutput-MMS-en.txt`,
//!   header with `Code` and `Title`): rows with a code, the title's depth dashes removed.
//! - `mesh`: the MeSH descriptor file, XML (`desc20XX.xml`: `DescriptorUI`, `DescriptorName`,
//!   every `Term`) or ASCII (`d20XX.bin`: `UI`, `MH`, `ENTRY`/`PRINT ENTRY`).
//!
//! The manifest is removed first and written last: an interrupted import leaves no manifest, and
//! a folder without one is not loaded. No temporary files.
//!
//! What it does not do: download anything, or keep the source file (only its sha256).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::System;
use crate::diag::Code;

/// The largest source file accepted (bytes).
pub const MAX_SOURCE_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// The longest line of a line-based source.
const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The largest XML source read into memory.
const MAX_XML_BYTES: usize = 1024 * 1024 * 1024;

/// A concept being imported.
struct Row {
    code: String,
    deprecated: bool,
    title: String,
    synonyms: Vec<String>,
}

/// Imports `file` as `system` into `dir`; returns a value-free summary (dataset, concepts,
/// deprecated).
pub fn import(system: System, file: &Path, dir: &Path, vintage: Option<&str>) -> Result<Value, Code> {
    let meta = std::fs::metadata(file).map_err(|e| crate::error::from_read_io(&e).code())?;
    if meta.is_dir() {
        return Err(Code::CLI_NO_INPUT);
    }
    if meta.len() > MAX_SOURCE_BYTES {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    let f = std::fs::File::open(file).map_err(|e| crate::error::from_read_io(&e).code())?;
    let mut reader = Hashing { inner: f, hash: Sha256::new() };
    let rows = match system {
        System::Rxnorm => rxnorm(&mut reader)?,
        System::Loinc => loinc(&mut reader)?,
        System::Icd11 => icd11(&mut reader)?,
        System::Mesh => mesh(&mut reader)?,
        System::Icd10cm => return Err(Code::CLI_USAGE),
    };
    // Hash what was not read (a reader may stop early).
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(|_| Code::CLI_NO_INPUT)?;
    let sha = reader.hash.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>();
    if rows.is_empty() {
        return Err(Code::TERMINOLOGY_FILE_INVALID);
    }
    let deprecated = rows.iter().filter(|r| r.deprecated).count();
    let target = dir.join(system.as_str());
    std::fs::create_dir_all(&target).map_err(|_| Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE)?;
    let manifest_path = target.join("manifest.json");
    match std::fs::remove_file(&manifest_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return Err(Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE),
    }
    let _ = std::fs::remove_file(target.join("index.bin"));
    write_index(&target.join("index.tsv"), system, &rows).map_err(|_| Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE)?;
    // The compact form, built once here so that every later search loads it without
    // tokenizing (`index.bin`; a search falls back to the text when it is missing or stale).
    let text =
        read_bounded(&target.join("index.tsv"), super::index::MAX_INDEX_BYTES).ok_or(Code::CLI_INPUT_TOO_LARGE)?;
    let index = super::index::Index::build(text)?;
    std::fs::write(target.join("index.bin"), index.compact()).map_err(|_| Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE)?;
    let (title, source_url, license, citation) = texts(system);
    let mut manifest = json!({
        "dataset": system.as_str(),
        "title": title,
        "system": system.fhir_system(),
        "package": Value::Null,
        "source_url": source_url,
        "source_sha256": sha,
        "vintage": vintage.unwrap_or("unknown"),
        "retrieved_at": today_utc(),
        "license": license,
        "citation": citation,
        "concepts": rows.len(),
        "deprecated": deprecated,
    });
    if system == System::Loinc {
        manifest["notice"] = Value::from(LOINC_NOTICE);
    }
    let text = serde_json::to_string_pretty(&manifest).map_err(|_| Code::CLI_INTERNAL)?;
    std::fs::write(&manifest_path, text + "\n").map_err(|_| Code::TERMINOLOGY_DATA_DIR_UNAVAILABLE)?;
    Ok(json!({"dataset": system.as_str(), "concepts": rows.len(), "deprecated": deprecated}))
}

/// The LOINC notice, shown with any LOINC content.
pub const LOINC_NOTICE: &str = "This material contains content from LOINC (http://loinc.org). LOINC is copyright (c) \
    Regenstrief Institute, Inc. and the Logical Observation Identifiers Names and Codes (LOINC) Committee and is \
    available at no cost under the license at http://loinc.org/license. LOINC(R) is a registered United States \
    trademark of Regenstrief Institute, Inc.";

fn texts(system: System) -> (&'static str, &'static str, String, &'static str) {
    match system {
        System::Rxnorm => (
            "RxNorm (imported RXNCONSO.RRF, SAB=RXNORM)",
            "https://www.nlm.nih.gov/research/umls/rxnorm/",
            "RxNorm is produced by the U.S. National Library of Medicine; the RXNORM source is used under the UMLS \
             Metathesaurus License (https://www.nlm.nih.gov/research/umls/rxnorm/docs/termsofservice.html)."
                .to_owned(),
            "RxNorm, U.S. National Library of Medicine, Bethesda, MD. https://www.nlm.nih.gov/research/umls/rxnorm/",
        ),
        System::Loinc => (
            "LOINC (imported Loinc.csv)",
            "https://loinc.org",
            format!("LOINC License (https://loinc.org/license). {LOINC_NOTICE}"),
            "LOINC, Regenstrief Institute, Inc. https://loinc.org",
        ),
        System::Icd11 => (
            "ICD-11 for Mortality and Morbidity Statistics (imported WHO linearization)",
            "https://icd.who.int",
            "ICD-11 is copyright (c) World Health Organization, licensed under CC BY-ND 3.0 IGO \
             (https://icd.who.int/en/docs/icd11-license.pdf)."
                .to_owned(),
            "World Health Organization. International Classification of Diseases, Eleventh Revision (ICD-11). \
             https://icd.who.int",
        ),
        System::Mesh | System::Icd10cm => (
            "Medical Subject Headings (imported MeSH descriptor file)",
            "https://www.nlm.nih.gov/mesh/meshhome.html",
            "MeSH is produced by the U.S. National Library of Medicine and used under the NLM terms and conditions \
             (https://www.nlm.nih.gov/databases/download/terms_and_conditions.html)."
                .to_owned(),
            "Courtesy of the U.S. National Library of Medicine. Medical Subject Headings. \
             https://www.nlm.nih.gov/mesh/meshhome.html",
        ),
    }
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

fn clean(text: &str) -> String {
    text.split(['\t', '\n', '\r']).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

fn write_index(path: &Path, system: System, rows: &[Row]) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::new(f);
    writeln!(
        w,
        "# phiward terminology index: {} (imported). code<TAB>flag(a|d)<TAB>title[<TAB>synonym]...",
        system.as_str()
    )?;
    for r in rows {
        write!(w, "{}\t{}\t{}", clean(&r.code), if r.deprecated { "d" } else { "a" }, clean(&r.title))?;
        let mut seen: Vec<&str> = vec![&r.title];
        for s in &r.synonyms {
            if !s.is_empty() && !seen.contains(&s.as_str()) {
                seen.push(s);
                write!(w, "\t{}", clean(s))?;
            }
        }
        writeln!(w)?;
    }
    w.flush()
}

/// Calls `f` on every line (without its terminator); a line longer than the limit fails.
fn lines(reader: &mut dyn Read, mut f: impl FnMut(&str) -> Result<(), Code>) -> Result<(), Code> {
    let mut r = BufReader::with_capacity(256 * 1024, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut r).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf).map_err(|_| Code::CLI_NO_INPUT)?;
        if n == 0 {
            return Ok(());
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(Code::TERMINOLOGY_FILE_INVALID);
        }
        while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            buf.pop();
        }
        let line = std::str::from_utf8(&buf).map_err(|_| Code::TERMINOLOGY_FILE_INVALID)?;
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        f(line)?;
    }
}

fn rxnorm(reader: &mut dyn Read) -> Result<Vec<Row>, Code> {
    const RANK: [&str; 14] =
        ["SCD", "SBD", "GPCK", "BPCK", "PSN", "IN", "PIN", "MIN", "BN", "SCDC", "SCDF", "SCDG", "DF", "SY"];
    // RXCUI -> (names with their rank, all suppressed)
    let mut concepts: std::collections::BTreeMap<u64, (Vec<(usize, String)>, bool)> = Default::default();
    let mut seen_any = false;
    lines(reader, |line| {
        if line.is_empty() {
            return Ok(());
        }
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 18 {
            return Err(Code::TERMINOLOGY_FILE_INVALID);
        }
        seen_any = true;
        let (rxcui, lat, sab, tty, name, suppress) = (f[0], f[1], f[11], f[12], f[14], f[16]);
        if sab != "RXNORM" || lat != "ENG" || name.is_empty() {
            return Ok(());
        }
        let Ok(cui) = rxcui.parse::<u64>() else { return Err(Code::TERMINOLOGY_FILE_INVALID) };
        let rank = RANK.iter().position(|t| *t == tty).unwrap_or(RANK.len());
        let e = concepts.entry(cui).or_insert_with(|| (Vec::new(), true));
        e.0.push((rank, name.to_owned()));
        e.1 &= matches!(suppress, "O" | "Y" | "E");
        Ok(())
    })?;
    if !seen_any {
        return Err(Code::TERMINOLOGY_FILE_INVALID);
    }
    Ok(concepts
        .into_iter()
        .map(|(cui, (mut names, suppressed))| {
            names.sort_by_key(|(r, _)| *r);
            let mut names = names.into_iter().map(|(_, n)| n);
            let title = names.next().unwrap_or_default();
            Row { code: cui.to_string(), deprecated: suppressed, title, synonyms: names.collect() }
        })
        .collect())
}

/// Splits one CSV record (RFC 4180 quoting; no line breaks inside a field).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => out.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    out.push(field);
    out
}

fn loinc(reader: &mut dyn Read) -> Result<Vec<Row>, Code> {
    let mut header: Option<Vec<String>> = None;
    let mut cols = (0usize, 0usize, None, Vec::new());
    let mut rows = Vec::new();
    lines(reader, |line| {
        if line.is_empty() {
            return Ok(());
        }
        let f = csv_fields(line);
        let Some(h) = &header else {
            let pos = |name: &str| f.iter().position(|c| c == name);
            let (Some(num), Some(long)) = (pos("LOINC_NUM"), pos("LONG_COMMON_NAME")) else {
                return Err(Code::TERMINOLOGY_FILE_INVALID);
            };
            let syn = ["SHORTNAME", "DisplayName", "CONSUMER_NAME"].iter().filter_map(|n| pos(n)).collect();
            cols = (num, long, pos("STATUS"), syn);
            header = Some(f);
            return Ok(());
        };
        let _ = h;
        let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
        let (code, title) = (get(cols.0), get(cols.1));
        if code.is_empty() || title.is_empty() {
            return Ok(());
        }
        let deprecated = cols.2.is_some_and(|i| get(i) == "DEPRECATED");
        let synonyms = cols.3.iter().map(|i| get(*i).to_owned()).collect();
        rows.push(Row { code: code.to_owned(), deprecated, title: title.to_owned(), synonyms });
        Ok(())
    })?;
    Ok(rows)
}

fn icd11(reader: &mut dyn Read) -> Result<Vec<Row>, Code> {
    let mut cols: Option<(usize, usize)> = None;
    let mut rows = Vec::new();
    lines(reader, |line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let f: Vec<&str> = line.split('\t').collect();
        let Some((code_i, title_i)) = cols else {
            let pos = |name: &str| f.iter().position(|c| c.trim().trim_matches('"') == name);
            let (Some(c), Some(t)) = (pos("Code"), pos("Title")) else {
                return Err(Code::TERMINOLOGY_FILE_INVALID);
            };
            cols = Some((c, t));
            return Ok(());
        };
        let code = f.get(code_i).map_or("", |s| s.trim().trim_matches('"'));
        let title = f.get(title_i).map_or("", |s| s.trim().trim_matches('"').trim_start_matches(['-', ' ']));
        if !code.is_empty() && !title.is_empty() {
            rows.push(Row { code: code.to_owned(), deprecated: false, title: title.to_owned(), synonyms: Vec::new() });
        }
        Ok(())
    })?;
    Ok(rows)
}

fn mesh(reader: &mut dyn Read) -> Result<Vec<Row>, Code> {
    let mut text = Vec::new();
    reader.take(MAX_XML_BYTES as u64 + 1).read_to_end(&mut text).map_err(|_| Code::CLI_NO_INPUT)?;
    if text.len() > MAX_XML_BYTES {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    let text = String::from_utf8(text).map_err(|_| Code::TERMINOLOGY_FILE_INVALID)?;
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('<') { Ok(mesh_xml(body)) } else { mesh_ascii(body) }
}

fn mesh_ascii(text: &str) -> Result<Vec<Row>, Code> {
    let mut rows = Vec::new();
    let mut cur: Option<Row> = None;
    let flush = |cur: &mut Option<Row>, rows: &mut Vec<Row>| {
        if let Some(r) = cur.take().filter(|r| !r.code.is_empty() && !r.title.is_empty()) {
            rows.push(r);
        }
    };
    for line in text.lines() {
        if line.trim() == "*NEWRECORD" {
            flush(&mut cur, &mut rows);
            cur = Some(Row { code: String::new(), deprecated: false, title: String::new(), synonyms: Vec::new() });
            continue;
        }
        let (Some(r), Some((k, v))) = (cur.as_mut(), line.split_once(" = ")) else { continue };
        match k.trim() {
            "UI" => r.code = v.trim().to_owned(),
            "MH" => r.title = v.trim().to_owned(),
            "ENTRY" | "PRINT ENTRY" => r.synonyms.push(v.split('|').next().unwrap_or("").trim().to_owned()),
            _ => {}
        }
    }
    flush(&mut cur, &mut rows);
    if rows.is_empty() {
        return Err(Code::TERMINOLOGY_FILE_INVALID);
    }
    Ok(rows)
}

fn unescape_xml(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// The text of the first `<tag>...</tag>` in `s`, and the rest after it.
fn element<'a>(s: &'a str, tag: &str) -> Option<(&'a str, &'a str)> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = s.find(&open)? + open.len();
    let end = start + s[start..].find(&close)?;
    Some((&s[start..end], &s[end + close.len()..]))
}

fn mesh_xml(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<DescriptorRecord") {
        let after = &rest[start..];
        let Some(end) = after.find("</DescriptorRecord>") else { break };
        let record = &after[..end];
        rest = &after[end + "</DescriptorRecord>".len()..];
        let Some((ui, _)) = element(record, "DescriptorUI") else { continue };
        let Some((name, _)) = element(record, "DescriptorName").and_then(|(n, _)| element(n, "String")) else {
            continue;
        };
        let mut synonyms = Vec::new();
        let mut terms = record;
        while let Some(t) = terms.find("<Term ") {
            terms = &terms[t..];
            if let Some((s, r)) = element(terms, "String") {
                synonyms.push(unescape_xml(s.trim()));
                terms = r;
            } else {
                break;
            }
        }
        rows.push(Row { code: ui.trim().to_owned(), deprecated: false, title: unescape_xml(name.trim()), synonyms });
    }
    rows
}

/// Today's date in UTC, `YYYY-MM-DD` (never the host time zone).
fn today_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Reads a dataset's manifest from its folder.
pub fn read_manifest(dir: &Path) -> Option<Value> {
    let text = read_bounded(&dir.join("manifest.json"), 1024 * 1024)?;
    serde_json::from_str(&text).ok()
}

/// Reads a UTF-8 file of at most `max` bytes.
pub fn read_bounded(path: &Path, max: usize) -> Option<String> {
    String::from_utf8(read_bounded_bytes(path, max).ok()?).ok()
}

/// Reads a file of at most `max` bytes; `CLI_NO_INPUT` when it cannot be read,
/// `CLI_INPUT_TOO_LARGE` when it is larger.
pub fn read_bounded_bytes(path: &Path, max: usize) -> Result<Vec<u8>, Code> {
    let f = std::fs::File::open(path).map_err(|e| crate::error::from_read_io(&e).code())?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Code::CLI_NO_INPUT);
    }
    let mut buf = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut buf).map_err(|e| crate::error::from_read_io(&e).code())?;
    if buf.len() > max {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_fields(r#""a","b,c","d""e",,f"#), vec!["a", "b,c", "d\"e", "", "f"]);
    }

    #[test]
    fn utc_date_shape() {
        let d = today_utc();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }
}
