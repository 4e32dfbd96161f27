//! The FHIR data-channel writer for JSON: the `parse` model and the canonical form of `fmt`.
//!
//! Writes the element tree as FHIR JSON (R4 "JSON representation"): `resourceType` first, then
//! the elements in the order of the core definitions (as the XML form requires and as the
//! reference implementations write them), `_element` right after `element` for primitive
//! extensions (with `null` placeholders in arrays), arrays exactly for repeating elements,
//! numbers and booleans as written (decimals keep their exact text), strings re-escaped with
//! the minimal escaping of RFC 8259. Elements without a definition read from JSON follow their
//! siblings, in input order, re-indented but otherwise as written.
//!
//! Canonical form (`fmt`): that, pretty-printed with two spaces per level and `": "`, one item
//! per line, and a final newline (the layout of `JSON.stringify(resource, null, 2)`). The `parse`
//! model is the same content, compact. Records of an NDJSON input are written compact, one per
//! line.
//!
//! A document read from XML is written with JSON types derived from the definitions: `boolean`
//! and the number types become JSON literals when their text is valid, and elements without a
//! definition are left out (they have no JSON form).
//!
//! This is a data-channel writer: it needs a [`Disclosure`].

use crate::phi::Disclosure;

use super::definitions::{self as defs, Kind, TypeRef};
use super::json;
use super::model::{Document, Syntax, ValueKind};
use super::primitive;
use super::read_json::json_kind_of;

/// Appends the resource as FHIR JSON; `pretty` selects the canonical layout.
pub fn resource_json(doc: &Document, disclosure: &Disclosure, pretty: bool, out: &mut Vec<u8>) {
    resource_json_edited(doc, disclosure, pretty, None, out);
}

/// What a writer changes while writing (redaction): which nodes are written and which values
/// are replaced or left out. Sized like the document's nodes; a node outside is written as read.
#[derive(Debug, Default)]
pub struct Edits {
    /// `false`: the node (and everything under it) is not written.
    pub kept: Vec<bool>,
    /// The node's value.
    pub values: Vec<ValueEdit>,
}

/// An edit of one primitive value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ValueEdit {
    /// As read.
    #[default]
    Same,
    /// Left out (the node stays for its extensions).
    Removed,
    /// Replaced by this text.
    Replaced(Vec<u8>),
}

impl Edits {
    /// True when node `i` is written.
    pub fn kept(&self, i: u32) -> bool {
        self.kept.get(i as usize).copied().unwrap_or(true)
    }

    /// The edit of node `i`'s value.
    pub fn value(&self, i: u32) -> &ValueEdit {
        static SAME: ValueEdit = ValueEdit::Same;
        self.values.get(i as usize).unwrap_or(&SAME)
    }
}

/// As [`resource_json`], with `edits` applied.
#[expect(
    clippy::disallowed_methods,
    reason = "a data-channel writer: it writes values out under the operation's disclosure"
)]
pub fn resource_json_edited(
    doc: &Document,
    disclosure: &Disclosure,
    pretty: bool,
    edits: Option<&Edits>,
    out: &mut Vec<u8>,
) {
    let mut w = Writer {
        doc,
        values: doc.values.span().expose_value(disclosure),
        input: doc.input.span().expose_value(disclosure),
        out,
        pretty,
        depth: 0,
        edits,
    };
    w.resource(0);
    if pretty {
        w.out.push(b'\n');
    }
}

struct Writer<'a> {
    doc: &'a Document,
    values: &'a [u8],
    input: &'a [u8],
    out: &'a mut Vec<u8>,
    pretty: bool,
    depth: usize,
    edits: Option<&'a Edits>,
}

/// One JSON property of an element: the nodes of one element (and type, for a choice).
struct Group {
    elem_idx: u16,
    ty: Option<defs::TypeId>,
    nodes: Vec<u32>,
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

    fn has_kept_children(&self, i: u32) -> bool {
        self.doc.children(i).any(|c| self.kept(c))
    }

    fn newline(&mut self) {
        if self.pretty {
            self.out.push(b'\n');
            for _ in 0..self.depth {
                self.out.extend_from_slice(b"  ");
            }
        }
    }

    fn open(&mut self, c: u8) {
        self.out.push(c);
        self.depth += 1;
    }

