//! The reference validator's optional checks, as `validate` options (docs/fhir-profiles.md,
//! "Options of the reference validator"). Every one is off by default: without them a
//! validation is what it always was.
//!
//! - `--security-checks` (the reference's `-security-checks`): a `string` or `markdown` value
//!   holding text that looks like an HTML tag (`<script>`, `<a href=...>`) is
//!   `STRING_HTML_CONTENT`, an error, by the reference validator's own test: a `<`, then up to the
//!   next `>` with no `<` between, a letter, word characters, then nothing or white space and
//!   anything (`<br/>` and `a < b > c` are not tags by that test; `<br />` and `<b>` are);
//! - `--no-html-in-markdown` (`-html-in-markdown error`): a `markdown` value holding raw HTML as
//!   CommonMark reads it (an opening or closing tag, a comment, a declaration or processing
//!   instruction; an autolink `<https://...>` or `<a@b.org>` and a `\<` are not) is
//!   `MARKDOWN_HTML`, an error;
//! - `--allow-comments` (`allow-comments`): JSON5 comments in FHIR JSON, read as white space
//!   ([`super::json::parse_with`]);
//! - `--assume-valid-rest-references` (`-assumeValidRestReferences`): a reference that does not
//!   resolve in the document but names its target's type (`Patient/123`, or an absolute URL
//!   ending `.../Patient/123`, a `_history` version aside) is taken to point to a resource of
//!   that type, which must then be one of the element's target types in the profiles
//!   (`PROFILE_REFERENCE_TARGET`; see [`super::profile`]);
//! - `--validate-reference check-exists` (`check-exists-and-type` the same: phiward always checks
//!   the type of a target it finds against the profiles' target types): a reference must
//!   resolve to a resource of the input: `Type/id` to a resource of that type and id (a Bundle
//!   entry, a Parameters' resource, any resource of the input but a contained one), a
//!   `urn:uuid:`/`urn:oid:` to an entry's `fullUrl`; otherwise `REFERENCE_TARGET_ABSENT` at the
//!   Reference, an error;
//! - `--bundle-profile RULE=URL` (`-bundle RULE URL`): entries of the input Bundle validated
//!   against a profile: `Type` (every entry whose resource is a `Type`), `Type:N` (the N-th such,
//!   from 0), `N` (the N-th entry, from 0) ([`super::profile`]);
//! - `--no-example-urls` (`-allow-example-urls false`, the suite's `"examples": false`): a `uri`,
//!   `url` or `canonical` value naming an example domain (`example.org`, `acme.com`, the
//!   reference validator's list) that no loaded conformance resource answers to is
//!   `URL_EXAMPLE`, an error, as the reference's "Example URLs are not allowed in this context".
//!   A resource's own canonical `url` (its identity, not a link) is not judged;
//! - `--now DATETIME` (the reference validator's clock): the current time, an RFC 3339 instant
//!   with an offset, that a profile's `minValueDuration`/`maxValueDuration` bounds are relative
//!   to ([`super::now`]); without it they are not compared (`PROFILE_VALUE_DURATION_NO_NOW`);
//! - `--allow-extension-domain URL` (`-allowed-extension-domain`, the suite's
//!   `allowed-extension-domain`; repeatable) and `--allow-any-extensions`
//!   (`-allow-any-extensions`): an extension whose definition phiward does not have is not
//!   reported when its url starts with one of the domains, or at all
//!   ([`super::extensions::unknown_allowed`]; docs/fhir-profiles.md, "Unknown extensions").
//!   These two relax a check that is on by default;
//! - `--for-publication` (the reference's `-forPublication`, the suite's `"for-publication"`):
//!   what HL7 requires of a resource it publishes. A canonical resource (R4's definitional
//!   resources: CodeSystem, StructureDefinition, ValueSet, ...) whose `url` is under
//!   `http://hl7.org/fhir/` (not a `.../sid/` naming system) must name its owning work group with
//!   the `structuredefinition-wg` extension (`HL7_WORKGROUP_MISSING`, an error: "When HL7 is
//!   publishing a resource, the owning committee must be stated"); a ValueSet, CodeSystem or
//!   ConceptMap that is not contained must have the elements of a shareable one
//!   (`SHAREABLE_ELEMENT_MISSING` at the missing element: `url`, `version`, `title`, `status`,
//!   `experimental` and `description` are errors when its `url` is HL7's (holds `hl7`),
//!   warnings otherwise; `name` a warning). The reference's mode also warns about references to
//!   draft or experimental content, which phiward does not report.
//!
//! What it does not do: fetch anything. An absolute `http(s)` reference that is no entry's
//! `fullUrl` points to another server, which phiward does not ask (no network at run time): it is
//! not reported by `check-exists`. The reference validator's `check-valid` (the target validated
//! against its target profile wherever it is) is not offered.

