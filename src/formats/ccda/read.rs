//! A C-CDA document read over the shared XML reader ([`crate::formats::xml`]): the tree, the
//! namespace of every element and attribute as a [`Ns`], and per element its name in the CDA
//! definitions ([`super::tables::NAMES`]), its parent, its 1-based index among its same-named
//! siblings, and whether it lies inside a section's narrative block (`section/text`, kept as a
//! value: its markup is not checked against the CDA classes).
//!
//! Fatal: the XML reader's errors (`MALFORMED_XML`, `XML_DTD_FORBIDDEN`,
//! `CHARSET_INVALID_BYTES`, `CLI_INPUT_TOO_LARGE`, at their offset), and a root outside the
//! CDA namespace or not named like a CDA element (`CCDA_NAMESPACE_INVALID`). The root is a
//! `ClinicalDocument`, or a fragment: an element of a CDA class given alone (a `section`, an
//! `act`, an `author`...), validated against that class, or several (an external parsed
//! entity's content: two sections' `component`s). A fragment may leave the CDA namespace, `xsi:`
//! and `sdtc:` undeclared, as HL7 publishes its examples ([`FRAGMENT_NAMESPACES`]: reported by
//! `validate`); a `ClinicalDocument` may not (`MALFORMED_XML` at the undeclared prefix,
//! `CCDA_NAMESPACE_INVALID` at a root in no namespace, as a document reader would).
//!
//! What it does not do: check the document against the definitions (see `validate`).

use crate::diag::{CcdaPosition, Code, Diagnostic, Location, Severity};
use crate::formats::xml::{self, NsId, Span, Tree};
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

use super::tables::NAMES;

/// The CDA namespace.
pub const V3_NS: &[u8] = b"urn:hl7-org:v3";
/// The namespace of the approved SDTC extensions.
pub const SDTC_NS: &[u8] = b"urn:hl7-org:sdtc";
/// XML Schema instance (`xsi:type`, `xsi:schemaLocation`).
pub const XSI_NS: &[u8] = b"http://www.w3.org/2001/XMLSchema-instance";

/// The namespaces C-CDA tells apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ns {
    /// No namespace.
    None,
    /// `urn:hl7-org:v3`.
    V3,
    /// `urn:hl7-org:sdtc`.
    Sdtc,
    /// XML Schema instance.
    Xsi,
    /// The `xml` prefix's.
    Xml,
    /// Any other.
    Other,
}

impl crate::phi::sealed::Sealed for Ns {}
impl crate::phi::ValueFree for Ns {}

/// The namespaces a fragment published without declarations is read with: the CDA namespace as
/// the default, `xsi:` and `sdtc:` (HL7 publishes its C-CDA examples' sections and entries so).
pub const FRAGMENT_NAMESPACES: &[(&[u8], &[u8])] = &[(b"", V3_NS), (b"xsi", XSI_NS), (b"sdtc", SDTC_NS)];

/// What the reader adds to an element of the tree.
#[derive(Copy, Clone, Debug)]
pub struct Node {
    /// The parent element (`u32::MAX` for the root).
    pub parent: u32,
    /// The index of its local name in [`NAMES`] (`u16::MAX`: not a name of the definitions).
    pub name: u16,
    /// Its namespace.
    pub ns: Ns,
    /// 1-based index among its siblings of the same namespace and name.
    pub index: u16,
    /// True when a sibling has the same namespace and name.
    pub repeats: bool,
    /// True inside a section's narrative block (the `text` element itself excluded).
    pub narrative: bool,
}

/// A C-CDA document: the input, the XML tree over it, and the reader's view of each element.
#[derive(Debug)]
pub struct Document {
    input: Phi<Vec<u8>>,
    tree: Tree,
    nodes: Vec<Node>,
    attr_ns: Vec<Ns>,
    roots: Vec<u32>,
}

impl Document {
    /// The top-level elements: the `ClinicalDocument`, or a fragment's elements (a section, an
    /// entry...), each validated as a root.
    pub fn roots(&self) -> &[u32] {
        &self.roots
    }

    /// True when element `e` is a top-level element.
    pub fn is_root(&self, e: u32) -> bool {
        self.nodes.get(e as usize).is_some_and(|n| n.parent == u32::MAX)
    }

