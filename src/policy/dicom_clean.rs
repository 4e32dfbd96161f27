//! The DICOM `clean` action: PS3.15 E.1's C ("clean, that is replace with values of similar
//! meaning known not to contain identifying information and consistent with the VR") for text
//! (LO, SH, ST, LT, UT, UC), done by keeping a value only when it is known not to identify, as it
//! is (byte for byte: every word of it is proven, so there is nothing to replace), and writing
//! the rule's fallback (the Basic Profile's action) otherwise.
//!
//! A value is known not to identify when:
//! - it is ASCII with no control character but TAB, CR, LF (non-ASCII text, an ISO 2022 escape:
//!   what its words are is not checked, fail closed);
//! - nothing in it looks like a date, time or identifier: no digit run of more than 3 digits
//!   (a decimal part of at most 3 after one `.`), no digits joined by `/`, `-` or `:` (`5/24`,
//!   `12:30`, `1-2`), no number with two `.` (`1.2.3`);
//! - split into tokens at every character other than a letter, a digit or a `.` (spaces,
//!   punctuation, `\` between values), each token (its `.`s at either end trimmed; compared
//!   lowercase) is a word of [`vocab::WORDS`], a number of at most 3 digits with at most one
//!   decimal part of at most 3 digits (`5`, `5.0`, `0.625`, `120`), such a number followed by a
//!   unit of [`vocab::UNITS`] (`5mm`, `120kV`), or words of the vocabulary joined by `.`
//!   (`W.O`);
//! - and no token, nor any `.`-separated part of one, is a token of a person name (any PN
//!   element of the dataset, at any depth) or of an identifier of the dataset
//!   ([`IDENTIFIERS`]): the patient's own family name is refused even where it is a word of the
//!   vocabulary. Those tokens are read from the input in memory only and wiped after the file.
//!
//! What it does not do: rewrite a value (a value with one unknown word is not kept at all), or
//! judge meaning (a sentence of known words that together identify someone, as "left hand
//! amputee", is kept: the words are the standard's).

use crate::formats::dicom::vocab;

/// Identifiers whose tokens a cleaned value may not hold (with every PN element): Accession
/// Number, Patient ID, Issuer of Patient ID, Other Patient IDs, Patient's Address, Patient's
/// Telephone Numbers, Medical Record Locator, Insurance Plan Identification, Military Rank,
/// Branch of Service, Study ID, Admission ID, Scheduled Procedure Step ID, Performed Procedure
/// Step ID, Requested Procedure ID, Placer and Filler Order Numbers, Device Serial Number,
/// Institution Name and Address, Station Name, Specimen and Container Identifiers.
pub(crate) const IDENTIFIERS: &[u32] = &[
    0x0008_0050,
    0x0008_0080,
    0x0008_0081,
    0x0008_1010,
    0x0010_0020,
    0x0010_0021,
    0x0010_1000,
    0x0010_1040,
    0x0010_1050,
    0x0010_1080,
    0x0010_1081,
    0x0010_1090,
    0x0010_2154,
    0x0018_1000,
    0x0020_0010,
    0x0038_0010,
    0x0040_0009,
    0x0040_0253,
    0x0040_0512,
    0x0040_0551,
    0x0040_1001,
    0x0040_2016,
    0x0040_2017,
];

/// The tokens of `v` as the cleaner and the forbidden list split them: runs of ASCII letters
/// and digits, lowercase (every other byte separates).
pub(crate) fn name_tokens(v: &[u8], out: &mut Vec<Vec<u8>>) {
    for t in v.split(|b| !b.is_ascii_alphanumeric()) {
        if !t.is_empty() {
            out.push(t.to_ascii_lowercase());
        }
    }
}

/// True when `v` is kept by `clean` ([module docs](self)); `forbidden`: the dataset's name and
/// identifier tokens, sorted.
pub(crate) fn clean_ok(v: &[u8], forbidden: &[Vec<u8>]) -> bool {
    let mut lower = Vec::new();
    let ok = words_ok(v, forbidden, &mut lower);
    crate::phi::wipe(&mut lower);
    ok
}

