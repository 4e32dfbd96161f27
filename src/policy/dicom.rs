//! DICOM redaction: a data-channel writer that writes a Part 10 file under a policy's
//! `[[dicom]]` rules.
//!
//! Selectors: a tag `(GGGG,EEEE)` (hex), a data dictionary keyword (`PatientName`), `@private`
//! (every element of an odd group: private creators and blocks), a private element by its
//! block's creator `(GGGG,"CREATOR",EE)` (PS3.5 7.8.1: the element `EE` of the block that the
//! private creator element of group `GGGG` whose value is `CREATOR` reserves, wherever the block
//! sits: a creator at (0019,0010) makes the block (0019,10EE), at (0019,0011) (0019,11EE)), and a
//! VR `@UI`, `@CS`, ... (every element of that VR). A rule matches an element at any depth
//! (inside sequences too). A creator selector matches only where the block's creator is
//! unambiguous ([`block_creators`]); a `keep` of one can check the value against a VR and a
//! value multiplicity (`vr`, `vm`: PS3.15 Table E.3.10-1's columns, the Retain Safe Private
//! option), and the creator element of a block whose elements such a rule keeps is written
//! with them (the output stays readable), the creator of a block with nothing kept is not.
//!
//! Every element is decided by the first rule that matches it; an element no rule matches is
//! removed (fail closed). Actions: `remove` (the element, and a sequence with its items),
//! `empty` (a zero-length value; a sequence without items), `replace` (the rule's `value`),
//! `hash` (keyed: a UI value becomes `2.25.` and the decimal of 128 bits of an HMAC of the UID,
//! the same UID for the same input UID and key, across the files of a study; another VR gets
//! 16 upper-case hex digits), `generalize_date` (DA `YYYY0101`, DT `YYYY`), `date_shift` (a DA
//! or a DT's date moved by the file's keyed days, never 0, the same for every file of a patient:
//! keyed on Patient ID (0010,0020), else Study Instance UID (0020,000D); a date it cannot shift
//! is written as its `otherwise` dummy, else empty), and `keep`, which
//! keeps only what it proves: a CS, DS, IS, DA, TM, DT or AS of valid syntax, a UID under the
//! standard's root `1.2.840.10008.` (class and syntax UIDs, not instance UIDs; any UID with
//! `free_text = true`), binary numbers,
//! OB/OW/OF/OD/OL/OV values and pixel data, and a sequence (whose items' elements are decided
//! by their own rules); free text (AE, LO, SH, ST, LT, UT, UC, UR, PN) and UN only with
//! `free_text = true`. What a `keep` cannot prove is removed, or written as its `otherwise`: a
//! dummy, or `@hash`, the keyed hash (a UI's unproven UIDs, its standard ones kept). The file
//! meta group is rebuilt per PS3.10 Table 7.1-1 (`Redactor::meta`): version `00\01`, the SOP
//! Class and Instance UIDs as (0008,0016) and (0008,0018) are written, the transfer syntax the
//! dataset is written in, phiward's implementation class UID and version name; AE titles and
//! private information only when a rule naming the tag keeps them. Patient
//! Identity Removed (0012,0062) `YES` and De-identification Method (0012,0063) naming the
//! policy and the methods it declares are written, and the De-identification Method Code Sequence (0012,0064) of the
//! profile and options the policy declares (`dicom_deidentification_method`). A file whose
//! pixel data may show burned-in text ([`dicom_deid::at_risk`]) is refused
//! (`DICOM_BURNED_IN_ANNOTATION`, nothing written) unless the policy accepts the residual risk.
//! Other actions are not allowed for DICOM (`POLICY_ACTION_NOT_ALLOWED`).
//!
//! What it does not do: clean burned-in text from pixel data, check that the rules implement
//! the options a policy declares,
//! or write a file whose bulk values were left out of the record (over 32 MiB of bulk data):
//! nothing is written then, and the file counts as a fail-closed removal.

use std::ops::Range;

use toml::de::DeTable;

use super::action::{self, Action};
use super::dicom_clean;
use super::dicom_deid::{self, BurnedIn};
use super::dicom_keep;
use super::manifest::Counts;
use super::{Ctx, LoadError, Policy};
use crate::diag::Code;
use crate::formats::dicom::dict::{self, Vr};
use crate::formats::dicom::lex::{Element, Kind};
use crate::formats::dicom::read::Document;
use crate::formats::dicom::write::{self, Keep};
use crate::keys::Key;
use crate::phi::Disclosure;

/// A DICOM selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// One tag.
    Tag(u32),
    /// Every private element.
    Private,
    /// Every element of a VR.
    Vr(Vr),
    /// Tags matching a pattern with `x` digits, `(60xx,xxxx)`: (mask, value) for
    /// `tag & mask == value` (a repeating group).
    Masked(u32, u32),
    /// `(GGGG,"CREATOR",EE)`: the element `EE` of the private block of group `GGGG` whose
    /// creator's value is `CREATOR` (exactly, case-sensitive; the creator's trailing padding
    /// spaces are not part of it).
    PrivateBlock {
        /// The (odd) group.
        group: u16,
        /// The private creator (a valid LO value: 1 to 64 bytes, no backslash or control
        /// character, no leading or trailing space).
        creator: String,
        /// The element's offset in the block (its low byte).
        element: u8,
    },
}

impl Select {
    /// Parses a selector.
    pub fn parse(s: &str) -> Result<Select, Code> {
        let bad = Code::POLICY_UNKNOWN_SELECTOR;
        if s == "@private" {
            return Ok(Select::Private);
        }
        if s.contains('"') {
            return Select::parse_private_block(s).ok_or(bad);
        }
        if let Some(v) = s.strip_prefix('@') {
            let b = v.as_bytes();
            return match b {
                [a, c] => Vr::from_bytes([*a, *c]).map(Select::Vr).ok_or(bad),
                _ => Err(bad),
            };
        }
        if let Some(t) = s.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
            let (g, e) = t.split_once(',').ok_or(bad)?;
            if t.contains(['x', 'X']) {
                if g.len() != 4 || e.len() != 4 {
                    return Err(bad);
                }
                let (mut mask, mut value) = (0u32, 0u32);
                for c in g.chars().chain(e.chars()) {
                    mask <<= 4;
                    value <<= 4;
                    if !matches!(c, 'x' | 'X') {
                        mask |= 0xF;
                        value |= c.to_digit(16).ok_or(bad)?;
                    }
                }
                return Ok(Select::Masked(mask, value));
            }
            let hex = |h: &str| (h.len() == 4).then(|| u16::from_str_radix(h, 16).ok()).flatten();
            return match (hex(g), hex(e)) {
                (Some(g), Some(e)) => Ok(Select::Tag((u32::from(g) << 16) | u32::from(e))),
                _ => Err(bad),
            };
        }
        crate::formats::dicom::dict::keyword(s).map(Select::Tag).ok_or(bad)
    }

    /// `(GGGG,"CREATOR",EE)` (the notation of DCMTK's private dictionary): a private group
    /// (odd, not 0001 to 0007 or FFFF), a creator that is a valid LO value, two hex digits.
    fn parse_private_block(s: &str) -> Option<Select> {
        let t = s.strip_prefix('(')?.strip_suffix(')')?;
        let (g, rest) = t.split_once(",\"")?;
        let (creator, e) = rest.rsplit_once("\",")?;
        let hex_digits = |h: &str, n: usize| h.len() == n && h.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex_digits(g, 4) || !hex_digits(e, 2) {
            return None;
        }
        let group = u16::from_str_radix(g, 16).ok()?;
        let element = u8::from_str_radix(e, 16).ok()?;
        let valid = creator_is_lo(creator.as_bytes())
            && !creator.starts_with(' ')
            && !creator.ends_with(' ')
            && dict::is_private(u32::from(group) << 16);
        valid.then(|| Select::PrivateBlock { group, creator: creator.to_owned(), element })
    }

    /// True when the selector matches `e`; `creator`: the value of the private creator of
    /// `e`'s block, trailing spaces trimmed, when it is unambiguous ([`block_creators`]).
    fn matches(&self, e: &Element, creator: Option<&[u8]>) -> bool {
        match self {
            Select::Tag(t) => *t == e.tag,
            Select::Private => dict::is_private(e.tag),
            Select::Vr(v) => *v == e.vr,
            Select::Masked(mask, value) => e.tag & mask == *value,
            Select::PrivateBlock { group, creator: c, element } => {
                e.tag >> 16 == u32::from(*group)
                    && e.tag & 0xFF == u32::from(*element)
                    && e.tag & 0xFF00 >= 0x1000
                    && creator == Some(c.as_bytes())
            }
        }
    }
}

