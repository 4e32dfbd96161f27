//! Shape: what of a tool's data goes into one reply, so that a reply fits an agent's context.
//!
//! Applied to a tool's data after the operation ran (and after the policy redacted it), in this
//! order:
//!
//! 1. **Selection**: `segments` (HL7 v2 segment ids) and `fields` (`PID-5`) keep the named
//!    segments of a parsed model, blank the unnamed fields of those segments (positional model:
//!    an empty field, so positions keep their meaning; named model: the field's key is left
//!    out, its position is in the keys of the others), and keep the findings located in them; `resource_types`
//!    keeps the Bundle entries and NDJSON records of those FHIR types; `paths` (FHIR:
//!    `Patient.name`, `entry.resource.ofType(Observation).code`, see [`super::fhir_paths`]) keeps
//!    the elements they reach in a parsed resource or converted Bundle and the findings located
//!    in them. A selection that applies
//!    to nothing in the data is a usage error naming the argument: an agent is never handed the
//!    whole when it asked for a part.
//! 2. **Findings**: `min_severity` and `max_findings` (per record) cut the `findings` and
//!    `warnings` lists; the reply's `findings` says how many there were by severity and how many
//!    are returned.
//! 3. **Size**: when the data is larger than `max_bytes` (default [`DEFAULT_MAX_BYTES`]; 0 means
//!    no limit), its largest list is paged: the reply says `truncated`, the `page` it holds
//!    (`{items, start, returned, total}`) and the `cursor` that continues it. The list is the
//!    records of a multi-record input; inside one record, its largest list (`model.segments`,
//!    `model.entry`, `bundle.entry`, `findings`...); `redact`'s `content` is cut at a line end.
//!    A record too large for a page alone is paged inside, and the cursor says where
//!    (`records:4/model.segments:120`).
//! 4. **Delivery**: `deliver` (`inline`, the default; `resource`; `link`) says where an MCP
//!    reply puts its data: in the reply, paged as above, or whole (selection and findings
//!    filters applied, no paging) in a resource of the server's result store, embedded in the
//!    result or linked from it (`resource_link`) to be read with `resources/read`
//!    (`mcp::results`). `max_bytes` and `cursor` do not apply to a resource: giving one with it
//!    is a usage error naming it. Only the MCP server reads it: a json-lines record carries its
//!    content and format only, and the CLI has no flag for it.
//!
//! Everything here reads and moves our own JSON: no text of it reaches a log or an error.

use serde_json::{Map, Value};

/// The default `max_bytes`: the data of a reply, about 3,500 tokens; the reply carries it twice
/// (text and structured content), so a default reply stays under 32 KB.
pub const DEFAULT_MAX_BYTES: usize = 14_000;

/// The largest `max_bytes` an agent may ask for short of 0 (no limit).
const MAX_BYTES_CEILING: u64 = 64 * 1024 * 1024;

/// How deep a cursor may go (records, then a list inside a record, then one more).
const MAX_CURSOR_LEVELS: usize = 3;

/// The MIME type of the data delivered as a resource (the reply's `data`, as JSON).
pub const RESOURCE_MIME: &str = "application/json";

/// Where a reply's data goes (`deliver`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Deliver {
    /// In the reply's `data`, paged by `max_bytes`.
    #[default]
    Inline,
    /// Whole, in a resource embedded in the result.
    Resource,
    /// Whole, in a resource the result links to.
    Link,
}

impl Deliver {
    /// The argument's values, as the input schemas list them.
    pub const NAMES: [&'static str; 3] = ["inline", "resource", "link"];

    fn from_name(name: &str) -> Option<Deliver> {
        match name {
            "inline" => Some(Deliver::Inline),
            "resource" => Some(Deliver::Resource),
            "link" => Some(Deliver::Link),
            _ => None,
        }
    }
}

/// The shape arguments of one call.
#[derive(Debug, Default, Clone)]
pub struct Controls {
    /// Where the data goes.
    pub deliver: Deliver,
    /// 0: no limit.
    pub max_bytes: usize,
    /// Where to continue: `(list path, index)` per level.
    cursor: Vec<(String, usize)>,
    min_severity: Option<u8>,
    max_findings: Option<usize>,
    segments: Option<Vec<String>>,
    /// `(segment id, field number)`.
    fields: Option<Vec<(String, usize)>>,
    resource_types: Option<Vec<String>>,
    /// FHIR paths ([`super::fhir_paths`]).
    paths: Option<Vec<Vec<super::fhir_paths::Step>>>,
}

/// What the shaping did, for the reply envelope.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Shaped {
    /// The page returned, when the data was paged.
    pub page: Option<Page>,
    /// Findings counts, when a findings control was given.
    pub findings: Option<FindingTotals>,
    /// Where the data goes (`deliver`, an MCP argument: a json-lines record cannot carry it):
    /// the MCP server moves the data of `resource` and `link` replies to a resource.
    pub deliver: Deliver,
    /// Set by the MCP server once it delivered the data as a resource: its URI and length in
    /// bytes.
    pub resource: Option<(String, usize)>,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The list's path in the data (`records`, `records[4].model.segments`, `content`).
    pub items: String,
    pub start: usize,
    pub returned: usize,
    pub total: usize,
    /// Where the next call continues; `None` when this page ends the data.
    pub cursor: Option<String>,
}

