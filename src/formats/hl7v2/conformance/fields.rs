//! Fields of one segment against the version's segment definition (HL7 v2 chapter 2 and the
//! domain chapters): required fields, repetition, lengths, data types and tables, down to
//! components and subcomponents.
//!
//! For each field the segment defines: `FIELD_REQUIRED_MISSING` when a required field is empty,
//! `FIELD_REPEATED` at the first repetition beyond the allowed count, `FIELD_WITHDRAWN` when a
//! withdrawn field is populated. For each repetition, component and subcomponent, walking the
//! composite types recursively (the encoding has three levels; below them a composite is its
//! first component alone, followed at most `MAX_TYPE_DEPTH` deep): `LENGTH_EXCEEDED` against
//! the maximum length, `COMPONENT_REQUIRED_MISSING`, `COMPONENT_NOT_DEFINED` beyond the type's
//! components, the primitive syntax checks of `datatypes`, and `TABLE_VALUE_UNKNOWN` for an
//! `ID` value outside its HL7-defined table. Fields beyond the definition are
//! `FIELD_NOT_DEFINED`. OBX-5 is typed by OBX-2.
//!
//! The walk runs inside one `PhiBytes::classify` per segment. Fields come from the parser's
//! field spans (an empty field costs no scan, and the field separator is never looked for
//! again); inside a field, a recursive descent with one cursor: each level (repetition,
//! component, subcomponent) moves the cursor to the end of its part, and a type's components are
//! checked as the cursor passes them, so each byte is looked at once (a text field holding
//! separators twice), with no separator buffer and no iterator per level. Nothing leaves the
//! closure but findings, which are value-free.
//!
//! Tolerated by default (see docs/hl7v2-conformance.md): the null value `""` (present, never
//! checked), trailing delimiters, local `Z` codes in HL7 tables, any data type of the version as
//! an OBX-2 value type; with `--strict`, trailing delimiters and `Z` codes are reported.
//!
//! What it does not do: conditional (`C`) usage rules, which need the standard's narrative;
//! user-defined (`IS`) tables; lengths of escaped text after unescaping (the length counts the
//! characters as sent, escape sequences included).

use std::cell::Cell;

use crate::diag::{Code, Hl7Position, Location, Severity};
use crate::formats::hl7v2::parse::{Delimiters, SegmentRef, Span};

use super::Report;
use super::datatypes::{self, Coded, Verdict};
use super::plan::{self, Check, CodeSet, Elem, Plan, SegmentPlan, Ty};

/// Separator kinds, in nesting order. A part at depth `d` (0: a repetition, 1: a component,
/// 2: a subcomponent) ends at a separator of kind `d + 1` or less (the end of the line counts
/// as a field separator) and splits at kind `d + 2`.
const FIELD: u8 = 0;
const REPETITION: u8 = 1;
const COMPONENT: u8 = 2;
const SUBCOMPONENT: u8 = 3;

/// Not a separator.
const NONE: u8 = u8::MAX;

/// Deepest composite nesting followed below the subcomponent level (CP > MO > NM is 2).
const MAX_TYPE_DEPTH: u8 = 4;

/// The kind of every byte value under the message's delimiters, and each delimiter within a field repeated
/// in the eight bytes of a word, built once per message; and the last OBX-2 value type looked
/// up (by its packed id), since a message's OBX segments mostly repeat one.
#[derive(Debug)]
pub(crate) struct Scratch {
    kinds: [u8; 256],
    splat: [u64; 3],
    value_type: Cell<Option<(u64, Option<Ty>)>>,
}

/// One in every byte.
const LOW_BITS: u64 = 0x0101_0101_0101_0101;
/// The top bit of every byte.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The top bit set in every zero byte of `v` up to and including its first one (bytes after the
/// first zero byte may be set too; the first set bit is exact).
#[inline(always)]
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(LOW_BITS) & !v
}

impl Scratch {
    pub(crate) fn new(d: Delimiters) -> Scratch {
        let mut kinds = [NONE; 256];
        kinds[usize::from(d.subcomponent)] = SUBCOMPONENT;
        kinds[usize::from(d.component)] = COMPONENT;
        kinds[usize::from(d.repetition)] = REPETITION;
        kinds[usize::from(d.field)] = FIELD;
        let splat = [d.repetition, d.component, d.subcomponent].map(|b| u64::from(b) * LOW_BITS);
        Scratch { kinds, splat, value_type: Cell::new(None) }
    }
}

