//! Policy actions and what each does to one value (a leaf: an HL7 v2 subcomponent, a FHIR
//! primitive), on its decoded text.
//!
//! Keyed actions use `keys::Key::mac` (HMAC-SHA-256, domain-separated), never a bare hash. Hashes
//! and pseudonyms carry a keyed check so that redacting a redacted message recognizes them and
//! leaves them as they are (idempotence); every other action is idempotent by construction except
//! `date_shift` (documented in policy/README.md).
//!
//! What it does not do: decide which values an action applies to (the engines do), or escape the
//! result for a syntax (the engines do).

use std::collections::BTreeMap;

use crate::diag::Code;
use crate::formats::calendar::{civil_from_days, days_from_civil};
use crate::keys::{self, Key};

/// Parameters a rule can give its action.
#[derive(Clone, Debug, Default)]
pub struct Params {
    /// `replace`: the text.
    pub value: Option<String>,
    /// `mask`: characters left visible at the end.
    pub keep_last: Option<u8>,
    /// `date_shift`: the range in days (shift in `-days..=days`).
    pub days: Option<u32>,
}

/// An action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Keep the value.
    Keep,
    /// Remove the value.
    Remove,
    /// HL7 v2 only: the explicit null `""`.
    Empty,
    /// Replace with fixed text.
    Replace(String),
    /// `****` followed by the last `n` characters.
    Mask(u8),
    /// Keyed HMAC-SHA-256, 32 hex digits.
    Hash,
    /// Keyed pseudonym, 16 hex digits, consistent across messages for one key.
    Pseudonym,
    /// Numbered in order of first appearance within the record (keyless, consistent within a
    /// record): identifiers such as resource ids that must keep resolving.
    Sequence,
    /// Shift by a keyed number of days in `-days..=days`, the same for every date of a patient.
    DateShift(u32),
    /// The year only.
    GeneralizeDate,
    /// A birth date: the year only, and not even the year when the record's reference year
    /// (HL7 v2: MSH-7 as released; FHIR: the latest other date the record releases) is 90 or
    /// more years later, or when the record has no reference year (Safe Harbor: ages over 89).
    GeneralizeBirthDate,
    /// The first three digits, `000` for restricted prefixes.
    GeneralizeZip,
    /// Ages over 89 become `90+` (HL7 v2) or 90 (FHIR numbers).
    CapAge,
}

/// Every action name.
pub const NAMES: &[&str] = &[
    "keep",
    "remove",
    "empty",
    "replace",
    "mask",
    "hash",
    "pseudonym",
    "sequence",
    "date_shift",
    "generalize_date",
    "generalize_birth_date",
    "generalize_zip",
    "cap_age",
];

impl Action {
    /// Builds an action from its name and parameters.
    pub fn build(name: &str, p: &Params) -> Result<Action, Code> {
        let no_params = p.value.is_none() && p.keep_last.is_none() && p.days.is_none();
        let a = match name {
            "keep" => Action::Keep,
            "remove" => Action::Remove,
            "empty" => Action::Empty,
            "replace" => return p.value.clone().map(Action::Replace).ok_or(Code::POLICY_INVALID_VALUE),
            "mask" => return Ok(Action::Mask(p.keep_last.unwrap_or(0))),
            "hash" => Action::Hash,
            "pseudonym" => Action::Pseudonym,
            "sequence" => Action::Sequence,
            "date_shift" => return p.days.filter(|d| *d > 0).map(Action::DateShift).ok_or(Code::POLICY_INVALID_VALUE),
            "generalize_date" => Action::GeneralizeDate,
            "generalize_birth_date" => Action::GeneralizeBirthDate,
            "generalize_zip" => Action::GeneralizeZip,
            "cap_age" => Action::CapAge,
            _ => return Err(Code::POLICY_UNKNOWN_ACTION),
        };
        if !no_params {
            return Err(Code::POLICY_INVALID_VALUE);
        }
        Ok(a)
    }

