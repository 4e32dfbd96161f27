//! The writers of a SCRIPT message: the JSON model and the canonical XML (data channel), and the
//! value-free summary.
//!
//! Canonical XML: the declaration `<?xml version="1.0" encoding="UTF-8"?>`; the SCRIPT namespace
//! as the default, `xsi:` (and `ns1:`, `ns2:`... for any other namespace, in order of first use)
//! declared once on the root; two-space indentation; attributes unprefixed first, by name, then
//! prefixed ones by qualified name; an element with text of its own written inline with its
//! content; empty elements as `<x/>`; text escaped (`&`, `<`, `>`, CR), attribute values too
//! (`&`, `<`, `"`, tab, LF, CR). Comments and processing instructions are not kept.
//!
//! The JSON model: `{"format":"ncpdp-script","version","messageType","message":NODE}`, a node
//! being `{"name","namespace"?,"attributes"?,"children"?,"text"?,"content"?}`: names as written,
//! attributes by qualified name (`{uri}name` in another namespace), children in order, an
//! element's own text as `text` (or, mixed with elements, `content`: strings and nodes in order).
//! `version` and `messageType` are names of the tables (`unknown` otherwise).
//!
//! The summary: version, message type, counts of elements, medications and parts by name of
//! the tables; nothing else from the message, so no value.
//!
//! What it does not do: keep comments, processing instructions, or white-space-only text.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity};
use crate::formats::xml::{Attr, NsId};
use crate::phi::Disclosure;

use super::read::{Document, Ns, XSI_NS};
use super::tables::{self, SCRIPT_NS};

/// Namespace prefixes of a canonical message: the URIs of other namespaces, in order of first
/// use (`ns1`, `ns2`...).
pub(crate) struct Prefixes<'a> {
    other: Vec<&'a [u8]>,
    /// The prefix number of each namespace id (0: not another namespace).
    of: Vec<usize>,
    xsi: bool,
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub(crate) fn prefixes<'a>(doc: &'a Document, disclosure: &Disclosure) -> Prefixes<'a> {
    let tree = doc.tree();
    let mut p = Prefixes { other: Vec::new(), of: vec![0; tree.namespace_count()], xsi: false };
    let note = |id: NsId, ns: Ns, p: &mut Prefixes<'a>| match ns {
        Ns::Xsi => p.xsi = true,
        Ns::Other if p.of.get(id.index()) == Some(&0) => {
            let uri = tree.namespace(id).expose_value(disclosure);
            let n = match p.other.iter().position(|u| *u == uri) {
                Some(i) => i + 1,
                None => {
                    p.other.push(uri);
                    p.other.len()
                }
            };
            if let Some(slot) = p.of.get_mut(id.index()) {
                *slot = n;
            }
        }
        _ => {}
    };
    for (i, e) in tree.elements().iter().enumerate() {
        note(e.ns, doc.ns(i as u32), &mut p);
        let first = e.attrs.start as usize;
        for (k, a) in tree.attrs_of(i as u32).iter().enumerate() {
            note(a.ns, doc.attr_ns(first + k), &mut p);
        }
    }
    p
}

impl Prefixes<'_> {
    /// Forgets the other namespaces (the redaction engine drops their elements and attributes).
    pub(crate) fn only_script(&mut self) {
        self.other.clear();
    }

    /// True when `xsi:` is declared on the root.
    pub(crate) fn xsi(&self) -> bool {
        self.xsi
    }
}

pub(crate) fn prefix_of(p: &Prefixes<'_>, id: NsId, ns: Ns) -> String {
    match ns {
        Ns::Xsi => "xsi:".into(),
        Ns::Xml => "xml:".into(),
        Ns::Other => format!("ns{}:", p.of.get(id.index()).copied().unwrap_or(0)),
        Ns::Script | Ns::None => String::new(),
    }
}

/// Escapes text content.
pub(crate) fn text_escaped(out: &mut Vec<u8>, v: &[u8]) {
    for &b in v {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'\r' => out.extend_from_slice(b"&#13;"),
            _ => out.push(b),
        }
    }
}

/// Escapes an attribute value (double-quoted).
pub(crate) fn attr_escaped(out: &mut Vec<u8>, v: &[u8]) {
    for &b in v {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\t' => out.extend_from_slice(b"&#9;"),
            b'\n' => out.extend_from_slice(b"&#10;"),
            b'\r' => out.extend_from_slice(b"&#13;"),
            _ => out.push(b),
        }
    }
}