/// The separator kind that ends a part at `depth`.
#[inline(always)]
fn stop(depth: u8) -> u8 {
    (depth + 1).min(SUBCOMPONENT)
}

/// The separator kind that splits a part at `depth` into its children (none below depth 1).
#[inline(always)]
fn split(depth: u8) -> u8 {
    if depth < 2 { depth + 2 } else { NONE }
}

/// Checks the fields of one segment. `segment` is the version's plan for its id.
pub(crate) fn check_segment(
    seg: SegmentRef<'_>,
    segment: &SegmentPlan,
    plan: &'static Plan,
    scratch: &Scratch,
    report: &mut Report,
) {
    let header = seg.is_header();
    let at = seg.position();
    // The parser's field spans (offsets in the message buffer): each field is walked alone, its
    // end the end of the walker's line, so the field separator is never looked for again.
    let spans = seg.field_spans();
    let offset = seg.offset();
    seg.bytes().classify(|line| {
        let mut w = Walker {
            plan,
            report,
            trailing_reported: false,
            line,
            whole: line,
            kinds: &scratch.kinds,
            splat: &scratch.splat,
            value_type: &scratch.value_type,
            pos: 0,
            base: at,
        };
        w.segment(header, segment, line, spans, offset);
    });
}

fn is_null(v: &[u8]) -> bool {
    v == b"\"\""
}

/// Per-element exceptions.
#[derive(Copy, Clone, Debug, Default)]
struct ElemCtx {
    /// Do not look the value up in its table (the syntax layer owns it).
    skip_table: bool,
    /// OBX-2: any data type of the version is a value type.
    value_type: bool,
}

/// One pass over the segment line: a cursor that every level of the walk moves forward, so
/// each byte is looked at once (a text field with separators, rarely, twice), with no
/// separator buffer and no iterator per level.
struct Walker<'r, 'l> {
    plan: &'static Plan,
    report: &'r mut Report,
    trailing_reported: bool,
    line: &'l [u8],
    /// The whole segment line (`line` is one field of it), for reads past a field's end.
    whole: &'l [u8],
    kinds: &'l [u8; 256],
    /// The repetition, component and subcomponent delimiters, each in every byte of a word.
    splat: &'l [u64; 3],
    /// The message's last OBX-2 type lookup.
    value_type: &'l Cell<Option<(u64, Option<Ty>)>>,
    /// The cursor: the offset in `line` of the next byte to look at.
    pos: usize,
    /// The segment's position; findings add a [`Pos`] to it.
    base: Hl7Position,
}

