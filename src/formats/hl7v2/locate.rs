//! Where an HL7 v2 finding is, for output: the line of its segment in the record (segments end
//! with CR, LF or CR LF; an empty line counts as a line), or of its byte offset. No column: a
//! position inside a segment is the location's field and component numbers.
//!
//! Computed when a record's findings are written (`Codec::positions`), not stored in them, and
//! cheaply: without empty lines a segment's line is its position in the message (the parser
//! counts them), and findings come mostly in segment order, so each search starts at the
//! segment the previous one found. The record's line ends are counted only for a finding at a
//! byte offset, or in a message with empty lines.
//!
//! What it does not do: read a value; it counts line ends and compares segment positions.

use super::parse::Message;
use crate::diag::{Diagnostic, Hl7Position, Location};
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
    let blank_lines = msg.terminators().empty_lines > 0;
    let mut lines: Option<Lines> = None;
    let mut line_of = |offset: u64| -> u32 { lines.get_or_insert_with(|| Lines::new(msg.bytes().raw())).line(offset) };
    let n = msg.segments().len();
    let mut cursor = 0usize;
    let mut find = |p: Hl7Position| {
        let want = Hl7Position::segment(p.segment, p.index);
        let i =
            (0..n).map(|k| (cursor + k) % n).find(|&i| msg.segments().nth(i).is_some_and(|s| s.position() == want))?;
        cursor = i;
        msg.segments().nth(i)
    };
    findings
        .iter()
        .map(|d| {
            let line = match d.location {
                Location::Hl7(p) | Location::Convert(p, _) => {
                    find(p).map(|seg| if blank_lines { line_of(seg.offset() as u64) } else { seg.index() })
                }
                Location::Offset(o) => o.checked_sub(msg.base_offset()).map(&mut line_of),
                Location::Input => Some(1),
                _ => None,
            };
            Position { line: line.unwrap_or(0), column: 0 }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::diag::{Diagnostic, Hl7Position, Location};

    /// A segment's line, with and without empty lines and CR LF terminators.
    #[test]
    fn a_segment_line_counts_empty_lines() {
        let limits = crate::limits::Limits::default();
        let at = |text: &[u8], seg: &'static str, index: u32| {
            let msg = super::super::parse::parse(text.to_vec(), &limits).expect("parses");
            let d =
                Diagnostic::new(crate::diag::Code::Z_SEGMENT, Location::Hl7(Hl7Position::segment(Some(seg), index)));
            super::positions(&msg, &[d])[0].line
        };
        let plain = b"MSH|^~\\&|A\rPID|1\rOBX|1\rOBX|2\r";
        assert_eq!(at(plain, "OBX", 2), 4);
        assert_eq!(at(plain, "MSH", 1), 1);
        let blank = b"MSH|^~\\&|A\r\n\r\nPID|1\r\nOBX|1\r\n\r\nOBX|2\r\n";
        assert_eq!(at(blank, "PID", 1), 3);
        assert_eq!(at(blank, "OBX", 2), 6);
    }
}
