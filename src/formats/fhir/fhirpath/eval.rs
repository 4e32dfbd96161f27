//! The FHIRPath evaluator over the element tree of `model`.
//!
//! Collections are `Vec<Val>`; elements are node indexes, so navigation allocates no value.
//! Semantics follow FHIRPath N1: empty propagation, three-valued logic, singleton evaluation of
//! collections, equality of elements by their children, `descendants()` in document order,
//! choice elements by their base name (`value`) or their typed name (`valueQuantity`), the
//! type names of the FHIR model for `is`/`as`/`ofType` (and, for primitives, their System
//! equivalents: `Boolean` matches `boolean`). Variables: `%resource`, `%rootResource`,
//! `%context`, `%ucum`, `%sct`, `%loinc`.
//!
//! An evaluation that meets something outside this subset (a singleton expected and several
//! items found, an unknown variable) stops with an [`EvalError`]; its invariant is then
//! reported as unchecked rather than guessed.
//!
//! `memberOf(valueset)` asks the [`ValueSets`] the environment was given (the value sets the
//! validation can expand offline); without one, or for a value set it cannot expand, the
//! evaluation stops with an [`EvalError`] (the invariant is unchecked, not guessed).
//!
//! What it does not do: terminology servers, `conformsTo`, dates relative to now, resolution
//! of references outside the document.

use std::cmp::Ordering;

use super::html;
use super::parse::{Expr, Func, Op};
use super::value::{self, Temporal, Val};
use crate::formats::fhir::definitions::{self as defs, Kind};
use crate::formats::fhir::model::{Document, NONE};
use crate::formats::fhir::primitive;

/// The evaluation could not be completed within the supported subset.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EvalError;

type R = Result<Vec<Val>, EvalError>;

/// The value sets `memberOf()` can ask about: those the validation expands offline.
pub trait ValueSets: std::fmt::Debug {
    /// Whether node `n` of `doc` (a code, a Coding, a CodeableConcept...) is in the value set
    /// `canonical`: `Some(true)` when it (one of its codings) is in its expansion, `Some(false)`
    /// when none is, `None` when the value set cannot be expanded offline or the node carries
    /// no code it can compare.
    fn member_of(&self, doc: &Document, n: u32, canonical: &str) -> Option<bool>;
}

/// The environment of one evaluation.
#[derive(Debug)]
pub struct Env<'d> {
    /// The document.
    pub doc: &'d Document,
    /// `%resource`
    pub resource: u32,
    /// `%rootResource`
    pub root_resource: u32,
    /// `%context`
    pub context: u32,
    /// Children by name of large elements and the indexes of [`super::index`], shared by the
    /// evaluations of one document.
    pub cache: &'d NavCache<'d>,
    /// Which of `contained` and `text` the context has as children, once asked ([`Env::scan`]).
    scanned: std::cell::Cell<u8>,
    /// The values of the expressions that do not depend on the focus (a path from a variable,
    /// as `%resource.snapshot.element.first().path`), by expression, once evaluated: `sdf-8`
    /// evaluates one for every element of a snapshot ([`rooted_at_variable`]).
    memo: Memo,
    /// What `memberOf()` asks; `None`: every `memberOf()` is an [`EvalError`].
    value_sets: Option<Box<dyn ValueSets + 'd>>,
}

/// See [`Env::memo`]; `Debug` prints a count (the values may be message values).
#[derive(Default)]
struct Memo(std::cell::RefCell<Vec<(*const Expr, Vec<Val>)>>);

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Memo({})", self.0.borrow().len())
    }
}

pub use super::index::NavCache;

/// Elements with more descendants than this are cached.
const CACHE_ABOVE: u32 = 64;

/// The invariants with a native evaluation of their own ([`Env::native`]), by key; the others
/// go through [`Env::quick`] first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Native {
    /// [`Env::quick`], then the engine.
    None,
    /// `bdl-3`
    Bdl3,
    /// `bdl-4`
    Bdl4,
    /// `bdl-7`
    Bdl7,
    /// `bdl-8`
    Bdl8,
    /// `ref-1`
    Ref1,
    /// `bdl-12`
    Bdl12,
    /// `org-1`
    Org1,
    /// `per-1`
    Per1,
    /// `dom-2`, `dom-4`, `dom-5`: paths from `contained` only, all true without it.
    Contained,
    /// `dom-3`: true without `contained`; otherwise one pass over the resource ([`Env::dom_3`]).
    Dom3,
    /// `dom-6`: a path from `text`, false without it.
    Text,
    /// `obs-7`: one pass over the codings ([`Env::obs_7`]).
    Obs7,
}

/// [`Env::scan`] bits: the scan was made; a `contained` child; a `text` child.
const SCANNED: u8 = 1;
const CONTAINED: u8 = 2;
const TEXT: u8 = 4;

impl Native {
    /// The native evaluation of the invariant `key`.
    pub fn of_key(key: &str) -> Native {
        match key {
            "bdl-3" => Native::Bdl3,
            "bdl-4" => Native::Bdl4,
            "bdl-7" => Native::Bdl7,
            "bdl-8" => Native::Bdl8,
            "ref-1" => Native::Ref1,
            "bdl-12" => Native::Bdl12,
            "org-1" => Native::Org1,
            "per-1" => Native::Per1,
            "dom-2" | "dom-4" | "dom-5" => Native::Contained,
            "dom-3" => Native::Dom3,
            "dom-6" => Native::Text,
            "obs-7" => Native::Obs7,
            _ => Native::None,
        }
    }
}

struct Scope<'a> {
    this: &'a [Val],
    index: Option<usize>,
}

impl<'d> Env<'d> {
    /// The environment of the invariants of node `context`.
    pub fn new(doc: &'d Document, resource: u32, root_resource: u32, context: u32, cache: &'d NavCache<'d>) -> Self {
        Env {
            doc,
            resource,
            root_resource,
            context,
            cache,
            scanned: std::cell::Cell::new(0),
            memo: Memo::default(),
            value_sets: None,
        }
    }

    /// The same environment, with the value sets `memberOf()` asks.
    pub fn with_value_sets(mut self, value_sets: Box<dyn ValueSets + 'd>) -> Self {
        self.value_sets = Some(value_sets);
        self
    }

    /// Whether the context node has children that navigation to `contained` and to `text` find:
    /// bits [`SCANNED`] | [`CONTAINED`] | [`TEXT`], one scan for the invariants of a resource
    /// that ask (memoized).
    fn scan(&self) -> u8 {
        let mut bits = self.scanned.get();
        if bits == 0 {
            bits = SCANNED;
            for c in self.doc.children(self.context) {
                if self.is_named(c, "contained") {
                    bits |= CONTAINED;
                }
                if self.is_named(c, "text") {
                    bits |= TEXT;
                }
            }
            self.scanned.set(bits);
        }
        bits
    }

    /// Evaluates `e` with the context node as focus.
    pub fn run(&self, e: &Expr) -> Result<Option<bool>, EvalError> {
        let focus = [Val::Node(self.context)];
        let scope = Scope { this: &focus, index: None };
        let out = self.eval(e, &focus, &scope, 0)?;
        Ok(match out.as_slice() {
            [] => None,
            [Val::Bool(b)] => Some(*b),
            [_] => Some(true),
            _ => return Err(EvalError),
        })
    }

    /// The elements of the document `e` selects with the context node as focus (values that are
    /// not elements are left out).
    pub fn nodes(&self, e: &Expr) -> Result<Vec<u32>, EvalError> {
        let focus = [Val::Node(self.context)];
        let scope = Scope { this: &focus, index: None };
        let out = self.eval(e, &focus, &scope, 0)?;
        Ok(out
            .iter()
            .filter_map(|v| match v {
                Val::Node(n) => Some(*n),
                _ => None,
            })
            .collect())
    }

    /// `ele-1` (`hasValue() or (children().count() > id.count())`), which applies to every
    /// element: the same result as [`Env::run`] over its compiled expression (a test checks
    /// both agree on the fixtures), without building the collections.
    pub fn ele_1(&self) -> bool {
        ele_1(self.doc, self.context)
    }

