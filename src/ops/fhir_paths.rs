//! `paths`: the FHIR selection of the message tools (`Patient.name`,
//! `entry.resource.ofType(Observation).code`, `Observation.value.ofType(Quantity)`).
//!
//! A path is element names joined by `.`, each step optionally `ofType(Type)`: after a
//! resource, it keeps only resources of that type (a Bundle's entries); after a choice element
//! (`value`), it names the choice (`valueQuantity`). A path that starts with a resource type
//! starts at a resource of that type: the record's own resource, or, in a Bundle, every entry's
//! resource of that type (`Patient.name` on a Bundle keeps each Patient entry's name). A path
//! that starts with an element name starts at the record's resource. A choice element named
//! without `ofType` (`value`) keeps whichever choice is present; a primitive's extension
//! sibling (`_birthDate`) goes with it.
//!
//! The paths mark what they reach in the record's model (a union over all paths); the model is
//! then rebuilt from the marks, keeping each kept resource's `resourceType` and `id` and each
//! kept Bundle entry's `fullUrl` for context, and list items in their order. A finding is kept
//! when its location lies on the marks (`Patient.name[0].given[1]` under `Patient.name`);
//! findings on the whole resource are not in the selection.
//!
//! Reads and rebuilds our own JSON; nothing of it reaches a log or an error.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Most paths in one call; most steps in one path.
const MAX_PATHS: usize = 64;
const MAX_STEPS: usize = 24;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Name(String),
    OfType(String),
}

/// Reads `paths`; `None` when a path is not of the grammar above.
pub fn parse(list: &[String]) -> Option<Vec<Vec<Step>>> {
    if list.is_empty() || list.len() > MAX_PATHS {
        return None;
    }
    list.iter().map(|p| parse_one(p)).collect()
}

fn name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphabetic()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn parse_one(p: &str) -> Option<Vec<Step>> {
    if p.is_empty() || p.len() > 512 {
        return None;
    }
    let mut steps = Vec::new();
    for part in p.split('.') {
        if let Some(inner) = part.strip_prefix("ofType(").and_then(|r| r.strip_suffix(')')) {
            if !name(inner) || steps.is_empty() {
                return None;
            }
            steps.push(Step::OfType(inner.to_owned()));
        } else if name(part) {
            steps.push(Step::Name(part.to_owned()));
        } else {
            return None;
        }
    }
    (steps.len() <= MAX_STEPS).then_some(steps)
}

/// A key of the marks: an object's member or a list's item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Member(String),
    Item(usize),
}

/// What of a value is kept: all of it, or some of its members or items.
#[derive(Debug, Default)]
struct Keep {
    all: bool,
    children: BTreeMap<Key, Keep>,
}

impl Keep {
    fn merge(&mut self, other: Keep) {
        self.all |= other.all;
        for (k, v) in other.children {
            self.children.entry(k).or_default().merge(v);
        }
    }

    fn member(&mut self, k: &str) -> &mut Keep {
        self.children.entry(Key::Member(k.to_owned())).or_default()
    }
}

fn starts_with_type(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
}

/// Marks what `steps` reach in `v`; `None` when they reach nothing.
fn mark(v: &Value, steps: &[Step]) -> Option<Keep> {
    let Some((first, rest)) = steps.split_first() else {
        return Some(Keep { all: true, ..Keep::default() });
    };
    match v {
        Value::Array(items) => {
            let mut keep = Keep::default();
            for (i, item) in items.iter().enumerate() {
                if let Some(k) = mark(item, steps) {
                    keep.children.insert(Key::Item(i), k);
                }
            }
            (!keep.children.is_empty()).then_some(keep)
        }
        Value::Object(map) => {
            let mut keep = match first {
                // A resource of that type, or nothing.
                Step::OfType(t) => {
                    return (map.get("resourceType").and_then(Value::as_str) == Some(t.as_str()))
                        .then(|| mark(v, rest))
                        .flatten();
                }
                Step::Name(n) => mark_member(map, n, rest)?,
            };
            if map.contains_key("resourceType") {
                context(map, &mut keep);
            }
            Some(keep)
        }
        _ => None,
    }
}

