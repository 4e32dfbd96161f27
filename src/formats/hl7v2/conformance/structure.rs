//! Segment order and groups: a message's segments against its structure (HL7 v2 chapter 2,
//! "abstract message syntax"; the structures of table 0354).
//!
//! [`StructurePlan`] flattens a [`StructureDef`] tree into nodes with their children, their
//! "first sets" (the segments that can open a group) and dotted paths such as
//! `ADT_A01.PATIENT`. [`Matcher`] places each segment, in order, with the rule receivers such as
//! HAPI apply: look at the current position first (repeat it, or open a new repetition of the
//! current group), then forward among its later siblings (entering a group when the segment can
//! open it), then the same in each enclosing group, innermost first. It never goes back and never
//! tries alternatives: the work per segment is bounded by the size of the structure, so a message
//! costs O(segments x structure), whatever its content.
//!
//! The search is precompiled: each group state (a group and the child slot last matched) has a
//! row of transitions indexed by a dense code of the segment id (its index among the ids the
//! structure names), giving whether the current child opens with that segment and the first
//! later sibling that does. The common steps (the next segment in order, a repeat, the next
//! repetition of a group) are then a few table look-ups per open level; required children are
//! counted by prefix sums, so skipped slots are only walked when one of them is required. The
//! search through `ANYHL7SEGMENT` and ids the structure does not name keep the general search,
//! which is also the reference the tables are tested against.
//!
//! Findings: `SEGMENT_UNEXPECTED` (a segment of the structure where it cannot be placed),
//! `SEGMENT_REPEATED` (a non-repeating segment again), `SEGMENT_NOT_IN_STRUCTURE` (a standard
//! segment the structure does not define), `SEGMENT_MISSING` and `GROUP_MISSING` (a required
//! segment or group absent from an instance of its group, located by schema path, e.g.
//! `ORU_R01.PATIENT_RESULT/ORDER_OBSERVATION`). A segment that cannot be placed leaves the
//! position unchanged.
//!
//! What it does not do: look at Z segments or ids no version defines (the syntax layer reports
//! them as information, and they may occur anywhere), or at field contents (see `fields`). The
//! `ANYHL7SEGMENT` placeholder of a few structures matches any segment, as a last resort.

use crate::diag::{Code, Hl7Position, Location};
use crate::formats::hl7v2::schema::{Node, NodeKind, Repeat, StructureDef};

use std::sync::OnceLock;

use super::Report;
use super::plan::{Plan, SegmentPlan};

/// Deepest group nesting compiled (the tables nest at most 10 deep; the schema decoder caps 32).
const MAX_DEPTH: usize = 32;

const NONE: u16 = u16::MAX;

/// Transition entry: the first later sibling that opens with the segment (low 15 bits,
/// [`NO_SLOT`] for none), and [`OPENS`] when the current child opens with it.
const SLOT_MASK: u16 = 0x7FFF;
const NO_SLOT: u16 = 0x7FFF;
const OPENS: u16 = 0x8000;

/// [`StateInfo::inner`] of a child that is no group.
const NO_STATE: u32 = u32::MAX;

/// A group state's current child.
#[derive(Copy, Clone, Debug)]
struct StateInfo {
    /// Maximum occurrences, 0 for unbounded.
    max: u32,
    /// The child's first state when it is a group or choice, else [`NO_STATE`].
    inner: u32,
    /// The child's node.
    kid: u16,
    /// The child is a segment.
    segment: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Root,
    Group,
    Choice,
    Segment,
    Any,
}

#[derive(Copy, Clone, Debug)]
struct NodePlan {
    kind: Kind,
    /// Segment id, or the group's short name.
    name: &'static str,
    /// The segment id as an integer (0 for groups).
    key: u32,
    required: bool,
    /// Maximum occurrences, 0 for unbounded.
    max: u32,
    /// Children: a range of `kids`.
    kids: (u32, u16),
    /// Segments that can open the group: a range of `firsts`.
    first: (u32, u16),
    /// `ANYHL7SEGMENT` can open the group.
    first_any: bool,
    /// The group's dotted path: a range of `paths`.
    path: (u32, u32),
    /// Groups: the first of its states (child slot none, then one per slot) in `trans` rows.
    state: u32,
    /// Groups: the first of its prefix counts of required children in `required_before`.
    req: u32,
}

/// What a node index outside the plan reads as (never, by construction).
static MISSING_NODE: NodePlan = NodePlan {
    kind: Kind::Segment,
    name: "",
    key: 0,
    required: false,
    max: 1,
    kids: (0, 0),
    first: (0, 0),
    first_any: false,
    path: (0, 0),
    state: 0,
    req: 0,
};

