//! HL7 v2 standard definitions (message structures, segments, fields, data
//! types and code tables) for versions 2.1 to 2.8.2, decoded lazily from
//! compact embedded tables.
//!
//! # What it is
//!
//! The data files in `schema/` (`v2.1.bin` ... `v2.8.2.bin`, one per
//! version, plus the string table they share, `strings.bin`; about 1 MB in
//! all, embedded with `include_bytes!`) are written by
//! `tools/gen_hl7v2_tables.py` from the `hl7apy` (PyPI) and `hl7-dictionary`
//! (npm) packages; `schema/PROVENANCE.md` names the exact package versions,
//! hashes, licences and what each source contributed.  The byte layout is
//! described above `decode` below.  Only `std` is used.
//! They cover the parts of the standard a validator needs:
//!
//! * **Message structures** (HL7 table 0354): for every structure id such as
//!   `ADT_A01`, the ordered tree of segments and groups with required/optional
//!   and repetition, plus the map from message code and trigger event to
//!   structure (`ADT^A04` -> `ADT_A01`).  Group names are hl7apy's
//!   (`ADT_A01_PROCEDURE`); [`Node::short_name`] gives `PROCEDURE`.
//! * **Segments** (HL7 chapter 2 and the domain chapters): fields in order
//!   with data type, optionality, repetition, maximum length and table.
//! * **Data types**: composite types with their components, primitive types
//!   flagged.
//! * **Tables**: table numbers and names, whether HL7-defined or user-defined,
//!   and the code values the sources list.
//!
//! Each version is decoded once, on first use, into a `static`
//! [`std::sync::OnceLock`]; every name handed out is `&'static str`,
//! borrowed from the embedded bytes (nothing is leaked).  A version's
//! message structures are only walked then (with the same checks) and each
//! is built on first use ([`StructureDef::children`]): a message needs one.
//!
//! # What it does not do
//!
//! * It does not parse or validate messages; it only describes the standard.
//! * It has no conformance profiles, no Z-segments, no conformance lengths,
//!   no narrative text and no table value descriptions.
//! * Version 2.7.1 is served from the 2.7 data ([`Version::data_version`]);
//!   maximum lengths are unknown (`None`) for 2.8, 2.8.1 and 2.8.2.
//! * Optionality `W` is not distinguished: the sources give `R`, `O`, `C`,
//!   `B` (which may stand for B, W or X in the source) and `X` (withdrawn).
//! * Table kinds are derived from the data types that reference a table
//!   (`ID` = HL7-defined, `IS` = user-defined, per HL7 v2 chapter 2) and may
//!   be [`TableKind::Unknown`].  Values of user-defined tables are only HL7's
//!   suggestions; values flagged [`TableDef::values_approximate`] (2.1 to 2.3)
//!   come from a later, unversioned list and may include newer codes.
//!
//! # API
//!
//! ```ignore
//! use crate::formats::hl7v2::schema::{self, Version};
//! let v = Version::nearest(b"2.5.1").unwrap_or(Version::V2_5_1);
//! let s = schema::schema(v);
//! assert_eq!(s.structure_for(b"ADT", b"A04"), Some("ADT_A01"));
//! let pid5 = s.segment(b"PID").and_then(|p| p.field(5));
//! assert!(schema::is_known_segment_id(b"PID"));
//! ```

use std::fmt;
use std::sync::OnceLock;

