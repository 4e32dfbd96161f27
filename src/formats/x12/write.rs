//! The X12 writers: the JSON model of a record (data channel: the loop tree of a transaction
//! set, its envelope), the canonical form (data channel: one segment per line), and the
//! value-free summary of `inspect`.
//!
//! Model: `{"format":"x12","recordType":"transactionSet","transactionSet":"837",
//! "implementationGuide":"005010X222A1","group":1,"set":1,"envelope":{"ISA":[..],"GS":[..]},
//! "loop":{"id":"","segments":[{"id":"ST","elements":[..]},{"loop":"2000A","segments":[..]}]}}`.
//! An element is a string; with components, an array of strings; with repetitions, an object
//! `{"repetitions":[..]}`. Loops come from the guide's walk (`validate::structure`); a set
//! without a guide is one flat loop.

use std::collections::BTreeMap;

use serde::Serialize;

use super::read::{Document, HAS_COMPONENT, HAS_REPETITION, RecordKind, Seg};
use super::validate;
use crate::diag::{Diagnostic, Severity};
use crate::phi::Disclosure;

fn bytes_json(out: &mut Vec<u8>, b: &[u8]) {
    // Most values are printable ASCII with nothing to escape: written as they are (the same
    // bytes `json::string` writes for them).
    if b.iter().all(|&c| (0x20..0x7F).contains(&c) && c != b'"' && c != b'\\') {
        out.reserve(b.len() + 2);
        out.push(b'"');
        out.extend_from_slice(b);
        out.push(b'"');
        return;
    }
    match std::str::from_utf8(b) {
        Ok(s) => crate::json::string(out, s),
        Err(_) => crate::json::string(out, &String::from_utf8_lossy(b)),
    }
}

fn record_name(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Isa => "ISA",
        RecordKind::Gs => "GS",
        RecordKind::Ge => "GE",
        RecordKind::Iea => "IEA",
        RecordKind::Ta1 => "TA1",
        RecordKind::Set => "transactionSet",
    }
}

/// Writes one element (string, components, repetitions); `flags`: the separators its segment
/// holds (a value is searched for one only when its segment holds it).
fn element(doc: &Document, v: &[u8], flags: u8, out: &mut Vec<u8>) {
    let d = doc.delimiters;
    let reps = d.repetition.filter(|r| flags & HAS_REPETITION != 0 && v.contains(r));
    let components = flags & HAS_COMPONENT != 0;
    let one = |v: &[u8], out: &mut Vec<u8>| {
        if components && v.contains(&d.component) {
            out.push(b'[');
            for (i, c) in v.split(|&x| x == d.component).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                bytes_json(out, c);
            }
            out.push(b']');
        } else {
            bytes_json(out, v);
        }
    };
    match reps {
        Some(r) => {
            out.extend_from_slice(b"{\"repetitions\":[");
            for (i, rep) in v.split(|&x| x == r).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                one(rep, out);
            }
            out.extend_from_slice(b"]}");
        }
        None => one(v, out),
    }
}

/// Writes one segment as `{"id":..,"elements":[..]}`.
fn segment(doc: &Document, raw: &[u8], s: &Seg, spans: &mut Vec<(u32, u32)>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"id\":");
    bytes_json(out, &raw[s.start as usize..s.id_end as usize]);
    out.extend_from_slice(b",\"elements\":[");
    // The ISA is fixed-width: ISA11 is the repetition separator itself, not a repetition.
    let is_isa = s.id == Some("ISA");
    doc.elements(s, spans);
    for (i, &(a, b)) in spans.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let v = &raw[a as usize..b as usize];
        if is_isa {
            bytes_json(out, v);
        } else {
            element(doc, v, s.flags, out);
        }
    }
    out.extend_from_slice(b"]}");
}

