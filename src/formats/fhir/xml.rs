//! A minimal, non-validating XML 1.0 parser for FHIR input, written for the boundary.
//!
//! Refuses every document type declaration (`<!DOCTYPE`): no DTD, no entity declaration, so no
//! external entity (XXE) and no entity expansion ("billion laughs"). Only the five predefined
//! entities and character references are decoded. Namespaces are resolved (default and
//! prefixed declarations, scoped); an element's namespace is one of FHIR, XHTML, none or other.
//!
//! The result is a flat tree of elements in pre-order ([`Tree`]) with their attributes (decoded
//! into one zeroizing buffer), the byte span of each element, and the offset of the first
//! non-white-space text directly inside each element. Errors are a code and a byte offset:
//! `MALFORMED_XML`, `XML_DTD_FORBIDDEN`, `CHARSET_INVALID_BYTES` (input is not UTF-8, or declares
//! another encoding), `CLI_INPUT_TOO_LARGE` (depth, element count, attribute size).
//!
//! What it does not do: validate against a schema, keep comments or processing instructions,
//! decode text content (FHIR XML carries values in attributes; XHTML is kept as markup).

use zeroize::Zeroizing;

use crate::diag::Code;
use crate::limits::Limits;

use super::json::Span;

/// The namespace of an element or attribute.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ns {
    /// No namespace.
    None,
    /// `http://hl7.org/fhir`
    Fhir,
    /// `http://www.w3.org/1999/xhtml`
    Xhtml,
    /// Any other namespace.
    Other,
}

/// An element.
#[derive(Copy, Clone, Debug)]
pub struct Element {
    /// Namespace.
    pub ns: Ns,
    /// Local name: a span of the input.
    pub local: (u32, u32),
    /// Byte offset of `<`.
    pub offset: u32,
    /// Byte offset just past the element (end tag or `/>`).
    pub end_offset: u32,
    /// Index just past the last descendant element.
    pub end: u32,
    /// Attributes: a range of [`Tree::attrs`].
    pub attrs: (u32, u32),
    /// Offset of the first non-white-space text directly inside, if any.
    pub text_at: Option<u32>,
}

/// An attribute (namespace declarations are not listed).
#[derive(Copy, Clone, Debug)]
pub struct Attr {
    /// Namespace (`None` for unprefixed attributes).
    pub ns: Ns,
    /// Local name: a span of the input.
    pub local: (u32, u32),
    /// Decoded value: a span of [`Tree::text`].
    pub value: Span,
    /// Byte offset of the attribute name.
    pub offset: u32,
}

/// A parsed document.
#[derive(Debug)]
pub struct Tree {
    /// Elements in pre-order; `elements[0]` is the root.
    pub elements: Vec<Element>,
    /// Attributes.
    pub attrs: Vec<Attr>,
    /// Decoded attribute values.
    pub text: Zeroizing<Vec<u8>>,
}

impl Tree {
    /// Direct child elements of element `i`.
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
        let (s, e) = self.elements.get(i as usize).map_or((0, 0), |e| e.attrs);
        self.attrs.get(s as usize..e as usize).unwrap_or_default()
    }
}

/// A fatal parse error.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The code.
    pub code: Code,
    /// Byte offset.
    pub offset: u64,
}

const FHIR_NS: &[u8] = b"http://hl7.org/fhir";
const XHTML_NS: &[u8] = b"http://www.w3.org/1999/xhtml";

/// A namespace binding in scope: prefix (input span, empty for the default) and namespace.
#[derive(Copy, Clone)]
struct Binding {
    prefix: (u32, u32),
    ns: Ns,
}

/// Parses one XML document.
pub fn parse(input: &[u8], limits: &Limits) -> Result<Tree, Error> {
    if input.len() > u32::MAX as usize - 1 {
        return Err(Error { code: Code::CLI_INPUT_TOO_LARGE, offset: 0 });
    }
    if let Err(e) = std::str::from_utf8(input) {
        return Err(Error { code: Code::CHARSET_INVALID_BYTES, offset: e.valid_up_to() as u64 });
    }
    let mut p = P {
        b: input,
        i: 0,
        elements: Vec::new(),
        attrs: Vec::new(),
        text: Zeroizing::new(Vec::new()),
        bindings: Vec::new(),
        limits,
    };
    p.prolog()?;
    if p.b.get(p.i) != Some(&b'<') {
        return Err(p.err(Code::MALFORMED_XML));
    }
    p.element(0)?;
    // Misc after the root: comments, PIs, white space.
    p.misc()?;
    if p.i != p.b.len() {
        return Err(p.err(Code::MALFORMED_XML));
    }
    Ok(Tree { elements: p.elements, attrs: p.attrs, text: p.text })
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
    elements: Vec<Element>,
    attrs: Vec<Attr>,
    text: Zeroizing<Vec<u8>>,
    bindings: Vec<Binding>,
    limits: &'a Limits,
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_name(c: u8) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == b'-' || c == b'.' || c == b':'
}

