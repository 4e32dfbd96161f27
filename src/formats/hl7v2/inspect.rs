//! A value-free summary of one HL7 v2 message: message type and version (only when they match
//! the standard's code patterns), segment counts by id, finding counts.
//!
//! What it does not do: report any field value other than the two code-shaped MSH fields. A
//! segment whose id is not a standard or Z id is counted under `"?"`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity};
use crate::phi::ValueFree;

use super::parse::Message;
use super::validate::{message_type_ok, version_ok};

/// The summary; serialized as the `inspect` data.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Always `hl7`.
    pub format: &'static str,
    /// `ADT^A01^ADT_A01`, when MSH-9 matches the pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_type: Option<String>,
    /// `2.5.1`, when MSH-12 matches the pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Number of segments.
    pub segment_count: usize,
    /// Segments by id.
    pub segments: BTreeMap<&'static str, u32>,
    /// Findings of severity warning.
    pub warning_count: usize,
    /// Findings of severity error or fatal.
    pub error_count: usize,
}

/// A code-shaped string, copied out only after it matched a pattern.
#[derive(Copy, Clone)]
struct Code8 {
    len: u8,
    bytes: [u8; 24],
}
impl crate::phi::sealed::Sealed for Code8 {}
impl ValueFree for Code8 {}

impl Code8 {
    fn none() -> Self {
        Code8 { len: 0, bytes: [0; 24] }
    }
    fn text(self) -> Option<String> {
        (self.len > 0).then(|| String::from_utf8_lossy(&self.bytes[..self.len as usize]).into_owned())
    }
}

fn code_shaped(v: &[u8], ok: bool, comp: u8) -> Code8 {
    if !ok || v.len() > 24 {
        return Code8::none();
    }
    let mut out = Code8 { len: v.len() as u8, bytes: [0; 24] };
    for (o, &b) in out.bytes.iter_mut().zip(v) {
        *o = if b == comp { b'^' } else { b };
    }
    out
}

/// Summarizes a message, given its validation findings.
pub fn summarize(msg: &Message, findings: &[Diagnostic]) -> Summary {
    let msh = msg.msh();
    let d = msg.delimiters();
    let message_type = msh
        .field(9)
        .map(|f| f.bytes().classify(|v| code_shaped(v, message_type_ok(v, d.component, d.subcomponent), d.component)))
        .and_then(Code8::text);
    let version = msh
        .field(12)
        .and_then(|f| f.at(1, 1, 1))
        .map(|b| b.classify(|v| code_shaped(v, version_ok(v), d.component)))
        .and_then(Code8::text);
    let mut segments = BTreeMap::new();
    for seg in msg.segments() {
        *segments.entry(seg.name().unwrap_or("?")).or_insert(0) += 1;
    }
    Summary {
        format: "hl7",
        message_type,
        version,
        segment_count: msg.segment_count(),
        segments,
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
    }
}
