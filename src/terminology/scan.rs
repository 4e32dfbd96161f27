//! `map-codes --scan`: the codings of a message, with their structural locations (data for the
//! data channel: the caller's own codes).
//!
//! What it does not do: map them (see [`super::conceptmap`]), or read a format other than HL7 v2
//! and FHIR JSON.

use crate::detect;
use crate::diag::{Code, Hl7Position, Location};
use crate::formats::Format;
use crate::formats::hl7v2::schema;
use crate::limits::Limits;
use crate::phi::Disclosure;
use crate::terminology::conceptmap::Coding;

/// `map-codes --scan`: every coding of a message, with its structural location. HL7 v2 (ER7):
/// the CE/CWE/CNE fields of the message's version (MSH-12), each repetition's identifier and
/// coding system (components 1 and 3) and alternate ones (4 and 6), the system name mapped to
/// its URI where HL7 table 0396 has one (`LN` → `http://loinc.org`). FHIR JSON: every object
/// with string `system` and `code`, located `coding:N` (document order). The codings are data
/// for the data channel (the caller's own message); this is why it lives here, where a
/// `Disclosure` is granted.
#[expect(clippy::disallowed_methods, reason = "map-codes --scan: the caller's own codings, on the data channel")]
pub fn codings(bytes: Vec<u8>, limits: &Limits, disclosure: &Disclosure) -> Result<Vec<Coding>, Code> {
    if bytes.len() as u64 > limits.max_input_bytes {
        return Err(Code::CLI_INPUT_TOO_LARGE);
    }
    let format = detect::detect(&bytes)?;
    let json = detect::skip_bom_and_space(&bytes).first() == Some(&b'{');
    let mut out = Vec::new();
    if format == Format::Hl7 {
        {
            let message = crate::formats::hl7v2::parse(bytes, limits).map_err(|_| Code::CLI_PARSE_FAILED)?;
            let version = message
                .msh()
                .field(12)
                .and_then(|f| f.at(1, 1, 1))
                .and_then(|v| schema::Version::nearest(v.expose_value(disclosure)))
                .unwrap_or(schema::Version::V2_5_1);
            let schema = schema::try_schema(version).map_err(|_| Code::CLI_INTERNAL)?;
            for seg in message.segments() {
                let Some(def) = schema.segment(seg.id().expose_value(disclosure)) else { continue };
                for field in seg.fields() {
                    let position = field.position();
                    let Some(fdef) = def.field(position.field as usize) else { continue };
                    if !matches!(fdef.base_data_type(), "CE" | "CWE" | "CNE") {
                        continue;
                    }
                    if !field.is_splittable() {
                        continue;
                    }
                    let delimiters = field.delimiters();
                    // One pass over repetitions and components (no `at`, which rescans).
                    for (r, rep) in field.repetitions().enumerate() {
                        let components: Vec<&[u8]> = rep
                            .split(Some(delimiters.component))
                            .take(6)
                            .map(|c| {
                                c.split(Some(delimiters.subcomponent))
                                    .next()
                                    .map(|s| s.bytes.expose_value(disclosure))
                                    .unwrap_or_default()
                            })
                            .collect();
                        for (code_c, system_c) in [(1u32, 3u32), (4, 6)] {
                            let value = |c: u32| components.get(c as usize - 1).copied().unwrap_or_default();
                            let (code, system) = (value(code_c), value(system_c));
                            if code.is_empty() {
                                continue;
                            }
                            let (Ok(code), Ok(system)) = (std::str::from_utf8(code), std::str::from_utf8(system))
                            else {
                                continue;
                            };
                            let repetition = u32::try_from(r + 1).unwrap_or(u32::MAX);
                            let p: Hl7Position = position.field(position.field, repetition).component(code_c, 0);
                            out.push(Coding {
                                location: Location::Hl7(p).to_string(),
                                system: v2_system_uri(system),
                                code: code.to_owned(),
                            });
                        }
                    }
                }
            }
        }
    } else if format == Format::Fhir && json {
        {
            let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| Code::CLI_PARSE_FAILED)?;
            let mut stack = vec![&value];
            while let Some(v) = stack.pop() {
                match v {
                    serde_json::Value::Object(map) => {
                        if let (Some(serde_json::Value::String(system)), Some(serde_json::Value::String(code))) =
                            (map.get("system"), map.get("code"))
                        {
                            out.push(Coding {
                                location: format!("coding:{}", out.len() + 1),
                                system: system.clone(),
                                code: code.clone(),
                            });
                        }
                        stack.extend(map.values().rev());
                    }
                    serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
                    _ => {}
                }
            }
        }
    } else {
        return Err(Code::CLI_FORMAT_UNSUPPORTED);
    }
    Ok(out)
}

/// The URI of an HL7 v2 coding system name (table 0396), or the name itself.
fn v2_system_uri(name: &str) -> String {
    let uri = match name {
        "LN" => "http://loinc.org",
        "I10" | "I10C" | "ICD10CM" => "http://hl7.org/fhir/sid/icd-10-cm",
        "RXNORM" => "http://www.nlm.nih.gov/research/umls/rxnorm",
        "UCUM" => "http://unitsofmeasure.org",
        "MSH" => "http://id.nlm.nih.gov/mesh",
        _ => {
            if let Some(n) = name.strip_prefix("HL7").filter(|n| n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()))
            {
                return format!("http://terminology.hl7.org/CodeSystem/v2-{n}");
            }
            name
        }
    };
    uri.to_owned()
}
