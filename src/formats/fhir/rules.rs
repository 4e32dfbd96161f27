//! Rules the FHIR R4 specification states in prose rather than as invariants, checked on every
//! document (each one a `SHALL` of the specification, and each one checked by the reference
//! validator too):
//!
//! - `Attachment.size` is "the number of bytes of data that make up this content (before base64
//!   encoding)": with `data`, it SHALL be the decoded length of `data`, otherwise
//!   `ATTACHMENT_SIZE_MISMATCH` (on `size`);
//! - an `Identifier` whose `system` is `urn:ietf:rfc:3986` says its `value` is a URI (Identifier,
//!   "the value is a URI"): the value SHALL be an absolute URI (a scheme, then `:`), otherwise
//!   `IDENTIFIER_URI_INVALID` (on `value`). An OID or UUID goes as `urn:oid:...`/`urn:uuid:...`;
//! - the `url` of a canonical resource is "an absolute URI that is used to identify this
//!   resource" (CodeSystem, ValueSet, StructureDefinition, ... every resource whose root `url`
//!   element is a `uri`): when the resource is not contained, it SHALL be absolute, otherwise
//!   `CANONICAL_URL_RELATIVE` (on `url`). A contained resource's `url` may be local;
//! - a `Coding`'s `system` "is a URL that identifies the code system that defines the code"
//!   (Using Codes in Resources): a relative or local (`#...`) reference identifies nothing, and
//!   the canonical URL of a core value set (`http://hl7.org/fhir/ValueSet/...`) names a value
//!   set, not a code system: `CODING_SYSTEM_INVALID` (on `system`); and a `system` in the
//!   namespaces that STU3 and earlier used for HL7 v2 tables and v3 code systems
//!   (`http://hl7.org/fhir/v2/0203`) names no R4 code system: R4 publishes them as
//!   `http://terminology.hl7.org/CodeSystem/v2-0203` (Terminology: "v2 tables", "v3 code
//!   systems"): `CODING_SYSTEM_UNKNOWN`, a warning as the reference validator reports it (the
//!   URI is well formed; it names a code system nobody defines, which makes the code
//!   unverifiable rather than invalid);
//! - `Bundle.entry.fullUrl` is "the absolute URL for the resource" (Bundle) and
//!   `ValueSet.compose.include.system` / `exclude.system` "an absolute URI which is the code
//!   system" (ValueSet; a contained code system is named by its full URL, not `#id`): a relative
//!   or local value is `URI_NOT_ABSOLUTE` (on the element);
//! - a code of the UCUM code system (`http://unitsofmeasure.org`; the `code` of a Coding, or of a
//!   Quantity, Age, Count, Distance or Duration with that `system`) is a UCUM expression
//!   ([`super::ucum`]), otherwise `UCUM_CODE_INVALID` (on `code`): a code SHALL be valid in its
//!   code system, and UCUM is a grammar phiward carries whole.
//!
//! The checks of extensions against the core extension definitions are in
//! [`super::extensions`] (called from here for every `Extension` node).
//!
//! What it does not do: rules that need the content of another resource (a profile, a code
//! system), or a network.

use std::sync::OnceLock;

use base64::Engine as _;

use crate::diag::{Code, Location};

use super::definitions::{self as defs, ElemRef, TypeId, TypeRef};
use super::model::{Document, Node};
use super::validate::Findings;

/// What the rules check on a node of a type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Nothing (most types: primitives, most complex types).
    None,
    Extension,
    Coding,
    Identifier,
    /// `Quantity` and the types that derive from it (`Age`, `Count`, `Distance`, `Duration`).
    Quantity,
    Attachment,
    /// `uri`: the elements the specification defines as absolute URIs are checked.
    Uri,
    /// A canonical resource (its root `url` is a `uri`): that element.
    Canonical(ElemRef),
}

