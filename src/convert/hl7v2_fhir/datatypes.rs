//! HL7 v2 data types to FHIR data types, after the V2-to-FHIR IG's data type maps (XPN to
//! HumanName, XAD to Address, XTN to ContactPoint, CX and EI to Identifier, CWE/CE/CNE to
//! CodeableConcept, DTM/TS/DT to dateTime, NM to decimal, XCN to a Practitioner, PL to Location).
//!
//! Components with no FHIR counterpart here are reported (`CONVERT_COMPONENT_UNMAPPED`); codes
//! and coding systems without a map are kept and reported. Timestamps keep their precision and
//! offset; see [`Ctx::datetime`] for what happens without an offset.
//!
//! What it does not do: the IG's rarely used components (XPN validity ranges, XAD census tracts,
//! XTN speed dial codes...): they are reported, not mapped.

use crate::diag::Code;
use crate::phi::PhiBytes;

use super::Ctx;
use super::read::Rep;
use super::tree::{Obj, V};
use super::vocab;

/// A parsed DTM/TS/DT value, its digits kept as received.
pub struct Dtm {
    digits: String,
    fraction: String,
    offset: Option<(bool, u8, u8)>,
}

/// How a timestamp was written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// As received (with its offset, or a date).
    Exact,
    /// The time had no offset: `--default-timezone` applied.
    DefaultOffset,
    /// The time had no offset and no default was given: reduced to the date.
    ReducedToDate,
}

/// Parses `YYYY[MM[DD[HH[MM[SS[.S+]]]]]][+/-ZZZZ]`; `None` when malformed or out of range.
pub fn parse_dtm(text: &str) -> Option<Dtm> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let digits = &text[..i];
    if !matches!(digits.len(), 4 | 6 | 8 | 10 | 12 | 14) {
        return None;
    }
    let mut fraction = String::new();
    if i < b.len() && b[i] == b'.' {
        if digits.len() != 14 {
            return None;
        }
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        fraction = text[start..i].to_owned();
    }
    let mut offset = None;
    if i < b.len() {
        let rest = &b[i..];
        if rest.len() != 5 || !(rest[0] == b'+' || rest[0] == b'-') || !rest[1..].iter().all(u8::is_ascii_digit) {
            return None;
        }
        let h = (rest[1] - b'0') * 10 + (rest[2] - b'0');
        let m = (rest[3] - b'0') * 10 + (rest[4] - b'0');
        if h > 14 || m > 59 {
            return None;
        }
        offset = Some((rest[0] == b'-', h, m));
    }
    let n = |r: std::ops::Range<usize>| digits.get(r).and_then(|s| s.parse::<u32>().ok());
    let year = n(0..4)?;
    if year == 0 {
        return None;
    }
    if digits.len() >= 6 && !(1..=12).contains(&n(4..6)?) {
        return None;
    }
    if digits.len() >= 8 {
        let month = n(4..6)?;
        let day = n(6..8)?;
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let max = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if day == 0 || day > max {
            return None;
        }
    }
    if digits.len() >= 10 && n(8..10)? > 23 {
        return None;
    }
    if digits.len() >= 12 && n(10..12)? > 59 {
        return None;
    }
    if digits.len() >= 14 && n(12..14)? > 59 {
        return None;
    }
    Some(Dtm { digits: digits.to_owned(), fraction, offset })
}

impl Dtm {
    /// True when the value has a time part.
    pub fn has_time(&self) -> bool {
        self.digits.len() > 8
    }

    /// The date part as FHIR `date` (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`).
    pub fn date(&self) -> String {
        let mut s = String::with_capacity(10);
        self.push_date(&mut s);
        s
    }

    /// Appends [`Dtm::date`].
    fn push_date(&self, s: &mut String) {
        let d = &self.digits;
        match d.len() {
            4 => s.push_str(&d[..4]),
            6 => {
                s.push_str(&d[..4]);
                s.push('-');
                s.push_str(&d[4..6]);
            }
            _ => {
                s.push_str(&d[..4]);
                s.push('-');
                s.push_str(&d[4..6]);
                s.push('-');
                s.push_str(&d[6..8]);
            }
        }
    }

