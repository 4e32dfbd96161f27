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
//! The walk runs inside one `PhiBytes::classify` per segment: one branch-free pass finds the
//! separators (field, repetition, component, subcomponent) of the segment, and every level of the
//! walk slices between them, so each byte is looked at a bounded number of times; the separator
//! buffer is reused from segment to segment. Nothing leaves the closure but findings, which are
//! value-free.
//!
//! Tolerated by default (see docs/hl7v2-conformance.md): the null value `""` (present, never
//! checked), trailing delimiters, local `Z` codes in HL7 tables, any data type of the version as
//! an OBX-2 value type; with `--strict`, trailing delimiters and `Z` codes are reported.
//!
//! What it does not do: conditional (`C`) usage rules, which need the standard's narrative;
//! user-defined (`IS`) tables; lengths of escaped text after unescaping (the length counts the
//! characters as sent, escape sequences included).

use crate::diag::{Code, Hl7Position, Location, Severity};
use crate::formats::hl7v2::parse::{Delimiters, SegmentRef};

use super::Report;
use super::datatypes::{self, Coded, Verdict};
use super::plan::{Check, Elem, Plan, SegmentPlan, Ty};

/// Separator kinds, in nesting order.
const FIELD: u8 = 0;
const REPETITION: u8 = 1;
const COMPONENT: u8 = 2;
const SUBCOMPONENT: u8 = 3;

/// A separator: its offset in the segment line and its kind.
type Event = (u32, u8);

/// Not a separator.
const NONE: u8 = u8::MAX;

/// Deepest composite nesting followed below the subcomponent level (CP > MO > NM is 2).
const MAX_TYPE_DEPTH: u8 = 4;

/// The separator buffer, reused from segment to segment of a message, and the kind of every
/// byte value under the message's delimiters.
#[derive(Debug)]
pub(crate) struct Scratch {
    events: Vec<Event>,
    kinds: [u8; 256],
}

impl Scratch {
    pub(crate) fn new(d: Delimiters) -> Scratch {
        let mut kinds = [NONE; 256];
        kinds[usize::from(d.subcomponent)] = SUBCOMPONENT;
        kinds[usize::from(d.component)] = COMPONENT;
        kinds[usize::from(d.repetition)] = REPETITION;
        kinds[usize::from(d.field)] = FIELD;
        Scratch { events: Vec::new(), kinds }
    }
}

/// Checks the fields of one segment. `segment` is the version's plan for its id.
pub(crate) fn check_segment(
    seg: SegmentRef<'_>,
    segment: &SegmentPlan,
    plan: &'static Plan,
    d: Delimiters,
    scratch: &mut Scratch,
    report: &mut Report,
) {
    let header = seg.is_header();
    let at = seg.position();
    seg.bytes().classify(|line| {
        let mut w = Walker { plan, report, trailing_reported: false, line, base: at };
        // MSH-1 and MSH-2 hold the delimiters (the syntax layer checks them): the walk starts
        // after the first field separator, or for MSH (FHS, BHS) after the second.
        let mut seps = memchr::memchr_iter(d.field, line);
        let start = if header { seps.nth(1) } else { seps.next() };
        let Some(start) = start.map(|i| i + 1) else {
            w.missing_from(if header { 3 } else { 1 }, segment);
            return;
        };
        let body = line.get(start..).unwrap_or_default();
        // One branch-free pass: every byte is written as a candidate event, and the cursor
        // moves on only for a separator (separators are dense in HL7: a search per separator
        // would cost more than the bytes between them).
        if scratch.events.len() <= body.len() {
            scratch.events.resize(body.len() + 1, (0, NONE));
        }
        let kinds = &scratch.kinds;
        let buf: &mut [Event] = &mut scratch.events;
        let mut len = 0usize;
        for (i, &b) in body.iter().enumerate() {
            let kind = kinds[usize::from(b)];
            if let Some(slot) = buf.get_mut(len) {
                *slot = ((start + i) as u32, kind);
            }
            len += usize::from(kind != NONE);
        }
        let events = buf.get(..len).unwrap_or_default();
        w.segment(start, events, header, segment);
    });
}

