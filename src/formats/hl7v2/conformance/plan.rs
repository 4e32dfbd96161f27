//! Per-version plans: the parts of the HL7 v2 definitions (`schema`) that the conformance
//! checks need, resolved once per version so that checking a field is an index lookup.
//!
//! A [`Plan`] holds, for every segment and composite data type of one version, its elements
//! (fields or components) with the check their data type calls for, the repetition and length
//! limits, and the HL7-defined table to look values up in. Structure plans (see `structure`) are
//! compiled lazily, per structure, on first use. Plans live in statics for the life of the
//! process (bounded by the size of the embedded tables, not by any input).
//!
//! What it does not do: read messages. It also corrects two known defects of the sources: the
//! 2.1 `TS` components are both marked required (only the time is), and before 2.5 `TS.1` is
//! typed `ST` where the standard gives the date/time grammar.

use std::sync::OnceLock;

use crate::formats::hl7v2::schema::{
    self, DataTypeDef, ElementDef, Schema, SegmentDef, TableDef, TableKind, Usage, Version,
};

use super::structure::StructurePlan;

/// Which date/time grammar of the standard applies.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2.1 and 2.2: `DT` is `YYYYMMDD`, `TM` is `HHMM[SS[.SSSS]]`, `TS` starts with a full date.
    V2_1,
    /// 2.3 and 2.4: `DT` is `YYYY[MM[DD]]`, hours and minutes go together.
    V2_3,
    /// 2.5 and later: `DTM` is `YYYY[MM[DD[HH[MM[SS[.S[S[S[S]]]]]]]]][+/-ZZZZ]`.
    V2_5,
}

/// What a primitive value is checked for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing can be said (`CM` in 2.1, `varies` not resolved, no data type).
    Opaque,
    /// Text (`ST`, `TX`, `FT`, `TN`, ...): any characters; extra components are reported.
    Text,
    /// `DT`.
    Date,
    /// `DTM`, and the time of a `TS`.
    DateTime,
    /// `TM`.
    Time,
    /// `NM`.
    Number,
    /// `SI`.
    SequenceId,
    /// `ID`: a value of an HL7-defined table.
    Hl7Coded,
    /// `IS`: a value of a user-defined table (never an error).
    UserCoded,
}

/// The data type of an element, resolved.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// A primitive, with its check.
    Primitive(Check),
    /// A composite: an index into [`Plan::types`].
    Composite(u16),
    /// `varies`: the type is given by another field (OBX-5 by OBX-2).
    Varies,
}

/// One field of a segment or component of a composite type.
#[derive(Debug)]
pub(crate) struct Elem {
    /// Usage `R`.
    pub required: bool,
    /// Usage `X`: withdrawn or not supported.
    pub withdrawn: bool,
    /// Maximum number of occurrences; 0 for unbounded.
    pub max_reps: u32,
    /// Maximum length in characters; 0 when the sources give none.
    pub max_len: u32,
    /// The HL7-defined table the value must come from, as its position in the schema's tables
    /// ([`Plan::codes`]; only for `ID`, only when the table is HL7-defined and its values are
    /// known).
    pub table: Option<u16>,
    pub ty: Ty,
}

/// A composite data type.
#[derive(Debug)]
pub(crate) struct TypePlan {
    pub components: Box<[Elem]>,
    /// One past the last required component (0 when none is).
    pub required_end: usize,
}

/// A segment.
#[derive(Debug)]
pub(crate) struct SegmentPlan {
    id: &'static str,
    /// The version whose tables these are (its neighbours decide [`SegmentPlan::required_alone`]).
    version: Version,
    /// Per field: required here but in neither neighbouring version. Built when a required
    /// field is first found missing (it decodes the neighbouring versions' tables).
    alone: OnceLock<Box<[bool]>>,
    /// MSH (its MSH-9 to MSH-12 and table values are the syntax layer's).
    pub is_msh: bool,
    /// OBX (OBX-5 is typed by OBX-2).
    pub is_obx: bool,
    pub fields: Box<[Elem]>,
    /// The number of the last required field (0 when none is).
    pub required_end: u32,
}

impl SegmentPlan {
    /// Whether field `position` (1-based) is required in this version but in neither
    /// neighbouring version: the sources likely err, and a missing value is a warning by default.
    pub fn required_alone(&self, position: u32) -> bool {
        let alone = self.alone.get_or_init(|| {
            let neighbours = neighbours(self.version);
            self.fields.iter().zip(1u16..).map(|(f, n)| f.required && required_alone(&neighbours, self.id, n)).collect()
        });
        position.checked_sub(1).and_then(|i| alone.get(i as usize)).copied().unwrap_or(false)
    }
}

