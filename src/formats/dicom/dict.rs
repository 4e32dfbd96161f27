//! The DICOM data dictionary and the standard's other tables, as look-ups over the generated
//! `tables.rs` (PS3.6 data dictionary, PS3.5 transfer syntaxes, PS3.4 SOP classes, PS3.3 IODs
//! and modules, PS3.15 Annex E): [`Vr`], [`element`], [`transfer_syntax`], [`sop_class`].
//!
//! What it does not do: read values (see `read`), or decide what a finding is (see `validate`).

use super::tables;

/// A value representation: its two letters (PS3.5 Table 6.2-1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Vr(pub [u8; 2]);

/// The value representations of PS3.5 Table 6.2-1.
const ALL_VRS: [&[u8; 2]; 34] = [
    b"AE", b"AS", b"AT", b"CS", b"DA", b"DS", b"DT", b"FD", b"FL", b"IS", b"LO", b"LT", b"OB", b"OD", b"OF", b"OL",
    b"OV", b"OW", b"PN", b"SH", b"SL", b"SQ", b"SS", b"ST", b"SV", b"TM", b"UC", b"UI", b"UL", b"UN", b"UR", b"US",
    b"UT", b"UV",
];

impl Vr {
    /// Sequence of items.
    pub const SQ: Vr = Vr(*b"SQ");
    /// Unknown.
    pub const UN: Vr = Vr(*b"UN");
    /// Other byte.
    pub const OB: Vr = Vr(*b"OB");
    /// Other word.
    pub const OW: Vr = Vr(*b"OW");
    /// Unsigned long.
    pub const UL: Vr = Vr(*b"UL");
    /// Unique identifier.
    pub const UI: Vr = Vr(*b"UI");
    /// Item and delimitation elements (no VR): written `--`, never read from an input.
    pub const NONE: Vr = Vr(*b"--");

    /// The VR of two bytes, if they name one.
    pub fn from_bytes(b: [u8; 2]) -> Option<Vr> {
        ALL_VRS.iter().any(|v| **v == b).then_some(Vr(b))
    }

    /// The VR's two letters.
    pub fn as_str(self) -> &'static str {
        ALL_VRS.iter().find(|v| ***v == self.0).and_then(|v| std::str::from_utf8(&v[..]).ok()).unwrap_or("--")
    }

    /// True when an explicit VR header has 2 reserved bytes and a 4-byte length (PS3.5 7.1.2).
    pub fn long_header(self) -> bool {
        matches!(
            &self.0,
            b"OB" | b"OD" | b"OF" | b"OL" | b"OV" | b"OW" | b"SQ" | b"SV" | b"UC" | b"UN" | b"UR" | b"UT" | b"UV"
        )
    }

    /// True for the VRs of bulk values (binary of any size): OB, OD, OF, OL, OV, OW, UN.
    pub fn is_bulk(self) -> bool {
        matches!(&self.0, b"OB" | b"OD" | b"OF" | b"OL" | b"OV" | b"OW" | b"UN")
    }

    /// True for the character-string VRs (values split on `\` unless single-valued).
    pub fn is_text(self) -> bool {
        matches!(
            &self.0,
            b"AE"
                | b"AS"
                | b"CS"
                | b"DA"
                | b"DS"
                | b"DT"
                | b"IS"
                | b"LO"
                | b"LT"
                | b"PN"
                | b"SH"
                | b"ST"
                | b"TM"
                | b"UC"
                | b"UI"
                | b"UR"
                | b"UT"
        )
    }

    /// True for the text VRs whose value is one value (no `\` splitting): LT, ST, UT, UR.
    pub fn is_single_text(self) -> bool {
        matches!(&self.0, b"LT" | b"ST" | b"UT" | b"UR")
    }

    /// The size of one binary number (US 2, UL 4, FD 8, AT 4 ...), for the fixed-size VRs.
    pub fn binary_size(self) -> Option<usize> {
        match &self.0 {
            b"US" | b"SS" => Some(2),
            b"UL" | b"SL" | b"FL" | b"AT" => Some(4),
            b"FD" | b"SV" | b"UV" => Some(8),
            _ => None,
        }
    }
}

/// A module's usage in an IOD (PS3.3 Annex A).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Usage {
    /// M.
    Mandatory,
    /// C: required under a condition stated in prose.
    Conditional,
    /// U.
    User,
}

/// An attribute's type in a module (PS3.3 Section 7.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttrType {
    /// Required, with a value.
    T1,
    /// Required with a value under a condition.
    T1C,
    /// Required, may be empty.
    T2,
    /// Required, may be empty, under a condition.
    T2C,
    /// Optional.
    T3,
}

