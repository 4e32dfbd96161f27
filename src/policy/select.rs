//! Selectors: which values a rule applies to.
//!
//! HL7 v2: `PID` (a whole segment), `PID-5`, `PID-3[*].1`, `PID-3[2].4.1`, `NK1-*`, `Z*` (every
//! Z segment), `*-*`, and data-type selectors `@XPN`, `@XAD`, `@DTM` (a field, component or
//! subcomponent of that type in the message's version; `@DTM` also matches `TS` and `DT`, OBX-5
//! is typed by OBX-2), and `@age` (numbers that are ages).
//! FHIR: element paths from a resource type (`Patient.name`, `Bundle.entry.fullUrl`, `*.id`,
//! `Patient` for a whole resource) and type selectors (`@HumanName`, `@Address`, `@date`,
//! `@Narrative`, `@Extension`), and `@age`: a value matches when it is, or is inside, a node the
//! selector names (up to its nearest resource; extensions, narrative and variant-typed values
//! below that node are decided by their own rules, see `fhir`).
//!
//! What it does not do: look at values (a selector is structure only).

use crate::diag::Code;
use crate::formats::fhir::definitions as defs;
use crate::formats::hl7v2::{schema, segment_ids};

/// A segment pattern.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Every segment.
    Any,
    /// Every Z segment.
    Z,
    /// One id.
    Id([u8; 3]),
}

impl Segment {
    /// True when `id` matches.
    pub fn matches(self, id: &[u8]) -> bool {
        match self {
            Segment::Any => true,
            Segment::Z => id.first() == Some(&b'Z'),
            Segment::Id(s) => id == s,
        }
    }

    /// True when everything `other` matches, `self` matches.
    pub fn covers(self, other: Segment) -> bool {
        match (self, other) {
            (Segment::Any, _) => true,
            (Segment::Z, Segment::Z) => true,
            (Segment::Z, Segment::Id(id)) => id[0] == b'Z',
            (Segment::Id(a), Segment::Id(b)) => a == b,
            _ => false,
        }
    }
}

/// An HL7 v2 selector. `None` at a level means "every".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hl7 {
    /// A path.
    Path {
        /// The segment(s).
        segment: Segment,
        /// `None`: the whole segment (or `-*`).
        field: Option<u32>,
        /// True when the selector names no field (`PID`, `Z*`).
        whole_segment: bool,
        /// Repetition.
        rep: Option<u32>,
        /// Component.
        comp: Option<u32>,
        /// Subcomponent.
        sub: Option<u32>,
    },
    /// Fields of a data type.
    Type(&'static str),
    /// `@age`: the numbers that are a person's age (OBX-5 of an observation whose OBX-3 is a
    /// LOINC age code or whose OBX-6 is an age unit).
    Age,
}

/// Date-like HL7 v2 types (for the date actions and `@DTM`).
pub const HL7_DATE_TYPES: &[&str] = &["DTM", "TS", "DT", "DIN", "DR"];
/// FHIR date-like primitive types.
pub const FHIR_DATE_TYPES: &[&str] = &["date", "dateTime", "instant"];

fn number(s: &str) -> Option<Option<u32>> {
    if s == "*" {
        return Some(None);
    }
    if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = s.parse().ok()?;
    (n > 0).then_some(Some(n))
}

/// The static name of an HL7 v2 data type id, when a version defines it.
pub fn hl7_type_name(id: &str) -> Option<&'static str> {
    // The types OBX-2 names most often, without a table lookup.
    const COMMON: &[&str] = &["NM", "ST", "CE", "CWE", "TX", "FT", "SN", "DT", "TS", "DTM", "ED", "RP", "TM", "CNE"];
    if let Some(t) = COMMON.iter().find(|t| **t == id) {
        return Some(t);
    }
    for v in [schema::Version::V2_8_2, schema::Version::V2_5_1, schema::Version::V2_3, schema::Version::V2_1] {
        if let Some(d) = schema::schema(v).datatype(id) {
            return Some(d.id);
        }
    }
    None
}

/// The data type an OBX-2 value names, matched exactly: the whole value is a type id (no
/// component, no padding, upper case as the standard writes it).
pub fn hl7_type_name_exact(raw: &[u8]) -> Option<&'static str> {
    if raw.is_empty() || raw.len() > 3 || !raw.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
        return None;
    }
    std::str::from_utf8(raw).ok().and_then(hl7_type_name).filter(|t| t.as_bytes() == raw)
}