/// [`clean_ok`], with `lower` the scratch buffer of a token in lowercase.
fn words_ok(v: &[u8], forbidden: &[Vec<u8>], lower: &mut Vec<u8>) -> bool {
    if v.iter().any(|&b| !(b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\r' | b'\n'))) {
        return false;
    }
    if date_or_id_like(v) {
        return false;
    }
    for t in v.split(|b| !(b.is_ascii_alphanumeric() || *b == b'.')) {
        let start = t.iter().position(|b| *b != b'.').unwrap_or(t.len());
        let end = t.iter().rposition(|b| *b != b'.').map_or(start, |e| e + 1);
        let Some(t) = t.get(start..end).filter(|t| !t.is_empty()) else { continue };
        lower.clear();
        lower.extend(t.iter().map(u8::to_ascii_lowercase));
        let parts = || lower.split(|b| *b == b'.').filter(|p| !p.is_empty());
        // The token, each `.` part and a number+unit's number (`120` of `120kv`).
        let num = lower.iter().take_while(|b| b.is_ascii_digit()).count();
        let is_forbidden = |p: &[u8]| forbidden.binary_search_by(|f| f[..].cmp(p)).is_ok();
        if is_forbidden(lower) || parts().any(is_forbidden) || num > 0 && is_forbidden(&lower[..num]) {
            return false;
        }
        let ok = is_word(lower) || number_unit(lower) || lower.contains(&b'.') && parts().all(is_word);
        if !ok {
            return false;
        }
    }
    true
}

/// A word of the vocabulary.
fn is_word(t: &[u8]) -> bool {
    std::str::from_utf8(t).is_ok_and(|s| vocab::WORDS.binary_search(&s).is_ok())
}

/// `5`, `5.0`, `0.625`, `120`, each optionally followed by a unit of [`vocab::UNITS`].
fn number_unit(t: &[u8]) -> bool {
    let int = t.iter().take_while(|b| b.is_ascii_digit()).count();
    if int == 0 || int > 3 {
        return false;
    }
    let mut rest = &t[int..];
    if let Some(r) = rest.strip_prefix(b".") {
        let frac = r.iter().take_while(|b| b.is_ascii_digit()).count();
        if frac == 0 || frac > 3 {
            return false;
        }
        rest = &r[frac..];
    }
    rest.is_empty() || std::str::from_utf8(rest).is_ok_and(|s| vocab::UNITS.binary_search(&s).is_ok())
}

/// A digit run of more than 3 digits, digits joined by `/`, `-` or `:`, or a number with two
/// `.`: a date, a time, an identifier or a UID.
fn date_or_id_like(v: &[u8]) -> bool {
    let mut run = 0usize;
    let mut dots = 0usize;
    for (i, &b) in v.iter().enumerate() {
        if b.is_ascii_digit() {
            run += 1;
            if run > 3 {
                return true;
            }
            continue;
        }
        let prev_digit = i > 0 && v[i - 1].is_ascii_digit();
        let next_digit = v.get(i + 1).is_some_and(u8::is_ascii_digit);
        if prev_digit && next_digit {
            match b {
                b'/' | b'-' | b':' => return true,
                b'.' => {
                    dots += 1;
                    if dots > 1 {
                        return true;
                    }
                    run = 0;
                    continue;
                }
                _ => {}
            }
        }
        run = 0;
        if !(b == b'.' && prev_digit) {
            dots = 0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden(names: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for n in names {
            name_tokens(n, &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn identifiers_are_sorted() {
        assert!(IDENTIFIERS.windows(2).all(|w| w[0] < w[1]), "binary searched");
    }

    #[test]
    fn descriptions_of_known_words_are_kept() {
        let none = forbidden(&[]);
        for v in [
            &b"CT CHEST W CONTRAST 5.0mm AXIAL"[..],
            b"AXIAL 0.625 SOFT TISSUE",
            b"T2 FLAIR AX",
            b"120kV",
            b"",
            b"  ",
            b"CT CHEST\\AXIAL",
            b"CT.CHEST CONTRAST",
        ] {
            assert!(clean_ok(v, &none), "{}", String::from_utf8_lossy(v));
        }
    }

    #[test]
    fn what_may_identify_falls_back() {
        let none = forbidden(&[]);
        for v in [
            &b"CT CHEST 1234567"[..],
            b"CT CHEST 2024-01-05",
            b"CT CHEST 01/05/24",
            b"CT 12:30",
            b"CT CHEST 1.2.840",
            b"CT CHEST ZQXWV",
            b"CT CHEST 5.0123mm",
            b"CT CHEST 5zz",
            b"CT CHEST JANUARY",
            b"CT CHEST JOHN",
            b"CT CHEST SMITH",
            b"CT CHEST A12B",
            b"CT \x1b$B CHEST",
            b"CT CH\xc3\x89ST",
            b"CT\x00",
        ] {
            assert!(!clean_ok(v, &none), "{}", String::from_utf8_lossy(v));
        }
    }

    #[test]
    fn the_datasets_names_and_identifiers_fall_back() {
        // "Chest" and "Axial" are words of the vocabulary: a patient so named still falls back.
        let f = forbidden(&[b"CHEST^AXIAL", b"120"]);
        assert!(!clean_ok(b"CT CHEST", &f));
        assert!(!clean_ok(b"ct axial", &f));
        assert!(!clean_ok(b"CT 120kV", &f), "a number+unit's number");
        assert!(!clean_ok(b"CT 120 kV", &f));
        assert!(clean_ok(b"CT CONTRAST", &f));
    }
}