/// True for a valid private creator value (LO, PS3.5 6.2 and 7.8.1: 1 to 64 bytes, VM 1: no
/// backslash, no control character but ESC), trailing spaces already trimmed.
fn creator_is_lo(v: &[u8]) -> bool {
    (1..=64).contains(&v.len()) && v.iter().all(|&b| (b >= 0x20 && b != 0x7F && b != b'\\') || b == 0x1B)
}

/// The value multiplicity a `vm` names: `1`, `3-4`, `1-n` (min, max; `n` is no limit).
fn parse_vm(s: &str) -> Option<(u32, u32)> {
    let num = |t: &str| {
        (!t.is_empty() && t.len() <= 4 && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
    };
    let (min, max) = match s.split_once('-') {
        Some((a, "n")) => (num(a)?, u32::MAX),
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(s)?, num(s)?),
    };
    (min >= 1 && min <= max).then_some((min, max))
}

/// A DICOM rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The selector.
    pub select: Select,
    /// The action.
    pub action: Action,
    /// `keep` also keeps free text.
    pub free_text: bool,
    /// The rule states why what it keeps is safe.
    pub documented: bool,
    /// Line and column of the selector.
    pub at: (u32, u32),
    /// `otherwise`: what a `keep` writes for a value it cannot prove, instead of removing it.
    pub otherwise: Option<Otherwise>,
    /// `vr` and `vm` of a `keep` of a private element by its creator: the VR its value must be
    /// a valid instance of (the element's own VR must be it or UN) and the multiplicity.
    pub private_vr: Option<(Vr, Option<(u32, u32)>)>,
    /// `action = "clean"` (PS3.15 E.1's C; [`Rule::action`] is `keep`): text kept when every
    /// word of it is known not to identify (`dicom_clean`), else the `otherwise` (a dummy,
    /// `@empty`: written empty, or none: removed).
    pub clean: bool,
}

/// What a DICOM `keep` writes for a value it cannot prove (`otherwise = "..."`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Otherwise {
    /// A dummy, written whatever the input holds.
    Dummy(String),
    /// `otherwise = "@hash"`: what `hash` writes (keyed; PS3.15 E.1.1's U for a UI: each
    /// unproven UID becomes `2.25.<decimal>`, the same for the same UID and key, and a UID the
    /// `keep` proves stays); without a key, removed.
    Hash,
    /// `otherwise = "@empty"` (a `clean` only): written empty, the element still present.
    Empty,
}

impl Otherwise {
    /// `@hash`, or a dummy (the policy loader refuses another `@` name).
    fn parse(s: String) -> Otherwise {
        match s.as_str() {
            "@hash" => Otherwise::Hash,
            "@empty" => Otherwise::Empty,
            _ => Otherwise::Dummy(s),
        }
    }
}

impl Rule {
    pub(super) fn build(ctx: &Ctx<'_>, t: &DeTable<'_>, span: Range<usize>) -> Result<Rule, LoadError> {
        let parts = super::rule_parts_in(ctx, t, span, true)?;
        let select = Select::parse(parts.select).map_err(|c| ctx.err(c, parts.select_span.clone()))?;
        let allowed = matches!(
            parts.action,
            Action::Keep
                | Action::Remove
                | Action::Empty
                | Action::Replace(_)
                | Action::Hash
                | Action::GeneralizeDate
                | Action::DateShift(_)
        ) && parts.types.is_empty();
        if !allowed {
            return Err(ctx.err(Code::POLICY_ACTION_NOT_ALLOWED, parts.action_span));
        }
        let otherwise = parts.otherwise.map(Otherwise::parse);
        // `vr` (and `vm` with it) only on a `keep` of a private element by its creator, a VR
        // whose values the engine checks.
        let private_vr = match (parts.vr, parts.vm) {
            (None, None) => None,
            (None, Some((_, span))) => return Err(ctx.err(Code::POLICY_INVALID_VALUE, span)),
            (Some((v, span)), vm) => {
                let block = matches!(select, Select::PrivateBlock { .. });
                let vr = match v.as_bytes() {
                    [a, b] => Vr::from_bytes([*a, *b]).filter(|vr| CHECKED_VRS.contains(&vr.0)),
                    _ => None,
                };
                let Some(vr) = vr.filter(|_| block) else { return Err(ctx.err(Code::POLICY_INVALID_VALUE, span)) };
                let vm = match vm {
                    Some((m, span)) => Some(parse_vm(m).ok_or_else(|| ctx.err(Code::POLICY_INVALID_VALUE, span))?),
                    None => None,
                };
                Some((vr, vm))
            }
        };
        Ok(Rule {
            select,
            action: parts.action,
            free_text: parts.free_text,
            documented: parts.documented,
            at: ctx.at(parts.select_span),
            otherwise,
            private_vr,
            clean: parts.clean,
        })
    }

    /// The action's name as the policy spells it (`clean` for a clean rule).
    pub fn action_name(&self) -> &'static str {
        if self.clean { "clean" } else { self.action.name() }
    }

    /// True when this rule selects everything `other` selects.
    pub(super) fn covers(&self, other: &Rule) -> bool {
        match (&self.select, &other.select) {
            (Select::Masked(mask, value), Select::Tag(t)) => t & mask == *value,
            // Every tag the other pattern matches: its fixed digits include ours, equal there.
            (Select::Masked(m1, v1), Select::Masked(m2, v2)) => m1 & m2 == *m1 && v2 & m1 == *v1,
            (Select::Private, Select::PrivateBlock { .. }) => true,
            (a, b) => a == b,
        }
    }
}

/// The DICOM engine over one input.
#[derive(Debug)]
pub struct Redactor<'p> {
    policy: &'p Policy,
    key: Option<&'p Key>,
    /// Counts for the manifest.
    pub counts: Counts,
    /// The coded entries of the document being redacted.
    code_items: dicom_keep::Index,
    /// Why the last document was not written, when it was refused (burned-in annotation, or
    /// encapsulated pixel data of an unknown transfer syntax).
    pub refused: Option<Code>,
    /// What `date_shift` keys the document's shift on ([`shift_source`]): None, dates removed.
    shift_from: Option<Vec<u8>>,
    /// Per element of the document, the index of its private block's creator element when it
    /// is unambiguous ([`block_creators`]); [`NO_CREATOR`] otherwise.
    creators: Vec<u32>,
    /// The last [`Redactor::decide`] decided by a creator selector's rule.
    kept_by_block: bool,
    /// The document's person name and identifier tokens, sorted (`dicom_clean`): read only
    /// under a policy with a `clean` rule, wiped after each file.
    forbidden: Vec<Vec<u8>>,
}