/// Findings before and after `min_severity` / `max_findings`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FindingTotals {
    pub total: usize,
    pub returned: usize,
    pub fatal: usize,
    pub error: usize,
    pub warning: usize,
    pub information: usize,
}

fn severity_rank(name: &str) -> Option<u8> {
    match name {
        "information" => Some(0),
        "warning" => Some(1),
        "error" => Some(2),
        "fatal" => Some(3),
        _ => None,
    }
}

/// A segment id: three upper-case letters or digits, the first a letter (`PID`, `ZPD`, `OBX`).
fn segment_id(s: &str) -> bool {
    s.len() == 3
        && s.as_bytes()[0].is_ascii_uppercase()
        && s.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

impl Controls {
    /// The names of the arguments this module reads, as the input schemas declare them.
    pub const ARGUMENTS: [&'static str; 9] = [
        "max_bytes",
        "cursor",
        "min_severity",
        "max_findings",
        "segments",
        "fields",
        "resource_types",
        "paths",
        "deliver",
    ];

    /// Reads (and removes) the shape arguments; `Err` names the argument at fault.
    pub fn read(args: &mut Map<String, Value>) -> Result<Controls, &'static str> {
        let mut c = Controls { max_bytes: DEFAULT_MAX_BYTES, ..Controls::default() };
        let mut explicit_max_bytes = false;
        match args.remove("max_bytes") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64() {
                Some(n) if n <= MAX_BYTES_CEILING => {
                    c.max_bytes = n as usize;
                    explicit_max_bytes = true;
                }
                _ => return Err("max_bytes"),
            },
        }
        match args.remove("cursor") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => c.cursor = parse_cursor(&s).ok_or("cursor")?,
            Some(_) => return Err("cursor"),
        }
        match args.remove("min_severity") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => c.min_severity = Some(severity_rank(&s).ok_or("min_severity")?),
            Some(_) => return Err("min_severity"),
        }
        match args.remove("max_findings") {
            None | Some(Value::Null) => {}
            Some(v) => c.max_findings = Some(v.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or("max_findings")?),
        }
        c.segments = string_list(args.remove("segments"), "segments")?;
        if let Some(list) = &c.segments
            && !list.iter().all(|s| segment_id(s))
        {
            return Err("segments");
        }
        if let Some(list) = string_list(args.remove("fields"), "fields")? {
            let mut fields = Vec::with_capacity(list.len());
            for f in &list {
                let (seg, n) = f.split_once('-').ok_or("fields")?;
                let n: usize = n.parse().map_err(|_| "fields")?;
                if !segment_id(seg) || n == 0 || n > 999 {
                    return Err("fields");
                }
                fields.push((seg.to_owned(), n));
            }
            c.fields = Some(fields);
        }
        c.resource_types = string_list(args.remove("resource_types"), "resource_types")?;
        if let Some(list) = &c.resource_types
            && !list.iter().all(|t| !t.is_empty() && t.len() <= 64 && t.bytes().all(|b| b.is_ascii_alphabetic()))
        {
            return Err("resource_types");
        }
        if let Some(list) = string_list(args.remove("paths"), "paths")? {
            c.paths = Some(super::fhir_paths::parse(&list).ok_or("paths")?);
        }
        match args.remove("deliver") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => c.deliver = Deliver::from_name(&s).ok_or("deliver")?,
            Some(_) => return Err("deliver"),
        }
        if c.deliver != Deliver::Inline {
            // The resource holds the whole: nothing to page.
            if explicit_max_bytes {
                return Err("max_bytes");
            }
            if !c.cursor.is_empty() {
                return Err("cursor");
            }
            c.max_bytes = 0;
        }
        Ok(c)
    }

    /// No control but the default size limit was given.
    fn selects(&self) -> bool {
        self.segments.is_some() || self.fields.is_some() || self.resource_types.is_some() || self.paths.is_some()
    }

    /// Shapes `data` in place; `Err` names the argument that does not apply to it.
    pub fn apply(&self, data: &mut Value) -> Result<Shaped, &'static str> {
        let mut shaped = Shaped { deliver: self.deliver, ..Shaped::default() };
        if self.selects() {
            self.select(data)?;
        }
        if self.min_severity.is_some() || self.max_findings.is_some() {
            let mut totals = FindingTotals::default();
            self.filter_findings(data, &mut totals);
            shaped.findings = Some(totals);
        }
        if self.max_bytes > 0 || !self.cursor.is_empty() {
            let budget = if self.max_bytes == 0 { usize::MAX } else { self.max_bytes };
            if !self.cursor.is_empty() || size(data) > budget {
                shaped.page = match page(data, budget, &self.cursor, "") {
                    Ok(p) => Some(p),
                    // Nothing to page: the data goes whole.
                    Err("max_bytes") if self.cursor.is_empty() => None,
                    Err(e) => return Err(e),
                };
            }
        }
        Ok(shaped)
    }

    /// Selection and findings filters on one record's object, without paging (the CLI's
    /// `parse`/`convert` flags, record by record). `Ok(false)`: the record is not selected (an
    /// NDJSON resource of another type than `resource_types`); a failed record passes as it is.
    pub fn apply_record(&self, record: &mut Value) -> Result<bool, &'static str> {
        if record.get("error").is_some() {
            return Ok(true);
        }
        if let Some(types) = &self.resource_types
            && let Some(t) = record.pointer("/model/resourceType").and_then(Value::as_str)
            && t != "Bundle"
            && !types.iter().any(|x| x == t)
        {
            return Ok(false);
        }
        // A single resource of a type asked for: `resource_types` has nothing more to select.
        let single = record.pointer("/model/resourceType").and_then(Value::as_str).is_some_and(|t| t != "Bundle");
        let rest;
        let controls = if single && self.resource_types.is_some() {
            rest = Controls { resource_types: None, ..self.clone() };
            &rest
        } else {
            self
        };
        if controls.selects() {
            controls.select(record)?;
        }
        if self.min_severity.is_some() || self.max_findings.is_some() {
            self.filter_findings(record, &mut FindingTotals::default());
        }
        Ok(true)
    }

    // ----- selection -----------------------------------------------------------------------

    fn select(&self, data: &mut Value) -> Result<(), &'static str> {
        let mut applied_segments = false;
        let mut applied_types = false;
        for record in records_mut(data) {
            if self.segments.is_some() || self.fields.is_some() {
                applied_segments |= self.select_segments(record);
            }
            if self.resource_types.is_some() {
                applied_types |= self.select_resources(record);
            }
        }
        if let Some(types) = &self.resource_types
            && let Some(Value::Array(records)) = data.get_mut("records")
        {
            // NDJSON: a record whose model is a resource of another type is left out.
            let before = records.len();
            records.retain(|r| match r.pointer("/model/resourceType").and_then(Value::as_str) {
                Some(t) if r.pointer("/model/entry").is_none() => types.iter().any(|x| x == t),
                _ => true,
            });
            applied_types |= records.len() != before
                || records.iter().any(|r| r.pointer("/model/resourceType").is_some() || r.get("bundle").is_some());
        }
        if (self.segments.is_some() || self.fields.is_some()) && !applied_segments {
            return Err(if self.fields.is_some() && self.segments.is_none() { "fields" } else { "segments" });
        }
        if self.resource_types.is_some() && !applied_types {
            return Err("resource_types");
        }
        if let Some(paths) = &self.paths {
            let mut applied = false;
            for record in records_mut(data) {
                applied |= super::fhir_paths::select(record, paths);
            }
            if !applied {
                return Err("paths");
            }
        }
        Ok(())
    }

    /// The segment ids kept: `segments`, plus the segments `fields` names.
    fn kept_segment(&self, id: &str) -> bool {
        self.segments.as_ref().is_some_and(|s| s.iter().any(|x| x == id))
            || self.fields.as_ref().is_some_and(|f| f.iter().any(|(s, _)| s == id))
    }

    /// Whether field `n` of segment `id` is kept (all fields of a segment named in `segments`
    /// and in no `fields` entry).
    fn kept_field(&self, id: &str, n: usize) -> bool {
        match &self.fields {
            Some(fields) if fields.iter().any(|(s, _)| s == id) => fields.iter().any(|(s, k)| s == id && *k == n),
            _ => true,
        }
    }

    /// Segment selection on one record: the model's segments and the findings' locations.
    /// Returns whether the record has a segment model or segment-located findings.
    fn select_segments(&self, record: &mut Value) -> bool {
        let mut applied = false;
        if let Some(Value::Array(segments)) = record.pointer_mut("/model/segments") {
            applied = true;
            segments.retain(|s| s.get("id").and_then(Value::as_str).is_some_and(|id| self.kept_segment(id)));
            for seg in segments.iter_mut() {
                let id = seg.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                match seg.get_mut("fields") {
                    Some(Value::Array(fields)) => {
                        for (i, f) in fields.iter_mut().enumerate() {
                            if !self.kept_field(&id, i + 1) {
                                *f = Value::Array(Vec::new());
                            }
                        }
                    }
                    // The named model: keys `"<position> <name>"` (our tables' names); the
                    // fields not asked for are left out.
                    Some(Value::Object(fields)) => fields.retain(|k, _| {
                        let position = k.split(' ').next().and_then(|n| n.parse::<usize>().ok());
                        position.is_some_and(|n| self.kept_field(&id, n))
                    }),
                    _ => {}
                }
            }
        }
        for key in ["findings", "warnings"] {
            if let Some(Value::Array(list)) = record.get_mut(key) {
                list.retain(|f| {
                    let Some(loc) = f.get("location").and_then(Value::as_str) else { return false };
                    match hl7_location(loc) {
                        Some((seg, field)) => {
                            applied = true;
                            self.kept_segment(seg) && field.is_none_or(|n| self.kept_field(seg, n))
                        }
                        // A finding of the whole message (`-`) or another grammar: not in the
                        // selection.
                        None => false,
                    }
                });
            }
        }
        applied
    }

    /// Resource selection on one record: Bundle entries of a parsed Bundle or of a conversion.
    fn select_resources(&self, record: &mut Value) -> bool {
        let Some(types) = &self.resource_types else { return false };
        let mut applied = false;
        for pointer in ["/model/entry", "/bundle/entry"] {
            if let Some(Value::Array(entries)) = record.pointer_mut(pointer) {
                applied = true;
                entries.retain(|e| {
                    e.pointer("/resource/resourceType")
                        .and_then(Value::as_str)
                        .is_some_and(|t| types.iter().any(|x| x == t))
                });
            }
        }
        applied
    }

    // ----- findings ------------------------------------------------------------------------

    fn filter_findings(&self, data: &mut Value, totals: &mut FindingTotals) {
        let min = self.min_severity.unwrap_or(0);
        for record in records_mut(data) {
            for key in ["findings", "warnings"] {
                let Some(Value::Array(list)) = record.get_mut(key) else { continue };
                for f in list.iter() {
                    totals.total += 1;
                    match f.get("severity").and_then(Value::as_str) {
                        Some("fatal") => totals.fatal += 1,
                        Some("error") => totals.error += 1,
                        Some("warning") => totals.warning += 1,
                        _ => totals.information += 1,
                    }
                }
                list.retain(|f| f.get("severity").and_then(Value::as_str).and_then(severity_rank).unwrap_or(0) >= min);
                if let Some(max) = self.max_findings {
                    // The most severe first, then in their order: a cap keeps the errors.
                    let mut ranked: Vec<(usize, Value)> = std::mem::take(list).into_iter().enumerate().collect();
                    ranked.sort_by_key(|(i, f)| {
                        let rank = f.get("severity").and_then(Value::as_str).and_then(severity_rank).unwrap_or(0);
                        (std::cmp::Reverse(rank), *i)
                    });
                    ranked.truncate(max);
                    ranked.sort_by_key(|(i, _)| *i);
                    *list = ranked.into_iter().map(|(_, f)| f).collect();
                }
                totals.returned += list.len();
            }
        }
    }
}