use crate::diag::{Code, Location, Severity};

use super::definitions as defs;
use super::model::{Document, NONE};
use super::validate::Findings;

/// The optional checks of a validation (all off by default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checks {
    /// `--security-checks`: text that looks like HTML in `string` and `markdown` values.
    pub security: bool,
    /// `--no-html-in-markdown`: raw HTML in `markdown` values.
    pub no_html_in_markdown: bool,
    /// `--allow-comments`: JSON5 comments in FHIR JSON.
    pub allow_comments: bool,
    /// `--assume-valid-rest-references`: an unresolved `Type/id` reference is a `Type`.
    pub assume_valid_rest_references: bool,
    /// `--validate-reference`.
    pub references: ReferencePolicy,
    /// `--bundle-profile`: entries of the input Bundle against profiles.
    pub bundle_profiles: Vec<BundleProfile>,
    /// `--no-example-urls`: URLs of example domains that resolve to nothing loaded (and no
    /// unknown extension of an example domain allowed).
    pub no_example_urls: bool,
    /// `--now`: the current time, which a profile's `minValueDuration`/`maxValueDuration`
    /// bounds are relative to ([`super::now`]); without it they are not compared.
    pub now: Option<super::now::Now>,
    /// `--allow-extension-domain`: unknown extensions whose url starts with one of these are
    /// not reported.
    pub allowed_extension_domains: Vec<String>,
    /// `--allow-any-extensions`: no unknown extension is reported.
    pub allow_any_extensions: bool,
    /// `--for-publication`: what HL7 requires of the resources it publishes.
    pub for_publication: bool,
}

impl Checks {
    /// True when no option is set.
    pub fn is_default(&self) -> bool {
        *self == Checks::default()
    }

    /// The checks the CLI's options name, spelled without their `--` (the MCP argument
    /// `fhir_checks`): `security-checks`, `no-html-in-markdown`, `allow-comments`,
    /// `assume-valid-rest-references`, `validate-reference=POLICY`, `bundle-profile=RULE=URL`,
    /// `no-example-urls`, `now=DATETIME`, `allow-extension-domain=URL`, `allow-any-extensions`,
    /// `for-publication`.
    /// `None` when one is unknown or malformed.
    pub fn from_args<'a>(items: impl IntoIterator<Item = &'a str>) -> Option<Checks> {
        let mut c = Checks::default();
        for item in items {
            match item.split_once('=') {
                None if item == "security-checks" => c.security = true,
                None if item == "no-html-in-markdown" => c.no_html_in_markdown = true,
                None if item == "allow-comments" => c.allow_comments = true,
                None if item == "assume-valid-rest-references" => c.assume_valid_rest_references = true,
                None if item == "no-example-urls" => c.no_example_urls = true,
                None if item == "allow-any-extensions" => c.allow_any_extensions = true,
                Some(("allow-extension-domain", domain)) if !domain.is_empty() => {
                    c.allowed_extension_domains.push(domain.to_owned())
                }
                None if item == "for-publication" => c.for_publication = true,
                Some(("validate-reference", policy)) => c.references = ReferencePolicy::from_name(policy)?,
                Some(("bundle-profile", rule)) => c.bundle_profiles.push(BundleProfile::parse(rule)?),
                Some(("now", instant)) => c.now = Some(super::now::Now::parse(instant)?),
                _ => return None,
            }
        }
        Some(c)
    }

    /// The items of [`Self::from_args`] that give these checks.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, on) in [
            ("security-checks", self.security),
            ("no-html-in-markdown", self.no_html_in_markdown),
            ("allow-comments", self.allow_comments),
            ("assume-valid-rest-references", self.assume_valid_rest_references),
            ("no-example-urls", self.no_example_urls),
            ("allow-any-extensions", self.allow_any_extensions),
            ("for-publication", self.for_publication),
        ] {
            if on {
                out.push(name.to_owned());
            }
        }
        if self.references != ReferencePolicy::Ignore {
            out.push(format!("validate-reference={}", self.references.name()));
        }
        out.extend(self.bundle_profiles.iter().map(|b| format!("bundle-profile={}", b.to_arg())));
        if let Some(now) = &self.now {
            out.push(format!("now={}", now.to_rfc3339()));
        }
        out.extend(self.allowed_extension_domains.iter().map(|d| format!("allow-extension-domain={d}")));
        out
    }
}