    /// FHIR `dateTime`: the date alone, or date and time with an offset (the value's own, else
    /// `default` minutes). FHIR needs seconds when a time is given: an hour or minute precision
    /// time gets `:00` for what it does not say. Without any offset, the date alone.
    pub fn datetime(&self, default: Option<i16>) -> (String, Written) {
        if !self.has_time() {
            return (self.date(), Written::Exact);
        }
        let (sign, h, m, how) = match (self.offset, default) {
            (Some((neg, h, m)), _) => (neg, h, m, Written::Exact),
            (None, Some(mins)) => {
                (mins < 0, (mins.unsigned_abs() / 60) as u8, (mins.unsigned_abs() % 60) as u8, Written::DefaultOffset)
            }
            (None, None) => return (self.date(), Written::ReducedToDate),
        };
        let d = &self.digits;
        let hh = &d[8..10];
        let mm = d.get(10..12).unwrap_or("00");
        let ss = d.get(12..14).unwrap_or("00");
        let mut s = super::tree::string(26 + self.fraction.len());
        self.push_date(&mut s);
        s.push('T');
        s.push_str(hh);
        s.push(':');
        s.push_str(mm);
        s.push(':');
        s.push_str(ss);
        if !self.fraction.is_empty() {
            s.push('.');
            s.push_str(&self.fraction);
        }
        if h == 0 && m == 0 && !sign {
            s.push_str("+00:00");
        } else {
            s.push(if sign { '-' } else { '+' });
            push_two_digits(&mut s, h);
            s.push(':');
            push_two_digits(&mut s, m);
        }
        (s, how)
    }
}

/// Appends `n` in decimal, at least two digits (`format!("{n:02}")`).
fn push_two_digits(s: &mut String, n: u8) {
    if n >= 100 {
        s.push(char::from(b'0' + n / 100));
    }
    s.push(char::from(b'0' + n / 10 % 10));
    s.push(char::from(b'0' + n % 10));
}

/// The FHIR `instant` text `YYYY-MM-DDThh:mm:ss[.f+](Z|+hh:mm)` moved `minutes` later (an
/// appointment's end from its start and duration); the seconds, fraction and offset are kept.
/// `None` when the text is not of that shape or the year would pass 9999.
pub fn plus_minutes(instant: &str, minutes: u32) -> Option<String> {
    let b = instant.as_bytes();
    let shape = b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && [0..4, 5..7, 8..10, 11..13, 14..16].into_iter().all(|r| b[r].iter().all(u8::is_ascii_digit));
    if !shape {
        return None;
    }
    let num = |r: std::ops::Range<usize>| b[r].iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
    let (mut year, mut month, mut day) = (num(0..4), num(5..7), num(8..10));
    let clock = num(11..13) * 60 + num(14..16) + minutes % 1440;
    let mut days = minutes / 1440 + clock / 1440;
    let clock = clock % 1440;
    let month_days = |y: u32, m: u32| match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=12).contains(&month) || day == 0 || day > month_days(year, month) {
        return None;
    }
    // A month at a time: the loop runs at most 12 times per year added, and stops past 9999.
    while days > 0 {
        let left = month_days(year, month) - day;
        if days <= left {
            day += days;
            break;
        }
        days -= left + 1;
        day = 1;
        month += 1;
        if month > 12 {
            month = 1;
            year += 1;
            if year > 9999 {
                return None;
            }
        }
    }
    let mut s = String::with_capacity(instant.len());
    s.push_str(&format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}", clock / 60, clock % 60));
    s.push_str(&instant[16..]);
    Some(s)
}

/// FHIR `time` from HL7 TM (`HH[MM[SS[.S+]]]`, an offset is not allowed in FHIR time and is
/// dropped with a finding by the caller); `None` when malformed.
pub fn parse_tm(text: &str) -> Option<(String, bool)> {
    let (main, had_offset) = match text.find(['+', '-']) {
        Some(i) => (&text[..i], true),
        None => (text, false),
    };
    let (hms, frac) = main.split_once('.').map_or((main, ""), |(a, b)| (a, b));
    if !matches!(hms.len(), 2 | 4 | 6)
        || !hms.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let hh = &hms[..2];
    let mm = hms.get(2..4).unwrap_or("00");
    let ss = hms.get(4..6).unwrap_or("00");
    if hh > "23" || mm > "59" || ss > "59" || (!frac.is_empty() && hms.len() != 6) {
        return None;
    }
    let f = if frac.is_empty() { String::new() } else { format!(".{frac}") };
    Some((format!("{hh}:{mm}:{ss}{f}"), had_offset))
}