/// A compiled message structure.
#[derive(Debug)]
pub(crate) struct StructurePlan {
    nodes: Vec<NodePlan>,
    kids: Vec<u16>,
    firsts: Vec<u32>,
    /// Every segment id the structure names, as keys, sorted.
    segment_ids: Vec<u32>,
    paths: String,
    /// Segment key -> dense code (its index in `segment_ids`), open addressing (0: empty).
    code_keys: Vec<u32>,
    code_values: Vec<u16>,
    code_shift: u32,
    /// One row of `segment_ids.len()` transition entries per group state.
    trans: Vec<u16>,
    /// Per group state: what the current child is.
    states: Vec<StateInfo>,
    /// Per group: for each slot `i` (and one past the last), the required children before `i`.
    required_before: Vec<u16>,
    /// The segment ids by code.
    code_names: Vec<&'static str>,
    /// The version's plan of each segment id, by code (built on first use).
    segment_plans: OnceLock<Box<[Option<&'static SegmentPlan>]>>,
}

impl StructurePlan {
    /// Compiles a structure. `None` if it nests deeper than [`MAX_DEPTH`] or is too large to
    /// index with 16 bits (neither occurs in the embedded tables).
    pub(crate) fn compile(def: &'static StructureDef) -> Option<StructurePlan> {
        let mut p = StructurePlan {
            nodes: Vec::new(),
            kids: Vec::new(),
            firsts: Vec::new(),
            segment_ids: Vec::new(),
            paths: String::new(),
            code_keys: Vec::new(),
            code_values: Vec::new(),
            code_shift: 0,
            trans: Vec::new(),
            states: Vec::new(),
            required_before: Vec::new(),
            code_names: Vec::new(),
            segment_plans: OnceLock::new(),
        };
        let path = p.push_path(def.id);
        p.nodes.push(NodePlan {
            kind: Kind::Root,
            name: def.id,
            key: 0,
            required: true,
            max: 1,
            kids: (0, 0),
            first: (0, 0),
            first_any: false,
            path,
            state: 0,
            req: 0,
        });
        p.add_children(0, def.children(), path, 0)?;
        p.segment_ids.sort_unstable();
        p.segment_ids.dedup();
        p.code_names.sort_unstable_by_key(|name| segment_key(name));
        p.code_names.dedup_by_key(|name| segment_key(name));
        u16::try_from(p.nodes.len()).ok()?;
        p.compile_codes()?;
        p.compile_transitions()?;
        Some(p)
    }

    /// The dense codes: an open-addressing table at most half full.
    fn compile_codes(&mut self) -> Option<()> {
        let n = self.segment_ids.len();
        u16::try_from(n).ok()?;
        let size = (2 * n).next_power_of_two().max(8);
        self.code_shift = 32 - size.trailing_zeros();
        self.code_keys = vec![0; size];
        self.code_values = vec![0; size];
        for (code, &key) in self.segment_ids.iter().enumerate() {
            let mut i = code_slot(key, self.code_shift);
            while self.code_keys.get(i).is_some_and(|k| *k != 0) {
                i = (i + 1) & (size - 1);
            }
            *self.code_keys.get_mut(i)? = key;
            *self.code_values.get_mut(i)? = code as u16;
        }
        Some(())
    }

    /// The transition rows of every group state, and the prefix counts of required children.
    fn compile_transitions(&mut self) -> Option<()> {
        let n = self.segment_ids.len();
        let is_group = |k: Kind| matches!(k, Kind::Root | Kind::Group | Kind::Choice);
        // First the state bases, so that a state can name its child group's first state.
        let mut states = 0u32;
        for node in self.nodes.iter_mut().filter(|node| is_group(node.kind)) {
            node.state = states;
            states = states.checked_add(u32::from(node.kids.1) + 1)?;
        }
        for g in 0..self.nodes.len() {
            let node = *self.nodes.get(g)?;
            if !is_group(node.kind) {
                continue;
            }
            let kids = self.kids_of(&node).to_vec();
            if kids.len() >= usize::from(NO_SLOT) {
                return None;
            }
            self.nodes.get_mut(g)?.req = u32::try_from(self.required_before.len()).ok()?;
            let mut before = 0u16;
            self.required_before.push(0);
            for &k in &kids {
                before += u16::from(self.node(k).required);
                self.required_before.push(before);
            }
            // The codes each child opens with (`ANYHL7SEGMENT` is left to the general search).
            let opened: Vec<Vec<usize>> = kids
                .iter()
                .map(|&k| {
                    let kid = self.node(k);
                    match kid.kind {
                        Kind::Segment => self.code(kid.key).into_iter().collect(),
                        Kind::Any | Kind::Root => Vec::new(),
                        Kind::Group | Kind::Choice => self
                            .firsts
                            .get(kid.first.0 as usize..kid.first.0 as usize + usize::from(kid.first.1))
                            .unwrap_or_default()
                            .iter()
                            .filter_map(|&key| self.code(key))
                            .collect(),
                    }
                })
                .collect();
            // State `s`: child slot none (0) or `s - 1`; forward starts at slot `s`.
            let count = kids.len() + 1;
            let mut rows = vec![NO_SLOT; count * n];
            let mut next = vec![NO_SLOT; n];
            for s in (0..count).rev() {
                if let Some(codes) = opened.get(s) {
                    for &c in codes {
                        *next.get_mut(c)? = s as u16;
                    }
                }
                let choice_placed = node.kind == Kind::Choice && s > 0;
                if !choice_placed {
                    rows.get_mut(s * n..(s + 1) * n)?.copy_from_slice(&next);
                }
                if s > 0 {
                    for &c in opened.get(s - 1)? {
                        *rows.get_mut(s * n + c)? |= OPENS;
                    }
                }
            }
            self.trans.extend_from_slice(&rows);
            self.states.push(StateInfo { max: 0, inner: NO_STATE, kid: 0, segment: false });
            for &k in &kids {
                let kid = *self.node(k);
                let inner = if matches!(kid.kind, Kind::Group | Kind::Choice) { kid.state } else { NO_STATE };
                self.states.push(StateInfo { max: kid.max, inner, kid: k, segment: kid.kind == Kind::Segment });
            }
        }
        (self.states.len() == states as usize).then_some(())
    }

    /// The plan of each segment id the structure names, by code, from the version's `plan`
    /// (which compiled this structure).
    pub(crate) fn segment_plans(&self, plan: &'static Plan) -> &[Option<&'static SegmentPlan>] {
        self.segment_plans.get_or_init(|| self.code_names.iter().map(|name| plan.segment(name)).collect())
    }

