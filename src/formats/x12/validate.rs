//! X12 validation: the envelope (ISA by position and code values, GS, ST/SE, GE, IEA, TA1:
//! widths, codes, dates and times, version agreement, SE01 and SE02) and a transaction set
//! against its implementation guide (loops and their triggers, segment order, usage and
//! repeats, element requirement, data types, lengths, code lists, composites, syntax rules).
//! Counts and control numbers across records (GE, IEA) are the stream tracker's (`codec`).
//!
//! Findings are codes, severities and locations built from numbers and the tables' names:
//! never a value. Collects every finding up to [`MAX_FINDINGS`].
//!
//! The walk places each segment as pyx12 does: forward in the current loop, then in a child
//! loop it opens, then in the loops around it (closing the inner ones); a segment that matches
//! nothing forward but an earlier place of the current loop is out of order, one that matches
//! nothing at all is unexpected. A loop is told from another by its first segment and the code
//! of its qualifier element (`NM1*IL`, `HL` level code), a segment from another with the same
//! id the same way.

use super::guide::{self, Element, Key, Loop, Node, Segment, Type, Usage};
use super::read::{Document, HAS_COMPONENT, HAS_REPETITION, ISA_WIDTHS, RecordKind, Seg};
use crate::diag::{Code, Diagnostic, Location, X12Position, X12Scope};

/// Most findings kept for one record.
pub const MAX_FINDINGS: usize = 1000;

/// Options.
#[derive(Copy, Clone, Debug)]
pub struct Options {
    /// Only what reading finds (`parse`, `fmt`).
    pub syntax_only: bool,
    /// Warnings become errors.
    pub strict: bool,
}

struct Out {
    findings: Vec<Diagnostic>,
    /// The 1-based position in the transaction set (ST is 1) of the segment each finding was
    /// made at (0: none), for the 999's IK3-02; kept only when asked for.
    ordinals: Option<Vec<u32>>,
    /// The segment being checked.
    at: u32,
}

impl Out {
    fn new(findings: Vec<Diagnostic>, ordinals: bool) -> Out {
        let ordinals = ordinals.then(|| vec![0; findings.len()]);
        Out { findings, ordinals, at: 0 }
    }

    fn push(&mut self, code: Code, p: X12Position) {
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(Diagnostic::new(code, Location::X12(p)));
            if let Some(o) = self.ordinals.as_mut() {
                o.push(self.at);
            }
        }
    }

    fn full(&self) -> bool {
        self.findings.len() >= MAX_FINDINGS
    }
}

/// The findings on a record.
pub fn validate(doc: &Document, options: Options) -> Vec<Diagnostic> {
    checked(doc, options, false).0
}

/// The findings on a record, each with the position in its transaction set of the segment it
/// was made at (ST is 1; 0: not at a segment), for the 999's IK3-02.
pub fn validate_with_ordinals(doc: &Document, options: Options) -> (Vec<Diagnostic>, Vec<u32>) {
    let (findings, ordinals) = checked(doc, options, true);
    let ordinals = ordinals.unwrap_or_default();
    (findings, ordinals)
}

#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
fn checked(doc: &Document, options: Options, ordinals: bool) -> (Vec<Diagnostic>, Option<Vec<u32>>) {
    let mut out = Out::new(doc.syntax.clone(), ordinals);
    let raw = doc.bytes().raw();
    let v = View { doc, raw };
    if !options.syntax_only {
        match doc.kind {
            RecordKind::Isa => v.isa(&mut out),
            RecordKind::Gs => v.gs(&mut out),
            RecordKind::Ge => v.numbers(&mut out, "GE", &[(1, 1, 6), (2, 1, 9)]),
            RecordKind::Iea => v.numbers(&mut out, "IEA", &[(1, 1, 5), (2, 9, 9)]),
            RecordKind::Ta1 => v.ta1(&mut out),
            RecordKind::Set => v.set(&mut out),
        }
    }
    if options.strict {
        for d in &mut out.findings {
            if d.severity == crate::diag::Severity::Warning {
                *d = d.with_severity(crate::diag::Severity::Error);
            }
        }
    }
    (out.findings, out.ordinals)
}

/// A record's bytes, read by the validator.
struct View<'a> {
    doc: &'a Document,
    raw: &'a [u8],
}