    /// The action's name.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Keep => "keep",
            Action::Remove => "remove",
            Action::Empty => "empty",
            Action::Replace(_) => "replace",
            Action::Mask(_) => "mask",
            Action::Hash => "hash",
            Action::Pseudonym => "pseudonym",
            Action::Sequence => "sequence",
            Action::DateShift(_) => "date_shift",
            Action::GeneralizeDate => "generalize_date",
            Action::GeneralizeBirthDate => "generalize_birth_date",
            Action::GeneralizeZip => "generalize_zip",
            Action::CapAge => "cap_age",
        }
    }

    /// True for the actions that need a key.
    pub fn needs_key(&self) -> bool {
        matches!(self, Action::Hash | Action::Pseudonym | Action::DateShift(_))
    }

    /// True for the actions that only make sense on dates.
    pub fn is_date_action(&self) -> bool {
        matches!(self, Action::DateShift(_) | Action::GeneralizeDate | Action::GeneralizeBirthDate)
    }
}

/// Per-record state shared by the leaves of one record.
pub struct Context<'k> {
    /// The key, when one was given.
    pub key: Option<&'k Key>,
    /// The patient's identifier bytes for `date_shift` (consistent per patient).
    pub patient: Vec<u8>,
    /// `sequence` numbers, by value, in order of first appearance.
    sequence: BTreeMap<Vec<u8>, u32>,
    /// The record's reference year for `generalize_birth_date` (HL7 v2: the year of MSH-7;
    /// FHIR: the latest year of any date in the record).
    pub reference_year: Option<u32>,
}

impl<'k> Context<'k> {
    /// A fresh context for one record.
    pub fn new(key: Option<&'k Key>) -> Self {
        Context { key, patient: Vec::new(), sequence: BTreeMap::new(), reference_year: None }
    }

    /// The number of `value` within this record (1-based, first appearance first).
    pub fn sequence(&mut self, value: &[u8]) -> u32 {
        let next = self.sequence.len() as u32 + 1;
        *self.sequence.entry(value.to_vec()).or_insert(next)
    }

    /// The day offset of this record's patient for a range of `days`.
    pub fn shift_days(&self, days: u32) -> i64 {
        let Some(key) = self.key else { return 0 };
        let mac = key.mac("phiward/redact/date_shift", &[&self.patient]);
        let span = 2 * u64::from(days) + 1;
        (keys::mac_u64(&mac) % span) as i64 - i64::from(days)
    }
}

/// Keyed digest with a keyed check: `body` hex digits then `check` hex digits.
fn keyed(key: Option<&Key>, domain: &str, value: &[u8], body: usize, check: usize) -> Vec<u8> {
    let Some(key) = key else { return Vec::new() };
    if is_keyed(key, domain, value, body, check) {
        return value.to_vec();
    }
    let mac = key.mac(domain, &[value]);
    let head = keys::hex(&mac[..body / 2]);
    let tail = key.mac(&format!("{domain}/check"), &[head.as_bytes()]);
    let mut out = head.into_bytes();
    out.extend_from_slice(keys::hex(&tail[..check / 2]).as_bytes());
    out
}

fn is_keyed(key: &Key, domain: &str, value: &[u8], body: usize, check: usize) -> bool {
    if value.len() != body + check || !value.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
        return false;
    }
    let tail = key.mac(&format!("{domain}/check"), &[&value[..body]]);
    keys::hex(&tail[..check / 2]).as_bytes() == &value[body..]
}

/// `hash`: 32 hex digits.
pub fn hash(key: Option<&Key>, value: &[u8]) -> Vec<u8> {
    keyed(key, "phiward/redact/hash", value, 24, 8)
}

/// `pseudonym`: 16 hex digits.
pub fn pseudonym(key: Option<&Key>, value: &[u8]) -> Vec<u8> {
    keyed(key, "phiward/redact/pseudonym", value, 12, 4)
}

