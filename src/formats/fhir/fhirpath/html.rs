//! `htmlChecks()`: the FHIR narrative rules for `Narrative.div` (invariants txt-1 and txt-2).
//!
//! txt-1: only the basic HTML formatting elements and attributes (HTML 4.0 chapters 7-11 and
//! 15, `a`, `img`, internal `style`): no `script`, `form`, `object`, `iframe`..., no
//! `javascript:` link, and only the attributes of those chapters: the core and language ones
//! (`id`, `class`, `style`, `title`, `lang`, `xml:lang`, `dir`, ...) and those of tables on any
//! element, an element's own ones (`a` `href`, `name`...; `img` `src`, `alt`...; `table`
//! `border`...), namespace declarations and `xml:space` (the reference validator's lists, which
//! only hint at `xml:space`); an event attribute (`on*`) is none of them. txt-2: some non-white-space content (text or an
//! image). The outer element is a `div`.
//!
//! A small scanner over the markup, linear and allocation-free; it returns a verdict only.
//!
//! What it does not do: check well-formedness beyond tag balance of the outer `div` (the XML
//! reader does that for XML input), or validate CSS.

const ALLOWED: &[&str] = &[
    "a",
    "abbr",
    "acronym",
    "address",
    "b",
    "bdo",
    "big",
    "blockquote",
    "br",
    "caption",
    "cite",
    "code",
    "col",
    "colgroup",
    "dd",
    "dfn",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "q",
    "samp",
    "small",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "tt",
    "ul",
    "var",
    "ins",
    "del",
    "s",
    "u",
    "center",
    "font",
    "map",
    "area",
];

/// Attributes txt-1 allows on every element: HTML 4.0's core and language attributes and those
/// of its tables chapter.
const ATTRIBUTES: &[&str] = &[
    "title",
    "style",
    "class",
    "id",
    "lang",
    "xml:lang",
    "dir",
    "accesskey",
    "tabindex",
    "span",
    "width",
    "align",
    "valign",
    "char",
    "charoff",
    "abbr",
    "axis",
    "headers",
    "scope",
    "rowspan",
    "colspan",
    "xml:space",
];

/// Attributes txt-1 allows on one element (`element.attribute`).
const ELEMENT_ATTRIBUTES: &[&str] = &[
    "a.href",
    "a.name",
    "a.charset",
    "a.type",
    "a.hreflang",
    "a.rel",
    "a.rev",
    "a.shape",
    "a.coords",
    "img.src",
    "img.border",
    "img.alt",
    "img.longdesc",
    "img.height",
    "img.width",
    "img.usemap",
    "img.ismap",
    "blockquote.cite",
    "q.cite",
    "map.name",
    "area.shape",
    "area.coords",
    "area.href",
    "area.nohref",
    "area.alt",
    "table.summary",
    "table.width",
    "table.border",
    "table.frame",
    "table.rules",
    "table.cellspacing",
    "table.cellpadding",
    "pre.space",
    "td.nowrap",
];

/// Whether txt-1 allows attribute `name` on element `element` (both compared without case).
fn attribute_allowed(element: &[u8], name: &[u8]) -> bool {
    if name.get(..5).is_some_and(|p| p.eq_ignore_ascii_case(b"xmlns")) {
        return true;
    }
    if ATTRIBUTES.iter().any(|a| a.as_bytes().eq_ignore_ascii_case(name)) {
        return true;
    }
    ELEMENT_ATTRIBUTES.iter().any(|ea| {
        let (e, a) = ea.split_once('.').unwrap_or((ea, ""));
        e.as_bytes().eq_ignore_ascii_case(element) && a.as_bytes().eq_ignore_ascii_case(name)
    })
}