impl<'l> Walker<'_, 'l> {
    #[inline(always)]
    fn bytes(&self, lo: usize, hi: usize) -> &[u8] {
        self.line.get(lo..hi).unwrap_or_default()
    }

    /// The separator kind of the byte at `i`; the end of the line is a field separator.
    #[inline(always)]
    fn kind_at(&self, i: usize) -> u8 {
        self.line.get(i).map_or(FIELD, |b| self.kinds[usize::from(*b)])
    }

    /// Moves the cursor to the next separator of any kind (or the end); returns its kind.
    #[inline]
    fn next_separator(&mut self) -> u8 {
        let line = self.line;
        let kinds = self.kinds;
        let [r, c, s] = *self.splat;
        let mut i = self.pos;
        // Eight bytes at a time: a byte equal to a delimiter is a zero byte of the word XOR the
        // delimiter's splat (the line is one field: no field separator to look for). The first
        // flagged byte is the first separator (a flag after it may be false); the byte loop
        // below then stops on it.
        while let Some(&[b0, b1, b2, b3, b4, b5, b6, b7]) = line.get(i..i + 8) {
            let x = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
            let m = (zero_bytes(x ^ r) | zero_bytes(x ^ c) | zero_bytes(x ^ s)) & HIGH_BITS;
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        while let Some(b) = line.get(i) {
            let k = kinds[usize::from(*b)];
            if k != NONE {
                self.pos = i;
                return k;
            }
            i += 1;
        }
        self.pos = line.len();
        FIELD
    }

    /// Moves the cursor to the next separator of kind `kind` or less (or the end); returns its
    /// kind.
    fn skip_to(&mut self, kind: u8) -> u8 {
        // Most parts end where the cursor stands (a leaf checked in place).
        let here = self.kind_at(self.pos);
        if here <= kind {
            return here;
        }
        loop {
            let k = self.next_separator();
            if k <= kind {
                return k;
            }
            self.pos += 1;
        }
    }

    /// Whether the part at the cursor, at `depth`, is empty or the null value `""`.
    fn empty_or_null(&self, depth: u8) -> bool {
        let end = stop(depth);
        let p = self.pos;
        self.kind_at(p) <= end || (self.line.get(p..p + 2) == Some(b"\"\"".as_slice()) && self.kind_at(p + 2) <= end)
    }

    /// [`Plan::type_named`], remembering the last id of up to 7 bytes.
    fn value_type_named(&self, id: &[u8]) -> Option<Ty> {
        let Some(key) = plan::pack(id) else { return self.plan.type_named(id) };
        if let Some((k, ty)) = self.value_type.get()
            && k == key
        {
            return ty;
        }
        let ty = self.plan.type_named(id);
        self.value_type.set(Some((key, ty)));
        ty
    }

    #[cold]
    #[inline(never)]
    fn loc(&self, p: Pos) -> Location {
        Location::Hl7(self.base.field(p.field, p.rep).component(p.comp, p.sub))
    }

    #[cold]
    #[inline(never)]
    fn push(&mut self, code: Code, p: Pos) {
        let location = self.loc(p);
        self.report.push(code, location);
    }

    #[cold]
    #[inline(never)]
    fn push_with(&mut self, code: Code, severity: Severity, p: Pos) {
        let location = self.loc(p);
        self.report.push_with(code, severity, location);
    }

    /// The fields of the segment `line`, by their spans (`offset` is the line's offset in the
    /// message buffer). MSH-1 and MSH-2 hold the delimiters (the syntax layer checks them): the
    /// walk starts at field 3 for MSH (FHS, BHS), at field 1 for the others.
    fn segment(&mut self, header: bool, segment: &SegmentPlan, line: &'l [u8], spans: &[Span], offset: usize) {
        let is_msh = segment.is_msh;
        let is_obx = segment.is_obx;
        let first: u32 = if header { 3 } else { 1 };
        let mut n = first - 1;
        let mut last_empty = false;
        let mut obx_type = None;
        for span in spans.iter().skip(first as usize - 1) {
            n += 1;
            let def = segment.fields.get(n as usize - 1);
            last_empty = span.end <= span.start;
            if last_empty {
                if def.is_some_and(|d| d.required) {
                    self.field_empty(segment, n);
                }
                continue;
            }
            if self.report.saturated() {
                return;
            }
            let lo = (span.start as usize).saturating_sub(offset);
            let hi = (span.end as usize).saturating_sub(offset);
            // The field alone: its end is the end of the line.
            self.line = line.get(..hi).unwrap_or_default();
            self.pos = lo;
            if is_obx && n == 2 {
                // The first component (up to a component separator or the field's end).
                let kinds = self.kinds;
                let rest = self.bytes(lo, hi);
                let len = rest.iter().position(|b| kinds[usize::from(*b)] == COMPONENT).unwrap_or(rest.len());
                obx_type = self.value_type_named(self.bytes(lo, lo + len).trim_ascii());
            }
            let obx5 = if is_obx && n == 5 { Some(obx_type.unwrap_or(Ty::Primitive(Check::Opaque))) } else { None };
            // Values the syntax layer owns: the processing id, version and character sets.
            let ctx = ElemCtx { skip_table: is_msh && matches!(n, 11 | 12 | 18), value_type: is_obx && n == 2 };
            self.field(def, obx5, n, ctx);
        }
        self.missing_from(n + 1, segment);
        if last_empty && n >= first && self.report.strict() {
            self.trailing(Pos::field(n, 0));
        }
    }

    /// Fields `from..` the segment defines, absent from the message.
    fn missing_from(&mut self, from: u32, segment: &SegmentPlan) {
        // Only required fields can be reported: none after the last one.
        for m in from..=segment.required_end {
            self.field_empty(segment, m);
        }
    }

    /// An empty or absent field.
    fn field_empty(&mut self, segment: &SegmentPlan, n: u32) {
        // MSH-9 to MSH-12 are reported by the syntax layer (MSH_FIELD_MISSING).
        if let Some(def) = segment.fields.get((n as usize).wrapping_sub(1))
            && def.required
            && !(segment.is_msh && (9..=12).contains(&n))
        {
            // Required in this version alone: the sources likely err (a warning).
            let severity = if segment.required_alone(n) { Severity::Warning } else { Severity::Error };
            self.push_with(Code::FIELD_REQUIRED_MISSING, severity, Pos::field(n, 0));
        }
    }

    /// A populated field at the cursor; leaves the cursor anywhere inside it.
    fn field(&mut self, def: Option<&Elem>, ty: Option<Ty>, n: u32, ctx: ElemCtx) {
        let Some(def) = def else {
            self.push(Code::FIELD_NOT_DEFINED, Pos::field(n, 0));
            return;
        };
        if def.withdrawn {
            self.push(Code::FIELD_WITHDRAWN, Pos::field(n, 0));
            return;
        }
        // Only OBX-5 comes with a type (from OBX-2); it applies when the field is `varies`.
        let ty = match ty {
            Some(resolved) if def.ty == Ty::Varies => resolved,
            _ => def.ty,
        };
        let lo = self.pos;
        if let Ty::Primitive(check) = ty {
            // A primitive without separators (most fields): checked in place. A field with
            // separators is read again below.
            if self.next_separator() == FIELD {
                match check {
                    // Text: only its length.
                    Check::Text => self.length(lo, self.pos, def, Pos::field(n, 1), true),
                    // No syntax: only the length of a value other than the null value.
                    Check::UserCoded | Check::Opaque => self.unchecked(lo, def, Pos::field(n, 1)),
                    _ => {
                        self.leaf(lo, def, check, Pos::field(n, 1), ctx);
                    }
                }
                return;
            }
            self.pos = lo;
        }
        let mut r = 0u32;
        loop {
            r += 1;
            if def.max_reps != 0 && r > def.max_reps {
                self.repeated(n, r);
                return;
            }
            self.value(def, ty, Pos::field(n, r), 0, ctx);
            if self.kind_at(self.pos) != REPETITION {
                return;
            }
            self.pos += 1;
        }
    }

    /// Checks the repetition (`depth` 0), component (1) or subcomponent (2) at the cursor and
    /// moves the cursor to its end. Returns whether its length is the version's to judge.
    ///
    /// Dispatches to a copy of the walk compiled for the depth: at depths 0 and 1 the separator
    /// kinds, the position arithmetic and the child's depth are constants.
    #[inline(always)]
    fn value(&mut self, def: &Elem, ty: Ty, at: Pos, depth: u8, ctx: ElemCtx) -> bool {
        match depth {
            0 => self.value_repetition(def, ty, at, ctx),
            1 => self.value_component(def, ty, at, ctx),
            _ => self.value_deep(def, ty, at, depth, ctx),
        }
    }

    /// [`Walker::value`] at depth 0.
    #[inline(always)]
    fn value_repetition(&mut self, def: &Elem, ty: Ty, at: Pos, ctx: ElemCtx) -> bool {
        self.value_at(def, ty, at, 0, ctx)
    }

    /// [`Walker::value`] at depth 1.
    #[inline(never)]
    fn value_component(&mut self, def: &Elem, ty: Ty, at: Pos, ctx: ElemCtx) -> bool {
        self.value_at(def, ty, at, 1, ctx)
    }

    /// [`Walker::value`] at depth 2 and below.
    #[inline(never)]
    fn value_deep(&mut self, def: &Elem, ty: Ty, at: Pos, depth: u8, ctx: ElemCtx) -> bool {
        self.value_at(def, ty, at, depth, ctx)
    }

    /// The body of [`Walker::value`], inlined into each depth's copy.
    #[inline(always)]
    fn value_at(&mut self, def: &Elem, ty: Ty, at: Pos, depth: u8, ctx: ElemCtx) -> bool {
        if self.empty_or_null(depth) {
            self.skip_to(stop(depth));
            return true;
        }
        let lo = self.pos;
        // A length is the version's: it does not apply to parts a later version added, nor to a
        // table value the version lists (2.5.1 gives OBX-2 two characters, and lists `CWE`).
        let fits = self.content(def, ty, at, depth, ctx);
        self.length(lo, self.pos, def, at, fits);
        fits
    }

    #[inline(always)]
    fn length(&mut self, lo: usize, hi: usize, def: &Elem, at: Pos, fits: bool) {
        let max = def.max_len as usize;
        if fits && max != 0 && hi - lo > max && datatypes::char_count(self.bytes(lo, hi)) > max {
            self.push(Code::LENGTH_EXCEEDED, at);
        }
    }

    /// Checks the content of the part at the cursor (neither empty nor null) and moves the
    /// cursor to its end; false when its length is not the version's to judge.
    #[inline(always)]
    fn content(&mut self, def: &Elem, ty: Ty, at: Pos, depth: u8, ctx: ElemCtx) -> bool {
        let end = stop(depth);
        let kind = split(depth);
        match ty {
            // Types nest only a few levels; a bound keeps any table defect from recursing.
            Ty::Composite(_) if depth > MAX_TYPE_DEPTH => {
                self.skip_to(end);
                true
            }
            Ty::Composite(index) => {
                let plan = self.plan;
                // A composite type always has components (`plan::resolve`).
                let Some(composite) = plan.composite(index).filter(|t| !t.components.is_empty()) else {
                    self.skip_to(end);
                    return true;
                };
                let components = &composite.components;
                let inner = ElemCtx { value_type: false, ..ctx };
                let child = depth + 1;
                let mut seen = 0usize;
                let mut last_empty;
                let mut fits = true;
                let mut first_fits = true;
                // The kind of the byte at the cursor, carried from each component's scan to the
                // next test instead of read again.
                let mut here = self.kind_at(self.pos);
                loop {
                    seen += 1;
                    last_empty = here <= kind.min(SUBCOMPONENT);
                    match components.get(seen - 1) {
                        None if !last_empty => {
                            fits = false;
                            self.push(Code::COMPONENT_NOT_DEFINED, at.child(depth, seen as u32));
                            here = self.skip_to(stop(child));
                        }
                        None => {}
                        Some(c) if last_empty && c.required => {
                            self.push(Code::COMPONENT_REQUIRED_MISSING, at.child(depth, seen as u32));
                        }
                        Some(_) if last_empty => {}
                        Some(c) => {
                            let (f, k) = self.element(c, at.child(depth, seen as u32), child, inner);
                            here = k;
                            if seen == 1 {
                                first_fits = f;
                            }
                        }
                    }
                    if here != kind {
                        break;
                    }
                    self.pos += 1;
                    here = self.kind_at(self.pos);
                }
                if seen < composite.required_end {
                    self.required_after(components, seen, at, depth);
                }
                if last_empty && seen > 1 && self.report.strict() {
                    self.trailing(at.child(depth, seen as u32));
                }
                // A part without separators is its first component alone, whose length
                // verdict it takes.
                if seen == 1 { first_fits } else { fits }
            }
            Ty::Varies | Ty::Primitive(Check::Opaque) => {
                self.skip_to(end);
                true
            }
            Ty::Primitive(check) => {
                let lo = self.pos;
                self.skip_to(kind.min(SUBCOMPONENT));
                let hi = self.pos;
                let mut fits = true;
                if kind != NONE && self.kind_at(self.pos) == kind {
                    let (mut seen, mut last_empty, mut extra) = (1u32, false, false);
                    while self.kind_at(self.pos) == kind {
                        self.pos += 1;
                        seen += 1;
                        let part = self.pos;
                        self.skip_to(kind);
                        last_empty = part == self.pos;
                        if !last_empty && !extra {
                            extra = true;
                            fits = false;
                            self.push(Code::COMPONENT_NOT_DEFINED, at.child(depth, seen));
                        }
                    }
                    if last_empty && self.report.strict() {
                        self.trailing(at.child(depth, seen));
                    }
                }
                let v = self.bytes(lo, hi);
                if v.is_empty() || is_null(v) {
                    return fits;
                }
                self.primitive(lo, hi, check, def, at, ctx) && fits
            }
        }
    }

    /// A component or subcomponent at the cursor, not empty; moves the cursor to its end.
    /// Returns what [`Walker::value`] does, and the kind of the separator at the cursor.
    #[inline(always)]
    fn element(&mut self, c: &Elem, at: Pos, depth: u8, ctx: ElemCtx) -> (bool, u8) {
        if let Ty::Primitive(check) = c.ty {
            // A primitive without separators (most components): checked in place.
            let lo = self.pos;
            let k = self.next_separator();
            if k <= stop(depth) {
                let fits = match check {
                    // Text: only its length.
                    Check::Text => {
                        self.length(lo, self.pos, c, at, true);
                        true
                    }
                    // No syntax: only the length of a value other than the null value.
                    Check::UserCoded | Check::Opaque => {
                        self.unchecked(lo, c, at);
                        true
                    }
                    _ => self.leaf(lo, c, check, at, ctx),
                };
                return (fits, k);
            }
            self.pos = lo;
        }
        let fits = self.value(c, c.ty, at, depth, ctx);
        (fits, self.kind_at(self.pos))
    }

    /// The part `lo..cursor` of primitive type `check`, holding no separator: what `value`
    /// checks, without the descent.
    #[inline(always)]
    fn leaf(&mut self, lo: usize, def: &Elem, check: Check, at: Pos, ctx: ElemCtx) -> bool {
        let hi = self.pos;
        let v = self.bytes(lo, hi);
        if v.is_empty() || is_null(v) {
            return true;
        }
        let fits = match check {
            Check::Opaque | Check::Text | Check::UserCoded => true,
            _ => self.primitive(lo, hi, check, def, at, ctx),
        };
        self.length(lo, hi, def, at, fits);
        fits
    }

    /// What [`Walker::leaf`] does for a type without syntax (`IS`, opaque): the length of the
    /// part `lo..cursor`, unless it is empty or the null value.
    #[inline(always)]
    fn unchecked(&mut self, lo: usize, def: &Elem, at: Pos) {
        let hi = self.pos;
        if hi - lo > def.max_len as usize && def.max_len != 0 && !is_null(self.bytes(lo, hi)) {
            self.length(lo, hi, def, at, true);
        }
    }

    /// Required components after the first `seen`.
    fn required_after(&mut self, components: &[Elem], seen: usize, at: Pos, depth: u8) {
        for (k, c) in components.iter().enumerate().skip(seen) {
            if c.required {
                self.push(Code::COMPONENT_REQUIRED_MISSING, at.child(depth, k as u32 + 1));
            }
        }
    }

    /// Checks a primitive value; false when it is a listed table value (whose length the table
    /// sets).
    #[inline(always)]
    fn primitive(&mut self, lo: usize, hi: usize, check: Check, def: &Elem, at: Pos, ctx: ElemCtx) -> bool {
        let era = self.plan.era;
        let v = self.bytes(lo, hi);
        let (verdict, invalid) = match check {
            Check::Date => (datatypes::date(v, era), Code::DATE_INVALID),
            Check::DateTime => (datatypes::datetime(v, era), Code::DATETIME_INVALID),
            Check::Time => (datatypes::time(v, era), Code::TIME_INVALID),
            Check::Number => (verdict_of(datatypes::number(v)), Code::NUMBER_INVALID),
            Check::SequenceId => (verdict_of(datatypes::sequence_id(v)), Code::SEQUENCE_ID_INVALID),
            Check::Hl7Coded => return !self.table(lo, hi, def, at, ctx),
            Check::UserCoded | Check::Text | Check::Opaque => return true,
        };
        match verdict {
            Verdict::Ok => {}
            Verdict::Nonstandard => self.push(Code::DATETIME_PRECISION, at),
            Verdict::Invalid => self.push(invalid, at),
        }
        true
    }

    /// Looks an `ID` value up in its table; true when it is listed.
    #[inline(always)]
    fn table(&mut self, lo: usize, hi: usize, def: &Elem, at: Pos, ctx: ElemCtx) -> bool {
        if ctx.skip_table {
            return false;
        }
        let plan = self.plan;
        let Some(set) = def.table.and_then(|i| plan.codes(i)) else { return false };
        let v = self.bytes(lo, hi);
        // Most codes are short and followed by more of the segment: packed by one load.
        let listed = match self.whole.get(lo..lo + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
            Some(window) if v.len() <= 7 => set.contains_key(plan::pack_window(window, v.len())),
            _ => set.contains(v),
        };
        let coded = if listed { Coded::Listed } else { datatypes::unlisted(v, set) };
        match coded {
            Coded::Listed => true,
            Coded::Local if !self.report.strict() => false,
            coded => self.table_miss(coded, lo, hi, set, at, ctx),
        }
    }

    /// [`Walker::table`] for a value its table does not list (or a local `Z` code under
    /// `--strict`): the tolerances, then the finding. True when it turns out listed.
    #[cold]
    #[inline(never)]
    fn table_miss(&mut self, mut coded: Coded, lo: usize, hi: usize, set: &CodeSet, at: Pos, ctx: ElemCtx) -> bool {
        let plan = self.plan;
        let mut v = self.bytes(lo, hi);
        if coded == Coded::Unlisted && v.last() == Some(&b' ') {
            // Trailing blanks may be trimmed and are ignored in comparisons (ST, whose rules
            // coded values follow).
            v = v.trim_ascii_end();
            coded = datatypes::coded(v, set);
        }
        let mut severity = if set.open { Severity::Warning } else { Severity::Error };
        if coded == Coded::Unlisted && ctx.value_type {
            if plan.type_named(v).is_some() {
                coded = Coded::Listed;
            } else if plan.type_named_elsewhere(v) {
                // A data type of another version (CE, withdrawn as of 2.7, in a 2.8 OBX-2): a
                // deviation from the declared version, as a withdrawn field is; not an error.
                severity = Severity::Warning;
            }
        } else if coded == Coded::Unlisted && !set.open && plan.code_listed_elsewhere(set.number, v) {
            // A value another version lists (CLIA in 0301, listed from 2.7 on, in a 2.5.1
            // message): a deviation from the declared version, not an error.
            severity = Severity::Warning;
        }
        match coded {
            Coded::Listed => return true,
            Coded::Local if !self.report.strict() => {}
            Coded::Local | Coded::Unlisted => self.push_with(Code::TABLE_VALUE_UNKNOWN, severity, at),
        }
        false
    }

    /// Repetition `r` of field `n`, beyond the version's count: an error, or a warning when
    /// another version allows it (a deviation from the declared version, as a field defined
    /// only in a later version is).
    #[cold]
    #[inline(never)]
    fn repeated(&mut self, n: u32, r: u32) {
        let elsewhere = self.base.segment.is_some_and(|id| self.plan.repeats_elsewhere(id, n, r));
        let severity = if elsewhere { Severity::Warning } else { Code::FIELD_REPEATED.default_severity() };
        self.push_with(Code::FIELD_REPEATED, severity, Pos::field(n, r));
    }

    /// With `--strict`: a trailing delimiter, once per segment.
    #[cold]
    #[inline(never)]
    fn trailing(&mut self, at: Pos) {
        if !self.trailing_reported {
            self.trailing_reported = true;
            self.push(Code::TRAILING_DELIMITER, at);
        }
    }
}