/// The record objects of a tool's data: each of `records`, or the data itself.
fn records_mut(data: &mut Value) -> Vec<&mut Value> {
    if data.get("records").is_some_and(Value::is_array) {
        match data.get_mut("records") {
            Some(Value::Array(list)) => list.iter_mut().collect(),
            _ => Vec::new(),
        }
    } else {
        vec![data]
    }
}

/// `PID[1]-5[2].1` → `("PID", Some(5))`; `PID[2]` → `("PID", None)`; anything else `None`.
fn hl7_location(loc: &str) -> Option<(&str, Option<usize>)> {
    let seg = loc.get(..3).filter(|s| segment_id(s))?;
    let mut rest = &loc[3..];
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']')?;
        rest = &r[close + 1..];
    }
    if rest.is_empty() {
        return Some((seg, None));
    }
    let r = rest.strip_prefix('-')?;
    let digits = r.bytes().take_while(u8::is_ascii_digit).count();
    let n = r[..digits].parse().ok()?;
    Some((seg, Some(n)))
}

fn string_list(v: Option<Value>, name: &'static str) -> Result<Option<Vec<String>>, &'static str> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= 1000 => items
            .into_iter()
            .map(|i| match i {
                Value::String(s) => Ok(s),
                _ => Err(name),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(name),
    }
}

// ----- paging ------------------------------------------------------------------------------

/// `records:4/model.segments:120` → `[("records", 4), ("model.segments", 120)]`.
fn parse_cursor(s: &str) -> Option<Vec<(String, usize)>> {
    if s.is_empty() || s.len() > 256 {
        return None;
    }
    let mut out = Vec::new();
    for level in s.split('/') {
        let (path, index) = level.rsplit_once(':')?;
        if path != "records" && !PAGEABLE.contains(&path) {
            return None;
        }
        out.push((path.to_owned(), index.parse().ok()?));
    }
    (out.len() <= MAX_CURSOR_LEVELS).then_some(out)
}

/// A cursor as this module writes it (for the fuzz oracle's grammar check).
pub fn is_cursor(s: &str) -> bool {
    parse_cursor(s).is_some()
}

/// A page's `items` as this module writes it: `records`, a [`PAGEABLE`] path, or those joined
/// with an index (`records[4].model.segments`).
pub fn is_items_path(s: &str) -> bool {
    let mut rest = s;
    loop {
        let (head, tail) = match rest.split_once('[') {
            Some((h, t)) => (h, Some(t)),
            None => (rest, None),
        };
        let head = head.strip_prefix('.').unwrap_or(head);
        if head != "records" && !PAGEABLE.contains(&head) {
            return false;
        }
        let Some(t) = tail else { return true };
        let Some((digits, after)) = t.split_once(']') else { return false };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || after.is_empty() {
            return false;
        }
        rest = after;
    }
}

fn format_cursor(levels: &[(String, usize)]) -> String {
    levels.iter().map(|(p, i)| format!("{p}:{i}")).collect::<Vec<_>>().join("/")
}

/// The serialized size of a value.
fn size(v: &Value) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |b| b.len())
}