/// An HL7 v2 version this module knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V2_1,
    V2_2,
    V2_3,
    V2_3_1,
    V2_4,
    V2_5,
    V2_5_1,
    V2_6,
    V2_7,
    V2_7_1,
    V2_8,
    V2_8_1,
    V2_8_2,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 13] = [
        Version::V2_1,
        Version::V2_2,
        Version::V2_3,
        Version::V2_3_1,
        Version::V2_4,
        Version::V2_5,
        Version::V2_5_1,
        Version::V2_6,
        Version::V2_7,
        Version::V2_7_1,
        Version::V2_8,
        Version::V2_8_1,
        Version::V2_8_2,
    ];

    /// The version as written in MSH-12, e.g. `"2.5.1"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2_1 => "2.1",
            Version::V2_2 => "2.2",
            Version::V2_3 => "2.3",
            Version::V2_3_1 => "2.3.1",
            Version::V2_4 => "2.4",
            Version::V2_5 => "2.5",
            Version::V2_5_1 => "2.5.1",
            Version::V2_6 => "2.6",
            Version::V2_7 => "2.7",
            Version::V2_7_1 => "2.7.1",
            Version::V2_8 => "2.8",
            Version::V2_8_1 => "2.8.1",
            Version::V2_8_2 => "2.8.2",
        }
    }

    /// Exact match of a version id such as `b"2.5.1"` (surrounding ASCII
    /// whitespace ignored).
    pub fn parse(text: &[u8]) -> Option<Version> {
        let text = text.trim_ascii();
        Version::ALL.into_iter().find(|v| v.as_str().as_bytes() == text)
    }

    /// The known version closest to `text`: an exact match, else the newest
    /// known version not newer than it (`2.5.2` -> 2.5.1, `2.9` -> 2.8.2),
    /// else 2.1 for anything older.  `None` unless `text` looks like
    /// `2.<n>[.<n>...]`.
    pub fn nearest(text: &[u8]) -> Option<Version> {
        if let Some(v) = Version::parse(text) {
            return Some(v);
        }
        let wanted = numeric_parts(text.trim_ascii())?;
        if wanted.first() != Some(&2) {
            return None;
        }
        let mut best = None;
        for v in Version::ALL {
            let Some(parts) = numeric_parts(v.as_str().as_bytes()) else {
                continue;
            };
            if parts <= wanted {
                best = Some(v);
            }
        }
        Some(best.unwrap_or(Version::V2_1))
    }

    /// The version whose tables serve this one (2.7.1 -> 2.7; others are
    /// themselves).
    pub fn data_version(self) -> Version {
        match self {
            Version::V2_7_1 => Version::V2_7,
            v => v,
        }
    }

    fn data(self) -> &'static [u8] {
        match self.data_version() {
            Version::V2_1 => include_bytes!("schema/v2.1.bin"),
            Version::V2_2 => include_bytes!("schema/v2.2.bin"),
            Version::V2_3 => include_bytes!("schema/v2.3.bin"),
            Version::V2_3_1 => include_bytes!("schema/v2.3.1.bin"),
            Version::V2_4 => include_bytes!("schema/v2.4.bin"),
            Version::V2_5 => include_bytes!("schema/v2.5.bin"),
            Version::V2_5_1 => include_bytes!("schema/v2.5.1.bin"),
            Version::V2_6 => include_bytes!("schema/v2.6.bin"),
            Version::V2_7 | Version::V2_7_1 => include_bytes!("schema/v2.7.bin"),
            Version::V2_8 => include_bytes!("schema/v2.8.bin"),
            Version::V2_8_1 => include_bytes!("schema/v2.8.1.bin"),
            Version::V2_8_2 => include_bytes!("schema/v2.8.2.bin"),
        }
    }

    fn file_name(self) -> &'static str {
        match self.data_version() {
            Version::V2_1 => "v2.1.bin",
            Version::V2_2 => "v2.2.bin",
            Version::V2_3 => "v2.3.bin",
            Version::V2_3_1 => "v2.3.1.bin",
            Version::V2_4 => "v2.4.bin",
            Version::V2_5 => "v2.5.bin",
            Version::V2_5_1 => "v2.5.1.bin",
            Version::V2_6 => "v2.6.bin",
            Version::V2_7 | Version::V2_7_1 => "v2.7.bin",
            Version::V2_8 => "v2.8.bin",
            Version::V2_8_1 => "v2.8.1.bin",
            Version::V2_8_2 => "v2.8.2.bin",
        }
    }

    fn slot(self) -> usize {
        self.data_version() as usize
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Version {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::parse(s.as_bytes()).ok_or(UnknownVersion)
    }
}

/// Returned by `Version::from_str` for text that is no known version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownVersion;

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown HL7 v2 version")
    }
}

impl std::error::Error for UnknownVersion {}

fn numeric_parts(text: &[u8]) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.split(|&b| b == b'.') {
        if part.is_empty() || part.len() > 4 || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = part.iter().fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'));
        out.push(n);
    }
    Some(out)
}

/// Optionality of a field or component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Usage {
    /// `R`: required.
    Required,
    /// `O`: optional.
    Optional,
    /// `C`: conditional.
    Conditional,
    /// `B`: kept for backward compatibility (the source folds W and some X
    /// into B).
    Backward,
    /// `X`: not used / withdrawn.
    Withdrawn,
}

impl Usage {
    /// The HL7 code letter.
    pub fn code(self) -> char {
        match self {
            Usage::Required => 'R',
            Usage::Optional => 'O',
            Usage::Conditional => 'C',
            Usage::Backward => 'B',
            Usage::Withdrawn => 'X',
        }
    }

    fn from_byte(b: u8) -> Option<Usage> {
        Some(match b {
            b'R' => Usage::Required,
            b'O' => Usage::Optional,
            b'C' => Usage::Conditional,
            b'B' => Usage::Backward,
            b'X' => Usage::Withdrawn,
            _ => return None,
        })
    }
}

/// How often an element may occur.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repeat {
    /// At most once.
    Once,
    /// At most this many times (at least 2).
    UpTo(u16),
    /// Any number of times.
    Unbounded,
}

impl Repeat {
    /// Whether more than one occurrence is allowed.
    pub fn is_repeatable(self) -> bool {
        !matches!(self, Repeat::Once)
    }

    /// The maximum number of occurrences, `None` for unbounded.
    pub fn max(self) -> Option<u16> {
        match self {
            Repeat::Once => Some(1),
            Repeat::UpTo(n) => Some(n),
            Repeat::Unbounded => None,
        }
    }

