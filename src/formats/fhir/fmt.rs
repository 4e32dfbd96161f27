//! Canonical re-serialization of FHIR (a data-channel writer): FHIR JSON for JSON input (the
//! layout described in [`super::write`]), FHIR XML for XML input (below), and the `--check`
//! comparison with the input.
//!
//! Canonical XML: an XML declaration (`<?xml version="1.0" encoding="UTF-8"?>`), the root in
//! the FHIR default namespace, elements in the order of the core definitions, two spaces of
//! indentation per level, attributes in the order `id`, `url`, `value`, empty elements closed
//! as `<name value="..."/>`, attribute values escaped (`&amp; &lt; &gt; &quot;` and character
//! references for TAB, LF and CR), `Narrative.div` written as it was read, elements without a
//! definition last, as they were read; a final newline.
//!
//! [`canonical_as`] converts: JSON in, canonical XML out, or the reverse (`fmt --to`). Elements
//! without a definition are written only in the syntax they were read in (a JSON key with no
//! definition is left out of XML output, and the reverse).
//!
//! What it does not do: change values, keep XML comments, or re-indent inside `div`.

use crate::phi::Disclosure;

use super::definitions::{self as defs, Kind, TypeRef};
use super::model::{Document, Syntax, ValueKind};
use super::write::{Edits, ValueEdit};

/// Appends the canonical form of `doc`; `line` writes one compact line (NDJSON records).
pub fn canonical(doc: &Document, disclosure: &Disclosure, line: bool, out: &mut Vec<u8>) {
    canonical_as(doc, doc.syntax(), disclosure, line, out);
}

/// Appends the canonical form of `doc` in `syntax` (JSON in, XML out, or the reverse); `line`
/// writes one compact JSON line (NDJSON records; no effect on XML).
pub fn canonical_as(doc: &Document, syntax: Syntax, disclosure: &Disclosure, line: bool, out: &mut Vec<u8>) {
    match syntax {
        Syntax::Json => {
            super::write::resource_json(doc, disclosure, !line, out);
            if line {
                out.push(b'\n');
            }
        }
        Syntax::Xml => resource_xml(doc, disclosure, out),
    }
}

/// The canonical form of `doc` in its own syntax with `edits` applied (redaction).
pub fn canonical_edited(doc: &Document, disclosure: &Disclosure, line: bool, edits: &Edits, out: &mut Vec<u8>) {
    match doc.syntax() {
        Syntax::Json => {
            super::write::resource_json_edited(doc, disclosure, !line, Some(edits), out);
            if line {
                out.push(b'\n');
            }
        }
        Syntax::Xml => resource_xml_edited(doc, disclosure, Some(edits), out),
    }
}

/// True when `canonical` (from [`canonical`] or [`canonical_as`]) is byte for byte the input of `doc` (the final
/// newline of an NDJSON line aside).
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(doc: &Document, disclosure: &Disclosure, line: bool, canonical: &[u8]) -> bool {
    let input = doc.input.span().expose_value(disclosure);
    let canonical = if line { canonical.strip_suffix(b"\n").unwrap_or(canonical) } else { canonical };
    canonical == input
}