/// True when `text` is a FHIR decimal (and a JSON number).
pub fn is_decimal(text: &str) -> bool {
    let t = text.strip_prefix('-').unwrap_or(text);
    let (int, frac) = t.split_once('.').map_or((t, None), |(a, b)| (a, Some(b)));
    let int_ok = !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && (int == "0" || !int.starts_with('0'));
    int_ok && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit())) && t.len() <= 40
}

/// Normalizes an HL7 NM (`+1.50`, `.5`, `007`) to a FHIR decimal keeping its digits; `None`
/// when not a number.
pub fn decimal(text: &str) -> Option<String> {
    let t = text.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (int, frac) = body.split_once('.').map_or((body, None), |(a, b)| (a, Some(b)));
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let mut s = super::tree::string(t.len() + 1);
    if neg {
        s.push('-');
    }
    s.push_str(int);
    if let Some(f) = frac {
        if !f.is_empty() {
            s.push('.');
            s.push_str(f);
        }
    }
    is_decimal(&s).then_some(s)
}

/// True unless both decimals are given and the first is above the second (FHIR ranges need
/// `low <= high`: rng-2).
pub fn ordered_decimals(low: &str, high: &str) -> bool {
    match (low.parse::<f64>(), high.parse::<f64>()) {
        (Ok(l), Ok(h)) => l <= h,
        _ => true,
    }
}

/// The `type` of an Identifier: a code of HL7 table 0203 (identifier type).
pub fn identifier_type(code: String) -> Obj {
    let mut coding = Obj::new();
    coding.set("system", V::S(vocab::v2_table_system("0203")));
    coding.set("code", V::S(code));
    let mut cc = Obj::new();
    cc.push_obj("coding", coding);
    cc
}

