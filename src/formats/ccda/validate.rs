//! Validation of a C-CDA document: the CDA R2.0 base, then the C-CDA templates.
//!
//! The base ([`super::tables::CLASSES`], from the logical models): each element against its
//! class, from `ClinicalDocument` down: children known (`CCDA_ELEMENT_UNKNOWN`), in schema
//! order (`CCDA_ELEMENT_OUT_OF_ORDER`), as many as the cardinality allows
//! (`CCDA_ELEMENT_MISSING`, `CCDA_ELEMENT_TOO_MANY`; an element with a nullFlavor needs none of
//! its required parts); attributes known (`CCDA_ATTRIBUTE_UNKNOWN`), present when required
//! (`CCDA_ATTRIBUTE_MISSING`), equal to a fixed value (`CCDA_FIXED_VALUE_MISMATCH`), of their
//! kind (`CCDA_VALUE_INVALID`: boolean, integer, decimal, code; `CCDA_TS_INVALID`: a TS);
//! text only where the type has text (`CCDA_TEXT_UNEXPECTED`); the data type chosen by
//! `xsi:type` among the element's types, required where the element has several
//! (`CCDA_DATATYPE_INVALID`); the data type rules: an II has a root or a nullFlavor, its root
//! an OID, UUID or RUID (`CCDA_II_INVALID`); a coded value with a code has a code system, an
//! OID or UUID (`CCDA_CD_INVALID`); a PQ's unit is UCUM (`CCDA_PQ_INVALID`); a nullFlavor is
//! one of CDANullFlavor (`CCDA_NULLFLAVOR_INVALID`). A section's narrative block is a value:
//! its markup is not checked.
//!
//! The templates ([`super::tables::TEMPLATES`], from npm hl7.cda.us.ccda): a template applies
//! to the element that declares its templateId (root and extension); its fixed attribute
//! values (classCode, moodCode, codes; `CCDA_TEMPLATE_VALUE_MISMATCH`), the elements it
//! requires beyond the base (`CCDA_TEMPLATE_ELEMENT_MISSING`), and the templated sections and
//! entries it requires (`CCDA_TEMPLATE_CONTENT_MISSING`); where HL7's R2.1 schematron fixes
//! another value at the same place, both are accepted. A templateId whose root is known with
//! another extension only (an R1.1 templateId without extension, an older or newer version) is
//! checked for the element's classCode and moodCode only, and reported once
//! (`CCDA_TEMPLATE_VERSION_OTHER`); so is every template of an R1.1 document (its US Realm
//! Header's templateId without extension).
//!
//! The R2.1 templates ([`super::r21_tables::R21_TEMPLATES`], from HL7's C-CDA R2.1
//! schematron's error phase): each assertion whose XPath the generator could translate, an
//! [`X`] evaluated here with XPath 1.0's meaning, where an element declares the R2.1 templateId
//! (root, that version's extension) under the element name of the rule's context: in an R2.1
//! document (a document templateId of extension `2015-08-01`) every one, elsewhere those the
//! 5.0 package does not publish with the same extension, never in an R1.1 document. A failed
//! assertion is a finding located where its path leads, with `/template:root:ext/CONF:n-n`;
//! one already made at that place with that code (by 5.0, or by the same CONF through another
//! template) is not repeated.
//!
//! The root is a `ClinicalDocument` or a fragment (a section, an entry...: see
//! [`root_class`]). Without `xsi:type` an element is of its declared type where the element's
//! other types specialize it (effectiveTime: SXCM_TS); the type must be named only where they
//! do not (observation/value).
//!
//! Bindings ([`super::vs_tables`]): the base's (every class's attributes and coded children)
//! and a template's (at a path under its element, where its other rules apply), required or
//! extensible, to a value set the generator could expand from the bundled definitions: a code
//! outside it is `CCDA_BINDING` (error; extensible: warning); a value set not bundled is
//! `CCDA_BINDING_UNCHECKED` (information), once per document and value set.
//!
//! Locations are element names and indexes (`.../entry[2]/act/@moodCode`), with the template
//! (`/template:root:extension`) for a template's finding and the value set
//! (`/valueSet:url`) for a binding's: never a value.
//!
//! What it does not do: evaluate the templates' invariants (FHIRPath), expand a value set
//! that is not bundled, check ID/IDREF uniqueness, or the narrative's markup.

use crate::diag::{CcdaPosition, Code, Diagnostic, Location, Severity};
use crate::formats::xml::Attr as XAttr;

use super::base::{Assert, AssertKind, AttrNs, Class, Op, Prim, R21Template, Rule, Step, Strength, Template, X};
use super::r21_tables::R21_TEMPLATES;
use super::read::{Document, Ns, name_id};
use super::tables::{CLASSES, NULL_FLAVORS};
use super::vs_tables::{BASE_BINDINGS, VALUE_SETS};
use super::write::template_of;

/// Most findings kept for one document.
pub const MAX_FINDINGS: usize = 1000;

/// What to check.
#[derive(Copy, Clone, Debug, Default)]
pub struct Options {
    /// Only what reading found (nothing for C-CDA: reading is fatal or clean).
    pub syntax_only: bool,
    /// Warnings become errors.
    pub strict: bool,
}

struct V<'d> {
    doc: &'d Document,
    out: Vec<Diagnostic>,
    /// A C-CDA R1.1 document: its US Realm Header templateId has no extension, and no other
    /// declares one. Its templates are R1.1's, whatever their templateIds (R1.1 and 5.0 share
    /// some without extension: an age observation's code differs).
    r11: bool,
    /// A C-CDA R2.1 document: a document templateId of R2.1's extension (`2015-08-01`: the US
    /// Realm Header, the CCD...). Its templates are R2.1's, those the 5.0 package publishes
    /// again too.
    r21: bool,
    /// A document of C-CDA 3.0 or later (the 5.0 package's version of the templates), by
    /// [`post_r21`]. Elsewhere a templateId without extension that R2.1 defines is R2.1's
    /// template, not 5.0's.
    v50: bool,
    /// The value sets not bundled already reported (`CCDA_BINDING_UNCHECKED`, once each).
    unchecked: Vec<u16>,
}

/// The attribute a coded element's binding finding names.
static CODE: &str = "code";

