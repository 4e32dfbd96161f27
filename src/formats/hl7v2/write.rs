//! The HL7 v2 data-channel writer: a message as typed JSON (the `parse` model).
//!
//! Shape: `{"delimiters": {...}, "segments": [{"id": "PID", "fields": [...]}]}`. `fields[i]` is
//! field `i + 1` (so for MSH, `fields[0]` is MSH-1). A field is an array of repetitions (an empty
//! field is `[]`); a repetition is a string, or an array of components when it has more than one;
//! a component is a string, or an array of subcomponents when it has more than one. The HL7
//! null `""` is JSON `null`. Delimiter and hexadecimal escapes are decoded; formatting escapes
//! (`\.br\`, `\H\`, ...) are kept as written. Text is decoded from the MSH-18 character set.
//!
//! This is one of the data-channel writers: it needs a [`Disclosure`].
//!
//! What it does not do: interpret fields by data type (that is the conformance layer's and the
//! converter's job).

use crate::formats::codec::Spill;
use crate::json;
use crate::phi::Disclosure;

use std::ops::Range;

use super::charset::Charset;
use super::escape;
use super::parse::{Delimiters, Message};
use super::schema::{self, ComponentDef, DataTypeDef, FieldDef, Schema, Version};

/// Appends the message model as compact JSON.
pub fn model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
    write_model(msg, disclosure, out, None);
}

/// The output a spilled model is handed on at (bytes): a part is about this much, and the
/// buffer never grows far past it.
const SPILL_AT: usize = 64 * 1024;

/// [`model_json`] handed to `spill` in parts of about [`SPILL_AT`] bytes, between segments (a
/// segment's output is cut back while it is written, never after), `out` wiped after each: the
/// output of a large message is then never held whole (a 3.4 MB ORU^R01 has a 5.4 MB model).
pub fn model_json_spilled(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>, spill: Spill<'_>) {
    write_model(msg, disclosure, out, Some(spill));
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
fn write_model(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>, mut spill: Option<Spill<'_>>) {
    let d = msg.delimiters();
    let all = msg.bytes().expose_value(disclosure);
    let mut w = Writer::new(msg, all, disclosure);
    match spill {
        // A part, and the longest segment's output past it.
        Some(_) => out.reserve(SPILL_AT + SPILL_AT / 2),
        None => out.reserve(all.len() * 2),
    }
    out.push(b'{');
    delimiters_json(d, out);
    out.extend_from_slice(b",\"segments\":[");
    for (i, seg) in msg.segments().enumerate() {
        if let Some(spill) = spill.as_mut() {
            // Room for the segment (as the whole model has, twice the bytes) is made in an empty
            // buffer: a buffer that grows leaves its old allocation unwiped.
            let room = seg.field_spans().last().map_or(0, |s| s.range().end).saturating_sub(seg.offset()) * 2 + 64;
            if out.len() >= SPILL_AT || out.capacity() - out.len() < room {
                if !out.is_empty() {
                    spill(out);
                }
                crate::phi::wipe_keep(out);
                out.reserve(room);
            }
        }
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"id\":");
        w.text_of(seg.id().expose_value(disclosure), out);
        out.extend_from_slice(b",\"fields\":[");
        // Trailing empty fields carry no meaning (chapter 2 asks senders to omit them): the
        // model leaves them out, so that a message and its canonical form have one model. An
        // empty field is written only when a field that is not empty follows; any other field
        // is written as it comes, and the output is cut back after the last one that holds
        // anything.
        let mut keep = out.len();
        // Empty fields not written yet, and the number of the first of them.
        let mut empties = 0;
        let mut first_empty = 0;
        // MSH-1 and MSH-2 (FHS, BHS too) hold the delimiters: one string each, never split.
        let unsplit = if seg.is_header() { 2 } else { 0 };
        for (n, span) in seg.field_spans().iter().enumerate() {
            if span.start >= span.end && n >= unsplit {
                if empties == 0 {
                    first_empty = n;
                }
                empties += 1;
                continue;
            }
            if empties > 0 {
                write_empties(first_empty, empties, out);
                empties = 0;
            }
            if n > 0 {
                out.push(b',');
            }
            let raw = all.get(span.range()).unwrap_or_default();
            if n < unsplit {
                out.push(b'[');
                w.text_of(raw, out);
                out.push(b']');
                keep = out.len();
            } else if w.field(all, span.range(), out) {
                keep = out.len();
            }
        }
        out.truncate(keep);
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}");
}