/// The lists a reply may be paged on, by their path in a record: our own model's keys only, so
/// that a page's `items` and a cursor never carry a key read from the input (a FHIR resource's
/// unknown element, a DICOM tag).
const PAGEABLE: [&str; 8] = [
    "model.segments",
    "model.entry",
    "model.records",
    "bundle.entry",
    "findings",
    "warnings",
    "content",
    "content_base64",
];

/// The list to page in `v`: `records`, else the largest of [`PAGEABLE`] it has.
fn pageable(v: &Value) -> Option<&'static str> {
    let obj = v.as_object()?;
    if obj.get("records").is_some_and(Value::is_array) {
        return Some("records");
    }
    let mut best: Option<(usize, &'static str)> = None;
    for path in PAGEABLE {
        let Some(item) = path.split('.').try_fold(v, |cur, k| cur.get(k)) else { continue };
        let text = path.starts_with("content");
        if (text && item.is_string()) || (!text && item.is_array()) {
            let n = size(item);
            if best.is_none_or(|(b, _)| n > b) {
                best = Some((n, path));
            }
        }
    }
    best.map(|(_, p)| p)
}

fn member_mut<'a>(v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    path.split('.').try_fold(v, |cur, k| cur.get_mut(k))
}

/// Pages `v` to `budget` bytes from `cursor`; `prefix` is `v`'s path in the data.
fn page(v: &mut Value, budget: usize, cursor: &[(String, usize)], prefix: &str) -> Result<Page, &'static str> {
    let path = pageable(v).ok_or("max_bytes")?;
    if cursor.first().is_some_and(|(p, _)| p != path) {
        return Err("cursor");
    }
    let start = cursor.first().map_or(0, |(_, i)| *i);
    let items_path = if prefix.is_empty() { path.to_owned() } else { format!("{prefix}.{path}") };
    let list = member_mut(v, path).ok_or("cursor")?;
    let taken = std::mem::take(list);
    let overhead = size(v);
    let avail = budget.saturating_sub(overhead);
    let list = member_mut(v, path).ok_or("cursor")?;
    match taken {
        Value::String(text) => {
            if start > text.len() || !text.is_char_boundary(start) {
                return Err("cursor");
            }
            let end = cut_text(&text, start, avail.saturating_sub(2), path.ends_with("base64"));
            *list = Value::String(text[start..end].to_owned());
            let total = text.len();
            let cursor = (end < total).then(|| format_cursor(&[(path.to_owned(), end)]));
            Ok(Page { items: items_path, start, returned: end - start, total, cursor })
        }
        Value::Array(items) => {
            let total = items.len();
            if start > total || (start == total && total > 0) {
                return Err("cursor");
            }
            let mut used = 2usize; // the brackets
            let mut end = start;
            if cursor.len() < 2 {
                while end < total {
                    let n = size(&items[end]) + usize::from(end > start);
                    if used + n > avail {
                        break;
                    }
                    used += n;
                    end += 1;
                }
            }
            if end > start || start == total {
                let cursor = (end < total).then(|| format_cursor(&[(path.to_owned(), end)]));
                *list = Value::Array(items.into_iter().skip(start).take(end - start).collect());
                return Ok(Page { items: items_path, start, returned: end - start, total, cursor });
            }
            // The item at `start` alone is over the budget (or the cursor is inside it): page
            // inside it.
            if cursor.len() >= MAX_CURSOR_LEVELS {
                return Err("cursor");
            }
            let mut item = items.into_iter().nth(start).ok_or("cursor")?;
            let inner_prefix = format!("{items_path}[{start}]");
            let inner_budget = avail.saturating_sub(2);
            let inner = match page(&mut item, inner_budget, cursor.get(1..).unwrap_or_default(), &inner_prefix) {
                Ok(p) => p,
                // Nothing to page inside: the item goes whole, over the budget.
                Err("max_bytes") if cursor.len() < 2 => {
                    *list = Value::Array(vec![item]);
                    let cursor = (start + 1 < total).then(|| format_cursor(&[(path.to_owned(), start + 1)]));
                    return Ok(Page { items: items_path, start, returned: 1, total, cursor });
                }
                Err(e) => return Err(e),
            };
            *list = Value::Array(vec![item]);
            let cursor = match inner.cursor {
                Some(rest) => Some(format!("{}/{rest}", format_cursor(&[(path.to_owned(), start)]))),
                None => (start + 1 < total).then(|| format_cursor(&[(path.to_owned(), start + 1)])),
            };
            Ok(Page { cursor, ..inner })
        }
        other => {
            *list = other;
            Err("max_bytes")
        }
    }
}