/// Marks member `n` of an object (or its choices) and what `rest` reaches in it.
fn mark_member(map: &Map<String, Value>, n: &str, rest: &[Step]) -> Option<Keep> {
    let mut keep = Keep::default();
    let mut reached = false;
    let one = |key: &str, rest: &[Step], keep: &mut Keep| {
        if let Some(v) = map.get(key)
            && let Some(k) = mark(v, rest)
        {
            keep.member(key).merge(k);
            if rest.is_empty() && map.contains_key(&format!("_{key}")) {
                keep.member(&format!("_{key}")).all = true;
            }
            return true;
        }
        false
    };
    if map.contains_key(n) {
        reached |= one(n, rest, &mut keep);
    } else if let Some((Step::OfType(t), after)) = rest.split_first() {
        // `value.ofType(Quantity)`: the choice `valueQuantity`.
        reached |= one(&format!("{n}{t}"), after, &mut keep);
    } else {
        // `value`: whichever choice is present.
        let choices: Vec<&String> =
            map.keys().filter(|k| k.len() > n.len() && k.starts_with(n) && starts_with_type(&k[n.len()..])).collect();
        for key in choices {
            reached |= one(key, rest, &mut keep);
        }
    }
    reached.then_some(keep)
}

/// A kept resource keeps its `resourceType` and `id`.
fn context(map: &Map<String, Value>, keep: &mut Keep) {
    for k in ["resourceType", "id"] {
        if map.contains_key(k) {
            keep.member(k).all = true;
        }
    }
}

/// Marks what the paths reach in a record's resource (the model or a converted Bundle).
fn mark_resource(resource: &Value, paths: &[Vec<Step>]) -> Keep {
    let mut keep = Keep::default();
    let Some(map) = resource.as_object() else { return keep };
    let own = map.get("resourceType").and_then(Value::as_str).unwrap_or_default();
    for steps in paths {
        match steps.first() {
            Some(Step::Name(t)) if starts_with_type(t) && t == own => {
                if let Some(k) = mark(resource, &steps[1..]) {
                    keep.merge(k);
                }
            }
            Some(Step::Name(t)) if starts_with_type(t) => {
                // Another type: the entries of a Bundle that hold one.
                let Some(Value::Array(entries)) = map.get("entry") else { continue };
                for (i, e) in entries.iter().enumerate() {
                    let Some(r) = e.get("resource") else { continue };
                    if r.get("resourceType").and_then(Value::as_str) != Some(t.as_str()) {
                        continue;
                    }
                    let Some(k) = mark(r, &steps[1..]) else { continue };
                    let entry = keep.member("entry").children.entry(Key::Item(i)).or_default();
                    entry.member("resource").merge(k);
                    if e.get("fullUrl").is_some() {
                        entry.member("fullUrl").all = true;
                    }
                }
            }
            _ => {
                if let Some(k) = mark(resource, steps) {
                    keep.merge(k);
                }
            }
        }
    }
    // A kept Bundle entry keeps its fullUrl.
    if let (Some(Value::Array(entries)), Some(kept)) =
        (map.get("entry"), keep.children.get_mut(&Key::Member("entry".to_owned())))
    {
        for (k, e) in kept.children.iter_mut() {
            if let Key::Item(i) = k
                && entries.get(*i).is_some_and(|e| e.get("fullUrl").is_some())
                && !e.all
            {
                e.member("fullUrl").all = true;
            }
        }
    }
    context(map, &mut keep);
    keep
}