/// Writes `"delimiters":{...}`: the message's delimiters by name.
pub(crate) fn delimiters_json(d: Delimiters, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\"delimiters\":{");
    let mut first = true;
    for (name, b) in [
        ("field", Some(d.field)),
        ("component", Some(d.component)),
        ("repetition", Some(d.repetition)),
        ("escape", Some(d.escape)),
        ("subcomponent", Some(d.subcomponent)),
        ("truncation", d.truncation),
    ] {
        let Some(b) = b else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        json::string(out, name);
        out.push(b':');
        json::string(out, char::from(b).encode_utf8(&mut [0u8; 4]));
    }
    out.push(b'}');
}

/// Writes `count` empty fields (`[]`), the first of them field `first` of the list.
#[cold]
fn write_empties(first: usize, count: usize, out: &mut Vec<u8>) {
    // `,[]` per field, from a constant run (the first field of the list has no comma).
    const RUN: &[u8; 3 * 32] =
        b",[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[]";
    let mut left = count;
    let mut skip = usize::from(first == 0);
    while left > 0 {
        let n = left.min(32);
        out.extend_from_slice(RUN.get(skip..3 * n).unwrap_or_default());
        skip = 0;
        left -= n;
    }
}

/// Appends `all[start..end]` and `","` (a part of a list and the start of the next). A short
/// part is copied as a fixed 19-byte block (no `memcpy` call) and the output cut back to its
/// length; the bytes past the part are the message's own, left in `out`'s spare capacity.
#[inline(always)]
fn part(all: &[u8], start: usize, end: usize, out: &mut Vec<u8>) {
    let len = end - start;
    match all.get(start..start + 16).map(<&[u8; 16]>::try_from) {
        Some(Ok(block)) if len <= 16 => {
            let mut bytes = [0u8; 19];
            if let Some(head) = bytes.get_mut(..16) {
                head.copy_from_slice(block);
            }
            if let Some(tail) = bytes.get_mut(len..len + 3) {
                tail.copy_from_slice(b"\",\"");
            }
            let at = out.len();
            out.extend_from_slice(&bytes);
            out.truncate(at + len + 3);
        }
        _ => {
            out.extend_from_slice(all.get(start..end).unwrap_or_default());
            out.extend_from_slice(b"\",\"");
        }
    }
}

/// Kinds of byte, as bits of a class.
const REPETITION: u8 = 1;
const COMPONENT: u8 = 2;
const SUBCOMPONENT: u8 = 4;
const SEPARATORS: u8 = REPETITION | COMPONENT | SUBCOMPONENT;
/// The escape character.
const ESCAPE: u8 = 8;
/// A byte JSON needs escaped (see `json`).
const JSON_ESCAPED: u8 = 16;
/// A byte above 0x7F.
const HIGH: u8 = 32;
/// Anything but the repetition, component and subcomponent separators.
const OTHER: u8 = 64;
/// A value that cannot be copied as it is: it may need decoding or escaping.
const SPECIAL: u8 = ESCAPE | JSON_ESCAPED | HIGH;

/// The classes under the default delimiters (`|^~\&`), computed once at compile time.
const DEFAULT_CLASSES: [u8; 256] = classes(Delimiters {
    field: b'|',
    component: b'^',
    repetition: b'~',
    escape: b'\\',
    subcomponent: b'&',
    truncation: None,
});

