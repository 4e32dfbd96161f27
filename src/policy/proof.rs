//! Proofs: the checks a `keep` runs on every value it would keep (policy/README.md, "What keep
//! proves").
//!
//! A kept value leaves phiward only when its kind can be checked and the check passes: a number
//! is a number, a date is a date, a code is valid for its code system or table (LOINC and
//! SNOMED CT with their check digits, ICD-9/ICD-10 syntax, UCUM grammar without annotations,
//! HL7 table values, FHIR value sets bundled with the definitions), a coding system is one this
//! module knows, a state is a US or Canadian postal abbreviation, a country an ISO 3166 code. What
//! cannot be checked (free text, identifiers, local codes, unknown systems) is not proven, and
//! `keep` removes it.
//!
//! Ages: [`age_unit`] and [`is_loinc_age_code`] tell an age from other numbers, and [`cap_age`]
//! aggregates ages of 90 years or more (Safe Harbor), per unit.
//!
//! What it does not do: look values up in a terminology server or in the full code systems (a
//! syntactically valid LOINC code that LOINC never issued passes), or decide which values a rule
//! selects (the engines do).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::formats::fhir::definitions as defs;
use crate::formats::fhir::ucum;
use crate::formats::hl7v2::schema::{self, Version};

/// A code system whose codes this module can check.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CodeSystem {
    /// LOINC (`NNNNN-C` with its mod-10 check digit; `LA`/`LP`/`LL`/`LG` parts and answers).
    Loinc,
    /// SNOMED CT concept ids (6 to 18 digits, a concept partition, Verhoeff check digit).
    Snomed,
    /// ICD-10 and ICD-10-CM diagnosis codes.
    Icd10,
    /// ICD-10-PCS procedure codes (7 characters).
    Icd10Pcs,
    /// ICD-9-CM diagnosis codes.
    Icd9,
    /// ICD-9-CM procedure codes.
    Icd9Proc,
    /// UCUM units (no annotations: `{...}` is free text).
    Ucum,
    /// RxNorm concept ids.
    RxNorm,
    /// CDC vaccine codes (CVX).
    Cvx,
    /// CDC vaccine manufacturer codes (MVX).
    Mvx,
    /// National Drug Codes.
    Ndc,
    /// CPT-4.
    Cpt,
    /// HCPCS level II.
    Hcpcs,
    /// Language tags (BCP 47).
    Bcp47,
    /// ISO 639 language codes.
    Iso639,
    /// ISO 3166-1 country codes (alpha-2 or alpha-3).
    Country,
    /// MIME types (BCP 13).
    Mime,
    /// An HL7 v2 table (`HL70001`, `http://terminology.hl7.org/CodeSystem/v2-0001`).
    Hl7Table(u16),
    /// A FHIR code system whose codes the bundled value sets list.
    FhirValueSets(&'static str),
}

/// The code system an HL7 v2 coding-system name (table 0396) stands for.
pub fn hl7_system(name: &[u8]) -> Option<CodeSystem> {
    Some(match name {
        b"LN" | b"LOINC" => CodeSystem::Loinc,
        b"SCT" | b"SCT2" | b"SNM" | b"SNOMED" | b"SNOMEDCT" | b"SNOMED-CT" => CodeSystem::Snomed,
        b"I10" | b"I10C" | b"ICD10" | b"ICD10CM" | b"ICD-10" | b"ICD-10-CM" => CodeSystem::Icd10,
        b"I10P" | b"ICD10PCS" => CodeSystem::Icd10Pcs,
        b"I9" | b"I9C" | b"I9CDX" | b"ICD9" | b"ICD9CM" => CodeSystem::Icd9,
        b"I9CP" => CodeSystem::Icd9Proc,
        b"UCUM" | b"ANS+" | b"ISO+" => CodeSystem::Ucum,
        b"RXNORM" | b"RXN" => CodeSystem::RxNorm,
        b"CVX" => CodeSystem::Cvx,
        b"MVX" => CodeSystem::Mvx,
        b"NDC" => CodeSystem::Ndc,
        b"CPT" | b"CPT4" | b"C4" | b"C5" => CodeSystem::Cpt,
        b"HCPCS" | b"HCPC" | b"HCPT" => CodeSystem::Hcpcs,
        b"ISO639" | b"ISO639-1" | b"ISO639-2" => CodeSystem::Iso639,
        b"ISO3166" | b"ISO3166-1" => CodeSystem::Country,
        _ => {
            let digits = name.strip_prefix(b"HL7")?;
            let n = small_number(digits, 3, 4)?;
            table_exists(n).then_some(CodeSystem::Hl7Table(n))?
        }
    })
}

