//! The JSON envelopes of the pipeline's records, written directly into byte buffers: the start
//! of a record's object, a verdict, and the findings (`{"code","severity","location"}`), the
//! one findings writer of the crate.
//!
//! What it does not do: write values (the formats' data-channel writers do); everything here is
//! value-free.

use crate::diag::{Diagnostic, Location};
use crate::formats::codec::Position;

/// Appends the start of a record's object for record `record` of an input with several records
/// (`multi`): `{"record":N,`, or `{` for an input of one record.
pub(super) fn record_prefix_for(multi: bool, record: u64, json: &mut Vec<u8>) {
    if multi {
        json.extend_from_slice(b"{\"record\":");
        crate::diag::decimal(record, json);
        json.push(b',');
    } else {
        json.push(b'{');
    }
}

/// Bytes reserved for a finding written by [`findings_json`] (most take 80 to 120).
pub(super) const FINDING_ROOM: usize = 128;

/// Appends what a converted record's object holds before its Bundle:
/// `{"record":N,"format":"fhir","bundle":`.
pub(super) fn converted_record_prefix(multi: bool, record: u64, json: &mut Vec<u8>) {
    record_prefix_for(multi, record, json);
    json.extend_from_slice(b"\"format\":\"fhir\",\"bundle\":");
}

/// Writes the whole location of a finding when its own is shortened; false when it is whole.
pub type FullLocation<'a> = dyn Fn(&Diagnostic, &mut Vec<u8>) -> bool + 'a;

/// What a record's findings are written with, besides themselves: where they are in the record
/// (computed by the codec from the record when its findings are written) and what their
/// fingerprints are made of.
pub struct Placement<'a> {
    /// The format's name (part of the fingerprint).
    pub format: &'a str,
    /// The record's number in a multi-record input (part of the fingerprint).
    pub record: Option<u64>,
    /// One position per finding, or none.
    pub positions: &'a [Position],
    /// Writes the whole location of a finding whose own is shortened (`Codec::full_location`).
    pub full: Option<&'a FullLocation<'a>>,
    /// Findings of an input record get a fingerprint; those of a converted Bundle or of a
    /// policy file do not (they are not about the input's bytes).
    pub fingerprints: bool,
}

impl Placement<'_> {
    /// No positions, no record: findings on their own (`policy check`, a converted Bundle).
    pub fn plain(format: &str) -> Placement<'_> {
        Placement { format, record: None, positions: &[], full: None, fingerprints: true }
    }
}

/// `[{"code":..,"severity":..,"location":..}, ...]`: findings on their own, not about an input
/// record (a converted Bundle's, a policy file's): no position, no fingerprint.
pub fn findings_json(findings: &[Diagnostic], out: &mut Vec<u8>) {
    findings_json_at(findings, &Placement { fingerprints: false, ..Placement::plain("") }, out);
}

/// `[{"code":..,"severity":..,"location":..,"line":..,"column":..,"fingerprint":..}, ...]`:
/// `line` and `column` (1-based) when the codec placed the finding (`column` only for text
/// formats with columns: FHIR), and a `fingerprint`, 16 hex digits of a stable 64-bit hash (`fnv`) of
/// the format, the record number (multi-record inputs), the code, the location and the
/// finding's occurrence among the record's findings with that code and location: stable for
/// the same input, distinct for distinct findings of a record (a baseline's key).
pub fn findings_json_at(findings: &[Diagnostic], place: &Placement<'_>, out: &mut Vec<u8>) {
    out.push(b'[');
    // The keys (code and location) of the findings written so far: the occurrence of a key is
    // counted among them (a table only for records with many findings).
    let mut keys: Vec<u64> = Vec::new();
    let mut table: Option<std::collections::HashMap<u64, u32, BuildFnv>> = None;
    let seed = place.fingerprints.then(|| {
        let h = fnv(FNV_OFFSET, place.format.as_bytes());
        fnv(h, &place.record.unwrap_or(0).to_le_bytes())
    });
    for (i, d) in findings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"code\":");
        crate::json::string(out, d.code.as_str());
        out.extend_from_slice(b",\"severity\":");
        crate::json::string(out, d.severity.as_str());
        out.extend_from_slice(b",\"location\":");
        let start = out.len();
        let whole = place.full.is_some_and(|full| {
            let mut text = Vec::new();
            if full(d, &mut text) {
                crate::json::string(out, &String::from_utf8_lossy(&text));
                true
            } else {
                false
            }
        });
        if !whole {
            location_json(&d.location, out);
        }
        let location_end = out.len();
        if let Some(canonical) = d.profile.and_then(crate::structure::profile_canonical) {
            out.extend_from_slice(b",\"profile\":");
            crate::json::string(out, canonical);
        }
        if let Some(p) = place.positions.get(i) {
            if p.line > 0 {
                out.extend_from_slice(b",\"line\":");
                decimal(p.line, out);
                if p.column > 0 {
                    out.extend_from_slice(b",\"column\":");
                    decimal(p.column, out);
                }
            }
        }
        let Some(seed) = seed else {
            out.push(b'}');
            continue;
        };
        let key = fnv(fnv(FNV_OFFSET, d.code.as_str().as_bytes()), &out[start..location_end]);
        let occurrence = match table.as_mut() {
            Some(t) => {
                let n = t.entry(key).or_insert(0);
                *n += 1;
                *n - 1
            }
            None => {
                let n = keys.iter().filter(|&&k| k == key).count() as u32;
                keys.push(key);
                if keys.len() == 64 {
                    let mut t = std::collections::HashMap::with_capacity_and_hasher(findings.len(), BuildFnv);
                    for k in keys.drain(..) {
                        *t.entry(k).or_insert(0) += 1;
                    }
                    table = Some(t);
                }
                n
            }
        };
        let h = fnv(fnv(seed, &key.to_le_bytes()), &occurrence.to_le_bytes());
        out.extend_from_slice(b",\"fingerprint\":\"");
        for shift in (0..16).rev() {
            out.push(b"0123456789abcdef"[((h >> (shift * 4)) & 0xF) as usize]);
        }
        out.extend_from_slice(b"\"}");
    }
    out.push(b']');
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over 8-byte words (64 bits, little-endian words, the last one zero-padded), continued
/// from `h`, then the length: a stable hash (the same bytes give the same value on every
/// platform and release), cheap enough to run on every finding.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    h = (h ^ bytes.len() as u64).wrapping_mul(PRIME);
    h ^ (h >> 32)
}

