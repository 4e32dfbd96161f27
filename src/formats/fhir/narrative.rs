//! Links of a narrative (`Narrative.div`), as the reference validator checks them
//! (`InstanceValidator.checkReferences`); R4 narrative.html: the narrative is XHTML whose links
//! a reader follows, and a `#` link is to a fragment of the same resource.
//!
//! - an `a` element's `href` that is empty is `NARRATIVE_LINK_EMPTY` (error);
//! - an `href` of `#` and a fragment (not `#` alone) names an anchor: the `id` of an element or
//!   resource of the narrative's resource (its contained resources included), an element's `id`
//!   attribute or an `a` element's `name` in any narrative of that resource; when none matches,
//!   those of the nearest Bundle around the resource (every entry). No match is
//!   `NARRATIVE_LINK_UNRESOLVED` (error), more than one `NARRATIVE_LINK_AMBIGUOUS` (warning);
//! - an absolute `href` whose scheme is `urn` or `cid` (an identifier, not a location a reader can
//!   follow) is `NARRATIVE_LINK_SCHEME` (error); `javascript:` is txt-1's.
//!
//! All on the `div`. What it does not do: follow links that leave the resource, or `img`
//! sources (dom-3 counts those).

use crate::diag::{Code, Location};

use super::definitions as defs;
use super::fhirpath::html;
use super::model::{Document, NONE};
use super::validate::Findings;

/// The value of a primitive node (a narrative's markup, an id compared with a link's fragment).
#[expect(
    clippy::disallowed_methods,
    reason = "a validator: it compares a narrative's links with the ids and anchors of the same resource; what it returns is value-free"
)]
fn value(doc: &Document, i: u32) -> &[u8] {
    doc.value(i)
}

fn is_xhtml(doc: &Document, i: u32) -> bool {
    let node = doc.node(i);
    !node.is_unknown() && node.has_value() && node.ty.is_some_and(|t| defs::type_name(t) == "xhtml")
}

/// Runs the checks on every narrative of the document.
pub(super) fn check(doc: &Document, f: &mut Findings) {
    for n in 0..doc.nodes().len() as u32 {
        if !is_xhtml(doc, n) {
            continue;
        }
        let mut fragments: Vec<&[u8]> = Vec::new();
        let (mut empty, mut scheme) = (false, false);
        html::link_targets(value(doc, n), |href| {
            let href = href.trim_ascii();
            if href.is_empty() {
                empty = true;
            } else if let Some(fragment) = href.strip_prefix(b"#") {
                if !fragment.is_empty() {
                    fragments.push(fragment);
                }
            } else if let Some(s) = absolute_scheme(href) {
                scheme |= s.eq_ignore_ascii_case(b"urn") || s.eq_ignore_ascii_case(b"cid");
            }
        });
        if empty {
            f.push(Code::NARRATIVE_LINK_EMPTY, Location::Fhir(doc.path(n)));
        }
        if scheme {
            f.push(Code::NARRATIVE_LINK_SCHEME, Location::Fhir(doc.path(n)));
        }
        if fragments.is_empty() {
            continue;
        }
        let resource = doc.resource_of(n);
        let bundle = enclosing_bundle(doc, resource);
        let (mut unresolved, mut ambiguous) = (false, false);
        for fragment in fragments {
            let mut count = matches(doc, resource, fragment);
            if count == 0 {
                if let Some(b) = bundle {
                    count = matches(doc, b, fragment);
                }
            }
            unresolved |= count == 0;
            ambiguous |= count > 1;
        }
        if unresolved {
            f.push(Code::NARRATIVE_LINK_UNRESOLVED, Location::Fhir(doc.path(n)));
        }
        if ambiguous {
            f.push(Code::NARRATIVE_LINK_AMBIGUOUS, Location::Fhir(doc.path(n)));
        }
    }
}

/// The scheme of an absolute URL (`scheme:` with a letter first, then letters, digits, `+`,
/// `-`, `.`), `None` for a relative one.
fn absolute_scheme(href: &[u8]) -> Option<&[u8]> {
    let colon = memchr::memchr(b':', href)?;
    let scheme = &href[..colon];
    let ok = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    ok.then_some(scheme)
}

/// The nearest Bundle resource above resource node `r` (not `r` itself).
fn enclosing_bundle(doc: &Document, r: u32) -> Option<u32> {
    let mut i = doc.node(r).parent;
    while i != NONE {
        let node = doc.node(i);
        if node.is_resource() && node.ty.is_some_and(|t| defs::type_name(t) == "Bundle") {
            return Some(i);
        }
        i = node.parent;
    }
    None
}

/// How many anchors of the subtree of node `root` a fragment names: ids of elements and
/// resources, and the `id` attributes and `a` names of its narratives.
fn matches(doc: &Document, root: u32, fragment: &[u8]) -> usize {
    let mut count = 0;
    for i in root..doc.node(root).end {
        let node = doc.node(i);
        if node.is_unknown() || !node.has_value() {
            continue;
        }
        if node.name == "id" && value(doc, i) == fragment {
            count += 1;
        } else if is_xhtml(doc, i) {
            html::anchors(value(doc, i), |a| count += usize::from(a == fragment));
        }
    }
    count
}