/// A dictionary entry.
#[derive(Copy, Clone, Debug)]
pub struct Entry {
    /// The VR, alternatives joined by `|` (`US|SS`); `""` when the dictionary gives none.
    pub vr: &'static str,
    /// The value multiplicity (`1`, `1-n`, `2-2n`).
    pub vm: &'static str,
    /// The keyword (`PatientName`).
    pub keyword: &'static str,
}

/// The dictionary entry of a standard tag (exact, then repeating groups); `None` for private
/// tags and tags the dictionary does not have.
pub fn element(tag: u32) -> Option<Entry> {
    if let Ok(i) = tables::ELEMENTS.binary_search_by_key(&tag, |e| e.0) {
        let (_, vr, vm, keyword) = tables::ELEMENTS[i];
        return Some(Entry { vr, vm, keyword });
    }
    if tag & 0xFFFF == 0 && tag >> 16 != 0xFFFE {
        // Group length (PS3.5 7.2).
        return Some(Entry { vr: "UL", vm: "1", keyword: "GroupLength" });
    }
    tables::REPEATING.iter().find(|r| tag & r.0 == r.1).map(|&(_, _, vr, vm, keyword)| Entry { vr, vm, keyword })
}

/// The tag of a dictionary keyword (`PatientName`).
pub fn keyword(name: &str) -> Option<u32> {
    if name.is_empty() {
        return None;
    }
    tables::ELEMENTS.iter().find(|e| e.3 == name).map(|e| e.0)
}

/// The VR a tag has in implicit VR syntax: OW where the dictionary allows OW (PS3.5 A.1),
/// else the dictionary's first alternative (`US|SS` reads as US), LO for private creators, UN
/// for other private and unknown tags.
pub fn implicit_vr(tag: u32) -> Vr {
    if is_private(tag) {
        return if tag & 0xFF00 == 0 && tag & 0xFF >= 0x10 { Vr(*b"LO") } else { Vr::UN };
    }
    element(tag)
        .and_then(|e| {
            // PS3.5 A.1: OB or OW (Pixel Data, overlays, LUT data) is OW in implicit VR.
            if e.vr.split('|').any(|v| v == "OW") {
                return Some(Vr::OW);
            }
            let b = e.vr.as_bytes();
            (b.len() >= 2).then(|| Vr::from_bytes([b[0], b[1]])).flatten()
        })
        .unwrap_or(Vr::UN)
}

/// True when the dictionary gives the tag `US or SS` (pixel values: which one follows Pixel
/// Representation (0028,0103), PS3.3 C.7.6.3.1), the LUT descriptors left out (US in practice).
pub fn us_or_ss(tag: u32) -> bool {
    !matches!(tag, 0x0028_1101..=0x0028_1103 | 0x0028_3002) && element(tag).is_some_and(|e| e.vr == "US|SS")
}

/// True for a private tag (odd group, not 0001, 0003, 0005, 0007, FFFF).
pub fn is_private(tag: u32) -> bool {
    let g = tag >> 16;
    g % 2 == 1 && g > 0x0008 && g != 0xFFFF
}

/// True for a private creator element (gggg,0010-00FF).
pub fn is_private_creator(tag: u32) -> bool {
    is_private(tag) && (0x10..=0xFF).contains(&(tag & 0xFFFF))
}

/// A transfer syntax of the tables.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TransferSyntax {
    /// Its index in the table.
    pub index: usize,
    /// Its UID (a standard constant, not a value of the patient's).
    pub uid: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Explicit VR.
    pub explicit: bool,
    /// Little endian.
    pub little: bool,
    /// The dataset is deflated.
    pub deflated: bool,
    /// Pixel data is encapsulated.
    pub encapsulated: bool,
}

/// The transfer syntax of a UID (trailing NUL or space padding ignored).
pub fn transfer_syntax(uid: &[u8]) -> Option<TransferSyntax> {
    let uid = trim_uid(uid);
    tables::TRANSFER_SYNTAXES.iter().enumerate().find(|(_, t)| t.0.as_bytes() == uid).map(
        |(index, &(uid, name, explicit, little, deflated, encapsulated))| TransferSyntax {
            index,
            uid,
            name,
            explicit,
            little,
            deflated,
            encapsulated,
        },
    )
}

/// A SOP class: its index in the table, UID, name, and IOD index.
pub fn sop_class(uid: &[u8]) -> Option<(usize, &'static str, &'static str, u16)> {
    let uid = trim_uid(uid);
    // Sorted by UID (the generator sorts the strings by code point, which is byte order here).
    let i = tables::SOP_CLASSES.binary_search_by(|s| s.0.as_bytes().cmp(uid)).ok()?;
    tables::SOP_CLASSES.get(i).map(|&(u, n, iod)| (i, u, n, iod))
}

