//! Syntax of the HL7 v2 primitive data types that have one (chapter 2A): `DT`, `DTM` (and the
//! time of `TS`), `TM`, `NM`, `SI`, and lookups of `ID` values in HL7-defined tables.
//!
//! Each check runs inside `PhiBytes::classify` and returns a [`Verdict`], a value-free result.
//! Dates and times are checked against the grammar of the declared version ([`Era`]) and,
//! separately, against a tolerant grammar, the union of all versions' (any precision down to the
//! year, a time-zone offset on any date/time, up to four fractional digits, more as a
//! deviation). A value the tolerant grammar accepts but the version's does not is
//! [`Verdict::Nonstandard`]; calendar ranges (month, day of month with leap years, hour, minute,
//! second, offset) are always enforced.
//!
//! What it does not do: unescape (a value holding an escape sequence fails the numeric and
//! date checks, as it should: those types have no characters to escape), or check `ST`, `TX`,
//! `FT` (any text), `IS` (user-defined tables) or the composite types (see `fields`).

use crate::formats::hl7v2::schema::TableDef;

use super::plan::{CodeSet, Era};

/// The outcome of a value check.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Conformant in the declared version.
    Ok,
    /// Accepted by common practice or a later version, not by the declared version.
    Nonstandard,
    /// Not a value of the type in any version.
    Invalid,
}

impl crate::phi::sealed::Sealed for Verdict {}
impl crate::phi::ValueFree for Verdict {}

fn digits(v: &[u8]) -> bool {
    v.iter().all(u8::is_ascii_digit)
}

fn num(v: &[u8]) -> u32 {
    v.iter().fold(0u32, |acc, d| acc.saturating_mul(10).saturating_add(u32::from(d.wrapping_sub(b'0'))))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 0,
    }
}

/// Splits a trailing `+ZZZZ` / `-ZZZZ` offset. `Err` when the offset is malformed.
fn split_offset(v: &[u8]) -> Result<(&[u8], bool), ()> {
    let Some(at) = v.iter().position(|b| *b == b'+' || *b == b'-') else { return Ok((v, false)) };
    let (body, zone) = v.split_at(at);
    let zone = zone.get(1..).unwrap_or_default();
    let ok = zone.len() == 4 && digits(zone) && num(&zone[..2]) <= 14 && num(&zone[2..]) <= 59;
    if ok { Ok((body, true)) } else { Err(()) }
}

/// `YYYY[MM[DD]]`, with calendar ranges. `len` is 4, 6 or 8.
fn date_parts_ok(v: &[u8]) -> bool {
    if !matches!(v.len(), 4 | 6 | 8) || !digits(v) {
        return false;
    }
    let year = num(&v[..4]);
    if v.len() >= 6 {
        let month = num(&v[4..6]);
        if !(1..=12).contains(&month) {
            return false;
        }
        if v.len() == 8 {
            let day = num(&v[6..8]);
            if day == 0 || day > days_in_month(year, month) {
                return false;
            }
        }
    }
    true
}

/// `HH[MM[SS]]` ranges; `v` is 2, 4 or 6 digits.
fn clock_ok(v: &[u8]) -> bool {
    if !matches!(v.len(), 2 | 4 | 6) || !digits(v) {
        return false;
    }
    num(&v[..2]) <= 23 && (v.len() < 4 || num(&v[2..4]) <= 59) && (v.len() < 6 || num(&v[4..6]) <= 59)
}

/// Splits `.S...` fractional seconds; returns (main, fraction digits count or None). `Err` when
/// the fraction is empty or not digits.
fn split_fraction(v: &[u8]) -> Result<(&[u8], Option<usize>), ()> {
    match v.iter().position(|b| *b == b'.') {
        None => Ok((v, None)),
        Some(at) => {
            let frac = v.get(at + 1..).unwrap_or_default();
            if frac.is_empty() || !digits(frac) {
                return Err(());
            }
            Ok((&v[..at], Some(frac.len())))
        }
    }
}