    fn from_u16(n: u16) -> Repeat {
        match n {
            0 => Repeat::Unbounded,
            1 => Repeat::Once,
            n => Repeat::UpTo(n),
        }
    }
}

/// A field of a segment or a component of a composite data type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementDef {
    /// 1-based position (PID-5 has position 5).
    pub position: u16,
    /// Long name, e.g. `"Patient Name"` (may be empty).
    pub name: &'static str,
    /// Data type id as in the source, e.g. `"XPN"`, `"CM_MSG_TYPE"`,
    /// `"varies"`; empty for some withdrawn fields.
    pub data_type: &'static str,
    pub usage: Usage,
    pub repeat: Repeat,
    /// Maximum length, `None` when the sources do not give one.
    pub max_len: Option<u32>,
    /// HL7 table number, e.g. 1 for table 0001.
    pub table: Option<u16>,
}

/// A segment field.
pub type FieldDef = ElementDef;
/// A component of a composite data type.
pub type ComponentDef = ElementDef;

impl ElementDef {
    /// Whether the element may repeat.
    pub fn is_repeatable(&self) -> bool {
        self.repeat.is_repeatable()
    }

    /// Whether the element is required (`R`).
    pub fn is_required(&self) -> bool {
        self.usage == Usage::Required
    }

    /// The data type as it appears on the wire: hl7apy's variants such as
    /// `CM_MSG_TYPE` or `CQ_SIMPLE` become `CM` / `CQ`.
    pub fn base_data_type(&self) -> &'static str {
        base_type(self.data_type)
    }
}

fn base_type(dt: &'static str) -> &'static str {
    match dt.split_once('_') {
        Some((head, _)) => head,
        None => dt,
    }
}

/// A segment definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentDef {
    /// Segment id, e.g. `"PID"`.
    pub id: &'static str,
    /// Long name, e.g. `"Patient identification"` (may be empty).
    pub name: &'static str,
    pub fields: Box<[FieldDef]>,
}

impl SegmentDef {
    /// The field at 1-based `position` (PID-5 is `field(5)`).
    pub fn field(&self, position: usize) -> Option<&FieldDef> {
        self.fields.get(position.checked_sub(1)?)
    }
}

/// A data type definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataTypeDef {
    /// Data type id, e.g. `"XPN"`.
    pub id: &'static str,
    /// Long name, e.g. `"Extended Person Name"` (may be empty).
    pub name: &'static str,
    /// Primitive types (ST, ID, NM, ...) have no components.
    pub primitive: bool,
    pub components: Box<[ComponentDef]>,
}

impl DataTypeDef {
    /// The component at 1-based `position`.
    pub fn component(&self, position: usize) -> Option<&ComponentDef> {
        self.components.get(position.checked_sub(1)?)
    }
}

/// Kind of a node in a message structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A segment; `name` is its id.
    Segment,
    /// A group of nodes in sequence.
    Group,
    /// A group of which exactly one child occurs.
    Choice,
    /// Any HL7 segment (hl7apy's `ANYHL7SEGMENT`).
    AnySegment,
}

/// A segment or group in a message structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    /// Segment id, or hl7apy group name such as `"ADT_A01_PROCEDURE"`.
    pub name: &'static str,
    /// Group name without the structure prefix (`"PROCEDURE"`); equal to
    /// `name` for segments.
    pub short_name: &'static str,
    pub required: bool,
    pub repeat: Repeat,
    /// Children of a group or choice; empty for segments.
    pub children: Box<[Node]>,
}

impl Node {
    /// Whether this node is a group or choice.
    pub fn is_group(&self) -> bool {
        matches!(self.kind, NodeKind::Group | NodeKind::Choice)
    }
}

/// A message structure (abstract message syntax), e.g. `ADT_A01`. Its tree is decoded on first
/// use ([`StructureDef::children`]): a message needs one structure of the version's hundreds.
#[derive(Clone, Debug)]
pub struct StructureDef {
    pub id: &'static str,
    /// Where the structure's node list starts in its version's data (checked when the version
    /// was decoded: every node was walked then).
    nodes_at: usize,
    data: &'static [u8],
    file: &'static str,
    strings: &'static [&'static str],
    children: OnceLock<Box<[Node]>>,
}

impl StructureDef {
    /// The structure's segments and groups, in order.
    pub fn children(&self) -> &[Node] {
        self.children.get_or_init(|| {
            let mut r = Reader { buf: self.data, pos: self.nodes_at, file: self.file, strings: self.strings };
            // The version's decode walked these bytes with the same checks: this cannot fail.
            r.nodes(self.id, 0).unwrap_or_default()
        })
    }
}

impl PartialEq for StructureDef {
    fn eq(&self, other: &StructureDef) -> bool {
        self.id == other.id && self.children() == other.children()
    }
}

impl Eq for StructureDef {}

/// One row of the trigger event -> structure map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDef {
    /// Message code, e.g. `"ADT"`.
    pub code: &'static str,
    /// Trigger event, e.g. `"A04"`; empty means any trigger (`ACK`).
    pub trigger: &'static str,
    /// Structure id, e.g. `"ADT_A01"`.
    pub structure: &'static str,
}