/// The elements of a segment as byte slices (element 1 first).
fn elements<'a>(raw: &'a [u8], doc: &Document, s: &Seg, spans: &mut Vec<(u32, u32)>) -> Vec<&'a [u8]> {
    doc.elements(s, spans);
    spans.iter().map(|&(a, b)| &raw[a as usize..b as usize]).collect()
}

fn digits(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(u8::is_ascii_digit)
}

fn num(v: &[u8]) -> Option<u32> {
    if !digits(v) || v.len() > 9 {
        return None;
    }
    v.iter().try_fold(0u32, |n, &d| n.checked_mul(10)?.checked_add(u32::from(d - b'0')))
}

/// CCYYMMDD (8) or YYMMDD (6).
pub fn is_date(v: &[u8]) -> bool {
    let (y, rest) = match v.len() {
        8 => (num(&v[..4]), &v[4..]),
        6 => (num(&v[..2]).map(|y| 2000 + y), &v[2..]),
        _ => return false,
    };
    let (Some(y), Some(m), Some(d)) = (y, num(&rest[..2]), num(&rest[2..4])) else { return false };
    if !(1..=12).contains(&m) || d == 0 {
        return false;
    }
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    d <= days[(m - 1) as usize]
}

/// HHMM[SS[D..]].
pub fn is_time(v: &[u8]) -> bool {
    if v.len() < 4 || v.len() > 8 || !digits(v) || v.len() == 5 {
        return false;
    }
    let h = num(&v[..2]).unwrap_or(99);
    let m = num(&v[2..4]).unwrap_or(99);
    let s = if v.len() >= 6 { num(&v[4..6]).unwrap_or(99) } else { 0 };
    h < 24 && m < 60 && s < 60
}

/// The length X12 counts for a value of a type (numbers: digits only), or `None` when the value
/// does not match the type.
fn typed_len(ty: Type, v: &[u8]) -> Option<usize> {
    match ty {
        Type::R => {
            let body = v.strip_prefix(b"-").unwrap_or(v);
            let mut dots = 0;
            let mut n = 0;
            for &c in body {
                match c {
                    b'0'..=b'9' => n += 1,
                    b'.' => dots += 1,
                    _ => return None,
                }
            }
            (n > 0 && dots <= 1).then_some(n)
        }
        Type::N0 | Type::N1 | Type::N2 | Type::N3 | Type::N4 | Type::N5 | Type::N6 | Type::N7 | Type::N8 | Type::N9 => {
            let body = v.strip_prefix(b"-").unwrap_or(v);
            digits(body).then_some(body.len())
        }
        _ => {
            // AN and ID: printable characters (the basic and extended character sets; UTF-8
            // bytes of the extended set are taken as they are).
            (!v.iter().any(|&c| c < 0x20 || c == 0x7F)).then_some(v.len())
        }
    }
}