    fn eval(&self, e: &Expr, focus: &[Val], scope: &Scope<'_>, depth: u32) -> R {
        if depth > 64 {
            return Err(EvalError);
        }
        if matches!(e, Expr::Member(..) | Expr::Call(Some(_), ..)) && rooted_at_variable(e) {
            let key: *const Expr = e;
            if let Some((_, hit)) = self.memo.0.borrow().iter().find(|(k, _)| std::ptr::eq(*k, key)) {
                return Ok(hit.clone());
            }
            let out = self.eval_step(e, focus, scope, depth)?;
            self.memo.0.borrow_mut().push((key, out.clone()));
            return Ok(out);
        }
        self.eval_step(e, focus, scope, depth)
    }

    /// One step of [`Env::eval`], without the memo.
    fn eval_step(&self, e: &Expr, focus: &[Val], scope: &Scope<'_>, depth: u32) -> R {
        let d = depth + 1;
        Ok(match e {
            Expr::Empty => Vec::new(),
            Expr::Bool(b) => vec![Val::Bool(*b)],
            Expr::Str(s) => vec![Val::string(s.clone())],
            Expr::Int(i) => vec![Val::Int(*i)],
            Expr::Dec(s) => vec![Val::Dec(s.parse().map_err(|_| EvalError)?)],
            Expr::DateTime(s) => vec![Val::Temporal(Temporal::parse(s.as_bytes()).ok_or(EvalError)?)],
            Expr::Quantity(n, u) => {
                vec![Val::Quantity(n.parse().map_err(|_| EvalError)?, zeroize::Zeroizing::new(u.clone()))]
            }
            Expr::This => scope.this.to_vec(),
            Expr::Index => scope.index.map(|i| vec![Val::Int(i as i64)]).ok_or(EvalError)?,
            Expr::Var(v) => match v.as_str() {
                "resource" => vec![Val::Node(self.resource)],
                "rootResource" => vec![Val::Node(self.root_resource)],
                "context" => vec![Val::Node(self.context)],
                "ucum" => vec![Val::string("http://unitsofmeasure.org".into())],
                "sct" => vec![Val::string("http://snomed.info/sct".into())],
                "loinc" => vec![Val::string("http://loinc.org".into())],
                _ => return Err(EvalError),
            },
            Expr::Ident(name) => self.navigate(focus, name, true),
            Expr::Member(target, name) => {
                let t = self.eval(target, focus, scope, d)?;
                self.navigate(&t, name, false)
            }
            Expr::Indexer(target, idx) => {
                let t = self.eval(target, focus, scope, d)?;
                let i = self.eval(idx, focus, scope, d)?;
                match i.as_slice() {
                    [Val::Int(n)] if *n >= 0 => t.into_iter().nth(*n as usize).into_iter().collect(),
                    [] => Vec::new(),
                    _ => return Err(EvalError),
                }
            }
            Expr::Neg(inner) => {
                let v = self.eval(inner, focus, scope, d)?;
                match self.single_prim(&v)? {
                    None => Vec::new(),
                    Some(Val::Int(i)) => vec![Val::Int(-i)],
                    Some(Val::Dec(x)) => vec![Val::Dec(-x)],
                    Some(Val::Quantity(x, u)) => vec![Val::Quantity(-x, u)],
                    Some(_) => return Err(EvalError),
                }
            }
            Expr::Is(target, ty) => {
                let t = self.eval(target, focus, scope, d)?;
                match t.as_slice() {
                    [] => Vec::new(),
                    [v] => vec![Val::Bool(self.is_type(v, ty))],
                    _ => return Err(EvalError),
                }
            }
            Expr::As(target, ty) => {
                let t = self.eval(target, focus, scope, d)?;
                if t.len() > 1 {
                    return Err(EvalError);
                }
                t.into_iter().filter(|v| self.is_type(v, ty)).collect()
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b, focus, scope, d)?,
            Expr::Call(target, f, args) => {
                let input = match target {
                    Some(t) => self.eval(t, focus, scope, d)?,
                    None => focus.to_vec(),
                };
                self.call(*f, input, args, focus, scope, d)?
            }
        })
    }

    /// Children of the focus items named `name` (or, for a leading identifier, the focus itself
    /// when `name` is its type).
    fn navigate(&self, focus: &[Val], name: &str, leading: bool) -> Vec<Val> {
        let doc = self.doc;
        let mut out = Vec::new();
        for v in focus {
            let Val::Node(n) = *v else { continue };
            let before = out.len();
            let big =
                doc.node(n).end.saturating_sub(n) > CACHE_ABOVE && name.starts_with(|c: char| c.is_ascii_lowercase());
            if big {
                if let Some(hit) = self.cache.nav.borrow().get(&(n, name.to_owned())) {
                    out.extend(hit.iter().map(|&c| Val::Node(c)));
                    continue;
                }
            }
            for c in doc.children(n) {
                if self.is_named(c, name) {
                    out.push(Val::Node(c));
                }
            }
            if leading && out.len() == before && name.starts_with(|c: char| c.is_ascii_uppercase()) {
                if let Some(t) = doc.node(n).ty {
                    if defs::derives_from(t, name) {
                        out.push(Val::Node(n));
                    }
                }
            }
            if big {
                let found: Vec<u32> =
                    out[before..].iter().filter_map(|v| if let Val::Node(c) = v { Some(*c) } else { None }).collect();
                self.cache.nav.borrow_mut().insert((n, name.to_owned()), found);
            }
        }
        out
    }

    /// Whether child `c` is found by navigating to `name` (the test of [`Env::navigate`]).
    #[inline(always)]
    fn is_named(&self, c: u32, name: &str) -> bool {
        is_named(self.doc, c, name)
    }

    /// The children of `n` that navigation to `name` finds.
    fn named(&self, n: u32, name: &'static str) -> impl Iterator<Item = u32> + '_ {
        self.doc.children(n).filter(move |&c| self.is_named(c, name))
    }

    /// The only child of `n` named `name`: `Ok(None)` when there is none, `Err` when several.
    fn only(&self, n: u32, name: &'static str) -> Result<Option<u32>, ()> {
        let mut it = self.named(n, name);
        let first = it.next();
        if it.next().is_some() {
            return Err(());
        }
        Ok(first)
    }

    /// The value of a primitive element of type `ty`, when it has one.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn value_of(&self, n: u32, ty: &str) -> Option<&[u8]> {
        let node = self.doc.node(n);
        let t = node.ty?;
        (node.has_value() && defs::type_name(t) == ty).then(|| self.doc.value(n))
    }