impl P<'_> {
    fn err(&self, code: Code) -> Error {
        Error { code, offset: self.i as u64 }
    }

    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn starts(&self, s: &[u8]) -> bool {
        self.b[self.i..].starts_with(s)
    }

    fn skip_past(&mut self, end: &[u8]) -> Result<(), Error> {
        match memchr::memmem::find(&self.b[self.i..], end) {
            Some(p) => {
                self.i += p + end.len();
                Ok(())
            }
            None => Err(self.err(Code::MALFORMED_XML)),
        }
    }

    /// XML declaration, comments, PIs; a DOCTYPE is refused.
    fn prolog(&mut self) -> Result<(), Error> {
        if self.starts(b"\xEF\xBB\xBF") {
            self.i += 3;
        }
        if self.starts(b"<?xml") && self.b.get(self.i + 5).is_some_and(|c| c.is_ascii_whitespace()) {
            let start = self.i;
            self.skip_past(b"?>")?;
            let decl = &self.b[start..self.i];
            if let Some(p) = memchr::memmem::find(decl, b"encoding") {
                let rest = &decl[p + 8..];
                let q = rest.iter().position(|c| *c == b'"' || *c == b'\'').unwrap_or(rest.len());
                let value = &rest[(q + 1).min(rest.len())..];
                let e = value.iter().position(|c| *c == b'"' || *c == b'\'').unwrap_or(value.len());
                let enc = &value[..e];
                if !enc.eq_ignore_ascii_case(b"utf-8") && !enc.eq_ignore_ascii_case(b"utf8") {
                    return Err(Error { code: Code::CHARSET_INVALID_BYTES, offset: (start + p) as u64 });
                }
            }
        }
        self.misc()
    }

    fn misc(&mut self) -> Result<(), Error> {
        loop {
            self.ws();
            if self.starts(b"<!--") {
                self.skip_past(b"-->")?;
            } else if self.starts(b"<?") {
                self.skip_past(b"?>")?;
            } else if self.starts(b"<!DOCTYPE") || self.starts(b"<!ENTITY") || self.starts(b"<!doctype") {
                return Err(self.err(Code::XML_DTD_FORBIDDEN));
            } else {
                return Ok(());
            }
        }
    }

    fn name(&mut self) -> Result<(u32, u32), Error> {
        let s = self.i;
        if !self.b.get(self.i).is_some_and(|c| is_name_start(*c)) {
            return Err(self.err(Code::MALFORMED_XML));
        }
        while self.b.get(self.i).is_some_and(|c| is_name(*c)) {
            self.i += 1;
        }
        Ok((s as u32, self.i as u32))
    }

    fn slice(&self, s: (u32, u32)) -> &[u8] {
        &self.b[s.0 as usize..s.1 as usize]
    }

    /// Resolves the prefix of a qualified name; returns the namespace and the local part.
    fn resolve(&self, q: (u32, u32), attribute: bool) -> Result<(Ns, (u32, u32)), Error> {
        let name = self.slice(q);
        let (prefix, local) = match memchr::memchr(b':', name) {
            Some(p) => ((q.0, q.0 + p as u32), (q.0 + p as u32 + 1, q.1)),
            None => ((q.0, q.0), q),
        };
        if attribute && prefix.0 == prefix.1 {
            return Ok((Ns::None, local));
        }
        let pbytes = self.slice(prefix);
        if pbytes == b"xml" {
            return Ok((Ns::Other, local));
        }
        for b in self.bindings.iter().rev() {
            if self.slice(b.prefix) == pbytes {
                return Ok((b.ns, local));
            }
        }
        if prefix.0 == prefix.1 {
            Ok((Ns::None, local))
        } else {
            Err(Error { code: Code::MALFORMED_XML, offset: u64::from(q.0) })
        }
    }

    /// Decodes an attribute value between quotes into `text`.
    fn attr_value(&mut self) -> Result<Span, Error> {
        let Some(&q) = self.b.get(self.i) else { return Err(self.err(Code::MALFORMED_XML)) };
        if q != b'"' && q != b'\'' {
            return Err(self.err(Code::MALFORMED_XML));
        }
        self.i += 1;
        let start = self.text.len();
        loop {
            let Some(&c) = self.b.get(self.i) else { return Err(self.err(Code::MALFORMED_XML)) };
            match c {
                _ if c == q => {
                    self.i += 1;
                    break;
                }
                b'<' => return Err(self.err(Code::MALFORMED_XML)),
                b'&' => self.reference()?,
                b'\t' | b'\n' | b'\r' => {
                    self.text.push(b' ');
                    self.i += 1;
                }
                _ => {
                    self.text.push(c);
                    self.i += 1;
                }
            }
            if (self.text.len() - start) as u64 > u64::from(self.limits.max_field_bytes) {
                return Err(self.err(Code::CLI_INPUT_TOO_LARGE));
            }
        }
        Ok(Span { start: start as u32, len: (self.text.len() - start) as u32 })
    }

    /// An entity or character reference at `&`, decoded into `text`.
    fn reference(&mut self) -> Result<(), Error> {
        let at = self.i;
        let Some(semi) = memchr::memchr(b';', &self.b[self.i..self.b.len().min(self.i + 12)]) else {
            return Err(self.err(Code::MALFORMED_XML));
        };
        let body = &self.b[self.i + 1..self.i + semi];
        let ch = match body {
            b"lt" => '<',
            b"gt" => '>',
            b"amp" => '&',
            b"quot" => '"',
            b"apos" => '\'',
            _ => {
                let n = if let Some(hex) = body.strip_prefix(b"#x") {
                    std::str::from_utf8(hex).ok().and_then(|h| u32::from_str_radix(h, 16).ok())
                } else if let Some(dec) = body.strip_prefix(b"#") {
                    std::str::from_utf8(dec).ok().and_then(|d| d.parse().ok())
                } else {
                    None
                };
                match n.and_then(char::from_u32) {
                    Some(c) if c != '\0' => c,
                    _ => return Err(Error { code: Code::MALFORMED_XML, offset: at as u64 }),
                }
            }
        };
        let mut buf = [0u8; 4];
        self.text.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        self.i += semi + 1;
        Ok(())
    }

    fn element(&mut self, depth: u32) -> Result<(), Error> {
        if depth >= self.limits.max_depth {
            return Err(self.err(Code::CLI_INPUT_TOO_LARGE));
        }
        if self.elements.len() as u64 >= u64::from(self.limits.max_segments) {
            return Err(self.err(Code::CLI_INPUT_TOO_LARGE));
        }
        let offset = self.i as u32;
        self.i += 1; // '<'
        let qname = self.name()?;
        // Attributes (raw first: namespace declarations apply to the element's own name).
        let mut raw_attrs: Vec<((u32, u32), Span, u32)> = Vec::new();
        let bindings_before = self.bindings.len();
        loop {
            let before = self.i;
            self.ws();
            match self.b.get(self.i) {
                Some(b'>') | Some(b'/') => break,
                Some(_) if self.i == before => return Err(self.err(Code::MALFORMED_XML)),
                Some(_) => {}
                None => return Err(self.err(Code::MALFORMED_XML)),
            }
            let at = self.i as u32;
            let an = self.name()?;
            self.ws();
            if self.b.get(self.i) != Some(&b'=') {
                return Err(self.err(Code::MALFORMED_XML));
            }
            self.i += 1;
            self.ws();
            let value = self.attr_value()?;
            let aname = self.slice(an);
            if aname == b"xmlns" || aname.starts_with(b"xmlns:") {
                let uri = value.of(&self.text);
                let ns = if uri == FHIR_NS {
                    Ns::Fhir
                } else if uri == XHTML_NS {
                    Ns::Xhtml
                } else if uri.is_empty() {
                    Ns::None
                } else {
                    Ns::Other
                };
                let prefix = if aname == b"xmlns" { (an.1, an.1) } else { (an.0 + 6, an.1) };
                self.bindings.push(Binding { prefix, ns });
                // The URI is not a value of the message: drop it from the value buffer.
                self.text.truncate(value.start as usize);
                continue;
            }
            if raw_attrs.iter().any(|(n, _, _)| self.slice(*n) == aname) {
                return Err(Error { code: Code::MALFORMED_XML, offset: u64::from(at) });
            }
            raw_attrs.push((an, value, at));
        }
        let (ns, local) = self.resolve(qname, false)?;
        let attr_start = self.attrs.len() as u32;
        for (an, value, at) in raw_attrs {
            let (ans, alocal) = self.resolve(an, true)?;
            self.attrs.push(Attr { ns: ans, local: alocal, value, offset: at });
        }
        let index = self.elements.len();
        self.elements.push(Element {
            ns,
            local,
            offset,
            end_offset: offset,
            end: index as u32 + 1,
            attrs: (attr_start, self.attrs.len() as u32),
            text_at: None,
        });
        if self.starts(b"/>") {
            self.i += 2;
        } else {
            self.i += 1; // '>'
            self.content(index, depth)?;
            // End tag.
            let close = self.name()?;
            if self.slice(close) != self.slice(qname) {
                return Err(Error { code: Code::MALFORMED_XML, offset: u64::from(close.0) });
            }
            self.ws();
            if self.b.get(self.i) != Some(&b'>') {
                return Err(self.err(Code::MALFORMED_XML));
            }
            self.i += 1;
        }
        self.bindings.truncate(bindings_before);
        let len = self.elements.len() as u32;
        let e = &mut self.elements[index];
        e.end = len;
        e.end_offset = self.i as u32;
        Ok(())
    }

    /// Content up to and including the `</` of the end tag.
    fn content(&mut self, index: usize, depth: u32) -> Result<(), Error> {
        loop {
            let Some(&c) = self.b.get(self.i) else { return Err(self.err(Code::MALFORMED_XML)) };
            if c != b'<' {
                if c == b'&' {
                    let mark = self.text.len();
                    self.reference()?;
                    self.text.truncate(mark);
                    if self.elements[index].text_at.is_none() {
                        self.elements[index].text_at = Some(self.i as u32);
                    }
                    continue;
                }
                if c == b'>' && self.b[..self.i].ends_with(b"]]") {
                    return Err(self.err(Code::MALFORMED_XML));
                }
                if !c.is_ascii_whitespace() && self.elements[index].text_at.is_none() {
                    self.elements[index].text_at = Some(self.i as u32);
                }
                self.i += 1;
                continue;
            }
            if self.starts(b"</") {
                self.i += 2;
                return Ok(());
            }
            if self.starts(b"<!--") {
                self.skip_past(b"-->")?;
            } else if self.starts(b"<![CDATA[") {
                let at = self.i as u32;
                self.skip_past(b"]]>")?;
                if self.elements[index].text_at.is_none() {
                    self.elements[index].text_at = Some(at);
                }
            } else if self.starts(b"<?") {
                self.skip_past(b"?>")?;
            } else if self.starts(b"<!") {
                return Err(self.err(Code::XML_DTD_FORBIDDEN));
            } else {
                self.element(depth + 1)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Tree, Error> {
        parse(s.as_bytes(), &Limits::default())
    }

    #[test]
    fn namespaces_attributes_and_references() {
        let t = p("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- c --><Patient xmlns=\"http://hl7.org/fhir\"><name><given value=\"A&amp;B&#x41;\n\"/></name><text><div xmlns=\"http://www.w3.org/1999/xhtml\"><p>x</p></div></text></Patient>")
            .expect("valid");
        assert_eq!(t.elements[0].ns, Ns::Fhir);
        let given = &t.elements[2];
        assert_eq!(given.ns, Ns::Fhir);
        assert_eq!(t.attrs_of(2)[0].value.of(&t.text), b"A&BA ");
        let div = t.elements.iter().find(|e| e.ns == Ns::Xhtml).expect("div");
        assert!(div.end_offset > div.offset);
    }

    #[test]
    fn refuses_dtds_and_unknown_entities() {
        let xxe = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><Patient xmlns=\"http://hl7.org/fhir\">&e;</Patient>";
        assert_eq!(p(xxe).map(|_| ()).map_err(|e| e.code), Err(Code::XML_DTD_FORBIDDEN));
        assert_eq!(p("<a>&nbsp;</a>").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_XML));
        assert_eq!(p("<a><b></a>").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_XML));
        assert_eq!(p("<a x='1' x='2'/>").map(|_| ()).map_err(|e| e.code), Err(Code::MALFORMED_XML));
        assert_eq!(
            p("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>").map(|_| ()).map_err(|e| e.code),
            Err(Code::CHARSET_INVALID_BYTES)
        );
        let deep = "<a>".repeat(1000);
        assert_eq!(p(&deep).map(|_| ()).map_err(|e| e.code), Err(Code::CLI_INPUT_TOO_LARGE));
    }
}
