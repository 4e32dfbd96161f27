//! Where an HL7 v2 finding is, for output: the line of its segment in the record (segments end
//! with CR, LF or CR LF; an empty line counts as a line), or of its byte offset. No column: a
//! position inside a segment is the location's field and component numbers.
//!
//! Computed when a record's findings are written (`Codec::positions`), not stored in them.
//!
//! What it does not do: read a value; it counts line ends and compares segment positions.

use super::parse::Message;
use crate::diag::{Diagnostic, Location};
use crate::formats::codec::Position;
use crate::formats::lines::Lines;

/// The line of every finding's segment (0 when it has none, e.g. a structure path).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub(super) fn positions(msg: &Message, findings: &[Diagnostic]) -> Vec<Position> {
    if findings.is_empty() {
        return Vec::new();
    }
    let bytes = msg.bytes();
    let lines = Lines::new(bytes.raw());
    // Findings come mostly in segment order: the last segment found is tried first.
    let mut last: Option<(crate::diag::SchemaName, u32, u32)> = None;
    findings
        .iter()
        .map(|d| {
            let at = match d.location {
                Location::Hl7(p) | Location::Convert(p, _) => {
                    if let Some((name, index, line)) = last {
                        if name == p.segment && index == p.index {
                            return Position { line, column: 0 };
                        }
                    }
                    msg.segments()
                        .find(|s| {
                            let sp = s.position();
                            sp.segment == p.segment && sp.index == p.index
                        })
                        .map(|s| s.offset() as u64)
                }
                Location::Offset(o) => o.checked_sub(msg.base_offset()),
                Location::Input => Some(0),
                _ => None,
            };
            let Some(offset) = at else { return Position::default() };
            let line = lines.line(offset);
            if let Location::Hl7(p) | Location::Convert(p, _) = d.location {
                last = Some((p.segment, p.index, line));
            }
            Position { line, column: 0 }
        })
        .collect()
}
