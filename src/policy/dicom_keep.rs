//! What `keep` can prove about the coded entry of a DICOM code sequence item (PS3.3 8.8,
//! Table 8.8-1a: Code Value, Long Code Value, URN Code Value, Coding Scheme Designator, Code
//! Meaning), from the item it sits in.
//!
//! An item's code is proven when its Coding Scheme Designator (0008,0102) is registered
//! (PS3.16 Table 8-1, `codes::SCHEMES`) and its code value is valid for that scheme: SCT a
//! SNOMED CT identifier (partition and Verhoeff check digit), LN a LOINC code (mod-10 check
//! digit), UCUM a unit of UCUM's syntax, SRT a SNOMED RT id of PS3.16's SNOMED mapping, any
//! other scheme (DCM among them) a concept PS3.16's context groups list (`codes::CODES`). A
//! designator is proven when registered and, in an item with a code value, that code is
//! proven: the item is kept or dummied as one. A Code Meaning is proven when it is PS3.16's
//! meaning of the item's proven code; when PS3.16 lists the code, its meaning is what is
//! written otherwise.
//!
//! What it does not do: check that a code belongs to the context group the attribute names, or
//! read values itself (the engine hands them over).

use std::collections::BTreeMap;

use crate::formats::dicom::codes;
use crate::formats::dicom::lex::Element;

use super::proof;

/// Code Value (SH).
pub(super) const CODE_VALUE: u32 = 0x0008_0100;
/// Coding Scheme Designator (SH).
pub(super) const DESIGNATOR: u32 = 0x0008_0102;
/// Code Meaning (LO).
pub(super) const MEANING: u32 = 0x0008_0104;
/// Long Code Value (UC).
pub(super) const LONG_CODE_VALUE: u32 = 0x0008_0119;
/// URN Code Value (UR).
pub(super) const URN_CODE_VALUE: u32 = 0x0008_0120;

/// The verdict on one attribute of a code item.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Proven: keep may write it.
    Proven,
    /// Not proven, but the standard gives the value to write (PS3.16's code meaning).
    Standard(&'static str),
    /// Not proven.
    Unproven,
}

/// True when `tag` is an attribute of a code item this module proves.
pub(super) fn is_code_attribute(tag: u32) -> bool {
    matches!(tag, CODE_VALUE | DESIGNATOR | MEANING | LONG_CODE_VALUE | URN_CODE_VALUE)
}

/// A value without its padding (trailing spaces and NULs, leading spaces).
fn trimmed(v: &[u8]) -> &[u8] {
    let v = v.trim_ascii();
    let end = v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    &v[..end]
}

/// True when `designator` is a registered coding scheme designator.
pub(super) fn registered(designator: &[u8]) -> bool {
    codes::SCHEMES.binary_search_by(|s| s.as_bytes().cmp(designator)).is_ok()
}

/// PS3.16's concept (designator, code): its meaning.
fn concept(designator: &[u8], code: &[u8]) -> Option<&'static str> {
    codes::CODES
        .binary_search_by(|(s, c, _)| (s.as_bytes(), c.as_bytes()).cmp(&(designator, code)))
        .ok()
        .and_then(|i| codes::CODES.get(i))
        .map(|(_, _, m)| *m)
}

/// True when `code` is valid for the registered scheme `designator`.
pub(super) fn code_valid(designator: &[u8], code: &[u8]) -> bool {
    if !registered(designator) || code.is_empty() {
        return false;
    }
    match designator {
        b"SCT" => proof::snomed(code),
        b"LN" => proof::loinc(code),
        b"UCUM" => proof::is_ucum(code),
        b"SRT" => codes::SRT.binary_search_by(|s| s.as_bytes().cmp(code)).is_ok(),
        _ => concept(designator, code).is_some(),
    }
}

/// The values of an item's coded entry: the designator and the code value (the first of Code
/// Value, Long Code Value, URN Code Value present), each `None` when absent.
pub(super) struct Item<'v> {
    /// Coding Scheme Designator.
    pub designator: Option<&'v [u8]>,
    /// The code value.
    pub code: Option<&'v [u8]>,
}

/// Where the coded entry of each dataset (item) is: by the item's index (`u32::MAX` the
/// top-level dataset), the first Coding Scheme Designator and the first code value (Code
/// Value, Long Code Value or URN Code Value) in it. Built in one pass over the elements, so
/// proving every attribute of every item is linear in the input.
#[derive(Debug, Default)]
pub(super) struct Index {
    items: BTreeMap<u32, (Option<usize>, Option<usize>)>,
}

