//! Reading message values for the converter: the only file of `convert/` that turns a value into
//! text, and only with the [`Disclosure`] that `ops` lends for the conversion.
//!
//! A [`Rep`] is one repetition of a field with its position; components and subcomponents are
//! split on access. Text is unescaped (delimiter and hexadecimal escapes; `\.br\` becomes a line
//! break, other formatting escapes are kept as written) and decoded from the MSH-18 character set.
//! The HL7 null `""` reads as nothing.
//!
//! Control characters a FHIR string cannot hold become spaces; the reader only remembers that it
//! replaced some (the converter reports where).
//!
//! What it does not do: interpret values (datatypes.rs does), or report anything.

use zeroize::Zeroize;

use crate::diag::Hl7Position;
use crate::formats::hl7v2::charset::Charset;
use crate::formats::hl7v2::escape;
use crate::formats::hl7v2::parse::{Delimiters, Message, SegmentRef};
use crate::phi::{Disclosure, PhiBytes};

/// Value access for one message.
pub struct Reader<'m> {
    d: Delimiters,
    charset: Charset,
    disclosure: &'m Disclosure,
    /// The message may hold control bytes (the lexer's byte facts).
    control: bool,
    /// A text had control characters replaced ([`Reader::text`]).
    replaced: std::cell::Cell<bool>,
}

/// A character a FHIR string cannot hold: below U+0020 but tab, line feed and carriage return.
pub fn is_forbidden_control(b: u8) -> bool {
    b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reader")
    }
}

/// One repetition of a field.
#[derive(Copy, Clone, Debug)]
pub struct Rep<'a> {
    /// The repetition's raw bytes.
    pub bytes: PhiBytes<'a>,
    /// Where it is (`PID[1]-3[2]`).
    pub pos: Hl7Position,
    d: Delimiters,
}

impl<'a> Rep<'a> {
    /// Component `c` (1-based), empty when absent.
    pub fn c(self, c: usize) -> PhiBytes<'a> {
        self.part(c).map_or(self.bytes.slice(0, 0), |p| p.bytes)
    }

    /// Components 1 to `N`, split in one pass (`c(1)` to `c(N)`, each empty when absent): for
    /// a datatype that reads many of its components.
    pub fn components<const N: usize>(self) -> [PhiBytes<'a>; N] {
        let mut out = [self.bytes.slice(0, 0); N];
        let parts = crate::formats::hl7v2::parse::Part { bytes: self.bytes }.split(Some(self.d.component));
        for (slot, p) in out.iter_mut().zip(parts) {
            *slot = p.bytes;
        }
        out
    }

    /// Component `c` as a repetition-like value whose subcomponents are its components (for
    /// composite components such as CX-4, an HD).
    pub fn composite(self, c: usize) -> Rep<'a> {
        let bytes = self.c(c);
        Rep { bytes, pos: self.at(c as u32), d: Delimiters { component: self.d.subcomponent, ..self.d } }
    }

    /// Where part `k` of this repetition is: component `k` of a field's repetition, or
    /// subcomponent `k` of a component taken by [`Rep::composite`] (`OBR-15[1].1.2`, not
    /// `OBR-15[1].2`).
    pub fn at(self, k: u32) -> Hl7Position {
        if self.pos.component == 0 { self.pos.component(k, 0) } else { self.pos.component(self.pos.component, k) }
    }

    /// Numbers of the populated components (1-based).
    pub fn populated(self) -> impl Iterator<Item = u32> + 'a {
        let sep = self.d.component;
        crate::formats::hl7v2::parse::Part { bytes: self.bytes }
            .split(Some(sep))
            .enumerate()
            .filter(|(_, p)| !p.bytes.is_empty())
            .map(|(i, _)| i as u32 + 1)
    }

    fn part(self, c: usize) -> Option<crate::formats::hl7v2::parse::Part<'a>> {
        crate::formats::hl7v2::parse::Part { bytes: self.bytes }.split(Some(self.d.component)).nth(c.checked_sub(1)?)
    }

    /// True when the repetition holds nothing.
    pub fn is_empty(self) -> bool {
        self.bytes.is_empty()
    }
}