/// The kinds of every byte value under the message's delimiters.
const fn classes(d: Delimiters) -> [u8; 256] {
    let mut class = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut c = if b == d.repetition {
            REPETITION
        } else if b == d.component {
            COMPONENT
        } else if b == d.subcomponent {
            SUBCOMPONENT
        } else {
            OTHER
        };
        if b == d.escape {
            c |= ESCAPE;
        }
        if json::needs_escape(b) {
            c |= JSON_ESCAPED;
        }
        if b >= 0x80 {
            c |= HIGH;
        }
        class[i] = c;
        i += 1;
    }
    class
}

/// The kinds of byte in `raw` (the OR of their classes), four bytes a step.
#[inline(always)]
fn kinds_of(class: &[u8; 256], raw: &[u8]) -> u8 {
    let mut chunks = raw.chunks_exact(4);
    let (mut a, mut b) = (0u8, 0u8);
    for chunk in &mut chunks {
        if let [w, x, y, z] = *chunk {
            a |= class[usize::from(w)] | class[usize::from(x)];
            b |= class[usize::from(y)] | class[usize::from(z)];
        }
    }
    for &w in chunks.remainder() {
        a |= class[usize::from(w)];
    }
    a | b
}

/// The end of a field, as a separator kind.
const END: u8 = 128;

/// A separator of a field: its offset in the field and its kind.
#[derive(Copy, Clone, Debug)]
struct Sep {
    at: u32,
    kind: u8,
}

/// True when a separator of `kind` comes at or after `seps[t]`, before the next separator of a
/// higher level (the repetition or the field's end; `kind` is `COMPONENT`).
fn has_before(seps: &[Sep], t: usize, kind: u8) -> bool {
    seps.get(t..).unwrap_or_default().iter().find(|s| s.kind != SUBCOMPONENT).is_some_and(|s| s.kind == kind)
}

/// A list being written (the components of a repetition, the subcomponents of a component).
struct List {
    /// Where it starts in the output.
    start: usize,
    /// It opened a bracket: it has more than one part.
    bracket: bool,
    /// Parts written so far.
    count: u32,
    /// Number of parts up to the last that holds anything (0: none does).
    full: u32,
    /// Output length after that part.
    end: usize,
}

impl List {
    fn open(out: &mut Vec<u8>, bracket: bool) -> List {
        let start = out.len();
        if bracket {
            out.push(b'[');
        }
        List { start, bracket, count: 0, full: 0, end: start }
    }

    /// The part just written holds something.
    fn keep(&mut self, out: &[u8]) {
        self.full = self.count;
        self.end = out.len();
    }

    /// Closes the list: trailing empty parts are cut; no part left is `""`, one part left is
    /// written as itself. Returns false when the list was empty.
    fn close(&self, out: &mut Vec<u8>) -> bool {
        if self.full == 0 {
            out.truncate(self.start);
            out.extend_from_slice(b"\"\"");
            return false;
        }
        out.truncate(self.end);
        if self.bracket {
            if self.full == 1 {
                // Rare: one part left after trailing empty ones were cut.
                out.remove(self.start);
            } else {
                out.push(b']');
            }
        }
        true
    }
}

struct Writer {
    d: Delimiters,
    charset: Charset,
    /// Values can be written as they are (valid UTF-8 already).
    verbatim: bool,
    /// Kinds of byte by value (`classes`).
    class: [u8; 256],
    /// The current field holds a byte that may need decoding or escaping (see `SPECIAL`).
    special: bool,
    /// The current field's separators (repetition, component, subcomponent).
    seps: Vec<Sep>,
    scratch: Vec<u8>,
    text: String,
}

