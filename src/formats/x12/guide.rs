//! The implementation guides' tables (generated into `tables.rs` by `tools/gen_x12_tables.py`
//! from pyx12's maps) and their look-ups.
//!
//! Layout: [`GUIDES`](super::tables::GUIDES) name a transaction set and version and the root
//! [`Loop`] (ST .. SE). A loop's children are a run of [`NODES`](super::tables::NODES): a
//! segment definition ([`Segment`]) or a child loop. A segment's elements are a run of
//! [`ELEMENTS`](super::tables::ELEMENTS) in sequence order; a composite's components are a run
//! too. Code lists are sorted runs of [`CODES`](super::tables::CODES). Every name is
//! `&'static str` out of the tables, so a location built from them holds no value.

use super::tables::{CODES, ELEMENTS, GUIDES, LOOPS, NODES, RULES, SEGMENT_IDS, SEGMENTS};

/// Usage in the guide.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Usage {
    /// Required.
    R,
    /// Situational.
    S,
    /// Not used.
    N,
}

/// A data type (N0..N9: numbers with implied decimals; C: a composite).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Type {
    AN,
    ID,
    DT,
    TM,
    R,
    B,
    N0,
    N1,
    N2,
    N3,
    N4,
    N5,
    N6,
    N7,
    N8,
    N9,
    C,
}

/// A transaction set's guide.
#[derive(Debug)]
pub struct Guide {
    /// ST01.
    pub set: &'static str,
    /// GS08 / ST03.
    pub version: &'static str,
    /// GS01.
    pub functional: &'static str,
    /// The map's short name.
    pub name: &'static str,
    /// Its root loop.
    pub root: u16,
}

/// A loop.
#[derive(Debug)]
pub struct Loop {
    /// Its id (`2010BA`; `""` for the root).
    pub id: &'static str,
    /// Its path in locations (`2000B/2010BA`).
    pub path: &'static str,
    /// Usage.
    pub usage: Usage,
    /// Most repeats (`u32::MAX`: unbounded).
    pub repeat: u32,
    /// First child in `NODES`.
    pub start: u32,
    /// Number of children.
    pub len: u32,
}

/// A child of a loop.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A segment definition.
    S(u16),
    /// A loop.
    L(u16),
}

/// What the walk looks at first in a child of a loop: the packed id (`pack`) of the segment it
/// places (a loop's trigger's; `u32::MAX`: none), so that a segment is compared in full only
/// with the children of its id, and whether the child is required.
#[derive(Copy, Clone, Debug)]
pub struct NodeInfo {
    /// The packed segment id.
    pub key: u32,
    /// Usage R.
    pub required: bool,
}

/// A key that tells a segment from another with the same id: element, component (0: none)
/// and a code list (start, length).
#[derive(Copy, Clone, Debug)]
pub struct Key(pub u8, pub u8, pub u32, pub u32);

/// A segment definition.
#[derive(Debug)]
pub struct Segment {
    /// The id.
    pub id: &'static str,
    /// Usage.
    pub usage: Usage,
    /// Most uses in one loop (`u32::MAX`: unbounded).
    pub max_use: u32,
    /// Elements (start, length) in `ELEMENTS`.
    pub elements: (u32, u32),
    /// Syntax rules (start, length) in `RULES`.
    pub rules: (u32, u32),
    /// Keys (element 0: none).
    pub keys: [Key; 2],
}

/// An element (or a composite, or a component).
#[derive(Debug)]
pub struct Element {
    /// Usage.
    pub usage: Usage,
    /// Type.
    pub ty: Type,
    /// Minimum length.
    pub min: u16,
    /// Maximum length.
    pub max: u16,
    /// Code list (start, length) in `CODES`.
    pub codes: (u32, u32),
    /// A composite's components (start, length) in `ELEMENTS`.
    pub components: (u32, u32),
    /// Most repetitions.
    pub repeat: u16,
}

impl Element {
    /// A table row.
    #[expect(clippy::too_many_arguments, reason = "the generated tables' row constructor")]
    pub const fn new(
        usage: Usage,
        ty: Type,
        min: u16,
        max: u16,
        codes_start: u32,
        codes_len: u32,
        comp_start: u32,
        comp_len: u32,
        repeat: u32,
    ) -> Element {
        Element {
            usage,
            ty,
            min,
            max,
            codes: (codes_start, codes_len),
            components: (comp_start, comp_len),
            repeat: if repeat > 0xFFFF { 0xFFFF } else { repeat as u16 },
        }
    }

    /// The code list.
    pub fn codes(&self) -> &'static [&'static str] {
        run(&CODES, self.codes)
    }

    /// A composite's components.
    pub fn components(&self) -> &'static [Element] {
        run(&ELEMENTS, self.components)
    }
}

/// A syntax rule: kind (`P`, `R`, `C`, `E`, `L`) and element numbers (0: none).
#[derive(Debug)]
pub struct Rule {
    /// The kind.
    pub kind: u8,
    /// The elements.
    pub elements: [u8; 6],
}

fn run<T>(table: &'static [T], (start, len): (u32, u32)) -> &'static [T] {
    table.get(start as usize..(start as usize).saturating_add(len as usize)).unwrap_or(&[])
}

impl Loop {
    /// The children.
    pub fn nodes(&self) -> &'static [Node] {
        run(&NODES, (self.start, self.len))
    }

    /// What the walk looks at first in each child, in the children's order (see [`NodeInfo`]).
    pub fn node_info(&self) -> &'static [NodeInfo] {
        static INFO: std::sync::OnceLock<Box<[NodeInfo]>> = std::sync::OnceLock::new();
        let info = INFO.get_or_init(|| {
            NODES
                .iter()
                .map(|node| {
                    let (def, usage) = match *node {
                        Node::S(d) => (Some(segment_at(d)), segment_at(d).usage),
                        Node::L(l) => (loop_at(l).trigger(), loop_at(l).usage),
                    };
                    NodeInfo { key: def.map_or(u32::MAX, |d| pack(d.id.as_bytes())), required: usage == Usage::R }
                })
                .collect()
        });
        run(info, (self.start, self.len))
    }

    /// The first segment (what opens the loop).
    pub fn trigger(&self) -> Option<&'static Segment> {
        match self.nodes().first() {
            Some(Node::S(s)) => SEGMENTS.get(usize::from(*s)),
            _ => None,
        }
    }
}