/// True when the XHTML of a narrative passes txt-1 and txt-2.
pub fn checks(v: &[u8]) -> bool {
    let v = v.trim_ascii();
    if !v.starts_with(b"<div") {
        return false;
    }
    let mut i = 0;
    let mut content = false;
    let mut first = true;
    while i < v.len() {
        if v[i] != b'<' {
            if v[i] == b'&' || !v[i].is_ascii_whitespace() {
                content = true;
            }
            i += 1;
            continue;
        }
        // Comments, CDATA, processing instructions.
        if v[i..].starts_with(b"<!--") {
            match memchr::memmem::find(&v[i..], b"-->") {
                Some(p) => i += p + 3,
                None => return false,
            }
            continue;
        }
        if v[i..].starts_with(b"<!") || v[i..].starts_with(b"<?") {
            return false;
        }
        let Some(end) = memchr::memchr(b'>', &v[i..]) else { return false };
        let tag = &v[i + 1..i + end];
        i += end + 1;
        if tag.starts_with(b"/") {
            continue;
        }
        let name_end = tag.iter().position(|b| b.is_ascii_whitespace() || *b == b'/').unwrap_or(tag.len());
        let qname = &tag[..name_end];
        let local = match memchr::memchr(b':', qname) {
            Some(p) => &qname[p + 1..],
            None => qname,
        };
        if first && !local.eq_ignore_ascii_case(b"div") {
            return false;
        }
        first = false;
        if !ALLOWED.iter().any(|a| a.as_bytes().eq_ignore_ascii_case(local)) {
            return false;
        }
        if local.eq_ignore_ascii_case(b"img") {
            content = true;
        }
        if !attributes_ok(local, &tag[name_end..]) {
            return false;
        }
    }
    content
}

fn attributes_ok(element: &[u8], attrs: &[u8]) -> bool {
    each_attribute(attrs, |name, value| {
        if !name.is_empty() && !attribute_allowed(element, name) {
            return false;
        }
        let link = name.eq_ignore_ascii_case(b"href") || name.eq_ignore_ascii_case(b"src");
        !(link && value.get(..11).is_some_and(|p| p.eq_ignore_ascii_case(b"javascript:")))
    })
}

/// Calls `f` with the name and the value (without its quotes and leading white space; empty
/// when there is none) of each attribute of a start tag's attribute text, in order, while `f`
/// returns true; false when `f` stopped it.
fn each_attribute<'a>(attrs: &'a [u8], mut f: impl FnMut(&'a [u8], &'a [u8]) -> bool) -> bool {
    let mut i = 0;
    while i < attrs.len() {
        while i < attrs.len() && (attrs[i].is_ascii_whitespace() || attrs[i] == b'/') {
            i += 1;
        }
        let s = i;
        while i < attrs.len() && !attrs[i].is_ascii_whitespace() && attrs[i] != b'=' && attrs[i] != b'/' {
            i += 1;
        }
        let name = &attrs[s..i];
        while i < attrs.len() && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value: &[u8] = &[];
        if attrs.get(i) == Some(&b'=') {
            i += 1;
            while i < attrs.len() && attrs[i].is_ascii_whitespace() {
                i += 1;
            }
            let (vs, ve) = match attrs.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    let start = i + 1;
                    let end = memchr::memchr(q, &attrs[start..]).map_or(attrs.len(), |p| start + p);
                    i = end + 1;
                    (start, end)
                }
                _ => {
                    let start = i;
                    while i < attrs.len() && !attrs[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    (start, i)
                }
            };
            value = attrs.get(vs..ve).unwrap_or_default().trim_ascii_start();
        }
        if (!name.is_empty() || !value.is_empty()) && !f(name, value) {
            return false;
        }
    }
    true
}

/// Calls `f` with the local name and the attribute text of each start tag of a narrative's
/// XHTML, in document order. Comments are skipped; the scan stops at markup it cannot follow
/// (an unclosed comment or tag).
fn each_start_tag<'v>(v: &'v [u8], mut f: impl FnMut(&'v [u8], &'v [u8])) {
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'<', &v[i..]) {
        i += p;
        if v[i..].starts_with(b"<!--") {
            match memchr::memmem::find(&v[i..], b"-->") {
                Some(p) => i += p + 3,
                None => return,
            }
            continue;
        }
        let Some(end) = memchr::memchr(b'>', &v[i..]) else { return };
        let tag = &v[i + 1..i + end];
        i += end + 1;
        if tag.starts_with(b"/") || tag.starts_with(b"!") || tag.starts_with(b"?") {
            continue;
        }
        let name_end = tag.iter().position(|b| b.is_ascii_whitespace() || *b == b'/').unwrap_or(tag.len());
        let qname = &tag[..name_end];
        let local = match memchr::memchr(b':', qname) {
            Some(p) => &qname[p + 1..],
            None => qname,
        };
        f(local, &tag[name_end..]);
    }
}

/// Calls `f` with the `href` of each `a` element of a narrative's XHTML, in document order.
pub fn link_targets<'v>(v: &'v [u8], f: impl FnMut(&'v [u8])) {
    attribute_of_each(v, b"a", b"href", f);
}