/// The JSON model of a record.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let raw = doc.bytes().expose_value(disclosure);
    let mut spans = Vec::new();
    out.extend_from_slice(b"{\"format\":\"x12\",\"recordType\":");
    crate::json::string(out, record_name(doc.kind));
    let structure = validate::structure(doc);
    if doc.kind == RecordKind::Set {
        let guide = structure.as_ref().map(|(g, _)| *g).or_else(|| validate::guide_of(doc));
        if let Some(g) = guide {
            out.extend_from_slice(b",\"transactionSet\":");
            crate::json::string(out, g.set);
            out.extend_from_slice(b",\"implementationGuide\":");
            crate::json::string(out, g.version);
        }
    }
    if doc.group > 0 {
        out.extend_from_slice(b",\"group\":");
        crate::diag::decimal(u64::from(doc.group), out);
    }
    if doc.set > 0 && doc.kind == RecordKind::Set {
        out.extend_from_slice(b",\"set\":");
        crate::diag::decimal(u64::from(doc.set), out);
    }
    let ctx = doc.context_segs();
    if !ctx.is_empty() {
        out.extend_from_slice(b",\"envelope\":{");
        for (i, s) in ctx.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            crate::json::string(out, s.id.unwrap_or("?"));
            out.push(b':');
            segment(doc, raw, s, &mut spans, out);
        }
        out.push(b'}');
    }
    let own = doc.own_segs();
    out.extend_from_slice(b",\"loop\":{\"id\":\"\",\"segments\":[");
    match structure {
        Some((_, steps)) if steps.len() == own.len() => {
            // Depth 1 is the root loop's array, open above.
            let mut depth = 1usize;
            let mut first = true;
            for (s, step) in own.iter().zip(&steps) {
                let target = if step.opened.is_some() { step.depth - 1 } else { step.depth };
                while depth > target.max(1) {
                    out.extend_from_slice(b"]}");
                    depth -= 1;
                    first = false;
                }
                if let Some(lp) = step.opened {
                    if !first {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"loop\":");
                    crate::json::string(out, lp.id);
                    out.extend_from_slice(b",\"segments\":[");
                    depth += 1;
                    first = true;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                segment(doc, raw, s, &mut spans, out);
            }
            while depth > 1 {
                out.extend_from_slice(b"]}");
                depth -= 1;
            }
        }
        _ => {
            for (i, s) in own.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                segment(doc, raw, s, &mut spans, out);
            }
        }
    }
    out.extend_from_slice(b"]}}");
}

/// The canonical form of a record: its own segments, each with its terminator and, unless the
/// terminator is a line feed, a line feed.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn canonical(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let raw = doc.bytes().expose_value(disclosure);
    let t = doc.delimiters.segment;
    for s in doc.own_segs() {
        out.extend_from_slice(&raw[s.start as usize..s.end as usize]);
        out.push(t);
        if t != b'\n' {
            out.push(b'\n');
        }
    }
}

/// True when `canonical` is the record's own bytes as they came.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(doc: &Document, canonical: &[u8], disclosure: &Disclosure) -> bool {
    let raw = doc.bytes().expose_value(disclosure);
    let start = doc.own_segs().first().map_or(raw.len(), |s| s.start as usize);
    raw.get(start..) == Some(canonical)
}

/// The value-free summary of a record.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    format: &'static str,
    record_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    set: Option<u32>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    transaction_sets: BTreeMap<&'static str, u32>,
    implementation_guides: Vec<&'static str>,
    segment_count: usize,
    segments: BTreeMap<&'static str, u32>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    loop_counts: BTreeMap<&'static str, u32>,
    warning_count: usize,
    error_count: usize,
}

/// Sums a record up without a value.
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let mut transaction_sets = BTreeMap::new();
    let mut implementation_guides = Vec::new();
    let mut loop_counts = BTreeMap::new();
    if let Some((g, steps)) = validate::structure(doc) {
        *transaction_sets.entry(g.set).or_insert(0) += 1;
        implementation_guides.push(g.version);
        for lp in steps.iter().filter_map(|s| s.opened) {
            *loop_counts.entry(lp.id).or_insert(0) += 1;
        }
    } else if doc.kind == RecordKind::Set {
        transaction_sets.insert("unknown", 1);
    }
    let mut segments = BTreeMap::new();
    for s in doc.own_segs() {
        *segments.entry(s.id.unwrap_or("?")).or_insert(0) += 1;
    }
    Summary {
        format: "x12",
        record_type: record_name(doc.kind),
        group: (doc.group > 0).then_some(doc.group),
        set: (doc.kind == RecordKind::Set && doc.set > 0).then_some(doc.set),
        transaction_sets,
        implementation_guides,
        segment_count: doc.own_segs().len(),
        segments,
        loop_counts,
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
    }
}
