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
use super::parse::{Delimiters, Message, Part};

/// Appends the message model as compact JSON.
pub fn model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let d = msg.delimiters();
    let all = msg.bytes().expose_value(disclosure);
    let declared = msg
        .msh()
        .field(18)
        .and_then(|f| f.at(1, 1, 1))
        .map_or(Charset::Default, |b| Charset::from_msh18(b.expose_value(disclosure)));
    let charset = match declared {
        Charset::Default if std::str::from_utf8(all).is_ok() => Charset::Utf8,
        Charset::Default => Charset::Latin,
        other => other,
    };
    let mut w = Writer { d, charset, disclosure, scratch: Vec::new(), text: String::new() };
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
        json::string(out, &char::from(b).to_string());
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
        // model leaves them out, so that a message and its canonical form have one model.
        let last = seg.fields().filter(|f| !f.is_empty() || !f.is_splittable()).map(|f| f.position().field).max().unwrap_or(0);
        for (n, field) in seg.fields().take(last as usize).enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.push(b'[');
            if !field.is_splittable() {
                w.text_of(field.bytes().expose_value(disclosure), out);
            } else {
                let reps = trimmed(field.repetitions().collect());
                for (r, rep) in reps.into_iter().enumerate() {
                    if r > 0 {
                        out.push(b',');
                    }
                    w.level(rep, &[d.component, d.subcomponent], out);
                }
            }
            out.push(b']');
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}");
}

/// Drops trailing empty parts (a field `A^^` means the same as `A`).
fn trimmed(mut parts: Vec<Part<'_>>) -> Vec<Part<'_>> {
    while parts.last().is_some_and(|p| p.bytes.is_empty()) {
        parts.pop();
    }
    parts
}

struct Writer<'d> {
    d: Delimiters,
    charset: Charset,
    disclosure: &'d Disclosure,
    scratch: Vec<u8>,
    text: String,
}

impl Writer<'_> {
    /// A repetition (seps = component, subcomponent) or a component (seps = subcomponent).
    fn level(&mut self, part: Part<'_>, seps: &[u8], out: &mut Vec<u8>) {
        let raw = part.bytes.expose_value(self.disclosure);
        match seps.split_first() {
            Some((&sep, rest)) if raw.contains(&sep) => {
                let parts = trimmed(part.split(Some(sep)).collect());
                if parts.len() <= 1 {
                    let only = parts.into_iter().next().unwrap_or(part);
                    return self.level(only, rest, out);
                }
                out.push(b'[');
                for (i, sub) in parts.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    self.level(sub, rest, out);
                }
                out.push(b']');
            }
            Some((_, rest)) => self.level(part, rest, out),
            None => self.leaf(raw, out),
        }
    }

    fn leaf(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        if raw == b"\"\"" {
            out.extend_from_slice(b"null");
            return;
        }
        self.scratch.clear();
        escape::decode(raw, &self.d, &mut self.scratch);
        self.text.clear();
        self.charset.decode_into(&self.scratch, &mut self.text);
        json::string(out, &self.text);
        zeroize::Zeroize::zeroize(&mut self.scratch);
    }

    fn text_of(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        self.text.clear();
        self.charset.decode_into(raw, &mut self.text);
        json::string(out, &self.text);
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.scratch);
        zeroize::Zeroize::zeroize(&mut self.text);
    }
}