/// `DT`: `YYYY[MM[DD]]` (2.1 and 2.2: `YYYYMMDD`). No offset.
pub(crate) fn date(v: &[u8], era: Era) -> Verdict {
    if !date_parts_ok(v) {
        return Verdict::Invalid;
    }
    if era == Era::V2_1 && v.len() != 8 {
        return Verdict::Nonstandard;
    }
    Verdict::Ok
}

/// `TM`: `HH[MM[SS[.S[S[S[S]]]]]][+/-ZZZZ]` (2.1 and 2.2: minutes required).
pub(crate) fn time(v: &[u8], era: Era) -> Verdict {
    let Ok((body, _)) = split_offset(v) else { return Verdict::Invalid };
    let Ok((clock, frac)) = split_fraction(body) else { return Verdict::Invalid };
    if !clock_ok(clock) || (frac.is_some() && clock.len() != 6) {
        return Verdict::Invalid;
    }
    if frac.is_some_and(|n| n > 4) || (era == Era::V2_1 && clock.len() == 2) {
        return Verdict::Nonstandard;
    }
    Verdict::Ok
}

/// `DTM` and the time of `TS`: `YYYY[MM[DD[HH[MM[SS[.S[S[S[S]]]]]]]]][+/-ZZZZ]`; 2.3 and 2.4
/// write hours and minutes together; 2.1 and 2.2 need the full date.
pub(crate) fn datetime(v: &[u8], era: Era) -> Verdict {
    // The common shapes (a date, a date and time to the second, either with an offset in
    // range) are read eight bytes at a time.
    if let Some(verdict) = datetime_common(v) {
        return verdict;
    }
    // Most values are digits, then at most a fraction and an offset: one pass reads them, and
    // the digits are then judged as such.
    match datetime_shape(v) {
        Some(Ok((main, frac))) => datetime_digits(main, frac, era),
        Some(Err(())) => Verdict::Invalid,
        None => datetime_split(v, era),
    }
}

/// Whether the eight bytes are all ASCII digits (each byte's high nibble is 3, and adding 6 to
/// the byte keeps it so: no byte can carry, the first test bounding each at 0x3F).
fn eight_digits(b: [u8; 8]) -> bool {
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    let x = u64::from_le_bytes(b);
    x & HIGH == THREES && x.wrapping_add(0x0606_0606_0606_0606) & HIGH == THREES
}

/// [`datetime`] of `v` when it is 8 or 14 digits, alone or followed by an offset `+/-DDDD` in
/// range (the shapes [`datetime_shape`] reads as `Ok((digits, None))`), judged as
/// [`datetime_digits`] judges them: a full date, and at 14 digits a time to the second, are
/// standard in every era, so the verdict is `Ok` or `Invalid`. `None` for anything else (then
/// read by the general path).
fn datetime_common(v: &[u8]) -> Option<Verdict> {
    let main = match v.len() {
        8 | 14 => v,
        13 | 19 => {
            let (main, zone) = v.split_at(v.len() - 5);
            let &[sign, h1, h2, m1, m2] = zone else { return None };
            let zone_ok = matches!(sign, b'+' | b'-')
                && [h1, h2, m1, m2].iter().all(u8::is_ascii_digit)
                && (h1 - b'0') * 10 + (h2 - b'0') <= 14
                && m1 <= b'5';
            if !zone_ok {
                return None;
            }
            main
        }
        _ => return None,
    };
    let first: [u8; 8] = main.get(..8)?.try_into().ok()?;
    let last: [u8; 8] = main.get(main.len() - 8..)?.try_into().ok()?;
    if !(eight_digits(first) && eight_digits(last)) {
        return None;
    }
    // Two digits as a number.
    let two = |a: u8, b: u8| u32::from(a - b'0') * 10 + u32::from(b - b'0');
    let [y0, y1, y2, y3, mo0, mo1, d0, d1] = first;
    let month = two(mo0, mo1);
    let day = two(d0, d1);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(two(y0, y1) * 100 + two(y2, y3), month) {
        return Some(Verdict::Invalid);
    }
    // 14 digits: `last` is digits 7 to 14, the day and the clock.
    let [_, _, h0, h1, mi0, mi1, s0, s1] = last;
    if main.len() == 14 && (two(h0, h1) > 23 || two(mi0, mi1) > 59 || two(s0, s1) > 59) {
        return Some(Verdict::Invalid);
    }
    Some(Verdict::Ok)
}