impl Redactor<'_> {
    fn wipe_forbidden(&mut self) {
        for t in &mut self.forbidden {
            crate::phi::wipe(t);
        }
        self.forbidden.clear();
    }
}

/// The tokens of every PN element of `doc` (any depth) and of its identifiers
/// ([`dicom_clean::IDENTIFIERS`]), lowercase, sorted and deduplicated: what a cleaned value may
/// not hold.
#[expect(
    clippy::disallowed_methods,
    reason = "a redaction engine: a cleaned value may not repeat a name or identifier"
)]
fn forbidden_tokens(doc: &Document, disclosure: &Disclosure) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, e) in doc.elements().iter().enumerate() {
        if e.kind == Kind::Value
            && !doc.elided(i)
            && (e.vr == Vr(*b"PN") || dicom_clean::IDENTIFIERS.binary_search(&e.tag).is_ok())
        {
            dicom_clean::name_tokens(doc.value(i).expose_value(disclosure), &mut out);
        }
    }
    out.sort();
    out.dedup_by(|a, b| {
        let same = a == b;
        if same {
            crate::phi::wipe(a);
        }
        same
    });
    out
}

/// No creator (not a private block element, or its creator is missing, duplicated or invalid).
const NO_CREATOR: u32 = u32::MAX;

/// The VRs a `vr` can name: the ones PS3.15 Table E.3.10-1 gives and [`private_value_ok`]
/// checks.
const CHECKED_VRS: &[[u8; 2]] = &[
    *b"US", *b"SS", *b"UL", *b"SL", *b"FL", *b"FD", *b"OB", *b"IS", *b"DS", *b"CS", *b"LO", *b"SH", *b"LT", *b"UI",
    *b"SQ",
];

/// The VRs of free text.
fn is_free_text(vr: Vr) -> bool {
    matches!(&vr.0, b"AE" | b"LO" | b"SH" | b"ST" | b"LT" | b"UT" | b"UC" | b"UR" | b"PN" | b"UN")
}

impl<'p> Redactor<'p> {
    /// An engine for `policy`.
    pub fn new(policy: &'p Policy, key: Option<&'p Key>) -> Self {
        Redactor {
            policy,
            key,
            counts: Counts::new(policy),
            code_items: dicom_keep::Index::default(),
            refused: None,
            shift_from: None,
            creators: Vec::new(),
            kept_by_block: false,
            forbidden: Vec::new(),
        }
    }

    fn offset(&self) -> usize {
        self.policy.hl7v2.len() + self.policy.fhir.len() + self.policy.x12.len() + self.policy.astm.len()
    }

    /// Writes the redacted file (data channel).
    pub fn redact(&mut self, doc: &Document, disclosure: &Disclosure, out: &mut Vec<u8>) {
        self.counts.records += 1;
        self.refused = None;
        if burned_in_risk(doc, disclosure) {
            match self.policy.dicom_burned_in {
                BurnedIn::Refuse => {
                    // Nothing is written: the pixel data may show what the rules remove.
                    self.refused = Some(Code::DICOM_BURNED_IN_ANNOTATION);
                    return;
                }
                BurnedIn::AcceptResidualRisk => self.counts.burned_in_accepted += 1,
            }
        }
        let els = doc.elements();
        self.code_items = dicom_keep::Index::build(els);
        if let Some(w) = self.shift_from.as_mut() {
            crate::phi::wipe(w);
        }
        self.shift_from = shift_source(doc, disclosure);
        // Only a policy that selects by creator reads the creators (the others' speed unchanged).
        self.creators = if self.policy.dicom.iter().any(|r| matches!(r.select, Select::PrivateBlock { .. })) {
            block_creators(doc, disclosure)
        } else {
            Vec::new()
        };
        self.forbidden =
            if self.policy.dicom.iter().any(|r| r.clean) { forbidden_tokens(doc, disclosure) } else { Vec::new() };
        let mut decisions = vec![Keep::Drop; els.len()];
        let mut by_block = vec![false; els.len()];
        let mut replacements: Vec<Vec<u8>> = Vec::new();
        for (i, e) in els.iter().enumerate() {
            decisions[i] = match e.kind {
                Kind::Item | Kind::Fragment => Keep::As,
                // The file meta is rebuilt below (the writer writes none of the input's).
                _ if e.depth == 0 && e.tag >> 16 == 0x0002 => Keep::Drop,
                // Written below, with the method (the input's method code items name what was
                // done to it before, not what this policy does).
                _ if e.depth == 0 && matches!(e.tag, 0x0012_0062..=0x0012_0064) => Keep::Drop,
                _ => self.decide(doc, i, disclosure, &mut replacements, true),
            };
            by_block[i] = self.kept_by_block;
        }
        // PS3.15 E.3.10: the private creators that define the retained private attributes are
        // retained with them (their value is the creator the rule names); a block with nothing
        // kept loses its creator.
        for (j, &c) in self.creators.iter().enumerate() {
            let c = c as usize;
            if by_block[j] && decisions[j] != Keep::Drop && decisions.get(c) == Some(&Keep::Drop) {
                decisions[c] = Keep::As;
            }
        }
        let Some(mut meta) = self.meta(doc, disclosure, &decisions, &mut replacements) else {
            // No transfer syntax holds the dataset as written (encapsulated pixel data of an
            // unknown compression): nothing is written.
            self.refused = Some(Code::DICOM_PIXEL_ENCODING_UNKNOWN);
            self.counts.fail_closed += 1;
            self.wipe_forbidden();
            for r in &mut replacements {
                crate::phi::wipe(r);
            }
            return;
        };
        let method = method_value(&self.policy.name, &self.policy.dicom_methods);
        let mut inserts = vec![(0x0012_0062, Vr(*b"CS"), b"YES".to_vec()), (0x0012_0063, Vr(*b"LO"), method)];
        if !self.policy.dicom_methods.is_empty() {
            // PS3.3 C.12.1: De-identification Method Code Sequence, one code item (Table
            // 8.8-1a: Code Value, Coding Scheme Designator, Code Meaning) per method the policy
            // declares, PS3.16 CID 7050.
            let items: Vec<write::Added> = self
                .policy
                .dicom_methods
                .iter()
                .filter_map(|&m| super::dicom_deid::METHODS.get(m))
                .map(|(_, code, meaning)| {
                    vec![
                        (0x0008_0100, Vr(*b"SH"), code.as_bytes().to_vec()),
                        (0x0008_0102, Vr(*b"SH"), b"DCM".to_vec()),
                        (0x0008_0104, Vr(*b"LO"), meaning.as_bytes().to_vec()),
                    ]
                })
                .collect();
            inserts.push((0x0012_0064, Vr::SQ, write::sequence_value(doc, &items)));
        }
        let written = write::part10_with(doc, disclosure, &|i, _| decisions[i], &replacements, &meta, &inserts, out);
        self.wipe_forbidden();
        if let Some(w) = self.shift_from.as_mut() {
            crate::phi::wipe(w);
        }
        self.shift_from = None;
        for r in replacements.iter_mut().chain(meta.iter_mut().map(|m| &mut m.2)) {
            crate::phi::wipe(r);
        }
        if !written {
            self.counts.fail_closed += 1;
        }
    }

