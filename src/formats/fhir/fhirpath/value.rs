//! FHIRPath values other than elements: booleans, integers, decimals, strings, dates and
//! times, quantities; and how they compare.
//!
//! Strings made from message values are zeroized on drop. Decimals compare as binary floating
//! point (the invariants of the core only compare against small literals or against each
//! other); the model and the data-channel writers keep decimals exactly.
//!
//! Dates and times compare as FHIRPath says: component by component down to the precision both
//! have; equal so far with different precisions is "unknown" (`None`). When both carry a time
//! to the second and a zone, they compare as instants.
//!
//! What it does not do: UCUM unit conversion (quantities compare only with equal units).

use std::cmp::Ordering;

use zeroize::Zeroizing;

/// A value.
#[derive(Clone)]
pub enum Val {
    /// An element of the document.
    Node(u32),
    /// `true`/`false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A decimal.
    Dec(f64),
    /// A string (zeroized on drop).
    Str(Zeroizing<String>),
    /// A date, date-time or time.
    Temporal(Temporal),
    /// A quantity: value and unit (zeroized on drop).
    Quantity(f64, Zeroizing<String>),
}

/// A date, date-time or time, with its precision.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Temporal {
    /// Components: year, month, day, hour, minute, second (0 when absent).
    pub parts: [i64; 6],
    /// Fractional seconds.
    pub fraction: f64,
    /// How many of `parts` are present (1 = year ... 6 = seconds); for a time, counted from hours.
    pub precision: u8,
    /// Time of day only (`@T10:00`, `time`).
    pub time_only: bool,
    /// Zone offset in minutes.
    pub zone: Option<i64>,
}

fn digits(v: &[u8], at: usize, n: usize) -> Option<i64> {
    let s = v.get(at..at + n)?;
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
}

impl Temporal {
    /// Parses `YYYY[-MM[-DD[Thh[:mm[:ss[.fff]]][zone]]]]` or `Thh[:mm[:ss[.f]]]` / `hh:mm:ss`.
    pub fn parse(v: &[u8]) -> Option<Temporal> {
        let mut t = Temporal { parts: [0; 6], fraction: 0.0, precision: 0, time_only: false, zone: None };
        let mut i;
        if v.first() == Some(&b'T') || v.get(2) == Some(&b':') {
            t.time_only = true;
            i = usize::from(v.first() == Some(&b'T'));
            return t.time(v, &mut i).then_some(t);
        }
        t.parts[0] = digits(v, 0, 4)?;
        t.precision = 1;
        i = 4;
        for k in 1..3 {
            if v.get(i) != Some(&b'-') {
                break;
            }
            t.parts[k] = digits(v, i + 1, 2)?;
            t.precision += 1;
            i += 3;
        }
        if v.get(i) == Some(&b'T') {
            i += 1;
            if i == v.len() {
                return Some(t);
            }
            if !t.time(v, &mut i) {
                return None;
            }
        }
        (i == v.len()).then_some(t)
    }

    fn time(&mut self, v: &[u8], i: &mut usize) -> bool {
        let base = if self.time_only { 0 } else { 3 };
        let Some(h) = digits(v, *i, 2) else { return false };
        self.parts[3] = h;
        self.precision = base + 1;
        *i += 2;
        for k in 4..6 {
            if v.get(*i) != Some(&b':') {
                break;
            }
            let Some(n) = digits(v, *i + 1, 2) else { return false };
            self.parts[k] = n;
            self.precision += 1;
            *i += 3;
        }
        if v.get(*i) == Some(&b'.') {
            let s = *i;
            *i += 1;
            while v.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            self.fraction =
                std::str::from_utf8(&v[s..*i]).ok().and_then(|f| format!("0{f}").parse().ok()).unwrap_or(0.0);
        }
        match v.get(*i) {
            Some(b'Z') => {
                self.zone = Some(0);
                *i += 1;
            }
            Some(&sign @ (b'+' | b'-')) => {
                let (Some(h), Some(m)) = (digits(v, *i + 1, 2), digits(v, *i + 4, 2)) else { return false };
                let off = h * 60 + m;
                self.zone = Some(if sign == b'-' { -off } else { off });
                *i += 6;
            }
            _ => {}
        }
        *i == v.len()
    }

