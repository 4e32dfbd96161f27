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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::score::{from_counts, normalize, normalize_into, token_set};

/// A small multiply-rotate hasher (the FxHash scheme) for the token table: the keys are our own
/// index's tokens, iteration order never reaches output, and SipHash's cost dominated loading.
#[derive(Default)]
struct TokenHasher(u64);

impl Hasher for TokenHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type TokenMap = HashMap<String, u32, BuildHasherDefault<TokenHasher>>;

/// The largest index text accepted (an imported file is converted first; this bounds memory).
pub const MAX_INDEX_BYTES: usize = 512 * 1024 * 1024;

const TOO_LARGE: crate::diag::Code = crate::diag::Code::CLI_INPUT_TOO_LARGE;

/// One concept.
#[derive(Debug)]
struct Concept {
    code: (u32, u32),
    /// Its labels are `first_label..first_label + labels`; the first is the title.
    first_label: u32,
    labels: u32,
    deprecated: bool,
}

/// One label: a title or a synonym.
#[derive(Debug)]
struct Label {
    text: (u32, u32),
    concept: u32,
    /// The number of distinct tokens of its normalized form.
    tokens: u32,
}

/// An index over the text it was built from.
#[derive(Debug)]
pub struct Index {
    text: String,
    concepts: Vec<Concept>,
    labels: Vec<Label>,
    tokens: TokenMap,
    postings: Vec<Vec<u32>>,
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

impl Index {
    /// Builds an index from text in the line format. Fails with `CLI_INPUT_TOO_LARGE` when the text is
    /// larger than [`MAX_INDEX_BYTES`] or the counts overflow.
    pub fn build(text: String) -> Result<Index, crate::diag::Code> {
        if text.len() > MAX_INDEX_BYTES {
            return Err(TOO_LARGE);
        }
        let mut index = Index {
            text: String::new(),
            concepts: Vec::new(),
            labels: Vec::new(),
            tokens: TokenMap::default(),
            postings: Vec::new(),
        };
        let mut norm = String::new();
        let mut offset = 0usize;
        for line in text.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            let mut fields = Vec::new();
            let mut pos = start;
            for f in body.split('\t') {
                fields.push((pos, pos + f.len()));
                pos += f.len() + 1;
            }
            if fields.len() < 3 {
                continue;
            }
            let code = fields[0];
            if code.0 == code.1 {
                continue;
            }
            let deprecated = &text[fields[1].0..fields[1].1] == "d";
            let concept = u32::try_from(index.concepts.len()).map_err(|_| TOO_LARGE)?;
            let first_label = u32::try_from(index.labels.len()).map_err(|_| TOO_LARGE)?;
            let mut labels = 0u32;
            for &(s, e) in &fields[2..] {
                if s == e {
                    continue;
                }
                normalize_into(&text[s..e], &mut norm);
                let set = token_set(&norm);
                let label = u32::try_from(index.labels.len()).map_err(|_| TOO_LARGE)?;
                for t in &set {
                    let id = match index.tokens.get(*t) {
                        Some(&id) => id,
                        None => {
                            let id = u32::try_from(index.postings.len()).map_err(|_| TOO_LARGE)?;
                            index.tokens.insert((*t).to_owned(), id);
                            index.postings.push(Vec::new());
                            id
                        }
                    };
                    index.postings[id as usize].push(label);
                }
                index.labels.push(Label {
                    text: (u32::try_from(s).map_err(|_| TOO_LARGE)?, u32::try_from(e).map_err(|_| TOO_LARGE)?),
                    concept,
                    tokens: u32::try_from(set.len()).map_err(|_| TOO_LARGE)?,
                });
                labels += 1;
            }
            if labels == 0 {
                continue;
            }
            index.concepts.push(Concept {
                code: (u32::try_from(code.0).map_err(|_| TOO_LARGE)?, u32::try_from(code.1).map_err(|_| TOO_LARGE)?),
                first_label,
                labels,
                deprecated,
            });
        }
        index.text = text;
        Ok(index)
    }

    /// The number of concepts.
    pub fn len(&self) -> usize {
        self.concepts.len()
    }

    /// True when the index holds no concept.
    pub fn is_empty(&self) -> bool {
        self.concepts.is_empty()
    }

    /// The code of a concept.
    pub fn code(&self, concept: u32) -> &str {
        let c = &self.concepts[concept as usize];
        &self.text[c.code.0 as usize..c.code.1 as usize]
    }

    /// A label of a concept (0: the title).
    pub fn label(&self, concept: u32, label: u32) -> &str {
        let c = &self.concepts[concept as usize];
        let l = &self.labels[(c.first_label + label.min(c.labels - 1)) as usize];
        &self.text[l.text.0 as usize..l.text.1 as usize]
    }

    /// The title of a concept.
    pub fn title(&self, concept: u32) -> &str {
        self.label(concept, 0)
    }

    /// True when the concept is deprecated.
    pub fn deprecated(&self, concept: u32) -> bool {
        self.concepts[concept as usize].deprecated
    }

    /// The concept with this code (exact match), by a linear scan.
    pub fn find_code(&self, code: &str) -> Option<u32> {
        (0..self.concepts.len() as u32).find(|&c| self.code(c) == code)
    }

    /// Scores every label against a query and returns, per concept with a positive score, its
    /// best label (ties: the earlier label, so the title first), in index order. Deprecated
    /// concepts are left out unless `include_deprecated`.
    pub fn search(&self, query_normalized: &str, include_deprecated: bool) -> Vec<Hit> {
        let query = token_set(query_normalized);
        if query.is_empty() {
            return Vec::new();
        }
        let mut overlap = vec![0u32; self.labels.len()];
        let mut touched: Vec<u32> = Vec::new();
        for t in &query {
            if let Some(&id) = self.tokens.get(*t) {
                for &l in &self.postings[id as usize] {
                    if overlap[l as usize] == 0 {
                        touched.push(l);
                    }
                    overlap[l as usize] += 1;
                }
            }
        }
        touched.sort_unstable();
        let mut hits: Vec<Hit> = Vec::new();
        for l in touched {
            let label = &self.labels[l as usize];
            let concept = &self.concepts[label.concept as usize];
            if concept.deprecated && !include_deprecated {
                continue;
            }
            let o = overlap[l as usize] as usize;
            let (a, b) = (query.len(), label.tokens as usize);
            // Equal normalized texts have equal token sets; only then is the text compared.
            let equal = o == a
                && o == b
                && normalize(&self.text[label.text.0 as usize..label.text.1 as usize]) == query_normalized;
            let score = from_counts(a, b, o, equal);
            let index_in_concept = l - concept.first_label;
            match hits.last_mut() {
                Some(h) if h.concept == label.concept => {
                    if score > h.score {
                        h.score = score;
                        h.label = index_in_concept;
                    }
                }
                _ => hits.push(Hit { concept: label.concept, score, label: index_in_concept }),
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
