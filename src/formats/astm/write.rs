//! The ASTM writers: the JSON model of a message (data channel), its canonical form (data
//! channel: each record followed by CR, no framing), and the value-free summary of `inspect`.
//!
//! Model: `{"format":"astm","framed":false,"frames":0,"delimiters":{"field":"|","repeat":"\\",
//! "component":"^","escape":"&"},"records":[{"type":"P","sequence":1,"fields":[..]}]}`.
//! `fields[i]` is field `i + 1` (field 1 is the record type; the H record's field 2, the delimiter
//! definition, is written as it is). A field is a string; with components, an array of strings;
//! with repeats, an object `{"repeats":[..]}`. The escape sequences `&F&`, `&S&`, `&R&` and `&E&`
//! (with the message's own escape character) are decoded; others are written as they are.
//!
//! What it does not do: write E1381 frames (canonical form is unframed).

use std::collections::BTreeMap;

use serde::Serialize;

use super::read::{Delimiters, Document, Rec, Type};
use crate::diag::{Diagnostic, Severity};
use crate::phi::Disclosure;

/// Decodes the delimiter escapes of a value.
fn unescape(v: &[u8], d: &Delimiters) -> Vec<u8> {
    let e = d.escape;
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] == e && i + 2 < v.len() && v[i + 2] == e {
            let c = match v[i + 1] {
                b'F' => Some(d.field),
                b'S' => Some(d.component),
                b'R' => Some(d.repeat),
                b'E' => Some(d.escape),
                _ => None,
            };
            if let Some(c) = c {
                out.push(c);
                i += 3;
                continue;
            }
        }
        out.push(v[i]);
        i += 1;
    }
    out
}

fn text_json(out: &mut Vec<u8>, b: &[u8], d: &Delimiters) {
    let write = |out: &mut Vec<u8>, b: &[u8]| match std::str::from_utf8(b) {
        Ok(s) => crate::json::string(out, s),
        Err(_) => crate::json::string(out, &String::from_utf8_lossy(b)),
    };
    if memchr::memchr(d.escape, b).is_some() {
        let mut v = unescape(b, d);
        write(out, &v);
        crate::phi::wipe(&mut v);
    } else {
        write(out, b);
    }
}

/// Writes one field (string, components, repeats).
fn field(v: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    let one = |v: &[u8], out: &mut Vec<u8>| {
        if memchr::memchr(d.component, v).is_some() {
            out.push(b'[');
            for (i, c) in v.split(|&x| x == d.component).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                text_json(out, c, d);
            }
            out.push(b']');
        } else {
            text_json(out, v, d);
        }
    };
    if memchr::memchr(d.repeat, v).is_some() {
        out.extend_from_slice(b"{\"repeats\":[");
        for (i, rep) in v.split(|&x| x == d.repeat).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            one(rep, out);
        }
        out.extend_from_slice(b"]}");
    } else {
        one(v, out);
    }
}

fn record(doc: &Document, raw: &[u8], r: &Rec, spans: &mut Vec<(u32, u32)>, out: &mut Vec<u8>) {
    doc.fields(r, spans);
    let d = &doc.delimiters;
    let v = |&(a, b): &(u32, u32)| &raw[a as usize..b as usize];
    out.extend_from_slice(b"{\"type\":");
    let id = spans.first().map(v).unwrap_or_default();
    match r.kind {
        Some(t) => crate::json::string(out, t.as_str()),
        None => text_json(out, id, d),
    }
    if r.kind.is_some_and(|t| t != Type::H) {
        let seq = spans.get(1).map(v).unwrap_or_default();
        if !seq.is_empty() && seq.len() <= 9 && seq.iter().all(u8::is_ascii_digit) {
            out.extend_from_slice(b",\"sequence\":");
            // A JSON number has no leading zeros (`00315` is 315; `000` is 0).
            let zeros = seq.iter().take_while(|&&b| b == b'0').count().min(seq.len() - 1);
            out.extend_from_slice(&seq[zeros..]);
        }
    }
    out.extend_from_slice(b",\"fields\":[");
    for (i, s) in spans.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let val = v(s);
        if i == 0 || (i == 1 && r.kind == Some(Type::H)) {
            text_json(out, val, &Delimiters { escape: 0, ..*d });
        } else {
            field(val, d, out);
        }
    }
    out.extend_from_slice(b"]}");
}

