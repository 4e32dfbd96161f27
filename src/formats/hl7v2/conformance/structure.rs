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

use super::Report;

/// Deepest group nesting compiled (the tables nest at most 10 deep; the schema decoder caps 32).
const MAX_DEPTH: usize = 32;

const NONE: u16 = u16::MAX;

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
        });
        p.add_children(0, &def.children, path, 0)?;
        p.segment_ids.sort_unstable();
        p.segment_ids.dedup();
        u16::try_from(p.nodes.len()).ok()?;
        Some(p)
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

    /// Whether node `n` can start with segment `id` (`any`: let `ANYHL7SEGMENT` match).
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

/// A segment id as an integer (ids are three ASCII bytes; anything longer is cut, which only
/// the schema could supply and does not).
fn segment_key(id: &str) -> u32 {
    id.bytes().take(4).fold(0u32, |k, b| (k << 8) | u32::from(b))
}

/// One open group instance.
#[derive(Copy, Clone, Debug)]
struct Level {
    node: u16,
    /// The child slot last matched (`NONE`: nothing yet).
    child: u16,
    /// Occurrences of that child in this instance.
    count: u32,
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
}

impl Matcher {
    pub(crate) fn new(plan: &'static StructurePlan) -> Matcher {
        let mut stack = Vec::with_capacity(12);
        stack.push(Level { node: 0, child: NONE, count: 0 });
        Matcher { plan, stack }
    }

    /// Places the next segment (a standard id; Z segments are not passed in).
    pub(crate) fn segment(&mut self, id: &'static str, at: Hl7Position, report: &mut Report) {
        let id = segment_key(id);
        let mut repeated = false;
        let found = self.find(id, false, &mut repeated).or_else(|| self.find(id, true, &mut repeated));
        let Some(target) = found else {
            let code = if !self.plan.names(id) {
                Code::SEGMENT_NOT_IN_STRUCTURE
            } else if repeated {
                Code::SEGMENT_REPEATED
            } else {
                Code::SEGMENT_UNEXPECTED
            };
            report.push(code, Location::Hl7(at));
            return;
        };
        self.commit(target, id, report);
    }

    /// Closes every open group: reports required children never seen.
    pub(crate) fn finish(mut self, report: &mut Report) {
        while let Some(level) = self.stack.pop() {
            self.close(level, report);
        }
    }

    fn find(&self, id: u32, any: bool, repeated: &mut bool) -> Option<Target> {
        let p = self.plan;
        for depth in (0..self.stack.len()).rev() {
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
                    continue;
                }
            }
            if let Some(slot) = self.forward(level, id, any) {
                return Some(Target { depth, slot, again: false });
            }
        }
        None
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

    fn commit(&mut self, target: Target, id: u32, report: &mut Report) {
        while self.stack.len() > target.depth + 1 {
            if let Some(level) = self.stack.pop() {
                self.close(level, report);
            }
        }
        let mut target = target;
        // Each pass goes one group deeper; depth is bounded by the structure's nesting.
        for _ in 0..=MAX_DEPTH {
            let Some(level) = self.stack.last().copied() else { return };
            if target.again {
                if let Some(top) = self.stack.last_mut() {
                    top.count += 1;
                }
            } else {
                let from = if level.child == NONE { 0 } else { level.child + 1 };
                self.missing_between(level.node, from, target.slot, report);
                if let Some(top) = self.stack.last_mut() {
                    top.child = target.slot;
                    top.count = 1;
                }
            }
            let p = self.plan;
            let kids = p.kids_of(p.node(level.node));
            let Some(&kid) = kids.get(usize::from(target.slot)) else { return };
            if !matches!(p.node(kid).kind, Kind::Group | Kind::Choice) {
                return;
            }
            // A new instance of a group: open it and place the segment inside.
            let inner = Level { node: kid, child: NONE, count: 0 };
            self.stack.push(inner);
            let slot = self.forward(&inner, id, false).or_else(|| self.forward(&inner, id, true));
            let Some(slot) = slot else { return };
            target = Target { depth: self.stack.len() - 1, slot, again: false };
        }
    }

    /// Reports required children in slots `from..to` of `group` (skipped over).
    fn missing_between(&self, group: u16, from: u16, to: u16, report: &mut Report) {
        let p = self.plan;
        let g = p.node(group);
        if g.kind == Kind::Choice {
            return;
        }
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
        let g = self.plan.node(level.node);
        let from = if level.child == NONE { 0 } else { level.child + 1 };
        if g.kind == Kind::Choice && level.child != NONE {
            return;
        }
        self.missing_between(level.node, from, g.kids.1, report);
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
            m.segment(id, Hl7Position::segment(None, i as u32 + 1), &mut report);
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
            m.segment(id, Hl7Position::segment(Some("MSH"), 1), &mut report);
        }
        m.finish(&mut report);
        assert_eq!(report.finish().0.len(), 1000);
    }
}