    /// The file meta of the output (PS3.10 7.1, Table 7.1-1), ascending tags: File Meta
    /// Information Version `00\01`; the Media Storage SOP Class and Instance UIDs as the
    /// dataset's (0008,0016) and (0008,0018) are written (the same values), or, in a file whose
    /// dataset has none (a DICOMDIR), the meta's own decided by their rules (left out when
    /// nothing is written for them); the transfer syntax the dataset is written in
    /// ([`write::written_syntax`]; None when there is none: the file is refused); phiward's
    /// Implementation Class UID and Version Name (the input's name the implementation that
    /// wrote it, not this file's). Source, Sending and Receiving AE Titles (0002,0016-0018)
    /// and Private Information Creator UID and Private Information (0002,0100), (0002,0102)
    /// can name a site, a device or a vendor: removed, unless a rule naming that very tag
    /// decides otherwise (`keep` of an AE title needs `free_text`); the private information is
    /// written only with its creator (and the creator only with it: PS3.10 makes (0002,0102)
    /// required when (0002,0100) is present).
    fn meta(
        &mut self,
        doc: &Document,
        disclosure: &Disclosure,
        decisions: &[Keep],
        replacements: &mut Vec<Vec<u8>>,
    ) -> Option<write::Added> {
        let syntax = write::written_syntax(doc)?;
        let mut meta = vec![(0x0002_0001, Vr::OB, vec![0, 1])];
        for (tag, dataset) in [(0x0002_0002u32, 0x0008_0016u32), (0x0002_0003, 0x0008_0018)] {
            let uid = match (doc.top(dataset), doc.top(tag)) {
                (Some(i), _) => written_value(doc, i, decisions[i], replacements, disclosure),
                (None, Some(i)) => {
                    let d = self.decide(doc, i, disclosure, replacements, false);
                    written_value(doc, i, d, replacements, disclosure)
                }
                (None, None) => None,
            };
            if let Some(uid) = uid.filter(|u| !dict::trim_uid(u).is_empty()) {
                meta.push((tag, Vr::UI, uid));
            }
        }
        meta.push((0x0002_0010, Vr::UI, syntax.as_bytes().to_vec()));
        meta.push((0x0002_0012, Vr::UI, write::IMPLEMENTATION_CLASS_UID.as_bytes().to_vec()));
        meta.push((0x0002_0013, Vr(*b"SH"), write::IMPLEMENTATION_VERSION_NAME.as_bytes().to_vec()));
        let mut optional = Vec::new();
        for tag in [0x0002_0016u32, 0x0002_0017, 0x0002_0018, 0x0002_0100, 0x0002_0102] {
            let Some(i) = doc.top(tag) else { continue };
            let e = doc.elements()[i];
            let named = self
                .policy
                .dicom
                .iter()
                .find(|r| r.select.matches(&e, None))
                .is_some_and(|r| r.select == Select::Tag(tag));
            if !named || e.kind != Kind::Value {
                continue;
            }
            let d = self.decide(doc, i, disclosure, replacements, true);
            if let Some(v) = written_value(doc, i, d, replacements, disclosure) {
                optional.push((tag, e.vr, v));
            }
        }
        let creator = optional.iter().any(|o| o.0 == 0x0002_0100);
        let information = optional.iter().any(|o| o.0 == 0x0002_0102);
        optional.retain_mut(|o| {
            let keep = !matches!(o.0, 0x0002_0100 | 0x0002_0102) || creator && information;
            if !keep {
                crate::phi::wipe(&mut o.2);
            }
            keep
        });
        meta.extend(optional);
        Some(meta)
    }

    /// The decision for element `i` under the first rule that matches it (`count`: count it).
    #[expect(
        clippy::disallowed_methods,
        reason = "a redaction engine: reads values to prove keeps and derive replacements"
    )]
    fn decide(
        &mut self,
        doc: &Document,
        i: usize,
        disclosure: &Disclosure,
        replacements: &mut Vec<Vec<u8>>,
        count: bool,
    ) -> Keep {
        let e = doc.elements()[i];
        self.kept_by_block = false;
        let creator = self.creators.get(i).filter(|c| **c != NO_CREATOR).map(|&c| {
            let v = doc.value(c as usize).expose_value(disclosure);
            &v[..v.len() - v.iter().rev().take_while(|&&b| b == b' ').count()]
        });
        let Some((n, rule)) = self.policy.dicom.iter().enumerate().find(|(_, r)| r.select.matches(&e, creator)) else {
            if count {
                self.counts.fail_closed += 1;
            }
            return Keep::Drop;
        };
        self.kept_by_block = matches!(rule.select, Select::PrivateBlock { .. });
        if count {
            let at = self.offset() + n;
            if let Some(c) = self.counts.per_rule.get_mut(at) {
                *c += 1;
            }
        }
        let value = || doc.value(i).expose_value(disclosure);
        let mut push = |v: Vec<u8>| {
            replacements.push(v);
            Keep::Replace(replacements.len() - 1)
        };
        match &rule.action {
            Action::Remove => Keep::Drop,
            Action::Empty => Keep::Empty,
            Action::Replace(text) => {
                if e.kind == Kind::Value {
                    push(text.as_bytes().to_vec())
                } else {
                    Keep::Empty
                }
            }
            Action::Hash => {
                let Some(key) = self.key else { return Keep::Drop };
                if e.kind != Kind::Value || doc.elided(i) {
                    return Keep::Drop;
                }
                push(hashed(key, e.vr, value(), false))
            }
            Action::GeneralizeDate => {
                let v = value();
                let ok = v.len() >= 4 && v[..4].iter().all(u8::is_ascii_digit);
                match (&e.vr.0, ok) {
                    (b"DA", true) => push([&v[..4], b"0101"].concat()),
                    (b"DT", true) => push(v[..4].to_vec()),
                    _ => Keep::Drop,
                }
            }
            Action::DateShift(days) => {
                // Keyed on the file's patient (or study): the same shift for every date of the
                // patient's files under one key; without a source (or a key), removed.
                // A date it cannot shift (no source, not a date, no key) is written as the
                // rule's `otherwise` dummy (a type 1 attribute stays valued), else empty (no
                // value; a type 2 attribute stays present).
                let fallback = |push: &mut dyn FnMut(Vec<u8>) -> Keep| match &rule.otherwise {
                    Some(Otherwise::Dummy(d)) => push(d.as_bytes().to_vec()),
                    _ => Keep::Empty,
                };
                if e.kind != Kind::Value || doc.elided(i) {
                    return Keep::Drop;
                }
                let (Some(key), Some(from)) = (self.key, self.shift_from.as_ref()) else { return fallback(&mut push) };
                match shift_dates(e.vr, value(), shift_days(key, from, *days)) {
                    Some(v) => push(v),
                    None => fallback(&mut push),
                }
            }
            Action::Keep if rule.clean => {
                // PS3.15 E.1's C on text: kept as it is when every word is known not to
                // identify, else the rule's fallback (the Basic Profile's action).
                let text = matches!(&e.vr.0, b"LO" | b"SH" | b"ST" | b"LT" | b"UT" | b"UC");
                if e.kind == Kind::Value && text && !doc.elided(i) && dicom_clean::clean_ok(value(), &self.forbidden) {
                    self.counts.cleaned += 1;
                    return Keep::As;
                }
                self.counts.clean_fallback += 1;
                match &rule.otherwise {
                    Some(Otherwise::Dummy(d)) if e.kind == Kind::Value => push(d.as_bytes().to_vec()),
                    Some(Otherwise::Dummy(_) | Otherwise::Empty) => Keep::Empty,
                    _ => Keep::Drop,
                }
            }
            Action::Keep if rule.private_vr.is_some() => self.keep_private(doc, i, rule, disclosure, &mut push),
            Action::Keep => {
                if e.kind != Kind::Value {
                    return Keep::As;
                }
                let key = self.key;
                // What is written for a value the keep cannot prove: the dummy, the keyed hash
                // (a UID the keep proves stays; without a key, removed), or nothing.
                let otherwise = || match &rule.otherwise {
                    Some(Otherwise::Dummy(d)) => Some(d.as_bytes().to_vec()),
                    Some(Otherwise::Hash) if !doc.elided(i) => key.map(|k| hashed(k, e.vr, value(), true)),
                    _ => None,
                };
                if dicom_keep::is_code_attribute(e.tag) && !doc.elided(i) {
                    let item = self.code_items.item(&e, &|j| doc.value(j).expose_value(disclosure));
                    match item.prove(e.tag, value()) {
                        dicom_keep::Verdict::Proven => return Keep::As,
                        dicom_keep::Verdict::Standard(m) => return push(m.as_bytes().to_vec()),
                        dicom_keep::Verdict::Unproven => {
                            self.counts.unproven += 1;
                            return otherwise().map_or(Keep::Drop, push);
                        }
                    }
                }
                // `free_text = true` on a UI keeps any UID (PS3.5 9.1: digits and dots, 64
                // bytes at most), not only the standard's: the Retain UIDs option's K.
                if e.vr == Vr::UI && rule.free_text && is_uid_list(value()) {
                    return Keep::As;
                }
                if is_free_text(e.vr) {
                    if rule.free_text {
                        return Keep::As;
                    }
                    self.counts.free_text_removed += 1;
                    return otherwise().map_or(Keep::Drop, push);
                }
                let v = value();
                if proven(e.vr, v) {
                    Keep::As
                } else {
                    self.counts.unproven += 1;
                    otherwise().map_or(Keep::Drop, push)
                }
            }
            _ => Keep::Drop,
        }
    }
}

