//! A value-free summary of one HL7 v2 message: message type and version (only when the
//! version's own tables list them), segment counts by id, finding counts.
//!
//! The message type (MSH-9) is reported only when each of its parts is a value of the tables of
//! the message's version (MSH-12, or the nearest known version; without a usable MSH-12, 2.5.1
//! then 2.8.2): the message code in table 0076
//! (or the version's trigger-event map, for 2.1 and 2.3, which publish no table 0076), the
//! trigger event in table 0003 (or that map), the message structure among the version's
//! structures (table 0354). The text printed is built from the tables' own strings, never
//! copied from the message.
//! The version is reported only when MSH-12.1 is one of the versions phiward knows (`2.1` ...
//! `2.8.2`), again as the table's string. A field that is present but does not qualify is
//! reported as [`UNKNOWN`]; an absent or empty one is not reported, nor are the fields of a
//! batch envelope's header (FHS, BHS: a file name and control id stand there).
//!
//! What it does not do: report any field value other than those two table entries. A segment
//! whose id is not a standard or Z id is counted under `"?"`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diag::{Diagnostic, Severity};
use crate::phi::ValueFree;

use super::parse::{Delimiters, Message};
use super::schema::{self, Schema, Version};

/// What `messageType` and `version` say when the field is there but not in the tables.
pub const UNKNOWN: &str = "unknown";

/// Table 0076, message type.
const MESSAGE_TYPE_TABLE: u16 = 76;
/// Table 0003, event type.
const EVENT_TYPE_TABLE: u16 = 3;
/// Table 0354, message structure.
const MESSAGE_STRUCTURE_TABLE: u16 = 354;

/// The summary; serialized as the `inspect` data.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Always `hl7`.
    pub format: &'static str,
    /// `ADT^A01^ADT_A01` when the version's tables list every part of MSH-9, else
    /// [`UNKNOWN`]; absent without MSH-9.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_type: Option<String>,
    /// `2.5.1` when MSH-12.1 is a known version, else [`UNKNOWN`]; absent without MSH-12.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<&'static str>,
    /// Number of segments.
    pub segment_count: usize,
    /// Segments by id.
    pub segments: BTreeMap<&'static str, u32>,
    /// Findings of severity warning.
    pub warning_count: usize,
    /// Findings of severity error or fatal.
    pub error_count: usize,
}

/// The parts of MSH-9 as the tables spell them (static strings of the embedded tables).
#[derive(Copy, Clone, Debug)]
struct TableType {
    code: &'static str,
    trigger: Option<&'static str>,
    structure: Option<&'static str>,
}

/// The result of looking MSH-9 up in the tables: value-free by construction.
#[derive(Copy, Clone, Debug)]
struct Lookup(Option<TableType>);
impl crate::phi::sealed::Sealed for Lookup {}
impl ValueFree for Lookup {}

/// A known version, or none.
#[derive(Copy, Clone, Debug)]
struct KnownVersion {
    exact: Option<Version>,
    nearest: Option<Version>,
}
impl crate::phi::sealed::Sealed for KnownVersion {}
impl ValueFree for KnownVersion {}

impl TableType {
    fn text(self) -> String {
        let mut out = String::from(self.code);
        for part in [self.trigger, self.structure] {
            match part {
                Some(p) => {
                    out.push('^');
                    out.push_str(p);
                }
                None => break,
            }
        }
        out
    }
}