/// Whether a table's values are defined by HL7 or by each site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableKind {
    /// HL7-defined: values outside the table are errors.
    Hl7,
    /// User-defined: listed values are suggestions only.
    User,
    /// The sources give no evidence either way.
    Unknown,
}

/// A code table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDef {
    /// Table number, e.g. 3 for table 0003.
    pub number: u16,
    /// Table name, e.g. `"Event type"` (may be empty).
    pub name: &'static str,
    pub kind: TableKind,
    /// Code values, sorted bytewise; may be empty.
    pub values: Box<[&'static str]>,
    /// The values come from an unversioned list (2.1 to 2.3) and may hold
    /// codes added in later versions.
    pub values_approximate: bool,
}

impl TableDef {
    /// Whether `code` is one of the listed values.
    pub fn contains(&self, code: &[u8]) -> bool {
        self.values.binary_search_by(|v| v.as_bytes().cmp(code)).is_ok()
    }

    /// Whether HL7 defines the table's values.
    pub fn is_hl7_defined(&self) -> bool {
        self.kind == TableKind::Hl7
    }
}

/// The definitions of one HL7 v2 version.
#[derive(Debug)]
pub struct Schema {
    version: Version,
    segments: Box<[SegmentDef]>,
    datatypes: Box<[DataTypeDef]>,
    structures: Box<[StructureDef]>,
    events: Box<[EventDef]>,
    tables: Box<[TableDef]>,
}

impl Schema {
    /// The version these tables describe (2.7 for a 2.7.1 request).
    pub fn version(&self) -> Version {
        self.version
    }

    /// The segment with id `id`, e.g. `b"PID"`.
    pub fn segment(&self, id: &[u8]) -> Option<&SegmentDef> {
        let i = self.segments.binary_search_by(|s| s.id.as_bytes().cmp(id)).ok()?;
        self.segments.get(i)
    }

    /// Field `position` (1-based) of segment `id`.
    pub fn field(&self, id: &[u8], position: usize) -> Option<&FieldDef> {
        self.segment(id)?.field(position)
    }

    /// The structure id for message code and trigger event, e.g.
    /// `(b"ADT", b"A04")` -> `"ADT_A01"`; `ACK` with any trigger -> `"ACK"`.
    pub fn structure_for(&self, msg_code: &[u8], trigger: &[u8]) -> Option<&'static str> {
        let find = |trig: &[u8]| {
            self.events
                .binary_search_by(|e| (e.code.as_bytes(), e.trigger.as_bytes()).cmp(&(msg_code, trig)))
                .ok()
                .and_then(|i| self.events.get(i))
                .map(|e| e.structure)
        };
        find(trigger).or_else(|| find(b""))
    }

    /// The structure with id `id`, e.g. `"ADT_A01"`.
    pub fn structure(&self, id: &str) -> Option<&StructureDef> {
        let i = self.structures.binary_search_by(|s| s.id.cmp(id)).ok()?;
        self.structures.get(i)
    }

    /// The data type with id `id`, e.g. `"XPN"`.
    pub fn datatype(&self, id: &str) -> Option<&DataTypeDef> {
        let i = self.datatypes.binary_search_by(|d| d.id.cmp(id)).ok()?;
        self.datatypes.get(i)
    }

    /// Table number `n`, e.g. 3 for table 0003.
    pub fn table(&self, n: u16) -> Option<&TableDef> {
        let i = self.tables.binary_search_by(|t| t.number.cmp(&n)).ok()?;
        self.tables.get(i)
    }

    /// All segments, sorted by id.
    pub fn segments(&self) -> &[SegmentDef] {
        &self.segments
    }

    /// All data types, sorted by id.
    pub fn datatypes(&self) -> &[DataTypeDef] {
        &self.datatypes
    }

    /// All structures, sorted by id.
    pub fn structures(&self) -> &[StructureDef] {
        &self.structures
    }

    /// The trigger event map, sorted by (code, trigger).
    pub fn events(&self) -> &[EventDef] {
        &self.events
    }

    /// All tables, sorted by number.
    pub fn tables(&self) -> &[TableDef] {
        &self.tables
    }
}

/// Why embedded tables could not be decoded (never expected: the unit tests
/// decode every version).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The embedded file, e.g. `"v2.5.1.bin"`.
    pub file: &'static str,
    pub offset: usize,
    pub what: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HL7 v2 tables: {} corrupt at byte {}: {}", self.file, self.offset, self.what)
    }
}

impl std::error::Error for DecodeError {}

static SCHEMAS: [OnceLock<Result<Schema, DecodeError>>; 13] = [const { OnceLock::new() }; 13];
static STRINGS: OnceLock<Result<Box<[&'static str]>, DecodeError>> = OnceLock::new();

/// The definitions of version `v`, decoded on first use.
///
/// # Panics
///
/// Only if the embedded data files are corrupt, which the unit test
/// `every_version_decodes` rules out for the files compiled in.  Use
/// [`try_schema`] to handle that case instead. The panic payload is the code
/// `CLI_INTERNAL`, never a rendered message (the front doors turn a panic into that code).
pub fn schema(v: Version) -> &'static Schema {
    match try_schema(v) {
        Ok(s) => s,
        Err(_) => std::panic::panic_any(crate::diag::Code::CLI_INTERNAL),
    }
}

