//! The JSON envelopes of the pipeline's records, written directly into byte buffers: the start
//! of a record's object, a verdict, and the findings (`{"code","severity","location"}`), the
//! one findings writer of the crate.
//!
//! What it does not do: write values (the formats' data-channel writers do); everything here is
//! value-free.

use crate::diag::{Diagnostic, Location};

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

/// `[{"code":..,"severity":..,"location":..}, ...]`
pub fn findings_json(findings: &[Diagnostic], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, d) in findings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"code\":");
        crate::json::string(out, d.code.as_str());
        out.extend_from_slice(b",\"severity\":");
        crate::json::string(out, d.severity.as_str());
        out.extend_from_slice(b",\"location\":");
        location_json(&d.location, out);
        out.push(b'}');
    }
    out.push(b']');
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

pub(super) fn verdict_json(format: &str, valid: bool, findings: &[Diagnostic], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"format\":");
    crate::json::string(out, format);
    out.extend_from_slice(if valid { b",\"valid\":true,\"findings\":" } else { b",\"valid\":false,\"findings\":" });
    findings_json(findings, out);
    out.push(b'}');
}

/// `{"record":N,"format":..,"error":..}` (or without `record`): a record that could not be
/// read, labelled with its format (or framing).
pub(super) fn failed_json(record: Option<u64>, label: &str, code: crate::diag::Code, out: &mut Vec<u8>) {
    match record {
        Some(r) => record_prefix_for(true, r, out),
        None => out.push(b'{'),
    }
    out.extend_from_slice(b"\"format\":");
    crate::json::string(out, label);
    out.extend_from_slice(b",\"error\":");
    crate::json::string(out, code.as_str());
    out.push(b'}');
}

/// Appends an object `{...}` as `{"record":N,...}` when `record` is given, else as it is.
pub(super) fn numbered(record: Option<u64>, object: &[u8], out: &mut Vec<u8>) {
    match record {
        Some(r) => {
            record_prefix_for(true, r, out);
            out.extend_from_slice(object.get(1..).unwrap_or_default());
        }
        None => out.extend_from_slice(object),
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