/// [`datetime`] by parts, for the values [`datetime_shape`] does not read.
fn datetime_split(v: &[u8], era: Era) -> Verdict {
    let Ok((body, _)) = split_offset(v) else { return Verdict::Invalid };
    let Ok((main, frac)) = split_fraction(body) else { return Verdict::Invalid };
    if !digits(main) {
        return Verdict::Invalid;
    }
    datetime_digits(main, frac, era)
}

/// [`datetime`] of the digits `main` before a fraction of `frac` digits (when there is one).
fn datetime_digits(main: &[u8], frac: Option<usize>, era: Era) -> Verdict {
    // Two digits as a number; `main` holds digits only.
    let two = |i: usize| match main.get(i..i + 2) {
        Some(&[a, b]) => u32::from(a.wrapping_sub(b'0')) * 10 + u32::from(b.wrapping_sub(b'0')),
        _ => 0,
    };
    let len = main.len();
    // `YYYY[MM[DD[HH[MM[SS]]]]]`, a fraction only after the seconds.
    if !matches!(len, 4 | 6 | 8 | 10 | 12 | 14) || (frac.is_some() && len != 14) {
        return Verdict::Invalid;
    }
    if len >= 6 {
        let month = two(4);
        if !(1..=12).contains(&month) {
            return Verdict::Invalid;
        }
        if len >= 8 {
            let day = two(6);
            if day == 0 || day > days_in_month(two(0) * 100 + two(2), month) {
                return Verdict::Invalid;
            }
        }
    }
    if len >= 10 && (two(8) > 23 || (len >= 12 && two(10) > 59) || (len >= 14 && two(12) > 59)) {
        return Verdict::Invalid;
    }
    let nonstandard = frac.is_some_and(|n| n > 4)
        || match era {
            Era::V2_1 => len < 8 || len == 10,
            Era::V2_3 => len == 10,
            Era::V2_5 => false,
        };
    if nonstandard { Verdict::Nonstandard } else { Verdict::Ok }
}

/// The digits of a date/time before its fraction, and the count of fraction digits.
type DateTimeParts<'a> = (&'a [u8], Option<usize>);

/// `v` read in one pass as `D+[.D+][+/-DDDD]`: the digits before the fraction and the count of
/// fraction digits, or `Err` when the offset is out of range (what `split_offset` and
/// `split_fraction` would give); `None` for any other shape, which the splits then judge.
fn datetime_shape(v: &[u8]) -> Option<Result<DateTimeParts<'_>, ()>> {
    let n = v.iter().take_while(|b| b.is_ascii_digit()).count();
    let (main, mut rest) = v.split_at(n);
    let mut frac = None;
    if let Some((b'.', after)) = rest.split_first() {
        let f = after.iter().take_while(|b| b.is_ascii_digit()).count();
        if f == 0 {
            return None;
        }
        frac = Some(f);
        rest = after.get(f..).unwrap_or_default();
    }
    match rest {
        [] => Some(Ok((main, frac))),
        [b'+' | b'-', zone @ ..] if zone.len() == 4 && digits(zone) => {
            let ok = num(&zone[..2]) <= 14 && num(&zone[2..]) <= 59;
            Some(if ok { Ok((main, frac)) } else { Err(()) })
        }
        _ => None,
    }
}