/// Like [`schema`], but returns the decode error instead of panicking.
pub fn try_schema(v: Version) -> Result<&'static Schema, DecodeError> {
    let slot = SCHEMAS.get(v.slot()).ok_or(DecodeError { file: "?", offset: 0, what: "no slot for version" })?;
    slot.get_or_init(|| decode(v.data_version(), v.data())).as_ref().map_err(Clone::clone)
}

const SEGMENT_IDS: &str = include_str!("schema/segment_ids.txt");

fn segment_id_bytes() -> &'static [u8] {
    SEGMENT_IDS.trim_ascii_end().as_bytes()
}

/// Whether `id` is a segment id of any HL7 v2 version (2.1 to 2.8.2).
/// Z-segments and anything else are not.
pub fn is_known_segment_id(id: &[u8]) -> bool {
    let all = segment_id_bytes();
    if id.len() != 3 {
        return false;
    }
    let (mut lo, mut hi) = (0usize, all.len() / 3);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let Some(cand) = all.get(mid * 3..mid * 3 + 3) else {
            return false;
        };
        match cand.cmp(id) {
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
        }
    }
    false
}

/// Every known segment id, sorted.
pub fn known_segment_ids() -> impl Iterator<Item = &'static str> {
    let all = SEGMENT_IDS.trim_ascii_end();
    (0..all.len() / 3).filter_map(move |i| all.get(i * 3..i * 3 + 3))
}

// ---------------------------------------------------------------------------
// Decoding
//
// File layout (all integers little-endian; written by
// tools/gen_hl7v2_tables.py, FORMAT_VERSION must match):
//
// strings.bin  "PW7T" u8:format u32:count count*u8:byte-length
//              u32:blob-length blob (UTF-8, the strings back to back)
// v<ver>.bin   "PW7S" u8:format str:version
//              u16:n n*segment   segment  = str:id str:name u16:n n*element
//              u16:n n*datatype  datatype = str:id str:name u8:flags u16:n n*element
//              u16:n n*structure structure= str:id u16:n n*node
//              u16:n n*event     event    = str:code str:trigger str:structure
//              u16:n n*table     table    = u16:number str:name u8:kind u8:flags u16:n n*str
//   element = str:datatype str:name u8:usage-letter u16:reps u32:max-len u16:table
//   node    = u8:kind str:name u8:required u16:reps [u16:n n*node if group/choice]
//   str     = u16 index into strings.bin; reps 0 = unbounded; 0 = none for
//             max-len and table.
// ---------------------------------------------------------------------------

const STRINGS_DATA: &[u8] = include_bytes!("schema/strings.bin");
const MAGIC: &[u8; 4] = b"PW7S";
const STRINGS_MAGIC: &[u8; 4] = b"PW7T";
const FORMAT_VERSION: u8 = 2;

const NODE_SEGMENT: u8 = 0;
const NODE_GROUP: u8 = 1;
const NODE_CHOICE: u8 = 2;
const NODE_ANY: u8 = 3;
const TABLE_HL7: u8 = 1;
const TABLE_USER: u8 = 2;
const TABLE_FLAG_VALUES_APPROX: u8 = 1;
const DT_FLAG_PRIMITIVE: u8 = 1;
/// Deepest group nesting accepted (real data: 6).
const MAX_DEPTH: usize = 32;

struct Reader {
    buf: &'static [u8],
    pos: usize,
    file: &'static str,
    strings: &'static [&'static str],
}

impl Reader {
    fn new(file: &'static str, buf: &'static [u8]) -> Reader {
        Reader { buf, pos: 0, file, strings: &[] }
    }

    fn err(&self, what: &'static str) -> DecodeError {
        DecodeError { file: self.file, offset: self.pos, what }
    }

