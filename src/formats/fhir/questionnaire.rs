//! A QuestionnaireResponse checked against its Questionnaire (FHIR R4, QuestionnaireResponse
//! "Validating QuestionnaireResponses"), and the rules of a Questionnaire's own item tree.
//!
//! The Questionnaire is found by the response's `questionnaire` canonical (`url` or
//! `url|version`): a resource contained in the response (`#id`), a Questionnaire elsewhere in
//! the same document (a Bundle's entry, a contained resource) with that `url` (and `version`),
//! or one a [`Resolve`] hook supplies from outside (a conformance store, a test's supporting
//! files). One that cannot be found is `QR_QUESTIONNAIRE_UNKNOWN`, a warning: nothing else is
//! checked then; a canonical that names another type of resource (the hook's, or one of the
//! core namespace such as `http://hl7.org/fhir/ValueSet/x`) is `QR_QUESTIONNAIRE_WRONG_TYPE`.
//!
//! Checked, item by item, level by level: the `linkId` of each response item exists among the
//! Questionnaire's items at the same level (`QR_ITEM_UNKNOWN`); a non-repeating item answered
//! in several response items (`QR_ITEM_REPEATED`); `group`, `display` and `question` items
//! hold no answers (`QR_ANSWER_NOT_ALLOWED`); each answer's type is the one the item's type
//! asks for (`QR_ANSWER_TYPE`; `choice` and `open-choice` take a Coding, date, time, integer
//! or string, and with `answerOption`s one of their types, `open-choice` a string too); several
//! answers to a non-repeating item
//! (`QR_ANSWER_REPEATED`) or outside `questionnaire-minOccurs`/`maxOccurs`
//! (`QR_ANSWER_COUNT`); required items (and required groups' sub-items) answered when the
//! response is `completed` or `amended` (`QR_REQUIRED_MISSING`; information otherwise);
//! `enableWhen` (every operator, `enableBehavior` all/any, the answers nearest to the item so
//! that each repetition of a group reads its own; SDC `enableWhenExpression` and the Finnish
//! PHR enableWhen extension through the FHIRPath engine; a disabled item's children are
//! disabled too): a disabled item has no answer (`QR_ANSWER_DISABLED`) and is not required;
//! answers among the `answerOption`s (`QR_ANSWER_NOT_IN_OPTIONS`) and an exclusive option
//! chosen alone (`QR_ANSWER_EXCLUSIVE`); Codings in the `answerValueSet` when its content can
//! be known offline (contained, in the document, a core value set, or supplied by the hook;
//! `QR_ANSWER_NOT_IN_VALUESET`; `QR_VALUESET_UNKNOWN`, a warning, when it cannot be found);
//! `maxLength` and the `minLength` extension (`QR_ANSWER_LENGTH`), the `regex` extension
//! (`QR_ANSWER_FORMAT`), `minValue`/`maxValue` and SDC `minQuantity`/`maxQuantity`
//! (`QR_ANSWER_RANGE`; quantities compared in UCUM units that differ only by a metric prefix,
//! others cannot be compared and are reported), `maxDecimalPlaces` (`QR_ANSWER_DECIMALS`),
//! `mimeType` and `maxSize` of attachments (`QR_ATTACHMENT_TYPE`, `QR_ATTACHMENT_SIZE`),
//! `questionnaire-referenceResource` and the resource type of a reference answer
//! (`QR_REFERENCE_TYPE`), `questionnaire-unitOption` (`QR_QUANTITY_UNIT`).
//!
//! On a Questionnaire: an `enableWhen` whose question is the item itself or one of its
//! descendants (`QUESTIONNAIRE_ENABLEWHEN_INNER`).
//!
//! Every finding is located by the response's (or Questionnaire's) element path, never by a
//! value: linkIds, codes and answers are compared here and go nowhere else.
//!
//! What it does not do: FHIRPath constraints of the SDC extensions, terminology beyond value
//! sets whose codes are listed (no filters, no whole code systems but the bundled ones),
//! displays of Codings, the order of items, `initial` values, or a Questionnaire's
//! `effectivePeriod` and `status`.

use std::cmp::Ordering;

use crate::diag::{Code, Location, Severity};
use crate::limits::Limits;

use super::definitions as defs;
use super::model::Document;
use super::validate::Findings;

/// How a validation gets a conformance resource (a Questionnaire, a ValueSet) it cannot find
/// in the document: by canonical URL, `url` or `url|version`; `None` when it is not known.
/// The resource is a FHIR JSON object (a conformance resource: not patient data).
pub type Resolve<'s> = &'s dyn Fn(&str) -> Option<&'s serde_json::Value>;

/// Most items of one Questionnaire read (a bound on the work per response).
const MAX_ITEMS: usize = 10_000;

/// Most nesting of Questionnaire items followed.
const MAX_DEPTH: usize = 64;

/// Most bytes of a `regex` extension's pattern compiled.
const MAX_PATTERN: usize = 1_000;

#[expect(
    clippy::disallowed_methods,
    reason = "a validator: it compares values of the response with the Questionnaire's; what it returns is value-free"
)]
fn text(doc: &Document, i: u32) -> &[u8] {
    doc.value(i)
}

/// The value of the first child `name` of `i` that has one.
pub(super) fn child_text<'d>(doc: &'d Document, i: u32, name: &'static str) -> Option<&'d [u8]> {
    doc.named(i, name).find(|&c| doc.node(c).has_value()).map(|c| text(doc, c))
}

/// The type name of node `i` (`""` when it has none).
fn type_of(doc: &Document, i: u32) -> &'static str {
    doc.node(i).ty.map_or("", defs::type_name)
}

/// The value node of the first extension of `i` with `url`.
fn extension(doc: &Document, i: u32, url: &str) -> Option<u32> {
    doc.named(i, "extension")
        .find(|&e| child_text(doc, e, "url") == Some(url.as_bytes()))
        .and_then(|e| doc.named(e, "value").next())
}

/// Every value node of the extensions of `i` with `url`.
fn extensions<'d>(doc: &'d Document, i: u32, url: &'d str) -> impl Iterator<Item = u32> + 'd {
    doc.named(i, "extension")
        .filter(move |&e| child_text(doc, e, "url") == Some(url.as_bytes()))
        .filter_map(move |e| doc.named(e, "value").next())
}

const EXT: &str = "http://hl7.org/fhir/StructureDefinition/";
const SDC: &str = "http://hl7.org/fhir/uv/sdc/StructureDefinition/";
const FIPHR_ENABLE_WHEN: &str = "http://phr.kanta.fi/StructureDefinition/fiphr-ext-questionnaire-enablewhen";

/// An item's `type`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ItemType {
    Group,
    Display,
    Question,
    Boolean,
    Decimal,
    Integer,
    Date,
    DateTime,
    Time,
    String,
    Text,
    Url,
    Choice,
    OpenChoice,
    Attachment,
    Reference,
    Quantity,
    Unknown,
}