/// The type another module of the IOD gives `tag` over the type of the module that lists it
/// (PS3.3: "This type definition shall override the definition in the ... Module").
pub fn iod_override(iod: u16, tag: u32) -> Option<AttrType> {
    let i = tables::IOD_OVERRIDES.binary_search_by(|&(n, t, _)| (n, t).cmp(&(iod, tag))).ok()?;
    tables::IOD_OVERRIDES.get(i).map(|o| o.2)
}

/// An IOD's modules: (module's attributes, usage, a condition is stated).
pub fn iod_modules(iod: u16) -> impl Iterator<Item = (&'static [(u32, AttrType)], Usage, bool)> {
    let mods: &[(u16, Usage, bool)] = tables::IODS.get(usize::from(iod)).map_or(&[], |i| i.1);
    mods.iter().filter_map(|&(m, u, c)| tables::MODULES.get(usize::from(m)).map(|m| (m.1, u, c)))
}

/// An enumerated value list of an attribute of a module (PS3.3 "Enumerated Values:"): the tag
/// path from the top level (sequences, then the attribute; no item numbers), the value position
/// (0: every value of a VM 1 attribute; n: value n), the listed values (numbers in decimal).
#[derive(Copy, Clone, Debug)]
pub struct Enumeration {
    /// Tags from the top level to the attribute.
    pub path: &'static [u32],
    /// 0: every value; n: value n.
    pub position: u8,
    /// The values the standard lists.
    pub values: &'static [&'static str],
}

/// The enumerated value lists of an IOD's modules that apply to a dataset of it: every list
/// of a mandatory module, and of a conditional or user module only when the path's first tag
/// is in no other module of the IOD (so the attribute's presence is that module's).
pub fn iod_enumerations(iod: u16) -> Vec<Enumeration> {
    let mods: &[(u16, Usage, bool)] = tables::IODS.get(usize::from(iod)).map_or(&[], |i| i.1);
    let mut out = Vec::new();
    for &(m, usage, _) in mods {
        let start = tables::MODULE_ENUMS.partition_point(|e| e.0 < m);
        for &(_, path, position, list) in tables::MODULE_ENUMS[start..].iter().take_while(|e| e.0 == m) {
            let Some(&first) = path.first() else { continue };
            if usage != Usage::Mandatory {
                let elsewhere = mods.iter().any(|&(o, _, _)| {
                    o != m && tables::MODULES.get(usize::from(o)).is_some_and(|x| x.1.iter().any(|a| a.0 == first))
                });
                if elsewhere {
                    continue;
                }
            }
            let values = tables::ENUM_LISTS.get(usize::from(list)).copied().unwrap_or(&[]);
            out.push(Enumeration { path, position, values });
        }
    }
    out
}

/// What a type 1C or 2C attribute's condition asks of another attribute (PS3.3 "Required if
/// ... is present | is not present | is <values>").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    /// The attribute is present.
    Present(u32),
    /// The attribute is absent.
    Absent(u32),
    /// The attribute's value (0) or value `n` is one of the values.
    OneOf(u32, u8, &'static [&'static str]),
}

/// An IOD's modules with their index (see [`module_conditions`]): (index, the module's
/// top-level attributes, usage).
pub fn iod_modules_indexed(iod: u16) -> impl Iterator<Item = (u16, &'static [(u32, AttrType)], Usage)> {
    let mods: &[(u16, Usage, bool)] = tables::IODS.get(usize::from(iod)).map_or(&[], |i| i.1);
    mods.iter().filter_map(|&(m, u, _)| tables::MODULES.get(usize::from(m)).map(|x| (m, x.1, u)))
}

/// The conditions read for a 1C or 2C attribute of a module (alternatives: any one makes it
/// required); empty when its condition is prose the generator does not read.
pub fn module_conditions(module: u16, tag: u32) -> impl Iterator<Item = Condition> {
    let start = tables::MODULE_CONDITIONS.partition_point(|c| (c.0, c.1) < (module, tag));
    tables::MODULE_CONDITIONS[start..].iter().take_while(move |c| (c.0, c.1) == (module, tag)).map(
        |&(_, _, t, op, pos, list)| match op {
            0 => Condition::Present(t),
            1 => Condition::Absent(t),
            _ => Condition::OneOf(t, pos, tables::ENUM_LISTS.get(usize::from(list)).copied().unwrap_or(&[])),
        },
    )
}