/// `mask`: `****` and the last `keep` characters (at most half the value). A value that starts
/// with `****` is taken as masked already.
pub fn mask(value: &[u8], keep: u8) -> Vec<u8> {
    if value.starts_with(b"****") {
        return value.to_vec();
    }
    let text = String::from_utf8_lossy(value);
    let chars: Vec<char> = text.chars().collect();
    let keep = usize::from(keep).min(chars.len() / 2);
    let mut out = b"****".to_vec();
    let tail: String = chars[chars.len() - keep..].iter().collect();
    out.extend_from_slice(tail.as_bytes());
    out
}

/// `generalize_date`: the leading four-digit year, or nothing.
pub fn year(value: &[u8]) -> Option<&[u8]> {
    let y = value.get(..4)?;
    y.iter().all(u8::is_ascii_digit).then_some(y)
}

/// `generalize_birth_date`: the year of a birth date, unless the person could be 90 or older in
/// the record's reference year (a difference of 90 years or more: the month and day are not
/// compared, so that redacting again, with years only, decides the same), or the record has no
/// reference year. A birth year after the reference year is kept (nothing to aggregate).
pub fn birth_year(value: &[u8], reference_year: Option<u32>) -> Option<&[u8]> {
    let y = year(value)?;
    let born = num(y)?;
    let reference = reference_year?;
    (reference < born.saturating_add(90)).then_some(y)
}

/// The year of a date that starts with four digits (`YYYY...`).
pub fn year_number(value: &[u8]) -> Option<u32> {
    year(value).and_then(num)
}

/// The restricted three-digit ZIP prefixes (policy/restricted-zip3.txt).
const RESTRICTED_ZIP3: &str = include_str!("../../policy/restricted-zip3.txt");

fn is_restricted(zip3: &[u8]) -> bool {
    static LIST: std::sync::OnceLock<Vec<[u8; 3]>> = std::sync::OnceLock::new();
    let list = LIST.get_or_init(|| {
        RESTRICTED_ZIP3
            .lines()
            .map(str::trim)
            .filter(|l| l.len() == 3 && !l.starts_with('#'))
            .map(|l| {
                let b = l.as_bytes();
                [b[0], b[1], b[2]]
            })
            .collect()
    });
    list.iter().any(|z| z == zip3)
}

/// `generalize_zip`: the first three digits (`000` for restricted prefixes), or nothing when the
/// value is not a US ZIP code (five digits, optionally `-` and four, or already three).
pub fn zip(value: &[u8]) -> Option<Vec<u8>> {
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let ok = match value.len() {
        3 | 5 | 9 => digits(value),
        10 => digits(&value[..5]) && value[5] == b'-' && digits(&value[6..]),
        _ => false,
    };
    if !ok {
        return None;
    }
    let z3 = &value[..3];
    Some(if is_restricted(z3) { b"000".to_vec() } else { z3.to_vec() })
}

/// `cap_age`: the age if at most 89, `over` if more, nothing when not an age.
pub fn cap_age(value: &[u8], over: &[u8]) -> Option<Vec<u8>> {
    if value == over {
        return Some(value.to_vec());
    }
    let (int, frac) = match value.iter().position(|b| *b == b'.') {
        Some(i) => (&value[..i], &value[i + 1..]),
        None => (value, &b""[..]),
    };
    if int.is_empty() || int.len() > 6 || !int.iter().all(u8::is_ascii_digit) || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u32 = std::str::from_utf8(int).ok()?.parse().ok()?;
    Some(if n > 89 { over.to_vec() } else { value.to_vec() })
}

