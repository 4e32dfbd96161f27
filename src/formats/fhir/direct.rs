//! A FHIR JSON document written and read in one walk over a tree of JSON values held in memory
//! (the converter's): the bytes are exactly what writing the tree gives, and the [`Document`] is
//! exactly what [`super::read_json::read`] gives on those bytes, without parsing them back.
//!
//! The walk builds only the shapes the JSON reader resolves without a finding of its own: every
//! key a defined element, arrays exactly for repeating elements, scalars of the JSON kind of
//! their primitive type, a primitive's `_x` twin only for a non-repeating element without its
//! `x`, a known `resourceType` on every resource, and the reader's limits (values, depth,
//! string length) not reached. On anything else the walk stops building (the bytes are still
//! written in full) and returns `None`: the caller then reads the bytes back with
//! [`super::read`], which makes the findings. A test compares both ways over every fixture.
//!
//! What it does not do: read JSON text, or produce the reader's findings (it leaves them to it).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::diag::{Code, Diagnostic, Location, Severity};
use crate::limits::Limits;
use crate::phi::Phi;

use super::definitions::{self as defs, ElemRef, Kind, TypeId, TypeRef};
use super::json::Span;
use super::model::{self, Builder, Document, NONE, Syntax, ValueKind, flag};
use super::read_json::json_kind_of;

/// One JSON value of an in-memory tree, as the walk sees it.
#[derive(Debug)]
pub enum Json<'a, T> {
    /// A string (any text; escaped when written).
    Str(&'a str),
    /// A number, as its JSON text.
    Num(&'a str),
    /// `true` or `false`.
    Bool(bool),
    /// An object: members in the order they are written.
    Obj(&'a [(&'static str, T)]),
    /// An array.
    Arr(&'a [T]),
}

/// A tree of JSON values that can be written and read in one walk.
pub trait Value: Sized {
    /// This value.
    fn json(&self) -> Json<'_, Self>;
    /// True when it is written as nothing: an object whose members are all empty, or an array
    /// whose items are all empty (FHIR JSON has no `{}` or `[]`). Empty members and items are
    /// left out.
    fn is_empty(&self) -> bool;
}

/// Writes `v` as compact JSON (empty members and items left out).
pub fn write<T: Value>(v: &T, out: &mut Vec<u8>) {
    match v.json() {
        Json::Str(s) => crate::json::string(out, s),
        Json::Num(n) => out.extend_from_slice(n.as_bytes()),
        Json::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Json::Obj(members) => write_object(members, out),
        Json::Arr(items) => {
            out.push(b'[');
            let mut first = true;
            for v in items.iter().filter(|v| !v.is_empty()) {
                if !first {
                    out.push(b',');
                }
                first = false;
                write(v, out);
            }
            out.push(b']');
        }
    }
}