/// How references that leave the resource are checked (`--validate-reference`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ReferencePolicy {
    /// Not required to resolve (the default, and the reference validator's).
    #[default]
    Ignore,
    /// Must resolve to a resource of the input.
    CheckExists,
    /// As `CheckExists`; the target's type against the profiles' target types (always checked).
    CheckExistsAndType,
}

impl ReferencePolicy {
    /// The names the CLI and the MCP tool accept.
    pub const NAMES: [&'static str; 3] = ["ignore", "check-exists", "check-exists-and-type"];

    /// The policy's name, of [`Self::NAMES`].
    pub fn name(self) -> &'static str {
        match self {
            ReferencePolicy::Ignore => "ignore",
            ReferencePolicy::CheckExists => "check-exists",
            ReferencePolicy::CheckExistsAndType => "check-exists-and-type",
        }
    }

    /// The policy of a name of [`Self::NAMES`].
    pub fn from_name(name: &str) -> Option<ReferencePolicy> {
        match name {
            "ignore" => Some(ReferencePolicy::Ignore),
            "check-exists" => Some(ReferencePolicy::CheckExists),
            "check-exists-and-type" => Some(ReferencePolicy::CheckExistsAndType),
            _ => None,
        }
    }
}

/// Entries of the input Bundle a profile applies to (`--bundle-profile RULE=URL`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleProfile {
    /// The resource type the rule names (`Patient` of `Patient:0`).
    pub resource_type: Option<&'static str>,
    /// The index the rule names: among the entries of `resource_type`, else among all entries.
    pub index: Option<u32>,
    /// The profile's canonical URL.
    pub profile: String,
}

impl BundleProfile {
    /// Parses `RULE=URL`: `Type`, `Type:N` or `N`, a resource type of R4. `None` when malformed.
    pub fn parse(arg: &str) -> Option<BundleProfile> {
        let (rule, profile) = arg.split_once('=')?;
        if profile.is_empty() || profile.chars().any(char::is_whitespace) {
            return None;
        }
        let ty = |t: &str| defs::type_id(t.as_bytes()).filter(|&id| defs::is_resource(id)).map(defs::type_name);
        let (resource_type, index) = match rule.split_once(':') {
            Some((t, n)) => (Some(ty(t)?), Some(n.parse::<u32>().ok()?)),
            None if rule.bytes().all(|b| b.is_ascii_digit()) => (None, Some(rule.parse::<u32>().ok()?)),
            None => (Some(ty(rule)?), None),
        };
        Some(BundleProfile { resource_type, index, profile: profile.to_owned() })
    }

    /// The `RULE=URL` this was parsed from (in a canonical spelling).
    pub fn to_arg(&self) -> String {
        match (self.resource_type, self.index) {
            (Some(t), Some(n)) => format!("{t}:{n}={}", self.profile),
            (Some(t), None) => format!("{t}={}", self.profile),
            (None, Some(n)) => format!("{n}={}", self.profile),
            (None, None) => format!("={}", self.profile),
        }
    }

    /// The resources (nodes) of the root Bundle's entries the rule selects.
    pub(super) fn select(&self, doc: &Document) -> Vec<u32> {
        let mut out = Vec::new();
        if doc.nodes().is_empty() || !doc.node(0).is_resource() || type_name(doc, 0) != "Bundle" {
            return out;
        }
        let mut of_type = 0u32;
        for (k, entry) in doc.named(0, "entry").enumerate() {
            let Some(r) = doc.named(entry, "resource").find(|&r| doc.node(r).is_resource()) else { continue };
            let matches_type = self.resource_type.is_none_or(|t| type_name(doc, r) == t);
            let position = match self.resource_type {
                Some(_) if matches_type => {
                    of_type += 1;
                    of_type - 1
                }
                Some(_) => continue,
                None => u32::try_from(k).unwrap_or(u32::MAX),
            };
            if matches_type && self.index.is_none_or(|n| n == position) {
                out.push(r);
            }
        }
        out
    }
}