/// Calls `f` with the value of attribute `attribute` of each `element` element (local names,
/// ASCII case ignored) of a narrative's XHTML, in document order.
fn attribute_of_each<'v>(v: &'v [u8], element: &[u8], attribute: &[u8], mut f: impl FnMut(&'v [u8])) {
    each_start_tag(v, |local, attrs| {
        if local.eq_ignore_ascii_case(element) {
            each_attribute(attrs, |name, value| {
                if name.eq_ignore_ascii_case(attribute) {
                    f(value);
                }
                true
            });
        }
    });
}

/// Calls `f` with each anchor of a narrative's XHTML a `#` link may name: the `id` of any
/// element, the `name` of an `a` element.
pub fn anchors<'v>(v: &'v [u8], mut f: impl FnMut(&'v [u8])) {
    each_start_tag(v, |local, attrs| {
        let a = local.eq_ignore_ascii_case(b"a");
        each_attribute(attrs, |name, value| {
            if name.eq_ignore_ascii_case(b"id") || (a && name.eq_ignore_ascii_case(b"name")) {
                f(value);
            }
            true
        });
    });
}

/// Calls `f` with the `src` of each `img` element of a narrative's XHTML, in document order:
/// the images the narrative shows (R4 narrative.html: an image's source may be a contained
/// resource of the narrative's resource, `#` and its id). Comments are skipped; the scan stops
/// at markup it cannot follow (an unclosed comment or tag).
pub fn image_sources<'v>(v: &'v [u8], f: impl FnMut(&'v [u8])) {
    attribute_of_each(v, b"img", b"src", f);
}

#[cfg(test)]
mod tests {
    use super::{anchors, checks, image_sources, link_targets};

    #[test]
    fn links_and_anchors() {
        let div = b"<div xmlns=\"http://www.w3.org/1999/xhtml\"><!-- <a href=\"#c\"/> --><p id='p1'><a name=\"n1\" href=\"#x\">x</a>\
            <span name=\"not-an-anchor\"/><h:a xmlns:h=\"http://www.w3.org/1999/xhtml\" href=\"http://h/\">y</h:a></p></div>";
        let mut hrefs = Vec::new();
        link_targets(div, |h| hrefs.push(h.to_vec()));
        assert_eq!(hrefs, [b"#x".to_vec(), b"http://h/".to_vec()]);
        let mut ids = Vec::new();
        anchors(div, |a| ids.push(a.to_vec()));
        assert_eq!(ids, [b"p1".to_vec(), b"n1".to_vec()]);
    }

    #[test]
    fn image_sources_in_document_order() {
        let div = b"<div xmlns=\"http://www.w3.org/1999/xhtml\"><!-- <img src=\"#c\"/> --><p><img alt='x' src = '#a'/>\
            <h:img xmlns:h=\"http://www.w3.org/1999/xhtml\" src=\"b.png\"></h:img><a href=\"#d\">d</a><img/></p></div>";
        let mut seen = Vec::new();
        image_sources(div, |s| seen.push(s.to_vec()));
        assert_eq!(seen, [b"#a".to_vec(), b"b.png".to_vec()]);
        let mut none = 0;
        image_sources(b"<div><img src=\"#a\"", |_| none += 1);
        assert_eq!(none, 0, "an unclosed tag ends the scan");
    }

    #[test]
    fn narrative_rules() {
        assert!(checks(b"<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Hi <b>there</b></p></div>"));
        assert!(!checks(b"<div xmlns=\"http://www.w3.org/1999/xhtml\">  </div>"));
        assert!(!checks(b"<div xmlns=\"http://www.w3.org/1999/xhtml\"><script>x</script></div>"));
        assert!(!checks(b"<div xmlns=\"http://www.w3.org/1999/xhtml\"><p onclick=\"x\">a</p></div>"));
        assert!(!checks(b"<div><a href=\" JavaScript:x\">a</a></div>"));
        assert!(checks(b"<div><img src=\"#a\"/></div>"));
        assert!(!checks(b"<p>a</p>"));
        // Attributes: the core ones anywhere, an element's own ones on it only.
        assert!(checks(b"<div xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\"><table border=\"1\"><tr><td colspan=\"2\">a</td></tr></table></div>"));
        assert!(checks(b"<div><a name=\"n\" href=\"#n\" class=\"c\">a</a><img src=\"#i\" alt=\"x\"/></div>"));
        assert!(!checks(b"<div><table><tr idref=\"x\"><td>a</td></tr></table></div>"));
        assert!(!checks(b"<div><p href=\"#x\">a</p></div>"));
    }
}