/// The types and elements the rules look at, resolved once.
pub(super) struct Rules {
    /// Per type (indexed by [`TypeId`]): what to check, decided on the type's first node (a
    /// canonical resource is known by its `url` element, and deciding it for every type up front
    /// decoded every resource type's definitions: 28 M instructions at the first validation).
    kinds: Vec<OnceLock<Kind>>,
    /// The types with rules of their own.
    extension: TypeId,
    coding: TypeId,
    identifier: TypeId,
    attachment: TypeId,
    uri: TypeId,
    attachment_size: ElemRef,
    attachment_data: ElemRef,
    identifier_system: ElemRef,
    identifier_value: ElemRef,
    coding_system: ElemRef,
    /// `uri` elements that SHALL hold an absolute URI: `Bundle.entry.fullUrl`,
    /// `ValueSet.compose.include.system`, `ValueSet.compose.exclude.system`.
    absolute_uris: [ElemRef; 3],
}

/// The rules (`None` only if the definitions lack a type they name).
pub(super) fn rules() -> Option<&'static Rules> {
    static R: OnceLock<Option<Rules>> = OnceLock::new();
    R.get_or_init(|| {
        let ty = |name: &[u8]| defs::type_id(name);
        let elem = |t: TypeId, name: &[u8]| defs::child(ElemRef { ty: t, idx: 0 }, name).map(|(e, _)| e);
        let (attachment, identifier, coding) = (ty(b"Attachment")?, ty(b"Identifier")?, ty(b"Coding")?);
        let extension = super::extensions::extension_type()?;
        let uri = ty(b"uri")?;
        let path = |t: TypeId, names: &[&[u8]]| {
            names.iter().try_fold(ElemRef { ty: t, idx: 0 }, |e, name| defs::child(e, name).map(|(c, _)| c))
        };
        let value_set = ty(b"ValueSet")?;
        let absolute_uris = [
            path(ty(b"Bundle")?, &[b"entry", b"fullUrl"])?,
            path(value_set, &[b"compose", b"include", b"system"])?,
            path(value_set, &[b"compose", b"exclude", b"system"])?,
        ];
        let kinds = defs::all_types().map(|_| OnceLock::new()).collect();
        Some(Rules {
            kinds,
            extension,
            coding,
            identifier,
            attachment,
            uri,
            attachment_size: elem(attachment, b"size")?,
            attachment_data: elem(attachment, b"data")?,
            identifier_system: elem(identifier, b"system")?,
            identifier_value: elem(identifier, b"value")?,
            coding_system: elem(coding, b"system")?,
            absolute_uris,
        })
    })
    .as_ref()
}

impl Rules {
    /// What to check on a node of type `t`.
    fn kind_of(&self, t: TypeId) -> Kind {
        match t {
            _ if t == self.extension => Kind::Extension,
            _ if t == self.coding => Kind::Coding,
            _ if t == self.identifier => Kind::Identifier,
            _ if t == self.attachment => Kind::Attachment,
            _ if t == self.uri => Kind::Uri,
            _ if defs::derives_from(t, "Quantity") => Kind::Quantity,
            _ => canonical_url(t).map_or(Kind::None, Kind::Canonical),
        }
    }

