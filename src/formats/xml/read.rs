//! The reader: `quick-xml` events folded into a [`Tree`], with the checks that make it a
//! well-formedness checker (XML 1.0 and Namespaces in XML 1.0) rather than a tokenizer, and the
//! limits that bound its cost.
//!
//! `quick-xml` finds the markup (tags with their quoting, comments, CDATA sections, processing
//! instructions, references, the document type declaration); this module does the rest:
//! one root element; no text outside it; names; attributes (syntax, duplicates by qualified and
//! by expanded name, normalization); references (only the five predefined entities and
//! character references); the `Char` production; `]]>` in text; the XML declaration (first,
//! with a version, UTF-8); end tags against the element stack; namespace scoping and
//! resolution. A document type declaration, or any other markup declaration, is refused
//! outright: no DTD, so no entity is ever declared, expanded or fetched.
//!
//! Limits (each a [`Kind::TooLarge`]): the input size ([`Limits::max_input_bytes`], and offsets
//! must fit in 32 bits), depth ([`Limits::max_depth`]), elements ([`Limits::max_segments`]), one
//! decoded value or text ([`Limits::max_field_bytes`]), attributes on one element
//! ([`MAX_ATTRIBUTES`]), namespace declarations in scope ([`MAX_NAMESPACES_IN_SCOPE`]). Each is
//! checked while reading, before the memory it guards is used; every step is linear in the input
//! (name resolution and duplicate checks are bounded by the last two limits).
//!
//! What it does not do: read another encoding than UTF-8, validate against a schema, or keep
//! comments and processing instructions.

use quick_xml::events::Event;
use quick_xml::reader::Reader;
use zeroize::Zeroizing;

use crate::limits::Limits;
use crate::phi::Phi;

use super::chars;
use super::error::{self, Error, Kind};
use super::tree::{Attr, Element, NsId, Span, Text, Tree, XML_NAMESPACE};

/// Most attributes (namespace declarations included) on one element.
pub const MAX_ATTRIBUTES: usize = 256;

/// Most namespace declarations in scope at once (on an element and its ancestors).
pub const MAX_NAMESPACES_IN_SCOPE: usize = 128;

/// A failure: its kind and byte offset (the position is counted once, in [`parse`]).
type Fail = (Kind, usize);

/// Reads one XML document.
///
/// The input must be UTF-8 (a byte order mark is skipped); an encoding declaration other than
/// UTF-8 is an error, except US-ASCII for a document whose bytes are all ASCII. Errors hold a kind and a position, never input.
pub fn parse(input: &[u8], limits: &Limits) -> Result<Tree, Error> {
    read(input, limits, &Fragment::default()).map_err(|(kind, at)| Error::at(kind, at, input))
}

/// How a fragment is read where a document would be refused: the content of an external
/// parsed entity (XML 1.0 §4.3.2: several top-level elements) published without the namespace
/// declarations of the document it comes from.
#[derive(Copy, Clone, Debug, Default)]
pub struct Fragment<'a> {
    /// Namespaces for prefixes the input uses without declaring them in scope: `(prefix, uri)`,
    /// the empty prefix for the default namespace (which then applies where no `xmlns`
    /// declaration is in scope). [`Tree::implied`] tells whether one was used.
    pub implied: &'a [(&'static [u8], &'static [u8])],
    /// Several top-level elements are accepted ([`Tree::roots`]); text between them is not.
    pub several_roots: bool,
}

/// Reads a fragment: [`parse`], with the namespace bindings and top-level elements `fragment`
/// allows. With `Fragment::default()` it is [`parse`].
pub fn parse_fragment(input: &[u8], limits: &Limits, fragment: &Fragment<'_>) -> Result<Tree, Error> {
    read(input, limits, fragment).map_err(|(kind, at)| Error::at(kind, at, input))
}

