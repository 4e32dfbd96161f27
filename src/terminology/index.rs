//! A searchable index of one code system: concepts (code, title, synonyms, deprecated flag) in
//! the index's own order, every label tokenized once, and an inverted token index so that a
//! query scores every label sharing a token with it (every other label scores 0).
//!
//! Line format (written by `tools/gen_terminology.py` and by the importers):
//! `code<TAB>flag<TAB>title[<TAB>synonym]...`, flag `a` (active) or `d` (deprecated); lines
//! starting with `#` and empty lines are skipped; a line without a code or title is skipped.
//!
//! What it does not do: rank across code systems (see [`super::find`]) or read files (callers
//! hand it text).

use std::borrow::Cow;

use super::compact::{self, HEADER_WORDS, MAGIC};
use super::score::{from_counts, normalize, token_set};

/// The largest index text accepted (an imported file is converted first; this bounds memory).
pub const MAX_INDEX_BYTES: usize = 512 * 1024 * 1024;

const TOO_LARGE: crate::diag::Code = crate::diag::Code::CLI_INPUT_TOO_LARGE;

/// An index: its text and the compact form built from it ([`compact`]), either compiled into
/// the binary or owned. Every read of the compact form is bounds-checked: a damaged form gives
/// wrong or no results, never a panic.
pub struct Index {
    text: Cow<'static, str>,
    blob: Cow<'static, [u8]>,
    concepts: usize,
    labels: usize,
    tokens: usize,
    concepts_at: usize,
    labels_at: usize,
    tokens_at: usize,
    postings_at: usize,
    bytes_at: usize,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("concepts", &self.concepts)
            .field("labels", &self.labels)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

/// A concept's best match for a query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The concept's position in the index (the last ranking key).
    pub concept: u32,
    /// The score of its best label.
    pub score: f64,
    /// The label that gave the score (0: the title).
    pub label: u32,
}

/// The counts and the parts' offsets of a compact form: concepts, labels, tokens, then where the
/// concepts, labels, tokens, postings and token bytes start. `None` when the header's counts do not
/// add up to the form's length or its text length is not `text_len`.
fn layout(text_len: usize, blob: &[u8]) -> Option<[usize; 8]> {
    if blob.get(..MAGIC.len())? != MAGIC {
        return None;
    }
    let header = |i: usize| word_at(blob, MAGIC.len() + 4 * i) as usize;
    let (concepts, labels, tokens, postings, token_bytes) = (header(0), header(1), header(2), header(3), header(4));
    let concepts_at = MAGIC.len() + 4 * HEADER_WORDS;
    let labels_at = concepts_at.checked_add(concepts.checked_mul(16)?)?;
    let tokens_at = labels_at.checked_add(labels.checked_mul(16)?)?;
    let postings_at = tokens_at.checked_add(tokens.checked_mul(16)?)?;
    let bytes_at = postings_at.checked_add(postings.checked_mul(4)?)?;
    if bytes_at.checked_add(token_bytes)? != blob.len() || header(5) != text_len {
        return None;
    }
    Some([concepts, labels, tokens, concepts_at, labels_at, tokens_at, postings_at, bytes_at])
}

fn word_at(blob: &[u8], at: usize) -> u32 {
    blob.get(at..at.wrapping_add(4)).and_then(|b| <[u8; 4]>::try_from(b).ok()).map_or(0, u32::from_le_bytes)
}

impl Index {
    /// Builds an index from text in the line format. Fails with `CLI_INPUT_TOO_LARGE` when the text is
    /// larger than [`MAX_INDEX_BYTES`] or the counts overflow.
    pub fn build(text: String) -> Result<Index, crate::diag::Code> {
        if text.len() > MAX_INDEX_BYTES {
            return Err(TOO_LARGE);
        }
        let blob = compact::build(&text).ok_or(TOO_LARGE)?;
        Index::from_parts(Cow::Owned(text), Cow::Owned(blob)).ok_or(TOO_LARGE)
    }

    /// An index over a text and its compact form. `None` when the form's header does not match
    /// its length or the text's length: the form was built from another text, or is damaged
    /// (see [`Index::matches`] for a check of the text's hash too).
    pub fn from_parts(text: Cow<'static, str>, blob: Cow<'static, [u8]>) -> Option<Index> {
        let [concepts, labels, tokens, concepts_at, labels_at, tokens_at, postings_at, bytes_at] =
            layout(text.len(), &blob)?;
        Some(Index { text, blob, concepts, labels, tokens, concepts_at, labels_at, tokens_at, postings_at, bytes_at })
    }

    /// True when `blob` is a whole compact form of exactly this text: its layout, the text's
    /// length and hash, and the hash of its parts (a read of the whole form: for files, not for
    /// the forms compiled into the binary).
    pub fn matches(text: &str, blob: &[u8]) -> bool {
        let hash = |i: usize| {
            u64::from(word_at(blob, MAGIC.len() + 4 * i)) | (u64::from(word_at(blob, MAGIC.len() + 4 * i + 4)) << 32)
        };
        let body = MAGIC.len() + 4 * HEADER_WORDS;
        layout(text.len(), blob).is_some()
            && hash(6) == compact::fnv(text.as_bytes())
            && blob.get(body..).is_some_and(|rest| hash(8) == compact::fnv(rest))
    }

    /// The compact form (what `terminology import` writes as `index.bin`).
    pub fn compact(&self) -> &[u8] {
        &self.blob
    }

