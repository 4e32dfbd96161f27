//! Where a FHIR finding is, for output: the line and column of its element in the record (the
//! element's key in JSON, its start tag in XML; an element without a definition, or a value of
//! the wrong kind, by its own offset), and the whole path of an element deeper than a
//! diagnostic's path holds.
//!
//! Both are computed when a record's findings are written, from the node a finding's path
//! names (`FhirPath::node`) and the record's bytes: a diagnostic stays as small as it was.
//!
//! What it does not do: read a value. Names come from the definitions, positions are numbers.

use super::definitions as defs;
use super::model::{Document, NONE, Node};
use crate::diag::{Diagnostic, FhirName, Location};
use crate::formats::codec::Position;
use crate::formats::lines::Lines;

/// The byte offset a finding's position is taken from, if any.
fn offset_of(doc: &Document, d: &Diagnostic) -> Option<u64> {
    match d.location {
        Location::Fhir(p) => match p.offset {
            Some(o) => Some(u64::from(o)),
            None if p.node != NONE => doc.nodes().get(p.node as usize).map(|n| u64::from(n.offset)),
            // A path without a node is the root's (a finding on the whole resource).
            None => doc.nodes().first().map(|n| u64::from(n.offset)),
        },
        Location::Offset(o) => Some(o),
        Location::Input => doc.nodes().first().map(|n| u64::from(n.offset)),
        _ => None,
    }
}

/// The line and column of every finding (see the module doc).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub(super) fn positions(doc: &Document, findings: &[Diagnostic]) -> Vec<Position> {
    if findings.is_empty() {
        return Vec::new();
    }
    let input = doc.input();
    let bytes = input.raw();
    let lines = Lines::new(bytes);
    findings.iter().map(|d| offset_of(doc, d).map_or_else(Position::default, |o| lines.position(bytes, o))).collect()
}

/// Writes the whole path of a finding whose path was shortened; false when it was not.
pub(super) fn full_location(doc: &Document, d: &Diagnostic, out: &mut Vec<u8>) -> bool {
    let Location::Fhir(p) = d.location else { return false };
    if !p.is_shortened() || p.node == NONE || p.node as usize >= doc.nodes().len() {
        return false;
    }
    let steps = write_path(doc.nodes(), p.node, out);
    // A path made for a missing child (`CARDINALITY_MIN`) has one step more than its node's.
    if p.depth() > steps {
        if let Some((name, index)) = p.last_step() {
            out.push(b'.');
            step(name, index, out);
        }
    }
    if let Some(o) = p.written_offset() {
        out.extend_from_slice(b"/offset:");
        crate::diag::decimal(u64::from(o), out);
    }
    if let Some(key) = p.invariant {
        out.extend_from_slice(b"/invariant:");
        out.extend_from_slice(key.as_bytes());
    }
    true
}

/// Writes the path of node `i` with every step (the steps `model::path_in` pushes), and
/// returns how many steps it wrote.
fn write_path(nodes: &[Node], i: u32, out: &mut Vec<u8>) -> usize {
    let mut chain = Vec::new();
    let mut cur = i;
    while cur != NONE && (cur as usize) < nodes.len() && chain.len() <= nodes.len() {
        chain.push(cur);
        cur = nodes[cur as usize].parent;
    }
    let mut steps = 0;
    let mut push = |name: &'static FhirName, index: u32, out: &mut Vec<u8>| {
        if steps > 0 {
            out.push(b'.');
        }
        step(name, index, out);
        steps += 1;
    };
    for &n in chain.iter().rev() {
        let node = &nodes[n as usize];
        if node.is_unknown() && node.elem.is_none() {
            break;
        }
        if node.parent == NONE {
            if let Some(t) = node.ty {
                push(defs::type_step(t), u32::MAX, out);
            }
            continue;
        }
        let Some(elem) = node.elem else { break };
        let repeats = defs::element(elem).is_some_and(|d| d.repeats());
        if let Some(name) = defs::step_name(elem, node.ty) {
            push(name, if repeats { node.index } else { u32::MAX }, out);
        }
        if node.is_unknown() {
            break;
        }
    }
    steps
}

/// One step: `name`, the choice type capitalized, `[index]` on a repeating element.
fn step(name: &FhirName, index: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(name.name.as_bytes());
    let mut ty = name.choice_type.chars();
    if let Some(first) = ty.next() {
        let mut utf8 = [0u8; 4];
        out.extend_from_slice(first.to_ascii_uppercase().encode_utf8(&mut utf8).as_bytes());
        out.extend_from_slice(ty.as_str().as_bytes());
    }
    if index != u32::MAX {
        out.push(b'[');
        crate::diag::decimal(u64::from(index), out);
        out.push(b']');
    }
}

/// The whole path of a shortened one, as text (tests).
#[cfg(test)]
pub(super) fn full_text(doc: &Document, d: &Diagnostic) -> Option<String> {
    let mut out = Vec::new();
    full_location(doc, d, &mut out).then(|| String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use crate::diag::Location;
    use crate::formats::codec::{Check, Codec, Kind};

    /// A Questionnaire nested ten items deep: the finding on the deepest item's missing
    /// `linkId` has its whole path, and the line and column of its element.
    #[test]
    fn deep_paths_are_whole_and_placed() {
        let mut json = String::from("{\"resourceType\": \"Questionnaire\", \"status\": \"draft\"");
        for _ in 0..10 {
            json.push_str(",\n \"item\": [{\"linkId\": \"a\", \"type\": \"group\"");
        }
        json.push_str(",\n \"item\": [{\"type\": \"group\"}]");
        for _ in 0..10 {
            json.push_str("}]");
        }
        json.push('}');
        let settings = crate::formats::codec::Settings {
            limits: crate::limits::Limits::default(),
            strict: false,
            ndjson: false,
            to: None,
            framing: None,
            model: crate::formats::codec::ModelShape::Positional,
            structures: None,
            fhir: crate::formats::fhir::checks::Checks::default(),
            bulk_values: true,
        };
        let doc = super::super::Fhir::read(json.into_bytes(), 0, Kind::Message, &(), &settings, false).expect("reads");
        let findings = super::super::Fhir::findings(&doc, Kind::Message, Check::Full, &settings);
        let missing = findings
            .iter()
            .find(|d| {
                d.code == crate::diag::Code::CARDINALITY_MIN
                    && matches!(d.location, Location::Fhir(p) if p.is_shortened())
            })
            .expect("a deep CARDINALITY_MIN");
        let text = super::full_text(&doc, missing).expect("shortened");
        assert_eq!(text, format!("Questionnaire{}.linkId", ".item[0]".repeat(11)));
        let positions = super::positions(&doc, &findings);
        assert_eq!(positions.len(), findings.len());
        let i = findings.iter().position(|d| d == missing).expect("found");
        // The missing linkId's parent, the eleventh item, is placed at its key, line 12.
        assert_eq!((positions[i].line, positions[i].column), (12, 2));
        assert!(positions.iter().all(|p| p.line > 0 && p.column > 0));
    }
}