fn read(input: &[u8], limits: &Limits, fragment: &Fragment<'_>) -> Result<Tree, Fail> {
    if input.len() >= u32::MAX as usize || input.len() as u64 > limits.max_input_bytes {
        return Err((Kind::TooLarge, 0));
    }
    if let Err(e) = std::str::from_utf8(input) {
        return Err((Kind::NotUtf8, e.valid_up_to()));
    }
    // Decoded values are disjoint parts of the input and decoding never lengthens them, so this
    // capacity is never outgrown: the buffer is never moved, and no copy of a value is left
    // behind in freed memory without being zeroized.
    let implied_len: usize = fragment.implied.iter().map(|(_, uri)| uri.len()).sum();
    let mut values = Zeroizing::new(Vec::with_capacity(XML_NAMESPACE.len() + implied_len + input.len()));
    values.extend_from_slice(XML_NAMESPACE);
    let mut namespaces = vec![Span::default(), Span { start: 0, end: XML_NAMESPACE.len() as u32 }];
    let mut implied = Vec::with_capacity(fragment.implied.len());
    let mut default_ns = NsId::NONE;
    for &(prefix, uri) in fragment.implied {
        let start = values.len();
        values.extend_from_slice(uri);
        namespaces.push(span(start, values.len()));
        let id = NsId(namespaces.len() as u32 - 1);
        if prefix.is_empty() {
            default_ns = id;
        }
        implied.push((prefix, id));
    }
    let capacity = values.capacity();
    let mut b = Builder {
        input,
        limits,
        elements: Vec::new(),
        attrs: Vec::new(),
        texts: Vec::new(),
        namespaces,
        values,
        bindings: Vec::new(),
        default_ns,
        implied_default: default_ns,
        implied,
        implied_used: false,
        several_roots: fragment.several_roots,
        stack: Vec::new(),
        prefixed: Vec::new(),
        run: None,
        prolog_started: false,
        root_done: false,
    };
    b.run()?;
    debug_assert_eq!(b.values.capacity(), capacity, "the value buffer outgrew its capacity");
    let values = Phi::new(std::mem::take(&mut *b.values));
    Ok(Tree {
        elements: b.elements,
        attrs: b.attrs,
        texts: b.texts,
        namespaces: b.namespaces,
        values,
        implied: b.implied_used,
    })
}

/// An open element.
struct Frame {
    index: u32,
    bindings: usize,
    default_ns: NsId,
}

/// A namespace declaration in scope: the prefix (a span of the input, empty for the default
/// namespace) and the namespace.
struct Binding {
    prefix: Span,
    ns: NsId,
}

/// A prefixed attribute waiting for its namespace (resolved once every declaration of its
/// element is read): its index in `attrs`, and its prefix (a span of the input).
struct Prefixed {
    attr: usize,
    prefix: Span,
}

/// The text run being read.
struct Run {
    /// Where its raw text starts in the input.
    raw_start: usize,
    /// Where its value starts in the value buffer.
    value_start: usize,
    /// Offset of its first significant part; `None` while it is literal white space only (then
    /// nothing has been written to the value buffer yet).
    significant: Option<u32>,
}

struct Builder<'a> {
    input: &'a [u8],
    limits: &'a Limits,
    elements: Vec<Element>,
    attrs: Vec<Attr>,
    texts: Vec<Text>,
    namespaces: Vec<Span>,
    values: Zeroizing<Vec<u8>>,
    bindings: Vec<Binding>,
    default_ns: NsId,
    /// The implied default namespace ([`Fragment::implied`]; [`NsId::NONE`]: none).
    implied_default: NsId,
    /// The implied prefixed namespaces.
    implied: Vec<(&'static [u8], NsId)>,
    /// An implied namespace resolved a name.
    implied_used: bool,
    /// Several top-level elements are accepted.
    several_roots: bool,
    stack: Vec<Frame>,
    prefixed: Vec<Prefixed>,
    run: Option<Run>,
    /// Something other than white space has been read (an XML declaration must come first).
    prolog_started: bool,
    /// The root element has been closed.
    root_done: bool,
}

fn span(start: usize, end: usize) -> Span {
    // Invariant: `read` refuses inputs of 2^32 - 1 bytes or more, and the value buffer holds at
    // most the decoded input plus the fixed namespace (decoding never lengthens: a reference is
    // at least as long as its UTF-8 encoding), so every offset fits.
    Span { start: start as u32, end: end as u32 }
}

