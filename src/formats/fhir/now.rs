//! The current time of a validation (`--now`), and the bounds relative to it that a profile's
//! `minValueDuration`/`maxValueDuration` set.
//!
//! A profile may bound a `date`, `dateTime` or `instant` by a Duration instead of a fixed value:
//! `minValueDuration` 100 `a` is "no earlier than 100 years before now", `maxValueDuration` 10
//! `a` "no later than 10 years after now" (the reference validator subtracts the minimum's
//! duration from its clock and adds the maximum's). phiward's output depends on its input and
//! options only, so the clock is an option: an RFC 3339 instant with an offset
//! (`2026-01-31T12:00:00Z`, `2026-01-31T13:00:00.5+01:00`). The bound is now plus or minus the
//! duration by calendar arithmetic in now's offset: years and months move the calendar date (a
//! day past the end of the new month is its last day: 31 January plus one month is 28 or 29
//! February), weeks and days move the date, hours, minutes, seconds and milliseconds move the
//! instant. A value is compared at its own precision: a date (`1850`, `1850-01`, `1850-01-01`)
//! with the bound's calendar date in now's offset cut to that precision, a date-time with a time
//! (which then has an offset, as R4 requires) as an instant.
//!
//! Units are UCUM's calendar units (`a`, `mo`, `wk`, `d`, `h`, `min`, `s`, `ms`) and the value
//! an integer; any other duration is not compared.

use std::cmp::Ordering;

use crate::formats::calendar::{civil_from_days, days_from_civil};
use serde_json::Value;

/// `--now`: an instant, as its local date and time and the offset they are in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Now {
    year: i64,
    month: u32,
    day: u32,
    /// Seconds since local midnight.
    second_of_day: u32,
    /// Nanoseconds of the second.
    nanos: u32,
    /// The offset from UTC, in minutes.
    offset_minutes: i32,
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const SECONDS_PER_DAY: i128 = 86_400;