impl ItemType {
    fn of(code: &[u8]) -> ItemType {
        match code {
            b"group" => ItemType::Group,
            b"display" => ItemType::Display,
            b"question" => ItemType::Question,
            b"boolean" => ItemType::Boolean,
            b"decimal" => ItemType::Decimal,
            b"integer" => ItemType::Integer,
            b"date" => ItemType::Date,
            b"dateTime" => ItemType::DateTime,
            b"time" => ItemType::Time,
            b"string" => ItemType::String,
            b"text" => ItemType::Text,
            b"url" => ItemType::Url,
            b"choice" => ItemType::Choice,
            b"open-choice" => ItemType::OpenChoice,
            b"attachment" => ItemType::Attachment,
            b"reference" => ItemType::Reference,
            b"quantity" => ItemType::Quantity,
            _ => ItemType::Unknown,
        }
    }

    /// The answer type of a question type (`None`: no answer, or several).
    fn answer_type(self) -> Option<&'static str> {
        Some(match self {
            ItemType::Boolean => "boolean",
            ItemType::Decimal => "decimal",
            ItemType::Integer => "integer",
            ItemType::Date => "date",
            ItemType::DateTime => "dateTime",
            ItemType::Time => "time",
            ItemType::String | ItemType::Text => "string",
            ItemType::Url => "uri",
            ItemType::Attachment => "Attachment",
            ItemType::Reference => "Reference",
            ItemType::Quantity => "Quantity",
            _ => return None,
        })
    }
}

/// One item of the Questionnaire.
struct Item<'q> {
    node: u32,
    link_id: &'q [u8],
    kind: ItemType,
    required: bool,
    repeats: bool,
    children: Vec<usize>,
}

/// A Questionnaire read from its document.
struct Def<'q> {
    doc: &'q Document,
    /// The Questionnaire's resource node.
    root: u32,
    items: Vec<Item<'q>>,
    top: Vec<usize>,
}

impl<'q> Def<'q> {
    fn read(doc: &'q Document, root: u32) -> Def<'q> {
        let mut def = Def { doc, root, items: Vec::new(), top: Vec::new() };
        def.top = def.read_items(root, 0);
        def
    }

    fn read_items(&mut self, parent: u32, depth: usize) -> Vec<usize> {
        let mut out = Vec::new();
        if depth >= MAX_DEPTH {
            return out;
        }
        let doc = self.doc;
        for i in doc.named(parent, "item") {
            if self.items.len() >= MAX_ITEMS {
                break;
            }
            let flag = |name| child_text(doc, i, name) == Some(b"true".as_slice());
            let k = self.items.len();
            self.items.push(Item {
                node: i,
                link_id: child_text(doc, i, "linkId").unwrap_or_default(),
                kind: child_text(doc, i, "type").map_or(ItemType::Unknown, ItemType::of),
                required: flag("required"),
                repeats: flag("repeats"),
                children: Vec::new(),
            });
            let children = self.read_items(i, depth + 1);
            if let Some(item) = self.items.get_mut(k) {
                item.children = children;
            }
            out.push(k);
        }
        out
    }

    fn item(&self, k: usize) -> Option<&Item<'q>> {
        self.items.get(k)
    }
}

/// Where the Questionnaire of a response was found.
enum Found {
    /// A resource of the response's own document (node).
    Here(u32),
    /// A document read from what the hook supplied.
    Outside(Box<Document>),
    /// The canonical names a resource that is not a Questionnaire.
    WrongType,
    /// Nowhere.
    Unknown,
}

/// A FHIR JSON resource from the hook, read as a document (`None` when it does not read).
pub(super) fn document_of(value: &serde_json::Value) -> Option<Document> {
    let bytes = serde_json::to_vec(value).ok()?;
    super::read_json::read(bytes, &Limits::default()).ok()
}

/// True when resource node `r` has `url` (and `version`, when given).
pub(super) fn has_canonical(doc: &Document, r: u32, url: &[u8], version: Option<&[u8]>) -> bool {
    child_text(doc, r, "url") == Some(url) && version.is_none_or(|v| child_text(doc, r, "version") == Some(v))
}

/// The resource nodes of type `ty` in the document.
pub(super) fn resources_of<'d>(doc: &'d Document, ty: &'static str) -> impl Iterator<Item = u32> + 'd {
    (0..doc.nodes().len() as u32).filter(move |&i| {
        let n = doc.node(i);
        n.is_resource() && n.ty.is_some_and(|t| defs::type_name(t) == ty)
    })
}

/// The contained resource of `r` with `id`.
pub(super) fn contained(doc: &Document, r: u32, id: &[u8]) -> Option<u32> {
    doc.named(r, "contained").find(|&c| child_text(doc, c, "id") == Some(id))
}

pub(super) fn split_canonical(canonical: &[u8]) -> (&[u8], Option<&[u8]>) {
    match canonical.iter().position(|&b| b == b'|') {
        Some(p) => (&canonical[..p], canonical.get(p + 1..).filter(|v| !v.is_empty())),
        None => (canonical, None),
    }
}

/// The resource type of a canonical URL of the core namespace: `ValueSet` for
/// `http://hl7.org/fhir/ValueSet/x`.
fn core_type(url: &[u8]) -> Option<&[u8]> {
    let rest = url.strip_prefix(b"http://hl7.org/fhir/")?;
    let ty = rest.split(|&b| b == b'/').next()?;
    (rest.len() > ty.len() && defs::type_id(ty).is_some_and(defs::is_resource)).then_some(ty)
}

fn find_questionnaire(doc: &Document, r: u32, canonical: &[u8], here: &Resources, resolve: Resolve<'_>) -> Found {
    if let Some(id) = canonical.strip_prefix(b"#") {
        return match contained(doc, r, id) {
            Some(c) if type_of(doc, c) == "Questionnaire" => Found::Here(c),
            Some(_) => Found::WrongType,
            None => Found::Unknown,
        };
    }
    let (url, version) = split_canonical(canonical);
    if let Some(&q) = here.questionnaires.iter().find(|&&q| has_canonical(doc, q, url, version)) {
        return Found::Here(q);
    }
    let Ok(name) = std::str::from_utf8(canonical) else { return Found::Unknown };
    match resolve(name) {
        Some(v) if v.get("resourceType").and_then(|t| t.as_str()) == Some("Questionnaire") => {
            document_of(v).map_or(Found::Unknown, |d| Found::Outside(Box::new(d)))
        }
        Some(_) => Found::WrongType,
        // A canonical of the core namespace (`http://hl7.org/fhir/ValueSet/...`) that names
        // another resource type.
        None if core_type(url).is_some_and(|t| t != b"Questionnaire".as_slice()) => Found::WrongType,
        None => Found::Unknown,
    }
}