/// The values of an HL7-defined table, packed for lookup without string comparison: codes of
/// up to 7 bytes as integers (bytes and length), longer ones as sorted byte strings. Entries the
/// source wrote as a list (`L,M,N`) count as their parts.
#[derive(Debug)]
pub(crate) struct CodeSet {
    /// The table number (0396 ...).
    pub number: u16,
    /// A value outside the list is a warning, not an error (see `datatypes::is_open`).
    pub open: bool,
    /// The packed codes in an open-addressing hash table (linear probing, at most half full,
    /// [`EMPTY`] in free slots): a look-up is a multiplication and one or two compares.
    slots: Box<[u64]>,
    /// `64 - log2(slots.len())`: the hash is the top bits of the product.
    shift: u32,
    long: Box<[&'static [u8]]>,
}

/// A free slot: no packed code ends in byte 0xFF (the low byte is a length of 0 to 7).
const EMPTY: u64 = u64::MAX;

/// Fibonacci hashing: the top bits of the product with 2^64 / phi.
#[inline]
fn slot_of(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl CodeSet {
    fn new(table: &'static TableDef) -> CodeSet {
        let mut keys = Vec::with_capacity(table.values.len());
        let mut long = Vec::new();
        for value in table.values.iter() {
            let mut add = |v: &'static [u8]| match pack(v) {
                Some(k) => keys.push(k),
                None => long.push(v),
            };
            add(value.as_bytes());
            if value.contains(',') {
                value.as_bytes().split(|b| *b == b',').for_each(&mut add);
            }
        }
        keys.sort_unstable();
        keys.dedup();
        long.sort_unstable();
        long.dedup();
        let size = (keys.len() * 2).next_power_of_two().max(8);
        let shift = 64 - size.trailing_zeros();
        let mut slots = vec![EMPTY; size];
        for &key in &keys {
            let mut i = slot_of(key, shift);
            // At most half full: a free slot is always found.
            while slots.get(i).is_some_and(|s| *s != EMPTY) {
                i = (i + 1) & (size - 1);
            }
            if let Some(s) = slots.get_mut(i) {
                *s = key;
            }
        }
        CodeSet {
            number: table.number,
            open: super::datatypes::is_open(table),
            slots: slots.into(),
            shift,
            long: long.into(),
        }
    }

    /// Whether `v` is one of the table's values.
    #[inline(always)]
    pub fn contains(&self, v: &[u8]) -> bool {
        match pack(v) {
            Some(key) => self.contains_key(key),
            None => self.long.binary_search(&v).is_ok(),
        }
    }

    /// Whether the value packed as `key` (by [`pack`] or [`pack_window`]) is one of the
    /// table's values of up to 7 bytes.
    #[inline(always)]
    pub fn contains_key(&self, key: u64) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = slot_of(key, self.shift);
        // The table is at most half full, so a free slot ends every probe sequence; the bound
        // only guards against a broken table.
        for _ in 0..self.slots.len() {
            match self.slots.get(i) {
                Some(&s) if s == key => return true,
                Some(&EMPTY) | None => return false,
                Some(_) => i = (i + 1) & mask,
            }
        }
        false
    }
}

/// [`pack`] of the first `len` (at most 7) bytes of `window`: one load and a mask instead of a
/// loop over the bytes.
#[inline(always)]
pub(crate) fn pack_window(window: [u8; 8], len: usize) -> u64 {
    let len = len.min(7);
    let top = u64::MAX.checked_shr(8 * len as u32).unwrap_or(0);
    (u64::from_be_bytes(window) & !top) | len as u64
}

/// Up to 7 bytes and the length in one integer.
#[inline]
pub(crate) fn pack(v: &[u8]) -> Option<u64> {
    if v.len() > 7 {
        return None;
    }
    if v.is_empty() {
        return Some(0);
    }
    let mut k = 0u64;
    for &b in v {
        k = (k << 8) | u64::from(b);
    }
    Some((k << (8 * (8 - v.len()))) | v.len() as u64)
}

