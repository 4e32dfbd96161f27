//! What `keep` can prove about one HL7 v2 leaf (a subcomponent): its type, found through the
//! field's data type and its components in the message's version, and the check that type
//! allows (see `proof`).
//!
//! - Coded types (CE, CWE, CNE, CF), as a field or as a component: the identifiers (components
//!   1, 4 and 10) are kept when valid for the coding system next to them (components 3, 6 and
//!   12), or, without one, for the field's table (units fields: UCUM); a coding system is kept
//!   when it is one `proof` knows; the texts (2, 5, 9, 11) and everything else are free text.
//! - Primitive leaves: NM a number, SI digits, ID and IS a value of their table, DT/DTM/TS a
//!   date, TM a time; ST, TX, FT and every type without a check are free text.
//! - Positions with a check of their own: an address's state (XAD-4), ZIP code (XAD-5) and
//!   country (XAD-6); OBX-2 (a data type id, exactly); OBX-4 (a sub-id: digits and dots); a
//!   structured numeric's comparator and separator (SN-1, SN-3).
//!
//! Free text is kept only by a `keep` with `free_text = true`; a leaf whose check fails is
//! removed (and counted) whatever the rule says.
//!
//! What it does not do: decide which rule applies (the engine does), or decode escapes (a value
//! holding an escape sequence fails every check but free text, as it should).

use crate::formats::hl7v2::schema::{self, Schema, Version};

use super::proof;

/// The kind of a leaf: what `keep` checks before writing it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Free text (or a type with no check): kept only with `free_text = true`.
    Text,
    /// NM.
    Number,
    /// SI.
    Sequence,
    /// ID or IS with its table.
    Table(u16),
    /// DT, DTM, TS.
    Date,
    /// TM.
    Time,
    /// An identifier of a coded type; `system` is the position of its coding system at the same
    /// level, `sub` true when the coded type is a component (the positions are subcomponents).
    Code {
        /// Position of the coding-system part.
        system: u32,
        /// The coded type is a component of the field's type.
        sub: bool,
        /// Without a coding system: the table, or UCUM for a units field.
        default: Default,
    },
    /// A coding system name.
    System,
    /// XAD-4.
    State,
    /// XAD-5.
    Zip,
    /// XAD-6.
    Country,
    /// OBX-4.
    SubId,
    /// OBX-2: a data type id, exactly.
    DataType,
    /// SN-1: a comparator (`>`, `<`, `>=`, `<=`, `=`, `<>`).
    Comparator,
    /// SN-3: a separator or suffix (`-`, `+`, `/`, `.`, `:`).
    Separator,
}

/// The system of a code that names none.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Default {
    /// None: the code is free text.
    None,
    /// The element's table.
    Table(u16),
    /// UCUM (units fields: OBX-6, RXA-7, CQ-2).
    Units,
}