/// A segment id as the syntax allows: two or three upper-case letters or digits, a letter first.
fn well_formed_id(id: &[u8]) -> bool {
    (2..=3).contains(&id.len())
        && id[0].is_ascii_uppercase()
        && id.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Checks one simple value against its definition.
fn check_value(def: &Element, v: &[u8], p: X12Position, out: &mut Out) {
    let Some(len) = typed_len(def.ty, v) else {
        out.push(Code::X12_ELEMENT_TYPE_INVALID, p);
        return;
    };
    match def.ty {
        Type::DT if !is_date(v) => {
            out.push(Code::X12_DATE_INVALID, p);
            return;
        }
        Type::TM if !is_time(v) => {
            out.push(Code::X12_TIME_INVALID, p);
            return;
        }
        _ => {}
    }
    if len > usize::from(def.max) {
        out.push(Code::X12_ELEMENT_TOO_LONG, p);
    } else if len < usize::from(def.min) {
        out.push(Code::X12_ELEMENT_TOO_SHORT, p);
    }
    let codes = def.codes();
    if !codes.is_empty() && !guide::has_code(codes, v) {
        out.push(Code::X12_CODE_INVALID, p);
    }
    // X12.6: trailing spaces of a string element are suppressed by its sender.
    if def.ty == Type::AN && v.last() == Some(&b' ') {
        out.push(Code::X12_ELEMENT_TRAILING_SPACES, p);
    }
}

impl<'a> View<'a> {
    fn own(&self) -> Option<&'a Seg> {
        self.doc.own_segs().first()
    }

    fn isa(&self, out: &mut Out) {
        let Some(s) = self.own() else { return };
        let at = X12Position::envelope(X12Scope::Interchange, "ISA");
        let mut spans = Vec::new();
        let e = elements(self.raw, self.doc, s, &mut spans);
        if !self.doc.isa_fixed {
            let bad = e.iter().zip(ISA_WIDTHS).position(|(v, w)| v.len() != w).map_or(0, |i| i + 1);
            out.push(Code::X12_ISA_WIDTH, at.element(bad as u8, 0));
        }
        let get = |n: usize| e.get(n - 1).copied().unwrap_or_default();
        let code = |n: usize, list: &[&[u8]], out: &mut Out| {
            if !list.contains(&get(n)) {
                out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(n as u8, 0));
            }
        };
        code(1, &[b"00", b"03"], out);
        code(3, &[b"00", b"01"], out);
        let qualifiers: &[&[u8]] = &[b"01", b"14", b"20", b"27", b"28", b"29", b"30", b"33", b"ZZ"];
        code(5, qualifiers, out);
        code(7, qualifiers, out);
        for n in [6, 8] {
            if get(n).iter().all(|&c| c == b' ') {
                out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(n as u8, 0));
            }
        }
        if !is_date(get(9)) || get(9).len() != 6 {
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(9, 0));
        }
        if get(10).len() != 4 || !is_time(get(10)) {
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(10, 0));
        }
        let version = get(12);
        if version.len() != 5 || !digits(version) {
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(12, 0));
        } else if version >= b"00501".as_slice() && self.doc.delimiters.repetition.is_none() {
            // 5010: ISA11 is the repetition separator.
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(11, 0));
        }
        if get(13).len() != 9 || !digits(get(13)) {
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(13, 0));
        }
        code(14, &[b"0", b"1"], out);
        code(15, &[b"P", b"T", b"I"], out);
    }

    fn gs(&self, out: &mut Out) {
        let Some(s) = self.own() else { return };
        let at = X12Position::envelope(X12Scope::Group(self.doc.group), "GS");
        let mut spans = Vec::new();
        let e = elements(self.raw, self.doc, s, &mut spans);
        let get = |n: usize| e.get(n - 1).copied().unwrap_or_default();
        let bad = |n: u8, out: &mut Out| out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(n, 0));
        if get(1).len() != 2 || !get(1).iter().all(u8::is_ascii_uppercase) {
            bad(1, out);
        }
        for n in [2, 3] {
            if !(2..=15).contains(&get(n).len()) || typed_len(Type::AN, get(n)).is_none() {
                bad(n as u8, out);
            }
        }
        if get(4).len() != 8 || !is_date(get(4)) {
            bad(4, out);
        }
        if !is_time(get(5)) {
            bad(5, out);
        }
        if num(get(6)).is_none() {
            bad(6, out);
        }
        if !matches!(get(7), b"X" | b"T") {
            bad(7, out);
        }
        let version = get(8);
        if !(1..=12).contains(&version.len()) || typed_len(Type::AN, version).is_none() {
            bad(8, out);
        } else if let Some(isa) = self.doc.context("ISA") {
            let mut spans = Vec::new();
            let ie = elements(self.raw, self.doc, isa, &mut spans);
            let isa12 = ie.get(11).copied().unwrap_or_default();
            if isa12.len() == 5 && version.len() >= 5 && version[..5] != *isa12 {
                out.push(Code::X12_VERSION_MISMATCH, at.element(8, 0));
            }
        }
    }

    /// Elements that are numbers: (element, min digits, max digits).
    fn numbers(&self, out: &mut Out, id: &'static str, rules: &[(u8, usize, usize)]) {
        let Some(s) = self.own() else { return };
        let scope = if id == "GE" { X12Scope::Group(self.doc.group) } else { X12Scope::Interchange };
        let at = X12Position::envelope(scope, id);
        let mut spans = Vec::new();
        let e = elements(self.raw, self.doc, s, &mut spans);
        for &(n, min, max) in rules {
            let v = e.get(usize::from(n) - 1).copied().unwrap_or_default();
            if !digits(v) || v.len() < min || v.len() > max {
                out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(n, 0));
            }
        }
    }

    fn ta1(&self, out: &mut Out) {
        let Some(s) = self.own() else { return };
        let at = X12Position::envelope(X12Scope::Interchange, "TA1");
        let mut spans = Vec::new();
        let e = elements(self.raw, self.doc, s, &mut spans);
        let get = |n: usize| e.get(n - 1).copied().unwrap_or_default();
        let bad = |n: u8, out: &mut Out| out.push(Code::X12_ENVELOPE_VALUE_INVALID, at.element(n, 0));
        if get(1).len() != 9 || !digits(get(1)) {
            bad(1, out);
        }
        if get(2).len() != 6 || !is_date(get(2)) {
            bad(2, out);
        }
        if get(3).len() != 4 || !is_time(get(3)) {
            bad(3, out);
        }
        if !matches!(get(4), b"A" | b"E" | b"R") {
            bad(4, out);
        }
        if get(5).len() != 3 || !digits(get(5)) {
            bad(5, out);
        }
    }

    fn set(&self, out: &mut Out) {
        let segs = self.doc.own_segs();
        let scope = X12Scope::Set(self.doc.set);
        let st_at = X12Position::envelope(scope, "ST");
        let se_at = X12Position::envelope(scope, "SE");
        out.at = 1;
        let Some(st) = segs.first().filter(|s| s.id == Some("ST")) else {
            out.push(Code::X12_HEADER_MISSING, st_at);
            return;
        };
        let (st01, st02, st03) = (self.nth(st, 0), self.nth(st, 1), self.nth(st, 2));
        if st01.len() != 3 || !digits(st01) {
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, st_at.element(1, 0));
        }
        if !(4..=9).contains(&st02.len()) || typed_len(Type::AN, st02).is_none() {
            out.push(Code::X12_ENVELOPE_VALUE_INVALID, st_at.element(2, 0));
        }
        let gs08: &[u8] = match self.doc.context("GS") {
            Some(gs) => self.nth(gs, 7),
            None => b"",
        };
        if !st03.is_empty() && !gs08.is_empty() && st03 != gs08 {
            out.push(Code::X12_VERSION_MISMATCH, st_at.element(3, 0));
        }
        out.at = segs.len() as u32;
        match segs.last().filter(|s| s.id == Some("SE") && segs.len() > 1) {
            None => out.push(Code::X12_TRAILER_MISSING, se_at),
            Some(se) => {
                let (se01, se02) = (self.nth(se, 0), self.nth(se, 1));
                match num(se01) {
                    None => out.push(Code::X12_ENVELOPE_VALUE_INVALID, se_at.element(1, 0)),
                    Some(n) if n as usize != segs.len() => out.push(Code::X12_COUNT_MISMATCH, se_at.element(1, 0)),
                    Some(_) => {}
                }
                if se02 != st02 {
                    out.push(Code::X12_CONTROL_NUMBER_MISMATCH, se_at.element(2, 0));
                }
            }
        }
        for (i, s) in segs.iter().enumerate() {
            if !well_formed_id(&self.raw[s.start as usize..s.id_end as usize]) {
                out.at = i as u32 + 1;
                let p = X12Position { scope, segment: None, index: i as u32 + 1, ..Default::default() };
                out.push(Code::X12_SEGMENT_ID_INVALID, p);
            }
        }
        let version = if st03.is_empty() { gs08 } else { st03 };
        out.at = 1;
        match guide::guide(st01, version) {
            None => out.push(Code::X12_TRANSACTION_SET_UNKNOWN, st_at),
            Some(g) => Walk::new(self, scope).run(guide::loop_at(g.root), segs, out),
        }
    }
}