    /// The value of the only child `name` of `n` as text, when it has one (a primitive of a
    /// string type, valid UTF-8); `None` otherwise.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn text_of(&self, n: u32, name: &'static str) -> Option<&[u8]> {
        let c = self.only(n, name).ok()??;
        let node = self.doc.node(c);
        let t = node.ty?;
        if !node.has_value() || !matches!(defs::type_name(t), "code" | "string" | "uri" | "id") {
            return None;
        }
        let v = self.doc.value(c);
        std::str::from_utf8(v).is_ok().then_some(v)
    }

    /// An invariant evaluated without building collections, with the result [`Env::run`] gives
    /// over its compiled expression `e` (a test checks both agree on every element of the
    /// fixtures and of the converter's output, an [`EvalError`] included); `None` when the case
    /// is not one it decides (the caller then runs the engine).
    pub fn native(&self, kind: Native, e: &Expr) -> Option<Result<Option<bool>, EvalError>> {
        let n = self.context;
        let result = match kind {
            Native::None => self.quick(e, n)?,
            // `contained.contained.empty()`, `contained.meta.versionId.empty() and ...`,
            // `contained.meta.security.empty()`: without a `contained` child every path is
            // empty and the result true.
            Native::Contained => {
                if self.scan() & CONTAINED != 0 {
                    self.quick(e, n)?
                } else {
                    true
                }
            }
            Native::Dom3 => {
                if self.scan() & CONTAINED == 0 {
                    true
                } else {
                    return self.dom_3();
                }
            }
            // `value.empty() or component.code.where(...).empty()`: the left side by the engine
            // (a look at the children), the right side in one pass.
            Native::Obs7 => {
                let Expr::Binary(Op::Or, left, _) = e else { return None };
                match self.run(left) {
                    Err(err) => return Some(Err(err)),
                    Ok(Some(true)) => true,
                    Ok(Some(false)) => return self.obs_7().map(|r| Ok(Some(r))),
                    Ok(None) => return None,
                }
            }
            // `text.`div`.exists()`: false without a `text` child.
            Native::Text => {
                if self.scan() & TEXT != 0 {
                    self.quick(e, n)?
                } else {
                    false
                }
            }
            // `entry.all(request.exists() = (%resource.type = 'batch' or ...))`, and `response`.
            Native::Bdl3 | Native::Bdl4 => {
                let ty = self.text_of(self.resource, "type")?;
                let (child, types): (&'static str, [&[u8]; 3]) = if kind == Native::Bdl3 {
                    ("request", [b"batch".as_slice(), b"transaction", b"history"])
                } else {
                    ("response", [b"batch-response".as_slice(), b"transaction-response", b"history"])
                };
                let expected = types.contains(&ty);
                self.named(n, "entry").all(|entry| self.named(entry, child).next().is_some() == expected)
            }
            // `(type = 'history') or entry.where(fullUrl.exists())
            //   .select(fullUrl&resource.meta.versionId).isDistinct()`: the texts compared are
            // the full URLs, each followed by its resource's version id when it has one (`&`
            // reads an empty collection as the empty string).
            Native::Bdl7 => {
                if self.text_of(n, "type")? == b"history" {
                    true
                } else {
                    let mut keys: Vec<(&[u8], &[u8])> = Vec::new();
                    for entry in self.named(n, "entry") {
                        if self.named(entry, "fullUrl").next().is_none() {
                            continue;
                        }
                        let url = self.text_of(entry, "fullUrl")?;
                        let mut version: &[u8] = b"";
                        if let Some(r) = self.only(entry, "resource").ok()? {
                            if let Some(meta) = self.only(r, "meta").ok()? {
                                if self.named(meta, "versionId").next().is_some() {
                                    version = self.text_of(meta, "versionId")?;
                                }
                            }
                        }
                        keys.push((url, version));
                    }
                    if keys.iter().all(|(_, v)| v.is_empty()) {
                        let mut urls: Vec<&[u8]> = keys.into_iter().map(|(u, _)| u).collect();
                        urls.sort_unstable();
                        !urls.windows(2).any(|w| w[0] == w[1])
                    } else {
                        let mut joined: Vec<Vec<u8>> = keys.into_iter().map(|(u, v)| [u, v].concat()).collect();
                        joined.sort_unstable();
                        !joined.windows(2).any(|w| w[0] == w[1])
                    }
                }
            }
            // `fullUrl.contains('/_history/').not()` (R4's text): empty without a `fullUrl`.
            Native::Bdl8 => match self.only(n, "fullUrl").ok()? {
                None => return Some(Ok(None)),
                Some(u) => {
                    let v = self.value_of(u, "uri")?;
                    !v.windows(10).any(|w| w == b"/_history/")
                }
            },
            // `type = 'message' implies entry.first().resource.is(MessageHeader)`: decided when
            // `type` is one string-typed value, and, for a message, when the first entry holds one
            // resource, a MessageHeader (other cases go to the engine).
            Native::Bdl12 => {
                if self.text_of(n, "type")? != b"message" {
                    true
                } else {
                    let entry = self.named(n, "entry").next()?;
                    let r = self.only(entry, "resource").ok()??;
                    let t = self.doc.node(r).ty?;
                    if defs::type_name(t) != "MessageHeader" {
                        return None;
                    }
                    true
                }
            }
            // `(identifier.count() + name.count()) > 0`
            Native::Org1 => self.named(n, "identifier").next().is_some() || self.named(n, "name").next().is_some(),
            // `start.hasValue().not() or end.hasValue().not() or (start <= end)`: true unless both
            // `start` and `end` are one element with a value (then the engine compares them).
            Native::Per1 => {
                let has_value = |name: &'static str| match self.only(n, name) {
                    Ok(Some(c)) => self.doc.node(c).has_value(),
                    _ => false,
                };
                if has_value("start") && has_value("end") {
                    return None;
                }
                true
            }
            // `reference.startsWith('#').not() or (reference.substring(1) in
            // %rootResource.contained.id)`: without a reference, empty; with one not starting
            // with `#`, true; `#` alone, empty (its substring is empty); otherwise whether the
            // text after `#` is the id of a contained resource of the root resource (one look-up
            // in [`NavCache::contained_ids`], not a scan of them per reference).
            Native::Ref1 => match self.only(n, "reference").ok()? {
                None => return Some(Ok(None)),
                Some(r) => match self.value_of(r, "string")? {
                    [first, ..] if *first != b'#' => true,
                    [] => return None,
                    [_] => return Some(Ok(None)),
                    _ => {
                        // The engine compares the text of the value (invalid UTF-8 replaced).
                        let Some(Val::Str(text)) = self.prim(&Val::Node(r)) else { return None };
                        let ids = self.cache.contained_ids(self, self.root_resource);
                        if ids.other {
                            return None;
                        }
                        // `text` starts with the one-byte `#`.
                        text.as_bytes().get(1..).is_some_and(|id| ids.text.contains(id))
                    }
                },
            },
        };
        Some(Ok(Some(result)))
    }

    /// `dom-3`, `contained.where((('#'+id in (%resource.descendants().reference |
    /// %resource.descendants().as(canonical) | %resource.descendants().as(uri) |
    /// %resource.descendants().as(url))) or descendants().where(reference = '#').exists() or
    /// descendants().where(as(canonical) = '#').exists() or ...).not()).trace('unmatched',
    /// id).empty()`, for a context with `contained` children: the engine's result in one pass
    /// over the resource (the engine walks every descendant of the resource once per contained
    /// resource). `None` in a case left to the engine.
    ///
    /// A contained resource is unmatched when its one `id` has a value, `#` followed by it is
    /// none of the listed values, and no descendant of it refers to its container (`#`). With
    /// no `id`, or one without a value, the test is empty (never unmatched); with several, or
    /// a value that is not text, `'#' + id` stops the engine ([`EvalError`]).
    fn dom_3(&self) -> Option<Result<Option<bool>, EvalError>> {
        self.dom_3_counting(false)
    }

    /// `dom-3` as its text states it, "it SHALL be referred to from elsewhere in the resource":
    /// [`Env::dom_3`] with the narrative's references counted too, an `img` of an `xhtml`
    /// descendant whose `src` is `#` and the id (R4 narrative.html: an image of the narrative
    /// may be a contained resource). The expression cannot see them (to FHIRPath the narrative
    /// is one `xhtml` value); the reference validator counts them (it enforces dom-3 in code).
    pub fn dom_3_with_narrative(&self) -> Option<Result<Option<bool>, EvalError>> {
        self.dom_3_counting(true)
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn dom_3_counting(&self, narrative: bool) -> Option<Result<Option<bool>, EvalError>> {
        let doc = self.doc;
        // The listed values that start with `#`, without it: the ids they point to.
        let mut local: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        let r = self.resource;
        let mut d = r + 1;
        while d < doc.node(r).end {
            let node = doc.node(d);
            if node.is_unknown() {
                d = node.end.max(d + 1);
                continue;
            }
            let item = Val::Node(d);
            if narrative && self.is_type(&item, "xhtml") {
                html::image_sources(doc.value(d), |src| {
                    if let Some(id) = src.strip_prefix(b"#") {
                        local.insert(id);
                    }
                });
            }
            // `descendants().reference`: the children named `reference` of the descendants.
            let listed = (node.parent != r && self.is_named(d, "reference"))
                || ["canonical", "uri", "url"].iter().any(|ty| self.is_type(&item, ty));
            if listed {
                if self.text_key(&item).is_some() {
                    if let Some(id) = doc.value(d).strip_prefix(b"#") {
                        local.insert(id);
                    }
                } else if self.prim(&item).is_some() {
                    // A value that compares otherwise than as text (none in R4: `reference`
                    // elements are strings or uris): left to the engine.
                    return None;
                }
            }
            d += 1;
        }
        let hash = Val::string("#".into());
        let mut unmatched = false;
        for c in doc.children(self.context).filter(|&c| self.is_named(c, "contained")) {
            let mut ids = doc.children(c).filter(|&i| self.is_named(i, "id"));
            let id = match (ids.next(), ids.next()) {
                (None, _) => continue,
                (Some(_), Some(_)) => return Some(Err(EvalError)),
                (Some(id), None) => id,
            };
            let text = match self.prim(&Val::Node(id)) {
                None => continue,
                Some(Val::Str(text)) => text,
                Some(_) => return Some(Err(EvalError)),
            };
            if unmatched || local.contains(text.as_bytes()) {
                // The result is false already (only a later error can change it), or this one
                // is referenced.
                continue;
            }
            unmatched = !self.refers_to_container(c, &hash);
        }
        Some(Ok(Some(!unmatched)))
    }

    /// `component.code.where(coding.intersect(%resource.code.coding).exists()).empty()` (the
    /// right side of `obs-7`): false when a coding of a component's code equals a coding of the
    /// resource's code. The engine compares every component coding with every resource coding;
    /// here the resource codings are hashed once by their content ([`Env::deep_hash`], the
    /// fields [`Env::deep_equal`] compares) and each component coding is compared with those of
    /// its hash only. `None` (left to the engine) when a coding is not a complex element, whose
    /// equality [`Env::eq_items`] decides otherwise.
    fn obs_7(&self) -> Option<bool> {
        let doc = self.doc;
        let complex = |c: u32| doc.node(c).ty.is_some_and(|t| defs::kind(t) != Kind::Primitive);
        let state = std::collections::hash_map::RandomState::new();
        let mut by_hash: std::collections::HashMap<u64, Vec<u32>> = std::collections::HashMap::new();
        for code in doc.children(self.resource).filter(|&c| self.is_named(c, "code")) {
            for coding in doc.children(code).filter(|&c| self.is_named(c, "coding")) {
                if !complex(coding) {
                    return None;
                }
                by_hash.entry(self.deep_hash(&state, coding)).or_default().push(coding);
            }
        }
        if by_hash.is_empty() {
            return Some(true);
        }
        for component in doc.children(self.context).filter(|&c| self.is_named(c, "component")) {
            for code in doc.children(component).filter(|&c| self.is_named(c, "code")) {
                for coding in doc.children(code).filter(|&c| self.is_named(c, "coding")) {
                    if !complex(coding) {
                        return None;
                    }
                    let same = by_hash.get(&self.deep_hash(&state, coding));
                    if same.is_some_and(|list| list.iter().any(|&r| self.deep_equal(r, coding))) {
                        return Some(false);
                    }
                }
            }
        }
        Some(true)
    }

    /// A hash of what [`Env::deep_equal`] compares: type, name, value and the known children in
    /// order (equal elements hash alike).
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn deep_hash(&self, state: &std::collections::hash_map::RandomState, n: u32) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let doc = self.doc;
        let mut h = state.build_hasher();
        // Depth-first over the known descendants, with each node's depth so that the shape is
        // part of the hash; unknown subtrees are skipped as `deep_equal` skips them.
        let root_depth = 0u32;
        let mut stack: Vec<(u32, u32)> = vec![(n, root_depth)];
        while let Some((c, depth)) = stack.pop() {
            let node = doc.node(c);
            depth.hash(&mut h);
            node.ty.map(|t| t.0).hash(&mut h);
            node.name.hash(&mut h);
            doc.value(c).hash(&mut h);
            let children: Vec<u32> = doc.children(c).filter(|&k| !doc.node(k).is_unknown()).collect();
            children.len().hash(&mut h);
            stack.extend(children.into_iter().rev().map(|k| (k, depth + 1)));
        }
        h.finish()
    }

    /// `descendants().where(reference = '#').exists() or descendants().where(as(canonical) =
    /// '#').exists()` from contained resource `c` (`hash`: the string `#`).
    fn refers_to_container(&self, c: u32, hash: &Val) -> bool {
        let doc = self.doc;
        let mut d = c + 1;
        while d < doc.node(c).end {
            let node = doc.node(d);
            if node.is_unknown() {
                d = node.end.max(d + 1);
                continue;
            }
            let mut refs = doc.children(d).filter(|&x| self.is_named(x, "reference"));
            if let (Some(x), None) = (refs.next(), refs.next()) {
                if self.eq_items(&Val::Node(x), hash) == Some(true) {
                    return true;
                }
            }
            let item = Val::Node(d);
            if self.is_type(&item, "canonical") && self.eq_items(&item, hash) == Some(true) {
                return true;
            }
            d += 1;
        }
        false
    }

    /// Whether the path `e` (an identifier and members, as `contained.meta.security`) from
    /// node `n` reaches a node for which `f` is true; `None` when `e` is not such a path.
    fn path_visit(&self, e: &Expr, n: u32, f: &mut dyn FnMut(u32) -> bool) -> Option<bool> {
        match e {
            Expr::Ident(name) if name.starts_with(|c: char| c.is_ascii_lowercase()) => {
                Some(self.doc.children(n).any(|c| self.is_named(c, name) && f(c)))
            }
            Expr::Member(target, name) => {
                self.path_visit(target, n, &mut |p| self.doc.children(p).any(|c| self.is_named(c, name) && f(c)))
            }
            _ => None,
        }
    }

    /// Whether `e` from node `n` gives a non-empty collection, for paths and for `where` and
    /// `trace` over an empty path; `None` when undecided.
    fn non_empty(&self, e: &Expr, n: u32) -> Option<bool> {
        match e {
            Expr::Ident(_) | Expr::Member(..) => self.path_visit(e, n, &mut |_| true),
            Expr::Call(Some(target), Func::Where | Func::Trace, _) => match self.non_empty(target, n)? {
                false => Some(false),
                true => None,
            },
            _ => None,
        }
    }

    /// The boolean that `e` gives from node `n` when it is built of `exists()`, `empty()`,
    /// `not()` and `and`/`or`/`implies`/`=`/`!=` of those, or a path compared to a string;
    /// `None` when `e` is not of that form or the case is undecided.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub fn quick(&self, e: &Expr, n: u32) -> Option<bool> {
        match e {
            Expr::Call(Some(t), Func::Exists, args) if args.is_empty() => self.non_empty(t, n),
            Expr::Call(Some(t), Func::Empty, args) if args.is_empty() => self.non_empty(t, n).map(|x| !x),
            Expr::Call(Some(t), Func::Not, args) if args.is_empty() => self.quick(t, n).map(|x| !x),
            Expr::Binary(op @ (Op::And | Op::Or | Op::Implies), a, b) => {
                let l = self.quick(a, n)?;
                match (op, l) {
                    (Op::And, false) => return Some(false),
                    (Op::Or, true) => return Some(true),
                    (Op::Implies, false) => return Some(true),
                    _ => {}
                }
                let r = self.quick(b, n)?;
                Some(match op {
                    Op::And => l && r,
                    Op::Or => l || r,
                    _ => !l || r,
                })
            }
            Expr::Binary(op @ (Op::Eq | Op::Ne), a, b) => {
                let equal = match (self.quick(a, n), &**b) {
                    (Some(l), _) => l == self.quick(b, n)?,
                    (None, Expr::Str(lit)) => {
                        // A path to one primitive of a string type with a value.
                        let (mut count, mut found) = (0usize, None);
                        self.path_visit(a, n, &mut |c| {
                            count += 1;
                            found = Some(c);
                            false
                        })?;
                        let c = found.filter(|_| count == 1)?;
                        let node = self.doc.node(c);
                        let t = node.ty?;
                        if !node.has_value() || !matches!(defs::type_name(t), "code" | "string" | "uri" | "id") {
                            return None;
                        }
                        let v = self.doc.value(c);
                        std::str::from_utf8(v).ok()? == lit.as_str()
                    }
                    _ => return None,
                };
                Some(if *op == Op::Eq { equal } else { !equal })
            }
            _ => None,
        }
    }

    fn type_name_of(&self, v: &Val) -> &'static str {
        match v {
            Val::Node(n) => match self.doc.node(*n).ty {
                Some(t) => defs::type_name(t),
                None => "BackboneElement",
            },
            other => other.type_name(),
        }
    }

    fn is_type(&self, v: &Val, ty: &str) -> bool {
        match v {
            Val::Node(n) => match self.doc.node(*n).ty {
                Some(t) if defs::kind(t) == Kind::Primitive => {
                    let name = defs::type_name(t);
                    name == ty || (ty.eq_ignore_ascii_case(name) && ty.starts_with(|c: char| c.is_ascii_uppercase()))
                }
                Some(t) => defs::derives_from(t, ty),
                None => ty == "BackboneElement" || ty == "Element",
            },
            other => other.type_name().eq_ignore_ascii_case(ty),
        }
    }

    /// The value of a primitive element as a FHIRPath value.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub(super) fn prim(&self, v: &Val) -> Option<Val> {
        let Val::Node(n) = *v else { return Some(v.clone()) };
        let doc = self.doc;
        let node = doc.node(n);
        let ty = node.ty?;
        if defs::kind(ty) != Kind::Primitive {
            if defs::type_name(ty) == "Quantity" || defs::derives_from(ty, "Quantity") {
                let value = doc.named(n, "value").find(|&c| doc.node(c).has_value())?;
                let x: f64 = std::str::from_utf8(doc.value(value)).ok()?.parse().ok()?;
                let unit = doc
                    .named(n, "code")
                    .chain(doc.named(n, "unit"))
                    .find(|&c| doc.node(c).has_value())
                    .map(|c| String::from_utf8_lossy(doc.value(c)).into_owned())
                    .unwrap_or_default();
                return Some(Val::Quantity(x, zeroize::Zeroizing::new(unit)));
            }
            return None;
        }
        if !node.has_value() {
            return None;
        }
        let raw = doc.value(n);
        Some(match defs::type_name(ty) {
            "boolean" => Val::Bool(raw == b"true"),
            "integer" | "positiveInt" | "unsignedInt" => Val::Int(primitive::integer(raw)?),
            "decimal" => Val::Dec(std::str::from_utf8(raw).ok()?.parse().ok()?),
            "date" | "dateTime" | "instant" | "time" => match Temporal::parse(raw) {
                Some(t) => Val::Temporal(t),
                None => Val::string(String::from_utf8_lossy(raw).into_owned()),
            },
            _ => Val::string(String::from_utf8_lossy(raw).into_owned()),
        })
    }

    fn single_prim(&self, c: &[Val]) -> Result<Option<Val>, EvalError> {
        match c {
            [] => Ok(None),
            [v] => Ok(self.prim(v)),
            _ => Err(EvalError),
        }
    }

    fn single_str(&self, c: &[Val]) -> Result<Option<zeroize::Zeroizing<String>>, EvalError> {
        Ok(match self.single_prim(c)? {
            Some(Val::Str(s)) => Some(s),
            Some(Val::Int(i)) => Some(zeroize::Zeroizing::new(i.to_string())),
            _ => None,
        })
    }

    /// Singleton evaluation to a boolean: empty is `None`.
    fn truth(&self, c: &[Val]) -> Result<Option<bool>, EvalError> {
        match c {
            [] => Ok(None),
            [Val::Bool(b)] => Ok(Some(*b)),
            [Val::Node(n)] if self.doc.node(*n).ty.is_some_and(|t| defs::type_name(t) == "boolean") => {
                Ok(self.prim(&c[0]).map(|v| matches!(v, Val::Bool(true))))
            }
            [_] => Ok(Some(true)),
            _ => Err(EvalError),
        }
    }

    /// The bytes that decide equality of a string-like item (no allocation), when it is one.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    pub(super) fn text_key<'v>(&'v self, v: &'v Val) -> Option<&'v [u8]> {
        match v {
            Val::Str(s) => Some(s.as_bytes()),
            Val::Node(n) => {
                let node = self.doc.node(*n);
                let t = node.ty?;
                if !node.has_value() || defs::kind(t) != Kind::Primitive {
                    return None;
                }
                match defs::type_name(t) {
                    "boolean" | "integer" | "positiveInt" | "unsignedInt" | "decimal" | "date" | "dateTime"
                    | "instant" | "time" => None,
                    _ => Some(self.doc.value(*n)),
                }
            }
            _ => None,
        }
    }

    /// True when no two items are equal ([`Env::eq_items`]). Beyond a few items, without
    /// comparing every pair: items that compare as text are sorted; complex elements (compared
    /// by [`Env::deep_equal`], never equal to a text) are hashed by content; primitives without
    /// a value equal nothing; only what is left (numbers, dates, other values) is compared with
    /// every other item.
    fn distinct_items(&self, items: &[Val]) -> bool {
        if items.len() <= 8 {
            return items.iter().enumerate().all(|(i, v)| !self.contains_item(&items[..i], v));
        }
        let doc = self.doc;
        let state = std::collections::hash_map::RandomState::new();
        let mut texts: Vec<&[u8]> = Vec::new();
        let mut complex: std::collections::HashMap<u64, Vec<u32>> = std::collections::HashMap::new();
        let mut rest: Vec<usize> = Vec::new();
        for (i, v) in items.iter().enumerate() {
            if let Some(k) = self.text_key(v) {
                texts.push(k);
                continue;
            }
            let Val::Node(n) = *v else {
                rest.push(i);
                continue;
            };
            let node = doc.node(n);
            match node.ty {
                Some(t) if defs::kind(t) == Kind::Primitive => {
                    // Without a value it equals nothing (`prim` gives none); with one it is a
                    // number, a date or a boolean, compared with everything.
                    if node.has_value() {
                        rest.push(i);
                    }
                }
                _ => {
                    let same = complex.entry(self.deep_hash(&state, n)).or_default();
                    if same.iter().any(|&m| self.deep_equal(m, n)) {
                        return false;
                    }
                    same.push(n);
                }
            }
        }
        texts.sort_unstable();
        if texts.windows(2).any(|w| w[0] == w[1]) {
            return false;
        }
        // Each pair with a left-over item, in the order `contains_item` compares it.
        rest.iter().all(|&i| {
            items.iter().enumerate().all(|(j, other)| {
                j == i || {
                    let (a, b) = if j < i { (other, &items[i]) } else { (&items[i], other) };
                    self.eq_items(a, b) != Some(true)
                }
            })
        })
    }

    /// The items of `items` without repeats, in order.
    fn dedup(&self, items: Vec<Val>) -> Vec<Val> {
        let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
        let mut out: Vec<Val> = Vec::with_capacity(items.len());
        for v in items {
            if let Some(k) = self.text_key(&v) {
                if !seen.insert(k.to_vec()) {
                    continue;
                }
                if out.iter().any(|o| self.text_key(o).is_none() && self.eq_items(o, &v) == Some(true)) {
                    continue;
                }
            } else if self.contains_item(&out, &v) {
                continue;
            }
            out.push(v);
        }
        for mut k in seen.into_iter() {
            zeroize::Zeroize::zeroize(&mut k);
        }
        out
    }

    /// Equality of two items (elements compare by value, complex ones by their children).
    fn eq_items(&self, a: &Val, b: &Val) -> Option<bool> {
        if let (Some(x), Some(y)) = (self.text_key(a), self.text_key(b)) {
            return Some(x == y);
        }
        if let (Val::Node(x), Val::Node(y)) = (a, b) {
            let (nx, ny) = (self.doc.node(*x), self.doc.node(*y));
            let complex = |t: Option<defs::TypeId>| t.is_none_or(|t| defs::kind(t) != Kind::Primitive);
            if complex(nx.ty) || complex(ny.ty) {
                return Some(self.deep_equal(*x, *y));
            }
        }
        let pa = self.prim(a)?;
        let pb = self.prim(b)?;
        value::equal(&pa, &pb)
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn deep_equal(&self, x: u32, y: u32) -> bool {
        let doc = self.doc;
        let (nx, ny) = (doc.node(x), doc.node(y));
        if nx.ty != ny.ty || nx.name != ny.name || doc.value(x) != doc.value(y) {
            return false;
        }
        let cx: Vec<u32> = doc.children(x).filter(|&c| !doc.node(c).is_unknown()).collect();
        let cy: Vec<u32> = doc.children(y).filter(|&c| !doc.node(c).is_unknown()).collect();
        cx.len() == cy.len() && cx.iter().zip(&cy).all(|(a, b)| self.deep_equal(*a, *b))
    }

    fn equals(&self, a: &[Val], b: &[Val]) -> Option<bool> {
        if a.is_empty() || b.is_empty() {
            return None;
        }
        if a.len() != b.len() {
            return Some(false);
        }
        let mut all = true;
        for (x, y) in a.iter().zip(b) {
            match self.eq_items(x, y) {
                Some(true) => {}
                Some(false) => return Some(false),
                None => all = false,
            }
        }
        if all { Some(true) } else { None }
    }

    fn equivalent(&self, a: &[Val], b: &[Val]) -> bool {
        if a.is_empty() && b.is_empty() {
            return true;
        }
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (self.prim(x), self.prim(y)) {
                (Some(Val::Str(s)), Some(Val::Str(t))) => {
                    let lower = |w: &str| w.chars().flat_map(char::to_lowercase).collect::<Vec<char>>();
                    let (mut a, mut b) = (s.split_whitespace(), t.split_whitespace());
                    loop {
                        match (a.next(), b.next()) {
                            (None, None) => break true,
                            (Some(x), Some(y)) => {
                                let (mut lx, mut ly) = (lower(x), lower(y));
                                let same = lx == ly;
                                zeroize::Zeroize::zeroize(&mut lx);
                                zeroize::Zeroize::zeroize(&mut ly);
                                if !same {
                                    break false;
                                }
                            }
                            _ => break false,
                        }
                    }
                }
                _ => self.eq_items(x, y).unwrap_or(false),
            })
    }

    fn contains_item(&self, coll: &[Val], item: &Val) -> bool {
        coll.iter().any(|c| self.eq_items(c, item) == Some(true))
    }

    fn binary(&self, op: Op, a: &Expr, b: &Expr, focus: &[Val], scope: &Scope<'_>, d: u32) -> R {
        // Short-circuit logic.
        if matches!(op, Op::And | Op::Or | Op::Implies) {
            let l = self.eval(a, focus, scope, d)?;
            let l = self.truth(&l)?;
            match (op, l) {
                (Op::And, Some(false)) => return Ok(vec![Val::Bool(false)]),
                (Op::Or, Some(true)) => return Ok(vec![Val::Bool(true)]),
                (Op::Implies, Some(false)) => return Ok(vec![Val::Bool(true)]),
                _ => {}
            }
            let r = self.eval(b, focus, scope, d)?;
            let r = self.truth(&r)?;
            let out = match op {
                Op::And => match (l, r) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                },
                Op::Or => match (l, r) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                },
                _ => match (l, r) {
                    (_, Some(true)) => Some(true),
                    (Some(true), Some(false)) => Some(false),
                    _ => None,
                },
            };
            return Ok(out.map(Val::Bool).into_iter().collect());
        }
        let l = self.eval(a, focus, scope, d)?;
        let r = self.eval(b, focus, scope, d)?;
        let boolean = |x: Option<bool>| -> Vec<Val> { x.map(Val::Bool).into_iter().collect() };
        Ok(match op {
            Op::Xor => match (self.truth(&l)?, self.truth(&r)?) {
                (Some(x), Some(y)) => vec![Val::Bool(x != y)],
                _ => Vec::new(),
            },
            Op::Union => {
                let mut all = l;
                all.extend(r);
                self.dedup(all)
            }
            Op::Eq => boolean(self.equals(&l, &r)),
            Op::Ne => boolean(self.equals(&l, &r).map(|b| !b)),
            Op::Equiv => vec![Val::Bool(self.equivalent(&l, &r))],
            Op::NotEquiv => vec![Val::Bool(!self.equivalent(&l, &r))],
            Op::In | Op::Contains => {
                let (item, coll) = if op == Op::In { (&l, &r) } else { (&r, &l) };
                match item.as_slice() {
                    [] => Vec::new(),
                    [v] => vec![Val::Bool(self.contains_item(coll, v))],
                    _ => return Err(EvalError),
                }
            }
            Op::Lt | Op::Gt | Op::Le | Op::Ge => {
                let (Some(x), Some(y)) = (self.single_prim(&l)?, self.single_prim(&r)?) else { return Ok(Vec::new()) };
                match value::compare(&x, &y) {
                    None => Vec::new(),
                    Some(o) => vec![Val::Bool(match op {
                        Op::Lt => o == Ordering::Less,
                        Op::Gt => o == Ordering::Greater,
                        Op::Le => o != Ordering::Greater,
                        _ => o != Ordering::Less,
                    })],
                }
            }
            Op::Concat => {
                let x = self.single_str(&l)?;
                let y = self.single_str(&r)?;
                let (x, y) = (x.as_deref().map_or("", String::as_str), y.as_deref().map_or("", String::as_str));
                let mut joined = String::with_capacity(x.len() + y.len());
                joined.push_str(x);
                joined.push_str(y);
                vec![Val::string(joined)]
            }
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::IntDiv | Op::Mod => {
                let (Some(x), Some(y)) = (self.single_prim(&l)?, self.single_prim(&r)?) else { return Ok(Vec::new()) };
                arithmetic(op, x, y)?.into_iter().collect()
            }
            Op::And | Op::Or | Op::Implies => Vec::new(),
        })
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn call(&self, f: Func, input: Vec<Val>, args: &[Expr], outer: &[Val], scope: &Scope<'_>, d: u32) -> R {
        let doc = self.doc;
        // Arguments that are not evaluated per item see the caller's focus and `$this`.
        let arg = |k: usize| -> R {
            match args.get(k) {
                Some(a) => self.eval(a, outer, scope, d),
                None => Err(EvalError),
            }
        };
        let type_arg = |k: usize| -> Result<&str, EvalError> {
            match args.get(k) {
                Some(Expr::Ident(t)) => Ok(t.as_str()),
                Some(Expr::Member(_, t)) => Ok(t.as_str()),
                _ => Err(EvalError),
            }
        };
        let b = |x: bool| Ok(vec![Val::Bool(x)]);
        match f {
            Func::Empty => b(input.is_empty()),
            Func::Exists => {
                if args.is_empty() {
                    return b(!input.is_empty());
                }
                let hits = self.filter(&input, &args[0], d)?;
                b(!hits.is_empty())
            }
            Func::Not => Ok(self.truth(&input)?.map(|x| Val::Bool(!x)).into_iter().collect()),
            Func::Count => Ok(vec![Val::Int(input.len() as i64)]),
            Func::Where => self.filter(&input, args.first().ok_or(EvalError)?, d),
            Func::All => {
                let crit = args.first().ok_or(EvalError)?;
                for (i, v) in input.iter().enumerate() {
                    let this = [v.clone()];
                    let s = Scope { this: &this, index: Some(i) };
                    let r = self.eval(crit, &this, &s, d)?;
                    if self.truth(&r)? != Some(true) {
                        return b(false);
                    }
                }
                b(true)
            }
            Func::Select => {
                let proj = args.first().ok_or(EvalError)?;
                let mut out = Vec::new();
                for (i, v) in input.iter().enumerate() {
                    let this = [v.clone()];
                    let s = Scope { this: &this, index: Some(i) };
                    out.extend(self.eval(proj, &this, &s, d)?);
                }
                Ok(out)
            }
            Func::IsDistinct => b(self.distinct_items(&input)),
            Func::Distinct => Ok(self.dedup(input)),
            Func::First => Ok(input.into_iter().take(1).collect()),
            Func::Last => Ok(input.into_iter().last().into_iter().collect()),
            Func::Tail => Ok(input.into_iter().skip(1).collect()),
            Func::Single => match input.len() {
                0 | 1 => Ok(input),
                _ => Err(EvalError),
            },
            Func::Skip | Func::Take => {
                let n = match arg(0)?.as_slice() {
                    [Val::Int(n)] => (*n).max(0) as usize,
                    _ => return Err(EvalError),
                };
                Ok(if f == Func::Skip {
                    input.into_iter().skip(n).collect()
                } else {
                    input.into_iter().take(n).collect()
                })
            }
            Func::StartsWith | Func::EndsWith | Func::ContainsStr => {
                let Some(s) = self.single_str(&input)? else { return Ok(Vec::new()) };
                let Some(p) = self.single_str(&arg(0)?)? else { return Ok(Vec::new()) };
                b(match f {
                    Func::StartsWith => s.starts_with(p.as_str()),
                    Func::EndsWith => s.ends_with(p.as_str()),
                    _ => s.contains(p.as_str()),
                })
            }
            Func::Matches | Func::ReplaceMatches => {
                let Some(s) = self.single_str(&input)? else { return Ok(Vec::new()) };
                // Patterns come from the definitions only: a literal argument.
                let Some(Expr::Str(p)) = args.first() else { return Err(EvalError) };
                let re = super::regex(p).ok_or(EvalError)?;
                if f == Func::Matches {
                    // The core invariants are written as whole-value patterns, and FHIR's
                    // validators match them so (the FHIRPath 2.0 `matchesFull`).
                    return b(re.anchored.is_match(s.as_str()));
                }
                let Some(with) = self.single_str(&arg(1)?)? else { return Ok(Vec::new()) };
                Ok(vec![Val::string(re.search.replace_all(s.as_str(), with.as_str()).into_owned())])
            }
            Func::Replace => {
                let Some(s) = self.single_str(&input)? else { return Ok(Vec::new()) };
                let (Some(p), Some(w)) = (self.single_str(&arg(0)?)?, self.single_str(&arg(1)?)?) else {
                    return Ok(Vec::new());
                };
                Ok(vec![Val::string(s.replace(p.as_str(), w.as_str()))])
            }
            Func::Length => {
                Ok(self.single_str(&input)?.map(|s| Val::Int(s.chars().count() as i64)).into_iter().collect())
            }
            Func::Upper | Func::Lower => Ok(self
                .single_str(&input)?
                .map(|s| Val::string(if f == Func::Upper { s.to_uppercase() } else { s.to_lowercase() }))
                .into_iter()
                .collect()),
            Func::IndexOf => {
                let (Some(s), Some(p)) = (self.single_str(&input)?, self.single_str(&arg(0)?)?) else {
                    return Ok(Vec::new());
                };
                Ok(vec![Val::Int(s.find(p.as_str()).map_or(-1, |i| s[..i].chars().count() as i64))])
            }
            Func::Substring => {
                let Some(s) = self.single_str(&input)? else { return Ok(Vec::new()) };
                let start = match arg(0)?.as_slice() {
                    [Val::Int(n)] => *n,
                    _ => return Ok(Vec::new()),
                };
                let len = if args.len() > 1 {
                    match arg(1)?.as_slice() {
                        [Val::Int(n)] => Some((*n).max(0) as usize),
                        _ => return Ok(Vec::new()),
                    }
                } else {
                    None
                };
                let count = s.chars().count() as i64;
                if start < 0 || start >= count {
                    return Ok(Vec::new());
                }
                let it = s.chars().skip(start as usize);
                let out: String = match len {
                    Some(l) => it.take(l).collect(),
                    None => it.collect(),
                };
                Ok(vec![Val::string(out)])
            }
            Func::HasValue => b(matches!(input.as_slice(), [Val::Node(n)] if doc.node(*n).has_value())),
            Func::Trace => Ok(input),
            Func::Descendants => {
                let mut out = Vec::new();
                for v in &input {
                    if let Val::Node(n) = *v {
                        let end = doc.node(n).end;
                        let mut c = n + 1;
                        while c < end {
                            let node = doc.node(c);
                            if node.is_unknown() {
                                c = node.end.max(c + 1);
                                continue;
                            }
                            out.push(Val::Node(c));
                            c += 1;
                        }
                    }
                }
                Ok(out)
            }
            Func::Children => {
                let mut out = Vec::new();
                for v in &input {
                    if let Val::Node(n) = *v {
                        out.extend(doc.children(n).filter(|&c| !doc.node(c).is_unknown()).map(Val::Node));
                    }
                }
                Ok(out)
            }
            Func::ToInteger => Ok(match self.single_prim(&input)? {
                Some(Val::Int(i)) => vec![Val::Int(i)],
                Some(Val::Bool(x)) => vec![Val::Int(i64::from(x))],
                Some(Val::Str(s)) => primitive::integer(s.as_bytes()).map(Val::Int).into_iter().collect(),
                _ => Vec::new(),
            }),
            Func::ToDecimal => Ok(match self.single_prim(&input)? {
                Some(Val::Int(i)) => vec![Val::Dec(i as f64)],
                Some(Val::Dec(x)) => vec![Val::Dec(x)],
                Some(Val::Str(s)) if primitive::decimal(s.as_bytes()) => s.parse().map(Val::Dec).into_iter().collect(),
                _ => Vec::new(),
            }),
            Func::ToStr => {
                // Decimals keep their source text (cnt-3 looks for the decimal point).
                if let [Val::Node(n)] = input.as_slice() {
                    if doc.node(*n).has_value() {
                        return Ok(vec![Val::string(String::from_utf8_lossy(doc.value(*n)).into_owned())]);
                    }
                }
                Ok(match self.single_prim(&input)? {
                    Some(Val::Str(s)) => vec![Val::Str(s)],
                    Some(Val::Int(i)) => vec![Val::string(i.to_string())],
                    Some(Val::Dec(x)) => vec![Val::string(x.to_string())],
                    Some(Val::Bool(x)) => vec![Val::string(x.to_string())],
                    _ => Vec::new(),
                })
            }
            Func::Iif => {
                let scope_in = Scope { this: &input, index: scope.index };
                let c = self.eval(args.first().ok_or(EvalError)?, &input, &scope_in, d)?;
                let which = if self.truth(&c)? == Some(true) { 1 } else { 2 };
                match args.get(which) {
                    Some(e) => self.eval(e, &input, &scope_in, d),
                    None => Ok(Vec::new()),
                }
            }
            Func::HtmlChecks => match input.as_slice() {
                [Val::Node(n)] => b(html::checks(doc.value(*n))),
                [] => Ok(Vec::new()),
                _ => Err(EvalError),
            },
            Func::Is => {
                let t = type_arg(0)?;
                match input.as_slice() {
                    [] => Ok(Vec::new()),
                    [v] => b(self.is_type(v, t)),
                    _ => Err(EvalError),
                }
            }
            Func::As | Func::OfType => {
                let t = type_arg(0)?;
                Ok(input.into_iter().filter(|v| self.is_type(v, t) && !self.type_name_of(v).is_empty()).collect())
            }
            Func::AllFalse | Func::AllTrue | Func::AnyTrue | Func::AnyFalse => {
                let mut flags = Vec::with_capacity(input.len());
                for v in &input {
                    flags.push(self.truth(std::slice::from_ref(v))?.unwrap_or(false));
                }
                b(match f {
                    Func::AllFalse => flags.iter().all(|x| !x),
                    Func::AllTrue => flags.iter().all(|x| *x),
                    Func::AnyTrue => flags.iter().any(|x| *x),
                    _ => flags.iter().any(|x| !x),
                })
            }
            Func::Combine => {
                let mut out = input;
                out.extend(arg(0)?);
                Ok(out)
            }
            Func::Union => {
                let mut all = input;
                all.extend(arg(0)?);
                Ok(self.dedup(all))
            }
            Func::Intersect | Func::Exclude => {
                let other = arg(0)?;
                let keep = f == Func::Intersect;
                let mut out: Vec<Val> = Vec::new();
                for v in input {
                    if self.contains_item(&other, &v) == keep && !(keep && self.contains_item(&out, &v)) {
                        out.push(v);
                    }
                }
                Ok(out)
            }
            Func::Resolve => Ok(input.iter().filter_map(|v| self.resolve(v)).map(Val::Node).collect()),
            Func::MemberOf => {
                // FHIRPath (fhirpath.html, "memberOf"): on one code-valued element, whether its
                // code (a concept: any of its codings) is in the value set; empty in, empty out.
                let n = match input.as_slice() {
                    [] => return Ok(Vec::new()),
                    [Val::Node(n)] => *n,
                    _ => return Err(EvalError),
                };
                let Some(url) = self.single_str(&arg(0)?)? else { return Ok(Vec::new()) };
                let vs = self.value_sets.as_deref().ok_or(EvalError)?;
                b(vs.member_of(doc, n, url.as_str()).ok_or(EvalError)?)
            }
            Func::Extension => {
                let Some(url) = self.single_str(&arg(0)?)? else { return Ok(Vec::new()) };
                let mut out = Vec::new();
                for v in &input {
                    if let Val::Node(n) = *v {
                        for e in doc.named(n, "extension") {
                            if doc.named(e, "url").any(|u| doc.value(u) == url.as_bytes()) {
                                out.push(Val::Node(e));
                            }
                        }
                    }
                }
                Ok(out)
            }
        }
    }

    fn filter(&self, input: &[Val], crit: &Expr, d: u32) -> R {
        let mut out = Vec::new();
        for (i, v) in input.iter().enumerate() {
            let this = [v.clone()];
            let s = Scope { this: &this, index: Some(i) };
            let r = self.eval(crit, &this, &s, d)?;
            if self.truth(&r)? == Some(true) {
                out.push(v.clone());
            }
        }
        Ok(out)
    }

    /// `resolve()` within the document: `#id` to the first contained resource of the root
    /// resource with that id; otherwise, inside a Bundle, to the first entry whose `fullUrl` is
    /// the reference or whose resource has the type and id it names. Both by one look-up in an
    /// index of the document ([`NavCache`]), built once.
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn resolve(&self, v: &Val) -> Option<u32> {
        let doc = self.doc;
        let Val::Node(n) = *v else { return None };
        let r =
            if doc.node(n).has_value() { n } else { doc.named(n, "reference").find(|&c| doc.node(c).has_value())? };
        let reference = doc.value(r);
        if let Some(id) = reference.strip_prefix(b"#") {
            return self.cache.contained_ids(self, self.root_resource).first.get(id).copied();
        }
        // The nearest enclosing Bundle.
        let mut cur = doc.node(n).parent;
        while cur != NONE {
            let node = doc.node(cur);
            if node.is_resource() && node.ty.is_some_and(|t| defs::type_name(t) == "Bundle") {
                break;
            }
            cur = node.parent;
        }
        if cur == NONE {
            return None;
        }
        self.cache.bundle_entries(self, cur).resolve(reference)
    }
}