    fn close(&mut self, c: u8) {
        self.depth -= 1;
        self.newline();
        self.out.push(c);
    }

    /// Starts a member: comma when not the first, newline, key.
    fn key(&mut self, first: &mut bool, name: &[u8]) {
        if !*first {
            self.out.push(b',');
        }
        *first = false;
        self.newline();
        json::write_string(self.out, name);
        self.out.extend_from_slice(if self.pretty { b": " } else { b":" });
    }

    fn item_sep(&mut self, first: &mut bool) {
        if !*first {
            self.out.push(b',');
        }
        *first = false;
        self.newline();
    }

    fn resource(&mut self, i: u32) {
        let node = *self.doc.node(i);
        if node.is_unknown() || node.ty.is_none() {
            self.opaque(i);
            return;
        }
        self.open(b'{');
        let mut first = true;
        self.key(&mut first, b"resourceType");
        json::write_string(self.out, defs::type_name(node.ty.unwrap_or(defs::TypeId(0))).as_bytes());
        self.members(i, &mut first, false);
        self.close(b'}');
    }

    /// The children of `i` as members of the object being written.
    fn members(&mut self, i: u32, first: &mut bool, primitive_ext: bool) {
        let doc = self.doc;
        let mut groups: Vec<Group> = Vec::new();
        let mut unknown: Vec<u32> = Vec::new();
        for c in doc.children(i) {
            if !self.kept(c) {
                continue;
            }
            let n = doc.node(c);
            // Unknown nodes with a definition (a resource of unknown type, a primitive holding
            // an object) stay with their element; the others follow in input order.
            let Some(elem) = n.elem else {
                unknown.push(c);
                continue;
            };
            let choice = defs::element(elem).is_some_and(|d| d.choice);
            let ty = if choice { n.ty } else { None };
            match groups.iter_mut().find(|g| g.elem_idx == elem.idx && g.ty == ty) {
                Some(g) => g.nodes.push(c),
                None => groups.push(Group { elem_idx: elem.idx, ty, nodes: vec![c] }),
            }
        }
        groups.sort_by_key(|g| g.elem_idx);
        for g in &groups {
            let Some(elem) = doc.node(g.nodes[0]).elem else { continue };
            let Some(def) = defs::element(elem) else { continue };
            if primitive_ext && def.name == "value" {
                continue;
            }
            let mut name = def.name.as_bytes().to_vec();
            if let Some(t) = g.ty {
                let tn = defs::type_name(t).as_bytes();
                if let Some((f, rest)) = tn.split_first() {
                    name.push(f.to_ascii_uppercase());
                    name.extend_from_slice(rest);
                }
            }
            let first_node = *doc.node(g.nodes[0]);
            let primitive = first_node.ty.is_some_and(|t| defs::kind(t) == Kind::Primitive);
            let repeats = def.repeats() || g.nodes.len() > 1;
            if primitive {
                self.primitive_group(&name, &g.nodes, repeats, first);
            } else {
                // `contained`, `entry.resource`, and elements typed as one resource type
                // (`entry.response.outcome`) carry their own `resourceType`.
                let resource = first_node.is_resource() || def.types.first() == Some(&TypeRef::Resource);
                self.key(first, &name);
                if repeats {
                    self.open(b'[');
                }
                let mut first_item = true;
                for &n in &g.nodes {
                    if repeats {
                        self.item_sep(&mut first_item);
                    }
                    if resource {
                        self.resource(n);
                    } else {
                        self.object(n);
                    }
                }
                if repeats {
                    self.close(b']');
                }
            }
        }
        if doc.syntax() == Syntax::Json {
            for u in unknown {
                let n = *doc.node(u);
                self.key(first, n.name_text.of(self.values));
                self.opaque(u);
            }
        }
    }

    fn object(&mut self, i: u32) {
        self.open(b'{');
        let mut first = true;
        self.members(i, &mut first, false);
        if first {
            // `{}`: nothing inside.
            self.depth -= 1;
            self.out.push(b'}');
            return;
        }
        self.close(b'}');
    }

