//! The oracle of the HL7 v2 model writer: the recursive writer that the flat walk of
//! `formats/hl7v2/write.rs` replaced, and a differential test of the two over generated
//! messages (separators, escapes, quotes, high bytes, character sets, custom delimiters).
//!
//! It lives here because the test grants a [`Disclosure`], which only `ops` and the crate's
//! own tooling may do. What it does not do: anything outside `cargo test`.

use crate::formats::hl7v2::parse::parse;
use crate::limits::Limits;
use crate::phi::Disclosure;

/// The recursive writer the flat walk replaced, kept as the oracle of `flat_walk_agrees`.
mod reference {
    use crate::json;
    use crate::phi::Disclosure;

    use crate::formats::hl7v2::charset::Charset;
    use crate::formats::hl7v2::escape;
    use crate::formats::hl7v2::parse::{Delimiters, Message};

    /// The model as the recursive writer wrote it before the flat walk (the oracle).
    #[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
    pub(super) fn model_json(msg: &Message, disclosure: &Disclosure, out: &mut Vec<u8>) {
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
            Charset::Default => Charset::Iso8859(1),
            other => other,
        };
        // Slices of a valid UTF-8 buffer cut at ASCII delimiters are valid UTF-8: no per-value check.
        let verbatim = utf8 && matches!(charset, Charset::Utf8 | Charset::Ascii | Charset::Unknown);
        let mut w = Writer {
            d,
            charset,
            verbatim,
            class: classes(d),
            masks: Vec::new(),
            scratch: Vec::new(),
            text: String::new(),
        };
        out.push(b'{');
        crate::formats::hl7v2::write::delimiters_json(d, out);
        out.extend_from_slice(b",\"segments\":[");
        let seps = [d.repetition, d.component, d.subcomponent];
        for (i, seg) in msg.segments().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"id\":");
            w.text_of(seg.id().expose_value(disclosure), out);
            out.extend_from_slice(b",\"fields\":[");
            // One pass over each field's bytes says which kinds of byte it holds (see `classes`);
            // the walk below skips every search the mask rules out.
            w.masks.clear();
            let mut last = 0;
            for f in seg.fields() {
                let mask = if f.is_splittable() { w.mask(f.bytes().expose_value(disclosure)) } else { OTHER };
                w.masks.push(mask);
                // Trailing empty fields carry no meaning (chapter 2 asks senders to omit them): the
                // model leaves them out, so that a message and its canonical form have one model.
                if mask & OTHER != 0 {
                    last = last.max(f.position().field);
                }
            }
            for (n, field) in seg.fields().take(last as usize).enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                let raw = field.bytes().expose_value(disclosure);
                let mask = w.masks.get(n).copied().unwrap_or(u8::MAX);
                if !field.is_splittable() {
                    w.text_of(raw, out);
                } else if mask & OTHER == 0 {
                    // Nothing but separators: an empty field.
                } else if mask & REPETITION == 0 {
                    w.level(raw, &seps[1..], mask, out);
                } else {
                    let reps = trim_trailing(raw, d.repetition, &seps[1..]);
                    for (r, rep) in reps.split(|b| *b == d.repetition).enumerate() {
                        if r > 0 {
                            out.push(b',');
                        }
                        w.level(rep, &seps[1..], mask, out);
                    }
                }
                out.push(b']');
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(b"]}");
    }

    /// True when `bytes` holds nothing but separators: an empty part at every level below.
    fn only_separators(bytes: &[u8], seps: &[u8]) -> bool {
        bytes.iter().all(|b| seps.contains(b))
    }

    /// Cuts trailing parts (split at `sep`) that are empty at every lower level (`lower`).
    fn trim_trailing<'a>(bytes: &'a [u8], sep: u8, lower: &[u8]) -> &'a [u8] {
        let mut end = bytes.len();
        while let Some(pos) = memchr::memrchr(sep, &bytes[..end]) {
            if only_separators(&bytes[pos + 1..end], lower) {
                end = pos;
            } else {
                break;
            }
        }
        &bytes[..end]
    }

    /// Kinds of byte, as bits of a field's mask.
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

    /// The kinds of every byte value under the message's delimiters.
    fn classes(d: Delimiters) -> [u8; 256] {
        let mut class = [0u8; 256];
        for (b, c) in (0u8..=255).zip(class.iter_mut()) {
            *c = if b == d.repetition {
                REPETITION
            } else if b == d.component {
                COMPONENT
            } else if b == d.subcomponent {
                SUBCOMPONENT
            } else {
                OTHER
            };
            if b == d.escape {
                *c |= ESCAPE;
            }
            if json::needs_escape(b) {
                *c |= JSON_ESCAPED;
            }
            if b >= 0x80 {
                *c |= HIGH;
            }
        }
        class
    }

    struct Writer {
        d: Delimiters,
        charset: Charset,
        /// Values can be written as they are (valid UTF-8 already).
        verbatim: bool,
        /// Kinds of byte by value (`classes`).
        class: [u8; 256],
        /// The masks of the current segment's fields.
        masks: Vec<u8>,
        scratch: Vec<u8>,
        text: String,
    }

    impl Writer {
        /// The kinds of byte `raw` holds. A part's mask is within its field's: a bit missing from
        /// the field's mask rules the kind out for every part of the field.
        fn mask(&self, raw: &[u8]) -> u8 {
            raw.iter().fold(0, |m, &b| m | self.class[usize::from(b)])
        }

        /// A repetition (seps = component, subcomponent) or a component (seps = subcomponent).
        /// `mask` is the field's (see `mask`).
        fn level(&mut self, raw: &[u8], seps: &[u8], mask: u8, out: &mut Vec<u8>) {
            match seps.split_first() {
                Some((&sep, rest))
                    if mask & self.class[usize::from(sep)] & SEPARATORS != 0 && memchr::memchr(sep, raw).is_some() =>
                {
                    let kept = trim_trailing(raw, sep, rest);
                    if memchr::memchr(sep, kept).is_none() {
                        return self.level(kept, rest, mask, out);
                    }
                    out.push(b'[');
                    for (i, sub) in kept.split(|b| *b == sep).enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        self.level(sub, rest, mask, out);
                    }
                    out.push(b']');
                }
                Some((_, rest)) => self.level(raw, rest, mask, out),
                None => self.leaf(raw, mask, out),
            }
        }

        fn leaf(&mut self, raw: &[u8], mask: u8, out: &mut Vec<u8>) {
            if raw == b"\"\"" {
                out.extend_from_slice(b"null");
                return;
            }
            if mask & ESCAPE == 0 || memchr::memchr(self.d.escape, raw).is_none() {
                if mask & JSON_ESCAPED == 0 && (self.verbatim || mask & HIGH == 0) {
                    // Nothing to escape or decode: the bytes as they are.
                    out.reserve(raw.len() + 2);
                    out.push(b'"');
                    out.extend_from_slice(raw);
                    out.push(b'"');
                    return;
                }
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
}

/// A small deterministic generator (xorshift), so the test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a [u8]]) -> &'a [u8] {
        items[(self.next() % items.len() as u64) as usize]
    }
}