impl Redactor<'_> {
    /// A `keep` with `vr` of a private element selected by its creator (PS3.15 E.3.10): kept
    /// when the element is what the rule says (its own VR the rule's or UN; a sequence for SQ,
    /// a value otherwise) and its value a valid instance of the VR with the multiplicity;
    /// anything else is removed (fail closed, counted unproven). Text (LO, SH, LT) is kept only
    /// with `free_text = true`; a UI's UIDs are kept with `free_text = true`, else those under
    /// the standard's root stay and the others get the rule's `otherwise` (`@hash`: the keyed
    /// UID, as the profile's U).
    #[expect(clippy::disallowed_methods, reason = "a redaction engine: reads a private value to check its VR")]
    fn keep_private(
        &mut self,
        doc: &Document,
        i: usize,
        rule: &Rule,
        disclosure: &Disclosure,
        push: &mut dyn FnMut(Vec<u8>) -> Keep,
    ) -> Keep {
        let e = doc.elements()[i];
        let Some((vr, vm)) = rule.private_vr else { return Keep::Drop };
        if e.vr != vr && e.vr != Vr::UN {
            self.counts.unproven += 1;
            return Keep::Drop;
        }
        if vr == Vr::SQ {
            return if e.kind == Kind::Sequence {
                Keep::As
            } else {
                self.counts.unproven += 1;
                Keep::Drop
            };
        }
        if e.kind != Kind::Value {
            self.counts.unproven += 1;
            return Keep::Drop;
        }
        if doc.elided(i) {
            // A bulk value not held: an OB's bytes are any bytes (the writer writes or fails the
            // file); another VR's value cannot be checked.
            if vr == Vr::OB {
                return Keep::As;
            }
            self.counts.unproven += 1;
            return Keep::Drop;
        }
        let v = doc.value(i).expose_value(disclosure);
        if !private_value_ok(vr, vm, v) {
            self.counts.unproven += 1;
            return Keep::Drop;
        }
        match &vr.0 {
            b"LO" | b"SH" | b"LT" if !rule.free_text => {
                self.counts.free_text_removed += 1;
                Keep::Drop
            }
            b"UI" if !rule.free_text && !proven(Vr::UI, v) => match (&rule.otherwise, self.key) {
                (Some(Otherwise::Hash), Some(key)) => push(hashed(key, Vr::UI, v, true)),
                (Some(Otherwise::Dummy(d)), _) => push(d.as_bytes().to_vec()),
                _ => {
                    self.counts.unproven += 1;
                    Keep::Drop
                }
            },
            _ => Keep::As,
        }
    }
}

/// Per element of `doc`, the index of the private creator element that reserves its block
/// (PS3.5 7.8.1: element (gggg,xxEE), xx in 10-FF, of the block the creator (gggg,00xx) of the
/// same dataset reserves), or [`NO_CREATOR`]: not a private block element, or the creator is
/// missing, there twice (the same tag twice in the dataset), not a single valid LO value
/// ([`creator_is_lo`], trailing spaces trimmed), or its value reserves two blocks of the group
/// (which block a reader would take is not known). Nothing is retained by creator there (fail
/// closed).
#[expect(clippy::disallowed_methods, reason = "a redaction engine: private creator values name the blocks")]
pub(crate) fn block_creators(doc: &Document, disclosure: &Disclosure) -> Vec<u32> {
    use std::collections::BTreeMap;
    let els = doc.elements();
    let mut out = vec![NO_CREATOR; els.len()];
    // (dataset, group, block) -> the creator's index, or NO_CREATOR when ambiguous or invalid.
    let mut blocks: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    // (dataset, group, value) -> how many creators of the group have that value.
    let mut values: BTreeMap<(u32, u32, &[u8]), u32> = BTreeMap::new();
    for (i, e) in els.iter().enumerate() {
        if e.kind == Kind::Item || e.kind == Kind::Fragment || !dict::is_private_creator(e.tag) {
            continue;
        }
        let Ok(index) = u32::try_from(i) else { break };
        let key = (e.parent, e.tag >> 16, e.tag & 0xFF);
        let v = if e.kind == Kind::Value && !doc.elided(i) && matches!(&e.vr.0, b"LO" | b"UN") {
            let v = doc.value(i).expose_value(disclosure);
            Some(&v[..v.len() - v.iter().rev().take_while(|&&b| b == b' ').count()]).filter(|v| creator_is_lo(v))
        } else {
            None
        };
        match (blocks.get(&key), v) {
            (None, Some(v)) => {
                blocks.insert(key, index);
                *values.entry((e.parent, e.tag >> 16, v)).or_insert(0) += 1;
            }
            _ => {
                blocks.insert(key, NO_CREATOR);
            }
        }
    }
    for (j, e) in els.iter().enumerate() {
        let low = e.tag & 0xFFFF;
        if e.kind == Kind::Item || e.kind == Kind::Fragment || !dict::is_private(e.tag) || low < 0x1000 {
            continue;
        }
        let Some(&c) = blocks.get(&(e.parent, e.tag >> 16, low >> 8)) else { continue };
        if c == NO_CREATOR {
            continue;
        }
        let ce = els[c as usize];
        let v = doc.value(c as usize).expose_value(disclosure);
        let v = &v[..v.len() - v.iter().rev().take_while(|&&b| b == b' ').count()];
        if values.get(&(ce.parent, ce.tag >> 16, v)) == Some(&1) {
            out[j] = c;
        }
    }
    out
}

