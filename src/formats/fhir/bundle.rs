//! Bundle checks: references between entries resolve, and `fullUrl` agrees with the entry's
//! resource.
//!
//! For every Bundle in the document (nested ones included), each `Reference.reference` inside an
//! entry's resource is resolved the way the FHIR R4 specification describes (Bundle, section
//! "Resolving references in Bundles"):
//!
//! - `urn:uuid:` and `urn:oid:` references SHALL resolve to an entry's `fullUrl`: otherwise
//!   `REFERENCE_UNRESOLVED`, an error, except in `collection`, `searchset` and `history`
//!   Bundles (resources gathered from elsewhere, not exchanged as one unit), where it is a
//!   warning, as the reference validator reports it;
//! - relative references (`Patient/123`, optionally with `/_history/v`) resolve against the
//!   entry's RESTful base, or to an entry with that type and id; in a `document`, which is
//!   self-contained, only the specification's rule resolves them (the referencing entry's
//!   `fullUrl` is RESTful and its base joined to the reference is an entry's `fullUrl`) and an
//!   unresolved one is an error; in a `message` it is a warning; elsewhere the server may hold
//!   it and nothing is reported;
//! - from an entry whose `fullUrl` is a `urn:uuid:` (or `urn:oid:`), the specification gives a
//!   relative reference no meaning; outside documents the reference validator resolves
//!   `Type/id` to the entry whose `fullUrl` is `urn:uuid:id`, and so does phiward, reporting
//!   `BUNDLE_REFERENCE_TYPE_MISMATCH` when that entry's resource is not a `Type` (in a document,
//!   such a reference resolves to nothing, as above);
//! - absolute URLs and local references (`#id`, checked by invariant `ref-1`) are not reported;
//! - entries may share a `fullUrl` when their `meta.versionId`s differ (`bdl-7`): a version
//!   specific reference (`/_history/v`) matches only the entry of that version ("remove the
//!   version from the URL before matching fullUrl, and then match the version based on
//!   Resource.meta.versionId"; an entry without a versionId matches any version), and a
//!   reference that still matches several entries names none of them: `REFERENCE_AMBIGUOUS`,
//!   except in a `history` Bundle, which holds the versions of one resource by design; a
//!   warning when no `fullUrl` matches and only the match by type and id (outside documents)
//!   finds several entries, as the reference validator reports it.
//!
//! `fullUrl` that is a RESTful URL (`http(s)://.../Type/id`, optionally with `/_history/v`)
//! must end with the resource's type and id: otherwise `FULLURL_MISMATCH`.
//!
//! In a `searchset` Bundle, every entry's resource has an `id`: search results come from a server,
//! and a resource lacks an id only while it is submitted to be created (Resource.id):
//! otherwise `BUNDLE_ENTRY_ID_MISSING` (on the resource). Outcomes of the search (`search.mode`
//! `outcome`, or an OperationOutcome without a mode) are not search results and need none.
//!
//! Every entry of a Bundle other than a `transaction`, `batch` or their responses has a
//! `fullUrl` (R4 Bundle.entry.fullUrl: it "SHALL have a value" except on a POST): otherwise
//! `BUNDLE_ENTRY_FULLURL_MISSING` (on the entry), an error, as the reference validator reports it;
//! an outcome of a search (see below) is exempt, as the specification's other exception says
//! ("results from operations might involve resources that are not identified"; the official
//! example bundle-search-warning has one), where the reference validator reports it too.
//!
//! What it does not do: fetch anything, check reference target types, or check conditional
//! references (`Patient?identifier=...`, transactions only).

use crate::diag::{Code, Location, Severity};

use super::definitions as defs;
use super::model::Document;
use super::validate::Findings;