/// The guide of a transaction set record and where each of its own segments goes (`None`: not
/// a set, or no guide).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn structure(doc: &Document) -> Option<(&'static guide::Guide, Vec<Step>)> {
    if doc.kind != RecordKind::Set {
        return None;
    }
    let raw = doc.bytes().raw();
    let view = View { doc, raw };
    let g = view.guide()?;
    let mut walk = Walk::new(&view, X12Scope::Set(doc.set));
    walk.steps = Some(Vec::with_capacity(doc.own_segs().len()));
    let mut out = Out::new(Vec::new(), false);
    walk.run(guide::loop_at(g.root), doc.own_segs(), &mut out);
    walk.steps.take().map(|steps| (g, steps))
}

/// The transaction set id (ST01) and version (ST03, else GS08) of a set record, as the tables
/// name them (`None` when no guide has them).
#[expect(
    clippy::disallowed_methods,
    reason = "a parser or validator: it reads bytes to build structure or check syntax; what it returns is value-free"
)]
pub fn guide_of(doc: &Document) -> Option<&'static guide::Guide> {
    let raw = doc.bytes().raw();
    View { doc, raw }.guide()
}

impl<'a> View<'a> {
    fn guide(&self) -> Option<&'static guide::Guide> {
        let st = self.doc.own_segs().first().filter(|s| s.id == Some("ST"))?;
        let (st01, st03) = (self.nth(st, 0), self.nth(st, 2));
        if !st03.is_empty() {
            return guide::guide(st01, st03);
        }
        let gs = self.doc.context("GS")?;
        guide::guide(st01, self.nth(gs, 7))
    }

    /// Element `i` (0-based) of a segment, empty when absent.
    fn nth(&self, s: &Seg, i: usize) -> &'a [u8] {
        if i >= s.element_count() {
            return b"";
        }
        let (a, b) = self.doc.span(s, i);
        &self.raw[a as usize..b as usize]
    }
}