/// The attributes of element `e` in canonical order: (qualified name, namespace, attribute).
pub(crate) fn sorted_attrs<'d>(doc: &'d Document, p: &Prefixes<'_>, e: u32) -> Vec<(Vec<u8>, Ns, &'d Attr)> {
    let tree = doc.tree();
    let first = tree.elements().get(e as usize).map_or(0, |x| x.attrs.start as usize);
    let mut v: Vec<(Vec<u8>, Ns, &Attr)> = tree
        .attrs_of(e)
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let ns = doc.attr_ns(first + k);
            let mut q = prefix_of(p, a.ns, ns).into_bytes();
            q.extend_from_slice(doc.attr_local(a));
            (q, ns, a)
        })
        .collect();
    v.sort_by(|a, b| ((a.1 != Ns::None), &a.0).cmp(&((b.1 != Ns::None), &b.0)));
    v
}

/// Writes the namespace declarations of the root.
pub(crate) fn root_declarations(p: &Prefixes<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b" xmlns=\"");
    out.extend_from_slice(SCRIPT_NS);
    out.push(b'"');
    if p.xsi {
        out.extend_from_slice(b" xmlns:xsi=\"");
        out.extend_from_slice(XSI_NS);
        out.push(b'"');
    }
    for (i, uri) in p.other.iter().enumerate() {
        out.extend_from_slice(format!(" xmlns:ns{}=\"", i + 1).as_bytes());
        attr_escaped(out, uri);
        out.push(b'"');
    }
}

struct Writer<'a> {
    doc: &'a Document,
    p: Prefixes<'a>,
    disclosure: &'a Disclosure,
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
impl Writer<'_> {
    /// Writes element `e`. `default_script`: the default namespace in scope is SCRIPT's.
    fn element(&self, e: u32, depth: usize, inline: bool, default_script: bool, out: &mut Vec<u8>) {
        let doc = self.doc;
        let tree = doc.tree();
        let Some(el) = tree.elements().get(e as usize) else { return };
        let ns = doc.ns(e);
        if !inline {
            out.extend(std::iter::repeat_n(b' ', depth * 2));
        }
        let mut name = prefix_of(&self.p, el.ns, ns).into_bytes();
        name.extend_from_slice(doc.local(e));
        out.push(b'<');
        out.extend_from_slice(&name);
        let mut default_here = default_script;
        if e == 0 {
            root_declarations(&self.p, out);
        } else if ns == Ns::None && default_script {
            out.extend_from_slice(b" xmlns=\"\"");
            default_here = false;
        } else if ns == Ns::Script && !default_script {
            out.extend_from_slice(b" xmlns=\"");
            out.extend_from_slice(SCRIPT_NS);
            out.push(b'"');
            default_here = true;
        }
        for (q, _, a) in sorted_attrs(doc, &self.p, e) {
            out.push(b' ');
            out.extend_from_slice(&q);
            out.extend_from_slice(b"=\"");
            attr_escaped(out, tree.value(a.value).expose_value(self.disclosure));
            out.push(b'"');
        }
        let children: Vec<u32> = tree.children(e).collect();
        let own_text = tree.texts_of(e).next().is_some();
        if children.is_empty() && !own_text {
            out.extend_from_slice(b"/>");
        } else if own_text || inline {
            out.push(b'>');
            let mut texts = tree.texts_of(e).peekable();
            for &c in &children {
                while let Some(t) = texts.next_if(|t| t.before <= c) {
                    text_escaped(out, tree.value(t.value).expose_value(self.disclosure));
                }
                self.element(c, depth + 1, true, default_here, out);
            }
            for t in texts {
                text_escaped(out, tree.value(t.value).expose_value(self.disclosure));
            }
            out.extend_from_slice(b"</");
            out.extend_from_slice(&name);
            out.push(b'>');
        } else {
            out.extend_from_slice(b">\n");
            for &c in &children {
                self.element(c, depth + 1, false, default_here, out);
            }
            out.extend(std::iter::repeat_n(b' ', depth * 2));
            out.extend_from_slice(b"</");
            out.extend_from_slice(&name);
            out.push(b'>');
        }
        if !inline {
            out.push(b'\n');
        }
    }

    fn node_json(&self, e: u32, out: &mut Vec<u8>) {
        let doc = self.doc;
        let tree = doc.tree();
        let Some(el) = tree.elements().get(e as usize) else { return };
        out.extend_from_slice(b"{\"name\":");
        crate::json::string_utf8(out, doc.local(e));
        if doc.ns(e) != Ns::Script {
            out.extend_from_slice(b",\"namespace\":");
            crate::json::string_utf8(out, tree.namespace(el.ns).expose_value(self.disclosure));
        }
        let attrs = sorted_attrs(doc, &self.p, e);
        if !attrs.is_empty() {
            out.extend_from_slice(b",\"attributes\":{");
            for (i, (q, ns, a)) in attrs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let key = if *ns == Ns::Other {
                    let mut key = b"{".to_vec();
                    key.extend_from_slice(tree.namespace(a.ns).expose_value(self.disclosure));
                    key.push(b'}');
                    key.extend_from_slice(doc.attr_local(a));
                    key
                } else {
                    q.clone()
                };
                crate::json::string_utf8(out, &key);
                out.push(b':');
                crate::json::string_utf8(out, tree.value(a.value).expose_value(self.disclosure));
            }
            out.push(b'}');
        }
        let children: Vec<u32> = tree.children(e).collect();
        let own_text = tree.texts_of(e).next().is_some();
        if own_text && children.is_empty() {
            out.extend_from_slice(b",\"text\":");
            let mut text = Vec::new();
            for t in tree.texts_of(e) {
                text.extend_from_slice(tree.value(t.value).expose_value(self.disclosure));
            }
            crate::json::string_utf8(out, &text);
            crate::phi::wipe(&mut text);
        } else if own_text {
            out.extend_from_slice(b",\"content\":[");
            let mut texts = tree.texts_of(e).peekable();
            let mut first = true;
            let mut sep = |out: &mut Vec<u8>| {
                if !std::mem::take(&mut first) {
                    out.push(b',');
                }
            };
            for &c in &children {
                while let Some(t) = texts.next_if(|t| t.before <= c) {
                    sep(out);
                    crate::json::string_utf8(out, tree.value(t.value).expose_value(self.disclosure));
                }
                sep(out);
                self.node_json(c, out);
            }
            for t in texts {
                sep(out);
                crate::json::string_utf8(out, tree.value(t.value).expose_value(self.disclosure));
            }
            out.push(b']');
        } else if !children.is_empty() {
            out.extend_from_slice(b",\"children\":[");
            for (i, &c) in children.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                self.node_json(c, out);
            }
            out.push(b']');
        }
        out.push(b'}');
    }
}