/// True when `v` is a valid value of `vr` (PS3.5 6.2) with a multiplicity in `vm` (an empty
/// value is valid: zero values): binary numbers a whole number of them; IS and DS numbers of
/// their syntax and length; CS upper-case letters, digits, space and underscore, 16 bytes; LO
/// 64 and SH 16 bytes without backslash or control characters (ESC aside); LT 10240 bytes,
/// control characters only CR, LF, FF and ESC; UI UIDs (PS3.5 9.1); OB anything. Lengths are
/// counted in bytes (a value of multi-byte characters near the limit is refused: fail closed).
pub(crate) fn private_value_ok(vr: Vr, vm: Option<(u32, u32)>, v: &[u8]) -> bool {
    let size = match &vr.0 {
        b"US" | b"SS" => 2,
        b"UL" | b"SL" | b"FL" => 4,
        b"FD" => 8,
        _ => 0,
    };
    let count = if size > 0 {
        if v.len() % size != 0 {
            return false;
        }
        v.len() / size
    } else if vr == Vr::OB {
        usize::from(!v.is_empty())
    } else {
        let t = if vr == Vr::UI { dict::trim_uid(v) } else { v };
        let t = &t[..t.len() - t.iter().rev().take_while(|&&b| b == b' ').count()];
        if t.is_empty() {
            0
        } else if vr.0 == *b"LT" {
            let ok = t.len() <= 10240 && t.iter().all(|&b| b >= 0x20 && b != 0x7F || b"\r\n\x0C\x1B".contains(&b));
            if !ok {
                return false;
            }
            1
        } else {
            let mut n = 0;
            for value in t.split(|&b| b == b'\\') {
                n += 1;
                let ok = match &vr.0 {
                    b"IS" => value.len() <= 12 && is_integer(value.trim_ascii()),
                    b"DS" => value.len() <= 16 && is_decimal(value.trim_ascii()),
                    b"CS" => {
                        value.len() <= 16
                            && value
                                .iter()
                                .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ' || b == b'_')
                    }
                    b"LO" | b"SH" => {
                        value.len() <= if vr.0 == *b"LO" { 64 } else { 16 }
                            && value.iter().all(|&b| b >= 0x20 && b != 0x7F || b == 0x1B)
                    }
                    b"UI" => {
                        let u = dict::trim_uid(value);
                        u.is_empty() || is_uid_list(u) && u.split(|&b| b == b'.').all(|c| c.len() == 1 || c[0] != b'0')
                    }
                    _ => false,
                };
                if !ok {
                    return false;
                }
            }
            n
        }
    };
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    count == 0 || vm.is_none_or(|(min, max)| (min..=max).contains(&count))
}

/// An IS value (PS3.5 6.2): an optional sign and digits, within -2^31..2^31-1.
fn is_integer(t: &[u8]) -> bool {
    let d = t.strip_prefix(b"+").or_else(|| t.strip_prefix(b"-")).unwrap_or(t);
    !d.is_empty()
        && d.iter().all(u8::is_ascii_digit)
        && std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim_start_matches('+').parse::<i64>().ok())
            .is_some_and(|n| i64::from(i32::MIN) <= n && n <= i64::from(i32::MAX))
}

/// A DS value (PS3.5 6.2): a fixed or floating point number, `[+-]digits[.digits][(e|E)[+-]digits]`
/// (the integer or the fraction part may be absent, not both).
fn is_decimal(t: &[u8]) -> bool {
    let t = t.strip_prefix(b"+").or_else(|| t.strip_prefix(b"-")).unwrap_or(t);
    let (mantissa, exponent) = match t.iter().position(|&b| b == b'e' || b == b'E') {
        Some(p) => (&t[..p], Some(&t[p + 1..])),
        None => (t, None),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, &b""[..]),
    };
    let digits = |d: &[u8]| d.iter().all(u8::is_ascii_digit);
    let exponent_ok = exponent.is_none_or(|x| {
        let x = x.strip_prefix(b"+").or_else(|| x.strip_prefix(b"-")).unwrap_or(x);
        !x.is_empty() && digits(x)
    });
    (!int.is_empty() || !frac.is_empty()) && digits(int) && digits(frac) && exponent_ok
}

/// True when the document's pixel data may show burned-in text ([`dicom_deid::at_risk`] of
/// its top-level values).
#[expect(clippy::disallowed_methods, reason = "a redaction engine: reads three coded values to decide a refusal")]
fn burned_in_risk(doc: &Document, disclosure: &Disclosure) -> bool {
    let has_pixels = dicom_deid::PIXEL_DATA.iter().any(|t| doc.top(*t).is_some());
    let value = |tag: u32| doc.top(tag).filter(|i| !doc.elided(*i)).map(|i| doc.value(i).expose_value(disclosure));
    let [burned_in, modality, sop] = dicom_deid::READ;
    dicom_deid::at_risk(has_pixels, value(burned_in), value(modality), value(sop))
}

/// The value written for element `i` under decision `d` (None: not written).
#[expect(clippy::disallowed_methods, reason = "a redaction engine: a kept UID copied into the rebuilt file meta")]
fn written_value(
    doc: &Document,
    i: usize,
    d: Keep,
    replacements: &[Vec<u8>],
    disclosure: &Disclosure,
) -> Option<Vec<u8>> {
    match d {
        Keep::As if !doc.elided(i) => Some(doc.value(i).expose_value(disclosure).to_vec()),
        Keep::Replace(r) => replacements.get(r).cloned(),
        Keep::Empty => Some(Vec::new()),
        _ => None,
    }
}

/// What `hash` writes for `v` under `key`: for a UI, each UID `2.25.` and the decimal of 128
/// bits of an HMAC of it (the same for the same UID and key: references across the files of a
/// study still match), or, with `keep_proven`, the UID as it is when it is under the standard's
/// root (a class or syntax UID, which names no instance); for another VR, 16 upper-case hex
/// digits.
fn hashed(key: &Key, vr: Vr, v: &[u8], keep_proven: bool) -> Vec<u8> {
    if vr != Vr::UI {
        let mac = key.mac("phiward/redact/dicom/v1", &[v]);
        return crate::keys::hex(&mac[..8]).to_ascii_uppercase().into_bytes();
    }
    let mut out = Vec::new();
    for (k, uid) in v.split(|&b| b == b'\\').enumerate() {
        if k > 0 {
            out.push(b'\\');
        }
        let uid = dict::trim_uid(uid);
        if uid.is_empty() {
            continue;
        }
        if keep_proven && proven(Vr::UI, uid) {
            out.extend_from_slice(uid);
            continue;
        }
        let mac = key.mac("phiward/redact/dicom-uid/v1", &[uid]);
        let mut n = [0u8; 16];
        n.copy_from_slice(&mac[..16]);
        out.extend_from_slice(format!("2.25.{}", u128::from_be_bytes(n)).as_bytes());
    }
    out
}

/// (0012,0063) De-identification Method (LO, VM 1-n): `phiward <policy name>`, then the
/// meaning (PS3.16 CID 7050) of each method the policy declares, the profile and its options
/// (each at most 64 characters, LO's limit).
fn method_value(name: &str, methods: &[usize]) -> Vec<u8> {
    let mut out = format!("phiward {name}").into_bytes();
    out.truncate(64);
    for m in methods.iter().filter_map(|&m| dicom_deid::METHODS.get(m)) {
        out.push(b'\\');
        out.extend_from_slice(m.2.as_bytes());
    }
    out
}

