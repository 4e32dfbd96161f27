//! A small JSON tree for building FHIR resources in a fixed key order, then writing them once.
//!
//! Keys are `&'static str` names of FHIR elements (never values). Strings are message values:
//! they are zeroized when the tree is dropped. Objects keep insertion order (deterministic
//! output: the converter inserts in a fixed order), and an empty object or array is never
//! written (FHIR JSON forbids `{}` and `[]`).
//!
//! What it does not do: parse JSON, or check FHIR rules (the validator does, on the output).

use crate::formats::fhir::direct::{self, Json};

/// A JSON value.
pub enum V {
    /// A string (a message value, or a code built at run time).
    S(String),
    /// A fixed string from the converter's code (no value: nothing to zeroize).
    C(&'static str),
    /// A JSON number, already checked to match the FHIR decimal/integer syntax.
    N(String),
    /// A boolean.
    B(bool),
    /// An object.
    O(Obj),
    /// An array.
    A(Vec<V>),
}

impl Drop for V {
    fn drop(&mut self) {
        match self {
            V::S(s) | V::N(s) => spare::keep_string(s),
            V::O(o) => spare::keep_members(std::mem::take(&mut o.0)),
            V::A(items) => spare::keep_items(std::mem::take(items)),
            V::C(_) | V::B(_) => {}
        }
    }
}

/// An empty string with room for `n` bytes, for a value of a tree: its allocation may be one
/// a dropped tree's string left (wiped), as [`V`]'s strings are kept when dropped.
pub fn string(n: usize) -> String {
    spare::string(n)
}

/// [`string`] holding a copy of `s`.
pub fn copy(s: &str) -> String {
    let mut t = spare::string(s.len());
    t.push_str(s);
    t
}

/// The emptied member and item vectors, and the wiped strings, of dropped trees, per thread,
/// for the next trees: a converted message builds and drops about 400 vectors and 900 strings,
/// and taking one here costs a fraction of an allocation and its release. Emptied means the
/// members were dropped (their strings wiped) before a vector is kept; wiped means every byte
/// of a string's allocation was zeroed before it is kept. Only allocations are reused.
mod spare {
    use std::cell::RefCell;
    use std::thread::LocalKey;

    use super::V;

    /// The classes of each kind of vector, by capacity: class `k` holds the vectors of at least
    /// `mins[k]` elements (and fewer than the next class's), so that one taken from the class
    /// of a request always has room for it, and at most `kept[k]` of them; vectors above `max`
    /// are released, not kept. What a thread keeps is bounded by about 9 MB (the classes'
    /// largest vectors, each class full); a converted ORU^R01 of 25 results keeps about 150 kB.
    struct Classes<const N: usize> {
        mins: [usize; N],
        kept: [usize; N],
        max: usize,
    }

    /// Members are 48 bytes, items 32.
    const MEMBERS_CLASSES: Classes<3> = Classes { mins: [4, 12, 24], kept: [4096, 1024, 256], max: 64 };
    const ITEMS_CLASSES: Classes<3> = Classes { mins: [4, 16, 64], kept: [4096, 512, 32], max: 1024 };
    const STRING_CLASSES: Classes<4> = Classes { mins: [16, 48, 128, 512], kept: [4096, 2048, 512, 128], max: 4096 };

