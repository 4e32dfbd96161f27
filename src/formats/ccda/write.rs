//! The writers of a C-CDA document: the JSON model and the canonical XML (data channel), and
//! the value-free summary.
//!
//! Canonical XML: the declaration `<?xml version="1.0" encoding="UTF-8"?>`; the CDA namespace
//! as the default, `sdtc:` and `xsi:` (and `ns1:`, `ns2:`... for any other namespace, in order
//! of first use) declared once on the root; two-space indentation; attributes in a fixed order
//! (`xsi:type`, then unprefixed ones in the definitions' usual order: classCode, moodCode,
//! root, extension, code, codeSystem..., the others by name; then prefixed ones by name); an element with text
//! of its own (a name part, a narrative paragraph) written inline with its content as read;
//! empty elements as `<x/>`; text escaped (`&`, `<`, `>`), attribute values too (`&`, `<`,
//! `"`, tab, line feed, carriage return). Comments and processing instructions are not kept.
//!
//! Several top-level elements (a fragment's) are written one after the other, each with the
//! declarations.
//!
//! The JSON model: `{"format":"ccda","document":NODE}` (a fragment of several top-level
//! elements: `{"format":"ccda","fragments":[NODE...]}`), a node being
//! `{"name","namespace"?,"attributes"?,"children"?,"text"?,"content"?,"narrative"?}`: names as
//! written, attributes by name (`sdtc:valueSet`, `xsi:type`, `{uri}name` for another
//! namespace), children in order, an element's own text as `text` (or, mixed with elements,
//! `content`: strings and nodes in order), and a section's narrative block (`section/text`)
//! as one value, `narrative`: its canonical XML.
//!
//! The summary: the document type (by the templateId of a document template), the templates
//! declared on the document, its sections (by their LOINC code and template, when the
//! templates define them) with entry counts per entry template; nothing else from the
//! document, so no value.
//!
//! What it does not do: keep comments, processing instructions, or white-space-only text.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity};
use crate::formats::xml::{Attr, NsId};
use crate::phi::Disclosure;

use super::read::{Document, Ns, SDTC_NS, V3_NS, XSI_NS};
use super::tables::TEMPLATES;

/// Namespace prefixes of a canonical document: the URIs of other namespaces, in order of first
/// use (`ns1`, `ns2`...).
pub(crate) struct Prefixes<'a> {
    pub(crate) other: Vec<&'a [u8]>,
    /// The prefix number of each namespace id (0: not another namespace).
    of: Vec<usize>,
    pub(crate) sdtc: bool,
    pub(crate) xsi: bool,
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub(crate) fn prefixes<'a>(doc: &'a Document, disclosure: &Disclosure) -> Prefixes<'a> {
    let tree = doc.tree();
    let mut p = Prefixes { other: Vec::new(), of: vec![0; tree.namespace_count()], sdtc: false, xsi: false };
    let note = |id: NsId, ns: Ns, p: &mut Prefixes<'a>| match ns {
        Ns::Sdtc => p.sdtc = true,
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

pub(crate) fn prefix_of(p: &Prefixes<'_>, id: NsId, ns: Ns) -> String {
    match ns {
        Ns::Sdtc => "sdtc:".into(),
        Ns::Xsi => "xsi:".into(),
        Ns::Xml => "xml:".into(),
        Ns::Other => format!("ns{}:", p.of.get(id.index()).copied().unwrap_or(0)),
        Ns::V3 | Ns::None => String::new(),
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

/// The usual CDA attributes, in the order `fmt` writes them (the order the definitions list
/// them in); any other unprefixed attribute follows, by name.
const ATTRIBUTE_ORDER: &[&[u8]] = &[
    b"classCode",
    b"moodCode",
    b"determinerCode",
    b"typeCode",
    b"contextControlCode",
    b"contextConductionInd",
    b"inversionInd",
    b"negationInd",
    b"root",
    b"extension",
    b"assigningAuthorityName",
    b"displayable",
    b"code",
    b"codeSystem",
    b"codeSystemName",
    b"codeSystemVersion",
    b"displayName",
    b"value",
    b"unit",
    b"use",
    b"nullFlavor",
];

/// The attributes of element `e` in canonical order: (group, qualified name, attribute).
pub(crate) fn sorted_attrs<'d>(doc: &'d Document, p: &Prefixes<'_>, e: u32) -> Vec<(u8, Vec<u8>, &'d Attr)> {
    let tree = doc.tree();
    let first = tree.elements().get(e as usize).map_or(0, |x| x.attrs.start as usize);
    let mut v: Vec<(u8, Vec<u8>, &Attr)> = tree
        .attrs_of(e)
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let ns = doc.attr_ns(first + k);
            let local = doc.attr_local(a);
            let group = match ns {
                Ns::Xsi if local == b"type" => 0,
                Ns::None => 1 + ATTRIBUTE_ORDER.iter().position(|n| *n == local).unwrap_or(ATTRIBUTE_ORDER.len()) as u8,
                _ => 2 + ATTRIBUTE_ORDER.len() as u8,
            };
            let mut q = prefix_of(p, a.ns, ns).into_bytes();
            q.extend_from_slice(local);
            (group, q, a)
        })
        .collect();
    v.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    v
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
    fn has_text(&self, e: u32) -> bool {
        self.doc.tree().texts_of(e).next().is_some()
    }

    /// Writes element `e`. `default_v3`: the default namespace in scope is the CDA one.
    fn element(&self, e: u32, depth: usize, inline: bool, default_v3: bool, out: &mut Vec<u8>) {
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
        let mut default_here = default_v3;
        if doc.is_root(e) {
            out.extend_from_slice(b" xmlns=\"");
            out.extend_from_slice(V3_NS);
            out.push(b'"');
            if self.p.sdtc {
                out.extend_from_slice(b" xmlns:sdtc=\"");
                out.extend_from_slice(SDTC_NS);
                out.push(b'"');
            }
            if self.p.xsi {
                out.extend_from_slice(b" xmlns:xsi=\"");
                out.extend_from_slice(XSI_NS);
                out.push(b'"');
            }
            for (i, uri) in self.p.other.iter().enumerate() {
                out.extend_from_slice(format!(" xmlns:ns{}=\"", i + 1).as_bytes());
                attr_escaped(out, uri);
                out.push(b'"');
            }
        } else if ns == Ns::None && default_v3 {
            out.extend_from_slice(b" xmlns=\"\"");
            default_here = false;
        } else if ns == Ns::V3 && !default_v3 {
            out.extend_from_slice(b" xmlns=\"");
            out.extend_from_slice(V3_NS);
            out.push(b'"');
            default_here = true;
        }
        for (_, q, a) in sorted_attrs(doc, &self.p, e) {
            out.push(b' ');
            out.extend_from_slice(&q);
            out.extend_from_slice(b"=\"");
            attr_escaped(out, tree.value(a.value).expose_value(self.disclosure));
            out.push(b'"');
        }
        let children: Vec<u32> = tree.children(e).collect();
        let own_text = self.has_text(e);
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
}

