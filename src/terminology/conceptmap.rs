//! FHIR R4 ConceptMaps and `map-codes`: a map read from the user's JSON file (or text) or a
//! bundled one by canonical URL (`data/conceptmaps.tsv`), and the translation of codings through
//! it (`ConceptMap/$translate` semantics without dependsOn/product: every target of the
//! element with the coding's system and code, in the map's order).
//!
//! A coding is mapped when at least one target's equivalence is neither `unmatched` nor
//! `disjoint`; otherwise it is unmapped (`CODE_UNMAPPED`, error). A coding whose targets are all
//! `narrower`, `wider`, `inexact`, `specializes` or `subsumes` is mapped, with
//! `CODE_MAPPED_NARROWER` (information). Findings are located by the coding's structural
//! position (`record:N` in a batch, `-` for one code), never by a code.
//!
//! What it does not do: `group.unmapped` (other-map / fixed / provided modes), `dependsOn`,
//! reverse translation, or value set expansion.

use serde_json::{Map, Value, json};

use crate::diag::{Code, Severity};

/// The largest ConceptMap JSON accepted.
pub const MAX_MAP_BYTES: usize = 64 * 1024 * 1024;
/// The most codings in one call.
pub const MAX_CODINGS: usize = 1_000_000;

/// One group of a map: a source system and a target system.
#[derive(Debug)]
struct Group {
    source: String,
    target: String,
    /// `(code, [(target code, equivalence)])`, in the map's order.
    elements: Vec<(String, Vec<(String, String)>)>,
}

/// A ConceptMap.
#[derive(Debug)]
pub struct ConceptMap {
    url: String,
    groups: Vec<Group>,
}

/// One target of a translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The target system.
    pub system: String,
    /// The target code.
    pub code: String,
    /// The equivalence (FHIR R4 ConceptMapEquivalence).
    pub equivalence: String,
}

/// The canonical URLs of the bundled maps, in file order.
pub fn bundled_urls() -> Vec<&'static str> {
    bundled_text().lines().filter_map(|l| l.strip_prefix("M\t")).filter_map(|l| l.split('\t').next()).collect()
}

/// Every bundled map: its canonical URL and the source and target system of each of its
/// groups, in file order (`terminology list`, `info://terminology`).
pub fn bundled_maps() -> Vec<Value> {
    let mut maps: Vec<(&str, Vec<Value>)> = Vec::new();
    for line in bundled_text().lines() {
        let mut f = line.split('\t');
        match (f.next(), f.next(), f.next()) {
            (Some("M"), Some(url), _) => maps.push((url, Vec::new())),
            (Some("G"), Some(source), Some(target)) => {
                if let Some((_, groups)) = maps.last_mut() {
                    let pair = serde_json::json!({"source": source, "target": target});
                    if !groups.contains(&pair) {
                        groups.push(pair);
                    }
                }
            }
            _ => {}
        }
    }
    maps.into_iter().map(|(url, groups)| serde_json::json!({"url": url, "groups": groups})).collect()
}

/// The id of a bundled map: the last segment of its canonical URL (`cm-name-use-v2`), with the
/// URL, in file order. The ids are unique among the bundled maps.
pub fn bundled_ids() -> Vec<(&'static str, &'static str)> {
    bundled_urls().into_iter().map(|url| (url.rsplit('/').next().unwrap_or(url), url)).collect()
}

fn bundled_text() -> &'static str {
    super::BUNDLED.iter().find(|b| b.name == "conceptmaps").map_or("", |b| b.data)
}

impl ConceptMap {
    /// The bundled map with this canonical URL.
    pub fn bundled(url: &str) -> Option<ConceptMap> {
        let mut map: Option<ConceptMap> = None;
        for line in bundled_text().lines() {
            let mut f = line.split('\t');
            match (f.next(), f.next(), f.next(), f.next()) {
                (Some("M"), Some(u), _, _) => {
                    if map.is_some() {
                        break;
                    }
                    if u == url {
                        map = Some(ConceptMap { url: u.to_owned(), groups: Vec::new() });
                    }
                }
                (Some("G"), Some(s), Some(t), _) => {
                    if let Some(m) = map.as_mut() {
                        m.groups.push(Group { source: s.to_owned(), target: t.to_owned(), elements: Vec::new() });
                    }
                }
                (Some("E"), Some(c), Some(t), Some(e)) => {
                    if let Some(g) = map.as_mut().and_then(|m| m.groups.last_mut()) {
                        match g.elements.last_mut() {
                            Some((code, targets)) if code == c => targets.push((t.to_owned(), e.to_owned())),
                            _ => g.elements.push((c.to_owned(), vec![(t.to_owned(), e.to_owned())])),
                        }
                    }
                }
                _ => {}
            }
        }
        map
    }