/// The canonical XML of a message (data channel).
pub fn canonical(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let w = Writer { doc, p: prefixes(doc, disclosure), disclosure };
    out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    w.element(0, 0, false, true, out);
}

/// True when `canonical` is the record as it came.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(doc: &Document, canonical: &[u8], disclosure: &Disclosure) -> bool {
    doc.input().expose_value(disclosure) == canonical
}

/// The JSON model of a message (data channel).
pub fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let w = Writer { doc, p: prefixes(doc, disclosure), disclosure };
    out.extend_from_slice(b"{\"format\":\"ncpdp-script\",\"version\":\"");
    out.extend_from_slice(doc.version.as_str().as_bytes());
    out.extend_from_slice(b"\",\"messageType\":\"");
    out.extend_from_slice(doc.message_type().unwrap_or("unknown").as_bytes());
    out.extend_from_slice(b"\",\"message\":");
    w.node_json(0, out);
    out.push(b'}');
}

/// The value-free summary of a message.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// `ncpdp-script`.
    pub format: &'static str,
    /// `10.6`, `2017071` or `unknown`.
    pub version: &'static str,
    /// The message type (a name of the tables; `unknown` otherwise).
    pub message_type: &'static str,
    /// Elements in the message.
    pub element_count: usize,
    /// Medications: `MedicationPrescribed`, `MedicationDispensed`, `MedicationRequested`
    /// elements anywhere in the Body.
    pub medication_count: usize,
    /// The transaction element's children, counted by name (names of the tables; `*` for the
    /// others).
    pub parts: BTreeMap<&'static str, usize>,
    /// Findings of error severity or worse.
    pub error_count: usize,
    /// Warnings.
    pub warning_count: usize,
}

/// The summary of a message.
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let tree = doc.tree();
    let medication_count = doc.body.map_or(0, |b| {
        let end = tree.elements().get(b as usize).map_or(b, |e| e.end);
        (b..end)
            .filter(|&e| {
                ["MedicationPrescribed", "MedicationDispensed", "MedicationRequested"].iter().any(|n| doc.is(e, n))
            })
            .count()
    });
    let mut parts = BTreeMap::new();
    if let Some(t) = doc.transaction {
        for c in tree.children(t) {
            *parts.entry(doc.name(c).unwrap_or("*")).or_insert(0) += 1;
        }
    }
    Summary {
        format: "ncpdp-script",
        version: doc.version.as_str(),
        message_type: doc.message_type().unwrap_or("unknown"),
        element_count: tree.elements().len(),
        medication_count,
        parts,
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
    }
}

/// The names of the tables a summary can hold (for the fuzz oracle).
pub fn summary_names() -> impl Iterator<Item = &'static str> {
    tables::NAMES.iter().copied()
}
