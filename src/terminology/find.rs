//! `find-equivalent`: one term against every searched code system, ranked globally by the
//! lexical score ([`super::score`]), with the contract of the established tool: `term`,
//! `source_terminology`, `searched_terminologies`, `results` keyed by code system, `groups`,
//! `ranking`, `provenance`, `attribution` (docs/terminology.md).
//!
//! Ranking: every concept of every searched index is scored (its best label: title, inclusion
//! term, entry term, designation) before `limit` applies; rank is global: score descending, then
//! code-system order ([`System::ALL`]), then the index's own order. Concepts scoring 0 are not
//! candidates. Deprecated concepts are left out unless asked for.
//!
//! What it does not do: log the term (it is caller data, and only goes to the data channel),
//! or reach the network: a code system that is neither bundled nor imported answers
//! `found: false` with an error saying so.

use serde_json::{Map, Value, json};

use super::score::normalize;
use super::{Catalog, Loaded, Origin, System, field};

/// The largest term accepted, in bytes.
pub const MAX_TERM_BYTES: usize = 4096;
/// The most results per code system.
pub const MAX_LIMIT: usize = 10;
/// Results per code system when not given.
pub const DEFAULT_LIMIT: usize = 5;

/// A query.
#[derive(Debug)]
pub struct Query {
    /// The term (caller data).
    pub term: String,
    /// Results per code system, 1 to [`MAX_LIMIT`].
    pub limit: usize,
    /// The code system the term comes from: excluded from the search.
    pub source: Option<System>,
    /// The code systems to search (empty: all); the source is subtracted.
    pub targets: Vec<System>,
    /// Include deprecated concepts.
    pub include_deprecated: bool,
}

/// The code systems a query searches, in ranking order.
pub fn searched(query: &Query) -> Vec<System> {
    System::ALL
        .into_iter()
        .filter(|s| query.targets.is_empty() || query.targets.contains(s))
        .filter(|s| Some(*s) != query.source)
        .collect()
}

struct Candidate {
    score: f64,
    system: usize,
    concept: u32,
    label: u32,
}

/// Runs a query. Returns the result object and whether any code system found something.
pub fn find_equivalent(query: &Query, catalog: &Catalog) -> (Value, bool) {
    let systems = searched(query);
    let normalized = normalize(&query.term);
    let limit = query.limit.clamp(1, MAX_LIMIT);
    let loaded: Vec<Option<std::sync::Arc<Loaded>>> = systems.iter().map(|s| catalog.get(*s)).collect();
    // Per code system: every concept scored, the best `limit` kept.
    let mut chosen: Vec<Candidate> = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        let Some(l) = l else { continue };
        let mut hits = l.index.search(&normalized, query.include_deprecated);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.concept.cmp(&b.concept)));
        hits.truncate(limit);
        chosen.extend(hits.into_iter().map(|h| Candidate {
            score: h.score,
            system: i,
            concept: h.concept,
            label: h.label,
        }));
    }
    chosen.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.system.cmp(&b.system)).then(a.concept.cmp(&b.concept)));
    let mut items: Vec<Vec<Value>> = vec![Vec::new(); systems.len()];
    let mut titles: Vec<(String, usize, String, usize)> = Vec::new();
    for (rank0, c) in chosen.iter().enumerate() {
        let Some(l) = &loaded[c.system] else { continue };
        let system = systems[c.system];
        let code = l.index.code(c.concept);
        let title = l.index.title(c.concept);
        let mut item = Map::new();
        item.insert("code".into(), Value::from(code));
        item.insert("title".into(), Value::from(title));
        item.insert("uri".into(), Value::from(system.uri(code)));
        item.insert("match_score".into(), json!(c.score));
        item.insert("rank".into(), Value::from(rank0 + 1));
        if c.label != 0 {
            item.insert("matched_label".into(), Value::from(l.index.label(c.concept, c.label)));
        }
        if l.index.deprecated(c.concept) {
            item.insert("deprecated".into(), Value::Bool(true));
        }
        items[c.system].push(Value::Object(item));
        titles.push((normalize(title), c.system, code.to_owned(), rank0 + 1));
    }
    let mut results = Map::new();
    let mut any = false;
    for (i, s) in systems.iter().enumerate() {
        let entry = match &loaded[i] {
            Some(_) => {
                let list = std::mem::take(&mut items[i]);
                any |= !list.is_empty();
                json!({"found": !list.is_empty(), "error": Value::Null, "items": list})
            }
            None => json!({
                "found": false,
                "error": format!(
                    "{} is not available offline: import it with `phiward terminology import {} FILE` \
                     (see docs/terminology.md)",
                    s.as_str(),
                    s.as_str()
                ),
                "items": []
            }),
        };
        results.insert(s.as_str().to_owned(), entry);
    }
    let out = json!({
        "term": query.term,
        "source_terminology": query.source.map(System::as_str),
        "searched_terminologies": systems.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "results": results,
        "groups": groups(titles, &systems),
        "ranking": {
            "method": "lexical",
            "note": "Every concept of every searched code system is scored before the limit applies: \
                     normalize (lowercase, NFD, combining marks dropped, runs outside [a-z0-9] to one \
                     space), 1 if equal, else mean of o/|A| and 2o/(|A|+|B|) over token sets, 3 decimals; \
                     best of title and synonyms. Rank is global: score, then code-system order \
                     (icd10cm, icd11, loinc, rxnorm, mesh), then index order. Lexical only: not a \
                     clinical equivalence."
        },
        "provenance": provenance(&systems, &loaded),
        "attribution": attribution(&systems, &loaded),
    });
    (out, any)
}

