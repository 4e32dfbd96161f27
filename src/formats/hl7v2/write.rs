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

use crate::json;
use crate::phi::Disclosure;

use super::charset::Charset;
use super::escape;
use super::parse::{Delimiters, Message};

/// Appends the message model as compact JSON.
pub fn model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let d = msg.delimiters();
    let all = msg.bytes().expose_value(disclosure);
    let declared = msg
        .msh()
        .field(18)
        .and_then(|f| f.at(1, 1, 1))
        .map_or(Charset::Default, |b| Charset::from_msh18(b.expose_value(disclosure)));
    let utf8 = std::str::from_utf8(all).is_ok();
    let charset = match declared {
        Charset::Default if utf8 => Charset::Utf8,
        Charset::Default => Charset::Latin,
        other => other,
    };
    // Slices of a valid UTF-8 buffer cut at ASCII delimiters are valid UTF-8: no per-value check.
    let verbatim = utf8 && matches!(charset, Charset::Utf8 | Charset::Ascii | Charset::Unknown);
    let class = if d == Delimiters::default() { DEFAULT_CLASSES } else { classes(d) };
    let mut w = Writer {
        d,
        charset,
        verbatim,
        class,
        special: false,
        seps: Vec::new(),
        scratch: Vec::new(),
        text: String::new(),
    };
    out.reserve(all.len() * 2);
    out.extend_from_slice(b"{\"delimiters\":{");
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
    out.extend_from_slice(b"},\"segments\":[");
    for (i, seg) in msg.segments().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"id\":");
        w.text_of(seg.id().expose_value(disclosure), out);
        out.extend_from_slice(b",\"fields\":[");
        // Trailing empty fields carry no meaning (chapter 2 asks senders to omit them): the
        // model leaves them out, so that a message and its canonical form have one model. Each
        // field is written as it comes, and the output is cut back after the last one that holds
        // anything.
        let mut keep = out.len();
        // MSH-1 and MSH-2 (FHS, BHS too) hold the delimiters: one string each, never split.
        let unsplit = if seg.is_header() { 2 } else { 0 };
        let spans = seg.field_spans();
        if unsplit == 0
            && let (Some(first), Some(last)) = (spans.first(), spans.last())
            && w.plain_fields(all, first.start as usize, last.end as usize, out)
        {
            out.extend_from_slice(b"]}");
            continue;
        }
        for (n, span) in spans.iter().enumerate() {
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
    fn open(out: &mut impl Out, bracket: bool) -> List {
        let start = out.len();
        if bracket {
            out.push(b'[');
        }
        List { start, bracket, count: 0, full: 0, end: start }
    }

    /// The part just written holds something.
    fn keep(&mut self, out: &impl Out) {
        self.full = self.count;
        self.end = out.len();
    }

    /// Closes the list: trailing empty parts are cut; no part left is `""`, one part left is
    /// written as itself. Returns false when the list was empty.
    fn close(&self, out: &mut impl Out) -> bool {
        if self.full == 0 {
            out.truncate(self.start);
            out.put(b"\"\"");
            return false;
        }
        out.truncate(self.end);
        if self.bracket {
            if self.full == 1 {
                // Rare: one part left after trailing empty ones were cut.
                out.remove_at(self.start);
            } else {
                out.push(b']');
            }
        }
        true
    }
}

/// Where a field's JSON is written: the output vector, or a region of it sized ahead.
trait Out {
    fn len(&self) -> usize;
    fn push(&mut self, b: u8);
    fn put(&mut self, bytes: &[u8]);
    /// Writes the first `len` bytes of `block` (the bytes past them may be written too, and
    /// are then cut or overwritten).
    fn put_block(&mut self, block: &[u8; 16], len: usize);
    fn truncate(&mut self, len: usize);
    /// Removes the byte at `at`, moving the following ones back.
    fn remove_at(&mut self, at: usize);
    /// The output vector, for the path that decodes and escapes.
    fn vec(&mut self) -> Option<&mut Vec<u8>>;
}

impl Out for Vec<u8> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn push(&mut self, b: u8) {
        Vec::push(self, b);
    }
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline(always)]
    fn put_block(&mut self, block: &[u8; 16], len: usize) {
        let at = Vec::len(self);
        self.extend_from_slice(block);
        Vec::truncate(self, at + len);
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
    fn remove_at(&mut self, at: usize) {
        if at < Vec::len(self) {
            self.remove(at);
        }
    }
    fn vec(&mut self) -> Option<&mut Vec<u8>> {
        Some(self)
    }
}