impl Ctx<'_> {
    /// A Period of FHIR date or dateTime texts. An end before its start cannot be in FHIR
    /// (per-1): it is left out and reported at `end_at` (`CONVERT_VALUE_INVALID`).
    pub fn period(
        &mut self,
        start: Option<String>,
        end: Option<String>,
        end_at: crate::diag::Hl7Position,
        path: &'static str,
    ) -> Obj {
        use crate::formats::fhir::fhirpath::value::Temporal;
        let inverted = match (&start, &end) {
            (Some(s), Some(e)) => Temporal::parse(s.as_bytes())
                .zip(Temporal::parse(e.as_bytes()))
                .and_then(|(s, e)| s.compare(&e))
                .is_some_and(|o| o == std::cmp::Ordering::Greater),
            _ => false,
        };
        let mut period = Obj::new();
        period.opt("start", start);
        if inverted {
            self.note(Code::CONVERT_VALUE_INVALID, end_at, path);
        } else {
            period.opt("end", end);
        }
        period
    }

    /// Reports populated components of `rep` that are not in `mapped`.
    pub fn unmapped_components(&mut self, rep: Rep<'_>, mapped: &[u32], path: &'static str) {
        for c in rep.populated() {
            if !mapped.contains(&c) {
                self.note(Code::CONVERT_COMPONENT_UNMAPPED, rep.at(c), path);
            }
        }
    }

    /// A timestamp as FHIR `dateTime`, with the findings it needs.
    pub fn datetime(&mut self, rep: Rep<'_>, c: usize, path: &'static str) -> Option<String> {
        let raw = self.r.raw_for_key(rep.c(c));
        let pos = || if c > 1 || rep.populated().any(|x| x > 1) { rep.at(c as u32) } else { rep.pos };
        // The same bytes as the last timestamp give the same result and the same finding.
        if !raw.is_empty() && self.last_datetime.0 == raw {
            let s = super::tree::copy(&self.last_datetime.1);
            if self.last_datetime.2 {
                self.note(Code::CONVERT_TIMEZONE_MISSING, pos(), path);
            }
            return Some(s);
        }
        let text = self.r.text(rep.c(c))?;
        let Some(dtm) = parse_dtm(&text) else {
            self.note(Code::CONVERT_VALUE_INVALID, pos(), path);
            return None;
        };
        let (s, how) = dtm.datetime(self.opts.default_offset_minutes);
        let reduced = how == Written::ReducedToDate;
        if reduced {
            self.note(Code::CONVERT_TIMEZONE_MISSING, pos(), path);
        }
        let (last, text_of_last, was_reduced) = &mut self.last_datetime;
        crate::phi::wipe_keep(last);
        last.extend_from_slice(raw);
        zeroize::Zeroize::zeroize(text_of_last);
        text_of_last.push_str(&s);
        *was_reduced = reduced;
        Some(s)
    }

    /// A timestamp as FHIR `instant` (needs a time to the second and an offset); otherwise
    /// reported and left out.
    pub fn instant(&mut self, rep: Rep<'_>, c: usize, path: &'static str) -> Option<String> {
        let text = self.r.text(rep.c(c))?;
        let pos = rep.at(c as u32);
        let Some(dtm) = parse_dtm(&text) else {
            self.note(Code::CONVERT_VALUE_INVALID, pos, path);
            return None;
        };
        let (s, how) = dtm.datetime(self.opts.default_offset_minutes);
        if how == Written::ReducedToDate {
            self.note(Code::CONVERT_TIMEZONE_MISSING, pos, path);
            return None;
        }
        if dtm.digits.len() < 12 {
            self.note(Code::CONVERT_PRECISION_INSUFFICIENT, pos, path);
            return None;
        }
        Some(s)
    }

    /// A date (the date part of a DT/DTM).
    pub fn date(&mut self, rep: Rep<'_>, c: usize, path: &'static str) -> Option<String> {
        let text = self.r.text(rep.c(c))?;
        match parse_dtm(&text) {
            Some(d) => Some(d.date()),
            None => {
                self.note(Code::CONVERT_VALUE_INVALID, rep.at(c as u32), path);
                None
            }
        }
    }

    /// The system URI of a coding system name (CWE-3 and friends).
    pub fn coding_system(&mut self, rep: Rep<'_>, c: usize, path: &'static str) -> Option<String> {
        self.coding_system_of(rep, rep.c(c), c, path)
    }

    /// [`Ctx::coding_system`] of component `c` of `rep`, its bytes `bytes` already split.
    fn coding_system_of(&mut self, rep: Rep<'_>, bytes: PhiBytes<'_>, c: usize, path: &'static str) -> Option<String> {
        let name = self.r.text(bytes)?;
        if let Some(uri) = vocab::coding_system(&name) {
            return Some(uri);
        }
        if let Some(uri) = self.opts.naming.lookup(&name) {
            return Some(uri.to_owned());
        }
        self.note(Code::CONVERT_CODE_SYSTEM_UNKNOWN, rep.at(c as u32), path);
        None
    }

    /// `system`, unless it is UCUM and `code` is not a UCUM expression: then `None` (the code
    /// is kept without a system, as text where it is a unit) and `CONVERT_UNIT_NOT_UCUM` at
    /// `pos` (a code that claims UCUM and is not would make the Bundle invalid).
    pub fn ucum_checked(
        &mut self,
        system: Option<String>,
        code: Option<&str>,
        pos: crate::diag::Hl7Position,
        path: &'static str,
    ) -> Option<String> {
        match (system, code) {
            (Some(s), Some(code))
                if s == "http://unitsofmeasure.org" && !crate::formats::fhir::ucum::valid(code.as_bytes()) =>
            {
                self.note(Code::CONVERT_UNIT_NOT_UCUM, pos, path);
                None
            }
            (system, _) => system,
        }
    }

    /// CWE/CE/CNE to CodeableConcept. `table` is the HL7 table whose system applies when the
    /// value names no coding system (`None`: no default).
    pub fn codeable(&mut self, rep: Rep<'_>, table: Option<&'static str>, path: &'static str) -> Obj {
        let mut cc = Obj::new();
        // The 13 components, split once (`rep.c(n)` is `cs[n - 1]`).
        let cs = rep.components::<13>();
        let c = |n: usize| cs[n - 1];
        for (code_c, display_c, system_c, version_c) in [(1, 2, 3, 7), (4, 5, 6, 8), (10, 11, 12, 13)] {
            let code = self.r.code_text(c(code_c));
            let display = self.r.text(c(display_c));
            if code.is_none() {
                if let (Some(d), 1) = (display, code_c) {
                    if self.r.text(c(9)).is_none() {
                        cc.set("text", V::S(d));
                    }
                }
                continue;
            }
            let mut coding = Obj::new();
            let system = match self.coding_system_of(rep, c(system_c), system_c, path) {
                Some(s) => Some(s),
                None if self.r.text(c(system_c)).is_none() => table.map(vocab::v2_table_system),
                None => None,
            };
            let system = self.ucum_checked(system, code.as_deref(), rep.at(code_c as u32), path);
            coding.opt("system", system);
            coding.opt("version", self.r.text(c(version_c)));
            coding.opt("code", code);
            coding.opt("display", display);
            cc.push_obj("coding", coding);
        }
        cc.opt("text", self.r.text(c(9)));
        self.unmapped_components(rep, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], path);
        cc
    }

    /// The system of an assigning authority (an HD at component `c`).
    pub fn authority_system(&mut self, rep: Rep<'_>, c: usize, path: &'static str) -> (Option<String>, Option<String>) {
        let hd = rep.composite(c);
        let ns = self.r.text(hd.c(1));
        let uid = self.r.text(hd.c(2));
        let uid_type = self.r.text(hd.c(3));
        if ns.is_none() && uid.is_none() {
            return (None, None);
        }
        let named = [&ns, &uid].into_iter().flatten().find_map(|k| self.opts.naming.lookup(k)).map(str::to_owned);
        if let Some(uri) = named {
            return (Some(uri), ns);
        }
        if let (Some(u), Some("ISO")) = (&uid, uid_type.as_deref()) {
            if let Some(urn) = oid_urn(u) {
                return (Some(urn), ns);
            }
        }
        self.note(Code::CONVERT_IDENTIFIER_SYSTEM_UNKNOWN, hd.pos, path);
        (None, ns.or(uid))
    }

    /// CX to Identifier: CX-1 value, CX-4 assigning authority (system, else assigner display),
    /// CX-5 identifier type (table 0203), CX-7/8 period.
    pub fn identifier_cx(&mut self, rep: Rep<'_>, path: &'static str) -> Obj {
        let mut id = Obj::new();
        let (system, assigner) = self.authority_system(rep, 4, path);
        if let Some(t) = self.r.code_text(rep.c(5)) {
            id.obj("type", identifier_type(t));
        }
        id.opt("system", system.clone());
        id.opt("value", self.r.text(rep.c(1)));
        let (start, end) = (self.date(rep, 7, path), self.date(rep, 8, path));
        let period = self.period(start, end, rep.at(8), path);
        id.obj("period", period);
        if system.is_none() {
            if let Some(a) = assigner {
                let mut o = Obj::new();
                o.set("display", V::S(a));
                id.obj("assigner", o);
            }
        }
        self.unmapped_components(rep, &[1, 4, 5, 7, 8], path);
        id
    }

    /// EI to Identifier (EI-1 value, EI-2..4 authority).
    pub fn identifier_ei(&mut self, rep: Rep<'_>, type_code: Option<&'static str>, path: &'static str) -> Obj {
        let mut id = Obj::new();
        if let Some(t) = type_code {
            let mut coding = Obj::new();
            coding.set("system", V::code("http://terminology.hl7.org/CodeSystem/v2-0203"));
            coding.set("code", V::code(t));
            let mut cc = Obj::new();
            cc.push_obj("coding", coding);
            id.obj("type", cc);
        }
        let ns = self.r.text(rep.c(2));
        let uid = self.r.text(rep.c(3));
        let uid_type = self.r.text(rep.c(4));
        let mut system = None;
        for key in [&ns, &uid].into_iter().flatten() {
            if let Some(uri) = self.opts.naming.lookup(key) {
                system = Some(uri.to_owned());
                break;
            }
        }
        if system.is_none() {
            if let (Some(u), Some("ISO")) = (&uid, uid_type.as_deref()) {
                system = oid_urn(u);
            }
        }
        if system.is_none() && (ns.is_some() || uid.is_some()) {
            self.note(Code::CONVERT_IDENTIFIER_SYSTEM_UNKNOWN, rep.at(2), path);
        }
        let has_system = system.is_some();
        id.opt("system", system);
        id.opt("value", self.r.text(rep.c(1)));
        if !has_system {
            if let Some(a) = ns.or(uid) {
                let mut o = Obj::new();
                o.set("display", V::S(a));
                id.obj("assigner", o);
            }
        }
        id
    }

    /// XPN to HumanName (also the name part of XCN, whose components start at `first`).
    pub fn human_name(&mut self, rep: Rep<'_>, first: usize, use_c: usize, path: &'static str) -> Obj {
        let mut name = Obj::new();
        let family = rep.composite(first);
        if let Some(u) = self.r.text(rep.c(use_c)) {
            match vocab::name_use(&u) {
                Some(code) => {
                    name.set("use", V::code(code));
                }
                None => self.note(Code::CONVERT_CODE_UNMAPPED, rep.at(use_c as u32), path),
            }
        }
        name.opt("family", self.r.text(family.c(1)));
        if let Some(g) = self.r.text(rep.c(first + 1)) {
            name.push("given", V::S(g));
        }
        if let Some(g) = self.r.text(rep.c(first + 2)) {
            name.push("given", V::S(g));
        }
        if let Some(p) = self.r.text(rep.c(first + 4)) {
            name.push("prefix", V::S(p));
        }
        if let Some(s) = self.r.text(rep.c(first + 3)) {
            name.push("suffix", V::S(s));
        }
        if let Some(s) = self.r.text(rep.c(first + 5)) {
            name.push("suffix", V::S(s));
        }
        name
    }

    /// XPN: reports components other than 1-7.
    pub fn xpn(&mut self, rep: Rep<'_>, path: &'static str) -> Obj {
        let n = self.human_name(rep, 1, 7, path);
        self.unmapped_components(rep, &[1, 2, 3, 4, 5, 6, 7], path);
        n
    }

    /// XAD to Address.
    pub fn address(&mut self, rep: Rep<'_>, path: &'static str) -> Obj {
        let mut a = Obj::new();
        if let Some(t) = self.r.text(rep.c(7)) {
            match vocab::address_use(&t) {
                Some((Some(u), ty)) => {
                    a.set("use", V::code(u));
                    if let Some(ty) = ty {
                        a.set("type", V::code(ty));
                    }
                }
                Some((None, Some(ty))) => {
                    a.set("type", V::code(ty));
                }
                _ => self.note(Code::CONVERT_CODE_UNMAPPED, rep.at(7), path),
            }
        }
        let street = rep.composite(1);
        if let Some(l) = self.r.text(street.c(1)) {
            a.push("line", V::S(l));
        }
        if let Some(l) = self.r.text(rep.c(2)) {
            a.push("line", V::S(l));
        }
        a.opt("city", self.r.text(rep.c(3)));
        a.opt("district", self.r.text(rep.c(9)));
        a.opt("state", self.r.text(rep.c(4)));
        a.opt("postalCode", self.r.text(rep.c(5)));
        a.opt("country", self.r.text(rep.c(6)));
        self.unmapped_components(rep, &[1, 2, 3, 4, 5, 6, 7, 9], path);
        a
    }

    /// XTN to ContactPoint. `default_use` applies when XTN-2 says nothing (PID-14 is work).
    pub fn telecom(&mut self, rep: Rep<'_>, default_use: Option<&'static str>, path: &'static str) -> Obj {
        let mut t = Obj::new();
        let equipment = self.r.text(rep.c(3));
        let email = self.r.text(rep.c(4));
        let system = match equipment.as_deref() {
            Some("Internet" | "X.400") => Some("email"),
            Some("FX") => Some("fax"),
            Some("BP") => Some("pager"),
            Some("PH" | "CP" | "MD" | "TDD" | "TTY" | "SAT") => Some("phone"),
            // An equipment type outside table 0202 is reported, and the contact point is kept
            // as `other`: a value needs a system (cpt-2).
            Some(_) => {
                self.note(Code::CONVERT_CODE_UNMAPPED, rep.at(3), path);
                Some("other")
            }
            None if email.is_some() => Some("email"),
            None => Some("phone"),
        };
        let value = if system == Some("email") {
            email.clone()
        } else {
            let parts: Vec<String> = [5, 6, 7, 8]
                .into_iter()
                .filter_map(|c| self.r.text(rep.c(c)).map(|v| if c == 8 { format!("ext. {v}") } else { v }))
                .collect();
            if parts.is_empty() { self.r.text(rep.c(1)).or(self.r.text(rep.c(12))) } else { Some(parts.join(" ")) }
        };
        if let Some(s) = system {
            t.set("system", V::code(s));
        }
        t.opt("value", value);
        let use_code = match self.r.text(rep.c(2)).as_deref() {
            Some("PRN" | "ORN" | "VHN") => Some("home"),
            Some("WPN") => Some("work"),
            Some("NET") => None,
            Some("PRS") => Some("mobile"),
            Some("EMR" | "ASN" | "BPN") => None,
            Some(_) => {
                self.note(Code::CONVERT_CODE_UNMAPPED, rep.at(2), path);
                None
            }
            None => default_use,
        };
        let use_code = if equipment.as_deref() == Some("CP") { Some("mobile") } else { use_code };
        if let Some(u) = use_code {
            t.set("use", V::code(u));
        }
        self.unmapped_components(rep, &[1, 2, 3, 4, 5, 6, 7, 8, 12], path);
        t
    }
}

