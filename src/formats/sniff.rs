//! Helpers the formats' signatures share: the root element of an XML prefix and its namespace.
//!
//! What it does not do: parse XML (a match says which reader to try, not that the input is well
//! formed).

use crate::detect::skip_bom_and_space;

/// The root element of an XML input: its local name and namespace (both from the input's first
/// bytes, for comparison with constants only).
#[derive(Debug)]
pub struct XmlRoot<'a> {
    /// The local name.
    pub local: &'a [u8],
    /// The namespace URI bound to its prefix, if declared on the root.
    pub namespace: Option<&'a [u8]>,
}

/// Finds the root element of an XML prefix: skips the declaration, comments, processing
/// instructions and a doctype; reads the root's local name and its namespace.
pub fn xml_root(body: &[u8]) -> Option<XmlRoot<'_>> {
    let mut rest = body;
    loop {
        rest = skip_bom_and_space(rest);
        if rest.starts_with(b"<?") {
            let end = memchr::memmem::find(rest, b"?>")?;
            rest = &rest[end + 2..];
        } else if rest.starts_with(b"<!--") {
            let end = memchr::memmem::find(rest, b"-->")?;
            rest = &rest[end + 3..];
        } else if rest.starts_with(b"<!") {
            // A doctype with an internal subset ends at `]>` (the FHIR reader refuses it).
            let end = memchr::memchr(b'>', rest)?;
            let subset = memchr::memchr(b'[', &rest[..end]).is_some();
            let end = if subset { memchr::memmem::find(rest, b"]>").map(|p| p + 1)? } else { end };
            rest = &rest[end + 1..];
        } else {
            break;
        }
    }
    let tag = rest.strip_prefix(b"<")?;
    let end = memchr::memchr(b'>', tag)?;
    let tag = &tag[..end];
    let name_end = tag.iter().position(|b| b.is_ascii_whitespace() || *b == b'/').unwrap_or(tag.len());
    let qname = &tag[..name_end];
    if qname.is_empty() {
        return None;
    }
    let (prefix, local) = match memchr::memchr(b':', qname) {
        Some(p) => (&qname[..p], &qname[p + 1..]),
        None => (&b""[..], qname),
    };
    let attrs = &tag[name_end..];
    let namespace = xml_namespace(attrs, prefix);
    Some(XmlRoot { local, namespace })
}

/// The value of `xmlns` (no prefix) or `xmlns:prefix` in an attribute list.
fn xml_namespace<'a>(attrs: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let mut rest = attrs;
    while let Some(p) = memchr::memmem::find(rest, b"xmlns") {
        let after = &rest[p + 5..];
        let (name_ok, after) = if prefix.is_empty() {
            (after.first().is_some_and(|b| *b == b'=' || b.is_ascii_whitespace()), after)
        } else {
            match after.strip_prefix(b":").and_then(|a| a.strip_prefix(prefix)) {
                Some(a) => (a.first().is_some_and(|b| *b == b'=' || b.is_ascii_whitespace()), a),
                None => (false, after),
            }
        };
        let preceded_ok = p == 0 || rest[p - 1].is_ascii_whitespace();
        if name_ok && preceded_ok {
            let eq = memchr::memchr(b'=', after)?;
            let value = skip_bom_and_space(&after[eq + 1..]);
            let quote = *value.first()?;
            if quote != b'"' && quote != b'\'' {
                return None;
            }
            let close = memchr::memchr(quote, &value[1..])?;
            return Some(&value[1..1 + close]);
        }
        rest = &rest[p + 5..];
    }
    None
}