/// The Questionnaires and ValueSets of a document (resource nodes), listed once.
struct Resources {
    questionnaires: Vec<u32>,
    value_sets: Vec<u32>,
}

impl Resources {
    fn of(doc: &Document) -> Resources {
        Resources {
            questionnaires: resources_of(doc, "Questionnaire").collect(),
            value_sets: resources_of(doc, "ValueSet").collect(),
        }
    }
}

/// Checks every QuestionnaireResponse and Questionnaire of the document.
pub(super) fn check(doc: &Document, resolve: Resolve<'_>, f: &mut Findings) {
    let Some(qr_ty) = defs::known_type!(b"QuestionnaireResponse") else { return };
    let responses: Vec<u32> =
        (0..doc.nodes().len() as u32).filter(|&r| doc.node(r).is_resource() && doc.node(r).ty == Some(qr_ty)).collect();
    let here = Resources::of(doc);
    for &r in &responses {
        response(doc, r, &here, resolve, f);
    }
    for &q in &here.questionnaires {
        enable_when_inner(&Def::read(doc, q), f);
    }
}

/// `QUESTIONNAIRE_ENABLEWHEN_INNER`: an item's enableWhen names the item or a descendant.
fn enable_when_inner(def: &Def<'_>, f: &mut Findings) {
    let doc = def.doc;
    for item in &def.items {
        for ew in doc.named(item.node, "enableWhen") {
            let Some(q) = child_text(doc, ew, "question") else { continue };
            if q == item.link_id || descends(def, item, q, 0) {
                f.push(Code::QUESTIONNAIRE_ENABLEWHEN_INNER, Location::Fhir(doc.path(ew)));
            }
        }
    }
}

fn descends(def: &Def<'_>, item: &Item<'_>, link_id: &[u8], depth: usize) -> bool {
    depth < MAX_DEPTH
        && item
            .children
            .iter()
            .filter_map(|&k| def.item(k))
            .any(|c| c.link_id == link_id || descends(def, c, link_id, depth + 1))
}

/// The checks of one response `r`.
fn response(doc: &Document, r: u32, here: &Resources, resolve: Resolve<'_>, f: &mut Findings) {
    let Some(qnode) = doc.named(r, "questionnaire").find(|&q| doc.node(q).has_value()) else { return };
    let outside;
    let (qdoc, qroot) = match find_questionnaire(doc, r, text(doc, qnode), here, resolve) {
        Found::Here(q) => (doc, q),
        Found::Outside(d) => {
            outside = d;
            (&*outside, 0)
        }
        Found::WrongType => {
            f.push(Code::QR_QUESTIONNAIRE_WRONG_TYPE, Location::Fhir(doc.path(qnode)));
            return;
        }
        Found::Unknown => {
            f.push(Code::QR_QUESTIONNAIRE_UNKNOWN, Location::Fhir(doc.path(qnode)));
            return;
        }
    };
    let def = Def::read(qdoc, qroot);
    let status = child_text(doc, r, "status");
    let there = if std::ptr::eq(qdoc, doc) { None } else { Some(Resources::of(qdoc)) };
    let ctx = Ctx {
        doc,
        r,
        def: &def,
        resolve,
        complete: matches!(status, Some(b"completed" | b"amended")),
        answered: answered_items(doc, r),
        value_sets: [&here.value_sets, there.as_ref().map_or(&here.value_sets, |t| &t.value_sets)],
        expressions: std::cell::Cell::new(0),
    };
    ctx.items(&def.top, r, &doc.named(r, "item").collect::<Vec<_>>(), true, 0, f);
}

/// `(linkId, item node)` of every item of response `r` (not of its contained resources),
/// sorted (by linkId, then in document order).
fn answered_items(doc: &Document, r: u32) -> Vec<(&[u8], u32)> {
    let end = doc.node(r).end;
    let mut out: Vec<(&[u8], u32)> = (r + 1..end)
        .filter(|&i| {
            let n = doc.node(i);
            !n.is_unknown() && n.name == "item" && doc.resource_of(i) == r
        })
        .filter_map(|i| child_text(doc, i, "linkId").map(|l| (l, i)))
        .collect();
    out.sort_unstable();
    out
}

/// Most FHIRPath enableWhen expressions evaluated for one response (each walks the response);
/// beyond, an item with one is taken as enabled.
const MAX_EXPRESSIONS: u32 = 1_000;

