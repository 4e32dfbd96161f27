//! FHIR JSON (R4 "JSON representation") to the element tree of [`super::model`].
//!
//! Resolves every property against the core definitions: choice types (`valueQuantity`),
//! primitive extensions (`_birthDate`, and the parallel arrays of repeating primitives with
//! `null` placeholders), resources inside resources (`resourceType`), arrays for repeating
//! elements. Findings made here are structural and value-free: `UNKNOWN_ELEMENT` (by byte
//! offset), `JSON_DUPLICATE_KEY`, `TYPE_MISMATCH`, `JSON_ARRAY_EXPECTED`,
//! `JSON_ARRAY_UNEXPECTED`, `JSON_ARRAY_EMPTY`, `JSON_PRIMITIVE_MISMATCH`,
//! `RESOURCE_TYPE_UNKNOWN`/`MISSING`.
//!
//! What it does not do: check values (syntax, cardinality, bindings: see `validate`). A
//! duplicate key's later occurrence is reported and left out of the tree.

use std::collections::HashMap;

use crate::diag::{Code, Diagnostic, Location, Severity};
use crate::limits::Limits;
use crate::phi::Phi;

use super::definitions::{self as defs, ElemRef, Kind, TypeId, TypeRef};
use super::json::{self, Kind as J, Tree};
use super::model::{self, Builder, Document, NONE, Node, Syntax, ValueKind, flag};

/// Reads one FHIR JSON resource. A fatal diagnostic (syntax, limits, no resource) is an `Err`.
pub fn read(input: Vec<u8>, limits: &Limits) -> Result<Document, Diagnostic> {
    read_with(input, limits, false)
}

/// [`read`], with JSON5 comments allowed when `comments` (see [`json::parse_with`]).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read_with(input: Vec<u8>, limits: &Limits, comments: bool) -> Result<Document, Diagnostic> {
    let input = Phi::new(input);
    let mut tree = json::parse_with(input.span().raw(), limits, comments)
        .map_err(|e| fatal(e.code, Location::Offset(e.offset)))?;
    let root = tree.node(0);
    if root.kind != J::Object {
        return Err(fatal(Code::RESOURCE_TYPE_MISSING, Location::Offset(u64::from(root.offset))));
    }
    let mut r = Reader { tree: &tree, b: Builder::new(limits.max_segments) };
    r.resource(0, NONE, None, "", 0, root.offset)?;
    let Reader { b, .. } = r;
    if b.nodes.first().is_none_or(|n| n.flags & flag::UNTYPED != 0) {
        let code = b.findings.first().map_or(Code::RESOURCE_TYPE_MISSING, |d| d.code);
        return Err(fatal(code, Location::Offset(u64::from(root.offset))));
    }
    let values = std::mem::take(&mut *tree.text);
    Ok(Document { input, values: Phi::new(values), nodes: b.nodes, syntax: Syntax::Json, findings: b.findings })
}

fn fatal(code: Code, location: Location) -> Diagnostic {
    Diagnostic::new(code, location).with_severity(Severity::Fatal)
}

struct Reader<'t> {
    tree: &'t Tree,
    b: Builder,
}

/// A property and its `_property` twin.
struct Group {
    base_start: usize,
    value: Option<u32>,
    ext: Option<u32>,
}