/// True for a path from a variable whose functions take no argument but literals
/// (`%resource.snapshot.element.first().path`, `%resource.x.replaceMatches('a', '')`): its value
/// is the same for every focus and scope of one environment.
fn rooted_at_variable(mut e: &Expr) -> bool {
    let literal = |a: &Expr| {
        matches!(
            a,
            Expr::Empty
                | Expr::Bool(_)
                | Expr::Str(_)
                | Expr::Int(_)
                | Expr::Dec(_)
                | Expr::DateTime(_)
                | Expr::Quantity(..)
        )
    };
    loop {
        match e {
            Expr::Member(target, _) => e = target,
            Expr::Call(Some(target), _, args) if args.iter().all(literal) => e = target,
            Expr::Var(_) => return true,
            _ => return false,
        }
    }
}

/// `ele-1` (`hasValue() or (children().count() > id.count())`) at node `context`: the result
/// of the engine over its compiled expression (a test checks both agree on the fixtures),
/// without building the collections.
pub fn ele_1(doc: &Document, context: u32) -> bool {
    if doc.node(context).has_value() {
        return true;
    }
    // `children().count() > id.count()`: the children named `id` are among the known
    // children, so the count is greater exactly when one known child is not an `id`
    // (navigation to `id` never finds the context itself: `id` is not a type name).
    doc.children(context).any(|c| !doc.node(c).is_unknown() && !is_named(doc, c, "id"))
}