/// The JSON model of a message.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let raw = doc.bytes().expose_value(disclosure);
    let d = doc.delimiters;
    out.extend_from_slice(b"{\"format\":\"astm\",\"framed\":");
    out.extend_from_slice(if doc.framed { b"true" } else { b"false" });
    out.extend_from_slice(b",\"frames\":");
    crate::diag::decimal(u64::from(doc.frames), out);
    out.extend_from_slice(b",\"delimiters\":{");
    for (i, (name, b)) in
        [("field", d.field), ("repeat", d.repeat), ("component", d.component), ("escape", d.escape)].iter().enumerate()
    {
        if i > 0 {
            out.push(b',');
        }
        crate::json::string(out, name);
        out.push(b':');
        text_json(out, &[*b], &Delimiters { escape: 0, ..d });
    }
    out.extend_from_slice(b"},\"records\":[");
    let mut spans = Vec::new();
    for (i, r) in doc.records.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        record(doc, raw, r, &mut spans, out);
    }
    out.extend_from_slice(b"]}");
}

/// The canonical form of a message: each record followed by CR.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn canonical(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let raw = doc.bytes().expose_value(disclosure);
    for r in &doc.records {
        out.extend_from_slice(&raw[r.start as usize..r.end as usize]);
        out.push(b'\r');
    }
}

/// True when `canonical` is the message as it came (unframed, CR line ends, no blank line).
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(doc: &Document, canonical: &[u8], disclosure: &Disclosure) -> bool {
    !doc.framed && !doc.noncanonical && doc.text().expose_value(disclosure) == canonical
}

/// The delimiters, as written by `inspect` (ASCII punctuation only).
#[derive(Debug, Serialize)]
pub struct DelimiterSummary {
    field: String,
    repeat: String,
    component: String,
    escape: String,
}

/// The value-free summary of a message.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    format: &'static str,
    record_type: &'static str,
    record_count: usize,
    records: BTreeMap<&'static str, u32>,
    framed: bool,
    frame_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    delimiters: Option<DelimiterSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    processing_id: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'static str>,
    warning_count: usize,
    error_count: usize,
}

/// The processing ids of H-12 (LIS2-A2 7.1.12).
pub const PROCESSING_IDS: [&str; 4] = ["P", "T", "D", "Q"];
/// The versions of H-13 `inspect` names (anything else is `unknown`).
pub const VERSIONS: [&str; 6] = ["LIS2-A2", "LIS2-A", "E1394-97", "1394-97", "E1394-91", "1394-91"];

/// Sums a message up without a value.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let mut records = BTreeMap::new();
    for r in &doc.records {
        *records.entry(r.kind.map_or("?", Type::as_str)).or_insert(0) += 1;
    }
    let d = doc.delimiters;
    let delimiters = (doc.has_header
        && [d.field, d.repeat, d.component, d.escape].iter().all(u8::is_ascii_punctuation))
    .then(|| {
        let s = |b: u8| char::from(b).to_string();
        DelimiterSummary { field: s(d.field), repeat: s(d.repeat), component: s(d.component), escape: s(d.escape) }
    });
    let (mut processing_id, mut version) = (None, None);
    if let Some(h) = doc.records.first().filter(|r| doc.has_header && r.kind == Some(Type::H)) {
        let raw = doc.bytes().raw();
        let mut spans = Vec::new();
        doc.fields(h, &mut spans);
        let v = |n: usize| spans.get(n - 1).map_or(&[][..], |&(a, b)| &raw[a as usize..b as usize]);
        let pid = v(12).split(|&x| x == d.component).next().unwrap_or_default();
        processing_id = PROCESSING_IDS.iter().copied().find(|p| p.as_bytes() == pid);
        let ver = v(13);
        if !ver.is_empty() {
            version = Some(VERSIONS.iter().copied().find(|x| x.as_bytes() == ver).unwrap_or("unknown"));
        }
    }
    Summary {
        format: "astm",
        record_type: "message",
        record_count: doc.records.len(),
        records,
        framed: doc.framed,
        frame_count: doc.frames,
        delimiters,
        processing_id,
        version,
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
    }
}