/// The first templateId extension of C-CDA 3.0 (`2022-06-01`): every later version's templates
/// are versioned from it on (R2.1's and its companion guides' extensions are earlier).
const POST_R21_EXTENSION: &[u8] = b"2022-06-01";

/// True when the document is of C-CDA 3.0 or later: a templateId of the ClinicalDocument with
/// an extension of [`POST_R21_EXTENSION`] or later. A fragment has no document templateId: the
/// evidence is in its templateIds, any of them: one of C-CDA 3.0 or later makes it 5.0's; else
/// one of an R2.1 version that 5.0 has replaced (an R2.1 template the package publishes with
/// another extension only: Problem Observation `2015-08-01`) makes it R2.1's; else (no version
/// of either alone) it is checked as the package's, 5.0.
fn post_r21(doc: &Document) -> bool {
    let tree = doc.tree();
    let ext_of = |t: u32| doc.attr(t, Ns::None, b"extension");
    let later = |t: u32| {
        ext_of(t).is_some_and(|a| {
            tree.value(a.value).classify(|v| {
                v.len() == 10 && v >= POST_R21_EXTENSION && v.iter().all(|c| c.is_ascii_digit() || *c == b'-')
            })
        })
    };
    if doc.local(0) == b"ClinicalDocument" {
        return doc.children_named(0, b"templateId").any(later);
    }
    let ids: Vec<u32> =
        (0..tree.elements().len() as u32).filter(|&e| doc.ns(e) == Ns::V3 && doc.local(e) == b"templateId").collect();
    if ids.iter().any(|&t| later(t)) {
        return true;
    }
    let replaced_r21 = |t: u32| {
        let (Some(root), Some(ext)) = (doc.attr(t, Ns::None, b"root"), ext_of(t)) else { return false };
        let known_other =
            template_of(doc, t).is_some_and(|x| !tree.value(ext.value).classify(|v| v == x.extension.as_bytes()));
        known_other
            && R21_TEMPLATES.iter().any(|x| {
                tree.value(root.value).classify(|v| v == x.root.as_bytes())
                    && tree.value(ext.value).classify(|v| v == x.extension.as_bytes())
            })
    };
    !ids.iter().any(|&t| replaced_r21(t))
}

/// The US Realm Header's templateId root.
const US_REALM_HEADER: &[u8] = b"2.16.840.1.113883.10.20.22.1.1";

/// The extension of every document template of C-CDA R2.1 (the US Realm Header, CCD,
/// Discharge Summary...): a document declaring one is an R2.1 document.
const R21_DOCUMENT_EXTENSION: &[u8] = b"2015-08-01";

/// A class of [`CLASSES`] named by an `xsi:type` (an index of a static table: value-free).
#[derive(Copy, Clone, Debug)]
struct ClassRef(Option<u32>);

impl crate::phi::sealed::Sealed for ClassRef {}
impl crate::phi::ValueFree for ClassRef {}

/// True when `class` is a class of the CDA's RIM model (`Observation`, `Section`,
/// `Section.component`), not a data type (`CD`, `IVL_TS`, `AD.item.city`): the first part of
/// its name has a lower-case letter.
fn is_rim_class(class: &Class) -> bool {
    class.name.split('.').next().is_some_and(|n| n.bytes().any(|c| c.is_ascii_lowercase()))
}

/// The class of a name.
fn class_named(name: &[u8]) -> Option<usize> {
    CLASSES.iter().position(|c| c.name.as_bytes() == name)
}