    /// True when a fragment was read with namespaces it did not declare
    /// ([`FRAGMENT_NAMESPACES`]).
    pub fn implied_namespaces(&self) -> bool {
        self.tree.implied()
    }

    /// The XML tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The reader's view of the elements, indexed as the tree's.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The record's bytes.
    pub fn input(&self) -> PhiBytes<'_> {
        self.input.span()
    }

    /// The namespace of an attribute (by its index in [`Tree::attributes`]).
    pub fn attr_ns(&self, i: usize) -> Ns {
        self.attr_ns.get(i).copied().unwrap_or(Ns::Other)
    }

    /// The name of element `e` in the definitions.
    pub fn name(&self, e: u32) -> Option<&'static &'static str> {
        self.nodes.get(e as usize).and_then(|n| NAMES.get(usize::from(n.name)))
    }

    /// Element `e`'s local name as written (markup, not a value: the input's element names).
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub fn local(&self, e: u32) -> &[u8] {
        let span = self.tree.elements().get(e as usize).map_or(Span::default(), |x| x.local);
        span.of(self.input.span().raw())
    }

    /// An attribute's local name as written.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub fn attr_local(&self, a: &xml::Attr) -> &[u8] {
        a.local.of(self.input.span().raw())
    }

    /// The attribute of element `e` in namespace `ns` named `name`.
    pub fn attr(&self, e: u32, ns: Ns, name: &[u8]) -> Option<&xml::Attr> {
        let first = self.tree.elements().get(e as usize)?.attrs.start as usize;
        self.tree
            .attrs_of(e)
            .iter()
            .enumerate()
            .find(|(k, a)| self.attr_ns(first + k) == ns && self.attr_local(a) == name)
            .map(|(_, a)| a)
    }

    /// The child elements of `e` in the CDA namespace named `name`.
    pub fn children_named<'a>(&'a self, e: u32, name: &'a [u8]) -> impl Iterator<Item = u32> + 'a {
        self.tree.children(e).filter(move |&c| self.ns(c) == Ns::V3 && self.local(c) == name)
    }

    /// The namespace of element `e`.
    pub fn ns(&self, e: u32) -> Ns {
        self.nodes.get(e as usize).map_or(Ns::Other, |n| n.ns)
    }

    /// The position of element `e`: its path from the root.
    pub fn position(&self, e: u32) -> CcdaPosition {
        let mut chain = Vec::new();
        let mut at = e;
        while let Some(n) = self.nodes.get(at as usize) {
            chain.push(at);
            at = n.parent;
        }
        let mut p = CcdaPosition::new();
        for &x in chain.iter().rev() {
            let n = self.nodes[x as usize];
            p.push(n.name, if n.repeats { n.index } else { 0 });
        }
        p.node = e;
        p
    }

    /// The location of element `e`.
    pub fn location(&self, e: u32) -> Location {
        Location::Ccda(self.position(e))
    }

    /// Writes the whole path of element `e` (the output's location when a position is
    /// shortened).
    pub fn write_path(&self, e: u32, out: &mut String) {
        let mut chain = Vec::new();
        let mut at = e;
        while let Some(n) = self.nodes.get(at as usize) {
            chain.push(at);
            at = n.parent;
        }
        for (i, &x) in chain.iter().rev().enumerate() {
            if i > 0 {
                out.push('/');
            }
            let n = self.nodes[x as usize];
            let _ = CcdaPosition::write_step(out, n.name, if n.repeats { n.index } else { 0 });
        }
    }
}

fn fatal(code: Code, offset: u64) -> Diagnostic {
    Diagnostic::new(code, Location::Offset(offset)).with_severity(Severity::Fatal)
}

/// The index of a name in [`NAMES`].
pub fn name_id(name: &[u8]) -> u16 {
    NAMES.binary_search_by(|n| n.as_bytes().cmp(name)).map_or(u16::MAX, |i| i as u16)
}

/// A failed read: the fatal diagnostic and the record's bytes.
pub type Failure = Box<(Diagnostic, Phi<Vec<u8>>)>;

/// Siblings of one element by namespace and name: how many, and which.
type Siblings<'a> = std::collections::HashMap<(Ns, &'a [u8]), (u16, Vec<u32>)>;