/// Parts of `lo..hi` between separators of `kind`, with the events inside each part.
struct Parts<'e> {
    lo: usize,
    hi: usize,
    events: &'e [Event],
    kind: u8,
    done: bool,
}

impl<'e> Iterator for Parts<'e> {
    type Item = (usize, usize, &'e [Event]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.events.iter().position(|e| e.1 == self.kind) {
            Some(k) => {
                let end = self.events[k].0 as usize;
                let part = (self.lo, end, &self.events[..k]);
                self.lo = end + 1;
                self.events = &self.events[k + 1..];
                Some(part)
            }
            None => {
                self.done = true;
                Some((self.lo, self.hi, self.events))
            }
        }
    }
}

fn parts(lo: usize, hi: usize, events: &[Event], kind: u8) -> Parts<'_> {
    Parts { lo, hi, events, kind, done: false }
}

/// Whether `events` holds a separator of `kind`.
fn holds(events: &[Event], kind: u8) -> bool {
    events.iter().any(|e| e.1 == kind)
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

/// A part of the segment: its bytes `lo..hi` of the line and the separators inside.
#[derive(Copy, Clone)]
struct Span<'e> {
    lo: usize,
    hi: usize,
    events: &'e [Event],
}

struct Walker<'r, 'l> {
    plan: &'static Plan,
    report: &'r mut Report,
    trailing_reported: bool,
    line: &'l [u8],
    /// The segment's position; findings add a [`Pos`] to it.
    base: Hl7Position,
}

impl Walker<'_, '_> {
    fn bytes(&self, s: Span<'_>) -> &[u8] {
        self.line.get(s.lo..s.hi).unwrap_or_default()
    }

    fn loc(&self, p: Pos) -> Location {
        Location::Hl7(self.base.field(p.field, p.rep).component(p.comp, p.sub))
    }

    fn push(&mut self, code: Code, p: Pos) {
        let location = self.loc(p);
        self.report.push(code, location);
    }

    fn push_with(&mut self, code: Code, severity: Severity, p: Pos) {
        let location = self.loc(p);
        self.report.push_with(code, severity, location);
    }

    fn segment(&mut self, start: usize, events: &[Event], header: bool, segment: &SegmentPlan) {
        let is_msh = segment.id == "MSH";
        let is_obx = segment.id == "OBX";
        let mut n: u32 = if header { 2 } else { 0 };
        let mut last_empty = false;
        let mut obx_type = None;
        for (lo, hi, inner) in parts(start, self.line.len(), events, FIELD) {
            n += 1;
            last_empty = lo == hi;
            if self.report.saturated() {
                return;
            }
            let span = Span { lo, hi, events: inner };
            if is_obx && n == 2 {
                let first =
                    parts(lo, hi, inner, COMPONENT).next().map_or(span, |(lo, hi, events)| Span { lo, hi, events });
                obx_type = self.plan.type_named(self.bytes(first).trim_ascii());
            }
            let obx5 = if is_obx && n == 5 { Some(obx_type.unwrap_or(Ty::Primitive(Check::Opaque))) } else { None };
            // Values the syntax layer owns: the processing id, version and character sets.
            let ctx = ElemCtx { skip_table: is_msh && matches!(n, 11 | 12 | 18), value_type: is_obx && n == 2 };
            self.field(span, segment.fields.get(n as usize - 1), obx5, n, is_msh, ctx);
        }
        self.missing_from(n + 1, segment);
        let first = if header { 3 } else { 1 };
        if last_empty && n >= first && self.report.strict() {
            self.trailing(Pos::field(n, 0));
        }
    }

    /// Fields `from..` the segment defines, absent from the message.
    fn missing_from(&mut self, from: u32, segment: &SegmentPlan) {
        let is_msh = segment.id == "MSH";
        let empty = Span { lo: 0, hi: 0, events: &[] };
        for m in from..=segment.fields.len() as u32 {
            self.field(empty, segment.fields.get(m as usize - 1), None, m, is_msh, ElemCtx::default());
        }
    }