/// The end of the page of `text` from `start` within `avail` JSON bytes: at the last line end
/// (CR or LF) that fits, else at a character boundary (a multiple of 4 for base64); at least one
/// character, so that paging always moves on.
fn cut_text(text: &str, start: usize, avail: usize, base64: bool) -> usize {
    let mut used = 0usize;
    let mut last_line_end = None;
    let mut end = start;
    for (i, ch) in text[start..].char_indices() {
        let cost = match ch {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if used + cost > avail && end > start {
            break;
        }
        used += cost;
        end = start + i + ch.len_utf8();
        if ch == '\r' || ch == '\n' {
            last_line_end = Some(end);
        }
    }
    if end == text.len() {
        return end;
    }
    if base64 {
        let n = (end - start) / 4 * 4;
        return if n == 0 { (start + 4).min(text.len()) } else { start + n };
    }
    last_line_end.unwrap_or(end)
}

impl Page {
    /// The reply's `page` object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("items".to_owned(), Value::from(self.items.clone()));
        m.insert("start".to_owned(), Value::from(self.start));
        m.insert("returned".to_owned(), Value::from(self.returned));
        m.insert("total".to_owned(), Value::from(self.total));
        Value::Object(m)
    }
}

impl FindingTotals {
    /// The reply's `findings` object.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("total".to_owned(), Value::from(self.total));
        m.insert("returned".to_owned(), Value::from(self.returned));
        for (name, n) in
            [("fatal", self.fatal), ("error", self.error), ("warning", self.warning), ("information", self.information)]
        {
            m.insert(name.to_owned(), Value::from(n));
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn controls(args: Value) -> Controls {
        let Value::Object(mut m) = args else { panic!("not an object") };
        Controls::read(&mut m).expect("valid controls")
    }

    fn records(n: usize) -> Value {
        let list: Vec<Value> =
            (0..n).map(|i| json!({"record": i + 1, "format": "hl7", "pad": "x".repeat(90)})).collect();
        json!({ "records": list })
    }

    #[test]
    fn pages_records_and_continues_to_the_end_without_loss_or_repeat() {
        let full = records(50);
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let mut args = json!({"max_bytes": 1000});
            if let Some(c) = &cursor {
                args["cursor"] = Value::from(c.clone());
            }
            let mut data = full.clone();
            let shaped = controls(args).apply(&mut data).expect("in the test data");
            assert!(size(&data) <= 1000, "page over budget: {}", size(&data));
            let page = shaped.page.expect("paged");
            assert_eq!(page.total, 50);
            for r in data["records"].as_array().expect("in the test data") {
                seen.push(r["record"].as_u64().expect("in the test data"));
            }
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, (1..=50).collect::<Vec<u64>>());
    }