    /// The dense code of segment key `key`, when the structure names it.
    #[inline]
    fn code(&self, key: u32) -> Option<usize> {
        let mask = self.code_keys.len().wrapping_sub(1);
        let mut i = code_slot(key, self.code_shift);
        for _ in 0..self.code_keys.len() {
            match self.code_keys.get(i) {
                Some(&k) if k == key && k != 0 => return self.code_values.get(i).map(|&c| usize::from(c)),
                Some(&k) if k != 0 => i = (i + 1) & mask,
                _ => return None,
            }
        }
        None
    }

    /// The transition entry of group state `state` for code `code`.
    #[inline]
    fn transition(&self, state: u32, code: usize) -> u16 {
        self.trans.get(state as usize * self.segment_ids.len() + code).copied().unwrap_or(NO_SLOT)
    }

    /// Whether any child of the open group in slots `from..to` is required.
    #[inline]
    fn requires_between(&self, level: &Level, from: u16, to: u16) -> bool {
        let to = to.min(level.kids);
        if from >= to {
            return false;
        }
        let at = |slot: u16| self.required_before.get(level.req as usize + usize::from(slot)).copied();
        match (at(from), at(to)) {
            (Some(a), Some(b)) => b > a,
            // Never, by construction: let the walk decide.
            _ => true,
        }
    }

    /// Whether skipping slots `from..to` of the open group reports a missing child (a choice
    /// never does).
    #[inline]
    fn reports_missing(&self, level: &Level, from: u16, to: u16) -> bool {
        !level.choice && self.requires_between(level, from, to)
    }

    /// What the current child of group state `state` is.
    #[inline]
    fn state(&self, state: u32) -> Option<&StateInfo> {
        self.states.get(state as usize)
    }

    fn push_path(&mut self, text: &str) -> (u32, u32) {
        let start = self.paths.len() as u32;
        self.paths.push_str(text);
        (start, self.paths.len() as u32)
    }

    fn add_children(
        &mut self,
        parent: usize,
        children: &'static [Node],
        parent_path: (u32, u32),
        depth: usize,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut ids = Vec::with_capacity(children.len());
        for child in children.iter() {
            let kind = match child.kind {
                NodeKind::Segment => Kind::Segment,
                NodeKind::Group => Kind::Group,
                NodeKind::Choice => Kind::Choice,
                NodeKind::AnySegment => Kind::Any,
            };
            let path = if matches!(kind, Kind::Group | Kind::Choice) {
                let parent_text = self.paths.get(parent_path.0 as usize..parent_path.1 as usize)?.to_owned();
                self.push_path(&format!("{parent_text}.{}", child.short_name))
            } else {
                (0, 0)
            };
            let key = if kind == Kind::Segment { segment_key(child.name) } else { 0 };
            if kind == Kind::Segment {
                self.segment_ids.push(key);
                self.code_names.push(child.name);
            }
            let max = match child.repeat {
                Repeat::Once => 1,
                Repeat::UpTo(n) => u32::from(n),
                Repeat::Unbounded => 0,
            };
            let id = u16::try_from(self.nodes.len()).ok()?;
            self.nodes.push(NodePlan {
                kind,
                name: if kind == Kind::Segment { child.name } else { child.short_name },
                key,
                required: child.required,
                max,
                kids: (0, 0),
                first: (0, 0),
                first_any: false,
                path,
                state: 0,
                req: 0,
            });
            if matches!(kind, Kind::Group | Kind::Choice) {
                self.add_children(usize::from(id), &child.children, path, depth + 1)?;
            }
            ids.push(id);
        }
        let start = self.kids.len() as u32;
        self.kids.extend_from_slice(&ids);
        let count = u16::try_from(ids.len()).ok()?;
        let node = self.nodes.get_mut(parent)?;
        node.kids = (start, count);
        // First set: what can open this group.
        let mut first = Vec::new();
        let mut any = false;
        let choice = node.kind == Kind::Choice;
        for &k in &ids {
            let kid = *self.nodes.get(usize::from(k))?;
            match kid.kind {
                Kind::Segment => first.push(kid.key),
                Kind::Any => any = true,
                _ => {
                    first.extend_from_slice(
                        self.firsts.get(kid.first.0 as usize..kid.first.0 as usize + usize::from(kid.first.1))?,
                    );
                    any |= kid.first_any;
                }
            }
            if kid.required && !choice {
                break;
            }
        }
        first.sort_unstable();
        first.dedup();
        let fstart = self.firsts.len() as u32;
        let fcount = u16::try_from(first.len()).ok()?;
        self.firsts.extend_from_slice(&first);
        let node = self.nodes.get_mut(parent)?;
        node.first = (fstart, fcount);
        node.first_any = any;
        Some(())
    }

    fn node(&self, i: u16) -> &NodePlan {
        // Invariant: indices come from `kids`, written by `compile`; a missing node reads as an
        // empty optional segment so that a broken plan can never panic.
        self.nodes.get(usize::from(i)).unwrap_or(&MISSING_NODE)
    }

    fn kids_of(&self, n: &NodePlan) -> &[u16] {
        self.kids.get(n.kids.0 as usize..n.kids.0 as usize + usize::from(n.kids.1)).unwrap_or_default()
    }

