//! The FHIR element tree shared by the JSON and XML syntaxes.
//!
//! One [`Document`] per record: the input bytes and the decoded values each in one zeroizing
//! buffer (`Phi<Vec<u8>>`), and a flat list of [`Node`]s in document pre-order. A node is one
//! element instance (one repetition), resolved against the core definitions while it is built:
//! its element definition, its type (the concrete type of a choice), where its children are
//! defined, and, for a primitive, the span of its value. A resource inside a resource
//! (`contained`, `Bundle.entry.resource`, `Parameters.parameter.resource`) is the node of the
//! element that holds it, typed with the resource's type.
//!
//! The JSON split of a primitive into `x` and `_x` is undone here: a node holds the value and
//! its `id`/`extension` children together, as in XML.
//!
//! Elements with no definition are kept as opaque nodes (their decoded name and the input span
//! of their content) so that `fmt` can write them back; they are never interpreted.
//!
//! What it does not do: validate (see `validate`), or look at values other than through
//! [`Document::value`], which is visible only inside `formats::fhir`.

use crate::diag::{Diagnostic, FhirPath};
use crate::phi::{Phi, PhiBytes};

use super::definitions::{self as defs, ElemRef, Kind, TypeId};
use super::json::Span;

/// `u32::MAX`: no node.
pub const NONE: u32 = u32::MAX;

/// The syntax a document was read from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// FHIR JSON.
    Json,
    /// FHIR XML.
    Xml,
}

/// What kind of value a primitive node holds, as written in the input.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// No value (only `id`/`extension`, or a complex element).
    None,
    /// A JSON string, or an XML attribute.
    String,
    /// A JSON number (the source text).
    Number,
    /// JSON `true`/`false` (the text is the literal).
    Bool,
    /// XHTML markup (`Narrative.div`), as text.
    Xhtml,
}

/// Node flags.
pub mod flag {
    /// The node has no definition; `raw` holds its input span, `name_text` its decoded name.
    pub const UNKNOWN: u8 = 1;
    /// The node is a resource (the root, or a resource held by an element).
    pub const RESOURCE: u8 = 2;
    /// The resource's type could not be determined.
    pub const UNTYPED: u8 = 4;
}

/// One element instance.
#[derive(Copy, Clone, Debug)]
pub struct Node {
    /// The element name from the definitions (`name`, `value` for `valueQuantity`); for the
    /// root, the resource type; `""` for an unknown element.
    pub name: &'static str,
    /// The element's definition (`None` for the root and for unknown elements).
    pub elem: Option<ElemRef>,
    /// The node's type (the concrete type of a choice; the resource type of a resource).
    pub ty: Option<TypeId>,
    /// Where the node's children are defined.
    pub ctx: Option<ElemRef>,
    /// The primitive value (a span of [`Document`]'s value buffer).
    pub value: Span,
    /// How the value was written.
    pub value_kind: ValueKind,
    /// Byte offset of the element in the input (key or start tag).
    pub offset: u32,
    /// The parent node (`NONE` for the root).
    pub parent: u32,
    /// Index just past the last descendant.
    pub end: u32,
    /// 0-based position among the parent's children of the same element.
    pub index: u32,
    /// [`flag`] bits.
    pub flags: u8,
    /// Unknown nodes: the decoded name (value buffer).
    pub name_text: Span,
    /// Unknown nodes: the input span of the content (JSON value or whole XML element).
    pub raw: (u32, u32),
}

impl Node {
    /// True for a node with no definition.
    pub fn is_unknown(&self) -> bool {
        self.flags & flag::UNKNOWN != 0
    }

    /// True for a resource node.
    pub fn is_resource(&self) -> bool {
        self.flags & flag::RESOURCE != 0
    }

    /// True when the node has a value.
    pub fn has_value(&self) -> bool {
        self.value_kind != ValueKind::None
    }
}

/// One parsed FHIR record.
#[derive(Debug)]
pub struct Document {
    pub(super) input: Phi<Vec<u8>>,
    pub(super) values: Phi<Vec<u8>>,
    pub(super) nodes: Vec<Node>,
    pub(super) syntax: Syntax,
    /// Findings made while reading (syntax-level, value-free).
    pub(super) findings: Vec<Diagnostic>,
}

impl Document {
    /// The syntax the record was read from.
    pub fn syntax(&self) -> Syntax {
        self.syntax
    }