    /// The rules of node `i` (the validator calls it for every known node).
    #[inline]
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub(super) fn check(&self, doc: &Document, i: u32, node: &Node, f: &mut Findings) {
        let Some(ty) = node.ty else { return };
        let kind = self.kinds.get(usize::from(ty.0)).map_or(Kind::None, |k| *k.get_or_init(|| self.kind_of(ty)));
        match kind {
            Kind::None => {}
            Kind::Extension => super::extensions::check(doc, i, f),
            Kind::Coding => {
                let Some((system_node, system)) = child_value(doc, i, self.coding_system) else { return };
                if !is_absolute_uri(system) || system.starts_with(b"http://hl7.org/fhir/ValueSet/") {
                    f.push(Code::CODING_SYSTEM_INVALID, Location::Fhir(doc.path(system_node)));
                } else if !outside_retired_namespaces(system) {
                    f.push(Code::CODING_SYSTEM_UNKNOWN, Location::Fhir(doc.path(system_node)));
                } else if system == UCUM {
                    ucum_code(doc, i, f);
                }
            }
            Kind::Identifier => {
                let Some((_, system)) = child_value(doc, i, self.identifier_system) else { return };
                if system != b"urn:ietf:rfc:3986" {
                    return;
                }
                let Some((value_node, value)) = child_value(doc, i, self.identifier_value) else { return };
                if !is_absolute_uri(value) {
                    f.push(Code::IDENTIFIER_URI_INVALID, Location::Fhir(doc.path(value_node)));
                }
            }
            Kind::Quantity => {
                if doc.named(i, "system").any(|c| doc.node(c).has_value() && doc.value(c) == UCUM) {
                    ucum_code(doc, i, f);
                }
            }
            Kind::Uri => {
                if node.elem.is_some_and(|e| self.absolute_uris.contains(&e))
                    && node.has_value()
                    && !node.is_unknown()
                    && !is_absolute_uri(doc.value(i))
                {
                    f.push(Code::URI_NOT_ABSOLUTE, Location::Fhir(doc.path(i)));
                }
            }
            Kind::Attachment => {
                let Some((size_node, size)) = child_value(doc, i, self.attachment_size) else { return };
                let Some((_, data)) = child_value(doc, i, self.attachment_data) else { return };
                // An invalid size or data is PRIMITIVE_INVALID already.
                if let (Some(size), Some(decoded)) = (parse_u64(size), base64_len(data)) {
                    if size != decoded {
                        f.push(Code::ATTACHMENT_SIZE_MISMATCH, Location::Fhir(doc.path(size_node)));
                    }
                }
            }
            Kind::Canonical(url_elem) => {
                if !node.is_resource() || node.name == "contained" {
                    return;
                }
                let Some((url_node, url)) = child_value(doc, i, url_elem) else { return };
                if !is_absolute_uri(url) {
                    f.push(Code::CANONICAL_URL_RELATIVE, Location::Fhir(doc.path(url_node)));
                }
            }
        }
    }
}

/// The UCUM code system.
const UCUM: &[u8] = b"http://unitsofmeasure.org";

/// `UCUM_CODE_INVALID` when the `code` child of node `i` (a Coding or a Quantity whose system
/// is UCUM) is not a UCUM expression.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn ucum_code(doc: &Document, i: u32, f: &mut Findings) {
    for c in doc.named(i, "code") {
        if doc.node(c).has_value() && !super::ucum::valid(doc.value(c)) {
            f.push(Code::UCUM_CODE_INVALID, Location::Fhir(doc.path(c)));
        }
    }
}

/// The first child of node `i` defined by `elem` that has a value, and its value.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub(super) fn child_value(doc: &Document, i: u32, elem: ElemRef) -> Option<(u32, &[u8])> {
    doc.children(i)
        .find(|&c| {
            let n = doc.node(c);
            n.elem == Some(elem) && n.has_value() && !n.is_unknown()
        })
        .map(|c| (c, doc.value(c)))
}

/// The root element `url` of resource type `ty` when it is a `uri` (the canonical resources of
/// R4); built into [`Rules`] once per type.
fn canonical_url(ty: TypeId) -> Option<ElemRef> {
    let uri = defs::type_id(b"uri")?;
    let (elem, _) = defs::child(ElemRef { ty, idx: 0 }, b"url").filter(|_| defs::is_resource(ty))?;
    let def = defs::element(elem)?;
    (elem.ty == ty && def.types.len() == 1 && def.types.first() == Some(&TypeRef::Type(uri))).then_some(elem)
}