/// Everything the checks need for one version.
#[derive(Debug)]
pub(crate) struct Plan {
    pub schema: &'static Schema,
    pub era: Era,
    /// The version whose tables these are.
    version: Version,
    /// Per table of the schema (by position): its code set when it is HL7-defined with a known
    /// list of values. Each part of a plan is built on first use: a message needs a few
    /// segments, types and tables of the version's hundreds.
    codes: Box<[OnceLock<Option<CodeSet>>]>,
    /// The data types with ids of up to 7 bytes, by packed id (OBX-2 lookups).
    type_keys: Box<[(u64, Ty)]>,
    /// Per data type of the schema (by position).
    types: Box<[OnceLock<TypePlan>]>,
    /// Per segment of the schema (by position).
    segments: Box<[OnceLock<SegmentPlan>]>,
    /// The segment ids as packed keys, sorted, with their index in `segments`.
    segment_keys: Box<[(u64, u16)]>,
    structures: Box<[OnceLock<Option<StructurePlan>>]>,
}

static PLANS: [OnceLock<Option<Plan>>; 13] = [const { OnceLock::new() }; 13];

/// The plan of version `v` (2.7.1 shares 2.7's), built on first use. `None` only if the embedded
/// tables are corrupt, which the schema's unit tests rule out.
/// The plan of every version with data of its own (built on first use).
fn every_plan() -> impl Iterator<Item = &'static Plan> {
    Version::ALL.into_iter().filter(|x| x.data_version() == *x).filter_map(plan)
}

pub(crate) fn plan(v: Version) -> Option<&'static Plan> {
    let data = v.data_version();
    let slot = Version::ALL.iter().position(|x| *x == data)?;
    PLANS.get(slot)?.get_or_init(|| build(data)).as_ref()
}

impl Plan {
    /// The segment with this id, when the version defines it.
    pub fn segment(&self, id: &str) -> Option<&SegmentPlan> {
        // Segment ids are three bytes: an integer search, no string comparison.
        let key = pack(id.as_bytes())?;
        let i = self.segment_keys.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        let at = usize::from(self.segment_keys.get(i)?.1);
        let def = self.schema.segments().get(at)?;
        Some(self.segments.get(at)?.get_or_init(|| segment_plan(self.schema, self.version, def)))
    }

    /// A code set by index (the table's position in the schema).
    pub fn codes(&self, index: u16) -> Option<&CodeSet> {
        let at = usize::from(index);
        self.codes
            .get(at)?
            .get_or_init(|| self.schema.tables().get(at).filter(|t| has_code_set(t)).map(CodeSet::new))
            .as_ref()
    }

    /// A composite type by index.
    pub fn composite(&self, index: u16) -> Option<&TypePlan> {
        let at = usize::from(index);
        let def = self.schema.datatypes().get(at)?;
        Some(self.types.get(at)?.get_or_init(|| type_plan(self.schema, def)))
    }

    /// The type named `id` in this version (for OBX-5, typed by OBX-2).
    pub fn type_named(&self, id: &[u8]) -> Option<Ty> {
        if let Some(key) = pack(id) {
            let i = self.type_keys.binary_search_by_key(&key, |(k, _)| *k).ok()?;
            return self.type_keys.get(i).map(|(_, ty)| *ty);
        }
        let i = self.schema.datatypes().binary_search_by(|d| d.id.as_bytes().cmp(id)).ok()?;
        let def = self.schema.datatypes().get(i)?;
        Some(resolve(self.schema, def.id))
    }

    /// Whether `id` names a data type of some other version only: `CE` (withdrawn as of 2.7)
    /// in a 2.8 message's OBX-2. Slow (every version's type list); for the rare unlisted value.
    pub fn type_named_elsewhere(&self, id: &[u8]) -> bool {
        self.type_named(id).is_none()
            && Version::ALL
                .into_iter()
                .filter(|v| v.data_version() == *v)
                .filter_map(|v| schema::try_schema(v).ok())
                .any(|s| s.datatypes().binary_search_by(|d| d.id.as_bytes().cmp(id)).is_ok())
    }

    /// Whether `v` is a value of HL7 table `number` in some version's list (`CLIA`, in table
    /// 0301 from 2.7 on, in a 2.5.1 message). Slow (every version's table); for the rare
    /// unlisted value.
    pub fn code_listed_elsewhere(&self, number: u16, v: &[u8]) -> bool {
        every_plan().any(|p| {
            p.schema
                .tables()
                .binary_search_by_key(&number, |t| t.number)
                .ok()
                .and_then(|i| u16::try_from(i).ok())
                .and_then(|i| p.codes(i))
                .is_some_and(|set| set.contains(v))
        })
    }