impl Segment {
    /// The elements, in sequence order.
    pub fn elements(&self) -> &'static [Element] {
        run(&ELEMENTS, self.elements)
    }

    /// The syntax rules.
    pub fn rules(&self) -> &'static [Rule] {
        run(&RULES, self.rules)
    }
}

/// A loop by index.
pub fn loop_at(i: u16) -> &'static Loop {
    &LOOPS[usize::from(i).min(LOOPS.len() - 1)]
}

/// A segment definition by index.
pub fn segment_at(i: u16) -> &'static Segment {
    &SEGMENTS[usize::from(i).min(SEGMENTS.len() - 1)]
}

/// The guide of a transaction set id and version.
pub fn guide(set: &[u8], version: &[u8]) -> Option<&'static Guide> {
    GUIDES.iter().find(|g| g.set.as_bytes() == set && g.version.as_bytes() == version)
}

/// A segment id packed into a number (ids are two or three bytes): compared without `memcmp`.
pub fn pack(id: &[u8]) -> u32 {
    if id.is_empty() || id.len() > 3 {
        return u32::MAX;
    }
    id.iter().fold(id.len() as u32, |k, &b| (k << 8) | u32::from(b))
}

/// The static name of a segment id the tables know.
pub fn segment_id(id: &[u8]) -> Option<&'static str> {
    // An open-addressing table of the packed ids (every segment of every record is looked up:
    // one or two probes rather than a binary search's chain of dependent loads). Slots hold
    // the packed id and its index in `SEGMENT_IDS` plus one (0: empty); the table is at most
    // a quarter full, so a probe sequence always ends at an empty slot.
    const SLOTS: usize = 512;
    fn slot(key: u32) -> usize {
        (key.wrapping_mul(0x9E37_79B1) >> 23) as usize % SLOTS
    }
    static TABLE: std::sync::OnceLock<Box<[(u32, u16)]>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = vec![(0u32, 0u16); SLOTS.max(SEGMENT_IDS.len() * 4)];
        for (i, s) in SEGMENT_IDS.iter().enumerate() {
            let key = pack(s.as_bytes());
            let mut h = slot(key);
            while t[h].1 != 0 {
                h = (h + 1) % t.len();
            }
            t[h] = (key, u16::try_from(i + 1).unwrap_or(u16::MAX));
        }
        t.into_boxed_slice()
    });
    let key = pack(id);
    if key == u32::MAX {
        return None;
    }
    let mut h = slot(key);
    loop {
        let &(k, i) = table.get(h)?;
        if i == 0 {
            return None;
        }
        if k == key {
            return SEGMENT_IDS.get(usize::from(i) - 1).copied();
        }
        h = (h + 1) % table.len();
    }
}

/// True when some guide has a loop with this id.
pub fn loop_exists(id: &str) -> bool {
    !id.is_empty() && LOOPS.iter().any(|l| l.id == id)
}

/// The fixed words of X12 summaries and locations: segment ids, loop ids, guide versions and set
/// ids of the tables, and the summary's keys and record types.
pub fn is_name(word: &str) -> bool {
    const WORDS: &[&str] = &[
        "recordType",
        "transactionSet",
        "transactionSets",
        "implementationGuides",
        "implementationGuide",
        "loopCounts",
        "group",
        "set",
        "segmentCount",
        "segments",
        "warningCount",
        "errorCount",
        "unknown",
        "ISA",
        "GS",
        "GE",
        "IEA",
        "TA1",
    ];
    WORDS.contains(&word)
        || segment_id(word.as_bytes()).is_some()
        || loop_exists(word)
        || GUIDES.iter().any(|g| g.version == word || g.set == word)
}

/// A code list by its run.
pub fn codes(start: u32, len: u32) -> &'static [&'static str] {
    run(&CODES, (start, len))
}

/// True when `code` is in the sorted list.
pub fn has_code(list: &[&str], code: &[u8]) -> bool {
    // Codes are a few bytes long: compared in place, without a call to `memcmp`.
    list.binary_search_by(|p| compare(p.as_bytes(), code)).is_ok()
}

/// Byte-wise order of two short strings (that of `<[u8]>::cmp`).
#[inline]
fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_consistent() {
        assert!(SEGMENT_IDS.windows(2).all(|w| w[0] < w[1]));
        for e in ELEMENTS.iter() {
            let codes = e.codes();
            assert!(codes.windows(2).all(|w| w[0] < w[1]), "unsorted code list");
        }
        for g in GUIDES.iter() {
            let root = loop_at(g.root);
            assert!(root.trigger().is_some_and(|s| s.id == "ST"), "{} {}", g.set, g.version);
        }
        assert!(guide(b"837", b"005010X222A1").is_some());
        assert_eq!(segment_id(b"NM1"), Some("NM1"));
        assert_eq!(segment_id(b"QQQ"), None);
        assert!(SEGMENT_IDS.iter().all(|id| segment_id(id.as_bytes()) == Some(*id)));
        assert_eq!(segment_id(b""), None);
        assert_eq!(segment_id(b"NM1X"), None);
    }
}