impl Now {
    /// An RFC 3339 date-time with an offset (`Z` or `+hh:mm`), seconds required, fraction
    /// optional; `None` otherwise.
    pub fn parse(text: &str) -> Option<Now> {
        let b = text.as_bytes();
        if b.len() < 20 || !b.is_ascii() {
            return None;
        }
        let num = |s: &[u8]| -> Option<u32> {
            if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(s).ok()?.parse().ok()
        };
        if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
            return None;
        }
        let year = i64::from(num(&b[0..4])?);
        let month = num(&b[5..7])?;
        let day = num(&b[8..10])?;
        let hour = num(&b[11..13])?;
        let minute = num(&b[14..16])?;
        let second = num(&b[17..19])?;
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        // A leap second (60) is read as the last second of its minute.
        if hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let mut rest = &b[19..];
        let mut nanos = 0u32;
        if let Some(frac) = rest.strip_prefix(b".") {
            let digits = frac.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            for (k, c) in frac[..digits].iter().enumerate() {
                if k < 9 {
                    nanos += u32::from(c - b'0') * 10u32.pow(8 - k as u32);
                }
            }
            rest = &frac[digits..];
        }
        let offset_minutes = match rest {
            [b'Z' | b'z'] => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let h = num(&[*h1, *h2])?;
                let m = num(&[*m1, *m2])?;
                if h > 23 || m > 59 {
                    return None;
                }
                let total = (h * 60 + m) as i32;
                if *sign == b'-' { -total } else { total }
            }
            _ => return None,
        };
        Some(Now { year, month, day, second_of_day: hour * 3600 + minute * 60 + second.min(59), nanos, offset_minutes })
    }

    /// The RFC 3339 text of this instant ([`Now::parse`] reads it back to the same value).
    pub fn to_rfc3339(&self) -> String {
        let (h, m, s) = (self.second_of_day / 3600, self.second_of_day / 60 % 60, self.second_of_day % 60);
        let mut out = format!("{:04}-{:02}-{:02}T{h:02}:{m:02}:{s:02}", self.year, self.month, self.day);
        if self.nanos > 0 {
            let frac = format!("{:09}", self.nanos);
            out.push('.');
            out.push_str(frac.trim_end_matches('0'));
        }
        if self.offset_minutes == 0 {
            out.push('Z');
        } else {
            let sign = if self.offset_minutes < 0 { '-' } else { '+' };
            let o = self.offset_minutes.unsigned_abs();
            out.push_str(&format!("{sign}{:02}:{:02}", o / 60, o % 60));
        }
        out
    }

    /// Nanoseconds since 1970-01-01T00:00:00 of the local date and time (not UTC).
    fn local_nanos(&self) -> i128 {
        let days = i128::from(days_from_civil(self.year, self.month, self.day));
        (days * SECONDS_PER_DAY + i128::from(self.second_of_day)) * NANOS_PER_SECOND + i128::from(self.nanos)
    }

    fn from_local_nanos(local: i128, offset_minutes: i32) -> Option<Now> {
        let seconds = local.div_euclid(NANOS_PER_SECOND);
        let nanos = local.rem_euclid(NANOS_PER_SECOND) as u32;
        let days = i64::try_from(seconds.div_euclid(SECONDS_PER_DAY)).ok()?;
        let second_of_day = seconds.rem_euclid(SECONDS_PER_DAY) as u32;
        let (year, month, day) = civil_from_days(days);
        Some(Now { year, month, day, second_of_day, nanos, offset_minutes })
    }

    /// Nanoseconds since the Unix epoch (UTC).
    fn utc_nanos(&self) -> i128 {
        self.local_nanos() - i128::from(self.offset_minutes) * 60 * NANOS_PER_SECOND
    }

    /// This instant plus `amount` of UCUM calendar unit `unit` (negative: minus); `None` for
    /// another unit or a date out of range.
    fn plus(&self, amount: i64, unit: &str) -> Option<Now> {
        if amount.unsigned_abs() > 1_000_000_000 {
            return None;
        }
        let months = match unit {
            "a" => Some(amount * 12),
            "mo" => Some(amount),
            _ => None,
        };
        if let Some(months) = months {
            let index = self.year * 12 + i64::from(self.month) - 1 + months;
            let (year, month) = (index.div_euclid(12), index.rem_euclid(12) as u32 + 1);
            let day = self.day.min(days_in_month(year, month));
            return Some(Now { year, month, day, ..*self });
        }
        let nanos_per: i128 = match unit {
            "wk" => 7 * SECONDS_PER_DAY * NANOS_PER_SECOND,
            "d" => SECONDS_PER_DAY * NANOS_PER_SECOND,
            "h" => 3600 * NANOS_PER_SECOND,
            "min" => 60 * NANOS_PER_SECOND,
            "s" => NANOS_PER_SECOND,
            "ms" => 1_000_000,
            _ => return None,
        };
        Now::from_local_nanos(self.local_nanos() + i128::from(amount) * nanos_per, self.offset_minutes)
    }

    /// The bound a Duration (`{"value": 100, "code": "a", ...}`) sets: now minus it for a
    /// minimum (`below`), plus it for a maximum. `None` when it is not an integer amount of a
    /// UCUM calendar unit.
    pub fn bound(&self, duration: &Value, below: bool) -> Option<Now> {
        let amount = match duration.get("value")? {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))?,
            _ => return None,
        };
        let system = duration.get("system").and_then(Value::as_str);
        if system.is_some_and(|s| s != "http://unitsofmeasure.org") {
            return None;
        }
        let unit = duration.get("code").or_else(|| duration.get("unit")).and_then(Value::as_str)?;
        self.plus(if below { -amount } else { amount }, unit)
    }

    /// How a `date`, `dateTime` or `instant` value orders against this instant, at the value's
    /// precision (see the module). `None` when the text is no such value.
    pub fn order_of(&self, value: &str) -> Option<Ordering> {
        let b = value.as_bytes();
        let num = |s: &[u8]| -> Option<u32> {
            if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(s).ok()?.parse().ok()
        };
        match b.len() {
            4 => Some(i64::from(num(b)?).cmp(&self.year)),
            7 if b[4] == b'-' => Some((i64::from(num(&b[0..4])?), num(&b[5..7])?).cmp(&(self.year, self.month))),
            10 if b[4] == b'-' && b[7] == b'-' => Some(
                (i64::from(num(&b[0..4])?), num(&b[5..7])?, num(&b[8..10])?).cmp(&(self.year, self.month, self.day)),
            ),
            _ => {
                let v = Now::parse(value)?;
                Some(v.utc_nanos().cmp(&self.utc_nanos()))
            }
        }
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now(s: &str) -> Now {
        Now::parse(s).expect("an RFC 3339 instant")
    }

    #[test]
    fn parses_rfc3339_with_an_offset_only() {
        for ok in ["2026-12-08T00:40:00Z", "2026-12-08T00:40:00.123+01:00", "2024-02-29T23:59:60-05:30"] {
            assert!(Now::parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "2026-12-08T00:40:00",
            "2026-12-08",
            "2026-02-30T00:00:00Z",
            "2026-12-08T24:00:00Z",
            "2026-12-08T00:40Z",
            "2026-12-08T00:40:00.Z",
            "2026-12-08T00:40:00+0100",
            "",
        ] {
            assert!(Now::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn rfc3339_text_reads_back_the_same() {
        for s in ["2026-12-08T00:40:00Z", "2026-12-08T00:40:00.5+01:00", "1999-01-01T12:00:00.000000001-08:00"] {
            let n = now(s);
            assert_eq!(Now::parse(&n.to_rfc3339()), Some(n), "{s}");
        }
    }

    #[test]
    fn calendar_arithmetic_clamps_to_the_end_of_the_month() {
        let n = now("2024-01-31T10:00:00Z");
        assert_eq!(n.plus(1, "mo").map(|b| b.to_rfc3339()).as_deref(), Some("2024-02-29T10:00:00Z"));
        assert_eq!(n.plus(-100, "a").map(|b| b.to_rfc3339()).as_deref(), Some("1924-01-31T10:00:00Z"));
        assert_eq!(n.plus(-1, "wk").map(|b| b.to_rfc3339()).as_deref(), Some("2024-01-24T10:00:00Z"));
        assert_eq!(n.plus(15, "h").map(|b| b.to_rfc3339()).as_deref(), Some("2024-02-01T01:00:00Z"));
        assert_eq!(n.plus(1, "x"), None);
    }

    #[test]
    fn bounds_compare_at_the_precision_of_the_value() {
        let n = now("2026-12-08T00:40:00Z");
        let min =
            n.bound(&json!({"value": 100, "system": "http://unitsofmeasure.org", "code": "a"}), true).expect("a bound");
        assert_eq!(min.order_of("1850-01-01"), Some(Ordering::Less));
        assert_eq!(min.order_of("1926"), Some(Ordering::Equal));
        assert_eq!(min.order_of("1926-12"), Some(Ordering::Equal));
        assert_eq!(min.order_of("1926-12-09"), Some(Ordering::Greater));
        let max = n.bound(&json!({"value": 10, "code": "a"}), false).expect("a bound");
        assert_eq!(max.order_of("2100-01-01"), Some(Ordering::Greater));
        assert_eq!(max.order_of("2036-12-08T01:40:00+02:00"), Some(Ordering::Less));
        assert_eq!(max.order_of("2036-12-08T01:40:00Z"), Some(Ordering::Greater));
        // Not a calendar unit, not an integer, not UCUM: no bound.
        assert!(n.bound(&json!({"value": 1, "code": "kg"}), true).is_none());
        assert!(n.bound(&json!({"value": 1.5, "code": "a"}), true).is_none());
        assert!(n.bound(&json!({"value": 1, "system": "http://example.org", "code": "a"}), true).is_none());
    }
}