/// What the walk of one response knows.
struct Ctx<'a, 'q, 's> {
    doc: &'a Document,
    r: u32,
    def: &'a Def<'q>,
    resolve: Resolve<'s>,
    complete: bool,
    answered: Vec<(&'a [u8], u32)>,
    /// The ValueSets of the response's document and of the Questionnaire's.
    value_sets: [&'a [u32]; 2],
    /// FHIRPath expressions evaluated so far.
    expressions: std::cell::Cell<u32>,
}

impl Ctx<'_, '_, '_> {
    fn required_missing(&self, at: u32, f: &mut Findings) {
        let severity = if self.complete { Severity::Error } else { Severity::Information };
        f.push_with(Code::QR_REQUIRED_MISSING, severity, Location::Fhir(self.doc.path(at)));
    }

    /// The response items `given` (children of `parent`) against the Questionnaire items `q`.
    fn items(&self, q: &[usize], parent: u32, given: &[u32], enabled: bool, depth: usize, f: &mut Findings) {
        let doc = self.doc;
        if depth >= MAX_DEPTH {
            return;
        }
        let mut matched: Vec<Vec<u32>> = vec![Vec::new(); q.len()];
        for &g in given {
            let link = child_text(doc, g, "linkId").unwrap_or_default();
            let hit = q.iter().position(|&k| self.def.item(k).is_some_and(|it| it.link_id == link));
            match hit.and_then(|p| matched.get_mut(p)) {
                Some(list) => list.push(g),
                None => f.push(Code::QR_ITEM_UNKNOWN, Location::Fhir(doc.path(g))),
            }
        }
        for (p, &k) in q.iter().enumerate() {
            let Some(item) = self.def.item(k) else { continue };
            let list = matched.get(p).map_or(&[][..], Vec::as_slice);
            let on = enabled && self.enabled(item, parent);
            if !on {
                for &g in list {
                    if has_answers(doc, g) {
                        f.push(Code::QR_ANSWER_DISABLED, Location::Fhir(doc.path(g)));
                    }
                }
                continue;
            }
            if list.is_empty() {
                if item.required {
                    self.required_missing(parent, f);
                }
                continue;
            }
            if list.len() > 1 && !item.repeats {
                for &g in &list[1..] {
                    f.push(Code::QR_ITEM_REPEATED, Location::Fhir(doc.path(g)));
                }
            }
            for &g in list {
                self.item(item, g, depth, f);
            }
        }
    }

    /// One response item `g` against its Questionnaire item.
    fn item(&self, item: &Item<'_>, g: u32, depth: usize, f: &mut Findings) {
        let doc = self.doc;
        let answers: Vec<u32> = doc.named(g, "answer").collect();
        match item.kind {
            ItemType::Group => {
                for &a in &answers {
                    f.push(Code::QR_ANSWER_NOT_ALLOWED, Location::Fhir(doc.path(a)));
                }
                let sub: Vec<u32> = doc.named(g, "item").collect();
                if item.required && sub.is_empty() {
                    // Reported once for the group, not for each of its required items.
                    self.required_missing(g, f);
                } else {
                    self.items(&item.children, g, &sub, true, depth + 1, f);
                }
            }
            ItemType::Display | ItemType::Question => {
                if !answers.is_empty() {
                    f.push(Code::QR_ANSWER_NOT_ALLOWED, Location::Fhir(doc.path(g)));
                }
            }
            _ => {
                if item.required && answers.is_empty() {
                    self.required_missing(g, f);
                }
                if answers.len() > 1 && !item.repeats {
                    f.push(Code::QR_ANSWER_REPEATED, Location::Fhir(doc.path(g)));
                }
                self.occurs(item, g, answers.len(), f);
                for &a in &answers {
                    self.answer(item, a, &answers, f);
                    let sub: Vec<u32> = doc.named(a, "item").collect();
                    if !sub.is_empty() || !item.children.is_empty() {
                        self.items(&item.children, a, &sub, true, depth + 1, f);
                    }
                }
            }
        }
    }

    /// `questionnaire-minOccurs` and `questionnaire-maxOccurs`.
    fn occurs(&self, item: &Item<'_>, g: u32, count: usize, f: &mut Findings) {
        let qdoc = self.def.doc;
        let bound = |url: &str| {
            extension(qdoc, item.node, url).and_then(|v| std::str::from_utf8(text(qdoc, v)).ok()?.parse::<usize>().ok())
        };
        let low = bound("http://hl7.org/fhir/StructureDefinition/questionnaire-minOccurs");
        let high = bound("http://hl7.org/fhir/StructureDefinition/questionnaire-maxOccurs");
        if low.is_some_and(|m| count < m) || high.is_some_and(|m| count > m) {
            f.push(Code::QR_ANSWER_COUNT, Location::Fhir(self.doc.path(g)));
        }
    }

    /// One answer `a` (of all `answers` of its item).
    fn answer(&self, item: &Item<'_>, a: u32, answers: &[u32], f: &mut Findings) {
        let doc = self.doc;
        let qdoc = self.def.doc;
        let Some(v) = doc.named(a, "value").next() else { return };
        let ty = type_of(doc, v);
        let options: Vec<u32> = qdoc.named(item.node, "answerOption").collect();
        let option_values: Vec<u32> = options.iter().filter_map(|&o| qdoc.named(o, "value").next()).collect();
        let at = || Location::Fhir(doc.path(v));
        let fits = match item.kind {
            // The types an answerOption can have; with options, one of theirs (free text
            // aside).
            ItemType::Choice | ItemType::OpenChoice => {
                let open = item.kind == ItemType::OpenChoice && ty == "string";
                matches!(ty, "Coding" | "date" | "time" | "integer" | "string")
                    && (open || option_values.is_empty() || option_values.iter().any(|&o| type_of(qdoc, o) == ty))
            }
            kind => kind.answer_type().is_none_or(|t| t == ty),
        };
        if !fits {
            f.push(Code::QR_ANSWER_TYPE, at());
            return;
        }
        let free_text = item.kind == ItemType::OpenChoice && ty == "string";
        if !option_values.is_empty() && !free_text {
            match option_values.iter().position(|&o| same(doc, v, qdoc, o) == Some(true)) {
                None => f.push(Code::QR_ANSWER_NOT_IN_OPTIONS, Location::Fhir(doc.path(a))),
                Some(p) => {
                    let exclusive = options.get(p).and_then(|&o| {
                        extension(qdoc, o, "http://hl7.org/fhir/StructureDefinition/questionnaire-optionExclusive")
                    });
                    if answers.len() > 1 && exclusive.is_some_and(|x| text(qdoc, x) == b"true") {
                        f.push(Code::QR_ANSWER_EXCLUSIVE, Location::Fhir(doc.path(a)));
                    }
                }
            }
        }
        if ty == "Coding" {
            if let Some(vs) = child_text(qdoc, item.node, "answerValueSet") {
                match self.in_value_set(vs, v) {
                    Some(true) => {}
                    Some(false) => f.push(Code::QR_ANSWER_NOT_IN_VALUESET, Location::Fhir(doc.path(a))),
                    None => f.push(Code::QR_VALUESET_UNKNOWN, Location::Fhir(doc.path(a))),
                }
            }
        }
        self.constraints(item, v, ty, f);
    }

    /// The extensions and elements that constrain a value `v` of type `ty`.
    fn constraints(&self, item: &Item<'_>, v: u32, ty: &str, f: &mut Findings) {
        let doc = self.doc;
        let qdoc = self.def.doc;
        let at = || Location::Fhir(doc.path(v));
        let number = |d: &Document, n: u32| std::str::from_utf8(text(d, n)).ok().and_then(|s| s.parse::<f64>().ok());
        match ty {
            "string" | "uri" => {
                let chars = std::str::from_utf8(text(doc, v)).map_or(0, |s| s.chars().count());
                let max = child_text(qdoc, item.node, "maxLength")
                    .and_then(|m| std::str::from_utf8(m).ok()?.parse::<usize>().ok());
                let min = extension(qdoc, item.node, &format!("{EXT}minLength"))
                    .and_then(|m| std::str::from_utf8(text(qdoc, m)).ok()?.parse::<usize>().ok());
                if max.is_some_and(|m| chars > m) || min.is_some_and(|m| chars < m) {
                    f.push(Code::QR_ANSWER_LENGTH, at());
                }
                if let Some(rx) = extension(qdoc, item.node, &format!("{EXT}regex")) {
                    let pattern = text(qdoc, rx);
                    let value = std::str::from_utf8(text(doc, v)).ok();
                    if let (Ok(p), Some(value)) = (std::str::from_utf8(pattern), value) {
                        if p.len() <= MAX_PATTERN {
                            let re = regex_lite::RegexBuilder::new(&format!("^(?:{p})$")).size_limit(1 << 20).build();
                            if re.is_ok_and(|re| !re.is_match(value)) {
                                f.push(Code::QR_ANSWER_FORMAT, at());
                            }
                        }
                    }
                }
            }
            "integer" | "decimal" | "date" | "dateTime" => {
                let low = extension(qdoc, item.node, &format!("{EXT}minValue"));
                let high = extension(qdoc, item.node, &format!("{EXT}maxValue"));
                for (bound, below) in [(low, true), (high, false)] {
                    let Some(b) = bound else { continue };
                    let ord = if ty == "integer" || ty == "decimal" {
                        number(doc, v).zip(number(qdoc, b)).and_then(|(x, y)| x.partial_cmp(&y))
                    } else {
                        Some(text(doc, v).cmp(text(qdoc, b)))
                    };
                    if ord == Some(if below { Ordering::Less } else { Ordering::Greater }) {
                        f.push(Code::QR_ANSWER_RANGE, at());
                    }
                }
                if ty == "decimal" {
                    let places = extension(qdoc, item.node, &format!("{EXT}maxDecimalPlaces"))
                        .and_then(|m| std::str::from_utf8(text(qdoc, m)).ok()?.parse::<usize>().ok());
                    let value = text(doc, v);
                    let decimals = value.iter().position(|&b| b == b'.').map_or(0, |p| value.len() - p - 1);
                    if places.is_some_and(|m| decimals > m) {
                        f.push(Code::QR_ANSWER_DECIMALS, at());
                    }
                }
            }
            "Attachment" => {
                let types: Vec<&[u8]> = extensions(qdoc, item.node, "http://hl7.org/fhir/StructureDefinition/mimeType")
                    .map(|m| text(qdoc, m))
                    .collect();
                if let Some(ct) = child_text(doc, v, "contentType") {
                    if !types.is_empty() && !types.contains(&ct) {
                        f.push(Code::QR_ATTACHMENT_TYPE, at());
                    }
                }
                let max = extension(qdoc, item.node, &format!("{EXT}maxSize")).and_then(|m| number(qdoc, m));
                let size = doc.named(v, "size").find(|&s| doc.node(s).has_value()).and_then(|s| number(doc, s));
                if let (Some(max), Some(size)) = (max, size) {
                    if size > max {
                        f.push(Code::QR_ATTACHMENT_SIZE, at());
                    }
                }
            }
            "Reference" => self.reference(item, v, f),
            "Quantity" => self.quantity(item, v, f),
            _ => {}
        }
    }

    fn reference(&self, item: &Item<'_>, v: u32, f: &mut Findings) {
        let doc = self.doc;
        let qdoc = self.def.doc;
        let Some(reference) = child_text(doc, v, "reference") else { return };
        if reference.starts_with(b"#") || reference.starts_with(b"urn:") {
            return;
        }
        // `[base/]Type/id[/_history/v]`: the type is the segment before the id.
        let path = reference.split(|&b| b == b'?').next().unwrap_or_default();
        let mut segments: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        if segments.len() >= 4 && segments[segments.len() - 2] == b"_history" {
            segments.truncate(segments.len() - 2);
        }
        let Some(ty) = segments.len().checked_sub(2).and_then(|p| segments.get(p)) else { return };
        let known = defs::type_id(ty).is_some_and(defs::is_resource);
        let allowed: Vec<&[u8]> =
            extensions(qdoc, item.node, "http://hl7.org/fhir/StructureDefinition/questionnaire-referenceResource")
                .map(|c| text(qdoc, c))
                .collect();
        if !known || (!allowed.is_empty() && !allowed.contains(ty)) {
            f.push(Code::QR_REFERENCE_TYPE, Location::Fhir(doc.path(v)));
        }
    }

    fn quantity(&self, item: &Item<'_>, v: u32, f: &mut Findings) {
        let doc = self.doc;
        let qdoc = self.def.doc;
        let at = || Location::Fhir(doc.path(v));
        let units: Vec<u32> =
            extensions(qdoc, item.node, "http://hl7.org/fhir/StructureDefinition/questionnaire-unitOption").collect();
        if !units.is_empty() {
            let code = child_text(doc, v, "code");
            let system = child_text(doc, v, "system");
            let hit = units.iter().any(|&u| {
                child_text(qdoc, u, "code") == code && code.is_some() && child_text(qdoc, u, "system") == system
            });
            if !hit {
                f.push(Code::QR_QUANTITY_UNIT, at());
            }
        }
        for (url, below) in [("sdc-questionnaire-minQuantity", true), ("sdc-questionnaire-maxQuantity", false)] {
            let Some(b) = extension(qdoc, item.node, &format!("{SDC}{url}")) else { continue };
            match compare_quantities(doc, v, qdoc, b) {
                Some(ord) if ord != (if below { Ordering::Less } else { Ordering::Greater }) => {}
                _ => f.push(Code::QR_ANSWER_RANGE, at()),
            }
        }
    }

    /// Whether the Coding `v` is in value set `vs`; `None` when the value set cannot be found
    /// (its content unknown offline: `Some(true)`).
    fn in_value_set(&self, vs: &[u8], v: u32) -> Option<bool> {
        let doc = self.doc;
        let qdoc = self.def.doc;
        let code = child_text(doc, v, "code")?;
        let system = child_text(doc, v, "system");
        if let Some(id) = vs.strip_prefix(b"#") {
            let c = contained(qdoc, self.def.root, id)?;
            return Some(listed(qdoc, c, system, code).unwrap_or(true));
        }
        let (url, version) = split_canonical(vs);
        for (d, list) in [(doc, self.value_sets[0]), (qdoc, self.value_sets[1])] {
            if let Some(&c) = list.iter().find(|&&c| has_canonical(d, c, url, version)) {
                return Some(listed(d, c, system, code).unwrap_or(true));
            }
        }
        if let Some(core) = defs::bundled_value_set(url) {
            return Some(core.is_none_or(|set| set.contains(system, code)));
        }
        let name = std::str::from_utf8(vs).ok()?;
        let value = (self.resolve)(name)?;
        if value.get("resourceType").and_then(|t| t.as_str()) != Some("ValueSet") {
            return None;
        }
        let d = document_of(value)?;
        Some(listed(&d, 0, system, code).unwrap_or(true))
    }

    /// Whether `item`'s enableWhen conditions hold (true without any), for its response items
    /// under `parent`.
    fn enabled(&self, item: &Item<'_>, parent: u32) -> bool {
        let qdoc = self.def.doc;
        if let Some(on) = self.enabled_by_expression(item) {
            return on;
        }
        let conditions: Vec<u32> = qdoc.named(item.node, "enableWhen").collect();
        if conditions.is_empty() {
            return true;
        }
        let any = child_text(qdoc, item.node, "enableBehavior") == Some(b"any".as_slice());
        let mut results = conditions.iter().map(|&ew| self.condition(ew, parent));
        if any { results.any(|r| r) } else { results.all(|r| r) }
    }

    /// An item enabled by a FHIRPath expression on the response: SDC
    /// `sdc-questionnaire-enableWhenExpression` (an Expression) or the Finnish PHR extension
    /// that the reference validator reads too (a string); `None` when there is none or it does
    /// not evaluate.
    fn enabled_by_expression(&self, item: &Item<'_>) -> Option<bool> {
        let qdoc = self.def.doc;
        let source = match extension(qdoc, item.node, &format!("{SDC}sdc-questionnaire-enableWhenExpression")) {
            Some(e) => child_text(qdoc, e, "expression")?,
            None => text(qdoc, extension(qdoc, item.node, FIPHR_ENABLE_WHEN)?),
        };
        if source.len() > MAX_PATTERN || self.expressions.get() >= MAX_EXPRESSIONS {
            return None;
        }
        self.expressions.set(self.expressions.get() + 1);
        // Compared with `true`: a boolean element is a node to the engine, not a boolean.
        let expr = super::fhirpath::parse::compile(&format!("({}) = true", std::str::from_utf8(source).ok()?)).ok()?;
        let cache = super::fhirpath::eval::NavCache::default();
        let env = super::fhirpath::eval::Env::new(self.doc, self.r, self.r, self.r, &cache);
        Some(env.run(&expr).ok()?.unwrap_or(false))
    }

    /// One enableWhen condition: the answers to its question are those nearest to `parent`
    /// (under `parent`, else under its parent, up to the response), so that each repetition
    /// of a group reads its own.
    fn condition(&self, ew: u32, parent: u32) -> bool {
        let doc = self.doc;
        let qdoc = self.def.doc;
        let Some(question) = child_text(qdoc, ew, "question") else { return false };
        let operator = child_text(qdoc, ew, "operator").unwrap_or_default();
        let Some(expected) = qdoc.named(ew, "answer").next() else { return false };
        // The response's items with that linkId, in document order.
        let from = self.answered.partition_point(|&(l, _)| l < question);
        let to = self.answered.partition_point(|&(l, _)| l <= question);
        let named = self.answered.get(from..to).unwrap_or_default();
        let mut scope = parent;
        let mut items: &[(&[u8], u32)] = &[];
        for _ in 0..MAX_DEPTH * 2 {
            let end = doc.node(scope).end;
            let a = named.partition_point(|&(_, i)| i <= scope);
            let b = named.partition_point(|&(_, i)| i < end);
            items = named.get(a..b.max(a)).unwrap_or_default();
            if !items.is_empty() || scope == self.r || doc.node(scope).parent == super::model::NONE {
                break;
            }
            scope = doc.node(scope).parent;
        }
        // The response's answers are taken as they are (the question's own conditions are not
        // followed: a cycle would not end).
        let values: Vec<u32> = items
            .iter()
            .flat_map(|&(_, i)| doc.named(i, "answer").filter_map(|a| doc.named(a, "value").next()))
            .collect();
        match operator {
            b"exists" => values.is_empty() != (text(qdoc, expected) == b"true"),
            b"=" => values.iter().any(|&v| same(doc, v, qdoc, expected) == Some(true)),
            b"!=" => !values.iter().any(|&v| same(doc, v, qdoc, expected) == Some(true)),
            b">" | b"<" | b">=" | b"<=" => values.iter().any(|&v| {
                let Some(ord) = order(doc, v, qdoc, expected) else { return false };
                match operator {
                    b">" => ord == Ordering::Greater,
                    b"<" => ord == Ordering::Less,
                    b">=" => ord != Ordering::Less,
                    _ => ord != Ordering::Greater,
                }
            }),
            _ => false,
        }
    }
}

