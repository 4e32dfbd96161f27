//! The compact, pre-tokenized form of an index: what [`super::index::Index`] searches, built once
//! from the index text (at build time for the bundled code systems, by `build.rs`; at
//! `terminology import` for imported ones, written beside `index.tsv` as `index.bin`) and read in
//! place, without parsing, tokenizing or allocating per concept.
//!
//! Layout: little-endian `u32` words after an 8-byte magic.
//!
//! | part | words |
//! |---|---|
//! | header | concepts, labels, tokens, postings, token bytes, text length, text hash (low, high), hash of the rest (low, high) |
//! | concepts | per concept: code start, code end, first label, label count (bit 31: deprecated) |
//! | labels | per label: text start, text end, concept, distinct tokens |
//! | tokens | per token, sorted by its bytes: bytes start, bytes length, postings start, postings length |
//! | postings | label numbers, ascending within a token |
//! | token bytes | the tokens' normalized bytes |
//!
//! Text positions are byte offsets into the index text the form was built from; the text's length
//! and FNV-1a hash in the header tie the two together, and the hash of the parts after the header
//! tells a damaged form from a whole one.
//!
//! This file is also compiled into the build script (`build.rs`), so it uses nothing of the crate
//! but [`super::score`]'s tokenizer: the index the build writes and the one a search reads are
//! tokenized by the same code.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::score::{normalize_into, token_set};

/// The first bytes of a compact index (the trailing digits are the layout's version).
pub const MAGIC: &[u8; 8] = b"PWTIDX01";
/// Words of the header after the magic.
pub const HEADER_WORDS: usize = 10;

/// A small multiply-rotate hasher (the FxHash scheme) for the builder's token table: the keys are
/// the index's own tokens and the table's order never reaches the output (tokens are sorted).
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

/// FNV-1a, 64 bits (ties a compact form to its text and detects damage; not a security check).
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Builds the compact form of an index text (line format: see [`super::index`]). `None` when a
/// count or an offset does not fit in 32 bits.
pub fn build(text: &str) -> Option<Vec<u8>> {
    let mut concepts: Vec<[u32; 4]> = Vec::new();
    let mut labels: Vec<[u32; 4]> = Vec::new();
    let mut tokens: HashMap<String, u32, BuildHasherDefault<TokenHasher>> = HashMap::default();
    let mut postings: Vec<Vec<u32>> = Vec::new();
    let mut norm = String::new();
    let word = |n: usize| u32::try_from(n).ok();
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
        if fields.len() < 3 || fields[0].0 == fields[0].1 {
            continue;
        }
        let deprecated = text.get(fields[1].0..fields[1].1) == Some("d");
        let concept = word(concepts.len())?;
        let first_label = word(labels.len())?;
        let mut count = 0u32;
        for &(s, e) in &fields[2..] {
            if s == e {
                continue;
            }
            normalize_into(text.get(s..e)?, &mut norm);
            let set = token_set(&norm);
            let label = word(labels.len())?;
            for t in &set {
                let id = match tokens.get(*t) {
                    Some(&id) => id,
                    None => {
                        let id = word(postings.len())?;
                        tokens.insert((*t).to_owned(), id);
                        postings.push(Vec::new());
                        id
                    }
                };
                postings[id as usize].push(label);
            }
            labels.push([word(s)?, word(e)?, concept, word(set.len())?]);
            count += 1;
        }
        if count == 0 {
            continue;
        }
        if count >= 1 << 31 {
            return None;
        }
        let flags = if deprecated { 1 << 31 } else { 0 };
        concepts.push([word(fields[0].0)?, word(fields[0].1)?, first_label, count | flags]);
    }
    let mut sorted: Vec<(&str, u32)> = tokens.iter().map(|(t, id)| (t.as_str(), *id)).collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let total_postings: usize = postings.iter().map(Vec::len).sum();
    let token_bytes: usize = sorted.iter().map(|(t, _)| t.len()).sum();
    let hash = fnv(text.as_bytes());
    let mut out = Vec::with_capacity(
        MAGIC.len()
            + 4 * (HEADER_WORDS + 4 * (concepts.len() + labels.len() + sorted.len()) + total_postings)
            + token_bytes,
    );
    out.extend_from_slice(MAGIC);
    let header = [
        word(concepts.len())?,
        word(labels.len())?,
        word(sorted.len())?,
        word(total_postings)?,
        word(token_bytes)?,
        word(text.len())?,
        hash as u32,
        (hash >> 32) as u32,
        0,
        0,
    ];
    for w in header.iter().chain(concepts.iter().flatten()).chain(labels.iter().flatten()) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    let (mut bytes_at, mut postings_at) = (0usize, 0usize);
    for (t, id) in &sorted {
        let p = postings[*id as usize].len();
        for w in [word(bytes_at)?, word(t.len())?, word(postings_at)?, word(p)?] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        bytes_at += t.len();
        postings_at += p;
    }
    for (_, id) in &sorted {
        for l in &postings[*id as usize] {
            out.extend_from_slice(&l.to_le_bytes());
        }
    }
    for (t, _) in &sorted {
        out.extend_from_slice(t.as_bytes());
    }
    let body = MAGIC.len() + 4 * HEADER_WORDS;
    let rest = fnv(&out[body..]);
    out[body - 8..body - 4].copy_from_slice(&(rest as u32).to_le_bytes());
    out[body - 4..body].copy_from_slice(&((rest >> 32) as u32).to_le_bytes());
    Some(out)
}