/// What `date_shift` keys a document's shift on: its Patient ID (0010,0020), so every file of
/// a patient moves by the same days under one key, or, when it has none, its Study Instance UID
/// (0020,000D) (the files of the study move together); each prefixed by its tag, so a patient
/// and a study of the same text get different shifts. None (neither present, or empty): the
/// dates `date_shift` selects are removed.
#[expect(clippy::disallowed_methods, reason = "a redaction engine: the patient's identifier keys the date shift")]
fn shift_source(doc: &Document, disclosure: &Disclosure) -> Option<Vec<u8>> {
    for (tag, name) in [(0x0010_0020u32, &b"(0010,0020)"[..]), (0x0020_000D, &b"(0020,000D)"[..])] {
        let Some(i) = doc.top(tag).filter(|i| !doc.elided(*i) && doc.elements()[*i].kind == Kind::Value) else {
            continue;
        };
        let v = doc.value(i).expose_value(disclosure);
        let v = dict::trim_uid(v.trim_ascii());
        if !v.is_empty() {
            return Some([name, v].concat());
        }
    }
    None
}

/// The days a document's dates move under `date_shift` of range `days`: from an HMAC-SHA-256
/// of the shift source ([`shift_source`]) under the key, in `-days..=-1` or `1..=days` (never
/// 0: a shift that keeps the dates would release them).
fn shift_days(key: &Key, from: &[u8], days: u32) -> i64 {
    let mac = key.mac("phiward/redact/dicom/date_shift/v1", &[from]);
    let days = u64::from(days.max(1));
    let n = crate::keys::mac_u64(&mac) % (2 * days);
    if n < days { -((n + 1) as i64) } else { (n - days + 1) as i64 }
}

/// `date_shift` of a DA or DT value by `days` (each value of a multi-valued one): a DA is
/// `YYYYMMDD` exactly, a DT starts with `YYYYMMDD` and goes on with digits, `.`, `+`, `-` only
/// (time, fraction, UTC offset: kept); the calendar is the proleptic Gregorian one, no time
/// zone is read. A value of another form (a year or month only, a range, text) or another VR
/// gives None: removed. An empty value stays empty.
pub(crate) fn shift_dates(vr: Vr, v: &[u8], days: i64) -> Option<Vec<u8>> {
    if !matches!(&vr.0, b"DA" | b"DT") {
        return None;
    }
    let mut out = Vec::new();
    for (k, d) in v.split(|&b| b == b'\\').enumerate() {
        if k > 0 {
            out.push(b'\\');
        }
        let d = d.trim_ascii_end();
        if d.is_empty() {
            continue;
        }
        let ok = if vr.0 == *b"DA" {
            d.len() == 8 && d.iter().all(u8::is_ascii_digit)
        } else {
            d.len() >= 8
                && d[..8].iter().all(u8::is_ascii_digit)
                && d[8..].iter().all(|&b| b.is_ascii_digit() || b".+-".contains(&b))
        };
        if !ok {
            return None;
        }
        out.extend_from_slice(&action::shift_date(d, days, false)?);
    }
    Some(out)
}

/// True when each value of a UI is a UID (PS3.5 9.1: digits and dots, 64 bytes at most) or
/// empty, and one at least is not.
fn is_uid_list(v: &[u8]) -> bool {
    let t = dict::trim_uid(v.trim_ascii_end());
    !t.is_empty()
        && t.split(|&b| b == b'\\').map(dict::trim_uid).all(|u| {
            u.is_empty()
                || u.len() <= 64
                    && u.iter().all(|&b| b.is_ascii_digit() || b == b'.')
                    && u.split(|&b| b == b'.').all(|c| !c.is_empty())
        })
}