/// Writes an object's members as compact JSON (empty members left out).
pub fn write_object<T: Value>(members: &[(&'static str, T)], out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    for (k, v) in members.iter().filter(|(_, v)| !v.is_empty()) {
        if !first {
            out.push(b',');
        }
        first = false;
        crate::json::key(out, k);
        write(v, out);
    }
    out.push(b'}');
}

/// Writes the resource `root` (an object with a `resourceType`) to `out` and returns its
/// element tree, or `None` when the tree has a shape the JSON reader reports or limits it
/// reaches: read `out` back then. `out` holds the whole JSON text either way.
///
/// The document's input bytes are not kept (the caller has them in `out`): it serves
/// validation, not `fmt`.
pub fn write_and_read<T: Value>(root: &T, out: &mut Vec<u8>, limits: &Limits) -> Option<Document> {
    match write_and_read_with(root, None, out, limits, false, None) {
        Written::Built(doc) => Some(doc),
        Written::ReadBack | Written::Fatal(_) => None,
    }
}

/// Where the bytes of a large document go as they are written (see [`write_and_read_with`]).
pub type Spill<'a> = &'a mut dyn FnMut(&[u8]);

/// What [`write_and_read_with`] wrote.
#[derive(Debug)]
pub enum Written {
    /// The element tree, as the reader would read the bytes.
    Built(Document),
    /// The bytes must be read back (all of them are in `out`).
    ReadBack,
    /// Reading the bytes back fails with this fatal finding (`CLI_INPUT_TOO_LARGE` at the
    /// offset where the reader stops), known without them: some may have been spilled.
    Fatal(Diagnostic),
}

/// Bytes kept in `out` before they are handed to the spill (once they need not be read back);
/// small in unit tests, so that the fixtures' Bundles are spilled.
const SPILL_AT: usize = if cfg!(test) { 512 } else { 256 * 1024 };

/// [`write_and_read`] for a large document: the last member of the root object, `tail.0`, is an
/// array whose items come from `tail.1` one at a time (each dropped once written), so that the
/// whole tree is never held. With `over_limit` the caller knows that the document has more JSON
/// values than the reader's node limit and that every number is a JSON number (see
/// [`count_checked`]): the reader stops at a place the walk locates, so the element tree is not
/// built. Once the reader is known to stop at such a place (the fatal finding is then known
/// without the bytes; with `over_limit`, from the start), the bytes written are handed to
/// `spill` (the start of `out` included) every [`SPILL_AT`] bytes and removed from `out`
/// (wiped). The bytes handed to `spill`, then `out`, are exactly what writing the whole tree
/// gives.
pub fn write_and_read_with<'o, T: Value>(
    root: &T,
    tail: Option<(&'static str, &mut dyn Iterator<Item = T>)>,
    out: &'o mut Vec<u8>,
    limits: &Limits,
    over_limit: bool,
    spill: Option<Spill<'o>>,
) -> Written {
    let build = !over_limit;
    // Node and value-buffer sizes of the recent documents (the largest, decaying by an eighth
    // per document): the next one (the next message of a stream) is sized from them instead of
    // growing step by step. Shared by the threads (a converting thread lives for one batch of
    // messages); capacities only.
    static LAST_NODES: AtomicUsize = AtomicUsize::new(0);
    static LAST_TEXT: AtomicUsize = AtomicUsize::new(0);
    let (nodes, text) = (LAST_NODES.load(Ordering::Relaxed), LAST_TEXT.load(Ordering::Relaxed));
    let base = out.len();
    let mut b = Builder::new(limits.max_segments);
    if build {
        b.nodes.reserve(nodes + nodes / 8);
    }
    let mut children = CHILD_CACHE.take();
    if children.len() != CHILD_SLOTS {
        children = vec![None; CHILD_SLOTS];
    }
    let mut w = Walk {
        out,
        children,
        plain_keys: [(0, 0); PLAIN_SLOTS],
        base,
        flushed: 0,
        spill,
        over_limit,
        limit: Limit::None,
        b,
        values: Vec::with_capacity(if build { text + text / 8 } else { 0 }),
        building: build,
        json_values: 0,
        limits,
    };
    match root.json() {
        Json::Obj(members) => w.resource(members, tail, NONE, None, 0, 0, 0),
        _ => {
            w.building = false;
            w.limit = Limit::Unknown;
            write(root, w.out);
        }
    }
    let total = w.len();
    let Walk { b, values, building, json_values, children, limit, .. } = w;
    CHILD_CACHE.set(children);
    if build {
        LAST_NODES.store(b.nodes.len().max(nodes - nodes / 8), Ordering::Relaxed);
        LAST_TEXT.store(values.len().max(text - text / 8), Ordering::Relaxed);
    }
    // Wiped when dropped, on either path.
    let values = Phi::new(values);
    // The reader's first check: the length of its input.
    if total > u32::MAX as usize - 1 {
        return Written::Fatal(too_large(0));
    }
    if let Limit::Exact(offset) = limit {
        return Written::Fatal(too_large(offset));
    }
    debug_assert!(!over_limit, "direct: a document said to pass the node limit does not");
    if !building || json_values > limits.max_segments as usize {
        return Written::ReadBack;
    }
    Written::Built(Document {
        input: Phi::new(Vec::new()),
        values,
        nodes: b.nodes,
        syntax: Syntax::Json,
        findings: b.findings,
    })
}

/// The reader's fatal finding for a limit reached at `offset`.
fn too_large(offset: u32) -> Diagnostic {
    Diagnostic::new(Code::CLI_INPUT_TOO_LARGE, Location::Offset(u64::from(offset))).with_severity(Severity::Fatal)
}

/// Where the JSON reader would first stop on the bytes written so far.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Limit {
    /// Nowhere yet.
    None,
    /// At this offset: a value beyond the node limit, a container at the depth limit, or a
    /// string over the length limit.
    Exact(u32),
    /// Somewhere the walk does not locate (a number that is not one): only reading the bytes
    /// back tells.
    Unknown,
}

/// Where the reader stops, past the string length limit `max`, in the JSON string literal that
/// starts `literal` (at its opening quote): its offset there, or `None` when the string is
/// within the limit. The reader's own steps: a run of plain bytes, then the limit checked, then
/// an escape.
fn string_overflow(literal: &[u8], max: usize) -> Option<usize> {
    let mut i = 1;
    let mut len = 0usize;
    loop {
        let run = i;
        while literal.get(i).is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20) {
            i += 1;
        }
        len += i - run;
        if len > max {
            return Some(i);
        }
        if literal.get(i) != Some(&b'\\') {
            return None;
        }
        let hex = |at: usize| {
            let digits = literal.get(at..at + 4)?;
            u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
        };
        match literal.get(i + 1) {
            Some(b'u') => {
                let hi = hex(i + 2)?;
                i += 6;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    let lo = hex(i + 2)?;
                    i += 6;
                    0x10000 + ((hi - 0xD800) << 10) + (lo.checked_sub(0xDC00)?)
                } else {
                    hi
                };
                len += char::from_u32(cp)?.len_utf8();
            }
            Some(_) => {
                i += 2;
                len += 1;
            }
            None => return None,
        }
    }
}