/// `NM`: an optional sign, digits, an optional decimal point (`+1`, `-0.5`, `.5`, `5.`).
pub(crate) fn number(v: &[u8]) -> bool {
    let body = match v.first() {
        Some(b'+' | b'-') => &v[1..],
        _ => v,
    };
    let mut seen_digit = false;
    let mut seen_point = false;
    for &b in body {
        match b {
            b'0'..=b'9' => seen_digit = true,
            b'.' if !seen_point => seen_point = true,
            _ => return false,
        }
    }
    seen_digit
}

/// `SI`: a non-negative integer.
pub(crate) fn sequence_id(v: &[u8]) -> bool {
    !v.is_empty() && digits(v)
}

/// Where a value stands against an HL7-defined table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Coded {
    /// Listed (or matching a pattern the table itself defines).
    Listed,
    /// A local code: starts with `Z` (HL7 reserves Z codes for local use).
    Local,
    /// Not listed.
    Unlisted,
}

impl crate::phi::sealed::Sealed for Coded {}
impl crate::phi::ValueFree for Coded {}

/// Looks `v` up in `set`. Beyond its values it accepts what the table itself defines as
/// patterns (table 0396: `HL7nnnn` and `99zzz`).
#[inline]
pub(crate) fn coded(v: &[u8], set: &CodeSet) -> Coded {
    if set.contains(v) { Coded::Listed } else { unlisted(v, set) }
}

/// [`coded`] for a value that `set` does not list: the forms table 0396 allows beyond its
/// list, a local `Z` code, or unlisted.
pub(crate) fn unlisted(v: &[u8], set: &CodeSet) -> Coded {
    if set.number == 396 {
        let hl7 = v.len() == 7 && v.starts_with(b"HL7") && digits(&v[3..]);
        let local = v.len() > 2 && v.starts_with(b"99") && v[2..].iter().all(u8::is_ascii_alphanumeric);
        if hl7 || local {
            return Coded::Listed;
        }
    }
    if v.first() == Some(&b'Z') { Coded::Local } else { Coded::Unlisted }
}

/// Whether a value outside `table` is only a warning: approximate value lists (2.1 to 2.3,
/// from an unversioned source), the tables HL7 maintains outside the standard's text and
/// extends between versions: 0396 (coding systems), 0291 (subtype of referenced data, MIME
/// subtypes) and 0834 (MIME types); 0399 (country code), a copy of ISO 3166 ("ISO 3166 provides
/// a list of country codes that may be used", chapter 2A, XAD.6; MSH-17 and real senders also
/// use its alpha-2 form); and 0203 (identifier type), whose values the standard gives as
/// suggestions (chapter 2A, CX.5: "Refer to HL7 Table 0203 - Identifier Type for suggested
/// values"; user-defined up to 2.4).
pub(crate) fn is_open(table: &TableDef) -> bool {
    table.values_approximate || matches!(table.number, 203 | 291 | 396 | 399 | 834)
}