impl<'m> Reader<'m> {
    /// A reader for a message.
    #[expect(
        clippy::disallowed_methods,
        reason = "the converter's one reader: its output is the Bundle on the data channel"
    )]
    pub fn new(msg: &'m Message, disclosure: &'m Disclosure) -> Reader<'m> {
        let declared = msg
            .msh()
            .field(18)
            .and_then(|f| f.at(1, 1, 1))
            .map_or(Charset::Default, |b| Charset::from_msh18(b.expose_value(disclosure)));
        let charset = match declared {
            Charset::Default if std::str::from_utf8(msg.bytes().expose_value(disclosure)).is_ok() => Charset::Utf8,
            Charset::Default => Charset::Iso8859(1),
            other => other,
        };
        Reader {
            d: msg.delimiters(),
            charset,
            disclosure,
            control: msg.byte_facts().control,
            replaced: std::cell::Cell::new(false),
        }
    }

    /// True once a text had control characters replaced by spaces.
    pub fn replaced_control(&self) -> bool {
        self.replaced.get()
    }

    /// The non-empty repetitions of field `n` of a segment, in order (without collecting them:
    /// most fields have one).
    pub fn reps<'a>(&self, seg: SegmentRef<'a>, n: u32) -> impl Iterator<Item = Rep<'a>> + use<'a> {
        let d = self.d;
        // A field that is not splittable is one repetition (its repetition separator is not
        // one): `repetitions` gives it whole.
        seg.field(n).filter(|f| !f.is_empty()).into_iter().flat_map(move |f| {
            let base = f.position();
            f.repetitions().enumerate().filter(|(_, p)| !p.bytes.is_empty()).map(move |(i, p)| Rep {
                bytes: p.bytes,
                pos: base.field(n, i as u32 + 1),
                d,
            })
        })
    }

    /// The first non-empty repetition of field `n`.
    pub fn first<'a>(&self, seg: SegmentRef<'a>, n: u32) -> Option<Rep<'a>> {
        self.reps(seg, n).next()
    }

    /// Component `c` of the first repetition of field `n`, as text.
    pub fn field_text(&self, seg: SegmentRef<'_>, n: u32, c: usize) -> Option<String> {
        self.first(seg, n).and_then(|r| self.text(r.c(c)))
    }

    /// Unescaped, decoded text; `None` for an empty value or the HL7 null `""`. Leading and
    /// trailing white space is removed.
    #[expect(
        clippy::disallowed_methods,
        reason = "the converter's one reader: its output is the Bundle on the data channel"
    )]
    pub fn text(&self, b: PhiBytes<'_>) -> Option<String> {
        let raw = b.expose_value(self.disclosure);
        if raw.is_empty() || raw == b"\"\"" {
            return None;
        }
        let escaped = memchr::memchr(self.d.escape, raw).is_some();
        // Rendered formatting commands can make the text longer than its escaped form (at most
        // 16 bytes for the 7 of `\.sp 16\`): room for three times it, so that the buffer never
        // grows (a grown buffer would leave its first allocation unwiped).
        let mut buf = super::tree::string(if escaped { raw.len().saturating_mul(3) } else { raw.len() }).into_bytes();
        if escaped {
            // Delimiter and hex escapes decoded, formatting commands rendered as plain text.
            let room = buf.capacity();
            escape::decode_plain(raw, &self.d, &mut buf);
            debug_assert_eq!(buf.capacity(), room, "rendered text outgrew its room");
        } else {
            buf.extend_from_slice(raw);
        }
        let mut text = match String::from_utf8(buf) {
            Ok(s) if matches!(self.charset, Charset::Utf8 | Charset::Ascii | Charset::Unknown) || s.is_ascii() => s,
            Ok(s) => {
                let mut t = String::with_capacity(s.len());
                self.charset.decode_into(s.as_bytes(), &mut t);
                let mut s = s;
                s.zeroize();
                t
            }
            Err(e) => {
                let mut bytes = e.into_bytes();
                let mut t = String::with_capacity(bytes.len());
                self.charset.decode_into(&bytes, &mut t);
                bytes.zeroize();
                t
            }
        };
        // Control characters (raw, or from a hex escape) cannot be in a FHIR string: each
        // becomes a space, and the message is reported (`Ctx::report_control`).
        if (self.control || escaped) && text.bytes().any(is_forbidden_control) {
            let cleaned: String =
                text.chars().map(|c| if c.is_ascii() && is_forbidden_control(c as u8) { ' ' } else { c }).collect();
            text.zeroize();
            text = cleaned;
            self.replaced.set(true);
        }
        let trimmed = text.trim();
        if trimmed.is_empty() {
            text.zeroize();
            return None;
        }
        if trimmed.len() != text.len() {
            let t = trimmed.to_owned();
            text.zeroize();
            return Some(t);
        }
        Some(text)
    }

    /// [`Reader::text`] for a FHIR `code`, which allows no white space but single spaces between
    /// parts: each run of white space inside it (blanks, tabs, line breaks, Unicode spaces)
    /// becomes one space (the ends are trimmed already, as for every text).
    pub fn code_text(&self, b: PhiBytes<'_>) -> Option<String> {
        let mut t = self.text(b)?;
        // White space as the validator reads it (`char::is_whitespace`: U+0085 and U+2028 too).
        if t.chars().any(|c| c.is_whitespace() && c != ' ') || t.contains("  ") {
            let mut collapsed = super::tree::string(t.len());
            for (k, part) in t.split(char::is_whitespace).filter(|p| !p.is_empty()).enumerate() {
                if k > 0 {
                    collapsed.push(' ');
                }
                collapsed.push_str(part);
            }
            t.zeroize();
            t = collapsed;
        }
        Some(t)
    }

    /// [`Reader::code_text`] of component `c` of the first repetition of field `n`.
    pub fn field_code(&self, seg: SegmentRef<'_>, n: u32, c: usize) -> Option<String> {
        self.first(seg, n).and_then(|r| self.code_text(r.c(c)))
    }

    /// The raw bytes, for keyed derivations (resource ids) and exact comparisons only.
    #[expect(
        clippy::disallowed_methods,
        reason = "the converter's one reader: its output is the Bundle on the data channel"
    )]
    pub fn raw_for_key<'a>(&self, b: PhiBytes<'a>) -> &'a [u8] {
        b.expose_value(self.disclosure)
    }
}
