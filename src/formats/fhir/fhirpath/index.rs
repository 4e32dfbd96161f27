//! Indexes of one document for the FHIRPath engine, each built once, on first need, and shared
//! by every evaluation over the document ([`NavCache`]).
//!
//! Some published invariants compare every item of one large collection with every item of
//! another: `ref-1` looks each local reference up in `%rootResource.contained.id`, `resolve()`
//! looks a reference up among the contained resources or the entries of the enclosing Bundle.
//! Evaluated as written, a resource with 50,000 contained resources and as many references
//! costs 50,000 x 50,000 comparisons. The indexes here turn each look-up into one hash probe
//! after one pass over the collection, so the cost of validation stays linear in the input.
//!
//! The keys are spans of the document's values (no copy of a value is made, so nothing needs
//! zeroizing); `Debug` prints counts only.
//!
//! What it does not do: decide an invariant. [`super::eval`] applies the FHIRPath semantics and
//! uses these tables only where they give the engine's own result (its tests check both agree
//! on every element of the fixtures).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::eval::{self, Env};
use super::value::Val;

/// Children by name of large elements, and the indexes of this module, for one document.
#[derive(Default)]
pub struct NavCache<'d> {
    /// `(node, name)` → the children that navigation to `name` finds, for elements with many
    /// descendants (a Bundle with thousands of entries is navigated once per entry by `bdl-3`'s
    /// `%resource.type`).
    pub(super) nav: RefCell<HashMap<(u32, String), Vec<u32>>>,
    /// Per resource node: the ids of its contained resources.
    contained: RefCell<HashMap<u32, Rc<ContainedIds<'d>>>>,
    /// Per Bundle node: its entries by `fullUrl` and by type and id.
    bundles: RefCell<HashMap<u32, Rc<BundleEntries<'d>>>>,
}

impl std::fmt::Debug for NavCache<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NavCache")
            .field("nav", &self.nav.borrow().len())
            .field("contained", &self.contained.borrow().len())
            .field("bundles", &self.bundles.borrow().len())
            .finish()
    }
}

/// The `id` children of the contained resources of one resource.
pub(super) struct ContainedIds<'d> {
    /// For `%rootResource.contained.id` (`ref-1`): the values of the `id` elements that
    /// navigation finds and that compare as text (a primitive of a string type with a value).
    pub(super) text: HashSet<&'d [u8]>,
    /// True when an `id` element has a value that does not compare as text (none does in R4,
    /// where `Resource.id` is a string type): the engine then decides `ref-1` itself.
    pub(super) other: bool,
    /// For `resolve()` of `#id`: the value of each `id` element → the first contained resource
    /// (in document order) that has it.
    pub(super) first: HashMap<&'d [u8], u32>,
}

/// The entries of one Bundle, for `resolve()`.
pub(super) struct BundleEntries<'d> {
    /// The value of each `fullUrl` → the first entry (ordinal) that has it.
    full_url: HashMap<&'d [u8], u32>,
    /// `(type name, id value)` of each entry's resource → the first entry (ordinal) with it.
    type_id: HashMap<(&'d [u8], &'d [u8]), u32>,
    /// Per entry ordinal: its first `resource` child.
    resource: Vec<Option<u32>>,
}

impl<'d> NavCache<'d> {
    /// The ids of the contained resources of resource `root` (built on first call).
    pub(super) fn contained_ids(&self, env: &Env<'d>, root: u32) -> Rc<ContainedIds<'d>> {
        if let Some(hit) = self.contained.borrow().get(&root) {
            return Rc::clone(hit);
        }
        let built = Rc::new(ContainedIds::build(env, root));
        self.contained.borrow_mut().insert(root, Rc::clone(&built));
        built
    }

    /// The entries of Bundle `bundle` (built on first call).
    pub(super) fn bundle_entries(&self, env: &Env<'d>, bundle: u32) -> Rc<BundleEntries<'d>> {
        if let Some(hit) = self.bundles.borrow().get(&bundle) {
            return Rc::clone(hit);
        }
        let built = Rc::new(BundleEntries::build(env, bundle));
        self.bundles.borrow_mut().insert(bundle, Rc::clone(&built));
        built
    }
}

impl<'d> ContainedIds<'d> {
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn build(env: &Env<'d>, root: u32) -> Self {
        let doc = env.doc;
        let mut ids = ContainedIds { text: HashSet::new(), other: false, first: HashMap::new() };
        // `resolve()` takes the children by exact name (`Document::named`), navigation by
        // [`eval::is_named`]; each table is built with the test its user applies.
        for c in doc.children(root) {
            let (by_name, by_nav) = (exact(env, c, "contained"), eval::is_named(doc, c, "contained"));
            if !by_name && !by_nav {
                continue;
            }
            for i in doc.children(c) {
                if by_name && exact(env, i, "id") {
                    ids.first.entry(doc.value(i)).or_insert(c);
                }
                if by_nav && eval::is_named(doc, i, "id") {
                    let item = Val::Node(i);
                    if env.text_key(&item).is_some() {
                        ids.text.insert(doc.value(i));
                    } else if env.prim(&item).is_some() {
                        ids.other = true;
                    }
                }
            }
        }
        ids
    }
}

impl<'d> BundleEntries<'d> {
    #[expect(
        clippy::disallowed_methods,
        reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
    )]
    fn build(env: &Env<'d>, bundle: u32) -> Self {
        let doc = env.doc;
        let mut entries = BundleEntries { full_url: HashMap::new(), type_id: HashMap::new(), resource: Vec::new() };
        for (ordinal, e) in doc.named(bundle, "entry").enumerate() {
            let ordinal = u32::try_from(ordinal).unwrap_or(u32::MAX);
            let res = doc.named(e, "resource").next();
            entries.resource.push(res);
            for u in doc.named(e, "fullUrl") {
                entries.full_url.entry(doc.value(u)).or_insert(ordinal);
            }
            let Some(res) = res else { continue };
            let ty = doc.node(res).ty.map_or("", super::super::definitions::type_name);
            if ty.is_empty() {
                continue;
            }
            for i in doc.named(res, "id") {
                entries.type_id.entry((ty.as_bytes(), doc.value(i))).or_insert(ordinal);
            }
        }
        entries
    }

    /// The resource that `reference` resolves to among the entries: the first entry whose
    /// `fullUrl` is `reference` (its resource, if it has one), or whose resource has the type
    /// and id that `reference` names (`Type/id`), whichever comes first.
    pub(super) fn resolve(&self, reference: &'d [u8]) -> Option<u32> {
        let by_url = self.full_url.get(reference).copied();
        // A type name has no `/`: `Type/id` splits at the first one.
        let by_type = reference
            .iter()
            .position(|&b| b == b'/')
            .and_then(|slash| self.type_id.get(&(&reference[..slash], &reference[slash + 1..])).copied());
        let ordinal = match (by_url, by_type) {
            (Some(u), Some(t)) => u.min(t),
            (Some(o), None) | (None, Some(o)) => o,
            (None, None) => return None,
        };
        self.resource.get(usize::try_from(ordinal).ok()?).copied().flatten()
    }
}

/// The test of `Document::named`: a known element of that exact name.
fn exact(env: &Env<'_>, i: u32, name: &str) -> bool {
    let node = env.doc.node(i);
    !node.is_unknown() && node.name == name
}