/// A leaf's types (field, component, subcomponent; `""` where there is no such level) and kind.
#[derive(Copy, Clone, Debug)]
pub(super) struct Leaf {
    /// Base data type ids, for type selectors.
    pub types: [&'static str; 3],
    /// What keep checks.
    pub kind: Kind,
}

/// What the engine knows of a field before looking at its leaves.
#[derive(Copy, Clone, Debug)]
pub(super) struct Field {
    /// The field's data type id as the version defines it (`""` when unknown).
    pub ty: &'static str,
    /// The field's table.
    pub table: Option<u16>,
    /// The field holds units (OBX-6, RXA-7).
    pub units: bool,
    /// The field is OBX-4.
    pub sub_id: bool,
    /// The field is OBX-2.
    pub value_type: bool,
}

/// `CM_MSG_TYPE` is a `CM`.
pub(super) fn base(t: &'static str) -> &'static str {
    t.split_once('_').map_or(t, |(head, _)| head)
}

fn is_coded(t: &str) -> bool {
    matches!(t, "CE" | "CWE" | "CNE" | "CF")
}

/// The kind of a primitive of type `t` with table `table`.
fn primitive(t: &str, table: Option<u16>) -> Kind {
    match t {
        "NM" => Kind::Number,
        "SI" => Kind::Sequence,
        "ID" | "IS" => table.map_or(Kind::Text, Kind::Table),
        "DT" | "DTM" | "TS" => Kind::Date,
        "TM" => Kind::Time,
        _ => Kind::Text,
    }
}

/// The role of part `p` of a coded type.
fn coded(p: u32, sub: bool, default: Default) -> Kind {
    match p {
        1 => Kind::Code { system: 3, sub, default },
        4 => Kind::Code { system: 6, sub, default },
        10 => Kind::Code { system: 12, sub, default },
        3 | 6 | 12 => Kind::System,
        _ => Kind::Text,
    }
}

/// The definition of type `t`: the message's version's, else (a type OBX-2 names from a later
/// version) 2.8.2's or 2.5.1's.
fn datatype(schema: &'static Schema, t: &str) -> Option<&'static schema::DataTypeDef> {
    schema
        .datatype(t)
        .or_else(|| [Version::V2_8_2, Version::V2_5_1].into_iter().find_map(|v| schema::schema(v).datatype(t)))
}

fn is_primitive(schema: &'static Schema, t: &str) -> bool {
    datatype(schema, t).is_none_or(|d| d.primitive || d.components.is_empty())
}

/// The types and kind of leaf `c`.`s` (1-based) of a field.
pub(super) fn leaf(schema: &'static Schema, f: &Field, c: u32, s: u32) -> Leaf {
    let mut types = [base(f.ty), "", ""];
    let text = |types| Leaf { types, kind: Kind::Text };
    if f.ty.is_empty() {
        return text(types);
    }
    if f.sub_id || f.value_type {
        let kind = match ((c, s) == (1, 1), f.sub_id) {
            (true, true) => Kind::SubId,
            (true, false) => Kind::DataType,
            (false, _) => Kind::Text,
        };
        return Leaf { types, kind };
    }
    if is_primitive(schema, f.ty) {
        let kind = if (c, s) == (1, 1) { primitive(types[0], f.table) } else { Kind::Text };
        return Leaf { types, kind };
    }
    let Some(cd) = datatype(schema, f.ty).and_then(|d| d.component(c as usize)) else { return text(types) };
    types[1] = base(cd.data_type);
    if is_coded(types[0]) {
        let default = if f.units { Default::Units } else { f.table.map_or(Default::None, Default::Table) };
        let kind = if s == 1 { coded(c, false, default) } else { Kind::Text };
        return Leaf { types, kind };
    }
    if types[0] == "SN" && s == 1 {
        match c {
            1 => return Leaf { types, kind: Kind::Comparator },
            3 => return Leaf { types, kind: Kind::Separator },
            _ => {}
        }
    }
    if matches!(types[0], "XAD" | "AD") && s == 1 {
        match c {
            4 => return Leaf { types, kind: Kind::State },
            5 => return Leaf { types, kind: Kind::Zip },
            6 => return Leaf { types, kind: Kind::Country },
            _ => {}
        }
    }
    if is_primitive(schema, cd.data_type) {
        let kind = if s == 1 { primitive(types[1], cd.table) } else { Kind::Text };
        return Leaf { types, kind };
    }
    if is_coded(types[1]) {
        let units = types[0] == "CQ" && c == 2;
        let default = if units { Default::Units } else { cd.table.map_or(Default::None, Default::Table) };
        return Leaf { types, kind: coded(s, true, default) };
    }
    let Some(sd) = datatype(schema, cd.data_type).and_then(|d| d.component(s as usize)) else { return text(types) };
    types[2] = base(sd.data_type);
    Leaf { types, kind: primitive(types[2], sd.table) }
}

/// The verdict on one leaf.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Proof {
    /// The check passed: keep may write it.
    Proven,
    /// The check failed: keep removes it.
    Unproven,
    /// Free text: only a `free_text` keep writes it.
    Text,
}

/// Checks leaf `v` (raw bytes) of kind `kind`; `system` is the raw coding-system part next to a
/// code (empty when none).
pub(super) fn prove(kind: Kind, v: &[u8], system: &[u8], version: Version) -> Proof {
    let check = |ok: bool| if ok { Proof::Proven } else { Proof::Unproven };
    match kind {
        Kind::Text => Proof::Text,
        Kind::Number => check(proof::hl7_number(v)),
        Kind::Sequence => check(!v.is_empty() && v.len() <= 10 && v.iter().all(u8::is_ascii_digit)),
        Kind::Table(n) => check(proof::hl7_table_value(n, v, version)),
        Kind::Date => check(proof::hl7_datetime(v)),
        Kind::Time => check(proof::hl7_time(v)),
        Kind::State => check(proof::state(v)),
        Kind::Zip => check(proof::zip(v)),
        Kind::Country => check(proof::country(v)),
        Kind::SubId => {
            check(!v.is_empty() && v.len() <= 20 && v.iter().all(|b| b.is_ascii_digit() || *b == b'.') && v[0] != b'.')
        }
        Kind::DataType => check(super::select::hl7_type_name_exact(v).is_some()),
        Kind::Comparator => check(matches!(v, b">" | b"<" | b">=" | b"<=" | b"=" | b"<>")),
        Kind::Separator => check(matches!(v, b"-" | b"+" | b"/" | b"." | b":")),
        Kind::System => {
            if proof::hl7_system(v).is_some() {
                Proof::Proven
            } else {
                Proof::Text
            }
        }
        Kind::Code { default, .. } => {
            let cs = if system.is_empty() {
                match default {
                    Default::None => None,
                    Default::Units => Some(proof::CodeSystem::Ucum),
                    Default::Table(n) => schema::schema(version)
                        .table(n)
                        .filter(|t| !t.values.is_empty())
                        .map(|_| proof::CodeSystem::Hl7Table(n)),
                }
            } else {
                proof::hl7_system(system)
            };
            match cs {
                Some(cs) => check(proof::code_valid(cs, v, version)),
                None => Proof::Text,
            }
        }
    }
}

/// True when the OBX segment's observation is an age: OBX-3 is a LOINC age code, or OBX-6 an
/// age unit. The unit (years when OBX-6 names none) for `proof::cap_age`.
pub(super) fn obx_age(
    obx3: &[u8],
    obx6: &[u8],
    d: &crate::formats::hl7v2::parse::Delimiters,
) -> Option<Option<proof::AgeUnit>> {
    let first = |f: &'_ [u8]| -> Vec<Vec<u8>> {
        let rep = f.split(|b| *b == d.repetition).next().unwrap_or_default();
        rep.split(|b| *b == d.component)
            .map(|c| c.split(|b| *b == d.subcomponent).next().unwrap_or_default().to_vec())
            .collect()
    };
    let code = first(obx3);
    let units = first(obx6);
    let unit = units.first().and_then(|u| proof::age_unit(u));
    let system = code.get(2).map(Vec::as_slice).unwrap_or_default();
    let age_code =
        code.first().is_some_and(|c| proof::is_loinc_age_code(c)) && matches!(system, b"LN" | b"LOINC" | b"");
    (age_code || unit.is_some()).then_some(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_are_typed_through_components() {
        let s = schema::schema(Version::V2_5_1);
        let field = |seg: &[u8], n: usize| {
            let f = s.field(seg, n).unwrap_or_else(|| panic!("field"));
            Field { ty: f.data_type, table: f.table, units: false, sub_id: false, value_type: false }
        };
        // PID-10 (CE, table 0005): the code is checked against its system; the text is text.
        let pid10 = field(b"PID", 10);
        assert!(matches!(leaf(s, &pid10, 1, 1).kind, Kind::Code { system: 3, sub: false, .. }));
        assert_eq!(leaf(s, &pid10, 2, 1).kind, Kind::Text);
        assert_eq!(leaf(s, &pid10, 3, 1).kind, Kind::System);
        // PID-8 (IS, table 0001), PID-1 (SI), PID-11.4 (state), DG1-4 (ST).
        assert_eq!(leaf(s, &field(b"PID", 8), 1, 1).kind, Kind::Table(1));
        assert_eq!(leaf(s, &field(b"PID", 1), 1, 1).kind, Kind::Sequence);
        assert_eq!(leaf(s, &field(b"PID", 11), 4, 1).kind, Kind::State);
        assert_eq!(leaf(s, &field(b"DG1", 4), 1, 1).kind, Kind::Text);
        // PID-7 (TS): a date inside a composite; PV1-44 too.
        let pid7 = leaf(s, &field(b"PID", 7), 1, 1);
        assert_eq!(pid7.kind, Kind::Date);
        assert_eq!(pid7.types[0], "TS");
        // MSH-9 (MSG): table values.
        assert_eq!(leaf(s, &field(b"MSH", 9), 1, 1).kind, Kind::Table(76));
        // A type the message's version does not define (CWE in 2.3, named by OBX-2) is typed by
        // a later version's definition.
        let cwe = Field { ty: "CWE", table: None, units: false, sub_id: false, value_type: false };
        let old = schema::schema(Version::V2_3);
        assert!(matches!(leaf(old, &cwe, 1, 1).kind, Kind::Code { system: 3, .. }));
    }

    #[test]
    fn proofs() {
        let v = Version::V2_5_1;
        let code = Kind::Code { system: 3, sub: false, default: Default::None };
        assert_eq!(prove(code, b"8867-4", b"LN", v), Proof::Proven);
        assert_eq!(prove(code, b"MKR1X", b"LN", v), Proof::Unproven);
        assert_eq!(prove(code, b"GLU", b"L", v), Proof::Text);
        assert_eq!(prove(code, b"GLU", b"", v), Proof::Text);
        let units = Kind::Code { system: 3, sub: false, default: Default::Units };
        assert_eq!(prove(units, b"mg/dL", b"", v), Proof::Proven);
        let race = Kind::Code { system: 3, sub: false, default: Default::Table(5) };
        assert_eq!(prove(race, b"2106-3", b"HL70005", v), Proof::Proven);
        assert_eq!(prove(Kind::Number, b"MKR1X", b"", v), Proof::Unproven);
        assert_eq!(prove(Kind::System, b"MKR1X", b"", v), Proof::Text);
        assert_eq!(prove(Kind::SubId, b"1.2", b"", v), Proof::Proven);
    }
}
