//! FHIR XML (R4 "XML representation") to the element tree of [`super::model`].
//!
//! The root element names the resource type; elements resolve against the core definitions as
//! in JSON (choice types by their typed name); `value`, `id` and `url` attributes become the
//! primitive value and the `id`/`url` children; a resource held by an element is the single
//! child element of its wrapper (`<contained><Patient>...`); `Narrative.div` is kept as XHTML
//! markup (its exact bytes). Findings: `UNKNOWN_ELEMENT` (elements and attributes, by offset),
//! `XML_NAMESPACE_INVALID`, `XML_TEXT_UNEXPECTED`, `ELEMENT_OUT_OF_ORDER`,
//! `RESOURCE_TYPE_UNKNOWN`/`MISSING`.
//!
//! What it does not do: check values (see `validate`), or keep comments.

use crate::diag::{Code, Diagnostic, Location, Severity};
use crate::limits::Limits;
use crate::phi::Phi;

use crate::formats::xml::{self, NsId, Tree};

use super::definitions::{self as defs, ElemRef, Kind, TypeRef};
use super::json::Span;
use super::model::{self, Builder, Document, NONE, Syntax, ValueKind, flag};

/// The namespaces FHIR XML tells apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ns {
    /// No namespace.
    None,
    /// `http://hl7.org/fhir`
    Fhir,
    /// `http://www.w3.org/1999/xhtml`
    Xhtml,
    /// Any other namespace (the `xml` prefix's included).
    Other,
}

impl crate::phi::sealed::Sealed for Ns {}
impl crate::phi::ValueFree for Ns {}

/// The FHIR namespace.
pub const FHIR_NS: &[u8] = b"http://hl7.org/fhir";
/// The XHTML namespace (`Narrative.div`).
pub const XHTML_NS: &[u8] = b"http://www.w3.org/1999/xhtml";

/// The [`Ns`] of every namespace of `tree`, indexed by [`NsId::index`].
fn namespaces(tree: &Tree) -> Vec<Ns> {
    tree.namespace_ids()
        .map(|id| match id {
            NsId::NONE => Ns::None,
            NsId::XML => Ns::Other,
            _ => tree.namespace(id).classify(|uri| match uri {
                FHIR_NS => Ns::Fhir,
                XHTML_NS => Ns::Xhtml,
                _ => Ns::Other,
            }),
        })
        .collect()
}

/// Reads one FHIR XML resource. A fatal diagnostic is an `Err`.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read(input: Vec<u8>, limits: &Limits) -> Result<Document, Diagnostic> {
    let input = Phi::new(input);
    let raw = input.span().raw();
    let tree = xml::parse(raw, limits).map_err(|e| fatal(e.code(), Location::Offset(e.offset())))?;
    let ns = namespaces(&tree);
    let root = tree.root();
    if ns.get(root.ns.index()) != Some(&Ns::Fhir) {
        return Err(fatal(Code::XML_NAMESPACE_INVALID, Location::Offset(u64::from(root.offset))));
    }
    let ty = defs::type_id(slice(raw, root.local)).filter(|t| defs::is_resource(*t));
    let Some(ty) = ty else {
        return Err(fatal(Code::RESOURCE_TYPE_UNKNOWN, Location::Offset(u64::from(root.offset))));
    };
    // What is copied (attribute values, narrative markup, names of unknown elements) are
    // disjoint parts of the input, none longer decoded: the buffer never grows, so never moves.
    let mut values = zeroize::Zeroizing::new(Vec::with_capacity(raw.len() + 64));
    let mut r = Reader { input: raw, tree: &tree, ns: &ns, values: &mut values, b: Builder::new(limits.max_segments) };
    r.resource(0, NONE, None, "", 0, ty)?;
    let Reader { b, .. } = r;
    let values = std::mem::take(&mut *values);
    Ok(Document { input, values: Phi::new(values), nodes: b.nodes, syntax: Syntax::Xml, findings: b.findings })
}

fn fatal(code: Code, location: Location) -> Diagnostic {
    Diagnostic::new(code, location).with_severity(Severity::Fatal)
}