/// Runs the Bundle checks over every Bundle of the document.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub(super) fn check(doc: &Document, f: &mut Findings) {
    let Some(bundle_ty) = defs::known_type!(b"Bundle") else { return };
    let Some(reference_ty) = defs::known_type!(b"Reference") else { return };
    for b in 0..doc.nodes().len() as u32 {
        let node = doc.node(b);
        if !node.is_resource() || node.ty != Some(bundle_ty) {
            continue;
        }
        // Each link relation names one URL of the Bundle: a second one is an error (the
        // reference validator's rule). Relations are codes, compared as bytes.
        let mut relations: Vec<&[u8]> = Vec::new();
        for l in doc.named(b, "link") {
            let Some(r) = doc.named(l, "relation").find(|&r| doc.node(r).has_value()) else { continue };
            let rel = doc.value(r);
            if relations.contains(&rel) {
                f.push(Code::BUNDLE_LINK_DUPLICATE, Location::Fhir(doc.path(l)));
            } else {
                relations.push(rel);
            }
        }
        let bundle_type = doc.named(b, "type").next().map(|t| doc.value(t));
        let self_contained = matches!(bundle_type, Some(b"document" | b"message"));
        // Resources gathered from elsewhere: a `urn:uuid:` reference that leaves the Bundle is
        // reported, not an error (the reference validator warns too).
        let gathered = matches!(bundle_type, Some(b"collection" | b"searchset" | b"history"));
        let searchset = bundle_type == Some(b"searchset");
        let document = bundle_type == Some(b"document");
        // Entries of a transaction or batch (and their responses) may lack a fullUrl (a resource
        // being created has no identity yet); every other entry has one.
        let full_url_optional =
            matches!(bundle_type, Some(b"transaction" | b"transaction-response" | b"batch" | b"batch-response"));
        // Entries: (entry node, fullUrl node, resource node).
        // Sized first: growing it entry by entry costs more than counting.
        let mut entries: Vec<(u32, Option<u32>, Option<u32>)> = Vec::with_capacity(doc.named(b, "entry").count());
        entries.extend(doc.named(b, "entry").map(|e| {
            let full = doc.named(e, "fullUrl").find(|&u| doc.node(u).has_value());
            let res = doc.named(e, "resource").find(|&r| doc.node(r).ty.is_some());
            (e, full, res)
        }));
        // Sorted, for membership by binary search; each with the resource's `meta.versionId`
        // (entries may share a fullUrl when their versions differ: bdl-7).
        let mut full_urls: Vec<FullUrl<'_>> = Vec::with_capacity(entries.len());
        let mut type_ids: Vec<TypeId<'_>> = Vec::with_capacity(entries.len());
        for &(e, full, res) in &entries {
            let version = res.and_then(|r| version_id(doc, r));
            let ty = res.and_then(|r| doc.node(r).ty).map(defs::type_name);
            match full {
                Some(u) => full_urls.push((doc.value(u), version, ty)),
                // An outcome of a search is no identified resource ("results from operations
                // might involve resources that are not identified").
                None if !(full_url_optional || searchset && search_outcome(doc, e, res)) => {
                    f.push(Code::BUNDLE_ENTRY_FULLURL_MISSING, Location::Fhir(doc.path(e)));
                }
                None => {}
            }
            if let Some(r) = res {
                if let (Some(ty), Some(id)) = (doc.node(r).ty, resource_id(doc, r)) {
                    type_ids.push((defs::type_name(ty), id, version));
                }
            }
        }
        if searchset {
            // Search results come from a server: they have ids (Resource.id: a resource has no
            // id only while it is submitted to a server to be created). An outcome of the search
            // (`search.mode` `outcome`, or an OperationOutcome with no mode) is no search result.
            for &(e, _, res) in &entries {
                if let (Some(r), false) = (res, search_outcome(doc, e, res)) {
                    if resource_id(doc, r).is_none() {
                        f.push(Code::BUNDLE_ENTRY_ID_MISSING, Location::Fhir(doc.path(r)));
                    }
                }
            }
        }
        full_urls.sort_unstable();
        type_ids.sort_unstable();
        for &(_, full, res) in &entries {
            let (Some(u), Some(r)) = (full, res) else { continue };
            if let Some((ty, id)) = restful_tail(doc.value(u)) {
                let agrees = doc.node(r).ty.is_some_and(|t| defs::type_name(t).as_bytes() == ty)
                    && resource_id(doc, r).is_some_and(|rid| rid == id);
                if !agrees {
                    f.push(Code::FULLURL_MISMATCH, Location::Fhir(doc.path(u)));
                }
            }
        }
        for &(_, full, res) in &entries {
            let Some(r) = res else { continue };
            // In a document, the reference validator's document checks resolve a relative
            // reference by the specification's rule alone, a `urn:` entry's included.
            let base = full.map(|u| doc.value(u)).and_then(|u| match urn_base(u) {
                Some(_) if document => None,
                Some(urn) => Some(Base::Urn(urn)),
                None => restful_base(u).map(Base::Restful),
            });
            for n in r..doc.node(r).end {
                if doc.node(n).ty != Some(reference_ty) || doc.node(n).is_unknown() {
                    continue;
                }
                let Some(refn) = doc.named(n, "reference").find(|&x| doc.node(x).has_value()) else { continue };
                let v = doc.value(refn);
                let matches = if v.starts_with(b"urn:uuid:") || v.starts_with(b"urn:oid:") {
                    Matches::of(&full_urls, |&(u, _, _)| u.cmp(v), |&(_, ver, _)| ver, None)
                } else if v.starts_with(b"#") || v.contains(&b'?') || is_absolute(v) {
                    Matches::One
                } else {
                    resolve_relative(v, base, &full_urls, (!document).then_some(type_ids.as_slice()))
                };
                let resolved = match matches {
                    Matches::None => false,
                    Matches::One => true,
                    Matches::OtherType => {
                        f.push(Code::BUNDLE_REFERENCE_TYPE_MISMATCH, Location::Fhir(doc.path(refn)));
                        true
                    }
                    // A history holds the versions of one resource; elsewhere a reference that
                    // matches several entries names none of them: an error by the rule, a
                    // warning when only the type-and-id fallback finds them.
                    Matches::Several | Matches::SeveralByTypeAndId if bundle_type == Some(b"history") => true,
                    Matches::Several => {
                        f.push(Code::REFERENCE_AMBIGUOUS, Location::Fhir(doc.path(refn)));
                        true
                    }
                    Matches::SeveralByTypeAndId => {
                        f.push_with(Code::REFERENCE_AMBIGUOUS, Severity::Warning, Location::Fhir(doc.path(refn)));
                        true
                    }
                };
                if resolved {
                    continue;
                }
                let location = Location::Fhir(doc.path(refn));
                let relative = !(v.starts_with(b"urn:uuid:") || v.starts_with(b"urn:oid:"));
                if !relative && gathered {
                    f.push_with(Code::REFERENCE_UNRESOLVED, Severity::Warning, location);
                } else if !relative || document {
                    f.push(Code::REFERENCE_UNRESOLVED, location);
                } else if self_contained {
                    f.push_with(Code::REFERENCE_UNRESOLVED, Severity::Warning, location);
                }
            }
        }
    }
}