/// Whether child `c` is found by navigating to `name` (the test of [`Env::navigate`]).
#[inline(always)]
pub(super) fn is_named(doc: &Document, c: u32, name: &str) -> bool {
    let node = doc.node(c);
    let (have, want) = (node.name.as_bytes(), name.as_bytes());
    if want.len() <= have.len() {
        // Only equality can hold (a typed choice name is longer than the element's); an unknown
        // element is never found.
        return want.len() == have.len() && have.first() == want.first() && have == want && !node.is_unknown();
    }
    is_named_by_type(node, name)
}

/// `valueQuantity`: a choice element by its typed name (the rest of [`is_named`]).
fn is_named_by_type(node: &crate::formats::fhir::model::Node, name: &str) -> bool {
    let (have, want) = (node.name.as_bytes(), name.as_bytes());
    if node.is_unknown() || have.first().is_some_and(|a| *a != want[0]) || !want.starts_with(have) {
        return false;
    }
    let Some(t) = node.ty else { return false };
    let is_choice = node.elem.and_then(defs::element).is_some_and(|d| d.choice);
    is_choice && name[have.len()..].eq_ignore_ascii_case(defs::type_name(t))
}

fn arithmetic(op: Op, x: Val, y: Val) -> Result<Option<Val>, EvalError> {
    Ok(Some(match (x, y) {
        (Val::Int(a), Val::Int(b)) => match op {
            Op::Add => Val::Int(a.checked_add(b).ok_or(EvalError)?),
            Op::Sub => Val::Int(a.checked_sub(b).ok_or(EvalError)?),
            Op::Mul => Val::Int(a.checked_mul(b).ok_or(EvalError)?),
            Op::Div => {
                if b == 0 {
                    return Ok(None);
                }
                Val::Dec(a as f64 / b as f64)
            }
            Op::IntDiv => {
                if b == 0 {
                    return Ok(None);
                }
                Val::Int(a.div_euclid(b))
            }
            Op::Mod => {
                if b == 0 {
                    return Ok(None);
                }
                Val::Int(a.rem_euclid(b))
            }
            _ => return Err(EvalError),
        },
        (Val::Str(a), Val::Str(b)) if op == Op::Add => Val::string(format!("{}{}", a.as_str(), b.as_str())),
        (a, b) => {
            let num = |v: &Val| match v {
                Val::Int(i) => Some(*i as f64),
                Val::Dec(x) => Some(*x),
                _ => None,
            };
            let (Some(a), Some(b)) = (num(&a), num(&b)) else { return Err(EvalError) };
            Val::Dec(match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div if b != 0.0 => a / b,
                _ => return Ok(None),
            })
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `isDistinct()` without comparing every pair gives what comparing every pair gives, on
    /// the children and the descendants of every element of the FHIR fixtures and of documents
    /// with repeats of each kind (text, complex, valueless, numbers equal across types).
    #[test]
    fn distinct_items_agree_with_every_pair() {
        let limits = crate::limits::Limits::default();
        let mut docs = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/fhir"))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "json" || e == "xml") {
                    if let Ok(doc) = crate::formats::fhir::read(std::fs::read(&path).expect("read"), &limits) {
                        docs.push(doc);
                    }
                }
            }
        }
        let crafted = [
            r#"{"resourceType":"Questionnaire","status":"draft","item":[{"linkId":"a","type":"string"},{"linkId":"b","type":"string"},{"linkId":"c","type":"string"},{"linkId":"d","type":"string"},{"linkId":"e","type":"string"},{"linkId":"f","type":"string"},{"linkId":"g","type":"string"},{"linkId":"h","type":"string"},{"_linkId":{"extension":[{"url":"http://x.org/e","valueString":"s"}]},"type":"string"},{"_linkId":{"extension":[{"url":"http://x.org/e","valueString":"s"}]},"type":"string"}]}"#,
            r#"{"resourceType":"Observation","status":"final","code":{"coding":[{"system":"s","code":"1"},{"system":"s","code":"2"},{"system":"s","code":"3"},{"system":"s","code":"4"},{"system":"s","code":"5"},{"system":"s","code":"6"},{"system":"s","code":"7"},{"system":"s","code":"8"},{"system":"s","code":"2"}]},"component":[{"code":{"text":"a"},"valueInteger":1},{"code":{"text":"a"},"valueQuantity":{"value":1.0}},{"code":{"text":"a"},"valueDateTime":"2020"},{"code":{"text":"a"},"valueDateTime":"2020-01"},{"code":{"text":"a"},"valueString":"2020"},{"code":{"text":"a"},"valueBoolean":true},{"code":{"text":"a"},"valueInteger":2},{"code":{"text":"a"},"valueBoolean":true},{"code":{"text":"a"},"valueString":"x"}]}"#,
        ];
        for c in crafted {
            docs.push(crate::formats::fhir::read(c.as_bytes().to_vec(), &limits).expect("reads"));
        }
        let mut checked = (0usize, 0usize);
        for doc in &docs {
            let cache = NavCache::default();
            let env = Env::new(doc, 0, 0, 0, &cache);
            for n in 0..doc.nodes().len() as u32 {
                let children: Vec<Val> =
                    doc.children(n).filter(|&c| !doc.node(c).is_unknown()).map(Val::Node).collect();
                // The values of the children's children too (`component.value`), as nodes.
                let grandchildren: Vec<Val> = children
                    .iter()
                    .flat_map(
                        |c| if let Val::Node(c) = c { doc.children(*c).collect::<Vec<u32>>() } else { Vec::new() },
                    )
                    .filter(|&c| !doc.node(c).is_unknown())
                    .map(Val::Node)
                    .collect();
                for items in [children, grandchildren] {
                    let pairwise = items.iter().enumerate().all(|(i, v)| !env.contains_item(&items[..i], v));
                    assert_eq!(env.distinct_items(&items), pairwise, "node {n}");
                    checked.0 += usize::from(items.len() > 8);
                    checked.1 += usize::from(items.len() > 8 && !pairwise);
                }
            }
        }
        assert!(checked.0 > 50 && checked.1 > 0, "{checked:?}");
    }
}