impl Writer {
    /// A writer for `msg` (`all`: its bytes): text decoded from the MSH-18 character set, bytes
    /// classed by the message's delimiters.
    #[expect(
        clippy::disallowed_methods,
        reason = "a data-channel writer: it reads MSH-18 under the operation's disclosure"
    )]
    fn new(msg: &Message, all: &[u8], disclosure: &Disclosure) -> Writer {
        let d = msg.delimiters();
        let declared = msg
            .msh()
            .field(18)
            .and_then(|f| f.at(1, 1, 1))
            .map_or(Charset::Default, |b| Charset::from_msh18(b.expose_value(disclosure)));
        let utf8 = std::str::from_utf8(all).is_ok();
        let charset = match declared {
            Charset::Default if utf8 => Charset::Utf8,
            Charset::Default => Charset::Iso8859(1),
            other => other,
        };
        // Slices of a valid UTF-8 buffer cut at ASCII delimiters are valid UTF-8: no per-value
        // check.
        let verbatim = utf8 && matches!(charset, Charset::Utf8 | Charset::Ascii | Charset::Unknown);
        let class = if d == Delimiters::default() { DEFAULT_CLASSES } else { classes(d) };
        Writer {
            d,
            charset,
            verbatim,
            class,
            special: false,
            seps: Vec::new(),
            scratch: Vec::new(),
            text: String::new(),
        }
    }

    /// Writes one field (not MSH-1 or MSH-2) as an array of repetitions. Returns false when
    /// the field holds nothing but separators (it is then written `[]`).
    ///
    /// One pass over the field's bytes says which kinds of byte it holds; when it has
    /// separators, a second finds them, and a flat pass over their offsets writes the
    /// structure, without recursion. At every level, trailing parts that
    /// are empty at all lower levels are left out, a list of one part is written as that part,
    /// and an empty part is `""`. Parts are written as they come: a list is cut back after its
    /// last part that holds anything when it closes, and loses its opening bracket when a
    /// single part is left (both rare: senders seldom leave trailing separators).
    fn field(&mut self, all: &[u8], span: std::ops::Range<usize>, out: &mut Vec<u8>) -> bool {
        let base = span.start;
        let raw = all.get(span).unwrap_or_default();
        // First the kinds of byte the field holds, without a branch per byte; the separators
        // are looked for only when it has some.
        let class = &self.class;
        let kinds = kinds_of(class, raw);
        if kinds & OTHER == 0 {
            // Empty, or nothing but separators.
            out.extend_from_slice(b"[]");
            return false;
        }
        self.special = kinds & SPECIAL != 0;
        if kinds & (SEPARATORS | SPECIAL) == 0 {
            // The common field: one value with nothing to escape or decode. A short one is
            // written with its brackets and quotes as one fixed 20-byte block (see `value`).
            let len = raw.len();
            if let Some(Ok(block)) = all.get(base..base + 16).map(<&[u8; 16]>::try_from)
                && len <= 16
            {
                let mut quoted = [b'"'; 20];
                quoted[0] = b'[';
                if let Some(inner) = quoted.get_mut(2..18) {
                    inner.copy_from_slice(block);
                }
                if let Some(close) = quoted.get_mut(len + 2..len + 4) {
                    close.copy_from_slice(b"\"]");
                }
                let at = out.len();
                out.extend_from_slice(&quoted);
                out.truncate(at + len + 4);
                return true;
            }
        }
        let kind = kinds & SEPARATORS;
        if kinds & SPECIAL == 0 && (kind == COMPONENT || kind == REPETITION) {
            self.one_level(all, base, raw.len(), kind, out);
            return true;
        }
        out.push(b'[');
        if kinds & SEPARATORS == 0 {
            self.value(all, base, base + raw.len(), out);
            out.push(b']');
            return true;
        }
        // Every byte's entry is written, and kept (the count moves on) when it is a separator:
        // no branch per byte, whose outcome would be unpredictable.
        self.seps.clear();
        self.seps.resize(raw.len() + 1, Sep { at: 0, kind: 0 });
        let mut count = 0;
        for (i, &b) in raw.iter().enumerate() {
            let kind = class[usize::from(b)] & SEPARATORS;
            if let Some(sep) = self.seps.get_mut(count) {
                *sep = Sep { at: i as u32, kind };
            }
            count += usize::from(kind != 0);
        }
        self.seps.truncate(count);
        self.seps.push(Sep { at: raw.len() as u32, kind: END });
        let seps = std::mem::take(&mut self.seps);
        self.walk(all, base, &seps, out);
        self.seps = seps;
        out.push(b']');
        true
    }

    /// A field that holds something, with nothing to escape or decode, whose separators are
    /// all of one `kind`, component or repetition: its parts are its bytes between them, each
    /// written as it is, an empty one `""`; trailing empty parts are left out, and one part
    /// left is written as itself (the same as `walk` gives, in one pass and no list).
    fn one_level(&self, all: &[u8], base: usize, len: usize, kind: u8, out: &mut Vec<u8>) {
        let sep = if kind == COMPONENT { self.d.component } else { self.d.repetition };
        let raw = all.get(base..base + len).unwrap_or_default();
        let end = raw.iter().rposition(|&b| b != sep).map_or(0, |last| last + 1);
        let body = raw.get(..end).unwrap_or_default();
        let start = out.len();
        // Components are a list inside the field's single repetition.
        out.extend_from_slice(if kind == COMPONENT { b"[[\"" } else { b"[\"" });
        let mut from = 0;
        for (i, &b) in body.iter().enumerate() {
            if b == sep {
                part(all, base + from, base + i, out);
                from = i + 1;
            }
        }
        // The last part: its `","` is cut back to the closing quote.
        part(all, base + from, base + end, out);
        out.truncate(out.len() - 2);
        if kind == COMPONENT && from == 0 {
            // One component left once trailing empty ones are cut: written as itself.
            out.remove(start + 1);
            out.push(b']');
        } else {
            out.extend_from_slice(if kind == COMPONENT { b"]]" } else { b"]" });
        }
    }

    /// The repetitions of a field (at `base` in `all`) that holds something, from its
    /// separators (`seps`, ending with an `END` entry at the field's end).
    fn walk(&mut self, all: &[u8], base: usize, seps: &[Sep], out: &mut Vec<u8>) {
        // Output length after the last repetition that holds something.
        let mut field_keep = out.len();
        // The open repetition (a list of components) and component (a list of subcomponents,
        // when it has separators; else one value written directly).
        let mut rep = List::open(out, has_before(seps, 0, COMPONENT));
        let mut split = seps.first().is_some_and(|s| s.kind == SUBCOMPONENT);
        let mut comp = List::open(out, split);
        let mut from = base;
        for (t, sep) in seps.iter().enumerate() {
            let to = base + sep.at as usize;
            let full = if split {
                if comp.count > 0 {
                    out.push(b',');
                }
                comp.count += 1;
                if to > from {
                    self.value(all, from, to, out);
                    comp.keep(out);
                } else {
                    out.extend_from_slice(b"\"\"");
                }
                from = to + 1;
                if sep.kind == SUBCOMPONENT {
                    continue;
                }
                comp.close(out)
            } else if to > from {
                self.value(all, from, to, out);
                true
            } else {
                out.extend_from_slice(b"\"\"");
                false
            };
            from = to + 1;
            rep.count += 1;
            if full {
                rep.keep(out);
            }
            let next = seps.get(t + 1).map_or(END, |s| s.kind);
            split = next == SUBCOMPONENT;
            if sep.kind == COMPONENT {
                out.push(b',');
                if split {
                    comp = List::open(out, true);
                }
                continue;
            }
            if rep.close(out) {
                field_keep = out.len();
            }
            if sep.kind == END {
                break;
            }
            out.push(b',');
            rep = List::open(out, has_before(seps, t + 1, COMPONENT));
            if split {
                comp = List::open(out, true);
            }
        }
        out.truncate(field_keep);
    }

    /// A value that is not empty: `all[start..end]`.
    #[inline(always)]
    fn value(&mut self, all: &[u8], start: usize, end: usize, out: &mut Vec<u8>) {
        if self.special {
            return self.leaf(all.get(start..end).unwrap_or_default(), out);
        }
        // Nothing to escape or decode: the bytes as they are. A short value is copied with its
        // quotes as a fixed 18-byte block (no call, one length update) and the output cut back
        // to its length; the bytes past the value are the message's own, left in `out`'s spare
        // capacity, never written.
        let len = end - start;
        match all.get(start..start + 16).map(<&[u8; 16]>::try_from) {
            Some(Ok(block)) if len <= 16 => {
                // The quoted value in an 18-byte block: one fixed-size copy, then the cut.
                let mut quoted = [b'"'; 18];
                if let Some(inner) = quoted.get_mut(1..17) {
                    inner.copy_from_slice(block);
                }
                if let Some(close) = quoted.get_mut(len + 1) {
                    *close = b'"';
                }
                let at = out.len();
                out.extend_from_slice(&quoted);
                out.truncate(at + len + 2);
            }
            _ => {
                out.push(b'"');
                out.extend_from_slice(all.get(start..end).unwrap_or_default());
                out.push(b'"');
            }
        }
    }

    /// A value that may need decoding or escaping (or is the HL7 null `""`).
    #[cold]
    fn leaf(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        if raw == b"\"\"" {
            out.extend_from_slice(b"null");
            return;
        }
        if memchr::memchr(self.d.escape, raw).is_none() {
            return self.text_of(raw, out);
        }
        self.scratch.clear();
        escape::decode(raw, &self.d, &mut self.scratch);
        let decoded = std::mem::take(&mut self.scratch);
        // Hex escapes can produce bytes that are not UTF-8: checked here, not assumed.
        let verbatim = self.verbatim && std::str::from_utf8(&decoded).is_ok();
        self.text_with(&decoded, verbatim, out);
        self.scratch = decoded;
        crate::phi::wipe_keep(&mut self.scratch);
    }

    fn text_of(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        self.text_with(raw, self.verbatim, out);
    }

    fn text_with(&mut self, raw: &[u8], verbatim: bool, out: &mut Vec<u8>) {
        if verbatim || raw.is_ascii() {
            json::string_utf8(out, raw);
            return;
        }
        self.text.clear();
        self.charset.decode_into(raw, &mut self.text);
        json::string(out, &self.text);
    }
}