/// False when `system` is in the namespaces of HL7 v2 tables and v3 code systems that STU3 and
/// earlier used (`http://hl7.org/fhir/v2/0203`, `http://hl7.org/fhir/v3/MaritalStatus`): R4
/// defines none there (they are `http://terminology.hl7.org/CodeSystem/v2-0203`, `.../v3-...`).
fn outside_retired_namespaces(system: &[u8]) -> bool {
    !(system.starts_with(b"http://hl7.org/fhir/v2/") || system.starts_with(b"http://hl7.org/fhir/v3/"))
}

/// RFC 3986: `scheme ":" ...`, the scheme a letter then letters, digits, `+`, `-`, `.`; and
/// something after the colon.
pub(super) fn is_absolute_uri(v: &[u8]) -> bool {
    let Some(colon) = v.iter().position(|&b| b == b':') else { return false };
    let (scheme, rest) = (&v[..colon], &v[colon + 1..]);
    !rest.is_empty()
        && scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
}

fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// Standard base64 that requires canonical padding but not zero trailing bits: what the
/// `base64Binary` regex and the size rule accept (a sender's encoder may leave those bits set).
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
);

/// The number of bytes base64 text decodes to (white space ignored, as the base64Binary type
/// allows it); `None` when it is not base64. Decoded by the `base64` crate into a zeroizing
/// buffer (the bytes are the attachment's content) that only its length leaves.
fn base64_len(v: &[u8]) -> Option<u64> {
    let compact: zeroize::Zeroizing<Vec<u8>> =
        zeroize::Zeroizing::new(v.iter().copied().filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n')).collect());
    let mut decoded = zeroize::Zeroizing::new(Vec::new());
    BASE64.decode_vec(&compact[..], &mut decoded).ok()?;
    Some(decoded.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len(b"SGVsbG8="), Some(5));
        assert_eq!(base64_len(b"SGVsbG8h"), Some(6));
        assert_eq!(base64_len(b"SGVs\nbA=="), Some(4));
        assert_eq!(base64_len(b""), Some(0));
        assert_eq!(base64_len(b"SGV"), None);
        assert_eq!(base64_len(b"SG=s"), None);
        assert_eq!(base64_len(b"%%%2"), None);
        // Trailing bits need not be zero; padding must be canonical.
        assert_eq!(base64_len(b"SGVsbG9="), Some(5));
        assert_eq!(base64_len(b"AB=="), Some(1));
        assert_eq!(base64_len(b"AB="), None);
        assert_eq!(base64_len(b"AB=\n="), Some(1));
        assert_eq!(base64_len(b"A==="), None);
        assert_eq!(base64_len(b"===="), None);
        assert_eq!(base64_len(b"A=B="), None);
    }

    #[test]
    fn retired_code_system_namespaces() {
        for known in [
            &b"http://hl7.org/fhir/administrative-gender"[..],
            b"http://hl7.org/fhir/CodeSystem/medication-status",
            b"http://hl7.org/fhir/sid/cvx",
            b"http://hl7.org/fhir/us/core/CodeSystem/us-core-provenance-participant-type",
            b"http://terminology.hl7.org/CodeSystem/v2-0203",
            b"http://loinc.org",
        ] {
            assert!(outside_retired_namespaces(known), "{known:?}");
        }
        for unknown in [&b"http://hl7.org/fhir/v2/0203"[..], b"http://hl7.org/fhir/v3/MaritalStatus"] {
            assert!(!outside_retired_namespaces(unknown), "{unknown:?}");
        }
    }

    #[test]
    fn absolute_uris() {
        for ok in [&b"urn:oid:1.2.3"[..], b"http://example.org/x", b"urn:uuid:abc", b"mailto:a"] {
            assert!(is_absolute_uri(ok), "{ok:?}");
        }
        for bad in [&b"2.16.840.1.113883.6.57"[..], b"ValueSet/x", b"c1", b":x", b"1a:b", b"urn:", b""] {
            assert!(!is_absolute_uri(bad), "{bad:?}");
        }
    }
}