    fn take(&mut self, n: usize) -> Result<&'static [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.err("overflow"))?;
        let out = self.buf.get(self.pos..end).ok_or_else(|| self.err("truncated"))?;
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = self.take(1)?;
        b.first().copied().ok_or_else(|| self.err("truncated"))
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        let arr: [u8; 2] = b.try_into().map_err(|_| self.err("truncated"))?;
        Ok(u16::from_le_bytes(arr))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        let arr: [u8; 4] = b.try_into().map_err(|_| self.err("truncated"))?;
        Ok(u32::from_le_bytes(arr))
    }

    fn len32(&mut self) -> Result<usize, DecodeError> {
        let n = self.u32()?;
        usize::try_from(n).map_err(|_| self.err("length too large"))
    }

    fn header(&mut self, magic: &[u8; 4]) -> Result<(), DecodeError> {
        if self.take(4)? != magic || self.u8()? != FORMAT_VERSION {
            return Err(self.err("bad magic or format version"));
        }
        Ok(())
    }

    fn str(&mut self) -> Result<&'static str, DecodeError> {
        let i = usize::from(self.u16()?);
        self.strings.get(i).copied().ok_or_else(|| self.err("bad string index"))
    }

    fn element(&mut self, position: usize) -> Result<ElementDef, DecodeError> {
        let data_type = self.str()?;
        let name = self.str()?;
        let usage = Usage::from_byte(self.u8()?).ok_or_else(|| self.err("bad usage"))?;
        let repeat = Repeat::from_u16(self.u16()?);
        let len = self.u32()?;
        let table = self.u16()?;
        Ok(ElementDef {
            position: u16::try_from(position).map_err(|_| self.err("too many elements"))?,
            name,
            data_type,
            usage,
            repeat,
            max_len: (len != 0).then_some(len),
            table: (table != 0).then_some(table),
        })
    }

    fn elements(&mut self) -> Result<Box<[ElementDef]>, DecodeError> {
        let n = usize::from(self.u16()?);
        let mut out = Vec::with_capacity(n);
        for i in 1..=n {
            out.push(self.element(i)?);
        }
        Ok(out.into_boxed_slice())
    }

    /// Walks a node list as [`Reader::nodes`] reads it, with the same checks, without building
    /// it (a version's structures are decoded on first use).
    fn skip_nodes(&mut self, depth: usize) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("groups nested too deep"));
        }
        let n = usize::from(self.u16()?);
        for _ in 0..n {
            let kind = self.u8()?;
            if kind > NODE_ANY {
                return Err(self.err("bad node kind"));
            }
            self.str()?;
            self.u8()?;
            self.u16()?;
            if kind == NODE_GROUP || kind == NODE_CHOICE {
                self.skip_nodes(depth + 1)?;
            }
        }
        Ok(())
    }

    fn nodes(&mut self, structure: &str, depth: usize) -> Result<Box<[Node]>, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err("groups nested too deep"));
        }
        let n = usize::from(self.u16()?);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let kind = match self.u8()? {
                NODE_SEGMENT => NodeKind::Segment,
                NODE_GROUP => NodeKind::Group,
                NODE_CHOICE => NodeKind::Choice,
                NODE_ANY => NodeKind::AnySegment,
                _ => return Err(self.err("bad node kind")),
            };
            let name = self.str()?;
            let required = self.u8()? != 0;
            let repeat = Repeat::from_u16(self.u16()?);
            let children = if matches!(kind, NodeKind::Group | NodeKind::Choice) {
                self.nodes(structure, depth + 1)?
            } else {
                Box::default()
            };
            let short_name = match name.strip_prefix(structure) {
                Some(rest) if kind != NodeKind::Segment => match rest.strip_prefix('_') {
                    Some(short) if !short.is_empty() => short,
                    _ => name,
                },
                _ => name,
            };
            out.push(Node { kind, name, short_name, required, repeat, children });
        }
        Ok(out.into_boxed_slice())
    }
}

/// The shared string table, borrowed straight from the embedded bytes.
fn strings() -> Result<&'static [&'static str], DecodeError> {
    STRINGS.get_or_init(decode_strings).as_ref().map(|b| &**b).map_err(Clone::clone)
}

fn decode_strings() -> Result<Box<[&'static str]>, DecodeError> {
    let mut r = Reader::new("strings.bin", STRINGS_DATA);
    r.header(STRINGS_MAGIC)?;
    let count = r.len32()?;
    let lens = r.take(count)?;
    let blob_len = r.len32()?;
    let blob = r.take(blob_len)?;
    if r.pos != STRINGS_DATA.len() {
        return Err(r.err("trailing bytes"));
    }
    let blob: &'static str = std::str::from_utf8(blob).map_err(|_| r.err("not UTF-8"))?;
    let mut out = Vec::with_capacity(count);
    let mut at = 0usize;
    for &len in lens {
        let end = at + usize::from(len);
        out.push(blob.get(at..end).ok_or_else(|| r.err("bad string length"))?);
        at = end;
    }
    Ok(out.into_boxed_slice())
}