/// The version whose tables name the fields of a message whose MSH-12 names no version these
/// tables know (missing, or not `2.<n>...`): the redaction engine's fallback too. A version
/// between two known ones is read with the older one (`2.5.2` → 2.5.1, `2.9` → 2.8.2).
pub const NAMED_FALLBACK: Version = Version::V2_5_1;

/// Appends the named model as compact JSON (the shape is described in docs/hl7v2-model.md).
///
/// `{"tables": "2.5.1", "delimiters": {...}, "segments": [{"id": "PID", "fields": {"5
/// patient_name": [{"1 family_name": "DOE", "2 given_name": "JANE"}]}}]}`: segments in order,
/// each with its fields keyed `"<position> <name>"` from the tables of the message's version
/// (`tables`), empty fields left out. A field the tables define as repeating is an array of
/// repetitions, as is any field that repeats in the message; a value of a composite data type
/// is an object keyed by its components' positions and names; a component with
/// subcomponents is an object keyed likewise by its own type's components. What the tables do
/// not define (a Z-segment, a field past the segment's definition, a component past the
/// type's) is keyed by its position alone. Every key comes from the tables and positions,
/// never from the message; every value is written by the positional model's value writer
/// (escapes decoded, the HL7 null `""` as `null`, text decoded from the MSH-18 character set).
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn named_model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let d = msg.delimiters();
    let all = msg.bytes().expose_value(disclosure);
    // MSH-12.1 (an FHS or BHS record has no version: its 12th field is something else).
    let msh = msg.msh();
    let version = Some(msh)
        .filter(|s| s.id().expose_value(disclosure) == b"MSH")
        .and_then(|s| s.field(12))
        .and_then(|f| f.at(1, 1, 1))
        .and_then(|v| Version::nearest(v.expose_value(disclosure)))
        .unwrap_or(NAMED_FALLBACK);
    let tables = schema::schema(version);
    let mut w = Writer::new(msg, all, disclosure);
    out.reserve(all.len() * 3);
    out.extend_from_slice(b"{\"tables\":");
    json::string(out, version.as_str());
    out.push(b',');
    delimiters_json(d, out);
    out.extend_from_slice(b",\"segments\":[");
    for (i, seg) in msg.segments().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"id\":");
        let id = seg.id().expose_value(disclosure);
        w.text_of(id, out);
        out.extend_from_slice(b",\"fields\":{");
        // The segment's definition: the id is only looked up, never written as a key.
        let def = tables.segment(id);
        // MSH-1 and MSH-2 (FHS, BHS too) hold the delimiters: one string each, never split.
        let unsplit = if seg.is_header() { 2 } else { 0 };
        let mut first = true;
        for (n, span) in seg.field_spans().iter().enumerate() {
            if span.start >= span.end {
                continue;
            }
            let position = n + 1;
            let field = def.and_then(|s| s.field(position));
            let at = out.len();
            if !first {
                out.push(b',');
            }
            key(position, field.map(|f| f.name), out);
            if n < unsplit {
                w.text_of(all.get(span.range()).unwrap_or_default(), out);
            } else if !w.named_field(all, span.range(), field, tables, out) {
                // Nothing but separators: left out.
                out.truncate(at);
                continue;
            }
            first = false;
        }
        out.extend_from_slice(b"}}");
    }
    out.extend_from_slice(b"]}");
}