/// The code system a FHIR `system` URI names.
pub fn fhir_system(uri: &[u8]) -> Option<CodeSystem> {
    Some(match uri {
        b"http://loinc.org" => CodeSystem::Loinc,
        b"http://snomed.info/sct" => CodeSystem::Snomed,
        b"http://hl7.org/fhir/sid/icd-10" | b"http://hl7.org/fhir/sid/icd-10-cm" => CodeSystem::Icd10,
        b"http://www.cms.gov/Medicare/Coding/ICD10" => CodeSystem::Icd10Pcs,
        b"http://hl7.org/fhir/sid/icd-9-cm" => CodeSystem::Icd9,
        b"http://unitsofmeasure.org" => CodeSystem::Ucum,
        b"http://www.nlm.nih.gov/research/umls/rxnorm" => CodeSystem::RxNorm,
        b"http://hl7.org/fhir/sid/cvx" => CodeSystem::Cvx,
        b"http://hl7.org/fhir/sid/mvx" => CodeSystem::Mvx,
        b"http://hl7.org/fhir/sid/ndc" => CodeSystem::Ndc,
        b"http://www.ama-assn.org/go/cpt" => CodeSystem::Cpt,
        b"urn:ietf:bcp:47" => CodeSystem::Bcp47,
        b"urn:ietf:bcp:13" => CodeSystem::Mime,
        b"urn:iso:std:iso:3166" => CodeSystem::Country,
        _ => {
            if let Some(rest) = uri.strip_prefix(b"http://terminology.hl7.org/CodeSystem/v2-") {
                let n = small_number(rest, 4, 4)?;
                return table_exists(n).then_some(CodeSystem::Hl7Table(n));
            }
            return value_set_system(uri).map(CodeSystem::FhirValueSets);
        }
    })
}

/// True when `code` is valid in `system` (`version`: the HL7 v2 version whose tables apply).
pub fn code_valid(system: CodeSystem, code: &[u8], version: Version) -> bool {
    if code.is_empty() || code.len() > 64 {
        return false;
    }
    match system {
        CodeSystem::Loinc => loinc(code),
        CodeSystem::Snomed => snomed(code),
        CodeSystem::Icd10 => icd10(code),
        CodeSystem::Icd10Pcs => icd10_pcs(code),
        CodeSystem::Icd9 => icd9(code),
        CodeSystem::Icd9Proc => icd9_procedure(code),
        CodeSystem::Ucum => is_ucum(code),
        CodeSystem::RxNorm => (1..=8).contains(&code.len()) && digits(code) && code[0] != b'0',
        CodeSystem::Cvx => (1..=3).contains(&code.len()) && digits(code),
        CodeSystem::Mvx => (2..=3).contains(&code.len()) && code.iter().all(u8::is_ascii_uppercase),
        CodeSystem::Ndc => ndc(code),
        CodeSystem::Cpt => {
            code.len() == 5 && digits(&code[..4]) && (code[4].is_ascii_digit() || matches!(code[4], b'F' | b'T' | b'U'))
        }
        CodeSystem::Hcpcs => code.len() == 5 && (b'A'..=b'V').contains(&code[0]) && digits(&code[1..]),
        CodeSystem::Bcp47 => bcp47(code),
        CodeSystem::Iso639 => (2..=3).contains(&code.len()) && code.iter().all(u8::is_ascii_lowercase),
        CodeSystem::Country => country(code),
        CodeSystem::Mime => mime(code),
        CodeSystem::Hl7Table(n) => hl7_table_value(n, code, version),
        CodeSystem::FhirValueSets(system) => in_value_sets(system, code),
    }
}