    /// The nodes, in pre-order; `nodes()[0]` is the root resource.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Node `i`.
    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[(i as usize).min(self.nodes.len().saturating_sub(1))]
    }

    /// The findings made while reading.
    pub fn findings(&self) -> &[Diagnostic] {
        &self.findings
    }

    /// The input bytes.
    pub fn input(&self) -> PhiBytes<'_> {
        self.input.span()
    }

    /// The value of node `i` (empty when none), as a span of the value buffer.
    pub fn value_span(&self, i: u32) -> PhiBytes<'_> {
        let v = self.node(i).value;
        self.values.span().slice(v.start as usize, v.start as usize + v.len as usize)
    }

    /// Raw access for the validator and the FHIRPath engine of this module.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub(super) fn value(&self, i: u32) -> &[u8] {
        self.value_span(i).raw()
    }

    /// The direct children of node `i`.
    pub fn children(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        let end = self.nodes.get(i as usize).map_or(0, |n| n.end);
        let mut next = i + 1;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let c = next;
            next = self.nodes.get(c as usize).map_or(end, |n| n.end.max(c + 1));
            Some(c)
        })
    }

    /// The children of node `i` named `name` (known elements only).
    pub fn named<'a>(&'a self, i: u32, name: &'a str) -> impl Iterator<Item = u32> + 'a {
        self.children(i).filter(move |&c| {
            let n = self.node(c);
            !n.is_unknown() && n.name == name
        })
    }

    /// The nearest resource node at or above `i`.
    pub fn resource_of(&self, mut i: u32) -> u32 {
        for _ in 0..self.nodes.len() {
            let n = self.node(i);
            if n.is_resource() || n.parent == NONE {
                return i;
            }
            i = n.parent;
        }
        0
    }

    /// The location of node `i`: `Patient.name[0].given[1]`.
    pub fn path(&self, i: u32) -> FhirPath {
        path_in(&self.nodes, i)
    }

    /// The location of a child element `elem` of node `parent` that is absent (for `CARDINALITY_MIN`).
    pub fn path_of_missing(&self, parent: u32, elem: ElemRef) -> FhirPath {
        let mut path = self.path(parent);
        if let Some(name) = defs::step_name(elem, None) {
            path.push(name, None);
        }
        path
    }

    /// True when node `i`'s type is primitive.
    pub fn is_primitive(&self, i: u32) -> bool {
        self.node(i).ty.is_some_and(|t| defs::kind(t) == Kind::Primitive)
    }
}

/// Builds a [`Document`] (shared by the JSON and XML readers).
#[derive(Debug)]
pub(super) struct Builder {
    pub nodes: Vec<Node>,
    pub findings: Vec<Diagnostic>,
    pub max_nodes: usize,
}

impl Builder {
    pub fn new(max_nodes: u32) -> Self {
        Builder { nodes: Vec::new(), findings: Vec::new(), max_nodes: max_nodes as usize }
    }

    /// Appends a node (its `index` set by the caller); its `end` is set by [`Builder::close`].
    pub fn open(&mut self, mut node: Node) -> Option<u32> {
        if self.nodes.len() >= self.max_nodes {
            return None;
        }
        let i = self.nodes.len() as u32;
        node.end = NONE;
        self.nodes.push(node);
        Some(i)
    }

    /// Sets the end of node `i` to the current length.
    pub fn close(&mut self, i: u32) {
        let len = self.nodes.len() as u32;
        if let Some(n) = self.nodes.get_mut(i as usize) {
            n.end = len;
        }
    }
}

/// The location of node `i` among `nodes` (also used while building).
pub(super) fn path_in(nodes: &[Node], i: u32) -> FhirPath {
    let mut chain = [NONE; 64];
    let mut len = 0usize;
    let mut cur = i;
    while cur != NONE && (cur as usize) < nodes.len() {
        if len == chain.len() {
            // Absurdly deep: keep the deepest steps.
            chain.copy_within(1.., 0);
            len -= 1;
        }
        chain[len] = cur;
        len += 1;
        cur = nodes[cur as usize].parent;
    }
    let mut path = FhirPath::new();
    for &n in chain[..len].iter().rev() {
        let node = &nodes[n as usize];
        if node.is_unknown() && node.elem.is_none() {
            path.offset = Some(node.offset);
            break;
        }
        if node.parent == NONE {
            if let Some(t) = node.ty {
                path.push(defs::type_step(t), None);
            }
            continue;
        }
        let Some(elem) = node.elem else { break };
        let repeats = defs::element(elem).is_some_and(|d| d.repeats());
        if let Some(name) = defs::step_name(elem, node.ty) {
            path.push(name, repeats.then_some(node.index));
        }
        if node.is_unknown() {
            // A resource of unknown type, or a primitive holding an object: located by offset.
            path.offset = Some(node.offset);
            break;
        }
    }
    path.node = i;
    path
}

/// The location of the defined element `elem` (of type `ty`, for a choice's name) of node
/// `parent`, item `index` of a repeating one (`None`: the property as a whole), for a finding
/// the reader makes before the element has a node of its own: `Patient.name[1]`, named from the
/// definitions, with `at` (where the element starts) kept only for its line and column. Under
/// an element without a definition the path ends there, at `at`, as [`path_in`]'s do.
pub(super) fn path_of_element(
    nodes: &[Node],
    parent: u32,
    elem: ElemRef,
    ty: Option<TypeId>,
    index: Option<u32>,
    at: u32,
) -> FhirPath {
    let mut path = path_in(nodes, parent);
    if path.offset.is_none() {
        if let Some(name) = defs::step_name(elem, ty) {
            path.push(name, index);
            path.offset_is_position = true;
        }
    }
    path.offset = Some(at);
    path
}

/// A blank node to fill in.
pub(super) fn blank(parent: u32, offset: u32) -> Node {
    Node {
        name: "",
        elem: None,
        ty: None,
        ctx: None,
        value: Span::default(),
        value_kind: ValueKind::None,
        offset,
        parent,
        end: NONE,
        index: 0,
        flags: 0,
        name_text: Span::default(),
        raw: (offset, offset),
    }
}