/// True when the response item `g` has an answer with a value, or a nested item that has.
fn has_answers(doc: &Document, g: u32) -> bool {
    doc.named(g, "answer").next().is_some()
}

fn number(d: &Document, n: u32) -> Option<f64> {
    std::str::from_utf8(text(d, n)).ok()?.parse::<f64>().ok()
}

/// Whether value `a` of `da` equals value `b` of `db` (both typed nodes); `None` when their
/// types cannot be compared.
fn same(da: &Document, a: u32, db: &Document, b: u32) -> Option<bool> {
    let (ta, tb) = (type_of(da, a), type_of(db, b));
    match (ta, tb) {
        ("Coding", "Coding") => {
            let code = child_text(da, a, "code")?;
            let (sa, sb) = (child_text(da, a, "system"), child_text(db, b, "system"));
            Some(child_text(db, b, "code") == Some(code) && (sa.is_none() || sb.is_none() || sa == sb))
        }
        ("Quantity", "Quantity") => Some(compare_quantities(da, a, db, b) == Some(Ordering::Equal)),
        ("Reference", "Reference") => Some(child_text(da, a, "reference") == child_text(db, b, "reference")),
        ("integer" | "decimal", "integer" | "decimal") => Some(number(da, a)? == number(db, b)?),
        _ if ta == tb && da.node(a).has_value() => Some(text(da, a) == text(db, b)),
        _ => None,
    }
}

