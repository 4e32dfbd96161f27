//! The NCPDP writers: the JSON model of a transmission (data channel), its canonical form (data
//! channel: the transmission as read, followed by one LF), and the value-free summary of
//! `inspect`.
//!
//! Model: `{"format":"ncpdp","kind":"request","header":{"BinNumber":"610014",...},
//! "segments":[..],"transactions":[{"segments":[{"id":"AM07","name":"Claim","fields":[{"id":"D7",
//! "name":"ProductServiceId","value":".."}]}]}]}`. `segments` are the transmission-level segments
//! (before the first group separator); header values are written without their padding
//! (trailing spaces). A segment or field whose id is not one of D.0 is written with its id as
//! it came and no name.
//!
//! What it does not do: reorder or repair anything (the canonical form is the transmission as
//! read; the separators are the standard's and fixed).

use serde::Serialize;

use super::read::{Document, FIELD_SEPARATOR, GROUP_SEPARATOR, SEGMENT_SEPARATOR, Segment};
use super::tables;
use crate::diag::{Diagnostic, Severity};
use crate::phi::Disclosure;

fn text(out: &mut Vec<u8>, b: &[u8]) {
    match std::str::from_utf8(b) {
        Ok(s) => crate::json::string(out, s),
        Err(_) => crate::json::string(out, &String::from_utf8_lossy(b)),
    }
}

fn trim_end(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    &b[..end]
}

fn segment_json(doc: &Document, raw: &[u8], s: &Segment, out: &mut Vec<u8>) {
    let v = |(a, b): (u32, u32)| &raw[a as usize..b as usize];
    out.extend_from_slice(b"{\"id\":");
    match (s.id(), doc.fields_of(s).first()) {
        (Some(id), _) => crate::json::string(out, id),
        (None, Some(f)) if s.has_id => text(out, v((f.start, f.end))),
        _ => out.extend_from_slice(b"null"),
    }
    if let Some(name) = s.name() {
        out.extend_from_slice(b",\"name\":");
        crate::json::string(out, name);
    }
    out.extend_from_slice(b",\"fields\":[");
    let mut first = true;
    for (k, f) in doc.fields_of(s).iter().enumerate() {
        if k == 0 && s.has_id {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(b"{\"id\":");
        let id_end = (f.start + 2).min(f.end);
        match f.id() {
            Some(id) => crate::json::string(out, id),
            None => text(out, v((f.start, id_end))),
        }
        if let Some(d) = f.def.and_then(|d| tables::FIELDS.get(usize::from(d))) {
            out.extend_from_slice(b",\"name\":");
            crate::json::string(out, d.1);
        }
        out.extend_from_slice(b",\"value\":");
        text(out, v(f.value_span()));
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// The JSON model of a transmission.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let raw = doc.bytes().expose_value(disclosure);
    out.extend_from_slice(b"{\"format\":\"ncpdp\",\"kind\":");
    crate::json::string(out, doc.kind.as_str());
    out.extend_from_slice(b",\"header\":{");
    for (i, (_, name, (a, b))) in doc.header().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::string(out, name);
        out.push(b':');
        text(out, trim_end(&raw[a as usize..b as usize]));
    }
    out.extend_from_slice(b"},\"segments\":[");
    for (i, s) in doc.segments_of(0).iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        segment_json(doc, raw, s, out);
    }
    out.extend_from_slice(b"],\"transactions\":[");
    for t in 1..=doc.groups {
        if t > 1 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"segments\":[");
        for (i, s) in doc.segments_of(t).iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            segment_json(doc, raw, s, out);
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}");
}

/// The canonical form of a transmission: header, bytes outside segments, segments and their
/// fields with the standard's separators, then one LF.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn canonical(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let raw = doc.bytes().expose_value(disclosure);
    let v = |(a, b): (u32, u32)| &raw[a as usize..b as usize];
    out.extend_from_slice(&raw[..doc.kind.header_len()]);
    // Gaps are in transaction order: one pass over them.
    let mut gaps = doc.gaps.iter().peekable();
    for t in 0..=doc.groups {
        if t > 0 {
            out.push(GROUP_SEPARATOR);
        }
        while let Some(g) = gaps.next_if(|g| g.transaction == t) {
            out.extend_from_slice(v(g.span));
        }
        for s in doc.segments_of(t) {
            out.push(SEGMENT_SEPARATOR);
            out.extend_from_slice(v(s.lead));
            for f in doc.fields_of(s) {
                out.push(FIELD_SEPARATOR);
                out.extend_from_slice(v((f.start, f.end)));
            }
        }
    }
    out.push(b'\n');
}

/// True when `canonical` is the transmission as it came (with one LF at its end).
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(doc: &Document, canonical: &[u8], disclosure: &Disclosure) -> bool {
    doc.lf_terminated && canonical.strip_suffix(b"\n") == Some(doc.text().expose_value(disclosure))
}

/// One transaction in the summary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionSummary {
    segments: Vec<&'static str>,
    field_count: usize,
}

/// The value-free summary of a transmission.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    format: &'static str,
    record_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'static str>,
    transaction_code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction_count: Option<u32>,
    group_count: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    header_status: Option<&'static str>,
    segments: Vec<&'static str>,
    transactions: Vec<TransactionSummary>,
    segment_count: usize,
    field_count: usize,
    warning_count: usize,
    error_count: usize,
}

/// The name `inspect` writes for a segment whose id is not one.
pub const UNKNOWN: &str = "unknown";

/// Sums a transmission up without a value.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let raw = doc.bytes().raw();
    let h = |id: &str| doc.header_field(id).map(|(a, b)| &raw[a as usize..b as usize]).unwrap_or_default();
    let ids = |t: u32| doc.segments_of(t).iter().map(|s| s.id().unwrap_or(UNKNOWN)).collect::<Vec<_>>();
    let fields = |t: u32| {
        doc.segments_of(t).iter().map(|s| doc.fields_of(s).len().saturating_sub(usize::from(s.has_id))).sum::<usize>()
    };
    let code = h("A3");
    let count = match h("A9") {
        [d] if d.is_ascii_digit() => Some(u32::from(d - b'0')),
        _ => None,
    };
    Summary {
        format: "ncpdp",
        record_type: doc.kind.as_str(),
        version: Some(if h("A2") == b"D0" { "D0" } else { UNKNOWN }),
        transaction_code: tables::TRANSACTION_CODES.iter().find(|(c, _)| c.as_bytes() == code).map_or(UNKNOWN, |c| c.0),
        transaction_count: count,
        group_count: doc.groups,
        header_status: (doc.kind == super::read::Kind::Response)
            .then(|| tables::HEADER_STATUS.iter().copied().find(|s| s.as_bytes() == h("F1")).unwrap_or(UNKNOWN)),
        segments: ids(0),
        transactions: (1..=doc.groups)
            .map(|t| TransactionSummary { segments: ids(t), field_count: fields(t) })
            .collect(),
        segment_count: doc.segments.len(),
        field_count: (0..=doc.groups).map(fields).sum(),
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
    }
}