/// The message code `v` as table 0076 or the trigger-event map spells it.
fn code_value(schema: &'static Schema, v: &[u8]) -> Option<&'static str> {
    table_value(schema, MESSAGE_TYPE_TABLE, v).or_else(|| {
        let events = schema.events();
        let i = events.partition_point(|e| e.code.as_bytes() < v);
        events.get(i).filter(|e| e.code.as_bytes() == v).map(|e| e.code)
    })
}

/// The trigger event `v` as table 0003, or the trigger-event map for `code`, spells it.
fn trigger_value(schema: &'static Schema, code: &str, v: &[u8]) -> Option<&'static str> {
    table_value(schema, EVENT_TYPE_TABLE, v).or_else(|| {
        let events = schema.events();
        let i =
            events.binary_search_by(|e| (e.code.as_bytes(), e.trigger.as_bytes()).cmp(&(code.as_bytes(), v))).ok()?;
        events.get(i).map(|e| e.trigger)
    })
}

/// The table entry equal to `v`, as the table's own string.
fn table_value(schema: &'static Schema, table: u16, v: &[u8]) -> Option<&'static str> {
    let t = schema.table(table)?;
    let i = t.values.binary_search_by(|x| x.as_bytes().cmp(v)).ok()?;
    t.values.get(i).copied()
}

/// A structure id of the version (its structures, or table 0354), as the tables spell it.
fn structure_value(schema: &'static Schema, v: &[u8]) -> Option<&'static str> {
    let id = std::str::from_utf8(v).ok()?;
    schema
        .structures()
        .binary_search_by(|s| s.id.cmp(id))
        .ok()
        .and_then(|i| schema.structures().get(i))
        .map(|s| s.id)
        .or_else(|| table_value(schema, MESSAGE_STRUCTURE_TABLE, v))
}

/// MSH-9 looked up in the tables of `schema`: one repetition, at most three components, no
/// subcomponents or escapes; the code in table 0076, the trigger (when not empty) in table
/// 0003, the structure (when not empty) among the version's structures. The trigger and
/// structure are kept only while every part before them is.
fn look_up(v: &[u8], d: Delimiters, schema: &'static Schema) -> Lookup {
    if v.iter().any(|&b| b == d.subcomponent || b == d.repetition || b == d.escape) {
        return Lookup(None);
    }
    let mut parts = v.split(|&b| b == d.component);
    let (code, trigger, structure) = (parts.next(), parts.next(), parts.next());
    if parts.next().is_some() {
        return Lookup(None);
    }
    let Some(code) = code.and_then(|c| code_value(schema, c)) else { return Lookup(None) };
    let trigger = match trigger {
        None => None,
        Some(t) => match trigger_value(schema, code, t).filter(|t| !t.is_empty()) {
            Some(t) => Some(t),
            None if t.is_empty() && structure.is_some_and(|s| !s.is_empty()) => Some(""),
            None if t.is_empty() => None,
            None => return Lookup(None),
        },
    };
    let structure = match structure {
        None => None,
        Some([]) => None,
        Some(s) => match structure_value(schema, s) {
            Some(s) => Some(s),
            None => return Lookup(None),
        },
    };
    Lookup(Some(TableType { code, trigger, structure }))
}

/// Summarizes a message, given its validation findings.
pub fn summarize(msg: &Message, findings: &[Diagnostic]) -> Summary {
    let msh = msg.msh();
    let d = msg.delimiters();
    // A batch envelope record (FHS, BHS) has a file or batch name and control id there.
    let is_msh = msh.name() == Some("MSH");
    let known = Some(msh)
        .filter(|_| is_msh)
        .and_then(|msh| msh.field(12))
        .and_then(|f| f.at(1, 1, 1))
        .filter(|b| !b.is_empty())
        .map(|b| b.classify(|v| KnownVersion { exact: Version::parse(v), nearest: Version::nearest(v) }));
    let version = known.map(|k| k.exact.map_or(UNKNOWN, Version::as_str));
    // The version's tables; without a usable MSH-12, those of 2.5.1, then of 2.8.2.
    let versions = match known.and_then(|k| k.nearest) {
        Some(v) => [Some(v), None],
        None => [Some(Version::V2_5_1), Some(Version::V2_8_2)],
    };
    let message_type = Some(msh).filter(|_| is_msh).and_then(|msh| msh.field(9)).filter(|f| !f.is_empty()).map(|f| {
        let found = versions
            .into_iter()
            .flatten()
            .filter_map(|v| schema::try_schema(v).ok())
            .find_map(|schema| f.bytes().classify(|v| look_up(v, d, schema)).0);
        found.map_or_else(|| UNKNOWN.to_owned(), TableType::text)
    });
    let mut segments = BTreeMap::new();
    for seg in msg.segments() {
        *segments.entry(seg.name().unwrap_or("?")).or_insert(0) += 1;
    }
    Summary {
        format: "hl7",
        message_type,
        version,
        segment_count: msg.segment_count(),
        segments,
        warning_count: findings.iter().filter(|f| f.severity == Severity::Warning).count(),
        error_count: findings.iter().filter(|f| f.severity.is_failure()).count(),
    }
}

/// The inventory (`inspect --detail inventory`): the summary and, per segment id in order of
/// first appearance, the fields present.
#[derive(Clone, Debug, Serialize)]
pub struct Inventory {
    /// The summary's properties.
    #[serde(flatten)]
    pub summary: Summary,
    /// The segments, each with its fields.
    pub inventory: Vec<SegmentInventory>,
}

/// One segment id of the inventory.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentInventory {
    /// The segment id (a standard or Z id; `"?"` for any other).
    pub segment: &'static str,
    /// Its name in the version's tables (absent for Z segments and unknown ids).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub name: &'static str,
    /// How many there are.
    pub count: u32,
    /// The fields that hold something in at least one of them, by position.
    pub fields: Vec<FieldInventory>,
}

/// One field of a segment id.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldInventory {
    /// `PID-5`.
    pub field: String,
    /// Its name in the version's tables, when it has one.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub name: &'static str,
    /// Its data type in the version's tables, when it has one.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub data_type: &'static str,
    /// In how many of the segments it is not empty.
    pub present: u32,
    /// Non-empty repetitions, over all the segments.
    pub repetitions: u32,
    /// The table its codes come from (`0001`), for a coded field with a table of its version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The codes that are entries of that table, as the table spells them, with their counts.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub codes: BTreeMap<&'static str, u32>,
    /// Codes that are not entries of the table (counted, never shown), and every code when the
    /// codes are not shown.
    #[serde(skip_serializing_if = "is_zero")]
    pub other_codes: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Data types whose first component is a code of the field's table.
const CODED_TYPES: [&str; 6] = ["ID", "IS", "CE", "CWE", "CNE", "CF"];

/// The table entry that the first component of `rep` is, value-free.
#[derive(Copy, Clone, Debug)]
struct Entry(Option<&'static str>);
impl crate::phi::sealed::Sealed for Entry {}
impl ValueFree for Entry {}

/// The inventory of a message, given its validation findings. With `codes` false, no code is
/// shown (each counts under `otherCodes`).
pub fn inventory(msg: &Message, findings: &[Diagnostic], codes: bool) -> Inventory {
    let summary = summarize(msg, findings);
    let d = msg.delimiters();
    let msh = msg.msh();
    let is_msh = msh.name() == Some("MSH");
    // The tables of MSH-12's version (or the nearest), else 2.5.1: the summary's choice.
    let version = Some(msh)
        .filter(|_| is_msh)
        .and_then(|msh| msh.field(12))
        .and_then(|f| f.at(1, 1, 1))
        .filter(|b| !b.is_empty())
        .and_then(|b| b.classify(|v| KnownVersion { exact: None, nearest: Version::nearest(v) }).nearest)
        .unwrap_or(Version::V2_5_1);
    let schema = schema::try_schema(version).ok();
    let mut order: Vec<&'static str> = Vec::new();
    let mut by_id: BTreeMap<&'static str, (u32, BTreeMap<u32, FieldInventory>)> = BTreeMap::new();
    for seg in msg.segments() {
        let id = seg.name().unwrap_or("?");
        let (count, fields) = by_id.entry(id).or_insert_with(|| {
            order.push(id);
            (0, BTreeMap::new())
        });
        *count += 1;
        let def = schema.filter(|_| id != "?").and_then(|s| s.segment(id.as_bytes()));
        for n in 1..=seg.field_count() {
            let Some(field) = seg.field(n) else { continue };
            if field.is_empty() {
                continue;
            }
            let fdef = def.and_then(|s| s.field(n as usize));
            let table = fdef
                .filter(|f| CODED_TYPES.contains(&f.base_data_type()))
                .and_then(|f| f.table)
                .and_then(|t| schema.and_then(|s| s.table(t)));
            let entry = fields.entry(n).or_insert_with(|| FieldInventory {
                field: format!("{id}-{n}"),
                name: fdef.map_or("", |f| f.name),
                data_type: fdef.map_or("", |f| f.data_type),
                present: 0,
                repetitions: 0,
                table: table.map(|t| format!("{:04}", t.number)),
                codes: BTreeMap::new(),
                other_codes: 0,
            });
            entry.present += 1;
            for rep in field.repetitions() {
                if rep.bytes.is_empty() {
                    continue;
                }
                entry.repetitions += 1;
                let Some(table) = table else { continue };
                let first = rep.split(Some(d.component)).next().map(|c| c.bytes);
                let found = first.and_then(|c| {
                    c.classify(|v| {
                        Entry(
                            table
                                .values
                                .binary_search_by(|x| x.as_bytes().cmp(v))
                                .ok()
                                .and_then(|i| table.values.get(i).copied()),
                        )
                    })
                    .0
                });
                match found {
                    Some(code) if codes => *entry.codes.entry(code).or_insert(0) += 1,
                    _ => entry.other_codes += 1,
                }
            }
        }
    }
    let inventory = order
        .into_iter()
        .filter_map(|id| {
            let (count, fields) = by_id.remove(id)?;
            let name = schema.filter(|_| id != "?").and_then(|s| s.segment(id.as_bytes())).map_or("", |s| s.name);
            Some(SegmentInventory { segment: id, name, count, fields: fields.into_values().collect() })
        })
        .collect();
    Inventory { summary, inventory }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn summary(msh: &str) -> (Option<String>, Option<&'static str>) {
        let text = format!("{msh}\rPID|1||1\r");
        let msg = crate::formats::hl7v2::parse(text.into_bytes(), &Limits::default()).expect("parses");
        let s = summarize(&msg, &[]);
        (s.message_type, s.version)
    }

    /// Only table entries are printed; anything else in MSH-9 or MSH-12 is `unknown`.
    #[test]
    fn message_types_come_from_the_version_tables() {
        let cases: &[(&str, Option<&str>, Option<&str>)] = &[
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1", Some("ADT^A01^ADT_A01"), Some("2.5.1")),
            ("MSH|^~\\&|A|B|C|D|20240101||ORU^R01|1|P|2.3", Some("ORU^R01"), Some("2.3")),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT|1|P|2.4", Some("ADT"), Some("2.4")),
            // Code-shaped but not in the tables: a sender's text of the right shape.
            ("MSH|^~\\&|A|B|C|D|20240101||SMI^TH1^JOHN_01|1|P|2.5.1", Some(UNKNOWN), Some("2.5.1")),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A99|1|P|2.5.1", Some(UNKNOWN), Some("2.5.1")),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_ZZZ|1|P|2.5.1", Some(UNKNOWN), Some("2.5.1")),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01^X|1|P|2.5.1", Some(UNKNOWN), Some("2.5.1")),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT&X^A01|1|P|2.5.1", Some(UNKNOWN), Some("2.5.1")),
            ("MSH|^~\\&|A|B|C|D|20240101||adt^a01|1|P|2.5.1", Some(UNKNOWN), Some("2.5.1")),
            // A version phiward does not know: printed as unknown, tables of the nearest one.
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.9", Some("ADT^A01^ADT_A01"), Some(UNKNOWN)),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|12345", Some("ADT^A01^ADT_A01"), Some(UNKNOWN)),
            ("MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P", Some("ADT^A01"), None),
            ("MSH|^~\\&|A|B|C|D|20240101||JOHN^DOE|1|P", Some(UNKNOWN), None),
            ("MSH|^~\\&|A|B|C|D|20240101|||1|P|2.5.1", None, Some("2.5.1")),
        ];
        for (msh, ty, version) in cases {
            let (t, v) = summary(msh);
            assert_eq!((t.as_deref(), v), (*ty, *version), "{msh}");
        }
    }

    /// The inventory lists the fields present with counts, and only codes that are entries of
    /// the field's table, as the table spells them.
    #[test]
    fn the_inventory_names_fields_and_shows_only_table_codes() {
        let text = "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|1|P|2.5.1\r\
                    PID|1||123^^^H^MR~456^^^H^PI||DOE^JANE||19700101|F\r\
                    PID|2||789||ROE^RICHARD||19800101|ZQXJ\r\
                    ZPI|SECRET\r";
        let msg = crate::formats::hl7v2::parse(text.as_bytes().to_vec(), &Limits::default()).expect("parses");
        let inv = inventory(&msg, &[], true);
        let json = serde_json::to_value(&inv).expect("serializes");
        assert_eq!(json["messageType"], "ADT^A01^ADT_A01");
        let pid = &json["inventory"][1];
        assert_eq!(pid["segment"], "PID");
        assert_eq!(pid["count"], 2);
        let field = |name: &str| {
            pid["fields"].as_array().and_then(|f| f.iter().find(|x| x["field"] == name)).cloned().expect("field")
        };
        assert_eq!(field("PID-3")["present"], 2);
        assert_eq!(field("PID-3")["repetitions"], 3);
        assert_eq!(field("PID-3")["dataType"], "CX");
        let sex = field("PID-8");
        assert_eq!(sex["table"], "0001");
        assert_eq!(sex["codes"], serde_json::json!({"F": 1}));
        assert_eq!(sex["otherCodes"], 1);
        assert_eq!(json["inventory"][2]["segment"], "ZPI");
        let text = json.to_string();
        for value in ["DOE", "JANE", "ROE", "RICHARD", "ZQXJ", "SECRET", "19700101", "123"] {
            assert!(!text.contains(value), "{value} in {text}");
        }
        // Without codes: counted, not shown.
        let counts = serde_json::to_value(inventory(&msg, &[], false)).expect("serializes");
        let sex = counts["inventory"][1]["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|x| x["field"] == "PID-8"))
            .cloned()
            .expect("field");
        assert!(sex.get("codes").is_none());
        assert_eq!(sex["otherCodes"], 2);
    }

    /// Every version's tables give the message types of the trigger-event map.
    #[test]
    fn every_version_has_the_tables() {
        for v in Version::ALL {
            let s = schema::schema(v);
            assert!(!s.events().is_empty(), "{v:?}");
            assert_eq!(code_value(s, b"ORU"), Some("ORU"), "{v:?}");
            assert_eq!(trigger_value(s, "ORU", b"R01"), Some("R01"), "{v:?}");
        }
    }
}