/// The order of value `a` of `da` against value `b` of `db`: numbers, dates and times,
/// strings, quantities.
fn order(da: &Document, a: u32, db: &Document, b: u32) -> Option<Ordering> {
    match (type_of(da, a), type_of(db, b)) {
        ("integer" | "decimal", "integer" | "decimal") => number(da, a)?.partial_cmp(&number(db, b)?),
        ("Quantity", "Quantity") => compare_quantities(da, a, db, b),
        (x, y) if x == y && matches!(x, "date" | "dateTime" | "time" | "string" | "instant") => {
            Some(text(da, a).cmp(text(db, b)))
        }
        _ => None,
    }
}

/// Two quantities compared: same UCUM unit, or units that differ by a metric prefix; `None`
/// when they cannot be compared (no value, no coded unit, units of different kinds).
fn compare_quantities(da: &Document, a: u32, db: &Document, b: u32) -> Option<Ordering> {
    let value = |d: &Document, q: u32| d.named(q, "value").find(|&v| d.node(v).has_value()).and_then(|v| number(d, v));
    let (x, y) = (value(da, a)?, value(db, b)?);
    let (ca, cb) = (child_text(da, a, "code")?, child_text(db, b, "code")?);
    let (sa, sb) = (child_text(da, a, "system")?, child_text(db, b, "system")?);
    if sa != sb {
        return None;
    }
    if ca == cb {
        return x.partial_cmp(&y);
    }
    if sa != b"http://unitsofmeasure.org" {
        return None;
    }
    let ((fa, atom_a), (fb, atom_b)) = (prefixed(ca)?, prefixed(cb)?);
    if atom_a != atom_b {
        return None;
    }
    (x * fa).partial_cmp(&(y * fb))
}

/// A UCUM unit as a metric prefix's factor and a metric base atom.
fn prefixed(code: &[u8]) -> Option<(f64, &[u8])> {
    const ATOMS: [&[u8]; 9] = [b"m", b"g", b"l", b"L", b"s", b"mol", b"Pa", b"J", b"W"];
    const PREFIXES: [(&[u8], f64); 10] = [
        (b"da", 1e1),
        (b"k", 1e3),
        (b"M", 1e6),
        (b"G", 1e9),
        (b"h", 1e2),
        (b"d", 1e-1),
        (b"c", 1e-2),
        (b"m", 1e-3),
        (b"u", 1e-6),
        (b"n", 1e-9),
    ];
    if ATOMS.contains(&code) {
        return Some((1.0, code));
    }
    PREFIXES.iter().find_map(|&(p, factor)| {
        let rest = code.strip_prefix(p)?;
        ATOMS.contains(&rest).then_some((factor, rest))
    })
}