/// One open loop instance.
#[derive(Debug)]
struct Frame {
    lp: &'static Loop,
    /// The child last placed.
    cursor: usize,
    /// Where this frame's counts start in `Walk::counts`.
    base: usize,
}

/// Where a segment was placed: the depth of the loop it is in (1: the root) and the loop it
/// opened, if any.
#[derive(Copy, Clone, Debug)]
pub struct Step {
    /// Depth after the segment.
    pub depth: usize,
    /// The loop the segment opened.
    pub opened: Option<&'static Loop>,
    /// The loop the segment is in (after placement).
    pub within: Option<&'static Loop>,
    /// The definition the segment was placed at (`None`: unexpected).
    pub def: Option<&'static Segment>,
}

/// The walk of a transaction set through its guide.
struct Walk<'v, 'a> {
    view: &'v View<'a>,
    scope: X12Scope,
    steps: Option<Vec<Step>>,
    /// The last segment opened a loop.
    opened_again: bool,
    /// The definition the last segment was placed at.
    placed: Option<&'static Segment>,
    stack: Vec<Frame>,
    counts: Vec<u32>,
    /// The element spans of the segment being placed.
    values: Vec<(usize, usize)>,
    /// Its id, packed (`guide::pack`).
    key: u32,
}

impl<'v, 'a> Walk<'v, 'a> {
    fn new(view: &'v View<'a>, scope: X12Scope) -> Self {
        Walk {
            view,
            scope,
            steps: None,
            opened_again: false,
            placed: None,
            stack: Vec::with_capacity(8),
            counts: Vec::with_capacity(128),
            values: Vec::with_capacity(32),
            key: u32::MAX,
        }
    }

    fn push_frame(&mut self, lp: &'static Loop) {
        let base = self.counts.len();
        self.counts.resize(base + lp.nodes().len(), 0);
        if let Some(c) = self.counts.get_mut(base) {
            *c = 1;
        }
        self.stack.push(Frame { lp, cursor: 0, base });
    }

    /// Reports the required children of the top frame from `from` on that never occurred.
    fn missing(&mut self, frame: usize, from: usize, to: usize, out: &mut Out) {
        let f = &self.stack[frame];
        let nodes = f.lp.nodes();
        let info = f.lp.node_info();
        for (i, node) in nodes.iter().enumerate().take(to).skip(from) {
            // Only a required child that never occurred is reported.
            if self.counts[f.base + i] > 0 || info.get(i).is_some_and(|n| !n.required) {
                continue;
            }
            match *node {
                Node::S(s) => {
                    let def = guide::segment_at(s);
                    if def.usage == Usage::R {
                        let p = X12Position {
                            scope: self.scope,
                            path: f.lp.path,
                            segment: Some(def.id),
                            ..Default::default()
                        };
                        out.push(Code::X12_SEGMENT_MISSING, p);
                    }
                }
                Node::L(l) => {
                    let lp = guide::loop_at(l);
                    if lp.usage == Usage::R {
                        let id = lp.trigger().map(|t| t.id);
                        let p = X12Position { scope: self.scope, path: lp.path, segment: id, ..Default::default() };
                        out.push(Code::X12_LOOP_MISSING, p);
                    }
                }
            }
        }
    }

    fn pop(&mut self, out: &mut Out) {
        let top = self.stack.len() - 1;
        let f = &self.stack[top];
        let (cursor, len, base) = (f.cursor, f.lp.nodes().len(), f.base);
        self.missing(top, cursor + 1, len, out);
        self.stack.pop();
        self.counts.truncate(base);
    }