/// A region of the output reserved ahead, written by index with the position held in a
/// register (a `Vec::push` reloads the length and checks the capacity at every byte). A write
/// that does not fit sets `overflow` and writes nothing: the caller then writes the segment
/// again on the vector.
struct Sink<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overflow: bool,
}

impl Out for Sink<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.pos
    }
    #[inline(always)]
    fn push(&mut self, b: u8) {
        match self.buf.get_mut(self.pos) {
            Some(slot) => {
                *slot = b;
                self.pos += 1;
            }
            None => self.overflow = true,
        }
    }
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.pos + bytes.len();
        match self.buf.get_mut(self.pos..end) {
            Some(slot) => {
                slot.copy_from_slice(bytes);
                self.pos = end;
            }
            None => self.overflow = true,
        }
    }
    #[inline(always)]
    fn put_block(&mut self, block: &[u8; 16], len: usize) {
        match self.buf.get_mut(self.pos..self.pos + 16) {
            Some(slot) => {
                slot.copy_from_slice(block);
                self.pos += len.min(16);
            }
            None => self.overflow = true,
        }
    }
    #[inline(always)]
    fn truncate(&mut self, len: usize) {
        self.pos = self.pos.min(len);
    }
    fn remove_at(&mut self, at: usize) {
        if at < self.pos {
            self.buf.copy_within(at + 1..self.pos, at);
            self.pos -= 1;
        }
    }
    fn vec(&mut self) -> Option<&mut Vec<u8>> {
        None
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
    /// Writes one field (not MSH-1 or MSH-2) as an array of repetitions. Returns false when
    /// the field holds nothing but separators (it is then written `[]`).
    ///
    /// One pass over the field's bytes finds its separators; a second, flat pass over their
    /// offsets writes the structure, without recursion. At every level, trailing parts that
    /// are empty at all lower levels are left out, a list of one part is written as that part,
    /// and an empty part is `""`. Parts are written as they come: a list is cut back after its
    /// last part that holds anything when it closes, and loses its opening bracket when a
    /// single part is left (both rare: senders seldom leave trailing separators).
    fn field(&mut self, all: &[u8], span: std::ops::Range<usize>, out: &mut Vec<u8>) -> bool {
        let raw = all.get(span.clone()).unwrap_or_default();
        self.seps.clear();
        let mut kinds = 0u8;
        for (i, &b) in raw.iter().enumerate() {
            let c = self.class[usize::from(b)];
            kinds |= c;
            if c & SEPARATORS != 0 {
                self.seps.push(Sep { at: i as u32, kind: c & SEPARATORS });
            }
        }
        out.push(b'[');
        if kinds & OTHER == 0 {
            out.push(b']');
            return false;
        }
        self.special = kinds & SPECIAL != 0;
        if kinds & SEPARATORS == 0 {
            self.value(all, span.start, span.end, out);
            out.push(b']');
            return true;
        }
        self.seps.push(Sep { at: raw.len() as u32, kind: END });
        let seps = std::mem::take(&mut self.seps);
        self.walk(all, span.start, &seps, out);
        self.seps = seps;
        out.push(b']');
        true
    }

    /// Writes the fields of a segment that is not a header (`all[start..end]`, from its first
    /// field to the end of its line) when none of its bytes needs decoding or escaping, and
    /// returns true; otherwise writes nothing and returns false.
    ///
    /// One pass, eight bytes at a time, finds the field, repetition, component and subcomponent
    /// separators (exactly) and any byte that needs decoding or escaping (the escape character,
    /// `"`, `\`, control characters, DEL, bytes above 0x7F). The output is written by index
    /// into a region sized ahead (8 bytes per input byte and a margin bound what the walk
    /// writes; a write that would not fit falls back to the vector path).
    fn plain_fields(&mut self, all: &[u8], start: usize, end: usize, out: &mut Vec<u8>) -> bool {
        let Some(text) = all.get(start..end) else {
            return false;
        };
        let at = out.len();
        out.resize(at + text.len() * 8 + 64, 0);
        let (ok, pos) = match out.get_mut(at..) {
            Some(buf) => {
                let mut sink = Sink { buf, pos: 0, overflow: false };
                let ok = self.plain_into(all, start, end, &mut sink);
                (ok && !sink.overflow, sink.pos)
            }
            None => (false, 0),
        };
        out.truncate(if ok { at + pos } else { at });
        ok
    }

    fn plain_into(&mut self, all: &[u8], start: usize, end: usize, out: &mut Sink<'_>) -> bool {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let text = all.get(start..end).unwrap_or_default();
        let d = self.d;
        let [fld, rep, comp, sub, esc] =
            [d.field, d.repetition, d.component, d.subcomponent, d.escape].map(|b| ONES * u64::from(b));
        // The high bit of `t(x)` is clear exactly in the bytes of `x` that are zero.
        let t = |x: u64| ((x & LOW7) + LOW7) | x;
        // Nonzero when some byte of `x` is zero (not exact per byte: only the answer is used).
        let any_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
        self.special = false;
        self.seps.clear();
        let mut field_start = start;
        let mut n = 0usize;
        let mut keep = out.len();
        let mut words = text.chunks_exact(8);
        let mut base = start;
        for word in &mut words {
            // Invariant: `chunks_exact(8)` gives 8-byte chunks, so the conversion cannot fail.
            let v = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            let special = (v & HIGH)
                | (v.wrapping_sub(ONES * 0x20) & !v & HIGH)
                | any_zero(v ^ (ONES * 0x7F))
                | any_zero(v ^ (ONES * u64::from(b'"')))
                | any_zero(v ^ (ONES * u64::from(b'\\')))
                | any_zero(v ^ esc);
            if special != 0 {
                return false;
            }
            let mut hits = !((t(v ^ fld) & t(v ^ rep) & t(v ^ comp) & t(v ^ sub)) | LOW7);
            while hits != 0 {
                let i = base + (hits.trailing_zeros() / 8) as usize;
                self.plain_event(all, i, &mut field_start, &mut n, &mut keep, out);
                hits &= hits - 1;
            }
            base += 8;
        }
        for (k, &b) in words.remainder().iter().enumerate() {
            let c = self.class[usize::from(b)];
            if c & SPECIAL != 0 {
                return false;
            }
            if c & SEPARATORS != 0 || b == d.field {
                self.plain_event(all, base + k, &mut field_start, &mut n, &mut keep, out);
            }
        }
        self.plain_field(all, field_start, end, n, &mut keep, out);
        out.truncate(keep);
        true
    }

    /// A separator at `i`: a field ends, or a separator inside the field is noted.
    #[inline(always)]
    fn plain_event(
        &mut self,
        all: &[u8],
        i: usize,
        field_start: &mut usize,
        n: &mut usize,
        keep: &mut usize,
        out: &mut Sink<'_>,
    ) {
        let b = all.get(i).copied().unwrap_or_default();
        if b == self.d.field {
            self.plain_field(all, *field_start, i, *n, keep, out);
            *field_start = i + 1;
            *n += 1;
        } else {
            let kind = self.class[usize::from(b)] & SEPARATORS;
            self.seps.push(Sep { at: (i - *field_start) as u32, kind });
        }
    }

    /// Writes field `n` of a plain segment (`all[start..end]`, its separators in `seps`), as
    /// [`Writer::field`] does.
    fn plain_field(&mut self, all: &[u8], start: usize, end: usize, n: usize, keep: &mut usize, out: &mut Sink<'_>) {
        if n > 0 {
            out.push(b',');
        }
        out.push(b'[');
        let len = end - start;
        let count = self.seps.len();
        if count == len {
            // Nothing but separators (or nothing at all).
            out.push(b']');
        } else if count == 0 {
            self.value(all, start, end, out);
            out.push(b']');
            *keep = out.len();
        } else {
            self.seps.push(Sep { at: len as u32, kind: END });
            let seps = std::mem::take(&mut self.seps);
            self.walk(all, start, &seps, out);
            self.seps = seps;
            out.push(b']');
            *keep = out.len();
        }
        self.seps.clear();
    }

    /// The repetitions of a field (at `base` in `all`) that holds something, from its
    /// separators (`seps`, ending with an `END` entry at the field's end).
    fn walk(&mut self, all: &[u8], base: usize, seps: &[Sep], out: &mut impl Out) {
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
                    out.put(b"\"\"");
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
                out.put(b"\"\"");
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
    fn value(&mut self, all: &[u8], start: usize, end: usize, out: &mut impl Out) {
        if self.special
            && let Some(out) = out.vec()
        {
            return self.leaf(all.get(start..end).unwrap_or_default(), out);
        }
        // Nothing to escape or decode: the bytes as they are. A short value is copied as a
        // fixed 16-byte block (one load and store, no call) and the output cut back to its
        // length; the bytes past the value are the message's own, left in `out`'s spare
        // capacity, never written.
        let len = end - start;
        out.push(b'"');
        match all.get(start..start + 16).map(<&[u8; 16]>::try_from) {
            Some(Ok(block)) if len <= 16 => out.put_block(block, len),
            _ => out.put(all.get(start..end).unwrap_or_default()),
        }
        out.push(b'"');
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
        zeroize::Zeroize::zeroize(&mut self.scratch);
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

impl Drop for Writer {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.scratch);
        zeroize::Zeroize::zeroize(&mut self.text);
    }
}