    fn path_of(&'static self, n: &NodePlan) -> &'static str {
        self.paths.get(n.path.0 as usize..n.path.1 as usize).unwrap_or_default()
    }

    /// Whether the structure names segment `id` anywhere.
    fn names(&self, id: u32) -> bool {
        self.segment_ids.binary_search(&id).is_ok()
    }

    /// Whether group `n` must start with segment `id`: its first child is required and is
    /// that segment, or a group that must start with it.
    fn requires_first(&self, n: &NodePlan, id: u32) -> bool {
        let mut n = n;
        // Each pass goes one group deeper; depth is bounded by the structure's nesting.
        for _ in 0..MAX_DEPTH + 1 {
            if n.kind != Kind::Group {
                return false;
            }
            let Some(kid) = self.kids_of(n).first().map(|&k| self.node(k)) else { return false };
            if !kid.required {
                return false;
            }
            if kid.kind == Kind::Segment {
                return kid.key == id;
            }
            n = kid;
        }
        false
    }

    /// Whether node `n` can start with segment `id` (`any`: let `ANYHL7SEGMENT` match).
    /// Whether group `n` holds segment `id` at any depth below it (bounded by the nesting).
    fn contains(&self, n: &NodePlan, id: u32, depth: usize) -> bool {
        match n.kind {
            Kind::Segment => n.key == id,
            Kind::Any => false,
            Kind::Group | Kind::Choice | Kind::Root => {
                depth < MAX_DEPTH && self.kids_of(n).iter().any(|&k| self.contains(self.node(k), id, depth + 1))
            }
        }
    }

    fn opens(&self, n: &NodePlan, id: u32, any: bool) -> bool {
        match n.kind {
            Kind::Segment => n.key == id,
            Kind::Any => any,
            Kind::Group | Kind::Choice | Kind::Root => {
                let firsts = self
                    .firsts
                    .get(n.first.0 as usize..n.first.0 as usize + usize::from(n.first.1))
                    .unwrap_or_default();
                firsts.contains(&id) || (any && n.first_any)
            }
        }
    }
}

/// The first probe of `key` in the code table (Fibonacci hashing).
#[inline]
fn code_slot(key: u32, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9) >> shift) as usize
}

/// A segment id as an integer (ids are three ASCII bytes; anything longer is cut, which only
/// the schema could supply and does not).
#[inline]
fn segment_key(id: &str) -> u32 {
    match *id.as_bytes() {
        [a, b, c] => (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c),
        _ => id.bytes().take(4).fold(0u32, |k, b| (k << 8) | u32::from(b)),
    }
}

/// One open group instance.
#[derive(Copy, Clone, Debug)]
struct Level {
    node: u16,
    /// The child slot last matched (`NONE`: nothing yet).
    child: u16,
    /// Occurrences of that child in this instance.
    count: u32,
    /// The group's first state (its node's `state`).
    state: u32,
    /// The group's first prefix count of required children (its node's `req`).
    req: u32,
    /// The group's number of children.
    kids: u16,
    /// The group is a choice.
    choice: bool,
}

impl Level {
    #[inline]
    fn open(plan: &StructurePlan, node: u16) -> Level {
        let n = plan.node(node);
        Level {
            node,
            child: NONE,
            count: 0,
            state: n.state,
            req: n.req,
            kids: n.kids.1,
            choice: n.kind == Kind::Choice,
        }
    }

    /// The group state: child slot none, or the slot last matched.
    #[inline]
    fn state(&self) -> u32 {
        self.state + u32::from(self.child.wrapping_add(1))
    }
}

/// Where a segment goes.
#[derive(Copy, Clone, Debug)]
struct Target {
    depth: usize,
    slot: u16,
    again: bool,
}

/// Places a message's segments in its structure, one at a time.
#[derive(Debug)]
pub(crate) struct Matcher {
    plan: &'static StructurePlan,
    stack: Vec<Level>,
    /// Only the general search (the reference the transition tables are tested against).
    general_only: bool,
}

impl Matcher {
    pub(crate) fn new(plan: &'static StructurePlan) -> Matcher {
        let mut stack = Vec::with_capacity(12);
        stack.push(Level::open(plan, 0));
        Matcher { plan, stack, general_only: false }
    }

    /// A matcher that uses only the general search (the reference for the tables).
    #[cfg(test)]
    fn general(plan: &'static StructurePlan) -> Matcher {
        Matcher { general_only: true, ..Matcher::new(plan) }
    }

    /// Places the next segment (a standard id; Z segments are not passed in). `at` gives its
    /// position, asked for only when there is a finding to locate. Returns the segment's code
    /// (see [`StructurePlan::segment_plans`]) when the structure names it.
    #[inline(never)]
    pub(crate) fn segment(
        &mut self,
        id: &'static str,
        at: impl FnOnce() -> Hl7Position,
        report: &mut Report,
    ) -> Option<usize> {
        let key = segment_key(id);
        let code = if self.general_only { None } else { self.plan.code(key) };
        if let Some(c) = code
            && self.place_common(c)
        {
            return code;
        }
        let mut repeated = false;
        let found = match code {
            Some(code) => self.find_by_table(code, key, &mut repeated),
            None => self.find(key, false, &mut repeated),
        };
        let found = found.or_else(|| self.find(key, true, &mut repeated));
        let found = if found.is_none() && !repeated { self.find_within(key) } else { found };
        let Some(target) = found else {
            let finding = if !self.plan.names(key) {
                Code::SEGMENT_NOT_IN_STRUCTURE
            } else if repeated {
                Code::SEGMENT_REPEATED
            } else {
                Code::SEGMENT_UNEXPECTED
            };
            report.push(finding, Location::Hl7(at()));
            return code;
        };
        self.commit(target, key, code, report);
        code
    }

    /// Closes every open group: reports required children never seen.
    pub(crate) fn finish(mut self, report: &mut Report) {
        while let Some(level) = self.stack.pop() {
            self.close(level, report);
        }
    }