/// What a module says of the items of one of its sequences (PS3.3, a macro's rows flattened into
/// the module at any depth; see the generator's `item_requirements`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ItemRule {
    /// The items' type 1, 2, 1C and 2C attributes: (tag, type), and the set's index for
    /// [`item_conditions`].
    Attributes(u16, &'static [(u32, AttrType)]),
    /// The package's rows cannot tell which attributes an item holds (the functional groups, a
    /// content item): the items are not checked.
    NotChecked,
}

/// What `module` says of the items of the sequence at `path` (the sequences' tags from the top
/// level to it), when the module has that sequence.
pub fn module_item_rule(module: u16, path: &[u32]) -> Option<ItemRule> {
    let i = tables::MODULE_ITEMS.binary_search_by(|&(m, p, _)| (m, p).cmp(&(module, path))).ok()?;
    let set = tables::MODULE_ITEMS.get(i)?.2;
    Some(match tables::ITEM_SETS.get(usize::from(set)) {
        Some(attrs) => ItemRule::Attributes(set, attrs),
        None => ItemRule::NotChecked,
    })
}

/// The conditions read for a 1C or 2C attribute of an item set (alternatives; each names another
/// attribute of the same item); empty when its condition is not read.
pub fn item_conditions(set: u16, tag: u32) -> impl Iterator<Item = Condition> {
    let start = tables::ITEM_CONDITIONS.partition_point(|c| (c.0, c.1) < (set, tag));
    tables::ITEM_CONDITIONS[start..].iter().take_while(move |c| (c.0, c.1) == (set, tag)).map(
        |&(_, _, t, op, pos, list)| match op {
            0 => Condition::Present(t),
            1 => Condition::Absent(t),
            _ => Condition::OneOf(t, pos, tables::ENUM_LISTS.get(usize::from(list)).copied().unwrap_or(&[])),
        },
    )
}

/// True when a module of the IOD has Number of Frames (0028,0008) at its top level (the
/// Multi-frame Module, PS3.3 C.7.6.6, or another module of a multi-frame IOD).
pub fn iod_has_frames(iod: u16) -> bool {
    iod_modules(iod).any(|(attrs, _, _)| attrs.iter().any(|a| a.0 == 0x0028_0008))
}

/// The Media Storage SOP Class of a DICOMDIR (PS3.4 Annex F, PS3.10 8.6): its IOD, the Basic
/// Directory (PS3.3 F.3), is not in the package's tables.
pub const MEDIA_STORAGE_DIRECTORY: &str = "1.2.840.10008.1.3.10";

/// The enumerated values of the Basic Directory IOD (PS3.3 F.3.2.2, written in the generator).
pub fn directory_enumerations() -> Vec<Enumeration> {
    tables::DIRECTORY_ENUMS
        .iter()
        .map(|&(path, position, list)| Enumeration {
            path,
            position,
            values: tables::ENUM_LISTS.get(usize::from(list)).copied().unwrap_or(&[]),
        })
        .collect()
}

/// Whether PS3.5 Section 8.2 allows the standard Photometric Interpretation `pi` (PS3.3
/// C.7.6.3.1.2) for pixel data encapsulated under transfer syntax `encapsulated` (its UID, a
/// constant of the tables) or native (`None`), with `samples` Samples per Pixel (`None`: absent
/// or unreadable, any row of the syntax). `None` when the section does not constrain the pair
/// here (a term that is not a standard one; a syntax whose table is not written, as MPEG and
/// HTJ2K; a Samples per Pixel none of its rows has), else whether it is valid. Native pixel data
/// may have any standard term but YBR_RCT, YBR_ICT and YBR_PARTIAL_420.
pub fn photometric_allowed(encapsulated: Option<&str>, samples: Option<u16>, pi: &[u8]) -> Option<bool> {
    if !tables::PHOTOMETRIC_STANDARD.iter().any(|t| t.as_bytes() == pi) {
        return None;
    }
    let Some(ts) = encapsulated else {
        return Some(!tables::PHOTOMETRIC_NOT_NATIVE.iter().any(|t| t.as_bytes() == pi));
    };
    let mut rows = tables::PHOTOMETRIC_ENCAPSULATED
        .iter()
        .filter(|r| r.0 == ts && samples.is_none_or(|n| u16::from(r.1) == n))
        .peekable();
    rows.peek()?;
    Some(rows.any(|r| r.2.iter().any(|t| t.as_bytes() == pi)))
}

/// A UID without its padding (a trailing NUL or space).
pub fn trim_uid(uid: &[u8]) -> &[u8] {
    let mut u = uid;
    while let [rest @ .., b'\0' | b' '] = u {
        u = rest;
    }
    u
}