/// `bytes` past a byte order mark, white space and the JSON5 comments before the first value
/// (`--allow-comments`: what format detection looks at).
pub fn skip_leading_comments(bytes: &[u8]) -> &[u8] {
    let mut rest = crate::detect::skip_bom_and_space(bytes);
    loop {
        let after = if rest.starts_with(b"//") {
            memchr::memchr(b'\n', rest).map_or(&rest[rest.len()..], |k| &rest[k..])
        } else if rest.starts_with(b"/*") {
            match memchr::memmem::find(&rest[2..], b"*/") {
                Some(k) => &rest[2 + k + 2..],
                None => return rest,
            }
        } else {
            return rest;
        };
        rest = crate::detect::skip_bom_and_space(after);
    }
}

/// The name of a node's type (`""` when untyped).
fn type_name(doc: &Document, i: u32) -> &'static str {
    doc.node(i).ty.map_or("", defs::type_name)
}

/// The value of a primitive node, to compare with the document's own ids and URLs.
#[expect(
    clippy::disallowed_methods,
    reason = "a validator: it compares a reference with the ids and fullUrls of the same input; what it returns is value-free"
)]
fn value(doc: &Document, i: u32) -> &[u8] {
    doc.value(i)
}

/// The checks of the options that look at values and references (the profile-side options are
/// read by [`super::profile`], comments by the reader). `structures`: the loaded packages, whose
/// canonical URLs resolve (`--no-example-urls`).
pub(super) fn check(doc: &Document, checks: &Checks, structures: Option<&crate::structure::Context>, f: &mut Findings) {
    if checks.security || checks.no_html_in_markdown {
        for i in 0..doc.nodes().len() as u32 {
            let node = doc.node(i);
            if node.is_unknown() || !node.has_value() {
                continue;
            }
            let ty = type_name(doc, i);
            if checks.security && (ty == "string" || ty == "markdown") && doc.value_span(i).classify(looks_like_html) {
                f.push(Code::STRING_HTML_CONTENT, Location::Fhir(doc.path(i)));
            }
            if checks.no_html_in_markdown && ty == "markdown" && doc.value_span(i).classify(markdown_has_html) {
                f.push(Code::MARKDOWN_HTML, Location::Fhir(doc.path(i)));
            }
        }
    }
    if checks.references != ReferencePolicy::Ignore {
        references_exist(doc, f);
    }
    if checks.no_example_urls {
        example_urls(doc, structures, f);
    }
    if checks.for_publication {
        for_publication(doc, f);
    }
}

/// The canonical resources of R4 (the reference validator's list for 4.0): the resources whose
/// `url` is their canonical identity.
const CANONICAL_RESOURCES: [&str; 29] = [
    "ActivityDefinition",
    "CapabilityStatement",
    "ChargeItemDefinition",
    "CodeSystem",
    "CompartmentDefinition",
    "ConceptMap",
    "EffectEvidenceSynthesis",
    "EventDefinition",
    "Evidence",
    "EvidenceVariable",
    "ExampleScenario",
    "GraphDefinition",
    "ImplementationGuide",
    "Library",
    "Measure",
    "MessageDefinition",
    "NamingSystem",
    "OperationDefinition",
    "PlanDefinition",
    "Questionnaire",
    "ResearchDefinition",
    "ResearchElementDefinition",
    "RiskEvidenceSynthesis",
    "SearchParameter",
    "StructureDefinition",
    "StructureMap",
    "TerminologyCapabilities",
    "TestScript",
    "ValueSet",
];

/// The extension naming the HL7 work group that owns a resource.
const EXT_WORKGROUP: &[u8] = b"http://hl7.org/fhir/StructureDefinition/structuredefinition-wg";