/// The canonical XML of a document (data channel).
pub fn canonical(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let w = Writer { doc, p: prefixes(doc, disclosure), disclosure };
    out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    for &r in doc.roots() {
        w.element(r, 0, false, true, out);
    }
}

/// True when `canonical` is the record as it came.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn is_canonical(doc: &Document, canonical: &[u8], disclosure: &Disclosure) -> bool {
    doc.input().expose_value(disclosure) == canonical
}

#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
impl Writer<'_> {
    fn node_json(&self, e: u32, out: &mut Vec<u8>) {
        let doc = self.doc;
        let tree = doc.tree();
        let Some(el) = tree.elements().get(e as usize) else { return };
        out.extend_from_slice(b"{\"name\":");
        crate::json::string_utf8(out, doc.local(e));
        let ns = doc.ns(e);
        if ns != Ns::V3 {
            out.extend_from_slice(b",\"namespace\":");
            crate::json::string_utf8(out, tree.namespace(el.ns).expose_value(self.disclosure));
        }
        let attrs = sorted_attrs(doc, &self.p, e);
        if !attrs.is_empty() {
            out.extend_from_slice(b",\"attributes\":{");
            let first = el.attrs.start as usize;
            for (i, (_, q, a)) in attrs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let k = tree.attrs_of(e).iter().position(|x| std::ptr::eq(x, *a)).map_or(first, |k| first + k);
                let key = if doc.attr_ns(k) == Ns::Other {
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
        let own_text = self.has_text(e);
        let narrative = is_section_text(doc, e);
        if narrative {
            out.extend_from_slice(b",\"narrative\":");
            let mut xml = Vec::new();
            let mut texts = tree.texts_of(e).peekable();
            for &c in &children {
                while let Some(t) = texts.next_if(|t| t.before <= c) {
                    text_escaped(&mut xml, tree.value(t.value).expose_value(self.disclosure));
                }
                self.element(c, 0, true, true, &mut xml);
            }
            for t in texts {
                text_escaped(&mut xml, tree.value(t.value).expose_value(self.disclosure));
            }
            crate::json::string_utf8(out, &xml);
            crate::phi::wipe(&mut xml);
        } else if own_text && children.is_empty() {
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

/// True when `e` is a section's `text` (the narrative block).
fn is_section_text(doc: &Document, e: u32) -> bool {
    let Some(n) = doc.nodes().get(e as usize) else { return false };
    n.ns == Ns::V3
        && doc.local(e) == b"text"
        && n.parent != u32::MAX
        && doc.ns(n.parent) == Ns::V3
        && doc.local(n.parent) == b"section"
}

/// The JSON model of a document (data channel).
pub fn model_json(doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
    let w = Writer { doc, p: prefixes(doc, disclosure), disclosure };
    match doc.roots() {
        [root] => {
            out.extend_from_slice(b"{\"format\":\"ccda\",\"document\":");
            w.node_json(*root, out);
        }
        roots => {
            out.extend_from_slice(b"{\"format\":\"ccda\",\"fragments\":[");
            for (i, &r) in roots.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                w.node_json(r, out);
            }
            out.push(b']');
        }
    }
    out.push(b'}');
}

/// The value-free summary of a document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// `ccda`.
    pub format: &'static str,
    /// The document type: the title of the document template declared (`unknown`: none).
    pub document_type: &'static str,
    /// The known templates declared on the document, as `root:extension`.
    pub templates: Vec<&'static str>,
    /// templateIds on the document that are not known templates.
    pub unknown_templates: usize,
    /// True when the body is a structuredBody.
    pub structured_body: bool,
    /// The sections, in order (nested ones included).
    pub sections: Vec<SectionSummary>,
    /// Findings of error severity or worse.
    pub error_count: usize,
    /// Warnings.
    pub warning_count: usize,
}

/// A section in the summary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SectionSummary {
    /// The section's LOINC code when a template defines it (`unknown` otherwise).
    pub code: &'static str,
    /// The title of the first known section template it declares (`unknown`: none).
    pub title: &'static str,
    /// The known templates it declares, as `root:extension`.
    pub templates: Vec<&'static str>,
    /// Entries per entry template (`root:extension`; `unknown` for entries without a known
    /// template).
    pub entries: BTreeMap<&'static str, usize>,
    /// All its entries.
    pub entry_count: usize,
}

/// The known template a `templateId` element declares (root, then extension; a root known with
/// another extension gives that template, the version named by its key).
pub fn template_of(doc: &Document, t: u32) -> Option<&'static super::base::Template> {
    let tree = doc.tree();
    let root = doc.attr(t, Ns::None, b"root")?;
    let ext = doc.attr(t, Ns::None, b"extension");
    let start = TEMPLATES.partition_point(|x| tree.value(root.value).classify(|v| x.root.as_bytes() < v));
    let same = TEMPLATES[start..].iter().take_while(|x| tree.value(root.value).classify(|v| x.root.as_bytes() == v));
    let mut found = None;
    for x in same {
        let exact = ext.is_some_and(|e| tree.value(e.value).classify(|v| v == x.extension.as_bytes()))
            || (ext.is_none() && x.extension.is_empty());
        if exact {
            return Some(x);
        }
        found = Some(x);
    }
    found
}