/// Whether `(system, code)` is listed by value set node `vs` of `d` (its expansion, or the
/// concepts of its compose); `None` when neither lists codes (filters, whole systems).
fn listed(d: &Document, vs: u32, system: Option<&[u8]>, code: &[u8]) -> Option<bool> {
    let matches = |s: Option<&[u8]>| system.is_none() || s.is_none() || s == system;
    if let Some(expansion) = d.named(vs, "expansion").next() {
        let mut stack: Vec<u32> = d.named(expansion, "contains").collect();
        let mut seen = 0usize;
        while let Some(c) = stack.pop() {
            seen += 1;
            if seen > MAX_ITEMS * 10 {
                return None;
            }
            if child_text(d, c, "code") == Some(code) && matches(child_text(d, c, "system")) {
                return Some(true);
            }
            stack.extend(d.named(c, "contains"));
        }
        return Some(false);
    }
    let compose = d.named(vs, "compose").next()?;
    let mut whole = false;
    for include in d.named(compose, "include") {
        let s = child_text(d, include, "system");
        let concepts: Vec<u32> = d.named(include, "concept").collect();
        if concepts.is_empty() {
            if !matches(s) {
                continue;
            }
            // A whole system (or a filter, or other value sets): not known offline.
            whole = true;
            continue;
        }
        if matches(s) && concepts.iter().any(|&c| child_text(d, c, "code") == Some(code)) {
            return Some(true);
        }
    }
    if whole { None } else { Some(false) }
}

#[cfg(test)]
mod tests {
    use crate::formats::fhir::validate::{Options, validate_with};
    use crate::limits::Limits;