    /// Seconds since 0000-03-01 UTC (only meaningful for full date-times with a zone).
    fn instant(&self) -> f64 {
        let [y, m, d, h, mi, s] = self.parts;
        let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
        let days = 365 * y + y / 4 - y / 100 + y / 400 + (153 * m + 2) / 5 + d - 1;
        let secs = days * 86400 + h * 3600 + mi * 60 + s - self.zone.unwrap_or(0) * 60;
        secs as f64 + self.fraction
    }

    /// FHIRPath comparison; `None` when the answer is unknown (different precisions, or a
    /// date compared with a time).
    pub fn compare(&self, other: &Temporal) -> Option<Ordering> {
        if self.time_only != other.time_only {
            return None;
        }
        let full = if self.time_only { 3 } else { 6 };
        if self.precision == full && other.precision == full && self.zone.is_some() && other.zone.is_some() {
            return self.instant().partial_cmp(&other.instant());
        }
        let start = if self.time_only { 3 } else { 0 };
        let common = usize::from(self.precision.min(other.precision));
        for k in start..start + common {
            match self.parts[k].cmp(&other.parts[k]) {
                Ordering::Equal => {}
                o => return Some(o),
            }
        }
        if self.precision != other.precision {
            return None;
        }
        self.fraction.partial_cmp(&other.fraction)
    }
}

impl Val {
    /// A string value.
    pub fn string(s: String) -> Val {
        Val::Str(Zeroizing::new(s))
    }

    /// The FHIRPath type name of a non-element value.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Node(_) => "",
            Val::Bool(_) => "Boolean",
            Val::Int(_) => "Integer",
            Val::Dec(_) => "Decimal",
            Val::Str(_) => "String",
            Val::Temporal(t) if t.time_only => "Time",
            Val::Temporal(t) if t.precision <= 3 => "Date",
            Val::Temporal(_) => "DateTime",
            Val::Quantity(..) => "Quantity",
        }
    }
}

/// Equality of two non-element values (`None`: unknown).
pub fn equal(a: &Val, b: &Val) -> Option<bool> {
    Some(match (a, b) {
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (Val::Int(x), Val::Int(y)) => x == y,
        (Val::Int(x), Val::Dec(y)) | (Val::Dec(y), Val::Int(x)) => (*x as f64) == *y,
        (Val::Dec(x), Val::Dec(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x.as_bytes() == y.as_bytes(),
        (Val::Temporal(x), Val::Temporal(y)) => return x.compare(y).map(|o| o == Ordering::Equal),
        (Val::Quantity(x, u), Val::Quantity(y, w)) => {
            if u.as_bytes() != w.as_bytes() {
                return None;
            }
            x == y
        }
        _ => false,
    })
}

/// Ordering of two non-element values (`None`: not comparable or unknown).
pub fn compare(a: &Val, b: &Val) -> Option<Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Int(x), Val::Dec(y)) => (*x as f64).partial_cmp(y),
        (Val::Dec(x), Val::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Val::Dec(x), Val::Dec(y)) => x.partial_cmp(y),
        (Val::Str(x), Val::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Val::Temporal(x), Val::Temporal(y)) => x.compare(y),
        (Val::Quantity(x, u), Val::Quantity(y, w)) if u.as_bytes() == w.as_bytes() => x.partial_cmp(y),
        _ => None,
    }
}

crate::debug_placeholder!(Val);
#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Temporal {
        Temporal::parse(s.as_bytes()).expect("parses")
    }

    #[test]
    fn temporal_comparison() {
        assert_eq!(t("2020-01-01").compare(&t("2020-01-02")), Some(Ordering::Less));
        assert_eq!(t("2020").compare(&t("2020-05")), None);
        assert_eq!(t("2019").compare(&t("2020-05")), Some(Ordering::Less));
        assert_eq!(t("2020-01-01T10:00:00+02:00").compare(&t("2020-01-01T08:00:00Z")), Some(Ordering::Equal));
        assert_eq!(t("T10:00").compare(&t("T10:30")), Some(Ordering::Less));
        assert!(Temporal::parse(b"2020-1").is_none());
    }
}
