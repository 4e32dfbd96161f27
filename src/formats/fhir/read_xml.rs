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

use super::definitions::{self as defs, ElemRef, Kind, TypeRef};
use super::json::Span;
use super::model::{self, Builder, Document, NONE, Syntax, ValueKind, flag};
use super::xml::{self, Ns, Tree};

/// Reads one FHIR XML resource. A fatal diagnostic is an `Err`.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read(input: Vec<u8>, limits: &Limits) -> Result<Document, Diagnostic> {
    let input = Phi::new(input);
    let raw = input.span().raw();
    let tree = xml::parse(raw, limits).map_err(|e| fatal(e.code, Location::Offset(e.offset)))?;
    let root = tree.elements[0];
    if root.ns != Ns::Fhir {
        return Err(fatal(Code::XML_NAMESPACE_INVALID, Location::Offset(u64::from(root.offset))));
    }
    let ty = defs::type_id(slice(raw, root.local)).filter(|t| defs::is_resource(*t));
    let Some(ty) = ty else {
        return Err(fatal(Code::RESOURCE_TYPE_UNKNOWN, Location::Offset(u64::from(root.offset))));
    };
    let mut values = zeroize::Zeroizing::new(Vec::with_capacity(tree.text.len() + 64));
    let mut r = Reader { input: raw, tree: &tree, values: &mut values, b: Builder::new(limits.max_segments) };
    r.resource(0, NONE, None, "", 0, ty)?;
    let Reader { b, .. } = r;
    let values = std::mem::take(&mut *values);
    Ok(Document { input, values: Phi::new(values), nodes: b.nodes, syntax: Syntax::Xml, findings: b.findings })
}

fn fatal(code: Code, location: Location) -> Diagnostic {
    Diagnostic::new(code, location).with_severity(Severity::Fatal)
}

fn slice(input: &[u8], s: (u32, u32)) -> &[u8] {
    input.get(s.0 as usize..s.1 as usize).unwrap_or_default()
}

struct Reader<'t> {
    input: &'t [u8],
    tree: &'t Tree,
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

    fn copy_value(&mut self, bytes_from: Span) -> Span {
        let start = self.values.len();
        let v = bytes_from.of(&self.tree.text);
        self.values.extend_from_slice(v);
        Span { start: start as u32, len: v.len() as u32 }
    }

    fn copy_input(&mut self, s: (u32, u32)) -> Span {
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
        let el = self.tree.elements[e as usize];
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
        let el = tree.elements[e as usize];
        if let Some(at) = el.text_at {
            self.finding(Code::XML_TEXT_UNEXPECTED, parent, Some(at));
        }
        // Attributes: id, url (Extension), value (primitives, read by the caller).
        for a in tree.attrs_of(e) {
            let name = slice(self.input, a.local);
            if a.ns != Ns::None {
                if a.ns == Ns::Other && name == b"space" {
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
            let child = tree.elements[c as usize];
            let name = slice(self.input, child.local);
            let xhtml_div = child.ns == Ns::Xhtml && name == b"div";
            if child.ns != Ns::Fhir && !xhtml_div {
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
            if elem.idx < last_idx {
                self.finding(Code::ELEMENT_OUT_OF_ORDER, parent, Some(child.offset));
            }
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
                        let re = tree.elements[r as usize];
                        (re.ns == Ns::Fhir).then(|| defs::type_id(slice(self.input, re.local))).flatten()
                    });
                    match (first, second, rty.filter(|t| defs::is_resource(*t))) {
                        (Some(r), None, Some(t)) => self.resource(r, parent, Some(elem), def.name, index, t)?,
                        (None, _, _) => {
                            self.finding(Code::RESOURCE_TYPE_MISSING, parent, Some(child.offset));
                            self.unknown(c, parent)?;
                        }
                        (Some(r), _, _) => {
                            let at = tree.elements[r as usize].offset;
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
                        node.value = self.copy_input((child.offset, child.end_offset));
                        node.value_kind = ValueKind::Xhtml;
                        let i = self.open(node)?;
                        self.b.close(i);
                        continue;
                    }
                    let value =
                        tree.attrs_of(c).iter().find(|a| a.ns == Ns::None && slice(self.input, a.local) == b"value");
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
        let el = self.tree.elements[c as usize];
        let mut node = model::blank(parent, el.offset);
        node.flags = flag::UNKNOWN;
        node.name_text = self.copy_input(el.local);
        node.raw = (el.offset, el.end_offset);
        let i = self.open(node)?;
        self.b.close(i);
        Ok(())
    }
}