    /// The codes and locations of the `QR_*` and `QUESTIONNAIRE_*` findings (with severity) of
    /// `input`, the Questionnaires of `outside` supplied by the resolver.
    fn findings(input: &str, outside: &[serde_json::Value]) -> Vec<String> {
        let doc = crate::formats::fhir::read(input.as_bytes().to_vec(), &Limits::default()).expect("reads");
        let resolve = |canonical: &str| {
            let (url, version) = canonical.split_once('|').map_or((canonical, None), |(u, v)| (u, Some(v)));
            outside
                .iter()
                .find(|r| r["url"].as_str() == Some(url) && version.is_none_or(|v| r["version"].as_str() == Some(v)))
        };
        validate_with(&doc, Options::default(), &crate::formats::fhir::checks::Checks::default(), None, &resolve)
            .iter()
            .filter(|d| d.code.as_str().starts_with("QR_") || d.code.as_str().starts_with("QUESTIONNAIRE_"))
            .map(|d| format!("{} {} {}", d.code.as_str(), d.severity.as_str(), d.location))
            .collect()
    }

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("test input")
    }

    const Q: &str = r#"{"resourceType":"Questionnaire","url":"http://example.org/Questionnaire/q","version":"2","status":"active","item":[
        {"linkId":"smoker","type":"boolean","required":true},
        {"linkId":"packs","type":"integer","enableWhen":[{"question":"smoker","operator":"=","answerBoolean":true}],"required":true,
         "extension":[{"url":"http://hl7.org/fhir/StructureDefinition/minValue","valueInteger":1},{"url":"http://hl7.org/fhir/StructureDefinition/maxValue","valueInteger":10}]},
        {"linkId":"colour","type":"choice","repeats":true,"answerOption":[{"valueCoding":{"system":"http://example.org/cs","code":"red"}},
         {"valueCoding":{"system":"http://example.org/cs","code":"none"},"extension":[{"url":"http://hl7.org/fhir/StructureDefinition/questionnaire-optionExclusive","valueBoolean":true}]}]},
        {"linkId":"note","type":"string","maxLength":5},
        {"linkId":"g","type":"group","required":true,"item":[{"linkId":"g.1","type":"string","required":true}]},
        {"linkId":"info","type":"display"}]}"#;

    #[test]
    fn a_response_that_follows_its_questionnaire_has_no_finding() {
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/Questionnaire/q|2","status":"completed","item":[
            {"linkId":"smoker","answer":[{"valueBoolean":true}]},{"linkId":"packs","answer":[{"valueInteger":3}]},
            {"linkId":"colour","answer":[{"valueCoding":{"system":"http://example.org/cs","code":"red"}}]},
            {"linkId":"note","answer":[{"valueString":"short"}]},{"linkId":"g","item":[{"linkId":"g.1","answer":[{"valueString":"x"}]}]}]}"#;
        assert_eq!(findings(qr, &[json(Q)]), Vec::<String>::new());
    }

    #[test]
    fn answers_are_checked_against_their_items() {
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/Questionnaire/q","status":"completed","item":[
            {"linkId":"smoker","answer":[{"valueBoolean":false}]},{"linkId":"packs","answer":[{"valueInteger":3}]},
            {"linkId":"colour","answer":[{"valueCoding":{"system":"http://example.org/cs","code":"none"}},{"valueCoding":{"system":"http://example.org/cs","code":"blue"}}]},
            {"linkId":"note","answer":[{"valueString":"too long"},{"valueInteger":2}]},{"linkId":"note"},
            {"linkId":"g","answer":[{"valueString":"x"}]},{"linkId":"info","answer":[{"valueString":"x"}]},{"linkId":"nowhere"}]}"#;
        assert_eq!(
            findings(qr, &[json(Q)]),
            [
                "QR_ITEM_UNKNOWN error QuestionnaireResponse.item[7]",
                "QR_ANSWER_DISABLED error QuestionnaireResponse.item[1]",
                "QR_ANSWER_EXCLUSIVE error QuestionnaireResponse.item[2].answer[0]",
                "QR_ANSWER_NOT_IN_OPTIONS error QuestionnaireResponse.item[2].answer[1]",
                "QR_ITEM_REPEATED error QuestionnaireResponse.item[4]",
                "QR_ANSWER_REPEATED error QuestionnaireResponse.item[3]",
                "QR_ANSWER_LENGTH error QuestionnaireResponse.item[3].answer[0].valueString",
                "QR_ANSWER_TYPE error QuestionnaireResponse.item[3].answer[1].valueInteger",
                "QR_ANSWER_NOT_ALLOWED error QuestionnaireResponse.item[5].answer[0]",
                "QR_REQUIRED_MISSING error QuestionnaireResponse.item[5]",
                "QR_ANSWER_NOT_ALLOWED error QuestionnaireResponse.item[6]",
            ]
        );
    }

    #[test]
    fn required_items_and_ranges() {
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/Questionnaire/q","status":"completed","item":[
            {"linkId":"smoker","answer":[{"valueBoolean":true}]},{"linkId":"packs","answer":[{"valueInteger":30}]}]}"#;
        assert_eq!(
            findings(qr, &[json(Q)]),
            [
                "QR_ANSWER_RANGE error QuestionnaireResponse.item[1].answer[0].valueInteger",
                "QR_REQUIRED_MISSING error QuestionnaireResponse",
            ]
        );
        // In progress, a missing required item is information; an unanswered disabled one is fine.
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/Questionnaire/q","status":"in-progress","item":[
            {"linkId":"smoker","answer":[{"valueBoolean":false}]}]}"#;
        assert_eq!(findings(qr, &[json(Q)]), ["QR_REQUIRED_MISSING information QuestionnaireResponse"]);
    }

    /// Each repetition of a group reads its own answers for enableWhen.
    #[test]
    fn enable_when_reads_the_nearest_answers() {
        let q = json(
            r#"{"resourceType":"Questionnaire","url":"http://example.org/q4","status":"active","item":[{"linkId":"g","type":"group","repeats":true,
            "item":[{"linkId":"c","type":"boolean"},{"linkId":"e","type":"string","required":true,
            "enableWhen":[{"question":"c","operator":"=","answerBoolean":true}]}]}]}"#,
        );
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/q4","status":"completed","item":[
            {"linkId":"g","item":[{"linkId":"c","answer":[{"valueBoolean":true}]},{"linkId":"e","answer":[{"valueString":"x"}]}]},
            {"linkId":"g","item":[{"linkId":"c","answer":[{"valueBoolean":false}]},{"linkId":"e","answer":[{"valueString":"x"}]}]},
            {"linkId":"g","item":[{"linkId":"c","answer":[{"valueBoolean":true}]}]},
            {"linkId":"g","item":[{"linkId":"c","answer":[{"valueBoolean":false}]}]}]}"#;
        assert_eq!(
            findings(qr, &[q]),
            [
                "QR_ANSWER_DISABLED error QuestionnaireResponse.item[1].item[1]",
                "QR_REQUIRED_MISSING error QuestionnaireResponse.item[2]",
            ]
        );
    }

    #[test]
    fn the_questionnaire_is_found_contained_in_the_bundle_or_not_at_all() {
        let contained = r##"{"resourceType":"QuestionnaireResponse","contained":[{"resourceType":"Questionnaire","id":"q","status":"active",
            "item":[{"linkId":"a","type":"string"}]}],"questionnaire":"#q","status":"completed","item":[{"linkId":"b"}]}"##;
        assert_eq!(findings(contained, &[]), ["QR_ITEM_UNKNOWN error QuestionnaireResponse.item[0]"]);
        let bundle = r#"{"resourceType":"Bundle","type":"collection","entry":[
            {"fullUrl":"http://example.org/Questionnaire/q","resource":{"resourceType":"Questionnaire","id":"q","url":"http://example.org/Questionnaire/q","status":"active","item":[{"linkId":"a","type":"integer"}]}},
            {"fullUrl":"http://example.org/QuestionnaireResponse/r","resource":{"resourceType":"QuestionnaireResponse","id":"r","questionnaire":"http://example.org/Questionnaire/q","status":"completed","item":[{"linkId":"a","answer":[{"valueString":"1"}]}]}}]}"#;
        assert_eq!(
            findings(bundle, &[]),
            ["QR_ANSWER_TYPE error Bundle.entry[1].resource.item[0].answer[0].valueString"]
        );
        let unknown = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/Questionnaire/q|3","status":"completed"}"#;
        assert_eq!(
            findings(unknown, &[json(Q)]),
            ["QR_QUESTIONNAIRE_UNKNOWN warning QuestionnaireResponse.questionnaire"]
        );
        let vs = json(r#"{"resourceType":"ValueSet","url":"http://example.org/Questionnaire/q","status":"active"}"#);
        let wrong = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/Questionnaire/q","status":"completed"}"#;
        assert_eq!(findings(wrong, &[vs]), ["QR_QUESTIONNAIRE_WRONG_TYPE error QuestionnaireResponse.questionnaire"]);
    }

    #[test]
    fn value_sets_enable_when_any_and_inner_conditions() {
        let q = json(
            r##"{"resourceType":"Questionnaire","url":"http://example.org/q2","status":"active",
            "contained":[{"resourceType":"ValueSet","id":"vs","status":"active","compose":{"include":[{"system":"http://example.org/cs","concept":[{"code":"a"}]}]}}],
            "item":[{"linkId":"c","type":"choice","answerValueSet":"#vs"},{"linkId":"n","type":"decimal"},
            {"linkId":"later","type":"string","enableBehavior":"any","enableWhen":[{"question":"n","operator":">","answerDecimal":2.5},{"question":"c","operator":"exists","answerBoolean":false}]}]}"##,
        );
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/q2","status":"completed","item":[
            {"linkId":"c","answer":[{"valueCoding":{"system":"http://example.org/cs","code":"b"}}]},{"linkId":"n","answer":[{"valueDecimal":2.0}]},
            {"linkId":"later","answer":[{"valueString":"x"}]}]}"#;
        assert_eq!(
            findings(qr, &[q]),
            [
                "QR_ANSWER_NOT_IN_VALUESET error QuestionnaireResponse.item[0].answer[0]",
                "QR_ANSWER_DISABLED error QuestionnaireResponse.item[2]",
            ]
        );
        let expression = json(
            r#"{"resourceType":"Questionnaire","url":"http://example.org/q3","status":"active","item":[{"linkId":"a","type":"boolean"},
            {"linkId":"b","type":"boolean","extension":[{"url":"http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-enableWhenExpression",
             "valueExpression":{"language":"text/fhirpath","expression":"item.where(linkId='a').answer.value"}}]}]}"#,
        );
        let qr = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://example.org/q3","status":"completed","item":[
            {"linkId":"a","answer":[{"valueBoolean":false}]},{"linkId":"b","answer":[{"valueBoolean":true}]}]}"#;
        assert_eq!(findings(qr, &[expression]), ["QR_ANSWER_DISABLED error QuestionnaireResponse.item[1]"]);
        let core = r#"{"resourceType":"QuestionnaireResponse","questionnaire":"http://hl7.org/fhir/ValueSet/example","status":"completed"}"#;
        assert_eq!(findings(core, &[]), ["QR_QUESTIONNAIRE_WRONG_TYPE error QuestionnaireResponse.questionnaire"]);
        let inner = r#"{"resourceType":"Questionnaire","status":"active","item":[{"linkId":"g","type":"group",
            "enableWhen":[{"question":"g.1","operator":"exists","answerBoolean":true}],"item":[{"linkId":"g.1","type":"boolean"}]}]}"#;
        assert_eq!(findings(inner, &[]), ["QUESTIONNAIRE_ENABLEWHEN_INNER error Questionnaire.item[0].enableWhen[0]"]);
    }
}