/// Writes the key `"<position> <name>":` (`"5 patient_name":`), the name in snake case from the
/// tables; `"<position>":` when there is none.
fn key(position: usize, name: Option<&'static str>, out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(position.to_string().as_bytes());
    if let Some(name) = name {
        let start = out.len();
        out.push(b' ');
        let mut gap = false;
        for b in name.bytes() {
            match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => {
                    if gap && out.len() > start + 1 {
                        out.push(b'_');
                    }
                    gap = false;
                    out.push(b.to_ascii_lowercase());
                }
                // `Mother's Maiden Name` → `mothers_maiden_name`.
                b'\'' => {}
                _ => gap = true,
            }
        }
        if out.len() == start + 1 {
            out.truncate(start);
        }
    }
    out.extend_from_slice(b"\":");
}

/// The composite data type `id` names in `tables` (`None`: a primitive, `varies`, or a type
/// the tables do not define).
fn composite(tables: &'static Schema, id: &str) -> Option<&'static DataTypeDef> {
    tables.datatype(id).filter(|t| !t.primitive && !t.components.is_empty())
}

/// The parts of `all[range]` between the separators `sep`, as ranges of `all`.
fn parts(all: &[u8], range: Range<usize>, sep: u8) -> impl Iterator<Item = Range<usize>> + '_ {
    let base = range.start;
    all.get(range).unwrap_or_default().split(move |&b| b == sep).scan(base, |at, part| {
        let start = *at;
        *at += part.len() + 1;
        Some(start..start + part.len())
    })
}