#[test]
#[expect(clippy::disallowed_methods, reason = "the fuzz harness stands in for ops")]
fn flat_walk_agrees_with_the_recursive_writer() {
    let pieces: &[&[u8]] = &[
        b"a",
        b"bc",
        b"^",
        b"^",
        b"~",
        b"&",
        b"&",
        b"|",
        b"|",
        b"\\",
        b"\\F\\",
        b"\\X41\\",
        b"\\XC3A9\\",
        b"\"\"",
        b"\"",
        b"\xC3\xA9",
        b"\xE9",
        b" ",
        b"\t",
        b"\x7F",
        b"",
    ];
    let headers: &[&[u8]] = &[
        b"MSH|^~\\&|A|B",
        b"MSH|^~\\&|||||||||||||||||UNICODE UTF-8",
        b"MSH|^~\\&|||||||||||||||||8859/1",
        b"MSH|^~\\&|||||||||||||||||ASCII",
        b"MSH*:+!@#*A",
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let disclosure = Disclosure::grant();
    for _ in 0..20_000 {
        let mut text = rng.pick(headers).to_vec();
        let custom = text.starts_with(b"MSH*");
        for _ in 0..(rng.next() % 4) {
            text.push(b'\r');
            text.extend_from_slice(b"PID");
            for _ in 0..(rng.next() % 24) {
                let mut piece = rng.pick(pieces).to_vec();
                if custom {
                    for b in &mut piece {
                        *b = match *b {
                            b'|' => b'*',
                            b'^' => b':',
                            b'~' => b'+',
                            b'\\' => b'!',
                            b'&' => b'@',
                            other => other,
                        };
                    }
                }
                text.extend_from_slice(&piece);
            }
        }
        let Ok(msg) = parse(text.clone(), &Limits::default()) else { continue };
        let mut flat = Vec::new();
        crate::formats::hl7v2::write::model_json(&msg, &disclosure, &mut flat);
        let mut recursive = Vec::new();
        reference::model_json(&msg, &disclosure, &mut recursive);
        assert!(flat == recursive, "{}", String::from_utf8_lossy(&text));
    }
}