    type Members = Vec<(&'static str, V)>;
    type Kept<T, const N: usize> = RefCell<[Vec<Vec<T>>; N]>;

    thread_local! {
        static MEMBERS: Kept<(&'static str, V), 3> = const { RefCell::new([const { Vec::new() }; 3]) };
        static ITEMS: Kept<V, 3> = const { RefCell::new([const { Vec::new() }; 3]) };
        static STRINGS: Kept<u8, 4> = const { RefCell::new([const { Vec::new() }; 4]) };
    }

    /// An empty member vector with room for `n` members.
    pub(super) fn members(n: usize) -> Members {
        take(&MEMBERS, &MEMBERS_CLASSES, n)
    }

    /// An empty item vector with room for `n` items.
    pub(super) fn items(n: usize) -> Vec<V> {
        take(&ITEMS, &ITEMS_CLASSES, n)
    }

    /// An empty string with room for `n` bytes.
    pub(super) fn string(n: usize) -> String {
        String::from_utf8(take(&STRINGS, &STRING_CLASSES, n)).unwrap_or_default()
    }

    /// Drops the members (before the kept vectors are borrowed: they return their own
    /// vectors), then keeps the vector.
    pub(super) fn keep_members(mut v: Members) {
        v.clear();
        keep(&MEMBERS, &MEMBERS_CLASSES, v);
    }

    /// [`keep_members`] for items.
    pub(super) fn keep_items(mut v: Vec<V>) {
        v.clear();
        keep(&ITEMS, &ITEMS_CLASSES, v);
    }

    /// Wipes a string of a dropped tree (every byte of its allocation), then keeps its
    /// allocation.
    pub(super) fn keep_string(s: &mut String) {
        let mut bytes = std::mem::take(s).into_bytes();
        crate::phi::wipe_keep(&mut bytes);
        keep(&STRINGS, &STRING_CLASSES, bytes);
    }

    /// A kept vector with room for `n` elements, or a new one (also when the thread's vectors
    /// are gone: a thread ending).
    fn take<T: 'static, const N: usize>(kept: &'static LocalKey<Kept<T, N>>, classes: &Classes<N>, n: usize) -> Vec<T> {
        let Some(class) = classes.mins.iter().position(|&c| c >= n) else { return Vec::with_capacity(n) };
        let found = kept.try_with(|k| k.try_borrow_mut().ok().and_then(|mut k| k.get_mut(class)?.pop()));
        let mut v = found.ok().flatten().unwrap_or_else(|| Vec::with_capacity(classes.mins[class]));
        v.reserve(n);
        v
    }

    /// Keeps an empty vector in the class of its capacity (or releases it: too small or large,
    /// enough kept, or a thread ending).
    fn keep<T: 'static, const N: usize>(kept: &'static LocalKey<Kept<T, N>>, classes: &Classes<N>, v: Vec<T>) {
        let cap = v.capacity();
        if cap > classes.max {
            return;
        }
        let Some(class) = classes.mins.iter().rposition(|&c| c <= cap) else { return };
        let most = classes.kept[class];
        let _ = kept.try_with(|k| {
            if let Ok(mut k) = k.try_borrow_mut() {
                if let Some(kept) = k.get_mut(class) {
                    if kept.len() < most {
                        kept.push(v);
                    }
                }
            }
        });
    }
}

impl V {
    /// A fixed string.
    pub fn code(s: &'static str) -> V {
        V::C(s)
    }

    /// True when writing it would produce nothing (an empty object or array).
    pub fn is_empty(&self) -> bool {
        match self {
            V::O(o) => o.is_empty(),
            V::A(a) => a.iter().all(V::is_empty),
            _ => false,
        }
    }

    /// Appends compact JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        direct::write(self, out);
    }
}

impl direct::Value for V {
    fn json(&self) -> Json<'_, V> {
        match self {
            V::S(s) => Json::Str(s),
            V::C(s) => Json::Str(s),
            V::N(n) => Json::Num(n),
            V::B(b) => Json::Bool(*b),
            V::O(o) => Json::Obj(&o.0),
            V::A(items) => Json::Arr(items),
        }
    }

    fn is_empty(&self) -> bool {
        V::is_empty(self)
    }
}