    /// The common steps, placed directly when the tables settle them with no finding: a repeat
    /// of the current segment, the next segment of the innermost group, and the next repetition
    /// of the innermost group opening with a segment. Exactly what [`Matcher::find_by_table`]
    /// and [`Matcher::commit`] would do; false (nothing changed) for everything else.
    #[inline]
    fn place_common(&mut self, code: usize) -> bool {
        let p = self.plan;
        let Some(&top) = self.stack.last() else { return false };
        let state = top.state();
        let entry = p.transition(state, code);
        let slot = entry & SLOT_MASK;
        if entry & OPENS != 0 {
            let Some(info) = p.state(state) else { return false };
            if info.max == 0 || top.count < info.max {
                if info.inner != NO_STATE {
                    return false;
                }
                // A repeat of the current segment.
                if let Some(t) = self.stack.last_mut() {
                    t.count += 1;
                }
                return true;
            }
        }
        if slot != NO_SLOT {
            // The next segment in order, in the same group instance.
            let from = top.child.wrapping_add(1);
            let Some(next) = p.state(top.state + u32::from(slot) + 1) else { return false };
            if next.inner != NO_STATE || slot >= top.kids || p.reports_missing(&top, from, slot) {
                return false;
            }
            if let Some(t) = self.stack.last_mut() {
                t.child = slot;
                t.count = 1;
            }
            return true;
        }
        // The next repetition of the innermost group: its parent's current child opens again.
        let depth = self.stack.len();
        if depth < 2 {
            return false;
        }
        let Some(&parent) = self.stack.get(depth - 2) else { return false };
        let pstate = parent.state();
        if p.transition(pstate, code) & OPENS == 0 {
            return false;
        }
        let Some(group) = p.state(pstate) else { return false };
        if parent.child >= parent.kids || !(group.max == 0 || parent.count < group.max) || group.inner != top.state {
            return false;
        }
        // Closing the instance must report nothing (a choice never does).
        if p.reports_missing(&top, top.child.wrapping_add(1), top.kids) {
            return false;
        }
        let fresh = Level { child: NONE, count: 0, ..top };
        let inner = p.transition(fresh.state(), code) & SLOT_MASK;
        if inner == NO_SLOT || inner >= fresh.kids {
            return false;
        }
        let Some(first) = p.state(fresh.state + u32::from(inner) + 1) else { return false };
        if first.inner != NO_STATE || p.reports_missing(&fresh, 0, inner) {
            return false;
        }
        if let Some(par) = self.stack.get_mut(depth - 2) {
            par.count += 1;
        }
        if let Some(t) = self.stack.last_mut() {
            *t = Level { child: inner, count: 1, ..fresh };
        }
        true
    }

    /// [`Matcher::find`] without `ANYHL7SEGMENT`, by the transition tables: the same answer for
    /// a segment the structure names (dense code `code`, id `id`).
    #[inline]
    fn find_by_table(&self, code: usize, id: u32, repeated: &mut bool) -> Option<Target> {
        for depth in (0..self.stack.len()).rev() {
            if let Some(target) = self.table_candidate(depth, code, repeated) {
                let outer = |d: usize| self.table_candidate(d, code, &mut false);
                return Some(self.prefer_required_opening(target, id, outer));
            }
        }
        None
    }

    /// Where level `depth` alone would place the segment (dense code `code`), by the tables.
    #[inline]
    fn table_candidate(&self, depth: usize, code: usize, repeated: &mut bool) -> Option<Target> {
        let p = self.plan;
        let level = self.stack.get(depth)?;
        let state = level.state();
        let entry = p.transition(state, code);
        if entry & OPENS != 0 {
            let (max, segment) = p.state(state).map_or((1, false), |i| (i.max, i.segment));
            if max == 0 || level.count < max {
                return Some(Target { depth, slot: level.child, again: true });
            }
            if segment {
                *repeated = true;
            }
        }
        let slot = entry & SLOT_MASK;
        (slot != NO_SLOT).then_some(Target { depth, slot, again: false })
    }

    /// The general search: the current position at each level, then forward, innermost first.
    fn find(&self, id: u32, any: bool, repeated: &mut bool) -> Option<Target> {
        for depth in (0..self.stack.len()).rev() {
            if let Some(target) = self.general_candidate(depth, id, any, repeated) {
                let outer = |d: usize| self.general_candidate(d, id, any, &mut false);
                return Some(self.prefer_required_opening(target, id, outer));
            }
        }
        None
    }

    /// Where level `depth` alone would place segment `id`, by the general search.
    fn general_candidate(&self, depth: usize, id: u32, any: bool, repeated: &mut bool) -> Option<Target> {
        let p = self.plan;
        let level = self.stack.get(depth)?;
        let group = p.node(level.node);
        let kids = p.kids_of(group);
        if level.child != NONE {
            let current = p.node(*kids.get(usize::from(level.child))?);
            if p.opens(current, id, any) {
                if current.max == 0 || level.count < current.max {
                    return Some(Target { depth, slot: level.child, again: true });
                }
                if current.kind == Kind::Segment {
                    *repeated = true;
                }
            }
            if group.kind == Kind::Choice {
                // A choice holds one alternative per instance.
                return None;
            }
        }
        self.forward(level, id, any).map(|slot| Target { depth, slot, again: false })
    }

    /// For a segment no level can place: a group after a level's current child (innermost level
    /// first) that holds it further in, its opening segments missing (PV1 of ORU_R01's
    /// `PATIENT.VISIT` right after MSH, the PID left out). The group is opened there and its
    /// skipped required children reported (`SEGMENT_MISSING ORU_R01.PATIENT_RESULT.PATIENT/PID`)
    /// instead of the segment being unexpected. Only forward: a segment that belongs before
    /// the current place stays `SEGMENT_UNEXPECTED`.
    #[cold]
    fn find_within(&self, id: u32) -> Option<Target> {
        (0..self.stack.len()).rev().find_map(|depth| {
            let level = self.stack.get(depth)?;
            if level.choice && level.child != NONE {
                return None;
            }
            self.forward_within(level, id).map(|slot| Target { depth, slot, again: false })
        })
    }