/// `urn:oid:<u>` when `u` is an OID (the FHIR `oid` type's syntax: first arc 0 to 2, at least
/// two arcs, no leading zero); `None` otherwise, so that a Bundle never holds a malformed URN.
pub(super) fn oid_urn(u: &str) -> Option<String> {
    let urn = format!("urn:oid:{u}");
    crate::formats::fhir::primitive::is_valid("oid", urn.as_bytes()).then_some(urn)
}

crate::debug_placeholder!(Dtm);
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_plus_minutes() {
        let cases = [
            ("2026-02-01T09:00:00-05:00", 30, Some("2026-02-01T09:30:00-05:00")),
            ("2026-02-01T23:45:10.5Z", 30, Some("2026-02-02T00:15:10.5Z")),
            ("2024-02-28T23:00:00+01:00", 120, Some("2024-02-29T01:00:00+01:00")),
            ("2023-02-28T23:00:00+01:00", 120, Some("2023-03-01T01:00:00+01:00")),
            ("2026-12-31T23:59:00+00:00", 1, Some("2027-01-01T00:00:00+00:00")),
            ("2026-01-31T12:00:00+00:00", 60 * 24 * 30, Some("2026-03-02T12:00:00+00:00")),
            ("2000-01-01T00:00:00Z", 60 * 24 * 366, Some("2001-01-01T00:00:00Z")),
            ("2026-01-01T00:00:00Z", 0, Some("2026-01-01T00:00:00Z")),
            ("9999-12-31T23:00:00Z", 60, None),
            ("2026-02-30T00:00:00Z", 1, None),
            ("2026-02-01", 1, None),
            ("2026-02-01T9:00:00-05:00", 1, None),
        ];
        for (text, minutes, expect) in cases {
            assert_eq!(plus_minutes(text, minutes).as_deref(), expect, "{text} + {minutes}");
        }
        // Never panics, on any length and the largest durations.
        assert_eq!(plus_minutes("2026-01-01T00:00:00Z", u32::MAX), None);
        assert!(plus_minutes("1000-01-01T00:00:00Z", u32::MAX).is_some());
    }

    #[test]
    fn two_digits_is_format_02() {
        for n in 0..=u8::MAX {
            let mut s = String::new();
            push_two_digits(&mut s, n);
            assert_eq!(s, format!("{n:02}"));
        }
    }

    #[test]
    fn datetime_text() {
        let cases = [
            ("2024", None, "2024"),
            ("202403", None, "2024-03"),
            ("20240315", None, "2024-03-15"),
            ("2024031512", None, "2024-03-15"),
            ("2024031512", Some(-300), "2024-03-15T12:00:00-05:00"),
            ("202403151230", Some(0), "2024-03-15T12:30:00+00:00"),
            ("20240315123045.123+0130", None, "2024-03-15T12:30:45.123+01:30"),
            ("20240315123045-0000", None, "2024-03-15T12:30:45-00:00"),
            ("20240315123045+0000", Some(60), "2024-03-15T12:30:45+00:00"),
            ("20240315123045", Some(i16::MIN), "2024-03-15T12:30:45-34:08"),
        ];
        for (text, default, expected) in cases {
            let dtm = parse_dtm(text).expect("valid");
            assert_eq!(dtm.datetime(default).0, expected, "{text}");
        }
    }
}