/// Whether searchset entry `e` (resource `res`) is an outcome of the search rather than a
/// result: its `search.mode` is `outcome`, or it has no mode and its resource is an
/// OperationOutcome.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn search_outcome(doc: &Document, e: u32, res: Option<u32>) -> bool {
    let mode = doc.named(e, "search").flat_map(|s| doc.named(s, "mode")).find(|&m| doc.node(m).has_value());
    match mode {
        Some(m) => doc.value(m) == b"outcome",
        None => {
            let outcome_ty = defs::known_type!(b"OperationOutcome");
            res.is_some_and(|r| doc.node(r).ty.is_some() && doc.node(r).ty == outcome_ty)
        }
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn resource_id(doc: &Document, r: u32) -> Option<&[u8]> {
    doc.named(r, "id").find(|&i| doc.node(i).has_value()).map(|i| doc.value(i))
}

/// The resource's `meta.versionId`.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn version_id(doc: &Document, r: u32) -> Option<&[u8]> {
    doc.named(r, "meta")
        .flat_map(|m| doc.named(m, "versionId"))
        .find(|&i| doc.node(i).has_value())
        .map(|i| doc.value(i))
}

fn is_absolute(v: &[u8]) -> bool {
    v.starts_with(b"http://") || v.starts_with(b"https://")
}