    /// Does the segment match a definition (id and keys)?
    fn matches(&self, def: &Segment, s: &Seg) -> bool {
        if s.id.is_none() || self.key != guide::pack(def.id.as_bytes()) {
            return false;
        }
        def.keys.iter().all(|&Key(el, comp, start, len)| {
            if el == 0 {
                return true;
            }
            let Some(&(a, b)) = self.values_of(s).get(usize::from(el) - 1) else { return false };
            let mut v = &self.view.raw[a..b];
            if comp > 0 {
                let c = self.view.doc.delimiters.component;
                v = v.split(|&x| x == c).nth(usize::from(comp) - 1).unwrap_or_default();
            }
            guide::has_code(guide::codes(start, len), v)
        })
    }

    fn values_of(&self, _s: &Seg) -> &[(usize, usize)] {
        &self.values
    }

    fn trigger_matches(&self, lp: &Loop, s: &Seg) -> bool {
        lp.trigger().is_some_and(|t| self.matches(t, s))
    }

    /// Where the segment goes: (frame, child index) searching forward from the top frame out.
    fn place(&self, s: &Seg) -> Option<(usize, usize)> {
        for depth in (0..self.stack.len()).rev() {
            let f = &self.stack[depth];
            let nodes = f.lp.nodes();
            // The first child is the loop's trigger: matching it again opens a new instance,
            // found in the frame around.
            let info = f.lp.node_info();
            let from = f.cursor.max(1);
            for (i, node) in nodes.iter().enumerate().skip(from) {
                // A child of another id cannot match (`matches` compares the ids first).
                if info.get(i).is_some_and(|n| n.key != self.key) {
                    continue;
                }
                let hit = match *node {
                    Node::S(d) => self.matches(guide::segment_at(d), s),
                    Node::L(l) => self.trigger_matches(guide::loop_at(l), s),
                };
                if hit {
                    return Some((depth, i));
                }
            }
        }
        None
    }

