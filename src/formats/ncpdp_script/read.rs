//! An NCPDP SCRIPT message read over the shared XML reader ([`crate::formats::xml`]): the tree,
//! the namespace of every element and attribute as an [`Ns`], and per element its name in the
//! SCRIPT tables ([`super::tables::NAMES`]), its parent, and its 1-based index among its
//! same-named siblings; the version (from the `Message` element's version attributes) and the
//! message type (the `Body`'s first SCRIPT element).
//!
//! Fatal: the XML reader's errors (`MALFORMED_XML`, `XML_DTD_FORBIDDEN`,
//! `CHARSET_INVALID_BYTES`, `CLI_INPUT_TOO_LARGE`, at their offset), and a root that is not
//! `Message` in the SCRIPT namespace (`SCRIPT_ROOT_INVALID`).
//!
//! What it does not do: check the message (see `validate`).

use crate::diag::{Code, Diagnostic, Location, ScriptPosition, Severity};
use crate::formats::xml::{self, NsId, Span, Tree};
use crate::limits::Limits;
use crate::phi::{Phi, PhiBytes};

use super::tables::{self, NAMES, SCRIPT_NS, Version};

/// XML Schema instance.
pub const XSI_NS: &[u8] = b"http://www.w3.org/2001/XMLSchema-instance";

/// The namespaces SCRIPT tells apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ns {
    /// No namespace.
    None,
    /// The SCRIPT namespace.
    Script,
    /// XML Schema instance.
    Xsi,
    /// The `xml` prefix's.
    Xml,
    /// Any other.
    Other,
}

impl crate::phi::sealed::Sealed for Ns {}
impl crate::phi::ValueFree for Ns {}

/// What the reader adds to an element of the tree.
#[derive(Copy, Clone, Debug)]
pub struct Node {
    /// The parent element (`u32::MAX` for the root).
    pub parent: u32,
    /// The index of its local name in [`NAMES`] (`u16::MAX`: not a SCRIPT name, or not in the
    /// SCRIPT namespace).
    pub name: u16,
    /// Its namespace.
    pub ns: Ns,
    /// 1-based index among its siblings of the same namespace and name.
    pub index: u16,
    /// True when a sibling has the same namespace and name.
    pub repeats: bool,
}

/// A SCRIPT message: the input, the XML tree over it, the reader's view of each element.
#[derive(Debug)]
pub struct Document {
    input: Phi<Vec<u8>>,
    tree: Tree,
    nodes: Vec<Node>,
    attr_ns: Vec<Ns>,
    /// The version its `Message` element declares.
    pub version: Version,
    /// The `Header` element (the first), if any.
    pub header: Option<u32>,
    /// The `Body` element (the first), if any.
    pub body: Option<u32>,
    /// The transaction element (the `Body`'s first SCRIPT child), if any.
    pub transaction: Option<u32>,
}

impl Document {
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

    /// Element `e`'s local name as written (markup, not a value).
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

    /// The unprefixed attribute of element `e` named `name`.
    pub fn attr(&self, e: u32, name: &[u8]) -> Option<&xml::Attr> {
        let first = self.tree.elements().get(e as usize)?.attrs.start as usize;
        self.tree
            .attrs_of(e)
            .iter()
            .enumerate()
            .find(|(k, a)| self.attr_ns(first + k) == Ns::None && self.attr_local(a) == name)
            .map(|(_, a)| a)
    }

    /// The namespace of element `e`.
    pub fn ns(&self, e: u32) -> Ns {
        self.nodes.get(e as usize).map_or(Ns::Other, |n| n.ns)
    }

    /// The SCRIPT name of element `e` (`None`: not a SCRIPT element of the tables).
    pub fn name(&self, e: u32) -> Option<&'static str> {
        self.nodes.get(e as usize).and_then(|n| NAMES.get(usize::from(n.name))).copied()
    }

    /// True when element `e` is a SCRIPT element named `name`.
    pub fn is(&self, e: u32, name: &str) -> bool {
        self.ns(e) == Ns::Script && self.local(e) == name.as_bytes()
    }

    /// The child elements of `e` in the SCRIPT namespace named `name`.
    pub fn children_named<'a>(&'a self, e: u32, name: &'a str) -> impl Iterator<Item = u32> + 'a {
        self.tree.children(e).filter(move |&c| self.is(c, name))
    }

    /// The parent of `e` (`u32::MAX`: none).
    pub fn parent(&self, e: u32) -> u32 {
        self.nodes.get(e as usize).map_or(u32::MAX, |n| n.parent)
    }

    /// The message type's name (of the tables), if the transaction element is one of the
    /// version's.
    pub fn message_type(&self) -> Option<&'static str> {
        self.transaction.and_then(|t| tables::message_type(self.local(t), self.version))
    }

    /// The position of element `e`: its path from the root.
    pub fn position(&self, e: u32) -> ScriptPosition {
        let mut chain = Vec::new();
        let mut at = e;
        while let Some(n) = self.nodes.get(at as usize) {
            chain.push(at);
            at = n.parent;
        }
        let mut p = ScriptPosition::new();
        for &x in chain.iter().rev() {
            let n = self.nodes[x as usize];
            p.push(n.name, if n.repeats { n.index } else { 0 });
        }
        p.node = e;
        p
    }

    /// The location of element `e`.
    pub fn location(&self, e: u32) -> Location {
        Location::Script(self.position(e))
    }

    /// The location of a missing child `name` of element `e`.
    pub fn missing(&self, e: u32, name: &str) -> Location {
        let mut p = self.position(e);
        p.push(tables::name_id(name.as_bytes()), 0);
        p.child = true;
        Location::Script(p)
    }

    /// The location of attribute `name` (a name of [`tables::ATTRIBUTES`]) of element `e`.
    pub fn attr_location(&self, e: u32, name: &str) -> Location {
        let mut p = self.position(e);
        p.attr = tables::ATTRIBUTES.iter().find(|a| **a == name);
        Location::Script(p)
    }

    /// Writes the whole path of element `e`.
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
            let _ = ScriptPosition::write_step(out, n.name, if n.repeats { n.index } else { 0 });
        }
    }
}