/// The kept part of `v`.
fn sweep(v: &Value, keep: &Keep) -> Value {
    if keep.all {
        return v.clone();
    }
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, x)| keep.children.get(&Key::Member(k.clone())).map(|c| (k.clone(), sweep(x, c))))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .filter_map(|(i, x)| keep.children.get(&Key::Item(i)).map(|c| sweep(x, c)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether a FHIR location (`Bundle.entry[2].resource.name[0]`, `Patient.name/offset:9`) lies
/// on the marks, below the resource itself.
fn on_marks(location: &str, keep: &Keep) -> bool {
    let path = location.split('/').next().unwrap_or_default();
    let mut steps = path.split('.');
    // The resource type the location starts from.
    if steps.next().is_none_or(|t| !starts_with_type(t)) {
        return false;
    }
    let mut node = keep;
    let mut walked = false;
    for step in steps {
        let (n, index) = match step.split_once('[') {
            Some((n, i)) => (n, i.strip_suffix(']').and_then(|i| i.parse::<usize>().ok())),
            None => (step, None),
        };
        let Some(next) = node.children.get(&Key::Member(n.to_owned())) else { return false };
        node = next;
        walked = true;
        if node.all {
            return true;
        }
        if let Some(i) = index {
            let Some(next) = node.children.get(&Key::Item(i)) else { return false };
            node = next;
            if node.all {
                return true;
            }
        }
    }
    walked
}

/// Applies the paths to one record: its model (or converted Bundle) and its findings. Returns
/// whether the record holds a FHIR resource.
pub fn select(record: &mut Value, paths: &[Vec<Step>]) -> bool {
    let mut applied = false;
    let mut marks: Vec<Keep> = Vec::new();
    for key in ["model", "bundle"] {
        let Some(resource) = record.get(key).filter(|r| r.get("resourceType").is_some()) else { continue };
        applied = true;
        let keep = mark_resource(resource, paths);
        let kept = sweep(resource, &keep);
        record[key] = kept;
        marks.push(keep);
    }
    if !applied {
        return false;
    }
    for key in ["findings", "warnings"] {
        if let Some(Value::Array(list)) = record.get_mut(key) {
            list.retain(|f| {
                f.get("location").and_then(Value::as_str).is_some_and(|loc| marks.iter().any(|k| on_marks(loc, k)))
            });
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(list: &[&str]) -> Vec<Vec<Step>> {
        parse(&list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).expect("in the test data")
    }

    #[test]
    fn the_grammar_takes_names_and_of_type() {
        assert!(parse(&["Patient.name".to_owned(), "entry.resource.ofType(Observation).code".to_owned()]).is_some());
        for bad in
            ["", "Patient..name", "ofType(Patient)", "Patient.name[0]", "Patient.where(x)", "a b", "Patient.ofType()"]
        {
            assert!(parse(&[bad.to_owned()]).is_none(), "{bad}");
        }
        assert!(parse(&[]).is_none());
    }

    #[test]
    fn a_resource_keeps_the_named_elements_with_its_type_and_id() {
        let mut record = json!({"format": "fhir", "model": {
            "resourceType": "Patient", "id": "p1", "gender": "female", "birthDate": "1970",
            "_birthDate": {"extension": []},
            "name": [{"family": "Doe", "given": ["Jo", "Al"]}, {"family": "Roe"}],
            "telecom": [{"value": "555"}]
        }, "findings": [
            {"code": "A", "location": "Patient.name[0].given[1]", "severity": "error"},
            {"code": "B", "location": "Patient.telecom[0]", "severity": "error"},
            {"code": "C", "location": "Patient/invariant:dom-6", "severity": "warning"},
            {"code": "D", "location": "Patient.birthDate", "severity": "warning"}
        ]});
        assert!(select(&mut record, &paths(&["Patient.name.given", "birthDate"])));
        assert_eq!(
            record["model"],
            json!({"resourceType": "Patient", "id": "p1", "birthDate": "1970", "_birthDate": {"extension": []},
                   "name": [{"given": ["Jo", "Al"]}]})
        );
        let codes: Vec<&str> =
            record["findings"].as_array().expect("list").iter().filter_map(|f| f["code"].as_str()).collect();
        assert_eq!(codes, ["A", "D"]);
    }

    #[test]
    fn a_bundle_keeps_the_entries_of_the_type_named() {
        let mut record = json!({"format": "fhir", "model": {"resourceType": "Bundle", "type": "collection", "entry": [
            {"fullUrl": "urn:a", "resource": {"resourceType": "Patient", "id": "a", "name": [{"family": "Doe"}], "gender": "male"}},
            {"fullUrl": "urn:b", "resource": {"resourceType": "Observation", "id": "b", "status": "final",
                "code": {"text": "t"}, "valueQuantity": {"value": 1}}},
            {"fullUrl": "urn:c", "resource": {"resourceType": "Observation", "id": "c", "status": "final",
                "valueString": "x"}}
        ]}, "findings": [
            {"code": "A", "location": "Bundle.entry[1].resource.valueQuantity.value", "severity": "error"},
            {"code": "B", "location": "Bundle.entry[0].resource.gender", "severity": "error"},
            {"code": "C", "location": "Bundle.entry[0].resource.name[0].family", "severity": "error"}
        ]});
        let p = paths(&["Patient.name", "entry.resource.ofType(Observation).value.ofType(Quantity)"]);
        assert!(select(&mut record, &p));
        assert_eq!(
            record["model"],
            json!({"resourceType": "Bundle", "entry": [
                {"fullUrl": "urn:a", "resource": {"resourceType": "Patient", "id": "a", "name": [{"family": "Doe"}]}},
                {"fullUrl": "urn:b", "resource": {"resourceType": "Observation", "id": "b", "valueQuantity": {"value": 1}}}
            ]})
        );
        let codes: Vec<&str> =
            record["findings"].as_array().expect("list").iter().filter_map(|f| f["code"].as_str()).collect();
        assert_eq!(codes, ["A", "C"]);
    }

    #[test]
    fn a_choice_without_of_type_keeps_the_one_present() {
        let mut record = json!({"model": {"resourceType": "Observation", "valueString": "x", "status": "final"}});
        assert!(select(&mut record, &paths(&["Observation.value"])));
        assert_eq!(record["model"], json!({"resourceType": "Observation", "valueString": "x"}));
    }

    #[test]
    fn a_record_without_a_resource_is_not_selected() {
        let mut record = json!({"format": "hl7", "model": {"segments": []}});
        assert!(!select(&mut record, &paths(&["Patient.name"])));
        assert_eq!(record["model"], json!({"segments": []}));
    }
}