    /// The first group after the level's current child that holds `id` below its first level.
    fn forward_within(&self, level: &Level, id: u32) -> Option<u16> {
        let p = self.plan;
        let kids = p.kids_of(p.node(level.node));
        let start = if level.child == NONE { 0 } else { usize::from(level.child) + 1 };
        (start..kids.len())
            .find(|&slot| {
                kids.get(slot).is_some_and(|&k| {
                    let n = p.node(k);
                    matches!(n.kind, Kind::Group | Kind::Choice) && p.contains(n, id, 0)
                })
            })
            .and_then(|slot| u16::try_from(slot).ok())
    }

    /// The node a target places the segment in (a segment, or a group it opens).
    fn target_node(&self, target: Target) -> Option<&NodePlan> {
        let level = self.stack.get(target.depth)?;
        let kids = self.plan.kids_of(self.plan.node(level.node));
        kids.get(usize::from(target.slot)).map(|&k| self.plan.node(k))
    }

    /// The candidate `inner` opens a group with a segment that is optional there (`[ORC] OBR`
    /// of OML_O21's ORDER_PRIOR). When the first enclosing level that can place the segment
    /// would open a new instance of a group whose required first segment it is (OML_O21's
    /// `ORDER`, `ORC` first), that placement wins: the abstract message syntax makes a new
    /// order of `ORC` after an order's `OBR`, not a prior result lacking its own `OBR`.
    /// Bounded: one candidate per enclosing level.
    fn prefer_required_opening(
        &self,
        inner: Target,
        id: u32,
        mut outer: impl FnMut(usize) -> Option<Target>,
    ) -> Target {
        let weak = self
            .target_node(inner)
            .is_some_and(|n| matches!(n.kind, Kind::Group | Kind::Choice) && !self.plan.requires_first(n, id));
        if !weak {
            return inner;
        }
        for depth in (0..inner.depth).rev() {
            if let Some(candidate) = outer(depth) {
                let strong = self
                    .target_node(candidate)
                    .is_some_and(|n| n.kind == Kind::Group && self.plan.requires_first(n, id));
                return if strong { candidate } else { inner };
            }
        }
        inner
    }

    /// The first child after the level's current one that can open with `id`.
    fn forward(&self, level: &Level, id: u32, any: bool) -> Option<u16> {
        let p = self.plan;
        let kids = p.kids_of(p.node(level.node));
        let start = if level.child == NONE { 0 } else { usize::from(level.child) + 1 };
        (start..kids.len())
            .find(|&slot| kids.get(slot).is_some_and(|&k| p.opens(p.node(k), id, any)))
            .and_then(|slot| u16::try_from(slot).ok())
    }

    fn commit(&mut self, target: Target, id: u32, code: Option<usize>, report: &mut Report) {
        while self.stack.len() > target.depth + 1 {
            if let Some(level) = self.stack.pop() {
                self.close(level, report);
            }
        }
        let mut target = target;
        // Each pass goes one group deeper; depth is bounded by the structure's nesting.
        for _ in 0..MAX_DEPTH + 1 {
            let Some(level) = self.stack.last().copied() else { return };
            if target.again {
                if let Some(top) = self.stack.last_mut() {
                    top.count += 1;
                }
            } else {
                let from = if level.child == NONE { 0 } else { level.child + 1 };
                self.missing_between(&level, from, target.slot, report);
                if let Some(top) = self.stack.last_mut() {
                    top.child = target.slot;
                    top.count = 1;
                }
            }
            let p = self.plan;
            if target.slot >= level.kids {
                return;
            }
            let Some(info) = p.state(level.state + u32::from(target.slot) + 1) else { return };
            if info.inner == NO_STATE {
                return;
            }
            // A new instance of a group: open it and place the segment inside.
            let inner = Level::open(p, info.kid);
            self.stack.push(inner);
            let slot = match code {
                Some(code) => Some(p.transition(inner.state(), code) & SLOT_MASK).filter(|s| *s != NO_SLOT),
                None => self.forward(&inner, id, false),
            };
            let Some(slot) =
                slot.or_else(|| self.forward(&inner, id, true)).or_else(|| self.forward_within(&inner, id))
            else {
                return;
            };
            target = Target { depth: self.stack.len() - 1, slot, again: false };
        }
    }

    /// Reports required children in slots `from..to` of the open group (skipped over).
    #[inline]
    fn missing_between(&self, level: &Level, from: u16, to: u16, report: &mut Report) {
        if level.choice {
            return;
        }
        if !self.general_only && !self.plan.requires_between(level, from, to) {
            return;
        }
        self.report_missing(self.plan.node(level.node), from, to, report);
    }

    #[cold]
    fn report_missing(&self, g: &NodePlan, from: u16, to: u16, report: &mut Report) {
        let p = self.plan;
        let kids = p.kids_of(g);
        for slot in usize::from(from)..usize::from(to).min(kids.len()) {
            let Some(&k) = kids.get(slot) else { continue };
            let kid = p.node(k);
            if kid.required {
                let code = if matches!(kid.kind, Kind::Group | Kind::Choice) {
                    Code::GROUP_MISSING
                } else {
                    Code::SEGMENT_MISSING
                };
                report.push(code, Location::Path(p.path_of(g), kid.name));
            }
        }
    }

