//! The document the reader builds: elements in pre-order, their attributes, their text, and the
//! namespaces they resolve to, as integers and spans.
//!
//! Names (element and attribute local names) are spans of the input; decoded values (attribute
//! values, text, namespace URIs) are spans of one zeroizing buffer owned by a [`Phi`], read
//! through [`Tree::value`] (a [`PhiBytes`]: `classify` for a verdict, or a data-channel writer's
//! disclosure). No type here holds a byte of the message, so `Debug` on any of them shows
//! structure only.
//!
//! What it does not do: keep comments, processing instructions, or white-space-only text (text
//! made only of literal white space between elements).

use crate::phi::{Phi, PhiBytes};

/// A byte range `start..end` (of the input, or of the value buffer).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The bytes of `buf` in the span (empty if it lies outside).
    pub fn of(self, buf: &[u8]) -> &[u8] {
        buf.get(self.start as usize..self.end as usize).unwrap_or_default()
    }

    /// Length in bytes.
    pub fn len(self) -> u32 {
        self.end.saturating_sub(self.start)
    }

    /// True when the span is empty.
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

/// A namespace: an index into the namespace declarations of the document.
///
/// [`NsId::NONE`] is no namespace; [`NsId::XML`] is the one the `xml` prefix is bound to
/// (`http://www.w3.org/XML/1998/namespace`); every `xmlns` or `xmlns:p` declaration gets its own
/// id (two declarations of the same URI get two ids: compare URIs, with [`Tree::namespace_is`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct NsId(pub(super) u32);

impl NsId {
    /// No namespace.
    pub const NONE: NsId = NsId(0);
    /// The `xml` prefix's namespace.
    pub const XML: NsId = NsId(1);

    /// The index (for tables indexed by namespace, sized by [`Tree::namespace_count`]).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The URI of [`NsId::XML`].
pub const XML_NAMESPACE: &[u8] = b"http://www.w3.org/XML/1998/namespace";

/// An element.
#[derive(Copy, Clone, Debug)]
pub struct Element {
    /// Namespace.
    pub ns: NsId,
    /// Local name: a span of the input.
    pub local: Span,
    /// Qualified name as written (prefix included): a span of the input.
    pub qname: Span,
    /// Byte offset of `<`.
    pub offset: u32,
    /// Byte offset just past the element (its end tag, or `/>`).
    pub end_offset: u32,
    /// The content between the start and end tags: a span of the input (empty for `<a/>`).
    pub content: Span,
    /// Index just past the last descendant element.
    pub end: u32,
    /// Depth (the root is 0).
    pub depth: u32,
    /// Attributes: a range of [`Tree::attributes`].
    pub attrs: Span,
    /// Texts of the element and its descendants: a range of [`Tree::texts`].
    pub texts: Span,
    /// The index in [`Tree::texts`] of its own first text, if it has one.
    pub first_text: Option<u32>,
}

/// An attribute. Namespace declarations (`xmlns`, `xmlns:p`) are not attributes here.
#[derive(Copy, Clone, Debug)]
pub struct Attr {
    /// Namespace ([`NsId::NONE`] for an unprefixed attribute).
    pub ns: NsId,
    /// Local name: a span of the input.
    pub local: Span,
    /// Decoded, normalized value: a span of the value buffer.
    pub value: Span,
    /// Byte offset of the attribute's name.
    pub offset: u32,
}

/// A run of text directly inside an element: character data, references and CDATA sections
/// with no other markup between them (a comment, a processing instruction or a tag ends a run).
///
/// Kept only when it holds something other than literal white space (a non-white-space
/// character, a reference, or a CDATA section).
#[derive(Copy, Clone, Debug)]
pub struct Text {
    /// The element it is in.
    pub parent: u32,
    /// Decoded value (references replaced, line ends normalized; surrounding white space kept):
    /// a span of the value buffer.
    pub value: Span,
    /// Byte offset of its first non-white-space character, reference or CDATA section.
    pub offset: u32,
    /// The raw text in the input (from the end of the markup before it to the start of the
    /// markup after it).
    pub raw: Span,
    /// The index of the element that follows it in document order (the number of elements
    /// before it): what orders text and child elements in mixed content.
    pub before: u32,
}

/// A parsed document.
#[derive(Debug)]
pub struct Tree {
    pub(super) elements: Vec<Element>,
    pub(super) attrs: Vec<Attr>,
    pub(super) texts: Vec<Text>,
    pub(super) namespaces: Vec<Span>,
    pub(super) values: Phi<Vec<u8>>,
    /// A namespace of [`super::read::Fragment::implied`] resolved a name.
    pub(super) implied: bool,
}

impl Tree {
    /// Elements in pre-order; `elements()[0]` is the root (a tree always has one).
    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// The root element.
    pub fn root(&self) -> Element {
        // Invariant: `read::parse` returns a tree only when it has read a root element.
        self.elements[0]
    }