    /// A map from FHIR R4 JSON. Fails with `CONCEPTMAP_INVALID` (no detail: serde's text quotes
    /// values) when it is not a ConceptMap or a group has no source or target system.
    pub fn from_json(text: &[u8]) -> Result<ConceptMap, Code> {
        if text.len() > MAX_MAP_BYTES {
            return Err(Code::CLI_INPUT_TOO_LARGE);
        }
        let v: Value = serde_json::from_slice(text).map_err(|_| Code::CONCEPTMAP_INVALID)?;
        if v.get("resourceType").and_then(Value::as_str) != Some("ConceptMap") {
            return Err(Code::CONCEPTMAP_INVALID);
        }
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let url = str_of(&v, "url").unwrap_or_default();
        let mut groups = Vec::new();
        for g in v.get("group").and_then(Value::as_array).into_iter().flatten() {
            let (Some(source), Some(target)) = (str_of(g, "source"), str_of(g, "target")) else {
                return Err(Code::CONCEPTMAP_INVALID);
            };
            let mut elements = Vec::new();
            for el in g.get("element").and_then(Value::as_array).into_iter().flatten() {
                let Some(code) = str_of(el, "code") else { continue };
                let targets = el
                    .get("target")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|t| {
                        let eq = str_of(t, "equivalence").unwrap_or_else(|| "equivalent".to_owned());
                        // A target without a code can only say "unmatched".
                        (str_of(t, "code").unwrap_or_default(), eq)
                    })
                    .collect();
                elements.push((code, targets));
            }
            groups.push(Group { source, target, elements });
        }
        Ok(ConceptMap { url, groups })
    }

    /// Loads `--map`: a bundled URL, else a file path.
    pub fn load(spec: &str) -> Result<ConceptMap, Code> {
        if let Some(m) = ConceptMap::bundled(spec) {
            return Ok(m);
        }
        if spec.contains("://") {
            return Err(Code::CONCEPTMAP_INVALID);
        }
        let text = super::import::read_bounded_bytes(std::path::Path::new(spec), MAX_MAP_BYTES)?;
        ConceptMap::from_json(&text)
    }

    /// The canonical URL (empty when the map has none).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The map as a FHIR R4 ConceptMap (`id` given): its URL and, per group, the source and
    /// target systems and each element's targets with their equivalence, in the map's order.
    /// The direction is source to target; `$translate` is not offered in reverse. What the
    /// bundle does not keep (status, publisher, narrative) is left out.
    pub fn to_fhir(&self, id: &str) -> Value {
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|g| {
                let elements: Vec<Value> = g
                    .elements
                    .iter()
                    .map(|(code, targets)| {
                        let targets: Vec<Value> =
                            targets.iter().map(|(t, e)| json!({"code": t, "equivalence": e})).collect();
                        json!({"code": code, "target": targets})
                    })
                    .collect();
                json!({"source": g.source, "target": g.target, "element": elements})
            })
            .collect();
        json!({"resourceType": "ConceptMap", "id": id, "url": self.url, "group": groups})
    }

    /// Every target of a coding, in the map's order.
    pub fn translate(&self, system: &str, code: &str) -> Vec<Target> {
        let mut out = Vec::new();
        for g in self.groups.iter().filter(|g| g.source == system) {
            for (c, targets) in g.elements.iter().filter(|(c, _)| c == code) {
                let _ = c;
                for (t, e) in targets {
                    out.push(Target { system: g.target.clone(), code: t.clone(), equivalence: e.clone() });
                }
            }
        }
        out
    }
}

/// A coding to translate and where it was found (a value-free location).
pub struct Coding {
    /// `-`, `record:N`, an HL7 v2 position or a FHIR path.
    pub location: String,
    /// The system.
    pub system: String,
    /// The code.
    pub code: String,
}

/// Translates codings; returns the result object (`map`, `mapped`, `unmapped`, `results`,
/// `findings`) and whether every coding was mapped.
pub fn map_codes(map: &ConceptMap, codings: &[Coding]) -> (Value, bool) {
    let mut results = Vec::with_capacity(codings.len());
    let mut findings = Vec::new();
    let (mut mapped_n, mut unmapped_n) = (0u64, 0u64);
    for c in codings {
        let targets = map.translate(&c.system, &c.code);
        let usable: Vec<&Target> = targets
            .iter()
            .filter(|t| !t.code.is_empty() && t.equivalence != "unmatched" && t.equivalence != "disjoint")
            .collect();
        let mapped = !usable.is_empty();
        if mapped {
            mapped_n += 1;
            let loose = ["narrower", "wider", "inexact", "specializes", "subsumes"];
            if usable.iter().all(|t| loose.contains(&t.equivalence.as_str())) {
                findings.push(finding(Code::CODE_MAPPED_NARROWER, &c.location));
            }
        } else {
            unmapped_n += 1;
            findings.push(finding(Code::CODE_UNMAPPED, &c.location));
        }
        results.push(json!({
            "location": c.location,
            "system": c.system,
            "code": c.code,
            "mapped": mapped,
            "targets": usable.iter().map(|t| json!({"system": t.system, "code": t.code, "equivalence": t.equivalence}))
                .collect::<Vec<_>>(),
        }));
    }
    let out = json!({
        "map": map.url,
        "mapped": mapped_n,
        "unmapped": unmapped_n,
        "results": results,
        "findings": findings,
    });
    (out, unmapped_n == 0)
}