/// Strips `/_history/v` from a URL.
fn without_history(v: &[u8]) -> &[u8] {
    match memchr::memmem::rfind(v, b"/_history/") {
        Some(p) => &v[..p],
        None => v,
    }
}

/// `(Type, id)` when `url` is a RESTful URL `http(s)://.../Type/id` (Type a resource type).
fn restful_tail(url: &[u8]) -> Option<(&[u8], &[u8])> {
    if !is_absolute(url) {
        return None;
    }
    let url = without_history(url);
    let mut parts = url.rsplitn(3, |b| *b == b'/');
    let id = parts.next()?;
    let ty = parts.next()?;
    parts.next()?;
    let is_type = defs::type_id(ty).is_some_and(defs::is_resource);
    (is_type && !id.is_empty()).then_some((ty, id))
}

/// The base of a RESTful `fullUrl` (everything before `Type/id`), with the trailing slash.
fn restful_base(url: &[u8]) -> Option<&[u8]> {
    let (ty, id) = restful_tail(url)?;
    let url = without_history(url);
    url.len().checked_sub(ty.len() + id.len() + 1).map(|end| &url[..end])
}

/// The base of a `urn:` `fullUrl`: everything up to its last `:` (`urn:uuid:`, `urn:oid:`).
fn urn_base(url: &[u8]) -> Option<&[u8]> {
    if !url.starts_with(b"urn:") {
        return None;
    }
    memchr::memrchr(b':', url).map(|p| &url[..=p])
}

/// The base a relative reference is resolved against: the referencing entry's `fullUrl` without
/// its last part.
#[derive(Copy, Clone)]
enum Base<'d> {
    /// A RESTful `fullUrl`'s base (`http://x.org/fhir/`): the reference is joined to it.
    Restful(&'d [u8]),
    /// A `urn:uuid:` or `urn:oid:` `fullUrl`'s prefix: the specification gives a relative
    /// reference from such an entry no meaning; the reference validator joins the reference's id
    /// to it (`Practitioner/1b2c` names the entry `urn:uuid:1b2c`) and reports an entry found that
    /// way whose resource is of another type than the reference names.
    Urn(&'d [u8]),
}

/// An entry's `fullUrl`, its resource's `meta.versionId` and its resource's type.
type FullUrl<'d> = (&'d [u8], Option<&'d [u8]>, Option<&'static str>);

/// An entry's resource type, id and `meta.versionId`.
type TypeId<'d> = (&'static str, &'d [u8], Option<&'d [u8]>);

/// How many entries a reference matches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Matches {
    None,
    One,
    /// Several, by the specification's rule (their `fullUrl`).
    Several,
    /// None by `fullUrl` and several by type and id (a fallback beyond the rule).
    SeveralByTypeAndId,
    /// One, by the id of a relative reference joined to the `urn:` base of the referencing
    /// entry, whose resource is of another type than the reference names.
    OtherType,
}

impl Matches {
    /// The entries of sorted `list` whose key compares equal (`cmp` orders the list's keys
    /// against the target), keeping only those of version `version` when the reference names
    /// one (an entry without `meta.versionId` matches any version).
    fn of<T>(
        list: &[T],
        cmp: impl Fn(&T) -> std::cmp::Ordering,
        entry_version: impl Fn(&T) -> Option<&[u8]>,
        version: Option<&[u8]>,
    ) -> Matches {
        let start = list.partition_point(|x| cmp(x) == std::cmp::Ordering::Less);
        let n = list[start..]
            .iter()
            .take_while(|x| cmp(x) == std::cmp::Ordering::Equal)
            .filter(|x| match (version, entry_version(x)) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            })
            .take(2)
            .count();
        match n {
            0 => Matches::None,
            1 => Matches::One,
            _ => Matches::Several,
        }
    }
}