fn slice(input: &[u8], s: xml::Span) -> &[u8] {
    s.of(input)
}

struct Reader<'t> {
    input: &'t [u8],
    tree: &'t Tree,
    /// The [`Ns`] of each namespace of `tree`.
    ns: &'t [Ns],
    values: &'t mut Vec<u8>,
    b: Builder,
}

impl Reader<'_> {
    fn finding(&mut self, code: Code, parent: u32, offset: Option<u32>) {
        let mut path = model::path_in(&self.b.nodes, parent);
        if offset.is_some() {
            path.offset = offset;
        }
        self.b.findings.push(Diagnostic::new(code, Location::Fhir(path)));
    }

    fn open(&mut self, node: model::Node) -> Result<u32, Diagnostic> {
        let offset = node.offset;
        self.b.open(node).ok_or_else(|| fatal(Code::CLI_INPUT_TOO_LARGE, Location::Offset(u64::from(offset))))
    }

    fn ns(&self, id: NsId) -> Ns {
        self.ns.get(id.index()).copied().unwrap_or(Ns::Other)
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn copy_value(&mut self, bytes_from: xml::Span) -> Span {
        let start = self.values.len();
        let v = self.tree.value(bytes_from).raw();
        self.values.extend_from_slice(v);
        Span { start: start as u32, len: v.len() as u32 }
    }

    fn copy_input(&mut self, s: xml::Span) -> Span {
        let start = self.values.len();
        let v = slice(self.input, s);
        self.values.extend_from_slice(v);
        Span { start: start as u32, len: v.len() as u32 }
    }

    /// The resource in element `e` (the root, or the single child of a wrapper).
    #[allow(clippy::too_many_arguments)]
    fn resource(
        &mut self,
        e: u32,
        parent: u32,
        elem: Option<ElemRef>,
        name: &'static str,
        index: u32,
        ty: defs::TypeId,
    ) -> Result<(), Diagnostic> {
        let el = self.tree.elements()[e as usize];
        let mut node = model::blank(parent, el.offset);
        node.name = if parent == NONE { defs::type_name(ty) } else { name };
        node.elem = elem;
        node.ty = Some(ty);
        node.ctx = Some(ElemRef { ty, idx: 0 });
        node.index = index;
        node.flags = flag::RESOURCE;
        let i = self.open(node)?;
        self.members(e, i, ElemRef { ty, idx: 0 }, false)?;
        self.b.close(i);
        Ok(())
    }

    /// Attributes and child elements of XML element `e`, as children of node `parent`.
    fn members(&mut self, e: u32, parent: u32, ctx: ElemRef, primitive: bool) -> Result<(), Diagnostic> {
        let tree = self.tree;
        if let Some(text) = tree.texts_of(e).next() {
            self.finding(Code::XML_TEXT_UNEXPECTED, parent, Some(text.offset));
        }
        // Attributes: id, url (Extension), value (primitives, read by the caller).
        for a in tree.attrs_of(e) {
            let name = slice(self.input, a.local);
            let ans = self.ns(a.ns);
            if ans != Ns::None {
                if ans == Ns::Other && name == b"space" {
                    continue; // xml:space
                }
                self.finding(Code::UNKNOWN_ELEMENT, parent, Some(a.offset));
                continue;
            }
            if primitive && name == b"value" {
                continue;
            }
            let found = defs::child(ctx, name).filter(|(r, _)| defs::element(*r).is_some_and(|d| d.xml_attr));
            let Some((elem, _)) = found else {
                self.finding(Code::UNKNOWN_ELEMENT, parent, Some(a.offset));
                continue;
            };
            let Some(def) = defs::element(elem) else { continue };
            let t = match def.types.first() {
                Some(TypeRef::Type(t)) => Some(*t),
                _ => None,
            };
            let mut node = model::blank(parent, a.offset);
            node.name = def.name;
            node.elem = Some(elem);
            node.ty = t;
            node.ctx = t.map(|t| ElemRef { ty: t, idx: 0 });
            node.value = self.copy_value(a.value);
            node.value_kind = ValueKind::String;
            let i = self.open(node)?;
            self.b.close(i);
        }
        let mut counts: Vec<(u16, u32)> = Vec::new();
        let mut last_idx = 0u16;
        for c in tree.children(e) {
            let child = tree.elements()[c as usize];
            let cns = self.ns(child.ns);
            let name = slice(self.input, child.local);
            let xhtml_div = cns == Ns::Xhtml && name == b"div";
            if cns != Ns::Fhir && !xhtml_div {
                self.finding(Code::XML_NAMESPACE_INVALID, parent, Some(child.offset));
                self.unknown(c, parent)?;
                continue;
            }
            let found = defs::child(ctx, name)
                .filter(|(r, _)| defs::element(*r).is_some_and(|d| !d.xml_attr && (d.xhtml == xhtml_div)));
            let Some((elem, choice_ty)) = found else {
                self.finding(Code::UNKNOWN_ELEMENT, parent, Some(child.offset));
                self.unknown(c, parent)?;
                continue;
            };
            let Some(def) = defs::element(elem) else { continue };
            let out_of_order = elem.idx < last_idx;
            last_idx = last_idx.max(elem.idx);
            let index = match counts.iter_mut().find(|(idx, _)| *idx == elem.idx) {
                Some(entry) => {
                    entry.1 += 1;
                    entry.1 - 1
                }
                None => {
                    counts.push((elem.idx, 1));
                    0
                }
            };
            if out_of_order {
                // Named from the definitions, with its index among its own kind.
                let at = def.repeats().then_some(index);
                let path = model::path_of_element(&self.b.nodes, parent, elem, choice_ty, at, child.offset);
                self.b.findings.push(Diagnostic::new(Code::ELEMENT_OUT_OF_ORDER, Location::Fhir(path)));
            }
            let ty = match choice_ty {
                Some(t) => TypeRef::Type(t),
                None => def.types.first().copied().unwrap_or(TypeRef::Backbone),
            };
            // A resource-typed element (`Bundle.entry.response.outcome`) wraps its resource like
            // `contained` does.
            let ty = match ty {
                TypeRef::Type(t) if defs::is_resource(t) => TypeRef::Resource,
                other => other,
            };
            match ty {
                TypeRef::Resource => {
                    let mut inner = tree.children(c);
                    let (first, second) = (inner.next(), inner.next());
                    let rty = first.and_then(|r| {
                        let re = tree.elements()[r as usize];
                        (self.ns(re.ns) == Ns::Fhir).then(|| defs::type_id(slice(self.input, re.local))).flatten()
                    });
                    match (first, second, rty.filter(|t| defs::is_resource(*t))) {
                        (Some(r), None, Some(t)) => self.resource(r, parent, Some(elem), def.name, index, t)?,
                        (None, _, _) => {
                            self.finding(Code::RESOURCE_TYPE_MISSING, parent, Some(child.offset));
                            self.unknown(c, parent)?;
                        }
                        (Some(r), _, _) => {
                            let at = tree.elements()[r as usize].offset;
                            self.finding(Code::RESOURCE_TYPE_UNKNOWN, parent, Some(at));
                            self.unknown(c, parent)?;
                        }
                    }
                }
                TypeRef::Type(t) if defs::kind(t) == Kind::Primitive => {
                    let mut node = model::blank(parent, child.offset);
                    node.name = def.name;
                    node.elem = Some(elem);
                    node.ty = Some(t);
                    node.ctx = Some(ElemRef { ty: t, idx: 0 });
                    node.index = index;
                    if def.xhtml {
                        node.value = self.copy_input(xml::Span { start: child.offset, end: child.end_offset });
                        node.value_kind = ValueKind::Xhtml;
                        let i = self.open(node)?;
                        self.b.close(i);
                        continue;
                    }
                    let value =
                        tree.attrs_of(c).iter().find(|a| a.ns == NsId::NONE && slice(self.input, a.local) == b"value");
                    if let Some(a) = value {
                        node.value = self.copy_value(a.value);
                        node.value_kind = ValueKind::String;
                    }
                    let i = self.open(node)?;
                    self.members(c, i, ElemRef { ty: t, idx: 0 }, true)?;
                    self.b.close(i);
                }
                _ => {
                    let (node_ty, ctx2) = match ty {
                        TypeRef::Type(t) => (Some(t), ElemRef { ty: t, idx: 0 }),
                        _ => (None, elem),
                    };
                    let mut node = model::blank(parent, child.offset);
                    node.name = def.name;
                    node.elem = Some(elem);
                    node.ty = node_ty;
                    node.ctx = Some(ctx2);
                    node.index = index;
                    let i = self.open(node)?;
                    self.members(c, i, ctx2, false)?;
                    self.b.close(i);
                }
            }
        }
        Ok(())
    }

    /// An element without a definition: kept whole for `fmt`.
    fn unknown(&mut self, c: u32, parent: u32) -> Result<(), Diagnostic> {
        let el = self.tree.elements()[c as usize];
        let mut node = model::blank(parent, el.offset);
        node.flags = flag::UNKNOWN;
        node.name_text = self.copy_input(el.local);
        node.raw = (el.offset, el.end_offset);
        let i = self.open(node)?;
        self.b.close(i);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `code location` of each finding, or of the fatal diagnostic.
    fn findings(xml: &str) -> Vec<String> {
        let show = |d: &Diagnostic| format!("{} {}", d.code.as_str(), d.location);
        match read(xml.as_bytes().to_vec(), &Limits::default()) {
            Ok(doc) => doc.findings().iter().map(show).collect(),
            Err(d) => vec![show(&d)],
        }
    }

    const OPEN: &str = r#"<Patient xmlns="http://hl7.org/fhir"><id value="1"/>"#;

    /// Regression (the hand-written tokenizer): text made of a reference alone was reported at
    /// the byte after the reference's `;`, not at the reference.
    #[test]
    fn text_of_only_a_reference_is_reported_at_its_ampersand() {
        let xml = format!("{OPEN}&amp;</Patient>");
        let at = xml.find('&').expect("a reference");
        assert_eq!(findings(&xml)[0], format!("XML_TEXT_UNEXPECTED Patient/offset:{at}"));
    }

    /// Regression (the hand-written tokenizer): characters outside XML's `Char` production (C0
    /// controls, U+FFFF) and a `--` inside a comment were accepted.
    #[test]
    fn characters_outside_xml_are_malformed() {
        for bad in ["<active value=\"tr\u{1}ue\"/>", "\u{FFFF}", "<!-- a -- b -->"] {
            let xml = format!("{OPEN}{bad}</Patient>");
            let at = OPEN.len() + bad.find(['\u{1}', '\u{FFFF}', '-']).expect("a bad character");
            let at = if bad.starts_with("<!--") { OPEN.len() + 7 } else { at };
            assert_eq!(findings(&xml), vec![format!("MALFORMED_XML offset:{at}")], "{bad:?}");
        }
    }

    /// Regression (the hand-written tokenizer): an XML declaration without a version, or with a
    /// broken `encoding`, was accepted (or reported as another character set).
    #[test]
    fn malformed_declarations_are_malformed_xml() {
        for decl in ["<?xml encoding=\"UTF-8\"?>", "<?xml version=\"1.0\" encoding-8\"?>"] {
            let xml = format!("{decl}\n{OPEN}</Patient>");
            assert_eq!(findings(&xml)[0].split(' ').next(), Some("MALFORMED_XML"), "{decl}");
        }
    }

    #[test]
    fn namespaces_and_attributes_resolve_as_before() {
        let xml = format!(
            "{OPEN}<f:name xmlns:f=\"http://hl7.org/fhir\" xml:space=\"preserve\"><f:family value=\"A\"/></f:name>\
             <text><status value=\"generated\"/><div xmlns=\"http://www.w3.org/1999/xhtml\">x</div></text>\
             <x:y xmlns:x=\"urn:other\"/></Patient>"
        );
        let found = findings(&xml);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0], "ELEMENT_OUT_OF_ORDER Patient.text", "{found:?}");
        assert!(found[1].starts_with("XML_NAMESPACE_INVALID Patient/offset:"), "{found:?}");
    }
}