/// What a shareable ValueSet, CodeSystem or ConceptMap has (the reference validator's
/// `checkShareable...`): the element, and whether it is an error (HL7's own) or only a warning.
const SHAREABLE: [(&str, bool); 7] = [
    ("url", true),
    ("version", true),
    ("title", true),
    ("name", false),
    ("status", true),
    ("experimental", true),
    ("description", true),
];

/// `--for-publication`: each resource of the document, as HL7's publication rules judge it.
fn for_publication(doc: &Document, f: &mut Findings) {
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if !node.is_resource() || node.is_unknown() {
            continue;
        }
        let ty = type_name(doc, i);
        if !CANONICAL_RESOURCES.contains(&ty) {
            continue;
        }
        let url = doc.named(i, "url").find(|&u| doc.node(u).has_value()).map(|u| value(doc, u));
        let hl7_org = url.is_some_and(|u| u.starts_with(b"http://hl7.org/fhir/"));
        let sid = url.is_some_and(|u| memchr::memmem::find(u, b"http://hl7.org/fhir/sid").is_some());
        if hl7_org && !sid && !has_extension(doc, i, EXT_WORKGROUP) {
            f.push(Code::HL7_WORKGROUP_MISSING, Location::Fhir(doc.path(i)));
        }
        let contained = node.parent != NONE && node.name == "contained";
        if contained || !matches!(ty, "ValueSet" | "CodeSystem" | "ConceptMap") {
            continue;
        }
        let hl7 = url.is_some_and(|u| memchr::memmem::find(u, b"hl7").is_some());
        let Some(root) = node.ty.map(|t| defs::ElemRef { ty: t, idx: 0 }) else { continue };
        for (name, required) in SHAREABLE {
            if doc.named(i, name).next().is_some() {
                continue;
            }
            let Some((elem, _)) = defs::child(root, name.as_bytes()) else { continue };
            let severity = if hl7 && required { Severity::Error } else { Severity::Warning };
            f.push_with(Code::SHAREABLE_ELEMENT_MISSING, severity, Location::Fhir(doc.path_of_missing(i, elem)));
        }
    }
}

/// True when node `i` has an extension with `url`.
fn has_extension(doc: &Document, i: u32, url: &[u8]) -> bool {
    doc.named(i, "extension").any(|e| doc.named(e, "url").any(|u| doc.node(u).has_value() && value(doc, u) == url))
}

/// The domains the reference validator takes for examples (its `example.org`/`acme.com` test,
/// a substring of the URL).
const EXAMPLE_DOMAINS: [&[u8]; 2] = [b"example.org", b"acme.com"];

/// True when a URL names one of the example domains.
pub fn is_example_url(v: &[u8]) -> bool {
    EXAMPLE_DOMAINS.iter().any(|d| memchr::memmem::find(v, d).is_some())
}

/// `--no-example-urls`: each `uri`, `url` or `canonical` value naming an example domain that no
/// loaded conformance resource answers to (a profile, an extension's definition, a value set of
/// a package) is `URL_EXAMPLE`; a resource's own `url` (its canonical identity) is not a link.
fn example_urls(doc: &Document, structures: Option<&crate::structure::Context>, f: &mut Findings) {
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.is_unknown() || !node.has_value() || !matches!(type_name(doc, i), "uri" | "url" | "canonical") {
            continue;
        }
        if node.name == "url" && node.parent != NONE && doc.node(node.parent).is_resource() {
            continue;
        }
        let v = value(doc, i);
        if !is_example_url(v) {
            continue;
        }
        let loaded = structures
            .is_some_and(|ctx| std::str::from_utf8(v).is_ok_and(|url| ctx.conformance.resolve("", url).is_some()));
        if !loaded {
            f.push(Code::URL_EXAMPLE, Location::Fhir(doc.path(i)));
        }
    }
}