fn decode(version: Version, data: &'static [u8]) -> Result<Schema, DecodeError> {
    let mut r = Reader::new(version.file_name(), data);
    r.header(MAGIC)?;
    r.strings = strings()?;
    if r.str()? != version.as_str() {
        return Err(r.err("data file is for another version"));
    }

    let n = usize::from(r.u16()?);
    let mut segments = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.str()?;
        let name = r.str()?;
        let fields = r.elements()?;
        segments.push(SegmentDef { id, name, fields });
    }

    let n = usize::from(r.u16()?);
    let mut datatypes = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.str()?;
        let name = r.str()?;
        let flags = r.u8()?;
        let components = r.elements()?;
        datatypes.push(DataTypeDef { id, name, primitive: flags & DT_FLAG_PRIMITIVE != 0, components });
    }

    let n = usize::from(r.u16()?);
    let mut structures = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.str()?;
        let nodes_at = r.pos;
        r.skip_nodes(0)?;
        structures.push(StructureDef {
            id,
            nodes_at,
            data,
            file: r.file,
            strings: r.strings,
            children: OnceLock::new(),
        });
    }

    let n = usize::from(r.u16()?);
    let mut events = Vec::with_capacity(n);
    for _ in 0..n {
        let code = r.str()?;
        let trigger = r.str()?;
        let structure = r.str()?;
        events.push(EventDef { code, trigger, structure });
    }

    let n = usize::from(r.u16()?);
    let mut tables = Vec::with_capacity(n);
    for _ in 0..n {
        let number = r.u16()?;
        let name = r.str()?;
        let kind = match r.u8()? {
            TABLE_HL7 => TableKind::Hl7,
            TABLE_USER => TableKind::User,
            _ => TableKind::Unknown,
        };
        let flags = r.u8()?;
        let nv = usize::from(r.u16()?);
        let mut values = Vec::with_capacity(nv);
        for _ in 0..nv {
            values.push(r.str()?);
        }
        tables.push(TableDef {
            number,
            name,
            kind,
            values: values.into_boxed_slice(),
            values_approximate: flags & TABLE_FLAG_VALUES_APPROX != 0,
        });
    }
    if r.pos != data.len() {
        return Err(r.err("trailing bytes"));
    }

    // The generator writes every list sorted; lookups binary-search, so
    // check rather than trust.
    let sorted = segments.windows(2).all(|w| w[0].id < w[1].id)
        && datatypes.windows(2).all(|w| w[0].id < w[1].id)
        && structures.windows(2).all(|w| w[0].id < w[1].id)
        && events.windows(2).all(|w| (w[0].code, w[0].trigger) < (w[1].code, w[1].trigger))
        && tables.windows(2).all(|w| w[0].number < w[1].number)
        && tables.iter().all(|t| t.values.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
    if !sorted {
        return Err(r.err("lists not sorted"));
    }

    Ok(Schema {
        version,
        segments: segments.into_boxed_slice(),
        datatypes: datatypes.into_boxed_slice(),
        structures: structures.into_boxed_slice(),
        events: events.into_boxed_slice(),
        tables: tables.into_boxed_slice(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_decodes() {
        for v in Version::ALL {
            let s = try_schema(v).unwrap_or_else(|e| panic!("{e}")); // value-free: a test decoding the bundled tables, no message
            assert_eq!(s.version(), v.data_version());
            assert!(s.segment(b"MSH").is_some(), "{v}: no MSH");
            assert!(s.segments().len() > 30, "{v}");
            assert!(s.structures().len() > 30, "{v}");
            assert!(!s.events().is_empty(), "{v}");
            assert!(!s.tables().is_empty(), "{v}");
        }
    }

    #[test]
    fn version_parsing() {
        assert_eq!(Version::parse(b"2.5.1"), Some(Version::V2_5_1));
        assert_eq!(Version::parse(b" 2.3 "), Some(Version::V2_3));
        assert_eq!(Version::parse(b"2.9"), None);
        assert_eq!(Version::nearest(b"2.9"), Some(Version::V2_8_2));
        assert_eq!(Version::nearest(b"2.5.2"), Some(Version::V2_5_1));
        assert_eq!(Version::nearest(b"2.7.1"), Some(Version::V2_7_1));
        assert_eq!(Version::nearest(b"2.0"), Some(Version::V2_1));
        assert_eq!(Version::nearest(b"3.0"), None);
        assert_eq!(Version::nearest(b"abc"), None);
        assert_eq!(Version::nearest(b""), None);
        assert_eq!("2.4".parse::<Version>(), Ok(Version::V2_4));
        assert_eq!(Version::V2_7_1.data_version(), Version::V2_7);
        assert_eq!(schema(Version::V2_7_1).version(), Version::V2_7);
        for v in Version::ALL {
            assert_eq!(Version::parse(v.as_str().as_bytes()), Some(v));
        }
    }

    #[test]
    fn trigger_to_structure() {
        let s = schema(Version::V2_5_1);
        assert_eq!(s.structure_for(b"ADT", b"A04"), Some("ADT_A01"));
        assert_eq!(s.structure_for(b"ADT", b"A01"), Some("ADT_A01"));
        assert_eq!(s.structure_for(b"ADT", b"A08"), Some("ADT_A01"));
        assert_eq!(s.structure_for(b"ORU", b"R01"), Some("ORU_R01"));
        assert_eq!(s.structure_for(b"SIU", b"S14"), Some("SIU_S12"));
        assert_eq!(s.structure_for(b"ACK", b"A01"), Some("ACK"));
        assert_eq!(s.structure_for(b"ZZZ", b"Z99"), None);
        // 2.1 and 2.2 have one structure per event.
        assert_eq!(schema(Version::V2_2).structure_for(b"ADT", b"A04"), Some("ADT_A04"));
        assert_eq!(schema(Version::V2_3).structure_for(b"ADT", b"A04"), Some("ADT_A01"));
    }

    #[test]
    fn structure_tree() {
        let s = schema(Version::V2_5_1);
        let adt = s.structure("ADT_A01").expect("ADT_A01 in 2.5.1");
        let first = &adt.children()[0];
        assert_eq!(first.name, "MSH");
        assert_eq!(first.kind, NodeKind::Segment);
        assert!(first.required);
        assert_eq!(first.repeat, Repeat::Once);
        let proc_group = adt.children().iter().find(|n| n.short_name == "PROCEDURE").expect("PROCEDURE group");
        assert_eq!(proc_group.name, "ADT_A01_PROCEDURE");
        assert!(proc_group.is_group());
        assert!(!proc_group.required);
        assert!(proc_group.repeat.is_repeatable());
        assert_eq!(proc_group.children[0].name, "PR1");
        assert!(proc_group.children[0].required);
        for st in s.structures() {
            assert!(!st.children().is_empty(), "{} empty", st.id);
        }
    }

    #[test]
    fn pid_fields() {
        let s = schema(Version::V2_5_1);
        let pid = s.segment(b"PID").expect("PID");
        assert_eq!(pid.id, "PID");
        let pid5 = pid.field(5).expect("PID-5");
        assert_eq!(pid5.position, 5);
        assert_eq!(pid5.data_type, "XPN");
        assert_eq!(pid5.name, "Patient Name");
        assert!(pid5.is_repeatable());
        assert!(pid5.is_required());
        assert_eq!(pid5.max_len, Some(250));
        let pid8 = pid.field(8).expect("PID-8");
        assert_eq!(pid8.table, Some(1));
        assert_eq!(pid8.data_type, "IS");
        assert!(!pid8.is_repeatable());
        assert_eq!(pid8.usage, Usage::Optional);
        assert!(pid.field(0).is_none());
        assert!(s.field(b"PID", 3).is_some_and(|f| f.data_type == "CX"));
        let xpn = s.datatype("XPN").expect("XPN");
        assert!(!xpn.primitive);
        assert_eq!(xpn.component(1).map(|c| c.data_type), Some("FN"));
        assert!(s.datatype("ST").is_some_and(|d| d.primitive));
    }

    #[test]
    fn msh9_type_per_version() {
        for v in [Version::V2_1, Version::V2_2] {
            let f = schema(v).field(b"MSH", 9).expect("MSH-9");
            assert_eq!(f.base_data_type(), "CM", "{v}");
        }
        for v in [Version::V2_5, Version::V2_5_1, Version::V2_6, Version::V2_8_2] {
            let f = schema(v).field(b"MSH", 9).expect("MSH-9");
            assert_eq!(f.data_type, "MSG", "{v}");
        }
    }

    #[test]
    fn tables() {
        let s = schema(Version::V2_5_1);
        let t3 = s.table(3).expect("table 0003");
        assert_eq!(t3.kind, TableKind::Hl7);
        assert!(t3.contains(b"A04"));
        assert!(!t3.contains(b"A4"));
        let t103 = s.table(103).expect("table 0103");
        assert!(t103.is_hl7_defined());
        for code in [&b"P"[..], b"D", b"T"] {
            assert!(t103.contains(code));
        }
        let t104 = s.table(104).expect("table 0104");
        assert!(t104.is_hl7_defined());
        assert!(t104.contains(b"2.5.1"));
        // Administrative sex is user-defined in 2.5.1 (PID-8 is IS).
        let t1 = s.table(1).expect("table 0001");
        assert_eq!(t1.kind, TableKind::User);
        assert!(t1.contains(b"F"));
        assert!(!t1.values_approximate);
        assert!(schema(Version::V2_1).tables().iter().any(|t| t.values_approximate));
    }

    #[test]
    fn known_segment_ids_across_versions() {
        assert!(is_known_segment_id(b"PID"));
        assert!(is_known_segment_id(b"MSH"));
        assert!(is_known_segment_id(b"ABS"));
        assert!(is_known_segment_id(b"VTQ"));
        assert!(!is_known_segment_id(b"ZPI"));
        assert!(!is_known_segment_id(b"PI"));
        assert!(!is_known_segment_id(b"PIDX"));
        assert!(!is_known_segment_id(b"pid"));
        let ids: Vec<&str> = known_segment_ids().collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for v in Version::ALL {
            for seg in schema(v).segments() {
                assert!(is_known_segment_id(seg.id.as_bytes()), "{v} {}", seg.id);
            }
        }
    }

    #[test]
    fn decode_is_fast_enough() {
        // Loose bound so a debug build on a busy machine passes; the release
        // figure is well under 2 ms per version.
        for v in Version::ALL {
            let start = std::time::Instant::now();
            let s = decode(v.data_version(), v.data()).unwrap_or_else(|e| panic!("{e}")); // value-free: a test decoding the bundled tables
            let took = start.elapsed();
            assert!(!s.segments().is_empty());
            assert!(took.as_millis() < 500, "{v}: {took:?}");
        }
    }
}