    #[test]
    fn small_data_is_left_whole_and_zero_means_no_limit() {
        let mut data = records(3);
        let shaped = controls(json!({})).apply(&mut data).expect("in the test data");
        assert_eq!(shaped, Shaped::default());
        let mut big = records(500);
        let shaped = controls(json!({"max_bytes": 0})).apply(&mut big).expect("in the test data");
        assert!(shaped.page.is_none());
        assert_eq!(big["records"].as_array().expect("in the test data").len(), 500);
    }

    #[test]
    fn one_record_too_large_is_paged_inside() {
        let segments: Vec<Value> =
            (0..200).map(|i| json!({"id": "OBX", "fields": [[i.to_string()], ["y".repeat(100)]]})).collect();
        let full = json!({"records": [
            {"record": 1, "model": {"segments": [{"id": "MSH", "fields": []}]}},
            {"record": 2, "model": {"segments": segments}},
            {"record": 3, "model": {"segments": []}},
        ]});
        let mut count = 0;
        let mut cursor: Option<String> = None;
        let mut records_seen = Vec::new();
        for _ in 0..100 {
            let mut args = json!({"max_bytes": 3000});
            if let Some(c) = &cursor {
                args["cursor"] = Value::from(c.clone());
            }
            let mut data = full.clone();
            let page = controls(args).apply(&mut data).expect("in the test data").page.expect("in the test data");
            for r in data["records"].as_array().expect("in the test data") {
                records_seen.push(r["record"].as_u64().expect("in the test data"));
                if r["record"] == 2 {
                    count += r["model"]["segments"].as_array().expect("in the test data").len();
                }
            }
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(count, 200, "every segment of the large record once");
        records_seen.dedup();
        assert_eq!(records_seen, vec![1, 2, 3]);
    }

    #[test]
    fn text_is_cut_at_line_ends() {
        let content: String = (0..300).map(|i| format!("OBX|{i}|ST|||value {i}\r")).collect();
        let full = json!({"policy": "safe-harbor", "content": content});
        let mut out = String::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let mut args = json!({"max_bytes": 1500});
            if let Some(c) = &cursor {
                args["cursor"] = Value::from(c.clone());
            }
            let mut data = full.clone();
            let page = controls(args).apply(&mut data).expect("in the test data").page.expect("in the test data");
            let part = data["content"].as_str().expect("in the test data");
            assert!(part.ends_with('\r'), "cut inside a line");
            out.push_str(part);
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(out, content);
    }

    #[test]
    fn selection_keeps_what_was_named_and_blanks_other_fields() {
        let mut data = json!({"format": "hl7", "model": {"segments": [
            {"id": "MSH", "fields": [["|"], ["^~\\&"]]},
            {"id": "PID", "fields": [["1"], [], [["X"]], [], [["Doe", "Jo"]], [], ["19990101"]]},
            {"id": "OBX", "fields": [["1"], ["ST"]]},
        ]}, "warnings": [
            {"code": "A", "location": "PID[1]-5", "severity": "warning"},
            {"code": "B", "location": "PID[1]-7", "severity": "warning"},
            {"code": "C", "location": "MSH[1]-9", "severity": "error"},
            {"code": "D", "location": "-", "severity": "information"},
        ]});
        controls(json!({"fields": ["PID-5"], "max_bytes": 0})).apply(&mut data).expect("in the test data");
        let segs = data["model"]["segments"].as_array().expect("in the test data");
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0]["fields"], json!([[], [], [], [], [["Doe", "Jo"]], [], []]));
        let codes: Vec<&str> = data["warnings"]
            .as_array()
            .expect("in the test data")
            .iter()
            .map(|w| w["code"].as_str().expect("in the test data"))
            .collect();
        assert_eq!(codes, ["A"]);
    }

    #[test]
    fn selection_leaves_out_the_unnamed_fields_of_the_named_model() {
        let mut data = json!({"format": "hl7", "model": {"tables": "2.5.1", "segments": [
            {"id": "MSH", "fields": {"1 field_separator": "|", "2 encoding_characters": "^~\\&"}},
            {"id": "PID", "fields": {
                "1 set_id_pid": "1",
                "5 patient_name": [{"1 family_name": "Doe", "2 given_name": "Jo"}],
                "7 date_time_of_birth": {"1 time": "19990101"},
                "15 primary_language": {"1 identifier": "en"}
            }},
            {"id": "ZPD", "fields": {"1": "x", "5": "y"}},
            {"id": "OBX", "fields": {"1 set_id_obx": "1"}},
        ]}, "warnings": []});
        controls(json!({"fields": ["PID-5", "PID-15", "ZPD-5"], "segments": ["OBX"], "max_bytes": 0}))
            .apply(&mut data)
            .expect("in the test data");
        assert_eq!(
            data["model"]["segments"],
            json!([
                {"id": "PID", "fields": {
                    "5 patient_name": [{"1 family_name": "Doe", "2 given_name": "Jo"}],
                    "15 primary_language": {"1 identifier": "en"}
                }},
                {"id": "ZPD", "fields": {"5": "y"}},
                {"id": "OBX", "fields": {"1 set_id_obx": "1"}},
            ])
        );
    }

    #[test]
    fn a_selection_that_applies_to_nothing_names_its_argument() {
        let mut fhir = json!({"format": "fhir", "model": {"resourceType": "Patient"}, "warnings": []});
        assert_eq!(controls(json!({"segments": ["PID"]})).apply(&mut fhir), Err("segments"));
        let mut hl7 = json!({"format": "hl7", "model": {"segments": []}});
        assert_eq!(controls(json!({"resource_types": ["Patient"]})).apply(&mut hl7), Err("resource_types"));
    }

    #[test]
    fn resource_types_keep_bundle_entries_and_ndjson_records() {
        let mut bundle = json!({"format": "fhir", "model": {"resourceType": "Bundle", "entry": [
            {"resource": {"resourceType": "Patient"}},
            {"resource": {"resourceType": "Observation"}},
        ]}});
        controls(json!({"resource_types": ["Observation"]})).apply(&mut bundle).expect("in the test data");
        assert_eq!(bundle["model"]["entry"], json!([{"resource": {"resourceType": "Observation"}}]));
        let mut ndjson = json!({"records": [
            {"record": 1, "model": {"resourceType": "Patient"}},
            {"record": 2, "model": {"resourceType": "Observation"}},
        ]});
        controls(json!({"resource_types": ["Patient"]})).apply(&mut ndjson).expect("in the test data");
        assert_eq!(ndjson["records"].as_array().expect("in the test data").len(), 1);
        assert_eq!(ndjson["records"][0]["record"], 1);
    }

    #[test]
    fn findings_controls_keep_the_most_severe_and_count_all() {
        let mut data = json!({"findings": [
            {"code": "A", "severity": "information"},
            {"code": "B", "severity": "error"},
            {"code": "C", "severity": "warning"},
            {"code": "D", "severity": "error"},
        ]});
        let shaped = controls(json!({"max_findings": 2})).apply(&mut data).expect("in the test data");
        let codes: Vec<&str> = data["findings"]
            .as_array()
            .expect("in the test data")
            .iter()
            .map(|w| w["code"].as_str().expect("in the test data"))
            .collect();
        assert_eq!(codes, ["B", "D"]);
        assert_eq!(
            shaped.findings,
            Some(FindingTotals { total: 4, returned: 2, fatal: 0, error: 2, warning: 1, information: 1 })
        );
        let mut data2 =
            json!({"findings": [{"code": "A", "severity": "information"}, {"code": "C", "severity": "warning"}]});
        controls(json!({"min_severity": "warning"})).apply(&mut data2).expect("in the test data");
        assert_eq!(data2["findings"].as_array().expect("in the test data").len(), 1);
    }

    #[test]
    fn cursors_and_item_paths_have_a_grammar() {
        assert!(is_cursor("records:4/model.segments:120"));
        assert!(!is_cursor("records:4/patient.name:1"));
        assert!(!is_cursor("records"));
        assert!(is_items_path("records[4].model.segments"));
        assert!(is_items_path("content"));
        assert!(!is_items_path("records[4].model.name"));
        assert!(!is_items_path("records[x].model.segments"));
    }

    #[test]
    fn bad_arguments_are_named() {
        for (args, name) in [
            (json!({"max_bytes": -1}), "max_bytes"),
            (json!({"max_bytes": "big"}), "max_bytes"),
            (json!({"cursor": "records"}), "cursor"),
            (json!({"cursor": 3}), "cursor"),
            (json!({"min_severity": "critical"}), "min_severity"),
            (json!({"max_findings": 1.5}), "max_findings"),
            (json!({"segments": ["pid"]}), "segments"),
            (json!({"segments": []}), "segments"),
            (json!({"fields": ["PID5"]}), "fields"),
            (json!({"fields": ["PID-0"]}), "fields"),
            (json!({"resource_types": ["Pa tient"]}), "resource_types"),
        ] {
            let Value::Object(mut m) = args else { unreachable!() };
            assert_eq!(Controls::read(&mut m).err(), Some(name));
        }
        let mut data = records(50);
        let mut m = Map::new();
        m.insert("cursor".to_owned(), Value::from("records:999"));
        assert_eq!(Controls::read(&mut m).expect("in the test data").apply(&mut data), Err("cursor"));
    }
}