impl Writer {
    /// The number of parts of `all[range]` between the separators `sep` up to the last that
    /// holds something (0: none does).
    fn held(&self, all: &[u8], range: Range<usize>, sep: u8) -> usize {
        parts(all, range, sep).enumerate().filter(|(_, r)| self.holds(all, r.clone())).last().map_or(0, |(i, _)| i + 1)
    }

    /// True when `all[range]` holds something but separators.
    fn holds(&self, all: &[u8], range: Range<usize>) -> bool {
        kinds_of(&self.class, all.get(range).unwrap_or_default()) & OTHER != 0
    }

    /// Writes a field (not MSH-1 or MSH-2) of the named model; `def` is its definition.
    /// Returns false, having written nothing, when it holds nothing but separators.
    fn named_field(
        &mut self,
        all: &[u8],
        span: Range<usize>,
        def: Option<&'static FieldDef>,
        tables: &'static Schema,
        out: &mut Vec<u8>,
    ) -> bool {
        let kinds = kinds_of(&self.class, all.get(span.clone()).unwrap_or_default());
        if kinds & OTHER == 0 {
            return false;
        }
        self.special = kinds & SPECIAL != 0;
        let ty = def.and_then(|f| composite(tables, f.data_type));
        // Trailing empty repetitions carry no meaning (as in the positional model).
        let count = self.held(all, span.clone(), self.d.repetition);
        let list = count > 1 || def.is_some_and(FieldDef::is_repeatable);
        if list {
            out.push(b'[');
        }
        for (i, rep) in parts(all, span, self.d.repetition).take(count).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            if !self.holds(all, rep.clone()) {
                // An empty repetition before one that holds something keeps its place.
                out.extend_from_slice(if ty.is_some() { b"{}" } else { b"\"\"" });
                continue;
            }
            if let Some(ty) = ty {
                self.named_parts(all, rep, self.d.component, Some(ty), tables, false, out);
                continue;
            }
            // A type the tables do not name: components (or the subcomponents of the first) are
            // an object keyed by position, so that a component is never mistaken for a
            // subcomponent; trailing empty parts do not count (as in the positional model, and
            // so that a message and its canonical form have one model).
            let first = parts(all, rep.clone(), self.d.component).next().unwrap_or(rep.start..rep.start);
            if self.held(all, rep.clone(), self.d.component) > 1
                || self.held(all, first.clone(), self.d.subcomponent) > 1
            {
                self.named_parts(all, rep, self.d.component, None, tables, false, out);
            } else {
                self.named_component(all, first, None, tables, out);
            }
        }
        if list {
            out.push(b']');
        }
        true
    }

    /// Writes the parts of `all[range]` between the separators `sep` as an object keyed by
    /// position and by the names of `ty`'s components; parts that hold nothing are left out.
    /// `leaves`: the parts are subcomponents, written as values.
    #[expect(clippy::too_many_arguments, reason = "one level of the walk: where, how it is cut, its type")]
    fn named_parts(
        &mut self,
        all: &[u8],
        range: Range<usize>,
        sep: u8,
        ty: Option<&'static DataTypeDef>,
        tables: &'static Schema,
        leaves: bool,
        out: &mut Vec<u8>,
    ) {
        out.push(b'{');
        let mut first = true;
        for (i, part) in parts(all, range, sep).enumerate() {
            if !self.holds(all, part.clone()) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            let position = i + 1;
            let def = ty.and_then(|t| t.component(position));
            key(position, def.map(|c| c.name), out);
            if leaves {
                self.value(all, part.start, part.end, out);
            } else {
                self.named_component(all, part, def, tables, out);
            }
        }
        out.push(b'}');
    }

    /// Writes a component that holds something: a value, or, when it has subcomponents, an
    /// object of them keyed by the names of its type's components (`def`).
    fn named_component(
        &mut self,
        all: &[u8],
        range: Range<usize>,
        def: Option<&'static ComponentDef>,
        tables: &'static Schema,
        out: &mut Vec<u8>,
    ) {
        if self.held(all, range.clone(), self.d.subcomponent) <= 1 {
            // One subcomponent (trailing empty ones do not count): a value.
            let first = parts(all, range.clone(), self.d.subcomponent).next().unwrap_or(range);
            self.value(all, first.start, first.end, out);
            return;
        }
        let ty = def.and_then(|c| composite(tables, c.data_type));
        self.named_parts(all, range, self.d.subcomponent, ty, tables, true, out);
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.scratch);
        zeroize::Zeroize::zeroize(&mut self.text);
    }
}