    fn field(&mut self, f: Span<'_>, def: Option<&Elem>, ty: Option<Ty>, n: u32, is_msh: bool, ctx: ElemCtx) {
        let empty = f.lo == f.hi;
        let Some(def) = def else {
            if !empty {
                self.push(Code::FIELD_NOT_DEFINED, Pos::field(n, 0));
            }
            return;
        };
        if empty {
            // MSH-9 to MSH-12 are reported by the syntax layer (MSH_FIELD_MISSING).
            if def.required && !(is_msh && (9..=12).contains(&n)) {
                // Required in this version alone: the sources likely err (a warning).
                let severity = if def.required_alone { Severity::Warning } else { Severity::Error };
                self.push_with(Code::FIELD_REQUIRED_MISSING, severity, Pos::field(n, 0));
            }
            return;
        }
        if def.withdrawn {
            self.push(Code::FIELD_WITHDRAWN, Pos::field(n, 0));
            return;
        }
        let ty = match (def.ty, ty) {
            (Ty::Varies, Some(resolved)) => resolved,
            (ty, _) => ty,
        };
        if f.events.is_empty() && ty == Ty::Primitive(Check::Text) {
            self.length(f, def, Pos::field(n, 1), true);
            return;
        }
        if !holds(f.events, REPETITION) {
            self.value(f, def, ty, Pos::field(n, 1), 0, ctx);
            return;
        }
        for (r, (lo, hi, events)) in parts(f.lo, f.hi, f.events, REPETITION).enumerate() {
            let r = r as u32 + 1;
            if def.max_reps != 0 && r > def.max_reps {
                self.push(Code::FIELD_REPEATED, Pos::field(n, r));
                break;
            }
            self.value(Span { lo, hi, events }, def, ty, Pos::field(n, r), 0, ctx);
        }
    }

    /// Checks one repetition (`depth` 0), component (1) or subcomponent (2).
    fn value(&mut self, s: Span<'_>, def: &Elem, ty: Ty, at: Pos, depth: u8, ctx: ElemCtx) {
        if s.lo == s.hi || is_null(self.bytes(s)) {
            return;
        }
        // A length is the version's: it does not apply to parts a later version added, nor to a
        // table value the version lists (2.5.1 gives OBX-2 two characters, and lists `CWE`).
        let fits = self.content(s, def, ty, at, depth, ctx);
        self.length(s, def, at, fits);
    }

    fn length(&mut self, s: Span<'_>, def: &Elem, at: Pos, fits: bool) {
        let max = def.max_len as usize;
        if fits && max != 0 && s.hi - s.lo > max && datatypes::char_count(self.bytes(s)) > max {
            self.push(Code::LENGTH_EXCEEDED, at);
        }
    }