/// The PS3.15 Table E.1-1 row of a tag: (Basic Profile action, options' actions).
pub fn profile(tag: u32) -> Option<(&'static str, &'static [&'static str; 10])> {
    tables::PROFILE.iter().find(|p| tag & p.0 == p.1).map(|p| (p.2, &p.3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_lookups() {
        let e = element(0x0010_0010).expect("PatientName");
        assert_eq!((e.vr, e.vm, e.keyword), ("PN", "1", "PatientName"));
        assert_eq!(element(0x0002_0010).map(|e| e.keyword), Some("TransferSyntaxUID"));
        assert_eq!(element(0x6002_3000).map(|e| e.vr), Some("OB|OW"));
        assert_eq!(implicit_vr(0x0028_0010), Vr(*b"US"));
        assert_eq!(implicit_vr(0x0009_0010), Vr(*b"LO"));
        assert_eq!(implicit_vr(0x0009_1001), Vr::UN);
        assert!(transfer_syntax(b"1.2.840.10008.1.2\0").is_some_and(|t| !t.explicit && t.little));
        assert!(sop_class(b"1.2.840.10008.5.1.4.1.1.2").is_some_and(|s| s.2 == "CT Image Storage"));
        assert!(iod_modules(sop_class(b"1.2.840.10008.5.1.4.1.1.2").map_or(0, |s| s.3)).count() > 10);
        assert_eq!(profile(0x0010_0010).map(|p| p.0), Some("Z"));
        assert!(Vr::from_bytes(*b"ZZ").is_none());
    }

    fn iod_of(uid: &[u8]) -> u16 {
        sop_class(uid).map_or(u16::MAX, |s| s.3)
    }

    #[test]
    fn item_rules_of_the_ct_iod() {
        let ct = iod_of(b"1.2.840.10008.5.1.4.1.1.2");
        let rules = |path: &[u32]| {
            iod_modules_indexed(ct).filter_map(|(m, _, _)| module_item_rule(m, path)).collect::<Vec<_>>()
        };
        // Source Image Sequence (General Image): the Image SOP Instance Reference Macro's type 1 UIDs.
        let source = rules(&[0x0008_2112]);
        assert!(!source.is_empty());
        for r in &source {
            let ItemRule::Attributes(_, attrs) = r else { panic!("Source Image Sequence not checked") };
            assert!(attrs.contains(&(0x0008_1150, AttrType::T1)) && attrs.contains(&(0x0008_1155, AttrType::T1)));
        }
        // Acquisition Context Sequence (Enhanced CT's Acquisition Context Module): content
        // items, not checked.
        let enhanced = iod_of(b"1.2.840.10008.5.1.4.1.1.2.1");
        let context: Vec<_> =
            iod_modules_indexed(enhanced).filter_map(|(m, _, _)| module_item_rule(m, &[0x0040_0555])).collect();
        assert_eq!(context, vec![ItemRule::NotChecked]);
        // A path no module has.
        assert!(rules(&[0x0008_2112, 0x0010_0010]).is_empty());
    }

    #[test]
    fn frames_and_photometric_interpretations() {
        assert!(!iod_has_frames(iod_of(b"1.2.840.10008.5.1.4.1.1.2")));
        assert!(!iod_has_frames(iod_of(b"1.2.840.10008.5.1.4.1.1.7")));
        assert!(iod_has_frames(iod_of(b"1.2.840.10008.5.1.4.1.1.3.1")));
        assert!(iod_has_frames(iod_of(b"1.2.840.10008.5.1.4.1.1.2.1")));
        let baseline = Some("1.2.840.10008.1.2.4.50");
        assert_eq!(photometric_allowed(baseline, Some(3), b"YBR_FULL_422"), Some(true));
        assert_eq!(photometric_allowed(baseline, Some(3), b"YBR_FULL"), Some(false));
        assert_eq!(photometric_allowed(baseline, None, b"MONOCHROME2"), Some(true));
        // Samples per Pixel no row of the table has, a syntax without a table, a local term.
        assert_eq!(photometric_allowed(baseline, Some(4), b"YBR_FULL"), None);
        assert_eq!(photometric_allowed(Some("1.2.840.10008.1.2.4.100"), Some(3), b"RGB"), None);
        assert_eq!(photometric_allowed(baseline, Some(3), b"LOCAL"), None);
        assert_eq!(photometric_allowed(None, Some(3), b"YBR_ICT"), Some(false));
        assert_eq!(photometric_allowed(None, Some(3), b"YBR_FULL_422"), Some(true));
    }
}