/// An object with keys in insertion order.
#[derive(Default)]
pub struct Obj(Vec<(&'static str, V)>);

impl Obj {
    /// An empty object.
    pub fn new() -> Obj {
        Obj(spare::members(0))
    }

    /// An empty object with room for `n` members.
    pub fn with_capacity(n: usize) -> Obj {
        Obj(spare::members(n))
    }

    /// An empty object with room for exactly `n` members (not one kept by a dropped tree, which
    /// has room for at least four): for the many small objects of one large resource.
    pub fn with_exact_capacity(n: usize) -> Obj {
        Obj(Vec::with_capacity(n))
    }

    /// True when no member would be written. Members are only ever added, never emptied, and
    /// [`Obj::set`] and [`Obj::push`] leave empty values out: an object with a member is not
    /// empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when the member is present (and not empty).
    pub fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, v)| *k == key && !v.is_empty())
    }

    /// Sets a member (replacing one with the same key).
    pub fn set(&mut self, key: &'static str, v: V) -> &mut Obj {
        if v.is_empty() {
            return self;
        }
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = v,
            None => self.0.push((key, v)),
        }
        self
    }

    /// Sets a string member when present.
    pub fn opt(&mut self, key: &'static str, s: Option<String>) -> &mut Obj {
        if let Some(s) = s {
            self.set(key, V::S(s));
        }
        self
    }

    /// Sets an object member when not empty.
    pub fn obj(&mut self, key: &'static str, o: Obj) -> &mut Obj {
        self.set(key, V::O(o))
    }

    /// Appends to an array member (created on first use).
    pub fn push(&mut self, key: &'static str, v: V) -> &mut Obj {
        if v.is_empty() {
            return self;
        }
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, V::A(items))) => items.push(v),
            Some(slot) => slot.1 = V::A(Self::first_item(v)),
            None => self.0.push((key, V::A(Self::first_item(v)))),
        }
        self
    }

    /// A new array member's items: with room for a few (most arrays the converter builds hold
    /// one to four items; growing from one would reallocate twice).
    fn first_item(v: V) -> Vec<V> {
        let mut items = spare::items(4);
        items.push(v);
        items
    }

    /// Appends an object to an array member.
    pub fn push_obj(&mut self, key: &'static str, o: Obj) -> &mut Obj {
        self.push(key, V::O(o))
    }

    /// Number of items of an array member.
    pub fn count(&self, key: &str) -> usize {
        match self.0.iter().find(|(k, _)| *k == key) {
            Some((_, V::A(items))) => items.len(),
            Some(_) => 1,
            None => 0,
        }
    }

    /// Appends compact JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        direct::write_object(&self.0, out);
    }

    /// The JSON values it is written as (itself included); `None` when a number is not a JSON
    /// number (see [`direct::count_checked`]).
    pub fn count_checked(&self) -> Option<usize> {
        self.0.iter().filter(|(_, v)| !v.is_empty()).try_fold(1usize, |n, (_, v)| Some(n + direct::count_checked(v)?))
    }
}

crate::debug_placeholder!(V, Obj);
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_in_order_and_skips_empty() {
        let mut o = Obj::new();
        o.set("resourceType", V::code("Patient"));
        o.obj("meta", Obj::new());
        o.push("name", V::O(Obj::new()));
        o.set("active", V::B(true));
        let mut out = Vec::new();
        o.write(&mut out);
        assert_eq!(out, br#"{"resourceType":"Patient","active":true}"#);
    }

    #[test]
    fn kept_allocations_have_room_and_start_empty() {
        // The second round takes what the first kept.
        for _ in 0..2 {
            let mut o = Obj::with_capacity(12);
            for n in [0usize, 1, 15, 16, 17, 47, 48, 49, 200, 600, 5000] {
                let s = string(n);
                assert!(s.is_empty() && s.capacity() >= n, "{n}");
                o.push("given", V::S(copy(&"x".repeat(n.max(1)))));
            }
            for n in [0usize, 3, 4, 5, 13, 30, 100, 2000] {
                let m = spare::members(n);
                assert!(m.is_empty() && m.capacity() >= n, "{n}");
                let i = spare::items(n);
                assert!(i.is_empty() && i.capacity() >= n, "{n}");
            }
            let mut out = Vec::new();
            o.write(&mut out);
            assert!(out.starts_with(br#"{"given":["x","x","#), "{}", String::from_utf8_lossy(&out[..20]));
            assert_eq!(o.count("given"), 11);
        }
    }
}