    /// Checks the content of one part; false when its length is not the version's to judge.
    fn content(&mut self, s: Span<'_>, def: &Elem, ty: Ty, at: Pos, depth: u8, ctx: ElemCtx) -> bool {
        // The separator one level down, when the part holds one. Below subcomponents the
        // encoding has no separator: a composite there is its first component alone.
        let kind = match depth {
            0 => COMPONENT,
            1 => SUBCOMPONENT,
            _ => NONE,
        };
        let split = kind != NONE && holds(s.events, kind);
        match ty {
            // Types nest only a few levels; a bound keeps any table defect from recursing.
            Ty::Composite(_) if depth > MAX_TYPE_DEPTH => true,
            Ty::Composite(index) => {
                let plan = self.plan;
                let Some(components) = plan.composite(index).map(|t| &t.components) else { return true };
                let inner = ElemCtx { value_type: false, ..ctx };
                if !split {
                    // No separator: the part is the first component alone.
                    let mut fits = true;
                    if let Some(c) = components.first() {
                        let sub_at = at.child(depth, 1);
                        let fits_inner = self.content(s, c, c.ty, sub_at, depth + 1, inner);
                        self.length(s, c, sub_at, fits_inner);
                        fits = fits_inner;
                    }
                    self.required_after(components, 1, at, depth);
                    return fits;
                }
                let mut seen = 0usize;
                let mut last_empty = false;
                let mut fits = true;
                for (k, (lo, hi, events)) in parts(s.lo, s.hi, s.events, kind).enumerate() {
                    seen = k + 1;
                    last_empty = lo == hi;
                    let sub_at = at.child(depth, seen as u32);
                    match components.get(k) {
                        None if !last_empty => {
                            fits = false;
                            self.push(Code::COMPONENT_NOT_DEFINED, sub_at);
                        }
                        None => {}
                        Some(c) if last_empty && c.required => self.push(Code::COMPONENT_REQUIRED_MISSING, sub_at),
                        Some(_) if last_empty => {}
                        // Text without separators (most components): only its length.
                        Some(c) if events.is_empty() && c.ty == Ty::Primitive(Check::Text) => {
                            self.length(Span { lo, hi, events }, c, sub_at, true);
                        }
                        Some(c) => self.value(Span { lo, hi, events }, c, c.ty, sub_at, depth + 1, inner),
                    }
                }
                self.required_after(components, seen, at, depth);
                if last_empty && seen > 1 && self.report.strict() {
                    self.trailing(at.child(depth, seen as u32));
                }
                fits
            }
            Ty::Varies | Ty::Primitive(Check::Opaque) => true,
            Ty::Primitive(check) => {
                let mut value = s;
                let mut fits = true;
                if split {
                    let (mut seen, mut last_empty, mut extra) = (0u32, false, false);
                    for (lo, hi, events) in parts(s.lo, s.hi, s.events, kind) {
                        seen += 1;
                        last_empty = lo == hi;
                        if seen == 1 {
                            value = Span { lo, hi, events };
                        } else if !last_empty && !extra {
                            extra = true;
                            fits = false;
                            self.push(Code::COMPONENT_NOT_DEFINED, at.child(depth, seen));
                        }
                    }
                    if last_empty && seen > 1 && self.report.strict() {
                        self.trailing(at.child(depth, seen));
                    }
                }
                let v = self.bytes(value);
                if v.is_empty() || is_null(v) {
                    return fits;
                }
                self.primitive(value, check, def, at, ctx) && fits
            }
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
    fn primitive(&mut self, s: Span<'_>, check: Check, def: &Elem, at: Pos, ctx: ElemCtx) -> bool {
        let era = self.plan.era;
        let v = self.bytes(s);
        let (verdict, invalid) = match check {
            Check::Date => (datatypes::date(v, era), Code::DATE_INVALID),
            Check::DateTime => (datatypes::datetime(v, era), Code::DATETIME_INVALID),
            Check::Time => (datatypes::time(v, era), Code::TIME_INVALID),
            Check::Number => (verdict_of(datatypes::number(v)), Code::NUMBER_INVALID),
            Check::SequenceId => (verdict_of(datatypes::sequence_id(v)), Code::SEQUENCE_ID_INVALID),
            Check::Hl7Coded => return !self.table(s, def, at, ctx),
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
    fn table(&mut self, s: Span<'_>, def: &Elem, at: Pos, ctx: ElemCtx) -> bool {
        if ctx.skip_table {
            return false;
        }
        let plan = self.plan;
        let Some(set) = def.table.and_then(|i| plan.codes(i)) else { return false };
        let v = self.bytes(s);
        let mut coded = datatypes::coded(v, set);
        if coded == Coded::Unlisted && ctx.value_type && plan.type_named(v).is_some() {
            coded = Coded::Listed;
        }
        let severity = if set.open { Severity::Warning } else { Severity::Error };
        match coded {
            Coded::Listed => return true,
            Coded::Local if !self.report.strict() => {}
            Coded::Local | Coded::Unlisted => self.push_with(Code::TABLE_VALUE_UNKNOWN, severity, at),
        }
        false
    }

    /// With `--strict`: a trailing delimiter, once per segment.
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
    fn parts_between_separators() {
        // "a^^b^" with components at 1, 2, 4.
        let events = [(1, COMPONENT), (2, COMPONENT), (4, COMPONENT)];
        let got: Vec<(usize, usize)> = parts(0, 5, &events, COMPONENT).map(|(lo, hi, _)| (lo, hi)).collect();
        assert_eq!(got, vec![(0, 1), (2, 2), (3, 4), (5, 5)]);
        assert_eq!(parts(0, 0, &[], COMPONENT).count(), 1);
        // Subcomponent separators stay inside their component.
        let events = [(1, SUBCOMPONENT), (3, COMPONENT)];
        let got: Vec<usize> = parts(0, 5, &events, COMPONENT).map(|(_, _, e)| e.len()).collect();
        assert_eq!(got, vec![1, 0]);
    }
}