fn digits(v: &[u8]) -> bool {
    !v.is_empty() && v.iter().all(u8::is_ascii_digit)
}

fn upper_no_io(b: u8) -> bool {
    b.is_ascii_uppercase() && b != b'I' && b != b'O'
}

fn small_number(v: &[u8], min: usize, max: usize) -> Option<u16> {
    if !(min..=max).contains(&v.len()) || !digits(v) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// The versions whose tables are consulted, the message's first.
fn table_in(n: u16, version: Version) -> Option<&'static schema::TableDef> {
    [version, Version::V2_8_2, Version::V2_5_1]
        .into_iter()
        .find_map(|v| schema::schema(v).table(n).filter(|t| !t.values.is_empty()))
}

fn table_exists(n: u16) -> bool {
    table_in(n, Version::V2_8_2).is_some()
}

/// True when `code` is a value of HL7 table `n` (HL7-defined, or a user-defined table's listed
/// values) in `version`, or, when that version lists none, in 2.8.2 or 2.5.1.
pub fn hl7_table_value(n: u16, code: &[u8], version: Version) -> bool {
    table_in(n, version).is_some_and(|t| t.contains(code))
}

/// LOINC: digits, `-`, a check digit (mod 10, as LOINC computes it for terms); parts and
/// answers (`LA`, `LP`, `LL`, `LG`), whose check digits follow another scheme, by syntax.
pub fn loinc(code: &[u8]) -> bool {
    let (body, checked) = match code.get(..2) {
        Some(b"LA" | b"LP" | b"LL" | b"LG") => (&code[2..], false),
        _ => (code, true),
    };
    let Some((num, check)) = body.split_last().and_then(|(c, rest)| rest.strip_suffix(b"-").map(|n| (n, *c))) else {
        return false;
    };
    if num.is_empty() || num.len() > 8 || !digits(num) || !check.is_ascii_digit() {
        return false;
    }
    if !checked {
        return true;
    }
    // Luhn over the number: double every second digit from the right, starting with the last.
    let mut sum = 0u32;
    for (i, d) in num.iter().rev().enumerate() {
        let mut v = u32::from(d - b'0');
        if i % 2 == 0 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    (10 - sum % 10) % 10 == u32::from(check - b'0')
}

/// SNOMED CT concept id: 6 to 18 digits, no leading zero, the concept partition (`00` or `10`
/// before the check digit), and a valid Verhoeff check digit.
pub fn snomed(code: &[u8]) -> bool {
    if !(6..=18).contains(&code.len()) || !digits(code) || code[0] == b'0' {
        return false;
    }
    let n = code.len();
    if !matches!(&code[n - 3..n - 1], b"00" | b"10") {
        return false;
    }
    verhoeff(code)
}

fn verhoeff(code: &[u8]) -> bool {
    const D: [[u8; 10]; 10] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
        [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
        [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
        [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
        [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
        [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
        [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    ];
    const P: [[u8; 10]; 8] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
        [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
        [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
        [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
        [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
        [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
        [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
    ];
    let mut c = 0u8;
    for (i, d) in code.iter().rev().enumerate() {
        c = D[usize::from(c)][usize::from(P[i % 8][usize::from(d - b'0')])];
    }
    c == 0
}

/// ICD-10 / ICD-10-CM: a letter, a digit, a digit or letter, then optionally `.` and up to four
/// digits or letters.
pub fn icd10(code: &[u8]) -> bool {
    let (head, tail) = code.split_at(code.len().min(3));
    if head.len() != 3 || !head[0].is_ascii_uppercase() || !head[1].is_ascii_digit() {
        return false;
    }
    if !(head[2].is_ascii_digit() || head[2].is_ascii_uppercase()) {
        return false;
    }
    let tail = tail.strip_prefix(b".").unwrap_or(tail);
    tail.len() <= 4 && tail.iter().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// ICD-10-PCS: seven characters, digits and letters but I and O, the first a section (0-9, B,
/// C, D, F, G, H, X).
pub fn icd10_pcs(code: &[u8]) -> bool {
    code.len() == 7
        && (code[0].is_ascii_digit() || matches!(code[0], b'B' | b'C' | b'D' | b'F' | b'G' | b'H' | b'X'))
        && code.iter().all(|b| b.is_ascii_digit() || upper_no_io(*b))
}

/// ICD-9-CM diagnoses: `NNN[.N[N]]`, `VNN[.N[N]]`, `ENNN[.N]`.
pub fn icd9(code: &[u8]) -> bool {
    let (main, frac) = match code.iter().position(|b| *b == b'.') {
        Some(i) => (&code[..i], Some(&code[i + 1..])),
        None => (code, None),
    };
    let (ok, max_frac) = match main.first() {
        Some(b'V') => (main.len() == 3 && digits(&main[1..]), 2),
        Some(b'E') => (main.len() == 4 && digits(&main[1..]), 1),
        _ => (main.len() == 3 && digits(main), 2),
    };
    ok && frac.is_none_or(|f| (1..=max_frac).contains(&f.len()) && digits(f))
}

fn icd9_procedure(code: &[u8]) -> bool {
    match code.iter().position(|b| *b == b'.') {
        Some(2) => digits(&code[..2]) && (1..=2).contains(&(code.len() - 3)) && digits(&code[3..]),
        None => code.len() == 2 && digits(code),
        _ => false,
    }
}

/// UCUM, without annotations (`{...}` is free text).
pub fn is_ucum(code: &[u8]) -> bool {
    !code.contains(&b'{') && ucum::valid(code)
}

fn ndc(code: &[u8]) -> bool {
    let groups: Vec<&[u8]> = code.split(|b| *b == b'-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    groups.iter().all(|g| digits(g))
        && matches!(lens.as_slice(), [10] | [11] | [4, 4, 2] | [5, 3, 2] | [5, 4, 1] | [5, 4, 2])
}

/// A BCP 47 language tag: a primary subtag of 2 or 3 letters, then subtags of 1 to 8 letters or
/// digits (at most 5 of them).
pub fn bcp47(code: &[u8]) -> bool {
    let mut parts = code.split(|b| *b == b'-');
    let Some(first) = parts.next() else { return false };
    if !(2..=3).contains(&first.len()) || !first.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let mut n = 0;
    for p in parts {
        n += 1;
        if n > 5 || p.is_empty() || p.len() > 8 || !p.iter().all(u8::is_ascii_alphanumeric) {
            return false;
        }
    }
    true
}

/// A MIME type: a top-level type HL7 and IANA define, `/`, a token; parameters (after `;`) are
/// not kept (they can carry a name: `name=...`).
pub fn mime(code: &[u8]) -> bool {
    let Some(slash) = code.iter().position(|b| *b == b'/') else { return false };
    let (top, sub) = (&code[..slash], &code[slash + 1..]);
    let token = |s: &[u8]| {
        !s.is_empty()
            && s.len() <= 64
            && s.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_'))
    };
    matches!(
        top,
        b"application" | b"audio" | b"font" | b"image" | b"message" | b"model" | b"multipart" | b"text" | b"video"
    ) && token(sub)
}

/// ISO 3166-1 alpha-2 codes.
const ALPHA2: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR \
BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI \
FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS \
IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO \
MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA \
RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT \
TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW";

/// A country: an ISO 3166-1 alpha-2 code, or an alpha-3 code of HL7 table 0399.
pub fn country(code: &[u8]) -> bool {
    match code.len() {
        2 => ALPHA2.split(' ').any(|c| c.as_bytes() == code),
        3 => code.iter().all(u8::is_ascii_uppercase) && hl7_table_value(399, code, Version::V2_8_2),
        _ => false,
    }
}

/// US states, territories and military post codes, and Canadian provinces (USPS and Canada Post
/// abbreviations): the only subdivisions a `state` keeps.
const STATES: &str = "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ \
NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY AS GU MP PR VI UM FM MH PW AA AE AP AB BC MB NB NL NS NT \
NU ON PE QC SK YT";

/// True for a US state (or territory) or Canadian province abbreviation.
pub fn state(code: &[u8]) -> bool {
    code.len() == 2 && STATES.split(' ').any(|c| c.as_bytes() == code)
}

/// A US ZIP code: five digits, or ZIP+4 (`NNNNN-NNNN` or nine digits), or a three-digit prefix.
pub fn zip(code: &[u8]) -> bool {
    match code.len() {
        3 | 5 | 9 => digits(code),
        10 => digits(&code[..5]) && code[5] == b'-' && digits(&code[6..]),
        _ => false,
    }
}

/// An HL7 v2 number (NM): an optional sign, digits with at most one decimal point.
pub fn hl7_number(v: &[u8]) -> bool {
    let body = v.strip_prefix(b"-").or_else(|| v.strip_prefix(b"+")).unwrap_or(v);
    body.iter().any(u8::is_ascii_digit)
        && body.len() <= 32
        && body.iter().filter(|b| **b == b'.').count() <= 1
        && body.iter().all(|b| b.is_ascii_digit() || *b == b'.')
}

/// A FHIR number (JSON number syntax, as `integer` and `decimal` are written).
pub fn fhir_number(v: &[u8]) -> bool {
    let body = v.strip_prefix(b"-").unwrap_or(v);
    let (mantissa, exp) = match body.iter().position(|b| matches!(b, b'e' | b'E')) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.iter().position(|b| *b == b'.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(b"+").or_else(|| e.strip_prefix(b"-")).unwrap_or(e)));
    v.len() <= 40 && digits(int) && frac.is_none_or(digits) && exp_ok
}

/// An HL7 v2 date or date/time (DT, DTM, TS): `YYYY[MM[DD[HH[MM[SS[.S{1,4}]]]]]][+/-ZZZZ]`.
pub fn hl7_datetime(v: &[u8]) -> bool {
    let (body, zone) = split_zone(v);
    let (main, frac) = match body.iter().position(|b| *b == b'.') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    zone && matches!(main.len(), 4 | 6 | 8 | 10 | 12 | 14)
        && digits(main)
        && frac.is_none_or(|f| main.len() == 14 && (1..=4).contains(&f.len()) && digits(f))
}

/// An HL7 v2 time (TM): `HH[MM[SS[.S{1,4}]]][+/-ZZZZ]`.
pub fn hl7_time(v: &[u8]) -> bool {
    let (body, zone) = split_zone(v);
    let (main, frac) = match body.iter().position(|b| *b == b'.') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    zone && matches!(main.len(), 2 | 4 | 6)
        && digits(main)
        && frac.is_none_or(|f| main.len() == 6 && (1..=4).contains(&f.len()) && digits(f))
}

/// Splits a trailing `+ZZZZ`/`-ZZZZ`; the flag is false when one is there and malformed.
fn split_zone(v: &[u8]) -> (&[u8], bool) {
    match v.iter().position(|b| *b == b'+' || *b == b'-') {
        Some(i) => (&v[..i], v.len() - i == 5 && digits(&v[i + 1..])),
        None => (v, true),
    }
}

/// A FHIR `date`, `dateTime` or `instant`: `YYYY[-MM[-DD[Thh:mm[:ss[.s+]][Z|+hh:mm|-hh:mm]]]]`.
pub fn fhir_datetime(v: &[u8]) -> bool {
    if v.len() < 4 || v.len() > 40 || !digits(&v[..4]) {
        return false;
    }
    let mut rest = &v[4..];
    for _ in 0..2 {
        match rest.first() {
            None => return true,
            Some(b'-') if rest.len() >= 3 && digits(&rest[1..3]) => rest = &rest[3..],
            _ => return false,
        }
    }
    match rest.strip_prefix(b"T") {
        None => rest.is_empty(),
        Some(t) => fhir_time_zoned(t),
    }
}

/// A FHIR `time` (`hh:mm:ss[.s+]`), or, with a zone, the time part of a `dateTime`.
pub fn fhir_time(v: &[u8]) -> bool {
    v.len() >= 8 && time_body(v).is_some_and(<[u8]>::is_empty)
}

fn time_body(v: &[u8]) -> Option<&[u8]> {
    if v.len() < 5 || !digits(&v[..2]) || v[2] != b':' || !digits(&v[3..5]) {
        return None;
    }
    let mut rest = &v[5..];
    if let Some(s) = rest.strip_prefix(b":") {
        if s.len() < 2 || !digits(&s[..2]) {
            return None;
        }
        rest = &s[2..];
        if let Some(f) = rest.strip_prefix(b".") {
            let n = f.iter().take_while(|b| b.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            rest = &f[n..];
        }
    }
    Some(rest)
}

fn fhir_time_zoned(v: &[u8]) -> bool {
    let Some(zone) = time_body(v) else { return false };
    match zone {
        b"" | b"Z" => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [*h1, *h2, *m1, *m2].iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

// ---- FHIR value sets and canonical URLs ---------------------------------------------------

/// Each code system of the bundled value sets, with the value sets that list its codes.
fn value_set_index() -> &'static BTreeMap<&'static str, Vec<u16>> {
    static INDEX: OnceLock<BTreeMap<&'static str, Vec<u16>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut map: BTreeMap<&'static str, Vec<u16>> = BTreeMap::new();
        let (count, _) = defs::value_set_counts();
        for n in 0..count.min(usize::from(u16::MAX)) as u16 {
            if let Some(vs) = defs::value_set(n) {
                for system in vs.systems() {
                    map.entry(system).or_default().push(n);
                }
            }
        }
        map
    })
}

fn value_set_system(uri: &[u8]) -> Option<&'static str> {
    let text = std::str::from_utf8(uri).ok()?;
    value_set_index().get_key_value(text).map(|(k, _)| *k)
}

fn in_value_sets(system: &str, code: &[u8]) -> bool {
    value_set_index().get(system).is_some_and(|sets| {
        sets.iter().any(|&n| defs::value_set(n).is_some_and(|vs| vs.contains(Some(system.as_bytes()), code)))
    })
}

/// True when `code` is in the (expandable) value set `n` of a binding.
pub fn in_value_set(n: u16, code: &[u8]) -> bool {
    defs::value_set(n).is_some_and(|vs| vs.contains(None, code))
}

/// True when a binding's value set can be checked here.
pub fn value_set_known(n: u16) -> bool {
    defs::value_set(n).is_some()
}

/// A canonical URL of a core StructureDefinition (`http://hl7.org/fhir/StructureDefinition/`
/// followed by a core type's name), the only profiles `meta.profile` keeps.
pub fn core_profile(v: &[u8]) -> bool {
    v.strip_prefix(b"http://hl7.org/fhir/StructureDefinition/").is_some_and(|t| defs::type_id(t).is_some())
}

/// A resource type name, or its core StructureDefinition URL (`Reference.type`).
pub fn resource_type(v: &[u8]) -> bool {
    let t = v.strip_prefix(b"http://hl7.org/fhir/StructureDefinition/").unwrap_or(v);
    defs::type_id(t).is_some_and(defs::is_resource)
}

// ---- ages -----------------------------------------------------------------------------------

/// A unit of age, with the number of that unit in 90 years (rounded down, so that an age of 90
/// years or more always reaches it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AgeUnit {
    /// 90 years in this unit.
    pub ninety_years: u64,
}

/// The age unit a unit code or text stands for (UCUM `a`, `mo`, `wk`, `d`, `h`, `min` and the
/// common spellings of years, months, weeks and days).
pub fn age_unit(unit: &[u8]) -> Option<AgeUnit> {
    let lower = unit.to_ascii_lowercase();
    let ninety_years = match lower.as_slice() {
        b"a" | b"a_j" | b"a_t" | b"a_g" | b"y" | b"yr" | b"yrs" | b"year" | b"years" => 90,
        b"mo" | b"mo_j" | b"mo_g" | b"mo_s" | b"month" | b"months" => 1080,
        b"wk" | b"week" | b"weeks" => 4680,
        b"d" | b"day" | b"days" => 32_850,
        b"h" | b"hr" | b"hour" | b"hours" => 788_400,
        b"min" | b"minute" | b"minutes" => 47_304_000,
        _ => return None,
    };
    Some(AgeUnit { ninety_years })
}

/// LOINC codes whose value is the person's age.
const LOINC_AGE_CODES: &[&[u8]] = &[
    b"30525-0", // Age
    b"21612-7", // Age - Reported
    b"21611-9", // Age - Estimated
    b"29553-5", // Age calculated
    b"35659-2", // Age at specimen collection
    b"63900-5", // Current age or age at death
    b"46251-5", // Age group
];

/// True for a LOINC code whose value is an age.
pub fn is_loinc_age_code(code: &[u8]) -> bool {
    LOINC_AGE_CODES.contains(&code)
}

/// Aggregates an age: a number below 90 years (in `unit`, years when `None`) is returned as it
/// is; 90 years or more becomes 90 years in that unit. `None` when the value is not a number.
pub fn cap_age(value: &[u8], unit: Option<AgeUnit>) -> Option<Vec<u8>> {
    let limit = unit.map_or(90, |u| u.ninety_years);
    let body = value.strip_prefix(b"+").unwrap_or(value);
    if body.starts_with(b"-") {
        return hl7_number(body).then(|| value.to_vec());
    }
    let int_len = body.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = &body[int_len..];
    let frac_ok = rest.is_empty() || (rest[0] == b'.' && rest[1..].iter().all(u8::is_ascii_digit));
    if !frac_ok || (int_len == 0 && rest.len() < 2) {
        return None;
    }
    let int = &body[..int_len];
    let trimmed = {
        let z = int.iter().take_while(|b| **b == b'0').count();
        &int[z..]
    };
    let limit_digits = limit.to_string();
    let over = trimmed.len() > limit_digits.len()
        || (trimmed.len() == limit_digits.len() && trimmed >= limit_digits.as_bytes());
    Some(if over { limit_digits.into_bytes() } else { value.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loinc_check_digits() {
        for ok in ["8867-4", "2345-7", "30525-0", "21612-7", "29553-5", "35659-2", "LA6576-8"] {
            assert!(loinc(ok.as_bytes()), "{ok}");
        }
        for bad in ["8867-5", "MKR12X", "8867", "-4", "88674", "LA-1", "12345678901-2"] {
            assert!(!loinc(bad.as_bytes()), "{bad}");
        }
        for code in LOINC_AGE_CODES {
            assert!(loinc(code));
        }
    }

    #[test]
    fn snomed_check_digits() {
        for ok in ["260385009", "22298006", "38341003", "73211009", "10828004"] {
            assert!(snomed(ok.as_bytes()), "{ok}");
        }
        for bad in ["260385008", "123456789", "MKR12X", "0260385009", "12345"] {
            assert!(!snomed(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn other_code_systems() {
        assert!(icd10(b"I10") && icd10(b"E11.9") && icd10(b"S72.001A") && icd10(b"U071"));
        assert!(!icd10(b"MKR12X") && !icd10(b"123") && !icd10(b"I10.12345"));
        assert!(icd10_pcs(b"0BH17EZ") && !icd10_pcs(b"MKR205X") && !icd10_pcs(b"0BH17E"));
        assert!(icd9(b"250.00") && icd9(b"V45.81") && icd9(b"E880.9") && !icd9(b"2500.0"));
        assert!(is_ucum(b"mg/dL") && is_ucum(b"/min") && !is_ucum(b"{Smith}") && !is_ucum(b"MKR12X"));
        assert!(ndc(b"0777-3105-02") && !ndc(b"777-31"));
        assert!(bcp47(b"en-US") && bcp47(b"en") && !bcp47(b"MKR12X") && !bcp47(b"e"));
        assert!(mime(b"image/jpeg") && !mime(b"MKR12X") && !mime(b"John/Smith") && !mime(b"text/plain; name=x"));
        assert!(country(b"US") && country(b"USA") && !country(b"MKR") && !country(b"ZZ"));
        assert!(state(b"CA") && !state(b"Ca") && !state(b"MKR12X"));
        assert_eq!(hl7_system(b"HL70001"), Some(CodeSystem::Hl7Table(1)));
        assert_eq!(hl7_system(b"MKR12X"), None);
        assert!(code_valid(CodeSystem::Hl7Table(1), b"F", Version::V2_5_1));
        assert!(!code_valid(CodeSystem::Hl7Table(1), b"MKR1X", Version::V2_5_1));
        assert_eq!(fhir_system(b"http://loinc.org"), Some(CodeSystem::Loinc));
        let gender = fhir_system(b"http://hl7.org/fhir/administrative-gender");
        assert!(gender.is_some_and(|s| code_valid(s, b"female", Version::V2_8_2)));
        assert!(gender.is_some_and(|s| !code_valid(s, b"MKR1X", Version::V2_8_2)));
        assert_eq!(fhir_system(b"http://example.org/MKR1X"), None);
    }

    #[test]
    fn numbers_and_dates() {
        assert!(hl7_number(b"72") && hl7_number(b"-1.5") && !hl7_number(b"MKR1X") && !hl7_number(b"."));
        assert!(fhir_number(b"72") && fhir_number(b"-1.50") && fhir_number(b"1e3") && !fhir_number(b"1."));
        assert!(hl7_datetime(b"20240315103000-0800") && hl7_datetime(b"2024") && !hl7_datetime(b"MKR1X"));
        assert!(hl7_time(b"1030") && !hl7_time(b"10:30"));
        assert!(fhir_datetime(b"2024-03-15T10:30:00-08:00") && fhir_datetime(b"2024") && !fhir_datetime(b"2024-3"));
        assert!(fhir_time(b"10:30:00") && !fhir_time(b"10:30"));
    }

    #[test]
    fn ages_are_capped_per_unit() {
        let years = age_unit(b"a");
        assert_eq!(cap_age(b"97", years), Some(b"90".to_vec()));
        assert_eq!(cap_age(b"89.9", years), Some(b"89.9".to_vec()));
        assert_eq!(cap_age(b"090", years), Some(b"90".to_vec()));
        assert_eq!(cap_age(b"95", None), Some(b"90".to_vec()));
        assert_eq!(cap_age(b"1100", age_unit(b"mo")), Some(b"1080".to_vec()));
        assert_eq!(cap_age(b"97", age_unit(b"d")), Some(b"97".to_vec()));
        assert_eq!(cap_age(b"MKR1X", years), None);
        assert_eq!(age_unit(b"kg"), None);
    }
}