    /// The top-level elements, in order: the root alone, unless the tree was read as a fragment
    /// with several ([`super::read::Fragment::several_roots`]).
    pub fn roots(&self) -> impl Iterator<Item = u32> + '_ {
        let mut next = 0u32;
        std::iter::from_fn(move || {
            let e = self.elements.get(next as usize)?;
            let c = next;
            next = e.end.max(c + 1);
            Some(c)
        })
    }

    /// True when a name was resolved by a namespace the reader implied (a fragment's undeclared
    /// default namespace or prefix, [`super::read::Fragment::implied`]).
    pub fn implied(&self) -> bool {
        self.implied
    }

    /// All attributes, element by element.
    pub fn attributes(&self) -> &[Attr] {
        &self.attrs
    }

    /// All texts, in document order.
    pub fn texts(&self) -> &[Text] {
        &self.texts
    }

    /// Direct child elements of element `i`, in order.
    pub fn children(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        let end = self.elements.get(i as usize).map_or(i, |e| e.end);
        let mut next = i + 1;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let c = next;
            next = self.elements.get(c as usize).map_or(end, |e| e.end.max(c + 1));
            Some(c)
        })
    }

    /// The attributes of element `i`.
    pub fn attrs_of(&self, i: u32) -> &[Attr] {
        let s = self.elements.get(i as usize).map_or(Span::default(), |e| e.attrs);
        self.attrs.get(s.start as usize..s.end as usize).unwrap_or_default()
    }

    /// The texts directly inside element `i`, in order.
    pub fn texts_of(&self, i: u32) -> impl Iterator<Item = &Text> + '_ {
        let (first, end) = self
            .elements
            .get(i as usize)
            .and_then(|e| Some((e.first_text?, e.texts.end)))
            .map_or((0, 0), |(f, e)| (f as usize, e as usize));
        self.texts.get(first..end).unwrap_or_default().iter().filter(move |t| t.parent == i)
    }

    /// Every namespace id of the document, [`NsId::NONE`] and [`NsId::XML`] first.
    pub fn namespace_ids(&self) -> impl Iterator<Item = NsId> + use<> {
        (0..self.namespaces.len() as u32).map(NsId)
    }

    /// A decoded value (of an [`Attr`], a [`Text`], a namespace).
    pub fn value(&self, span: Span) -> PhiBytes<'_> {
        let all = self.values.span();
        all.slice(span.start as usize, span.end as usize)
    }

    /// How many namespaces ([`NsId`]) the document has, the two fixed ones included.
    pub fn namespace_count(&self) -> usize {
        self.namespaces.len()
    }

    /// The URI of a namespace (empty for [`NsId::NONE`]).
    pub fn namespace(&self, id: NsId) -> PhiBytes<'_> {
        self.value(self.namespaces.get(id.index()).copied().unwrap_or_default())
    }

    /// True when namespace `id` is `uri`. A namespace URI is compared, never shown.
    pub fn namespace_is(&self, id: NsId, uri: &[u8]) -> bool {
        self.namespace(id).classify(|v| v == uri)
    }
}