    fn word(&self, at: usize) -> u32 {
        word_at(&self.blob, at)
    }

    fn concept_word(&self, concept: u32, i: usize) -> u32 {
        if concept as usize >= self.concepts {
            return 0;
        }
        self.word(self.concepts_at + 16 * concept as usize + 4 * i)
    }

    fn label_word(&self, label: u32, i: usize) -> u32 {
        if label as usize >= self.labels {
            return 0;
        }
        self.word(self.labels_at + 16 * label as usize + 4 * i)
    }

    fn text_of(&self, start: u32, end: u32) -> &str {
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    fn token(&self, i: usize) -> &[u8] {
        let at = self.tokens_at + 16 * i;
        let (start, len) = (self.word(at) as usize, self.word(at + 4) as usize);
        let from = self.bytes_at.saturating_add(start);
        self.blob.get(from..from.saturating_add(len)).unwrap_or(&[])
    }

    /// The postings of a query token: its labels' numbers as little-endian words.
    fn postings(&self, token: &str) -> &[u8] {
        let (mut lo, mut hi) = (0usize, self.tokens);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.token(mid).cmp(token.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let at = self.tokens_at + 16 * mid;
                    let (start, len) = (self.word(at + 8) as usize, self.word(at + 12) as usize);
                    let from = self.postings_at.saturating_add(start.saturating_mul(4));
                    return self.blob.get(from..from.saturating_add(len.saturating_mul(4))).unwrap_or(&[]);
                }
            }
        }
        &[]
    }

    /// The number of concepts.
    pub fn len(&self) -> usize {
        self.concepts
    }

    /// True when the index holds no concept.
    pub fn is_empty(&self) -> bool {
        self.concepts == 0
    }

    /// The code of a concept.
    pub fn code(&self, concept: u32) -> &str {
        self.text_of(self.concept_word(concept, 0), self.concept_word(concept, 1))
    }

    /// A label of a concept (0: the title).
    pub fn label(&self, concept: u32, label: u32) -> &str {
        let count = self.concept_word(concept, 3) & !(1 << 31);
        let l = self.concept_word(concept, 2).saturating_add(label.min(count.saturating_sub(1)));
        self.text_of(self.label_word(l, 0), self.label_word(l, 1))
    }

    /// The title of a concept.
    pub fn title(&self, concept: u32) -> &str {
        self.label(concept, 0)
    }

    /// True when the concept is deprecated.
    pub fn deprecated(&self, concept: u32) -> bool {
        self.concept_word(concept, 3) & (1 << 31) != 0
    }

    /// The concept with this code (exact match), by a linear scan.
    pub fn find_code(&self, code: &str) -> Option<u32> {
        (0..self.concepts as u32).find(|&c| self.code(c) == code)
    }

    /// Scores every label against a query and returns, per concept with a positive score, its
    /// best label (ties: the earlier label, so the title first), in index order. Deprecated
    /// concepts are left out unless `include_deprecated`.
    pub fn search(&self, query_normalized: &str, include_deprecated: bool) -> Vec<Hit> {
        let query = token_set(query_normalized);
        if query.is_empty() {
            return Vec::new();
        }
        let mut overlap = vec![0u32; self.labels];
        let mut touched: Vec<u32> = Vec::new();
        for t in &query {
            for w in self.postings(t).chunks_exact(4) {
                let l = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                let Some(o) = overlap.get_mut(l as usize) else { continue };
                if *o == 0 {
                    touched.push(l);
                }
                *o += 1;
            }
        }
        touched.sort_unstable();
        let mut hits: Vec<Hit> = Vec::new();
        for l in touched {
            let concept = self.label_word(l, 2);
            if self.deprecated(concept) && !include_deprecated {
                continue;
            }
            let o = overlap[l as usize] as usize;
            let (a, b) = (query.len(), self.label_word(l, 3) as usize);
            // Equal normalized texts have equal token sets; only then is the text compared.
            let equal = o == a
                && o == b
                && normalize(self.text_of(self.label_word(l, 0), self.label_word(l, 1))) == query_normalized;
            let score = from_counts(a, b, o, equal);
            let index_in_concept = l.saturating_sub(self.concept_word(concept, 2));
            match hits.last_mut() {
                Some(h) if h.concept == concept => {
                    if score > h.score {
                        h.score = score;
                        h.label = index_in_concept;
                    }
                }
                _ => hits.push(Hit { concept, score, label: index_in_concept }),
            }
        }
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# comment\nE11\ta\tType 2 diabetes mellitus\tdiabetes NOS\nE10\td\tType 1 diabetes mellitus\n\
                        X\ta\t\nI10\ta\tEssential (primary) hypertension\thypertension (arterial)\n";

    #[test]
    fn builds_and_searches() {
        let index = Index::build(TEXT.to_owned()).expect("index");
        assert_eq!(index.len(), 3);
        assert_eq!(index.code(2), "I10");
        assert_eq!(index.label(0, 1), "diabetes NOS");
        let hits = index.search("diabetes", false);
        assert_eq!(hits, vec![Hit { concept: 0, score: 0.833, label: 1 }]);
        let hits = index.search("diabetes", true);
        assert_eq!(hits.len(), 2);
        let hits = index.search("essential primary hypertension", false);
        assert_eq!(hits, vec![Hit { concept: 2, score: 1.0, label: 0 }]);
        assert!(index.search("", false).is_empty());
        assert_eq!(index.find_code("I10"), Some(2));
    }
}