/// The version of `/_history/v` in a URL.
fn history_version(v: &[u8]) -> Option<&[u8]> {
    memchr::memmem::rfind(v, b"/_history/").map(|p| &v[p + b"/_history/".len()..]).filter(|ver| !ver.is_empty())
}

/// Which entries relative reference `v` matches: those whose `fullUrl` is `base` (the
/// referencing entry's RESTful base) joined to it, or, from an entry whose `fullUrl` is a `urn:`,
/// the entry whose `fullUrl` is that URN's base joined to the reference's id (`OtherType` when
/// its resource is of another type); or, when `type_ids` is given and none is, those whose
/// resource has its type and id; with `/_history/v`, only that version.
fn resolve_relative(
    v: &[u8],
    base: Option<Base<'_>>,
    full_urls: &[FullUrl<'_>],
    type_ids: Option<&[TypeId<'_>]>,
) -> Matches {
    let version = history_version(v);
    let v = without_history(v);
    let mut parts = v.splitn(2, |b| *b == b'/');
    let (Some(ty), Some(id)) = (parts.next(), parts.next()) else { return Matches::None };
    match base {
        Some(Base::Restful(base)) => {
            let mut url = Vec::with_capacity(base.len() + v.len());
            url.extend_from_slice(base);
            url.extend_from_slice(v);
            let hit = Matches::of(full_urls, |&(u, _, _)| u.cmp(url.as_slice()), |&(_, ver, _)| ver, version);
            zeroize::Zeroize::zeroize(&mut url);
            if hit != Matches::None {
                return hit;
            }
        }
        // `Type/id` only (the reference validator's rule does not join a versioned reference's
        // id), and an id without `/`.
        Some(Base::Urn(base)) if version.is_none() && !id.contains(&b'/') => {
            let mut url = Vec::with_capacity(base.len() + id.len());
            url.extend_from_slice(base);
            url.extend_from_slice(id);
            let at = full_urls.partition_point(|&(u, _, _)| u < url.as_slice());
            let hit = Matches::of(full_urls, |&(u, _, _)| u.cmp(url.as_slice()), |&(_, ver, _)| ver, None);
            let found_type = full_urls.get(at).and_then(|&(_, _, t)| t);
            zeroize::Zeroize::zeroize(&mut url);
            match hit {
                Matches::One if found_type.is_some_and(|t| t.as_bytes() != ty) => return Matches::OtherType,
                Matches::None => {}
                hit => return hit,
            }
        }
        _ => {}
    }
    let Some(type_ids) = type_ids else { return Matches::None };
    let Ok(ty) = std::str::from_utf8(ty) else { return Matches::None };
    match Matches::of(type_ids, |&(t, i, _)| (t, i).cmp(&(ty, id)), |&(_, _, ver)| ver, version) {
        Matches::Several => Matches::SeveralByTypeAndId,
        m => m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restful_urls() {
        assert_eq!(restful_tail(b"http://x.org/fhir/Patient/1"), Some((&b"Patient"[..], &b"1"[..])));
        assert_eq!(restful_tail(b"http://x.org/fhir/Patient/1/_history/2"), Some((&b"Patient"[..], &b"1"[..])));
        assert_eq!(restful_tail(b"urn:uuid:1"), None);
        assert_eq!(restful_tail(b"http://x.org/fhir/Nothing/1"), None);
        assert_eq!(restful_base(b"http://x.org/fhir/Patient/1"), Some(&b"http://x.org/fhir/"[..]));
    }
}