struct Walk<'o, 'l> {
    out: &'o mut Vec<u8>,
    /// `CHILD_SLOTS` slots, kept per thread between walks.
    children: Vec<ChildSlot>,
    /// Keys (address and length) known to need no escape, by [`Walk::key`].
    plain_keys: [(usize, usize); PLAIN_SLOTS],
    base: usize,
    /// Bytes of the document already handed to `spill` (and removed from `out`).
    flushed: usize,
    spill: Option<Spill<'o>>,
    /// The reader is known to stop at a place the walk locates (see [`write_and_read_with`]).
    over_limit: bool,
    /// Where the reader would first stop.
    limit: Limit,
    b: Builder,
    /// The primitive values, each a span of this buffer.
    values: Vec<u8>,
    /// False once a shape the walk does not build was met (the rest is only written).
    building: bool,
    /// JSON values written (the reader's node limit counts them).
    json_values: usize,
    limits: &'l Limits,
}

/// Slots of the [`Walk::key`] memory.
const PLAIN_SLOTS: usize = 128;

/// Slots of the [`Walk::child`] cache.
const CHILD_SLOTS: usize = 1024;

/// A [`Walk::child`] cache slot: context, key address and length, and what `defs::child` gave.
type ChildSlot = Option<(ElemRef, usize, usize, Option<(ElemRef, Option<TypeId>)>)>;

thread_local! {
    /// The [`Walk::child`] cache of this thread, lent to each walk.
    static CHILD_CACHE: Cell<Vec<ChildSlot>> = const { Cell::new(Vec::new()) };
}