impl Builder<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let base = if self.input.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
        let mut reader = Reader::from_reader(&self.input[base..]);
        let config = reader.config_mut();
        config.check_end_names = false; // checked against our own stack, with our positions
        config.check_comments = true;
        config.expand_empty_elements = false;
        config.allow_dangling_amp = false;
        config.trim_text(false);
        loop {
            let at = base + reader.buffer_position() as usize;
            let event = match reader.read_event() {
                Ok(event) => event,
                Err(e) => {
                    let pos = base + reader.error_position() as usize;
                    return Err((error::foreign(&e, self.input.get(pos..).unwrap_or_default()), pos));
                }
            };
            let end = base + reader.buffer_position() as usize;
            match event {
                Event::Text(_) => self.text(at, end)?,
                Event::GeneralRef(_) => self.reference(at, end)?,
                Event::CData(_) => self.cdata(at, end)?,
                other => {
                    self.end_run(at);
                    let was_started = std::mem::replace(&mut self.prolog_started, true);
                    match other {
                        Event::Start(e) => self.open(at, end, e.name().as_ref().len(), false)?,
                        Event::Empty(e) => self.open(at, end, e.name().as_ref().len(), true)?,
                        Event::End(e) => self.close(at, end, e.name().as_ref().len())?,
                        Event::Decl(d) => {
                            if was_started || d.version().is_err() {
                                return Err((Kind::MisplacedDeclaration, at));
                            }
                            self.encoding(at, end, d.encoding())?;
                        }
                        Event::DocType(_) => return Err((Kind::Dtd, at)),
                        Event::Comment(_) => self.comment(at, end)?,
                        Event::PI(_) => self.check_chars(at, end)?,
                        Event::Eof => return self.eof(),
                        Event::Text(_) | Event::GeneralRef(_) | Event::CData(_) => {}
                    }
                }
            }
        }
    }

    fn eof(&mut self) -> Result<(), Fail> {
        let len = self.input.len();
        if !self.stack.is_empty() {
            return Err((Kind::UnclosedElement, len));
        }
        if self.elements.is_empty() {
            return Err((Kind::NoRoot, len));
        }
        Ok(())
    }

    /// The encoding named by the XML declaration at `at..end`, if any, must be UTF-8.
    fn encoding(
        &self,
        at: usize,
        end: usize,
        encoding: Option<Result<std::borrow::Cow<'_, [u8]>, quick_xml::events::attributes::AttrError>>,
    ) -> Result<(), Fail> {
        let decl = &self.input[at..end];
        let where_ = at + memchr::memmem::find(decl, b"encoding").unwrap_or(0);
        match encoding {
            None => Ok(()),
            Some(Ok(name)) if name.eq_ignore_ascii_case(b"utf-8") || name.eq_ignore_ascii_case(b"utf8") => Ok(()),
            // ASCII is read exactly as UTF-8 is: accepted when every byte is ASCII.
            Some(Ok(name)) if name.eq_ignore_ascii_case(b"us-ascii") || name.eq_ignore_ascii_case(b"ascii") => {
                match self.input.iter().position(|b| !b.is_ascii()) {
                    Some(p) => Err((Kind::NotAscii, p)),
                    None => Ok(()),
                }
            }
            Some(Ok(_)) => Err((Kind::EncodingNotUtf8, where_)),
            Some(Err(_)) => Err((Kind::MisplacedDeclaration, where_)),
        }
    }

    fn check_chars(&self, at: usize, end: usize) -> Result<(), Fail> {
        match chars::check_chars(&self.input[at..end]) {
            Some(i) => Err((Kind::InvalidCharacter, at + i)),
            None => Ok(()),
        }
    }

    /// A comment at `at..end`: characters, and no `-` before its closing `-->` (the reader
    /// checks `--` inside it).
    fn comment(&self, at: usize, end: usize) -> Result<(), Fail> {
        self.check_chars(at, end)?;
        if end >= at + 8 && self.input[end - 4] == b'-' {
            return Err((Kind::DoubleHyphenInComment, end - 4));
        }
        Ok(())
    }

    // ---- text -------------------------------------------------------------------------------

    /// The current run, started at `at` if there is none. Text outside the root is an error at
    /// `first` (its first significant byte).
    fn run_at(&mut self, at: usize, first: usize) -> Result<&mut Run, Fail> {
        if self.stack.is_empty() {
            return Err((Kind::TextOutsideRoot, first));
        }
        let value_start = self.values.len();
        Ok(self.run.get_or_insert(Run { raw_start: at, value_start, significant: None }))
    }

    /// Marks the run significant from `at`, writing the literal white space read before `at`
    /// (nothing of the run has been written until then). True when it was not yet significant.
    fn significant(&mut self, at: usize) -> bool {
        let Some(run) = self.run.as_mut() else { return false };
        if run.significant.is_some() {
            return false;
        }
        run.significant = Some(at as u32);
        chars::push_text(&self.input[run.raw_start..at], &mut self.values);
        true
    }

    fn limit_run(&self, at: usize) -> Result<(), Fail> {
        let len = self.run.as_ref().map_or(0, |r| self.values.len() - r.value_start);
        if len as u64 > u64::from(self.limits.max_field_bytes) {
            return Err((Kind::TooLarge, at));
        }
        Ok(())
    }

    /// Character data at `at..end`.
    fn text(&mut self, at: usize, end: usize) -> Result<(), Fail> {
        let raw = &self.input[at..end];
        let first = raw.iter().position(|&c| !chars::is_space(c));
        let Some(first) = first else {
            // Literal white space: kept only as part of a significant run.
            if !self.stack.is_empty() {
                self.run_at(at, at)?;
                if self.run.as_ref().is_some_and(|r| r.significant.is_some()) {
                    chars::push_text(raw, &mut self.values);
                }
            }
            return Ok(());
        };
        self.prolog_started = true;
        if let Some(p) = chars::cdata_end(raw) {
            return Err((Kind::CdataEndInText, at + p));
        }
        self.check_chars(at, end)?;
        self.run_at(at, at + first)?;
        let from = if self.significant(at + first) { first } else { 0 };
        chars::push_text(&raw[from..], &mut self.values);
        self.limit_run(end)
    }

    /// A reference at `at..end` (`&...;`).
    fn reference(&mut self, at: usize, end: usize) -> Result<(), Fail> {
        self.prolog_started = true;
        let raw = &self.input[at..end];
        let body = match raw {
            [b'&', body @ .., b';'] => body,
            _ => return Err((Kind::UnclosedReference, at)),
        };
        let c = chars::reference(body).map_err(|k| (k, at))?;
        self.run_at(at, at)?;
        self.significant(at);
        let mut buf = [0u8; 4];
        self.values.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.limit_run(end)
    }

    /// A CDATA section at `at..end` (`<![CDATA[...]]>`).
    fn cdata(&mut self, at: usize, end: usize) -> Result<(), Fail> {
        self.prolog_started = true;
        self.check_chars(at, end)?;
        self.run_at(at, at)?;
        self.significant(at);
        let content = self.input.get(at + 9..end.saturating_sub(3)).unwrap_or_default();
        chars::push_text(content, &mut self.values);
        self.limit_run(end)
    }

    /// Ends the current run at `at` (where markup starts): kept when significant.
    fn end_run(&mut self, at: usize) {
        let Some(run) = self.run.take() else { return };
        let Some(offset) = run.significant else { return };
        let parent = self.stack.last().map_or(0, |f| f.index);
        if let Some(e) = self.elements.get_mut(parent as usize) {
            e.first_text.get_or_insert(self.texts.len() as u32);
        }
        self.texts.push(Text {
            parent,
            value: span(run.value_start, self.values.len()),
            offset,
            raw: span(run.raw_start, at),
            before: self.elements.len() as u32,
        });
    }

    // ---- elements ---------------------------------------------------------------------------

    /// A start tag (`empty`: an empty-element tag) at `at..end` whose name is `name_len` bytes.
    fn open(&mut self, at: usize, end: usize, name_len: usize, empty: bool) -> Result<(), Fail> {
        if self.root_done && !self.several_roots {
            return Err((Kind::SecondRoot, at));
        }
        let depth = self.stack.len();
        if depth as u64 >= u64::from(self.limits.max_depth)
            || self.elements.len() as u64 >= u64::from(self.limits.max_segments)
        {
            return Err((Kind::TooLarge, at));
        }
        let name_start = at + 1;
        let qname = &self.input[name_start..name_start + name_len];
        if let Some(i) = chars::invalid_name_at(qname) {
            return Err((Kind::InvalidName, name_start + i));
        }
        let (prefix, local) = chars::split_qname(qname).ok_or((Kind::InvalidName, name_start))?;
        // The tag is `<name attributes>` or `<name attributes/>`.
        let close = end - 1 - usize::from(empty);
        if self.input.get(end - 1) != Some(&b'>') || (empty && self.input.get(close) != Some(&b'/')) {
            return Err((Kind::AttributeSyntax, close));
        }
        let frame =
            Frame { index: self.elements.len() as u32, bindings: self.bindings.len(), default_ns: self.default_ns };
        let attr_start = self.attrs.len();
        self.attributes(name_start + name_len, close, frame.bindings)?;
        let ns = self.resolve(span(name_start + prefix.0, name_start + prefix.1), name_start)?;
        for i in 0..self.prefixed.len() {
            let Prefixed { attr, prefix } = self.prefixed[i];
            let offset = self.attrs[attr].offset as usize;
            self.attrs[attr].ns = self.resolve(prefix, offset)?;
        }
        if self.prefixed.len() > 1 {
            self.check_expanded_names(attr_start)?;
        }
        let index = self.elements.len();
        let texts = self.texts.len() as u32;
        self.elements.push(Element {
            ns,
            local: span(name_start + local.0, name_start + local.1),
            qname: span(name_start, name_start + name_len),
            offset: at as u32,
            end_offset: end as u32,
            content: span(end, end),
            end: index as u32 + 1,
            depth: depth as u32,
            attrs: span(attr_start, self.attrs.len()),
            texts: Span { start: texts, end: texts },
            first_text: None,
        });
        if empty {
            self.restore(&frame);
            if self.stack.is_empty() {
                self.root_done = true;
            }
        } else {
            self.stack.push(frame);
        }
        Ok(())
    }

    /// An end tag at `at..end` whose name is `name_len` bytes.
    fn close(&mut self, at: usize, end: usize, name_len: usize) -> Result<(), Fail> {
        let Some(frame) = self.stack.pop() else { return Err((Kind::UnmatchedEndTag, at)) };
        let name = self.input.get(at + 2..at + 2 + name_len).unwrap_or_default();
        let index = frame.index as usize;
        let open = self.elements[index].qname.of(self.input);
        if name != open {
            return Err((Kind::MismatchedEndTag, at + 2));
        }
        let (count, texts) = (self.elements.len() as u32, self.texts.len() as u32);
        let e = &mut self.elements[index];
        e.end = count;
        e.end_offset = end as u32;
        e.content.end = at as u32;
        e.texts.end = texts;
        self.restore(&frame);
        if self.stack.is_empty() {
            self.root_done = true;
        }
        Ok(())
    }

    fn restore(&mut self, frame: &Frame) {
        self.bindings.truncate(frame.bindings);
        self.default_ns = frame.default_ns;
    }

    /// The attributes of a tag, in `start..end` of the input: namespace declarations become
    /// bindings (from `first_binding` on, this element's), the others are pushed to `attrs`
    /// (without their namespace when prefixed: listed in `prefixed`, resolved by the caller).
    fn attributes(&mut self, start: usize, end: usize, first_binding: usize) -> Result<(), Fail> {
        self.prefixed.clear();
        let first_attr = self.attrs.len();
        let input = self.input;
        let skip_space = |mut i: usize| {
            while i < end && chars::is_space(input[i]) {
                i += 1;
            }
            i
        };
        let mut i = start;
        let mut count = 0usize;
        loop {
            let before = i;
            i = skip_space(i);
            if i == end {
                return Ok(());
            }
            if i == before {
                return Err((Kind::AttributeSyntax, i));
            }
            count += 1;
            if count > MAX_ATTRIBUTES {
                return Err((Kind::TooLarge, i));
            }
            let name_start = i;
            let mut colon = None;
            while i < end && chars::is_name(input[i]) {
                if input[i] == b':' && colon.is_none() {
                    colon = Some(i);
                }
                i += 1;
            }
            let name = &input[name_start..i];
            // The name is the longest run of name bytes: only its first byte is left to check.
            if !name.first().is_some_and(|&c| chars::is_name_start(c)) {
                return Err((Kind::InvalidName, name_start));
            }
            let name_end = i;
            i = skip_space(i);
            if i == end || input[i] != b'=' {
                return Err((Kind::AttributeSyntax, i));
            }
            i = skip_space(i + 1);
            let quote = input.get(i).copied().filter(|&q| i < end && (q == b'"' || q == b'\''));
            let Some(quote) = quote else { return Err((Kind::AttributeSyntax, i)) };
            let Some(len) = memchr::memchr(quote, &input[i + 1..end]) else {
                return Err((Kind::AttributeSyntax, i));
            };
            let raw = (i + 1, i + 1 + len);
            i = raw.1 + 1;
            let value = self.value(raw.0, raw.1)?;
            let qname = span(name_start, name_end);
            if name == b"xmlns" || name.starts_with(b"xmlns:") {
                self.declare(qname, value, first_binding, name_start)?;
                continue;
            }
            // The qualified name of an attribute is `input[offset..local.end]`.
            if self.attrs[first_attr..].iter().any(|a| &input[a.offset as usize..a.local.end as usize] == name) {
                return Err((Kind::DuplicateAttribute, name_start));
            }
            let local = match colon {
                None => qname,
                Some(c) => {
                    let ok = chars::split_qname(name).is_some();
                    if !ok {
                        return Err((Kind::InvalidName, name_start));
                    }
                    self.prefixed.push(Prefixed { attr: self.attrs.len(), prefix: span(name_start, c) });
                    span(c + 1, name_end)
                }
            };
            self.attrs.push(Attr { ns: NsId::NONE, local, value, offset: name_start as u32 });
        }
    }

    /// Decodes the attribute value at `start..end` of the input into the value buffer.
    fn value(&mut self, start: usize, end: usize) -> Result<Span, Fail> {
        let raw = &self.input[start..end];
        let from = self.values.len();
        chars::attribute_value(raw, &mut self.values).map_err(|(k, i)| (k, start + i))?;
        if (self.values.len() - from) as u64 > u64::from(self.limits.max_field_bytes) {
            return Err((Kind::TooLarge, start));
        }
        Ok(span(from, self.values.len()))
    }

    /// A namespace declaration (`xmlns` or `xmlns:p`, named by `qname`) of `uri`.
    fn declare(&mut self, qname: Span, uri: Span, first_binding: usize, at: usize) -> Result<(), Fail> {
        let name = qname.of(self.input);
        let prefix = if name == b"xmlns" {
            span(qname.end as usize, qname.end as usize)
        } else {
            match chars::split_qname(name) {
                Some((_, local)) => span(qname.start as usize + local.0, qname.start as usize + local.1),
                None => return Err((Kind::InvalidName, at)),
            }
        };
        let pbytes = prefix.of(self.input);
        if self.bindings[first_binding..].iter().any(|b| b.prefix.of(self.input) == pbytes) {
            return Err((Kind::DuplicateAttribute, at));
        }
        if self.bindings.len() >= MAX_NAMESPACES_IN_SCOPE {
            return Err((Kind::TooLarge, at));
        }
        let ns = if uri.is_empty() {
            NsId::NONE
        } else {
            self.namespaces.push(uri);
            NsId(self.namespaces.len() as u32 - 1)
        };
        if prefix.is_empty() {
            self.default_ns = ns;
        }
        self.bindings.push(Binding { prefix, ns });
        Ok(())
    }

    /// The namespace of `prefix` (a span of the input; empty: the default namespace). An
    /// undeclared prefix is an error at `at`.
    fn resolve(&mut self, prefix: Span, at: usize) -> Result<NsId, Fail> {
        let p = prefix.of(self.input);
        if p.is_empty() {
            if self.default_ns != NsId::NONE && self.default_ns == self.implied_default {
                self.implied_used = true;
            }
            return Ok(self.default_ns);
        }
        if p == b"xml" {
            return Ok(NsId::XML);
        }
        match self.bindings.iter().rev().find(|b| !b.prefix.is_empty() && b.prefix.of(self.input) == p) {
            Some(b) if b.ns != NsId::NONE => Ok(b.ns),
            Some(_) => Err((Kind::UndeclaredPrefix, at)),
            None => match self.implied.iter().find(|(q, _)| *q == p) {
                Some(&(_, ns)) => {
                    self.implied_used = true;
                    Ok(ns)
                }
                None => Err((Kind::UndeclaredPrefix, at)),
            },
        }
    }

    /// Two attributes of one element with the same local name in the same namespace (through
    /// two prefixes bound to one URI) are duplicates.
    fn check_expanded_names(&self, from: usize) -> Result<(), Fail> {
        let attrs = &self.attrs[from..];
        let values = &self.values;
        let uri = |ns: NsId| self.namespaces.get(ns.index()).copied().unwrap_or_default().of(values);
        for (j, b) in attrs.iter().enumerate().filter(|(_, a)| a.ns != NsId::NONE) {
            for a in attrs[..j].iter().filter(|a| a.ns != NsId::NONE) {
                if a.local.of(self.input) == b.local.of(self.input) && uri(a.ns) == uri(b.ns) {
                    return Err((Kind::DuplicateAttribute, b.offset as usize));
                }
            }
        }
        Ok(())
    }
}