/// Reads one C-CDA document. A fatal diagnostic is an `Err`, with the bytes back.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read(bytes: Vec<u8>, limits: &Limits) -> Result<Document, Failure> {
    let input = Phi::new(bytes);
    let fragment = xml::Fragment { implied: FRAGMENT_NAMESPACES, several_roots: true };
    let tree = match xml::parse_fragment(input.span().raw(), limits, &fragment) {
        Ok(t) => t,
        Err(e) => return Err(Box::new((fatal(e.code(), e.offset()), input))),
    };
    let raw = input.span().raw();
    let roots: Vec<u32> = tree.roots().collect();
    // A whole document is read as a document: one root, its namespaces declared. Read again
    // strictly, it fails where a document reader fails (an undeclared prefix, a second root),
    // or its root is outside the CDA namespace.
    let whole =
        roots.iter().any(|&r| tree.elements().get(r as usize).is_some_and(|e| e.local.of(raw) == b"ClinicalDocument"));
    if whole && (tree.implied() || roots.len() > 1) {
        let code_at = match xml::parse(raw, limits) {
            Err(e) => (e.code(), e.offset()),
            Ok(t) => (Code::CCDA_NAMESPACE_INVALID, u64::from(t.root().offset)),
        };
        return Err(Box::new((fatal(code_at.0, code_at.1), input)));
    }
    let ns_table: Vec<Ns> = tree
        .namespace_ids()
        .map(|id| match id {
            NsId::NONE => Ns::None,
            NsId::XML => Ns::Xml,
            _ => tree.namespace(id).classify(|uri| match uri {
                V3_NS => Ns::V3,
                SDTC_NS => Ns::Sdtc,
                XSI_NS => Ns::Xsi,
                _ => Ns::Other,
            }),
        })
        .collect();
    let ns_of = |id: NsId| ns_table.get(id.index()).copied().unwrap_or(Ns::Other);
    for &r in &roots {
        let root = tree.elements()[r as usize];
        if ns_of(root.ns) != Ns::V3 || super::validate::root_class(root.local.of(raw)).is_none() {
            let offset = u64::from(root.offset);
            return Err(Box::new((fatal(Code::CCDA_NAMESPACE_INVALID, offset), input)));
        }
    }
    let elements = tree.elements();
    let mut nodes: Vec<Node> = Vec::with_capacity(elements.len());
    for (i, e) in elements.iter().enumerate() {
        let ns = ns_of(e.ns);
        let name = if matches!(ns, Ns::V3 | Ns::Sdtc) { name_id(e.local.of(raw)) } else { u16::MAX };
        nodes.push(Node { parent: u32::MAX, name, ns, index: 1, repeats: false, narrative: false });
        let _ = i;
    }
    // Parents, indexes among same-named siblings (the top-level elements among themselves),
    // the narrative blocks.
    let mut counts: Siblings<'_> = Siblings::new();
    for &r in &roots {
        let entry = counts.entry((nodes[r as usize].ns, elements[r as usize].local.of(raw))).or_insert((0, Vec::new()));
        entry.0 = entry.0.saturating_add(1);
        entry.1.push(r);
        nodes[r as usize].index = entry.0;
    }
    for (count, members) in counts.values() {
        if *count > 1 {
            for &c in members {
                nodes[c as usize].repeats = true;
            }
        }
    }
    for p in 0..elements.len() as u32 {
        counts.clear();
        let parent_narrative = nodes[p as usize].narrative;
        let in_text = nodes[p as usize].ns == Ns::V3
            && elements[p as usize].local.of(raw) == b"text"
            && nodes[p as usize].parent != u32::MAX
            && {
                let pp = nodes[p as usize].parent as usize;
                nodes[pp].ns == Ns::V3 && elements[pp].local.of(raw) == b"section"
            };
        for c in tree.children(p) {
            let key = (nodes[c as usize].ns, elements[c as usize].local.of(raw));
            let entry = counts.entry(key).or_insert((0, Vec::new()));
            entry.0 = entry.0.saturating_add(1);
            entry.1.push(c);
            let n = &mut nodes[c as usize];
            n.parent = p;
            n.index = entry.0;
            n.narrative = parent_narrative || in_text;
        }
        for (count, members) in counts.values() {
            if *count > 1 {
                for &c in members {
                    nodes[c as usize].repeats = true;
                }
            }
        }
    }
    let attr_ns = tree.attributes().iter().map(|a| ns_of(a.ns)).collect();
    Ok(Document { input, tree, nodes, attr_ns, roots })
}