fn fatal(code: Code, offset: u64) -> Diagnostic {
    Diagnostic::new(code, Location::Offset(offset)).with_severity(Severity::Fatal)
}

/// A failed read: the fatal diagnostic and the record's bytes.
pub type Failure = Box<(Diagnostic, Phi<Vec<u8>>)>;

/// Siblings of one element by namespace and name: how many, and which.
type Siblings<'a> = std::collections::HashMap<(Ns, &'a [u8]), (u16, Vec<u32>)>;

/// The version the `Message` element's attributes declare.
fn version_of(tree: &Tree, raw: &[u8], attr_ns: &[Ns]) -> Version {
    let first = tree.root().attrs.start as usize;
    let mut v10 = (false, false);
    let mut v17 = (0usize, true);
    let mut other_version = false;
    for (k, a) in tree.attrs_of(0).iter().enumerate() {
        if attr_ns.get(first + k) != Some(&Ns::None) {
            continue;
        }
        let name = a.local.of(raw);
        let value = tree.value(a.value);
        match name {
            b"version" => {
                v10.0 = value.classify(|v| v == b"010");
                other_version |= !v10.0;
            }
            b"release" => v10.1 = value.classify(|v| v == b"006"),
            _ if tables::V2017_ATTRIBUTES.iter().any(|n| n.as_bytes() == name) => {
                v17.0 += 1;
                v17.1 &= value.classify(|v| v == b"20170715");
            }
            _ => {}
        }
    }
    match (v10 == (true, true), v17.0 > 0 && v17.1, other_version) {
        (true, false, _) if v17.0 == 0 => Version::V10_6,
        (false, true, false) => Version::V2017071,
        _ => Version::Unknown,
    }
}

/// Reads one SCRIPT message. A fatal diagnostic is an `Err`, with the bytes back.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn read(bytes: Vec<u8>, limits: &Limits) -> Result<Document, Failure> {
    let input = Phi::new(bytes);
    let tree = match xml::parse(input.span().raw(), limits) {
        Ok(t) => t,
        Err(e) => return Err(Box::new((fatal(e.code(), e.offset()), input))),
    };
    let ns_table: Vec<Ns> = tree
        .namespace_ids()
        .map(|id| match id {
            NsId::NONE => Ns::None,
            NsId::XML => Ns::Xml,
            _ => tree.namespace(id).classify(|uri| match uri {
                SCRIPT_NS => Ns::Script,
                XSI_NS => Ns::Xsi,
                _ => Ns::Other,
            }),
        })
        .collect();
    let ns_of = |id: NsId| ns_table.get(id.index()).copied().unwrap_or(Ns::Other);
    let raw = input.span().raw();
    let root = tree.root();
    if ns_of(root.ns) != Ns::Script || root.local.of(raw) != b"Message" {
        let offset = u64::from(root.offset);
        return Err(Box::new((fatal(Code::SCRIPT_ROOT_INVALID, offset), input)));
    }
    let elements = tree.elements();
    let mut nodes: Vec<Node> = elements
        .iter()
        .map(|e| {
            let ns = ns_of(e.ns);
            let name = if ns == Ns::Script { tables::name_id(e.local.of(raw)) } else { u16::MAX };
            Node { parent: u32::MAX, name, ns, index: 1, repeats: false }
        })
        .collect();
    let mut counts: Siblings<'_> = Siblings::new();
    for p in 0..elements.len() as u32 {
        counts.clear();
        for c in tree.children(p) {
            let key = (nodes[c as usize].ns, elements[c as usize].local.of(raw));
            let entry = counts.entry(key).or_insert((0, Vec::new()));
            entry.0 = entry.0.saturating_add(1);
            entry.1.push(c);
            let n = &mut nodes[c as usize];
            n.parent = p;
            n.index = entry.0;
        }
        for (count, members) in counts.values() {
            if *count > 1 {
                for &c in members {
                    nodes[c as usize].repeats = true;
                }
            }
        }
    }
    let attr_ns: Vec<Ns> = tree.attributes().iter().map(|a| ns_of(a.ns)).collect();
    let version = version_of(&tree, raw, &attr_ns);
    let is = |e: u32, name: &[u8]| nodes[e as usize].ns == Ns::Script && elements[e as usize].local.of(raw) == name;
    let header = tree.children(0).find(|&c| is(c, b"Header"));
    let body = tree.children(0).find(|&c| is(c, b"Body"));
    let transaction = body.and_then(|b| tree.children(b).find(|&c| nodes[c as usize].ns == Ns::Script));
    Ok(Document { input, tree, nodes, attr_ns, version, header, body, transaction })
}