    fn close(&self, level: Level, report: &mut Report) {
        let from = if level.child == NONE { 0 } else { level.child + 1 };
        if level.choice && level.child != NONE {
            return;
        }
        self.missing_between(&level, from, level.kids, report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::hl7v2::conformance::plan;
    use crate::formats::hl7v2::schema::Version;

    fn run(version: Version, structure: &str, segments: &[&'static str]) -> Vec<String> {
        let Some(p) = plan::plan(version) else { panic!("plan") };
        let Some(idx) = p.structure_index(structure.as_bytes()) else { panic!("structure {structure}") };
        let Some(sp) = p.structure(idx) else { panic!("compile") };
        let mut report = Report::new(false, 1000);
        let mut m = Matcher::new(sp);
        for (i, id) in segments.iter().enumerate() {
            m.segment(id, || Hl7Position::segment(None, i as u32 + 1), &mut report);
        }
        m.finish(&mut report);
        report.finish().0.iter().map(|d| format!("{} {}", d.code.as_str(), d.location)).collect()
    }

    #[test]
    fn a_conformant_adt_has_no_finding() {
        let segs = ["MSH", "EVN", "PID", "NK1", "NK1", "PV1", "OBX", "AL1", "DG1", "IN1", "IN2"];
        assert_eq!(run(Version::V2_5_1, "ADT_A01", &segs), Vec::<String>::new());
    }

    #[test]
    fn oru_groups_repeat() {
        let mut segs = vec!["MSH", "PID", "PV1", "ORC", "OBR"];
        segs.extend(std::iter::repeat_n("OBX", 50));
        segs.extend(["NTE", "OBR", "OBX", "PID", "OBR", "OBX"]);
        assert_eq!(run(Version::V2_5_1, "ORU_R01", &segs), Vec::<String>::new());
    }

    /// Regression (real-world OML^O21/O33 samples): an `ORC` after an order's `OBR` opens the
    /// next order (`ORDER` starts with a required `ORC`), not a prior result whose optional
    /// `ORC` would leave ORDER_PRIOR without its `OBR`.
    #[test]
    fn orc_after_obr_opens_the_next_order() {
        let two = ["MSH", "PID", "ORC", "TQ1", "OBR", "ORC", "TQ1", "OBR"];
        for v in [Version::V2_5, Version::V2_5_1, Version::V2_6, Version::V2_7, Version::V2_8] {
            assert_eq!(run(v, "OML_O21", &two), Vec::<String>::new(), "{v:?}");
        }
        let specimens = ["MSH", "PID", "PV1", "SPM", "ORC", "TQ1", "OBR", "SPM", "ORC", "TQ1", "OBR", "ORC", "OBR"];
        assert_eq!(run(Version::V2_5, "OML_O33", &specimens), Vec::<String>::new());
        // A prior result that opens with its patient still goes under PRIOR_RESULT.
        let prior = ["MSH", "PID", "ORC", "OBR", "PID", "PV1", "ORC", "OBR", "OBX"];
        assert_eq!(run(Version::V2_5, "OML_O21", &prior), Vec::<String>::new());
        // ORU's ORDER_OBSERVATION opens with an optional ORC: the inner group still wins.
        let oru = ["MSH", "PID", "ORC", "OBR", "OBX", "ORC", "OBR", "OBX"];
        assert_eq!(run(Version::V2_5_1, "ORU_R01", &oru), Vec::<String>::new());
    }

    #[test]
    fn missing_required_segment_and_group() {
        let out = run(Version::V2_5_1, "ADT_A01", &["MSH", "PID", "PV1"]);
        assert_eq!(out, vec!["SEGMENT_MISSING ADT_A01/EVN"]);
        let out = run(Version::V2_5_1, "ORU_R01", &["MSH", "PID"]);
        assert_eq!(out, vec!["GROUP_MISSING ORU_R01.PATIENT_RESULT/ORDER_OBSERVATION"]);
        let out = run(Version::V2_5_1, "ORU_R01", &["MSH", "PID", "OBR", "SPM"]);
        assert_eq!(out, Vec::<String>::new());
        let out = run(Version::V2_5_1, "ORU_R01", &["MSH", "PID", "ORC", "OBX"]);
        assert_eq!(out, vec!["SEGMENT_MISSING ORU_R01.PATIENT_RESULT.ORDER_OBSERVATION/OBR"]);
    }

    #[test]
    fn unexpected_repeated_and_foreign_segments() {
        let out = run(Version::V2_5_1, "ADT_A01", &["MSH", "EVN", "PID", "PID", "PV1", "EVN", "RXA"]);
        assert_eq!(
            out,
            vec!["SEGMENT_REPEATED segment[4]", "SEGMENT_UNEXPECTED segment[6]", "SEGMENT_NOT_IN_STRUCTURE segment[7]"]
        );
        let out = run(Version::V2_5_1, "ACK", &["MSH", "MSA", "MSA"]);
        assert_eq!(out, vec!["SEGMENT_REPEATED segment[3]"]);
    }

    #[test]
    fn choice_and_any() {
        // 2.2 ORM_O01: ORDER_DETAIL opens with one of OBR, RQD, RQ1, RXO, ODS, ODT.
        let out = run(Version::V2_5_1, "ORM_O01", &["MSH", "PID", "ORC", "RXO", "NTE", "ORC", "OBR"]);
        assert_eq!(out, Vec::<String>::new());
        let out = run(Version::V2_5_1, "ORM_O01", &["MSH", "PID", "ORC", "RXO", "OBR"]);
        assert_eq!(out, vec!["SEGMENT_UNEXPECTED segment[5]"]);
        // MFN_M01: MF = MFE, ANYHL7SEGMENT.
        let out = run(Version::V2_5_1, "MFN_M01", &["MSH", "MFI", "MFE", "LOC", "MFE", "STF", "MFE"]);
        assert_eq!(out, Vec::<String>::new());
    }

    #[test]
    fn work_is_bounded_on_hostile_orders() {
        // Many segments that cannot be placed: each costs one scan of the structure.
        let mut segs = vec!["MSH"];
        segs.extend(std::iter::repeat_n("MSH", 20_000));
        let Some(p) = plan::plan(Version::V2_5_1) else { panic!("plan") };
        let Some(sp) = p.structure_index(b"ORU_R01").and_then(|i| p.structure(i)) else { panic!("compile") };
        let mut report = Report::new(false, 1000);
        let mut m = Matcher::new(sp);
        for id in &segs {
            m.segment(id, || Hl7Position::segment(Some("MSH"), 1), &mut report);
        }
        m.finish(&mut report);
        assert_eq!(report.finish().0.len(), 1000);
    }

    /// A small deterministic generator (xorshift64*), so that failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            if n == 0 { 0 } else { (self.next() % n as u64) as usize }
        }
    }

    /// A plausible segment order for `nodes`: each node 0 to 3 times (within its bounds, a
    /// required one at least once, often), a choice by one alternative.
    fn generate(nodes: &'static [Node], any: &[&'static str], rng: &mut Rng, out: &mut Vec<&'static str>) {
        for node in nodes {
            if out.len() > 400 {
                return;
            }
            let max = match node.repeat {
                Repeat::Once => 1,
                Repeat::UpTo(n) => usize::from(n),
                Repeat::Unbounded => 3,
            };
            let low = usize::from(node.required && rng.below(8) != 0);
            let times = (low + rng.below(3)).min(max.max(low));
            for _ in 0..times {
                match node.kind {
                    NodeKind::Segment => out.push(node.name),
                    NodeKind::AnySegment => out.push(any[rng.below(any.len())]),
                    NodeKind::Group => generate(&node.children, any, rng, out),
                    NodeKind::Choice => {
                        if let Some(alt) = node.children.get(rng.below(node.children.len())) {
                            generate(std::slice::from_ref(alt), any, rng, out);
                        }
                    }
                }
            }
        }
    }