/// Appends the resource as canonical FHIR XML.
fn resource_xml(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    resource_xml_edited(doc, disclosure, None, out);
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
fn resource_xml_edited(doc: &Document, disclosure: &Disclosure, edits: Option<&Edits>, out: &mut Vec<u8>) {
    let mut w = Writer {
        edits,
        doc,
        values: doc.values.span().expose_value(disclosure),
        input: doc.input.span().expose_value(disclosure),
        out,
    };
    w.out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    w.resource(0, 0, true);
    w.out.push(b'\n');
}

struct Writer<'a> {
    edits: Option<&'a Edits>,
    doc: &'a Document,
    values: &'a [u8],
    input: &'a [u8],
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    fn kept(&self, i: u32) -> bool {
        self.edits.is_none_or(|e| e.kept(i))
    }

    /// The value written for node `i` (`None`: no value).
    fn text_of(&self, i: u32) -> Option<&'a [u8]> {
        let doc: &'a Document = self.doc;
        let values: &'a [u8] = self.values;
        let node = doc.node(i);
        let edits: Option<&'a Edits> = self.edits;
        match edits.map(|e| e.value(i)) {
            Some(ValueEdit::Removed) => None,
            Some(ValueEdit::Replaced(v)) => Some(v),
            _ => node.has_value().then(|| node.value.of(values)),
        }
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.extend_from_slice(b"  ");
        }
    }

    fn resource(&mut self, i: u32, depth: usize, root: bool) {
        let node = *self.doc.node(i);
        let name = node.ty.map(defs::type_name).unwrap_or("");
        self.indent(depth);
        self.out.push(b'<');
        self.out.extend_from_slice(name.as_bytes());
        if root {
            self.out.extend_from_slice(b" xmlns=\"http://hl7.org/fhir\"");
        }
        self.body(i, name.as_bytes(), depth);
    }

    /// Attributes, then `/>` or `>` children `</name>`.
    fn body(&mut self, i: u32, name: &[u8], depth: usize) {
        let doc = self.doc;
        let node = *doc.node(i);
        let mut attrs: Vec<(u8, u32)> = Vec::new();
        let mut elems: Vec<(u16, u32)> = Vec::new();
        let mut unknown: Vec<u32> = Vec::new();
        for c in doc.children(i) {
            if !self.kept(c) {
                continue;
            }
            let n = doc.node(c);
            if n.is_unknown() && n.elem.is_none() {
                unknown.push(c);
                continue;
            }
            let Some(def) = n.elem.and_then(defs::element) else { continue };
            if n.is_unknown() && doc.syntax() != Syntax::Xml {
                // A wrapper whose resource could not be typed, read from JSON: no XML for it.
                continue;
            }
            if def.xml_attr && self.text_of(c).is_some() && !doc.children(c).any(|g| self.kept(g)) {
                let rank = match def.name {
                    "id" => 0,
                    "url" => 1,
                    _ => 2,
                };
                attrs.push((rank, c));
            } else {
                elems.push((n.elem.map_or(0, |e| e.idx), c));
            }
        }
        attrs.sort_by_key(|a| a.0);
        elems.sort_by_key(|e| e.0);
        for (_, a) in &attrs {
            let n = *doc.node(*a);
            self.out.push(b' ');
            self.out.extend_from_slice(n.name.as_bytes());
            self.out.extend_from_slice(b"=\"");
            let v = self.text_of(*a).unwrap_or_default();
            self.escaped(v);
            self.out.push(b'"');
        }
        let primitive = node.ty.is_some_and(|t| defs::kind(t) == Kind::Primitive) && node.parent != super::model::NONE;
        if primitive && node.value_kind != ValueKind::Xhtml && self.text_of(i).is_some() {
            self.out.extend_from_slice(b" value=\"");
            let v = self.text_of(i).unwrap_or_default();
            self.escaped(v);
            self.out.push(b'"');
        }
        let show_unknown = doc.syntax() == Syntax::Xml && !unknown.is_empty();
        if elems.is_empty() && !show_unknown {
            self.out.extend_from_slice(b"/>");
            return;
        }
        self.out.push(b'>');
        for (_, c) in elems {
            self.out.push(b'\n');
            self.element(c, depth + 1);
        }
        if show_unknown {
            for u in unknown {
                self.out.push(b'\n');
                self.indent(depth + 1);
                let (s, e) = doc.node(u).raw;
                self.out.extend_from_slice(self.input.get(s as usize..e as usize).unwrap_or_default());
            }
        }
        self.out.push(b'\n');
        self.indent(depth);
        self.out.extend_from_slice(b"</");
        self.out.extend_from_slice(name);
        self.out.push(b'>');
    }

    fn element(&mut self, c: u32, depth: usize) {
        let doc = self.doc;
        let n = *doc.node(c);
        let Some(def) = n.elem.and_then(defs::element) else { return };
        let mut name = def.name.as_bytes().to_vec();
        if def.choice {
            if let Some(t) = n.ty {
                let tn = defs::type_name(t).as_bytes();
                if let Some((f, rest)) = tn.split_first() {
                    name.push(f.to_ascii_uppercase());
                    name.extend_from_slice(rest);
                }
            }
        }
        if n.value_kind == ValueKind::Xhtml {
            self.indent(depth);
            self.out.extend_from_slice(n.value.of(self.values));
            return;
        }
        if n.is_resource() || def.types.first() == Some(&TypeRef::Resource) {
            self.indent(depth);
            self.out.push(b'<');
            self.out.extend_from_slice(&name);
            if n.is_unknown() {
                // A wrapper whose resource could not be typed: as read.
                self.out.push(b'>');
                let (s, e) = n.raw;
                self.out.extend_from_slice(self.input.get(s as usize..e as usize).unwrap_or_default());
            } else {
                self.out.extend_from_slice(b">\n");
                self.resource(c, depth + 1, false);
                self.out.push(b'\n');
                self.indent(depth);
            }
            self.out.extend_from_slice(b"</");
            self.out.extend_from_slice(&name);
            self.out.push(b'>');
            return;
        }
        self.indent(depth);
        self.out.push(b'<');
        self.out.extend_from_slice(&name);
        self.body(c, &name, depth);
    }

    fn escaped(&mut self, v: &[u8]) {
        for &b in v {
            match b {
                b'&' => self.out.extend_from_slice(b"&amp;"),
                b'<' => self.out.extend_from_slice(b"&lt;"),
                b'>' => self.out.extend_from_slice(b"&gt;"),
                b'"' => self.out.extend_from_slice(b"&quot;"),
                b'\n' => self.out.extend_from_slice(b"&#xA;"),
                b'\r' => self.out.extend_from_slice(b"&#xD;"),
                b'\t' => self.out.extend_from_slice(b"&#x9;"),
                _ => self.out.push(b),
            }
        }
    }
}