/// True when a kept value of `vr` is what it claims (a code, a number, a date, a standard UID)
/// or binary.
fn proven(vr: Vr, v: &[u8]) -> bool {
    let t = v.trim_ascii_end();
    let t: &[u8] = dict::trim_uid(t);
    match &vr.0 {
        b"CS" => t.iter().all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b" _\\".contains(&b)),
        b"DS" | b"IS" => t.iter().all(|&b| b.is_ascii_digit() || b" +-.eE\\".contains(&b)),
        b"DA" | b"TM" | b"DT" | b"AS" => t.iter().all(|&b| b.is_ascii_digit() || b" +-.\\DWMY".contains(&b)),
        // Under the standard's root, and a UID (PS3.5 9.1: digits and dots, 64 bytes at most):
        // `1.2.840.10008.` followed by a name is not one.
        b"UI" => t.split(|&b| b == b'\\').map(dict::trim_uid).all(|u| {
            u.is_empty()
                || u.starts_with(b"1.2.840.10008.")
                    && u.len() <= 64
                    && u.iter().all(|&b| b.is_ascii_digit() || b == b'.')
        }),
        _ => !vr.is_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `date_shift` of DICOM dates: DA exactly `YYYYMMDD`, a DT's date with its time and offset
    /// kept, each value of a multi-valued one; anything else is not shifted (None).
    #[test]
    fn dicom_dates_shift_or_fail_closed() {
        let da = Vr(*b"DA");
        let dt = Vr(*b"DT");
        assert_eq!(shift_dates(da, b"20240301", -1), Some(b"20240229".to_vec()));
        assert_eq!(shift_dates(da, b"20231231\\20240101 ", 1), Some(b"20240101\\20240102".to_vec()));
        assert_eq!(shift_dates(dt, b"20240101120000.5+0100", 1), Some(b"20240102120000.5+0100".to_vec()));
        assert_eq!(shift_dates(da, b"", 5), Some(Vec::new()));
        for (vr, bad) in [(dt, &b"2024"[..]), (dt, b"20240101MKR1X"), (da, b"2024.01.01"), (da, b"20241301")] {
            assert_eq!(shift_dates(vr, bad, 3), None);
        }
        assert_eq!(shift_dates(Vr(*b"TM"), b"101500", 3), None);
        assert_eq!(shift_dates(da, b"20240101\\MKR2X", 3), None, "one bad value fails the element");
    }

    /// The shift is never 0 and stays within the range; the source and the key decide it.
    #[test]
    fn dicom_shift_days_are_never_zero() {
        let key = Key::from_bytes(b"0123456789abcdef0123456789abcdef".to_vec()).expect("key");
        let mut seen = std::collections::BTreeSet::new();
        for n in 0..200u32 {
            let d = shift_days(&key, format!("(0010,0020)P{n}").as_bytes(), 2);
            assert!(d != 0 && d.abs() <= 2, "{d}");
            seen.insert(d);
        }
        assert_eq!(seen.len(), 4, "every non-zero shift in range is reached");
        assert_eq!(shift_days(&key, b"(0010,0020)A", 365), shift_days(&key, b"(0010,0020)A", 365));
    }

    #[test]
    fn any_uid_with_free_text() {
        assert!(is_uid_list(b"1.2.826.0.1.3680043.2\\2.25.7\0"));
        for bad in [&b""[..], b"1..2", b"1.2.a", b".1", b"MKR1X"] {
            assert!(!is_uid_list(bad));
        }
    }

    /// `(GGGG,"CREATOR",EE)`: a private group, a creator that is a valid LO value without
    /// leading or trailing space, two hex digits; it matches the element EE of a block whose
    /// creator has that exact value, wherever the block sits, and is covered by `@private`.
    /// A `remove` rule of `select` (for the policy lint's `covers`).
    fn remove(select: Select) -> Rule {
        Rule {
            select,
            action: Action::Remove,
            free_text: false,
            documented: false,
            at: (1, 1),
            otherwise: None,
            private_vr: None,
            clean: false,
        }
    }

    #[test]
    fn private_block_selectors() {
        let sel = Select::parse("(0019,\"GEMS_ACQU_01\",23)").expect("parses");
        assert_eq!(sel, Select::PrivateBlock { group: 0x19, creator: "GEMS_ACQU_01".into(), element: 0x23 });
        assert_eq!(
            Select::parse("(7E01,\"HOLOGIC, Inc.\",10)"),
            Ok(Select::PrivateBlock { group: 0x7E01, creator: "HOLOGIC, Inc.".into(), element: 0x10 })
        );
        for bad in [
            "(0018,\"GEMS_ACQU_01\",23)",
            "(0019,\"\",23)",
            "(0019,\" GEMS\",23)",
            "(0019,\"GEMS \",23)",
            "(0019,\"A\\B\",23)",
            "(0019,\"GEMS_ACQU_01\",123)",
            "(0019,\"GEMS_ACQU_01\",2G)",
            "(019,\"GEMS_ACQU_01\",23)",
            "(0019,\"GEMS_ACQU_01\")",
            "(0007,\"GEMS_ACQU_01\",23)",
        ] {
            assert_eq!(Select::parse(bad), Err(Code::POLICY_UNKNOWN_SELECTOR), "{bad}");
        }
        let at = |tag: u32| Element {
            tag,
            vr: Vr(*b"DS"),
            kind: Kind::Value,
            syntax: crate::formats::dicom::lex::Syntax { explicit: true, big: false },
            depth: 0,
            parent: u32::MAX,
            number: 0,
            offset: 0,
            length: 0,
            value: crate::formats::dicom::source::Val::Elided,
            end: 0,
        };
        let c = Some(&b"GEMS_ACQU_01"[..]);
        assert!(sel.matches(&at(0x0019_1023), c));
        assert!(sel.matches(&at(0x0019_FF23), c), "the block at (0019,00FF)");
        assert!(!sel.matches(&at(0x0019_1023), Some(b"GEMS_ACQU_0")), "the creator exactly");
        assert!(!sel.matches(&at(0x0019_1023), Some(b"gems_acqu_01")), "case-sensitive");
        assert!(!sel.matches(&at(0x0019_1023), None), "no unambiguous creator");
        assert!(!sel.matches(&at(0x0019_1024), c));
        assert!(!sel.matches(&at(0x0019_0023), c), "a creator element is not in a block");
        assert!(!sel.matches(&at(0x001B_1023), c));
        assert!(remove(Select::Private).covers(&remove(sel.clone())));
        assert!(!remove(sel).covers(&remove(Select::Private)));
    }

    /// `vm`: `1`, `3-4`, `1-n`; nothing else.
    #[test]
    fn value_multiplicities() {
        assert_eq!(parse_vm("1"), Some((1, 1)));
        assert_eq!(parse_vm("3-4"), Some((3, 4)));
        assert_eq!(parse_vm("1-n"), Some((1, u32::MAX)));
        for bad in ["", "0", "4-3", "n", "1-", "-1", "1-2-3", "x", "12345"] {
            assert_eq!(parse_vm(bad), None, "{bad}");
        }
    }

    /// A private value is kept only as a valid instance of the table's VR with its VM.
    #[test]
    fn private_values_checked_by_vr() {
        let vr = |s: &[u8; 2]| Vr(*s);
        let one = Some((1, 1));
        let ok = |v: &[u8; 2], vm: Option<(u32, u32)>, val: &[u8]| private_value_ok(vr(v), vm, val);
        assert!(ok(b"DS", one, b"72222.25"));
        assert!(ok(b"DS", one, b" -3.5E2 "));
        assert!(ok(b"DS", one, b".5"));
        assert!(ok(b"DS", one, b""), "empty: no value");
        assert!(!ok(b"DS", one, b"MKR01X"));
        assert!(!ok(b"DS", one, b"1.5\\2.5"), "VM 2 where 1");
        assert!(!ok(b"DS", one, b"12345678901234567"), "17 bytes");
        assert!(!ok(b"DS", one, b"1e"));
        assert!(ok(b"DS", Some((3, 4)), b"1\\2\\3"));
        assert!(!ok(b"DS", Some((3, 4)), b"1"));
        assert!(ok(b"IS", Some((4, 4)), b"1000\\0\\-0\\+7"));
        assert!(!ok(b"IS", one, b"2147483648"));
        assert!(!ok(b"IS", one, b"1.0"));
        assert!(ok(b"CS", one, b"ISOTROPIC "));
        assert!(!ok(b"CS", one, b"isotropic"));
        assert!(ok(b"LO", one, b"FIESTA 3D"));
        assert!(!ok(b"LO", one, b"A\x01B"));
        assert!(!ok(b"SH", one, b"12345678901234567"));
        assert!(ok(b"LT", one, b"line one\r\nline \\ two"));
        assert!(!ok(b"LT", one, b"a\x00b"));
        assert!(ok(b"UI", one, b"1.2.840.10008.1.2\0"));
        assert!(!ok(b"UI", one, b"1.02.3"));
        assert!(!ok(b"UI", one, b"1.2.a"));
        assert!(ok(b"FD", Some((3, 3)), &[0u8; 24]));
        assert!(!ok(b"FD", Some((6, 6)), &[0u8; 40]));
        assert!(!ok(b"FD", one, &[0u8; 7]));
        assert!(ok(b"US", one, &[1, 0]));
        assert!(!ok(b"US", one, &[1, 0, 2, 0]));
        assert!(ok(b"FD", Some((1, u32::MAX)), &[0u8; 800]));
        assert!(ok(b"OB", one, b"any bytes\x00\xFF"));
    }

    /// `(60xx,xxxx)`: a repeating group, every element of it (an overlay's whole group).
    #[test]
    fn masked_selectors_match_a_repeating_group() {
        assert_eq!(Select::parse("(60xx,xxxx)"), Ok(Select::Masked(0xFF00_0000, 0x6000_0000)));
        assert_eq!(Select::parse("(60XX,3000)"), Ok(Select::Masked(0xFF00_FFFF, 0x6000_3000)));
        assert_eq!(Select::parse("(60xx,30)"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        assert_eq!(Select::parse("(60xg,xxxx)"), Err(Code::POLICY_UNKNOWN_SELECTOR));
        let Select::Masked(mask, value) = Select::parse("(60xx,xxxx)").expect("parses") else {
            panic!("a masked selector")
        };
        for (tag, hit) in [(0x6000_3000u32, true), (0x6002_0010, true), (0x601E_0102, true), (0x5000_3000, false)] {
            assert_eq!(tag & mask == value, hit, "{tag:08X}");
        }
        // A masked rule shadows the tags and narrower patterns it matches (policy lint).
        let rule = |s: &str| remove(Select::parse(s).expect("selector"));
        assert!(rule("(60xx,xxxx)").covers(&rule("(6002,3000)")));
        assert!(rule("(60xx,xxxx)").covers(&rule("(60xx,3000)")));
        assert!(!rule("(60xx,3000)").covers(&rule("(60xx,xxxx)")));
        assert!(!rule("(60xx,xxxx)").covers(&rule("(5000,3000)")));
    }
}