/// Characters in a UTF-8 (or single-byte) value: bytes that do not continue a UTF-8 sequence.
pub(crate) fn char_count(v: &[u8]) -> usize {
    v.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Invalid, Nonstandard, Ok};

    #[test]
    fn dates() {
        assert_eq!(date(b"20240229", Era::V2_5), Ok);
        assert_eq!(date(b"20230229", Era::V2_5), Invalid);
        assert_eq!(date(b"202402", Era::V2_5), Ok);
        assert_eq!(date(b"2024", Era::V2_5), Ok);
        assert_eq!(date(b"2024", Era::V2_1), Nonstandard);
        assert_eq!(date(b"20241301", Era::V2_5), Invalid);
        assert_eq!(date(b"2024-02-01", Era::V2_5), Invalid);
        assert_eq!(date(b"20240201-0500", Era::V2_5), Invalid);
        assert_eq!(date(b"", Era::V2_5), Invalid);
        assert_eq!(date(b"19840312 ", Era::V2_5), Invalid);
    }

    #[test]
    fn datetimes() {
        assert_eq!(datetime(b"20240311093100-0700", Era::V2_5), Ok);
        assert_eq!(datetime(b"20240311093100.1234+0100", Era::V2_5), Ok);
        assert_eq!(datetime(b"20240311093100.123456", Era::V2_5), Nonstandard);
        assert_eq!(datetime(b"2024031109", Era::V2_5), Ok);
        assert_eq!(datetime(b"2024031109", Era::V2_3), Nonstandard);
        assert_eq!(datetime(b"202403110931", Era::V2_3), Ok);
        assert_eq!(datetime(b"2024", Era::V2_3), Ok);
        assert_eq!(datetime(b"2024", Era::V2_1), Nonstandard);
        assert_eq!(datetime(b"20240311", Era::V2_1), Ok);
        assert_eq!(datetime(b"20240311-0700", Era::V2_5), Ok);
        assert_eq!(datetime(b"20240311250000", Era::V2_5), Invalid);
        assert_eq!(datetime(b"20240311236000", Era::V2_5), Invalid);
        assert_eq!(datetime(b"2024031109310", Era::V2_5), Invalid);
        assert_eq!(datetime(b"20240311093100-07", Era::V2_5), Invalid);
        assert_eq!(datetime(b"20240311093100+1500", Era::V2_5), Invalid);
        assert_eq!(datetime(b"2024031109.5", Era::V2_5), Invalid);
        assert_eq!(datetime(b"20240311093100.", Era::V2_5), Invalid);
        assert_eq!(datetime(b"2024-03-11T09:31", Era::V2_5), Invalid);
        assert_eq!(datetime(b"-0700", Era::V2_5), Invalid);
    }

    /// The grammar of [`datetime`] written plainly, by parts.
    fn datetime_reference(v: &[u8], era: Era) -> Verdict {
        let Result::Ok((body, _)) = split_offset(v) else { return Invalid };
        let Result::Ok((main, frac)) = split_fraction(body) else { return Invalid };
        if !digits(main) || main.len() < 4 {
            return Invalid;
        }
        let (day, clock) = main.split_at(main.len().min(8));
        if !date_parts_ok(day) || (!clock.is_empty() && (day.len() != 8 || !clock_ok(clock))) {
            return Invalid;
        }
        if frac.is_some() && clock.len() != 6 {
            return Invalid;
        }
        let nonstandard = frac.is_some_and(|n| n > 4)
            || match era {
                Era::V2_1 => day.len() != 8 || clock.len() == 2,
                Era::V2_3 => clock.len() == 2,
                Era::V2_5 => false,
            };
        if nonstandard { Nonstandard } else { Ok }
    }

    #[test]
    fn eight_digit_words() {
        assert!(eight_digits(*b"01234567"));
        assert!(eight_digits(*b"99999999"));
        for bad in [*b"0123456:", *b"/1234567", *b"0123 567", *b"012345\xff7", *b"?1234567", *b"0123456@"] {
            assert!(!eight_digits(bad), "{bad:?}");
        }
        for i in 0..8 {
            for b in 0..=255u8 {
                let mut w = *b"00000000";
                w[i] = b;
                assert_eq!(eight_digits(w), b.is_ascii_digit(), "{w:?}");
            }
        }
    }

    #[test]
    fn common_datetimes_agree_with_the_general_path() {
        let samples: &[&[u8]] = &[
            b"20240229",
            b"20230229",
            b"20241301",
            b"20240923041457",
            b"19000229",
            b"20000229",
            b"20240431",
            b"20240430",
            b"20241200",
            b"20241232",
            b"20241231",
            b"00000101",
            b"20240923000000",
            b"20240923235959",
            b"20240923240000",
            b"20240923236000",
            b"20240923235960",
            b"20240923041457-0500",
            b"20240923041457+0000",
            b"20240923041457-1459",
            b"20240923-1400",
            b"20240931-0500",
            b"20240923041457+1400",
            b"20240923041457+1500",
            b"20240923041457-0560",
            b"20240923041457-0599",
            b"20240923041457-05a0",
            b"20240923041457*0500",
            b"20240923-0500",
            b"2024092304145x-0500",
            b"20240923251457",
            b"2024-09-23",
            b"20240923-05:0",
        ];
        for v in samples {
            for era in [Era::V2_1, Era::V2_3, Era::V2_5] {
                let general = match datetime_shape(v) {
                    Some(Result::Ok((main, frac))) => datetime_digits(main, frac, era),
                    Some(Err(())) => Invalid,
                    None => datetime_split(v, era),
                };
                assert_eq!(datetime(v, era), general, "{v:?} {era:?}");
                assert_eq!(datetime(v, era), datetime_reference(v, era), "{v:?} {era:?}");
            }
        }
    }

    #[test]
    fn datetimes_agree_with_the_plain_grammar() {
        let stems: &[&[u8]] = &[
            b"",
            b"2",
            b"20",
            b"202",
            b"2024",
            b"20240",
            b"202402",
            b"202413",
            b"202400",
            b"2024021",
            b"20240229",
            b"20230229",
            b"19000229",
            b"20000229",
            b"20240431",
            b"20240100",
            b"202402011",
            b"2024020109",
            b"2024020124",
            b"20240201093",
            b"202402010959",
            b"202402010960",
            b"2024020109591",
            b"20240201095959",
            b"20240201095960",
            b"20240201235959",
            b"202402012359590",
            b"0000",
            b"000000",
            b"00000000",
            b"99991231235959",
            b"9999123123595912",
            b"2024O2",
            b"-0500",
        ];
        let tails: &[&[u8]] = &[
            b"",
            b".1",
            b".1234",
            b".12345",
            b".",
            b".x",
            b"-0500",
            b"+1400",
            b"+1500",
            b"-0560",
            b"-05",
            b"+05000",
            b".12-0500",
            b".123456+0100",
            b"Z",
            b" ",
            b"-05a0",
            b"+-0500",
            b"..1",
        ];
        for stem in stems {
            for tail in tails {
                let v = [*stem, *tail].concat();
                for era in [Era::V2_1, Era::V2_3, Era::V2_5] {
                    assert_eq!(datetime(&v, era), datetime_reference(&v, era), "{v:?} {era:?}");
                }
            }
        }
    }

    #[test]
    fn times() {
        assert_eq!(time(b"0930", Era::V2_5), Ok);
        assert_eq!(time(b"09", Era::V2_5), Ok);
        assert_eq!(time(b"09", Era::V2_1), Nonstandard);
        assert_eq!(time(b"093015.25-0500", Era::V2_5), Ok);
        assert_eq!(time(b"2400", Era::V2_5), Invalid);
        assert_eq!(time(b"0960", Era::V2_5), Invalid);
        assert_eq!(time(b"9:30", Era::V2_5), Invalid);
    }

    #[test]
    fn numbers() {
        for ok in [&b"1"[..], b"-1", b"+1.5", b".5", b"5.", b"0012"] {
            assert!(number(ok), "{ok:?}");
        }
        for bad in [&b""[..], b"-", b".", b"1.2.3", b"1e5", b" 1", b"1,5", b"<5"] {
            assert!(!number(bad), "{bad:?}");
        }
        assert!(sequence_id(b"12"));
        assert!(!sequence_id(b"-1"));
        assert!(!sequence_id(b""));
        assert!(!sequence_id(b"1.0"));
    }

    #[test]
    fn characters() {
        assert_eq!(char_count("Zoë".as_bytes()), 3);
        assert_eq!(char_count(b"abc"), 3);
    }
}