impl V<'_> {
    fn push(&mut self, code: Code, pos: CcdaPosition) {
        if self.out.len() < MAX_FINDINGS {
            self.out.push(Diagnostic::new(code, Location::Ccda(pos)));
        }
    }

    fn at(&self, e: u32) -> CcdaPosition {
        self.doc.position(e)
    }

    fn at_attr(&self, e: u32, name: &'static &'static str) -> CcdaPosition {
        let mut p = self.doc.position(e);
        p.attr = Some(name);
        p
    }

    fn has_null_flavor(&self, e: u32) -> bool {
        self.doc.attr(e, Ns::None, b"nullFlavor").is_some()
    }

    fn value_is(&self, a: &XAttr, f: impl FnOnce(&[u8]) -> bool) -> bool {
        self.doc.tree().value(a.value).classify(f)
    }

    /// Element `e` against class `c`.
    fn element(&mut self, e: u32, c: usize) {
        let Some(class) = CLASSES.get(c) else { return };
        let doc = self.doc;
        let tree = doc.tree();
        let null = self.has_null_flavor(e);
        // Attributes.
        let first = tree.elements().get(e as usize).map_or(0, |x| x.attrs.start as usize);
        for (k, a) in tree.attrs_of(e).iter().enumerate() {
            let ns = doc.attr_ns(first + k);
            let sdtc = match ns {
                Ns::None => false,
                Ns::Sdtc => true,
                _ => continue,
            };
            let local = doc.attr_local(a);
            let Some(def) = class.attrs.iter().find(|d| d.sdtc == sdtc && d.name.as_bytes() == local) else {
                self.push(Code::CCDA_ATTRIBUTE_UNKNOWN, self.at(e));
                continue;
            };
            if def.max == 0 {
                self.push(Code::CCDA_ATTRIBUTE_UNKNOWN, self.at_attr(e, &def.name));
                continue;
            }
            if let Some(fixed) = def.fixed
                && !self.value_is(a, |v| v == fixed.as_bytes())
            {
                self.push(Code::CCDA_FIXED_VALUE_MISMATCH, self.at_attr(e, &def.name));
                continue;
            }
            let ok = match def.kind {
                Prim::Bool => self.value_is(a, |v| v == b"true" || v == b"false"),
                Prim::Int => self.value_is(a, is_integer),
                Prim::Decimal => self.value_is(a, is_decimal),
                Prim::Code => self.value_is(a, is_code_list),
                Prim::Id => self.value_is(a, |v| !v.is_empty()),
                Prim::Ts => {
                    if !self.value_is(a, is_ts) {
                        self.push(Code::CCDA_TS_INVALID, self.at_attr(e, &def.name));
                    }
                    true
                }
                Prim::Str | Prim::Base64 => true,
            };
            if !ok {
                self.push(Code::CCDA_VALUE_INVALID, self.at_attr(e, &def.name));
            } else if def.name == "nullFlavor" && !self.value_is(a, |v| NULL_FLAVORS.iter().any(|n| n.as_bytes() == v))
            {
                self.push(Code::CCDA_NULLFLAVOR_INVALID, self.at_attr(e, &def.name));
            }
        }
        if !null {
            for def in class.attrs.iter().filter(|d| d.min > 0) {
                let ns = if def.sdtc { Ns::Sdtc } else { Ns::None };
                if doc.attr(e, ns, def.name.as_bytes()).is_none() {
                    self.push(Code::CCDA_ATTRIBUTE_MISSING, self.at_attr(e, &def.name));
                }
            }
        }
        self.datatype_rules(e, class, null);
        self.base_bindings(e, c, class);
        if !class.text && tree.texts_of(e).next().is_some() {
            self.push(Code::CCDA_TEXT_UNEXPECTED, self.at(e));
        }
        // Children.
        let extensible = is_rim_class(class);
        let mut counts = vec![0u32; class.elems.len()];
        let mut cursor = 0;
        for child in tree.children(e) {
            let sdtc = match doc.ns(child) {
                Ns::V3 => false,
                Ns::Sdtc => true,
                // CDA R2 §1.4 (extensibility): locally defined markup in a namespace of its own
                // in a CDA class (not in a data type's content): not checked, reported.
                Ns::Other if extensible => {
                    self.push(Code::CCDA_EXTENSION_ELEMENT, self.at(child));
                    continue;
                }
                _ => {
                    self.push(Code::CCDA_ELEMENT_UNKNOWN, self.at(child));
                    continue;
                }
            };
            let local = doc.local(child);
            let Some(k) = class.elems.iter().position(|d| d.sdtc == sdtc && d.name.as_bytes() == local) else {
                self.push(Code::CCDA_ELEMENT_UNKNOWN, self.at(child));
                continue;
            };
            let def = &class.elems[k];
            if !class.unordered {
                if k < cursor {
                    self.push(Code::CCDA_ELEMENT_OUT_OF_ORDER, self.at(child));
                } else {
                    cursor = k;
                }
            }
            counts[k] = counts[k].saturating_add(1);
            if counts[k] > def.max {
                self.push(Code::CCDA_ELEMENT_TOO_MANY, self.at(child));
            }
            if def.narrative {
                continue;
            }
            if let Some(t) = self.child_type(child, def) {
                self.element(child, t);
            }
        }
        if !null {
            for (k, def) in class.elems.iter().enumerate() {
                if counts[k] < def.min {
                    let mut p = self.at(e);
                    p.attr = None;
                    self.push_missing(p, def);
                }
            }
        }
        self.templates(e);
    }

    fn push_missing(&mut self, mut p: CcdaPosition, def: &'static super::base::Elem) {
        // The missing element's own name, as the last step.
        p.push(name_id(def.name.as_bytes()), 0);
        p.child = true;
        self.push(Code::CCDA_ELEMENT_MISSING, p);
    }

    /// The class of `child` by its declaration and `xsi:type`.
    fn child_type(&mut self, child: u32, def: &super::base::Elem) -> Option<usize> {
        let declared = def.types.first().map(|&t| usize::from(t));
        let xsi = self.doc.attr(child, Ns::Xsi, b"type");
        match xsi {
            None => {
                // Without `xsi:type` an element is of its declared type (the schema's default),
                // which the element's other types specialize (effectiveTime: SXCM_TS, then
                // IVL_TS, PIVL_TS...); where they do not (observation/value: ANY, abstract, then
                // CD, PQ...), the type must be named.
                let abstract_base = def.types.iter().skip(1).any(|&t| !is_specialization(usize::from(t), declared));
                if def.xsi && def.types.len() > 1 && abstract_base && !self.has_null_flavor(child) {
                    self.push(Code::CCDA_DATATYPE_INVALID, self.at(child));
                }
                declared
            }
            Some(a) => {
                let ClassRef(named) = self.doc.tree().value(a.value).classify(|v| {
                    let local = v.rsplit(|&b| b == b':').next().unwrap_or(v);
                    ClassRef(class_named(local).map(|i| i as u32))
                });
                match named {
                    Some(t) if !def.xsi || def.types.iter().any(|&d| u32::from(d) == t) => Some(t as usize),
                    Some(t) if is_specialization(t as usize, declared) => Some(t as usize),
                    _ => {
                        self.push(Code::CCDA_DATATYPE_INVALID, self.at(child));
                        declared
                    }
                }
            }
        }
    }

    fn datatype_rules(&mut self, e: u32, class: &Class, null: bool) {
        let doc = self.doc;
        let base = class.name.split('.').next().unwrap_or(class.name);
        let name_attr = |n: &str| class.attrs.iter().find(|a| a.name == n).map(|a| &a.name);
        match base {
            "II" => match doc.attr(e, Ns::None, b"root") {
                None if !null => self.push(Code::CCDA_II_INVALID, self.at(e)),
                Some(r) if !self.value_is(r, |v| is_oid(v) || is_uuid(v) || is_ruid(v)) => {
                    if let Some(n) = name_attr("root") {
                        self.push(Code::CCDA_II_INVALID, self.at_attr(e, n));
                    }
                }
                _ => {}
            },
            "CD" | "CE" | "CV" | "CO" => {
                let code = doc.attr(e, Ns::None, b"code");
                let system = doc.attr(e, Ns::None, b"codeSystem");
                if code.is_some() && system.is_none() && !null {
                    if let Some(n) = name_attr("codeSystem") {
                        self.push(Code::CCDA_CD_INVALID, self.at_attr(e, n));
                    }
                } else if let Some(s) = system
                    && !self.value_is(s, |v| is_oid(v) || is_uuid(v))
                    && let Some(n) = name_attr("codeSystem")
                {
                    self.push(Code::CCDA_CD_INVALID, self.at_attr(e, n));
                }
            }
            "PQ" | "IVXB_PQ" | "IVL_PQ" => {
                if let Some(u) = doc.attr(e, Ns::None, b"unit")
                    && !self.value_is(u, crate::formats::fhir::ucum::valid)
                    && let Some(n) = name_attr("unit")
                {
                    self.push(Code::CCDA_PQ_INVALID, self.at_attr(e, n));
                }
            }
            _ => {}
        }
    }

    /// The bindings of class `c` (the logical models') on element `e`: its attributes' and its
    /// coded children's (a child's binding is checked here, where its class is known, for
    /// the child: `statusCode` of an act).
    fn base_bindings(&mut self, e: u32, c: usize, class: &'static Class) {
        let start = BASE_BINDINGS.partition_point(|b| usize::from(b.class) < c);
        for b in BASE_BINDINGS[start..].iter().take_while(|b| usize::from(b.class) == c) {
            if b.attr {
                // An attribute the class fixes (Procedure.classCode `PROC`) is checked against
                // its fixed value (`CCDA_FIXED_VALUE_MISMATCH`), which lies in the value set;
                // an SDTC attribute is not bound.
                let Some(def) = class.attrs.get(usize::from(b.index)).filter(|a| a.fixed.is_none() && !a.sdtc) else {
                    continue;
                };
                self.binding(e, Some(&def.name), b.strength, b.value_set, None);
            } else {
                let Some(def) = class.elems.get(usize::from(b.index)) else { continue };
                let ns = if def.sdtc { Ns::Sdtc } else { Ns::V3 };
                let doc = self.doc;
                for k in doc.tree().children(e).filter(|&k| doc.ns(k) == ns && doc.local(k) == def.name.as_bytes()) {
                    self.binding(k, None, b.strength, b.value_set, None);
                }
            }
        }
    }

    /// A binding on element `e`: its attribute `attr` (a code, or a list of codes: `use`), or
    /// (None) its code with its codeSystem, a translation's standing for it. Nothing where the
    /// element has a nullFlavor or no code (cardinality is the other rules'). A value set not
    /// bundled is reported once per document (`CCDA_BINDING_UNCHECKED`).
    fn binding(
        &mut self,
        e: u32,
        attr: Option<&'static &'static str>,
        strength: Strength,
        value_set: u16,
        rule: Option<&'static &'static str>,
    ) {
        let Some(set) = VALUE_SETS.get(usize::from(value_set)).filter(|s| !s.ucum) else { return };
        let doc = self.doc;
        let held = match attr {
            Some(a) => doc.attr(e, Ns::None, a.as_bytes()),
            None if self.has_null_flavor(e) => None,
            None => doc.attr(e, Ns::None, b"code"),
        };
        let Some(held) = held else { return };
        // The position (a walk to the root) only for a finding.
        let position = |v: &Self| {
            let mut p = v.at(e);
            p.attr = Some(attr.unwrap_or(&CODE));
            p.rule = rule;
            p.value_set = Some(&set.url);
            p
        };
        if !set.bundled {
            if !self.unchecked.contains(&value_set) {
                self.unchecked.push(value_set);
                let p = position(self);
                self.push(Code::CCDA_BINDING_UNCHECKED, p);
            }
            return;
        }
        let ok = match attr {
            Some(_) => self.value_is(held, |v| {
                v.split(u8::is_ascii_whitespace).filter(|t| !t.is_empty()).all(|t| in_value_set(set.codes, t, None))
            }),
            None => {
                let coded = |x: u32| {
                    let Some(code) = doc.attr(x, Ns::None, b"code") else { return false };
                    let system = doc.attr(x, Ns::None, b"codeSystem");
                    let tree = doc.tree();
                    tree.value(code.value).classify(|c| match system {
                        Some(s) => tree.value(s.value).classify(|s| in_value_set(set.codes, c, Some(s))),
                        None => in_value_set(set.codes, c, None),
                    })
                };
                coded(e) || doc.children_named(e, b"translation").any(coded)
            }
        };
        if ok || self.out.len() >= MAX_FINDINGS {
            return;
        }
        let p = position(self);
        // A template binding its element to the value set the base binds it to already (Result
        // Observation's interpretationCode): the base's finding stands for both.
        let base_made = rule.is_some()
            && self.out.iter().rev().any(|d| {
                d.code == Code::CCDA_BINDING
                    && match d.location {
                        Location::Ccda(mut q) => {
                            q.rule = rule;
                            q == p
                        }
                        _ => false,
                    }
            });
        if !base_made {
            let severity = match strength {
                Strength::Required => Severity::Error,
                Strength::Extensible => Severity::Warning,
            };
            self.out.push(Diagnostic::new(Code::CCDA_BINDING, Location::Ccda(p)).with_severity(severity));
        }
    }

    /// The templates element `e` declares.
    fn templates(&mut self, e: u32) {
        let doc = self.doc;
        let ids: Vec<u32> = doc.children_named(e, b"templateId").collect();
        let start = self.out.len();
        // The templateIds the 5.0 package publishes with the same extension.
        let mut published = Vec::new();
        for &t in &ids {
            let Some(tpl) = template_of(doc, t) else { continue };
            let exact = !self.r11
                && match doc.attr(t, Ns::None, b"extension") {
                    Some(x) => self.value_is(x, |v| v == tpl.extension.as_bytes()),
                    None => tpl.extension.is_empty(),
                };
            // A templateId without extension that R2.1 defines too, in a document before C-CDA
            // 3.0: R2.1's template (its assertions, below); 5.0's tightens some (Progress
            // Toward Goal Observation's effectiveTime), so only its classCode and moodCode.
            let r21_own = exact && tpl.extension.is_empty() && !self.v50 && r21_of(doc, e, t).next().is_some();
            if exact && !r21_own {
                published.push(t);
            }
            if !exact {
                let mut p = self.at(t);
                p.rule = Some(&tpl.key);
                self.push(Code::CCDA_TEMPLATE_VERSION_OTHER, p);
            }
            self.apply(e, tpl, exact && !r21_own);
        }
        // The R2.1 templates this element declares: in an R2.1 document every one; elsewhere
        // those the 5.0 package does not publish with the same extension (a 5.0 document's
        // `2015-08-01` section is 5.0's definition of it, which holds 5.0's entries); none in
        // an R1.1 document, whose templates without extension are R1.1's.
        if !self.r11 {
            let r21 = self.r21;
            for &t in ids.iter().filter(|t| r21 || !published.contains(t)) {
                for tpl in r21_of(doc, e, t) {
                    for a in tpl.asserts {
                        self.assert(e, a, start);
                    }
                }
            }
        }
    }

    /// Evaluates assertion `a` of an R2.1 template on element `e` (or the elements its context
    /// selects under `e`); a finding that repeats one made at the same place with the same code
    /// since `start` (5.0's rule, another template's inherited assertion) is not repeated.
    fn assert(&mut self, e: u32, a: &'static Assert, start: usize) {
        for x in self.select(e, a.context) {
            if self.eval(x, &a.test) {
                continue;
            }
            let (at, attr, missing) = self.locate(x, &a.test);
            let mut p = self.at(at);
            if let Some(m) = missing {
                p.push(name_id(m.as_bytes()), 0);
                p.child = true;
            }
            p.attr = attr;
            let code = match a.kind {
                AssertKind::Element => Code::CCDA_TEMPLATE_ELEMENT_MISSING,
                AssertKind::Content => Code::CCDA_TEMPLATE_CONTENT_MISSING,
                AssertKind::Value => Code::CCDA_TEMPLATE_VALUE_MISMATCH,
                AssertKind::Datatype => Code::CCDA_DATATYPE_INVALID,
            };
            // A finding already made here with this code by a 5.0 rule, or by the same CONF
            // (an assertion inherited by two templates the element declares).
            let conf = |k: &str| k.split_once("/CONF:").map(|(_, c)| c.to_owned());
            let seen = self.out.get(start..).unwrap_or_default().iter().any(|d| {
                d.code == code
                    && match d.location {
                        Location::Ccda(mut q) => {
                            let other = q.rule.and_then(|r| conf(r));
                            q.rule = None;
                            q == p && (other.is_none() || other == conf(a.key))
                        }
                        _ => false,
                    }
            });
            if !seen {
                p.rule = Some(&a.key);
                self.push(code, p);
            }
        }
    }

    /// The elements `path` selects under `e` (XPath child steps with predicates).
    fn select(&self, e: u32, path: &'static [Step]) -> Vec<u32> {
        let mut set = vec![e];
        for step in path {
            let ns = if step.sdtc { Ns::Sdtc } else { Ns::V3 };
            set = set
                .iter()
                .flat_map(|&x| self.doc.tree().children(x))
                .filter(|&c| {
                    self.doc.ns(c) == ns
                        && self.doc.local(c) == step.name.as_bytes()
                        && step.preds.iter().all(|p| self.eval(c, p))
                })
                .collect();
        }
        set
    }

    /// How many elements `path` selects under `e`, without collecting them (each element has
    /// one parent: the node set of child steps holds no element twice).
    fn count(&self, e: u32, path: &'static [Step]) -> usize {
        let [step, rest @ ..] = path else { return 1 };
        let ns = if step.sdtc { Ns::Sdtc } else { Ns::V3 };
        self.doc
            .tree()
            .children(e)
            .filter(|&c| {
                self.doc.ns(c) == ns
                    && self.doc.local(c) == step.name.as_bytes()
                    && step.preds.iter().all(|p| self.eval(c, p))
            })
            .map(|c| self.count(c, rest))
            .sum()
    }

    /// An assertion's test on element `e`, with XPath 1.0's meaning.
    fn eval(&self, e: u32, x: &'static X) -> bool {
        match x {
            X::Or(xs) => xs.iter().any(|y| self.eval(e, y)),
            X::And(xs) => xs.iter().all(|y| self.eval(e, y)),
            X::Not(y) => !self.eval(e, y),
            X::Count { path, op, n } => {
                let c = u32::try_from(self.count(e, path)).unwrap_or(u32::MAX);
                match op {
                    Op::Eq => c == *n,
                    Op::Ne => c != *n,
                    Op::Gt => c > *n,
                    Op::Ge => c >= *n,
                    Op::Lt => c < *n,
                    Op::Le => c <= *n,
                }
            }
            X::Attr { ns, name, value } => {
                let ns = match ns {
                    AttrNs::None => Ns::None,
                    AttrNs::Sdtc => Ns::Sdtc,
                    AttrNs::Xsi => Ns::Xsi,
                };
                match self.doc.attr(e, ns, name.as_bytes()) {
                    None => false,
                    Some(a) => value.is_none_or(|v| self.value_is(a, |x| x == v.as_bytes())),
                }
            }
        }
    }

    /// Where a failed test is reported: the deepest element its path reaches by unique names
    /// (short of a templated child: the element that should hold it), with the attribute a
    /// fixed value names, or the child an element count misses.
    fn locate(&self, e: u32, x: &'static X) -> (u32, Option<&'static &'static str>, Option<&'static str>) {
        match x {
            X::Attr { ns: AttrNs::None, name, .. } => (e, Some(name), None),
            // `not(a) or a[...]`: where `a` is.
            X::Or([X::Not(_), y]) => self.locate(e, y),
            X::Count { path, .. } => {
                let mut at = e;
                for (i, step) in path.iter().enumerate() {
                    let templated = step.name == "templateId"
                        || step
                            .preds
                            .iter()
                            .any(|p| matches!(p, X::Count { path: [s, ..], .. } if s.name == "templateId"));
                    if templated {
                        return (at, None, None);
                    }
                    let ns = if step.sdtc { Ns::Sdtc } else { Ns::V3 };
                    let mut named = self
                        .doc
                        .tree()
                        .children(at)
                        .filter(|&c| self.doc.ns(c) == ns && self.doc.local(c) == step.name.as_bytes());
                    let (Some(one), None) = (named.next(), named.next()) else {
                        let none = self
                            .doc
                            .tree()
                            .children(at)
                            .all(|c| self.doc.ns(c) != ns || self.doc.local(c) != step.name.as_bytes());
                        let missing = none && i + 1 == path.len() && step.preds.is_empty();
                        return (at, None, missing.then_some(step.name));
                    };
                    at = one;
                    if i + 1 == path.len() {
                        return match step.preds {
                            [p] => self.locate(at, p),
                            _ => (at, None, None),
                        };
                    }
                }
                (at, None, None)
            }
            _ => (e, None, None),
        }
    }

    /// The elements at `path` (names joined by `/`) under `e`.
    fn at_path(&self, e: u32, path: &str) -> Vec<u32> {
        let mut set = vec![e];
        if path.is_empty() {
            return set;
        }
        for step in path.split('/') {
            set = set.iter().flat_map(|&x| self.doc.children_named(x, step.as_bytes()).collect::<Vec<_>>()).collect();
        }
        set
    }

    fn apply(&mut self, e: u32, tpl: &'static Template, exact: bool) {
        let doc = self.doc;
        for rule in tpl.rules {
            match rule {
                // Another version of the template (an R1.1 document's templateId without
                // extension, an R2.1 one's older extension): its codes and status may differ
                // (an R1.1 allergy problem act's code was LOINC 48765-2, R2.1's is CONC), so
                // only the element's own classCode and moodCode are checked.
                Rule::Attr { path, name, .. } | Rule::Fixed { path, name, .. }
                    if !(exact || path.is_empty() && matches!(*name, "classCode" | "moodCode")) => {}
                Rule::Attr { path, name, value } | Rule::Fixed { path, name, value } => {
                    let required = matches!(rule, Rule::Attr { .. });
                    for x in self.at_path(e, path) {
                        if self.has_null_flavor(x) {
                            continue;
                        }
                        let ok = match doc.attr(x, Ns::None, name.as_bytes()) {
                            // `|` separates the values accepted (5.0's, then R2.1's).
                            Some(a) => self.value_is(a, |v| value.split('|').any(|x| x.as_bytes() == v)),
                            None => !required,
                        };
                        if !ok {
                            let mut p = self.at(x);
                            p.attr = Some(name);
                            p.rule = Some(&tpl.key);
                            self.push(Code::CCDA_TEMPLATE_VALUE_MISMATCH, p);
                        }
                    }
                }
                Rule::Bind { path, attr, strength, value_set } if exact => {
                    // The rule is static: its attribute name is a `&'static &'static str`.
                    let attr = Some(attr).filter(|a| !a.is_empty());
                    for x in self.at_path(e, path) {
                        self.binding(x, attr, *strength, *value_set, Some(&tpl.key));
                    }
                }
                Rule::Required { path, .. }
                    if exact && !self.has_null_flavor(e) && doc.children_named(e, path.as_bytes()).next().is_none() =>
                {
                    let mut p = self.at(e);
                    p.push(name_id(path.as_bytes()), 0);
                    p.child = true;
                    p.rule = Some(&tpl.key);
                    self.push(Code::CCDA_TEMPLATE_ELEMENT_MISSING, p);
                }
                Rule::Contains { path, name, value } if exact => {
                    let holders = self.at_path(e, path);
                    let found = holders.iter().any(|&h| {
                        doc.children_named(h, name.as_bytes()).any(|c| {
                            doc.children_named(c, b"templateId").any(|t| {
                                doc.attr(t, Ns::None, b"root")
                                    .is_some_and(|r| self.value_is(r, |v| v == value.as_bytes()))
                            })
                        })
                    });
                    if !found {
                        // At the deepest element of the path, short of its last step, that
                        // is there (a document's structuredBody, an act itself).
                        let mut at = e;
                        let mut prefix = String::new();
                        let steps: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
                        for step in steps.iter().take(steps.len().saturating_sub(1)) {
                            if !prefix.is_empty() {
                                prefix.push('/');
                            }
                            prefix.push_str(step);
                            match self.at_path(e, &prefix).first() {
                                Some(&x) => at = x,
                                None => break,
                            }
                        }
                        let mut p = self.at(at);
                        p.rule = Some(value);
                        self.push(Code::CCDA_TEMPLATE_CONTENT_MISSING, p);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The R2.1 templates templateId `t` of element `e` declares: its root, its extension (none:
/// `""`) and the element's name.
fn r21_of(doc: &Document, e: u32, t: u32) -> impl Iterator<Item = &'static R21Template> + '_ {
    let tree = doc.tree();
    let root = doc.attr(t, Ns::None, b"root");
    let ext = doc.attr(t, Ns::None, b"extension");
    let start = root.map_or(R21_TEMPLATES.len(), |r| {
        R21_TEMPLATES.partition_point(|x| tree.value(r.value).classify(|v| x.root.as_bytes() < v))
    });
    R21_TEMPLATES[start..]
        .iter()
        .take_while(move |x| root.is_some_and(|r| tree.value(r.value).classify(|v| x.root.as_bytes() == v)))
        .filter(move |x| {
            let same_ext = match ext {
                Some(a) => tree.value(a.value).classify(|v| v == x.extension.as_bytes()),
                None => x.extension.is_empty(),
            };
            same_ext && doc.local(e) == x.element.as_bytes()
        })
}

/// True when `code` (of code system OID `system`, when the element names one) is in the
/// expansion `codes` (sorted by code); an expansion's system without an OID matches any.
fn in_value_set(codes: &[(&str, &str)], code: &[u8], system: Option<&[u8]>) -> bool {
    let start = codes.partition_point(|(_, c)| c.as_bytes() < code);
    codes[start..]
        .iter()
        .take_while(|(_, c)| c.as_bytes() == code)
        .any(|(s, _)| s.is_empty() || system.is_none_or(|x| x == s.as_bytes()))
}

/// True when class `t` is `declared` or derives from it by name (IVL_TS from SXCM_TS...): the
/// logical models flatten bases, so this compares the attribute and element lists' prefixes.
fn is_specialization(t: usize, declared: Option<usize>) -> bool {
    let (Some(tc), Some(dc)) = (CLASSES.get(t), declared.and_then(|d| CLASSES.get(d))) else { return false };
    dc.elems.iter().all(|d| tc.elems.iter().any(|x| x.name == d.name && x.sdtc == d.sdtc))
        && dc.attrs.iter().all(|d| tc.attrs.iter().any(|x| x.name == d.name && x.sdtc == d.sdtc))
}

/// The class of a document's root element: `ClinicalDocument`, or, for a fragment (a
/// section, an entry, a participation given alone), the class of the element of that name in
/// the CDA classes, the one named like the element (`act`: Act) where several classes hold an
/// element of that name, else the first in table order. None: not a CDA element name.
pub fn root_class(local: &[u8]) -> Option<usize> {
    if local == b"ClinicalDocument" {
        return class_named(local);
    }
    let mut first = None;
    for class in CLASSES {
        for e in class.elems.iter().filter(|e| !e.sdtc && e.name.as_bytes() == local) {
            for &t in e.types {
                let t = usize::from(t);
                let Some(tc) = CLASSES.get(t) else { continue };
                let named = tc.name.len() == local.len()
                    && tc
                        .name
                        .bytes()
                        .zip(local)
                        .enumerate()
                        .all(|(i, (a, &b))| if i == 0 { a.eq_ignore_ascii_case(&b) } else { a == b });
                if named {
                    return Some(t);
                }
                first = first.or(Some(t));
            }
        }
    }
    first
}

/// The class of a top-level element: [`root_class`], unless the element's children are not
/// all of that class while another class of an element of that name holds them: a `component`
/// whose child is a `section` is a structured body's (CDA's Component3), one holding an entry
/// (an `observation`, an `act`...) an organizer's (Component4), one holding a `structuredBody`
/// the document's (Component2). Candidates in table order.
pub fn fragment_class(doc: &Document, e: u32) -> Option<usize> {
    let local = doc.local(e);
    let named = root_class(local)?;
    let fits = |t: usize| {
        CLASSES.get(t).is_some_and(|c| {
            doc.tree().children(e).all(|ch| {
                let sdtc = match doc.ns(ch) {
                    Ns::V3 => false,
                    Ns::Sdtc => true,
                    _ => return true,
                };
                c.elems.iter().any(|d| d.sdtc == sdtc && d.name.as_bytes() == doc.local(ch))
            })
        })
    };
    if fits(named) {
        return Some(named);
    }
    let candidates = CLASSES
        .iter()
        .flat_map(|class| class.elems.iter().filter(|d| !d.sdtc && d.name.as_bytes() == local))
        .flat_map(|d| d.types.iter().map(|&t| usize::from(t)));
    let mut best = None;
    for t in candidates {
        if fits(t) {
            best = Some(t);
            break;
        }
    }
    Some(best.unwrap_or(named))
}

/// Validates a document.
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    // What reading found: a fragment read with namespaces it does not declare.
    let mut read = Vec::new();
    if doc.implied_namespaces()
        && let Some(&r) = doc.roots().first()
    {
        read.push(Diagnostic::new(Code::CCDA_FRAGMENT_NAMESPACES_IMPLIED, Location::Ccda(doc.position(r))));
    }
    if options.syntax_only {
        return read;
    }
    let header = |with_extension: bool| {
        doc.children_named(0, b"templateId").any(|t| {
            doc.attr(t, Ns::None, b"root").is_some_and(|r| doc.tree().value(r.value).classify(|v| v == US_REALM_HEADER))
                && doc.attr(t, Ns::None, b"extension").is_some() == with_extension
        })
    };
    let r11 = doc.local(0) == b"ClinicalDocument" && header(false) && !header(true);
    let r21 = doc.local(0) == b"ClinicalDocument"
        && doc.children_named(0, b"templateId").any(|t| {
            doc.attr(t, Ns::None, b"extension")
                .is_some_and(|a| doc.tree().value(a.value).classify(|v| v == R21_DOCUMENT_EXTENSION))
        });
    let v50 = post_r21(doc);
    let mut v = V { doc, out: Vec::new(), r11, r21, v50, unchecked: Vec::new() };
    for &r in doc.roots() {
        if let Some(c) = fragment_class(doc, r) {
            v.element(r, c);
        }
    }
    let mut out = read;
    out.append(&mut v.out);
    if options.strict {
        for d in &mut out {
            if d.severity == Severity::Warning {
                d.severity = Severity::Error;
            }
        }
    }
    out
}

/// `[+-]?[0-9]+`.
pub fn is_integer(v: &[u8]) -> bool {
    let d = v.strip_prefix(b"-").or_else(|| v.strip_prefix(b"+")).unwrap_or(v);
    !d.is_empty() && d.iter().all(u8::is_ascii_digit)
}

/// `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`.
pub fn is_decimal(v: &[u8]) -> bool {
    let d = v.strip_prefix(b"-").or_else(|| v.strip_prefix(b"+")).unwrap_or(v);
    let (mantissa, exp) = match d.iter().position(|&b| b == b'e' || b == b'E') {
        Some(p) => (&d[..p], Some(&d[p + 1..])),
        None => (d, None),
    };
    let mut parts = mantissa.splitn(2, |&b| b == b'.');
    let int = parts.next().unwrap_or_default();
    let frac = parts.next();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let ok = digits(int) && frac.is_none_or(digits) && (!int.is_empty() || frac.is_some_and(|f| !f.is_empty()));
    ok && exp.is_none_or(is_integer)
}

/// A code, or a white-space separated list of codes (`use="HP WP"`): no empty value, no
/// leading or trailing white space.
pub fn is_code_list(v: &[u8]) -> bool {
    !v.is_empty() && !v[0].is_ascii_whitespace() && !v[v.len() - 1].is_ascii_whitespace()
}

/// An OID: `[0-2](\.(0|[1-9][0-9]*))+`.
pub fn is_oid(v: &[u8]) -> bool {
    let mut arcs = v.split(|&b| b == b'.');
    let first = arcs.next().unwrap_or_default();
    if !matches!(first, b"0" | b"1" | b"2") {
        return false;
    }
    let mut n = 0;
    for a in arcs {
        if a.is_empty() || !a.iter().all(u8::is_ascii_digit) || (a.len() > 1 && a[0] == b'0') {
            return false;
        }
        n += 1;
    }
    n > 0
}

/// A UUID: `8-4-4-4-12` hex digits.
pub fn is_uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter()
            .enumerate()
            .all(|(i, &b)| if matches!(i, 8 | 13 | 18 | 23) { b == b'-' } else { b.is_ascii_hexdigit() })
}

/// A RUID: a letter, then letters, digits and hyphens.
pub fn is_ruid(v: &[u8]) -> bool {
    v.first().is_some_and(u8::is_ascii_alphabetic) && v.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A TS: `YYYY[MM[DD[HH[MM[SS[.S{1,4}]]]]]][(+|-)HHMM]`, each part in its range.
pub fn is_ts(v: &[u8]) -> bool {
    let (main, zone) = match v.iter().position(|&b| b == b'+' || b == b'-') {
        Some(p) => (&v[..p], Some(&v[p + 1..])),
        None => (v, None),
    };
    let (digits, frac) = match main.iter().position(|&b| b == b'.') {
        Some(p) => (&main[..p], Some(&main[p + 1..])),
        None => (main, None),
    };
    if !digits.iter().all(u8::is_ascii_digit) || !matches!(digits.len(), 4 | 6 | 8 | 10 | 12 | 14) {
        return false;
    }
    if let Some(f) = frac
        && (digits.len() != 14 || f.is_empty() || f.len() > 4 || !f.iter().all(u8::is_ascii_digit))
    {
        return false;
    }
    let num = |a: usize, b: usize| digits.get(a..b).map(|s| s.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')));
    let year = num(0, 4).unwrap_or(0);
    if let Some(m) = num(4, 6) {
        if !(1..=12).contains(&m) {
            return false;
        }
        if let Some(d) = num(6, 8) {
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
            let days = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            if d == 0 || d > days {
                return false;
            }
        }
    }
    if num(8, 10).is_some_and(|h| h > 23) || num(10, 12).is_some_and(|m| m > 59) || num(12, 14).is_some_and(|s| s > 60)
    {
        return false;
    }
    match zone {
        None => true,
        Some(z) => {
            z.len() == 4
                && z.iter().all(u8::is_ascii_digit)
                && u32::from(z[0] - b'0') * 10 + u32::from(z[1] - b'0') <= 14
                && u32::from(z[2] - b'0') * 10 + u32::from(z[3] - b'0') <= 59
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The findings of `binding` on the document's first `statusCode` (its root's child) bound
    /// to v3 ActStatus with `strength`.
    fn status_binding(xml: &str, strength: Strength) -> Vec<Diagnostic> {
        let doc = super::super::read::read(xml.as_bytes().to_vec(), &crate::limits::Limits::default())
            .unwrap_or_else(|_| panic!("test document reads"));
        let vs = VALUE_SETS.iter().position(|v| v.url.ends_with("/v3-ActStatus")).expect("ActStatus is bundled");
        let mut v = V { doc: &doc, out: Vec::new(), r11: false, r21: false, v50: true, unchecked: Vec::new() };
        let status = doc.children_named(0, b"statusCode").next().expect("a statusCode");
        v.binding(status, None, strength, u16::try_from(vs).expect("index"), None);
        v.out
    }

    #[test]
    fn binding_strength_gives_severity() {
        let bad = r#"<act xmlns="urn:hl7-org:v3"><statusCode code="ordered"/></act>"#;
        let req = status_binding(bad, Strength::Required);
        assert_eq!(req.len(), 1);
        assert_eq!((req[0].code, req[0].severity), (Code::CCDA_BINDING, Severity::Error));
        // No extensible binding is in the tables today (the logical models and the 5.0 package
        // bind required, preferred or example): the strength still decides the severity.
        let ext = status_binding(bad, Strength::Extensible);
        assert_eq!((ext[0].code, ext[0].severity), (Code::CCDA_BINDING, Severity::Warning));
        for ok in [
            r#"<act xmlns="urn:hl7-org:v3"><statusCode code="active"/></act>"#,
            r#"<act xmlns="urn:hl7-org:v3"><statusCode nullFlavor="UNK"/></act>"#,
            r#"<act xmlns="urn:hl7-org:v3"><statusCode/></act>"#,
        ] {
            assert!(status_binding(ok, Strength::Required).is_empty(), "{ok}");
        }
    }

    #[test]
    fn binding_matches_system_and_translations() {
        let codes: &[(&str, &str)] = &[("2.16.840.1.113883.5.14", "active"), ("", "any")];
        assert!(in_value_set(codes, b"active", Some(b"2.16.840.1.113883.5.14")));
        assert!(in_value_set(codes, b"active", None));
        assert!(!in_value_set(codes, b"active", Some(b"2.16.840.1.113883.6.96")));
        assert!(in_value_set(codes, b"any", Some(b"1.2.3")));
        assert!(!in_value_set(codes, b"other", None));
        // A translation in the value set stands for the code.
        let vs = VALUE_SETS.iter().position(|v| v.url.ends_with("/CDAObservationInterpretation")).expect("bundled");
        let xml = r#"<observation xmlns="urn:hl7-org:v3"><interpretationCode code="LX" codeSystem="2.16.840.1.113883.5.83"><translation code="L" codeSystem="2.16.840.1.113883.5.83"/></interpretationCode></observation>"#;
        let doc = super::super::read::read(xml.as_bytes().to_vec(), &crate::limits::Limits::default())
            .unwrap_or_else(|_| panic!("test document reads"));
        let mut v = V { doc: &doc, out: Vec::new(), r11: false, r21: false, v50: true, unchecked: Vec::new() };
        let e = doc.children_named(0, b"interpretationCode").next().expect("element");
        v.binding(e, None, Strength::Required, u16::try_from(vs).expect("index"), None);
        assert!(v.out.is_empty());
    }

    #[test]
    fn ts_syntax() {
        for ok in [
            "2024",
            "202401",
            "20240229",
            "2024022912",
            "202402291230",
            "20240229123059",
            "20240229123059.1234",
            "20240229123059-0500",
            "2024+0100",
        ] {
            assert!(is_ts(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            "24",
            "20231",
            "20230229",
            "20241301",
            "2024010124",
            "20240101126",
            "20240101120000.",
            "20240101-05",
            "2024-01-01",
            "202401011200.5",
        ] {
            assert!(!is_ts(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn identifiers() {
        assert!(is_oid(b"2.16.840.1.113883.19.5"));
        assert!(!is_oid(b"2.16.840.01"));
        assert!(!is_oid(b"3.1"));
        assert!(!is_oid(b"2"));
        assert!(is_uuid(b"0a1b2c3d-0000-4000-8000-00000000abcd"));
        assert!(!is_uuid(b"0a1b2c3d00004000800000000000abcd"));
        assert!(is_ruid(b"ABC-1"));
        assert!(
            is_decimal(b"1.5") && is_decimal(b"-.5") && is_decimal(b"2e3") && !is_decimal(b".") && !is_decimal(b"1,5")
        );
    }
}