/// The known templates element `e` declares (its `templateId` children), and how many it
/// declares that are not known.
pub fn templates_of(doc: &Document, e: u32) -> (Vec<&'static super::base::Template>, usize) {
    let mut known = Vec::new();
    let mut unknown = 0;
    for t in doc.children_named(e, b"templateId") {
        match template_of(doc, t) {
            Some(x) => known.push(x),
            None => unknown += 1,
        }
    }
    (known, unknown)
}

fn sections(doc: &Document, e: u32, out: &mut Vec<SectionSummary>) {
    for comp in doc.children_named(e, b"component") {
        for s in doc.children_named(comp, b"section") {
            let (known, _) = templates_of(doc, s);
            let code_el = doc.children_named(s, b"code").next();
            let code = code_el
                .and_then(|c| doc.attr(c, Ns::None, b"code"))
                .and_then(|a| {
                    let v = doc.tree().value(a.value);
                    TEMPLATES
                        .iter()
                        .find(|t| t.class == "Section" && !t.code.is_empty() && v.classify(|v| v == t.code.as_bytes()))
                })
                .map_or("unknown", |t| t.code);
            let mut entries = BTreeMap::new();
            let mut entry_count = 0;
            for entry in doc.children_named(s, b"entry") {
                entry_count += 1;
                let act = doc.tree().children(entry).find(|&c| doc.ns(c) == Ns::V3);
                let key = act.and_then(|a| templates_of(doc, a).0.first().map(|t| t.key)).unwrap_or("unknown");
                *entries.entry(key).or_insert(0) += 1;
            }
            out.push(SectionSummary {
                code,
                title: known.iter().find(|t| t.class == "Section").map_or("unknown", |t| t.title),
                templates: known.iter().map(|t| t.key).collect(),
                entries,
                entry_count,
            });
            sections(doc, s, out);
        }
    }
}

/// The summary of a document.
pub fn summarize(doc: &Document, findings: &[Diagnostic]) -> Summary {
    let (known, unknown) = templates_of(doc, 0);
    // The most specific document template: any but the US Realm Header, when there is one.
    let document_type = known
        .iter()
        .find(|t| t.class == "ClinicalDocument" && t.root != "2.16.840.1.113883.10.20.22.1.1")
        .or_else(|| known.iter().find(|t| t.class == "ClinicalDocument"))
        .map_or("unknown", |t| t.title);
    let mut secs = Vec::new();
    let mut structured_body = false;
    for comp in doc.children_named(0, b"component") {
        for body in doc.children_named(comp, b"structuredBody") {
            structured_body = true;
            sections(doc, body, &mut secs);
        }
    }
    Summary {
        format: "ccda",
        document_type,
        templates: known.iter().map(|t| t.key).collect(),
        unknown_templates: unknown,
        structured_body,
        sections: secs,
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
    }
}