fn finding(code: Code, location: &str) -> Value {
    let severity: Severity = code.default_severity();
    json!({"code": code.as_str(), "severity": severity.as_str(), "location": location})
}

/// Reads NDJSON codings (`{"system": ..., "code": ...}` per line; blank lines skipped).
pub fn codings_from_ndjson(text: &[u8]) -> Result<Vec<Coding>, Code> {
    let mut out = Vec::new();
    for (n, line) in text.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if out.len() >= MAX_CODINGS {
            return Err(Code::CLI_INPUT_TOO_LARGE);
        }
        let v: Value = serde_json::from_slice(line).map_err(|_| Code::CLI_PARSE_FAILED)?;
        let (Some(system), Some(code)) =
            (v.get("system").and_then(Value::as_str), v.get("code").and_then(Value::as_str))
        else {
            return Err(Code::CLI_PARSE_FAILED);
        };
        out.push(Coding { location: format!("record:{}", n + 1), system: system.to_owned(), code: code.to_owned() });
    }
    Ok(out)
}

/// The `map_codes` MCP tool: `map` or `conceptmap`, and `codings` or `content` (a message to
/// scan, see `ops::scan_codings`).
pub fn run_mcp(args: &Map<String, Value>, limits: &crate::limits::Limits) -> Result<(Value, bool), Code> {
    let map = match (args.get("map"), args.get("conceptmap")) {
        (Some(Value::String(url)), None) => ConceptMap::bundled(url).ok_or(Code::CONCEPTMAP_INVALID)?,
        (None, Some(Value::String(text))) => ConceptMap::from_json(text.as_bytes())?,
        _ => return Err(Code::CLI_USAGE),
    };
    let codings = match (args.get("codings"), args.get("content")) {
        (Some(Value::Array(items)), None) => {
            if items.len() > MAX_CODINGS {
                return Err(Code::CLI_INPUT_TOO_LARGE);
            }
            items
                .iter()
                .enumerate()
                .map(|(i, it)| {
                    match (it.get("system").and_then(Value::as_str), it.get("code").and_then(Value::as_str)) {
                        (Some(s), Some(c)) => Ok(Coding {
                            location: format!("record:{}", i + 1),
                            system: s.to_owned(),
                            code: c.to_owned(),
                        }),
                        _ => Err(Code::CLI_USAGE),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, Some(Value::String(text))) => crate::ops::scan_codings_in(text.as_bytes().to_vec(), limits)?,
        _ => return Err(Code::CLI_USAGE),
    };
    Ok(map_codes(&map, &codings))
}

crate::debug_placeholder!(Coding);
#[cfg(test)]
mod tests {
    use super::*;

    const GENDER_V2: &str = "http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2";

    #[test]
    fn bundled_maps_load_and_translate() {
        assert!(bundled_urls().contains(&GENDER_V2));
        assert!(!bundled_urls().iter().any(|u| u.ends_with("/102") || u.ends_with("/103")), "no SNOMED CT maps");
        let m = ConceptMap::bundled(GENDER_V2).expect("bundled");
        let t = m.translate("http://hl7.org/fhir/administrative-gender", "female");
        assert_eq!(t[0].code, "F");
        assert_eq!(t[0].system, "http://terminology.hl7.org/CodeSystem/v2-0001");
        let codings = vec![
            Coding {
                location: "-".into(),
                system: "http://hl7.org/fhir/administrative-gender".into(),
                code: "female".into(),
            },
            Coding {
                location: "record:2".into(),
                system: "http://hl7.org/fhir/administrative-gender".into(),
                code: "nope".into(),
            },
        ];
        let (v, all) = map_codes(&m, &codings);
        assert!(!all);
        assert_eq!(v["mapped"], 1);
        assert_eq!(v["findings"][0]["code"], "CODE_UNMAPPED");
        assert_eq!(v["findings"][0]["location"], "record:2");
    }

    #[test]
    fn user_maps_from_json() {
        let text = br#"{"resourceType":"ConceptMap","url":"http://x/cm","group":[{"source":"http://a","target":"http://b",
            "element":[{"code":"1","target":[{"code":"one","equivalence":"wider"}]},{"code":"2","target":[{"equivalence":"unmatched"}]}]}]}"#;
        let m = ConceptMap::from_json(text).expect("map");
        let codings: Vec<Coding> = codings_from_ndjson(
            b"{\"system\":\"http://a\",\"code\":\"1\"}\n\n{\"system\":\"http://a\",\"code\":\"2\"}\n",
        )
        .expect("ndjson");
        let (v, all) = map_codes(&m, &codings);
        assert!(!all);
        assert_eq!(v["findings"][0]["code"], "CODE_MAPPED_NARROWER");
        assert_eq!(v["findings"][1]["location"], "record:3");
        assert_eq!(ConceptMap::from_json(b"{\"resourceType\":\"Patient\"}").err(), Some(Code::CONCEPTMAP_INVALID));
        assert_eq!(ConceptMap::from_json(b"not json").err(), Some(Code::CONCEPTMAP_INVALID));
    }
}