    /// Whether field `n` of segment `id` may repeat at least `reps` times in some version (ORC-10
    /// repeats from 2.4 on, in a 2.3 message). Slow; for the rare repeated field.
    pub fn repeats_elsewhere(&self, id: &str, n: u32, reps: u32) -> bool {
        every_plan().any(|p| {
            p.segment(id)
                .and_then(|s| s.fields.get(n.checked_sub(1)? as usize))
                .is_some_and(|f| f.max_reps == 0 || f.max_reps >= reps)
        })
    }

    /// The index of the structure named `id` (bytes from MSH-9.3, or a schema id).
    pub fn structure_index(&self, id: &[u8]) -> Option<u16> {
        let i = self.schema.structures().binary_search_by(|s| s.id.as_bytes().cmp(id)).ok()?;
        u16::try_from(i).ok()
    }

    /// The compiled structure at `index`, built on first use.
    pub fn structure(&'static self, index: u16) -> Option<&'static StructurePlan> {
        let def = self.schema.structures().get(usize::from(index))?;
        self.structures.get(usize::from(index))?.get_or_init(|| StructurePlan::compile(def)).as_ref()
    }
}

fn era_of(v: Version) -> Era {
    match v {
        Version::V2_1 | Version::V2_2 => Era::V2_1,
        Version::V2_3 | Version::V2_3_1 | Version::V2_4 => Era::V2_3,
        _ => Era::V2_5,
    }
}

/// Whether a table gets a code set: HL7-defined, with a list of values the source does not
/// abbreviate.
fn has_code_set(t: &TableDef) -> bool {
    t.kind == TableKind::Hl7 && !t.values.is_empty() && !t.values.iter().any(|v| is_elision(v))
}

fn type_plan(schema: &'static Schema, d: &DataTypeDef) -> TypePlan {
    let is_ts = d.id == "TS";
    let components = d
        .components
        .iter()
        .map(|c| {
            let mut e = elem(schema, c);
            if is_ts && c.position == 1 {
                e.ty = Ty::Primitive(Check::DateTime);
            }
            if is_ts && c.position == 2 {
                e.required = false;
            }
            e
        })
        .collect::<Box<[Elem]>>();
    let required_end = components.iter().rposition(|c| c.required).map_or(0, |i| i + 1);
    TypePlan { components, required_end }
}

fn segment_plan(schema: &'static Schema, v: Version, s: &SegmentDef) -> SegmentPlan {
    let fields = s
        .fields
        .iter()
        .map(|f| {
            let mut e = elem(schema, f);
            if s.id == "QPD" && f.position == 3 {
                // QPD-3 holds the query's parameters "in successive fields", as the
                // query profile (its conformance statement, chapter 5) defines them,
                // repetitions included: the base definition does not limit them.
                e.max_reps = 0;
            }
            e
        })
        .collect::<Box<[Elem]>>();
    let required_end = fields.iter().rposition(|f| f.required).map_or(0, |i| i as u32 + 1);
    SegmentPlan {
        id: s.id,
        version: v,
        alone: OnceLock::new(),
        is_msh: s.id == "MSH",
        is_obx: s.id == "OBX",
        fields,
        required_end,
    }
}

/// `n` cells, each filled on first use.
fn lazy<T>(n: usize) -> Box<[OnceLock<T>]> {
    (0..n).map(|_| OnceLock::new()).collect()
}

fn build(v: Version) -> Option<Plan> {
    let schema = schema::try_schema(v).ok()?;
    let mut segment_keys: Vec<(u64, u16)> = schema
        .segments()
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((pack(s.id.as_bytes())?, u16::try_from(i).ok()?)))
        .collect();
    segment_keys.sort_unstable_by_key(|(k, _)| *k);
    let mut type_keys: Vec<(u64, Ty)> =
        schema.datatypes().iter().filter_map(|d| Some((pack(d.id.as_bytes())?, resolve(schema, d.id)))).collect();
    type_keys.sort_unstable_by_key(|(k, _)| *k);
    Some(Plan {
        schema,
        era: era_of(v),
        version: v,
        codes: lazy(schema.tables().len()),
        type_keys: type_keys.into(),
        types: lazy(schema.datatypes().len()),
        segments: lazy(schema.segments().len()),
        segment_keys: segment_keys.into(),
        structures: lazy(schema.structures().len()),
    })
}