impl Hl7 {
    /// Parses a selector.
    pub fn parse(text: &str) -> Result<Hl7, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        if text == "@age" {
            return Ok(Hl7::Age);
        }
        if let Some(t) = text.strip_prefix('@') {
            return hl7_type_name(t).map(Hl7::Type).ok_or(bad);
        }
        let (seg, rest) = match text.split_once('-') {
            Some((s, r)) => (s, Some(r)),
            None => (text, None),
        };
        let segment = match seg {
            "*" => Segment::Any,
            "Z*" => Segment::Z,
            s if s.len() == 3
                && (schema::is_known_segment_id(s.as_bytes()) || segment_ids::schema_name(s.as_bytes()).is_some()) =>
            {
                let b = s.as_bytes();
                Segment::Id([b[0], b[1], b[2]])
            }
            _ => return Err(bad),
        };
        let Some(rest) = rest else {
            return Ok(Hl7::Path { segment, field: None, whole_segment: true, rep: None, comp: None, sub: None });
        };
        let mut parts = rest.split('.');
        let field_part = parts.next().ok_or(bad)?;
        let (field_text, rep) = match field_part.split_once('[') {
            Some((f, r)) => (f, number(r.strip_suffix(']').ok_or(bad)?).ok_or(bad)?),
            None => (field_part, None),
        };
        let field = number(field_text).ok_or(bad)?;
        let comp = parts.next().map(number).map(|c| c.ok_or(bad)).transpose()?.flatten();
        let sub = parts.next().map(number).map(|c| c.ok_or(bad)).transpose()?.flatten();
        if parts.next().is_some() {
            return Err(bad);
        }
        Ok(Hl7::Path { segment, field, whole_segment: false, rep, comp, sub })
    }

    /// The data type the selector is known to select (type selectors only).
    pub fn data_type(&self) -> Option<&'static str> {
        match self {
            Hl7::Type(t) => Some(t),
            Hl7::Path { .. } | Hl7::Age => None,
        }
    }

    /// True when everything `later` selects, `self` selects (for the shadowing lint).
    pub fn covers(&self, later: &Hl7) -> bool {
        let lvl = |a: Option<u32>, b: Option<u32>| a.is_none() || a == b;
        match (self, later) {
            (Hl7::Type(a), Hl7::Type(b)) => a == b,
            (Hl7::Age, Hl7::Age) => true,
            (
                Hl7::Path { segment: s1, field: f1, rep: r1, comp: c1, sub: u1, .. },
                Hl7::Path { segment: s2, field: f2, rep: r2, comp: c2, sub: u2, .. },
            ) => s1.covers(*s2) && lvl(*f1, *f2) && lvl(*r1, *r2) && lvl(*c1, *c2) && lvl(*u1, *u2),
            (Hl7::Path { segment: Segment::Any, field: None, rep: None, comp: None, sub: None, .. }, Hl7::Type(_)) => {
                true
            }
            _ => false,
        }
    }
}

/// Where a FHIR selector starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Root {
    /// A resource of this type (`None`: any resource).
    Resource(Option<&'static str>),
    /// A node of this type, anywhere.
    Type(&'static str),
    /// `@age`: a number that is a person's age (the value of an `Age`, of a Quantity with an
    /// age unit, or of an Observation or component whose code is a LOINC age code).
    Age,
}

/// A FHIR selector: a root and element names below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fhir {
    /// Where it starts.
    pub root: Root,
    /// Element names below the root.
    pub steps: Vec<String>,
}

impl Fhir {
    /// Parses a selector.
    pub fn parse(text: &str) -> Result<Fhir, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        let (typed, text) = match text.strip_prefix('@') {
            Some(t) => (true, t),
            None => (false, text),
        };
        if typed && text == "age" {
            return Ok(Fhir { root: Root::Age, steps: Vec::new() });
        }
        let mut parts = text.split('.');
        let head = parts.next().ok_or(bad)?;
        let root = if typed {
            let id = defs::type_id(head.as_bytes()).ok_or(bad)?;
            Root::Type(defs::type_name(id))
        } else if head == "*" {
            Root::Resource(None)
        } else {
            let id = defs::type_id(head.as_bytes()).filter(|id| defs::is_resource(*id)).ok_or(bad)?;
            Root::Resource(Some(defs::type_name(id)))
        };
        let mut steps = Vec::new();
        for p in parts {
            let ok = !p.is_empty()
                && p.len() <= 64
                && p.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                && p.bytes().all(|b| b.is_ascii_alphanumeric());
            if !ok {
                return Err(bad);
            }
            steps.push(p.to_owned());
        }
        if root == Root::Resource(None) && steps.is_empty() {
            return Err(bad);
        }
        Ok(Fhir { root, steps })
    }

    /// The type the selector is known to select (a type selector without steps).
    pub fn data_type(&self) -> Option<&'static str> {
        match self.root {
            Root::Type(t) if self.steps.is_empty() => Some(t),
            _ => None,
        }
    }

    /// True when everything `later` selects, `self` selects (for the shadowing lint).
    pub fn covers(&self, later: &Fhir) -> bool {
        let root = match (self.root, later.root) {
            (Root::Resource(None), Root::Resource(_)) => true,
            (a, b) => a == b,
        };
        root && self.steps.len() <= later.steps.len() && self.steps.iter().zip(&later.steps).all(|(a, b)| a == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hl7_selectors() {
        assert!(Hl7::parse("PID-5").is_ok());
        assert!(Hl7::parse("PID-3[*].1").is_ok());
        assert!(Hl7::parse("NK1-*").is_ok());
        assert!(Hl7::parse("Z*").is_ok());
        assert!(Hl7::parse("ZPI-2.1.1").is_ok());
        assert_eq!(Hl7::parse("@XPN"), Ok(Hl7::Type("XPN")));
        assert!(Hl7::parse("@NOPE").is_err());
        assert!(Hl7::parse("QQQ-1").is_err());
        assert!(Hl7::parse("PID-0").is_err());
        assert!(Hl7::parse("PID-5.1.1.1").is_err());
        let a = Hl7::parse("PID").unwrap_or(Hl7::Type("ST"));
        assert!(a.covers(&Hl7::parse("PID-3[*].1").unwrap_or(Hl7::Type("ST"))));
    }

    #[test]
    fn fhir_selectors() {
        assert!(Fhir::parse("Patient.name").is_ok());
        assert!(Fhir::parse("*.id").is_ok());
        assert!(Fhir::parse("@HumanName").is_ok());
        assert!(Fhir::parse("@Reference.reference").is_ok());
        assert!(Fhir::parse("Patinet.name").is_err());
        assert!(Fhir::parse("*").is_err());
    }
}