    fn primitive_group(&mut self, name: &[u8], nodes: &[u32], repeats: bool, first: &mut bool) {
        let doc = self.doc;
        // An item with neither a value nor a kept extension or id (`"_given": [null, {}]`, or
        // everything redacted) carries nothing: it is left out, so that a `null` placeholder
        // never stands without its partner (which a reader would drop, and `fmt` would not be
        // idempotent).
        let carries = |w: &Self, n: u32| doc.node(n).is_unknown() || w.text_of(n).is_some() || w.has_kept_children(n);
        let filtered: Vec<u32>;
        let nodes = if nodes.iter().all(|&n| carries(self, n)) {
            nodes
        } else {
            filtered = nodes.iter().copied().filter(|&n| carries(self, n)).collect();
            &filtered[..]
        };
        let any_value = nodes.iter().any(|&n| self.text_of(n).is_some() || doc.node(n).is_unknown());
        let any_ext = nodes.iter().any(|&n| self.has_kept_children(n) && !doc.node(n).is_unknown());
        if any_value {
            self.key(first, name);
            if repeats {
                self.open(b'[');
            }
            let mut first_item = true;
            for &n in nodes {
                if repeats {
                    self.item_sep(&mut first_item);
                }
                if doc.node(n).is_unknown() {
                    self.opaque(n);
                } else if self.text_of(n).is_some() {
                    self.value(n);
                } else {
                    self.out.extend_from_slice(b"null");
                }
            }
            if repeats {
                self.close(b']');
            }
        }
        if any_ext {
            let mut ext_name = Vec::with_capacity(name.len() + 1);
            ext_name.push(b'_');
            ext_name.extend_from_slice(name);
            self.key(first, &ext_name);
            if repeats {
                self.open(b'[');
            }
            let mut first_item = true;
            for &n in nodes {
                if repeats {
                    self.item_sep(&mut first_item);
                }
                if self.has_kept_children(n) && !doc.node(n).is_unknown() {
                    self.open(b'{');
                    let mut f = true;
                    self.members(n, &mut f, true);
                    self.close(b'}');
                } else {
                    self.out.extend_from_slice(b"null");
                }
            }
            if repeats {
                self.close(b']');
            }
        }
    }

    fn value(&mut self, i: u32) {
        let node = *self.doc.node(i);
        let replaced = matches!(self.edits.map(|e| e.value(i)), Some(ValueEdit::Replaced(_)));
        let text = self.text_of(i).unwrap_or_default();
        let literal = match node.value_kind {
            ValueKind::Number if replaced => primitive::decimal(text),
            ValueKind::Bool if replaced => text == b"true" || text == b"false",
            ValueKind::Number | ValueKind::Bool => self.doc.syntax() == Syntax::Json,
            _ if self.doc.syntax() == Syntax::Xml => {
                let ty = node.ty.map(defs::type_name).unwrap_or("string");
                match json_kind_of(ty) {
                    ValueKind::Bool => text == b"true" || text == b"false",
                    ValueKind::Number => {
                        if ty == "decimal" {
                            primitive::decimal(text)
                        } else {
                            primitive::integer(text).is_some()
                        }
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        if literal {
            self.out.extend_from_slice(text);
        } else {
            json::write_string(self.out, text);
        }
    }

    /// Content without a definition, re-indented (JSON input only).
    fn opaque(&mut self, i: u32) {
        let (s, e) = self.doc.node(i).raw;
        let raw = self.input.get(s as usize..e as usize).unwrap_or_default();
        match json::parse(raw, &crate::limits::Limits::default()) {
            Ok(tree) if self.doc.syntax() == Syntax::Json => self.generic(&tree, 0),
            _ => self.out.extend_from_slice(b"null"),
        }
    }

    fn generic(&mut self, tree: &json::Tree, i: u32) {
        let n = *tree.node(i);
        match n.kind {
            json::Kind::Object | json::Kind::Array => {
                let (o, c) = if n.kind == json::Kind::Object { (b'{', b'}') } else { (b'[', b']') };
                if n.end == i + 1 {
                    self.out.extend_from_slice(&[o, c]);
                    return;
                }
                self.open(o);
                let mut first = true;
                for m in tree.children(i) {
                    if n.kind == json::Kind::Object {
                        self.key(&mut first, tree.key(m));
                    } else {
                        self.item_sep(&mut first);
                    }
                    self.generic(tree, m);
                }
                self.close(c);
            }
            json::Kind::String => json::write_string(self.out, tree.text(i)),
            json::Kind::Null => self.out.extend_from_slice(b"null"),
            _ => self.out.extend_from_slice(tree.text(i)),
        }
    }
}