    /// The number of segments with this id so far in the frame (1-based occurrence).
    fn occurrence(&self, frame: usize, id: &'static str) -> u32 {
        let f = &self.stack[frame];
        let key = guide::pack(id.as_bytes());
        f.lp.nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n, Node::S(d) if guide::pack(guide::segment_at(*d).id.as_bytes()) == key))
            .map(|(i, _)| self.counts[f.base + i])
            .sum()
    }

    fn run(&mut self, root: &'static Loop, segs: &[Seg], out: &mut Out) {
        self.push_frame(root);
        for (n, s) in segs.iter().enumerate() {
            if out.full() && self.steps.is_none() {
                return;
            }
            self.load(s);
            out.at = n as u32 + 1;
            if n == 0 {
                // ST opened the root.
                if let Some(steps) = self.steps.as_mut() {
                    let def = root.trigger();
                    steps.push(Step { depth: 1, opened: None, within: Some(root), def });
                }
                continue;
            }
            match self.place(s) {
                Some((depth, i)) => {
                    while self.stack.len() > depth + 1 {
                        self.pop(out);
                    }
                    let top = self.stack.len() - 1;
                    let cursor = self.stack[top].cursor;
                    if i > cursor {
                        self.missing(top, cursor + 1, i, out);
                    }
                    let f = &self.stack[top];
                    let (lp, base) = (f.lp, f.base);
                    self.stack[top].cursor = i;
                    self.counts[base + i] += 1;
                    let count = self.counts[base + i];
                    match lp.nodes()[i] {
                        Node::S(d) => {
                            let def = guide::segment_at(d);
                            self.placed = Some(def);
                            // The occurrence (the position's index) is counted only for a
                            // segment with findings: most have none.
                            let p = X12Position {
                                scope: self.scope,
                                path: lp.path,
                                segment: Some(def.id),
                                index: 0,
                                ..Default::default()
                            };
                            let before = out.findings.len();
                            if count > def.max_use {
                                out.push(Code::X12_SEGMENT_REPEATED, p);
                            }
                            // The structure alone (`structure`, for the JSON model) checks no
                            // element.
                            if def.id != "SE" && self.steps.is_none() {
                                self.elements(def, s, p, out);
                            }
                            if out.findings.len() > before {
                                let index = self.occurrence(top, def.id);
                                for f in &mut out.findings[before..] {
                                    if let Location::X12(q) = &mut f.location {
                                        q.index = index;
                                    }
                                }
                            }
                        }
                        Node::L(l) => {
                            let child = guide::loop_at(l);
                            if count > child.repeat {
                                let p = X12Position {
                                    scope: self.scope,
                                    path: child.path,
                                    segment: child.trigger().map(|t| t.id),
                                    index: 1,
                                    ..Default::default()
                                };
                                out.push(Code::X12_LOOP_REPEATED, p);
                            }
                            self.push_frame(child);
                            self.opened_again = true;
                            self.placed = child.trigger();
                            if let Some(def) = child.trigger() {
                                let p = X12Position {
                                    scope: self.scope,
                                    path: child.path,
                                    segment: Some(def.id),
                                    index: 1,
                                    ..Default::default()
                                };
                                if self.steps.is_none() {
                                    self.elements(def, s, p, out);
                                }
                            }
                        }
                    }
                }
                None if s.id.is_none() && !well_formed_id(&self.view.raw[s.start as usize..s.id_end as usize]) => {
                    // Reported X12_SEGMENT_ID_INVALID already: one fault, one finding.
                }
                None => {
                    // Not forward: earlier in an open loop (out of order), or nowhere.
                    let top = self.stack.len() - 1;
                    let mut earlier = None;
                    for f in self.stack.iter().rev() {
                        let hit = f.lp.nodes().iter().take(f.cursor + 1).skip(1).find_map(|node| match *node {
                            Node::S(d) if self.matches(guide::segment_at(d), s) => {
                                Some((f.lp.path, guide::segment_at(d).id))
                            }
                            Node::L(l) if self.trigger_matches(guide::loop_at(l), s) => {
                                let lp = guide::loop_at(l);
                                lp.trigger().map(|t| (lp.path, t.id))
                            }
                            _ => None,
                        });
                        if hit.is_some() {
                            earlier = hit;
                            break;
                        }
                    }
                    let p = match (earlier, s.id) {
                        (Some((path, id)), _) => {
                            X12Position { scope: self.scope, path, segment: Some(id), index: 1, ..Default::default() }
                        }
                        (None, Some(id)) => {
                            let index = self.occurrence(top, id) + 1;
                            X12Position {
                                scope: self.scope,
                                path: self.stack[top].lp.path,
                                segment: Some(id),
                                index,
                                ..Default::default()
                            }
                        }
                        (None, None) => X12Position {
                            scope: self.scope,
                            path: self.stack[top].lp.path,
                            segment: None,
                            index: n as u32 + 1,
                            ..Default::default()
                        },
                    };
                    let earlier = earlier.is_some();
                    out.push(if earlier { Code::X12_SEGMENT_OUT_OF_ORDER } else { Code::X12_SEGMENT_UNEXPECTED }, p);
                }
            }
            if let Some(steps) = self.steps.as_mut() {
                let depth = self.stack.len();
                let within = self.stack.last().map(|f| f.lp);
                let opened = if self.opened_again { within } else { None };
                steps.push(Step { depth, opened, within, def: self.placed });
            }
            self.opened_again = false;
            self.placed = None;
        }
        while !self.stack.is_empty() {
            self.pop(out);
        }
    }

    /// The element spans of a segment into `values`.
    fn load(&mut self, s: &Seg) {
        let doc = self.view.doc;
        self.key = s.id.map_or(u32::MAX, |id| guide::pack(id.as_bytes()));
        self.values.clear();
        self.values.extend((0..s.element_count()).map(|i| {
            let (a, b) = doc.span(s, i);
            (a as usize, b as usize)
        }));
    }

    /// The elements of a placed segment against its definition.
    fn elements(&self, def: &Segment, s: &Seg, at: X12Position, out: &mut Out) {
        let defs = def.elements();
        // Which separators the segment holds: most hold none, and their values are not searched.
        let components = s.flags & HAS_COMPONENT != 0;
        let repetitions = s.flags & HAS_REPETITION != 0;
        let raw = self.view.raw;
        let d = self.view.doc.delimiters;
        let values = &self.values;
        for (i, &(a, b)) in values.iter().enumerate() {
            let v = &raw[a..b];
            let n = (i + 1).min(255) as u8;
            let p = at.element(n, 0);
            let Some(e) = defs.get(i) else {
                if values[i..].iter().any(|&(a, b)| a < b) {
                    out.push(Code::X12_ELEMENT_TOO_MANY, p);
                }
                break;
            };
            if v.is_empty() {
                if e.usage == Usage::R {
                    out.push(Code::X12_ELEMENT_MISSING, p);
                }
                continue;
            }
            if e.usage == Usage::N {
                out.push(Code::X12_ELEMENT_NOT_USED, p);
                continue;
            }
            let check = |rep: &[u8], out: &mut Out| {
                if e.ty == Type::C {
                    self.composite(e, rep, p, out);
                } else if !rep.is_empty() {
                    if components && e.ty != Type::AN && rep.contains(&d.component) {
                        out.push(Code::X12_ELEMENT_TYPE_INVALID, p);
                        return;
                    }
                    check_value(e, rep, p, out);
                }
            };
            match d.repetition {
                Some(r) if repetitions && v.contains(&r) => {
                    if e.repeat <= 1 {
                        out.push(Code::X12_REPETITION_INVALID, p);
                    }
                    for rep in v.split(|&c| c == r) {
                        check(rep, out);
                    }
                }
                _ => check(v, out),
            }
        }
        for (i, e) in defs.iter().enumerate().skip(values.len()) {
            if e.usage == Usage::R {
                out.push(Code::X12_ELEMENT_MISSING, at.element((i + 1).min(255) as u8, 0));
            }
        }
        for rule in def.rules() {
            self.rule(rule, at, out);
        }
    }

    fn composite(&self, e: &Element, v: &[u8], p: X12Position, out: &mut Out) {
        let comps = e.components();
        let c = self.view.doc.delimiters.component;
        let mut n = 0;
        for (i, part) in v.split(|&x| x == c).enumerate() {
            n = i + 1;
            let at = p.element(p.element, (i + 1).min(255) as u8);
            let Some(def) = comps.get(i) else {
                if !part.is_empty() {
                    out.push(Code::X12_ELEMENT_TOO_MANY, at);
                }
                continue;
            };
            if part.is_empty() {
                if def.usage == Usage::R {
                    out.push(Code::X12_ELEMENT_MISSING, at);
                }
            } else if def.usage == Usage::N {
                out.push(Code::X12_ELEMENT_NOT_USED, at);
            } else {
                check_value(def, part, at, out);
            }
        }
        for (i, def) in comps.iter().enumerate().skip(n) {
            if def.usage == Usage::R {
                out.push(Code::X12_ELEMENT_MISSING, p.element(p.element, (i + 1).min(255) as u8));
            }
        }
    }

    fn present(&self, n: u8) -> bool {
        n > 0 && self.values.get(usize::from(n) - 1).is_some_and(|&(a, b)| a < b)
    }

    fn rule(&self, rule: &guide::Rule, at: X12Position, out: &mut Out) {
        // The rule's elements (0: none), on the stack.
        let mut buf = [0u8; 6];
        let mut len = 0;
        for &n in rule.elements.iter().filter(|&&n| n > 0) {
            buf[len] = n;
            len += 1;
        }
        let els = &buf[..len];
        let Some(&first) = els.first() else { return };
        let any = els.iter().any(|&n| self.present(n));
        let bad = match rule.kind {
            b'P' if any => els.iter().find(|&&n| !self.present(n)).copied(),
            b'R' if !any => Some(first),
            b'E' => els.iter().filter(|&&n| self.present(n)).nth(1).copied(),
            b'C' if self.present(first) => els[1..].iter().find(|&&n| !self.present(n)).copied(),
            b'L' if self.present(first) && !els[1..].iter().any(|&n| self.present(n)) => els.get(1).copied(),
            _ => None,
        };
        if let Some(n) = bad {
            out.push(Code::X12_SYNTAX_RULE, at.element(n, 0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times() {
        assert!(is_date(b"20240229"));
        assert!(!is_date(b"20230229"));
        assert!(is_date(b"240101"));
        assert!(!is_date(b"2024013"));
        assert!(is_time(b"1230"));
        assert!(is_time(b"123059"));
        assert!(is_time(b"12305912"));
        assert!(!is_time(b"2460"));
        assert_eq!(typed_len(Type::R, b"-12.50"), Some(4));
        assert_eq!(typed_len(Type::R, b"1.2.3"), None);
        assert_eq!(typed_len(Type::N0, b"12a"), None);
    }
}