/// The fingerprints' occurrence table is keyed by a hash already: it is used as it is.
#[derive(Default, Clone, Copy)]
struct BuildFnv;

impl std::hash::BuildHasher for BuildFnv {
    type Hasher = PassThrough;
    fn build_hasher(&self) -> PassThrough {
        PassThrough(0)
    }
}

struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fnv(self.0, bytes);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A location as a JSON string: HL7 v2 positions (most findings of a stream) are written
/// directly, byte for byte what `Location`'s `Display` gives, without a `String` per finding.
fn location_json(location: &Location, out: &mut Vec<u8>) {
    // `convert`'s findings (`PID[1]-3[1].4->Patient.identifier`): the position, then the path.
    let (p, target) = match location {
        Location::Hl7(p) => (Some(p), None),
        Location::Convert(p, path) => (Some(p), Some(*path)),
        _ => (None, None),
    };
    if let Some(p) = p {
        let id = p.segment.unwrap_or("segment");
        let plain_target = target.is_none_or(|t| !t.bytes().any(crate::json::needs_escape));
        if plain_target && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            out.push(b'"');
            out.extend_from_slice(id.as_bytes());
            out.push(b'[');
            decimal(p.index, out);
            out.push(b']');
            if p.field > 0 {
                out.push(b'-');
                decimal(p.field, out);
                if p.repetition > 0 {
                    out.push(b'[');
                    decimal(p.repetition, out);
                    out.push(b']');
                }
                if p.component > 0 {
                    out.push(b'.');
                    decimal(p.component, out);
                    if p.subcomponent > 0 {
                        out.push(b'.');
                        decimal(p.subcomponent, out);
                    }
                }
            }
            if let Some(t) = target {
                out.extend_from_slice(b"->");
                out.extend_from_slice(t.as_bytes());
            }
            out.push(b'"');
            return;
        }
    }
    out.push(b'"');
    if let Location::Fhir(path) = location {
        // The path's text written directly (FHIR findings of converted Bundles are many), then
        // checked to need no escape (names of the definitions never do); else written again
        // through `Display`.
        let start = out.len();
        path.write_text(out);
        if !out[start..].iter().any(|&b| crate::json::needs_escape(b)) {
            out.push(b'"');
            return;
        }
        out.truncate(start);
    }
    // Writing into a byte buffer cannot fail.
    let _ = std::fmt::Write::write_fmt(&mut crate::json::Escaped(out), format_args!("{location}"));
    out.push(b'"');
}

/// `n` in decimal.
fn decimal(n: u32, out: &mut Vec<u8>) {
    crate::diag::decimal(u64::from(n), out);
}

pub(super) fn verdict_json(
    format: &str,
    valid: bool,
    findings: &[Diagnostic],
    place: &Placement<'_>,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"{\"format\":");
    crate::json::string(out, format);
    out.extend_from_slice(if valid { b",\"valid\":true,\"findings\":" } else { b",\"valid\":false,\"findings\":" });
    findings_json_at(findings, place, out);
    out.push(b'}');
}