    /// The findings of the tables and of the general search, checking after each segment that
    /// both left the same open groups, positions and counts.
    fn both_findings(sp: &'static StructurePlan, segments: &[&'static str]) -> (Vec<String>, Vec<String>) {
        let (mut fast_report, mut general_report) = (Report::new(false, usize::MAX), Report::new(false, usize::MAX));
        let (mut fast, mut general) = (Matcher::new(sp), Matcher::general(sp));
        let shape = |m: &Matcher| m.stack.iter().map(|l| (l.node, l.child, l.count)).collect::<Vec<_>>();
        for (i, id) in segments.iter().enumerate() {
            fast.segment(id, || Hl7Position::segment(None, i as u32 + 1), &mut fast_report);
            general.segment(id, || Hl7Position::segment(None, i as u32 + 1), &mut general_report);
            assert_eq!(shape(&fast), shape(&general), "after segment {} of {segments:?}", i + 1);
        }
        fast.finish(&mut fast_report);
        general.finish(&mut general_report);
        let text = |r: Report| r.finish().0.iter().map(|d| format!("{} {}", d.code.as_str(), d.location)).collect();
        (text(fast_report), text(general_report))
    }

    /// The transition tables against the general search, on every structure of several
    /// versions: generated orders, the same mutated (segments dropped, doubled, swapped, foreign
    /// ids put in), and uniform noise over the structure's ids and others.
    #[test]
    fn tables_agree_with_the_general_search() {
        let others: &[&'static str] = &["MSH", "PID", "OBX", "NTE", "EVN", "RXA", "ERR", "MSA", "SFT", "UB2"];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut checked = 0usize;
        for version in [Version::V2_2, Version::V2_3_1, Version::V2_5_1, Version::V2_7, Version::V2_8_2] {
            let Some(p) = plan::plan(version) else { panic!("plan") };
            for (i, def) in p.schema.structures().iter().enumerate() {
                let Some(sp) = u16::try_from(i).ok().and_then(|i| p.structure(i)) else { continue };
                let mut names: Vec<&'static str> = Vec::new();
                collect_names(def.children(), &mut names);
                names.extend_from_slice(others);
                for round in 0..6 {
                    let mut segs = Vec::new();
                    generate(def.children(), &names, &mut rng, &mut segs);
                    match round {
                        0 => {}
                        1..=3 => {
                            for _ in 0..1 + rng.below(4) {
                                let at = rng.below(segs.len() + 1);
                                match rng.below(4) {
                                    0 if at < segs.len() => {
                                        segs.remove(at);
                                    }
                                    1 if at < segs.len() => segs.insert(at, segs[at]),
                                    2 if at + 1 < segs.len() => segs.swap(at, at + 1),
                                    _ => segs.insert(at, names[rng.below(names.len())]),
                                }
                            }
                        }
                        4 => segs.reverse(),
                        _ => {
                            segs = (0..rng.below(60)).map(|_| names[rng.below(names.len())]).collect();
                        }
                    }
                    let (fast, general) = both_findings(sp, &segs);
                    assert_eq!(fast, general, "{version:?} {} {segs:?}", def.id);
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    fn collect_names(nodes: &'static [Node], out: &mut Vec<&'static str>) {
        for node in nodes {
            if node.kind == NodeKind::Segment && !out.contains(&node.name) {
                out.push(node.name);
            }
            collect_names(&node.children, out);
        }
    }
}