/// The reference validator's test for text that looks like an HTML tag (`containsHtmlTags`):
/// some `<` whose text up to the next `>` (no `<` between) is a letter, word characters, then
/// nothing or white space and anything.
pub fn looks_like_html(v: &[u8]) -> bool {
    let mut rest = v;
    while let Some(lt) = memchr::memchr(b'<', rest) {
        rest = &rest[lt + 1..];
        let gt = memchr::memchr(b'>', rest);
        let next_lt = memchr::memchr(b'<', rest);
        let Some(gt) = gt else { return false };
        if next_lt.is_some_and(|n| n < gt) {
            continue;
        }
        let inner = &rest[..gt];
        let Some((&first, tail)) = inner.split_first() else { continue };
        if !first.is_ascii_alphabetic() {
            continue;
        }
        let word = tail.iter().position(|&b| !(b.is_ascii_alphanumeric() || b == b'_')).unwrap_or(tail.len());
        match tail.get(word) {
            None => return true,
            Some(b) if b.is_ascii_whitespace() => return true,
            Some(_) => {}
        }
    }
    false
}

/// True when a markdown value holds raw HTML as CommonMark reads it (0.30, 6.6): `<` followed by
/// a tag name (a letter, then letters, digits, `-`) ending in white space, `/` or `>`; `</` and a
/// tag name; `<!` (a comment, a declaration, CDATA) or `<?`. An autolink (`<scheme:...>`,
/// `<local@domain>`) and a backslash-escaped `\<` are text.
pub fn markdown_has_html(v: &[u8]) -> bool {
    let mut at = 0usize;
    while let Some(k) = memchr::memchr(b'<', &v[at..]) {
        let lt = at + k;
        at = lt + 1;
        if lt > 0 && v[lt - 1] == b'\\' {
            continue;
        }
        let rest = &v[lt + 1..];
        match rest.first() {
            Some(b'!' | b'?') => return true,
            Some(b'/') if rest.get(1).is_some_and(u8::is_ascii_alphabetic) => return true,
            Some(b) if b.is_ascii_alphabetic() => {
                let name = rest.iter().position(|&b| !(b.is_ascii_alphanumeric() || b == b'-')).unwrap_or(rest.len());
                match rest.get(name) {
                    // `<http:...>` or `<a+b.c:...>`: an autolink's scheme, not a tag.
                    Some(b':' | b'+' | b'.' | b'@') => {}
                    Some(b) if b.is_ascii_whitespace() || *b == b'/' || *b == b'>' => return true,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    false
}

/// `--validate-reference check-exists`: every `Reference.reference` must resolve to a resource
/// of the input (see the module's doc).
fn references_exist(doc: &Document, f: &mut Findings) {
    // Resources of the input by (type, id), contained ones aside; and every entry's fullUrl.
    let mut by_type_id: Vec<(&'static str, &[u8])> = Vec::new();
    let mut full_urls: Vec<&[u8]> = Vec::new();
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.is_unknown() {
            continue;
        }
        if node.is_resource() && node.name != "contained" {
            if let Some(id) = doc.named(i, "id").find(|&x| doc.node(x).has_value()) {
                by_type_id.push((type_name(doc, i), value(doc, id)));
            }
        } else if node.name == "fullUrl" && node.has_value() && node.parent != NONE {
            full_urls.push(value(doc, i));
        }
    }
    by_type_id.sort_unstable();
    full_urls.sort_unstable();
    for i in 0..doc.nodes().len() as u32 {
        let node = doc.node(i);
        if node.is_unknown() || type_name(doc, i) != "Reference" {
            continue;
        }
        let Some(r) = doc.named(i, "reference").find(|&x| doc.node(x).has_value()) else { continue };
        let target = value(doc, r);
        if target.starts_with(b"#") || target.contains(&b'?') {
            // A contained resource (ref-1 and the Bundle rules judge those), a conditional
            // reference (a transaction's search, resolved by the server).
            continue;
        }
        let found = if full_urls.binary_search(&target).is_ok() {
            true
        } else if target.starts_with(b"urn:") {
            false
        } else if target.contains(&b':') {
            // Another server's resource: not fetched, not judged.
            true
        } else {
            match type_and_id(target) {
                Some((ty, id)) => {
                    by_type_id.binary_search(&(ty, id)).is_ok()
                        || full_urls.iter().any(|u| {
                            u.ends_with(target) && u.len() > target.len() && u[u.len() - target.len() - 1] == b'/'
                        })
                }
                // Not a `Type/id`: the syntax rules (ref-1, the reference format) judge it.
                None => true,
            }
        };
        if !found {
            f.push(Code::REFERENCE_TARGET_ABSENT, Location::Fhir(doc.path(i)));
        }
    }
}

/// The resource type and id a reference names: `Type/id` or `.../Type/id`, a trailing
/// `/_history/version` aside; the type must be one of R4's resource types.
pub fn type_and_id(reference: &[u8]) -> Option<(&'static str, &[u8])> {
    let bare = match memchr::memmem::find(reference, b"/_history/") {
        Some(k) => &reference[..k],
        None => reference,
    };
    let mut parts = bare.rsplitn(3, |&b| b == b'/');
    let (Some(id), Some(ty)) = (parts.next(), parts.next()) else { return None };
    if id.is_empty() {
        return None;
    }
    let t = defs::type_id(ty).filter(|&t| defs::is_resource(t))?;
    Some((defs::type_name(t), id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_by_the_reference_validators_test() {
        for yes in ["Standard <script>x</script>", "<b>", "<a href=\"x\">", "<br />", "x<p>y"] {
            assert!(looks_like_html(yes.as_bytes()), "{yes}");
        }
        for no in ["a < b > c", "<br/>", "</b>", "<3>", "x <", "x > y", "<>", "plain"] {
            assert!(!looks_like_html(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn markdown_html_as_commonmark_reads_it() {
        for yes in ["<resource type>\\<id>", "a <b>bold</b>", "</p>", "<!-- c -->", "<br/>", "<?php"] {
            assert!(markdown_has_html(yes.as_bytes()), "{yes}");
        }
        for no in ["<https://example.org>", "<a@b.org>", "a < b", "\\<b>", "1 <2", "**bold**", "x <"] {
            assert!(!markdown_has_html(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn bundle_profile_rules() {
        let p = BundleProfile::parse("Patient:0=http://x/P").expect("a rule");
        assert_eq!((p.resource_type, p.index, p.profile.as_str()), (Some("Patient"), Some(0), "http://x/P"));
        let p = BundleProfile::parse("2=http://x/P").expect("an index");
        assert_eq!((p.resource_type, p.index), (None, Some(2)));
        let p = BundleProfile::parse("Composition=http://x/C").expect("a type");
        assert_eq!((p.resource_type, p.index), (Some("Composition"), None));
        for bad in ["Patient:0", "Nothing:0=http://x", "Patient:x=http://x", "=http://x", "Patient=", "string=u"] {
            assert!(BundleProfile::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn checks_round_trip_through_their_arguments() {
        let all = Checks {
            security: true,
            no_html_in_markdown: true,
            allow_comments: true,
            assume_valid_rest_references: true,
            references: ReferencePolicy::CheckExists,
            bundle_profiles: vec![BundleProfile::parse("Patient:0=http://x/P").expect("a rule")],
            no_example_urls: true,
            now: super::super::now::Now::parse("2026-01-31T12:00:00.25+01:00"),
            allowed_extension_domains: vec!["https://fhir.nhs.uk/StructureDefinition".to_owned()],
            allow_any_extensions: true,
            for_publication: true,
        };
        assert!(all.now.is_some());
        let args = all.to_args();
        assert_eq!(Checks::from_args(args.iter().map(String::as_str)), Some(all));
        assert_eq!(Checks::from_args([]), Some(Checks::default()));
        for bad in [
            "--security-checks",
            "security",
            "validate-reference=all",
            "bundle-profile=x",
            "allow-comments=1",
            "now=2026-01-31",
            "now",
            "allow-extension-domain=",
        ] {
            assert_eq!(Checks::from_args([bad]), None, "{bad}");
        }
    }

    #[test]
    fn example_domains() {
        for yes in ["http://example.org/x", "https://www.acme.com/fhir", "http://repository.example.org/a"] {
            assert!(is_example_url(yes.as_bytes()), "{yes}");
        }
        for no in ["http://hl7.org/fhir", "http://example.com/x", "urn:uuid:1"] {
            assert!(!is_example_url(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn reference_types() {
        assert_eq!(type_and_id(b"Patient/1"), Some(("Patient", &b"1"[..])));
        assert_eq!(type_and_id(b"http://s/fhir/Group/g/_history/2"), Some(("Group", &b"g"[..])));
        assert_eq!(type_and_id(b"Nothing/1"), None);
        assert_eq!(type_and_id(b"urn:uuid:1"), None);
        assert_eq!(type_and_id(b"Patient/"), None);
    }
}