/// True when `text` is a JSON number.
fn is_number(text: &[u8]) -> bool {
    let mut i = usize::from(text.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while text.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    match text.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if text.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if let Some(b'e' | b'E') = text.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = text.get(i) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == text.len()
}

impl Walk<'_, '_> {
    /// Writes `"key":` ([`crate::json::key`]), remembering which static keys need no escape (a
    /// key is known by its address and length) so that each is scanned once per walk.
    fn key(&mut self, key: &'static str) {
        if key.len() > self.limits.max_field_bytes as usize {
            // The reader reads a key as a string, under the same length limit.
            let at = self.out.len();
            crate::json::key(self.out, key);
            self.check_scalar::<()>(Json::Str(key), at);
            return;
        }
        let addr = key.as_ptr() as usize;
        let slot = ((addr >> 2) ^ (addr >> 9)) % PLAIN_SLOTS;
        let known = self.plain_keys.get(slot) == Some(&(addr, key.len()));
        if !known {
            if !crate::json::is_plain(key) {
                crate::json::key(self.out, key);
                return;
            }
            if let Some(s) = self.plain_keys.get_mut(slot) {
                *s = (addr, key.len());
            }
        }
        self.out.reserve(key.len() + 3);
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// `defs::child` for the static keys of a tree, remembered per thread (a key is found by
    /// its address: the same `&'static str` of the converter's code gives the same element).
    fn child(&mut self, ctx: ElemRef, key: &'static str) -> Option<(ElemRef, Option<TypeId>)> {
        let addr = key.as_ptr() as usize;
        let h = (addr >> 3)
            ^ (addr >> 13)
            ^ usize::from(ctx.ty.0).wrapping_mul(31)
            ^ usize::from(ctx.idx).wrapping_mul(131);
        let slot = h % CHILD_SLOTS;
        if let Some(Some((r, a, l, found))) = self.children.get(slot).copied() {
            if r == ctx && a == addr && l == key.len() {
                return found;
            }
        }
        let found = defs::child(ctx, key.as_bytes());
        if let Some(s) = self.children.get_mut(slot) {
            *s = Some((ctx, addr, key.len(), found));
        }
        found
    }

    /// Bytes of the document written so far (spilled ones included).
    fn len(&self) -> usize {
        self.flushed + self.out.len() - self.base
    }

    fn offset(&self) -> u32 {
        u32::try_from(self.len()).unwrap_or(u32::MAX)
    }

    /// Counts a JSON value about to be written at the current offset (at `depth` when it is a
    /// container) as the reader does: past the node limit, or a container at the depth limit,
    /// is where it stops.
    fn count(&mut self, container_depth: Option<u32>) {
        self.json_values += 1;
        let deep = container_depth.is_some_and(|d| d >= self.limits.max_depth);
        if deep || self.json_values > self.limits.max_segments as usize {
            self.stop();
            if self.limit == Limit::None {
                self.limit = Limit::Exact(self.offset());
            }
        }
    }

    /// After a scalar written at `at` in `out`: a string over the length limit is where the
    /// reader stops inside it, a number that is not one is a place the walk does not locate.
    fn check_scalar<T>(&mut self, json: Json<'_, T>, at: usize) {
        match json {
            Json::Str(s) if s.len() > self.limits.max_field_bytes as usize => {
                self.stop();
                let inside =
                    self.out.get(at..).and_then(|lit| string_overflow(lit, self.limits.max_field_bytes as usize));
                match inside {
                    Some(n) if self.limit == Limit::None => {
                        let offset = self.len() - (self.out.len() - at) + n;
                        self.limit = Limit::Exact(u32::try_from(offset).unwrap_or(u32::MAX));
                    }
                    Some(_) => {}
                    None => self.unknown(),
                }
            }
            Json::Num(n) if !is_number(n.as_bytes()) => self.unknown(),
            _ => {}
        }
    }

    /// A value the reader may stop in without the walk knowing where.
    fn unknown(&mut self) {
        self.stop();
        if self.limit == Limit::None {
            self.limit = Limit::Unknown;
        }
    }

    /// Hands the bytes written so far to the spill once they need not be read back (the reader
    /// stops at a known place), every [`SPILL_AT`] bytes.
    fn spill_some(&mut self) {
        let known = match self.limit {
            Limit::Exact(_) => true,
            Limit::None => self.over_limit,
            Limit::Unknown => false,
        };
        if self.out.len() < SPILL_AT || !known {
            return;
        }
        let Some(spill) = self.spill.as_mut() else { return };
        spill(self.out);
        self.flushed += self.out.len() - self.base;
        self.base = 0;
        crate::phi::wipe_keep(self.out);
    }

    /// Writes `v` at `depth` without building, counting its values as the reader would.
    fn rest<T: Value>(&mut self, v: &T, depth: u32) {
        if self.limit != Limit::None {
            write(v, self.out);
            return;
        }
        match v.json() {
            Json::Obj(members) => self.rest_object(members, depth),
            Json::Arr(items) => {
                self.count(Some(depth));
                self.out.push(b'[');
                let mut first = true;
                for item in items.iter().filter(|v| !v.is_empty()) {
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    self.rest(item, depth + 1);
                }
                self.out.push(b']');
            }
            json => {
                self.count(None);
                let at = self.out.len();
                write(v, self.out);
                self.check_scalar(json, at);
            }
        }
    }

    /// [`Walk::rest`] for an object's members.
    fn rest_object<T: Value>(&mut self, members: &[(&'static str, T)], depth: u32) {
        if self.limit != Limit::None {
            write_object(members, self.out);
            return;
        }
        self.count(Some(depth));
        self.out.push(b'{');
        let mut first = true;
        for (key, v) in members.iter().filter(|(_, v)| !v.is_empty()) {
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.key(key);
            self.rest(v, depth + 1);
        }
        self.out.push(b'}');
    }

    /// Stops building; the caller writes what is left.
    fn stop(&mut self) {
        self.building = false;
    }

    /// Counts a container at `depth` against the limits.
    fn container(&mut self, depth: u32) {
        self.count(Some(depth));
    }

    fn open(&mut self, node: model::Node) -> u32 {
        match self.b.open(node) {
            Some(i) => i,
            None => {
                self.stop();
                NONE
            }
        }
    }

    /// Writes a scalar (counted) and returns its JSON kind, or `None` for a container.
    fn scalar<T: Value>(&mut self, v: &T) -> Option<(ValueKind, Span)> {
        let (kind, text): (ValueKind, &[u8]) = match v.json() {
            Json::Str(s) => (ValueKind::String, s.as_bytes()),
            Json::Num(n) => (ValueKind::Number, n.as_bytes()),
            Json::Bool(b) => (ValueKind::Bool, if b { b"true" } else { b"false" }),
            _ => return None,
        };
        // The reader counts the value before it reads it.
        self.count(None);
        let at = self.out.len();
        write(v, self.out);
        self.check_scalar(v.json(), at);
        let span = Span { start: self.values.len() as u32, len: text.len() as u32 };
        self.values.extend_from_slice(text);
        Some((kind, span))
    }

    /// A resource held by `elem` of `parent` (or the root when `parent` is `NONE`), written at
    /// the current position (an object at `depth`).
    #[allow(clippy::too_many_arguments)]
    fn resource<T: Value>(
        &mut self,
        members: &[(&'static str, T)],
        tail: Option<(&'static str, &mut dyn Iterator<Item = T>)>,
        parent: u32,
        elem: Option<ElemRef>,
        index: u32,
        offset: u32,
        depth: u32,
    ) {
        let ty =
            members.iter().find(|(k, v)| *k == "resourceType" && !v.is_empty()).and_then(|(_, v)| match v.json() {
                Json::Str(s) => defs::type_id(s.as_bytes()).filter(|t| defs::is_resource(*t)),
                _ => None,
            });
        let Some(t) = ty else {
            self.stop();
            self.rest_object(members, depth);
            if let Some((_, items)) = tail {
                // Not built: only the root takes a tail, and a root without a type is not a
                // resource the converter writes.
                items.for_each(drop);
            }
            return;
        };
        let mut node = model::blank(parent, offset);
        node.elem = elem;
        node.index = index;
        node.flags = flag::RESOURCE;
        node.ty = Some(t);
        node.ctx = Some(ElemRef { ty: t, idx: 0 });
        node.name = match elem.and_then(defs::element) {
            Some(def) if parent != NONE => def.name,
            _ if parent != NONE => "",
            _ => defs::type_name(t),
        };
        let i = self.open(node);
        self.members(members, tail, i, ElemRef { ty: t, idx: 0 }, true, false, depth);
        self.b.close(i);
    }

    /// The members of an object at `depth`, children of node `parent` defined under `ctx`;
    /// then the array member `tail.0` with the items of `tail.1` (see [`write_and_read_with`]).
    #[allow(clippy::too_many_arguments)]
    fn members<T: Value>(
        &mut self,
        members: &[(&'static str, T)],
        tail: Option<(&'static str, &mut dyn Iterator<Item = T>)>,
        parent: u32,
        ctx: ElemRef,
        is_resource: bool,
        primitive_ext: bool,
        depth: u32,
    ) {
        self.container(depth);
        self.out.push(b'{');
        // Twins (`x` with `_x`) are possible only where a key starts with `_`.
        let has_ext = members.iter().any(|(k, _)| k.starts_with('_'));
        let mut first = true;
        for (key, v) in members.iter().filter(|(_, v)| !v.is_empty()) {
            if !first {
                self.out.push(b',');
            }
            first = false;
            let key_offset = self.offset();
            self.key(key);
            if !self.building {
                self.rest(v, depth + 1);
                continue;
            }
            if is_resource && *key == "resourceType" {
                if self.scalar(v).is_none() {
                    self.stop();
                    self.rest(v, depth + 1);
                }
                continue;
            }
            let (base, is_ext) = match key.strip_prefix('_') {
                Some(b) => (b, true),
                None => (*key, false),
            };
            // A twin (`x` with `_x`) is paired by the reader: not built here.
            let twin = has_ext
                && members.iter().any(|(k, other)| {
                    (if is_ext { *k == base } else { k.strip_prefix('_') == Some(base) }) && !other.is_empty()
                });
            let found = if twin || (primitive_ext && base == "value") { None } else { self.child(ctx, base) };
            let Some((elem, choice_ty)) = found else {
                self.stop();
                self.rest(v, depth + 1);
                continue;
            };
            let Some(def) = defs::element(elem) else {
                // The reader skips it too (its values are counted).
                self.rest(v, depth + 1);
                continue;
            };
            let ty = match choice_ty {
                Some(t) => TypeRef::Type(t),
                None => def.types.first().copied().unwrap_or(TypeRef::Backbone),
            };
            let repeats = def.repeats();
            let primitive = matches!(ty, TypeRef::Type(t) if defs::kind(t) == Kind::Primitive);
            if is_ext && (!primitive || repeats) {
                self.stop();
                self.rest(v, depth + 1);
                continue;
            }
            match v.json() {
                Json::Arr(items) if repeats => {
                    self.container(depth + 1);
                    self.out.push(b'[');
                    for (index, item) in items.iter().filter(|v| !v.is_empty()).enumerate() {
                        let index = index as u32;
                        if index > 0 {
                            self.out.push(b',');
                        }
                        if self.building {
                            self.item(item, parent, elem, def.name, ty, index, key_offset, depth + 2, false);
                        } else {
                            self.rest(item, depth + 2);
                        }
                    }
                    self.out.push(b']');
                }
                Json::Arr(_) => {
                    self.stop();
                    self.rest(v, depth + 1);
                }
                _ if repeats => {
                    self.stop();
                    self.rest(v, depth + 1);
                }
                _ => self.item(v, parent, elem, def.name, ty, 0, key_offset, depth + 1, is_ext),
            }
        }
        if let Some((key, items)) = tail {
            self.tail(key, items, parent, ctx, !first, depth);
        }
        self.out.push(b'}');
    }

    /// The array member `key` of the object at `depth` (node `parent`, defined under `ctx`),
    /// after `after` members, with the items of `items`: what [`Walk::members`] writes and
    /// builds for an array member, an item at a time, each dropped once written (the bytes
    /// spilled when they may be).
    #[allow(clippy::too_many_arguments)]
    fn tail<T: Value>(
        &mut self,
        key: &'static str,
        items: &mut dyn Iterator<Item = T>,
        parent: u32,
        ctx: ElemRef,
        after: bool,
        depth: u32,
    ) {
        // (element, name, type) once the key is written; `None` inside when not built.
        let mut target: Option<Option<(ElemRef, &'static str, TypeRef)>> = None;
        let mut index = 0u32;
        let mut key_offset = 0;
        for item in items {
            if item.is_empty() {
                continue;
            }
            match target {
                None => {
                    if after {
                        self.out.push(b',');
                    }
                    key_offset = self.offset();
                    self.key(key);
                    let found = if self.building { self.child(ctx, key) } else { None };
                    let resolved = found.and_then(|(elem, choice_ty)| {
                        let def = defs::element(elem)?;
                        let ty = match choice_ty {
                            Some(t) => TypeRef::Type(t),
                            None => def.types.first().copied().unwrap_or(TypeRef::Backbone),
                        };
                        def.repeats().then_some((elem, def.name, ty))
                    });
                    if resolved.is_none() {
                        // Not an array member the walk builds (only the root's `entry` of a
                        // Bundle is passed as a tail): written and counted only.
                        self.stop();
                    }
                    target = Some(resolved);
                    self.container(depth + 1);
                    self.out.push(b'[');
                }
                Some(_) => self.out.push(b','),
            }
            match target {
                Some(Some((elem, name, ty))) if self.building => {
                    self.item(&item, parent, elem, name, ty, index, key_offset, depth + 2, false);
                }
                _ => self.rest(&item, depth + 2),
            }
            index += 1;
            drop(item);
            self.spill_some();
        }
        if target.is_some() {
            self.out.push(b']');
        }
    }

    /// One item of an element (a repetition), at `depth`.
    #[allow(clippy::too_many_arguments)]
    fn item<T: Value>(
        &mut self,
        v: &T,
        parent: u32,
        elem: ElemRef,
        name: &'static str,
        ty: TypeRef,
        index: u32,
        key_offset: u32,
        depth: u32,
        is_ext: bool,
    ) {
        let mut node = model::blank(parent, key_offset);
        node.name = name;
        node.elem = Some(elem);
        node.index = index;
        match ty {
            TypeRef::Type(t) if defs::kind(t) == Kind::Primitive => {
                node.ty = Some(t);
                node.ctx = Some(ElemRef { ty: t, idx: 0 });
                if is_ext {
                    // `_x` alone: a primitive without a value, its members under the type.
                    let Json::Obj(members) = v.json() else {
                        self.stop();
                        self.rest(v, depth);
                        return;
                    };
                    let i = self.open(node);
                    self.members(members, None, i, ElemRef { ty: t, idx: 0 }, false, true, depth);
                    self.b.close(i);
                    return;
                }
                let Some((kind, span)) = self.scalar(v) else {
                    self.stop();
                    self.rest(v, depth);
                    return;
                };
                if kind != json_kind_of(defs::type_name(t)) {
                    self.stop();
                    return;
                }
                let xhtml = defs::element(elem).is_some_and(|d| d.xhtml);
                node.value_kind = if xhtml && kind == ValueKind::String { ValueKind::Xhtml } else { kind };
                node.value = span;
                let i = self.open(node);
                self.b.close(i);
            }
            _ => {
                let Json::Obj(members) = v.json() else {
                    self.stop();
                    self.rest(v, depth);
                    return;
                };
                if ty == TypeRef::Resource || matches!(ty, TypeRef::Type(t) if defs::is_resource(t)) {
                    self.resource(members, None, parent, Some(elem), index, key_offset, depth);
                    return;
                }
                let (node_ty, ctx) = match ty {
                    TypeRef::Type(t) => (Some(t), ElemRef { ty: t, idx: 0 }),
                    _ => (None, elem),
                };
                node.ty = node_ty;
                node.ctx = Some(ctx);
                let i = self.open(node);
                self.members(members, None, i, ctx, false, false, depth);
                self.b.close(i);
            }
        }
    }
}

/// The JSON values `v` is written as (empty members and items are not), or `None` when a number
/// of `v` is not a JSON number (the reader would stop at a place the walk does not locate).
pub fn count_checked<T: Value>(v: &T) -> Option<usize> {
    match v.json() {
        Json::Obj(members) => {
            members.iter().filter(|(_, v)| !v.is_empty()).try_fold(1usize, |n, (_, v)| Some(n + count_checked(v)?))
        }
        Json::Arr(items) => items.iter().filter(|v| !v.is_empty()).try_fold(1usize, |n, v| Some(n + count_checked(v)?)),
        Json::Num(n) => is_number(n.as_bytes()).then_some(1),
        _ => Some(1),
    }
}

/// Compares a document from [`write_and_read`] with the one [`super::read`] gives on its bytes:
/// `Err` with the index of the first node that differs (`u32::MAX`: the findings or the node
/// counts differ, or the bytes do not read). Used by the tests and, in debug builds, on every
/// conversion.
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn compare_with_read(doc: &Document, bytes: &[u8], limits: &Limits) -> Result<(), u32> {
    let read = super::read(bytes.to_vec(), limits).map_err(|_| u32::MAX)?;
    if read.nodes.len() != doc.nodes.len() || read.findings != doc.findings {
        return Err(u32::MAX);
    }
    for (i, (a, b)) in doc.nodes.iter().zip(&read.nodes).enumerate() {
        let i = i as u32;
        let same = a.name == b.name
            && a.elem == b.elem
            && a.ty == b.ty
            && a.ctx == b.ctx
            && a.value_kind == b.value_kind
            && doc.value(i) == read.value(i)
            && a.offset == b.offset
            && a.parent == b.parent
            && a.end == b.end
            && a.index == b.index
            && a.flags == b.flags
            && a.raw == b.raw;
        if !same {
            return Err(i);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test tree.
    #[derive(Debug)]
    enum T {
        S(&'static str),
        N(&'static str),
        B(bool),
        O(Vec<(&'static str, T)>),
        A(Vec<T>),
    }

    impl Value for T {
        fn json(&self) -> Json<'_, T> {
            match self {
                T::S(s) => Json::Str(s),
                T::N(n) => Json::Num(n),
                T::B(b) => Json::Bool(*b),
                T::O(m) => Json::Obj(m),
                T::A(a) => Json::Arr(a),
            }
        }
        fn is_empty(&self) -> bool {
            match self {
                T::O(m) => m.iter().all(|(_, v)| v.is_empty()),
                T::A(a) => a.iter().all(Value::is_empty),
                _ => false,
            }
        }
    }

    fn o(m: Vec<(&'static str, T)>) -> T {
        T::O(m)
    }

    fn patient(extra: Vec<(&'static str, T)>) -> T {
        let mut m = vec![
            ("resourceType", T::S("Patient")),
            ("id", T::S("p1")),
            ("name", T::A(vec![o(vec![("family", T::S("Doe \"Q\"\n")), ("given", T::A(vec![T::S("A"), T::S("B")]))])])),
            ("telecom", T::A(vec![o(vec![]), o(vec![("system", T::S("phone")), ("value", T::S("1"))])])),
            ("active", T::B(true)),
            ("multipleBirthInteger", T::N("2")),
            (
                "_birthDate",
                o(vec![("extension", T::A(vec![o(vec![("url", T::S("http://x")), ("valueCode", T::S("unknown"))])]))]),
            ),
            ("contact", T::A(vec![o(vec![("gender", T::S("male"))])])),
            ("empty", o(vec![("nothing", T::A(vec![]))])),
        ];
        m.extend(extra);
        o(m)
    }

    fn bundle(resource: T) -> T {
        o(vec![
            ("resourceType", T::S("Bundle")),
            ("type", T::S("collection")),
            ("entry", T::A(vec![o(vec![("fullUrl", T::S("urn:uuid:1")), ("resource", resource)])])),
        ])
    }

    fn both(tree: &T) -> (Option<Document>, Vec<u8>) {
        let mut out = b"prefix".to_vec();
        let doc = write_and_read(tree, &mut out, &Limits::default());
        let mut plain = b"prefix".to_vec();
        write(tree, &mut plain);
        assert_eq!(out, plain, "the walk writes what `write` writes");
        (doc, out[6..].to_vec())
    }

    #[test]
    fn plain_shapes_are_built_as_the_reader_reads_them() {
        for tree in [patient(vec![]), bundle(patient(vec![]))] {
            let (doc, bytes) = both(&tree);
            let doc = doc.expect("built");
            assert_eq!(compare_with_read(&doc, &bytes, &Limits::default()), Ok(()));
            assert!(doc.nodes.len() > 10);
        }
    }

    #[test]
    fn shapes_the_reader_reports_are_left_to_it() {
        let cases: Vec<T> = vec![
            patient(vec![("unknownElement", T::S("x"))]),
            patient(vec![("gender", T::A(vec![T::S("male")]))]),
            patient(vec![("identifier", o(vec![("value", T::S("1"))]))]),
            patient(vec![("gender", T::B(true))]),
            patient(vec![("deceasedBoolean", T::S("true"))]),
            patient(vec![("multipleBirthInteger", T::N("1."))]),
            patient(vec![("birthDate", T::S("2000-01-01"))]),
            patient(vec![("_gender", T::A(vec![o(vec![("id", T::S("a"))])]))]),
            patient(vec![("_given", o(vec![("id", T::S("a"))]))]),
            patient(vec![("gender", o(vec![("id", T::S("a"))]))]),
            patient(vec![("maritalStatus", T::S("M"))]),
            o(vec![("resourceType", T::S("NoSuchResource")), ("id", T::S("x"))]),
            o(vec![("id", T::S("x"))]),
            bundle(o(vec![("resourceType", T::S("Nope"))])),
            bundle(T::S("x")),
            // Keys that need escapes (written escaped, each time).
            patient(vec![("we\"ird\\key", T::S("x")), ("we\"ird\\key", T::S("y"))]),
        ];
        for (n, tree) in cases.iter().enumerate() {
            let (doc, bytes) = both(tree);
            assert!(doc.is_none(), "case {n} is left to the reader");
            // The reader reads those bytes into a document with findings, or fails.
            if let Ok(read) = crate::formats::fhir::read(bytes.clone(), &Limits::default()) {
                assert!(!read.findings.is_empty() || n == 6, "case {n}");
            }
        }
    }

    #[test]
    fn limits_are_the_readers() {
        let tree = patient(vec![]);
        let mut limits = Limits::default();
        let (doc, bytes) = both(&tree);
        let nodes = doc.expect("built").nodes.len();
        // The reader's node limit counts JSON values: find the smallest that reads.
        let mut max = nodes as u32;
        while crate::formats::fhir::read(bytes.clone(), &Limits { max_segments: max, ..limits }).is_err() {
            max += 1;
        }
        limits.max_segments = max;
        assert!(write_and_read(&tree, &mut Vec::new(), &limits).is_some());
        limits.max_segments = max - 1;
        assert!(write_and_read(&tree, &mut Vec::new(), &limits).is_none());
        let deep = Limits { max_depth: 3, ..Limits::default() };
        assert_eq!(
            write_and_read(&tree, &mut Vec::new(), &deep).is_some(),
            crate::formats::fhir::read(bytes.clone(), &deep).is_ok()
        );
        let short = Limits { max_field_bytes: 3, ..Limits::default() };
        assert!(write_and_read(&tree, &mut Vec::new(), &short).is_none());
        assert!(crate::formats::fhir::read(bytes, &short).is_err());
    }

    /// The reader stops inside a string over the length limit exactly where the walk says,
    /// whatever escapes the string holds.
    #[test]
    fn string_limits_are_located_as_the_reader_does() {
        let texts = ["abcdef", "a\"b\\c\nd", "\u{1}\u{7f}xyz", "é漢😀é", "\t\t\t\t", "ab\u{0}cd\"ef"];
        for text in texts {
            let mut literal = Vec::new();
            crate::json::string(&mut literal, text);
            for max in 0..=text.len() + 1 {
                let limits = Limits { max_field_bytes: max as u32, ..Limits::default() };
                let read = crate::formats::fhir::json::parse(&literal, &limits).err().map(|e| e.offset as usize);
                assert_eq!(string_overflow(&literal, max), read, "{text:?} {max}");
            }
        }
    }

    /// A document past the node limit (or with a string past the length limit): the fatal
    /// finding is the reader's, and the bytes spilled then kept are the whole text.
    #[test]
    fn over_the_limits_the_finding_is_the_readers() {
        let tree = bundle(patient(vec![]));
        let mut whole = Vec::new();
        write(&tree, &mut whole);
        for limits in [
            Limits { max_segments: 7, ..Limits::default() },
            Limits { max_segments: 30, ..Limits::default() },
            Limits { max_field_bytes: 4, ..Limits::default() },
            Limits { max_depth: 4, ..Limits::default() },
        ] {
            let read = crate::formats::fhir::read(whole.clone(), &limits).err();
            let mut out = b"pre".to_vec();
            let mut spilled = Vec::new();
            let mut spill = |b: &[u8]| spilled.extend_from_slice(b);
            let items = match &tree {
                T::O(m) => m,
                _ => unreachable!(),
            };
            // The same Bundle with its entries given one at a time.
            let head: Vec<(&'static str, T)> =
                items.iter().filter(|(k, _)| *k != "entry").map(|(k, v)| (*k, clone(v))).collect();
            let entries: Vec<T> = match items.iter().find(|(k, _)| *k == "entry") {
                Some((_, T::A(e))) => e.iter().map(clone).collect(),
                _ => Vec::new(),
            };
            let mut tail = entries.into_iter();
            let written = write_and_read_with(
                &T::O(head),
                Some(("entry", &mut tail)),
                &mut out,
                &limits,
                false,
                Some(&mut spill),
            );
            spilled.extend_from_slice(&out);
            assert_eq!(&spilled[3..], &whole[..], "{limits:?}");
            match written {
                Written::Fatal(d) => assert_eq!(Some(d), read, "{limits:?}"),
                Written::ReadBack => assert!(read.is_some_and(|d| d.code != Code::CLI_INPUT_TOO_LARGE), "{limits:?}"),
                Written::Built(_) => assert!(read.is_none(), "{limits:?}"),
            }
        }
    }

    fn clone(t: &T) -> T {
        match t {
            T::S(s) => T::S(s),
            T::N(n) => T::N(n),
            T::B(b) => T::B(*b),
            T::O(m) => T::O(m.iter().map(|(k, v)| (*k, clone(v))).collect()),
            T::A(a) => T::A(a.iter().map(clone).collect()),
        }
    }

    #[test]
    fn numbers_are_json_numbers() {
        for text in ["0", "-0", "12", "1.5", "-1.25e+10", "1E5", "01", "1.", ".5", "-", "1e", "+1", "1.5.2", "", "0x1"]
        {
            let json = crate::formats::fhir::json::parse(text.as_bytes(), &Limits::default());
            let expected = json.is_ok_and(|t| t.node(0).kind == crate::formats::fhir::json::Kind::Number);
            assert_eq!(is_number(text.as_bytes()), expected, "{text:?}");
        }
    }
}