/// The versions just before and after `v` (with their own tables).
fn neighbours(v: Version) -> Vec<&'static Schema> {
    let data: Vec<Version> = Version::ALL.into_iter().filter(|x| x.data_version() == *x).collect();
    let Some(i) = data.iter().position(|x| *x == v) else { return Vec::new() };
    [i.checked_sub(1), Some(i + 1)]
        .into_iter()
        .flatten()
        .filter_map(|j| data.get(j))
        .filter_map(|x| schema::try_schema(*x).ok())
        .collect()
}

/// Whether field `position` of segment `id` is required in no neighbouring version that
/// defines it (and at least one does): the sources disagree, and the version's `R` is likely
/// theirs, not the standard's (OBX-4 in 2.3.1).
fn required_alone(neighbours: &[&'static Schema], id: &str, position: u16) -> bool {
    let mut seen = false;
    for n in neighbours {
        if let Some(f) = n.field(id.as_bytes(), usize::from(position)) {
            if f.usage == Usage::Required {
                return false;
            }
            seen = true;
        }
    }
    seen
}

fn elem(schema: &'static Schema, def: &ElementDef) -> Elem {
    let ty = resolve(schema, def.data_type);
    let table = match ty {
        Ty::Primitive(Check::Hl7Coded) => def.table.and_then(|n| {
            let i = schema.tables().binary_search_by_key(&n, |t| t.number).ok()?;
            schema.tables().get(i).filter(|t| has_code_set(t))?;
            u16::try_from(i).ok()
        }),
        _ => None,
    };
    Elem {
        required: def.usage == Usage::Required,
        withdrawn: def.usage == Usage::Withdrawn,
        max_reps: def.repeat.max().map_or(0, u32::from),
        max_len: def.max_len.unwrap_or(0),
        table,
        ty,
    }
}

/// A value list the source abbreviates (`…`, `...`): not a list to check against.
///
/// The bytes of `…` are looked for in place: `str::contains` with a non-ASCII `char` sets up a
/// substring search per call, which was 7% of the instructions of a 1 KB `validate` (issue 32).
fn is_elision(value: &str) -> bool {
    value.as_bytes().windows(ELLIPSIS.len()).any(|w| w == ELLIPSIS) || value == "..."
}

/// `…` (U+2026) in UTF-8.
const ELLIPSIS: &[u8] = "…".as_bytes();

/// The type named `id`: a primitive check by name, or a composite by index.
fn resolve(schema: &Schema, id: &str) -> Ty {
    let primitive = |name: &str| match name {
        "DT" => Some(Check::Date),
        "DTM" => Some(Check::DateTime),
        "TM" => Some(Check::Time),
        "NM" => Some(Check::Number),
        "SI" => Some(Check::SequenceId),
        "ID" => Some(Check::Hl7Coded),
        "IS" => Some(Check::UserCoded),
        "" | "CM" => Some(Check::Opaque),
        _ => None,
    };
    if id == "varies" {
        return Ty::Varies;
    }
    if let Some(check) = primitive(id) {
        return Ty::Primitive(check);
    }
    for candidate in [id, schema_base(id)] {
        let found = schema.datatypes().binary_search_by(|d| d.id.cmp(candidate)).ok();
        if let Some(i) = found {
            let Some(def) = schema.datatypes().get(i) else { break };
            if def.primitive || def.components.is_empty() {
                return Ty::Primitive(primitive(def.id).unwrap_or(Check::Text));
            }
            if let Ok(index) = u16::try_from(i) {
                return Ty::Composite(index);
            }
        }
    }
    Ty::Primitive(Check::Opaque)
}

/// `CM_MSG` -> `CM`, `DR_SIMPLE` -> `DR`.
fn schema_base(id: &str) -> &str {
    id.split_once('_').map_or(id, |(head, _)| head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elided_value_list_is_found_as_str_contains_finds_it() {
        for v in ["…", "A…", "…Z", "AB … YZ", "...", "", "A", "..", "....", "A...", "é", "\u{2025}", "\u{2027}"]
        {
            assert_eq!(is_elision(v), v.contains('…') || v == "...", "{v:?}");
        }
        assert!(is_elision("01…99") && !is_elision("0199") && !is_elision("a.b"));
    }

    #[test]
    fn packing_a_window_agrees_with_pack() {
        // Every length from 0 to 7 at every offset of bytes of every value.
        let bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).chain(*b"\x00\xffAB|^~&\\").collect();
        for len in 0..=7 {
            for at in 0..bytes.len().saturating_sub(8) {
                let Some(window) = bytes.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) else { continue };
                assert_eq!(Some(pack_window(window, len)), pack(&bytes[at..at + len]), "{at} {len}");
            }
        }
    }

    #[test]
    fn packed_codes() {
        assert_ne!(pack(b"A"), pack(b"A\0"));
        assert_ne!(pack(b""), pack(b"\0"));
        assert_eq!(pack(b"ADT_A01").map(|k| k & 0xFF), Some(7));
        assert_eq!(pack(b"ADT_A01X"), None);
        let Some(p) = plan(Version::V2_5_1) else { panic!("no plan") };
        let Some(msh) = p.segment("MSH") else { panic!("no MSH") };
        let Some(Ty::Composite(msg)) = Some(msh.fields[8].ty) else { panic!("MSH-9 MSG") };
        let t354 = p.composite(msg).and_then(|t| t.components[2].table).and_then(|i| p.codes(i));
        assert!(t354.is_some_and(|t| t.contains(b"ADT_A01") && !t.contains(b"ADT_A0")));
        // 0301 lists `L,M,N` as one entry in the source.
        let Some(Ty::Composite(hd)) = p.type_named(b"HD") else { panic!("HD") };
        let t301 = p.composite(hd).and_then(|t| t.components[2].table).and_then(|i| p.codes(i));
        assert!(t301.is_some_and(|t| t.contains(b"M") && t.contains(b"ISO")));
    }

    #[test]
    fn code_sets_find_exactly_their_values() {
        // Every value of every table of every version, and near misses, against a plain list.
        for v in Version::ALL {
            let Ok(schema) = schema::try_schema(v) else { panic!("no schema for {v}") };
            for table in schema.tables().iter().filter(|t| !t.values.is_empty()) {
                let set = CodeSet::new(table);
                let mut listed: Vec<&[u8]> = Vec::new();
                for value in table.values.iter() {
                    listed.push(value.as_bytes());
                    if value.contains(',') {
                        listed.extend(value.as_bytes().split(|b| *b == b','));
                    }
                }
                for value in table.values.iter() {
                    let v = value.as_bytes();
                    let near: [Vec<u8>; 4] = [
                        v.to_vec(),
                        [v, &b"X"[..]].concat(),
                        v.get(1..).unwrap_or_default().to_vec(),
                        [&b"\0"[..], v].concat(),
                    ];
                    for probe in near.iter() {
                        assert_eq!(set.contains(probe), listed.contains(&probe.as_slice()), "table {}", table.number);
                    }
                }
            }
        }
    }

    #[test]
    fn every_version_plans() {
        for v in Version::ALL {
            let p = plan(v).unwrap_or_else(|| panic!("no plan for {v}"));
            assert!(p.segment("MSH").is_some(), "{v}");
        }
    }

    #[test]
    fn types_resolve() {
        let Some(p) = plan(Version::V2_5_1) else { panic!("no plan") };
        let Some(pid) = p.segment("PID") else { panic!("no PID") };
        assert!(matches!(pid.fields[4].ty, Ty::Composite(_)), "PID-5 XPN");
        assert_eq!(pid.fields[0].ty, Ty::Primitive(Check::SequenceId), "PID-1 SI");
        assert!(pid.fields[4].max_reps == 0 && pid.fields[4].required);
        let Some(obx) = p.segment("OBX") else { panic!("no OBX") };
        assert_eq!(obx.fields[4].ty, Ty::Varies);
        let t85 = obx.fields[10].table.and_then(|i| p.codes(i));
        assert!(t85.is_some_and(|t| t.number == 85 && t.contains(b"F") && !t.contains(b"FF")), "OBX-11 ID table 0085");
        assert_eq!(p.type_named(b"NM"), Some(Ty::Primitive(Check::Number)));
        // 2.3: TS.1 is ST in the source, checked as a date/time.
        let Some(p) = plan(Version::V2_3) else { panic!("no plan") };
        let Some(Ty::Composite(ts)) = p.type_named(b"TS") else { panic!("TS composite") };
        let ts = p.composite(ts).map(|t| &t.components[0].ty);
        assert_eq!(ts, Some(&Ty::Primitive(Check::DateTime)));
    }
}