/// Candidates of two or more code systems whose normalized titles are identical.
fn groups(mut titles: Vec<(String, usize, String, usize)>, systems: &[System]) -> Value {
    titles.sort_by(|a, b| a.0.cmp(&b.0).then(a.3.cmp(&b.3)));
    let mut out: Vec<(usize, Value)> = Vec::new();
    let mut i = 0;
    while i < titles.len() {
        let mut j = i;
        while j < titles.len() && titles[j].0 == titles[i].0 {
            j += 1;
        }
        let run = &titles[i..j];
        let mut in_systems: Vec<usize> = run.iter().map(|t| t.1).collect();
        in_systems.sort_unstable();
        in_systems.dedup();
        if in_systems.len() >= 2 && !run[0].0.is_empty() {
            let mut members: Vec<&(String, usize, String, usize)> = run.iter().collect();
            members.sort_by_key(|m| m.3);
            let first_rank = members[0].3;
            out.push((
                first_rank,
                json!({
                    "normalized_title": run[0].0,
                    "terminologies": in_systems.iter().map(|s| systems[*s].as_str()).collect::<Vec<_>>(),
                    "members": members.iter().map(|m| json!({
                        "terminology": systems[m.1].as_str(), "code": m.2, "rank": m.3
                    })).collect::<Vec<_>>(),
                }),
            ));
        }
        i = j;
    }
    out.sort_by_key(|(r, _)| *r);
    Value::Array(out.into_iter().map(|(_, v)| v).collect())
}

fn provenance(systems: &[System], loaded: &[Option<std::sync::Arc<Loaded>>]) -> Value {
    let mut blocks = Vec::new();
    for (s, l) in systems.iter().zip(loaded) {
        let Some(l) = l else { continue };
        let m = &l.manifest;
        let retrieved = match l.origin {
            Origin::Bundled => Value::Null,
            Origin::Imported => m.get("retrieved_at").cloned().unwrap_or(Value::Null),
        };
        blocks.push(json!({
            "source": format!("{} ({})", field(m, "title"), s.as_str()),
            "source_url": field(m, "source_url"),
            "data_vintage": field(m, "vintage"),
            "retrieved_at": retrieved,
            "citation": field(m, "citation"),
            "license": field(m, "license"),
            "retrieval": Value::Null,
            "derived": false,
        }));
    }
    blocks.push(json!({
        "source": "phiward lexical ranking",
        "source_url": Value::Null,
        "data_vintage": Value::Null,
        "retrieved_at": Value::Null,
        "citation": Value::Null,
        "license": Value::Null,
        "retrieval": Value::Null,
        "derived": true,
        "derivation": "match_score, rank and groups are computed locally from the data above by the \
                       published lexical score (docs/terminology.md); no query left this machine."
    }));
    Value::Array(blocks)
}

fn attribution(systems: &[System], loaded: &[Option<std::sync::Arc<Loaded>>]) -> Value {
    let mut parts = Vec::new();
    for (_, l) in systems.iter().zip(loaded) {
        let Some(l) = l else { continue };
        parts.push(field(&l.manifest, "citation").to_owned());
        if let Some(n) = l.manifest.get("notice").and_then(Value::as_str) {
            parts.push(n.to_owned());
        }
    }
    Value::from(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(term: &str) -> Query {
        Query { term: term.to_owned(), limit: 5, source: None, targets: Vec::new(), include_deprecated: false }
    }

    #[test]
    fn source_is_subtracted_from_targets() {
        let mut q = query("x");
        q.source = Some(System::Mesh);
        q.targets = vec![System::Mesh, System::Icd10cm];
        assert_eq!(searched(&q), vec![System::Icd10cm]);
        q.targets.clear();
        assert_eq!(searched(&q), vec![System::Icd10cm, System::Icd11, System::Loinc, System::Rxnorm]);
    }

    #[test]
    fn unavailable_systems_say_so() {
        let catalog = Catalog::new(None);
        let mut q = query("diabetes mellitus");
        q.targets = vec![System::Rxnorm, System::Icd10cm];
        let (v, any) = find_equivalent(&q, &catalog);
        assert!(any);
        assert_eq!(v["results"]["rxnorm"]["found"], false);
        assert!(v["results"]["rxnorm"]["error"].as_str().is_some_and(|e| e.contains("not available offline")));
        assert_eq!(v["results"]["icd10cm"]["found"], true);
        assert_eq!(v["results"]["icd10cm"]["items"][0]["rank"], 1);
    }
}