fn verdict_of(ok: bool) -> Verdict {
    if ok { Verdict::Ok } else { Verdict::Invalid }
}

/// A position inside the segment: field, repetition, component, subcomponent (0: not this
/// deep). Kept small on the hot path; made a [`Location`] only when a finding is reported.
#[derive(Copy, Clone, Debug, Default)]
struct Pos {
    field: u32,
    rep: u32,
    comp: u32,
    sub: u32,
}

impl Pos {
    fn field(field: u32, rep: u32) -> Pos {
        Pos { field, rep, comp: 0, sub: 0 }
    }

    /// Part `k` under this position: a component of a repetition, or a subcomponent of a
    /// component.
    #[inline(always)]
    fn child(self, depth: u8, k: u32) -> Pos {
        match depth {
            0 => Pos { comp: k, sub: 0, ..self },
            1 => Pos { sub: k, ..self },
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separator_scan_agrees_with_a_byte_loop() {
        let odd = Delimiters {
            field: 0x01,
            component: 0x80,
            repetition: 0xff,
            escape: b'\\',
            subcomponent: 0x7f,
            truncation: None,
        };
        let Some(plan) = super::super::plan::plan(crate::formats::hl7v2::schema::Version::V2_5_1) else {
            panic!("plan")
        };
        let mut report = Report::new(false, 100);
        // Every separator (and bytes a word test could confuse with one) at every offset of
        // lines of many lengths, from every start.
        let fill: &[u8] = b"\x00\x01\x02\x7e\x7f\x80\x81\xfe\xffA}{|]_%'^~&";
        for d in [Delimiters::default(), odd] {
            let scratch = Scratch::new(d);
            let is_sep = |b: u8| scratch.kinds[usize::from(b)] != NONE;
            for len in 0..40usize {
                for at in 0..=len {
                    // A walker's line is one field: no field separator in it.
                    for sep in [d.component, d.repetition, d.subcomponent, b'x'] {
                        let mut line: Vec<u8> = (0..len)
                            .map(|k| fill[(k * 7 + at) % fill.len()])
                            .map(|b| if is_sep(b) { b'A' } else { b })
                            .collect();
                        if at < len {
                            line[at] = sep;
                        }
                        if at + 3 < len {
                            line[at + 3] = d.component;
                        }
                        for start in 0..=len {
                            let expect = line
                                .iter()
                                .enumerate()
                                .skip(start)
                                .find(|(_, b)| is_sep(**b))
                                .map_or((len, FIELD), |(i, b)| (i, scratch.kinds[usize::from(*b)]));
                            let mut w = Walker {
                                plan,
                                report: &mut report,
                                trailing_reported: false,
                                line: &line,
                                whole: &line,
                                kinds: &scratch.kinds,
                                splat: &scratch.splat,
                                value_type: &scratch.value_type,
                                pos: start,
                                base: Hl7Position::default(),
                            };
                            let k = w.next_separator();
                            assert_eq!((w.pos, k), expect, "{line:?} from {start}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn value_type_cache_agrees_with_the_plan() {
        // Every data type id of every version, each looked up twice in a row and again after
        // others, ids over 7 bytes (never cached) and unknown ids in between: the cached look-up
        // gives what the plan gives.
        for v in crate::formats::hl7v2::schema::Version::ALL {
            let Some(plan) = super::super::plan::plan(v) else { panic!("plan {v}") };
            let scratch = Scratch::new(Delimiters::default());
            let mut report = Report::new(false, 100);
            let w = Walker {
                plan,
                report: &mut report,
                trailing_reported: false,
                line: b"",
                whole: b"",
                kinds: &scratch.kinds,
                splat: &scratch.splat,
                value_type: &scratch.value_type,
                pos: 0,
                base: Hl7Position::default(),
            };
            let mut ids: Vec<&[u8]> = plan.schema.datatypes().iter().map(|d| d.id.as_bytes()).collect();
            ids.extend([&b""[..], b"NM", b"XX", b"NM", b"CWE_LONGER", b"NM", b"ST", b"nm", b"NM\0"]);
            for round in [ids.clone(), ids.iter().rev().copied().collect()] {
                for id in round.iter().flat_map(|id| [*id, *id]) {
                    assert_eq!(w.value_type_named(id), plan.type_named(id), "{v} {id:?}");
                }
            }
        }
    }

    #[test]
    fn part_ends() {
        // A repetition ends at a repetition or field separator; a component also at a
        // component separator; a subcomponent at any separator.
        assert_eq!((stop(0), split(0)), (REPETITION, COMPONENT));
        assert_eq!((stop(1), split(1)), (COMPONENT, SUBCOMPONENT));
        assert_eq!((stop(2), split(2)), (SUBCOMPONENT, NONE));
        assert_eq!(stop(4), SUBCOMPONENT);
    }
}
