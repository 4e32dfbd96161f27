//! The lexical score of `find-equivalent`, exactly as published (docs/terminology.md).
//!
//! Normalization: lowercase, Unicode NFD, combining marks dropped, every run of characters
//! outside `[a-z0-9]` replaced by one space, trimmed. The score of a term against a label is 0
//! when either normalized side is empty, 1 when they are equal, and otherwise, with `A` and `B`
//! the sets of tokens of the term and of the label and `o = |A ∩ B|`,
//! `round(((o / |A|) + (2o / (|A| + |B|))) / 2, 3)`. Rounding is half away from zero on the
//! thousandths.
//!
//! What it does not do: stemming, synonyms or spelling correction (synonyms are separate labels
//! of a concept, scored one by one), or any use of word order.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The normalized form of `text`: `[a-z0-9]` tokens separated by single spaces.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    normalize_into(text, &mut out);
    out
}

/// [`normalize`] into a buffer (cleared first), so that an index build reuses one allocation.
pub fn normalize_into(text: &str, out: &mut String) {
    out.clear();
    let mut pending_space = false;
    let mut push = |c: char, out: &mut String| {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
        } else {
            pending_space = true;
        }
    };
    if text.is_ascii() {
        for b in text.bytes() {
            push(char::from(b.to_ascii_lowercase()), out);
        }
    } else {
        for c in text.chars().flat_map(char::to_lowercase).nfd() {
            if is_combining_mark(c) {
                continue;
            }
            push(c, out);
        }
    }
}

/// The distinct tokens of a normalized text, sorted.
pub fn token_set(normalized: &str) -> Vec<&str> {
    let mut tokens: Vec<&str> = normalized.split(' ').filter(|t| !t.is_empty()).collect();
    tokens.sort_unstable();
    tokens.dedup();
    tokens
}

/// The score from the counts: `a = |A|`, `b = |B|`, `o = |A ∩ B|`, and whether the normalized
/// texts are equal. Shared by [`score`] and the index's fast path.
pub fn from_counts(a: usize, b: usize, o: usize, equal: bool) -> f64 {
    if a == 0 || b == 0 {
        return 0.0;
    }
    if equal {
        return 1.0;
    }
    let (a, b, o) = (a as f64, b as f64, o as f64);
    round3(((o / a) + (2.0 * o / (a + b))) / 2.0)
}

/// Rounds to three decimals, half away from zero.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The score of `term` against `label`.
pub fn score(term: &str, label: &str) -> f64 {
    let (t, l) = (normalize(term), normalize(label));
    let (a, b) = (token_set(&t), token_set(&l));
    let o = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
    from_counts(a.len(), b.len(), o, !t.is_empty() && t == l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        assert_eq!(score("diabetes", "Diabetes mellitus"), 0.833);
        assert_eq!(score("aspirin", "aspirin / caffeine oral product"), 0.7);
        assert_eq!(score("metformin", "Metformin hydrochloride"), 0.833);
        assert_eq!(score("hipertensão", "hipertensao"), 1.0);
    }

    #[test]
    fn normalization() {
        assert_eq!(normalize("  Type-2   Diabetes, Mellitus (NOS) "), "type 2 diabetes mellitus nos");
        assert_eq!(normalize("Ærø Ünïcödé"), "r unicode");
        assert_eq!(normalize("ÉCLAMPSIE"), "eclampsie");
        assert_eq!(normalize("--"), "");
        assert_eq!(score("", "x"), 0.0);
        assert_eq!(score("x", "  "), 0.0);
        assert_eq!(score("Mellitus diabetes", "diabetes mellitus"), 1.0);
        assert_eq!(score("asthma", "Cholera"), 0.0);
    }

    /// A deterministic generator (xorshift), so the property tests need no dependency.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn text(&mut self) -> String {
            const ALPHABET: &[&str] =
                &["a", "b", "c", "diabetes", "type", "2", " ", " ", "-", "é", "É", "ã", "/", "X", "ß", "mellitus", ","];
            let n = (self.next() % 8) as usize;
            (0..n).map(|_| ALPHABET[(self.next() % ALPHABET.len() as u64) as usize]).collect()
        }
    }

    #[test]
    fn property_equality_is_symmetric_range_and_three_decimals() {
        let mut g = Gen(0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let (x, y) = (g.text(), g.text());
            let (s, r) = (score(&x, &y), score(&y, &x));
            assert!((0.0..=1.0).contains(&s), "range");
            assert_eq!((s * 1000.0).round() / 1000.0, s, "three decimals");
            assert_eq!(s == 1.0, r == 1.0, "equality is symmetric");
            assert_eq!(score(&x, &x), if normalize(&x).is_empty() { 0.0 } else { 1.0 });
            // A normalized text is a fixed point.
            assert_eq!(normalize(&normalize(&x)), normalize(&x));
        }
    }
}
