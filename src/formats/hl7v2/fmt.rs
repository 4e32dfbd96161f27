//! Canonical re-serialization of HL7 v2 (a data-channel writer).
//!
//! Canonical form: segments terminated by CR (including the last), no BOM, no blank lines,
//! trailing empty fields, repetitions, components and subcomponents omitted (as chapter 2 asks
//! of senders), hexadecimal escapes in upper case. Delimiters are kept as declared.
//!
//! What it does not do: change values, re-encode character sets, or replace legal escapes by
//! other legal spellings.

use crate::phi::Disclosure;

use super::escape;
use super::parse::{Delimiters, Message};

/// Appends the canonical form of a message (or envelope record).
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn canonical(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let d = msg.delimiters();
    for seg in msg.segments() {
        let line_start = out.len();
        out.extend_from_slice(seg.id().expose_value(disclosure));
        let mut pending_empty = 0usize;
        for field in seg.fields() {
            if !field.is_splittable() {
                // MSH-1 is written by the separator below; MSH-2 as declared.
                if field.position().field == 2 {
                    out.push(d.field);
                    out.extend_from_slice(field.bytes().expose_value(disclosure));
                }
                continue;
            }
            let start = out.len();
            level(field.bytes().expose_value(disclosure), &[d.repetition, d.component, d.subcomponent], &d, out);
            if out.len() == start {
                pending_empty += 1;
                continue;
            }
            let value: Vec<u8> = out.split_off(start);
            for _ in 0..=pending_empty {
                out.push(d.field);
            }
            pending_empty = 0;
            out.extend_from_slice(&value);
        }
        // A segment whose id is empty or blank and whose fields are all empty would be written
        // as a blank line, which a parser skips: keep its first field separator so the segment
        // survives (found by fuzzing: fmt_blank_segment_vanishes).
        if pending_empty > 0 && out[line_start..].iter().all(|b| *b == b' ' || *b == b'\t') {
            out.push(d.field);
        }
        out.push(b'\r');
    }
}

/// Writes `raw` split at `seps[0]` with trailing empty parts dropped, recursively.
fn level(raw: &[u8], seps: &[u8], d: &Delimiters, out: &mut Vec<u8>) {
    let Some((&sep, rest)) = seps.split_first() else {
        escape::canonicalize(raw, d, out);
        return;
    };
    let mut pending = 0usize;
    let mut wrote_any = false;
    for part in raw.split(|b| *b == sep) {
        let start = out.len();
        level(part, rest, d, out);
        if out.len() == start {
            pending += 1;
            continue;
        }
        if wrote_any || pending > 0 {
            let value = out.split_off(start);
            for _ in 0..pending + usize::from(wrote_any) {
                out.push(sep);
            }
            out.extend_from_slice(&value);
        }
        pending = 0;
        wrote_any = true;
    }
}

/// True when `canonical` (what [`canonical`] wrote) is the message's bytes as they came.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(msg: &Message, canonical: &[u8], disclosure: &Disclosure) -> bool {
    canonical == msg.bytes().expose_value(disclosure)
}