fn num(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// `date_shift` of a date that starts `YYYYMMDD` (HL7 v2, `dashed` false) or `YYYY-MM-DD`
/// (FHIR, `dashed` true); the rest (time, zone) is kept. A value with less than day precision is
/// reduced to its year; anything else is removed (`None`).
pub fn shift_date(value: &[u8], days: i64, dashed: bool) -> Option<Vec<u8>> {
    let (y, m, d, rest) = if dashed {
        if value.len() < 10 || value[4] != b'-' || value[7] != b'-' {
            return year(value).filter(|_| value.len() <= 7).map(<[u8]>::to_vec);
        }
        (num(&value[..4])?, num(&value[5..7])?, num(&value[8..10])?, &value[10..])
    } else {
        if value.len() < 8 {
            return year(value).map(<[u8]>::to_vec);
        }
        (num(&value[..4])?, num(&value[4..6])?, num(&value[6..8])?, &value[8..])
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let (y2, m2, d2) = civil_from_days(days_from_civil(i64::from(y), m, d) + days);
    if !(0..=9999).contains(&y2) {
        return None;
    }
    let mut out =
        if dashed { format!("{y2:04}-{m2:02}-{d2:02}") } else { format!("{y2:04}{m2:02}{d2:02}") }.into_bytes();
    out.extend_from_slice(rest);
    Some(out)
}

crate::debug_placeholder!(Context<'k>);
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(shift_date(b"20240301", -1, false), Some(b"20240229".to_vec()));
        assert_eq!(shift_date(b"2024-12-31T10:00:00Z", 1, true), Some(b"2025-01-01T10:00:00Z".to_vec()));
        assert_eq!(shift_date(b"2024", 10, false), Some(b"2024".to_vec()));
        assert_eq!(shift_date(b"20241399", 1, false), None);
        assert_eq!(year(b"19700101"), Some(&b"1970"[..]));
        assert_eq!(year(b"MKR1"), None);
        assert_eq!(birth_year(b"19700101", Some(2024)), Some(&b"1970"[..]));
        assert_eq!(birth_year(b"1935", Some(2024)), Some(&b"1935"[..]));
        // 90 years apart: could be 90 (born early in the year); the year goes.
        assert_eq!(birth_year(b"19341231", Some(2024)), None);
        assert_eq!(birth_year(b"1920-05-01", Some(2024)), None);
        assert_eq!(birth_year(b"19700101", None), None);
        assert_eq!(birth_year(b"2030", Some(2024)), Some(&b"2030"[..]));
        assert_eq!(birth_year(b"MKR1", Some(2024)), None);
        assert_eq!(year_number(b"2024-01-01"), Some(2024));
    }

    #[test]
    fn zips_ages_masks() {
        assert_eq!(zip(b"02139"), Some(b"021".to_vec()));
        assert_eq!(zip(b"03601-1234"), Some(b"000".to_vec()));
        assert_eq!(zip(b"021"), Some(b"021".to_vec()));
        assert_eq!(zip(b"K1A 0B1"), None);
        assert_eq!(cap_age(b"93", b"90+"), Some(b"90+".to_vec()));
        assert_eq!(cap_age(b"42", b"90+"), Some(b"42".to_vec()));
        assert_eq!(cap_age(b"90+", b"90+"), Some(b"90+".to_vec()));
        assert_eq!(cap_age(b"old", b"90+"), None);
        assert_eq!(mask(b"123456789", 4), b"****6789".to_vec());
        assert_eq!(mask(b"****6789", 4), b"****6789".to_vec());
        assert_eq!(mask(b"12", 4), b"****2".to_vec());
        assert_eq!(mask(b"", 4), b"****".to_vec());
    }

    #[test]
    fn keyed_values_are_recognized() {
        let key = Key::from_bytes(b"0123456789abcdef0123".to_vec()).unwrap_or_else(|_| panic!("key"));
        let h = hash(Some(&key), b"SMITH");
        assert_eq!(h.len(), 32);
        assert_eq!(hash(Some(&key), &h), h);
        let p = pseudonym(Some(&key), b"12345");
        assert_eq!(p.len(), 16);
        assert_eq!(pseudonym(Some(&key), &p), p);
        assert_ne!(pseudonym(Some(&key), b"12346"), p);
    }
}