/// The fingerprint of a failure that stands for a whole record or file (a record that could not
/// be read, a file that could not be processed): the same hash as [`findings_json_at`]'s, over the
/// format (empty when none was detected), the record number (0 for a file), the code, the
/// location as written and occurrence 0. Stable for the same input; distinct from every finding
/// of another record or code.
pub fn failure_fingerprint(format: &str, record: Option<u64>, code: &str, location: &str) -> String {
    let seed = fnv(fnv(FNV_OFFSET, format.as_bytes()), &record.unwrap_or(0).to_le_bytes());
    let mut written = Vec::with_capacity(location.len() + 2);
    crate::json::string(&mut written, location);
    let key = fnv(fnv(FNV_OFFSET, code.as_bytes()), &written);
    let h = fnv(fnv(seed, &key.to_le_bytes()), &0u32.to_le_bytes());
    format!("{h:016x}")
}

/// What a failed record is, for machines: `unparseable` (`CLI_PARSE_FAILED`), `too_large`
/// (`CLI_INPUT_TOO_LARGE`), `framing` (bytes of the framing outside any record, or a truncated
/// frame: the MLLP codes), `failed` (anything else, e.g. a Bundle that could not be redacted).
pub fn failure_kind(code: crate::diag::Code) -> &'static str {
    use crate::diag::Code;
    match code {
        Code::CLI_PARSE_FAILED => "unparseable",
        Code::CLI_INPUT_TOO_LARGE => "too_large",
        Code::MLLP_FRAME_TRUNCATED | Code::MLLP_DATA_OUTSIDE_FRAME => "framing",
        _ => "failed",
    }
}

/// A record that could not be read: `{"record":N,"format":..,"error":..,"kind":..,"offset":N,
/// "cause":..}` (or without `record`), labelled with its format (or framing); `offset` is the
/// record's byte offset in the input, `cause` the code of the fatal finding behind it.
pub(super) fn failed_json(
    record: Option<u64>,
    label: &str,
    code: crate::diag::Code,
    offset: Option<u64>,
    cause: Option<crate::diag::Code>,
    out: &mut Vec<u8>,
) {
    match record {
        Some(r) => record_prefix_for(true, r, out),
        None => out.push(b'{'),
    }
    out.extend_from_slice(b"\"format\":");
    crate::json::string(out, label);
    out.extend_from_slice(b",\"error\":");
    crate::json::string(out, code.as_str());
    out.extend_from_slice(b",\"kind\":");
    crate::json::string(out, failure_kind(code));
    if let Some(o) = offset {
        out.extend_from_slice(b",\"offset\":");
        crate::diag::decimal(o, out);
    }
    if let Some(c) = cause.filter(|&c| c != code) {
        out.extend_from_slice(b",\"cause\":");
        crate::json::string(out, c.as_str());
    }
    out.push(b'}');
}

/// Appends an object `{...}` as `{"record":N,"offset":O,...}` when `record` is given (and
/// `offset`, the record's byte offset in the input, when known), else as it is.
pub(super) fn numbered(record: Option<u64>, offset: Option<u64>, object: &[u8], out: &mut Vec<u8>) {
    match record {
        Some(r) => {
            record_prefix_at(r, offset, out);
            out.extend_from_slice(object.get(1..).unwrap_or_default());
        }
        None => out.extend_from_slice(object),
    }
}

/// `{"record":N,"offset":O,` (the offset when known): the start of a record's object in a
/// multi-record input.
pub(super) fn record_prefix_at(record: u64, offset: Option<u64>, json: &mut Vec<u8>) {
    record_prefix_for(true, record, json);
    if let Some(o) = offset {
        json.extend_from_slice(b"\"offset\":");
        crate::diag::decimal(o, json);
        json.push(b',');
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::{Hl7Position, Location};

    #[test]
    fn locations_are_written_as_displayed() {
        let base = Hl7Position::segment(Some("OBX"), 12);
        for p in [
            base,
            base.field(5, 0),
            base.field(10, 2),
            base.field(6, 1).component(3, 0),
            base.field(6, 1).component(3, 14),
        ] {
            for p in [p, Hl7Position { segment: None, ..p }] {
                for location in
                    [Location::Hl7(p), Location::Convert(p, "Patient.identifier"), Location::Convert(p, "-")]
                {
                    let mut fast = Vec::new();
                    super::location_json(&location, &mut fast);
                    let mut slow = Vec::new();
                    crate::json::string(&mut slow, &location.to_string());
                    assert_eq!(fast, slow);
                }
            }
        }
        let mut out = Vec::new();
        super::decimal(4_294_967_295, &mut out);
        assert_eq!(out, b"4294967295");
    }
}