impl Reader<'_> {
    fn too_large(&self, offset: u32) -> Diagnostic {
        fatal(Code::CLI_INPUT_TOO_LARGE, Location::Offset(u64::from(offset)))
    }

    fn finding(&mut self, code: Code, parent: u32, offset: Option<u32>) {
        let mut path = model::path_in(&self.b.nodes, parent);
        if offset.is_some() {
            path.offset = offset;
        }
        self.b.findings.push(Diagnostic::new(code, Location::Fhir(path)));
    }

    /// A finding on the defined element `elem` of `parent` (item `index` of a repeating one;
    /// `None`: the property as a whole), positioned at offset `at`: located by the element's
    /// name, which comes from the definitions (see [`model::path_of_element`]).
    fn finding_on(&mut self, code: Code, parent: u32, elem: ElemRef, ty: Option<TypeId>, index: Option<u32>, at: u32) {
        let path = model::path_of_element(&self.b.nodes, parent, elem, ty, index, at);
        self.b.findings.push(Diagnostic::new(code, Location::Fhir(path)));
    }

    fn open(&mut self, node: Node) -> Result<u32, Diagnostic> {
        let offset = node.offset;
        self.b.open(node).ok_or_else(|| self.too_large(offset))
    }

    /// A resource held by `elem` of `parent` (or the root when `parent` is `NONE`).
    fn resource(
        &mut self,
        obj: u32,
        parent: u32,
        elem: Option<ElemRef>,
        name: &'static str,
        index: u32,
        offset: u32,
    ) -> Result<(), Diagnostic> {
        let tree = self.tree;
        let rt = tree.children(obj).find(|&m| tree.key(m) == b"resourceType");
        let ty = match rt {
            Some(m) if tree.node(m).kind == J::String => defs::type_id(tree.text(m)).filter(|t| defs::is_resource(*t)),
            _ => None,
        };
        let mut node = model::blank(parent, offset);
        node.elem = elem;
        node.index = index;
        node.flags = flag::RESOURCE;
        match ty {
            Some(t) => {
                node.ty = Some(t);
                node.ctx = Some(ElemRef { ty: t, idx: 0 });
                node.name = if parent == NONE { defs::type_name(t) } else { name };
            }
            None => {
                node.name = name;
                node.flags |= flag::UNTYPED | flag::UNKNOWN;
                node.raw = (tree.node(obj).offset, tree.node(obj).end_offset);
            }
        }
        let i = self.open(node)?;
        match (ty, rt) {
            (Some(t), _) => self.members(obj, i, ElemRef { ty: t, idx: 0 }, true, false)?,
            (None, None) => self.finding(Code::RESOURCE_TYPE_MISSING, parent, Some(offset)),
            (None, Some(m)) => self.finding(Code::RESOURCE_TYPE_UNKNOWN, parent, Some(tree.node(m).key_offset)),
        }
        self.b.close(i);
        Ok(())
    }

    /// The members of object `obj`, children of node `parent` whose definitions are under `ctx`.
    fn members(
        &mut self,
        obj: u32,
        parent: u32,
        ctx: ElemRef,
        is_resource: bool,
        primitive_ext: bool,
    ) -> Result<(), Diagnostic> {
        let tree = self.tree;
        let mut groups: Vec<Group> = Vec::new();
        let mut by_name: HashMap<&[u8], usize> = HashMap::new();
        for m in tree.children(obj) {
            let key = tree.key(m);
            if is_resource && key == b"resourceType" {
                continue;
            }
            let (base, is_ext) = match key.strip_prefix(b"_") {
                Some(b) => (b, true),
                None => (key, false),
            };
            let found = if groups.len() < 16 {
                groups.iter().position(|g| tree.key(g.value.or(g.ext).unwrap_or(0)).get(g.base_start..) == Some(base))
            } else {
                if by_name.is_empty() {
                    for (gi, g) in groups.iter().enumerate() {
                        let k = tree.key(g.value.or(g.ext).unwrap_or(0));
                        by_name.insert(k.get(g.base_start..).unwrap_or_default(), gi);
                    }
                }
                by_name.get(base).copied()
            };
            let gi = match found {
                Some(gi) => gi,
                None => {
                    groups.push(Group { base_start: usize::from(is_ext), value: None, ext: None });
                    if !by_name.is_empty() {
                        by_name.insert(base, groups.len() - 1);
                    }
                    groups.len() - 1
                }
            };
            let slot = if is_ext { &mut groups[gi].ext } else { &mut groups[gi].value };
            if slot.is_some() {
                let at = tree.node(m).key_offset;
                self.finding(Code::JSON_DUPLICATE_KEY, parent, Some(at));
                continue;
            }
            *slot = Some(m);
        }
        for g in groups {
            let any = g.value.or(g.ext).unwrap_or(0);
            let base = tree.key(any).get(g.base_start..).unwrap_or_default();
            let found = if primitive_ext && base == b"value" { None } else { defs::child(ctx, base) };
            let Some((elem, choice_ty)) = found else {
                for m in [g.value, g.ext].into_iter().flatten() {
                    self.unknown(m, parent)?;
                }
                continue;
            };
            let Some(def) = defs::element(elem) else { continue };
            let ty = match choice_ty {
                Some(t) => TypeRef::Type(t),
                None => def.types.first().copied().unwrap_or(TypeRef::Backbone),
            };
            match ty {
                TypeRef::Type(t) if defs::kind(t) == Kind::Primitive => self.primitive(&g, parent, elem, t)?,
                _ => {
                    if let Some(e) = g.ext {
                        self.unknown(e, parent)?;
                    }
                    if let Some(v) = g.value {
                        self.complex(v, parent, elem, ty)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn unknown(&mut self, m: u32, parent: u32) -> Result<(), Diagnostic> {
        let n = *self.tree.node(m);
        let mut node = model::blank(parent, n.key_offset);
        node.flags = flag::UNKNOWN;
        node.name_text = n.key.unwrap_or_default();
        node.raw = (n.offset, n.end_offset);
        let i = self.open(node)?;
        self.b.close(i);
        self.finding(Code::UNKNOWN_ELEMENT, parent, Some(n.key_offset));
        Ok(())
    }

    /// Items of a property value: the array's items (with an array check against the
    /// element's cardinality), or the value itself.
    fn items(&mut self, m: u32, parent: u32, elem: ElemRef, ty: Option<TypeId>, repeats: bool) -> Vec<u32> {
        let tree = self.tree;
        let n = tree.node(m);
        if n.kind == J::Array {
            if !repeats {
                self.finding_on(Code::JSON_ARRAY_UNEXPECTED, parent, elem, ty, None, n.key_offset);
            }
            let items: Vec<u32> = tree.children(m).collect();
            if items.is_empty() {
                self.finding_on(Code::JSON_ARRAY_EMPTY, parent, elem, ty, None, n.key_offset);
            }
            items
        } else {
            if repeats {
                self.finding_on(Code::JSON_ARRAY_EXPECTED, parent, elem, ty, None, n.key_offset);
            }
            vec![m]
        }
    }

    fn complex(&mut self, m: u32, parent: u32, elem: ElemRef, ty: TypeRef) -> Result<(), Diagnostic> {
        let tree = self.tree;
        let Some(def) = defs::element(elem) else { return Ok(()) };
        let key_offset = tree.node(m).key_offset;
        let step_ty = match ty {
            TypeRef::Type(t) => Some(t),
            _ => None,
        };
        let repeats = def.repeats();
        let items = self.items(m, parent, elem, step_ty, repeats);
        for (index, item) in items.into_iter().enumerate() {
            let n = *tree.node(item);
            if n.kind != J::Object {
                let at = repeats.then_some(index as u32);
                self.finding_on(Code::TYPE_MISMATCH, parent, elem, step_ty, at, n.offset);
                continue;
            }
            let index = index as u32;
            // Any resource, or one resource type (`Bundle.entry.response.outcome` is an
            // OperationOutcome): either way the object carries its own `resourceType`.
            if ty == TypeRef::Resource || matches!(ty, TypeRef::Type(t) if defs::is_resource(t)) {
                self.resource(item, parent, Some(elem), def.name, index, key_offset)?;
                continue;
            }
            let (node_ty, ctx) = match ty {
                TypeRef::Type(t) => (Some(t), ElemRef { ty: t, idx: 0 }),
                _ => (None, elem),
            };
            let mut node = model::blank(parent, key_offset);
            node.name = def.name;
            node.elem = Some(elem);
            node.ty = node_ty;
            node.ctx = Some(ctx);
            node.index = index;
            let i = self.open(node)?;
            self.members(item, i, ctx, false, false)?;
            self.b.close(i);
        }
        Ok(())
    }

    fn primitive(&mut self, g: &Group, parent: u32, elem: ElemRef, t: TypeId) -> Result<(), Diagnostic> {
        let tree = self.tree;
        let Some(def) = defs::element(elem) else { return Ok(()) };
        let repeats = def.repeats();
        let values: Vec<u32> = g.value.map(|v| self.items(v, parent, elem, Some(t), repeats)).unwrap_or_default();
        let exts: Vec<u32> = g.ext.map(|e| self.items(e, parent, elem, Some(t), repeats)).unwrap_or_default();
        if g.value.is_some() && g.ext.is_some() && values.len() != exts.len() {
            let at = g.ext.map_or(0, |e| tree.node(e).key_offset);
            self.finding_on(Code::JSON_PRIMITIVE_MISMATCH, parent, elem, Some(t), None, at);
        }
        let count = values.len().max(exts.len());
        let key_offset = tree.node(g.value.or(g.ext).unwrap_or(0)).key_offset;
        let wanted = json_kind_of(defs::type_name(t));
        for index in 0..count {
            let item = repeats.then_some(index as u32);
            let v = values.get(index).copied().filter(|&v| tree.node(v).kind != J::Null);
            let e = exts.get(index).copied().filter(|&e| tree.node(e).kind != J::Null);
            if v.is_none() && e.is_none() {
                let code = if repeats && g.value.is_some() && g.ext.is_some() {
                    Code::JSON_PRIMITIVE_MISMATCH
                } else {
                    Code::TYPE_MISMATCH
                };
                let at = values.get(index).or(exts.get(index)).map_or(key_offset, |&x| tree.node(x).offset);
                self.finding_on(code, parent, elem, Some(t), item, at);
                continue;
            }
            if let Some(v) = values.get(index).copied().filter(|&v| tree.node(v).kind == J::Null) {
                // A null value is only a placeholder in a repeating element's array.
                if !repeats {
                    self.finding_on(Code::TYPE_MISMATCH, parent, elem, Some(t), None, tree.node(v).offset);
                }
            }
            let mut node = model::blank(parent, key_offset);
            node.name = def.name;
            node.elem = Some(elem);
            node.ty = Some(t);
            node.ctx = Some(ElemRef { ty: t, idx: 0 });
            node.index = index as u32;
            if let Some(v) = v {
                let n = *tree.node(v);
                let kind = match n.kind {
                    J::String => Some(ValueKind::String),
                    J::Number => Some(ValueKind::Number),
                    J::True | J::False => Some(ValueKind::Bool),
                    _ => None,
                };
                match kind {
                    Some(k) => {
                        if k != wanted {
                            self.finding_on(Code::TYPE_MISMATCH, parent, elem, Some(t), item, n.offset);
                        }
                        node.value_kind = if def.xhtml && k == ValueKind::String { ValueKind::Xhtml } else { k };
                        node.value = n.text;
                    }
                    None => {
                        self.finding_on(Code::TYPE_MISMATCH, parent, elem, Some(t), item, n.offset);
                        // Keep the content for fmt, without interpreting it.
                        node.flags = flag::UNKNOWN;
                        node.name_text = n.key.unwrap_or_default();
                        node.raw = (n.offset, n.end_offset);
                        let i = self.open(node)?;
                        self.b.close(i);
                        continue;
                    }
                }
            }
            let i = self.open(node)?;
            if let Some(e) = e {
                if tree.node(e).kind == J::Object {
                    self.members(e, i, ElemRef { ty: t, idx: 0 }, false, true)?;
                } else {
                    self.finding_on(Code::TYPE_MISMATCH, parent, elem, Some(t), item, tree.node(e).offset);
                }
            }
            self.b.close(i);
        }
        Ok(())
    }
}

/// The JSON kind FHIR uses for a primitive type.
pub fn json_kind_of(type_name: &str) -> ValueKind {
    match type_name {
        "boolean" => ValueKind::Bool,
        "integer" | "positiveInt" | "unsignedInt" | "decimal" | "integer64" => ValueKind::Number,
        _ => ValueKind::String,
    }
}