impl Index {
    /// The index of `els`.
    pub(super) fn build(els: &[Element]) -> Index {
        let mut items: BTreeMap<u32, (Option<usize>, Option<usize>)> = BTreeMap::new();
        for (i, e) in els.iter().enumerate() {
            match e.tag {
                DESIGNATOR => {
                    items.entry(e.parent).or_default().0.get_or_insert(i);
                }
                CODE_VALUE | LONG_CODE_VALUE | URN_CODE_VALUE => {
                    items.entry(e.parent).or_default().1.get_or_insert(i);
                }
                _ => {}
            }
        }
        Index { items }
    }

    /// The coded entry of the dataset (item) element `e` sits in, its values from `value`.
    pub(super) fn item<'v>(&self, e: &Element, value: &dyn Fn(usize) -> &'v [u8]) -> Item<'v> {
        let (d, c) = self.items.get(&e.parent).copied().unwrap_or_default();
        Item { designator: d.map(|j| trimmed(value(j))), code: c.map(|j| trimmed(value(j))) }
    }
}

impl<'v> Item<'v> {
    /// True when the item's code is proven (a registered designator, a code valid for it).
    fn code_proven(&self) -> bool {
        matches!((self.designator, self.code), (Some(d), Some(c)) if code_valid(d, c))
    }

    /// The verdict on the item's attribute `tag` whose value is `v`.
    pub(super) fn prove(&self, tag: u32, v: &[u8]) -> Verdict {
        let v = trimmed(v);
        let proven = match tag {
            CODE_VALUE | LONG_CODE_VALUE | URN_CODE_VALUE => self.code_proven() && self.code == Some(v),
            DESIGNATOR => registered(v) && (self.code.is_none() || self.code_proven()),
            MEANING => {
                let (Some(d), Some(c)) = (self.designator, self.code) else { return Verdict::Unproven };
                if !self.code_proven() {
                    return Verdict::Unproven;
                }
                match concept(d, c) {
                    Some(m) if m.as_bytes() == v => true,
                    Some(m) => return Verdict::Standard(m),
                    None => false,
                }
            }
            _ => false,
        };
        if proven { Verdict::Proven } else { Verdict::Unproven }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_of_registered_schemes_are_proven_by_their_syntax_or_listing() {
        assert!(code_valid(b"DCM", b"121001"), "a DCM concept of PS3.16");
        assert!(!code_valid(b"DCM", b"999999999"), "not a DCM concept");
        assert!(code_valid(b"SCT", b"41549009"), "a SNOMED CT id with its check digit");
        assert!(!code_valid(b"SCT", b"41549008"), "a wrong check digit");
        assert!(code_valid(b"LN", b"33072-0"), "a LOINC code with its check digit");
        assert!(!code_valid(b"LN", b"33072-1"), "a wrong LOINC check digit");
        assert!(code_valid(b"UCUM", b"mm"), "a UCUM unit");
        assert!(!code_valid(b"99LOCAL", b"1"), "a local scheme is never registered");
        assert!(!code_valid(b"SCPECG", b"5.6.3-9-1"), "registered, no check or listing: unproven");
    }

    #[test]
    fn a_meaning_is_proven_only_as_the_standard_gives_it() {
        let item = Item { designator: Some(b"DCM"), code: Some(b"121001") };
        let m = concept(b"DCM", b"121001").expect("DCM 121001 is listed in PS3.16");
        assert_eq!(item.prove(MEANING, m.as_bytes()), Verdict::Proven);
        assert_eq!(item.prove(MEANING, b"a patient's words"), Verdict::Standard(m));
        let local = Item { designator: Some(b"99X"), code: Some(b"121001") };
        assert_eq!(local.prove(MEANING, m.as_bytes()), Verdict::Unproven);
        assert_eq!(local.prove(DESIGNATOR, b"99X"), Verdict::Unproven);
        assert_eq!(local.prove(CODE_VALUE, b"121001"), Verdict::Unproven);
        let unproven_code = Item { designator: Some(b"DCM"), code: Some(b"SMITH") };
        assert_eq!(unproven_code.prove(DESIGNATOR, b"DCM"), Verdict::Unproven, "the item is kept or dummied as one");
        let scheme_only = Item { designator: Some(b"DCM"), code: None };
        assert_eq!(scheme_only.prove(DESIGNATOR, b"DCM"), Verdict::Proven, "Coding Scheme Identification");
    }
}
